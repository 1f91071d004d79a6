//! The store boundary's conformance checks: what every [`ChainLog`] must do, run
//! against the directory store here and against JetStream in `tests/jetstream.rs`, so both
//! stores are held to the same rules.

use serde_json::{Map, Value, json};
use warrant::protocol::chain::{self, ChainHead, VerifyOptions};
use warrant::store::{ChainLog, StoreError};

/// A record body as an agent's receipt would have it (every field but the three `seal` sets).
pub fn body(n: usize) -> Map<String, Value> {
    let mut meta = Map::new();
    meta.insert("n".into(), json!(n));
    chain::new_record_body(
        "agent-a",
        "tool.call",
        None,
        "success",
        &format!("trace-{n}"),
        "act_auto",
        "2026-11-26T12:00:00Z",
        meta,
    )
}

/// Parses every stored line of `log`.
pub fn records(log: &dyn ChainLog) -> Vec<Value> {
    log.lines().expect("lines").iter().map(|l| serde_json::from_slice(l).expect("a stored line parses")).collect()
}

/// Runs the rules every store must keep on an empty `log`, and a copy into the empty `copy`.
pub fn conformance(log: &dyn ChainLog, copy: &dyn ChainLog) {
    let empty = ChainHead { last_index: 0, last_hash: None };
    assert_eq!(log.head().expect("head"), empty, "{}: a new chain is empty", log.location());

    // Appends link to the head they name; the head moves with them.
    let first = log.append_after(&empty, vec![body(1), body(2)]).expect("append to the empty chain");
    assert_eq!(first.iter().map(|a| a.chain_index).collect::<Vec<_>>(), [1, 2]);
    let head = log.head().expect("head");
    assert_eq!(head, ChainHead { last_index: 2, last_hash: Some(first[1].entry_hash.clone()) });

    // A stale head is refused, and nothing is written.
    match log.append_after(&empty, vec![body(3)]) {
        Err(StoreError::StaleHead { expected: 0, found: 2 }) => {}
        other => panic!("{}: an append onto a stale head must be refused, got {other:?}", log.location()),
    }
    assert_eq!(log.lines().expect("lines").len(), 2, "the refused append wrote nothing");
    log.append_after(&head, vec![body(3)]).expect("append onto the current head");

    // What was stored verifies, as the chain file does.
    let stored = records(log);
    let report = chain::verify_records(&stored, VerifyOptions::default());
    assert!(report.is_valid(), "{}: {:?}", log.location(), report.findings);
    assert_eq!(report.total, 3);

    // A copy keeps every entry_hash, record by record, and verifies to the same root.
    let mut at = copy.head().expect("copy head");
    for rec in &stored {
        let rec = rec.as_object().expect("object").clone();
        let appended = copy.append_after(&at, vec![rec.clone()]).expect("copy a record");
        assert_eq!(Some(appended[0].entry_hash.as_str()), rec.get("entry_hash").and_then(Value::as_str));
        at = copy.head().expect("copy head");
    }
    let copied = records(copy);
    assert_eq!(copied, stored, "the copy holds the same records");
    assert_eq!(chain::verify_records(&copied, VerifyOptions::default()).root_hash, report.root_hash);

    // A record changed in transit is not a copy: refused, nothing written.
    let mut forged = stored[2].as_object().expect("object").clone();
    forged.insert("outcome".into(), json!("failure"));
    forged.insert("chain_index".into(), json!(4));
    forged.insert("previous_hash".into(), json!(at.last_hash));
    match copy.append_after(&at, vec![forged]) {
        Err(StoreError::NotACopy { .. }) => {}
        other => {
            panic!("{}: a record that would change its entry_hash must be refused, got {other:?}", copy.location())
        }
    }
    assert_eq!(copy.lines().expect("lines").len(), 3);
}

/// `writers` threads, each with its own handle from `open`, race to extend the same head:
/// exactly one wins, the others are told the head moved, and the chain holds one record more.
pub fn one_of_many_wins(open: &(dyn Fn() -> Box<dyn ChainLog + Send> + Sync), writers: usize) {
    let head = open().head().expect("head");
    let before = open().lines().expect("lines").len();
    let barrier = std::sync::Barrier::new(writers);
    let results: Vec<Result<(), StoreError>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..writers)
            .map(|i| {
                let (head, barrier) = (&head, &barrier);
                s.spawn(move || {
                    let log = open();
                    barrier.wait();
                    log.append_after(head, vec![body(100 + i)]).map(drop)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("writer")).collect()
    });
    let won = results.iter().filter(|r| r.is_ok()).count();
    let stale = results.iter().filter(|r| matches!(r, Err(StoreError::StaleHead { .. }))).count();
    assert_eq!((won, stale), (1, writers - 1), "{results:?}");
    assert_eq!(open().lines().expect("lines").len(), before + 1);
}
