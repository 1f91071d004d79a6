//! One MCP session: the agent's messages and the server's, relayed as they were written, with
//! `tools/call` governed on the way (MCP 2025-11-25, "Lifecycle", "Cancellation", "Progress").
//!
//! One task reads both sides and routes each message: the agent's requests go to the server and
//! their answers back by id; a `tools/call` is handed to a task of its own ([`Shared::call_tool`]);
//! the server's requests and notifications reach the agent once it has sent `initialized`.

use super::call::{Call, CallParams, ToolsPage};
use super::socket::AgentIo;
use super::tasks::{TaskAnswer, TaskRequest};
use super::wire::{self, Envelope, Frame, Kind, key};
use super::{Forwarded, Options, RECEIPTS_EVERY, Shared};
use bytes::Bytes;
use futures_util::{FutureExt as _, Sink, SinkExt as _, StreamExt as _};
use serde_json::value::RawValue;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use warrant_engine::govern::Live;

/// The request methods MCP (2025-11-25) defines from client to server. Any other is not found
/// (-32601), never forwarded: the gateway cannot tell what it would do.
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

/// The notifications MCP (2025-11-25) defines from client to server; others are dropped.
const MCP_NOTIFICATIONS: [&str; 5] = [
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/progress",
    "notifications/roots/list_changed",
    "notifications/tasks/status",
];

/// How a session ended.
enum End {
    /// The agent closed its end.
    AgentClosed,
    /// The server's output ended (it exited).
    ServerGone,
    /// SIGTERM, SIGINT, or `--listen` shutting down.
    Stopped,
    /// The server did not answer `initialize` in time.
    Handshake(String),
}

/// The session's routing state, owned by its one loop.
struct Relay {
    shared: Arc<Shared>,
    /// Whether the agent has sent `notifications/initialized`.
    ready: bool,
    /// The server's requests and notifications that came before the agent's `initialized`.
    deferred: Vec<Bytes>,
    /// The agent's `initialize`, while the server has not answered it, and when it must have.
    handshake: Option<(Box<RawValue>, Instant)>,
    /// The calls being governed or run.
    calls: tokio::task::JoinSet<()>,
    /// Whether the real server was started (or, over HTTP, its session begun).
    started: bool,
    /// The real server, once started as a child process.
    child: Option<tokio::process::Child>,
    /// The task that speaks to a remote server (`--url`).
    http: Option<tokio::task::JoinHandle<()>>,
    /// Where the server's reader puts what it reads (`None`: its output ended).
    from_server: UnboundedSender<Option<Frame>>,
}

/// One MCP session with one agent: its own [`Shared`] (connection id, server child, receipts),
/// until the agent closes the connection, the server exits, or `shutdown` turns true (SIGTERM,
/// `--listen` shutting down).
///
/// # Errors
/// The server did not answer `initialize` within the handshake timeout, or the session was
/// stopped before its handshake ended.
pub(super) async fn serve(
    opts: Options,
    io: AgentIo,
    mut shutdown: Option<tokio::sync::watch::Receiver<bool>>,
) -> Result<u8, String> {
    let (read, write) = io.halves();
    let (to_agent, agent_rx) = unbounded_channel::<Bytes>();
    let writer = tokio::spawn(write_all(wire::sink(write), agent_rx));
    let live = opts.spool.as_ref().ok().map(|spool| Arc::new(Live::new(spool.clone(), &opts.config_dir)));
    let shared = Arc::new(Shared::new(opts, live, to_agent));
    let (from_server, mut server_rx) = unbounded_channel();
    let mut relay = Relay {
        shared: Arc::clone(&shared),
        ready: false,
        deferred: Vec::new(),
        handshake: None,
        calls: tokio::task::JoinSet::new(),
        started: false,
        child: None,
        http: None,
        from_server,
    };
    let flusher = Arc::clone(&shared);
    let receipts = tokio::spawn(async move {
        loop {
            tokio::time::sleep(RECEIPTS_EVERY).await;
            Arc::clone(&flusher).flush_receipts().await;
        }
    });
    drop(shared);
    let mut agent = wire::frames(read);
    let end = loop {
        let deadline = relay.handshake.as_ref().map(|(_, at)| *at);
        tokio::select! {
            frame = agent.next() => match frame {
                Some(frame) => relay.on_agent(frame),
                None => break End::AgentClosed,
            },
            frame = server_rx.recv() => match frame {
                Some(Some(frame)) => relay.on_server(frame),
                _ => break End::ServerGone,
            },
            () = sleep_until(deadline) => {
                let stopped = if relay.shared.opts.http.is_some() { "" } else { "; it was stopped" };
                let said = |shown: String| format!(
                    "warrant mcp-gateway: `{shown}` did not answer initialize within {}s{stopped}",
                    relay.shared.opts.handshake.as_secs_f64()
                );
                if let Some((id, _)) = relay.handshake.take() {
                    let message = said(relay.shared.shown_to_agent());
                    relay.shared.send_agent(wire::error(Some(&id), -32603, &message));
                }
                break End::Handshake(said(relay.shared.shown_command()));
            }
            () = stop_requested(&mut shutdown) => break End::Stopped,
            Some(_) = relay.calls.join_next(), if !relay.calls.is_empty() => {}
        }
    };
    if matches!(end, End::ServerGone) {
        eprintln!("warrant mcp-gateway: the MCP server exited; closing the connection");
        relay.answer_all_pending("the MCP server exited");
    }
    // Nothing reaches the server from now on; every call still waiting for it gets no answer,
    // and every held call is withdrawn (its wait cancelled): their tasks record that and end,
    // and those that do not within 2 s are aborted (a hold ends with its task).
    relay.shared.close_upstream();
    let _ =
        tokio::time::timeout(Duration::from_secs(2), async { while relay.calls.join_next().await.is_some() {} }).await;
    relay.calls.shutdown().await;
    receipts.abort();
    let _ = receipts.await;
    Arc::clone(&relay.shared).flush_receipts().await;
    relay.stop_server().await;
    let was_handshaking = relay.handshake.is_some();
    drop(relay);
    // Every sender is gone: the writer ends once it has written what was sent.
    let _ = tokio::time::timeout(Duration::from_secs(2), writer).await;
    match end {
        End::Handshake(message) => Err(message),
        End::Stopped if was_handshaking => Err("stopped during the MCP handshake".to_owned()),
        End::AgentClosed if was_handshaking => Err("the agent closed its end during the MCP handshake".to_owned()),
        _ => Ok(0),
    }
}

/// Resolves at `deadline` (never without one).
async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Resolves when `shutdown` turns true (never without one).
pub(super) async fn stop_requested(shutdown: &mut Option<tokio::sync::watch::Receiver<bool>>) {
    match shutdown {
        Some(rx) => {
            if rx.wait_for(|s| *s).await.is_err() {
                std::future::pending::<()>().await;
            }
        }
        None => std::future::pending().await,
    }
}

/// Writes what `rx` receives to `sink`, several messages per flush when they queue up, until every
/// sender is gone or the peer stops reading.
async fn write_all<S: Sink<Bytes, Error = std::io::Error> + Unpin>(mut sink: S, mut rx: UnboundedReceiver<Bytes>) {
    while let Some(first) = rx.recv().await {
        if sink.feed(first).await.is_err() {
            return;
        }
        while let Ok(next) = rx.try_recv() {
            if sink.feed(next).await.is_err() {
                return;
            }
        }
        if sink.flush().await.is_err() {
            return;
        }
    }
    let _ = sink.close().await;
}

impl Relay {
    /// Routes one message from the agent.
    fn on_agent(&mut self, frame: Frame) {
        let s = Arc::clone(&self.shared);
        let message = match frame {
            Ok(m) => m,
            Err(e) => return s.send_agent(wire::error(None, -32700, &format!("parse error: {e}"))),
        };
        let envelope = match Envelope::read(&message) {
            Ok(e) => e,
            Err(e) => return s.send_agent(wire::error(None, -32600, &e)),
        };
        let kind = match envelope.kind() {
            Ok(k) => k,
            Err(e) => return s.send_agent(wire::error(envelope.id, -32600, &e)),
        };
        let started = self.started;
        // The gateway's own request ids are its own: an agent's request may not take one.
        if let Kind::Request(id, _) = kind
            && id.get().starts_with("\"warrant-gateway-")
        {
            return s.send_agent(wire::error(
                Some(id),
                -32600,
                "request ids starting with warrant-gateway- are the gateway's own",
            ));
        }
        match kind {
            Kind::Request(id, "initialize") => {
                if started {
                    return s.send_agent(wire::error(Some(id), -32600, "already initialized"));
                }
                if let Err(e) = self.start_server() {
                    eprintln!("{e}; its command line: {}", s.shown_command());
                    return s.send_agent(wire::error(Some(id), -32603, &e));
                }
                s.forward_request(id, false);
                self.handshake = Some((id.to_owned(), Instant::now() + s.opts.handshake));
                s.send_server(wire::bytes(&message));
            }
            Kind::Request(id, "ping") if !started => s.send_agent(wire::result(id, &serde_json::json!({}))),
            Kind::Request(id, method) if !started => s.send_agent(wire::error(
                Some(id),
                -32600,
                &format!("{method:?} before initialize: the session is not initialized"),
            )),
            Kind::Request(id, method) if !MCP_METHODS.contains(&method) => s.send_agent(wire::error(
                Some(id),
                -32601,
                &format!("method not found: {method:?} (warrant mcp-gateway forwards the methods MCP defines)"),
            )),
            Kind::Request(id, "tools/call") => match CallParams::read(envelope.params) {
                Ok(params) => self.spawn_call(message.clone(), id, params),
                Err(e) => s.send_agent(wire::error(Some(id), -32602, &e)),
            },
            Kind::Request(id, "tasks/list") => s.forward_renamed(id, &message, TaskAnswer::List),
            Kind::Request(id, method @ ("tasks/get" | "tasks/result" | "tasks/cancel")) => {
                match s.task_request(method, id, &message, envelope.params) {
                    None => s.forward_renamed(id, &message, TaskAnswer::Rename),
                    Some(TaskRequest::Answer(a)) => s.send_agent(a),
                    Some(TaskRequest::Forward(m)) => s.forward_renamed(id, &m, TaskAnswer::Rename),
                    Some(TaskRequest::Wait(task, done)) => {
                        let (id, message) = (id.to_owned(), message.clone());
                        self.calls.spawn(async move { s.task_result(id, message, task, done).await });
                    }
                }
            }
            Kind::Request(id, method) => {
                s.forward_request(id, method == "tools/list");
                s.send_server(wire::bytes(&message));
            }
            Kind::Notification(_) if !started => {}
            Kind::Notification("notifications/cancelled") => {
                // A call being governed is withdrawn here; one the server has is cancelled there.
                if !s.cancel(envelope.params) {
                    s.send_server(wire::bytes(&message));
                }
            }
            Kind::Notification(method) if MCP_NOTIFICATIONS.contains(&method) => {
                s.send_server(wire::bytes(&message));
                if method == "notifications/initialized" && !self.ready {
                    self.ready = true;
                    for early in std::mem::take(&mut self.deferred) {
                        s.send_agent(early);
                    }
                }
            }
            Kind::Notification(method) => {
                tracing::debug!(method, "dropped a notification MCP does not define");
            }
            // The agent's answer to one of the server's requests.
            Kind::Response(_) => s.send_server(wire::bytes(&message)),
        }
    }

    /// A `tools/call`: governed on a task of its own (a panic there is a refusal, never the end of
    /// the session).
    fn spawn_call(&mut self, message: Box<RawValue>, id: &RawValue, params: CallParams) {
        let s = Arc::clone(&self.shared);
        let cancel = CancellationToken::new();
        let k = key(id);
        if let Ok(mut g) = s.governing.lock() {
            g.insert(k.clone(), (id.to_owned(), cancel.clone()));
        }
        let call = Call { message, id: id.to_owned(), params, cancel };
        let id = id.to_owned();
        self.calls.spawn(async move {
            // In the set's own task (aborting the set ends it, and its hold with it); a panic is a
            // refusal, never the end of the session.
            let ran = std::panic::AssertUnwindSafe(Arc::clone(&s).call_tool(call)).catch_unwind().await;
            if ran.is_err() {
                let o = warrant_engine::govern::Outcome::Deny {
                    packet_id: None,
                    status: "blocked",
                    reason: "internal error: the gateway panicked while governing this call".into(),
                    remedy: None,
                };
                s.send_agent(wire::result(&id, &super::result::refusal("the tool", &o, None, false)));
            }
            if let Ok(mut g) = s.governing.lock() {
                g.remove(&k);
            }
        });
    }

    /// Routes one message from the server.
    fn on_server(&mut self, frame: Frame) {
        let s = Arc::clone(&self.shared);
        let message = match frame {
            Ok(m) => m,
            Err(e) => return eprintln!("warrant mcp-gateway: the MCP server sent a line that is not JSON: {e}"),
        };
        let envelope = match Envelope::read(&message) {
            Ok(e) => e,
            Err(e) => return eprintln!("warrant mcp-gateway: the MCP server sent {e}"),
        };
        match envelope.kind() {
            Ok(Kind::Response(id)) => {
                let k = key(id);
                if let Some(tx) = s.own.lock().ok().and_then(|mut m| m.remove(&k)) {
                    let _ = tx.send(message.clone());
                    return;
                }
                let Some(f) = s.forwarded.lock().ok().and_then(|mut m| m.remove(&k)) else {
                    // An answer to a request the agent cancelled, or to none.
                    return;
                };
                if self.handshake.as_ref().is_some_and(|(h, _)| key(h) == k) {
                    self.handshake = None;
                }
                if f.tools_list
                    && let Some(result) = envelope.result
                    && let Ok(page) = ToolsPage::read(result)
                    && let Ok(mut tools) = s.tools.lock()
                {
                    tools.get_or_insert_with(Default::default).extend(page.entries());
                }
                match f.answer {
                    // A call's task records its receipt and answers the agent.
                    Some(tx) => {
                        let _ = tx.send(message.clone());
                    }
                    None if f.tasks != TaskAnswer::AsIs => s.send_agent(s.renamed(&message, f.tasks)),
                    None => s.send_agent(wire::bytes(&message)),
                }
            }
            Ok(Kind::Notification(method)) => {
                let out = match method {
                    "notifications/progress" => s.progress_after_hold(&message, envelope.params),
                    "notifications/tasks/status" if s.has_server_tasks() => s.renamed(&message, TaskAnswer::Rename),
                    "notifications/tools/list_changed" => {
                        if let Ok(mut tools) = s.tools.lock() {
                            *tools = None;
                        }
                        wire::bytes(&message)
                    }
                    _ => wire::bytes(&message),
                };
                self.agent_when_ready(out);
            }
            Ok(Kind::Request(..)) => self.agent_when_ready(wire::bytes(&message)),
            Err(e) => eprintln!("warrant mcp-gateway: the MCP server sent a message that is {e}"),
        }
    }

    /// The server's own traffic reaches the agent only after its `initialized` (MCP "Lifecycle").
    fn agent_when_ready(&mut self, message: Bytes) {
        if self.ready {
            self.shared.send_agent(message);
        } else {
            self.deferred.push(message);
        }
    }

    /// Answers every request the server had with an error that says why (`reason`), and every
    /// call being governed.
    fn answer_all_pending(&mut self, reason: &str) {
        let s = &self.shared;
        let shown = s.shown_to_agent();
        let message = format!("warrant mcp-gateway: {reason} (`{shown}`)");
        let forwarded: Vec<Forwarded> =
            s.forwarded.lock().map(|mut m| m.drain().map(|(_, f)| f).collect()).unwrap_or_default();
        for f in forwarded {
            s.send_agent(wire::error(Some(&f.id), -32603, &message));
        }
        let governing: Vec<Box<RawValue>> =
            s.governing.lock().map(|mut m| m.drain().map(|(_, (id, _))| id).collect()).unwrap_or_default();
        for id in governing {
            s.send_agent(wire::error(
                Some(&id),
                -32603,
                &format!("{message}; the call was withdrawn and will not run"),
            ));
        }
    }

    /// Starts the real server: a process group of its own (stopping the gateway stops the server
    /// and what it started), its standard input and output the session's other side, its
    /// standard error the gateway's.
    fn start_server(&mut self) -> Result<(), String> {
        let s = &self.shared;
        if let Some(server) = &s.opts.http {
            let (tx, task) = super::http::start(server, s.opts.handshake, self.from_server.clone())?;
            if let Ok(mut to_server) = s.to_server.lock() {
                *to_server = Some(tx);
            }
            self.http = Some(task);
            self.started = true;
            return Ok(());
        }
        let shown = s.shown_to_agent();
        let mut cmd = tokio::process::Command::new(&s.opts.command[0]);
        cmd.args(&s.opts.command[1..])
            .process_group(0)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .kill_on_drop(true);
        let mut child = cmd.spawn().map_err(|e| format!("warrant mcp-gateway could not start `{shown}`: {e}"))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(format!("warrant mcp-gateway could not start `{shown}`: no pipes"));
        };
        if let (Some(pid), Ok(mut group)) = (child.id(), s.server_group.lock()) {
            *group = i32::try_from(pid).ok();
        }
        let (tx, rx) = unbounded_channel();
        tokio::spawn(write_all(wire::sink(stdin), rx));
        if let Ok(mut to_server) = s.to_server.lock() {
            *to_server = Some(tx);
        }
        let from_server = self.from_server.clone();
        tokio::spawn(async move {
            let mut frames = wire::frames(stdout);
            while let Some(frame) = frames.next().await {
                if from_server.send(Some(frame)).is_err() {
                    return;
                }
            }
            let _ = from_server.send(None);
        });
        self.child = Some(child);
        self.started = true;
        Ok(())
    }

    /// Stops the real server with the session (a remote one: its session ended): its standard input closed, then its whole process
    /// group (the processes it started go with it) sent SIGTERM, and SIGKILL what is left after a
    /// grace period; the server is reaped.
    async fn stop_server(&mut self) {
        if let Ok(mut to_server) = self.shared.to_server.lock() {
            to_server.take();
        }
        // A remote server's session ends with a DELETE once its sender is gone.
        if let Some(task) = self.http.take() {
            let _ = tokio::time::timeout(Duration::from_secs(3), task).await;
        }
        let Some(mut child) = self.child.take() else { return };
        if tokio::time::timeout(Duration::from_millis(100), child.wait()).await.is_err() {
            let group = self.shared.server_group.lock().ok().and_then(|g| *g).and_then(rustix::process::Pid::from_raw);
            if let Some(group) = group {
                let _ = rustix::process::kill_process_group(group, rustix::process::Signal::TERM);
            }
            if tokio::time::timeout(Duration::from_secs(1), child.wait()).await.is_err() {
                let _ = child.start_kill();
                let _ = child.wait().await;
            }
        }
        // What the server started and left behind goes too.
        let group =
            self.shared.server_group.lock().ok().and_then(|mut g| g.take()).and_then(rustix::process::Pid::from_raw);
        if let Some(group) = group
            && rustix::process::test_kill_process_group(group).is_ok()
        {
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::TERM);
            for _ in 0..20 {
                tokio::time::sleep(Duration::from_millis(50)).await;
                if rustix::process::test_kill_process_group(group).is_err() {
                    return;
                }
            }
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        }
    }
}

impl Shared {
    /// Ends the session's traffic to the server: nothing more is sent, the calls waiting for an
    /// answer get none (they record that), the gateway's own requests fail, and every call being
    /// governed is cancelled (a held one is withdrawn).
    fn close_upstream(&self) {
        if let Ok(mut t) = self.to_server.lock() {
            t.take();
        }
        if let Ok(mut f) = self.forwarded.lock() {
            f.clear();
        }
        if let Ok(mut o) = self.own.lock() {
            o.clear();
        }
        if let Ok(g) = self.governing.lock() {
            for (_, token) in g.values() {
                token.cancel();
            }
        }
        if let Ok(t) = self.tasks.lock() {
            for task in t.values() {
                task.cancel_hold();
            }
        }
    }

    /// Records an agent's request forwarded to the server, so its answer goes back.
    fn forward_request(&self, id: &RawValue, tools_list: bool) {
        if let Ok(mut m) = self.forwarded.lock() {
            m.insert(key(id), Forwarded { id: id.to_owned(), answer: None, tools_list, tasks: TaskAnswer::AsIs });
        }
    }

    /// The agent's `notifications/cancelled`: a call being governed is cancelled here (`true`:
    /// nothing to forward); one the server has is forgotten here, and the notification forwarded.
    fn cancel(&self, params: Option<&RawValue>) -> bool {
        #[derive(serde::Deserialize)]
        struct Cancelled<'a> {
            #[serde(rename = "requestId", borrow)]
            request_id: &'a RawValue,
        }
        let Some(c) = params.and_then(|p| serde_json::from_str::<Cancelled<'_>>(p.get()).ok()) else { return false };
        let k = key(c.request_id);
        if let Some((_, token)) = self.governing.lock().ok().and_then(|m| m.get(&k).cloned()) {
            // Not forwarded yet: the call's task withdraws it. If it was forwarded meanwhile, the
            // server is told too.
            token.cancel();
            return !self.forwarded.lock().is_ok_and(|mut m| m.remove(&k).is_some());
        }
        if let Ok(mut m) = self.forwarded.lock() {
            m.remove(&k);
        }
        false
    }

    /// The server's progress on a call that was held: told higher by what the hold reported, so
    /// the agent's progress only increases; any other progress as the server wrote it.
    fn progress_after_hold(&self, message: &RawValue, params: Option<&RawValue>) -> Bytes {
        #[derive(serde::Deserialize)]
        struct Progress {
            #[serde(rename = "progressToken")]
            token: serde_json::Value,
        }
        let base = params
            .and_then(|p| serde_json::from_str::<Progress>(p.get()).ok())
            .and_then(|p| self.progress_base.lock().ok()?.get(&p.token.to_string()).copied());
        let Some(base) = base else { return wire::bytes(message) };
        let edited = wire::edit(message, &["params"], &mut |p| {
            for field in ["progress", "total"] {
                if let Some(v) = p.get(field).and_then(|v| v.get().parse::<f64>().ok()) {
                    p.insert(field.to_owned(), wire::raw(&super::call::number(v + base)));
                }
            }
            true
        });
        match edited {
            Ok(Some(m)) => wire::bytes(&m),
            _ => wire::bytes(message),
        }
    }
}
