//! A trivial MCP server over stdio, for `examples/gateway_overhead.rs`: one read-only tool,
//! `echo`, that answers its `text` argument at once. Built on the same SDK as the gateway
//! (`rmcp`), so the benchmark measures the gateway, not a slow server.
//!
//! ```text
//! cargo build --release --example mcp_echo
//! ```

use rmcp::ErrorData as McpError;
use rmcp::model::{
    CallToolResult, ClientRequest, ContentBlock, InitializeResult, ListToolsResult, ServerCapabilities, ServerResult,
    Tool, ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer, Service, ServiceExt as _};
use std::sync::Arc;

struct Echo;

impl Service<RoleServer> for Echo {
    async fn handle_request(
        &self,
        request: ClientRequest,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ServerResult, McpError> {
        match request {
            ClientRequest::InitializeRequest(_) => Ok(ServerResult::InitializeResult(self.get_info())),
            ClientRequest::PingRequest(_) => Ok(ServerResult::empty(())),
            ClientRequest::ListToolsRequest(_) => {
                let schema = serde_json::json!({"type": "object", "properties": {"text": {"type": "string"}}});
                let serde_json::Value::Object(schema) = schema else { unreachable!("an object") };
                let tool = Tool::new("echo", "Answers its text.", Arc::new(schema))
                    .annotate(ToolAnnotations::new().read_only(true));
                Ok(ServerResult::ListToolsResult(ListToolsResult::with_all_items(vec![tool])))
            }
            ClientRequest::CallToolRequest(r) => {
                let text = r.params.arguments.as_ref().and_then(|a| a.get("text")).and_then(|t| t.as_str());
                Ok(ServerResult::CallToolResult(CallToolResult::success(vec![ContentBlock::text(
                    text.unwrap_or_default().to_owned(),
                )])))
            }
            _ => Err(McpError::invalid_request("mcp_echo answers tools/list and tools/call only", None)),
        }
    }

    async fn handle_notification(
        &self,
        _notification: rmcp::model::ClientNotification,
        _ctx: rmcp::service::NotificationContext<RoleServer>,
    ) -> Result<(), McpError> {
        Ok(())
    }

    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    rt.block_on(async {
        let running = Echo.serve(rmcp::transport::stdio()).await.expect("handshake");
        let _ = running.waiting().await;
    });
}
