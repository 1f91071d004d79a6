//! The real server over Streamable HTTP (MCP 2025-11-25, "Transports"): each message the relay
//! sends is POSTed to the server's URL; its answer — one JSON message, or a stream of
//! server-sent events — comes back to the relay as the server wrote it. The session id the
//! server gives at `initialize` (`Mcp-Session-Id`) and the protocol version it agreed to
//! (`MCP-Protocol-Version`) go on every later request; a stream that ends before its answer is
//! resumed (`Last-Event-ID`); the server's own messages come on a GET stream when it offers one;
//! the session is ended (DELETE) when the agent's is.
//!
//! HTTP and TLS are `reqwest`'s (rustls, the web PKI's roots), the events' framing
//! `sse-stream`'s, as the official Rust SDK uses them. The user's headers (`--header`,
//! `--header-from-env`: credentials) are marked sensitive and never shown: messages to the agent
//! name the server by its URL's scheme, host and port only, the gateway's log (standard error)
//! with its path.
//!
//! Fail closed: an answer the server refuses (401, 403), fails (5xx) or never gives (no headers
//! within the handshake timeout, a stream that ends and cannot be resumed) is an error response
//! to the agent's request naming the server; a session the server dropped (404) ends the
//! gateway's session, so held calls are withdrawn, never left approvable.

use super::wire::{self, Envelope, Frame, Kind, key};
use bytes::Bytes;
use futures_util::StreamExt as _;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::value::RawValue;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

/// A remote MCP server (`--url`, with the headers every request carries).
#[derive(Debug, Clone)]
pub struct HttpServer {
    /// Its endpoint (`https://HOST/mcp`).
    pub url: String,
    /// Headers for every request (`Authorization: Bearer …`), name and value.
    pub headers: Vec<(String, String)>,
}

impl HttpServer {
    /// Its URL as the agent is told of it: scheme, host and port only — never user, password,
    /// query, or path (some hosted servers carry a secret in the path).
    pub fn shown(&self) -> String {
        self.shown_as(false)
    }

    /// Its URL as the gateway's own log (standard error, the principal's) names it: scheme, host,
    /// port and path, never user, password or query.
    pub fn shown_with_path(&self) -> String {
        self.shown_as(true)
    }

    fn shown_as(&self, path: bool) -> String {
        match reqwest::Url::parse(&self.url) {
            Ok(u) => format!(
                "{}://{}{}{}",
                u.scheme(),
                u.host_str().unwrap_or(""),
                u.port().map(|p| format!(":{p}")).unwrap_or_default(),
                if path { u.path() } else { "" }
            ),
            Err(_) => "the configured URL".to_owned(),
        }
    }
}

/// How long the rest of an answer's stream is read after the answer (see `Session::drain`).
const DRAIN_WITHIN: Duration = Duration::from_secs(5);

/// Notifications and responses being POSTed at once, at most.
const MAX_POSTS: usize = 64;

/// How long the notifications and responses still being POSTed when the session ends have to go
/// out (an agent's last `notifications/cancelled`, say).
const POSTS_GRACE: Duration = Duration::from_secs(2);

/// How long to wait before trying again to resume a stream, when the server set no `retry`; and
/// the longest wait it may set.
const RESUME_WAIT: Duration = Duration::from_secs(1);
const RESUME_WAIT_MAX: Duration = Duration::from_secs(5);

/// How often a stream that ended before its answer is resumed.
const RESUME_TRIES: u32 = 3;

/// One session with the remote server.
struct Session {
    client: reqwest::Client,
    url: reqwest::Url,
    /// The server as the agent is told of it ([`HttpServer::shown`]).
    shown: String,
    /// The server as the gateway's log names it ([`HttpServer::shown_with_path`]).
    logged: String,
    headers: HeaderMap,
    /// `Mcp-Session-Id`, once the server gave one.
    session: Mutex<Option<HeaderValue>>,
    /// `MCP-Protocol-Version`, once the server agreed to one.
    protocol: Mutex<Option<HeaderValue>>,
    /// How long the server has to answer a request's headers.
    timeout: Duration,
    /// Where the server's messages go (`None`: the session is gone).
    out: UnboundedSender<Option<Frame>>,
}

/// Starts a session with `server`: returns where the relay sends messages, and the task that
/// sends them (it ends the session, with a DELETE, once the sender is dropped).
///
/// # Errors
/// The URL or a header cannot be used.
pub(super) fn start(
    server: &HttpServer,
    timeout: Duration,
    out: UnboundedSender<Option<Frame>>,
) -> Result<(UnboundedSender<Bytes>, tokio::task::JoinHandle<()>), String> {
    let shown = server.shown();
    let url = reqwest::Url::parse(&server.url).map_err(|e| format!("--url {shown}: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("--url {shown}: not an http or https URL"));
    }
    let mut headers = HeaderMap::new();
    for (name, value) in &server.headers {
        let n = HeaderName::from_bytes(name.as_bytes()).map_err(|e| format!("--header {name:?}: {e}"))?;
        let mut v = HeaderValue::from_str(value)
            .map_err(|_| format!("--header {name}: the value is not a valid header value"))?;
        v.set_sensitive(true);
        headers.append(n, v);
    }
    // A redirect is not followed: it would carry the headers (credentials) and the body to
    // another address; it is an error naming the server instead.
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(timeout)
        .build()
        .map_err(|e| format!("could not start an HTTP client: {e}"))?;
    let session = Arc::new(Session {
        client,
        url,
        shown,
        logged: server.shown_with_path(),
        headers,
        session: Mutex::new(None),
        protocol: Mutex::new(None),
        timeout,
        out,
    });
    let (tx, rx) = unbounded_channel();
    Ok((tx, tokio::spawn(session.run(rx))))
}

/// A GET stream, or why there is none.
enum Stream {
    Open(reqwest::Response),
    /// The server offers none (405, or another refusal).
    NotOffered,
    /// The server no longer knows the session (404).
    SessionGone,
}

/// Why a request got no answer.
enum Failed {
    /// An error response to the request, with this message.
    Answer(String),
    /// The server dropped the session: the gateway's ends.
    Gone(String),
}

impl Session {
    /// Sends the relay's messages: until the client's `initialized` has been POSTed, in order
    /// (each POST answered before the next is sent: the session id comes with `initialize`'s
    /// answer, and `initialized` must follow it); then, and for every request but `initialize`,
    /// each message on a task of its own, its answer read there, so one slow call or
    /// notification holds up no other (HTTP orders no two POSTs anyway); until the relay is
    /// done, then ends the session.
    async fn run(self: Arc<Self>, mut rx: UnboundedReceiver<Bytes>) {
        let mut streams = tokio::task::JoinSet::new();
        // Notifications and responses POSTed on their own: at most `MAX_POSTS` at once (an agent
        // cannot open connections without bound), given `POSTS_GRACE` to go out at the end.
        let mut posts = tokio::task::JoinSet::new();
        let permits = Arc::new(tokio::sync::Semaphore::new(MAX_POSTS));
        let mut initialized = false;
        while let Some(message) = rx.recv().await {
            let Ok(raw) = serde_json::from_slice::<Box<RawValue>>(&message) else { continue };
            let (id, method) = match Envelope::read(&raw).as_ref().map(Envelope::kind) {
                Ok(Ok(Kind::Request(id, m))) => (Some(id.to_owned()), Some(m.to_owned())),
                Ok(Ok(Kind::Notification(m))) => (None, Some(m.to_owned())),
                _ => (None, None),
            };
            let in_order = match method.as_deref() {
                Some("initialize") => true,
                Some("notifications/initialized") => !std::mem::replace(&mut initialized, true),
                _ => id.is_none() && !initialized,
            };
            if in_order {
                if !self.exchange_in_order(message, id, method, &mut streams).await {
                    break;
                }
            } else if id.is_some() {
                let s = Arc::clone(&self);
                streams.spawn(async move { s.exchange(message, id, method).await });
            } else {
                let Ok(permit) = Arc::clone(&permits).acquire_owned().await else { break };
                let s = Arc::clone(&self);
                posts.spawn(async move {
                    s.exchange(message, id, method).await;
                    drop(permit);
                });
            }
            while streams.try_join_next().is_some() {}
            while posts.try_join_next().is_some() {}
        }
        let _ = tokio::time::timeout(POSTS_GRACE, async { while posts.join_next().await.is_some() {} }).await;
        posts.shutdown().await;
        streams.shutdown().await;
        self.end().await;
    }

    /// One request's POST and its answer, on its own task.
    async fn exchange(self: Arc<Self>, message: Bytes, id: Option<Box<RawValue>>, method: Option<String>) {
        match self.post(message, id.as_deref(), method.as_deref()).await {
            Ok(Some(response)) => self.read_answer(response, id).await,
            Ok(None) => {}
            Err(Failed::Answer(why)) => self.answer_error(id.as_deref(), &why),
            Err(Failed::Gone(why)) => {
                self.answer_error(id.as_deref(), &why);
                self.gone(&why);
            }
        }
    }

    /// A message sent in order: its POST answered before the next is sent (its body, if any, read
    /// on a task of its own); `false` when the session is gone.
    async fn exchange_in_order(
        self: &Arc<Self>,
        message: Bytes,
        id: Option<Box<RawValue>>,
        method: Option<String>,
        streams: &mut tokio::task::JoinSet<()>,
    ) -> bool {
        match self.post(message, id.as_deref(), method.as_deref()).await {
            Ok(Some(response)) => {
                let s = Arc::clone(self);
                streams.spawn(async move { s.read_answer(response, id).await });
            }
            Ok(None) => {
                if method.as_deref() == Some("notifications/initialized") {
                    let s = Arc::clone(self);
                    streams.spawn(async move { s.listen().await });
                }
            }
            Err(Failed::Answer(why)) => self.answer_error(id.as_deref(), &why),
            Err(Failed::Gone(why)) => {
                self.answer_error(id.as_deref(), &why);
                self.gone(&why);
                return false;
            }
        }
        true
    }

    /// The headers every request carries: the user's, the session's and the protocol version.
    fn request(&self, method: reqwest::Method) -> reqwest::RequestBuilder {
        let mut r = self.client.request(method, self.url.clone()).headers(self.headers.clone());
        if let Some(s) = self.session.lock().ok().and_then(|s| s.clone()) {
            r = r.header("mcp-session-id", s);
        }
        if let Some(p) = self.protocol.lock().ok().and_then(|p| p.clone()) {
            r = r.header("mcp-protocol-version", p);
        }
        r
    }

    /// POSTs one message; `Some(response)` when it has a body to read (a request's answer).
    async fn post(
        &self,
        message: Bytes,
        id: Option<&RawValue>,
        method: Option<&str>,
    ) -> Result<Option<reqwest::Response>, Failed> {
        let r = self
            .request(reqwest::Method::POST)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json, text/event-stream")
            .body(message);
        let shown = &self.shown;
        // `initialize`, notifications and responses must be answered within the timeout; a tool
        // call's answer may take as long as the tool (the server's death is seen on its GET
        // stream, the agent's patience is the agent's).
        let limit =
            if id.is_none() || method == Some("initialize") { self.timeout } else { Duration::from_secs(86_400) };
        let response = match tokio::time::timeout(limit, r.send()).await {
            Err(_) => {
                return Err(Failed::Answer(format!(
                    "the MCP server at {shown} did not answer within {}s",
                    self.timeout.as_secs_f64()
                )));
            }
            Ok(Err(e)) => {
                return Err(Failed::Answer(format!("could not reach the MCP server at {shown}: {}", e.without_url())));
            }
            Ok(Ok(r)) => r,
        };
        let status = response.status();
        if status.is_success() {
            if method == Some("initialize")
                && let Some(s) = response.headers().get("mcp-session-id")
                && let Ok(mut session) = self.session.lock()
            {
                *session = Some(s.clone());
            }
            // A notification's or a response's POST is accepted with no body.
            return Ok(id.is_some().then_some(response));
        }
        let has_session = self.session.lock().is_ok_and(|s| s.is_some());
        Err(match status.as_u16() {
            300..=399 => Failed::Answer(format!(
                "the MCP server at {shown} answered with a redirect ({status}); it is not followed (the request would carry its headers elsewhere): give --url the address it redirects to"
            )),
            404 if has_session => Failed::Gone(format!(
                "the MCP server at {shown} ended the session (404 Not Found); warrant mcp-gateway ends the agent's"
            )),
            401 | 403 => Failed::Answer(format!(
                "the MCP server at {shown} refused the request: {status} (the credentials given with --header or --header-from-env were refused or are missing)"
            )),
            _ => Failed::Answer(format!("the MCP server at {shown} failed: {status}")),
        })
    }

    /// Reads the answer to the request `id`: one JSON message, or a stream of events (resumed
    /// when it ends before the answer).
    async fn read_answer(&self, response: reqwest::Response, id: Option<Box<RawValue>>) {
        let sse = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let wanted = id.as_deref().map(key);
        if !sse {
            match response.bytes().await {
                Ok(body) => {
                    if !self.deliver(&body, wanted.as_deref()) {
                        self.answer_error(id.as_deref(), &format!("the MCP server at {} sent no answer", self.shown));
                    }
                }
                Err(e) => {
                    self.answer_error(id.as_deref(), &format!("the MCP server at {}: {}", self.shown, e.without_url()))
                }
            }
            return;
        }
        let mut response = response;
        let (mut last_event, mut wait, mut tries) = (None, RESUME_WAIT, 0);
        'streams: loop {
            let mut events = sse_stream::SseStream::from_bytes_stream(response.bytes_stream());
            while let Some(event) = events.next().await {
                let Ok(event) = event else { break };
                if let Some(eid) = event.id {
                    last_event = Some(eid);
                }
                if let Some(ms) = event.retry {
                    wait = Duration::from_millis(ms).min(RESUME_WAIT_MAX);
                }
                if let Some(data) = event.data.filter(|d| !d.trim().is_empty())
                    && self.deliver(data.as_bytes(), wanted.as_deref())
                {
                    return self.drain(events).await;
                }
            }
            // The stream ended before the answer: resume it where it ended, trying again after
            // the server's `retry` (a refusal such as 409 while the server has not yet seen the
            // old stream close, an error, no answer), `RESUME_TRIES` times in all.
            let Some(from) = last_event.clone() else { break };
            loop {
                if tries >= RESUME_TRIES {
                    break 'streams;
                }
                tries += 1;
                match self.get_stream(Some(&from)).await {
                    Ok(Stream::Open(r)) => {
                        response = r;
                        continue 'streams;
                    }
                    Ok(Stream::SessionGone) => break 'streams,
                    Ok(Stream::NotOffered) | Err(_) => tokio::time::sleep(wait).await,
                }
            }
        }
        self.answer_error(
            id.as_deref(),
            &format!("the MCP server at {} closed its stream before answering", self.shown),
        );
    }

    /// The rest of a stream whose answer came: its messages passed on as they come, until the
    /// server ends it (as it should right after the answer) or [`DRAIN_WITHIN`] passes. Read to
    /// its end, the connection goes back to the client's pool; dropped mid-stream, it would be
    /// closed and the next request would wait for a new one. A break here is not resumed: the
    /// answer came, and what the server sends later for this request has no one waiting.
    async fn drain(
        &self,
        mut events: impl futures_util::Stream<Item = Result<sse_stream::Sse, sse_stream::Error>> + Unpin,
    ) {
        let until = tokio::time::Instant::now() + DRAIN_WITHIN;
        while let Ok(Some(Ok(event))) = tokio::time::timeout_at(until, events.next()).await {
            if let Some(data) = event.data.filter(|d| !d.trim().is_empty()) {
                self.deliver(data.as_bytes(), None);
            }
        }
    }

    /// Passes the server's message(s) in `body` (one, or a batch) to the relay; whether one of
    /// them is the answer to `wanted` (always false without one). The protocol version of an
    /// `initialize` answer goes on every later request.
    fn deliver(&self, body: &[u8], wanted: Option<&str>) -> bool {
        let messages: Vec<Box<RawValue>> = match serde_json::from_slice::<Box<RawValue>>(body) {
            Ok(one) if one.get().starts_with('[') => serde_json::from_str(one.get()).unwrap_or_default(),
            Ok(one) => vec![one],
            Err(e) => {
                let _ = self.out.send(Some(Err(format!("not JSON: {e}"))));
                return false;
            }
        };
        let mut answered = false;
        for m in messages.into_iter().map(wire::one_line) {
            if let Ok(e) = Envelope::read(&m)
                && let Ok(Kind::Response(id)) = e.kind()
                && Some(key(id).as_str()) == wanted
            {
                answered = true;
                if let Some(v) = e.result.and_then(|r| serde_json::from_str::<serde_json::Value>(r.get()).ok())
                    && let Some(p) = v.get("protocolVersion").and_then(|p| p.as_str())
                    && let (Ok(h), Ok(mut protocol)) = (HeaderValue::from_str(p), self.protocol.lock())
                {
                    *protocol = Some(h);
                }
            }
            let _ = self.out.send(Some(Ok(m)));
        }
        answered
    }

    /// A GET stream of the server's events, from `last_event` when resuming.
    ///
    /// # Errors
    /// The server could not be reached, or did not answer within the timeout.
    async fn get_stream(&self, last_event: Option<&str>) -> Result<Stream, String> {
        let mut r = self.request(reqwest::Method::GET).header(ACCEPT, "text/event-stream");
        if let Some(id) = last_event {
            r = r.header("last-event-id", id);
        }
        match tokio::time::timeout(self.timeout, r.send()).await {
            Ok(Ok(resp)) if resp.status().is_success() => Ok(Stream::Open(resp)),
            Ok(Ok(resp)) if resp.status() == reqwest::StatusCode::NOT_FOUND => Ok(Stream::SessionGone),
            Ok(Ok(_)) => Ok(Stream::NotOffered),
            Ok(Err(e)) => Err(e.without_url().to_string()),
            Err(_) => Err("no answer".into()),
        }
    }

    /// The server's own messages (requests, notifications) on the GET stream, reopened where it
    /// ended. It also tells the gateway the server is gone: a session the server no longer knows
    /// (404), or a server that cannot be reached three times in a row, ends the agent's session,
    /// so held calls are withdrawn rather than left approvable.
    async fn listen(&self) {
        let mut last_event: Option<String> = None;
        let mut failures = 0;
        loop {
            match self.get_stream(last_event.as_deref()).await {
                Ok(Stream::Open(response)) => {
                    failures = 0;
                    let mut events = sse_stream::SseStream::from_bytes_stream(response.bytes_stream());
                    while let Some(Ok(event)) = events.next().await {
                        if let Some(eid) = event.id {
                            last_event = Some(eid);
                        }
                        if let Some(data) = event.data.filter(|d| !d.trim().is_empty()) {
                            self.deliver(data.as_bytes(), None);
                        }
                    }
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
                Ok(Stream::NotOffered) => return,
                Ok(Stream::SessionGone) => {
                    return self.gone(&format!("the MCP server at {} ended the session (404 Not Found)", self.logged));
                }
                Err(e) => {
                    failures += 1;
                    if failures >= RESUME_TRIES {
                        return self.gone(&format!("the MCP server at {} stopped answering: {e}", self.logged));
                    }
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }
    }

    /// The server is gone: the gateway's session ends.
    fn gone(&self, why: &str) {
        eprintln!("warrant mcp-gateway: {why}; closing the connection");
        let _ = self.out.send(None);
    }

    /// An error response to the agent's request `id` (nothing for a notification: logged).
    fn answer_error(&self, id: Option<&RawValue>, why: &str) {
        match id {
            Some(id) => {
                let e = wire::error(Some(id), -32603, &format!("warrant mcp-gateway: {why}"));
                if let Ok(raw) = serde_json::from_slice::<Box<RawValue>>(&e) {
                    let _ = self.out.send(Some(Ok(raw)));
                }
            }
            None => eprintln!("warrant mcp-gateway: {why}"),
        }
    }

    /// Ends the session on the server (DELETE), when it gave one.
    async fn end(&self) {
        if self.session.lock().is_ok_and(|s| s.is_some()) {
            let _ = tokio::time::timeout(Duration::from_secs(2), self.request(reqwest::Method::DELETE).send()).await;
        }
    }
}
