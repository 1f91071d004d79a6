//! The real agent hosts — Claude Code and Codex, pinned, from npm — with the hooks `warrant setup`
//! writes, each driven non-interactively against a scripted model service on 127.0.0.1
//! (`tests/hosts/model_server.py`: the Anthropic Messages API and the OpenAI Responses API,
//! streamed). The hosts' own binaries are the only proof that their hook contracts hold, so each
//! guarantee of `docs/integrations.md` is checked on what the host did: what ran, what the model
//! was sent back, what the spool recorded.
//!
//! Claude Code runs in `bypassPermissions`, the mode where a hook is all that stands between the
//! model and the tool; `codex exec` likewise with no sandbox and no approvals
//! (`--dangerously-bypass-approvals-and-sandbox`), and `--dangerously-bypass-hook-trust` (the
//! hooks' trust is the principal's step in Codex's `/hooks`, which needs a terminal).
//!
//! In CI a missing or differently versioned host fails the test (`.ci/run` installs the pinned
//! versions); elsewhere the test is skipped with the reason.

use crate::cli_env;
use cli_env::{BIN, Env, text};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The host versions these tests pin (and `.ci/run` installs).
const CLAUDE_CODE_VERSION: &str = "2.1.197";
const CODEX_VERSION: &str = "0.171.0";

/// What the read returns: the model must see it when the read runs, and never when it is blocked.
const NOTES: &str = "notes of the project 7f3a";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Host {
    ClaudeCode,
    Codex,
}

impl Host {
    fn name(self) -> &'static str {
        match self {
            Host::ClaudeCode => "claude-code",
            Host::Codex => "codex",
        }
    }
    fn program(self) -> &'static str {
        match self {
            Host::ClaudeCode => "claude",
            Host::Codex => "codex",
        }
    }
    fn version(self) -> &'static str {
        match self {
            Host::ClaudeCode => CLAUDE_CODE_VERSION,
            Host::Codex => CODEX_VERSION,
        }
    }
    /// Whether the pinned version of this host is installed; under `CI=true`, its absence panics.
    fn here(self) -> bool {
        let found = Command::new(self.program())
            .arg("--version")
            .stdin(Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
        if found.as_deref().is_some_and(|v| v.split_whitespace().any(|w| w == self.version())) {
            return true;
        }
        let why = format!(
            "{} {} is not installed (found {:?}): `.ci/run` installs it from npm",
            self.program(),
            self.version(),
            found.as_deref().map(str::trim)
        );
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{why}");
        eprintln!("skipped: {why}");
        false
    }
    /// The model's call that reads the project's notes.
    fn read(self, project: &Path) -> Value {
        match self {
            Host::ClaudeCode => json!({"name": "Read", "input": {"file_path": project.join("notes.txt")}}),
            Host::Codex => json!({"name": "exec_command", "input": {"cmd": "cat notes.txt"}}),
        }
    }
    /// The model's call that runs a command that fails (`ls` of a missing file: safe, runs at once).
    fn failing_command(self) -> Value {
        match self {
            Host::ClaudeCode => {
                json!({"name": "Bash", "input": {"command": "ls /nonexistent-warrant", "description": "list"}})
            }
            Host::Codex => json!({"name": "exec_command", "input": {"cmd": "ls /nonexistent-warrant"}}),
        }
    }
    /// The model's call that writes `new.txt` in the project (a mutating tool: the principal decides).
    fn write(self, project: &Path) -> Value {
        self.write_text(project, "written")
    }
    /// The model's call that writes `new.txt` holding the line `text`.
    fn write_text(self, project: &Path, text: &str) -> Value {
        match self {
            Host::ClaudeCode => {
                json!({"name": "Write", "input": {"file_path": project.join("new.txt"), "content": format!("{text}\n")}})
            }
            Host::Codex => json!({"name": "apply_patch", "custom": true,
                "input": format!("*** Begin Patch\n*** Add File: new.txt\n+{text}\n*** End Patch\n")}),
        }
    }
}

/// `tests/hosts/model_server.py`, playing `calls`; killed on drop.
struct ModelServer {
    child: Child,
    log: PathBuf,
    port: u16,
}

impl ModelServer {
    fn start(dir: &Path, calls: &[Value]) -> Self {
        let script = dir.join("script.json");
        std::fs::write(&script, serde_json::to_vec(calls).expect("script")).expect("write the script");
        let log = dir.join("requests.jsonl");
        let port_file = dir.join("port");
        let server = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hosts/model_server.py");
        let child = Command::new("python3")
            .arg(server)
            .args([&script, &log, &port_file])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("python3 runs the model server");
        let t = Instant::now();
        let port = loop {
            if let Some(p) = std::fs::read_to_string(&port_file).ok().and_then(|s| s.trim().parse().ok()) {
                break p;
            }
            assert!(t.elapsed() < Duration::from_secs(20), "the model server never said its port");
            std::thread::sleep(Duration::from_millis(20));
        };
        Self { child, log, port }
    }
    /// Every request the host made: `{"path", "body"}`.
    fn requests(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        text.lines().map(|l| serde_json::from_str(l).expect("a logged request")).collect()
    }
    /// The tool results the host sent back to the model, each as text, in order (the last
    /// request carries them all).
    fn tool_results(&self) -> Vec<String> {
        let flatten = |c: &Value| match c {
            Value::String(s) => s.clone(),
            Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join("\n"),
            other => other.to_string(),
        };
        let mut best = Vec::new();
        for r in self.requests() {
            let body = &r["body"];
            let mut results = Vec::new();
            for m in body["messages"].as_array().into_iter().flatten() {
                for b in m["content"].as_array().into_iter().flatten() {
                    if b["type"] == "tool_result" {
                        results.push(flatten(&b["content"]));
                    }
                }
            }
            for i in body["input"].as_array().into_iter().flatten() {
                if matches!(i["type"].as_str(), Some("function_call_output" | "custom_tool_call_output")) {
                    results.push(flatten(&i["output"]));
                }
            }
            if results.len() > best.len() {
                best = results;
            }
        }
        best
    }
    /// The names of the tools the host offered its model.
    fn offered_tools(&self) -> BTreeSet<String> {
        let mut names = BTreeSet::new();
        for r in self.requests() {
            for t in r["body"]["tools"].as_array().into_iter().flatten() {
                // The Responses API's hosted tools have a type and no name.
                let name = t["name"].as_str().or_else(|| t["type"].as_str()).expect("a tool has a name or a type");
                names.insert(name.to_owned());
            }
        }
        names
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A principal's spool and key, a project with its notes, a home for the host, the model
/// service playing `calls`, and warrant's hooks set up for the host.
struct Scene {
    host: Host,
    e: Env,
    home: PathBuf,
    project: PathBuf,
    server: ModelServer,
    /// Claude Code's `--permission-mode` (default `bypassPermissions`).
    mode: &'static str,
}

impl Scene {
    /// The scene with the hooks `warrant setup` writes, waiting `wait` seconds for the principal.
    fn new(host: Host, calls: impl FnOnce(&Path) -> Vec<Value>, wait: &str) -> Self {
        Self::with_binary(host, calls, wait, Path::new(BIN))
    }

    /// The scene with hooks written by `warrant setup` run from `binary` (the path the hooks name).
    fn with_binary(host: Host, calls: impl FnOnce(&Path) -> Vec<Value>, wait: &str, binary: &Path) -> Self {
        let e = Env::new();
        std::fs::create_dir_all(e.spool()).expect("spool");
        let home = e.dir.path().join("home");
        let project = e.dir.path().join("project");
        std::fs::create_dir_all(&home).expect("home");
        std::fs::create_dir_all(&project).expect("project");
        std::fs::write(project.join("notes.txt"), format!("{NOTES}\n")).expect("notes");
        let server = ModelServer::start(e.dir.path(), &calls(&project));
        let spool = e.spool();
        let mut args = vec!["setup", host.name(), "--spool", spool.to_str().expect("utf-8"), "--wait", wait];
        match host {
            Host::ClaudeCode => args.extend(["--dir", project.to_str().expect("utf-8")]),
            Host::Codex => args.push("--user"),
        }
        let setup = e.cmd(&args);
        let o = Command::new(binary)
            .args(&args)
            .envs(setup.get_envs().filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned()))))
            .env("HOME", &home)
            .stdin(Stdio::null())
            .output()
            .expect("warrant setup");
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        if host == Host::Codex {
            let config = format!(
                "model = \"gpt-5.5\"\nmodel_provider = \"scripted\"\n\n[model_providers.scripted]\n\
                 name = \"scripted\"\nbase_url = \"http://127.0.0.1:{}/v1\"\nwire_api = \"responses\"\n\
                 env_key = \"OPENAI_API_KEY\"\n",
                server.port
            );
            std::fs::write(home.join(".codex/config.toml"), config).expect("codex config");
        }
        Self { host, e, home, project, server, mode: "bypassPermissions" }
    }

    /// The host's command, non-interactive, in the project, with this scene's environment.
    fn command(&self) -> Command {
        let mut c = Command::new(self.host.program());
        match self.host {
            Host::ClaudeCode => {
                c.args([
                    "-p",
                    "go",
                    "--output-format",
                    "stream-json",
                    "--verbose",
                    "--permission-mode",
                    "bypassPermissions",
                ])
                .env("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{}", self.server.port))
                .env("ANTHROPIC_API_KEY", "scripted")
                .env("DISABLE_TELEMETRY", "1")
                .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
                // As root, bypassPermissions is refused unless the host is told it is sandboxed.
                .env("IS_SANDBOX", "1");
            }
            Host::Codex => {
                c.args(["exec", "--dangerously-bypass-approvals-and-sandbox", "--dangerously-bypass-hook-trust"])
                    .args(["--skip-git-repo-check", "--json", "go"])
                    .env("CODEX_HOME", self.home.join(".codex"))
                    .env("OPENAI_API_KEY", "scripted");
            }
        }
        // The hooks the hosts run inherit this: the principal's configuration (the pinned key).
        let warrant = self.e.cmd(&[]);
        c.envs(warrant.get_envs().filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned()))))
            .env("HOME", &self.home)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .current_dir(&self.project)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }

    fn spawn(&self) -> Child {
        self.command().spawn().unwrap_or_else(|e| panic!("{} starts: {e}", self.host.program()))
    }

    /// Runs the host to its end (at most 3 minutes).
    fn run(&self) -> Output {
        finish(self.spawn())
    }

    /// The id of the first packet the hooks published, waiting for it at most 60 s.
    fn first_packet(&self) -> String {
        let dir = self.e.spool().join("packets");
        let t = Instant::now();
        loop {
            let mut ids: Vec<String> = std::fs::read_dir(&dir)
                .into_iter()
                .flatten()
                .filter_map(|d| d.ok()?.file_name().to_str()?.strip_suffix(".json").map(str::to_owned))
                .collect();
            ids.sort();
            if let Some(id) = ids.into_iter().next() {
                return id;
            }
            assert!(t.elapsed() < Duration::from_secs(60), "no packet was published");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// How many packets the hooks published.
    fn packet_count(&self) -> usize {
        std::fs::read_dir(self.e.spool().join("packets")).map_or(0, Iterator::count)
    }

    /// The receipts the hooks wrote, in no order.
    fn receipts(&self) -> Vec<Value> {
        std::fs::read_dir(self.e.spool().join("receipts"))
            .into_iter()
            .flatten()
            .map(|d| serde_json::from_slice(&std::fs::read(d.expect("entry").path()).expect("read")).expect("JSON"))
            .collect()
    }

    /// What the model was sent back, all tool results in one text.
    fn model_saw(&self) -> String {
        self.server.tool_results().join("\n---\n")
    }
}

/// Waits for `child` (at most 3 minutes; killed and failed beyond).
fn finish(mut child: Child) -> Output {
    let t = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if t.elapsed() > Duration::from_secs(180) {
            let _ = child.kill();
            let o = child.wait_with_output().expect("output");
            panic!("the host did not finish in 3 minutes: {}", text(&o));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().expect("output")
}

/// One test per host for each scenario.
macro_rules! on_both_hosts {
    ($scenario:ident) => {
        mod $scenario {
            #[test]
            fn claude_code() {
                if super::Host::ClaudeCode.here() {
                    super::$scenario(super::Host::ClaudeCode);
                }
            }
            #[test]
            fn codex() {
                if super::Host::Codex.here() {
                    super::$scenario(super::Host::Codex);
                }
            }
        }
    };
}

on_both_hosts!(a_read_runs_a_failed_command_is_on_record_and_every_offered_tool_is_governed);
fn a_read_runs_a_failed_command_is_on_record_and_every_offered_tool_is_governed(host: Host) {
    let s = Scene::new(host, |p| vec![host.read(p), host.failing_command()], "30");
    let o = s.run();
    assert!(o.status.success(), "{}", text(&o));
    let results = s.server.tool_results();
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(results[0].contains(NOTES), "the read ran and the model got the notes: {results:?}");
    assert!(results[1].contains("nonexistent-warrant"), "the command ran: {results:?}");
    assert_eq!(s.packet_count(), 0, "nothing waited for the principal");

    // Both calls ran and both are on record; the failure as a failure.
    let receipts = s.receipts();
    assert_eq!(receipts.len(), 2, "{receipts:#?}");
    let ran = |r: &&Value| r["note"] == "the tool ran";
    let read = receipts.iter().find(ran).unwrap_or_else(|| panic!("the read's receipt: {receipts:#?}"));
    assert_eq!(read["tool_call"]["host"], host.name());
    assert_eq!(read["action_class"], "read.context");
    let failed = receipts.iter().find(|r| !ran(r)).expect("the failure's receipt");
    match host {
        Host::ClaudeCode => assert_eq!(failed["note"], "the tool ran and failed (PostToolUseFailure)", "{failed:#}"),
        Host::Codex => {
            assert_eq!(failed["note"], "the tool reported an error", "{failed:#}");
            assert_eq!(failed["tool_call"]["exit_code"], 2, "the status from Codex's transcript: {failed:#}");
        }
    }

    // Every tool the host offered its model is governed, or named as one the host sends no hook
    // event for: a new version that adds a tool fails here until the table says what it is.
    let offers = &warrant::protocol::graduation::policy::host_offers()[host.name()];
    assert_eq!(offers.version, host.version(), "assets/host-tools.toml describes the pinned version");
    let offered = s.server.offered_tools();
    assert!(offered.len() >= 8, "{offered:?}");
    let policies = warrant::protocol::graduation::policy::PolicySet::builtin();
    for tool in &offered {
        match (offers.hooked.get(tool), offers.unhooked.get(tool)) {
            (Some(hooked), _) => assert!(policies.tool(hooked).is_some(), "{tool} ({hooked}) has no [tools] entry"),
            (None, Some(_)) => {}
            (None, None) => panic!(
                "{} {} offers `{tool}`, which assets/host-tools.toml does not govern or explain",
                host.program(),
                host.version()
            ),
        }
    }
    let listed: BTreeSet<String> = offers.hooked.keys().chain(offers.unhooked.keys()).cloned().collect();
    assert_eq!(listed, offered, "the table lists exactly what {} offers", host.version());
}

on_both_hosts!(a_write_waits_for_the_principal_and_runs_once_approved);
fn a_write_waits_for_the_principal_and_runs_once_approved(host: Host) {
    let s = Scene::new(host, |p| vec![host.write(p)], "90");
    let child = s.spawn();
    let id = s.first_packet();
    std::thread::sleep(Duration::from_millis(300));
    assert!(!s.project.join("new.txt").exists(), "nothing was written before the principal decided");
    let o = s.e.run(&["approve", "--yes", &id]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = finish(child);
    assert!(o.status.success(), "{}", text(&o));
    let written = std::fs::read_to_string(s.project.join("new.txt"));
    assert_eq!(written.ok().as_deref(), Some("written\n"), "the write ran: {}\n{}", s.model_saw(), text(&o));
    assert!(s.receipts().iter().any(|r| r["note"] == "the tool ran"), "{:#?}", s.receipts());
}

// Issue 35: the principal corrects a held write (the text written) and approves the correction.
// Claude Code runs the corrected input its hook answered (`updatedInput`). Codex's hooks cannot
// change a call's input: the call is refused with the corrected input in the reason, and the
// model's next call with exactly that input (scripted here) runs once, with no new packet.
on_both_hosts!(a_write_approved_as_corrected_writes_what_the_principal_corrected);
fn a_write_approved_as_corrected_writes_what_the_principal_corrected(host: Host) {
    let s = Scene::new(
        host,
        |p| match host {
            Host::ClaudeCode => vec![host.write(p)],
            Host::Codex => vec![host.write(p), host.write_text(p, "corrected")],
        },
        "90",
    );
    let child = s.spawn();
    let id = s.first_packet();
    let packet: Value =
        serde_json::from_slice(&std::fs::read(s.e.spool().join("packets").join(format!("{id}.json"))).expect("packet"))
            .expect("JSON");
    fn correct(v: &mut Value) {
        match v {
            Value::String(t) => *t = t.replace("written", "corrected"),
            Value::Array(a) => a.iter_mut().for_each(correct),
            Value::Object(m) => m.values_mut().for_each(correct),
            _ => {}
        }
    }
    let mut action = packet["proposed_action"].clone();
    correct(&mut action["input"]);
    let file = s.e.dir.path().join("corrected.json");
    std::fs::write(&file, action.to_string()).expect("write the correction");
    let o = s.e.run(&["approve", "--yes", &id, "--correct", file.to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = finish(child);
    assert!(o.status.success(), "{}", text(&o));
    let written = std::fs::read_to_string(s.project.join("new.txt"));
    assert_eq!(written.ok().as_deref(), Some("corrected\n"), "the correction ran: {}\n{}", s.model_saw(), text(&o));
    if host == Host::Codex {
        let saw = s.model_saw();
        assert!(saw.contains("make the call again with exactly this input"), "the model was told: {saw}");
    }
    assert_eq!(s.packet_count(), 1, "the corrected call made no packet of its own");
}

on_both_hosts!(a_refusal_stops_the_call_and_reaches_the_model_with_its_reason);
fn a_refusal_stops_the_call_and_reaches_the_model_with_its_reason(host: Host) {
    let s = Scene::new(host, |p| vec![host.write(p)], "90");
    let child = s.spawn();
    let id = s.first_packet();
    let o = s.e.run(&["refuse", "--yes", &id, "--reason", "not before the release"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = finish(child);
    assert!(o.status.success(), "{}", text(&o));
    assert!(!s.project.join("new.txt").exists(), "the refused write did not run");
    let saw = s.model_saw();
    assert!(saw.contains("not before the release"), "the model got the reason: {saw}");
    assert!(s.receipts().is_empty(), "nothing ran: {:#?}", s.receipts());
}

on_both_hosts!(a_timeout_is_final);
fn a_timeout_is_final(host: Host) {
    let s = Scene::new(host, |p| vec![host.write(p)], "2");
    let o = s.run();
    assert!(o.status.success(), "{}", text(&o));
    let saw = s.model_saw();
    assert!(saw.contains("timeout"), "the model was told: {saw}");
    let id = s.first_packet();
    let late = s.e.run(&["approve", "--yes", &id]);
    assert_ne!(late.status.code(), Some(0), "an approval after the timeout is refused: {}", text(&late));
    assert!(!s.project.join("new.txt").exists(), "the write never ran");
}

on_both_hosts!(a_missing_binary_a_missing_spool_and_a_broken_chain_block_every_call);
fn a_missing_binary_a_missing_spool_and_a_broken_chain_block_every_call(host: Host) {
    let blocked = |s: &Scene, why: &str| {
        let o = s.run();
        let saw = s.model_saw();
        assert!(!saw.contains(NOTES), "{why}: the read ran on {}: {saw}\n{}", host.name(), text(&o));
        assert_eq!(s.server.tool_results().len(), 1, "{why}: the host answered the call: {saw}");
        assert!(s.receipts().is_empty(), "{why}: {:#?}", s.receipts());
    };

    // The hooks name a binary that is gone.
    let bin = tempfile::tempdir().expect("tempdir");
    let moved = bin.path().join("warrant");
    if std::fs::hard_link(BIN, &moved).is_err() {
        std::fs::copy(BIN, &moved).expect("copy the binary");
    }
    let s = Scene::with_binary(host, |p| vec![host.read(p)], "30", &moved);
    std::fs::remove_file(&moved).expect("remove the binary");
    blocked(&s, "missing binary");

    // The spool is gone.
    let s = Scene::new(host, |p| vec![host.read(p)], "30");
    std::fs::remove_dir_all(s.e.spool()).expect("remove the spool");
    blocked(&s, "missing spool");

    // The chain does not verify: a signed record was changed.
    let s = Scene::new(host, |p| vec![host.read(p)], "30");
    let o = s.e.run(&["trust", "set", "some-notebook", "trusted", "--reason", "audited"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let chain = s.e.spool().join("chain.jsonl");
    let before = std::fs::read_to_string(&chain).expect("chain");
    std::fs::write(&chain, before.replacen("audited", "AUDITED", 1)).expect("tamper");
    assert_ne!(std::fs::read_to_string(&chain).expect("chain"), before);
    blocked(&s, "broken chain");
}

/// Claude Code with an `ask` rule of the user's own for `Write`, run non-interactively: the
/// principal's approval at PreToolUse does not override the user's rule (an `allow` never does),
/// and with no one to ask, Claude Code 2.1.197 denies the call itself without sending a
/// PermissionRequest. One call, one packet, and the user's rule stands. (In an interactive
/// session the host sends a PermissionRequest, which the approval answers once: tests/hooks.rs.)
#[test]
fn claude_codes_own_ask_rule_still_applies_after_the_approval_and_one_call_is_one_packet() {
    if !Host::ClaudeCode.here() {
        return;
    }
    let mut s = Scene::new(Host::ClaudeCode, |p| vec![Host::ClaudeCode.write(p)], "90");
    s.mode = "default";
    let settings = s.project.join(".claude/settings.json");
    let mut v: Value = serde_json::from_slice(&std::fs::read(&settings).expect("settings")).expect("JSON");
    v["permissions"] = json!({"ask": ["Write"]});
    std::fs::write(&settings, v.to_string()).expect("settings");
    let child = s.spawn();
    let id = s.first_packet();
    let o = s.e.run(&["approve", "--yes", &id]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = finish(child);
    assert!(o.status.success(), "{}", text(&o));
    assert!(!s.project.join("new.txt").exists(), "the user's ask rule stands: {}", s.model_saw());
    assert_eq!(s.packet_count(), 1, "one call, one packet");
    assert!(s.receipts().is_empty(), "nothing ran: {:#?}", s.receipts());
}

/// Codex's `exec_command` runs in its `workdir`: a read of a key there is a read of the key,
/// whatever the command's words say.
#[test]
fn codex_governs_a_command_in_the_workdir_it_runs_in() {
    if !Host::Codex.here() {
        return;
    }
    let key = "-----BEGIN OPENSSH PRIVATE KEY----- c2VjcmV0";
    let s = Scene::new(
        Host::Codex,
        |p| {
            let ssh = p.parent().expect("dir").join("home/.ssh");
            vec![json!({"name": "exec_command", "input": {"cmd": "cat id_ed25519", "workdir": ssh}})]
        },
        "2",
    );
    let ssh = s.home.join(".ssh");
    std::fs::create_dir_all(&ssh).expect(".ssh");
    std::fs::write(ssh.join("id_ed25519"), key).expect("key");
    let o = s.run();
    assert!(o.status.success(), "{}", text(&o));
    let saw = s.model_saw();
    assert!(!saw.contains("c2VjcmV0"), "the key reached the model: {saw}");
    assert!(saw.contains("names a protected file"), "the model is told why: {saw}");
    // The packet names the file the command reads, resolved in the directory it ran in.
    let id = s.first_packet();
    let packet: Value = serde_json::from_slice(
        &std::fs::read(s.e.spool().join("packets").join(format!("{id}.json"))).expect("the packet"),
    )
    .expect("JSON");
    let protected = packet.to_string();
    assert!(protected.contains(&ssh.join("id_ed25519").display().to_string()), "{packet:#}");
}

/// Codex's `write_stdin` sends no hook event, so what is typed into a running program is never
/// governed: a command that may start one (here `git commit` with no message, which opens an
/// editor on a terminal) waits for the principal before it starts, even in a trusted notebook
/// where a commit runs unasked.
#[test]
fn codex_holds_a_command_that_may_start_an_interactive_program() {
    if !Host::Codex.here() {
        return;
    }
    let s = Scene::new(
        Host::Codex,
        |_| vec![json!({"name": "exec_command", "input": {"cmd": "git commit --allow-empty", "tty": true}})],
        "2",
    );
    let git = |args: &[&str]| {
        let o = Command::new("git")
            .args(args)
            .current_dir(&s.project)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "a")
            .env("GIT_AUTHOR_EMAIL", "a@example.com")
            .env("GIT_COMMITTER_NAME", "a")
            .env("GIT_COMMITTER_EMAIL", "a@example.com")
            .output()
            .expect("git");
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    git(&["init", "-q", "."]);
    git(&["commit", "-q", "--allow-empty", "-m", "first"]);
    let notebook = warrant::protocol::calls::notebook_for_dir(s.project.to_str().expect("utf-8"));
    let o = s.e.run(&["trust", "set", &notebook, "trusted", "--reason", "my project"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = s.run();
    assert!(o.status.success(), "{}", text(&o));
    let saw = s.model_saw();
    assert!(saw.contains("interactive"), "held with that reason: {saw}");
    assert_eq!(git(&["rev-list", "--count", "HEAD"]).trim(), "1", "no commit was made");
}
