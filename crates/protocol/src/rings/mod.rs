//! The Agent Hypervisor execution-ring model (`agent-hypervisor.md`, "Agent Hypervisor Execution
//! Control 1.0"), as a pure library: rings and score-based assignment, action descriptors and the
//! ring enforcer, resource constraints, time-bounded elevation, per-ring token buckets, session
//! configuration, path isolation, the kill switch, quarantine, sagas and the delta audit chain.
//!
//! - [`Ring`], [`from_eff_score`], [`should_demote`] and [`validate_identifier`] live here (§2.1–§2.3);
//! - [`action`]: [`action::ActionDescriptor`], reversibility and the required ring (§2.3, §2.4);
//! - [`enforcer`]: the ring check and the resource table (§2.5, §2.6);
//! - [`elevation`]: privilege elevation and child registration (§2.7);
//! - [`rate`]: the token-bucket rate limiter (§2.8);
//! - `session` (feature `eval`): session configuration, participants and the lifecycle (§2.9);
//! - `isolation` (feature `eval`): per-session path isolation with canonicalised paths (§2.10);
//! - [`kill`]: the kill switch and step handoffs (§2.11);
//! - [`quarantine`]: quarantine records (§2.12, spec §13);
//! - `saga` (feature `eval`): saga and step state machines, retries and reverse compensation (§2.14);
//! - `delta` (feature `eval`): the DeltaEngine audit hash chain (§2.13);
//!
//! Nothing here reads the clock: every time-dependent operation takes the time as a
//! [`UnixSeconds`] argument, and nothing does I/O: path isolation takes the resolver of paths,
//! and the kill switch the runner of termination callbacks, from its caller. The models only
//! `warrant eval` exercises (sessions, isolation, sagas and the delta chain) are behind the
//! `eval` feature. Where the Python reference fails open, warrant fails
//! closed; every such choice is listed in `docs/conformance.md, "Execution rings"`.

pub mod action;
#[cfg(feature = "eval")]
pub mod delta;
pub mod elevation;
pub mod enforcer;
#[cfg(feature = "eval")]
pub mod isolation;
pub mod kill;
pub mod quarantine;
pub mod rate;
#[cfg(feature = "eval")]
pub mod saga;
#[cfg(feature = "eval")]
pub mod session;

pub use action::{ActionDescriptor, Reversibility};
pub use elevation::{ElevationError, ElevationManager, ElevationRequest, RingElevation};
pub use enforcer::{ResourceConstraints, ResourceType, RingCheckResult, check, check_resource, constraints};
pub use kill::{KillReason, KillResult, KillSwitch};
pub use quarantine::{QuarantineReason, QuarantineRegistry};
pub use rate::{RateLimitExceeded, RateLimiter};

use serde::{Deserialize, Serialize};
use std::fmt;

/// A point in time: seconds since the Unix epoch (UTC), fractional. Every clock-dependent
/// operation in this module takes one; none reads the system clock.
pub type UnixSeconds = f64;

/// Score above which an agent *with consensus* gets Ring 1 (§2.2, strict).
pub const RING_1_TRUST_THRESHOLD: f64 = 0.95;
/// Score above which an agent gets Ring 2 (§2.2, strict).
pub const RING_2_TRUST_THRESHOLD: f64 = 0.60;
/// Defined by the spec (`RingEnforcer.RING_1_THRESHOLD`) but used by no check (§5 item 4).
pub const RING_1_ENFORCER_THRESHOLD: f64 = 0.70;
/// Longest identifier (agent DIDs, action ids, session ids), in characters (§2.3).
pub const MAX_IDENTIFIER_LEN: usize = 256;

/// An execution ring (agent-hypervisor.md §2.1). A lower number is more privileged; the derived
/// ordering is by number, so `Ring::Root < Ring::Sandbox`. Serialised as the integer 0–3.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
#[serde(into = "u8", try_from = "u8")]
pub enum Ring {
    /// Ring 0: never assigned from a score, never reachable by elevation.
    Root = 0,
    /// Ring 1: score > 0.95 with consensus, or an attested elevation.
    Privileged = 1,
    /// Ring 2: score > 0.60.
    Standard = 2,
    /// Ring 3: everyone else, and the default.
    #[default]
    Sandbox = 3,
}

impl Ring {
    /// The four rings, most privileged first.
    pub const ALL: [Ring; 4] = [Ring::Root, Ring::Privileged, Ring::Standard, Ring::Sandbox];

    /// The ring number, 0–3.
    #[must_use]
    pub fn value(self) -> u8 {
        self as u8
    }

    /// The ring with number `v`, or `None` outside 0–3.
    #[must_use]
    pub fn from_value(v: i64) -> Option<Ring> {
        Self::ALL.into_iter().find(|r| i64::from(r.value()) == v)
    }

    /// The display label used in error text: `Ring 0 (Root)`, `Ring 1 (Privileged)`,
    /// `Ring 2 (Standard)`, `Ring 3 (Sandbox)`.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Ring::Root => "Ring 0 (Root)",
            Ring::Privileged => "Ring 1 (Privileged)",
            Ring::Standard => "Ring 2 (Standard)",
            Ring::Sandbox => "Ring 3 (Sandbox)",
        }
    }

    /// Whether `self` is strictly more privileged than `other` (a lower number).
    #[must_use]
    pub fn more_privileged_than(self, other: Ring) -> bool {
        self < other
    }
}

impl fmt::Display for Ring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

impl From<Ring> for u8 {
    fn from(r: Ring) -> u8 {
        r.value()
    }
}

/// A number that is not a ring (0–3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("ring must be a valid ExecutionRing (0-3), got {0}")]
pub struct NotARing(pub u8);

impl TryFrom<u8> for Ring {
    type Error = NotARing;
    fn try_from(v: u8) -> Result<Ring, NotARing> {
        Ring::from_value(i64::from(v)).ok_or(NotARing(v))
    }
}

/// The ring an effective score earns (§2.2): strictly above 0.95 *with* consensus → Ring 1,
/// else strictly above 0.60 → Ring 2, else Ring 3. Ring 0 is never produced. A score that is
/// NaN or outside [0, 1] gets Ring 3 (fail closed; the reference gives 1.5 with consensus Ring 1).
#[must_use]
pub fn from_eff_score(eff_score: f64, has_consensus: bool) -> Ring {
    if !(0.0..=1.0).contains(&eff_score) {
        Ring::Sandbox
    } else if eff_score > RING_1_TRUST_THRESHOLD && has_consensus {
        Ring::Privileged
    } else if eff_score > RING_2_TRUST_THRESHOLD {
        Ring::Standard
    } else {
        Ring::Sandbox
    }
}

/// Whether an agent at `current` should be demoted given `eff_score` (§2.2): the ring computed
/// from the score **without consensus** is less privileged than `current`. So Ring 0 and Ring 1
/// are always flagged, Ring 2 iff the score is ≤ 0.60 (or invalid), Ring 3 never.
#[must_use]
pub fn should_demote(current: Ring, eff_score: f64) -> bool {
    from_eff_score(eff_score, false) > current
}

/// A rejected input, with the Python exception class the reference raises for it (§2.3, §2.9).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValidationError {
    /// The reference's `TypeError`: the value has the wrong type (or is missing).
    #[error("{0}")]
    Type(String),
    /// The reference's `ValueError`: the value has the right type but is out of range or malformed.
    #[error("{0}")]
    Value(String),
}

impl ValidationError {
    /// `"TypeError"` or `"ValueError"`.
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            ValidationError::Type(_) => "TypeError",
            ValidationError::Value(_) => "ValueError",
        }
    }
}

/// Python's `str.isspace` for one character (it also counts U+001C–U+001F as space), so that
/// "empty after trimming" means what it means in the reference.
fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Whether `s` is empty or only (Python) whitespace.
pub(crate) fn is_blank(s: &str) -> bool {
    s.chars().all(is_py_space)
}

/// Validates an identifier (agent DID, action id, session id) named `field` (§2.3), in the
/// reference order: blank → `"<field> must not be empty"`; more than 256 characters →
/// `"<field> exceeds maximum length of 256 characters"`; not matching
/// `^[a-zA-Z0-9]([a-zA-Z0-9._:-]*[a-zA-Z0-9])?$` as a whole → `"<field> contains invalid
/// characters: …"`. Unlike Python's `$`, a trailing newline is rejected.
///
/// # Errors
/// [`ValidationError::Value`] with the messages above.
pub fn validate_identifier(field: &str, value: &str) -> Result<(), ValidationError> {
    if is_blank(value) {
        return Err(ValidationError::Value(format!("{field} must not be empty")));
    }
    if value.chars().count() > MAX_IDENTIFIER_LEN {
        return Err(ValidationError::Value(format!(
            "{field} exceeds maximum length of {MAX_IDENTIFIER_LEN} characters"
        )));
    }
    let bytes = value.as_bytes();
    let inner_ok = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-');
    // Non-empty was checked above, so first and last exist.
    let ends_ok =
        bytes.first().is_some_and(u8::is_ascii_alphanumeric) && bytes.last().is_some_and(u8::is_ascii_alphanumeric);
    if !ends_ok || !bytes.iter().all(inner_ok) {
        return Err(ValidationError::Value(format!(
            "{field} contains invalid characters: {value:?} (allowed: ASCII letters and digits, with . _ : - inside)"
        )));
    }
    Ok(())
}

/// [`validate_identifier`] over a JSON value: a non-string is `"<field> must be a string"`
/// ([`ValidationError::Type`]).
///
/// # Errors
/// As [`validate_identifier`], plus the type error.
pub fn validate_identifier_json<'a>(field: &str, value: &'a serde_json::Value) -> Result<&'a str, ValidationError> {
    let s = value.as_str().ok_or_else(|| ValidationError::Type(format!("{field} must be a string")))?;
    validate_identifier(field, s)?;
    Ok(s)
}

/// `t` as Python's `datetime.isoformat()` of an aware UTC datetime: `2026-05-17T12:00:00+00:00`,
/// with `.ffffff` (always six digits) only when the microseconds are not zero. `t` is rounded to
/// the microsecond. `None` for a time outside the representable range or not finite.
#[must_use]
pub fn iso_utc(t: UnixSeconds) -> Option<String> {
    if !t.is_finite() {
        return None;
    }
    let micros = (t * 1e6).round();
    if micros.abs() > 1e17 {
        return None;
    }
    let dt = time::OffsetDateTime::from_unix_timestamp_nanos(micros as i128 * 1000).ok()?;
    let mut s = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        dt.year(),
        u8::from(dt.month()),
        dt.day(),
        dt.hour(),
        dt.minute(),
        dt.second()
    );
    if dt.microsecond() != 0 {
        s.push_str(&format!(".{:06}", dt.microsecond()));
    }
    s.push_str("+00:00");
    Some(s)
}
