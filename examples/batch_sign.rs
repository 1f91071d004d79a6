//! Batch signing beside single approvals, in the same run: N packets approved one at
//! a time with `spool::decide` (each verifies the chain, appends under the lock with its own
//! `fdatasync`, signs a checkpoint and writes a decision file), and N packets approved with one
//! `spool::decide_many` (one verification, one lock, one `write` and one `fdatasync` of the chain,
//! one checkpoint, then N decision files). Wall time of each, and, when `strace` is installed, the
//! `fsync`/`fdatasync` calls each made (counted by running the same work again under
//! `strace -f -c`). Spools are made in `--dir` (default: a new directory under the current one, so
//! the figures are for the disk the spool is on).
//!
//! ```text
//! cargo run --release --example batch_sign -- [--count 1000] [--dir DIR]
//! ```

use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;
use warrant::protocol::decision::Verdict;
use warrant::protocol::keys::{PinnedKeys, Principal};
use warrant::store::spool::{self, BatchItem, Scanner, Spool};

const AT: &str = "2026-11-21T10:00:00Z";

fn principal() -> (Principal, PinnedKeys) {
    let principal = Principal::from_seed("bench", &[9u8; 32]);
    let mut pinned = PinnedKeys::default();
    pinned.pin("bench", principal.verifying_key());
    (principal, pinned)
}

fn spool_at(dir: &Path) -> Spool {
    Spool::new(dir.join("spool")).with_checkpoint_copies(dir.join("copies"))
}

/// A fresh spool in `dir` with `n` pending packets from ten agents.
fn prepare(dir: &Path, n: usize) {
    let spool = spool_at(dir);
    spool.ensure().expect("spool");
    for i in 0..n {
        let id = format!("b-{i:05}");
        let doc = warrant::protocol::packet::portable_packet(
            &id,
            "draft.compose",
            &format!("agent-{}", i % 10),
            &format!("Draft {i}"),
            json!({"to": format!("team-{i}@example.com")}),
            "2026-11-21T09:00:00Z",
        );
        spool.publish(&spool.packets_dir(), &id, &doc).expect("publish");
    }
}

/// The signing work of one mode on a prepared spool; returns the seconds it took.
fn work(mode: &str, dir: &Path) -> f64 {
    let spool = spool_at(dir);
    let (principal, pinned) = principal();
    let snap = Scanner::new().scan(&spool).expect("scan");
    let start = Instant::now();
    match mode {
        "single" => {
            for e in &snap.packets {
                spool::decide(&spool, &principal, &pinned, &e.packet, Verdict::Approve, None, AT).expect("decide");
            }
        }
        "batch" => {
            let items: Vec<BatchItem<'_>> =
                snap.packets.iter().map(|e| BatchItem { packet: &e.packet, publisher: None }).collect();
            let observer = warrant::preconditions::Observer::default();
            let done = spool::decide_many(
                &spool,
                &principal,
                &pinned,
                &items,
                Verdict::Approve,
                None,
                AT,
                &observer,
                |_, _| Ok(Vec::new()),
            )
            .expect("decide_many");
            assert_eq!(done.len(), items.len());
        }
        other => panic!("unknown mode {other}"),
    }
    let secs = start.elapsed().as_secs_f64();
    let view = spool::verify_chain(&spool, &pinned).expect("verify");
    assert!(view.report.is_valid() && view.report.total == snap.packets.len(), "{:?}", view.report.findings);
    secs
}

/// `fsync` + `fdatasync` calls of `mode`'s work, from `strace -f -c`, or `None` without strace.
fn syncs(mode: &str, dir: &Path) -> Option<(u64, u64)> {
    let out = dir.join("strace.txt");
    let status = Command::new("strace")
        .args(["-f", "-c", "-e", "trace=fsync,fdatasync", "-o"])
        .arg(&out)
        .arg(std::env::current_exe().ok()?)
        .args(["--child", mode, "--dir"])
        .arg(dir)
        .stdout(std::process::Stdio::null())
        .status()
        .ok()?;
    if !status.success() {
        return None;
    }
    let text = std::fs::read_to_string(&out).ok()?;
    let calls = |name: &str| {
        text.lines()
            .find(|l| l.split_whitespace().last() == Some(name))
            .and_then(|l| {
                let cols: Vec<&str> = l.split_whitespace().collect();
                // % time, seconds, usecs/call, calls, [errors,] syscall
                cols.get(3).and_then(|c| c.parse().ok())
            })
            .unwrap_or(0)
    };
    Some((calls("fdatasync"), calls("fsync")))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    if let Some(mode) = arg("--child") {
        let dir = PathBuf::from(arg("--dir").expect("--dir"));
        println!("{}", work(&mode, &dir));
        return;
    }
    let n: usize = arg("--count").map_or(1000, |c| c.parse().expect("--count N"));
    let base = tempfile::Builder::new()
        .prefix("batch-sign-")
        .tempdir_in(arg("--dir").map_or_else(|| PathBuf::from("."), PathBuf::from))
        .expect("tempdir");
    println!("{n} approvals, spools under {}", base.path().display());
    println!("| mode | wall time | per packet | chain fdatasync | fsync (decision files, checkpoints) |");
    println!("| --- | --- | --- | --- | --- |");
    for mode in ["single", "batch"] {
        let timed = base.path().join(format!("{mode}-timed"));
        prepare(&timed, n);
        let secs = work(mode, &timed);
        let counted = base.path().join(format!("{mode}-counted"));
        prepare(&counted, n);
        let (fdatasync, fsync) =
            syncs(mode, &counted).map_or(("n/a".into(), "n/a".into()), |(a, b)| (a.to_string(), b.to_string()));
        println!(
            "| {} | {:.2} s | {:.2} ms | {fdatasync} | {fsync} |",
            if mode == "single" { "1 at a time (`decide`)" } else { "one batch (`decide_many`)" },
            secs,
            secs * 1000.0 / n as f64
        );
    }
}
