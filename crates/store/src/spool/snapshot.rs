//! The agents' snapshot of a checkpointed prefix of the chain (`docs/spool.md`, Agents'
//! snapshots): what an agent-side process (a hook, the gateway's start, `propose --wait`) needs of
//! the first `records` records, written by the principal beside each checkpoint and bound to it
//! by the signed `snapshot_sha256`, so such a process verifies one signature and the records after
//! the checkpoint instead of the whole chain.
//!
//! An agent can write the spool, so nothing here is trusted for what it says: the snapshot's
//! bytes must hash to the digest the principal signed, it must describe the checkpoint's prefix,
//! the chain must still end that prefix with the record signed ([`crate::chain_file::prefix_holds`]),
//! and the records after it are verified as any chain is. When any of that fails, the whole chain
//! is verified instead, so a forged, stale or damaged snapshot costs time and never allows
//! anything a verification of the chain would not.

use super::fold::{IdFilter, PrefixFold};
use super::view::view_after_checkpoint;
use super::{ChainDecision, Cosigning, Spool, VerifiedView};
use crate::chain_file::ChainError;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::io;
use std::path::PathBuf;
use warrant_protocol::graduation::evidence::{Bucket, EvidenceRow, SourceType};
use warrant_protocol::keys::PinnedKeys;

/// The agents' snapshot's file in the spool.
pub const SNAPSHOT_FILE: &str = "snapshot.json";

/// The file beside it with the prefix's latest decisions ([`RECENT_DECISIONS`]), bound by the
/// snapshot's `recent_decisions_sha256` and read only by a process that needs one of them.
pub const RECENT_DECISIONS_FILE: &str = "snapshot.decisions.json";

/// The file beside it with the prefix's evidence runs, each action class's together
/// ([`RunCells`]), bound class by class by the digests in the snapshot's evidence table: a
/// process that reads one class's evidence reads and hashes that class's runs alone.
pub const RUNS_FILE: &str = "snapshot.runs";

/// The file beside it with the bits of the prefix's decided ids' filter, bound by the snapshot's
/// `decided.sha256` and read only by a process that asks whether an id is decided.
pub const DECIDED_FILE: &str = "snapshot.decided";

/// The most bytes a snapshot (or one of its files) may have to be read (64 MiB): a larger one is
/// not used.
pub const MAX_SNAPSHOT_BYTES: u64 = 64 << 20;

/// The version of [`AgentSnapshot`]'s file; a snapshot of another version is not used.
const SNAPSHOT_VERSION: u32 = 4;

/// How many of the prefix's latest decisions the snapshot keeps exactly (about 450 bytes each,
/// read only by a process that needs one of them: [`AgentView::complete`]).
pub const RECENT_DECISIONS: usize = 1024;

/// What an agent-side process needs of a checkpointed prefix: the principal's fold of it
/// ([`PrefixFold`]) without the exact decisions (only a Bloom filter of their packet ids) and
/// without the prefix's digest and record ids: the controls, grants and key events whole, the
/// evidence as a table of distinct rows whose runs are in [`RUNS_FILE`], and the filter's
/// capacity and digest, its bits in [`DECIDED_FILE`] (3 KB at a million generated records).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct AgentSnapshot {
    /// [`SNAPSHOT_VERSION`].
    version: u32,
    /// Records in the prefix (the checkpoint's `records`).
    records: u64,
    /// The prefix's length in bytes (the checkpoint's `bytes`).
    bytes: u64,
    /// The prefix's last `entry_hash` (the checkpoint's `head_hash`).
    head_hash: Option<String>,
    /// The principal's control, grant and key-event records, whole, in chain order.
    events: Vec<Map<String, Value>>,
    /// The first publisher each agent was bound to, in chain order.
    publishers: Vec<(String, u32)>,
    /// The `content_hash` of the last receipt in the prefix.
    last_receipt_hash: Option<String>,
    /// Approvals gathered towards a quorum, by packet id.
    cosigning: HashMap<String, Cosigning>,
    /// The prefix's evidence rows, distinct with counts, as a table ([`EvidenceTable`]).
    evidence: EvidenceTable,
    /// The packet ids the prefix decides, as a Bloom filter whose bits are in [`DECIDED_FILE`]:
    /// an id it may hold is looked up in the whole chain ([`AgentView::may_be_decided_before`]).
    decided: DecidedFilter,
    /// `"sha256:<hex>"` of [`RECENT_DECISIONS_FILE`]: the prefix's [`RECENT_DECISIONS`] latest
    /// decisions (by `chain_index`), by packet id, read only when a process needs one
    /// ([`AgentView::complete`]).
    recent_decisions_sha256: String,
}

/// Evidence runs as a table: each distinct string once, each distinct kind of row (source type,
/// weights, edit distance, bucket, trust violation) once, and where each action class's runs are
/// in [`RUNS_FILE`], with their digest, so a process that reads one class's evidence reads that
/// class's runs alone (a million generated records: 3,000 runs of 10 classes, 77 strings, a
/// dozen kinds; the snapshot 3 KB, the runs 85 KB). A run's receipt id and time are left out: no
/// sum reads them.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct EvidenceTable {
    strings: Vec<String>,
    kinds: Vec<EvidenceKind>,
    /// One entry a class.
    classes: Vec<ClassRuns>,
}

/// Where one action class's runs are in [`RUNS_FILE`]: `runs` runs of [`RunCells::BYTES`] bytes
/// from byte `offset`, in chain order, whose bytes hash to `sha256` (`"sha256:<hex>"`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct ClassRuns {
    /// The class, an index into the table's strings.
    class: u32,
    offset: u64,
    runs: u64,
    sha256: String,
}

/// The decided ids' filter of a snapshot: its capacity and count, and the digest of its bits in
/// [`DECIDED_FILE`].
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
struct DecidedFilter {
    capacity: u64,
    count: u64,
    sha256: String,
}

impl DecidedFilter {
    /// Whether the filter is sized for what it holds (an empty or overfull one is not used).
    fn usable(&self) -> bool {
        self.capacity > 0 && self.count <= self.capacity
    }
}

/// The decided ids' filter of an [`AgentView`] made from a snapshot, its bits read from
/// [`DECIDED_FILE`] on first use. Bits that are missing, do not hash to the digest the snapshot
/// names or are not the filter's length make a filter that may hold every id: the caller then
/// looks each up in the whole chain.
#[derive(Debug, Clone)]
struct LazyFilter {
    of: DecidedFilter,
    path: PathBuf,
    filter: std::sync::OnceLock<IdFilter>,
}

impl LazyFilter {
    fn may_hold(&self, id: &str) -> bool {
        let filter = self.filter.get_or_init(|| {
            read_signed(&self.path, &self.of.sha256)
                .and_then(|bits| IdFilter::from_parts(self.of.capacity, self.of.count, bits))
                .unwrap_or_default()
        });
        filter.may_hold(id)
    }
}

/// The bytes of a file beside the snapshot (a regular file of at most [`MAX_SNAPSHOT_BYTES`])
/// when they hash to `want` (`"sha256:<hex>"`, the digest the snapshot names); `None` otherwise.
fn read_signed(path: &std::path::Path, want: &str) -> Option<Vec<u8>> {
    let bytes = crate::checkpoint_files::read_regular(path, MAX_SNAPSHOT_BYTES).ok()?;
    (warrant_protocol::canonical::sha256_prefixed(&bytes) == want).then_some(bytes)
}

/// What a run counts as, but for its strings: `[source_type, decision_weight,
/// provenance_weight, evidence_weight, edit_distance, bucket, trust_violation]`.
type EvidenceKind = (Option<SourceType>, f64, f64, f64, Option<f64>, Bucket, bool);

/// What tells two [`EvidenceKind`]s apart: the same fields, the weights by their bits.
type KindKey = (Option<SourceType>, [u64; 3], Option<u64>, Bucket, bool);

/// One run of an [`EvidenceTable`]'s class, as its bytes hold it (little-endian): its position
/// among all the runs (`u32`), its label, date and source as indexes into the strings (`u32`
/// each, [`RunCells::NONE`] for no date or source), its kind (`u32`) and its count (`u64`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct RunCells {
    position: u32,
    label: u32,
    date: Option<u32>,
    source: Option<u32>,
    kind: u32,
    count: u64,
}

impl RunCells {
    const BYTES: usize = 28;
    const NONE: u32 = u32::MAX;

    fn write(&self, out: &mut Vec<u8>) {
        for v in
            [self.position, self.label, self.date.unwrap_or(Self::NONE), self.source.unwrap_or(Self::NONE), self.kind]
        {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&self.count.to_le_bytes());
    }

    /// The run in `b` (exactly [`RunCells::BYTES`] long).
    fn read(b: &[u8]) -> Option<Self> {
        let u = |i: usize| Some(u32::from_le_bytes(b.get(4 * i..4 * i + 4)?.try_into().ok()?));
        let opt = |v: u32| (v != Self::NONE).then_some(v);
        Some(Self {
            position: u(0)?,
            label: u(1)?,
            date: opt(u(2)?),
            source: opt(u(3)?),
            kind: u(4)?,
            count: u64::from_le_bytes(b.get(20..28)?.try_into().ok()?),
        })
    }
}

/// The position of `value` in `table`, added when new (`at` remembers positions by value).
fn intern<K: std::hash::Hash + Eq + Clone>(value: K, table: &mut Vec<K>, at: &mut HashMap<K, u32>) -> u32 {
    *at.entry(value).or_insert_with_key(|v| {
        table.push(v.clone());
        u32::try_from(table.len() - 1).unwrap_or(u32::MAX)
    })
}

impl EvidenceTable {
    /// The table of `runs` and the bytes of its [`RUNS_FILE`].
    fn of_runs(runs: &[(EvidenceRow, u64)]) -> (Self, Vec<u8>) {
        let mut table = Self::default();
        let mut strings: HashMap<String, u32> = HashMap::new();
        // Kinds are told apart by their weights' bits, as rows are counted apart.
        let mut kinds: HashMap<KindKey, u32> = HashMap::new();
        let mut classes: Vec<(u32, Vec<u8>)> = Vec::new();
        let mut class_at: HashMap<u32, usize> = HashMap::new();
        for (position, (r, n)) in runs.iter().enumerate() {
            let mut s = |v: &str| intern(v.to_owned(), &mut table.strings, &mut strings);
            let (class, label) = (s(&r.action_class), s(&r.label));
            let date = r.date.as_deref().map(&mut s);
            let source = r.source.as_deref().map(&mut s);
            let bits = [r.decision_weight.to_bits(), r.provenance_weight.to_bits(), r.evidence_weight.to_bits()];
            let key = (r.source_type, bits, r.edit_distance.map(f64::to_bits), r.bucket, r.trust_violation);
            let kind = *kinds.entry(key).or_insert_with(|| {
                table.kinds.push((
                    r.source_type,
                    r.decision_weight,
                    r.provenance_weight,
                    r.evidence_weight,
                    r.edit_distance,
                    r.bucket,
                    r.trust_violation,
                ));
                u32::try_from(table.kinds.len() - 1).unwrap_or(u32::MAX)
            });
            let at = *class_at.entry(class).or_insert_with(|| {
                classes.push((class, Vec::new()));
                classes.len() - 1
            });
            // More runs than a u32 counts make positions that repeat: such a table does not
            // read back, and the chain is verified whole.
            let position = u32::try_from(position).unwrap_or(u32::MAX);
            RunCells { position, label, date, source, kind, count: *n }.write(&mut classes[at].1);
        }
        let mut file = Vec::with_capacity(runs.len() * RunCells::BYTES);
        for (class, rows) in classes {
            table.classes.push(ClassRuns {
                class,
                offset: file.len() as u64,
                runs: (rows.len() / RunCells::BYTES) as u64,
                sha256: warrant_protocol::canonical::sha256_prefixed(&rows),
            });
            file.extend_from_slice(&rows);
        }
        (table, file)
    }

    /// The runs back, in chain order: all of them, or with `only` those of that action class
    /// (reading no other class's runs; its runs in the same order, so its sums are the same).
    /// `bytes_of(offset, len)` gives the bytes of [`RUNS_FILE`] at `offset`. `None` when a class
    /// is listed twice or names no string, when the runs read cannot be read or do not hash to
    /// their digest, when a run read names a string or kind the table does not have, or when the
    /// positions read are not in chain order (with all of them, not exactly 0, 1, 2, …).
    fn into_runs(
        self,
        only: Option<&str>,
        mut bytes_of: impl FnMut(u64, usize) -> Option<Vec<u8>>,
    ) -> Option<Vec<(EvidenceRow, u64)>> {
        let at = |i: u32| usize::try_from(i).ok();
        let s = |i: u32| self.strings.get(at(i)?).cloned();
        let mut seen = std::collections::HashSet::new();
        if !self.classes.iter().all(|c| at(c.class).is_some_and(|i| i < self.strings.len()) && seen.insert(c.class)) {
            return None;
        }
        let read: Vec<&ClassRuns> = match only {
            Some(class) => self.classes.iter().filter(|c| self.strings[c.class as usize] == class).collect(),
            None => self.classes.iter().collect(),
        };
        let mut runs: Vec<(u32, EvidenceRow, u64)> = Vec::new();
        for c in read {
            let len = usize::try_from(c.runs).ok()?.checked_mul(RunCells::BYTES)?;
            let bytes = bytes_of(c.offset, len)?;
            if bytes.len() != len || warrant_protocol::canonical::sha256_prefixed(&bytes) != c.sha256 {
                return None;
            }
            let action_class = s(c.class)?;
            for b in bytes.chunks_exact(RunCells::BYTES) {
                let cells = RunCells::read(b)?;
                let &(source_type, dw, pw, ew, edit, bucket, tv) = self.kinds.get(at(cells.kind)?)?;
                let opt = |i: Option<u32>| i.map(|i| s(i).ok_or(())).transpose().ok();
                let row = EvidenceRow {
                    action_class: action_class.clone(),
                    label: s(cells.label)?,
                    date: opt(cells.date)?,
                    source: opt(cells.source)?,
                    source_type,
                    decision_weight: dw,
                    provenance_weight: pw,
                    evidence_weight: ew,
                    edit_distance: edit,
                    bucket,
                    trust_violation: tv,
                    receipt_id: None,
                    recorded_at: None,
                };
                runs.push((cells.position, row, cells.count));
            }
        }
        runs.sort_by_key(|r| r.0);
        let in_order = runs.windows(2).all(|w| w[0].0 < w[1].0);
        let every = only.is_some() || runs.iter().enumerate().all(|(i, r)| at(r.0) == Some(i));
        (in_order && every).then(|| runs.into_iter().map(|(_, row, n)| (row, n)).collect())
    }
}

impl AgentSnapshot {
    /// The snapshot of `fold`, and the bytes of its [`RUNS_FILE`] and [`DECIDED_FILE`].
    fn of_fold(fold: &PrefixFold, recent_decisions_sha256: String) -> (Self, Vec<u8>, Vec<u8>) {
        let (evidence, runs) = EvidenceTable::of_runs(&fold.evidence);
        let filter = IdFilter::of(fold.decisions.keys().map(String::as_str));
        let (capacity, count, bits) = filter.parts();
        let decided = DecidedFilter { capacity, count, sha256: warrant_protocol::canonical::sha256_prefixed(bits) };
        let snapshot = Self {
            version: SNAPSHOT_VERSION,
            records: fold.records,
            bytes: fold.bytes,
            head_hash: fold.head_hash.clone(),
            events: fold.events.clone(),
            publishers: fold.publishers.clone(),
            last_receipt_hash: fold.last_receipt_hash.clone(),
            cosigning: fold.cosigning.clone(),
            evidence,
            decided,
            recent_decisions_sha256,
        };
        (snapshot, runs, bits.to_vec())
    }

    /// The fold this snapshot stands for, with no decisions: [`PrefixFold::view`] builds the
    /// view from it as it does for the principal. Its evidence is every class's, or with `only`
    /// that action class's alone ([`EvidenceTable::into_runs`], `bytes_of` reading
    /// [`RUNS_FILE`]). Also the decided ids' filter and the digest of the recent decisions.
    /// `None` when its evidence does not read back.
    fn into_fold(
        self,
        only: Option<&str>,
        bytes_of: impl FnMut(u64, usize) -> Option<Vec<u8>>,
    ) -> Option<(PrefixFold, DecidedFilter, String)> {
        let mut fold = PrefixFold::default();
        fold.records = self.records;
        fold.bytes = self.bytes;
        fold.head_hash = self.head_hash;
        fold.events = self.events;
        fold.publishers = self.publishers;
        fold.last_receipt_hash = self.last_receipt_hash;
        fold.cosigning = self.cosigning;
        fold.evidence = self.evidence.into_runs(only, bytes_of)?;
        Some((fold, self.decided, self.recent_decisions_sha256))
    }
}

/// The [`RECENT_DECISIONS`] latest of `decisions` (by `chain_index`), as JSON: an object by
/// packet id.
fn recent_decisions(decisions: &super::Decisions) -> io::Result<Vec<u8>> {
    let mut latest: Vec<(&String, &ChainDecision)> = decisions.iter().map(|(id, d)| (id, &**d)).collect();
    if latest.len() > RECENT_DECISIONS {
        latest.select_nth_unstable_by_key(RECENT_DECISIONS, |(_, d)| std::cmp::Reverse(d.chain_index));
        latest.truncate(RECENT_DECISIONS);
    }
    let map: std::collections::BTreeMap<&String, &ChainDecision> = latest.into_iter().collect();
    serde_json::to_vec(&map).map_err(io::Error::other)
}

/// Writes the agents' snapshot of `fold` (a fold of a prefix verified under the chain's lock) to
/// the spool's [`SNAPSHOT_FILE`] (its evidence runs to [`RUNS_FILE`], its decided ids' filter to
/// [`DECIDED_FILE`], its latest decisions to [`RECENT_DECISIONS_FILE`], these first), each
/// replaced whole but not synced (a cache the checkpoint binds by digest: one lost to a crash
/// only sends agents to the chain; [`crate::atomic::replace_unsynced`]), mode 0644, readable by
/// the agents, and returns
/// `"sha256:<hex>"` of its bytes for the checkpoint to sign.
///
/// # Errors
/// I/O errors (the caller signs the checkpoint without a snapshot).
pub(super) fn write_snapshot(spool: &Spool, fold: &PrefixFold) -> io::Result<String> {
    let recent = recent_decisions(&fold.decisions)?;
    crate::atomic::replace_unsynced(&spool.root().join(RECENT_DECISIONS_FILE), &recent, 0o644)?;
    let (snapshot, runs, bits) = AgentSnapshot::of_fold(fold, warrant_protocol::canonical::sha256_prefixed(&recent));
    crate::atomic::replace_unsynced(&spool.root().join(RUNS_FILE), &runs, 0o644)?;
    crate::atomic::replace_unsynced(&spool.root().join(DECIDED_FILE), &bits, 0o644)?;
    let json = serde_json::to_vec(&snapshot).map_err(io::Error::other)?;
    crate::atomic::replace_unsynced(&spool.root().join(SNAPSHOT_FILE), &json, 0o644)?;
    Ok(warrant_protocol::canonical::sha256_prefixed(&json))
}

/// A chain view for an agent-side process ([`agent_view`]): the verified view, and whether its
/// decisions are the whole chain's or only those after a checkpointed prefix.
#[derive(Debug, Clone, Default)]
pub struct AgentView {
    /// The view and the prefix it covers (to extend with [`super::verify_chain_from`]). Its
    /// controls, grants, key events, evidence and co-signing are the whole chain's; its
    /// `decisions` are the whole chain's only when [`AgentView::from_snapshot`] is false.
    pub chain: VerifiedView,
    /// The packet ids the snapshot's prefix decides (a Bloom filter), when the view was made
    /// from one.
    decided_before: Option<LazyFilter>,
    /// Where the snapshot's latest decisions are and the digest they must have, and the
    /// decisions once read.
    recent_source: Option<(PathBuf, String)>,
    recent: std::sync::OnceLock<HashMap<String, ChainDecision>>,
    /// Bytes of the chain read to make the view (the tail after the snapshot's prefix, or the
    /// whole chain).
    pub bytes_read: u64,
    /// The principal's checkpoint the view starts from, when it was made from the snapshot
    /// (its signature verified against the pinned keys): records 1 to `records` are taken on it.
    pub checkpoint: Option<warrant_protocol::checkpoint::Checkpoint>,
    /// `Some(class)` when the view's evidence is the whole chain's for that canonical action
    /// class only ([`agent_view_for_class`]): the snapshot's prefix gave that class's runs
    /// alone, so any other class's summary is not the chain's and must not be read. `None`
    /// when the evidence is every class's.
    pub evidence_only: Option<String>,
}

impl AgentView {
    /// Whether the view was made from the agents' snapshot (the prefix's decisions then are not
    /// in `chain.view.decisions`).
    #[must_use]
    pub fn from_snapshot(&self) -> bool {
        self.decided_before.is_some()
    }

    /// Whether the prefix the snapshot stands for may decide packet `id` (false: it certainly
    /// does not; always false for a view of the whole chain, whose decisions are exact). When
    /// true, the caller looks `id` up in a view of the whole chain.
    #[must_use]
    pub fn may_be_decided_before(&self, id: &str) -> bool {
        self.decided_before.as_ref().is_some_and(|f| f.may_hold(id))
    }

    /// The snapshot's latest decisions ([`RECENT_DECISIONS`]), read on first use from
    /// [`RECENT_DECISIONS_FILE`], which must hash to the digest the snapshot names (an empty map
    /// for a view of the whole chain, or when the file is missing, altered or does not parse: the
    /// caller then verifies the whole chain).
    fn recent(&self) -> &HashMap<String, ChainDecision> {
        self.recent.get_or_init(|| {
            let read = || -> Option<HashMap<String, ChainDecision>> {
                let (path, want) = self.recent_source.as_ref()?;
                serde_json::from_slice(&read_signed(path, want)?).ok()
            };
            read().unwrap_or_default()
        })
    }

    /// The decision the snapshot's prefix made on `id`, when it is among the latest it keeps
    /// exactly.
    #[must_use]
    pub fn decision_before(&self, id: &str) -> Option<&ChainDecision> {
        if !self.may_be_decided_before(id) {
            return None;
        }
        self.recent().get(id)
    }

    /// Makes the view's decisions exact for `ids`: each that the snapshot's prefix may decide
    /// ([`AgentView::may_be_decided_before`]) is looked up among the prefix's latest decisions
    /// and, when found, added as a fold of the chain in order would have it (a plain decision in
    /// the tail stands over it; the prefix's decision stands over a later approval towards a
    /// quorum). Returns whether every id is now exact: false when one may be decided in the
    /// prefix and is not among the latest kept, and then the caller verifies the whole chain.
    /// Always true for a view of the whole chain.
    pub fn complete<'a>(&mut self, ids: impl IntoIterator<Item = &'a str>) -> bool {
        let mut exact = true;
        for id in ids {
            if !self.may_be_decided_before(id) {
                continue;
            }
            let tail = self.chain.view.decisions.get(id);
            if tail.is_some_and(|d| d.quorum.is_none()) {
                continue;
            }
            match self.recent().get(id).cloned() {
                Some(d) => {
                    self.chain.view.decisions.insert(id.to_owned(), std::sync::Arc::new(d));
                }
                None => exact = false,
            }
        }
        exact
    }
}

/// The chain as an agent-side process needs it, verified: from the agents' snapshot and the
/// records after it when the principal's latest checkpoint binds one that holds
/// (`snapshot_view`), else the whole chain ([`super::verify_chain`]). Its report has findings
/// only from a verification of the whole chain.
///
/// # Errors
/// As [`super::verify_chain`].
pub fn agent_view(spool: &Spool, pinned: &PinnedKeys) -> Result<AgentView, ChainError> {
    agent_view_of(spool, pinned, None)
}

/// [`agent_view`] for a process that reads the evidence of one action class (`class`,
/// canonical), as a hook's one call does: from the snapshot, only that class's evidence runs
/// are read back (a tenth of them at a million generated records), so the view's
/// [`AgentView::evidence_only`] names the class. A view of the whole chain (no usable snapshot)
/// has every class's evidence and `evidence_only` `None`.
///
/// # Errors
/// As [`super::verify_chain`].
pub fn agent_view_for_class(spool: &Spool, pinned: &PinnedKeys, class: &str) -> Result<AgentView, ChainError> {
    agent_view_of(spool, pinned, Some(class))
}

fn agent_view_of(spool: &Spool, pinned: &PinnedKeys, only: Option<&str>) -> Result<AgentView, ChainError> {
    if let Some(v) = snapshot_view(spool, pinned, only) {
        return Ok(v);
    }
    let progress = std::sync::atomic::AtomicU64::new(0);
    let chain = super::verify_chain_from(spool, pinned, None, &progress)?;
    Ok(AgentView { chain, bytes_read: progress.into_inner(), ..AgentView::default() })
}

/// The view from the agents' snapshot, reading nothing of the prefix but its last line: the
/// principal's latest checkpoint ([`crate::checkpoint_files::latest`]) must bind a snapshot
/// (`snapshot_sha256`), the spool's [`SNAPSHOT_FILE`] must hash to it and describe the
/// checkpoint's prefix, the chain must still end that prefix with the record signed, and the
/// records after it must verify, checked against that checkpoint. The prefix's evidence is every
/// class's, or with `only` that class's alone. `None` whenever anything is in doubt.
fn snapshot_view(spool: &Spool, pinned: &PinnedKeys, only: Option<&str>) -> Option<AgentView> {
    let (cp, _) = crate::checkpoint_files::latest(spool, pinned);
    let cp = cp?;
    let want = cp.snapshot_sha256.as_deref()?;
    let bytes = crate::checkpoint_files::read_regular(&spool.root().join(SNAPSHOT_FILE), MAX_SNAPSHOT_BYTES).ok()?;
    if warrant_protocol::canonical::sha256_prefixed(&bytes) != want {
        return None;
    }
    let snapshot: AgentSnapshot = serde_json::from_slice(&bytes).ok()?;
    let describes = snapshot.version == SNAPSHOT_VERSION
        && snapshot.records == cp.records
        && snapshot.bytes == cp.bytes
        && snapshot.head_hash.as_deref() == Some(cp.head_hash.as_str())
        && snapshot.decided.usable();
    if !describes {
        return None;
    }
    // The runs of one class are read where they are; all of them, with the whole file.
    let runs_path = spool.root().join(RUNS_FILE);
    let mut whole: Option<Vec<u8>> = None;
    let bytes_of = |offset: u64, len: usize| -> Option<Vec<u8>> {
        if u64::try_from(len).ok()? > MAX_SNAPSHOT_BYTES {
            return None;
        }
        if only.is_some() {
            use std::os::unix::fs::FileExt as _;
            let file = crate::chain_file::open_regular(&runs_path, true).ok()?;
            let mut buf = vec![0; len];
            file.read_exact_at(&mut buf, offset).ok()?;
            return Some(buf);
        }
        if whole.is_none() {
            whole = Some(crate::checkpoint_files::read_regular(&runs_path, MAX_SNAPSHOT_BYTES).ok()?);
        }
        let start = usize::try_from(offset).ok()?;
        whole.as_ref()?.get(start..start.checked_add(len)?).map(<[u8]>::to_vec)
    };
    let (fold, decided, recent) = snapshot.into_fold(only, bytes_of)?;
    let decided = LazyFilter { of: decided, path: spool.root().join(DECIDED_FILE), filter: std::sync::OnceLock::new() };
    let (base, prefix) = fold.into_view(pinned);
    let progress = std::sync::atomic::AtomicU64::new(0);
    let (view, _, tail) =
        view_after_checkpoint(spool, pinned, Some(cp.clone()), &prefix, Some(base), &|_| false, &progress).ok()??;
    if !view.report.is_valid() {
        return None;
    }
    let chain = VerifiedView { verified: tail.verified(), view };
    Some(AgentView {
        chain,
        decided_before: Some(decided),
        recent_source: Some((spool.root().join(RECENT_DECISIONS_FILE), recent)),
        recent: std::sync::OnceLock::new(),
        bytes_read: progress.into_inner(),
        checkpoint: Some(cp),
        evidence_only: only.map(str::to_owned),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use warrant_protocol::decision::Verdict;

    /// A plain decision of `alice`'s, record `i`.
    fn decision(i: u64, verdict: Verdict) -> ChainDecision {
        ChainDecision {
            verdict,
            principal: "alice".into(),
            reason: None,
            decided_at: "2026-11-28T00:00:00Z".into(),
            packet_hash: "sha256:00".into(),
            chain_index: i,
            entry_hash: format!("h{i}"),
            agent: "agent-1".into(),
            action_class: "email.send".into(),
            cosigners: Vec::new(),
            quorum: None,
            signed: None,
            system: None,
            corrected: None,
        }
    }

    #[test]
    fn the_latest_decisions_are_kept_exactly_and_no_more() {
        let n = RECENT_DECISIONS as u64 + 10;
        let all: crate::spool::Decisions =
            (1..=n).map(|i| (format!("p-{i}"), std::sync::Arc::new(decision(i, Verdict::Approve)))).collect();
        let kept: HashMap<String, ChainDecision> =
            serde_json::from_slice(&recent_decisions(&all).expect("json")).expect("recent");
        assert_eq!(kept.len(), RECENT_DECISIONS);
        assert!(kept.contains_key(&format!("p-{n}")) && kept.contains_key("p-11"));
        assert!(!kept.contains_key("p-10"), "the oldest are left to the whole chain");
    }

    /// A reader of `file` at (offset, length), as [`EvidenceTable::into_runs`] asks.
    fn reader(file: &[u8]) -> impl FnMut(u64, usize) -> Option<Vec<u8>> + '_ {
        |offset, len| file.get(usize::try_from(offset).ok()?..).and_then(|f| f.get(..len)).map(<[u8]>::to_vec)
    }

    #[test]
    fn one_class_reads_back_its_runs_in_order_and_reads_no_other() {
        let row = |class: &str, label: &str| EvidenceRow::new(class, label, Some(SourceType::Principal), None);
        let runs = vec![
            (row("email.send", "approved"), 3),
            (row("read.context", "approved"), 5),
            (row("email.send", "rejected"), 1),
            (row("read.context", "edited"), 2),
        ];
        let (_, file) = EvidenceTable::of_runs(&runs);
        let table = || EvidenceTable::of_runs(&runs).0;
        assert_eq!(table().classes.len(), 2, "one range of runs a class");
        let email: Vec<_> = runs.iter().filter(|(r, _)| r.action_class == "email.send").cloned().collect();
        let read = std::cell::Cell::new(0);
        let counting = |offset, len| {
            read.set(read.get() + len);
            reader(&file)(offset, len)
        };
        assert_eq!(table().into_runs(Some("email.send"), counting), Some(email.clone()));
        assert_eq!(read.get(), 2 * RunCells::BYTES, "only the class's two runs are read");
        assert_eq!(table().into_runs(None, reader(&file)), Some(runs.clone()));
        assert_eq!(table().into_runs(Some("payment.initiate"), reader(&file)), Some(Vec::new()), "no runs");

        // The principal's `read.context` runs with one naming a label the table does not have.
        let (mut bad, mut bad_file) = EvidenceTable::of_runs(&runs);
        let at = bad.strings.iter().position(|s| s == "read.context").expect("class");
        let c = bad.classes.iter_mut().find(|c| c.class as usize == at).expect("its runs");
        let start = usize::try_from(c.offset).expect("offset");
        let mut first = Vec::new();
        RunCells { position: 1, label: 99, date: None, source: None, kind: 0, count: 5 }.write(&mut first);
        bad_file[start..start + RunCells::BYTES].copy_from_slice(&first);
        c.sha256 = warrant_protocol::canonical::sha256_prefixed(&bad_file[start..start + 2 * RunCells::BYTES]);
        let bad_runs =
            || EvidenceTable { strings: bad.strings.clone(), kinds: bad.kinds.clone(), classes: bad.classes.clone() };
        assert_eq!(bad_runs().into_runs(Some("read.context"), reader(&bad_file)), None, "a run naming no string");
        assert_eq!(bad_runs().into_runs(None, reader(&bad_file)), None, "read whole, the bad run is found");
        assert_eq!(bad_runs().into_runs(Some("email.send"), reader(&bad_file)), Some(email), "not read");
        // Runs that are not the ones the digest names (an agent rewrote the file).
        let mut altered = file.clone();
        altered[start + 20] ^= 1; // a count
        assert_eq!(table().into_runs(Some("read.context"), reader(&altered)), None);
        assert_eq!(table().into_runs(None, reader(&altered)), None);
        // Positions that are not every run's once: the runs do not read back whole.
        let mut twice = table();
        let first = twice.classes[0].clone();
        (twice.classes[1].offset, twice.classes[1].sha256) = (first.offset, first.sha256);
        assert_eq!(twice.into_runs(None, reader(&file)), None);
    }

    #[test]
    fn a_snapshot_round_trips_and_keeps_only_a_filter_of_the_decided_ids() {
        let mut fold: PrefixFold = PrefixFold::default();
        (fold.records, fold.bytes, fold.head_hash) = (2, 10, Some("h".into()));
        fold.publishers.push(("agent-1".into(), 1000));
        fold.decisions.insert("p-2".into(), std::sync::Arc::new(decision(2, Verdict::Refuse)));
        let approved =
            EvidenceRow::new("email.send", "approved", Some(SourceType::Principal), Some("2026-11-28".into()));
        let mut reweighed = approved.clone();
        reweighed.evidence_weight = f64::from_bits(approved.evidence_weight.to_bits() + 1);
        let other_day =
            EvidenceRow::new("email.send", "approved", Some(SourceType::Principal), Some("2026-11-29".into()));
        fold.evidence = vec![(approved, 7), (reweighed, 1), (other_day, 2)];
        let recent_json = recent_decisions(&fold.decisions).expect("recent");
        let (snapshot, runs, bits) = AgentSnapshot::of_fold(&fold, "sha256:00".into());
        assert_eq!(snapshot.evidence.kinds.len(), 2, "a weight one bit away is a kind of its own; a date is not");
        assert_eq!(snapshot.evidence.strings.len(), 4, "each string once: a class, a label, two dates");
        let json = serde_json::to_vec(&snapshot).expect("serialize");
        assert!(json.len() < 2048, "the filter's bits and the runs are not in it: {} bytes", json.len());
        let back: AgentSnapshot = serde_json::from_slice(&json).expect("parse");
        assert!(back.decided.usable());
        let (f, decided, digest) = back.into_fold(None, reader(&runs)).expect("evidence reads back");
        assert_eq!(digest, "sha256:00");
        assert_eq!((f.records, f.bytes, f.head_hash.as_deref()), (2, 10, Some("h")));
        assert!(f.decisions.is_empty(), "the snapshot carries no exact decision");
        assert_eq!(f.publishers, vec![("agent-1".to_owned(), 1000)]);
        assert_eq!(f.evidence, fold.evidence, "the evidence table reads back the runs");
        // The filter's bits are read from their file when first asked, and only as signed.
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join(DECIDED_FILE);
        let lazy = || LazyFilter { of: decided.clone(), path: path.clone(), filter: std::sync::OnceLock::new() };
        let missing = lazy();
        assert!(missing.may_hold("p-never-decided"), "no bits: every id is looked up in the whole chain");
        std::fs::write(&path, &bits).expect("bits");
        let filter = lazy();
        assert!(filter.may_hold("p-2"));
        assert!(!filter.may_hold("p-never-decided"));
        let mut other = bits.clone();
        other[0] ^= 1;
        std::fs::write(&path, &other).expect("bits");
        assert!(lazy().may_hold("p-never-decided"), "bits that are not the ones signed hold every id");
        let recent: HashMap<String, ChainDecision> = serde_json::from_slice(&recent_json).expect("recent");
        assert_eq!(recent.get("p-2").map(|d| d.chain_index), Some(2), "kept exactly among the latest");
    }
}
