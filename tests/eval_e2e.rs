//! `warrant eval` end to end through the real binary: a file of requests (every op, plus
//! malformed lines) piped through it gives one response per non-empty line, in order, with error
//! codes for what cannot be served and exit status 0; responses come back one at a time to an
//! interactive client (the evaluator flushes whenever no further request is buffered, also after a
//! batch written at once); a policy.toml in the config directory
//! is honoured.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use warrant::store::prelude::*;

use crate::cli_env;

const BIN: &str = env!("CARGO_BIN_EXE_warrant");
const TIMEOUT: Duration = Duration::from_secs(10);

fn fixture(rel: &str) -> Value {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/conformance/opentrustgraph/fixtures").join(rel);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Empty config and spool directories in a temp dir.
struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        for d in ["config", "spool", "data"] {
            std::fs::create_dir(dir.path().join(d)).expect("mkdir");
        }
        Self { dir }
    }
    fn config(&self) -> PathBuf {
        self.dir.path().join("config")
    }
    fn eval(&self) -> Command {
        let mut c = Command::new(BIN);
        c.arg("eval")
            .env("WARRANT_CONFIG", self.config())
            .env("WARRANT_SPOOL", self.dir.path().join("spool"))
            .env("WARRANT_PRINCIPAL", "alice")
            .env("XDG_DATA_HOME", self.dir.path().join("data"))
            .env("XDG_CONFIG_HOME", self.dir.path().join("data"))
            .env_remove("RUST_BACKTRACE");
        c
    }
    /// Pipes `input` (written to a file first) through `warrant eval`; returns the exit code, the
    /// response lines, and stderr.
    fn pipe(&self, input: &[u8]) -> (Option<i32>, Vec<Value>, String) {
        let path = self.dir.path().join("requests.jsonl");
        std::fs::write(&path, input).expect("write requests");
        let out = self
            .eval()
            .stdin(Stdio::from(std::fs::File::open(&path).expect("open requests")))
            .output()
            .expect("run warrant eval");
        let stdout = String::from_utf8(out.stdout).expect("stdout is UTF-8");
        assert!(stdout.is_empty() || stdout.ends_with('\n'), "last response is newline-terminated");
        let lines = stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("response is not JSON ({e}): {l}")))
            .collect();
        (out.status.code(), lines, String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

const NOW: &str = "2026-05-30T12:00:00Z";

/// What one non-empty request line must produce.
struct Expect {
    /// The echoed id (`None`: the response has no `id`).
    id: Option<Value>,
    /// The error code, or `None` for a success.
    error: Option<&'static str>,
}

fn ok(id: Value) -> Expect {
    Expect { id: Some(id), error: None }
}

fn err(id: Option<Value>, code: &'static str) -> Expect {
    Expect { id, error: Some(code) }
}

fn line(v: &Value) -> Vec<u8> {
    let mut b = serde_json::to_vec(v).expect("serialise");
    b.push(b'\n');
    b
}

fn approved_rows(class: &str, n: usize) -> Value {
    json!(
        (0..n)
            .map(|i| json!({"action_class": class, "label": "approved", "source_type": "receipt",
                        "date": format!("2026-05-{:02}", i + 1)}))
            .collect::<Vec<_>>()
    )
}

// A file of valid requests for every op and malformed lines: one response per non-empty line, in order, errors with string codes, exit 0.
#[test]
fn a_request_file_is_answered_line_by_line_in_order() {
    let env = Env::new();
    let chain = fixture("valid/decision-chain.json");
    let tampered = fixture("invalid/tampered-chain.json");
    let record = chain["records"][1].clone();
    let mut input: Vec<u8> = Vec::new();
    let mut expect: Vec<Expect> = Vec::new();
    let mut push = |bytes: Vec<u8>, e: Option<Expect>| {
        input.extend_from_slice(&bytes);
        expect.extend(e);
    };

    push(line(&json!({"op": "ops", "id": "ops"})), Some(ok(json!("ops"))));
    push(
        line(&json!({"op": "tg.can_execute", "id": "pay", "action_class": "payment.spend", "now": NOW})),
        Some(ok(json!("pay"))),
    );
    push(
        line(&json!({"op": "tg.can_execute", "id": "email", "action_class": "email.send.external", "now": NOW,
                     "context": {"requestedBy": "scribe", "target": "buyer@example.com",
                                 "requestedAction": {"to": "buyer@example.com", "body": "Quote — Grüße"}},
                     "evidence": approved_rows("email.send.external", 20)})),
        Some(ok(json!("email"))),
    );
    push(
        line(&json!({"op": "tg.can_execute", "id": 3, "action_class": "read.context", "now": NOW})),
        Some(ok(json!(3))),
    );
    push(
        line(&json!({"op": "tg.can_execute", "id": {"n": 4}, "action_class": "draft.compose", "now": NOW,
                     "agent_status": "quarantined"})),
        Some(ok(json!({"n": 4}))),
    );
    push(
        line(&json!({"op": "tg.posterior", "id": "post", "action_class": "draft_compose", "now": NOW,
                     "evidence": approved_rows("draft.compose", 12)})),
        Some(ok(json!("post"))),
    );
    push(
        line(&json!({"op": "tg.evidence_weight", "id": "w", "now": NOW,
                     "row": {"actionClass": "draft.response", "type": "approved", "sourceType": "connector"}})),
        Some(ok(json!("w"))),
    );
    push(
        line(&json!({"op": "tg.prepare_approval_packet", "id": "packet", "action_class": "email.send.external",
                     "now": NOW, "agent": "scribe", "summary": "Send the quote",
                     "context": {"requestedAction": {"to": "buyer@example.com"}}})),
        Some(ok(json!("packet"))),
    );
    push(line(&json!({"op": "otg.entry_hash", "id": "hash", "record": record})), Some(ok(json!("hash"))));
    push(line(&json!({"op": "otg.verify", "id": "verify", "export": chain})), Some(ok(json!("verify"))));
    push(line(&json!({"op": "otg.verify", "id": "tampered", "export": tampered})), Some(ok(json!("tampered"))));
    // Malformed lines.
    push(b"{\"op\": \"ops\", \"id\": \"cut\"\n".to_vec(), Some(err(None, "parse_error")));
    push(b"[{\"op\": \"ops\", \"id\": \"arr\"}]\n".to_vec(), Some(err(None, "invalid_request")));
    push(b"\n".to_vec(), None);
    push(line(&json!({"op": "tg.nope", "id": "unknown"})), Some(err(Some(json!("unknown")), "unknown_op")));
    push(
        line(&json!({"op": "tg.can_execute", "id": "noclass", "now": NOW})),
        Some(err(Some(json!("noclass")), "invalid_request")),
    );
    push(
        line(&json!({"op": "tg.can_execute", "id": "badclass", "action_class": "Not A Class!"})),
        Some(err(Some(json!("badclass")), "invalid_action_class")),
    );
    push(
        line(&json!({"op": "tg.can_execute", "id": "badrow", "action_class": "draft.compose",
                     "evidence": [{"action_class": "draft.compose", "label": "approved"}, {"label": "approved"}]})),
        Some(err(Some(json!("badrow")), "invalid_evidence")),
    );
    push(
        line(&json!({"op": "tg.evidence_weight", "id": "baddate",
                     "row": {"action_class": "a.b", "label": "x", "date": "2026-13-01"}})),
        Some(err(Some(json!("baddate")), "invalid_evidence")),
    );
    // The ring, tier and ladder ops (their semantics are tested in their own suites).
    for (id, req) in [
        ("assign", json!({"op": "rings.assign", "eff_score": 0.97, "has_consensus": true})),
        ("required", json!({"op": "rings.required", "action": {"action_id": "a", "name": "n", "execute_api": "/x"}})),
        ("constraints", json!({"op": "rings.constraints", "ring": 3})),
        ("tiers", json!({"op": "tiers.gate", "tool_tier": "destructive", "notebook_trust": "trusted"})),
        (
            "ladder",
            json!({"op": "ladder.gate", "tool": "git.push", "auto_approve_up_to": 3,
                          "contract": {"required_level": 4, "blast_radius": "external", "reversibility": "irreversible",
                                       "scope": {"level": "repo", "identifier": "r"}, "data_sensitivity": "public",
                                       "preconditions": []}}),
        ),
    ] {
        let mut req = req;
        req["id"] = json!(id);
        push(line(&req), Some(ok(json!(id))));
    }
    push(
        line(
            &json!({"op": "rings.required", "id": "baddesc", "action": {"action_id": "../x", "name": "n", "execute_api": "/x"}}),
        ),
        Some(err(Some(json!("baddesc")), "invalid_descriptor")),
    );
    push(b"   \t  \n".to_vec(), None);
    push(b"{\"op\": \"ops\", \"id\": \"\xff\xfe\"}\n".to_vec(), Some(err(None, "parse_error")));
    push(b"\xc3\x28\xa0\xa1\n".to_vec(), Some(err(None, "parse_error")));
    push(b"{\"op\": \"ops\", \"op\": \"ops\", \"id\": \"dup\"}\n".to_vec(), Some(err(None, "parse_error")));
    push(line(&json!({"id": "noop"})), Some(err(Some(json!("noop")), "invalid_request")));
    push(
        line(&json!({"op": "tg.can_execute", "id": "badnow", "action_class": "draft.compose", "now": "noon"})),
        Some(err(Some(json!("badnow")), "invalid_request")),
    );
    push(b"{\"op\": \"ops\", \"id\": \"crlf\"}\r\n".to_vec(), Some(ok(json!("crlf"))));
    // The last request has no newline.
    push(b"{\"op\": \"ops\", \"id\": \"eof\"}".to_vec(), Some(ok(json!("eof"))));

    let (code, responses, stderr) = env.pipe(&input);
    assert_eq!(code, Some(0), "stderr: {stderr}");
    assert_eq!(responses.len(), expect.len(), "one response per non-empty line:\n{responses:#?}");
    for (i, (r, e)) in responses.iter().zip(&expect).enumerate() {
        assert_eq!(r.get("id"), e.id.as_ref(), "response {i} is out of order or lost its id: {r}");
        match e.error {
            Some(code) => {
                assert_eq!(r["error"]["code"], code, "response {i}: {r}");
                assert!(r["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "response {i}: {r}");
            }
            None => assert!(r.get("error").is_none(), "response {i} is an error: {r}"),
        }
    }
    let by_id = |id: Value| responses.iter().find(|r| r.get("id") == Some(&id)).expect("response with id");

    let ops = by_id(json!("ops"));
    let mut names: Vec<&str> = ops["ops"].as_array().expect("ops").iter().filter_map(Value::as_str).collect();
    names.sort_unstable();
    let mut all = warrant::eval::ops();
    all.sort_unstable();
    assert_eq!(names, all);
    assert!(names.contains(&"verdict") && names.contains(&"rings.saga") && names.contains(&"ladder.revalidate"));
    assert_eq!(by_id(json!("assign"))["ring"], 1, "{}", by_id(json!("assign")));
    assert_eq!(by_id(json!("required"))["required_ring"], 1, "a bare descriptor requires Ring 1");
    assert_eq!(by_id(json!("tiers"))["action"], "confirm");
    assert_eq!(by_id(json!("ladder"))["verdict"], "hold", "L4 is always held");
    assert_eq!(ops["protocol_version"], "0.1");

    let pay = by_id(json!("pay"));
    assert_eq!(pay["status"], "human_only", "{pay}");
    assert_eq!((pay["action_class"].as_str(), pay["allowed"].as_bool()), (Some("payment.initiate"), Some(false)));
    assert_eq!(pay["observed"]["requested_action_class"], "payment.spend");

    let email = by_id(json!("email"));
    assert_eq!(
        (email["status"].as_str(), email["mode"].as_str()),
        (Some("review_required"), Some("approval_required"))
    );
    assert_eq!(email["allowed"], false, "20 approvals do not graduate an external class");
    assert_eq!(email["tier"], "auto_capped");
    assert_eq!(email["action_binding"]["actionClass"], "email.send.external");
    assert_eq!(email["action_binding"]["target"], "buyer@example.com");
    assert_eq!(email["created_at"], "2026-05-30T12:00:00.000Z");

    let read = by_id(json!(3));
    assert_eq!((read["status"].as_str(), read["allowed"].as_bool()), (Some("allowed"), Some(true)));
    let quarantined = by_id(json!({"n": 4}));
    assert_eq!((quarantined["status"].as_str(), quarantined["mode"].as_str()), (Some("blocked"), Some("denied")));

    let post = by_id(json!("post"));
    assert_eq!(post["action_class"], "draft.compose");
    assert_eq!((post["samples"].as_u64(), post["positive"].as_u64()), (Some(12), Some(12)));
    assert!((post["alpha"].as_f64().expect("alpha") - (2.0 + 12.0 * 0.85)).abs() < 1e-9, "{post}");
    let (lo, mean, hi) = (post["ci_low"].as_f64(), post["mean"].as_f64(), post["ci_high"].as_f64());
    assert!(lo < mean && mean < hi, "{post}");
    assert_eq!(post["protocol_version"], "0.1");

    let w = by_id(json!("w"));
    assert_eq!((w["evidence_weight"].as_f64(), w["provenance_weight"].as_f64()), (Some(0.255), Some(0.3)));
    assert_eq!((w["action_class"].as_str(), w["date"].as_str()), (Some("draft.response"), Some("2026-05-30")));

    let packet = by_id(json!("packet"));
    assert_eq!(packet["type"], "trust_graduation_approval_packet");
    assert_eq!(packet["external_actions"], 0);
    assert_eq!(packet["agent"], "scribe");
    assert_eq!(packet["summary"], "Send the quote");
    assert_eq!(packet["decision"]["status"], "review_required");
    assert_eq!(packet["proposed_action"], json!({"to": "buyer@example.com"}));

    let hash = by_id(json!("hash"));
    assert_eq!(hash["matches"], true, "{hash}");
    assert_eq!(hash["entry_hash"], chain["records"][1]["entry_hash"]);

    assert_eq!(by_id(json!("verify"))["valid"], true, "{}", by_id(json!("verify")));
    assert_eq!(by_id(json!("tampered"))["valid"], false);
}

// Every valid OpenTrustGraph fixture verifies through eval, every invalid one does not, and each record's entry_hash recomputes.
#[test]
fn otg_fixtures_through_eval() {
    let env = Env::new();
    let names = [
        ("valid/decision-chain.json", true),
        ("valid/tier-transition.json", true),
        ("valid/effect-inheritance-chain.json", true),
        ("invalid/tampered-chain.json", false),
        ("invalid/missing-approval.json", false),
        ("invalid/actor-chain-parentage.json", false),
    ];
    let mut input = Vec::new();
    let mut expected_hashes = 0;
    for (name, _) in names {
        let export = fixture(name);
        input.extend(line(&json!({"op": "otg.verify", "id": name, "export": export})));
        if name.starts_with("valid/") {
            for rec in export["records"].as_array().expect("records") {
                input.extend(line(&json!({"op": "otg.entry_hash", "id": "h", "record": rec})));
                expected_hashes += 1;
            }
        }
    }
    let (code, responses, stderr) = env.pipe(&input);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(responses.len(), names.len() + expected_hashes);
    for (name, valid) in names {
        let r = responses.iter().find(|r| r["id"] == name).expect("verify response");
        assert_eq!(r["valid"], valid, "{name}: {r}");
    }
    let hashes: Vec<&Value> = responses.iter().filter(|r| r["id"] == "h").collect();
    assert_eq!(hashes.len(), expected_hashes);
    assert!(hashes.iter().all(|h| h["matches"] == true), "{hashes:#?}");
}

// A long pipeline (1,000 requests and an overlong line) is answered completely and in order.
#[test]
fn a_long_pipeline_keeps_order_and_skips_an_overlong_line() {
    let env = Env::new();
    let mut input = Vec::new();
    for i in 0..500 {
        input.extend(line(&json!({"op": "tg.can_execute", "id": i, "action_class": "draft.compose", "now": NOW})));
    }
    // 1 MiB + of one string: answered with line_too_long, without an id, and skipped.
    input.extend(b"{\"op\": \"ops\", \"id\": \"long\", \"pad\": \"");
    input.extend(std::iter::repeat_n(b'x', (1 << 20) + 10));
    input.extend(b"\"}\n");
    for i in 500..1000 {
        input.extend(line(&json!({"op": "otg.entry_hash", "id": i, "record": {"n": i}})));
    }
    let (code, responses, stderr) = env.pipe(&input);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(responses.len(), 1001);
    assert_eq!(responses[500]["error"]["code"], "line_too_long");
    assert!(responses[500].get("id").is_none());
    let ids: Vec<Option<i64>> =
        responses.iter().enumerate().filter(|(i, _)| *i != 500).map(|(_, r)| r["id"].as_i64()).collect();
    assert_eq!(ids, (0..1000).map(Some).collect::<Vec<_>>());
    assert!(responses[..500].iter().all(|r| r["status"] == "allowed"));
    let hashes: std::collections::BTreeSet<&str> =
        responses[501..].iter().filter_map(|r| r["entry_hash"].as_str()).collect();
    assert_eq!(hashes.len(), 500, "distinct records get distinct hashes");
}

/// A child process that is killed if the test panics before it exits.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

// Interactive use: each response arrives before the next request is written (the evaluator flushes per answer), and closing stdin ends the process with 0.
#[test]
fn responses_come_back_interactively() {
    let env = Env::new();
    let child = env
        .eval()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn warrant eval");
    let mut child = Running(child);
    let mut stdin = child.0.stdin.take().expect("stdin");
    let stdout = child.0.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for l in BufReader::new(stdout).lines() {
            let Ok(l) = l else { break };
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    let requests = [
        json!({"op": "ops", "id": 0}),
        json!({"op": "tg.can_execute", "id": 1, "action_class": "payment.spend", "now": NOW}),
        json!({"op": "tg.nope", "id": 2}),
        json!({"op": "tg.posterior", "id": 3, "action_class": "draft.compose", "now": NOW}),
        json!({"op": "tg.can_execute", "id": 4, "action_class": "email.send.external", "now": NOW,
               "context": {"asynchronousApproval": true}}),
    ];
    for (i, req) in requests.iter().enumerate() {
        stdin.write_all(&line(req)).expect("write request");
        stdin.flush().expect("flush request");
        let answer = rx
            .recv_timeout(TIMEOUT)
            .unwrap_or_else(|e| panic!("no response to request {i} within {TIMEOUT:?} ({e}): not flushed per answer?"));
        let v: Value = serde_json::from_str(&answer).expect("response JSON");
        assert_eq!(v["id"], i, "{v}");
        match i {
            1 => assert_eq!(v["status"], "human_only"),
            2 => assert_eq!(v["error"]["code"], "unknown_op"),
            4 => assert_eq!(v["status"], "deferred"),
            _ => assert!(v.get("error").is_none(), "{v}"),
        }
        // Nothing else is pending.
        assert!(rx.try_recv().is_err(), "an extra response after request {i}");
    }
    // Several requests in one write: every answer comes back while stdin stays open.
    let mut batch = Vec::new();
    for id in ["b1", "b2", "b3"] {
        batch.extend(line(&json!({"op": "tg.can_execute", "id": id, "action_class": "draft.response", "now": NOW})));
    }
    stdin.write_all(&batch).expect("write batch");
    stdin.flush().expect("flush batch");
    for id in ["b1", "b2", "b3"] {
        let answer = rx.recv_timeout(TIMEOUT).unwrap_or_else(|e| panic!("no response to {id} ({e}): held back?"));
        let v: Value = serde_json::from_str(&answer).expect("response JSON");
        assert_eq!((v["id"].as_str(), v["status"].as_str()), (Some(id), Some("allowed")), "{v}");
    }
    // An empty line gets no answer: the next answer is for the next request.
    stdin.write_all(b"\n{\"op\": \"ops\", \"id\": \"after-empty\"}\n").expect("write");
    stdin.flush().expect("flush");
    let v: Value = serde_json::from_str(&rx.recv_timeout(TIMEOUT).expect("response")).expect("json");
    assert_eq!(v["id"], "after-empty");

    drop(stdin);
    let deadline = Instant::now() + TIMEOUT;
    let status = loop {
        if let Some(s) = child.0.try_wait().expect("try_wait") {
            break s;
        }
        assert!(Instant::now() < deadline, "warrant eval did not exit after stdin closed");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0));
    reader.join().expect("reader thread");
    assert!(rx.try_recv().is_err(), "no output after the last answer");
}

// A policy.toml in WARRANT_CONFIG is honoured: strict mode blocks unknown classes and a local external class needs approval; a request cannot relax strict mode.
#[test]
fn eval_reads_policy_toml_from_the_config_dir() {
    let env = Env::new();
    std::fs::write(
        env.config().join("policy.toml"),
        "strict = true\n\n[[class]]\nid = \"vendor.order.place\"\ntype = \"external\"\nrisk = \"low\"\n\
         minimum_level = 0\nrequires_approval = false\n",
    )
    .expect("write policy");
    let mut input = Vec::new();
    for (id, class, extra) in [
        ("unknown", "widget.frobnicate", json!({})),
        ("lax", "widget.frobnicate", json!({"strict": false})),
        ("local", "vendor.order.place", json!({})),
        ("known", "read.context", json!({})),
    ] {
        let mut req = json!({"op": "tg.can_execute", "id": id, "action_class": class, "now": NOW});
        for (k, v) in extra.as_object().expect("object") {
            req[k] = v.clone();
        }
        input.extend(line(&req));
    }
    let (code, r, stderr) = env.pipe(&input);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(r.len(), 4);
    assert_eq!((r[0]["id"].as_str(), r[0]["status"].as_str()), (Some("unknown"), Some("blocked")));
    assert_eq!((r[1]["id"].as_str(), r[1]["status"].as_str()), (Some("lax"), Some("blocked")));
    assert_eq!((r[2]["status"].as_str(), r[2]["mode"].as_str()), (Some("review_required"), Some("approval_required")));
    assert_eq!(r[2]["allowed"], false);
    assert_eq!((r[3]["status"].as_str(), r[3]["allowed"].as_bool()), (Some("allowed"), Some(true)));

    // Without the policy file the unknown class is not blocked (so the file is what blocked it).
    let plain = Env::new();
    let (_, r, _) =
        plain.pipe(&line(&json!({"op": "tg.can_execute", "action_class": "widget.frobnicate", "now": NOW})));
    assert_ne!(r[0]["status"], "blocked", "{}", r[0]);
}

// The stateful ring ops keep their state for the life of one `warrant eval` process, with the
// time as an input: a Ring 3 bucket gives exactly its burst of 10 then refuses, refills after
// time passes; an elevation is granted once and a second request is a duplicate until it
// expires; a kill with a failing callback is still recorded. A second process starts fresh.
#[test]
fn ring_ops_keep_state_for_the_life_of_the_process() {
    let env = Env::new();
    let t0 = 1_795_251_600.0_f64;
    let mut input = Vec::new();
    for i in 0..11 {
        input.extend(line(&json!({"op": "rings.rate_check", "id": i, "agent_did": "a", "session_id": "s",
                                   "ring": 3, "now": t0})));
    }
    input.extend(line(&json!({"op": "rings.rate_check", "id": "later", "agent_did": "a", "session_id": "s",
                              "ring": 3, "now": t0 + 1.0})));
    let elevate = |id: &str, now: f64| {
        json!({"op": "rings.elevate", "id": id, "agent_did": "b", "session_id": "s", "current_ring": 3,
               "target_ring": 2, "trust_score": 0.5, "ttl_seconds": 60, "now": now})
    };
    input.extend(line(&elevate("e1", t0)));
    input.extend(line(&elevate("e2", t0 + 30.0)));
    input.extend(line(&elevate("e3", t0 + 60.0)));
    input.extend(line(&json!({"op": "rings.kill", "id": "k", "agent_did": "c", "session_id": "s",
                              "callback": "fail", "in_flight_steps": [{"step_id": "s1", "saga_id": "g"}], "now": t0})));
    let (code, r, stderr) = env.pipe(&input);
    assert_eq!(code, Some(0), "{stderr}");
    let allowed: Vec<bool> = r[..11].iter().map(|v| v["allowed"].as_bool().unwrap_or(true)).collect();
    assert_eq!(allowed, [[true; 10].as_slice(), &[false]].concat(), "{:?}", &r[..11]);
    assert_eq!(r[10]["stats"]["rejected_requests"], 1, "{}", r[10]);
    assert_eq!(r[11]["allowed"], true, "5 tokens/s refilled: {}", r[11]);
    assert!(r[12].get("error").is_none() && r[12].to_string().contains("elev:"), "granted: {}", r[12]);
    assert!(r[13].to_string().contains("duplicate_elevation"), "{}", r[13]);
    assert!(
        r[14].get("error").is_none() && r[14].to_string().contains("elev:"),
        "expired, so granted again: {}",
        r[14]
    );
    assert_eq!(r[15]["terminated"], false, "{}", r[15]);
    assert_eq!(r[15]["handoffs"][0]["status"], "compensated");
    assert_eq!(r[15]["total_kills"], 1);
    // A new process has a full bucket again.
    let (_, r, _) =
        env.pipe(&line(&json!({"op": "rings.rate_check", "agent_did": "a", "session_id": "s", "ring": 3, "now": t0})));
    assert_eq!(r[0]["allowed"], true);
}

// `verdict` composes every model that applies on one packet, and fails closed on bad input.
#[test]
fn verdict_composes_the_models_through_eval() {
    let env = Env::new();
    let packet = |agent: &str, governance: Value| {
        json!({"type": "trust_graduation_approval_packet", "packet_id": "p-1", "agent": agent,
               "action_class": "draft.compose", "proposed_action": {"t": 1},
               "decision": {"status": "review_required", "action_class": "draft.compose", "reason": "r"},
               "external_actions": 0, "governance": governance})
    };
    // The host registers the tool: a request's `tools` can only tighten it, so a
    // tool the host does not know stays without a tier (confirm).
    std::fs::write(env.config().join("policy.toml"), "[tools.\"corrections.merge\"]\ntier = \"destructive\"\n")
        .expect("policy.toml");
    let tools = json!({"corrections.merge": {"tier": "destructive"}});
    let mut input = Vec::new();
    for (id, agent, governance, controls) in [
        (
            "auto",
            "a",
            json!({"tool": "corrections.merge", "notebook": "nb"}),
            json!({"notebooks": {"nb": "autonomous"}}),
        ),
        (
            "confirm",
            "a",
            json!({"tool": "corrections.merge", "notebook": "nb"}),
            json!({"notebooks": {"nb": "trusted"}}),
        ),
        (
            "witness",
            "a",
            json!({"action": {"action_id": "x", "name": "n", "execute_api": "/x", "is_admin": true}}),
            json!({}),
        ),
        ("quarantined", "a", json!({}), json!({"agents": {"a": {"standing": "quarantined"}}})),
        (
            "hold",
            "a",
            json!({"tool": "corrections.merge", "contract": {"required_level": 4, "blast_radius": "external",
            "reversibility": "irreversible", "scope": {"level": "global", "identifier": "*"},
            "data_sensitivity": "secret", "preconditions": []}}),
            json!({}),
        ),
    ] {
        input.extend(line(&json!({"op": "verdict", "id": id, "now": NOW, "packet": packet(agent, governance),
                                  "tools": tools, "controls": controls})));
    }
    input.extend(line(&json!({"op": "verdict", "id": "bad", "packet": {"type": "nope"}})));
    input.extend(line(
        &json!({"op": "verdict", "id": "ceiling", "packet": packet("a", json!({})), "ladder_ceiling": 4}),
    ));
    let (code, r, stderr) = env.pipe(&input);
    assert_eq!(code, Some(0), "{stderr}");
    let state = |i: usize| r[i]["state"].as_str().unwrap_or("?").to_owned();
    let tiers = |i: usize| r[i]["models"].as_array().and_then(|m| m.iter().find(|m| m["model"] == "tiers")).cloned();
    assert_eq!(tiers(0).map(|t| t["verdict"].clone()), Some(json!("auto")), "{}", r[0]);
    assert_eq!(tiers(1).map(|t| t["verdict"].clone()), Some(json!("confirm")), "{}", r[1]);
    assert_eq!(state(1), "review_required");
    assert_eq!((state(2), r[2]["decisive"].as_str()), ("human_only".into(), Some("rings")), "{}", r[2]);
    assert_eq!(state(3), "blocked", "{}", r[3]);
    assert_eq!((state(4), r[4]["decisive"].as_str()), ("review_required".into(), Some("tiers")), "{}", r[4]);
    assert_eq!(r[5]["error"]["code"], "invalid_packet");
    assert_eq!(r[6]["error"]["code"], "invalid_policy");
}

/// Pipes `requests` through `warrant eval` in `env` (its config and spool); the response lines.
fn eval_in(env: &cli_env::Env, requests: &[Value]) -> Vec<Value> {
    let input: Vec<u8> = requests.iter().flat_map(line).collect();
    let mut child = env.cmd(&["eval"]).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("spawn eval");
    child.stdin.take().expect("stdin").write_all(&input).expect("write requests");
    let out = child.wait_with_output().expect("eval output");
    assert_eq!(out.status.code(), Some(0), "{}", cli_env::text(&out));
    out.stdout
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).expect("json"))
        .collect()
}

/// The agents' answer and the principal's come from the same evidence. After an
/// approval (`warrant approve --yes`) and a receipt (`warrant receipt`) of `calendar.create`,
/// `warrant eval`'s `tg.posterior` is exactly the posterior the console computes from the
/// verified chain (`Posterior::of` over `ChainView.evidence`), N=2, mean 0.60; the gate sees
/// the same two rows; inline rows add to them; a chain that no longer verifies blocks the gate
/// and takes graduation away from the posterior.
#[test]
fn eval_reads_the_spools_verified_chain_as_the_console_does() {
    use warrant::protocol::graduation::policy::PolicySet;
    use warrant::protocol::graduation::posterior::Posterior;
    let env = cli_env::Env::new();
    let o = env.propose("calendar.create", "agent-planner", "k-1", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", cli_env::text(&o));
    let o = env.run(&["approve", "k-1", "--yes"]);
    assert_eq!(o.status.code(), Some(0), "{}", cli_env::text(&o));
    let o = env.run(&[
        "receipt",
        "--class",
        "calendar.create",
        "--outcome",
        "execute",
        "--agent",
        "agent-planner",
        "--packet",
        "k-1",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", cli_env::text(&o));

    // What the console computes for its posterior row.
    let spool = warrant::store::spool::Spool::new(env.spool());
    let pinned = warrant::protocol::keys::PinnedKeys::load(&env.config()).expect("pinned keys");
    let view = warrant::store::spool::verify_chain(&spool, &pinned).expect("verify");
    assert!(view.report.is_valid(), "{:?}", view.report.findings);
    let policies = PolicySet::load(&env.config(), Some(&env.spool())).expect("policies");
    let class = "calendar.create";
    let date = time::macros::date!(2026 - 11 - 25);
    let console = Posterior::of(class, view.evidence.rows_of(class), policies.threshold(class), date).to_json();
    assert_eq!(console["samples"], 2, "{console}");

    let inline = json!({"action_class": class, "label": "approved", "source_type": "receipt", "date": "2026-11-24"});
    let r = eval_in(
        &env,
        &[
            json!({"op": "tg.posterior", "action_class": class, "now": "2026-11-25T09:00:00Z"}),
            json!({"op": "tg.can_execute", "action_class": class, "now": "2026-11-25T09:00:00Z"}),
            json!({"op": "tg.posterior", "action_class": class, "now": "2026-11-25T09:00:00Z", "evidence": [inline]}),
        ],
    );
    assert_eq!(r[0], console, "eval and the console disagree");
    assert_eq!((r[0]["samples"].as_f64(), r[0]["positive"].as_f64()), (Some(2.0), Some(2.0)), "{}", r[0]);
    // Beta(2,2) plus a principal approval (1.0) and an executed receipt (0.95 × 1.0).
    let mean = r[0]["mean"].as_f64().expect("mean");
    assert!((mean - 2.95 / 4.95).abs() < 1e-12, "{mean}");
    assert_eq!(format!("{mean:.2}"), "0.60");
    assert_eq!(r[1]["observed"]["evidence"]["positive"], 2, "{}", r[1]);
    assert_eq!(r[2]["samples"], 3, "inline rows add to the chain's: {}", r[2]);
    assert!(r[0].get("chain_intact").is_none(), "{}", r[0]);

    // Break the chain: the gate is blocked, the posterior says so and never graduates.
    let path = env.spool().join("chain.jsonl");
    let text = std::fs::read_to_string(&path).expect("chain");
    std::fs::write(&path, text.replacen("agent-planner", "agent-plannex", 1)).expect("tamper");
    let r = eval_in(
        &env,
        &[
            json!({"op": "tg.posterior", "action_class": class, "now": "2026-11-25T09:00:00Z"}),
            json!({"op": "tg.can_execute", "action_class": "draft.response", "now": "2026-11-25T09:00:00Z"}),
            json!({"op": "tg.can_execute", "action_class": "draft.response", "now": "2026-11-25T09:00:00Z",
                   "chain_intact": true, "context": {}}),
        ],
    );
    assert_eq!(
        (r[0]["chain_intact"].as_bool(), r[0]["graduation_ready"].as_bool()),
        (Some(false), Some(false)),
        "{}",
        r[0]
    );
    for d in &r[1..] {
        assert_eq!((d["status"].as_str(), d["allowed"].as_bool()), (Some("blocked"), Some(false)), "{d}");
    }
}

/// One spelling per concept. Each canonical field works without a `deprecated`
/// member; each deprecated spelling gives the same answer, flagged `"deprecated": ["old → new"]`;
/// both spellings at once, an explicit null quarantine duration and a negative cost are
/// `invalid_request`.
#[test]
fn deprecated_spellings_are_accepted_and_flagged() {
    let env = Env::new();
    // The host registers the tool as safe: the request's tier can only make it more dangerous.
    std::fs::write(env.config().join("policy.toml"), "[tools.\"corrections.merge\"]\ntier = \"safe\"\n")
        .expect("policy.toml");
    const NOW: &str = "2026-11-21T09:00:00Z";
    let contract = json!({"required_level": 3, "blast_radius": "project", "reversibility": "reversible",
        "scope": {"level": "repo", "identifier": "x"}, "data_sensitivity": "private", "preconditions": []});
    let packet = json!({"type": "trust_graduation_approval_packet", "packet_id": "p-1", "agent": "a",
        "action_class": "draft.compose", "proposed_action": {"text": "x"},
        "decision": {"status": "review_required", "action_class": "draft.compose", "reason": "r"},
        "external_actions": 0, "governance": {"tool": "corrections.merge", "notebook": "nb"}});
    // (canonical request, the same with the old spelling, the note)
    let pairs = [
        (
            json!({"op": "rings.assign", "eff_score": 0.5, "agent_ring": 1}),
            json!({"op": "rings.assign", "eff_score": 0.5, "current_ring": 1}),
            "current_ring → agent_ring",
        ),
        (
            json!({"op": "rings.constraints", "agent_ring": 2}),
            json!({"op": "rings.constraints", "ring": 2}),
            "ring → agent_ring",
        ),
        (
            json!({"op": "rings.elevate", "action": "effective", "agent_did": "a", "session_id": "s", "agent_ring": 2, "now": 0}),
            json!({"op": "rings.elevate", "action": "effective", "agent_did": "a", "session_id": "s", "current_ring": 2, "now": 0}),
            "current_ring → agent_ring",
        ),
        (
            json!({"op": "rings.rate_check", "agent_did": "a", "session_id": "s1", "agent_ring": 3, "now": 0}),
            json!({"op": "rings.rate_check", "agent_did": "a", "session_id": "s2", "ring": 3, "now": 0}),
            "ring → agent_ring",
        ),
        (
            json!({"op": "ladder.gate", "tool": "t", "auto_approve_up_to": 3, "contract": contract, "required_trust_level": 4}),
            json!({"op": "ladder.gate", "tool": "t", "auto_approve_up_to": 3, "contract": contract, "tool_floor": 4}),
            "tool_floor → required_trust_level",
        ),
        (
            json!({"op": "verdict", "now": NOW, "packet": packet, "tools": {"corrections.merge": {"tool_tier": "destructive"}},
                   "controls": {"notebooks": {"nb": "autonomous"}}}),
            json!({"op": "verdict", "now": NOW, "packet": packet, "tools": {"corrections.merge": {"tier": "destructive"}},
                   "controls": {"notebooks": {"nb": "autonomous"}}}),
            "tools.<key>.tier → tools.<key>.tool_tier",
        ),
    ];
    let mut input = Vec::new();
    for (new, old, _) in &pairs {
        input.extend(line(new));
        input.extend(line(old));
    }
    let invalid = [
        json!({"op": "rings.constraints", "agent_ring": 2, "ring": 2}),
        json!({"op": "ladder.gate", "tool": "t", "contract": contract, "required_trust_level": 4, "tool_floor": 4}),
        json!({"op": "verdict", "packet": packet, "tools": {"corrections.merge": {"tier": "safe", "tool_tier": "safe"}}}),
        json!({"op": "rings.quarantine", "agent_did": "q", "session_id": "s", "duration_seconds": null, "now": 0}),
        json!({"op": "rings.rate_check", "agent_did": "c", "session_id": "s", "agent_ring": 3, "cost": -5, "now": 0}),
    ];
    for r in &invalid {
        input.extend(line(r));
    }
    // Absent duration: the default 300 s; `until_released`: no expiry.
    input.extend(line(&json!({"op": "rings.quarantine", "agent_did": "q1", "session_id": "s", "now": 0})));
    input.extend(line(
        &json!({"op": "rings.quarantine", "agent_did": "q2", "session_id": "s", "until_released": true, "now": 0}),
    ));
    let (code, r, stderr) = env.pipe(&input);
    assert_eq!(code, Some(0), "{stderr}");
    for (i, (_, _, note)) in pairs.iter().enumerate() {
        let (new, mut old) = (r[2 * i].clone(), r[2 * i + 1].clone());
        assert!(new.get("error").is_none() && new.get("deprecated").is_none(), "{new}");
        assert_eq!(old["deprecated"], json!([note]), "{old}");
        old.as_object_mut().expect("object").remove("deprecated");
        // The rate buckets are two (one per session), the rest the same.
        let mut new = new;
        for v in [&mut old, &mut new] {
            v.as_object_mut().expect("object").remove("tracked_agents");
        }
        assert_eq!(old, new, "the old spelling is read as the new one");
    }
    // The spellings are not ignored: the floor and the tier changed the answers.
    assert_eq!(r[8]["matched"]["source"], "floor", "{}", r[8]);
    let tier = r[10]["models"].as_array().and_then(|m| m.iter().find(|m| m["model"] == "tiers")).cloned();
    let reason = tier.map(|t| t["reason"].as_str().unwrap_or_default().to_owned()).unwrap_or_default();
    assert!(reason.contains("corrections.merge is destructive"), "the request's tier applies: {}", r[10]);
    assert_eq!(r[2]["effective_ring"], 2, "{}", r[2]);
    let base = 2 * pairs.len();
    for (i, req) in invalid.iter().enumerate() {
        assert_eq!(r[base + i]["error"]["code"], "invalid_request", "{req} → {}", r[base + i]);
    }
    assert_eq!(r[base + 5]["record"]["expires_at"], 300.0, "{}", r[base + 5]);
    assert_eq!(
        (r[base + 6]["record"]["expires_at"].clone(), r[base + 6]["quarantined"].as_bool()),
        (Value::Null, Some(true))
    );
}

/// A running `warrant eval` sees the chain grow: a receipt recorded after its first answer
/// counts in the next one (the chain is verified again when its file changes).
#[test]
fn a_running_evaluator_sees_new_chain_evidence() {
    let env = cli_env::Env::new();
    let mut child = env.cmd(&["eval"]).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("spawn eval");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut ask = || {
        let req = json!({"op": "tg.posterior", "action_class": "draft.compose", "now": "2026-11-25T09:00:00Z"});
        stdin.write_all(&line(&req)).expect("write");
        stdin.flush().expect("flush");
        let mut answer = String::new();
        stdout.read_line(&mut answer).expect("read");
        serde_json::from_str::<Value>(&answer).expect("json")["samples"].clone()
    };
    assert_eq!(ask(), 0);
    for n in 1..=2 {
        let o = env.run(&["receipt", "--class", "draft.compose", "--outcome", "execute", "--agent", "a"]);
        assert_eq!(o.status.code(), Some(0), "{}", cli_env::text(&o));
        assert_eq!(ask(), n, "after receipt {n}");
    }
    drop(stdin);
    assert_eq!(child.wait().expect("wait").code(), Some(0));
}
