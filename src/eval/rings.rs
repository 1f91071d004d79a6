//! The `rings.*` ops of `warrant eval` (`docs/eval-rings.md`): one [`RingsSession`] per evaluator
//! process holds the stateful parts (elevations, rate buckets, the kill switch, quarantines,
//! isolation scopes, sagas) for the life of the process.
//!
//! Error codes, besides `invalid_request` (a missing or ill-typed field):
//! - `invalid_descriptor`: an `action` object that is not a valid [`ActionDescriptor`];
//! - `invalid_scope`: an isolation scope with a session id that is not an identifier, or a
//!   relative base path.
//!
//! Decisions are answers, not errors: a denied check, elevation, rate check or path is a normal
//! response with `allowed` / `granted` false. An error is never an allowance.

use crate::protocol::request::RequestError;
use crate::protocol::rings::action::ActionDescriptor;
use crate::protocol::rings::elevation::{ElevationError, ElevationManager, ElevationRequest, granted_ttl};
use crate::protocol::rings::enforcer::{self, ResourceType};
use crate::protocol::rings::isolation::{self, IsolationLevel, IsolationManager, IsolationScope};
use crate::protocol::rings::kill::{InFlightStep, KillReason, KillSwitch, TerminationCallback};
use crate::protocol::rings::quarantine::{DEFAULT_QUARANTINE_SECONDS, QuarantineReason, QuarantineRegistry};
use crate::protocol::rings::rate::RateLimiter;
use crate::protocol::rings::saga::{SAGA_DEFAULT_STEP_TIMEOUT_SECONDS, SagaOrchestrator, StepFailure};
use crate::protocol::rings::session::{SessionConfig, SessionParticipant};
use crate::protocol::rings::{Ring, UnixSeconds, ValidationError, from_eff_score, should_demote};
use serde::Serialize;
use serde_json::{Map, Value, json};
use std::io;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

/// The ops served by [`RingsSession::handle`].
pub const OPS: [&str; 12] = [
    "rings.assign",
    "rings.required",
    "rings.check",
    "rings.constraints",
    "rings.elevate",
    "rings.tick",
    "rings.rate_check",
    "rings.kill",
    "rings.quarantine",
    "rings.session_validate",
    "rings.path_check",
    "rings.saga",
];

/// Longest kill-callback timeout a request may set, in seconds.
pub const MAX_CALLBACK_TIMEOUT_SECONDS: f64 = 60.0;

/// The per-process state of the `rings.*` ops.
#[derive(Default)]
pub struct RingsSession {
    elevation: ElevationManager,
    rate: RateLimiter,
    kill: KillSwitch,
    quarantine: QuarantineRegistry,
    isolation: IsolationManager,
    sagas: SagaOrchestrator,
}

type Req = Map<String, Value>;

fn bad(code: &'static str, message: impl std::fmt::Display) -> RequestError {
    RequestError { code, message: message.to_string() }
}

fn invalid(message: impl std::fmt::Display) -> RequestError {
    bad("invalid_request", message)
}

fn to_json<T: Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

fn string<'a>(r: &'a Req, key: &str) -> Result<&'a str, RequestError> {
    r.get(key).and_then(Value::as_str).ok_or_else(|| invalid(format!("missing string `{key}`")))
}

fn opt_string<'a>(r: &'a Req, key: &str) -> Result<Option<&'a str>, RequestError> {
    match r.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(invalid(format!("`{key}` must be a string or null"))),
    }
}

fn boolean(r: &Req, key: &str) -> Result<bool, RequestError> {
    match r.get(key) {
        None => Ok(false),
        Some(v) => v.as_bool().ok_or_else(|| invalid(format!("`{key}` must be a boolean"))),
    }
}

fn number(r: &Req, key: &str) -> Result<Option<f64>, RequestError> {
    match r.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n.as_f64().map(Some).ok_or_else(|| invalid(format!("`{key}` must be a number"))),
        Some(_) => Err(invalid(format!("`{key}` must be a number"))),
    }
}

fn integer(r: &Req, key: &str) -> Result<Option<i64>, RequestError> {
    match r.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_i64()
            .or_else(|| v.as_u64().map(|_| i64::MAX))
            .map(Some)
            .ok_or_else(|| invalid(format!("`{key}` must be an integer"))),
    }
}

fn ring(r: &Req, key: &str) -> Result<Ring, RequestError> {
    integer(r, key)?.and_then(Ring::from_value).ok_or_else(|| invalid(format!("`{key}` must be a ring number 0-3")))
}

/// `now`: unix seconds (a number) or an RFC 3339 string; required.
fn now(r: &Req) -> Result<UnixSeconds, RequestError> {
    match r.get("now") {
        Some(Value::Number(n)) => n.as_f64().filter(|t| t.is_finite()).ok_or_else(|| invalid("`now` must be finite")),
        Some(Value::String(s)) => crate::protocol::clock::unix_seconds(s)
            .ok_or_else(|| invalid(format!("`now` is not an RFC 3339 date-time: {s:?}"))),
        _ => Err(invalid("missing `now` (unix seconds or an RFC 3339 string)")),
    }
}

fn sub_action<'a>(r: &'a Req, default: &'a str) -> Result<&'a str, RequestError> {
    Ok(opt_string(r, "action")?.unwrap_or(default))
}

fn descriptor(r: &Req) -> Result<ActionDescriptor, RequestError> {
    let v = r.get("action").ok_or_else(|| invalid("missing `action` (an action descriptor object)"))?;
    ActionDescriptor::from_json(v).map_err(|e| bad("invalid_descriptor", format!("{}: {e}", e.kind())))
}

fn unknown_action(op: &str, action: &str, known: &str) -> RequestError {
    invalid(format!("unknown `action` {action:?} for {op}; known: {known}"))
}

fn ring_json(ring: Ring) -> Value {
    json!({"ring": ring.value(), "label": ring.label()})
}

fn simulated_callback(kind: &str, timeout: Duration) -> Result<Option<TerminationCallback>, RequestError> {
    Ok(match kind {
        "none" => None,
        "ok" => Some(Box::new(|| Ok(()))),
        "fail" => Some(Box::new(|| Err(std::io::Error::other("simulated failure")))),
        // Outlives the timeout, then ends on its own.
        "timeout" => Some(Box::new(move || {
            std::thread::sleep(timeout * 2 + Duration::from_millis(50));
            Ok(())
        })),
        other => return Err(invalid(format!("`callback` must be ok, fail, timeout or none, got {other:?}"))),
    })
}

fn step_failure(outcome: &str) -> Result<Result<(), StepFailure>, RequestError> {
    match outcome {
        "ok" => Ok(Ok(())),
        "fail" => Ok(Err(StepFailure::Error("simulated failure".into()))),
        "timeout" => Ok(Err(StepFailure::Timeout)),
        other => Err(invalid(format!("an outcome must be ok, fail or timeout, got {other:?}"))),
    }
}

impl RingsSession {
    /// Serves one `rings.*` request (`op` is the request's `op`, `req` the whole request).
    ///
    /// # Errors
    /// [`RequestError`] with code `invalid_request`, `invalid_descriptor`, `invalid_scope` or
    /// `unknown_op` (an op not in [`OPS`]).
    pub fn handle(&mut self, op: &str, req: &Req) -> Result<Value, RequestError> {
        match op {
            "rings.assign" => {
                let score = number(req, "eff_score")?.ok_or_else(|| invalid("missing number `eff_score`"))?;
                let assigned = from_eff_score(score, boolean(req, "has_consensus")?);
                let mut v = ring_json(assigned);
                if req.contains_key("agent_ring") {
                    v["should_demote"] = json!(should_demote(ring(req, "agent_ring")?, score));
                }
                Ok(v)
            }
            "rings.required" => {
                let action = descriptor(req)?;
                let required = action.required_ring();
                Ok(json!({
                    "required_ring": required.value(),
                    "label": required.label(),
                    "requires_sre_witness": required == Ring::Root,
                    "risk_weight": action.risk_weight(),
                    "reversibility": action.reversibility,
                }))
            }
            "rings.check" => {
                let agent_ring = ring(req, "agent_ring")?;
                let action = descriptor(req)?;
                let score = number(req, "eff_score")?.unwrap_or(0.0);
                let result = enforcer::check(
                    agent_ring,
                    &action,
                    score,
                    boolean(req, "has_consensus")?,
                    boolean(req, "has_sre_witness")?,
                );
                Ok(to_json(&result))
            }
            "rings.constraints" => {
                let n = integer(req, "agent_ring")?.ok_or_else(|| invalid("missing integer `agent_ring`"))?;
                let effective = Ring::from_value(n).unwrap_or(Ring::Sandbox);
                let mut v = json!({
                    "ring": n,
                    "effective_ring": effective.value(),
                    "fallback": Ring::from_value(n).is_none(),
                    "constraints": enforcer::constraints_for_value(n),
                });
                if let Some(res) = opt_string(req, "resource")? {
                    let res = ResourceType::parse(res).ok_or_else(|| {
                        invalid(format!(
                            "`resource` must be network, filesystem, subprocess or tool_execution, got {res:?}"
                        ))
                    })?;
                    v["check"] = to_json(&enforcer::check_resource(effective, res));
                }
                Ok(v)
            }
            "rings.elevate" => self.elevate(req),
            "rings.tick" => {
                let t = now(req)?;
                Ok(json!({
                    "expired_elevations": self.elevation.tick(t),
                    "expired_quarantines": self.quarantine.tick(t),
                }))
            }
            "rings.rate_check" => self.rate_check(req),
            "rings.kill" => self.kill(req),
            "rings.quarantine" => self.quarantine(req),
            "rings.session_validate" => session_validate(req),
            "rings.path_check" => self.path_check(req),
            "rings.saga" => self.saga(req),
            other => Err(bad("unknown_op", format!("unknown op {other:?}; known: {}", OPS.join(", ")))),
        }
    }

    fn elevate(&mut self, r: &Req) -> Result<Value, RequestError> {
        let t = now(r)?;
        match sub_action(r, "request")? {
            "request" => {
                let ttl = integer(r, "ttl_seconds")?.unwrap_or(0);
                let req = ElevationRequest {
                    agent_did: string(r, "agent_did")?,
                    session_id: string(r, "session_id")?,
                    current_ring: ring(r, "agent_ring")?,
                    target_ring: ring(r, "target_ring")?,
                    ttl_seconds: ttl,
                    attestation: opt_string(r, "attestation")?,
                    reason: opt_string(r, "reason")?.unwrap_or(""),
                    trust_score: number(r, "trust_score")?,
                };
                Ok(match self.elevation.request(&req, t) {
                    Ok(e) => json!({"granted": true, "ttl_seconds": granted_ttl(ttl), "elevation": e}),
                    Err(e) => denial(&e),
                })
            }
            "revoke" => Ok(match self.elevation.revoke(string(r, "elevation_id")?) {
                Ok(()) => json!({"revoked": true}),
                Err(e) => {
                    let mut v = denial(&e);
                    v["revoked"] = json!(false);
                    v
                }
            }),
            "effective" => {
                let (agent, session) = (string(r, "agent_did")?, string(r, "session_id")?);
                let base = ring(r, "agent_ring")?;
                let e = self.elevation.active_elevation(agent, session, t);
                Ok(json!({
                    "effective_ring": self.elevation.effective_ring(agent, session, base, t).value(),
                    "elevation": e,
                    "remaining_seconds": e.map(|e| e.remaining_seconds(t)),
                }))
            }
            "register_child" => {
                let reg = self.elevation.register_child(
                    string(r, "parent_did")?,
                    string(r, "child_did")?,
                    ring(r, "parent_ring")?,
                    t,
                );
                Ok(to_json(&reg))
            }
            "active" => Ok(json!({"active": self.elevation.active_elevations(t)})),
            other => Err(unknown_action("rings.elevate", other, "request, revoke, effective, register_child, active")),
        }
    }

    fn rate_check(&mut self, r: &Req) -> Result<Value, RequestError> {
        let t = now(r)?;
        let (agent, session) = (string(r, "agent_did")?, string(r, "session_id")?);
        let mut v = match sub_action(r, "check")? {
            "check" => {
                // A negative cost would put tokens back: refused, never a refund.
                let cost = number(r, "cost")?.unwrap_or(1.0);
                if cost < 0.0 {
                    return Err(invalid(format!("`cost` must be a number >= 0, got {cost}")));
                }
                match self.rate.check(agent, session, ring(r, "agent_ring")?, cost, t) {
                    Ok(()) => json!({"allowed": true}),
                    Err(e) => json!({"allowed": false, "message": e.to_string()}),
                }
            }
            "update_ring" => {
                self.rate.update_ring(agent, session, ring(r, "agent_ring")?, t);
                json!({"updated": true})
            }
            "stats" => json!({}),
            other => return Err(unknown_action("rings.rate_check", other, "check, update_ring, stats")),
        };
        v["stats"] = to_json(&self.rate.stats(agent, session, t));
        v["tracked_agents"] = json!(self.rate.tracked_agents());
        Ok(v)
    }

    fn kill(&mut self, r: &Req) -> Result<Value, RequestError> {
        let t = now(r)?;
        let agent = string(r, "agent_did")?;
        match sub_action(r, "kill")? {
            "register_agent" => {
                let cb = simulated_callback(string(r, "callback")?, self.kill.callback_timeout())?;
                self.kill.register_agent(agent, cb);
                Ok(json!({"registered": agent}))
            }
            "register_substitute" => {
                let session = string(r, "session_id")?;
                self.kill.register_substitute(session, agent);
                Ok(json!({"session_id": session, "substitutes": self.kill.substitutes(session)}))
            }
            "unregister_substitute" => {
                let session = string(r, "session_id")?;
                self.kill.unregister_substitute(session, agent);
                Ok(json!({"session_id": session, "substitutes": self.kill.substitutes(session)}))
            }
            "kill" => {
                let session = string(r, "session_id")?;
                let reason = match opt_string(r, "reason")? {
                    None => KillReason::Manual,
                    Some(s) => KillReason::parse(s).ok_or_else(|| invalid(format!("unknown kill `reason` {s:?}")))?,
                };
                let steps: Vec<InFlightStep> = match r.get("in_flight_steps") {
                    None | Some(Value::Null) => Vec::new(),
                    Some(v) => serde_json::from_value(v.clone()).map_err(|e| {
                        invalid(format!("`in_flight_steps` must be an array of {{step_id, saga_id}} objects: {e}"))
                    })?,
                };
                let saved = self.kill.callback_timeout();
                let timeout = match number(r, "timeout_seconds")? {
                    None => saved,
                    Some(s) if s > 0.0 && s <= MAX_CALLBACK_TIMEOUT_SECONDS => Duration::from_secs_f64(s),
                    Some(_) => return Err(invalid("`timeout_seconds` must be in (0, 60]")),
                };
                if let Some(kind) = opt_string(r, "callback")? {
                    self.kill.register_agent(agent, simulated_callback(kind, timeout)?);
                }
                self.kill.set_callback_timeout(timeout);
                let details = opt_string(r, "details")?.unwrap_or("");
                let result = self.kill.kill(
                    agent,
                    session,
                    reason,
                    &steps,
                    details,
                    t,
                    &crate::store::termination::run_with_timeout,
                );
                self.kill.set_callback_timeout(saved);
                let mut v = to_json(&result);
                v["total_kills"] = json!(self.kill.total_kills());
                v["total_handoffs"] = json!(self.kill.total_handoffs());
                Ok(v)
            }
            other => Err(unknown_action(
                "rings.kill",
                other,
                "kill, register_agent, register_substitute, unregister_substitute",
            )),
        }
    }

    fn quarantine(&mut self, r: &Req) -> Result<Value, RequestError> {
        let t = now(r)?;
        let agent = string(r, "agent_did")?;
        let mut v = match sub_action(r, "quarantine")? {
            "quarantine" => {
                let reason = match opt_string(r, "reason")? {
                    None => QuarantineReason::Manual,
                    Some(s) => QuarantineReason::parse(s)
                        .ok_or_else(|| invalid(format!("unknown quarantine `reason` {s:?}")))?,
                };
                // Absent: the spec's 300 s. "Until released" is asked for explicitly with
                // `until_released: true`, never by an explicit null.
                let until_released = boolean(r, "until_released")?;
                let duration = match (r.get("duration_seconds"), until_released) {
                    (None, false) => Some(DEFAULT_QUARANTINE_SECONDS),
                    (None, true) => None,
                    (Some(Value::Null), _) => {
                        return Err(invalid(
                            "`duration_seconds` must be a positive number (omit it for the default 300 s; `until_released: true` for no expiry)",
                        ));
                    }
                    (Some(_), true) => {
                        return Err(invalid("give either `duration_seconds` or `until_released: true`, not both"));
                    }
                    (Some(_), false) => number(r, "duration_seconds")?,
                };
                let details = opt_string(r, "details")?.unwrap_or("");
                let record = self
                    .quarantine
                    .quarantine(agent, string(r, "session_id")?, reason, details, duration, t)
                    .map_err(|e| invalid(e.to_string()))?;
                json!({"record": record})
            }
            "release" => json!({"released": self.quarantine.release(agent, opt_string(r, "session_id")?, t)}),
            "status" => json!({"records": self.quarantine.history(Some(agent), None)}),
            other => return Err(unknown_action("rings.quarantine", other, "quarantine, release, status")),
        };
        v["quarantined"] = json!(self.quarantine.is_quarantined(agent, t));
        Ok(v)
    }

    fn path_check(&mut self, r: &Req) -> Result<Value, RequestError> {
        let session = string(r, "session_id")?;
        let scope_error = |e: ValidationError| bad("invalid_scope", e.to_string());
        let level = match opt_string(r, "isolation_level")? {
            None => None,
            Some(s) => Some(IsolationLevel::parse(s).ok_or_else(|| {
                invalid(format!("`isolation_level` must be snapshot, read_committed or serializable, got {s:?}"))
            })?),
        };
        let new_scope = |r: &Req| -> Result<IsolationScope, RequestError> {
            let base = opt_string(r, "base_path")?.unwrap_or(isolation::DEFAULT_BASE_PATH);
            let agent = opt_string(r, "agent_did")?.unwrap_or("");
            let mut scope =
                IsolationScope::new(session, agent, base, level.unwrap_or_default()).map_err(scope_error)?;
            if let Some(grants) = r.get("granted_sessions") {
                let grants = grants.as_array().ok_or_else(|| invalid("`granted_sessions` must be an array"))?;
                for g in grants {
                    let g = g.as_str().ok_or_else(|| invalid("`granted_sessions` must hold strings"))?;
                    scope.grant_access(g).map_err(scope_error)?;
                }
            }
            Ok(scope)
        };
        match sub_action(r, "check")? {
            "check" => {
                let path = Path::new(string(r, "path")?);
                let one_shot = ["base_path", "isolation_level", "granted_sessions"].iter().any(|k| r.contains_key(*k));
                let (scope, source) = if one_shot {
                    (Some(new_scope(r)?), "request")
                } else {
                    (self.isolation.scope(session).cloned(), "stored")
                };
                let allowed = scope.as_ref().is_some_and(|s| s.is_path_allowed(path, &canonicalize));
                Ok(json!({
                    "allowed": allowed,
                    "scope": if scope.is_some() { source } else { "none" },
                    "canonical_path": canonicalize(path).ok(),
                    "working_directory": scope.map(|s| s.working_directory()),
                }))
            }
            "create_scope" => Ok(to_json(self.isolation.insert_scope(new_scope(r)?))),
            "grant" => {
                let granted = self.isolation.grant_cross_session_access(session, string(r, "target_session_id")?);
                Ok(json!({"granted": granted}))
            }
            "revoke" => {
                let target = string(r, "target_session_id")?;
                let mut scope =
                    self.isolation.scope(session).cloned().ok_or_else(|| invalid("no scope for `session_id`"))?;
                scope.revoke_access(target);
                Ok(to_json(self.isolation.insert_scope(scope)))
            }
            "remove_scope" => {
                self.isolation.remove_scope(session);
                Ok(json!({"removed": session, "active_sessions": self.isolation.active_sessions()}))
            }
            other => Err(unknown_action("rings.path_check", other, "check, create_scope, grant, revoke, remove_scope")),
        }
    }

    fn saga(&mut self, r: &Req) -> Result<Value, RequestError> {
        let t = now(r)?;
        let session = string(r, "session_id")?;
        let steps = r.get("steps").and_then(Value::as_array).ok_or_else(|| invalid("missing array `steps`"))?;
        // Parse the whole script before touching any state.
        struct Script<'a> {
            action_id: &'a str,
            agent_did: &'a str,
            execute_api: &'a str,
            undo_api: Option<&'a str>,
            timeout: u64,
            retries: u32,
            outcomes: Vec<Result<(), StepFailure>>,
            compensation: Result<(), StepFailure>,
        }
        let mut script = Vec::with_capacity(steps.len());
        for (i, s) in steps.iter().enumerate() {
            let s = s.as_object().ok_or_else(|| invalid(format!("steps[{i}] must be an object")))?;
            let at = |e: RequestError| invalid(format!("steps[{i}]: {}", e.message));
            let count = |key: &str, default: u64, max: u64| -> Result<u64, RequestError> {
                match integer(s, key).map_err(at)? {
                    None => Ok(default),
                    Some(n) => u64::try_from(n)
                        .ok()
                        .filter(|n| *n <= max)
                        .ok_or_else(|| invalid(format!("steps[{i}]: `{key}` must be an integer in [0, {max}]"))),
                }
            };
            let outcomes = match s.get("outcomes") {
                None => vec![Ok(())],
                Some(Value::Array(a)) if !a.is_empty() => a
                    .iter()
                    .map(|o| o.as_str().ok_or_else(|| invalid("outcomes are strings")).and_then(step_failure))
                    .collect::<Result<_, _>>()
                    .map_err(at)?,
                Some(_) => return Err(invalid(format!("steps[{i}]: `outcomes` must be a non-empty array"))),
            };
            script.push(Script {
                action_id: string(s, "action_id").map_err(at)?,
                agent_did: string(s, "agent_did").map_err(at)?,
                execute_api: string(s, "execute_api").map_err(at)?,
                undo_api: opt_string(s, "undo_api").map_err(at)?,
                timeout: count("timeout_seconds", SAGA_DEFAULT_STEP_TIMEOUT_SECONDS, 86_400)?,
                retries: u32::try_from(count("max_retries", 0, 10)?).unwrap_or(0),
                outcomes,
                compensation: step_failure(opt_string(s, "compensation").map_err(at)?.unwrap_or("ok")).map_err(at)?,
            });
        }
        let saga = self.sagas.create_saga(session, t);
        let ids: Vec<String> = script
            .iter()
            .map(|s| saga.add_step(s.action_id, s.agent_did, s.execute_api, s.undo_api, s.timeout, s.retries))
            .collect();
        let mut runs = Vec::new();
        let mut failed = false;
        for (s, id) in script.iter().zip(&ids) {
            // Attempt n takes outcomes[n], the last outcome repeating.
            let last = s.outcomes.len() - 1;
            let run = saga.execute_step(id, |attempt| s.outcomes[(attempt as usize).min(last)].clone(), t);
            runs.push(json!({
                "step_id": id,
                "attempts": run.attempts,
                "retry_delays": run.retry_delays,
                "error": run.result.as_ref().err().map(ToString::to_string),
            }));
            if run.result.is_err() {
                failed = true;
                break;
            }
        }
        let failed_compensations = if failed {
            let by_id: std::collections::HashMap<&str, &Result<(), StepFailure>> =
                ids.iter().map(String::as_str).zip(script.iter().map(|s| &s.compensation)).collect();
            saga.compensate(|step| by_id.get(step.step_id.as_str()).map_or(Ok(()), |c| (*c).clone()), t)
                .map_err(|e| invalid(e.to_string()))?
        } else {
            saga.transition(crate::protocol::rings::saga::SagaState::Completed, t)
                .map_err(|e| invalid(e.to_string()))?;
            Vec::new()
        };
        Ok(json!({"saga": saga.to_dict(), "runs": runs, "failed_compensations": failed_compensations}))
    }
}

fn denial(e: &ElevationError) -> Value {
    json!({"granted": false, "denial_reason": e.reason(), "message": e.to_string()})
}

fn session_validate(r: &Req) -> Result<Value, RequestError> {
    let object = |key: &str| match r.get(key) {
        None => Ok(None),
        Some(Value::Object(m)) => Ok(Some(m)),
        Some(_) => Err(invalid(format!("`{key}` must be an object"))),
    };
    let (config, participant) = (object("config")?, object("participant")?);
    if config.is_none() && participant.is_none() {
        return Err(invalid("give `config` and/or `participant`"));
    }
    let failure = |field: &str, e: ValidationError| json!({"valid": false, "field": field, "error_type": e.kind(), "message": e.to_string()});
    let mut v = json!({"valid": true});
    if let Some(c) = config {
        match SessionConfig::from_json(c) {
            Ok(c) => v["config"] = to_json(&c),
            Err(e) => return Ok(failure("config", e)),
        }
    }
    if let Some(p) = participant {
        let joined = match r.get("now") {
            None => None,
            Some(_) => Some(now(r)?),
        };
        match SessionParticipant::from_json(p, joined.unwrap_or(0.0)) {
            Ok(p) => {
                let mut pj = to_json(&p);
                pj["joined_at"] = json!(joined);
                v["participant"] = pj;
            }
            Err(e) => return Ok(failure("participant", e)),
        }
    }
    Ok(v)
}

/// Canonicalises an absolute path the way the kernel would resolve it, without requiring it to
/// exist: components are taken left to right; `.` is skipped; `..` goes to the parent of what has
/// been resolved so far (which is physical, because existing components are resolved); a name
/// that exists is resolved with [`std::fs::canonicalize`] (following symlinks); a name that does
/// not exist is appended as is.
///
/// # Errors
/// A relative path (`InvalidInput`); a dangling or looping symlink, or any error other than
/// "not found" while resolving (fail closed: the caller denies).
pub fn canonicalize(path: &Path) -> io::Result<PathBuf> {
    if !path.is_absolute() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "relative path"));
    }
    let mut resolved = PathBuf::from("/");
    for component in path.components() {
        match component {
            Component::Prefix(_) | Component::RootDir => resolved = PathBuf::from(component.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                resolved.pop();
            }
            Component::Normal(name) => {
                let candidate = resolved.join(name);
                match std::fs::canonicalize(&candidate) {
                    Ok(real) => resolved = real,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {
                        // A symlink whose target is missing would let a write land outside.
                        if std::fs::symlink_metadata(&candidate).is_ok() {
                            return Err(io::Error::other("dangling symlink"));
                        }
                        resolved = candidate;
                    }
                    Err(e) => return Err(e),
                }
            }
        }
    }
    Ok(resolved)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    const DOC: &str = include_str!("../../docs/eval-rings.md");

    /// The fenced ```json blocks of a markdown text, parsed, in order.
    fn json_blocks(md: &str) -> Vec<Value> {
        let mut blocks = Vec::new();
        let mut current: Option<String> = None;
        for line in md.lines() {
            match (current.as_mut(), line.trim_end()) {
                (None, "```json") => current = Some(String::new()),
                (Some(b), "```") => {
                    blocks.push(serde_json::from_str(b).unwrap_or_else(|e| panic!("doc JSON: {e}\n{b}")));
                    current = None;
                }
                (Some(b), l) => {
                    b.push_str(l);
                    b.push('\n');
                }
                (None, _) => {}
            }
        }
        blocks
    }

    fn answer(s: &mut RingsSession, req: &Value) -> Value {
        let r = req.as_object().expect("request object");
        let op = r.get("op").and_then(Value::as_str).expect("op");
        s.handle(op, r).unwrap_or_else(|e| json!({"error": {"code": e.code, "message": e.message}}))
    }

    #[test]
    fn documented_examples_are_real_outputs() {
        let blocks = json_blocks(DOC);
        assert!(blocks.len() >= 2 * OPS.len() && blocks.len().is_multiple_of(2), "request/response pairs");
        let mut session = RingsSession::default();
        let mut seen = BTreeSet::new();
        for pair in blocks.chunks(2) {
            seen.insert(pair[0]["op"].as_str().expect("op").to_owned());
            assert_eq!(answer(&mut session, &pair[0]), pair[1], "request {}", pair[0]);
        }
        assert_eq!(seen, OPS.iter().map(|s| (*s).to_owned()).collect::<BTreeSet<_>>(), "one example per op");
    }

    #[test]
    fn ill_formed_requests_are_errors() {
        let mut s = RingsSession::default();
        let cases = [
            (json!({"op": "rings.tick"}), "invalid_request"),
            (json!({"op": "rings.tick", "now": "yesterday"}), "invalid_request"),
            (json!({"op": "rings.assign"}), "invalid_request"),
            (json!({"op": "rings.assign", "eff_score": "0.9"}), "invalid_request"),
            (json!({"op": "rings.assign", "eff_score": 0.9, "has_consensus": 1}), "invalid_request"),
            (json!({"op": "rings.check", "agent_ring": 4, "action": {}}), "invalid_request"),
            (json!({"op": "rings.check", "agent_ring": true, "action": {}}), "invalid_request"),
            (json!({"op": "rings.check", "agent_ring": 1, "action": {"action_id": "a"}}), "invalid_descriptor"),
            (json!({"op": "rings.constraints", "agent_ring": 1, "resource": "gpu"}), "invalid_request"),
            (json!({"op": "rings.elevate", "action": "grant", "now": 0}), "invalid_request"),
            (
                json!({"op": "rings.rate_check", "agent_did": "a", "session_id": "s", "agent_ring": 3}),
                "invalid_request",
            ),
            (
                json!({"op": "rings.rate_check", "agent_did": "a", "session_id": "s", "agent_ring": 3, "cost": -1, "now": 0}),
                "invalid_request",
            ),
            (
                json!({"op": "rings.quarantine", "agent_did": "a", "session_id": "s", "duration_seconds": null, "now": 0}),
                "invalid_request",
            ),
            (
                json!({"op": "rings.quarantine", "agent_did": "a", "session_id": "s", "duration_seconds": 60, "until_released": true, "now": 0}),
                "invalid_request",
            ),
            (
                json!({"op": "rings.kill", "agent_did": "a", "session_id": "s", "callback": "maybe", "now": 0}),
                "invalid_request",
            ),
            (
                json!({"op": "rings.kill", "agent_did": "a", "session_id": "s", "timeout_seconds": 0, "now": 0}),
                "invalid_request",
            ),
            (
                json!({"op": "rings.quarantine", "agent_did": "a", "session_id": "s", "duration_seconds": -1, "now": 0}),
                "invalid_request",
            ),
            (json!({"op": "rings.session_validate"}), "invalid_request"),
            (
                json!({"op": "rings.path_check", "session_id": "/etc", "path": "/etc/x", "base_path": "/"}),
                "invalid_scope",
            ),
            (json!({"op": "rings.path_check", "session_id": "s", "path": "/x", "base_path": "rel"}), "invalid_scope"),
            (
                json!({"op": "rings.saga", "session_id": "s", "now": 0, "steps": [{"action_id": "a"}]}),
                "invalid_request",
            ),
            (json!({"op": "rings.nope"}), "unknown_op"),
        ];
        for (req, code) in cases {
            assert_eq!(answer(&mut s, &req)["error"]["code"], code, "{req}");
        }
    }

    #[test]
    fn stateful_ops_keep_state_across_requests() {
        let mut s = RingsSession::default();
        let rate = json!({"op": "rings.rate_check", "agent_did": "a", "session_id": "s", "agent_ring": 3, "now": 100});
        for _ in 0..10 {
            assert_eq!(answer(&mut s, &rate)["allowed"], true);
        }
        assert_eq!(answer(&mut s, &rate)["allowed"], false);
        let later =
            json!({"op": "rings.rate_check", "agent_did": "a", "session_id": "s", "agent_ring": 3, "now": 100.2});
        assert_eq!(answer(&mut s, &later)["allowed"], true);
        let scope = json!({"op": "rings.path_check", "action": "create_scope", "session_id": "s1", "isolation_level": "read_committed"});
        assert_eq!(answer(&mut s, &scope)["isolation_level"], "read_committed");
        let grant = json!({"op": "rings.path_check", "action": "grant", "session_id": "s1", "target_session_id": "s2"});
        assert_eq!(answer(&mut s, &grant)["granted"], true);
        let check = json!({"op": "rings.path_check", "session_id": "s1", "path": "/var/agt/sessions/s2/f"});
        assert_eq!(answer(&mut s, &check)["allowed"], true);
        let q = json!({"op": "rings.quarantine", "agent_did": "a", "session_id": "s", "now": 0});
        assert_eq!(answer(&mut s, &q)["record"]["expires_at"], 300.0);
        let status = json!({"op": "rings.quarantine", "action": "status", "agent_did": "a", "now": 299});
        assert_eq!(answer(&mut s, &status)["quarantined"], true);
        let tick = json!({"op": "rings.tick", "now": 300});
        assert_eq!(answer(&mut s, &tick)["expired_quarantines"].as_array().map(Vec::len), Some(1));
        let kill = json!({"op": "rings.kill", "agent_did": "k", "session_id": "s", "callback": "ok", "now": 0});
        assert_eq!(answer(&mut s, &kill)["terminated"], true);
        let again = json!({"op": "rings.kill", "agent_did": "k", "session_id": "s", "now": 0});
        let again = answer(&mut s, &again);
        assert_eq!((again["terminated"].as_bool(), again["total_kills"].as_u64()), (Some(false), Some(2)));
        let timeout = json!({"op": "rings.kill", "agent_did": "t", "session_id": "s", "callback": "timeout", "timeout_seconds": 0.01, "now": 0});
        assert_eq!(answer(&mut s, &timeout)["terminated"], false);
    }
}
