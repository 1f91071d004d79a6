//! The audit: every decision, control, key event, grant, revocation and allowed call, in chain
//! order, with *how* each was allowed and who signed it. Pure: built from the records
//! of a verified chain (their 0-based position and their JSON) and the spool's receipt files, so
//! the command line (`warrant audit`) and the console's Audit view show the same entries.
//! [`audit_chain`] reads and verifies the chain through the store and builds them.
//!
//! Entries that claim a chain record carry its 1-based number (`record`, as `warrant verify`
//! numbers records) and `entry_hash`, so an exported audit can be checked against the chain
//! ([`check_lines`], `warrant verify --audit FILE`). Calls that left no chain record (receipt
//! files a hook or the gateway wrote) are marked `in_chain: false`: they are the agent's (or a
//! gateway's) word, never checked against the chain.

use serde_json::{Map, Value, json};
use std::sync::Arc;
use warrant_protocol::packet::Receipt;

/// What an audit entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntryKind {
    /// A signed approval or refusal of a packet (`metadata.warrant_decision`).
    Decision,
    /// A signed control: notebook trust, quarantine, release, kill, elevation
    /// (`metadata.warrant_control`).
    Control,
    /// A key rotation or a rename of the principal (`metadata.warrant_key`).
    KeyEvent,
    /// A grant issued by the principal (record action `warrant.grant`).
    Grant,
    /// A grant revoked by the principal (record action `warrant.grant.revoke`).
    Revocation,
    /// A receipt recorded in the chain (`metadata.tg_receipt`, `warrant receipt`): a call or
    /// action that ran.
    Receipt,
    /// A call that ran and left no chain record: a receipt file with a `tool_call` or a
    /// `grant_id` (written by a hook or the gateway).
    Call,
    /// Any other record (another producer's).
    Other,
}

impl EntryKind {
    /// The word used in JSON and on screen.
    #[must_use]
    pub fn word(self) -> &'static str {
        match self {
            Self::Decision => "decision",
            Self::Control => "control",
            Self::KeyEvent => "key",
            Self::Grant => "grant",
            Self::Revocation => "revocation",
            Self::Receipt => "receipt",
            Self::Call => "call",
            Self::Other => "record",
        }
    }

    /// The kind a word names ([`EntryKind::word`]).
    #[must_use]
    pub fn parse(word: &str) -> Option<Self> {
        [
            Self::Decision,
            Self::Control,
            Self::KeyEvent,
            Self::Grant,
            Self::Revocation,
            Self::Receipt,
            Self::Call,
            Self::Other,
        ]
        .into_iter()
        .find(|k| k.word() == word)
    }
}

/// How an entry came to be allowed (or decided).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum How {
    /// A person's signed record: this one (`record` `None`) or, for a call, the decision at
    /// record `record` that approved (or refused) its packet.
    Person {
        /// The 1-based record of the decision that covers a call; `None` for the record itself.
        record: Option<u64>,
    },
    /// The gate alone, with no person's decision: `basis` says what the record or receipt
    /// states (a graduated class, a rule, a tool tier; the receipt's own note).
    Gate {
        /// What allowed it, as stated (agent or gateway text, shown inert).
        basis: String,
    },
    /// A system decision: a refusal the principal's console signed on its own, by a rule the
    /// principal configured (`cause` `timeout`: `[timeouts] sign_refusal` in `policy.toml`), this
    /// record (`record` `None`) or, for a call, the one at `record`. No person decided it
    /// ([`warrant_protocol::decision::SystemCause`]).
    System {
        /// The document's `system` member (`timeout`).
        cause: String,
        /// The 1-based record of the decision that covers a call; `None` for the record itself.
        record: Option<u64>,
    },
    /// A grant the principal signed ([`EntryKind::Grant`]); `grant_id` as the call names it.
    Grant {
        /// The grant's id.
        grant_id: String,
    },
    /// Recorded, not decided: a receipt or another producer's record.
    Recorded,
}

impl How {
    /// A short word: `person`, `system`, `gate`, `grant`, `recorded`.
    #[must_use]
    pub fn word(&self) -> &'static str {
        match self {
            Self::Person { .. } => "person",
            Self::System { .. } => "system",
            Self::Gate { .. } => "gate",
            Self::Grant { .. } => "grant",
            Self::Recorded => "recorded",
        }
    }

    /// The whole "how" in words (inert).
    #[must_use]
    pub fn words(&self) -> String {
        match self {
            Self::Person { record: None } => "signed by a person".into(),
            Self::Person { record: Some(n) } => format!("by a person's decision (record {n})"),
            Self::System { cause, record: None } => {
                format!(
                    "a system decision ({}): signed by the console, no person decided",
                    warrant_protocol::text::inert(cause, 40)
                )
            }
            Self::System { cause, record: Some(n) } => {
                format!(
                    "by a system decision ({}, record {n}): no person decided",
                    warrant_protocol::text::inert(cause, 40)
                )
            }
            Self::Gate { basis } => format!("by the gate alone: {}", warrant_protocol::text::inert(basis, 200)),
            Self::Grant { grant_id } => format!("by grant {}", warrant_protocol::text::inert(grant_id, 128)),
            Self::Recorded => "recorded".into(),
        }
    }
}

/// Who signed a record.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Signer {
    /// The principal's name as signed.
    pub name: String,
    /// The key fingerprint (`SHA256:…`).
    pub key: String,
}

/// One line of the audit.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditEntry {
    /// The record's 1-based number in the chain (`warrant verify`'s numbering); `None` for a
    /// call that left no chain record.
    pub record: Option<u64>,
    /// The record's `entry_hash`; `None` off the chain.
    pub entry_hash: Option<String>,
    /// What it is.
    pub kind: EntryKind,
    /// The record's `action` (an action class, `warrant.control.…`, `warrant.grant`…), or the
    /// receipt's action class.
    pub action: String,
    /// The agent (or `notebook:…`, `principal:…`) the record is about.
    pub agent: String,
    /// When (RFC 3339): the record's `timestamp`, the receipt's `created_at`.
    pub at: String,
    /// `at` in seconds since the epoch (0 when it does not parse).
    pub at_secs: f64,
    /// What was decided: `approve` / `refuse`, the control, the key event, or the record's
    /// outcome (`metadata.approval.decision`, else `outcome`).
    pub decision: String,
    /// How it was allowed.
    pub how: How,
    /// Who signed (the first signature of `metadata.approval`), when signed.
    pub signer: Option<Signer>,
    /// The packet it concerns, if any.
    pub packet_id: Option<String>,
    /// The grant it names (a call allowed by a grant, a grant record's own id), if any.
    pub grant_id: Option<String>,
    /// The reason given, if any.
    pub reason: Option<String>,
    /// The receipt file's id, for a call off the chain.
    pub receipt_id: Option<String>,
    /// The tool, for a call (`tool_call.tool`).
    pub tool: Option<String>,
    /// How many calls a call entry stands for (the gateway aggregates; 1 otherwise).
    pub calls: u64,
    /// For a call off the chain: the pinned gateway whose signature on the receipt verified, else
    /// `None` (the agent's own word).
    pub observed_by: Option<String>,
    /// An approval as corrected: the signed correction (`{action, changed_permille, label}`,
    /// [`warrant_protocol::correction::Correction::to_json`]), the action that was approved.
    pub corrected: Option<Value>,
    /// For a decision: the content hash of the packet it decided (what a difference with the
    /// packet as proposed is shown against).
    pub packet_hash: Option<String>,
}

fn s<'a>(v: Option<&'a Value>, k: &str) -> Option<&'a str> {
    v.and_then(|v| v.get(k)).and_then(Value::as_str)
}

/// The audit entry of one record that passed every check (`index`: its 0-based position).
#[must_use]
pub fn entry_of_record(index: usize, rec: &Map<String, Value>) -> AuditEntry {
    let meta = rec.get("metadata");
    let top = |k: &str| rec.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
    let action = top("action");
    let doc = |k: &str| meta.and_then(|m| m.get(k)).filter(|d| d.is_object());
    let (kind, body) = if let Some(d) = doc("warrant_decision") {
        (EntryKind::Decision, Some(d))
    } else if let Some(d) = doc("warrant_control") {
        (EntryKind::Control, Some(d))
    } else if let Some(d) = doc("warrant_key") {
        (EntryKind::KeyEvent, Some(d))
    } else if action == "warrant.grant" {
        (EntryKind::Grant, doc("warrant_grant"))
    } else if action == "warrant.grant.revoke" {
        (EntryKind::Revocation, doc("warrant_grant"))
    } else if let Some(d) = doc("tg_receipt") {
        (EntryKind::Receipt, Some(d))
    } else {
        (EntryKind::Other, None)
    };
    let approval = meta.and_then(|m| m.get("approval"));
    let first_sig = approval.and_then(|a| a.get("signatures")).and_then(Value::as_array).and_then(|a| a.first());
    let signer = first_sig.map(|sig| Signer {
        name: s(Some(sig), "signer").or_else(|| s(Some(sig), "reviewer")).unwrap_or_default().to_owned(),
        key: s(Some(sig), "key_fingerprint").unwrap_or_default().to_owned(),
    });
    let mut decision = s(approval, "decision").map_or_else(|| top("outcome"), str::to_owned);
    // One approval towards a quorum approves nothing yet: `co-sign`; the one that meets the
    // quorum is the approval.
    if kind == EntryKind::Decision && body.is_some_and(|b| b.get("quorum").is_some() && b.get("cosigners").is_none()) {
        decision = "co-sign".into();
    }
    // A system decision (`"system": "timeout"` in the signed document) is the console's, by the
    // principal's rule: shown as such, never as a person's refusal.
    let system = s(body, "system").filter(|_| kind == EntryKind::Decision);
    let how = match kind {
        EntryKind::Decision if signer.is_some() && system.is_some() => {
            How::System { cause: system.unwrap_or_default().to_owned(), record: None }
        }
        EntryKind::Decision | EntryKind::Control | EntryKind::KeyEvent | EntryKind::Grant | EntryKind::Revocation
            if signer.is_some() =>
        {
            How::Person { record: None }
        }
        _ => match s(body, "grant_id") {
            Some(g) if kind == EntryKind::Receipt => How::Grant { grant_id: g.to_owned() },
            _ => How::Recorded,
        },
    };
    let reason = s(body, "reason").or_else(|| s(meta, "reason")).map(str::to_owned);
    let packet_id = s(body, "packet_id").map(str::to_owned);
    let grant_id = s(body, "grant_id").or_else(|| s(body, "id")).filter(|_| body.is_some()).map(str::to_owned);
    let grant_id = match kind {
        EntryKind::Grant | EntryKind::Revocation | EntryKind::Receipt => grant_id,
        _ => None,
    };
    let at = top("timestamp");
    AuditEntry {
        record: Some(index as u64 + 1),
        entry_hash: rec.get("entry_hash").and_then(Value::as_str).map(str::to_owned),
        kind,
        action,
        agent: top("agent"),
        at_secs: warrant_protocol::clock::unix_seconds(&at).unwrap_or(0.0),
        at,
        decision,
        how,
        signer,
        packet_id,
        grant_id,
        reason,
        receipt_id: s(body, "receipt_id").filter(|_| kind == EntryKind::Receipt).map(str::to_owned),
        tool: s(body.and_then(|b| b.get("tool_call")), "tool").map(str::to_owned),
        calls: 1,
        observed_by: None,
        corrected: body.filter(|_| kind == EntryKind::Decision).and_then(|b| b.get("correction")).cloned(),
        packet_hash: s(body, "packet_hash").filter(|_| kind == EntryKind::Decision).map(str::to_owned),
    }
}

/// The audit entry of a receipt file that records a call (one with a `tool_call` object or a
/// `grant_id`); `None` for any other receipt. `decisions` finds the chain decision of a packet
/// (its verdict and 1-based record), for a call whose packet a person decided; `granted` the
/// grant whose use a hook or the gateway claimed for a packet (`uses/`, [`warrant_store::spool::Uses`]).
/// The grant is the receipt's `grant_id`, its `tool_call.grant_id` (the gateway's), or the
/// claimed one.
#[must_use]
pub fn entry_of_receipt(
    r: &Receipt,
    decisions: &dyn Fn(&str) -> Option<(warrant_protocol::decision::Verdict, u64)>,
    granted: &dyn Fn(&str) -> Option<String>,
) -> Option<AuditEntry> {
    let call = r.raw.get("tool_call").filter(|c| c.is_object());
    let grant = r
        .raw
        .get("grant_id")
        .or_else(|| call.and_then(|c| c.get("grant_id")))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or_else(|| r.packet_id.as_deref().and_then(granted));
    let grant = grant.as_deref();
    if call.is_none() && grant.is_none() {
        return None;
    }
    let decided = r.packet_id.as_deref().and_then(decisions);
    let note = r.raw.get("note").and_then(Value::as_str);
    let how = match (grant, decided) {
        (Some(g), _) => How::Grant { grant_id: g.to_owned() },
        (None, Some((_, record))) => How::Person { record: Some(record) },
        (None, None) => How::Gate {
            basis: note.map_or_else(|| "no decision in the chain (the receipt says why not)".into(), str::to_owned),
        },
    };
    Some(AuditEntry {
        record: None,
        entry_hash: None,
        kind: EntryKind::Call,
        action: r.action_class.clone(),
        agent: r.agent.clone().unwrap_or_default(),
        at_secs: warrant_protocol::clock::unix_seconds(&r.created_at).unwrap_or(0.0),
        at: r.created_at.clone(),
        decision: decided.map_or_else(|| r.outcome.clone(), |(v, _)| v.as_str().to_owned()),
        how,
        signer: None,
        packet_id: r.packet_id.clone(),
        grant_id: grant.map(str::to_owned),
        reason: None,
        receipt_id: Some(r.id.clone()),
        tool: s(call, "tool").map(str::to_owned),
        calls: call.and_then(|c| c.get("calls")).and_then(Value::as_u64).unwrap_or(1).clamp(1, 1_000_000_000),
        observed_by: r.observed_by.clone(),
        corrected: None,
        packet_hash: None,
    })
}

/// What to keep of the audit.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AuditFilter {
    /// Entries at or after this time (seconds since the epoch).
    pub since: Option<f64>,
    /// Entries about this agent only (exact).
    pub agent: Option<String>,
}

impl AuditFilter {
    /// Whether `e` passes.
    #[must_use]
    pub fn keeps(&self, e: &AuditEntry) -> bool {
        self.since.is_none_or(|t| e.at_secs >= t) && self.agent.as_deref().is_none_or(|a| e.agent == a)
    }
}

/// The audit: `chain` (the entries of the verified records, in chain order) with the calls of
/// `receipts` that left no chain record interleaved by time, each after the chain entries at or
/// before its time (receipts among themselves by time, then id), then `filter` applied.
/// `granted` maps a call packet to the grant whose use was claimed for it (`uses/`).
#[must_use]
pub fn build(
    chain: Vec<AuditEntry>,
    receipts: &[Arc<Receipt>],
    granted: &std::collections::HashMap<String, String>,
    filter: &AuditFilter,
) -> Vec<AuditEntry> {
    let decisions: std::collections::HashMap<&str, (warrant_protocol::decision::Verdict, u64)> = chain
        .iter()
        .filter(|e| e.kind == EntryKind::Decision)
        .filter_map(|e| {
            let v = warrant_protocol::decision::Verdict::parse(&e.decision)?;
            Some((e.packet_id.as_deref()?, (v, e.record?)))
        })
        .collect();
    // The records that are system decisions: a call they decided was not decided by a person.
    let system: std::collections::HashMap<u64, &str> = chain
        .iter()
        .filter_map(|e| match &e.how {
            How::System { cause, .. } => Some((e.record?, cause.as_str())),
            _ => None,
        })
        .collect();
    let mut calls: Vec<AuditEntry> = receipts
        .iter()
        .filter_map(|r| entry_of_receipt(r, &|p| decisions.get(p).copied(), &|p| granted.get(p).cloned()))
        .collect();
    for c in &mut calls {
        if let How::Person { record: Some(n) } = c.how
            && let Some(cause) = system.get(&n)
        {
            c.how = How::System { cause: (*cause).to_owned(), record: Some(n) };
        }
    }
    calls.sort_by(|a, b| a.at_secs.total_cmp(&b.at_secs).then_with(|| a.receipt_id.cmp(&b.receipt_id)));
    // The latest time seen so far along the chain: a call goes after the last entry whose
    // running latest time is at or before it.
    let mut latest = f64::NEG_INFINITY;
    let running: Vec<f64> = chain
        .iter()
        .map(|e| {
            latest = latest.max(e.at_secs);
            latest
        })
        .collect();
    let mut out = Vec::with_capacity(chain.len() + calls.len());
    let mut calls = calls.into_iter().peekable();
    for (e, t) in chain.into_iter().zip(running) {
        while let Some(c) = calls.next_if(|c| c.at_secs < t) {
            out.push(c);
        }
        out.push(e);
    }
    out.extend(calls);
    out.retain(|e| filter.keeps(e));
    out
}

impl AuditEntry {
    /// The entry as one JSON object (the line `warrant audit --json` prints and
    /// `warrant verify --audit` reads back).
    #[must_use]
    pub fn to_json(&self) -> Value {
        let how = match &self.how {
            How::Person { record } => json!({"by": "person", "record": record}),
            How::System { cause, record } => json!({"by": "system", "system": cause, "record": record}),
            How::Gate { basis } => json!({"by": "gate", "basis": basis}),
            How::Grant { grant_id } => json!({"by": "grant", "grant_id": grant_id}),
            How::Recorded => json!({"by": "recorded"}),
        };
        json!({
            "in_chain": self.record.is_some(),
            "record": self.record,
            "entry_hash": self.entry_hash,
            "kind": self.kind.word(),
            "action": self.action,
            "agent": self.agent,
            "at": self.at,
            "decision": self.decision,
            "how": how,
            "signer": self.signer.as_ref().map(|s| s.name.as_str()),
            "key": self.signer.as_ref().map(|s| s.key.as_str()),
            "packet_id": self.packet_id,
            "grant_id": self.grant_id,
            "reason": self.reason,
            "receipt_id": self.receipt_id,
            "tool": self.tool,
            "calls": self.calls,
            "observed_by": self.observed_by,
            "corrected": self.corrected,
        })
    }

    /// An approval as corrected, in words: `as corrected (minor_edit, 8‰ changed) to {…}` with
    /// the corrected action whole as one line of JSON (made inert); `None` for any other entry.
    #[must_use]
    pub fn corrected_words(&self) -> Option<String> {
        let c = self.corrected.as_ref()?;
        Some(format!(
            "as corrected ({}, {}‰ changed) to {}",
            warrant_protocol::text::inert(c.get("label").and_then(Value::as_str).unwrap_or("?"), 40),
            c.get("changed_permille").and_then(Value::as_u64).unwrap_or(0),
            warrant_protocol::text::inert(&c.get("action").map(Value::to_string).unwrap_or_default(), usize::MAX)
        ))
    }

    /// For an approval as corrected: the whole difference between `proposed` (the packet's
    /// proposed action, when the caller still has the packet this decision signed: its content
    /// hash is [`Self::packet_hash`]) and the corrected action, every line of both.
    #[must_use]
    pub fn corrected_difference(&self, proposed: &Value) -> Vec<warrant_protocol::correction::DiffLine> {
        match self.corrected.as_ref().and_then(|c| c.get("action")) {
            Some(action) => warrant_protocol::correction::diff_lines(proposed, action),
            None => Vec::new(),
        }
    }

    /// Who signed, in words: `alice SHA256:…`, or `—`.
    #[must_use]
    pub fn signer_words(&self) -> String {
        self.signer.as_ref().map_or_else(
            || "—".into(),
            |s| format!("{} {}", warrant_protocol::text::inert(&s.name, 64), warrant_protocol::text::inert(&s.key, 80)),
        )
    }
}

/// One disagreement between an audit line and the verified chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// The audit file's line (1-based).
    pub line: usize,
    /// What disagrees.
    pub message: String,
}

/// What [`check_lines`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditCheck {
    /// Lines that claim a chain record and agree with it.
    pub checked: usize,
    /// Lines marked `in_chain: false` (calls off the chain: not checkable against it).
    pub off_chain: usize,
    /// Every disagreement (a line that does not parse is one too).
    pub mismatches: Vec<Mismatch>,
}

/// Checks the JSON lines of an exported audit against `chain` (the entries of the verified
/// chain, [`entry_of_record`] of every record that passed): each line that claims a chain record
/// (`in_chain` not `false`, or a `record`) must name a record of the verified chain, with the
/// same `entry_hash`, `kind`, `action`, `agent`, `decision`, `signer` and `key`. Blank lines are
/// skipped. Fails closed: a line that does not parse, lacks `in_chain`, or claims a record
/// without a number is a mismatch.
#[must_use]
pub fn check_lines(text: &str, chain: &[AuditEntry]) -> AuditCheck {
    let by_record: std::collections::HashMap<u64, &AuditEntry> =
        chain.iter().filter_map(|e| Some((e.record?, e))).collect();
    let mut out = AuditCheck::default();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let n = i + 1;
        let mut miss = |message: String| out.mismatches.push(Mismatch { line: n, message });
        let Ok(Value::Object(v)) = serde_json::from_str::<Value>(line) else {
            miss("not a JSON object".into());
            continue;
        };
        let in_chain = v.get("in_chain").and_then(Value::as_bool);
        let record = v.get("record").filter(|r| !r.is_null());
        match (in_chain, record) {
            (Some(false), None) => {
                out.off_chain += 1;
                continue;
            }
            (None, _) => {
                miss("no in_chain field".into());
                continue;
            }
            _ => {}
        }
        let Some(record) = record.and_then(Value::as_u64) else {
            miss("claims a chain record without a record number".into());
            continue;
        };
        let Some(e) = by_record.get(&record) else {
            miss(format!("record {record} is not a record of the verified chain"));
            continue;
        };
        let want = e.to_json();
        let mut bad = Vec::new();
        for k in ["in_chain", "entry_hash", "kind", "action", "agent", "decision", "signer", "key"] {
            let got = v.get(k).unwrap_or(&Value::Null);
            if got != &want[k] {
                bad.push(format!("{k} is {got}, the chain says {}", want[k]));
            }
        }
        if bad.is_empty() {
            out.checked += 1;
        } else {
            miss(format!("record {record}: {}", bad.join("; ")));
        }
    }
    out
}

/// The audit entries ([`crate::audit::entry_of_record`]) of every record of `spool`'s chain that
/// passed every check, in chain order, with the verification report (checked as
/// [`warrant_store::spool::verify_chain`] checks, the principal's checkpoint included). A record that failed a check
/// has no entry; the caller says so from the report.
///
/// # Errors
/// As [`warrant_store::spool::verify_chain`].
pub fn audit_chain(
    spool: &warrant_store::spool::Spool,
    pinned: &warrant_protocol::keys::PinnedKeys,
) -> Result<(warrant_protocol::chain::VerifyReport, Vec<AuditEntry>), warrant_store::chain_file::ChainError> {
    let progress = std::sync::atomic::AtomicU64::new(0);
    let opts = warrant_protocol::chain::VerifyOptions { pinned: Some(pinned), strict_signatures: true };
    let mut entries = Vec::new();
    let keep = ["tg_receipt", "warrant_grant", "approval", "reason"];
    // Each entry is made on the verifier's worker that checked its record.
    let extract = |i: usize, rec: warrant_protocol::chain::SinkRecord<'_>| match rec {
        warrant_protocol::chain::SinkRecord::Whole(rec) => Some(entry_of_record(i, rec)),
        // Read as the whole record would be, but for metadata the entry does not show. A kept
        // member the strict reader refuses (an integer beyond 64 bits, which no check reads) is
        // left out of the entry, never the record.
        warrant_protocol::chain::SinkRecord::Raw(rec) => {
            rec.to_map(&keep).or_else(|_| rec.to_map(&[])).ok().map(|m| entry_of_record(i, &m))
        }
    };
    let sink = warrant_protocol::chain::RecordSink {
        extract: &extract,
        on_record: |_, entry: Option<AuditEntry>| entries.extend(entry),
    };
    let tail = warrant_store::chain_file::verify_tail_with(
        &spool.chain_path(),
        &warrant_protocol::chain::Verified::default(),
        opts,
        &progress,
        sink,
    )?;
    let mut report = tail.map(|t| t.report).unwrap_or_default();
    let (checkpoint, _) = warrant_store::checkpoint_files::latest(spool, pinned);
    if let Some(f) = checkpoint.and_then(|cp| warrant_store::checkpoint_files::check(&spool.chain_path(), &cp, &report))
    {
        report.findings.push(f);
    }
    let bad: std::collections::HashSet<u64> =
        report.findings.iter().filter_map(|f| f.index).map(|i| i as u64 + 1).collect();
    entries.retain(|e| e.record.is_some_and(|r| !bad.contains(&r)));
    Ok((report, entries))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    // A call allowed by a grant names it: the gateway in its receipt's `tool_call`, a hook's call
    // through the use claimed for its packet.
    #[test]
    fn calls_allowed_by_a_grant_name_it() {
        let gateway = receipt(
            "r-gw",
            "2026-01-01T00:01:00Z",
            json!({"tool_call": {"host": "mcp-gateway", "tool": "fs.write", "calls": 1, "grant_id": "grant-a"}}),
        );
        let mut hook = receipt("r-hook", "2026-01-01T00:02:00Z", json!({}));
        Arc::make_mut(&mut hook).packet_id = Some("cc-1".into());
        let granted = HashMap::from([("cc-1".to_owned(), "grant-b".to_owned())]);
        let all = build(Vec::new(), &[gateway, hook], &granted, &AuditFilter::default());
        let hows: Vec<&How> = all.iter().map(|e| &e.how).collect();
        assert_eq!(hows, [&How::Grant { grant_id: "grant-a".into() }, &How::Grant { grant_id: "grant-b".into() }]);
        assert_eq!(all[1].grant_id.as_deref(), Some("grant-b"));
    }

    fn receipt(id: &str, at: &str, extra: Value) -> Arc<Receipt> {
        let mut raw = json!({"tool_call": {"host": "mcp-gateway", "tool": "fs.read", "calls": 3}});
        if let (Some(m), Value::Object(e)) = (raw.as_object_mut(), extra) {
            m.extend(e);
        }
        Arc::new(Receipt {
            id: id.into(),
            action_class: "file.read".into(),
            outcome: "execute".into(),
            agent: Some("scribe".into()),
            packet_id: None,
            created_at: at.into(),
            raw,
            observed_by: None,
        })
    }

    fn decision(i: usize, at: &str) -> AuditEntry {
        let rec = json!({
            "action": "email.send", "agent": "scribe", "timestamp": at, "outcome": "success",
            "entry_hash": format!("sha256:{i}"),
            "metadata": {"approval": {"decision": "approve", "signatures": [{"signer": "alice", "key_fingerprint": "SHA256:k"}]},
                         "warrant_decision": {"packet_id": format!("p-{i}"), "decision": "approve", "reason": "ok"}}
        });
        entry_of_record(i, rec.as_object().expect("object"))
    }

    #[test]
    fn records_are_numbered_from_one_and_calls_interleave_by_time() {
        let chain = vec![decision(0, "2026-01-01T00:00:00Z"), decision(1, "2026-01-01T00:10:00Z")];
        assert_eq!(chain[0].record, Some(1));
        assert_eq!(chain[0].how, How::Person { record: None });
        assert_eq!(chain[0].signer.as_ref().map(|s| s.name.as_str()), Some("alice"));
        let receipts = vec![
            receipt("r-late", "2026-01-01T00:20:00Z", json!({})),
            receipt("r-mid", "2026-01-01T00:05:00Z", json!({})),
            receipt("r-grant", "2026-01-01T00:06:00Z", json!({"grant_id": "g-1"})),
        ];
        let all = build(chain, &receipts, &HashMap::new(), &AuditFilter::default());
        let order: Vec<String> =
            all.iter().map(|e| e.receipt_id.clone().unwrap_or_else(|| format!("#{}", e.record.unwrap_or(0)))).collect();
        assert_eq!(order, ["#1", "r-mid", "r-grant", "#2", "r-late"]);
        assert!(matches!(&all[1].how, How::Gate { .. }));
        assert_eq!(all[2].how, How::Grant { grant_id: "g-1".into() });
        assert_eq!(all[1].calls, 3);
        let since = AuditFilter { since: warrant_protocol::clock::unix_seconds("2026-01-01T00:06:00Z"), agent: None };
        assert_eq!(build(vec![decision(0, "2026-01-01T00:00:00Z")], &receipts, &HashMap::new(), &since).len(), 2);
    }

    // A system decision (a timeout the console refused by the principal's rule) is the system's,
    // not a person's: the record itself, and a call whose packet it decided.
    #[test]
    fn a_system_decision_is_not_a_persons() {
        let rec = json!({
            "action": "email.send", "agent": "scribe", "timestamp": "2026-01-01T00:00:00Z", "outcome": "denied",
            "entry_hash": "sha256:s",
            "metadata": {"approval": {"decision": "refuse", "signatures": [{"signer": "alice", "key_fingerprint": "SHA256:k"}]},
                         "warrant_decision": {"packet_id": "p-t", "decision": "refuse", "system": "timeout"}}
        });
        let e = entry_of_record(0, rec.as_object().expect("object"));
        assert_eq!(e.how, How::System { cause: "timeout".into(), record: None });
        assert_eq!(e.how.word(), "system");
        let mut call = receipt("r-t", "2026-01-01T00:01:00Z", json!({}));
        Arc::make_mut(&mut call).packet_id = Some("p-t".into());
        let all =
            build(vec![e, decision(1, "2026-01-01T00:02:00Z")], &[call], &HashMap::new(), &AuditFilter::default());
        let call = all.iter().find(|e| e.kind == EntryKind::Call).expect("call");
        assert_eq!(call.how, How::System { cause: "timeout".into(), record: Some(1) });
        assert!(call.how.words().contains("no person decided"), "{}", call.how.words());
        assert_eq!(all.iter().filter(|e| e.how == How::Person { record: None }).count(), 1);
    }

    #[test]
    fn grant_records_are_recognised_by_their_action() {
        let rec = json!({"action": "warrant.grant.revoke", "agent": "scribe", "timestamp": "2026-01-01T00:00:00Z",
            "outcome": "success", "entry_hash": "sha256:x",
            "metadata": {"approval": {"decision": "revoke", "signatures": [{"signer": "alice", "key_fingerprint": "SHA256:k"}]},
                         "warrant_grant": {"domain": "warrant.grant/v1", "grant_id": "g-1"}}});
        let e = entry_of_record(4, rec.as_object().expect("object"));
        assert_eq!((e.kind, e.record, e.grant_id.as_deref()), (EntryKind::Revocation, Some(5), Some("g-1")));
        assert_eq!(e.how, How::Person { record: None });
    }

    #[test]
    fn an_edited_line_is_a_mismatch() {
        let chain = vec![decision(0, "2026-01-01T00:00:00Z")];
        let good = warrant_protocol::text::inert(&chain[0].to_json().to_string(), usize::MAX);
        assert_eq!(check_lines(&good, &chain).checked, 1);
        let edited = good.replace("\"approve\"", "\"refuse\"");
        let c = check_lines(&edited, &chain);
        assert_eq!(c.checked, 0);
        assert_eq!(c.mismatches.len(), 1, "{c:?}");
        assert!(c.mismatches[0].message.contains("decision"), "{c:?}");
        let off = json!({"in_chain": false, "record": null}).to_string();
        assert_eq!(check_lines(&off, &chain).off_chain, 1);
        assert_eq!(check_lines("{\"record\": 9, \"in_chain\": true}", &chain).mismatches.len(), 1);
        assert_eq!(check_lines("nope", &chain).mismatches.len(), 1);
    }
}
