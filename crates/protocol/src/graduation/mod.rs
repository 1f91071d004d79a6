//! Trust Graduation Protocol v0.1 (`trust-graduation.md`): the gate, evidence, posteriors,
//! approval packets, receipts and the discovery document.
//!
//! - [`policy`]: the action-class registry with local classes and thresholds;
//! - [`evidence`]: evidence rows, weights and the count-based tier;
//! - [`posterior`]: the Beta(2,2) posterior with its exact 95% credible interval;
//! - [`binding`]: exact-action bindings and single-use grants (A2A extension v1);
//! - [`gate`]: the gate itself, `can_execute`;
//! - [`receipt`]: approval packets and receipts.
//!
//! Everything here is a pure function over values; the spool and the chain are I/O at the edges
//! (`warrant_store::spool`).

pub mod binding;
pub mod evidence;
pub mod gate;
pub mod policy;
pub mod posterior;
pub mod receipt;

pub use evidence::{EvidenceIndex, EvidenceRow, EvidenceSummary, SourceType, Tier};
pub use gate::{ActionBinding, AgentStanding, Decision, GateRequest, can_execute};
pub use policy::{ClassPolicy, PolicySet, Threshold};
pub use posterior::Posterior;

use serde_json::{Value, json};

/// The protocol version warrant implements.
pub const PROTOCOL_VERSION: &str = "0.1";

/// The discovery document served at `/.well-known/trust-graduation` (§1.2), for this host's
/// registry: version, the six portable schemas, the decision states, the canonical classes,
/// agent guidance, and warrant's local classes under `local_action_classes`. It is permission
/// metadata, not permission itself.
#[must_use]
pub fn discovery_document(policies: &PolicySet) -> Value {
    let base = "https://trustgraduation.org/spec/0.1/";
    let canonical: Vec<&str> = crate::registry::CANONICAL.iter().map(|c| c.id).collect();
    let local: Vec<Value> = policies.classes().filter(|c| c.local).map(policy::ClassPolicy::to_json).collect();
    json!({
        "protocol": "trust-graduation",
        "version": PROTOCOL_VERSION,
        "canonical": "https://trustgraduation.org/",
        "status": "experimental",
        "summary": "warrant: a principal's console for Trust Graduation. It tells an agent what action classes it may execute, what requires approval, what evidence is missing, and how future receipts can graduate authority.",
        "spec": base,
        "implementation": {"name": "warrant", "version": env!("CARGO_PKG_VERSION")},
        "schemas": {
            "action_class": format!("{base}action-class.schema.json"),
            "decision": format!("{base}decision.schema.json"),
            "approval_packet": format!("{base}approval-packet.schema.json"),
            "receipt": format!("{base}receipt.schema.json"),
            "evidence": format!("{base}evidence-row.schema.json"),
            "posterior": format!("{base}posterior.schema.json"),
        },
        "decision_states": crate::packet::DecisionState::ALL.iter().map(|d| d.as_str()).collect::<Vec<_>>(),
        "canonical_action_classes": canonical,
        "action_classes": policies.classes().map(policy::ClassPolicy::to_json).collect::<Vec<_>>(),
        "local_action_classes": local,
        "strict_unknown_classes": policies.strict,
        "agent_guidance": {
            "goal": "Use this protocol before consequential tool calls.",
            "allowed": "Execute and record a receipt if a receipt is required.",
            "allowed_with_constraints": "Execute only within constraints; record the receipt.",
            "review_required": "Prepare an approval packet; do not execute externally.",
            "deferred": "Queue for asynchronous approval; do not execute externally.",
            "blocked": "Stop or reduce scope. Do not route around the gate.",
            "human_only": "Prepare context only. The principal must execute.",
        },
    })
}
