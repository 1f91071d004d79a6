//! Time-bounded privilege elevation and child registration (agent-hypervisor.md §2.7; spec §8).

use super::{Ring, UnixSeconds};
use serde::Serialize;
use std::fmt;

/// TTL used when the request asks for none (≤ 0), in seconds.
pub const DEFAULT_TTL_SECONDS: i64 = 300;
/// Longest TTL granted, in seconds; longer requests are capped.
pub const MAX_ELEVATION_TTL_SECONDS: i64 = 3600;
/// Lowest trust score for an elevation to Ring 1 ("<" denies, so exactly 0.85 is granted).
pub const RING_1_ELEVATION_THRESHOLD: f64 = 0.85;
/// Lowest trust score for an elevation to Ring 2 (exactly 0.50 is granted).
pub const RING_2_ELEVATION_THRESHOLD: f64 = 0.50;
const DOCS_URL: &str = "https://github.com/microsoft/agent-governance-toolkit/blob/main/docs/rings.md";

/// Why an elevation was denied (§2.7). Serialised as the reference's strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DenialReason {
    /// The target is not more privileged than the current ring (checked first).
    InvalidTarget,
    /// Ring 0 was requested.
    #[serde(rename = "ring_0_forbidden")]
    Ring0Forbidden,
    /// An active, unexpired elevation exists for the same (agent, session).
    #[serde(rename = "duplicate_elevation")]
    DuplicateElevation,
    /// No score, a score below the threshold, or (fail closed) NaN / outside [0, 1].
    InsufficientTrust,
    /// Ring 1 without a non-empty attestation.
    NoSponsorship,
    /// Reserved by the spec; never produced.
    ExpiredTtl,
    /// Reserved by the spec; never produced.
    CommunityEdition,
    /// Revoking an unknown elevation id.
    NotFound,
}

impl DenialReason {
    /// The wire string, e.g. `insufficient_trust`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            DenialReason::InvalidTarget => "invalid_target",
            DenialReason::Ring0Forbidden => "ring_0_forbidden",
            DenialReason::DuplicateElevation => "duplicate_elevation",
            DenialReason::InsufficientTrust => "insufficient_trust",
            DenialReason::NoSponsorship => "no_sponsorship",
            DenialReason::ExpiredTtl => "expired_ttl",
            DenialReason::CommunityEdition => "community_edition",
            DenialReason::NotFound => "not_found",
        }
    }

    fn remediation(self) -> &'static str {
        match self {
            DenialReason::CommunityEdition => {
                "Upgrade to the Enterprise edition to enable ring elevation, or request access from your organization admin."
            }
            DenialReason::InvalidTarget => {
                "Request a target ring with a lower numeric value (higher privilege) than the agent's current ring."
            }
            DenialReason::Ring0Forbidden => {
                "Ring 0 requires SRE Witness attestation and cannot be requested via the standard elevation API. Contact your platform team."
            }
            DenialReason::InsufficientTrust => {
                "Increase the agent's effective trust score above the required threshold by completing successful operations in the current ring."
            }
            DenialReason::NoSponsorship => {
                "Obtain a sponsorship from a Ring 1 or Ring 0 agent to vouch for this elevation request."
            }
            DenialReason::ExpiredTtl => "Submit a new elevation request with a valid TTL (max 3600s).",
            DenialReason::DuplicateElevation | DenialReason::NotFound => "Review the elevation requirements.",
        }
    }
}

impl fmt::Display for DenialReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The reference's `RingElevationError` (§2.7, §2.15): a denied request or an unknown id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ElevationError {
    /// A denied request. Its message has the reference's lines: `Ring elevation denied: <current
    /// label> -> <target label>`, `  Agent: <did>` (when non-empty), `  Reason: <reason>`,
    /// `  Remediation: …`, `  Docs: …`.
    #[error("{}", denied_message(*.current_ring, *.target_ring, *.denial_reason, .agent_did))]
    Denied {
        /// The agent's ring.
        current_ring: Ring,
        /// The requested ring.
        target_ring: Ring,
        /// Why.
        denial_reason: DenialReason,
        /// The agent (may be empty).
        agent_did: String,
    },
    /// `revoke` of an unknown id: `"Elevation {id} not found"` (reason `not_found`).
    #[error("Elevation {0} not found")]
    NotFound(String),
}

impl ElevationError {
    /// The denial reason (`not_found` for [`ElevationError::NotFound`]).
    #[must_use]
    pub fn reason(&self) -> DenialReason {
        match self {
            ElevationError::Denied { denial_reason, .. } => *denial_reason,
            ElevationError::NotFound(_) => DenialReason::NotFound,
        }
    }
}

fn denied_message(current: Ring, target: Ring, reason: DenialReason, agent_did: &str) -> String {
    let mut parts = vec![format!("Ring elevation denied: {} -> {}", current.label(), target.label())];
    if !agent_did.is_empty() {
        parts.push(format!("  Agent: {agent_did}"));
    }
    parts.push(format!("  Reason: {reason}"));
    parts.push(format!("  Remediation: {}", reason.remediation()));
    parts.push(format!("  Docs: {DOCS_URL}"));
    parts.join("\n")
}

/// An elevation request (§2.7). Defaults: `ttl_seconds` 0 (→ 300), no attestation, empty
/// reason, no explicit trust score (→ the manager's trust provider, if any).
#[derive(Debug, Clone, PartialEq)]
pub struct ElevationRequest<'a> {
    /// The agent.
    pub agent_did: &'a str,
    /// The session.
    pub session_id: &'a str,
    /// The agent's current ring.
    pub current_ring: Ring,
    /// The requested, more privileged ring.
    pub target_ring: Ring,
    /// Requested seconds: ≤ 0 means 300; capped at 3600.
    pub ttl_seconds: i64,
    /// Sponsorship; required (non-empty) for Ring 1.
    pub attestation: Option<&'a str>,
    /// Free-text justification.
    pub reason: &'a str,
    /// An explicit score in [0, 1]; wins over the trust provider.
    pub trust_score: Option<f64>,
}

impl<'a> ElevationRequest<'a> {
    /// A request with the defaults above.
    #[must_use]
    pub fn new(agent_did: &'a str, session_id: &'a str, current_ring: Ring, target_ring: Ring) -> Self {
        Self {
            agent_did,
            session_id,
            current_ring,
            target_ring,
            ttl_seconds: 0,
            attestation: None,
            reason: "",
            trust_score: None,
        }
    }
}

/// A granted elevation (§2.7). Times are [`UnixSeconds`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RingElevation {
    /// `elev:` + 8 lowercase hex digits of the manager's counter (deterministic).
    pub elevation_id: String,
    /// The agent.
    pub agent_did: String,
    /// The session.
    pub session_id: String,
    /// The ring before the elevation.
    pub original_ring: Ring,
    /// The granted ring.
    pub elevated_ring: Ring,
    /// When it was granted.
    pub granted_at: UnixSeconds,
    /// `granted_at` + the granted TTL.
    pub expires_at: UnixSeconds,
    /// The attestation as given.
    pub attestation: Option<String>,
    /// The reason as given.
    pub reason: String,
    /// False once ticked past expiry or revoked.
    pub is_active: bool,
}

impl RingElevation {
    /// Whether `now ≥ expires_at`.
    #[must_use]
    pub fn is_expired(&self, now: UnixSeconds) -> bool {
        now >= self.expires_at
    }

    /// `max(0, expires_at − now)`, in seconds.
    #[must_use]
    pub fn remaining_seconds(&self, now: UnixSeconds) -> f64 {
        (self.expires_at - now).max(0.0)
    }

    fn live(&self, now: UnixSeconds) -> bool {
        self.is_active && !self.is_expired(now)
    }
}

/// A child agent's ring, derived from its parent's (§2.7 "Child registration").
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChildRegistration {
    /// The parent.
    pub parent_did: String,
    /// The child.
    pub child_did: String,
    /// The parent's ring as given by the caller (pass its effective ring).
    pub parent_ring: Ring,
    /// `min(parent + 1, 3)`.
    pub child_ring: Ring,
    /// When it was registered.
    pub registered_at: UnixSeconds,
}

/// Supplies a trust score for an agent when a request carries none.
pub type TrustProvider = Box<dyn Fn(&str) -> Option<f64> + Send + Sync>;

/// The elevation manager (the reference's `RingElevationManager`, §2.7). Elevations are kept in
/// grant order; ids come from a per-manager counter, so results are deterministic.
#[derive(Default)]
pub struct ElevationManager {
    elevations: Vec<RingElevation>,
    children: std::collections::HashMap<String, ChildRegistration>,
    trust_provider: Option<TrustProvider>,
    counter: u32,
}

impl fmt::Debug for ElevationManager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ElevationManager")
            .field("elevations", &self.elevations)
            .field("children", &self.children)
            .field("trust_provider", &self.trust_provider.is_some())
            .finish()
    }
}

impl ElevationManager {
    /// A manager that asks `provider` for scores missing from requests.
    #[must_use]
    pub fn with_trust_provider(provider: TrustProvider) -> Self {
        Self { trust_provider: Some(provider), ..Self::default() }
    }

    /// Grants or denies `req` at `now` (§2.7). Checks, the first failure winning:
    /// `invalid_target` (target not more privileged than current, so 0→0 too), `ring_0_forbidden`,
    /// `duplicate_elevation` (an active unexpired elevation for the same agent and session),
    /// `insufficient_trust` (no score, NaN, outside [0, 1], or below 0.85 for Ring 1 / 0.50 for
    /// Ring 2: exactly the threshold is granted), `no_sponsorship` (Ring 1 without a non-empty
    /// attestation). The TTL is the request's when > 0, else 300, capped at 3600.
    ///
    /// # Errors
    /// [`ElevationError::Denied`] with the reason.
    pub fn request(&mut self, req: &ElevationRequest<'_>, now: UnixSeconds) -> Result<RingElevation, ElevationError> {
        let deny = |denial_reason| ElevationError::Denied {
            current_ring: req.current_ring,
            target_ring: req.target_ring,
            denial_reason,
            agent_did: req.agent_did.to_owned(),
        };
        if req.target_ring >= req.current_ring {
            return Err(deny(DenialReason::InvalidTarget));
        }
        if req.target_ring == Ring::Root {
            return Err(deny(DenialReason::Ring0Forbidden));
        }
        if self.active_elevation(req.agent_did, req.session_id, now).is_some() {
            return Err(deny(DenialReason::DuplicateElevation));
        }
        let score = req.trust_score.or_else(|| self.trust_provider.as_ref().and_then(|p| p(req.agent_did)));
        let threshold = match req.target_ring {
            Ring::Privileged => RING_1_ELEVATION_THRESHOLD,
            Ring::Standard => RING_2_ELEVATION_THRESHOLD,
            Ring::Root | Ring::Sandbox => 1.0,
        };
        // Fail closed: NaN and scores outside [0, 1] are not scores (the reference grants them).
        match score {
            Some(s) if (0.0..=1.0).contains(&s) && s >= threshold => {}
            _ => return Err(deny(DenialReason::InsufficientTrust)),
        }
        if req.target_ring == Ring::Privileged && req.attestation.is_none_or(str::is_empty) {
            return Err(deny(DenialReason::NoSponsorship));
        }
        let ttl = granted_ttl(req.ttl_seconds);
        self.counter = self.counter.wrapping_add(1);
        let elevation = RingElevation {
            elevation_id: format!("elev:{:08x}", self.counter),
            agent_did: req.agent_did.to_owned(),
            session_id: req.session_id.to_owned(),
            original_ring: req.current_ring,
            elevated_ring: req.target_ring,
            granted_at: now,
            expires_at: now + ttl as f64,
            attestation: req.attestation.map(str::to_owned),
            reason: req.reason.to_owned(),
            is_active: true,
        };
        self.elevations.push(elevation.clone());
        Ok(elevation)
    }

    /// The active, unexpired elevation of (agent, session), if any. An expired elevation that
    /// has not been ticked is ignored.
    #[must_use]
    pub fn active_elevation(&self, agent_did: &str, session_id: &str, now: UnixSeconds) -> Option<&RingElevation> {
        self.elevations.iter().find(|e| e.agent_did == agent_did && e.session_id == session_id && e.live(now))
    }

    /// The elevated ring when an elevation is live, else `base`.
    #[must_use]
    pub fn effective_ring(&self, agent_did: &str, session_id: &str, base: Ring, now: UnixSeconds) -> Ring {
        self.active_elevation(agent_did, session_id, now).map_or(base, |e| e.elevated_ring)
    }

    /// Marks every active, expired elevation inactive and returns those it changed (a second
    /// tick at the same time returns none).
    pub fn tick(&mut self, now: UnixSeconds) -> Vec<RingElevation> {
        let mut expired = Vec::new();
        for e in self.elevations.iter_mut().filter(|e| e.is_active && e.is_expired(now)) {
            e.is_active = false;
            expired.push(e.clone());
        }
        expired
    }

    /// Revokes an elevation. Revoking an already inactive one is silently fine.
    ///
    /// # Errors
    /// [`ElevationError::NotFound`] for an unknown id.
    pub fn revoke(&mut self, elevation_id: &str) -> Result<(), ElevationError> {
        let e = self
            .elevations
            .iter_mut()
            .find(|e| e.elevation_id == elevation_id)
            .ok_or_else(|| ElevationError::NotFound(elevation_id.to_owned()))?;
        e.is_active = false;
        Ok(())
    }

    /// Every active, unexpired elevation, in grant order.
    #[must_use]
    pub fn active_elevations(&self, now: UnixSeconds) -> Vec<&RingElevation> {
        self.elevations.iter().filter(|e| e.live(now)).collect()
    }

    /// Every elevation ever granted, in grant order.
    #[must_use]
    pub fn elevations(&self) -> &[RingElevation] {
        &self.elevations
    }

    /// Registers `child_did` under `parent_did` with ring `min(parent_ring + 1, 3)` (§2.7);
    /// a later registration of the same child replaces the earlier one. Pass the parent's
    /// *effective* ring (§5 item 12).
    pub fn register_child(
        &mut self,
        parent_did: &str,
        child_did: &str,
        parent_ring: Ring,
        now: UnixSeconds,
    ) -> ChildRegistration {
        let child_ring = Ring::from_value(i64::from(parent_ring.value()) + 1).unwrap_or(Ring::Sandbox);
        let reg = ChildRegistration {
            parent_did: parent_did.to_owned(),
            child_did: child_did.to_owned(),
            parent_ring,
            child_ring,
            registered_at: now,
        };
        self.children.insert(child_did.to_owned(), reg.clone());
        reg
    }

    /// The registration of `child_did`, if any.
    #[must_use]
    pub fn child_registration(&self, child_did: &str) -> Option<&ChildRegistration> {
        self.children.get(child_did)
    }
}

/// The TTL granted for a requested one (§2.7): the request when > 0, else 300; at most 3600.
#[must_use]
pub fn granted_ttl(requested: i64) -> i64 {
    let ttl = if requested > 0 { requested } else { DEFAULT_TTL_SECONDS };
    ttl.min(MAX_ELEVATION_TTL_SECONDS)
}
