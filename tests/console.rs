//! The console without a terminal: `update` transitions and `TestBackend` snapshots at 80×24 and
//! 160×48. Time and packet contents are fixed, so the screens are deterministic.
#![cfg(feature = "console")]

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use warrant::console::app::{self, Action, Button, ChainState, Effect, Mode, Pane, State};
use warrant::console::keymap::{Key, Keymap};
use warrant::console::theme::Theme;
use warrant::console::ui;
use warrant::protocol::chain::{Check, Finding, VerifyReport};
use warrant::protocol::decision::Verdict;
use warrant::store::spool::{ChainDecision, ChainView, FileKind, InvalidFile, PacketEntry, Snapshot};

/// 2026-11-21T09:00:00Z.
const NOW: f64 = 1_795_251_600.0;

fn packet(id: &str, agent: &str, class: &str, summary: &str, minutes_ago: i64, extra: Value) -> PacketEntry {
    let created = warrant::protocol::clock::format_rfc3339(
        time::OffsetDateTime::from_unix_timestamp(NOW as i64 - minutes_ago * 60).expect("time"),
    );
    let mut v = json!({
        "type": "trust_graduation_approval_packet",
        "packet_id": id,
        "agent": agent,
        "summary": summary,
        "action_class": class,
        "proposed_action": extra,
        "decision": {"status": "review_required", "action_class": class, "reason": "Awaiting the principal's signed decision."},
        "external_actions": 0,
        "created_at": created,
    });
    if class == "payment.initiate" {
        v["decision"]["status"] = json!("human_only");
    }
    let p = warrant::protocol::packet::parse_packet(&serde_json::to_vec(&v).expect("json"), id).expect("valid packet");
    PacketEntry { file: format!("{id}.json").into(), arrived: NOW, owner: 4_000_000, packet: Arc::new(p) }
}

/// A scan as the event loop delivers it: the packets listed at once, then the assessment.
/// A scan's snapshot, then its assessment made as the event loop makes it: off the UI thread
/// (here: at once), observing preconditions with the state's observer.
fn scanned(s: &mut State, snap: Snapshot) {
    app::update(s, Action::Scanned(snap));
    if let Some(job) = s.assess_job() {
        app::update(s, Action::Assessed(Box::new(job.run())));
    }
}

fn snapshot() -> Snapshot {
    Snapshot {
        packets: vec![
            packet(
                "p-quote",
                "agent-scribe",
                "email.send.external",
                "Quote for 40 units to Dana",
                2,
                json!({"to": "dana@northwind.example", "subject": "Quote for 40 units", "body": "Hi Dana,\nAttached is the quote.\nBest, Sam"}),
            ),
            packet(
                "p-kickoff",
                "agent-planner",
                "calendar.create",
                "Kick-off with Northwind",
                15,
                json!({"title": "Kick-off", "start": "2026-11-24T10:00:00Z"}),
            ),
            packet(
                "p-pay",
                "agent-bursar",
                "payment.initiate",
                "Pay invoice INV-3312",
                90,
                json!({"payee": "Acme Paper", "amount_usd": 1250}),
            ),
            packet("p-post", "agent-herald", "social.post.public", "Announce v2", 300, json!({"text": "v2 is live"})),
        ],
        receipts: vec![],
        invalid: vec![InvalidFile {
            kind: FileKind::Packet,
            name: "broken.json".into(),
            reason: warrant::protocol::packet::InvalidReason::Schema(
                "`external_actions` must be the integer 0: packets are prepare-only".into(),
            ),
            arrived: NOW,
        }],
        ..Snapshot::default()
    }
}

fn decided_post() -> warrant::store::spool::Decisions {
    HashMap::from([(
        "p-post".to_owned(),
        std::sync::Arc::new(ChainDecision {
            cosigners: Vec::new(),
            quorum: None,
            signed: None,
            verdict: Verdict::Refuse,
            principal: "alice".into(),
            reason: Some("not before the launch review".into()),
            decided_at: "2026-11-21T08:30:00Z".into(),
            packet_hash: String::new(),
            chain_index: 7,
            entry_hash: format!("sha256:{}", "ab".repeat(32)),
            agent: "agent-herald".into(),
            action_class: "social.post.public".into(),
            system: None,
            corrected: None,
        }),
    )])
}

fn view(report: VerifyReport, decisions: warrant::store::spool::Decisions) -> Box<ChainView> {
    Box::new(ChainView { report, decisions, ..ChainView::default() })
}

fn valid_report(total: usize) -> Box<VerifyReport> {
    Box::new(VerifyReport {
        total,
        root_hash: Some(format!("sha256:{}", "cd".repeat(32))),
        signatures_verified: total,
        findings: vec![],
        torn_tail: None,
    })
}

fn state(read_only: bool) -> State {
    let mut s = State::new(
        "/tmp/spool".into(),
        (!read_only).then(|| "alice".to_owned()),
        (!read_only).then(|| "SHA256:S1I+LnIehTKTATEWkIjfe40E1haIYEbCmd6nU3nMHAQ".to_owned()),
        read_only,
        Keymap::default_map(),
        NOW,
    );
    scanned(&mut s, snapshot());
    app::update(&mut s, Action::ChainVerified(view(*valid_report(7), decided_post())));
    app::update(&mut s, Action::Resize { width: 80, height: 24 });
    s
}

fn key(s: &str) -> Action {
    Action::Key(Key::parse(s).expect("key"))
}

/// Keys pressed one at a time, a frame drawn after each (at the terminal size the state knows),
/// as the event loop does.
fn press(s: &mut State, keys: &[&str]) -> Vec<Effect> {
    keys.iter()
        .flat_map(|k| {
            let fx = app::update(s, key(k));
            if let Some((width, height)) = s.viewport {
                app::update(s, Action::Drawn { width, height });
            }
            fx
        })
        .collect()
}

use crate::screen as support_screen;
use support_screen::screen;

// The main screen lists pending packets newest first with age, agent, class, risk and state.
#[test]
fn main_screen_80x24_and_160x48() {
    let s = state(false);
    let small = screen(&s, 80, 24);
    assert!(small.find("p-quote").is_some() || small.contains("agent-scribe"));
    insta::assert_snapshot!("main_80x24", small);
    insta::assert_snapshot!("main_160x48", screen(&s, 160, 48));
}

// `a` opens a confirmation dialog showing class, payload hash and fingerprint, focus on Cancel;
// `y` produces exactly one Sign effect for the selected packet.
#[test]
fn approve_goes_through_a_confirmation_focused_on_cancel() {
    let mut s = state(false);
    assert!(press(&mut s, &["a"]).is_empty());
    let Mode::Confirm(c) = &s.mode else { panic!("no confirm dialog: {:?}", s.mode) };
    assert_eq!((c.focus, c.verdict, c.packet.id.as_str()), (Button::Cancel, Verdict::Approve, "p-quote"));
    insta::assert_snapshot!("confirm_approve_80x24", screen(&s, 80, 24));
    insta::assert_snapshot!("confirm_approve_160x48", screen(&s, 160, 48));
    // Enter on the focused Cancel signs nothing.
    assert!(press(&mut s, &["enter"]).is_empty());
    assert_eq!(s.mode, Mode::Normal);
    let fx = press(&mut s, &["a", "y"]);
    assert!(
        matches!(fx.as_slice(), [Effect::Sign { verdict: Verdict::Approve, packet, reason: None, .. }] if packet.id == "p-quote"),
        "{fx:?}"
    );
    assert!(s.signing);
    // Nothing else can be signed while one signature is in flight.
    assert!(press(&mut s, &["j", "a"]).is_empty());
    assert!(!matches!(s.mode, Mode::Confirm(_)), "{:?}", s.mode);
}

/// A state whose first pending packet proposes an email with many fields: eleven attachments
/// and a long body sort before `to` alphabetically, so a preview of the first fields never shows
/// the recipient.
fn many_fields_state() -> State {
    let mut s = state(false);
    let mut action = serde_json::Map::new();
    for i in 1..=11 {
        action.insert(format!("attachment_{i:02}"), json!(format!("quote-part-{i}.pdf")));
    }
    action
        .insert("body".into(), json!((1..=12).map(|i| format!("line {i} of the body")).collect::<Vec<_>>().join("\n")));
    action.insert("subject".into(), json!("Quote"));
    action.insert("to".into(), json!("mallory@evil.example"));
    let mut snap = snapshot();
    snap.packets
        .insert(0, packet("p-many", "agent-scribe", "email.send.external", "Send the quote", 1, Value::Object(action)));
    scanned(&mut s, snap);
    press(&mut s, &["g"]);
    assert_eq!(s.selected_packet().map(|p| p.id.clone()).as_deref(), Some("p-many"));
    s
}

// The sign dialog shows every field of the proposed action, the recipient first, at every size:
// an agent cannot move the recipient out of sight behind other fields.
#[test]
fn the_sign_dialog_shows_the_recipient_of_a_packet_with_many_fields() {
    for (w, h) in [(80, 24), (120, 36), (160, 48)] {
        let mut s = many_fields_state();
        app::update(&mut s, Action::Resize { width: w, height: h });
        press(&mut s, &["a"]);
        assert!(matches!(s.mode, Mode::Confirm(_)), "{:?}", s.mode);
        let text = screen(&s, w, h);
        assert!(text.contains("to: mallory@evil.example"), "{w}x{h}:\n{text}");
        // Every field is in the dialog's lines, none cut.
        let Mode::Confirm(c) = &s.mode else { unreachable!() };
        let area = ratatui::layout::Rect::new(0, 0, w, h);
        let (rows, _) = warrant::console::dialog::confirm_layout(&s, c, area);
        let all: String = rows.iter().flat_map(|r| r.0.iter().map(|(t, _)| t.as_str())).collect::<Vec<_>>().join("");
        for i in 1..=11 {
            assert!(all.contains(&format!("attachment_{i:02}: quote-part-{i}.pdf")), "{w}x{h}: attachment {i}");
        }
        assert!(all.contains("line 12 of the body"), "{w}x{h}");
    }
    let mut s = many_fields_state();
    app::update(&mut s, Action::Resize { width: 120, height: 36 });
    press(&mut s, &["a"]);
    let shown = screen(&s, 120, 36);
    // Beside the dialog's borders, nothing of the view below (issue 32, item 12: a lone "s"
    // of the detail showed right of it): the cells next to each side are blank on every row.
    let Mode::Confirm(c) = &s.mode else { unreachable!() };
    let rect = warrant::console::dialog::confirm_layout(&s, c, ratatui::layout::Rect::new(0, 0, 120, 36)).1.rect;
    for (y, line) in shown.lines().enumerate().skip(usize::from(rect.y)).take(usize::from(rect.height)) {
        let cells: Vec<char> = line.chars().collect();
        let beside = [usize::from(rect.x) - 1, usize::from(rect.right())];
        for x in beside {
            // (`screen` trims the end of a line: nothing there is blank too.)
            assert!(cells.get(x).is_none_or(|c| *c == ' '), "row {y}, column {x} beside the dialog:\n{shown}");
        }
    }
    insta::assert_snapshot!("confirm_many_fields_120x36", shown);
}

// An approval cannot be signed until every line of the dialog has been on screen: `y` and the
// Sign button do nothing (and say why) until the principal has paged to the end; then `y` signs.
// Scrolling changes only the dialog's state; a refusal signs without scrolling.
#[test]
fn an_approval_signs_only_once_the_whole_dialog_was_on_screen() {
    let mut s = many_fields_state();
    press(&mut s, &["a"]);
    let Mode::Confirm(c) = &s.mode else { panic!("{:?}", s.mode) };
    assert!(!c.read && c.scroll == 0, "{c:?}");
    insta::assert_snapshot!("confirm_locked_80x24", screen(&s, 80, 24));
    // Neither `y`, nor moving the focus to Sign and pressing it, signs.
    assert!(press(&mut s, &["y"]).is_empty());
    assert!(s.flash.as_ref().is_some_and(|f| f.error && f.text.contains("nothing was signed")), "{:?}", s.flash);
    assert!(press(&mut s, &["tab"]).is_empty());
    assert!(matches!(&s.mode, Mode::Confirm(c) if c.focus == Button::Cancel), "{:?}", s.mode);
    // One line down, then back to the top: still not read.
    press(&mut s, &["j", "k"]);
    assert!(press(&mut s, &["y"]).is_empty());
    // Page down to the end.
    for _ in 0..10 {
        if matches!(&s.mode, Mode::Confirm(c) if c.read) {
            break;
        }
        press(&mut s, &["pagedown"]);
    }
    let Mode::Confirm(c) = &s.mode else { panic!("{:?}", s.mode) };
    assert!(c.read && c.scroll > 0, "{c:?}");
    insta::assert_snapshot!("confirm_read_80x24", screen(&s, 80, 24));
    let fx = press(&mut s, &["y"]);
    assert!(
        matches!(fx.as_slice(), [Effect::Sign { verdict: Verdict::Approve, packet, .. }] if packet.id == "p-many"),
        "{fx:?}"
    );

    // Zoom lays the dialog out on the whole screen: when that shows it all, it is read.
    let mut s = state(false);
    let wide = (1..=6).map(|i| format!("{i} {}", "wide ".repeat(36))).collect::<Vec<_>>().join("\n");
    let mut snap = snapshot();
    snap.packets.insert(
        0,
        packet("p-wide", "agent-scribe", "email.send.external", "Wide", 1, json!({"to": "x@y", "body": wide})),
    );
    scanned(&mut s, snap);
    press(&mut s, &["g"]);
    app::update(&mut s, Action::Resize { width: 250, height: 28 });
    press(&mut s, &["a"]);
    assert!(matches!(&s.mode, Mode::Confirm(c) if !c.read), "{:?}", s.mode);
    press(&mut s, &["z"]);
    assert!(matches!(&s.mode, Mode::Confirm(c) if c.read && c.zoomed), "{:?}", s.mode);
    assert_eq!(press(&mut s, &["y"]).len(), 1);

    // Keys typed ahead of the frame: the dialog was never drawn, so `y` signs nothing, even when
    // the whole dialog would fit.
    let mut s = state(false);
    app::update(&mut s, Action::Resize { width: 160, height: 48 });
    let fx: Vec<Effect> = ["a", "y"].iter().flat_map(|k| app::update(&mut s, key(k))).collect();
    assert!(fx.is_empty(), "{fx:?}");
    assert!(matches!(&s.mode, Mode::Confirm(c) if !c.read), "{:?}", s.mode);
    // A frame of another size than the one measured counts for nothing.
    app::update(&mut s, Action::Drawn { width: 100, height: 30 });
    assert!(matches!(&s.mode, Mode::Confirm(c) if !c.read), "{:?}", s.mode);
    app::update(&mut s, Action::Drawn { width: 160, height: 48 });
    assert_eq!(app::update(&mut s, key("y")).len(), 1);

    // A terminal of unknown size shows nothing for sure: nothing counts as read.
    let mut s = many_fields_state();
    s.viewport = None;
    press(&mut s, &["a", "pagedown", "pagedown", "pagedown", "pagedown", "y"]);
    assert!(matches!(&s.mode, Mode::Confirm(c) if !c.read), "{:?}", s.mode);

    // A refusal is fail-safe: it signs at once, from a dialog showing the same fields.
    let mut s = many_fields_state();
    press(&mut s, &["r", "x", "enter"]);
    assert!(screen(&s, 80, 24).contains("to: mallory@evil.example"));
    assert!(matches!(press(&mut s, &["y"]).as_slice(), [Effect::Sign { verdict: Verdict::Refuse, .. }]));
}

// Long values continue under their key, never at column 0; nested objects and lists are
// indented key/value lines, not one JSON line: in the zoomed detail and in the sign dialog.
#[test]
fn nested_values_indent_and_long_values_wrap_under_their_key() {
    let mut s = state(false);
    let long = "Please find attached the revised quote for forty units, valid until the end of the month.";
    let action = json!({
        "message": {"subject": long, "cc": ["ops@northwind.example", "audit@northwind.example"]},
        "to": "dana@northwind.example",
        "options": {"track": true, "retries": 3},
    });
    let mut snap = snapshot();
    snap.packets.insert(0, packet("p-nested", "agent-scribe", "email.send.external", "Nested", 1, action));
    scanned(&mut s, snap);
    press(&mut s, &["g", "enter", "j", "j", "j", "j"]);
    let zoomed = screen(&s, 80, 24);
    insta::assert_snapshot!("nested_zoomed_80x24", zoomed);
    press(&mut s, &["esc", "a"]);
    let dialog = screen(&s, 80, 24);
    insta::assert_snapshot!("nested_confirm_80x24", dialog);
    for text in [&zoomed, &dialog] {
        assert!(text.contains("  message:"), "{text}");
        assert!(text.contains("    cc:"), "cc indented under message: {text}");
        assert!(text.contains("      - ops@northwind.example"), "list items indented: {text}");
        assert!(!text.contains("{\"subject\""), "no JSON one-liner: {text}");
        // The subject's continuation starts under the value (column of `subject: ` + indent).
        let cont = text.lines().find(|l| l.contains("end of the month.")).expect("subject continues");
        let col = cont.find("end of the month.").or_else(|| cont.find(|c: char| c.is_alphabetic())).expect("text");
        assert!(col > 10, "continuation at column {col}: {cont}");
    }
}

// `n` and `esc` cancel; tab moves focus to Sign and enter then signs.
#[test]
fn cancel_keys_and_focus_toggle() {
    let mut s = state(false);
    for cancel in ["n", "esc"] {
        press(&mut s, &["a"]);
        assert!(press(&mut s, &[cancel]).is_empty());
        assert_eq!(s.mode, Mode::Normal);
    }
    let fx = press(&mut s, &["a", "tab", "enter"]);
    assert_eq!(fx.len(), 1);
}

// `r` asks for a reason first; an empty reason is refused; the reason reaches the Sign effect.
#[test]
fn refuse_needs_a_reason_then_confirms() {
    let mut s = state(false);
    press(&mut s, &["j", "r"]);
    insta::assert_snapshot!("refuse_reason_80x24", screen(&s, 80, 24));
    assert!(press(&mut s, &["enter"]).is_empty());
    assert!(matches!(s.mode, Mode::Input { .. }), "empty reason must be refused");
    press(&mut s, &["t", "o", "o", "space", "s", "o", "o", "n", "enter"]);
    let Mode::Confirm(c) = &s.mode else { panic!("{:?}", s.mode) };
    assert_eq!(
        (c.verdict, c.reason.as_deref(), c.packet.id.as_str()),
        (Verdict::Refuse, Some("too soon"), "p-kickoff")
    );
    let fx = press(&mut s, &["y"]);
    assert!(
        matches!(fx.as_slice(), [Effect::Sign { verdict: Verdict::Refuse, reason: Some(r), .. }] if r == "too soon")
    );
}

// Approving a human-only packet is refused before any dialog; refusing it is allowed.
#[test]
fn human_only_packets_cannot_be_approved() {
    let mut s = state(false);
    press(&mut s, &["G"]);
    assert_eq!(s.selected_packet().map(|p| p.id.clone()).as_deref(), Some("p-pay"));
    assert!(press(&mut s, &["a"]).is_empty());
    assert_eq!(s.mode, Mode::Normal);
    assert!(s.flash.as_ref().is_some_and(|f| f.error && f.text.contains("human_only")), "{:?}", s.flash);
    press(&mut s, &["r", "x", "enter"]);
    assert!(matches!(&s.mode, Mode::Confirm(c) if c.verdict == Verdict::Refuse));
}

// A read-only console never produces a Sign effect.
#[test]
fn read_only_cannot_sign() {
    let mut s = state(true);
    let fx = press(&mut s, &["a", "y", "r", "x", "enter", "y", "a"]);
    assert!(!fx.iter().any(|e| matches!(e, Effect::Sign { .. })), "{fx:?}");
    assert!(s.flash.as_ref().is_some_and(|f| f.text.contains("read-only")), "{:?}", s.flash);
    insta::assert_snapshot!("read_only_80x24", screen(&s, 80, 24));
}

// A broken chain raises an alert that must be acknowledged, and signing stays refused.
#[test]
fn broken_chain_alerts_and_refuses_signing() {
    let mut s = state(false);
    let report = VerifyReport {
        total: 7,
        root_hash: None,
        signatures_verified: 3,
        findings: vec![Finding {
            index: Some(3),
            check: Check::EntryHash,
            message: "entry_hash mismatch; recomputed sha256:…, stored sha256:…".into(),
        }],
        torn_tail: None,
    };
    app::update(&mut s, Action::ChainVerified(view(report, decided_post())));
    assert_eq!(s.mode, Mode::ChainAlert);
    insta::assert_snapshot!("chain_broken_80x24", screen(&s, 80, 24));
    press(&mut s, &["enter"]);
    assert_eq!(s.mode, Mode::Normal);
    assert!(press(&mut s, &["a"]).is_empty());
    assert!(s.flash.as_ref().is_some_and(|f| f.error && f.text.contains("broken")), "{:?}", s.flash);
    // `y` outside a dialog copies the id; it never signs.
    assert!(!press(&mut s, &["y"]).iter().any(|e| matches!(e, Effect::Sign { .. })));
    assert!(matches!(s.chain, ChainState::Broken { .. }));
    press(&mut s, &["a"]);
    insta::assert_snapshot!("chain_broken_ack_160x48", screen(&s, 160, 48));
}

// The lists: tab cycles panes; decided shows glyph and word; invalid shows the reason.
#[test]
fn decided_and_invalid_panes() {
    let mut s = state(false);
    press(&mut s, &["tab"]);
    assert_eq!(s.pane, Pane::Decided);
    let d = screen(&s, 80, 24);
    assert!(d.contains("✗ REFUSED"), "{d}");
    insta::assert_snapshot!("decided_80x24", d);
    press(&mut s, &["3"]);
    assert_eq!(s.pane, Pane::Invalid);
    let i = screen(&s, 160, 48);
    assert!(i.contains("external_actions"), "{i}");
    insta::assert_snapshot!("invalid_160x48", i);
    // Approve is refused outside the pending list.
    assert!(press(&mut s, &["a"]).is_empty());
    assert_eq!(s.mode, Mode::Normal);
}

// `/` filters live by agent, class, id or summary; esc clears.
#[test]
fn filter_narrows_the_lists() {
    let mut s = state(false);
    press(&mut s, &["/", "c", "a", "l"]);
    assert_eq!(s.pending().len(), 1);
    assert_eq!(s.pending()[0].packet.id, "p-kickoff");
    insta::assert_snapshot!("filter_80x24", screen(&s, 80, 24));
    press(&mut s, &["enter"]);
    assert_eq!(s.filter, "cal");
    press(&mut s, &["esc"]);
    assert_eq!(s.pending().len(), 3);
}

// A filter in force answers for what each scan brings: a new packet that matches, and a packet
// changed under the same id so that it no longer does (the filter's answers are kept per packet
// as parsed, not per id); another filter, and the same one again, answer afresh.
#[test]
fn filter_answers_for_packets_new_or_changed_since_it_was_typed() {
    let mut s = state(false);
    press(&mut s, &["/", "c", "a", "l", "enter"]);
    let ids = |s: &State| s.pending().iter().map(|e| e.packet.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&s), ["p-kickoff"]);
    let mut next = snapshot();
    next.packets.retain(|e| e.packet.id != "p-kickoff");
    next.packets.insert(0, packet("p-sync", "agent-planner", "draft.compose", "Calendar sync", 1, json!({})));
    next.packets.push(packet("p-kickoff", "agent-planner", "draft.compose", "Kick-off moved", 15, json!({})));
    scanned(&mut s, next);
    assert_eq!(ids(&s), ["p-sync"]);
    press(&mut s, &["/", "backspace", "backspace", "backspace", "p", "a", "y", "enter"]);
    assert_eq!(ids(&s), ["p-pay"]);
    press(&mut s, &["/", "backspace", "backspace", "backspace", "c", "a", "l", "enter"]);
    assert_eq!(ids(&s), ["p-sync"]);
    press(&mut s, &["esc"]);
    assert_eq!(ids(&s).len(), 4);
}

// `?` shows help generated from the keymap; any close key hides it.
#[test]
fn help_overlay_comes_from_the_keymap() {
    let mut s = state(false);
    press(&mut s, &["?"]);
    assert_eq!(s.mode, Mode::Help);
    let h = screen(&s, 160, 48);
    for b in s.keymap.bindings("normal") {
        assert!(h.contains(&b.desc), "help lacks {:?}", b.desc);
    }
    insta::assert_snapshot!("help_160x48", h);
    // At 80×24 the sections flow into columns, and what does not fit scrolls: every binding of
    // every mode is shown on the way down.
    let small = screen(&s, 80, 24);
    insta::assert_snapshot!("help_80x24", small);
    let mut seen = small.clone();
    for _ in 0..20 {
        press(&mut s, &["j"]);
        seen.push_str(&screen(&s, 80, 24));
    }
    assert!(s.help_scroll > 0, "help fits at 80×24: scroll test is vacuous");
    insta::assert_snapshot!("help_80x24_scrolled", screen(&s, 80, 24));
    for mode in ["normal", "confirm", "input", "help"] {
        for b in s.keymap.bindings(mode) {
            assert!(seen.contains(&b.desc), "80×24 help lacks {:?}:\n{seen}", b.desc);
        }
    }
    press(&mut s, &["esc"]);
    assert_eq!(s.mode, Mode::Normal);
    // ctrl-c closes help (and never quits from inside an overlay).
    press(&mut s, &["?", "ctrl-c"]);
    assert_eq!((s.mode.clone(), s.quit), (Mode::Normal, false));
}

// Text from packets is shown inert: no escape or control character reaches the screen.
#[test]
fn hostile_text_is_inert() {
    let mut s = state(false);
    let evil = packet(
        "p-evil",
        "agent-red",
        "email.send.external",
        "Pay now\u{1b}[31mred\u{1b}]0;pwned\u{7}\u{202e}gnp.exe",
        0,
        json!({"body": "line1\n\u{1b}[2Jclear\u{9b}31m", "to": "x\u{0}y@example.com"}),
    );
    let mut snap = snapshot();
    snap.packets.insert(0, evil);
    scanned(&mut s, snap);
    press(&mut s, &["g"]);
    assert_eq!(s.selected_packet().map(|p| p.id.clone()).as_deref(), Some("p-evil"));
    let out = screen(&s, 160, 48);
    assert!(!out.chars().any(|c| c.is_control() && c != '\n'), "control character on screen");
    assert!(out.contains("␛[31m") && out.contains("⟨U+202E⟩"), "{out}");
    insta::assert_snapshot!("hostile_160x48", out);
}

// Enter zooms the packet detail; esc returns; j/k and G/g move within bounds.
#[test]
fn navigation_and_zoom() {
    let mut s = state(false);
    press(&mut s, &["G"]);
    assert_eq!(s.selection(Pane::Pending), 2);
    press(&mut s, &["j", "j"]);
    assert_eq!(s.selection(Pane::Pending), 2);
    press(&mut s, &["g", "k"]);
    assert_eq!(s.selection(Pane::Pending), 0);
    press(&mut s, &["enter"]);
    assert!(s.zoomed);
    insta::assert_snapshot!("zoomed_80x24", screen(&s, 80, 24));
    press(&mut s, &["esc"]);
    assert!(!s.zoomed);
    // `q` in the whole-packet view goes back, as in less and k9s (issue 32, item 9: it quit the
    // console); ctrl-c still quits from there.
    press(&mut s, &["enter"]);
    assert_eq!(press(&mut s, &["q"]), vec![]);
    assert!(!s.zoomed && !s.quit, "back to the lists, not out of the console");
    press(&mut s, &["enter"]);
    assert_eq!(press(&mut s, &["ctrl-c"]), vec![Effect::Quit]);
    let mut s = state(false);
    // The selection follows the same packet when a newer one arrives.
    press(&mut s, &["j"]);
    let mut snap = snapshot();
    snap.packets.insert(0, packet("p-new", "agent-new", "draft.compose", "fresh", 0, json!({})));
    scanned(&mut s, snap);
    assert_eq!(s.selected_packet().map(|p| p.id.clone()).as_deref(), Some("p-kickoff"));
    // Tiny terminals get a notice instead of a panic.
    assert!(screen(&s, 30, 8).contains("terminal too small"));
    let fx = press(&mut s, &["q"]);
    assert_eq!(fx, vec![Effect::Quit]);
}

// A signing result moves the packet out of pending once the chain re-verifies.
#[test]
fn signed_result_flashes_and_rescans() {
    let mut s = state(false);
    press(&mut s, &["a", "y"]);
    let fx = app::update(
        &mut s,
        Action::Signed(Ok(app::SignedSummary {
            corrected: None,
            cosigned: None,
            packet_id: "p-quote".into(),
            verdict: Verdict::Approve,
            chain_index: 8,
            entry_hash: format!("sha256:{}", "ef".repeat(32)),
            grant: None,
        })),
    );
    assert_eq!(fx, vec![Effect::VerifyChain { force: false }, Effect::Scan]);
    assert!(!s.signing);
    assert!(s.flash.as_ref().is_some_and(|f| f.text.contains("approved p-quote")));
    let mut decided = decided_post();
    decided.insert(
        "p-quote".into(),
        std::sync::Arc::new(ChainDecision {
            cosigners: Vec::new(),
            quorum: None,
            signed: None,
            verdict: Verdict::Approve,
            principal: "alice".into(),
            reason: None,
            decided_at: "2026-11-21T09:00:00Z".into(),
            packet_hash: String::new(),
            chain_index: 8,
            entry_hash: String::new(),
            agent: String::new(),
            action_class: String::new(),
            system: None,
            corrected: None,
        }),
    );
    app::update(&mut s, Action::ChainVerified(view(*valid_report(8), decided)));
    assert!(s.pending().iter().all(|e| e.packet.id != "p-quote"));
    assert_eq!(s.decided().len(), 2);
}

// Zoomed, the whole packet is readable: long values are not cut, every top-level field is shown,
// and j/k/G scroll to the end; "more" markers say what is off screen.
#[test]
fn zoomed_view_shows_everything_and_scrolls() {
    let mut s = state(false);
    let mut action = serde_json::Map::new();
    for k in 0..30 {
        action.insert(format!("k{k:02}"), json!("benign"));
    }
    action.insert("to".into(), json!(format!("dana@northwind.example{}, attacker@evil.example", " ".repeat(150))));
    action.insert("zz_wire".into(), json!({"iban": "XX00EVIL"}));
    let mut long = packet("p-long", "agent-x", "email.send.external", "Innocent", 0, Value::Object(action));
    let mut raw = long.packet.raw.clone();
    raw["receipt_preview"] = json!({"hidden": "look here"});
    let reparsed =
        warrant::protocol::packet::parse_packet(&serde_json::to_vec(&raw).expect("json"), "p-long").expect("packet");
    long.packet = Arc::new(reparsed);
    let mut snap = snapshot();
    snap.packets.insert(0, long);
    scanned(&mut s, snap);
    press(&mut s, &["g", "enter"]);
    assert_eq!(s.selected_packet().map(|p| p.id.clone()).as_deref(), Some("p-long"));
    let top = screen(&s, 80, 24);
    assert!(top.contains("more lines"), "{top}");
    // Page by page, every line of the packet comes by.
    let mut all = top.clone();
    for _ in 0..8 {
        press(&mut s, &["pagedown"]);
        all.push_str(&screen(&s, 80, 24));
    }
    assert!(all.contains("attacker@evil.example") && all.contains("XX00EVIL"), "{all}");
    press(&mut s, &["g", "G"]);
    let bottom = screen(&s, 80, 24);
    assert!(bottom.contains("receipt_preview") && bottom.contains("look here"), "{bottom}");
    assert!(bottom.contains("lines") && bottom.contains('↑'), "{bottom}");
    insta::assert_snapshot!("zoomed_bottom_80x24", bottom);
    // The selection does not move while the zoomed view scrolls.
    assert_eq!(s.selected_packet().map(|p| p.id.clone()).as_deref(), Some("p-long"));
    press(&mut s, &["esc", "j"]);
    assert_eq!(s.detail_scroll, 0);
}

// If the packet changes (or disappears) while the dialog is open, the dialog closes and nothing
// is signed; a packet that just changed cannot be decided until it has settled.
#[test]
fn a_packet_changing_under_the_dialog_cancels_it() {
    let mut s = state(false);
    press(&mut s, &["a"]);
    assert!(matches!(s.mode, Mode::Confirm(_)));
    let mut snap = snapshot();
    snap.packets[0] = packet(
        "p-quote",
        "agent-scribe",
        "email.send.external",
        "Quote for 40 units to Dana",
        2,
        json!({"to": "mallory@evil.example"}),
    );
    scanned(&mut s, snap.clone());
    assert_eq!(s.mode, Mode::Normal);
    assert!(
        s.flash.as_ref().is_some_and(|f| f.error && f.text.contains("changed while you were confirming")),
        "{:?}",
        s.flash
    );
    assert!(screen(&s, 160, 48).contains("CHANGED"));
    // Too soon: refused; after the settle time: allowed.
    assert!(press(&mut s, &["a"]).is_empty());
    assert_eq!(s.mode, Mode::Normal);
    assert!(s.flash.as_ref().is_some_and(|f| f.text.contains("just changed")), "{:?}", s.flash);
    app::update(&mut s, Action::Tick(NOW + app::SETTLE_SECONDS + 0.5));
    press(&mut s, &["a"]);
    let Mode::Confirm(c) = &s.mode else { panic!("{:?}", s.mode) };
    assert_eq!(c.packet.content_hash, snap.packets[0].packet.content_hash);
    // A packet that disappears under the dialog cancels it too.
    snap.packets.remove(0);
    scanned(&mut s, snap);
    assert_eq!(s.mode, Mode::Normal);
    assert!(s.flash.as_ref().is_some_and(|f| f.text.contains("disappeared")));
}

// An expired packet can be refused but not approved.
#[test]
fn expired_packets_can_only_be_refused() {
    let mut s = state(false);
    let mut e = packet("p-old", "agent-x", "draft.compose", "Old", 0, json!({}));
    let mut raw = e.packet.raw.clone();
    raw["expires_at"] = json!("2026-11-21T08:00:00Z");
    e.packet = Arc::new(
        warrant::protocol::packet::parse_packet(&serde_json::to_vec(&raw).expect("json"), "p-old").expect("packet"),
    );
    let mut soon = packet("p-soon", "agent-x", "draft.compose", "Soon", 0, json!({}));
    let mut raw = soon.packet.raw.clone();
    raw["expires_at"] = json!(warrant::protocol::clock::format_rfc3339(
        time::OffsetDateTime::from_unix_timestamp(NOW as i64 + 2 * 3600 + 60).expect("time")
    ));
    soon.packet = Arc::new(
        warrant::protocol::packet::parse_packet(&serde_json::to_vec(&raw).expect("json"), "p-soon").expect("packet"),
    );
    let mut snap = snapshot();
    snap.packets.insert(0, e);
    snap.packets.insert(1, soon);
    scanned(&mut s, snap);
    // Issue 32, item 8: the expired packet is marked and listed apart, after the live ones (it
    // was first, shown `● review` with no sign of its expiry); one expiring shows its time left.
    assert_eq!(s.pending().last().map(|e| e.packet.id.as_str()), Some("p-old"));
    let shown = screen(&s, 120, 36);
    let row = |id: &str| shown.lines().find(|l| l.contains(id)).unwrap_or_else(|| panic!("{id}: {shown}")).to_owned();
    assert!(row("Old").contains("⏱ expired") && !row("Old").contains("review"), "{shown}");
    assert!(row("Soon").contains("⏱2h"), "{shown}");
    press(&mut s, &["G"]);
    assert!(press(&mut s, &["a"]).is_empty());
    assert_eq!(s.mode, Mode::Normal);
    assert!(s.flash.as_ref().is_some_and(|f| f.text.contains("expired")), "{:?}", s.flash);
    assert!(screen(&s, 160, 48).contains("EXPIRED"));
    press(&mut s, &["r", "x", "enter"]);
    assert!(matches!(&s.mode, Mode::Confirm(c) if c.verdict == Verdict::Refuse));
}

fn posterior_of<'a>(s: &'a State, class: &str) -> &'a warrant::protocol::graduation::Posterior {
    s.posteriors().iter().find(|p| p.action_class == class).map(|p| &p.posterior).expect("posterior row")
}

// Pane 4 lists one posterior per action class, with the interval band and numbers; chain
// evidence moves them, and the packet detail shows the gate's decision and the evidence rows.
#[test]
fn posteriors_pane_shows_intervals_from_chain_evidence() {
    use warrant::protocol::graduation::{EvidenceRow, SourceType};
    let mut s = state(false);
    assert_eq!(posterior_of(&s, "draft.compose").samples, 0);
    let mut evidence: Vec<EvidenceRow> =
        (0..12).map(|_| EvidenceRow::new("draft.compose", "approved", Some(SourceType::Principal), None)).collect();
    evidence.push(EvidenceRow::new("email.send.external", "rejected", Some(SourceType::Principal), None));
    let view = Box::new(ChainView {
        report: *valid_report(20),
        decisions: decided_post(),
        evidence: evidence.into(),
        ..ChainView::default()
    });
    app::update(&mut s, Action::ChainVerified(view));
    let p = posterior_of(&s, "draft.compose").clone();
    assert_eq!((p.samples, p.beta), (12, 2.0));
    assert!((p.alpha - (2.0 + 12.0 * 0.85)).abs() < 1e-9);
    assert!(p.ci_low < p.mean && p.mean < p.ci_high);
    press(&mut s, &["4"]);
    assert_eq!(s.pane, Pane::Posteriors);
    let screen_text = screen(&s, 160, 48);
    assert!(screen_text.contains(&format!("{:.2} [{:.2}–{:.2}]", p.mean, p.ci_low, p.ci_high)), "{screen_text}");
    assert!(screen_text.contains("━") && screen_text.contains("●"));
    insta::assert_snapshot!("posteriors_160x48", screen_text);
    // The detail of the selected class lists its evidence rows with their provenance.
    let row = s.posteriors().iter().position(|p| p.action_class == "draft.compose").expect("row");
    s.selected[Pane::Posteriors as usize] = row;
    let detail = screen(&s, 160, 48);
    assert!(detail.contains("evidence rows for draft.compose (12)") && detail.contains("principal"), "{detail}");
    // The pending email packet's gate decision says why it waits, with its graduation path.
    press(&mut s, &["1"]);
    let d = s.gate_decision("p-quote").expect("gate decision");
    assert_eq!((d.status.as_str(), d.mode.as_str()), ("review_required", "approval_required"));
    let zoomed = {
        press(&mut s, &["enter"]);
        let mut all = String::new();
        for _ in 0..6 {
            all.push_str(&screen(&s, 100, 60));
            press(&mut s, &["pagedown"]);
        }
        all
    };
    assert!(
        zoomed.contains("prepareApprovalPacket") && zoomed.contains("evidence rows for email.send.external (1)"),
        "{zoomed}"
    );
}

// The principal's own signature is a receipt: the posterior moves as soon as it is signed.
#[test]
fn a_signed_approval_moves_the_posterior_at_once() {
    let mut s = state(false);
    let before = posterior_of(&s, "email.send.external").clone();
    app::update(
        &mut s,
        Action::Signed(Ok(app::SignedSummary {
            corrected: None,
            cosigned: None,
            packet_id: "p-quote".into(),
            verdict: Verdict::Approve,
            chain_index: 9,
            entry_hash: format!("sha256:{}", "0".repeat(64)),
            grant: None,
        })),
    );
    let after = posterior_of(&s, "email.send.external");
    assert_eq!(after.samples, before.samples + 1);
    assert!(after.mean > before.mean);
    assert!(after.approvals_to_graduate() < before.approvals_to_graduate());
}

// The console's own approvals counted once (issue 32, item 3): the watcher sees the chain grow
// and its verification can answer before the signing job does; the chain's view then holds the
// decision's evidence, and the signing job's answer must not add it again. One approval is one
// sample, a batch of two is two, whichever answer comes first.
#[test]
fn an_approval_the_chain_view_already_holds_is_counted_once() {
    use warrant::store::spool::{ChainEvidence, decision_evidence};
    let decided = |index: u64, class: &str| ChainDecision {
        cosigners: Vec::new(),
        quorum: None,
        signed: None,
        verdict: Verdict::Approve,
        principal: "alice".into(),
        reason: None,
        decided_at: "2026-11-21T09:00:00Z".into(),
        packet_hash: String::new(),
        chain_index: index,
        entry_hash: format!("sha256:{}", "0".repeat(64)),
        agent: "agent".into(),
        action_class: class.into(),
        system: None,
        corrected: None,
    };
    let summary = |id: &str, index: u64| app::SignedSummary {
        corrected: None,
        cosigned: None,
        packet_id: id.into(),
        verdict: Verdict::Approve,
        chain_index: index,
        entry_hash: format!("sha256:{}", "0".repeat(64)),
        grant: None,
    };
    let chain_first = |s: &mut State, signed: &[(&str, u64, &str)]| {
        let mut decisions = decided_post();
        let mut evidence = ChainEvidence::default();
        for (id, index, class) in signed {
            decisions.insert((*id).to_owned(), std::sync::Arc::new(decided(*index, class)));
            evidence
                .push(decision_evidence(class, Verdict::Approve, None, "2026-11-21T09:00:00Z", Some(id)).expect("row"));
        }
        let total = 7 + signed.len();
        app::update(
            s,
            Action::ChainVerified(Box::new(ChainView {
                report: *valid_report(total),
                decisions,
                evidence,
                ..ChainView::default()
            })),
        );
    };

    let mut s = state(false);
    let before = posterior_of(&s, "email.send.external").samples;
    chain_first(&mut s, &[("p-quote", 8, "email.send.external")]);
    app::update(&mut s, Action::Signed(Ok(summary("p-quote", 8))));
    assert_eq!(posterior_of(&s, "email.send.external").samples, before + 1, "one approval, one sample");

    let mut s = state(false);
    let (quote, kickoff) =
        (posterior_of(&s, "email.send.external").samples, posterior_of(&s, "calendar.create").samples);
    chain_first(&mut s, &[("p-quote", 8, "email.send.external"), ("p-kickoff", 9, "calendar.create")]);
    app::update(&mut s, Action::SignedBatch(Ok(vec![summary("p-quote", 8), summary("p-kickoff", 9)])));
    assert_eq!(posterior_of(&s, "email.send.external").samples, quote + 1, "a batch of two: one each");
    assert_eq!(posterior_of(&s, "calendar.create").samples, kickoff + 1);

    // The other order: the signing job's answer first moves it at once; the view replaces it.
    let mut s = state(false);
    app::update(&mut s, Action::Signed(Ok(summary("p-quote", 8))));
    assert_eq!(posterior_of(&s, "email.send.external").samples, before + 1);
    chain_first(&mut s, &[("p-quote", 8, "email.send.external")]);
    assert_eq!(posterior_of(&s, "email.send.external").samples, before + 1);
}

// ---------------------------------------------------------------------------------------------
// One assessment, the verdict block, the matrices and agents views, signed controls.

use warrant::preconditions::{Budget, Observer};
use warrant::protocol::control::{CONTROL_DOMAIN, ControlEvent, ControlKind, ControlState};
use warrant::protocol::graduation::PolicySet;
use warrant::protocol::tiers::NotebookTrust;

/// Tools and their tiers, as `policy.toml` registers them.
const GOVERNED_POLICY: &str = r#"
[tools."notes.append"]
tier = "safe"
[tools."corrections.merge"]
tier = "mutating"
[tools."records.purge"]
tier = "destructive"
"#;

/// A packet carrying a top-level `governance` object, which arrived `minutes_ago`.
fn governed(id: &str, agent: &str, summary: &str, minutes_ago: i64, governance: Value, class: &str) -> PacketEntry {
    let mut e = packet(id, agent, class, summary, minutes_ago, json!({"text": summary}));
    let mut raw = e.packet.raw.clone();
    raw["governance"] = governance;
    e.packet = Arc::new(
        warrant::protocol::packet::parse_packet(&serde_json::to_vec(&raw).expect("json"), id).expect("packet"),
    );
    e.arrived = NOW - (minutes_ago * 60) as f64;
    e
}

fn governed_snapshot() -> Snapshot {
    let merge = json!({
        "tool": "corrections.merge", "notebook": "nb-sales", "eff_score": 0.72,
        "action": {"action_id": "merge-1", "name": "Merge corrections", "execute_api": "/merge",
                   "reversibility": "partial"},
        "contract": {"required_level": 2, "blast_radius": "project", "reversibility": "reversible",
                     "scope": {"level": "repo", "identifier": "acme/web"}, "data_sensitivity": "private",
                     "preconditions": [{"check_id": "file.exists",
                                        "parameters": {"path": "/nonexistent/warrant-console-test"},
                                        "expected_at_approval": false, "must_revalidate_at_execution": true}]}
    });
    let note = |notebook: &str, score: f64| json!({"tool": "notes.append", "notebook": notebook, "eff_score": score});
    let purge = json!({
        "tool": "records.purge", "notebook": "nb-ops", "eff_score": 0.55,
        "action": {"action_id": "purge-1", "name": "Purge records", "execute_api": "/purge", "reversibility": "none"}
    });
    Snapshot {
        packets: vec![
            governed("p-merge", "agent-scribe", "Merge 14 corrections", 1, merge, "email.send.external"),
            governed("p-exfil", "agent-rogue", "Copy the payroll notes", 2, note("nb-sales", 0.9), "draft.compose"),
            governed("p-purge", "agent-planner", "Purge stale records", 4, purge, "draft.compose"),
            governed("p-note", "agent-herald", "Append the meeting notes", 9, note("nb-lab", 0.55), "draft.compose"),
            governed("p-note2", "agent-scribe", "Append a summary", 12, note("nb-sales", 0.72), "draft.compose"),
            governed("p-note3", "agent-scribe", "Append a correction", 12, note("nb-sales", 0.72), "draft.compose"),
        ],
        receipts: vec![],
        invalid: vec![],
        ..Snapshot::default()
    }
}

fn control_event(kind: ControlKind, subject: &str, at: &str, extra: Value) -> ControlEvent {
    let mut doc = json!({"domain": CONTROL_DOMAIN, "control": kind.as_str(), "subject": subject,
                         "principal": "alice", "decided_at": at});
    if let (Value::Object(d), Value::Object(x)) = (&mut doc, extra) {
        d.extend(x);
    }
    ControlEvent::from_document(&doc).expect("control")
}

/// The chain's controls: nb-sales raised to trusted, agent-rogue quarantined, agent-planner
/// elevated to ring 2 until 09:04:30 (4 min 30 s after `NOW`).
fn governed_controls() -> ControlState {
    let mut c = ControlState::default();
    c.apply(&control_event(ControlKind::TrustSet, "nb-sales", "2026-11-21T08:00:00Z", json!({"level": "trusted"})));
    c.apply(&control_event(
        ControlKind::Quarantine,
        "agent-rogue",
        "2026-11-21T08:40:00Z",
        json!({"reason": "tried to reach the payroll API"}),
    ));
    c.apply(&control_event(
        ControlKind::Elevate,
        "agent-planner",
        "2026-11-21T09:00:00Z",
        json!({"ring": 2, "expires_at": "2026-11-21T09:04:30Z"}),
    ));
    c
}

fn governed_state(read_only: bool) -> State {
    let policies = PolicySet::from_toml(GOVERNED_POLICY).expect("policy");
    let mut s = State::new(
        "/tmp/spool".into(),
        (!read_only).then(|| "alice".to_owned()),
        (!read_only).then(|| "SHA256:S1I+LnIehTKTATEWkIjfe40E1haIYEbCmd6nU3nMHAQ".to_owned()),
        read_only,
        Keymap::default_map(),
        NOW,
    )
    .with_policies(Arc::new(policies))
    // p-merge's precondition names a path below /nonexistent: the one root it may observe.
    .with_observer(Arc::new(Observer::new(&["/nonexistent".into()], None, Budget::default())));
    scanned(&mut s, governed_snapshot());
    let view = ChainView { report: *valid_report(3), controls: governed_controls(), ..ChainView::default() };
    app::update(&mut s, Action::ChainVerified(Box::new(view)));
    app::update(&mut s, Action::Resize { width: 80, height: 24 });
    s
}

fn select_pending(s: &mut State, id: &str) {
    press(s, &["1", "g"]);
    let i = s.pending().iter().position(|e| e.packet.id == id).expect("pending packet");
    s.selected[Pane::Pending as usize] = i;
}

fn select_in(s: &mut State, pane: Pane, pos: Option<usize>) {
    s.selected[pane as usize] = pos.expect("row");
}

fn select_notebook(s: &mut State, id: &str) {
    press(s, &["5"]);
    let pos = s.notebooks().iter().position(|n| n.id == id);
    select_in(s, Pane::Matrices, pos);
}

fn select_agent(s: &mut State, id: &str) {
    press(s, &["6"]);
    let pos = s.agents().iter().position(|a| a.agent == id);
    select_in(s, Pane::Agents, pos);
}

fn typed(s: &mut State, text: &str) {
    for c in text.chars() {
        let name = if c == ' ' { "space".to_owned() } else { c.to_string() };
        app::update(s, key(&name));
    }
}

// One assessment: every pending packet has a composed verdict; the pending list's state column
// shows it (a quarantined agent's packet is blocked, whatever it declares).
#[test]
fn the_pending_list_shows_the_composed_verdict() {
    let s = governed_state(false);
    let state_of = |id: &str| s.verdict(id).map(|v| v.state.as_str());
    assert_eq!(state_of("p-exfil"), Some("blocked"), "agent-rogue is quarantined");
    // Ring 2 may not run an irreversible action on its own: the principal's approval sponsors it.
    assert_eq!(state_of("p-purge"), Some("review_required"), "a ring shortfall a person can authorise");
    let purge = s.verdict("p-purge").expect("assessed");
    let rings = purge.models.iter().find(|m| m.model.as_str() == "rings").expect("rings model");
    assert_eq!((rings.verdict.as_str(), rings.state.as_str()), ("sponsorship_required", "review_required"));
    assert!(
        purge.stands_in_for().iter().any(|s| s == "ring sponsorship: Ring 1 for this action (agent at Ring 2)"),
        "{:?}",
        purge.stands_in_for()
    );
    let screen_text = screen(&s, 160, 48);
    let row = screen_text.lines().find(|l| l.contains("agent-rogue")).expect("row");
    assert!(row.contains("⊘ blocked"), "{row}");
    // A waiting packet is never shown as `✓ allowed`, even where the gate would let it run.
    assert!(s.pending().iter().any(|e| s.verdict(&e.packet.id).is_some_and(|v| v.state.as_str() == "allowed")));
    assert!(!screen_text.contains("✓ allowed"), "{screen_text}");
    assert!(screen_text.contains("○ gate: allow"), "{screen_text}");
    insta::assert_snapshot!("governed_main_160x48", screen_text);
}

// A packet no one may approve says why in one line and what would change it; an approvable
// packet whose ring falls short says what an approval stands in for.
#[test]
fn the_detail_says_why_a_packet_cannot_be_approved_and_what_would_change_it() {
    let mut s = governed_state(false);
    select_pending(&mut s, "p-exfil");
    let text = screen(&s, 160, 48);
    let why = text.lines().find(|l| l.contains(" why  ")).expect("a why line");
    assert!(why.contains("quarantined"), "{why}");
    let change = text.lines().find(|l| l.contains("to change  ")).expect("a remedy line");
    assert!(change.contains("release agent-rogue from quarantine"), "{change}");
    select_pending(&mut s, "p-purge");
    let text = screen(&s, 160, 48);
    assert!(!text.contains("to change  "), "p-purge is approvable: {text}");
    assert!(text.contains("stands in for ring sponsorship: Ring 1 for this action"), "{text}");
    // The sign dialog shows it too: it is signed with the approval.
    press(&mut s, &["a"]);
    let text = screen(&s, 160, 48);
    assert!(text.contains("stands in  for ring sponsorship: Ring 1 for this action"), "{text}");
}

// The packet detail shows every model's verdict side by side, and the preconditions observed now.
#[test]
fn the_packet_detail_shows_each_models_verdict() {
    let mut s = governed_state(false);
    select_pending(&mut s, "p-merge");
    let v = s.verdict("p-merge").expect("verdict").clone();
    let models: Vec<&str> = v.models.iter().map(|m| m.model.as_str()).collect();
    assert_eq!(models, ["trust_graduation", "rate_limit", "tiers", "rings", "ladder", "preconditions"]);
    let words: Vec<&str> = v.models.iter().map(|m| m.verdict.as_str()).collect();
    assert_eq!(words[1..], ["within", "auto", "allowed", "allow", "hold"]);
    press(&mut s, &["enter"]);
    let mut all = String::new();
    for _ in 0..4 {
        all.push_str(&screen(&s, 160, 48));
        press(&mut s, &["pagedown"]);
    }
    for m in &v.models {
        let row = all.lines().find(|l| l.contains(m.model.as_str()) && l.contains(m.verdict.as_str()));
        assert!(row.is_some(), "no row for {:?} in\n{all}", m.model);
    }
    assert!(all.contains(&format!("decisive: {}", v.decisive.as_str())), "{all}");
    assert!(all.contains("✓ holds") && all.contains("file.exists"), "{all}");
    press(&mut s, &["g"]);
    insta::assert_snapshot!("verdict_detail_160x48", screen(&s, 160, 48));
}

// A scan lists its packets before the models assess them (the event loop draws first, then sends
// `Assess`); an approval never reads a stale assessment: it assesses first, and a quarantined
// agent's packet that arrived a moment ago is refused like any other.
#[test]
fn a_scan_is_listed_before_it_is_assessed_and_approval_assesses_first() {
    let policies = PolicySet::from_toml(GOVERNED_POLICY).expect("policy");
    let mut s = State::new(
        "/tmp/spool".into(),
        Some("alice".to_owned()),
        Some("SHA256:S1I+LnIehTKTATEWkIjfe40E1haIYEbCmd6nU3nMHAQ".to_owned()),
        false,
        Keymap::default_map(),
        NOW,
    )
    .with_policies(Arc::new(policies));
    let view = ChainView { report: *valid_report(3), controls: governed_controls(), ..ChainView::default() };
    app::update(&mut s, Action::ChainVerified(Box::new(view)));
    app::update(&mut s, Action::Scanned(governed_snapshot()));
    assert!(s.assessment_due());
    assert!(s.pending().iter().any(|e| e.packet.id == "p-exfil"), "listed at once");
    assert!(s.verdict("p-exfil").is_none(), "not assessed yet");
    select_pending(&mut s, "p-exfil");
    assert!(press(&mut s, &["a"]).is_empty());
    assert_eq!(s.mode, Mode::Normal);
    // Assessed on the UI thread, which observes nothing: p-merge's precondition keeps a job due.
    assert!(s.assessment_due());
    assert_eq!(s.verdict("p-exfil").map(|v| v.state.as_str()), Some("blocked"));
    let flash = s.flash.as_ref().expect("flash");
    assert!(flash.error && flash.text.contains("blocked"), "{flash:?}");
    // `Assess` itself brings the assessment up to date, and is idle when it is.
    app::update(&mut s, Action::Scanned(governed_snapshot()));
    assert!(s.assessment_due());
    app::update(&mut s, Action::Assess);
    assert!(s.verdict("p-exfil").is_some());
    let job = s.assess_job().expect("the observation is still due");
    app::update(&mut s, Action::Assessed(Box::new(job.run())));
    assert!(!s.assessment_due());
}

// The event loop assesses off the UI thread: a job copied out of the state gives the verdicts the
// synchronous `Assess` gives; a result older than the state's assessment is dropped, and one from
// an older snapshot is taken but leaves the next assessment due.
#[test]
fn assessments_made_off_the_ui_thread_match_and_never_go_back() {
    let mut sync = governed_state(false);
    app::update(&mut sync, Action::Scanned(governed_snapshot()));
    app::update(&mut sync, Action::Assess);

    let mut s = governed_state(false);
    app::update(&mut s, Action::Scanned(governed_snapshot()));
    let job = s.assess_job().expect("an assessment is due");
    let done = job.run();
    // A newer scan lands while the job runs: its result is taken, and another is due.
    app::update(&mut s, Action::Scanned(governed_snapshot()));
    app::update(&mut s, Action::Assessed(Box::new(done.clone())));
    for id in ["p-exfil", "p-purge", "p-note"] {
        assert_eq!(s.verdict(id), sync.verdict(id), "{id}");
    }
    assert!(s.assessment_due(), "made from the older scan");
    // The same result again, after the state assessed the newer scan itself: dropped.
    app::update(&mut s, Action::Assess);
    assert!(!s.assessment_due());
    let before = Arc::as_ptr(&s.verdict_arc("p-exfil").expect("verdict"));
    app::update(&mut s, Action::Assessed(Box::new(done)));
    assert_eq!(Arc::as_ptr(&s.verdict_arc("p-exfil").expect("verdict")), before, "an older result is dropped");
    assert!(s.assess_job().is_none(), "nothing due");
}

// Approval is refused when the composed verdict is blocked, with the decisive model's reason.
#[test]
fn approving_a_packet_whose_composed_verdict_is_blocked_is_refused() {
    let mut s = governed_state(false);
    select_pending(&mut s, "p-exfil");
    assert!(press(&mut s, &["a"]).is_empty());
    assert_eq!(s.mode, Mode::Normal);
    let v = s.verdict("p-exfil").expect("verdict");
    let reason = &v.models.iter().find(|m| m.model == v.decisive).expect("decisive").reason;
    let flash = s.flash.as_ref().expect("flash");
    assert!(flash.error && flash.text.contains("blocked") && flash.text.contains(reason.as_str()), "{flash:?}");
    // Refusing it is allowed.
    press(&mut s, &["r", "x", "enter"]);
    assert!(matches!(&s.mode, Mode::Confirm(c) if c.verdict == Verdict::Refuse));
    // An approval dialog opened before the agent was quarantined signs nothing once it is.
    press(&mut s, &["esc"]);
    select_pending(&mut s, "p-note");
    press(&mut s, &["a"]);
    assert!(matches!(&s.mode, Mode::Confirm(c) if c.verdict == Verdict::Approve), "{:?}", s.mode);
    let mut controls = governed_controls();
    controls.apply(&control_event(ControlKind::Quarantine, "agent-herald", "2026-11-21T09:00:00Z", json!({})));
    app::update(
        &mut s,
        Action::ChainVerified(Box::new(ChainView { report: *valid_report(4), controls, ..ChainView::default() })),
    );
    assert!(press(&mut s, &["y"]).is_empty());
    assert!(s.flash.as_ref().is_some_and(|f| f.error && f.text.contains("nothing was signed")), "{:?}", s.flash);
}

// Pane 5: the ring matrix (what each ring may touch, who is in it) and the tier × trust matrix
// with the notebooks, the selected notebook's column highlighted.
#[test]
fn matrices_view() {
    let mut s = governed_state(false);
    press(&mut s, &["5"]);
    assert_eq!(s.pane, Pane::Matrices);
    let ids: Vec<(&str, NotebookTrust)> = s.notebooks().iter().map(|n| (n.id.as_str(), n.level)).collect();
    assert_eq!(
        ids,
        [
            ("nb-lab", NotebookTrust::Cautious),
            ("nb-ops", NotebookTrust::Cautious),
            ("nb-sales", NotebookTrust::Trusted)
        ]
    );
    select_notebook(&mut s, "nb-sales");
    let wide = screen(&s, 160, 48);
    for want in ["0 root", "3 sandbox", "100/s 200", "agent-rogue 0.90", "▾trusted", "corrections.merge", "alice"] {
        assert!(wide.contains(want), "missing {want:?}:\n{wide}");
    }
    insta::assert_snapshot!("matrices_160x48", wide);
    let small = screen(&s, 80, 24);
    assert!(small.contains("nb-sales") && small.contains("● confirm"), "{small}");
    insta::assert_snapshot!("matrices_80x24", small);
}

// Pane 6: one row per agent with ring, score, standing, counts, sparkline, tokens and the
// elevation's countdown.
#[test]
fn agents_view() {
    let mut s = governed_state(false);
    press(&mut s, &["6"]);
    assert_eq!(s.pane, Pane::Agents);
    let agents: Vec<&str> = s.agents().iter().map(|a| a.agent.as_str()).collect();
    assert_eq!(agents, ["agent-herald", "agent-planner", "agent-rogue", "agent-scribe"]);
    let wide = screen(&s, 160, 48);
    let row = |name: &str| wide.lines().find(|l| l.contains(name)).unwrap_or_default().to_owned();
    assert!(row("agent-planner").contains("↑2 04:30"), "{wide}");
    assert!(row("agent-rogue").contains("⊘ quarantined"), "{wide}");
    assert!(row("agent-scribe").contains('▄') || row("agent-scribe").contains('█'), "{wide}");
    insta::assert_snapshot!("agents_160x48", wide);
    // The countdown moves with the clock (one recompute per tick while an elevation is active).
    app::update(&mut s, Action::Tick(NOW + 30.0));
    assert!(screen(&s, 160, 48).contains("↑2 04:00"));
    insta::assert_snapshot!("agents_80x24", screen(&s, 80, 24));
}

// Without an elevation, a tick within the same minute recomputes nothing; a new minute does; an
// expiring elevation changes the agent's ring and the verdicts.
#[test]
fn ticks_reassess_only_when_time_matters() {
    let mut s = governed_state(false);
    let before: *const warrant::monitor::Assessment = s.assessment();
    app::update(&mut s, Action::Tick(NOW + 0.5));
    assert!(std::ptr::eq(before, s.assessment()), "no elevation moved and the minute is the same: no recompute");
    app::update(&mut s, Action::Tick(NOW + 1.5));
    assert!(!std::ptr::eq(before, s.assessment()), "an elevation counts down: recomputed");
    let planner = |s: &State| s.assessment().monitor.agents["agent-planner"].clone();
    assert_eq!((planner(&s).ring.value(), planner(&s).elevation.map(|e| e.0)), (2, Some(2)));
    app::update(&mut s, Action::Tick(NOW + 271.0));
    assert_eq!((planner(&s).ring.value(), planner(&s).elevation), (3, None), "the elevation expired");
    let rings = s.verdict("p-purge").and_then(|v| v.models.iter().find(|m| m.model.as_str() == "rings").cloned());
    assert!(rings.is_some_and(|m| m.reason.contains("ring 3")), "the verdict follows the ring");
    let quiet: *const warrant::monitor::Assessment = s.assessment();
    app::update(&mut s, Action::Tick(NOW + 272.0));
    assert!(std::ptr::eq(quiet, s.assessment()), "nothing counts down any more");
    app::update(&mut s, Action::Tick(NOW + 300.0));
    assert!(!std::ptr::eq(quiet, s.assessment()), "a new minute moves the sparklines");
}

fn control_effect(fx: &[Effect]) -> &warrant::protocol::control::ControlInput {
    match fx {
        [Effect::Control(input)] => input,
        other => panic!("expected one control effect, got {other:?}"),
    }
}

// `+` on a notebook opens a dialog previewing the control; `y` asks for a signed TrustSet.
#[test]
fn raising_a_notebook_signs_a_trust_set_control() {
    let mut s = governed_state(false);
    select_notebook(&mut s, "nb-ops");
    assert!(press(&mut s, &["+"]).is_empty());
    assert!(matches!(&s.mode, Mode::ControlConfirm(c) if c.focus == Button::Cancel), "{:?}", s.mode);
    let dialog = screen(&s, 80, 24);
    assert!(dialog.contains("notebook.trust_set") && dialog.contains("mutating tools: confirm → auto"), "{dialog}");
    insta::assert_snapshot!("trust_set_confirm_80x24", dialog);
    let fx = press(&mut s, &["y"]);
    let input = control_effect(&fx);
    assert_eq!((input.kind, input.subject.as_str()), (ControlKind::TrustSet, "nb-ops"));
    assert_eq!(
        (input.fields["level"].as_str(), input.fields["previous"].as_str()),
        (Some("trusted"), Some("cautious"))
    );
    assert!(s.signing);
    // The result comes back, the chain is verified again, and the scan refreshed.
    let fx = app::update(
        &mut s,
        Action::ControlSigned(Ok(app::ControlSummary {
            kind: ControlKind::TrustSet,
            subject: "nb-ops".into(),
            chain_index: 4,
            entry_hash: format!("sha256:{}", "12".repeat(32)),
            refused: 0,
        })),
    );
    assert_eq!(fx, vec![Effect::VerifyChain { force: false }, Effect::Scan]);
    assert!(!s.signing && s.flash.as_ref().is_some_and(|f| f.text.contains("recorded notebook.trust_set nb-ops")));
    // `-` lowers; nothing goes below cautious.
    select_notebook(&mut s, "nb-lab");
    assert!(press(&mut s, &["-"]).is_empty());
    assert_eq!(s.mode, Mode::Normal);
    assert!(s.flash.as_ref().is_some_and(|f| f.text.contains("already cautious")), "{:?}", s.flash);
}

// Raising to autonomous needs the notebook's name typed: anything else cancels.
#[test]
fn raising_to_autonomous_needs_the_typed_name() {
    let mut s = governed_state(false);
    select_notebook(&mut s, "nb-sales");
    press(&mut s, &["+"]);
    assert!(matches!(&s.mode, Mode::Input { purpose: app::InputPurpose::TypedConfirm(_), .. }), "{:?}", s.mode);
    insta::assert_snapshot!("typed_confirm_80x24", screen(&s, 80, 24));
    // `y` is text here, not "sign".
    assert!(press(&mut s, &["y"]).is_empty());
    typed(&mut s, "nb-sale");
    let fx = press(&mut s, &["enter"]);
    assert!(fx.is_empty(), "{fx:?}");
    assert_eq!(s.mode, Mode::Normal);
    assert!(s.flash.as_ref().is_some_and(|f| f.error && f.text.contains("nothing was signed")), "{:?}", s.flash);
    // Esc cancels too.
    press(&mut s, &["+"]);
    typed(&mut s, "nb-sales");
    assert!(press(&mut s, &["esc"]).is_empty());
    assert_eq!(s.mode, Mode::Normal);
    press(&mut s, &["+"]);
    typed(&mut s, "nb-sales");
    let fx = press(&mut s, &["enter"]);
    let input = control_effect(&fx);
    assert_eq!(input.subject, "nb-sales");
    assert_eq!(
        (input.fields["level"].as_str(), input.fields["previous"].as_str()),
        (Some("autonomous"), Some("trusted"))
    );
}

// `Q` asks for a reason (required), then a dialog; `y` asks for a signed quarantine.
#[test]
fn quarantine_needs_a_reason_and_a_confirmation() {
    let mut s = governed_state(false);
    select_agent(&mut s, "agent-scribe");
    press(&mut s, &["Q"]);
    assert!(matches!(&s.mode, Mode::Input { purpose: app::InputPurpose::ControlReason(_), .. }), "{:?}", s.mode);
    // People's words in the titles (issue 32, item 12), the wire name in the body.
    let shown = screen(&s, 160, 48);
    assert!(shown.contains("Quarantine agent-scribe: why?") && !shown.contains("agent.quarantine: why?"), "{shown}");
    assert!(press(&mut s, &["enter"]).is_empty());
    assert!(matches!(s.mode, Mode::Input { .. }), "an empty reason is refused");
    typed(&mut s, "odd merges");
    press(&mut s, &["enter"]);
    let Mode::ControlConfirm(c) = &s.mode else { panic!("{:?}", s.mode) };
    assert_eq!((c.input.kind, c.input.reason.as_deref()), (ControlKind::Quarantine, Some("odd merges")));
    insta::assert_snapshot!("quarantine_confirm_160x48", screen(&s, 160, 48));
    assert!(screen(&s, 160, 48).contains("Confirm: quarantine agent-scribe"));
    // Cancel signs nothing; then confirm.
    assert!(press(&mut s, &["n"]).is_empty());
    let fx = press(&mut s, &["Q", "x", "enter", "y"]);
    let input = control_effect(&fx);
    assert_eq!(
        (input.kind, input.subject.as_str(), input.reason.as_deref()),
        (ControlKind::Quarantine, "agent-scribe", Some("x"))
    );
    // Release and kill on the quarantined agent: release needs no reason, kill does.
    let mut s = governed_state(false);
    select_agent(&mut s, "agent-rogue");
    assert!(press(&mut s, &["Q"]).is_empty());
    assert!(s.flash.as_ref().is_some_and(|f| f.text.contains("already quarantined")), "{:?}", s.flash);
    let fx = press(&mut s, &["R", "enter", "y"]);
    assert_eq!(control_effect(&fx).kind, ControlKind::Release);
    s.signing = false;
    let fx = press(&mut s, &["K", "enter"]);
    assert!(fx.is_empty() && matches!(s.mode, Mode::Input { .. }), "a kill needs a reason");
    let fx = press(&mut s, &["z", "enter", "y"]);
    assert_eq!(control_effect(&fx).kind, ControlKind::Kill);
}

// `E` asks for the ring and TTL; the Agent Hypervisor's rules are checked before the dialog.
#[test]
fn elevation_is_checked_then_confirmed() {
    let mut s = governed_state(false);
    select_agent(&mut s, "agent-scribe");
    // Ring 2 already: the prompt starts on ring 1, the next one up (issue 32, item 12: it offered
    // ring 2); typed anyway, ring 2 is not an elevation.
    press(&mut s, &["E"]);
    assert!(
        matches!(&s.mode, Mode::Input { purpose: app::InputPurpose::Elevation(a), text } if a == "agent-scribe" && text == "1 300"),
        "{:?}",
        s.mode
    );
    assert!(press(&mut s, &["ctrl-u", "2", "space", "3", "0", "0", "enter"]).is_empty());
    assert_eq!(s.mode, Mode::Normal);
    assert!(s.flash.as_ref().is_some_and(|f| f.error && f.text.contains("invalid_target")), "{:?}", s.flash);
    // agent-herald (score 0.55, ring 3) may be elevated to ring 2.
    select_agent(&mut s, "agent-herald");
    press(&mut s, &["E", "enter"]);
    let Mode::ControlConfirm(c) = &s.mode else { panic!("{:?} {:?}", s.mode, s.flash) };
    assert_eq!(c.input.fields["ring"], json!(2));
    assert_eq!(c.input.fields["ttl_seconds"], json!(300));
    assert_eq!(c.input.fields["expires_at"], json!("2026-11-21T09:05:00Z"));
    insta::assert_snapshot!("elevate_confirm_80x24", screen(&s, 80, 24));
    let fx = press(&mut s, &["y"]);
    assert_eq!(control_effect(&fx).kind, ControlKind::Elevate);
    // An agent with an elevation in force cannot get another.
    let mut s = governed_state(false);
    select_agent(&mut s, "agent-planner");
    assert!(press(&mut s, &["E"]).is_empty());
    assert!(s.flash.as_ref().is_some_and(|f| f.text.contains("already has an elevation")), "{:?}", s.flash);
}

// Read-only: no control can start, whatever the keys.
#[test]
fn read_only_refuses_controls() {
    let mut s = governed_state(true);
    let mut fx = Vec::new();
    for (pane, k) in [("5", "+"), ("5", "-"), ("6", "Q"), ("6", "R"), ("6", "K"), ("6", "E")] {
        fx.extend(press(&mut s, &[pane, k]));
        assert!(s.flash.as_ref().is_some_and(|f| f.error && f.text.contains("read-only")), "{k}: {:?}", s.flash);
        assert_eq!(s.mode, Mode::Normal);
        fx.extend(press(&mut s, &["x", "enter", "y"]));
    }
    assert!(fx.is_empty(), "{fx:?}");
}

// The chain moving under an open control dialog cancels it: nothing is signed on stale grounds.
#[test]
fn a_chain_change_cancels_an_open_control_dialog() {
    let mut s = governed_state(false);
    select_notebook(&mut s, "nb-ops");
    press(&mut s, &["+"]);
    assert!(matches!(s.mode, Mode::ControlConfirm(_)));
    let mut controls = governed_controls();
    controls.apply(&control_event(
        ControlKind::TrustSet,
        "nb-ops",
        "2026-11-21T09:00:00Z",
        json!({"level": "trusted"}),
    ));
    let view = ChainView { report: *valid_report(4), controls, ..ChainView::default() };
    app::update(&mut s, Action::ChainVerified(Box::new(view)));
    assert_eq!(s.mode, Mode::Normal);
    assert!(s.flash.as_ref().is_some_and(|f| f.error && f.text.contains("nb-ops changed")), "{:?}", s.flash);
    assert!(press(&mut s, &["y"]).is_empty());
}

/// A spool in a temp dir with alice's key pinned.
fn real_spool() -> (
    tempfile::TempDir,
    warrant::store::spool::Spool,
    warrant::protocol::keys::Principal,
    warrant::protocol::keys::PinnedKeys,
) {
    let dir = tempfile::tempdir().expect("tempdir");
    let spool = warrant::store::spool::Spool::new(dir.path().join("spool"));
    spool.ensure().expect("spool");
    let principal = warrant::protocol::keys::Principal::from_seed("alice", &[5; 32]);
    let mut pinned = warrant::protocol::keys::PinnedKeys::default();
    pinned.pin("alice", principal.verifying_key());
    (dir, spool, principal, pinned)
}

// The control effect as the runner executes it, against a real spool and key: the chain then
// holds a verified control, the notebook's level changed, and the next assessment uses it.
#[test]
fn the_control_effect_appends_a_verified_control() {
    let (_dir, spool, principal, pinned) = real_spool();
    let policies = PolicySet::from_toml(GOVERNED_POLICY).expect("policy");
    let mut s = governed_state(false);
    select_notebook(&mut s, "nb-ops");
    let fx = press(&mut s, &["+", "y"]);
    let input = control_effect(&fx).clone();
    let before = s.verdict("p-purge").and_then(|v| v.models.iter().find(|m| m.model.as_str() == "tiers").cloned());
    assert_eq!(before.map(|m| m.verdict), Some("confirm".to_owned()));
    let summary = warrant::console::execute_control(&spool, &principal, &pinned, &policies, input).expect("signed");
    assert_eq!((summary.kind, summary.subject.as_str()), (ControlKind::TrustSet, "nb-ops"));
    let view = warrant::store::spool::verify_chain(&spool, &pinned).expect("verify");
    assert!(view.report.is_valid(), "{:?}", view.report.findings);
    assert_eq!(view.report.signatures_verified, 1);
    assert_eq!(view.controls.notebook_trust("nb-ops"), NotebookTrust::Trusted);
    assert_eq!(view.controls.notebooks["nb-ops"].principal, "alice");
    // Back in the console: the result, then the re-verified chain; the tiers verdict follows.
    app::update(&mut s, Action::ControlSigned(Ok(summary)));
    app::update(&mut s, Action::ChainVerified(Box::new(view)));
    assert_eq!(s.notebooks().iter().find(|n| n.id == "nb-ops").map(|n| n.level), Some(NotebookTrust::Trusted));
    let after = s.verdict("p-purge").and_then(|v| v.models.iter().find(|m| m.model.as_str() == "tiers").cloned());
    assert!(after.is_some_and(|m| m.reason.contains("nb-ops is trusted")), "the next gate call uses the new level");
    // A second raise from a stale `previous` is refused and appends nothing.
    let mut stale = warrant::protocol::control::ControlInput {
        kind: ControlKind::TrustSet,
        subject: "nb-ops".into(),
        fields: serde_json::Map::new(),
        reason: None,
        decided_at: String::new(),
    };
    stale.fields.insert("level".into(), json!("trusted"));
    stale.fields.insert("previous".into(), json!("cautious"));
    let err = warrant::console::execute_control(&spool, &principal, &pinned, &policies, stale).expect_err("stale");
    assert!(err.contains("look again"), "{err}");
    assert_eq!(warrant::store::spool::verify_chain(&spool, &pinned).expect("verify").report.total, 1);
}

// A kill executed for real writes the stop signal and records the kill switch's result; the
// record verifies whatever the millisecond it was signed at (run 20 times: a float kill time once
// broke about one kill in forty).
#[test]
fn the_kill_effect_runs_the_kill_switch_and_records_it() {
    for _ in 0..20 {
        kill_once();
    }
}

fn kill_once() {
    let (_dir, spool, principal, pinned) = real_spool();
    let policies = PolicySet::from_toml(GOVERNED_POLICY).expect("policy");
    let input = warrant::protocol::control::ControlInput {
        kind: ControlKind::Kill,
        subject: "agent-rogue".into(),
        fields: serde_json::Map::new(),
        reason: Some("exfiltration".into()),
        decided_at: String::new(),
    };
    warrant::console::execute_control(&spool, &principal, &pinned, &policies, input).expect("killed");
    let view = warrant::store::spool::verify_chain(&spool, &pinned).expect("verify");
    assert!(view.report.is_valid(), "{:?}", view.report.findings);
    assert_eq!(view.controls.standing("agent-rogue"), warrant::protocol::graduation::gate::AgentStanding::Killed);
    assert!(spool.signals_dir().join("agent-rogue.json").exists(), "the stop signal");
}

// ---------------------------------------------------------------------------------------------
// Hostile text on every screen.

/// Escape sequences (OSC 52 clipboard, OSC 8 hyperlink, CSI, 8-bit CSI, a terminal title), C0
/// and C1 controls, bidi overrides and isolates, zero-width, BOM and tag characters.
const EVIL: &str = "\u{1b}]52;c;cm0gLXJmIH4=\u{7}\u{1b}]8;;https://evil.example\u{1b}\\link\u{1b}]8;;\u{1b}\\\u{1b}[2J\u{1b}]0;pwned\u{7}\u{9b}31m\u{0}\u{8}\u{85}\u{202e}txt.exe\u{2066}\u{2069}\u{200b}\u{200d}\u{feff}\u{e0041}\u{2028}end";

/// The rendered buffer of a state.
fn buffer(s: &State, w: u16, h: u16) -> ratatui::buffer::Buffer {
    let theme = Theme::builtin("default").expect("theme");
    let mut term = Terminal::new(TestBackend::new(w, h)).expect("terminal");
    term.draw(|f| ui::render(s, &theme, f)).expect("draw");
    term.backend().buffer().clone()
}

/// No cell holds a character a terminal could interpret or that would hide itself, and no cell
/// stacks more than `MAX_MARKS` combining marks on its character.
fn assert_cells_inert(what: &str, buf: &ratatui::buffer::Buffer) {
    for (i, cell) in buf.content().iter().enumerate() {
        let sym = cell.symbol();
        assert!(
            !sym.chars().any(warrant::protocol::text::is_unsafe),
            "{what}: cell {i} holds {sym:?}:\n{}",
            buffer_text(buf)
        );
        assert!(
            sym.chars().count() <= 1 + warrant::protocol::text::MAX_MARKS,
            "{what}: cell {i} stacks {} characters",
            sym.chars().count()
        );
    }
}

fn buffer_text(buf: &ratatui::buffer::Buffer) -> String {
    let area = buf.area;
    (0..area.height)
        .map(|y| (0..area.width).map(|x| buf[(x, y)].symbol().to_owned()).collect::<String>().trim_end().to_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A packet with hostile text in every field an agent controls, a combining-mark flood and a
/// 1,000,000-character line.
fn hostile_entry() -> PacketEntry {
    let zalgo = format!("z{}", "\u{301}\u{36f}".repeat(50_000));
    let mut action = serde_json::Map::new();
    action.insert("to".into(), json!(format!("dana@northwind.example{EVIL}")));
    action.insert(format!("key{EVIL}"), json!(EVIL));
    action.insert("body".into(), json!(format!("line 1\n{EVIL}\n{zalgo}\nlast line")));
    action.insert("long".into(), json!(format!("{}END-OF-LONG", "A".repeat(1_000_000))));
    action.insert("nested".into(), json!({"deeper": [EVIL, {"k": EVIL}]}));
    let mut e =
        packet("p-evil", "agent-evil", "email.send.external", &format!("Pay{EVIL}{zalgo}"), 0, Value::Object(action));
    let mut raw = e.packet.raw.clone();
    raw["decision"]["reason"] = json!(format!("because{EVIL}"));
    raw["note"] = json!(EVIL);
    e.packet = Arc::new(
        warrant::protocol::packet::parse_packet(&serde_json::to_vec(&raw).expect("json"), "p-evil").expect("packet"),
    );
    e
}

fn hostile_state() -> State {
    let mut s = state(false);
    let mut snap = snapshot();
    snap.packets.insert(0, hostile_entry());
    // The oldest pending packet: a quarantined agent's, with a malformed contract quoting hostile text.
    // It also carries a hostile context and evidence rows with hostile labels.
    // Its governance names a hostile tool and notebook (not safe ids: that model fails closed).
    let contract = json!({"tool": format!("tool{EVIL}"), "notebook": format!("nb{EVIL}"),
                          "contract": {"required_level": 2, "preconditions": [{"check_id": EVIL}]}});
    let mut q = governed("p-q", "agent-q", "From a quarantined agent", 500, contract, "draft.compose");
    let mut raw = q.packet.raw.clone();
    raw["evidence"] = json!([{"label": EVIL, "type": "x"}, {"label": "approved"}]);
    raw["context"] = json!({"recipient": EVIL});
    q.packet = Arc::new(
        warrant::protocol::packet::parse_packet(&serde_json::to_vec(&raw).expect("json"), "p-q").expect("packet"),
    );
    snap.packets.push(q);
    snap.invalid.push(InvalidFile {
        kind: FileKind::Packet,
        name: format!("n{EVIL}.json"),
        reason: warrant::protocol::packet::InvalidReason::Schema(format!("`summary` {EVIL:?} and raw {EVIL}")),
        arrived: NOW,
    });
    snap.invalid.push(InvalidFile {
        kind: FileKind::Receipt,
        name: format!("r{EVIL}.json"),
        reason: warrant::protocol::packet::InvalidReason::UnsafeId(EVIL.to_owned()),
        arrived: NOW,
    });
    scanned(&mut s, snap);
    let mut decided = decided_post();
    if let Some(d) = decided.get_mut("p-post") {
        std::sync::Arc::make_mut(d).reason = Some(format!("refused{EVIL}"));
    }
    let mut controls = ControlState::default();
    controls.apply(&control_event(
        ControlKind::Quarantine,
        "agent-q",
        "2026-11-21T08:40:00Z",
        json!({"reason": format!("why{EVIL}")}),
    ));
    let view = ChainView { report: *valid_report(7), decisions: decided, controls, ..ChainView::default() };
    app::update(&mut s, Action::ChainVerified(Box::new(view)));
    s
}

// Every screen, dialog and pane that shows agent-written text, at two sizes: no cell holds an
// escape, a C0/C1 control, a bidi or invisible character, or a stack of combining marks; the
// hostile text is visible as pictures (`␛]52;…`) and `⟨U+XXXX⟩`. The 1,000,000-character line is
// cut in the split view and wrapped whole in the zoomed view.
#[test]
fn hostile_text_never_reaches_a_cell_on_any_screen() {
    let mut s = hostile_state();
    press(&mut s, &["1", "g"]);
    assert_eq!(s.selected_packet().map(|p| p.id.clone()).as_deref(), Some("p-evil"));
    let mut screens: Vec<(String, State)> = Vec::new();
    screens.push(("pending".into(), s.clone()));
    let mut z = s.clone();
    press(&mut z, &["enter"]);
    screens.push(("zoomed top".into(), z.clone()));
    press(&mut z, &["G"]);
    screens.push(("zoomed bottom".into(), z.clone()));
    let mut c = s.clone();
    press(&mut c, &["a"]);
    assert!(matches!(c.mode, Mode::Confirm(_)), "{:?} {:?}", c.mode, c.flash);
    screens.push(("confirm".into(), c));
    let mut r = s.clone();
    press(&mut r, &["r"]);
    app::update(&mut r, Action::Paste(format!("pasted{EVIL}")));
    screens.push(("refuse reason".into(), r.clone()));
    let Mode::Input { text, .. } = &r.mode else { panic!("no reason line: {:?}", r.mode) };
    assert!(
        !text.chars().any(warrant::protocol::text::is_unsafe),
        "a pasted reason keeps no unsafe character: {text:?}"
    );
    press(&mut r, &["enter"]);
    assert!(matches!(r.mode, Mode::Confirm(_)), "{:?}", r.mode);
    screens.push(("confirm refusal".into(), r));
    for (pane, key) in
        [("pending", "1"), ("decided", "2"), ("invalid", "3"), ("posteriors", "4"), ("matrices", "5"), ("agents", "6")]
    {
        let mut p = s.clone();
        press(&mut p, &[key, "g"]);
        screens.push((pane.into(), p.clone()));
        press(&mut p, &["G"]);
        screens.push((format!("{pane}, last row"), p));
    }
    for (name, st) in &screens {
        for (w, h) in [(80, 24), (160, 48)] {
            let buf = buffer(st, w, h);
            assert_cells_inert(&format!("{name} at {w}×{h}"), &buf);
        }
    }
    // The hostile text is there, visible.
    let pending = buffer_text(&buffer(&screens[0].1, 160, 48));
    assert!(pending.contains("Pay␛]52;c;cm0gLX") && pending.contains("␛]8;;https://evil.example␛\\link"), "{pending}");
    // Values wrap under their key rather than being cut at the pane's edge; the flood is collapsed.
    assert!(pending.contains(" marks⟩"), "the combining flood is collapsed: {pending}");
    let whole = buffer_text(&buffer(&screens[1].1, 160, 48));
    for shown in
        ["␛[2J␛]0;pwned␇⟨U+009B⟩31m␀␈⟨U+0085⟩⟨U+202E⟩txt.exe", "⟨U+2066⟩⟨U+2069⟩⟨U+200B⟩⟨U+200D⟩", "⟨+99997 marks⟩"]
    {
        assert!(whole.contains(shown), "zoomed: {shown}: {whole}");
    }
    // The split view cuts the long line and says how much more there is; the zoomed view has
    // all of it (about 1,000,000 / 76 rows).
    assert!(!pending.contains("END-OF-LONG"), "{pending}");
    let zoomed = buffer_text(&buffer(&screens[1].1, 80, 24));
    let more: usize = zoomed
        .split("↓ ")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no ↓ marker: {zoomed}"));
    assert!(more > 1_000_000 / 80, "{more} more lines");
    // Scrolled to the end, then back a screen at a time: the end of the long line comes by.
    let mut pos = screens[1].1.clone();
    pos.detail_scroll = u16::try_from(more).expect("fits");
    let found = (0..30).any(|_| {
        let t = buffer_text(&buffer(&pos, 80, 24));
        pos.detail_scroll = pos.detail_scroll.saturating_sub(20);
        t.contains("END-OF-LONG")
    });
    assert!(found, "the end of the long line is reachable in the zoomed view");
    insta::assert_snapshot!("hostile_zoomed_top_100x40", buffer_text(&buffer(&screens[1].1, 100, 40)));
    insta::assert_snapshot!(
        "hostile_invalid_120x20",
        buffer_text(&buffer(&screens.iter().find(|(n, _)| n == "invalid").expect("invalid").1, 120, 20))
    );
}

// An agent id that differs from a known agent's only by look-alike characters
// (`agent-r0gue` beside `agent-rogue`) is marked in the list and explained in the detail, and
// the detail names the Unix user that published the packet.
#[test]
fn look_alike_agent_ids_are_marked_and_the_publisher_is_shown() {
    let mut s = state(false);
    let mut snap = snapshot();
    snap.packets.insert(0, packet("p-r1", "agent-rogue", "draft.compose", "one", 1, json!({})));
    snap.packets.insert(0, packet("p-r0", "agent-r0gue", "draft.compose", "zero", 0, json!({})));
    scanned(&mut s, snap);
    assert_eq!(s.look_alike("agent-r0gue"), Some("agent-rogue"));
    assert_eq!(s.look_alike("agent-scribe"), None);
    let out = screen(&s, 160, 48);
    assert!(out.lines().any(|l| l.contains("⚠agent-r0gue")), "{out}");
    assert!(out.lines().any(|l| l.contains(" agent-scribe ")), "an unambiguous id is not marked: {out}");
    select_pending(&mut s, "p-r0");
    let out = screen(&s, 160, 48);
    assert!(out.contains("looks like agent agent-rogue"), "{out}");
    assert!(out.contains("publisher  uid 4000000"), "{out}");
}

/// Every view has something to show: governed packets (one with a long agent id, class and
/// summary), a decision, invalid files, 10,000 evidence rows for one class, notebooks and agents.
fn every_view_state() -> State {
    use warrant::protocol::graduation::{EvidenceRow, SourceType};
    let mut s = governed_state(false);
    let mut snap = governed_snapshot();
    snap.packets.push(packet(
        "p-long",
        "agent-with-a-rather-long-identifier",
        "repository.push.protectedbranchrelease",
        "Push the release branch with the signed changelog and the migration notes for 2.0",
        20,
        json!({"repository": "acme/web", "branch": "release/2.0"}),
    ));
    snap.invalid = snapshot().invalid;
    scanned(&mut s, snap);
    let mut evidence: Vec<EvidenceRow> =
        (0..10_000).map(|_| EvidenceRow::new("draft.compose", "approved", Some(SourceType::Principal), None)).collect();
    evidence.push(EvidenceRow::new("email.send.external", "rejected", Some(SourceType::Principal), None));
    let view = Box::new(ChainView {
        report: *valid_report(10_008),
        decisions: decided_post(),
        evidence: evidence.into(),
        controls: governed_controls(),
        ..ChainView::default()
    });
    app::update(&mut s, Action::ChainVerified(view));
    s
}

// Every view at 80×24, 100×30, 120×36 and 200×50: columns take widths from their content, and
// what does not fit is cut with an ellipsis or dropped by priority, never cut silently. The
// posteriors show N = 10000 whole and the interval's upper bound; the pending list keeps its
// summary and the tabs their names at 120 columns.
#[test]
fn every_view_at_every_size() {
    let base = every_view_state();
    let p = posterior_of(&base, "draft.compose").clone();
    assert_eq!(p.samples, 10_000);
    let interval = format!("{:.2} [{:.2}–{:.2}]", p.mean, p.ci_low, p.ci_high);
    for (w, h) in [(80u16, 24u16), (100, 30), (120, 36), (200, 50)] {
        let mut s = base.clone();
        app::update(&mut s, Action::Resize { width: w, height: h });
        let views: [(&str, &[&str]); 9] = [
            ("pending", &["1", "g"]),
            ("decided", &["2"]),
            ("invalid", &["3"]),
            ("posteriors", &["4", "g"]),
            ("matrices", &["5"]),
            ("agents", &["6"]),
            ("detail", &["1", "g", "enter"]),
            ("sign_dialog", &["esc", "1", "g", "a"]),
            ("help", &["n", "?"]),
        ];
        for (name, keys) in views {
            press(&mut s, keys);
            let text = screen(&s, w, h);
            match name {
                "posteriors" => {
                    assert!(text.contains("10000"), "{w}x{h}: N cut:\n{text}");
                    assert!(text.contains(&interval), "{w}x{h}: interval {interval} cut:\n{text}");
                }
                "pending" if w >= 120 => {
                    assert!(text.contains("SUMMARY"), "{w}x{h}: no summary:\n{text}");
                    assert!(text.contains("Dec"), "{w}x{h}: bare tabs:\n{text}");
                }
                "sign_dialog" => assert!(matches!(s.mode, Mode::Confirm(_)), "{w}x{h}: {:?}", s.mode),
                _ => {}
            }
            insta::assert_snapshot!(format!("every_{name}_{w}x{h}"), text);
        }
        press(&mut s, &["esc"]);
    }
}

// Small defects: enter zooms the posteriors detail its hint offers; the message log
// keeps status messages whole; ctrl-c cancels a dialog or a text line (never signs, never
// quits from inside one); hints offer approve/refuse only where they work; the title counts the
// spool's totals and says what the filter shows; counts are pluralised.
#[test]
fn small_console_defects() {
    let mut s = state(false);
    // enter on the posteriors zooms the detail.
    press(&mut s, &["4", "enter"]);
    assert!(s.zoomed, "enter does nothing in the posteriors");
    press(&mut s, &["esc"]);
    // Hints: no approve/refuse outside the pending list.
    for pane in ["2", "3", "4"] {
        press(&mut s, &[pane]);
        let text = screen(&s, 160, 48);
        let hints = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
        assert!(!hints.contains("approve") && !hints.contains("refuse"), "pane {pane}: {hints}");
    }
    press(&mut s, &["1"]);
    let text = screen(&s, 160, 48);
    assert!(text.lines().rev().find(|l| !l.trim().is_empty()).is_some_and(|l| l.contains("a approve")));
    // A message longer than the screen is whole in the log.
    press(&mut s, &["4", "a"]);
    let msg = s.flash.clone().expect("flash").text;
    let long = "x".repeat(300);
    app::update(&mut s, Action::Error(format!("terminal: {long} END")));
    press(&mut s, &["L"]);
    assert_eq!(s.mode, Mode::Log);
    let log = screen(&s, 80, 24);
    insta::assert_snapshot!("message_log_80x24", log);
    assert!(log.contains(&msg) && log.contains("END"), "{log}");
    press(&mut s, &["x"]);
    assert_eq!(s.mode, Mode::Normal);
    // ctrl-c cancels the sign dialog and a text line; nothing is signed, nothing quits.
    press(&mut s, &["1", "g"]);
    let fx = press(&mut s, &["a", "ctrl-c"]);
    assert!(fx.is_empty() && s.mode == Mode::Normal && !s.quit, "{fx:?} {:?}", s.mode);
    let fx = press(&mut s, &["r", "x", "ctrl-c"]);
    assert!(fx.is_empty() && s.mode == Mode::Normal && !s.quit, "{fx:?} {:?}", s.mode);
    let fx = press(&mut s, &["r", "x", "enter", "ctrl-c"]);
    assert!(fx.is_empty() && s.mode == Mode::Normal && !s.quit, "{fx:?} {:?}", s.mode);
    // From the lists, ctrl-c still quits.
    assert_eq!(press(&mut s, &["ctrl-c"]), vec![Effect::Quit]);
    // The title: spool totals, and what the filter shows, said as such.
    let mut s = state(false);
    press(&mut s, &["/", "q", "u", "o", "t", "e", "enter"]);
    let title = screen(&s, 120, 36).lines().next().unwrap_or("").to_owned();
    assert!(title.contains("3 pending") && title.contains("filtered: 1 of 3"), "{title}");
    // Plurals.
    assert_eq!(
        (ui::plural(1, "line"), ui::plural(2, "line"), ui::plural(0, "record")),
        ("line".into(), "lines".into(), "records".into())
    );
    app::update(&mut s, Action::ChainVerified(view(*valid_report(1), decided_post())));
    assert!(screen(&s, 120, 36).contains("chain ok · 1 record "), "{}", screen(&s, 120, 36));
}

// README's console key tables are the keymap's: every binding of every mode, in order, with its
// keys as the help overlay labels them.
#[test]
fn readme_key_tables_follow_the_keymap() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).expect("README");
    let km = Keymap::default_map();
    for (mode, title) in [
        ("normal", "**Lists**"),
        ("confirm", "**Confirmation dialog**"),
        ("input", "**Text line"),
        ("help", "**Help overlay**"),
    ] {
        let section = &readme[readme.find(title).unwrap_or_else(|| panic!("README lacks {title}"))..];
        let table: Vec<&str> =
            section.lines().skip_while(|l| !l.starts_with('|')).take_while(|l| l.starts_with('|')).collect();
        let want: Vec<String> = ["| Keys | Action |".to_owned(), "| --- | --- |".to_owned()]
            .into_iter()
            .chain(km.bindings(mode).iter().map(|b| {
                let keys: Vec<String> = b.keys.iter().map(|k| format!("`{}`", k.label())).collect();
                format!("| {} | {} |", keys.join(" "), b.desc)
            }))
            .collect();
        assert_eq!(table, want, "README's {title} table differs from assets/keymap.toml");
    }
}

/// A packet asking for a tool call, as `warrant hook` publishes it.
fn call_packet(id: &str, tool: &str, input: Value, minutes_ago: i64) -> PacketEntry {
    let policies = warrant::protocol::graduation::policy::PolicySet::builtin();
    let call = warrant::protocol::calls::ToolCall {
        host: "claude-code".into(),
        agent: "claude-code".into(),
        session: Some(format!("s-{}", minutes_ago % 2)),
        tool: tool.into(),
        input,
        notebook: "project-1a2b3c".into(),
        cwd: Some("/home/user/project".into()),
        workdir: None,
        annotations: Value::Null,
    };
    let c = warrant::protocol::calls::classify(&policies, tool, &call.input, &Value::Null);
    let created = warrant::protocol::clock::format_rfc3339(
        time::OffsetDateTime::from_unix_timestamp(NOW as i64 - minutes_ago * 60).expect("time"),
    );
    let doc = warrant::protocol::calls::call_packet(&call, &c, &policies, id, &created);
    let p =
        warrant::protocol::packet::parse_packet(&serde_json::to_vec(&doc).expect("json"), id).expect("valid packet");
    PacketEntry {
        file: format!("{id}.json").into(),
        arrived: NOW - (minutes_ago * 60) as f64,
        owner: 4_000_000,
        packet: Arc::new(p),
    }
}

// A tool call the gate lets run on its own waits for nobody, so the Pending pane
// leaves it out; the Agents view shows the host's agent with its sessions, workspace, calls per
// minute, allowed / held / refused counts and last call.
#[test]
fn tool_calls_that_ran_on_their_own_leave_pending_and_the_agents_view_counts_every_call() {
    let mut s = state(false);
    let mut snap = snapshot();
    snap.packets = vec![
        call_packet("cc-read", "Read", json!({"file_path": "/home/user/project/README.md"}), 3),
        call_packet("cc-status", "Bash", json!({"command": "git status"}), 2),
        call_packet("cc-push", "Bash", json!({"command": "git push origin main"}), 0),
    ];
    scanned(&mut s, snap);
    let pending: Vec<&str> = s.pending().iter().map(|e| e.packet.id.as_str()).collect();
    assert_eq!(pending, vec!["cc-push"], "only the held push waits for the principal");
    let agent = s.agents().iter().find(|a| a.agent == "claude-code").expect("the host's agent");
    let calls = agent.calls.as_ref().expect("calls");
    assert_eq!((calls.allowed, calls.held, calls.refused), (2, 1, 0), "{calls:?}");
    assert_eq!((calls.host.as_str(), calls.sessions, calls.last_minute), ("claude-code", 2, 1), "{calls:?}");
    assert_eq!(calls.workspace.as_deref(), Some("/home/user/project"));
    assert!(calls.last_call.contains("git push origin main"), "{calls:?}");
    app::update(&mut s, key("6"));
    let pos = s.agents().iter().position(|a| a.agent == "claude-code").expect("agent");
    for _ in 0..pos {
        app::update(&mut s, key("j"));
    }
    let shown = screen(&s, 120, 36);
    assert!(
        shown.contains("claude-code · 2 sessions · /home/user/project · 1/min · allowed 2 · held 1 · refused 0"),
        "{shown}"
    );
    assert!(shown.contains("Bash: git push origin main"), "{shown}");
}

/// A receipt a hook or the gateway writes for calls that ran: `calls` of `tool`, `seconds_ago`.
fn call_receipt(
    id: &str,
    agent: &str,
    packet: Option<&str>,
    host: &str,
    tool: &str,
    calls: u64,
    seconds_ago: i64,
) -> Arc<warrant::protocol::packet::Receipt> {
    let created = warrant::protocol::clock::format_rfc3339(
        time::OffsetDateTime::from_unix_timestamp(NOW as i64 - seconds_ago).expect("time"),
    );
    let call = json!({"host": host, "tool": tool, "calls": calls});
    let r =
        warrant::protocol::graduation::receipt::build_receipt(&warrant::protocol::graduation::receipt::ReceiptInput {
            receipt_id: id,
            action_class: "read.context",
            outcome: warrant::protocol::graduation::receipt::ReceiptOutcome::Execute,
            agent,
            packet_id: packet,
            source_type: None,
            created_at: &created,
            prev_hash: None,
            note: None,
            tool_call: Some(&call),
        });
    Arc::new(warrant::protocol::packet::parse_receipt(&serde_json::to_vec(&r).expect("json")).expect("valid receipt"))
}

// Calls that ran with no packet (the gateway's and the hooks' `safe` reads) are counted from the
// receipts that record them: the gateway's one a second for many calls, a hook's one per call.
// A receipt naming a packet in the spool is that packet's: not counted twice.
#[test]
fn calls_that_ran_with_no_packet_are_counted_from_their_receipts() {
    let mut s = state(false);
    let mut snap = snapshot();
    snap.packets = vec![call_packet("cc-push", "Bash", json!({"command": "git push origin main"}), 5)];
    snap.receipts = vec![
        call_receipt("rcpt-gw", "mcp-gateway", None, "mcp-gateway", "filesystem/read_text_file", 40, 10),
        call_receipt("rcpt-old", "mcp-gateway", None, "mcp-gateway", "filesystem/list_directory", 3, 600),
        call_receipt("rcpt-read", "claude-code", Some("cc-toolu_01"), "claude-code", "Read", 1, 5),
        call_receipt("rcpt-push", "claude-code", Some("cc-push"), "claude-code", "Bash", 1, 240),
    ];
    scanned(&mut s, snap);
    let calls = |agent: &str| {
        s.agents().iter().find(|a| a.agent == agent).and_then(|a| a.calls.clone()).unwrap_or_else(|| panic!("{agent}"))
    };
    let gw = calls("mcp-gateway");
    assert_eq!((gw.allowed, gw.held, gw.refused, gw.last_minute), (43, 0, 0, 40), "{gw:?}");
    assert_eq!(gw.host, "mcp-gateway");
    assert_eq!(gw.last_call, "filesystem/read_text_file ×40 (no packet)");
    let cc = calls("claude-code");
    assert_eq!((cc.allowed, cc.held, cc.last_minute), (1, 1, 1), "the push's receipt is its packet's: {cc:?}");
    assert_eq!(cc.last_call, "Read", "the latest call: {cc:?}");
}

/// The pending list's packet ids, top to bottom.
fn pending_ids(s: &State) -> Vec<String> {
    s.pending().iter().map(|e| e.packet.id.clone()).collect()
}

/// `/`, the text, `enter`.
fn filter_by(s: &mut State, text: &str) {
    press(s, &["/", "ctrl-u"]);
    typed(s, text);
    press(s, &["enter"]);
}

// The filter understands fields (`agent`, `class`, `risk`, `state`, `tool`, `notebook`,
// `id`), globs, quoted phrases and negation; all terms must hold.
#[test]
fn field_filters_narrow_the_pending_list() {
    let mut s = state(false);
    filter_by(&mut s, r#"agent:scribe class:email.* risk:high state:review "Quote for""#);
    assert_eq!(pending_ids(&s), ["p-quote"]);
    assert_eq!(s.filter_error, None);
    filter_by(&mut s, "-agent:scribe");
    assert_eq!(pending_ids(&s), ["p-kickoff", "p-pay"]);
    filter_by(&mut s, "state:human");
    assert_eq!(pending_ids(&s), ["p-pay"]);
    filter_by(&mut s, "risk:critical");
    assert_eq!(pending_ids(&s), ["p-pay"]);
    filter_by(&mut s, "class:email");
    assert_eq!(pending_ids(&s), ["p-quote"]);
    // A glob matches the whole field.
    filter_by(&mut s, "class:send.*");
    assert!(pending_ids(&s).is_empty());
    filter_by(&mut s, "class:*.create northwind");
    assert_eq!(pending_ids(&s), ["p-kickoff"]);
    // No tool named in any of these packets: the field is empty (`*` matches it, `?*` does not).
    filter_by(&mut s, "-tool:?*");
    assert_eq!(pending_ids(&s).len(), 3);
    filter_by(&mut s, "tool:*");
    assert_eq!(pending_ids(&s).len(), 3);
    // Other lists read the fields they have: the decided refusal of agent-herald.
    filter_by(&mut s, "agent:herald");
    assert!(pending_ids(&s).is_empty());
    assert_eq!(s.decided().iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), ["p-post"]);
    // Field filters shown in the list's title, at both sizes.
    filter_by(&mut s, "agent:scribe class:email.*");
    insta::assert_snapshot!("field_filter_80x24", screen(&s, 80, 24));
    insta::assert_snapshot!("field_filter_160x48", screen(&s, 160, 48));
}

// An unknown field is an error: the filter line says so while typing, the list says so, and
// nothing matches, in any list; it never matches everything.
#[test]
fn an_unknown_field_matches_nothing_and_says_why() {
    let mut s = state(false);
    press(&mut s, &["/"]);
    typed(&mut s, "colour:red");
    assert!(s.pending().is_empty() && s.decided().is_empty() && s.invalid().is_empty());
    let err = s.filter_error.clone().expect("an error");
    assert!(err.contains("unknown field colour"), "{err}");
    let typing = screen(&s, 160, 48);
    assert!(typing.contains("✗ unknown field colour:"), "{typing}");
    press(&mut s, &["enter"]);
    let shown = screen(&s, 80, 24);
    assert!(shown.contains("✗ /colour:red"), "{shown}");
    assert!(shown.contains("the filter matches nothing: unknown field colour"), "{shown}");
    // esc clears it.
    press(&mut s, &["esc"]);
    assert_eq!((s.pending().len(), s.filter_error.clone()), (3, None));
}

// A state term reads the assessment as it is now: the packets' answers to the other terms are
// kept, but a state that changes without the packet changing is matched afresh.
#[test]
fn state_terms_follow_the_assessment() {
    let mut s = governed_state(false);
    filter_by(&mut s, "state:blocked agent:rogue");
    assert_eq!(pending_ids(&s), ["p-exfil"]);
    // The chain no longer quarantines agent-rogue: its packet is not blocked any more.
    let mut controls = governed_controls();
    controls.apply(&control_event(ControlKind::Release, "agent-rogue", "2026-11-21T08:50:00Z", json!({})));
    let view = ChainView { report: *valid_report(4), controls, ..ChainView::default() };
    app::update(&mut s, Action::ChainVerified(Box::new(view)));
    assert!(pending_ids(&s).is_empty(), "{:?}", pending_ids(&s));
    filter_by(&mut s, "-state:blocked agent:rogue");
    assert_eq!(pending_ids(&s), ["p-exfil"]);
    // Governance fields.
    filter_by(&mut s, "tool:notes.* notebook:nb-sales");
    assert_eq!(pending_ids(&s), ["p-exfil", "p-note2", "p-note3"]);
}

// `s` cycles the pending list's order age → risk → class → agent → age (ties newest first), says
// so in the list's title, and keeps the packet under the cursor under it, across rescans too.
#[test]
fn s_cycles_the_sort_and_keeps_the_selected_packet() {
    let mut s = state(false);
    press(&mut s, &["j"]);
    assert_eq!(s.selected_packet().map(|p| p.id.clone()).as_deref(), Some("p-kickoff"));
    let mut orders = vec![];
    for _ in 0..4 {
        press(&mut s, &["s"]);
        orders.push((s.sort.as_str(), pending_ids(&s)));
        assert_eq!(s.selected_packet().map(|p| p.id.clone()).as_deref(), Some("p-kickoff"), "{orders:?}");
    }
    assert_eq!(
        orders,
        [
            ("risk", vec!["p-pay".to_owned(), "p-quote".into(), "p-kickoff".into()]),
            ("class", vec!["p-kickoff".to_owned(), "p-quote".into(), "p-pay".into()]),
            ("agent", vec!["p-pay".to_owned(), "p-kickoff".into(), "p-quote".into()]),
            ("age", vec!["p-quote".to_owned(), "p-kickoff".into(), "p-pay".into()]),
        ]
    );
    press(&mut s, &["s"]);
    assert!(screen(&s, 80, 24).contains(" sort: risk "));
    // A rescan bringing a newer, riskier packet: sorted in, the selection stays.
    let mut next = snapshot();
    next.packets.insert(0, packet("p-pay2", "agent-bursar", "payment.initiate", "Pay INV-3313", 1, json!({})));
    scanned(&mut s, next);
    assert_eq!(pending_ids(&s), ["p-pay2", "p-pay", "p-quote", "p-kickoff"]);
    assert_eq!(s.selected_packet().map(|p| p.id.clone()).as_deref(), Some("p-kickoff"));
    // The header with the sort and a field filter, at both sizes.
    filter_by(&mut s, "risk:high -class:social.*");
    insta::assert_snapshot!("sort_risk_filter_80x24", screen(&s, 80, 24));
    insta::assert_snapshot!("sort_risk_filter_160x48", screen(&s, 160, 48));
    // Sorting is for the pending list.
    press(&mut s, &["2", "s"]);
    assert_eq!(s.sort.as_str(), "risk");
    assert!(s.flash.as_ref().is_some_and(|f| f.error && f.text.contains("pending list")));
}

// What is signed is the packet the dialog shows, whatever the order or the filter.
#[test]
fn the_sign_dialog_shows_the_packet_under_the_cursor_whatever_the_sort() {
    let mut s = state(false);
    press(&mut s, &["s", "s", "g"]);
    assert_eq!(s.sort.as_str(), "class");
    assert_eq!(s.selected_packet().map(|p| p.id.clone()).as_deref(), Some("p-kickoff"));
    press(&mut s, &["a"]);
    let Mode::Confirm(c) = &s.mode else { panic!("no dialog: {:?}", s.mode) };
    assert_eq!(c.packet.id, "p-kickoff");
    for _ in 0..50 {
        if matches!(&s.mode, Mode::Confirm(c) if c.read) {
            break;
        }
        press(&mut s, &["pagedown"]);
    }
    let fx = press(&mut s, &["y"]);
    assert!(matches!(fx.as_slice(), [Effect::Sign { packet, .. }] if packet.id == "p-kickoff"), "{fx:?}");
}

// Batch triage's selection: `space` toggles the packet under the cursor (and moves down), `v`
// selects every packet the filter shows, `V` clears; selected rows are marked and counted; a
// decided packet leaves the selection. Nothing is signed by selecting.
#[test]
fn space_v_and_shift_v_select_packets_for_batch_triage() {
    let mut s = state(false);
    assert!(press(&mut s, &["space"]).is_empty());
    assert_eq!(s.marked.iter().collect::<Vec<_>>(), ["p-quote"]);
    assert_eq!(s.selected_packet().map(|p| p.id.clone()).as_deref(), Some("p-kickoff"));
    press(&mut s, &["k", "space"]);
    assert!(s.marked.is_empty());
    press(&mut s, &["k", "space", "space"]);
    assert_eq!(s.marked.iter().collect::<Vec<_>>(), ["p-kickoff", "p-quote"]);
    insta::assert_snapshot!("selected_80x24", screen(&s, 80, 24));
    let wide = screen(&s, 160, 48);
    assert!(wide.contains("■ 2 selected"), "{wide}");
    // `V` clears; `v` selects what the filter shows, and the selection outlives the filter.
    press(&mut s, &["V"]);
    assert!(s.marked.is_empty());
    filter_by(&mut s, "risk:high");
    assert!(press(&mut s, &["v"]).is_empty());
    assert_eq!(s.marked.iter().collect::<Vec<_>>(), ["p-kickoff", "p-quote"]);
    press(&mut s, &["esc"]);
    assert_eq!(s.pending().len(), 3);
    assert_eq!(s.marked.len(), 2);
    // A decided packet leaves the selection.
    let mut decisions = decided_post();
    let mut d = (*decisions["p-post"]).clone();
    d.chain_index = 8;
    decisions.insert("p-quote".into(), std::sync::Arc::new(d));
    app::update(&mut s, Action::ChainVerified(view(*valid_report(8), decisions)));
    assert_eq!(s.marked.iter().collect::<Vec<_>>(), ["p-kickoff"]);
    // In a packet read whole, space selects it and stays on it.
    press(&mut s, &["g", "enter", "space"]);
    assert!(s.zoomed && s.marked.is_empty());
    press(&mut s, &["space"]);
    assert_eq!(s.selected_packet().map(|p| p.id.clone()).as_deref(), Some("p-kickoff"));
    press(&mut s, &["esc"]);
    assert_eq!(s.marked.iter().collect::<Vec<_>>(), ["p-kickoff"]);
    // Selecting is for the pending list.
    press(&mut s, &["2", "v"]);
    assert_eq!(s.marked.len(), 1);
    assert!(s.flash.as_ref().is_some_and(|f| f.error));
}

/// The dialog's lines, joined, for assertions on what it shows whatever the terminal's size.
fn dialog_text(s: &State, w: u16, h: u16) -> String {
    let Mode::Confirm(c) = &s.mode else { panic!("no dialog: {:?}", s.mode) };
    let (rows, _) = warrant::console::dialog::confirm_layout(s, c, ratatui::layout::Rect::new(0, 0, w, h));
    rows.iter().map(|r| r.0.iter().map(|(t, _)| t.as_str()).collect::<String>()).collect::<Vec<_>>().join("\n")
}

/// Pages the dialog down until it has all been on screen (at most `n` pages).
fn read_dialog(s: &mut State, n: usize) {
    for _ in 0..n {
        if matches!(&s.mode, Mode::Confirm(c) if c.read) {
            return;
        }
        press(s, &["pagedown"]);
    }
    assert!(matches!(&s.mode, Mode::Confirm(c) if c.read), "dialog never read: {:?}", s.mode);
}

// Batch triage: `a` on a selection opens ONE dialog listing every selected packet
// (count, classes, agents, every field of each, destinations included), focus on Cancel; it can
// be signed only once read whole; `y` then gives one SignBatch effect with every packet, in the
// list's order, and nothing else.
#[test]
fn approving_a_selection_opens_one_dialog_listing_every_packet() {
    let mut s = state(false);
    press(&mut s, &["space", "space"]);
    assert_eq!(s.marked.iter().collect::<Vec<_>>(), ["p-kickoff", "p-quote"]);
    assert!(press(&mut s, &["a"]).is_empty());
    let Mode::Confirm(c) = &s.mode else { panic!("no dialog: {:?}", s.mode) };
    assert_eq!(c.focus, Button::Cancel);
    assert_eq!(c.batch.iter().map(|p| p.id.as_str()).collect::<Vec<_>>(), ["p-quote", "p-kickoff"]);
    let text = dialog_text(&s, 80, 24);
    for want in [
        "each of these 2 packets",
        "email.send.external ×1",
        "calendar.create ×1",
        "agent-planner ×1",
        "agent-scribe ×1",
        "to: dana@northwind.example",
        "start: 2026-11-24T10:00:00Z",
        "── 2 of 2 ──",
    ] {
        assert!(text.contains(want), "missing {want:?} in:\n{text}");
    }
    insta::assert_snapshot!("confirm_batch_80x24", screen(&s, 80, 24));
    // Enter on the focused Cancel signs nothing and keeps the selection.
    assert!(press(&mut s, &["enter"]).is_empty());
    assert_eq!((&s.mode, s.marked.len()), (&Mode::Normal, 2));
    // Not read yet: `y` signs nothing.
    press(&mut s, &["a"]);
    assert!(press(&mut s, &["y"]).is_empty());
    assert!(matches!(&s.mode, Mode::Confirm(_)));
    read_dialog(&mut s, 20);
    let fx = press(&mut s, &["y"]);
    let [Effect::SignBatch { items, verdict: Verdict::Approve, reason: None }] = fx.as_slice() else {
        panic!("{fx:?}")
    };
    assert_eq!(items.iter().map(|i| i.packet.id.as_str()).collect::<Vec<_>>(), ["p-quote", "p-kickoff"]);
    assert!(items.iter().all(|i| i.publisher == Some(4_000_000)));
    assert!(s.signing && s.mode == Mode::Normal);
    // The result clears the signed packets from the selection and says how many.
    let done = items
        .iter()
        .enumerate()
        .map(|(i, it)| app::SignedSummary {
            corrected: None,
            cosigned: None,
            packet_id: it.packet.id.clone(),
            verdict: Verdict::Approve,
            chain_index: 8 + i as u64,
            entry_hash: format!("sha256:{}", "ef".repeat(32)),
            grant: None,
        })
        .collect();
    let fx = app::update(&mut s, Action::SignedBatch(Ok(done)));
    assert!(fx.contains(&Effect::VerifyChain { force: false }), "{fx:?}");
    assert!(!s.signing && s.marked.is_empty());
    assert!(s.flash.as_ref().is_some_and(|f| !f.error && f.text.contains("approved 2 packets")), "{:?}", s.flash);
}

// A batch is all or nothing: a selection holding a packet that cannot be approved (a human_only
// payment) opens no dialog and says which packet and why; a selection cannot be approved while
// the chain is broken; a packet that changes under the open dialog closes it, unsigned.
#[test]
fn a_batch_with_a_packet_that_cannot_be_approved_opens_nothing() {
    let mut s = state(false);
    press(&mut s, &["space", "space", "space"]);
    assert_eq!(s.marked.len(), 3);
    assert!(press(&mut s, &["a"]).is_empty());
    assert_eq!(s.mode, Mode::Normal);
    let f = s.flash.clone().expect("a reason");
    assert!(f.error && f.text.contains("1 of the 3") && f.text.contains("p-pay"), "{f:?}");
    // Refusing the same selection is allowed: one reason for all.
    press(&mut s, &["r"]);
    assert!(matches!(&s.mode, Mode::Input { purpose: app::InputPurpose::RefuseBatchReason(ps), .. } if ps.len() == 3));
    // An empty reason is refused.
    press(&mut s, &["enter"]);
    assert!(matches!(&s.mode, Mode::Input { .. }) && s.flash.as_ref().is_some_and(|f| f.error));
    typed(&mut s, "not this week");
    press(&mut s, &["enter"]);
    let Mode::Confirm(c) = &s.mode else { panic!("{:?}", s.mode) };
    assert_eq!((c.batch.len(), c.focus, c.reason.as_deref()), (3, Button::Cancel, Some("not this week")));
    assert!(dialog_text(&s, 80, 24).contains("payee: Acme Paper"));
    // A packet rewritten while the dialog is open: the dialog closes, nothing is signed.
    let mut snap = snapshot();
    snap.packets[1] =
        packet("p-kickoff", "agent-planner", "calendar.create", "Kick-off", 15, json!({"title": "moved"}));
    app::update(&mut s, Action::Scanned(snap));
    assert_eq!(s.mode, Mode::Normal);
    assert!(s.flash.as_ref().is_some_and(|f| f.error && f.text.contains("p-kickoff changed")), "{:?}", s.flash);
    // A refusal of the selection signs once confirmed, without paging.
    let mut s = state(false);
    press(&mut s, &["space", "space", "r"]);
    typed(&mut s, "later");
    press(&mut s, &["enter"]);
    let fx = press(&mut s, &["y"]);
    assert!(
        matches!(fx.as_slice(), [Effect::SignBatch { items, verdict: Verdict::Refuse, reason: Some(r) }] if items.len() == 2 && r == "later"),
        "{fx:?}"
    );
    // A broken chain: nothing opens.
    let mut s = state(false);
    press(&mut s, &["space"]);
    let broken = VerifyReport {
        total: 7,
        root_hash: None,
        signatures_verified: 0,
        findings: vec![Finding { index: Some(3), check: Check::EntryHash, message: "entry_hash mismatch".into() }],
        torn_tail: None,
    };
    app::update(&mut s, Action::ChainVerified(view(broken, decided_post())));
    press(&mut s, &["a"]);
    assert!(!matches!(s.mode, Mode::Confirm(_)), "{:?}", s.mode);
}

/// Types `text` into the open text line, one key a character.
fn type_text(s: &mut State, text: &str) {
    for c in text.chars() {
        let k = if c == ' ' { "space".to_owned() } else { c.to_string() };
        app::update(s, key(&k));
    }
}

/// `:` and `line`, then enter.
fn command(s: &mut State, line: &str) -> Vec<Effect> {
    app::update(s, key(":"));
    type_text(s, line);
    press(s, &["enter"])
}

// The command line parses, completes and refuses what it does not know.
#[test]
fn command_line_parses_and_completes() {
    use warrant::console::command::{Command, complete, parse};
    use warrant::console::filter::SortKey;
    assert_eq!(parse("sort risk"), Ok(Command::Sort(SortKey::Risk)));
    assert_eq!(parse("refuse not today"), Ok(Command::Refuse(Some("not today".into()))));
    assert_eq!(parse("refuse"), Ok(Command::Refuse(None)));
    assert_eq!(parse("audit"), Ok(Command::View(Pane::Audit)));
    assert_eq!(parse("grant until 2026-12-01T00:00:00Z"), Ok(Command::Grant("until 2026-12-01T00:00:00Z".into())));
    assert!(parse("grant forever").is_err());
    assert!(parse("sort size").is_err_and(|e| e.contains("age, risk, class, agent")));
    // `:approve ID` names the packet (issue 32, item 10: it was rejected); one id only.
    assert_eq!(parse("approve p-quote"), Ok(Command::Approve(Some("p-quote".into()))));
    assert_eq!(parse("approve"), Ok(Command::Approve(None)));
    assert!(parse("approve p-1 p-2").is_err());
    assert!(parse("frobnicate").is_err_and(|e| e.contains("unknown command :frobnicate")));
    assert!(parse("theme").is_err());
    let themes = vec!["default".to_owned(), "mono".to_owned()];
    assert_eq!(complete("th", &themes).0, "theme ");
    assert_eq!(complete("theme m", &themes).0, "theme mono");
    assert_eq!(complete("sort ri", &themes).0, "sort risk");
    assert_eq!(complete("au", &themes).0, "audit");
    // Two candidates: the line keeps their common prefix and lists them.
    let (line, options) = complete("p", &themes);
    assert_eq!((line.as_str(), options), ("p", vec!["pending".to_owned(), "posteriors".to_owned()]));
    let (line, options) = complete("a", &themes);
    assert_eq!(line, "a");
    assert_eq!(options, ["approve", "agents", "audit"]);
    assert_eq!(complete("zz", &themes), ("zz".to_owned(), vec![]));
    // Every view completes, `:grants` too (issue 32, item 10).
    let (line, options) = complete("gr", &themes);
    assert_eq!((line.as_str(), options), ("grant", vec!["grant".to_owned(), "grants".to_owned()]));
    assert_eq!(complete("grants", &themes).0, "grants");
}

// `:` runs the same actions as the keys: approve and refuse open the confirmation dialog (no
// signature without it), filter, sort, views, theme, quit; an unknown command does nothing and
// says so; esc cancels; Up/Down walk the history; Tab completes in place.
#[test]
fn command_line_dispatches_to_the_keys_actions() {
    let mut s = state(false);
    // Tab completes the command name, then its argument.
    app::update(&mut s, key(":"));
    type_text(&mut s, "so");
    app::update(&mut s, key("tab"));
    type_text(&mut s, "ri");
    app::update(&mut s, key("tab"));
    assert!(matches!(&s.mode, Mode::Input { text, .. } if text == "sort risk"), "{:?}", s.mode);
    assert!(press(&mut s, &["enter"]).is_empty());
    assert_eq!(s.sort, warrant::console::filter::SortKey::Risk);
    assert_eq!(s.mode, Mode::Normal);

    // Unknown: nothing done, a clear error.
    let (pane, filter, sort) = (s.pane, s.filter.clone(), s.sort);
    assert!(command(&mut s, "frobnicate").is_empty());
    let flash = s.flash.clone().expect("error shown");
    assert!(flash.error && flash.text.contains("unknown command :frobnicate"), "{flash:?}");
    assert_eq!((s.pane, s.filter.clone(), s.sort, s.mode.clone()), (pane, filter, sort, Mode::Normal));

    // Esc cancels what was typed.
    app::update(&mut s, key(":"));
    type_text(&mut s, "q");
    assert!(press(&mut s, &["esc"]).is_empty());
    assert_eq!(s.mode, Mode::Normal);
    assert!(!s.quit);

    // History: Up gives the newest first, Down walks back to what was being typed.
    app::update(&mut s, key(":"));
    type_text(&mut s, "fil");
    app::update(&mut s, key("up"));
    assert!(matches!(&s.mode, Mode::Input { text, .. } if text == "frobnicate"), "{:?}", s.mode);
    app::update(&mut s, key("up"));
    assert!(matches!(&s.mode, Mode::Input { text, .. } if text == "sort risk"), "{:?}", s.mode);
    app::update(&mut s, key("up"));
    assert!(matches!(&s.mode, Mode::Input { text, .. } if text == "sort risk"), "oldest stays: {:?}", s.mode);
    app::update(&mut s, key("down"));
    app::update(&mut s, key("down"));
    assert!(matches!(&s.mode, Mode::Input { text, .. } if text == "fil"), "{:?}", s.mode);
    app::update(&mut s, key("esc"));

    // Filter and views.
    assert!(command(&mut s, "filter northwind").is_empty());
    assert_eq!(s.filter, "northwind");
    assert!(command(&mut s, "filter").is_empty());
    assert!(s.filter.is_empty());
    command(&mut s, "sort age");
    assert!(command(&mut s, "decided").is_empty());
    assert_eq!(s.pane, Pane::Decided);
    assert_eq!(command(&mut s, "audit"), vec![Effect::Audit]);
    assert_eq!(s.pane, Pane::Audit);
    command(&mut s, "pending");

    // Approve and refuse open the same dialog as `a` and `r` for the packet under the cursor;
    // nothing is signed by the command.
    let under = s.selected_packet().map(|p| p.id.clone()).expect("a packet");
    assert!(command(&mut s, "approve").is_empty());
    let Mode::Confirm(c) = &s.mode else { panic!("no dialog: {:?}", s.mode) };
    assert_eq!((c.verdict, c.focus, c.packet.id.as_str()), (Verdict::Approve, Button::Cancel, under.as_str()));
    press(&mut s, &["esc"]);
    assert!(command(&mut s, "refuse not before Monday").is_empty());
    let Mode::Confirm(c) = &s.mode else { panic!("no dialog: {:?}", s.mode) };
    assert_eq!((c.verdict, c.reason.as_deref()), (Verdict::Refuse, Some("not before Monday")));
    press(&mut s, &["esc"]);
    command(&mut s, "refuse");
    assert!(matches!(s.mode, Mode::Input { purpose: app::InputPurpose::RefuseReason(_), .. }), "{:?}", s.mode);
    press(&mut s, &["esc"]);

    // Theme, grant (the packet under the cursor is no tool call: no grant, the reason), help, quit.
    assert_eq!(command(&mut s, "theme mono"), vec![Effect::Theme("mono".into())]);
    assert!(command(&mut s, "grant session").is_empty());
    assert!(s.flash.as_ref().is_some_and(|f| f.text.contains("not a tool call")), "{:?}", s.flash);
    assert_eq!(s.mode, Mode::Normal);
    assert!(command(&mut s, "help").is_empty());
    assert_eq!(s.mode, Mode::Help);
    press(&mut s, &["esc"]);
    assert_eq!(command(&mut s, "q"), vec![Effect::Quit]);
    assert!(s.quit);
}

// The command line with Tab's candidates, at both sizes.
#[test]
fn command_line_snapshots() {
    let mut s = state(false);
    app::update(&mut s, key(":"));
    type_text(&mut s, "a");
    app::update(&mut s, key("tab"));
    let small = screen(&s, 80, 24);
    assert!(small.contains(":a▏  approve agents audit"), "{small}");
    insta::assert_snapshot!("command_line_80x24", small);
    insta::assert_snapshot!("command_line_160x48", screen(&s, 160, 48));
}

/// A signed chain record as `audit_chain` hands it to `entry_of_record`.
fn audit_record(action: &str, agent: &str, at: &str, approval: &str, meta_key: &str, doc: Value) -> Value {
    json!({
        "action": action, "agent": agent, "timestamp": at, "outcome": "success",
        "entry_hash": format!("sha256:{}", warrant::protocol::canonical::sha256_hex(format!("{action}{at}").as_bytes())),
        "metadata": {
            "approval": {"decision": approval, "signatures": [{"signer": "alice", "key_fingerprint": "SHA256:S1I+LnIehTKTATEWkIjfe40E1haIYEbCmd6nU3nMHAQ"}]},
            meta_key: doc,
        }
    })
}

fn audit_state() -> State {
    let mut s = state(false);
    let records = [
        audit_record(
            "email.send.external",
            "agent-scribe",
            "2026-11-21T08:10:00Z",
            "approve",
            "warrant_decision",
            json!({"packet_id": "p-old", "decision": "approve", "reason": "quote checked"}),
        ),
        audit_record(
            "social.post.public",
            "agent-herald",
            "2026-11-21T08:30:00Z",
            "refuse",
            "warrant_decision",
            json!({"packet_id": "p-post", "decision": "refuse", "reason": "not before the launch review"}),
        ),
        audit_record(
            "warrant.control.agent.quarantine",
            "agent-herald",
            "2026-11-21T08:31:00Z",
            "agent.quarantine",
            "warrant_control",
            json!({"control": "agent.quarantine", "subject": "agent-herald", "reason": "odd posts"}),
        ),
        audit_record(
            "warrant.grant",
            "agent-scribe",
            "2026-11-21T08:40:00Z",
            "grant",
            "warrant_grant",
            json!({"domain": "warrant.grant/v1", "grant_id": "g-7"}),
        ),
    ];
    let entries: Vec<_> = records
        .iter()
        .enumerate()
        .map(|(i, r)| warrant::audit::entry_of_record(i, r.as_object().expect("record")))
        .collect();
    let mut snap = snapshot();
    let receipt = json!({
        "type": "trust_graduation_receipt", "receipt_id": "rcpt-reads", "action_class": "file.read",
        "outcome": "execute", "created_at": "2026-11-21T08:20:00Z", "agent": "agent-scribe",
        "note": "12 call(s) of fs.read ran with no packet (the gate allows them on their own)",
        "tool_call": {"host": "mcp-gateway", "tool": "fs.read", "calls": 12}
    });
    let r = warrant::protocol::packet::parse_receipt(&serde_json::to_vec(&receipt).expect("json")).expect("receipt");
    snap.receipts.push(Arc::new(r));
    scanned(&mut s, snap);
    assert_eq!(press(&mut s, &["8"]), vec![Effect::Audit]);
    app::update(&mut s, Action::Audited(Ok(Arc::new(entries))));
    s
}

// The Audit view (8): chain records in order with the call off the chain between them, how
// each was allowed and who signed; the detail of the selected entry.
#[test]
fn audit_view_snapshots() {
    let mut s = audit_state();
    assert_eq!(s.pane, Pane::Audit);
    let kinds: Vec<&str> = s.audit().iter().map(|e| e.kind.word()).collect();
    assert_eq!(kinds, ["decision", "call", "decision", "control", "grant"]);
    assert_eq!(s.audit()[1].record, None);
    // A chain verification asks for the audit again.
    let fx = app::update(&mut s, Action::ChainVerified(view(*valid_report(7), decided_post())));
    assert_eq!(fx, vec![Effect::Audit]);
    press(&mut s, &["j"]);
    let small = screen(&s, 80, 24);
    assert!(small.contains("∉ chain") && small.contains("not in the chain"), "{small}");
    insta::assert_snapshot!("audit_80x24", small);
    let big = screen(&s, 160, 48);
    assert!(big.contains("8 Audit (5)") && big.contains("by the gate alone"), "{big}");
    insta::assert_snapshot!("audit_160x48", big);
    // The filter narrows the audit too.
    command(&mut s, "filter agent:agent-herald");
    assert_eq!(s.len(Pane::Audit), 2);
}

// The mouse: a click on a row selects it, a click on a tab switches view, the wheel scrolls;
// in a dialog the mouse does nothing.
#[test]
fn mouse_selects_rows_switches_views_and_scrolls() {
    use app::{MouseInput, MouseKind};
    let mut s = state(false);
    app::update(&mut s, Action::Resize { width: 160, height: 48 });
    let text = screen(&s, 160, 48);
    let lines: Vec<&str> = text.lines().collect();
    let (row, line) =
        lines.iter().enumerate().find(|(_, l)| l.contains("p-kickoff") || l.contains("agent-planner")).expect("row");
    let click = |column: usize, row: usize| {
        Action::Mouse(MouseInput { kind: MouseKind::Click, column: column as u16, row: row as u16 })
    };
    assert_eq!(s.selection(Pane::Pending), 0);
    let col = line.find("agent-planner").map_or(5, |b| line[..b].chars().count());
    app::update(&mut s, click(col, row));
    assert_eq!(s.selected_packet().map(|p| p.id.clone()).as_deref(), Some("p-kickoff"));
    // Wheel down and up.
    app::update(&mut s, Action::Mouse(MouseInput { kind: MouseKind::ScrollUp, column: 5, row: 5 }));
    assert_eq!(s.selection(Pane::Pending), 0);
    app::update(&mut s, Action::Mouse(MouseInput { kind: MouseKind::ScrollDown, column: 5, row: 5 }));
    assert_eq!(s.selection(Pane::Pending), 2);
    // The "2 Dec(ided)" tab in the list's title.
    let tab_row = lines.iter().position(|l| l.contains("2 Dec")).expect("tabs");
    let tab_col = lines[tab_row].find("2 Dec").map(|b| lines[tab_row][..b].chars().count()).expect("tab");
    app::update(&mut s, click(tab_col + 2, tab_row));
    assert_eq!(s.pane, Pane::Decided);
    let audit_col = lines[tab_row].find("8 Aud").map(|b| lines[tab_row][..b].chars().count()).expect("audit tab");
    assert_eq!(app::update(&mut s, click(audit_col + 1, tab_row)), vec![Effect::Audit]);
    assert_eq!(s.pane, Pane::Audit);
    // In the confirmation dialog a click does nothing.
    command(&mut s, "pending");
    press(&mut s, &["a"]);
    let before = s.mode.clone();
    assert!(app::update(&mut s, click(80, 24)).is_empty());
    assert_eq!(s.mode, before);
}

// The packet detail tells the agent's record for the class from the verified chain (approved,
// refused, the last refusal and its reason), the class's posterior, and the contract's
// reversibility and blast radius in words.
#[test]
fn the_detail_shows_the_agents_record_the_posterior_and_the_contract_in_words() {
    let mut s = state(false);
    let d = |i: u64, verdict: Verdict, reason: Option<&str>| ChainDecision {
        cosigners: Vec::new(),
        quorum: None,
        signed: None,
        verdict,
        principal: "alice".into(),
        reason: reason.map(Into::into),
        decided_at: format!("2026-11-2{i}T08:00:00Z"),
        packet_hash: String::new(),
        chain_index: i,
        entry_hash: String::new(),
        agent: "agent-scribe".into(),
        action_class: "email.send.external".into(),
        system: None,
        corrected: None,
    };
    let mut decisions = decided_post();
    decisions.insert("old-1".into(), std::sync::Arc::new(d(1, Verdict::Approve, None)));
    decisions.insert("old-2".into(), std::sync::Arc::new(d(2, Verdict::Refuse, Some("wrong price"))));
    decisions.insert("old-3".into(), std::sync::Arc::new(d(3, Verdict::Approve, None)));
    app::update(&mut s, Action::ChainVerified(view(*valid_report(9), decisions)));
    let rec = s.agent_record("agent-scribe", "email.send.external").expect("record");
    assert_eq!((rec.approved, rec.refused), (2, 1));
    assert!(s.agent_record("agent-planner", "email.send.external").is_none());
    press(&mut s, &["enter"]);
    let text = screen(&s, 160, 48);
    assert!(
        text.contains("2 approved · 1 refused · last refused 2026-11-22T08:00:00Z (record 2): wrong price"),
        "{text}"
    );
    assert!(text.contains("95% interval"), "{text}");
    let mut g = governed_state(false);
    select_pending(&mut g, "p-merge");
    press(&mut g, &["enter"]);
    let text = screen(&g, 160, 48);
    assert!(text.contains("can be undone") && text.contains("the project's shared state"), "{text}");
    assert!(!text.contains("\"reversibility\""), "words, not JSON: {text}");
}

// Issue 32, item 7: at 120 columns the detail goes below the list, which keeps its columns
// whole: a long summary and class are not cut, the tabs keep their names, and the audit's
// timestamps are whole (they showed `2026-11-2…`).
#[test]
fn one_hundred_and_twenty_columns_read_as_well_as_one_hundred() {
    let mut s = every_view_state();
    app::update(&mut s, Action::Resize { width: 120, height: 36 });
    press(&mut s, &["1", "g"]);
    let shown = screen(&s, 120, 36);
    // Every ordinary row whole; the one with a 35-character agent and a 38-character class
    // keeps a readable summary (it was cut to 10 characters).
    for whole in [
        "Merge 14 corrections",
        "Copy the payroll notes",
        "Append the meeting notes",
        "email.send.external",
        "Push the release branch with",
        "2 Decided",
        "4 Posteriors",
        "8 Audit",
    ] {
        assert!(shown.contains(whole), "{whole:?} cut at 120x36:\n{shown}");
    }
    let mut s = audit_state();
    for (w, h) in [(80, 24), (100, 30), (120, 36), (200, 50)] {
        app::update(&mut s, Action::Resize { width: w, height: h });
        let shown = screen(&s, w, h);
        for (i, _) in shown.match_indices("2026-") {
            let stamp: String = shown[i..].chars().take(19).collect();
            assert!(!stamp.contains('…'), "{w}x{h}: a timestamp cut to {stamp}:\n{shown}");
        }
        if w >= 120 {
            assert!(shown.contains("2026-11-21T08:30:00"), "{w}x{h}: no whole timestamp:\n{shown}");
        }
    }
}

// Issue 32, item 10: `?` lists the keys, the `:` commands and what each glyph means; `:approve
// ID` opens the dialog on that packet; `/` has a history; each view's hints say what enter opens.
#[test]
fn help_commands_and_hints_explain_themselves() {
    let mut s = state(false);
    app::update(&mut s, Action::Resize { width: 200, height: 50 });
    press(&mut s, &["?"]);
    let help = screen(&s, 200, 50);
    for entry in [
        ":approve [ID]",
        ":grant SCOPE",
        ":sort KEY",
        "Legend",
        "● review",
        "⊘ blocked",
        "◆ human only",
        "⏱",
        "■",
        "∉ chain",
        "copy id",
        "open in $PAGER",
        "reverse the order",
    ] {
        assert!(help.contains(entry), "{entry:?} missing from help:\n{help}");
    }
    insta::assert_snapshot!("help_commands_legend_200x50", help);
    press(&mut s, &["esc"]);
    // `:approve ID`: that packet's dialog, whatever was under the cursor.
    assert_eq!(s.selected_packet().map(|p| p.id.clone()).as_deref(), Some("p-quote"));
    assert!(command(&mut s, "approve p-kickoff").is_empty());
    let Mode::Confirm(c) = &s.mode else { panic!("{:?} {:?}", s.mode, s.flash) };
    assert_eq!((c.packet.id.as_str(), c.verdict, c.focus), ("p-kickoff", Verdict::Approve, Button::Cancel));
    press(&mut s, &["esc"]);
    assert!(command(&mut s, "approve p-post").is_empty());
    assert!(s.flash.as_ref().is_some_and(|f| f.error && f.text.contains("already decided")), "{:?}", s.flash);
    assert!(command(&mut s, "approve p-nope").is_empty());
    assert!(s.flash.as_ref().is_some_and(|f| f.error && f.text.contains("no pending packet p-nope")), "{:?}", s.flash);
    assert_eq!(s.mode, Mode::Normal);
    // `/` remembers: Up gives the last filter back, Down the line being typed.
    press(&mut s, &["/"]);
    type_text(&mut s, "quote");
    press(&mut s, &["enter", "esc", "/"]);
    assert!(s.filter.is_empty());
    press(&mut s, &["up"]);
    assert!(
        matches!(&s.mode, Mode::Input { purpose: app::InputPurpose::Filter, text } if text == "quote"),
        "{:?}",
        s.mode
    );
    assert_eq!(s.len(Pane::Pending), 1, "the recalled filter applies as typed");
    press(&mut s, &["down"]);
    assert!(matches!(&s.mode, Mode::Input { text, .. } if text.is_empty()), "{:?}", s.mode);
    press(&mut s, &["esc"]);
    // Hints: enter opens a packet only where there is one.
    let hint = |s: &State| screen(s, 160, 48).lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").to_owned();
    for (view, opens) in [("1", "open packet"), ("2", "open decision"), ("3", "open file"), ("4", "open class")] {
        press(&mut s, &[view]);
        let line = hint(&s);
        assert!(line.contains(opens), "view {view}: {line}");
        if view != "1" {
            assert!(!line.contains("open packet"), "view {view}: {line}");
        }
    }
    let mut s = audit_state();
    app::update(&mut s, Action::Resize { width: 160, height: 48 });
    let line = hint(&s);
    assert!(line.contains("open entry") && !line.contains("open packet"), "{line}");
}

// Issue 32, item 11: `y`/`Y` copy the packet's id and content hash whole (OSC 52, written by the
// event loop), `p` hands the whole packet to `$PAGER`, `S` reverses the order and the sorted
// column says so.
#[test]
fn copy_pager_and_reverse_sort() {
    let mut s = state(false);
    app::update(&mut s, Action::Resize { width: 160, height: 48 });
    let p = s.selected_packet().expect("a packet");
    assert_eq!(press(&mut s, &["y"]), vec![Effect::Copy(p.id.clone())]);
    assert_eq!(press(&mut s, &["Y"]), vec![Effect::Copy(p.content_hash.clone())]);
    assert!(
        s.flash.as_ref().is_some_and(|f| f.text.contains(&p.content_hash)),
        "the hash is said whole: {:?}",
        s.flash
    );
    let fx = press(&mut s, &["p"]);
    let [Effect::Pager(text)] = fx.as_slice() else { panic!("no pager: {fx:?}") };
    for whole in [p.id.as_str(), p.content_hash.as_str(), "dana@northwind.example", "Attached is the quote."] {
        assert!(text.contains(whole), "{whole:?} not in the pager's text:\n{text}");
    }
    // Nothing to copy or page in a view without a packet.
    press(&mut s, &["4"]);
    assert!(press(&mut s, &["p"]).is_empty());
    assert!(s.flash.as_ref().is_some_and(|f| f.error), "{:?}", s.flash);
    press(&mut s, &["1"]);
    // Sorted by age, newest first: ▼ on AGE; `S` reverses (oldest first, ▲); `s` moves on to risk.
    let ids = |s: &State| s.pending().iter().map(|e| e.packet.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&s), ["p-quote", "p-kickoff", "p-pay"]);
    assert!(screen(&s, 160, 48).contains("AGE ▼"));
    press(&mut s, &["S"]);
    assert_eq!(ids(&s), ["p-pay", "p-kickoff", "p-quote"]);
    assert!(s.flash.as_ref().is_some_and(|f| f.text.contains("oldest first")), "{:?}", s.flash);
    assert!(screen(&s, 160, 48).contains("AGE ▲"));
    press(&mut s, &["S", "s"]);
    let shown = screen(&s, 160, 48);
    assert!(shown.contains("RISK ▼") && !shown.contains("AGE ▼"), "{shown}");
    assert_eq!(ids(&s)[0], "p-pay", "payment is the highest risk");
}

// A packet whose preconditions nobody has observed yet is assessed failing them (fail closed),
// but the assessment stays due until a job observes them: the synchronous assessment on the UI
// thread observes nothing, and it took the generation as assessed, so the demo's report was
// shown `⊘ blocked … not observed yet` until another scan came (issue 32's README screen).
#[test]
fn unobserved_preconditions_keep_the_assessment_due_until_observed() {
    let mut s = governed_state(false);
    let mut snap = governed_snapshot();
    let merge = snap.packets[0].packet.raw["governance"].clone();
    snap.packets.insert(0, governed("p-merge-2", "agent-scribe", "Merge again", 0, merge, "email.send.external"));
    app::update(&mut s, Action::Scanned(snap));
    app::update(&mut s, Action::Assess);
    let why = |s: &State| s.verdict("p-merge-2").map(|v| format!("{v:?}")).unwrap_or_default();
    assert!(why(&s).contains("not observed yet"), "{}", why(&s));
    assert!(s.assessment_due(), "the unobserved precondition keeps an assessment due");
    let job = s.assess_job().expect("a job to observe it");
    app::update(&mut s, Action::Assessed(Box::new(job.run())));
    assert!(!why(&s).contains("not observed"), "{}", why(&s));
    assert!(!s.assessment_due() && s.assess_job().is_none(), "observed: nothing due");
    // A later synchronous assessment keeps the observation (placeholders were never kept).
    app::update(&mut s, Action::Assess);
    assert!(!why(&s).contains("not observed"), "{}", why(&s));
    assert!(!s.assessment_due());
}

// Issue 35: `e` opens the selected packet's proposed action in the principal's editor (sorted,
// indented JSON); what the editor leaves is checked, then the approval dialog shows the whole
// difference, starts on Cancel, and signs (with the correction) only once every line of it was
// on screen. A packet that changed meanwhile, text that is not JSON, or an edit that changes
// nothing signs nothing; `:correct ID` opens the editor on that packet.
#[test]
fn e_corrects_the_proposed_action_and_the_dialog_shows_the_whole_difference() {
    let mut s = state(false);
    let fx = press(&mut s, &["e"]);
    let [Effect::Edit { packet, text }] = fx.as_slice() else { panic!("{fx:?}") };
    assert_eq!(packet.id, "p-quote");
    assert_eq!(serde_json::from_str::<Value>(text).expect("JSON"), *packet.proposed_action());
    assert!(text.starts_with("{\n  \"body\""), "sorted, indented: {text}");
    let (id, hash) = (packet.id.clone(), packet.content_hash.clone());
    let edited = |text: &str, hash: &str| Action::Edited {
        packet_id: id.clone(),
        content_hash: hash.to_owned(),
        text: Ok(text.to_owned()),
    };
    let corrected = text.replace("dana@northwind.example", "dana.lee@northwind.example");

    for (why, action) in [
        ("it changed while you were correcting it", edited(&corrected, "sha256:other")),
        ("not valid JSON", edited("{\"to\": ", &hash)),
        ("changes nothing", edited(text, &hash)),
        ("the correction is empty", edited("{}", &hash)),
    ] {
        assert!(app::update(&mut s, action).is_empty());
        assert_eq!(s.mode, Mode::Normal, "{why}");
        assert!(
            s.flash.as_ref().is_some_and(|f| f.error && f.text.contains(why) && f.text.contains("nothing was signed")),
            "{why}: {:?}",
            s.flash
        );
    }

    app::update(&mut s, Action::Resize { width: 80, height: 24 });
    app::update(&mut s, edited(&corrected, &hash));
    if let Some((width, height)) = s.viewport {
        app::update(&mut s, Action::Drawn { width, height });
    }
    let Mode::Confirm(c) = &s.mode else { panic!("no dialog: {:?} {:?}", s.mode, s.flash) };
    assert_eq!(c.focus, Button::Cancel);
    assert!(c.correction.as_ref().is_some_and(|c| c.action["to"] == "dana.lee@northwind.example"));
    let shown = screen(&s, 100, 40);
    assert!(shown.contains("APPROVAL AS CORRECTED"), "{shown}");
    assert!(shown.contains(r#"-   "to": "dana@northwind.example""#), "{shown}");
    assert!(shown.contains(r#"+   "to": "dana.lee@northwind.example""#), "{shown}");
    assert!(shown.contains("minor_edit"), "{shown}");
    // At 80×24 the difference does not fit: nothing is signed before all of it was on screen.
    assert!(matches!(&s.mode, Mode::Confirm(c) if !c.read), "{:?}", s.mode);
    assert!(press(&mut s, &["y"]).is_empty(), "signed before the whole difference was read");
    assert!(matches!(&s.mode, Mode::Confirm(c) if c.correction.is_some()), "{:?}", s.mode);
    // Read to the end, then sign: the correction goes with the approval.
    for _ in 0..10 {
        if matches!(&s.mode, Mode::Confirm(c) if c.read) {
            break;
        }
        press(&mut s, &["pagedown"]);
    }
    let fx = press(&mut s, &["y"]);
    assert!(
        matches!(fx.as_slice(), [Effect::Sign { verdict: Verdict::Approve, correction: Some(c), grant: None, .. }]
            if c.action["to"] == "dana.lee@northwind.example"),
        "{fx:?}"
    );

    // `:correct ID` selects that pending packet first.
    let mut s = state(false);
    let fx = press(
        &mut s,
        &[":", "c", "o", "r", "r", "e", "c", "t", " ", "p", "-", "k", "i", "c", "k", "o", "f", "f", "enter"],
    );
    assert!(matches!(fx.as_slice(), [Effect::Edit { packet, .. }] if packet.id == "p-kickoff"), "{fx:?} {:?}", s.flash);
}
