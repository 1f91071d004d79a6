//! The attacks agents mounted against warrant, each reproduced and shown to fail
//! (`docs/conformance.md`, "What an agent cannot do"). Real files, real keys and the real binary;
//! where an attack needs another Unix user, the test creates one when it runs as root and says on
//! stderr what it skipped otherwise.

use crate::cli_env;

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
    assert_eq!(e.run(&["approve", "--yes", "p-0"]).status.code(), Some(0));
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
    let o = e.run(&["approve", "--yes", "p-leak"]);
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
    assert_eq!(e.run(&["approve", "--yes", "p-0"]).status.code(), Some(0));
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
        assert_eq!(o.status.code(), Some(5), "{id}: pending: {}", text(&o));
        let out: Value = serde_json::from_slice(&o.stdout).expect("json");
        let check = &out["revalidation"]["checks"][0];
        assert_eq!(check["holds"], false, "{id}: {check}");
        assert!(check.get("observed").is_none(), "{id}: nothing observed: {check}");
        let o = e.run(&["approve", "--yes", id]);
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
    let o = e.run(&["approve", "--yes", "p-ok"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

// §1: 1,000 `file.sha256` checks of a 31 MB file held the chain's lock for 32 s on main, and a
// quarantine issued meanwhile failed on the 10 s lock timeout. Now a packet's checks stop at the
// budget (8 checks), nothing is observed under the lock, and the quarantine goes through.
#[test]
fn a_thousand_checks_of_a_large_file_stop_at_the_budget_and_never_hold_the_lock() {
    let e = Env::new();
    assert_eq!(e.propose("draft.compose", "agent-x", "p-0", &[]).status.code(), Some(0));
    assert_eq!(e.run(&["approve", "--yes", "p-0"]).status.code(), Some(0));
    let work = workspace(&e);
    let big = work.join("big.bin");
    std::fs::write(&big, vec![0x5a; 31 << 20]).expect("write");
    let check = json!({"check_id": "file.sha256", "parameters": {"path": big.to_str()},
        "expected_at_approval": null, "must_revalidate_at_execution": true});
    e.publish_governed("p-big", "agent-a", precondition_contract(Value::Array(vec![check; 1000])));
    let approve = e
        .cmd(&["approve", "--yes", "p-big"])
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

// ---- §2: who an agent is, and when it spoke, are facts ----------------------------------------

/// Whether this process may give files to other owners (root): the attacks below need files owned
/// by other users. Without it the test says so on stderr and checks what it can.
fn can_chown() -> bool {
    let root = rustix::process::geteuid().is_root();
    if !root {
        eprintln!("not root: the parts of this test that need files owned by other users are skipped");
    }
    root
}

/// Publishes a portable packet into `packets/<file>.json` owned by `uid` (temp file + rename, as
/// agents publish), and returns its path.
fn publish_as(e: &Env, uid: u32, file: &str, doc: &Value) -> std::path::PathBuf {
    let dir = e.spool().join("packets");
    std::fs::create_dir_all(&dir).expect("packets dir");
    let tmp = dir.join(format!(".{file}.tmp"));
    std::fs::write(&tmp, serde_json::to_vec(doc).expect("json")).expect("write");
    std::os::unix::fs::chown(&tmp, Some(uid), None).expect("chown");
    let path = dir.join(format!("{file}.json"));
    std::fs::rename(&tmp, &path).expect("rename");
    path
}

fn packet_doc(id: &str, agent: &str, class: &str) -> Value {
    warrant::protocol::packet::portable_packet(
        id,
        class,
        agent,
        "s",
        json!({"to": "dana@northwind.example"}),
        "2026-11-21T09:00:00Z",
    )
}

/// `warrant list --json`'s entry for `id`.
fn listed(e: &Env, id: &str) -> Value {
    let o = e.run(&["list", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let all: Value = serde_json::from_slice(&o.stdout).expect("json");
    all["packets"].as_array().and_then(|a| a.iter().find(|p| p["packet_id"] == id)).cloned().unwrap_or(Value::Null)
}

const ALICE_AGENT: u32 = 4_000_101;
const MALLORY: u32 = 4_000_102;

// §2: `agent-rоgue` (Cyrillic о) looked like `agent-rogue` and escaped its quarantine. An agent
// id must be a safe id: `propose` refuses it, a packet file with it is invalid with the reason,
// and no control can be issued for it.
#[test]
fn a_homoglyph_agent_id_is_invalid_and_cannot_dodge_a_quarantine() {
    let e = Env::new();
    let homoglyph = "agent-r\u{43e}gue";
    let o = e.propose("draft.compose", homoglyph, "p-h", &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let dir = e.spool().join("packets");
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(
        dir.join("p-h.json"),
        serde_json::to_vec(&packet_doc("p-h", homoglyph, "draft.compose")).expect("json"),
    )
    .expect("write");
    let o = e.run(&["list", "--json"]);
    let all: Value = serde_json::from_slice(&o.stdout).expect("json");
    assert!(all["packets"].as_array().expect("packets").is_empty(), "{all}");
    let invalid = &all["invalid"][0];
    assert_eq!(invalid["file"], "p-h.json");
    assert!(invalid["reason"].as_str().is_some_and(|r| r.contains("not a safe id")), "{invalid}");
    assert_eq!(e.run(&["approve", "--yes", "p-h"]).status.code(), Some(1), "an invalid packet cannot be approved");
    assert_eq!(e.run(&["agent", "quarantine", homoglyph, "--reason", "r"]).status.code(), Some(2));
}

// §2: any file owner could claim any agent. With `[agents."<id>"] users` in policy.toml only
// those users speak for it; without, the chain binds the agent to the publisher of its first
// approved packet. A packet from anyone else is blocked by the identity check, never approvable,
// and shown with its owner.
#[test]
fn a_packet_claiming_an_agent_its_owner_may_not_speak_for_is_refused() {
    if !can_chown() {
        return;
    }
    let e = Env::new();
    e.policy(&format!("[agents.\"agent-scribe\"]\nusers = [\"{ALICE_AGENT}\"]\n"));
    publish_as(&e, ALICE_AGENT, "p-real", &packet_doc("p-real", "agent-scribe", "draft.compose"));
    publish_as(&e, MALLORY, "p-fake", &packet_doc("p-fake", "agent-scribe", "draft.compose"));
    let real = listed(&e, "p-real");
    let fake = listed(&e, "p-fake");
    assert_eq!(real["publisher"]["uid"], ALICE_AGENT);
    assert_ne!(real["state"], "blocked", "{real}");
    assert_eq!(fake["publisher"]["uid"], MALLORY);
    assert_eq!(fake["state"], "blocked", "{fake}");
    assert_eq!(fake["decisive_model"], "identity", "{fake}");
    assert!(fake["impersonation"].as_str().is_some_and(|r| r.contains(&MALLORY.to_string())), "{fake}");
    let o = e.run(&["approve", "--yes", "p-fake"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("identity"), "{}", text(&o));
    assert_eq!(e.run(&["approve", "--yes", "p-real"]).status.code(), Some(0));

    // Without a policy entry: the first approved packet binds agent-x to its publisher, in the
    // chain, and a later packet from another owner is refused even once the first file is gone.
    publish_as(&e, ALICE_AGENT, "p-x1", &packet_doc("p-x1", "agent-x", "draft.compose"));
    assert_eq!(e.run(&["approve", "--yes", "p-x1"]).status.code(), Some(0));
    let chain = std::fs::read_to_string(e.spool().join("chain.jsonl")).expect("chain");
    let last: Value = serde_json::from_str(chain.lines().last().expect("record")).expect("json");
    assert_eq!(last["metadata"]["warrant_publisher"], json!({"agent": "agent-x", "uid": ALICE_AGENT}));
    std::fs::remove_file(e.spool().join("packets/p-x1.json")).expect("rm");
    publish_as(&e, MALLORY, "p-x2", &packet_doc("p-x2", "agent-x", "draft.compose"));
    let x2 = listed(&e, "p-x2");
    assert_eq!(x2["state"], "blocked", "{x2}");
    assert!(x2["impersonation"].as_str().is_some_and(|r| r.contains("chain")), "{x2}");
    assert_eq!(e.run(&["approve", "--yes", "p-x2"]).status.code(), Some(1));
    assert_eq!(e.run(&["verify"]).status.code(), Some(0), "the publisher records verify");
}

// §2: rate limits were replayed at file modification times, which the owner sets with `touch -d`:
// another user backdated 12 packets as `agent-scribe` and blocked the real agent's packet for
// good. Arrival is now the inode change time, and an impostor's packets spend none of the
// agent's tokens.
#[test]
fn backdated_packets_from_another_user_do_not_spend_an_agents_rate_limit() {
    if !can_chown() {
        return;
    }
    let e = Env::new();
    e.policy(&format!("[agents.\"agent-scribe\"]\nusers = [\"{ALICE_AGENT}\"]\n"));
    for i in 0..12 {
        let id = format!("p-spam-{i}");
        let path = publish_as(&e, MALLORY, &id, &packet_doc(&id, "agent-scribe", "draft.compose"));
        let st = std::process::Command::new("touch").args(["-d", "1 hour ago"]).arg(&path).status().expect("touch");
        assert!(st.success());
    }
    publish_as(&e, ALICE_AGENT, "p-real", &packet_doc("p-real", "agent-scribe", "draft.compose"));
    let real = listed(&e, "p-real");
    assert_ne!(real["state"], "blocked", "the real packet is within its limit: {real}");
    let spam = listed(&e, "p-spam-0");
    assert_eq!(spam["decisive_model"], "identity", "{spam}");
    // The same user backdating its own files gains nothing either: arrival is the change time.
    let snap = warrant::store::spool::Scanner::new().scan(&warrant::store::spool::Spool::new(e.spool())).expect("scan");
    let spam = snap.packet("p-spam-0").expect("listed");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_secs_f64();
    assert!(now - spam.arrived < 600.0, "arrived {} s ago, not an hour", now - spam.arrived);
}

// §2: two files with one packet id: the name that sorted first won, whoever owned it, so another
// user could take over an id before the principal approved it. Copies from different owners are
// now all invalid ("ambiguous") until one is removed; nothing ambiguous is signed.
#[test]
fn one_packet_id_from_two_owners_is_ambiguous_and_never_signed() {
    if !can_chown() {
        return;
    }
    let e = Env::new();
    publish_as(&e, ALICE_AGENT, "q-1", &packet_doc("q-1", "agent-a", "draft.compose"));
    let mut forged = packet_doc("q-1", "agent-a", "draft.compose");
    forged["proposed_action"]["to"] = json!("attacker@evil.example");
    publish_as(&e, MALLORY, "a-q-1", &forged);
    let o = e.run(&["list", "--json"]);
    let all: Value = serde_json::from_slice(&o.stdout).expect("json");
    assert!(all["packets"].as_array().expect("packets").is_empty(), "{all}");
    let reasons: Vec<&str> =
        all["invalid"].as_array().expect("invalid").iter().filter_map(|f| f["reason"].as_str()).collect();
    assert_eq!(reasons.len(), 2, "{all}");
    assert!(reasons.iter().all(|r| r.contains("ambiguous")), "{reasons:?}");
    assert_eq!(e.run(&["approve", "--yes", "q-1"]).status.code(), Some(1));
    assert!(!e.spool().join("chain.jsonl").exists(), "nothing was signed");
    std::fs::remove_file(e.spool().join("packets/a-q-1.json")).expect("rm");
    assert_eq!(e.run(&["approve", "--yes", "q-1"]).status.code(), Some(0));
}

// §2: 60 receipts an agent wrote about itself, claiming `source_type: principal`, moved
// email.send.internal from 0.50 to 0.90 (`auto_capped`) and changed its own packet's state. They
// are its own word now: never the gate's evidence, shown apart.
#[test]
fn an_agents_receipts_about_itself_do_not_graduate_its_class() {
    let e = Env::new();
    assert_eq!(e.propose("email.send.internal", "agent-s", "p-mail", &[]).status.code(), Some(0));
    let before = listed(&e, "p-mail");
    let dir = e.spool().join("receipts");
    std::fs::create_dir_all(&dir).expect("receipts");
    for i in 0..60 {
        let r = json!({"receipt_id": format!("r-{i}"), "action_class": "email.send.internal", "outcome": "approved",
            "agent": "agent-s", "source_type": "principal", "created_at": "2026-11-21T09:00:00Z",
            "external_action_executed": false, "human_approved": true, "type": "trust_graduation_receipt"});
        std::fs::write(dir.join(format!("r-{i}.json")), serde_json::to_vec(&r).expect("json")).expect("write");
    }
    let o = e.run(&["list", "--json"]);
    let all: Value = serde_json::from_slice(&o.stdout).expect("json");
    assert!(all["invalid"].as_array().is_some_and(Vec::is_empty), "the receipts are valid: {all}");
    let after = listed(&e, "p-mail");
    assert_eq!(before["state"], after["state"], "receipts an agent wrote moved its own packet: {before} → {after}");
    assert_eq!(after["state"], "review_required", "{after}");
}

// §2: the list's RISK is the class's, not the packet's claim; `list --json` `state` is warrant's
// verdict, not the state the packet declares.
#[test]
fn the_list_shows_the_class_risk_and_warrants_verdict_not_the_packets_claims() {
    let e = Env::new();
    let mut doc = packet_doc("p-pay", "agent-b", "payment.initiate");
    doc["risk"] = json!("low");
    doc["decision"]["status"] = json!("allowed");
    let dir = e.spool().join("packets");
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(dir.join("p-pay.json"), serde_json::to_vec(&doc).expect("json")).expect("write");
    let p = listed(&e, "p-pay");
    assert_eq!(p["risk"], "critical", "{p}");
    assert_eq!(p["declared_risk"], "low", "{p}");
    assert_eq!(p["state"], "human_only", "{p}");
}

// §2, the same attack at the gate itself (what the console shows): the packet's composed verdict
// and the Trust Graduation gate's tier are the same with or without 60 agent-written receipts.
#[test]
fn the_gate_ignores_receipts_an_agent_wrote_about_itself() {
    use std::sync::Arc;
    let doc = packet_doc("p-mail", "agent-s", "email.send.internal");
    let packet =
        warrant::protocol::packet::parse_packet(&serde_json::to_vec(&doc).expect("json"), "p-mail").expect("packet");
    let entry = warrant::store::spool::PacketEntry {
        file: "p-mail.json".into(),
        arrived: 1.0,
        owner: 4_000_000,
        packet: Arc::new(packet),
    };
    let receipts: Vec<Arc<warrant::protocol::packet::Receipt>> = (0..60)
        .map(|i| {
            let r = json!({"receipt_id": format!("r-{i}"), "action_class": "email.send.internal", "outcome": "approved",
                "agent": "agent-s", "source_type": "principal", "created_at": "2026-11-21T09:00:00Z",
                "external_action_executed": false, "human_approved": true, "type": "trust_graduation_receipt"});
            Arc::new(warrant::protocol::packet::parse_receipt(&serde_json::to_vec(&r).expect("json")).expect("receipt"))
        })
        .collect();
    let policies = warrant::protocol::graduation::PolicySet::builtin();
    let controls = warrant::protocol::control::ControlState::default();
    let ctx =
        warrant::protocol::verdict::VerdictContext { policies: &policies, controls: &controls, now: 1_795_251_600.0 };
    let assess = |receipts: &[Arc<warrant::protocol::packet::Receipt>]| {
        warrant::monitor::assess(
            &ctx,
            std::slice::from_ref(&entry),
            receipts,
            &Default::default(),
            &Default::default(),
            &Default::default(),
            true,
            "local",
        )
    };
    let (without, with) = (assess(&[]), assess(&receipts));
    assert_eq!(with.verdicts["p-mail"].state, without.verdicts["p-mail"].state);
    assert_eq!(with.gate["p-mail"].status, without.gate["p-mail"].status);
    // Shown apart: each receipt is a row of the weakest provenance, marked as from the spool.
    assert_eq!(with.evidence.len(), 60);
    assert!(with.evidence.iter().all(|r| r.source.as_deref() == Some("spool")
        && r.source_type == Some(warrant::protocol::graduation::evidence::SourceType::ModelInferred)));
}

// ---- §3: what the CLI signs is what the principal reviewed -------------------------------------

/// Runs `warrant ARGS` on a pseudo-terminal (util-linux `script`), typing `input`.
fn on_a_terminal(e: &Env, args: &str, input: &str) -> std::process::Output {
    use std::io::Write as _;
    let mut child = std::process::Command::new("script")
        .args(["-qec", &format!("{} {args}", cli_env::BIN), "/dev/null"])
        .env("WARRANT_CONFIG", e.config())
        .env("WARRANT_SPOOL", e.spool())
        .env("WARRANT_PRINCIPAL", "alice")
        .env("XDG_DATA_HOME", e.dir.path().join("data"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("script(1) from util-linux");
    // The prompt is read after the packet is shown; typed ahead, the answer waits in the pty.
    child.stdin.take().expect("stdin").write_all(input.as_bytes()).expect("type");
    child.wait_with_output().expect("script")
}

fn chain_lines(e: &Env) -> usize {
    std::fs::read_to_string(e.spool().join("chain.jsonl")).map_or(0, |c| c.lines().count())
}

// §3: `list` showed "Quote for 40 units to Dana"; the agent renamed new content over its file
// (`to: attacker@evil.example`); `warrant approve q-1` signed the new content. Now a script must
// pin the hash it reviewed (or say `--yes`), a pinned hash that changed is refused, and on a
// terminal the whole packet is shown and confirmed.
#[test]
fn approve_signs_only_what_was_reviewed() {
    let e = Env::new();
    assert_eq!(e.propose("draft.compose", "agent-a", "p-0", &[]).status.code(), Some(0));
    assert_eq!(e.run(&["approve", "--yes", "p-0"]).status.code(), Some(0), "the principal exists");
    let dir = e.spool().join("packets");
    let mut doc = warrant::protocol::packet::portable_packet(
        "q-1",
        "email.send.external",
        "agent-a",
        "Quote for 40 units to Dana",
        json!({"to": "dana@northwind.example", "subject": "Quote for 40 units"}),
        "2026-11-21T09:00:00Z",
    );
    std::fs::write(dir.join("q-1.json"), serde_json::to_vec(&doc).expect("json")).expect("write");
    let listing = String::from_utf8_lossy(&e.run(&["list"]).stdout).into_owned();
    let line = listing.lines().find(|l| l.contains("q-1")).expect("q-1 listed");
    let reviewed = line.split_whitespace().find(|w| w.starts_with("sha256:")).expect("list prints the hash").to_owned();
    // The agent swaps the recipient after the principal's review.
    doc["proposed_action"]["to"] = json!("attacker@evil.example");
    std::fs::write(dir.join(".q-1.tmp"), serde_json::to_vec(&doc).expect("json")).expect("write");
    std::fs::rename(dir.join(".q-1.tmp"), dir.join("q-1.json")).expect("rename");
    let before = chain_lines(&e);
    // No terminal, nothing pinned: refused as a usage error, nothing signed.
    let o = e.run(&["approve", "q-1"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--hash"), "{}", text(&o));
    // The hash the principal reviewed no longer matches: refused, both hashes named.
    let o = e.run(&["approve", "q-1", "--hash", &reviewed]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains(&reviewed), "{}", text(&o));
    assert_eq!(chain_lines(&e), before, "nothing was signed");
    // On a terminal: the whole packet is shown, the new recipient included; "n" signs nothing.
    let o = on_a_terminal(&e, "approve q-1", "n\n");
    let shown = String::from_utf8_lossy(&o.stdout);
    assert!(shown.contains("attacker@evil.example") && shown.contains("Quote for 40 units"), "{shown}");
    assert!(shown.contains("publisher") && shown.contains("sha256:"), "{shown}");
    assert_ne!(o.status.code(), Some(0), "{shown}");
    assert_eq!(chain_lines(&e), before, "a declined review signs nothing");
    // "y" signs exactly the version shown.
    let o = on_a_terminal(&e, "refuse q-1 --reason swapped", "y\n");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(chain_lines(&e), before + 1);
    let current = listed(&e, "q-1");
    let chain = std::fs::read_to_string(e.spool().join("chain.jsonl")).expect("chain");
    let rec: Value = serde_json::from_str(chain.lines().last().expect("record")).expect("json");
    assert_eq!(rec["metadata"]["warrant_decision"]["packet_hash"], current["content_hash"]);
}

// ---- §5: nothing acknowledged is lost, nothing stale blocks forever ----------------------------

// §5: on a full disk `approve` appended the decision and exited 0 with "decision file was not
// written"; after space returned later decisions never rewrote it, and the waiting agent timed
// out. Now that exit is non-zero, and the next decision (or `list`) writes the file from the
// chain. (The write is made to fail by a directory where the file goes, as a full disk fails it.)
#[test]
fn a_decision_file_lost_to_a_full_disk_is_written_again() {
    let e = Env::new();
    for id in ["w-1", "w-2", "w-3"] {
        assert_eq!(e.propose("draft.compose", "agent-a", id, &[]).status.code(), Some(0));
    }
    let blocker = e.spool().join("decisions/w-1.json");
    std::fs::create_dir_all(&blocker).expect("a directory where the file goes");
    let o = e.run(&["approve", "--yes", "w-1"]);
    assert_ne!(o.status.code(), Some(0), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("decision file was not written"), "{}", text(&o));
    // Space returns; the next decision on another packet restores w-1's file from the chain.
    std::fs::remove_dir(&blocker).expect("rmdir");
    assert_eq!(e.run(&["approve", "--yes", "w-2"]).status.code(), Some(0));
    let restored: Value =
        serde_json::from_slice(&std::fs::read(&blocker).expect("w-1's decision file is back")).expect("json");
    assert_eq!(restored["document"]["packet_id"], "w-1");
    assert_eq!(restored["document"]["decision"], "approve");
    // The waiting agent gets it: `propose --wait` on a decided id answers at once.
    let o = e.run(&["check-preconditions", "w-1"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // And a listing restores too.
    std::fs::remove_file(e.spool().join("decisions/w-2.json")).expect("rm");
    let o = e.run(&["list"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(e.spool().join("decisions/w-2.json").exists(), "list wrote it again: {}", text(&o));
}

// §5: a spool re-created at the same path met the principal's old checkpoint copy, and signing
// was refused forever ("records were cut off") with no hint. Now the refusal names the way out,
// and `warrant checkpoint forget` shows what the checkpoint pinned before it forgets it.
#[test]
fn a_recreated_spool_is_told_how_to_forget_the_old_checkpoint() {
    let e = Env::new();
    for id in ["c-1", "c-2"] {
        assert_eq!(e.propose("draft.compose", "agent-a", id, &[]).status.code(), Some(0));
        assert_eq!(e.run(&["approve", "--yes", id]).status.code(), Some(0));
    }
    std::fs::remove_dir_all(e.spool()).expect("the spool is re-created");
    let o = e.run(&["init"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(e.propose("draft.compose", "agent-a", "n-1", &[]).status.code(), Some(0));
    let o = e.run(&["approve", "--yes", "n-1"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("cut off") && err.contains("warrant checkpoint forget"), "{err}");
    // Without a terminal or --yes it asks for --yes, and forgets nothing.
    let o = e.run(&["checkpoint", "forget"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("pins 2 records"), "{}", text(&o));
    assert_eq!(e.run(&["approve", "--yes", "n-1"]).status.code(), Some(1), "still pinned");
    let o = e.run(&["checkpoint", "forget", "--yes"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("forgot"), "{}", text(&o));
    let o = e.run(&["approve", "--yes", "n-1"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(e.run(&["verify"]).status.code(), Some(0));
}

// ---- §6: the key, against an agent running as the principal's own user -------------------------

/// A passphrase file (mode 0600) holding `text`.
fn passphrase_file(e: &Env, name: &str, text: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    let path = e.dir.path().join(name);
    std::fs::write(&path, format!("{text}\n")).expect("write");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    path
}

fn with_passphrase(e: &Env, file: &std::path::Path, args: &[&str]) -> std::process::Output {
    e.cmd(args).env("WARRANT_PASSPHRASE_FILE", file).output().expect("run")
}

// §6: a coding agent runs as the principal's own user: it could read an unencrypted key and run
// `warrant approve` itself. The key is now encrypted at rest with a passphrase; without a
// terminal or WARRANT_PASSPHRASE_FILE nothing is signed, a wrong passphrase signs nothing, and
// no key is ever created behind the principal's back.
#[test]
fn a_same_user_agent_cannot_sign_with_a_protected_key() {
    let e = Env::without_key();
    // No key: signing does not create one; it names `keys init`.
    assert_eq!(e.propose("draft.compose", "agent-a", "p-1", &[]).status.code(), Some(0));
    let o = e.run(&["approve", "--yes", "p-1"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("warrant keys init"), "{}", text(&o));
    assert!(!e.config().join("principal.key").exists(), "no key was created");
    // `keys init` without a terminal needs the passphrase file (or --no-passphrase).
    let o = e.run(&["keys", "init"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let good = passphrase_file(&e, "pass", "correct horse battery staple");
    let o = with_passphrase(&e, &good, &["keys", "init"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let stored = std::fs::read_to_string(e.config().join("principal.key")).expect("key");
    assert!(stored.starts_with("-----BEGIN AGE ENCRYPTED FILE-----"), "{stored}");
    assert!(!stored.contains("PRIVATE KEY"), "the PEM is not stored in the clear");
    let o = e.run(&["keys", "show"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("protected  yes"), "{}", text(&o));
    assert_eq!(e.run(&["keys", "init", "--no-passphrase"]).status.code(), Some(1), "never overwritten");
    assert_eq!(std::fs::read_to_string(e.config().join("principal.key")).expect("key"), stored);
    // The agent: no terminal, no passphrase file.
    let o = e.run(&["approve", "--yes", "p-1"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("WARRANT_PASSPHRASE_FILE"), "{}", text(&o));
    // A passphrase file that is not there: the error names the variable, not only the path.
    let o = with_passphrase(&e, std::path::Path::new("/nope"), &["approve", "--yes", "p-1"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("WARRANT_PASSPHRASE_FILE names /nope") && err.contains("unset it"), "{err}");
    let wrong = passphrase_file(&e, "wrong", "incorrect horse");
    let o = with_passphrase(&e, &wrong, &["approve", "--yes", "p-1"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("wrong passphrase"), "{}", text(&o));
    assert_eq!(chain_lines(&e), 0, "nothing was signed");
    // The principal: the passphrase from the file, or typed on the terminal.
    let o = with_passphrase(&e, &good, &["approve", "--yes", "p-1"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(e.propose("draft.compose", "agent-a", "p-2", &[]).status.code(), Some(0));
    let o = on_a_terminal(&e, "approve p-2", "correct horse battery staple\ny\n");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(chain_lines(&e), 2);
    assert_eq!(e.run(&["verify"]).status.code(), Some(0));
}

/// Runs `warrant ARGS` as `user` (runuser), with its own configuration directory `config`.
fn as_user(user: &str, e: &Env, config: &std::path::Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new("runuser")
        .args(["-u", user, "--", cli_env::BIN])
        .args(args)
        .env("WARRANT_CONFIG", config)
        .env("WARRANT_SPOOL", e.spool())
        .env("WARRANT_PRINCIPAL", "alice")
        .env("XDG_DATA_HOME", config.join("data"))
        .env("HOME", config)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("runuser")
}

/// A Unix group and a user in it, removed when dropped.
struct AgentUser {
    group: String,
    user: String,
}

impl AgentUser {
    fn create() -> Self {
        let tag = std::process::id();
        let (group, user) = (format!("wag{tag}"), format!("wagent{tag}"));
        let ok = |c: &mut std::process::Command| c.status().is_ok_and(|s| s.success());
        assert!(ok(std::process::Command::new("groupadd").arg(&group)), "groupadd");
        assert!(ok(std::process::Command::new("useradd").args(["-M", "-N", "-G", &group, &user])), "useradd");
        Self { group, user }
    }
}

impl Drop for AgentUser {
    fn drop(&mut self) {
        let _ = std::process::Command::new("userdel").arg(&self.user).status();
        let _ = std::process::Command::new("groupdel").arg(&self.group).status();
    }
}

// §6: `warrant init --agents-group GROUP` makes the recommended set-up in one command. An agent
// in the group (a real user) can propose, publish receipts (`warrant receipt` failed before with
// "unsafe spool: owned by uid 0") and wait for decisions; it cannot append to the chain, write
// a decision, or sign.
#[test]
fn init_agents_group_shares_the_spool_and_nothing_an_agent_does_signs() {
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
    let e = Env::new();
    let agent = can_chown().then(AgentUser::create);
    let group = agent.as_ref().map_or_else(
        || uzers::get_current_groupname().map(|g| g.to_string_lossy().into_owned()).expect("my group"),
        |a| a.group.clone(),
    );
    let o = e.run(&["init", "--agents-group", &group]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let gid = uzers::get_group_by_name(&group).expect("group").gid();
    let mode = |p: &str| {
        let m = std::fs::symlink_metadata(e.spool().join(p)).expect(p);
        (m.permissions().mode() & 0o7777, m.gid())
    };
    assert_eq!(mode(""), (0o755, gid));
    assert_eq!(mode("decisions"), (0o755, gid));
    assert_eq!(mode("packets"), (0o3770, gid));
    assert_eq!(mode("receipts"), (0o3770, gid));
    assert_eq!(mode("chain.jsonl"), (0o644, gid));
    assert_eq!(mode(".chain.lock").0, 0o600);
    let again = e.run(&["init", "--agents-group", &group]);
    assert!(String::from_utf8_lossy(&again.stdout).matches("already right").count() >= 6, "{}", text(&again));
    assert_eq!(e.run(&["init", "--agents-group", "no-such-group-xyz"]).status.code(), Some(2));
    let Some(agent) = agent else { return };
    // The agent's side: a home it owns, the principal's public key pinned there.
    std::fs::set_permissions(e.dir.path(), std::fs::Permissions::from_mode(0o755)).expect("traversable");
    let home = e.dir.path().join("agent-home");
    std::fs::create_dir_all(&home).expect("home");
    let uid = uzers::get_user_by_name(&agent.user).expect("user").uid();
    std::os::unix::fs::chown(&home, Some(uid), None).expect("chown");
    let public = e.config().join("principal.pub");
    std::fs::set_permissions(e.config(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let pin = as_user(&agent.user, &e, &home, &["keys", "pin", "--principal", "alice", public.to_str().expect("utf8")]);
    assert_eq!(pin.status.code(), Some(0), "{}", text(&pin));
    let o = as_user(
        &agent.user,
        &e,
        &home,
        &["propose", "--class", "draft.compose", "--agent", "agent-a", "--summary", "s", "--id", "a-1"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(std::fs::metadata(e.spool().join("packets/a-1.json")).expect("packet").uid(), uid);
    let o = as_user(
        &agent.user,
        &e,
        &home,
        &["receipt", "--class", "draft.compose", "--outcome", "execute", "--agent", "agent-a"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let receipt: Value = serde_json::from_slice(&o.stdout).expect("json");
    assert!(receipt["published"].as_str().is_some_and(|p| p.contains("receipts/")), "{receipt}");
    // Nothing it does signs or appends.
    for attempt in [
        format!("echo x >> {}", e.spool().join("chain.jsonl").display()),
        format!("echo '{{}}' > {}", e.spool().join("decisions/a-1.json").display()),
    ] {
        let st = std::process::Command::new("runuser")
            .args(["-u", &agent.user, "--", "sh", "-c", &attempt])
            .output()
            .expect("sh");
        if attempt.starts_with("rm") {
            continue;
        }
        assert!(!st.status.success(), "the agent could: {attempt}");
    }
    let o = as_user(&agent.user, &e, &home, &["approve", "--yes", "a-1"]);
    assert_ne!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(chain_lines(&e), 0);
    // The principal decides; the agent waiting for it gets the signed decision.
    let waiter = std::process::Command::new("runuser")
        .args([
            "-u",
            &agent.user,
            "--",
            cli_env::BIN,
            "propose",
            "--class",
            "draft.compose",
            "--agent",
            "agent-a",
            "--summary",
            "s",
            "--id",
            "a-2",
            "--wait",
            "30",
        ])
        .env("WARRANT_CONFIG", &home)
        .env("WARRANT_SPOOL", e.spool())
        .env("XDG_DATA_HOME", home.join("data"))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("waiter");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !e.spool().join("packets/a-2.json").exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let o = e.run(&["approve", "--yes", "a-2"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let waited = waiter.wait_with_output().expect("waiter");
    assert_eq!(waited.status.code(), Some(0), "approved, verified by the agent: {}", text(&waited));
    assert_eq!(e.run(&["verify"]).status.code(), Some(0));
}

// Issue "guarantees on the things themselves" §3: while `ag1` was quarantined, the same publisher
// proposed as `AG1`, `Ag1`, `ag1.` and `ag1_`, and those packets were pending and approvable.
// Agent ids that differ only by case or punctuation are one agent for the principal's controls:
// each is blocked, and cannot be approved.
#[test]
fn a_quarantine_holds_every_id_confusable_with_the_agents() {
    let e = Env::new();
    let o = e.propose("draft.compose", "ag1", "p-0", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = e.run(&["agent", "quarantine", "ag1", "--reason", "odd pushes"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    for (i, id) in ["AG1", "Ag1", "ag1.", "ag1_"].iter().enumerate() {
        let packet = format!("p-{}", i + 1);
        let o = e.propose("draft.compose", id, &packet, &[]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let o = e.run(&["list", "--json"]);
        let all: Value = serde_json::from_slice(&o.stdout).expect("json");
        let listed =
            all["packets"].as_array().expect("packets").iter().find(|p| p["packet_id"] == json!(packet)).cloned();
        let listed = listed.expect("listed");
        assert_eq!(listed["state"], json!("blocked"), "{id} escaped the quarantine of ag1: {listed}");
        let o = e.run(&["approve", "--yes", &packet]);
        assert_ne!(o.status.code(), Some(0), "{id}'s packet was approved: {}", text(&o));
    }
    // An agent waiting under a confusable id is told at once that it is quarantined (exit 8),
    // as `ag1` itself is, instead of waiting out its time.
    let o = e.run(&[
        "propose",
        "--class",
        "draft.compose",
        "--agent",
        "Ag1",
        "--summary",
        "s",
        "--id",
        "p-w",
        "--wait",
        "20",
    ]);
    assert_eq!(o.status.code(), Some(8), "{}", text(&o));
}

// Issue "guarantees on the things themselves" §3: a precondition was an oracle. An agent named a
// file it cannot read (`secret.env`, the principal's, mode 0600) in a `file.sha256` check; after
// approval the world-readable decision file and chain carried the file's SHA-256, enough to
// brute-force a short secret; `file.exists` likewise told whether a path it cannot reach exists.
// A precondition observes only what its publisher may read: the approval is refused with the
// reason, the list shows the packet blocked, and the digest appears nowhere.
#[test]
fn a_precondition_observes_only_what_its_publisher_may_read() {
    use sha2::Digest as _;
    use std::os::unix::fs::PermissionsExt as _;
    if !can_chown() {
        return;
    }
    let e = Env::new();
    assert_eq!(e.propose("draft.compose", "agent-a", "p-0", &[]).status.code(), Some(0));
    assert_eq!(e.run(&["approve", "--yes", "p-0"]).status.code(), Some(0));
    let work = workspace(&e);
    // The way to the workspace is open to everyone; the secret and one directory are not.
    std::fs::set_permissions(e.dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::fs::set_permissions(&work, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let secret = work.join("secret.env");
    std::fs::write(&secret, "PASSWORD=hunter2\n").expect("write");
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let private = work.join("private");
    std::fs::create_dir_all(&private).expect("mkdir");
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    std::fs::write(private.join("plan.txt"), "x").expect("write");
    let open = work.join("open.txt");
    std::fs::write(&open, "open").expect("write");
    let publish = |id: &str, check: &str, path: &std::path::Path| {
        e.publish_governed(
            id,
            "agent-m",
            precondition_contract(json!([{"check_id": check, "parameters": {"path": path.to_str()},
                "expected_at_approval": null, "must_revalidate_at_execution": true}])),
        );
        std::os::unix::fs::chown(e.spool().join("packets").join(format!("{id}.json")), Some(MALLORY), None)
            .expect("chown");
    };
    publish("p-secret", "file.sha256", &secret);
    publish("p-hidden", "file.exists", &private.join("plan.txt"));
    publish("p-open", "file.sha256", &open);
    for (id, what) in [("p-secret", "may not read"), ("p-hidden", "may not search")] {
        assert_eq!(listed(&e, id)["state"], json!("blocked"), "{id}");
        let o = e.run(&["approve", "--yes", id]);
        assert_ne!(o.status.code(), Some(0), "{id} was approved: {}", text(&o));
        assert!(String::from_utf8_lossy(&o.stderr).contains(what), "{id}: {}", text(&o));
    }
    let digest = warrant::protocol::canonical::hex(&sha2::Sha256::digest(b"PASSWORD=hunter2\n"));
    assert!(!spool_text(&e).contains(&digest), "the secret's digest is in the spool");
    // What the publisher may read is observed and recorded as before.
    let o = e.run(&["approve", "--yes", "p-open"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let opened = warrant::protocol::canonical::hex(&sha2::Sha256::digest(b"open"));
    assert!(spool_text(&e).contains(&opened), "the readable file's digest is recorded");
}

// Issue "guarantees on the things themselves" §3: while `ag1` was quarantined, the same Unix user
// published as `ag1-2` (not confusable with `ag1`, so its own agent), and that packet was pending
// and approvable. A control on an agent holds every packet its publisher may speak for: the
// quarantine binds `ag1` to its publisher in the chain, and that user's packets under any id are
// blocked; another user's are not, nor the principal's own.
#[test]
fn a_quarantine_holds_every_packet_its_agents_publisher_sends_under_any_id() {
    if !can_chown() {
        return;
    }
    let e = Env::new();
    publish_as(&e, MALLORY, "q-0", &packet_doc("q-0", "ag1", "draft.compose"));
    let o = e.run(&["agent", "quarantine", "ag1", "--reason", "odd pushes"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    publish_as(&e, MALLORY, "q-1", &packet_doc("q-1", "ag1-2", "draft.compose"));
    publish_as(&e, ALICE_AGENT, "q-2", &packet_doc("q-2", "agent-b", "draft.compose"));
    assert_eq!(e.propose("draft.compose", "agent-c", "q-3", &[]).status.code(), Some(0));
    let held = listed(&e, "q-1");
    assert_eq!(held["state"], json!("blocked"), "{held}");
    assert_eq!(held["decisive_model"], json!("identity"), "{held}");
    let o = e.run(&["approve", "--yes", "q-1"]);
    assert_ne!(o.status.code(), Some(0), "the quarantined agent's publisher got an approval: {}", text(&o));
    for id in ["q-2", "q-3"] {
        assert_ne!(listed(&e, id)["state"], json!("blocked"), "{id} is another publisher's");
        let o = e.run(&["approve", "--yes", id]);
        assert_eq!(o.status.code(), Some(0), "{id}: {}", text(&o));
    }
    // Released, the publisher's other agents are its own again.
    let o = e.run(&["agent", "release", "ag1", "--reason", "checked"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_ne!(listed(&e, "q-1")["state"], json!("blocked"));
}

// A mistyped passphrase on the terminal (issue 32, item 14): asked again, three tries in all, as
// ssh does; the console and approve quit on the first. Three wrong ones sign nothing.
#[test]
fn a_mistyped_passphrase_on_the_terminal_is_asked_again_three_times_in_all() {
    let e = Env::without_key();
    let good = passphrase_file(&e, "pass", "correct horse battery staple");
    assert_eq!(with_passphrase(&e, &good, &["keys", "init"]).status.code(), Some(0));
    for id in ["p-1", "p-2"] {
        assert_eq!(e.propose("draft.compose", "agent-a", id, &[]).status.code(), Some(0));
    }
    let o = on_a_terminal(&e, "approve p-1", "incorrect horse\ncorrect horse battery staple\ny\n");
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("wrong passphrase, try again (2 of 3 tries left)") && out.contains("approved p-1"), "{out}");
    let o = on_a_terminal(&e, "approve p-2", "one\ntwo\nthree\n");
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(2), "{out}");
    assert_eq!(out.matches("try again").count(), 2, "{out}");
    assert!(out.contains("wrong passphrase (nothing was signed)"), "{out}");
    assert_eq!(chain_lines(&e), 1);
}
