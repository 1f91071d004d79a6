//! Quarantine (agent-hypervisor.md §2.12; spec §13). The reference removed it; this implements
//! the spec: quarantine for a duration (default 300 s) or until released, release, query, and
//! expiry on tick. warrant's principal-controlled quarantine passes no duration: it lasts until
//! the principal releases it.

use super::{UnixSeconds, ValidationError};
use serde::{Deserialize, Serialize};

/// The spec's default duration, in seconds.
pub const DEFAULT_QUARANTINE_SECONDS: f64 = 300.0;

/// Why an agent was quarantined (spec §13), serialised snake_case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QuarantineReason {
    /// Behaviour drifted.
    BehavioralDrift,
    /// A liability rule was broken.
    LiabilityViolation,
    /// Ring breach.
    RingBreach,
    /// Rate limit exceeded.
    RateLimitExceeded,
    /// A principal's decision (the default).
    #[default]
    Manual,
    /// A sponsor was slashed.
    CascadeSlash,
}

impl QuarantineReason {
    /// All six reasons.
    pub const ALL: [QuarantineReason; 6] = [
        QuarantineReason::BehavioralDrift,
        QuarantineReason::LiabilityViolation,
        QuarantineReason::RingBreach,
        QuarantineReason::RateLimitExceeded,
        QuarantineReason::Manual,
        QuarantineReason::CascadeSlash,
    ];

    /// The wire string.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            QuarantineReason::BehavioralDrift => "behavioral_drift",
            QuarantineReason::LiabilityViolation => "liability_violation",
            QuarantineReason::RingBreach => "ring_breach",
            QuarantineReason::RateLimitExceeded => "rate_limit_exceeded",
            QuarantineReason::Manual => "manual",
            QuarantineReason::CascadeSlash => "cascade_slash",
        }
    }

    /// Parses the exact wire string.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.as_str() == s)
    }
}

/// One quarantine (spec §13 fields, plus the old stub's id, details and release time).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QuarantineRecord {
    /// `quar:` + 8 lowercase hex digits of the registry's counter.
    pub quarantine_id: String,
    /// The agent.
    pub agent_did: String,
    /// The session it was quarantined in.
    pub session_id: String,
    /// Why.
    pub reason: QuarantineReason,
    /// Free text.
    pub details: String,
    /// When it started.
    pub started_at: UnixSeconds,
    /// When it ends by itself; `None`: only a release ends it.
    pub expires_at: Option<UnixSeconds>,
    /// When it was released, if it was.
    pub released_at: Option<UnixSeconds>,
    /// False once released or ticked past expiry.
    pub is_active: bool,
}

impl QuarantineRecord {
    /// Active and not past `expires_at` at `now`.
    #[must_use]
    pub fn in_force(&self, now: UnixSeconds) -> bool {
        self.is_active && self.expires_at.is_none_or(|t| now < t)
    }
}

/// The quarantine registry. Records are kept in creation order; ids come from a counter.
#[derive(Debug, Clone, Default)]
pub struct QuarantineRegistry {
    records: Vec<QuarantineRecord>,
    counter: u32,
}

impl QuarantineRegistry {
    /// Quarantines `agent_did` at `now` for `duration` seconds (pass
    /// `Some(DEFAULT_QUARANTINE_SECONDS)` for the spec's default), or until released (`None`).
    ///
    /// # Errors
    /// [`ValidationError::Value`] for a duration that is not finite and positive (a quarantine
    /// that ends before it starts would be a silent no-op).
    pub fn quarantine(
        &mut self,
        agent_did: &str,
        session_id: &str,
        reason: QuarantineReason,
        details: &str,
        duration: Option<f64>,
        now: UnixSeconds,
    ) -> Result<QuarantineRecord, ValidationError> {
        if let Some(d) = duration
            && !(d.is_finite() && d > 0.0)
        {
            return Err(ValidationError::Value(format!("duration must be a positive number of seconds, got {d}")));
        }
        self.counter = self.counter.wrapping_add(1);
        let record = QuarantineRecord {
            quarantine_id: format!("quar:{:08x}", self.counter),
            agent_did: agent_did.into(),
            session_id: session_id.into(),
            reason,
            details: details.into(),
            started_at: now,
            expires_at: duration.map(|d| now + d),
            released_at: None,
            is_active: true,
        };
        self.records.push(record.clone());
        Ok(record)
    }

    /// Whether any quarantine of `agent_did` is in force at `now` (an expired, un-ticked one is not).
    #[must_use]
    pub fn is_quarantined(&self, agent_did: &str, now: UnixSeconds) -> bool {
        self.records.iter().any(|r| r.agent_did == agent_did && r.in_force(now))
    }

    /// Releases every active quarantine of `agent_did` (in `session_id` only, if given) at `now`
    /// and returns them.
    pub fn release(&mut self, agent_did: &str, session_id: Option<&str>, now: UnixSeconds) -> Vec<QuarantineRecord> {
        let mut released = Vec::new();
        for r in self
            .records
            .iter_mut()
            .filter(|r| r.is_active && r.agent_did == agent_did && session_id.is_none_or(|s| r.session_id == s))
        {
            r.is_active = false;
            r.released_at = Some(now);
            released.push(r.clone());
        }
        released
    }

    /// Deactivates every active quarantine past its expiry at `now` and returns them.
    pub fn tick(&mut self, now: UnixSeconds) -> Vec<QuarantineRecord> {
        let mut expired = Vec::new();
        for r in self.records.iter_mut().filter(|r| r.is_active && !r.in_force(now)) {
            r.is_active = false;
            expired.push(r.clone());
        }
        expired
    }

    /// The records of `agent_did` and/or `session_id` (both `None`: all), in creation order.
    #[must_use]
    pub fn history(&self, agent_did: Option<&str>, session_id: Option<&str>) -> Vec<&QuarantineRecord> {
        self.records
            .iter()
            .filter(|r| agent_did.is_none_or(|a| r.agent_did == a) && session_id.is_none_or(|s| r.session_id == s))
            .collect()
    }
}
