//! Reading the fields every op shares: request policies (which only tighten), inline evidence,
//! `now`, and the deprecated spellings of fields.

use super::{EvalError, Evaluator, bad};
use crate::protocol::graduation::evidence::{EvidenceRow, rows_from_json};
use crate::protocol::graduation::policy::PolicySet;
use serde_json::{Map, Value};
use std::borrow::Cow;
use time::OffsetDateTime;

impl Evaluator {
    pub(super) fn policies_for<'a>(&'a self, r: &Map<String, Value>) -> Result<Cow<'a, PolicySet>, EvalError> {
        let mut set = Cow::Borrowed(&self.policies);
        match r.get("policies") {
            None | Some(Value::Null) => {}
            Some(Value::Array(p)) if p.is_empty() => {}
            Some(Value::Array(p)) => {
                // Only tightening the host's policies (`docs/eval.md`, Request policies only tighten).
                set = Cow::Owned(set.tightened_by(p).map_err(|e| bad("invalid_policy", e.to_string()))?);
            }
            Some(_) => return Err(bad("invalid_policy", "`policies` must be an array")),
        }
        if let Some(strict) = r.get("strict") {
            match strict.as_bool() {
                // A request can make the gate stricter, never laxer than the host's policy.
                Some(true) if !set.strict => set.to_mut().strict = true,
                Some(_) => {}
                None => return Err(bad("invalid_request", "`strict` must be a boolean")),
            }
        }
        Ok(set)
    }
}

/// The deprecated spellings of request fields, accepted for one release: (op, old,
/// canonical). The agent's present ring is `agent_ring` (the spec's enforcer and its
/// `RingCheckResult`), a tool's floor `required_trust_level` (Lodestar's tool registration).
/// Inside `verdict`'s `tools.<key>` objects, `tier` is the deprecated spelling of `tool_tier`
/// (the workbench's `gate_action(tool_tier, notebook_trust)`, and `tiers.gate`'s field).
pub const DEPRECATED_FIELDS: [(&str, &str, &str); 6] = [
    ("rings.assign", "current_ring", "agent_ring"),
    ("rings.elevate", "current_ring", "agent_ring"),
    ("rings.rate_check", "ring", "agent_ring"),
    ("rings.constraints", "ring", "agent_ring"),
    ("ladder.gate", "tool_floor", "required_trust_level"),
    ("verdict", "tools.<key>.tier", "tools.<key>.tool_tier"),
];

/// A request with canonical spellings, and the notes on the deprecated ones it used.
type Respelled<'a> = (Cow<'a, Map<String, Value>>, Vec<String>);

/// Renames the deprecated spellings of `op`'s request fields to the canonical ones
/// ([`DEPRECATED_FIELDS`]), returning the request and one `"<old> → <new>"` note per spelling
/// used. A request that gives both spellings of one field is `invalid_request` (which one
/// would count is not for the evaluator to guess).
pub(super) fn canonical_spellings<'a>(op: &str, r: &'a Map<String, Value>) -> Result<Respelled<'a>, EvalError> {
    let mut out = Cow::Borrowed(r);
    let mut notes = Vec::new();
    for (_, old, new) in DEPRECATED_FIELDS.iter().filter(|(o, old, _)| *o == op && !old.contains('.')) {
        if let Some(v) = r.get(*old) {
            if r.contains_key(*new) {
                return Err(bad("invalid_request", format!("give `{new}` only (`{old}` is its deprecated spelling)")));
            }
            let m = out.to_mut();
            m.remove(*old);
            m.insert((*new).to_owned(), v.clone());
            notes.push(format!("{old} → {new}"));
        }
    }
    if op == "verdict"
        && let Some(Value::Object(tools)) = r.get("tools")
    {
        // `tools.<key>.tool_tier` is read as the policy form's `tier` below this point.
        let mut renamed = tools.clone();
        let mut used_old = false;
        for (key, def) in &mut renamed {
            let Value::Object(d) = def else { continue };
            match (d.remove("tool_tier"), d.contains_key("tier")) {
                (Some(_), true) => {
                    return Err(bad(
                        "invalid_request",
                        format!("`tools.{key}`: give `tool_tier` only (`tier` is its deprecated spelling)"),
                    ));
                }
                (Some(t), false) => {
                    d.insert("tier".into(), t);
                }
                (None, true) => used_old = true,
                (None, false) => {}
            }
        }
        if used_old {
            notes.push("tools.<key>.tier → tools.<key>.tool_tier".to_owned());
        }
        out.to_mut().insert("tools".into(), Value::Object(renamed));
    }
    Ok((out, notes))
}

pub(super) fn evidence_of(r: &Map<String, Value>) -> Result<Vec<EvidenceRow>, EvalError> {
    rows_from_json(r.get("evidence").unwrap_or(&Value::Null))
        .map_err(|(i, e)| bad("invalid_evidence", format!("evidence[{i}]: {e}")))
}

pub(super) fn now_of(r: &Map<String, Value>) -> Result<OffsetDateTime, EvalError> {
    match r.get("now") {
        None | Some(Value::Null) => Ok(OffsetDateTime::now_utc()),
        Some(Value::String(s)) => crate::protocol::clock::parse_rfc3339(s)
            .ok_or_else(|| bad("invalid_request", format!("`now` is not an RFC 3339 date-time: {s:?}"))),
        Some(_) => Err(bad("invalid_request", "`now` must be an RFC 3339 string")),
    }
}
