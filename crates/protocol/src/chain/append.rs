//! What an append needs of the protocol: a new record's body, its checks before it is appended,
//! and linking it after the chain's head ([`seal`]).

use super::checks::{check_approval, check_record_shape};
use super::fields::Fields;
use super::{Check, Finding, RECORD_SCHEMA, VerifyReport};
use crate::canonical;
use crate::keys::PinnedKeys;
use serde_json::{Map, Value, json};

/// Checks one record before it is appended: its shape, the approval rule and (with `pinned`) its
/// signature. Linkage is not checked here (it is set by [`seal`]). An append that would leave
/// the chain failing verification is refused by its callers, so no input can poison the chain.
#[must_use]
pub fn check_new_record(rec: &Map<String, Value>, pinned: Option<&PinnedKeys>) -> Vec<Finding> {
    let mut report = VerifyReport::default();
    check_record_shape(0, &rec.field_refs(), rec.unknown_keys(), &mut report);
    check_approval(0, rec, &mut report);
    if let Some(pinned) = pinned
        && let Err(message) = crate::decision::check_record_signature(rec, pinned)
    {
        report.push(Some(0), Check::Signature, message.to_string());
    }
    report.findings
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

/// Links a record body after `head`: sets `chain_index` and `previous_hash`, then computes
/// `entry_hash` by the hash contract (§4.1). Pure; `warrant_store::chain_file::append` uses it under the lock, and
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

/// The body of a new record in the producer profile of §4.5: all top-level keys but the three
/// set by `warrant_store::chain_file::append`, with explicit `null`s, a fresh UUIDv7 `record_id` and a canonical UTC
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
