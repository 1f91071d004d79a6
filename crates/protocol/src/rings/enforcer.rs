//! The ring enforcer and the resource table (agent-hypervisor.md §2.5, §2.6; spec §6, §7).

use super::Ring;
use super::action::ActionDescriptor;
use serde::{Deserialize, Serialize};

/// The outcome of a ring or resource check (§2.5). Serialised with the fields in this order;
/// rings as integers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RingCheckResult {
    /// Whether the action may run.
    pub allowed: bool,
    /// The ring the action requires (for a resource check: the agent's ring).
    pub required_ring: Ring,
    /// The agent's ring.
    pub agent_ring: Ring,
    /// The score given to the check, echoed (0.0 for a resource check).
    pub eff_score: f64,
    /// `"Access granted"`, `"Agent ring {a} insufficient for required ring {r}"`, `"Ring 0 actions
    /// require SRE Witness attestation"`, `"Invalid action descriptor: …"` or a resource reason.
    pub reason: String,
    /// Always false: the spec has the field but no rule that sets it (§5 item 3).
    pub requires_consensus: bool,
    /// True exactly when the action requires Ring 0.
    pub requires_sre_witness: bool,
    /// The resource denied by a resource check; otherwise empty.
    pub denied_resources: Vec<ResourceType>,
}

impl RingCheckResult {
    fn new(allowed: bool, required_ring: Ring, agent_ring: Ring, eff_score: f64, reason: String) -> Self {
        Self {
            allowed,
            required_ring,
            agent_ring,
            eff_score,
            reason,
            requires_consensus: false,
            requires_sre_witness: false,
            denied_resources: Vec::new(),
        }
    }
}

/// The ring check (§2.5), in order: an invalid descriptor is denied (fail closed; warrant's
/// addition); an action requiring Ring 0 is denied with `requires_sre_witness = true` for every
/// agent ring, witness or not; an agent ring numerically above the required ring is denied
/// ("insufficient"); anything else is allowed. `eff_score`, `has_consensus` and
/// `has_sre_witness` never change the outcome (§5 item 3); the score is echoed.
#[must_use]
pub fn check(
    agent_ring: Ring,
    action: &ActionDescriptor,
    eff_score: f64,
    has_consensus: bool,
    has_sre_witness: bool,
) -> RingCheckResult {
    // Accepted for the spec's signature; the reference ignores both (§5 item 3).
    let _ = (has_consensus, has_sre_witness);
    let required = action.required_ring();
    let result = |allowed, reason: String| RingCheckResult::new(allowed, required, agent_ring, eff_score, reason);
    if let Err(e) = action.validate() {
        return result(false, format!("Invalid action descriptor: {e}"));
    }
    if required == Ring::Root {
        let mut r = result(false, "Ring 0 actions require SRE Witness attestation".into());
        r.requires_sre_witness = true;
        return r;
    }
    if agent_ring > required {
        return result(
            false,
            format!("Agent ring {} insufficient for required ring {}", agent_ring.value(), required.value()),
        );
    }
    result(true, "Access granted".into())
}

/// A resource kind (§2.6). Serialised `network`, `filesystem`, `subprocess`, `tool_execution`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResourceType {
    /// Network access.
    Network,
    /// Filesystem access (read or write).
    Filesystem,
    /// Spawning processes.
    Subprocess,
    /// Running tools: always allowed.
    ToolExecution,
}

impl ResourceType {
    /// All four kinds.
    pub const ALL: [ResourceType; 4] =
        [ResourceType::Network, ResourceType::Filesystem, ResourceType::Subprocess, ResourceType::ToolExecution];

    /// The wire string.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            ResourceType::Network => "network",
            ResourceType::Filesystem => "filesystem",
            ResourceType::Subprocess => "subprocess",
            ResourceType::ToolExecution => "tool_execution",
        }
    }

    /// Parses the exact wire string.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.as_str() == s)
    }
}

/// How much of the filesystem a ring may touch (§2.6). Serialised lowercase. `session` and
/// `scoped` have no enforcement semantics in the spec (§5 item 9); only `none` denies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FilesystemScope {
    /// No filesystem access at all (the default).
    #[default]
    None,
    /// The session's directory.
    Session,
    /// A configured scope.
    Scoped,
    /// Everything.
    Full,
}

/// What a ring may use (§2.6). `Default` is the freshly built record: nothing allowed, one tool.
/// `network_allowlist` (empty = all) and `max_concurrent_tools` are data only; nothing enforces them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceConstraints {
    /// Network access.
    pub network_allowed: bool,
    /// Allowed hosts; empty means all.
    pub network_allowlist: Vec<String>,
    /// Filesystem writes.
    pub filesystem_writable: bool,
    /// Filesystem reach.
    pub filesystem_scope: FilesystemScope,
    /// Spawning processes.
    pub subprocess_allowed: bool,
    /// Concurrent tools.
    pub max_concurrent_tools: u32,
}

impl Default for ResourceConstraints {
    fn default() -> Self {
        Self {
            network_allowed: false,
            network_allowlist: Vec::new(),
            filesystem_writable: false,
            filesystem_scope: FilesystemScope::None,
            subprocess_allowed: false,
            max_concurrent_tools: 1,
        }
    }
}

impl ResourceConstraints {
    /// Whether this record allows `resource` (§2.6): network → `network_allowed`; filesystem →
    /// scope ≠ `none` (not `filesystem_writable`, so Ring 3 cannot even read); subprocess →
    /// `subprocess_allowed`; tool execution → always.
    #[must_use]
    pub fn allows_resource(&self, resource: ResourceType) -> bool {
        match resource {
            ResourceType::Network => self.network_allowed,
            ResourceType::Filesystem => self.filesystem_scope != FilesystemScope::None,
            ResourceType::Subprocess => self.subprocess_allowed,
            ResourceType::ToolExecution => true,
        }
    }
}

/// The ring table (RING_CONSTRAINTS, §2.6): Ring 0 everything and 32 tools, Ring 1 everything
/// and 16, Ring 2 network, writes, `scoped` filesystem, subprocesses and 8, Ring 3 nothing and 2.
#[must_use]
pub fn constraints(ring: Ring) -> ResourceConstraints {
    let (scope, tools) = match ring {
        Ring::Root => (FilesystemScope::Full, 32),
        Ring::Privileged => (FilesystemScope::Full, 16),
        Ring::Standard => (FilesystemScope::Scoped, 8),
        Ring::Sandbox => return ResourceConstraints { max_concurrent_tools: 2, ..ResourceConstraints::default() },
    };
    ResourceConstraints {
        network_allowed: true,
        network_allowlist: Vec::new(),
        filesystem_writable: true,
        filesystem_scope: scope,
        subprocess_allowed: true,
        max_concurrent_tools: tools,
    }
}

/// The constraints for a raw ring number: a number outside 0–3 falls back to the Ring 3 record
/// (§2.6, §5 item 7; the rate limiter falls back to Ring 2 instead).
#[must_use]
pub fn constraints_for_value(ring: i64) -> ResourceConstraints {
    constraints(Ring::from_value(ring).unwrap_or(Ring::Sandbox))
}

/// The resource check (§2.6): `required_ring = agent_ring`, `eff_score = 0.0`, reason
/// `"{type} access granted for ring {n}"` or `"{type} access denied at ring {n}"` with
/// `denied_resources = [type]`. Only Ring 3 is denied anything (network, filesystem, subprocess).
#[must_use]
pub fn check_resource(agent_ring: Ring, resource: ResourceType) -> RingCheckResult {
    let (n, t) = (agent_ring.value(), resource.as_str());
    if constraints(agent_ring).allows_resource(resource) {
        RingCheckResult::new(true, agent_ring, agent_ring, 0.0, format!("{t} access granted for ring {n}"))
    } else {
        let mut r = RingCheckResult::new(false, agent_ring, agent_ring, 0.0, format!("{t} access denied at ring {n}"));
        r.denied_resources.push(resource);
        r
    }
}
