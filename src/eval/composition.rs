//! The `verdict` op: every model that applies to one packet, composed.

use super::evidence::combined_index;
use super::fields::{evidence_of, now_of};
use super::{EvalError, Evaluator, bad};
use serde_json::{Map, Value, json};

impl Evaluator {
    /// `verdict`: every model that applies to a packet, composed (docs/eval.md).
    pub(super) fn verdict(&self, r: &Map<String, Value>) -> Result<Value, EvalError> {
        let raw = r
            .get("packet")
            .filter(|p| p.is_object())
            .ok_or_else(|| bad("invalid_request", "missing `packet` (an object)"))?;
        let bytes = serde_json::to_vec(raw).map_err(|e| bad("invalid_request", e.to_string()))?;
        let packet = crate::protocol::packet::parse_packet(&bytes, "packet")
            .map_err(|e| bad("invalid_packet", e.to_string()))?;
        let mut policies = self.policies_for(r)?.into_owned();
        if let Some(tools) = r.get("tools") {
            let Value::Object(tools) = tools else { return Err(bad("invalid_policy", "`tools` must be an object")) };
            for (key, def) in tools {
                policies.tighten_tool(key, def).map_err(|e| bad("invalid_policy", e))?;
            }
        }
        if let Some(c) = r.get("ladder_ceiling") {
            let c = c
                .as_u64()
                .filter(|c| *c <= 3)
                .ok_or_else(|| bad("invalid_policy", "`ladder_ceiling` must be 0..=3"))?;
            // A request can lower the host's ceiling, never raise it.
            policies.ladder_ceiling = policies.ladder_ceiling.min(c as u8);
        }
        let controls = crate::protocol::control::ControlState::from_json(r.get("controls").unwrap_or(&Value::Null))
            .map_err(|e| bad("invalid_request", e))?;
        let now = now_of(r)?;
        let ctx = crate::protocol::verdict::VerdictContext {
            policies: &policies,
            controls: &controls,
            now: now.unix_timestamp() as f64 + f64::from(now.nanosecond()) / 1e9,
        };
        let evidence = evidence_of(r)?;
        let chain = self.chain_evidence();
        let chain_intact = match r.get("chain_intact") {
            None => true,
            Some(v) => v.as_bool().ok_or_else(|| bad("invalid_request", "`chain_intact` must be a boolean"))?,
        } && chain.as_ref().is_none_or(|c| c.broken.is_none());
        let index = combined_index(chain.as_deref(), Some(&evidence));
        let tg = crate::protocol::verdict::packet_gate(&ctx, &packet, &index, "local", chain_intact);
        let rate = match r.get("rate_limited") {
            None | Some(Value::Null) => None,
            Some(Value::Bool(limited)) => {
                let g = crate::protocol::verdict::Governance::of_packet(&packet);
                let ring = crate::protocol::verdict::packet_ring(&ctx, &packet, g.as_deref());
                let burst = crate::protocol::rings::RateLimiter::default().limits(ring).burst;
                Some(crate::protocol::verdict::RateOutcome {
                    allowed: !limited,
                    ring,
                    tokens: if *limited { 0.0 } else { burst - 1.0 },
                    capacity: burst,
                })
            }
            Some(_) => return Err(bad("invalid_request", "`rate_limited` must be a boolean")),
        };
        let revalidation = match r.get("observed") {
            None | Some(Value::Null) => None,
            Some(Value::Object(observed)) => crate::protocol::verdict::Governance::of_packet(&packet)
                .and_then(|g| g.contract.clone())
                .and_then(Result::ok)
                .map(|c| {
                    crate::protocol::ladder::revalidate(&c.preconditions, |p| {
                        observed
                            .get(&p.check_id)
                            .cloned()
                            .ok_or_else(|| format!("no observed value for {}", p.check_id))
                    })
                }),
            Some(_) => return Err(bad("invalid_request", "`observed` must be an object")),
        };
        let verdict = crate::protocol::verdict::evaluate(&ctx, &packet, &tg, rate.as_ref(), revalidation.as_ref());
        let mut v = verdict.to_json();
        v["packet_id"] = json!(packet.id);
        v["trust_graduation"] = tg.to_json();
        Ok(v)
    }
}
