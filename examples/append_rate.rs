//! Durable appends per second: the disk's own synced-write rate (a loop of ~1 KB `write` +
//! `fdatasync` on one file, as an append does), beside `chain_file::append` (group commit: the sync
//! runs after the lock is released) and `chain_file::append_then` (the sync under the lock, as every
//! append did before group commit and as decisions still do), each from 1 writer, 16 threads and
//! 16 processes, all on files in `--dir` (default: a new directory under the current one, so the
//! figures are for the disk the spool is on).
//!
//! ```text
//! cargo run --release --example append_rate -- [--dir DIR] [--count 2000] [--writers 16]
//! ```
//! `--count` is the appends of each measurement (split among the writers). Figures are noisy:
//! run it twice, on an idle machine, and compare within one run.

use serde_json::{Map, Value, json};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;
use warrant::protocol::chain;
use warrant::store::chain_file;

/// A record body whose line is about 1 KB, like a receipt's.
fn body(writer: usize, seq: usize) -> Map<String, Value> {
    let mut meta = Map::new();
    meta.insert("note".into(), json!(format!("w{writer:02}-s{seq:06}")));
    meta.insert("pad".into(), json!("x".repeat(600)));
    chain::new_record_body("agent-rate", "draft.compose", None, "success", "t", "suggest", "2026-11-21T09:00:00Z", meta)
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    /// 1 KB `write` + `fdatasync`, no chain, no lock.
    Disk,
    /// `chain_file::append`: group commit.
    Group,
    /// `chain_file::append_then` with nothing after: the sync under the lock.
    Locked,
}

impl Mode {
    fn parse(s: &str) -> Self {
        match s {
            "disk" => Self::Disk,
            "group" => Self::Group,
            "locked" => Self::Locked,
            _ => panic!("unknown mode {s}"),
        }
    }
    fn name(self) -> &'static str {
        match self {
            Self::Disk => "disk",
            Self::Group => "group",
            Self::Locked => "locked",
        }
    }
}

/// One writer's loop.
fn write_loop(mode: Mode, path: &Path, writer: usize, n: usize) {
    match mode {
        Mode::Disk => {
            let line = [vec![b'x'; 1023], vec![b'\n']].concat();
            let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path).expect("open");
            for _ in 0..n {
                f.write_all(&line).expect("write");
                f.sync_data().expect("fdatasync");
            }
        }
        Mode::Group => {
            for seq in 0..n {
                chain_file::append(path, |_| Ok(body(writer, seq))).expect("append");
            }
        }
        Mode::Locked => {
            for seq in 0..n {
                chain_file::append_then(path, None, chain_file::LOCK_DEADLINE, |_| Ok(body(writer, seq)), |_, _| {})
                    .expect("append");
            }
        }
    }
}

/// Runs `writers` writers (threads, or processes running this example with `--child`) of `count`
/// appends in all on a new file in `dir`; returns appends per second.
fn measure(mode: Mode, dir: &Path, writers: usize, count: usize, processes: bool) -> f64 {
    let sub = tempfile::tempdir_in(dir).expect("tempdir");
    let path = sub.path().join("chain.jsonl");
    let per = count / writers;
    let start = Instant::now();
    if processes {
        let exe = std::env::current_exe().expect("exe");
        let children: Vec<_> = (0..writers)
            .map(|w| {
                std::process::Command::new(&exe)
                    .args(["--child", mode.name(), &path.display().to_string(), &w.to_string(), &per.to_string()])
                    .spawn()
                    .expect("spawn")
            })
            .collect();
        for mut c in children {
            assert!(c.wait().expect("wait").success(), "a writer failed");
        }
    } else {
        std::thread::scope(|s| {
            for w in 0..writers {
                let path = &path;
                s.spawn(move || write_loop(mode, path, w, per));
            }
        });
    }
    let seconds = start.elapsed().as_secs_f64();
    if mode != Mode::Disk {
        let report = chain_file::verify_file(&path, chain::VerifyOptions::default()).expect("verify");
        assert!(report.is_valid() && report.total == per * writers, "{report:?}");
    }
    (per * writers) as f64 / seconds
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--child") {
        let mode = Mode::parse(&args[1]);
        write_loop(mode, Path::new(&args[2]), args[3].parse().expect("writer"), args[4].parse().expect("n"));
        return;
    }
    let value = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let count: usize = value("--count").map_or(2000, |v| v.parse().expect("count"));
    let writers: usize = value("--writers").map_or(16, |v| v.parse().expect("writers"));
    let keep = tempfile::tempdir_in(".").expect("tempdir");
    let dir = value("--dir").map_or_else(|| keep.path().to_owned(), PathBuf::from);
    println!("durable appends per second, {count} appends each, files in {}", dir.display());
    println!(
        "{:<8} {:>12} {:>14} {:>16}",
        "mode",
        "1 writer",
        format!("{writers} threads"),
        format!("{writers} processes")
    );
    for mode in [Mode::Disk, Mode::Locked, Mode::Group] {
        let one = measure(mode, &dir, 1, count, false);
        let threads = measure(mode, &dir, writers, count, false);
        let procs = measure(mode, &dir, writers, count, true);
        println!("{:<8} {one:>12.0} {threads:>14.0} {procs:>16.0}", mode.name());
    }
}
