//! Issue 15: the attacks agents mounted against warrant, each reproduced as described and shown
//! to fail. Real files, real keys and the real binary; where an attack needs another Unix user,
//! the test creates one when it runs as root and says on stderr what it skipped otherwise.

#[path = "support/cli_env.rs"]
mod cli_env;

use cli_env::{Env, text};
use serde_json::{Value, json};

/// The base64 body of the principal's PEM key, as it would appear if leaked anywhere.
fn key_body(e: &Env) -> String {
    let pem = std::fs::read_to_string(e.config().join("principal.key")).expect("the principal's key");
    pem.lines().filter(|l| !l.starts_with("-----")).collect::<String>()
}

/// Everything an agent or an auditor can read after a decision: the spool's files, recursively.
fn spool_text(e: &Env) -> String {
    let mut out = String::new();
    let mut stack = vec![e.spool()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read_dir").flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push_str(&String::from_utf8_lossy(&std::fs::read(&path).unwrap_or_default()));
            }
        }
    }
    out
}

fn precondition_contract(preconditions: Value) -> Value {
    json!({"contract": {
        "required_level": 4, "blast_radius": "external", "reversibility": "irreversible",
        "scope": {"level": "project", "identifier": "acme"}, "data_sensitivity": "private",
        "preconditions": preconditions}})
}

/// An agent workspace declared as the one precondition root.
fn workspace(e: &Env) -> std::path::PathBuf {
    let work = e.dir.path().join("work");
    std::fs::create_dir_all(&work).expect("mkdir");
    // L3 contracts are within the ladder's ceiling, so only the preconditions decide.
    e.policy(&format!(
        "[ladder]\nauto_approve_up_to = 3\n[preconditions]\nroots = [{:?}]\n",
        work.display().to_string()
    ));
    work
}

// §1, critical: `git.head_unchanged` on a repository whose `.git/HEAD` is a symlink to the
// principal's key. On main the key's PEM went into the signed approval, the decision file and
// the chain. Now the symlink is refused, the approval fails closed, and the key appears nowhere.
#[test]
fn a_git_head_symlinked_to_the_principals_key_publishes_nothing() {
    let e = Env::new();
    // The principal exists (first approval creates the key).
    assert_eq!(e.propose("draft.compose", "agent-a", "p-0", &[]).status.code(), Some(0));
    assert_eq!(e.run(&["approve", "p-0"]).status.code(), Some(0));
    let body = key_body(&e);
    let work = workspace(&e);
    let repo = work.join("repo");
    std::fs::create_dir_all(repo.join(".git")).expect("mkdir");
    std::os::unix::fs::symlink(e.config().join("principal.key"), repo.join(".git/HEAD")).expect("symlink");
    e.publish_governed(
        "p-leak",
        "agent-a",
        precondition_contract(json!([{"check_id": "git.head_unchanged", "parameters": {"repo": repo.to_str()},
            "expected_at_approval": null, "must_revalidate_at_execution": true}])),
    );
    let o = e.run(&["approve", "p-leak"]);
    assert_eq!(o.status.code(), Some(1), "the approval fails closed: {}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("precondition"), "{}", text(&o));
    let checked = e.run(&["check-preconditions", "p-leak", "--json"]);
    assert_ne!(checked.status.code(), Some(0), "{}", text(&checked));
    for (what, haystack) in
        [("the spool", spool_text(&e)), ("approve's output", text(&o)), ("check-preconditions' output", text(&checked))]
    {
        assert!(!haystack.contains(&body), "the key leaked into {what}");
        assert!(!haystack.contains("PRIVATE KEY"), "the key leaked into {what}");
    }
    // A HEAD that is a regular file holding anything but a ref or an object id fails the same way,
    // without quoting what it holds.
    std::fs::remove_file(repo.join(".git/HEAD")).expect("rm");
    std::fs::write(repo.join(".git/HEAD"), "secret: hunter2\n").expect("write");
    let checked = e.run(&["check-preconditions", "p-leak", "--json"]);
    assert_ne!(checked.status.code(), Some(0));
    assert!(!text(&checked).contains("hunter2"), "{}", text(&checked));
}

// §1: `file.sha256` and `file.exists` were a digest and an existence test of any path the
// principal can read. Outside the declared roots (or with none declared), and inside the
// configuration directory wherever the roots are, they fail closed.
#[test]
fn file_checks_outside_the_roots_or_into_the_config_fail_closed() {
    let e = Env::new();
    assert_eq!(e.propose("draft.compose", "agent-a", "p-0", &[]).status.code(), Some(0));
    assert_eq!(e.run(&["approve", "p-0"]).status.code(), Some(0));
    let key = e.config().join("principal.key");
    let pinned = e.config().join("pinned_keys.toml");
    let probe = |id: &str, check: &str, path: &std::path::Path| {
        e.publish_governed(
            id,
            "agent-a",
            precondition_contract(json!([{"check_id": check, "parameters": {"path": path.to_str()},
                "expected_at_approval": null, "must_revalidate_at_execution": true}])),
        );
        let o = e.run(&["check-preconditions", id, "--json"]);
        assert_eq!(o.status.code(), Some(1), "{id}: {}", text(&o));
        let out: Value = serde_json::from_slice(&o.stdout).expect("json");
        let check = &out["revalidation"]["checks"][0];
        assert_eq!(check["holds"], false, "{id}: {check}");
        assert!(check.get("observed").is_none(), "{id}: nothing observed: {check}");
        let o = e.run(&["approve", id]);
        assert_eq!(o.status.code(), Some(1), "{id}: {}", text(&o));
    };
    // No roots declared: nothing is observed.
    probe("p-nr-hash", "file.sha256", &key);
    probe("p-nr-exists", "file.exists", &pinned);
    // A root that holds the whole temporary directory, config included: the config is refused.
    e.policy(&format!("[preconditions]\nroots = [{:?}]\n", e.dir.path().display().to_string()));
    probe("p-cfg-hash", "file.sha256", &key);
    probe("p-cfg-exists", "file.exists", &pinned);
    // A narrower root: a path outside it, and `..` out of it.
    let work = workspace(&e);
    probe("p-out", "file.sha256", &key);
    probe("p-dotdot", "file.exists", &work.join("../config/principal.key"));
    // Inside the root, a file is observed by its digest.
    std::fs::write(work.join("ok.txt"), "ok").expect("write");
    e.publish_governed(
        "p-ok",
        "agent-a",
        precondition_contract(json!([{"check_id": "file.sha256", "parameters": {"path": work.join("ok.txt").to_str()},
            "expected_at_approval": null, "must_revalidate_at_execution": true}])),
    );
    let o = e.run(&["approve", "p-ok"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

// §1: 1,000 `file.sha256` checks of a 31 MB file held the chain's lock for 32 s on main, and a
// quarantine issued meanwhile failed on the 10 s lock timeout. Now a packet's checks stop at the
// budget (8 checks), nothing is observed under the lock, and the quarantine goes through.
#[test]
fn a_thousand_checks_of_a_large_file_stop_at_the_budget_and_never_hold_the_lock() {
    let e = Env::new();
    assert_eq!(e.propose("draft.compose", "agent-x", "p-0", &[]).status.code(), Some(0));
    assert_eq!(e.run(&["approve", "p-0"]).status.code(), Some(0));
    let work = workspace(&e);
    let big = work.join("big.bin");
    std::fs::write(&big, vec![0x5a; 31 << 20]).expect("write");
    let check = json!({"check_id": "file.sha256", "parameters": {"path": big.to_str()},
        "expected_at_approval": null, "must_revalidate_at_execution": true});
    e.publish_governed("p-big", "agent-a", precondition_contract(Value::Array(vec![check; 1000])));
    let approve = e
        .cmd(&["approve", "p-big"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let q = e.run(&["agent", "quarantine", "agent-x", "--reason", "concurrent control"]);
    assert_eq!(q.status.code(), Some(0), "the quarantine is not starved of the lock: {}", text(&q));
    let approve_out = approve.wait_with_output().expect("approve");
    assert_eq!(approve_out.status.code(), Some(1), "{}", text(&approve_out));
    assert!(String::from_utf8_lossy(&approve_out.stderr).contains("budget"), "{}", text(&approve_out));
    let o = e.run(&["check-preconditions", "p-big", "--json"]);
    let out: Value = serde_json::from_slice(&o.stdout).expect("json");
    let checks = out["revalidation"]["checks"].as_array().expect("checks");
    assert_eq!(checks.len(), 1000);
    assert!(checks[..8].iter().all(|c| c["holds"] == true), "the first 8 are observed");
    assert!(
        checks[8..].iter().all(|c| c["holds"] == false && c["error"].as_str().is_some_and(|e| e.contains("budget"))),
        "the rest fail closed"
    );
}
