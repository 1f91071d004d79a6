//! The console without a terminal: `update` transitions and `TestBackend` snapshots at 80×24 and
//! 160×48. Time and packet contents are fixed, so the screens are deterministic.
#![cfg(feature = "console")]

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use warrant::chain::{Check, Finding, VerifyReport};
use warrant::console::app::{self, Action, Button, ChainState, Effect, Mode, Pane, State};
use warrant::console::keymap::{Key, Keymap};
use warrant::console::theme::Theme;
use warrant::console::ui;
use warrant::decision::Verdict;
use warrant::spool::{ChainDecision, ChainView, FileKind, InvalidFile, PacketEntry, Snapshot};

/// 2026-11-21T09:00:00Z.
const NOW: f64 = 1_795_251_600.0;

fn packet(id: &str, agent: &str, class: &str, summary: &str, minutes_ago: i64, extra: Value) -> PacketEntry {
    let created = warrant::clock::format_rfc3339(
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
    let p = warrant::packet::parse_packet(&serde_json::to_vec(&v).expect("json"), id).expect("valid packet");
    PacketEntry { file: format!("{id}.json"), modified: NOW, packet: Arc::new(p) }
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
            reason: warrant::packet::InvalidReason::Schema(
                "`external_actions` must be the integer 0: packets are prepare-only".into(),
            ),
            modified: NOW,
        }],
    }
}

fn decided_post() -> HashMap<String, ChainDecision> {
    HashMap::from([(
        "p-post".to_owned(),
        ChainDecision {
            verdict: Verdict::Refuse,
            principal: "alice".into(),
            reason: Some("not before the launch review".into()),
            decided_at: "2026-11-21T08:30:00Z".into(),
            packet_hash: String::new(),
            chain_index: 7,
            entry_hash: format!("sha256:{}", "ab".repeat(32)),
        },
    )])
}

fn view(report: VerifyReport, decisions: HashMap<String, ChainDecision>) -> Box<ChainView> {
    Box::new(ChainView { report, decisions, ..ChainView::default() })
}

fn valid_report(total: usize) -> Box<VerifyReport> {
    Box::new(VerifyReport {
        total,
        root_hash: Some(format!("sha256:{}", "cd".repeat(32))),
        signatures_verified: total,
        findings: vec![],
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
    app::update(&mut s, Action::Scanned(snapshot()));
    app::update(&mut s, Action::ChainVerified(view(*valid_report(7), decided_post())));
    s
}

fn key(s: &str) -> Action {
    Action::Key(Key::parse(s).expect("key"))
}

fn press(s: &mut State, keys: &[&str]) -> Vec<Effect> {
    keys.iter().flat_map(|k| app::update(s, key(k))).collect()
}

fn screen(s: &State, w: u16, h: u16) -> String {
    let theme = Theme::builtin("default").expect("theme");
    let mut term = Terminal::new(TestBackend::new(w, h)).expect("terminal");
    term.draw(|f| ui::render(s, &theme, f)).expect("draw");
    let buf = term.backend().buffer();
    let mut out = String::new();
    for y in 0..h {
        let line: String = (0..w).map(|x| buf[(x, y)].symbol().to_owned()).collect();
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

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
        matches!(fx.as_slice(), [Effect::Sign { verdict: Verdict::Approve, packet, reason: None }] if packet.id == "p-quote"),
        "{fx:?}"
    );
    assert!(s.signing);
    // Nothing else can be signed while one signature is in flight.
    assert!(press(&mut s, &["j", "a"]).is_empty());
    assert!(!matches!(s.mode, Mode::Confirm(_)), "{:?}", s.mode);
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
    };
    app::update(&mut s, Action::ChainVerified(view(report, decided_post())));
    assert_eq!(s.mode, Mode::ChainAlert);
    insta::assert_snapshot!("chain_broken_80x24", screen(&s, 80, 24));
    press(&mut s, &["enter"]);
    assert_eq!(s.mode, Mode::Normal);
    assert!(press(&mut s, &["a"]).is_empty());
    assert!(s.flash.as_ref().is_some_and(|f| f.error && f.text.contains("broken")), "{:?}", s.flash);
    assert!(press(&mut s, &["y"]).is_empty());
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
    // At 80×24 the sections flow into columns: every binding of every mode is still shown.
    let small = screen(&s, 80, 24);
    for mode in ["normal", "confirm", "input", "help"] {
        for b in s.keymap.bindings(mode) {
            assert!(small.contains(&b.desc), "80×24 help lacks {:?}:\n{small}", b.desc);
        }
    }
    insta::assert_snapshot!("help_80x24", small);
    press(&mut s, &["esc"]);
    assert_eq!(s.mode, Mode::Normal);
}

// Text from packets is shown inert: no escape or control character reaches the screen.
#[test]
fn hostile_text_is_inert() {
    let mut s = state(false);
    let evil = packet(
        "p-evil",
        "agent-\u{1b}[31mred",
        "email.send.external",
        "Pay now\u{1b}]0;pwned\u{7}\u{202e}gnp.exe",
        0,
        json!({"body": "line1\n\u{1b}[2Jclear\u{9b}31m", "to": "x\u{0}y@example.com"}),
    );
    let mut snap = snapshot();
    snap.packets.insert(0, evil);
    app::update(&mut s, Action::Scanned(snap));
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
    // The selection follows the same packet when a newer one arrives.
    press(&mut s, &["j"]);
    let mut snap = snapshot();
    snap.packets.insert(0, packet("p-new", "agent-new", "draft.compose", "fresh", 0, json!({})));
    app::update(&mut s, Action::Scanned(snap));
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
            packet_id: "p-quote".into(),
            verdict: Verdict::Approve,
            chain_index: 8,
            entry_hash: format!("sha256:{}", "ef".repeat(32)),
        })),
    );
    assert_eq!(fx, vec![Effect::VerifyChain { force: false }, Effect::Scan]);
    assert!(!s.signing);
    assert!(s.flash.as_ref().is_some_and(|f| f.text.contains("approved p-quote")));
    let mut decided = decided_post();
    decided.insert(
        "p-quote".into(),
        ChainDecision {
            verdict: Verdict::Approve,
            principal: "alice".into(),
            reason: None,
            decided_at: "2026-11-21T09:00:00Z".into(),
            packet_hash: String::new(),
            chain_index: 8,
            entry_hash: String::new(),
        },
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
    let reparsed = warrant::packet::parse_packet(&serde_json::to_vec(&raw).expect("json"), "p-long").expect("packet");
    long.packet = Arc::new(reparsed);
    let mut snap = snapshot();
    snap.packets.insert(0, long);
    app::update(&mut s, Action::Scanned(snap));
    press(&mut s, &["g", "enter"]);
    assert_eq!(s.selected_packet().map(|p| p.id.clone()).as_deref(), Some("p-long"));
    let top = screen(&s, 80, 24);
    assert!(top.contains("more lines"), "{top}");
    press(&mut s, &["G"]);
    let bottom = screen(&s, 80, 24);
    assert!(bottom.contains("attacker@evil.example"), "{bottom}");
    assert!(
        bottom.contains("XX00EVIL") && bottom.contains("receipt_preview") && bottom.contains("look here"),
        "{bottom}"
    );
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
    app::update(&mut s, Action::Scanned(snap.clone()));
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
    app::update(&mut s, Action::Scanned(snap));
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
    e.packet =
        Arc::new(warrant::packet::parse_packet(&serde_json::to_vec(&raw).expect("json"), "p-old").expect("packet"));
    let mut snap = snapshot();
    snap.packets.insert(0, e);
    app::update(&mut s, Action::Scanned(snap));
    press(&mut s, &["g"]);
    assert!(press(&mut s, &["a"]).is_empty());
    assert_eq!(s.mode, Mode::Normal);
    assert!(s.flash.as_ref().is_some_and(|f| f.text.contains("expired")), "{:?}", s.flash);
    assert!(screen(&s, 160, 48).contains("EXPIRED"));
    press(&mut s, &["r", "x", "enter"]);
    assert!(matches!(&s.mode, Mode::Confirm(c) if c.verdict == Verdict::Refuse));
}

fn posterior_of<'a>(s: &'a State, class: &str) -> &'a warrant::graduation::Posterior {
    s.posteriors().iter().find(|p| p.action_class == class).map(|p| &p.posterior).expect("posterior row")
}

// Pane 4 lists one posterior per action class, with the interval band and numbers; chain
// evidence moves them, and the packet detail shows the gate's decision and the evidence rows.
#[test]
fn posteriors_pane_shows_intervals_from_chain_evidence() {
    use warrant::graduation::{EvidenceRow, SourceType};
    let mut s = state(false);
    assert_eq!(posterior_of(&s, "draft.compose").samples, 0);
    let mut evidence: Vec<EvidenceRow> =
        (0..12).map(|_| EvidenceRow::new("draft.compose", "approved", Some(SourceType::Principal), None)).collect();
    evidence.push(EvidenceRow::new("email.send.external", "rejected", Some(SourceType::Principal), None));
    let view =
        Box::new(ChainView { report: *valid_report(20), decisions: decided_post(), evidence, ..ChainView::default() });
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
            packet_id: "p-quote".into(),
            verdict: Verdict::Approve,
            chain_index: 9,
            entry_hash: format!("sha256:{}", "0".repeat(64)),
        })),
    );
    let after = posterior_of(&s, "email.send.external");
    assert_eq!(after.samples, before.samples + 1);
    assert!(after.mean > before.mean);
    assert!(after.approvals_to_graduate() < before.approvals_to_graduate());
}
