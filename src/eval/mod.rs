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

mod composition;
mod evidence;
mod fast_gate;
mod fields;
mod graduation;
pub mod rings;

pub use fields::DEPRECATED_FIELDS;

use crate::protocol::chain::{self, VerifyOptions};
use crate::protocol::graduation::evidence::EvidenceRow;
use crate::protocol::graduation::policy::PolicySet;
use evidence::SpoolEvidence;
use fields::{canonical_spellings, now_of};
use rings::RingsSession;
use serde_json::{Map, Value, json};
use std::cell::RefCell;
use std::io::{self, BufRead, BufReader, Read, Write};

/// Longest request line (1 MiB); longer lines are answered with `line_too_long` and skipped.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// The Trust Graduation, OpenTrustGraph and composition ops this module serves itself; the
/// tier and ladder ops are [`crate::protocol::ladder::EVAL_OPS`], the ring ops [`rings::OPS`].
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
    all.extend(rings::OPS);
    all
}

/// An error response: a stable `code` and a sentence ([`crate::protocol::request::RequestError`], the
/// protocol's, which the models' request readers return).
pub type EvalError = crate::protocol::request::RequestError;

fn bad(code: &'static str, message: impl std::fmt::Display) -> EvalError {
    EvalError { code, message: message.to_string() }
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
    /// The inline evidence of the last `tg.can_execute` that carried some, indexed: a client
    /// that sends its ledger with every request has it read and weighted once
    /// ([`fast_gate::InlineEvidence`]).
    inline: RefCell<Option<fast_gate::InlineEvidence>>,
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
        Self {
            policies,
            spool: None,
            rings: RefCell::default(),
            internal_errors: std::cell::Cell::new(0),
            inline: RefCell::default(),
        }
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
            op if rings::OPS.contains(&op) => {
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
