//! `warrant mcp-gateway` in front of real MCP servers from the registries —
//! `@modelcontextprotocol/server-filesystem` (npm) and `mcp-server-git` (PyPI) — driven by a real
//! MCP client, the Python `mcp` SDK (`tests/support/mcp_client.py`), with the principal deciding
//! from another process: `warrant approve|refuse --yes ID`, or the real console under tmux.
//!
//! `.ci/run` installs the servers and the SDK (and tmux, for the console). Without them these
//! tests fail when `CI=true` and are skipped (with the reason printed) elsewhere.
#![cfg(feature = "console")]

use crate::cli_env;
use crate::real_parts;
use crate::tmux;
use real_parts::have;

use cli_env::{BIN, Env, text};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

const CLIENT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/mcp_client.py");

/// The test's tool table: reads are safe (L1), writes and commits are mutating (held in a
/// cautious notebook).
const POLICY: &str = r#"
[tools."filesystem/read_*"]
tier = "safe"
class = "read.context"
level = 1

[tools."filesystem/write_file"]
tier = "mutating"
class = "file.write"
level = 2

[tools."git/git_status"]
tier = "safe"
class = "read.context"
level = 1

[tools."git/git_commit"]
tier = "mutating"
class = "code.commit"
level = 2

[tools."everything/trigger-long-running-operation"]
tier = "mutating"
class = "file.write"
level = 2

[tools."everything/get-sum"]
tier = "mutating"
class = "file.write"
level = 2
"#;

/// A config with a pinned key, the test's policy and a spool; a root directory for the server.
struct Setup {
    env: Env,
    root: tempfile::TempDir,
    /// A JetStream store the gateway governs on (`WARRANT_STORE`), with its own replica.
    store: Option<String>,
}

fn setup() -> Setup {
    let env = Env::new();
    env.policy(POLICY);
    std::fs::create_dir_all(env.spool()).expect("spool");
    let root = tempfile::tempdir().expect("root");
    Setup { env, root, store: None }
}

impl Setup {
    fn path(&self, name: &str) -> PathBuf {
        self.root.path().join(name)
    }

    /// The client running `steps` against `warrant mcp-gateway GATEWAY_ARGS -- SERVER…` (or,
    /// with `wrap`, the same command line under `sh -c` that writes its pid to `pidfile` first).
    fn client(&self, steps: &Value, gateway: &[&str], server: &[&str], pidfile: Option<&Path>) -> Child {
        self.spawn_client(&steps.to_string(), gateway, server, pidfile, Stdio::null())
    }

    /// The client with its steps given as `mcp_client.py`'s first argument (`-`: on `stdin`).
    fn spawn_client(
        &self,
        steps: &str,
        gateway: &[&str],
        server: &[&str],
        pidfile: Option<&Path>,
        stdin: Stdio,
    ) -> Child {
        let mut command: Vec<String> = vec![BIN.into(), "mcp-gateway".into()];
        command.extend(gateway.iter().map(|s| (*s).to_owned()));
        command.push("--".into());
        command.extend(server.iter().map(|s| (*s).to_owned()));
        if let Some(pidfile) = pidfile {
            let line = shlex::try_join(command.iter().map(String::as_str)).expect("quote");
            let script =
                format!("echo $$ > {}; exec {line}", shlex::try_quote(&pidfile.to_string_lossy()).expect("quote"));
            command = vec!["sh".into(), "-c".into(), script];
        }
        let mut c = Command::new("python3");
        c.arg(CLIENT).arg(steps).arg("--").args(&command);
        c.envs(self.vars()).current_dir(self.root.path()).stdin(stdin).stdout(Stdio::piped()).stderr(Stdio::piped());
        c.spawn().expect("python3 mcp_client.py")
    }

    /// The environment that points warrant at this configuration and spool (the principal is
    /// alice).
    fn vars(&self) -> Vec<(&'static str, String)> {
        let mut vars = vec![
            ("WARRANT_CONFIG", self.env.config().display().to_string()),
            ("WARRANT_SPOOL", self.env.spool().display().to_string()),
            ("WARRANT_PRINCIPAL", "alice".into()),
            ("XDG_DATA_HOME", self.env.dir.path().join("data").display().to_string()),
        ];
        if let Some(url) = &self.store {
            vars.push(("WARRANT_STORE", url.clone()));
            vars.push(("WARRANT_REPLICA", self.env.dir.path().join("gateway-replica").display().to_string()));
        }
        vars
    }

    fn fs_client(&self, steps: &Value, gateway: &[&str]) -> Child {
        let root = self.root.path().to_string_lossy().into_owned();
        self.client(steps, gateway, &["mcp-server-filesystem", &root], None)
    }

    /// A client of `warrant mcp-gateway GATEWAY_ARGS -- mcp-server-filesystem ROOT` that takes its
    /// steps one at a time ([`Session::call`]), so a test decides each call after the answers so
    /// far.
    fn fs_session(&self, gateway: &[&str]) -> Session {
        let root = self.root.path().to_string_lossy().into_owned();
        let mut child = self.spawn_client("-", gateway, &["mcp-server-filesystem", &root], None, Stdio::piped());
        let stdin = child.stdin.take();
        let rx = lines(&mut child);
        Session { child, stdin, rx }
    }

    /// `warrant list --json`'s packets.
    fn packets(&self) -> Vec<Value> {
        let o = self.env.run(&["list", "--json"]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let v: Value = serde_json::from_slice(&o.stdout).expect("list --json");
        v["packets"].as_array().cloned().unwrap_or_default()
    }

    /// The id of the one packet for `tool` that waits for the principal, as `warrant list --json`
    /// shows it, once the gateway has published it.
    fn held(&self, tool: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let waiting: Vec<Value> =
                self.packets().into_iter().filter(|p| is_waiting(p) && summary_is(p, tool)).collect();
            if let [p] = waiting.as_slice() {
                return p["packet_id"].as_str().expect("id").to_owned();
            }
            assert!(waiting.len() < 2, "one held call, one packet: {waiting:?}");
            assert!(Instant::now() < deadline, "no held packet for {tool}: {:?}", self.packets());
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The receipts published into `receipts/`.
    fn receipts(&self) -> Vec<Value> {
        let Ok(dir) = std::fs::read_dir(self.env.spool().join("receipts")) else { return Vec::new() };
        dir.filter_map(|e| std::fs::read(e.ok()?.path()).ok()).filter_map(|b| serde_json::from_slice(&b).ok()).collect()
    }
}

/// A client whose steps the test writes one at a time on its stdin (`mcp_client.py -`).
struct Session {
    child: Child,
    stdin: Option<ChildStdin>,
    rx: mpsc::Receiver<Value>,
}

impl Session {
    /// Calls `tool` with `args` (asking for progress).
    fn call(&mut self, tool: &str, args: Value) {
        let stdin = self.stdin.as_mut().expect("the session's stdin is open");
        writeln!(stdin, "{}", call(tool, args)).and_then(|()| stdin.flush()).expect("write the step");
    }

    /// The first thing the client hears about the call it just made: its answer, or, for a call
    /// the gateway holds, its first progress message (sent at once when a call is held).
    fn first_event(&self) -> Event {
        let deadline = Instant::now() + Duration::from_secs(40);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(v) if v.get("call").is_some() => return Event::Answer(v),
                Ok(v) if v.get("progress").is_some() => {
                    let message = v["at"][2].as_str().unwrap_or_else(|| panic!("a progress message: {v}")).to_owned();
                    return Event::Held(message);
                }
                Ok(_) => {}
                Err(e) => panic!("the client heard nothing about the call within 40s: {e}"),
            }
        }
    }

    /// The answer to the call it made.
    fn answer(&self) -> Value {
        answer(&self.rx, 40)
    }

    /// Ends the session (stdin closes, the client ends) and returns the client's stderr.
    fn end(mut self) -> String {
        drop(self.stdin.take());
        finish(self.child)
    }
}

/// What a client heard first about a call.
#[derive(Debug)]
enum Event {
    /// Its answer: it was not held.
    Answer(Value),
    /// It was held: the first progress message.
    Held(String),
}

/// The packet a held call's progress message names: "held: waiting up to …s for the principal to
/// decide ID in warrant (…)".
fn held_packet(message: &str) -> String {
    let after = message.split_once(" to decide ").map(|(_, a)| a);
    let id = after.and_then(|a| a.split_once(" in warrant")).map(|(id, _)| id);
    id.filter(|id| id.starts_with("gw-")).unwrap_or_else(|| panic!("no packet in {message:?}")).to_owned()
}

/// The number of further approved calls a held call's message says graduate its class ("N more
/// approved calls of `CLASS` and it runs on its own"), if it says one.
fn approvals_left(message: &str) -> Option<u32> {
    let (before, _) = message.split_once(" more approved call")?;
    let digits: String = before.chars().rev().take_while(char::is_ascii_digit).collect();
    digits.chars().rev().collect::<String>().parse().ok()
}

fn is_waiting(p: &Value) -> bool {
    p["decision"].is_null()
        && p["expired"] != json!(true)
        && !matches!(p["state"].as_str(), Some("allowed" | "allowed_with_constraints"))
}

fn summary_is(p: &Value, tool: &str) -> bool {
    p["summary"].as_str().is_some_and(|s| s.starts_with(&format!("{tool}:")))
}

/// The client's JSON lines as they come.
fn lines(child: &mut Child) -> mpsc::Receiver<Value> {
    let (tx, rx) = mpsc::channel();
    let out = child.stdout.take().expect("stdout");
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str::<Value>(&line)
                && tx.send(v).is_err()
            {
                break;
            }
        }
    });
    rx
}

/// The next answer to a `call` step (progress lines are collected in it), within `secs`.
fn answer(rx: &mpsc::Receiver<Value>, secs: u64) -> Value {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(v) if v.get("call").is_some() => return v,
            Ok(_) => {}
            Err(e) => panic!("no answer from the client within {secs}s: {e}"),
        }
    }
}

/// Waits for the client to end (it ends when its steps are done) and returns its stderr.
fn finish(mut child: Child) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let o = child.wait_with_output().expect("output");
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn result_text(answer: &Value) -> String {
    answer["result"]["content"]
        .as_array()
        .map(|c| c.iter().filter_map(|b| b["text"].as_str()).collect::<Vec<_>>().join("\n"))
        .unwrap_or_default()
}

fn call(tool: &str, args: Value) -> Value {
    json!({"call": tool, "args": args, "progress": true})
}

// (1) A read the tool table says is safe (L1) runs at once: the result is the server's, no packet
// is published, and a receipt records it. The gateway judges it in memory from what it read
// before, and stays live: once the principal quarantines the agent, the next read is refused.
#[test]
fn an_allowed_read_runs_with_no_packet_and_a_quarantine_refuses_the_next() {
    if !have(&["mcp-server-filesystem"]) {
        return;
    }
    let s = setup();
    std::fs::write(s.path("a.txt"), "hello from the root\n").expect("write");
    let go = s.path("go");
    let read = call("read_text_file", json!({"path": s.path("a.txt")}));
    let steps = json!([{"list": true}, read, read, {"wait_for": go}, read]);
    let mut child = s.fs_client(&steps, &["--agent", "reader"]);
    let rx = lines(&mut child);
    for _ in 0..2 {
        let a = answer(&rx, 40);
        assert_eq!(a["result"]["isError"], json!(false), "{a}");
        assert!(result_text(&a).contains("hello from the root"), "{a}");
        assert!(a["result"]["_meta"].get("_warrant").is_none(), "a forwarded result is the server's: {a}");
    }
    assert!(s.packets().is_empty(), "reads the gate allows publish no packet: {:?}", s.packets());
    let o = s.env.run(&["agent", "quarantine", "reader", "--reason", "test"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    std::fs::write(&go, "").expect("go");
    let a = answer(&rx, 40);
    let stderr = finish(child);
    assert_eq!(a["result"]["isError"], json!(true), "quarantined: {a}\n{stderr}");
    let w = &a["result"]["_meta"]["_warrant"];
    assert!(w["reason"].as_str().is_some_and(|r| r.contains("quarantin")), "{w}");
    // The two reads that ran are counted in receipts written at most once a second and when the
    // connection ended: one receipt for both, or one each when a second passed between them.
    let receipts = s.receipts();
    let ran: Vec<&Value> = receipts.iter().filter(|r| r["packet_id"].is_null()).collect();
    assert!(!ran.is_empty() && ran.len() <= 2, "{receipts:?}");
    let mut counted = 0;
    for r in &ran {
        assert_eq!(r["action_class"], json!("read.context"), "{r}");
        assert_eq!(r["outcome"], json!("execute"), "{r}");
        let note = r["note"].as_str().expect("note");
        assert!(note.contains(" call(s) of filesystem/read_text_file ran with no packet"), "{note}");
        assert!(note.contains("isError false"), "{note}");
        let n = note.split_once(' ').and_then(|(n, _)| n.parse::<u64>().ok()).expect("count");
        assert_eq!(r["tool_call"]["calls"], json!(n), "{r}");
        counted += n;
    }
    assert_eq!(counted, 2, "{receipts:?}");
}

// (2) A write is held; the principal approves it from another process; it runs then (the file
// is written) and leaves a receipt naming its packet. The client heard progress meanwhile.
#[test]
fn a_held_write_runs_once_the_principal_approves_it() {
    if !have(&["mcp-server-filesystem"]) {
        return;
    }
    let s = setup();
    let target = s.path("approved.txt");
    let mut child =
        s.fs_client(&json!([call("write_file", json!({"path": target, "content": "approved\n"}))]), &["--wait", "60"]);
    let rx = lines(&mut child);
    let id = s.held("filesystem/write_file");
    assert!(!target.exists(), "nothing runs while the call is held");
    let o = s.env.run(&["approve", "--yes", &id]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let a = answer(&rx, 40);
    let stderr = finish(child);
    assert_eq!(a["result"]["isError"], json!(false), "{a}\n{stderr}");
    assert_eq!(std::fs::read_to_string(&target).expect("written"), "approved\n");
    let progress = a["progress"].as_array().expect("progress");
    assert!(
        progress.first().and_then(|p| p[2].as_str()).is_some_and(|m| m.contains(&id)),
        "a held call tells the client at once what it waits for: {a}"
    );
    let receipts = s.receipts();
    let mine: Vec<&Value> = receipts.iter().filter(|r| r["packet_id"] == json!(id)).collect();
    assert_eq!(mine.len(), 1, "{receipts:?}");
    assert_eq!(mine[0]["action_class"], json!("file.write"));
    assert!(mine[0]["note"].as_str().is_some_and(|n| n.contains("isError false")), "{:?}", mine[0]);
}

// Issue 35: a held write approved as corrected (the text changed) reaches the real filesystem
// server with the principal's arguments, not the agent's; the client gets the server's result
// with `_meta._warrant` saying it was corrected, and with what. A correction naming another tool
// is refused before anything is signed.
#[test]
fn a_held_write_approved_as_corrected_runs_with_the_principals_arguments() {
    if !have(&["mcp-server-filesystem"]) {
        return;
    }
    let s = setup();
    let target = s.path("corrected.txt");
    let mut child =
        s.fs_client(&json!([call("write_file", json!({"path": target, "content": "draft\n"}))]), &["--wait", "60"]);
    let rx = lines(&mut child);
    let id = s.held("filesystem/write_file");
    let packet: Value = serde_json::from_slice(
        &std::fs::read(s.env.spool().join("packets").join(format!("{id}.json"))).expect("packet"),
    )
    .expect("JSON");
    let mut action = packet["proposed_action"].clone();
    action["tool"] = json!("filesystem/read_file");
    let file = s.env.dir.path().join("correction.json");
    std::fs::write(&file, action.to_string()).expect("write");
    let o = s.env.run(&["approve", "--yes", &id, "--correct", file.to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(1), "another tool is refused: {}", text(&o));
    let mut action = packet["proposed_action"].clone();
    action["input"]["content"] = json!("final\n");
    std::fs::write(&file, action.to_string()).expect("write");
    let o = s.env.run(&["approve", "--yes", &id, "--correct", file.to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let a = answer(&rx, 40);
    let stderr = finish(child);
    assert_eq!(a["result"]["isError"], json!(false), "{a}\n{stderr}");
    assert_eq!(std::fs::read_to_string(&target).expect("written"), "final\n", "the server ran the correction");
    let note = &a["result"]["_meta"]["_warrant"];
    assert_eq!(note["status"], json!("corrected"), "{a}");
    assert_eq!(note["packet_id"], json!(id), "{a}");
    assert_eq!(note["arguments"], json!({"path": target, "content": "final\n"}), "{a}");
}

// Issue 33, §1, against `@modelcontextprotocol/server-everything`: a held call's progress keeps
// increasing once the server reports its own (it went `(0,60),(5,60),(1,4),(2,4)`: the server's
// steps now count on from the hold's last value, totals too), and a packet's summary names
// every argument, numbers too (`get-sum {a:1,b:2}` read `everything/get-sum:`).
#[test]
fn progress_only_increases_and_summaries_name_every_argument() {
    if !have(&["mcp-server-everything"]) {
        return;
    }
    let s = setup();
    let steps = json!([
        call("trigger-long-running-operation", json!({"duration": 1, "steps": 4})),
        call("get-sum", json!({"a": 1, "b": 2})),
    ]);
    let mut child = s.client(&steps, &["--wait", "60"], &["mcp-server-everything"], None);
    let rx = lines(&mut child);
    let id = s.held("everything/trigger-long-running-operation");
    // Two held progress messages (the first at once, the next after PROGRESS_EVERY), then approve.
    std::thread::sleep(Duration::from_secs(6));
    let o = s.env.run(&["approve", "--yes", &id]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let a = answer(&rx, 40);
    assert_eq!(a["result"]["isError"], json!(false), "{a}");
    let progress: Vec<f64> =
        a["progress"].as_array().expect("progress").iter().map(|p| p[0].as_f64().expect("a number")).collect();
    assert!(progress.len() >= 2 + 4, "the hold's and the server's four steps: {a}");
    assert!(progress.windows(2).all(|w| w[1] > w[0]), "progress went back: {progress:?}");
    let totals: Vec<f64> = a["progress"].as_array().expect("progress").iter().filter_map(|p| p[1].as_f64()).collect();
    let last = a["progress"].as_array().and_then(|p| p.last()).expect("a last one");
    assert_eq!(last[0], last[1], "the server's last step is its total: {a}");
    assert!(!totals.is_empty(), "{a}");
    let sum = s.held("everything/get-sum");
    let listed = s.packets().into_iter().find(|p| p["packet_id"] == json!(sum)).expect("the get-sum packet");
    assert_eq!(listed["summary"], json!("everything/get-sum: a: 1, b: 2"), "{listed}");
    assert_eq!(s.env.run(&["approve", "--yes", &sum]).status.code(), Some(0));
    let a = answer(&rx, 40);
    assert!(result_text(&a).contains('3'), "{a}");
    finish(child);
}

// Issue 33, §1: a method MCP does not define (a vendor's) is answered `-32601 Method not found`,
// as JSON-RPC says, not `-32600`; a `tools/call` whose parameters cannot be read is invalid
// params (`-32602`), never forwarded. Raw JSON-RPC lines on the gateway's stdin, the real server behind it.
#[test]
fn a_vendor_method_is_not_found_and_a_malformed_call_is_invalid() {
    if !have(&["mcp-server-everything"]) {
        return;
    }
    let s = setup();
    let (mut child, mut stdin) = raw_gateway(&s, &["--wait", "1", "--", "mcp-server-everything"]);
    for line in [
        initialize(),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "vendor/frobnicate", "params": {}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": 5}}),
    ] {
        writeln!(stdin, "{line}").expect("write");
    }
    stdin.flush().expect("flush");
    let rx = lines(&mut child);
    let mut errors = std::collections::HashMap::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while errors.len() < 2 {
        let v = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())).expect("the gateway's answers");
        if let (Some(id @ (2 | 3)), Some(code)) = (v["id"].as_i64(), v["error"]["code"].as_i64()) {
            errors.insert(id, code);
        }
    }
    assert_eq!(errors[&2], -32601, "a vendor method");
    assert_eq!(errors[&3], -32602, "a tools/call whose parameters cannot be read");
    drop(stdin);
    let _ = child.wait();
}

/// The lines a process writes on stdout, as written.
fn raw_lines(child: &mut Child) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    let out = child.stdout.take().expect("stdout");
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// Writes `messages` as lines and returns the lines answering the requests among them, by id, as
/// written (waiting up to 30 s for all of them).
fn exchange(stdin: &mut ChildStdin, rx: &mpsc::Receiver<String>, messages: &[String]) -> HashMap<i64, String> {
    let mut wanted = std::collections::HashSet::new();
    for m in messages {
        let v: Value = serde_json::from_str(m).expect("a message");
        if let (Some(id), Some(_)) = (v["id"].as_i64(), v.get("method")) {
            wanted.insert(id);
        }
        writeln!(stdin, "{m}").expect("write");
    }
    stdin.flush().expect("flush");
    let mut got = HashMap::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while got.len() < wanted.len() {
        let line = rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .unwrap_or_else(|e| panic!("answers to {wanted:?}, have {:?}: {e}", got.keys()));
        let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON: {line}: {e}"));
        if let Some(id) = v["id"].as_i64().filter(|id| wanted.contains(id) && v.get("method").is_none()) {
            got.insert(id, line);
        }
    }
    got
}

// Issue 33, §1: what warrant does not govern passes through exactly — the server's answers to
// `initialize`, `tools/list` (input schemas' properties in the server's order, `execution`,
// `outputSchema`), `prompts/list`, `resources/templates/list` and `tasks/list` are the very lines
// the server writes when a client speaks to it directly (keys, order, numbers, unknown fields:
// the SDK's models had alphabetised, turned integers into floats, dropped unknown fields and
// stripped `capabilities.tasks` and every tool's `execution`). A request before `initialize` gets
// a plain error (and `ping` its answer), and the client's request ids come back as it wrote them.
#[test]
fn what_warrant_does_not_govern_passes_through_byte_for_byte() {
    if !have(&["mcp-server-everything"]) {
        return;
    }
    let s = setup();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {"tasks": {"list": {}, "cancel": {}}, "elicitation": {"form": {}}},
        "clientInfo": {"name": "exact", "version": "1"}}});
    let messages: Vec<String> = [
        init,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "prompts/list", "params": {}}),
        json!({"jsonrpc": "2.0", "id": 4, "method": "resources/templates/list"}),
        json!({"jsonrpc": "2.0", "id": 5, "method": "tasks/list"}),
    ]
    .iter()
    .map(Value::to_string)
    .collect();
    let mut direct = Command::new("mcp-server-everything")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the server");
    let mut direct_in = direct.stdin.take().expect("stdin");
    let direct_rx = raw_lines(&mut direct);
    let expected = exchange(&mut direct_in, &direct_rx, &messages);
    drop(direct_in);
    let _ = direct.wait();

    let (mut child, mut stdin) = raw_gateway(&s, &["--wait", "1", "--", "mcp-server-everything"]);
    let rx = raw_lines(&mut child);
    // Before `initialize`: a plain error, and `ping` answered.
    let early = exchange(
        &mut stdin,
        &rx,
        &[
            json!({"jsonrpc": "2.0", "id": 90, "method": "tools/list"}).to_string(),
            json!({"jsonrpc": "2.0", "id": 91, "method": "ping"}).to_string(),
        ],
    );
    let v: Value = serde_json::from_str(&early[&90]).expect("json");
    assert_eq!(v["error"]["code"], json!(-32600), "{v}");
    assert!(v["error"]["message"].as_str().is_some_and(|m| m.contains("before initialize")), "{v}");
    assert_eq!(serde_json::from_str::<Value>(&early[&91]).expect("json")["result"], json!({}));
    let through = exchange(&mut stdin, &rx, &messages);
    for id in 1..=5 {
        assert_eq!(through[&id], expected[&id], "answer {id} differs through the gateway");
    }
    let tools: Value = serde_json::from_str(&through[&2]).expect("json");
    assert!(
        tools["result"]["tools"].as_array().is_some_and(|t| t.iter().all(|t| t["execution"].is_object())),
        "{tools}"
    );
    let init: Value = serde_json::from_str(&through[&1]).expect("json");
    assert!(init["result"]["capabilities"]["tasks"].is_object(), "{init}");
    drop(stdin);
    let _ = child.wait();
}

// Issue 33, §2: a task-augmented `tools/call` (`simulate-research-query`, `taskSupport:
// "required"`) is governed exactly like a plain one, and waiting for the principal needs no
// client timeout: held, it is answered at once with a task of the gateway's own (`working`, the
// packet named in its status message); approved, it reaches the server with its `task` parameter
// and the server's task takes over under the same task id (`tasks/get`, `tasks/result`,
// `tasks/list` and the server's status notifications all speak of the id the client knows);
// refused, its task is `failed` and `tasks/result` gives the refusal — and the server never saw
// it. (The SDK had dropped `task` and refused `tasks/result`.)
#[test]
fn a_held_task_augmented_call_is_a_task_until_the_principal_decides() {
    if !have(&["mcp-server-everything"]) {
        return;
    }
    let s = setup();
    let (mut child, mut stdin) = raw_gateway(&s, &["--wait", "60", "--", "mcp-server-everything"]);
    let rx = raw_lines(&mut child);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"tasks": {"list": {}, "cancel": {}}},
        "clientInfo": {"name": "tasks", "version": "1"}}});
    let _ = exchange(&mut stdin, &rx, &[init.to_string()]);
    writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).expect("write");
    let call = |id: i64, topic: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "simulate-research-query", "arguments": {"topic": topic}, "task": {"ttl": 60000}}})
        .to_string()
    };
    let ask = |stdin: &mut ChildStdin, id: i64, method: &str, task: &str| -> Value {
        let m = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {"taskId": task}}).to_string();
        serde_json::from_str(&exchange(stdin, &rx, &[m])[&id]).expect("json")
    };
    // Held: a task at once, naming the packet.
    let created: Value = serde_json::from_str(&exchange(&mut stdin, &rx, &[call(2, "warrant")])[&2]).expect("json");
    let task = created["result"]["task"]["taskId"].as_str().unwrap_or_else(|| panic!("a task: {created}")).to_owned();
    assert_eq!(created["result"]["task"]["status"], json!("working"), "{created}");
    assert_eq!(created["result"]["task"]["ttl"], json!(60000), "the client's retention, under the gateway's hour");
    let id = s.held("everything/simulate-research-query");
    let message = created["result"]["task"]["statusMessage"].as_str().expect("a status message");
    assert!(message.contains(&id), "{message}");
    assert_eq!(ask(&mut stdin, 3, "tasks/get", &task)["result"]["status"], json!("working"));
    let packet = s.packets().into_iter().find(|p| p["packet_id"] == json!(id)).expect("the packet");
    assert!(packet["summary"].as_str().is_some_and(|t| t.contains("topic: warrant")), "{packet}");
    // Approved: the server's task takes over; its result comes through the client's task id.
    assert_eq!(s.env.run(&["approve", "--yes", &id]).status.code(), Some(0));
    let v = ask(&mut stdin, 4, "tasks/result", &task);
    assert!(v["result"]["content"].is_array() && v.get("error").is_none(), "{v}");
    let related = &v["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"];
    assert!(related.is_null() || *related == json!(task), "{v}");
    let v = ask(&mut stdin, 5, "tasks/get", &task);
    assert_eq!(v["result"]["status"], json!("completed"), "{v}");
    assert_eq!(v["result"]["taskId"], json!(task), "{v}");
    let receipts = s.receipts();
    assert!(
        receipts.iter().any(|r| r["packet_id"] == json!(id) && r["note"].as_str().is_some_and(|n| n.contains("task"))),
        "{receipts:?}"
    );

    // Refused: the task fails with the refusal, and the server has no task for it.
    let created: Value = serde_json::from_str(&exchange(&mut stdin, &rx, &[call(6, "refused")])[&6]).expect("json");
    let refused_task = created["result"]["task"]["taskId"].as_str().expect("a task").to_owned();
    let deadline = Instant::now() + Duration::from_secs(30);
    let refused_id = loop {
        let waiting: Vec<Value> = s
            .packets()
            .into_iter()
            .filter(|p| is_waiting(p) && p["summary"].as_str().is_some_and(|t| t.contains("topic: refused")))
            .collect();
        if let [p] = waiting.as_slice() {
            break p["packet_id"].as_str().expect("id").to_owned();
        }
        assert!(Instant::now() < deadline, "no packet for the second call");
        std::thread::sleep(Duration::from_millis(100));
    };
    let o = s.env.run(&["refuse", "--yes", &refused_id, "--reason", "not now"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v = ask(&mut stdin, 7, "tasks/result", &refused_task);
    assert_eq!(v["result"]["isError"], json!(true), "{v}");
    assert_eq!(v["result"]["_meta"]["_warrant"]["status"], json!("refused"), "{v}");
    assert_eq!(ask(&mut stdin, 8, "tasks/get", &refused_task)["result"]["status"], json!("failed"));
    let listed: Value = serde_json::from_str(
        &exchange(&mut stdin, &rx, &[json!({"jsonrpc": "2.0", "id": 9, "method": "tasks/list"}).to_string()])[&9],
    )
    .expect("json");
    let mut ids: Vec<&str> =
        listed["result"]["tasks"].as_array().expect("tasks").iter().filter_map(|t| t["taskId"].as_str()).collect();
    ids.sort_unstable();
    let mut expected = vec![task.as_str(), refused_task.as_str()];
    expected.sort_unstable();
    assert_eq!(ids, expected, "the server's task under the client's id, and the refused one: {listed}");
    drop(stdin);
    let _ = child.wait();
}

/// A client's `initialize` request (id 1), as a raw JSON-RPC message.
fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
           "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
}

/// `warrant mcp-gateway ARGS` with the test's environment, spoken to in raw JSON-RPC lines on
/// its stdin (returned), its stdout piped.
fn raw_gateway(s: &Setup, args: &[&str]) -> (Child, ChildStdin) {
    let mut child = Command::new(BIN)
        .arg("mcp-gateway")
        .args(args)
        .envs(s.vars())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("gateway");
    let stdin = child.stdin.take().expect("stdin");
    (child, stdin)
}

/// Whether process `pid` runs (a zombie, dead but not yet reaped, does not).
fn running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(") ").map(|(_, rest)| !rest.starts_with('Z')))
        .unwrap_or(false)
}

/// A gateway in front of a "server" that never answers `initialize` (a shell waiting on a
/// `sleep 300` it started, whose pid it writes to `pidfile`), with the agent's `initialize`
/// already sent; returns the gateway, its stdout lines, and the shell's and sleep's pids.
fn silent_server(s: &Setup, extra: &[&str]) -> (Child, mpsc::Receiver<Value>, ChildStdin, [i32; 2]) {
    let pidfile = s.path("server.pids");
    let script = format!("echo $$ > '{0}'; sleep 300 & echo $! >> '{0}'; wait", pidfile.display());
    let mut args = vec!["--wait", "1"];
    args.extend_from_slice(extra);
    args.extend(["--", "sh", "-c", &script]);
    let (mut child, mut stdin) = raw_gateway(s, &args);
    let init = initialize();
    writeln!(stdin, "{init}").and_then(|()| stdin.flush()).expect("initialize");
    let rx = lines(&mut child);
    let start = Instant::now();
    let pids = loop {
        let pids: Vec<i32> = std::fs::read_to_string(&pidfile)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect();
        if let [sh, sleep] = pids.as_slice() {
            break [*sh, *sleep];
        }
        assert!(start.elapsed() < Duration::from_secs(20), "the server never started");
        std::thread::sleep(Duration::from_millis(20));
    };
    (child, rx, stdin, pids)
}

/// Waits until none of `pids` runs.
fn all_gone(pids: &[i32], what: &str) {
    let start = Instant::now();
    while pids.iter().any(|p| running(*p)) {
        assert!(start.elapsed() < Duration::from_secs(10), "{what}: still running: {pids:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

// Issue 33, §1: a server that never finishes `initialize` no longer holds the gateway: past
// `--handshake-timeout` the agent gets an error naming the server, and the server and the
// process it started are stopped (its whole process group); SIGTERM, or the agent closing its
// end, during the handshake ends the gateway at once, the server's processes with it (they were
// orphaned, the gateway killable only by SIGKILL).
#[test]
fn a_server_that_never_answers_initialize_is_timed_out_and_stopped_whole() {
    let s = setup();
    let (mut child, rx, _stdin, pids) = silent_server(&s, &["--handshake-timeout", "1"]);
    let v = rx.recv_timeout(Duration::from_secs(15)).expect("an answer to initialize");
    assert_eq!(v["id"], json!(1), "{v}");
    let message = v["error"]["message"].as_str().unwrap_or_else(|| panic!("an error: {v}"));
    assert!(message.contains("did not answer initialize within 1s") && message.contains("(sh)"), "{message}");
    // The agent is told the server's name and program, never its arguments (they may carry
    // secrets); the command line is in the gateway's own log.
    assert!(!message.contains("sleep 300"), "{message}");
    all_gone(&pids, "after the handshake timed out");
    let _ = child.kill();
    let _ = child.wait();

    let (mut child, _rx, _stdin, pids) = silent_server(&s, &[]);
    let gateway = rustix::process::Pid::from_child(&child);
    rustix::process::kill_process(gateway, rustix::process::Signal::TERM).expect("SIGTERM");
    let start = Instant::now();
    loop {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(5), "SIGTERM during the handshake did not end the gateway");
        std::thread::sleep(Duration::from_millis(20));
    }
    all_gone(&pids, "after SIGTERM during the handshake");

    // The agent closing its end during the handshake ends the gateway too, the server with it.
    let (mut child, _rx, stdin, pids) = silent_server(&s, &[]);
    drop(stdin);
    let start = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        assert!(start.elapsed() < Duration::from_secs(5), "stdin's end during the handshake did not end the gateway");
        std::thread::sleep(Duration::from_millis(20));
    }
    all_gone(&pids, "after the agent closed its end during the handshake");
}

// Issue 33, §1: the server's own traffic reaches the client only after the client's
// `notifications/initialized` (server-everything sends `tools/list_changed` as soon as it is
// initialized, and the gateway initializes it at once: the client heard it before its own
// `initialized`, which the spec says a server must not do).
#[test]
fn the_servers_traffic_waits_for_the_clients_initialized() {
    if !have(&["mcp-server-everything"]) {
        return;
    }
    let s = setup();
    let (mut child, mut stdin) = raw_gateway(&s, &["--wait", "1", "--", "mcp-server-everything"]);
    let init = initialize();
    writeln!(stdin, "{init}").and_then(|()| stdin.flush()).expect("initialize");
    let rx = lines(&mut child);
    let v = rx.recv_timeout(Duration::from_secs(30)).expect("the initialize result");
    assert_eq!(v["id"], json!(1), "the first thing the client hears is its initialize result: {v}");
    assert!(v["result"]["serverInfo"].is_object(), "{v}");
    // Before the client's `initialized`: nothing from the server.
    if let Ok(early) = rx.recv_timeout(Duration::from_millis(1500)) {
        panic!("the server's traffic reached the client before its initialized: {early}");
    }
    writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .and_then(|()| stdin.flush())
        .expect("initialized");
    let v = rx.recv_timeout(Duration::from_secs(10)).expect("the server's notification, once initialized");
    assert_eq!(v["method"], json!("notifications/tools/list_changed"), "{v}");
    drop(stdin);
    let _ = child.wait();
}

// (3) A refused write is a normal tool result with isError and `_warrant` (status refused, the
// packet, the principal's reason); the file is unchanged.
#[test]
fn a_refused_write_returns_is_error_with_warrant_and_changes_nothing() {
    if !have(&["mcp-server-filesystem"]) {
        return;
    }
    let s = setup();
    let target = s.path("keep.txt");
    std::fs::write(&target, "original\n").expect("write");
    let mut child =
        s.fs_client(&json!([call("write_file", json!({"path": target, "content": "clobbered\n"}))]), &["--wait", "60"]);
    let rx = lines(&mut child);
    let id = s.held("filesystem/write_file");
    let o = s.env.run(&["refuse", "--yes", &id, "--reason", "keep.txt stays as it is"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let a = answer(&rx, 40);
    let stderr = finish(child);
    assert!(a.get("error").is_none(), "a refusal is a tool result, not a protocol error: {a}\n{stderr}");
    assert_eq!(a["result"]["isError"], json!(true), "{a}");
    let w = &a["result"]["_meta"]["_warrant"];
    assert_eq!(w["status"], json!("refused"), "{a}");
    assert_eq!(w["packet_id"], json!(id));
    assert!(w["reason"].as_str().is_some_and(|r| r.contains("keep.txt stays as it is")), "{w}");
    // `write_file` declares an `outputSchema`: a structured result would have to follow it, and
    // the TypeScript SDK client throws on one that does not, so `_warrant` is in `_meta` only.
    assert!(a["result"].get("structuredContent").is_none(), "{a}");
    let t = result_text(&a);
    assert!(t.contains("refused") && t.contains(&id) && t.contains("keep.txt stays as it is"), "{t}");
    assert_eq!(std::fs::read_to_string(&target).expect("read"), "original\n");
    assert!(s.receipts().iter().all(|r| r["packet_id"] != json!(id)), "nothing was forwarded");
}

/// npm's global `node_modules`, when the TypeScript MCP SDK is installed there; under `CI=true`
/// its absence fails the test (`.ci/run` installs it), elsewhere the test is skipped.
fn typescript_sdk() -> Option<String> {
    let root = Command::new("npm")
        .args(["root", "-g"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .filter(|r| Path::new(r).join("@modelcontextprotocol/sdk/package.json").is_file());
    if root.is_none() {
        let why = "missing the TypeScript MCP SDK (npm install -g @modelcontextprotocol/sdk): `.ci/run` installs it";
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{why}");
        eprintln!("skipped: {why}");
    }
    root
}

// (3b) The same refusal as the TypeScript SDK's client receives it. That client validates a
// structured result against the tool's `outputSchema` and throws (-32602) on one that does not
// match, so a refusal with `structuredContent` never reached the agent.
#[test]
fn a_refusal_reaches_the_typescript_sdk_client_as_a_tool_result() {
    if !have(&["mcp-server-filesystem"]) {
        return;
    }
    let Some(node_path) = typescript_sdk() else { return };
    let s = setup();
    let target = s.path("keep.txt");
    std::fs::write(&target, "original\n").expect("write");
    let root = s.root.path().to_string_lossy().into_owned();
    let client = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/mcp_client_ts.cjs");
    let child = Command::new("node")
        .arg(client)
        .arg("write_file")
        .arg(json!({"path": target, "content": "clobbered\n"}).to_string())
        .args(["--", BIN, "mcp-gateway", "--wait", "60", "--", "mcp-server-filesystem", &root])
        .envs(s.vars())
        .env("NODE_PATH", node_path)
        .current_dir(s.root.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("node");
    let id = s.held("filesystem/write_file");
    let o = s.env.run(&["refuse", "--yes", &id, "--reason", "keep.txt stays as it is"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = child.wait_with_output().expect("node");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let line: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
    assert!(line.get("error").is_none(), "the SDK threw instead of returning the refusal: {line}");
    let result = &line["result"];
    assert_eq!(result["isError"], json!(true), "{line}");
    assert_eq!(result["_meta"]["_warrant"]["status"], json!("refused"), "{line}");
    let t = result["content"].as_array().into_iter().flatten().filter_map(|c| c["text"].as_str()).collect::<String>();
    assert!(t.contains("keep.txt stays as it is") && t.contains(&id), "{t}");
    assert_eq!(std::fs::read_to_string(&target).expect("read"), "original\n");
}

// (4) A held call past `--wait` is refused (status timeout), and an approval that comes later,
// while the gateway still serves the same client, never runs it.
#[test]
fn a_held_call_past_its_wait_is_refused_and_never_runs_later() {
    if !have(&["mcp-server-filesystem"]) {
        return;
    }
    let s = setup();
    let (late, second) = (s.path("late.txt"), s.path("second.txt"));
    let steps = json!([
        call("write_file", json!({"path": late, "content": "late\n"})),
        call("write_file", json!({"path": second, "content": "second\n"})),
    ]);
    let mut child = s.fs_client(&steps, &["--wait", "2"]);
    let rx = lines(&mut child);
    let first = answer(&rx, 40);
    assert_eq!(first["result"]["isError"], json!(true), "{first}");
    let w = &first["result"]["_meta"]["_warrant"];
    assert_eq!(w["status"], json!("timeout"), "{first}");
    let id = w["packet_id"].as_str().expect("packet id").to_owned();
    assert!(result_text(&first).contains("not run"), "{first}");
    // The agent gives the packet another day and the principal tries to approve it, while the
    // gateway holds the second call: it was answered, so it is withdrawn and cannot be approved.
    let path = s.env.spool().join("packets").join(format!("{id}.json"));
    let mut doc: Value = serde_json::from_slice(&std::fs::read(&path).expect("packet")).expect("json");
    doc["expires_at"] = json!("2099-01-01T00:00:00Z");
    std::fs::write(&path, serde_json::to_vec(&doc).expect("json")).expect("rewrite");
    let o = s.env.run(&["approve", "--yes", &id]);
    assert_ne!(o.status.code(), Some(0), "an answered call was approved: {}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("withdrawn"), "{}", text(&o));
    let second_answer = answer(&rx, 40);
    assert_eq!(second_answer["result"]["_meta"]["_warrant"]["status"], json!("timeout"), "{second_answer}");
    finish(child);
    std::thread::sleep(Duration::from_millis(500));
    assert!(!late.exists(), "a timed-out call never runs");
    assert!(!second.exists());
    assert!(s.receipts().is_empty(), "{:?}", s.receipts());
    let listed = s.packets();
    let p = listed.iter().find(|p| p["packet_id"] == json!(id)).expect("the packet stays");
    assert!(p["withdrawn"].as_str().is_some_and(|w| w.contains("(timeout)")), "{p}");
}

// A call the client cancels while it is held is answered (`cancelled`) and withdrawn: the
// principal cannot approve it afterwards, and it never runs (issue "guarantees on the things
// themselves" §3: a cancelled call stayed pending and approvable).
#[test]
fn a_held_call_the_client_cancels_is_withdrawn_and_never_runs() {
    if !have(&["mcp-server-filesystem"]) {
        return;
    }
    let s = setup();
    let target = s.path("cancelled.txt");
    let steps = json!([
        {"call": "write_file", "args": {"path": target, "content": "x\n"}, "cancel_after": 3, "linger": 2},
    ]);
    let mut child = s.fs_client(&steps, &["--wait", "60"]);
    let rx = lines(&mut child);
    let id = s.held("filesystem/write_file");
    let cancelled = answer(&rx, 40);
    assert_eq!(cancelled["cancelled"], json!(true), "{cancelled}");
    // The gateway has the cancellation before the client ends (it lingers); look until it says so.
    let deadline = Instant::now() + Duration::from_secs(20);
    let p = loop {
        let listed = s.packets();
        let p = listed.iter().find(|p| p["packet_id"] == json!(id)).cloned().expect("the packet stays");
        if p["withdrawn"].is_string() || Instant::now() > deadline {
            break p;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(p["withdrawn"].as_str().is_some_and(|w| w.contains("(cancelled)")), "{p}");
    let o = s.env.run(&["approve", "--yes", &id]);
    assert_ne!(o.status.code(), Some(0), "a cancelled call was approved: {}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("withdrawn"), "{}", text(&o));
    finish(child);
    assert!(!target.exists(), "a cancelled call never runs");
}

// (5) Killing the gateway while a call is held runs nothing, and the call is withdrawn at once:
// the principal cannot approve it afterwards (an approval of a call that never ran would land
// in the chain).
#[test]
fn killing_the_gateway_while_a_call_is_held_runs_nothing() {
    if !have(&["mcp-server-filesystem"]) {
        return;
    }
    let s = setup();
    let target = s.path("never.txt");
    let pidfile = s.env.dir.path().join("gateway.pid");
    let root = s.root.path().to_string_lossy().into_owned();
    let steps = json!([call("write_file", json!({"path": target, "content": "never\n"}))]);
    let child = s.client(&steps, &["--wait", "60"], &["mcp-server-filesystem", &root], Some(&pidfile));
    let id = s.held("filesystem/write_file");
    // The gateway holds the call once it has recorded how long it waits (just after publishing
    // the packet: a gateway killed between the two leaves the packet to its `expires_at`).
    let until = s.env.spool().join(format!("uses/until+{id}.use"));
    let deadline = Instant::now() + Duration::from_secs(20);
    while !until.exists() {
        assert!(Instant::now() < deadline, "the gateway never recorded its wait: {}", until.display());
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = std::fs::read_to_string(&pidfile).expect("pid file").trim().to_owned();
    let o = Command::new("kill").args(["-KILL", &pid]).output().expect("kill");
    assert!(o.status.success(), "{}", text(&o));
    std::thread::sleep(Duration::from_millis(200));
    let o = s.env.run(&["approve", "--yes", &id]);
    assert_ne!(o.status.code(), Some(0), "the call of a killed gateway was approved: {}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("withdrawn"), "{}", text(&o));
    finish(child);
    std::thread::sleep(Duration::from_secs(1));
    assert!(!target.exists(), "the killed gateway ran nothing");
    assert!(s.receipts().is_empty(), "{:?}", s.receipts());
}

// Fail closed: with no spool the gateway still starts and answers, and every call is refused
// with the reason (never forwarded).
#[test]
fn without_a_spool_every_call_is_refused_with_the_reason() {
    if !have(&["mcp-server-filesystem"]) {
        return;
    }
    let s = setup();
    std::fs::remove_dir_all(s.env.spool()).expect("remove the spool");
    std::fs::write(s.path("a.txt"), "secret\n").expect("write");
    let mut child = s.fs_client(&json!([call("read_text_file", json!({"path": s.path("a.txt")}))]), &[]);
    let rx = lines(&mut child);
    let a = answer(&rx, 40);
    finish(child);
    assert_eq!(a["result"]["isError"], json!(true), "{a}");
    assert_eq!(a["result"]["_meta"]["_warrant"]["status"], json!("blocked"), "{a}");
    assert!(result_text(&a).contains("no spool"), "{a}");
    assert!(!result_text(&a).contains("secret"), "{a}");
}

fn git(dir: &Path, args: &[&str]) -> String {
    let o = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git");
    assert!(o.status.success(), "git {args:?}: {}", text(&o));
    String::from_utf8_lossy(&o.stdout).trim().to_owned()
}

// mcp-server-git (PyPI) behind the gateway: git_status (safe) runs; git_commit (mutating) is held
// and, refused, leaves HEAD where it was.
#[test]
fn git_status_runs_and_a_refused_git_commit_changes_nothing() {
    if !have(&["mcp-server-git", "git"]) {
        return;
    }
    let s = setup();
    let repo = s.root.path();
    git(repo, &["init", "-q"]);
    std::fs::write(repo.join("README"), "one\n").expect("write");
    git(repo, &["add", "README"]);
    git(repo, &["commit", "-q", "-m", "first"]);
    std::fs::write(repo.join("README"), "two\n").expect("write");
    git(repo, &["add", "README"]);
    let head = git(repo, &["rev-parse", "HEAD"]);
    let path = repo.to_string_lossy().into_owned();
    let steps = json!([
        call("git_status", json!({"repo_path": path})),
        call("git_commit", json!({"repo_path": path, "message": "second"})),
    ]);
    let mut child = s.client(&steps, &["--wait", "60"], &["mcp-server-git", "--repository", &path], None);
    let rx = lines(&mut child);
    let status = answer(&rx, 40);
    assert_eq!(status["result"]["isError"], json!(false), "{status}");
    assert!(result_text(&status).contains("README"), "{status}");
    let id = s.held("git/git_commit");
    let o = s.env.run(&["refuse", "--yes", &id, "--reason", "not now"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let commit = answer(&rx, 40);
    let stderr = finish(child);
    assert_eq!(commit["result"]["isError"], json!(true), "{commit}\n{stderr}");
    assert_eq!(commit["result"]["_meta"]["_warrant"]["status"], json!("refused"), "{commit}");
    assert_eq!(git(repo, &["rev-parse", "HEAD"]), head, "the refused commit was not made");
    let receipts = s.receipts();
    assert_eq!(receipts.len(), 1, "only git_status ran: {receipts:?}");
    assert_eq!(receipts[0]["action_class"], json!("read.context"));
}

// Two-phase execution (`lodestar-and-tiers.md` §A3): the table pins the file a write names
// (`file.exists` and `file.sha256` of `path`). A first write is approved and runs: the file the
// principal approved is the file it finds. A second write is approved too, but the file changes
// after the approval and before the gateway forwards the call — the gateway is stopped
// (SIGSTOP) from before the approval until after the change, so the order is certain — and the
// call is refused with `precondition_failed`; the tool never runs.
#[test]
fn an_approved_write_whose_file_changed_after_the_approval_is_refused() {
    if !have(&["mcp-server-filesystem"]) {
        return;
    }
    let s = setup();
    let pinned = POLICY.replace(
        "class = \"file.write\"\nlevel = 2\n",
        "class = \"file.write\"\nlevel = 2\npreconditions = [{ check = \"file.exists\", argument = \"path\" }, { check = \"file.sha256\", argument = \"path\" }]\n",
    );
    assert_ne!(pinned, POLICY);
    s.env.policy(&format!("{pinned}\n[preconditions]\nroots = [\"{}\"]\n", s.root.path().display()));
    let target = s.path("pinned.txt");
    std::fs::write(&target, "original\n").expect("write");
    let pidfile = s.env.dir.path().join("gateway.pid");
    let root = s.root.path().to_string_lossy().into_owned();
    let steps = json!([
        call("write_file", json!({"path": target, "content": "first\n"})),
        call("write_file", json!({"path": "pinned.txt", "content": "second\n"})),
    ]);
    let mut child = s.client(&steps, &["--wait", "60"], &["mcp-server-filesystem", &root], Some(&pidfile));
    let rx = lines(&mut child);
    let first = s.held("filesystem/write_file");
    let listed = s.packets();
    let p = listed.iter().find(|p| p["packet_id"] == json!(first)).expect("listed");
    assert_ne!(p["state"], json!("blocked"), "the preconditions hold: {p}");
    let o = s.env.run(&["approve", "--yes", &first]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let a = answer(&rx, 40);
    assert_eq!(a["result"]["isError"], json!(false), "{a}");
    assert_eq!(std::fs::read_to_string(&target).expect("read"), "first\n");
    // The second call names the file relative to the gateway's working directory (the root).
    let second = s.held("filesystem/write_file");
    let packet: Value = serde_json::from_slice(
        &std::fs::read(s.env.spool().join("packets").join(format!("{second}.json"))).expect("packet"),
    )
    .expect("json");
    let pre = &packet["governance"]["contract"]["preconditions"];
    let canonical = std::fs::canonicalize(&target).expect("canonical");
    assert_eq!(pre[0]["parameters"]["path"], json!(canonical), "resolved against the cwd: {pre}");
    assert_eq!(pre[0]["expected_at_approval"], json!(true), "observed when proposed: {pre}");
    assert!(pre[1]["expected_at_approval"].as_str().is_some_and(|d| d.starts_with("sha256:")), "{pre}");
    let pid = std::fs::read_to_string(&pidfile).expect("pid file").trim().to_owned();
    let signal = |sig: &str| {
        let o = Command::new("kill").args([sig, &pid]).output().expect("kill");
        assert!(o.status.success(), "kill {sig}: {}", text(&o));
    };
    signal("-STOP");
    let o = s.env.run(&["approve", "--yes", &second]);
    let approved = o.status.code() == Some(0);
    std::fs::write(&target, "changed by the principal\n").expect("write");
    signal("-CONT");
    assert!(approved, "{}", text(&o));
    let a = answer(&rx, 40);
    let stderr = finish(child);
    assert_eq!(a["result"]["isError"], json!(true), "{a}\n{stderr}");
    let w = &a["result"]["_meta"]["_warrant"];
    assert_eq!(w["status"], json!("precondition_failed"), "{a}");
    assert_eq!(w["packet_id"], json!(second));
    assert!(w["reason"].as_str().is_some_and(|r| r.contains("file.sha256") && r.contains("approved")), "{w}");
    assert!(result_text(&a).contains("precondition_failed"), "{a}");
    assert_eq!(std::fs::read_to_string(&target).expect("read"), "changed by the principal\n", "the tool never ran");
    let receipts = s.receipts();
    assert!(receipts.iter().all(|r| r["packet_id"] != json!(second)), "nothing was forwarded: {receipts:?}");
    assert_eq!(receipts.iter().filter(|r| r["packet_id"] == json!(first)).count(), 1, "{receipts:?}");
}

// Found by review: the SDK reads a request it cannot parse as one it knows as a custom request,
// and the gateway forwarded every other request. A `tools/call` with a field of the wrong type
// must be refused, never forwarded ungoverned. (The client here writes JSON-RPC lines by hand, as
// a hostile client would; `lines` reads the answers.)
#[test]
fn a_tools_call_the_sdk_cannot_read_is_refused_never_forwarded() {
    if !have(&["mcp-server-filesystem"]) {
        return;
    }
    let s = setup();
    let root = s.root.path().to_string_lossy().into_owned();
    let mut child = s
        .env
        .cmd(&["mcp-gateway", "--", "mcp-server-filesystem", &root])
        .current_dir(s.root.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("gateway");
    let rx = lines(&mut child);
    let target = s.path("owned.txt");
    let mut stdin = child.stdin.take().expect("stdin");
    let send = |stdin: &mut std::process::ChildStdin, v: Value| {
        use std::io::Write as _;
        writeln!(stdin, "{v}").and_then(|()| stdin.flush()).expect("write");
    };
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    let reply = |id: i64| loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let v = rx.recv_timeout(left).unwrap_or_else(|e| panic!("no answer to {id}: {e}"));
        if v["id"] == json!(id) {
            break v;
        }
    };
    assert!(reply(1).get("result").is_some());
    send(&mut stdin, json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    for (id, params) in [
        (2, json!({"name": "write_file", "arguments": {"path": target, "content": "owned"}, "requestState": 1})),
        (3, json!({"name": "write_file", "arguments": "not an object"})),
    ] {
        send(&mut stdin, json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}));
        let v = reply(id);
        let refused = v.get("error").is_some() || v["result"]["isError"] == json!(true);
        assert!(refused, "{v}");
    }
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    assert!(!target.exists(), "the write never ran");
}

// With the real console: the gateway holds a write; the principal, in `warrant console`
// running in a real terminal (tmux) on the same spool and configuration, sees the packet, opens
// the sign dialog, reads it to its end and signs the approval. The call runs then: the client's
// answer is the server's result, the file holds what the agent wrote, and a receipt names the
// packet.
#[test]
fn a_held_write_is_approved_from_the_console_under_tmux_then_runs_and_leaves_a_receipt() {
    if !have(&["mcp-server-filesystem", "tmux"]) {
        return;
    }
    let s = setup();
    let mut vars = s.vars();
    vars.push(("TERM", "xterm-256color".into()));
    let console = tmux::Tmux::start("gateway-approve", &vars, &["console"]);
    console.wait_for("the console", |sc| sc.contains("chain ok") && sc.contains("0 pending"));
    let target = s.path("from-the-console.txt");
    let mut child = s.fs_client(
        &json!([call("write_file", json!({"path": target, "content": "approved in the console\n"}))]),
        &["--wait", "60"],
    );
    let rx = lines(&mut child);
    let id = s.held("filesystem/write_file");
    console.wait_for("the held call", |sc| sc.contains("1 pending") && sc.contains("mcp-gateway"));
    assert!(!target.exists(), "nothing runs while the call is held");
    console.send(&["a"]);
    let (dialog, _) =
        console.wait_for("the sign dialog", |sc| sc.contains("Confirm: approve") && sc.contains("[ Cancel ]"));
    assert!(dialog.contains(&id) && dialog.contains("filesystem/write_file"), "the dialog names the call:\n{dialog}");
    // Approval unlocks once every line of the dialog has been on screen: page down, one page per
    // frame, until the dialog says so.
    let start = Instant::now();
    loop {
        let (screen, _) = console.wait_for("the sign dialog", |sc| sc.contains("Confirm: approve"));
        if screen.contains("✓ all") {
            assert!(screen.contains("[ Sign approval ]"), "unlocked:\n{screen}");
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "the dialog never unlocked:\n{screen}");
        console.send(&["space"]);
        console.wait_for("the next page", |sc| sc != screen);
    }
    console.send(&["y"]);
    console.wait_for("the approval", |sc| sc.contains(&format!("approved {id}")));
    let a = answer(&rx, 40);
    let stderr = finish(child);
    assert_eq!(a["result"]["isError"], json!(false), "{a}\n{stderr}");
    assert!(a["result"]["_meta"].get("_warrant").is_none(), "the server's own result: {a}");
    assert!(result_text(&a).contains("from-the-console.txt"), "{a}");
    assert_eq!(std::fs::read_to_string(&target).expect("written"), "approved in the console\n");
    // The decision is the console's, signed by the principal and in the chain.
    let listed = s.packets();
    let p = listed.iter().find(|p| p["packet_id"] == json!(id)).expect("listed");
    assert_eq!(p["decision"], json!("approve"), "{p}");
    let o = s.env.run(&["verify", &s.env.spool().display().to_string(), "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let report: Value = serde_json::from_slice(&o.stdout).expect("verify --json");
    assert_eq!(report["signatures_verified"], json!(1), "{report}");
    let receipts = s.receipts();
    let mine: Vec<&Value> = receipts.iter().filter(|r| r["packet_id"] == json!(id)).collect();
    assert_eq!(mine.len(), 1, "{receipts:?}");
    assert_eq!(mine[0]["action_class"], json!("file.write"));
    assert_eq!(mine[0]["outcome"], json!("execute"));
    assert!(mine[0]["note"].as_str().is_some_and(|n| n.contains("isError false")), "{:?}", mine[0]);
    console.send(&["q"]);
    let start = Instant::now();
    while console.alive() && start.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!console.alive(), "q quits the console");
}

/// A tool table where `filesystem/write_file` is an L1 call of a local class that must earn
/// autonomy level 3 (auto_capped) before it runs on its own. The server marks the tool
/// `destructiveHint: true`, so it is destructive whatever the table says: only an `autonomous`
/// notebook lets the tiers model run it without a prompt, which leaves Trust Graduation to decide.
const GRADUATING: &str = r#"
[[class]]
id = "file.write"
type = "internal"
minimum_level = 3

[tools."filesystem/write_file"]
tier = "destructive"
class = "file.write"
level = 1
"#;

// Trust Graduation end to end through the gateway: in a notebook the principal made autonomous, a
// write of a class that must earn evidence is held, and its first progress message says how many
// approved calls graduate the class; each approval (with `warrant approve`) runs the call and
// brings the count down by one; after that many the next call runs at once, with no packet left
// pending, and a call that was held all along (another connection's) runs too, judged again while
// it waited. Then the principal refuses one call of the class (a third connection's, which waited
// in vain before the class graduated) and the next call is held again, its class unable to
// graduate on approvals.
#[test]
fn graduation_through_the_gateway_lets_the_next_call_run_then_one_refusal_holds_it_again() {
    if !have(&["mcp-server-filesystem"]) {
        return;
    }
    let s = setup();
    s.env.policy(GRADUATING);
    let o = s.env.run(&["trust", "set", "nb-grad", "autonomous", "--confirm", "nb-grad", "--reason", "e2e"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let gateway = ["--notebook", "nb-grad", "--wait", "60"];
    let write = |name: &str| json!({"path": s.path(name), "content": format!("{name}\n")});
    // A call nobody decides in its second: refused at its timeout; the principal refuses its
    // packet at the end.
    let mut short =
        s.fs_client(&json!([call("write_file", write("never.txt"))]), &["--notebook", "nb-grad", "--wait", "1"]);
    let short_rx = lines(&mut short);
    let timed_out = answer(&short_rx, 40);
    finish(short);
    assert_eq!(timed_out["result"]["_meta"]["_warrant"]["status"], json!("timeout"), "{timed_out}");
    let short_id = timed_out["result"]["_meta"]["_warrant"]["packet_id"].as_str().expect("packet id").to_owned();
    // A call that stays held while the class graduates, and runs once it has.
    let mut other = s.fs_client(&json!([call("write_file", write("waited.txt"))]), &gateway);
    let other_rx = lines(&mut other);
    let other_id = loop {
        let v = other_rx.recv_timeout(Duration::from_secs(40)).expect("the other call is held");
        assert!(v.get("call").is_none(), "held, not answered: {v}");
        if let Some(m) = v["at"][2].as_str() {
            break held_packet(m);
        }
    };
    let mut session = s.fs_session(&gateway);
    let mut needed: Option<u32> = None;
    let mut approved = Vec::new();
    let free = loop {
        let name = format!("g-{}.txt", approved.len());
        session.call("write_file", write(&name));
        let message = match session.first_event() {
            Event::Answer(a) => break (name, a),
            Event::Held(m) => m,
        };
        let left = approvals_left(&message).unwrap_or_else(|| panic!("held with no way to graduate: {message}"));
        assert!(message.contains("of `file.write` and it runs on its own"), "{message}");
        let n = *needed.get_or_insert(left);
        let done = u32::try_from(approved.len()).expect("count");
        assert_eq!(Some(left), n.checked_sub(done), "each approval brings the count down by one: {message}");
        let id = held_packet(&message);
        assert!(!s.path(&name).exists(), "nothing runs while the call is held");
        let o = s.env.run(&["approve", "--yes", &id, "--reason", "checked"]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let a = session.answer();
        assert_eq!(a["result"]["isError"], json!(false), "{a}");
        assert_eq!(std::fs::read_to_string(s.path(&name)).expect("written"), format!("{name}\n"));
        approved.push(id);
        assert!(approved.len() <= 20, "still held after {} approvals: {message}", approved.len());
    };
    let needed = needed.expect("the class was held before it graduated");
    assert!(needed > 1, "graduation takes evidence: {needed}");
    assert_eq!(approved.len(), usize::try_from(needed).expect("count"), "graduates after as many approvals as it said");
    // The graduated call ran at once: the server's result, never held (no progress).
    let (name, a) = free;
    assert_eq!(a["result"]["isError"], json!(false), "{a}");
    assert!(a["result"]["_meta"].get("_warrant").is_none(), "{a}");
    assert_eq!(a["progress"], json!([]), "not held: {a}");
    assert_eq!(std::fs::read_to_string(s.path(&name)).expect("written"), format!("{name}\n"));
    // The call held all along runs too, with no decision: the gate allows it now.
    let waited = answer(&other_rx, 40);
    finish(other);
    assert_eq!(waited["result"]["isError"], json!(false), "{waited}");
    assert_eq!(std::fs::read_to_string(s.path("waited.txt")).expect("written"), "waited.txt\n");
    let receipts = s.receipts();
    assert_eq!(receipts.len(), approved.len() + 2, "every call that ran left a receipt: {receipts:?}");
    let ran = receipts
        .iter()
        .filter_map(|r| r["packet_id"].as_str())
        .find(|id| !approved.iter().any(|a| a == id) && *id != other_id)
        .unwrap_or_else(|| panic!("a receipt for the graduated call: {receipts:?}"))
        .to_owned();
    let listed = s.packets();
    for id in [&ran, &other_id] {
        let p = listed.iter().find(|p| p["packet_id"] == json!(id)).expect("the call's packet");
        assert_eq!(p["state"], json!("allowed"), "the gate allowed it on its own: {p}");
        assert!(p["decision"].is_null(), "nobody decided it: {p}");
    }
    let waiting: Vec<&Value> = listed.iter().filter(|p| is_waiting(p)).collect();
    assert!(waiting.is_empty(), "no packet left pending: {waiting:?}");
    // One refusal of a call of the class: the one that waited in vain.
    let o = s.env.run(&["refuse", "--yes", &short_id, "--reason", "not that file"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(!s.path("never.txt").exists(), "the call that timed out never ran");
    // The next call is held again, and approvals alone no longer graduate the class.
    session.call("write_file", write("after.txt"));
    let message = match session.first_event() {
        Event::Held(m) => m,
        Event::Answer(a) => panic!("ran after a refusal: {a}"),
    };
    assert!(message.contains("`file.write` cannot graduate on approvals"), "{message}");
    let id = held_packet(&message);
    let o = s.env.run(&["refuse", "--yes", &id, "--reason", "done"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let a = session.answer();
    let stderr = session.end();
    let w = &a["result"]["_meta"]["_warrant"];
    assert_eq!(w["status"], json!("refused"), "{a}\n{stderr}");
    let level = |k: &str| w["graduationPath"][k].as_u64().unwrap_or_else(|| panic!("graduationPath.{k}: {w}"));
    assert_eq!(level("needed"), 3, "the class's minimum_level: {w}");
    assert!(level("current") < 3, "below the level it needs again: {w}");
    assert!(!s.path("after.txt").exists());
}

// Grants through the gateway: a `create_directory` approved with `--scope session`
// lets the same connection's next one run with no prompt, its receipt naming the grant; another
// connection waits for the principal. `write_file` is destructive (the server's
// `destructiveHint`), so only a pattern typed twice covers it: the paths it names and no other,
// across connections, until it is revoked.
#[test]
fn a_session_grant_covers_the_connection_and_a_pattern_grant_its_paths_until_revoked() {
    if !have(&["mcp-server-filesystem"]) {
        return;
    }
    let s = setup();
    s.env.policy(&format!(
        "{POLICY}\n[tools.\"filesystem/create_directory\"]\ntier = \"mutating\"\nclass = \"file.write\"\nlevel = 2\n"
    ));
    let gateway = ["--wait", "60"];
    let write = |name: &str| json!({"path": s.path(name)});
    let mut session = s.fs_session(&gateway);
    session.call("create_directory", write("first"));
    let Event::Held(message) = session.first_event() else { panic!("the first write is held") };
    let id = held_packet(&message);
    let o = s.env.run(&["approve", "--yes", &id, "--scope", "session", "--reason", "this session"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(session.answer()["result"]["isError"], json!(false));
    // The same connection: runs at once, on the grant.
    session.call("create_directory", write("second"));
    let Event::Answer(a) = session.first_event() else { panic!("the second call runs with no prompt") };
    assert_eq!(a["result"]["isError"], json!(false), "{a}");
    assert!(s.path("second").is_dir());
    // Another connection is another session: held.
    let mut other = s.fs_session(&["--wait", "1"]);
    other.call("create_directory", write("other"));
    assert!(matches!(other.first_event(), Event::Held(_)), "another connection waits for the principal");
    let refused = other.answer();
    assert_eq!(refused["result"]["_meta"]["_warrant"]["status"], json!("timeout"), "{refused}");
    other.end();
    session.end();
    let grants: Vec<Value> =
        serde_json::from_slice(&s.env.run(&["grants", "list", "--json"]).stdout).expect("grants list --json");
    assert_eq!(grants.len(), 1, "{grants:?}");
    let grant_id = grants[0]["grant_id"].as_str().expect("id").to_owned();
    let named: Vec<Value> =
        s.receipts().into_iter().filter(|r| r["tool_call"]["grant_id"] == json!(grant_id)).collect();
    assert_eq!(named.len(), 1, "the second call's receipt names the grant: {named:?}");
    // A pattern grant over the `notes/` directory, on another connection.
    let notes = s.path("notes");
    std::fs::create_dir_all(&notes).expect("notes");
    let glob = format!("filesystem/write_file({}/*)", notes.display());
    let pattern = format!("pattern:{glob}");
    let mut session = s.fs_session(&gateway);
    session.call("write_file", json!({"path": notes.join("a.md"), "content": "a\n"}));
    let Event::Held(message) = session.first_event() else { panic!("held") };
    let id = held_packet(&message);
    let o = s.env.run(&["approve", "--yes", &id, "--scope", &pattern]);
    assert_ne!(o.status.code(), Some(0), "destructive: the pattern must be typed twice");
    assert!(text(&o).contains("--confirm-pattern"), "{}", text(&o));
    let o = s.env.run(&["approve", "--yes", &id, "--scope", &pattern, "--confirm-pattern", &glob]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(session.answer()["result"]["isError"], json!(false));
    session.end();
    let mut session = s.fs_session(&["--wait", "1"]);
    session.call("write_file", json!({"path": notes.join("b.md"), "content": "b\n"}));
    assert!(matches!(session.first_event(), Event::Answer(_)), "a path the pattern covers runs at once");
    session.call("write_file", json!({"path": s.path("outside.md"), "content": "x\n"}));
    assert!(matches!(session.first_event(), Event::Held(_)), "a path it does not cover waits");
    let _ = session.answer();
    let pattern_id = serde_json::from_slice::<Vec<Value>>(&s.env.run(&["grants", "list", "--json"]).stdout)
        .expect("json")
        .into_iter()
        .find(|g| g["scope"] == json!("pattern"))
        .and_then(|g| g["grant_id"].as_str().map(str::to_owned))
        .expect("the pattern grant");
    let o = s.env.run(&["grants", "revoke", &pattern_id, "--reason", "notes are done"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    session.call("write_file", json!({"path": notes.join("c.md"), "content": "c\n"}));
    assert!(matches!(session.first_event(), Event::Held(_)), "revoked: the next call waits");
    let _ = session.answer();
    session.end();
    assert!(!notes.join("c.md").exists());
}

#[cfg(feature = "jetstream")]
use crate::nats;

/// The gateway on an agent's host over a JetStream store: it governs on its own
/// replica; a held write runs once the principal approves it from her replica, and its receipt
/// reaches her through the store.
#[cfg(feature = "jetstream")]
#[test]
fn on_a_jetstream_store_a_held_write_runs_once_the_principal_approves_it() {
    if !have(&["mcp-server-filesystem"]) {
        return;
    }
    let Some(server) = nats::Server::start() else { return };
    let url = server.store_url("gw");
    let mut s = setup();
    let empty = s.env.dir.path().join("empty");
    std::fs::create_dir_all(&empty).expect("dir");
    let o = s.env.run(&["migrate", "--from", &empty.display().to_string(), "--to", &url]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    s.store = Some(url.clone());
    let target = s.path("approved.txt");
    let mut child =
        s.fs_client(&json!([call("write_file", json!({"path": target, "content": "approved\n"}))]), &["--wait", "60"]);
    let rx = lines(&mut child);
    let deadline = Instant::now() + Duration::from_secs(30);
    let id = loop {
        let o = s.env.run(&["--store", &url, "list", "--json"]);
        let v: Value = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
        let held: Vec<String> = v["packets"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| is_waiting(p) && summary_is(p, "filesystem/write_file"))
            .filter_map(|p| p["packet_id"].as_str().map(str::to_owned))
            .collect();
        if let [id] = held.as_slice() {
            break id.clone();
        }
        assert!(Instant::now() < deadline, "no held packet on the store: {}", text(&o));
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(!target.exists(), "nothing runs while the call is held");
    let o = s.env.run(&["--store", &url, "approve", "--yes", &id]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let a = answer(&rx, 40);
    let stderr = finish(child);
    assert_eq!(a["result"]["isError"], json!(false), "{a}\n{stderr}");
    assert_eq!(std::fs::read_to_string(&target).expect("written"), "approved\n");
    // The receipt went to the store: the principal's replica has it after a pull.
    let o = s.env.run(&["--store", &url, "list"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let replica = s.env.dir.path().join("data/warrant/replicas/gw/receipts");
    let receipts: Vec<Value> = std::fs::read_dir(&replica)
        .expect("receipts")
        .filter_map(|e| std::fs::read(e.ok()?.path()).ok())
        .filter_map(|b| serde_json::from_slice(&b).ok())
        .collect();
    assert!(receipts.iter().any(|r| r["packet_id"] == json!(id)), "{receipts:?}");
}

/// A free TCP port on 127.0.0.1 (bound, then released for the server to take).
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

/// Waits until something accepts on `port`.
fn accepting(port: u16) {
    let start = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(start.elapsed() < Duration::from_secs(20), "nothing listens on {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `@modelcontextprotocol/server-everything` in its Streamable HTTP mode on `port`.
fn everything_over_http(port: u16) -> Child {
    let mut cmd = Command::new("mcp-server-everything");
    cmd.arg("streamableHttp").env("PORT", port.to_string());
    http_server(cmd, port)
}

/// An HTTP server started by `cmd`, once it accepts on `port`: its own process group (so the
/// test can stop it whole), its output discarded.
fn http_server(mut cmd: Command, port: u16) -> Child {
    use std::os::unix::process::CommandExt as _;
    let child = cmd
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    accepting(port);
    child
}

/// `warrant mcp-gateway ARGS` with the test's environment and `extra` variables, stdin and
/// stdout piped, its stderr kept in a file (returned).
fn gateway_with(s: &Setup, args: &[&str], extra: &[(&str, &str)]) -> (Child, ChildStdin, PathBuf) {
    let log = s.path(&format!("gateway-{}.stderr", uuid_like()));
    let mut child = Command::new(BIN)
        .arg("mcp-gateway")
        .args(args)
        .envs(s.vars())
        .envs(extra.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log).expect("log"))
        .spawn()
        .expect("gateway");
    let stdin = child.stdin.take().expect("stdin");
    (child, stdin, log)
}

fn uuid_like() -> String {
    format!(
        "{:x}",
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0)
    )
}

/// Every file under `dir`, as text (lossy), with its path.
fn files_under(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(b) = std::fs::read(&p) {
                out.push((p, String::from_utf8_lossy(&b).into_owned()));
            }
        }
    }
    out
}

// Issue 33, §3: a remote server over Streamable HTTP (server-everything in its HTTP mode, with
// sessions and SSE answers) is governed as a local one: `--url` with a credential from the
// environment; a held call is approved with the CLI and then runs on the remote server; the
// credential appears in no packet, receipt, chain record or log. When the server goes away while
// a call is held, the gateway ends the session and the call is withdrawn, never left approvable.
#[test]
fn a_remote_server_over_streamable_http_is_governed_and_its_credentials_never_shown() {
    if !have(&["mcp-server-everything"]) {
        return;
    }
    let s = setup();
    let port = free_port();
    let mut server = everything_over_http(port);
    let url = format!("http://127.0.0.1:{port}/mcp");
    let secret = "Bearer s3cret-token-for-the-test";
    let (mut child, mut stdin, log) = gateway_with(
        &s,
        &[
            "--wait",
            "60",
            "--name",
            "everything",
            "--url",
            &url,
            "--header-from-env",
            "Authorization=WARRANT_TEST_AUTH",
        ],
        &[("WARRANT_TEST_AUTH", secret)],
    );
    let rx = raw_lines(&mut child);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "http", "version": "1"}}});
    let v: Value = serde_json::from_str(&exchange(&mut stdin, &rx, &[init.to_string()])[&1]).expect("json");
    assert_eq!(v["result"]["serverInfo"]["name"], json!("mcp-servers/everything"), "{v}");
    writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).expect("write");
    let listed = exchange(&mut stdin, &rx, &[json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string()]);
    assert!(listed[&2].contains("\"echo\""), "{}", listed[&2]);
    let echo = |id: i64, text: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": "echo", "arguments": {"message": text}}})
        .to_string()
    };
    writeln!(stdin, "{}", echo(3, "over http")).and_then(|()| stdin.flush()).expect("write");
    let id = s.held("everything/echo");
    assert_eq!(s.env.run(&["approve", "--yes", &id]).status.code(), Some(0));
    let deadline = Instant::now() + Duration::from_secs(30);
    let answer = loop {
        let line = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())).expect("the answer");
        let v: Value = serde_json::from_str(&line).expect("json");
        if v["id"] == json!(3) {
            break v;
        }
    };
    assert_eq!(answer["result"]["isError"], Value::Null, "{answer}");
    assert!(result_text(&answer).contains("over http"), "{answer}");
    assert!(s.receipts().iter().any(|r| r["packet_id"] == json!(id)), "{:?}", s.receipts());

    // The server goes away while a call is held: the call is withdrawn and the gateway ends.
    writeln!(stdin, "{}", echo(4, "never")).and_then(|()| stdin.flush()).expect("write");
    let held = s.held("everything/echo");
    let group = rustix::process::Pid::from_child(&server);
    rustix::process::kill_process_group(group, rustix::process::Signal::KILL).expect("kill the server");
    let _ = server.wait();
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().expect("wait").is_none() {
        assert!(Instant::now() < deadline, "the gateway did not notice its server was gone");
        std::thread::sleep(Duration::from_millis(100));
    }
    let answer = loop {
        let v: Value =
            serde_json::from_str(&rx.recv_timeout(Duration::from_secs(5)).expect("an answer")).expect("json");
        if v["id"] == json!(4) {
            break v;
        }
    };
    let message = answer["error"]["message"].as_str().unwrap_or_else(|| panic!("an error: {answer}"));
    // The agent is told the server's scheme, host and port, not its path (it may carry a secret).
    let shown = format!("http://127.0.0.1:{port}");
    assert!(message.contains(&shown) && !message.contains(&url) && message.contains("withdrawn"), "{message}");
    let o = s.env.run(&["approve", "--yes", &held]);
    assert_ne!(o.status.code(), Some(0), "a call whose server is gone was approved: {}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("withdrawn"), "{}", text(&o));

    let mut seen = files_under(s.env.dir.path());
    seen.push((log.clone(), std::fs::read_to_string(&log).unwrap_or_default()));
    for (path, content) in seen {
        assert!(!content.contains("s3cret"), "the credential is in {}", path.display());
    }
}

// Issue 33, §3: an upstream that refuses (401), fails (503) or never answers gives the client's
// `initialize` a clear error naming the server (its URL without credentials) within the timeout;
// the gateway never hangs. (The upstream is a small HTTP server that answers every POST with the
// status its path names, and never answers on `/hang`.)
#[test]
fn an_upstream_that_refuses_fails_or_hangs_is_a_clear_error_naming_it() {
    if !have(&["python3"]) {
        return;
    }
    let s = setup();
    let port = free_port();
    let script = r#"
import http.server, sys, time
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        if self.path == "/hang":
            time.sleep(120)
            return
        self.send_response(int(self.path.strip("/")))
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"#;
    let mut upstream = Command::new("python3")
        .args(["-c", script, &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("python3");
    accepting(port);
    for (path, expect) in
        [("401", "refused the request: 401"), ("503", "failed: 503"), ("hang", "did not answer initialize within 2s")]
    {
        let url = format!("http://user:pw@127.0.0.1:{port}/{path}");
        let started = Instant::now();
        let (mut child, mut stdin, _log) = gateway_with(
            &s,
            &["--handshake-timeout", "2", "--url", &url, "--header", "Authorization: Bearer hunter2"],
            &[],
        );
        let rx = raw_lines(&mut child);
        let v: Value = serde_json::from_str(&exchange(&mut stdin, &rx, &[initialize().to_string()])[&1]).expect("json");
        let message = v["error"]["message"].as_str().unwrap_or_else(|| panic!("an error: {v}"));
        assert!(message.contains(expect), "{path}: {message}");
        assert!(message.contains(&format!("http://127.0.0.1:{port}")), "names the server: {message}");
        assert!(!message.contains(&format!("{port}/{path}")), "never the URL's path: {message}");
        assert!(!message.contains("hunter2") && !message.contains("pw@"), "{message}");
        assert!(started.elapsed() < Duration::from_secs(15), "{path}: took {:?}", started.elapsed());
        drop(stdin);
        let _ = child.wait();
    }
    let _ = upstream.kill();
    let _ = upstream.wait();
    // A credential the gateway was told to send but cannot read stops it before anything is sent.
    let o =
        s.env.run(&["mcp-gateway", "--url", "http://127.0.0.1:1/mcp", "--bearer-from-env", "WARRANT_TEST_UNSET_TOKEN"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("WARRANT_TEST_UNSET_TOKEN is not set"), "{}", text(&o));
}

/// The HTTP status of one raw request to `127.0.0.1:port` (a test probing the gateway's guards).
fn http_status(port: u16, request: &str) -> u16 {
    use std::io::Read as _;
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.write_all(request.as_bytes()).expect("send");
    s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    let mut buf = [0u8; 64];
    let n = s.read(&mut buf).expect("read");
    let line = String::from_utf8_lossy(&buf[..n]).into_owned();
    line.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or_else(|| panic!("no status: {line}"))
}

// Issue 33, §3: the gateway serves MCP clients over Streamable HTTP (`--listen
// http://127.0.0.1:PORT/mcp`): the Python SDK's and the TypeScript SDK's HTTP clients each get a
// session of their own (their own connection id, so their own packets), a held call waits for the
// principal on the client's stream and answers once approved; a request without the bearer token
// is 401, one from a foreign Origin 403 (DNS rebinding), and a non-loopback address without a
// token is refused at start.
#[test]
fn clients_over_streamable_http_get_their_own_sessions_behind_a_token_and_an_origin_check() {
    if !have(&["mcp-server-everything"]) {
        return;
    }
    let Some(node_path) = typescript_sdk() else { return };
    let s = setup();
    let token = "t0ken-for-the-http-test-0123456789";
    let token_file = s.path("token");
    std::fs::write(&token_file, format!("{token}\n")).expect("token");
    let o = s.env.run(&["mcp-gateway", "--listen", "http://0.0.0.0:1/mcp", "--", "mcp-server-everything"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--token-file"), "{}", text(&o));
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let token_path = token_file.display().to_string();
    let mut gateway = Command::new(BIN)
        .args(["mcp-gateway", "--wait", "60", "--listen", &url, "--token-file", &token_path, "--"])
        .arg("mcp-server-everything")
        .envs(s.vars())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("gateway");
    accepting(port);
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}"#;
    let post = |headers: &str| {
        format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{init}",
            init.len()
        )
    };
    assert_eq!(http_status(port, &post("")), 401, "no token");
    assert_eq!(http_status(port, &post("Authorization: Bearer wrong-token-0123456789\r\n")), 401, "a wrong token");
    let bearer = format!("Authorization: Bearer {token}\r\n");
    assert_eq!(http_status(port, &post(&format!("{bearer}Origin: http://evil.example\r\n"))), 403, "a foreign Origin");

    // The two SDKs' clients, each calling echo, held until the principal approves.
    let python = Command::new("python3")
        .arg(CLIENT)
        .arg(json!([{"call": "echo", "args": {"message": "from python"}, "progress": true}]).to_string())
        .args(["--", &url])
        .env("MCP_TEST_BEARER", token)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3");
    let node = Command::new("node")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/mcp_client_ts.cjs"))
        .arg("echo")
        .arg(json!({"message": "from typescript"}).to_string())
        .args(["--", &url])
        .env("NODE_PATH", node_path)
        .env("MCP_TEST_BEARER", token)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("node");
    let deadline = Instant::now() + Duration::from_secs(30);
    let held = loop {
        let waiting: Vec<Value> =
            s.packets().into_iter().filter(|p| is_waiting(p) && summary_is(p, "everything/echo")).collect();
        if waiting.len() == 2 {
            break waiting;
        }
        assert!(Instant::now() < deadline, "two held calls: {waiting:?}");
        std::thread::sleep(Duration::from_millis(100));
    };
    let connection = |p: &Value| p["packet_id"].as_str().and_then(|id| id.rsplit_once('-')).map(|(c, _)| c.to_owned());
    assert_ne!(connection(&held[0]), connection(&held[1]), "each client is its own session: {held:?}");
    for p in &held {
        let id = p["packet_id"].as_str().expect("id");
        assert_eq!(s.env.run(&["approve", "--yes", id]).status.code(), Some(0));
    }
    let o = python.wait_with_output().expect("python");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("from python") && out.contains("\"result\""), "{out}\n{}", String::from_utf8_lossy(&o.stderr));
    let o = node.wait_with_output().expect("node");
    let line: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
    assert!(line["result"].to_string().contains("from typescript"), "{line}");
    rustix::process::kill_process(rustix::process::Pid::from_child(&gateway), rustix::process::Signal::TERM)
        .expect("TERM");
    let status = gateway.wait().expect("wait");
    assert_eq!(status.code(), Some(0), "SIGTERM ends it cleanly");
}

// Found by review: with `--listen`, an agent that disconnects while its call is held left the
// call's task running (a detached task held the packet): the principal could still approve it,
// and the session never ended. Now the session's end withdraws it at once, and the listening
// gateway goes on serving.
#[test]
fn an_agent_that_disconnects_from_a_listening_gateway_while_held_leaves_nothing_approvable() {
    if !have(&["mcp-server-filesystem"]) {
        return;
    }
    let s = setup();
    let root = s.root.path().to_string_lossy().into_owned();
    let socket = s.path("gw.sock");
    let sock = socket.display().to_string();
    let mut gateway = Command::new(BIN)
        .args(["mcp-gateway", "--wait", "60", "--listen", &sock, "--", "mcp-server-filesystem", &root])
        .envs(s.vars())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("gateway");
    let start = Instant::now();
    while !socket.exists() {
        assert!(start.elapsed() < Duration::from_secs(20), "the gateway never listened");
        std::thread::sleep(Duration::from_millis(50));
    }
    let target = s.path("never.txt");
    let steps = json!([call("write_file", json!({"path": target, "content": "never\n"}))]);
    let mut client = Command::new("python3")
        .arg(CLIENT)
        .arg(steps.to_string())
        .args(["--", BIN, "mcp-gateway", "--connect", &sock])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("python3");
    let id = s.held("filesystem/write_file");
    let _ = client.kill();
    let _ = client.wait();
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let p = s.packets().into_iter().find(|p| p["packet_id"] == json!(id)).expect("the packet stays listed");
        if p["withdrawn"].is_string() {
            break;
        }
        assert!(Instant::now() < deadline, "the disconnected agent's call is still approvable: {p}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let o = s.env.run(&["approve", "--yes", &id]);
    assert_ne!(o.status.code(), Some(0), "{}", text(&o));
    assert!(gateway.try_wait().expect("wait").is_none(), "the listening gateway goes on");
    rustix::process::kill_process(rustix::process::Pid::from_child(&gateway), rustix::process::Signal::TERM)
        .expect("TERM");
    let _ = gateway.wait();
    assert!(!target.exists(), "nothing ran");
}

/// A TCP proxy to `127.0.0.1:upstream` that cuts once, mid-answer, the event stream of the first
/// request whose bytes contain `marker`: it passes the answer's headers and its first event (the
/// server's priming event, an id with no data) and then closes the connection. Returns its port,
/// whether it cut, and whether a later request carried a `Last-Event-ID` header.
fn cutting_proxy(upstream: u16, marker: &'static str) -> (u16, Arc<AtomicBool>, Arc<AtomicBool>) {
    use std::io::Read as _;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let (cut, resumed) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
    let (cut2, resumed2) = (Arc::clone(&cut), Arc::clone(&resumed));
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let Ok(server) = std::net::TcpStream::connect(("127.0.0.1", upstream)) else { continue };
            let armed = Arc::new(AtomicBool::new(false));
            let (mut c_in, mut s_out) = (client.try_clone().expect("clone"), server.try_clone().expect("clone"));
            let (armed_up, resumed) = (Arc::clone(&armed), Arc::clone(&resumed2));
            // The requests, as sent; the request that names `marker` arms this connection's cut.
            std::thread::spawn(move || {
                let mut buf = [0u8; 16 * 1024];
                while let Ok(n @ 1..) = c_in.read(&mut buf) {
                    let text = String::from_utf8_lossy(&buf[..n]).to_ascii_lowercase();
                    if text.contains(marker) {
                        armed_up.store(true, Ordering::SeqCst);
                    }
                    if text.contains("\r\nlast-event-id:") {
                        resumed.store(true, Ordering::SeqCst);
                    }
                    if s_out.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
                let _ = s_out.shutdown(std::net::Shutdown::Write);
            });
            let cut = Arc::clone(&cut2);
            let (mut s_in, mut c_out) = (server, client);
            // The answers: passed as they come but for the armed one, held until its first event.
            std::thread::spawn(move || {
                let mut buf = [0u8; 16 * 1024];
                let mut held = Vec::new();
                while let Ok(n @ 1..) = s_in.read(&mut buf) {
                    if armed.load(Ordering::SeqCst) && !cut.load(Ordering::SeqCst) {
                        held.extend_from_slice(&buf[..n]);
                        let text = String::from_utf8_lossy(&held).into_owned();
                        if let Some(at) = text.find("data: \n\n") {
                            let _ = c_out.write_all(&held[..at + "data: \n\n".len()]);
                            cut.store(true, Ordering::SeqCst);
                            let _ = c_out.shutdown(std::net::Shutdown::Both);
                            let _ = s_in.shutdown(std::net::Shutdown::Both);
                            return;
                        }
                        continue;
                    }
                    if !held.is_empty() && c_out.write_all(&std::mem::take(&mut held)).is_err() {
                        break;
                    }
                    if c_out.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
                let _ = c_out.shutdown(std::net::Shutdown::Write);
            });
        }
    });
    (port, cut, resumed)
}

// Issue 33, §3 (resumption): the answer to a call comes on an event stream that breaks after its
// first event; the gateway resumes it with a GET carrying `Last-Event-ID` and the client gets the
// server's answer, not an error. The server is the TypeScript SDK's own Streamable HTTP example
// server (`simpleStreamableHttp`, resumable: an event store), reached through a proxy that cuts
// the stream once.
#[test]
fn an_answer_stream_that_breaks_is_resumed_where_it_broke() {
    let Some(root) = typescript_sdk() else { return };
    let s = setup();
    let port = free_port();
    let mut cmd = Command::new("node");
    cmd.arg(Path::new(&root).join("@modelcontextprotocol/sdk/dist/esm/examples/server/simpleStreamableHttp.js"))
        .env("MCP_PORT", port.to_string());
    let mut server = http_server(cmd, port);
    let (proxy, cut, resumed) = cutting_proxy(port, "start-notification-stream");
    let url = format!("http://127.0.0.1:{proxy}/mcp");
    let (mut child, mut stdin, log) = gateway_with(&s, &["--wait", "60", "--name", "example", "--url", &url], &[]);
    let rx = raw_lines(&mut child);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "http", "version": "1"}}});
    let v: Value = serde_json::from_str(&exchange(&mut stdin, &rx, &[init.to_string()])[&1]).expect("json");
    assert_eq!(v["result"]["serverInfo"]["name"], json!("simple-streamable-http-server"), "{v}");
    writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).expect("write");
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "start-notification-stream", "arguments": {"interval": 100, "count": 5}}});
    writeln!(stdin, "{call}").and_then(|()| stdin.flush()).expect("write");
    let id = s.held("example/start-notification-stream");
    assert_eq!(s.env.run(&["approve", "--yes", &id]).status.code(), Some(0));
    let deadline = Instant::now() + Duration::from_secs(30);
    let answer = loop {
        let line = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())).unwrap_or_else(|_| {
            panic!("no answer; the gateway said: {}", std::fs::read_to_string(&log).unwrap_or_default())
        });
        let v: Value = serde_json::from_str(&line).expect("json");
        if v["id"] == json!(3) {
            break v;
        }
    };
    assert!(cut.load(Ordering::SeqCst), "the proxy never cut the answer's stream");
    assert!(resumed.load(Ordering::SeqCst), "no request carried Last-Event-ID");
    assert!(answer.get("error").is_none(), "{answer}");
    assert!(result_text(&answer).contains("Started sending periodic notifications every 100ms"), "{answer}");
    drop(stdin);
    let _ = child.wait();
    let group = rustix::process::Pid::from_child(&server);
    let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
    let _ = server.wait();
}
