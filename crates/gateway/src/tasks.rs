//! Held calls as MCP tasks (MCP 2025-11-25, "Tasks"): a task-augmented `tools/call` the principal
//! must decide is answered at once with a task of the gateway's own — `working` while held, its
//! status message naming the packet — so the client waits by polling, with no request timeout.
//! Once the principal decides, the task is `failed` with the refusal, or the call runs: a plain
//! result completes the task; the server's own task takes over (the client keeps the gateway's
//! task id, which the gateway translates both ways).

use super::wire::{self, Envelope, Members, key};
use super::{Forwarded, Shared};
use serde_json::value::RawValue;
use serde_json::{Value, json};
use std::collections::HashMap;
use tokio_util::sync::CancellationToken;

/// How often a client should poll a held call's task, in milliseconds.
const POLL_INTERVAL_MS: u64 = 2000;

/// The longest the gateway keeps a task, in milliseconds: the `ttl` it gives a client that asked
/// for longer or for no limit (a receiver's choice, MCP 2025-11-25 "Tasks"). A call held for the
/// principal is kept until it is decided (its hold has its own limit, `--wait`); from then on its
/// task is kept for its `ttl` — counted from the decision, not the creation, so time spent held
/// does not use up the client's time to read the result — and then forgotten. A task the
/// server's took over is kept as long (the server's own task, created at the decision with the
/// same `ttl`, is kept by the server as long).
pub const MAX_TTL_MS: u64 = 3_600_000;

/// The `_meta` key that ties a task's result to its task.
const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// One task of the gateway's own.
pub(super) struct HeldTask {
    /// `working`, `completed`, `failed` or `cancelled`.
    status: &'static str,
    message: String,
    created: String,
    updated: String,
    /// When the principal's decision settled it (`None` while held): it is forgotten `ttl` later.
    settled: Option<std::time::Instant>,
    /// Its retention once settled, in milliseconds: the client's, at most [`MAX_TTL_MS`].
    ttl: u64,
    /// The server's task that took over, once the call ran as one.
    server: Option<String>,
    /// The answer once finished: `{"result": …}` or `{"error": …}`.
    answer: Option<Value>,
    /// Turns true when the task is finished.
    done: tokio::sync::watch::Sender<bool>,
    /// Cancels the hold.
    cancel: CancellationToken,
}

impl HeldTask {
    /// Cancels the hold of its call, if it is still held.
    pub(super) fn cancel_hold(&self) {
        self.cancel.cancel();
    }

    /// Whether it may be forgotten at `now`: settled (finished, or taken over by the server's
    /// task) more than its `ttl` ago.
    fn expired(&self, now: std::time::Instant) -> bool {
        self.settled.is_some_and(|at| now.saturating_duration_since(at).as_millis() > u128::from(self.ttl))
    }

    fn view(&self, id: &str) -> Value {
        json!({
            "taskId": id,
            "status": self.status,
            "statusMessage": self.message,
            "createdAt": self.created,
            "lastUpdatedAt": self.updated,
            "ttl": self.ttl,
            "pollInterval": POLL_INTERVAL_MS,
        })
    }
}

/// What the relay does with the answer to a `tasks/…` request it forwarded.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum TaskAnswer {
    /// Nothing: as the server wrote it.
    AsIs,
    /// The server's ids of tasks that took over a held call become the gateway's.
    Rename,
    /// `tasks/list`: renamed, and the held calls' tasks added.
    List,
}

impl Shared {
    /// Opens the task of a held call (`task`: the request's `task` parameter) and returns its
    /// `CreateTaskResult`.
    pub(super) fn open_task(
        &self,
        id: &str,
        task: &serde_json::Map<String, Value>,
        message: String,
        cancel: CancellationToken,
    ) -> Value {
        let now = warrant_protocol::clock::now_rfc3339();
        let held = HeldTask {
            status: "working",
            message,
            created: now.clone(),
            updated: now,
            settled: None,
            ttl: task.get("ttl").and_then(Value::as_u64).map_or(MAX_TTL_MS, |t| t.min(MAX_TTL_MS)),
            server: None,
            answer: None,
            done: tokio::sync::watch::Sender::new(false),
            cancel,
        };
        let view = held.view(id);
        if let Ok(mut tasks) = self.tasks.lock() {
            forget_expired(&mut tasks, std::time::Instant::now());
            tasks.insert(id.to_owned(), held);
        }
        json!({ "task": view })
    }

    /// Settles a held call's task with the call's answer (a JSON-RPC response, `None` when it was
    /// cancelled); `refused`: the answer is warrant's refusal. The client is told the new status.
    pub(super) fn settle_task(&self, id: &str, answer: Option<&[u8]>, refused: bool) {
        let v: Option<Value> = answer.and_then(|a| serde_json::from_slice(a).ok());
        let server = v.as_ref().and_then(|v| v["result"]["task"]["taskId"].as_str()).map(str::to_owned);
        let view = {
            let Ok(mut tasks) = self.tasks.lock() else { return };
            let Some(t) = tasks.get_mut(id) else { return };
            t.updated = warrant_protocol::clock::now_rfc3339();
            t.settled = Some(std::time::Instant::now());
            match (v, server) {
                (_, Some(s)) => {
                    t.message = format!("approved by the principal; running as the server's task {s}");
                    t.server = Some(s);
                    // Whoever waits for the result asks the server's task now.
                    t.done.send_replace(true);
                }
                (None, None) => {
                    t.status = "cancelled";
                    t.message = "cancelled while held; it was not run".into();
                    t.done.send_replace(true);
                }
                (Some(v), None) => {
                    let error = v.get("error").cloned();
                    t.status = if refused || error.is_some() { "failed" } else { "completed" };
                    t.message = match (&error, refused) {
                        (Some(e), _) => format!("the server answered with an error: {}", e["message"]),
                        (None, true) => {
                            v["result"]["_meta"]["_warrant"]["reason"].as_str().unwrap_or("refused").to_owned()
                        }
                        (None, false) => "approved by the principal and run".into(),
                    };
                    t.answer = Some(match error {
                        Some(e) => json!({ "error": e }),
                        None => json!({ "result": v.get("result").cloned().unwrap_or(Value::Null) }),
                    });
                    t.done.send_replace(true);
                }
            }
            t.view(id)
        };
        self.send_agent(wire::notification("notifications/tasks/status", view));
    }

    /// The agent's `tasks/get`, `tasks/result` or `tasks/cancel` on a task of the gateway's own:
    /// answered here (`Some`: the answer now, or a future that answers once the task is done), or
    /// forwarded with the server's task id when the server's task took over. `None`: not the
    /// gateway's task.
    pub(super) fn task_request(
        &self,
        method: &str,
        id: &RawValue,
        message: &RawValue,
        params: Option<&RawValue>,
    ) -> Option<TaskRequest> {
        let task_id = params.and_then(|p| serde_json::from_str::<Value>(p.get()).ok())?["taskId"].as_str()?.to_owned();
        let mut tasks = self.tasks.lock().ok()?;
        forget_expired(&mut tasks, std::time::Instant::now());
        let t = tasks.get(&task_id)?;
        if let Some(server) = &t.server {
            let s = server.clone();
            let edited = wire::edit(message, &["params"], &mut |p| {
                p.insert("taskId".into(), wire::raw(&json!(s)));
                true
            });
            return Some(match edited {
                Ok(Some(m)) => TaskRequest::Forward(m),
                _ => TaskRequest::Answer(wire::error(Some(id), -32603, "could not forward the task request")),
            });
        }
        Some(match method {
            "tasks/get" => TaskRequest::Answer(wire::result(id, &t.view(&task_id))),
            "tasks/cancel" if t.status == "working" => {
                t.cancel.cancel();
                let mut view = t.view(&task_id);
                view["status"] = json!("cancelled");
                TaskRequest::Answer(wire::result(id, &view))
            }
            "tasks/cancel" => TaskRequest::Answer(wire::error(
                Some(id),
                -32602,
                &format!("task {task_id} is already {}; it cannot be cancelled", t.status),
            )),
            _ => TaskRequest::Wait(task_id, t.done.subscribe()),
        })
    }

    /// Answers the agent's `tasks/result` on a held call's task once it is finished (or forwards it
    /// when the server's task took over meanwhile).
    pub(super) async fn task_result(
        &self,
        id: Box<RawValue>,
        message: Box<RawValue>,
        task_id: String,
        mut done: tokio::sync::watch::Receiver<bool>,
    ) {
        let _ = done.wait_for(|d| *d).await;
        let answer = {
            let Ok(tasks) = self.tasks.lock() else { return };
            let Some(t) = tasks.get(&task_id) else {
                // Forgotten while the client waited (its `ttl` passed): said, never left unanswered.
                let gone = format!("task {task_id} is no longer kept: its ttl passed");
                drop(tasks);
                return self.send_agent(wire::error(Some(&id), -32602, &gone));
            };
            match (&t.server, &t.answer) {
                (Some(_), _) => None,
                (None, Some(answer)) => Some(answer.clone()),
                (None, None) => Some(json!({
                    "error": {"code": -32603, "message": format!("task {task_id} is {}: {}", t.status, t.message)}
                })),
            }
        };
        let Some(mut answer) = answer else {
            // The server's task took over while the client waited: it answers.
            let params = Envelope::read(&message).ok().and_then(|e| e.params);
            if let Some(TaskRequest::Forward(m)) = self.task_request("tasks/result", &id, &message, params) {
                self.forward_renamed(&id, &m, TaskAnswer::Rename);
            }
            return;
        };
        if let Some(result) = answer.get_mut("result").and_then(Value::as_object_mut) {
            let meta = result.entry("_meta").or_insert_with(|| json!({}));
            if let Some(m) = meta.as_object_mut() {
                m.insert(RELATED_TASK.into(), json!({ "taskId": task_id }));
            }
            return self.send_agent(wire::result(&id, &Value::Object(result.clone())));
        }
        let e = &answer["error"];
        let (code, text) = (e["code"].as_i64().unwrap_or(-32603), e["message"].as_str().unwrap_or("failed"));
        self.send_agent(wire::error(Some(&id), i32::try_from(code).unwrap_or(-32603), text));
    }

    /// Forwards `message` (the agent's request `id`), its answer read by `tasks`.
    pub(super) fn forward_renamed(&self, id: &RawValue, message: &RawValue, tasks: TaskAnswer) {
        if let Ok(mut m) = self.forwarded.lock() {
            m.insert(key(id), Forwarded { id: id.to_owned(), answer: None, tools_list: false, tasks });
        }
        self.send_server(wire::bytes(message));
    }

    /// A message from the server with the ids of tasks that took over held calls replaced by the
    /// gateway's (the client knows only those) where a task id stands — a task's `taskId` in a
    /// result, in `tasks/list`'s tasks, in a status notification's params, and in a result's
    /// related-task `_meta` — every other member as written; for `tasks/list`, the held calls' own
    /// tasks added.
    pub(super) fn renamed(&self, message: &RawValue, tasks: TaskAnswer) -> bytes::Bytes {
        let (names, local) = {
            let Ok(mut held) = self.tasks.lock() else { return wire::bytes(message) };
            if tasks == TaskAnswer::List {
                forget_expired(&mut held, std::time::Instant::now());
            }
            let names: HashMap<String, String> =
                held.iter().filter_map(|(id, t)| Some((t.server.clone()?, id.clone()))).collect();
            let local: Vec<Value> = held.iter().filter(|(_, t)| t.server.is_none()).map(|(id, t)| t.view(id)).collect();
            (names, local)
        };
        let rename = |m: &mut Members| -> bool {
            let Some(server) = m.get("taskId").and_then(|v| serde_json::from_str::<String>(v.get()).ok()) else {
                return false;
            };
            let Some(ours) = names.get(&server) else { return false };
            m.insert("taskId".into(), wire::raw(&json!(ours)));
            true
        };
        let mut current = message.to_owned();
        let mut apply = |path: &[&str], change: &mut dyn FnMut(&mut Members) -> bool| {
            if let Ok(Some(m)) = wire::edit(&current, path, change) {
                current = m;
            }
        };
        if !names.is_empty() {
            apply(&["result"], &mut |r| rename(r));
            apply(&["params"], &mut |p| rename(p));
            apply(&["result", "_meta", RELATED_TASK], &mut |m| rename(m));
        }
        if tasks == TaskAnswer::List {
            apply(&["result"], &mut |r| {
                let mut listed: Vec<Members> =
                    r.get("tasks").and_then(|t| serde_json::from_str(t.get()).ok()).unwrap_or_default();
                // Every task is renamed (no short-circuit).
                let mut renamed = false;
                for t in &mut listed {
                    renamed |= rename(t);
                }
                if local.is_empty() && !renamed {
                    return false;
                }
                let mut all: Vec<Box<RawValue>> =
                    listed.iter().filter_map(|t| serde_json::value::to_raw_value(t).ok()).collect();
                all.extend(local.iter().map(wire::raw));
                r.insert(
                    "tasks".into(),
                    serde_json::value::to_raw_value(&all).unwrap_or_else(|_| RawValue::NULL.to_owned()),
                );
                true
            });
        }
        wire::bytes(&current)
    }

    /// Whether any held call's task was taken over by a server task (then the server's task
    /// traffic is renamed on its way to the agent).
    pub(super) fn has_server_tasks(&self) -> bool {
        self.tasks.lock().is_ok_and(|t| t.values().any(|t| t.server.is_some()))
    }
}

/// Forgets the tasks whose `ttl` has passed at `now` ([`HeldTask::expired`]): the table of a
/// long-lived session does not grow with every task it ever had.
fn forget_expired(tasks: &mut HashMap<String, HeldTask>, now: std::time::Instant) {
    tasks.retain(|_, t| !t.expired(now));
}

/// What to do with the agent's request on a task of the gateway's own.
pub(super) enum TaskRequest {
    /// Answer it now.
    Answer(bytes::Bytes),
    /// Forward this (the server's task took over).
    Forward(Box<RawValue>),
    /// `tasks/result` of a task still working: answer once it is done.
    Wait(String, tokio::sync::watch::Receiver<bool>),
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn task(status: &'static str, server: Option<&str>, ttl: u64, settled: Option<Instant>) -> HeldTask {
        HeldTask {
            status,
            message: String::new(),
            created: String::new(),
            updated: String::new(),
            settled,
            ttl,
            server: server.map(str::to_owned),
            answer: None,
            done: tokio::sync::watch::Sender::new(false),
            cancel: CancellationToken::new(),
        }
    }

    #[test]
    fn settled_tasks_are_forgotten_their_ttl_after_the_decision_and_held_ones_kept() {
        let at = Instant::now();
        let later = at + Duration::from_millis(1_001);
        let mut tasks: HashMap<String, HeldTask> = [
            ("held", task("working", None, 1_000, None)),
            ("done-old", task("completed", None, 1_000, Some(at))),
            ("failed-old", task("failed", None, 1_000, Some(at))),
            ("done-young", task("completed", None, 5_000, Some(at))),
            ("server-old", task("working", Some("s-1"), 1_000, Some(at))),
            ("server-young", task("working", Some("s-2"), 1_000, Some(at + Duration::from_millis(500)))),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        forget_expired(&mut tasks, at + Duration::from_millis(1_000));
        assert_eq!(tasks.len(), 6, "nothing expires before its ttl has passed");
        forget_expired(&mut tasks, later);
        let mut left: Vec<&str> = tasks.keys().map(String::as_str).collect();
        left.sort_unstable();
        assert_eq!(left, ["done-young", "held", "server-young"]);
    }
}
