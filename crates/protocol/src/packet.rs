//! Approval packets and receipts as agents publish them.
//!
//! Two packet forms load (`trust-graduation.md` §1.1, §1.3):
//! - the portable v0.1 snake_case packet (`type: trust_graduation_approval_packet`,
//!   `site/spec/0.1/approval-packet.schema.json`), and
//! - the camelCase packet of the JavaScript reference runtime (`protocol: trust-graduation`,
//!   `schemas/v1/approval-packet.schema.json`).
//!
//! Each is checked against its schema by explicit code (required fields, types, constants,
//! enums, the class-id pattern and, for the runtime form, no unknown keys), so a failure names the
//! field. The tests cross-check these rules against the published schemas.

use crate::canonical;
use serde_json::{Map, Value};
use std::fmt;

/// Largest packet, receipt or decision file warrant reads (1 MiB).
pub const MAX_FILE_BYTES: u64 = 1 << 20;

/// The six decision states of Trust Graduation v0.1 (`decision.schema.json` `status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionState {
    /// May run.
    Allowed,
    /// May run within structured constraints.
    AllowedWithConstraints,
    /// Needs the principal's review now.
    ReviewRequired,
    /// Needs the principal's review, asynchronously.
    Deferred,
    /// Must not run.
    Blocked,
    /// Only a human may do this.
    HumanOnly,
}

impl DecisionState {
    /// All six, in the spec's order.
    pub const ALL: [DecisionState; 6] = [
        DecisionState::Allowed,
        DecisionState::AllowedWithConstraints,
        DecisionState::ReviewRequired,
        DecisionState::Deferred,
        DecisionState::Blocked,
        DecisionState::HumanOnly,
    ];

    /// The wire spelling.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            DecisionState::Allowed => "allowed",
            DecisionState::AllowedWithConstraints => "allowed_with_constraints",
            DecisionState::ReviewRequired => "review_required",
            DecisionState::Deferred => "deferred",
            DecisionState::Blocked => "blocked",
            DecisionState::HumanOnly => "human_only",
        }
    }

    /// Parses the wire spelling.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|d| d.as_str() == s)
    }
}

impl fmt::Display for DecisionState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// True when `s` matches the class-id pattern `^[a-z][a-z0-9]*(\.[a-z][a-z0-9]*)+$`.
///
/// ```
/// use warrant_protocol::packet::is_class_id;
/// assert!(is_class_id("email.send.external"));
/// assert!(!is_class_id("email_send") && !is_class_id("Email.send"));
/// ```
#[must_use]
pub fn is_class_id(s: &str) -> bool {
    // One pass over the bytes: every `.`-separated segment starts with [a-z], goes on with
    // [a-z0-9], and is not empty; at least two segments.
    let mut segments = 0;
    let mut at_start = true;
    for b in s.bytes() {
        if at_start {
            if !b.is_ascii_lowercase() {
                return false;
            }
            at_start = false;
            segments += 1;
        } else if b == b'.' {
            at_start = true;
        } else if !(b.is_ascii_lowercase() || b.is_ascii_digit()) {
            return false;
        }
    }
    !at_start && segments >= 2
}

/// True when `s` is usable as a packet or receipt id and as a file name: 1 to 128 characters
/// from `[A-Za-z0-9._:-]`, not starting with `.` and without `..`, so never a path.
#[must_use]
pub fn is_safe_id(s: &str) -> bool {
    (1..=128).contains(&s.len())
        && !s.starts_with('.')
        && !s.contains("..")
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b':'))
}

/// Which packet form a file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PacketForm {
    /// Portable v0.1, snake_case.
    Portable,
    /// The reference runtime's camelCase packet.
    Runtime,
}

/// An approval packet that parsed and passed its schema.
#[derive(Debug, Clone, PartialEq)]
pub struct Packet {
    /// The packet id: `packet_id` / `packetId`, else the file name without `.json`.
    pub id: String,
    /// Its form.
    pub form: PacketForm,
    /// The action class as written.
    pub action_class: String,
    /// The proposing agent (`agent`, `requested_by`/`requestedBy`), or `unknown`.
    pub agent: String,
    /// A one-line summary for lists.
    pub summary: String,
    /// Risk class (`low`, `medium`, `high`, `critical`) when known.
    pub risk: Option<String>,
    /// The decision state the packet carries.
    pub state: Option<DecisionState>,
    /// The gate's reason, when the packet carries one.
    pub reason: Option<String>,
    /// Creation time as written, if any.
    pub created_at: Option<String>,
    /// Expiry as written, if any.
    pub expires_at: Option<String>,
    /// A trace id to carry into the chain, if the packet has one.
    pub trace_id: Option<String>,
    /// `sha256:<hex>` of the packet's canonical JSON: what a decision signs.
    pub content_hash: String,
    /// The packet as published. Its bodies are read from it, not copied out
    /// ([`Packet::proposed_action`], [`Packet::context`], [`Packet::evidence`]).
    pub raw: Value,
    /// Its `governance` object, parsed on first use ([`crate::verdict::Governance::of_packet`]).
    pub(crate) governance: crate::verdict::GovernanceCache,
    /// `created_at` in seconds since the epoch, parsed once (the console sorts by it each scan).
    pub(crate) created_unix: Option<f64>,
}

impl Packet {
    /// The exact proposed action: the portable packet's `proposed_action`, the runtime packet's
    /// `requestedAction`, else its `context`; `null` for a packet kept without its bodies
    /// ([`Packet::from_headers`]).
    #[must_use]
    pub fn proposed_action(&self) -> &Value {
        let member = match self.form {
            PacketForm::Portable => self.raw.get("proposed_action"),
            PacketForm::Runtime => self.raw.get("requestedAction").or_else(|| self.raw.get("context")),
        };
        member.unwrap_or(&Value::Null)
    }

    /// The request context (`context`), or `null`.
    #[must_use]
    pub fn context(&self) -> &Value {
        self.raw.get("context").unwrap_or(&Value::Null)
    }

    /// The evidence (`evidence`: an array of rows, or the runtime's summary object), or `null`.
    #[must_use]
    pub fn evidence(&self) -> &Value {
        self.raw.get("evidence").unwrap_or(&Value::Null)
    }

    /// `created_at` in seconds since the epoch (`None` when absent or not a timestamp), parsed
    /// once when the packet was.
    #[must_use]
    pub fn created_unix(&self) -> Option<f64> {
        self.created_unix
    }

    /// What a listing shows of this packet: every field but its bodies.
    #[must_use]
    pub fn headers(&self) -> PacketHeaders {
        PacketHeaders {
            id: self.id.clone(),
            form: self.form,
            action_class: self.action_class.clone(),
            agent: self.agent.clone(),
            summary: self.summary.clone(),
            risk: self.risk.clone(),
            state: self.state,
            reason: self.reason.clone(),
            created_at: self.created_at.clone(),
            expires_at: self.expires_at.clone(),
            trace_id: self.trace_id.clone(),
            content_hash: self.content_hash.clone(),
        }
    }

    /// A packet without its bodies (`raw` is `null`, and with it `proposed_action`, `context`
    /// and `evidence`) made from the headers [`Packet::headers`] took of a packet that parsed:
    /// for a listing that keeps them between runs. Nothing that judges, shows or signs a packet
    /// may use one; `created_unix` is parsed again from `created_at`.
    #[must_use]
    pub fn from_headers(h: PacketHeaders) -> Self {
        let created_unix = h.created_at.as_deref().and_then(crate::clock::unix_seconds);
        Self {
            id: h.id,
            form: h.form,
            action_class: h.action_class,
            agent: h.agent,
            summary: h.summary,
            risk: h.risk,
            state: h.state,
            reason: h.reason,
            created_at: h.created_at,
            expires_at: h.expires_at,
            trace_id: h.trace_id,
            content_hash: h.content_hash,
            raw: Value::Null,
            governance: crate::verdict::GovernanceCache::default(),
            created_unix,
        }
    }
}

/// A [`Packet`]'s fields but its bodies, as [`Packet::headers`] takes them: what `warrant list`
/// shows and keeps between runs (`docs/spool.md`, The listing's cache).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PacketHeaders {
    /// [`Packet::id`].
    pub id: String,
    /// [`Packet::form`].
    pub form: PacketForm,
    /// [`Packet::action_class`].
    pub action_class: String,
    /// [`Packet::agent`].
    pub agent: String,
    /// [`Packet::summary`].
    pub summary: String,
    /// [`Packet::risk`].
    pub risk: Option<String>,
    /// [`Packet::state`].
    pub state: Option<DecisionState>,
    /// [`Packet::reason`].
    pub reason: Option<String>,
    /// [`Packet::created_at`].
    pub created_at: Option<String>,
    /// [`Packet::expires_at`].
    pub expires_at: Option<String>,
    /// [`Packet::trace_id`].
    pub trace_id: Option<String>,
    /// [`Packet::content_hash`].
    pub content_hash: String,
}

/// Why a file is not a valid packet or receipt.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize, serde::Deserialize)]
pub enum InvalidReason {
    /// Not UTF-8 JSON.
    #[error("not JSON: {0}")]
    NotJson(String),
    /// JSON, but not an object.
    #[error("not a JSON object")]
    NotObject,
    /// Neither packet form (or receipt form) is recognised.
    #[error("unknown form: {0}")]
    UnknownForm(String),
    /// A schema rule failed.
    #[error("schema: {0}")]
    Schema(String),
    /// The id is empty, too long, or could be a path.
    #[error("unsafe id {0:?}: ids may use only A-Z a-z 0-9 . _ : - (no path separators, no ..)")]
    UnsafeId(String),
    /// The agent id is not a safe id: a name that could look like another agent's on screen
    /// (`agent-rоgue` with a Cyrillic `о`) or that no control could ever name.
    #[error(
        "agent id {0:?} is not a safe id: agent ids may use only A-Z a-z 0-9 . _ : - (so every agent can be told apart, quarantined and killed)"
    )]
    UnsafeAgent(String),
    /// The file is larger than [`MAX_FILE_BYTES`].
    #[error("file is {0} bytes, over the 1 MiB limit")]
    TooLarge(u64),
    /// The file is a symlink or not a regular file.
    #[error("not a regular file (symlinks are refused)")]
    NotRegular,
    /// The file could not be read.
    #[error("unreadable: {0}")]
    Io(String),
}

fn schema_err(msg: impl Into<String>) -> InvalidReason {
    InvalidReason::Schema(msg.into())
}

/// Parses JSON bytes into an object ([`canonical::parse_untrusted`]: UTF-8, no duplicate keys,
/// nesting at most 127 levels deep, no `NaN`/`Infinity`, no number beyond `f64` or integer beyond 64
/// bits).
///
/// # Errors
/// [`InvalidReason::NotJson`] or [`InvalidReason::NotObject`].
pub fn parse_object(bytes: &[u8]) -> Result<Map<String, Value>, InvalidReason> {
    let text = std::str::from_utf8(bytes).map_err(|e| InvalidReason::NotJson(format!("not UTF-8: {e}")))?;
    match canonical::parse_untrusted(text.as_bytes()) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(InvalidReason::NotObject),
        Err(e) => Err(InvalidReason::NotJson(e.to_string())),
    }
}

fn opt_str<'a>(m: &'a Map<String, Value>, k: &str) -> Result<Option<&'a str>, InvalidReason> {
    match m.get(k) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(schema_err(format!("`{k}` must be a string"))),
    }
}

fn req_str<'a>(m: &'a Map<String, Value>, k: &str) -> Result<&'a str, InvalidReason> {
    opt_str(m, k)?.ok_or_else(|| schema_err(format!("missing required field `{k}`")))
}

fn check_type(m: &Map<String, Value>, k: &str, ok: fn(&Value) -> bool, what: &str) -> Result<(), InvalidReason> {
    match m.get(k) {
        Some(v) if !ok(v) => Err(schema_err(format!("`{k}` must be {what}"))),
        _ => Ok(()),
    }
}

fn check_datetime(m: &Map<String, Value>, k: &str) -> Result<Option<String>, InvalidReason> {
    match opt_str(m, k)? {
        None => Ok(None),
        Some(s) if crate::clock::parse_rfc3339(s).is_some() => Ok(Some(s.to_owned())),
        Some(s) => Err(schema_err(format!("`{k}` is not an RFC 3339 date-time: {s:?}"))),
    }
}

/// The four risk classes.
const RISKS: [&str; 4] = ["low", "medium", "high", "critical"];

/// An agent name for the chain: the given one trimmed, or `unknown` when absent or blank (a
/// chain record's `agent` must be non-empty).
fn nonblank(agent: Option<&str>) -> String {
    agent.map(str::trim).filter(|a| !a.is_empty()).unwrap_or("unknown").to_owned()
}

fn first_line(s: &str, max: usize) -> String {
    let line = s.lines().next().unwrap_or("").trim();
    if line.chars().count() > max { line.chars().take(max).collect() } else { line.to_owned() }
}

/// A summary from the first present string field among `keys` of `v`.
fn summary_from(v: &Value, keys: &[&str]) -> Option<String> {
    keys.iter().find_map(|k| v.get(k).and_then(Value::as_str)).map(|s| first_line(s, 200)).filter(|s| !s.is_empty())
}

/// Parses and validates a packet. `file_stem` is the file name without `.json`, used as the id
/// when the packet names none.
///
/// # Errors
/// [`InvalidReason`] naming the first rule the file breaks.
pub fn parse_packet(bytes: &[u8], file_stem: &str) -> Result<Packet, InvalidReason> {
    packet_of(Value::Object(parse_object(bytes)?), file_stem)
}

/// [`parse_packet`] of a packet already held as a value (one warrant built, such as
/// [`crate::calls::call_packet`]'s), without writing it out and reading it back: the same
/// packet, or the same error, as `parse_packet` gives for its JSON text (`serde_json::to_vec`).
/// A value cannot hold a duplicate key, a non-finite number or an integer out of the 64-bit
/// range, and its floats read back exactly (serde_json's `float_roundtrip`; the workspace does
/// not enable `arbitrary_precision`); nesting is checked as the text reader checks it (128
/// levels or more refused).
///
/// # Errors
/// [`InvalidReason::NotJson`] (nested too deep), [`InvalidReason::NotObject`], or the rule the
/// packet breaks, as [`parse_packet`].
pub fn packet_from_value(raw: Value, file_stem: &str) -> Result<Packet, InvalidReason> {
    if nesting(&raw) > MAX_NESTING {
        return Err(InvalidReason::NotJson("recursion limit exceeded".into()));
    }
    if !raw.is_object() {
        return Err(InvalidReason::NotObject);
    }
    packet_of(raw, file_stem)
}

/// The deepest nesting of arrays and objects the JSON reader accepts (serde_json's limit: 128
/// levels or more are refused).
const MAX_NESTING: usize = 127;

/// How many arrays and objects deep `v` is (a scalar 0), counting no further than one past
/// [`MAX_NESTING`].
fn nesting(v: &Value) -> usize {
    fn walk(v: &Value, depth: usize) -> usize {
        if depth > MAX_NESTING {
            return depth;
        }
        match v {
            Value::Array(a) => a.iter().map(|x| walk(x, depth + 1)).max().unwrap_or(depth + 1),
            Value::Object(m) => m.values().map(|x| walk(x, depth + 1)).max().unwrap_or(depth + 1),
            _ => depth,
        }
    }
    walk(v, 0)
}

/// The packet of a parsed JSON object `raw`.
fn packet_of(raw: Value, file_stem: &str) -> Result<Packet, InvalidReason> {
    let Value::Object(map) = &raw else { unreachable!("constructed as an object") };
    let mut packet = if map.get("type").and_then(Value::as_str) == Some("trust_graduation_approval_packet") {
        parse_portable(map, file_stem)?
    } else if map.get("protocol").and_then(Value::as_str) == Some("trust-graduation") {
        parse_runtime(map)?
    } else {
        return Err(InvalidReason::UnknownForm(
            "expected `type: trust_graduation_approval_packet` (portable v0.1) or `protocol: trust-graduation` (runtime)".into(),
        ));
    };
    if !is_safe_id(&packet.id) {
        return Err(InvalidReason::UnsafeId(packet.id));
    }
    if !is_safe_id(&packet.agent) {
        return Err(InvalidReason::UnsafeAgent(packet.agent));
    }
    // The registry's human-only classes are human-only whatever the packet declares
    // (trust-graduation.md §3.2 rule a): an agent cannot talk its way out of the gate.
    if crate::registry::lookup(&packet.action_class).is_some_and(|c| c.kind == "human-only") {
        packet.state = Some(DecisionState::HumanOnly);
    }
    packet.content_hash = canonical::canonical_hash(&raw);
    packet.created_unix = packet.created_at.as_deref().and_then(crate::clock::unix_seconds);
    packet.raw = raw;
    Ok(packet)
}

fn parse_portable(m: &Map<String, Value>, stem: &str) -> Result<Packet, InvalidReason> {
    let action_class = req_str(m, "action_class")?;
    if !is_class_id(action_class) {
        return Err(schema_err(format!("`action_class` {action_class:?} does not match the class-id pattern")));
    }
    let proposed = m.get("proposed_action").ok_or_else(|| schema_err("missing required field `proposed_action`"))?;
    let decision = m.get("decision").ok_or_else(|| schema_err("missing required field `decision`"))?;
    let Value::Object(d) = decision else { return Err(schema_err("`decision` must be an object")) };
    let status = req_str(d, "status").map_err(|e| schema_err(format!("decision: {e}")))?;
    let state = DecisionState::parse(status)
        .ok_or_else(|| schema_err(format!("decision.status {status:?} is not a decision state")))?;
    let d_class = req_str(d, "action_class").map_err(|e| schema_err(format!("decision: {e}")))?;
    if !is_class_id(d_class) {
        return Err(schema_err("decision.action_class does not match the class-id pattern"));
    }
    let reason = req_str(d, "reason").map_err(|e| schema_err(format!("decision: {e}")))?;
    check_type(d, "graduationPath", Value::is_object, "an object")?;
    check_type(d, "constraints", Value::is_object, "an object")?;
    check_type(d, "observed", Value::is_object, "an object")?;
    check_decision_members(d)?;
    match m.get("external_actions") {
        Some(v) if v.as_i64() == Some(0) && v.is_i64() => {}
        Some(v) if v.as_u64() == Some(0) => {}
        Some(_) => return Err(schema_err("`external_actions` must be the integer 0: packets are prepare-only")),
        None => return Err(schema_err("missing required field `external_actions`")),
    }
    check_type(m, "evidence", Value::is_array, "an array")?;
    check_type(m, "required_approval", Value::is_boolean, "a boolean")?;
    check_type(m, "receipt_preview", Value::is_object, "an object")?;
    let id = opt_str(m, "packet_id")?.unwrap_or(stem).to_owned();
    let agent = nonblank(
        opt_str(m, "agent")?
            .or(opt_str(m, "requested_by")?)
            .or_else(|| proposed.get("requested_by").and_then(Value::as_str)),
    );
    let summary = opt_str(m, "summary")?
        .map(|s| first_line(s, 200))
        .or_else(|| summary_from(proposed, &["summary", "subject", "title", "description"]))
        .unwrap_or_else(|| first_line(reason, 200));
    let risk = match opt_str(m, "risk")?.or(opt_str(m, "risk_class")?) {
        Some(r) if RISKS.contains(&r) => Some(r.to_owned()),
        Some(r) => return Err(schema_err(format!("risk {r:?} is not low, medium, high or critical"))),
        None => crate::registry::risk_of(action_class).map(str::to_owned),
    };
    Ok(Packet {
        governance: crate::verdict::GovernanceCache::default(),
        id,
        form: PacketForm::Portable,
        action_class: action_class.to_owned(),
        agent,
        summary,
        risk,
        state: Some(state),
        reason: Some(reason.to_owned()),
        created_at: check_datetime(m, "created_at")?,
        expires_at: check_datetime(m, "expires_at")?,
        trace_id: opt_str(m, "trace_id")?.filter(|t| !t.trim().is_empty()).map(str::to_owned),
        content_hash: String::new(),
        raw: Value::Null,
        created_unix: None,
    })
}

/// The members of `decision.graduationPath` and `decision.constraints` as `decision.schema.json`
/// types them (both objects stay open to other members).
fn check_decision_members(d: &Map<String, Value>) -> Result<(), InvalidReason> {
    let prefixed = |obj: &str, e: InvalidReason| match e {
        InvalidReason::Schema(m) => schema_err(format!("decision.{obj}: {m}")),
        other => other,
    };
    let non_negative = |v: &Value| v.as_f64().is_some_and(|x| x >= 0.0);
    let strings = |v: &Value| v.as_array().is_some_and(|a| a.iter().all(Value::is_string));
    if let Some(Value::Object(g)) = d.get("graduationPath") {
        let check = || -> Result<(), InvalidReason> {
            check_type(g, "needed", non_negative, "a number >= 0")?;
            check_type(g, "current", non_negative, "a number >= 0")?;
            const NEXT: [&str; 6] = [
                "prepareApprovalPacket",
                "request_principal_approval",
                "run_dry_run",
                "collect_receipt",
                "reduce_scope",
                "stop",
            ];
            check_type(
                g,
                "next_best_action",
                |v| v.as_str().is_some_and(|s| NEXT.contains(&s)),
                "one of the six next actions",
            )?;
            check_type(g, "safe_fallback_action_class", |v| v.as_str().is_some_and(is_class_id), "a class id")?;
            check_type(g, "required_evidence", strings, "an array of strings")
        };
        check().map_err(|e| prefixed("graduationPath", e))?;
    }
    if let Some(Value::Object(c)) = d.get("constraints") {
        crate::graduation::gate::check_constraints(c).map_err(|m| schema_err(format!("decision.{m}")))?;
    }
    Ok(())
}

/// Keys the runtime packet schema allows (`additionalProperties: false`).
const RUNTIME_KEYS: [&str; 22] = [
    "protocol",
    "version",
    "packetId",
    "decisionId",
    "workspace",
    "scope",
    "requestedBy",
    "principal",
    "actionClass",
    "riskClass",
    "externalSideEffects",
    "approvalRequired",
    "receiptRequired",
    "reason",
    "requestedAction",
    "constraints",
    "actionBinding",
    "context",
    "evidence",
    "decisions",
    "createdAt",
    "expiresAt",
];

fn parse_runtime(m: &Map<String, Value>) -> Result<Packet, InvalidReason> {
    for key in m.keys() {
        if !RUNTIME_KEYS.contains(&key.as_str()) {
            return Err(schema_err(format!("unknown field `{key}` (the runtime packet allows no extra fields)")));
        }
    }
    req_str(m, "version")?;
    let id = req_str(m, "packetId")?;
    let action_class = req_str(m, "actionClass")?;
    // The runtime schema gives `actionClass` no pattern; warrant gates by class, so an action
    // that cannot be classified is not a packet it can decide on.
    if !is_class_id(&crate::registry::normalize(action_class)) {
        return Err(schema_err(format!(
            "`actionClass` {action_class:?} is not an action class (like email.send.external)"
        )));
    }
    let risk = req_str(m, "riskClass")?;
    if !RISKS.contains(&risk) {
        return Err(schema_err(format!("`riskClass` {risk:?} is not low, medium, high or critical")));
    }
    let approval_required = m
        .get("approvalRequired")
        .ok_or_else(|| schema_err("missing required field `approvalRequired`"))?
        .as_bool()
        .ok_or_else(|| schema_err("`approvalRequired` must be a boolean"))?;
    let context = m.get("context").ok_or_else(|| schema_err("missing required field `context`"))?;
    if !context.is_object() {
        return Err(schema_err("`context` must be an object"));
    }
    let decisions = m
        .get("decisions")
        .ok_or_else(|| schema_err("missing required field `decisions`"))?
        .as_array()
        .ok_or_else(|| schema_err("`decisions` must be an array"))?;
    for (i, d) in decisions.iter().enumerate() {
        let Value::Object(d) = d else { return Err(schema_err(format!("decisions[{i}] must be an object"))) };
        for k in ["id", "label", "effect"] {
            req_str(d, k).map_err(|e| schema_err(format!("decisions[{i}]: {e}")))?;
        }
        if d.len() != 3 {
            return Err(schema_err(format!("decisions[{i}] allows only id, label and effect")));
        }
    }
    for k in ["decisionId", "workspace", "scope", "requestedBy", "principal", "externalSideEffects", "reason"] {
        opt_str(m, k)?;
    }
    check_type(m, "receiptRequired", Value::is_boolean, "a boolean")?;
    for k in ["requestedAction", "constraints", "actionBinding", "evidence"] {
        check_type(m, k, Value::is_object, "an object")?;
    }
    let proposed = m.get("requestedAction").unwrap_or(context);
    let reason = opt_str(m, "reason")?.map(str::to_owned);
    let summary = summary_from(proposed, &["summary", "subject", "title", "description"])
        .or_else(|| summary_from(context, &["summary", "subject", "title", "description"]))
        .or_else(|| reason.as_deref().map(|r| first_line(r, 200)))
        .unwrap_or_default();
    Ok(Packet {
        governance: crate::verdict::GovernanceCache::default(),
        id: id.to_owned(),
        form: PacketForm::Runtime,
        action_class: action_class.to_owned(),
        agent: nonblank(opt_str(m, "requestedBy")?),
        summary,
        risk: Some(risk.to_owned()),
        // The runtime emits a packet only for a decision that asked for review (§3.2 rules b, d,
        // e, f); the packet itself carries no status.
        state: Some(if approval_required { DecisionState::ReviewRequired } else { DecisionState::Deferred }),
        reason,
        created_at: check_datetime(m, "createdAt")?,
        expires_at: check_datetime(m, "expiresAt")?,
        trace_id: opt_str(m, "decisionId")?.filter(|t| !t.trim().is_empty()).map(str::to_owned),
        content_hash: String::new(),
        raw: Value::Null,
        created_unix: None,
    })
}

/// Builds a portable v0.1 approval packet (`approval-packet.schema.json`), as `warrant propose`
/// and the demo agents publish it: `external_actions: 0`, the `packet_id` warrant adds, and a
/// decision that is `human_only` for the registry's human-only classes and `review_required`
/// otherwise. `created_at` is RFC 3339.
#[must_use]
pub fn portable_packet(id: &str, class: &str, agent: &str, summary: &str, proposed: Value, created_at: &str) -> Value {
    let human_only = crate::registry::lookup(class).is_some_and(|c| c.kind == "human-only");
    let (state, reason) = if human_only {
        (DecisionState::HumanOnly, "Only a human may do this; the packet records the request.")
    } else {
        (DecisionState::ReviewRequired, "Awaiting the principal's signed decision.")
    };
    serde_json::json!({
        "type": "trust_graduation_approval_packet",
        "packet_id": id,
        "agent": agent,
        "summary": summary,
        "action_class": class,
        "proposed_action": proposed,
        "decision": {"status": state.as_str(), "action_class": class, "reason": reason},
        "external_actions": 0,
        "required_approval": true,
        "created_at": created_at,
    })
}

/// A receipt that parsed (portable v0.1 or runtime form).
#[derive(Debug, Clone, PartialEq)]
pub struct Receipt {
    /// `receipt_id` / `receiptId`.
    pub id: String,
    /// The action class.
    pub action_class: String,
    /// The outcome as written (approve, refuse, correct, execute, or the runtime's values).
    pub outcome: String,
    /// The agent, if the receipt names one (`agent`, `requested_by`, `requestedBy`).
    pub agent: Option<String>,
    /// The packet it concerns, if named.
    pub packet_id: Option<String>,
    /// `created_at` / `createdAt`.
    pub created_at: String,
    /// The receipt as published.
    pub raw: Value,
    /// The name of the pinned gateway whose signature on this receipt verifies
    /// ([`crate::graduation::receipt::gateway_signer`]), when the scanner that read it was given
    /// the gateway keys (`warrant_store::spool::Scanner::with_gateway_keys`): an observed outcome.
    /// `None`: the agent's own word.
    pub observed_by: Option<String>,
}

/// Parses and validates a receipt (`site/spec/0.1/receipt.schema.json` or
/// `schemas/v1/receipt.schema.json`).
///
/// # Errors
/// [`InvalidReason`] naming the first rule the file breaks.
pub fn parse_receipt(bytes: &[u8]) -> Result<Receipt, InvalidReason> {
    let m = parse_object(bytes)?;
    let portable = m.get("type").and_then(Value::as_str) == Some("trust_graduation_receipt");
    let runtime = m.get("protocol").and_then(Value::as_str) == Some("trust-graduation");
    let (id_k, class_k, created_k, ext_k, human_k, prev_k, content_k, red_k) = if portable {
        (
            "receipt_id",
            "action_class",
            "created_at",
            "external_action_executed",
            "human_approved",
            "prev_hash",
            "content_hash",
            "redacted_for",
        )
    } else if runtime {
        req_str(&m, "version")?;
        (
            "receiptId",
            "actionClass",
            "createdAt",
            "externalActionExecuted",
            "humanApproved",
            "prevHash",
            "contentHash",
            "redactedFor",
        )
    } else {
        return Err(InvalidReason::UnknownForm(
            "expected `type: trust_graduation_receipt` (portable v0.1) or `protocol: trust-graduation` (runtime)"
                .into(),
        ));
    };
    let id = req_str(&m, id_k)?;
    if id.is_empty() {
        return Err(schema_err(format!("`{id_k}` must not be empty")));
    }
    let class = req_str(&m, class_k)?;
    if !is_class_id(class) {
        return Err(schema_err(format!("`{class_k}` {class:?} does not match the class-id pattern")));
    }
    let outcome = req_str(&m, "outcome")?;
    let created =
        check_datetime(&m, created_k)?.ok_or_else(|| schema_err(format!("missing required field `{created_k}`")))?;
    check_type(&m, ext_k, Value::is_boolean, "a boolean")?;
    check_type(&m, human_k, Value::is_boolean, "a boolean")?;
    for k in [prev_k, content_k, red_k] {
        opt_str(&m, k)?;
    }
    if !is_safe_id(id) {
        return Err(InvalidReason::UnsafeId(id.to_owned()));
    }
    let agent = ["agent", "requested_by", "requestedBy"]
        .iter()
        .find_map(|k| m.get(*k).and_then(Value::as_str))
        .map(str::to_owned);
    if let Some(a) = agent.as_ref().filter(|a| !is_safe_id(a)) {
        return Err(InvalidReason::UnsafeAgent(a.clone()));
    }
    let packet_id = ["packet_id", "packetId"].iter().find_map(|k| m.get(*k).and_then(Value::as_str)).map(str::to_owned);
    Ok(Receipt {
        id: id.to_owned(),
        action_class: class.to_owned(),
        outcome: outcome.to_owned(),
        agent,
        packet_id,
        created_at: created,
        raw: Value::Object(m),
        observed_by: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn portable() -> Value {
        json!({
            "type": "trust_graduation_approval_packet",
            "packet_id": "p-1",
            "agent": "scribe",
            "action_class": "email.send.external",
            "proposed_action": {"to": "a@example.com", "subject": "Quote"},
            "decision": {"status": "review_required", "action_class": "email.send.external", "reason": "needs approval"},
            "external_actions": 0
        })
    }

    fn bytes(v: &Value) -> Vec<u8> {
        serde_json::to_vec(v).unwrap_or_default()
    }

    #[test]
    fn a_packet_from_its_value_is_the_packet_its_text_parses_to() {
        let nested = |depth: usize| (0..depth).fold(json!(1), |v, _| json!([v]));
        let mut cases = vec![portable(), json!([1]), json!("text")];
        let mut odd = portable();
        odd["agent"] = json!("../x");
        cases.push(odd);
        let mut runtime = portable();
        runtime["decision"] = json!(null);
        cases.push(runtime);
        // Numbers: floats round-trip exactly (serde_json's `float_roundtrip`, and no
        // `arbitrary_precision`), integers at the 64-bit edges.
        for n in [json!(0.1), json!(5e-324), json!(2f64.powi(70)), json!(-0.0), json!(u64::MAX), json!(i64::MIN)] {
            let mut p = portable();
            p["proposed_action"]["n"] = n;
            cases.push(p);
        }
        // Around the reader's nesting limit: the packet is one level, `proposed_action` two.
        for depth in 123..=128 {
            let mut p = portable();
            p["proposed_action"]["deep"] = nested(depth);
            cases.push(p);
        }
        let (mut accepted, mut too_deep) = (0, 0);
        for v in cases {
            let from_text = parse_packet(&bytes(&v), "p-0");
            accepted += usize::from(from_text.is_ok());
            too_deep += usize::from(matches!(&from_text, Err(InvalidReason::NotJson(_))));
            match (packet_from_value(v.clone(), "p-0"), from_text) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "{v}"),
                (Err(a), Err(b)) => assert_eq!(std::mem::discriminant(&a), std::mem::discriminant(&b), "{a} / {b}"),
                (a, b) => panic!("{a:?} / {b:?}"),
            }
        }
        assert!(
            accepted >= 4 && too_deep >= 1,
            "the cases straddle the limit: {accepted} accepted, {too_deep} too deep"
        );
    }

    #[test]
    fn class_id_pattern() {
        for ok in ["email.send.external", "a.b", "a1.b2c"] {
            assert!(is_class_id(ok), "{ok}");
        }
        for bad in [
            "email",
            "Email.send",
            "email..send",
            "email.send_x",
            "1a.b",
            "a.",
            ".a",
            "a.b-c",
            "",
            "a.b.",
            "é.b",
            "a.1b",
        ] {
            assert!(!is_class_id(bad), "{bad}");
        }
    }

    #[test]
    fn safe_ids_are_never_paths() {
        for ok in ["p-1", "tg_20261120090000_email-send-external", "a:b.c"] {
            assert!(is_safe_id(ok), "{ok}");
        }
        for bad in ["", "../x", "a/b", "a\\b", ".hidden", "a..b", "x\0y", &"a".repeat(129)] {
            assert!(!is_safe_id(bad), "{bad:?}");
        }
    }

    #[test]
    fn portable_packet_loads_with_its_fields() {
        let p = parse_packet(&bytes(&portable()), "file").expect("valid");
        assert_eq!(p.id, "p-1");
        assert_eq!(p.form, PacketForm::Portable);
        assert_eq!(p.agent, "scribe");
        assert_eq!(p.summary, "Quote");
        assert_eq!(p.state, Some(DecisionState::ReviewRequired));
        assert_eq!(p.risk.as_deref(), Some("high"));
        assert_eq!(p.content_hash, canonical::canonical_hash(&portable()));
    }

    #[test]
    fn file_stem_is_the_id_when_none_is_given() {
        let mut v = portable();
        v.as_object_mut().map(|m| m.remove("packet_id"));
        assert_eq!(parse_packet(&bytes(&v), "from-file").expect("valid").id, "from-file");
    }

    #[test]
    fn schema_failures_name_the_field() {
        let cases: [(&str, Value); 5] = [
            ("external_actions", json!(1)),
            ("action_class", json!("Email")),
            ("decision", json!({"status": "maybe", "action_class": "a.b", "reason": ""})),
            ("packet_id", json!("../../etc/passwd")),
            ("created_at", json!("tuesday")),
        ];
        for (field, value) in cases {
            let mut v = portable();
            v[field] = value;
            let err = parse_packet(&bytes(&v), "f").expect_err(field);
            let text = err.to_string();
            assert!(
                text.contains(field) || text.contains("status") || matches!(err, InvalidReason::UnsafeId(_)),
                "{field}: {text}"
            );
        }
        assert!(matches!(parse_packet(b"[1]", "f"), Err(InvalidReason::NotObject)));
        assert!(matches!(parse_packet(b"{\"a\":", "f"), Err(InvalidReason::NotJson(_))));
        assert!(matches!(parse_packet(b"\xff\xfe", "f"), Err(InvalidReason::NotJson(_))));
        assert!(matches!(parse_packet(b"{}", "f"), Err(InvalidReason::UnknownForm(_))));
    }

    #[test]
    fn receipts_in_both_forms() {
        let r = parse_receipt(&bytes(&json!({
            "type": "trust_graduation_receipt", "receipt_id": "r1", "action_class": "draft.compose",
            "outcome": "approve", "created_at": "2026-11-20T09:00:00Z", "agent": "scribe"
        })))
        .expect("portable receipt");
        assert_eq!((r.id.as_str(), r.agent.as_deref()), ("r1", Some("scribe")));
        let r = parse_receipt(&bytes(&json!({
            "protocol": "trust-graduation", "version": "1.0", "receiptId": "r2", "actionClass": "draft.compose",
            "outcome": "provider_confirmed", "createdAt": "2026-11-20T09:00:00.000Z"
        })))
        .expect("runtime receipt");
        assert_eq!(r.outcome, "provider_confirmed");
        assert!(parse_receipt(&bytes(&json!({"type": "trust_graduation_receipt", "receipt_id": "r"}))).is_err());
    }
}
