//! `warrant eval`: the gates over a JSON-lines protocol (`docs/eval.md`).
//!
//! One request object per line on the input, one response object per line on the output, in
//! order. A request names an `op`; an optional `id` (any JSON value) is echoed in the response.
//! A line that cannot be served gets `{"error": {"code", "message"}}` (with the `id` when one
//! could be read) and the evaluator goes on with the next line. Output is flushed whenever no
//! further input is already buffered, so an interactive client always gets its answer before the
//! evaluator waits, and a pipeline of requests is answered in large writes.
//!
//! Ops: `tg.can_execute`, `tg.prepare_approval_packet`, `tg.posterior`, `tg.evidence_weight`,
//! `otg.verify`, `otg.entry_hash`; the Agent Hypervisor's `rings.*` (stateful for the life of the
//! process, each taking `now`); `tiers.gate`; `ladder.gate`, `ladder.revalidate`; `verdict` (every
//! model on one packet, composed); and `ops` (the list).

use crate::chain::{self, VerifyOptions};
use crate::graduation::evidence::{EvidenceRow, rows_from_json};
use crate::graduation::gate::{AgentStanding, GateRequest, can_execute};
use crate::graduation::policy::{PolicySet, Threshold};
use crate::graduation::posterior::Posterior;
use crate::graduation::receipt::prepare_approval_packet;
use crate::rings::wire::RingsSession;
use serde_json::{Map, Value, json};
use std::borrow::Cow;
use std::cell::RefCell;
use std::io::{self, BufRead, BufReader, Read, Write};
use time::OffsetDateTime;

/// Longest request line (1 MiB); longer lines are answered with `line_too_long` and skipped.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// The Trust Graduation, OpenTrustGraph and composition ops this module serves itself; the
/// tier and ladder ops are [`crate::ladder::EVAL_OPS`], the ring ops [`crate::rings::wire::OPS`].
const OWN_OPS: [&str; 8] = [
    "tg.can_execute",
    "tg.prepare_approval_packet",
    "tg.posterior",
    "tg.evidence_weight",
    "otg.verify",
    "otg.entry_hash",
    "verdict",
    "ops",
];

/// Every op this evaluator serves (23).
#[must_use]
pub fn ops() -> Vec<&'static str> {
    let mut all = OWN_OPS.to_vec();
    all.extend(crate::ladder::EVAL_OPS.iter().map(|(name, _)| *name));
    all.extend(crate::rings::wire::OPS);
    all
}

/// An error response: a stable `code` and a sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvalError {
    /// `parse_error`, `invalid_request`, `unknown_op`, `invalid_evidence`, `invalid_policy`,
    /// `invalid_action_class`, `line_too_long`.
    pub code: &'static str,
    /// What is wrong.
    pub message: String,
}

fn bad(code: &'static str, message: impl Into<String>) -> EvalError {
    EvalError { code, message: message.into() }
}

/// Serves requests against a policy set (built-in classes plus `policy.toml`). The stateful
/// ring ops (elevation, rate limits, kill switch, quarantine, sagas) keep their state here for
/// the life of the evaluator: one `warrant eval` process.
#[derive(Default)]
pub struct Evaluator {
    policies: PolicySet,
    rings: RefCell<RingsSession>,
}

impl std::fmt::Debug for Evaluator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Evaluator").field("policies", &self.policies).finish_non_exhaustive()
    }
}

impl Evaluator {
    /// An evaluator over `policies`.
    #[must_use]
    pub fn new(policies: PolicySet) -> Self {
        Self { policies, rings: RefCell::default() }
    }

    /// Answers one request line (without its newline). Never panics on input.
    #[must_use]
    pub fn handle_line(&self, line: &[u8]) -> Value {
        let request = match crate::canonical::parse_untrusted(line) {
            Ok(Value::Object(m)) => m,
            Ok(_) => return error_response(None, &bad("invalid_request", "a request must be a JSON object")),
            Err(e) => return error_response(None, &bad("parse_error", e)),
        };
        let id = request.get("id").cloned();
        match self.handle(&request) {
            Ok(mut v) => {
                if let (Some(id), Value::Object(m)) = (id, &mut v) {
                    m.insert("id".into(), id);
                }
                v
            }
            Err(e) => error_response(id, &e),
        }
    }

    /// Answers one parsed request.
    ///
    /// # Errors
    /// [`EvalError`] for anything that cannot be served.
    pub fn handle(&self, r: &Map<String, Value>) -> Result<Value, EvalError> {
        let op = r.get("op").and_then(Value::as_str).ok_or_else(|| bad("invalid_request", "missing string `op`"))?;
        match op {
            "tg.can_execute" => self.gate(r, false),
            "tg.prepare_approval_packet" => self.gate(r, true),
            "tg.posterior" => self.posterior(r),
            "tg.evidence_weight" => {
                let row = r.get("row").ok_or_else(|| bad("invalid_request", "missing `row`"))?;
                let row = EvidenceRow::from_json(row).map_err(|e| bad("invalid_evidence", e.to_string()))?;
                let today = now_of(r)?.date().to_string();
                Ok(row.to_json(&today))
            }
            "otg.verify" => {
                let export = r
                    .get("export")
                    .or_else(|| r.get("chain"))
                    .ok_or_else(|| bad("invalid_request", "missing `export` (an opentrustgraph-chain/v0 object)"))?;
                let report = chain::verify_export(export, VerifyOptions::default());
                let mut v = serde_json::to_value(&report).map_err(|e| bad("invalid_request", e.to_string()))?;
                v["valid"] = json!(report.is_valid());
                Ok(v)
            }
            "otg.entry_hash" => {
                let Some(Value::Object(rec)) = r.get("record") else {
                    return Err(bad("invalid_request", "missing `record` (an object)"));
                };
                let hash = crate::canonical::prefixed(&crate::canonical::canonical_digest_without(rec, "entry_hash"));
                let mut v = json!({"entry_hash": hash});
                if let Some(recorded) = rec.get("entry_hash") {
                    v["matches"] = json!(recorded.as_str() == Some(hash.as_str()));
                }
                Ok(v)
            }
            "verdict" => self.verdict(r),
            "ops" => Ok(json!({"ops": ops(), "protocol_version": crate::graduation::PROTOCOL_VERSION})),
            op if crate::rings::wire::OPS.contains(&op) => self.rings.borrow_mut().handle(op, r),
            op => match crate::ladder::EVAL_OPS.iter().find(|(name, _)| *name == op) {
                Some((_, serve)) => serve(r),
                None => Err(bad("unknown_op", format!("unknown op {op:?}; known: {}", ops().join(", ")))),
            },
        }
    }

    fn policies_for<'a>(&'a self, r: &Map<String, Value>) -> Result<Cow<'a, PolicySet>, EvalError> {
        let mut set = Cow::Borrowed(&self.policies);
        match r.get("policies") {
            None | Some(Value::Null) => {}
            Some(Value::Array(p)) if p.is_empty() => {}
            Some(Value::Array(p)) => {
                set = Cow::Owned(set.with_custom(p).map_err(|e| bad("invalid_policy", e.to_string()))?);
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

    fn gate(&self, r: &Map<String, Value>, packet: bool) -> Result<Value, EvalError> {
        let class = r
            .get("action_class")
            .or_else(|| r.get("actionClass"))
            .and_then(Value::as_str)
            .ok_or_else(|| bad("invalid_request", "missing string `action_class`"))?;
        if !crate::packet::is_class_id(&crate::registry::normalize(class)) {
            return Err(bad(
                "invalid_action_class",
                format!("{class:?} is not an action class (like email.send.external)"),
            ));
        }
        let policies = self.policies_for(r)?;
        let evidence = evidence_of(r)?;
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
        };
        let workspace = match r.get("workspace") {
            None => "local",
            Some(v) => v.as_str().ok_or_else(|| bad("invalid_request", "`workspace` must be a string"))?,
        };
        let now = now_of(r)?;
        let req = GateRequest {
            action_class: class,
            context,
            approval,
            evidence: &evidence,
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
        Ok(prepare_approval_packet(&decision, &evidence, agent_id, summary))
    }

    fn posterior(&self, r: &Map<String, Value>) -> Result<Value, EvalError> {
        let class = r
            .get("action_class")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("invalid_request", "missing string `action_class`"))?;
        let canonical = self.policies.normalize(class);
        if !crate::packet::is_class_id(&canonical) {
            return Err(bad("invalid_action_class", format!("{class:?} is not an action class")));
        }
        let evidence = evidence_of(r)?;
        let threshold = match r.get("threshold") {
            None | Some(Value::Null) => self.policies.threshold(&canonical),
            Some(t) => serde_json::from_value::<Threshold>(t.clone())
                .ok()
                .filter(|t| (0.0..=1.0).contains(&t.ci_low_min))
                .ok_or_else(|| bad("invalid_request", "`threshold` must be {ci_low_min in [0,1], samples_min}"))?,
        };
        Ok(Posterior::of(&canonical, &evidence, threshold, now_of(r)?.date()).to_json())
    }
}

impl Evaluator {
    /// `verdict`: every model that applies to a packet, composed (docs/eval.md).
    fn verdict(&self, r: &Map<String, Value>) -> Result<Value, EvalError> {
        let raw = r
            .get("packet")
            .filter(|p| p.is_object())
            .ok_or_else(|| bad("invalid_request", "missing `packet` (an object)"))?;
        let bytes = serde_json::to_vec(raw).map_err(|e| bad("invalid_request", e.to_string()))?;
        let packet = crate::packet::parse_packet(&bytes, "packet").map_err(|e| bad("invalid_packet", e.to_string()))?;
        let mut policies = self.policies_for(r)?.into_owned();
        if let Some(tools) = r.get("tools") {
            let Value::Object(tools) = tools else { return Err(bad("invalid_policy", "`tools` must be an object")) };
            for (key, def) in tools {
                policies.add_tool(key, def).map_err(|e| bad("invalid_policy", e))?;
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
        let controls = crate::control::ControlState::from_json(r.get("controls").unwrap_or(&Value::Null))
            .map_err(|e| bad("invalid_request", e))?;
        let now = now_of(r)?;
        let ctx = crate::verdict::VerdictContext {
            policies: &policies,
            controls: &controls,
            now: now.unix_timestamp() as f64 + f64::from(now.nanosecond()) / 1e9,
        };
        let evidence = evidence_of(r)?;
        let chain_intact = match r.get("chain_intact") {
            None => true,
            Some(v) => v.as_bool().ok_or_else(|| bad("invalid_request", "`chain_intact` must be a boolean"))?,
        };
        let tg = crate::verdict::packet_gate(&ctx, &packet, &evidence, "local", chain_intact);
        let rate = match r.get("rate_limited") {
            None | Some(Value::Null) => None,
            Some(Value::Bool(limited)) => {
                let g = crate::verdict::Governance::of_packet(&packet);
                let ring = crate::verdict::packet_ring(&ctx, &packet, g.as_ref());
                let burst = crate::rings::RateLimiter::default().limits(ring).burst;
                Some(crate::verdict::RateOutcome {
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
            Some(Value::Object(observed)) => {
                crate::verdict::Governance::of_packet(&packet).and_then(|g| g.contract).and_then(Result::ok).map(|c| {
                    crate::ladder::revalidate(&c.preconditions, |p| {
                        observed
                            .get(&p.check_id)
                            .cloned()
                            .ok_or_else(|| format!("no observed value for {}", p.check_id))
                    })
                })
            }
            Some(_) => return Err(bad("invalid_request", "`observed` must be an object")),
        };
        let verdict = crate::verdict::evaluate(&ctx, &packet, &tg, rate.as_ref(), revalidation.as_ref());
        let mut v = verdict.to_json();
        v["packet_id"] = json!(packet.id);
        v["trust_graduation"] = tg.to_json();
        Ok(v)
    }
}

fn evidence_of(r: &Map<String, Value>) -> Result<Vec<EvidenceRow>, EvalError> {
    rows_from_json(r.get("evidence").unwrap_or(&Value::Null))
        .map_err(|(i, e)| bad("invalid_evidence", format!("evidence[{i}]: {e}")))
}

fn now_of(r: &Map<String, Value>) -> Result<OffsetDateTime, EvalError> {
    match r.get("now") {
        None | Some(Value::Null) => Ok(OffsetDateTime::now_utc()),
        Some(Value::String(s)) => crate::clock::parse_rfc3339(s)
            .ok_or_else(|| bad("invalid_request", format!("`now` is not an RFC 3339 date-time: {s:?}"))),
        Some(_) => Err(bad("invalid_request", "`now` must be an RFC 3339 string")),
    }
}

fn error_response(id: Option<Value>, e: &EvalError) -> Value {
    let mut v = json!({"error": {"code": e.code, "message": e.message}});
    if let Some(id) = id {
        v["id"] = id;
    }
    v
}

/// Runs the protocol until the input ends.
///
/// # Errors
/// I/O errors on the input or output (a closed output ends the run).
pub fn run<R: Read, W: Write>(eval: &Evaluator, input: R, mut output: W) -> io::Result<()> {
    let mut input = BufReader::with_capacity(64 * 1024, input);
    let mut line = Vec::with_capacity(4096);
    let mut out = Vec::with_capacity(4096);
    loop {
        line.clear();
        let n = input.by_ref().take(MAX_LINE_BYTES as u64 + 1).read_until(b'\n', &mut line)?;
        if n == 0 {
            break;
        }
        let response = if line.last() != Some(&b'\n') && line.len() > MAX_LINE_BYTES {
            // Skip the rest of the overlong line.
            let mut sink = Vec::new();
            loop {
                sink.clear();
                let m = input.by_ref().take(64 * 1024).read_until(b'\n', &mut sink)?;
                if m == 0 || sink.last() == Some(&b'\n') {
                    break;
                }
            }
            error_response(None, &bad("line_too_long", format!("request lines are limited to {MAX_LINE_BYTES} bytes")))
        } else {
            let trimmed = line.trim_ascii();
            if trimmed.is_empty() {
                continue;
            }
            eval.handle_line(trimmed)
        };
        out.clear();
        serde_json::to_writer(&mut out, &response).map_err(io::Error::other)?;
        out.push(b'\n');
        output.write_all(&out)?;
        // Flush unless another whole request is already buffered: never wait for input with
        // an answer held back.
        if !input.buffer().contains(&b'\n') {
            output.flush()?;
        }
    }
    output.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(e: &Evaluator, line: &str) -> Value {
        e.handle_line(line.as_bytes())
    }

    #[test]
    fn malformed_lines_get_errors_and_ids_are_echoed() {
        let e = Evaluator::default();
        assert_eq!(ask(&e, "{nope")["error"]["code"], "parse_error");
        assert_eq!(ask(&e, "[1]")["error"]["code"], "invalid_request");
        assert_eq!(ask(&e, r#"{"op":"x","id":7}"#)["error"]["code"], "unknown_op");
        assert_eq!(ask(&e, r#"{"op":"x","id":7}"#)["id"], 7);
        let d =
            ask(&e, r#"{"op":"tg.can_execute","id":"a","action_class":"payment.spend","now":"2026-05-30T12:00:00Z"}"#);
        assert_eq!((d["status"].as_str(), d["id"].as_str()), (Some("human_only"), Some("a")));
        let bad_row = r#"{"op":"tg.can_execute","action_class":"draft.compose","evidence":[{"label":"approved"}]}"#;
        assert_eq!(ask(&e, bad_row)["error"]["code"], "invalid_evidence");
    }

    #[test]
    fn hostile_rows_and_constraints_fail_closed() {
        let e = Evaluator::default();
        let row = r#"{"op":"tg.evidence_weight","row":{"action_class":"a.b","label":"x","recorded_at":"2026-11-2é"}}"#;
        assert_eq!(ask(&e, row)["error"]["code"], "invalid_evidence");
        let row = r#"{"op":"tg.evidence_weight","row":{"action_class":"a.b","label":"x","recorded_at":"yesterday"}}"#;
        assert_eq!(ask(&e, row)["error"]["code"], "invalid_evidence");
        let c = r#"{"op":"tg.can_execute","action_class":"draft.compose","context":{"constraints":{"max_amount":-5}}}"#;
        let d = ask(&e, c);
        assert_eq!((d["status"].as_str(), d["allowed"].as_bool()), (Some("blocked"), Some(false)));
        assert_eq!(d["constraints"], json!({}));
    }

    #[test]
    fn requests_can_tighten_but_not_loosen() {
        let strict = Evaluator::new(PolicySet::from_toml("strict = true").expect("policy"));
        let lax = r#"{"op":"tg.can_execute","action_class":"widget.thing","strict":false}"#;
        assert_eq!(ask(&strict, lax)["status"], "blocked");
        let tight = r#"{"op":"tg.can_execute","action_class":"widget.thing","strict":true}"#;
        assert_eq!(ask(&Evaluator::default(), tight)["status"], "blocked");
    }

    #[test]
    fn run_answers_in_order_and_survives_garbage() {
        let input = b"{\"op\":\"ops\",\"id\":1}\n\xff\xfe\n\n{\"op\":\"otg.entry_hash\",\"record\":{\"a\":1}}\n";
        let mut out = Vec::new();
        run(&Evaluator::default(), &input[..], &mut out).expect("run");
        let lines: Vec<Value> = out
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).expect("json"))
            .collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0]["id"], 1);
        assert!(lines[1]["error"]["code"].is_string());
        assert_eq!(lines[2]["entry_hash"], crate::canonical::canonical_hash(&json!({"a": 1})));
    }
}
