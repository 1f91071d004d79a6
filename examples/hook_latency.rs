//! `warrant hook claude-code` on an allowed call: wall time from process start to the answer,
//! side by side with the start of a trivial Rust binary (`examples/noop.rs`), interleaved in one
//! run (docs/performance.md "Hooks").
//!
//! ```text
//! cargo build --release --bin warrant --example noop --example hook_latency
//! target/release/examples/hook_latency --runs 200
//! target/release/examples/hook_latency --runs 100 --spool-packets 1000
//! ```
//! Options: `--runs N` (default 500) answers timed for each, `--spool-packets M` (default 0)
//! chain records and M/2 pending packets already in the spool (`warrant generate-spool`, a decision every 50 records), `--bin
//! PATH` (default `target/release/warrant`), `--noop PATH` (default
//! `target/release/examples/noop`), `--pace MS` (default 0) between calls. A `Read` is `safe`,
//! so the gate allows it with no packet, and it spends none of Ring 3's rate limit.
//!
//! Method. A fresh configuration (an unprotected key, pinned) and spool; each run spawns the
//! process with a Claude Code PreToolUse event for `Read` on stdin (a new `tool_use_id` each
//! time, as a real call has) and waits for it to exit; the noop gets the same stdin. Every answer is checked to be the allow. Percentiles
//! are over the runs; the two series alternate so the machine's state is shared.

use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn main() {
    let mut runs = 500usize;
    let mut packets = 0usize;
    let mut bin = "target/release/warrant".to_owned();
    let mut noop = "target/release/examples/noop".to_owned();
    let mut pace = 0u64;
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--runs" => runs = value().parse().expect("--runs N"),
            "--spool-packets" => packets = value().parse().expect("--spool-packets M"),
            "--bin" => bin = value(),
            "--noop" => noop = value(),
            "--pace" => pace = value().parse().expect("--pace MS"),
            other => panic!("unknown option {other}"),
        }
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let env = |c: &mut Command| {
        c.env("WARRANT_CONFIG", dir.path().join("config"))
            .env("WARRANT_SPOOL", dir.path().join("spool"))
            .env("WARRANT_PRINCIPAL", "alice")
            .env("XDG_DATA_HOME", dir.path().join("data"));
    };
    let run = |args: &[&str]| {
        let mut c = Command::new(&bin);
        env(&mut c);
        let o = c.args(args).stdin(Stdio::null()).output().expect("run warrant");
        assert!(o.status.success(), "warrant {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    };
    run(&["keys", "init", "--no-passphrase"]);
    std::fs::create_dir_all(dir.path().join("spool")).expect("spool");
    if packets > 0 {
        let (records, pending) = (packets.to_string(), (packets / 2).to_string());
        run(&["generate-spool", "--records", &records, "--decision-every", "50", "--pending", &pending]);
    }
    let time = |program: &str, args: &[&str], input: &[u8], expect: Option<&str>| -> Duration {
        let mut c = Command::new(program);
        env(&mut c);
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
    let (mut hook, mut base) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
    for i in 0..runs {
        let event = format!(
            r#"{{"session_id":"bench","cwd":"/home/alice/project","hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{{"file_path":"README.md"}},"tool_use_id":"toolu_bench_{i}"}}"#
        );
        base.push(time(&noop, &[], event.as_bytes(), None));
        hook.push(time(&bin, &["hook", "claude-code"], event.as_bytes(), Some("\"permissionDecision\":\"allow\"")));
        std::thread::sleep(Duration::from_millis(pace));
    }
    let pct = |v: &mut Vec<Duration>, p: f64| {
        v.sort();
        v[((v.len() as f64 - 1.0) * p).round() as usize].as_secs_f64() * 1e3
    };
    let after = std::fs::read_dir(dir.path().join("spool/packets")).map_or(0, |d| d.count());
    println!(
        "spool: {packets} chain records and {} packets before the runs, {runs} calls, {after} packets after them",
        packets / 2
    );
    for (name, v) in [("trivial Rust binary (noop)", &mut base), ("warrant hook claude-code (allow)", &mut hook)] {
        println!("{name:34} p50 {:7.2} ms   p90 {:7.2} ms   p99 {:7.2} ms", pct(v, 0.5), pct(v, 0.9), pct(v, 0.99));
    }
}
