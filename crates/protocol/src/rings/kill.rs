//! The kill switch: termination with substitute handoff (agent-hypervisor.md §2.11; spec §12).

use super::UnixSeconds;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::time::Duration;

/// How long a termination callback may run before the kill gives up on it (5 s).
pub const DEFAULT_CALLBACK_TIMEOUT: Duration = Duration::from_secs(5);

/// Why an agent was killed (§2.11), serialised snake_case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KillReason {
    /// Behaviour drifted.
    BehavioralDrift,
    /// Rate limit.
    RateLimit,
    /// Ring breach.
    RingBreach,
    /// A principal's decision (the default).
    #[default]
    Manual,
    /// A quarantine ran out.
    QuarantineTimeout,
    /// The session ran out.
    SessionTimeout,
}

impl KillReason {
    /// All six reasons.
    pub const ALL: [KillReason; 6] = [
        KillReason::BehavioralDrift,
        KillReason::RateLimit,
        KillReason::RingBreach,
        KillReason::Manual,
        KillReason::QuarantineTimeout,
        KillReason::SessionTimeout,
    ];

    /// The wire string.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            KillReason::BehavioralDrift => "behavioral_drift",
            KillReason::RateLimit => "rate_limit",
            KillReason::RingBreach => "ring_breach",
            KillReason::Manual => "manual",
            KillReason::QuarantineTimeout => "quarantine_timeout",
            KillReason::SessionTimeout => "session_timeout",
        }
    }

    /// Parses the exact wire string.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.as_str() == s)
    }
}

/// What happened to an in-flight step (§2.11). Only `handed_off` and `compensated` are produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HandoffStatus {
    /// Not produced.
    Pending,
    /// Given to a substitute.
    HandedOff,
    /// Not produced.
    Failed,
    /// Left for compensation (the default).
    #[default]
    Compensated,
}

impl HandoffStatus {
    /// All four statuses.
    pub const ALL: [HandoffStatus; 4] =
        [HandoffStatus::Pending, HandoffStatus::HandedOff, HandoffStatus::Failed, HandoffStatus::Compensated];
}

/// An in-flight saga step of the victim (missing ids are empty strings).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InFlightStep {
    /// The step.
    #[serde(default)]
    pub step_id: String,
    /// Its saga.
    #[serde(default)]
    pub saga_id: String,
}

/// One step's handoff (§2.11).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StepHandoff {
    /// The step.
    pub step_id: String,
    /// Its saga.
    pub saga_id: String,
    /// The killed agent.
    pub from_agent: String,
    /// The substitute, if handed off.
    pub to_agent: Option<String>,
    /// `handed_off` or `compensated`.
    pub status: HandoffStatus,
}

/// The record of one kill (§2.11). Always appended to the history, whatever the callback did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KillResult {
    /// `kill:` + 8 lowercase hex digits of the switch's counter (deterministic).
    pub kill_id: String,
    /// The killed agent.
    pub agent_did: String,
    /// Its session.
    pub session_id: String,
    /// Why.
    pub reason: KillReason,
    /// When.
    pub timestamp: UnixSeconds,
    /// One per in-flight step, in order.
    pub handoffs: Vec<StepHandoff>,
    /// Steps handed off.
    pub handoff_success_count: u64,
    /// Whether any step was left for compensation (false with no steps).
    pub compensation_triggered: bool,
    /// Whether a termination callback ran to completion within the timeout. False with no
    /// callback, a failing one or one that timed out: the only signal of failure.
    pub terminated: bool,
    /// Free text.
    pub details: String,
}

/// A termination callback: stops the agent's process. `Err` (or a panic) means it failed; the
/// error is the operating system's (signalling or waiting for the process).
pub type TerminationCallback = Box<dyn FnOnce() -> std::io::Result<()> + Send + 'static>;

/// The kill switch (§2.11): the agent registry (with callbacks), per-session substitutes and the
/// kill history. Kill ids come from a counter.
pub struct KillSwitch {
    agents: HashMap<String, Option<TerminationCallback>>,
    substitutes: HashMap<String, Vec<String>>,
    history: Vec<KillResult>,
    callback_timeout: Duration,
    counter: u32,
}

impl Default for KillSwitch {
    fn default() -> Self {
        Self::new(DEFAULT_CALLBACK_TIMEOUT)
    }
}

impl std::fmt::Debug for KillSwitch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KillSwitch")
            .field("agents", &self.agents.keys().collect::<Vec<_>>())
            .field("substitutes", &self.substitutes)
            .field("history", &self.history)
            .field("callback_timeout", &self.callback_timeout)
            .finish()
    }
}

impl KillSwitch {
    /// A switch that waits at most `callback_timeout` for a termination callback.
    #[must_use]
    pub fn new(callback_timeout: Duration) -> Self {
        Self { agents: HashMap::new(), substitutes: HashMap::new(), history: Vec::new(), callback_timeout, counter: 0 }
    }

    /// The callback timeout.
    #[must_use]
    pub fn callback_timeout(&self) -> Duration {
        self.callback_timeout
    }

    /// Sets the callback timeout for later kills.
    pub fn set_callback_timeout(&mut self, timeout: Duration) {
        self.callback_timeout = timeout;
    }

    /// Registers (or re-registers) an agent with its termination callback (`None`: none).
    pub fn register_agent(&mut self, agent_did: &str, callback: Option<TerminationCallback>) {
        self.agents.insert(agent_did.into(), callback);
    }

    /// Removes an agent from the registry (unknown: no-op).
    pub fn unregister_agent(&mut self, agent_did: &str) {
        self.agents.remove(agent_did);
    }

    /// Whether an agent is registered.
    #[must_use]
    pub fn is_registered(&self, agent_did: &str) -> bool {
        self.agents.contains_key(agent_did)
    }

    /// Appends a substitute for a session (kept in registration order).
    pub fn register_substitute(&mut self, session_id: &str, agent_did: &str) {
        self.substitutes.entry(session_id.into()).or_default().push(agent_did.into());
    }

    /// Removes the first registration of `agent_did` as substitute of the session (no-op if none).
    pub fn unregister_substitute(&mut self, session_id: &str, agent_did: &str) {
        if let Some(subs) = self.substitutes.get_mut(session_id)
            && let Some(i) = subs.iter().position(|s| s == agent_did)
        {
            subs.remove(i);
        }
    }

    /// The session's substitutes, in registration order.
    #[must_use]
    pub fn substitutes(&self, session_id: &str) -> &[String] {
        self.substitutes.get(session_id).map_or(&[], Vec::as_slice)
    }

    /// Kills `agent_did` in `session_id` at `now` (§2.11):
    /// 1. the substitute is the first registered for the session that is not the victim;
    /// 2. each in-flight step is `handed_off` to it, or `compensated` without one;
    /// 3. the termination callback is run by `terminate`, bounded by the timeout (`warrant
    ///    eval`'s runs it on its own thread, `warrant_store::termination::run_with_timeout`): completed
    ///    → `terminated = true`; failed, panicked, timed out or absent → false;
    /// 4. the result is appended to the history **always**, then the victim is removed from this
    ///    session's substitutes and from the registry **unconditionally** (a second kill has no
    ///    callback). The chosen substitute stays registered.
    #[expect(
        clippy::too_many_arguments,
        reason = "the reference's six arguments, and the caller's runner of the callback (the I/O)"
    )]
    pub fn kill(
        &mut self,
        agent_did: &str,
        session_id: &str,
        reason: KillReason,
        in_flight_steps: &[InFlightStep],
        details: &str,
        now: UnixSeconds,
        terminate: &dyn Fn(TerminationCallback, Duration) -> bool,
    ) -> KillResult {
        let substitute = self.substitutes(session_id).iter().find(|s| *s != agent_did).cloned();
        let handoffs: Vec<StepHandoff> = in_flight_steps
            .iter()
            .map(|s| StepHandoff {
                step_id: s.step_id.clone(),
                saga_id: s.saga_id.clone(),
                from_agent: agent_did.into(),
                to_agent: substitute.clone(),
                status: if substitute.is_some() { HandoffStatus::HandedOff } else { HandoffStatus::Compensated },
            })
            .collect();
        let handoff_success_count = handoffs.iter().filter(|h| h.status == HandoffStatus::HandedOff).count() as u64;
        let terminated = match self.agents.get_mut(agent_did).and_then(Option::take) {
            Some(callback) => terminate(callback, self.callback_timeout),
            None => {
                tracing::warn!(agent = agent_did, "no termination callback registered");
                false
            }
        };
        self.counter = self.counter.wrapping_add(1);
        let result = KillResult {
            kill_id: format!("kill:{:08x}", self.counter),
            agent_did: agent_did.into(),
            session_id: session_id.into(),
            reason,
            timestamp: now,
            compensation_triggered: handoffs.iter().any(|h| h.status == HandoffStatus::Compensated),
            handoffs,
            handoff_success_count,
            terminated,
            details: details.into(),
        };
        self.history.push(result.clone());
        self.unregister_substitute(session_id, agent_did);
        self.unregister_agent(agent_did);
        result
    }

    /// Every kill, in order.
    #[must_use]
    pub fn kill_history(&self) -> &[KillResult] {
        &self.history
    }

    /// The number of kills.
    #[must_use]
    pub fn total_kills(&self) -> usize {
        self.history.len()
    }

    /// The sum of `handoff_success_count` over the history.
    #[must_use]
    pub fn total_handoffs(&self) -> u64 {
        self.history.iter().map(|r| r.handoff_success_count).sum()
    }
}
