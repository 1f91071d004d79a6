//! The Trust Graduation ops: `tg.can_execute` and `tg.prepare_approval_packet` (the gate) and
//! `tg.posterior`.

use super::evidence::combined_index;
use super::fields::{evidence_of, now_of};
use super::{EvalError, Evaluator, bad};
use crate::protocol::graduation::evidence::EvidenceRow;
use crate::protocol::graduation::gate::{AgentStanding, GateRequest, can_execute};
use crate::protocol::graduation::policy::Threshold;
use crate::protocol::graduation::posterior::Posterior;
use crate::protocol::graduation::receipt::prepare_approval_packet;
use serde_json::{Map, Value, json};

impl Evaluator {
    pub(super) fn gate(&self, r: &Map<String, Value>, packet: bool) -> Result<Value, EvalError> {
        let class = r
            .get("action_class")
            .or_else(|| r.get("actionClass"))
            .and_then(Value::as_str)
            .ok_or_else(|| bad("invalid_request", "missing string `action_class`"))?;
        if !crate::protocol::packet::is_class_id(&crate::protocol::registry::normalize(class)) {
            return Err(bad(
                "invalid_action_class",
                format!("{class:?} is not an action class (like email.send.external)"),
            ));
        }
        let policies = self.policies_for(r)?;
        let evidence = evidence_of(r)?;
        let chain = self.chain_evidence();
        let index = combined_index(chain.as_deref(), Some(&evidence));
        let empty = json!({});
        let context = match r.get("context") {
            None | Some(Value::Null) => &empty,
            Some(c @ Value::Object(_)) => c,
            Some(_) => return Err(bad("invalid_request", "`context` must be an object")),
        };
        let approval = match r.get("approval") {
            None | Some(Value::Null) => None,
            Some(a @ Value::Object(_)) => Some(a),
            Some(_) => return Err(bad("invalid_request", "`approval` must be an object or null")),
        };
        let agent = match r.get("agent_status") {
            None => AgentStanding::Active,
            Some(v) => v
                .as_str()
                .and_then(AgentStanding::parse)
                .ok_or_else(|| bad("invalid_request", "`agent_status` must be active, quarantined or killed"))?,
        };
        let chain_intact = match r.get("chain_intact") {
            None => true,
            Some(v) => v.as_bool().ok_or_else(|| bad("invalid_request", "`chain_intact` must be a boolean"))?,
        } && chain.as_ref().is_none_or(|c| c.broken.is_none());
        let workspace = match r.get("workspace") {
            None => "local",
            Some(v) => v.as_str().ok_or_else(|| bad("invalid_request", "`workspace` must be a string"))?,
        };
        let now = now_of(r)?;
        let req = GateRequest {
            action_class: class,
            context,
            approval,
            evidence: &index,
            workspace,
            now,
            agent,
            chain_intact,
        };
        let decision = can_execute(&policies, &req);
        if !packet {
            return Ok(decision.to_json());
        }
        let agent_id = r
            .get("agent")
            .and_then(Value::as_str)
            .or_else(|| context.get("requestedBy").and_then(Value::as_str))
            .unwrap_or("agent");
        let summary = r.get("summary").and_then(Value::as_str).unwrap_or(&decision.reason);
        // The packet carries the class's rows: the chain's, then the request's.
        let rows: Vec<EvidenceRow> = match &chain {
            Some(c) => c.evidence.rows_of(&decision.action_class).cloned().chain(evidence).collect(),
            None => evidence,
        };
        Ok(prepare_approval_packet(&decision, &rows, agent_id, summary))
    }

    pub(super) fn posterior(&self, r: &Map<String, Value>) -> Result<Value, EvalError> {
        let class = r
            .get("action_class")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("invalid_request", "missing string `action_class`"))?;
        let canonical = self.policies.normalize(class);
        if !crate::protocol::packet::is_class_id(&canonical) {
            return Err(bad("invalid_action_class", format!("{class:?} is not an action class")));
        }
        let evidence = evidence_of(r)?;
        let host = self.policies.threshold(&canonical);
        let threshold = match r.get("threshold") {
            None | Some(Value::Null) => host,
            Some(t) => {
                let req = serde_json::from_value::<Threshold>(t.clone())
                    .ok()
                    .filter(|t| (0.0..=1.0).contains(&t.ci_low_min))
                    .ok_or_else(|| bad("invalid_request", "`threshold` must be {ci_low_min in [0,1], samples_min}"))?;
                // A request can raise the bar, never lower the host's.
                Threshold {
                    ci_low_min: host.ci_low_min.max(req.ci_low_min),
                    samples_min: host.samples_min.max(req.samples_min),
                }
            }
        };
        let today = now_of(r)?.date();
        let Some(chain) = self.chain_evidence() else {
            return Ok(Posterior::of(&canonical, &evidence, threshold, today).to_json());
        };
        // The console's posterior: the chain's rows of the class, then the request's.
        let mut v =
            Posterior::of(&canonical, chain.evidence.rows_of(&canonical).chain(&evidence), threshold, today).to_json();
        if let Some(why) = &chain.broken {
            // Nothing graduates on a chain that does not verify.
            v["chain_intact"] = json!(false);
            v["chain_finding"] = json!(why);
            v["graduation_ready"] = json!(false);
            v["approvals_to_graduate"] = Value::Null;
        }
        Ok(v)
    }
}
