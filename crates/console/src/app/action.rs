//! What can happen to the console and what it asks the runner to do: the [`Action`] enum (keys,
//! the terminal, the watcher, the clock, effect results), the [`Effect`] enum the runner in
//! `console/mod.rs` executes, and the summaries effects report back.

use super::Assessed;
use crate::keymap::Key;
use std::sync::Arc;
use warrant_protocol::control::{ControlInput, ControlKind};
use warrant_protocol::decision::Verdict;
use warrant_protocol::packet::Packet;
use warrant_store::spool::{ChainView, Snapshot};

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
    /// instead ([`State::assess_job`](super::State::assess_job), then [`Action::Assessed`]); tests send this.
    Assess,
    /// An assessment made off the UI thread ([`AssessJob::run`](super::AssessJob::run)) is ready.
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
    /// The editor of a correction ([`Effect::Edit`]) exited: the packet (its id and content hash
    /// when the editor opened) and what the file held then, or why it could not be read.
    Edited {
        /// The packet's id.
        packet_id: String,
        /// Its content hash when the editor opened.
        content_hash: String,
        /// The file's text.
        text: Result<String, String>,
    },
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
    /// The audit of the verified chain ([`warrant_engine::audit::audit_chain`]), or why it could not be
    /// made.
    Audited(Result<Arc<Vec<warrant_engine::audit::AuditEntry>>, String>),
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
    pub cosigned: Option<warrant_store::spool::CosignProgress>,
    /// An approval as corrected: the size of the edit (the evidence it is).
    pub corrected: Option<warrant_protocol::correction::EditSize>,
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
        /// ([`warrant_protocol::verdict::PacketVerdict::stands_in_for`]); signed into the decision.
        stands_in_for: Vec<String>,
        /// The grant signed after the approval, if the principal chose a scope.
        grant: Option<Box<warrant_protocol::grant::GrantInput>>,
        /// Approve as corrected: the principal's correction of the proposed action, signed into
        /// the approval ([`warrant_store::spool::Corrected`]).
        correction: Option<Box<warrant_protocol::correction::Correction>>,
    },
    /// Sign and append the refusal of a timed-out packet as a system decision
    /// ([`warrant_store::spool::decide_system`], `"system": "timeout"`): its class has `[timeouts]
    /// sign_refusal = true` (`console::notify::timeout_effects`). Never evidence; never an approval.
    RefuseTimedOut {
        /// The packet as last scanned (its content hash is what gets signed).
        packet: Arc<Packet>,
        /// Its class's `refuse_after`.
        after: std::time::Duration,
        /// The reason signed ([`crate::notify::timeout_reason`]).
        reason: String,
    },
    /// Sign and append the revocation of a grant ([`warrant_store::spool::revoke_grant`]).
    RevokeGrant {
        /// The grant.
        grant_id: String,
        /// Why.
        reason: String,
    },
    /// Sign the same decision on each packet of the selection and append them as one group
    /// ([`warrant_store::spool::decide_many`]: one record per packet, one lock, one sync, all or nothing).
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
    /// spool and chain as they are then (see [`crate::execute_control`]).
    Control(ControlInput),
    /// New packets need the principal: ring the bell and run the notify command
    /// (`[notify]` in `config.toml`; see [`crate::notify`]).
    Notify {
        /// The new packets.
        packets: Vec<crate::notify::Notice>,
        /// Packets pending now.
        pending: usize,
    },
    /// The pending count changed: put it in the terminal's title (when `[notify] title`).
    Title {
        /// Packets pending now.
        pending: usize,
    },
    /// Build the audit of the chain ([`warrant_engine::audit::audit_chain`]) off the UI thread.
    Audit,
    /// Switch to this theme (`:theme`): a built-in or `<config>/themes/NAME.toml`; the runner
    /// reports a theme it cannot load as an error.
    Theme(String),
    /// Put `text` on the terminal's clipboard with OSC 52 (`y`, `Y`), which terminals and tmux
    /// pass to the system clipboard, over ssh too.
    Copy(String),
    /// Show `text` in `$PAGER` (`less` when unset), read-only: the pager reads it on its
    /// standard input, there is no file to edit; the console gives the terminal back to it and
    /// takes it again when it exits (`p`).
    Pager(String),
    /// Open `text` (a pending packet's proposed action, as JSON) in `$VISUAL`, else `$EDITOR`,
    /// else `vi`, in a file of the principal's own (0600, removed after); the console gives the
    /// terminal to the editor and takes it again when it exits, then reports
    /// [`Action::Edited`] (`e`, `:correct`).
    Edit {
        /// The packet as it was when the editor opened.
        packet: Arc<Packet>,
        /// What the editor starts with.
        text: String,
    },
    /// Leave.
    Quit,
}
