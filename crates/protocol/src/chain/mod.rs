//! The OpenTrustGraph v0.1 hash chain: records, their verification over any reader, the export
//! envelope, and linking a new record after a head ([`seal`]). The chain *file* (reads, locks,
//! appends) is the store's, `warrant_store::chain_file`.
//!
//! Spec: `opentrustgraph.md` §2 (records), §3 (envelope), §4 (hash contract), §5 (verification).
//! Verification hashes each record as parsed (the Python reference's rule, §4.5 option (a)):
//! the JSON minus its top-level `entry_hash`, canonicalised by [`crate::canonical`], without
//! Harn's typed re-serialisation. Number *text* is not kept: serde_json re-prints numbers, which
//! matches Python for integers within `u64`/`i64` and floats in 1e-4 ≤ |x| < 1e16 (the range the
//! producer profile allows), and differs outside it (`docs/conformance.md`). warrant's own records
//! follow the producer profile of §4.5, so both reference verifiers agree on them.

use crate::keys::PinnedKeys;
use std::fmt;

mod append;
mod checks;
mod envelope;
mod fields;
mod lineage;
mod verify;

pub use append::{Appended, ChainHead, check_new_record, new_record_body, seal};
pub use envelope::{export, verify_export};
pub use verify::{
    RawRecord, RecordSink, SinkRecord, Tail, Verified, verify_blocks, verify_reader, verify_records, verify_stream,
};

/// The record discriminator warrant writes (§1).
pub const RECORD_SCHEMA: &str = "opentrustgraph/v0.1";
/// Record discriminators accepted on read: v0.1, then v0 for the compatibility window (§1).
pub const ACCEPTED_RECORD_SCHEMAS: [&str; 2] = ["opentrustgraph/v0.1", "opentrustgraph/v0"];
/// Longest chain line warrant reads (1 MiB); a longer line is reported, never buffered whole.
pub const MAX_LINE_BYTES: usize = 1 << 20;
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
    /// A warrant Ed25519 signature (bad signature, a key pinned for another principal or retired
    /// by a rotation, or a document that does not match its record).
    Signature,
    /// A warrant signature by a key the verifier has not pinned (nor learned from a verified
    /// rotation in the chain): unverifiable, so the chain is not valid, but not shown to be
    /// forged; the message names the key and how to pin it.
    UnpinnedKey,
    /// The chain is shorter than, or differs at, the principal's last signed checkpoint
    /// ([`crate::checkpoint`]).
    Checkpoint,
    /// An approval of a class that `policy.toml` says needs several principals (`[cosign]`)
    /// without their signatures: the record verifies, but approves nothing. Reported by
    /// `warrant verify` of a spool, which reads its policy.
    Quorum,
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
            Check::UnpinnedKey => "unpinned_key",
            Check::Checkpoint => "checkpoint",
            Check::Quorum => "quorum",
        }
    }
}

/// One failed check. Records are numbered from 1 wherever a person reads them: record
/// N is the Nth line of `chain.jsonl` and the record whose `chain_index` is N, as editors count
/// lines and as `approve` reports the record it appended. `index` is the 0-based offset, kept in
/// the JSON report for compatibility beside `record` (1-based); `None` for envelope findings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// 0-based record offset, or `None` for the envelope ([`Finding::record`] is 1-based).
    pub index: Option<usize>,
    /// The check that failed.
    pub check: Check,
    /// What is wrong, with the reference verifiers' wording where one exists.
    pub message: String,
}

impl Finding {
    /// The record's 1-based number (its line in `chain.jsonl`, its `chain_index` when intact),
    /// or `None` for an envelope finding.
    #[must_use]
    pub fn record(&self) -> Option<usize> {
        self.index.map(|i| i + 1)
    }
}

impl serde::Serialize for Finding {
    /// `{"index": 0-based or null, "record": 1-based or null, "check", "message"}`.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct as _;
        let mut st = s.serialize_struct("Finding", 4)?;
        st.serialize_field("index", &self.index)?;
        st.serialize_field("record", &self.record())?;
        st.serialize_field("check", &self.check)?;
        st.serialize_field("message", &self.message)?;
        st.end()
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.record() {
            Some(n) => write!(f, "record {n}: [{}] {}", self.check.as_str(), self.message),
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
    /// Length in bytes of a torn final line (an append interrupted before its newline): not a
    /// record and not a finding, but reported (`warrant verify` names it; the next append moves
    /// it to a side file, see `warrant_store::chain_file::recover_torn_tail`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub torn_tail: Option<u64>,
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

fn show_opt(s: Option<&str>) -> String {
    s.map_or_else(|| "null".to_owned(), |s| format!("{s:?}"))
}

fn show_u64(n: Option<u64>) -> String {
    n.map_or_else(|| "none".to_owned(), |n| n.to_string())
}
