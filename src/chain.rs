//! The OpenTrustGraph v0.1 hash chain: records, verification, the export envelope and durable
//! appends to `chain.jsonl`.
//!
//! Spec: `opentrustgraph.md` §2 (records), §3 (envelope), §4 (hash contract), §5 (verification).
//! Verification hashes each record as parsed (the Python reference's rule, §4.5 option (a)):
//! the JSON minus its top-level `entry_hash`, canonicalised by [`crate::canonical`], without
//! Harn's typed re-serialisation. Number *text* is not kept: serde_json re-prints numbers, which
//! matches Python for integers within `u64`/`i64` and floats in 1e-4 ≤ |x| < 1e16 (the range the
//! producer profile allows), and differs outside it (`docs/conformance.md`). warrant's own records
//! follow the producer profile of §4.5, so both reference verifiers agree on them.

use crate::canonical::{self, is_sha256_string};
use crate::keys::PinnedKeys;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The record discriminator warrant writes (§1).
pub const RECORD_SCHEMA: &str = "opentrustgraph/v0.1";
/// Record discriminators accepted on read: v0.1, then v0 for the compatibility window (§1).
pub const ACCEPTED_RECORD_SCHEMAS: [&str; 2] = ["opentrustgraph/v0.1", "opentrustgraph/v0"];
/// The export envelope discriminator (§3).
pub const CHAIN_SCHEMA: &str = "opentrustgraph-chain/v0";
/// The topic warrant names in its exports (§3, Harn's canonical topic).
pub const TOPIC: &str = "trust_graph";
/// The fourteen top-level record keys; no others are allowed (§2.1).
pub const RECORD_KEYS: [&str; 14] = [
    "schema",
    "record_id",
    "agent",
    "action",
    "approver",
    "outcome",
    "trace_id",
    "autonomy_tier",
    "timestamp",
    "cost_usd",
    "chain_index",
    "previous_hash",
    "entry_hash",
    "metadata",
];
const OUTCOMES: [&str; 4] = ["success", "failure", "denied", "timeout"];
const TIERS: [&str; 4] = ["shadow", "suggest", "act_with_approval", "act_auto"];

/// Which verification check a finding comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Check {
    /// A line of `chain.jsonl` is not a JSON object (or the file has a torn final line).
    Parse,
    /// The export envelope's shape (§5.1 check 1).
    Envelope,
    /// A record's shape against the v0.1 record schema (§5.1 check 2).
    RecordSchema,
    /// `chain_index` is not the 1-based position.
    ChainIndex,
    /// The recomputed `entry_hash` differs from the recorded one (§5.1 check 3).
    EntryHash,
    /// `previous_hash` does not link to the prior record (§5.1 check 4).
    PreviousHash,
    /// `chain.total` or `chain.root_hash` disagree with the records (§5.1 check 5).
    Totals,
    /// The approval-evidence rule (§2.4).
    Approval,
    /// The v0.1 lineage checks (§5.2).
    Lineage,
    /// A warrant Ed25519 signature (unknown key, bad signature, or a document that does not
    /// match its record).
    Signature,
}

impl Check {
    /// The snake_case name used in reports and `--json` output.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Check::Parse => "parse",
            Check::Envelope => "envelope",
            Check::RecordSchema => "record_schema",
            Check::ChainIndex => "chain_index",
            Check::EntryHash => "entry_hash",
            Check::PreviousHash => "previous_hash",
            Check::Totals => "totals",
            Check::Approval => "approval",
            Check::Lineage => "lineage",
            Check::Signature => "signature",
        }
    }
}

/// One failed check. `index` is the 0-based record index (the line number in `chain.jsonl`),
/// `None` for envelope-level findings.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Finding {
    /// 0-based record index, or `None` for the envelope.
    pub index: Option<usize>,
    /// The check that failed.
    pub check: Check,
    /// What is wrong, with the reference verifiers' wording where one exists.
    pub message: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.index {
            Some(i) => write!(f, "record {i}: [{}] {}", self.check.as_str(), self.message),
            None => write!(f, "chain: [{}] {}", self.check.as_str(), self.message),
        }
    }
}

/// The result of verifying a chain: record count, head hash and every finding.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct VerifyReport {
    /// Number of records examined.
    pub total: usize,
    /// The last record's recorded `entry_hash`, or `None` for an empty chain.
    pub root_hash: Option<String>,
    /// Number of warrant signatures checked and found valid.
    pub signatures_verified: usize,
    /// Every failed check, in record order.
    pub findings: Vec<Finding>,
}

impl VerifyReport {
    /// True when no check failed.
    #[must_use]
    pub fn is_valid(&self) -> bool {
        self.findings.is_empty()
    }

    /// The first finding, which `warrant verify` names.
    #[must_use]
    pub fn first(&self) -> Option<&Finding> {
        self.findings.first()
    }

    fn push(&mut self, index: Option<usize>, check: Check, message: impl Into<String>) {
        self.findings.push(Finding { index, check, message: message.into() });
    }
}

/// How strictly to verify.
#[derive(Debug, Clone, Copy, Default)]
pub struct VerifyOptions<'a> {
    /// Pinned principal keys. `Some`: every warrant signature must verify under a pinned key.
    /// `None`: signatures are not checked (the OpenTrustGraph checks alone).
    pub pinned: Option<&'a PinnedKeys>,
    /// Every approval signature must be a warrant signature that verifies (a spool's own
    /// `chain.jsonl`, which only warrant writes). Without it, signatures of foreign records stay
    /// opaque, as OpenTrustGraph treats them (exports from other producers).
    pub strict_signatures: bool,
}

/// One line of a chain as read: a JSON object, or why the line is not one.
#[derive(Debug, Clone, PartialEq)]
pub enum Line<R> {
    /// A parsed record (owned, or borrowed from a slice).
    Record(R),
    /// The line is not a JSON object (or is a torn final line): the message says why.
    Unparsable(String),
}

/// What a child needs of its parent for the v0.1 checks: its `effects_grant` and `actor_chain`.
type ParentFacts = (Vec<Value>, Option<Value>);

/// Lineage facts kept per record for the v0.1 checks (§5.2): only what children need.
#[derive(Default)]
struct Lineage {
    /// Every `record_id` seen, with the parent-relevant parts of records that have any.
    seen: HashMap<String, Option<ParentFacts>>,
}

/// Records per signature batch handed to a worker thread.
const SIGNATURE_BATCH: usize = 512;

/// Verifies a stream of records: the record contract, `chain_index`, `entry_hash`,
/// `previous_hash` linkage against the *recorded* prior hash, the approval rule, the v0.1
/// lineage checks, and (with `opts.pinned`) warrant's Ed25519 signatures.
///
/// Memory stays flat: each record is dropped once checked, except for the record ids (and the
/// lineage metadata of records that carry any). Signatures are checked on worker threads, one
/// per available core, while this thread parses and hashes. `on_record` sees each valid-shaped
/// record once, in order (the console and `decide` use it to collect decisions).
pub fn verify_stream<R, I, F>(lines: I, opts: VerifyOptions<'_>, mut on_record: F) -> VerifyReport
where
    R: std::borrow::Borrow<Value> + Send,
    I: IntoIterator<Item = Line<R>>,
    F: FnMut(usize, &Map<String, Value>),
{
    let mut report = VerifyReport::default();
    let mut previous: Option<String> = None;
    let mut lineage = Lineage::default();
    let workers = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get).clamp(1, 8);
    std::thread::scope(|scope| {
        let (job_tx, job_rx) = std::sync::mpsc::sync_channel::<Vec<(usize, R)>>(workers * 2);
        let job_rx = std::sync::Arc::new(std::sync::Mutex::new(job_rx));
        let (res_tx, res_rx) = std::sync::mpsc::channel::<(usize, Vec<Finding>)>();
        if let Some(pinned) = opts.pinned {
            for _ in 0..workers {
                let (rx, tx) = (std::sync::Arc::clone(&job_rx), res_tx.clone());
                scope.spawn(move || {
                    loop {
                        let batch = match rx.lock() {
                            Ok(guard) => guard.recv(),
                            Err(_) => return,
                        };
                        let Ok(batch) = batch else { return };
                        let (mut ok, mut found) = (0, Vec::new());
                        for (i, rec) in &batch {
                            let Value::Object(map) = rec.borrow() else { continue };
                            match crate::decision::check_record_signature(map, pinned) {
                                Ok(true) => ok += 1,
                                Ok(false) => {}
                                Err(message) => {
                                    found.push(Finding { index: Some(*i), check: Check::Signature, message })
                                }
                            }
                        }
                        if tx.send((ok, found)).is_err() {
                            return;
                        }
                    }
                });
            }
        }
        drop(res_tx);
        let mut batch: Vec<(usize, R)> = Vec::new();
        for (i, line) in lines.into_iter().enumerate() {
            report.total = i + 1;
            let rec = match line {
                Line::Unparsable(message) => {
                    report.push(Some(i), Check::Parse, message);
                    previous = None;
                    continue;
                }
                Line::Record(r) => r,
            };
            let Value::Object(map) = rec.borrow() else {
                report.push(Some(i), Check::RecordSchema, "record is not a JSON object");
                previous = None;
                continue;
            };
            check_record_shape(i, map, &mut report);
            check_linkage(i, map, previous.as_deref(), &mut report);
            check_approval(i, map, &mut report);
            check_lineage(i, map, &lineage, &mut report);
            let meta = map.get("metadata");
            let warrant_signed = crate::decision::is_warrant_signed(meta);
            let has_signatures = meta
                .and_then(|m| m.get("approval"))
                .and_then(|a| a.get("signatures"))
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty());
            if opts.strict_signatures && has_signatures && !warrant_signed {
                report.push(
                    Some(i),
                    Check::Signature,
                    "approval signatures that are not warrant decisions cannot be verified against pinned keys",
                );
            }
            if let Some(id) = map.get("record_id").and_then(Value::as_str)
                && lineage.seen.contains_key(id)
            {
                report.push(Some(i), Check::RecordSchema, format!("duplicate record_id {id:?}"));
            }
            on_record(i, map);
            previous = map.get("entry_hash").and_then(Value::as_str).map(str::to_owned);
            if let Some(id) = map.get("record_id").and_then(Value::as_str) {
                let meta = map.get("metadata").and_then(Value::as_object);
                let grant = effects(meta.and_then(|m| m.get("effects_grant")));
                let actor = meta.and_then(|m| m.get("actor_chain")).cloned();
                let facts = (!grant.is_empty() || actor.is_some()).then_some((grant, actor));
                lineage.seen.insert(id.to_owned(), facts);
            }
            let signed = opts.pinned.is_some() && warrant_signed;
            if signed {
                batch.push((i, rec));
                if batch.len() >= SIGNATURE_BATCH {
                    let _ = job_tx.send(std::mem::take(&mut batch));
                }
            }
        }
        if !batch.is_empty() {
            let _ = job_tx.send(batch);
        }
        drop(job_tx);
        for (ok, found) in res_rx {
            report.signatures_verified += ok;
            report.findings.extend(found);
        }
    });
    // Worker findings arrive out of order: order by record, keeping check order within one.
    report.findings.sort_by_key(|f| f.index.unwrap_or(usize::MAX));
    report.root_hash = previous;
    report
}

/// Checks one record before it is appended: its shape, the approval rule and (with `pinned`) its
/// signature. Linkage is not checked here (it is set by [`seal`]). An append that would leave
/// the chain failing verification is refused by its callers, so no input can poison the chain.
#[must_use]
pub fn check_new_record(rec: &Map<String, Value>, pinned: Option<&PinnedKeys>) -> Vec<Finding> {
    let mut report = VerifyReport::default();
    check_record_shape(0, rec, &mut report);
    check_approval(0, rec, &mut report);
    if let Some(pinned) = pinned
        && let Err(message) = crate::decision::check_record_signature(rec, pinned)
    {
        report.push(Some(0), Check::Signature, message);
    }
    report.findings
}

/// Verifies records held in memory (see [`verify_stream`]).
#[must_use]
pub fn verify_records(records: &[Value], opts: VerifyOptions<'_>) -> VerifyReport {
    verify_stream(records.iter().map(Line::Record), opts, |_, _| {})
}

fn nonempty_str(rec: &Map<String, Value>, key: &str) -> bool {
    rec.get(key).and_then(Value::as_str).is_some_and(|s| !s.trim().is_empty())
}

/// The v0.1 record schema as explicit checks (§2.1), so reports name the field.
fn check_record_shape(i: usize, rec: &Map<String, Value>, report: &mut VerifyReport) {
    let mut bad = |msg: String| report.push(Some(i), Check::RecordSchema, msg);
    match rec.get("schema").and_then(Value::as_str) {
        Some(s) if ACCEPTED_RECORD_SCHEMAS.contains(&s) => {}
        Some(s) => bad(format!("unsupported record schema {s:?}")),
        None => bad("missing string field `schema`".into()),
    }
    for key in ["record_id", "agent", "action", "trace_id"] {
        if !nonempty_str(rec, key) {
            bad(format!("`{key}` must be a non-empty string"));
        }
    }
    match rec.get("approver") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if !s.is_empty() => {}
        Some(_) => bad("`approver` must be null or a non-empty string".into()),
    }
    if !rec.get("outcome").and_then(Value::as_str).is_some_and(|s| OUTCOMES.contains(&s)) {
        bad(format!("`outcome` must be one of {OUTCOMES:?}"));
    }
    if !rec.get("autonomy_tier").and_then(Value::as_str).is_some_and(|s| TIERS.contains(&s)) {
        bad(format!("`autonomy_tier` must be one of {TIERS:?}"));
    }
    if rec.get("timestamp").and_then(Value::as_str).is_none_or(|s| crate::clock::parse_rfc3339(s).is_none()) {
        bad("`timestamp` must be an RFC 3339 date-time".into());
    }
    match rec.get("cost_usd") {
        None | Some(Value::Null) => {}
        Some(Value::Number(n)) if n.as_f64().is_some_and(|x| x >= 0.0) => {}
        Some(_) => bad("`cost_usd` must be null or a number >= 0".into()),
    }
    if rec.get("chain_index").and_then(Value::as_u64).is_none_or(|n| n < 1) {
        bad("`chain_index` must be an integer >= 1".into());
    }
    match rec.get("previous_hash") {
        Some(Value::Null) => {}
        Some(Value::String(s)) if is_sha256_string(s) => {}
        Some(_) => bad("`previous_hash` must be null or sha256:<64 hex>".into()),
        None => bad("missing field `previous_hash`".into()),
    }
    if !rec.get("entry_hash").and_then(Value::as_str).is_some_and(is_sha256_string) {
        bad("`entry_hash` must be sha256:<64 lower-case hex>".into());
    }
    if !rec.get("metadata").is_some_and(Value::is_object) {
        bad("`metadata` must be an object".into());
    }
    for key in rec.keys() {
        if !RECORD_KEYS.contains(&key.as_str()) {
            bad(format!("unknown top-level field `{key}`"));
        }
    }
}

fn check_linkage(i: usize, rec: &Map<String, Value>, previous: Option<&str>, report: &mut VerifyReport) {
    let expected_index = i as u64 + 1;
    match rec.get("chain_index").and_then(Value::as_u64) {
        Some(n) if n == expected_index => {}
        found => report.push(
            Some(i),
            Check::ChainIndex,
            format!("expected chain_index {expected_index}, found {}", show_u64(found)),
        ),
    }
    let recorded_prev = rec.get("previous_hash").and_then(Value::as_str);
    if recorded_prev != previous {
        report.push(
            Some(i),
            Check::PreviousHash,
            format!("previous_hash mismatch; expected {}, found {}", show_opt(previous), show_opt(recorded_prev)),
        );
    }
    let computed = canonical::prefixed(&canonical::canonical_digest_without(rec, "entry_hash"));
    let recorded = rec.get("entry_hash").and_then(Value::as_str);
    if recorded != Some(computed.as_str()) {
        report.push(
            Some(i),
            Check::EntryHash,
            format!("entry_hash mismatch; recomputed {computed}, stored {}", show_opt(recorded)),
        );
    }
}

fn show_opt(s: Option<&str>) -> String {
    s.map_or_else(|| "null".to_owned(), |s| format!("{s:?}"))
}

fn show_u64(n: Option<u64>) -> String {
    n.map_or_else(|| "none".to_owned(), |n| n.to_string())
}

/// The approval-evidence rule (§2.4): fires when `outcome` is `success`, `autonomy_tier` is
/// `act_with_approval` and `metadata.approval.required` is the JSON literal `true`.
fn check_approval(i: usize, rec: &Map<String, Value>, report: &mut VerifyReport) {
    let approval = rec.get("metadata").and_then(|m| m.get("approval"));
    let fires = rec.get("outcome").and_then(Value::as_str) == Some("success")
        && rec.get("autonomy_tier").and_then(Value::as_str) == Some("act_with_approval")
        && approval.and_then(|a| a.get("required")) == Some(&Value::Bool(true));
    if !fires {
        return;
    }
    if rec.get("approver").and_then(Value::as_str).is_none_or(|s| s.trim().is_empty()) {
        report.push(Some(i), Check::Approval, "approval required but approver is empty");
    }
    let approval = approval.unwrap_or(&Value::Null);
    if approval.get("quorum").and_then(Value::as_u64).is_none_or(|q| q < 1) {
        report.push(Some(i), Check::Approval, "approval required but quorum is missing or < 1");
    }
    let sigs = approval.get("signatures").and_then(Value::as_array);
    match sigs {
        Some(list) if !list.is_empty() => {
            for (k, sig) in list.iter().enumerate() {
                let ok = ["reviewer", "signature"]
                    .iter()
                    .all(|key| sig.get(key).and_then(Value::as_str).is_some_and(|s| !s.is_empty()))
                    && sig
                        .get("signed_at")
                        .and_then(Value::as_str)
                        .is_some_and(|s| crate::clock::parse_rfc3339(s).is_some());
                if !ok {
                    report.push(
                        Some(i),
                        Check::Approval,
                        format!("approval signature {k} lacks reviewer, signed_at (RFC 3339) or signature"),
                    );
                }
            }
        }
        _ => report.push(Some(i), Check::Approval, "approval required but signatures are empty"),
    }
}

/// The v0.1 lineage checks (§5.2), as Harn implements them: a parent must appear earlier;
/// malformed effect lists count as empty; only actor subjects are compared.
fn check_lineage(i: usize, rec: &Map<String, Value>, lineage: &Lineage, report: &mut VerifyReport) {
    let Some(meta) = rec.get("metadata").and_then(Value::as_object) else { return };
    let Some(parent_id) = meta.get("parent_record_id").and_then(Value::as_str) else { return };
    let used = effects(meta.get("effects_used"));
    let actor = meta.get("actor_chain");
    let Some(parent) = lineage.seen.get(parent_id) else {
        if !used.is_empty() || actor.is_some() {
            report.push(Some(i), Check::Lineage, format!("parent_record_id {parent_id:?} not found in chain"));
        }
        return;
    };
    let (grant, parent_actor) = match parent {
        Some((g, a)) => (g.as_slice(), a.as_ref()),
        None => (&[][..], None),
    };
    for effect in &used {
        if !grant.iter().any(|g| g == effect) {
            report.push(
                Some(i),
                Check::Lineage,
                format!(
                    "effects_used escaped grant: {} not in parent {parent_id:?}",
                    canonical::to_canonical_string(effect)
                ),
            );
        }
    }
    if let Some(actor) = actor {
        let Some(child) = actor_subjects(actor) else {
            report.push(Some(i), Check::Lineage, "actor_chain invalid: `sub` must be a string");
            return;
        };
        let Some(parent_actor) = parent_actor else {
            report.push(Some(i), Check::Lineage, format!("actor_chain parent {parent_id:?} missing actor_chain"));
            return;
        };
        let Some(par) = actor_subjects(parent_actor) else {
            report.push(Some(i), Check::Lineage, "actor_chain invalid in parent record");
            return;
        };
        let extends = child.0 == par.0 && child.1.len() == par.1.len() + 1 && child.1[1..] == par.1[..];
        if !extends {
            report.push(
                Some(i),
                Check::Lineage,
                format!(
                    "actor_chain escaped parentage: {} acting as {:?} does not extend parent {:?}",
                    child.0, child.1, par.1
                ),
            );
        }
    }
}

/// Decodes an effect list into canonical values; anything malformed counts as empty (Harn).
fn effects(v: Option<&Value>) -> Vec<Value> {
    let Some(Value::Array(items)) = v else { return Vec::new() };
    let valid = items.iter().all(|e| {
        e.get("kind").and_then(|k| k.get("kind")).and_then(Value::as_str).is_some()
            && e.get("scope").and_then(Value::as_str).is_some()
    });
    if valid { items.clone() } else { Vec::new() }
}

/// `(origin sub, [current actor, earlier actors…])` of an actor chain.
fn actor_subjects(v: &Value) -> Option<(String, Vec<String>)> {
    let sub = v.get("sub")?.as_str()?.to_owned();
    let mut acts = Vec::new();
    let mut cur = v.get("act");
    while let Some(a) = cur {
        acts.push(a.get("sub")?.as_str()?.to_owned());
        cur = a.get("act");
    }
    Some((sub, acts))
}

/// Verifies an `opentrustgraph-chain/v0` export envelope: its shape, `total`, `root_hash`,
/// the declared `verified` flag, and every record by [`verify_records`].
#[must_use]
pub fn verify_export(envelope: &Value, opts: VerifyOptions<'_>) -> VerifyReport {
    let empty = Vec::new();
    let records = envelope.get("records").and_then(Value::as_array);
    let mut report = verify_records(records.unwrap_or(&empty), opts);
    let mut env = Vec::new();
    let mut bad = |m: String| env.push(Finding { index: None, check: Check::Envelope, message: m });
    if envelope.get("schema").and_then(Value::as_str) != Some(CHAIN_SCHEMA) {
        bad(format!("unsupported chain schema: {}", show_val(envelope.get("schema"))));
    }
    if records.is_none() {
        bad("`records` must be an array".into());
    }
    if let Some(map) = envelope.as_object() {
        for key in map.keys().filter(|k| !["schema", "chain", "records"].contains(&k.as_str())) {
            bad(format!("unknown envelope field `{key}`"));
        }
    }
    let chain = envelope.get("chain").and_then(Value::as_object);
    match chain {
        None => bad("`chain` must be an object".into()),
        Some(c) => {
            for key in c.keys() {
                if !["topic", "total", "root_hash", "verified", "generated_at", "producer"].contains(&key.as_str()) {
                    bad(format!("unknown chain field `{key}`"));
                }
            }
            if !nonempty_str(c, "topic") {
                bad("`chain.topic` must be a non-empty string".into());
            }
            if c.get("generated_at").and_then(Value::as_str).is_none_or(|s| crate::clock::parse_rfc3339(s).is_none()) {
                bad("`chain.generated_at` must be an RFC 3339 date-time".into());
            }
            let producer_ok = c
                .get("producer")
                .and_then(Value::as_object)
                .is_some_and(|p| nonempty_str(p, "name") && nonempty_str(p, "version") && p.len() == 2);
            if !producer_ok {
                bad("`chain.producer` must be {name, version}, both non-empty".into());
            }
            let n = records.map_or(0, Vec::len) as u64;
            match c.get("total").and_then(Value::as_u64) {
                Some(t) if t == n => {}
                t => env.push(Finding {
                    index: None,
                    check: Check::Totals,
                    message: format!("chain.total mismatch: declared {}, found {n}", show_u64(t)),
                }),
            }
            let declared_root = c.get("root_hash");
            let ok = match (declared_root, &report.root_hash) {
                (Some(Value::Null), None) => true,
                (Some(Value::String(d)), Some(r)) => d == r,
                _ => false,
            };
            if !ok {
                env.push(Finding {
                    index: None,
                    check: Check::Totals,
                    message: format!(
                        "chain.root_hash mismatch: declared {}, computed {}",
                        show_val(declared_root),
                        show_opt(report.root_hash.as_deref())
                    ),
                });
            }
            match c.get("verified").and_then(Value::as_bool) {
                None => env.push(Finding {
                    index: None,
                    check: Check::Envelope,
                    message: "`chain.verified` must be a boolean".into(),
                }),
                Some(true) if !(report.is_valid() && env.is_empty()) => env.push(Finding {
                    index: None,
                    check: Check::Envelope,
                    message: "chain.verified is true but verification failed".into(),
                }),
                Some(_) => {}
            }
        }
    }
    report.findings.extend(env);
    report
}

fn show_val(v: Option<&Value>) -> String {
    v.map_or_else(|| "missing".to_owned(), canonical::to_canonical_string)
}

/// Builds an `opentrustgraph-chain/v0` envelope over `records`, with `verified` set from a full
/// verification (including the approval rule and, with `opts.pinned`, signatures).
#[must_use]
pub fn export(records: Vec<Value>, opts: VerifyOptions<'_>, generated_at: &str) -> Value {
    let report = verify_records(&records, opts);
    json!({
        "schema": CHAIN_SCHEMA,
        "chain": {
            "topic": TOPIC,
            "total": records.len(),
            "root_hash": report.root_hash,
            "verified": report.is_valid(),
            "generated_at": generated_at,
            "producer": {"name": "warrant", "version": env!("CARGO_PKG_VERSION")},
        },
        "records": records,
    })
}

/// Errors of reading or appending to `chain.jsonl`.
#[derive(Debug, thiserror::Error)]
pub enum ChainError {
    /// The file could not be opened, locked, read, written or synced.
    #[error("chain {path}: {source}")]
    Io {
        /// The chain file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The last line has no terminating newline: an append was torn. Nothing is appended after it.
    #[error("chain {path}: the final line is torn ({bytes} bytes without a newline); refusing to append")]
    TornTail {
        /// The chain file.
        path: PathBuf,
        /// Length of the torn fragment.
        bytes: u64,
    },
    /// The last record does not parse, so its hash cannot be linked.
    #[error("chain {path}: the last record does not parse: {message}")]
    BadTail {
        /// The chain file.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// The caller's record builder refused.
    #[error("{0}")]
    Build(String),
    /// Another process holds the chain's lock beyond the deadline.
    #[error("chain {path}: locked by another process for more than {seconds} s")]
    Locked {
        /// The lock file.
        path: PathBuf,
        /// How long warrant waited.
        seconds: u64,
    },
    /// The chain (or its lock) is not a regular file: a symlink, FIFO, device or directory.
    #[error("chain {path}: not a regular file (symlinks, FIFOs and devices are refused)")]
    NotRegular {
        /// The path.
        path: PathBuf,
    },
    /// `chain.jsonl` was replaced by another file while it was locked for an append.
    #[error("chain {path}: the file was replaced during the append; nothing was written")]
    Replaced {
        /// The chain file.
        path: PathBuf,
    },
}

/// Longest chain line warrant reads (1 MiB); a longer line is reported, never buffered whole.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// How long an append waits for the chain's lock.
pub const LOCK_DEADLINE: std::time::Duration = std::time::Duration::from_secs(10);

/// Opens a chain file for reading without blocking on a FIFO, refusing anything that is not a
/// regular file. With `no_follow`, a symlink is refused too (a spool's own chain).
///
/// # Errors
/// [`ChainError::NotRegular`] or I/O errors (`NotFound` included).
pub fn open_regular(path: &Path, no_follow: bool) -> Result<File, ChainError> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let flags = libc::O_NONBLOCK | if no_follow { libc::O_NOFOLLOW } else { 0 };
    let file = OpenOptions::new().read(true).custom_flags(flags).open(path).map_err(|e| match e.raw_os_error() {
        Some(libc::ELOOP) => ChainError::NotRegular { path: path.to_owned() },
        _ => ChainError::Io { path: path.to_owned(), source: e },
    })?;
    let meta = file.metadata().map_err(|source| ChainError::Io { path: path.to_owned(), source })?;
    if !meta.file_type().is_file() {
        return Err(ChainError::NotRegular { path: path.to_owned() });
    }
    Ok(file)
}

/// A chain file read whole: the records that parsed and a finding for each line that did not.
#[derive(Debug, Default)]
pub struct ChainFile {
    /// Every line, parsed (a line that does not parse is kept as `Value::Null`, so indexes stay
    /// line numbers).
    pub records: Vec<Value>,
    /// Lines that are not JSON objects, and a torn final line.
    pub parse_findings: Vec<Finding>,
}

impl ChainFile {
    /// Verifies the records, reporting each unparsable line once as a parse finding.
    #[must_use]
    pub fn verify(&self, opts: VerifyOptions<'_>) -> VerifyReport {
        let mut problems: HashMap<usize, &str> = HashMap::new();
        for f in &self.parse_findings {
            if let Some(i) = f.index {
                problems.insert(i, &f.message);
            }
        }
        let lines = self.records.iter().enumerate().map(|(i, r)| match problems.get(&i) {
            Some(m) => Line::Unparsable((*m).to_owned()),
            None => Line::Record(r),
        });
        verify_stream(lines, opts, |_, _| {})
    }
}

/// Reads `chain.jsonl` line by line. A line that is not a JSON object, and a final line without
/// a newline (a torn append), come out as [`Line::Unparsable`]; an I/O error ends the iteration
/// and is kept in [`ChainReader::error`].
pub struct ChainReader<B> {
    reader: B,
    buf: Vec<u8>,
    done: bool,
    /// The I/O error that ended the iteration, if any.
    pub error: Option<io::Error>,
}

impl<B: BufRead> ChainReader<B> {
    /// Wraps a buffered reader.
    pub fn new(reader: B) -> Self {
        Self { reader, buf: Vec::with_capacity(4096), done: false, error: None }
    }
}

impl<B: BufRead> Iterator for ChainReader<B> {
    type Item = Line<Value>;

    fn next(&mut self) -> Option<Line<Value>> {
        if self.done {
            return None;
        }
        self.buf.clear();
        let limit = MAX_LINE_BYTES as u64 + 1;
        match (&mut self.reader).take(limit).read_until(b'\n', &mut self.buf) {
            Ok(0) => {
                self.done = true;
                None
            }
            Ok(n) if n as u64 == limit && self.buf.last() != Some(&b'\n') => {
                // Skip the rest of an over-long line without buffering it.
                loop {
                    let (found, used) = match self.reader.fill_buf() {
                        Ok([]) => {
                            self.done = true;
                            break;
                        }
                        Ok(chunk) => match chunk.iter().position(|&b| b == b'\n') {
                            Some(p) => (true, p + 1),
                            None => (false, chunk.len()),
                        },
                        Err(e) => {
                            self.done = true;
                            self.error = Some(e);
                            return None;
                        }
                    };
                    self.reader.consume(used);
                    if found {
                        break;
                    }
                }
                Some(Line::Unparsable(format!("line longer than {MAX_LINE_BYTES} bytes")))
            }
            Ok(_) => {
                if self.buf.last() != Some(&b'\n') {
                    self.done = true;
                    return Some(Line::Unparsable(format!(
                        "torn final line: {} bytes without a newline",
                        self.buf.len()
                    )));
                }
                let body = &self.buf[..self.buf.len() - 1];
                Some(match canonical::parse_strict(body) {
                    Ok(v @ Value::Object(_)) => Line::Record(v),
                    Ok(_) => Line::Unparsable("line is not a JSON object".into()),
                    Err(e) => Line::Unparsable(format!("line is not JSON: {e}")),
                })
            }
            Err(e) => {
                self.done = true;
                self.error = Some(e);
                None
            }
        }
    }
}

fn open_chain(path: &Path, no_follow: bool) -> Result<Option<ChainReader<BufReader<File>>>, ChainError> {
    match open_regular(path, no_follow) {
        Ok(f) => Ok(Some(ChainReader::new(BufReader::with_capacity(1 << 20, f)))),
        Err(ChainError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Verifies `chain.jsonl` as a stream (see [`verify_stream`]); a missing file is an empty,
/// valid chain. The file must be a regular file (symlinks are followed; FIFOs never block).
///
/// # Errors
/// I/O errors while reading; [`ChainError::NotRegular`].
pub fn verify_file<F>(path: &Path, opts: VerifyOptions<'_>, on_record: F) -> Result<VerifyReport, ChainError>
where
    F: FnMut(usize, &Map<String, Value>),
{
    verify_file_with(path, false, opts, on_record)
}

/// As [`verify_file`]; with `no_follow`, a symlink is refused (a spool's own chain).
///
/// # Errors
/// As [`verify_file`].
pub fn verify_file_with<F>(
    path: &Path,
    no_follow: bool,
    opts: VerifyOptions<'_>,
    on_record: F,
) -> Result<VerifyReport, ChainError>
where
    F: FnMut(usize, &Map<String, Value>),
{
    let Some(mut lines) = open_chain(path, no_follow)? else { return Ok(VerifyReport::default()) };
    let report = verify_stream(&mut lines, opts, on_record);
    match lines.error {
        Some(source) => Err(ChainError::Io { path: path.to_owned(), source }),
        None => Ok(report),
    }
}

/// Reads a JSON-lines chain whole. A missing file is an empty chain.
///
/// # Errors
/// I/O errors other than "not found".
pub fn read_chain(path: &Path) -> Result<ChainFile, ChainError> {
    let Some(mut lines) = open_chain(path, false)? else { return Ok(ChainFile::default()) };
    let mut out = ChainFile::default();
    for (index, line) in (&mut lines).enumerate() {
        match line {
            Line::Record(v) => out.records.push(v),
            Line::Unparsable(message) => {
                out.parse_findings.push(Finding { index: Some(index), check: Check::Parse, message });
                out.records.push(Value::Null);
            }
        }
    }
    match lines.error {
        Some(source) => Err(ChainError::Io { path: path.to_owned(), source }),
        None => Ok(out),
    }
}

/// Scans a chain backwards from its last line and returns the first `Some` that `f` gives for a
/// record, reading 64 KiB at a time, so that finding something near the tail costs little
/// whatever the chain's length. Lines that do not parse are skipped. A missing file gives `None`.
///
/// # Errors
/// I/O errors; [`ChainError::NotRegular`] (symlinks are refused).
pub fn find_last<T>(path: &Path, mut f: impl FnMut(&Map<String, Value>) -> Option<T>) -> Result<Option<T>, ChainError> {
    let io_err = |source| ChainError::Io { path: path.to_owned(), source };
    let mut file = match open_regular(path, true) {
        Ok(file) => file,
        Err(ChainError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut pos = file.metadata().map_err(io_err)?.len();
    let mut tail: Vec<u8> = Vec::new();
    let mut check = |line: &[u8]| match canonical::parse_strict(line) {
        Ok(Value::Object(rec)) => f(&rec),
        _ => None,
    };
    const CHUNK: u64 = 64 * 1024;
    while pos > 0 {
        let start = pos.saturating_sub(CHUNK);
        file.seek(SeekFrom::Start(start)).map_err(io_err)?;
        let mut buf = Vec::with_capacity((pos - start) as usize + tail.len());
        Read::by_ref(&mut file).take(pos - start).read_to_end(&mut buf).map_err(io_err)?;
        buf.extend_from_slice(&tail);
        tail = buf;
        pos = start;
        loop {
            let end = if tail.last() == Some(&b'\n') { tail.len() - 1 } else { tail.len() };
            let Some(nl) = tail[..end].iter().rposition(|&b| b == b'\n') else { break };
            if let Some(found) = check(&tail[nl + 1..end]) {
                return Ok(Some(found));
            }
            tail.truncate(nl + 1);
        }
        if tail.len() > MAX_LINE_BYTES + 1 {
            // One line longer than any line warrant writes: skip it rather than buffer it.
            tail.clear();
        }
    }
    let end = if tail.last() == Some(&b'\n') { tail.len() - 1 } else { tail.len() };
    Ok(if end > 0 { check(&tail[..end]) } else { None })
}

/// The head of a chain as an append sees it under the lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainHead {
    /// `chain_index` of the last record (0 for an empty chain).
    pub last_index: u64,
    /// `entry_hash` of the last record (`None` for an empty chain).
    pub last_hash: Option<String>,
}

/// What an append wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Appended {
    /// The new record's `chain_index`.
    pub chain_index: u64,
    /// The new record's `entry_hash`.
    pub entry_hash: String,
    /// The full record as written.
    pub record: Value,
}

/// Appends one record to `path` durably.
///
/// Takes the exclusive lock on `.chain.lock` beside the chain (a private file, mode 0600, so
/// processes that may only read the chain cannot hold the lock), waiting at most
/// [`LOCK_DEADLINE`]. Then it opens the chain without following symlinks (a regular file
/// only), reads the head, calls `build` with it (the builder returns the record body: every field
/// but `chain_index`, `previous_hash` and `entry_hash`, which are set here), computes
/// `entry_hash` by the hash contract, checks that the path still names the file it locked,
/// writes the line with `O_APPEND` and `fsync`s before returning. A failed write is truncated
/// back, so a full disk never leaves a torn line. The directory is synced when a file is created.
///
/// # Errors
/// I/O failures, [`ChainError::Locked`], [`ChainError::NotRegular`], [`ChainError::Replaced`],
/// a torn or unparsable tail ([`ChainError::TornTail`], [`ChainError::BadTail`]), or the
/// builder's own refusal ([`ChainError::Build`]). On error nothing was written.
pub fn append<F>(path: &Path, build: F) -> Result<Appended, ChainError>
where
    F: FnOnce(&ChainHead) -> Result<Map<String, Value>, String>,
{
    append_with_deadline(path, LOCK_DEADLINE, build)
}

/// As [`append`], waiting at most `deadline` for the lock.
///
/// # Errors
/// As [`append`].
pub fn append_with_deadline<F>(path: &Path, deadline: std::time::Duration, build: F) -> Result<Appended, ChainError>
where
    F: FnOnce(&ChainHead) -> Result<Map<String, Value>, String>,
{
    use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
    let io_err = |source| ChainError::Io { path: path.to_owned(), source };
    let lock_path = path.with_file_name(".chain.lock");
    let lock = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&lock_path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => ChainError::NotRegular { path: lock_path.clone() },
            _ => ChainError::Io { path: lock_path.clone(), source: e },
        })?;
    if !lock.metadata().map_err(io_err)?.file_type().is_file() {
        return Err(ChainError::NotRegular { path: lock_path });
    }
    let start = std::time::Instant::now();
    loop {
        match lock.try_lock() {
            Ok(()) => break,
            Err(std::fs::TryLockError::WouldBlock) if start.elapsed() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(ChainError::Locked { path: lock_path, seconds: deadline.as_secs() });
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io_err(e)),
        }
    }
    let result = (|| {
        let existed = path.symlink_metadata().is_ok();
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(path)
            .map_err(|e| match e.raw_os_error() {
                Some(libc::ELOOP) => ChainError::NotRegular { path: path.to_owned() },
                _ => io_err(e),
            })?;
        let meta = file.metadata().map_err(io_err)?;
        if !meta.file_type().is_file() {
            return Err(ChainError::NotRegular { path: path.to_owned() });
        }
        if !existed {
            sync_parent(path).map_err(io_err)?;
        }
        let head = read_head(path, &mut file)?;
        let rec = build(&head).map_err(ChainError::Build)?;
        let appended = seal(rec, &head);
        let mut line = canonical::to_canonical_vec(&appended.record);
        line.push(b'\n');
        // The builder read the chain by path: it must still be the file this append holds.
        let now = path.symlink_metadata().map_err(io_err)?;
        if now.ino() != meta.ino() || now.dev() != meta.dev() {
            return Err(ChainError::Replaced { path: path.to_owned() });
        }
        let len = file.metadata().map_err(io_err)?.len();
        if let Err(e) = file.write_all(&line).and_then(|()| file.sync_data()) {
            let _ = file.set_len(len);
            let _ = file.sync_data();
            return Err(io_err(e));
        }
        Ok(appended)
    })();
    let _ = lock.unlock();
    result
}

/// Links a record body after `head`: sets `chain_index` and `previous_hash`, then computes
/// `entry_hash` by the hash contract (§4.1). Pure; [`append`] uses it under the lock, and
/// generators of large test chains use it directly.
#[must_use]
pub fn seal(mut rec: Map<String, Value>, head: &ChainHead) -> Appended {
    let index = head.last_index + 1;
    rec.insert("chain_index".into(), json!(index));
    rec.insert("previous_hash".into(), head.last_hash.clone().map_or(Value::Null, Value::String));
    rec.remove("entry_hash");
    let entry_hash = canonical::prefixed(&canonical::canonical_digest_without(&rec, "entry_hash"));
    rec.insert("entry_hash".into(), Value::String(entry_hash.clone()));
    Appended { chain_index: index, entry_hash, record: Value::Object(rec) }
}

fn sync_parent(path: &Path) -> io::Result<()> {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => File::open(dir)?.sync_all(),
        _ => Ok(()),
    }
}

/// Reads the last line of the chain without reading the whole file.
fn read_head(path: &Path, file: &mut File) -> Result<ChainHead, ChainError> {
    let io_err = |source| ChainError::Io { path: path.to_owned(), source };
    let len = file.metadata().map_err(io_err)?.len();
    if len == 0 {
        return Ok(ChainHead { last_index: 0, last_hash: None });
    }
    // Read backwards in growing chunks until the start of the last line is found.
    let mut chunk = 8192_u64;
    loop {
        let start = len.saturating_sub(chunk);
        file.seek(SeekFrom::Start(start)).map_err(io_err)?;
        let mut buf = Vec::with_capacity((len - start) as usize);
        Read::by_ref(file).take(len - start).read_to_end(&mut buf).map_err(io_err)?;
        if buf.last() != Some(&b'\n') {
            let frag = buf.iter().rev().take_while(|&&b| b != b'\n').count() as u64;
            return Err(ChainError::TornTail { path: path.to_owned(), bytes: frag });
        }
        let body = &buf[..buf.len() - 1];
        if let Some(pos) = body.iter().rposition(|&b| b == b'\n') {
            return parse_head(path, &body[pos + 1..]);
        }
        if start == 0 {
            return parse_head(path, body);
        }
        if chunk > MAX_LINE_BYTES as u64 {
            return Err(ChainError::BadTail {
                path: path.to_owned(),
                message: format!("the last line is longer than {MAX_LINE_BYTES} bytes"),
            });
        }
        chunk *= 4;
    }
}

fn parse_head(path: &Path, line: &[u8]) -> Result<ChainHead, ChainError> {
    let bad = |message: String| ChainError::BadTail { path: path.to_owned(), message };
    let v: Value = canonical::parse_strict(line).map_err(bad)?;
    let last_index = v.get("chain_index").and_then(Value::as_u64).ok_or_else(|| bad("no chain_index".into()))?;
    let last_hash = v
        .get("entry_hash")
        .and_then(Value::as_str)
        .filter(|s| is_sha256_string(s))
        .ok_or_else(|| bad("no entry_hash".into()))?;
    Ok(ChainHead { last_index, last_hash: Some(last_hash.to_owned()) })
}

/// The body of a new record in the producer profile of §4.5: all top-level keys but the three
/// set by [`append`], with explicit `null`s, a fresh UUIDv7 `record_id` and a canonical UTC
/// timestamp.
#[must_use]
#[allow(clippy::too_many_arguments)]
pub fn new_record_body(
    agent: &str,
    action: &str,
    approver: Option<&str>,
    outcome: &str,
    trace_id: &str,
    autonomy_tier: &str,
    timestamp: &str,
    metadata: Map<String, Value>,
) -> Map<String, Value> {
    let mut rec = Map::new();
    rec.insert("schema".into(), json!(RECORD_SCHEMA));
    rec.insert("record_id".into(), json!(uuid::Uuid::now_v7().to_string()));
    rec.insert("agent".into(), json!(agent));
    rec.insert("action".into(), json!(action));
    rec.insert("approver".into(), approver.map_or(Value::Null, |a| json!(a)));
    rec.insert("outcome".into(), json!(outcome));
    rec.insert("trace_id".into(), json!(trace_id));
    rec.insert("autonomy_tier".into(), json!(autonomy_tier));
    rec.insert("timestamp".into(), json!(timestamp));
    rec.insert("cost_usd".into(), Value::Null);
    rec.insert("metadata".into(), Value::Object(metadata));
    rec
}
