//! OpenTrustGraph conformance: the six fixtures, the §4.4 test vectors, and reproducing the valid
//! fixtures' hashes by appending the same logical records (CONFORMANCE §4, `opentrustgraph.md`
//! §4.4, §5, §6 items 20-21, §7). The fixtures are read in place from `tests/fixtures/conformance/`.

use serde_json::{Map, Value};
use std::path::PathBuf;
use warrant::protocol::canonical;
use warrant::protocol::chain::{self, Check, Finding, VerifyOptions, VerifyReport};
use warrant::store::chain_file;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/conformance/opentrustgraph/fixtures");
const VALID: [&str; 3] = ["decision-chain", "effect-inheritance-chain", "tier-transition"];

fn fixture(kind: &str, name: &str) -> Value {
    let path = PathBuf::from(FIXTURES).join(kind).join(format!("{name}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn records(envelope: &Value) -> &Vec<Value> {
    envelope["records"].as_array().expect("fixture has a records array")
}

fn record_map(v: &Value) -> &Map<String, Value> {
    v.as_object().expect("record is an object")
}

fn verify(envelope: &Value) -> VerifyReport {
    chain::verify_export(envelope, VerifyOptions::default())
}

fn show(findings: &[Finding]) -> String {
    findings.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n")
}

/// The canonical bytes a record's `entry_hash` is computed over: the record minus top-level
/// `entry_hash`.
fn preimage(rec: &Value) -> Vec<u8> {
    let mut m = record_map(rec).clone();
    m.remove("entry_hash");
    canonical::to_canonical_vec(&Value::Object(m))
}

// Every valid fixture verifies with no finding, and the report's total and root match the envelope.
#[test]
fn valid_fixtures_verify_clean() {
    for name in VALID {
        let env = fixture("valid", name);
        let report = verify(&env);
        assert!(report.is_valid(), "{name}:\n{}", show(&report.findings));
        assert_eq!(report.total, records(&env).len(), "{name}");
        assert_eq!(report.root_hash.as_deref(), env["chain"]["root_hash"].as_str(), "{name}");
        assert_eq!(env["chain"]["verified"], Value::Bool(true), "{name} declares verified");
    }
}

// The roots of the valid fixtures are the ones §7 names (guards against a stale fixture copy, §10 item 13).
#[test]
fn valid_fixture_roots_are_the_documented_ones() {
    for (name, head, tail) in [
        ("decision-chain", "sha256:6bb2b155", "5bf9"),
        ("tier-transition", "sha256:e1ca0fc2", "b57a"),
        ("effect-inheritance-chain", "sha256:39ff5a2c", "b6eb"),
    ] {
        let report = verify(&fixture("valid", name));
        let root = report.root_hash.expect("non-empty chain");
        assert!(root.starts_with(head) && root.ends_with(tail), "{name}: {root}");
    }
}

// Every recorded entry_hash in all six fixtures recomputes from its canonical preimage (§4.4: 14 records).
#[test]
fn every_fixture_record_hash_recomputes() {
    let mut n = 0;
    for (kind, names) in
        [("valid", VALID), ("invalid", ["tampered-chain", "missing-approval", "actor-chain-parentage"])]
    {
        for name in names {
            for rec in records(&fixture(kind, name)) {
                let computed = canonical::sha256_prefixed(&preimage(rec));
                assert_eq!(Some(computed.as_str()), rec["entry_hash"].as_str(), "{kind}/{name}");
                assert_eq!(
                    canonical::prefixed(&canonical::canonical_digest_without(record_map(rec), "entry_hash")),
                    computed
                );
                n += 1;
            }
        }
    }
    assert_eq!(n, 14);
}

// tampered-chain fails with exactly one previous_hash finding at record 1 and no entry_hash finding.
#[test]
fn tampered_chain_fails_on_linkage_only() {
    let report = verify(&fixture("invalid", "tampered-chain"));
    let f = &report.findings;
    assert!(!report.is_valid());
    let prev: Vec<&Finding> = f.iter().filter(|x| x.check == Check::PreviousHash).collect();
    assert_eq!(prev.len(), 1, "{}", show(f));
    assert_eq!(prev[0].index, Some(1));
    assert!(prev[0].message.contains("previous_hash mismatch"), "{}", prev[0]);
    assert!(!f.iter().any(|x| x.check == Check::EntryHash), "{}", show(f));
    // Nothing else is wrong with it: schema-valid, totals and root self-consistent.
    assert_eq!(f.len(), 1, "{}", show(f));
}

// missing-approval fails the approval-evidence rule for both the approver and the signatures.
#[test]
fn missing_approval_fails_the_approval_rule() {
    let report = verify(&fixture("invalid", "missing-approval"));
    let f = &report.findings;
    let approval: Vec<&str> =
        f.iter().filter(|x| x.check == Check::Approval && x.index == Some(0)).map(|x| x.message.as_str()).collect();
    for needle in ["approval required but approver is empty", "approval required but signatures are empty"] {
        assert!(approval.iter().any(|m| m.contains(needle)), "missing {needle:?} in\n{}", show(f));
    }
    assert!(!f.iter().any(|x| matches!(x.check, Check::EntryHash | Check::PreviousHash)), "{}", show(f));
}

// actor-chain-parentage fails the lineage check at record 1 only; hashes and linkage are fine.
#[test]
fn actor_chain_parentage_fails_lineage_at_index_1_only() {
    let report = verify(&fixture("invalid", "actor-chain-parentage"));
    let f = &report.findings;
    let lineage: Vec<&Finding> = f.iter().filter(|x| x.check == Check::Lineage).collect();
    assert!(!lineage.is_empty(), "{}", show(f));
    assert!(lineage.iter().all(|x| x.index == Some(1)), "{}", show(f));
    assert!(lineage.iter().any(|x| x.message.contains("actor_chain escaped parentage")), "{}", show(f));
    assert_eq!(f.len(), lineage.len(), "only lineage findings expected:\n{}", show(f));
}

// An invalid fixture that claims `verified: true` is also caught at the envelope (Harn §5.3 rule).
#[test]
fn invalid_fixture_claiming_verified_is_flagged() {
    for name in ["tampered-chain", "missing-approval", "actor-chain-parentage"] {
        let mut env = fixture("invalid", name);
        assert_eq!(env["chain"]["verified"], Value::Bool(false), "{name}");
        env["chain"]["verified"] = Value::Bool(true);
        let report = verify(&env);
        assert!(
            report.findings.iter().any(|x| x.index.is_none() && x.check == Check::Envelope),
            "{name}:\n{}",
            show(&report.findings)
        );
    }
}

// The envelope allows no extra keys (schema `additionalProperties: false`), at the top level or
// inside `chain`; the records alone would still verify.
#[test]
fn extra_envelope_fields_are_findings() {
    for (path, key) in [("", "extra"), ("chain", "comment")] {
        let mut env = fixture("valid", "decision-chain");
        let target = if path.is_empty() { &mut env } else { &mut env[path] };
        target.as_object_mut().expect("object").insert(key.into(), Value::from(1));
        let report = verify(&env);
        assert!(
            report.findings.iter().any(|x| x.index.is_none() && x.check == Check::Envelope && x.message.contains(key)),
            "{path}.{key}:\n{}",
            show(&report.findings)
        );
        assert!(report.findings.iter().all(|x| x.index.is_none()), "{}", show(&report.findings));
    }
}

// §4.4 test vector 1: decision-chain record 0's exact canonical bytes and hash.
#[test]
fn test_vector_1_decision_chain_record_0() {
    let env = fixture("valid", "decision-chain");
    let rec = &records(&env)[0];
    let expected = r#"{"action":"github.issue.opened","agent":"github-triage-bot","approver":null,"autonomy_tier":"suggest","chain_index":1,"cost_usd":null,"metadata":{"provider":"github"},"outcome":"success","previous_hash":null,"record_id":"01966f4c-0f31-7b5d-b44b-f7f8e7e1d384","schema":"opentrustgraph/v0","timestamp":"2026-04-19T18:42:11Z","trace_id":"trace_valid_01"}"#;
    assert_eq!(String::from_utf8(preimage(rec)).expect("utf-8"), expected);
    assert_eq!(
        canonical::sha256_prefixed(expected.as_bytes()),
        "sha256:84facae7d56fd304e040ea18d80bd019e274ad86ddd5a4d732f3ac3d984c48ec"
    );
    assert_eq!(
        canonical::prefixed(&canonical::canonical_digest_without(record_map(rec), "entry_hash")),
        "sha256:84facae7d56fd304e040ea18d80bd019e274ad86ddd5a4d732f3ac3d984c48ec"
    );
}

// §4.4 test vector 2: tier-transition record 1 is 670 canonical bytes, nested-sorted, hashing to 51af6fa6….
#[test]
fn test_vector_2_tier_transition_record_1() {
    let env = fixture("valid", "tier-transition");
    let bytes = preimage(&records(&env)[1]);
    assert_eq!(bytes.len(), 670);
    assert_eq!(
        canonical::sha256_prefixed(&bytes),
        "sha256:51af6fa6f2cc790749d6c892939a27e43d10ac191fa8d42ae611a5ade0d01813"
    );
    let text = String::from_utf8(bytes).expect("utf-8");
    assert!(
        text.starts_with(r#"{"action":"trust.promote","agent":"deploy-agent","approver":"ops-lead","autonomy_tier":"act_with_approval","chain_index":2,"cost_usd":null,"metadata":{"approval":{"quorum":1,"required":true,"signatures":[{"reviewer":"ops-lead","signature":"sha256:aaaa"#),
        "{text}"
    );
    assert!(
        text.contains(r#""signed_at":"2026-04-19T19:00:59Z"}]},"control":true,"from_tier":"shadow","to_tier":"act_with_approval"},"outcome":"success","previous_hash":"sha256:12fd5240"#),
        "{text}"
    );
    assert!(
        text.ends_with(r#","record_id":"01966f4c-1001-71da-9e75-e5b339a30002","schema":"opentrustgraph/v0","timestamp":"2026-04-19T19:01:00Z","trace_id":"trace_tier_02"}"#),
        "{text}"
    );
    // Record 2 carries a float cost (0.034): its hash is the root e1ca0fc2…b57a.
    let r2 = canonical::sha256_prefixed(&preimage(&records(&env)[2]));
    assert!(r2.starts_with("sha256:e1ca0fc2") && r2.ends_with("b57a"), "{r2}");
}

// Record 1 of effect-inheritance-chain and of actor-chain-parentage are identical and hash to 4995c13f…12f0 (§7).
#[test]
fn shared_first_record_of_the_v0_1_fixtures() {
    let a = fixture("valid", "effect-inheritance-chain");
    let b = fixture("invalid", "actor-chain-parentage");
    assert_eq!(records(&a)[0], records(&b)[0]);
    let h = canonical::sha256_prefixed(&preimage(&records(&a)[0]));
    assert!(h.starts_with("sha256:4995c13f") && h.ends_with("12f0"), "{h}");
}

// CONFORMANCE §4: appending the same logical records via chain_file::append reproduces every entry_hash and the root_hash.
#[test]
fn appending_the_valid_fixtures_reproduces_their_hashes() {
    for name in VALID {
        let env = fixture("valid", name);
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("chain.jsonl");
        let mut last = None;
        for (i, rec) in records(&env).iter().enumerate() {
            let mut body = record_map(rec).clone();
            for k in ["chain_index", "previous_hash", "entry_hash"] {
                body.remove(k);
            }
            let appended = chain_file::append(&path, |head| {
                assert_eq!(head.last_index, i as u64, "{name}: head index before record {i}");
                assert_eq!(head.last_hash.as_deref(), last.as_deref(), "{name}: head hash before record {i}");
                Ok(body)
            })
            .unwrap_or_else(|e| panic!("{name} record {i}: {e}"));
            assert_eq!(appended.chain_index, i as u64 + 1, "{name} record {i}");
            assert_eq!(Some(appended.entry_hash.as_str()), rec["entry_hash"].as_str(), "{name} record {i}");
            assert_eq!(&appended.record, rec, "{name} record {i}: the written record is the fixture record");
            last = Some(appended.entry_hash);
        }
        assert_eq!(last.as_deref(), env["chain"]["root_hash"].as_str(), "{name} root_hash");

        // The file reads back, verifies, and exports to an envelope that verifies with the same root.
        let file = chain_file::read_chain(&path).expect("read back");
        assert!(file.parse_findings.is_empty(), "{name}: {:?}", file.parse_findings);
        assert_eq!(&file.records, records(&env), "{name}");
        let report = file.verify(VerifyOptions::default());
        assert!(report.is_valid(), "{name}:\n{}", show(&report.findings));
        assert_eq!(report.root_hash.as_deref(), env["chain"]["root_hash"].as_str());
        let exported = chain::export(file.records.clone(), VerifyOptions::default(), "2026-11-21T09:00:00Z");
        assert_eq!(exported["chain"]["root_hash"], env["chain"]["root_hash"]);
        assert_eq!(exported["chain"]["verified"], Value::Bool(true));
        assert!(verify(&exported).is_valid(), "{name} re-export");
        // Each line on disk is the record's canonical JSON followed by a newline.
        let text = std::fs::read_to_string(&path).expect("read");
        let expected: String = records(&env).iter().map(|r| canonical::to_canonical_string(r) + "\n").collect();
        assert_eq!(text, expected, "{name}");
    }
}
