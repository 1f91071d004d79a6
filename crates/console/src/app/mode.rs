//! Where the principal is: the focused [`Pane`] and the modal [`Mode`], with the state of the
//! dialogs and text lines a mode holds ([`Confirm`], [`ControlConfirm`], [`InputPurpose`]).

use std::sync::Arc;
use warrant_protocol::control::ControlInput;
use warrant_protocol::decision::Verdict;
use warrant_protocol::packet::Packet;

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
    /// The principal's grants: scope in words, uses, end, signer ([`crate::grants`]).
    Grants,
    /// Every decision, control, key event, grant and allowed call in chain order, with how it
    /// was allowed ([`warrant_engine::audit`]); view 8 (7 is kept for the grants).
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
/// at the terminal's size ([`crate::dialog::confirm_extent`]) each time a frame is drawn
/// ([`Action::Drawn`](super::Action::Drawn)).
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
    /// A batch decision: every packet of the selection, in the pending list's
    /// order, `packet` being the first; empty for a decision on `packet` alone.
    pub batch: Vec<Arc<Packet>>,
    /// The grant signed with an approval of `packet` alone ([`warrant_protocol::grant`]; `s` cycles the
    /// scopes, `:grant` names one): `None` approves this call once.
    pub grant: Option<Box<warrant_protocol::grant::GrantInput>>,
    /// Which of the scopes `s` offers [`Self::grant`] is (its place in the list, never its
    /// expiry, which is computed from the clock at each press); `None` for once, or a grant
    /// `:grant` named.
    pub grant_choice: Option<usize>,
    /// Approve as corrected: the principal's correction, shown as its difference with the
    /// proposed action and signed with the approval; `None` for a plain decision.
    pub correction: Option<Box<warrant_protocol::correction::Correction>>,
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
            grant_choice: None,
            correction: None,
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
    /// The one reason for refusing every packet of the selection.
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
    /// The `:` command line ([`crate::command`]).
    Command,
}

/// The revocation of a grant, previewed before it is signed (`x`, a reason, then y/n).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RevokeConfirm {
    /// The grant.
    pub grant_id: String,
    /// Why, as typed.
    pub reason: String,
    /// The focused button (Cancel at first).
    pub focus: Button,
}

/// The mode: what the keys drive.
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
    /// The sign/cancel dialog for revoking a grant.
    RevokeConfirm(RevokeConfirm),
    /// The help overlay.
    Help,
    /// The broken-chain alert, which must be acknowledged.
    ChainAlert,
    /// The message log: the recent status-line messages, whole (any key closes it).
    Log,
}
