//! The console's verification of a spool's chain (`warrant_store::spool::verify_chain`: every
//! check, and what the console keeps of each record: decisions, evidence rows, receipts,
//! controls, grants) beside the verification alone (`warrant_protocol::chain::verify_reader`,
//! what `warrant verify` runs), in one process, alternated (docs/performance.md "The console's
//! start-up").
//!
//! ```text
//! cargo build --release --example chain_view
//! WARRANT_CONFIG=/tmp/scale/cfg target/release/examples/chain_view /tmp/scale/spool [RUNS]
//! ```
//!
//! The pinned keys are `$WARRANT_CONFIG`'s (`pinned_keys.toml`). Each of RUNS rounds (default
//! 3) times one of each; both must find the chain valid and count the same records, or the run
//! stops. It prints each time, the medians, and their ratio.

use std::time::Instant;
use warrant::protocol::chain::{VerifyOptions, verify_reader};
use warrant::store::prelude::*;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(spool) = args.get(1) else {
        eprintln!("usage: chain_view SPOOL [RUNS]   (pinned keys from $WARRANT_CONFIG)");
        std::process::exit(2);
    };
    let runs: usize = args.get(2).map_or(3, |r| r.parse().expect("RUNS is a number"));
    let config = std::env::var_os("WARRANT_CONFIG").expect("WARRANT_CONFIG names the configuration directory");
    let spool = warrant::store::spool::Spool::open_directory(spool).expect("a directory spool");
    let pinned = warrant::protocol::keys::PinnedKeys::load(std::path::Path::new(&config)).expect("pinned keys");
    let (mut view_s, mut alone_s) = (Vec::new(), Vec::new());
    for round in 1..=runs {
        let t = Instant::now();
        let view = warrant::store::spool::verify_chain(&spool, &pinned).expect("the chain is read");
        let view_time = t.elapsed().as_secs_f64();
        assert!(view.report.is_valid(), "the console's verification found the chain invalid");
        let t = Instant::now();
        let progress = std::sync::atomic::AtomicU64::new(0);
        let file = std::fs::File::open(spool.chain_path()).expect("the chain opens");
        let report = verify_reader(file, VerifyOptions { pinned: Some(&pinned), strict_signatures: true }, &progress)
            .expect("the chain is read");
        let alone_time = t.elapsed().as_secs_f64();
        assert!(report.is_valid(), "the verification alone found the chain invalid");
        assert_eq!(report.total, view.report.total, "both count the same records");
        println!(
            "round {round}: {} records, {} evidence rows: console's verification {view_time:.3} s, verification alone {alone_time:.3} s",
            report.total,
            view.evidence.len()
        );
        view_s.push(view_time);
        alone_s.push(alone_time);
    }
    let (v, a) = (median(view_s), median(alone_s));
    println!("median: console's verification {v:.3} s, verification alone {a:.3} s, ratio {:.2}x", v / a);
}
