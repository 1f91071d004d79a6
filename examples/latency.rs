//! Measures the time from an agent's rename of a packet into `packets/` to the packet being on
//! the console's screen, with the real binary in tmux (tmux must be installed).
//!
//! ```text
//! cargo build --release && cargo run --release --example latency -- [target/release/warrant] [N]
//! ```
//! The figure includes tmux's own `capture-pane` round trip (polled every millisecond), so it is
//! an upper bound on the console's latency.

use std::process::Command;
use std::time::{Duration, Instant};

fn tmux(socket: &str, args: &[&str]) -> String {
    let out = Command::new("tmux").args(["-L", socket]).args(args).output().expect("tmux");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let bin = args.get(1).cloned().unwrap_or_else(|| "target/release/warrant".into());
    let n: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(50);
    let dir = tempfile::tempdir().expect("tempdir");
    let spool = dir.path().join("spool");
    let packets = spool.join("packets");
    std::fs::create_dir_all(&packets).expect("spool");
    let socket = format!("warrant-latency-{}", std::process::id());
    let env = |k: &str, v: &std::path::Path| format!("{k}={}", v.display());
    let status = Command::new("tmux")
        .args(["-L", &socket, "-f", "/dev/null", "new-session", "-d", "-s", "t", "-x", "160", "-y", "48"])
        .args(["-e", &env("WARRANT_CONFIG", &dir.path().join("config")), "-e", &env("WARRANT_SPOOL", &spool)])
        .args(["-e", &env("XDG_DATA_HOME", &dir.path().join("data"))])
        .args([bin.as_str(), "console", "--read-only"])
        .status()
        .expect("tmux");
    assert!(status.success());
    let start = Instant::now();
    while !tmux(&socket, &["capture-pane", "-p", "-t", "t"]).contains("chain ok") {
        assert!(start.elapsed() < Duration::from_secs(10), "console did not start");
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut samples = Vec::with_capacity(n);
    for k in 0..n {
        let token = format!("latency-token-{k:04}");
        let doc = warrant::packet::portable_packet(
            &token,
            "draft.compose",
            "agent-latency",
            &token,
            serde_json::json!({}),
            &warrant::clock::now_rfc3339(),
        );
        let tmp = packets.join(format!(".{token}.tmp"));
        std::fs::write(&tmp, serde_json::to_vec(&doc).expect("json")).expect("write");
        let t0 = Instant::now();
        std::fs::rename(&tmp, packets.join(format!("{token}.json"))).expect("rename");
        // The title bar's count: the packet is listed (the newest may be above the window when
        // the selection stays on an older one).
        let listed = format!(" {} pending", k + 1);
        while !tmux(&socket, &["capture-pane", "-p", "-t", "t"]).contains(&listed) {
            assert!(t0.elapsed() < Duration::from_secs(10), "packet {k} never appeared");
            std::thread::sleep(Duration::from_millis(1));
        }
        samples.push(t0.elapsed());
        std::thread::sleep(Duration::from_millis(150));
    }
    tmux(&socket, &["kill-server"]);
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let p = |q: f64| ms(samples[((samples.len() - 1) as f64 * q).round() as usize]);
    println!(
        "rename → on screen over {n} packets: min {:.1} ms, median {:.1} ms, p95 {:.1} ms, max {:.1} ms",
        ms(samples[0]),
        p(0.5),
        p(0.95),
        ms(samples[samples.len() - 1])
    );
}
