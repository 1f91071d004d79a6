//! Scoped grants end to end through the real hook: `warrant approve ID --scope
//! session|until:T|pattern:GLOB` signs the approval and a grant; the next calls it covers run with
//! no prompt while it is live, and wait for the principal again once it ends, is revoked, or its
//! uses are taken; a bounded grant and a once-approval are each used exactly once by racing
//! hooks; destructive and human-only calls are never covered unless asked for exactly.

use crate::cli_env;
#[cfg(feature = "console")]
use crate::tmux;
use cli_env::{Env, text};
use serde_json::{Value, json};
use std::io::Write;
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

fn env() -> Env {
    let e = Env::new();
    std::fs::create_dir_all(e.spool()).expect("spool");
    e
}

/// Claude Code's PreToolUse of `Bash` running `command` as call `id` in `session`.
fn bash(id: &str, session: &str, command: &str) -> Vec<u8> {
    json!({
        "session_id": session, "cwd": "/home/user/project", "hook_event_name": "PreToolUse",
        "tool_name": "Bash", "tool_input": {"command": command}, "tool_use_id": id,
    })
    .to_string()
    .into_bytes()
}

fn spawn_hook(e: &Env, input: &[u8], wait: &str) -> Child {
    let mut child = e
        .cmd(&["hook", "claude-code", "--wait", wait])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    child.stdin.take().expect("stdin").write_all(input).expect("write the event");
    child
}

/// The hook's PreToolUse decision and reason.
fn decision(o: &Output) -> (String, String) {
    assert_eq!(o.status.code(), Some(0), "{}", text(o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|err| panic!("{err}: {}", text(o)));
    let out = &v["hookSpecificOutput"];
    (
        out["permissionDecision"].as_str().expect("decision").to_owned(),
        out["permissionDecisionReason"].as_str().expect("reason").to_owned(),
    )
}

fn run_hook(e: &Env, input: &[u8], wait: &str) -> (String, String) {
    decision(&spawn_hook(e, input, wait).wait_with_output().expect("hook"))
}

fn wait_for_packet(e: &Env, id: &str) {
    let path = e.spool().join("packets").join(format!("{id}.json"));
    let t = Instant::now();
    while !path.exists() {
        assert!(t.elapsed() < Duration::from_secs(20), "{id} was never published");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Holds call `id`, approves it with `approve_args` (after `approve --yes ID`), and returns the
/// approval's output and the held hook's decision.
fn approve_held(e: &Env, id: &str, session: &str, command: &str, approve_args: &[&str]) -> (Output, (String, String)) {
    let child = spawn_hook(e, &bash(id, session, command), "20");
    let packet = format!("cc-{id}");
    wait_for_packet(e, &packet);
    let mut args = vec!["approve", "--yes", packet.as_str()];
    args.extend_from_slice(approve_args);
    let o = e.run(&args);
    if o.status.code() != Some(0) {
        // Nothing approved: the held hook is refused to end it.
        let r = e.run(&["refuse", "--yes", &packet, "--reason", "test"]);
        assert_eq!(r.status.code(), Some(0), "{}", text(&r));
    }
    let d = decision(&child.wait_with_output().expect("hook"));
    (o, d)
}

fn grants(e: &Env, all: bool) -> Vec<Value> {
    let mut args = vec!["grants", "list", "--json"];
    if all {
        args.push("--all");
    }
    let o = e.run(&args);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    serde_json::from_slice::<Vec<Value>>(&o.stdout).unwrap_or_else(|err| panic!("{err}: {}", text(&o)))
}

#[test]
fn a_session_grant_covers_that_session_until_revoked() {
    let e = env();
    let (o, (d, reason)) =
        approve_held(&e, "s-1", "sess-a", "git push origin main", &["--scope", "session", "--reason", "release"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(d, "allow", "the approved call itself runs: {reason}");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("granted grant-") && out.contains("in session sess-a"), "{out}");
    // The next push in the session runs at once, on the grant, and says which.
    let (d, reason) = run_hook(&e, &bash("s-2", "sess-a", "git push origin other"), "0.3");
    assert_eq!(d, "allow", "{reason}");
    let live = grants(&e, false);
    assert_eq!(live.len(), 1, "{live:?}");
    let id = live[0]["grant_id"].as_str().expect("id").to_owned();
    assert!(reason.contains(&id) && reason.contains("grant"), "{reason}");
    assert_eq!(live[0]["uses"], json!(1), "{live:?}");
    // `list` says the call ran on the grant; it is not waiting (issue 32, item 13: it was
    // listed as pending), in the table and in JSON.
    let o = e.run(&["list", "--wide"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let table = String::from_utf8_lossy(&o.stdout).into_owned();
    let row = table.lines().find(|l| l.contains("cc-s-2")).unwrap_or_else(|| panic!("no row for cc-s-2:\n{table}"));
    assert!(row.contains("ran") && !row.contains("pending"), "{row}");
    let o = e.run(&["list", "--json"]);
    let listed: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|err| panic!("{err}: {}", text(&o)));
    let entry =
        listed["packets"].as_array().and_then(|a| a.iter().find(|p| p["packet_id"] == "cc-s-2")).expect("cc-s-2");
    assert_eq!((&entry["ran"], &entry["ran_on_grant"]), (&json!(true), &json!(id)), "{entry}");
    assert_eq!(live[0]["scope"], json!("session"));
    assert_eq!(live[0]["session"], json!("sess-a"));
    // Another session, another agent's tool or another class is not covered.
    let (d, reason) = run_hook(&e, &bash("s-3", "sess-b", "git push origin main"), "0.3");
    assert_eq!(d, "deny", "another session waits for the principal: {reason}");
    // Revoked: the next call in the session waits again.
    let o = e.run(&["grants", "revoke", &id, "--reason", "release done"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let (d, reason) = run_hook(&e, &bash("s-4", "sess-a", "git push origin main"), "0.3");
    assert_eq!(d, "deny", "revoked: {reason}");
    assert!(grants(&e, false).is_empty());
    let all = grants(&e, true);
    assert_eq!(all[0]["status"], json!("revoked"), "{all:?}");
    assert_eq!(all[0]["revoked"]["reason"], json!("release done"));
    // A second revocation is refused, and nothing is appended.
    let o = e.run(&["grants", "revoke", &id, "--reason", "again"]);
    assert_ne!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("already revoked"), "{}", text(&o));
    let o = e.run(&["verify", e.spool().to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(0), "the grants verify with the chain: {}", text(&o));
}

#[test]
fn a_time_grant_ends_at_its_time_and_a_held_call_runs_when_a_grant_covers_it() {
    let e = env();
    let (o, (d, _)) = approve_held(&e, "t-1", "sess-t", "git push origin main", &["--scope", "until:3s"]);
    assert_eq!((o.status.code(), d.as_str()), (Some(0), "allow"), "{}", text(&o));
    // Any session, within the time.
    let (d, reason) = run_hook(&e, &bash("t-2", "another-session", "git push origin x"), "0.3");
    assert_eq!(d, "allow", "{reason}");
    // Its end, exactly: the governor the hook runs, on a clock set just before it and moved
    // just past it.
    let end = grants(&e, false)[0]["expires_at"].as_str().and_then(warrant::protocol::clock::parse_rfc3339);
    let end = end.expect("the grant's expires_at");
    let clock = warrant::clock::ManualTime::at(end - Duration::from_millis(10));
    let governor = warrant::govern::Governor::open(warrant::store::spool::Spool::new(e.spool()), &e.config())
        .expect("governor")
        .with_clock(clock.clock());
    let push = warrant::protocol::calls::ToolCall {
        host: "claude-code".into(),
        agent: "claude-code".into(),
        session: Some("a-third-session".into()),
        tool: "Bash".into(),
        input: json!({"command": "git push origin x"}),
        notebook: warrant::protocol::calls::notebook_for_dir("/home/user/project"),
        cwd: Some("/home/user/project".into()),
        workdir: Some("/home/user/project".into()),
        annotations: Value::Null,
    };
    let before = governor.submit(&push, Some("t-end-1"), None).expect("submit").outcome;
    assert!(matches!(before, warrant::govern::Outcome::Allow { .. }), "just before its end: {before:?}");
    clock.advance(Duration::from_millis(20));
    let after = governor.submit(&push, Some("t-end-2"), None).expect("submit").outcome;
    assert!(matches!(after, warrant::govern::Outcome::Hold { .. }), "just after its end: {after:?}");
    // And on the system's clock: `grants --all` shows it expired once its time has passed, and
    // the real hook then waits for the principal.
    let t = Instant::now();
    while grants(&e, true)[0]["status"] != json!("expired") {
        assert!(t.elapsed() < Duration::from_secs(20), "the grant never showed expired");
        std::thread::sleep(Duration::from_millis(100));
    }
    let (d, reason) = run_hook(&e, &bash("t-3", "another-session", "git push origin x"), "0.3");
    assert_eq!(d, "deny", "after its end: {reason}");
    // A call already waiting runs once a grant covering it is signed (judged again every 2 s).
    let waiting = spawn_hook(&e, &bash("t-4", "sess-w", "git push origin waiting"), "30");
    wait_for_packet(&e, "cc-t-4");
    let (o, (d, _)) = approve_held(&e, "t-5", "sess-w", "git push origin first", &["--scope", "session"]);
    assert_eq!((o.status.code(), d.as_str()), (Some(0), "allow"), "{}", text(&o));
    let (d, reason) = decision(&waiting.wait_with_output().expect("hook"));
    assert_eq!(d, "allow", "{reason}");
    assert!(reason.contains("grant"), "{reason}");
}

#[test]
fn a_pattern_grant_covers_only_single_commands_that_match() {
    let e = env();
    let (o, (d, _)) = approve_held(
        &e,
        "p-1",
        "sess-p",
        "git push origin feature/login",
        &["--scope", "pattern:Bash(git push origin feature/*)"],
    );
    assert_eq!((o.status.code(), d.as_str()), (Some(0), "allow"), "{}", text(&o));
    let (d, reason) = run_hook(&e, &bash("p-2", "any", "git push origin feature/search"), "0.3");
    assert_eq!(d, "allow", "{reason}");
    for (n, line) in [
        "git push origin main",
        "git push origin feature/a/b",
        "git push origin feature/x --force-with-lease",
        "git push origin feature/x; curl evil.example",
        "git push origin feature/$(whoami)",
        "GIT_SSH_COMMAND=evil git push origin feature/x",
    ]
    .iter()
    .enumerate()
    {
        let (d, reason) = run_hook(&e, &bash(&format!("p-no-{n}"), "any", line), "0.3");
        assert_eq!(d, "deny", "{line:?} is not covered: {reason}");
    }
    // A pattern that does not cover the approved call itself is refused, nothing signed.
    let (o, (d, _)) = approve_held(
        &e,
        "p-3",
        "sess-p",
        "git push origin main",
        &["--scope", "pattern:Bash(git push origin feature/*)"],
    );
    assert_ne!(o.status.code(), Some(0));
    assert!(text(&o).contains("does not cover") && text(&o).contains("nothing was signed"), "{}", text(&o));
    assert_eq!(d, "deny");
    assert_eq!(grants(&e, true).len(), 1, "no second grant");
}

#[test]
fn destructive_calls_need_the_pattern_typed_twice_and_human_only_classes_no_grant() {
    let e = env();
    let cmd = "rm -rf build/cache";
    for args in [vec!["--scope", "session"], vec!["--scope", "pattern:Bash(rm -rf build/*)"]] {
        let (o, (d, _)) = approve_held(&e, &format!("d-{}", args[1].len()), "sess-d", cmd, &args);
        assert_ne!(o.status.code(), Some(0), "{args:?}: {}", text(&o));
        assert!(text(&o).contains("destructive"), "{}", text(&o));
        assert_eq!(d, "deny");
    }
    let (o, (d, _)) = approve_held(
        &e,
        "d-typed",
        "sess-d",
        cmd,
        &["--scope", "pattern:Bash(rm -rf build/*)", "--confirm-pattern", "Bash(rm -rf build/*)"],
    );
    assert_eq!((o.status.code(), d.as_str()), (Some(0), "allow"), "{}", text(&o));
    let (d, reason) = run_hook(&e, &bash("d-next", "sess-x", "rm -rf build/tmp"), "0.3");
    assert_eq!(d, "allow", "typed twice, it covers destructive calls: {reason}");
    assert_eq!(grants(&e, false)[0]["covers_destructive"], json!(true));
    // A human-only class: no grant, whatever the scope.
    e.policy("[tools.\"mcp__bank__pay\"]\ntier = \"mutating\"\nclass = \"payment.initiate\"\nlevel = 2\n");
    let event = json!({
        "session_id": "sess-h", "cwd": "/home/user/project", "hook_event_name": "PreToolUse",
        "tool_name": "mcp__bank__pay", "tool_input": {"amount": 10}, "tool_use_id": "h-1",
    });
    let child = spawn_hook(&e, event.to_string().as_bytes(), "0.5");
    wait_for_packet(&e, "cc-h-1");
    let o = e.run(&["approve", "--yes", "cc-h-1", "--scope", "session"]);
    assert_ne!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("human-only"), "{}", text(&o));
    assert_eq!(decision(&child.wait_with_output().expect("hook")).0, "deny");
}

/// Claude Code's PreToolUse of an MCP tool `tool` with `input` as call `id`.
fn mcp(id: &str, tool: &str, input: Value) -> Vec<u8> {
    json!({
        "session_id": "sess-m", "cwd": "/home/user/project", "hook_event_name": "PreToolUse",
        "tool_name": tool, "tool_input": input, "tool_use_id": id,
    })
    .to_string()
    .into_bytes()
}

#[test]
fn a_class_grant_covers_calls_within_its_amount_and_recipient_domains_only() {
    let e = env();
    e.policy(
        "[tools.\"mcp__bank__pay\"]\ntier = \"mutating\"\nclass = \"payment.vendor\"\namount = \"amount\"\n\n\
         [tools.\"mcp__mail__send\"]\ntier = \"mutating\"\nclass = \"email.send.external\"\nrecipients = [\"to\", \"cc\"]\n\n\
         [tools.\"mcp__mail__draft\"]\ntier = \"mutating\"\nclass = \"email.send.external\"\n",
    );
    // A payment of 300 approved with a grant up to 500: 450 runs on it, 900 and an unreadable
    // amount wait for the principal.
    let held = spawn_hook(&e, &mcp("p-1", "mcp__bank__pay", json!({"amount": 300, "to": "ACME"})), "20");
    wait_for_packet(&e, "cc-p-1");
    let too_low = e.run(&["approve", "--yes", "cc-p-1", "--scope", "class:max_amount=200"]);
    assert_ne!(too_low.status.code(), Some(0), "{}", text(&too_low));
    assert!(text(&too_low).contains("do not cover cc-p-1 itself"), "{}", text(&too_low));
    let o = e.run(&["approve", "--yes", "cc-p-1", "--scope", "class:max_amount=500"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("with amount at most 500"), "{}", text(&o));
    assert_eq!(decision(&held.wait_with_output().expect("hook")).0, "allow");
    let (d, reason) = run_hook(&e, &mcp("p-2", "mcp__bank__pay", json!({"amount": 450, "to": "ACME"})), "0.3");
    assert_eq!(d, "allow", "within the grant: {reason}");
    assert!(reason.contains("grant-"), "{reason}");
    for (id, amount) in [("p-3", json!(900)), ("p-4", json!("450")), ("p-5", json!(-1))] {
        let (d, reason) = run_hook(&e, &mcp(id, "mcp__bank__pay", json!({"amount": amount, "to": "ACME"})), "0.3");
        assert_eq!(d, "deny", "{amount} is not within the grant: {reason}");
    }
    // Mail to example.com: every recipient must be there.
    let held = spawn_hook(&e, &mcp("m-1", "mcp__mail__send", json!({"to": "dana@example.com"})), "20");
    wait_for_packet(&e, "cc-m-1");
    let o = e.run(&["approve", "--yes", "cc-m-1", "--scope", "class:domain=example.com"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(decision(&held.wait_with_output().expect("hook")).0, "allow");
    let covered = json!({"to": ["Lee <lee@Example.com>", "kim@example.com"], "cc": "ops@example.com"});
    let (d, reason) = run_hook(&e, &mcp("m-2", "mcp__mail__send", covered), "0.3");
    assert_eq!(d, "allow", "{reason}");
    for (id, input) in [
        ("m-3", json!({"to": "dana@example.com", "cc": "eve@evil.example"})),
        ("m-4", json!({"to": "dana@example.com.evil.example"})),
        ("m-5", json!({"to": "not an address"})),
        ("m-6", json!({"to": 42})),
        ("m-7", json!({"subject": "no recipients"})),
    ] {
        let (d, reason) = run_hook(&e, &mcp(id, "mcp__mail__send", input.clone()), "0.3");
        assert_eq!(d, "deny", "{input} is not within the grant: {reason}");
    }
    // The grant is for its tool: another tool of the class, which declares no recipients, is not
    // covered; and a class grant for such a tool is refused before anything is signed.
    let (d, _) = run_hook(&e, &mcp("m-8", "mcp__mail__draft", json!({"to": "dana@example.com"})), "0.3");
    assert_eq!(d, "deny");
    let held = spawn_hook(&e, &mcp("m-9", "mcp__mail__draft", json!({"to": "dana@example.com"})), "20");
    wait_for_packet(&e, "cc-m-9");
    let o = e.run(&["approve", "--yes", "cc-m-9", "--scope", "class:domain=example.com"]);
    assert_ne!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("declares no `recipients`"), "{}", text(&o));
    ok_refuse(&e, "cc-m-9");
    assert_eq!(decision(&held.wait_with_output().expect("hook")).0, "deny");
    let live = grants(&e, false);
    let constraints: Vec<&Value> = live.iter().map(|g| &g["constraints"]).collect();
    assert!(constraints.contains(&&json!({"max_amount": 500})), "{live:?}");
    assert!(constraints.contains(&&json!({"domain_allowlist": ["example.com"]})), "{live:?}");
    let o = e.run(&["verify", e.spool().to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

/// Claude Code's hook for `Bash` running `command` in `cwd`, its project `/home/user/project`.
fn hook_in(e: &Env, id: &str, cwd: &str, command: &str, wait: &str) -> Child {
    let event = json!({
        "session_id": "sess-w", "cwd": cwd, "hook_event_name": "PreToolUse",
        "tool_name": "Bash", "tool_input": {"command": command}, "tool_use_id": id,
    });
    let mut child = e
        .cmd(&["hook", "claude-code", "--wait", wait])
        .env("CLAUDE_PROJECT_DIR", "/home/user/project")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    child.stdin.take().expect("stdin").write_all(event.to_string().as_bytes()).expect("write the event");
    child
}

#[test]
fn a_grant_on_a_command_line_covers_it_only_in_the_directory_it_was_approved_in() {
    // The project is the same (one notebook), but the agent's shell moved: `git push` in another
    // checkout pushes something else.
    let e = env();
    let held = hook_in(&e, "w-1", "/home/user/project", "git push origin main", "20");
    wait_for_packet(&e, "cc-w-1");
    let o = e.run(&["approve", "--yes", "cc-w-1", "--scope", "session"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("run in /home/user/project"), "{}", text(&o));
    assert_eq!(decision(&held.wait_with_output().expect("hook")).0, "allow");
    let here = decision(
        &hook_in(&e, "w-2", "/home/user/project", "git push origin main", "0.3").wait_with_output().expect("hook"),
    );
    assert_eq!(here.0, "allow", "{}", here.1);
    let elsewhere = decision(
        &hook_in(&e, "w-3", "/home/user/project/vendor/lib", "git push origin main", "0.3")
            .wait_with_output()
            .expect("hook"),
    );
    assert_eq!(elsewhere.0, "deny", "another directory of the project: {}", elsewhere.1);
    let packet: Value =
        serde_json::from_slice(&std::fs::read(e.spool().join("packets/cc-w-3.json")).expect("packet")).expect("json");
    assert_eq!(
        packet["proposed_action"]["workdir"],
        json!("/home/user/project/vendor/lib"),
        "the principal sees where it runs"
    );
    assert_eq!(grants(&e, false)[0]["workdir"], json!("/home/user/project"));
}

fn ok_refuse(e: &Env, id: &str) {
    let o = e.run(&["refuse", "--yes", id, "--reason", "test"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

#[test]
fn a_grant_never_lifts_a_class_constraint_that_fails() {
    // One call an hour at most: a session grant answers holds for review, never a call the
    // class's own rate limit holds.
    let e = env();
    e.policy(
        "[[class]]\nid = \"crm.record.update\"\ntype = \"internal\"\nrisk = \"low\"\n\
         constraints = { rate_limit = { count = 1, window = \"PT1H\" } }\n\n\
         [tools.\"mcp__crm__update\"]\ntier = \"safe\"\nclass = \"crm.record.update\"\n",
    );
    let (d, reason) = run_hook(&e, &mcp("r-1", "mcp__crm__update", json!({"id": 1})), "0.3");
    assert_eq!(d, "allow", "the first call is within the limit: {reason}");
    let held = spawn_hook(&e, &mcp("r-2", "mcp__crm__update", json!({"id": 2})), "20");
    wait_for_packet(&e, "cc-r-2");
    let o = e.run(&["approve", "--yes", "cc-r-2", "--scope", "session"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(decision(&held.wait_with_output().expect("hook")).0, "allow");
    assert_eq!(grants(&e, false).len(), 1);
    let (d, reason) = run_hook(&e, &mcp("r-3", "mcp__crm__update", json!({"id": 3})), "0.3");
    assert_eq!(d, "deny", "over the class's rate limit, the session grant does not lift it: {reason}");
    assert!(reason.contains("rate_limit"), "{reason}");
}

/// Sixteen hooks race for what may run once: each answer is `allow` or `deny`, and exactly one
/// is `allow`.
fn race(e: &Env, events: Vec<Vec<u8>>) -> usize {
    let children: Vec<Child> = events.iter().map(|ev| spawn_hook(e, ev, "1")).collect();
    let answers: Vec<(String, String)> =
        children.into_iter().map(|c| decision(&c.wait_with_output().expect("hook"))).collect();
    assert!(answers.iter().all(|(d, _)| d == "allow" || d == "deny"), "{answers:?}");
    answers.iter().filter(|(d, _)| d == "allow").count()
}

#[test]
fn a_single_use_grant_and_a_once_approval_are_each_used_once_by_sixteen_racing_calls() {
    let e = env();
    let (o, (d, _)) = approve_held(&e, "u-0", "sess-u", "git push origin main", &["--scope", "session", "--uses", "1"]);
    assert_eq!((o.status.code(), d.as_str()), (Some(0), "allow"), "{}", text(&o));
    let events = (0..16).map(|n| bash(&format!("u-{}", n + 1), "sess-u", "git push origin main")).collect();
    assert_eq!(race(&e, events), 1, "one use, one call");
    let all = grants(&e, true);
    assert_eq!((all[0]["uses"].clone(), all[0]["status"].clone()), (json!(1), json!("used up")), "{all:?}");
    // A once-approval: sixteen hooks of the same call (one packet, as a retried hook) wait on it;
    // the approval answers one of them.
    let event = bash("same", "sess-o", "git push origin release");
    let children: Vec<Child> = (0..16).map(|_| spawn_hook(&e, &event, "20")).collect();
    wait_for_packet(&e, "cc-same");
    let o = e.run(&["approve", "--yes", "cc-same"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let answers: Vec<(String, String)> =
        children.into_iter().map(|c| decision(&c.wait_with_output().expect("hook"))).collect();
    assert_eq!(answers.iter().filter(|(d, _)| d == "allow").count(), 1, "{answers:?}");
    // A hook that started after the approval was used finds the call withdrawn, used up.
    assert!(
        answers
            .iter()
            .filter(|(d, _)| d == "deny")
            .all(|(_, r)| r.contains("already used") || r.contains("answered it (consumed)")),
        "the others are told why: {answers:?}"
    );
}

// The real console under tmux: a held push, `a`, `s` (this session), the dialog read to its end,
// `y`: the approval and the grant are signed, the held call runs, and the session's next push runs
// with no prompt; the Grants view (7) lists the grant with its use.
#[cfg(feature = "console")]
#[test]
fn the_console_approves_with_a_session_grant_and_the_sessions_next_call_runs() {
    let e = env();
    let vars = vec![
        ("WARRANT_CONFIG", e.config().display().to_string()),
        ("WARRANT_SPOOL", e.spool().display().to_string()),
        ("WARRANT_PRINCIPAL", "alice".to_owned()),
        ("XDG_DATA_HOME", e.dir.path().join("data").display().to_string()),
        ("TERM", "xterm-256color".to_owned()),
    ];
    let console = tmux::Tmux::start("grant-session", &vars, &["console"]);
    console.wait_for("the console", |sc| sc.contains("chain ok") && sc.contains("0 pending"));
    let held = spawn_hook(&e, &bash("c-1", "sess-c", "git push origin main"), "60");
    wait_for_packet(&e, "cc-c-1");
    console.wait_for("the held call", |sc| sc.contains("1 pending"));
    console.send(&["a"]);
    console.wait_for("the sign dialog", |sc| sc.contains("Confirm: approve") && sc.contains("once: this call only"));
    console.send(&["s"]);
    console.wait_for("the grant in the dialog", |sc| sc.contains("GRANT") && sc.contains("in session sess-c"));
    let start = Instant::now();
    loop {
        let (screen, _) = console.wait_for("the sign dialog", |sc| sc.contains("Confirm: approve"));
        if screen.contains("✓ all") {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "the dialog never unlocked:\n{screen}");
        console.send(&["space"]);
        console.wait_for("the next page", |sc| sc != screen);
    }
    console.send(&["y"]);
    console
        .wait_for("the approval and its grant", |sc| sc.contains("approved cc-c-1") && sc.contains("granted grant-"));
    let (d, reason) = decision(&held.wait_with_output().expect("hook"));
    assert_eq!(d, "allow", "{reason}");
    let (d, reason) = run_hook(&e, &bash("c-2", "sess-c", "git push origin other"), "0.3");
    assert_eq!(d, "allow", "the session's next call runs on the grant: {reason}");
    console.send(&["7"]);
    console.wait_for("the Grants view", |sc| sc.contains("live") && sc.contains("session") && sc.contains("1 use"));
    console.send(&["q"]);
    let start = Instant::now();
    while console.alive() && start.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!console.alive(), "the console quits");
}

// Issue "guarantees on the things themselves" §2: a `pattern:Write(/…/drafts/*)` grant allowed a
// Write to `drafts/notes.md`, a symlink to a file outside `drafts/`. A pattern covers the file a
// path resolves to: the symlink's call waits for the principal; a plain file below the granted
// directory still runs on the grant.
#[test]
fn a_pattern_grant_covers_the_file_a_path_resolves_to_not_its_spelling() {
    let e = env();
    let drafts = e.dir.path().join("drafts");
    let elsewhere = e.dir.path().join("elsewhere");
    std::fs::create_dir_all(&drafts).expect("mkdir");
    std::fs::create_dir_all(&elsewhere).expect("mkdir");
    let write = |id: &str, path: &std::path::Path| {
        mcp(id, "Write", json!({"file_path": path.to_str().expect("utf-8"), "content": "x"}))
    };
    let child = spawn_hook(&e, &write("toolu_w1", &drafts.join("first.md")), "20");
    wait_for_packet(&e, "cc-toolu_w1");
    let pattern = format!("pattern:Write({}/*)", drafts.display());
    let o = e.run(&["approve", "--yes", "cc-toolu_w1", "--scope", &pattern]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(decision(&child.wait_with_output().expect("hook")).0, "allow");
    // A plain file below `drafts/`: on the grant.
    let (d, reason) = run_hook(&e, &write("toolu_w2", &drafts.join("second.md")), "1");
    assert_eq!(d, "allow", "{reason}");
    assert!(reason.contains("grant"), "{reason}");
    // `drafts/notes.md` is a symlink to a file elsewhere: not below `drafts/`, so it waits.
    std::os::unix::fs::symlink(elsewhere.join("target.md"), drafts.join("notes.md")).expect("symlink");
    let (d, reason) = run_hook(&e, &write("toolu_w3", &drafts.join("notes.md")), "1");
    assert_eq!(d, "deny", "a symlink out of the granted directory ran on the grant: {reason}");
    assert!(reason.contains("timeout"), "{reason}");
    // So does a path through a symlinked directory.
    std::os::unix::fs::symlink(&elsewhere, drafts.join("sub")).expect("symlink");
    let (d, reason) = run_hook(&e, &write("toolu_w4", &drafts.join("sub/x.md")), "1");
    assert_eq!(d, "deny", "{reason}");
}
