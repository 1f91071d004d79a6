//! `warrant mcp-gateway` over Streamable HTTP on both sides, on allowed calls: the latency it adds
//! and the calls per second it carries, side by side with the same server called directly over
//! HTTP, in one run (docs/performance.md "MCP gateway over Streamable HTTP").
//!
//! ```text
//! cargo build --release --bin warrant --example mcp_echo --example gateway_overhead_http
//! target/release/examples/gateway_overhead_http --calls 20000 --concurrency 64 --seconds 5
//! target/release/examples/gateway_overhead_http --server everything --calls 5000 --concurrency 16 --seconds 5
//! ```
//! Options: `--calls N` (default 5000) sequential calls timed on each side, `--concurrency K`
//! (default 16) calls in flight for the throughput, `--seconds S` (default 5) each throughput run
//! lasts, `--bin PATH` (default `target/release/warrant`), `--server rmcp|everything` (default
//! `rmcp`), `--echo PATH` (default `target/release/examples/mcp_echo`).
//!
//! Method. The server is `examples/mcp_echo.rs --http` (the official Rust SDK's Streamable HTTP
//! service, stateless, answering with JSON bodies: a server fast enough not to hide the
//! gateway), or with `--server everything` `@modelcontextprotocol/server-everything` in its
//! Streamable HTTP mode (`mcp-server-everything streamableHttp`, from npm: sessions, answers on
//! event streams), its `echo` tool either way. The gateway serves
//! clients over Streamable HTTP (`--listen http://127.0.0.1:PORT/mcp`) and reaches the server
//! over Streamable HTTP (`--url`), with a tool table that makes `everything/echo` safe, so each
//! call is judged in memory and forwarded with no packet. The client (reqwest and sse-stream, one
//! session on each side) POSTs each `tools/call` and reads the answer: a JSON body, or an event
//! stream read to its end.
//! Latency: after 200 warm-up calls on each, `--calls` calls alternate between the two; the
//! added latency at a percentile is the difference. Throughput: `--concurrency` tasks call as fast
//! as they can for `--seconds` on one side, then on the other. Every answer is checked to be the
//! server's echo; at the end the spool is checked to hold no packet.

use futures_util::StreamExt as _;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One MCP session over Streamable HTTP.
struct Client {
    http: reqwest::Client,
    url: String,
    /// `Mcp-Session-Id`, when the server keeps sessions.
    session: Option<String>,
    /// The name of `echo`'s argument on this server.
    arg: &'static str,
    ids: std::sync::atomic::AtomicU64,
}

impl Client {
    /// POSTs `body` and returns the JSON-RPC answer to `id` (from the event stream or the body).
    async fn post(
        http: &reqwest::Client,
        url: &str,
        session: Option<&str>,
        body: &Value,
    ) -> (Option<String>, Option<Value>) {
        let mut r = http
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25");
        if let Some(s) = session {
            r = r.header("mcp-session-id", s);
        }
        let resp = r.body(body.to_string()).send().await.expect("POST");
        assert!(resp.status().is_success(), "POST: {}", resp.status());
        let session = resp.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
        let id = body.get("id").cloned();
        let Some(id) = id else { return (session, None) };
        let sse = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|c| c.starts_with("text/event-stream"));
        if !sse {
            return (session, Some(serde_json::from_slice(&resp.bytes().await.expect("body")).expect("json")));
        }
        // Read to the end of the stream (the server ends it after the answer), as the SDKs'
        // clients do: the connection then goes back to the pool instead of being closed.
        let mut events = sse_stream::SseStream::from_bytes_stream(resp.bytes_stream());
        let mut answer = None;
        while let Some(Ok(e)) = events.next().await {
            let Some(data) = e.data else { continue };
            let Ok(v) = serde_json::from_str::<Value>(&data) else { continue };
            if v.get("id") == Some(&id) {
                answer = Some(v);
            }
        }
        assert!(answer.is_some(), "no answer to {id}");
        (session, answer)
    }

    async fn connect(url: &str, arg: &'static str) -> Self {
        let http = reqwest::Client::new();
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}});
        let (session, answer) = Self::post(&http, url, None, &init).await;
        assert!(answer.is_some_and(|a| a.get("result").is_some()), "initialize");
        let _ = Self::post(
            &http,
            url,
            session.as_deref(),
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        )
        .await;
        Self { http, url: url.to_owned(), session, arg, ids: std::sync::atomic::AtomicU64::new(1) }
    }

    async fn echo(&self, text: &str) {
        let id = self.ids.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                          "params": {"name": "echo", "arguments": {self.arg: text}}});
        let (_, answer) = Self::post(&self.http, &self.url, self.session.as_deref(), &call).await;
        let answer = answer.expect("an answer");
        assert_ne!(answer["result"]["isError"], json!(true), "the call was not run: {answer}");
        let got = answer["result"]["content"][0]["text"].as_str().unwrap_or_default();
        assert!(got.ends_with(text), "{answer}");
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

async fn throughput(c: &Arc<Client>, k: usize, secs: f64) -> f64 {
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for t in 0..k {
        let c = Arc::clone(c);
        tasks.push(tokio::spawn(async move {
            let mut n = 0u64;
            while Instant::now() < deadline {
                c.echo(&format!("t{t}")).await;
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

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

fn wait_for(port: u16) {
    let start = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(start.elapsed() < Duration::from_secs(20), "nothing listens on {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn main() {
    let (mut calls, mut k, mut secs) = (5_000usize, 16usize, 5.0f64);
    let mut bin = "target/release/warrant".to_owned();
    let (mut server_kind, mut echo) = ("rmcp".to_owned(), "target/release/examples/mcp_echo".to_owned());
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--calls" => calls = value().parse().expect("--calls N"),
            "--concurrency" => k = value().parse().expect("--concurrency K"),
            "--seconds" => secs = value().parse().expect("--seconds S"),
            "--bin" => bin = value(),
            "--server" => server_kind = value(),
            "--echo" => echo = value(),
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
        "[tools.\"everything/echo\"]\ntier = \"safe\"\nclass = \"read.context\"\nlevel = 1\n",
    )
    .expect("policy");
    let (server_port, gateway_port) = (free_port(), free_port());
    let (mut server, arg) = match server_kind.as_str() {
        "rmcp" => (
            std::process::Command::new(&echo)
                .args(["--http", &format!("127.0.0.1:{server_port}")])
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("{echo}: {e} (cargo build --release --example mcp_echo)")),
            "text",
        ),
        "everything" => (
            std::process::Command::new("mcp-server-everything")
                .arg("streamableHttp")
                .env("PORT", server_port.to_string())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("mcp-server-everything (npm install -g @modelcontextprotocol/server-everything)"),
            "message",
        ),
        other => panic!("--server {other}: rmcp or everything"),
    };
    wait_for(server_port);
    let server_url = format!("http://127.0.0.1:{server_port}/mcp");
    let gateway_url = format!("http://127.0.0.1:{gateway_port}/mcp");
    let mut gateway = std::process::Command::new(&bin)
        .args(["mcp-gateway", "--name", "everything", "--listen", &gateway_url, "--url", &server_url])
        .envs(env.iter().cloned())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the gateway");
    wait_for(gateway_port);

    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    rt.block_on(async {
        let d = Arc::new(Client::connect(&server_url, arg).await);
        let g = Arc::new(Client::connect(&gateway_url, arg).await);
        for i in 0..200 {
            d.echo(&format!("warm {i}")).await;
            g.echo(&format!("warm {i}")).await;
        }
        let (mut ds, mut gs) = (Vec::with_capacity(calls), Vec::with_capacity(calls));
        for i in 0..calls {
            let text = format!("call {i}");
            let t = Instant::now();
            d.echo(&text).await;
            ds.push(t.elapsed());
            let t = Instant::now();
            g.echo(&text).await;
            gs.push(t.elapsed());
        }
        ds.sort();
        gs.sort();
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        println!("sequential calls over Streamable HTTP to {server_kind}: {calls} on each side (µs)");
        println!("{:>8} {:>10} {:>10} {:>10}", "", "direct", "gateway", "added");
        for (name, p) in [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p99.9", 0.999)] {
            let (a, b) = (percentile(&ds, p), percentile(&gs, p));
            println!("{name:>8} {:>10.1} {:>10.1} {:>10.1}", us(a), us(b), us(b) - us(a));
        }
        let td = throughput(&d, k, secs).await;
        let tg = throughput(&g, k, secs).await;
        println!("throughput, {k} calls in flight for {secs} s: direct {td:.0} calls/s, gateway {tg:.0} calls/s");
    });
    let _ = rustix_term(&gateway);
    let _ = gateway.wait();
    let _ = server.kill();
    let _ = server.wait();
    let packets = std::fs::read_dir(dir.path().join("spool/packets")).map_or(0, |d| d.count());
    let receipts = std::fs::read_dir(dir.path().join("spool/receipts")).map_or(0, |d| d.count());
    println!("spool: {packets} packets, {receipts} receipts");
    assert_eq!(packets, 0, "allowed calls ran with no packet");
    assert!(receipts > 0, "the gateway recorded the calls it forwarded");
}

/// Asks the gateway to stop (SIGTERM): it ends its sessions and writes their receipts.
fn rustix_term(child: &std::process::Child) -> std::io::Result<()> {
    rustix::process::kill_process(rustix::process::Pid::from_child(child), rustix::process::Signal::TERM)
        .map_err(std::io::Error::from)
}
