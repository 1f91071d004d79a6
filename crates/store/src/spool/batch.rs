//! Batch decisions: one verdict on many packets, all or nothing (`docs/spool.md`, Batch decisions).

use super::decide::{already_decided, packet_admits};
use super::decision_files::{restore_all, write_decision_file};
use super::first_problem;
use super::fold::{sign_checkpoint, verified_view};
use super::view::receipt_hash_of;
use super::{
    ChainView, DecideError, Decided, PreconditionRecorder, Spool, decision_record_body, ids_without_decision_files,
    record_preconditions,
};
use crate::chain_file::{self, ChainError};
use serde_json::{Map, Value};
use std::io;
use warrant_protocol::chain;
use warrant_protocol::decision::{self, DecisionInput, SignedDecision, Verdict};
use warrant_protocol::keys::{PinnedKeys, Principal};
use warrant_protocol::packet::Packet;

// Named in documentation only.
#[cfg(doc)]
use super::decide_with;

/// One packet of a batch decision ([`decide_many`]).
#[derive(Debug, Clone)]
pub struct BatchItem<'a> {
    /// The packet as the principal reviewed it (its content hash is what gets signed).
    pub packet: &'a Packet,
    /// The uid owning the packet's file, recorded with an approval (as [`decide_with`]).
    pub publisher: Option<u32>,
}

/// Why a batch decision signed nothing: each packet that cannot be decided, and why, in the
/// order given. A batch is all or nothing (`docs/spool.md`, Batch decisions).
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    /// Some packets cannot be decided as asked: nothing was signed.
    #[error("nothing was signed: {} of the {total} packets cannot be decided: {}", .refused.len(), list_refused(.refused))]
    Refused {
        /// How many packets the batch had.
        total: usize,
        /// Packet id and the reason, for each packet refused from the batch.
        refused: Vec<(String, DecideError)>,
    },
    /// The batch as a whole failed (a broken chain, an unsafe spool, a missing reason, no packet,
    /// I/O): nothing was signed.
    #[error(transparent)]
    Decide(#[from] DecideError),
}

fn list_refused(refused: &[(String, DecideError)]) -> String {
    refused
        .iter()
        .map(|(id, e)| format!("{}: {e}", warrant_protocol::text::inert(id, 120)))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Signs the same decision on each of `items` and records them as one group (batch
/// triage): one signed decision document and one chain record per packet, exactly as
/// [`decide_with`] makes them, appended under one lock of the chain, after one verification of
/// it, with one `fdatasync` for the group ([`chain_file::append_many_then`]) and one checkpoint after
/// the last record; then one decision file per packet.
///
/// **All or nothing.** Every packet is checked as [`decide_with`] checks one (blocked,
/// human_only, expired, preconditions, an invalid contract; under the lock: already decided in
/// the chain, and `admit`, which the caller uses for the composed verdict and which says what an
/// approval stands in for); if any packet fails, nothing is signed and [`BatchError::Refused`]
/// lists every packet that failed and why. A packet listed twice is refused from the batch.
///
/// # Errors
/// [`BatchError`]; on any error nothing was appended.
#[allow(clippy::too_many_arguments)]
pub fn decide_many(
    spool: &Spool,
    principal: &Principal,
    pinned: &PinnedKeys,
    items: &[BatchItem<'_>],
    verdict: Verdict,
    reason: Option<&str>,
    decided_at: &str,
    observer: &dyn PreconditionRecorder,
    mut admit: impl FnMut(&ChainView, &Packet) -> Result<Vec<String>, String>,
) -> Result<Vec<Decided>, BatchError> {
    if items.is_empty() {
        return Err(DecideError::Refused("no packet to decide".into()).into());
    }
    if verdict == Verdict::Refuse && reason.is_none_or(|r| r.trim().is_empty()) {
        return Err(DecideError::ReasonRequired.into());
    }
    let reason = reason.map(str::trim).filter(|r| !r.is_empty());
    // Checks of the packets themselves, and their preconditions observed, before the lock.
    let (mut refused, seen, mut preconditions) = check_before_lock(items, verdict, decided_at, observer);
    if !refused.is_empty() {
        return Err(BatchError::Refused { total: items.len(), refused });
    }
    spool.ensure().map_err(DecideError::from)?;
    spool.check_private().map_err(DecideError::from)?;
    let classes: Vec<String> =
        items.iter().map(|i| warrant_protocol::registry::normalize(&i.packet.action_class)).collect();
    let traces: Vec<String> =
        items.iter().map(|i| i.packet.trace_id.clone().unwrap_or_else(|| format!("warrant:{}", i.packet.id))).collect();
    let mut signed: Vec<SignedDecision> = Vec::with_capacity(items.len());
    let mut failure: Option<BatchError> = None;
    let mut to_restore: Vec<Map<String, Value>> = Vec::new();
    let mut checkpoint = Value::Null;
    let fold = std::cell::Cell::new(None);
    let missing = ids_without_decision_files(spool);
    let appended = chain_file::append_many_then(
        &spool.chain_path(),
        spool.chain_upstream(),
        chain_file::LOCK_DEADLINE,
        |head| {
            let keep = |id: &str| missing.contains(id) || (seen.contains(id) && !spool.decision_path(id).exists());
            let view = match verified_view(spool, pinned, keep) {
                Ok(c) => {
                    fold.set(c.fold);
                    to_restore = c.kept;
                    c.view
                }
                Err(e) => {
                    let msg = e.to_string();
                    failure = Some(e.into());
                    return Err(msg);
                }
            };
            // Every packet is checked on the verified chain before anything is signed.
            let stands = check_on_chain(spool, &view, items, verdict, &mut admit, &mut refused);
            if !refused.is_empty() {
                failure = Some(BatchError::Refused { total: items.len(), refused: std::mem::take(&mut refused) });
                return Err("refused".into());
            }
            let mut bodies = Vec::with_capacity(items.len());
            let mut head = head.clone();
            let mut prev_receipt = view.last_receipt_hash.clone();
            for (((item, pre), stands_in_for), (class, trace)) in
                items.iter().zip(preconditions.iter_mut()).zip(&stands).zip(classes.iter().zip(&traces))
            {
                let p = item.packet;
                let input = DecisionInput {
                    packet_id: &p.id,
                    packet_hash: &p.content_hash,
                    action_class: class,
                    agent: &p.agent,
                    trace_id: trace,
                    verdict,
                    reason,
                    decided_at,
                    stands_in_for,
                };
                let now_signed = decision::sign_decision_with_preconditions(principal, &input, pre.take());
                let publisher = item.publisher.filter(|_| verdict == Verdict::Approve);
                let body = decision_record_body(&input, &now_signed, prev_receipt.as_deref(), publisher);
                if let Some(problem) = first_problem(&body, &head, Some(pinned)) {
                    failure = Some(DecideError::WouldNotVerify(format!("{}: {problem}", p.id)).into());
                    return Err("would not verify".into());
                }
                prev_receipt = receipt_hash_of(&body).or(prev_receipt);
                let sealed = chain::seal(body.clone(), &head);
                head = chain::ChainHead { last_index: sealed.chain_index, last_hash: Some(sealed.entry_hash) };
                signed.push(now_signed);
                bodies.push(body);
            }
            Ok(bodies)
        },
        |a, bytes| {
            if let Some(last) = a.last() {
                checkpoint = sign_checkpoint(spool, principal, pinned, last, bytes, decided_at, fold.take());
            }
        },
    );
    restore_all(spool, &to_restore);
    let appended = match appended {
        Ok(a) if a.len() == items.len() && signed.len() == items.len() => a,
        Ok(_) => {
            // Unreachable: one record was appended for each signature made.
            let source = io::Error::other("a batch was appended without its signatures");
            return Err(DecideError::Chain(ChainError::Io { path: spool.chain_path(), source }).into());
        }
        Err(e) => return Err(failure.unwrap_or(BatchError::Decide(DecideError::Chain(e)))),
    };
    Ok(write_decision_files(spool, items, signed, appended, &checkpoint))
}

/// The packets refused from a batch, each with why.
type Refused = Vec<(String, DecideError)>;

/// Checks each of `items` before the lock, as [`decide_with`] checks one, and observes the
/// preconditions of each approval: the packets refused from the batch and why, the ids seen, and
/// each packet's preconditions observed.
fn check_before_lock<'a>(
    items: &[BatchItem<'a>],
    verdict: Verdict,
    decided_at: &str,
    observer: &dyn PreconditionRecorder,
) -> (Refused, std::collections::HashSet<&'a str>, Vec<Option<Value>>) {
    let mut refused: Vec<(String, DecideError)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut preconditions: Vec<Option<Value>> = Vec::with_capacity(items.len());
    for item in items {
        let p = item.packet;
        if !seen.insert(p.id.as_str()) {
            refused.push((p.id.clone(), DecideError::Refused("listed twice in the batch".into())));
            preconditions.push(None);
            continue;
        }
        let checked = packet_admits(p, verdict, decided_at).and_then(|()| {
            if verdict == Verdict::Approve { record_preconditions(observer, p, item.publisher) } else { Ok(None) }
        });
        match checked {
            Ok(pre) => preconditions.push(pre),
            Err(e) => {
                refused.push((p.id.clone(), e));
                preconditions.push(None);
            }
        }
    }
    (refused, seen, preconditions)
}

/// Checks each of `items` on the verified chain `view`, under the lock: already decided,
/// withdrawn, and `admit`. Returns what each approval stands in for; the packets refused are
/// added to `refused`.
fn check_on_chain(
    spool: &Spool,
    view: &ChainView,
    items: &[BatchItem<'_>],
    verdict: Verdict,
    admit: &mut impl FnMut(&ChainView, &Packet) -> Result<Vec<String>, String>,
    refused: &mut Refused,
) -> Vec<Vec<String>> {
    let mut stands: Vec<Vec<String>> = Vec::with_capacity(items.len());
    for item in items {
        let p = item.packet;
        if let Some(already) = already_decided(view, &p.id) {
            refused.push((p.id.clone(), already));
            continue;
        }
        if let Some(w) = super::withdrawn(spool, &p.id, item.publisher, time::OffsetDateTime::now_utc())
            && (verdict == Verdict::Approve || w.ran())
        {
            refused.push((p.id.clone(), DecideError::Refused(format!("{}: {w}", p.id))));
            continue;
        }
        match admit(view, p) {
            Ok(s) => stands.push(s),
            Err(why) => refused.push((p.id.clone(), DecideError::Refused(why))),
        }
    }
    stands
}

/// Writes the decision file of each decision `signed` and `appended` for `items`, with the
/// checkpoint signed after the batch; a file not written is said in its [`Decided`].
fn write_decision_files(
    spool: &Spool,
    items: &[BatchItem<'_>],
    signed: Vec<SignedDecision>,
    appended: Vec<chain::Appended>,
    checkpoint: &Value,
) -> Vec<Decided> {
    let mut out = Vec::with_capacity(items.len());
    for ((item, signed), appended) in items.iter().zip(signed).zip(appended) {
        let id = &item.packet.id;
        let path = spool.decision_path(id);
        let mut file = decision::decision_file(&signed, &appended);
        if let Value::Object(m) = &mut file {
            m.insert("checkpoint".into(), checkpoint.clone());
        }
        let file_error = write_decision_file(spool, id, &file).err().map(|e| format!("{}: {e}", path.display()));
        if let Some(e) = &file_error {
            tracing::warn!(error = %e, "decision recorded in the chain, but its decision file was not written");
        }
        out.push(Decided { signed, appended, decision_file: path, file_error, cosigned: None });
    }
    out
}
