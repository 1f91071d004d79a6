//! The console's state and its Elm-style `update`: terminal keys, watcher events, timer ticks
//! and effect results all arrive as one [`Action`]; [`update`] changes the [`State`] and returns
//! the [`Effect`]s for the runner to execute. Nothing here does I/O, so it is tested directly,
//! with one exception: the assessment ([`warrant_engine::monitor::assess`], run when the snapshot, the
//! chain view or the minute changes, or once a second while an elevation counts down) observes
//! the preconditions of pending packets' contracts, reading the files and repositories they name.
//!
//! One concern per file, everything public re-exported here:
//!
//! - `action.rs`: [`Action`], [`Effect`] and what effects report back;
//! - `mode.rs`: the focused [`Pane`], the modal [`Mode`] and the dialogs' state;
//! - `state.rs`: [`State`], its rows and its read-only accessors;
//! - `assess.rs`: the assessment job ([`AssessJob`]) and what is recomputed from an assessment;
//! - `lists.rs`: the filtered, sorted lists and the selection;
//! - `update.rs`: [`update`], effect results and chain views taken into the state;
//! - `keys.rs`: keys by mode, the normal mode's commands, the mouse;
//! - `approval.rs`: the sign dialog, batch decisions and grant scopes;
//! - `controls.rs`: notebook trust, agent controls and grant revocation;
//! - `input.rs`: submitted text lines and the `:` command line.

mod action;
mod approval;
mod assess;
mod controls;
mod input;
mod keys;
mod lists;
mod mode;
mod state;
mod update;

pub use action::{Action, BatchSign, ControlSummary, Effect, MouseInput, MouseKind, SignedSummary};
pub use assess::{ASSESS_EVERY, AssessJob, Assessed};
pub(crate) use lists::contains_folded;
pub use mode::{Button, Confirm, ControlConfirm, InputPurpose, Mode, Pane, RevokeConfirm};
pub use state::{
    AgentClassRecord, ChainState, ClassPosterior, DecidedRow, Flash, LOG_LEN, LogEntry, NotebookRow, SETTLE_SECONDS,
    State,
};
pub use update::{chain_line, short_hash, sort_words, update};
