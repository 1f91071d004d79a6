//! The store boundary: the directory store's chain behind [`ChainLog`], held to the
//! same conformance checks as JetStream (`tests/support/chain_log.rs`), with real files and the
//! chain's real lock; and what deciding asks of the surfaces above the store (the preconditions
//! an approval records, the score an elevation is checked against), given by the caller.

use crate::chain_log;
use crate::signed_spool;
use crate::spool_log;

use serde_json::{Value, json};
use warrant::protocol::chain::VerifyOptions;
use warrant::protocol::control::{ControlInput, ControlKind};
use warrant::protocol::decision::Verdict;
use warrant::protocol::ladder::ActionPrecondition;
use warrant::protocol::verdict::VerdictContext;
use warrant::store::chain_file;
use warrant::store::spool::{self, AgentScores, ChainView, DecideError, PreconditionRecorder, Scanner, Snapshot};
use warrant::store::{ChainLog, DirectoryChain};

#[test]
fn the_directory_store_keeps_the_chain_rules() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = DirectoryChain::new(dir.path().join("a").join("chain.jsonl"));
    std::fs::create_dir_all(dir.path().join("a")).expect("mkdir");
    std::fs::create_dir_all(dir.path().join("b")).expect("mkdir");
    let copy = DirectoryChain::new(dir.path().join("b").join("chain.jsonl"));
    chain_log::conformance(&log, &copy);
    // The file the store wrote verifies as `warrant verify` reads it.
    let report =
        chain_file::verify_file(&dir.path().join("a").join("chain.jsonl"), VerifyOptions::default()).expect("verify");
    assert!(report.is_valid(), "{:?}", report.findings);
    assert_eq!(report.total, 3);
}

#[test]
fn of_eight_writers_on_one_head_exactly_one_appends() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("chain.jsonl");
    let log = DirectoryChain::new(path.clone());
    let head = log.head().expect("head");
    log.append_after(&head, vec![chain_log::body(0)]).expect("first record");
    chain_log::one_of_many_wins(&|| Box::new(DirectoryChain::new(path.clone())), 8);
}

/// What the store asks of the surfaces above it when it decides: the preconditions an approval
/// records are the ones the caller's observer gives ([`PreconditionRecorder`]), and a caller that
/// observes nothing ([`spool::decide`], [`spool::Unobserved`]) cannot approve a packet with a
/// precondition to re-check.
#[test]
fn an_approval_records_the_preconditions_its_observer_gives_and_fails_closed_without_one() {
    struct Seen;
    impl PreconditionRecorder for Seen {
        fn record(&self, pre: &[ActionPrecondition], _publisher: Option<u32>) -> Result<Option<Value>, String> {
            let seen: Vec<Value> = pre
                .iter()
                .map(|p| json!({"check_id": p.check_id, "parameters": p.parameters, "expected_at_approval": "seen"}))
                .collect();
            Ok(Some(Value::Array(seen)))
        }
    }
    let f = signed_spool::fixture_with_seed(3);
    let mut doc = warrant::protocol::packet::portable_packet(
        "p-pre",
        "draft.compose",
        "agent-a",
        "s",
        json!({"text": "x"}),
        "2026-11-21T09:00:00Z",
    );
    doc["governance"] = json!({"contract": {
        "required_level": 4, "blast_radius": "external", "reversibility": "irreversible",
        "scope": {"level": "project", "identifier": "acme"}, "data_sensitivity": "private",
        "preconditions": [{"check_id": "file.exists", "parameters": {"path": "/srv/acme/ready"},
            "expected_at_approval": null, "must_revalidate_at_execution": true}]}});
    f.spool.publish(&f.spool.packets_dir(), "p-pre", &doc).expect("publish");
    let packet = Scanner::new().scan(&f.spool).expect("scan").packets.remove(0).packet;
    let at = "2026-11-21T10:00:00Z";

    let refused = spool::decide(&f.spool, &f.principal, &f.pinned, &packet, Verdict::Approve, None, at);
    match refused {
        Err(DecideError::PreconditionFailed(why)) => assert!(why.contains("file.exists"), "{why}"),
        other => panic!("an approval nobody observed for must fail closed: {other:?}"),
    }
    assert!(chain_file::read_chain(&f.spool.chain_path()).expect("read").records.is_empty(), "nothing appended");

    let decided = spool::decide_with(
        &f.spool,
        &f.principal,
        &f.pinned,
        &packet,
        None,
        Verdict::Approve,
        None,
        None,
        at,
        &Seen,
        None,
        |_| Ok(Vec::new()),
    )
    .expect("approved");
    let recorded = &decided.signed.document["preconditions"];
    assert_eq!(recorded[0]["check_id"], "file.exists", "{recorded}");
    assert_eq!(recorded[0]["expected_at_approval"], "seen", "{recorded}");
    let file: Value =
        serde_json::from_slice(&std::fs::read(&decided.decision_file).expect("decision file")).expect("json");
    assert_eq!(file["document"]["preconditions"], *recorded, "the agent's decision file carries what was signed");
}

/// An elevation is checked against the agent's effective score as the caller observes it
/// ([`AgentScores`]; the console and CLI pass the monitor's): the score decides whether the
/// hypervisor grants it, and the record carries the score and the ring it started from.
#[test]
fn an_elevation_is_checked_against_the_score_its_caller_observes() {
    struct Claims(f64);
    impl AgentScores for Claims {
        fn effective_score(&self, _: &VerdictContext<'_>, _: &Snapshot, _: &ChainView, _: &str) -> f64 {
            self.0
        }
    }
    let f = signed_spool::fixture_with_seed(4);
    let policies = warrant::protocol::graduation::PolicySet::default();
    let elevate = |score: f64| {
        let mut fields = serde_json::Map::new();
        fields.insert("ring".into(), json!(1));
        fields.insert("ttl_seconds".into(), json!(600));
        let input = ControlInput {
            kind: ControlKind::Elevate,
            subject: "agent-e".into(),
            fields,
            reason: Some("release day".into()),
            decided_at: "2026-11-21T10:00:00Z".into(),
        };
        spool::append_control(&f.spool, &f.principal, &f.pinned, &policies, &Claims(score), input)
    };
    match elevate(0.30) {
        Err(DecideError::Refused(why)) => assert!(why.contains("insufficient_trust"), "{why}"),
        other => panic!("a Ring 1 elevation at 0.30 is denied: {other:?}"),
    }
    let (granted, _) = elevate(0.95).expect("a Ring 1 elevation at 0.95 is granted");
    assert_eq!(granted.fields["trust_score"], "0.9500");
    assert_eq!(granted.fields["original_ring"], 2, "0.95 without consensus is Ring 2: {:?}", granted.fields);
    assert_eq!(granted.fields["ring"], 1);
    let records = chain_file::read_chain(&f.spool.chain_path()).expect("read").records;
    assert_eq!(records.len(), 1, "only the granted elevation is recorded");
}

/// The directory spool keeps an agent's side of the store ([`SpoolLog`]) by the rules every store
/// keeps, as files; and an id is one publication: another packet under a published id is refused
/// and the first is kept.
#[test]
fn the_directory_spool_keeps_the_agents_side_by_the_rules_of_every_store() {
    use warrant::store::publications::{Publication, SpoolLog};
    let f = signed_spool::fixture_with_seed(5);
    spool_log::conformance(&f.spool, &|_agent, id, bytes| {
        std::fs::create_dir_all(f.spool.decisions_dir()).expect("mkdir");
        std::fs::write(f.spool.decision_path(id), bytes).expect("decision file");
    });
    assert_eq!(
        std::fs::read(f.spool.packets_dir().join("p-1.json")).expect("the packet file"),
        spool_log::stored_bytes(&spool_log::packet("p-1", "agent-a")),
        "what is listed is the file"
    );
    let other = spool_log::packet("p-1", "agent-b");
    let e =
        SpoolLog::publish(&f.spool, Publication::Packet, "agent-b", "p-1", &other).expect_err("a second packet p-1");
    assert!(e.to_string().contains("another publication"), "{e}");
    assert_eq!(
        f.spool.publications(Publication::Packet).expect("list")[0],
        spool_log::stored_bytes(&spool_log::packet("p-1", "agent-a")),
        "the first is kept"
    );
    // A symlink or an oversized file among the decisions is an error, never a decision.
    std::os::unix::fs::symlink("/etc/hostname", f.spool.decision_path("p-2")).expect("symlink");
    assert!(f.spool.decision("agent-a", "p-2").is_err(), "a symlinked decision file is refused");
}

/// A spool is opened as what it is. A directory spool's appends and publications are files,
/// whatever the directory holds: here a replica's marker naming a store that nobody serves, which
/// the append path used to look for on every append and then tried to reach. `Spool::open` reads
/// the marker once, and a replica whose store cannot be reached is an error, never a directory.
#[test]
fn a_directory_spool_never_reaches_for_a_store_and_a_replica_is_opened_as_one() {
    use warrant::store::spool::{REPLICA_MARKER, Spool};
    let dir = tempfile::tempdir().expect("tempdir");
    let spool = Spool::new(dir.path().join("spool"));
    spool.ensure().expect("spool");
    // A loopback port nothing listens on: a connection is refused at once.
    let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("port").port();
    std::fs::write(spool.root().join(REPLICA_MARKER), format!("nats://127.0.0.1:{port}/nowhere\n")).expect("marker");
    assert!(!spool.is_replica());
    let appended = chain_file::append_to(&spool.chain_path(), spool.chain_upstream(), |_| {
        Ok(json!({"action": {"type": "note"}, "metadata": {}}).as_object().cloned().expect("object"))
    })
    .expect("a directory's append is the file's alone");
    assert_eq!(appended.chain_index, 1);
    let published = spool
        .publish(&spool.packets_dir(), "p-1", &json!({"id": "p-1", "agent": "a"}))
        .expect("a directory's publication is a file");
    assert!(published.is_file());
    let err = Spool::open(spool.root()).expect_err("a replica of a store that cannot be reached");
    assert!(!err.to_string().is_empty());
    // Where only a directory may be opened (the hooks' binary), a replica is refused as one,
    // without reaching for its store.
    let err = Spool::open_directory(spool.root()).expect_err("a replica is not a directory spool");
    assert!(matches!(&err, warrant::store::StoreError::Replica { root, .. } if root == spool.root()), "{err}");
    // Without the marker, the same directory opens as a directory spool, either way.
    std::fs::remove_file(spool.root().join(REPLICA_MARKER)).expect("remove the marker");
    let opened = Spool::open(spool.root()).expect("a directory spool");
    assert!(!opened.is_replica() && opened == spool);
    let opened = Spool::open_directory(spool.root()).expect("a directory spool");
    assert!(!opened.is_replica() && opened == spool);
    // A marker that is a directory (it cannot be read as one) is no directory spool either.
    std::fs::create_dir(spool.root().join(REPLICA_MARKER)).expect("a directory as the marker");
    assert!(Spool::open_directory(spool.root()).is_err());
}
