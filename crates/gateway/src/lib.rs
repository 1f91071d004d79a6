//! `warrant mcp-gateway`: an MCP server to the agent, over stdio, that runs the real
//! MCP server as a child process and forwards everything to it — `initialize` (the server's
//! capabilities and instructions pass through), `tools/list`, resources, prompts, completions,
//! notifications both ways, and the server's own requests to the client (roots, sampling,
//! elicitation) — except `tools/call`, which it governs first (`docs/integrations.md`, "MCP gateway",
//! Lodestar's MCP proxy).
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

mod naming;
mod receipts;
mod result;
mod server;
mod socket;
mod upstream;

pub use naming::default_name;
pub use receipts::RECEIPTS_EVERY;
pub use socket::connect;

use receipts::Unpacketed;
use rmcp::model::{ProgressToken, ProtocolVersion};
use rmcp::service::{Peer, RoleClient, RunningServiceCancellationToken, ServiceExt as _};
use serde_json::Value;
use server::Gateway;
use socket::{AgentIo, fifo_stdio, listen};
use std::collections::HashMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
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
    /// The real server's command line (program and arguments).
    pub command: Vec<OsString>,
    /// `--listen`: the Unix socket agents connect to (each connection one MCP session, with its
    /// own server child); `None` serves one agent on stdio.
    pub listen: Option<PathBuf>,
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
        server_group: Mutex::new(None),
        client_ready: tokio::sync::watch::Sender::new(false),
        protocol: OnceLock::new(),
        tools: tokio::sync::Mutex::new(None),
        progress: Mutex::new(HashMap::new()),
        held_progress: Mutex::new(HashMap::new()),
        calls: std::sync::atomic::AtomicU64::new(0),
        server_gone: tokio::sync::Notify::new(),
    });
    let gateway = Gateway { shared: shared.clone() };
    let mut shutdown = shutdown;
    let on_stdio = matches!(io, AgentIo::Stdio);
    let handshake = async {
        match io {
            AgentIo::Stdio => match fifo_stdio() {
                Some(pipes) => gateway.serve(pipes).await,
                None => gateway.serve(rmcp::transport::stdio()).await,
            },
            AgentIo::Unix(stream) => gateway.serve(stream.into_split()).await,
        }
    };
    // A stop (SIGTERM, SIGINT, `--listen` shutting down) is honoured during the handshake too:
    // a server that never answers `initialize` left the gateway killable only by SIGKILL.
    // And so is the agent closing its end: while the handshake waits for the server, nothing
    // reads standard input to see its end.
    let handshaking = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let running = tokio::select! {
        r = handshake => r.map_err(|e| format!("MCP handshake with the agent failed: {e}")),
        () = stop_requested(&mut shutdown) => Err("stopped during the MCP handshake".to_owned()),
        () = stdin_hung_up(on_stdio, Arc::clone(&handshaking)) => {
            Err("the agent closed its end during the MCP handshake".to_owned())
        }
    };
    handshaking.store(false, std::sync::atomic::Ordering::Relaxed);
    let running = match running {
        Ok(r) => r,
        Err(e) => {
            shared.stop_server().await;
            return Err(e);
        }
    };
    let stop = running.cancellation_token();
    let flusher = shared.clone();
    let receipts = tokio::spawn(async move {
        loop {
            tokio::time::sleep(RECEIPTS_EVERY).await;
            flusher.clone().flush_receipts().await;
        }
    });
    let stopped = stop_requested(&mut shutdown);
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
    shared.stop_server().await;
    Ok(0)
}

/// Resolves when standard input (`on_stdio`) is a pipe or socket whose other end has closed,
/// checked every 100 ms (a `poll` that reads nothing) while `watching` holds; never otherwise.
async fn stdin_hung_up(on_stdio: bool, watching: Arc<std::sync::atomic::AtomicBool>) {
    use std::os::fd::AsFd as _;
    let Some(fd) = on_stdio.then(|| std::io::stdin().as_fd().try_clone_to_owned().ok()).flatten() else {
        return std::future::pending().await;
    };
    let hung_up = tokio::task::spawn_blocking(move || {
        let timeout = rustix::event::Timespec { tv_sec: 0, tv_nsec: 100_000_000 };
        while watching.load(std::sync::atomic::Ordering::Relaxed) {
            let mut fds = [rustix::event::PollFd::new(&fd, rustix::event::PollFlags::RDHUP)];
            match rustix::event::poll(&mut fds, Some(&timeout)) {
                Ok(_)
                    if fds[0].revents().intersects(rustix::event::PollFlags::HUP | rustix::event::PollFlags::RDHUP) =>
                {
                    return true;
                }
                Ok(_) | Err(rustix::io::Errno::INTR) => {}
                // Standard input cannot be watched: stop (the handshake timeout still bounds the wait).
                Err(_) => return false,
            }
        }
        false
    })
    .await;
    if !matches!(hung_up, Ok(true)) {
        std::future::pending::<()>().await;
    }
}

/// Resolves when `shutdown` turns true (never without one).
async fn stop_requested(shutdown: &mut Option<tokio::sync::watch::Receiver<bool>>) {
    match shutdown {
        Some(rx) => {
            let _ = rx.wait_for(|s| *s).await;
        }
        None => std::future::pending().await,
    }
}

impl Shared {
    /// Stops the real server with the gateway: its MCP session, then its whole process group
    /// (the server runs in a group of its own, so the processes it started go with it): SIGTERM,
    /// and SIGKILL to what is left after a grace period. Idempotent.
    async fn stop_server(&self) {
        let upstream = self.upstream_stop.lock().ok().and_then(|mut g| g.take());
        if let Some(ct) = upstream {
            ct.cancel();
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let Some(pid) = self.server_group.lock().ok().and_then(|mut g| g.take()) else { return };
        let Some(group) = rustix::process::Pid::from_raw(pid) else { return };
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::TERM);
        for _ in 0..20 {
            tokio::time::sleep(Duration::from_millis(50)).await;
            // Signal 0: is anyone left in the group?
            if rustix::process::test_kill_process_group(group).is_err() {
                return;
            }
        }
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
    }
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
    /// Whether the agent has sent `notifications/initialized` ([`Shared::client_initialized`]).
    client_ready: tokio::sync::watch::Sender<bool>,
    /// The real server's process group (its pid: it leads a group of its own), to stop it and
    /// every process it started.
    server_group: Mutex<Option<i32>>,
    /// The protocol version the real server agreed to.
    protocol: OnceLock<ProtocolVersion>,
    /// The server's tools by name (`None` until listed, and again after `tools/list_changed`).
    tools: tokio::sync::Mutex<Option<HashMap<String, ToolInfo>>>,
    /// The gateway's progress tokens on forwarded requests → the agent's, and what to add to the
    /// server's progress (and total) so the agent's progress keeps increasing after a hold.
    progress: Mutex<HashMap<ProgressToken, (ProgressToken, f64)>>,
    /// The last progress told to the agent, by the agent's token, while its call was held.
    held_progress: Mutex<HashMap<ProgressToken, f64>>,
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
