//! How agents reach the gateway besides stdio: the `--listen` Unix socket, the `--connect` byte
//! relay, and standard input and output as non-blocking pipes.

use super::{Options, serve};
use std::path::PathBuf;
use std::time::Duration;

/// How the agent reaches one session.
pub(super) enum AgentIo {
    /// Standard input and output (the agent's MCP client started the gateway).
    Stdio,
    /// A connection accepted on the `--listen` socket.
    Unix(tokio::net::UnixStream),
    /// A Streamable HTTP client session's pipe (`--listen http://…`).
    Duplex(tokio::io::DuplexStream),
}

/// The agent's side of a session: what it writes, and where the gateway writes to it.
pub(super) type Halves = (Box<dyn tokio::io::AsyncRead + Unpin + Send>, Box<dyn tokio::io::AsyncWrite + Unpin + Send>);

impl AgentIo {
    /// Its two directions: standard input and output as non-blocking pipes when they are pipes
    /// ([`fifo_stdio`]), tokio's otherwise; a socket's two halves.
    pub(super) fn halves(self) -> Halves {
        match self {
            AgentIo::Stdio => match fifo_stdio() {
                Some((r, w)) => (Box::new(r), Box::new(w)),
                None => (Box::new(tokio::io::stdin()), Box::new(tokio::io::stdout())),
            },
            AgentIo::Unix(stream) => {
                let (r, w) = stream.into_split();
                (Box::new(r), Box::new(w))
            }
            AgentIo::Duplex(stream) => {
                let (r, w) = tokio::io::split(stream);
                (Box::new(r), Box::new(w))
            }
        }
    }
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
pub(super) async fn listen(opts: Options, path: PathBuf) -> Result<u8, String> {
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
        let (mut input, mut output) = AgentIo::Stdio.halves();
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

/// Standard input and output as non-blocking pipes read and written on the runtime's own
/// thread, when both are pipes (as an MCP client that spawns the gateway makes them): the SDK's
/// `stdio()` reads standard input on a blocking thread, and the hand-offs between threads cost
/// more than the rest of an allowed call. `None` otherwise (a socket, a terminal, a file): then
/// tokio's.
pub(super) fn fifo_stdio() -> Option<(tokio::net::unix::pipe::Receiver, tokio::net::unix::pipe::Sender)> {
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
