//! The models' assessment: the job that runs it off the UI thread ([`AssessJob`], [`Assessed`]),
//! when the state reassesses (a new scan, the minute, an elevation counting down) and what is
//! recomputed from it (gate decisions and verdicts, notebooks, posteriors).

use super::{ChainState, ClassPosterior, NotebookRow, State};
use std::collections::BTreeMap;
use std::sync::Arc;
use warrant_engine::monitor::Assessment;
use warrant_protocol::control::ControlState;
use warrant_protocol::graduation::policy::PolicySet;
use warrant_protocol::graduation::posterior::Posterior;
use warrant_protocol::packet::Receipt;
use warrant_protocol::verdict::{Governance, VerdictContext};
use warrant_store::spool::PacketEntry;

/// One assessment's inputs, copied out of the [`State`] ([`State::assess_job`]) to run off the
/// UI thread.
pub struct AssessJob {
    generation: u64,
    prev: Arc<Assessment>,
    policies: Arc<PolicySet>,
    observer: Arc<warrant_engine::preconditions::Observer>,
    controls: ControlState,
    now: f64,
    packets: Vec<PacketEntry>,
    receipts: Vec<Arc<Receipt>>,
    decisions: Arc<warrant_store::spool::Decisions>,
    chain_evidence: warrant_store::spool::ChainEvidence,
    chain_intact: bool,
    workspace: String,
}

impl AssessJob {
    /// Observes the pending packets' preconditions ([`warrant_engine::preconditions::observe_pending`],
    /// the only I/O) and makes the assessment ([`warrant_engine::monitor::assess_incremental`] from the
    /// previous one): what [`Action::Assess`](super::Action::Assess) would make of the same state.
    #[must_use]
    pub fn run(self) -> Assessed {
        let revalidations =
            warrant_engine::preconditions::observe_pending(&self.observer, &self.packets, &self.decisions);
        let ctx = VerdictContext { policies: &self.policies, controls: &self.controls, now: self.now };
        let assessment = warrant_engine::monitor::assess_incremental(
            Some(&*self.prev),
            &self.policies,
            &ctx,
            &self.packets,
            &self.receipts,
            &self.decisions,
            &self.chain_evidence,
            &revalidations,
            self.chain_intact,
            &self.workspace,
        );
        Assessed { generation: self.generation, now: self.now, assessment: Arc::new(assessment) }
    }
}

impl std::fmt::Debug for AssessJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AssessJob").field("generation", &self.generation).field("packets", &self.packets.len()).finish()
    }
}

/// An assessment made by [`AssessJob::run`], for [`Action::Assessed`](super::Action::Assessed).
#[derive(Clone)]
pub struct Assessed {
    generation: u64,
    now: f64,
    assessment: Arc<Assessment>,
}

impl std::fmt::Debug for Assessed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Assessed").field("generation", &self.generation).finish()
    }
}

impl PartialEq for Assessed {
    fn eq(&self, other: &Self) -> bool {
        self.generation == other.generation && Arc::ptr_eq(&self.assessment, &other.assessment)
    }
}

/// While scans keep coming, the assessment is brought up to date at most this often (the
/// packets themselves are listed as soon as each scan lands); a quiet console assesses as soon
/// as the scan is drawn.
pub const ASSESS_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

impl State {
    /// Recomputes the assessment (evidence, agents, every pending packet's gate decision and
    /// composed verdict), the posteriors and the lists. Called when the snapshot, the chain view
    /// or the policies change, never per key or per frame.
    pub(super) fn recompute_graduation(&mut self) {
        self.assess();
        self.recompute_posteriors();
        self.refresh();
    }

    /// The clock moved: re-assess when the minute changed (activity, ages) or, at most once a
    /// second, while an elevation counts down (its expiry changes rings and verdicts). Otherwise
    /// nothing is recomputed, so an idle console stays idle.
    pub(super) fn on_tick(&mut self, now: f64) {
        let minute = |t: f64| (t / 60.0).floor() as i64;
        let day = |t: f64| (t / 86_400.0).floor() as i64;
        let before = self.assessed_at;
        self.now = now;
        // A grant that reached its end is shown so at once.
        if self
            .grant_rows
            .iter()
            .any(|r| r.status == crate::grants::GrantStatus::Live && r.grant.expires_unix.is_some_and(|t| t <= now))
        {
            self.recompute_grants();
        }
        let elevated = self.elevation_active() && (now - before).abs() >= 1.0;
        if minute(now) == minute(before) && !elevated {
            return;
        }
        if self.assessment_due() {
            self.recompute_graduation();
            return;
        }
        self.assess();
        if day(now) != day(before) {
            self.recompute_posteriors();
        }
        self.refresh();
    }

    /// One [`warrant_engine::monitor::assess`] of the spool as scanned and the chain as verified, and the
    /// notebooks it names.
    fn assess(&mut self) {
        let chain_intact = matches!(self.chain, ChainState::Valid { .. });
        let ctx = VerdictContext { policies: &self.policies, controls: &self.controls, now: self.now };
        let workspace = self.principal.as_deref().unwrap_or("local");
        // The last job's observations: this runs on the UI thread and observes nothing.
        let observed = self.assessment.preconditions.clone();
        // Handed over, not borrowed: when nothing of it can be reused it is freed before the
        // new one is made (10,000 pending packets' results are tens of megabytes).
        let prev = std::mem::take(&mut self.assessment);
        self.assessment = Arc::new(warrant_engine::monitor::assess_incremental(
            prev,
            &self.policies,
            &ctx,
            &self.snapshot.packets,
            &self.snapshot.receipts,
            &self.decisions,
            &self.chain_evidence,
            &observed,
            chain_intact,
            workspace,
        ));
        self.assessed_at = self.now;
        // Packets whose preconditions nobody has observed yet (this thread observes nothing)
        // keep the assessment due, so the next job observes them: they were shown blocked until
        // another scan came (the demo's report, at random).
        if self.assessment.unobserved == 0 {
            self.assessed_generation = self.snapshot_generation;
        }
        self.recompute_notebooks();
    }

    /// Every notebook named by the controls or by a packet's governance, with its pending count.
    fn recompute_notebooks(&mut self) {
        self.look_alike =
            warrant_protocol::text::confusable_ids(self.assessment.monitor.agents.keys().map(String::as_str));
        let mut notebooks: BTreeMap<String, NotebookRow> = self
            .controls
            .notebooks
            .iter()
            .map(|(id, n)| {
                let row = NotebookRow {
                    id: id.clone(),
                    level: n.level,
                    set_by: Some(n.principal.clone()).filter(|p| !p.is_empty()),
                    set_at: Some(n.set_at.clone()).filter(|t| !t.is_empty()),
                    pending: 0,
                };
                (id.clone(), row)
            })
            .collect();
        for e in &self.snapshot.packets {
            let Some(id) = Governance::of_packet(&e.packet).and_then(|g| g.notebook.clone()) else { continue };
            let row = notebooks.entry(id.clone()).or_insert_with(|| NotebookRow {
                level: self.controls.notebook_trust(&id),
                id,
                set_by: None,
                set_at: None,
                pending: 0,
            });
            row.pending += usize::from(!self.decisions.contains_key(&e.packet.id));
        }
        self.all_notebooks = notebooks.into_values().collect();
    }

    /// One posterior per action class (registered classes, then others seen) from the evidence.
    fn recompute_posteriors(&mut self) {
        let today =
            time::OffsetDateTime::from_unix_timestamp(self.now as i64).unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
        let (chain, evidence) = (&self.chain_evidence, &self.assessment.evidence);
        let mut classes: Vec<String> = self.policies.classes().map(|c| c.id.clone()).collect();
        let mut extra: Vec<String> = chain
            .classes()
            .map(str::to_owned)
            .chain(evidence.iter().map(|r| r.action_class.clone()))
            .chain(self.snapshot.packets.iter().map(|e| self.policies.normalize(&e.packet.action_class)))
            .filter(|c| warrant_protocol::packet::is_class_id(c) && !classes.contains(c))
            .collect();
        extra.sort();
        extra.dedup();
        classes.extend(extra);
        let today = today.date();
        self.all_posteriors = classes
            .iter()
            .map(|c| {
                // Agents' receipt files are their own word: shown apart, never evidence.
                let rows = chain.rows_of(c);
                Arc::new(ClassPosterior::new(Posterior::of(c, rows, self.policies.threshold(c), today)))
            })
            .collect();
    }

    /// How many snapshots were taken.
    pub(crate) fn snapshot_generation(&self) -> u64 {
        self.snapshot_generation
    }

    /// The assessment, shared.
    pub(crate) fn assessment_arc(&self) -> &Arc<Assessment> {
        &self.assessment
    }

    /// Whether the assessment is older than the last scan (an assessment is due).
    #[must_use]
    pub fn assessment_due(&self) -> bool {
        self.assessed_generation < self.snapshot_generation
    }

    /// Brings the assessment up to date with the last scan, if it is not.
    pub(super) fn ensure_assessed(&mut self) {
        if self.assessment_due() {
            self.recompute_graduation();
        }
    }

    /// What an assessment of the current state reads, copied out (the packets, receipts and
    /// decisions, the controls, the chain's compact evidence, the previous assessment to reuse),
    /// so [`AssessJob::run`] can make it off the UI thread. `None` when none is due.
    #[must_use]
    pub fn assess_job(&self) -> Option<AssessJob> {
        self.assessment_due().then(|| AssessJob {
            generation: self.snapshot_generation,
            prev: Arc::clone(&self.assessment),
            policies: Arc::clone(&self.policies),
            observer: Arc::clone(&self.observer),
            controls: self.controls.clone(),
            now: self.now,
            packets: self.snapshot.packets.clone(),
            receipts: self.snapshot.receipts.clone(),
            decisions: self.decisions.clone(),
            chain_evidence: self.chain_evidence.clone(),
            chain_intact: matches!(self.chain, ChainState::Valid { .. }),
            workspace: self.principal.clone().unwrap_or_else(|| "local".to_owned()),
        })
    }

    /// Takes an assessment made off the UI thread, unless the state already has one made from
    /// the same snapshot or a later one (made here meanwhile, after a chain verification or a
    /// signature, which may also have changed the controls or decisions the job copied).
    pub(super) fn take_assessed(&mut self, done: Assessed) {
        if done.generation <= self.assessed_generation {
            return;
        }
        self.assessment = done.assessment;
        self.assessed_at = done.now;
        self.assessed_generation = done.generation;
        self.recompute_notebooks();
        self.recompute_posteriors();
        self.refresh();
    }
}
