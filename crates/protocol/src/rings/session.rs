//! Session configuration, participants and the session lifecycle (agent-hypervisor.md §2.9;
//! spec §10).

use super::action::json_int;
use super::{Ring, UnixSeconds, ValidationError, validate_identifier_json};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Consistency mode of a session. Serialised `strong` / `eventual`; default eventual.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConsistencyMode {
    /// Forced when any registered action is non-reversible.
    Strong,
    /// The default.
    #[default]
    Eventual,
}

/// Session configuration (§2.9). Defaults: eventual, 10 participants, 3600 s, min score 0.60,
/// audit on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionConfig {
    /// `strong` or `eventual`.
    pub consistency_mode: ConsistencyMode,
    /// 1–1000.
    pub max_participants: i64,
    /// 1–604800 (7 days).
    pub max_duration_seconds: i64,
    /// 0.0–1.0.
    pub min_eff_score: f64,
    /// Audit deltas.
    pub enable_audit: bool,
}

impl Default for SessionConfig {
    fn default() -> Self {
        Self {
            consistency_mode: ConsistencyMode::Eventual,
            max_participants: 10,
            max_duration_seconds: 3600,
            min_eff_score: 0.60,
            enable_audit: true,
        }
    }
}

fn int_range(field: &str, v: i64, max: i64, max_text: &str) -> Result<(), ValidationError> {
    if v < 1 {
        Err(ValidationError::Value(format!("{field} must be at least 1, got {v}")))
    } else if v > max {
        Err(ValidationError::Value(format!("{field} must not exceed {max_text}, got {v}")))
    } else {
        Ok(())
    }
}

fn score_range(field: &str, v: f64) -> Result<(), ValidationError> {
    if (0.0..=1.0).contains(&v) {
        Ok(())
    } else {
        Err(ValidationError::Value(format!("{field} must be between 0.0 and 1.0, got {}", py_float(v))))
    }
}

/// A float as Python's `repr` writes it for the common cases (`0.5`, `1.0`, `nan`, `inf`).
fn py_float(v: f64) -> String {
    if v.is_nan() {
        "nan".into()
    } else if v.is_infinite() {
        if v > 0.0 { "inf".into() } else { "-inf".into() }
    } else if v.fract() == 0.0 && v.abs() < 1e16 {
        format!("{v:.1}")
    } else {
        format!("{v}")
    }
}

/// A JSON number for a score field: booleans are type errors (fail closed; Python accepts them).
fn json_number(field: &str, v: &Value) -> Result<f64, ValidationError> {
    match v {
        Value::Number(n) => n.as_f64().ok_or_else(|| ValidationError::Type(format!("{field} must be a number"))),
        Value::Bool(_) => Err(ValidationError::Type(format!("{field} must be a number, got bool"))),
        Value::Null => Err(ValidationError::Type(format!("{field} must be a number, got None"))),
        _ => Err(ValidationError::Type(format!("{field} must be a number"))),
    }
}

impl SessionConfig {
    /// Checks the values in the reference order: `max_participants` ("must be at least 1, got
    /// N", "must not exceed 1000, got N"), `max_duration_seconds` ("… must not exceed 604800 (7
    /// days), got N"), `min_eff_score` ("must be between 0.0 and 1.0, got X"; NaN included).
    ///
    /// # Errors
    /// [`ValidationError::Value`] for the first failing check.
    pub fn validate(&self) -> Result<(), ValidationError> {
        int_range("max_participants", self.max_participants, 1000, "1000")?;
        int_range("max_duration_seconds", self.max_duration_seconds, 604_800, "604800 (7 days)")?;
        score_range("min_eff_score", self.min_eff_score)
    }

    /// Parses and validates a JSON config, missing keys taking the defaults. For each of the
    /// three validated fields the type is checked before the range, in the reference order.
    /// Stricter than Python (fail closed): integers must be JSON integers (no `true`, no `10.0`),
    /// the score must be a JSON number (no `true`), booleans must be JSON booleans, unknown keys
    /// are rejected.
    ///
    /// # Errors
    /// [`ValidationError::Type`] or [`ValidationError::Value`], the first failure winning.
    pub fn from_json(m: &Map<String, Value>) -> Result<Self, ValidationError> {
        let mut c = Self::default();
        if let Some(v) = m.get("max_participants") {
            c.max_participants = json_int("max_participants", v)?;
        }
        int_range("max_participants", c.max_participants, 1000, "1000")?;
        if let Some(v) = m.get("max_duration_seconds") {
            c.max_duration_seconds = json_int("max_duration_seconds", v)?;
        }
        int_range("max_duration_seconds", c.max_duration_seconds, 604_800, "604800 (7 days)")?;
        if let Some(v) = m.get("min_eff_score") {
            c.min_eff_score = json_number("min_eff_score", v)?;
        }
        score_range("min_eff_score", c.min_eff_score)?;
        if let Some(v) = m.get("consistency_mode") {
            c.consistency_mode = match v.as_str() {
                Some("strong") => ConsistencyMode::Strong,
                Some("eventual") => ConsistencyMode::Eventual,
                _ => return Err(ValidationError::Value("consistency_mode must be \"strong\" or \"eventual\"".into())),
            };
        }
        if let Some(v) = m.get("enable_audit") {
            c.enable_audit =
                v.as_bool().ok_or_else(|| ValidationError::Type("enable_audit must be a boolean".into()))?;
        }
        let known = ["consistency_mode", "max_participants", "max_duration_seconds", "min_eff_score", "enable_audit"];
        if let Some(k) = m.keys().find(|k| !known.contains(&k.as_str())) {
            return Err(ValidationError::Value(format!("unknown session config field {k:?}")));
        }
        Ok(c)
    }
}

/// A session participant (§2.9). Defaults: Ring 3, scores 0.0, active.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionParticipant {
    /// Identifier-validated DID.
    pub agent_did: String,
    /// The participant's ring.
    pub ring: Ring,
    /// Raw score in [0, 1].
    pub sigma_raw: f64,
    /// Effective score in [0, 1].
    pub eff_score: f64,
    /// When it joined.
    pub joined_at: UnixSeconds,
    /// False once it left.
    pub is_active: bool,
}

impl SessionParticipant {
    /// Parses and validates a JSON participant joined at `now`: `agent_did` (identifier), `ring`
    /// (an integer 0–3, else "ring must be a valid ExecutionRing (0-3)"; `"2"` and `true` are
    /// rejected too), `sigma_raw` and `eff_score` (numbers in [0, 1]: "… must be between 0.0 and
    /// 1.0"), optional `is_active`.
    ///
    /// # Errors
    /// The first failing check.
    pub fn from_json(m: &Map<String, Value>, now: UnixSeconds) -> Result<Self, ValidationError> {
        let did = m.get("agent_did").ok_or_else(|| ValidationError::Type("agent_did is required".into()))?;
        let agent_did = validate_identifier_json("agent_did", did)?.to_owned();
        let ring = match m.get("ring") {
            None => Ring::Sandbox,
            Some(v) => v
                .as_i64()
                .filter(|_| v.is_i64() || v.is_u64())
                .and_then(Ring::from_value)
                .ok_or_else(|| ValidationError::Value("ring must be a valid ExecutionRing (0-3)".into()))?,
        };
        let score = |field: &str| -> Result<f64, ValidationError> {
            let v = m.get(field).map_or(Ok(0.0), |v| json_number(field, v))?;
            score_range(field, v)?;
            Ok(v)
        };
        let sigma_raw = score("sigma_raw")?;
        let eff_score = score("eff_score")?;
        let is_active = match m.get("is_active") {
            None => true,
            Some(v) => v.as_bool().ok_or_else(|| ValidationError::Type("is_active must be a boolean".into()))?,
        };
        Ok(Self { agent_did, ring, sigma_raw, eff_score, joined_at: now, is_active })
    }
}

/// Session lifecycle states (§2.9), serialised lowercase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SessionState {
    /// Just created.
    Created,
    /// Participants are joining.
    Handshaking,
    /// Running.
    Active,
    /// Ending.
    Terminating,
    /// Done.
    Archived,
}

impl SessionState {
    /// The wire string.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            SessionState::Created => "created",
            SessionState::Handshaking => "handshaking",
            SessionState::Active => "active",
            SessionState::Terminating => "terminating",
            SessionState::Archived => "archived",
        }
    }
}

/// A lifecycle rule broken (the reference's `SessionLifecycleError`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SessionLifecycleError(pub String);

/// A shared session's lifecycle and participants (the reference's `SharedSessionObject`, §2.9).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SharedSession {
    /// The session id.
    pub session_id: String,
    /// Its configuration.
    pub config: SessionConfig,
    /// Its state.
    pub state: SessionState,
    /// Every participant that ever joined, in join order.
    pub participants: Vec<SessionParticipant>,
}

impl SharedSession {
    /// A session in `created`.
    #[must_use]
    pub fn new(session_id: &str, config: SessionConfig) -> Self {
        Self { session_id: session_id.into(), config, state: SessionState::Created, participants: Vec::new() }
    }

    fn require(&self, allowed: &[SessionState], what: &str) -> Result<(), SessionLifecycleError> {
        if allowed.contains(&self.state) {
            Ok(())
        } else {
            Err(SessionLifecycleError(format!("Cannot {what} in state {}", self.state.as_str())))
        }
    }

    /// `created` → `handshaking`.
    ///
    /// # Errors
    /// From any other state.
    pub fn begin_handshake(&mut self) -> Result<(), SessionLifecycleError> {
        self.require(&[SessionState::Created], "begin handshake")?;
        self.state = SessionState::Handshaking;
        Ok(())
    }

    /// `handshaking` → `active`, once at least one participant ever joined.
    ///
    /// # Errors
    /// From any other state, or "Cannot activate session with no participants".
    pub fn activate(&mut self) -> Result<(), SessionLifecycleError> {
        self.require(&[SessionState::Handshaking], "activate")?;
        if self.participants.is_empty() {
            return Err(SessionLifecycleError("Cannot activate session with no participants".into()));
        }
        self.state = SessionState::Active;
        Ok(())
    }

    /// Adds a participant (in `handshaking` or `active`). A DID that ever joined is refused
    /// ("already in session"), as is a full session ("Session at capacity (N)") and a score
    /// below `min_eff_score` unless the participant is in Ring 3.
    ///
    /// # Errors
    /// The broken rule.
    pub fn join(&mut self, p: SessionParticipant) -> Result<(), SessionLifecycleError> {
        self.require(&[SessionState::Handshaking, SessionState::Active], "join")?;
        if self.participants.iter().any(|q| q.agent_did == p.agent_did) {
            return Err(SessionLifecycleError(format!("Agent {} already in session", p.agent_did)));
        }
        let active = self.participants.iter().filter(|q| q.is_active).count();
        if i64::try_from(active).unwrap_or(i64::MAX) >= self.config.max_participants {
            return Err(SessionLifecycleError(format!("Session at capacity ({})", self.config.max_participants)));
        }
        if p.eff_score < self.config.min_eff_score && p.ring != Ring::Sandbox {
            return Err(SessionLifecycleError(format!(
                "Agent {} eff_score {} below session minimum {}",
                p.agent_did, p.eff_score, self.config.min_eff_score
            )));
        }
        self.participants.push(p);
        Ok(())
    }

    /// Marks a participant inactive (it can never re-join). Unknown DIDs are a no-op.
    pub fn leave(&mut self, agent_did: &str) {
        if let Some(p) = self.participants.iter_mut().find(|p| p.agent_did == agent_did) {
            p.is_active = false;
        }
    }

    /// `active` or `handshaking` → `terminating`.
    ///
    /// # Errors
    /// From any other state.
    pub fn terminate(&mut self) -> Result<(), SessionLifecycleError> {
        self.require(&[SessionState::Active, SessionState::Handshaking], "terminate")?;
        self.state = SessionState::Terminating;
        Ok(())
    }

    /// `terminating` → `archived`.
    ///
    /// # Errors
    /// From any other state.
    pub fn archive(&mut self) -> Result<(), SessionLifecycleError> {
        self.require(&[SessionState::Terminating], "archive")?;
        self.state = SessionState::Archived;
        Ok(())
    }
}
