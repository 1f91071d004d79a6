//! A gate a principal can rely on every day. The command line's exit codes and refusals
//! that an agent or a script relies on, through the real binary.

use crate::cli_env;

use cli_env::{Env, text};
use std::io::Read as _;
use std::process::Stdio;

// `check-preconditions X && run` must never run a packet nobody decided: exit 0 only for an
// approved packet whose preconditions hold; a pending one gets its own code (5); a refused one 3.
#[test]
fn check_preconditions_exits_0_only_for_an_approved_packet() {
    let e = Env::new();
    for id in ["c-pending", "c-approved", "c-refused"] {
        assert_eq!(e.propose("draft.compose", "agent-a", id, &[]).status.code(), Some(0));
    }
    let o = e.run(&["check-preconditions", "c-pending"]);
    assert_eq!(o.status.code(), Some(5), "pending, no preconditions: {}", text(&o));
    assert_eq!(e.run(&["approve", "--yes", "c-approved"]).status.code(), Some(0));
    assert_eq!(e.run(&["check-preconditions", "c-approved"]).status.code(), Some(0));
    assert_eq!(e.run(&["refuse", "--yes", "c-refused", "--reason", "no"]).status.code(), Some(0));
    assert_eq!(e.run(&["check-preconditions", "c-refused"]).status.code(), Some(3));
    let o = std::process::Command::new("sh")
        .args(["-c", &format!("{} check-preconditions c-pending && echo RAN", cli_env::BIN)])
        .env("WARRANT_CONFIG", e.config())
        .env("WARRANT_SPOOL", e.spool())
        .output()
        .expect("sh");
    assert!(!String::from_utf8_lossy(&o.stdout).contains("RAN"), "{}", text(&o));
}

// `propose --id X` silently replaced an existing packet, pending or decided. It refuses now (exit
// 2) and leaves the file as it was; a blank summary is refused too.
#[test]
fn propose_never_replaces_a_packet() {
    let e = Env::new();
    assert_eq!(e.propose("draft.compose", "agent-a", "p-1", &[]).status.code(), Some(0));
    let path = e.spool().join("packets/p-1.json");
    let before = std::fs::read(&path).expect("packet");
    let o = e.run(&[
        "propose",
        "--class",
        "email.send.external",
        "--agent",
        "agent-b",
        "--summary",
        "other",
        "--id",
        "p-1",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("already exists"), "{}", text(&o));
    assert_eq!(std::fs::read(&path).expect("packet"), before, "the pending packet is untouched");
    assert_eq!(e.run(&["approve", "--yes", "p-1"]).status.code(), Some(0));
    let o = e.propose("draft.compose", "agent-a", "p-1", &[]);
    assert_eq!(o.status.code(), Some(2), "a decided packet is never replaced: {}", text(&o));
    assert_eq!(std::fs::read(&path).expect("packet"), before);
    let o = e.run(&["propose", "--class", "draft.compose", "--agent", "agent-a", "--summary", "  ", "--id", "p-2"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let o = e.run(&["propose", "--class", "draft.compose", "--agent", "", "--summary", "s", "--id", "p-3"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(!e.spool().join("packets/p-2.json").exists() && !e.spool().join("packets/p-3.json").exists());
}

// `warrant list` on a mistyped spool printed nothing and exited 0; it names the path and exits 2.
#[test]
fn list_on_a_mistyped_spool_exits_2() {
    let e = Env::new();
    let o = e.run(&["--spool", "/nonexistent/spool", "list"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("/nonexistent/spool"), "{}", text(&o));
}

// A reader that closes the pipe early (`warrant export | head -1`, issue 32, item 15; before,
// export printed "Broken pipe" and exited 2, completions panicked with 101): every
// command that writes to stdout ends quietly (nothing on stderr, no backtrace) with 141, the
// code of a process a shell saw end by SIGPIPE, never 0 and never a panic's 101. Each command
// here writes well over a pipe's 64 KiB, so the reader's close is met mid-write.
#[test]
fn a_closed_pipe_ends_every_command_quietly_never_with_0() {
    let e = Env::new();
    let o = e.run(&["generate-spool", "--records", "3000", "--pending", "800"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    for args in [&["export"][..], &["list", "--json"], &["list"], &["audit", "--json"], &["audit"]] {
        let mut child = e.cmd(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
        let mut first = [0u8; 16];
        child.stdout.take().expect("stdout").read_exact(&mut first).expect("the output starts");
        let out = child.wait_with_output().expect("wait");
        assert_eq!(out.status.code(), Some(141), "{args:?}: {}", text(&out));
        assert!(out.stderr.is_empty(), "{args:?}: {}", text(&out));
    }
}

// Shell completions and a man page from the command definitions, as users of clap-based tools
// expect.
#[test]
fn completions_and_man_page_come_from_the_command_definitions() {
    let e = Env::new();
    let o = e.run(&["completions", "bash"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let script = String::from_utf8_lossy(&o.stdout);
    assert!(script.contains("_warrant") && script.contains("check-preconditions"), "{script}");
    let o = e.run(&["completions", "zsh"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("#compdef warrant"));
    let o = e.run(&["man"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let page = String::from_utf8_lossy(&o.stdout);
    assert!(page.starts_with(".ie") || page.contains(".TH warrant"), "{page}");
    assert!(page.contains("approve"), "{page}");
}

// Packets never expired. `--expires` (or the class's `[expiry]` in policy.toml) sets
// `expires_at`; an expired packet cannot be approved, and `propose --wait` exits 6 when it
// expires undecided.
#[test]
fn packets_expire_and_waiting_agents_are_told() {
    let e = Env::new();
    let started = std::time::Instant::now();
    let o = e.propose("draft.compose", "agent-a", "x-1", &["--expires", "1s", "--wait", "20"]);
    assert_eq!(o.status.code(), Some(6), "{}", text(&o));
    assert!(started.elapsed() < std::time::Duration::from_secs(15), "told at expiry, not at the deadline");
    // Shown as expired, not as pending.
    let o = e.run(&["list"]);
    let listed = String::from_utf8_lossy(&o.stdout);
    assert!(listed.lines().any(|l| l.starts_with("expired") && l.contains("x-1")), "{listed}");
    let o = e.run(&["list", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("list --json");
    assert_eq!(v["packets"][0]["expired"], serde_json::json!(true), "{v}");
    let o = e.run(&["approve", "--yes", "x-1"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("expired"), "{}", text(&o));
    assert_eq!(e.run(&["refuse", "--yes", "x-1", "--reason", "too late"]).status.code(), Some(0));
    for bad in ["soon", "2020-01-01T00:00:00Z", "0s"] {
        let o = e.propose("draft.compose", "agent-a", "x-bad", &["--expires", bad]);
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", text(&o));
    }
    e.policy("[expiry]\n\"draft.compose\" = \"2h\"\n");
    assert_eq!(e.propose("draft.compose", "agent-a", "x-2", &[]).status.code(), Some(0));
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(e.spool().join("packets/x-2.json")).expect("packet")).expect("json");
    let at = warrant::protocol::clock::unix_seconds(doc["expires_at"].as_str().expect("expires_at")).expect("time");
    let now = warrant::protocol::clock::unix_seconds(&warrant::protocol::clock::now_rfc3339()).expect("now");
    assert!((at - now - 7200.0).abs() < 60.0, "two hours from now: {doc}");
}

/// `propose --wait SECONDS` for `agent`'s packet `id`, running, its output captured; returned
/// once the packet is published (or after 20 s).
fn spawn_wait(e: &Env, agent: &str, id: &str, seconds: &str) -> std::process::Child {
    let child = e
        .cmd(&[
            "propose",
            "--class",
            "draft.compose",
            "--agent",
            agent,
            "--summary",
            "s",
            "--id",
            id,
            "--wait",
            seconds,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("waiter");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !e.spool().join(format!("packets/{id}.json")).exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child
}

// A killed agent's `propose --wait` timed out instead of being told: it is told at once, with
// the reason.
#[test]
fn a_killed_agents_wait_is_told() {
    let e = Env::new();
    let waiter = spawn_wait(&e, "agent-k", "k-1", "30");
    let o = e.run(&["agent", "kill", "agent-k", "--reason", "runaway loop"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = waiter.wait_with_output().expect("waiter");
    // Told either way: by the stop signal (7) if it looks before the kill's signed refusal of its
    // packet lands, else by that refusal (3); the kill's reason in both.
    assert!(matches!(out.status.code(), Some(3 | 7)), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("runaway loop"), "{}", text(&out));
}

// A quarantined agent's `propose --wait` timed out too: it is told at once (exit 8), with the
// reason, and one proposed while the quarantine stands is told before it waits at all; after a
// release it waits again.
#[test]
fn a_quarantined_agents_wait_is_told() {
    let e = Env::new();
    let waiter = spawn_wait(&e, "agent-q", "q-1", "30");
    let o = e.run(&["agent", "quarantine", "agent-q", "--reason", "sent 40 emails in a minute"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let started = std::time::Instant::now();
    let out = waiter.wait_with_output().expect("waiter");
    assert_eq!(out.status.code(), Some(8), "{}", text(&out));
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "told, not timed out");
    assert!(String::from_utf8_lossy(&out.stderr).contains("sent 40 emails in a minute"), "{}", text(&out));
    // Proposed while quarantined: told at once.
    let out = spawn_wait(&e, "agent-q", "q-2", "30").wait_with_output().expect("waiter");
    assert_eq!(out.status.code(), Some(8), "{}", text(&out));
    // Released: a wait waits again (and here times out as asked).
    assert_eq!(e.run(&["agent", "release", "agent-q"]).status.code(), Some(0));
    let o = spawn_wait(&e, "agent-q", "q-3", "1").wait_with_output().expect("waiter");
    assert_eq!(o.status.code(), Some(4), "{}", text(&o));
}

// Killing an agent said its pending packets were compensated, yet they stayed pending. `agent
// kill` now refuses each of them, signed, with the kill's reason, in the same command.
#[test]
fn a_kill_refuses_the_agents_pending_packets_signed() {
    let e = Env::new();
    for (id, agent) in [("k-1", "agent-k"), ("k-2", "agent-k"), ("o-1", "agent-other")] {
        assert_eq!(e.propose("draft.compose", agent, id, &[]).status.code(), Some(0));
    }
    let o = e.run(&["agent", "kill", "agent-k", "--reason", "runaway loop"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("refused 2 pending packet(s)"), "{}", text(&o));
    for id in ["k-1", "k-2"] {
        let o = e.run(&["check-preconditions", id]);
        assert_eq!(o.status.code(), Some(3), "{id} is refused: {}", text(&o));
    }
    assert_eq!(e.run(&["check-preconditions", "o-1"]).status.code(), Some(5), "another agent's stays pending");
    let chain = std::fs::read_to_string(e.spool().join("chain.jsonl")).expect("chain");
    let last: serde_json::Value = serde_json::from_str(chain.lines().last().expect("record")).expect("json");
    assert_eq!(last["metadata"]["warrant_decision"]["reason"], "killed: runaway loop");
    assert_eq!(e.run(&["verify"]).status.code(), Some(0));
}
