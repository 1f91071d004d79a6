//! Chain views: what the records of a verified chain say (decisions, co-signing, evidence, controls, grants).

use super::{ChainEvidence, Spool};
use crate::chain_file::{self, ChainError};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::fs;
use std::sync::Arc;
use warrant_protocol::chain::{self, VerifyOptions};
use warrant_protocol::control::{ControlEvent, ControlState};
use warrant_protocol::decision::{self, SignedDecision, Verdict};
use warrant_protocol::graduation::evidence::{EvidenceRow, SourceType};
use warrant_protocol::graduation::receipt::{ReceiptOutcome, receipt_evidence};
use warrant_protocol::keys::PinnedKeys;

// Named in documentation only.
#[cfg(doc)]
use super::fold::PrefixFold;
#[cfg(doc)]
use super::record_receipt;

/// Decisions by packet id, each shared: a chain view, its clones and what is made of it (the
/// console's assessments and decided list) hold the same decisions, not copies of them (20,000
/// decisions are about 9 MB).
pub type Decisions = HashMap<String, Arc<ChainDecision>>;

/// A decision as the chain records it (serialized in the principal's fold of a checkpointed
/// prefix, `PrefixFold`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ChainDecision {
    /// Approve or refuse.
    pub verdict: Verdict,
    /// Who decided.
    pub principal: String,
    /// The reason, if given.
    pub reason: Option<String>,
    /// When.
    pub decided_at: String,
    /// The packet content hash that was signed.
    pub packet_hash: String,
    /// The record's `chain_index`.
    pub chain_index: u64,
    /// The record's `entry_hash`.
    pub entry_hash: String,
    /// The agent, as the signed document names it.
    pub agent: String,
    /// The action class, as the signed document names it.
    pub action_class: String,
    /// An approval that met a quorum (co-signing): the distinct principals whose
    /// approvals make it up, sorted (`principal` is the last of them). Empty otherwise.
    pub cosigners: Vec<String>,
    /// The co-signing terms the record's approval was signed under, if any.
    pub quorum: Option<warrant_protocol::decision::Quorum>,
    /// For an approval under a quorum: its signed document and signature, until the fold
    /// ([`fold_decision`]) files it with the others.
    pub signed: Option<Box<SignedDecision>>,
    /// Set for a system decision (a refusal the principal's console signed when the packet timed
    /// out, [`decision::SystemCause`]): it decides the packet, and is never evidence nor part
    /// of the agent's record. `None` for a person's decision.
    pub system: Option<decision::SystemCause>,
    /// For an approval as corrected: how large the principal's edit was (its evidence label);
    /// the corrected action itself is in the signed document ([`decision::correction_of`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corrected: Option<warrant_protocol::correction::EditSize>,
}

impl ChainDecision {
    /// Whether this approval meets `quorum`: signed under exactly these terms, by at least
    /// `required` distinct listed principals (a plain approval never does).
    #[must_use]
    pub fn meets(&self, quorum: &warrant_protocol::decision::Quorum) -> bool {
        self.quorum.as_ref() == Some(quorum) && quorum.met_by(self.cosigners.iter().map(String::as_str))
    }

    /// Who signed it: the co-signers of a quorum, else the one principal.
    #[must_use]
    pub fn signed_by(&self) -> String {
        if self.cosigners.is_empty() { self.principal.clone() } else { self.cosigners.join(" + ") }
    }
}

/// Approvals gathered towards a quorum for a packet no decision settles yet.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Cosigning {
    /// The terms they were signed under.
    pub quorum: warrant_protocol::decision::Quorum,
    /// The packet content they approve.
    pub packet_hash: String,
    /// The approvals, one per listed name signed under, in chain order.
    pub signatures: Vec<warrant_protocol::decision::CoSignature>,
    /// The listed principals they count for, counted by key when they were folded
    /// ([`Cosigning::counted`]), sorted: what every surface shows as signed.
    #[serde(default)]
    pub count: Vec<String>,
    /// The approvals that do not count: `(name signed under, why)`.
    #[serde(default)]
    pub not_counted: Vec<(String, String)>,
}

impl Cosigning {
    /// The names the approvals so far were signed under, in chain order (what they claim:
    /// [`Cosigning::counted`] is what they count for).
    #[must_use]
    pub fn signers(&self) -> Vec<&str> {
        self.signatures.iter().map(warrant_protocol::decision::CoSignature::principal).collect()
    }

    /// The approvals so far counted by key under `pinned` ([`Quorum::count`]).
    ///
    /// [`Quorum::count`]: warrant_protocol::decision::Quorum::count
    #[must_use]
    pub fn counted(&self, pinned: &PinnedKeys) -> warrant_protocol::decision::QuorumCount {
        self.quorum.count(self.signatures.iter().map(|c| (c.principal(), c.key())), pinned)
    }

    /// Whether the key `fp` has signed one of the approvals so far.
    #[must_use]
    pub fn signed_by_key(&self, fp: &str) -> bool {
        self.signatures.iter().any(|c| c.key() == fp)
    }

    /// `1/2 signed (alice)`: the principals the approvals count for ([`Cosigning::count`]), and
    /// `; not counted: carol (key … is pinned for "alice", not "carol" …)` for those that do not.
    #[must_use]
    pub fn describe(&self) -> String {
        let mut text = signed_so_far(&self.count, self.quorum.required);
        if !self.not_counted.is_empty() {
            let not: Vec<String> = self.not_counted.iter().map(|(n, why)| format!("{n} ({why})")).collect();
            text.push_str(&format!("; not counted: {}", not.join("; ")));
        }
        text
    }
}

/// `1/2 signed (alice)`: how many of the `required` have signed, and who.
pub(super) fn signed_so_far<S: AsRef<str>>(signers: &[S], required: usize) -> String {
    let names: Vec<&str> = signers.iter().map(AsRef::as_ref).collect();
    format!("{}/{required} signed ({})", names.len(), names.join(", "))
}

/// Folds one verified decision record (in chain order) into the decisions and the co-signing in
/// progress. An approval under a quorum is gathered in `cosigning` (one per listed name, over the same
/// content and terms: a change of either starts again) and becomes the packet's decision when
/// the approvals count for `required` distinct listed principals, counted by key under the
/// verifier's `pinned` keys ([`Quorum::count`]: a key counts once, for the name it is pinned
/// for); a later approval of a decided packet changes nothing. Any other decision (a refusal
/// ends co-signing: one refusal refuses) is the packet's decision as it stands.
///
/// [`Quorum::count`]: warrant_protocol::decision::Quorum::count
pub fn fold_decision(
    decisions: &mut Decisions,
    cosigning: &mut HashMap<String, Cosigning>,
    id: String,
    mut d: ChainDecision,
    pinned: &PinnedKeys,
) {
    let Some(q) = d.quorum.clone().filter(|_| d.verdict == Verdict::Approve) else {
        cosigning.remove(&id);
        decisions.insert(id, Arc::new(d));
        return;
    };
    if decisions.contains_key(&id) {
        return;
    }
    let Some(signed) = d.signed.take() else { return };
    let fresh = || Cosigning {
        quorum: q.clone(),
        packet_hash: d.packet_hash.clone(),
        signatures: Vec::new(),
        count: Vec::new(),
        not_counted: Vec::new(),
    };
    let entry = cosigning.entry(id.clone()).or_insert_with(fresh);
    if entry.quorum != q || entry.packet_hash != d.packet_hash {
        *entry = fresh();
    }
    // One approval per listed name is gathered (so at most `n`); the same key under two names
    // is gathered twice, and counted once ([`Quorum::count`]), so `warrant verify` can report it.
    if !q.lists(&d.principal) || entry.signers().contains(&d.principal.as_str()) {
        return;
    }
    entry.signatures.push(warrant_protocol::decision::CoSignature {
        signed: *signed,
        chain_index: d.chain_index,
        entry_hash: d.entry_hash.clone(),
    });
    let counted = entry.counted(pinned);
    if counted.signers.len() >= q.required {
        cosigning.remove(&id);
        d.cosigners = counted.signers;
        decisions.insert(id, Arc::new(d));
    } else {
        entry.count = counted.signers;
        entry.not_counted = counted.uncounted.into_iter().map(|(n, _, why)| (n, why)).collect();
    }
}

/// The decision a chain record carries, if it is a warrant decision record.
#[must_use]
pub fn chain_decision_of(rec: &Map<String, Value>) -> Option<(String, ChainDecision)> {
    let doc = rec.get("metadata").and_then(|m| m.get("warrant_decision"))?;
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    let id = s(doc, "packet_id")?;
    let verdict = s(doc, "decision").as_deref().and_then(Verdict::parse)?;
    let entry_hash = rec.get("entry_hash").and_then(Value::as_str).unwrap_or_default().to_owned();
    let terms = warrant_protocol::decision::cosign_terms(doc).ok().flatten();
    let signed = terms.as_ref().and_then(|_| {
        let mut signature = rec.get("metadata")?.get("approval")?.get("signatures")?.get(0)?.clone();
        if let Value::Object(m) = &mut signature {
            m.remove("reviewer");
            m.remove("signed_at");
        }
        Some(Box::new(SignedDecision { document: doc.clone(), signature }))
    });
    Some((
        id,
        ChainDecision {
            cosigners: Vec::new(),
            quorum: terms.map(|t| t.quorum),
            signed,
            verdict,
            principal: s(doc, "principal").unwrap_or_default(),
            reason: s(doc, "reason"),
            decided_at: s(doc, "decided_at").unwrap_or_default(),
            packet_hash: s(doc, "packet_hash").unwrap_or_default(),
            chain_index: rec.get("chain_index").and_then(Value::as_u64).unwrap_or(0),
            entry_hash,
            agent: s(doc, "agent").unwrap_or_default(),
            action_class: s(doc, "action_class").unwrap_or_default(),
            system: decision::system_of(doc).ok().flatten(),
            corrected: decision::correction_of(doc).ok().flatten().map(|c| c.size),
        },
    ))
}

/// What a verified chain says: the report, the decisions and evidence of the records that
/// passed every check, and the `content_hash` of its last receipt.
#[derive(Debug, Clone, Default)]
pub struct ChainView {
    /// The verification report.
    pub report: chain::VerifyReport,
    /// Decisions by packet id.
    pub decisions: Decisions,
    /// Evidence rows, in chain order: the principal's signed decisions (`principal`) and the
    /// receipts recorded in the chain (their declared `source_type`), kept compactly
    /// ([`ChainEvidence`]: distinct rows with counts, and the last rows of each class).
    pub evidence: ChainEvidence,
    /// The `content_hash` of the last receipt in the chain (a decision carries one too).
    pub last_receipt_hash: Option<String>,
    /// The principal's controls (notebook levels, agent standings and elevations), folded in
    /// chain order over the control records that passed every check.
    pub controls: ControlState,
    /// The principal's grants, issued and not revoked, folded in chain order over the grant
    /// records that passed every check ([`warrant_protocol::grant::GrantBook`]).
    pub grants: warrant_protocol::grant::GrantBook,
    /// Approvals gathered towards a quorum, by packet id, for packets not yet decided
    /// ([`fold_decision`]).
    pub cosigning: HashMap<String, Cosigning>,
}

/// The evidence row a chain record stands for: a warrant decision (from its signed document:
/// approve → `approved`, refuse → `rejected`, provenance `principal`) or a receipt recorded with
/// [`record_receipt`] (its outcome's label and declared provenance). Call only on records that
/// verified. A system decision (a document with `system`, [`decision::SystemCause`]) is no
/// evidence: no person judged the action, so a timeout never counts as the principal's refusal.
#[must_use]
pub fn chain_evidence_of(rec: &Map<String, Value>) -> Option<EvidenceRow> {
    let meta = rec.get("metadata")?;
    if let Some(doc) = meta.get("warrant_decision") {
        // One approval towards a quorum is not yet the principals' approval: only the one that
        // meets it (it names its `cosigners`) is evidence, once for the packet.
        if doc.get("system").is_some() || (doc.get("quorum").is_some() && doc.get("cosigners").is_none()) {
            return None;
        }
        let s = |k: &str| doc.get(k).and_then(Value::as_str);
        let corrected = decision::correction_of(doc).ok().flatten().map(|c| c.size);
        return decision_evidence(
            s("action_class")?,
            Verdict::parse(s("decision")?)?,
            corrected,
            s("decided_at")?,
            s("packet_id"),
        );
    }
    receipt_evidence(meta.get("tg_receipt")?, None)
}

/// The evidence row of one principal decision: approve → `approved`, approve as corrected →
/// `minor_edit` or `heavy_rewrite` (`corrected`, the edit's size), refuse → `rejected`,
/// provenance `principal`, dated by `decided_at` (RFC 3339). `None` when `decided_at` has no date.
#[must_use]
pub fn decision_evidence(
    class: &str,
    verdict: Verdict,
    corrected: Option<warrant_protocol::correction::EditSize>,
    decided_at: &str,
    packet_id: Option<&str>,
) -> Option<EvidenceRow> {
    let date = decided_at.get(..10).filter(|d| warrant_protocol::graduation::evidence::is_date(d))?;
    let label = match corrected.filter(|_| verdict == Verdict::Approve) {
        Some(size) => size.label(),
        None => ReceiptOutcome::from(verdict).label(),
    };
    let mut row = EvidenceRow::new(class, label, Some(SourceType::Principal), Some(date.to_owned()));
    row.receipt_id = packet_id.map(|p| format!("decision:{p}"));
    row.recorded_at = Some(decided_at.to_owned());
    row.source = Some("principal".into());
    Some(row)
}

pub(super) fn receipt_hash_of(rec: &Map<String, Value>) -> Option<String> {
    rec.get("metadata")?.get("tg_receipt")?.get("content_hash")?.as_str().map(str::to_owned)
}

/// Verifies a spool's own chain strictly (a symlinked chain is refused, and every approval
/// signature must be a warrant signature under a pinned key) and returns what the records that
/// passed every check say. A record that failed any check decides nothing and is no evidence: a
/// forged record cannot move a packet out of the pending list or graduate a class.
///
/// # Errors
/// I/O errors while reading the chain; a chain that is not a regular file.
pub fn verify_chain(spool: &Spool, pinned: &PinnedKeys) -> Result<ChainView, ChainError> {
    verify_chain_records(spool, pinned, |_| false).map(|(view, _)| view)
}

/// What a chain view was verified from: the view, and the verified prefix it covers (`None`
/// when the chain had findings, so nothing of it can be extended).
#[derive(Debug, Clone, Default)]
pub struct VerifiedView {
    /// What the records that passed every check say, and the report.
    pub view: ChainView,
    /// The prefix of the chain the view covers, when it verified whole.
    pub verified: Option<chain::Verified>,
}

/// Verifies a spool's chain, extending `cache` (a previous [`VerifiedView`] of this spool) when
/// it can: when the chain grew and still starts with the cached prefix ([`chain_file::prefix_holds`]),
/// only the records after it are verified ([`chain_file::verify_tail_with`]) and folded into the cached
/// view; when the tail has any finding, or the prefix does not hold, or there is no cache, the
/// whole chain is verified, so every report with findings comes from a full verification.
/// `progress` counts the bytes read (for a progress bar).
///
/// # Errors
/// As [`verify_chain`].
pub fn verify_chain_from(
    spool: &Spool,
    pinned: &PinnedKeys,
    cache: Option<&VerifiedView>,
    progress: &std::sync::atomic::AtomicU64,
) -> Result<VerifiedView, ChainError> {
    // A chain that did not grow since the cached verification was rewritten (or only touched):
    // it is verified whole. One that grew is checked at the end of the cached prefix.
    let grew = |v: &chain::Verified| fs::symlink_metadata(spool.chain_path()).is_ok_and(|m| m.len() > v.bytes);
    if let Some((base, prefix)) = cache.and_then(|c| c.verified.as_ref().filter(|v| grew(v)).map(|v| (&c.view, v)))
        && let Some((view, _, tail)) = view_after(spool, pinned, prefix, Some(base.clone()), &|_| false, progress)?
        && view.report.is_valid()
    {
        return Ok(VerifiedView { verified: tail.verified(), view });
    }
    progress.store(0, std::sync::atomic::Ordering::Relaxed);
    let full = view_after(spool, pinned, &chain::Verified::default(), None, &|_| false, progress)?;
    let (view, _, tail) = full.unwrap_or_default();
    Ok(VerifiedView { verified: tail.verified().filter(|_| view.report.is_valid()), view })
}

/// A decision found in a record: the packet id, the decision, and the whole record when the
/// caller keeps it (to restore a decision file from it).
type DecisionFact = (String, ChainDecision, Option<Map<String, Value>>);

/// What one chain record says to a [`ChainView`], made on the verifier's workers: its decision
/// (with the whole record when the caller keeps it), evidence row, receipt `content_hash`,
/// control, grant event and publisher binding. What most records lack is boxed: a million
/// receipts' facts are moved from worker to sequencer without their decision's bytes.
struct RecordFacts {
    decision: Option<Box<DecisionFact>>,
    evidence: Option<EvidenceRow>,
    /// A receipt's row in one allocation, its `content_hash` packed beside it
    /// ([`warrant_protocol::graduation::receipt::receipt_evidence_packed`]).
    packed: Option<warrant_protocol::chain_evidence::PackedRow>,
    receipt_hash: Option<String>,
    control: Option<Box<ControlEvent>>,
    grant: Option<Box<warrant_protocol::grant::GrantEvent>>,
    publisher: Option<(String, u32)>,
}

impl RecordFacts {
    fn of(rec: &Map<String, Value>, keep: &(dyn Fn(&str) -> bool + Sync)) -> Self {
        Self {
            decision: chain_decision_of(rec).map(|(id, d)| {
                let kept = keep(&id).then(|| rec.clone());
                Box::new((id, d, kept))
            }),
            evidence: chain_evidence_of(rec),
            packed: None,
            receipt_hash: receipt_hash_of(rec),
            control: ControlEvent::of_record(rec).map(Box::new),
            grant: warrant_protocol::grant::GrantEvent::of_record(rec).map(Box::new),
            publisher: warrant_protocol::control::publisher_of(rec).map(|(a, uid)| (a.to_owned(), uid)),
        }
    }

    /// What a record that is only a receipt says: [`RecordFacts::of`] of a record whose
    /// metadata holds `tg_receipt` (its JSON text) and nothing the checks read, its row packed
    /// (one allocation a receipt, made on the worker and freed on the sequencer).
    fn of_receipt(receipt: Option<&str>) -> Self {
        let (packed, receipt_hash) = receipt
            .map_or((None, None), |text| warrant_protocol::graduation::receipt::receipt_evidence_packed(text, None));
        Self { decision: None, evidence: None, packed, receipt_hash, control: None, grant: None, publisher: None }
    }
}

/// A chain view, the decision records kept for restoring their files, and the tail verified.
type ViewAfter = (ChainView, Vec<Map<String, Value>>, chain::Tail);

/// A decision found in the chain: line index, packet id, the decision, and the record when the
/// caller asked to keep it.
type FoundDecision = (usize, String, ChainDecision, Option<Map<String, Value>>);

/// Verifies the chain; `keep` says for which packet ids the whole decision record is kept (to
/// restore a decision file from it).
pub(super) fn verify_chain_records(
    spool: &Spool,
    pinned: &PinnedKeys,
    keep: impl Fn(&str) -> bool + Sync,
) -> Result<(ChainView, Vec<Map<String, Value>>), ChainError> {
    let progress = std::sync::atomic::AtomicU64::new(0);
    let full = view_after(spool, pinned, &chain::Verified::default(), None, &keep, &progress)?;
    let (view, kept, _) = full.unwrap_or_default();
    Ok((view, kept))
}

/// Verifies the records after `prefix` ([`chain_file::verify_tail_with`]) and builds the view of the
/// whole chain: `base` is the view of the prefix (`None`: an empty view, right for the empty
/// prefix), the tail's decisions, evidence, receipts and controls are folded onto it, and the
/// principal's latest checkpoint is checked against the whole report. `Ok(None)` when the chain
/// no longer starts with `prefix`.
pub(super) fn view_after(
    spool: &Spool,
    pinned: &PinnedKeys,
    prefix: &chain::Verified,
    base: Option<ChainView>,
    keep: &(dyn Fn(&str) -> bool + Sync),
    progress: &std::sync::atomic::AtomicU64,
) -> Result<Option<ViewAfter>, ChainError> {
    // The checkpoint is read before the chain: the chain only grows, so it holds at least what a
    // checkpoint read first pins, while one read after could pin records appended after the chain
    // was read (a decision signed meanwhile), and a sound chain would look cut off.
    let (checkpoint, _) = crate::checkpoint_files::latest(spool, pinned);
    view_after_checkpoint(spool, pinned, checkpoint, prefix, base, keep, progress)
}

/// Where the tail's records' evidence rows went in [`ChainEvidence`] (their run positions), by
/// record index: 4 bytes a record (a million receipts: 4 MB, where pairs of index and position
/// took 8), the rare second row of a record (a decision that carries a receipt) kept beside.
#[derive(Default)]
struct RowPositions {
    /// The first record's index.
    first: Option<usize>,
    /// The first row's position of each record from `first` on; [`RowPositions::NONE`] for a
    /// record with none.
    firsts: Vec<u32>,
    /// (record index, position) of each record's rows after its first.
    more: Vec<(usize, usize)>,
}

impl RowPositions {
    const NONE: u32 = u32::MAX;

    /// Records that record `index` (not before the first recorded) put a row at `pos`.
    fn push(&mut self, index: usize, pos: usize) {
        let first = *self.first.get_or_insert(index);
        let Some(k) = index.checked_sub(first) else { return self.more.push((index, pos)) };
        match u32::try_from(pos) {
            Ok(p) if p != Self::NONE && k >= self.firsts.len() => {
                self.firsts.resize(k, Self::NONE);
                self.firsts.push(p);
            }
            _ => self.more.push((index, pos)),
        }
    }

    /// The positions of record `index`'s rows.
    fn of(&self, index: usize) -> impl Iterator<Item = usize> + '_ {
        let first = self
            .first
            .and_then(|f| index.checked_sub(f))
            .and_then(|k| self.firsts.get(k))
            .filter(|&&p| p != Self::NONE)
            .map(|&p| p as usize);
        first.into_iter().chain(self.more.iter().filter(move |(i, _)| *i == index).map(|&(_, p)| p))
    }
}

/// [`view_after`] with the principal's latest checkpoint already read (before the chain) by the
/// caller: `checkpoint` is checked against the whole report.
pub(super) fn view_after_checkpoint(
    spool: &Spool,
    pinned: &PinnedKeys,
    checkpoint: Option<warrant_protocol::checkpoint::Checkpoint>,
    prefix: &chain::Verified,
    base: Option<ChainView>,
    keep: &(dyn Fn(&str) -> bool + Sync),
    progress: &std::sync::atomic::AtomicU64,
) -> Result<Option<ViewAfter>, ChainError> {
    let mut found: Vec<FoundDecision> = Vec::new();
    let mut view = base.unwrap_or_default();
    // Where each tail record's evidence row went, to take it back if the record fails a check.
    let mut evidence = RowPositions::default();
    let mut controls: Vec<(usize, ControlEvent)> = Vec::new();
    let mut grants: Vec<(usize, warrant_protocol::grant::GrantEvent)> = Vec::new();
    let mut publishers: Vec<(usize, String, u32)> = Vec::new();
    let mut last_receipt_hash = None;
    let opts = VerifyOptions { pinned: Some(pinned), strict_signatures: true };
    // What each record says is read on the verifier's workers; only the folding is in order.
    let extract = |_: usize, rec: warrant_protocol::chain::SinkRecord<'_>| match rec {
        warrant_protocol::chain::SinkRecord::Whole(rec) => RecordFacts::of(rec, keep),
        // A record whose metadata the checks do not read (no decision, control, grant or key
        // event) says nothing to the view but its receipt.
        warrant_protocol::chain::SinkRecord::Raw(rec) => RecordFacts::of_receipt(rec.metadata_member("tg_receipt")),
    };
    let sink = warrant_protocol::chain::RecordSink {
        extract: &extract,
        on_record: |i, facts: RecordFacts| {
            if let Some(decision) = facts.decision {
                let (id, d, kept) = *decision;
                found.push((i, id, d, kept));
            }
            if let Some(row) = facts.evidence {
                evidence.push(i, view.evidence.push_at(i, row));
            }
            if let Some(hash) = facts.packed.as_ref().and_then(|p| p.extra()).or(facts.receipt_hash.as_deref()) {
                // The last receipt's hash, copied into one buffer rather than allocated per receipt.
                let last = last_receipt_hash.get_or_insert_with(String::new);
                last.clear();
                last.push_str(hash);
            }
            if let Some(row) = facts.packed {
                evidence.push(i, view.evidence.push_packed(i, row));
            }
            if let Some(c) = facts.control {
                controls.push((i, *c));
            }
            if let Some(g) = facts.grant {
                grants.push((i, *g));
            }
            if let Some((agent, uid)) = facts.publisher {
                publishers.push((i, agent, uid));
            }
        },
    };
    let tail = chain_file::verify_tail_with(&spool.chain_path(), prefix, opts, progress, sink)?;
    let Some(tail) = tail else { return Ok(None) };
    let mut report = tail.report.clone();
    if let Some(f) = checkpoint.and_then(|cp| crate::checkpoint_files::check(&spool.chain_path(), &cp, &report)) {
        report.findings.push(f);
    }
    let bad: std::collections::HashSet<usize> = report.findings.iter().filter_map(|f| f.index).collect();
    view.report = report;
    if last_receipt_hash.is_some() {
        view.last_receipt_hash = last_receipt_hash;
    }
    let mut kept = Vec::new();
    // Approvals towards a quorum count under the pins in effect at the chain's end (the
    // verifier's, with the rotations the chain announced).
    let effective = tail.keys.effective().unwrap_or(pinned);
    for (i, id, d, rec) in found {
        if !bad.contains(&i) {
            kept.extend(rec);
            fold_decision(&mut view.decisions, &mut view.cosigning, id, d, effective);
        }
    }
    for &i in &bad {
        for pos in evidence.of(i) {
            view.evidence.remove(pos, i);
        }
    }
    for (_, c) in controls.iter().filter(|(i, _)| !bad.contains(i)) {
        view.controls.apply(c);
    }
    for (_, g) in grants.iter().filter(|(i, _)| !bad.contains(i)) {
        view.grants.apply(g);
    }
    for (_, agent, uid) in publishers.iter().filter(|(i, ..)| !bad.contains(i)) {
        view.controls.bind_publisher(agent, *uid);
    }
    Ok(Some((view, kept, tail)))
}

#[cfg(test)]
mod tests {
    use super::RowPositions;

    /// Every row pushed is found at its record, and only there: records with none, a gap in the
    /// indices, a record's second row, a position too large for the compact form.
    #[test]
    fn row_positions_are_found_by_record() {
        let mut at = RowPositions::default();
        let pushed = [(10, 0), (11, 1), (11, 7), (13, 1), (14, u32::MAX as usize), (15, 2), (20, 3)];
        for (i, pos) in pushed {
            at.push(i, pos);
        }
        for i in 0..25 {
            let mut want: Vec<usize> = pushed.iter().filter(|(j, _)| *j == i).map(|(_, p)| *p).collect();
            let mut got: Vec<usize> = at.of(i).collect();
            want.sort_unstable();
            got.sort_unstable();
            assert_eq!(got, want, "record {i}");
        }
        assert_eq!(at.firsts.len(), 11, "one slot a record from the first to the last");
    }
}
