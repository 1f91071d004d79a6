//! A trivial MCP server, for `examples/gateway_overhead.rs` (over stdio) and
//! `examples/gateway_overhead_http.rs` (over Streamable HTTP, `--http 127.0.0.1:PORT`, at
//! `/mcp`): one read-only tool, `echo`, that answers its `text` argument at once. Built on the
//! same SDK as the gateway (`rmcp`; over HTTP its `StreamableHttpService`, stateless, answering
//! with JSON bodies), so the benchmarks measure the gateway, not a slow server.
//!
//! ```text
//! cargo build --release --example mcp_echo
//! ```

use rmcp::ErrorData as McpError;
use rmcp::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, InitializeResult, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, Tool, ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer, ServiceExt as _};
use std::sync::Arc;

struct Echo;

impl ServerHandler for Echo {
    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let schema = serde_json::json!({"type": "object", "properties": {"text": {"type": "string"}}});
        let serde_json::Value::Object(schema) = schema else { unreachable!("an object") };
        let tool =
            Tool::new("echo", "Answers its text.", Arc::new(schema)).annotate(ToolAnnotations::new().read_only(true));
        Ok(ListToolsResult::with_all_items(vec![tool]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let text = request.arguments.as_ref().and_then(|a| a.get("text")).and_then(|t| t.as_str());
        Ok(CallToolResult::success(vec![ContentBlock::text(text.unwrap_or_default().to_owned())]).into())
    }

    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let args: Vec<String> = std::env::args().collect();
    match args.iter().position(|a| a == "--http").and_then(|i| args.get(i + 1)) {
        Some(addr) => rt.block_on(serve_http(addr)),
        None => rt.block_on(async {
            let running = Echo.serve(rmcp::transport::stdio()).await.expect("handshake");
            let _ = running.waiting().await;
        }),
    }
}

/// Serves `echo` over Streamable HTTP at `http://ADDR/mcp` until killed.
async fn serve_http(addr: &str) {
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    };
    let mut config = StreamableHttpServerConfig::default();
    config.legacy_session_mode = false;
    config.json_response = true;
    config.sse_keep_alive = None;
    let service = StreamableHttpService::new(|| Ok(Echo), Arc::new(LocalSessionManager::default()), config);
    let listener = tokio::net::TcpListener::bind(addr).await.expect("bind");
    loop {
        let Ok((stream, _)) = listener.accept().await else { continue };
        let _ = stream.set_nodelay(true);
        let service = hyper_util::service::TowerToHyperService::new(service.clone());
        tokio::spawn(async move {
            let io = hyper_util::rt::TokioIo::new(stream);
            let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await;
        });
    }
}
