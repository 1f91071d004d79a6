//! Speed: a decision reads none of the checkpointed prefix. The principal's fold of it
//! (`<copies>/<spool id>.fold.json`), bound to the signed checkpoint by `fold_sha256`, stands in
//! for the prefix; a fold in any doubt (altered, of an older checkpoint, missing) sends the
//! decision back to reading and verifying the chain (`docs/spool.md`, Incremental verification).

use crate::signed_spool;

use serde_json::{Value, json};
use signed_spool::Fixture;
use warrant::protocol::control::{ControlInput, ControlKind};
use warrant::protocol::decision::Verdict;
use warrant::protocol::graduation::gate::AgentStanding;
use warrant::store::checkpoint_files;
use warrant::store::spool::{self, DecideError, Scanner};

const AT: &str = "2026-11-21T10:00:00Z";

/// `alice`'s spool ([`signed_spool::Fixture`]) with the principal's checkpoint copies (and the
/// fold beside them) in `copies/`.
fn fixture() -> Fixture {
    let mut f = signed_spool::fixture_with_seed(7);
    f.spool = f.spool.with_checkpoint_copies(f.dir.path().join("copies"));
    f
}

/// This file's helpers on the shared fixture (a trait: other files add their own).
trait Helpers {
    fn publish(&self, id: &str, agent: &str);
    fn decide(&self, id: &str, agent: &str) -> Result<spool::Decided, DecideError>;
    fn quarantine(&self, agent: &str);
    fn fold_path(&self) -> std::path::PathBuf;
    fn local_checkpoint(&self) -> warrant::protocol::checkpoint::Checkpoint;
}

impl Helpers for Fixture {
    fn publish(&self, id: &str, agent: &str) {
        let doc = warrant::protocol::packet::portable_packet(
            id,
            "draft.compose",
            agent,
            "s",
            json!({"id": id}),
            "2026-11-21T09:00:00Z",
        );
        self.spool.publish(&self.spool.packets_dir(), id, &doc).expect("publish");
    }

    /// Decides `id` (published first if it is not yet), refusing an approval for an agent the
    /// chain as the decision saw it does not hold active (the CLI's composed verdict does so too).
    fn decide(&self, id: &str, agent: &str) -> Result<spool::Decided, DecideError> {
        if !self.spool.packets_dir().join(format!("{id}.json")).exists() {
            self.publish(id, agent);
        }
        let snap = Scanner::new().scan(&self.spool).expect("scan");
        let packet = snap.packet(id).expect("packet").packet.clone();
        let observer = warrant::preconditions::Observer::default();
        spool::decide_with(
            &self.spool,
            &self.principal,
            &self.pinned,
            &packet,
            None,
            Verdict::Approve,
            None,
            None,
            AT,
            &observer,
            None,
            |view| match view.controls.standing(&packet.agent) {
                AgentStanding::Active => Ok(Vec::new()),
                other => Err(format!("{} is {}", packet.agent, other.as_str())),
            },
        )
    }

    fn quarantine(&self, agent: &str) {
        let input = ControlInput {
            kind: ControlKind::Quarantine,
            subject: agent.into(),
            fields: serde_json::Map::new(),
            reason: Some("test".into()),
            decided_at: AT.into(),
        };
        let policies = warrant::protocol::graduation::PolicySet::default();
        spool::append_control(&self.spool, &self.principal, &self.pinned, &policies, &warrant::monitor::Scores, input)
            .expect("quarantined");
    }

    fn fold_path(&self) -> std::path::PathBuf {
        checkpoint_files::fold_copy(&self.spool).expect("copies kept")
    }

    fn local_checkpoint(&self) -> warrant::protocol::checkpoint::Checkpoint {
        let path = checkpoint_files::local_copy(&self.spool).expect("copy");
        let signed: Value = serde_json::from_slice(&std::fs::read(&path).expect("copy")).expect("json");
        warrant::protocol::checkpoint::verify(&signed, &self.pinned, "copy").expect("valid")
    }
}

fn already_decided(r: Result<spool::Decided, DecideError>) -> bool {
    matches!(r, Err(DecideError::AlreadyDecided { .. }))
}

/// Every decision writes a fold bound to the checkpoint it signs, whose `prefix_sha256` still
/// hashes the whole chain (extended from the fold's SHA-256 state, the prefix not read).
#[test]
fn each_checkpoint_binds_the_fold_written_beside_it() {
    let f = fixture();
    for i in 0..3 {
        f.decide(&format!("p-{i}"), "agent-a").expect("decided");
        let cp = f.local_checkpoint();
        let fold = std::fs::read(f.fold_path()).expect("fold written");
        assert_eq!(cp.fold_sha256, Some(warrant::protocol::canonical::sha256_prefixed(&fold)));
        let chain = std::fs::read(f.spool.chain_path()).expect("chain");
        assert_eq!(cp.prefix_sha256, Some(warrant::protocol::canonical::sha256_prefixed(&chain)));
        assert_eq!((cp.records, cp.bytes), (i + 1, chain.len() as u64));
    }
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(f.fold_path()).expect("fold").permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the fold is the principal's alone");
}

/// The prefix is not read: a prefix record rewritten in place (same length, its line no longer
/// JSON) changes nothing a decision sees: the earlier decision still refuses a second one, a new
/// packet is decided onto the signed head, and the fold's quarantine still holds. The full
/// verification (`warrant verify`, the console's background check) reports the rewrite.
#[test]
fn a_decision_reads_nothing_of_the_checkpointed_prefix() {
    let f = fixture();
    f.decide("p-0", "agent-a").expect("decided");
    f.quarantine("agent-q");
    f.decide("p-1", "agent-a").expect("decided");
    let mut chain = std::fs::read(f.spool.chain_path()).expect("chain");
    let first_end = chain.iter().position(|&b| b == b'\n').expect("line");
    let second_end = first_end + 1 + chain[first_end + 1..].iter().position(|&b| b == b'\n').expect("line");
    // Records 1 (p-0's approval) and 2 (the quarantine) become blanks; record 3 ends the prefix.
    for b in &mut chain[..second_end] {
        if *b != b'\n' {
            *b = b'x';
        }
    }
    std::fs::write(f.spool.chain_path(), &chain).expect("rewrite in place");

    assert!(already_decided(f.decide("p-0", "agent-a")), "p-0's approval comes from the fold");
    match f.decide("q-1", "agent-q") {
        Err(DecideError::Refused(why)) => assert!(why.contains("quarantined"), "{why}"),
        other => panic!("the quarantine in the fold was not applied: {:?}", other.map(|d| d.appended.chain_index)),
    }
    let d = f.decide("p-2", "agent-a").expect("decided without reading the prefix");
    assert_eq!(d.appended.chain_index, 4);
    assert!(already_decided(f.decide("p-2", "agent-a")));

    let report = spool::verify_chain(&f.spool, &f.pinned).expect("verify").report;
    let first = report.first().expect("the full verification sees the rewrite");
    assert_eq!(first.index, Some(0), "{first}");
}

/// A fold altered after it was written (its digest no longer the checkpoint's `fold_sha256`) is
/// not used: the decision reads the chain again, and still refuses a second decision and
/// applies the quarantine the altered fold left out; the fold is then written afresh.
#[test]
fn an_altered_fold_falls_back_to_reading_the_chain() {
    let f = fixture();
    f.decide("p-0", "agent-a").expect("decided");
    f.quarantine("agent-q");
    let mut fold: Value = serde_json::from_slice(&std::fs::read(f.fold_path()).expect("fold")).expect("json");
    assert!(fold["decisions"]["p-0"].is_object(), "{fold}");
    assert_eq!(fold["events"].as_array().map(Vec::len), Some(1), "{fold}");
    fold["decisions"] = json!({});
    fold["events"] = json!([]);
    std::fs::write(f.fold_path(), serde_json::to_vec(&fold).expect("json")).expect("tamper");

    assert!(already_decided(f.decide("p-0", "agent-a")), "the altered fold was used");
    assert!(matches!(f.decide("q-1", "agent-q"), Err(DecideError::Refused(_))), "the quarantine was lost");
    // Nothing was appended; the next decision writes a fold the checkpoint binds again.
    f.decide("p-1", "agent-a").expect("decided");
    let fold = std::fs::read(f.fold_path()).expect("fold");
    assert_eq!(f.local_checkpoint().fold_sha256, Some(warrant::protocol::canonical::sha256_prefixed(&fold)));
    let fold: Value = serde_json::from_slice(&fold).expect("json");
    assert!(fold["decisions"]["p-0"].is_object() && fold["decisions"]["p-1"].is_object(), "{fold}");
}

/// A fold of an older checkpoint, put back beside a newer one, is not used: it lacks the
/// decision the newer checkpoint's prefix holds, which would otherwise be decided twice.
#[test]
fn a_fold_of_an_older_checkpoint_is_not_used() {
    let f = fixture();
    f.decide("p-0", "agent-a").expect("decided");
    let older = std::fs::read(f.fold_path()).expect("fold");
    f.decide("p-1", "agent-a").expect("decided");
    std::fs::write(f.fold_path(), &older).expect("older fold put back");
    assert!(already_decided(f.decide("p-1", "agent-a")), "p-1 was decided twice");
    assert!(already_decided(f.decide("p-0", "agent-a")));
}

/// A checkpoint without `fold_sha256` (signed before it existed) or with no fold file beside
/// it still works: the decision reads the chain once and writes the fold for the next one.
#[test]
fn a_checkpoint_without_a_fold_takes_the_slow_path_once() {
    let f = fixture();
    f.decide("p-0", "agent-a").expect("decided");
    let cp = f.local_checkpoint();
    let old = warrant::protocol::checkpoint::sign(
        &f.principal,
        cp.records,
        &cp.head_hash,
        cp.bytes,
        cp.prefix_sha256.as_deref().expect("prefix_sha256"),
        &cp.signed_at,
    );
    let copy = checkpoint_files::local_copy(&f.spool).expect("copy");
    std::fs::write(&copy, serde_json::to_vec(&old).expect("json")).expect("old checkpoint");
    assert_eq!(f.local_checkpoint().fold_sha256, None);
    assert!(already_decided(f.decide("p-0", "agent-a")));
    f.decide("p-1", "agent-a").expect("decided");
    assert!(f.local_checkpoint().fold_sha256.is_some(), "the slow path wrote a fold");

    std::fs::remove_file(f.fold_path()).expect("rm fold");
    assert!(already_decided(f.decide("p-1", "agent-a")));
    f.decide("p-2", "agent-a").expect("decided");
    assert!(f.fold_path().exists());
    assert!(spool::verify_chain(&f.spool, &f.pinned).expect("verify").report.is_valid());
}
