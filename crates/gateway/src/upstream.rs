//! The real server's side: starting it, forwarding the agent's requests to it, reading its tools,
//! and passing its own requests and notifications on to the agent.

use super::server::Gateway;
use super::{Shared, ToolInfo};
use rmcp::ErrorData as McpError;
use rmcp::model::{
    ClientRequest, ClientResult, GetMeta as _, InitializeRequestParams, InitializeResult, ServerNotification,
    ServerRequest, ServerResult,
};
use rmcp::service::{
    NotificationContext, Peer, PeerRequestOptions, RequestContext, RoleClient, RoleServer, Service, ServiceError,
    ServiceExt as _,
};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

pub(super) fn service_error(e: ServiceError) -> McpError {
    match e {
        ServiceError::McpError(e) => e,
        other => McpError::internal_error(format!("warrant mcp-gateway: the MCP server: {other}"), None),
    }
}

impl Shared {
    /// Resolves once the agent has sent `notifications/initialized`: the server's own requests
    /// and notifications reach the agent only then, as the spec has it (the gateway tells the
    /// server it is initialized as soon as the server answers, so the server may speak first).
    pub(super) async fn client_initialized(&self) {
        let mut ready = self.client_ready.subscribe();
        let _ = ready.wait_for(|r| *r).await;
    }

    pub(super) fn upstream(&self) -> Result<&Peer<RoleClient>, McpError> {
        self.upstream.get().ok_or_else(|| McpError::invalid_request("the connection is not initialized", None))
    }

    /// Forwards one of the agent's requests to the server and returns its answer; the agent's
    /// progress token is mapped to the one the SDK puts on the forwarded request, and a
    /// cancellation by the agent cancels the forwarded request.
    pub(super) async fn forward(
        &self,
        request: ClientRequest,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<ServerResult, McpError> {
        self.forward_from(request, ctx, 0.0).await
    }

    /// [`Shared::forward`], the server's progress (and total) told to the agent `base` higher:
    /// after a hold whose progress reached `base - 1`, progress keeps increasing, as the spec
    /// requires (it went `(0,60),(5,60),(1,4),(2,4)`).
    pub(super) async fn forward_from(
        &self,
        mut request: ClientRequest,
        ctx: &RequestContext<RoleServer>,
        base: f64,
    ) -> Result<ServerResult, McpError> {
        let upstream = self.upstream()?;
        let agent_token = ctx.meta.get_progress_token();
        *request.get_meta_mut() = ctx.meta.clone();
        let handle = upstream
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
            .map_err(service_error)?;
        let mine = handle.progress_token.clone();
        if let Some(t) = agent_token
            && let Ok(mut map) = self.progress.lock()
        {
            map.insert(mine.clone(), (t, base));
        }
        let id = handle.id.clone();
        let result = tokio::select! {
            r = handle.await_response() => r.map_err(service_error),
            () = ctx.ct.cancelled() => {
                let _ = upstream
                    .notify_cancelled(rmcp::model::CancelledNotificationParam::new(Some(id), Some("cancelled by the client".into())))
                    .await;
                Err(McpError::internal_error("cancelled by the client", None))
            }
        };
        if let Ok(mut map) = self.progress.lock() {
            map.remove(&mine);
        }
        // The SDK reads an absent `resultType` as `complete`; the agent negotiated a version that
        // has none, so the result goes back as the server sent it.
        result.map(|mut r| {
            r.strip_result_type_for_legacy_peer();
            r
        })
    }

    /// What the server's `tools/list` says about `tool`; the whole list (every page) is read
    /// again when the tool is not known yet (the client may have read only some pages, or none).
    pub(super) async fn tool_info(&self, tool: &str) -> Result<Option<ToolInfo>, String> {
        let mut tools = self.tools.lock().await;
        if let Some(info) = tools.as_ref().and_then(|t| t.get(tool)) {
            return Ok(Some(info.clone()));
        }
        let listed =
            self.upstream().map_err(|e| e.message.to_string())?.list_all_tools().await.map_err(|e| e.to_string())?;
        let map = tool_map(&listed);
        let info = map.get(tool).cloned();
        *tools = Some(map);
        Ok(info)
    }
}

pub(super) fn tool_map(tools: &[rmcp::model::Tool]) -> HashMap<String, ToolInfo> {
    tools
        .iter()
        .map(|t| {
            let annotations = t.annotations.as_ref().and_then(|a| serde_json::to_value(a).ok()).unwrap_or(Value::Null);
            (t.name.to_string(), ToolInfo { annotations, output_schema: t.output_schema.is_some() })
        })
        .collect()
}

/// The real server's side: an MCP client whose requests and notifications go to the agent.
struct ServerSide {
    shared: Arc<Shared>,
    /// What the agent said about itself in `initialize` (passed on to the server).
    client: InitializeRequestParams,
    /// The agent.
    agent: Peer<RoleServer>,
}

impl Gateway {
    /// Starts the real server with the agent's `initialize` parameters and answers with the
    /// server's own result (capabilities, server info, instructions).
    pub(super) async fn initialize(
        &self,
        params: InitializeRequestParams,
        agent: Peer<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        let s = &self.shared;
        if s.upstream.get().is_some() {
            return Err(McpError::invalid_request("already initialized", None));
        }
        let mut cmd = tokio::process::Command::new(&s.opts.command[0]);
        cmd.args(&s.opts.command[1..]);
        // A process group of its own: stopping the gateway stops the server and what it started.
        cmd.process_group(0);
        let shown = s.opts.command.iter().map(|w| w.to_string_lossy()).collect::<Vec<_>>().join(" ");
        let (transport, _) =
            rmcp::transport::TokioChildProcess::builder(cmd).stderr(std::process::Stdio::inherit()).spawn().map_err(
                |e| McpError::internal_error(format!("warrant mcp-gateway could not start `{shown}`: {e}"), None),
            )?;
        if let (Some(pid), Ok(mut group)) = (transport.id(), s.server_group.lock()) {
            *group = i32::try_from(pid).ok();
        }
        let side = ServerSide { shared: s.clone(), client: params, agent };
        let handshake = tokio::time::timeout(s.opts.handshake, side.serve(transport)).await;
        let running = match handshake {
            Ok(Ok(running)) => running,
            Ok(Err(e)) => {
                return Err(McpError::internal_error(
                    format!("warrant mcp-gateway: `{shown}` did not complete the MCP handshake: {e}"),
                    None,
                ));
            }
            Err(_) => {
                s.stop_server().await;
                return Err(McpError::internal_error(
                    format!(
                        "warrant mcp-gateway: `{shown}` did not answer initialize within {}s; it was stopped",
                        s.opts.handshake.as_secs_f64()
                    ),
                    None,
                ));
            }
        };
        let peer = running.peer().clone();
        let info = peer
            .peer_info()
            .ok_or_else(|| McpError::internal_error("the MCP server sent no initialize result", None))?;
        if let Ok(mut stop) = s.upstream_stop.lock() {
            *stop = Some(running.cancellation_token());
        }
        let gone = s.clone();
        tokio::spawn(async move {
            let _ = running.waiting().await;
            gone.server_gone.notify_one();
        });
        let _ = s.protocol.set(info.protocol_version.clone());
        let _ = s.upstream.set(peer);
        let mut result = InitializeResult::new(info.capabilities.clone());
        result.protocol_version = info.protocol_version.clone();
        if let Some(server) = &info.server_info {
            result.server_info = server.clone();
        }
        result.instructions = info.instructions.clone();
        result.meta = info.meta.clone();
        Ok(result)
    }
}

impl Service<RoleClient> for ServerSide {
    async fn handle_request(
        &self,
        mut request: ServerRequest,
        ctx: RequestContext<RoleClient>,
    ) -> Result<ClientResult, McpError> {
        if let ServerRequest::PingRequest(_) = request {
            return Ok(ClientResult::empty(()));
        }
        self.shared.client_initialized().await;
        *request.get_meta_mut() = ctx.meta;
        tokio::select! {
            r = self.agent.send_request(request) => r.map_err(service_error),
            () = ctx.ct.cancelled() => Err(McpError::internal_error("cancelled by the server", None)),
        }
    }

    async fn handle_notification(
        &self,
        mut notification: ServerNotification,
        ctx: NotificationContext<RoleClient>,
    ) -> Result<(), McpError> {
        self.shared.client_initialized().await;
        match &mut notification {
            ServerNotification::ProgressNotification(p) => {
                let agent_token =
                    self.shared.progress.lock().ok().and_then(|m| m.get(&p.params.progress_token).cloned());
                // Progress on a request the agent asked no progress for is dropped.
                let Some((t, base)) = agent_token else { return Ok(()) };
                p.params.progress_token = t;
                p.params.progress += base;
                if let Some(total) = p.params.total.as_mut() {
                    *total += base;
                }
            }
            ServerNotification::CancelledNotification(_) => return Ok(()),
            ServerNotification::ToolListChangedNotification(_) => {
                *self.shared.tools.lock().await = None;
            }
            _ => {}
        }
        *notification.get_meta_mut() = ctx.meta;
        self.agent.send_notification(notification).await.map_err(service_error)
    }

    fn get_info(&self) -> InitializeRequestParams {
        self.client.clone()
    }
}
