//! Governing one call against a spool: publish the call's packet, judge it with the
//! composed verdict from the spool's verified chain, and wait for the principal's signed decision
//! when a person must decide. The hooks and the gateway are thin surfaces over this; `warrant
//! propose --wait` shares its wait ([`wait_for_decision`]).
//!
//! Fail closed everywhere: every error is an [`Outcome::Deny`] or an `Err` that the surfaces turn
//! into a deny; nothing here ever answers `Allow` for a packet it could not judge.

use serde_json::{Value, json};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use warrant_protocol::calls::{Classification, ToolCall};
use warrant_protocol::decision::Verdict;
use warrant_protocol::graduation::policy::PolicySet;
use warrant_protocol::keys::PinnedKeys;
use warrant_protocol::ladder::ActionPrecondition;
use warrant_protocol::packet::DecisionState;
use warrant_store::prelude::*;
use warrant_store::spool::{self, Scanner, Spool};

mod gitconfig;
mod governor;
mod live;
mod owners;
pub mod paths;
mod wait;

pub use governor::{CORRECTED_RUN_WITHIN, Governor};
pub use live::Live;
#[cfg(feature = "jetstream")]
pub use wait::wait_for_store_decision;
pub use wait::{Waited, wait_for_decision};

/// Why a call could not be governed (each is a deny for the agent).
#[derive(Debug, thiserror::Error)]
pub enum GovernError {
    /// The spool directory does not exist.
    #[error("no spool at {0}: create it with `warrant init` (a missing spool is never an allow)")]
    NoSpool(PathBuf),
    /// No principal key is pinned, so no decision could ever verify.
    #[error("no principal key is pinned in {0}: pin the principal's key (`warrant keys pin`) first")]
    NoPinnedKey(PathBuf),
    /// The call's packet id exists with other content.
    #[error("packet {0} already exists with another call in it; refusing to reuse it")]
    Conflict(String),
    /// The packet this call wrote is not a valid packet (a defect, or the spool was tampered with).
    #[error("packet {id} is not valid: {reason}")]
    InvalidPacket {
        /// The packet id.
        id: String,
        /// Why.
        reason: String,
    },
    /// The policy files.
    #[error("{0}")]
    Policy(#[from] warrant_protocol::graduation::policy::PolicyError),
    /// The pinned keys file.
    #[error("{0}")]
    Keys(#[from] warrant_store::key_files::KeyError),
    /// The chain.
    #[error("{0}")]
    Chain(#[from] warrant_store::chain_file::ChainError),
    /// I/O.
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// The answer for a call.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Run it: the gate allows it on its own, or the principal approved it.
    Allow {
        /// The packet.
        packet_id: String,
        /// Why, in words.
        reason: String,
        /// The principal signed an approval (not the gate on its own): of this packet, or a grant.
        by_principal: bool,
        /// The principal's grant that allowed it ([`warrant_protocol::grant`]), if one did.
        grant: Option<String>,
        /// Approved as corrected: the input the call runs with instead of the one proposed (the
        /// corrected action's `input`, from the decision file that verified). `None`: the call
        /// runs as proposed.
        corrected: Option<Box<Value>>,
    },
    /// A person must decide: the packet waits in the console.
    Hold {
        /// The packet.
        packet_id: String,
        /// The composed verdict's state (`review_required`, `human_only`, `deferred`).
        state: DecisionState,
        /// Why, in words.
        reason: String,
        /// What would let it run on its own, if anything (Trust Graduation's path).
        graduation: Option<Value>,
    },
    /// Do not run it.
    Deny {
        /// The packet, if one was published.
        packet_id: Option<String>,
        /// `blocked`, `refused`, `timeout`, `expired`, `quarantined`, `killed`,
        /// `precondition_failed` (and the gateway's `cancelled`).
        status: &'static str,
        /// Why, in words the agent can act on.
        reason: String,
        /// What would change it, if anything.
        remedy: Option<String>,
    },
}

impl Outcome {
    /// The packet id, if any.
    #[must_use]
    pub fn packet_id(&self) -> Option<&str> {
        match self {
            Outcome::Allow { packet_id, .. } | Outcome::Hold { packet_id, .. } => Some(packet_id),
            Outcome::Deny { packet_id, .. } => packet_id.as_deref(),
        }
    }

    /// The reason, in words, with the remedy when there is one.
    #[must_use]
    pub fn message(&self) -> String {
        match self {
            Outcome::Allow { reason, .. } | Outcome::Hold { reason, .. } => reason.clone(),
            Outcome::Deny { reason, remedy: Some(r), .. } => format!("{reason} ({r})"),
            Outcome::Deny { reason, .. } => reason.clone(),
        }
    }
}

/// A published call: its packet and what it is.
#[derive(Debug, Clone)]
pub struct Submitted {
    /// The packet id.
    pub packet_id: String,
    /// The packet's `content_hash` (what a decision must have signed).
    pub content_hash: String,
    /// The agent.
    pub agent: String,
    /// When it was published (the since of kill signals).
    pub at: time::OffsetDateTime,
    /// The classification.
    pub classification: Classification,
    /// The preconditions of the packet's contract as published, with the values observed when
    /// the call was proposed (`expected_at_approval`; `null` where nothing could be observed).
    pub preconditions: Vec<ActionPrecondition>,
    /// The answer now.
    pub outcome: Outcome,
    /// The class's `[timeouts]` entry in `policy.toml`, if it has one.
    pub timeout: Option<warrant_protocol::graduation::policy::ClassTimeout>,
    /// The quorum an approval of the class needs (`[cosign]` in `policy.toml`), if any: a
    /// decision file releases the call only with that many co-signatures.
    pub quorum: Option<warrant_protocol::decision::Quorum>,
}

impl Submitted {
    /// How long a host whose own wait is `host` (`--wait`) waits for the principal: capped by the
    /// class's `refuse_after` (`wait = "forever"`, or no entry, lets the host's wait stand).
    #[must_use]
    pub fn wait_for(&self, host: Duration) -> Duration {
        self.timeout.map_or(host, |t| t.cap(host))
    }
}

/// How often a held call is judged again while it waits ([`Governor::wait`]).
pub const REJUDGE_EVERY: Duration = Duration::from_secs(2);

/// How long a call the principal's approval allowed waits for the decision file the chain
/// already holds the approval of ([`Governor::recheck_before_run`]): the principal's process
/// writes it right after the chain record and the checkpoint, so a judgement of the chain in
/// between sees the approval a moment before its file.
pub const DECISION_FILE_GRACE: Duration = Duration::from_secs(2);

/// The policy set a hook or the gateway governs with: `<config_dir>/policy.toml` and the spool's
/// ([`PolicySet::load`]); when another user owns the spool (the principal, with agents running
/// as their own users), the spool's alone, which must be that user's own file
/// ([`PolicySet::load_owned`]), so an agent cannot loosen the tool table from its own
/// configuration directory.
///
/// # Errors
/// [`GovernError::Io`] when the spool cannot be read; policy errors.
pub fn load_policies(spool: &Spool, config_dir: &Path) -> Result<PolicySet, GovernError> {
    use std::os::unix::fs::MetadataExt as _;
    // The directory itself, through a symbolic link the agent may own.
    let principal = std::fs::metadata(spool.root())?.uid();
    let owner = (principal != rustix::process::geteuid().as_raw()).then_some(principal);
    Ok(PolicySet::load_owned(config_dir, Some(spool.root()), owner)?)
}

/// The `_warrant` object the gateway returns and the hooks log: status, reason, packet id,
/// graduation path and what would unblock the call.
#[must_use]
pub fn warrant_object(o: &Outcome) -> Value {
    match o {
        Outcome::Allow { packet_id, reason, .. } => {
            json!({"status": "allowed", "reason": reason, "packet_id": packet_id})
        }
        Outcome::Hold { packet_id, state, reason, graduation } => json!({
            "status": "held", "state": state.as_str(), "reason": reason, "packet_id": packet_id,
            "graduationPath": graduation,
            "unblock": "the principal approves the packet in warrant",
        }),
        Outcome::Deny { packet_id, status, reason, remedy } => json!({
            "status": status, "reason": reason, "packet_id": packet_id, "unblock": remedy,
        }),
    }
}
