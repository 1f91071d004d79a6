//! The agent's side: an MCP server that governs `tools/call` (forward, hold for the principal,
//! or refuse) and forwards everything else.

use super::result::{refusal, without_warrant};
use super::upstream::{service_error, tool_map};
use super::{PROGRESS_EVERY, Shared};
use rmcp::ErrorData as McpError;
use rmcp::model::{
    CallToolRequest, ClientNotification, ClientRequest, GetMeta as _, InitializeResult, ProgressNotificationParam,
    ProtocolVersion, RequestId, ServerResult,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer, Service};
use serde_json::{Value, json};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;
use warrant_engine::govern::{Governor, Outcome, Submitted};
use warrant_protocol::calls::ToolCall;

/// The request methods MCP (2025-11-25) defines from client to server: a request with one of
/// these the SDK could not read is malformed (-32600), any other method is not found (-32601).
const MCP_METHODS: [&str; 17] = [
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "tasks/get",
    "tasks/list",
    "tasks/result",
    "tasks/cancel",
];

/// The agent's side: an MCP server.
pub(super) struct Gateway {
    pub(super) shared: Arc<Shared>,
}

impl Shared {
    /// The call id of the agent's request: this connection's id and a count of its calls, so
    /// every call is its own packet whatever request ids the agent sends (a reused or crafted id
    /// can never land on an earlier call's packet and its approval). `_id` is not used.
    fn call_id(&self, _id: &RequestId) -> String {
        let n = self.calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        format!("{}-{n}", self.connection)
    }
}

impl Gateway {
    /// `tools/call`: govern, then forward or refuse.
    async fn call_tool(
        &self,
        request: CallToolRequest,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ServerResult, McpError> {
        let s = &self.shared;
        let tool = request.params.name.to_string();
        let key = format!("{}/{tool}", s.opts.name);
        let refuse = |outcome: Outcome, structured: bool| {
            Ok(ServerResult::CallToolResult(refusal(&key, &outcome, None, structured)))
        };
        let blocked = |reason: String| Outcome::Deny { packet_id: None, status: "blocked", reason, remedy: None };
        if !warrant_protocol::calls::is_tool_key(&key) {
            return refuse(blocked(format!("the tool name {tool:?} cannot be governed (not a valid tool key)")), false);
        }
        let info = match s.tool_info(&tool).await {
            Ok(Some(info)) => info,
            Ok(None) => return refuse(blocked(format!("the MCP server does not list a tool named {tool:?}")), false),
            Err(e) => return refuse(blocked(format!("could not read the MCP server's tool list: {e}")), false),
        };
        let call = ToolCall {
            host: "mcp-gateway".into(),
            agent: s.opts.agent.clone(),
            session: Some(s.connection.clone()),
            tool: key.clone(),
            input: Value::Object(request.params.arguments.clone().unwrap_or_default()),
            notebook: s.opts.notebook.clone(),
            cwd: s.opts.cwd.clone(),
            workdir: None,
            annotations: info.annotations.clone(),
        };
        let call_id = s.call_id(&ctx.id);
        // A call the gate allows on its own, judged in memory against what was read before (when
        // nothing changed since): it runs with no packet — unless receipts are not being written.
        let live = s.live.clone().filter(|_| !s.receipts_behind.load(std::sync::atomic::Ordering::SeqCst));
        if let Some(class) = live.as_ref().and_then(|l| l.quick(&call)) {
            return self.run_unpacketed(request, &ctx, class, key, &call_id).await;
        }
        let (opts, id) = (s.opts.clone(), call_id.clone());
        let quick_ok = live.is_some();
        let live = s.live.clone();
        let submitted = tokio::task::spawn_blocking(move || -> Result<Judged, String> {
            let spool = opts.spool.clone()?;
            let g = match &live {
                Some(live) => live.refresh().map_err(|e| e.to_string())?,
                None => Arc::new(Governor::open(spool, &opts.config_dir).map_err(|e| e.to_string())?),
            };
            // What changed has been read again: the call may run with no packet after all.
            if let Some(class) = live.as_ref().filter(|_| quick_ok).and_then(|l| l.quick(&call)) {
                return Ok(Judged::Unpacketed(class));
            }
            // The packet expires with the wait: a call nobody decided in time never runs, and the
            // console shows it expired.
            let submitted = g.submit(&call, Some(&id), Some(opts.wait)).map_err(|e| e.to_string())?;
            Ok(Judged::Submitted(g, Box::new(submitted)))
        })
        .await;
        let (governor, submitted) = match submitted {
            Ok(Ok(Judged::Submitted(g, submitted))) => (g, *submitted),
            Ok(Ok(Judged::Unpacketed(class))) => {
                return self.run_unpacketed(request, &ctx, class, key, &call_id).await;
            }
            Ok(Err(e)) => {
                return refuse(blocked(format!("warrant could not govern this call: {e}")), !info.output_schema);
            }
            Err(e) => {
                return refuse(blocked(format!("warrant failed while governing this call: {e}")), !info.output_schema);
            }
        };
        let mut graduation = None;
        let outcome = match &submitted.outcome {
            Outcome::Hold { graduation: g, .. } => {
                graduation = g.clone();
                self.hold(&governor, &submitted, &ctx).await
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
        // Answered: refused, timed out or cancelled by the client (no later decision runs it),
        // or let run (it leaves the principal's Pending).
        let (g, o) = (governor.clone(), outcome.clone());
        let _ = tokio::task::spawn_blocking(move || g.answered(&o)).await;
        // The server's progress continues from the hold's, one higher.
        let base = ctx
            .meta
            .get_progress_token()
            .and_then(|t| s.held_progress.lock().ok()?.remove(&t))
            .map_or(0.0, |last| last + 1.0);
        match outcome {
            Outcome::Allow { grant, .. } => {
                self.forward_and_record(request, &ctx, &governor, &submitted, &key, grant, base).await
            }
            Outcome::Hold { .. } => {
                refuse(blocked("internal error: still held after the wait".into()), !info.output_schema)
            }
            deny => Ok(ServerResult::CallToolResult(refusal(&key, &deny, graduation, !info.output_schema))),
        }
    }

    /// Forwards a call the gate allowed (on `grant`, if one did) and publishes its receipt, signed
    /// when the tool reported a success; the server's progress is told `base` higher
    /// ([`Shared::forward_from`]).
    #[allow(clippy::too_many_arguments)]
    async fn forward_and_record(
        &self,
        request: CallToolRequest,
        ctx: &RequestContext<RoleServer>,
        governor: &Arc<Governor>,
        submitted: &Submitted,
        key: &str,
        grant: Option<String>,
        base: f64,
    ) -> Result<ServerResult, McpError> {
        let s = &self.shared;
        let answer = s.forward_from(ClientRequest::CallToolRequest(request), ctx, base).await;
        let note = match &answer {
            Ok(ServerResult::CallToolResult(r)) if r.is_error == Some(true) => {
                "forwarded; the tool reported an error (isError true)".to_owned()
            }
            Ok(ServerResult::CallToolResult(_)) => "forwarded; the tool ran (isError false)".to_owned(),
            Ok(_) => "forwarded; the server answered with a task or an input request".to_owned(),
            Err(e) => {
                format!(
                    "forwarded; the server answered with an error: {}",
                    warrant_protocol::text::inert(&e.message, 300)
                )
            }
        };
        let (g, agent, class, id, signer) = (
            governor.clone(),
            s.opts.agent.clone(),
            submitted.classification.class.clone(),
            submitted.packet_id.clone(),
            s.opts.signer.clone(),
        );
        let mut call = json!({"host": "mcp-gateway", "tool": key, "calls": 1});
        // Which grant allowed it, if one did (the audit's "how").
        if let Some(g) = grant {
            call["grant_id"] = json!(g);
        }
        // Only a result the tool reported as a success is signed (see `flush_receipts`).
        let succeeded = matches!(&answer, Ok(ServerResult::CallToolResult(r)) if r.is_error != Some(true));
        let signer = signer.filter(|_| succeeded);
        let receipt = tokio::task::spawn_blocking(move || {
            let req = warrant_store::spool::ReceiptRequest {
                action_class: &class,
                outcome: warrant_protocol::graduation::receipt::ReceiptOutcome::Execute,
                agent: &agent,
                packet_id: Some(&id),
                source_type: None,
                note: Some(&note),
                tool_call: Some(&call),
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
        answer.map(without_warrant)
    }

    /// Forwards a call the gate allows on its own with no packet, and counts it towards its
    /// receipt ([`Shared::flush_receipts`]).
    async fn run_unpacketed(
        &self,
        request: CallToolRequest,
        ctx: &RequestContext<RoleServer>,
        class: String,
        key: String,
        call_id: &str,
    ) -> Result<ServerResult, McpError> {
        let answer = self.shared.forward(ClientRequest::CallToolRequest(request), ctx).await;
        let is_error = !matches!(&answer, Ok(ServerResult::CallToolResult(r)) if r.is_error != Some(true));
        self.shared.ran_unpacketed(class, key, call_id, is_error);
        answer.map(without_warrant)
    }

    /// Waits for the principal's decision on a held call, in slices of [`PROGRESS_EVERY`], telling
    /// the client after each (when it asked for progress), until the decision, the gateway's
    /// `--wait`, or the client's cancellation.
    async fn hold(&self, governor: &Arc<Governor>, submitted: &Submitted, ctx: &RequestContext<RoleServer>) -> Outcome {
        // The class's `refuse_after` in `policy.toml` caps the gateway's `--wait`.
        let wait = submitted.wait_for(self.shared.opts.wait);
        // Past the wait's end no approval runs the call, even if this gateway dies waiting.
        let (g, s, total) = (governor.clone(), submitted.clone(), self.shared.opts.wait);
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
        let token = ctx.meta.get_progress_token();
        let reason = submitted.outcome.message();
        let shared = Arc::clone(&self.shared);
        let progress = |elapsed: f64| {
            let token = token.clone();
            let shared = Arc::clone(&shared);
            let message = format!(
                "held: waiting up to {}s for the principal to decide {id} in warrant ({reason})",
                wait.as_secs()
            );
            async move {
                if let Some(token) = token {
                    let value = elapsed.floor();
                    let p = ProgressNotificationParam::new(token.clone(), value)
                        .with_total(wait.as_secs_f64().ceil())
                        .with_message(message);
                    let _ = ctx.peer.notify_progress(p).await;
                    if let Ok(mut held) = shared.held_progress.lock() {
                        held.insert(token, value);
                    }
                }
            }
        };
        progress(0.0).await;
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
                () = ctx.ct.cancelled() => return Outcome::Deny {
                    packet_id: Some(id.clone()),
                    status: "cancelled",
                    reason: "the client cancelled the call while it was held; it was not run".into(),
                    remedy: None,
                },
            };
            match waited {
                Ok(Outcome::Deny { status: "timeout", .. }) => progress(started.elapsed().as_secs_f64()).await,
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
}

/// How the slow path judged a call.
enum Judged {
    /// What was read again lets it run with no packet (its action class).
    Unpacketed(String),
    /// Its packet was published and judged.
    Submitted(Arc<Governor>, Box<Submitted>),
}

impl Service<RoleServer> for Gateway {
    async fn handle_request(
        &self,
        request: ClientRequest,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ServerResult, McpError> {
        match request {
            ClientRequest::InitializeRequest(r) => {
                self.initialize(r.params, ctx.peer.clone()).await.map(ServerResult::InitializeResult)
            }
            ClientRequest::PingRequest(_) => Ok(ServerResult::empty(())),
            // The gateway speaks the handshake lifecycle (protocol versions before 2026-07-28): a
            // client that probes with `server/discover` falls back to `initialize`.
            ClientRequest::DiscoverRequest(_) => {
                Err(McpError::method_not_found::<rmcp::model::DiscoverRequestMethod>())
            }
            ClientRequest::CallToolRequest(r) => {
                let gateway = Gateway { shared: self.shared.clone() };
                // A panic is a refusal, never a crash of the connection.
                match tokio::spawn(async move { gateway.call_tool(r, ctx).await }).await {
                    Ok(answer) => answer,
                    Err(e) => Ok(ServerResult::CallToolResult(refusal(
                        "the tool",
                        &Outcome::Deny {
                            packet_id: None,
                            status: "blocked",
                            reason: format!("internal error: {e}"),
                            remedy: None,
                        },
                        None,
                        false,
                    ))),
                }
            }
            ClientRequest::ListToolsRequest(r) => {
                let answer = self.shared.forward(ClientRequest::ListToolsRequest(r), &ctx).await?;
                if let ServerResult::ListToolsResult(list) = &answer {
                    let mut tools = self.shared.tools.lock().await;
                    tools.get_or_insert_with(HashMap::new).extend(tool_map(&list.tools));
                }
                Ok(answer)
            }
            // A request the SDK could not read as one it knows is never forwarded: it could run a
            // tool without being governed. A method MCP does not define (a vendor's, or a typo)
            // is not found, as JSON-RPC says (-32601); one it defines that the SDK could not read
            // (a `tools/call` with fields it does not accept) is an invalid request (-32600).
            ClientRequest::CustomRequest(r) if !MCP_METHODS.contains(&r.method.as_str()) => Err(McpError::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                format!("method not found: {:?} (warrant mcp-gateway forwards the methods MCP defines)", r.method),
                None,
            )),
            ClientRequest::CustomRequest(r) => Err(McpError::invalid_request(
                format!(
                    "warrant mcp-gateway forwards only requests it can read; {:?} was not (a tool call is governed before it runs)",
                    r.method
                ),
                None,
            )),
            other => self.shared.forward(other, &ctx).await,
        }
    }

    async fn handle_notification(
        &self,
        mut notification: ClientNotification,
        ctx: NotificationContext<RoleServer>,
    ) -> Result<(), McpError> {
        match notification {
            // The SDK sent the server its own `initialized`; the server's traffic held until now
            // goes to the agent.
            ClientNotification::InitializedNotification(_) => {
                self.shared.client_ready.send_replace(true);
                Ok(())
            }
            // Cancellations reach forwarded requests through their request context.
            ClientNotification::CancelledNotification(_) => Ok(()),
            _ => {
                let Ok(upstream) = self.shared.upstream() else { return Ok(()) };
                *notification.get_meta_mut() = ctx.meta;
                upstream.send_notification(notification).await.map_err(service_error)
            }
        }
    }

    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(rmcp::model::ServerCapabilities::default())
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        match self.shared.protocol.get() {
            // What the real server agreed to is what the agent gets.
            Some(v) => Cow::Owned(vec![v.clone()]),
            None => {
                Cow::Owned(ProtocolVersion::KNOWN_VERSIONS.iter().filter(|v| v.has_initialize()).cloned().collect())
            }
        }
    }
}
