//! Many writers at once: 16 writers (4 running the real `warrant` binary, 12 library threads)
//! append receipts and decisions to one spool while the real console runs under tmux on it.
//! Afterwards the chain verifies (`chain_file::verify_file` and `warrant verify`), no acknowledged
//! append is lost or duplicated, each is at the index it reported, each writer's records are in its
//! own order, and the console is alive and shows the whole chain as ok. The full run (80,000
//! records) is `cargo run --release --example writers` (docs/performance.md#appends).

use crate::writers;

use std::time::Duration;

#[test]
fn sixteen_writers_lose_nothing_duplicate_nothing_and_keep_their_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = writers::Plan {
        bin: env!("CARGO_BIN_EXE_warrant").into(),
        dir: dir.path().to_owned(),
        writers: 16,
        cli_writers: 4,
        records: 16 * 20,
        decide_every: 5,
        console: cfg!(feature = "console"),
        console_deadline: Duration::from_secs(30),
    };
    let outcome = writers::run(&plan);
    eprintln!("{}", writers::report(&plan, &outcome));
    assert!(outcome.failures.is_empty(), "appends failed: {:#?}", outcome.failures);
    assert!(outcome.problems.is_empty(), "{:#?}", outcome.problems);
    assert_eq!(outcome.acked, 320);
    assert_eq!(outcome.decisions, 64);
    assert_eq!(outcome.chain_records, 320);
    assert!(outcome.verify_file_valid);
    assert_eq!(outcome.signatures, 64, "every decision's signature verified");
    assert_eq!(outcome.warrant_verify, (Some(0), true));
    assert_eq!(outcome.side_files, 0, "no torn line without a crash");
    if plan.console {
        assert_eq!(outcome.console_ok, Some(true), "the console:\n{}", outcome.console_screen);
    }
    assert!(outcome.all_good());
}
