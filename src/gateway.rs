//! `warrant mcp-gateway` (issue 17): an MCP server to the agent, over stdio, that runs the real
//! MCP server as a child process and forwards everything to it — `initialize` (the server's
//! capabilities and instructions pass through), `tools/list`, resources, prompts, completions,
//! notifications both ways, and the server's own requests to the client (roots, sampling,
//! elicitation) — except `tools/call`, which it governs first (`docs/integrations.md`, "MCP gateway",
//! `../shared/reference/agent-integrations.md` §3, Lodestar's proxy in `lodestar-and-tiers.md`).
//!
//! A call is a packet ([`crate::protocol::calls::call_packet`], tool key `<name>/<tool>`, the server's
//! annotations from `tools/list`) judged by [`Governor`]: allowed calls are forwarded, once the
//! preconditions the tool table declares are re-checked ([`Governor::recheck_before_run`]), and
//! their result returned unchanged; held calls wait for the principal's signed decision, with
//! `notifications/progress` keeping the client alive; everything else — refused, blocked,
//! timed out, expired, and every error warrant meets on the way — is a normal tool result with
//! `isError: true`, a text the model can act on and `_meta._warrant` ([`warrant_object`]), never a
//! transport error and never a forwarded call. Every forwarded call leaves a receipt.
//!
//! The MCP protocol (JSON-RPC framing, the handshake, request ids, cancellation) is the official
//! Rust SDK's, `rmcp` (pinned in `Cargo.toml`); nothing here writes JSON-RPC by hand.
//!
//! Fail closed: a missing spool, no pinned key, a policy error, a panic or any other internal
//! error refuses the call; the gateway itself still starts, so the agent reads why.
//!
//! `--listen PATH` serves agents on a Unix socket instead ([`run`] with [`Options::listen`]):
//! each accepted connection is one session exactly as stdio's, and `--connect PATH` ([`connect`])
//! is the agent's side, a byte relay. With `--sign-receipts` ([`Options::signer`]) every receipt
//! carries the gateway's own signature; a receipt signed by a key the principal pinned as a
//! gateway's is an observed outcome (`docs/integrations.md`, "A gateway under its own Unix user").

use crate::govern::{Governor, Live, Outcome, Submitted, warrant_object};
use crate::protocol::calls::ToolCall;
use crate::store::spool::Spool;
use rmcp::ErrorData as McpError;
use rmcp::model::{
    CallToolRequest, CallToolResult, ClientNotification, ClientRequest, ClientResult, ContentBlock, GetMeta as _,
    InitializeRequestParams, InitializeResult, MetaObject, ProgressNotificationParam, ProgressToken, ProtocolVersion,
    RequestId, ServerNotification, ServerRequest, ServerResult,
};
use rmcp::service::{
    NotificationContext, Peer, PeerRequestOptions, RequestContext, RoleClient, RoleServer,
    RunningServiceCancellationToken, Service, ServiceError, ServiceExt as _,
};
use serde_json::{Value, json};
use std::borrow::Cow;
use std::collections::HashMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

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
    /// The real server's command line (program and arguments).
    pub command: Vec<OsString>,
    /// `--listen`: the Unix socket agents connect to (each connection one MCP session, with its
    /// own server child); `None` serves one agent on stdio.
    pub listen: Option<PathBuf>,
    /// `--sign-receipts`: the gateway's own key, which signs every receipt it publishes
    /// ([`crate::store::spool::publish_signed_receipt`]).
    pub signer: Option<Arc<crate::protocol::keys::Principal>>,
}

/// Launchers whose first non-option argument names the server (`npx -y PACKAGE`).
const RUNNERS: &[&str] = &["npx", "bunx", "pnpx", "uvx"];
/// Launchers with a subcommand before the package (`npm exec PACKAGE`, `pipx run PACKAGE`).
const SUB_RUNNERS: &[(&str, &str)] = &[("npm", "exec"), ("pnpm", "dlx"), ("yarn", "dlx"), ("pipx", "run")];
/// Runner options that take a value in the next argument.
const VALUE_OPTIONS: &[&str] = &["-p", "--package", "--from", "--with", "--python", "--spec"];

/// The default `--name` for a server command line:
///
/// 1. the program is COMMAND's base name; for a package runner (`npx`, `bunx`, `pnpx`, `uvx`,
///    `npm exec`, `pnpm dlx`, `yarn dlx`, `pipx run`) it is the runner's first argument that is
///    not an option (skipping the value of `-p`/`--package`/`--from`/…), and for
///    `python[3] -m MODULE` it is MODULE;
/// 2. its last `/` segment, without a version (`@1.2.3`, `==1.2.3`) or a script extension
///    (`.js`, `.mjs`, `.cjs`, `.ts`, `.py`);
/// 3. without a leading `mcp-server-` (or `mcp_server_`), else without a leading `server-`;
/// 4. every character other than a letter, a digit, `.`, `_` and `-` becomes `-` (leading dots
///    are dropped), and an empty result is `server`.
///
/// So `mcp-server-filesystem` → `filesystem`, `npx -y @modelcontextprotocol/server-filesystem DIR`
/// → `filesystem`, `uvx mcp-server-git==2026.10.19` → `git`, `python -m mcp_server_git` → `git`.
#[must_use]
pub fn default_name(command: &[OsString]) -> String {
    let words: Vec<String> = command.iter().map(|w| w.to_string_lossy().into_owned()).collect();
    let base = |w: &str| w.rsplit('/').next().unwrap_or(w).to_owned();
    let program = words.first().map(|w| base(w)).unwrap_or_default();
    let first_operand = |rest: &[String]| -> Option<String> {
        let mut it = rest.iter();
        while let Some(w) = it.next() {
            if VALUE_OPTIONS.contains(&w.as_str()) {
                it.next();
            } else if !w.starts_with('-') {
                return Some(w.clone());
            }
        }
        None
    };
    let target = if RUNNERS.contains(&program.as_str()) {
        first_operand(&words[1..])
    } else if SUB_RUNNERS.iter().any(|(p, s)| *p == program && words.get(1).map(String::as_str) == Some(*s)) {
        first_operand(&words[2..])
    } else if program.starts_with("python") {
        words.iter().position(|w| w == "-m").and_then(|i| words.get(i + 1).cloned())
    } else {
        None
    };
    let mut name = base(&target.unwrap_or(program));
    // A version: `@scope/pkg@1.2` (its scope's `@` is gone with the segment), `pkg==1.2`.
    if let Some(i) = name.char_indices().skip(1).find(|&(_, c)| c == '@').map(|(i, _)| i) {
        name.truncate(i);
    }
    for sep in ["==", ">=", "<=", "~="] {
        if let Some(i) = name.find(sep) {
            name.truncate(i);
        }
    }
    for ext in [".js", ".mjs", ".cjs", ".ts", ".py"] {
        if let Some(stem) = name.strip_suffix(ext) {
            name = stem.to_owned();
            break;
        }
    }
    let name = ["mcp-server-", "mcp_server_", "server-"]
        .iter()
        .find_map(|p| name.strip_prefix(p).filter(|rest| !rest.is_empty()))
        .unwrap_or(&name)
        .to_owned();
    let name: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '-' })
        .collect::<String>()
        .trim_start_matches('.')
        .replace("..", ".")
        .chars()
        .take(64)
        .collect();
    if name.is_empty() { "server".to_owned() } else { name }
}

/// Runs the gateway until the agent closes its connection or the server exits. Returns the
/// process exit code.
///
/// # Errors
/// The runtime could not start, the server could not be started, or the agent never completed
/// the MCP handshake.
pub fn run(opts: Options) -> Result<u8, String> {
    if opts.command.is_empty() {
        return Err("no server command: warrant mcp-gateway [OPTIONS] -- COMMAND [ARGS…]".into());
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("could not start the runtime: {e}"))?;
    let result = match opts.listen.clone() {
        Some(path) => rt.block_on(listen(opts, path)),
        None => rt.block_on(serve_stdio(opts)),
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

/// How the agent reaches one session.
enum AgentIo {
    /// Standard input and output (the agent's MCP client started the gateway).
    Stdio,
    /// A connection accepted on the `--listen` socket.
    Unix(tokio::net::UnixStream),
}

/// The `--listen` socket: removed when the gateway stops (if it is still the one it bound).
struct SocketFile {
    path: PathBuf,
    ino: u64,
}

impl Drop for SocketFile {
    fn drop(&mut self) {
        use std::os::unix::fs::MetadataExt as _;
        if std::fs::symlink_metadata(&self.path).is_ok_and(|m| m.ino() == self.ino) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Binds the `--listen` socket at `path`, mode 0660 (its group may connect): refuses a path that
/// exists and is not a socket, and a socket another process still accepts on; a stale socket
/// (nobody accepts) is replaced.
fn bind_socket(path: &std::path::Path) -> Result<(tokio::net::UnixListener, SocketFile), String> {
    use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _, PermissionsExt as _};
    let shown = path.display();
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_socket() => {
            if std::os::unix::net::UnixStream::connect(path).is_ok() {
                return Err(format!("{shown}: another process is listening on this socket"));
            }
            std::fs::remove_file(path).map_err(|e| format!("{shown}: could not remove the stale socket: {e}"))?;
        }
        Ok(_) => return Err(format!("{shown} exists and is not a socket: refusing to replace it")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("{shown}: {e}")),
    }
    // Created 0660 from the start (no moment where others could connect), then made so whatever
    // the umask was.
    let old = rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o117));
    let bound = tokio::net::UnixListener::bind(path);
    rustix::process::umask(old);
    let listener = bound.map_err(|e| format!("{shown}: could not listen: {e}"))?;
    let meta = std::fs::symlink_metadata(path).map_err(|e| format!("{shown}: {e}"))?;
    let file = SocketFile { path: path.to_owned(), ino: meta.ino() };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o660)).map_err(|e| format!("{shown}: {e}"))?;
    Ok((listener, file))
}

/// `--listen`: accepts agents on the Unix socket at `path`, each connection one MCP session
/// served concurrently ([`serve`]: its own server child and connection id), until SIGINT or
/// SIGTERM; then every session stops (its server child with it) and the socket is removed.
async fn listen(opts: Options, path: PathBuf) -> Result<u8, String> {
    use tokio::signal::unix::{SignalKind, signal};
    let (listener, _socket) = bind_socket(&path)?;
    let mut term = signal(SignalKind::terminate()).map_err(|e| format!("could not handle SIGTERM: {e}"))?;
    let mut int = signal(SignalKind::interrupt()).map_err(|e| format!("could not handle SIGINT: {e}"))?;
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut sessions = tokio::task::JoinSet::new();
    eprintln!("warrant mcp-gateway: listening on {}", path.display());
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let (o, stop) = (opts.clone(), stop_rx.clone());
                    sessions.spawn(async move {
                        if let Err(e) = serve(o, AgentIo::Unix(stream), Some(stop)).await {
                            eprintln!("warrant mcp-gateway: {e}");
                        }
                    });
                }
                Err(e) => {
                    eprintln!("warrant mcp-gateway: accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            Some(_) = sessions.join_next(), if !sessions.is_empty() => {}
            _ = term.recv() => break,
            _ = int.recv() => break,
        }
    }
    drop(listener);
    let _ = stop_tx.send(true);
    // Each session flushes its receipts and stops its server; those that do not in time are
    // dropped, which kills their server child.
    let _ = tokio::time::timeout(Duration::from_secs(5), async { while sessions.join_next().await.is_some() {} }).await;
    sessions.shutdown().await;
    Ok(0)
}

/// `warrant mcp-gateway --connect PATH`: relays standard input to the gateway listening on the
/// Unix socket at PATH and its answers to standard output, byte for byte (no framing of its
/// own), until the gateway closes the connection. Returns the exit code.
///
/// # Errors
/// The socket cannot be reached (no gateway is listening, or this user may not connect).
pub fn connect(path: &std::path::Path) -> Result<u8, String> {
    use tokio::io::AsyncWriteExt as _;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("could not start the runtime: {e}"))?;
    let result = rt.block_on(async {
        let stream = tokio::net::UnixStream::connect(path)
            .await
            .map_err(|e| format!("cannot reach the MCP gateway at {}: {e}", path.display()))?;
        let (mut from_gateway, mut to_gateway) = stream.into_split();
        let (mut input, mut output): (
            Box<dyn tokio::io::AsyncRead + Unpin + Send>,
            Box<dyn tokio::io::AsyncWrite + Unpin + Send>,
        ) = match fifo_stdio() {
            Some((r, w)) => (Box::new(r), Box::new(w)),
            None => (Box::new(tokio::io::stdin()), Box::new(tokio::io::stdout())),
        };
        // The agent's end of input ends the gateway's: it closes the session, then the socket.
        tokio::spawn(async move {
            let _ = tokio::io::copy(&mut input, &mut to_gateway).await;
            let _ = to_gateway.shutdown().await;
        });
        let down = tokio::io::copy(&mut from_gateway, &mut output).await;
        let _ = output.flush().await;
        down.map(|_| 0u8).map_err(|e| format!("the connection to the MCP gateway failed: {e}"))
    });
    rt.shutdown_timeout(Duration::from_millis(200));
    result
}

/// One MCP session with one agent: its own [`Shared`] (connection id, server child, receipts),
/// until the agent closes the connection, the server exits, or `shutdown` turns true (`--listen`
/// shutting down).
async fn serve(opts: Options, io: AgentIo, shutdown: Option<tokio::sync::watch::Receiver<bool>>) -> Result<u8, String> {
    let live = opts.spool.as_ref().ok().map(|spool| Arc::new(Live::new(spool.clone(), &opts.config_dir)));
    let shared = Arc::new(Shared {
        connection: uuid::Uuid::new_v4().simple().to_string()[..12].to_owned(),
        live,
        unpacketed: Mutex::new(HashMap::new()),
        receipts_behind: std::sync::atomic::AtomicBool::new(false),
        opts,
        upstream: OnceLock::new(),
        upstream_stop: Mutex::new(None),
        protocol: OnceLock::new(),
        tools: tokio::sync::Mutex::new(None),
        progress: Mutex::new(HashMap::new()),
        calls: std::sync::atomic::AtomicU64::new(0),
        server_gone: tokio::sync::Notify::new(),
    });
    let gateway = Gateway { shared: shared.clone() };
    let running = match io {
        AgentIo::Stdio => match fifo_stdio() {
            Some(pipes) => gateway.serve(pipes).await,
            None => gateway.serve(rmcp::transport::stdio()).await,
        },
        AgentIo::Unix(stream) => gateway.serve(stream.into_split()).await,
    }
    .map_err(|e| format!("MCP handshake with the agent failed: {e}"))?;
    let stop = running.cancellation_token();
    let flusher = shared.clone();
    let receipts = tokio::spawn(async move {
        loop {
            tokio::time::sleep(RECEIPTS_EVERY).await;
            flusher.clone().flush_receipts().await;
        }
    });
    let stopped = async move {
        match shutdown {
            Some(mut rx) => {
                let _ = rx.wait_for(|s| *s).await;
            }
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = running.waiting() => {}
        () = shared.server_gone.notified() => {
            eprintln!("warrant mcp-gateway: the MCP server exited; closing the connection");
            stop.cancel();
        }
        () = stopped => stop.cancel(),
    }
    receipts.abort();
    shared.clone().flush_receipts().await;
    // The server (child process) stops with the gateway.
    let upstream = shared.upstream_stop.lock().ok().and_then(|mut g| g.take());
    if let Some(ct) = upstream {
        ct.cancel();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(0)
}

/// How often the receipts of calls that ran with no packet are written (and once more when the
/// connection ends).
pub const RECEIPTS_EVERY: Duration = Duration::from_secs(1);

/// The calls of one tool and action class that ran with no packet since the last receipt, with
/// one result (`isError` or not).
#[derive(Debug)]
struct Unpacketed {
    count: u64,
    first: String,
    last: String,
    first_at: String,
    last_at: String,
}

/// Standard input and output as non-blocking pipes read and written on the runtime's own
/// thread, when both are pipes (as an MCP client that spawns the gateway makes them): the SDK's
/// `stdio()` reads standard input on a blocking thread, and the hand-offs between threads cost
/// more than the rest of an allowed call. `None` otherwise (a socket, a terminal, a file): then
/// the SDK's `stdio()`.
fn fifo_stdio() -> Option<(tokio::net::unix::pipe::Receiver, tokio::net::unix::pipe::Sender)> {
    use std::os::fd::AsFd as _;
    let input = std::io::stdin().as_fd().try_clone_to_owned().ok()?;
    let output = std::io::stdout().as_fd().try_clone_to_owned().ok()?;
    // Both are checked to be pipes (FIFOs) before either is made non-blocking.
    let fifo = |fd: &std::os::fd::OwnedFd| {
        rustix::fs::fstat(fd)
            .is_ok_and(|st| rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Fifo)
    };
    if !(fifo(&input) && fifo(&output)) {
        return None;
    }
    let r = tokio::net::unix::pipe::Receiver::from_owned_fd(input).ok()?;
    let w = tokio::net::unix::pipe::Sender::from_owned_fd(output).ok()?;
    Some((r, w))
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
    /// The real server, once the agent's `initialize` started it.
    upstream: OnceLock<Peer<RoleClient>>,
    upstream_stop: Mutex<Option<RunningServiceCancellationToken>>,
    /// The protocol version the real server agreed to.
    protocol: OnceLock<ProtocolVersion>,
    /// The server's tools by name (`None` until listed, and again after `tools/list_changed`).
    tools: tokio::sync::Mutex<Option<HashMap<String, ToolInfo>>>,
    /// The gateway's progress tokens on forwarded requests → the agent's.
    progress: Mutex<HashMap<ProgressToken, ProgressToken>>,
    /// Calls governed on this connection (each one's packet id counts them).
    calls: std::sync::atomic::AtomicU64,
    /// Notified when the server's connection ends.
    server_gone: tokio::sync::Notify,
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

fn service_error(e: ServiceError) -> McpError {
    match e {
        ServiceError::McpError(e) => e,
        other => McpError::internal_error(format!("warrant mcp-gateway: the MCP server: {other}"), None),
    }
}

impl Shared {
    /// Counts a call that ran with no packet towards its receipt.
    fn ran_unpacketed(&self, class: String, key: String, call_id: &str, is_error: bool) {
        let at = crate::protocol::clock::now_rfc3339();
        if let Ok(mut m) = self.unpacketed.lock() {
            let e = m.entry((class, key, is_error)).or_insert_with(|| Unpacketed {
                count: 0,
                first: call_id.to_owned(),
                last: String::new(),
                first_at: at.clone(),
                last_at: String::new(),
            });
            e.count += 1;
            call_id.clone_into(&mut e.last);
            e.last_at = at;
        }
    }

    /// Writes one receipt for each tool, class and result whose calls ran with no packet since
    /// the last time: its note counts them and names the first and last call ids and times.
    /// What could not be written is kept for the next time, and until it is, no call runs with
    /// no packet ([`Shared::receipts_behind`]): each then needs its own packet, which fails
    /// closed while the spool cannot be written.
    async fn flush_receipts(self: Arc<Self>) {
        let batch = match self.unpacketed.lock() {
            Ok(mut m) if !m.is_empty() => std::mem::take(&mut *m),
            _ => return,
        };
        let (Some(live), agent, signer) = (self.live.clone(), self.opts.agent.clone(), self.opts.signer.clone()) else {
            return;
        };
        let written = tokio::task::spawn_blocking(move || {
            let mut unwritten = Vec::new();
            for ((class, key, is_error), u) in batch {
                let note = format!(
                    "{} call(s) of {key} ran with no packet (the gate allows them on their own), isError {is_error}: {} ({}) to {} ({})",
                    u.count, u.first, u.first_at, u.last, u.last_at
                );
                let call = json!({"host": "mcp-gateway", "tool": key, "calls": u.count});
                let req = crate::store::spool::ReceiptRequest {
                    action_class: &class,
                    outcome: crate::protocol::graduation::receipt::ReceiptOutcome::Execute,
                    agent: &agent,
                    packet_id: None,
                    source_type: None,
                    note: Some(&note),
                    tool_call: Some(&call),
                };
                let now = crate::protocol::clock::now_rfc3339();
                // Only a result the tool reported as a success is signed: an observed outcome is
                // evidence for the class, and an error is no evidence of a good call.
                let signer = signer.as_deref().filter(|_| !is_error);
                if let Err(e) = crate::store::spool::publish_signed_receipt(live.spool(), &req, &now, signer) {
                    eprintln!("warrant mcp-gateway: could not record the receipt of {note}: {e}");
                    unwritten.push(((class, key, is_error), u));
                }
            }
            unwritten
        })
        .await;
        let (unwritten, lost) = match written {
            Ok(u) => (u, false),
            Err(e) => {
                eprintln!("warrant mcp-gateway: could not record receipts: {e}");
                (Vec::new(), true)
            }
        };
        let behind = lost || !unwritten.is_empty();
        if let Ok(mut m) = self.unpacketed.lock() {
            for (k, u) in unwritten {
                match m.get_mut(&k) {
                    Some(newer) => {
                        newer.count += u.count;
                        newer.first = u.first;
                        newer.first_at = u.first_at;
                    }
                    None => {
                        m.insert(k, u);
                    }
                }
            }
        }
        self.receipts_behind.store(behind, std::sync::atomic::Ordering::SeqCst);
    }

    fn upstream(&self) -> Result<&Peer<RoleClient>, McpError> {
        self.upstream.get().ok_or_else(|| McpError::invalid_request("the connection is not initialized", None))
    }

    /// The call id of the agent's request: this connection's id and a count of its calls, so
    /// every call is its own packet whatever request ids the agent sends (a reused or crafted id
    /// can never land on an earlier call's packet and its approval). `_id` is not used.
    fn call_id(&self, _id: &RequestId) -> String {
        let n = self.calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        format!("{}-{n}", self.connection)
    }

    /// Forwards one of the agent's requests to the server and returns its answer; the agent's
    /// progress token is mapped to the one the SDK puts on the forwarded request, and a
    /// cancellation by the agent cancels the forwarded request.
    async fn forward(
        &self,
        mut request: ClientRequest,
        ctx: &RequestContext<RoleServer>,
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
            map.insert(mine.clone(), t);
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
    async fn tool_info(&self, tool: &str) -> Result<Option<ToolInfo>, String> {
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

fn tool_map(tools: &[rmcp::model::Tool]) -> HashMap<String, ToolInfo> {
    tools
        .iter()
        .map(|t| {
            let annotations = t.annotations.as_ref().and_then(|a| serde_json::to_value(a).ok()).unwrap_or(Value::Null);
            (t.name.to_string(), ToolInfo { annotations, output_schema: t.output_schema.is_some() })
        })
        .collect()
}

/// The agent's side: an MCP server.
struct Gateway {
    shared: Arc<Shared>,
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
    async fn initialize(
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
        let shown = s.opts.command.iter().map(|w| w.to_string_lossy()).collect::<Vec<_>>().join(" ");
        let (transport, _) =
            rmcp::transport::TokioChildProcess::builder(cmd).stderr(std::process::Stdio::inherit()).spawn().map_err(
                |e| McpError::internal_error(format!("warrant mcp-gateway could not start `{shown}`: {e}"), None),
            )?;
        let side = ServerSide { shared: s.clone(), client: params, agent };
        let running = side.serve(transport).await.map_err(|e| {
            McpError::internal_error(
                format!("warrant mcp-gateway: `{shown}` did not complete the MCP handshake: {e}"),
                None,
            )
        })?;
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
        if !crate::protocol::calls::is_tool_key(&key) {
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
                return refuse(blocked(format!("warrant could not govern this call: {e}")), info.output_schema);
            }
            Err(e) => {
                return refuse(blocked(format!("warrant failed while governing this call: {e}")), info.output_schema);
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
        match outcome {
            Outcome::Allow { grant, .. } => {
                let answer = s.forward(ClientRequest::CallToolRequest(request), &ctx).await;
                let note = match &answer {
                    Ok(ServerResult::CallToolResult(r)) if r.is_error == Some(true) => {
                        "forwarded; the tool reported an error (isError true)".to_owned()
                    }
                    Ok(ServerResult::CallToolResult(_)) => "forwarded; the tool ran (isError false)".to_owned(),
                    Ok(_) => "forwarded; the server answered with a task or an input request".to_owned(),
                    Err(e) => {
                        format!(
                            "forwarded; the server answered with an error: {}",
                            crate::protocol::text::inert(&e.message, 300)
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
                    let req = crate::store::spool::ReceiptRequest {
                        action_class: &class,
                        outcome: crate::protocol::graduation::receipt::ReceiptOutcome::Execute,
                        agent: &agent,
                        packet_id: Some(&id),
                        source_type: None,
                        note: Some(&note),
                        tool_call: Some(&call),
                    };
                    let now = crate::protocol::clock::now_rfc3339();
                    crate::store::spool::publish_signed_receipt(g.spool(), &req, &now, signer.as_deref()).map(|_| ())
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
            Outcome::Hold { .. } => {
                refuse(blocked("internal error: still held after the wait".into()), info.output_schema)
            }
            deny => Ok(ServerResult::CallToolResult(refusal(&key, &deny, graduation, info.output_schema))),
        }
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
        let started = Instant::now();
        let deadline = started + wait;
        let id = submitted.packet_id.clone();
        let token = ctx.meta.get_progress_token();
        let reason = submitted.outcome.message();
        let progress = |elapsed: f64| {
            let token = token.clone();
            let message = format!(
                "held: waiting up to {}s for the principal to decide {id} in warrant ({reason})",
                wait.as_secs()
            );
            async move {
                if let Some(token) = token {
                    let p = ProgressNotificationParam::new(token, elapsed.floor())
                        .with_total(wait.as_secs_f64().ceil())
                        .with_message(message);
                    let _ = ctx.peer.notify_progress(p).await;
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

/// The server's answer without a `_warrant` in its `_meta`: only the gateway speaks for warrant.
fn without_warrant(mut r: ServerResult) -> ServerResult {
    if let ServerResult::CallToolResult(r) = &mut r
        && let Some(meta) = &mut r.meta
    {
        meta.0.remove("_warrant");
    }
    r
}

/// How the slow path judged a call.
enum Judged {
    /// What was read again lets it run with no packet (its action class).
    Unpacketed(String),
    /// Its packet was published and judged.
    Submitted(Arc<Governor>, Box<Submitted>),
}

/// The tool result of a call warrant did not run: `isError: true`, a text for the model, and
/// `_meta._warrant` ([`warrant_object`]); `structuredContent: {"_warrant": …}` too when the tool
/// declares no `outputSchema` (which a structured result would have to follow).
fn refusal(key: &str, outcome: &Outcome, graduation: Option<Value>, structured: bool) -> CallToolResult {
    let mut w = warrant_object(outcome);
    if let (Some(g), Some(m)) = (graduation, w.as_object_mut())
        && m.get("graduationPath").is_none_or(Value::is_null)
    {
        m.insert("graduationPath".into(), g);
    }
    let field = |k: &str| w.get(k).and_then(Value::as_str).map(str::to_owned);
    let status = field("status").unwrap_or_default();
    let mut text = format!("warrant did not run {key}: {status}.\nReason: {}", field("reason").unwrap_or_default());
    if let Some(id) = field("packet_id") {
        text.push_str(&format!("\nPacket: {id}"));
    }
    if let Some(u) = field("unblock") {
        text.push_str(&format!("\nTo unblock: {u}"));
    }
    if let Some(g) = w.get("graduationPath").filter(|g| !g.is_null()) {
        text.push_str(&format!("\nGraduation path: {g}"));
    }
    text.push_str("\nThe call was not run. Re-plan: do not repeat it unchanged unless the principal says so.");
    let mut r = CallToolResult::error(vec![ContentBlock::text(text)]);
    r.result_type = None;
    let mut meta = serde_json::Map::new();
    meta.insert("_warrant".into(), w.clone());
    r.meta = Some(MetaObject(meta));
    if structured {
        r.structured_content = Some(json!({ "_warrant": w }));
    }
    r
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
            // A request the SDK could not read as one it knows — a `tools/call` with fields it
            // does not accept, or a method it does not know — is never forwarded: it could run a
            // tool without being governed.
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
            // The SDK sent the server its own `initialized`; cancellations reach forwarded
            // requests through their request context.
            ClientNotification::InitializedNotification(_) | ClientNotification::CancelledNotification(_) => Ok(()),
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

impl Service<RoleClient> for ServerSide {
    async fn handle_request(
        &self,
        mut request: ServerRequest,
        ctx: RequestContext<RoleClient>,
    ) -> Result<ClientResult, McpError> {
        if let ServerRequest::PingRequest(_) = request {
            return Ok(ClientResult::empty(()));
        }
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
        match &mut notification {
            ServerNotification::ProgressNotification(p) => {
                let agent_token =
                    self.shared.progress.lock().ok().and_then(|m| m.get(&p.params.progress_token).cloned());
                // Progress on a request the agent asked no progress for is dropped.
                let Some(t) = agent_token else { return Ok(()) };
                p.params.progress_token = t;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn name(words: &[&str]) -> String {
        default_name(&words.iter().map(OsString::from).collect::<Vec<_>>())
    }

    #[test]
    fn default_names_follow_the_documented_rule() {
        assert_eq!(name(&["mcp-server-filesystem", "/tmp"]), "filesystem");
        assert_eq!(name(&["/usr/local/bin/mcp-server-git", "--repository", "."]), "git");
        assert_eq!(name(&["npx", "-y", "@modelcontextprotocol/server-filesystem", "/tmp"]), "filesystem");
        assert_eq!(name(&["npx", "-y", "@modelcontextprotocol/server-filesystem@2026.8.31", "/tmp"]), "filesystem");
        assert_eq!(name(&["uvx", "mcp-server-git==2026.10.19"]), "git");
        assert_eq!(name(&["uvx", "--from", "mcp-server-git", "mcp-server-git"]), "git");
        assert_eq!(name(&["python3", "-m", "mcp_server_git"]), "git");
        assert_eq!(name(&["npm", "exec", "--yes", "server-memory"]), "memory");
        assert_eq!(name(&["node", "build/index.js"]), "node");
        assert_eq!(name(&["my server"]), "my-server");
        assert_eq!(name(&["npx"]), "npx");
        assert_eq!(name(&["..."]), "server");
        assert_eq!(name(&["mcp-server-"]), "mcp-server-");
        for n in ["filesystem", "git", "my-server", "server"] {
            assert!(crate::protocol::calls::is_tool_key(&format!("{n}/read_file")));
        }
    }

    #[test]
    fn a_refusal_is_a_tool_result_with_the_warrant_object() {
        let o = Outcome::Deny {
            packet_id: Some("gw-abc-3".into()),
            status: "refused",
            reason: "refused by alice: no".into(),
            remedy: None,
        };
        let r = refusal("filesystem/write_file", &o, Some(json!({"remaining": 3})), true);
        let v = serde_json::to_value(&r).expect("json");
        assert_eq!(v["isError"], json!(true));
        assert_eq!(v["_meta"]["_warrant"]["status"], json!("refused"));
        assert_eq!(v["_meta"]["_warrant"]["packet_id"], json!("gw-abc-3"));
        assert_eq!(v["_meta"]["_warrant"]["graduationPath"], json!({"remaining": 3}));
        assert_eq!(v["structuredContent"]["_warrant"], v["_meta"]["_warrant"]);
        assert!(v.get("resultType").is_none(), "{v}");
        let text = v["content"][0]["text"].as_str().expect("text");
        assert!(text.contains("refused") && text.contains("gw-abc-3") && text.contains("not run"), "{text}");
        let r = refusal("filesystem/write_file", &o, None, false);
        assert!(serde_json::to_value(&r).expect("json").get("structuredContent").is_none());
    }
}
