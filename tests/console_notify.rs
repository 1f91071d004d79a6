//! Notifications and class timeouts in the console, without a terminal. `update`
//! emits `Effect::Notify` for packets that need the principal and are new since start-up and
//! `Effect::Title` when the pending count changes; a packet past its class's `refuse_after` is
//! shown timed out and can only be refused, and nothing is signed for it; the notify command (a
//! real shell) gets the packet's fields made inert.
#![cfg(feature = "console")]

use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use warrant::console::app::{self, Action, Effect, State};
use warrant::console::keymap::Keymap;
use warrant::console::notify::{self, Notice};
use warrant::protocol::chain::VerifyReport;
use warrant::protocol::graduation::PolicySet;
use warrant::store::spool::{ChainView, PacketEntry, Snapshot};

use crate::screen as support_screen;
use support_screen::screen;

/// 2026-11-21T09:00:00Z.
const NOW: f64 = 1_795_251_600.0;

fn packet(id: &str, agent: &str, class: &str, summary: &str, minutes_ago: i64) -> PacketEntry {
    let created = warrant::protocol::clock::format_rfc3339(
        time::OffsetDateTime::from_unix_timestamp(NOW as i64 - minutes_ago * 60).expect("time"),
    );
    let v: Value = json!({
        "type": "trust_graduation_approval_packet",
        "packet_id": id,
        "agent": agent,
        "summary": summary,
        "action_class": class,
        "proposed_action": {"to": "dana@northwind.example"},
        "decision": {"status": "review_required", "action_class": class, "reason": "Awaiting the principal's signed decision."},
        "external_actions": 0,
        "created_at": created,
    });
    let p = warrant::protocol::packet::parse_packet(&serde_json::to_vec(&v).expect("json"), id).expect("valid packet");
    let arrived = NOW - (minutes_ago * 60) as f64;
    PacketEntry { file: format!("{id}.json").into(), arrived, owner: 4_000_000, packet: Arc::new(p) }
}

fn snap(packets: Vec<PacketEntry>) -> Snapshot {
    Snapshot { packets, receipts: vec![], invalid: vec![], ..Snapshot::default() }
}

/// A scan, then its assessment as the event loop makes it; every effect `update` returned.
fn scanned(s: &mut State, snapshot: Snapshot) -> Vec<Effect> {
    let mut fx = app::update(s, Action::Scanned(snapshot));
    if let Some(job) = s.assess_job() {
        fx.extend(app::update(s, Action::Assessed(Box::new(job.run()))));
    }
    fx
}

fn verified(s: &mut State) -> Vec<Effect> {
    let report = VerifyReport {
        total: 0,
        root_hash: Some(format!("sha256:{}", "cd".repeat(32))),
        signatures_verified: 0,
        findings: vec![],
        torn_tail: None,
    };
    app::update(
        s,
        Action::ChainVerified(Box::new(ChainView { report, decisions: HashMap::new(), ..ChainView::default() })),
    )
}

fn state(policy: &str, read_only: bool) -> State {
    State::new(
        "/tmp/spool".into(),
        (!read_only).then(|| "alice".to_owned()),
        (!read_only).then(|| "SHA256:S1I+LnIehTKTATEWkIjfe40E1haIYEbCmd6nU3nMHAQ".to_owned()),
        read_only,
        Keymap::default_map(),
        NOW,
    )
    .with_policies(Arc::new(PolicySet::from_toml(policy).expect("policy")))
}

fn key(k: &str) -> Action {
    Action::Key(warrant::console::keymap::Key::parse(k).expect("key"))
}

fn quote() -> PacketEntry {
    packet("p-quote", "agent-scribe", "email.send.external", "Quote for 40 units to Dana", 2)
}

fn notified(fx: &[Effect]) -> Vec<String> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Notify { packets, .. } => Some(packets.iter().map(|n| n.id.clone()).collect::<Vec<_>>()),
            _ => None,
        })
        .flatten()
        .collect()
}

// Packets there when the console starts are not announced; a packet that needs the principal
// and arrives later is, once, with the pending count; the title follows the count.
#[test]
fn only_new_packets_that_need_the_principal_are_announced() {
    let mut s = state("", false);
    let fx = scanned(&mut s, snap(vec![quote()]));
    assert!(notified(&fx).is_empty(), "start-up packets are not announced: {fx:?}");
    assert!(fx.contains(&Effect::Title { pending: 1 }), "{fx:?}");
    assert!(notified(&verified(&mut s)).is_empty());

    let new = packet("p-new", "agent-planner", "calendar.create", "Kick-off \u{1b}]0;pwned\u{7} now", 0);
    let fx = scanned(&mut s, snap(vec![quote(), new.clone()]));
    assert_eq!(notified(&fx), vec!["p-new".to_owned()], "{fx:?}");
    assert!(fx.iter().any(|e| matches!(e, Effect::Notify { pending: 2, .. })));
    assert!(fx.contains(&Effect::Title { pending: 2 }), "{fx:?}");

    // The same spool scanned again: nothing new, no second notice, no title change.
    let fx = scanned(&mut s, snap(vec![quote(), new]));
    assert!(notified(&fx).is_empty() && !fx.iter().any(|e| matches!(e, Effect::Title { .. })), "{fx:?}");
    // Ticks, keys and frames announce nothing.
    assert!(app::update(&mut s, Action::Tick(NOW + 1.0)).is_empty());
}

// The notify command's environment: the packet's fields made inert (no escape or control
// character reaches it) and cut; the title is warrant's own text.
#[test]
fn the_notify_environment_is_inert() {
    let n = Notice {
        id: "p-1".into(),
        class: "email.send.external".into(),
        agent: "agent\u{202e}x".into(),
        summary: format!("hi \u{1b}[2J\u{7}\n{}", "z".repeat(500)),
    };
    let env: HashMap<&str, String> = n.env(3).into_iter().collect();
    assert_eq!(env["WARRANT_PACKET_ID"], "p-1");
    assert_eq!(env["WARRANT_CLASS"], "email.send.external");
    assert_eq!(env["WARRANT_AGENT"], "agent⟨U+202E⟩x");
    assert!(env["WARRANT_SUMMARY"].starts_with("hi ␛[2J␇␊zzz"), "{}", env["WARRANT_SUMMARY"]);
    assert!(env["WARRANT_SUMMARY"].ends_with('…'));
    assert!(env.values().all(|v| !v.chars().any(warrant::protocol::text::is_unsafe)));
    assert_eq!(env["WARRANT_PENDING"], "3");
    assert_eq!(notify::title(3), "warrant — 3 pending");
}

// A real command, run as the console's runner runs it (`notify::spawn`: no shell but the one
// the principal names, output on /dev/null): a shell script writes its environment to a file.
#[test]
fn the_notify_command_receives_inert_text() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("env.txt");
    let script = dir.path().join("notify.sh");
    std::fs::write(&script, "#!/bin/sh\nenv | grep '^WARRANT_' | sort > \"$1\"\necho to-stdout\necho to-stderr >&2\n")
        .expect("script");
    let command = vec!["/bin/sh".to_owned(), script.display().to_string(), out.display().to_string()];
    let n = Notice {
        id: "p-evil".into(),
        class: "email.send.external".into(),
        agent: "agent-scribe".into(),
        summary: "Pay now\u{1b}]52;c;ZWNobyBwd25lZA==\u{7}; $(touch /tmp/x) `id`".into(),
    };
    let status = notify::spawn(&command, &n, 1).expect("spawn").wait().expect("wait");
    assert!(status.success());
    let text = std::fs::read_to_string(&out).expect("env file");
    assert!(!text.contains('\u{1b}') && !text.contains('\u{7}'), "{text:?}");
    assert!(text.contains("WARRANT_PACKET_ID=p-evil\n"), "{text}");
    assert!(text.contains("WARRANT_AGENT=agent-scribe\n"), "{text}");
    assert!(text.contains("WARRANT_SUMMARY=Pay now␛]52;c;ZWNobyBwd25lZA==␇; $(touch /tmp/x) `id`\n"), "{text}");
    assert!(text.contains("WARRANT_PENDING=1\n"), "{text}");
    assert!(notify::spawn(&["/nonexistent/notify".to_owned()], &n, 1).is_err());
}

const UNSIGNED: &str =
    "[timeouts.\"email.*\"]\nrefuse_after = \"PT1M\"\n[timeouts.\"calendar.create\"]\nwait = \"forever\"\n";

// Past its class's `refuse_after`, a packet is timed out: shown so, it can only be refused, and
// the console signs nothing for it. The wait counts from when the packet arrived, so a packet
// that declares an old `created_at` does not time out early.
#[test]
fn a_timed_out_packet_can_only_be_refused_and_nothing_is_signed_for_it() {
    let mut s = state(UNSIGNED, false);
    let mut backdated = packet("p-old", "agent-scribe", "email.send.external", "Backdated", 600);
    backdated.arrived = NOW;
    scanned(
        &mut s,
        snap(vec![quote(), packet("p-cal", "agent-planner", "calendar.create", "Kick-off", 300), backdated]),
    );
    let fx = verified(&mut s);
    assert!(!fx.iter().any(|e| matches!(e, Effect::Sign { .. })), "nothing is signed on its own: {fx:?}");
    let entry = |s: &State, id: &str| s.snapshot.packet(id).expect("packet").clone();
    assert_eq!(s.timed_out(&entry(&s, "p-quote")), Some(std::time::Duration::from_secs(60)));
    assert_eq!(s.timed_out(&entry(&s, "p-cal")), None, "wait = forever: as long as the host waits");
    assert_eq!(s.timed_out(&entry(&s, "p-old")), None, "counted from its arrival, not its created_at");
    let fx = app::update(&mut s, Action::Tick(NOW + 61.0));
    assert!(!fx.iter().any(|e| matches!(e, Effect::Sign { .. })), "{fx:?}");
    assert_eq!(s.timed_out(&entry(&s, "p-old")), Some(std::time::Duration::from_secs(60)));
    // Approving it is refused, with the reason; refusing it opens the dialog as usual.
    let pos = s.pending().iter().position(|e| e.packet.id == "p-quote").expect("pending");
    for _ in 0..pos {
        app::update(&mut s, key("j"));
    }
    assert_eq!(s.selected_packet().map(|p| p.id.clone()).as_deref(), Some("p-quote"));
    app::update(&mut s, key("a"));
    let flash = s.flash.as_ref().map(|f| f.text.clone()).unwrap_or_default();
    assert!(flash.contains("timed out after 1m") && flash.contains("only be refused"), "{flash}");
    assert!(matches!(s.mode, app::Mode::Normal), "no approval dialog: {:?}", s.mode);
}

// The list marks a timed-out packet with ⏱ and the detail says it timed out and what follows.
#[test]
fn timed_out_packets_on_screen() {
    let mut s = state(UNSIGNED, false);
    scanned(&mut s, snap(vec![quote(), packet("p-cal", "agent-planner", "calendar.create", "Kick-off", 300)]));
    verified(&mut s);
    app::update(&mut s, Action::Resize { width: 100, height: 30 });
    let shown = screen(&s, 100, 30);
    assert!(shown.contains("⏱2m"), "{shown}");
    assert!(shown.contains("TIMED OUT after 1m"), "{shown}");
    insta::assert_snapshot!("timed_out_100x30", shown);
}

const SIGNED: &str = "[timeouts.\"email.*\"]\nrefuse_after = \"PT1M\"\nsign_refusal = true\n\
                      [timeouts.\"calendar.create\"]\nrefuse_after = \"PT1M\"\n";

/// The packets `fx` asks to refuse as system decisions, with the reason to sign.
fn refusals(fx: &[Effect]) -> Vec<(String, String)> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::RefuseTimedOut { packet, reason, .. } => Some((packet.id.clone(), reason.clone())),
            _ => None,
        })
        .collect()
}

fn ids(fx: &[Effect]) -> Vec<String> {
    refusals(fx).into_iter().map(|(id, _)| id).collect()
}

fn refused(id: &str, result: Result<Option<app::SignedSummary>, String>) -> Action {
    Action::TimeoutRefused { packet_id: id.into(), after: std::time::Duration::from_secs(60), result }
}

fn summary(id: &str, index: u64) -> app::SignedSummary {
    app::SignedSummary {
        corrected: None,
        cosigned: None,
        packet_id: id.into(),
        verdict: warrant::protocol::decision::Verdict::Refuse,
        chain_index: index,
        entry_hash: format!("sha256:{}", "ef".repeat(32)),
        grant: None,
    }
}

// With `sign_refusal = true`, a timed-out packet's refusal is asked for as a system decision:
// only once the chain verified, one packet at a time, once per packet (a failure is shown and not
// tried again; a packet decided elsewhere first is quietly fine), never for a class without
// `sign_refusal`, never read-only; the signed refusal moves no evidence and, once in the chain,
// takes the packet off Pending without counting in the agent's record.
#[test]
fn a_timed_out_packet_of_a_sign_refusal_class_is_refused_once_as_a_system_decision() {
    let mut s = state(SIGNED, false);
    let packets = vec![
        quote(),
        packet("p-other", "agent-scribe", "email.send.external", "Second quote", 3),
        packet("p-cal", "agent-planner", "calendar.create", "Kick-off", 5),
        packet("p-fresh", "agent-scribe", "email.send.internal", "Minutes", 0),
    ];
    let fx = scanned(&mut s, snap(packets.clone()));
    assert!(ids(&fx).is_empty(), "nothing is signed before the chain is verified: {fx:?}");

    let fx = verified(&mut s);
    let reason = "timed out after 1m undecided (policy.toml [timeouts]): a system decision, no person refused it";
    assert_eq!(refusals(&fx), [("p-quote".to_owned(), reason.to_owned())], "exactly one, the first: {fx:?}");
    assert!(!fx.iter().any(|e| matches!(e, Effect::Sign { .. } | Effect::SignBatch { .. })), "{fx:?}");
    assert!(s.signing, "one signature at a time");
    assert!(ids(&app::update(&mut s, Action::Tick(NOW + 1.0))).is_empty(), "nothing more while it is signed");

    // Signed: said so, no evidence row; the next timed-out packet is asked for, p-quote never again.
    let fx = app::update(&mut s, refused("p-quote", Ok(Some(summary("p-quote", 4)))));
    let flash = s.flash.clone().expect("flash");
    assert!(
        flash.text.starts_with("p-quote refused: timed out after 1m (signed as a system decision) · record 4")
            && !flash.error,
        "{flash:?}"
    );
    assert!(fx.contains(&Effect::VerifyChain { force: false }), "{fx:?}");
    assert_eq!(ids(&fx), ["p-other"], "{fx:?}");
    assert_eq!(s.evidence_count("email.send.external"), 0, "a system decision is no evidence");
    // Decided elsewhere first: quietly nothing, and nothing is asked for again.
    let fx = app::update(&mut s, refused("p-other", Ok(None)));
    assert_eq!(s.flash.as_ref().map(|f| f.text.as_str()), Some(flash.text.as_str()));
    assert!(ids(&fx).is_empty(), "p-cal's class does not sign its refusal: {fx:?}");

    // The chain then records p-quote's refusal: it leaves Pending, and is not in the agent's record.
    let decision = warrant::store::spool::ChainDecision {
        cosigners: Vec::new(),
        quorum: None,
        signed: None,
        verdict: warrant::protocol::decision::Verdict::Refuse,
        principal: "alice".into(),
        reason: Some(reason.into()),
        decided_at: "2026-11-21T09:00:05Z".into(),
        packet_hash: s.snapshot.packet("p-quote").expect("p-quote").packet.content_hash.clone(),
        chain_index: 4,
        entry_hash: format!("sha256:{}", "ef".repeat(32)),
        agent: "agent-scribe".into(),
        action_class: "email.send.external".into(),
        system: Some(warrant::protocol::decision::SystemCause::Timeout),
        corrected: None,
    };
    let report = VerifyReport { total: 4, root_hash: None, signatures_verified: 4, findings: vec![], torn_tail: None };
    let decisions = HashMap::from([("p-quote".to_owned(), std::sync::Arc::new(decision))]);
    let fx =
        app::update(&mut s, Action::ChainVerified(Box::new(ChainView { report, decisions, ..ChainView::default() })));
    assert!(ids(&fx).is_empty(), "{fx:?}");
    assert!(!s.pending().iter().any(|e| e.packet.id == "p-quote"), "a refused packet leaves Pending");
    assert!(s.agent_record("agent-scribe", "email.send.external").is_none(), "nobody judged the agent");
    // The Decided list says the system refused it, not a person.
    app::update(&mut s, key("2"));
    app::update(&mut s, Action::Resize { width: 100, height: 30 });
    let shown = screen(&s, 100, 30);
    assert!(shown.contains("⏱ TIMEOUT") && shown.contains("system"), "{shown}");
    assert!(shown.contains("refused as a system decision"), "{shown}");
    app::update(&mut s, key("1"));

    // A minute on, p-fresh times out: asked for once; a failure is shown, never tried again.
    let fx = app::update(&mut s, Action::Tick(NOW + 61.0));
    assert_eq!(ids(&fx), ["p-fresh"], "{fx:?}");
    app::update(&mut s, refused("p-fresh", Err("the chain is locked".into())));
    let flash = s.flash.clone().expect("flash");
    assert!(
        flash.error
            && flash
                .text
                .contains("p-fresh timed out after 1m, but its system refusal was not signed: the chain is locked"),
        "{flash:?}"
    );
    for t in 62..70 {
        assert!(ids(&app::update(&mut s, Action::Tick(NOW + f64::from(t)))).is_empty(), "no retry storm");
    }
    assert!(ids(&scanned(&mut s, snap(packets.clone()))).is_empty());

    // Read-only, nothing is ever signed.
    let mut r = state(SIGNED, true);
    let mut fx = scanned(&mut r, snap(packets));
    fx.extend(verified(&mut r));
    fx.extend(app::update(&mut r, Action::Tick(NOW + 61.0)));
    assert!(ids(&fx).is_empty(), "{fx:?}");
}
