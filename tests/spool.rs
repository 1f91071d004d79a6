//! Deciding on real files: the spool scan, `decide`, and what it refuses so the chain stays
//! verifiable whatever agents publish.

use serde_json::{Value, json};
use warrant::protocol::chain::{self, Check, VerifyOptions};
use warrant::protocol::decision::Verdict;
use warrant::protocol::keys::Principal;
use warrant::protocol::packet::DecisionState;
use warrant::store::chain_file;
use warrant::store::spool::{self, DecideError, Scanner, Spool};

const AT: &str = "2026-11-21T09:00:00Z";

use crate::signed_spool;
use signed_spool::Fixture;

fn fixture() -> Fixture {
    signed_spool::fixture_with_seed(5)
}

fn portable(id: &str, agent: &str, class: &str, status: &str) -> Value {
    json!({
        "type": "trust_graduation_approval_packet", "packet_id": id, "agent": agent, "action_class": class,
        "proposed_action": {"text": "hello"},
        "decision": {"status": status, "action_class": class, "reason": "test"},
        "external_actions": 0
    })
}

/// This file's helpers on the shared fixture (a trait: other files add their own).
trait Helpers {
    fn publish(&self, id: &str, doc: &Value);
    fn packet(&self, id: &str) -> std::sync::Arc<warrant::protocol::packet::Packet>;
    fn decide(&self, id: &str, verdict: Verdict, reason: Option<&str>) -> Result<spool::Decided, DecideError>;
    fn verify(&self) -> chain::VerifyReport;
}

impl Helpers for Fixture {
    fn publish(&self, id: &str, doc: &Value) {
        self.spool.publish(&self.spool.packets_dir(), id, doc).expect("publish");
    }
    fn packet(&self, id: &str) -> std::sync::Arc<warrant::protocol::packet::Packet> {
        let snap = Scanner::new().scan(&self.spool).expect("scan");
        std::sync::Arc::clone(&snap.packet(id).unwrap_or_else(|| panic!("no packet {id}: {:?}", snap.invalid)).packet)
    }
    fn decide(&self, id: &str, verdict: Verdict, reason: Option<&str>) -> Result<spool::Decided, DecideError> {
        spool::decide(&self.spool, &self.principal, &self.pinned, &self.packet(id), verdict, reason, AT)
    }
    fn verify(&self) -> chain::VerifyReport {
        spool::verify_chain(&self.spool, &self.pinned).expect("verify").report
    }
}

// A packet with a blank agent or blank trace id is decided with agent `unknown`, and the chain
// still verifies: no packet can poison the chain.
#[test]
fn blank_agent_and_trace_cannot_poison_the_chain() {
    let f = fixture();
    let mut doc = portable("blank", "   ", "draft.compose", "review_required");
    doc["trace_id"] = json!("");
    f.publish("blank", &doc);
    let d = f.decide("blank", Verdict::Approve, None).expect("decide");
    assert_eq!(d.appended.record["agent"], "unknown");
    assert_eq!(d.appended.record["trace_id"], "warrant:blank");
    let report = f.verify();
    assert!(report.is_valid(), "{:?}", report.findings);
    // And the next decision still goes through.
    f.publish("next", &portable("next", "agent-a", "draft.compose", "review_required"));
    f.decide("next", Verdict::Refuse, Some("no")).expect("second decision");
    assert_eq!(f.verify().total, 2);
}

// Runtime packets whose actionClass is not a class id are invalid rather than decidable.
#[test]
fn runtime_packets_need_a_classifiable_action() {
    let f = fixture();
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/conformance/trust-graduation/packets/js-reference/01-email-send-external.packet.json"
    );
    let mut doc: Value = serde_json::from_slice(&std::fs::read(path).expect("fixture")).expect("json");
    doc["actionClass"] = json!("  ");
    f.publish("blank-class", &doc);
    let snap = Scanner::new().scan(&f.spool).expect("scan");
    assert!(snap.packets.is_empty());
    assert!(snap.invalid[0].reason.to_string().contains("actionClass"), "{}", snap.invalid[0].reason);
}

// A key pinned for another principal (a renamed principal) is caught before anything is
// appended.
#[test]
fn a_record_that_would_not_verify_is_not_appended() {
    let f = fixture();
    f.publish("p", &portable("p", "agent-a", "draft.compose", "review_required"));
    let bob = Principal::from_seed("bob", &[5; 32]); // alice's key, bob's name
    let err =
        spool::decide(&f.spool, &bob, &f.pinned, &f.packet("p"), Verdict::Approve, None, AT).expect_err("must refuse");
    assert!(matches!(err, DecideError::WouldNotVerify(ref m) if m.contains("pinned for")), "{err}");
    assert!(!f.spool.chain_path().exists() || std::fs::read(f.spool.chain_path()).expect("chain").is_empty());
    assert!(!f.spool.decision_path("p").exists());
}

// Human-only and blocked packets cannot be approved; they can be refused.
#[test]
fn human_only_and_blocked_cannot_be_approved() {
    let f = fixture();
    // The third case declares review_required for an alias of payment.initiate: the registry's
    // human-only class wins over what the agent declares (trust-graduation.md §3.2 rule a).
    for (id, class, status, effective) in [
        ("pay", "payment.initiate", "human_only", DecisionState::HumanOnly),
        ("stop", "tool.call.local", "blocked", DecisionState::Blocked),
        ("spend", "payment.spend", "review_required", DecisionState::HumanOnly),
    ] {
        f.publish(id, &portable(id, "agent-b", class, status));
        let err = f.decide(id, Verdict::Approve, None).expect_err("approval must be refused");
        assert!(matches!(err, DecideError::NotApprovable { state, .. } if state == effective), "{id}: {err}");
        f.decide(id, Verdict::Refuse, Some("do it by hand")).expect("refusal is fine");
    }
    assert_eq!(f.verify().total, 3);
}

// Deciding twice is refused; a refusal needs a reason; an unparsable chain refuses signing.
#[test]
fn double_decisions_reasonless_refusals_and_broken_chains_are_refused() {
    let f = fixture();
    f.publish("p", &portable("p", "agent-a", "draft.compose", "review_required"));
    assert!(matches!(f.decide("p", Verdict::Refuse, Some("  ")), Err(DecideError::ReasonRequired)));
    f.decide("p", Verdict::Approve, Some("fine")).expect("first");
    assert!(matches!(f.decide("p", Verdict::Refuse, Some("changed my mind")), Err(DecideError::AlreadyDecided { .. })));
    f.publish("q", &portable("q", "agent-a", "draft.compose", "review_required"));
    let mut text = std::fs::read_to_string(f.spool.chain_path()).expect("chain");
    text = text.replacen("\"fine\"", "\"FINE\"", 1);
    std::fs::write(f.spool.chain_path(), text).expect("tamper");
    let err = f.decide("q", Verdict::Approve, None).expect_err("broken chain");
    assert!(matches!(err, DecideError::ChainBroken(_)), "{err}");
    let lines = std::fs::read_to_string(f.spool.chain_path()).expect("chain").lines().count();
    assert_eq!(lines, 1, "nothing was appended to the broken chain");
}

// A decision file lost after its record was appended is restored from the chain by the next
// decision, and it verifies.
#[test]
fn lost_decision_files_are_restored_from_the_chain() {
    let f = fixture();
    f.publish("a", &portable("a", "agent-a", "draft.compose", "review_required"));
    f.publish("b", &portable("b", "agent-a", "draft.compose", "review_required"));
    let first = f.decide("a", Verdict::Approve, Some("ok")).expect("a");
    let mut original: Value =
        serde_json::from_slice(&std::fs::read(&first.decision_file).expect("file")).expect("json");
    // The checkpoint signed after the append is not in the chain, so a restored file has none.
    assert!(original.as_object_mut().and_then(|m| m.remove("checkpoint")).is_some_and(|c| c.is_object()));
    std::fs::remove_file(&first.decision_file).expect("lose it");
    f.decide("b", Verdict::Approve, None).expect("b");
    let restored: Value =
        serde_json::from_slice(&std::fs::read(&first.decision_file).expect("restored")).expect("json");
    assert_eq!(restored, original);
    let packet = f.packet("a");
    let v = warrant::protocol::decision::verify_decision_file(&restored, "a", Some(&packet.content_hash), &f.pinned)
        .expect("verifies");
    assert_eq!(v.reason.as_deref(), Some("ok"));
}

// Unsigned copies of the reason and decision in a record must agree with the signed document.
#[test]
fn unsigned_metadata_must_match_the_signed_document() {
    let f = fixture();
    f.publish("p", &portable("p", "agent-a", "draft.compose", "review_required"));
    let d = f.decide("p", Verdict::Approve, Some("fine")).expect("decide");
    let Value::Object(rec) = d.appended.record else { panic!("record") };
    assert_eq!(warrant::protocol::decision::check_record_signature(&rec, &f.pinned), Ok(true));
    for (path, value) in [("reason", json!("something else")), ("decision", json!("refuse"))] {
        let mut bad = rec.clone();
        let meta = bad.get_mut("metadata").and_then(Value::as_object_mut).expect("metadata");
        if path == "reason" {
            meta.insert("reason".into(), value);
        } else {
            meta.get_mut("approval").and_then(Value::as_object_mut).expect("approval").insert("decision".into(), value);
        }
        let err = warrant::protocol::decision::check_record_signature(&bad, &f.pinned).expect_err(path);
        let field = if path == "reason" { "metadata.reason" } else { "metadata.approval.decision" };
        assert_eq!(err, warrant::protocol::decision::RecordError::Disagrees { field, what: "decision" });
        let findings = chain::check_new_record(&bad, Some(&f.pinned));
        assert!(findings.iter().any(|x| x.check == Check::Signature));
    }
}

// The scanner parses a file again only when it changed, and reports deletions.
#[test]
fn scanner_is_incremental_and_sees_changes() {
    let f = fixture();
    let mut scanner = Scanner::new();
    f.publish("p", &portable("p", "agent-a", "draft.compose", "review_required"));
    assert_eq!(scanner.scan(&f.spool).expect("scan").packets.len(), 1);
    f.publish("p", &portable("p", "agent-z", "draft.compose", "review_required"));
    let snap = scanner.scan(&f.spool).expect("scan");
    assert_eq!(snap.packets[0].packet.agent, "agent-z");
    std::fs::remove_file(f.spool.packets_dir().join("p.json")).expect("rm");
    assert!(scanner.scan(&f.spool).expect("scan").packets.is_empty());
    // Dot-files and non-JSON names are work in progress, never read.
    std::fs::write(f.spool.packets_dir().join(".p.json.tmp"), b"{").expect("tmp");
    std::fs::write(f.spool.packets_dir().join("notes.txt"), b"x").expect("txt");
    let snap = scanner.scan(&f.spool).expect("scan");
    assert!(snap.packets.is_empty() && snap.invalid.is_empty());
    // The verified chain of an empty spool is valid and empty.
    let report = chain_file::verify_file(
        &f.spool.chain_path(),
        VerifyOptions { pinned: Some(&f.pinned), strict_signatures: true },
    )
    .expect("verify");
    assert!(report.is_valid() && report.total == 0);
}

/// A scan for a listing (`Scanner::headers_only`) finds the same packets, invalid files
/// included, with the same headers and `content_hash` as a full scan, and keeps none of their
/// bodies.
#[test]
fn a_headers_only_scan_keeps_every_header_and_hash_and_no_body() {
    let f = fixture();
    for (id, agent) in [("h1", "agent-a"), ("h2", "agent-b")] {
        let mut doc = portable(id, agent, "draft.compose", "review_required");
        doc["context"] = json!({"why": "a test"});
        doc["evidence"] = json!([{"label": "approved"}]);
        f.publish(id, &doc);
    }
    std::fs::write(f.spool.packets_dir().join("broken.json"), b"{").expect("write");
    let full = Scanner::new().scan(&f.spool).expect("scan");
    let light = Scanner::new().headers_only().scan(&f.spool).expect("scan");
    assert_eq!(light.invalid, full.invalid);
    assert_eq!(light.packets.len(), 2);
    for (l, w) in light.packets.iter().zip(&full.packets) {
        let (l, w) = (&l.packet, &w.packet);
        assert_eq!((&l.id, &l.agent, &l.action_class, &l.summary), (&w.id, &w.agent, &w.action_class, &w.summary));
        assert_eq!((&l.content_hash, l.state, &l.created_at), (&w.content_hash, w.state, &w.created_at));
        assert!(
            !w.raw.is_null() && !w.proposed_action().is_null() && !w.context().is_null() && !w.evidence().is_null()
        );
        assert!(l.raw.is_null() && l.proposed_action().is_null() && l.context().is_null() && l.evidence().is_null());
    }
}

/// A listing's cache (`Scanner::save_listing`, `load_listing`) gives the next listing exactly
/// what a fresh scan finds: a packet rewritten in place with the same size and its modification
/// time set back is read again (its change time moved), a removed one is gone, a new one is
/// there, an invalid file stays listed as invalid; a cache that does not parse is not used.
#[test]
fn a_listing_cache_never_hides_a_changed_removed_or_new_packet() {
    let f = fixture();
    let dir = f.dir.path().join("copies");
    let cache = dir.join("listing.json");
    for id in ["c1", "c2", "c3"] {
        f.publish(id, &portable(id, "agent-a", "draft.compose", "review_required"));
    }
    std::fs::write(f.spool.packets_dir().join("broken.json"), b"{").expect("write");
    let fresh = || Scanner::new().headers_only().scan(&f.spool).expect("scan");
    let cached = || {
        let mut s = Scanner::new().headers_only();
        s.load_listing(&cache);
        let snap = s.scan(&f.spool).expect("scan");
        s.save_listing(&cache).expect("save");
        snap
    };
    assert_eq!(cached(), fresh());
    assert!(cache.exists(), "the first listing wrote its cache");
    // In place, same length, modification time set back: the change time still moved.
    let path = f.spool.packets_dir().join("c1.json");
    let before = std::fs::metadata(&path).expect("meta");
    let text = std::fs::read_to_string(&path).expect("read").replace("agent-a", "agent-z");
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(&path, text).expect("rewrite");
    std::fs::File::options()
        .write(true)
        .open(&path)
        .and_then(|file| file.set_modified(before.modified().expect("mtime")))
        .expect("set mtime back");
    std::fs::remove_file(f.spool.packets_dir().join("c2.json")).expect("remove");
    f.publish("c4", &portable("c4", "agent-b", "draft.compose", "review_required"));
    let snap = cached();
    assert_eq!(snap, fresh());
    let agents: Vec<(&str, &str)> =
        snap.packets.iter().map(|e| (e.packet.id.as_str(), e.packet.agent.as_str())).collect();
    assert!(agents.contains(&("c1", "agent-z")) && agents.contains(&("c4", "agent-b")), "{agents:?}");
    assert!(!agents.iter().any(|(id, _)| *id == "c2"), "{agents:?}");
    assert_eq!(snap.invalid.len(), 1);
    // A cache that does not parse is not used.
    std::fs::write(&cache, b"[{\"name\": 1}]").expect("corrupt");
    assert_eq!(cached(), fresh());
}

// Conformance choices (docs/conformance.md): runtime packets read as review_required when they
// demand approval; calendar.create is high risk as in the reference runtime; duplicate ids keep
// the first file name and list the others as invalid.
#[test]
fn runtime_status_risk_and_duplicate_ids() {
    let f = fixture();
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/conformance/trust-graduation/packets/js-reference/");
    let runtime: Value =
        serde_json::from_slice(&std::fs::read(format!("{dir}04-calendar-create.packet.json")).expect("fixture"))
            .expect("json");
    assert_eq!(runtime["approvalRequired"], true);
    let mut not_required = runtime.clone();
    not_required["approvalRequired"] = json!(false);
    not_required["packetId"] = json!("tg_not_required");
    f.publish("b-runtime", &runtime);
    f.publish("a-runtime-copy", &runtime);
    f.publish("c-not-required", &not_required);
    f.publish("d-calendar", &portable("cal", "agent-p", "calendar.create", "review_required"));
    let snap = Scanner::new().scan(&f.spool).expect("scan");
    let id = runtime["packetId"].as_str().expect("id");
    let entry = snap.packet(id).expect("runtime packet");
    assert_eq!(&*entry.file, "a-runtime-copy.json", "the first file name wins");
    assert_eq!(entry.packet.state, Some(DecisionState::ReviewRequired));
    assert_eq!(snap.packet("tg_not_required").and_then(|p| p.packet.state), Some(DecisionState::Deferred));
    assert_eq!(snap.packet("cal").and_then(|p| p.packet.risk.clone()).as_deref(), Some("high"));
    assert_eq!(snap.invalid.len(), 1);
    assert_eq!(snap.invalid[0].name, "b-runtime.json");
    assert!(snap.invalid[0].reason.to_string().contains("also in a-runtime-copy.json"), "{}", snap.invalid[0].reason);
}

// The parts of the spool only warrant writes must be the principal's: a symlinked chain or
// decisions directory, or a group-writable spool, refuses signing before anything is written.
#[test]
fn an_unsafe_spool_refuses_signing() {
    use std::os::unix::fs::PermissionsExt as _;
    let f = fixture();
    f.publish("p", &portable("p", "agent-a", "draft.compose", "review_required"));
    let outside = tempfile::tempdir().expect("outside");
    // chain.jsonl as a symlink to a file outside the spool (which must not be created).
    let target = outside.path().join("profile");
    std::os::unix::fs::symlink(&target, f.spool.chain_path()).expect("symlink");
    let err = f.decide("p", Verdict::Approve, None).expect_err("symlinked chain");
    assert!(
        matches!(err, DecideError::UnsafeSpool(ref u) if u.path == f.spool.chain_path() && u.problem.contains("symlinks are refused")),
        "{err}"
    );
    assert!(!target.exists(), "warrant wrote through the symlink");
    std::fs::remove_file(f.spool.chain_path()).expect("rm");
    // decisions/ as a symlink to another directory.
    std::fs::remove_dir(f.spool.decisions_dir()).expect("rmdir");
    std::os::unix::fs::symlink(outside.path(), f.spool.decisions_dir()).expect("symlink");
    assert!(
        matches!(f.decide("p", Verdict::Approve, None), Err(DecideError::UnsafeSpool(u)) if u.path == f.spool.decisions_dir())
    );
    assert!(std::fs::read_dir(outside.path()).expect("dir").next().is_none(), "wrote into the symlinked dir");
    std::fs::remove_file(f.spool.decisions_dir()).expect("rm");
    std::fs::create_dir(f.spool.decisions_dir()).expect("mkdir");
    // A spool root writable by others.
    std::fs::set_permissions(f.spool.root(), std::fs::Permissions::from_mode(0o777)).expect("chmod");
    assert!(
        matches!(f.decide("p", Verdict::Approve, None), Err(DecideError::UnsafeSpool(u)) if u.path == f.spool.root() && u.problem.contains("writable"))
    );
    std::fs::set_permissions(f.spool.root(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    f.decide("p", Verdict::Approve, None).expect("a private spool signs");
}

// A FIFO in place of the chain never blocks verification: it is refused as not a regular file.
#[test]
fn a_fifo_chain_is_refused_without_blocking() {
    let f = fixture();
    let status = std::process::Command::new("mkfifo").arg(f.spool.chain_path()).status().expect("mkfifo");
    assert!(status.success());
    let err = spool::verify_chain(&f.spool, &f.pinned).expect_err("fifo");
    assert!(matches!(err, chain_file::ChainError::NotRegular { .. }), "{err}");
    let err = chain_file::verify_file(&f.spool.chain_path(), VerifyOptions::default()).expect_err("fifo");
    assert!(matches!(err, chain_file::ChainError::NotRegular { .. }), "{err}");
}

// A record appended by someone else, correctly linked but with a bad signature, decides nothing:
// the packet stays pending, and strict verification of the spool's chain reports it.
#[test]
fn forged_records_decide_nothing() {
    let f = fixture();
    f.publish("victim", &portable("victim", "agent-a", "draft.compose", "review_required"));
    let mallory = Principal::from_seed("alice", &[99; 32]);
    let packet = f.packet("victim");
    let input = warrant::protocol::decision::DecisionInput {
        stands_in_for: &[],
        packet_id: "victim",
        packet_hash: &packet.content_hash,
        action_class: "draft.compose",
        agent: "agent-a",
        trace_id: "t",
        verdict: Verdict::Approve,
        reason: None,
        decided_at: AT,
    };
    let signed = warrant::protocol::decision::sign_decision(&mallory, &input);
    chain_file::append(&f.spool.chain_path(), |_| Ok(warrant::protocol::decision::record_body(&input, &signed)))
        .expect("append");
    let spool::ChainView { report, decisions, .. } = spool::verify_chain(&f.spool, &f.pinned).expect("verify");
    assert!(!report.is_valid());
    assert!(report.findings.iter().any(|x| x.check == Check::UnpinnedKey && x.message.contains("not pinned")));
    assert!(decisions.is_empty(), "a forged record must not count as a decision");
    // A foreign approval signature (not a warrant decision) in the spool's own chain is a
    // finding too: only pinned keys are accepted there.
    let g = fixture();
    chain_file::append(&g.spool.chain_path(), |_| {
        let mut meta = serde_json::Map::new();
        meta.insert(
            "approval".into(),
            json!({"required": true, "quorum": 1, "signatures": [{"reviewer": "alice", "signed_at": AT, "signature": "Zm9yZ2Vk"}]}),
        );
        Ok(chain::new_record_body("agent-a", "payment.initiate", Some("alice"), "success", "t", "act_with_approval", AT, meta))
    })
    .expect("append");
    let report = spool::verify_chain(&g.spool, &g.pinned).expect("verify").report;
    assert!(report.findings.iter().any(|x| x.check == Check::Signature), "{:?}", report.findings);
}

// Duplicate keys make a packet invalid: no reader can see a different value than the one shown.
#[test]
fn duplicate_keys_are_invalid() {
    let f = fixture();
    let text = r#"{"type":"trust_graduation_approval_packet","packet_id":"d","action_class":"email.send.external","proposed_action":{"to":"dana@example.com","to":"mallory@evil.example"},"decision":{"status":"review_required","action_class":"email.send.external","reason":"r"},"external_actions":0}"#;
    std::fs::write(f.spool.packets_dir().join("d.json"), text).expect("write");
    let snap = Scanner::new().scan(&f.spool).expect("scan");
    assert!(snap.packets.is_empty());
    assert!(snap.invalid[0].reason.to_string().contains("duplicate key \"to\""), "{}", snap.invalid[0].reason);
}

// An append waits for the private lock file and fails after the deadline instead of hanging.
#[test]
fn a_held_lock_times_out_instead_of_hanging() {
    let f = fixture();
    let lock = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(f.spool.root().join(".chain.lock"))
        .expect("lock file");
    lock.lock().expect("hold the lock");
    let start = std::time::Instant::now();
    let err = chain_file::append_with_deadline(&f.spool.chain_path(), std::time::Duration::from_millis(200), |_| {
        Ok(serde_json::Map::new())
    })
    .expect_err("locked");
    assert!(matches!(err, chain_file::ChainError::Locked { .. }), "{err}");
    assert!(start.elapsed() < std::time::Duration::from_secs(5));
    lock.unlock().expect("unlock");
}

/// One change an agent (or a stray process) makes to `packets/` or `receipts/`.
#[derive(Debug, Clone)]
enum SpoolOp {
    /// Publish (rename into place) a packet file with this id and creation second.
    Publish { file: u8, id: u8, second: u8 },
    /// Publish a file that is not a packet.
    Garbage { file: u8 },
    /// Publish something into `receipts/`.
    Receipt { file: u8 },
    /// Remove a file, if there is one by that name.
    Remove { file: u8 },
}

impl SpoolOp {
    /// The file name the change touches.
    fn name(&self) -> String {
        match self {
            SpoolOp::Publish { file, .. } | SpoolOp::Garbage { file } | SpoolOp::Remove { file } => {
                format!("f{file:02}.json")
            }
            SpoolOp::Receipt { file } => format!("r{file}.json"),
        }
    }
}

fn spool_op() -> impl proptest::strategy::Strategy<Value = SpoolOp> {
    use proptest::prelude::*;
    prop_oneof![
        6 => (0u8..12, 0u8..8, 0u8..3).prop_map(|(file, id, second)| SpoolOp::Publish { file, id, second }),
        1 => (0u8..12).prop_map(|file| SpoolOp::Garbage { file }),
        1 => (0u8..3).prop_map(|file| SpoolOp::Receipt { file }),
        1 => (0u8..12).prop_map(|file| SpoolOp::Remove { file }),
    ]
}

fn apply(spool: &Spool, op: &SpoolOp) {
    let put = |dir: std::path::PathBuf, name: String, bytes: Vec<u8>| {
        let tmp = dir.join(format!(".{name}.tmp"));
        std::fs::write(&tmp, bytes).expect("write");
        std::fs::rename(&tmp, dir.join(name)).expect("rename");
    };
    match op {
        SpoolOp::Publish { file, id, second } => {
            let created = format!("2026-11-21T09:00:0{second}Z");
            let doc = warrant::protocol::packet::portable_packet(
                &format!("p-{id}"),
                "draft.compose",
                "scribe",
                "a draft",
                json!({"n": file}),
                &created,
            );
            put(spool.packets_dir(), op.name(), serde_json::to_vec(&doc).expect("JSON"));
        }
        SpoolOp::Garbage { .. } => put(spool.packets_dir(), op.name(), b"{not json".to_vec()),
        SpoolOp::Receipt { .. } => put(spool.receipts_dir(), op.name(), b"[]".to_vec()),
        SpoolOp::Remove { .. } => {
            let _ = std::fs::remove_file(spool.packets_dir().join(op.name()));
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    // A scanner kept across changes (its snapshot updated in place when a scan only adds packet
    // files with new ids, rebuilt otherwise) answers exactly what a new scanner answers:
    // packets in order, duplicate ids held by the file whose name sorts first, invalid files
    // by name, receipts.
    // The same holds for a scanner that never lists again and looks only at the names reported
    // (`Recheck::Touched`, as the console scans when its watcher names every change).
    #[test]
    fn a_kept_scanner_answers_what_a_new_one_does(
        ops in proptest::collection::vec(proptest::collection::vec(spool_op(), 1..4), 1..12),
        touched in proptest::bool::ANY,
    ) {
        let f = fixture();
        let mut kept = Scanner::new();
        let mut last = kept.scan(&f.spool).expect("scan");
        let recheck = if touched { spool::Recheck::Touched } else { spool::Recheck::Renamed };
        for batch in &ops {
            for op in batch {
                apply(&f.spool, op);
            }
            // As the console scans: the listing's inodes, plus the names its watcher reported (a
            // file replaced twice between two scans can get its first inode back).
            kept.recheck_names(batch.iter().map(SpoolOp::name));
            if let Some(snap) = kept.scan_if_changed(&f.spool, recheck).expect("scan") {
                last = snap;
            }
            let fresh = Scanner::new().scan(&f.spool).expect("scan");
            proptest::prop_assert_eq!(&last, &fresh, "after {:?}", batch);
        }
    }
}

// A `Renamed` scan trusts a known inode; a name the watcher reports is looked at again, which is
// how a file written in place (or replaced twice, getting its first inode back) is seen at once.
#[test]
fn a_recheck_name_sees_a_file_the_listing_cannot() {
    let f = fixture();
    let path = f.spool.packets_dir().join("p-1.json");
    let doc = |summary: &str| {
        let d = warrant::protocol::packet::portable_packet("p-1", "draft.compose", "scribe", summary, json!({}), AT);
        serde_json::to_vec(&d).expect("JSON")
    };
    std::fs::write(&path, doc("first")).expect("write");
    let mut scanner = Scanner::new();
    let first = scanner.scan_if_changed(&f.spool, spool::Recheck::Renamed).expect("scan").expect("first scan");
    assert_eq!(first.packets[0].packet.summary, "first");
    // Written in place: same inode, so the listing alone shows nothing new.
    std::fs::write(&path, doc("second, longer")).expect("rewrite");
    assert_eq!(scanner.scan_if_changed(&f.spool, spool::Recheck::Renamed).expect("scan"), None);
    scanner.recheck_names(["p-1.json".to_owned()]);
    let again = scanner.scan_if_changed(&f.spool, spool::Recheck::Renamed).expect("scan").expect("a change");
    assert_eq!(again.packets[0].packet.summary, "second, longer");
    assert_eq!(again, Scanner::new().scan(&f.spool).expect("scan"));
}

// A `Touched` scan lists nothing once the scanner has a listing: a file no one named is not
// seen until a name or a listing shows it, and a named file that is gone is dropped. A scanner
// with no listing yet lists anyway.
#[test]
fn a_touched_scan_looks_only_at_the_names_given() {
    let f = fixture();
    let put = |id: &str| {
        let d = warrant::protocol::packet::portable_packet(id, "draft.compose", "scribe", "a draft", json!({}), AT);
        std::fs::write(f.spool.packets_dir().join(format!("{id}.json")), serde_json::to_vec(&d).expect("JSON"))
            .expect("write");
    };
    put("p-1");
    let mut scanner = Scanner::new();
    let first = scanner.scan_if_changed(&f.spool, spool::Recheck::Touched).expect("scan").expect("first scan");
    assert_eq!(first.packets.len(), 1, "the first scan lists");
    put("p-2");
    put("p-3");
    assert_eq!(scanner.scan_if_changed(&f.spool, spool::Recheck::Touched).expect("scan"), None, "nothing named");
    scanner.recheck_names(["p-2.json".to_owned(), "packets".to_owned(), ".p-3.json.tmp".to_owned()]);
    let named = scanner.scan_if_changed(&f.spool, spool::Recheck::Touched).expect("scan").expect("p-2");
    let ids: Vec<&str> = named.packets.iter().map(|e| e.packet.id.as_str()).collect();
    assert_eq!(ids, ["p-1", "p-2"], "only the named publication is looked at");
    std::fs::remove_file(f.spool.packets_dir().join("p-1.json")).expect("remove");
    scanner.recheck_names(["p-1.json".to_owned()]);
    let gone = scanner.scan_if_changed(&f.spool, spool::Recheck::Touched).expect("scan").expect("p-1 gone");
    let ids: Vec<&str> = gone.packets.iter().map(|e| e.packet.id.as_str()).collect();
    assert_eq!(ids, ["p-2"]);
    let listed = scanner.scan_if_changed(&f.spool, spool::Recheck::Renamed).expect("scan").expect("p-3 listed");
    assert_eq!(listed, Scanner::new().scan(&f.spool).expect("scan"));
}

// A full scan of many files reads and parses them on every core: what it lists is what a scan
// of each file in turn lists (every packet once, in order, the invalid files named), and a
// rescan after rewriting most of them in place sees every rewrite.
#[test]
fn a_scan_of_many_files_on_every_core_lists_what_it_finds_in_order() {
    let f = fixture();
    let n = 700;
    for k in 0..n {
        f.publish(&format!("p-{k:04}"), &portable(&format!("p-{k:04}"), "agent-a", "draft.compose", "review_required"));
    }
    for bad in ["bad-1", "bad-2", "bad-3"] {
        std::fs::write(f.spool.packets_dir().join(format!("{bad}.json")), b"{ not json").expect("write");
    }
    let mut scanner = Scanner::new();
    let snap = scanner.scan(&f.spool).expect("scan");
    // The newest first, as every scan lists them; each once.
    let mut ids: Vec<&str> = snap.packets.iter().map(|e| e.packet.id.as_str()).collect();
    assert_eq!(ids.first().copied(), Some("p-0699"));
    ids.sort_unstable();
    ids.dedup();
    let want: Vec<String> = (0..n).map(|k| format!("p-{k:04}")).collect();
    assert_eq!(ids, want.iter().map(String::as_str).collect::<Vec<_>>());
    let mut invalid: Vec<&str> = snap.invalid.iter().map(|i| i.name.as_str()).collect();
    invalid.sort_unstable();
    assert_eq!(invalid, ["bad-1.json", "bad-2.json", "bad-3.json"]);
    // Rewritten in place, most of them: every rewrite is seen, none lost, none twice.
    for k in 0..600 {
        f.publish(&format!("p-{k:04}"), &portable(&format!("p-{k:04}"), "agent-b", "draft.compose", "review_required"));
    }
    let again = scanner.scan(&f.spool).expect("scan");
    assert_eq!(again.packets.len(), n);
    let by_b = again.packets.iter().filter(|e| e.packet.agent == "agent-b").count();
    assert_eq!(by_b, 600);
    assert!(again.packet("p-0650").is_some_and(|e| e.packet.agent == "agent-a"));
}
