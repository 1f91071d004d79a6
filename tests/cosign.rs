//! Co-signing: `policy.toml` can require `k` of `n` pinned principals for a class
//! (here a local `payment.transfer`: Trust Graduation's `payment.initiate` is human-only, which
//! no approval releases to an agent, however many sign it).
//! Each approval is its own signed chain record; the decision file is written, and the agent
//! released, only when `k` distinct listed principals have approved; one refusal refuses; a
//! principal cannot sign twice, one not listed cannot sign at all; `warrant verify` reports an
//! approval of such a class that lacks its quorum. Real keys, the real binary, the real hook.

use crate::cli_env;
use cli_env::{BIN, text};
use serde_json::{Value, json};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};
use warrant::store::prelude::*;

/// The terms every test's spool asks for a payment.
const POLICY: &str = r#"
[[class]]
id = "payment.transfer"
type = "external"
risk = "critical"

[tools."mcp__bank__transfer"]
tier = "destructive"
class = "payment.transfer"

[cosign."payment.transfer"]
required = 2
principals = ["alice", "bob", "carol"]
"#;

/// A shared spool and one configuration directory (own key, every other key pinned) per
/// principal: alice, bob and carol are the quorum's, dave is pinned but not listed.
struct Team {
    dir: tempfile::TempDir,
}

const PEOPLE: [&str; 4] = ["alice", "bob", "carol", "dave"];

impl Team {
    fn new(policy: &str) -> Self {
        Self::of(policy, &PEOPLE)
    }

    /// A team of `people` only, each with a key, each pinning every other's.
    fn of(policy: &str, people: &[&'static str]) -> Self {
        let t = Team { dir: tempfile::tempdir().expect("tempdir") };
        std::fs::create_dir_all(t.spool()).expect("spool");
        std::fs::write(t.spool().join("policy.toml"), policy).expect("policy.toml");
        for who in people {
            ok(&t.run(who, &["keys", "init", "--no-passphrase"]));
        }
        for who in people.iter().copied() {
            let pem = t.run(who, &["keys", "export"]);
            ok(&pem);
            let file = t.dir.path().join(format!("{who}.pub"));
            std::fs::write(&file, &pem.stdout).expect("write the public key");
            for other in people.iter().filter(|o| **o != who) {
                ok(&t.run(other, &["keys", "pin", "--principal", who, file.to_str().expect("utf-8")]));
            }
        }
        t
    }

    fn spool(&self) -> PathBuf {
        self.dir.path().join("spool")
    }

    fn config(&self, who: &str) -> PathBuf {
        self.dir.path().join(format!("config-{who}"))
    }

    fn cmd(&self, who: &str, args: &[&str]) -> Command {
        self.cmd_named(who, who, args)
    }

    /// `who`'s configuration (key, pins), signing under the name `name`.
    fn cmd_named(&self, who: &str, name: &str, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.args(args)
            .env("WARRANT_CONFIG", self.config(who))
            .env("WARRANT_SPOOL", self.spool())
            .env("WARRANT_PRINCIPAL", name)
            .env("XDG_DATA_HOME", self.dir.path().join(format!("data-{who}")))
            .stdin(Stdio::null());
        c
    }

    fn run(&self, who: &str, args: &[&str]) -> Output {
        self.cmd(who, args).output().expect("run warrant")
    }

    /// Claude Code's PreToolUse of the bank's transfer tool as call `id`, run by alice's hook.
    fn hold_payment(&self, id: &str) -> Child {
        let event = json!({
            "session_id": "s-1", "cwd": "/home/user/project", "hook_event_name": "PreToolUse",
            "tool_name": "mcp__bank__transfer", "tool_input": {"to": "ACME GmbH", "amount": 4200, "currency": "EUR"},
            "tool_use_id": id,
        });
        let mut child = self
            .cmd("alice", &["hook", "claude-code", "--wait", "30"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn the hook");
        child.stdin.take().expect("stdin").write_all(event.to_string().as_bytes()).expect("write the event");
        let packet = self.spool().join("packets").join(format!("cc-{id}.json"));
        let t = Instant::now();
        while !packet.exists() {
            assert!(t.elapsed() < Duration::from_secs(20), "cc-{id} was never published");
            std::thread::sleep(Duration::from_millis(50));
        }
        child
    }

    fn decision_file(&self, packet: &str) -> PathBuf {
        self.spool().join("decisions").join(format!("{packet}.json"))
    }

    fn chain_lines(&self) -> Vec<Value> {
        std::fs::read_to_string(self.spool().join("chain.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("a chain line"))
            .collect()
    }
}

fn ok(o: &Output) {
    assert_eq!(o.status.code(), Some(0), "{}", text(o));
}

/// The hook's decision and reason.
fn hook_answer(child: Child) -> (String, String) {
    let o = child.wait_with_output().expect("hook");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
    let out = &v["hookSpecificOutput"];
    (
        out["permissionDecision"].as_str().expect("decision").to_owned(),
        out["permissionDecisionReason"].as_str().expect("reason").to_owned(),
    )
}

/// The call `id` is still held: the judgement the waiting hook makes on every change to the
/// spool, made here on the same spool and pins, holds it (no wall-clock wait for something not
/// to happen), and the hook has not answered.
fn still_held(t: &Team, id: &str, child: &mut Child) {
    let governor = warrant::govern::Governor::open(warrant::store::spool::Spool::new(t.spool()), &t.config("alice"))
        .expect("governor");
    match governor.judge(id) {
        Ok((_, warrant::govern::Outcome::Hold { .. })) => {}
        Ok((_, other)) => panic!("{id} would be released: {other:?}"),
        Err(e) => panic!("{id} is not judged: {e}"),
    }
    assert!(child.try_wait().expect("try_wait").is_none(), "the agent was released early");
}

#[test]
fn a_payment_runs_only_when_two_of_three_pinned_principals_have_signed() {
    let t = Team::new(POLICY);
    let mut hook = t.hold_payment("pay-1");
    let id = "cc-pay-1";

    // bob's approval is the first of two: recorded in the chain, no decision file, still held.
    let o = t.run("bob", &["approve", "--yes", id]);
    ok(&o);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("1/2 signed (bob)") && out.contains("waits for 1 more of alice, carol"), "{out}");
    assert!(!t.decision_file(id).exists(), "one signature wrote a decision file");
    still_held(&t, id, &mut hook);
    let list = t.run("alice", &["list"]);
    assert!(String::from_utf8_lossy(&list.stdout).contains("co-signing: 1/2 signed (bob)"), "{}", text(&list));

    // bob again, and dave (pinned, not listed): refused, nothing appended.
    let before = t.chain_lines().len();
    let again = t.run("bob", &["approve", "--yes", id]);
    assert_ne!(again.status.code(), Some(0), "{}", text(&again));
    assert!(text(&again).contains("already has your approval"), "{}", text(&again));
    let dave = t.run("dave", &["approve", "--yes", id]);
    assert_ne!(dave.status.code(), Some(0), "{}", text(&dave));
    assert!(text(&dave).contains("needs the approval of 2 of alice, bob, carol"), "{}", text(&dave));
    assert_eq!(t.chain_lines().len(), before, "a refused signature appended a record");
    still_held(&t, id, &mut hook);

    // carol's approval meets the quorum: the decision file carries both, the agent runs.
    let o = t.run("carol", &["approve", "--yes", id]);
    ok(&o);
    assert!(String::from_utf8_lossy(&o.stdout).contains("2/2 signed (bob, carol)"), "{}", text(&o));
    let (d, reason) = hook_answer(hook);
    assert_eq!(d, "allow", "{reason}");
    assert!(reason.contains("bob + carol"), "the reason names both signers: {reason}");

    // Each signature is its own record; the second names both co-signers.
    let docs: Vec<Value> = t
        .chain_lines()
        .into_iter()
        .filter_map(|r| r["metadata"].get("warrant_decision").cloned())
        .filter(|d| d["packet_id"] == json!(id))
        .collect();
    assert_eq!(docs.len(), 2, "{docs:?}");
    assert_eq!(docs[0]["principal"], json!("bob"));
    assert_eq!(docs[0]["quorum"], json!({"required": 2, "principals": ["alice", "bob", "carol"]}));
    assert!(docs[0].get("cosigners").is_none(), "{:?}", docs[0]);
    assert_eq!(docs[1]["cosigners"], json!(["bob", "carol"]));
    let file: Value =
        serde_json::from_slice(&std::fs::read(t.decision_file(id)).expect("decision file")).expect("json");
    assert_eq!(file["cosignatures"].as_array().map(Vec::len), Some(1), "{file}");

    // A third approval finds it decided; the chain verifies with its quorum for everyone.
    let late = t.run("alice", &["approve", "--yes", id]);
    assert_ne!(late.status.code(), Some(0), "{}", text(&late));
    assert!(text(&late).contains("already decided"), "{}", text(&late));
    for who in ["alice", "bob", "carol"] {
        ok(&t.run(who, &["verify"]));
    }
    let listed = t.run("alice", &["list", "--json"]);
    let v: Value = serde_json::from_slice(&listed.stdout).expect("json");
    assert_eq!(v["packets"][0]["decision"], json!("approve"), "{v}");
    assert_eq!(v["packets"][0]["cosigners"], json!(["bob", "carol"]), "{v}");
    // The audit shows the first record as a co-signature, the second as the approval.
    let audit = t.run("alice", &["audit", "--json"]);
    let decisions: Vec<String> = String::from_utf8_lossy(&audit.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["packet_id"] == json!(id))
        .map(|e| e["decision"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(decisions, ["co-sign", "approve"], "{}", text(&audit));
}

#[test]
fn one_refusal_refuses_a_co_signed_payment() {
    let t = Team::new(POLICY);
    let hook = t.hold_payment("pay-2");
    ok(&t.run("alice", &["approve", "--yes", "cc-pay-2"]));
    ok(&t.run("carol", &["refuse", "--yes", "cc-pay-2", "--reason", "not this vendor"]));
    let (d, reason) = hook_answer(hook);
    assert_eq!(d, "deny", "{reason}");
    assert!(reason.contains("refused by carol") && reason.contains("not this vendor"), "{reason}");
    // bob's approval after the refusal is too late.
    let o = t.run("bob", &["approve", "--yes", "cc-pay-2"]);
    assert_ne!(o.status.code(), Some(0), "{}", text(&o));
    ok(&t.run("alice", &["verify"]));
}

#[test]
fn a_single_signature_never_releases_the_agent_even_as_a_forged_decision_file() {
    let t = Team::new(POLICY);
    let mut hook = t.hold_payment("pay-3");
    let id = "cc-pay-3";
    ok(&t.run("bob", &["approve", "--yes", id]));
    // Someone with write access to decisions/ plants bob's genuine signature as a decision file,
    // and another with bob's signature listed twice: neither makes up the quorum.
    let rec = t.chain_lines().into_iter().find(|r| r["metadata"]["warrant_decision"]["packet_id"] == json!(id));
    let rec = rec.expect("bob's record");
    let mut sig = rec["metadata"]["approval"]["signatures"][0].clone();
    sig.as_object_mut().expect("object").retain(|k, _| k != "reviewer" && k != "signed_at");
    let doc = rec["metadata"]["warrant_decision"].clone();
    let single = json!({"type": "warrant_decision", "version": 1, "packet_id": id, "decision": "approve",
        "document": doc, "signature": sig, "chain": {"chain_index": rec["chain_index"], "entry_hash": rec["entry_hash"]}});
    let mut twice = single.clone();
    twice["cosignatures"] = json!([{"document": doc, "signature": sig}]);
    let pinned = warrant::protocol::keys::PinnedKeys::load(&t.config("alice")).expect("alice's pins");
    let hash = doc["packet_hash"].as_str().expect("hash");
    for (name, file) in [("single", &single), ("twice", &twice)] {
        let err = warrant::protocol::decision::verify_decision_file(file, id, Some(hash), &pinned).expect_err(name);
        assert!(matches!(err, warrant::protocol::decision::DecisionError::Quorum(_)), "{name}: {err}");
    }
    std::fs::create_dir_all(t.spool().join("decisions")).expect("decisions dir");
    std::fs::write(t.decision_file(id), serde_json::to_vec(&twice).expect("json")).expect("plant");
    // The planted file releases nothing; refused to end the wait.
    still_held(&t, id, &mut hook);
    ok(&t.run("alice", &["refuse", "--yes", id, "--reason", "end of test"]));
    let (d, reason) = hook_answer(hook);
    assert_eq!(d, "deny", "{reason}");
}

#[test]
fn verify_reports_an_approval_that_lacks_the_quorum_the_policy_asks() {
    // A payment approved by one principal before `[cosign]` named the class.
    let t = Team::new("");
    ok(&t.run(
        "alice",
        &["propose", "--class", "payment.transfer", "--agent", "payer", "--summary", "s", "--id", "p-1"],
    ));
    ok(&t.run("alice", &["approve", "--yes", "p-1"]));
    ok(&t.run("alice", &["verify"]));
    std::fs::write(t.spool().join("policy.toml"), POLICY).expect("policy.toml");
    let o = t.run("alice", &["verify"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("the approval of p-1 (payment.transfer) is signed by alice"), "{err}");
    assert!(err.contains("2 of alice, bob, carol"), "{err}");
    let o = t.run("alice", &["verify", "--json"]);
    let v: Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["findings"][0]["check"], json!("quorum"), "{v}");
    // A batch cannot approve a co-signed class; a grant cannot cover one.
    ok(&t.run(
        "alice",
        &["propose", "--class", "payment.transfer", "--agent", "payer", "--summary", "s", "--id", "p-2"],
    ));
    ok(&t.run(
        "alice",
        &["propose", "--class", "payment.transfer", "--agent", "payer", "--summary", "s", "--id", "p-3"],
    ));
    let o = t.run("alice", &["approve", "--yes", "p-2", "p-3"]);
    assert_ne!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("approve it on its own"), "{}", text(&o));
    let o = t.run("alice", &["approve", "--yes", "p-2", "--scope", "session"]);
    assert_ne!(o.status.code(), Some(0), "{}", text(&o));
}

#[test]
fn the_policy_rejects_impossible_quorums() {
    use warrant::protocol::graduation::policy::PolicySet;
    let bad = [
        ("required = 0\nprincipals = [\"a\", \"b\"]", "required"),
        ("required = 3\nprincipals = [\"a\", \"b\"]", "required"),
        ("required = 2\nprincipals = [\"a\", \"a\"]", "listed twice"),
        ("required = 1\nprincipals = [\" a\"]", "white space"),
    ];
    for (body, why) in bad {
        let text = format!("[cosign.\"payment.initiate\"]\n{body}");
        let err = PolicySet::from_toml(&text).expect_err(body).to_string();
        assert!(err.contains(why), "{body}: {err}");
    }
    let err = PolicySet::from_toml("[cosign.\"payment.*\"]\nrequired = 1\nprincipals = [\"a\"]").expect_err("glob");
    assert!(err.to_string().contains("not a class id"), "{err}");
    // A co-signed class always requires approval: it never graduates to run on its own.
    let plain = PolicySet::from_toml("").expect("empty");
    assert!(!plain.policy("draft.compose").approval_required(), "the contrast below needs a class that graduates");
    let set =
        PolicySet::from_toml("[cosign.\"draft.compose\"]\nrequired = 2\nprincipals = [\"b\", \"a\"]").expect("valid");
    let q = set.cosign("draft.compose").expect("terms");
    assert_eq!((q.required, q.principals.as_slice()), (2, &["a".to_owned(), "b".to_owned()][..]));
    assert!(set.policy("draft.compose").approval_required());
    assert!(!set.policy("draft.compose").is_human_only());
    assert!(set.cosign("email.draft").is_none());
}

#[test]
fn only_the_approval_that_meets_the_quorum_is_evidence() {
    let t = Team::new(POLICY);
    ok(&t.run(
        "alice",
        &["propose", "--class", "payment.transfer", "--agent", "payer", "--summary", "s", "--id", "p-1"],
    ));
    let pinned = warrant::protocol::keys::PinnedKeys::load(&t.config("alice")).expect("pins");
    let spool = warrant::store::spool::Spool::new(t.spool());
    ok(&t.run("alice", &["approve", "--yes", "p-1"]));
    let view = warrant::store::spool::verify_chain(&spool, &pinned).expect("chain");
    assert!(view.decisions.is_empty(), "one signature decided: {:?}", view.decisions);
    assert_eq!(view.cosigning["p-1"].signers(), ["alice"]);
    assert_eq!(view.evidence.count("payment.transfer"), 0, "a co-signature counted as evidence");
    ok(&t.run("carol", &["approve", "--yes", "p-1"]));
    let view = warrant::store::spool::verify_chain(&spool, &pinned).expect("chain");
    assert_eq!(view.decisions["p-1"].cosigners, ["alice", "carol"]);
    assert!(view.cosigning.is_empty());
    assert_eq!(view.evidence.count("payment.transfer"), 1, "one packet approved, one evidence row");
    // Lost decision files are written again from the chain with both signatures.
    std::fs::remove_file(t.decision_file("p-1")).expect("remove the decision file");
    ok(&t.run("alice", &["list"]));
    let file: Value = serde_json::from_slice(&std::fs::read(t.decision_file("p-1")).expect("restored")).expect("json");
    let hash = file["document"]["packet_hash"].as_str().expect("hash").to_owned();
    let quorum =
        warrant::protocol::decision::Quorum::new(2, ["alice", "bob", "carol"].map(str::to_owned)).expect("terms");
    let d = warrant::protocol::decision::verify_decision_file_under(&file, "p-1", Some(&hash), &pinned, Some(&quorum))
        .expect("the restored file meets the quorum");
    assert_eq!(d.cosigners, ["alice", "carol"]);
}

/// The console of a co-signer: the Pending list shows `✍1/2` beside the class, the detail who
/// has signed and what is needed, and `a` by someone who signed already opens no dialog.
#[cfg(feature = "console")]
#[test]
fn the_console_shows_how_many_have_signed_and_refuses_a_second_signature() {
    use crate::screen as support_screen;
    use std::sync::Arc;
    use warrant::console::app::{self, Action, Mode, State};
    use warrant::console::keymap::{Key, Keymap};

    let t = Team::new(POLICY);
    let hook = t.hold_payment("pay-4");
    ok(&t.run("bob", &["approve", "--yes", "cc-pay-4"]));
    let pinned = warrant::protocol::keys::PinnedKeys::load(&t.config("bob")).expect("pins");
    let spool = warrant::store::spool::Spool::new(t.spool());
    let view = warrant::store::spool::verify_chain(&spool, &pinned).expect("chain");
    let snap = warrant::store::spool::Scanner::new().scan(&spool).expect("scan");
    let policies = warrant::protocol::graduation::policy::PolicySet::from_toml(POLICY).expect("policy");
    let now = time::OffsetDateTime::now_utc().unix_timestamp() as f64;
    let console = |who: &str| {
        let mut s = State::new(
            t.spool().display().to_string(),
            Some(who.into()),
            Some("SHA256:x".into()),
            false,
            Keymap::default_map(),
            now,
        )
        .with_policies(Arc::new(policies.clone()));
        app::update(&mut s, Action::Scanned(snap.clone()));
        if let Some(job) = s.assess_job() {
            app::update(&mut s, Action::Assessed(Box::new(job.run())));
        }
        app::update(&mut s, Action::ChainVerified(Box::new(view.clone())));
        app::update(&mut s, Action::Resize { width: 160, height: 48 });
        s
    };
    let mut bob = console("bob");
    let screen = support_screen::screen(&bob, 160, 48);
    assert!(screen.contains("payment.transfer ✍1/2"), "{screen}");
    assert!(screen.contains("1/2 signed (bob) · needs 2 of alice, bob, carol"), "{screen}");
    app::update(&mut bob, Action::Key(Key::parse("a").expect("key")));
    assert_eq!(bob.mode, Mode::Normal, "a second signature opened a dialog");
    let flash = bob.flash.as_ref().map(|f| f.text.clone()).unwrap_or_default();
    assert!(flash.contains("has your approval already"), "{flash}");
    // carol's console opens the dialog, and it says what her signature completes.
    let mut carol = console("carol");
    app::update(&mut carol, Action::Key(Key::parse("a").expect("key")));
    assert!(matches!(carol.mode, Mode::Confirm(_)), "{:?}", carol.mode);
    let dialog = support_screen::screen(&carol, 160, 48);
    assert!(dialog.contains("co-sign") && dialog.contains("1/2 signed (bob)"), "{dialog}");
    assert!(dialog.contains("yours is 2 of 2: it approves the packet"), "{dialog}");
    ok(&t.run("alice", &["refuse", "--yes", "cc-pay-4", "--reason", "end of test"]));
    assert_eq!(hook_answer(hook).0, "deny");
}

/// The fingerprint `warrant keys show` prints for `who`.
fn fingerprint(t: &Team, who: &str) -> String {
    let o = t.run(who, &["keys", "show"]);
    ok(&o);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    out.split_whitespace().find(|w| w.starts_with("SHA256:")).expect("a fingerprint").to_owned()
}

#[test]
fn a_principal_cannot_take_another_principals_name_to_sign_twice() {
    let t = Team::new(POLICY);
    ok(&t.run(
        "carol",
        &["propose", "--class", "payment.transfer", "--agent", "payer", "--summary", "s", "--id", "p-1"],
    ));
    ok(&t.run("carol", &["approve", "--yes", "p-1"]));
    // With bob's key pinned, carol's own command line refuses the rename.
    let o = t.run("carol", &["keys", "rename", "bob"]);
    assert_ne!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("another principal's name"), "{}", text(&o));
    // Without it pinned, her rename is appended, but it takes a name alice's pins give bob's key:
    // for alice the record is forged. Her second approval, as "bob", is refused where she signs
    // it: her key has approved already (one key counts once, whatever name it signs under).
    ok(&t.run("carol", &["keys", "unpin", &fingerprint(&t, "bob")]));
    ok(&t.run("carol", &["keys", "rename", "bob"]));
    let o = t.cmd_named("carol", "bob", &["approve", "--yes", "p-1"]).output().expect("run");
    assert_ne!(o.status.code(), Some(0), "carol's key signed twice: {}", text(&o));
    assert!(text(&o).contains("already has your approval"), "{}", text(&o));
    let verify = t.run("alice", &["verify"]);
    assert_eq!(verify.status.code(), Some(1), "{}", text(&verify));
    assert!(text(&verify).contains("a rename never takes another principal's name"), "{}", text(&verify));
    let pinned = warrant::protocol::keys::PinnedKeys::load(&t.config("alice")).expect("pins");
    let view =
        warrant::store::spool::verify_chain(&warrant::store::spool::Spool::new(t.spool()), &pinned).expect("chain");
    assert!(!view.decisions.contains_key("p-1"), "alice's view counts carol once: {:?}", view.decisions.get("p-1"));
    // And an agent told to check before it runs is told no.
    let check = t.run("alice", &["check-preconditions", "p-1"]);
    assert_ne!(check.status.code(), Some(0), "{}", text(&check));
}

#[test]
fn an_approval_runs_only_with_its_decision_file_and_check_preconditions_asks_the_quorum() {
    // An ordinary class, approved in the chain; its decision file is removed after the governor
    // judged the call allowed (the agent can write decisions/): the call is blocked before it runs.
    use warrant::govern::{Governor, Outcome};
    let t = Team::new(POLICY);
    let governor = Governor::open(warrant::store::spool::Spool::new(t.spool()), &t.config("alice")).expect("governor");
    let call = warrant::protocol::calls::ToolCall {
        host: "claude-code".into(),
        agent: "claude-code".into(),
        session: Some("s-1".into()),
        tool: "mcp__mail__draft".into(),
        input: json!({"to": "dana@example.com"}),
        notebook: "project-1".into(),
        cwd: Some("/home/user/project".into()),
        workdir: None,
        annotations: Value::Null,
    };
    let submitted = governor.submit(&call, Some("d-1"), None).expect("submitted");
    assert!(matches!(submitted.outcome, Outcome::Hold { .. }), "{:?}", submitted.outcome);
    ok(&t.run("alice", &["approve", "--yes", &submitted.packet_id]));
    let (_, allowed) = governor.judge(&submitted.packet_id).expect("judged");
    assert!(matches!(allowed, Outcome::Allow { by_principal: true, .. }), "{allowed:?}");
    std::fs::remove_file(t.decision_file(&submitted.packet_id)).expect("remove the decision file");
    match governor.recheck_before_run(&submitted, &allowed) {
        Some(Outcome::Deny { status: "blocked", reason, .. }) => {
            assert!(reason.contains("not in decisions/"), "{reason}")
        }
        other => panic!("ran without its decision file: {other:?}"),
    }
    // A plain approval of a class the policy later co-signs: check-preconditions says no.
    let plain = Team::new("");
    ok(&plain.run(
        "alice",
        &["propose", "--class", "payment.transfer", "--agent", "payer", "--summary", "s", "--id", "p-1"],
    ));
    ok(&plain.run("alice", &["approve", "--yes", "p-1"]));
    ok(&plain.run("alice", &["check-preconditions", "p-1"]));
    std::fs::write(plain.spool().join("policy.toml"), POLICY).expect("policy.toml");
    let o = plain.run("alice", &["check-preconditions", "p-1"]);
    assert_ne!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("not enough co-signatures"), "{}", text(&o));
}

/// The attack of a quorum counted by names: alice approves, renames her key to `carol` (a
/// principal nobody pinned a key for), approves again under the new name and renames back.
/// One key counts once, for the name it is pinned for: her second approval is refused when she
/// signs it, and a decision file carrying her key's signature under both names (what a principal
/// who signs outside warrant could write) releases nothing, for alice's own hook or for bob.
#[test]
fn one_key_counts_once_however_many_names_it_signed_under() {
    let t = Team::of(POLICY, &["alice", "bob"]);
    let mut hook = t.hold_payment("pay-9");
    let id = "cc-pay-9";
    ok(&t.run("alice", &["approve", "--yes", id]));
    ok(&t.run("alice", &["keys", "rename", "carol"]));
    let o = t.cmd_named("alice", "carol", &["approve", "--yes", id]).output().expect("run");
    assert_ne!(o.status.code(), Some(0), "a second approval by one key was signed: {}", text(&o));
    assert!(text(&o).contains("already has your approval"), "{}", text(&o));
    ok(&t.cmd_named("alice", "carol", &["keys", "rename", "alice"]).output().expect("run"));
    still_held(&t, id, &mut hook);

    // The same key's signature under the name carol, made outside warrant, beside alice's own.
    let rec = t.chain_lines().into_iter().find(|r| r["metadata"]["warrant_decision"]["packet_id"] == json!(id));
    let rec = rec.expect("alice's record");
    let mut first_sig = rec["metadata"]["approval"]["signatures"][0].clone();
    first_sig.as_object_mut().expect("object").retain(|k, _| k != "reviewer" && k != "signed_at");
    let first_doc = rec["metadata"]["warrant_decision"].clone();
    let mut doc = first_doc.clone();
    doc["principal"] = json!("carol");
    doc["cosigners"] = json!(["alice", "carol"]);
    let key = t.config("alice").join("principal.key");
    let as_carol = warrant::protocol::keys::Principal::load(&key, "carol").expect("alice's key");
    let sig = warrant::protocol::decision::sign_document(&as_carol, &doc);
    let forged = json!({"type": "warrant_decision", "version": 1, "packet_id": id, "decision": "approve",
        "document": doc, "signature": sig, "chain": {"chain_index": 99, "entry_hash": "sha256:00"},
        "cosignatures": [{"document": first_doc, "signature": first_sig}]});
    let hash = first_doc["packet_hash"].as_str().expect("hash");
    for who in ["alice", "bob"] {
        let pinned = warrant::protocol::keys::PinnedKeys::load(&t.config(who)).expect("pins");
        let verdict = warrant::protocol::decision::verify_decision_file(&forged, id, Some(hash), &pinned);
        assert!(verdict.is_err(), "{who} counted one key twice: {verdict:?}");
    }
    std::fs::create_dir_all(t.spool().join("decisions")).expect("decisions dir");
    std::fs::write(t.decision_file(id), serde_json::to_vec(&forged).expect("json")).expect("plant");
    still_held(&t, id, &mut hook);

    // bob still sees one approval of two, and his approval is the second.
    let list = t.run("bob", &["list", "--json"]);
    let v: Value = serde_json::from_slice(&list.stdout).expect("json");
    assert_eq!(v["packets"][0]["cosigning"]["signed"], json!(["alice"]), "{v}");
    std::fs::remove_file(t.decision_file(id)).expect("remove the planted file");
    let o = t.run("bob", &["approve", "--yes", id]);
    ok(&o);
    assert!(String::from_utf8_lossy(&o.stdout).contains("2/2 signed (alice, bob)"), "{}", text(&o));
    let (d, reason) = hook_answer(hook);
    assert_eq!(d, "allow", "{reason}");
    assert!(reason.contains("alice + bob"), "{reason}");
}

/// The quorum is counted for the name a key is pinned for by the verifier: an approval under a
/// name the key is not pinned for (here by a rename announced in the chain, which bob's pins
/// learn as an earlier name only) does not count, and `verify` reports it.
#[test]
fn an_approval_under_a_name_its_key_is_not_pinned_for_does_not_count_and_verify_says_so() {
    let t = Team::of(POLICY, &["alice", "bob"]);
    let hook = t.hold_payment("pay-8");
    let id = "cc-pay-8";
    ok(&t.run("alice", &["keys", "rename", "carol"]));
    ok(&t.cmd_named("alice", "carol", &["approve", "--yes", id]).output().expect("run"));
    // For alice, her key is now carol's: her approval counts for carol there. For bob, who
    // pinned that key for alice, it counts for nobody.
    let list = t.run("bob", &["list", "--json"]);
    let v: Value = serde_json::from_slice(&list.stdout).expect("json");
    assert_eq!(v["packets"][0]["cosigning"]["signed"], json!([]), "{v}");
    assert!(
        v["packets"][0]["cosigning"]["not_counted"][0]["why"].as_str().is_some_and(|w| w.contains("pinned for")),
        "{v}"
    );
    let o = t.run("bob", &["verify"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("does not count towards 2 of alice, bob, carol"), "{}", text(&o));
    ok(&t.run("bob", &["refuse", "--yes", id, "--reason", "end of test"]));
    let (d, _) = hook_answer(hook);
    assert_eq!(d, "deny");
}
