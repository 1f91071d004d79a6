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

use crate::protocol::chain::{self, VerifyOptions};
use crate::protocol::chain_evidence::ChainEvidence;
use crate::protocol::graduation::evidence::{EvidenceIndex, EvidenceRow, rows_from_json};
use crate::protocol::graduation::gate::{AgentStanding, GateRequest, can_execute};
use crate::protocol::graduation::policy::{PolicySet, Threshold};
use crate::protocol::graduation::posterior::Posterior;
use crate::protocol::graduation::receipt::prepare_approval_packet;
use crate::protocol::keys::PinnedKeys;
use crate::protocol::rings::wire::RingsSession;
use crate::store::spool::{Spool, VerifiedView};
use serde_json::{Map, Value, json};
use std::borrow::Cow;
use std::cell::RefCell;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::rc::Rc;
use time::OffsetDateTime;

/// Longest request line (1 MiB); longer lines are answered with `line_too_long` and skipped.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// The Trust Graduation, OpenTrustGraph and composition ops this module serves itself; the
/// tier and ladder ops are [`crate::protocol::ladder::EVAL_OPS`], the ring ops [`crate::protocol::rings::wire::OPS`].
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
    all.extend(crate::protocol::ladder::EVAL_OPS.iter().map(|(name, _)| *name));
    all.extend(crate::protocol::rings::wire::OPS);
    all
}

/// An error response: a stable `code` and a sentence ([`crate::protocol::request::RequestError`], the
/// protocol's, which the models' request readers return).
pub type EvalError = crate::protocol::request::RequestError;

fn bad(code: &'static str, message: impl Into<String>) -> EvalError {
    EvalError { code, message: message.into() }
}

/// Serves requests against a policy set (built-in classes plus `policy.toml`). The stateful
/// ring ops (elevation, rate limits, kill switch, quarantine, sagas) keep their state here for
/// the life of the evaluator: one `warrant eval` process.
#[derive(Default)]
pub struct Evaluator {
    policies: PolicySet,
    /// The spool whose verified chain is the evidence of every gate and posterior (the
    /// console's evidence); `None`: only the rows a request carries.
    spool: Option<SpoolEvidence>,
    rings: RefCell<RingsSession>,
    /// Lines whose answer failed with an internal error (a panic caught by [`run`]); after one,
    /// the stateful ring ops refuse to answer, since their state may be half-updated.
    internal_errors: std::cell::Cell<usize>,
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
        Self { policies, spool: None, rings: RefCell::default(), internal_errors: std::cell::Cell::new(0) }
    }

    /// This evaluator reading the evidence of `spool`'s chain, verified under `pinned` (or the
    /// reason the pinned keys could not be loaded, which fails the chain closed), as the console
    /// does: the principal's signed decisions and the receipts recorded in the chain. The chain
    /// is verified again whenever its file changes. A request's inline `evidence` rows add to
    /// the chain's; a chain that does not verify makes every gate `blocked` (`chain_intact`
    /// false) and every posterior `chain_intact: false`, never graduation-ready.
    #[must_use]
    pub fn with_spool(mut self, spool: Spool, pinned: Result<PinnedKeys, String>) -> Self {
        self.spool = Some(SpoolEvidence {
            spool,
            pinned,
            gateways: crate::protocol::keys::GatewayKeys::default(),
            receipts: RefCell::new(crate::store::spool::Scanner::new()),
            loaded: RefCell::new(None),
        });
        self
    }

    /// With the spool of [`Evaluator::with_spool`], the receipts in its `receipts/` that one of
    /// `gateways` signed count as observed outcomes (provenance `receipt`), with the chain's
    /// evidence, as in the console. Without this call no receipt file is evidence.
    #[must_use]
    pub fn with_gateway_keys(mut self, gateways: crate::protocol::keys::GatewayKeys) -> Self {
        if let Some(s) = self.spool.as_mut() {
            s.receipts = RefCell::new(crate::store::spool::Scanner::new().with_gateway_keys(gateways.clone()));
            s.gateways = gateways;
        }
        self
    }

    /// The spool chain's evidence as of now (verified again when the chain file changed), or
    /// `None` when this evaluator reads no spool.
    fn chain_evidence(&self) -> Option<Rc<ChainSnapshot>> {
        self.spool.as_ref().map(SpoolEvidence::current)
    }

    /// How many lines [`run`] answered with `internal_error` (a bug caught, never an answer
    /// that allows anything). `warrant eval` exits 1 when any did.
    #[must_use]
    pub fn internal_errors(&self) -> usize {
        self.internal_errors.get()
    }

    /// [`Evaluator::respond`], catching a panic: the answers already in `out` stay, this line's
    /// partial answer is dropped and replaced by an `internal_error` (its id echoed when the line
    /// parses), and the ring state is no longer trusted (fail closed).
    pub fn respond_guarded(&self, line: &[u8], out: &mut Vec<u8>) {
        let mark = out.len();
        let answered = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.respond(line, &mut *out)));
        if answered.is_err() {
            out.truncate(mark);
            self.internal_errors.set(self.internal_errors.get() + 1);
            let id = match crate::protocol::canonical::parse_strict(line) {
                Ok(Value::Object(m)) => m.get("id").cloned(),
                _ => None,
            };
            let e = bad(
                "internal_error",
                "warrant failed answering this request (a bug, reported on stderr); nothing was decided",
            );
            // Writing a `Value` into a `Vec` cannot fail.
            let _ = serde_json::to_writer(&mut *out, &error_response(id, &e));
            out.push(b'\n');
        }
    }

    /// Answers one request line (without its newline). Never panics on input.
    #[must_use]
    pub fn handle_line(&self, line: &[u8]) -> Value {
        let request = match crate::protocol::canonical::parse_untrusted(line) {
            Ok(Value::Object(m)) => m,
            Ok(_) => return error_response(None, &bad("invalid_request", "a request must be a JSON object")),
            Err(e) => return error_response(refused_line_id(line), &bad("parse_error", e)),
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

    /// Appends the response to one request line (without its newline) to `out`, with its
    /// newline: the same bytes as serializing [`Evaluator::handle_line`]'s answer. A
    /// `tg.can_execute` request in the usual shape is read into typed fields and its decision
    /// written straight into `out` (no intermediate `Value`s); anything else, including every
    /// request that ends in an error, takes the general path.
    pub fn respond(&self, line: &[u8], out: &mut Vec<u8>) {
        if !self.fast_can_execute(line, out) {
            let response = self.handle_line(line);
            // Writing a `Value` into a `Vec` cannot fail.
            let _ = serde_json::to_writer(&mut *out, &response);
        }
        out.push(b'\n');
    }

    /// The fast path of `tg.can_execute`: false (and nothing written) unless the line is a
    /// strict JSON object whose op is `tg.can_execute` and every member the gate reads has the
    /// shape it accepts without error, with no custom policies and no strictness to add.
    fn fast_can_execute(&self, line: &[u8], out: &mut Vec<u8>) -> bool {
        use serde::Deserializer as _;
        // An integer outside 64 bits is refused by `parse_untrusted` on the general path.
        if crate::protocol::canonical::check_integer_literals(line).is_err() {
            return false;
        }
        let mut de = serde_json::Deserializer::from_slice(line);
        let Ok(g) = (&mut de).deserialize_map(FastGateVisitor) else { return false };
        if de.end().is_err() || !g.op {
            return false;
        }
        let Some(class) = g.action_class.as_deref().or(g.action_class_camel.as_deref()) else { return false };
        if !request_class_ok(class) || g.policies || (g.strict == Some(true) && !self.policies.strict) {
            return false;
        }
        let chain = self.chain_evidence();
        let index = combined_index(chain.as_deref(), g.evidence.as_deref());
        let empty = Value::Object(Map::new());
        let context = match &g.context {
            None | Some(Value::Null) => &empty,
            Some(c @ Value::Object(_)) => c,
            Some(_) => return false,
        };
        let approval = match &g.approval {
            None | Some(Value::Null) => None,
            Some(a @ Value::Object(_)) => Some(a),
            Some(_) => return false,
        };
        let agent = match g.agent_status.as_deref().map(AgentStanding::parse) {
            None => AgentStanding::Active,
            Some(Some(a)) => a,
            Some(None) => return false,
        };
        let now = match &g.now {
            None | Some(None) => OffsetDateTime::now_utc(),
            Some(Some(s)) => match crate::protocol::clock::parse_rfc3339(s) {
                Some(t) => t,
                None => return false,
            },
        };
        let req = GateRequest {
            action_class: class,
            context,
            approval,
            evidence: &index,
            workspace: g.workspace.as_deref().unwrap_or("local"),
            now,
            agent,
            chain_intact: g.chain_intact.unwrap_or(true) && chain.as_ref().is_none_or(|c| c.broken.is_none()),
        };
        can_execute(&self.policies, &req).write_json(g.id.as_ref(), out).is_ok()
    }

    /// Answers one parsed request.
    ///
    /// # Errors
    /// [`EvalError`] for anything that cannot be served.
    pub fn handle(&self, r: &Map<String, Value>) -> Result<Value, EvalError> {
        let op = r.get("op").and_then(Value::as_str).ok_or_else(|| bad("invalid_request", "missing string `op`"))?;
        let (r, deprecated) = canonical_spellings(op, r)?;
        let mut answer = self.handle_canonical(op, &r)?;
        if !deprecated.is_empty()
            && let Value::Object(m) = &mut answer
        {
            m.insert("deprecated".into(), json!(deprecated));
        }
        Ok(answer)
    }

    /// [`Evaluator::handle`] for a request whose fields are spelled canonically.
    fn handle_canonical(&self, op: &str, r: &Map<String, Value>) -> Result<Value, EvalError> {
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
                let hash = crate::protocol::canonical::prefixed(&crate::protocol::canonical::canonical_digest_without(
                    rec,
                    "entry_hash",
                ));
                let mut v = json!({"entry_hash": hash});
                if let Some(recorded) = rec.get("entry_hash") {
                    v["matches"] = json!(recorded.as_str() == Some(hash.as_str()));
                }
                Ok(v)
            }
            "verdict" => self.verdict(r),
            "ops" => Ok(json!({"ops": ops(), "protocol_version": crate::protocol::graduation::PROTOCOL_VERSION})),
            op if crate::protocol::rings::wire::OPS.contains(&op) => {
                if self.internal_errors.get() > 0 {
                    return Err(bad(
                        "internal_error",
                        "the ring state may be incomplete after an internal error on an earlier line: restart `warrant eval`",
                    ));
                }
                self.rings.borrow_mut().handle(op, r)
            }
            "ladder.gate" => {
                // A tool the host registers keeps at least its floor (`docs/eval.md`, Request
                // policies only tighten).
                let host_floor = r
                    .get("tool")
                    .and_then(Value::as_str)
                    .and_then(|t| self.policies.tool(t))
                    .map(|t| t.required_trust_level.unwrap_or(0));
                match host_floor {
                    Some(floor)
                        if r.get("required_trust_level")
                            .and_then(Value::as_u64)
                            .is_none_or(|f| f < u64::from(floor)) =>
                    {
                        let mut raised = r.clone();
                        raised.insert("required_trust_level".into(), json!(floor));
                        crate::protocol::ladder::eval_ladder_gate(&raised)
                    }
                    _ => crate::protocol::ladder::eval_ladder_gate(r),
                }
            }
            op => match crate::protocol::ladder::EVAL_OPS.iter().find(|(name, _)| *name == op) {
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

    fn gate(&self, r: &Map<String, Value>, packet: bool) -> Result<Value, EvalError> {
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

    fn posterior(&self, r: &Map<String, Value>) -> Result<Value, EvalError> {
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

impl Evaluator {
    /// `verdict`: every model that applies to a packet, composed (docs/eval.md).
    fn verdict(&self, r: &Map<String, Value>) -> Result<Value, EvalError> {
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

/// The identity of a chain file's current content (length, modification and change times,
/// inode), as the console's watcher keys its re-verification; `None` when there is no file.
type ChainStamp = (u64, std::time::SystemTime, i64, i64, u64);

fn chain_stamp(spool: &Spool) -> Option<ChainStamp> {
    use std::os::unix::fs::MetadataExt as _;
    let m = std::fs::symlink_metadata(spool.chain_path()).ok()?;
    Some((m.len(), m.modified().ok()?, m.ctime(), m.ctime_nsec(), m.ino()))
}

/// A spool read for its chain's evidence ([`Evaluator::with_spool`]).
struct SpoolEvidence {
    spool: Spool,
    pinned: Result<PinnedKeys, String>,
    /// The gateway keys whose signed receipts are observed outcomes ([`Evaluator::with_gateway_keys`]).
    gateways: crate::protocol::keys::GatewayKeys,
    /// Reads `receipts/` (each file once per version) when there are gateway keys.
    receipts: RefCell<crate::store::spool::Scanner>,
    /// The last verification: the stamp it was made at, the verified view (extended
    /// incrementally when the chain grows) and what the requests read.
    loaded: RefCell<Option<Loaded>>,
}

/// A verification of a spool's chain: the stamp it was made at, the verified view, and what the
/// requests read.
type Loaded = (Stamps, Option<VerifiedView>, Rc<ChainSnapshot>);

/// The chain file's stamp and, when gateway keys are pinned, `receipts/`'s (a file added,
/// removed or renamed changes it).
type Stamps = (Option<ChainStamp>, Option<ChainStamp>);

fn dir_stamp(dir: &std::path::Path) -> Option<ChainStamp> {
    use std::os::unix::fs::MetadataExt as _;
    let m = std::fs::symlink_metadata(dir).ok()?;
    Some((m.len(), m.modified().ok()?, m.ctime(), m.ctime_nsec(), m.ino()))
}

/// What the requests read of a spool's chain at one moment.
#[derive(Debug, Default)]
struct ChainSnapshot {
    /// The evidence rows of the records that passed every check (what the console sums).
    evidence: ChainEvidence,
    /// Those rows, indexed for the gate.
    index: EvidenceIndex,
    /// Why the chain does not verify (its first finding, an I/O error, unreadable pinned keys);
    /// `None` when it verifies.
    broken: Option<String>,
}

impl SpoolEvidence {
    fn current(&self) -> Rc<ChainSnapshot> {
        let stamp = (
            chain_stamp(&self.spool),
            (!self.gateways.is_empty()).then(|| dir_stamp(&self.spool.receipts_dir())).flatten(),
        );
        let mut loaded = self.loaded.borrow_mut();
        if let Some((at, _, snap)) = loaded.as_ref()
            && *at == stamp
        {
            return Rc::clone(snap);
        }
        let cache = loaded.take().and_then(|(_, view, _)| view);
        let (view, snap) = match &self.pinned {
            Err(e) => (
                None,
                ChainSnapshot {
                    broken: Some(format!("the pinned keys cannot be read: {e}")),
                    ..ChainSnapshot::default()
                },
            ),
            Ok(pinned) => {
                let progress = std::sync::atomic::AtomicU64::new(0);
                match crate::store::spool::verify_chain_from(&self.spool, pinned, cache.as_ref(), &progress) {
                    Err(e) => (
                        None,
                        ChainSnapshot {
                            broken: Some(format!("the chain cannot be read: {e}")),
                            ..ChainSnapshot::default()
                        },
                    ),
                    Ok(v) => {
                        let broken = v.view.report.findings.first().map(|f| format!("the chain does not verify: {f}"));
                        let mut evidence = v.view.evidence.clone();
                        // The receipts a pinned gateway signed: observed outcomes, each once.
                        if !self.gateways.is_empty() {
                            let receipts =
                                self.receipts.borrow_mut().scan(&self.spool).map(|s| s.receipts).unwrap_or_default();
                            let observed = crate::protocol::graduation::receipt::observed_evidence(
                                receipts.iter().filter_map(|r| Some((&r.raw, r.observed_by.as_deref()?))),
                            );
                            for row in observed {
                                evidence.push(row);
                            }
                        }
                        let index = EvidenceIndex::new(evidence.rows());
                        (Some(v), ChainSnapshot { evidence, index, broken })
                    }
                }
            }
        };
        let snap = Rc::new(snap);
        *loaded = Some((stamp, view, Rc::clone(&snap)));
        snap
    }
}

/// The evidence a request is judged on: the spool chain's rows (when the evaluator reads a
/// spool) followed by the request's inline rows, indexed. Inline rows add to the chain's,
/// never replace them.
fn combined_index<'a>(chain: Option<&'a ChainSnapshot>, inline: Option<&[EvidenceRow]>) -> Cow<'a, EvidenceIndex> {
    match (chain, inline) {
        (Some(c), None) => Cow::Borrowed(&c.index),
        (Some(c), Some([])) => Cow::Borrowed(&c.index),
        (Some(c), Some(rows)) => Cow::Owned(EvidenceIndex::new(c.evidence.rows().chain(rows))),
        (None, rows) => Cow::Owned(rows.map(EvidenceIndex::new).unwrap_or_default()),
    }
}

/// The deprecated spellings of request fields, accepted for one release (issue 16): (op, old,
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
fn canonical_spellings<'a>(op: &str, r: &'a Map<String, Value>) -> Result<Respelled<'a>, EvalError> {
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

/// True when `class` normalizes to a class id (the check `gate` makes first), without
/// allocating for an id already made of `[a-z0-9.]`.
fn request_class_ok(class: &str) -> bool {
    if class.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.') {
        crate::protocol::packet::is_class_id(class)
            || crate::protocol::registry::ALIASES.iter().any(|(alias, _)| *alias == class)
    } else {
        crate::protocol::packet::is_class_id(&crate::protocol::registry::normalize(class))
    }
}

/// The members of a `tg.can_execute` request, read strictly (duplicate keys anywhere are an
/// error, as in [`crate::protocol::canonical::parse_strict`]); strings are borrowed from the line when
/// they have no escapes.
#[derive(Default)]
struct FastGate<'de> {
    op: bool,
    id: Option<Value>,
    action_class: Option<Cow<'de, str>>,
    action_class_camel: Option<Cow<'de, str>>,
    context: Option<Value>,
    approval: Option<Value>,
    evidence: Option<Vec<EvidenceRow>>,
    agent_status: Option<Cow<'de, str>>,
    chain_intact: Option<bool>,
    workspace: Option<Cow<'de, str>>,
    now: Option<Option<Cow<'de, str>>>,
    policies: bool,
    strict: Option<bool>,
}

struct FastGateVisitor;

impl<'de> serde::de::Visitor<'de> for FastGateVisitor {
    type Value = FastGate<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a tg.can_execute request")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<FastGate<'de>, A::Error> {
        use crate::protocol::canonical::{StrictValue, Text};
        use serde::de::Error as _;
        let mut g = FastGate::default();
        let mut seen = 0u32;
        let mut others: Vec<Cow<'de, str>> = Vec::new();
        while let Some(Text(key)) = map.next_key::<Text<'de>>()? {
            let bit = match key.as_ref() {
                "op" => 1,
                "id" => 1 << 1,
                "action_class" => 1 << 2,
                "actionClass" => 1 << 3,
                "context" => 1 << 4,
                "approval" => 1 << 5,
                "evidence" => 1 << 6,
                "agent_status" => 1 << 7,
                "chain_intact" => 1 << 8,
                "workspace" => 1 << 9,
                "now" => 1 << 10,
                "policies" => 1 << 11,
                "strict" => 1 << 12,
                _ => 0,
            };
            if bit == 0 {
                if others.contains(&key) {
                    return Err(A::Error::custom("duplicate key"));
                }
                let StrictValue(_) = map.next_value()?;
                others.push(key);
                continue;
            }
            if seen & bit != 0 {
                return Err(A::Error::custom("duplicate key"));
            }
            seen |= bit;
            match key.as_ref() {
                "op" => {
                    let Text(op) = map.next_value()?;
                    if op != "tg.can_execute" {
                        return Err(A::Error::custom("another op"));
                    }
                    g.op = true;
                }
                "id" => g.id = Some(map.next_value::<StrictValue>()?.0),
                "action_class" => g.action_class = Some(map.next_value::<Text<'de>>()?.0),
                "actionClass" => g.action_class_camel = Some(map.next_value::<Text<'de>>()?.0),
                "context" => g.context = Some(map.next_value::<StrictValue>()?.0),
                "approval" => g.approval = Some(map.next_value::<StrictValue>()?.0),
                "evidence" => g.evidence = Some(map.next_value::<crate::protocol::graduation::evidence::WireRows>()?.0),
                "agent_status" => g.agent_status = Some(map.next_value::<Text<'de>>()?.0),
                "chain_intact" => g.chain_intact = Some(map.next_value()?),
                "workspace" => g.workspace = Some(map.next_value::<Text<'de>>()?.0),
                "now" => g.now = Some(map.next_value::<Option<Text<'de>>>()?.map(|t| t.0)),
                "policies" => {
                    g.policies = match map.next_value::<StrictValue>()?.0 {
                        Value::Null => false,
                        Value::Array(p) => !p.is_empty(),
                        _ => true,
                    }
                }
                _ => g.strict = Some(map.next_value()?),
            }
        }
        Ok(g)
    }
}

fn evidence_of(r: &Map<String, Value>) -> Result<Vec<EvidenceRow>, EvalError> {
    rows_from_json(r.get("evidence").unwrap_or(&Value::Null))
        .map_err(|(i, e)| bad("invalid_evidence", format!("evidence[{i}]: {e}")))
}

fn now_of(r: &Map<String, Value>) -> Result<OffsetDateTime, EvalError> {
    match r.get("now") {
        None | Some(Value::Null) => Ok(OffsetDateTime::now_utc()),
        Some(Value::String(s)) => crate::protocol::clock::parse_rfc3339(s)
            .ok_or_else(|| bad("invalid_request", format!("`now` is not an RFC 3339 date-time: {s:?}"))),
        Some(_) => Err(bad("invalid_request", "`now` must be an RFC 3339 string")),
    }
}

/// The id of a request line refused only for an integer literal outside 64 bits (it parses,
/// but would be read approximately), so the client can match the error to its request. A
/// fractional id is not echoed: it may be the approximated integer itself.
fn refused_line_id(line: &[u8]) -> Option<Value> {
    match crate::protocol::canonical::parse_strict(line) {
        Ok(Value::Object(m)) => {
            m.get("id").filter(|id| !id.as_number().is_some_and(serde_json::Number::is_f64)).cloned()
        }
        _ => None,
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
/// Responses are collected in a buffer and written (then `output` is flushed) whenever no
/// further whole request is already buffered on the input, or 256 KiB of responses are waiting:
/// an interactive client gets every answer before the evaluator waits for more input, and a
/// pipeline of requests is answered in large writes (so `output` needs no buffering of its own).
///
/// # Errors
/// I/O errors on the input or output (a closed output ends the run).
pub fn run<R: Read, W: Write>(eval: &Evaluator, input: R, mut output: W) -> io::Result<()> {
    const OUT_CHUNK: usize = 256 * 1024;
    let mut input = BufReader::with_capacity(64 * 1024, input);
    let mut line = Vec::with_capacity(4096);
    let mut out = Vec::with_capacity(OUT_CHUNK + 4096);
    loop {
        line.clear();
        let n = input.by_ref().take(MAX_LINE_BYTES as u64 + 1).read_until(b'\n', &mut line)?;
        if n == 0 {
            break;
        }
        if line.last() != Some(&b'\n') && line.len() > MAX_LINE_BYTES {
            // Skip the rest of the overlong line.
            let mut sink = Vec::new();
            loop {
                sink.clear();
                let m = input.by_ref().take(64 * 1024).read_until(b'\n', &mut sink)?;
                if m == 0 || sink.last() == Some(&b'\n') {
                    break;
                }
            }
            let response = error_response(
                None,
                &bad("line_too_long", format!("request lines are limited to {MAX_LINE_BYTES} bytes")),
            );
            serde_json::to_writer(&mut out, &response).map_err(io::Error::other)?;
            out.push(b'\n');
        } else {
            let trimmed = line.trim_ascii();
            if !trimmed.is_empty() {
                eval.respond_guarded(trimmed, &mut out);
            }
        }
        // Never wait for input with an answer held back.
        let more = input.buffer().contains(&b'\n');
        if !more || out.len() >= OUT_CHUNK {
            output.write_all(&out)?;
            out.clear();
            if !more {
                output.flush()?;
            }
        }
    }
    output.write_all(&out)?;
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
        // Refused for an integer outside 64 bits, yet its id is known (found by the eval fuzz
        // target): echoed, unless fractional.
        let huge = r#"{"op":"otg.verify","id":1,"export":{"n":144444444444444444444444444}}"#;
        let refused = ask(&e, huge);
        assert_eq!((refused["error"]["code"].as_str(), &refused["id"]), (Some("parse_error"), &json!(1)));
        let refused = ask(&e, r#"{"id":1.5,"n":144444444444444444444444444}"#);
        assert_eq!((refused["error"]["code"].as_str(), refused.get("id")), (Some("parse_error"), None));
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

    /// `respond` (typed fast path for `tg.can_execute`) gives the same bytes as serializing
    /// `handle_line` (the general path) for well-formed, unusual and malformed requests alike.
    #[test]
    fn respond_matches_the_general_path_byte_for_byte() {
        let strict = Evaluator::new(PolicySet::from_toml("strict = true").expect("policy"));
        let rows =
            r#"[{"action_class":"draft.response","label":"approved","source_type":"receipt","date":"2026-11-01"},
            {"actionClass":"draft.response","type":"minor edit","sourceType":"connector","editDistance":0.1},
            {"action_class":"email.send.external","label":"rejected","source_type":"principal"},
            {"action_class":"draft.response","label":"Sent","source":"tr\u0061cker","receipt_id":null,"flag":true,
             "meta":{"a":[1,{"b":2}]},"decision_weight":1,"provenance_weight":0.5,"recordedAt":"2026-11-02T10:00:00Z"},
            {"action_class":"draft_response","event_type":"trust_issue","evidence_weight":-3,"sourceType":"model_inferred"}]"#
                .replace('\n', "");
        let lines = [
            r#"{"op":"tg.can_execute","id":1,"action_class":"draft.response","now":"2026-11-21T09:00:00Z"}"#.to_owned(),
            format!(r#"{{"op":"tg.can_execute","id":"x","action_class":"draft.response","now":"2026-11-21T09:00:00Z","evidence":{rows}}}"#),
            format!(r#"{{"id":[1,{{"a":null}}],"evidence":{rows},"actionClass":"email.send.external","op":"tg.can_execute","now":"2026-11-21T09:00:00.5Z","context":{{"requestedBy":"sc\u0072ibe","target":"a@b.c","nonce":"n-1"}}}}"#),
            r#"{"op":"tg.can_execute","action_class":"email.send.internal","context":{"constraints":{"max_amount":5,"domain_allowlist":["x.com"]}},"now":"2026-11-21T09:00:00Z","workspace":"w","agent_status":"active","chain_intact":true,"strict":false,"policies":[],"summary":"ignored"}"#.to_owned(),
            r#"{"op":"tg.can_execute","id":null,"action_class":"Draft_Response","now":"2026-11-21T09:00:00Z","approval":null,"context":null}"#.to_owned(),
            r#"{"op":"tg.can_execute","id":2,"action_class":"widget.thing","now":"2026-11-21T09:00:00Z","agent_status":"quarantined","chain_intact":false}"#.to_owned(),
            r#"{"op":"tg.can_execute","id":3,"action_class":"payment.spend","now":"2026-11-21T09:00:00Z","approval":{"state":"approved"}}"#.to_owned(),
            r#"{"op":"tg.can_execute","id":4,"action_class":"calendar.create","now":"2026-11-21T09:00:00Z","context":{"approvalState":"approved","asynchronousApproval":1}}"#.to_owned(),
            // Requests the fast path leaves to the general one (errors, other ops, oddities).
            r#"{"op":"tg.can_execute","now":"2026-11-21T09:00:00Z","id":5,"action_class":"draft.response","action_class":"x.y"}"#.to_owned(),
            r#"{"op":"tg.can_execute","now":"2026-11-21T09:00:00Z","id":6,"action_class":"draft.response","context":{"a":1,"a":2}}"#.to_owned(),
            r#"{"op":"tg.can_execute","now":"2026-11-21T09:00:00Z","id":7,"action_class":"draft.response","extra":{"b":1,"b":1}}"#.to_owned(),
            r#"{"op":"tg.can_execute","now":"2026-11-21T09:00:00Z","id":8,"action_class":"draft.response","x":1,"x":1}"#.to_owned(),
            r#"{"op":"tg.can_execute","now":"2026-11-21T09:00:00Z","id":9,"action_class":7}"#.to_owned(),
            r#"{"op":"tg.can_execute","now":"2026-11-21T09:00:00Z","id":10,"action_class":"nope"}"#.to_owned(),
            r#"{"op":"tg.can_execute","id":11,"action_class":"draft.response","now":"yesterday"}"#.to_owned(),
            r#"{"op":"tg.can_execute","now":"2026-11-21T09:00:00Z","id":12,"action_class":"draft.response","chain_intact":null}"#.to_owned(),
            r#"{"op":"tg.can_execute","now":"2026-11-21T09:00:00Z","id":13,"action_class":"draft.response","agent_status":"asleep"}"#.to_owned(),
            r#"{"op":"tg.can_execute","now":"2026-11-21T09:00:00Z","id":14,"action_class":"draft.response","evidence":[{"label":"approved"}]}"#.to_owned(),
            r#"{"op":"tg.can_execute","now":"2026-11-21T09:00:00Z","id":21,"action_class":"a.b","evidence":[{"action_class":"a.b","label":"x","label":"y"}]}"#.to_owned(),
            r#"{"op":"tg.can_execute","now":"2026-11-21T09:00:00Z","id":22,"action_class":"a.b","evidence":[{"action_class":"a.b","label":"x","m":{"c":1,"c":2}}]}"#.to_owned(),
            r#"{"op":"tg.can_execute","now":"2026-11-21T09:00:00Z","id":23,"action_class":"a.b","evidence":[{"action_class":"a.b","label":"x","evidence_weight":"1"}]}"#.to_owned(),
            r#"{"op":"tg.can_execute","now":"2026-11-21T09:00:00Z","id":24,"action_class":"a.b","evidence":[{"action_class":"a.b","label":"x","date":"2026-02-30"}]}"#.to_owned(),
            r#"{"op":"tg.can_execute","now":"2026-11-21T09:00:00Z","id":25,"action_class":"a.b","evidence":{"action_class":"a.b"}}"#.to_owned(),
            r#"{"op":"tg.can_execute","now":"2026-11-21T09:00:00Z","id":26,"action_class":"a.b","evidence":[7]}"#.to_owned(),
            r#"{"op":"tg.can_execute","now":"2026-11-21T09:00:00Z","id":15,"action_class":"draft.response","context":[1]}"#.to_owned(),
            r#"{"op":"tg.can_execute","now":"2026-11-21T09:00:00Z","id":16,"action_class":"widget.thing","strict":true}"#.to_owned(),
            r#"{"op":"tg.can_execute","id":17,"action_class":"draft.response","policies":[{"actionClass":"draft.response","riskClass":"high"}],"now":"2026-11-21T09:00:00Z"}"#.to_owned(),
            r#"{"op":"tg.can_execute","now":"2026-11-21T09:00:00Z","id":18,"action_class":"draft.response"} trailing"#.to_owned(),
            r#"{"op":"tg.posterior","id":19,"action_class":"draft.response","now":"2026-11-21T09:00:00Z"}"#.to_owned(),
            r#"{"id":20,"action_class":"draft.response"}"#.to_owned(),
            r#"[1,2]"#.to_owned(),
            "{nope".to_owned(),
        ];
        for e in [Evaluator::default(), strict] {
            for line in &lines {
                let mut got = Vec::new();
                e.respond(line.as_bytes(), &mut got);
                let mut want = serde_json::to_vec(&e.handle_line(line.as_bytes())).expect("json");
                want.push(b'\n');
                assert_eq!(String::from_utf8_lossy(&got), String::from_utf8_lossy(&want), "{line}");
            }
        }
        // The fast path answered the well-formed requests (it is not vacuous)…
        let mut out = Vec::new();
        assert!(Evaluator::default().fast_can_execute(lines[1].as_bytes(), &mut out));
        assert!(Evaluator::default().fast_can_execute(lines[2].as_bytes(), &mut out));
        // …and declined every request with a duplicate key, which only the general path reports.
        for line in lines.iter().filter(|l| l.contains("\"action_class\":\"a.b\"")).chain(&lines[8..12]) {
            assert!(!Evaluator::default().fast_can_execute(line.as_bytes(), &mut out), "{line}");
        }
    }

    /// An input that hands out scripted chunks and, before each read, checks how many responses
    /// have reached the output: the evaluator must never wait for input with an answer held back.
    struct Script {
        chunks: std::collections::VecDeque<&'static [u8]>,
        /// Responses that must have been written before each read (the last entry: before EOF).
        expect: std::collections::VecDeque<usize>,
        written: std::rc::Rc<RefCell<Vec<u8>>>,
    }

    impl Read for Script {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let lines = self.written.borrow().iter().filter(|b| **b == b'\n').count();
            let want = self.expect.pop_front().expect("no read beyond the script");
            assert_eq!(lines, want, "responses written before read #{}", 5 - self.expect.len());
            let Some(chunk) = self.chunks.pop_front() else { return Ok(0) };
            buf[..chunk.len()].copy_from_slice(chunk);
            Ok(chunk.len())
        }
    }

    struct Sink(std::rc::Rc<RefCell<Vec<u8>>>);

    impl Write for Sink {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.borrow_mut().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn run_answers_everything_buffered_before_waiting_for_input() {
        let written = std::rc::Rc::new(RefCell::new(Vec::new()));
        let script = Script {
            chunks: [
                // Two whole requests and half of a third arrive together.
                &b"{\"op\":\"ops\",\"id\":1}\n{\"op\":\"tg.can_execute\",\"id\":2,\"action_class\":\"draft.response\"}\n{\"op\":"[..],
                b"\"ops\",\"id\":3}\n",
                // An empty line, then a request on its own.
                b"\n",
                b"{\"op\":\"tg.can_execute\",\"id\":4,\"action_class\":\"email.send.external\"}\n",
            ]
            .into(),
            expect: [0, 2, 3, 3, 4].into(),
            written: written.clone(),
        };
        run(&Evaluator::default(), script, Sink(written.clone())).expect("run");
        let out = written.borrow();
        let ids: Vec<Value> = out
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice::<Value>(l).expect("json")["id"].clone())
            .collect();
        assert_eq!(ids, [json!(1), json!(2), json!(3), json!(4)]);
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
        assert_eq!(lines[2]["entry_hash"], crate::protocol::canonical::canonical_hash(&json!({"a": 1})));
    }
}
