//! One verdict per packet: the composition table, and every model on real packets with the
//! principal's controls, policies and time as inputs.

use serde_json::{Value, json};
use warrant::protocol::control::{ControlState, Elevation, NotebookLevel};
use warrant::protocol::graduation::PolicySet;
use warrant::protocol::graduation::evidence::EvidenceIndex;
use warrant::protocol::graduation::gate::AgentStanding;
use warrant::protocol::packet::{DecisionState, Packet, parse_packet};
use warrant::protocol::verdict::{Model, ModelVerdict, VerdictContext, compose, evaluate, packet_gate, strictness};

use DecisionState::{Allowed, AllowedWithConstraints, Blocked, Deferred, HumanOnly, ReviewRequired};

const NOW: f64 = 1_795_251_600.0; // 2026-11-21T09:00:00Z

fn mv(model: Model, state: DecisionState) -> ModelVerdict {
    ModelVerdict::new(model, state.as_str(), state, "")
}

/// (model states in evaluation order, composed state, decisive model index).
const COMPOSITION: [(&[DecisionState], DecisionState, usize); 12] = [
    (&[Allowed], Allowed, 0),
    (&[Allowed, Allowed, Allowed], Allowed, 0),
    (&[Allowed, ReviewRequired], ReviewRequired, 1),
    (&[ReviewRequired, Allowed], ReviewRequired, 0),
    (&[AllowedWithConstraints, Allowed], AllowedWithConstraints, 0),
    (&[Allowed, Deferred, ReviewRequired], ReviewRequired, 2),
    (&[Deferred, AllowedWithConstraints], Deferred, 0),
    (&[ReviewRequired, HumanOnly, Allowed], HumanOnly, 1),
    (&[HumanOnly, Blocked], Blocked, 1),
    (&[Blocked, HumanOnly], Blocked, 0),
    (&[Allowed, Blocked, Blocked], Blocked, 1),
    (&[ReviewRequired, ReviewRequired], ReviewRequired, 0),
];

const MODELS: [Model; 6] =
    [Model::TrustGraduation, Model::RateLimit, Model::Tiers, Model::Rings, Model::Ladder, Model::Preconditions];

// The strictest state wins, ties go to the earlier model, and an empty list is blocked.
#[test]
fn composition_table() {
    for (states, want, decisive) in COMPOSITION {
        let models: Vec<ModelVerdict> = states.iter().zip(MODELS).map(|(s, m)| mv(m, *s)).collect();
        let v = compose(models);
        assert_eq!(v.state, want, "{states:?}");
        assert_eq!(v.decisive, MODELS[decisive], "{states:?}");
    }
    assert_eq!(compose(vec![]).state, Blocked);
    let order: Vec<u8> = DecisionState::ALL.iter().map(|s| strictness(*s)).collect();
    let mut sorted = order.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), 6, "a total order");
    assert!(strictness(Deferred) < strictness(ReviewRequired) && strictness(HumanOnly) < strictness(Blocked));
}

fn packet(agent: &str, class: &str, governance: Option<Value>) -> Packet {
    let mut doc =
        warrant::protocol::packet::portable_packet("p-1", class, agent, "s", json!({"x": 1}), "2026-11-21T08:59:00Z");
    if let Some(g) = governance {
        doc["governance"] = g;
    }
    parse_packet(&serde_json::to_vec(&doc).expect("json"), "p-1").expect("valid packet")
}

fn descriptor(reversibility: &str, read_only: bool, admin: bool) -> Value {
    json!({"action_id": "a-1", "name": "n", "execute_api": "/x", "reversibility": reversibility,
           "is_read_only": read_only, "is_admin": admin})
}

fn contract(level: u8) -> Value {
    json!({"required_level": level, "blast_radius": "project", "reversibility": "reversible",
           "scope": {"level": "repo", "identifier": "acme/web"}, "data_sensitivity": "public", "preconditions": []})
}

fn policies() -> PolicySet {
    PolicySet::from_toml(
        r#"
[tools."corrections.merge"]
tier = "destructive"
required_trust_level = 3
[tools."goldencheck.profile"]
tier = "safe"
[tools."goldenmatch.dedupe"]
tier = "mutating"
[agents."agent-capped"]
max_score = 0.5
"#,
    )
    .expect("policy")
}

fn verdict_of(p: &Packet, policies: &PolicySet, controls: &ControlState) -> warrant::protocol::verdict::PacketVerdict {
    let ctx = VerdictContext { policies, controls, now: NOW };
    let none = EvidenceIndex::default();
    let tg = packet_gate(&ctx, p, &none, "local", true);
    evaluate(&ctx, p, &tg, None, None)
}

fn model(v: &warrant::protocol::verdict::PacketVerdict, m: Model) -> &ModelVerdict {
    v.models.iter().find(|x| x.model == m).unwrap_or_else(|| panic!("no {m:?} in {v:?}"))
}

/// (tool, notebook level or None for "no notebook", expected tiers verdict word, mapped state).
const TIER_CASES: [(&str, Option<&str>, &str, DecisionState); 9] = [
    ("goldencheck.profile", Some("cautious"), "auto", Allowed),
    ("goldenmatch.dedupe", Some("cautious"), "confirm", ReviewRequired),
    ("goldenmatch.dedupe", Some("trusted"), "auto", Allowed),
    ("corrections.merge", Some("trusted"), "confirm", ReviewRequired),
    ("corrections.merge", Some("autonomous"), "auto", Allowed),
    ("unregistered.tool", Some("autonomous"), "confirm", ReviewRequired),
    ("goldencheck.profile", None, "confirm", ReviewRequired),
    ("corrections.merge", None, "confirm", ReviewRequired),
    ("goldenmatch.dedupe", Some("autonomous"), "auto", Allowed),
];

// Tool tiers × notebook trust: the tier comes from policy.toml, the level from the chain's
// controls (cautious when never set); unknown inputs fail closed to confirm.
#[test]
fn tiers_model_reads_policy_tiers_and_chain_levels() {
    let policies = policies();
    for (tool, level, word, state) in TIER_CASES {
        let mut controls = ControlState::default();
        let g = match level {
            Some(l) => {
                controls.notebooks.insert(
                    "nb".into(),
                    NotebookLevel {
                        level: warrant::protocol::tiers::NotebookTrust::parse(l).expect("level"),
                        principal: "alice".into(),
                        set_at: String::new(),
                    },
                );
                json!({"tool": tool, "notebook": "nb"})
            }
            None => json!({"tool": tool}),
        };
        let v = verdict_of(&packet("agent-a", "draft.compose", Some(g)), &policies, &controls);
        let m = model(&v, Model::Tiers);
        assert_eq!((m.verdict.as_str(), m.state), (word, state), "{tool} {level:?}: {m:?}");
    }
    // A notebook never set is cautious.
    let v = verdict_of(
        &packet("agent-a", "draft.compose", Some(json!({"tool": "goldenmatch.dedupe", "notebook": "fresh"}))),
        &policies,
        &ControlState::default(),
    );
    assert_eq!(model(&v, Model::Tiers).verdict, "confirm");
}

/// A descriptor's (reversibility, read-only, admin).
type Descriptor = (&'static str, bool, bool);

/// (claimed score, consensus, descriptor, expected rings word).
const RING_CASES: [(f64, bool, Descriptor, &str); 10] = [
    (0.61, false, ("full", false, false), "allowed"),
    (0.60, false, ("full", false, false), "sponsorship_required"),
    (0.40, false, ("full", true, false), "allowed"),
    (0.96, true, ("none", false, false), "allowed"),
    (0.96, false, ("none", false, false), "sponsorship_required"),
    (0.95, true, ("none", false, false), "sponsorship_required"),
    (0.99, true, ("full", false, true), "requires_sre_witness"),
    (f64::NAN, false, ("full", true, false), "allowed"),
    (1.5, true, ("none", false, false), "sponsorship_required"),
    (0.70, false, ("partial", false, false), "allowed"),
];

// Rings: the agent's ring from its effective score (strict 0.60 / 0.95 with consensus; NaN and
// out-of-range scores are Ring 3), the required ring from the descriptor, Ring 0 needs a witness.
// A ring shortfall of an active agent is for the principal to sponsor: review, and
// the approval says it stands in for the ring sponsorship.
#[test]
fn rings_model_uses_scores_descriptors_and_controls() {
    let policies = policies();
    let controls = ControlState::default();
    for (score, consensus, (rev, ro, admin), word) in RING_CASES {
        let g = json!({"action": descriptor(rev, ro, admin), "eff_score": if score.is_nan() { Value::Null } else { json!(score) }, "has_consensus": consensus});
        let v = verdict_of(&packet("agent-a", "draft.compose", Some(g)), &policies, &controls);
        let m = model(&v, Model::Rings);
        assert_eq!(m.verdict, word, "{score} {consensus} {rev}: {m:?}");
        let want = match word {
            "allowed" => Allowed,
            "requires_sre_witness" => HumanOnly,
            _ => ReviewRequired,
        };
        assert_eq!(m.state, want);
        match word {
            "sponsorship_required" => {
                let s = m.stands_in_for.as_deref().expect("a shortfall says what the approval stands in for");
                assert!(s.starts_with("ring sponsorship: Ring "), "{s}");
                assert!(v.stands_in_for().iter().any(|x| x == s), "{:?}", v.stands_in_for());
                assert!(v.approvable(), "{v:?}");
            }
            "requires_sre_witness" => {
                let (_, remedy) = v.why_not_approvable().expect("human only");
                assert!(remedy.contains("SRE witness"), "{remedy}");
            }
            _ => assert!(m.stands_in_for.is_none()),
        }
    }
    // The policy caps what an agent may claim: 0.99 becomes 0.5 → Ring 3 → a Ring 2 action needs
    // the principal's sponsorship.
    let g = json!({"action": descriptor("full", false, false), "eff_score": 0.99});
    let v = verdict_of(&packet("agent-capped", "draft.compose", Some(g.clone())), &policies, &controls);
    assert_eq!(model(&v, Model::Rings).verdict, "sponsorship_required");
    // A quarantined agent's shortfall is no one's to sponsor: blocked, and the way out named.
    let mut quarantined = ControlState::default();
    quarantined.agents.entry("agent-capped".into()).or_default().standing = AgentStanding::Quarantined;
    let v = verdict_of(&packet("agent-capped", "draft.compose", Some(g.clone())), &policies, &quarantined);
    assert_eq!((model(&v, Model::Rings).state, v.state), (Blocked, Blocked), "{v:?}");
    let (_, remedy) = v.why_not_approvable().expect("blocked");
    assert!(remedy.contains("release agent-capped from quarantine"), "{remedy}");
    assert!(v.stands_in_for().is_empty());
    // The principal's elevation lifts a Ring 3 agent to Ring 2 until it expires.
    let mut elevated = ControlState::default();
    elevated.agents.entry("agent-capped".into()).or_default().elevation =
        Some(Elevation { ring: 2, granted_at: String::new(), expires_at: "2026-11-21T09:05:00Z".into() });
    let v = verdict_of(&packet("agent-capped", "draft.compose", Some(g.clone())), &policies, &elevated);
    assert_eq!(model(&v, Model::Rings).verdict, "allowed", "elevated");
    let ctx = VerdictContext { policies: &policies, controls: &elevated, now: NOW + 301.0 };
    let p = packet("agent-capped", "draft.compose", Some(g));
    let v = evaluate(&ctx, &p, &packet_gate(&ctx, &p, &EvidenceIndex::default(), "local", true), None, None);
    assert_eq!(model(&v, Model::Rings).verdict, "sponsorship_required", "expired");
}

/// (contract level, ceiling, tool, expected ladder word).
const LADDER_CASES: [(u8, u8, &str, &str); 8] = [
    (1, 2, "goldencheck.profile", "allow"),
    (2, 2, "goldencheck.profile", "allow"),
    (3, 2, "goldencheck.profile", "deny"),
    (3, 3, "goldencheck.profile", "allow"),
    (4, 3, "goldencheck.profile", "hold"),
    (5, 3, "goldencheck.profile", "deny"),
    (2, 3, "corrections.merge", "deny"),
    (2, 3, "unregistered.tool", "deny"),
];

// The ladder: the ceiling from policy.toml, the tool floor (registered or Lodestar's L3 default),
// L4 always held and L5 always denied.
#[test]
fn ladder_model_applies_ceiling_and_tool_floors() {
    let controls = ControlState::default();
    for (level, ceiling, tool, word) in LADDER_CASES {
        let mut policies = policies();
        policies.ladder_ceiling = ceiling;
        let g = json!({"tool": tool, "contract": contract(level)});
        let v = verdict_of(&packet("agent-a", "draft.compose", Some(g)), &policies, &controls);
        let m = model(&v, Model::Ladder);
        assert_eq!(m.verdict, word, "L{level} ceiling {ceiling} {tool}: {m:?}");
        // Only L5 is prohibited; every other shortfall is held for the principal, whose
        // approval says it resolved the ladder's hold.
        match word {
            "allow" => assert_eq!((m.state, m.stands_in_for.as_deref()), (Allowed, None)),
            _ if level == 5 => {
                assert_eq!(m.state, Blocked);
                assert!(m.remedy.as_deref().is_some_and(|r| r.contains("prohibited")), "{m:?}");
                assert!(!v.approvable());
            }
            _ => {
                assert_eq!(m.state, ReviewRequired, "{m:?}");
                assert!(m.stands_in_for.as_deref().is_some_and(|s| s.starts_with("ladder hold resolved")), "{m:?}");
            }
        }
    }
}

// Fail closed: malformed governance parts are blocked with a reason; a quarantined or killed
// agent is blocked by the Trust Graduation gate; a packet without governance has one model.
#[test]
fn malformed_inputs_and_standings_fail_closed() {
    let policies = policies();
    let controls = ControlState::default();
    for g in [
        json!("not an object"),
        json!({"action": {"action_id": "bad id", "name": "n", "execute_api": "/x"}}),
        json!({"contract": {"required_level": 6}}),
        json!({"eff_score": "high"}),
        json!({"tool": "../etc"}),
        json!({"surprise": true}),
    ] {
        let v = verdict_of(&packet("agent-a", "draft.compose", Some(g.clone())), &policies, &controls);
        assert_eq!(v.state, Blocked, "{g}: {v:?}");
        assert!(v.models.iter().any(|m| m.reason.starts_with("fail closed")), "{g}");
        // Why, and what would change it: the malformed part, named as a field.
        let (why, remedy) = v.why_not_approvable().expect("blocked is not approvable");
        assert!(why.starts_with("fail closed"), "{g}: {why}");
        assert!(remedy.contains("fix field `governance"), "{g}: {remedy}");
    }
    let plain = verdict_of(&packet("agent-a", "draft.compose", None), &policies, &controls);
    assert_eq!(plain.models.len(), 1);
    assert_ne!(plain.state, Blocked);
    for standing in [AgentStanding::Quarantined, AgentStanding::Killed] {
        let mut c = ControlState::default();
        c.agents.entry("agent-a".into()).or_default().standing = standing;
        let v = verdict_of(&packet("agent-a", "draft.compose", None), &policies, &c);
        assert_eq!(v.state, Blocked, "{standing:?}");
        assert_eq!(v.decisive, Model::TrustGraduation);
        let (_, remedy) = v.why_not_approvable().expect("blocked");
        assert!(remedy.starts_with("release agent-a"), "{standing:?}: {remedy}");
    }
}

// A full packet: every model side by side, the strictest decides.
#[test]
fn every_model_side_by_side() {
    let mut policies = policies();
    policies.ladder_ceiling = 3;
    let g = json!({"tool": "corrections.merge", "notebook": "nb", "action": descriptor("partial", false, false),
                   "eff_score": 0.7, "contract": contract(4)});
    let v = verdict_of(&packet("agent-a", "draft.compose", Some(g)), &policies, &ControlState::default());
    let words: Vec<(&str, &str)> = v.models.iter().map(|m| (m.model.as_str(), m.verdict.as_str())).collect();
    assert_eq!(words[1..], [("tiers", "confirm"), ("rings", "allowed"), ("ladder", "hold")], "{words:?}");
    assert_eq!(v.state, ReviewRequired);
    let j = v.to_json();
    assert_eq!(j["models"].as_array().map(Vec::len), Some(4));
}
