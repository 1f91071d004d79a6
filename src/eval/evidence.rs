//! The evidence requests are judged on: a spool's verified chain (and the receipts its pinned
//! gateways signed), re-read when it changes, plus a request's inline rows.

use super::Evaluator;
use crate::protocol::chain_evidence::ChainEvidence;
use crate::protocol::graduation::evidence::{EvidenceIndex, EvidenceRow};
use crate::protocol::keys::PinnedKeys;
use crate::store::spool::{Spool, VerifiedView};
use std::borrow::Cow;
use std::cell::RefCell;
use std::rc::Rc;

impl Evaluator {
    /// This evaluator reading the evidence of `spool`'s chain, verified under `pinned` (or the
    /// reason the pinned keys could not be loaded, which fails the chain closed), as the console
    /// does: the principal's signed decisions and the receipts recorded in the chain. The chain
    /// is verified again whenever its file changes. A request's inline `evidence` rows add to
    /// the chain's; a chain that does not verify makes every gate `blocked` (`chain_intact`
    /// false) and every posterior `chain_intact: false`, never graduation-ready.
    #[must_use]
    pub fn with_spool(mut self, spool: Spool, pinned: Result<PinnedKeys, String>) -> Self {
        self.spool = Some(SpoolEvidence {
            spool,
            pinned,
            gateways: crate::protocol::keys::GatewayKeys::default(),
            receipts: RefCell::new(crate::store::spool::Scanner::new()),
            loaded: RefCell::new(None),
        });
        self
    }

    /// With the spool of [`Evaluator::with_spool`], the receipts in its `receipts/` that one of
    /// `gateways` signed count as observed outcomes (provenance `receipt`), with the chain's
    /// evidence, as in the console. Without this call no receipt file is evidence.
    #[must_use]
    pub fn with_gateway_keys(mut self, gateways: crate::protocol::keys::GatewayKeys) -> Self {
        if let Some(s) = self.spool.as_mut() {
            s.receipts = RefCell::new(crate::store::spool::Scanner::new().with_gateway_keys(gateways.clone()));
            s.gateways = gateways;
        }
        self
    }

    /// The spool chain's evidence as of now (verified again when the chain file changed), or
    /// `None` when this evaluator reads no spool.
    pub(super) fn chain_evidence(&self) -> Option<Rc<ChainSnapshot>> {
        self.spool.as_ref().map(SpoolEvidence::current)
    }
}

/// The identity of a chain file's current content (length, modification and change times,
/// inode), as the console's watcher keys its re-verification; `None` when there is no file.
type ChainStamp = (u64, std::time::SystemTime, i64, i64, u64);

fn chain_stamp(spool: &Spool) -> Option<ChainStamp> {
    use std::os::unix::fs::MetadataExt as _;
    let m = std::fs::symlink_metadata(spool.chain_path()).ok()?;
    Some((m.len(), m.modified().ok()?, m.ctime(), m.ctime_nsec(), m.ino()))
}

/// A spool read for its chain's evidence ([`Evaluator::with_spool`]).
pub(super) struct SpoolEvidence {
    spool: Spool,
    pinned: Result<PinnedKeys, String>,
    /// The gateway keys whose signed receipts are observed outcomes ([`Evaluator::with_gateway_keys`]).
    gateways: crate::protocol::keys::GatewayKeys,
    /// Reads `receipts/` (each file once per version) when there are gateway keys.
    receipts: RefCell<crate::store::spool::Scanner>,
    /// The last verification: the stamp it was made at, the verified view (extended
    /// incrementally when the chain grows) and what the requests read.
    loaded: RefCell<Option<Loaded>>,
}

/// A verification of a spool's chain: the stamp it was made at, the verified view, and what the
/// requests read.
type Loaded = (Stamps, Option<VerifiedView>, Rc<ChainSnapshot>);

/// The chain file's stamp and, when gateway keys are pinned, `receipts/`'s (a file added,
/// removed or renamed changes it).
type Stamps = (Option<ChainStamp>, Option<ChainStamp>);

fn dir_stamp(dir: &std::path::Path) -> Option<ChainStamp> {
    use std::os::unix::fs::MetadataExt as _;
    let m = std::fs::symlink_metadata(dir).ok()?;
    Some((m.len(), m.modified().ok()?, m.ctime(), m.ctime_nsec(), m.ino()))
}

/// What the requests read of a spool's chain at one moment.
#[derive(Debug, Default)]
pub(super) struct ChainSnapshot {
    /// The evidence rows of the records that passed every check (what the console sums).
    pub(super) evidence: ChainEvidence,
    /// Those rows, indexed for the gate.
    pub(super) index: EvidenceIndex,
    /// Why the chain does not verify (its first finding, an I/O error, unreadable pinned keys);
    /// `None` when it verifies.
    pub(super) broken: Option<String>,
}

impl SpoolEvidence {
    fn current(&self) -> Rc<ChainSnapshot> {
        let stamp = (
            chain_stamp(&self.spool),
            (!self.gateways.is_empty()).then(|| dir_stamp(&self.spool.receipts_dir())).flatten(),
        );
        let mut loaded = self.loaded.borrow_mut();
        if let Some((at, _, snap)) = loaded.as_ref()
            && *at == stamp
        {
            return Rc::clone(snap);
        }
        let cache = loaded.take().and_then(|(_, view, _)| view);
        let (view, snap) = match &self.pinned {
            Err(e) => (
                None,
                ChainSnapshot {
                    broken: Some(format!("the pinned keys cannot be read: {e}")),
                    ..ChainSnapshot::default()
                },
            ),
            Ok(pinned) => {
                let progress = std::sync::atomic::AtomicU64::new(0);
                match crate::store::spool::verify_chain_from(&self.spool, pinned, cache.as_ref(), &progress) {
                    Err(e) => (
                        None,
                        ChainSnapshot {
                            broken: Some(format!("the chain cannot be read: {e}")),
                            ..ChainSnapshot::default()
                        },
                    ),
                    Ok(v) => {
                        let broken = v.view.report.findings.first().map(|f| format!("the chain does not verify: {f}"));
                        let mut evidence = v.view.evidence.clone();
                        // The receipts a pinned gateway signed: observed outcomes, each once.
                        if !self.gateways.is_empty() {
                            let receipts =
                                self.receipts.borrow_mut().scan(&self.spool).map(|s| s.receipts).unwrap_or_default();
                            let observed = crate::protocol::graduation::receipt::observed_evidence(
                                receipts.iter().filter_map(|r| Some((&r.raw, r.observed_by.as_deref()?))),
                            );
                            for row in observed {
                                evidence.push(row);
                            }
                        }
                        let index = EvidenceIndex::new(evidence.rows());
                        (Some(v), ChainSnapshot { evidence, index, broken })
                    }
                }
            }
        };
        let snap = Rc::new(snap);
        *loaded = Some((stamp, view, Rc::clone(&snap)));
        snap
    }
}

/// The evidence a request is judged on: the spool chain's rows (when the evaluator reads a
/// spool) followed by the request's inline rows, indexed. Inline rows add to the chain's,
/// never replace them.
pub(super) fn combined_index<'a>(
    chain: Option<&'a ChainSnapshot>,
    inline: Option<&[EvidenceRow]>,
) -> Cow<'a, EvidenceIndex> {
    match (chain, inline) {
        (Some(c), None) => Cow::Borrowed(&c.index),
        (Some(c), Some([])) => Cow::Borrowed(&c.index),
        (Some(c), Some(rows)) => {
            // The chain's index is of its rows in order: the inline rows count after them.
            let mut index = c.index.clone();
            for row in rows {
                index.add(row);
            }
            Cow::Owned(index)
        }
        (None, rows) => Cow::Owned(rows.map(EvidenceIndex::new).unwrap_or_default()),
    }
}
