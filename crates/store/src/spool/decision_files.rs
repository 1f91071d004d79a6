//! Decision files (`decisions/<id>.json`): written after a decision, restored from the chain.

use super::view::verify_chain_records;
use super::{ChainView, Spool, chain_decision_of};
use crate::atomic::write_atomic;
use crate::chain_file::ChainError;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::PathBuf;
use warrant_protocol::chain;
use warrant_protocol::decision::{self, SignedDecision};
use warrant_protocol::keys::PinnedKeys;
use warrant_protocol::packet;

// Named in documentation only.
#[cfg(doc)]
use super::verify_chain;

/// Packet ids that may be decided in the chain but have no decision file: the names of the
/// files in `packets/` (without `.json`; `propose` names them by id) that are safe ids and have
/// no `decisions/<id>.json`. What a decision or a listing restores from the chain, so a decision
/// file lost to a full disk is written again once space returns (`docs/spool.md`).
#[must_use]
pub fn ids_without_decision_files(spool: &Spool) -> std::collections::HashSet<String> {
    let Ok(entries) = fs::read_dir(spool.packets_dir()) else { return Default::default() };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_suffix(".json").map(str::to_owned))
        .filter(|id| packet::is_safe_id(id) && !spool.decision_path(id).exists())
        .collect()
}

/// Verifies the whole chain (as [`verify_chain`]) and writes again every decision file of
/// `missing` (ids, as [`ids_without_decision_files`] finds them) that the chain decided. Returns
/// the view and how many files were restored.
///
/// # Errors
/// As [`verify_chain`]; a decision file that cannot be written is logged and counted out.
pub fn verify_chain_restoring(
    spool: &Spool,
    pinned: &PinnedKeys,
    missing: &std::collections::HashSet<String>,
) -> Result<(ChainView, usize), ChainError> {
    let (view, kept) = verify_chain_records(spool, pinned, |id| missing.contains(id))?;
    Ok((view, restore_all(spool, &kept)))
}

/// The chain view `warrant list` shows, with the decision files of `missing` written again:
/// from the principal's own checkpoint copy and the fold beside it when they hold
/// (`folded_view`: nothing of the prefix read, the records after it verified, as
/// before a decision), else the whole chain verified ([`verify_chain_restoring`]), which a
/// decision of the prefix whose file is missing also takes. Returns the view and how many files
/// were restored. The prefix is vouched for by the principal's signed checkpoint and fold:
/// `warrant verify` checks it again. From a fold, the view's prefix decisions are only those of
/// the ids `wanted` answers ([`super::Wanted`], asked once the fold is read; a whole-chain view holds
/// every decision).
///
/// # Errors
/// As [`verify_chain`].
pub fn listing_view(
    spool: &Spool,
    pinned: &PinnedKeys,
    missing: &std::collections::HashSet<String>,
    wanted: super::fold::Wanted<'_>,
) -> Result<(ChainView, usize), ChainError> {
    match super::fold::folded_view(spool, pinned, &|id| missing.contains(id), wanted) {
        Some(c) => Ok((c.view, restore_all(spool, &c.kept))),
        None => verify_chain_restoring(spool, pinned, missing),
    }
}

/// Writes the decision file of each record in `kept`; logs the ones that fail.
pub(super) fn restore_all(spool: &Spool, kept: &[Map<String, Value>]) -> usize {
    // Approvals towards a quorum are no decision on their own; the one that meets the quorum is
    // restored with them (they may come in any order: the prefix's records after the tail's).
    let mut partial: HashMap<String, Vec<decision::CoSignature>> = HashMap::new();
    for (id, d) in kept.iter().filter_map(chain_decision_of) {
        if let Some(signed) = d.signed.filter(|s| s.document.get("cosigners").is_none()) {
            let c = decision::CoSignature { signed: *signed, chain_index: d.chain_index, entry_hash: d.entry_hash };
            partial.entry(id).or_default().push(c);
        }
    }
    kept.iter()
        .filter(|rec| match restore_decision_file(spool, rec, &partial) {
            Ok(done) => done,
            Err(e) => {
                tracing::warn!(error = %e, "could not restore a decision file");
                false
            }
        })
        .count()
}

/// Rebuilds `decisions/<id>.json` from a decision record in the chain (used when an earlier
/// write of the file was lost after its record was appended). An approval that met a quorum is
/// rebuilt with the earlier approvals it names (`cosigners`), taken from `partial` (by packet
/// id); one that did not is no decision and is skipped.
///
/// # Errors
/// I/O errors; a record that is not a warrant decision is ignored.
pub fn restore_decision_file(
    spool: &Spool,
    rec: &Map<String, Value>,
    partial: &HashMap<String, Vec<decision::CoSignature>>,
) -> io::Result<bool> {
    let Some(meta) = rec.get("metadata") else { return Ok(false) };
    let (Some(doc), Some(sig)) =
        (meta.get("warrant_decision"), meta.get("approval").and_then(|a| a.get("signatures")).and_then(|s| s.get(0)))
    else {
        return Ok(false);
    };
    let Some(id) = doc.get("packet_id").and_then(Value::as_str).filter(|id| packet::is_safe_id(id)) else {
        return Ok(false);
    };
    let mut signature = sig.clone();
    if let Value::Object(m) = &mut signature {
        m.remove("reviewer");
        m.remove("signed_at");
    }
    let signed = SignedDecision { document: doc.clone(), signature };
    let appended = chain::Appended {
        chain_index: rec.get("chain_index").and_then(Value::as_u64).unwrap_or(0),
        entry_hash: rec.get("entry_hash").and_then(Value::as_str).unwrap_or_default().to_owned(),
        record: Value::Null,
    };
    let file = match decision::cosign_terms(doc) {
        Ok(None) => decision::decision_file(&signed, &appended),
        Ok(Some(terms)) if !terms.cosigners.is_empty() => {
            let mut earlier: Vec<decision::CoSignature> = partial
                .get(id)
                .into_iter()
                .flatten()
                .filter(|c| {
                    c.signed.document.get("packet_hash") == doc.get("packet_hash")
                        && c.signed.document.get("quorum") == doc.get("quorum")
                        && terms.cosigners.iter().any(|p| p == c.principal())
                        && doc.get("principal").and_then(Value::as_str) != Some(c.principal())
                })
                .cloned()
                .collect();
            earlier.sort_by_key(|c| c.chain_index);
            earlier.dedup_by(|a, b| a.principal() == b.principal());
            decision::cosigned_decision_file(&signed, &appended, &earlier)
        }
        _ => return Ok(false),
    };
    write_decision_file_as(spool, id, &file, Written::FromChain)?;
    Ok(true)
}

/// Who writes a decision file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Written {
    /// The decision just signed here.
    Signed,
    /// Rebuilt from its chain record ([`restore_decision_file`]).
    FromChain,
}

/// Writes `decisions/<id>.json` of a decision just signed; in a replica, also to its store's
/// decisions bucket ([`crate::upstream::Upstream::publish_decision`]), which is where agents on
/// other hosts read it.
pub(super) fn write_decision_file(spool: &Spool, id: &str, file: &Value) -> io::Result<PathBuf> {
    write_decision_file_as(spool, id, file, Written::Signed)
}

/// [`write_decision_file`]; a file rebuilt from the chain is not written to the bucket from here:
/// in a replica it is marked rebuilt ([`crate::replica::mark_rebuilt`]), and a host with the
/// principal's key writes it there ([`crate::replica::publish_rebuilt`]), since the host that
/// signed it may have died between the chain and the bucket.
///
/// In a replica, a decision just signed goes to the bucket *before* the file: agents on other
/// hosts read it there, so a file that cannot be written here (a full disk, something in its
/// place) does not keep it from them. A bucket that cannot be reached leaves the file unmarked,
/// for the next pull to write it there.
fn write_decision_file_as(spool: &Spool, id: &str, file: &Value, how: Written) -> io::Result<PathBuf> {
    let path = spool.decision_path(id);
    let mut bytes = serde_json::to_vec_pretty(file).map_err(io::Error::other)?;
    bytes.push(b'\n');
    let to_store = match (how, spool.chain_upstream()) {
        (Written::Signed, Some(store)) => store.publish_decision(spool, id, &bytes),
        _ => Ok(()),
    };
    // Marked before the file is there: no pull ever finds a rebuilt file it would take for one
    // whose write to the bucket failed here.
    #[cfg(feature = "jetstream")]
    if how == Written::FromChain {
        crate::replica::mark_rebuilt(spool, id)?;
    }
    fs::create_dir_all(spool.decisions_dir())?;
    write_atomic(&path, &bytes, 0o644)?;
    to_store.map_err(|e| io::Error::other(format!("written here, but not to the store's decisions bucket: {e}")))?;
    Ok(path)
}

/// Writes the decision file of every decision record in `records` (records just appended to
/// the chain from elsewhere: a replica's catch-up) that has none, as [`restore_decision_file`]
/// does; returns how many. An approval towards a quorum whose earlier approvals are not among
/// `records` is skipped (its file comes with the next full verification, `warrant list`).
#[must_use]
pub fn restore_decision_files(spool: &Spool, records: &[Map<String, Value>]) -> usize {
    let fresh: Vec<Map<String, Value>> = records
        .iter()
        .filter(|rec| chain_decision_of(rec).is_some_and(|(id, _)| !spool.decision_path(&id).exists()))
        .cloned()
        .collect();
    restore_all(spool, &fresh)
}
