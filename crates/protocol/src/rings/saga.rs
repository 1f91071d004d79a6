//! Sagas: step and saga state machines, retries and reverse-order compensation
//! (agent-hypervisor.md §2.14; spec §15). No wall clock: executors report a timeout as
//! [`StepFailure::Timeout`] and retry delays are returned, not slept.

use super::{UnixSeconds, iso_utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::fmt;

/// The spec's retry constant. [`Saga::add_step`] callers pass their own; the reference's
/// `add_step` defaults to 0, not this (§5 item 14).
pub const SAGA_DEFAULT_MAX_RETRIES: u32 = 2;
/// Linear retry delay: attempt *n* (1-based) that failed is followed by `n ×` this many seconds.
pub const SAGA_DEFAULT_RETRY_DELAY_SECONDS: f64 = 1.0;
/// Default step timeout, in seconds.
pub const SAGA_DEFAULT_STEP_TIMEOUT_SECONDS: u64 = 300;

macro_rules! wire_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $v:ident = $s:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum $name { $($(#[$vm])* $v),+ }
        impl $name {
            /// Every state, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$v),+];
            /// The wire string.
            #[must_use]
            pub fn as_str(self) -> &'static str {
                match self { $($name::$v => $s),+ }
            }
        }
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

wire_enum!(
    /// A step's state (§2.14).
    StepState {
        /// Not started (or reset for a retry).
        Pending = "pending",
        /// Running.
        Executing = "executing",
        /// Done; compensable.
        Committed = "committed",
        /// Being undone.
        Compensating = "compensating",
        /// Undone (terminal).
        Compensated = "compensated",
        /// Could not be undone (terminal).
        CompensationFailed = "compensation_failed",
        /// The attempt failed.
        Failed = "failed",
    }
);

wire_enum!(
    /// A saga's state (§2.14).
    SagaState {
        /// Executing steps.
        Running = "running",
        /// Undoing committed steps.
        Compensating = "compensating",
        /// Done (terminal).
        Completed = "completed",
        /// Failed (terminal).
        Failed = "failed",
        /// A compensation failed (terminal).
        Escalated = "escalated",
    }
);

impl StepState {
    /// The states reachable in one transition: PENDING → EXECUTING; EXECUTING → COMMITTED |
    /// FAILED; COMMITTED → COMPENSATING; COMPENSATING → COMPENSATED | COMPENSATION_FAILED;
    /// FAILED → PENDING (the retry path); the two compensation outcomes are terminal.
    #[must_use]
    pub fn allowed(self) -> &'static [StepState] {
        use StepState::*;
        match self {
            Pending => &[Executing],
            Executing => &[Committed, Failed],
            Committed => &[Compensating],
            Compensating => &[Compensated, CompensationFailed],
            Failed => &[Pending],
            Compensated | CompensationFailed => &[],
        }
    }
}

impl SagaState {
    /// RUNNING → COMPENSATING | COMPLETED | FAILED; COMPENSATING → COMPLETED | FAILED |
    /// ESCALATED; the rest are terminal.
    #[must_use]
    pub fn allowed(self) -> &'static [SagaState] {
        use SagaState::*;
        match self {
            Running => &[Compensating, Completed, Failed],
            Compensating => &[Completed, Failed, Escalated],
            Completed | Failed | Escalated => &[],
        }
    }
}

/// A forbidden transition or an unknown saga/step: the reference's `SagaStateError`, e.g.
/// `"Invalid step transition: pending → committed. Allowed: ['executing']"`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SagaStateError(pub String);

fn transition_error<S: fmt::Display + Copy>(kind: &str, from: S, to: S, allowed: &[S]) -> SagaStateError {
    let allowed: Vec<String> = allowed.iter().map(|s| format!("'{s}'")).collect();
    SagaStateError(format!("Invalid {kind} transition: {from} → {to}. Allowed: [{}]", allowed.join(", ")))
}

/// Why an executor or compensator attempt failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepFailure {
    /// It failed with this message.
    Error(String),
    /// It ran past the step's timeout.
    Timeout,
}

/// A step that could not be executed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SagaError {
    /// A state rule (a step not PENDING, an unknown step).
    #[error(transparent)]
    State(#[from] SagaStateError),
    /// The last attempt failed with this message.
    #[error("{0}")]
    Failed(String),
    /// The last attempt timed out: `"Step {id} timed out after {n}s (attempt {a}/{total})"`.
    #[error("{0}")]
    Timeout(String),
}

/// One step (§2.14). Times are [`UnixSeconds`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SagaStep {
    /// `step:` + 8 hex digits of its 1-based position.
    pub step_id: String,
    /// The action.
    pub action_id: String,
    /// The agent running it.
    pub agent_did: String,
    /// The execute API.
    pub execute_api: String,
    /// The undo API; without one the step cannot be compensated.
    pub undo_api: Option<String>,
    /// Current state.
    pub state: StepState,
    /// Last error.
    pub error: Option<String>,
    /// Set on EXECUTING.
    pub started_at: Option<UnixSeconds>,
    /// Set on COMMITTED, FAILED, COMPENSATED, COMPENSATION_FAILED.
    pub completed_at: Option<UnixSeconds>,
    /// Seconds per attempt (reported in timeout messages).
    pub timeout_seconds: u64,
    /// Extra attempts after the first.
    pub max_retries: u32,
    /// 0-based index of the current (or last) attempt.
    pub retry_count: u32,
}

impl SagaStep {
    /// Moves to `to` at `now` if the table allows it.
    ///
    /// # Errors
    /// [`SagaStateError`] "Invalid step transition: …".
    pub fn transition(&mut self, to: StepState, now: UnixSeconds) -> Result<(), SagaStateError> {
        if !self.state.allowed().contains(&to) {
            return Err(transition_error("step", self.state, to, self.state.allowed()));
        }
        self.state = to;
        match to {
            StepState::Executing => self.started_at = Some(now),
            StepState::Committed | StepState::Compensated | StepState::CompensationFailed | StepState::Failed => {
                self.completed_at = Some(now);
            }
            StepState::Pending | StepState::Compensating => {}
        }
        Ok(())
    }

    /// FAILED → PENDING, clearing `error` and `completed_at`.
    ///
    /// # Errors
    /// From any state but FAILED.
    pub fn reset_for_retry(&mut self, now: UnixSeconds) -> Result<(), SagaStateError> {
        self.transition(StepState::Pending, now)?;
        self.error = None;
        self.completed_at = None;
        Ok(())
    }
}

/// The outcome of [`Saga::execute_step`]: the executor's value or the last error, and the delays
/// (seconds) the reference would have slept between attempts: 1.0, 2.0, … (linear).
#[derive(Debug, Clone, PartialEq)]
pub struct StepRun<T> {
    /// The value of the successful attempt, or why the step failed.
    pub result: Result<T, SagaError>,
    /// Attempts made.
    pub attempts: u32,
    /// One delay per retry.
    pub retry_delays: Vec<f64>,
}

/// A saga (§2.14).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Saga {
    /// The saga id.
    pub saga_id: String,
    /// Its session.
    pub session_id: String,
    /// Steps in order.
    pub steps: Vec<SagaStep>,
    /// State.
    pub state: SagaState,
    /// Creation time.
    pub created_at: UnixSeconds,
    /// Set on a terminal state.
    pub completed_at: Option<UnixSeconds>,
    /// Set on ESCALATED.
    pub error: Option<String>,
}

impl Saga {
    /// A RUNNING saga with no steps.
    #[must_use]
    pub fn new(saga_id: &str, session_id: &str, now: UnixSeconds) -> Self {
        Self {
            saga_id: saga_id.into(),
            session_id: session_id.into(),
            steps: Vec::new(),
            state: SagaState::Running,
            created_at: now,
            completed_at: None,
            error: None,
        }
    }

    /// Moves to `to` at `now` if the table allows it; terminal states set `completed_at`.
    ///
    /// # Errors
    /// [`SagaStateError`] "Invalid saga transition: …".
    pub fn transition(&mut self, to: SagaState, now: UnixSeconds) -> Result<(), SagaStateError> {
        if !self.state.allowed().contains(&to) {
            return Err(transition_error("saga", self.state, to, self.state.allowed()));
        }
        self.state = to;
        if to.allowed().is_empty() {
            self.completed_at = Some(now);
        }
        Ok(())
    }

    /// Appends a PENDING step and returns its id. The reference's defaults are
    /// `timeout_seconds` 300 and `max_retries` **0**.
    pub fn add_step(
        &mut self,
        action_id: &str,
        agent_did: &str,
        execute_api: &str,
        undo_api: Option<&str>,
        timeout_seconds: u64,
        max_retries: u32,
    ) -> String {
        let step_id = format!("step:{:08x}", self.steps.len() + 1);
        self.steps.push(SagaStep {
            step_id: step_id.clone(),
            action_id: action_id.into(),
            agent_did: agent_did.into(),
            execute_api: execute_api.into(),
            undo_api: undo_api.map(str::to_owned),
            state: StepState::Pending,
            error: None,
            started_at: None,
            completed_at: None,
            timeout_seconds,
            max_retries,
            retry_count: 0,
        });
        step_id
    }

    fn step_mut(&mut self, step_id: &str) -> Result<&mut SagaStep, SagaStateError> {
        let saga_id = self.saga_id.clone();
        self.steps
            .iter_mut()
            .find(|s| s.step_id == step_id)
            .ok_or_else(|| SagaStateError(format!("Step {step_id} not found in saga {saga_id}")))
    }

    /// Runs a step with `1 + max_retries` attempts (§2.14). Each attempt sets `retry_count`, goes
    /// EXECUTING and calls `executor(attempt)`: `Ok` → COMMITTED and done; `Err` → FAILED with the
    /// error recorded, then (if attempts remain) reset to PENDING with a delay of
    /// `1.0 × (attempt + 1)` seconds recorded. After the last attempt the step stays FAILED and
    /// the last error is returned (a timeout as [`SagaError::Timeout`]).
    pub fn execute_step<T>(
        &mut self,
        step_id: &str,
        mut executor: impl FnMut(u32) -> Result<T, StepFailure>,
        now: UnixSeconds,
    ) -> StepRun<T> {
        let mut run = StepRun { result: Err(SagaError::Failed(String::new())), attempts: 0, retry_delays: Vec::new() };
        let step = match self.step_mut(step_id) {
            Ok(s) => s,
            Err(e) => {
                run.result = Err(e.into());
                return run;
            }
        };
        let attempts = 1 + step.max_retries;
        for attempt in 0..attempts {
            step.retry_count = attempt;
            if let Err(e) = step.transition(StepState::Executing, now) {
                run.result = Err(e.into());
                return run;
            }
            run.attempts = attempt + 1;
            let error = match executor(attempt) {
                Ok(v) => {
                    // EXECUTING → COMMITTED is always allowed.
                    let _ = step.transition(StepState::Committed, now);
                    run.result = Ok(v);
                    return run;
                }
                Err(StepFailure::Error(msg)) => SagaError::Failed(msg),
                Err(StepFailure::Timeout) => SagaError::Timeout(format!(
                    "Step {step_id} timed out after {}s (attempt {}/{attempts})",
                    step.timeout_seconds,
                    attempt + 1
                )),
            };
            step.error = Some(error.to_string());
            // EXECUTING → FAILED and FAILED → PENDING are always allowed.
            let _ = step.transition(StepState::Failed, now);
            if attempt + 1 < attempts {
                let _ = step.reset_for_retry(now);
                run.retry_delays.push(SAGA_DEFAULT_RETRY_DELAY_SECONDS * f64::from(attempt + 1));
            }
            run.result = Err(error);
        }
        run
    }

    /// Compensates (§2.14): the saga goes COMPENSATING; each COMMITTED step, in **reverse**
    /// order, without an undo API is forced to COMPENSATION_FAILED with "No Undo_API available";
    /// otherwise it goes COMPENSATING and `compensator(step)` decides COMPENSATED or
    /// COMPENSATION_FAILED ("Compensation failed: …", "Compensation timed out after Ns"). Any
    /// failure makes the saga ESCALATED with "N step(s) failed compensation — Joint Liability
    /// penalty triggered"; otherwise COMPLETED. Returns the ids of the failed steps, in the order
    /// compensated.
    ///
    /// # Errors
    /// [`SagaStateError`] when the saga is not RUNNING.
    pub fn compensate(
        &mut self,
        mut compensator: impl FnMut(&SagaStep) -> Result<(), StepFailure>,
        now: UnixSeconds,
    ) -> Result<Vec<String>, SagaStateError> {
        self.transition(SagaState::Compensating, now)?;
        let mut failed = Vec::new();
        for step in self.steps.iter_mut().rev().filter(|s| s.state == StepState::Committed) {
            if step.undo_api.as_deref().is_none_or(str::is_empty) {
                // The reference sets the state directly, bypassing the table and timestamps.
                step.state = StepState::CompensationFailed;
                step.error = Some("No Undo_API available".into());
                failed.push(step.step_id.clone());
                continue;
            }
            // COMMITTED → COMPENSATING and COMPENSATING → either outcome are always allowed.
            let _ = step.transition(StepState::Compensating, now);
            match compensator(step) {
                Ok(()) => {
                    let _ = step.transition(StepState::Compensated, now);
                }
                Err(f) => {
                    step.error = Some(match f {
                        StepFailure::Error(msg) => format!("Compensation failed: {msg}"),
                        StepFailure::Timeout => format!("Compensation timed out after {}s", step.timeout_seconds),
                    });
                    let _ = step.transition(StepState::CompensationFailed, now);
                    failed.push(step.step_id.clone());
                }
            }
        }
        if failed.is_empty() {
            self.transition(SagaState::Completed, now)?;
        } else {
            self.transition(SagaState::Escalated, now)?;
            self.error =
                Some(format!("{} step(s) failed compensation — Joint Liability penalty triggered", failed.len()));
        }
        Ok(failed)
    }

    /// The reference's `to_dict`: `saga_id`, `session_id`, `state`, `created_at` and
    /// `completed_at` (Python ISO strings, or null), `error`, and per step `step_id`,
    /// `action_id`, `agent_did`, `state`, `error`.
    #[must_use]
    pub fn to_dict(&self) -> Value {
        let steps: Vec<Value> = self
            .steps
            .iter()
            .map(|s| {
                json!({"step_id": s.step_id, "action_id": s.action_id, "agent_did": s.agent_did,
                       "state": s.state, "error": s.error})
            })
            .collect();
        json!({
            "saga_id": self.saga_id,
            "session_id": self.session_id,
            "state": self.state,
            "created_at": iso_utc(self.created_at),
            "completed_at": self.completed_at.and_then(iso_utc),
            "error": self.error,
            "steps": steps,
        })
    }
}

/// Sagas by id, with ids from a counter (`saga:` + 8 hex digits).
#[derive(Debug, Clone, Default)]
pub struct SagaOrchestrator {
    sagas: Vec<Saga>,
    counter: u32,
}

impl SagaOrchestrator {
    /// Creates a RUNNING saga for `session_id` at `now`.
    pub fn create_saga(&mut self, session_id: &str, now: UnixSeconds) -> &mut Saga {
        self.counter = self.counter.wrapping_add(1);
        let saga = Saga::new(&format!("saga:{:08x}", self.counter), session_id, now);
        self.sagas.push(saga);
        let last = self.sagas.len() - 1;
        &mut self.sagas[last]
    }

    /// The saga with `saga_id`.
    #[must_use]
    pub fn saga(&self, saga_id: &str) -> Option<&Saga> {
        self.sagas.iter().find(|s| s.saga_id == saga_id)
    }

    /// Sagas still RUNNING or COMPENSATING.
    #[must_use]
    pub fn active_sagas(&self) -> Vec<&Saga> {
        self.sagas.iter().filter(|s| matches!(s.state, SagaState::Running | SagaState::Compensating)).collect()
    }
}
