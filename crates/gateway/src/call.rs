//! `tools/call`: governed before anything reaches the server — forwarded as the agent sent it,
//! held for the principal, or refused with a tool result that says why.

use super::result::refusal;
use super::wire::{self, key};
use super::{Forwarded, PROGRESS_EVERY, Shared, ToolInfo};
use bytes::Bytes;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;
use tokio_util::sync::CancellationToken;
use warrant_engine::govern::{Governor, Outcome, Submitted};
use warrant_protocol::calls::ToolCall;

/// The parameters of a `tools/call` (MCP 2025-11-25 and 2026-07-28). A field this list does not
/// name is refused (`-32602`), never forwarded: it could change what the server runs.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CallParams {
    /// The tool's name.
    name: String,
    /// Its arguments.
    #[serde(default)]
    arguments: Option<Map<String, Value>>,
    /// The request's metadata (its `progressToken`).
    #[serde(rename = "_meta", default)]
    meta: Option<Map<String, Value>>,
    /// A task-augmented call (MCP 2025-11-25, "Tasks"): governed as any other, the server
    /// answers with its task.
    #[serde(default)]
    task: Option<Map<String, Value>>,
    /// A retry after an incomplete result (MCP 2026-07-28): governed again as a new call.
    #[serde(rename = "requestState", default)]
    #[allow(dead_code)]
    request_state: Option<String>,
    #[serde(rename = "inputResponses", default)]
    #[allow(dead_code)]
    input_responses: Option<Map<String, Value>>,
}

impl CallParams {
    /// Reads the parameters of a `tools/call`.
    ///
    /// # Errors
    /// Missing, of the wrong shape, or with a field MCP does not define.
    pub(super) fn read(params: Option<&RawValue>) -> Result<Self, String> {
        let params = params.ok_or("tools/call without params")?;
        serde_json::from_str(params.get()).map_err(|e| format!("invalid tools/call params: {e}"))
    }

    /// The client's progress token, if it asked for progress (a string or an integer).
    fn progress_token(&self) -> Option<Value> {
        self.meta.as_ref()?.get("progressToken").filter(|t| t.is_string() || t.is_i64() || t.is_u64()).cloned()
    }
}

/// How a call is forwarded.
struct Via {
    /// The agent's progress token.
    token: Option<Value>,
    /// What to add to the server's progress.
    base: f64,
    /// Under an id of the gateway's own ([`Shared::forward_call`]).
    own_id: bool,
    /// Approved as corrected: the arguments the server gets instead of the agent's.
    arguments: Option<Box<Value>>,
}

/// How the slow path judged a call.
enum Judged {
    /// What was read again lets it run with no packet (its action class).
    Unpacketed(String),
    /// Its packet was published and judged.
    Submitted(Arc<Governor>, Box<Submitted>),
}

/// One `tools/call` from the agent: the message as sent, its id, its parameters, and the token the
/// agent's `notifications/cancelled` triggers.
pub(super) struct Call {
    pub(super) message: Box<RawValue>,
    pub(super) id: Box<RawValue>,
    pub(super) params: CallParams,
    pub(super) cancel: CancellationToken,
}

impl Shared {
    /// The call id of the agent's request: this connection's id and a count of its calls, so
    /// every call is its own packet whatever request ids the agent sends (a reused or crafted id
    /// can never land on an earlier call's packet and its approval).
    fn call_id(&self) -> String {
        let n = self.calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        format!("{}-{n}", self.connection)
    }

    /// Governs one call and answers the agent: the server's answer when it ran, a refusal when it
    /// did not, nothing when the agent cancelled it.
    pub(super) async fn call_tool(self: Arc<Self>, call: Call) {
        let id = call.id.clone();
        if let Some(answer) = self.govern(call).await {
            self.send_agent(answer);
        } else {
            tracing::debug!(id = id.get(), "tools/call answered nothing (cancelled)");
        }
    }

    async fn govern(&self, call: Call) -> Option<Bytes> {
        let tool = call.params.name.clone();
        let key = format!("{}/{tool}", self.opts.name);
        let refuse = |outcome: Outcome, structured: bool| {
            Some(wire::result(&call.id, &refusal(&key, &outcome, None, structured)))
        };
        let blocked = |reason: String| Outcome::Deny { packet_id: None, status: "blocked", reason, remedy: None };
        if !warrant_protocol::calls::is_tool_key(&key) {
            return refuse(blocked(format!("the tool name {tool:?} cannot be governed (not a valid tool key)")), false);
        }
        let info = match self.tool_info(&tool).await {
            Ok(Some(info)) => info,
            Ok(None) => return refuse(blocked(format!("the MCP server does not list a tool named {tool:?}")), false),
            Err(e) => return refuse(blocked(format!("could not read the MCP server's tool list: {e}")), false),
        };
        let tool_call = ToolCall {
            host: "mcp-gateway".into(),
            agent: self.opts.agent.clone(),
            session: Some(self.connection.clone()),
            tool: key.clone(),
            input: Value::Object(call.params.arguments.clone().unwrap_or_default()),
            notebook: self.opts.notebook.clone(),
            cwd: self.opts.cwd.clone(),
            workdir: None,
            annotations: info.annotations.clone(),
        };
        let call_id = self.call_id();
        // A call the gate allows on its own, judged in memory against what was read before (when
        // nothing changed since): it runs with no packet — unless receipts are not being written.
        let live = self.live.clone().filter(|_| !self.receipts_behind.load(std::sync::atomic::Ordering::SeqCst));
        if let Some(class) = live.as_ref().and_then(|l| l.quick(&tool_call)) {
            return self.run_unpacketed(&call, class, key, &call_id).await;
        }
        let (opts, cid) = (self.opts.clone(), call_id.clone());
        let quick_ok = live.is_some();
        let live = self.live.clone();
        let judged = tokio::task::spawn_blocking(move || -> Result<Judged, String> {
            let spool = opts.spool.clone()?;
            let g = match &live {
                Some(live) => live.refresh().map_err(|e| e.to_string())?,
                None => Arc::new(Governor::open(spool, &opts.config_dir).map_err(|e| e.to_string())?),
            };
            // What changed has been read again: the call may run with no packet after all.
            if let Some(class) = live.as_ref().filter(|_| quick_ok).and_then(|l| l.quick(&tool_call)) {
                return Ok(Judged::Unpacketed(class));
            }
            // The packet expires with the wait: a call nobody decided in time never runs, and the
            // console shows it expired.
            let submitted = g.submit(&tool_call, Some(&cid), Some(opts.wait)).map_err(|e| e.to_string())?;
            Ok(Judged::Submitted(g, Box::new(submitted)))
        })
        .await;
        let (governor, submitted) = match judged {
            Ok(Ok(Judged::Submitted(g, submitted))) => (g, *submitted),
            Ok(Ok(Judged::Unpacketed(class))) => return self.run_unpacketed(&call, class, key, &call_id).await,
            Ok(Err(e)) => {
                return refuse(blocked(format!("warrant could not govern this call: {e}")), !info.output_schema);
            }
            Err(e) => {
                return refuse(blocked(format!("warrant failed while governing this call: {e}")), !info.output_schema);
            }
        };
        let mut token = call.params.progress_token();
        let mut graduation = None;
        // A held call the client asked to run as a task becomes one at once (`tasks`).
        let mut task = None;
        let outcome = match &submitted.outcome {
            Outcome::Hold { graduation: g, .. } => {
                graduation = g.clone();
                if let Some(params) = &call.params.task {
                    let id = format!("warrant-gw-{call_id}");
                    let message = format!(
                        "held: waiting for the principal to decide {} in warrant ({})",
                        submitted.packet_id,
                        submitted.outcome.message()
                    );
                    let created = self.open_task(&id, params, message, call.cancel.clone());
                    self.send_agent(wire::result(&call.id, &created));
                    // The request is answered: the agent may use its id again, and the task's
                    // own cancel (`tasks/cancel`) is the call's from now on.
                    if let Ok(mut g) = self.governing.lock() {
                        g.remove(&wire::key(&call.id));
                    }
                    task = Some(id);
                    // The request is answered: its progress ends with it.
                    token = None;
                }
                self.hold(&governor, &submitted, token.as_ref(), &call.cancel).await
            }
            other => other.clone(),
        };
        let outcome = match outcome {
            Outcome::Allow { .. } => {
                let (g, sub, allowed) = (governor.clone(), submitted.clone(), outcome.clone());
                match tokio::task::spawn_blocking(move || g.recheck_before_run(&sub, &allowed)).await {
                    Ok(None) => outcome,
                    Ok(Some(failed)) => failed,
                    Err(e) => blocked(format!("warrant failed while re-checking the preconditions: {e}")),
                }
            }
            other => other,
        };
        // Cancelled by the client (or the session ending) while it was judged: it does not run.
        let outcome = match outcome {
            Outcome::Allow { .. } if call.cancel.is_cancelled() => Outcome::Deny {
                packet_id: Some(submitted.packet_id.clone()),
                status: "cancelled",
                reason: "the client cancelled the call before it ran; it was not run".into(),
                remedy: None,
            },
            other => other,
        };
        // Approved as corrected: the request must take the corrected arguments, and the
        // correction runs once, whichever surface runs it.
        let outcome = match outcome {
            Outcome::Allow { corrected: Some(arguments), packet_id, .. }
                if !wire::edit(&call.message, &["params"], &mut |p| {
                    p.insert("arguments".into(), wire::raw(&arguments));
                    true
                })
                .is_ok_and(|m| m.is_some()) =>
            {
                Outcome::Deny {
                    packet_id: Some(packet_id),
                    status: "blocked",
                    reason: "the corrected arguments could not be put in the request; it was not run".into(),
                    remedy: None,
                }
            }
            allowed @ Outcome::Allow { corrected: Some(_), .. } => {
                let (g, id) = (governor.clone(), submitted.packet_id.clone());
                match tokio::task::spawn_blocking(move || g.claim_correction(&id)).await {
                    Ok(None) => allowed,
                    Ok(Some(refused)) => refused,
                    Err(e) => blocked(format!("warrant failed while recording the correction's run: {e}")),
                }
            }
            other => other,
        };
        // Answered: refused, timed out or cancelled by the client (no later decision runs it),
        // or let run (it leaves the principal's Pending).
        let (g, o) = (governor.clone(), outcome.clone());
        let _ = tokio::task::spawn_blocking(move || g.answered(&o)).await;
        // The server's progress continues from the hold's, one higher.
        let base = token
            .as_ref()
            .and_then(|t| self.held_progress.lock().ok()?.remove(&t.to_string()))
            .map_or(0.0, |last| last + 1.0);
        let ran = matches!(outcome, Outcome::Allow { .. });
        let answer = match outcome {
            Outcome::Allow { grant, corrected, .. } => {
                let via = Via { token, base, own_id: task.is_some(), arguments: corrected };
                self.forward_and_record(&call, &governor, &submitted, &key, grant, via).await
            }
            Outcome::Hold { .. } => {
                refuse(blocked("internal error: still held after the wait".into()), !info.output_schema)
            }
            // The agent cancelled it: a cancelled request gets no answer (MCP "Cancellation").
            Outcome::Deny { status: "cancelled", .. } => None,
            deny => Some(wire::result(&call.id, &refusal(&key, &deny, graduation, !info.output_schema))),
        };
        match task {
            // The task answers from now on.
            Some(task) => {
                self.settle_task(&task, answer.as_deref(), !ran);
                None
            }
            None => answer,
        }
    }

    /// Sends the call to the server exactly as the agent wrote it and waits for the answer; the
    /// server's progress on it is told `via.base` higher. With `via.own_id` (a call whose request
    /// the gateway answered already, with a task) the request carries an id of the gateway's own
    /// instead, as the agent may use its id again. `None` when there is no answer (the agent
    /// cancelled the call, or the server is gone).
    async fn forward_call(&self, call: &Call, via: Via) -> Option<Box<RawValue>> {
        let Via { token, base, own_id, arguments } = via;
        // Checked with no await before the send below: a call cancelled by now never reaches the
        // server.
        if call.cancel.is_cancelled() {
            return None;
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        let mut message = call.message.clone();
        // Approved as corrected: the server runs the principal's arguments, nothing else of the
        // request changed. A request that cannot be edited is not sent.
        if let Some(arguments) = &arguments {
            let edited = wire::edit(&message, &["params"], &mut |params| {
                params.insert("arguments".into(), wire::raw(arguments));
                true
            });
            match edited {
                Ok(Some(m)) => message = m,
                _ => return None,
            }
        }
        if own_id {
            let n = self.own_ids.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let id = Value::String(format!("warrant-gateway-{}-{n}", self.connection));
            let edited = wire::edit(&call.message, &[], &mut |m| {
                m.insert("id".into(), wire::raw(&id));
                true
            });
            match (edited, self.own.lock()) {
                (Ok(Some(m)), Ok(mut own)) => {
                    own.insert(id.to_string(), tx);
                    message = m;
                }
                _ => return None,
            }
        } else if let Ok(mut f) = self.forwarded.lock() {
            let tasks = super::tasks::TaskAnswer::AsIs;
            f.insert(key(&call.id), Forwarded { id: call.id.clone(), answer: Some(tx), tools_list: false, tasks });
        }
        let token = token.map(|t| t.to_string()).filter(|_| base > 0.0);
        if let (Some(t), Ok(mut bases)) = (&token, self.progress_base.lock()) {
            bases.insert(t.clone(), base);
        }
        self.send_server(wire::bytes(&message));
        let answer = rx.await.ok();
        if let (Some(t), Ok(mut bases)) = (&token, self.progress_base.lock()) {
            bases.remove(t);
        }
        answer
    }

    /// Forwards a call the gate allowed (on `grant`, if one did) and publishes its receipt, signed
    /// when the tool reported a success.
    async fn forward_and_record(
        &self,
        call: &Call,
        governor: &Arc<Governor>,
        submitted: &Submitted,
        key: &str,
        grant: Option<String>,
        via: Via,
    ) -> Option<Bytes> {
        let corrected = via.arguments.clone();
        let answer = self.forward_call(call, via).await;
        let read = answer.as_deref().map(Answer::read);
        let note = match &read {
            None => "forwarded; no answer (the client cancelled the call, or the server is gone)".to_owned(),
            Some(a) => a.note(),
        };
        let (g, agent, class, id, signer) = (
            governor.clone(),
            self.opts.agent.clone(),
            submitted.classification.class.clone(),
            submitted.packet_id.clone(),
            self.opts.signer.clone(),
        );
        let mut tool_call = json!({"host": "mcp-gateway", "tool": key, "calls": 1});
        // Which grant allowed it, if one did (the audit's "how").
        if let Some(g) = grant {
            tool_call["grant_id"] = json!(g);
        }
        // Only a result the tool reported as a success is signed (see `flush_receipts`).
        let signer = signer.filter(|_| read.as_ref().is_some_and(Answer::succeeded));
        let receipt = tokio::task::spawn_blocking(move || {
            let req = warrant_store::spool::ReceiptRequest {
                action_class: &class,
                outcome: warrant_protocol::graduation::receipt::ReceiptOutcome::Execute,
                agent: &agent,
                packet_id: Some(&id),
                source_type: None,
                note: Some(&note),
                tool_call: Some(&tool_call),
            };
            let now = warrant_protocol::clock::now_rfc3339();
            warrant_store::spool::publish_signed_receipt(g.spool(), &req, &now, signer.as_deref()).map(|_| ())
        })
        .await;
        match receipt {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                eprintln!("warrant mcp-gateway: could not record the receipt of {}: {e}", submitted.packet_id)
            }
            Err(e) => {
                eprintln!("warrant mcp-gateway: could not record the receipt of {}: {e}", submitted.packet_id)
            }
        }
        match corrected {
            // The client learns that what ran is the principal's correction, and what it was.
            Some(arguments) => answer.map(|a| with_correction_note(&a, &submitted.packet_id, &arguments)),
            None => answer.map(|a| without_warrant(&a)),
        }
    }

    /// Forwards a call the gate allows on its own with no packet, and counts it towards its
    /// receipt ([`Shared::flush_receipts`]).
    async fn run_unpacketed(&self, call: &Call, class: String, key: String, call_id: &str) -> Option<Bytes> {
        let answer = self.forward_call(call, Via { token: None, base: 0.0, own_id: false, arguments: None }).await?;
        let is_error = !Answer::read(&answer).succeeded();
        self.ran_unpacketed(class, key, call_id, is_error);
        Some(without_warrant(&answer))
    }

    /// Waits for the principal's decision on a held call, in slices of [`PROGRESS_EVERY`], telling
    /// the client after each (when it asked for progress), until the decision, the gateway's
    /// `--wait`, or the client's cancellation.
    async fn hold(
        &self,
        governor: &Arc<Governor>,
        submitted: &Submitted,
        token: Option<&Value>,
        cancel: &CancellationToken,
    ) -> Outcome {
        // The class's `refuse_after` in `policy.toml` caps the gateway's `--wait`.
        let wait = submitted.wait_for(self.opts.wait);
        // Past the wait's end no approval runs the call, even if this gateway dies waiting.
        let (g, s, total) = (governor.clone(), submitted.clone(), self.opts.wait);
        // Held until this function returns (the caller then records the answer); a gateway
        // that dies lets it go, and the call is withdrawn at once.
        let _hold = match tokio::task::spawn_blocking(move || g.hold_until(&s, total)).await {
            Ok(Ok(hold)) => hold,
            Ok(Err(refused)) => return refused,
            Err(e) => {
                return Outcome::Deny {
                    packet_id: Some(submitted.packet_id.clone()),
                    status: "blocked",
                    reason: format!("warrant failed while recording the wait: {e}"),
                    remedy: None,
                };
            }
        };
        let started = Instant::now();
        let deadline = started + wait;
        let id = submitted.packet_id.clone();
        let reason = submitted.outcome.message();
        let message =
            format!("held: waiting up to {}s for the principal to decide {id} in warrant ({reason})", wait.as_secs());
        let progress = |elapsed: f64| {
            if let Some(token) = token {
                let value = elapsed.floor();
                let params = json!({
                    "progressToken": token,
                    "progress": number(value),
                    "total": number(wait.as_secs_f64().ceil()),
                    "message": message,
                });
                self.send_agent(wire::notification("notifications/progress", params));
                if let Ok(mut held) = self.held_progress.lock() {
                    held.insert(token.to_string(), value);
                }
            }
        };
        progress(0.0);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Outcome::Deny {
                    packet_id: Some(id.clone()),
                    status: "timeout",
                    reason: format!(
                        "no decision on {id} within {}s; the call was not run and will not run",
                        wait.as_secs_f64()
                    ),
                    remedy: Some(format!(
                        "call the tool again and ask the principal to approve the new request in warrant ({id} can no longer run)"
                    )),
                };
            }
            let (g, s) = (governor.clone(), submitted.clone());
            let slice = left.min(PROGRESS_EVERY);
            let waited = tokio::select! {
                r = tokio::task::spawn_blocking(move || g.wait(&s, slice)) => r,
                () = cancel.cancelled() => return Outcome::Deny {
                    packet_id: Some(id.clone()),
                    status: "cancelled",
                    reason: "the client cancelled the call while it was held; it was not run".into(),
                    remedy: None,
                },
            };
            match waited {
                Ok(Outcome::Deny { status: "timeout", .. }) => progress(started.elapsed().as_secs_f64()),
                Ok(o) => return o,
                Err(e) => {
                    return Outcome::Deny {
                        packet_id: Some(id.clone()),
                        status: "blocked",
                        reason: format!("warrant failed while waiting for the decision: {e}"),
                        remedy: None,
                    };
                }
            }
        }
    }

    /// What `tools/list` says about `tool`; the whole list (every page) is read again when the
    /// tool is not known yet (the client may have read only some pages, or none).
    pub(super) async fn tool_info(&self, tool: &str) -> Result<Option<ToolInfo>, String> {
        if let Some(info) = self.tools.lock().ok().and_then(|t| t.as_ref()?.get(tool).cloned()) {
            return Ok(Some(info));
        }
        let mut all = HashMap::new();
        let mut cursor: Option<Value> = None;
        loop {
            let params = cursor.take().map(|c| json!({ "cursor": c }));
            let answer = self.ask_server("tools/list", params).await?;
            let mut page = ToolsPage::read(&answer)?;
            let next = page.next_cursor.take().filter(|c| !c.is_null());
            all.extend(page.entries());
            match next {
                Some(c) => cursor = Some(c),
                None => break,
            }
        }
        let info = all.get(tool).cloned();
        if let Ok(mut tools) = self.tools.lock() {
            *tools = Some(all);
        }
        Ok(info)
    }

    /// Sends the server a request of the gateway's own and returns its result.
    ///
    /// # Errors
    /// The server answered with an error, or did not answer within the handshake timeout.
    async fn ask_server(&self, method: &str, params: Option<Value>) -> Result<Box<RawValue>, String> {
        let own = self.own_ids.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let id = format!("warrant-gateway-{}-{own}", self.connection);
        let (tx, rx) = tokio::sync::oneshot::channel();
        if let Ok(mut m) = self.own.lock() {
            m.insert(Value::String(id.clone()).to_string(), tx);
        }
        self.send_server(wire::request(&id, method, params));
        let answer = match tokio::time::timeout(self.opts.handshake, rx).await {
            Ok(Ok(a)) => a,
            Ok(Err(_)) => return Err("the MCP server is gone".into()),
            Err(_) => {
                if let Ok(mut m) = self.own.lock() {
                    m.remove(&Value::String(id).to_string());
                }
                return Err(format!(
                    "the MCP server did not answer {method} within {}s",
                    self.opts.handshake.as_secs_f64()
                ));
            }
        };
        let e = wire::Envelope::read(&answer)?;
        if let Some(err) = e.error {
            return Err(format!("the MCP server answered {method} with an error: {}", err.get()));
        }
        e.result.map(ToOwned::to_owned).ok_or_else(|| format!("the MCP server's answer to {method} has no result"))
    }
}

/// A progress value as JSON: an integer when it is one.
pub(super) fn number(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 9.0e15 {
        // The value is whole and well inside i64's range.
        #[allow(clippy::cast_possible_truncation)]
        let whole = v as i64;
        json!(whole)
    } else {
        json!(v)
    }
}

/// The server's answer to a call, as far as receipts read it.
#[derive(Deserialize, Default)]
struct Answer {
    #[serde(default)]
    result: Option<AnswerResult>,
    #[serde(default)]
    error: Option<AnswerError>,
}

#[derive(Deserialize, Default)]
struct AnswerResult {
    #[serde(rename = "isError", default)]
    is_error: Option<bool>,
    /// A task-augmented call's answer (`CreateTaskResult`).
    #[serde(default)]
    task: Option<serde::de::IgnoredAny>,
}

#[derive(Deserialize, Default)]
struct AnswerError {
    #[serde(default)]
    message: String,
}

impl Answer {
    fn read(answer: &RawValue) -> Self {
        serde_json::from_str(answer.get()).unwrap_or_default()
    }

    /// The tool ran and reported a success.
    fn succeeded(&self) -> bool {
        matches!(&self.result, Some(r) if r.is_error != Some(true) && r.task.is_none())
    }

    fn note(&self) -> String {
        match (&self.result, &self.error) {
            (Some(r), _) if r.task.is_some() => "forwarded; the server answered with a task".to_owned(),
            (Some(r), _) if r.is_error == Some(true) => {
                "forwarded; the tool reported an error (isError true)".to_owned()
            }
            (Some(_), _) => "forwarded; the tool ran (isError false)".to_owned(),
            (None, Some(e)) => format!(
                "forwarded; the server answered with an error: {}",
                warrant_protocol::text::inert(&e.message, 300)
            ),
            (None, None) => "forwarded; the server's answer could not be read".to_owned(),
        }
    }
}

/// The server's answer without a `_warrant` in its result's `_meta` (only the gateway speaks for
/// warrant); every other byte as the server sent it.
fn without_warrant(answer: &RawValue) -> Bytes {
    if answer.get().contains("\"_warrant\"") {
        let edited = wire::edit(answer, &["result", "_meta"], &mut |meta| meta.shift_remove("_warrant").is_some());
        if let Ok(Some(edited)) = edited {
            return wire::bytes(&edited);
        }
    }
    wire::bytes(answer)
}

/// The server's answer to a call approved as corrected, its `result._meta._warrant` the
/// gateway's note `{"status": "corrected", "packet_id", "arguments"}` (the arguments the server
/// ran instead of the agent's), whatever `_warrant` the server wrote. An answer without a
/// `result` object (an error) goes as it came, without a `_warrant` of the server's.
fn with_correction_note(answer: &RawValue, packet_id: &str, arguments: &Value) -> Bytes {
    let note = json!({"status": "corrected", "packet_id": packet_id, "arguments": arguments});
    let edited = wire::edit(answer, &["result"], &mut |result| {
        let mut meta: serde_json::Map<String, Value> =
            result.get("_meta").and_then(|m| serde_json::from_str(m.get()).ok()).unwrap_or_default();
        meta.insert("_warrant".into(), note.clone());
        result.insert("_meta".into(), wire::raw(&Value::Object(meta)));
        true
    });
    match edited {
        Ok(Some(m)) => wire::bytes(&m),
        _ => without_warrant(answer),
    }
}

/// One page of `tools/list`.
#[derive(Deserialize)]
pub(super) struct ToolsPage {
    tools: Vec<ToolEntry>,
    #[serde(rename = "nextCursor", default)]
    next_cursor: Option<Value>,
}

impl ToolsPage {
    /// Reads a `tools/list` result.
    ///
    /// # Errors
    /// Not a tool list.
    pub(super) fn read(result: &RawValue) -> Result<Self, String> {
        serde_json::from_str(result.get()).map_err(|e| format!("the MCP server's tool list could not be read: {e}"))
    }

    /// Its tools, by name.
    pub(super) fn entries(self) -> impl Iterator<Item = (String, ToolInfo)> {
        self.tools.into_iter().map(ToolEntry::into_entry)
    }
}

/// What the gateway reads of one tool.
#[derive(Deserialize)]
struct ToolEntry {
    name: String,
    #[serde(default)]
    annotations: Value,
    #[serde(rename = "outputSchema", default)]
    output_schema: Option<serde::de::IgnoredAny>,
}

impl ToolEntry {
    fn into_entry(self) -> (String, ToolInfo) {
        (self.name, ToolInfo { annotations: self.annotations, output_schema: self.output_schema.is_some() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_params_refuse_unknown_fields_and_wrong_types() {
        let read = |s: &str| CallParams::read(Some(&serde_json::from_str::<Box<RawValue>>(s).expect("json")));
        let p = read(r#"{"name":"echo","arguments":{"a":1},"_meta":{"progressToken":7},"task":{"ttl":1000}}"#)
            .expect("a call");
        assert_eq!(p.progress_token(), Some(json!(7)));
        assert!(read(r#"{"name":"echo","requestState":1}"#).is_err());
        assert!(read(r#"{"name":"echo","runAs":"root"}"#).is_err(), "a field MCP does not define");
        assert!(read(r#"{"name":5}"#).is_err());
        assert!(read(r#"{"name":"echo","arguments":"x"}"#).is_err());
        assert!(CallParams::read(None).is_err());
    }

    #[test]
    fn answers_are_read_for_receipts_and_warrant_is_removed_in_place() {
        let raw = |s: &str| serde_json::from_str::<Box<RawValue>>(s).expect("json");
        let a =
            raw(r#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"_meta":{"_warrant":{"status":"allowed"},"k":1}}}"#);
        assert!(Answer::read(&a).succeeded());
        assert_eq!(
            without_warrant(&a),
            Bytes::from_static(br#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"_meta":{"k":1}}}"#)
        );
        let t = raw(r#"{"jsonrpc":"2.0","id":1,"result":{"task":{"taskId":"t","status":"working"}}}"#);
        assert!(!Answer::read(&t).succeeded());
        assert!(Answer::read(&t).note().contains("task"));
        let e = raw(r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"no"}}"#);
        assert!(Answer::read(&e).note().contains("no"));
        assert_eq!(number(3.0), json!(3));
        assert_eq!(number(2.5), json!(2.5));
    }
}
