//! The principal's signed checkpoints on disk: the spool's copy and the principal's own, read,
//! written, checked against the chain file and forgotten (the directory store's side of
//! [`warrant_protocol::checkpoint`]).

use crate::spool::Spool;
use serde_json::Value;
use std::path::{Path, PathBuf};
use warrant_protocol::chain::{Check, Finding, VerifyReport};
use warrant_protocol::checkpoint::{Checkpoint, CheckpointError, verify};
use warrant_protocol::keys::PinnedKeys;

/// The spool's checkpoint file.
pub const CHECKPOINT_FILE: &str = "checkpoint.json";
/// The principal's own copy of a spool's checkpoint: `<copies dir>/<sha256 of the spool's
/// canonical path>.json`, or `None` when the spool keeps no copies or its path cannot be resolved.
#[must_use]
pub fn local_copy(spool: &Spool) -> Option<PathBuf> {
    let dir = spool.checkpoint_copies()?;
    let canonical = std::fs::canonicalize(spool.root()).ok()?;
    let id = warrant_protocol::canonical::sha256_hex(canonical.as_os_str().as_encoded_bytes());
    Some(dir.join(format!("{id}.json")))
}
/// The principal's fold of the prefix its own checkpoint copy describes, beside that copy:
/// `<copies dir>/<spool id>.fold.json` (JSON, mode 0600; the checkpoint's `fold_sha256` is the
/// SHA-256 of its bytes, `docs/spool.md`, Incremental verification), or `None` when the spool
/// keeps no copies.
#[must_use]
pub fn fold_copy(spool: &Spool) -> Option<PathBuf> {
    local_copy(spool).map(|p| p.with_extension("fold.json"))
}
/// The principal's listing cache of the spool's packets, beside the checkpoint copy:
/// `<copies dir>/<spool id>.listing.json` ([`crate::spool::Scanner::load_listing`]), or `None`
/// when the spool keeps no copies.
#[must_use]
pub fn listing_cache(spool: &Spool) -> Option<PathBuf> {
    local_copy(spool).map(|p| p.with_extension("listing.json"))
}
/// The most bytes a fold file may have to be read (256 MiB): a larger one is not used.
pub const MAX_FOLD_BYTES: u64 = 256 << 20;
/// Writes the principal's fold ([`fold_copy`]) atomically: a temporary file in the same
/// directory (mode 0600), renamed into place. It is not synced: the fold is a cache the signed
/// checkpoint binds by digest, so one lost or half-written by a crash only sends the next
/// decision to read the chain, and a decision does not wait for megabytes to reach the disk.
/// `Ok(None)` when the spool keeps no copies (nothing written), `Ok(Some(()))` once written.
///
/// # Errors
/// I/O errors.
pub fn write_fold(spool: &Spool, bytes: &[u8]) -> std::io::Result<Option<()>> {
    let Some(path) = fold_copy(spool) else { return Ok(None) };
    let dir = path.parent().ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound))?;
    std::fs::create_dir_all(dir)?;
    crate::atomic::replace_unsynced(&path, bytes, 0o600)?;
    Ok(Some(()))
}
/// Reads the principal's fold ([`fold_copy`]): a regular file (never through a symlink) of at
/// most [`MAX_FOLD_BYTES`].
///
/// # Errors
/// `NotFound` when the spool keeps no copies or there is none; `InvalidData` for a file that is
/// not regular or too large; other I/O errors.
pub fn read_fold(spool: &Spool) -> std::io::Result<Vec<u8>> {
    let path = fold_copy(spool).ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound))?;
    read_regular(&path, MAX_FOLD_BYTES)
}
/// Reads a regular file (never through a symlink, never blocking on a FIFO) of at most `max`
/// bytes.
///
/// # Errors
/// `InvalidData` for a file that is not regular or is larger than `max`; other I/O errors.
pub fn read_regular(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(crate::open_flags::NOFOLLOW | crate::open_flags::NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    let too_large = || std::io::Error::new(std::io::ErrorKind::InvalidData, format!("larger than {max} bytes"));
    if !meta.file_type().is_file() {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "not a regular file"));
    }
    if meta.len() > max {
        return Err(too_large());
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(too_large());
    }
    Ok(bytes)
}
/// Writes a signed checkpoint to the spool's `checkpoint.json` and to the principal's copy (if
/// the spool keeps one),
/// each atomically, unless the file already holds a longer one.
///
/// # Errors
/// I/O errors of the spool's file (the local copy's errors are logged, not returned).
pub fn write(spool: &Spool, signed: &Value) -> std::io::Result<()> {
    let records = signed.pointer("/document/records").and_then(Value::as_u64).unwrap_or(0);
    let mut bytes = serde_json::to_vec_pretty(signed).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    let write_one = |path: &Path| -> std::io::Result<()> {
        let held = std::fs::read(path)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .and_then(|v| v.pointer("/document/records").and_then(Value::as_u64));
        if held.is_some_and(|h| h > records) {
            return Ok(());
        }
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        crate::key_files::write_atomic(path, &bytes, 0o644)
    };
    if let Some(local) = local_copy(spool)
        && let Err(e) = write_one(&local)
    {
        tracing::warn!(path = %local.display(), error = %e, "could not write the principal's copy of the checkpoint");
    }
    write_one(&spool.root().join(CHECKPOINT_FILE))
}
/// The longest checkpoint that verifies among the spool's `checkpoint.json` and the principal's
/// copy (or, when there is no copy, the `checkpoint` member of every decision file), with a note
/// for each candidate that did not verify (a forged or damaged checkpoint is reported, never
/// trusted).
#[must_use]
pub fn latest(spool: &Spool, pinned: &PinnedKeys) -> (Option<Checkpoint>, Vec<String>) {
    let mut candidates: Vec<(String, Value)> = Vec::new();
    let mut read = |path: &Path, member: Option<&str>| {
        let Ok(bytes) = crate::spool::read_limited(path) else { return };
        let Ok(v) = serde_json::from_slice::<Value>(&bytes) else { return };
        let v = match member {
            Some(m) => match v.get(m) {
                Some(c) => c.clone(),
                None => return,
            },
            None => v,
        };
        candidates.push((path.display().to_string(), v));
    };
    read(&spool.root().join(CHECKPOINT_FILE), None);
    let local = local_copy(spool).filter(|p| p.is_file());
    if let Some(local) = &local {
        read(local, None);
    }
    // The principal's own copy is the newest this machine signed; without one, the decision
    // files agents hold are the other witnesses (read only then: the console verifies often).
    if local.is_none()
        && let Ok(entries) = std::fs::read_dir(spool.decisions_dir())
    {
        for e in entries.flatten() {
            let path = e.path();
            if path.extension().is_some_and(|x| x == "json") {
                read(&path, Some("checkpoint"));
            }
        }
    }
    // Verify from the longest down: the first that verifies is the answer.
    candidates.sort_by_key(|(_, v)| std::cmp::Reverse(v.pointer("/document/records").and_then(Value::as_u64)));
    let mut notes = Vec::new();
    for (source, v) in &candidates {
        match verify(v, pinned, source) {
            Ok(cp) => return (Some(cp), notes),
            Err(e) => notes.push(format!("{source}: checkpoint ignored: {e}")),
        }
    }
    (None, notes)
}
/// Checks a verified chain against a checkpoint: a chain with fewer records is truncated; the
/// line that ends at the checkpoint's byte offset must be record `records` with `head_hash`
/// (read from `chain`, at most one line). Returns the finding, if any.
///
/// # Errors
/// None: I/O trouble reading the line is itself reported as a finding.
#[must_use]
pub fn check(chain: &Path, cp: &Checkpoint, report: &VerifyReport) -> Option<Finding> {
    let finding = |index: Option<usize>, message: String| Some(Finding { index, check: Check::Checkpoint, message });
    if (report.total as u64) < cp.records {
        return finding(
            None,
            format!(
                "the chain has {} records, fewer than the {} of the checkpoint {} signed at {} ({}): records were cut off its end{}",
                report.total, cp.records, cp.principal, cp.signed_at, cp.source, FORGET_HINT
            ),
        );
    }
    let index = usize::try_from(cp.records - 1).unwrap_or(usize::MAX);
    match record_ending_at(chain, cp.bytes) {
        Ok(Some(rec))
            if rec.get("chain_index").and_then(Value::as_u64) == Some(cp.records)
                && rec.get("entry_hash").and_then(Value::as_str) == Some(cp.head_hash.as_str()) =>
        {
            None
        }
        _ => finding(
            Some(index),
            format!(
                "record {} is not the one of the checkpoint {} signed at {} (entry_hash {}, {} bytes into the chain): the chain was rewritten{}",
                cp.records, cp.principal, cp.signed_at, cp.head_hash, cp.bytes, FORGET_HINT
            ),
        ),
    }
}
/// What a truncation or rewrite finding adds: the way out when the principal re-created the spool
/// on purpose (and only then: otherwise the finding is the alarm it should be).
pub const FORGET_HINT: &str = "; if you re-created this spool on purpose, `warrant checkpoint forget` shows what the checkpoint pinned and forgets it";
/// Every checkpoint file that pins `spool`'s chain: the principal's own copy and the spool's
/// `checkpoint.json`, with what each pinned (verified against `pinned`, or why not).
#[must_use]
pub fn held_for(spool: &Spool, pinned: &PinnedKeys) -> Vec<(PathBuf, Result<Checkpoint, CheckpointError>)> {
    let mut out = Vec::new();
    for path in local_copy(spool).into_iter().chain([spool.root().join(CHECKPOINT_FILE)]) {
        let Ok(bytes) = crate::spool::read_limited(&path) else { continue };
        let parsed = serde_json::from_slice::<Value>(&bytes).map_err(|e| CheckpointError::NotJson(e.to_string()));
        out.push((path.clone(), parsed.and_then(|v| verify(&v, pinned, &path.display().to_string()))));
    }
    out
}
/// Moves a checkpoint file aside (`<name>.forgotten-<unix seconds>`, kept for the record), so it
/// no longer pins the spool's chain. Returns where it went.
///
/// # Errors
/// I/O errors of the rename.
pub fn forget(path: &Path) -> std::io::Result<PathBuf> {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".forgotten-{secs}"));
    let to = path.with_file_name(name);
    std::fs::rename(path, &to)?;
    Ok(to)
}
/// The record on the line that ends (with its newline) at byte `end` of `chain`.
fn record_ending_at(chain: &Path, end: u64) -> std::io::Result<Option<Value>> {
    crate::chain_file::line_ending_at(&mut std::fs::File::open(chain)?, end)
}
