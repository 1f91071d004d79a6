//! Agent-side processes start from the agents' snapshot (`docs/spool.md`, Agents' snapshots):
//! the state of the checkpointed prefix the principal signs beside each checkpoint, so a hook
//! verifies one signature and the records after the checkpoint, not the whole chain. Nothing an
//! agent writes is trusted: a snapshot that does not hash to the signed digest is not used, and a
//! chain that no longer ends the signed prefix is verified whole and allows nothing.

use crate::cli_env;

use cli_env::{Env, text};
use serde_json::{Value, json};
use std::io::Write as _;
use std::process::{Output, Stdio};
use warrant::protocol::keys::PinnedKeys;
use warrant::store::key_files::PinnedKeysFile as _;
use warrant::store::spool::{self, Spool};

fn ok(env: &Env, args: &[&str]) -> String {
    let o = env.run(args);
    assert_eq!(o.status.code(), Some(0), "warrant {args:?}: {}", text(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `warrant hook claude-code` on a PreToolUse of `Read` (a `safe` call): the decision.
fn read_call(env: &Env, n: u32) -> String {
    let event = json!({
        "session_id": "s1", "cwd": "/home/user/project", "hook_event_name": "PreToolUse",
        "tool_name": "Read", "tool_input": {"file_path": "README.md"}, "tool_use_id": format!("toolu_{n}"),
    });
    let mut child = env
        .cmd(&["hook", "claude-code"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    child.stdin.take().expect("stdin").write_all(event.to_string().as_bytes()).expect("event");
    let o: Output = child.wait_with_output().expect("hook");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
    v["hookSpecificOutput"]["permissionDecision"].as_str().expect("decision").to_owned()
}

/// A spool with 600 generated records, then a control the principal signs (so a checkpoint and
/// its snapshot), then receipts after it.
fn spool_with_a_snapshot() -> Env {
    let env = Env::new();
    ok(&env, &["generate-spool", "--records", "600", "--pending", "4", "--decision-every", "50"]);
    ok(&env, &["agent", "quarantine", "claude-code", "--reason", "under review"]);
    for note in ["one", "two", "three"] {
        ok(
            &env,
            &["receipt", "--class", "read.context", "--agent", "agent-00", "--outcome", "execute", "--note", note],
        );
    }
    env
}

fn agent_view(env: &Env) -> spool::AgentView {
    let pinned = PinnedKeys::load(&env.config()).expect("pins");
    spool::agent_view(&Spool::new(env.spool()), &pinned).expect("view")
}

/// The view from the snapshot reads only the records after the checkpoint and says what a
/// verification of the whole chain says about controls and evidence.
#[test]
fn the_agents_view_reads_only_the_records_after_the_checkpoint() {
    let env = spool_with_a_snapshot();
    let pinned = PinnedKeys::load(&env.config()).expect("pins");
    let chain_len = std::fs::metadata(env.spool().join("chain.jsonl")).expect("chain").len();
    let agent = agent_view(&env);
    assert!(agent.from_snapshot(), "the snapshot the principal signed is used");
    assert!(agent.chain.view.report.is_valid());
    assert!(
        agent.bytes_read * 20 < chain_len,
        "read {} of the chain's {chain_len} bytes: only the receipts after the checkpoint",
        agent.bytes_read
    );
    let whole = spool::verify_chain(&Spool::new(env.spool()), &pinned).expect("whole");
    assert_eq!(agent.chain.view.controls.standing("claude-code"), whole.controls.standing("claude-code"));
    assert_eq!(agent.chain.view.evidence.len(), whole.evidence.len());
    let summaries = |e: &spool::ChainEvidence| {
        let index = warrant::protocol::graduation::evidence::EvidenceIndex::of_runs(e.runs());
        index.classes().map(|(c, s)| (c.to_owned(), *s)).collect::<Vec<_>>()
    };
    assert_eq!(summaries(&agent.chain.view.evidence), summaries(&whole.evidence));
    assert_eq!(agent.chain.view.last_receipt_hash, whole.last_receipt_hash);
    // Its decisions are the tail's; the prefix's are behind a filter that sends a lookup of one
    // of them to the whole chain.
    let decided: Vec<&String> = whole.decisions.keys().collect();
    assert!(!decided.is_empty());
    assert!(decided.iter().all(|id| agent.may_be_decided_before(id)));
    assert!(!agent.may_be_decided_before("never-proposed"));
}

/// A view for one action class (a hook's one call) reads back from the snapshot only that
/// class's evidence, and sums it as a verification of the whole chain does.
#[test]
fn a_view_of_one_class_sums_that_class_as_the_whole_chain_does() {
    let env = spool_with_a_snapshot();
    let pinned = PinnedKeys::load(&env.config()).expect("pins");
    let spool = Spool::new(env.spool());
    let whole = spool::verify_chain(&spool, &pinned).expect("whole");
    let every = warrant::protocol::graduation::evidence::EvidenceIndex::of_runs(whole.evidence.runs());
    assert!(every.classes().count() > 2, "the generated chain has evidence of several classes");
    let index_of = |class: &str| {
        let one = spool::agent_view_for_class(&spool, &pinned, class).expect("view");
        assert!(one.from_snapshot());
        assert_eq!(one.evidence_only.as_deref(), Some(class));
        warrant::protocol::graduation::evidence::EvidenceIndex::of_runs(one.chain.view.evidence.runs())
    };
    // A class with no runs in the snapshot: the view's evidence is the tail's alone.
    let tail = index_of("no.such.class");
    assert!(tail.summary("read.context").positive > 0, "the receipts after the checkpoint");
    for (class, summary) in every.classes() {
        let index = index_of(class);
        assert_eq!(index.summary(class), *summary, "{class}: the same sums, in the same order");
        // Every other class's evidence is the tail's only: none of the prefix's is read.
        for (other, s) in index.classes().filter(|(c, _)| *c != class) {
            assert_eq!(*s, tail.summary(other), "{class}: the prefix's {other} runs were read");
        }
    }
    assert_eq!(agent_view(&env).evidence_only, None, "the unrestricted view has every class's evidence");
}

/// The snapshot's evidence runs and its filter's bits are files an agent can write: runs that
/// are not the ones the principal's snapshot names send the hook to the whole chain, and bits
/// that are not the ones signed make every packet id one to look up in the whole chain.
#[test]
fn runs_or_filter_bits_an_agent_rewrote_are_not_taken() {
    let env = spool_with_a_snapshot();
    let pinned = PinnedKeys::load(&env.config()).expect("pins");
    let spool = Spool::new(env.spool());
    let runs = env.spool().join("snapshot.runs");
    let bytes = std::fs::read(&runs).expect("runs");
    std::fs::write(&runs, &bytes[..bytes.len() - 1]).expect("cut");
    assert!(!agent_view(&env).from_snapshot(), "runs cut short are not used");
    // Every class's range altered: a hook's one class is not taken either.
    for altered in [bytes.iter().map(|b| b ^ 1).collect(), Vec::new()] {
        std::fs::write(&runs, &altered).expect("rewrite");
        assert!(!agent_view(&env).from_snapshot(), "runs flipped or emptied are not used");
        let one = spool::agent_view_for_class(&spool, &pinned, "read.context").expect("view");
        assert!(!one.from_snapshot() && one.evidence_only.is_none(), "the whole chain, every class");
        assert_eq!(read_call(&env, 1), "deny", "still quarantined: the chain says so");
    }
    std::fs::write(&runs, &bytes).expect("restore");
    let decided = env.spool().join("snapshot.decided");
    let mut bits = std::fs::read(&decided).expect("bits");
    let agent = agent_view(&env);
    assert!(agent.from_snapshot());
    assert!(!agent.may_be_decided_before("never-proposed"), "the signed bits tell it apart");
    bits.iter_mut().for_each(|b| *b = 0);
    std::fs::write(&decided, &bits).expect("rewrite");
    let agent = agent_view(&env);
    assert!(agent.may_be_decided_before("never-proposed"), "bits not signed: looked up in the chain");
}

/// An agent rewrites the snapshot to drop the quarantine: it no longer hashes to the signed
/// digest, the chain is verified whole, and the quarantine still holds.
#[test]
fn a_snapshot_an_agent_rewrote_is_not_used() {
    let env = spool_with_a_snapshot();
    assert_eq!(read_call(&env, 1), "deny", "quarantined");
    let path = env.spool().join(spool::SNAPSHOT_FILE);
    let mut snapshot: Value = serde_json::from_slice(&std::fs::read(&path).expect("snapshot")).expect("json");
    assert!(!snapshot["events"].as_array().expect("events").is_empty(), "the quarantine is in it");
    snapshot["events"] = json!([]);
    std::fs::write(&path, serde_json::to_vec(&snapshot).expect("json")).expect("rewrite");
    assert!(!agent_view(&env).from_snapshot(), "a snapshot that is not the one signed is not used");
    assert_eq!(read_call(&env, 2), "deny", "still quarantined: the chain says so");
    // The principal's next control writes a new snapshot, used again.
    ok(&env, &["agent", "release", "claude-code"]);
    assert!(agent_view(&env).from_snapshot());
    assert_eq!(read_call(&env, 3), "allow");
}

/// The record the checkpoint ends with is rewritten (the prefix no longer the one signed): the
/// hook does not start from the snapshot, verifies the whole chain, and allows nothing.
#[test]
fn a_chain_rewritten_under_the_snapshot_allows_nothing() {
    let env = spool_with_a_snapshot();
    ok(&env, &["agent", "release", "claude-code"]);
    assert_eq!(read_call(&env, 1), "allow");
    let cp: Value =
        serde_json::from_slice(&std::fs::read(env.spool().join("checkpoint.json")).expect("checkpoint")).expect("json");
    let end = usize::try_from(cp["document"]["bytes"].as_u64().expect("bytes")).expect("usize");
    let chain = env.spool().join("chain.jsonl");
    let mut bytes = std::fs::read(&chain).expect("chain");
    let start = bytes[..end - 1].iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
    // A digit inside the record (still JSON, no longer the record signed).
    let at = start + bytes[start..end].iter().position(u8::is_ascii_digit).expect("a digit");
    bytes[at] = if bytes[at] == b'1' { b'2' } else { b'1' };
    std::fs::write(&chain, bytes).expect("tamper");
    let agent = agent_view(&env);
    assert!(!agent.from_snapshot());
    assert!(!agent.chain.view.report.is_valid(), "the whole chain was verified and the rewrite found");
    assert_eq!(read_call(&env, 2), "deny");
}

/// A packet the principal approved before the checkpoint is judged approved: its id is in the
/// snapshot's filter of decided packets, so the governor takes its decision from the snapshot's
/// latest decisions (the view of the tail alone would hold it for a person again).
#[test]
fn a_packet_decided_before_the_checkpoint_is_judged_by_its_decision() {
    let env = Env::new();
    let o = env.propose("email.send", "agent-a", "mail-1", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    ok(&env, &["approve", "mail-1", "--yes"]);
    ok(&env, &["agent", "quarantine", "agent-b", "--reason", "a later checkpoint"]);
    let agent = agent_view(&env);
    assert!(agent.from_snapshot());
    assert!(!agent.chain.view.decisions.contains_key("mail-1"), "decided in the snapshot's prefix");
    assert!(agent.may_be_decided_before("mail-1"));
    assert_eq!(agent.decision_before("mail-1").map(|d| d.verdict), Some(warrant::protocol::decision::Verdict::Approve));
    let governor = warrant::govern::Governor::open(Spool::new(env.spool()), &env.config()).expect("governor");
    let (_, outcome) = governor.judge("mail-1").expect("judged");
    assert!(
        matches!(outcome, warrant::govern::Outcome::Allow { by_principal: true, .. }),
        "the principal's approval: {outcome:?}"
    );
}

/// `warrant list` starts from the principal's fold of the checkpointed prefix, as a decision
/// does: it reads none of the prefix, so a record rewritten in place inside it is reported by
/// `warrant verify` (which reads everything), not by the listing; a decision file lost from the
/// prefix is still written again (from the whole chain).
#[test]
fn list_reads_the_fold_and_verify_reads_everything() {
    let env = Env::new();
    ok(&env, &["generate-spool", "--records", "300", "--pending", "3", "--decision-every", "50"]);
    ok(&env, &["approve", "pending-000000", "--yes"]);
    let listed = ok(&env, &["list", "--json"]);
    let listed: Value = serde_json::from_str(&listed).expect("json");
    let packets = listed["packets"].as_array().expect("packets");
    let decision = |id: &str| packets.iter().find(|p| p["packet_id"] == json!(id)).map(|p| p["decision"].clone());
    assert_eq!(decision("pending-000000"), Some(json!("approve")));
    assert_eq!(decision("pending-000001"), Some(Value::Null));
    // The plain listing (packets read without their bodies, the fold's decisions decoded only
    // for the packets listed) says the same, and lists every packet.
    let plain = ok(&env, &["list"]);
    let status = |id: &str| plain.lines().find(|l| l.contains(id)).and_then(|l| l.split_whitespace().next());
    assert_eq!(status("pending-000000"), Some("approve"), "{plain}");
    assert_eq!((status("pending-000001"), status("pending-000002")), (Some("pending"), Some("pending")), "{plain}");
    assert!(plain.starts_with("STATUS"), "a header first: {plain}");
    assert_eq!(plain.lines().count(), 1 + 3, "{plain}");
    // The listing kept its packets' headers for the next one (mode 0600, beside the
    // principal's checkpoint copy), which lists the same.
    let caches: Vec<std::path::PathBuf> = std::fs::read_dir(env.config().join("checkpoints"))
        .expect("copies")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".listing.json"))
        .collect();
    assert_eq!(caches.len(), 1, "{caches:?}");
    use std::os::unix::fs::PermissionsExt as _;
    assert_eq!(std::fs::metadata(&caches[0]).expect("cache").permissions().mode() & 0o777, 0o600);
    // (The ages may have moved on by a second between the two.)
    let ageless = |t: &str| -> String {
        t.split_whitespace()
            .map(|w| match w.strip_suffix(['s', 'm', 'h', 'd']) {
                Some(n) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => "AGE",
                _ => w,
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(ageless(&ok(&env, &["list"])), ageless(&plain));
    // A record in the middle of the prefix, rewritten in place.
    let chain = env.spool().join("chain.jsonl");
    let mut bytes = std::fs::read(&chain).expect("chain");
    let mid = bytes.len() / 2;
    let at = mid + bytes[mid..].iter().position(u8::is_ascii_digit).expect("a digit");
    bytes[at] = if bytes[at] == b'1' { b'2' } else { b'1' };
    std::fs::write(&chain, bytes).expect("tamper");
    let o = env.run(&["list"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(!String::from_utf8_lossy(&o.stderr).contains("does not verify"), "{}", text(&o));
    let o = env.run(&["verify"]);
    assert_ne!(o.status.code(), Some(0), "verify reads the whole chain: {}", text(&o));
    // A lost decision file of the prefix: the listing verifies the whole chain to restore it,
    // and so reports the rewrite too.
    std::fs::remove_file(env.spool().join("decisions/pending-000000.json")).expect("remove");
    let o = env.run(&["list"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("does not verify"), "{}", text(&o));
}

/// `warrant verify --since-checkpoint` takes the records up to the principal's latest
/// checkpoint on its signature and verifies the records after it: valid on the spool as signed;
/// a record after the checkpoint rewritten is found (the whole chain is then verified); without
/// a checkpoint the whole chain is verified and it says so; a record rewritten in place inside
/// the checkpointed prefix is left to a plain `verify`, which reads everything.
#[test]
fn verify_since_checkpoint_verifies_the_records_after_the_principals_checkpoint() {
    let env = spool_with_a_snapshot();
    let o = env.run(&["verify", "--since-checkpoint", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let report: Value = serde_json::from_slice(&o.stdout).expect("json");
    let whole: Value = serde_json::from_str(&ok(&env, &["verify", "--json"])).expect("json");
    assert_eq!(report["total"], whole["total"], "the whole chain's length");
    assert_eq!(report["root_hash"], whole["root_hash"], "and its head");
    let from = report["since_checkpoint"]["records"].as_u64().expect("from a checkpoint");
    assert_eq!(from + 3, report["total"].as_u64().expect("total"), "the three receipts after it");
    let o = env.run(&["verify", "--since-checkpoint"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("the 3 after it verified"), "{}", text(&o));

    // A receipt after the checkpoint, rewritten: found.
    let chain = env.spool().join("chain.jsonl");
    let clean = std::fs::read(&chain).expect("chain");
    let mut bytes = clean.clone();
    let last = bytes[..bytes.len() - 1].iter().rposition(|&b| b == b'\n').expect("lines") + 1;
    let at = last + bytes[last..].windows(5).position(|w| w == b"three").expect("the last receipt's note");
    bytes[at] = b'T';
    std::fs::write(&chain, &bytes).expect("tamper");
    let o = env.run(&["verify", "--since-checkpoint"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));

    // A record in the middle of the prefix, rewritten in place: the checkpoint stands for it.
    let mut bytes = clean;
    let mid = bytes.len() / 3;
    let at = mid + bytes[mid..].iter().position(u8::is_ascii_digit).expect("a digit");
    bytes[at] = if bytes[at] == b'1' { b'2' } else { b'1' };
    std::fs::write(&chain, &bytes).expect("tamper");
    assert_eq!(env.run(&["verify", "--since-checkpoint"]).status.code(), Some(0));
    assert_eq!(env.run(&["verify"]).status.code(), Some(1), "a plain verify reads everything");

    // No checkpoint: the whole chain, said so.
    let fresh = Env::new();
    ok(&fresh, &["receipt", "--class", "read.context", "--agent", "a", "--outcome", "execute", "--note", "n"]);
    let o = fresh.run(&["verify", "--since-checkpoint"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("the whole chain was verified"), "{}", text(&o));
    // A chain file has no checkpoint: a usage error.
    let o = fresh.run(&["verify", "--since-checkpoint", fresh.spool().join("chain.jsonl").to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}
