//! Trust Graduation conformance: every vector in `tests/fixtures/conformance/trust-graduation/derived/`
//! (decisions, posteriors, evidence weights, action bindings).
//!
//! Where warrant diverges from the reference on purpose (`docs/conformance.md`, "Trust Graduation
//! divergences"), the test asserts the divergence itself, so a vector that starts to agree or a
//! new disagreement both fail.

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::PathBuf;
use warrant::protocol::graduation::binding::{self, BindingInput};
use warrant::protocol::graduation::evidence::{EvidenceIndex, EvidenceRow, EvidenceSummary, SourceType};
use warrant::protocol::graduation::gate::{AgentStanding, GateRequest, can_execute};
use warrant::protocol::graduation::policy::{DEFAULT_THRESHOLD, PolicySet, Threshold};
use warrant::protocol::graduation::posterior::Posterior;

fn derived(name: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/conformance/trust-graduation/derived")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("vector JSON")
}

fn now() -> time::OffsetDateTime {
    time::macros::datetime!(2026-05-30 12:00 UTC)
}

/// Runs one decision vector through warrant's gate and returns the fields the vectors record.
fn run_vector(fixed: &Value, input: &Value) -> Value {
    let mut context = fixed["context_base"].clone();
    for (k, v) in input["contextExtra"].as_object().into_iter().flatten() {
        context[k] = v.clone();
    }
    let mut rows = Vec::new();
    for entry in input["evidence"].as_array().into_iter().flatten() {
        let row = EvidenceRow::from_json(&entry["row"]).expect("vector row");
        for _ in 0..entry["count"].as_u64().unwrap_or(0) {
            rows.push(row.clone());
        }
    }
    let policies = match input["customPolicies"].as_array() {
        Some(p) => PolicySet::builtin().with_custom(p).expect("custom policies"),
        None => PolicySet::builtin(),
    };
    let index = EvidenceIndex::new(&rows);
    let workspace = fixed["workspace"].as_str().unwrap_or_default();
    let class = input["actionClass"].as_str().unwrap_or_default();
    let request = |approval: Option<&Value>| {
        let req = GateRequest {
            action_class: class,
            context: &context,
            approval,
            evidence: &index,
            workspace,
            now: now(),
            agent: AgentStanding::Active,
            chain_intact: true,
        };
        can_execute(&policies, &req).into_owned()
    };
    let approval = match input["approval"].as_str() {
        Some("plain") => Some(fixed["approval_kinds"]["plain"].clone()),
        Some("exact") => {
            let first = request(None);
            first.action_binding().map(|b| {
                binding::create_grant(b, "grant-1", "principal:user-123", &binding::js_iso(now())).expect("grant")
            })
        }
        _ => None,
    };
    let d = request(approval.as_ref());
    json!({
        "status": d.status.as_str(),
        "mode": d.mode.as_str(),
        "allowed": d.allowed,
        "needsApproval": d.needs_approval,
        "tier": d.tier.as_str(),
        "autonomyLevel": d.autonomy_level,
        "hasPacket": d.approval_packet_required,
        "requiresAtomicConsumption": if d.requires_atomic_consumption { json!(true) } else { Value::Null },
        "constraints": d.constraints,
        "graduationPath": d.graduation_path.as_ref().map_or(Value::Null, |g| g.to_json()),
        "decisionId": d.decision_id(),
        "reason": d.reason,
    })
}

/// The decision vectors where warrant deliberately differs, with the fields that differ and
/// warrant's values for them. Both are fail-open cases of the reference: context constraints
/// replacing the policy's, so that an agent can drop `email.send.internal`'s rate limit and
/// domain allowlist.
fn expected_divergences() -> BTreeMap<&'static str, Value> {
    let policy_limits = json!({"count": 5, "window": "PT1H"});
    BTreeMap::from([
        (
            "12_approved_context_constraints_domain_allowlist/email.send.internal",
            json!({"constraints": {"domain_allowlist": ["company.com"], "rate_limit": policy_limits}}),
        ),
        (
            "12_approved_context_constraints_non_vocabulary_key/email.send.internal",
            json!({
                "status": "allowed_with_constraints",
                "constraints": {"domain_allowlist": [], "rate_limit": policy_limits, "scope": "once"}
            }),
        ),
    ])
}

#[test]
fn decision_vectors_agree_except_documented_divergences() {
    let doc = derived("decision-vectors.json");
    let vectors = doc["vectors"].as_array().expect("vectors");
    assert_eq!(vectors.len(), 115);
    let divergences = expected_divergences();
    let mut agree = 0;
    let mut seen_divergent = Vec::new();
    for v in vectors {
        let id = v["id"].as_str().unwrap_or_default();
        let got = run_vector(&doc["fixed_inputs"], &v["input"]);
        let expected = &v["expected"];
        let differing: BTreeMap<&str, &Value> = expected
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, want)| got.get(k.as_str()) != Some(want))
            .map(|(k, _)| (k.as_str(), &got[k.as_str()]))
            .collect();
        if differing.is_empty() {
            agree += 1;
            assert!(!divergences.contains_key(id), "{id} agrees now; drop it from the divergences");
            continue;
        }
        let Some(ours) = divergences.get(id) else {
            panic!("{id}: unexpected disagreement\n  got      {got}\n  expected {expected}");
        };
        let ours: BTreeMap<&str, &Value> =
            ours.as_object().into_iter().flatten().map(|(k, v)| (k.as_str(), v)).collect();
        assert_eq!(differing, ours, "{id}: divergence differs from the documented one");
        seen_divergent.push(id);
    }
    assert_eq!(seen_divergent.len(), divergences.len());
    eprintln!("decision vectors: {agree}/{} agree; {} documented divergences", vectors.len(), seen_divergent.len());
    assert_eq!(agree, 113);
}

#[test]
fn exact_grant_vector_binds_the_first_decisions_action() {
    let doc = derived("decision-vectors.json");
    let fixed = &doc["fixed_inputs"];
    let v = doc["vectors"]
        .as_array()
        .and_then(|a| a.iter().find(|v| v["id"] == "exact_valid_grant/email.send.external"))
        .expect("vector");
    let got = run_vector(fixed, &v["input"]);
    assert_eq!(got["mode"], "pending_atomic_consumption");
    assert_eq!(got["needsApproval"], false);
}

fn threshold_of(name: &str, doc: &Value) -> Threshold {
    let t = &doc["thresholds"][name];
    Threshold { ci_low_min: t[0].as_f64().unwrap_or(2.0), samples_min: t[1].as_u64().unwrap_or(u64::MAX) as u32 }
}

/// The evidence each posterior case describes, as rows warrant weighs itself.
fn case_rows(name: &str) -> Vec<EvidenceRow> {
    let row = |label: &str, st: SourceType| EvidenceRow::new("draft.compose", label, Some(st), None);
    let with_weight = |label: &str, st: SourceType, d: f64| {
        let mut r = row(label, st);
        r.decision_weight = d;
        r.evidence_weight = ((d * st.weight()) * 10_000.0).round() / 10_000.0;
        r
    };
    let n = |k: usize, r: EvidenceRow| vec![r; k];
    let (r, c, m, p) = (SourceType::Receipt, SourceType::Connector, SourceType::ModelInferred, SourceType::Principal);
    match name {
        "prior only" => vec![],
        "(a) 10 receipt approvals" => n(10, row("approve", r)),
        "(b) 30 receipt approvals + 1 receipt refusal" => [n(30, row("approve", r)), n(1, row("refuse", r))].concat(),
        "(c) 25 model_inferred approvals" => n(25, row("approved", m)),
        "(d) 12 connector approvals + 3 principal corrections [correction=edited -0.15]" => {
            [n(12, row("approved", c)), n(3, row("correct", p))].concat()
        }
        "(d') ... corrections as heavy_rewrite -0.55" => {
            [n(12, row("approved", c)), n(3, row("heavy_rewrite", p))].concat()
        }
        "(d'') ... corrections as rejected -1.00" => [n(12, row("approved", c)), n(3, row("rejected", p))].concat(),
        "(d''') ... corrections weight 0 (JS reference: unknown label 'correction')" => {
            [n(12, row("approved", c)), n(3, with_weight("correction", p, 0.0))].concat()
        }
        "(a1) 10 receipt approvals at weight 1.0 (sent/executed)" => n(10, row("execute", r)),
        "(b1) 30 receipt executions (1.0) + 1 refusal" => [n(30, row("sent", r)), n(1, row("rejected", r))].concat(),
        "(c1) 25 model_inferred at 1.0" => n(25, row("sent", m)),
        "(d1) 12 connector at 1.0 + 3 edited" => [n(12, row("sent", c)), n(3, row("edited", p))].concat(),
        other => panic!("no rows for case {other:?}"),
    }
}

#[test]
fn posterior_vectors_within_1e9() {
    let doc = derived("posterior-vectors.json");
    let today = time::macros::date!(2026 - 11 - 21);
    let cases = doc["cases"].as_object().expect("cases");
    assert_eq!(cases.len(), 12);
    for (name, want) in cases {
        let rows = case_rows(name);
        for (class, key) in [
            ("draft.compose", "graduation_ready_default"),
            ("email.send.external", "graduation_ready_email_ext"),
            ("calendar.create", "graduation_ready_calendar"),
        ] {
            let threshold = match class {
                "draft.compose" => threshold_of("default", &doc),
                "email.send.external" => threshold_of("email.send.external", &doc),
                _ => threshold_of("calendar.create", &doc),
            };
            assert_eq!(threshold, PolicySet::builtin().threshold(class), "{class}");
            let relabelled: Vec<EvidenceRow> = rows
                .iter()
                .cloned()
                .map(|mut r| {
                    r.action_class = class.to_owned();
                    r
                })
                .collect();
            let p = Posterior::of(class, &relabelled, threshold, today);
            assert_eq!(p.graduation_ready(), want[key].as_bool().expect("bool"), "{name}: {key}");
            for (field, got) in [
                ("alpha", p.alpha),
                ("beta", p.beta),
                ("mean", p.mean),
                ("ci_low", p.ci_low),
                ("ci_high", p.ci_high),
                ("ci_width", p.ci_width()),
            ] {
                let w = want[field].as_f64().expect("number");
                assert!((got - w).abs() < 1e-9, "{name}: {field} {got} vs {w} (Δ {:e})", (got - w).abs());
            }
            for field in ["samples", "positive", "negative", "neutral"] {
                let got = match field {
                    "samples" => p.samples,
                    "positive" => p.positive,
                    "negative" => p.negative,
                    _ => p.neutral,
                };
                assert_eq!(u64::from(got), want[field].as_u64().expect("count"), "{name}: {field}");
            }
            assert_eq!(p.needs_more_evidence(), want["needs_more_evidence"].as_bool().expect("bool"), "{name}");
            let normal = &want["normal_approx_for_comparison_only"];
            let normal_low = normal[0].as_f64().expect("number");
            if name != "prior only" {
                assert!((p.ci_low - normal_low).abs() > 1e-3, "{name}: ci_low looks like the normal approximation");
            }
        }
    }
    assert_eq!(DEFAULT_THRESHOLD, threshold_of("default", &doc));
}

/// Labels where warrant follows the spec instead of the reference's weights, with warrant's
/// decision weight.
fn label_divergences() -> BTreeMap<&'static str, f64> {
    BTreeMap::from([
        ("dropped", -1.0),
        ("refused", -1.0),
        ("outcome_negative", -1.0),
        ("refusal", -1.0),
        ("correction", -0.15),
        ("corrected", -0.15),
        ("approve", 0.85),
        ("approval", 0.85),
        ("execute", 1.0),
        ("execution", 1.0),
    ])
}

#[test]
fn evidence_weight_vectors() {
    let doc = derived("evidence-weight-vectors.json");
    let reference = doc["reference"].as_object().expect("reference");
    let divergent = label_divergences();
    let mut agree = 0;
    let mut total = 0;
    for (label, by_source) in reference {
        for (source, want) in by_source.as_object().into_iter().flatten() {
            total += 1;
            let want = want.as_f64().expect("weight");
            let mut row = json!({"action_class": "draft.compose", "label": label});
            if source != "(none)" {
                row["source_type"] = json!(source);
            }
            let got = EvidenceRow::from_json(&row).expect("row");
            let provenance = SourceType::parse(source).map_or(0.1, SourceType::weight);
            let expected = match divergent.get(label.as_str()) {
                Some(d) => ((d * provenance) * 10_000.0).round() / 10_000.0,
                None if source == "(none)" => ((want * 0.1) * 10_000.0).round() / 10_000.0,
                None => want,
            };
            assert!(
                (got.evidence_weight - expected).abs() < 1e-12,
                "{label}/{source}: {} vs {expected}",
                got.evidence_weight
            );
            if (got.evidence_weight - want).abs() < 1e-12 {
                agree += 1;
            }
        }
    }
    for (label, w) in doc["spec_decision_weights"].as_object().into_iter().flatten() {
        let row = EvidenceRow::new("draft.compose", label, Some(SourceType::Receipt), None);
        assert_eq!(Some(row.decision_weight), w.as_f64(), "{label}: spec table");
    }
    for (source, w) in doc["spec_provenance_weights"].as_object().into_iter().flatten() {
        assert_eq!(SourceType::parse(source).map(SourceType::weight), w.as_f64(), "{source}");
    }
    eprintln!("evidence weights: {agree}/{total} agree with the reference");
}

#[test]
fn summary_buckets_match_the_reference_except_misfiled_negatives() {
    let doc = derived("evidence-weight-vectors.json");
    for (label, want) in doc["reference_summary_bucket_for_one_row"].as_object().into_iter().flatten() {
        let row = EvidenceRow::from_json(&json!({"action_class": "a.b", "label": label, "source_type": "receipt"}))
            .expect("row");
        let s = EvidenceSummary::of("a.b", [&row]);
        let count = |k: &str| want.get(k).and_then(Value::as_u64).unwrap_or(0) as u32;
        if matches!(label.as_str(), "refused" | "dropped" | "outcome_negative" | "correction") {
            // warrant: refused and dropped are rejections, outcome_negative a negative outcome,
            // correction an edit (the reference misfiles or ignores them).
            let negative = label != "correction";
            assert_eq!(s.negative, u32::from(negative), "{label}");
            assert_eq!(s.positive, u32::from(!negative), "{label}");
            continue;
        }
        for (k, got) in [
            ("approvals", s.approvals),
            ("positive", s.positive),
            ("negative", s.negative),
            ("edits", s.edits),
            ("rejections", s.rejections),
            ("held", s.held),
            ("trustIssues", s.trust_issues),
            ("rollbacks", s.rollbacks),
            ("receipts", s.receipts),
            ("outcomes", s.outcomes),
            ("decisions", s.decisions),
            ("graduationPositive", s.graduation_positive),
            ("graduationApprovals", s.graduation_approvals),
        ] {
            assert_eq!(got, count(k), "{label}: {k}");
        }
    }
}

#[test]
fn action_binding_vectors() {
    let doc = derived("action-binding-vectors.json");
    let i = &doc["binding_input"];
    let s = |k: &str| i[k].as_str().unwrap_or_default();
    assert_eq!(
        warrant::protocol::canonical::to_canonical_string(&i["input"]),
        doc["input_canonical"].as_str().unwrap_or_default()
    );
    let b = binding::bind_action(&BindingInput {
        action_class: s("actionClass"),
        workspace: s("workspace"),
        principal: s("principal"),
        requested_by: s("requestedBy"),
        tenant: s("tenant"),
        target: s("target"),
        input: &i["input"],
        constraints: i["constraints"].as_object().expect("binding_input.constraints is an object"),
        expires_at: s("expiresAt"),
        nonce: s("nonce"),
    });
    assert_eq!(b, doc["expected_binding"]);
    let mut without = b.clone();
    without.as_object_mut().map(|m| m.remove("actionHash"));
    assert_eq!(
        warrant::protocol::canonical::to_canonical_string(&without),
        doc["binding_canonical_without_actionHash"].as_str().unwrap_or_default()
    );
    let grant =
        binding::create_grant(&b, "grant-1", "principal:principal-1", "2026-08-16T12:00:00.000Z").expect("grant");
    assert_eq!(grant, doc["expected_grant"]);
    let ex = &doc["canonical_example"];
    assert_eq!(
        warrant::protocol::canonical::to_canonical_string(&ex["input"]),
        ex["canonical"].as_str().unwrap_or_default()
    );
    assert_eq!(binding::digest(&ex["input"]), ex["digest"].as_str().unwrap_or_default());
    assert_eq!(binding::digest(&json!({})), doc["empty_object_digest"].as_str().unwrap_or_default());
}
