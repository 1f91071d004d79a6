//! `warrant hook claude-code` and `warrant hook codex`: the agent hosts' command
//! hooks, one JSON event on stdin, the host's documented answer on stdout
//! (`docs/integrations.md`, which states each host's contract).
//!
//! Both hosts read any exit code other than 0 and 2, a crash and a timeout as "proceed", so no
//! path here ends in one: a known event that cannot be governed gets a printed deny in the
//! host's format; input that is not a known event gets exit 2 with the reason on stderr; a
//! panic is caught and becomes exit 2. The wait for the principal ends before the host's own
//! hook timeout (`--wait`, default [`DEFAULT_WAIT_SECS`]; the hosts' default is 600 s).

use crate::govern::Outcome;
use crate::protocol::calls::ToolCall;
use crate::store::spool::Spool;
use serde_json::{Value, json};
use std::io::{Read, Write as _};
use std::path::PathBuf;
use std::time::Duration;

/// How long a hook waits for the principal by default: under the hosts' 600 s hook timeout, with
/// a minute to spare for the host's own work.
pub const DEFAULT_WAIT_SECS: f64 = 540.0;

/// Seconds after `--wait` at which a hook that has still not answered exits 2 on its own (the
/// host's timeout, as `warrant setup` writes it, is 60 s after `--wait`).
pub const WATCHDOG_GRACE_SECS: u64 = 30;

/// The largest event read from stdin (a tool input can be a whole file being written).
pub const MAX_EVENT_BYTES: u64 = 16 << 20;

/// The agent host a hook answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Host {
    /// Claude Code (`settings.json` hooks).
    ClaudeCode,
    /// OpenAI Codex CLI (`hooks.json` / `[hooks]`).
    Codex,
}

impl Host {
    /// The host's name, as packets name it.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Host::ClaudeCode => "claude-code",
            Host::Codex => "codex",
        }
    }
}

/// The events warrant handles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// Before a tool runs: allow or deny.
    PreToolUse,
    /// The host is about to ask its user: allow or deny.
    PermissionRequest,
    /// After a tool ran: a receipt.
    PostToolUse,
    /// After a tool ran and failed (Claude Code 2.1): a receipt of the failure.
    PostToolUseFailure,
}

impl Event {
    fn parse(s: &str) -> Option<Self> {
        match s {
            "PreToolUse" => Some(Event::PreToolUse),
            "PermissionRequest" => Some(Event::PermissionRequest),
            "PostToolUse" => Some(Event::PostToolUse),
            "PostToolUseFailure" => Some(Event::PostToolUseFailure),
            _ => None,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Event::PreToolUse => "PreToolUse",
            Event::PermissionRequest => "PermissionRequest",
            Event::PostToolUse => "PostToolUse",
            Event::PostToolUseFailure => "PostToolUseFailure",
        }
    }
}

/// The hook's options (`warrant hook HOST …`).
#[derive(Debug, Clone)]
pub struct HookOptions {
    /// The host.
    pub host: Host,
    /// The spool, resolved as every command resolves it.
    pub spool: Spool,
    /// The configuration directory (pinned keys, policy.toml).
    pub config_dir: PathBuf,
    /// The agent id packets name (default: the host's name).
    pub agent: Option<String>,
    /// The notebook (default: derived from the event's `cwd`).
    pub notebook: Option<String>,
    /// How long to wait for the principal.
    pub wait: Duration,
}

impl HookOptions {
    /// The options of `warrant hook HOST --agent ID --notebook NAME --wait SECS` on `spool`, the
    /// configuration directory being [`crate::store::config::config_dir`].
    ///
    /// # Errors
    /// A sentence: `wait` not a number of seconds from 0 to 86400, an agent id or notebook name
    /// that is not a safe id.
    pub fn new(
        host: Host,
        spool: Spool,
        agent: Option<String>,
        notebook: Option<String>,
        wait: f64,
    ) -> Result<Self, String> {
        let wait = Duration::try_from_secs_f64(wait)
            .ok()
            .filter(|d| *d <= Duration::from_secs(86_400))
            .ok_or_else(|| format!("--wait {wait}: give a number of seconds from 0 to 86400"))?;
        for (flag, id) in [("--agent", &agent), ("--notebook", &notebook)] {
            if let Some(id) = id.as_deref().filter(|id| !crate::protocol::packet::is_safe_id(id)) {
                return Err(format!(
                    "{flag} {:?} is not a safe id (A-Z a-z 0-9 . _ : -)",
                    crate::protocol::text::inert(id, 60)
                ));
            }
        }
        Ok(Self { host, spool, config_dir: crate::store::config::config_dir(), agent, notebook, wait })
    }
}

/// Starts the hook's watchdog: the host kills a hook at its timeout and then runs the call, so
/// whatever is slow (a large chain, a slow disk, a stdin left open), the hook ends first, `wait`
/// plus [`WATCHDOG_GRACE_SECS`] after it starts, with exit 2 and the reason on stderr.
pub fn start_watchdog(wait: Duration) {
    let deadline = wait + Duration::from_secs(WATCHDOG_GRACE_SECS);
    std::thread::spawn(move || {
        std::thread::sleep(deadline);
        let _ = writeln!(std::io::stderr(), "warrant: no answer within the hook's time; the call is denied");
        std::process::exit(2);
    });
}

/// Writes `answer` (stdout, then stderr) and returns the exit code: the answer's, or 2 when it
/// cannot reach the host — stdout closed (a closed stdout is reopened on `/dev/null` when the
/// process starts, and writes there succeed, where Codex reads exit 0 with no output as
/// "proceed") or the write failing.
#[must_use]
pub fn write_answer(answer: &Answer) -> u8 {
    if !answer.stdout.is_empty() && stdout_is_dev_null() {
        let _ = writeln!(
            std::io::stderr(),
            "warrant: stdout is closed, so the answer cannot reach the host; the call is denied"
        );
        return 2;
    }
    let mut out = std::io::stdout().lock();
    if out.write_all(answer.stdout.as_bytes()).and_then(|()| out.flush()).is_err() {
        // The host did not read the answer: make sure it cannot read "proceed". (`writeln!`, not
        // `eprintln!`, which panics on a closed stderr.)
        let _ = writeln!(std::io::stderr(), "warrant: could not write the answer; the call is denied");
        return 2;
    }
    if !answer.stderr.is_empty() {
        let _ = writeln!(std::io::stderr(), "{}", answer.stderr);
    }
    answer.code
}

/// Whether this process's stdout is `/dev/null`.
fn stdout_is_dev_null() -> bool {
    let (Ok(out), Ok(null)) = (rustix::fs::fstat(std::io::stdout()), rustix::fs::stat("/dev/null")) else {
        return false;
    };
    rustix::fs::FileType::from_raw_mode(out.st_mode) == rustix::fs::FileType::CharacterDevice
        && out.st_rdev == null.st_rdev
}

/// What the hook prints and how it exits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// Exactly what goes to stdout (empty for Codex's allow and for receipts).
    pub stdout: String,
    /// What goes to stderr (the reason for exit 2; notes otherwise).
    pub stderr: String,
    /// 0 or 2, never anything else.
    pub code: u8,
}

impl Answer {
    /// Exit 2 with `reason` on stderr: both hosts block the call (Claude Code's
    /// PermissionRequest ignores it and asks its user instead).
    #[must_use]
    pub fn block(reason: impl Into<String>) -> Self {
        Answer { stdout: String::new(), stderr: format!("warrant: {}", reason.into()), code: 2 }
    }
}

/// Runs the hook for `host` on `input` (the event's bytes) with `opts`, or with the reason the
/// options could not be made (a bad configuration: every event is then denied in the host's
/// format). Never panics, never returns a code other than 0 or 2.
#[must_use]
pub fn run(host: Host, opts: Result<&HookOptions, &str>, input: &[u8]) -> Answer {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handle(host, opts, input))) {
        Ok(a) => a,
        Err(_) => Answer::block("internal error (a panic): the call is denied"),
    }
}

/// Reads the event from stdin (at most [`MAX_EVENT_BYTES`]) and runs the hook ([`run`]).
#[must_use]
pub fn run_stdin(host: Host, opts: Result<&HookOptions, &str>) -> Answer {
    let mut input = Vec::new();
    match std::io::stdin().lock().take(MAX_EVENT_BYTES + 1).read_to_end(&mut input) {
        Ok(_) if input.len() as u64 > MAX_EVENT_BYTES => Answer::block("the event is larger than 16 MiB"),
        Ok(_) => run(host, opts, &input),
        Err(e) => Answer::block(format!("could not read the event: {e}")),
    }
}

fn handle(host: Host, opts: Result<&HookOptions, &str>, input: &[u8]) -> Answer {
    let event: Value = match crate::protocol::canonical::parse_untrusted(input) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => return Answer::block("the event is not a JSON object"),
        Err(e) => return Answer::block(format!("the event is not JSON: {e}")),
    };
    let Some(name) = event.get("hook_event_name").and_then(Value::as_str) else {
        return Answer::block("the event has no hook_event_name");
    };
    let Some(kind) = Event::parse(name) else {
        return Answer::block(format!("unsupported event {:?}", crate::protocol::text::inert(name, 60)));
    };
    let opts = match opts {
        Ok(o) => o,
        Err(why) => return deny(host, kind, why),
    };
    let call = match call_of(opts, &event) {
        Ok(c) => c,
        Err(why) => return deny(opts.host, kind, &why),
    };
    let call_id = event.get("tool_use_id").and_then(Value::as_str).filter(|s| !s.is_empty());
    if matches!(kind, Event::PostToolUse | Event::PostToolUseFailure) {
        return receipt(opts, &event, &call, call_id, kind == Event::PostToolUseFailure);
    }
    // The PermissionRequest the host sends for a call its PreToolUse just let run (Claude Code's
    // `ask` rules, Codex's escalation) is answered by that answer, once: no second packet for
    // one call. The principal's approval allows it; the gate's own leaves it to the host's
    // prompt, as for any request.
    if kind == Event::PermissionRequest {
        let key = crate::protocol::calls::call_key(&call);
        match crate::store::spool::permission_answered_by(&opts.spool, &key, time::OffsetDateTime::now_utc()) {
            Ok(Some((id, true))) => {
                return allow(opts.host, kind, &format!("warrant: {id} was approved for this call by the principal"));
            }
            Ok(Some((_, false))) => return Answer { stdout: String::new(), stderr: String::new(), code: 0 },
            Ok(None) => {}
            Err(e) => return deny(opts.host, kind, &format!("could not read this call's earlier answer: {e}")),
        }
    }
    // Otherwise a PermissionRequest carries no call id: each is its own packet (a nonce), so an
    // approval of one request never answers a later identical one.
    let nonce = format!("req-{}", uuid::Uuid::now_v7().simple());
    let call_id = call_id.or((kind == Event::PermissionRequest).then_some(nonce.as_str()));
    // The policies and keys are read once, for the quick path and for a packet alike.
    let mut live = crate::govern::Live::new(opts.spool.clone(), &opts.config_dir);
    let governor = match live.governor() {
        Ok(g) => g,
        Err(e) => return deny(opts.host, kind, &e.to_string()),
    };
    // A `safe` call the gate allows on its own runs with no packet, as through the gateway
    // (`govern::Live::quick`): reads neither fill the spool nor spend the agent's rate limit.
    // Its one class's evidence is all the gate reads of the chain's.
    let classified = governor.classify(&call);
    if classified.tier == Some(crate::protocol::tiers::ToolTier::Safe) && kind == Event::PreToolUse {
        live.evidence_only(governor.policies().normalize(&classified.class));
        match live.refresh() {
            Ok(_) => {
                if let Some(class) = live.quick(&call) {
                    return allow(
                        opts.host,
                        kind,
                        &format!("warrant: the gate allows this `{class}` call on its own (no packet)"),
                    );
                }
            }
            Err(e) => return deny(opts.host, kind, &e.to_string()),
        }
    }
    // The call the principal approved as corrected for an earlier one its host could not
    // change, made again by the agent exactly as corrected: it runs once.
    if kind == Event::PreToolUse {
        match governor.corrected_rerun(&call) {
            Ok(Some(Outcome::Allow { reason, .. })) => {
                return allow(opts.host, kind, &format!("warrant: this call {reason}"));
            }
            Ok(Some(refused)) => return deny(opts.host, kind, &refusal_text(&refused)),
            Ok(None) => {}
            Err(e) => return deny(opts.host, kind, &e.to_string()),
        }
    }
    let outcome = match governor.submit(&call, call_id, Some(opts.wait)) {
        Ok(s) => {
            let o = match &s.outcome {
                // The hold lives until the answer is recorded below.
                Outcome::Hold { .. } => match governor.hold_until(&s, opts.wait) {
                    Ok(hold) => (governor.wait(&s, opts.wait), Some(hold)),
                    Err(o) => (o, None),
                },
                o => (o.clone(), None),
            };
            let (o, hold) = o;
            // The preconditions are re-checked last, just before the answer: the host runs the
            // tool after it, which no hook can see.
            let o = match o {
                Outcome::Allow { .. } => governor.recheck_before_run(&s, &o).unwrap_or(o),
                o => o,
            };
            (o, hold)
        }
        Err(e) => return deny(opts.host, kind, &e.to_string()),
    };
    let (outcome, hold) = outcome;
    // Once answered, the call never runs on a later decision (a retry with the same call id,
    // an approval signed after the answer); the wait is let go after the answer is recorded.
    governor.answered(&outcome);
    drop(hold);
    // A call approved as corrected is not this call: the host's PermissionRequest for it (with
    // either input) is its own packet.
    if let (Event::PreToolUse, Outcome::Allow { packet_id, by_principal, corrected: None, .. }) = (kind, &outcome)
        && let Err(e) = crate::store::spool::record_call(
            &opts.spool,
            &crate::protocol::calls::call_key(&call),
            packet_id,
            *by_principal,
        )
    {
        // The host's PermissionRequest for this call, if it sends one, is then its own packet.
        eprintln!("warrant: could not record the answer to {packet_id} for a permission request: {e}");
    }
    match &outcome {
        // The host is about to ask its own user: what the gate would allow on its own is left to
        // that prompt (an escalation the agent asks for is a person's to grant), not granted here.
        Outcome::Allow { by_principal: false, .. } if kind == Event::PermissionRequest => {
            Answer { stdout: String::new(), stderr: String::new(), code: 0 }
        }
        // Approved as corrected: Claude Code runs the corrected input (`updatedInput`); a host or
        // event that cannot change a call's input is refused with the correction, for the model.
        Outcome::Allow { packet_id, reason, corrected: Some(input), .. } => match (opts.host, kind) {
            // The correction runs once, whichever way it runs.
            (Host::ClaudeCode, Event::PreToolUse) => match governor.claim_correction(packet_id) {
                None => allow_corrected(&format!("warrant: {packet_id} {reason}"), input),
                Some(refused) => deny(opts.host, kind, &refusal_text(&refused)),
            },
            _ => deny(opts.host, kind, &corrected_elsewhere(opts, &call, packet_id, reason, input)),
        },
        Outcome::Allow { packet_id, reason, .. } => allow(opts.host, kind, &format!("warrant: {packet_id} {reason}")),
        Outcome::Deny { .. } => deny(opts.host, kind, &refusal_text(&outcome)),
        // `wait` never answers Hold.
        Outcome::Hold { .. } => deny(opts.host, kind, "internal error: still held after the wait"),
    }
}

/// The call an event describes.
fn call_of(opts: &HookOptions, event: &Value) -> Result<ToolCall, String> {
    let tool = event
        .get("tool_name")
        .and_then(Value::as_str)
        .filter(|t| crate::protocol::calls::is_tool_key(t))
        .ok_or("the event has no valid tool_name")?;
    let input = event.get("tool_input").cloned().ok_or("the event has no tool_input")?;
    // Claude Code names the project in `CLAUDE_PROJECT_DIR`; the event's `cwd` follows the
    // agent's `cd`, so the project wins when the host gives it.
    let project = match opts.host {
        Host::ClaudeCode => std::env::var("CLAUDE_PROJECT_DIR").ok().filter(|d| !d.is_empty()),
        Host::Codex => None,
    };
    // Where the command runs: the event's `cwd` (it follows the agent's `cd`), recorded beside
    // the project so a grant on a command line covers it only there.
    let workdir = event.get("cwd").and_then(Value::as_str).map(str::to_owned);
    let cwd = project.or_else(|| event.get("cwd").and_then(Value::as_str).map(str::to_owned));
    let notebook = match (&opts.notebook, &cwd) {
        (Some(n), _) => n.clone(),
        (None, Some(d)) => crate::protocol::calls::notebook_for_dir(d),
        (None, None) => "workspace".to_owned(),
    };
    let session = event.get("session_id").and_then(Value::as_str).map(|s| {
        if crate::protocol::packet::is_safe_id(s) {
            s.to_owned()
        } else {
            crate::protocol::canonical::sha256_hex(s.as_bytes())[..32].to_owned()
        }
    });
    Ok(ToolCall {
        host: opts.host.as_str().to_owned(),
        agent: opts.agent.clone().unwrap_or_else(|| opts.host.as_str().to_owned()),
        session,
        tool: tool.to_owned(),
        input,
        notebook,
        cwd,
        workdir,
        annotations: Value::Null,
    })
}

/// PostToolUse: a receipt of the outcome, the agent's own word (`docs/integrations.md`).
fn receipt(opts: &HookOptions, event: &Value, call: &ToolCall, call_id: Option<&str>, failure: bool) -> Answer {
    if !opts.spool.root().is_dir() {
        return Answer {
            stdout: String::new(),
            stderr: format!("warrant: no spool at {}", opts.spool.root().display()),
            code: 2,
        };
    }
    let packet_id = crate::protocol::calls::packet_id(call, call_id);
    let policies = crate::govern::load_policies(&opts.spool, &opts.config_dir);
    let class = match policies {
        Ok(p) => crate::protocol::calls::classify(&p, &call.tool, &call.input, &Value::Null).class,
        Err(e) => return Answer::block(e.to_string()),
    };
    let response = event.get("tool_response").unwrap_or(&Value::Null);
    // Codex reports a command's result as text: its exit status is read from it, when it says;
    // Codex 0.171.0's text is the output alone, and its status is in the session's transcript.
    let exit_code = response.as_str().and_then(exit_status).or_else(|| {
        response.as_str()?;
        (call.host == Host::Codex.as_str()).then_some(())?;
        let transcript = event.get("transcript_path").and_then(Value::as_str)?;
        transcript_exit_code(std::path::Path::new(transcript), call_id?)
    });
    let failed = failure
        || exit_code.is_some_and(|c| c != 0)
        || response.get("is_error").and_then(Value::as_bool) == Some(true)
        || response.get("isError").and_then(Value::as_bool) == Some(true)
        || response.get("success").and_then(Value::as_bool) == Some(false)
        || response.get("interrupted").and_then(Value::as_bool) == Some(true);
    let note = match (failure, failed) {
        (true, _) if event.get("is_interrupt").and_then(Value::as_bool) == Some(true) => {
            "the tool ran and was interrupted (PostToolUseFailure)"
        }
        (true, _) => "the tool ran and failed (PostToolUseFailure)",
        (false, true) => "the tool reported an error",
        (false, false) => "the tool ran",
    };
    let mut tool_call = json!({"host": call.host, "tool": call.tool, "calls": 1});
    if let Some(code) = exit_code {
        tool_call["exit_code"] = json!(code);
    }
    let req = crate::store::spool::ReceiptRequest {
        action_class: &class,
        outcome: crate::protocol::graduation::receipt::ReceiptOutcome::Execute,
        agent: &call.agent,
        packet_id: Some(&packet_id),
        source_type: None,
        note: Some(note),
        tool_call: Some(&tool_call),
    };
    match crate::store::spool::publish_receipt(&opts.spool, &req, &crate::protocol::clock::now_rfc3339()) {
        Ok(_) => Answer { stdout: String::new(), stderr: String::new(), code: 0 },
        // The call already ran: exit 2 shows the reason to the host's user.
        Err(e) => Answer::block(format!("could not record the receipt of {packet_id}: {e}")),
    }
}

/// The exit status a command's result text states (`Exit code: N`, `Process exited with code N`,
/// as Codex words it), if it states one.
fn exit_status(text: &str) -> Option<i64> {
    text.lines().take(8).find_map(|line| {
        let line = line.trim();
        let rest = line
            .strip_prefix("Exit code:")
            .or_else(|| line.strip_prefix("Process exited with code"))
            .or_else(|| line.strip_prefix("exit code:"))?;
        rest.trim().trim_end_matches('.').parse().ok()
    })
}

/// The most of a transcript [`transcript_exit_code`] reads: its last 4 MiB.
const TRANSCRIPT_TAIL: u64 = 4 << 20;

/// The exit status Codex recorded for the command call `call_id` in its session transcript
/// (`transcript_path`, a JSON-lines rollout): the `exit_code` of the `item_completed` event whose
/// item has that id. Codex 0.171.0 writes it before it runs PostToolUse, where the event's own
/// `tool_response` is the command's output alone. The agent's own word, like the rest of a
/// receipt. `None` when the file is not a regular file, or no such line is in its last
/// [`TRANSCRIPT_TAIL`] bytes. The path is the event's: opened without blocking, so a FIFO or a
/// device named there never holds the hook.
fn transcript_exit_code(path: &std::path::Path, call_id: &str) -> Option<i64> {
    use std::io::{Seek, SeekFrom};
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file =
        std::fs::OpenOptions::new().read(true).custom_flags(crate::store::open_flags::NONBLOCK).open(path).ok()?;
    let len = file.metadata().ok().filter(std::fs::Metadata::is_file)?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(TRANSCRIPT_TAIL))).ok()?;
    let mut tail = Vec::new();
    file.take(TRANSCRIPT_TAIL).read_to_end(&mut tail).ok()?;
    let needle = format!("\"{call_id}\"");
    tail.split(|b| *b == b'\n').rev().filter(|line| memchr::memmem::find(line, needle.as_bytes()).is_some()).find_map(
        |line| {
            let v: Value = serde_json::from_slice(line).ok()?;
            let payload = v.get("payload")?;
            let item = payload.get("item")?;
            (payload.get("type")?.as_str()? == "item_completed" && item.get("id")?.as_str()? == call_id)
                .then(|| item.get("exit_code")?.as_i64())?
        },
    )
}

/// The host's allow for `event`.
fn allow(host: Host, event: Event, reason: &str) -> Answer {
    let stdout = match (host, event) {
        // Codex: empty stdout with exit 0 allows; anything more could be read as a failed hook.
        (Host::Codex, Event::PreToolUse) => String::new(),
        (_, Event::PreToolUse) => output(json!({"hookSpecificOutput": {
            "hookEventName": "PreToolUse", "permissionDecision": "allow", "permissionDecisionReason": reason,
        }})),
        (_, _) => output(json!({"hookSpecificOutput": {
            "hookEventName": event.as_str(), "decision": {"behavior": "allow"},
        }})),
    };
    Answer { stdout, stderr: String::new(), code: 0 }
}

/// A refusal in the words the model reads: `STATUS (PACKET): why (remedy)`.
fn refusal_text(outcome: &Outcome) -> String {
    let (id, status) = match outcome {
        Outcome::Deny { packet_id, status, .. } => (packet_id.as_deref().unwrap_or("-"), *status),
        _ => (outcome.packet_id().unwrap_or("-"), "blocked"),
    };
    format!("{status} ({id}): {}", outcome.message())
}

/// Why a call approved as corrected is refused on a host (or event) that cannot change a call's
/// input, for the model: the corrected input, whole, and that the agent's next call with exactly
/// that input runs once (`Governor::corrected_rerun`, checked against the principal's decision;
/// the packet id is left under that call's key). An input too long to repeat whole within the
/// reason, or holding characters a terminal would hide, is not offered.
fn corrected_elsewhere(opts: &HookOptions, call: &ToolCall, packet_id: &str, reason: &str, input: &Value) -> String {
    let text = input.to_string();
    let repeatable =
        text.chars().count() <= CORRECTION_IN_REASON && !text.chars().any(crate::protocol::text::is_unsafe);
    let next = if repeatable {
        let corrected = ToolCall { input: input.clone(), ..call.clone() };
        let key = crate::protocol::calls::call_key(&corrected);
        match crate::store::spool::record_corrected_call(&opts.spool, &key, packet_id) {
            Ok(()) => format!(
                "make the call again with exactly this input and it runs (once, within {} minutes): {text}",
                crate::govern::CORRECTED_RUN_WITHIN.whole_minutes()
            ),
            Err(e) => {
                format!("the principal approved this input instead ({e}: a call with it is a new request): {text}")
            }
        }
    } else {
        format!(
            "the corrected input is too long or holds characters a terminal would hide, so it cannot be repeated \
             here: ask the principal for it (`warrant list --json` shows {packet_id})"
        )
    };
    format!(
        "{packet_id} was {reason}; this host cannot run a call with a corrected input, so the call as proposed does not run: {next}"
    )
}

/// The longest corrected input (in characters) a refusal carries for the model to repeat.
const CORRECTION_IN_REASON: usize = 3000;

/// Claude Code's allow of a PreToolUse call approved as corrected: the tool runs with `input`
/// (`hookSpecificOutput.updatedInput`, the whole corrected input) instead of the model's.
fn allow_corrected(reason: &str, input: &Value) -> Answer {
    let stdout = output(json!({"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "permissionDecision": "allow", "permissionDecisionReason": reason,
        "updatedInput": input,
    }}));
    Answer { stdout, stderr: String::new(), code: 0 }
}

/// The host's deny for `event`, with `reason` for the model (and the user).
fn deny(host: Host, event: Event, reason: &str) -> Answer {
    let reason = crate::protocol::text::inert(&format!("warrant: {reason}"), 4000);
    let stdout = match (host, event) {
        (_, Event::PreToolUse) => output(json!({"hookSpecificOutput": {
            "hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": reason,
        }})),
        (Host::ClaudeCode, Event::PermissionRequest) => output(json!({"hookSpecificOutput": {
            "hookEventName": "PermissionRequest", "decision": {"behavior": "deny", "message": reason, "interrupt": false},
        }})),
        (Host::Codex, Event::PermissionRequest) => output(json!({"hookSpecificOutput": {
            "hookEventName": "PermissionRequest", "decision": {"behavior": "deny", "message": reason},
        }})),
        // A receipt cannot be denied: the call ran. Exit 2 shows why.
        (_, Event::PostToolUse | Event::PostToolUseFailure) => return Answer::block(reason),
    };
    Answer { stdout, stderr: String::new(), code: 0 }
}

fn output(v: Value) -> String {
    let mut s = v.to_string();
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exit_status_is_read_from_the_transcript_line_of_the_call_and_a_fifo_never_blocks() {
        let dir = tempfile::tempdir().expect("tempdir");
        let transcript = dir.path().join("rollout.jsonl");
        let line = |id: &str, code: i64| json!({"type": "event_msg", "payload": {"type": "item_completed", "item": {"id": id, "exit_code": code}}});
        std::fs::write(&transcript, format!("{}\nnot json \"call_a\"\n{}\n", line("call_a", 2), line("call_b", 0)))
            .expect("write");
        assert_eq!(transcript_exit_code(&transcript, "call_a"), Some(2));
        assert_eq!(transcript_exit_code(&transcript, "call_b"), Some(0));
        assert_eq!(transcript_exit_code(&transcript, "call_c"), None);
        // A FIFO with no writer: opening it for reading would block for ever.
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().is_ok_and(|s| s.success());
        assert!(made, "mkfifo");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(transcript_exit_code(&fifo, "call_a")));
        assert_eq!(rx.recv_timeout(Duration::from_secs(10)), Ok(None), "answered at once, with nothing");
    }
}
