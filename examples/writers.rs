//! Many writers on one spool, the full run of `tests/concurrency.rs`: library threads and real
//! `warrant` processes append receipts and decisions at once while the real console runs under
//! tmux (tmux must be installed), then the chain is checked (verifies; nothing lost, duplicated or
//! out of its writer's order) and the figures printed.
//!
//! ```text
//! cargo build --release && cargo run --release --example writers -- \
//!     [--writers 16] [--cli-writers 4] [--records 80000] [--decide-every 400] \
//!     [--spool DIR] [--bin target/release/warrant] [--no-console]
//! ```
//! `--spool DIR` keeps the run's files (spool, config, console data) in DIR, which must be empty
//! or absent; without it a temporary directory is used. Exits 1 if any check failed.

#[path = "../tests/support/writers.rs"]
mod writers;

use std::path::PathBuf;
use std::time::Duration;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let number = |name: &str, default: usize| value(name).map_or(default, |v| v.parse().expect("a number"));
    let temp = tempfile::tempdir().expect("tempdir");
    let dir = value("--spool").map_or_else(|| temp.path().to_owned(), PathBuf::from);
    std::fs::create_dir_all(&dir).expect("dir");
    let plan = writers::Plan {
        bin: value("--bin").map_or_else(|| "target/release/warrant".into(), PathBuf::from),
        dir,
        writers: number("--writers", 16),
        cli_writers: number("--cli-writers", 4),
        records: number("--records", 80_000),
        decide_every: number("--decide-every", 400),
        console: !args.iter().any(|a| a == "--no-console"),
        console_deadline: Duration::from_secs(120),
    };
    assert!(plan.cli_writers <= plan.writers && plan.writers > 0 && plan.decide_every > 0);
    let outcome = writers::run(&plan);
    println!("{}", writers::report(&plan, &outcome));
    for f in outcome.failures.iter().take(10) {
        println!("failed: {f}");
    }
    for p in outcome.problems.iter().take(10) {
        println!("problem: {p}");
    }
    if outcome.console_ok == Some(false) {
        println!("console's last screen:\n{}", outcome.console_screen);
    }
    let code = if outcome.all_good() { 0 } else { 1 };
    // `exit` runs no destructors: remove the temporary spool first.
    drop(temp);
    std::process::exit(code);
}
