//! `warrant mcp-gateway` on allowed calls: the latency it adds and the calls per second it
//! carries, side by side with the same server called directly, in one run
//! (docs/performance.md "MCP gateway").
//!
//! ```text
//! cargo build --release --bin warrant --example mcp_echo --example gateway_overhead
//! target/release/examples/gateway_overhead --calls 20000 --concurrency 64 --seconds 5
//! ```
//! Options: `--calls N` (default 20000) sequential calls timed on each side, `--concurrency K`
//! (default 64) calls in flight for the throughput, `--seconds S` (default 5) each throughput
//! run lasts, `--bin PATH` (default `target/release/warrant`), `--server PATH` (default
//! `target/release/examples/mcp_echo`).
//!
//! Method. A fresh configuration (an unprotected key, pinned), an empty spool and a tool table
//! that makes `echo/echo` safe (`read.context`, L1): the gate allows it on its own, so the
//! gateway forwards it with no packet. One MCP client (the `rmcp` SDK, over stdio) holds two
//! connections: one to `mcp_echo` directly, one to `warrant mcp-gateway --name echo -- mcp_echo`.
//! Latency: after 500 warm-up calls on each, `--calls` calls alternate between the two, one at
//! a time; the percentiles are over each side's calls, and the gateway's added latency at a
//! percentile is the difference of the two. Throughput: `--concurrency` tasks call as fast as
//! they can for `--seconds` on one side, then on the other. Every answer is checked to be the
//! server's (`isError` false, the text echoed); at the end the spool is checked to hold no
//! packet (the calls ran with no packet) and the receipts the gateway wrote are counted.

use rmcp::model::CallToolRequestParams;
use rmcp::service::{Peer, RoleClient, ServiceExt as _};
use std::time::{Duration, Instant};

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

async fn echo(peer: &Peer<RoleClient>, text: &str) {
    let mut args = serde_json::Map::new();
    args.insert("text".into(), text.into());
    let r = peer.call_tool(CallToolRequestParams::new("echo").with_arguments(args)).await.expect("tools/call");
    assert_ne!(r.is_error, Some(true), "the call was not run: {r:?}");
    let v = serde_json::to_value(&r).expect("json");
    assert_eq!(v["content"][0]["text"].as_str(), Some(text), "{v}");
}

/// Calls per second with `k` calls in flight for `secs`.
async fn throughput(peer: &Peer<RoleClient>, k: usize, secs: f64) -> f64 {
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for t in 0..k {
        let peer = peer.clone();
        tasks.push(tokio::spawn(async move {
            let mut n = 0u64;
            let text = format!("t{t}");
            while Instant::now() < deadline {
                echo(&peer, &text).await;
                n += 1;
            }
            n
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await.expect("task");
    }
    total as f64 / started.elapsed().as_secs_f64()
}

fn main() {
    let (mut calls, mut k, mut secs) = (20_000usize, 64usize, 5.0f64);
    let mut bin = "target/release/warrant".to_owned();
    let mut server = "target/release/examples/mcp_echo".to_owned();
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--calls" => calls = value().parse().expect("--calls N"),
            "--concurrency" => k = value().parse().expect("--concurrency K"),
            "--seconds" => secs = value().parse().expect("--seconds S"),
            "--bin" => bin = value(),
            "--server" => server = value(),
            other => panic!("unknown option {other}"),
        }
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let env: Vec<(&str, std::path::PathBuf)> = vec![
        ("WARRANT_CONFIG", dir.path().join("config")),
        ("WARRANT_SPOOL", dir.path().join("spool")),
        ("WARRANT_PRINCIPAL", "alice".into()),
        ("XDG_DATA_HOME", dir.path().join("data")),
    ];
    let o = std::process::Command::new(&bin)
        .args(["keys", "init", "--no-passphrase"])
        .envs(env.iter().cloned())
        .output()
        .expect("run warrant");
    assert!(o.status.success(), "keys init: {}", String::from_utf8_lossy(&o.stderr));
    std::fs::create_dir_all(dir.path().join("spool")).expect("spool");
    std::fs::write(
        dir.path().join("config/policy.toml"),
        "[tools.\"echo/echo\"]\ntier = \"safe\"\nclass = \"read.context\"\nlevel = 1\n",
    )
    .expect("policy");

    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    rt.block_on(async {
        let direct =
            ().serve(rmcp::transport::TokioChildProcess::new(tokio::process::Command::new(&server)).expect("spawn"));
        let direct = direct.await.expect("connect to the server");
        let mut gw = tokio::process::Command::new(&bin);
        gw.args(["mcp-gateway", "--name", "echo", "--", &server]).envs(env.iter().cloned());
        let gateway =
            ().serve(rmcp::transport::TokioChildProcess::new(gw).expect("spawn"))
                .await
                .expect("connect to the gateway");
        let (d, g) = (direct.peer().clone(), gateway.peer().clone());
        for i in 0..500 {
            echo(&d, &format!("warm {i}")).await;
            echo(&g, &format!("warm {i}")).await;
        }
        let (mut ds, mut gs) = (Vec::with_capacity(calls), Vec::with_capacity(calls));
        for i in 0..calls {
            let text = format!("call {i}");
            let t = Instant::now();
            echo(&d, &text).await;
            ds.push(t.elapsed());
            let t = Instant::now();
            echo(&g, &text).await;
            gs.push(t.elapsed());
        }
        ds.sort();
        gs.sort();
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        println!("sequential calls: {calls} on each side (µs)");
        println!("{:>8} {:>10} {:>10} {:>10}", "", "direct", "gateway", "added");
        for (name, p) in [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p99.9", 0.999)] {
            let (a, b) = (percentile(&ds, p), percentile(&gs, p));
            println!("{name:>8} {:>10.1} {:>10.1} {:>10.1}", us(a), us(b), us(b) - us(a));
        }
        let td = throughput(&d, k, secs).await;
        let tg = throughput(&g, k, secs).await;
        println!("throughput, {k} calls in flight for {secs} s: direct {td:.0} calls/s, gateway {tg:.0} calls/s");
        let _ = gateway.cancel().await;
        let _ = direct.cancel().await;
    });
    // The gateway writes its last receipts as it closes.
    std::thread::sleep(Duration::from_millis(500));
    let packets = std::fs::read_dir(dir.path().join("spool/packets")).map_or(0, |d| d.count());
    let receipts = std::fs::read_dir(dir.path().join("spool/receipts")).map_or(0, |d| d.count());
    println!("spool: {packets} packets, {receipts} receipts");
    assert_eq!(packets, 0, "allowed calls ran with no packet");
}
