//! Every Trust Graduation object warrant emits validates against the portable v0.1 schemas in
//! `tests/fixtures/conformance/trust-graduation/site/spec/0.1/`, with JSON Schema `format` asserted:
//! gate decisions for the ten canonical classes under several evidence mixes and standings,
//! approval packets (whose `decision` is a `$ref` to the decision schema, registered by hand),
//! receipts for the four outcomes, evidence rows, posteriors, and the action-class rows of the
//! discovery document. The discovery document is also compared with the published example at
//! `site/.well-known/trust-graduation`, and every validator is shown to reject a broken object.

use jsonschema::{Resource, Validator};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::PathBuf;
use time::OffsetDateTime;
use time::macros::{date, datetime};
use warrant::protocol::graduation::binding;
use warrant::protocol::graduation::discovery_document;
use warrant::protocol::graduation::evidence::{EvidenceIndex, EvidenceRow, SourceType};
use warrant::protocol::graduation::gate::{AgentStanding, Decision, GateRequest, can_execute};
use warrant::protocol::graduation::policy::PolicySet;
use warrant::protocol::graduation::posterior::Posterior;
use warrant::protocol::graduation::receipt::{ReceiptInput, ReceiptOutcome, build_receipt, prepare_approval_packet};
use warrant::protocol::registry::CANONICAL;

const SITE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/conformance/trust-graduation/site");
const SPEC_BASE: &str = "https://trustgraduation.org/spec/0.1/";

fn load(rel: &str) -> Value {
    let path = PathBuf::from(SITE).join(rel);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn schema(name: &str) -> Value {
    load(&format!("spec/0.1/{name}.schema.json"))
}

/// A validator for one portable schema, `format` asserted. The approval-packet schema's
/// `$ref: decision.schema.json` resolves (relative to its `$id`) to the decision schema's own
/// `$id`; no retriever is compiled in, so the decision schema is registered under that URI.
fn validator(name: &str) -> Validator {
    let decision = schema("decision");
    let id = decision["$id"].as_str().expect("decision $id").to_owned();
    assert_eq!(id, format!("{SPEC_BASE}decision.schema.json"));
    jsonschema::options()
        .should_validate_formats(true)
        .with_resource(id, Resource::from_contents(decision).expect("decision schema is a resource"))
        .build(&schema(name))
        .unwrap_or_else(|e| panic!("{name} schema compiles: {e}"))
}

fn errors(v: &Validator, instance: &Value) -> String {
    v.iter_errors(instance).map(|e| format!("  {} at {:?}", e, e.instance_path.as_str())).collect::<Vec<_>>().join("\n")
}

fn assert_valid(v: &Validator, instance: &Value, what: &str) {
    assert!(v.is_valid(instance), "{what} fails its schema:\n{}\n{instance:#}", errors(v, instance));
}

fn now() -> OffsetDateTime {
    datetime!(2026-05-30 12:00:00.250 UTC)
}

fn rows(class: &str, label: &str, source: Option<SourceType>, n: usize) -> Vec<EvidenceRow> {
    (0..n).map(|i| EvidenceRow::new(class, label, source, Some(format!("2026-05-{:02}", 1 + i % 28)))).collect()
}

/// The evidence mixes of the brief, for one class.
fn mixes(class: &str) -> Vec<(&'static str, Vec<EvidenceRow>)> {
    let mut trust = rows(class, "approved", Some(SourceType::Receipt), 8);
    trust.extend(rows(class, "trust_issue", Some(SourceType::Principal), 1));
    let mut mixed = rows(class, "sent", Some(SourceType::Receipt), 4);
    mixed.extend(rows(class, "minor_edit", Some(SourceType::Connector), 3));
    mixed.extend(rows(class, "rejected", None, 2));
    mixed.extend(rows(class, "held", Some(SourceType::ModelInferred), 2));
    // Rows of another class must not change anything but are emitted alongside.
    mixed.extend(rows("read.context", "approved", Some(SourceType::Receipt), 3));
    vec![
        ("none", Vec::new()),
        ("12 approved", rows(class, "approved", Some(SourceType::Receipt), 12)),
        ("approved + trust_issue", trust),
        ("mixed", mixed),
    ]
}

struct Case {
    what: String,
    policies: PolicySet,
    class: String,
    context: Value,
    approval: Option<Value>,
    evidence: Vec<EvidenceRow>,
    agent: AgentStanding,
    chain_intact: bool,
}

impl Case {
    fn new(what: String, class: &str, evidence: Vec<EvidenceRow>) -> Self {
        Case {
            what,
            policies: PolicySet::builtin(),
            class: class.to_owned(),
            context: json!({}),
            approval: None,
            evidence,
            agent: AgentStanding::Active,
            chain_intact: true,
        }
    }

    fn decide(&self) -> Decision<'static> {
        let index = EvidenceIndex::new(&self.evidence);
        let req = GateRequest {
            action_class: &self.class,
            context: &self.context,
            approval: self.approval.as_ref(),
            evidence: &index,
            workspace: "local",
            now: now(),
            agent: self.agent,
            chain_intact: self.chain_intact,
        };
        can_execute(&self.policies, &req).into_owned()
    }
}

/// Every decision case: the ten classes × the evidence mixes × (plain, asynchronous, with
/// constraints, quarantined, killed, chain broken, strict policy), a valid exact grant and a
/// plain approval flag for the classes that need approval, and unknown classes under a strict
/// and a lax policy.
fn cases() -> Vec<Case> {
    let strict = PolicySet::from_toml("strict = true").expect("strict policy");
    let mut out = Vec::new();
    for c in CANONICAL {
        for (mix, evidence) in mixes(c.id) {
            let base = |what: &str| Case::new(format!("{} / {mix} / {what}", c.id), c.id, evidence.clone());
            out.push(base("plain"));
            let mut a = base("asynchronousApproval");
            a.context = json!({"asynchronousApproval": true, "requestedAction": {"to": "x@example.com"}});
            out.push(a);
            let mut k = base("context constraints");
            k.context = json!({"constraints": {
                "internal_only": true, "max_amount": 25, "rate_limit": {"count": 2, "window": "PT1H"},
                "recipient_allowlist": ["buyer@example.com"], "domain_allowlist": ["example.com"],
                "redaction_rules": ["pii"], "expires_at": "2026-06-01T00:00:00Z", "requires_witness": false
            }});
            out.push(k);
            let mut q = base("quarantined");
            q.agent = AgentStanding::Quarantined;
            out.push(q);
            let mut kill = base("killed");
            kill.agent = AgentStanding::Killed;
            out.push(kill);
            let mut broken = base("chain broken");
            broken.chain_intact = false;
            out.push(broken);
            let mut s = base("strict policy");
            s.policies = strict.clone();
            out.push(s);
            let mut flag = base("plain approval flag");
            flag.approval = Some(json!({"state": "approved"}));
            out.push(flag);
            // A valid exact grant for the binding the gate makes for this very request.
            if let Some(b) = base("").decide().action_binding() {
                let grant = binding::create_grant(b, "grant-1", "principal:local", "2026-05-30T11:59:00.000Z")
                    .expect("grant for the gate's binding");
                let mut g = base("valid exact grant");
                g.approval = Some(grant);
                out.push(g);
            }
        }
    }
    for unknown in ["widget.frobnicate", "crm.record.delete", "vendor.sync.local"] {
        let mut s = Case::new(format!("{unknown} / strict"), unknown, Vec::new());
        s.policies = strict.clone();
        out.push(s);
        out.push(Case::new(format!("{unknown} / lax"), unknown, rows(unknown, "approved", None, 3)));
    }
    out
}

// Decisions for the ten canonical classes under every evidence mix and standing validate against decision.schema.json (formats asserted), and the fail-closed cases are blocked.
#[test]
fn decisions_validate_against_the_decision_schema() {
    let v = validator("decision");
    let cases = cases();
    assert!(cases.len() > 300, "{}", cases.len());
    let mut statuses = BTreeSet::new();
    let mut modes = BTreeSet::new();
    let mut grants = 0;
    for case in &cases {
        let d = case.decide();
        let j = d.to_json();
        assert_valid(&v, &j, &case.what);
        assert_eq!(j["status"], json!(d.status.as_str()), "{}", case.what);
        statuses.insert(j["status"].as_str().expect("status").to_owned());
        modes.insert(j["mode"].as_str().expect("mode").to_owned());
        let blocked = case.agent != AgentStanding::Active
            || !case.chain_intact
            || (case.policies.strict && case.policies.registered(&d.action_class).is_none());
        if blocked {
            assert_eq!(j["status"], "blocked", "{}", case.what);
            assert_eq!(j["allowed"], false, "{}", case.what);
        } else {
            assert_ne!(j["status"], "blocked", "{}", case.what);
        }
        if d.action_class == "payment.initiate" && !blocked {
            assert_eq!(j["status"], "human_only", "{}", case.what);
        }
        if case.what.ends_with("valid exact grant") && !blocked {
            assert_eq!(j["status"], "deferred", "{}", case.what);
            assert_eq!(j["mode"], "pending_atomic_consumption", "{}", case.what);
            assert_eq!(j["observed"]["approval"]["valid"], true, "{}", case.what);
            grants += 1;
        }
    }
    let all: BTreeSet<String> =
        ["allowed", "allowed_with_constraints", "review_required", "deferred", "blocked", "human_only"]
            .map(String::from)
            .into();
    assert_eq!(statuses, all, "the cases reach every decision state");
    // Four approval-gated classes (email.send.external, calendar.create, social.post.public,
    // proposal.submit) × four evidence mixes.
    assert_eq!(grants, 16);
    assert!(modes.len() >= 8, "modes reached: {modes:?}");
}

// The decision validator rejects broken decisions: an unknown status, a bad class id, a bad constraint, a non-date-time expires_at (format asserted).
#[test]
fn decision_schema_rejects_broken_decisions() {
    let v = validator("decision");
    let good = Case::new("good".into(), "email.send.internal", Vec::new()).decide().to_json();
    assert_valid(&v, &good, "good decision");
    let mut maybe = good.clone();
    maybe["status"] = json!("maybe");
    assert!(!v.is_valid(&maybe), "status maybe must fail");
    let mut class = good.clone();
    class["action_class"] = json!("Email Send");
    assert!(!v.is_valid(&class));
    let mut missing = good.clone();
    missing.as_object_mut().expect("object").remove("reason");
    assert!(!v.is_valid(&missing));
    let mut rate = good.clone();
    rate["constraints"]["rate_limit"] = json!({"count": 0, "window": "PT1H"});
    assert!(!v.is_valid(&rate));
    let mut expiry = good.clone();
    expiry["constraints"]["expires_at"] = json!("next tuesday");
    assert!(!v.is_valid(&expiry), "format date-time must be asserted");
    let mut next = good;
    next["graduationPath"] = json!({"next_best_action": "route_around"});
    assert!(!v.is_valid(&next));
}

// Approval packets from prepare_approval_packet validate against approval-packet.schema.json with its decision $ref resolved, and the nested decision is really checked.
#[test]
fn approval_packets_validate_against_the_packet_schema() {
    let v = validator("approval-packet");
    let rows_v = validator("evidence-row");
    let mut n = 0;
    for case in cases() {
        let d = case.decide();
        let p = prepare_approval_packet(&d, &case.evidence, "scribe", "Send the quote — Grüße");
        assert_valid(&v, &p, &case.what);
        assert_eq!(p["external_actions"], 0, "{}", case.what);
        assert_eq!(p["decision"], d.to_json(), "{}", case.what);
        assert_eq!(p["action_class"], json!(d.action_class), "{}", case.what);
        for (i, row) in p["evidence"].as_array().expect("evidence array").iter().enumerate() {
            assert_valid(&rows_v, row, &format!("{} evidence[{i}]", case.what));
            assert_eq!(row["action_class"], json!(d.action_class));
        }
        n += 1;
    }
    assert!(n > 300);

    // The $ref is followed: a packet whose decision is broken fails.
    let d = Case::new("x".into(), "email.send.external", Vec::new()).decide();
    let good = prepare_approval_packet(&d, &[], "scribe", "s");
    assert_valid(&v, &good, "good packet");
    let mut maybe = good.clone();
    maybe["decision"]["status"] = json!("maybe");
    assert!(!v.is_valid(&maybe), "a packet with decision status maybe must fail");
    let mut expiry = good.clone();
    expiry["decision"]["constraints"] = json!({"expires_at": "soon"});
    assert!(!v.is_valid(&expiry), "format inside the referenced schema must be asserted");
    let mut ext = good;
    ext["external_actions"] = json!(1);
    assert!(!v.is_valid(&ext));
}

// Without the decision schema registered, the packet schema's $ref does not resolve (so the registration above is what makes the nested check happen).
#[test]
fn packet_schema_ref_needs_the_decision_schema() {
    let built = jsonschema::options().should_validate_formats(true).build(&schema("approval-packet"));
    assert!(built.is_err(), "the decision $ref resolved without the decision schema registered");
}

fn receipt_inputs() -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let mut prev: Option<String> = None;
    for (i, outcome) in ReceiptOutcome::ALL.into_iter().enumerate() {
        for (j, c) in CANONICAL.iter().enumerate() {
            let id = format!("rcpt-{i}-{j}");
            let created = format!("2026-05-30T12:{:02}:{:02}.{}Z", i * 10 + j, j * 5, i + 1);
            let full = j % 2 == 0;
            let r = build_receipt(&ReceiptInput {
                receipt_id: &id,
                action_class: c.id,
                outcome,
                agent: "scribe",
                packet_id: full.then_some("tg_20260530120000_email-send-external_0a1b2c3d"),
                source_type: if full { Some(SourceType::ALL[j % 4]) } else { None },
                created_at: &created,
                prev_hash: prev.as_deref(),
                note: full.then_some("looks right — Grüße"),
                tool_call: None,
            });
            prev = r["content_hash"].as_str().map(str::to_owned);
            out.push((format!("{outcome} {}", c.id), r));
        }
    }
    out
}

// Receipts from build_receipt for all four outcomes (with and without optional fields, chained) validate against receipt.schema.json.
#[test]
fn receipts_validate_against_the_receipt_schema() {
    let v = validator("receipt");
    let receipts = receipt_inputs();
    let mut outcomes = BTreeSet::new();
    for (what, r) in &receipts {
        assert_valid(&v, r, what);
        outcomes.insert(r["outcome"].as_str().expect("outcome").to_owned());
        assert!(r["content_hash"].as_str().is_some_and(|h| h.starts_with("sha256:")), "{what}");
    }
    assert_eq!(outcomes.len(), 4);
    assert!(receipts.iter().skip(1).all(|(_, r)| r["prev_hash"].is_string()));
    // The validator rejects a broken receipt, including a created_at that is not a date-time.
    let good = receipts[0].1.clone();
    let mut bad_time = good.clone();
    bad_time["created_at"] = json!("tuesday");
    assert!(!v.is_valid(&bad_time), "format date-time must be asserted");
    let mut bad_type = good.clone();
    bad_type["type"] = json!("receipt");
    assert!(!v.is_valid(&bad_type));
    let mut empty_id = good;
    empty_id["receipt_id"] = json!("");
    assert!(!v.is_valid(&empty_id));
}

const LABELS: [&str; 20] = [
    "sent",
    "approved",
    "minor_edit",
    "edited",
    "heavy_rewrite",
    "held",
    "rejected",
    "dropped",
    "trust_issue",
    "hallucination",
    "rollback",
    "refused",
    "outcome_negative",
    "outcome_positive",
    "approve",
    "execute",
    "correct",
    "Policy Exception",
    "data-leak-detected",
    "something else entirely",
];

// Evidence rows (built, and parsed from both wire forms with every optional member) serialize to rows valid under evidence-row.schema.json.
#[test]
fn evidence_rows_validate_against_the_evidence_row_schema() {
    let v = validator("evidence-row");
    let mut n = 0;
    for label in LABELS {
        for source in [None, Some(SourceType::Receipt), Some(SourceType::Principal), Some(SourceType::Connector)]
            .into_iter()
            .chain([Some(SourceType::ModelInferred)])
        {
            for date in [None, Some("2024-02-29".to_owned())] {
                let row = EvidenceRow::new("email_send_external", label, source, date);
                let j = row.to_json("2026-05-30");
                assert_valid(&v, &j, &format!("{label} {source:?}"));
                assert_eq!(j["action_class"], "email.send.external");
                n += 1;
            }
        }
    }
    let parsed = [
        json!({"actionClass": "payment.spend", "type": "approved", "sourceType": "connector"}),
        json!({"action_class": "draft.response", "label": "rejected", "source_type": "model_inferred",
               "decision_weight": -7, "provenance_weight": 3, "evidence_weight": -2}),
        json!({"action_class": "draft.compose", "label": "minor_edit", "source_type": "principal",
               "date": "2026-05-01", "source": "tracker-a", "receipt_id": "r-9",
               "recorded_at": "2026-05-01T10:00:00Z", "edit_distance": 0.2}),
        json!({"action_class": "draft.compose", "label": "sent", "createdAt": "2026-04-30T23:59:59.123+02:00"}),
        json!({"action_class": "calendar.create", "eventType": "held", "provenanceType": "receipt",
               "decisionWeight": 0.5, "evidenceWeight": 1.5}),
        json!({"action_class": "tool.call.local", "decision": "heavy rewrite", "source_type": "not-a-type"}),
    ];
    for p in &parsed {
        let row = EvidenceRow::from_json(p).unwrap_or_else(|e| panic!("{p}: {e}"));
        assert_valid(&v, &row.to_json("2026-05-30"), &p.to_string());
        n += 1;
    }
    assert!(n >= 200);
    // The validator rejects broken rows: a date that is not a date (format asserted), a weight out of range.
    let good = EvidenceRow::new("draft.compose", "approved", Some(SourceType::Receipt), None).to_json("2026-05-30");
    assert_valid(&v, &good, "good row");
    let mut bad_date = good.clone();
    bad_date["date"] = json!("2026-02-30");
    assert!(!v.is_valid(&bad_date), "format date must be asserted");
    let mut bad_weight = good.clone();
    bad_weight["evidence_weight"] = json!(1.5);
    assert!(!v.is_valid(&bad_weight));
    let mut bad_source = good;
    bad_source["source_type"] = json!("gossip");
    assert!(!v.is_valid(&bad_source));
}

// Posteriors for every class and evidence mix (plus extreme ones) validate against posterior.schema.json.
#[test]
fn posteriors_validate_against_the_posterior_schema() {
    let v = validator("posterior");
    let policies = PolicySet::builtin();
    let today = date!(2026 - 05 - 30);
    let mut n = 0;
    for c in CANONICAL {
        let mut all = mixes(c.id);
        all.push(("500 sent", rows(c.id, "sent", Some(SourceType::Receipt), 500)));
        all.push(("500 rejected", rows(c.id, "rejected", Some(SourceType::Principal), 500)));
        all.push(("neutral only", rows(c.id, "held", Some(SourceType::Receipt), 5)));
        let mut old = rows(c.id, "sent", Some(SourceType::Receipt), 40);
        old.push(EvidenceRow::new(c.id, "trust_issue", Some(SourceType::Receipt), Some("2025-01-01".into())));
        all.push(("old trust issue", old));
        for (mix, evidence) in all {
            let p = Posterior::of(c.id, &evidence, policies.threshold(c.id), today);
            let j = p.to_json();
            assert_valid(&v, &j, &format!("{} / {mix}", c.id));
            assert_eq!(j["action_class"], c.id);
            n += 1;
        }
    }
    assert_eq!(n, 80);
    let good = Posterior::of("draft.compose", &[], policies.threshold("draft.compose"), today).to_json();
    let mut bad_tier = good.clone();
    bad_tier["tier"] = json!("trusted");
    assert!(!v.is_valid(&bad_tier));
    let mut bad_ci = good.clone();
    bad_ci["ci_high"] = json!(1.2);
    assert!(!v.is_valid(&bad_ci));
    let mut bad_quality = good;
    bad_quality["evidence_quality"]["excellent"] = json!(1);
    assert!(!v.is_valid(&bad_quality));
}

const LOCAL_POLICY: &str = r#"
strict = true

[[class]]
id = "crm.record.update"
type = "external controlled"
aliases = ["crm_update", "CRM.Update"]
constraints = { rate_limit = { count = 10, window = "PT1H" } }

[[class]]
id = "vendor.order.place"
type = "external"
description = "Place an order with a vendor."

[[class]]
id = "notes.local.write"
type = "internal"

[[class]]
id = "contract.sign"
type = "human-only"
"#;

// The action-class rows of the discovery document (built-in, local classes from policy.toml, custom policies) validate against action-class.schema.json.
#[test]
fn discovery_action_classes_validate_against_the_action_class_schema() {
    let v = validator("action-class");
    let local = PolicySet::from_toml(LOCAL_POLICY).expect("local policy");
    let custom = PolicySet::builtin()
        .with_custom(&[
            json!({"actionClass": "invoice.approve", "riskClass": "high", "minimumLevel": 4}),
            json!({"actionClass": "read.context", "riskClass": "low", "description": "Replaced."}),
        ])
        .expect("custom policies");
    for (what, set, expected) in [("builtin", PolicySet::builtin(), 10), ("local", local, 14), ("custom", custom, 11)] {
        let doc = discovery_document(&set);
        let classes = doc["action_classes"].as_array().expect("action_classes");
        assert_eq!(classes.len(), expected, "{what}");
        for (i, c) in classes.iter().enumerate() {
            assert_valid(&v, c, &format!("{what} action_classes[{i}]"));
        }
        for (i, c) in doc["local_action_classes"].as_array().expect("local_action_classes").iter().enumerate() {
            assert_valid(&v, c, &format!("{what} local_action_classes[{i}]"));
        }
    }
    let doc = discovery_document(&PolicySet::from_toml(LOCAL_POLICY).expect("local policy"));
    let crm = doc["action_classes"]
        .as_array()
        .and_then(|a| a.iter().find(|c| c["id"] == "crm.record.update"))
        .expect("crm class listed");
    assert_eq!(crm["type"], "external controlled");
    assert_eq!(crm["aliases"], json!(["crm_update", "crm.update"]));
    assert_eq!(doc["local_action_classes"].as_array().map(Vec::len), Some(4));
    assert_eq!(doc["strict_unknown_classes"], true);
    // Every canonical row: its registry type, and a schema that rejects a broken row.
    let builtin = discovery_document(&PolicySet::builtin());
    for (row, c) in builtin["action_classes"].as_array().expect("rows").iter().zip(CANONICAL) {
        assert_eq!((row["id"].as_str(), row["type"].as_str()), (Some(c.id), Some(c.kind)));
    }
    let mut bad = builtin["action_classes"][0].clone();
    bad["type"] = json!("sideways");
    assert!(!v.is_valid(&bad));
    let mut empty = builtin["action_classes"][0].clone();
    empty["description"] = json!("");
    assert!(!v.is_valid(&empty));
}

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object().expect("object").keys().cloned().collect()
}

// The discovery document agrees with the published site/.well-known/trust-graduation on protocol, version, states, canonical classes, schema URLs and guidance keys.
#[test]
fn discovery_document_matches_the_published_example() {
    let example = load(".well-known/trust-graduation");
    for set in [PolicySet::builtin(), PolicySet::from_toml(LOCAL_POLICY).expect("local policy")] {
        let doc = discovery_document(&set);
        for key in ["protocol", "version", "decision_states", "canonical_action_classes", "canonical", "spec"] {
            assert_eq!(doc[key], example[key], "{key}");
        }
        assert_eq!(keys(&doc["schemas"]), keys(&example["schemas"]));
        assert_eq!(doc["schemas"], example["schemas"], "the same schema URLs");
        assert_eq!(keys(&doc["agent_guidance"]), keys(&example["agent_guidance"]));
        // Each schema URL is the $id of the schema file of that name.
        for (k, url) in doc["schemas"].as_object().expect("schemas") {
            let file = url.as_str().and_then(|u| u.strip_prefix(SPEC_BASE)).unwrap_or_else(|| panic!("{k}: {url}"));
            assert_eq!(load(&format!("spec/0.1/{file}"))["$id"], *url, "{k}");
        }
        // Guidance exists for every decision state.
        for state in doc["decision_states"].as_array().expect("states") {
            let s = state.as_str().expect("state");
            assert!(doc["agent_guidance"][s].is_string(), "{s}");
        }
    }
}
