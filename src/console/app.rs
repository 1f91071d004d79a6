//! The console's state and its Elm-style `update`: terminal keys, watcher events, timer ticks
//! and effect results all arrive as one [`Action`]; [`update`] changes the [`State`] and returns
//! the [`Effect`]s for the runner to execute. Nothing here does I/O, so it is tested directly,
//! with one exception: the assessment ([`crate::monitor::assess`], run when the snapshot, the
//! chain view or the minute changes, or once a second while an elevation counts down) observes
//! the preconditions of pending packets' contracts, reading the files and repositories they name.

use super::filter::{Field, Filter, SortKey};
use super::keymap::{Key, Keymap};
use crate::monitor::{AgentSummary, Assessment};
use crate::protocol::chain::Finding;
use crate::protocol::control::{ControlInput, ControlKind, ControlState};
use crate::protocol::decision::Verdict;
use crate::protocol::graduation::evidence::EvidenceRow;
use crate::protocol::graduation::gate::{AgentStanding, Decision};
use crate::protocol::graduation::policy::PolicySet;
use crate::protocol::graduation::posterior::Posterior;
use crate::protocol::ladder::Revalidation;
use crate::protocol::packet::{DecisionState, Packet, Receipt};
use crate::protocol::tiers::NotebookTrust;
use crate::protocol::verdict::{Governance, PacketVerdict, VerdictContext};
use crate::store::spool::{ChainDecision, ChainView, InvalidFile, PacketEntry, Snapshot};
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

/// Everything that can happen to the console.
#[derive(Debug, Clone)]
pub enum Action {
    /// A key press, already normalised.
    Key(Key),
    /// Text pasted into the terminal.
    Paste(String),
    /// The terminal was resized (or its size became known at start): columns and rows.
    Resize {
        /// Columns.
        width: u16,
        /// Rows.
        height: u16,
    },
    /// A frame of the state as it is now was drawn on a terminal of this size. Only drawn lines
    /// count as seen in the sign dialog.
    Drawn {
        /// Columns.
        width: u16,
        /// Rows.
        height: u16,
    },
    /// The clock advanced (seconds since the epoch).
    Tick(f64),
    /// The watcher saw something change in the spool.
    SpoolChanged {
        /// `chain.jsonl` itself changed.
        chain: bool,
    },
    /// A scan of `packets/` and `receipts/` finished.
    Scanned(Snapshot),
    /// A scan found the spool as the previous one did: nothing to recompute or redraw.
    ScanUnchanged,
    /// Bring the assessment up to date with the last scan, here and now (gate decisions,
    /// verdicts, posteriors). The console's event loop runs the same work off the UI thread
    /// instead ([`State::assess_job`], then [`Action::Assessed`]); tests send this.
    Assess,
    /// An assessment made off the UI thread ([`AssessJob::run`]) is ready.
    Assessed(Box<Assessed>),
    /// An assessment made off the UI thread failed (a panic, logged); it is tried again.
    AssessFailed(String),
    /// A chain verification finished: the report, and the decisions and evidence of the records
    /// that verified.
    ChainVerified(Box<ChainView>),
    /// The records after the principal's last checkpoint verified (the prefix trusted as the
    /// principal verified it when signing): the decisions and controls of the whole chain, the
    /// evidence of the tail only, while the whole chain is verified in the background.
    ChainCheckpointed(Box<ChainView>),
    /// The background verification of the whole chain has read `read` of `total` bytes.
    ChainProgress {
        /// Bytes read.
        read: u64,
        /// Bytes to read.
        total: u64,
    },
    /// A signing effect finished.
    Signed(Result<SignedSummary, String>),
    /// A batch signing effect finished ([`Effect::SignBatch`]): a summary per packet signed, or
    /// why nothing was signed.
    SignedBatch(Result<Vec<SignedSummary>, String>),
    /// The system refusal of a timed-out packet finished ([`Effect::RefuseTimedOut`]).
    TimeoutRefused {
        /// The packet.
        packet_id: String,
        /// Its class's `refuse_after`.
        after: std::time::Duration,
        /// The refusal signed, `Ok(None)` when the packet had a decision already (another
        /// console or the command line decided it first: nothing to do), or why nothing was
        /// signed.
        result: Result<Option<SignedSummary>, String>,
    },
    /// A control effect finished (the control appended to the chain, or why not).
    ControlSigned(Result<ControlSummary, String>),
    /// A revocation of a grant was appended (the grant id, record index and entry hash) or not.
    GrantRevoked(Result<(String, u64, String), String>),
    /// A scan of the spool failed — shown, never fatal.
    ScanFailed(String),
    /// Reading the chain failed — shown, never fatal; signing stays refused.
    VerifyFailed(String),
    /// Something else failed (the terminal, the notify command) — shown, never fatal.
    Error(String),
    /// The audit of the verified chain ([`crate::store::spool::audit_chain`]), or why it could not be
    /// made.
    Audited(Result<Arc<Vec<crate::audit::AuditEntry>>, String>),
    /// A mouse event on the terminal (when `[console] mouse` is on).
    Mouse(MouseInput),
    /// `:grant SCOPE`: open the grant dialog for the packet under the cursor with this scope
    /// (`session`, `until TIME`, `pattern GLOB`). Grants are not in this build: it only says so.
    GrantDialog(String),
    /// Quit requested by a signal.
    Quit,
}

/// What the mouse did, where (0-based cell).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MouseInput {
    /// Click, or wheel.
    pub kind: MouseKind,
    /// Column.
    pub column: u16,
    /// Row.
    pub row: u16,
}

/// The mouse events the console uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MouseKind {
    /// The left button went down.
    Click,
    /// The wheel turned up (towards the top of a list).
    ScrollUp,
    /// The wheel turned down.
    ScrollDown,
}

/// What a successful signature reports back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedSummary {
    /// The packet.
    pub packet_id: String,
    /// Approve or refuse.
    pub verdict: Verdict,
    /// The new record's index.
    pub chain_index: u64,
    /// The new record's hash.
    pub entry_hash: String,
    /// The grant signed with it: its id, or why it was not recorded (the approval stands).
    pub grant: Option<Result<String, String>>,
    /// For an approval under a quorum (`[cosign]`): who has signed so far.
    pub cosigned: Option<crate::store::spool::CosignProgress>,
}

/// One packet of [`Effect::SignBatch`].
#[derive(Debug, Clone, PartialEq)]
pub struct BatchSign {
    /// The packet as reviewed.
    pub packet: Arc<Packet>,
    /// The uid owning the file of the version reviewed.
    pub publisher: Option<u32>,
    /// What an approval stands in for.
    pub stands_in_for: Vec<String>,
}

/// What a successfully appended control reports back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlSummary {
    /// What it did.
    pub kind: ControlKind,
    /// The notebook or agent.
    pub subject: String,
    /// The new record's index.
    pub chain_index: u64,
    /// The new record's hash.
    pub entry_hash: String,
    /// Pending packets refused with it (a kill refuses the agent's pending packets).
    pub refused: usize,
}

/// Work for the runner.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Rescan `packets/` and `receipts/`.
    Scan,
    /// Re-read and verify the chain (skipped by the runner when the file is unchanged since the
    /// last verification, unless `force`).
    VerifyChain {
        /// Verify even if `chain.jsonl` looks unchanged.
        force: bool,
    },
    /// Sign and append a decision.
    Sign {
        /// The packet as reviewed (its content hash is what gets signed).
        packet: Arc<Packet>,
        /// The uid owning the file of the version reviewed, recorded with an approval.
        publisher: Option<u32>,
        /// Approve or refuse.
        verdict: Verdict,
        /// The reason, if any.
        reason: Option<String>,
        /// What an approval stands in for, from the verdict the principal saw
        /// ([`crate::protocol::verdict::PacketVerdict::stands_in_for`]); signed into the decision.
        stands_in_for: Vec<String>,
        /// The grant signed after the approval, if the principal chose a scope.
        grant: Option<Box<crate::protocol::grant::GrantInput>>,
    },
    /// Sign and append the refusal of a timed-out packet as a system decision
    /// ([`crate::store::spool::decide_system`], `"system": "timeout"`): its class has `[timeouts]
    /// sign_refusal = true` ([`super::notify::timeout_effects`]). Never evidence; never an approval.
    RefuseTimedOut {
        /// The packet as last scanned (its content hash is what gets signed).
        packet: Arc<Packet>,
        /// Its class's `refuse_after`.
        after: std::time::Duration,
        /// The reason signed ([`super::notify::timeout_reason`]).
        reason: String,
    },
    /// Sign and append the revocation of a grant ([`crate::store::spool::revoke_grant`]).
    RevokeGrant {
        /// The grant.
        grant_id: String,
        /// Why.
        reason: String,
    },
    /// Sign the same decision on each packet of the selection and append them as one group
    /// ([`crate::store::spool::decide_many`]: one record per packet, one lock, one sync, all or nothing).
    SignBatch {
        /// Each packet as reviewed, the uid owning its file (recorded with an approval), and what
        /// an approval stands in for, from the verdict the principal saw.
        items: Vec<BatchSign>,
        /// Approve or refuse.
        verdict: Verdict,
        /// The reason, if any (one for all; required to refuse).
        reason: Option<String>,
    },
    /// Sign and append one of the principal's controls (notebook trust, quarantine, release,
    /// kill, elevation) in the background. The runner stamps `decided_at` when it signs; a kill
    /// runs the kill switch for its result fields and an elevation is checked again against the
    /// spool and chain as they are then (see [`super::execute_control`]).
    Control(ControlInput),
    /// New packets need the principal: ring the bell and run the notify command
    /// (`[notify]` in `config.toml`; see [`super::notify`]).
    Notify {
        /// The new packets.
        packets: Vec<super::notify::Notice>,
        /// Packets pending now.
        pending: usize,
    },
    /// The pending count changed: put it in the terminal's title (when `[notify] title`).
    Title {
        /// Packets pending now.
        pending: usize,
    },
    /// Build the audit of the chain ([`crate::store::spool::audit_chain`]) off the UI thread.
    Audit,
    /// Switch to this theme (`:theme`): a built-in or `<config>/themes/NAME.toml`; the runner
    /// reports a theme it cannot load as an error.
    Theme(String),
    /// Leave.
    Quit,
}

/// The lists and views.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    /// Packets without a decision.
    Pending,
    /// Packets with a decision in the chain.
    Decided,
    /// Files that are not valid packets or receipts.
    Invalid,
    /// One row per action class: the posterior and its credible interval.
    Posteriors,
    /// The ring matrix and the tool tier × notebook trust matrix, with the notebooks (one row
    /// per notebook: its level, editable).
    Matrices,
    /// One row per agent: ring, score, standing, counts, activity, rate limit, elevation.
    Agents,
    /// The principal's grants: scope in words, uses, end, signer ([`super::grants`]).
    Grants,
    /// Every decision, control, key event, grant and allowed call in chain order, with how it
    /// was allowed ([`crate::audit`]); view 8 (7 is kept for the grants).
    Audit,
}

impl Pane {
    /// All panes in tab order.
    pub const ALL: [Pane; 8] = [
        Pane::Pending,
        Pane::Decided,
        Pane::Invalid,
        Pane::Posteriors,
        Pane::Matrices,
        Pane::Agents,
        Pane::Grants,
        Pane::Audit,
    ];

    /// The number key and tab number of the view (the Audit view is 8).
    #[must_use]
    pub fn number(self) -> u8 {
        match self {
            Pane::Pending => 1,
            Pane::Decided => 2,
            Pane::Invalid => 3,
            Pane::Posteriors => 4,
            Pane::Matrices => 5,
            Pane::Agents => 6,
            Pane::Grants => 7,
            Pane::Audit => 8,
        }
    }

    /// Title word.
    #[must_use]
    pub fn title(self) -> &'static str {
        match self {
            Pane::Pending => "Pending",
            Pane::Decided => "Decided",
            Pane::Invalid => "Invalid",
            Pane::Posteriors => "Posteriors",
            Pane::Matrices => "Matrices",
            Pane::Agents => "Agents",
            Pane::Grants => "Grants",
            Pane::Audit => "Audit",
        }
    }
}

/// Which button of the confirmation dialog has focus.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Button {
    /// Cancel (the default).
    Cancel,
    /// Sign.
    Sign,
}

/// A pending confirmation. The dialog scrolls; an approval cannot be signed until every line of
/// it has been on screen ([`Confirm::read`]), which `update` works out from the dialog's layout
/// at the terminal's size ([`super::dialog::confirm_extent`]) each time a frame is drawn
/// ([`Action::Drawn`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Confirm {
    /// The packet.
    pub packet: Arc<Packet>,
    /// Approve or refuse.
    pub verdict: Verdict,
    /// The reason, if any.
    pub reason: Option<String>,
    /// Focused button.
    pub focus: Button,
    /// First content line on screen.
    pub scroll: usize,
    /// Content lines seen so far, from the top without a gap (the lines above `seen` have all
    /// been on screen since the dialog was last laid out).
    pub seen: usize,
    /// Every line of the dialog has been on screen: an approval may be signed.
    pub read: bool,
    /// The dialog takes the whole terminal.
    pub zoomed: bool,
    /// A batch decision (issue 18): every packet of the selection, in the pending list's
    /// order, `packet` being the first; empty for a decision on `packet` alone.
    pub batch: Vec<Arc<Packet>>,
    /// The grant signed with an approval of `packet` alone ([`crate::protocol::grant`]; `s` cycles the
    /// scopes, `:grant` names one): `None` approves this call once.
    pub grant: Option<Box<crate::protocol::grant::GrantInput>>,
}

impl Confirm {
    /// A dialog for `packet`, scrolled to the top, focus on *Cancel*, nothing seen yet.
    #[must_use]
    pub fn new(packet: Arc<Packet>, verdict: Verdict, reason: Option<String>) -> Self {
        Self {
            packet,
            verdict,
            reason,
            focus: Button::Cancel,
            scroll: 0,
            seen: 0,
            read: false,
            zoomed: false,
            batch: Vec::new(),
            grant: None,
        }
    }

    /// A dialog for a batch decision on `packets` (at least one).
    #[must_use]
    pub fn batch(packets: Vec<Arc<Packet>>, verdict: Verdict, reason: Option<String>) -> Option<Self> {
        let first = Arc::clone(packets.first()?);
        Some(Self { batch: packets, ..Self::new(first, verdict, reason) })
    }

    /// The packets the dialog signs: the batch, or the one packet.
    #[must_use]
    pub fn packets(&self) -> &[Arc<Packet>] {
        if self.batch.is_empty() { std::slice::from_ref(&self.packet) } else { &self.batch }
    }

    /// Whether *Sign* may be pressed: always for a refusal (refusing is fail-safe), for an
    /// approval once the whole dialog has been on screen.
    #[must_use]
    pub fn unlocked(&self) -> bool {
        self.verdict == Verdict::Refuse || self.read
    }
}

/// A pending confirmation of one of the principal's controls.
#[derive(Debug, Clone, PartialEq)]
pub struct ControlConfirm {
    /// The control as it will be signed (`decided_at` is stamped when it is signed).
    pub input: ControlInput,
    /// Focused button.
    pub focus: Button,
}

/// What a text line is for.
#[derive(Debug, Clone, PartialEq)]
pub enum InputPurpose {
    /// The list filter.
    Filter,
    /// The reason for refusing this packet.
    RefuseReason(Arc<Packet>),
    /// The one reason for refusing every packet of the selection (issue 18).
    RefuseBatchReason(Vec<Arc<Packet>>),
    /// The reason for a control on an agent (required to quarantine or kill, optional to release).
    ControlReason(ControlInput),
    /// The typed confirmation of a control: the notebook's name, to raise it to `autonomous`.
    /// Anything else cancels.
    TypedConfirm(ControlInput),
    /// The ring (1 or 2) and the TTL in seconds of an elevation of this agent, e.g. `2 300`.
    Elevation(String),
    /// The reason for revoking this grant (required).
    RevokeReason(String),
    /// The `:` command line ([`super::command`]).
    Command,
}

/// The modal state.
#[derive(Debug, Clone, PartialEq)]
pub enum Mode {
    /// Lists and detail.
    Normal,
    /// A text line is being edited.
    Input {
        /// What for.
        purpose: InputPurpose,
        /// The text so far.
        text: String,
    },
    /// The sign/cancel dialog for a decision.
    Confirm(Confirm),
    /// The sign/cancel dialog for a control.
    ControlConfirm(ControlConfirm),
    /// The help overlay.
    Help,
    /// The broken-chain alert, which must be acknowledged.
    ChainAlert,
    /// The message log: the recent status-line messages, whole (any key closes it).
    Log,
}

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
    /// The decision.
    pub decision: ChainDecision,
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
    pub last_refusal: Option<ChainDecision>,
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
    /// Decisions recorded in the chain, by packet id.
    pub decisions: HashMap<String, ChainDecision>,
    /// Approvals gathered towards a quorum (`[cosign]`), by packet id, for packets not decided.
    pub cosigning: HashMap<String, crate::store::spool::Cosigning>,
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
    /// The list filter as typed ([`super::filter`]: words, `"phrases"`, `field:value`, `-term`).
    pub filter: String,
    /// What is wrong with the filter (an unknown field), if anything: then nothing matches.
    pub filter_error: Option<String>,
    /// The pending list's order.
    pub sort: SortKey,
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
    /// The terminal's size (columns, rows), from [`Action::Resize`]; unknown until then, and
    /// while unknown no approval dialog counts as read.
    pub viewport: Option<(u16, u16)>,
    /// Lines of the help overlay scrolled past (when it does not fit the terminal).
    pub help_scroll: usize,
    /// The last [`LOG_LEN`] status-line messages, oldest first.
    pub log: std::collections::VecDeque<LogEntry>,
    /// Every class's posterior, unfiltered.
    all_posteriors: Vec<Arc<ClassPosterior>>,
    /// Cached filtered lists (recomputed after every change of snapshot, decisions or filter).
    pending: Vec<PacketEntry>,
    /// Packets without a decision, whatever the filter.
    pending_total: usize,
    decided: Vec<DecidedRow>,
    invalid: Vec<InvalidFile>,
    /// Receipts seen per action class (for the detail's evidence line).
    receipts_by_class: HashMap<String, usize>,
    /// The content hash each packet id had at the last scan.
    last_hash: crate::monitor::ByPacket<String>,
    /// The filter's answers for the packets it was asked about.
    filter_memo: FilterMemo,
    /// When a packet's content last changed under the same id (seconds since the epoch).
    changed_at: HashMap<String, f64>,
    /// First line of the zoomed packet view.
    pub detail_scroll: u16,
    /// The registry and policies the gate consults.
    pub policies: Arc<PolicySet>,
    /// Observes preconditions for the assessment job, confined to the policies' roots.
    pub observer: Arc<crate::preconditions::Observer>,
    /// Evidence rows from the verified chain (the principal's decisions and recorded receipts).
    chain_evidence: crate::store::spool::ChainEvidence,
    /// The principal's controls (notebook levels, agent standings, elevations) from the chain.
    controls: ControlState,
    /// One posterior per action class (registered classes, then others seen), filtered.
    posteriors: Vec<Arc<ClassPosterior>>,
    /// What every model says now ([`crate::monitor::assess`]): the evidence (the chain's, then
    /// receipt files at most connector-grade), the agents, and for each pending packet the gate's
    /// decision, the precondition re-check and the composed verdict.
    assessment: Arc<Assessment>,
    /// `now` when the assessment was made.
    assessed_at: f64,
    /// Counts the snapshots taken: the assessment is due while it was made from an older one.
    /// Until then a new packet is listed with the state it declares; an approval assesses first.
    snapshot_generation: u64,
    /// The snapshot generation the assessment was made from.
    assessed_generation: u64,
    /// Every notebook seen in packets' governance or with a level in the chain, by id.
    all_notebooks: Vec<NotebookRow>,
    /// Notebooks after the filter.
    notebooks: Vec<NotebookRow>,
    /// Agents after the filter, by id.
    agents: Vec<AgentSummary>,
    /// Agent ids that look like another known agent's ([`crate::protocol::text::confusable_ids`]).
    look_alike: HashMap<String, String>,
    /// What the principal was told about (see [`super::notify`]).
    pub(super) notified: super::notify::Notified,
    /// The system refusals of timed-out packets asked for ([`super::notify::timeout_effects`]).
    pub(super) timeout_refusals: super::notify::TimeoutRefusals,
    /// The principal's grants, issued and not revoked, from the verified chain.
    pub grants: crate::protocol::grant::GrantBook,
    /// The Grants view's rows ([`super::grants::rows`]).
    grant_rows: Vec<super::grants::GrantRow>,
    /// The audit of the chain as last built (entries of verified records), shared with the
    /// job that built it.
    audit_chain: Arc<Vec<crate::audit::AuditEntry>>,
    /// The audit shown: the chain's entries and the receipt files' calls, after the filter.
    audit: Vec<crate::audit::AuditEntry>,
    /// An audit has been asked for (the view was opened): it is built again after each chain
    /// verification.
    pub audit_wanted: bool,
    /// The `:` command line's history.
    pub history: super::command::History,
    /// The candidates of the last Tab completion (shown above the command line).
    pub completions: Vec<String>,
    /// The theme names `:theme` completes (the built-ins and `<config>/themes/*.toml`).
    pub themes: Vec<String>,
    /// Each (agent, canonical class)'s record in the verified chain, for the packet detail.
    agent_records: HashMap<(String, String), AgentClassRecord>,
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
    fn new(posterior: Posterior) -> Self {
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

/// One assessment's inputs, copied out of the [`State`] ([`State::assess_job`]) to run off the
/// UI thread.
pub struct AssessJob {
    generation: u64,
    prev: Arc<Assessment>,
    policies: Arc<PolicySet>,
    observer: Arc<crate::preconditions::Observer>,
    controls: ControlState,
    now: f64,
    packets: Vec<PacketEntry>,
    receipts: Vec<Arc<Receipt>>,
    decisions: HashMap<String, ChainDecision>,
    chain_evidence: crate::store::spool::ChainEvidence,
    chain_intact: bool,
    workspace: String,
}

impl AssessJob {
    /// Observes the pending packets' preconditions ([`crate::preconditions::observe_pending`],
    /// the only I/O) and makes the assessment ([`crate::monitor::assess_incremental`] from the
    /// previous one): what [`Action::Assess`] would make of the same state.
    #[must_use]
    pub fn run(self) -> Assessed {
        let revalidations = crate::preconditions::observe_pending(&self.observer, &self.packets, &self.decisions);
        let ctx = VerdictContext { policies: &self.policies, controls: &self.controls, now: self.now };
        let assessment = crate::monitor::assess_incremental(
            Some(&self.prev),
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

/// An assessment made by [`AssessJob::run`], for [`Action::Assessed`].
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
    /// The approvals of `p` gathered towards the quorum its class needs (`[cosign]`), over its
    /// content and under the policy's terms: `None` when the class needs none or nobody signed.
    #[must_use]
    pub fn cosigned(&self, p: &Packet) -> Option<&crate::store::spool::Cosigning> {
        let q = self.policies.cosign(&p.action_class)?;
        self.cosigning.get(&p.id).filter(|c| c.quorum == *q && c.packet_hash == p.content_hash)
    }

    /// [`State::cosigned`] when the console's principal is among the signers.
    #[must_use]
    pub fn cosigned_by_me(&self, p: &Packet) -> Option<&crate::store::spool::Cosigning> {
        let me = self.principal.as_deref()?;
        self.cosigned(p).filter(|c| c.signers().contains(&me))
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
            decisions: HashMap::new(),
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
            last_hash: crate::monitor::ByPacket::default(),
            filter_memo: FilterMemo::default(),
            changed_at: HashMap::new(),
            detail_scroll: 0,
            policies: Arc::new(PolicySet::builtin()),
            observer: Arc::default(),
            all_posteriors: Vec::new(),
            chain_evidence: crate::store::spool::ChainEvidence::default(),
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
            notified: super::notify::Notified::default(),
            timeout_refusals: super::notify::TimeoutRefusals::default(),
            grants: crate::protocol::grant::GrantBook::default(),
            grant_rows: Vec::new(),
            audit_chain: Arc::new(Vec::new()),
            audit: Vec::new(),
            audit_wanted: false,
            history: super::command::History::default(),
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
    pub fn with_observer(mut self, observer: Arc<crate::preconditions::Observer>) -> Self {
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

    fn elevation_active(&self) -> bool {
        self.assessment.monitor.agents.values().any(|a| a.elevation.is_some())
    }

    /// Posteriors, one per action class, after the filter.
    #[must_use]
    pub fn posteriors(&self) -> &[Arc<ClassPosterior>] {
        &self.posteriors
    }

    /// Evidence rows of a canonical class, in chain order then spool receipts: of the chain's,
    /// the last [`crate::protocol::chain_evidence::RECENT_ROWS`] (a long chain's are counted, not kept;
    /// [`State::evidence_count`] counts them all).
    pub fn evidence_for<'a>(&'a self, class: &'a str) -> impl Iterator<Item = &'a EvidenceRow> + 'a {
        self.chain_evidence
            .recent(class)
            .chain(self.assessment.evidence.iter().filter(move |r| r.action_class == class))
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

    /// Recomputes the assessment (evidence, agents, every pending packet's gate decision and
    /// composed verdict), the posteriors and the lists. Called when the snapshot, the chain view
    /// or the policies change, never per key or per frame.
    fn recompute_graduation(&mut self) {
        self.assess();
        self.recompute_posteriors();
        self.refresh();
    }

    /// The clock moved: re-assess when the minute changed (activity, ages) or, at most once a
    /// second, while an elevation counts down (its expiry changes rings and verdicts). Otherwise
    /// nothing is recomputed, so an idle console stays idle.
    fn on_tick(&mut self, now: f64) {
        let minute = |t: f64| (t / 60.0).floor() as i64;
        let day = |t: f64| (t / 86_400.0).floor() as i64;
        let before = self.assessed_at;
        self.now = now;
        // A grant that reached its end is shown so at once.
        if self
            .grant_rows
            .iter()
            .any(|r| r.status == super::grants::GrantStatus::Live && r.grant.expires_unix.is_some_and(|t| t <= now))
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

    /// One [`crate::monitor::assess`] of the spool as scanned and the chain as verified, and the
    /// notebooks it names.
    fn assess(&mut self) {
        let chain_intact = matches!(self.chain, ChainState::Valid { .. });
        let ctx = VerdictContext { policies: &self.policies, controls: &self.controls, now: self.now };
        let workspace = self.principal.as_deref().unwrap_or("local");
        self.assessment = Arc::new(crate::monitor::assess_incremental(
            Some(&self.assessment),
            &self.policies,
            &ctx,
            &self.snapshot.packets,
            &self.snapshot.receipts,
            &self.decisions,
            &self.chain_evidence,
            // The last job's observations: this runs on the UI thread and observes nothing.
            &self.assessment.preconditions.clone(),
            chain_intact,
            workspace,
        ));
        self.assessed_at = self.now;
        self.assessed_generation = self.snapshot_generation;
        self.recompute_notebooks();
    }

    /// Every notebook named by the controls or by a packet's governance, with its pending count.
    fn recompute_notebooks(&mut self) {
        self.look_alike =
            crate::protocol::text::confusable_ids(self.assessment.monitor.agents.keys().map(String::as_str));
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
            .filter(|c| crate::protocol::packet::is_class_id(c) && !classes.contains(c))
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

    /// When the packet `id` last changed content under the same id, if it ever did.
    #[must_use]
    pub fn changed_at(&self, id: &str) -> Option<f64> {
        self.changed_at.get(id).copied()
    }

    /// The Grants view's rows, live first.
    #[must_use]
    pub fn grant_rows(&self) -> &[super::grants::GrantRow] {
        &self.grant_rows
    }

    /// Recomputes the Grants view's rows from the chain's grants and the claimed uses, keeping
    /// the selected grant under the cursor.
    fn recompute_grants(&mut self) {
        let selected = self.grant_rows.get(self.selection(Pane::Grants)).map(|r| r.grant.grant_id.clone());
        self.grant_rows = super::grants::rows(&self.grants, &self.snapshot.uses, self.now);
        if let Some(i) = selected.and_then(|id| self.grant_rows.iter().position(|r| r.grant.grant_id == id)) {
            self.selected[Pane::Grants as usize] = i;
        }
    }

    /// The grant the call packet `p` ran on, when `uses/` claims one and that grant, as the
    /// chain holds it (live or revoked since), covers the call (its end and uses aside). A claim
    /// is a file agents can write: one naming a grant the principal never signed, or one that does
    /// not cover the call, hides nothing.
    #[must_use]
    pub fn ran_on_grant(&self, p: &Packet) -> Option<&Arc<crate::protocol::grant::Grant>> {
        ran_on_grant(&self.snapshot.uses, &self.grants, &self.policies, p)
    }

    /// The live grant that covers the pending packet `p`, if one does: the agent's call runs on it
    /// the next time its hook or gateway judges it.
    #[must_use]
    pub fn covering_grant(&self, p: &Packet) -> Option<&Arc<crate::protocol::grant::Grant>> {
        if self.grants.is_empty() {
            return None;
        }
        let facts = crate::protocol::grant::CallFacts::of_packet(p, &self.policies)?;
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
    pub fn audit(&self) -> &[crate::audit::AuditEntry] {
        &self.audit
    }

    /// The audit entry under the cursor in the Audit view.
    #[must_use]
    pub fn selected_audit(&self) -> Option<&crate::audit::AuditEntry> {
        self.audit.get(self.selection(Pane::Audit))
    }

    /// The selected index of a pane, clamped to its list.
    #[must_use]
    pub fn selection(&self, pane: Pane) -> usize {
        self.selected[pane as usize].min(self.len(pane).saturating_sub(1))
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

    /// Takes a new scan: notes packets whose content changed under the same id, counts receipts
    /// per class, and refreshes the lists.
    fn take_snapshot(&mut self, snapshot: Snapshot) {
        // The Grants view's rows change with the claimed uses (the scanner shares them while
        // they are the same), not with every scan.
        let uses_changed = !Arc::ptr_eq(&self.snapshot.uses, &snapshot.uses);
        self.snapshot = snapshot;
        for e in &self.snapshot.packets {
            let p = &e.packet;
            // Allocates only for a packet that is new or changed, not for every packet per scan.
            match self.last_hash.get(&p.id) {
                Some(old) if *old == p.content_hash => {}
                Some(_) => {
                    self.last_hash.insert(p.id.clone(), p.content_hash.clone());
                    self.changed_at.insert(p.id.clone(), self.now);
                }
                None => {
                    self.last_hash.insert(p.id.clone(), p.content_hash.clone());
                }
            }
        }
        self.receipts_by_class.clear();
        for r in &self.snapshot.receipts {
            *self.receipts_by_class.entry(r.action_class.clone()).or_default() += 1;
        }
        // The lists show the scan at once; the models' assessment follows.
        self.refresh();
        if uses_changed {
            self.recompute_grants();
        }
        self.snapshot_generation += 1;
    }

    /// How many snapshots were taken.
    pub(super) fn snapshot_generation(&self) -> u64 {
        self.snapshot_generation
    }

    /// The assessment, shared.
    pub(super) fn assessment_arc(&self) -> &Arc<Assessment> {
        &self.assessment
    }

    /// Whether the assessment is older than the last scan (an assessment is due).
    #[must_use]
    pub fn assessment_due(&self) -> bool {
        self.assessed_generation < self.snapshot_generation
    }

    /// Brings the assessment up to date with the last scan, if it is not.
    fn ensure_assessed(&mut self) {
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
    fn take_assessed(&mut self, done: Assessed) {
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

    /// Recomputes the filtered lists, keeping the selection on the same item where possible.
    fn refresh(&mut self) {
        let keep: Vec<Option<String>> = Pane::ALL.iter().map(|p| self.selected_id(*p)).collect();
        // Parsed once per refresh; words are lowered once here.
        let filter = Filter::parse(&self.filter);
        self.filter_error = filter.error().map(str::to_owned);
        let policies = Arc::clone(&self.policies);
        // A packet's state comes from the assessment, which changes without the packet: its
        // terms are matched afresh each time, the others' answers are kept per packet.
        let (kept, live) = filter.split_off(Field::State);
        // One pass over the packets: the undecided ones that match, and the decided ones'
        // packets (few) for the decided rows.
        let mut pending: Vec<PacketEntry> = Vec::with_capacity(self.snapshot.packets.len());
        let mut decided_packets: HashMap<&str, &Arc<Packet>> = HashMap::new();
        let memo = &mut self.filter_memo;
        let policies_at = Arc::as_ptr(&policies) as usize;
        if memo.needle != self.filter
            || memo.policies != policies_at
            || memo.hits.len() > 2 * self.snapshot.packets.len() + 1024
        {
            // A new filter or policy (a class's risk), or packets gone from the spool piling up:
            // start again.
            memo.hits.clear();
            memo.needle.clone_from(&self.filter);
            memo.policies = policies_at;
        }
        let mut marked = BTreeSet::new();
        let mut pending_total = 0;
        for e in &self.snapshot.packets {
            let p = &e.packet;
            if self.decisions.contains_key(&p.id) {
                decided_packets.insert(&p.id, p);
                continue;
            }
            // A tool call the gate let run on its own waits for nobody (the Agents view counts it),
            // nor one that ran on a grant (its use is claimed in `uses/`).
            if crate::monitor::ran_on_its_own(&self.assessment, p)
                || ran_on_grant(&self.snapshot.uses, &self.grants, &self.policies, p).is_some()
            {
                continue;
            }
            pending_total += 1;
            if !self.marked.is_empty() && self.marked.contains(&p.id) {
                marked.insert(p.id.clone());
            }
            if filter.is_empty()
                || memo
                    .hits
                    .entry(Arc::as_ptr(p) as usize)
                    .or_insert_with(|| {
                        let hit = kept.matches(&[&p.id, &p.agent, &p.action_class, &p.summary], |f| {
                            packet_field(&policies, p, f)
                        });
                        (Arc::clone(p), hit)
                    })
                    .1
                    && (live.is_empty() || {
                        let shown = self.assessment.verdicts.get(&p.id).map(|v| v.state).or(p.state);
                        live.matches(&[], |_| Some(Cow::Borrowed(shown.map_or("unknown", |s| s.as_str()))))
                    })
            {
                pending.push(e.clone());
            }
        }
        self.marked = marked;
        self.pending_total = pending_total;
        // Stable sorts: ties stay in the scan's order (newest first, then by id).
        match self.sort {
            SortKey::Age => {}
            SortKey::Risk => {
                pending.sort_by_cached_key(|e| std::cmp::Reverse(policies.class_risk(&e.packet.action_class)));
            }
            SortKey::Class => pending.sort_by(|a, b| a.packet.action_class.cmp(&b.packet.action_class)),
            SortKey::Agent => pending.sort_by(|a, b| a.packet.agent.cmp(&b.packet.agent)),
        }
        let mut decided: Vec<DecidedRow> = self
            .decisions
            .iter()
            .map(|(id, d)| DecidedRow {
                id: id.clone(),
                decision: d.clone(),
                packet: decided_packets.get(id.as_str()).map(|p| Arc::clone(p)),
            })
            .filter(|r| {
                let p = r.packet.as_deref();
                filter.matches(
                    &[
                        &r.id,
                        p.map_or("", |p| &p.agent),
                        p.map_or("", |p| &p.action_class),
                        p.map_or("", |p| &p.summary),
                    ],
                    |f| match (f, p) {
                        (Field::Id, _) => Some(Cow::Borrowed(r.id.as_str())),
                        // A decided packet has a decision, not a state.
                        (Field::State, _) => None,
                        (_, Some(p)) => packet_field(&policies, p, f),
                        // The packet's file is gone: its fields are unknown.
                        (_, None) => Some(Cow::Borrowed("")),
                    },
                )
            })
            .collect();
        decided.sort_by_key(|r| std::cmp::Reverse(r.decision.chain_index));
        let invalid: Vec<InvalidFile> = self
            .snapshot
            .invalid
            .iter()
            .filter(|f| {
                let reason = f.reason.to_string();
                filter.matches(&[&f.name, &reason], |_| None)
            })
            .cloned()
            .collect();
        self.posteriors = self
            .all_posteriors
            .iter()
            .filter(|p| {
                filter.matches(&[&p.action_class, p.tier.as_str()], |f| match f {
                    Field::Class => Some(Cow::Borrowed(p.action_class.as_str())),
                    Field::Risk => Some(Cow::Borrowed(policies.class_risk(&p.action_class).as_str())),
                    _ => None,
                })
            })
            .cloned()
            .collect();
        self.notebooks = self
            .all_notebooks
            .iter()
            .filter(|n| {
                filter.matches(&[&n.id, n.level.as_str()], |f| {
                    (f == Field::Notebook).then_some(Cow::Borrowed(n.id.as_str()))
                })
            })
            .cloned()
            .collect();
        self.agents = self
            .assessment
            .monitor
            .agents
            .values()
            .filter(|a| {
                filter.matches(&[&a.agent, a.standing.as_str()], |f| {
                    (f == Field::Agent).then_some(Cow::Borrowed(a.agent.as_str()))
                })
            })
            .cloned()
            .collect();
        // Built only once the Audit view has been opened (its chain part comes from a job).
        self.audit = if self.audit_wanted {
            crate::audit::build(
                self.audit_chain.as_ref().clone(),
                &self.snapshot.receipts,
                &self.snapshot.uses.granted,
                &crate::audit::AuditFilter::default(),
            )
        } else {
            Vec::new()
        };
        self.audit.retain(|e| {
            let record = e.record.map(|r| r.to_string()).unwrap_or_default();
            filter.matches(&[&e.agent, &e.action, e.kind.word(), &e.decision, e.how.word(), &record], |f| match f {
                Field::Agent => Some(Cow::Borrowed(e.agent.as_str())),
                Field::Class => Some(Cow::Borrowed(e.action.as_str())),
                Field::Id => Some(Cow::Borrowed(e.packet_id.as_deref().unwrap_or_default())),
                _ => None,
            })
        });
        self.pending = pending;
        self.decided = decided;
        self.invalid = invalid;
        for (pane, id) in Pane::ALL.iter().zip(keep) {
            if let Some(id) = id
                && let Some(pos) = self.position_of(*pane, &id)
            {
                self.selected[*pane as usize] = pos;
            }
            self.selected[*pane as usize] = self.selection(*pane);
        }
    }

    fn selected_id(&self, pane: Pane) -> Option<String> {
        let i = self.selected[pane as usize];
        match pane {
            Pane::Pending => self.pending.get(i).map(|e| e.packet.id.clone()),
            Pane::Decided => self.decided.get(i).map(|r| r.id.clone()),
            Pane::Invalid => self.invalid.get(i).map(|f| f.name.clone()),
            Pane::Posteriors => self.posteriors.get(i).map(|p| p.action_class.clone()),
            Pane::Matrices => self.notebooks.get(i).map(|n| n.id.clone()),
            Pane::Agents => self.agents.get(i).map(|a| a.agent.clone()),
            Pane::Grants => self.grant_rows.get(i).map(|r| r.grant.grant_id.clone()),
            Pane::Audit => self.audit.get(i).map(audit_key),
        }
    }

    fn position_of(&self, pane: Pane, id: &str) -> Option<usize> {
        match pane {
            Pane::Pending => self.pending.iter().position(|e| e.packet.id == id),
            Pane::Decided => self.decided.iter().position(|r| r.id == id),
            Pane::Invalid => self.invalid.iter().position(|f| f.name == id),
            Pane::Posteriors => self.posteriors.iter().position(|p| p.action_class == id),
            Pane::Matrices => self.notebooks.iter().position(|n| n.id == id),
            Pane::Agents => self.agents.iter().position(|a| a.agent == id),
            Pane::Grants => self.grant_rows.iter().position(|r| r.grant.grant_id == id),
            Pane::Audit => self.audit.iter().position(|e| audit_key(e) == id),
        }
    }

    fn move_selection(&mut self, delta: isize) {
        let len = self.len(self.pane);
        if len == 0 {
            return;
        }
        let cur = self.selection(self.pane) as isize;
        let next = (cur + delta).clamp(0, len as isize - 1);
        self.selected[self.pane as usize] = next as usize;
    }
}

/// What keeps the Audit view's selection on its entry across rebuilds: the record number, or
/// the receipt's id off the chain.
fn audit_key(e: &crate::audit::AuditEntry) -> String {
    e.record.map_or_else(|| format!("r:{}", e.receipt_id.as_deref().unwrap_or_default()), |r| format!("#{r}"))
}

/// The filter's answer for each packet it was asked about under `needle`. A packet is immutable
/// and shared (`Arc`) from its parse on, so a scan that adds a few packets to many matches only
/// those. Keyed by the packet's address, and holding the packet so that the address is not
/// reused while the answer is kept.
#[derive(Debug, Clone, Default)]
struct FilterMemo {
    needle: String,
    /// The policies the answers were made with (a `risk:` term reads them), by address.
    policies: usize,
    hits: HashMap<usize, (Arc<Packet>, bool), foldhash::fast::RandomState>,
}

/// Whether `hay`, lowered as [`str::to_lowercase`] lowers it, contains `needle` (already
/// lowered). The filter runs over every packet per scan, so for an ASCII needle (ids, agents and
/// classes are ASCII) `hay` is neither lowered nor checked for ASCII: its bytes are searched,
/// ignoring ASCII case. That is exact: a window that matches an ASCII needle is itself ASCII,
/// and no character outside ASCII lowers to anything with ASCII in it but `İ` (U+0130, to
/// `i` + U+0307) and the Kelvin sign (U+212A, to `k`). Their first bytes (0xC4, 0xE2) send `hay`
/// to the full lowering when the needle has an `i` or a `k`.
pub(super) fn contains_folded(hay: &str, needle: &str) -> bool {
    if !needle.is_ascii() {
        return hay.to_lowercase().contains(needle);
    }
    let (h, n) = (hay.as_bytes(), needle.as_bytes());
    let Some((&first, rest)) = n.split_first() else { return true };
    // Only where the first letter is (in either case) is the rest compared.
    let found = memchr::memchr2_iter(first, first.to_ascii_uppercase(), h)
        .any(|at| h.len() - at > rest.len() && h[at + 1..at + 1 + rest.len()].eq_ignore_ascii_case(rest));
    if found {
        return true;
    }
    n.iter().any(|b| matches!(b, b'i' | b'k'))
        && memchr::memchr2(0xC4, 0xE2, h).is_some()
        && hay.to_lowercase().contains(needle)
}

/// A packet's field as a filter term reads it ([`Field::State`] is matched apart: it comes from
/// the assessment). An unset tool or notebook is empty.
fn packet_field<'a>(policies: &PolicySet, p: &'a Packet, f: Field) -> Option<Cow<'a, str>> {
    let governance = |get: fn(&Governance) -> Option<&String>| {
        Cow::Owned(Governance::of_packet(p).and_then(|g| get(&g).cloned()).unwrap_or_default())
    };
    Some(match f {
        Field::Agent => Cow::Borrowed(p.agent.as_str()),
        Field::Class => Cow::Borrowed(p.action_class.as_str()),
        Field::Risk => Cow::Borrowed(policies.class_risk(&p.action_class).as_str()),
        Field::Tool => governance(|g| g.tool.as_ref()),
        Field::Notebook => governance(|g| g.notebook.as_ref()),
        Field::Id => Cow::Borrowed(p.id.as_str()),
        Field::State => return None,
    })
}

/// Page size used by page up/down.
const PAGE: isize = 10;

/// Applies an action. Returns the effects to run. Every new status-line message is also kept in
/// the message log.
pub fn update(state: &mut State, action: Action) -> Vec<Effect> {
    let before = state.flash.clone();
    let mut fx = apply(state, action);
    fx.extend(super::notify::effects(state));
    fx.extend(super::notify::timeout_effects(state));
    if state.flash != before
        && let Some(f) = &state.flash
    {
        if state.log.len() >= LOG_LEN {
            state.log.pop_front();
        }
        state.log.push_back(LogEntry { at: state.now as i64, text: f.text.clone(), error: f.error });
    }
    fx
}

fn apply(state: &mut State, action: Action) -> Vec<Effect> {
    match action {
        Action::Key(key) => on_key(state, key),
        Action::Paste(text) => {
            if let Mode::Input { text: buf, .. } = &mut state.mode {
                // Pasted text may be copied from an agent's packet: no controls, bidi or
                // invisible characters go into a reason the principal signs.
                buf.extend(text.chars().filter(|c| !crate::protocol::text::is_unsafe(*c)));
            }
            vec![]
        }
        Action::Resize { width, height } => {
            state.viewport = Some((width, height));
            // The dialog is laid out again: its lines are not the lines that were seen. It
            // starts again from the top (what was read already stays read).
            if let Mode::Confirm(mut c) = state.mode.clone() {
                c.scroll = 0;
                c.seen = 0;
                measure_confirm(state, &mut c);
                state.mode = Mode::Confirm(c);
            }
            vec![]
        }
        Action::Drawn { width, height } => {
            if let Mode::Confirm(c) = &mut state.mode {
                let mut c = c.clone();
                seen_drawn(state, &mut c, width, height);
                state.mode = Mode::Confirm(c);
            }
            vec![]
        }
        Action::ScanUnchanged => vec![],
        Action::Assess => {
            state.ensure_assessed();
            vec![]
        }
        Action::Assessed(done) => {
            state.take_assessed(*done);
            vec![]
        }
        Action::AssessFailed(why) => {
            state.flash = Some(Flash { text: why, error: true });
            vec![]
        }
        Action::Tick(now) => {
            state.on_tick(now);
            vec![]
        }
        Action::SpoolChanged { chain } => {
            let mut fx = vec![Effect::Scan];
            if chain {
                fx.push(Effect::VerifyChain { force: false });
            }
            fx
        }
        Action::Scanned(snapshot) => {
            state.take_snapshot(snapshot);
            // The dialog signs the packet as it was shown: if the file changed or went away
            // meanwhile, cancel rather than sign something the principal is no longer looking at.
            if let Mode::Confirm(c) = &state.mode {
                for p in c.packets() {
                    let now = state.snapshot.packet(&p.id).map(|e| e.packet.content_hash.clone());
                    if now.as_deref() != Some(p.content_hash.as_str()) {
                        let what = if now.is_some() { "changed" } else { "disappeared" };
                        state.flash = Some(Flash {
                            text: format!(
                                "{} {what} while you were confirming: nothing was signed; review it again",
                                p.id
                            ),
                            error: true,
                        });
                        state.mode = Mode::Normal;
                        break;
                    }
                }
            }
            vec![]
        }
        Action::ChainProgress { read, total } => {
            // A report that raced the end of its verification is stale.
            if state.chain_progress.is_some() || state.chain_from_checkpoint || state.chain == ChainState::Unknown {
                state.chain_progress = Some((read, total));
            }
            vec![]
        }
        Action::ChainCheckpointed(view) => {
            // A full verification that already finished is newer: keep it.
            if state.chain_progress.is_none() && !matches!(state.chain, ChainState::Unknown) {
                return vec![];
            }
            state.chain_from_checkpoint = true;
            state.chain_progress.get_or_insert((0, 0));
            apply_chain_view(state, *view);
            vec![]
        }
        Action::ChainVerified(view) => {
            state.chain_progress = None;
            state.chain_from_checkpoint = false;
            apply_chain_view(state, *view);
            // The audit follows the chain once it has been asked for.
            if state.audit_wanted { vec![Effect::Audit] } else { vec![] }
        }
        Action::Signed(result) => {
            state.signing = false;
            match result {
                Ok(s) => {
                    // The principal's decision is a receipt: it moves the posterior at once (the
                    // chain's next verification replaces this row with the same one from the chain).
                    let decided_at = time::OffsetDateTime::from_unix_timestamp(state.now as i64)
                        .map_or_else(|_| String::new(), crate::protocol::clock::format_rfc3339);
                    // One approval towards a quorum is no decision yet, and no evidence.
                    let partial = s.cosigned.as_ref().is_some_and(|c| !c.met());
                    if let Some(row) = state.snapshot.packet(&s.packet_id).filter(|_| !partial).and_then(|e| {
                        let class = state.policies.normalize(&e.packet.action_class);
                        crate::store::spool::decision_evidence(&class, s.verdict, &decided_at, Some(&s.packet_id))
                    }) {
                        state.chain_evidence.push(row);
                        state.recompute_graduation();
                    }
                    let word = if s.verdict == Verdict::Approve { "✓ approved" } else { "✗ refused" };
                    let (grant, error) = match &s.grant {
                        None => (String::new(), false),
                        Some(Ok(id)) => (format!(" · granted {id}"), false),
                        Some(Err(e)) => (format!(" · the grant was NOT recorded: {e}"), true),
                    };
                    let cosigned = s.cosigned.as_ref().map(|c| format!(" · {}", c.describe())).unwrap_or_default();
                    state.flash = Some(Flash {
                        text: format!(
                            "{word} {}{cosigned} · record {} {}{grant}",
                            s.packet_id,
                            s.chain_index,
                            short_hash(&s.entry_hash)
                        ),
                        error,
                    });
                }
                Err(e) => state.flash = Some(Flash { text: format!("signing failed: {e}"), error: true }),
            }
            vec![Effect::VerifyChain { force: false }, Effect::Scan]
        }
        Action::SignedBatch(result) => {
            state.signing = false;
            match result {
                Ok(done) => {
                    let decided_at = time::OffsetDateTime::from_unix_timestamp(state.now as i64)
                        .map_or_else(|_| String::new(), crate::protocol::clock::format_rfc3339);
                    let mut moved = false;
                    for s in &done {
                        state.marked.remove(&s.packet_id);
                        if let Some(row) = state.snapshot.packet(&s.packet_id).and_then(|e| {
                            let class = state.policies.normalize(&e.packet.action_class);
                            crate::store::spool::decision_evidence(&class, s.verdict, &decided_at, Some(&s.packet_id))
                        }) {
                            state.chain_evidence.push(row);
                            moved = true;
                        }
                    }
                    if moved {
                        state.recompute_graduation();
                    }
                    let word = if done.first().is_some_and(|s| s.verdict == Verdict::Approve) {
                        "✓ approved"
                    } else {
                        "✗ refused"
                    };
                    let (first, last) = (done.first().map(|s| s.chain_index), done.last().map(|s| s.chain_index));
                    state.flash = Some(Flash {
                        text: format!(
                            "{word} {} {} · records {}–{} · one sync",
                            done.len(),
                            super::ui::plural(done.len(), "packet"),
                            first.unwrap_or(0),
                            last.unwrap_or(0)
                        ),
                        error: false,
                    });
                }
                Err(e) => state.flash = Some(Flash { text: format!("signing failed: {e}"), error: true }),
            }
            vec![Effect::VerifyChain { force: false }, Effect::Scan]
        }
        Action::TimeoutRefused { packet_id, after, result } => {
            state.signing = false;
            let after = super::notify::human(after);
            match result {
                // A system decision is no evidence: no row is added, no posterior moves.
                Ok(Some(s)) => {
                    state.flash = Some(Flash {
                        text: format!(
                            "{packet_id} refused: timed out after {after} (signed as a system decision) · record {} {}",
                            s.chain_index,
                            short_hash(&s.entry_hash)
                        ),
                        error: false,
                    });
                }
                // Decided elsewhere first: nothing to say.
                Ok(None) => {}
                Err(e) => {
                    state.flash = Some(Flash {
                        text: format!(
                            "{packet_id} timed out after {after}, but its system refusal was not signed: {e} \
                             (not tried again; the agent was told `timeout`; refuse it yourself)"
                        ),
                        error: true,
                    });
                }
            }
            vec![Effect::VerifyChain { force: false }, Effect::Scan]
        }
        Action::ControlSigned(result) => {
            state.signing = false;
            state.flash = Some(match result {
                Ok(s) => Flash {
                    text: format!(
                        "✓ recorded {} {} · record {} {} · applies from the next gate call{}",
                        s.kind.as_str(),
                        s.subject,
                        s.chain_index,
                        short_hash(&s.entry_hash),
                        if s.refused > 0 {
                            format!(" · {} pending {} refused", s.refused, super::ui::plural(s.refused, "packet"))
                        } else {
                            String::new()
                        }
                    ),
                    error: false,
                },
                Err(e) => Flash { text: format!("control not recorded: {e}"), error: true },
            });
            vec![Effect::VerifyChain { force: false }, Effect::Scan]
        }
        Action::GrantRevoked(result) => {
            state.signing = false;
            state.flash = Some(match result {
                Ok((id, index, hash)) => Flash {
                    text: format!(
                        "✓ revoked {id} · record {index} {} · the next call it covered waits for you",
                        short_hash(&hash)
                    ),
                    error: false,
                },
                Err(e) => Flash { text: format!("revocation not recorded: {e}"), error: true },
            });
            vec![Effect::VerifyChain { force: false }, Effect::Scan]
        }
        Action::ScanFailed(e) | Action::Error(e) => {
            state.flash = Some(Flash { text: e, error: true });
            vec![]
        }
        Action::VerifyFailed(e) => {
            state.chain = ChainState::Unknown;
            state.chain_progress = None;
            state.chain_from_checkpoint = false;
            state.flash =
                Some(Flash { text: format!("{e}; signing is refused until the chain can be verified"), error: true });
            vec![]
        }
        Action::Audited(Ok(entries)) => {
            state.audit_chain = entries;
            state.refresh();
            vec![]
        }
        Action::Audited(Err(e)) => {
            state.flash = Some(Flash { text: format!("audit: {e}"), error: true });
            vec![]
        }
        Action::Mouse(m) => on_mouse(state, m),
        Action::GrantDialog(scope) => grant_dialog(state, &scope),
        Action::Quit => {
            state.quit = true;
            vec![Effect::Quit]
        }
    }
}

/// A mouse event in the normal mode: a click on a view's tab switches to it, a click on a row
/// selects it, the wheel moves the selection (three rows a notch). Elsewhere, and in dialogs,
/// the mouse does nothing (nothing is ever signed by a click).
fn on_mouse(state: &mut State, m: MouseInput) -> Vec<Effect> {
    if state.mode != Mode::Normal {
        return vec![];
    }
    let before = (state.pane, state.selection(state.pane));
    let mut fx = vec![];
    match m.kind {
        MouseKind::ScrollUp if state.zoomed => state.detail_scroll = state.detail_scroll.saturating_sub(3),
        MouseKind::ScrollDown if state.zoomed => {
            state.detail_scroll = state.detail_scroll.saturating_add(3).min(60_000)
        }
        MouseKind::ScrollUp => state.move_selection(-3),
        MouseKind::ScrollDown => state.move_selection(3),
        MouseKind::Click => {
            let Some((w, h)) = state.viewport else { return vec![] };
            match super::ui::hit(state, w, h, m.column, m.row) {
                Some(super::ui::Hit::Tab(pane)) => {
                    let cmd = super::command::VIEWS.iter().find(|(_, p)| *p == pane).map_or("pending", |(n, _)| *n);
                    fx = on_normal_command(state, cmd);
                }
                Some(super::ui::Hit::Row(i)) => state.selected[state.pane as usize] = i,
                None => {}
            }
        }
    }
    if (state.pane, state.selection(state.pane)) != before {
        state.detail_scroll = 0;
    }
    fx
}

/// [`State::ran_on_grant`] over the state's parts (for use while another part is borrowed).
fn ran_on_grant<'a>(
    uses: &crate::store::spool::Uses,
    grants: &'a crate::protocol::grant::GrantBook,
    policies: &PolicySet,
    p: &Packet,
) -> Option<&'a Arc<crate::protocol::grant::Grant>> {
    let id = uses.granted.get(&p.id)?;
    let g = grants.get(id).or_else(|| grants.revoked(id).map(|(g, _)| g))?;
    let facts = crate::protocol::grant::CallFacts::of_packet(p, policies)?;
    g.covers(&facts, f64::NEG_INFINITY).then_some(g)
}

/// Takes a verified chain view: the chain state (and the broken-chain alert when the first
/// finding is new), decisions, evidence and controls; cancels a control dialog the chain no
/// longer admits.
fn apply_chain_view(state: &mut State, view: ChainView) {
    let ChainView { report, decisions, evidence, controls, grants, cosigning, .. } = view;
    state.cosigning = cosigning;
    state.chain = if report.is_valid() {
        state.chain_alert_seen = false;
        ChainState::Valid { total: report.total, root: report.root_hash.clone() }
    } else {
        let first = report.findings[0].clone();
        let changed = !matches!(&state.chain, ChainState::Broken { first: f, .. } if *f == first);
        if changed {
            state.chain_alert_seen = false;
            if state.mode == Mode::Normal {
                state.mode = Mode::ChainAlert;
            }
        }
        ChainState::Broken { total: report.total, first, count: report.findings.len() }
    };
    state.decisions = decisions;
    let mut records: HashMap<(String, String), AgentClassRecord> = HashMap::new();
    // A system decision (a timeout) is nobody's judgement of the agent: not in its record.
    for d in state.decisions.values().filter(|d| d.system.is_none()) {
        let r = records.entry((d.agent.clone(), state.policies.normalize(&d.action_class))).or_default();
        match d.verdict {
            Verdict::Approve => r.approved += 1,
            Verdict::Refuse => {
                r.refused += 1;
                if r.last_refusal.as_ref().is_none_or(|l| l.chain_index < d.chain_index) {
                    r.last_refusal = Some(d.clone());
                }
            }
        }
    }
    state.agent_records = records;
    state.chain_evidence = evidence;
    state.controls = controls;
    state.grants = grants;
    state.recompute_grants();
    state.recompute_graduation();
    // A control dialog confirms a change from what the chain said: if the chain now says
    // otherwise (another signature moved the notebook or the agent), sign nothing.
    let open = match &state.mode {
        Mode::ControlConfirm(c) => Some(&c.input),
        Mode::Input { purpose: InputPurpose::ControlReason(i) | InputPurpose::TypedConfirm(i), .. } => Some(i),
        _ => None,
    };
    if let Some(i) = open.filter(|i| !state.controls.admits(i, state.now)) {
        state.flash = Some(Flash {
            text: format!(
                "{} changed in the chain while you were confirming: nothing was signed; look again",
                i.subject
            ),
            error: true,
        });
        state.mode = Mode::Normal;
    }
}

/// `sha256:1234abcd…` shortened for one line.
#[must_use]
pub fn short_hash(h: &str) -> String {
    let body = h.strip_prefix("sha256:").unwrap_or(h);
    format!("{}…", &body[..body.len().min(12)])
}

fn on_key(state: &mut State, key: Key) -> Vec<Effect> {
    // A key acknowledges an informational flash; errors stay until the next key too.
    state.flash = None;
    match state.mode.clone() {
        Mode::Normal => on_normal(state, key),
        Mode::Help => {
            let (w, h) = state.viewport.unwrap_or((super::ui::MIN_WIDTH, super::ui::MIN_HEIGHT));
            let most = super::ui::help_scroll_limit(&state.keymap, w, h);
            match state.keymap.command("help", &key) {
                Some("down") => state.help_scroll = (state.help_scroll + 1).min(most),
                Some("up") => state.help_scroll = state.help_scroll.saturating_sub(1),
                Some(_) => {
                    state.mode = Mode::Normal;
                    state.help_scroll = 0;
                }
                None => {}
            }
            vec![]
        }
        Mode::Log => {
            state.mode = Mode::Normal;
            vec![]
        }
        Mode::ChainAlert => {
            // Any key acknowledges, after which the alert does not return for this finding.
            state.chain_alert_seen = true;
            state.mode = Mode::Normal;
            vec![]
        }
        Mode::Confirm(mut c) => {
            if state.keymap.command("confirm", &key) == Some("scope") {
                cycle_scope(state, &mut c);
                state.mode = Mode::Confirm(c);
                return vec![];
            }
            if let Some(cmd @ ("down" | "up" | "page_down" | "page_up" | "top" | "zoom")) =
                state.keymap.command("confirm", &key)
            {
                scroll_confirm(state, &mut c, cmd);
                state.mode = Mode::Confirm(c);
                return vec![];
            }
            match dialog_key(state, &key, &mut c.focus) {
                Some(true) if !c.unlocked() => {
                    c.focus = Button::Cancel;
                    state.mode = Mode::Confirm(c);
                    state.flash = Some(Flash {
                        text: "nothing was signed: read the whole dialog first (j/pgdn to its end, or z to zoom)"
                            .into(),
                        error: true,
                    });
                    vec![]
                }
                Some(true) => sign(state, c),
                Some(false) => cancelled(state),
                None => {
                    // Sign cannot take the focus until the dialog has been read.
                    if !c.unlocked() {
                        c.focus = Button::Cancel;
                    }
                    state.mode = Mode::Confirm(c);
                    vec![]
                }
            }
        }
        Mode::ControlConfirm(mut c) => match dialog_key(state, &key, &mut c.focus) {
            Some(true) => sign_control(state, c.input),
            Some(false) => cancelled(state),
            None => {
                state.mode = Mode::ControlConfirm(c);
                vec![]
            }
        },
        Mode::Input { purpose, mut text } => {
            if purpose == InputPurpose::Command
                && let Some(fx) = command_key(state, &key, &mut text)
            {
                return fx;
            }
            match state.keymap.command("input", &key) {
                Some("submit") => {
                    state.mode = Mode::Normal;
                    return submit(state, purpose, text);
                }
                Some("cancel") => {
                    state.mode = Mode::Normal;
                    match purpose {
                        InputPurpose::Filter => {
                            state.filter.clear();
                            state.refresh();
                        }
                        InputPurpose::RefuseReason(_) | InputPurpose::RefuseBatchReason(_) | InputPurpose::Command => {}
                        InputPurpose::ControlReason(_)
                        | InputPurpose::TypedConfirm(_)
                        | InputPurpose::Elevation(_)
                        | InputPurpose::RevokeReason(_) => {
                            return cancelled(state);
                        }
                    }
                    return vec![];
                }
                Some("erase") => {
                    text.pop();
                }
                Some("clear") => text.clear(),
                _ => {
                    if let ratatui::crossterm::event::KeyCode::Char(c) = key.code
                        && key.mods.is_empty()
                        && !c.is_control()
                        && text.chars().count() < 500
                    {
                        text.push(c);
                    }
                }
            }
            if purpose == InputPurpose::Filter {
                // Live filtering as the principal types.
                state.filter.clone_from(&text);
                state.refresh();
            }
            state.mode = Mode::Input { purpose, text };
            vec![]
        }
    }
}

fn on_normal(state: &mut State, key: Key) -> Vec<Effect> {
    let Some(cmd) = state.keymap.command("normal", &key).map(str::to_owned) else { return vec![] };
    // In the zoomed packet view the movement keys scroll the packet instead of the list.
    if state.zoomed {
        let step = match cmd.as_str() {
            "down" => Some(1),
            "up" => Some(-1),
            "page_down" => Some(10),
            "page_up" => Some(-10),
            "top" => Some(-60_000),
            "bottom" => Some(60_000),
            _ => None,
        };
        if let Some(d) = step {
            state.detail_scroll = (i32::from(state.detail_scroll) + d).clamp(0, 60_000) as u16;
            return vec![];
        }
    }
    let before = (state.pane, state.selection(state.pane));
    let fx = on_normal_command(state, &cmd);
    if (state.pane, state.selection(state.pane)) != before {
        state.detail_scroll = 0;
    }
    fx
}

fn on_normal_command(state: &mut State, cmd: &str) -> Vec<Effect> {
    match cmd {
        "down" => state.move_selection(1),
        "up" => state.move_selection(-1),
        "top" => state.selected[state.pane as usize] = 0,
        "bottom" => state.selected[state.pane as usize] = state.len(state.pane).saturating_sub(1),
        "page_down" => state.move_selection(PAGE),
        "page_up" => state.move_selection(-PAGE),
        "open"
            if (state.selected_packet().is_some()
                || matches!(state.pane, Pane::Invalid | Pane::Posteriors | Pane::Audit)
                    && state.len(state.pane) > 0) =>
        {
            state.zoomed = true;
        }
        "back" => {
            if state.zoomed {
                state.zoomed = false;
            } else if !state.filter.is_empty() {
                state.filter.clear();
                state.refresh();
            }
        }
        "next_pane" | "prev_pane" => {
            let i = Pane::ALL.iter().position(|p| *p == state.pane).unwrap_or(0);
            let n = Pane::ALL.len();
            state.pane = Pane::ALL[if cmd == "next_pane" { (i + 1) % n } else { (i + n - 1) % n }];
            if matches!(state.pane, Pane::Matrices | Pane::Agents | Pane::Grants) {
                state.zoomed = false;
            }
            if state.pane == Pane::Audit && !state.audit_wanted {
                state.audit_wanted = true;
                return vec![Effect::Audit];
            }
        }
        "pending" => state.pane = Pane::Pending,
        "decided" => state.pane = Pane::Decided,
        "invalid" => state.pane = Pane::Invalid,
        "posteriors" => state.pane = Pane::Posteriors,
        "matrices" | "agents" | "grants" => {
            state.pane = match cmd {
                "matrices" => Pane::Matrices,
                "agents" => Pane::Agents,
                _ => Pane::Grants,
            };
            state.zoomed = false;
        }
        "revoke" => return start_revoke(state),
        "audit" => {
            state.pane = Pane::Audit;
            if !state.audit_wanted {
                state.audit_wanted = true;
                return vec![Effect::Audit];
            }
        }
        "command" => {
            state.completions.clear();
            state.mode = Mode::Input { purpose: InputPurpose::Command, text: String::new() };
        }
        "approve" | "refuse" => return start_decision(state, cmd == "approve"),
        "raise" | "lower" => return start_trust_change(state, cmd == "raise"),
        "quarantine" => return start_agent_control(state, ControlKind::Quarantine),
        "release" => return start_agent_control(state, ControlKind::Release),
        "kill" => return start_agent_control(state, ControlKind::Kill),
        "elevate" => return start_agent_control(state, ControlKind::Elevate),
        "filter" => {
            state.mode = Mode::Input { purpose: InputPurpose::Filter, text: state.filter.clone() };
        }
        "sort" | "mark" | "mark_all" | "unmark_all" if state.pane != Pane::Pending => {
            let what = if cmd == "sort" { "sorting orders" } else { "selecting marks packets of" };
            state.flash = Some(Flash { text: format!("{what} the pending list (press 1)"), error: true });
        }
        "sort" => {
            // The packet under the cursor stays under it: `refresh` keeps the selection by id.
            state.sort = state.sort.next();
            state.refresh();
            state.flash = Some(Flash { text: format!("pending sorted by {}", sort_words(state.sort)), error: false });
        }
        "mark" => {
            if let Some(id) = state.selected_packet().map(|p| p.id.clone()) {
                if !state.marked.remove(&id) {
                    state.marked.insert(id);
                }
                // Down to the next packet, so that space runs down the list (not while one
                // packet is read whole: what is shown stays).
                if !state.zoomed {
                    state.move_selection(1);
                }
            }
        }
        "mark_all" => {
            state.marked.extend(state.pending.iter().map(|e| e.packet.id.clone()));
            let shown = state.pending.len();
            state.flash = Some(Flash {
                text: format!("{} selected: every packet shown ({shown}) · V clears the selection", state.marked.len()),
                error: false,
            });
        }
        "unmark_all" if !state.marked.is_empty() => {
            state.flash = Some(Flash { text: format!("{} unselected", state.marked.len()), error: false });
            state.marked.clear();
        }
        "chain" => {
            if matches!(state.chain, ChainState::Broken { .. }) {
                state.mode = Mode::ChainAlert;
            } else {
                state.flash = Some(Flash { text: chain_line(&state.chain), error: false });
            }
            return vec![Effect::VerifyChain { force: true }];
        }
        "help" => state.mode = Mode::Help,
        "log" => state.mode = Mode::Log,
        "quit" => {
            state.quit = true;
            return vec![Effect::Quit];
        }
        _ => {}
    }
    vec![]
}

/// How the pending list is ordered, in words.
#[must_use]
pub fn sort_words(key: SortKey) -> &'static str {
    match key {
        SortKey::Age => "age, newest first",
        SortKey::Risk => "risk, highest first",
        SortKey::Class => "action class",
        SortKey::Agent => "agent",
    }
}

/// One line describing the chain state.
#[must_use]
pub fn chain_line(chain: &ChainState) -> String {
    match chain {
        ChainState::Unknown => "chain: verifying…".into(),
        ChainState::Valid { total, root } => {
            format!(
                "✓ chain verified: {total} {}, head {}",
                super::ui::plural(*total, "record"),
                root.as_deref().map_or("(empty)".into(), short_hash)
            )
        }
        ChainState::Broken { first, count, .. } => format!("✗ CHAIN BROKEN: {first} ({count} findings)"),
    }
}

fn start_decision(state: &mut State, approve: bool) -> Vec<Effect> {
    if state.pane != Pane::Pending {
        state.flash = Some(Flash { text: "select a pending packet to decide (press 1)".into(), error: true });
        return vec![];
    }
    if !state.marked.is_empty() {
        return start_batch_decision(state, approve);
    }
    let Some(packet) = state.selected_packet() else {
        state.flash = Some(Flash { text: "no pending packet selected".into(), error: true });
        return vec![];
    };
    if let Err(why) = state.can_sign() {
        if matches!(state.chain, ChainState::Broken { .. }) && !state.chain_alert_seen {
            state.mode = Mode::ChainAlert;
        }
        state.flash = Some(Flash { text: why, error: true });
        return vec![];
    }
    if let Some(t) = state.changed_at(&packet.id).filter(|t| state.now - t < SETTLE_SECONDS) {
        let wait = (SETTLE_SECONDS - (state.now - t)).ceil();
        state.flash = Some(Flash {
            text: format!("{} just changed: read it again (decisions open in {wait:.0}s)", packet.id),
            error: true,
        });
        return vec![];
    }
    if approve && let Some(after) = state.packet_timed_out(&packet) {
        state.flash = Some(Flash {
            text: format!(
                "{} timed out after {} (policy.toml [timeouts]): it can only be refused",
                packet.id,
                super::notify::human(after)
            ),
            error: true,
        });
        return vec![];
    }
    if approve
        && let Some(expires) = packet.expires_at.as_deref()
        && crate::protocol::clock::unix_seconds(expires).is_none_or(|t| t <= state.now)
    {
        state.flash =
            Some(Flash { text: format!("{} expired at {expires}: it can only be refused", packet.id), error: true });
        return vec![];
    }
    if approve && let Some(text) = approval_forbidden(state, &packet) {
        state.flash = Some(Flash { text, error: true });
        return vec![];
    }
    if approve && let Some(c) = state.cosigned_by_me(&packet) {
        state.flash = Some(Flash {
            text: format!("{} has your approval already ({}): it waits for another principal", packet.id, c.describe()),
            error: true,
        });
        return vec![];
    }
    state.mode = if approve {
        confirm_mode(state, Confirm::new(packet, Verdict::Approve, None))
    } else {
        Mode::Input { purpose: InputPurpose::RefuseReason(packet), text: String::new() }
    };
    vec![]
}

/// `a`/`r` with a selection: one dialog for every selected packet (in the pending list's order,
/// then the selected packets the filter hides, in the spool's order). The batch is all or
/// nothing: when any packet cannot be approved now (it just changed, timed out, expired, or the
/// composed verdict forbids it), no dialog opens and the status line says which and why.
fn start_batch_decision(state: &mut State, approve: bool) -> Vec<Effect> {
    if let Err(why) = state.can_sign() {
        if matches!(state.chain, ChainState::Broken { .. }) && !state.chain_alert_seen {
            state.mode = Mode::ChainAlert;
        }
        state.flash = Some(Flash { text: why, error: true });
        return vec![];
    }
    let packets = selected_packets(state);
    if packets.is_empty() {
        state.flash = Some(Flash { text: "no pending packet selected".into(), error: true });
        return vec![];
    }
    let mut problems = Vec::new();
    for p in &packets {
        if let Some(t) = state.changed_at(&p.id).filter(|t| state.now - t < SETTLE_SECONDS) {
            let wait = (SETTLE_SECONDS - (state.now - t)).ceil();
            problems.push(format!("{} just changed (decisions open in {wait:.0}s)", p.id));
        } else if approve && let Some(after) = state.packet_timed_out(p) {
            problems.push(format!("{} timed out after {}", p.id, super::notify::human(after)));
        } else if approve
            && let Some(expires) = p.expires_at.as_deref()
            && crate::protocol::clock::unix_seconds(expires).is_none_or(|t| t <= state.now)
        {
            problems.push(format!("{} expired at {expires}", p.id));
        } else if approve && let Some(text) = approval_forbidden(state, p) {
            problems.push(text);
        } else if approve && let Some(q) = state.policies.cosign(&p.action_class) {
            problems.push(format!("{} needs the approval of {}: approve it on its own", p.id, q.describe()));
        }
    }
    if let Some(first) = problems.first() {
        let n = problems.len();
        state.flash = Some(Flash {
            text: format!(
                "nothing to sign: {n} of the {} selected cannot be {} now ({first}{}); unselect {} (space) and try again",
                packets.len(),
                if approve { "approved" } else { "refused" },
                if n > 1 { format!("; and {} more", n - 1) } else { String::new() },
                if n > 1 { "them" } else { "it" },
            ),
            error: true,
        });
        return vec![];
    }
    state.mode = if approve {
        match Confirm::batch(packets, Verdict::Approve, None) {
            Some(c) => confirm_mode(state, c),
            None => Mode::Normal,
        }
    } else {
        Mode::Input { purpose: InputPurpose::RefuseBatchReason(packets), text: String::new() }
    };
    vec![]
}

/// The selected packets, in the pending list's order, then those the filter hides (in the
/// spool's order).
fn selected_packets(state: &State) -> Vec<Arc<Packet>> {
    let mut out: Vec<Arc<Packet>> =
        state.pending.iter().filter(|e| state.marked.contains(&e.packet.id)).map(|e| Arc::clone(&e.packet)).collect();
    let shown: BTreeSet<&str> = out.iter().map(|p| p.id.as_str()).collect();
    let hidden: Vec<Arc<Packet>> = state
        .snapshot
        .packets
        .iter()
        .filter(|e| state.marked.contains(&e.packet.id) && !shown.contains(e.packet.id.as_str()))
        .map(|e| Arc::clone(&e.packet))
        .collect();
    out.extend(hidden);
    out
}

/// Why an approval of `packet` is refused, if it is: what the packet declares, then the composed
/// verdict of every model (strictest wins), saying blocked or human_only. The decisive model's
/// reason is given.
fn approval_forbidden(state: &mut State, packet: &Packet) -> Option<String> {
    // Never on a stale assessment: a packet the models have not seen yet is assessed now.
    state.ensure_assessed();
    let forbidden = |s: &DecisionState| matches!(s, DecisionState::Blocked | DecisionState::HumanOnly);
    if let Some(s) = packet.state.filter(forbidden) {
        return Some(format!("{} is {s}: an agent may not execute it even with approval; refuse it with r", packet.id));
    }
    let v = state.verdict(&packet.id)?;
    let (why, remedy) = v.why_not_approvable()?;
    Some(format!(
        "{} is {} by {} ({why}); to change that: {remedy}. It can only be refused (r)",
        packet.id,
        v.state,
        v.decisive.as_str()
    ))
}

fn sign(state: &mut State, c: Confirm) -> Vec<Effect> {
    state.mode = Mode::Normal;
    if let Err(why) = state.can_sign() {
        state.flash = Some(Flash { text: why, error: true });
        return vec![];
    }
    if !c.batch.is_empty() {
        return sign_batch(state, c);
    }
    // The verdict may have changed while the dialog was open (the agent was quarantined, an
    // elevation expired, a precondition changed): check it again at the moment of signing.
    if c.verdict == Verdict::Approve
        && let Some(text) = approval_forbidden(state, &c.packet)
    {
        state.flash = Some(Flash { text: format!("nothing was signed: {text}"), error: true });
        return vec![];
    }
    state.signing = true;
    state.flash = Some(Flash { text: format!("signing {} {}…", c.verdict.as_str(), c.packet.id), error: false });
    let publisher =
        state.snapshot.packet(&c.packet.id).filter(|e| e.packet.content_hash == c.packet.content_hash).map(|e| e.owner);
    let stands_in_for = match c.verdict {
        Verdict::Approve => state.verdict(&c.packet.id).map(PacketVerdict::stands_in_for).unwrap_or_default(),
        Verdict::Refuse => Vec::new(),
    };
    let grant = c.grant.filter(|_| c.verdict == Verdict::Approve);
    vec![Effect::Sign { packet: c.packet, publisher, verdict: c.verdict, reason: c.reason, stands_in_for, grant }]
}

/// *Sign* in a batch dialog: every approval checked again at the moment of signing (all or
/// nothing), then one [`Effect::SignBatch`].
fn sign_batch(state: &mut State, c: Confirm) -> Vec<Effect> {
    if c.verdict == Verdict::Approve {
        for p in &c.batch {
            if let Some(text) = approval_forbidden(state, p) {
                state.flash = Some(Flash { text: format!("nothing was signed: {text}"), error: true });
                return vec![];
            }
        }
    }
    state.signing = true;
    state.flash = Some(Flash {
        text: format!(
            "signing {} of {} {}…",
            c.verdict.as_str(),
            c.batch.len(),
            super::ui::plural(c.batch.len(), "packet")
        ),
        error: false,
    });
    let items = c
        .batch
        .iter()
        .map(|p| BatchSign {
            packet: Arc::clone(p),
            publisher: state
                .snapshot
                .packet(&p.id)
                .filter(|e| e.packet.content_hash == p.content_hash)
                .map(|e| e.owner),
            stands_in_for: match c.verdict {
                Verdict::Approve => state.verdict(&p.id).map(PacketVerdict::stands_in_for).unwrap_or_default(),
                Verdict::Refuse => Vec::new(),
            },
        })
        .collect();
    vec![Effect::SignBatch { items, verdict: c.verdict, reason: c.reason }]
}

/// A key in a sign/cancel dialog: `Some(true)` signs, `Some(false)` cancels, `None` stays (the
/// focus may have moved).
fn dialog_key(state: &State, key: &Key, focus: &mut Button) -> Option<bool> {
    match state.keymap.command("confirm", key) {
        Some("confirm") => Some(true),
        Some("cancel") => Some(false),
        Some("toggle") => {
            *focus = if *focus == Button::Cancel { Button::Sign } else { Button::Cancel };
            None
        }
        Some("activate") => Some(*focus == Button::Sign),
        _ => None,
    }
}

/// The mode of a newly opened sign dialog, measured at the terminal's size.
fn confirm_mode(state: &State, mut c: Confirm) -> Mode {
    measure_confirm(state, &mut c);
    Mode::Confirm(c)
}

/// Keeps the dialog's scroll within its content at the terminal's size.
fn measure_confirm(state: &State, c: &mut Confirm) {
    let Some((w, h)) = state.viewport else { return };
    let (total, visible) = super::dialog::confirm_extent(state, c, w, h);
    c.scroll = c.scroll.min(total.saturating_sub(visible));
}

/// A frame of the dialog was drawn at `width`×`height`: the lines it showed extend what has been
/// seen when they follow what was seen without a gap. When the last line has been seen that way,
/// the dialog is read. A frame below the smallest size the console draws shows nothing.
fn seen_drawn(state: &State, c: &mut Confirm, width: u16, height: u16) {
    if state.viewport != Some((width, height)) {
        // The layout `update` measured is not the one drawn: count nothing from this frame.
        return;
    }
    let (total, visible) = super::dialog::confirm_extent(state, c, width, height);
    if visible == 0 {
        return;
    }
    let scroll = c.scroll.min(total.saturating_sub(visible));
    if scroll <= c.seen {
        c.seen = c.seen.max(scroll + visible).min(total);
    }
    if c.seen >= total {
        c.read = true;
    }
}

/// A scrolling key in the sign dialog: a line, a page (one line of overlap), the top, or zoom
/// (the dialog takes the whole terminal, laid out again from the top).
fn scroll_confirm(state: &State, c: &mut Confirm, cmd: &str) {
    let visible = state.viewport.map_or(0, |(w, h)| super::dialog::confirm_extent(state, c, w, h).1);
    let page = visible.saturating_sub(1).max(1);
    match cmd {
        "down" => c.scroll += 1,
        "up" => c.scroll = c.scroll.saturating_sub(1),
        "page_down" => c.scroll += page,
        "page_up" => c.scroll = c.scroll.saturating_sub(page),
        "top" => c.scroll = 0,
        "zoom" => {
            c.zoomed = !c.zoomed;
            c.scroll = 0;
            c.seen = 0;
        }
        _ => {}
    }
    measure_confirm(state, c);
}

/// The scopes `s` offers in an approval dialog, in order: once, this session, an hour, a working
/// day, the call's own argument as a pattern, and the class up to the call's own amount and
/// recipients' domains (never wider: a wider pattern or constraint is typed with `:grant pattern
/// GLOB` or `:grant class …`). Only those the rules allow for this packet ([`crate::protocol::grant::prepare`]).
fn scope_choices(state: &State, p: &Packet) -> Vec<crate::protocol::grant::GrantInput> {
    use crate::protocol::grant::{GrantOptions, Narrowing, ScopeRequest, ToolPattern};
    let Ok(now) = time::OffsetDateTime::from_unix_timestamp(state.now as i64) else { return Vec::new() };
    let at = crate::protocol::clock::format_rfc3339(now);
    let mut asks = vec![ScopeRequest::Session];
    for h in ["1h", "8h"] {
        if let Ok(t) = crate::protocol::grant::parse_until(h, now) {
            asks.push(ScopeRequest::Until(t));
        }
    }
    if let Some(f) = crate::protocol::grant::CallFacts::of_packet(p, &state.policies)
        && let Some(arg) = f.argument
        && !arg.contains(['*', '?'])
    {
        asks.push(ScopeRequest::Pattern(ToolPattern { tool: f.tool.clone(), argument: Some(arg) }));
    }
    if let Some(f) = crate::protocol::grant::CallFacts::of_packet(p, &state.policies) {
        let n = Narrowing {
            // Only a whole amount: the grant's maximum is a whole number, never above the call's.
            max_amount: f.amount.filter(|a| a.fract() == 0.0 && *a <= 9.0e15).map(|a| a as u64),
            domain_allowlist: f.recipient_domains.unwrap_or_default(),
        };
        if n.max_amount.is_some() || !n.domain_allowlist.is_empty() {
            asks.push(ScopeRequest::Class(n));
        }
    }
    asks.iter()
        .filter_map(|a| {
            crate::protocol::grant::prepare(p, &state.policies, a, &GrantOptions::default(), &at).ok().flatten()
        })
        .collect()
}

/// `s` in an approval dialog of one packet: the next scope ([`scope_choices`]), back to once
/// after the last. The dialog must then be read again before it can be signed.
fn cycle_scope(state: &mut State, c: &mut Confirm) {
    if c.verdict != Verdict::Approve || !c.batch.is_empty() {
        state.flash = Some(Flash { text: "a grant comes with the approval of one packet".into(), error: true });
        return;
    }
    let choices = scope_choices(state, &c.packet);
    if choices.is_empty() {
        state.flash = Some(Flash {
            text: format!("no grant can cover {} (human-only, destructive or not a tool call): once only", c.packet.id),
            error: true,
        });
        return;
    }
    let same = |a: &crate::protocol::grant::GrantInput, b: &crate::protocol::grant::GrantInput| {
        a.scope == b.scope && a.expires_at == b.expires_at
    };
    let next = match &c.grant {
        None => Some(0),
        Some(g) => choices.iter().position(|x| same(x, g)).map(|i| i + 1).filter(|i| *i < choices.len()),
    };
    c.grant = next.map(|i| Box::new(choices[i].clone()));
    set_grant_read_again(state, c);
}

/// The dialog changed what it signs: it is read again from the top before *Sign* unlocks.
fn set_grant_read_again(state: &mut State, c: &mut Confirm) {
    c.read = false;
    c.seen = 0;
    c.scroll = 0;
    c.focus = Button::Cancel;
    measure_confirm(state, c);
    state.flash = Some(Flash {
        text: match &c.grant {
            Some(g) => format!("with a grant ({}): read the dialog again, then sign", g.scope.as_str()),
            None => "once: this call only".into(),
        },
        error: false,
    });
}

/// `:grant session|until TIME|pattern GLOB`: the approval dialog of the selected pending packet,
/// with that grant (checked by [`crate::protocol::grant::prepare`]; nothing opens when it is refused).
fn grant_dialog(state: &mut State, scope: &str) -> Vec<Effect> {
    let text = scope.trim();
    let asked = match text.split_once(char::is_whitespace) {
        Some((kind @ ("until" | "pattern" | "class"), rest)) => format!("{kind}:{}", rest.trim()),
        _ => text.to_owned(),
    };
    let Ok(now) = time::OffsetDateTime::from_unix_timestamp(state.now as i64) else { return vec![] };
    let request = match crate::protocol::grant::ScopeRequest::parse(&asked, now) {
        Ok(r) => r,
        Err(e) => {
            state.flash = Some(Flash { text: e, error: true });
            return vec![];
        }
    };
    let fx = start_decision(state, true);
    let Mode::Confirm(mut c) = std::mem::replace(&mut state.mode, Mode::Normal) else { return fx };
    if !c.batch.is_empty() {
        state.flash = Some(Flash {
            text: "a grant comes with the approval of one packet: clear the selection (V)".into(),
            error: true,
        });
        return fx;
    }
    let at = crate::protocol::clock::format_rfc3339(now);
    match crate::protocol::grant::prepare(
        &c.packet,
        &state.policies,
        &request,
        &crate::protocol::grant::GrantOptions::default(),
        &at,
    ) {
        Ok(grant) => {
            c.grant = grant.map(Box::new);
            set_grant_read_again(state, &mut c);
            state.mode = Mode::Confirm(c);
        }
        Err(e) => state.flash = Some(Flash { text: format!("no grant: {e}"), error: true }),
    }
    fx
}

/// `x` in the Grants view: asks why, then signs the revocation of the selected live grant.
fn start_revoke(state: &mut State) -> Vec<Effect> {
    if state.pane != Pane::Grants {
        state.flash = Some(Flash { text: "revoking is for grants: press 7 for the Grants view".into(), error: true });
        return vec![];
    }
    let Some(row) = state.grant_rows.get(state.selection(Pane::Grants)) else { return vec![] };
    if row.status != super::grants::GrantStatus::Live {
        state.flash = Some(Flash {
            text: format!("{} is {}: it covers nothing already", row.grant.grant_id, row.status.as_str()),
            error: true,
        });
        return vec![];
    }
    if let Err(e) = state.can_sign() {
        state.flash = Some(Flash { text: e, error: true });
        return vec![];
    }
    state.mode = Mode::Input { purpose: InputPurpose::RevokeReason(row.grant.grant_id.clone()), text: String::new() };
    vec![]
}

fn cancelled(state: &mut State) -> Vec<Effect> {
    state.mode = Mode::Normal;
    state.flash = Some(Flash { text: "cancelled: nothing was signed".into(), error: false });
    vec![]
}

/// A submitted text line (the mode is already back to normal).
/// The keys the command line handles itself: Tab completes, Up/Down walk the history. `None`
/// for any other key (edited as in every text line). Changes `text` in place and keeps the
/// command line open.
fn command_key(state: &mut State, key: &Key, text: &mut String) -> Option<Vec<Effect>> {
    use ratatui::crossterm::event::KeyCode;
    if !key.mods.is_empty() {
        return None;
    }
    match key.code {
        KeyCode::Tab => {
            let (line, options) = super::command::complete(text, &state.themes);
            *text = line;
            state.completions = if options.len() > 1 { options } else { Vec::new() };
        }
        KeyCode::Up => {
            if let Some(line) = state.history.older(text) {
                *text = line;
            }
        }
        KeyCode::Down => {
            if let Some(line) = state.history.newer() {
                *text = line;
            }
        }
        _ => {
            state.completions.clear();
            return None;
        }
    }
    state.mode = Mode::Input { purpose: InputPurpose::Command, text: std::mem::take(text) };
    Some(vec![])
}

/// Runs a `:` command: the same work as its key. An unknown command or a bad argument does
/// nothing and says why in the status line.
fn run_command(state: &mut State, line: &str) -> Vec<Effect> {
    use super::command::Command;
    state.completions.clear();
    state.history.push(line);
    let command = match super::command::parse(line) {
        Ok(c) => c,
        Err(e) => {
            state.flash = Some(Flash { text: e, error: true });
            return vec![];
        }
    };
    let before = (state.pane, state.selection(state.pane));
    let fx = match command {
        Command::Approve => on_normal_command(state, "approve"),
        Command::Refuse(reason) => {
            let fx = on_normal_command(state, "refuse");
            // With a reason, straight to the same dialog `r` and a typed reason open.
            match (reason, state.mode.clone()) {
                (Some(r), Mode::Input { purpose: p @ InputPurpose::RefuseReason(_), .. }) => submit(state, p, r),
                _ => fx,
            }
        }
        Command::Filter(text) => {
            state.filter = text;
            state.refresh();
            vec![]
        }
        Command::Sort(key) => {
            state.sort = key;
            state.refresh();
            state.flash = Some(Flash { text: format!("pending sorted by {}", sort_words(key)), error: false });
            vec![]
        }
        Command::Theme(name) => {
            // The event loop loads it and says so in the status line if it cannot.
            state.flash =
                Some(Flash { text: format!("theme {}", crate::protocol::text::inert(&name, 40)), error: false });
            vec![Effect::Theme(name)]
        }
        Command::Grant(scope) => apply(state, Action::GrantDialog(scope)),
        Command::Quit => on_normal_command(state, "quit"),
        Command::Help => on_normal_command(state, "help"),
        Command::View(pane) => {
            let name = super::command::VIEWS.iter().find(|(_, p)| *p == pane).map_or("pending", |(n, _)| *n);
            on_normal_command(state, name)
        }
    };
    if (state.pane, state.selection(state.pane)) != before {
        state.detail_scroll = 0;
    }
    fx
}

fn submit(state: &mut State, purpose: InputPurpose, text: String) -> Vec<Effect> {
    match purpose {
        InputPurpose::Command => return run_command(state, &text),
        InputPurpose::Filter => {
            state.filter = text;
            state.refresh();
        }
        InputPurpose::RefuseReason(packet) => {
            if text.trim().is_empty() {
                state.mode = Mode::Input { purpose: InputPurpose::RefuseReason(packet), text };
                state.flash = Some(Flash { text: "a refusal needs a reason".into(), error: true });
            } else {
                state.mode = confirm_mode(state, Confirm::new(packet, Verdict::Refuse, Some(text.trim().to_owned())));
            }
        }
        InputPurpose::RefuseBatchReason(packets) => {
            if text.trim().is_empty() {
                state.mode = Mode::Input { purpose: InputPurpose::RefuseBatchReason(packets), text };
                state.flash = Some(Flash { text: "a refusal needs a reason".into(), error: true });
            } else if let Some(c) = Confirm::batch(packets, Verdict::Refuse, Some(text.trim().to_owned())) {
                state.mode = confirm_mode(state, c);
            }
        }
        InputPurpose::ControlReason(mut input) => {
            let reason = text.trim();
            if reason.is_empty() && matches!(input.kind, ControlKind::Quarantine | ControlKind::Kill) {
                let what = if input.kind == ControlKind::Kill { "a kill" } else { "a quarantine" };
                state.flash = Some(Flash { text: format!("{what} needs a reason"), error: true });
                state.mode = Mode::Input { purpose: InputPurpose::ControlReason(input), text };
            } else {
                input.reason = Some(reason.to_owned()).filter(|r| !r.is_empty());
                state.mode = Mode::ControlConfirm(ControlConfirm { input, focus: Button::Cancel });
            }
        }
        InputPurpose::RevokeReason(grant_id) => {
            let reason = text.trim().to_owned();
            if reason.is_empty() {
                state.flash = Some(Flash { text: "a revocation needs a reason".into(), error: true });
                state.mode = Mode::Input { purpose: InputPurpose::RevokeReason(grant_id), text };
                return vec![];
            }
            if let Err(e) = state.can_sign() {
                state.flash = Some(Flash { text: e, error: true });
                return vec![];
            }
            state.signing = true;
            return vec![Effect::RevokeGrant { grant_id, reason }];
        }
        InputPurpose::TypedConfirm(input) => {
            if text.trim() == input.subject {
                return sign_control(state, input);
            }
            state.flash = Some(Flash {
                text: format!("the typed name is not {}: nothing was signed", input.subject),
                error: true,
            });
        }
        InputPurpose::Elevation(agent) => {
            let mut parts = text.split_whitespace();
            let ring = parts.next().and_then(|r| r.parse::<u8>().ok()).filter(|r| (1..=2).contains(r));
            let ttl = parts.next().and_then(|t| t.parse::<i64>().ok()).filter(|t| *t > 0);
            let (Some(ring), Some(ttl), None) = (ring, ttl, parts.next()) else {
                state.flash = Some(Flash {
                    text: "type the ring (1 or 2) and the TTL in seconds, e.g. `2 300`".into(),
                    error: true,
                });
                state.mode = Mode::Input { purpose: InputPurpose::Elevation(agent), text };
                return vec![];
            };
            let mut input = state.control_input(ControlKind::Elevate, &agent);
            // The Agent Hypervisor's rules, checked now against what the console shows; the
            // runner checks again against the spool and chain when it signs.
            let view = ChainView {
                decisions: state.decisions.clone(),
                controls: state.controls.clone(),
                ..ChainView::default()
            };
            match crate::store::spool::elevation_fields(
                &state.snapshot,
                &view,
                &state.policies,
                &agent,
                ring,
                ttl,
                &input.decided_at,
            ) {
                Ok(fields) => {
                    input.fields = fields;
                    state.mode = Mode::ControlConfirm(ControlConfirm { input, focus: Button::Cancel });
                }
                Err(e) => state.flash = Some(Flash { text: format!("elevation denied: {e}"), error: true }),
            }
        }
    }
    vec![]
}

impl State {
    /// A control on `subject` dated now (the runner re-stamps it when it signs).
    fn control_input(&self, kind: ControlKind, subject: &str) -> ControlInput {
        let decided_at = time::OffsetDateTime::from_unix_timestamp(self.now as i64)
            .map_or_else(|_| String::new(), crate::protocol::clock::format_rfc3339);
        ControlInput { kind, subject: subject.to_owned(), fields: serde_json::Map::new(), reason: None, decided_at }
    }
}

/// `+`/`-` on a notebook in the matrices view: one level up or down, confirmed by a dialog, or by
/// typing the notebook's name to raise it to `autonomous`.
fn start_trust_change(state: &mut State, raise: bool) -> Vec<Effect> {
    if state.pane != Pane::Matrices {
        state.flash = Some(Flash { text: "select a notebook in the matrices view (press 5)".into(), error: true });
        return vec![];
    }
    let Some(id) = state.selected_notebook().map(|n| n.id.clone()) else {
        state.flash = Some(Flash {
            text: "no notebook: packets name one in governance.notebook, or the chain sets a level".into(),
            error: true,
        });
        return vec![];
    };
    if let Err(why) = state.can_sign() {
        state.flash = Some(Flash { text: why, error: true });
        return vec![];
    }
    let from = state.controls.notebook_trust(&id);
    let i = NotebookTrust::ALL.iter().position(|l| *l == from).unwrap_or(0);
    let to =
        if raise { NotebookTrust::ALL.get(i + 1) } else { i.checked_sub(1).and_then(|j| NotebookTrust::ALL.get(j)) };
    let Some(&to) = to else {
        let word = if raise { "raise" } else { "lower" };
        state.flash = Some(Flash { text: format!("{id} is already {from}: nothing to {word}"), error: true });
        return vec![];
    };
    let mut input = state.control_input(ControlKind::TrustSet, &id);
    input.fields.insert("level".into(), serde_json::json!(to.as_str()));
    input.fields.insert("previous".into(), serde_json::json!(from.as_str()));
    state.mode = if NotebookTrust::requires_typed_confirmation(from, to) {
        Mode::Input { purpose: InputPurpose::TypedConfirm(input), text: String::new() }
    } else {
        Mode::ControlConfirm(ControlConfirm { input, focus: Button::Cancel })
    };
    vec![]
}

/// `Q`/`R`/`K`/`E` on an agent in the agents view: a reason (or the elevation's ring and TTL)
/// first, then the dialog.
fn start_agent_control(state: &mut State, kind: ControlKind) -> Vec<Effect> {
    if state.pane != Pane::Agents {
        state.flash = Some(Flash { text: "select an agent in the agents view (press 6)".into(), error: true });
        return vec![];
    }
    let Some(agent) = state.selected_agent().map(|a| a.agent.clone()) else {
        state.flash = Some(Flash { text: "no agent selected".into(), error: true });
        return vec![];
    };
    if let Err(why) = state.can_sign() {
        state.flash = Some(Flash { text: why, error: true });
        return vec![];
    }
    let input = state.control_input(kind, &agent);
    if !state.controls.admits(&input, state.now) {
        let standing = state.controls.standing(&agent);
        let text = match kind {
            ControlKind::Elevate if standing == AgentStanding::Active => {
                format!("{agent} already has an elevation in force")
            }
            ControlKind::Elevate => format!("{agent} is {}: release it before elevating it", standing.as_str()),
            _ => format!("{agent} is already {}: nothing to change", standing.as_str()),
        };
        state.flash = Some(Flash { text, error: true });
        return vec![];
    }
    state.mode = if kind == ControlKind::Elevate {
        Mode::Input { purpose: InputPurpose::Elevation(agent), text: "2 300".into() }
    } else {
        Mode::Input { purpose: InputPurpose::ControlReason(input), text: String::new() }
    };
    vec![]
}

fn sign_control(state: &mut State, input: ControlInput) -> Vec<Effect> {
    state.mode = Mode::Normal;
    if let Err(why) = state.can_sign() {
        state.flash = Some(Flash { text: why, error: true });
        return vec![];
    }
    state.signing = true;
    state.flash = Some(Flash { text: format!("signing {} {}…", input.kind.as_str(), input.subject), error: false });
    vec![Effect::Control(input)]
}

#[cfg(test)]
mod tests {
    use super::contains_folded;

    proptest::proptest! {
        // The filter's search finds exactly what lowering both sides and searching finds (the
        // needle comes lowered), ASCII or not, with the two characters that lower to ASCII
        // (U+0130 and the Kelvin sign U+212A) and others that share their first bytes.
        #[test]
        fn folded_search_is_lowered_contains(
            hay in "[a-ckiIKA-C\u{e9}\u{c9}\u{130}\u{131}\u{212a}\u{2122}\u{307} ]{0,24}",
            needle in "[a-ckiIKA-C\u{e9}\u{307}]{0,4}",
        ) {
            let needle = needle.to_lowercase();
            proptest::prop_assert_eq!(contains_folded(&hay, &needle), hay.to_lowercase().contains(&needle));
        }
    }
}
