//! The principal's fold of a checkpointed prefix of the chain, the views made from a checkpoint, and the
//! checkpoint signed after each append.

use super::view::{receipt_hash_of, view_after};
use super::{ChainDecision, ChainView, Cosigning, DecideError, Spool, chain_decision_of, fold_decision, read_limited};
use crate::chain_file::{self, ChainError};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::{self, Read};
use std::path::Path;
use warrant_protocol::chain::{self, VerifyOptions};
use warrant_protocol::chain_evidence::ChainEvidence;
use warrant_protocol::control::ControlEvent;
use warrant_protocol::graduation::evidence::EvidenceRow;
use warrant_protocol::keys::{PinnedKeys, Principal};

// Named in documentation only.
#[cfg(doc)]
use super::view::verify_chain_records;
#[cfg(doc)]
use warrant_protocol::control::ControlState;

/// The version of [`PrefixFold`]'s file; a fold of another version is not used.
/// (2: co-signing in progress carries the principals its approvals count for, by key;
/// 3: the prefix's evidence rows, for the agents' snapshot.)
const FOLD_VERSION: u32 = 3;

/// What a decision needs of a verified prefix of the chain, folded once and kept beside the
/// principal's own checkpoint copy (`<config dir>/checkpoints/<spool id>.fold.json`,
/// [`crate::checkpoint_files::fold_copy`]), bound to the checkpoint the principal signed
/// by its `fold_sha256` (`docs/spool.md`, Incremental verification). With it, a decision reads
/// none of the prefix: only the line at its end ([`chain_file::prefix_holds`]) and the records
/// after it. Written only under the chain's lock, from a chain verified under that lock.
///
/// `D` is how the decisions are held: decoded (the default), or, as a listing first reads the
/// file, left as the JSON text they are ([`read_fold_selected`]), so only those asked for are
/// decoded.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub(super) struct PrefixFold<D = super::Decisions> {
    /// [`FOLD_VERSION`].
    pub(super) version: u32,
    /// Records in the prefix (the checkpoint's `records`).
    pub(super) records: u64,
    /// The prefix's length in bytes (the checkpoint's `bytes`).
    pub(super) bytes: u64,
    /// The prefix's last `entry_hash` (the checkpoint's `head_hash`).
    pub(super) head_hash: Option<String>,
    /// SHA-256 over the prefix's bytes, to extend into the next checkpoint's `prefix_sha256`.
    digest: warrant_protocol::checkpoint::PrefixDigest,
    /// Decisions by packet id, folded in chain order ([`fold_decision`]).
    pub(super) decisions: D,
    /// Approvals gathered towards a quorum, by packet id ([`fold_decision`]).
    pub(super) cosigning: HashMap<String, Cosigning>,
    /// The principal's control, grant and key-event records, whole, in chain order (replayed
    /// with the same code a verification folds them with).
    pub(super) events: Vec<Map<String, Value>>,
    /// The first publisher each agent was bound to ([`ControlState::bind_publisher`]), in chain order.
    pub(super) publishers: Vec<(String, u32)>,
    /// The `content_hash` of the last receipt in the prefix.
    pub(super) last_receipt_hash: Option<String>,
    /// Every `record_id` of the prefix, as a Bloom filter: a tail id it may hold sends the
    /// decision to the slower path, which compares the ids exactly.
    record_ids: IdFilter,
    /// The prefix's evidence rows ([`super::chain_evidence_of`]) as distinct rows with counts, in
    /// order of first appearance ([`ChainEvidence::runs`]): what every posterior sums.
    #[serde(default)]
    pub(super) evidence: Vec<(EvidenceRow, u64)>,
}

impl PrefixFold {
    /// The prefix's evidence ([`PrefixFold::evidence`]) as the chain view keeps it.
    fn chain_evidence(&self) -> ChainEvidence {
        let mut evidence = ChainEvidence::default();
        for (row, n) in &self.evidence {
            evidence.push_run(row.clone(), *n);
        }
        evidence
    }

    /// [`PrefixFold::view`], moving the evidence rows into the view instead of copying them.
    pub(super) fn into_view(mut self, pinned: &PinnedKeys) -> (ChainView, chain::Verified) {
        let runs = std::mem::take(&mut self.evidence);
        let (mut view, prefix) = self.view(pinned);
        view.evidence.reserve(runs.len());
        for (row, n) in runs {
            view.evidence.push_run(row, n);
        }
        (view, prefix)
    }

    /// The chain view the fold stands for (no report) and the prefix it covers, its key events
    /// applied to the pins (`pinned`).
    pub(super) fn view(&self, pinned: &PinnedKeys) -> (ChainView, chain::Verified) {
        let mut prefix = chain::Verified {
            records: self.records,
            bytes: self.bytes,
            head_hash: self.head_hash.clone(),
            keys: warrant_protocol::key_event::ChainKeys::default(),
        };
        let mut view =
            ChainView { decisions: self.decisions.clone(), cosigning: self.cosigning.clone(), ..ChainView::default() };
        let mut grants = Vec::new();
        for rec in &self.events {
            if let Some(c) = ControlEvent::of_record(rec) {
                view.controls.apply(&c);
            }
            if let Some(g) = warrant_protocol::grant::GrantEvent::of_record(rec) {
                grants.push(g);
            }
            apply_key_event(&mut prefix.keys, rec, pinned);
        }
        // As a scan of the prefix applies them: controls, then grants, then publishers.
        for g in &grants {
            view.grants.apply(g);
        }
        for (agent, uid) in &self.publishers {
            view.controls.bind_publisher(agent, *uid);
        }
        view.last_receipt_hash = self.last_receipt_hash.clone();
        view.evidence = self.chain_evidence();
        (view, prefix)
    }
}

/// Applies the key event `rec` carries, if any, to `keys` (starting from `pinned`), at its
/// record's 0-based index.
fn apply_key_event(keys: &mut warrant_protocol::key_event::ChainKeys, rec: &Map<String, Value>, pinned: &PinnedKeys) {
    if let Some(e) = warrant_protocol::key_event::KeyEvent::of_record(rec) {
        let index = rec.get("chain_index").and_then(Value::as_u64).unwrap_or(0).saturating_sub(1);
        keys.apply(&e, usize::try_from(index).unwrap_or(usize::MAX), pinned);
    }
}

/// A Bloom filter of record ids (10 bits an id at capacity, 7 probes: under 1% false positives
/// when full), probed at positions from the SHA-256 of the id, so it reads the same in every
/// build. Serialized as `{"capacity", "count", "bits": base64}`.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub(super) struct IdFilter {
    /// Ids it was sized for; past it, the fold is not used (the slower path builds a larger one).
    capacity: u64,
    /// Ids inserted.
    count: u64,
    #[serde(with = "base64_bytes")]
    bits: Vec<u8>,
}

/// Serde for bytes as a standard base64 string.
mod base64_bytes {
    use base64::Engine as _;
    pub fn serialize<S: serde::Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(bytes))
    }
    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text: String = serde::Deserialize::deserialize(d)?;
        base64::engine::general_purpose::STANDARD.decode(text).map_err(serde::de::Error::custom)
    }
}

/// The two 64-bit halves an id's probes are made from.
fn id_hash(id: &str) -> [u64; 2] {
    use sha2::Digest as _;
    let d: [u8; 32] = sha2::Sha256::digest(id.as_bytes()).into();
    let half = |i: usize| u64::from_le_bytes(d[i..i + 8].try_into().unwrap_or_default());
    [half(0), half(8) | 1]
}

impl IdFilter {
    const PROBES: u64 = 7;
    const BITS_PER_ID: u64 = 10;
    const MIN_CAPACITY: u64 = 1 << 16;

    fn positions(&self, h: [u64; 2]) -> impl Iterator<Item = usize> + '_ {
        let m = (self.bits.len() as u64 * 8).max(1);
        (0..Self::PROBES).map(move |i| (h[0].wrapping_add(i.wrapping_mul(h[1])) % m) as usize)
    }

    /// Whether the filter is sized for what it holds (an empty or overfull one is not used).
    pub(super) fn usable(&self) -> bool {
        !self.bits.is_empty() && self.count <= self.capacity
    }

    /// A filter of `ids`, sized for twice as many ([`IdFilter::insert_all`]).
    pub(super) fn of<'a>(ids: impl Iterator<Item = &'a str>) -> Self {
        let hashes: Vec<[u64; 2]> = ids.map(id_hash).collect();
        let mut filter = Self::default();
        filter.insert_all(&hashes);
        filter
    }

    /// Inserts ids (their [`id_hash`]es). An empty filter is first sized for twice as many ids
    /// as it is given (at least [`Self::MIN_CAPACITY`]).
    fn insert_all(&mut self, hashes: &[[u64; 2]]) {
        if self.bits.is_empty() {
            self.capacity = (2 * hashes.len() as u64).max(Self::MIN_CAPACITY);
            self.bits = vec![0; usize::try_from(self.capacity * Self::BITS_PER_ID / 8).unwrap_or(usize::MAX)];
        }
        for h in hashes {
            let pos: Vec<usize> = self.positions(*h).collect();
            for p in pos {
                self.bits[p / 8] |= 1 << (p % 8);
            }
        }
        self.count += hashes.len() as u64;
    }

    /// The filter's capacity, count and bits, to keep them apart (the agents' snapshot keeps
    /// the bits in a file of their own, read only when asked).
    pub(super) fn parts(&self) -> (u64, u64, &[u8]) {
        (self.capacity, self.count, &self.bits)
    }

    /// The filter of [`IdFilter::parts`]; `None` when the bits are not the length its capacity
    /// makes.
    pub(super) fn from_parts(capacity: u64, count: u64, bits: Vec<u8>) -> Option<Self> {
        let len = capacity.checked_mul(Self::BITS_PER_ID)? / 8;
        (u64::try_from(bits.len()).ok()? == len).then_some(Self { capacity, count, bits })
    }

    /// Whether `id` may be in the filter (false: it certainly is not). An empty filter may hold
    /// anything.
    pub(super) fn may_hold(&self, id: &str) -> bool {
        self.bits.is_empty() || self.positions(id_hash(id)).all(|p| self.bits[p / 8] & (1 << (p % 8)) != 0)
    }
}

/// What [`extend_fold`] found besides the fold.
#[derive(Default)]
struct PrefixScan {
    /// The records of the decisions whose packet id `keep` named (to restore their files).
    kept: Vec<Map<String, Value>>,
    /// A `record_id` of the range that is also one of `tail_ids` (a duplicate the tail check
    /// cannot see).
    reused_id: Option<String>,
}

/// Calls `found` with every `record_id` value in one chain line (no newline): each
/// `"record_id":"…"` as canonical JSON writes it, and for a line without one, or with an escape
/// in the value, the top-level `record_id` of the line parsed. Extra hits (a nested
/// `record_id`) only make a duplicate check stricter.
fn line_record_ids(line: &[u8], finder: &memchr::memmem::Finder<'_>, found: &mut impl FnMut(&str)) {
    let mut any = false;
    for hit in finder.find_iter(line) {
        let value = &line[hit + finder.needle().len()..];
        let Some(end) = memchr::memchr(b'"', value) else { break };
        match std::str::from_utf8(&value[..end]) {
            Ok(id) if !id.contains('\\') => {
                any = true;
                found(id);
            }
            _ => {
                any = false;
                break;
            }
        }
    }
    if !any
        && let Ok(rec) = serde_json::from_slice::<Map<String, Value>>(line)
        && let Some(id) = rec.get("record_id").and_then(Value::as_str)
    {
        found(id);
    }
}

/// The needle [`line_record_ids`] looks for.
const RECORD_ID_NEEDLE: &str = "\"record_id\":\"";

/// A spool's chain (never through a symlink) opened for reading at byte `from`.
fn open_chain_at(path: &Path, from: u64) -> io::Result<fs::File> {
    use io::{Seek as _, SeekFrom};
    let mut file = chain_file::open_regular(path, true).map_err(|e| io::Error::other(e.to_string()))?;
    file.seek(SeekFrom::Start(from))?;
    Ok(file)
}

/// The `record_id`s of the chain's lines from byte `from` on (the tail after a checkpoint).
fn record_ids_after(path: &Path, from: u64) -> io::Result<std::collections::HashSet<String>> {
    let mut file = open_chain_at(path, from)?;
    let mut tail = Vec::new();
    file.read_to_end(&mut tail)?;
    let finder = memchr::memmem::Finder::new(RECORD_ID_NEEDLE);
    let mut ids = std::collections::HashSet::new();
    for line in tail.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        line_record_ids(line, &finder, &mut |id| {
            ids.insert(id.to_owned());
        });
    }
    Ok(ids)
}

/// Folds the chain's bytes from `fold.bytes` to `to` (the records after the prefix the fold
/// covers; from the start for an empty fold) onto `fold`, read without verifying them again (the
/// caller verified them under the chain's lock, or only shows the result): the bytes extend the
/// fold's SHA-256, every `record_id` goes into its filter, and the principal's controls, grants,
/// key events, the agents' publishers and the decisions are folded in chain order. With
/// `tail_ids`, whether any record of the range has one of those ids; with `keep`, the whole
/// decision records of the packet ids it names.
///
/// One pass: the range is read in blocks of up to 8 MiB, hashed, and searched for the bytes that
/// name these records (`warrant_control`, `warrant_grant`, `warrant_key`, `warrant_decision`, the
/// publisher key); only those lines are parsed. A line with a `\u` escape is parsed too, since a
/// key could be spelled with one, so no such record is missed. Without `hash` (a view only shown,
/// never signed onto) the bytes are not hashed and the ids not filed: the fold is not kept.
///
/// # Errors
/// I/O errors; `UnexpectedEof` when the chain is shorter than `to` or the range does not end
/// with a newline; `InvalidData` when the fold's digest does not cover exactly its bytes.
fn extend_fold(
    path: &Path,
    fold: &mut PrefixFold,
    to: u64,
    keep: &(dyn Fn(&str) -> bool + Sync),
    tail_ids: Option<&std::collections::HashSet<String>>,
    hash: bool,
    pinned: &PinnedKeys,
) -> io::Result<PrefixScan> {
    use memchr::memmem::Finder;
    let from = fold.bytes;
    if fold.digest.len() != from || to < from {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "the fold does not cover its prefix"));
    }
    let mut reader = io::Read::take(open_chain_at(path, from)?, to - from);
    let mut finders = vec![
        Finder::new("warrant_control"),
        Finder::new("warrant_grant"),
        Finder::new("warrant_key"),
        Finder::new("warrant_decision"),
        Finder::new(warrant_protocol::control::PUBLISHER_KEY),
        Finder::new("\\u"),
    ];
    // A fold that is kept carries the range's evidence: every receipt is parsed too, its row
    // summed at once into the runs (a run per distinct row, whatever the range's length).
    let mut evidence: Option<ChainEvidence> = None;
    if hash {
        finders.push(Finder::new("tg_receipt"));
    }
    let receipt_needle = finders.len() - 1;
    let mut scan = warrant_protocol::canonical::scan::Scan::default();
    let id_finder = Finder::new(RECORD_ID_NEEDLE);
    let tail_ids = tail_ids.filter(|t| !t.is_empty());
    let mut bound: HashSet<String> = fold.publishers.iter().map(|(a, _)| a.clone()).collect();
    // The pins in effect as the range is folded (the key events so far applied in chain order),
    // which approvals towards a quorum are counted under ([`fold_decision`]).
    let mut keys = warrant_protocol::key_event::ChainKeys::default();
    for rec in &fold.events {
        apply_key_event(&mut keys, rec, pinned);
    }
    let mut ids: Vec<[u64; 2]> = Vec::new();
    let mut out = PrefixScan::default();
    let mut carry: Vec<u8> = Vec::new();
    // Blocks of at most 8 MiB, no larger than the range: a decision extends the fold by the
    // few records since the last checkpoint, and a zeroed 8 MiB buffer in memory the allocator
    // had handed out before cost it 2,048 page faults and a memset, milliseconds a decision.
    let block = usize::try_from((to - from).min(8 << 20)).unwrap_or(8 << 20);
    let mut buf = vec![0u8; block.max(1)];
    let mut read = 0u64;
    loop {
        let n = reader.read(&mut buf)?;
        if n == 0 {
            break;
        }
        read += n as u64;
        if hash {
            fold.digest.update(&buf[..n]);
        }
        carry.extend_from_slice(&buf[..n]);
        let Some(end) = memchr::memrchr(b'\n', &carry) else { continue };
        let block = &carry[..=end];
        let mut start = 0;
        for nl in memchr::memchr_iter(b'\n', block).filter(|_| hash || tail_ids.is_some()) {
            line_record_ids(&block[start..nl], &id_finder, &mut |id| {
                if hash {
                    ids.push(id_hash(id));
                }
                if out.reused_id.is_none() && tail_ids.is_some_and(|t| t.contains(id)) {
                    out.reused_id = Some(id.to_owned());
                }
            });
            start = nl + 1;
        }
        // Every needle's hits, with which needle it was (the receipts' is the last one).
        let mut hits: Vec<(usize, usize)> =
            finders.iter().enumerate().flat_map(|(k, f)| f.find_iter(block).map(move |h| (h, k))).collect();
        hits.sort_unstable();
        let mut next = 0;
        while let Some(&(h, _)) = hits.get(next) {
            let start = memchr::memrchr(b'\n', &block[..h]).map_or(0, |p| p + 1);
            let stop = h + memchr::memchr(b'\n', &block[h..]).unwrap_or(block.len() - h);
            let on_line = hits[next..].iter().take_while(|(at, _)| *at < stop).count();
            let only_receipt = hash && hits[next..next + on_line].iter().all(|(_, k)| *k == receipt_needle);
            next += on_line;
            let line = &block[start..stop];
            // A receipt and nothing else the fold reads (no control, grant, key, decision or
            // publisher, no `\u` escape): its canonical line's receipt is read from its text.
            if only_receipt && let Some(row) = receipt_row_of_line(line, &mut scan) {
                if let Some(row) = row {
                    evidence.get_or_insert_with(|| fold.chain_evidence()).push_run(row, 1);
                }
                continue;
            }
            // Lines verified under the chain's lock: parsed as they are.
            let Ok(rec) = serde_json::from_slice::<Map<String, Value>>(line) else { continue };
            if hash && let Some(row) = super::chain_evidence_of(&rec) {
                evidence.get_or_insert_with(|| fold.chain_evidence()).push_run(row, 1);
            }
            if ControlEvent::of_record(&rec).is_some()
                || warrant_protocol::grant::GrantEvent::of_record(&rec).is_some()
                || warrant_protocol::key_event::KeyEvent::of_record(&rec).is_some()
            {
                apply_key_event(&mut keys, &rec, pinned);
                fold.events.push(rec.clone());
            }
            if let Some((agent, uid)) = warrant_protocol::control::publisher_of(&rec)
                && bound.insert(agent.to_owned())
            {
                fold.publishers.push((agent.to_owned(), uid));
            }
            if let Some((id, d)) = chain_decision_of(&rec) {
                if keep(&id) {
                    out.kept.push(rec);
                }
                fold_decision(&mut fold.decisions, &mut fold.cosigning, id, d, keys.effective().unwrap_or(pinned));
            }
        }
        carry.drain(..=end);
    }
    if read != to - from || !carry.is_empty() {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the chain is shorter than its checkpoint"));
    }
    if hash {
        fold.record_ids.insert_all(&ids);
        if let Some(all) = evidence {
            fold.evidence = all.runs().map(|(r, n)| (r.clone(), n)).collect();
        }
    }
    fold.bytes = to;
    Ok(out)
}

/// The evidence row of a chain record that is a receipt and nothing else a fold reads, read from
/// its canonical line's `metadata.tg_receipt` text (`Some(None)`: the record is no evidence):
/// the row [`super::chain_evidence_of`] gives of the parsed line (test
/// `a_receipts_row_read_from_its_line_is_the_parsed_records`). `None` when the line is not
/// canonical: the caller parses it.
fn receipt_row_of_line(
    line: &[u8],
    scan: &mut warrant_protocol::canonical::scan::Scan,
) -> Option<Option<warrant_protocol::graduation::evidence::EvidenceRow>> {
    let record = chain::RawRecord::scan(std::str::from_utf8(line).ok()?, scan)?;
    let receipt = record.metadata_member("tg_receipt");
    Some(receipt.and_then(|t| warrant_protocol::graduation::receipt::receipt_evidence_of_text(t, None).0))
}

/// The principal's own checkpoint copy ([`crate::checkpoint_files::local_copy`]),
/// verified under the pinned keys; `None` when there is none or it does not verify.
fn local_checkpoint(spool: &Spool, pinned: &PinnedKeys) -> Option<warrant_protocol::checkpoint::Checkpoint> {
    let local = crate::checkpoint_files::local_copy(spool)?;
    let bytes = read_limited(&local).ok()?;
    let signed: Value = serde_json::from_slice(&bytes).ok()?;
    warrant_protocol::checkpoint::verify(&signed, pinned, &local.display().to_string()).ok()
}

/// The view of the chain from the principal's own checkpoint copy and the records after it,
/// for the console to show at once while it verifies the whole chain in the background: the
/// tail verified, the prefix taken from the principal's fold of it when the checkpoint binds one
/// ([`warrant_protocol::checkpoint::Checkpoint::fold_sha256`]), else trusted as the checkpoint
/// describes it and scanned for its decisions and controls (its bytes are not hashed, unlike
/// before a decision). Its evidence is the whole chain's from a fold, the tail's only from a
/// scan. `None` when there is no copy or anything is in doubt.
#[must_use]
pub fn checkpointed_chain_view(spool: &Spool, pinned: &PinnedKeys) -> Option<ChainView> {
    folded_view(spool, pinned, &|_| false, &|| None)
        .or_else(|| checkpointed_view(spool, pinned, &|_| false, false))
        .map(|c| c.view)
}

/// A chain view a decision or a control is signed onto ([`verified_view`]), or the console shows
/// first: made from a checkpoint and the records after it ([`folded_view`],
/// [`checkpointed_view`]), or from the whole chain.
pub(super) struct Checkpointed {
    pub(super) view: ChainView,
    /// Decision records kept for restoring their files.
    pub(super) kept: Vec<Map<String, Value>>,
    /// The fold of a prefix of the chain verified under the lock (its `bytes` may end before
    /// the chain does: the records after it are folded on when the next checkpoint is signed),
    /// its `last_receipt_hash` the view's; `None` for a view of a prefix not proven.
    pub(super) fold: Option<PrefixFold>,
}

/// The packet ids whose prefix decisions a view must hold, asked once the fold's file is read
/// and before its decisions are decoded (so a caller can gather them meanwhile); `None`: all.
/// A view made with a set holds no other prefix decision: for a caller that looks decisions up
/// only by those ids (`warrant list`, by the packets it lists).
pub type Wanted<'a> = &'a dyn Fn() -> Option<HashSet<String>>;

/// The fold in `bytes` (the principal's file, its digest already checked), with only the
/// decisions `wanted` asks for decoded; the others are skimmed as JSON and dropped. `None` when
/// the file does not parse, or a prefix decision's id is one `keep` asks to restore (its record
/// must then be read: the caller takes a slower path).
fn read_fold_selected(bytes: &[u8], keep: &(dyn Fn(&str) -> bool + Sync), wanted: Wanted<'_>) -> Option<PrefixFold> {
    use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
    /// The decisions of a fold's JSON object, decoded for the ids in `wanted` (all for `None`);
    /// `Err` when an id is one to restore.
    struct Select<'f> {
        keep: &'f dyn Fn(&str) -> bool,
        wanted: Option<&'f HashSet<String>>,
    }
    impl<'de> DeserializeSeed<'de> for Select<'_> {
        type Value = super::Decisions;
        fn deserialize<De: serde::Deserializer<'de>>(self, d: De) -> Result<Self::Value, De::Error> {
            d.deserialize_map(self)
        }
    }
    impl<'de> Visitor<'de> for Select<'_> {
        type Value = super::Decisions;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("decisions by packet id")
        }
        fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
            let mut out = HashMap::new();
            while let Some(id) = map.next_key::<String>()? {
                if (self.keep)(&id) {
                    return Err(serde::de::Error::custom("a prefix decision to restore"));
                }
                if self.wanted.is_none_or(|w| w.contains(&id)) {
                    out.insert(id, std::sync::Arc::new(map.next_value::<ChainDecision>()?));
                } else {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            Ok(out)
        }
    }
    let raw: PrefixFold<&serde_json::value::RawValue> = serde_json::from_slice(bytes).ok()?;
    let wanted = wanted();
    let select = Select { keep, wanted: wanted.as_ref() };
    let decisions = select.deserialize(&mut serde_json::Deserializer::from_str(raw.decisions.get())).ok()?;
    let PrefixFold {
        version,
        records,
        bytes,
        head_hash,
        digest,
        decisions: _,
        cosigning,
        events,
        publishers,
        last_receipt_hash,
        record_ids,
        evidence,
    } = raw;
    Some(PrefixFold {
        version,
        records,
        bytes,
        head_hash,
        digest,
        decisions,
        cosigning,
        events,
        publishers,
        last_receipt_hash,
        record_ids,
        evidence,
    })
}

/// The chain view a decision or a control is signed onto, from the principal's own signed
/// checkpoint copy and the fold beside it, reading nothing of the prefix: the fold's bytes must
/// hash to the checkpoint's `fold_sha256` and describe its prefix (`records`, `bytes`,
/// `head_hash`); the chain must still end that prefix with the record signed
/// ([`chain_file::prefix_holds`], one line read); no `record_id` of the tail may be in the
/// fold's filter of the prefix's ids; the tail is verified ([`chain_file::verify_tail_with`]) and
/// folded onto the fold's view. `None` whenever anything is in doubt (no copy, a bad signature,
/// no `fold_sha256`, a fold that is missing, altered, of another checkpoint or overfull, a
/// prefix decision or co-signing whose file `keep` asks to restore, a tail id the filter may hold, a finding in
/// the tail or at a checkpoint): the caller takes a slower path.
pub(super) fn folded_view(
    spool: &Spool,
    pinned: &PinnedKeys,
    keep: &(dyn Fn(&str) -> bool + Sync),
    wanted: Wanted<'_>,
) -> Option<Checkpointed> {
    let cp = local_checkpoint(spool, pinned)?;
    let want = cp.fold_sha256.as_deref()?;
    let bytes = crate::checkpoint_files::read_fold(spool).ok()?;
    if warrant_protocol::canonical::sha256_prefixed(&bytes) != want {
        return None;
    }
    let mut fold = read_fold_selected(&bytes, keep, wanted)?;
    let describes = fold.version == FOLD_VERSION
        && fold.records == cp.records
        && fold.bytes == cp.bytes
        && fold.head_hash.as_deref() == Some(cp.head_hash.as_str())
        && fold.digest.len() == fold.bytes
        && fold.record_ids.usable();
    // A decision file to restore needs its records: a prefix decision's, or the approvals towards
    // a quorum the prefix gathered (a quorum met in the tail is restored with them).
    if !describes || fold.cosigning.keys().any(|id| keep(id)) {
        return None;
    }
    let tail_ids = record_ids_after(&spool.chain_path(), fold.bytes).ok()?;
    if tail_ids.iter().any(|id| fold.record_ids.may_hold(id)) {
        return None;
    }
    let (base, prefix) = fold.view(pinned);
    let progress = std::sync::atomic::AtomicU64::new(0);
    let (view, kept, _) = view_after(spool, pinned, &prefix, Some(base), keep, &progress).ok()??;
    if !view.report.is_valid() {
        return None;
    }
    fold.last_receipt_hash.clone_from(&view.last_receipt_hash);
    Some(Checkpointed { view, kept, fold: Some(fold) })
}

/// The chain view from the principal's own signed checkpoint copy and the records after it, the
/// prefix read: the tail is verified ([`chain_file::verify_tail_with`]), and the prefix is
/// scanned ([`extend_fold`]). With `prove_prefix` (before a signature) the prefix must still be,
/// byte for byte, the one the principal verified: its SHA-256 must equal the checkpoint's
/// `prefix_sha256`, and no tail `record_id` may repeat one of it; the fold made is then kept for
/// the next checkpoint. The view's evidence is the tail's only (`docs/spool.md`, Incremental
/// verification). `None` whenever anything is in doubt (no copy, a bad signature, a checkpoint
/// without `prefix_sha256`, a prefix that changed, a finding in the tail or at a checkpoint, a
/// repeated id): the caller verifies the whole chain.
fn checkpointed_view(
    spool: &Spool,
    pinned: &PinnedKeys,
    keep: &(dyn Fn(&str) -> bool + Sync),
    prove_prefix: bool,
) -> Option<Checkpointed> {
    let cp = local_checkpoint(spool, pinned)?;
    let tail_ids = if prove_prefix {
        cp.prefix_sha256.as_ref()?;
        Some(record_ids_after(&spool.chain_path(), cp.bytes).ok()?)
    } else {
        None
    };
    let mut fold = PrefixFold { version: FOLD_VERSION, ..PrefixFold::default() };
    let scan =
        extend_fold(&spool.chain_path(), &mut fold, cp.bytes, keep, tail_ids.as_ref(), prove_prefix, pinned).ok()?;
    if scan.reused_id.is_some() {
        return None;
    }
    if prove_prefix && cp.prefix_sha256.as_deref() != Some(fold.digest.finish().as_str()) {
        return None;
    }
    fold.records = cp.records;
    fold.head_hash = Some(cp.head_hash.clone());
    let (base, prefix) = fold.view(pinned);
    let progress = std::sync::atomic::AtomicU64::new(0);
    let (mut view, mut kept, _) = view_after(spool, pinned, &prefix, Some(base), keep, &progress).ok()??;
    kept.extend(scan.kept);
    if !view.report.is_valid() {
        return None;
    }
    if view.last_receipt_hash.is_none() {
        view.last_receipt_hash = chain_file::find_last(&spool.chain_path(), receipt_hash_of).ok()?;
    }
    fold.last_receipt_hash.clone_from(&view.last_receipt_hash);
    Some(Checkpointed { view, kept, fold: prove_prefix.then_some(fold) })
}

/// The chain as verified under the append lock, refusing one that does not verify: what a
/// decision or a control is signed onto. `keep` is as for [`verify_chain_records`]. Three ways,
/// the first that has no doubt: from the principal's own checkpoint copy and its fold of the
/// prefix ([`folded_view`]: nothing of the prefix read, the tail verified); from the copy with
/// the prefix read, hashed and compared with its `prefix_sha256` ([`checkpointed_view`]); from the
/// whole chain verified again ([`whole_view_for_signing`]). A tail with findings always falls
/// back to the whole chain, so the refusal names what `warrant verify` reports. Also returns the
/// fold of the prefix that is known good, for the next checkpoint ([`sign_checkpoint`]).
///
/// # Errors
/// [`DecideError::Chain`] for I/O, [`DecideError::ChainBroken`] with the first finding.
pub(super) fn verified_view(
    spool: &Spool,
    pinned: &PinnedKeys,
    keep: impl Fn(&str) -> bool + Sync,
) -> Result<Checkpointed, DecideError> {
    if let Some(c) =
        folded_view(spool, pinned, &keep, &|| None).or_else(|| checkpointed_view(spool, pinned, &keep, true))
    {
        return Ok(c);
    }
    whole_view_for_signing(spool, pinned, &keep)
}

/// The whole chain verified (the parallel byte-level verifier, [`chain_file::verify_file`], with
/// every warrant signature against the pinned keys, and the principal's latest checkpoint
/// checked), then, if it verified, folded once ([`extend_fold`]: controls, grants, key events,
/// publishers, decisions, record ids, SHA-256) for the view and the next checkpoint. As with a
/// checkpointed view, the evidence rows are not read (`docs/spool.md`, Incremental
/// verification). Called under the chain's lock, so the fold reads the bytes that were verified.
///
/// # Errors
/// [`DecideError::Chain`] for I/O, [`DecideError::ChainBroken`] with the first finding.
fn whole_view_for_signing(
    spool: &Spool,
    pinned: &PinnedKeys,
    keep: &(dyn Fn(&str) -> bool + Sync),
) -> Result<Checkpointed, DecideError> {
    let path = spool.chain_path();
    let opts = VerifyOptions { pinned: Some(pinned), strict_signatures: true };
    let mut report = match fs::symlink_metadata(&path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => chain::VerifyReport::default(),
        _ => chain_file::verify_file(&path, opts)?,
    };
    let (checkpoint, _) = crate::checkpoint_files::latest(spool, pinned);
    if let Some(f) = checkpoint.and_then(|cp| crate::checkpoint_files::check(&path, &cp, &report)) {
        report.findings.push(f);
    }
    if let Some(first) = report.first() {
        return Err(DecideError::ChainBroken(first.to_string()));
    }
    let bytes = fs::symlink_metadata(&path).map_or(0, |m| m.len());
    let io_error = |e: io::Error| DecideError::Chain(ChainError::Io { path: path.clone(), source: e });
    let mut fold = PrefixFold { version: FOLD_VERSION, ..PrefixFold::default() };
    let scan = if bytes == 0 {
        PrefixScan::default()
    } else {
        extend_fold(&path, &mut fold, bytes, keep, None, true, pinned).map_err(io_error)?
    };
    let (mut view, _) = fold.view(pinned);
    view.report = report;
    view.last_receipt_hash = chain_file::find_last(&path, receipt_hash_of)?;
    fold.last_receipt_hash.clone_from(&view.last_receipt_hash);
    Ok(Checkpointed { view, kept: scan.kept, fold: Some(fold) })
}

/// Signs the checkpoint that follows an appended decision or control (`a`: the last record
/// appended; `bytes`: the chain's length now) and writes it
/// ([`crate::checkpoint_files::write`]); a failed write is logged, the decision stands.
/// `fold` is the fold of the prefix verified under the lock ([`verified_view`]): the records
/// after it, up to `bytes` (read under the lock), are folded on ([`extend_fold`]), so its SHA-256
/// becomes the checkpoint's `prefix_sha256`; the fold is written beside the principal's copy
/// ([`crate::checkpoint_files::write_fold`]) and its digest signed as `fold_sha256`.
/// Without a fold the chain is hashed from its start and no fold is written. Returns the signed
/// checkpoint for the decision file, `Null` when the chain could not be read to hash it (the
/// decision stands without a checkpoint, and the next decision verifies the whole chain).
pub(super) fn sign_checkpoint(
    spool: &Spool,
    principal: &Principal,
    pinned: &PinnedKeys,
    a: &chain::Appended,
    bytes: u64,
    at: &str,
    fold: Option<PrefixFold>,
) -> Value {
    let verified = fold.is_some();
    let mut fold = fold.unwrap_or_else(|| PrefixFold { version: FOLD_VERSION, ..PrefixFold::default() });
    if let Err(e) = extend_fold(&spool.chain_path(), &mut fold, bytes, &|_| false, None, true, pinned) {
        tracing::warn!(error = %e, "could not hash the chain for the checkpoint; none signed");
        return Value::Null;
    }
    fold.records = a.chain_index;
    fold.head_hash = Some(a.entry_hash.clone());
    if let Some(h) = a.record.as_object().and_then(receipt_hash_of) {
        fold.last_receipt_hash = Some(h);
    }
    let (fold_sha256, snapshot_sha256) = if verified {
        let written = serde_json::to_vec(&fold).map_err(io::Error::other).and_then(|json| {
            let digest = warrant_protocol::canonical::sha256_prefixed(&json);
            crate::checkpoint_files::write_fold(spool, &json).map(|w| w.map(|()| digest))
        });
        let fold_sha256 = written.unwrap_or_else(|e| {
            tracing::warn!(error = %e, "could not write the fold of the chain; the next decision reads the chain");
            None
        });
        let snapshot_sha256 = super::snapshot::write_snapshot(spool, &fold)
            .inspect_err(|e| tracing::warn!(error = %e, "could not write the agents' snapshot; agents read the chain"))
            .ok();
        (fold_sha256, snapshot_sha256)
    } else {
        (None, None)
    };
    let prefix_sha256 = fold.digest.finish();
    let cp = warrant_protocol::checkpoint::sign_with_fold(
        principal,
        a.chain_index,
        &a.entry_hash,
        bytes,
        warrant_protocol::checkpoint::Digests {
            prefix_sha256: &prefix_sha256,
            fold: fold_sha256.as_deref(),
            snapshot: snapshot_sha256.as_deref(),
        },
        at,
    );
    if let Err(e) = crate::checkpoint_files::write(spool, &cp) {
        tracing::warn!(error = %e, "could not write the checkpoint");
    }
    cp
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // A fold reads a receipt-only line's row from its text: the same row as the parsed record's,
    // whatever the receipt holds, and no row where the record is no evidence.
    #[test]
    fn a_receipts_row_read_from_its_line_is_the_parsed_records() {
        let receipt = json!({"action_class": "draft.compose", "outcome": "approve", "source_type": "receipt",
            "created_at": "2026-09-30T12:05:30.574Z", "receipt_id": "r-1", "content_hash": "sha256:ab"});
        let records = [
            json!({"agent": "a", "metadata": {"tg_receipt": receipt}, "outcome": "success"}),
            json!({"metadata": {"note": "caf\u{e9}", "tg_receipt": {"actionClass": "email.send.external", "outcome": "reject"}}}),
            json!({"metadata": {"tg_receipt": {"action_class": 3, "outcome": "approve"}}}),
            json!({"metadata": {"tg_receipt": "draft.compose"}}),
            json!({"metadata": {"other": {"tg_receipt": receipt}}}),
            json!({"metadata": "tg_receipt"}),
            json!({"note": "tg_receipt"}),
        ];
        let mut scan = warrant_protocol::canonical::scan::Scan::default();
        for rec in records {
            let line = warrant_protocol::canonical::to_canonical_vec(&rec);
            let parsed: Map<String, Value> = serde_json::from_slice(&line).expect("a record");
            let read = receipt_row_of_line(&line, &mut scan).expect("a canonical line");
            assert_eq!(read, super::super::chain_evidence_of(&parsed), "{rec}");
        }
        let first = warrant_protocol::canonical::to_canonical_vec(&json!({"metadata": {"tg_receipt": receipt}}));
        assert!(receipt_row_of_line(&first, &mut scan).is_some_and(|r| r.is_some()), "a receipt is read at all");
        assert_eq!(
            receipt_row_of_line(b"{ \"metadata\": {} }", &mut scan),
            None,
            "not canonical: parsed by the caller"
        );
    }
}
