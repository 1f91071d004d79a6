//! `warrant-hook hook claude-code` (the hooks' own binary, which `warrant setup` writes) and
//! `warrant hook claude-code` on an allowed call: wall time from process start to the answer, on
//! spools of several chain lengths, side by side with the start of a trivial Rust binary
//! (`examples/noop.rs`), all interleaved in one run (docs/performance.md "Hooks").
//!
//! ```text
//! cargo build --release --bin warrant --bin warrant-hook --example noop --example hook_latency
//! target/release/examples/hook_latency --runs 200 --records 0,1000,100000
//! ```
//! Options: `--runs N` (default 500) answers timed for each spool; `--records A,B,…` (default
//! `0`) the chain records of each spool (`warrant generate-spool`, a decision every 50 records,
//! `--pending` packets), after which the principal refuses one packet so the chain ends with a
//! signed checkpoint and its agents' snapshot, as a chain the principal works on does;
//! `--pending M` (default 1,000, at most half the records) pending packets; `--bin PATH`
//! (default `target/release/warrant`), `--hook-bin PATH` (default `target/release/warrant-hook`),
//! `--noop PATH` (default `target/release/examples/noop`),
//! `--pace MS` (default 0) between rounds. A `Read` is `safe`, so the gate allows it with no
//! packet, and it spends none of Ring 3's rate limit.
//!
//! Method. One configuration (an unprotected key, pinned) and one spool per size; each round
//! spawns the trivial binary and then the hook on every spool, each with a Claude Code PreToolUse
//! event for `Read` on stdin (a new `tool_use_id` each time, as a real call has), and waits for it
//! to exit. Every hook answer is checked to be the allow. Percentiles are over the rounds; the
//! series alternate so the machine's state is shared. The last line of each binary gives, for
//! each size, the p99 less the empty spool's (when `0` is among the sizes).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn main() {
    let mut runs = 500usize;
    let mut sizes = vec![0u64];
    let mut pending = 1_000u64;
    let mut bin = "target/release/warrant".to_owned();
    let mut noop = "target/release/examples/noop".to_owned();
    let mut hook_bin = "target/release/warrant-hook".to_owned();
    let mut pace = 0u64;
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--runs" => runs = value().parse().expect("--runs N"),
            "--records" => {
                sizes =
                    value().split(',').map(|s| s.trim().replace('_', "").parse().expect("--records A,B,…")).collect();
            }
            "--pending" => pending = value().parse().expect("--pending M"),
            "--bin" => bin = value(),
            "--noop" => noop = value(),
            "--hook-bin" => hook_bin = value(),
            "--pace" => pace = value().parse().expect("--pace MS"),
            other => panic!("unknown option {other}"),
        }
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("config");
    let env = |c: &mut Command, spool: &Path| {
        c.env("WARRANT_CONFIG", &config)
            .env("WARRANT_SPOOL", spool)
            .env("WARRANT_PRINCIPAL", "alice")
            .env("XDG_DATA_HOME", dir.path().join("data"));
    };
    let run = |spool: &Path, args: &[&str]| {
        let mut c = Command::new(&bin);
        env(&mut c, spool);
        let o = c.args(args).stdin(Stdio::null()).output().expect("run warrant");
        assert!(o.status.success(), "warrant {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    };
    run(&dir.path().join("unused"), &["keys", "init", "--no-passphrase"]);
    let spools: Vec<PathBuf> = sizes
        .iter()
        .map(|&records| {
            let spool = dir.path().join(format!("spool-{records}"));
            std::fs::create_dir_all(&spool).expect("spool");
            if records > 0 {
                let started = Instant::now();
                let pending = pending.min(records / 2).max(1).to_string();
                run(
                    &spool,
                    &[
                        "generate-spool",
                        "--records",
                        &records.to_string(),
                        "--decision-every",
                        "50",
                        "--pending",
                        &pending,
                    ],
                );
                // The principal's decision signs a checkpoint and writes the agents' snapshot.
                run(&spool, &["refuse", "pending-000000", "--yes", "--reason", "benchmark"]);
                eprintln!("spool of {records} records ready in {:.1} s", started.elapsed().as_secs_f64());
            }
            spool
        })
        .collect();
    let time = |program: &str, spool: &Path, args: &[&str], input: &[u8], expect: Option<&str>| -> Duration {
        let mut c = Command::new(program);
        env(&mut c, spool);
        let started = Instant::now();
        let mut child =
            c.args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
        // The noop does not read its stdin: a closed pipe is not an error for it.
        let written = child.stdin.take().expect("stdin").write_all(input);
        assert!(written.is_ok() || expect.is_none(), "write: {written:?}");
        let o = child.wait_with_output().expect("wait");
        let took = started.elapsed();
        if let Some(expect) = expect {
            let out = String::from_utf8_lossy(&o.stdout);
            assert!(out.contains(expect), "unexpected answer: {out}{}", String::from_utf8_lossy(&o.stderr));
        }
        took
    };
    let mut base = Vec::with_capacity(runs);
    let mut hooks: Vec<Vec<Duration>> = vec![Vec::with_capacity(runs); spools.len()];
    let mut lean: Vec<Vec<Duration>> = vec![Vec::with_capacity(runs); spools.len()];
    for i in 0..runs {
        let event = format!(
            r#"{{"session_id":"bench","cwd":"/home/alice/project","hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{{"file_path":"README.md"}},"tool_use_id":"toolu_bench_{i}"}}"#
        );
        base.push(time(&noop, &spools[0], &[], event.as_bytes(), None));
        for ((spool, series), lean) in spools.iter().zip(&mut hooks).zip(&mut lean) {
            let allow = Some("\"permissionDecision\":\"allow\"");
            lean.push(time(&hook_bin, spool, &["hook", "claude-code"], event.as_bytes(), allow));
            series.push(time(&bin, spool, &["hook", "claude-code"], event.as_bytes(), allow));
        }
        std::thread::sleep(Duration::from_millis(pace));
    }
    let pct = |v: &mut Vec<Duration>, p: f64| {
        v.sort();
        v[((v.len() as f64 - 1.0) * p).round() as usize].as_secs_f64() * 1e3
    };
    println!("{runs} calls on each spool ({pending} pending packets at most, a decision every 50 records)");
    let row = |name: &str, v: &mut Vec<Duration>| {
        println!("{name:44} p50 {:7.2} ms   p90 {:7.2} ms   p99 {:7.2} ms", pct(v, 0.5), pct(v, 0.9), pct(v, 0.99));
    };
    row("trivial Rust binary (noop)", &mut base);
    for (name, all) in [("warrant-hook", &mut lean), ("warrant hook", &mut hooks)] {
        let mut p99 = Vec::new();
        for (records, series) in sizes.iter().zip(all.iter_mut()) {
            row(&format!("{name} (allow), {records} chain records"), series);
            p99.push((*records, pct(series, 0.99)));
        }
        if let Some(&(_, empty)) = p99.iter().find(|(r, _)| *r == 0) {
            let over: Vec<String> =
                p99.iter().filter(|(r, _)| *r > 0).map(|(r, p)| format!("{r} records {:+.2} ms", p - empty)).collect();
            println!("{name}: p99 beside the empty chain's: {}", over.join(", "));
        }
    }
}
