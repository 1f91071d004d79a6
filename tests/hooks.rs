//! `warrant hook claude-code` and `warrant hook codex` with the events as the hosts send them
//! (tests/fixtures/hooks/, written from the hosts' documented payloads): allowed, held then
//! approved, held then refused, timeout, blocked, receipts, and every fail-closed path, each
//! checking the exact stdout and exit code.

use crate::cli_env;
use cli_env::{Env, text};
use serde_json::{Value, json};
use std::io::Write;
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

fn fixture(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hooks").join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A spool directory and a pinned principal key.
fn env() -> Env {
    let e = Env::new();
    std::fs::create_dir_all(e.spool()).expect("spool");
    e
}

/// Starts `warrant hook HOST ARGS` with `input` on its stdin.
fn spawn_hook(e: &Env, host: &str, input: &[u8], args: &[&str]) -> Child {
    spawn_hook_of(e, cli_env::BIN, &[], host, input, args)
}

/// Starts `program GLOBAL hook HOST ARGS` (`warrant` or `warrant-hook`) with `input` on its stdin.
fn spawn_hook_of(e: &Env, program: &str, global: &[&str], host: &str, input: &[u8], args: &[&str]) -> Child {
    let mut all = global.to_vec();
    all.extend_from_slice(&["hook", host]);
    all.extend_from_slice(args);
    // Git's configuration is the test's, not this machine's user's (a safe git command is safe
    // only while it names no program git would run).
    let mut child = e
        .cmd_of(program, &all)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    // A hook that denies before it reads its stdin (an option it cannot use) may close it first.
    match child.stdin.take().expect("stdin").write_all(input) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => panic!("write the event: {e}"),
        _ => child,
    }
}

fn hook(e: &Env, host: &str, input: &[u8], args: &[&str]) -> Output {
    spawn_hook(e, host, input, args).wait_with_output().expect("hook")
}

fn stdout_json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|err| panic!("stdout is not JSON ({err}): {}", text(o)))
}

/// Claude Code's PreToolUse answer: exactly `hookSpecificOutput` with its three fields, exit 0.
fn pre_tool_use(o: &Output) -> (String, String) {
    assert_eq!(o.status.code(), Some(0), "{}", text(o));
    let v = stdout_json(o);
    let out = &v["hookSpecificOutput"];
    assert_eq!(v.as_object().map(|m| m.len()), Some(1), "{v}");
    assert_eq!(out.as_object().map(|m| m.len()), Some(3), "exactly the documented fields: {v}");
    assert_eq!(out["hookEventName"], json!("PreToolUse"));
    let reason = out["permissionDecisionReason"].as_str().expect("reason").to_owned();
    (out["permissionDecision"].as_str().expect("decision").to_owned(), reason)
}

/// Raises the fixtures' project (`/home/user/project`) to `trusted`, as the principal does.
fn trust_the_project(e: &Env) {
    let notebook = warrant::protocol::calls::notebook_for_dir("/home/user/project");
    let o = e.run(&["trust", "set", &notebook, "trusted", "--reason", "my project"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

/// Waits until the packet `id` is in the spool (the hook published it), at most 20 s.
fn wait_for_packet(e: &Env, id: &str) {
    let path = e.spool().join("packets").join(format!("{id}.json"));
    let t = Instant::now();
    while !path.exists() {
        assert!(t.elapsed() < Duration::from_secs(20), "{id} was never published");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Returns once the hook waiting on `id` holds its wait: its record `uses/until+<id>.use` is in
/// place (`warrant_store::spool::record_wait`), so the call is withdrawn if the hook dies.
fn wait_for_hold(e: &Env, id: &str) {
    let path = e.spool().join("uses").join(format!("until+{id}{}", warrant::store::spool::USE_SUFFIX));
    let t = Instant::now();
    while !path.exists() {
        assert!(t.elapsed() < Duration::from_secs(20), "no hook ever held {id}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Spaces the calls of one spool at least one token's refill apart (210 ms): the host's agent
/// runs in Ring 3 (5 packets a second, burst 10), whose rate limit these tests are not about.
/// Only what the limit needs is waited: a call whose spool's previous call began longer ago
/// starts at once.
fn pace(e: &Env) {
    static LAST: std::sync::Mutex<Vec<(std::path::PathBuf, Instant)>> = std::sync::Mutex::new(Vec::new());
    let mut last = LAST.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let spool = e.spool();
    if let Some(left) =
        last.iter().find(|(p, _)| *p == spool).and_then(|(_, at)| Duration::from_millis(210).checked_sub(at.elapsed()))
    {
        std::thread::sleep(left);
    }
    last.retain(|(p, _)| *p != spool);
    last.push((spool, Instant::now()));
}

#[test]
fn an_allowed_read_runs_with_no_prompt_and_no_packet_in_both_hosts_formats() {
    let e = env();
    let o = hook(&e, "claude-code", &fixture("claude-code-pre-tool-use-read.json"), &[]);
    let (decision, reason) = pre_tool_use(&o);
    assert_eq!(decision, "allow", "{reason}");
    assert!(reason.contains("`read.context`") && reason.contains("no packet"), "{reason}");
    // Codex: an allow is empty stdout and exit 0, nothing else.
    let o = hook(&e, "codex", &fixture("codex-pre-tool-use-bash-status.json"), &[]);
    assert_eq!((o.status.code(), o.stdout.as_slice()), (Some(0), &b""[..]), "{}", text(&o));
    // `safe` calls the gate allows on their own leave nothing in the spool.
    let packets = std::fs::read_dir(e.spool().join("packets")).map_or(0, |d| d.count());
    assert_eq!(packets, 0, "no packet for reads");
    // A call that needs a person is a packet with the exact input and the class the table gives.
    let o = hook(&e, "codex", &fixture("codex-pre-tool-use-bash-git-push.json"), &["--wait", "0.2"]);
    assert_eq!(pre_tool_use(&o).0, "deny", "{}", text(&o));
    let doc: Value =
        serde_json::from_slice(&std::fs::read(e.spool().join("packets/cx-call_push01.json")).expect("packet"))
            .expect("json");
    assert_eq!(doc["proposed_action"]["input"], json!({"command": "git push origin main"}));
    assert_eq!(doc["action_class"], json!("code.push"));
    assert_eq!(doc["agent"], json!("codex"));
    assert_eq!(doc["governance"]["session_id"], json!("019a-codex-session"));
}

#[test]
fn a_retried_hook_finds_its_packet_and_another_call_under_the_same_id_is_denied() {
    let e = env();
    // An edit in a trusted notebook runs on its own, with a packet (it is not `safe`).
    trust_the_project(&e);
    let input = fixture("claude-code-pre-tool-use-edit.json");
    assert_eq!(pre_tool_use(&hook(&e, "claude-code", &input, &[])).0, "allow");
    assert_eq!(pre_tool_use(&hook(&e, "claude-code", &input, &[])).0, "allow", "the retry reuses the packet");
    let packets = std::fs::read_dir(e.spool().join("packets")).expect("packets").count();
    assert_eq!(packets, 1);
    // The same tool_use_id with another input is not the same call.
    let mut other: Value = serde_json::from_slice(&input).expect("json");
    other["tool_input"]["new_string"] = json!("something else");
    let (decision, reason) = pre_tool_use(&hook(&e, "claude-code", other.to_string().as_bytes(), &[]));
    assert_eq!(decision, "deny");
    assert!(reason.contains("already exists with another call"), "{reason}");
}

#[test]
fn a_held_git_push_waits_for_the_principal_and_runs_once_approved() {
    let e = env();
    let child = spawn_hook(&e, "claude-code", &fixture("claude-code-pre-tool-use-bash-git-push.json"), &[]);
    wait_for_packet(&e, "cc-toolu_01PushMain");
    let listed = e.run(&["list", "--json"]);
    let v: Value = serde_json::from_slice(&listed.stdout).expect("list");
    assert_eq!(v["packets"][0]["state"], json!("review_required"), "{v}");
    assert_eq!(v["packets"][0]["action_class"], json!("code.push"), "{v}");
    let o = e.run(&["approve", "--yes", "cc-toolu_01PushMain", "--reason", "release day"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = child.wait_with_output().expect("hook");
    let (decision, reason) = pre_tool_use(&o);
    assert_eq!(decision, "allow", "{reason}");
    assert!(reason.contains("approved by alice: release day"), "{reason}");
}

#[test]
fn a_held_call_refused_by_the_principal_is_denied_with_the_reason_in_both_hosts() {
    let e = env();
    let child = spawn_hook(&e, "codex", &fixture("codex-pre-tool-use-bash-git-push.json"), &[]);
    wait_for_packet(&e, "cx-call_push01");
    let o = e.run(&["refuse", "--yes", "cx-call_push01", "--reason", "not on a Friday"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = child.wait_with_output().expect("hook");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // Codex: only the documented fields, or Codex treats the hook as failed and runs the call.
    let v = stdout_json(&o);
    let reason = v["hookSpecificOutput"]["permissionDecisionReason"].as_str().expect("reason").to_owned();
    assert_eq!(
        v,
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": reason}})
    );
    assert!(reason.contains("refused") && reason.contains("not on a Friday"), "{reason}");
    // A retry of the refused call is denied at once.
    let o = hook(&e, "codex", &fixture("codex-pre-tool-use-bash-git-push.json"), &[]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("\"deny\""), "{}", text(&o));
}

#[test]
fn an_undecided_call_is_denied_at_the_timeout_and_permission_requests_answer_in_their_format() {
    let e = env();
    let started = Instant::now();
    let o = hook(&e, "claude-code", &fixture("claude-code-pre-tool-use-mcp.json"), &["--wait", "1"]);
    let (decision, reason) = pre_tool_use(&o);
    assert_eq!(decision, "deny");
    assert!(reason.contains("timeout") && reason.contains("cc-toolu_01CreateIssue"), "{reason}");
    assert!(started.elapsed() < Duration::from_secs(15));
    // An unregistered MCP tool gets the conservative defaults: held, never allowed on its own.
    let doc: Value =
        serde_json::from_slice(&std::fs::read(e.spool().join("packets/cc-toolu_01CreateIssue.json")).expect("packet"))
            .expect("json");
    assert_eq!(doc["governance"]["contract"]["required_level"], json!(3));
    assert_eq!(doc["governance"]["contract"]["reversibility"], json!("irreversible"));
    // It expired with the wait: approving it later cannot make the call run, and a retry of the
    // same call is told so at once.
    assert!(doc["expires_at"].is_string(), "{doc}");
    let o = e.run(&["approve", "--yes", "cc-toolu_01CreateIssue"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("expired"), "{}", text(&o));
    let (decision, reason) = pre_tool_use(&hook(&e, "claude-code", &fixture("claude-code-pre-tool-use-mcp.json"), &[]));
    assert_eq!(decision, "deny");
    assert!(reason.contains("withdrawn") && reason.contains("(timeout)"), "{reason}");

    let o = hook(&e, "claude-code", &fixture("claude-code-permission-request-bash.json"), &["--wait", "0.2"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v = stdout_json(&o);
    let message = v["hookSpecificOutput"]["decision"]["message"].as_str().expect("message").to_owned();
    assert_eq!(
        v,
        json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "deny", "message": message, "interrupt": false}}})
    );
    let o = hook(&e, "codex", &fixture("codex-permission-request-bash.json"), &["--wait", "0.2"]);
    let v = stdout_json(&o);
    let message = v["hookSpecificOutput"]["decision"]["message"].as_str().expect("message").to_owned();
    assert_eq!(
        v,
        json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "deny", "message": message}}})
    );
}

#[test]
fn every_failure_is_a_deny_or_exit_2_never_another_code() {
    let e = env();
    let read = fixture("claude-code-pre-tool-use-read.json");
    // Input that is not an event: exit 2, the reason on stderr.
    for (input, why) in [
        (&b"not json"[..], "not JSON"),
        (&b"[1,2]"[..], "not a JSON object"),
        (&br#"{"tool_name":"Read"}"#[..], "no hook_event_name"),
        (&br#"{"hook_event_name":"Stop"}"#[..], "unsupported event"),
    ] {
        for host in ["claude-code", "codex"] {
            let o = hook(&e, host, input, &[]);
            assert_eq!(o.status.code(), Some(2), "{host} {why}: {}", text(&o));
            assert!(o.stdout.is_empty(), "{}", text(&o));
            assert!(String::from_utf8_lossy(&o.stderr).contains(why), "{}", text(&o));
        }
    }
    // A known event the hook cannot govern: a printed deny.
    let mut no_input: Value = serde_json::from_slice(&read).expect("json");
    no_input.as_object_mut().expect("object").remove("tool_input");
    assert_eq!(pre_tool_use(&hook(&e, "claude-code", no_input.to_string().as_bytes(), &[])).0, "deny");
    // A missing spool.
    let o = e
        .cmd(&["--spool", "/nonexistent/spool", "hook", "claude-code"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            c.stdin.take().expect("stdin").write_all(&read)?;
            c.wait_with_output()
        })
        .expect("hook");
    let (decision, reason) = pre_tool_use(&o);
    assert_eq!(decision, "deny");
    assert!(reason.contains("no spool"), "{reason}");
    // No pinned key.
    let bare = Env::without_key();
    std::fs::create_dir_all(bare.spool()).expect("spool");
    let (decision, reason) = pre_tool_use(&hook(&bare, "claude-code", &read, &[]));
    assert_eq!(decision, "deny");
    assert!(reason.contains("pinned"), "{reason}");
    // An unreadable configuration.
    std::fs::write(e.config().join("config.toml"), "this is = = not toml").expect("config");
    let (decision, _) = pre_tool_use(&hook(&e, "claude-code", &read, &[]));
    assert_eq!(decision, "deny");
    std::fs::remove_file(e.config().join("config.toml")).expect("rm");
    // A bad policy.toml.
    e.policy("[tools.Read]\ntier = \"harmless\"\n");
    let (decision, reason) = pre_tool_use(&hook(&e, "claude-code", &read, &[]));
    assert_eq!(decision, "deny");
    assert!(reason.contains("harmless"), "{reason}");
    // Codex's PreToolUse deny carries nothing but its three fields.
    let o = hook(&e, "codex", &fixture("codex-pre-tool-use-bash-status.json"), &[]);
    let v = stdout_json(&o);
    assert_eq!(v["hookSpecificOutput"].as_object().map(|m| m.len()), Some(3), "{v}");
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], json!("deny"));
    // A bad --agent is a deny too, not a usage error the host would read as proceed.
    std::fs::remove_file(e.config().join("policy.toml")).expect("rm");
    let (decision, reason) = pre_tool_use(&hook(&e, "claude-code", &read, &["--agent", "bad agent"]));
    assert_eq!(decision, "deny");
    assert!(reason.contains("--agent"), "{reason}");
}

#[test]
fn quarantine_blocks_at_once_and_notebook_trust_changes_the_next_answer_live() {
    let e = env();
    let edit = fixture("claude-code-pre-tool-use-edit.json");
    // An edit is mutating: in a cautious notebook it waits for the principal.
    let (decision, reason) = pre_tool_use(&hook(&e, "claude-code", &edit, &["--wait", "0.3"]));
    assert_eq!(decision, "deny");
    assert!(reason.contains("timeout"), "{reason}");
    // Raising the workspace's notebook to trusted lets the next edit run on its own.
    trust_the_project(&e);
    let mut next: Value = serde_json::from_slice(&edit).expect("json");
    next["tool_use_id"] = json!("toolu_01EditLib2");
    let (decision, reason) = pre_tool_use(&hook(&e, "claude-code", next.to_string().as_bytes(), &[]));
    assert_eq!(decision, "allow", "{reason}");
    // Quarantining the agent blocks its next call at once, with what would change it.
    let o = e.run(&["agent", "quarantine", "claude-code", "--reason", "odd pushes"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    next["tool_use_id"] = json!("toolu_01EditLib3");
    let started = Instant::now();
    let (decision, reason) = pre_tool_use(&hook(&e, "claude-code", next.to_string().as_bytes(), &[]));
    assert_eq!(decision, "deny");
    assert!(reason.contains("blocked") && reason.contains("release"), "{reason}");
    assert!(started.elapsed() < Duration::from_secs(10), "at once, not at the timeout");
}

#[test]
fn post_tool_use_records_a_receipt_of_the_call() {
    let e = env();
    assert_eq!(pre_tool_use(&hook(&e, "claude-code", &fixture("claude-code-pre-tool-use-read.json"), &[])).0, "allow");
    for (host, name, packet) in [
        ("claude-code", "claude-code-post-tool-use-read.json", "cc-toolu_01ReadReadme"),
        ("codex", "codex-post-tool-use-bash.json", "cx-call_status01"),
    ] {
        let o = hook(&e, host, &fixture(name), &[]);
        assert_eq!((o.status.code(), o.stdout.as_slice()), (Some(0), &b""[..]), "{}", text(&o));
        let receipts: Vec<Value> = std::fs::read_dir(e.spool().join("receipts"))
            .expect("receipts")
            .map(|f| serde_json::from_slice(&std::fs::read(f.expect("entry").path()).expect("read")).expect("json"))
            .collect();
        assert!(receipts.iter().any(|r| r["packet_id"] == json!(packet)), "{host}: {receipts:?}");
    }
    // Without a spool the receipt cannot be written: exit 2 says so.
    let o = e
        .cmd(&["--spool", "/nonexistent/spool", "hook", "codex"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            c.stdin.take().expect("stdin").write_all(&fixture("codex-post-tool-use-bash.json"))?;
            c.wait_with_output()
        })
        .expect("hook");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

#[test]
fn setup_writes_the_hooks_once_and_says_what_changed() {
    let e = env();
    let project = e.dir.path().join("project");
    std::fs::create_dir_all(project.join(".claude")).expect("dir");
    std::fs::write(project.join(".claude/settings.json"), r#"{"model": "opus", "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "lint"}]}]}}"#)
        .expect("settings");
    let dir = project.to_str().expect("utf-8");
    let o = e.run(&["setup", "claude-code", "--dir", dir, "--wait", "120"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("updated"), "{}", text(&o));
    let v: Value =
        serde_json::from_slice(&std::fs::read(project.join(".claude/settings.json")).expect("read")).expect("json");
    assert_eq!(v["model"], json!("opus"));
    let ours = &v["hooks"]["PreToolUse"][1]["hooks"][0];
    assert_eq!(ours["timeout"], json!(180), "the host's timeout outlasts the hook's wait: {v}");
    let command = ours["command"].as_str().expect("command");
    // The hooks' own binary, beside warrant.
    assert!(command.starts_with(cli_env::HOOK_BIN) && command.contains("hook claude-code --wait 120"), "{command}");
    assert!(command.contains(e.spool().to_str().expect("utf-8")), "{command}");
    // The command as the host runs it (a shell) with the binary gone: the call is blocked (exit 2),
    // never a non-blocking error the host would run the call after.
    let gone = command.replacen(cli_env::HOOK_BIN, "/nonexistent/warrant-hook", 1);
    let o = std::process::Command::new("sh").args(["-c", &gone]).stdin(Stdio::null()).output().expect("sh");
    assert_eq!(o.status.code(), Some(2), "{gone}: {}", text(&o));
    let o = e.run(&["setup", "claude-code", "--dir", dir, "--wait", "120"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("unchanged"), "{}", text(&o));
    // Codex: printed, not written, with the trust reminder.
    let o = e.run(&["setup", "codex", "--dir", dir, "--print"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let printed: Value = serde_json::from_slice(&o.stdout).expect("--print prints the file alone");
    assert!(
        printed["hooks"]["PreToolUse"][0]["hooks"][0]["command"].as_str().is_some_and(|c| c.contains("hook codex"))
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("/hooks"), "{}", text(&o));
    assert!(!project.join(".codex/hooks.json").exists());
}

/// `warrant-hook`, which `warrant setup` writes, answers every event as `warrant hook` does (the
/// same stdout, stderr and exit code): allowed calls in both hosts' formats, input that is not an
/// event, options and spools it cannot use, a held call. What it does not run itself it hands to
/// the `warrant` beside it (another command, `--version`, a JetStream store, a replica's
/// directory), and when there is none the call is denied (exit 2), never "proceed".
#[test]
fn the_hooks_own_binary_answers_as_warrant_hook_does_and_hands_the_rest_to_warrant() {
    let e = env();
    let read = fixture("claude-code-pre-tool-use-read.json");
    let answer = |program: &str, global: &[&str], host: &str, input: &[u8], args: &[&str]| {
        let o = spawn_hook_of(&e, program, global, host, input, args).wait_with_output().expect("hook");
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    // (global options, host, event, hook options)
    struct Case(&'static [&'static str], &'static str, Vec<u8>, &'static [&'static str]);
    let cases = [
        Case(&[], "claude-code", read.clone(), &[]),
        Case(&[], "codex", fixture("codex-pre-tool-use-bash-status.json"), &[]),
        Case(&[], "claude-code", b"not json".to_vec(), &[]),
        Case(&[], "codex", br#"{"hook_event_name":"Stop"}"#.to_vec(), &[]),
        Case(&[], "claude-code", read.clone(), &["--agent", "bad agent"]),
        Case(&[], "claude-code", read.clone(), &["--wait", "-1"]),
        Case(&["--spool", "/nonexistent/spool"], "claude-code", read.clone(), &[]),
        // A store that is not a store.
        Case(&["--store", "nats://"], "claude-code", read.clone(), &[]),
    ];
    for Case(global, host, input, args) in &cases {
        let full = answer(cli_env::BIN, global, host, input, args);
        let lean = answer(cli_env::HOOK_BIN, global, host, input, args);
        assert_eq!(lean, full, "{global:?} hook {host} {args:?}");
        assert!(matches!(full.0, Some(0 | 2)), "{full:?}");
    }
    // A replica's directory (its marker names a store nobody serves): `warrant-hook` never opens
    // one itself (it links no store client) and hands it to `warrant`, which answers as it does.
    let replica = e.dir.path().join("replica");
    std::fs::create_dir_all(&replica).expect("replica");
    std::fs::write(replica.join(".store"), "nats://127.0.0.1:9/team\n").expect("marker");
    let global = ["--spool", replica.to_str().expect("utf-8")];
    let full = answer(cli_env::BIN, &global, "claude-code", &read, &[]);
    let lean = answer(cli_env::HOOK_BIN, &global, "claude-code", &read, &[]);
    assert_eq!(lean, full, "a replica's directory");
    assert_eq!(full.0, Some(0), "{full:?}");
    assert!(full.1.contains("\"deny\"") && full.1.contains("127.0.0.1:9"), "denied, naming the store: {full:?}");
    // A held call: published by either, denied at the timeout in the same words.
    let push = |id: &str| {
        let mut v: Value =
            serde_json::from_slice(&fixture("claude-code-pre-tool-use-bash-git-push.json")).expect("json");
        v["tool_use_id"] = json!(id);
        v.to_string().into_bytes()
    };
    let full = answer(cli_env::BIN, &[], "claude-code", &push("toolu_full"), &["--wait", "0.2"]);
    let lean = answer(cli_env::HOOK_BIN, &[], "claude-code", &push("toolu_lean"), &["--wait", "0.2"]);
    assert_eq!(lean.0, Some(0), "{lean:?}");
    assert_eq!(lean.1.replace("toolu_lean", "toolu_full"), full.1, "the same deny but for the id");
    assert!(e.spool().join("packets/cc-toolu_lean.json").exists(), "the lean hook published its packet");
    // Another command, and --version: warrant's own answer.
    for args in [&["--version"][..], &["list", "--json"]] {
        let full = e.cmd(args).output().expect("warrant");
        let lean = e.cmd_of(cli_env::HOOK_BIN, args).output().expect("warrant-hook");
        assert_eq!((lean.status.code(), &lean.stdout), (full.status.code(), &full.stdout), "{args:?}");
        assert_eq!(full.status.code(), Some(0), "{}", text(&full));
    }
    // Alone (no warrant beside it), a JetStream store cannot be handed on: denied, never run.
    let alone = e.dir.path().join("bin");
    std::fs::create_dir_all(&alone).expect("dir");
    let copy = alone.join("warrant-hook");
    std::fs::copy(cli_env::HOOK_BIN, &copy).expect("copy");
    let o = spawn_hook_of(
        &e,
        copy.to_str().expect("utf-8"),
        &["--store", "nats://127.0.0.1:9/team"],
        "claude-code",
        &read,
        &[],
    )
    .wait_with_output()
    .expect("hook");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(o.stdout.is_empty(), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("could not hand this to warrant"), "{}", text(&o));
}

/// The hooks' own binary, which a host starts once a tool call, links none of what it never runs
/// (`docs/performance.md`, "Hooks"): no store client (async-nats, tokio, rustls: a replica is
/// handed to `warrant`), no console and no gateway, read from the symbols the linker kept. The
/// same check finds them in `warrant`, so it reads the names it looks for.
#[test]
fn the_hooks_own_binary_links_no_store_client_console_or_gateway() {
    use object::{Object as _, ObjectSymbol as _};
    let crates = |path: &str| -> std::collections::BTreeSet<&'static str> {
        let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let file = object::File::parse(&*bytes).unwrap_or_else(|e| panic!("{path}: {e}"));
        // Code and data the linker kept (not the names of the object files it opened).
        let names: Vec<&str> = file
            .symbols()
            .filter(|s| s.is_definition() && matches!(s.kind(), object::SymbolKind::Text | object::SymbolKind::Data))
            .filter_map(|s| s.name().ok())
            .collect();
        assert!(names.len() > 1000, "{path}: {} symbols: not a binary with its symbol table", names.len());
        ["async_nats", "tokio", "rustls", "ratatui", "crossterm", "rmcp", "warrant_console", "warrant_gateway"]
            .into_iter()
            .filter(|c| names.iter().any(|n| n.contains(c)))
            .collect()
    };
    assert_eq!(crates(cli_env::HOOK_BIN), Default::default(), "linked into {}", cli_env::HOOK_BIN);
    let full = crates(cli_env::BIN);
    #[cfg(feature = "console")]
    assert!(full.contains("warrant_console") && full.contains("tokio"), "{full:?}");
    #[cfg(feature = "jetstream")]
    assert!(full.contains("async_nats"), "{full:?}");
    #[cfg(not(any(feature = "console", feature = "jetstream")))]
    assert!(full.is_empty(), "{full:?}");
}

/// Runs a PreToolUse of `tool` with `input` as call `id` waiting `wait` seconds, approving or
/// refusing it (`decide`) once it is published; returns the hook's decision and reason.
fn call(e: &Env, id: &str, tool: &str, input: Value, decide: Option<&str>, wait: &str) -> (String, String) {
    pace(e);
    let event = json!({
        "session_id": "grad", "cwd": "/home/user/project", "hook_event_name": "PreToolUse",
        "tool_name": tool, "tool_input": input, "tool_use_id": id,
    });
    let child = spawn_hook(e, "claude-code", event.to_string().as_bytes(), &["--wait", wait]);
    if let Some(verb) = decide {
        let packet = format!("cc-{id}");
        wait_for_packet(e, &packet);
        let o = e.run(&[verb, "--yes", &packet, "--reason", "checked"]);
        assert_eq!(o.status.code(), Some(0), "{verb} {packet}: {}", text(&o));
    }
    pre_tool_use(&child.wait_with_output().expect("hook"))
}

// Trust Graduation's loop through the hooks: a class that must earn evidence is held, the
// principal's approvals are the evidence, the agent is told how many more it takes, and once the
// class graduates its calls run with no prompt; one refusal and it is held again.
#[test]
fn approved_calls_graduate_a_class_and_one_refusal_holds_it_again() {
    let e = env();
    e.policy("[tools.\"mcp__mail__send_internal\"]\ntier = \"safe\"\nclass = \"email.send.internal\"\nlevel = 1\n");
    let send = |n: usize| json!({"to": "team@acme.example", "subject": format!("standup {n}")});
    let mut approvals = 0;
    loop {
        let (decision, reason) =
            call(&e, &format!("g-{approvals}"), "mcp__mail__send_internal", send(approvals), None, "0.2");
        if decision == "allow" {
            break;
        }
        // Held for evidence, with the way to graduate in the reason.
        let more = 10 - approvals;
        let s = if more == 1 { "" } else { "s" };
        let expected = format!("{more} more approved call{s} of `email.send.internal` and it runs on its own");
        assert!(reason.contains(&expected), "after {approvals} approvals: {reason}");
        // The principal approves the call the agent makes again.
        let (decision, reason) =
            call(&e, &format!("a-{approvals}"), "mcp__mail__send_internal", send(approvals), Some("approve"), "20");
        assert_eq!(decision, "allow", "{reason}");
        approvals += 1;
        assert!(approvals <= 10, "still held after 10 approvals: {reason}");
    }
    assert_eq!(approvals, 10, "graduates at the tenth approval (auto_capped: 10 positive, 6 approvals)");
    // Graduated, it runs on its own within its class's constraints: `email.send.internal`'s
    // `rate_limit` is 5 an hour (the calls the principal approved are not counted: a person
    // decided them). The call that found the class graduated is the first of the five, also
    // after its packet expired with its wait of 0.2 s; the sixth is held for the principal, with
    // the reason.
    for n in 0..4 {
        let (decision, reason) = call(&e, &format!("after-{n}"), "mcp__mail__send_internal", send(100 + n), None, "30");
        assert_eq!(decision, "allow", "call {n} after graduating: {reason}");
        assert!(reason.contains("within its constraints"), "{reason}");
    }
    let (decision, reason) = call(&e, "after-4", "mcp__mail__send_internal", send(104), None, "0.2");
    assert_eq!(decision, "deny", "{reason}");
    assert!(reason.contains("`rate_limit`: 5 call(s) of this class in the last PT1H (at most 5)"), "{reason}");
    // The principal refuses one of the calls that waited in vain: the class is held again.
    let o = e.run(&["refuse", "--yes", "cc-g-0", "--reason", "wrong list"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let (decision, reason) = call(&e, "after-5", "mcp__mail__send_internal", send(105), None, "0.2");
    assert_eq!(decision, "deny", "{reason}");
    assert!(reason.contains("cannot graduate on approvals"), "{reason}");
}

/// A call the gate let run on its own within a `rate_limit` is one of the calls the limit counts
/// for the whole window, also once its packet expired with the hook's wait (every call packet
/// expires with its wait, whatever the answer) and with no receipt (no PostToolUse hook, or one
/// that has not run yet). It used to stop counting then, so the next call ran past the limit: a
/// test that took longer than the hook's wait of 0.3 s under load let a third call of a class
/// limited to one an hour run.
#[test]
fn a_call_the_gate_allowed_counts_against_the_rate_limit_after_its_packet_expired() {
    let e = env();
    e.policy(
        "[[class]]\nid = \"crm.record.update\"\ntype = \"internal\"\nrisk = \"low\"\n\
         constraints = { rate_limit = { count = 1, window = \"PT1H\" } }\n\n\
         [tools.\"mcp__crm__update\"]\ntier = \"safe\"\nclass = \"crm.record.update\"\n",
    );
    let (decision, reason) = call(&e, "l-1", "mcp__crm__update", json!({"id": 1}), None, "0.3");
    assert_eq!(decision, "allow", "the first call is within the limit: {reason}");
    // Its packet expires 0.3 s after it was made; no receipt names it.
    let packet: Value =
        serde_json::from_slice(&std::fs::read(e.spool().join("packets/cc-l-1.json")).expect("packet")).expect("json");
    let expires = packet["expires_at"].as_str().and_then(warrant::protocol::clock::parse_rfc3339).expect("expires_at");
    while time::OffsetDateTime::now_utc() <= expires {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(e.spool().join("packets/cc-l-1.json").exists());
    assert_eq!(std::fs::read_dir(e.spool().join("receipts")).map(Iterator::count).unwrap_or(0), 0);
    let (decision, reason) = call(&e, "l-2", "mcp__crm__update", json!({"id": 2}), None, "0.3");
    assert_eq!(decision, "deny", "the second call in the hour is over the limit: {reason}");
    assert!(reason.contains("`rate_limit`: 1 call(s) of this class in the last PT1H (at most 1)"), "{reason}");
}

/// A `policy.toml` that pins the file a `Write` names (`file.exists` and `file.sha256` of
/// `file_path`), with `project` as the only precondition root.
fn pin_writes(e: &Env, project: &std::path::Path) {
    std::fs::create_dir_all(project).expect("project");
    e.policy(&format!(
        "[tools.\"Write\"]\ntier = \"mutating\"\nclass = \"tool.call.local\"\nlevel = 2\n\
         preconditions = [{{ check = \"file.exists\", argument = \"file_path\" }}, {{ check = \"file.sha256\", argument = \"file_path\" }}]\n\
         [preconditions]\nroots = [\"{}\"]\n",
        project.display()
    ));
}

/// Claude Code's PreToolUse of `Write` in `cwd`.
fn write_event(id: &str, cwd: &std::path::Path, file_path: &str, content: &str) -> Vec<u8> {
    json!({
        "session_id": "pre", "cwd": cwd, "hook_event_name": "PreToolUse", "tool_name": "Write",
        "tool_input": {"file_path": file_path, "content": content}, "tool_use_id": id,
    })
    .to_string()
    .into_bytes()
}

// Preconditions through a hook: the file a call names is observed when the call is proposed, and
// must be the same when the principal approves. A path outside the declared roots cannot be
// observed, so the call is blocked at once with the reason; a file that changed after the
// proposal cannot be approved.
#[test]
fn a_write_outside_the_precondition_roots_is_blocked_and_a_changed_file_cannot_be_approved() {
    let e = env();
    let project = e.dir.path().join("project");
    pin_writes(&e, &project);
    let outside = e.dir.path().join("elsewhere.txt");
    let started = Instant::now();
    let event = write_event("toolu_out", &project, outside.to_str().expect("utf-8"), "x");
    let (decision, reason) = pre_tool_use(&hook(&e, "claude-code", &event, &["--wait", "20"]));
    assert_eq!(decision, "deny", "{reason}");
    assert!(reason.contains("blocked") && reason.contains("outside the precondition roots"), "{reason}");
    assert!(started.elapsed() < Duration::from_secs(10), "at once, not at the timeout");

    let notes = project.join("notes.txt");
    std::fs::write(&notes, "v1\n").expect("write");
    let child =
        spawn_hook(&e, "claude-code", &write_event("toolu_changed", &project, "notes.txt", "v2\n"), &["--wait", "3"]);
    wait_for_packet(&e, "cc-toolu_changed");
    let doc: Value =
        serde_json::from_slice(&std::fs::read(e.spool().join("packets/cc-toolu_changed.json")).expect("packet"))
            .expect("json");
    let pre = &doc["governance"]["contract"]["preconditions"];
    assert_eq!(pre[0]["parameters"]["path"], json!(notes), "relative to the event's cwd: {pre}");
    assert_eq!(pre[0]["expected_at_approval"], json!(true), "{pre}");
    std::fs::write(&notes, "edited by hand meanwhile\n").expect("write");
    let o = e.run(&["approve", "--yes", "cc-toolu_changed"]);
    assert_ne!(o.status.code(), Some(0), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("precondition"), "{}", text(&o));
    let listed: Value = serde_json::from_slice(&e.run(&["list", "--json"]).stdout).expect("list");
    let p = listed["packets"]
        .as_array()
        .expect("packets")
        .iter()
        .find(|p| p["packet_id"] == json!("cc-toolu_changed"))
        .cloned();
    assert_eq!(p.as_ref().map(|p| p["state"].clone()), Some(json!("blocked")), "{listed}");
    assert_eq!(pre_tool_use(&child.wait_with_output().expect("hook")).0, "deny");
}

// A hook re-checks what the principal's decision recorded just before it answers `allow`: a new
// file that is still absent is fine; a file that changed after the approval (the hook is stopped
// from before the approval until after the change, so the order is certain) is a deny with
// `precondition_failed`. After the answer the host runs the tool: that window no hook can close.
#[test]
fn a_hook_rechecks_the_approved_file_just_before_it_answers() {
    let e = env();
    let project = e.dir.path().join("project");
    pin_writes(&e, &project);
    let new = project.join("new.txt");
    let child = spawn_hook(
        &e,
        "claude-code",
        &write_event("toolu_new", &project, new.to_str().expect("utf-8"), "hi"),
        &["--wait", "20"],
    );
    wait_for_packet(&e, "cc-toolu_new");
    let o = e.run(&["approve", "--yes", "cc-toolu_new"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let (decision, reason) = pre_tool_use(&child.wait_with_output().expect("hook"));
    assert_eq!(decision, "allow", "a new file may be written: {reason}");

    let notes = project.join("notes.txt");
    std::fs::write(&notes, "v1\n").expect("write");
    let child = spawn_hook(
        &e,
        "claude-code",
        &write_event("toolu_pinned", &project, notes.to_str().expect("utf-8"), "v2\n"),
        &["--wait", "20"],
    );
    wait_for_packet(&e, "cc-toolu_pinned");
    let pid = child.id().to_string();
    let signal = |sig: &str| {
        let o = std::process::Command::new("kill").args([sig, &pid]).output().expect("kill");
        assert!(o.status.success(), "kill {sig}: {}", text(&o));
    };
    signal("-STOP");
    let o = e.run(&["approve", "--yes", "cc-toolu_pinned"]);
    std::fs::write(&notes, "changed after the approval\n").expect("write");
    signal("-CONT");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let (decision, reason) = pre_tool_use(&child.wait_with_output().expect("hook"));
    assert_eq!(decision, "deny", "{reason}");
    // Stopped in the middle of a judgement (its chain read before the approval), the hook finds
    // the file changed since the proposal instead; stopped between two, it finds the approved
    // file changed. Either way the changed file, observed, is why it denies.
    let changed = reason.contains("precondition_failed") || reason.contains("the world changed since");
    assert!(changed && reason.contains("file.sha256"), "{reason}");
}

// Found by review. A PermissionRequest has no call id: each is its own packet, so one approval
// never answers a later identical request; and what the gate would allow on its own is left to
// the host's own prompt (printed nothing), never granted by the hook.
#[test]
fn permission_requests_are_each_their_own_packet_and_never_granted_by_the_gate_alone() {
    let e = env();
    let request = |command: &str| {
        json!({
            "session_id": "s", "cwd": "/home/user/project", "hook_event_name": "PermissionRequest",
            "tool_name": "Bash", "tool_input": {"command": command},
        })
        .to_string()
    };
    // `git status` is a safe read: the gate would allow it, so the host asks its user.
    let o = hook(&e, "claude-code", request("git status").as_bytes(), &[]);
    assert_eq!((o.status.code(), o.stdout.as_slice()), (Some(0), &b""[..]), "{}", text(&o));
    let o = hook(&e, "codex", request("git status").as_bytes(), &[]);
    assert_eq!((o.status.code(), o.stdout.as_slice()), (Some(0), &b""[..]), "{}", text(&o));
    // Two identical held requests are two packets.
    for _ in 0..2 {
        let o = hook(&e, "claude-code", request("git push origin main").as_bytes(), &["--wait", "0.2"]);
        assert!(String::from_utf8_lossy(&o.stdout).contains("\"deny\""), "{}", text(&o));
    }
    let pushes = std::fs::read_dir(e.spool().join("packets"))
        .expect("packets")
        .filter(|f| std::fs::read_to_string(f.as_ref().expect("entry").path()).is_ok_and(|t| t.contains("git push")))
        .count();
    assert_eq!(pushes, 2);
}

// Found by review: a broken chain must stop everything, even what it records as approved.
#[test]
fn a_broken_chain_denies_every_call() {
    let e = env();
    let child = spawn_hook(&e, "claude-code", &fixture("claude-code-pre-tool-use-bash-git-push.json"), &[]);
    wait_for_packet(&e, "cc-toolu_01PushMain");
    assert_eq!(e.run(&["approve", "--yes", "cc-toolu_01PushMain"]).status.code(), Some(0));
    assert_eq!(pre_tool_use(&child.wait_with_output().expect("hook")).0, "allow");
    // Tamper with the chain: change who approved.
    let path = e.spool().join("chain.jsonl");
    let text = std::fs::read_to_string(&path).expect("chain");
    std::fs::write(&path, text.replacen("\"approver\":\"alice\"", "\"approver\":\"mallory\"", 1)).expect("write");
    let tampered = std::fs::read_to_string(&path).expect("chain");
    assert_ne!(tampered, text, "the chain changed");
    let (decision, reason) =
        pre_tool_use(&hook(&e, "claude-code", &fixture("claude-code-pre-tool-use-read.json"), &[]));
    assert_eq!(decision, "deny");
    assert!(reason.contains("chain does not verify"), "{reason}");
    let (decision, _) =
        pre_tool_use(&hook(&e, "claude-code", &fixture("claude-code-pre-tool-use-bash-git-push.json"), &[]));
    assert_eq!(decision, "deny", "an approval in a broken chain runs nothing");
}

// In a spool the principal owns and the agent does not (agents as their own Unix users), the tool
// table is the spool's `policy.toml`, the principal's: a `policy.toml` in the agent's own
// configuration directory that makes a payment tool `safe` changes nothing, even one the principal
// owns; the same table in the spool counts; a spool table someone else owns refuses every call.
// Needs root (files given to another owner); skipped, and said, otherwise.
#[test]
fn an_agents_own_policy_cannot_loosen_the_tool_table_of_a_shared_spool() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("not root: cannot give the spool to another owner; skipped");
        assert!(std::env::var_os("CI").is_none(), "CI runs as root: this test must run there");
        return;
    }
    let e = env();
    let principal = 4242;
    std::os::unix::fs::chown(e.spool(), Some(principal), None).expect("chown the spool");
    e.policy("[tools.\"mcp__bank__pay\"]\ntier = \"safe\"\nclass = \"read.context\"\nlevel = 1\n");
    let event = |id: &str| {
        json!({
            "session_id": "s1", "cwd": "/home/agent/project", "hook_event_name": "PreToolUse",
            "tool_name": "mcp__bank__pay", "tool_input": {"to": "acct-9", "amount": 900}, "tool_use_id": id,
        })
        .to_string()
    };
    let (decision, reason) = pre_tool_use(&hook(&e, "claude-code", event("pay-1").as_bytes(), &["--wait", "0.3"]));
    assert_eq!(decision, "deny", "the agent's own table is ignored: {reason}");
    assert!(reason.contains("timeout"), "{reason}");
    let doc: Value =
        serde_json::from_slice(&std::fs::read(e.spool().join("packets/cc-pay-1.json")).expect("packet")).expect("json");
    assert_eq!(doc["action_class"], json!("tool.call.external"), "held as an unregistered tool: {doc}");
    // Even the principal's own file there: the agent could delete it. The spool's counts.
    std::os::unix::fs::chown(e.config().join("policy.toml"), Some(principal), None).expect("chown the policy");
    let (decision, reason) = pre_tool_use(&hook(&e, "claude-code", event("pay-2").as_bytes(), &["--wait", "0.3"]));
    assert_eq!(decision, "deny", "{reason}");
    let table = e.spool().join("policy.toml");
    std::fs::copy(e.config().join("policy.toml"), &table).expect("the spool's table");
    std::os::unix::fs::chown(&table, Some(principal), None).expect("chown the spool's policy");
    let (decision, reason) = pre_tool_use(&hook(&e, "claude-code", event("pay-3").as_bytes(), &["--wait", "0.3"]));
    assert_eq!(decision, "allow", "{reason}");
    // A spool table that is not the principal's is an error: every call is refused, with why.
    std::os::unix::fs::chown(&table, Some(0), None).expect("chown to root");
    let (decision, reason) = pre_tool_use(&hook(&e, "claude-code", event("pay-4").as_bytes(), &["--wait", "0.3"]));
    assert_eq!(decision, "deny", "{reason}");
    assert!(reason.contains("not the spool owner's own file"), "{reason}");
}

// A class's `refuse_after` in policy.toml caps the hook's `--wait`, and the packet
// expires with it; the agent is told "timeout" and nothing is signed.
#[test]
fn a_class_timeout_caps_the_hooks_wait() {
    let e = env();
    e.policy("[timeouts.\"*\"]\nrefuse_after = \"PT1S\"\n");
    let started = Instant::now();
    let o = hook(&e, "claude-code", &fixture("claude-code-pre-tool-use-mcp.json"), &["--wait", "120"]);
    let (decision, reason) = pre_tool_use(&o);
    assert_eq!(decision, "deny");
    assert!(reason.contains("timeout") && reason.contains("within 1s"), "{reason}");
    assert!(started.elapsed() < Duration::from_secs(20), "waited {:?}", started.elapsed());
    let doc: Value =
        serde_json::from_slice(&std::fs::read(e.spool().join("packets/cc-toolu_01CreateIssue.json")).expect("packet"))
            .expect("json");
    let at = |k: &str| warrant::protocol::clock::unix_seconds(doc[k].as_str().expect(k)).expect("time");
    assert!((at("expires_at") - at("created_at") - 1.0).abs() < 0.01, "{doc}");
    assert!(
        !e.spool().join("chain.jsonl").exists()
            || std::fs::read_to_string(e.spool().join("chain.jsonl")).expect("chain").is_empty()
    );
}

/// Claude Code's hook on `event` with `HOME` set to `home`, waiting 0.3 s: its PreToolUse answer.
fn hook_at_home(e: &Env, home: &std::path::Path, event: &[u8]) -> (String, String) {
    let mut child = e
        .cmd(&["hook", "claude-code", "--wait", "0.3"])
        .env("HOME", home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    child.stdin.take().expect("stdin").write_all(event).expect("event");
    pre_tool_use(&child.wait_with_output().expect("hook"))
}

/// Protected files are matched on the file a path resolves to, never on its spelling: in a
/// notebook the principal made `trusted` (where an edit runs on its own), Writes that name
/// warrant's configuration, the spool, git's configuration or a start-up file through `.`, `//`,
/// `..`, a relative path or a symlink wait for the principal like the plain spellings, and a
/// plain file in the project still runs. The packet says which protected file it names.
#[test]
fn protected_files_are_matched_as_resolved_files_not_as_text() {
    let e = env();
    let home = e.spool().parent().expect("parent").join("home");
    let proj = home.join("proj");
    std::fs::create_dir_all(proj.join(".git")).expect("project");
    std::fs::create_dir_all(home.join(".claude")).expect(".claude");
    std::fs::write(home.join(".claude/settings.json"), "{}").expect("settings");
    std::os::unix::fs::symlink(home.join(".claude/settings.json"), proj.join("notes.md")).expect("symlink");
    std::os::unix::fs::symlink(e.config(), proj.join("cfg")).expect("symlink to the configuration");
    let notebook = warrant::protocol::calls::notebook_for_dir(proj.to_str().expect("utf-8"));
    let o = e.run(&["trust", "set", &notebook, "trusted", "--reason", "my project"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let config = e.config();
    let spool = e.spool();
    let (c, s, h, p) = (config.display(), spool.display(), home.display(), proj.display());
    let held = [
        format!("{c}/./policy.toml"),
        format!("{c}//pinned_keys.toml"),
        format!("{p}/../proj/cfg/policy.toml"),
        format!("{s}/./policy.toml"),
        format!("{p}/.git/./config"),
        format!("{p}/.git/info/attributes"),
        format!("{h}/.zshenv"),
        format!("{h}/.config/git/config"),
        format!("{p}/sub/.envrc"),
        "notes.md".to_owned(),
        "./cfg/./principal.key".to_owned(),
    ];
    let run = |id: &str, file: &str| hook_at_home(&e, &home, &write_event(id, &proj, file, "x"));
    for (i, file) in held.iter().enumerate() {
        let id = format!("toolu_prot{i}");
        let (decision, reason) = run(&id, file);
        assert_eq!(decision, "deny", "{file} ran unasked: {reason}");
        let packet: Value = serde_json::from_slice(
            &std::fs::read(e.spool().join(format!("packets/cc-{id}.json"))).expect("the held call's packet"),
        )
        .expect("json");
        let protected = packet["proposed_action"]["protected"].as_array().map_or(0, Vec::len);
        assert!(protected > 0, "{file}: the packet names no protected file: {packet}");
        assert!(packet["governance"]["contract"]["required_level"].as_u64() >= Some(4), "{file}: {packet}");
    }
    let (decision, reason) = run("toolu_plain", &format!("{p}/plain.md"));
    assert_eq!(decision, "allow", "a plain file in a trusted notebook: {reason}");
}

/// A shell command's words are resolved as files in the command's real working directory: a
/// glob, a variable or a working directory inside a protected directory never runs unasked.
#[test]
fn a_shell_command_that_can_reach_a_protected_file_waits_for_the_principal() {
    let e = env();
    let home = e.spool().parent().expect("parent").join("home");
    let proj = home.join("proj");
    std::fs::create_dir_all(&proj).expect("project");
    std::fs::write(proj.join("a.txt"), "a").expect("a.txt");
    std::os::unix::fs::symlink(e.config(), proj.join("cfg")).expect("symlink");
    let bash = |id: &str, cwd: &std::path::Path, command: &str| {
        let event = json!({"session_id": "s", "cwd": cwd, "hook_event_name": "PreToolUse", "tool_name": "Bash",
            "tool_input": {"command": command}, "tool_use_id": id});
        hook_at_home(&e, &home, event.to_string().as_bytes())
    };
    // `cat` of a project file is safe and runs at once.
    let (decision, reason) = bash("toolu_sh0", &proj, "cat a.txt");
    assert_eq!(decision, "allow", "{reason}");
    for (i, (cwd, command)) in [
        (proj.clone(), "cat cfg/*.key"),
        (proj.clone(), "cat ./cfg/../cfg/principal.key"),
        (e.config(), "cat *.key"),
        (proj.clone(), "cat $HOME/.ssh/id_ed25519"),
        (proj.clone(), "head ~/.ssh/id_ed25519"),
    ]
    .into_iter()
    .enumerate()
    {
        let (decision, reason) = bash(&format!("toolu_sh{}", i + 1), &cwd, command);
        assert_eq!(decision, "deny", "{command} in {} ran unasked: {reason}", cwd.display());
    }
}

// Issue "guarantees on the things themselves" §3: another agent user created
// `uses/approval+<id>.use` for this agent's packet; after the principal approved, the real
// agent's hook answered `consumed` and its call never ran. A use is a file its publisher owns: a
// planted one takes nothing, and the approval still answers one call only.
#[test]
fn a_use_of_an_approval_planted_by_another_user_takes_nothing() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("not root: files owned by another user cannot be made here; skipped");
        return;
    }
    const MALLORY: u32 = 4_000_102;
    let plant = |e: &Env, name: &str| {
        let dir = e.spool().join("uses");
        std::fs::create_dir_all(&dir).expect("uses");
        let path = dir.join(name);
        std::fs::write(&path, b"{\"type\":\"warrant_approval_use\"}\n").expect("plant");
        std::os::unix::fs::chown(&path, Some(MALLORY), None).expect("chown");
    };
    let input = fixture("claude-code-pre-tool-use-bash-git-push.json");
    let e = env();
    let child = spawn_hook(&e, "claude-code", &input, &[]);
    wait_for_packet(&e, "cc-toolu_01PushMain");
    plant(&e, "approval+cc-toolu_01PushMain.use");
    assert_eq!(e.run(&["approve", "--yes", "cc-toolu_01PushMain"]).status.code(), Some(0));
    let (decision, reason) = pre_tool_use(&child.wait_with_output().expect("hook"));
    assert_eq!(decision, "allow", "a planted claim took the approval: {reason}");
    // The approval answered that call; the same call again is not run twice.
    let (decision, reason) = pre_tool_use(&hook(&e, "claude-code", &input, &[]));
    assert_eq!(decision, "deny", "{reason}");
    assert!(reason.contains("already used"), "{reason}");

    // Both names planted: the call does not run, and the answer names who planted them.
    let e = env();
    let child = spawn_hook(&e, "claude-code", &input, &[]);
    wait_for_packet(&e, "cc-toolu_01PushMain");
    let me = rustix::process::geteuid().as_raw();
    plant(&e, "approval+cc-toolu_01PushMain.use");
    plant(&e, &format!("approval+cc-toolu_01PushMain+u{me}.use"));
    assert_eq!(e.run(&["approve", "--yes", "cc-toolu_01PushMain"]).status.code(), Some(0));
    let (decision, reason) = pre_tool_use(&child.wait_with_output().expect("hook"));
    assert_eq!(decision, "deny", "{reason}");
    assert!(reason.contains("uid 4000102") && reason.contains("not by this packet's publisher"), "{reason}");
}

/// Rewrites packet `id`'s `expires_at` to a far day, as its agent (its file's owner) can.
fn give_another_day(e: &Env, id: &str) {
    let path = e.spool().join("packets").join(format!("{id}.json"));
    let mut doc: Value = serde_json::from_slice(&std::fs::read(&path).expect("packet")).expect("json");
    doc["expires_at"] = json!("2099-01-01T00:00:00Z");
    std::fs::write(&path, serde_json::to_vec(&doc).expect("json")).expect("rewrite");
}

// Issue "guarantees on the things themselves" §3: a timed-out call was revived. The hook denied
// it (timeout), the agent rewrote `expires_at` in its own packet file, `approve --yes` signed it,
// and the host's retry with the same `tool_use_id` ran. The hook's own deadline decides: once a
// hook has answered a call, or stopped waiting for it (killed by its host), the packet is
// withdrawn: it cannot be approved and no retry runs it.
#[test]
fn a_call_its_hook_answered_or_stopped_waiting_for_is_withdrawn_and_cannot_be_approved() {
    let e = env();
    let input = fixture("claude-code-pre-tool-use-bash-git-push.json");
    let id = "cc-toolu_01PushMain";
    let (decision, reason) = pre_tool_use(&hook(&e, "claude-code", &input, &["--wait", "1"]));
    assert_eq!(decision, "deny", "{reason}");
    assert!(reason.contains("timeout"), "{reason}");
    // The agent gives its packet another day.
    give_another_day(&e, id);
    let listed = e.run(&["list", "--json"]);
    let v: Value = serde_json::from_slice(&listed.stdout).expect("list");
    assert!(v["packets"][0]["withdrawn"].as_str().is_some_and(|w| w.contains("(timeout)")), "{v}");
    assert!(
        String::from_utf8_lossy(&e.run(&["list"]).stdout).lines().nth(1).is_some_and(|l| l.starts_with("withdrawn")),
        "the plain list says so"
    );
    let o = e.run(&["approve", "--yes", id]);
    assert_ne!(o.status.code(), Some(0), "a withdrawn call was approved: {}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("withdrawn"), "{}", text(&o));
    assert_eq!(std::fs::read_to_string(e.spool().join("chain.jsonl")).unwrap_or_default(), "", "nothing signed");
    // The host retries the call under the same id: it does not run.
    let (decision, reason) = pre_tool_use(&hook(&e, "claude-code", &input, &["--wait", "1"]));
    assert_eq!(decision, "deny", "{reason}");
    assert!(reason.contains("withdrawn"), "{reason}");

    // A hook its host killed while it waited (an interrupted host): the call is withdrawn at
    // once, long before the hook's wait would have ended.
    let e = env();
    let mut child = spawn_hook(&e, "claude-code", &input, &["--wait", "60"]);
    wait_for_packet(&e, id);
    wait_for_hold(&e, id);
    child.kill().expect("kill the hook");
    let _ = child.wait();
    give_another_day(&e, id);
    let o = e.run(&["approve", "--yes", id]);
    assert_ne!(o.status.code(), Some(0), "the call of a killed hook was approved: {}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no hook or gateway waits for it"), "{}", text(&o));
    // While a hook waits, its call is approvable as ever.
    let e = env();
    let child = spawn_hook(&e, "claude-code", &input, &["--wait", "60"]);
    wait_for_packet(&e, id);
    wait_for_hold(&e, id);
    assert_eq!(e.run(&["approve", "--yes", id]).status.code(), Some(0));
    assert_eq!(pre_tool_use(&child.wait_with_output().expect("hook")).0, "allow");
}

// Issue "guarantees on the things themselves" §2: with `core.fsmonitor` or `diff.external` set in
// a repository's configuration, the "safe" `git status` and `git diff` ran the program. A git
// command is `safe` only while the configuration git reads for it names no program it would
// run: otherwise it waits for the principal, and the packet says which setting.
#[test]
fn a_safe_git_command_waits_when_gits_configuration_would_run_a_program() {
    let e = env();
    let repo = e.dir.path().join("repo");
    std::fs::create_dir_all(&repo).expect("mkdir");
    let git = |args: &[&str]| {
        let o = std::process::Command::new("git").args(args).current_dir(&repo).output().expect("git");
        assert!(o.status.success(), "git {args:?}: {}", text(&o));
    };
    git(&["init", "-q"]);
    let event = |id: &str, command: &str| {
        json!({
            "session_id": "s-git", "cwd": repo.to_str().expect("utf-8"), "hook_event_name": "PreToolUse",
            "tool_name": "Bash", "tool_input": {"command": command}, "tool_use_id": id,
        })
        .to_string()
        .into_bytes()
    };
    let (decision, reason) = pre_tool_use(&hook(&e, "claude-code", &event("toolu_g1", "git status"), &[]));
    assert_eq!(decision, "allow", "a plain repository's git status is a read: {reason}");
    let pwned = e.dir.path().join("pwned");
    git(&["config", "core.fsmonitor", &format!("touch {}", pwned.display())]);
    for (id, command, key) in
        [("toolu_g2", "git status", "core.fsmonitor"), ("toolu_g3", "git -c diff.external=sh diff", "-c")]
    {
        let (decision, reason) = pre_tool_use(&hook(&e, "claude-code", &event(id, command), &["--wait", "0.2"]));
        assert_eq!(decision, "deny", "{command}: {reason}");
        let packet: Value = serde_json::from_slice(
            &std::fs::read(e.spool().join("packets").join(format!("cc-{id}.json")))
                .expect("a packet for the principal"),
        )
        .expect("json");
        assert!(packet.to_string().contains(key), "the packet says why: {packet}");
    }
    assert!(!pwned.exists(), "nothing ran the program");
}

// Issue "guarantees on the things themselves" §3: a hook that failed to verify a decision still
// consumed the approval. The decision file is verified (pinned keys, content hash, quorum)
// before the approval's one use is taken: one that does not verify takes nothing.
#[test]
fn a_decision_that_does_not_verify_consumes_no_use_of_the_approval() {
    let e = env();
    let input = fixture("claude-code-pre-tool-use-bash-git-push.json");
    let id = "cc-toolu_01PushMain";
    // The call is published, and approved while no hook waits for it.
    let mut child = spawn_hook(&e, "claude-code", &input, &["--wait", "60"]);
    wait_for_packet(&e, id);
    wait_for_hold(&e, id);
    child.kill().expect("kill");
    let _ = child.wait();
    std::fs::remove_file(e.spool().join("uses").join(format!("until+{id}.use"))).expect("the wait's record");
    let o = e.run(&["approve", "--yes", id]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // Its decision file no longer verifies (another signature).
    let path = e.spool().join("decisions").join(format!("{id}.json"));
    let mut file: Value = serde_json::from_slice(&std::fs::read(&path).expect("decision")).expect("json");
    let sig = file.pointer_mut("/signature/signature").expect("the decision's signature");
    let forged = match sig.as_str() {
        Some(s) if s.starts_with('A') => format!("B{}", &s[1..]),
        Some(s) => format!("A{}", &s[1..]),
        None => panic!("a signature string: {sig}"),
    };
    *sig = json!(forged);
    std::fs::write(&path, serde_json::to_vec(&file).expect("json")).expect("write");
    let (decision, reason) = pre_tool_use(&hook(&e, "claude-code", &input, &["--wait", "2"]));
    assert_eq!(decision, "deny", "{reason}");
    assert!(reason.contains("does not verify"), "{reason}");
    let used = std::fs::read_dir(e.spool().join("uses"))
        .expect("uses")
        .filter_map(Result::ok)
        .any(|f| f.file_name().to_string_lossy().starts_with("approval+"));
    assert!(!used, "the approval's use was taken by a decision that does not verify");
}

// Issue "what the host really runs": a closed stdout turned a deny into exit 0 with no output,
// which Codex reads as allow. An answer that cannot reach the host exits 2.
#[test]
fn an_answer_that_cannot_reach_the_host_exits_2() {
    let e = env();
    let event = e.dir.path().join("event.json");
    std::fs::write(&event, fixture("codex-pre-tool-use-bash-git-push.json")).expect("event");
    for redirect in [">&-", ">/dev/null"] {
        let line = format!("exec \"$0\" hook codex --wait 0.2 < {} {redirect}", event.display());
        let o = std::process::Command::new("sh")
            .args(["-c", &line, cli_env::BIN])
            .env("WARRANT_CONFIG", e.config())
            .env("WARRANT_SPOOL", e.spool())
            .env("WARRANT_PRINCIPAL", "alice")
            .output()
            .expect("sh");
        assert_eq!(o.status.code(), Some(2), "stdout {redirect}: {}", text(&o));
        assert!(String::from_utf8_lossy(&o.stderr).contains("cannot reach the host"), "{}", text(&o));
    }
}

// Issue "what the host really runs": a hook event of 14.7 MB (a nested array in `tool_input`)
// left a 1.9 GB packet, the indentation of pretty JSON growing with the nesting; forty such calls
// fill a disk. What a hook writes is bounded: never larger than the spool's 1 MiB per file, and
// never amplified; a call past that is denied with the reason and writes nothing.
#[test]
fn a_hook_never_writes_more_than_the_spools_limit_whatever_the_event_nests() {
    let e = env();
    let mut nested = json!((0..60_000).collect::<Vec<u32>>());
    for _ in 0..100 {
        nested = json!([nested]);
    }
    let event = |id: &str, input: Value| {
        json!({
            "session_id": "s-big", "cwd": "/home/user/project", "hook_event_name": "PreToolUse",
            "tool_name": "mcp__shop__upload", "tool_input": input, "tool_use_id": id,
        })
        .to_string()
        .into_bytes()
    };
    let deep = event("toolu_deep", json!({"rows": nested}));
    let (decision, reason) = pre_tool_use(&hook(&e, "claude-code", &deep, &["--wait", "0.2"]));
    assert_eq!(decision, "deny", "{reason}");
    let packet = e.spool().join("packets/cc-toolu_deep.json");
    let written = std::fs::metadata(&packet).expect("the packet is written").len();
    assert!(written <= 2 * deep.len() as u64, "{written} bytes written for a {}-byte event", deep.len());
    let listed = e.run(&["list", "--json"]);
    let v: Value = serde_json::from_slice(&listed.stdout).expect("list");
    assert_eq!(v["invalid"], json!([]), "{v}");
    // Over the limit even compact: denied with the reason, nothing written.
    let big = event("toolu_big", json!({"blob": "x".repeat(1_200_000)}));
    let (decision, reason) = pre_tool_use(&hook(&e, "claude-code", &big, &["--wait", "0.2"]));
    assert_eq!(decision, "deny", "{reason}");
    assert!(reason.contains("the most a spool file may hold"), "{reason}");
    assert!(!e.spool().join("packets/cc-toolu_big.json").exists());
}

// Issue "what the host really runs": Codex's `exec_command` with `workdir` set to `~/.ssh` ran
// `cat id_ed25519` with no packet, and in warrant's configuration directory `cat *.key` returned
// the principal's key. Codex moves `workdir` into the event's `cwd`: the command is governed as
// run there, its words resolved against it, so both wait for the principal.
#[test]
fn a_codex_command_is_governed_in_the_working_directory_it_runs_in() {
    let e = env();
    let home = e.dir.path().join("home");
    let ssh = home.join(".ssh");
    std::fs::create_dir_all(&ssh).expect("mkdir");
    std::fs::write(ssh.join("id_ed25519"), "-----BEGIN OPENSSH PRIVATE KEY-----\n").expect("key");
    let codex = |id: &str, cwd: &std::path::Path, command: &str| {
        let event = json!({
            "session_id": "019a-codex-session", "cwd": cwd.to_str().expect("utf-8"), "permission_mode": "default",
            "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": command},
            "tool_use_id": id,
        });
        let mut child = e
            .cmd(&["hook", "codex", "--wait", "0.3"])
            .env("HOME", &home)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        child.stdin.take().expect("stdin").write_all(event.to_string().as_bytes()).expect("event");
        child.wait_with_output().expect("hook")
    };
    for (id, cwd, command) in [("call_ssh", ssh.clone(), "cat id_ed25519"), ("call_cfg", e.config(), "cat *.key")] {
        let o = codex(id, &cwd, command);
        let (decision, reason) = pre_tool_use(&o);
        assert_eq!(decision, "deny", "{command} in {}: {reason}", cwd.display());
        let packet =
            std::fs::read_to_string(e.spool().join("packets").join(format!("cx-{id}.json"))).expect("a packet");
        assert!(packet.contains("protected"), "{packet}");
    }
    // A plain directory: `cat` is a read, and runs.
    let o = codex("call_plain", e.dir.path(), "cat notes.txt");
    assert_eq!((o.status.code(), o.stdout.as_slice()), (Some(0), &b""[..]), "{}", text(&o));
}

// Issue "what the host really runs": after the principal approved `git commit --allow-empty`
// (with a tty), git opened vi and the model typed `:!touch pwned` through Codex's `write_stdin`,
// which sends no hook event; in a `trusted` notebook it needed no approval at all. A command that
// may start an interactive program waits for the principal, with that reason, in any notebook.
#[test]
fn a_command_that_may_start_an_interactive_program_waits_for_the_principal() {
    let e = env();
    trust_the_project(&e);
    let codex = |id: &str, command: &str| {
        let event = json!({
            "session_id": "019a-codex-session", "cwd": "/home/user/project", "permission_mode": "default",
            "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": command},
            "tool_use_id": id,
        });
        hook(&e, "codex", event.to_string().as_bytes(), &["--wait", "0.3"])
    };
    for (id, command) in
        [("call_commit", "git commit --allow-empty"), ("call_vi", "vi notes.md"), ("call_py", "python3")]
    {
        let o = codex(id, command);
        let (decision, reason) = pre_tool_use(&o);
        assert_eq!(decision, "deny", "{command}: {reason}");
        let packet =
            std::fs::read_to_string(e.spool().join("packets").join(format!("cx-{id}.json"))).expect("a packet");
        assert!(packet.contains("may start") && packet.contains("not governed"), "{packet}");
    }
    // Given its message, the commit is what the table and the notebook say: it runs.
    let o = codex("call_commit_m", "git commit --allow-empty -m 'empty'");
    assert_eq!((o.status.code(), o.stdout.as_slice()), (Some(0), &b""[..]), "{}", text(&o));
}

// Issue "what the host really runs": Claude Code 2.1 sends `PostToolUseFailure` for a call that
// ran and failed, and no receipt was written, so "every call that ran is on record" was false;
// Codex reports `tool_response` as text, and its exit status was not recorded. `warrant setup`
// registers the event for Claude Code, and both failures are receipts of calls that ran.
#[test]
fn a_call_that_ran_and_failed_leaves_a_receipt_on_both_hosts() {
    let e = env();
    let receipt_of = |packet: &str| -> Value {
        std::fs::read_dir(e.spool().join("receipts"))
            .expect("receipts")
            .map(|f| {
                serde_json::from_slice::<Value>(&std::fs::read(f.expect("entry").path()).expect("read")).expect("json")
            })
            .find(|r| r["packet_id"] == json!(packet))
            .unwrap_or_else(|| panic!("no receipt for {packet}"))
    };
    let o = hook(&e, "claude-code", &fixture("claude-code-post-tool-use-failure-bash.json"), &[]);
    assert_eq!((o.status.code(), o.stdout.as_slice()), (Some(0), &b""[..]), "{}", text(&o));
    let r = receipt_of("cc-toolu_01CargoTest");
    assert!(r.to_string().contains("ran and failed"), "{r}");
    let mut codex: Value = serde_json::from_slice(&fixture("codex-post-tool-use-bash.json")).expect("json");
    codex["tool_use_id"] = json!("call_fail01");
    codex["tool_response"] = json!("Exit code: 1\nWall time: 0.2 seconds\nOutput:\nerror: no such file\n");
    let o = hook(&e, "codex", codex.to_string().as_bytes(), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let r = receipt_of("cx-call_fail01");
    assert_eq!(r["tool_call"]["exit_code"], json!(1), "{r}");
    assert!(r.to_string().contains("reported an error"), "{r}");
    // `warrant setup claude-code` registers it; Codex, which does not send it, is not given it.
    let dir = e.dir.path().join("proj");
    std::fs::create_dir_all(&dir).expect("dir");
    let o = e.run(&["setup", "claude-code", "--dir", dir.to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: Value =
        serde_json::from_slice(&std::fs::read(dir.join(".claude/settings.json")).expect("settings")).expect("json");
    assert!(v["hooks"]["PostToolUseFailure"][0]["hooks"][0]["command"].is_string(), "{v}");
    let o = e.run(&["setup", "codex", "--dir", dir.to_str().expect("utf-8"), "--print"]);
    let v: Value = serde_json::from_slice(&o.stdout).expect("json");
    assert!(v["hooks"].get("PostToolUseFailure").is_none(), "{v}");
}

// Issue "what the host really runs": the tool table was for an older Claude Code. 2.1's
// `TaskCreate`, `TaskList` and `Agent` were held as `tool.call.external`, so every to-do update
// needed the principal; `WebSearch` was an unmetered `safe` channel out. Each of today's tools is
// in the table by what it does: the host's bookkeeping runs, and a search or a fetch is a class
// of its own that the principal sees (and graduates, and limits).
#[test]
fn claude_codes_tools_are_classified_by_what_they_do() {
    let e = env();
    let event = |id: &str, tool: &str, input: Value| {
        json!({
            "session_id": "s-tools", "cwd": "/home/user/project", "hook_event_name": "PreToolUse",
            "tool_name": tool, "tool_input": input, "tool_use_id": id,
        })
        .to_string()
        .into_bytes()
    };
    for (id, tool, input) in [
        ("toolu_t1", "TaskCreate", json!({"subject": "write the tests", "description": "…"})),
        ("toolu_t2", "TaskList", json!({})),
        ("toolu_t3", "TaskUpdate", json!({"taskId": "1", "status": "completed"})),
        ("toolu_t4", "Agent", json!({"description": "explore", "prompt": "find the parser"})),
        ("toolu_t5", "Skill", json!({"skill": "pdf"})),
    ] {
        let (decision, reason) = pre_tool_use(&hook(&e, "claude-code", &event(id, tool, input), &["--wait", "0.3"]));
        assert_eq!(decision, "allow", "{tool}: {reason}");
    }
    for (id, tool, class) in [("toolu_w1", "WebSearch", "web.search"), ("toolu_w2", "WebFetch", "web.fetch")] {
        let input = json!({"query": "warrant", "url": "https://example.com/"});
        let (decision, reason) = pre_tool_use(&hook(&e, "claude-code", &event(id, tool, input), &["--wait", "0.3"]));
        assert_eq!(decision, "deny", "{tool} waits for the principal: {reason}");
        let packet: Value = serde_json::from_slice(
            &std::fs::read(e.spool().join("packets").join(format!("cc-{id}.json"))).expect("a packet"),
        )
        .expect("json");
        assert_eq!(packet["action_class"], json!(class), "{packet}");
    }
}

// Issue "what the host really runs": calls that ran on their own (a trusted notebook, a graduated
// class) still showed as pending, and the principal could sign a refusal of one that had run.
// The hook records that it let the call run: the call leaves Pending, `list` says it ran, and
// neither an approval nor a refusal is signed for it; a retry of the same call is answered alike.
#[test]
fn a_call_that_ran_on_its_own_is_not_pending_and_not_the_principals_to_decide() {
    let e = env();
    trust_the_project(&e);
    let input = fixture("claude-code-pre-tool-use-edit.json");
    assert_eq!(pre_tool_use(&hook(&e, "claude-code", &input, &[])).0, "allow");
    let listed = e.run(&["list", "--json"]);
    let v: Value = serde_json::from_slice(&listed.stdout).expect("list");
    let p = &v["packets"][0];
    assert_eq!(p["ran"], json!(true), "{v}");
    assert!(
        String::from_utf8_lossy(&e.run(&["list"]).stdout).lines().nth(1).is_some_and(|l| l.starts_with("ran")),
        "the plain list says so"
    );
    let id = p["packet_id"].as_str().expect("id").to_owned();
    let o = e.run(&["refuse", "--yes", &id, "--reason", "too late"]);
    assert_ne!(o.status.code(), Some(0), "a refusal of a call that ran was signed: {}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("it ran"), "{}", text(&o));
    assert_eq!(
        std::fs::read_to_string(e.spool().join("chain.jsonl")).unwrap_or_default().lines().count(),
        1,
        "only the trust change"
    );
    assert_eq!(pre_tool_use(&hook(&e, "claude-code", &input, &[])).0, "allow", "the retry is answered alike");
}

// Issue "what the host really runs": after a PreToolUse approval, Claude Code's `ask` rule (or a
// Codex escalation) sent a PermissionRequest for the same call, and it became a second packet for
// the principal. The request is answered by the call's PreToolUse answer, once; a later identical
// request is its own packet again.
#[test]
fn the_permission_request_for_an_approved_call_is_answered_by_its_approval_once() {
    let e = env();
    let request = fixture("claude-code-permission-request-bash.json");
    let mut pre: Value = serde_json::from_slice(&request).expect("json");
    pre["hook_event_name"] = json!("PreToolUse");
    pre["tool_use_id"] = json!("toolu_clean01");
    pre.as_object_mut().expect("object").remove("permission_suggestions");
    let child = spawn_hook(&e, "claude-code", pre.to_string().as_bytes(), &["--wait", "30"]);
    wait_for_packet(&e, "cc-toolu_clean01");
    assert_eq!(e.run(&["approve", "--yes", "cc-toolu_clean01"]).status.code(), Some(0));
    assert_eq!(pre_tool_use(&child.wait_with_output().expect("hook")).0, "allow");
    let packets = || std::fs::read_dir(e.spool().join("packets")).map_or(0, |d| d.count());
    assert_eq!(packets(), 1);
    // The host asks for the same call: answered by the approval, no second packet.
    let o = hook(&e, "claude-code", &request, &["--wait", "0.2"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v = stdout_json(&o);
    assert_eq!(v["hookSpecificOutput"]["decision"]["behavior"], json!("allow"), "{v}");
    assert_eq!(packets(), 1, "one call, one packet");
    // Once: the same request again is a request of its own, for the principal.
    let o = hook(&e, "claude-code", &request, &["--wait", "0.2"]);
    let v = stdout_json(&o);
    assert_eq!(v["hookSpecificOutput"]["decision"]["behavior"], json!("deny"), "{v}");
    assert_eq!(packets(), 2);
}

/// The events Claude Code 2.1.197 and Codex 0.171.0 really sent, recorded by
/// `tests/hosts/record_events.sh` (tests/fixtures/hooks/hosts/): each gets an answer in its
/// host's format — a read allowed, a write held (here until a one-second timeout), an outcome
/// recorded as a receipt, the failure as a failure.
#[test]
fn every_event_the_hosts_really_sent_is_answered_in_their_format() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hooks/hosts");
    let mut seen = 0;
    for (host, dir) in [("claude-code", "claude-code-2.1.197"), ("codex", "codex-0.171.0")] {
        let e = env();
        let mut files: Vec<_> =
            std::fs::read_dir(root.join(dir)).expect("fixtures").map(|d| d.expect("entry").path()).collect();
        files.sort();
        for path in files {
            let mut event: Value = serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("JSON");
            if host == "codex" {
                // The recorded transcript is gone: its line for this call, as Codex 0.171.0
                // writes it (the exit status a command's PostToolUse does not carry).
                let command = event["tool_input"]["command"].as_str().unwrap_or_default();
                let status = if command.contains("/nonexistent") { 2 } else { 0 };
                let line = json!({"type": "event_msg", "payload": {"type": "item_completed", "item": {
                    "type": "CommandExecution", "id": event["tool_use_id"], "status": "completed", "exit_code": status}}});
                let transcript = e.dir.path().join("rollout.jsonl");
                std::fs::write(&transcript, format!("{{\"type\":\"session_meta\"}}\n{line}\n")).expect("transcript");
                event["transcript_path"] = json!(transcript);
            }
            let (kind, tool) =
                (event["hook_event_name"].as_str().expect("event"), event["tool_name"].as_str().expect("tool"));
            let o = hook(&e, host, event.to_string().as_bytes(), &["--wait", "1"]);
            let what = format!("{}: {}", path.display(), text(&o));
            assert_eq!(o.status.code(), Some(0), "{what}");
            match (kind, tool, host) {
                ("PreToolUse", "Read", _) => assert_eq!(pre_tool_use(&o).0, "allow", "{what}"),
                ("PreToolUse", "Bash", "codex") => assert!(o.stdout.is_empty(), "an allow is empty stdout: {what}"),
                ("PreToolUse", "Bash", _) => assert_eq!(pre_tool_use(&o).0, "allow", "`ls` is a read: {what}"),
                ("PreToolUse", "Write" | "apply_patch", _) => {
                    let (decision, reason) = pre_tool_use(&o);
                    assert_eq!(decision, "deny", "{what}");
                    assert!(reason.contains("timeout"), "held, then the wait ended: {what}");
                }
                ("PostToolUse" | "PostToolUseFailure", _, _) => assert!(o.stdout.is_empty(), "{what}"),
                other => panic!("no expectation for {other:?}: record_events.sh recorded something new"),
            }
            seen += 1;
        }
        let receipts: Vec<Value> = std::fs::read_dir(e.spool().join("receipts"))
            .expect("receipts")
            .map(|d| serde_json::from_slice(&std::fs::read(d.expect("entry").path()).expect("read")).expect("JSON"))
            .collect();
        let failed: Vec<_> = receipts.iter().filter(|r| r["note"] != "the tool ran").collect();
        assert_eq!(failed.len(), 1, "{host}: one recorded call failed: {receipts:#?}");
    }
    assert!(seen >= 12, "{seen} events");
}

/// Codex sends a patch as the whole input of `apply_patch` (`tool_input.command`): the files
/// its headers name are the files it writes, resolved in the call's directory, so a patch to
/// warrant's own policy waits for the principal even in a trusted notebook, where any other
/// patch runs at once.
#[test]
fn a_codex_patch_to_a_protected_file_waits_even_in_a_trusted_notebook() {
    let e = env();
    let project = e.dir.path().join("project");
    std::fs::create_dir_all(&project).expect("project");
    let notebook = warrant::protocol::calls::notebook_for_dir(project.to_str().expect("utf-8"));
    assert_eq!(e.run(&["trust", "set", &notebook, "trusted", "--reason", "mine"]).status.code(), Some(0));
    let recorded = fixture("hosts/codex-0.171.0/02-PreToolUse-apply_patch.json");
    let patch = |id: &str, file: &str| {
        let mut event: Value = serde_json::from_slice(&recorded).expect("JSON");
        event["cwd"] = json!(project);
        event["tool_use_id"] = json!(id);
        event["tool_input"]["command"] =
            json!(format!("*** Begin Patch\n*** Update File: {file}\n@@\n-a\n+b\n*** End Patch\n"));
        hook(&e, "codex", event.to_string().as_bytes(), &["--wait", "0.3"])
    };
    let o = patch("call_plain", "src/lib.rs");
    assert_eq!((o.status.code(), o.stdout.as_slice()), (Some(0), &b""[..]), "a trusted patch runs: {}", text(&o));
    let o = patch("call_policy", "../config/policy.toml");
    let (decision, reason) = pre_tool_use(&o);
    assert_eq!(decision, "deny", "{reason}");
    let packet = std::fs::read_to_string(e.spool().join("packets/cx-call_policy.json")).expect("a packet");
    assert!(packet.contains(&e.config().join("policy.toml").display().to_string()), "the resolved file: {packet}");
}

/// The proposed action of the packet `id` in `e`'s spool, with its `input` changed by `edit`,
/// written to a file for `approve --correct`.
fn corrected_action(e: &Env, id: &str, edit: impl FnOnce(&mut Value)) -> std::path::PathBuf {
    let bytes = std::fs::read(e.spool().join("packets").join(format!("{id}.json"))).expect("the packet");
    let packet: Value = serde_json::from_slice(&bytes).expect("JSON");
    let mut action = packet["proposed_action"].clone();
    edit(&mut action["input"]);
    let path = e.dir.path().join(format!("{id}.corrected.json"));
    std::fs::write(&path, serde_json::to_vec_pretty(&action).expect("JSON")).expect("write the correction");
    path
}

/// The held `git push` of `host`'s fixture (packet `id`), approved as corrected to push
/// `release-2026-11`: `approve`'s output and the hook's answer, both exit 0.
fn push_corrected_to_release(e: &Env, host: &str, id: &str) -> (Output, Output) {
    let child = spawn_hook(e, host, &fixture(&format!("{host}-pre-tool-use-bash-git-push.json")), &[]);
    wait_for_packet(e, id);
    let file = corrected_action(e, id, |input| input["command"] = json!("git push origin release-2026-11"));
    let approved = e.run(&["approve", "--yes", id, "--correct", file.to_str().expect("utf-8")]);
    assert_eq!(approved.status.code(), Some(0), "{}", text(&approved));
    let answered = child.wait_with_output().expect("hook");
    assert_eq!(answered.status.code(), Some(0), "{}", text(&answered));
    (approved, answered)
}

// Issue 35: the principal corrects a held `git push` (the branch) and approves the correction.
// Claude Code's hook allows the call with the corrected input as `updatedInput` (the host runs
// that); Codex's hooks cannot change a call's input, so its call is refused with the corrected
// input in the reason for the model, in exactly the three documented fields.
#[test]
fn a_held_call_approved_as_corrected_runs_as_corrected_in_claude_code_and_is_told_to_codex() {
    let e = env();
    let (approved, o) = push_corrected_to_release(&e, "claude-code", "cc-toolu_01PushMain");
    let out = String::from_utf8_lossy(&approved.stdout);
    assert!(out.contains("-     \"command\": \"git push origin main\","), "the difference is printed: {out}");
    assert!(out.contains("+     \"command\": \"git push origin release-2026-11\","), "{out}");
    assert!(out.contains("approved as corrected (minor_edit"), "{out}");
    let v = stdout_json(&o);
    let out = &v["hookSpecificOutput"];
    assert_eq!(out["permissionDecision"], json!("allow"), "{v}");
    assert_eq!(
        out["updatedInput"],
        json!({"command": "git push origin release-2026-11", "description": "Push the branch"}),
        "the whole corrected input, which the host runs: {v}"
    );
    assert!(out["permissionDecisionReason"].as_str().is_some_and(|r| r.contains("approved as corrected by alice")));
    // Found by review: the correction ran there; a pointer the agent writes for the same
    // corrected call does not make it run again.
    let corrected = warrant::protocol::calls::ToolCall {
        host: "claude-code".into(),
        agent: "claude-code".into(),
        session: Some("abc123-session".into()),
        tool: "Bash".into(),
        input: json!({"command": "git push origin release-2026-11", "description": "Push the branch"}),
        notebook: String::new(),
        cwd: None,
        workdir: None,
        annotations: Value::Null,
    };
    let key = warrant::protocol::calls::call_key(&corrected);
    warrant::store::spool::record_corrected_call(
        &warrant::store::spool::Spool::new(e.spool()),
        &key,
        "cc-toolu_01PushMain",
    )
    .expect("the agent's pointer");
    let mut again: Value =
        serde_json::from_slice(&fixture("claude-code-pre-tool-use-bash-git-push.json")).expect("JSON");
    again["tool_input"] = corrected.input.clone();
    again["tool_use_id"] = json!("toolu_02Again");
    pace(&e);
    let (decision, reason) = pre_tool_use(&hook(&e, "claude-code", again.to_string().as_bytes(), &["--wait", "1"]));
    assert_eq!(decision, "deny", "a correction runs once: {reason}");
    assert!(reason.contains("consumed") && reason.contains("already ran"), "{reason}");

    let (_, o) = push_corrected_to_release(&e, "codex", "cx-call_push01");
    let v = stdout_json(&o);
    let reason = v["hookSpecificOutput"]["permissionDecisionReason"].as_str().expect("reason").to_owned();
    assert_eq!(
        v,
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": reason}}),
        "only the documented fields: Codex runs a call whose hook answered anything else"
    );
    assert!(reason.contains(r#"{"command":"git push origin release-2026-11"}"#), "{reason}");
    assert!(reason.contains("make the call again with exactly this input"), "{reason}");
    // The model's next call with exactly the corrected input runs (Codex: empty stdout, exit 0),
    // once; the same call again is a new request, held for the principal.
    let mut again: Value = serde_json::from_slice(&fixture("codex-pre-tool-use-bash-git-push.json")).expect("JSON");
    again["tool_input"]["command"] = json!("git push origin release-2026-11");
    again["tool_use_id"] = json!("call_push02");
    let o = hook(&e, "codex", again.to_string().as_bytes(), &[]);
    assert_eq!((o.status.code(), o.stdout.is_empty()), (Some(0), true), "the corrected call runs: {}", text(&o));
    again["tool_use_id"] = json!("call_push03");
    pace(&e);
    let o = hook(&e, "codex", again.to_string().as_bytes(), &["--wait", "1"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("\"deny\""), "once only: {}", text(&o));
    // Another agent's call (another session) with the same input is not the correction.
    again["tool_use_id"] = json!("call_push04");
    again["session_id"] = json!("another-session");
    pace(&e);
    let o = hook(&e, "codex", again.to_string().as_bytes(), &["--wait", "1"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("\"deny\""), "{}", text(&o));

    // Both are in the chain as the principal's corrections: `minor_edit` evidence for code.push.
    let chain = std::fs::read_to_string(e.spool().join("chain.jsonl")).expect("chain");
    let labels: Vec<String> = chain
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("record"))
        .filter_map(|r| r["metadata"]["tg_receipt"]["label"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(labels, ["minor_edit", "minor_edit"], "{chain}");
    let o = e.run(&["verify"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

// A correction that is not JSON, is empty, names another tool or another working directory, or
// turns the call into another action class is refused before anything is signed: the chain is
// unchanged and the packet still waits.
#[test]
fn a_correction_that_is_not_json_empty_or_another_action_signs_nothing() {
    let e = env();
    let child =
        spawn_hook(&e, "claude-code", &fixture("claude-code-pre-tool-use-bash-git-push.json"), &["--wait", "60"]);
    let id = "cc-toolu_01PushMain";
    wait_for_packet(&e, id);
    let bad = e.dir.path().join("bad.json");
    let tries: Vec<(String, &str)> = vec![
        ("{\"tool\": \"Bash\",".into(), "not valid JSON"),
        ("{}".into(), "the correction is empty"),
        (std::fs::read_to_string(corrected_action(&e, id, |i| *i = json!({}))).expect("read"), "empty"),
        (
            std::fs::read_to_string(corrected_action(&e, id, |i| i["command"] = json!("git status"))).expect("read"),
            "changes the action's class from `code.push`",
        ),
    ];
    let mut other_tool: Value = serde_json::from_str(&tries[3].0).expect("JSON");
    other_tool["tool"] = json!("Write");
    other_tool["input"]["command"] = json!("git push origin main");
    let mut other_dir = other_tool.clone();
    other_dir["tool"] = json!("Bash");
    other_dir["cwd"] = json!("/");
    let tries =
        tries.into_iter().chain([(other_tool.to_string(), "not its `tool`"), (other_dir.to_string(), "not its `cwd`")]);
    for (correction, why) in tries {
        std::fs::write(&bad, &correction).expect("write");
        let o = e.run(&["approve", "--yes", id, "--correct", bad.to_str().expect("utf-8")]);
        assert_eq!(o.status.code(), Some(1), "{correction}: {}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(why) && err.contains("nothing was signed"), "{correction}: {err}");
    }
    assert_eq!(std::fs::read_to_string(e.spool().join("chain.jsonl")).unwrap_or_default(), "", "nothing signed");
    let o = e.run(&["refuse", "--yes", id, "--reason", "done testing"]);
    assert_eq!(o.status.code(), Some(0), "still pending: {}", text(&o));
    let o = child.wait_with_output().expect("hook");
    assert_eq!(pre_tool_use(&o).0, "deny");
}

// Issue 35: the preconditions an approval as corrected records are the corrected call's: a write
// corrected to another file re-checks that file (and one outside the precondition roots cannot be
// observed, so that correction is refused and nothing is signed).
#[test]
fn an_approval_as_corrected_records_the_preconditions_of_the_corrected_call() {
    let e = env();
    let project = e.dir.path().join("project");
    pin_writes(&e, &project);
    let notes = project.join("notes.txt");
    std::fs::write(&notes, "v1\n").expect("write");
    let event = write_event("toolu_fix", &project, notes.to_str().expect("utf-8"), "v2\n");
    let child = spawn_hook(&e, "claude-code", &event, &["--wait", "30"]);
    wait_for_packet(&e, "cc-toolu_fix");
    let outside = e.dir.path().join("elsewhere.txt");
    let file = corrected_action(&e, "cc-toolu_fix", |input| input["file_path"] = json!(outside));
    let o = e.run(&["approve", "--yes", "cc-toolu_fix", "--correct", file.to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(1), "the corrected file cannot be observed: {}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("outside the precondition roots"), "{}", text(&o));
    let other = project.join("other.txt");
    let file = corrected_action(&e, "cc-toolu_fix", |input| input["file_path"] = json!(other));
    let o = e.run(&["approve", "--yes", "cc-toolu_fix", "--correct", file.to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let decision: Value =
        serde_json::from_slice(&std::fs::read(e.spool().join("decisions/cc-toolu_fix.json")).expect("decision"))
            .expect("JSON");
    let recorded = &decision["document"]["preconditions"];
    let paths: Vec<&Value> =
        recorded.as_array().expect("preconditions").iter().map(|p| &p["parameters"]["path"]).collect();
    assert!(!paths.is_empty() && paths.iter().all(|p| **p == json!(other)), "the corrected file: {recorded}");
    let (decision, reason) = pre_tool_use_corrected(&child.wait_with_output().expect("hook"));
    assert_eq!(decision, "allow", "{reason}");
}

/// Claude Code's PreToolUse answer to a call approved as corrected: its decision and reason
/// (with `updatedInput` beside them), exit 0.
fn pre_tool_use_corrected(o: &Output) -> (String, String) {
    assert_eq!(o.status.code(), Some(0), "{}", text(o));
    let v = stdout_json(o);
    let out = &v["hookSpecificOutput"];
    assert!(out["updatedInput"].is_object(), "{v}");
    let reason = out["permissionDecisionReason"].as_str().expect("reason").to_owned();
    (out["permissionDecision"].as_str().expect("decision").to_owned(), reason)
}
