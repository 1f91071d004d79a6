//! `warrant mcp-gateway`: an MCP server to the agent, over stdio, that runs the real
//! MCP server as a child process and relays everything between them exactly as written —
//! `initialize` (the server's capabilities, instructions and protocol version), `tools/list`,
//! resources, prompts, completions, tasks, notifications both ways, and the server's own requests
//! to the client (roots, sampling, elicitation) — except `tools/call`, which it governs first
//! (`docs/integrations.md`, "MCP gateway", Lodestar's MCP proxy).
//!
//! A call is a packet ([`warrant_protocol::calls::call_packet`], tool key `<name>/<tool>`, the server's
//! annotations from `tools/list`) judged by [`Governor`]: allowed calls are forwarded, once the
//! preconditions the tool table declares are re-checked ([`Governor::recheck_before_run`]), and
//! their result returned unchanged; held calls wait for the principal's signed decision, with
//! `notifications/progress` keeping the client alive; everything else — refused, blocked,
//! timed out, expired, and every error warrant meets on the way — is a normal tool result with
//! `isError: true`, a text the model can act on and `_meta._warrant` ([`warrant_object`]), never a
//! transport error and never a forwarded call. Every forwarded call leaves a receipt.
//!
//! What it does not govern passes through byte for byte: the relay reads only the fields it routes
//! by (a message's `id` and `method`, a call's parameters), so keys keep their order, numbers
//! their form, and fields it does not know reach the other side; it adds nothing but the
//! progress and refusals of the calls it governs. Lines are framed by `tokio-util`'s codec, JSON
//! parsed by `serde_json`, and the messages the gateway writes itself are built from the official
//! Rust SDK's types (`rmcp`, pinned in `Cargo.toml`).
//!
//! Fail closed: a missing spool, no pinned key, a policy error, a panic or any other internal
//! error refuses the call; the gateway itself still starts, so the agent reads why.
//!
//! `--listen PATH` serves agents on a Unix socket instead ([`run`] with [`Options::listen`]):
//! each accepted connection is one session exactly as stdio's, and `--connect PATH` ([`connect`])
//! is the agent's side, a byte relay. With `--sign-receipts` ([`Options::signer`]) every receipt
//! carries the gateway's own signature; a receipt signed by a key the principal pinned as a
//! gateway's is an observed outcome (`docs/integrations.md`, "A gateway under its own Unix user").

mod call;
mod http;
mod listen_http;
mod naming;
mod receipts;
mod relay;
mod result;
mod socket;
mod tasks;
mod wire;

pub use http::HttpServer;
pub use listen_http::HttpListen;
pub use naming::{default_name, default_name_for_url};
pub use receipts::RECEIPTS_EVERY;
pub use socket::connect;

use bytes::Bytes;
use receipts::Unpacketed;
use relay::serve;
use serde_json::Value;
use serde_json::value::RawValue;
use socket::{AgentIo, listen};
use std::collections::HashMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;
use warrant_engine::govern::Live;
#[cfg(doc)]
use warrant_engine::govern::{Governor, warrant_object};
use warrant_store::spool::Spool;

/// How long a held call waits for the principal by default.
pub const DEFAULT_WAIT_SECS: f64 = 300.0;

/// How often a held call tells the client it is still waiting (`notifications/progress`, when the
/// request carried a `progressToken`).
pub const PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// The gateway's options (`warrant mcp-gateway …`).
#[derive(Debug, Clone)]
pub struct Options {
    /// The spool, or why none could be resolved (every call is then refused with that reason).
    pub spool: Result<Spool, String>,
    /// The configuration directory (pinned keys, policy.toml).
    pub config_dir: PathBuf,
    /// The agent id packets name.
    pub agent: String,
    /// The notebook whose trust applies.
    pub notebook: String,
    /// The working directory, shown in packets.
    pub cwd: Option<String>,
    /// The server's name: tool keys are `<name>/<tool>`.
    pub name: String,
    /// How long a held call waits for the principal.
    pub wait: Duration,
    /// How long the real server has to answer `initialize` (`--handshake-timeout`, 30 s by
    /// default): past it the agent gets an error naming the server, and the server is stopped.
    pub handshake: Duration,
    /// The real server's command line (program and arguments); empty for a remote server.
    pub command: Vec<OsString>,
    /// `--url`: a remote server over Streamable HTTP instead of a command.
    pub http: Option<HttpServer>,
    /// `--listen`: the Unix socket agents connect to (each connection one MCP session, with its
    /// own server child); `None` serves one agent on stdio.
    pub listen: Option<PathBuf>,
    /// `--listen http://HOST:PORT/PATH`: serve clients over Streamable HTTP, each client session
    /// one agent session.
    pub listen_http: Option<HttpListen>,
    /// `--sign-receipts`: the gateway's own key, which signs every receipt it publishes
    /// ([`warrant_store::spool::publish_signed_receipt`]).
    pub signer: Option<Arc<warrant_protocol::keys::Principal>>,
}

/// Runs the gateway until the agent closes its connection or the server exits. Returns the
/// process exit code.
///
/// # Errors
/// The runtime could not start, the server could not be started, or the agent never completed
/// the MCP handshake.
pub fn run(opts: Options) -> Result<u8, String> {
    if opts.command.is_empty() && opts.http.is_none() {
        return Err("no server: warrant mcp-gateway [OPTIONS] (--url URL | -- COMMAND [ARGS…])".into());
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("could not start the runtime: {e}"))?;
    let result = match (opts.listen_http.clone(), opts.listen.clone()) {
        (Some(http), _) => rt.block_on(listen_http::listen_http(opts, http)),
        (None, Some(path)) => rt.block_on(listen(opts, path)),
        (None, None) => rt.block_on(serve_stdio(opts)),
    };
    // Standard input is read on a blocking thread that cannot be interrupted: do not wait for it.
    rt.shutdown_timeout(Duration::from_secs(2));
    result
}

/// One session over standard input and output, ended (its receipts written, its server stopped)
/// by SIGTERM or SIGINT as by the agent closing its end.
async fn serve_stdio(opts: Options) -> Result<u8, String> {
    use tokio::signal::unix::{SignalKind, signal};
    let (tx, rx) = tokio::sync::watch::channel(false);
    let keep = match signal(SignalKind::terminate()).and_then(|t| signal(SignalKind::interrupt()).map(|i| (t, i))) {
        Ok((mut term, mut int)) => {
            tokio::spawn(async move {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = int.recv() => {}
                }
                let _ = tx.send(true);
                // The sender lives on: a dropped one would read as a stop.
                std::future::pending::<()>().await;
            });
            None
        }
        Err(_) => Some(tx),
    };
    let result = serve(opts, AgentIo::Stdio, Some(rx)).await;
    drop(keep);
    result
}

/// What the two sides of one connection share.
struct Shared {
    opts: Options,
    /// The policies, keys and verified chain, kept between calls (`None` without a spool).
    live: Option<Arc<Live>>,
    /// Calls that ran with no packet, by (action class, tool key, `isError`), until their
    /// receipt is written.
    unpacketed: Mutex<HashMap<(String, String, bool), Unpacketed>>,
    /// The last [`Shared::flush_receipts`] could not write every receipt: until one does, no
    /// call runs with no packet.
    receipts_behind: std::sync::atomic::AtomicBool,
    /// This connection's id: the packets' session, and the prefix of their call ids.
    connection: String,
    /// Messages to the agent, one per line.
    to_agent: UnboundedSender<Bytes>,
    /// Messages to the server, once it runs (taken when it is stopped: its input closes).
    to_server: Mutex<Option<UnboundedSender<Bytes>>>,
    /// The agent's requests the server has, by id ([`wire::key`]).
    forwarded: Mutex<HashMap<String, Forwarded>>,
    /// The gateway's own requests to the server (reading its tool list), by id.
    own: Mutex<HashMap<String, tokio::sync::oneshot::Sender<Box<RawValue>>>>,
    /// Counts the gateway's own requests.
    own_ids: std::sync::atomic::AtomicU64,
    /// The `tools/call`s being governed or run, by the agent's request id: the id as written and
    /// what the agent's `notifications/cancelled` triggers.
    governing: Mutex<HashMap<String, (Box<RawValue>, CancellationToken)>>,
    /// The real server's process group (its pid: it leads a group of its own), to stop it and
    /// every process it started.
    server_group: Mutex<Option<i32>>,
    /// The server's tools by name (`None` until listed, and again after `tools/list_changed`).
    tools: Mutex<Option<HashMap<String, ToolInfo>>>,
    /// What to add to the server's progress (and total) on a call that was held, by the agent's
    /// progress token (its JSON text), so the agent's progress keeps increasing.
    progress_base: Mutex<HashMap<String, f64>>,
    /// The last progress told to the agent while its call was held, by its progress token.
    held_progress: Mutex<HashMap<String, f64>>,
    /// Calls governed on this connection (each one's packet id counts them).
    calls: std::sync::atomic::AtomicU64,
    /// The tasks of held calls, by task id ([`tasks`]).
    tasks: Mutex<HashMap<String, tasks::HeldTask>>,
}

/// One of the agent's requests the server has.
struct Forwarded {
    /// Its id, as the agent wrote it.
    id: Box<RawValue>,
    /// Where the answer goes: a call's task, or (`None`) straight to the agent.
    answer: Option<tokio::sync::oneshot::Sender<Box<RawValue>>>,
    /// A `tools/list`: its tools are read on the way.
    tools_list: bool,
    /// A `tasks/…` request: how its answer is read.
    tasks: tasks::TaskAnswer,
}

impl Shared {
    fn new(opts: Options, live: Option<Arc<Live>>, to_agent: UnboundedSender<Bytes>) -> Self {
        Self {
            connection: uuid::Uuid::new_v4().simple().to_string()[..12].to_owned(),
            live,
            unpacketed: Mutex::new(HashMap::new()),
            receipts_behind: std::sync::atomic::AtomicBool::new(false),
            opts,
            to_agent,
            to_server: Mutex::new(None),
            forwarded: Mutex::new(HashMap::new()),
            own: Mutex::new(HashMap::new()),
            own_ids: std::sync::atomic::AtomicU64::new(0),
            governing: Mutex::new(HashMap::new()),
            server_group: Mutex::new(None),
            tools: Mutex::new(None),
            progress_base: Mutex::new(HashMap::new()),
            held_progress: Mutex::new(HashMap::new()),
            calls: std::sync::atomic::AtomicU64::new(0),
            tasks: Mutex::new(HashMap::new()),
        }
    }

    /// Sends the agent one message.
    fn send_agent(&self, message: Bytes) {
        let _ = self.to_agent.send(message);
    }

    /// Sends the server one message (dropped when it is not running).
    fn send_server(&self, message: Bytes) {
        if let Some(tx) = self.to_server.lock().ok().and_then(|t| t.clone()) {
            let _ = tx.send(message);
        }
    }

    /// The server as the agent is told of it: its `--name` and program (the command's first
    /// word, without its directory), or its URL's scheme, host and port; never the command's
    /// arguments or the URL's path, which may carry secrets (tokens, connection strings).
    fn shown_to_agent(&self) -> String {
        match &self.opts.http {
            Some(h) => h.shown(),
            None => {
                let program = self.opts.command.first().map(std::path::Path::new);
                let program = program.and_then(|p| p.file_name()).map(|p| p.to_string_lossy()).unwrap_or_default();
                format!("{} ({program})", self.opts.name)
            }
        }
    }

    /// The server's command line (or URL, without credentials), as shown in the gateway's own
    /// log (its standard error, the principal's), never to the agent.
    fn shown_command(&self) -> String {
        match &self.opts.http {
            Some(h) => h.shown_with_path(),
            None => self.opts.command.iter().map(|w| w.to_string_lossy()).collect::<Vec<_>>().join(" "),
        }
    }
}

/// What `tools/list` said about one tool.
#[derive(Debug, Clone)]
struct ToolInfo {
    /// Its `annotations` (`null` when none).
    annotations: Value,
    /// Whether it declares an `outputSchema` (then `structuredContent` must follow it, and a
    /// refusal carries `_warrant` in `_meta` only).
    output_schema: bool,
}
