//! Signing a decision on a packet and recording it in the chain.

use super::decision_files::{restore_all, write_decision_file};
use super::first_problem;
use super::fold::{sign_checkpoint, verified_view};
use super::view::signed_so_far;
use super::{ChainView, Scanner, Spool, ids_without_decision_files};
use crate::chain_file::{self, ChainError};
use serde_json::{Map, Value};
use std::io;
use std::path::PathBuf;
use warrant_protocol::chain;
use warrant_protocol::correction::{Correction, EditSize};
use warrant_protocol::decision::{self, DecisionInput, SignedDecision, Verdict};
use warrant_protocol::graduation::evidence::SourceType;
use warrant_protocol::graduation::receipt::{ReceiptInput, ReceiptOutcome, build_receipt_labelled};
use warrant_protocol::keys::{PinnedKeys, Principal};
use warrant_protocol::ladder::ActionPrecondition;
use warrant_protocol::packet::{DecisionState, Packet};

// Named in documentation only.
#[cfg(doc)]
use super::chain_evidence_of;
#[cfg(doc)]
use warrant_protocol::control::ControlState;

/// Why a decision could not be made.
#[derive(Debug, thiserror::Error)]
pub enum DecideError {
    /// No valid packet with that id is in the spool.
    #[error("no valid packet {0:?} in the spool")]
    UnknownPacket(String),
    /// The packet already has a decision in the chain.
    #[error("packet {id:?} was already decided: {verdict} by {principal} at {at}")]
    AlreadyDecided {
        /// The packet.
        id: String,
        /// What was decided.
        verdict: &'static str,
        /// By whom.
        principal: String,
        /// When.
        at: String,
    },
    /// The packet's decision state forbids execution even with approval.
    #[error(
        "packet {id:?} is {state}: an agent may not execute it even with approval; refuse it (and act yourself if it must be done)"
    )]
    NotApprovable {
        /// The packet.
        id: String,
        /// Its decision state.
        state: DecisionState,
    },
    /// The chain does not verify; nothing is signed onto a broken chain.
    #[error("the chain does not verify ({0}); refusing to sign until it is examined (`warrant verify`)")]
    ChainBroken(String),
    /// The record that would be appended does not pass verification itself (for example a key
    /// that is not pinned for this principal): nothing was appended.
    #[error("refusing to append a record that would not verify: {0}")]
    WouldNotVerify(String),
    /// The packet expired before the decision.
    #[error("packet {id:?} expired at {expires_at}; an expired packet can only be refused")]
    Expired {
        /// The packet.
        id: String,
        /// Its `expires_at`.
        expires_at: String,
    },
    /// The spool is not safe to sign into (see [`Spool::check_private`]).
    #[error("unsafe spool: {0}")]
    UnsafeSpool(#[from] crate::spool::UnsafeSpool),
    /// A refusal needs a reason.
    #[error("a refusal needs a reason")]
    ReasonRequired,
    /// A precondition of the packet's contract does not hold now (two-phase execution): the
    /// world changed since the agent proposed, so there is nothing sound to approve.
    #[error("precondition_failed: {0}; refuse the packet, or let the agent propose again")]
    PreconditionFailed(String),
    /// The chain as verified under the lock refuses it: a control it no longer admits (it
    /// changed since the principal looked), an elevation the hypervisor's rules deny, an approval
    /// the caller's check forbids (see [`decide_with`]).
    #[error("{0}")]
    Refused(String),
    /// The packet's `governance.contract` is malformed, so its preconditions cannot be recorded.
    #[error("packet {id:?} has an invalid action contract ({reason}); it can only be refused")]
    InvalidContract {
        /// The packet.
        id: String,
        /// What is wrong.
        reason: String,
    },
    /// Appending failed.
    #[error(transparent)]
    Chain(#[from] ChainError),
    /// Scanning the spool or writing the decision file failed.
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// The outcome of a successful decision.
#[derive(Debug, Clone)]
pub struct Decided {
    /// The signed document and signature.
    pub signed: SignedDecision,
    /// The chain record written.
    pub appended: chain::Appended,
    /// The decision file written for the agent.
    pub decision_file: PathBuf,
    /// Set when the decision is recorded in the chain but its decision file could not be
    /// written (the chain is the source of truth; the next decision restores the file).
    pub file_error: Option<String>,
    /// For an approval under a quorum: the terms and who has signed so far, this signature
    /// included. While they are fewer than `required`, no decision file is written and the packet
    /// stays pending.
    pub cosigned: Option<CosignProgress>,
}

/// How far an approval under a quorum has got ([`Decided::cosigned`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CosignProgress {
    /// The terms.
    pub quorum: warrant_protocol::decision::Quorum,
    /// Who has signed, in chain order.
    pub signers: Vec<String>,
}

impl CosignProgress {
    /// Whether the quorum is met (the decision file is written).
    #[must_use]
    pub fn met(&self) -> bool {
        self.signers.len() >= self.quorum.required
    }

    /// `1/2 signed (alice); waits for 1 more of bob, carol`, or `2/2 signed (alice, bob)`.
    #[must_use]
    pub fn describe(&self) -> String {
        let head = signed_so_far(&self.signers, self.quorum.required);
        if self.met() {
            return head;
        }
        let rest: Vec<&str> = self
            .quorum
            .principals
            .iter()
            .map(String::as_str)
            .filter(|p| !self.signers.iter().any(|s| s == p))
            .collect();
        format!("{head}; waits for {} more of {}", self.quorum.required - self.signers.len(), rest.join(", "))
    }
}

/// The chain record of a signed decision ([`decision::record_body`]) with the principal's own
/// receipt (`decision:<packet id>`, provenance `principal`, linked to `prev_receipt`) in
/// `metadata.tg_receipt`.
#[must_use]
pub fn decision_record_body(
    input: &DecisionInput<'_>,
    signed: &SignedDecision,
    prev_receipt: Option<&str>,
    publisher: Option<u32>,
) -> Map<String, Value> {
    let mut body = decision::record_body(input, signed);
    let receipt_id = format!("decision:{}", input.packet_id);
    // An approval as corrected is the principal's `correct` receipt, labelled by the edit's size.
    let corrected = decision::correction_of(&signed.document).ok().flatten().map(|c| c.size);
    let outcome = if corrected.is_some() { ReceiptOutcome::Correct } else { input.verdict.into() };
    let receipt = build_receipt_labelled(
        &ReceiptInput {
            receipt_id: &receipt_id,
            action_class: input.action_class,
            outcome,
            agent: input.agent,
            packet_id: Some(input.packet_id),
            source_type: Some(SourceType::Principal),
            created_at: input.decided_at,
            prev_hash: prev_receipt,
            note: None,
            tool_call: None,
        },
        corrected.map_or_else(|| outcome.label(), EditSize::label),
    );
    if let Some(Value::Object(meta)) = body.get_mut("metadata") {
        meta.insert("tg_receipt".into(), receipt);
        if let Some(uid) = publisher {
            meta.insert(
                warrant_protocol::control::PUBLISHER_KEY.into(),
                serde_json::json!({"agent": input.agent, "uid": uid}),
            );
        }
    }
    body
}

/// What the packet itself says against `verdict` at `decided_at`, before any chain is read: an
/// approval of a packet that declares itself blocked or human_only, or that expired (or whose
/// times cannot be read), is refused.
pub(super) fn packet_admits(packet: &Packet, verdict: Verdict, decided_at: &str) -> Result<(), DecideError> {
    if verdict == Verdict::Approve
        && let Some(state @ (DecisionState::Blocked | DecisionState::HumanOnly)) = packet.state
    {
        return Err(DecideError::NotApprovable { id: packet.id.clone(), state });
    }
    if verdict == Verdict::Approve
        && let Some(expires_at) = &packet.expires_at
    {
        let expired = match (
            warrant_protocol::clock::unix_seconds(expires_at),
            warrant_protocol::clock::unix_seconds(decided_at),
        ) {
            (Some(e), Some(now)) => e <= now,
            _ => true,
        };
        if expired {
            return Err(DecideError::Expired { id: packet.id.clone(), expires_at: expires_at.clone() });
        }
    }
    Ok(())
}

/// Signs a decision on `packet` and records it: under the chain's lock, re-reads and verifies
/// the whole chain (refusing a broken one, and a packet that is already decided), checks that
/// the new record would itself verify, appends it durably, then writes
/// `decisions/<id>.json` atomically. Decision files missing for earlier records are restored
/// from the chain on the way.
///
/// Preconditions are not observed ([`Unobserved`]), so an approval of a packet with a
/// precondition to re-check fails closed here: callers that honour the principal's
/// `[preconditions] roots` use [`decide_with`] with their observer.
///
/// # Errors
/// [`DecideError`]; on any error nothing was appended.
pub fn decide(
    spool: &Spool,
    principal: &Principal,
    pinned: &PinnedKeys,
    packet: &Packet,
    verdict: Verdict,
    reason: Option<&str>,
    decided_at: &str,
) -> Result<Decided, DecideError> {
    decide_with(spool, principal, pinned, packet, None, verdict, reason, None, decided_at, &Unobserved, None, |_| {
        Ok(Vec::new())
    })
}

/// [`decide`], for a packet whose file `publisher` (a uid) owns, recording an approval's
/// preconditions as `observer` observes them (before the lock is taken), and with `admit` run on the chain as verified under the lock, just before signing: an `Err`
/// refuses the decision ([`DecideError::Refused`]) and nothing is appended. The CLI checks the
/// composed verdict here, so the chain is verified once and the principal's controls cannot
/// change between the check and the signature.
///
/// An approval records `publisher` in the record (`metadata.warrant_publisher`): the chain's
/// first such record for an agent binds the agent id to that uid ([`ControlState::publishers`]).
/// A refusal binds nothing, so refusing a squatter's packet never hands it the agent's name.
///
/// # Errors
/// As [`decide`], and [`DecideError::Refused`].
#[allow(clippy::too_many_arguments)]
pub fn decide_with(
    spool: &Spool,
    principal: &Principal,
    pinned: &PinnedKeys,
    packet: &Packet,
    publisher: Option<u32>,
    verdict: Verdict,
    reason: Option<&str>,
    corrected: Option<Corrected<'_>>,
    decided_at: &str,
    observer: &dyn PreconditionRecorder,
    quorum: Option<&warrant_protocol::decision::Quorum>,
    admit: impl FnOnce(&ChainView) -> Result<Vec<String>, String>,
) -> Result<Decided, DecideError> {
    if corrected.is_some() && verdict != Verdict::Approve {
        return Err(DecideError::Refused("only an approval is corrected".into()));
    }
    if corrected.is_some() && quorum.is_some() {
        return Err(DecideError::Refused(format!(
            "{} is of a class that needs several principals' approval: it cannot be approved as corrected \
             (refuse it with the correction as the reason, and the agent proposes again)",
            packet.id
        )));
    }
    let signs = Signs { quorum, system: None, corrected };
    decide_as(spool, principal, pinned, packet, publisher, verdict, reason, decided_at, observer, signs, admit)
}

/// An approval as corrected ([`decide_with`]): its signed document carries the principal's
/// `correction` (the corrected action, its size and evidence label,
/// [`decision::sign_decision_with`]), so the agent runs the corrected action and the chain's
/// evidence for the class is `minor_edit` or `heavy_rewrite`, not `approved`.
#[derive(Debug, Clone, Copy)]
pub struct Corrected<'a> {
    /// The correction.
    pub correction: &'a Correction,
    /// For a tool call, the corrected call's preconditions
    /// ([`Correction::preconditions`]): recorded with the approval instead of the packet's, so
    /// what is re-checked before the call runs is what the correction names.
    pub preconditions: Option<&'a [ActionPrecondition]>,
}

/// What a decision signs besides its verdict: co-signing terms, a system cause, a correction.
#[derive(Clone, Copy)]
struct Signs<'a> {
    quorum: Option<&'a warrant_protocol::decision::Quorum>,
    system: Option<decision::SystemCause>,
    corrected: Option<Corrected<'a>>,
}

/// Signs and records a *system decision* on `packet` ([`decision::SystemCause`]): a refusal,
/// with `reason` (required), its signed document carrying `"system": cause`, made exactly as
/// [`decide`] makes a refusal (under the chain's lock, on a verified chain, once: a packet already
/// decided is [`DecideError::AlreadyDecided`]). The principal's console signs one when a
/// packet of a class with `[timeouts] sign_refusal = true` timed out undecided. It decides the
/// packet (the chain's decisions, `decisions/<id>.json`: the agent is told it was refused), and
/// it is never evidence ([`chain_evidence_of`]).
///
/// # Errors
/// As [`decide`]; on any error nothing was appended.
pub fn decide_system(
    spool: &Spool,
    principal: &Principal,
    pinned: &PinnedKeys,
    packet: &Packet,
    cause: decision::SystemCause,
    reason: &str,
    decided_at: &str,
) -> Result<Decided, DecideError> {
    let (verdict, reason) = (Verdict::Refuse, Some(reason));
    decide_as(
        spool,
        principal,
        pinned,
        packet,
        None,
        verdict,
        reason,
        decided_at,
        &Unobserved,
        Signs { quorum: None, system: Some(cause), corrected: None },
        |_| Ok(Vec::new()),
    )
}

/// [`decide_with`] (an approval under `quorum` is one co-signature), signing a system decision
/// when `system` is given ([`decide_system`]).
#[allow(clippy::too_many_arguments)]
fn decide_as(
    spool: &Spool,
    principal: &Principal,
    pinned: &PinnedKeys,
    packet: &Packet,
    publisher: Option<u32>,
    verdict: Verdict,
    reason: Option<&str>,
    decided_at: &str,
    observer: &dyn PreconditionRecorder,
    signs: Signs<'_>,
    admit: impl FnOnce(&ChainView) -> Result<Vec<String>, String>,
) -> Result<Decided, DecideError> {
    let Signs { quorum, system, corrected } = signs;
    let correction = corrected.map(|c| c.correction);
    let corrected_preconditions = corrected.and_then(|c| c.preconditions);
    may_decide(spool, packet, verdict, reason, decided_at)?;
    let trace = packet.trace_id.clone().unwrap_or_else(|| format!("warrant:{}", packet.id));
    let action_class = warrant_protocol::registry::normalize(&packet.action_class);
    let input = DecisionInput {
        packet_id: &packet.id,
        packet_hash: &packet.content_hash,
        action_class: &action_class,
        agent: &packet.agent,
        trace_id: &trace,
        verdict,
        reason: reason.map(str::trim).filter(|r| !r.is_empty()),
        decided_at,
        stands_in_for: &[],
    };
    // An approval as corrected re-checks the corrected call's preconditions, not the proposed one's.
    let mut preconditions = match (verdict, corrected_preconditions) {
        (Verdict::Approve, Some(p)) => observer.record(p, publisher).map_err(DecideError::PreconditionFailed)?,
        (Verdict::Approve, None) => record_preconditions(observer, packet, publisher)?,
        (Verdict::Refuse, _) => None,
    };
    // Signed under the lock, once `admit` has said what the approval stands in for on the
    // verified chain: what is signed is what was checked.
    let mut signed: Option<SignedDecision> = None;
    let chain_path = spool.chain_path();
    let mut refusal: Option<DecideError> = None;
    let mut to_restore: Vec<Map<String, Value>> = Vec::new();
    let mut checkpoint = Value::Null;
    // Under a quorum: the terms signed, and the approvals signed before this one.
    let mut cosign: Option<(decision::Cosign, Vec<decision::CoSignature>)> = None;
    // The fold of the prefix the verification proved, from the check to the checkpoint.
    let fold = std::cell::Cell::new(None);
    // Decision files lost earlier (a full disk) are restored from the chain on the way (listed
    // before the lock is taken): a prefix decision among them needs its record, so the prefix is
    // read then (the fold holds no records).
    let missing = ids_without_decision_files(spool);
    let appended = chain_file::append_then(
        &chain_path,
        spool.chain_upstream(),
        chain_file::LOCK_DEADLINE,
        |head| {
            let keep = |id: &str| missing.contains(id) || (id == packet.id && !spool.decision_path(id).exists());
            let (view, kept) = match verified_view(spool, pinned, keep) {
                Ok(c) => {
                    fold.set(c.fold);
                    (c.view, c.kept)
                }
                Err(e) => {
                    let msg = e.to_string();
                    refusal = Some(e);
                    return Err(msg);
                }
            };
            to_restore = kept;
            if let Some(already) = already_decided(&view, &packet.id) {
                refusal = Some(already);
                return Err("already decided".into());
            }
            // A call a hook or gateway answered, or stopped waiting for, never runs: its
            // approval would record a call that did not run (checked under the lock, last).
            if let Some(why) = withdrawn_refusal(spool, packet, publisher, verdict) {
                refusal = Some(DecideError::Refused(why));
                return Err("refused".into());
            }
            let stands_in_for = match admit(&view) {
                Ok(s) => s,
                Err(why) => {
                    refusal = Some(DecideError::Refused(why));
                    return Err("refused".into());
                }
            };
            if let Some(q) = quorum.filter(|_| verdict == Verdict::Approve) {
                match cosign_terms_for(&view, packet, principal, q, pinned) {
                    Ok(terms) => cosign = Some(terms),
                    Err(why) => {
                        refusal = Some(DecideError::Refused(why));
                        return Err("refused".into());
                    }
                }
            }
            let input = DecisionInput { stands_in_for: &stands_in_for, ..input.clone() };
            let now_signed = match sign_as(
                principal,
                &input,
                system,
                &mut preconditions,
                cosign.as_ref().map(|(c, _)| c),
                correction,
            ) {
                Ok(signed) => signed,
                Err(why) => {
                    refusal = Some(DecideError::Refused(why.to_string()));
                    return Err("refused".into());
                }
            };
            let publisher = publisher.filter(|_| verdict == Verdict::Approve);
            let body = decision_record_body(&input, &now_signed, view.last_receipt_hash.as_deref(), publisher);
            signed = Some(now_signed);
            if let Some(problem) = first_problem(&body, head, Some(pinned)) {
                refusal = Some(DecideError::WouldNotVerify(problem));
                return Err("would not verify".into());
            }
            Ok(body)
        },
        |a, bytes| checkpoint = sign_checkpoint(spool, principal, pinned, a, bytes, decided_at, fold.take()),
    );
    restore_all(spool, &to_restore);
    let (appended, signed) = appended_with_signature(spool, appended, signed, refusal)?;
    let path = spool.decision_path(&packet.id);
    let cosigned = cosign_progress(cosign.as_ref(), principal, pinned);
    if cosigned.as_ref().is_some_and(|c| !c.met()) {
        // One approval towards a quorum: recorded, nothing released.
        return Ok(Decided { signed, appended, decision_file: path, file_error: None, cosigned });
    }
    let file = decision_file_of(&signed, &appended, cosign.as_ref(), checkpoint);
    let file_error = write_decision_file(spool, &packet.id, &file).err().map(|e| format!("{}: {e}", path.display()));
    if let Some(e) = &file_error {
        tracing::warn!(error = %e, "decision recorded in the chain, but its decision file was not written");
    }
    Ok(Decided { signed, appended, decision_file: path, file_error, cosigned })
}

/// Checks, before the lock, that `packet` may be decided `verdict` at `decided_at` (a refusal
/// needs a reason) and that the spool is there and private.
fn may_decide(
    spool: &Spool,
    packet: &Packet,
    verdict: Verdict,
    reason: Option<&str>,
    decided_at: &str,
) -> Result<(), DecideError> {
    if verdict == Verdict::Refuse && reason.is_none_or(|r| r.trim().is_empty()) {
        return Err(DecideError::ReasonRequired);
    }
    packet_admits(packet, verdict, decided_at)?;
    spool.ensure()?;
    spool.check_private()?;
    Ok(())
}

/// [`DecideError::AlreadyDecided`] when the verified chain `view` has a decision on the packet `id`.
pub(super) fn already_decided(view: &ChainView, id: &str) -> Option<DecideError> {
    let prior = view.decisions.get(id)?;
    Some(DecideError::AlreadyDecided {
        id: id.to_owned(),
        verdict: prior.verdict.as_str(),
        principal: prior.principal.clone(),
        at: prior.decided_at.clone(),
    })
}

/// Why `packet` may not be decided `verdict` when its call was withdrawn: a call a hook or
/// gateway answered, or stopped waiting for, never runs (and one that ran is not the principal's
/// to decide).
fn withdrawn_refusal(spool: &Spool, packet: &Packet, publisher: Option<u32>, verdict: Verdict) -> Option<String> {
    if let Some(w) = super::withdrawn(spool, &packet.id, publisher, time::OffsetDateTime::now_utc())
        && (verdict == Verdict::Approve || w.ran())
    {
        let why = if w.ran() {
            format!("{} is not the principal's to decide: {w}", packet.id)
        } else {
            format!("{} was withdrawn: {w}; it will not run", packet.id)
        };
        return Some(why);
    }
    None
}

/// Signs the decision `input`: the principal's (with the preconditions taken from
/// `preconditions`, under the co-signing terms `cosign`), or the system decision for `system`,
/// which is only ever a refusal.
fn sign_as(
    principal: &Principal,
    input: &DecisionInput<'_>,
    system: Option<decision::SystemCause>,
    preconditions: &mut Option<Value>,
    cosign: Option<&decision::Cosign>,
    correction: Option<&Correction>,
) -> Result<SignedDecision, decision::NotARefusal> {
    match system {
        None => Ok(decision::sign_decision_with(principal, input, preconditions.take(), cosign, correction)),
        // Only ever a refusal: anything else signs nothing.
        Some(cause) => decision::sign_system_decision(principal, input, cause),
    }
}

/// The record appended and the decision signed for it; else why nothing was appended (the
/// refusal under the lock, if there was one).
fn appended_with_signature(
    spool: &Spool,
    appended: Result<chain::Appended, ChainError>,
    signed: Option<SignedDecision>,
    refusal: Option<DecideError>,
) -> Result<(chain::Appended, SignedDecision), DecideError> {
    match (appended, signed) {
        (Ok(a), Some(signed)) => Ok((a, signed)),
        (Ok(_), None) => {
            // Unreachable: the record appended was built from the signature made just before.
            let source = std::io::Error::other("a decision was appended without its signature");
            Err(DecideError::Chain(ChainError::Io { path: spool.chain_path(), source }))
        }
        (Err(e), _) => Err(refusal.unwrap_or(DecideError::Chain(e))),
    }
}

/// How far the quorum is met with `principal`'s approval under the co-signing terms `cosign`
/// (`None` when the class needs no quorum).
fn cosign_progress(
    cosign: Option<&(decision::Cosign, Vec<decision::CoSignature>)>,
    principal: &Principal,
    pinned: &PinnedKeys,
) -> Option<CosignProgress> {
    cosign.map(|(terms, earlier)| {
        // Counted by key, as every verifier counts them ([`decision::Quorum::count`]).
        let own = principal.fingerprint();
        let approvals =
            earlier.iter().map(|c| (c.principal(), c.key())).chain([(principal.name.as_str(), own.as_str())]);
        CosignProgress { quorum: terms.quorum.clone(), signers: terms.quorum.count(approvals, pinned).signers }
    })
}

/// The decision file of the decision `signed` appended as `appended` (with the approvals signed
/// before it under the co-signing terms `cosign`), and the checkpoint signed after it.
fn decision_file_of(
    signed: &SignedDecision,
    appended: &chain::Appended,
    cosign: Option<&(decision::Cosign, Vec<decision::CoSignature>)>,
    checkpoint: Value,
) -> Value {
    let mut file = match cosign {
        Some((_, earlier)) => decision::cosigned_decision_file(signed, appended, earlier),
        None => decision::decision_file(signed, appended),
    };
    if let Value::Object(m) = &mut file {
        m.insert("checkpoint".into(), checkpoint);
    }
    file
}

/// The co-signing terms of `principal`'s approval of `packet` under `quorum`, on the verified
/// chain `view`, and the approvals signed before it (over the same content, under the same
/// terms): `cosigners` set when this one meets the quorum, counted by key under `pinned`
/// ([`decision::Quorum::count`]).
///
/// # Errors
/// A sentence when `principal` is not one of the quorum's, when the principal's key is not
/// pinned for the name it signs under, or when this key has signed already (under any name).
fn cosign_terms_for(
    view: &ChainView,
    packet: &Packet,
    principal: &Principal,
    quorum: &decision::Quorum,
    pinned: &PinnedKeys,
) -> Result<(decision::Cosign, Vec<decision::CoSignature>), String> {
    let class = warrant_protocol::text::inert(&packet.action_class, 200);
    if !quorum.lists(&principal.name) {
        return Err(format!(
            "{class} needs the approval of {}: {:?} is not one of them",
            quorum.describe(),
            principal.name
        ));
    }
    let own = principal.fingerprint();
    match pinned.get(&own) {
        Some(pin) if pin.principal == principal.name => {}
        Some(pin) => {
            return Err(format!(
                "your key {own} is pinned for {:?}, not {:?}: an approval towards a quorum counts only for the name its key is pinned for",
                pin.principal, principal.name
            ));
        }
        None => return Err(format!("your key {own} is not pinned: an approval towards a quorum needs a pinned key")),
    }
    let earlier: Vec<decision::CoSignature> = view
        .cosigning
        .get(&packet.id)
        .filter(|c| c.quorum == *quorum && c.packet_hash == packet.content_hash)
        .map(|c| c.signatures.clone())
        .unwrap_or_default();
    if earlier.iter().any(|c| c.principal() == principal.name || c.key() == own) {
        return Err(format!(
            "{} already has your approval ({}/{} signed; needs {}): it waits for another principal",
            packet.id,
            earlier.len(),
            quorum.required,
            quorum.describe()
        ));
    }
    let approvals = earlier.iter().map(|c| (c.principal(), c.key())).chain([(principal.name.as_str(), own.as_str())]);
    let counted = quorum.count(approvals, pinned).signers;
    let cosigners = if counted.len() >= quorum.required { counted } else { Vec::new() };
    Ok((decision::Cosign { quorum: quorum.clone(), cosigners }, earlier))
}

/// Why the pending packets of a killed agent could not all be refused: the kill itself is
/// recorded in the chain already.
#[derive(Debug, thiserror::Error)]
#[error("the kill is recorded, but refusing its pending packets failed: {0}")]
pub struct KillRefusalError(#[from] pub DecideError);

/// After the kill control `kill` (appended already): signs a refusal of every pending packet that
/// claims its agent (no decision in the chain yet), with `killed: <the kill's reason>` as the
/// refusal's reason, so what the kill switch reports as compensated is decided in the chain and
/// every waiting agent is answered. The one place the CLI and the console do this. Returns the
/// ids refused; a packet decided meanwhile is skipped.
///
/// # Errors
/// The first [`DecideError`] other than "already decided", as a [`KillRefusalError`].
pub fn refuse_pending_of(
    spool: &Spool,
    principal: &Principal,
    pinned: &PinnedKeys,
    kill: &warrant_protocol::control::ControlInput,
) -> Result<Vec<String>, KillRefusalError> {
    let agent = kill.subject.as_str();
    let reason = format!("killed: {}", kill.reason.as_deref().unwrap_or("the principal killed the agent"));
    let (reason, decided_at) = (reason.as_str(), kill.decided_at.as_str());
    let snap = Scanner::new().scan(spool).map_err(DecideError::from)?;
    let mut refused = Vec::new();
    for e in snap.packets.iter().filter(|e| e.packet.agent == agent) {
        if spool.decision_path(&e.packet.id).exists() {
            continue;
        }
        match decide(spool, principal, pinned, &e.packet, Verdict::Refuse, Some(reason), decided_at) {
            Ok(_) => refused.push(e.packet.id.clone()),
            Err(DecideError::AlreadyDecided { .. }) => {}
            Err(err) => return Err(err.into()),
        }
    }
    Ok(refused)
}

/// The preconditions to record when approving `packet` (lodestar-and-tiers.md §A3), observed
/// by `observer` ([`PreconditionRecorder::record`]): `None` when the packet has no contract or
/// nothing to re-check.
///
/// # Errors
/// [`DecideError::PreconditionFailed`] when one does not hold or cannot be observed;
/// [`DecideError::InvalidContract`] for a malformed contract.
pub fn record_preconditions(
    observer: &dyn PreconditionRecorder,
    packet: &Packet,
    publisher: Option<u32>,
) -> Result<Option<Value>, DecideError> {
    let Some(g) = warrant_protocol::verdict::Governance::of_packet(packet) else { return Ok(None) };
    match &g.contract {
        None => Ok(None),
        Some(Err(reason)) => Err(DecideError::InvalidContract { id: packet.id.clone(), reason: reason.to_string() }),
        Some(Ok(c)) => observer.record(&c.preconditions, publisher).map_err(DecideError::PreconditionFailed),
    }
}

/// What deciding needs to observe of the principal's host to approve a packet whose action
/// contract has preconditions to re-check at execution (lodestar-and-tiers.md §A3): each one
/// marked `must_revalidate_at_execution`, observed now, to record in the approval. Observing
/// files and repositories is a surface's work, confined to the principal's declared roots
/// (`warrant_engine::preconditions::Observer` implements this); the store only records the result.
pub trait PreconditionRecorder {
    /// The preconditions to record with an approval, as a JSON array of
    /// `{"check_id", "parameters", "expected_at_approval"}`; `None` when none is to be re-checked.
    /// Observed as `publisher` (the uid owning the packet file) could observe it, never more:
    /// what is recorded is world-readable.
    ///
    /// # Errors
    /// A sentence naming the first check that does not hold or cannot be observed (by the
    /// publisher): the approval is then refused ([`DecideError::PreconditionFailed`]).
    fn record(&self, preconditions: &[ActionPrecondition], publisher: Option<u32>) -> Result<Option<Value>, String>;
}

/// The observer of a caller that observes nothing: a precondition to re-check cannot be
/// observed, so an approval that needs one fails closed; one with nothing to re-check records
/// nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct Unobserved;

impl PreconditionRecorder for Unobserved {
    fn record(&self, preconditions: &[ActionPrecondition], _publisher: Option<u32>) -> Result<Option<Value>, String> {
        match preconditions.iter().find(|p| p.must_revalidate_at_execution) {
            Some(p) => Err(format!("{:?} cannot be observed: no precondition roots are given", p.check_id)),
            None => Ok(None),
        }
    }
}
