//! `--listen http://HOST:PORT/PATH`: the gateway serves MCP clients over Streamable HTTP (MCP
//! 2025-11-25, "Transports"). Each client session (`Mcp-Session-Id`, given at `initialize`) is
//! its own agent session — its own relay, server and connection id — exactly as a stdio
//! session: the HTTP side only carries its messages.
//!
//! A POSTed request is answered with one JSON body when its answer comes first and at once (an
//! allowed call's), else on a stream of server-sent events that carries the answer and what
//! belongs to it (its progress), then ends; a POSTed notification or response is accepted
//! (202). The server's own messages go on the session's GET stream when the client opened one,
//! else on a POST stream still open, else wait for the next. DELETE ends the session.
//!
//! Guards: it binds a loopback address unless `--token-file` is given (then a bearer token is
//! required on every request: 401 without it); an `Origin` that is not this host or a loopback
//! one is refused (403, the spec's defence against DNS rebinding). HTTP is `hyper`'s, the
//! events' framing `sse-stream`'s.

use super::Options;
use super::relay::serve;
use super::socket::AgentIo;
use super::wire::{self, Envelope, Kind, key};
use bytes::Bytes;
use futures_util::StreamExt as _;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::value::RawValue;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::AsyncWriteExt as _;
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};

/// How long a POSTed request's answer is waited for before its event stream's headers are sent:
/// an answer within it is sent alone, as a JSON body (see `post`).
const JSON_WITHIN: Duration = Duration::from_millis(100);

/// The largest request body accepted (64 MiB).
const MAX_BODY: usize = 64 << 20;

/// A session with no stream open and no request for this long is ended (its server stopped), as
/// a client that went away without a DELETE leaves it.
const IDLE: Duration = Duration::from_secs(600);

/// Where to serve: `http://HOST:PORT/PATH`.
#[derive(Debug, Clone)]
pub struct HttpListen {
    /// The address to bind.
    pub addr: std::net::SocketAddr,
    /// The endpoint's path (`/mcp`).
    pub path: String,
    /// The bearer token clients must present (`--token-file`); required off loopback.
    pub token: Option<String>,
}

impl HttpListen {
    /// Reads `http://HOST:PORT/PATH` (HOST an IP address or `localhost`).
    ///
    /// # Errors
    /// Not such a URL, or a non-loopback address without a token.
    pub fn parse(url: &str, token: Option<String>) -> Result<Self, String> {
        let rest = url.strip_prefix("http://").ok_or_else(|| format!("--listen {url}: not an http:// URL"))?;
        let (hostport, path) = rest.split_once('/').map_or((rest, "/".to_owned()), |(h, p)| (h, format!("/{p}")));
        let hostport = hostport.replace("localhost", "127.0.0.1");
        let addr: std::net::SocketAddr = hostport
            .parse()
            .map_err(|_| format!("--listen {url}: the host must be an IP address or localhost, with a port"))?;
        if !addr.ip().is_loopback() && token.is_none() {
            return Err(format!(
                "--listen {url}: not a loopback address; serving beyond this host needs --token-file (a bearer token every client presents)"
            ));
        }
        Ok(Self { addr, path, token })
    }
}

type Body = BoxBody<Bytes, std::convert::Infallible>;

/// One client session: its messages into the relay, and where the relay's go.
struct Session {
    /// The relay's input (the agent's side of a pipe).
    input: tokio::sync::Mutex<Option<tokio::io::WriteHalf<tokio::io::DuplexStream>>>,
    /// Open POST streams, by the id of the request each waits on.
    waiting: Mutex<HashMap<String, UnboundedSender<Bytes>>>,
    /// Progress tokens, to the request id whose stream carries them.
    progress: Mutex<HashMap<String, String>>,
    /// The GET stream, when the client opened one.
    listener: Mutex<Option<UnboundedSender<Bytes>>>,
    /// The server's messages no stream could take yet.
    backlog: Mutex<Vec<Bytes>>,
    /// When the client last sent a request or opened a stream.
    last: Mutex<std::time::Instant>,
}

impl Session {
    /// No stream open and nothing asked for [`IDLE`].
    fn idle(&self) -> bool {
        let open = self.waiting.lock().is_ok_and(|w| w.values().any(|t| !t.is_closed()))
            || self.listener.lock().is_ok_and(|l| l.as_ref().is_some_and(|t| !t.is_closed()));
        !open && self.last.lock().is_ok_and(|l| l.elapsed() > IDLE)
    }

    fn touch(&self) {
        if let Ok(mut l) = self.last.lock() {
            *l = std::time::Instant::now();
        }
    }
}

struct State {
    opts: Options,
    listen: HttpListen,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    stop: tokio::sync::watch::Receiver<bool>,
}

/// Serves clients at `listen` until SIGINT or SIGTERM; then every session ends (its server
/// stopped, its held calls withdrawn).
///
/// # Errors
/// The address cannot be bound.
pub(super) async fn listen_http(opts: Options, listen: HttpListen) -> Result<u8, String> {
    use tokio::signal::unix::{SignalKind, signal};
    let listener =
        tokio::net::TcpListener::bind(listen.addr).await.map_err(|e| format!("--listen {}: {e}", listen.addr))?;
    let mut term = signal(SignalKind::terminate()).map_err(|e| format!("could not handle SIGTERM: {e}"))?;
    let mut int = signal(SignalKind::interrupt()).map_err(|e| format!("could not handle SIGINT: {e}"))?;
    let (stop_tx, stop) = tokio::sync::watch::channel(false);
    eprintln!("warrant mcp-gateway: serving MCP at http://{}{}", listen.addr, listen.path);
    let state = Arc::new(State { opts, listen, sessions: Mutex::new(HashMap::new()), stop });
    let mut connections = tokio::task::JoinSet::new();
    let mut sweep = tokio::time::interval(Duration::from_secs(30));
    loop {
        tokio::select! {
            _ = sweep.tick() => {
                let idle: Vec<Arc<Session>> = state
                    .sessions
                    .lock()
                    .map(|mut m| {
                        let ids: Vec<String> = m.iter().filter(|(_, s)| s.idle()).map(|(id, _)| id.clone()).collect();
                        ids.iter().filter_map(|id| m.remove(id)).collect()
                    })
                    .unwrap_or_default();
                for s in idle {
                    s.input.lock().await.take();
                }
            }
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                // An answer is a few small writes (headers, then events): no waiting to coalesce them.
                let _ = stream.set_nodelay(true);
                let state = Arc::clone(&state);
                connections.spawn(async move {
                    let service = hyper::service::service_fn(move |req| {
                        let state = Arc::clone(&state);
                        async move { Ok::<_, std::convert::Infallible>(handle(state, req).await) }
                    });
                    let io = hyper_util::rt::TokioIo::new(stream);
                    let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await;
                });
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            _ = term.recv() => break,
            _ = int.recv() => break,
        }
    }
    let _ = stop_tx.send(true);
    let sessions: Vec<Arc<Session>> =
        state.sessions.lock().map(|mut m| m.drain().map(|(_, s)| s).collect()).unwrap_or_default();
    for s in sessions {
        s.input.lock().await.take();
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    connections.shutdown().await;
    Ok(0)
}

fn plain(status: StatusCode, text: &str) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::from(text.to_owned())).boxed());
    *r.status_mut() = status;
    r
}

/// A JSON-RPC error for a request the gateway could not take, with its HTTP status.
fn rpc_error(status: StatusCode, id: Option<&RawValue>, code: i32, message: &str) -> Response<Body> {
    let mut r = Response::new(Full::new(wire::error(id, code, message)).boxed());
    *r.status_mut() = status;
    r.headers_mut().insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("application/json"));
    r
}

/// Whether `origin`'s host is a loopback one or this gateway's own.
fn origin_allowed(origin: &str, listen: &HttpListen) -> bool {
    let host = origin.split_once("://").map_or(origin, |(_, h)| h);
    let host = host.split('/').next().unwrap_or("");
    let host = if host.starts_with('[') {
        host.split(']').next().map(|h| &h[1..]).unwrap_or("")
    } else {
        host.split(':').next().unwrap_or("")
    };
    host == "localhost" || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback() || ip == listen.addr.ip())
}

/// Compares two strings in time independent of where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

async fn handle(state: Arc<State>, req: Request<hyper::body::Incoming>) -> Response<Body> {
    if req.uri().path() != state.listen.path {
        return plain(StatusCode::NOT_FOUND, "not an MCP endpoint");
    }
    if let Some(origin) = req.headers().get(hyper::header::ORIGIN).and_then(|o| o.to_str().ok())
        && !origin_allowed(origin, &state.listen)
    {
        return plain(StatusCode::FORBIDDEN, "this Origin may not use the gateway");
    }
    if let Some(token) = &state.listen.token {
        let given = req
            .headers()
            .get(hyper::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        if !given.is_some_and(|g| same(g.trim().as_bytes(), token.as_bytes())) {
            let mut r = plain(StatusCode::UNAUTHORIZED, "a bearer token is required");
            r.headers_mut().insert(hyper::header::WWW_AUTHENTICATE, hyper::header::HeaderValue::from_static("Bearer"));
            return r;
        }
    }
    let session_id = req.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let session = session_id.as_ref().and_then(|id| state.sessions.lock().ok()?.get(id).cloned());
    match *req.method() {
        Method::POST => post(state, req, session_id, session).await,
        Method::GET => match session {
            Some(s) => get(&s),
            None if session_id.is_some() => plain(StatusCode::NOT_FOUND, "no such session"),
            None => plain(StatusCode::BAD_REQUEST, "Mcp-Session-Id is required"),
        },
        Method::DELETE => match (session_id, session) {
            (Some(id), Some(s)) => {
                if let Ok(mut m) = state.sessions.lock() {
                    m.remove(&id);
                }
                s.input.lock().await.take();
                plain(StatusCode::OK, "")
            }
            _ => plain(StatusCode::NOT_FOUND, "no such session"),
        },
        _ => plain(StatusCode::METHOD_NOT_ALLOWED, "POST, GET or DELETE"),
    }
}

async fn post(
    state: Arc<State>,
    req: Request<hyper::body::Incoming>,
    session_id: Option<String>,
    session: Option<Arc<Session>>,
) -> Response<Body> {
    let body = match http_body_util::Limited::new(req.into_body(), MAX_BODY).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => return rpc_error(StatusCode::BAD_REQUEST, None, -32700, &format!("could not read the body: {e}")),
    };
    let Ok(message) = serde_json::from_slice::<Box<RawValue>>(&body).map(wire::one_line) else {
        return rpc_error(StatusCode::BAD_REQUEST, None, -32700, "parse error: not JSON");
    };
    let envelope = match Envelope::read(&message) {
        Ok(e) => e,
        Err(e) => return rpc_error(StatusCode::BAD_REQUEST, None, -32600, &e),
    };
    let kind = match envelope.kind() {
        Ok(k) => k,
        Err(e) => return rpc_error(StatusCode::BAD_REQUEST, envelope.id, -32600, &e),
    };
    let (session, created) = match (session, &kind) {
        (Some(s), _) => (s, None),
        (None, Kind::Request(_, "initialize")) if session_id.is_none() => {
            let (id, s) = open_session(&state);
            (s, Some(id))
        }
        (None, _) if session_id.is_some() => return plain(StatusCode::NOT_FOUND, "no such session"),
        (None, _) => return rpc_error(StatusCode::BAD_REQUEST, envelope.id, -32600, "Mcp-Session-Id is required"),
    };
    session.touch();
    let Kind::Request(id, _) = kind else {
        // A notification or a response: accepted.
        return if session.send(&message).await {
            plain(StatusCode::ACCEPTED, "")
        } else {
            plain(StatusCode::NOT_FOUND, "the session ended")
        };
    };
    let (tx, rx) = unbounded_channel::<Bytes>();
    let k = key(id);
    if let Ok(mut w) = session.waiting.lock() {
        w.insert(k.clone(), tx);
    }
    if let Some(token) = envelope
        .params
        .and_then(|p| serde_json::from_str::<serde_json::Value>(p.get()).ok())
        .and_then(|p| p.get("_meta")?.get("progressToken").cloned())
        && let Ok(mut p) = session.progress.lock()
    {
        p.insert(token.to_string(), k);
    }
    if !session.send(&message).await {
        return rpc_error(StatusCode::NOT_FOUND, Some(id), -32600, "the session ended");
    }
    let mut rx = rx;
    // An answer that is the first message and comes within `JSON_WITHIN` (an allowed call's) is
    // the whole body, as JSON: one write, and MCP lets a server answer either way. Anything else
    // goes on an event stream whose headers go after `JSON_WITHIN` at most (a held call may wait
    // for minutes, and a client may give up waiting for headers), its events as they come.
    let first = match tokio::time::timeout(JSON_WITHIN, rx.recv()).await {
        Ok(Some(m)) => {
            let answer = serde_json::from_slice::<Box<RawValue>>(&m)
                .is_ok_and(|r| Envelope::read(&r).is_ok_and(|e| matches!(e.kind(), Ok(Kind::Response(_)))));
            if answer {
                let mut r = Response::new(BodyExt::boxed(Full::new(m)));
                let h = r.headers_mut();
                h.insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("application/json"));
                if let Some(id) = created.and_then(|id| hyper::header::HeaderValue::from_str(&id).ok()) {
                    h.insert("mcp-session-id", id);
                }
                return r;
            }
            Some(m)
        }
        // Nothing came and nothing will (the session ended, or the request's stream was replaced
        // by another request under the same id): the stream ends at once, as it always did.
        Ok(None) | Err(_) => None,
    };
    let events = futures_util::stream::iter(first).chain(tokio_stream_of(rx)).map(|m| {
        Ok::<_, std::convert::Infallible>(sse_stream::Sse::default().data(String::from_utf8_lossy(&m).into_owned()))
    });
    let mut r = Response::new(BodyExt::boxed(sse_stream::SseBody::new(events)));
    let h = r.headers_mut();
    h.insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("text/event-stream"));
    h.insert(hyper::header::CACHE_CONTROL, hyper::header::HeaderValue::from_static("no-cache"));
    if let Some(id) = created.and_then(|id| hyper::header::HeaderValue::from_str(&id).ok()) {
        h.insert("mcp-session-id", id);
    }
    r
}

/// The receiver as a stream.
fn tokio_stream_of(
    mut rx: tokio::sync::mpsc::UnboundedReceiver<Bytes>,
) -> impl futures_util::Stream<Item = Bytes> + Send {
    futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

fn get(session: &Arc<Session>) -> Response<Body> {
    session.touch();
    let (tx, rx) = unbounded_channel::<Bytes>();
    {
        let Ok(mut l) = session.listener.lock() else { return plain(StatusCode::INTERNAL_SERVER_ERROR, "") };
        if l.as_ref().is_some_and(|l| !l.is_closed()) {
            return plain(StatusCode::CONFLICT, "this session has a GET stream already");
        }
        for m in session.backlog.lock().map(|mut b| std::mem::take(&mut *b)).unwrap_or_default() {
            let _ = tx.send(m);
        }
        *l = Some(tx);
    }
    let events = tokio_stream_of(rx).map(|m| {
        Ok::<_, std::convert::Infallible>(sse_stream::Sse::default().data(String::from_utf8_lossy(&m).into_owned()))
    });
    let mut r = Response::new(BodyExt::boxed(sse_stream::SseBody::new(events)));
    r.headers_mut().insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("text/event-stream"));
    r
}

/// Starts a client session: its relay (an agent session as stdio's), and the task that routes
/// the relay's messages to the client's streams.
fn open_session(state: &Arc<State>) -> (String, Arc<Session>) {
    let id = uuid::Uuid::new_v4().simple().to_string();
    let (ours, relays) = tokio::io::duplex(1 << 20);
    let (from_relay, to_relay) = tokio::io::split(ours);
    let session = Arc::new(Session {
        input: tokio::sync::Mutex::new(Some(to_relay)),
        waiting: Mutex::new(HashMap::new()),
        progress: Mutex::new(HashMap::new()),
        listener: Mutex::new(None),
        backlog: Mutex::new(Vec::new()),
        last: Mutex::new(std::time::Instant::now()),
    });
    if let Ok(mut m) = state.sessions.lock() {
        m.insert(id.clone(), Arc::clone(&session));
    }
    let (opts, stop) = (state.opts.clone(), state.stop.clone());
    tokio::spawn(async move {
        if let Err(e) = serve(opts, AgentIo::Duplex(relays), Some(stop)).await {
            eprintln!("warrant mcp-gateway: {e}");
        }
    });
    let (s, st, sid) = (Arc::clone(&session), Arc::clone(state), id.clone());
    tokio::spawn(async move {
        let mut frames = wire::frames(from_relay);
        while let Some(Ok(m)) = frames.next().await {
            s.route(&m);
        }
        // The relay ended: the session with it.
        if let Ok(mut m) = st.sessions.lock() {
            m.remove(&sid);
        }
        s.waiting.lock().map(|mut w| w.clear()).ok();
        s.listener.lock().map(|mut l| l.take()).ok();
    });
    (id, session)
}

impl Session {
    /// Writes one message into the relay; `false` when the session has ended.
    async fn send(&self, message: &RawValue) -> bool {
        let mut input = self.input.lock().await;
        let Some(w) = input.as_mut() else { return false };
        let mut line = message.get().as_bytes().to_vec();
        line.push(b'\n');
        w.write_all(&line).await.is_ok()
    }

    /// Sends one of the relay's messages to the client: an answer on its request's stream (which
    /// then ends), progress on the stream of the request it belongs to, anything else on the GET
    /// stream, else a POST stream still open, else kept for the next stream.
    fn route(&self, m: &RawValue) {
        let text = wire::bytes(m);
        let Ok(e) = Envelope::read(m) else { return };
        let target = match e.kind() {
            Ok(Kind::Response(id)) => {
                let k = key(id);
                if let Some(tx) = self.waiting.lock().ok().and_then(|mut w| w.remove(&k)) {
                    let _ = tx.send(text);
                }
                // The request is answered: its progress token goes with it.
                if let Ok(mut p) = self.progress.lock() {
                    p.retain(|_, request| *request != k);
                }
                return;
            }
            Ok(Kind::Notification("notifications/progress")) => e
                .params
                .and_then(|p| serde_json::from_str::<serde_json::Value>(p.get()).ok())
                .and_then(|p| self.progress.lock().ok()?.get(&p.get("progressToken")?.to_string()).cloned()),
            _ => None,
        };
        if let Some(k) = target
            && let Some(tx) = self.waiting.lock().ok().and_then(|w| w.get(&k).cloned())
            && tx.send(text.clone()).is_ok()
        {
            return;
        }
        if let Some(tx) = self.listener.lock().ok().and_then(|l| l.clone())
            && tx.send(text.clone()).is_ok()
        {
            return;
        }
        if let Some(tx) = self.waiting.lock().ok().and_then(|w| w.values().next().cloned())
            && tx.send(text.clone()).is_ok()
        {
            return;
        }
        if let Ok(mut b) = self.backlog.lock() {
            b.push(text);
        }
    }
}
