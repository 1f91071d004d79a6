//! JSON-Schema validation of what warrant writes and reads, against the published schemas in
//! `tests/fixtures/conformance/`: chain records (OpenTrustGraph v0.1 record schema), the export
//! envelope (chain schema), the reference runtime's packets (`schemas/v1`), and a cross-check that
//! `parse_packet` accepts exactly what the packet schemas accept, except where it is deliberately
//! stricter (each such case is marked and explained).

use jsonschema::{Resource, Validator};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use warrant::protocol::chain::{self, VerifyOptions};
use warrant::protocol::decision::Verdict;
use warrant::protocol::keys::{PinnedKeys, Principal};
use warrant::protocol::packet::{self, InvalidReason, PacketForm};
use warrant::store::chain_file;
use warrant::store::spool::{self, Spool};

const CONFORMANCE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/conformance");
/// The URI the chain schema's `records.items.$ref` resolves to (relative to the chain `$id`); no
/// schema has this `$id`, so the v0.1 record schema is registered under it (§10 item 2).
const RECORD_REF_URI: &str = "https://harnlang.com/schemas/opentrustgraph/v0/trust-record.v0.schema.json";
const DECISION_SCHEMA_ID: &str = "https://trustgraduation.org/spec/0.1/decision.schema.json";

fn load(rel: &str) -> Value {
    let path = PathBuf::from(CONFORMANCE).join(rel);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn resource(v: Value) -> Resource {
    Resource::from_contents(v).expect("schema is a resource")
}

/// The OpenTrustGraph v0.1 record schema, with `format` asserted (warrant's own output must be
/// strictly valid).
fn record_validator() -> Validator {
    jsonschema::options()
        .should_validate_formats(true)
        .build(&load("opentrustgraph/schemas/trust-record.v0.1.schema.json"))
        .expect("record schema compiles")
}

/// The chain envelope schema with the v0.1 record schema registered under the referenced URI.
fn chain_validator() -> Validator {
    jsonschema::options()
        .should_validate_formats(true)
        .with_resource(RECORD_REF_URI, resource(load("opentrustgraph/schemas/trust-record.v0.1.schema.json")))
        .build(&load("opentrustgraph/schemas/trust-chain.v0.schema.json"))
        .expect("chain schema compiles with the record schema registered")
}

/// The portable v0.1 packet schema; its `$ref: decision.schema.json` resolves to the decision
/// schema's own `$id`, registered here because no retriever is compiled in. `format` is left as an
/// annotation (the 2020-12 default; `trust-graduation.md` §1).
fn portable_validator() -> Validator {
    jsonschema::options()
        .with_resource(DECISION_SCHEMA_ID, resource(load("trust-graduation/site/spec/0.1/decision.schema.json")))
        .build(&load("trust-graduation/site/spec/0.1/approval-packet.schema.json"))
        .expect("portable packet schema compiles")
}

/// The reference runtime's packet schema (`schemas/v1`), `format` as annotation.
fn runtime_validator(formats: bool) -> Validator {
    jsonschema::options()
        .should_validate_formats(formats)
        .build(&load("trust-graduation/schemas/v1/approval-packet.schema.json"))
        .expect("runtime packet schema compiles")
}

fn errors(v: &Validator, instance: &Value) -> String {
    v.iter_errors(instance).map(|e| format!("  {} at {:?}", e, e.instance_path.as_str())).collect::<Vec<_>>().join("\n")
}

fn assert_valid(v: &Validator, instance: &Value, what: &str) {
    assert!(v.is_valid(instance), "{what} fails its schema:\n{}", errors(v, instance));
}

fn bytes(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).expect("serialise")
}

fn js_reference_packets() -> Vec<(String, Value)> {
    let dir = Path::new(CONFORMANCE).join("trust-graduation/packets/js-reference");
    let mut out: Vec<(String, Value)> = std::fs::read_dir(&dir)
        .expect("js-reference dir")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".packet.json"))
        .map(|n| {
            let v = load(&format!("trust-graduation/packets/js-reference/{n}"));
            (n, v)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn portable_packet(id: &str) -> Value {
    json!({
        "type": "trust_graduation_approval_packet",
        "packet_id": id,
        "agent": "scribe",
        "action_class": "email.send.external",
        "proposed_action": {"to": "buyer@example.com", "subject": "Quote for 40 units", "body": "Hello,\nGrüße\t\"ok\""},
        "decision": {
            "status": "review_required",
            "action_class": "email.send.external",
            "reason": "External email needs the principal's approval.",
            "graduationPath": {
                "needed": 5, "current": 1, "next_best_action": "request_principal_approval",
                "safe_fallback_action_class": "draft.compose", "required_evidence": ["approved"]
            },
            "constraints": {
                "internal_only": false, "max_amount": 100, "rate_limit": {"count": 3, "window": "PT1H"},
                "recipient_allowlist": ["buyer@example.com"], "expires_at": "2026-12-01T00:00:00Z"
            },
            "observed": {"approvals": 1}
        },
        "external_actions": 0,
        "evidence": [{"label": "approved"}],
        "required_approval": true,
        "receipt_preview": {"outcome": "approve"},
        "created_at": "2026-11-21T08:59:00Z"
    })
}

// ---- records and envelopes warrant writes --------------------------------------------------------

/// Decides several packets (both forms, approve and refuse, with and without reasons) on a temp
/// spool and returns the chain's records and the pins.
fn decided_chain(dir: &Path) -> (Vec<Value>, PinnedKeys) {
    let spool = Spool::new(dir.join("spool"));
    let principal = Principal::from_seed("alice", &[42u8; 32]);
    let mut pinned = PinnedKeys::default();
    pinned.pin("alice", principal.verifying_key());
    let mut packets = vec![
        packet::parse_packet(&bytes(&portable_packet("p-approve")), "x").expect("portable"),
        packet::parse_packet(&bytes(&portable_packet("p-refuse")), "x").expect("portable"),
        packet::parse_packet(&bytes(&portable_packet("p-silent")), "x").expect("portable"),
    ];
    for (name, v) in js_reference_packets().into_iter().take(3) {
        packets.push(packet::parse_packet(&bytes(&v), &name).expect("js-reference packet"));
    }
    // The non-ASCII one.
    let (name, v) = js_reference_packets().pop().expect("some packets");
    packets.push(packet::parse_packet(&bytes(&v), &name).expect("js-reference packet"));
    for (i, p) in packets.iter().enumerate() {
        let (verdict, reason) = match i % 3 {
            0 => (Verdict::Approve, Some("fine — send it")),
            1 => (Verdict::Refuse, Some("wrong recipient")),
            _ => (Verdict::Approve, None),
        };
        let at = format!("2026-11-21T09:00:{:02}.{}Z", i, i * 7 % 10 + 1);
        spool::decide(&spool, &principal, &pinned, p, verdict, reason, &at)
            .unwrap_or_else(|e| panic!("decide {}: {e}", p.id));
    }
    let file = chain_file::read_chain(&spool.chain_path()).expect("read chain");
    assert!(file.parse_findings.is_empty(), "{:?}", file.parse_findings);
    assert_eq!(file.records.len(), packets.len());
    (file.records, pinned)
}

// Every record spool::decide appends validates against the OpenTrustGraph v0.1 record schema (formats asserted).
#[test]
fn decision_records_validate_against_the_v0_1_record_schema() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (records, pinned) = decided_chain(dir.path());
    let v = record_validator();
    for (i, rec) in records.iter().enumerate() {
        assert_valid(&v, rec, &format!("record {i}"));
        assert_eq!(rec["schema"], json!(chain::RECORD_SCHEMA));
    }
    // And the chain they form verifies, signatures included.
    let report = chain::verify_records(&records, VerifyOptions { pinned: Some(&pinned), strict_signatures: true });
    assert!(report.is_valid(), "{:?}", report.findings);
    assert_eq!(report.signatures_verified, records.len());
}

// The approval conditional of the record schema really bites on warrant's records: dropping the signature or approver fails it.
#[test]
fn record_schema_rejects_a_decision_record_without_approval_evidence() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (records, _) = decided_chain(dir.path());
    let v = record_validator();
    let approved = records.iter().find(|r| r["outcome"] == json!("success")).expect("an approval");
    let mut no_sigs = approved.clone();
    no_sigs["metadata"]["approval"]["signatures"] = json!([]);
    assert!(!v.is_valid(&no_sigs));
    let mut no_approver = approved.clone();
    no_approver["approver"] = Value::Null;
    assert!(!v.is_valid(&no_approver));
    let mut extra = approved.clone();
    extra["extra"] = json!(1);
    assert!(!v.is_valid(&extra));
}

// The export envelope of warrant's chain validates against the chain schema (record $ref mapped by hand), as does an empty export.
#[test]
fn export_envelope_validates_against_the_chain_schema() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (records, pinned) = decided_chain(dir.path());
    let v = chain_validator();
    let env = chain::export(
        records,
        VerifyOptions { pinned: Some(&pinned), strict_signatures: true },
        "2026-11-21T09:05:00Z",
    );
    assert_valid(&v, &env, "export envelope");
    assert_eq!(env["chain"]["verified"], json!(true));
    assert!(chain::verify_export(&env, VerifyOptions { pinned: Some(&pinned), strict_signatures: true }).is_valid());

    let empty = chain::export(Vec::new(), VerifyOptions::default(), "2026-11-21T09:05:00Z");
    assert_valid(&v, &empty, "empty export");
    assert_eq!(empty["chain"]["root_hash"], Value::Null);
    assert_eq!(empty["chain"]["total"], json!(0));

    // The schema is not vacuous: a broken envelope fails it.
    let mut bad = env.clone();
    bad["chain"]["root_hash"] = json!("sha256:XYZ");
    assert!(!v.is_valid(&bad));
}

// §10 item 2: without registering the record schema by hand, the chain schema's record $ref does not resolve.
#[test]
fn chain_schema_ref_does_not_resolve_by_id() {
    let chain = load("opentrustgraph/schemas/trust-chain.v0.schema.json");
    let record = load("opentrustgraph/schemas/trust-record.v0.1.schema.json");
    let record_id = record["$id"].as_str().expect("$id").to_owned();
    assert_ne!(record_id, RECORD_REF_URI);
    let by_own_id = jsonschema::options().with_resource(record_id, resource(record)).build(&chain);
    assert!(by_own_id.is_err(), "the $ref unexpectedly resolved by the record schema's own $id");
}

// With the mapping in place, the schemas alone give §7's results: all valid fixtures pass, only missing-approval fails.
#[test]
fn fixtures_against_the_schemas_match_section_7() {
    let v = chain_validator();
    for name in [
        "valid/decision-chain",
        "valid/tier-transition",
        "valid/effect-inheritance-chain",
        "invalid/tampered-chain",
        "invalid/actor-chain-parentage",
    ] {
        assert_valid(&v, &load(&format!("opentrustgraph/fixtures/{name}.json")), name);
    }
    assert!(!v.is_valid(&load("opentrustgraph/fixtures/invalid/missing-approval.json")));
}

// ---- packets --------------------------------------------------------------------------------------

// Every js-reference packet validates against schemas/v1/approval-packet.schema.json (formats asserted) and loads via parse_packet.
#[test]
fn js_reference_packets_load_and_validate() {
    let strict = runtime_validator(true);
    let packets = js_reference_packets();
    assert_eq!(packets.len(), 15, "16 requests, the payment has no packet");
    for (name, v) in &packets {
        assert_valid(&strict, v, name);
        let p =
            packet::parse_packet(&bytes(v), name.trim_end_matches(".json")).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(p.form, PacketForm::Runtime, "{name}");
        assert_eq!(Some(p.id.as_str()), v["packetId"].as_str(), "{name}");
        assert_eq!(Some(p.action_class.as_str()), v["actionClass"].as_str(), "{name}");
        assert_eq!(p.risk.as_deref(), v["riskClass"].as_str(), "{name}");
        assert_eq!(p.content_hash, warrant::protocol::canonical::canonical_hash(v), "{name}");
        assert_eq!(&p.raw, v, "{name}");
    }
}

/// How `parse_packet` relates to the schema for one mutated packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// Both accept or both reject (the outcome itself is asserted too).
    Agree(bool),
    /// The schema accepts, `parse_packet` deliberately rejects.
    Stricter,
}

type Mutation = (&'static str, fn(&mut Value), Expect);

/// Removes the member at `path` (object keys, or array indexes written as numbers).
fn remove(v: &mut Value, path: &[&str]) {
    let (last, parents) = path.split_last().expect("non-empty path");
    let pointer: String = parents.iter().map(|p| format!("/{p}")).collect();
    let parent = v.pointer_mut(&pointer).unwrap_or_else(|| panic!("no {pointer}"));
    parent.as_object_mut().expect("object").remove(*last).unwrap_or_else(|| panic!("no {last} in {pointer}"));
}

fn run_cross_check(base: &Value, validator: &Validator, cases: &[Mutation]) {
    assert!(validator.is_valid(base), "base fails its schema:\n{}", errors(validator, base));
    assert!(packet::parse_packet(&bytes(base), "base").is_ok(), "base must parse");
    let mut failures = Vec::new();
    for (name, mutate, expect) in cases {
        let mut v = base.clone();
        mutate(&mut v);
        let schema_ok = validator.is_valid(&v);
        let parsed = packet::parse_packet(&bytes(&v), "stem");
        let parse_ok = parsed.is_ok();
        let ok = match expect {
            Expect::Agree(want) => schema_ok == *want && parse_ok == *want,
            Expect::Stricter => schema_ok && !parse_ok,
        };
        if !ok {
            failures.push(format!(
                "{name}: expected {expect:?}, schema {} / parse_packet {}{}",
                if schema_ok { "accepts" } else { "rejects" },
                if parse_ok { "accepts" } else { "rejects" },
                parsed.err().map_or(String::new(), |e| format!(" ({e})")),
            ));
        }
    }
    assert!(failures.is_empty(), "parse_packet and the schema disagree:\n{}", failures.join("\n"));
}

use Expect::{Agree, Stricter};

// Portable v0.1 packets: parse_packet accepts exactly what site/spec/0.1/approval-packet.schema.json (+ decision.schema.json) accepts, modulo documented strictness.
#[test]
fn portable_packet_cross_check() {
    let cases: &[Mutation] = &[
        // Accepted variants.
        (
            "minimal",
            |v| {
                *v = json!({"type": "trust_graduation_approval_packet", "action_class": "a.b", "proposed_action": null,
                "decision": {"status": "blocked", "action_class": "a.b", "reason": ""}, "external_actions": 0});
            },
            Agree(true),
        ),
        ("proposed_action string", |v| v["proposed_action"] = json!("rm -rf build/"), Agree(true)),
        ("proposed_action array", |v| v["proposed_action"] = json!([1, 2]), Agree(true)),
        ("unknown top-level key", |v| v["x_vendor"] = json!({"a": 1}), Agree(true)),
        ("unknown decision key", |v| v["decision"]["x"] = json!(1), Agree(true)),
        ("pattern-valid unknown class", |v| v["action_class"] = json!("crm.record.delete"), Agree(true)),
        ("status allowed", |v| v["decision"]["status"] = json!("allowed"), Agree(true)),
        (
            "status allowed_with_constraints",
            |v| v["decision"]["status"] = json!("allowed_with_constraints"),
            Agree(true),
        ),
        ("status deferred", |v| v["decision"]["status"] = json!("deferred"), Agree(true)),
        ("status blocked", |v| v["decision"]["status"] = json!("blocked"), Agree(true)),
        ("status human_only", |v| v["decision"]["status"] = json!("human_only"), Agree(true)),
        ("no packet_id (file stem used)", |v| remove(v, &["packet_id"]), Agree(true)),
        (
            "no optional fields",
            |v| {
                for k in ["evidence", "required_approval", "receipt_preview", "created_at", "agent"] {
                    remove(v, &[k]);
                }
                for k in ["graduationPath", "constraints", "observed"] {
                    remove(v, &["decision", k]);
                }
            },
            Agree(true),
        ),
        // Missing required fields.
        ("missing type", |v| remove(v, &["type"]), Agree(false)),
        ("missing action_class", |v| remove(v, &["action_class"]), Agree(false)),
        ("missing proposed_action", |v| remove(v, &["proposed_action"]), Agree(false)),
        ("missing decision", |v| remove(v, &["decision"]), Agree(false)),
        ("missing external_actions", |v| remove(v, &["external_actions"]), Agree(false)),
        ("missing decision.status", |v| remove(v, &["decision", "status"]), Agree(false)),
        ("missing decision.action_class", |v| remove(v, &["decision", "action_class"]), Agree(false)),
        ("missing decision.reason", |v| remove(v, &["decision", "reason"]), Agree(false)),
        // Wrong constants and types.
        ("type is a receipt", |v| v["type"] = json!("trust_graduation_receipt"), Agree(false)),
        ("external_actions 1", |v| v["external_actions"] = json!(1), Agree(false)),
        ("external_actions -1", |v| v["external_actions"] = json!(-1), Agree(false)),
        ("external_actions \"0\"", |v| v["external_actions"] = json!("0"), Agree(false)),
        ("external_actions false", |v| v["external_actions"] = json!(false), Agree(false)),
        ("external_actions null", |v| v["external_actions"] = Value::Null, Agree(false)),
        ("external_actions 0.5", |v| v["external_actions"] = json!(0.5), Agree(false)),
        // JSON Schema counts 0.0 as the integer 0; parse_packet insists on an integer literal, the
        // prepare-only marker written as `0` (stricter, harmless: no producer writes 0.0).
        ("external_actions 0.0", |v| v["external_actions"] = json!(0.0), Stricter),
        ("action_class number", |v| v["action_class"] = json!(5), Agree(false)),
        ("decision string", |v| v["decision"] = json!("review_required"), Agree(false)),
        ("decision array", |v| v["decision"] = json!([]), Agree(false)),
        ("decision.reason number", |v| v["decision"]["reason"] = json!(5), Agree(false)),
        ("decision.status number", |v| v["decision"]["status"] = json!(3), Agree(false)),
        ("decision.graduationPath array", |v| v["decision"]["graduationPath"] = json!([]), Agree(false)),
        ("decision.constraints string", |v| v["decision"]["constraints"] = json!("none"), Agree(false)),
        ("decision.observed number", |v| v["decision"]["observed"] = json!(1), Agree(false)),
        ("evidence object", |v| v["evidence"] = json!({"a": 1}), Agree(false)),
        ("evidence string", |v| v["evidence"] = json!("none"), Agree(false)),
        ("required_approval string", |v| v["required_approval"] = json!("yes"), Agree(false)),
        ("receipt_preview array", |v| v["receipt_preview"] = json!([]), Agree(false)),
        // Bad class ids.
        ("class upper case", |v| v["action_class"] = json!("Email.send.external"), Agree(false)),
        ("class one segment", |v| v["action_class"] = json!("email"), Agree(false)),
        ("class empty segment", |v| v["action_class"] = json!("email..send"), Agree(false)),
        ("class underscore", |v| v["action_class"] = json!("email.send_external"), Agree(false)),
        ("class hyphen", |v| v["action_class"] = json!("email.send-external"), Agree(false)),
        ("class leading digit", |v| v["action_class"] = json!("1email.send"), Agree(false)),
        ("class trailing dot", |v| v["action_class"] = json!("email.send."), Agree(false)),
        ("class empty", |v| v["action_class"] = json!(""), Agree(false)),
        ("class with space", |v| v["action_class"] = json!("email.send external"), Agree(false)),
        ("class with newline", |v| v["action_class"] = json!("email.send\n"), Agree(false)),
        ("decision class bad", |v| v["decision"]["action_class"] = json!("Email"), Agree(false)),
        // Bad status.
        ("status unknown", |v| v["decision"]["status"] = json!("maybe"), Agree(false)),
        ("status upper case", |v| v["decision"]["status"] = json!("REVIEW_REQUIRED"), Agree(false)),
        ("status empty", |v| v["decision"]["status"] = json!(""), Agree(false)),
        // Deliberately stricter: the id becomes a file name, so it must be a safe id (and a string).
        ("unsafe packet_id", |v| v["packet_id"] = json!("../../etc/passwd"), Stricter),
        ("packet_id with slash", |v| v["packet_id"] = json!("a/b"), Stricter),
        ("packet_id number", |v| v["packet_id"] = json!(5), Stricter),
        // Deliberately stricter: created_at / expires_at are not in the schema, but warrant sorts and
        // expires packets by them, so when present they must be RFC 3339 date-times.
        ("created_at not a date-time", |v| v["created_at"] = json!("tuesday"), Stricter),
        ("expires_at not a date-time", |v| v["expires_at"] = json!("2026-13-01"), Stricter),
        // Deliberately stricter: other fields warrant displays or records must be strings when present.
        ("agent number", |v| v["agent"] = json!(7), Stricter),
        ("trace_id number", |v| v["trace_id"] = json!(7), Stricter),
    ];
    run_cross_check(&portable_packet("p-1"), &portable_validator(), cases);
}

// The decision schema's nested graduationPath and constraints members: parse_packet must refuse what the schema refuses.
#[test]
fn portable_packet_nested_decision_members_cross_check() {
    let cases: &[Mutation] = &[
        ("graduationPath.needed negative", |v| v["decision"]["graduationPath"]["needed"] = json!(-1), Agree(false)),
        ("graduationPath.current string", |v| v["decision"]["graduationPath"]["current"] = json!("1"), Agree(false)),
        (
            "graduationPath.next_best_action unknown",
            |v| v["decision"]["graduationPath"]["next_best_action"] = json!("fly"),
            Agree(false),
        ),
        (
            "graduationPath.safe_fallback bad class",
            |v| v["decision"]["graduationPath"]["safe_fallback_action_class"] = json!("Draft"),
            Agree(false),
        ),
        (
            "graduationPath.required_evidence numbers",
            |v| v["decision"]["graduationPath"]["required_evidence"] = json!([1]),
            Agree(false),
        ),
        ("constraints.max_amount negative", |v| v["decision"]["constraints"]["max_amount"] = json!(-5), Agree(false)),
        (
            "constraints.internal_only string",
            |v| v["decision"]["constraints"]["internal_only"] = json!("yes"),
            Agree(false),
        ),
        (
            "constraints.rate_limit count 0",
            |v| v["decision"]["constraints"]["rate_limit"]["count"] = json!(0),
            Agree(false),
        ),
        (
            "constraints.rate_limit no window",
            |v| remove(v, &["decision", "constraints", "rate_limit", "window"]),
            Agree(false),
        ),
        (
            "constraints.recipient_allowlist string",
            |v| v["decision"]["constraints"]["recipient_allowlist"] = json!("a@b.c"),
            Agree(false),
        ),
        ("graduationPath extra member", |v| v["decision"]["graduationPath"]["x"] = json!(1), Agree(true)),
        ("constraints extra member", |v| v["decision"]["constraints"]["x"] = json!(1), Agree(true)),
    ];
    run_cross_check(&portable_packet("p-1"), &portable_validator(), cases);
}

// Runtime (camelCase) packets: parse_packet accepts exactly what schemas/v1/approval-packet.schema.json accepts, modulo documented strictness.
#[test]
fn runtime_packet_cross_check() {
    let base = js_reference_packets().into_iter().next().expect("a js-reference packet").1;
    let cases: &[Mutation] = &[
        // Accepted variants.
        (
            "minimal",
            |v| {
                for k in [
                    "decisionId",
                    "workspace",
                    "scope",
                    "requestedBy",
                    "principal",
                    "externalSideEffects",
                    "receiptRequired",
                    "reason",
                    "requestedAction",
                    "constraints",
                    "actionBinding",
                    "evidence",
                    "createdAt",
                    "expiresAt",
                ] {
                    if let Some(m) = v.as_object_mut() {
                        m.remove(k);
                    }
                }
            },
            Agree(true),
        ),
        ("no decisions offered", |v| v["decisions"] = json!([]), Agree(true)),
        ("class without pattern", |v| v["actionClass"] = json!("Anything_Goes"), Agree(true)),
        ("risk low", |v| v["riskClass"] = json!("low"), Agree(true)),
        ("risk medium", |v| v["riskClass"] = json!("medium"), Agree(true)),
        ("risk critical", |v| v["riskClass"] = json!("critical"), Agree(true)),
        ("approvalRequired false", |v| v["approvalRequired"] = json!(false), Agree(true)),
        ("empty context", |v| v["context"] = json!({}), Agree(true)),
        ("valid expiresAt", |v| v["expiresAt"] = json!("2026-11-22T09:00:00Z"), Agree(true)),
        // Missing required fields.
        ("missing protocol", |v| remove(v, &["protocol"]), Agree(false)),
        ("missing version", |v| remove(v, &["version"]), Agree(false)),
        ("missing packetId", |v| remove(v, &["packetId"]), Agree(false)),
        ("missing actionClass", |v| remove(v, &["actionClass"]), Agree(false)),
        ("missing riskClass", |v| remove(v, &["riskClass"]), Agree(false)),
        ("missing approvalRequired", |v| remove(v, &["approvalRequired"]), Agree(false)),
        ("missing context", |v| remove(v, &["context"]), Agree(false)),
        ("missing decisions", |v| remove(v, &["decisions"]), Agree(false)),
        ("decision without label", |v| remove(v, &["decisions", "0", "label"]), Agree(false)),
        // Wrong constants and types.
        ("protocol other", |v| v["protocol"] = json!("trust-graduation-receipts"), Agree(false)),
        ("version number", |v| v["version"] = json!(1), Agree(false)),
        ("packetId number", |v| v["packetId"] = json!(5), Agree(false)),
        ("actionClass number", |v| v["actionClass"] = json!(5), Agree(false)),
        ("riskClass unknown", |v| v["riskClass"] = json!("severe"), Agree(false)),
        ("riskClass number", |v| v["riskClass"] = json!(3), Agree(false)),
        ("approvalRequired string", |v| v["approvalRequired"] = json!("true"), Agree(false)),
        ("context array", |v| v["context"] = json!([]), Agree(false)),
        ("context string", |v| v["context"] = json!("x"), Agree(false)),
        ("decisions object", |v| v["decisions"] = json!({}), Agree(false)),
        ("decisions of numbers", |v| v["decisions"] = json!([1]), Agree(false)),
        ("decision id number", |v| v["decisions"][0]["id"] = json!(5), Agree(false)),
        ("decision extra key", |v| v["decisions"][0]["x"] = json!("y"), Agree(false)),
        ("decisionId number", |v| v["decisionId"] = json!(5), Agree(false)),
        ("workspace number", |v| v["workspace"] = json!(5), Agree(false)),
        ("scope null", |v| v["scope"] = Value::Null, Agree(false)),
        ("requestedBy number", |v| v["requestedBy"] = json!(5), Agree(false)),
        ("principal object", |v| v["principal"] = json!({}), Agree(false)),
        ("externalSideEffects bool", |v| v["externalSideEffects"] = json!(true), Agree(false)),
        ("reason number", |v| v["reason"] = json!(5), Agree(false)),
        ("receiptRequired string", |v| v["receiptRequired"] = json!("yes"), Agree(false)),
        ("requestedAction array", |v| v["requestedAction"] = json!([]), Agree(false)),
        ("constraints string", |v| v["constraints"] = json!("none"), Agree(false)),
        ("actionBinding number", |v| v["actionBinding"] = json!(1), Agree(false)),
        ("evidence array", |v| v["evidence"] = json!([]), Agree(false)),
        ("createdAt number", |v| v["createdAt"] = json!(1_763_629_215), Agree(false)),
        // Extra keys (the runtime packet is additionalProperties: false).
        ("extra key", |v| v["extra"] = json!(1), Agree(false)),
        ("external_actions 1 (portable key in runtime form)", |v| v["external_actions"] = json!(1), Agree(false)),
        ("external_actions 0 (portable key in runtime form)", |v| v["external_actions"] = json!(0), Agree(false)),
        ("snake_case packet_id", |v| v["packet_id"] = json!("p-1"), Agree(false)),
        ("status key", |v| v["status"] = json!("review_required"), Agree(false)),
        // Deliberately stricter: the id becomes a file name.
        ("unsafe packetId", |v| v["packetId"] = json!("../../etc/passwd"), Stricter),
        ("empty packetId", |v| v["packetId"] = json!(""), Stricter),
        ("packetId with space", |v| v["packetId"] = json!("a b"), Stricter),
        // Deliberately stricter: `format: date-time` is an annotation in 2020-12 (not asserted here),
        // parse_packet asserts it.
        ("createdAt not a date-time", |v| v["createdAt"] = json!("tuesday"), Stricter),
        ("expiresAt not a date-time", |v| v["expiresAt"] = json!("2026-11-22"), Stricter),
    ];
    run_cross_check(&base, &runtime_validator(false), cases);
}

// With `format` asserted, the runtime schema and parse_packet agree on date-times (the "stricter" cases above are format-only), except leap seconds.
#[test]
fn runtime_date_times_agree_when_formats_are_asserted() {
    let base = js_reference_packets().into_iter().next().expect("a js-reference packet").1;
    let v = runtime_validator(true);
    let mut failures = Vec::new();
    for (value, ok) in [
        ("2026-11-20T09:00:15.000Z", true),
        ("2026-11-20T09:00:15Z", true),
        ("2026-11-20t09:00:15z", true),
        ("2026-11-20T10:00:15+01:00", true),
        ("2026-11-20T09:00:15-00:00", true),
        ("tuesday", false),
        ("2026-11-20", false),
        ("2026-11-20T09:00Z", false),
        ("2026-02-30T09:00:15Z", false),
        ("2026-11-20T24:00:00Z", false),
        ("2026-11-20T09:00:15+0100", false),
        // RFC 3339's date-time production (and JSON Schema's `date-time`) separates date and time
        // with `T` or `t` only; the time crate's parser accepts any byte there.
        ("2026-11-20 09:00:15Z", false),
        ("2026-11-20_09:00:15Z", false),
        ("2026-11-20x09:00:15Z", false),
    ] {
        let mut p = base.clone();
        p["createdAt"] = json!(value);
        let schema_ok = v.is_valid(&p);
        let parsed = packet::parse_packet(&bytes(&p), "stem");
        if schema_ok != ok || parsed.is_ok() != ok {
            failures.push(format!("{value:?}: expected {ok}, schema {schema_ok}, parse_packet {}", parsed.is_ok()));
        } else if !ok {
            assert!(matches!(parsed, Err(InvalidReason::Schema(ref m)) if m.contains("createdAt")), "{parsed:?}");
        }
    }
    assert!(failures.is_empty(), "date-time disagreements:\n{}", failures.join("\n"));
    // Deliberately stricter: the schema validator accepts any 23:59:60, warrant only real leap seconds
    // (a June or December month end, UTC).
    let mut p = base.clone();
    p["createdAt"] = json!("2026-11-20T23:59:60Z");
    assert!(v.is_valid(&p));
    assert!(packet::parse_packet(&bytes(&p), "stem").is_err());
}

// ---- the verifier's record-shape checks against the record schema ---------------------------------

/// Findings that correspond to what the v0.1 record schema checks (shape and the approval conditional).
fn shape_findings(rec: &Value) -> Vec<String> {
    chain::verify_records(std::slice::from_ref(rec), VerifyOptions::default())
        .findings
        .into_iter()
        .filter(|f| matches!(f.check, chain::Check::RecordSchema | chain::Check::Approval))
        .map(|f| f.to_string())
        .collect()
}

// verify_records' RecordSchema/Approval checks accept a foreign record exactly when the v0.1 record schema (formats asserted) does, modulo documented strictness.
#[test]
fn verifier_record_checks_match_the_record_schema() {
    let base = load("opentrustgraph/fixtures/valid/tier-transition.json")["records"][1].clone();
    let v = record_validator();
    assert_valid(&v, &base, "tier-transition record 1");
    assert!(shape_findings(&base).is_empty(), "{:?}", shape_findings(&base));
    let cases: &[Mutation] = &[
        ("offset timestamp", |r| r["timestamp"] = json!("2026-04-19T21:01:00+02:00"), Agree(true)),
        ("v0.1 discriminator", |r| r["schema"] = json!("opentrustgraph/v0.1"), Agree(true)),
        (
            "no approver key, approval not required",
            |r| {
                r["metadata"]["approval"]["required"] = json!(false);
                remove(r, &["approver"]);
            },
            Agree(true),
        ),
        (
            "denied without approver",
            |r| {
                r["outcome"] = json!("denied");
                r["approver"] = Value::Null;
            },
            Agree(true),
        ),
        ("integer cost", |r| r["cost_usd"] = json!(3), Agree(true)),
        ("unknown metadata key", |r| r["metadata"]["x_vendor"] = json!([1]), Agree(true)),
        ("unknown schema", |r| r["schema"] = json!("opentrustgraph/v1"), Agree(false)),
        ("empty record_id", |r| r["record_id"] = json!(""), Agree(false)),
        ("agent number", |r| r["agent"] = json!(1), Agree(false)),
        ("missing trace_id", |r| remove(r, &["trace_id"]), Agree(false)),
        ("approver empty", |r| r["approver"] = json!(""), Agree(false)),
        ("approver null under approval", |r| r["approver"] = Value::Null, Agree(false)),
        ("outcome unknown", |r| r["outcome"] = json!("ok"), Agree(false)),
        ("tier unknown", |r| r["autonomy_tier"] = json!("auto"), Agree(false)),
        ("timestamp garbage", |r| r["timestamp"] = json!("yesterday"), Agree(false)),
        ("timestamp space separator", |r| r["timestamp"] = json!("2026-04-19 19:01:00Z"), Agree(false)),
        ("cost negative", |r| r["cost_usd"] = json!(-0.5), Agree(false)),
        ("cost string", |r| r["cost_usd"] = json!("0.1"), Agree(false)),
        ("chain_index 0", |r| r["chain_index"] = json!(0), Agree(false)),
        ("chain_index fraction", |r| r["chain_index"] = json!(1.5), Agree(false)),
        ("missing previous_hash", |r| remove(r, &["previous_hash"]), Agree(false)),
        (
            "previous_hash upper case",
            |r| r["previous_hash"] = json!(format!("sha256:{}", "AB".repeat(32))),
            Agree(false),
        ),
        ("entry_hash short", |r| r["entry_hash"] = json!("sha256:abc"), Agree(false)),
        ("metadata array", |r| r["metadata"] = json!([]), Agree(false)),
        ("extra top-level key", |r| r["extra"] = json!(1), Agree(false)),
        ("quorum 0", |r| r["metadata"]["approval"]["quorum"] = json!(0), Agree(false)),
        ("quorum string", |r| r["metadata"]["approval"]["quorum"] = json!("1"), Agree(false)),
        ("no signatures", |r| r["metadata"]["approval"]["signatures"] = json!([]), Agree(false)),
        (
            "signature without reviewer",
            |r| remove(r, &["metadata", "approval", "signatures", "0", "reviewer"]),
            Agree(false),
        ),
        (
            "signed_at garbage",
            |r| r["metadata"]["approval"]["signatures"][0]["signed_at"] = json!("soon"),
            Agree(false),
        ),
        (
            "signed_at space separator",
            |r| r["metadata"]["approval"]["signatures"][0]["signed_at"] = json!("2026-04-19 19:00:59Z"),
            Agree(false),
        ),
        // Deliberately stricter (Harn's fixture validator, §5.3): identifiers must be non-empty after
        // trimming, and so must the approver when approval is required.
        ("blank record_id", |r| r["record_id"] = json!("   "), Stricter),
        ("blank approver under approval", |r| r["approver"] = json!(" "), Stricter),
    ];
    let mut failures = Vec::new();
    for (name, mutate, expect) in cases {
        let mut r = base.clone();
        mutate(&mut r);
        let schema_ok = v.is_valid(&r);
        let found = shape_findings(&r);
        let ok = match expect {
            Agree(want) => schema_ok == *want && found.is_empty() == *want,
            Stricter => schema_ok && !found.is_empty(),
        };
        if !ok {
            failures.push(format!("{name}: expected {expect:?}, schema {schema_ok}, verifier findings {found:?}"));
        }
    }
    assert!(failures.is_empty(), "verify_records and the record schema disagree:\n{}", failures.join("\n"));
}
