//! Durability of the chain: a torn final line is set aside, never dropped or repaired into the
//! chain; the principal's signed checkpoints detect records cut off the end.

use serde_json::{Map, Value, json};
use warrant::chain::{self, Check, VerifyOptions};
use warrant::decision::Verdict;
use warrant::keys::{PinnedKeys, Principal};
use warrant::spool::{self, Scanner, Spool};

fn receipt_body(n: u64) -> Map<String, Value> {
    let mut meta = Map::new();
    meta.insert("note".into(), json!(format!("receipt {n}")));
    chain::new_record_body("agent-a", "draft.compose", None, "success", "t", "suggest", "2026-11-21T09:00:00Z", meta)
}

#[test]
fn a_torn_final_line_is_reported_then_set_aside_byte_for_byte() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("chain.jsonl");
    for n in 0..3 {
        chain::append(&path, |_| Ok(receipt_body(n))).expect("append");
    }
    let whole = std::fs::read(&path).expect("read");
    let fragment = br#"{"action":"draft.compose","agent":"agent-a","approver":nu"#;
    std::fs::write(&path, [whole.as_slice(), fragment].concat()).expect("tear");

    // Verification reports the torn tail, and the three records still verify.
    let report = chain::verify_file(&path, VerifyOptions::default()).expect("verify");
    assert!(report.is_valid(), "{:?}", report.findings);
    assert_eq!((report.total, report.torn_tail), (3, Some(fragment.len() as u64)));

    // Recovery moves exactly the fragment to a side file and restores the chain's bytes.
    let aside = chain::recover_torn_tail(&path).expect("recover").expect("something set aside");
    assert_eq!(std::fs::read(&aside.side_file).expect("side file"), fragment);
    assert_eq!((aside.bytes, aside.offset), (fragment.len() as u64, whole.len() as u64));
    assert!(aside.message().contains("torn") && aside.message().contains(&aside.side_file.display().to_string()));
    assert_eq!(std::fs::read(&path).expect("read"), whole);
    assert_eq!(chain::recover_torn_tail(&path).expect("again"), None);

    // An append onto a torn chain sets the fragment aside itself and links to the last record.
    std::fs::write(&path, [whole.as_slice(), b"{\"half"].concat()).expect("tear again");
    let appended = chain::append(&path, |_| Ok(receipt_body(9))).expect("append after a tear");
    assert_eq!(appended.chain_index, 4);
    let sides: Vec<_> = std::fs::read_dir(dir.path())
        .expect("dir")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("chain.jsonl.torn-"))
        .collect();
    assert_eq!(sides.len(), 2, "each tear keeps its own side file");
    let report = chain::verify_file(&path, VerifyOptions::default()).expect("verify");
    assert!(report.is_valid() && report.torn_tail.is_none(), "{:?}", report);
    assert_eq!(report.total, 4);
}

struct Fixture {
    _dir: tempfile::TempDir,
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
    Fixture { _dir: dir, spool, principal, pinned }
}

fn decide_all(f: &Fixture, n: usize) {
    for i in 0..n {
        let id = format!("p-{i}");
        let doc = warrant::packet::portable_packet(
            &id,
            "draft.compose",
            "agent-a",
            "s",
            json!({"n": i}),
            "2026-11-21T09:00:00Z",
        );
        f.spool.publish(&f.spool.packets_dir(), &id, &doc).expect("publish");
    }
    let snap = Scanner::new().scan(&f.spool).expect("scan");
    for i in 0..n {
        let id = format!("p-{i}");
        let packet = snap.packet(&id).expect("packet").packet.clone();
        spool::decide(&f.spool, &f.principal, &f.pinned, &packet, Verdict::Approve, None, "2026-11-21T10:00:00Z")
            .expect("decide");
    }
}

#[test]
fn every_decision_signs_a_checkpoint_and_truncation_is_detected() {
    let f = fixture();
    decide_all(&f, 4);
    let (cp, notes) = warrant::checkpoint::latest(&f.spool, &f.pinned);
    let cp = cp.expect("a checkpoint");
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(cp.records, 4);
    let bytes = std::fs::read(f.spool.chain_path()).expect("chain");
    assert_eq!(cp.bytes, bytes.len() as u64);
    // The agent's decision file carries the checkpoint signed with it.
    let file: Value =
        serde_json::from_slice(&std::fs::read(f.spool.decision_path("p-3")).expect("decision file")).expect("json");
    assert_eq!(warrant::checkpoint::verify(&file["checkpoint"], &f.pinned, "p-3").expect("valid").records, 4);
    assert!(spool::verify_chain(&f.spool, &f.pinned).expect("verify").report.is_valid());

    // Cut the last record off: the chain alone still verifies, the checkpoint does not agree.
    let cut = bytes[..bytes.len() - 1].iter().rposition(|&b| b == b'\n').expect("newline") + 1;
    std::fs::write(f.spool.chain_path(), &bytes[..cut]).expect("truncate");
    let plain = chain::verify_file(&f.spool.chain_path(), VerifyOptions::default()).expect("verify");
    assert!(plain.is_valid(), "a prefix of a chain is a valid chain");
    let view = spool::verify_chain(&f.spool, &f.pinned).expect("verify");
    let first = view.report.first().expect("a finding");
    assert_eq!((first.index, first.check), (None, Check::Checkpoint), "{first}");
    assert!(first.message.contains("3 records, fewer than the 4"), "{first}");
    // A broken chain is never signed onto.
    let snap = Scanner::new().scan(&f.spool).expect("scan");
    let doc =
        warrant::packet::portable_packet("p-x", "draft.compose", "agent-a", "s", json!({}), "2026-11-21T09:00:00Z");
    f.spool.publish(&f.spool.packets_dir(), "p-x", &doc).expect("publish");
    let snap2 = Scanner::new().scan(&f.spool).expect("scan");
    drop(snap);
    let packet = snap2.packet("p-x").expect("packet").packet.clone();
    let err = spool::decide(&f.spool, &f.principal, &f.pinned, &packet, Verdict::Approve, None, "2026-11-21T10:00:00Z")
        .expect_err("refused");
    assert!(matches!(err, spool::DecideError::ChainBroken(_)), "{err}");
}

#[test]
fn a_rewritten_head_and_a_forged_checkpoint_are_caught() {
    let f = fixture();
    decide_all(&f, 2);
    let good = std::fs::read(f.spool.chain_path()).expect("chain");
    let cp_file = f.spool.root().join(warrant::checkpoint::CHECKPOINT_FILE);
    let signed: Value = serde_json::from_slice(&std::fs::read(&cp_file).expect("checkpoint")).expect("json");

    // A checkpoint claiming more records, re-signed by a key that is not pinned, is ignored with a note.
    let mallory = Principal::from_seed("alice", &[9u8; 32]);
    let forged =
        warrant::checkpoint::sign(&mallory, 99, signed["document"]["head_hash"].as_str().expect("hash"), 1, "t");
    std::fs::write(&cp_file, serde_json::to_vec(&forged).expect("json")).expect("write");
    let (cp, notes) = warrant::checkpoint::latest(&f.spool, &f.pinned);
    assert_eq!(cp.expect("the decision files' checkpoint").records, 2);
    assert!(notes.iter().any(|n| n.contains("checkpoint ignored")), "{notes:?}");

    // The principal's private copy survives the spool's files being deleted.
    std::fs::remove_file(&cp_file).expect("rm");
    for e in std::fs::read_dir(f.spool.decisions_dir()).expect("dir").flatten() {
        std::fs::remove_file(e.path()).expect("rm");
    }
    let (cp, _) = warrant::checkpoint::latest(&f.spool, &f.pinned);
    assert_eq!(cp.expect("the principal's copy").records, 2);

    // Cut the last record and append another in its place: as long, valid, but not what was signed.
    let text = String::from_utf8(good).expect("utf-8");
    let first_line = text.lines().next().expect("line");
    std::fs::write(f.spool.chain_path(), format!("{first_line}\n")).expect("cut");
    chain::append(&f.spool.chain_path(), |_| Ok(receipt_body(1))).expect("append");
    let view = spool::verify_chain(&f.spool, &f.pinned).expect("verify");
    let finding = view.report.findings.iter().find(|x| x.check == Check::Checkpoint).expect("checkpoint finding");
    assert_eq!(finding.index, Some(1), "{finding}");
    assert!(finding.message.contains("rewritten"), "{finding}");
}
