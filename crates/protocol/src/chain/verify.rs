//! The streaming verifier: the sequential checks in record order, over parsed values
//! ([`verify_stream`]) or, in parallel, over the bytes of any reader ([`verify_reader`]).

use super::checks::{Local, check_local, signature_check};
use super::fields::{FieldRef, Fields, IdFields, KEY_ENTRY_HASH, KEY_PREVIOUS_HASH, KEY_RECORD_ID, RawFields};
use super::lineage::{IdKeys, Lineage, check_lineage, effects};
use super::{Check, Line, MAX_LINE_BYTES, VerifyOptions, VerifyReport, show_opt};
use crate::canonical;
use crate::keys::PinnedKeys;
use serde_json::{Map, Value};
use std::io::{self, Read};

/// The checks that run in record order: `previous_hash` against the prior record's recorded
/// `entry_hash`, lineage, duplicate `record_id`s, and the trust the chain's key events add
/// (rotations and renames, [`crate::key_event`]).
#[derive(Default)]
struct Sequencer<'a> {
    report: VerifyReport,
    previous: Option<String>,
    lineage: Lineage,
    /// The verifier's pins (`None`: signatures are not checked).
    pinned: Option<&'a PinnedKeys>,
    /// What the verified key events so far added to them.
    chain_keys: crate::key_event::ChainKeys,
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
            match (crate::decision::check_record_signature(full, effective), last) {
                (Ok(verified), Some(_)) => {
                    self.report.findings.pop();
                    ok = verified;
                }
                (Err(message), Some(last)) => {
                    last.check = signature_check(full, effective);
                    last.message = message.to_string();
                }
                _ => {}
            }
        }
        if !ok {
            return false;
        }
        if !self.chain_keys.is_empty()
            && let Some((fp, _)) = crate::key_event::first_signer(full)
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
        if let Some(event) = crate::key_event::KeyEvent::of_record(full).filter(|_| clean) {
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

/// A record checked on a worker, with what the caller's [`RecordSink::extract`] made of it.
enum Checked<T> {
    /// A record parsed whole (its metadata matters to the checks, or it is not canonical); the
    /// key of its `record_id` ([`IdKeys::key`]).
    Parsed { map: Map<String, Value>, local: Local, key: Option<u128>, extra: Option<T> },
    /// A canonical record checked from its bytes: where the string values of its
    /// `previous_hash`, `entry_hash` and `record_id` (what the sequential checks read; `None`
    /// when missing or not a string) were copied in the block's id text, and its id's key.
    Raw { ids: [Option<std::ops::Range<usize>>; 3], local: Local, key: Option<u128>, extra: Option<T> },
    /// Why the line is not a record.
    Unparsable(String),
}

/// What a caller of [`verify_blocks`] wants of each record besides the verification: `extract`
/// runs on the worker that checked the record (in parallel, in no particular order) and turns
/// the record into a `T`; `on_record` receives each record's `T` in chain order, with the
/// record's global index (0-based), on the calling thread. Records that fail a check are handed
/// over too: the report's findings say which (by index). What `extract` does never changes the
/// report.
pub struct RecordSink<'k, T, F> {
    /// Runs on a worker: what the caller keeps of record `index`.
    pub extract: &'k (dyn Fn(usize, SinkRecord<'_>) -> T + Sync),
    /// Receives what `extract` made of each record, in chain order.
    pub on_record: F,
}

/// A record as [`RecordSink::extract`] sees it.
#[derive(Clone, Copy)]
pub enum SinkRecord<'a> {
    /// A record the verifier parsed whole: its metadata has a member the checks read
    /// (a decision, a control, a grant, a key event, lineage or effects), or it is not canonical.
    Whole(&'a Map<String, Value>),
    /// A canonical record whose metadata the checks do not read (an agent's receipt, most of a
    /// chain), checked from its bytes and not parsed.
    Raw(RawRecord<'a>),
}

/// A canonical record checked from its bytes ([`SinkRecord::Raw`]): its members' JSON text,
/// found by the scanner, parsed only when asked.
#[derive(Clone, Copy)]
pub struct RawRecord<'a> {
    text: &'a str,
    scan: &'a canonical::scan::Scan,
    metadata: Option<usize>,
}

impl<'a> RawRecord<'a> {
    /// `text` as a canonical record read by `scan` (`None` when it is not canonical JSON of an
    /// object): a line a caller reads outside a verification, such as a fold of a verified prefix.
    #[must_use]
    pub fn scan(text: &'a str, scan: &'a mut canonical::scan::Scan) -> Option<Self> {
        if !canonical::scan::scan_object_str(text, scan) {
            return None;
        }
        let metadata = scan
            .members
            .iter()
            .position(|m| &text[m.key.clone()] == "metadata" && text.as_bytes()[m.value.start] == b'{');
        Some(Self { text, scan, metadata })
    }

    /// The JSON text of the metadata member `name`, if the record has one (and its metadata is
    /// an object).
    #[must_use]
    pub fn metadata_member(&self, name: &str) -> Option<&'a str> {
        let m = self.metadata?;
        let text = self.text;
        self.scan.children(m).find(|c| &text[c.key.clone()] == name).map(|c| &text[c.value.clone()])
    }

    /// The record parsed ([`canonical::parse_strict`]): its top-level fields, with only the
    /// `keep` members of `metadata`.
    ///
    /// # Errors
    /// A member the strict reader refuses (an integer outside the 64-bit range).
    pub fn to_map(&self, keep: &[&str]) -> Result<Map<String, Value>, canonical::JsonError> {
        partial_map(self.text.as_bytes(), self.scan, keep)
    }
}

/// A partial record from a canonical line: every top-level field, with only the `keep`
/// members of its metadata.
fn partial_map(
    line: &[u8],
    scan: &canonical::scan::Scan,
    keep: &[&str],
) -> Result<Map<String, Value>, canonical::JsonError> {
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
/// copied to `ids`, the block's id text), and handed to `extract` unparsed ([`SinkRecord::Raw`]).
/// Anything else is parsed whole and re-serialised (§4.1).
fn check_line<T>(
    i: usize,
    line: &[u8],
    ids: &mut String,
    scan: &mut canonical::scan::Scan,
    extract: Option<Extract<'_, T>>,
    keys: &IdKeys,
    opts: VerifyOptions<'_>,
) -> Checked<T> {
    let parsed = |map: Map<String, Value>, local: Local| Checked::Parsed {
        key: keys.of(&map),
        extra: extract.map(|extract| extract(i, SinkRecord::Whole(&map))),
        map,
        local,
    };
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
            let raw = RawRecord { text, scan, metadata: fields.metadata };
            let extra = extract.map(|extract| extract(i, SinkRecord::Raw(raw)));
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
            return Checked::Raw { ids: found, local, key, extra };
        }
        return match canonical::parse_strict(line) {
            Ok(Value::Object(map)) => {
                let local = check_local(i, &map.field_refs(), map.unknown_keys(), Some(&map), &digest, opts);
                parsed(map, local)
            }
            Ok(_) => Checked::Unparsable("line is not a JSON object".into()),
            Err(e) => Checked::Unparsable(format!("line is not JSON: {e}")),
        };
    }
    match canonical::parse_strict(line) {
        Ok(Value::Object(map)) => {
            let digest = canonical::canonical_digest_without(&map, "entry_hash");
            let local = check_local(i, &map.field_refs(), map.unknown_keys(), Some(&map), &digest, opts);
            parsed(map, local)
        }
        Ok(_) => Checked::Unparsable("line is not a JSON object".into()),
        Err(e) => Checked::Unparsable(format!("line is not JSON: {e}")),
    }
}

/// A sink's `extract`, as the workers use it.
type Extract<'k, T> = &'k (dyn Fn(usize, SinkRecord<'_>) -> T + Sync);

/// Bytes read per block handed to a worker: 256 KiB, about 270 of warrant's records. The
/// blocks between the reader and the sequencer and their checked records are most of a
/// verification's memory (a window of them, [`verify_blocks`]); at 1 MiB a block they were
/// 23 MB of the console's peak heap at a million records, and a smaller block is no slower.
const BLOCK_BYTES: usize = 256 << 10;

/// The lines of `data` (up to its last newline) and where the rest begins. `skipping` says
/// that `data` starts inside an over-long line already reported (its end is skipped); on return
/// it says whether the rest is one (reported here as [`RawLine::TooLong`], to be skipped), else
/// the rest is the start of the next line.
fn split_lines(data: &[u8], skipping: &mut bool) -> (Vec<RawLine>, usize) {
    let mut lines = Vec::new();
    let mut line_start = 0;
    for end in memchr::memchr_iter(b'\n', data) {
        if *skipping {
            *skipping = false;
        } else if end - line_start > MAX_LINE_BYTES {
            lines.push(RawLine::TooLong);
        } else {
            lines.push(RawLine::Bytes(line_start..end));
        }
        line_start = end + 1;
    }
    if !*skipping && data.len() - line_start > MAX_LINE_BYTES {
        lines.push(RawLine::TooLong);
        *skipping = true;
    }
    (lines, line_start)
}

/// The id text and checked lines of one block, which the sequencer hands back to the workers
/// emptied, so they are allocated about once per worker rather than once per block (a million
/// records are some 3,700 blocks; the allocator keeps freed memory resident for a while).
type BlockResult<T> = (String, Vec<Checked<T>>);

/// Checks the lines of one block, as a worker does (record `first_index + k` for line `k`),
/// into `out`, emptied first: the block's id text and each line's [`Checked`].
fn check_block<T>(
    block: &Block,
    scan: &mut canonical::scan::Scan,
    extract: Option<Extract<'_, T>>,
    keys: &IdKeys,
    opts: VerifyOptions<'_>,
    out: &mut BlockResult<T>,
) {
    let (ids, checked) = out;
    ids.clear();
    checked.clear();
    checked.extend(block.lines.iter().enumerate().map(|(k, line)| match line {
        RawLine::TooLong => Checked::Unparsable(format!("line longer than {MAX_LINE_BYTES} bytes")),
        RawLine::Bytes(r) => check_line(block.first_index + k, &block.data[r.clone()], ids, scan, extract, keys, opts),
    }));
}

/// Input at most this long is verified on the calling thread ([`verify_blocks`]): starting
/// threads costs more than checking a short tail (a hook's, after the principal's checkpoint).
const INLINE_BYTES: usize = 64 * 1024;

/// Reads `reader` into blocks of whole lines. Returns the length of a torn final line (bytes
/// after the last newline), if any. Blocks are read into buffers the workers hand back through
/// `recycled` when there is one (a fresh buffer per block costs page faults that take longer
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
        let (lines, line_start) = split_lines(&data, &mut skipping);
        if !skipping {
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
/// progress bar). `warrant_store::chain_file::verify_tail_with` runs the same verifier on a spool's chain after a
/// verified prefix, with a [`RecordSink`]: what the caller keeps of each record is made on the
/// workers.
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
    verify_blocks::<R, (), fn(usize, ())>(reader, opts, progress, None, &Verified::default()).map(|(report, _)| report)
}

/// Verifies the lines `reader` yields as the records that follow `prefix` (starting from its key
/// events; returned with those of the lines): the first line is
/// record `prefix.records` (0-based) and must link to `prefix.head_hash`. `sink` (see
/// [`RecordSink`]) receives what the caller keeps of each record, in chain order.
///
/// # Errors
/// I/O errors of `reader`.
pub fn verify_blocks<R, T, F>(
    reader: R,
    opts: VerifyOptions<'_>,
    progress: &std::sync::atomic::AtomicU64,
    sink: Option<RecordSink<'_, T, F>>,
    prefix: &Verified,
) -> io::Result<(VerifyReport, crate::key_event::ChainKeys)>
where
    R: Read + Send,
    T: Send,
    F: FnMut(usize, T),
{
    let extract = sink.as_ref().map(|s| s.extract);
    let mut on_record = sink.map(|s| s.on_record);
    let first = usize::try_from(prefix.records).unwrap_or(usize::MAX);
    let mut seq = Sequencer {
        previous: prefix.head_hash.clone(),
        pinned: opts.pinned,
        chain_keys: prefix.keys.clone(),
        ..Sequencer::default()
    };
    seq.report.total = first;
    // A short input (a tail after a checkpoint) is checked here, with no thread started.
    let mut reader = reader;
    let mut head = Vec::new();
    let n = (&mut reader).take(INLINE_BYTES as u64 + 1).read_to_end(&mut head)?;
    progress.fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
    if n <= INLINE_BYTES {
        let mut skipping = false;
        let (lines, line_start) = split_lines(&head, &mut skipping);
        let torn = (!skipping && line_start < head.len()).then_some((head.len() - line_start) as u64);
        let block = Block { seq: 0, first_index: first, data: head, lines };
        let keys = seq.lineage.keys.clone();
        let mut out = (String::new(), Vec::new());
        check_block(&block, &mut canonical::scan::Scan::default(), extract, &keys, opts, &mut out);
        sequence(&mut seq, &mut on_record, first, &out.0, &mut out.1);
        let keys = std::mem::take(&mut seq.chain_keys);
        let mut report = seq.finish();
        report.torn_tail = torn;
        return Ok((report, keys));
    }
    let reader = io::Cursor::new(head).chain(reader);
    let workers = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get).clamp(1, 8);
    let torn = std::thread::scope(|scope| {
        let (block_tx, block_rx) = std::sync::mpsc::sync_channel::<Block>(workers * 2);
        let block_rx = std::sync::Arc::new(std::sync::Mutex::new(block_rx));
        let (done_tx, done_rx) = std::sync::mpsc::sync_channel::<(usize, BlockResult<T>)>(workers * 2);
        // Spare buffers for the reader: two, so a block's buffer is reused, not kept idle (the
        // window below bounds the blocks in use; a buffer that finds the queue full is freed).
        let (recycle_tx, recycle_rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(2);
        // The blocks' results, emptied by the sequencer, go back to the workers the same way.
        let (results_tx, results_rx) = std::sync::mpsc::sync_channel::<BlockResult<T>>(workers);
        let results_rx = std::sync::Arc::new(std::sync::Mutex::new(results_rx));
        for _ in 0..workers {
            let (rx, tx, recycle_tx) = (std::sync::Arc::clone(&block_rx), done_tx.clone(), recycle_tx.clone());
            let keys = seq.lineage.keys.clone();
            let results_rx = std::sync::Arc::clone(&results_rx);
            scope.spawn(move || {
                let mut scan = canonical::scan::Scan::default();
                loop {
                    let block = match rx.lock() {
                        Ok(guard) => guard.recv(),
                        Err(_) => return,
                    };
                    let Ok(block) = block else { return };
                    let spare = results_rx.lock().ok().and_then(|r| r.try_recv().ok());
                    let mut out = spare.unwrap_or_default();
                    check_block(&block, &mut scan, extract, &keys, opts, &mut out);
                    // The reader reuses the buffer (or it is dropped when enough wait).
                    let _ = recycle_tx.try_send(block.data);
                    if tx.send((block.seq, out)).is_err() {
                        return;
                    }
                }
            });
        }
        drop(done_tx);
        // One block per worker being checked, one more queued for each, and two for the reader
        // and the sequencer: each block is `BLOCK_BYTES` of lines and about as much again of
        // checked records, so the window bounds the verifier's memory.
        let window = workers * 2 + 2;
        let (window_tx, window_rx) = std::sync::mpsc::sync_channel::<()>(window);
        for _ in 0..window {
            let _ = window_tx.send(());
        }
        let reader_thread =
            scope.spawn(move || read_blocks(reader, first, &block_tx, &window_rx, &recycle_rx, progress));
        let mut pending = std::collections::BTreeMap::new();
        let (mut next, mut index) = (0, first);
        for (block_seq, out) in done_rx {
            pending.insert(block_seq, out);
            while let Some(mut out) = pending.remove(&next) {
                index = sequence(&mut seq, &mut on_record, index, &out.0, &mut out.1);
                next += 1;
                let _ = window_tx.send(());
                // Back to a worker (or freed when enough wait).
                let _ = results_tx.try_send(out);
            }
        }
        drop(window_tx);
        drop(results_tx);
        reader_thread.join().unwrap_or_else(|_| Err(io::Error::other("the chain reader panicked")))
    })?;
    let keys = std::mem::take(&mut seq.chain_keys);
    let mut report = seq.finish();
    report.torn_tail = torn;
    Ok((report, keys))
}

/// Runs the in-order checks on one block's checked lines, the first being record `index`, and
/// hands what the sink's `extract` made of each record to `on_record`; returns the index after
/// the block. The lines are drained: the vector goes back to a worker.
fn sequence<T, F: FnMut(usize, T)>(
    seq: &mut Sequencer<'_>,
    on_record: &mut Option<F>,
    mut index: usize,
    id_text: &str,
    checked: &mut Vec<Checked<T>>,
) -> usize {
    for c in checked.drain(..) {
        let extra = match c {
            Checked::Unparsable(message) => {
                seq.unparsable(index, message);
                None
            }
            Checked::Parsed { map, local, key, extra } => {
                seq.record(index, &map, Some(&map), local, key);
                extra
            }
            Checked::Raw { ids, local, key, extra } => {
                seq.record(index, &IdFields { text: id_text, ids }, None, local, key);
                extra
            }
        };
        if let (Some(on_record), Some(extra)) = (on_record.as_mut(), extra) {
            on_record(index, extra);
        }
        index += 1;
    }
    index
}

/// Verifies records held in memory (see [`verify_stream`]).
#[must_use]
pub fn verify_records(records: &[Value], opts: VerifyOptions<'_>) -> VerifyReport {
    verify_stream(records.iter().map(Line::Record), opts, |_, _| {})
}

/// A prefix of a spool's chain known to verify: its first `records` records, `bytes` long
/// (through the last one's newline), the last one's `entry_hash` being `head_hash`. Where it
/// comes from is the caller's trust decision: the console's own last verification, or a
/// checkpoint the principal signed under the chain's lock after verifying the chain
/// (`docs/spool.md`, Incremental verification). `warrant_store::chain_file::verify_tail_with` verifies only what follows.
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
    pub keys: crate::key_event::ChainKeys,
}

impl Verified {
    /// The prefix a signed checkpoint describes (see [`crate::checkpoint::Checkpoint`]), without
    /// its key events (the caller adds those it scanned, [`crate::key_event::ChainKeys::apply`]).
    #[must_use]
    pub fn of_checkpoint(cp: &crate::checkpoint::Checkpoint) -> Self {
        Self {
            records: cp.records,
            bytes: cp.bytes,
            head_hash: Some(cp.head_hash.clone()),
            keys: crate::key_event::ChainKeys::default(),
        }
    }
}

/// What `warrant_store::chain_file::verify_tail_with` found after a verified prefix.
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
    pub keys: crate::key_event::ChainKeys,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::{ChainHead, new_record_body, seal};
    use serde_json::json;

    /// `n` records of about 1 KB each, as JSON lines.
    fn chain_bytes(n: usize) -> Vec<u8> {
        let pad = "x".repeat(900);
        chain_of(&vec![("a", pad.as_str()); n])
    }

    /// A chain of one record per `(agent, pad)`, its metadata `{"pad": pad}`, as JSON lines.
    fn chain_of(records: &[(&str, &str)]) -> Vec<u8> {
        let mut head = ChainHead { last_index: 0, last_hash: None };
        let mut out = Vec::new();
        for (i, (agent, pad)) in records.iter().enumerate() {
            let mut meta = Map::new();
            meta.insert("pad".into(), json!(pad));
            let body = new_record_body(
                agent,
                "draft.compose",
                None,
                "success",
                &format!("t{i}"),
                "suggest",
                "2026-11-28T00:00:00Z",
                meta,
            );
            let sealed = seal(body, &head);
            head = ChainHead { last_index: sealed.chain_index, last_hash: Some(sealed.entry_hash.clone()) };
            out.extend_from_slice(&canonical::to_canonical_vec(&sealed.record));
            out.push(b'\n');
        }
        out
    }

    fn both_ways(bytes: &[u8]) -> VerifyReport {
        let fast = verify_reader(bytes, VerifyOptions::default(), &std::sync::atomic::AtomicU64::new(0)).expect("read");
        let lines: Vec<Line<Value>> = bytes
            .split_inclusive(|&b| b == b'\n')
            .filter(|l| l.ends_with(b"\n"))
            .map(|l| match canonical::parse_strict(&l[..l.len() - 1]) {
                Ok(v @ Value::Object(_)) => Line::Record(v),
                _ => Line::Unparsable(String::new()),
            })
            .collect();
        let parsed = verify_stream(
            lines.iter().map(|l| match l {
                Line::Record(v) => Line::Record(v),
                Line::Unparsable(m) => Line::Unparsable(m.clone()),
            }),
            VerifyOptions::default(),
            |_, _| {},
        );
        assert_eq!(fast.is_valid(), parsed.is_valid());
        assert_eq!(fast.total, parsed.total);
        assert_eq!(fast.root_hash, parsed.root_hash);
        assert_eq!(
            fast.findings.iter().map(|f| f.index).collect::<Vec<_>>(),
            parsed.findings.iter().map(|f| f.index).collect::<Vec<_>>()
        );
        fast
    }

    /// Records whose strings hold escapes (in a top-level field the checks read, or only in
    /// their metadata) verify from their bytes as they do parsed: the fields read from a line
    /// with an escape are unescaped, those of a line without one taken as they are.
    #[test]
    fn records_with_escaped_strings_verify_from_their_bytes_as_parsed() {
        let out = chain_of(&[("a\"q", "x"), ("plain", "tab\there"), ("back\\slash\u{1}", "é\n"), ("plain", "plain")]);
        let r = both_ways(&out);
        assert!(r.is_valid() && r.total == 4, "{:?}", r.findings);
        // The same lines with one agent's escaped quote rewritten: found either way.
        let tampered = String::from_utf8(out).expect("utf-8").replacen("a\\\"q", "a\\\"r", 1);
        assert!(!both_ways(tampered.as_bytes()).is_valid());
    }

    /// A short input is checked on the calling thread, a long one by the threads: both give the
    /// report of the in-memory verification, on a clean chain, a rewritten record and a torn
    /// final line, on either side of the inline limit.
    #[test]
    fn the_inline_and_the_threaded_verifier_agree() {
        for n in [0, 1, 20, 80, 300] {
            let clean = chain_bytes(n);
            assert_eq!(clean.len() <= INLINE_BYTES, n <= 60, "{n} records: {} bytes", clean.len());
            let r = both_ways(&clean);
            assert!(r.is_valid() && r.total == n, "{n}: {:?}", r.findings);
            if n == 0 {
                continue;
            }
            let mut tampered = clean.clone();
            let at = tampered.len() / 2 + tampered[tampered.len() / 2..].iter().position(|&b| b == b'x').expect("pad");
            tampered[at] = b'y';
            let r = both_ways(&tampered);
            assert!(!r.is_valid(), "{n}: a rewritten record is found");
            let mut torn = clean.clone();
            torn.extend_from_slice(b"{\"chain_index\":");
            let r = verify_reader(&torn[..], VerifyOptions::default(), &std::sync::atomic::AtomicU64::new(0))
                .expect("read");
            assert!(r.is_valid() && r.total == n && r.torn_tail == Some(15), "{n}: {r:?}");
        }
    }
}
