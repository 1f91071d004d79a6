//! The evaluator cannot be crashed. Every op, with extreme times and numbers in every
//! field it reads, answers every line (a decision or an error), never panics, and a line that
//! fails never loses the answers before it.

use proptest::prelude::*;
use serde_json::{Value, json};
use warrant::eval::Evaluator;
use warrant::protocol::graduation::PolicySet;

/// One request of every op, as the docs show them (`docs/eval*.md`).
fn templates() -> Vec<Value> {
    let action =
        json!({"action_id": "db.drop", "name": "Drop table", "execute_api": "/db/drop", "reversibility": "none"});
    let contract = json!({"required_level": 4, "blast_radius": "external", "reversibility": "irreversible",
        "scope": {"level": "repo", "identifier": "acme/web"}, "data_sensitivity": "private",
        "preconditions": [{"check_id": "file.sha256", "parameters": {"path": "/x"}, "expected_at_approval": "sha256:00",
                           "must_revalidate_at_execution": true}]});
    let packet = warrant::protocol::packet::portable_packet(
        "p-1",
        "email.send.external",
        "agent-a",
        "s",
        json!({"to": "a@b.example"}),
        "2026-11-21T09:00:00Z",
    );
    let row = json!({"action_class": "draft.compose", "label": "approved", "source_type": "principal",
        "recorded_at": "2026-11-21T09:00:00Z", "weight": 0.5});
    vec![
        json!({"op": "ops"}),
        json!({"op": "tg.can_execute", "action_class": "email.send.external", "now": "2026-11-21T09:00:00Z",
               "context": {"requestedBy": "scribe", "amount": 10}, "evidence": [row],
               "expires_at": "2026-11-21T09:10:00Z", "constraints": {"rate_limit": {"count": 10, "window": "PT1H"}}}),
        json!({"op": "tg.prepare_approval_packet", "action_class": "email.send.external", "now": "2026-11-21T09:00:00Z",
               "agent": "a", "summary": "s", "evidence": [row]}),
        json!({"op": "tg.posterior", "action_class": "draft.compose", "now": "2026-11-21T09:00:00Z", "evidence": [row]}),
        json!({"op": "tg.evidence_weight", "now": "2026-11-21T09:00:00Z", "row": row}),
        json!({"op": "otg.entry_hash", "record": {"a": 1, "t": "2026-11-21T09:00:00Z"}}),
        json!({"op": "otg.verify", "export": {"schema": "opentrustgraph-chain/v0", "records": []}}),
        json!({"op": "verdict", "now": "2026-11-21T09:00:00Z", "packet": packet,
               "controls": {"agents": {"agent-a": {"standing": "active", "elevation": {"ring": 1, "expires_at": "2026-11-21T09:05:00Z"}}}},
               "rate": {"tokens": 1.5, "capacity": 10}}),
        json!({"op": "tiers.gate", "tool_tier": "destructive", "notebook_trust": "trusted"}),
        json!({"op": "ladder.gate", "tool": "git.push", "auto_approve_up_to": 3, "contract": contract}),
        json!({"op": "ladder.revalidate", "preconditions": [{"check_id": "x", "parameters": {}, "expected_at_approval": 1,
               "must_revalidate_at_execution": true}], "observed": {"x": 1}}),
        json!({"op": "rings.assign", "eff_score": 0.97, "has_consensus": true, "current_ring": 2}),
        json!({"op": "rings.required", "action": action}),
        json!({"op": "rings.check", "agent_ring": 2, "eff_score": 0.8, "action": action}),
        json!({"op": "rings.constraints", "ring": 3, "resource": "network"}),
        json!({"op": "rings.elevate", "agent_did": "did:mesh:a", "session_id": "s1", "current_ring": 2, "target_ring": 1,
               "trust_score": 0.85, "attestation": "did:mesh:sponsor", "ttl_seconds": 60, "reason": "deploy",
               "now": "2026-05-17T12:00:00Z"}),
        json!({"op": "rings.elevate", "action": "effective", "agent_did": "did:mesh:a", "session_id": "s1", "current_ring": 2,
               "now": "2026-05-17T12:00:30Z"}),
        json!({"op": "rings.tick", "now": "2026-05-17T12:01:00Z"}),
        json!({"op": "rings.rate_check", "agent_did": "did:mesh:a", "session_id": "s1", "ring": 3, "cost": 11, "now": 1_779_019_200}),
        json!({"op": "rings.kill", "agent_did": "did:mesh:c", "session_id": "s1", "reason": "ring_breach", "callback": "fail",
               "in_flight_steps": [{"step_id": "step-1", "saga_id": "saga-1"}], "now": 1_779_019_200}),
        json!({"op": "rings.quarantine", "agent_did": "did:mesh:c", "session_id": "s1", "reason": "ring_breach",
               "duration_seconds": 60, "now": 1_779_019_200}),
        json!({"op": "rings.session_validate", "config": {"max_participants": 10.0, "max_duration_seconds": 3600}}),
        json!({"op": "rings.path_check", "session_id": "session-1", "path": "/var/agt/sessions/session-1/x",
               "base_path": "/var/agt/sessions"}),
        json!({"op": "rings.saga", "session_id": "s1", "now": "2026-05-17T12:00:00Z", "steps": [
            {"action_id": "reserve", "agent_did": "did:mesh:a", "execute_api": "/reserve", "undo_api": "/release",
             "timeout_seconds": 30, "max_retries": 1}]}),
    ]
}

/// Numbers at the edges of every type a field may be read as.
fn extreme_number() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!(0)),
        Just(json!(-1)),
        Just(json!(-0.0)),
        Just(json!(i64::MAX)),
        Just(json!(i64::MIN)),
        Just(json!(u64::MAX)),
        Just(json!(f64::MAX)),
        Just(json!(-f64::MAX)),
        Just(json!(1e-308)),
        Just(json!(9_007_199_254_740_993_i64)),
        Just(json!(253_402_300_799_i64)),
        Just(json!(-62_135_596_800_i64)),
        Just(json!(1.5)),
    ]
}

/// Times at the edges of RFC 3339 and of `time`'s range.
fn extreme_time() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!("9999-12-31T23:59:59Z")),
        Just(json!("9999-12-31T23:59:59.999999999Z")),
        Just(json!("9999-12-31T23:59:59-23:59")),
        Just(json!("0000-01-01T00:00:00Z")),
        Just(json!("0000-01-01T00:00:00+23:59")),
        Just(json!("1970-01-01T00:00:00Z")),
        Just(json!("2026-11-21T09:00:00Z")),
    ]
}

/// `v` with each number and each date-time string replaced (by position) from `numbers` and
/// `times`, cycling; `now` also becomes a number half of the time.
fn mutate(v: &Value, numbers: &[Value], times: &[Value], at: &mut usize) -> Value {
    *at += 1;
    match v {
        Value::Number(_) => numbers[*at % numbers.len()].clone(),
        Value::String(s) if s.len() >= 20 && s.as_bytes().get(4) == Some(&b'-') && s.contains('T') => {
            times[*at % times.len()].clone()
        }
        Value::Array(a) => Value::Array(a.iter().map(|x| mutate(x, numbers, times, at)).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| {
                    let x = if k == "now" && (*at).is_multiple_of(2) {
                        numbers[*at % numbers.len()].clone()
                    } else {
                        x.clone()
                    };
                    (k.clone(), mutate(&x, numbers, times, at))
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Answers `line`, failing the test on a panic.
fn answer(e: &Evaluator, line: &str) -> Value {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| e.handle_line(line.as_bytes()))) {
        Ok(v) => v,
        Err(p) => {
            let why = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()));
            panic!("the evaluator panicked on {line}: {why:?}")
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    // Every op, extreme values everywhere: an answer (object) for every line, no panic, and the
    // whole batch through `eval::run` gives one answer per line and no internal error.
    #[test]
    fn no_op_panics_on_extreme_times_or_numbers(
        numbers in prop::collection::vec(extreme_number(), 1..6),
        times in prop::collection::vec(extreme_time(), 1..4),
        offset in 0usize..17,
    ) {
        let e = Evaluator::new(PolicySet::builtin());
        let mut lines = Vec::new();
        for t in templates() {
            let mut at = offset;
            let line = serde_json::to_string(&mutate(&t, &numbers, &times, &mut at)).expect("json");
            let v = answer(&e, &line);
            prop_assert!(v.is_object(), "{line} → {v}");
            lines.push(line);
        }
        let fresh = Evaluator::new(PolicySet::builtin());
        let mut out = Vec::new();
        warrant::eval::run(&fresh, lines.join("\n").as_bytes(), &mut out).expect("memory");
        prop_assert_eq!(fresh.internal_errors(), 0);
        prop_assert_eq!(out.split(|b| *b == b'\n').filter(|l| !l.is_empty()).count(), lines.len());
    }
}

// The line from the issue: `now` at the end of year 9999 panicked in the gate ("resulting value is
// out of range"), exit 101, and the answer before it was lost. Through the real binary: three
// answers, the middle one a decision that allows nothing without approval, exit 0.
#[test]
fn the_year_9999_line_is_answered_and_the_answers_around_it_survive() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = [
        r#"{"op":"tg.can_execute","id":1,"action_class":"draft.compose","now":"2026-11-21T09:00:00Z"}"#,
        r#"{"op":"tg.can_execute","id":2,"action_class":"email.send.external","now":"9999-12-31T23:59:59Z"}"#,
        r#"{"op":"tg.can_execute","id":3,"action_class":"draft.compose","now":"2026-11-21T09:00:00Z"}"#,
    ]
    .join("\n");
    let path = dir.path().join("in.jsonl");
    std::fs::write(&path, input).expect("write");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_warrant"))
        .arg("eval")
        .env("WARRANT_CONFIG", dir.path().join("config"))
        .env("WARRANT_SPOOL", dir.path().join("spool"))
        .env("XDG_DATA_HOME", dir.path().join("data"))
        .stdin(std::fs::File::open(&path).expect("open"))
        .output()
        .expect("run");
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let answers: Vec<Value> = o
        .stdout
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).expect("json"))
        .collect();
    assert_eq!(answers.iter().map(|a| a["id"].clone()).collect::<Vec<_>>(), [json!(1), json!(2), json!(3)]);
    assert_ne!(answers[1]["status"], "allowed", "{}", answers[1]);
    assert!(answers[1].get("error").is_some() || answers[1]["needs_approval"] == true, "{}", answers[1]);
    // Its action binding cannot outlive the representable range: it expires at `now` itself.
    assert_eq!(answers[1]["action_binding"]["expiresAt"], "9999-12-31T23:59:59.000Z", "{}", answers[1]);
}

// ---- Request policies only tighten the host's ---------------------------------------------------

const HOST_POLICY: &str = r#"
[[class]]
id = "crm.record.update"
type = "external controlled"
risk = "medium"
minimum_level = 3
requires_approval = true
receipt_required = true
constraints = { max_amount = 100 }

[tools."db.drop"]
tier = "destructive"
required_trust_level = 4

[tools."notes.read"]
tier = "safe"

[thresholds."draft.compose"]
ci_low_min = 0.9
samples_min = 20
"#;

fn host() -> PolicySet {
    PolicySet::from_toml(HOST_POLICY).expect("host policy")
}

fn ask(e: &Evaluator, request: &Value) -> Value {
    answer(e, &serde_json::to_string(request).expect("json"))
}

// The issue's first attack: a request's `policies` declared the host's human-only
// `payment.initiate` as needing no approval, and `strict: true` did not stop it.
#[test]
fn a_request_cannot_declare_a_human_only_class_free() {
    let e = Evaluator::new(host());
    for strict in [false, true] {
        let d = ask(
            &e,
            &json!({"op": "tg.can_execute", "action_class": "payment.initiate", "now": "2026-11-21T09:00:00Z",
                    "strict": strict, "policies": [{"actionClass": "payment.initiate", "humanOnly": false,
                    "requiresApproval": false, "riskClass": "low", "type": "internal", "minimumLevel": 0}]}),
        );
        assert_eq!(d["status"], "human_only", "strict {strict}: {d}");
        assert_eq!(d["allowed"], false, "{d}");
    }
}

// The issue's second attack: `tools` in a `verdict` request turned the host's destructive L4
// tool into a safe L0 one. The host's tier and floor stay; a contract below the floor is held.
#[test]
fn a_request_cannot_make_a_host_tool_safe() {
    let e = Evaluator::new(host());
    let mut packet = warrant::protocol::packet::portable_packet(
        "p-1",
        "draft.compose",
        "agent-a",
        "s",
        json!({}),
        "2026-11-21T09:00:00Z",
    );
    packet["governance"] = json!({"tool": "db.drop", "notebook": "nb", "contract": {"required_level": 3,
        "blast_radius": "project", "reversibility": "reversible", "scope": {"level": "repo", "identifier": "x"},
        "data_sensitivity": "private", "preconditions": []}});
    let v = ask(
        &e,
        &json!({"op": "verdict", "now": "2026-11-21T09:00:00Z", "packet": packet, "ladder_ceiling": 3,
                "controls": {"notebooks": {"nb": "trusted"}},
                "tools": {"db.drop": {"tier": "safe", "required_trust_level": 0}}}),
    );
    let model = |name: &str| v["models"].as_array().and_then(|m| m.iter().find(|x| x["model"] == name)).cloned();
    let tiers = model("tiers").expect("tiers model");
    assert_eq!(tiers["verdict"], "confirm", "destructive × trusted is confirm, not auto: {v}");
    let ladder = model("ladder").expect("ladder model");
    assert_eq!(ladder["verdict"], "deny", "L3 is below the host's L4 floor: {v}");
    // A shortfall below L5 is the principal's to authorise: held for review, never
    // allowed, and the approval would say it resolved the ladder's hold.
    assert_eq!(v["state"], "review_required", "{v}");
    assert!(v["stands_in_for"].to_string().contains("ladder hold resolved"), "{v}");
}

// Field by field: a request that loosens a host class changes nothing; one that tightens does.
#[test]
fn each_class_field_only_tightens() {
    let h = host();
    let base = h.registered("crm.record.update").expect("host class").clone();
    let tightened = |req: Value| {
        let mut r = req;
        r["actionClass"] = json!("crm.record.update");
        h.tightened_by(&[r]).expect("policy").registered("crm.record.update").expect("class").clone()
    };
    use warrant::protocol::graduation::policy::{ClassType, Risk};
    // Loosening attempts: each field back to the laxest value.
    let loose = tightened(json!({"type": "internal", "riskClass": "low", "minimumLevel": 0, "requiresApproval": false,
        "receiptRequired": false, "humanOnly": false, "constraints": {"max_amount": 1_000_000}}));
    assert_eq!(loose.kind, base.kind, "type");
    assert_eq!(loose.risk, base.risk, "risk");
    assert_eq!(loose.minimum_level, base.minimum_level, "minimumLevel");
    assert!(loose.requires_approval && loose.receipt_required, "requiresApproval, receiptRequired");
    assert!(!loose.human_only);
    assert_eq!(loose.constraints["max_amount"], json!(100), "constraints.max_amount stays the host's");
    // Tightening: each field moves.
    assert_eq!(tightened(json!({"type": "external"})).kind, ClassType::External, "type");
    assert_eq!(tightened(json!({"riskClass": "critical"})).risk, Risk::Critical, "risk");
    assert_eq!(tightened(json!({"minimumLevel": 5})).minimum_level, 5, "minimumLevel");
    assert!(tightened(json!({"humanOnly": true})).is_human_only(), "humanOnly");
    assert_eq!(tightened(json!({"constraints": {"max_amount": 5}})).constraints["max_amount"], json!(5), "max_amount");
    assert_eq!(
        tightened(json!({"constraints": {"internal_only": true}})).constraints["internal_only"],
        json!(true),
        "a new constraint is added"
    );
    // An unknown class is tightened against what the host would infer for it: a request cannot
    // declare `social.post.anything` internal and low-risk.
    let inferred = h.policy("social.post.anything").into_owned();
    let declared = h
        .tightened_by(&[json!({"actionClass": "social.post.anything", "type": "internal", "riskClass": "low",
                               "requiresApproval": false})])
        .expect("policy");
    let declared = declared.registered("social.post.anything").expect("class");
    assert_eq!((declared.kind, declared.risk), (inferred.kind, inferred.risk));
    assert_eq!(declared.approval_required(), inferred.approval_required());
}

// Field by field for tools, the posterior's threshold and ladder.gate's floor.
#[test]
fn tools_thresholds_and_floors_only_tighten() {
    use warrant::protocol::tiers::ToolTier;
    let mut p = host();
    p.tighten_tool("db.drop", &json!({"tier": "safe", "required_trust_level": 0})).expect("tool");
    let t = p.tool("db.drop").expect("tool");
    assert_eq!((t.tier, t.required_trust_level), (ToolTier::Destructive, Some(4)), "loosening changes nothing");
    p.tighten_tool("notes.read", &json!({"tier": "mutating", "required_trust_level": 2})).expect("tool");
    let t = p.tool("notes.read").expect("tool");
    assert_eq!((t.tier, t.required_trust_level), (ToolTier::Mutating, Some(2)), "tightening moves both");
    p.tighten_tool("unknown.tool", &json!({"tier": "safe", "required_trust_level": 1})).expect("tool");
    assert!(p.tool("unknown.tool").is_none(), "an unregistered tool stays without a tier (confirm)");
    assert_eq!(p.unregistered_floor("unknown.tool"), Some(3), "and its floor is never below L3");
    p.tighten_tool("unknown.tool2", &json!({"tier": "safe", "required_trust_level": 5})).expect("tool");
    assert_eq!(p.unregistered_floor("unknown.tool2"), Some(5));

    let e = Evaluator::new(host());
    let rows: Vec<Value> = (0..12)
        .map(|_| {
            json!({"action_class": "draft.compose", "label": "approved", "source_type": "principal",
                        "recorded_at": "2026-11-20T09:00:00Z"})
        })
        .collect();
    let posterior = |threshold: Value| {
        ask(
            &e,
            &json!({"op": "tg.posterior", "action_class": "draft.compose", "now": "2026-11-21T09:00:00Z",
                        "evidence": rows, "threshold": threshold}),
        )
    };
    let host_answer = posterior(Value::Null);
    assert_eq!(posterior(json!({"ci_low_min": 0.1, "samples_min": 1})), host_answer, "a lower bar is ignored");
    assert_ne!(posterior(json!({"ci_low_min": 0.99, "samples_min": 1000})), host_answer, "a higher bar applies");

    let contract = json!({"required_level": 3, "blast_radius": "project", "reversibility": "reversible",
        "scope": {"level": "repo", "identifier": "x"}, "data_sensitivity": "private", "preconditions": []});
    let gate = ask(
        &e,
        &json!({"op": "ladder.gate", "tool": "db.drop", "auto_approve_up_to": 3, "contract": contract,
                               "tool_floor": 0}),
    );
    assert_eq!(gate["verdict"], "deny", "the host's L4 floor for db.drop applies: {gate}");
    assert_eq!(gate["matched"]["source"], "floor", "{gate}");
}
