//! Time to the console's first frame on a spool, through a real terminal (tmux), and how long
//! until the whole chain is verified; the console's peak resident memory (VmHWM) at the end.
//!
//! ```text
//! cargo run --release --example first_frame -- target/release/warrant /tmp/scale/spool /tmp/scale/cfg [PACKET-TEXT]
//! ```
//!
//! Starts `warrant --spool SPOOL console` in a detached 200×50 tmux session with
//! `WARRANT_CONFIG=CFG` and `WARRANT_PRINCIPAL` (default `alice`, the generator's), polls `tmux capture-pane` every 5 ms, and prints the milliseconds from
//! the launch to the first capture showing PACKET-TEXT (default `generated packet`: the
//! generated packets' summaries in the pending list), to the first showing the verification's progress bar, and to the first
//! showing `chain ok ·` without the progress bar (or `CHAIN BROKEN`). Figures go in
//! `docs/performance.md`.

use std::process::Command;
use std::time::{Duration, Instant};

fn tmux(args: &[&str]) -> String {
    let out = Command::new("tmux").args(args).output().expect("tmux");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn vm_hwm_kb(pid: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, bin, spool, cfg, rest @ ..] = args.as_slice() else {
        eprintln!("usage: first_frame WARRANT-BINARY SPOOL CONFIG-DIR [PACKET-TEXT]");
        std::process::exit(2);
    };
    let needle = rest.first().map_or("generated packet", String::as_str);
    let session = format!("first-frame-{}", std::process::id());
    let principal = std::env::var("WARRANT_PRINCIPAL").unwrap_or_else(|_| "alice".into());
    let command = format!("exec env WARRANT_CONFIG={cfg} WARRANT_PRINCIPAL={principal} {bin} --spool {spool} console");
    let start = Instant::now();
    tmux(&["new-session", "-d", "-s", &session, "-x", "200", "-y", "50", &command]);
    let pid = tmux(&["display-message", "-p", "-t", &session, "#{pane_pid}"]).trim().to_owned();
    let (mut first, mut progress, mut done) = (None, None, None);
    let mut peak = 0;
    while start.elapsed() < Duration::from_secs(120) && done.is_none() {
        let screen = tmux(&["capture-pane", "-p", "-t", &session]);
        let ms = start.elapsed().as_secs_f64() * 1000.0;
        if first.is_none() && screen.contains(needle) {
            first = Some(ms);
        }
        let verifying = screen.contains("verifying █") || screen.contains("verifying ░");
        if progress.is_none() && verifying {
            progress = Some(ms);
        }
        if first.is_some() && ((screen.contains("chain ok ·") && !verifying) || screen.contains("CHAIN BROKEN")) {
            done = Some(ms);
        }
        peak = peak.max(vm_hwm_kb(&pid).unwrap_or(0));
        std::thread::sleep(Duration::from_millis(5));
    }
    // The verifier's threads wind down after the screen says so, and memory can still peak
    // then: keep reading the high-water mark for a while.
    let settle = Instant::now();
    while settle.elapsed() < Duration::from_secs(5) {
        peak = peak.max(vm_hwm_kb(&pid).unwrap_or(0));
        std::thread::sleep(Duration::from_millis(50));
    }
    let screen = tmux(&["capture-pane", "-p", "-t", &session]);
    tmux(&["kill-session", "-t", &session]);
    let show = |v: Option<f64>| v.map_or_else(|| "never".to_owned(), |ms| format!("{ms:.0} ms"));
    println!("first frame with {needle:?}: {}", show(first));
    println!("progress bar shown:        {}", show(progress));
    println!("whole chain verified:      {}", show(done));
    println!("peak RSS (VmHWM):          {:.1} MB", peak as f64 / 1024.0);
    println!("status line: {}", screen.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim());
}
