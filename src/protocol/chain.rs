//! The OpenTrustGraph v0.1 hash chain: records, their verification over any reader, the export
//! envelope, and linking a new record after a head ([`seal`]). The chain *file* (reads, locks,
//! appends) is the store's, [`crate::store::chain_file`].
//!
//! Spec: `opentrustgraph.md` §2 (records), §3 (envelope), §4 (hash contract), §5 (verification).
//! Verification hashes each record as parsed (the Python reference's rule, §4.5 option (a)):
//! the JSON minus its top-level `entry_hash`, canonicalised by [`crate::protocol::canonical`], without
//! Harn's typed re-serialisation. Number *text* is not kept: serde_json re-prints numbers, which
//! matches Python for integers within `u64`/`i64` and floats in 1e-4 ≤ |x| < 1e16 (the range the
//! producer profile allows), and differs outside it (`docs/conformance.md`). warrant's own records
//! follow the producer profile of §4.5, so both reference verifiers agree on them.

use crate::protocol::canonical::{self, is_sha256_string};
use crate::protocol::keys::PinnedKeys;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::fmt;
use std::io::{self, Read};

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
    /// ([`crate::protocol::checkpoint`]).
    Checkpoint,
    /// An approval of a class that `policy.toml` says needs several principals (`[cosign]`,
    /// issue 18) without their signatures: the record verifies, but approves nothing. Reported
    /// by `warrant verify` of a spool, which reads its policy.
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

/// One failed check. Records are numbered from 1 wherever a person reads them (issue 16): record
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
    /// it to a side file, see [`crate::store::chain_file::recover_torn_tail`]).
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

/// What a child needs of its parent for the v0.1 checks: its `effects_grant` and `actor_chain`.
type ParentFacts = (Vec<Value>, Option<Value>);

/// The 128-bit key of a `record_id`, for duplicates and parent lookups. A canonical UUID (36
/// characters, lower-case hex, as warrant writes them) is its own 128 bits, so that warrant's
/// UUIDv7 ids arrive in ascending key order (see [`SeenIds`]); any other id is two SipHash-1-3
/// digests with per-process random keys, so no input can be crafted to collide with another id
/// (a UUID's text and its value are one-to-one; a digest meets one only by chance, 2⁻¹²⁸).
#[derive(Clone, Default)]
struct IdKeys(std::collections::hash_map::RandomState, std::collections::hash_map::RandomState);

impl IdKeys {
    fn key(&self, id: &str) -> u128 {
        use std::hash::BuildHasher as _;
        uuid_value(id.as_bytes())
            .unwrap_or_else(|| (u128::from(self.0.hash_one(id)) << 64) | u128::from(self.1.hash_one(id)))
    }

    /// The key of a parsed record's `record_id`, `None` when that is missing or not a string.
    fn of(&self, rec: &Map<String, Value>) -> Option<u128> {
        rec.get("record_id").and_then(Value::as_str).map(|id| self.key(id))
    }
}

/// The value of a UUID in canonical text form (`8-4-4-4-12` lower-case hex digits), else `None`.
fn uuid_value(text: &[u8]) -> Option<u128> {
    /// Where the 32 digits are.
    const DIGITS: [usize; 32] = [
        0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 14, 15, 16, 17, 19, 20, 21, 22, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33,
        34, 35,
    ];
    /// Each byte's digit value, 16 when it is not a lower-case hex digit.
    const HEX: [u8; 256] = {
        let mut table = [16u8; 256];
        let mut c = 0;
        while c < 10 {
            table[b'0' as usize + c] = c as u8;
            c += 1;
        }
        let mut c = 0;
        while c < 6 {
            table[b'a' as usize + c] = 10 + c as u8;
            c += 1;
        }
        table
    };
    let text: &[u8; 36] = text.try_into().ok()?;
    if text[8] != b'-' || text[13] != b'-' || text[18] != b'-' || text[23] != b'-' {
        return None;
    }
    // Two halves, so the shifts do not form one chain of 32.
    let (mut high, mut low, mut bad) = (0u64, 0u64, 0u8);
    for k in 0..16 {
        let (h, l) = (HEX[usize::from(text[DIGITS[k]])], HEX[usize::from(text[DIGITS[k + 16]])]);
        bad |= h | l;
        high = (high << 4) | u64::from(h & 15);
        low = (low << 4) | u64::from(l & 15);
    }
    (bad < 16).then_some((u128::from(high) << 64) | u128::from(low))
}

/// The keys of the record ids seen so far. Keys that arrive above every earlier key (warrant's
/// UUIDv7 ids, nearly always) are appended to a sorted vector, 16 bytes each and no random
/// memory access; the others go to a hash set. A key above the vector's last is new: every key
/// in the set was below the vector's last when it arrived.
#[derive(Default)]
struct SeenIds {
    ascending: Vec<u128>,
    others: std::collections::HashSet<u128, foldhash::fast::RandomState>,
}

impl SeenIds {
    /// Adds `key`; false when it was already there.
    fn insert(&mut self, key: u128) -> bool {
        if self.ascending.last().is_none_or(|&last| key > last) {
            self.ascending.push(key);
            return true;
        }
        self.ascending.binary_search(&key).is_err() && self.others.insert(key)
    }

    fn contains(&self, key: u128) -> bool {
        self.ascending.binary_search(&key).is_ok() || self.others.contains(&key)
    }
}

/// What the sequential checks remember of the records seen so far: the key of each `record_id`
/// ([`IdKeys`], [`SeenIds`]) and the lineage facts of the few records that carry any (§5.2).
/// 1,000,000 records of warrant's cost about 17 MB.
#[derive(Default)]
struct Lineage {
    keys: IdKeys,
    seen: SeenIds,
    facts: HashMap<u128, ParentFacts, foldhash::fast::RandomState>,
}

impl Lineage {
    /// `Some(facts)` when a record with this id was seen (facts empty when it had none).
    fn parent(&self, id: &str) -> Option<(&[Value], Option<&Value>)> {
        let key = self.keys.key(id);
        if !self.seen.contains(key) {
            return None;
        }
        Some(self.facts.get(&key).map_or((&[][..], None), |(g, a)| (g.as_slice(), a.as_ref())))
    }
}

/// The findings of one record that need no other record, in the order reports list them
/// around the sequential checks (previous_hash, lineage, duplicates): `findings` holds the
/// groups one after another, and `ends` where the first three end. Kept small (40 bytes), since
/// one per record crosses from a worker to the sequencer.
#[derive(Default)]
struct Local {
    /// Shape and chain_index; entry_hash and the approval rule; the strict-signature rule; the
    /// Ed25519 signature.
    findings: Vec<Finding>,
    /// The end of each of the first three groups in `findings`.
    ends: [u32; 3],
    /// The signature was checked and verified.
    signed_ok: bool,
    /// The signature was checked against the verifier's pins and failed: the last finding says
    /// why. The sequencer checks it again against the pins the chain's key events added
    /// ([`crate::protocol::key_event::ChainKeys`]).
    signed_failed: bool,
}

impl Local {
    /// Ends the current group.
    fn end_group(&mut self, group: usize) {
        self.ends[group] = u32::try_from(self.findings.len()).unwrap_or(u32::MAX);
    }
}

/// Every check of record `i` that needs no other record. `computed` is its recomputed
/// `entry_hash` digest (from the canonical bytes or from the parsed value); `full` is the whole
/// parsed record, needed when its metadata has a member the checks read (`None` means it has
/// none: no approval rule, no signature).
fn check_local(
    i: usize,
    fields: &FieldRefs<'_>,
    unknown: Vec<String>,
    full: Option<&Map<String, Value>>,
    computed: &[u8; 32],
    opts: VerifyOptions<'_>,
) -> Local {
    let mut report = VerifyReport::default();
    check_record_shape(i, fields, unknown, &mut report);
    let expected_index = i as u64 + 1;
    match fields[KEY_CHAIN_INDEX].as_ref().and_then(FieldRef::as_u64) {
        Some(n) if n == expected_index => {}
        found => report.push(
            Some(i),
            Check::ChainIndex,
            format!("expected chain_index {expected_index}, found {}", show_u64(found)),
        ),
    }
    let mut local = Local { findings: std::mem::take(&mut report.findings), ..Local::default() };
    local.end_group(0);
    let recorded = match &fields[KEY_ENTRY_HASH] {
        Some(FieldRef::Str(s)) => Some(&**s),
        _ => None,
    };
    if recorded.map(str::as_bytes) != Some(&canonical::prefixed_bytes(computed)[..]) {
        local.findings.push(Finding {
            index: Some(i),
            check: Check::EntryHash,
            message: format!(
                "entry_hash mismatch; recomputed {}, stored {}",
                canonical::prefixed(computed),
                show_opt(recorded)
            ),
        });
    }
    let Some(full) = full else {
        local.end_group(1);
        local.end_group(2);
        return local;
    };
    report.findings = std::mem::take(&mut local.findings);
    check_approval(i, full, &mut report);
    local.findings = report.findings;
    local.end_group(1);
    let meta = full.get("metadata");
    let warrant_signed = crate::protocol::decision::is_warrant_signed(meta);
    let has_signatures = meta
        .and_then(|m| m.get("approval"))
        .and_then(|a| a.get("signatures"))
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    if opts.strict_signatures && has_signatures && !warrant_signed {
        local.findings.push(Finding {
            index: Some(i),
            check: Check::Signature,
            message: "approval signatures that are not warrant decisions cannot be verified against pinned keys".into(),
        });
    }
    local.end_group(2);
    if let Some(pinned) = opts.pinned.filter(|_| warrant_signed) {
        match crate::protocol::decision::check_record_signature(full, pinned) {
            Ok(ok) => local.signed_ok = ok,
            Err(message) => {
                local.findings.push(Finding { index: Some(i), check: signature_check(full, pinned), message });
                local.signed_failed = true;
            }
        }
    }
    local
}

/// The check a failed warrant signature of `rec` counts against: [`Check::UnpinnedKey`] when its
/// first signature names a key `pinned` does not hold, else [`Check::Signature`].
fn signature_check(rec: &Map<String, Value>, pinned: &PinnedKeys) -> Check {
    match crate::protocol::key_event::first_signer(rec) {
        Some((fp, _)) if pinned.get(fp).is_none() => Check::UnpinnedKey,
        _ => Check::Signature,
    }
}

/// The checks that run in record order: `previous_hash` against the prior record's recorded
/// `entry_hash`, lineage, duplicate `record_id`s, and the trust the chain's key events add
/// (rotations and renames, [`crate::protocol::key_event`]).
#[derive(Default)]
struct Sequencer<'a> {
    report: VerifyReport,
    previous: Option<String>,
    lineage: Lineage,
    /// The verifier's pins (`None`: signatures are not checked).
    pinned: Option<&'a PinnedKeys>,
    /// What the verified key events so far added to them.
    chain_keys: crate::protocol::key_event::ChainKeys,
}

impl Sequencer<'_> {
    fn unparsable(&mut self, i: usize, message: String) {
        self.report.total = i + 1;
        self.report.push(Some(i), Check::Parse, message);
        self.previous = None;
    }

    /// Record `i`: its fields, the whole record when its metadata matters (see
    /// [`check_local`]), its local findings, and the key of its `record_id` when that is a
    /// string ([`IdKeys::key`], computed where the record was checked).
    fn record(
        &mut self,
        i: usize,
        rec: &impl Fields,
        full: Option<&Map<String, Value>>,
        local: Local,
        key: Option<u128>,
    ) {
        let report = &mut self.report;
        report.total = i + 1;
        let [head, mid, strict] = local.ends.map(|e| e as usize);
        let mut findings = local.findings.into_iter();
        report.findings.extend(findings.by_ref().take(head));
        let recorded_prev = rec.str_field("previous_hash");
        if recorded_prev.as_deref() != self.previous.as_deref() {
            report.push(
                Some(i),
                Check::PreviousHash,
                format!(
                    "previous_hash mismatch; expected {}, found {}",
                    show_opt(self.previous.as_deref()),
                    show_opt(recorded_prev.as_deref())
                ),
            );
        }
        report.findings.extend(findings.by_ref().take(mid - head));
        if let Some(full) = full {
            check_lineage(i, full, &self.lineage, report);
        }
        report.findings.extend(findings.by_ref().take(strict - mid));
        if let Some(key) = key {
            if !self.lineage.seen.insert(key) {
                let id = rec.str_field("record_id").unwrap_or_default();
                report.push(Some(i), Check::RecordSchema, format!("duplicate record_id {id:?}"));
            }
            let meta = full.and_then(|f| f.get("metadata")).and_then(Value::as_object);
            let grant = effects(meta.and_then(|m| m.get("effects_grant")));
            let actor = meta.and_then(|m| m.get("actor_chain")).cloned();
            if !grant.is_empty() || actor.is_some() {
                self.lineage.facts.insert(key, (grant, actor));
            }
        }
        report.findings.extend(findings);
        let signed_ok = match full {
            Some(full) => self.key_checks(i, full, local.signed_ok, local.signed_failed),
            None => local.signed_ok,
        };
        let report = &mut self.report;
        report.signatures_verified += usize::from(signed_ok);
        // One buffer for the head hash, reused record after record.
        match (rec.str_field("entry_hash"), &mut self.previous) {
            (Some(h), Some(prev)) => {
                prev.clear();
                prev.push_str(&h);
            }
            (h, prev) => *prev = h.map(std::borrow::Cow::into_owned),
        }
    }

    /// The signature checks that depend on the chain's key events, for record `i` (whose local
    /// findings are already in the report, its failed signature last): a signature that failed
    /// against the verifier's pins is checked again against the pins the events so far added; a
    /// verified signature by a retired key is refused; a verified key event is applied. Returns
    /// whether the record's signature verified.
    fn key_checks(&mut self, i: usize, full: &Map<String, Value>, signed_ok: bool, signed_failed: bool) -> bool {
        let Some(pinned) = self.pinned else { return signed_ok };
        let mut ok = signed_ok;
        if let Some(effective) = self.chain_keys.effective()
            && signed_failed
        {
            let last = self.report.findings.last_mut().filter(|f| f.index == Some(i));
            match (crate::protocol::decision::check_record_signature(full, effective), last) {
                (Ok(verified), Some(_)) => {
                    self.report.findings.pop();
                    ok = verified;
                }
                (Err(message), Some(last)) => {
                    last.check = signature_check(full, effective);
                    last.message = message;
                }
                _ => {}
            }
        }
        if !ok {
            return false;
        }
        if !self.chain_keys.is_empty()
            && let Some((fp, _)) = crate::protocol::key_event::first_signer(full)
            && let Some(at) = self.chain_keys.retired_at(fp)
        {
            self.report.push(
                Some(i),
                Check::Signature,
                format!(
                    "key {fp} was retired by the key rotation at chain_index {}: records after it must be signed with the new key",
                    at + 1
                ),
            );
            return false;
        }
        // An announcement counts only from a record with no finding at all (as decisions do).
        let clean = self.report.findings.last().is_none_or(|f| f.index != Some(i));
        if let Some(event) = crate::protocol::key_event::KeyEvent::of_record(full).filter(|_| clean) {
            self.chain_keys.apply(&event, i, pinned);
        }
        true
    }

    fn finish(mut self) -> VerifyReport {
        self.report.root_hash = self.previous;
        self.report
    }
}

/// Verifies a stream of parsed records: the record contract, `chain_index`, `entry_hash`,
/// `previous_hash` linkage against the *recorded* prior hash, the approval rule, the v0.1
/// lineage checks, and (with `opts.pinned`) warrant's Ed25519 signatures. One thread; chains in
/// files go through the parallel [`verify_reader`] instead.
///
/// Memory stays flat: each record is dropped once checked, except for a 128-bit key per
/// `record_id` and the lineage metadata of records that carry any. `on_record` sees each
/// object record once, in order.
pub fn verify_stream<R, I, F>(lines: I, opts: VerifyOptions<'_>, mut on_record: F) -> VerifyReport
where
    R: std::borrow::Borrow<Value>,
    I: IntoIterator<Item = Line<R>>,
    F: FnMut(usize, &Map<String, Value>),
{
    let mut seq = Sequencer { pinned: opts.pinned, ..Sequencer::default() };
    for (i, line) in lines.into_iter().enumerate() {
        let rec = match line {
            Line::Unparsable(message) => {
                seq.unparsable(i, message);
                continue;
            }
            Line::Record(r) => r,
        };
        let Value::Object(map) = rec.borrow() else {
            seq.report.total = i + 1;
            seq.report.push(Some(i), Check::RecordSchema, "record is not a JSON object");
            seq.previous = None;
            continue;
        };
        let local = check_local(
            i,
            &map.field_refs(),
            map.unknown_keys(),
            Some(map),
            &canonical::canonical_digest_without(map, "entry_hash"),
            opts,
        );
        let key = seq.lineage.keys.of(map);
        seq.record(i, map, Some(map), local, key);
        on_record(i, map);
    }
    seq.finish()
}

/// Metadata members the checks read (approval rule, signatures, lineage): a record whose
/// metadata has any of them is parsed whole.
const CHECKED_METADATA: [&str; 10] = [
    "approval",
    "warrant_decision",
    "warrant_control",
    "warrant_key",
    "warrant_grant",
    "reason",
    "parent_record_id",
    "effects_used",
    "effects_grant",
    "actor_chain",
];

/// One line of a chain file as the reader hands it to a worker.
enum RawLine {
    /// The line's bytes (without the newline) within the block.
    Bytes(std::ops::Range<usize>),
    /// A line longer than [`MAX_LINE_BYTES`], skipped.
    TooLong,
}

/// A block of whole lines read from a chain file.
struct Block {
    seq: usize,
    first_index: usize,
    data: Vec<u8>,
    lines: Vec<RawLine>,
}

/// A record checked on a worker.
enum Checked {
    /// A parsed record: the whole record when its metadata matters or it is not canonical,
    /// else (when the caller wants records) its top-level fields and the kept metadata members;
    /// the key of its `record_id` ([`IdKeys::key`]).
    Parsed { map: Map<String, Value>, full: bool, local: Local, key: Option<u128> },
    /// A canonical record checked from its bytes: where the string values of its
    /// `previous_hash`, `entry_hash` and `record_id` (what the sequential checks read; `None`
    /// when missing or not a string) were copied in the block's id text, and its id's key.
    Raw { ids: [Option<std::ops::Range<usize>>; 3], local: Local, key: Option<u128> },
    /// Why the line is not a record.
    Unparsable(String),
}

/// A partial record from a canonical line: every top-level field, with only the `keep`
/// members of its metadata.
fn partial_map(line: &[u8], scan: &canonical::scan::Scan, keep: &[&str]) -> Result<Map<String, Value>, String> {
    let mut map = Map::new();
    for (k, m) in scan.members.iter().enumerate() {
        let key = String::from_utf8_lossy(&line[m.key.clone()]).into_owned();
        let value = if key == "metadata" {
            let mut meta = Map::new();
            for c in scan.children(k) {
                let name = &line[c.key.clone()];
                if keep.iter().any(|w| w.as_bytes() == name) {
                    let v = canonical::parse_strict(&line[c.value.clone()])?;
                    meta.insert(String::from_utf8_lossy(name).into_owned(), v);
                }
            }
            Value::Object(meta)
        } else {
            canonical::parse_strict(&line[m.value.clone()])?
        };
        map.insert(key, value);
    }
    Ok(map)
}

/// Checks line `i`. A canonical line (warrant's own) is hashed from its bytes, and unless its
/// metadata has a member the checks read, it is checked without being parsed (its ids are
/// copied to `ids`, the block's id text); with `keep`, its top-level fields and the `keep`
/// members of its metadata are parsed for the caller. Anything else is parsed whole and
/// re-serialised (§4.1).
fn check_line(
    i: usize,
    line: &[u8],
    ids: &mut String,
    scan: &mut canonical::scan::Scan,
    keep: Option<&[&str]>,
    keys: &IdKeys,
    opts: VerifyOptions<'_>,
) -> Checked {
    if let Ok(text) = simdutf8::basic::from_utf8(line)
        && canonical::scan::scan_object_str(text, scan)
    {
        let fields = RawFields::new(text, scan);
        let digest = match fields.entry_hash {
            Some(k) => scan.digest_without(line, k),
            None => sha2::Digest::finalize(<sha2::Sha256 as sha2::Digest>::new_with_prefix(line)).into(),
        };
        let plain_metadata = fields.metadata.is_some_and(|m| {
            line[scan.members[m].value.start] == b'{'
                && !scan.children(m).any(|c| CHECKED_METADATA.iter().any(|k| k.as_bytes() == &line[c.key.clone()]))
        });
        if plain_metadata {
            let refs = fields.field_refs();
            let local = check_local(i, &refs, fields.unknown, None, &digest, opts);
            return match keep {
                None => {
                    let mut at = |k: usize| match &refs[k] {
                        Some(FieldRef::Str(v)) => {
                            let start = ids.len();
                            ids.push_str(v);
                            Some(start..ids.len())
                        }
                        _ => None,
                    };
                    let found = [at(KEY_PREVIOUS_HASH), at(KEY_ENTRY_HASH), at(KEY_RECORD_ID)];
                    let key = found[2].clone().map(|r| keys.key(&ids[r]));
                    Checked::Raw { ids: found, local, key }
                }
                Some(keep) => match partial_map(line, scan, keep) {
                    Ok(map) => Checked::Parsed { key: keys.of(&map), map, full: false, local },
                    Err(e) => Checked::Unparsable(format!("line is not JSON: {e}")),
                },
            };
        }
        return match canonical::parse_strict(line) {
            Ok(Value::Object(map)) => {
                let local = check_local(i, &map.field_refs(), map.unknown_keys(), Some(&map), &digest, opts);
                Checked::Parsed { key: keys.of(&map), map, full: true, local }
            }
            Ok(_) => Checked::Unparsable("line is not a JSON object".into()),
            Err(e) => Checked::Unparsable(format!("line is not JSON: {e}")),
        };
    }
    match canonical::parse_strict(line) {
        Ok(Value::Object(map)) => {
            let digest = canonical::canonical_digest_without(&map, "entry_hash");
            let local = check_local(i, &map.field_refs(), map.unknown_keys(), Some(&map), &digest, opts);
            Checked::Parsed { key: keys.of(&map), map, full: true, local }
        }
        Ok(_) => Checked::Unparsable("line is not a JSON object".into()),
        Err(e) => Checked::Unparsable(format!("line is not JSON: {e}")),
    }
}

/// Bytes read per block handed to a worker.
const BLOCK_BYTES: usize = 1 << 20;

/// Reads `reader` into blocks of whole lines. Returns the length of a torn final line (bytes
/// after the last newline), if any. Blocks are read into buffers the workers hand back through
/// `recycled` when there is one (a fresh megabyte per block costs page faults that take longer
/// than hashing it), and are not zeroed first.
fn read_blocks<R: Read>(
    mut reader: R,
    first_index: usize,
    tx: &std::sync::mpsc::SyncSender<Block>,
    window: &std::sync::mpsc::Receiver<()>,
    recycled: &std::sync::mpsc::Receiver<Vec<u8>>,
    progress: &std::sync::atomic::AtomicU64,
) -> io::Result<Option<u64>> {
    let mut carry: Vec<u8> = Vec::new();
    let (mut seq, mut index, mut skipping) = (0, first_index, false);
    loop {
        let mut data = recycled.try_recv().unwrap_or_default();
        data.clear();
        data.extend_from_slice(&carry);
        carry.clear();
        data.reserve(BLOCK_BYTES);
        // Up to BLOCK_BYTES more, in as many reads as that takes (or to the end of the input).
        let n = (&mut reader).take(BLOCK_BYTES as u64).read_to_end(&mut data)?;
        progress.fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
        if n == 0 {
            if skipping {
                // An over-long final line without a newline was already reported.
                return Ok(None);
            }
            return Ok((!data.is_empty()).then_some(data.len() as u64));
        }
        let mut lines = Vec::new();
        let mut line_start = 0;
        for end in memchr::memchr_iter(b'\n', &data) {
            if skipping {
                skipping = false;
            } else if end - line_start > MAX_LINE_BYTES {
                lines.push(RawLine::TooLong);
            } else {
                lines.push(RawLine::Bytes(line_start..end));
            }
            line_start = end + 1;
        }
        let rest = data.len() - line_start;
        if skipping || rest > MAX_LINE_BYTES {
            if !skipping {
                lines.push(RawLine::TooLong);
                skipping = true;
            }
        } else {
            carry.extend_from_slice(&data[line_start..]);
        }
        data.truncate(line_start);
        if !lines.is_empty() {
            let count = lines.len();
            // At most a window of blocks between this reader and the sequencer, however unevenly
            // the workers progress: memory stays flat.
            if window.recv().is_err() || tx.send(Block { seq, first_index: index, data, lines }).is_err() {
                return Ok(None);
            }
            seq += 1;
            index += count;
        }
    }
}

/// Verifies a chain read from `reader` (JSON lines) with the checks of [`verify_stream`], in
/// parallel: one thread reads blocks of lines, one worker per core (at most 8) checks records
/// (canonical lines are hashed straight from their bytes, see [`canonical::scan`]), and this
/// thread runs the sequential checks in order. `progress` counts the bytes read so far (for a
/// progress bar). [`crate::store::chain_file::verify_tail_with`] runs the same verifier on a spool's chain after a
/// verified prefix, handing each record (with only the `keep` members of metadata the checks do
/// not read) to a callback.
///
/// A final line without a newline is a torn append, not a record: its length is returned in
/// [`VerifyReport::torn_tail`] and it makes no finding.
///
/// # Errors
/// I/O errors of `reader`.
pub fn verify_reader<R: Read + Send>(
    reader: R,
    opts: VerifyOptions<'_>,
    progress: &std::sync::atomic::AtomicU64,
) -> io::Result<VerifyReport> {
    verify_blocks::<R, fn(usize, &Map<String, Value>)>(reader, opts, progress, None, &Verified::default())
        .map(|(report, _)| report)
}

/// Verifies the lines `reader` yields as the records that follow `prefix` (starting from its key
/// events; returned with those of the lines): the first line is
/// record `prefix.records` (0-based) and must link to `prefix.head_hash`.
pub fn verify_blocks<R, F>(
    reader: R,
    opts: VerifyOptions<'_>,
    progress: &std::sync::atomic::AtomicU64,
    mut sink: Option<(&[&str], F)>,
    prefix: &Verified,
) -> io::Result<(VerifyReport, crate::protocol::key_event::ChainKeys)>
where
    R: Read + Send,
    F: FnMut(usize, &Map<String, Value>),
{
    let workers = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get).clamp(1, 8);
    let keep = sink.as_ref().map(|(k, _)| *k);
    let first = usize::try_from(prefix.records).unwrap_or(usize::MAX);
    let mut seq = Sequencer {
        previous: prefix.head_hash.clone(),
        pinned: opts.pinned,
        chain_keys: prefix.keys.clone(),
        ..Sequencer::default()
    };
    seq.report.total = first;
    let torn = std::thread::scope(|scope| {
        let (block_tx, block_rx) = std::sync::mpsc::sync_channel::<Block>(workers * 2);
        let block_rx = std::sync::Arc::new(std::sync::Mutex::new(block_rx));
        let (done_tx, done_rx) = std::sync::mpsc::sync_channel::<(usize, String, Vec<Checked>)>(workers * 2);
        let (recycle_tx, recycle_rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(workers * 2 + 2);
        for _ in 0..workers {
            let (rx, tx, recycle_tx) = (std::sync::Arc::clone(&block_rx), done_tx.clone(), recycle_tx.clone());
            let keys = seq.lineage.keys.clone();
            scope.spawn(move || {
                let mut scan = canonical::scan::Scan::default();
                loop {
                    let block = match rx.lock() {
                        Ok(guard) => guard.recv(),
                        Err(_) => return,
                    };
                    let Ok(block) = block else { return };
                    let mut ids = String::new();
                    let checked = block
                        .lines
                        .iter()
                        .enumerate()
                        .map(|(k, line)| match line {
                            RawLine::TooLong => Checked::Unparsable(format!("line longer than {MAX_LINE_BYTES} bytes")),
                            RawLine::Bytes(r) => check_line(
                                block.first_index + k,
                                &block.data[r.clone()],
                                &mut ids,
                                &mut scan,
                                keep,
                                &keys,
                                opts,
                            ),
                        })
                        .collect();
                    // The reader reuses the buffer (or it is dropped when enough wait).
                    let _ = recycle_tx.try_send(block.data);
                    if tx.send((block.seq, ids, checked)).is_err() {
                        return;
                    }
                }
            });
        }
        drop(done_tx);
        // One block per worker being checked, one more queued for each, and two for the reader
        // and the sequencer: each block is 1 MiB of lines and, when the caller keeps metadata,
        // about as much again of parsed records, so the window bounds the verifier's memory.
        let window = workers * 2 + 2;
        let (window_tx, window_rx) = std::sync::mpsc::sync_channel::<()>(window);
        for _ in 0..window {
            let _ = window_tx.send(());
        }
        let reader_thread =
            scope.spawn(move || read_blocks(reader, first, &block_tx, &window_rx, &recycle_rx, progress));
        let mut pending = std::collections::BTreeMap::new();
        let (mut next, mut index) = (0, first);
        for (block_seq, id_text, checked) in done_rx {
            pending.insert(block_seq, (id_text, checked));
            while let Some((id_text, checked)) = pending.remove(&next) {
                for c in checked {
                    match c {
                        Checked::Unparsable(message) => seq.unparsable(index, message),
                        Checked::Parsed { map, full, local, key } => {
                            seq.record(index, &map, full.then_some(&map), local, key);
                            if let Some((_, on_record)) = &mut sink {
                                on_record(index, &map);
                            }
                        }
                        Checked::Raw { ids, local, key } => {
                            seq.record(index, &IdFields { text: &id_text, ids }, None, local, key);
                        }
                    }
                    index += 1;
                }
                next += 1;
                let _ = window_tx.send(());
            }
        }
        drop(window_tx);
        reader_thread.join().unwrap_or_else(|_| Err(io::Error::other("the chain reader panicked")))
    })?;
    let keys = std::mem::take(&mut seq.chain_keys);
    let mut report = seq.finish();
    report.torn_tail = torn;
    Ok((report, keys))
}

/// Checks one record before it is appended: its shape, the approval rule and (with `pinned`) its
/// signature. Linkage is not checked here (it is set by [`seal`]). An append that would leave
/// the chain failing verification is refused by its callers, so no input can poison the chain.
#[must_use]
pub fn check_new_record(rec: &Map<String, Value>, pinned: Option<&PinnedKeys>) -> Vec<Finding> {
    let mut report = VerifyReport::default();
    check_record_shape(0, &rec.field_refs(), rec.unknown_keys(), &mut report);
    check_approval(0, rec, &mut report);
    if let Some(pinned) = pinned
        && let Err(message) = crate::protocol::decision::check_record_signature(rec, pinned)
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

/// A top-level field of a record as the shape checks read it.
enum FieldRef<'a> {
    /// A JSON string.
    Str(std::borrow::Cow<'a, str>),
    /// `null`.
    Null,
    /// A non-negative integer within `u64`.
    U64(u64),
    /// Any other number.
    Number(f64),
    /// An object.
    Object,
    /// Anything else (boolean, array, unparsable text).
    Other,
}

impl FieldRef<'_> {
    fn as_u64(&self) -> Option<u64> {
        match self {
            FieldRef::U64(n) => Some(*n),
            _ => None,
        }
    }
}

/// A record's top-level fields as the checks read them, in [`RECORD_KEYS`] order (`None` when
/// missing).
type FieldRefs<'a> = [Option<FieldRef<'a>>; 14];

/// The top-level fields of a record as the checks read them: parsed (a `Map`), or the three
/// the sequential checks read of a canonical line ([`IdFields`]). A canonical line's fields come
/// straight from its bytes ([`RawFields::field_refs`]).
trait Fields {
    /// The field `key`, or `None` when it is missing.
    fn field(&self, key: &str) -> Option<FieldRef<'_>>;
    /// The top-level keys that are not among [`RECORD_KEYS`], in order.
    fn unknown_keys(&self) -> Vec<String>;

    /// Every one of [`RECORD_KEYS`], each read once.
    fn field_refs(&self) -> FieldRefs<'_> {
        std::array::from_fn(|k| self.field(RECORD_KEYS[k]))
    }

    fn str_field(&self, key: &str) -> Option<std::borrow::Cow<'_, str>> {
        match self.field(key)? {
            FieldRef::Str(s) => Some(s),
            _ => None,
        }
    }
}

impl Fields for Map<String, Value> {
    fn field(&self, key: &str) -> Option<FieldRef<'_>> {
        Some(match self.get(key)? {
            Value::String(s) => FieldRef::Str(std::borrow::Cow::Borrowed(s)),
            Value::Null => FieldRef::Null,
            Value::Number(n) => {
                n.as_u64().map_or_else(|| FieldRef::Number(n.as_f64().unwrap_or(f64::NAN)), FieldRef::U64)
            }
            Value::Object(_) => FieldRef::Object,
            _ => FieldRef::Other,
        })
    }

    fn unknown_keys(&self) -> Vec<String> {
        self.keys().filter(|k| !RECORD_KEYS.contains(&k.as_str())).cloned().collect()
    }
}

/// The top-level fields of a canonical line, read from its bytes without building a `Map`:
/// the value range of each of the [`RECORD_KEYS`] present.
struct RawFields<'a> {
    line: &'a str,
    /// Value ranges of the [`RECORD_KEYS`], by position in that list.
    at: [Option<std::ops::Range<usize>>; 14],
    /// Member index (in the scan) of `entry_hash` and of `metadata`.
    entry_hash: Option<usize>,
    metadata: Option<usize>,
    unknown: Vec<String>,
}

/// Positions in [`RECORD_KEYS`].
const KEY_SCHEMA: usize = 0;
const KEY_RECORD_ID: usize = 1;
const KEY_AGENT: usize = 2;
const KEY_ACTION: usize = 3;
const KEY_APPROVER: usize = 4;
const KEY_OUTCOME: usize = 5;
const KEY_TRACE_ID: usize = 6;
const KEY_AUTONOMY_TIER: usize = 7;
const KEY_TIMESTAMP: usize = 8;
const KEY_COST_USD: usize = 9;
const KEY_CHAIN_INDEX: usize = 10;
const KEY_PREVIOUS_HASH: usize = 11;
const KEY_ENTRY_HASH: usize = 12;
const KEY_METADATA: usize = 13;

/// The position of `key` in [`RECORD_KEYS`] (one comparison by length and bytes, not fourteen).
fn record_key_index(key: &[u8]) -> Option<usize> {
    Some(match key {
        b"schema" => 0,
        b"record_id" => 1,
        b"agent" => 2,
        b"action" => 3,
        b"approver" => 4,
        b"outcome" => 5,
        b"trace_id" => 6,
        b"autonomy_tier" => 7,
        b"timestamp" => 8,
        b"cost_usd" => 9,
        b"chain_index" => 10,
        b"previous_hash" => 11,
        b"entry_hash" => 12,
        b"metadata" => 13,
        _ => return None,
    })
}

impl<'a> RawFields<'a> {
    /// The fields of `line` (valid UTF-8 that [`canonical::scan::scan_object`] accepted).
    fn new(line: &'a str, scan: &canonical::scan::Scan) -> Self {
        let mut at: [Option<std::ops::Range<usize>>; 14] = Default::default();
        let (mut entry_hash, mut metadata, mut unknown) = (None, None, Vec::new());
        for (n, m) in scan.members.iter().enumerate() {
            let key = &line.as_bytes()[m.key.clone()];
            match record_key_index(key) {
                Some(k) => {
                    at[k] = Some(m.value.clone());
                    match k {
                        KEY_ENTRY_HASH => entry_hash = Some(n),
                        KEY_METADATA => metadata = Some(n),
                        _ => {}
                    }
                }
                None => unknown.push(String::from_utf8_lossy(key).into_owned()),
            }
        }
        Self { line, at, entry_hash, metadata, unknown }
    }

    /// Every one of [`RECORD_KEYS`], each read once from its value's text.
    fn field_refs(&self) -> FieldRefs<'a> {
        let line = self.line;
        std::array::from_fn(|k| self.at[k].clone().map(|r| raw_field(&line[r])))
    }
}

/// A field's value from its canonical JSON text.
fn raw_field(text: &str) -> FieldRef<'_> {
    let bytes = text.as_bytes();
    match bytes.first() {
        // The delimiters are ASCII, so the slice is on character boundaries.
        // The first `"` or `\\` after the opening quote is the closing one: no escapes.
        Some(b'"') if canonical::scan::find_quote_or_backslash(bytes, 1) == Some(bytes.len() - 1) => {
            FieldRef::Str(std::borrow::Cow::Borrowed(&text[1..text.len() - 1]))
        }
        Some(b'"') => match canonical::parse_strict(bytes) {
            Ok(Value::String(s)) => FieldRef::Str(std::borrow::Cow::Owned(s)),
            _ => FieldRef::Other,
        },
        Some(b'n') => FieldRef::Null,
        Some(b'{') => FieldRef::Object,
        Some(b'0'..=b'9') if bytes.iter().all(u8::is_ascii_digit) => {
            text.parse().map_or(FieldRef::Other, FieldRef::U64)
        }
        Some(b'-' | b'0'..=b'9') => text.parse::<f64>().map_or(FieldRef::Other, FieldRef::Number),
        _ => FieldRef::Other,
    }
}

/// The three fields the sequential checks read of a canonical record, by the ranges of their
/// string values in a block's id text: `previous_hash`, `entry_hash`, `record_id` (`None` when
/// missing or not a string, which the sequential checks treat alike).
struct IdFields<'a> {
    text: &'a str,
    ids: [Option<std::ops::Range<usize>>; 3],
}

impl Fields for IdFields<'_> {
    fn field(&self, key: &str) -> Option<FieldRef<'_>> {
        let k = ["previous_hash", "entry_hash", "record_id"].iter().position(|n| *n == key)?;
        self.ids[k].clone().map(|r| FieldRef::Str(std::borrow::Cow::Borrowed(&self.text[r])))
    }

    fn unknown_keys(&self) -> Vec<String> {
        Vec::new()
    }
}

/// The v0.1 record schema as explicit checks (§2.1), so reports name the field. `f` holds the
/// record's [`RECORD_KEYS`] fields; `unknown` its other top-level keys.
fn check_record_shape(i: usize, f: &FieldRefs<'_>, unknown: Vec<String>, report: &mut VerifyReport) {
    let mut bad = |msg: String| report.push(Some(i), Check::RecordSchema, msg);
    let str_at = |k: usize| match &f[k] {
        Some(FieldRef::Str(s)) => Some(&**s),
        _ => None,
    };
    match str_at(KEY_SCHEMA) {
        Some(s) if ACCEPTED_RECORD_SCHEMAS.contains(&s) => {}
        Some(s) => bad(format!("unsupported record schema {s:?}")),
        None => bad("missing string field `schema`".into()),
    }
    for k in [KEY_RECORD_ID, KEY_AGENT, KEY_ACTION, KEY_TRACE_ID] {
        if str_at(k).is_none_or(|s| s.trim().is_empty()) {
            bad(format!("`{}` must be a non-empty string", RECORD_KEYS[k]));
        }
    }
    match &f[KEY_APPROVER] {
        None | Some(FieldRef::Null) => {}
        Some(FieldRef::Str(s)) if !s.is_empty() => {}
        Some(_) => bad("`approver` must be null or a non-empty string".into()),
    }
    if !str_at(KEY_OUTCOME).is_some_and(|s| OUTCOMES.contains(&s)) {
        bad(format!("`outcome` must be one of {OUTCOMES:?}"));
    }
    if !str_at(KEY_AUTONOMY_TIER).is_some_and(|s| TIERS.contains(&s)) {
        bad(format!("`autonomy_tier` must be one of {TIERS:?}"));
    }
    if str_at(KEY_TIMESTAMP).is_none_or(|s| crate::protocol::clock::parse_rfc3339(s).is_none()) {
        bad("`timestamp` must be an RFC 3339 date-time".into());
    }
    match &f[KEY_COST_USD] {
        None | Some(FieldRef::Null | FieldRef::U64(_)) => {}
        Some(FieldRef::Number(x)) if *x >= 0.0 => {}
        Some(_) => bad("`cost_usd` must be null or a number >= 0".into()),
    }
    if f[KEY_CHAIN_INDEX].as_ref().and_then(FieldRef::as_u64).is_none_or(|n| n < 1) {
        bad("`chain_index` must be an integer >= 1".into());
    }
    match &f[KEY_PREVIOUS_HASH] {
        Some(FieldRef::Null) => {}
        Some(FieldRef::Str(s)) if is_sha256_string(s) => {}
        Some(_) => bad("`previous_hash` must be null or sha256:<64 hex>".into()),
        None => bad("missing field `previous_hash`".into()),
    }
    if !str_at(KEY_ENTRY_HASH).is_some_and(is_sha256_string) {
        bad("`entry_hash` must be sha256:<64 lower-case hex>".into());
    }
    if !matches!(f[KEY_METADATA], Some(FieldRef::Object)) {
        bad("`metadata` must be an object".into());
    }
    for key in unknown {
        bad(format!("unknown top-level field `{key}`"));
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
                        .is_some_and(|s| crate::protocol::clock::parse_rfc3339(s).is_some());
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
    let Some((grant, parent_actor)) = lineage.parent(parent_id) else {
        if !used.is_empty() || actor.is_some() {
            report.push(Some(i), Check::Lineage, format!("parent_record_id {parent_id:?} not found in chain"));
        }
        return;
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
            if c.get("generated_at")
                .and_then(Value::as_str)
                .is_none_or(|s| crate::protocol::clock::parse_rfc3339(s).is_none())
            {
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

/// A prefix of a spool's chain known to verify: its first `records` records, `bytes` long
/// (through the last one's newline), the last one's `entry_hash` being `head_hash`. Where it
/// comes from is the caller's trust decision: the console's own last verification, or a
/// checkpoint the principal signed under the chain's lock after verifying the chain
/// (`docs/spool.md`, Incremental verification). [`crate::store::chain_file::verify_tail_with`] verifies only what follows.
///
/// The default is the empty prefix (0 records, 0 bytes): verifying the tail after it is a full
/// verification.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verified {
    /// Records in the prefix (the last one's `chain_index`).
    pub records: u64,
    /// Length of the prefix in bytes, through the last record's newline.
    pub bytes: u64,
    /// The last record's `entry_hash` (`None` for the empty prefix).
    pub head_hash: Option<String>,
    /// What the prefix's key events (rotations, renames) added to the pins: the verification of
    /// the tail starts from it.
    pub keys: crate::protocol::key_event::ChainKeys,
}

impl Verified {
    /// The prefix a signed checkpoint describes (see [`crate::protocol::checkpoint::Checkpoint`]), without
    /// its key events (the caller adds those it scanned, [`crate::protocol::key_event::ChainKeys::apply`]).
    #[must_use]
    pub fn of_checkpoint(cp: &crate::protocol::checkpoint::Checkpoint) -> Self {
        Self {
            records: cp.records,
            bytes: cp.bytes,
            head_hash: Some(cp.head_hash.clone()),
            keys: crate::protocol::key_event::ChainKeys::default(),
        }
    }
}

/// What [`crate::store::chain_file::verify_tail_with`] found after a verified prefix.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tail {
    /// The report: `total` and `root_hash` are the whole chain's (prefix and tail), findings are
    /// the tail's, with global record indexes.
    pub report: VerifyReport,
    /// The chain's length in bytes through the last complete line read (a torn final line is
    /// not counted).
    pub bytes: u64,
    /// What the key events of the prefix and the tail added to the pins, as of the last record
    /// (carried into the next prefix, [`Tail::verified`]).
    pub keys: crate::protocol::key_event::ChainKeys,
}

impl Tail {
    /// The prefix this tail extends the old one to, when the tail verified (no finding); a torn
    /// final line is not part of it.
    #[must_use]
    pub fn verified(&self) -> Option<Verified> {
        self.report.is_valid().then(|| Verified {
            records: self.report.total as u64,
            bytes: self.bytes,
            head_hash: self.report.root_hash.clone(),
            keys: self.keys.clone(),
        })
    }
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
/// `entry_hash` by the hash contract (§4.1). Pure; [`crate::store::chain_file::append`] uses it under the lock, and
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
/// set by [`crate::store::chain_file::append`], with explicit `null`s, a fresh UUIDv7 `record_id` and a canonical UTC
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn uuid_value_reads_exactly_the_canonical_lower_case_form() {
        for _ in 0..100 {
            let id = uuid::Uuid::now_v7();
            assert_eq!(uuid_value(id.to_string().as_bytes()), Some(id.as_u128()));
            let id = uuid::Uuid::new_v4();
            assert_eq!(uuid_value(id.to_string().as_bytes()), Some(id.as_u128()));
        }
        let text = "01a1fe9e-0e46-75d4-8ada-5dadc4c5d31e";
        assert_eq!(uuid_value(text.as_bytes()), Some(0x01a1_fe9e_0e46_75d4_8ada_5dad_c4c5_d31e));
        for other in [
            "01A1FE9E-0E46-75D4-8ADA-5DADC4C5D31E", // another string, so another id
            "01a1fe9e-0e46-75d4-8ada-5dadc4c5d31",
            "01a1fe9e-0e46-75d4-8ada-5dadc4c5d31e0",
            "01a1fe9e00e46-75d4-8ada-5dadc4c5d31e",
            "01a1fe9e-0e46-75d4-8ada-5dadc4c5d3-e",
            "01a1fe9e-0e46-75d4-8ada-5dadc4c5d3g1",
            "{1a1fe9e-0e46-75d4-8ada-5dadc4c5d31e",
            "01a1fe9e0e4675d48ada5dadc4c5d31e",
        ] {
            assert_eq!(uuid_value(other.as_bytes()), None, "{other}");
        }
        // Other ids are keyed by digest, and different strings get different keys.
        let keys = IdKeys::default();
        assert_ne!(keys.key(text), keys.key(&text.to_uppercase()));
        assert_ne!(keys.key("rcpt-1"), keys.key("rcpt-2"));
        assert_eq!(keys.key("rcpt-1"), keys.key("rcpt-1"));
    }

    proptest! {
        /// SeenIds answers as a hash set does, whatever the order keys arrive in: ascending runs
        /// (warrant's UUIDv7 ids), repeats, and keys below the last.
        #[test]
        fn seen_ids_is_a_set(ops in proptest::collection::vec((0u8..4, 0u128..64), 0..200)) {
            let (mut seen, mut model) = (SeenIds::default(), std::collections::HashSet::new());
            let (mut next, mut earlier) = (100u128, Vec::new());
            for (kind, x) in ops {
                let key = match kind {
                    // The next of an ascending run, as warrant's ids arrive.
                    0 => {
                        next += 1 + x;
                        next
                    }
                    // The run's last key again, or an earlier one.
                    1 => next,
                    2 => earlier.get(x as usize % earlier.len().max(1)).copied().unwrap_or(x),
                    // A key below the run, or between its keys.
                    _ => 90 + x * 3,
                };
                earlier.push(key);
                prop_assert_eq!(seen.contains(key), model.contains(&key));
                prop_assert_eq!(seen.insert(key), model.insert(key), "insert {}", key);
                prop_assert!(seen.contains(key));
            }
        }
    }

    #[test]
    fn record_key_index_follows_record_keys() {
        for (i, key) in RECORD_KEYS.iter().enumerate() {
            assert_eq!(record_key_index(key.as_bytes()), Some(i), "{key}");
        }
        for (k, key) in
            [(KEY_RECORD_ID, "record_id"), (KEY_PREVIOUS_HASH, "previous_hash"), (KEY_ENTRY_HASH, "entry_hash")]
        {
            assert_eq!(RECORD_KEYS[k], key);
        }
        assert_eq!(RECORD_KEYS[KEY_METADATA], "metadata");
        for other in [&b""[..], b"Schema", b"metadata ", b"entry_hash\0", b"chain"] {
            assert_eq!(record_key_index(other), None, "{}", String::from_utf8_lossy(other));
        }
    }
}
