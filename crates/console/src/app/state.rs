//! The console's whole [`State`] and the rows it holds (decided rows, notebooks, agent records,
//! posteriors, the chain's state, status-line messages), its constructor and the read-only
//! accessors rendering uses; [`State::can_sign`].

use super::lists::FilterMemo;
use super::{Mode, Pane};
use crate::filter::SortKey;
use crate::keymap::Keymap;
use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use warrant_engine::monitor::{AgentSummary, Assessment};
use warrant_protocol::chain::Finding;
use warrant_protocol::control::ControlState;
use warrant_protocol::graduation::evidence::EvidenceRow;
use warrant_protocol::graduation::gate::Decision;
use warrant_protocol::graduation::policy::PolicySet;
use warrant_protocol::graduation::posterior::Posterior;
use warrant_protocol::ladder::Revalidation;
use warrant_protocol::packet::{DecisionState, Packet, Receipt};
use warrant_protocol::tiers::NotebookTrust;
use warrant_protocol::verdict::PacketVerdict;
use warrant_store::spool::{ChainDecision, InvalidFile, PacketEntry, Snapshot};

/// A status-line message as the message log keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogEntry {
    /// When (seconds since the epoch).
    pub at: i64,
    /// The text, whole.
    pub text: String,
    /// An error.
    pub error: bool,
}

/// How many messages the log keeps.
pub const LOG_LEN: usize = 100;

/// The chain as last verified.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ChainState {
    /// Not verified yet.
    #[default]
    Unknown,
    /// Verified: all checks passed.
    Valid {
        /// Record count.
        total: usize,
        /// Head hash.
        root: Option<String>,
    },
    /// A check failed.
    Broken {
        /// Record count.
        total: usize,
        /// The first finding.
        first: Finding,
        /// How many findings in all.
        count: usize,
    },
}

/// A transient message in the status line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flash {
    /// The text.
    pub text: String,
    /// An error (stays until a key is pressed) rather than information.
    pub error: bool,
}

/// A row of the decided list.
#[derive(Debug, Clone, PartialEq)]
pub struct DecidedRow {
    /// The packet id.
    pub id: String,
    /// The decision (the chain view's, shared).
    pub decision: Arc<ChainDecision>,
    /// The packet, if its file is still in the spool.
    pub packet: Option<Arc<Packet>>,
}

/// An agent's record for one action class, from the decisions of the verified chain.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentClassRecord {
    /// Approvals signed.
    pub approved: usize,
    /// Refusals signed.
    pub refused: usize,
    /// The last refusal: its record, when, and the reason given.
    pub last_refusal: Option<Arc<ChainDecision>>,
}

/// A notebook as the matrices view lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotebookRow {
    /// The notebook id.
    pub id: String,
    /// Its level now (`cautious` unless the chain set one).
    pub level: NotebookTrust,
    /// Who set it, when the chain set it.
    pub set_by: Option<String>,
    /// When (RFC 3339), when the chain set it.
    pub set_at: Option<String>,
    /// Pending packets naming it in their governance.
    pub pending: usize,
}

/// The console's whole state. Rendering reads it and never changes it.
#[derive(Debug, Clone)]
pub struct State {
    /// The spool path, for the status bar.
    pub spool_path: String,
    /// The principal's name (absent in read-only mode).
    pub principal: Option<String>,
    /// The signing key's fingerprint (absent in read-only mode).
    pub fingerprint: Option<String>,
    /// Observe only.
    pub read_only: bool,
    /// The current time, seconds since the epoch.
    pub now: f64,
    /// The keymap, for dispatch, hints and help.
    pub keymap: Keymap,
    /// The last scan.
    pub snapshot: Snapshot,
    /// Decisions recorded in the chain, by packet id: the verified chain view's, shared with
    /// the assessments made from them.
    pub decisions: Arc<warrant_store::spool::Decisions>,
    /// Approvals gathered towards a quorum (`[cosign]`), by packet id, for packets not decided.
    pub cosigning: HashMap<String, warrant_store::spool::Cosigning>,
    /// The chain's verification state.
    pub chain: ChainState,
    /// The principal acknowledged the current broken-chain alert.
    pub chain_alert_seen: bool,
    /// Bytes read and to read by the verification running in the background, if one is.
    pub chain_progress: Option<(u64, u64)>,
    /// The chain state comes from the records after the principal's checkpoint; the whole chain
    /// is still being verified (posteriors lack the evidence before the checkpoint).
    pub chain_from_checkpoint: bool,
    /// The focused list.
    pub pane: Pane,
    /// Selection per pane (index into the filtered list).
    pub selected: [usize; 8],
    /// The packet detail is zoomed to the whole screen.
    pub zoomed: bool,
    /// The list filter as typed ([`crate::filter`]: words, `"phrases"`, `field:value`, `-term`).
    pub filter: String,
    /// What is wrong with the filter (an unknown field), if anything: then nothing matches.
    pub filter_error: Option<String>,
    /// The pending list's order.
    pub sort: SortKey,
    /// The pending list's order reversed (`S`): oldest first, lowest risk first, Z to A.
    pub sort_reverse: bool,
    /// The `/` filter line's history (Up/Down walk it, as the `:` line's).
    pub filter_history: crate::command::History,
    /// Pending packets selected for batch triage, by id (kept across filters and sorts; a packet
    /// decided or gone leaves it).
    pub marked: BTreeSet<String>,
    /// Modal state.
    pub mode: Mode,
    /// Status-line message.
    pub flash: Option<Flash>,
    /// A signature is being made.
    pub signing: bool,
    /// Leave at the next turn of the loop.
    pub quit: bool,
    /// The terminal's size (columns, rows), from [`Action::Resize`](super::Action::Resize); unknown until then, and
    /// while unknown no approval dialog counts as read.
    pub viewport: Option<(u16, u16)>,
    /// Lines of the help overlay scrolled past (when it does not fit the terminal).
    pub help_scroll: usize,
    /// The last [`LOG_LEN`] status-line messages, oldest first.
    pub log: std::collections::VecDeque<LogEntry>,
    /// Every class's posterior, unfiltered.
    pub(super) all_posteriors: Vec<Arc<ClassPosterior>>,
    /// Cached filtered lists (recomputed after every change of snapshot, decisions or filter).
    pub(super) pending: Vec<PacketEntry>,
    /// Packets without a decision, whatever the filter.
    pub(super) pending_total: usize,
    pub(super) decided: Vec<DecidedRow>,
    pub(super) invalid: Vec<InvalidFile>,
    /// Receipts seen per action class (for the detail's evidence line).
    pub(super) receipts_by_class: HashMap<String, usize>,
    /// The content hash each packet id had at the last scan.
    pub(super) last_hash: warrant_engine::monitor::ByPacket<String>,
    /// The filter's answers for the packets it was asked about.
    pub(super) filter_memo: FilterMemo,
    /// When a packet's content last changed under the same id (seconds since the epoch).
    pub(super) changed_at: HashMap<String, f64>,
    /// First line of the zoomed packet view.
    pub detail_scroll: u16,
    /// The registry and policies the gate consults.
    pub policies: Arc<PolicySet>,
    /// Observes preconditions for the assessment job, confined to the policies' roots.
    pub observer: Arc<warrant_engine::preconditions::Observer>,
    /// Evidence rows from the verified chain (the principal's decisions and recorded receipts).
    pub(super) chain_evidence: warrant_store::spool::ChainEvidence,
    /// The principal's controls (notebook levels, agent standings, elevations) from the chain.
    pub(super) controls: ControlState,
    /// One posterior per action class (registered classes, then others seen), filtered.
    pub(super) posteriors: Vec<Arc<ClassPosterior>>,
    /// What every model says now ([`warrant_engine::monitor::assess`]): the evidence (the chain's, then
    /// receipt files at most connector-grade), the agents, and for each pending packet the gate's
    /// decision, the precondition re-check and the composed verdict.
    pub(super) assessment: Arc<Assessment>,
    /// `now` when the assessment was made.
    pub(super) assessed_at: f64,
    /// Counts the snapshots taken: the assessment is due while it was made from an older one.
    /// Until then a new packet is listed with the state it declares; an approval assesses first.
    pub(super) snapshot_generation: u64,
    /// The snapshot generation the assessment was made from.
    pub(super) assessed_generation: u64,
    /// Every notebook seen in packets' governance or with a level in the chain, by id.
    pub(super) all_notebooks: Vec<NotebookRow>,
    /// Notebooks after the filter.
    pub(super) notebooks: Vec<NotebookRow>,
    /// Agents after the filter, by id.
    pub(super) agents: Vec<AgentSummary>,
    /// Agent ids that look like another known agent's ([`warrant_protocol::text::confusable_ids`]).
    pub(super) look_alike: HashMap<String, String>,
    /// What the principal was told about (see [`crate::notify`]).
    pub(crate) notified: crate::notify::Notified,
    /// The system refusals of timed-out packets asked for ([`crate::notify::timeout_effects`]).
    pub(crate) timeout_refusals: crate::notify::TimeoutRefusals,
    /// The principal's grants, issued and not revoked, from the verified chain.
    pub grants: warrant_protocol::grant::GrantBook,
    /// The Grants view's rows ([`crate::grants::rows`]).
    pub(super) grant_rows: Vec<crate::grants::GrantRow>,
    /// The audit of the chain as last built (entries of verified records), shared with the
    /// job that built it.
    pub(super) audit_chain: Arc<Vec<warrant_engine::audit::AuditEntry>>,
    /// The audit shown: the chain's entries and the receipt files' calls, after the filter.
    pub(super) audit: Vec<warrant_engine::audit::AuditEntry>,
    /// An audit has been asked for (the view was opened): it is built again after each chain
    /// verification.
    pub audit_wanted: bool,
    /// The `:` command line's history.
    pub history: crate::command::History,
    /// The candidates of the last Tab completion (shown above the command line).
    pub completions: Vec<String>,
    /// The theme names `:theme` completes (the built-ins and `<config>/themes/*.toml`).
    pub themes: Vec<String>,
    /// Each (agent, canonical class)'s record in the verified chain, for the packet detail.
    pub(super) agent_records: HashMap<(String, String), AgentClassRecord>,
}

/// A class's posterior with what rendering needs and should not recompute per frame.
#[derive(Debug, Clone, PartialEq)]
pub struct ClassPosterior {
    /// The posterior.
    pub posterior: Posterior,
    /// [`Posterior::approvals_to_graduate`], computed once.
    pub to_graduate: Option<u32>,
}

impl ClassPosterior {
    pub(super) fn new(posterior: Posterior) -> Self {
        let to_graduate = posterior.approvals_to_graduate();
        Self { posterior, to_graduate }
    }
}

impl std::ops::Deref for ClassPosterior {
    type Target = Posterior;
    fn deref(&self) -> &Posterior {
        &self.posterior
    }
}

/// Seconds a packet must stay unchanged before it can be decided, so what was read is what is
/// signed.
pub const SETTLE_SECONDS: f64 = 3.0;

impl State {
    /// The approvals of `p` gathered towards the quorum its class needs (`[cosign]`), over its
    /// content and under the policy's terms: `None` when the class needs none or nobody signed.
    #[must_use]
    pub fn cosigned(&self, p: &Packet) -> Option<&warrant_store::spool::Cosigning> {
        let q = self.policies.cosign(&p.action_class)?;
        self.cosigning.get(&p.id).filter(|c| c.quorum == *q && c.packet_hash == p.content_hash)
    }

    /// [`State::cosigned`] when the console's principal has signed one of the approvals: under
    /// its name, or with its key under any name (a key counts once).
    #[must_use]
    pub fn cosigned_by_me(&self, p: &Packet) -> Option<&warrant_store::spool::Cosigning> {
        let me = self.principal.as_deref()?;
        let key = self.fingerprint.as_deref();
        self.cosigned(p).filter(|c| c.signers().contains(&me) || key.is_some_and(|k| c.signed_by_key(k)))
    }

    /// A fresh state.
    #[must_use]
    pub fn new(
        spool_path: String,
        principal: Option<String>,
        fingerprint: Option<String>,
        read_only: bool,
        keymap: Keymap,
        now: f64,
    ) -> Self {
        Self {
            spool_path,
            principal,
            fingerprint,
            read_only,
            now,
            keymap,
            snapshot: Snapshot::default(),
            decisions: Arc::default(),
            cosigning: HashMap::new(),
            chain: ChainState::Unknown,
            chain_alert_seen: false,
            chain_progress: None,
            chain_from_checkpoint: false,
            pane: Pane::Pending,
            selected: [0; 8],
            zoomed: false,
            filter: String::new(),
            filter_error: None,
            sort: SortKey::Age,
            sort_reverse: false,
            filter_history: crate::command::History::default(),
            marked: BTreeSet::new(),
            mode: Mode::Normal,
            flash: None,
            signing: false,
            quit: false,
            viewport: None,
            help_scroll: 0,
            log: std::collections::VecDeque::new(),
            pending: Vec::new(),
            pending_total: 0,
            decided: Vec::new(),
            invalid: Vec::new(),
            receipts_by_class: HashMap::new(),
            last_hash: warrant_engine::monitor::ByPacket::default(),
            filter_memo: FilterMemo::default(),
            changed_at: HashMap::new(),
            detail_scroll: 0,
            policies: Arc::new(PolicySet::builtin()),
            observer: Arc::default(),
            all_posteriors: Vec::new(),
            chain_evidence: warrant_store::spool::ChainEvidence::default(),
            controls: ControlState::default(),
            posteriors: Vec::new(),
            assessment: Arc::new(Assessment::default()),
            assessed_at: now,
            snapshot_generation: 0,
            assessed_generation: 0,
            all_notebooks: Vec::new(),
            notebooks: Vec::new(),
            agents: Vec::new(),
            look_alike: HashMap::new(),
            notified: crate::notify::Notified::default(),
            timeout_refusals: crate::notify::TimeoutRefusals::default(),
            grants: warrant_protocol::grant::GrantBook::default(),
            grant_rows: Vec::new(),
            audit_chain: Arc::new(Vec::new()),
            audit: Vec::new(),
            audit_wanted: false,
            history: crate::command::History::default(),
            completions: Vec::new(),
            themes: vec!["default".into(), "mono".into()],
            agent_records: HashMap::new(),
        }
    }

    /// Uses `policies` (built-in classes plus `policy.toml`) for the gate and the posteriors.
    #[must_use]
    pub fn with_policies(mut self, policies: Arc<PolicySet>) -> Self {
        self.policies = policies;
        self.recompute_graduation();
        self
    }

    /// Observes preconditions with `observer` (made for the policies' `[preconditions] roots`);
    /// without one, file and git preconditions fail closed.
    #[must_use]
    pub fn with_observer(mut self, observer: Arc<warrant_engine::preconditions::Observer>) -> Self {
        self.observer = observer;
        self
    }

    /// The gate's decision for a packet (pending packets only).
    #[must_use]
    pub fn gate_decision(&self, packet_id: &str) -> Option<&Decision<'static>> {
        self.assessment.gate.get(packet_id).map(Arc::as_ref)
    }

    /// The composed verdict on a packet: every model side by side, strictest wins (pending
    /// packets only).
    #[must_use]
    pub fn verdict(&self, packet_id: &str) -> Option<&PacketVerdict> {
        self.assessment.verdicts.get(packet_id).map(Arc::as_ref)
    }

    /// [`State::verdict`], shared (to tell one assessment's verdict from another's).
    #[must_use]
    pub fn verdict_arc(&self, packet_id: &str) -> Option<Arc<PacketVerdict>> {
        self.assessment.verdicts.get(packet_id).cloned()
    }

    /// The re-check of a pending packet's contract preconditions, when it has any.
    #[must_use]
    pub fn preconditions(&self, packet_id: &str) -> Option<&Revalidation> {
        self.assessment.preconditions.get(packet_id).map(Arc::as_ref)
    }

    /// The packet's state as shown: the composed verdict when assessed, else what it declares.
    #[must_use]
    pub fn shown_state(&self, p: &Packet) -> Option<DecisionState> {
        self.verdict(&p.id).map(|v| v.state).or(p.state)
    }

    /// The whole assessment.
    #[must_use]
    pub fn assessment(&self) -> &Assessment {
        &self.assessment
    }

    /// The principal's controls as folded from the verified chain.
    #[must_use]
    pub fn controls(&self) -> &ControlState {
        &self.controls
    }

    /// Notebooks after the filter.
    #[must_use]
    pub fn notebooks(&self) -> &[NotebookRow] {
        &self.notebooks
    }

    /// Agents after the filter.
    #[must_use]
    pub fn agents(&self) -> &[AgentSummary] {
        &self.agents
    }

    /// Another known agent whose id looks like `agent`'s on screen, if any.
    #[must_use]
    pub fn look_alike(&self, agent: &str) -> Option<&str> {
        self.look_alike.get(agent).map(String::as_str)
    }

    /// Who published the packet `id` as scanned (the file owner's uid), and why that user may
    /// not speak for the agent it claims, if so.
    #[must_use]
    pub fn publisher(&self, id: &str) -> Option<(u32, Option<&str>)> {
        let e = self.snapshot.packet(id)?;
        Some((e.owner, self.assessment.monitor.impersonations.get(id).map(String::as_str)))
    }

    /// The notebook under the cursor in the matrices view.
    #[must_use]
    pub fn selected_notebook(&self) -> Option<&NotebookRow> {
        if self.pane != Pane::Matrices {
            return None;
        }
        self.notebooks.get(self.selection(Pane::Matrices))
    }

    /// The agent under the cursor in the agents view.
    #[must_use]
    pub fn selected_agent(&self) -> Option<&AgentSummary> {
        if self.pane != Pane::Agents {
            return None;
        }
        self.agents.get(self.selection(Pane::Agents))
    }

    /// Seconds an agent's elevation has left now (the assessment's figure, less the time since).
    #[must_use]
    pub fn elevation_left(&self, a: &AgentSummary) -> Option<(u8, f64)> {
        a.elevation.map(|(ring, left)| (ring, (left - (self.now - self.assessed_at)).max(0.0)))
    }

    /// Whether a clock tick changes what is on screen (ages, countdowns).
    #[must_use]
    pub fn tick_changes_screen(&self) -> bool {
        self.len(Pane::Pending) + self.len(Pane::Decided) > 0 || self.elevation_active() || self.assessed_at == self.now
    }

    pub(super) fn elevation_active(&self) -> bool {
        self.assessment.monitor.agents.values().any(|a| a.elevation.is_some())
    }

    /// Posteriors, one per action class, after the filter.
    #[must_use]
    pub fn posteriors(&self) -> &[Arc<ClassPosterior>] {
        &self.posteriors
    }

    /// Evidence rows of a canonical class, in chain order then spool receipts (the chain's copied
    /// out of their packed form, the receipts' borrowed): of the chain's,
    /// the last [`warrant_protocol::chain_evidence::RECENT_ROWS`] (a long chain's are counted, not kept;
    /// [`State::evidence_count`] counts them all).
    pub fn evidence_for<'a>(&'a self, class: &'a str) -> impl Iterator<Item = Cow<'a, EvidenceRow>> + 'a {
        self.chain_evidence
            .recent(class)
            .map(Cow::Owned)
            .chain(self.assessment.evidence.iter().filter(move |r| r.action_class == class).map(Cow::Borrowed))
    }

    /// How many evidence rows a canonical class has, the chain's and the spool receipts'.
    #[must_use]
    pub fn evidence_count(&self, class: &str) -> usize {
        self.chain_evidence.count(class) + self.assessment.evidence.iter().filter(|r| r.action_class == class).count()
    }

    /// The posterior of the class under the cursor in the posteriors pane.
    #[must_use]
    pub fn selected_posterior(&self) -> Option<&ClassPosterior> {
        if self.pane != Pane::Posteriors {
            return None;
        }
        self.posteriors.get(self.selection(Pane::Posteriors)).map(Arc::as_ref)
    }

    /// When the packet `id` last changed content under the same id, if it ever did.
    #[must_use]
    pub fn changed_at(&self, id: &str) -> Option<f64> {
        self.changed_at.get(id).copied()
    }

    /// The Grants view's rows, live first.
    #[must_use]
    pub fn grant_rows(&self) -> &[crate::grants::GrantRow] {
        &self.grant_rows
    }

    /// The grant the call packet `p` ran on, when `uses/` claims one and that grant, as the
    /// chain holds it (live or revoked since), covers the call (its end and uses aside). A claim
    /// is a file agents can write: one naming a grant the principal never signed, or one that does
    /// not cover the call, hides nothing.
    #[must_use]
    pub fn ran_on_grant(&self, p: &Packet) -> Option<&Arc<warrant_protocol::grant::Grant>> {
        self.snapshot.uses.ran_on_grant(&self.grants, &self.policies, p)
    }

    /// The live grant that covers the pending packet `p`, if one does: the agent's call runs on it
    /// the next time its hook or gateway judges it.
    #[must_use]
    pub fn covering_grant(&self, p: &Packet) -> Option<&Arc<warrant_protocol::grant::Grant>> {
        if self.grants.is_empty() {
            return None;
        }
        let facts = warrant_protocol::grant::CallFacts::of_packet(p, &self.policies)?;
        let uses = &self.snapshot.uses.by_grant;
        let id = self
            .grants
            .covering(&facts, self.now)
            .find(|g| g.max_uses.is_none_or(|m| uses.get(&g.grant_id).copied().unwrap_or(0) < m))
            .map(|g| g.grant_id.clone())?;
        self.grants.get(&id)
    }

    /// Pending packets after the filter, in the order of [`State::sort`] (newest first by
    /// default).
    #[must_use]
    pub fn pending(&self) -> &[PacketEntry] {
        &self.pending
    }
    /// Seconds until the packet's `expires_at` (negative once past it); `None` when it has none
    /// (or an unreadable one). An expired packet can only be refused.
    #[must_use]
    pub fn expires_in(&self, p: &Packet) -> Option<f64> {
        seconds_to_expiry(p, self.now)
    }
    /// Decided packets after the filter, most recent decision first.
    #[must_use]
    pub fn decided(&self) -> &[DecidedRow] {
        &self.decided
    }
    /// Invalid files after the filter.
    #[must_use]
    pub fn invalid(&self) -> &[InvalidFile] {
        &self.invalid
    }
    /// Receipts seen for an action class.
    #[must_use]
    pub fn receipts_for(&self, class: &str) -> usize {
        self.receipts_by_class.get(class).copied().unwrap_or(0)
    }
    /// All receipts, newest first.
    #[must_use]
    pub fn receipts(&self) -> &[Arc<Receipt>] {
        &self.snapshot.receipts
    }

    /// Packets in the spool without a decision, whatever the filter.
    #[must_use]
    pub fn pending_total(&self) -> usize {
        self.pending_total
    }

    /// Length of a pane's filtered list.
    #[must_use]
    pub fn len(&self, pane: Pane) -> usize {
        match pane {
            Pane::Pending => self.pending.len(),
            Pane::Decided => self.decided.len(),
            Pane::Invalid => self.invalid.len(),
            Pane::Posteriors => self.posteriors.len(),
            Pane::Matrices => self.notebooks.len(),
            Pane::Agents => self.agents.len(),
            Pane::Grants => self.grant_rows.len(),
            Pane::Audit => self.audit.len(),
        }
    }

    /// `agent`'s record for `class` (any spelling the registry normalises) in the verified
    /// chain: approvals, refusals and the last refusal.
    #[must_use]
    pub fn agent_record(&self, agent: &str, class: &str) -> Option<&AgentClassRecord> {
        self.agent_records.get(&(agent.to_owned(), self.policies.normalize(class)))
    }

    /// The posterior of `class` (normalised), whatever the filter.
    #[must_use]
    pub fn posterior_of(&self, class: &str) -> Option<&ClassPosterior> {
        let class = self.policies.normalize(class);
        self.all_posteriors.iter().find(|p| p.action_class == class).map(|p| &**p)
    }

    /// The audit entries shown (after the filter), in chain order.
    #[must_use]
    pub fn audit(&self) -> &[warrant_engine::audit::AuditEntry] {
        &self.audit
    }

    /// The audit entry under the cursor in the Audit view.
    #[must_use]
    pub fn selected_audit(&self) -> Option<&warrant_engine::audit::AuditEntry> {
        self.audit.get(self.selection(Pane::Audit))
    }

    /// The selected index of a pane, clamped to its list.
    #[must_use]
    pub fn selection(&self, pane: Pane) -> usize {
        self.selected[pane as usize].min(self.len(pane).saturating_sub(1))
    }

    /// Selects the pending packet `id` in the Pending view (shown whole, not zoomed); `false`
    /// when no pending packet the filter shows has that id.
    pub fn select_pending(&mut self, id: &str) -> bool {
        let Some(i) = self.pending().iter().position(|e| e.packet.id == id) else { return false };
        self.pane = Pane::Pending;
        self.zoomed = false;
        self.selected[Pane::Pending as usize] = i;
        true
    }

    /// The packet under the cursor, if the focused pane shows packets.
    #[must_use]
    pub fn selected_packet(&self) -> Option<Arc<Packet>> {
        let i = self.selection(self.pane);
        match self.pane {
            Pane::Pending => self.pending.get(i).map(|e| Arc::clone(&e.packet)),
            Pane::Decided => self.decided.get(i).and_then(|r| r.packet.clone()),
            Pane::Invalid | Pane::Posteriors | Pane::Matrices | Pane::Agents | Pane::Grants | Pane::Audit => None,
        }
    }

    /// True when signing is possible now (not read-only, chain verified and valid, nothing in
    /// flight).
    ///
    /// # Errors
    /// Why signing is not possible now, for the status line.
    pub fn can_sign(&self) -> Result<(), String> {
        if self.read_only {
            return Err("read-only console: nothing can be signed".into());
        }
        if self.signing {
            return Err("a signature is already being made".into());
        }
        match &self.chain {
            ChainState::Valid { .. } => Ok(()),
            ChainState::Unknown => Err("the chain has not been verified yet".into()),
            ChainState::Broken { first, .. } => Err(format!("signing refused: the chain is broken ({first})")),
        }
    }
}

/// Seconds from `now` until `p`'s `expires_at` (negative once past it), if it has one.
pub(super) fn seconds_to_expiry(p: &Packet, now: f64) -> Option<f64> {
    p.expires_at.as_deref().and_then(warrant_protocol::clock::unix_seconds).map(|t| t - now)
}
