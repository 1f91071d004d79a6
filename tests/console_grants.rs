//! The console and the principal's grants, without a terminal: a call that ran on a
//! grant leaves the Pending list, a held call a live grant covers says so in its detail, the
//! Grants view (`7`) lists the grants with their uses, and `x` revokes one with a reason. Screens
//! at 80×24 and 160×48.
#![cfg(feature = "console")]

use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use warrant::console::app::{self, Action, Effect, Mode, Pane, State};
use warrant::console::keymap::{Key, Keymap};
use warrant::protocol::chain::VerifyReport;
use warrant::protocol::grant::{Grant, GrantBook, GrantEvent, Scope, ToolPattern};
use warrant::store::spool::{ChainView, PacketEntry, Snapshot, Uses};

use crate::screen as support_screen;
use support_screen::screen;

/// 2026-11-21T09:00:00Z.
const NOW: f64 = 1_795_251_600.0;

fn call_packet(id: &str, command: &str, session: &str, minutes_ago: i64) -> PacketEntry {
    let policies = warrant::protocol::graduation::policy::PolicySet::builtin();
    let call = warrant::protocol::calls::ToolCall {
        host: "claude-code".into(),
        agent: "claude-code".into(),
        session: Some(session.into()),
        tool: "Bash".into(),
        input: json!({"command": command}),
        notebook: "project-1a2b3c".into(),
        cwd: Some("/home/user/project".into()),
        workdir: None,
        annotations: Value::Null,
    };
    let c = warrant::protocol::calls::classify(&policies, "Bash", &call.input, &Value::Null);
    let created = warrant::protocol::clock::format_rfc3339(
        time::OffsetDateTime::from_unix_timestamp(NOW as i64 - minutes_ago * 60).expect("time"),
    );
    let doc = warrant::protocol::calls::call_packet(&call, &c, &policies, id, &created);
    let p =
        warrant::protocol::packet::parse_packet(&serde_json::to_vec(&doc).expect("json"), id).expect("valid packet");
    PacketEntry { file: format!("{id}.json").into(), arrived: NOW, owner: 4_000_000, packet: Arc::new(p) }
}

fn grant(id: &str, scope: Scope, index: u64, expires: Option<(&str, f64)>, max_uses: Option<u64>) -> Grant {
    Grant {
        grant_id: id.into(),
        scope,
        agent: "claude-code".into(),
        notebook: "project-1a2b3c".into(),
        action_class: "code.push".into(),
        tool: "Bash".into(),
        expires_at: expires.map(|(t, _)| t.to_owned()),
        expires_unix: expires.map(|(_, u)| u),
        max_uses,
        covers_destructive: false,
        workdir: None,
        packet_id: "cc-first".into(),
        principal: "alice".into(),
        key: "SHA256:S1I+LnIehTKTATEWkIjfe40E1haIYEbCmd6nU3nMHAQ".into(),
        decided_at: "2026-11-21T08:00:00Z".into(),
        reason: Some("feature branches".into()),
        chain_index: index,
    }
}

fn book() -> GrantBook {
    let mut b = GrantBook::default();
    let pattern = ToolPattern::parse("Bash(git push origin feature/*)").expect("pattern");
    b.apply(&GrantEvent::Issue(Box::new(grant("grant-pattern", Scope::Pattern(pattern), 3, None, None))));
    b.apply(&GrantEvent::Issue(Box::new(grant(
        "grant-session",
        Scope::Session("s-old".into()),
        5,
        Some(("2026-11-21T08:30:00Z", NOW - 1800.0)),
        None,
    ))));
    b.apply(&GrantEvent::Issue(Box::new(grant(
        "grant-once",
        Scope::Until,
        6,
        Some(("2026-11-22T09:00:00Z", NOW + 86_400.0)),
        Some(1),
    ))));
    b
}

fn state() -> State {
    let mut s = State::new(
        "/tmp/spool".into(),
        Some("alice".into()),
        Some("SHA256:S1I+LnIehTKTATEWkIjfe40E1haIYEbCmd6nU3nMHAQ".into()),
        false,
        Keymap::default_map(),
        NOW,
    );
    let uses = Uses {
        by_grant: HashMap::from([("grant-pattern".to_owned(), 2), ("grant-once".to_owned(), 1)]),
        granted: HashMap::from([
            ("cc-ran".to_owned(), "grant-pattern".to_owned()),
            // A claim an agent wrote for a call the grant does not cover: it hides nothing.
            ("cc-main".to_owned(), "grant-pattern".to_owned()),
        ]),
        withdrawals: HashMap::new(),
    };
    let snap = Snapshot {
        packets: vec![
            call_packet("cc-ran", "git push origin feature/login", "s-1", 3),
            call_packet("cc-covered", "git push origin feature/search", "s-2", 2),
            call_packet("cc-main", "git push origin main", "s-2", 1),
        ],
        uses: Arc::new(uses),
        ..Snapshot::default()
    };
    app::update(&mut s, Action::Scanned(snap));
    if let Some(job) = s.assess_job() {
        app::update(&mut s, Action::Assessed(Box::new(job.run())));
    }
    let report =
        VerifyReport { total: 7, root_hash: Some(format!("sha256:{}", "cd".repeat(32))), ..VerifyReport::default() };
    app::update(&mut s, Action::ChainVerified(Box::new(ChainView { report, grants: book(), ..ChainView::default() })));
    app::update(&mut s, Action::Resize { width: 80, height: 24 });
    s
}

fn key(s: &str) -> Action {
    Action::Key(Key::parse(s).expect("key"))
}

fn pending_ids(s: &State) -> Vec<String> {
    s.pending().iter().map(|e| e.packet.id.clone()).collect()
}

#[test]
fn a_call_that_ran_on_a_grant_leaves_pending_and_a_covered_one_names_its_grant() {
    let mut s = state();
    let ids = pending_ids(&s);
    assert!(!ids.contains(&"cc-ran".to_owned()), "ran on a grant: {ids:?}");
    assert!(ids.contains(&"cc-covered".to_owned()) && ids.contains(&"cc-main".to_owned()), "{ids:?}");
    let covered = s.snapshot.packet("cc-covered").expect("packet").packet.clone();
    assert_eq!(s.covering_grant(&covered).map(|g| g.grant_id.as_str()), Some("grant-pattern"));
    let main = s.snapshot.packet("cc-main").expect("packet").packet.clone();
    assert!(s.covering_grant(&main).is_none(), "main is not under feature/*");
    assert!(s.ran_on_grant(&main).is_none(), "a claim for a call the grant does not cover is not believed");
    // The detail of the covered packet says which grant covers it.
    let at = s.pending().iter().position(|e| e.packet.id == "cc-covered").expect("listed");
    for _ in 0..at {
        app::update(&mut s, key("j"));
    }
    let shown = screen(&s, 160, 48);
    assert!(shown.contains("covered by grant-pattern"), "{shown}");
}

#[test]
fn the_grants_view_lists_live_grants_first_with_their_uses_and_status() {
    let mut s = state();
    app::update(&mut s, key("7"));
    assert_eq!(s.pane, Pane::Grants);
    let rows: Vec<(&str, &str, String)> = s
        .grant_rows()
        .iter()
        .map(|r| (r.grant.grant_id.as_str(), r.status.as_str(), warrant::console::grants::uses_words(r)))
        .collect();
    assert_eq!(
        rows,
        vec![
            ("grant-pattern", "live", "2 uses".to_owned()),
            ("grant-session", "expired", "0 uses".to_owned()),
            ("grant-once", "used up", "1/1 uses".to_owned()),
        ]
    );
    insta::assert_snapshot!("grants_80x24", screen(&s, 80, 24));
    insta::assert_snapshot!("grants_160x48", screen(&s, 160, 48));
}

#[test]
fn x_revokes_the_selected_live_grant_with_a_reason_and_only_a_live_one() {
    let mut s = state();
    app::update(&mut s, key("7"));
    // An expired grant covers nothing: nothing to revoke.
    app::update(&mut s, key("j"));
    assert!(app::update(&mut s, key("x")).is_empty());
    assert_eq!(s.mode, Mode::Normal);
    assert!(s.flash.as_ref().is_some_and(|f| f.error && f.text.contains("expired")), "{:?}", s.flash);
    app::update(&mut s, key("k"));
    app::update(&mut s, key("x"));
    assert!(matches!(&s.mode, Mode::Input { .. }), "{:?}", s.mode);
    insta::assert_snapshot!("grants_revoke_reason_80x24", screen(&s, 80, 24));
    // No reason: nothing is signed.
    assert!(app::update(&mut s, key("enter")).is_empty());
    assert!(s.flash.as_ref().is_some_and(|f| f.text.contains("needs a reason")));
    for c in "done".chars() {
        app::update(&mut s, key(&c.to_string()));
    }
    // The reason leads to a y/n dialog like every other signed control (issue 32, item 12: it
    // signed on enter); n cancels, y signs.
    assert!(app::update(&mut s, key("enter")).is_empty());
    let Mode::RevokeConfirm(c) = &s.mode else { panic!("{:?}", s.mode) };
    assert_eq!((c.grant_id.as_str(), c.reason.as_str(), c.focus), ("grant-pattern", "done", app::Button::Cancel));
    let shown = screen(&s, 80, 24);
    assert!(shown.contains("Confirm: revoke grant grant-pattern") && shown.contains("[ Cancel ]"), "{shown}");
    insta::assert_snapshot!("grants_revoke_confirm_80x24", shown);
    assert!(app::update(&mut s, key("n")).is_empty());
    assert_eq!(s.mode, Mode::Normal);
    assert!(!s.signing);
    for k in ["x", "d", "o", "n", "e", "enter"] {
        assert!(app::update(&mut s, key(k)).is_empty(), "{k}");
    }
    let fx = app::update(&mut s, key("y"));
    assert_eq!(fx, vec![Effect::RevokeGrant { grant_id: "grant-pattern".into(), reason: "done".into() }]);
    assert!(s.signing);
    let fx = app::update(
        &mut s,
        Action::GrantRevoked(Ok(("grant-pattern".into(), 8, format!("sha256:{}", "ef".repeat(32))))),
    );
    assert!(!s.signing);
    assert!(s.flash.as_ref().is_some_and(|f| !f.error && f.text.contains("revoked grant-pattern")), "{:?}", s.flash);
    assert!(fx.contains(&Effect::VerifyChain { force: false }), "{fx:?}");
    // Esc on the reason signs nothing.
    app::update(&mut s, key("x"));
    assert!(app::update(&mut s, key("esc")).is_empty());
    assert_eq!(s.mode, Mode::Normal);
}

#[test]
fn read_only_consoles_list_grants_but_revoke_nothing() {
    let mut s = State::new("/tmp/spool".into(), None, None, true, Keymap::default_map(), NOW);
    let report = VerifyReport { total: 7, ..VerifyReport::default() };
    app::update(&mut s, Action::ChainVerified(Box::new(ChainView { report, grants: book(), ..ChainView::default() })));
    app::update(&mut s, key("7"));
    assert_eq!(s.grant_rows().len(), 3);
    assert!(app::update(&mut s, key("x")).is_empty());
    assert_eq!(s.mode, Mode::Normal);
    assert!(s.flash.as_ref().is_some_and(|f| f.error), "{:?}", s.flash);
}

#[test]
fn a_click_selects_a_grant_and_the_grants_tab() {
    use app::{MouseInput, MouseKind};
    let mut s = state();
    app::update(&mut s, Action::Resize { width: 160, height: 48 });
    let click = |column: u16, row: u16| Action::Mouse(MouseInput { kind: MouseKind::Click, column, row });
    let text = screen(&s, 160, 48);
    let lines: Vec<&str> = text.lines().collect();
    let tab_row = lines.iter().position(|l| l.contains("7 Gr")).expect("tabs");
    let col = lines[tab_row].find("7 Gr").map(|b| lines[tab_row][..b].chars().count()).expect("tab");
    app::update(&mut s, click(col as u16 + 2, tab_row as u16));
    assert_eq!(s.pane, Pane::Grants);
    let text = screen(&s, 160, 48);
    let row = text.lines().position(|l| l.contains("used up")).expect("the used-up grant's row");
    app::update(&mut s, click(10, row as u16));
    assert_eq!(s.grant_rows()[s.selection(Pane::Grants)].grant.grant_id, "grant-once");
}

/// Keys as the event loop gives them: each key, then a frame drawn at the terminal's size.
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

fn read_dialog(s: &mut State) {
    app::update(s, Action::Drawn { width: 80, height: 24 });
    for _ in 0..20 {
        if matches!(&s.mode, Mode::Confirm(c) if c.read) {
            return;
        }
        press(s, &["pagedown"]);
    }
    panic!("dialog never read: {:?}", s.mode);
}

fn select(s: &mut State, id: &str) {
    app::update(s, key("1"));
    let at = s.pending().iter().position(|e| e.packet.id == id).expect("listed");
    app::update(s, key("g"));
    for _ in 0..at {
        app::update(s, key("j"));
    }
}

fn dialog_grant(s: &State) -> Option<warrant::protocol::grant::GrantInput> {
    match &s.mode {
        Mode::Confirm(c) => c.grant.as_deref().cloned(),
        other => panic!("no dialog: {other:?}"),
    }
}

// `s` pressed seconds apart (issue 32, item 4): the clock moves between presses, and each press
// still takes the next scope (it found the current one by its expiry, computed from the clock, so
// a press more than a second later went back to once); the dialog's hint names the key.
#[test]
fn s_pressed_seconds_apart_still_walks_every_scope() {
    let mut s = state();
    select(&mut s, "cc-main");
    press(&mut s, &["a"]);
    assert!(screen(&s, 160, 48).contains("s grant scope"), "{}", screen(&s, 160, 48));
    let mut scopes = vec![];
    let mut expiries = vec![];
    for i in 1..=5 {
        app::update(&mut s, Action::Tick(NOW + 7.0 * f64::from(i)));
        press(&mut s, &["s"]);
        let g = dialog_grant(&s);
        scopes.push(g.as_ref().map(|g| g.scope.as_str().to_owned()));
        expiries.push(g.and_then(|g| g.expires_at));
    }
    assert_eq!(
        scopes,
        vec![
            Some("session".to_owned()),
            Some("until".to_owned()),
            Some("until".to_owned()),
            Some("pattern".to_owned()),
            None
        ],
        "session, 1 h, 8 h, the argument, once again"
    );
    assert_ne!(expiries[1], expiries[2], "1 hour and 8 hours are two choices");
    // A refusal's dialog offers no grant, and says nothing of `s`.
    press(&mut s, &["esc", "r"]);
    let text = screen(&s, 160, 48);
    assert!(!text.contains("grant scope"), "{text}");
}

// The approval dialog of one call: `s` cycles once → session → 1 h → 8 h → this argument as a
// pattern → once; each grant is shown in words with the earlier calls it would have covered, the
// dialog must be read again, and *Sign* signs the approval with the grant.
#[test]
fn s_in_the_approval_dialog_chooses_a_grant_shown_in_words_and_signed_with_the_approval() {
    let mut s = state();
    select(&mut s, "cc-main");
    press(&mut s, &["a"]);
    assert_eq!(dialog_grant(&s), None);
    assert!(screen(&s, 80, 24).contains("once: this call only"));
    read_dialog(&mut s);
    press(&mut s, &["s"]);
    let g = dialog_grant(&s).expect("a session grant");
    assert_eq!(g.scope, Scope::Session("s-2".into()));
    assert!(matches!(&s.mode, Mode::Confirm(c) if !c.read), "a changed dialog is read again");
    let shown = screen(&s, 160, 48);
    assert!(shown.contains("GRANT") && shown.contains("in session s-2"), "{shown}");
    assert!(shown.contains("1 earlier call in this spool") && shown.contains("cc-covered"), "{shown}");
    let mut scopes = vec![];
    for _ in 0..4 {
        press(&mut s, &["s"]);
        scopes.push(dialog_grant(&s).map(|g| g.scope.as_str().to_owned()));
    }
    assert_eq!(
        scopes,
        vec![Some("until".to_owned()), Some("until".to_owned()), Some("pattern".to_owned()), None],
        "1 h, 8 h, the argument, once again"
    );
    press(&mut s, &["s"]);
    read_dialog(&mut s);
    let fx = press(&mut s, &["y"]);
    match fx.as_slice() {
        [Effect::Sign { packet, grant: Some(g), .. }] => {
            assert_eq!(packet.id, "cc-main");
            assert_eq!((g.packet_id.as_str(), g.tool.as_str()), ("cc-main", "Bash"));
            assert_eq!(g.scope, Scope::Session("s-2".into()));
        }
        other => panic!("{other:?}"),
    }
    // The result says which grant was signed, or that it was not.
    app::update(
        &mut s,
        Action::Signed(Ok(app::SignedSummary {
            corrected: None,
            cosigned: None,
            packet_id: "cc-main".into(),
            verdict: warrant::protocol::decision::Verdict::Approve,
            chain_index: 8,
            entry_hash: format!("sha256:{}", "ef".repeat(32)),
            grant: Some(Err("the chain is locked".into())),
        })),
    );
    assert!(s.flash.as_ref().is_some_and(|f| f.error && f.text.contains("grant was NOT recorded")), "{:?}", s.flash);
}

#[test]
fn colon_grant_opens_the_dialog_with_that_grant_or_says_why_not() {
    let mut s = state();
    select(&mut s, "cc-main");
    app::update(&mut s, Action::GrantDialog("pattern Bash(git push origin *)".into()));
    let g = dialog_grant(&s).expect("the pattern grant");
    assert_eq!(g.scope.as_str(), "pattern");
    app::update(&mut s, key("esc"));
    // A pattern that does not cover the call itself: no dialog, the reason.
    app::update(&mut s, Action::GrantDialog("pattern Bash(git push origin feature/*)".into()));
    assert_eq!(s.mode, Mode::Normal);
    assert!(s.flash.as_ref().is_some_and(|f| f.error && f.text.contains("does not cover")), "{:?}", s.flash);
    app::update(&mut s, Action::GrantDialog("until 2h".into()));
    assert_eq!(dialog_grant(&s).map(|g| g.scope), Some(Scope::Until));
    app::update(&mut s, key("esc"));
    app::update(&mut s, Action::GrantDialog("forever".into()));
    assert_eq!(s.mode, Mode::Normal);
}
