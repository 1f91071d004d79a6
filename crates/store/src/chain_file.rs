//! The chain file `chain.jsonl` on disk: reading it, verifying it or its tail after a verified
//! prefix, and durable appends under the chain's lock (with group commit, torn-tail recovery and
//! the checks that the file is still the one locked).
//!
//! The records, their verification over any reader and the export envelope are the protocol's
//! ([`warrant_protocol::chain`]); this module is the directory store's (`docs/spool.md`, `docs/architecture.md`).

use serde_json::{Map, Value};
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use warrant_protocol::canonical::{self, is_sha256_string};
use warrant_protocol::chain::{
    Appended, ChainHead, Check, Finding, Line, MAX_LINE_BYTES, RecordSink, Tail, Verified, VerifyOptions, VerifyReport,
    seal, verify_blocks, verify_reader, verify_stream,
};

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
    /// The last line has no terminating newline (an append was torn) and could not be set aside.
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
    /// The chain is a replica's ([`crate::replica`]) and its store refused or could not
    /// be reached: nothing was written.
    #[error("chain {path}: {message}")]
    Store {
        /// The replica's chain file.
        path: PathBuf,
        /// What the store answered.
        message: String,
    },
}

/// How long an append waits for the chain's lock.
pub const LOCK_DEADLINE: std::time::Duration = std::time::Duration::from_secs(10);

/// Opens a chain file for reading without blocking on a FIFO, refusing anything that is not a
/// regular file. With `no_follow`, a symlink is refused too (a spool's own chain).
///
/// # Errors
/// [`ChainError::NotRegular`] or I/O errors (`NotFound` included).
pub fn open_regular(path: &Path, no_follow: bool) -> Result<File, ChainError> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let flags = crate::open_flags::NONBLOCK | if no_follow { crate::open_flags::NOFOLLOW } else { 0 };
    let file = OpenOptions::new().read(true).custom_flags(flags).open(path).map_err(|e| match e.raw_os_error() {
        Some(crate::open_flags::ELOOP) => ChainError::NotRegular { path: path.to_owned() },
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
    /// Lines that are not JSON objects.
    pub parse_findings: Vec<Finding>,
    /// Length of a torn final line, which is not among the records.
    pub torn_tail: Option<u64>,
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
        let mut report = verify_stream(lines, opts, |_, _| {});
        report.torn_tail = self.torn_tail;
        report
    }
}

/// Reads `chain.jsonl` line by line. A line that is not a JSON object comes out as
/// [`Line::Unparsable`]; a final line without a newline (a torn append) ends the iteration and is
/// kept in [`ChainReader::torn_tail`]; an I/O error ends it and is kept in [`ChainReader::error`].
pub struct ChainReader<B> {
    reader: B,
    buf: Vec<u8>,
    done: bool,
    /// The I/O error that ended the iteration, if any.
    pub error: Option<io::Error>,
    /// Length of a torn final line (bytes after the last newline), once the iteration ended.
    pub torn_tail: Option<u64>,
}

impl<B: BufRead> ChainReader<B> {
    /// Wraps a buffered reader.
    pub fn new(reader: B) -> Self {
        Self { reader, buf: Vec::with_capacity(4096), done: false, error: None, torn_tail: None }
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
                    self.torn_tail = Some(self.buf.len() as u64);
                    return None;
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

/// Verifies `chain.jsonl` in parallel (see [`verify_reader`]); a missing file is an empty,
/// valid chain. The file must be a regular file (symlinks are followed; FIFOs never block).
///
/// # Errors
/// I/O errors while reading; [`ChainError::NotRegular`].
pub fn verify_file(path: &Path, opts: VerifyOptions<'_>) -> Result<VerifyReport, ChainError> {
    let file = match open_regular(path, false) {
        Ok(f) => f,
        Err(ChainError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
            return Ok(VerifyReport::default());
        }
        Err(e) => return Err(e),
    };
    verify_reader(file, opts, &std::sync::atomic::AtomicU64::new(0))
        .map_err(|source| ChainError::Io { path: path.to_owned(), source })
}

/// Whether the chain in `file` still starts with `prefix`: it is at least `prefix.bytes` long,
/// and the line that ends (with its newline) at byte `prefix.bytes` is record `prefix.records`
/// with `entry_hash` `prefix.head_hash`, the line hashing to it. The empty prefix always holds.
///
/// Only the prefix's last line is read: a record rewritten *in place* inside the prefix (its
/// successors left alone) is not seen here; a full verification finds it.
///
/// # Errors
/// I/O errors reading the line.
pub fn prefix_holds(file: &mut File, prefix: &Verified) -> io::Result<bool> {
    if prefix.records == 0 {
        return Ok(prefix.bytes == 0 && prefix.head_hash.is_none());
    }
    let len = file.metadata()?.len();
    if len < prefix.bytes || prefix.bytes == 0 {
        return Ok(false);
    }
    let rec = line_ending_at(file, prefix.bytes)?;
    Ok(rec.and_then(|rec| rec.as_object().cloned()).is_some_and(|rec| {
        let head = prefix.head_hash.as_deref();
        rec.get("chain_index").and_then(Value::as_u64) == Some(prefix.records)
            && rec.get("entry_hash").and_then(Value::as_str) == head
            // The line is hashed again: its `entry_hash` field alone proves nothing.
            && head == Some(canonical::prefixed(&canonical::canonical_digest_without(&rec, "entry_hash")).as_str())
    }))
}

/// The record on the line of `file` that ends (with its newline) at byte `end`, if that line
/// is a JSON value (at most [`MAX_LINE_BYTES`] are read).
///
/// # Errors
/// I/O errors.
pub fn line_ending_at(file: &mut File, end: u64) -> io::Result<Option<Value>> {
    if end == 0 {
        return Ok(None);
    }
    // Read backwards from `end` in growing windows (4 KiB, then doubling up to a whole line's
    // most), so a short line costs one small read.
    let most = MAX_LINE_BYTES as u64 + 1;
    let mut window = 4096u64.min(most);
    loop {
        let start = end.saturating_sub(window);
        file.seek(SeekFrom::Start(start))?;
        let mut buf = Vec::with_capacity(usize::try_from(end - start).unwrap_or(0));
        Read::by_ref(file).take(end - start).read_to_end(&mut buf)?;
        if buf.len() as u64 != end - start || buf.last() != Some(&b'\n') {
            return Ok(None);
        }
        let body = &buf[..buf.len() - 1];
        let line = match memchr::memrchr(b'\n', body) {
            Some(p) => &body[p + 1..],
            None if start == 0 => body,
            None if window < most => {
                window = (window * 2).min(most);
                continue;
            }
            None => return Ok(None),
        };
        return Ok(canonical::parse_strict(line).ok());
    }
}

/// Verifies only the records of a spool's own chain (`path`, never a symlink) that follow
/// `prefix`, with the checks of [`verify_reader`]: the first line after `prefix.bytes` must
/// be record `prefix.records + 1` linking to `prefix.head_hash`, and every finding carries its
/// global record index, as a full verification would report it. `sink` receives the tail's
/// records only (global indexes; [`RecordSink`]: what it keeps of each is made on the
/// verifier's workers). The file is read up to its length when verification starts,
/// so lines appended meanwhile wait for the next call. With the empty prefix this is a full
/// verification.
///
/// Returns `Ok(None)` when the chain no longer starts with `prefix` (shorter than `prefix.bytes`,
/// or the line ending there is not the recorded head, see [`prefix_holds`]), or when the chain is
/// missing and the prefix is not empty: the caller must then verify the whole chain.
///
/// What a tail alone cannot see (`docs/conformance.md`): a `record_id` in the tail that repeats
/// one in the prefix; a lineage parent in the prefix is reported as not found (a finding, so the
/// caller's fallback to a full verification decides); a prefix record rewritten in place.
///
/// # Errors
/// I/O errors; [`ChainError::NotRegular`].
pub fn verify_tail_with<T, F>(
    path: &Path,
    prefix: &Verified,
    opts: VerifyOptions<'_>,
    progress: &std::sync::atomic::AtomicU64,
    sink: RecordSink<'_, T, F>,
) -> Result<Option<Tail>, ChainError>
where
    T: Send,
    F: FnMut(usize, T),
{
    let io_err = |source| ChainError::Io { path: path.to_owned(), source };
    let mut file = match open_regular(path, true) {
        Ok(f) => f,
        Err(ChainError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
            return Ok((prefix.records == 0).then(Tail::default));
        }
        Err(e) => return Err(e),
    };
    let len = file.metadata().map_err(io_err)?.len();
    if !prefix_holds(&mut file, prefix).map_err(io_err)? {
        return Ok(None);
    }
    file.seek(SeekFrom::Start(prefix.bytes)).map_err(io_err)?;
    let (report, keys) = verify_blocks(file.take(len.saturating_sub(prefix.bytes)), opts, progress, Some(sink), prefix)
        .map_err(io_err)?;
    let bytes = len - report.torn_tail.unwrap_or(0);
    Ok(Some(Tail { report, bytes, keys }))
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
    out.torn_tail = lines.torn_tail;
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

/// Appends one record to `path` durably.
///
/// Takes the exclusive lock on `.chain.lock` beside the chain (a private file, mode 0600, so
/// processes that may only read the chain cannot hold the lock), waiting at most
/// [`LOCK_DEADLINE`]. Then it opens the chain without following symlinks (a regular file
/// only), sets a torn final line aside ([`SetAside`]), reads the head, calls `build` with it (the
/// builder returns the record body: every field but `chain_index`, `previous_hash` and
/// `entry_hash`, which are set here), computes `entry_hash` by the hash contract, checks that the
/// path still names the file it locked, and writes the line with `O_APPEND` in one `write`. A
/// failed write is truncated back, so a full disk never leaves a torn line. The directory is
/// synced when a file is created.
///
/// **Group commit**: the lock is released as soon as the line is written, and the
/// `fdatasync` runs outside it; `append` returns only once its own `fdatasync` has returned, which
/// flushes every byte of the file written before it started (this line and every earlier one), so
/// a record that reported success is durable, and so is every record before it. Writers that sync
/// at the same time share the disk's flush, so N writers do not pay N serial syncs (figures in
/// `docs/performance.md#appends`). [`append_then`] keeps the sync under the lock, for the
/// principal's checkpoints.
///
/// # Errors
/// I/O failures, [`ChainError::Locked`], [`ChainError::NotRegular`], [`ChainError::Replaced`],
/// a torn or unparsable tail ([`ChainError::TornTail`], [`ChainError::BadTail`]), or the
/// builder's own refusal ([`ChainError::Build`]). On error nothing was written, except when the
/// final `fdatasync` itself fails (an I/O error of the disk): the line was written and other
/// writers may already follow it, so it stays, never acknowledged.
pub fn append<F>(path: &Path, build: F) -> Result<Appended, ChainError>
where
    F: FnOnce(&ChainHead) -> Result<Map<String, Value>, String>,
{
    append_with_deadline(path, LOCK_DEADLINE, build)
}

/// The store a chain file's appends go to first: `None` for a directory spool's chain (an
/// append is the file's alone, and never touches the network), the replica's store for a
/// replica's ([`crate::spool::Spool::chain_upstream`]).
pub type Upstream<'a> = Option<&'a dyn crate::upstream::Upstream>;

/// As [`append`], on the chain of a spool that may be a replica: with an `upstream`, the
/// replica is first brought up to its store's head and the record goes to the store first
/// (compare-and-set); only what the store acknowledged is written to the file.
///
/// # Errors
/// As [`append`]; [`ChainError::Store`] for the store's refusals and errors.
pub fn append_to<F>(path: &Path, upstream: Upstream<'_>, build: F) -> Result<Appended, ChainError>
where
    F: FnOnce(&ChainHead) -> Result<Map<String, Value>, String>,
{
    append_then_sync(path, upstream, LOCK_DEADLINE, build)
}

/// As [`append`], waiting at most `deadline` for the lock.
///
/// # Errors
/// As [`append`].
pub fn append_with_deadline<F>(path: &Path, deadline: std::time::Duration, build: F) -> Result<Appended, ChainError>
where
    F: FnOnce(&ChainHead) -> Result<Map<String, Value>, String>,
{
    append_then_sync(path, None, deadline, build)
}

/// [`append_to`] and [`append_with_deadline`]: the record written under the lock, then synced
/// after the lock is released.
fn append_then_sync<F>(
    path: &Path,
    upstream: Upstream<'_>,
    deadline: std::time::Duration,
    build: F,
) -> Result<Appended, ChainError>
where
    F: FnOnce(&ChainHead) -> Result<Map<String, Value>, String>,
{
    let Written { lock, file, appended, .. } = write_locked(path, upstream, deadline, build)?;
    // Group commit: other writers may write their lines while this one syncs.
    let _ = lock.unlock();
    drop(lock);
    file.sync_data().map_err(|source| ChainError::Io { path: path.to_owned(), source })?;
    Ok(appended)
}

/// As [`append_with_deadline`], but the `fdatasync` runs under the lock, and then, still under
/// the lock and after the record (and every record before it) is durable, calls `after` with what
/// was appended and the chain's length in bytes now (the principal's checkpoint is signed and
/// written there, so checkpoints follow the chain's order and are never durable before the
/// records they cover). A failed write or sync is truncated back: on error nothing was written.
///
/// # Errors
/// As [`append`].
pub fn append_then<F, A>(
    path: &Path,
    upstream: Upstream<'_>,
    deadline: std::time::Duration,
    build: F,
    after: A,
) -> Result<Appended, ChainError>
where
    F: FnOnce(&ChainHead) -> Result<Map<String, Value>, String>,
    A: FnOnce(&Appended, u64),
{
    let mut appended = append_many_then(
        path,
        upstream,
        deadline,
        |head| build(head).map(|rec| vec![rec]),
        |group, end| {
            if let [one] = group {
                after(one, end);
            }
        },
    )?;
    match appended.pop() {
        Some(one) if appended.is_empty() => Ok(one),
        // Unreachable: the builder returned exactly one record.
        _ => Err(ChainError::Build("not exactly one record was appended".into())),
    }
}

/// As [`append_then`], for a group of records: under one lock, `build` returns the bodies of
/// the records to append after `head` (in order; each is sealed onto the one before it), they are
/// written with one `write`, synced with one `fdatasync` under the lock, and then `after` is
/// called, still under the lock, with what was appended and the chain's length in bytes now. The
/// batch signing (`spool::decide_many`): N decisions cost one lock, one verification
/// and one sync. A failed write or sync is truncated back: on error none of the records was
/// written. An empty group is refused ([`ChainError::Build`]) before anything is written.
///
/// # Errors
/// As [`append`].
pub fn append_many_then<F, A>(
    path: &Path,
    upstream: Upstream<'_>,
    deadline: std::time::Duration,
    build: F,
    after: A,
) -> Result<Vec<Appended>, ChainError>
where
    F: FnOnce(&ChainHead) -> Result<Vec<Map<String, Value>>, String>,
    A: FnOnce(&[Appended], u64),
{
    let Written { lock, file, appended, start, end } = write_locked_many(path, upstream, deadline, build)?;
    let result = match file.sync_data() {
        Ok(()) => {
            after(&appended, end);
            Ok(appended)
        }
        Err(source) => {
            let _ = file.set_len(start);
            let _ = file.sync_data();
            Err(ChainError::Io { path: path.to_owned(), source })
        }
    };
    let _ = lock.unlock();
    result
}

/// Lines written under the lock, not yet synced.
struct Written<T> {
    /// The chain's lock, still held.
    lock: File,
    /// The chain, open for appending.
    file: File,
    appended: T,
    /// The chain's length before the lines.
    start: u64,
    /// The chain's length after the lines.
    end: u64,
}

/// The steps of [`append`] up to and including the `write`, under the lock (released on error).
fn write_locked<F>(
    path: &Path,
    upstream: Upstream<'_>,
    deadline: std::time::Duration,
    build: F,
) -> Result<Written<Appended>, ChainError>
where
    F: FnOnce(&ChainHead) -> Result<Map<String, Value>, String>,
{
    let Written { lock, file, mut appended, start, end } =
        write_locked_many(path, upstream, deadline, |head| build(head).map(|rec| vec![rec]))?;
    match appended.pop() {
        Some(one) => Ok(Written { lock, file, appended: one, start, end }),
        // Unreachable: the builder returned exactly one record.
        None => Err(ChainError::Build("no record was built".into())),
    }
}

/// [`write_locked`] for a group of records, sealed one onto the other and written with one
/// `write` (an empty group is a [`ChainError::Build`]).
fn write_locked_many<F>(
    path: &Path,
    upstream: Upstream<'_>,
    deadline: std::time::Duration,
    build: F,
) -> Result<Written<Vec<Appended>>, ChainError>
where
    F: FnOnce(&ChainHead) -> Result<Vec<Map<String, Value>>, String>,
{
    use std::os::unix::fs::MetadataExt as _;
    let io_err = |source| ChainError::Io { path: path.to_owned(), source };
    let lock = lock_chain(path, deadline)?;
    let result = (|| {
        let (mut file, meta) = open_locked_for_append(path)?;
        // A replica's chain is first brought up to its store's head: what is built is built on
        // the chain as the store holds it.
        if let Some(remote) = upstream {
            remote.catch_up_locked(path, &mut file)?;
        }
        let mut head = read_head(path, &mut file)?;
        let built_on = upstream.is_some().then(|| head.clone());
        let recs = build(&head).map_err(ChainError::Build)?;
        if recs.is_empty() {
            return Err(ChainError::Build("no record to append".into()));
        }
        let mut appended = Vec::with_capacity(recs.len());
        let mut line = Vec::new();
        for rec in recs {
            let one = seal(rec, &head);
            line.extend_from_slice(&canonical::to_canonical_vec(&one.record));
            line.push(b'\n');
            head = ChainHead { last_index: one.chain_index, last_hash: Some(one.entry_hash.clone()) };
            appended.push(one);
        }
        // The builder read the chain by path: it must still be the file this append holds.
        let now = path.symlink_metadata().map_err(io_err)?;
        if now.ino() != meta.ino() || now.dev() != meta.dev() {
            return Err(ChainError::Replaced { path: path.to_owned() });
        }
        // A replica's records go to its store first, with compare-and-set on the head they
        // were built on; only what the store acknowledged is written here.
        if let (Some(remote), Some(built_on)) = (upstream, &built_on) {
            remote.push(path, built_on, &appended)?;
        }
        let start = file.metadata().map_err(io_err)?.len();
        if let Err(e) = file.write_all(&line) {
            let _ = file.set_len(start);
            let _ = file.sync_data();
            return Err(io_err(e));
        }
        Ok((file, appended, start, start + line.len() as u64))
    })();
    match result {
        Ok((file, appended, start, end)) => Ok(Written { lock, file, appended, start, end }),
        Err(e) => {
            let _ = lock.unlock();
            Err(e)
        }
    }
}

/// How many records a replica's catch-up reads from the store at a time (a million-record
/// chain is read in parts, never held whole).
#[cfg(feature = "jetstream")]
pub const CATCH_UP_PART: usize = 4096;

/// What a catch-up appended.
#[cfg(feature = "jetstream")]
#[derive(Debug, Default)]
pub struct CaughtUp {
    /// Records appended.
    pub records: u64,
    /// The decision records among them (`metadata.warrant_decision`), for their decision files.
    pub decisions: Vec<Map<String, Value>>,
}

/// Brings the replica chain `path` up to its store's head ([`crate::replica`]): under
/// the chain's lock, reads the store's records after the file's head, checks that each links
/// and keeps its `entry_hash` ([`crate::seal_copies`]), and appends them (one write, one
/// `fdatasync`), in parts of [`CATCH_UP_PART`] records. Returns how many, and the decision
/// records among them.
///
/// # Errors
/// As [`append`]; [`ChainError::Store`] when the store cannot be read or holds records that do
/// not continue this file (the replica holds another chain).
#[cfg(feature = "jetstream")]
pub fn catch_up(path: &Path, remote: &crate::jetstream::JetStreamSpool) -> Result<CaughtUp, ChainError> {
    let lock = lock_chain(path, LOCK_DEADLINE)?;
    let result = open_locked_for_append(path).and_then(|(mut file, _)| catch_up_locked(path, &mut file, remote));
    let _ = lock.unlock();
    result
}

/// [`catch_up`]'s work, under the lock, on the open chain.
#[cfg(feature = "jetstream")]
pub(crate) fn catch_up_locked(
    path: &Path,
    file: &mut File,
    remote: &crate::jetstream::JetStreamSpool,
) -> Result<CaughtUp, ChainError> {
    let store_err = |message: String| ChainError::Store { path: path.to_owned(), message };
    let io_err = |source| ChainError::Io { path: path.to_owned(), source };
    let url = remote.inner().url();
    let mut head = read_head(path, file)?;
    let mut caught = CaughtUp::default();
    // From the replica's own head record: the store must hold it, byte for byte.
    let mut from = head.last_index.max(1);
    let mut first = head.last_index > 0;
    loop {
        let mut entries = crate::replica::off_runtime(|| remote.read_chain_some(from, CATCH_UP_PART))
            .map_err(|e| store_err(format!("{url}: {e}")))?;
        // A part shorter than asked for reached the store's head as the read found it: no
        // further read (a record appended since is refused to a stale append's compare-and-set).
        let more = entries.len() == CATCH_UP_PART;
        if first {
            first = false;
            let end = file.metadata().map_err(io_err)?.len();
            let local = line_ending_at(file, end).map_err(io_err)?.map(|v| canonical::to_canonical_vec(&v));
            match entries.first() {
                Some(e) if local.as_deref() == Some(e.line.as_slice()) => {
                    entries.remove(0);
                }
                Some(_) => {
                    return Err(store_err(format!(
                        "this replica does not hold a prefix of {url}'s chain (its record {} differs from the \
                         store's); move it away and pull again",
                        head.last_index
                    )));
                }
                None => {
                    return Err(store_err(format!(
                        "this replica holds record {} and {url} does not: it is not a replica of that store's chain",
                        head.last_index
                    )));
                }
            }
            if entries.is_empty() {
                if !more {
                    return Ok(caught);
                }
                from = head.last_index + 1;
                continue;
            }
        }
        let Some(last) = entries.last().map(|e| e.seq) else { return Ok(caught) };
        let mut records = Vec::with_capacity(entries.len());
        for e in &entries {
            match e.record().map_err(|e| store_err(e.to_string()))? {
                Value::Object(m) => records.push(m),
                _ => return Err(store_err(format!("record {} of {url} is not an object", e.seq))),
            }
        }
        let sealed = crate::seal_copies(&head, &records).map_err(|e| {
            store_err(format!(
                "this replica does not hold a prefix of {url}'s chain ({e}); move it away and pull again"
            ))
        })?;
        let mut lines = Vec::new();
        for (one, entry) in sealed.iter().zip(&entries) {
            let line = canonical::to_canonical_vec(&one.record);
            if line != entry.line {
                return Err(store_err(format!("record {} of {url} is not in canonical form", entry.seq)));
            }
            lines.extend_from_slice(&line);
            lines.push(b'\n');
        }
        let start = file.metadata().map_err(io_err)?.len();
        if let Err(e) = file.write_all(&lines).and_then(|()| file.sync_data()) {
            let _ = file.set_len(start);
            let _ = file.sync_data();
            return Err(io_err(e));
        }
        if let Some(one) = sealed.last() {
            head = ChainHead { last_index: one.chain_index, last_hash: Some(one.entry_hash.clone()) };
        }
        caught.records += records.len() as u64;
        caught.decisions.extend(
            records.into_iter().filter(|r| r.get("metadata").and_then(|m| m.get("warrant_decision")).is_some()),
        );
        if !more {
            return Ok(caught);
        }
        from = last + 1;
    }
}

/// Publishes `appended` (sealed on `built_on`) to the replica's store, compare-and-set.
#[cfg(feature = "jetstream")]
pub(crate) fn push_to_store(
    path: &Path,
    remote: &crate::jetstream::JetStreamSpool,
    built_on: &ChainHead,
    appended: &[Appended],
) -> Result<(), ChainError> {
    use crate::StoreError;
    let records = appended.iter().filter_map(|a| a.record.as_object().cloned()).collect();
    // `built_on` is the head `catch_up_locked` just found the store holding, under this lock.
    match crate::replica::off_runtime(|| remote.append_onto_checked(built_on, records)) {
        Ok(_) => Ok(()),
        Err(StoreError::StaleHead { found, .. }) => Err(ChainError::Store {
            path: path.to_owned(),
            message: format!(
                "{} moved on (to record {found}) while this was built on record {}: another of the principal's \
                 hosts appended first; nothing was written here, try again",
                remote.inner().url(),
                built_on.last_index
            ),
        }),
        Err(e) => Err(ChainError::Store { path: path.to_owned(), message: format!("{}: {e}", remote.inner().url()) }),
    }
}

/// Under the chain's lock: opens `path` for reading and appending (created if missing, mode
/// 0644, never through a symlink, a regular file only; its directory synced when it was
/// created) and sets a torn final line aside ([`SetAside`]). Returns the file and its metadata.
///
/// # Errors
/// [`ChainError::NotRegular`], I/O errors, and those of setting the torn line aside.
fn open_locked_for_append(path: &Path) -> Result<(File, std::fs::Metadata), ChainError> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let io_err = |source| ChainError::Io { path: path.to_owned(), source };
    let existed = path.symlink_metadata().is_ok();
    let mut file = OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .mode(0o644)
        .custom_flags(crate::open_flags::NOFOLLOW | crate::open_flags::NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(crate::open_flags::ELOOP) => ChainError::NotRegular { path: path.to_owned() },
            _ => io_err(e),
        })?;
    let meta = file.metadata().map_err(io_err)?;
    if !meta.file_type().is_file() {
        return Err(ChainError::NotRegular { path: path.to_owned() });
    }
    if !existed {
        sync_parent(path).map_err(io_err)?;
    }
    if let Some(aside) = set_aside_torn_tail(path, &mut file)? {
        tracing::warn!(side_file = %aside.side_file.display(), bytes = aside.bytes, "{}", aside.message());
    }
    Ok((file, meta))
}

/// Takes the exclusive lock on `.chain.lock` beside `path` (a private file, mode 0600, never a
/// symlink, FIFO or device), waiting at most `deadline`. The lock is released when the returned
/// file is dropped.
fn lock_chain(path: &Path, deadline: std::time::Duration) -> Result<File, ChainError> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let lock_path = path.with_file_name(".chain.lock");
    let lock = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .mode(0o600)
        .custom_flags(crate::open_flags::NOFOLLOW | crate::open_flags::NONBLOCK)
        .open(&lock_path)
        .map_err(|e| match e.raw_os_error() {
            Some(crate::open_flags::ELOOP) => ChainError::NotRegular { path: lock_path.clone() },
            _ => ChainError::Io { path: lock_path.clone(), source: e },
        })?;
    let io_err = |source| ChainError::Io { path: lock_path.clone(), source };
    if !lock.metadata().map_err(io_err)?.file_type().is_file() {
        return Err(ChainError::NotRegular { path: lock_path });
    }
    let start = std::time::Instant::now();
    // Poll with a short, growing sleep: a held lock is usually released within a write (tens of
    // microseconds) or a sync (about a millisecond), and a fixed 2 ms sleep left it idle.
    let mut pause = std::time::Duration::from_micros(50);
    loop {
        match lock.try_lock() {
            Ok(()) => return Ok(lock),
            Err(std::fs::TryLockError::WouldBlock) if start.elapsed() < deadline => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(std::time::Duration::from_millis(2));
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(ChainError::Locked { path: lock_path, seconds: deadline.as_secs() });
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io_err(e)),
        }
    }
}

/// A torn final line that was moved out of the chain into a side file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetAside {
    /// The side file now holding the fragment, beside the chain:
    /// `<chain>.torn-<offset>-<unix nanoseconds>`, mode 0600.
    pub side_file: PathBuf,
    /// The fragment's length in bytes.
    pub bytes: u64,
    /// Where the fragment started in the chain (the chain's length now).
    pub offset: u64,
}

impl SetAside {
    /// One sentence for the principal.
    #[must_use]
    pub fn message(&self) -> String {
        format!(
            "the chain ended in a torn line ({} bytes after byte {}: an append interrupted before it finished, which \
             never reported success); it was moved to {} and is not part of the chain",
            self.bytes,
            self.offset,
            self.side_file.display()
        )
    }
}

/// Under the chain's lock: if `file` (the chain, open for reading and appending) ends in a line
/// without a newline, copies those bytes to a new side file (synced, and its directory), then
/// cuts them off the chain (synced). Nothing is dropped: the fragment is kept, byte for byte,
/// and a crash between the two steps leaves at worst a second copy.
fn set_aside_torn_tail(path: &Path, file: &mut File) -> Result<Option<SetAside>, ChainError> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let io_err = |source| ChainError::Io { path: path.to_owned(), source };
    let len = file.metadata().map_err(io_err)?.len();
    if len == 0 {
        return Ok(None);
    }
    let mut last = [0u8; 1];
    file.seek(SeekFrom::Start(len - 1)).map_err(io_err)?;
    file.read_exact(&mut last).map_err(io_err)?;
    if last[0] == b'\n' {
        return Ok(None);
    }
    // Find the start of the fragment: the byte after the last newline.
    let mut offset = len;
    let mut buf = vec![0u8; 64 * 1024];
    while offset > 0 {
        let start = offset.saturating_sub(buf.len() as u64);
        let n = (offset - start) as usize;
        file.seek(SeekFrom::Start(start)).map_err(io_err)?;
        file.read_exact(&mut buf[..n]).map_err(io_err)?;
        if let Some(p) = memchr::memrchr(b'\n', &buf[..n]) {
            offset = start + p as u64 + 1;
            break;
        }
        offset = start;
    }
    let bytes = len - offset;
    let mut fragment = Vec::with_capacity(usize::try_from(bytes).unwrap_or(0));
    file.seek(SeekFrom::Start(offset)).map_err(io_err)?;
    Read::by_ref(file).take(bytes).read_to_end(&mut fragment).map_err(io_err)?;
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let name = path.file_name().map_or_else(|| "chain.jsonl".into(), |n| n.to_string_lossy().into_owned());
    let side_file = path.with_file_name(format!("{name}.torn-{offset}-{nanos}"));
    let side_err = |source| ChainError::Io { path: side_file.clone(), source };
    // Written under a hidden name, then renamed: a writer killed half-way leaves no side file
    // that is empty or short of the fragment (only, at worst, a hidden `.tmp` one), and the
    // fragment itself is still in the chain for the next append to set aside.
    let temp = path.with_file_name(format!(".{name}.torn-{offset}-{nanos}.tmp"));
    let mut side = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(crate::open_flags::NOFOLLOW)
        .open(&temp)
        .map_err(side_err)?;
    side.write_all(&fragment).and_then(|()| side.sync_all()).map_err(side_err)?;
    std::fs::rename(&temp, &side_file).map_err(side_err)?;
    sync_parent(&side_file).map_err(side_err)?;
    file.set_len(offset).and_then(|()| file.sync_all()).map_err(io_err)?;
    Ok(Some(SetAside { side_file, bytes, offset }))
}

/// Checks the chain at `path` for a torn final line (an append that was interrupted before its
/// newline, by a crash or `SIGKILL`) and, under the chain's lock, moves it to a side file (see
/// [`SetAside`]). Every append does this too; commands and the console call it on open so the
/// principal is told. A missing chain has nothing torn.
///
/// # Errors
/// I/O errors, [`ChainError::Locked`], [`ChainError::NotRegular`].
pub fn recover_torn_tail(path: &Path) -> Result<Option<SetAside>, ChainError> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let lock = lock_chain(path, LOCK_DEADLINE)?;
    let result = (|| {
        let mut file = match OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(crate::open_flags::NOFOLLOW | crate::open_flags::NONBLOCK)
            .open(path)
        {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) if e.raw_os_error() == Some(crate::open_flags::ELOOP) => {
                return Err(ChainError::NotRegular { path: path.to_owned() });
            }
            Err(source) => return Err(ChainError::Io { path: path.to_owned(), source }),
        };
        if !file.metadata().map_err(|source| ChainError::Io { path: path.to_owned(), source })?.file_type().is_file() {
            return Err(ChainError::NotRegular { path: path.to_owned() });
        }
        set_aside_torn_tail(path, &mut file)
    })();
    let _ = lock.unlock();
    result
}

fn sync_parent(path: &Path) -> io::Result<()> {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => File::open(dir)?.sync_all(),
        _ => Ok(()),
    }
}

/// Reads the last line of the chain without reading the whole file.
/// The head of the chain at `path` as an append would link to it: the last record's
/// `chain_index` and `entry_hash`; a missing or empty file is the empty head. Read without the
/// lock, so an append may follow at once: the compare-and-set of an append is what decides.
///
/// # Errors
/// I/O errors, [`ChainError::NotRegular`], a torn or unparsable last line
/// ([`ChainError::TornTail`], [`ChainError::BadTail`]).
pub fn head(path: &Path) -> Result<ChainHead, ChainError> {
    match open_regular(path, true) {
        Ok(mut file) => read_head(path, &mut file),
        Err(ChainError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
            Ok(ChainHead { last_index: 0, last_hash: None })
        }
        Err(e) => Err(e),
    }
}

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
    let v: Value = canonical::parse_strict(line).map_err(|e| bad(e.to_string()))?;
    let last_index = v.get("chain_index").and_then(Value::as_u64).ok_or_else(|| bad("no chain_index".into()))?;
    let last_hash = v
        .get("entry_hash")
        .and_then(Value::as_str)
        .filter(|s| is_sha256_string(s))
        .ok_or_else(|| bad("no entry_hash".into()))?;
    Ok(ChainHead { last_index, last_hash: Some(last_hash.to_owned()) })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The line ending at an offset is found whatever its length (the read widens past 4 KiB),
    /// and an offset that does not end a line finds nothing.
    #[test]
    fn the_line_ending_at_an_offset_is_read_back_whatever_its_length() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("chain.jsonl");
        let short = b"{\"n\":1}\n".to_vec();
        let long = format!("{{\"n\":2,\"pad\":\"{}\"}}\n", "x".repeat(20_000)).into_bytes();
        std::fs::write(&path, [short.clone(), long.clone()].concat()).expect("write");
        let mut file = File::open(&path).expect("open");
        let n = |end: usize, file: &mut File| line_ending_at(file, end as u64).expect("read").map(|v| v["n"].clone());
        assert_eq!(n(short.len(), &mut file), Some(serde_json::json!(1)));
        assert_eq!(n(short.len() + long.len(), &mut file), Some(serde_json::json!(2)));
        assert_eq!(n(short.len() + 10, &mut file), None, "not the end of a line");
        assert_eq!(n(0, &mut file), None);
    }
}
