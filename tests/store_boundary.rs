//! The store boundary (issue 19): the directory store's chain behind [`ChainLog`], held to the
//! same conformance checks as JetStream (`tests/support/chain_log.rs`), with real files and the
//! chain's real lock.

#[path = "support/chain_log.rs"]
mod chain_log;

use warrant::protocol::chain::VerifyOptions;
use warrant::store::chain_file;
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
