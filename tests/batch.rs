//! Batch decisions: `spool::decide_many` signs one decision per packet, appends them
//! under one lock with one sync, and is all or nothing; `warrant approve ID ID …` uses it.

use serde_json::{Value, json};
use std::process::Command;
use warrant::protocol::decision::Verdict;
use warrant::protocol::keys::{PinnedKeys, Principal};
use warrant::store::chain_file;
use warrant::store::spool::{self, BatchError, BatchItem, DecideError, Scanner, Spool};

struct Fixture {
    dir: tempfile::TempDir,
    spool: Spool,
    principal: Principal,
    pinned: PinnedKeys,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("tempdir");
    let spool = Spool::new(dir.path().join("spool")).with_checkpoint_copies(dir.path().join("copies"));
    spool.ensure().expect("spool");
    let principal = Principal::from_seed("alice", &[7u8; 32]);
    let mut pinned = PinnedKeys::default();
    pinned.pin("alice", principal.verifying_key());
    Fixture { dir, spool, principal, pinned }
}

const AT: &str = "2026-11-21T10:00:00Z";

fn publish(f: &Fixture, ids: &[&str]) -> spool::Snapshot {
    for id in ids {
        let doc = warrant::protocol::packet::portable_packet(
            id,
            "draft.compose",
            "agent-a",
            "s",
            json!({"to": *id}),
            "2026-11-21T09:00:00Z",
        );
        f.spool.publish(&f.spool.packets_dir(), id, &doc).expect("publish");
    }
    Scanner::new().scan(&f.spool).expect("scan")
}

fn batch(
    f: &Fixture,
    snap: &spool::Snapshot,
    ids: &[&str],
    verdict: Verdict,
    reason: Option<&str>,
) -> Result<Vec<spool::Decided>, BatchError> {
    let items: Vec<BatchItem<'_>> =
        ids.iter().map(|id| BatchItem { packet: &snap.packet(id).expect("packet").packet, publisher: None }).collect();
    let observer = warrant::preconditions::Observer::default();
    spool::decide_many(&f.spool, &f.principal, &f.pinned, &items, verdict, reason, AT, &observer, |_, _| Ok(Vec::new()))
}

fn chain_bytes(f: &Fixture) -> Vec<u8> {
    std::fs::read(f.spool.chain_path()).unwrap_or_default()
}

// One record per packet, each with its own signed decision document, in the order given; the
// chain verifies; every decision file verifies against its packet; the principal's receipts stay
// linked one to the next; one checkpoint covers the group.
#[test]
fn a_batch_signs_one_record_and_one_decision_file_per_packet() {
    let f = fixture();
    let ids = ["p-1", "p-2", "p-3", "p-4", "p-5"];
    let snap = publish(&f, &ids);
    let done = batch(&f, &snap, &ids, Verdict::Approve, None).expect("batch");
    assert_eq!(done.iter().map(|d| d.appended.chain_index).collect::<Vec<_>>(), [1, 2, 3, 4, 5]);
    let view = spool::verify_chain(&f.spool, &f.pinned).expect("verify");
    assert!(view.report.is_valid(), "{:?}", view.report.findings);
    assert_eq!((view.report.total, view.report.signatures_verified), (5, 5));
    let mut prev: Option<String> = None;
    for (id, d) in ids.iter().zip(&done) {
        assert_eq!(view.decisions[*id].verdict, Verdict::Approve);
        assert_eq!(d.signed.document["packet_id"], *id);
        let file: Value = serde_json::from_slice(&std::fs::read(&d.decision_file).expect("file")).expect("json");
        let hash = &snap.packet(id).expect("packet").packet.content_hash;
        warrant::protocol::decision::verify_decision_file(&file, id, Some(hash), &f.pinned)
            .expect("decision file verifies");
        let receipt = &d.appended.record["metadata"]["tg_receipt"];
        assert_eq!(receipt["prev_hash"].as_str().map(str::to_owned), prev, "{id}: receipts linked");
        prev = receipt["content_hash"].as_str().map(str::to_owned);
    }
    let (cp, notes) = warrant::store::checkpoint_files::latest(&f.spool, &f.pinned);
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(cp.expect("a checkpoint").records, 5);
    // A second batch naming a decided packet signs nothing.
    let snap = publish(&f, &["p-6"]);
    let before = chain_bytes(&f);
    let err = batch(&f, &snap, &["p-6", "p-2"], Verdict::Approve, None).expect_err("p-2 is decided");
    let BatchError::Refused { total: 2, refused } = &err else { panic!("{err}") };
    assert!(matches!(refused.as_slice(), [(id, DecideError::AlreadyDecided { .. })] if id == "p-2"), "{err}");
    assert_eq!(chain_bytes(&f), before);
    assert!(!f.spool.decision_path("p-6").exists());
}

// A batch onto a chain that does not verify signs nothing: no record, no decision file.
#[test]
fn a_batch_on_a_broken_chain_signs_nothing() {
    let f = fixture();
    let snap = publish(&f, &["p-1"]);
    batch(&f, &snap, &["p-1"], Verdict::Approve, None).expect("first");
    // Tamper with the recorded decision: the chain no longer verifies.
    let text = String::from_utf8(chain_bytes(&f)).expect("utf-8");
    std::fs::write(f.spool.chain_path(), text.replacen("\"approve\"", "\"refuse\"", 1)).expect("tamper");
    let before = chain_bytes(&f);
    let snap = publish(&f, &["p-2", "p-3"]);
    let err = batch(&f, &snap, &["p-2", "p-3"], Verdict::Approve, None).expect_err("broken chain");
    assert!(matches!(err, BatchError::Decide(DecideError::ChainBroken(_))), "{err}");
    assert_eq!(chain_bytes(&f), before, "nothing appended");
    assert!(!f.spool.decision_path("p-2").exists() && !f.spool.decision_path("p-3").exists());
}

// All or nothing before the lock: an expired packet, a packet listed twice, a refusal without a
// reason, a packet the caller's check refuses; each signs nothing, and names the packet.
#[test]
fn a_batch_with_a_packet_that_cannot_be_decided_signs_nothing() {
    let f = fixture();
    let mut doc = warrant::protocol::packet::portable_packet(
        "p-old",
        "draft.compose",
        "agent-a",
        "s",
        json!({}),
        "2026-11-21T08:00:00Z",
    );
    doc["expires_at"] = json!("2026-11-21T09:30:00Z");
    f.spool.publish(&f.spool.packets_dir(), "p-old", &doc).expect("publish");
    let snap = publish(&f, &["p-1", "p-2"]);
    let err = batch(&f, &snap, &["p-1", "p-old", "p-2"], Verdict::Approve, None).expect_err("expired");
    assert!(
        matches!(&err, BatchError::Refused { total: 3, refused } if matches!(refused.as_slice(), [(id, DecideError::Expired { .. })] if id == "p-old")),
        "{err}"
    );
    assert!(err.to_string().contains("nothing was signed") && err.to_string().contains("p-old"), "{err}");
    let err = batch(&f, &snap, &["p-1", "p-1"], Verdict::Approve, None).expect_err("twice");
    assert!(matches!(&err, BatchError::Refused { .. }) && err.to_string().contains("listed twice"), "{err}");
    let err = batch(&f, &snap, &["p-1", "p-2"], Verdict::Refuse, Some("  ")).expect_err("no reason");
    assert!(matches!(err, BatchError::Decide(DecideError::ReasonRequired)), "{err}");
    let items: Vec<BatchItem<'_>> = ["p-1", "p-2"]
        .iter()
        .map(|id| BatchItem { packet: &snap.packet(id).expect("packet").packet, publisher: None })
        .collect();
    let observer = warrant::preconditions::Observer::default();
    let err =
        spool::decide_many(&f.spool, &f.principal, &f.pinned, &items, Verdict::Approve, None, AT, &observer, |_, p| {
            if p.id == "p-2" { Err("quarantined".into()) } else { Ok(Vec::new()) }
        })
        .expect_err("admit refuses p-2");
    assert!(err.to_string().contains("p-2: quarantined"), "{err}");
    assert!(chain_bytes(&f).is_empty(), "nothing was ever appended");
    // The expired one can be refused with the others.
    let done = batch(&f, &snap, &["p-1", "p-old", "p-2"], Verdict::Refuse, Some("not now")).expect("refused");
    assert_eq!(done.len(), 3);
    assert!(done.iter().all(|d| d.signed.document["reason"] == "not now"));
}

// `warrant approve ID ID --yes` signs them as one batch; `warrant refuse ID ID --reason` with
// one reason; `--hash` is for one packet.
#[test]
fn the_cli_approves_and_refuses_several_ids() {
    let f = fixture();
    let config = f.dir.path().join("config");
    let env = |cmd: &mut Command| {
        cmd.env("WARRANT_CONFIG", &config)
            .env("WARRANT_SPOOL", f.spool.root())
            .env("WARRANT_PRINCIPAL", "alice")
            .env("XDG_DATA_HOME", f.dir.path().join("data"));
    };
    let run = |args: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_warrant"));
        cmd.args(args);
        env(&mut cmd);
        cmd.output().expect("run")
    };
    assert!(run(&["keys", "init", "--no-passphrase"]).status.success());
    let now = warrant::protocol::clock::now_rfc3339();
    for id in ["c-1", "c-2", "c-3", "c-4"] {
        let doc = warrant::protocol::packet::portable_packet(id, "draft.compose", "agent-a", "s", json!({}), &now);
        f.spool.publish(&f.spool.packets_dir(), id, &doc).expect("publish");
    }
    let out = run(&["approve", "c-1", "c-2", "--hash", "sha256:00"]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    let out = run(&["approve", "c-1", "c-2", "--yes"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("approved c-1: record 1") && stdout.contains("approved c-2: record 2"), "{stdout}");
    let out = run(&["refuse", "c-3", "c-4", "--reason", "duplicates", "--yes"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    // A batch naming a decided packet signs nothing.
    let out = run(&["refuse", "c-1", "c-4", "--reason", "x", "--yes"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing was signed"));
    let out = run(&["verify", &f.spool.root().display().to_string()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(String::from_utf8_lossy(&out.stdout).contains("4 signatures verified"));
    for id in ["c-1", "c-2", "c-3", "c-4"] {
        assert!(f.spool.decision_path(id).exists(), "{id}");
    }
}

// `chain_file::append_many_then`: the group is sealed record onto record and written whole, `after`
// runs once with every record; an empty group or a builder's refusal writes nothing.
#[test]
fn append_many_then_writes_a_group_or_nothing() {
    use warrant::protocol::chain;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("chain.jsonl");
    let body = |n: u64| {
        let mut meta = serde_json::Map::new();
        meta.insert("note".into(), json!(format!("r{n}")));
        chain::new_record_body("agent-a", "draft.compose", None, "success", "t", "suggest", AT, meta)
    };
    chain_file::append(&path, |_| Ok(body(0))).expect("first");
    let mut seen = Vec::new();
    let got = chain_file::append_many_then(
        &path,
        None,
        chain_file::LOCK_DEADLINE,
        |head| {
            assert_eq!(head.last_index, 1);
            Ok((1..=3).map(body).collect())
        },
        |a, bytes| seen.push((a.iter().map(|x| x.chain_index).collect::<Vec<_>>(), bytes)),
    )
    .expect("group");
    let len = std::fs::metadata(&path).expect("meta").len();
    assert_eq!(got.iter().map(|a| a.chain_index).collect::<Vec<_>>(), [2, 3, 4]);
    assert_eq!(seen, [(vec![2, 3, 4], len)]);
    assert_eq!(got[1].record["previous_hash"], json!(got[0].entry_hash));
    let report = chain_file::verify_file(&path, chain::VerifyOptions::default()).expect("verify");
    assert!(report.is_valid() && report.total == 4, "{report:?}");
    let before = std::fs::read(&path).expect("read");
    let empty = chain_file::append_many_then(
        &path,
        None,
        chain_file::LOCK_DEADLINE,
        |_| Ok(Vec::new()),
        |_, _| panic!("no after"),
    );
    assert!(matches!(empty, Err(chain_file::ChainError::Build(_))), "{empty:?}");
    let refused = chain_file::append_many_then(
        &path,
        None,
        chain_file::LOCK_DEADLINE,
        |_| Err("no".into()),
        |_, _| panic!("no after"),
    );
    assert!(matches!(refused, Err(chain_file::ChainError::Build(_))), "{refused:?}");
    assert_eq!(std::fs::read(&path).expect("read"), before, "nothing written");
}
