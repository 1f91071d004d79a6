//! Table tests for the Lodestar trust ladder (`crates/protocol/src/ladder.rs`, `lodestar-and-tiers.md` Part A)
//! and the workbench tool tiers × notebook trust (`crates/protocol/src/tiers.rs`, Part B).
//!
//! Every table is a `const` array, so the cases can be counted; each test runs one table through
//! the library API and, where there is one, through the `warrant eval` adapter too.

use serde_json::{Map, Value, json};
use warrant::protocol::ladder::{
    self, ActionContract, ActionPrecondition, DenialKind, LadderError, MatchSource, Policy, TrustLevel, Verdict,
};
use warrant::protocol::tiers::{self, NotebookTrust, TierAction, ToolTier, TrustChange};

fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("test JSON {text:?}: {e}"))
}

fn request(v: Value) -> Map<String, Value> {
    v.as_object().cloned().expect("request object")
}

// ---------------------------------------------------------------------------------------------
// Part B: tool tiers × notebook trust
// ---------------------------------------------------------------------------------------------

/// `(tool_tier, notebook_trust, action)`: the nine documented cells (§B2), then unknown inputs,
/// which all fail closed to `confirm` (§B4): unknown words, capitalisation, whitespace, empty
/// strings, and the stale vocabulary of §B5 (auto/gated/confirm used as trust levels).
const TIER_CASES: [(&str, &str, TierAction); 27] = [
    ("safe", "cautious", TierAction::Auto),
    ("safe", "trusted", TierAction::Auto),
    ("safe", "autonomous", TierAction::Auto),
    ("mutating", "cautious", TierAction::Confirm),
    ("mutating", "trusted", TierAction::Auto),
    ("mutating", "autonomous", TierAction::Auto),
    ("destructive", "cautious", TierAction::Confirm),
    ("destructive", "trusted", TierAction::Confirm),
    ("destructive", "autonomous", TierAction::Auto),
    ("admin", "autonomous", TierAction::Confirm),
    ("safe", "reckless", TierAction::Confirm),
    ("admin", "reckless", TierAction::Confirm),
    ("Safe", "autonomous", TierAction::Confirm),
    ("SAFE", "autonomous", TierAction::Confirm),
    ("Destructive", "autonomous", TierAction::Confirm),
    ("destructive", "Autonomous", TierAction::Confirm),
    ("mutating", "TRUSTED", TierAction::Confirm),
    ("", "autonomous", TierAction::Confirm),
    ("safe", "", TierAction::Confirm),
    ("", "", TierAction::Confirm),
    (" safe", "autonomous", TierAction::Confirm),
    ("safe ", "autonomous", TierAction::Confirm),
    ("safe", "autonomous\n", TierAction::Confirm),
    ("safe", "auto", TierAction::Confirm),
    ("destructive", "gated", TierAction::Confirm),
    ("mutating", "confirm", TierAction::Confirm),
    ("gated", "autonomous", TierAction::Confirm),
];

#[test]
fn tier_cases_through_the_matrix_and_eval() {
    for (tier, trust, expected) in TIER_CASES {
        assert_eq!(tiers::gate_action_str(tier, trust), expected, "{tier:?} × {trust:?}");
        let known = ToolTier::parse(tier).is_some() && NotebookTrust::parse(trust).is_some();
        let got = tiers::eval_tiers_gate(&request(json!({"tool_tier": tier, "notebook_trust": trust})))
            .unwrap_or_else(|e| panic!("{tier:?} × {trust:?}: {}", e.message));
        assert_eq!(got["action"], json!(expected.as_str()), "{tier:?} × {trust:?}");
        assert_eq!(got["fail_closed"], json!(!known), "{tier:?} × {trust:?}");
        assert_eq!((got["tool_tier"].as_str(), got["notebook_trust"].as_str()), (Some(tier), Some(trust)));
        assert!(got["reason"].as_str().is_some_and(|r| !r.is_empty()));
    }
}

#[test]
fn unknown_as_none_fails_closed_and_nothing_is_gated() {
    let tiers_or_none = ToolTier::ALL.map(Some).into_iter().chain([None]);
    for tier in tiers_or_none {
        for trust in NotebookTrust::ALL.map(Some).into_iter().chain([None]) {
            let action = tiers::gate_action(tier, trust);
            assert_ne!(action, TierAction::Gated, "{tier:?} × {trust:?}");
            if tier.is_none() || trust.is_none() {
                assert_eq!(action, TierAction::Confirm, "{tier:?} × {trust:?}");
            }
        }
    }
    let null = tiers::eval_tiers_gate(&request(json!({"tool_tier": null, "notebook_trust": null}))).expect("null");
    assert_eq!((null["action"].as_str(), null["fail_closed"].as_bool()), (Some("confirm"), Some(true)));
}

#[test]
fn tier_and_trust_orders_and_defaults() {
    assert!(ToolTier::Safe < ToolTier::Mutating && ToolTier::Mutating < ToolTier::Destructive);
    assert!(NotebookTrust::Cautious < NotebookTrust::Trusted && NotebookTrust::Trusted < NotebookTrust::Autonomous);
    assert_eq!(NotebookTrust::default(), NotebookTrust::Cautious);
    assert_eq!(serde_json::to_value(TierAction::Gated).ok(), Some(json!("gated")));
    assert_eq!(serde_json::from_value::<NotebookTrust>(json!("trusted")).ok(), Some(NotebookTrust::Trusted));
    assert!(serde_json::from_value::<NotebookTrust>(json!("Trusted")).is_err());
}

/// `(from, to, direction, typed confirmation required)`: all nine trust changes.
const TRUST_CHANGES: [(NotebookTrust, NotebookTrust, TrustChange, bool); 9] = [
    (NotebookTrust::Cautious, NotebookTrust::Cautious, TrustChange::Same, false),
    (NotebookTrust::Cautious, NotebookTrust::Trusted, TrustChange::Raise, false),
    (NotebookTrust::Cautious, NotebookTrust::Autonomous, TrustChange::Raise, true),
    (NotebookTrust::Trusted, NotebookTrust::Cautious, TrustChange::Lower, false),
    (NotebookTrust::Trusted, NotebookTrust::Trusted, TrustChange::Same, false),
    (NotebookTrust::Trusted, NotebookTrust::Autonomous, TrustChange::Raise, true),
    (NotebookTrust::Autonomous, NotebookTrust::Cautious, TrustChange::Lower, false),
    (NotebookTrust::Autonomous, NotebookTrust::Trusted, TrustChange::Lower, false),
    (NotebookTrust::Autonomous, NotebookTrust::Autonomous, TrustChange::Same, false),
];

#[test]
fn trust_changes_and_typed_confirmation() {
    for (from, to, change, typed) in TRUST_CHANGES {
        assert_eq!(NotebookTrust::change(from, to), change, "{from} → {to}");
        assert_eq!(NotebookTrust::requires_typed_confirmation(from, to), typed, "{from} → {to}");
    }
}

// ---------------------------------------------------------------------------------------------
// Part A: contracts
// ---------------------------------------------------------------------------------------------

const BASE_CONTRACT: &str = r#"{"required_level": 2, "blast_radius": "session", "reversibility": "reversible",
    "scope": {"level": "project", "identifier": "warrant"}, "data_sensitivity": "public",
    "preconditions": [{"check_id": "git.head_unchanged", "parameters": {"ref": "main"},
                       "expected_at_approval": "4f2a9c1", "must_revalidate_at_execution": true}]}"#;

/// Top-level contract keys to replace (`Some(json)`) or remove (`None`).
type Patch = &'static [(&'static str, Option<&'static str>)];

/// The base contract with top-level keys replaced (`Some(json)`) or removed (`None`).
fn contract_json(patch: &[(&str, Option<&str>)]) -> Value {
    let mut v = parse(BASE_CONTRACT);
    for (key, value) in patch {
        let map = v.as_object_mut().expect("object");
        match value {
            Some(text) => map.insert((*key).to_owned(), parse(text)),
            None => map.remove(*key),
        };
    }
    v
}

fn contract(level: u8) -> ActionContract {
    let level = level.to_string();
    ActionContract::from_json(&contract_json(&[("required_level", Some(&level))])).expect("contract")
}

/// `(key, replacement or None to remove, substring of the error)`: each must be refused with an
/// error naming the field.
const CONTRACT_ERRORS: [(&str, Option<&str>, &str); 27] = [
    ("required_level", None, "missing required field `contract.required_level`"),
    ("blast_radius", None, "missing required field `contract.blast_radius`"),
    ("reversibility", None, "missing required field `contract.reversibility`"),
    ("scope", None, "missing required field `contract.scope`"),
    ("data_sensitivity", None, "missing required field `contract.data_sensitivity`"),
    ("preconditions", None, "missing required field `contract.preconditions`"),
    ("required_level", Some("6"), "`contract.required_level`: expected an integer trust level 0..=5, got 6"),
    ("required_level", Some("-1"), "`contract.required_level`: expected an integer trust level 0..=5, got -1"),
    ("required_level", Some("2.5"), "`contract.required_level`: expected an integer trust level 0..=5, got 2.5"),
    ("required_level", Some(r#""3""#), "`contract.required_level`: expected an integer trust level"),
    ("required_level", Some("null"), "`contract.required_level`: expected an integer trust level"),
    ("blast_radius", Some(r#""galaxy""#), "`contract.blast_radius`: unknown variant `galaxy`"),
    ("blast_radius", Some(r#""Self""#), "`contract.blast_radius`: unknown variant `Self`"),
    ("reversibility", Some(r#""undoable""#), "`contract.reversibility`: unknown variant `undoable`"),
    ("data_sensitivity", Some(r#""internal""#), "`contract.data_sensitivity`: unknown variant `internal`"),
    ("scope", Some(r#"{"level": "planet", "identifier": "x"}"#), "`contract.scope`: unknown variant `planet`"),
    ("scope", Some(r#"{"level": "repo"}"#), "`contract.scope`: missing field `identifier`"),
    (
        "scope",
        Some(r#"{"level": "repo", "identifier": "x", "parent": "y"}"#),
        "`contract.scope`: unknown field `parent`",
    ),
    ("scope", Some(r#""repo:warrant""#), "`contract.scope`: invalid type"),
    ("preconditions", Some("{}"), "`contract.preconditions`: must be an array"),
    (
        "preconditions",
        Some(r#"[{"parameters": {}, "expected_at_approval": 1, "must_revalidate_at_execution": true}]"#),
        "`contract.preconditions[0]`: missing field `check_id`",
    ),
    (
        "preconditions",
        Some(r#"[{"check_id": "a", "expected_at_approval": 1, "must_revalidate_at_execution": true}]"#),
        "`contract.preconditions[0]`: missing field `parameters`",
    ),
    (
        "preconditions",
        Some(r#"[{"check_id": "a", "parameters": {}, "must_revalidate_at_execution": true}]"#),
        "`contract.preconditions[0]`: missing field `expected_at_approval`",
    ),
    (
        "preconditions",
        Some(r#"[{"check_id": "a", "parameters": {}, "expected_at_approval": 1}]"#),
        "`contract.preconditions[0]`: missing field `must_revalidate_at_execution`",
    ),
    (
        "preconditions",
        Some(
            r#"[{"check_id": "a", "parameters": {}, "expected_at_approval": 1, "must_revalidate_at_execution": "yes"}]"#,
        ),
        "`contract.preconditions[0]`: invalid type",
    ),
    (
        "preconditions",
        Some(
            r#"[{"check_id": "a", "parameters": {}, "expected_at_approval": 1, "must_revalidate_at_execution": true, "skip": true}]"#,
        ),
        "`contract.preconditions[0]`: unknown field `skip`",
    ),
    ("sandbox", Some(r#""none""#), "unknown field `contract.sandbox`"),
];

#[test]
fn contract_errors_name_the_field() {
    assert!(ActionContract::from_json(&parse(BASE_CONTRACT)).is_ok());
    for (key, value, expected) in CONTRACT_ERRORS {
        let v = contract_json(&[(key, value)]);
        let err = ActionContract::from_json(&v).expect_err(expected).to_string();
        assert!(err.contains(expected), "{key} = {value:?}: got {err:?}, want {expected:?}");
        let req = request(json!({"tool": "t", "contract": v}));
        let e = ladder::eval_ladder_gate(&req).expect_err("eval error");
        assert_eq!((e.code, e.message.as_str()), ("invalid_contract", err.as_str()));
    }
    let not_object = ActionContract::from_json(&json!([1])).expect_err("array");
    assert_eq!(not_object.to_string(), "`contract`: must be an object");
}

#[test]
fn trust_levels_are_integers_zero_to_five_with_names() {
    let names =
        ["observe only", "suggest only", "isolated artifact", "local reversible", "external / shared", "prohibited"];
    for (i, level) in TrustLevel::ALL.into_iter().enumerate() {
        assert_eq!((usize::from(level.get()), level.name()), (i, names[i]));
        assert_eq!(serde_json::to_value(level).ok(), Some(json!(i)));
        assert_eq!(serde_json::from_value::<TrustLevel>(json!(i)).ok(), Some(level));
        assert_eq!(level.to_string(), format!("L{i}"));
    }
    assert_eq!(TrustLevel::new(6), None);
    assert_eq!(TrustLevel::from_json(&json!(3.0)), Ok(TrustLevel::L3));
    for bad in [json!(6), json!(-1), json!(2.5), json!("3"), json!(null), json!(true), json!(1e300)] {
        assert!(serde_json::from_value::<TrustLevel>(bad.clone()).is_err(), "{bad}");
    }
}

// ---------------------------------------------------------------------------------------------
// Part A: the auto-approve ceiling
// ---------------------------------------------------------------------------------------------

/// `(required_level, auto_approve_up_to, verdict)`: every rung against every ceiling (§A4).
/// At or below the ceiling: allow (the rule); above it up to L3: deny (structural default);
/// L4: hold (floor); L5: deny (floor).
const CEILING_CASES: [(u8, i64, Verdict); 24] = [
    (0, 0, Verdict::Allow),
    (1, 0, Verdict::Deny),
    (2, 0, Verdict::Deny),
    (3, 0, Verdict::Deny),
    (4, 0, Verdict::Hold),
    (5, 0, Verdict::Deny),
    (0, 1, Verdict::Allow),
    (1, 1, Verdict::Allow),
    (2, 1, Verdict::Deny),
    (3, 1, Verdict::Deny),
    (4, 1, Verdict::Hold),
    (5, 1, Verdict::Deny),
    (0, 2, Verdict::Allow),
    (1, 2, Verdict::Allow),
    (2, 2, Verdict::Allow),
    (3, 2, Verdict::Deny),
    (4, 2, Verdict::Hold),
    (5, 2, Verdict::Deny),
    (0, 3, Verdict::Allow),
    (1, 3, Verdict::Allow),
    (2, 3, Verdict::Allow),
    (3, 3, Verdict::Allow),
    (4, 3, Verdict::Hold),
    (5, 3, Verdict::Deny),
];

#[test]
fn every_rung_against_every_ceiling() {
    for (level, ceiling, expected) in CEILING_CASES {
        let policy = ladder::auto_approve_policy(ceiling, "operator").expect("ceiling");
        let d = ladder::gate(&policy, "any.tool", &contract(level));
        assert_eq!(d.verdict, expected, "L{level} under ceiling {ceiling}");
        assert_eq!(d.decider_id, "operator");
        let (source, index) = match (level, expected) {
            (4 | 5, _) => (MatchSource::Floor, None),
            (_, Verdict::Allow) => (MatchSource::Rule, Some(0)),
            _ => (MatchSource::Default, None),
        };
        assert_eq!((d.matched.source, d.matched.rule_index), (source, index), "L{level} under ceiling {ceiling}");
        if expected == Verdict::Allow {
            assert_eq!(d.reason, format!("auto-approved at or below L{ceiling} (ceiling)"));
        }
        let req = json!({"tool": "any.tool", "contract": contract_json(&[("required_level", Some(&level.to_string()))]),
                         "auto_approve_up_to": ceiling});
        let got = ladder::eval_ladder_gate(&request(req)).expect("eval");
        assert_eq!(got["verdict"], json!(expected), "eval L{level} under ceiling {ceiling}");
    }
}

/// Ceilings that must be refused: outside [0,3], not integers, not numbers.
const BAD_CEILINGS: [&str; 10] = ["-1", "4", "2.5", "3.5", "-0.5", "1e300", r#""2""#, "null", "true", "[2]"];

#[test]
fn out_of_range_ceilings_are_refused() {
    for text in BAD_CEILINGS {
        let req = json!({"tool": "t", "contract": parse(BASE_CONTRACT), "auto_approve_up_to": parse(text)});
        let e = ladder::eval_ladder_gate(&request(req)).expect_err(text);
        assert_eq!(e.code, "invalid_request", "{text}");
        assert!(e.message.contains("auto_approve_up_to must be an integer in [0,3]"), "{text}: {}", e.message);
    }
    for n in [-1, 4, 5, i64::MIN, i64::MAX] {
        assert_eq!(ladder::auto_approve_policy(n, "x"), Err(LadderError::Ceiling { got: n.to_string() }));
    }
    // An integral float is an integer (JavaScript agrees); the default is 2.
    let req = json!({"tool": "t", "contract": parse(BASE_CONTRACT), "auto_approve_up_to": 2.0});
    assert_eq!(ladder::eval_ladder_gate(&request(req)).expect("2.0")["verdict"], "allow");
    let dflt = ladder::eval_ladder_gate(&request(
        json!({"tool": "t", "contract": contract_json(&[("required_level", Some("3"))])}),
    ));
    assert_eq!(dflt.expect("default")["decider_id"], "policy:auto-approve@ceiling-L2");
    let both = json!({"tool": "t", "contract": parse(BASE_CONTRACT), "auto_approve_up_to": 2,
                      "policy": {"id": "p", "version": "1", "rules": []}});
    assert_eq!(ladder::eval_ladder_gate(&request(both)).map_err(|e| e.code), Err("invalid_request"));
}

#[test]
fn policy_hash_vector() {
    let preset = ladder::auto_approve_policy(3, "operator").expect("ceiling 3");
    let expected = "f4d59ac6298f0321e9a3c00555c1a7d88d5dfa8187ef910b48969275c2327637";
    assert_eq!(ladder::policy_hash(&preset), expected);
    let doc = parse(
        r#"{"id": "auto-approve", "version": "ceiling-L3", "rules": [{"match": {"required_level_lte": 3},
            "effect": "allow", "reason": "auto-approved at or below L3 (ceiling)"}]}"#,
    );
    let parsed = Policy::from_json(&doc).expect("preset document");
    assert_eq!(ladder::policy_hash(&parsed), expected);
    assert_eq!(serde_json::to_value(&preset).ok(), Some(doc));
    assert_ne!(ladder::policy_hash(&ladder::auto_approve_policy(2, "operator").expect("ceiling 2")), expected);
}

// ---------------------------------------------------------------------------------------------
// Part A: rule matching
// ---------------------------------------------------------------------------------------------

/// `(match, tool, contract patch, matches)`. The base contract is L2, session, reversible,
/// project:warrant, public. Each case is one rule `{match, effect: allow}`: a match allows, no
/// match falls through to the structural deny.
const MATCH_CASES: [(&str, &str, Patch, bool); 40] = [
    ("{}", "anything", &[], true),
    (r#"{"tool": "git.push"}"#, "git.push", &[], true),
    (r#"{"tool": "git.push"}"#, "Git.push", &[], false),
    (r#"{"tool": "git.push"}"#, "gitxpush", &[], false),
    (r#"{"tool": "git.push"}"#, "git.push2", &[], false),
    (r#"{"tool": "git.*"}"#, "git.push", &[], true),
    (r#"{"tool": "git.*"}"#, "git.remote.add", &[], true),
    (r#"{"tool": "git.*"}"#, "git.", &[], true),
    (r#"{"tool": "git.*"}"#, "git", &[], false),
    (r#"{"tool": "git.*"}"#, "gitx.push", &[], false),
    (r#"{"tool": "git.*"}"#, "xgit.push", &[], false),
    (r#"{"tool": "*"}"#, "git.push", &[], true),
    (r#"{"tool": "*"}"#, "", &[], true),
    (r#"{"tool": "*.push"}"#, "git.push", &[], true),
    (r#"{"tool": "*.push"}"#, "mcp.github.push", &[], true),
    (r#"{"tool": "*.push"}"#, "push", &[], false),
    (r#"{"tool": "*.push"}"#, "git.pushx", &[], false),
    (r#"{"tool": "a*b*c"}"#, "abc", &[], true),
    (r#"{"tool": "a*b*c"}"#, "a.x.b.y.c", &[], true),
    (r#"{"tool": "a*b*c"}"#, "acb", &[], false),
    (r#"{"tool": "git.pu?h"}"#, "git.push", &[], false),
    (r#"{"tool": "git.pu[s]h"}"#, "git.push", &[], false),
    (r#"{"tool": "git.pu[s]h"}"#, "git.pu[s]h", &[], true),
    (r#"{"max_blast_radius": "project"}"#, "t", &[], true),
    (r#"{"max_blast_radius": "session"}"#, "t", &[], true),
    (r#"{"max_blast_radius": "self"}"#, "t", &[], false),
    (r#"{"max_blast_radius": "project"}"#, "t", &[("blast_radius", Some(r#""external""#))], false),
    (r#"{"reversibility": ["reversible", "compensable"]}"#, "t", &[], true),
    (r#"{"reversibility": ["compensable"]}"#, "t", &[], false),
    (r#"{"reversibility": []}"#, "t", &[], false),
    (r#"{"scope": {"level": "project", "identifier": "warrant"}}"#, "t", &[], true),
    (r#"{"scope": {"level": "project", "identifier": "other"}}"#, "t", &[], false),
    (r#"{"scope": {"level": "repo", "identifier": "warrant"}}"#, "t", &[], false),
    (r#"{"data_sensitivity": "public"}"#, "t", &[], true),
    (r#"{"data_sensitivity": "private"}"#, "t", &[], false),
    (r#"{"required_level_lte": 2}"#, "t", &[], true),
    (r#"{"required_level_lte": 1}"#, "t", &[], false),
    (r#"{"tool": "git.*", "data_sensitivity": "public", "required_level_lte": 3}"#, "git.commit", &[], true),
    (r#"{"tool": "git.*", "data_sensitivity": "secret"}"#, "git.commit", &[], false),
    (r#"{"tool": "fs.*", "required_level_lte": 3}"#, "git.commit", &[], false),
];

#[test]
fn each_match_field_and_glob() {
    for (m, tool, patch, matches) in MATCH_CASES {
        let doc = json!({"id": "p", "version": "1", "rules": [{"match": parse(m), "effect": "allow", "reason": "ok"}]});
        let policy = Policy::from_json(&doc).expect(m);
        let contract = ActionContract::from_json(&contract_json(patch)).expect("contract");
        assert_eq!(policy.rules[0].when.matches(tool, &contract), matches, "{m} on {tool:?} {patch:?}");
        let d = ladder::gate(&policy, tool, &contract);
        let expected = if matches { Verdict::Allow } else { Verdict::Deny };
        assert_eq!(d.verdict, expected, "{m} on {tool:?} {patch:?}");
        if !matches {
            assert_eq!(d.matched.source, MatchSource::Default);
            assert_eq!(d.reason, format!("no policy rule matched tool {tool:?} at L2: structural deny default"));
        }
    }
}

/// `(rules, tool, level, verdict, source, rule_index, reason)`: first match in document order,
/// and the L4 and L5 floors against every effect (§A4 evaluation order).
#[allow(clippy::type_complexity)]
const GATE_CASES: [(&str, &str, u8, Verdict, MatchSource, Option<usize>, &str); 16] = [
    (FIRST_DENY, "git.push", 3, Verdict::Deny, MatchSource::Rule, Some(0), "no pushes"),
    (FIRST_DENY, "git.commit", 3, Verdict::Allow, MatchSource::Rule, Some(1), "git is fine"),
    (FIRST_ALLOW, "git.push", 3, Verdict::Allow, MatchSource::Rule, Some(0), "git is fine"),
    (FIRST_ALLOW, "git.push", 2, Verdict::Allow, MatchSource::Rule, Some(0), "git is fine"),
    (REVIEW, "deploy.prod", 3, Verdict::Hold, MatchSource::Rule, Some(0), "deploys need review"),
    (ALLOW_ALL, "net.fetch", 4, Verdict::Hold, MatchSource::Floor, Some(0), ladder::REASON_ALLOW_CANNOT_LIFT),
    (DENY_ALL, "net.fetch", 4, Verdict::Deny, MatchSource::Rule, Some(0), "nothing today"),
    (REVIEW, "deploy.prod", 4, Verdict::Hold, MatchSource::Rule, Some(0), "deploys need review"),
    ("[]", "git.push", 4, Verdict::Hold, MatchSource::Floor, None, ladder::REASON_L4_FLOOR),
    (LTE_3, "git.push", 4, Verdict::Hold, MatchSource::Floor, None, ladder::REASON_L4_FLOOR),
    (FIRST_ALLOW, "git.push", 4, Verdict::Hold, MatchSource::Floor, Some(0), ladder::REASON_ALLOW_CANNOT_LIFT),
    (SKIP_THEN_DENY, "git.push", 4, Verdict::Deny, MatchSource::Rule, Some(1), "nothing today"),
    (ALLOW_ALL, "fs.read", 5, Verdict::Deny, MatchSource::Floor, None, ladder::REASON_L5_FLOOR),
    ("[]", "fs.read", 5, Verdict::Deny, MatchSource::Floor, None, ladder::REASON_L5_FLOOR),
    (
        "[]",
        "fs.read",
        0,
        Verdict::Deny,
        MatchSource::Default,
        None,
        "no policy rule matched tool \"fs.read\" at L0: structural deny default",
    ),
    (ALLOW_ALL, "fs.read", 0, Verdict::Allow, MatchSource::Rule, Some(0), "anything goes"),
];

const FIRST_DENY: &str = r#"[{"match": {"tool": "git.push"}, "effect": "deny", "reason": "no pushes"},
                             {"match": {"tool": "git.*"}, "effect": "allow", "reason": "git is fine"}]"#;
const FIRST_ALLOW: &str = r#"[{"match": {"tool": "git.*"}, "effect": "allow", "reason": "git is fine"},
                              {"match": {"tool": "git.push"}, "effect": "deny", "reason": "no pushes"}]"#;
const REVIEW: &str =
    r#"[{"match": {"tool": "deploy.*"}, "effect": "require_approval", "reason": "deploys need review"}]"#;
const ALLOW_ALL: &str = r#"[{"match": {}, "effect": "allow", "reason": "anything goes"}]"#;
const DENY_ALL: &str = r#"[{"match": {}, "effect": "deny", "reason": "nothing today"}]"#;
const LTE_3: &str = r#"[{"match": {"required_level_lte": 3}, "effect": "allow", "reason": "up to L3"}]"#;
const SKIP_THEN_DENY: &str = r#"[{"match": {"tool": "fs.*"}, "effect": "allow", "reason": "files"},
                                 {"match": {}, "effect": "deny", "reason": "nothing today"}]"#;

#[test]
fn evaluation_order_first_match_and_floors() {
    for (rules, tool, level, verdict, source, index, reason) in GATE_CASES {
        let doc = json!({"id": "p", "version": "1", "rules": parse(rules)});
        let policy = Policy::from_json(&doc).expect("policy");
        let d = ladder::gate(&policy, tool, &contract(level));
        let case = format!("{tool} at L{level} under {rules}");
        assert_eq!((d.verdict, d.matched.source, d.matched.rule_index), (verdict, source, index), "{case}");
        assert_eq!(d.reason, reason, "{case}");
        assert_eq!(d.decider_id, "policy:p@1");
        assert_eq!(d.required_authority.is_some(), verdict == Verdict::Hold, "{case}");
        let req = json!({"tool": tool, "contract": contract_json(&[("required_level", Some(&level.to_string()))]),
                         "policy": doc});
        let got = ladder::eval_ladder_gate(&request(req)).expect("eval");
        assert_eq!(got["verdict"], json!(verdict), "{case}");
        assert_eq!(got["policy_hash"], json!(ladder::policy_hash(&policy)));
    }
}

#[test]
fn holds_carry_the_rules_authority_or_empty() {
    let doc = parse(
        r#"{"id": "p", "version": "1", "rules": [{"match": {"tool": "git.push"}, "effect": "require_approval",
            "approval": {"required_authority": {"min_trust_baseline": 0.8, "sensitivity_clearance": "internal",
                                                "scope": {"level": "repo", "identifier": "prod"}}},
            "reason": "pushes need a maintainer"}]}"#,
    );
    let policy = Policy::from_json(&doc).expect("policy");
    let d = ladder::gate(&policy, "git.push", &contract(4)).to_json();
    assert_eq!(d["verdict"], "hold");
    assert_eq!(
        d["required_authority"],
        json!({"min_trust_baseline": 0.8, "sensitivity_clearance": "internal", "scope": {"level": "repo", "identifier": "prod"}})
    );
    assert_eq!(d["matched"], json!({"source": "rule", "rule_index": 0}));
    let floor = ladder::gate(&policy, "net.fetch", &contract(4)).to_json();
    assert_eq!(
        (floor["required_authority"].clone(), floor["matched"].clone()),
        (json!({}), json!({"source": "floor"}))
    );
    let deny = ladder::gate(&policy, "net.fetch", &contract(1)).to_json();
    assert!(deny.get("required_authority").is_none() && deny["matched"].get("rule_index").is_none());
    assert_eq!(Verdict::Hold.denial_kind(), Some(DenialKind::ApprovalRequired));
    assert_eq!(Verdict::Deny.denial_kind(), Some(DenialKind::PolicyDenied));
    assert_eq!(Verdict::Allow.denial_kind(), None);
}

/// `(policy, substring of the error)`: policy documents that must be refused.
const POLICY_ERRORS: [(&str, &str); 12] = [
    (
        r#"{"id": "p", "version": "1", "rules": [{"match": {}, "effect": "allow", "approval": {}, "reason": "r"}]}"#,
        "`policy.rules[0].approval`: only allowed on require_approval rules",
    ),
    (
        r#"{"id": "p", "version": "1", "rules": [{"match": {}, "effect": "deny", "approval": {}, "reason": "r"}]}"#,
        "`policy.rules[0].approval`: only allowed on require_approval rules",
    ),
    (
        r#"{"id": "p", "version": "1", "rules": [{"match": {}, "effect": "permit", "reason": "r"}]}"#,
        "`policy.rules[0].effect`: unknown variant `permit`",
    ),
    (
        r#"{"id": "p", "version": "1", "rules": [{"match": {"tools": "x"}, "effect": "deny", "reason": "r"}]}"#,
        "unknown field `policy.rules[0].match.tools`",
    ),
    (
        r#"{"id": "p", "version": "1", "rules": [{"match": {}, "effect": "deny"}]}"#,
        "missing required field `policy.rules[0].reason`",
    ),
    (
        r#"{"id": "p", "version": "1", "rules": [{"effect": "deny", "reason": "r"}]}"#,
        "missing required field `policy.rules[0].match`",
    ),
    (r#"{"id": "p", "version": "1", "rules": {}}"#, "`policy.rules`: must be an array"),
    (r#"{"version": "1", "rules": []}"#, "missing required field `policy.id`"),
    (r#"{"id": "p", "version": "1", "rules": [], "signed_by": "x"}"#, "unknown field `policy.signed_by`"),
    (
        r#"{"id": "p", "version": "1", "rules": [{"match": {"required_level_lte": 6}, "effect": "deny", "reason": "r"}]}"#,
        "`policy.rules[0].match.required_level_lte`: expected an integer trust level 0..=5, got 6",
    ),
    (
        r#"{"id": "p", "version": "1", "rules": [{"match": {"reversibility": ["never"]}, "effect": "deny", "reason": "r"}]}"#,
        "`policy.rules[0].match.reversibility`: unknown variant `never`",
    ),
    (
        r#"{"id": "p", "version": "1", "rules": [{"match": {}, "effect": "require_approval", "approval": {"required_authority": {"min_trust_baseline": 1.5}}, "reason": "r"}]}"#,
        "`policy.rules[0].approval.required_authority.min_trust_baseline`: expected a number in [0,1], got 1.5",
    ),
];

#[test]
fn policy_errors_name_the_field() {
    for (doc, expected) in POLICY_ERRORS {
        let err = Policy::from_json(&parse(doc)).expect_err(expected).to_string();
        assert!(err.contains(expected), "got {err:?}, want {expected:?}");
        let req = json!({"tool": "t", "contract": parse(BASE_CONTRACT), "policy": parse(doc)});
        assert_eq!(ladder::eval_ladder_gate(&request(req)).map_err(|e| e.code), Err("invalid_policy"));
    }
}

// ---------------------------------------------------------------------------------------------
// Part A: tool floors, preconditions, two-phase execution
// ---------------------------------------------------------------------------------------------

/// `(contract level, registered floor or None for an unregistered tool, accepted)`.
const TOOL_FLOOR_CASES: [(u8, Option<u8>, bool); 8] = [
    (1, Some(3), false),
    (2, Some(3), false),
    (3, Some(3), true),
    (4, Some(3), true),
    (0, Some(0), true),
    (4, Some(5), false),
    (2, None, false),
    (3, None, true),
];

#[test]
fn tool_floor_refuses_contracts_below_it() {
    let policy = ladder::auto_approve_policy(3, "operator").expect("ceiling");
    assert_eq!(ladder::CONSERVATIVE_TOOL_DEFAULTS.required_trust_level, TrustLevel::L3);
    for (level, floor, accepted) in TOOL_FLOOR_CASES {
        let floor = floor.map(|f| TrustLevel::new(f).expect("floor"));
        let c = contract(level);
        assert_eq!(ladder::check_tool_floor(&c, floor).is_ok(), accepted, "L{level} floor {floor:?}");
        let d = ladder::gate_with_tool_floor(&policy, "git.commit", &c, floor);
        if accepted {
            assert_eq!(d, ladder::gate(&policy, "git.commit", &c));
        } else {
            let want = floor.unwrap_or(TrustLevel::L3);
            assert_eq!((d.verdict, d.matched.source), (Verdict::Deny, MatchSource::Floor), "L{level}");
            assert_eq!(d.reason, format!("contract required_level L{level} is below the tool's floor {want}"));
        }
        if let Some(f) = floor {
            let req = json!({"tool": "git.commit", "auto_approve_up_to": 3, "required_trust_level": f.get(),
                             "contract": contract_json(&[("required_level", Some(&level.to_string()))])});
            let got = ladder::eval_ladder_gate(&request(req)).expect("eval");
            assert_eq!(got["verdict"], json!(d.verdict));
        }
    }
    let req = json!({"tool": "t", "contract": parse(BASE_CONTRACT), "required_trust_level": 6});
    assert_eq!(ladder::eval_ladder_gate(&request(req)).map_err(|e| e.code), Err("invalid_request"));
}

fn precondition(check_id: &str, expected: Value, revalidate: bool) -> ActionPrecondition {
    ActionPrecondition {
        check_id: check_id.to_owned(),
        parameters: json!({}),
        expected_at_approval: expected,
        must_revalidate_at_execution: revalidate,
    }
}

#[test]
fn tool_preconditions_come_first_and_stay() {
    let tool = [precondition("git.head_unchanged", json!("a"), true)];
    let caller = [precondition("git.head_unchanged", json!("b"), false), precondition("fs.clean", json!(true), true)];
    let merged = ladder::merge_preconditions(&tool, &caller);
    let ids: Vec<(&str, &Value)> = merged.iter().map(|p| (p.check_id.as_str(), &p.expected_at_approval)).collect();
    assert_eq!(
        ids,
        [("git.head_unchanged", &json!("a")), ("git.head_unchanged", &json!("b")), ("fs.clean", &json!(true))]
    );
}

/// `(expected_at_approval, observed now or None for a checker error, must_revalidate, ok)`.
const PRECONDITION_CASES: [(&str, Option<&str>, bool, bool); 14] = [
    (r#""4f2a9c1""#, Some(r#""4f2a9c1""#), true, true),
    (r#""4f2a9c1""#, Some(r#""9b03e77""#), true, false),
    (r#""4f2a9c1""#, None, true, false),
    (r#""4f2a9c1""#, Some(r#""9b03e77""#), false, true),
    (r#""4f2a9c1""#, None, false, true),
    ("1", Some("1"), true, true),
    ("1", Some("1.0"), true, false),
    (r#""1""#, Some("1"), true, false),
    (r#"{"a": 1, "b": [2]}"#, Some(r#"{"b": [2], "a": 1}"#), true, true),
    ("[1, 2]", Some("[2, 1]"), true, false),
    ("null", Some("null"), true, true),
    ("null", Some("false"), true, false),
    (r#"{"a": 1}"#, Some(r#"{"a": 1, "b": null}"#), true, false),
    ("true", Some("true"), true, true),
];

#[test]
fn precondition_drift_fails_closed() {
    for (expected, observed, must, ok) in PRECONDITION_CASES {
        let p = [precondition("git.head_unchanged", parse(expected), must)];
        let mut calls = 0;
        let r = ladder::revalidate(&p, |_| {
            calls += 1;
            observed.map(parse).ok_or_else(|| "git not available".to_owned())
        });
        let case = format!("{expected} vs {observed:?} (must_revalidate {must})");
        assert_eq!(r.ok, ok, "{case}");
        assert_eq!((calls, r.checks.len()), if must { (1, 1) } else { (0, 0) }, "{case}");
        assert_eq!(r.failure.is_some(), !ok, "{case}");
        if let Some(f) = &r.failure {
            assert_eq!(
                (f.kind, f.check_id.as_str(), &f.expected),
                (DenialKind::PreconditionFailed, "git.head_unchanged", &parse(expected))
            );
            assert_eq!(f.observed, observed.map(parse), "{case}");
            assert!(
                f.detail.contains("\"git.head_unchanged\"") && f.detail.contains(&parse(expected).to_string()),
                "{}",
                f.detail
            );
            match observed {
                Some(o) => assert!(f.detail.contains(&format!("observed {}", parse(o))), "{}", f.detail),
                None => assert!(f.detail.contains("checker error: git not available"), "{}", f.detail),
            }
        }
        // The same case through `ladder.revalidate`: a checker error is a missing observation.
        let mut observed_map = Map::new();
        if let Some(o) = observed {
            observed_map.insert("git.head_unchanged".to_owned(), parse(o));
        }
        let req = json!({"preconditions": serde_json::to_value(&p).expect("json"), "observed": observed_map});
        let got = ladder::eval_ladder_revalidate(&request(req)).expect("eval");
        assert_eq!(got["ok"], json!(ok), "{case}");
        if !ok {
            assert_eq!(got["failure"]["kind"], "precondition_failed");
            assert_eq!(got["failure"]["check_id"], "git.head_unchanged");
            assert_eq!(got["failure"]["expected"], parse(expected));
        }
    }
}

#[test]
fn every_recheck_is_reported_and_the_first_failure_wins() {
    let p = [
        precondition("a", json!(1), true),
        precondition("b", json!(2), true),
        precondition("skipped", json!(3), false),
        precondition("c", json!(4), true),
    ];
    let r = ladder::revalidate(&p, |p| match p.check_id.as_str() {
        "a" => Ok(json!(1)),
        "b" => Ok(json!(20)),
        "c" => Err("timeout".to_owned()),
        other => panic!("{other} must not be observed"),
    });
    let summary: Vec<(&str, bool)> = r.checks.iter().map(|c| (c.check_id.as_str(), c.holds)).collect();
    assert_eq!(summary, [("a", true), ("b", false), ("c", false)]);
    assert_eq!(r.checks[2].error.as_deref(), Some("timeout"));
    let f = r.failure.expect("failure");
    assert_eq!((f.check_id.as_str(), f.detail.as_str()), ("b", "precondition \"b\" failed: expected 2, observed 20"));
    let err = ladder::eval_ladder_revalidate(&request(json!({"preconditions": [{"check_id": "a"}], "observed": {}})));
    assert_eq!(err.map_err(|e| e.code), Err("invalid_contract"));
    let err = ladder::eval_ladder_revalidate(&request(json!({"preconditions": [], "observed": []})));
    assert_eq!(err.map_err(|e| e.code), Err("invalid_request"));
    assert!(ladder::revalidate(&[], |_| Err(String::new())).ok);
}

#[test]
fn denial_kinds_use_the_wire_spelling() {
    let spelled: Vec<&str> = DenialKind::ALL.iter().map(|k| k.as_str()).collect();
    assert_eq!(
        spelled,
        [
            "policy_denied",
            "approval_required",
            "approval_timeout",
            "approval_denied",
            "precondition_failed",
            "execution_failed",
            "tool_not_advertised",
            "tool_registration_lost",
            "proxy_not_initialised",
        ]
    );
}
