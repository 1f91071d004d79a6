//! The action-class registry as a policy set (`trust-graduation.md` §2): the ten canonical
//! classes with the reference runtime's policies, local classes from `policy.toml`, the
//! per-class graduation thresholds (§5.3) and strict mode (unknown classes are `blocked`).
//!
//! `policy.toml` is read from the configuration directory (`<config>/policy.toml`) and from the
//! spool (`<spool>/policy.toml`). Both may add classes; a class defined in both keeps the
//! configuration's definition; `strict` is on when either turns it on; thresholds from the
//! configuration win over the spool's.
//!
//! ```toml
//! strict = true
//!
//! [[class]]
//! id = "crm.record.update"
//! type = "external controlled"     # internal | external controlled | external | human-only
//! risk = "medium"                  # low | medium | high | critical
//! minimum_level = 3                # 0..5: autonomy level needed to run without review
//! description = "Update a CRM record."
//! aliases = ["crm.update"]
//! constraints = { rate_limit = { count = 10, window = "PT1H" } }
//!
//! [thresholds."crm.record.update"]
//! ci_low_min = 0.85
//! samples_min = 15
//!
//! # Tools, the trust ladder and agents
//! [tools."corrections.merge"]
//! tier = "destructive"             # safe | mutating | destructive (tool tiers × notebook trust)
//! required_trust_level = 4         # the tool's Lodestar floor, 0..5 (optional)
//!
//! [ladder]
//! auto_approve_up_to = 2           # 0..3; default 2; two files: the lower wins
//!
//! [agents."agent-rogue"]
//! max_score = 0.5                  # cap on the eff_score its packets may claim
//! ```

mod class;
mod file;
mod timeouts;
mod tool_table;

pub use class::{ClassPolicy, ClassType, DEFAULT_THRESHOLD, Risk, Threshold};
pub use timeouts::ClassTimeout;

pub use tool_table::{CommandRule, HostOffers, ToolPolicy, ToolPrecondition, host_offers};

use crate::registry::{self, CANONICAL};
use class::{builtin_thresholds, canonical_policy, class_from_json, inferred_policy};
use serde_json::Value;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use timeouts::TimeoutRule;
#[cfg(doc)]
use tool_table::HOST_TOOLS;
use tool_table::{BuiltinTable, ToolGlob, host_table};

/// Why a policy file or a custom policy was refused.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The file is not valid TOML for a policy.
    #[error("{path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A class definition is invalid.
    #[error("class {id:?}: {message}")]
    Class {
        /// The class id as written.
        id: String,
        /// What is wrong.
        message: String,
    },
}

/// The Lodestar auto-approve ceiling when `policy.toml` sets none (the CLI and proxy default, §A4).
pub const DEFAULT_LADDER_CEILING: u8 = 2;

/// The registry and policies the gate consults. Cheap to clone behind an `Arc`.
#[derive(Debug, Clone)]
pub struct PolicySet {
    classes: Vec<ClassPolicy>,
    aliases: HashMap<String, String>,
    /// Bit `n` set when some alias is `n` bytes long (`n` < 64; longer ones are always looked up).
    alias_lengths: u64,
    /// Unknown classes are `blocked` instead of inferred.
    pub strict: bool,
    thresholds: HashMap<String, Threshold>,
    tools: BTreeMap<String, ToolPolicy>,
    /// `[tools]` keys that are globs, from `policy.toml`.
    tool_globs: Vec<ToolGlob>,
    /// `[commands]` rules from `policy.toml`.
    commands: Vec<CommandRule>,
    /// The built-in table of the hosts' own tools and commands ([`HOST_TOOLS`]), consulted after
    /// `policy.toml`'s.
    host: Arc<BuiltinTable>,
    /// `auto_approve_up_to` of the trust ladder's ceiling policy (0..=3).
    pub ladder_ceiling: u8,
    /// Caps on the effective score an agent's packets may claim (`[agents."<id>"] max_score`).
    agent_caps: BTreeMap<String, f64>,
    /// The Unix users who may speak for an agent (`[agents."<id>"] users`), as written and
    /// resolved to uids (a name no user has resolves to nothing: fail closed).
    agent_users: BTreeMap<String, (Vec<String>, Vec<u32>)>,
    /// The directories preconditions may observe (`[preconditions] roots`), absolute.
    precondition_roots: Vec<PathBuf>,
    /// Floors a `warrant eval` request raised for tools no policy registers
    /// ([`PolicySet::tighten_tool`]).
    unregistered_floors: BTreeMap<String, u8>,
    /// `[expiry]`: how long packets of a class (or `default`) wait for a decision.
    expiry: BTreeMap<String, std::time::Duration>,
    /// `[timeouts]`: the configuration's entries first (they win over the spool's for one key).
    timeouts: Vec<TimeoutRule>,
    /// `[cosign]`: the quorum each class needs, by class id or alias as written (normalised when
    /// looked up, once every file's aliases are known), the spool's file last (it wins).
    cosign: Vec<(String, crate::decision::Quorum)>,
    /// `[protected] paths`: files and directories added to the protected set, absolute or under
    /// `~/`, every file's (they only add).
    protected: Vec<String>,
    /// The uid owning the spool these policies govern (the principal's), when they were loaded
    /// for one ([`PolicySet::spool_owner`]).
    spool_owner: Option<u32>,
}

/// Lodestar's conservative floor for a tool no policy registers (`lodestar-and-tiers.md`).
pub const UNREGISTERED_TOOL_FLOOR: u8 = 3;

impl Default for PolicySet {
    fn default() -> Self {
        Self::builtin()
    }
}

impl PolicySet {
    /// The ten canonical classes with the reference runtime's policies and the spec's thresholds.
    #[must_use]
    pub fn builtin() -> Self {
        PolicySet {
            classes: CANONICAL.iter().map(canonical_policy).collect(),
            aliases: registry::ALIASES.iter().map(|(a, c)| ((*a).to_owned(), (*c).to_owned())).collect(),
            alias_lengths: registry::ALIASES.iter().fold(0, |m, (a, _)| m | length_bit(a)),
            strict: false,
            thresholds: builtin_thresholds(),
            tools: BTreeMap::new(),
            tool_globs: Vec::new(),
            commands: Vec::new(),
            host: host_table(),
            ladder_ceiling: DEFAULT_LADDER_CEILING,
            agent_caps: BTreeMap::new(),
            agent_users: BTreeMap::new(),
            precondition_roots: Vec::new(),
            unregistered_floors: BTreeMap::new(),
            expiry: BTreeMap::new(),
            timeouts: Vec::new(),
            cosign: Vec::new(),
            protected: Vec::new(),
            spool_owner: None,
        }
    }

    /// The risk of `class` as warrant's policies define it (the registry's, a local class's, or
    /// inferred for an unknown class): what the principal sees, never the packet's own claim.
    #[must_use]
    pub fn class_risk(&self, class: &str) -> Risk {
        self.policy(&self.normalize(class)).risk
    }

    /// How long a packet of `class` waits for a decision by default (`[expiry]`: the class's,
    /// else `default`), if the policy says.
    #[must_use]
    pub fn default_expiry(&self, class: &str) -> Option<std::time::Duration> {
        let canonical = self.normalize(class);
        self.expiry.get(&canonical).or_else(|| self.expiry.get("default")).copied()
    }

    /// The paths `policy.toml`'s `[protected] paths` adds to the protected set (absolute, or
    /// under `~/`), in the order written.
    #[must_use]
    pub fn protected_paths(&self) -> &[String] {
        &self.protected
    }

    /// The quorum an approval of `class` needs (`[cosign]`): `None` when one
    /// principal's approval is enough.
    #[must_use]
    pub fn cosign(&self, class: &str) -> Option<&crate::decision::Quorum> {
        if self.cosign.is_empty() {
            return None;
        }
        let canonical = self.normalize_cow(class);
        self.cosign.iter().rev().find(|(k, _)| self.normalize_cow(k) == canonical).map(|(_, q)| q)
    }

    /// Whether any class needs several principals (`[cosign]`).
    #[must_use]
    pub fn any_cosign(&self) -> bool {
        !self.cosign.is_empty()
    }

    /// The directories preconditions may observe (`[preconditions] roots`): see
    /// `warrant_engine::preconditions::Observer`.
    #[must_use]
    pub fn precondition_roots(&self) -> &[PathBuf] {
        &self.precondition_roots
    }

    /// The Unix users `policy.toml` lets speak for `agent` (`[agents."<id>"] users`), if it
    /// names any; otherwise the agent belongs to the first user the chain saw publishing it.
    #[must_use]
    pub fn agent_users(&self, agent: &str) -> Option<&[String]> {
        self.agent_users.get(agent).map(|(names, _)| names.as_slice())
    }

    /// The uid owning the spool (the principal's), when the set was loaded for a spool: packets
    /// its user publishes are the principal's own word, never held for another agent's control
    /// (`warrant_engine::monitor::observe`).
    #[must_use]
    pub fn spool_owner(&self) -> Option<u32> {
        self.spool_owner
    }

    /// Records the uid owning the spool the set governs ([`PolicySet::spool_owner`]).
    pub fn set_spool_owner(&mut self, uid: Option<u32>) {
        self.spool_owner = uid;
    }

    /// [`PolicySet::agent_users`] resolved to uids (names no user has are left out).
    #[must_use]
    pub fn agent_uids(&self, agent: &str) -> Option<&[u32]> {
        self.agent_users.get(agent).map(|(_, uids)| uids.as_slice())
    }

    /// The effective score an agent may claim: its claim (NaN and values outside [0, 1] read as
    /// 0, fail closed) capped by `[agents."<id>"] max_score`.
    #[must_use]
    pub fn effective_score(&self, agent: &str, claimed: f64) -> f64 {
        let claimed = if (0.0..=1.0).contains(&claimed) { claimed } else { 0.0 };
        self.agent_caps.get(agent).map_or(claimed, |cap| claimed.min(*cap))
    }

    /// Adds custom policies in the reference runtime's camelCase form (`actionClass`,
    /// `riskClass`, `minimumLevel`, `requiresApproval`, `humanOnly`, `externalSideEffects`,
    /// `constraints`; snake_case spellings are accepted too). A custom policy replaces a built-in
    /// one for the same class, as `customPolicies` does in the reference.
    ///
    /// # Errors
    /// [`PolicyError::Class`] for a policy without a valid class id or with a wrongly typed field.
    pub fn with_custom(&self, policies: &[Value]) -> Result<Self, PolicyError> {
        let mut set = self.clone();
        for p in policies {
            let policy = class_from_json(p)?;
            set.classes.retain(|c| c.id != policy.id);
            set.classes.push(policy);
        }
        Ok(set)
    }

    /// This set with request-supplied class policies (the reference runtime's custom policy
    /// form, as [`PolicySet::with_custom`] reads it) that can only **tighten** it, field by
    /// field, against the class as this set defines it (registered, or inferred for an unknown
    /// class): `type` the stricter (internal < external controlled < external < human-only),
    /// `risk` and `minimumLevel` the higher, `requiresApproval`, `receiptRequired` and
    /// `humanOnly` OR-ed, `constraints` narrowed ([`crate::graduation::gate::merge_constraints`]),
    /// `externalSideEffects` the host's unless it has none. `docs/eval.md`, "Request policies only
    /// tighten".
    ///
    /// # Errors
    /// As [`PolicySet::with_custom`].
    pub fn tightened_by(&self, policies: &[Value]) -> Result<Self, PolicyError> {
        let mut set = self.clone();
        for p in policies {
            let req = class_from_json(p)?;
            let base = set.policy(&req.id).into_owned();
            let rank = |k: ClassType| match k {
                ClassType::Internal => 0,
                ClassType::ExternalControlled => 1,
                ClassType::External => 2,
                ClassType::HumanOnly => 3,
            };
            let merged = ClassPolicy {
                kind: if rank(req.kind) > rank(base.kind) { req.kind } else { base.kind },
                risk: base.risk.max(req.risk),
                minimum_level: base.minimum_level.max(req.minimum_level),
                requires_approval: base.requires_approval || req.requires_approval,
                receipt_required: base.receipt_required || req.receipt_required,
                human_only: base.human_only || req.human_only,
                external_side_effects: if base.external_side_effects == "none" {
                    req.external_side_effects
                } else {
                    base.external_side_effects.clone()
                },
                constraints: crate::graduation::gate::merge_constraints(&base.constraints, &req.constraints),
                inferred: false,
                local: base.local || base.inferred,
                ..base
            };
            set.classes.retain(|c| c.id != merged.id);
            set.classes.push(merged);
        }
        Ok(set)
    }

    /// Normalizes an id as the reference does, using this set's alias table too.
    #[must_use]
    pub fn normalize(&self, id: &str) -> String {
        self.normalize_cow(id).into_owned()
    }

    /// [`PolicySet::normalize`] without allocating in the common case: an id already made only of
    /// `[a-z0-9.]` is borrowed (or its alias target, borrowed from this set); anything else is
    /// trimmed, lower-cased and dotted as `normalize` does.
    #[must_use]
    pub fn normalize_cow<'a>(&'a self, id: &'a str) -> Cow<'a, str> {
        if id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.') {
            // No alias has this length: no need to hash the id.
            if id.len() >= 64 || self.alias_lengths & (1 << id.len()) != 0 {
                return Cow::Borrowed(self.aliases.get(id).map_or(id, String::as_str));
            }
            return Cow::Borrowed(id);
        }
        Cow::Owned(self.normalize_slow(id))
    }

    fn normalize_slow(&self, id: &str) -> String {
        let raw = id.trim().to_lowercase();
        if let Some(c) = self.aliases.get(&raw) {
            return c.clone();
        }
        let dotted = raw.replace('_', ".");
        self.aliases.get(&dotted).cloned().unwrap_or(dotted)
    }

    /// The registered policy of a canonical id (canonical or local), if any.
    #[must_use]
    pub fn registered(&self, canonical: &str) -> Option<&ClassPolicy> {
        self.classes.iter().find(|c| c.id == canonical)
    }

    /// The policy of a canonical id: registered, else inferred from the name. A class that
    /// needs several principals (`[cosign]`) always requires approval: it never graduates (and
    /// no grant covers it: [`crate::grant::prepare`]), so no call of it runs on fewer
    /// signatures than its quorum.
    #[must_use]
    pub fn policy(&self, canonical: &str) -> Cow<'_, ClassPolicy> {
        let p = self.registered(canonical).map_or_else(|| Cow::Owned(inferred_policy(canonical)), Cow::Borrowed);
        if !p.requires_approval && self.cosign(canonical).is_some() {
            let mut owned = p.into_owned();
            owned.requires_approval = true;
            return Cow::Owned(owned);
        }
        p
    }

    /// Every registered class, canonical ones first.
    pub fn classes(&self) -> impl Iterator<Item = &ClassPolicy> {
        self.classes.iter()
    }

    /// The graduation threshold of a class: its own, else `default` from the policy file, else
    /// [`DEFAULT_THRESHOLD`].
    #[must_use]
    pub fn threshold(&self, canonical: &str) -> Threshold {
        self.thresholds.get(canonical).or_else(|| self.thresholds.get("default")).copied().unwrap_or(DEFAULT_THRESHOLD)
    }
}

/// The bit of [`PolicySet`]'s alias-length filter for `alias` (0 for 64 bytes and longer, which
/// are always looked up).
fn length_bit(alias: &str) -> u64 {
    if alias.len() < 64 { 1 << alias.len() } else { 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_classes_from_toml() {
        let set = PolicySet::from_toml(
            r#"
            strict = true
            [[class]]
            id = "crm.record.update"
            type = "external controlled"
            aliases = ["crm_update", "crm.upd"]
            constraints = { rate_limit = { count = 10, window = "PT1H" } }
            [thresholds."crm.record.update"]
            ci_low_min = 0.85
            samples_min = 15
            "#,
        )
        .expect("valid policy");
        assert!(set.strict);
        assert_eq!(set.normalize("crm_update"), "crm.record.update");
        assert_eq!(set.normalize("crm.upd"), "crm.record.update");
        // The allocation-free path agrees with the general one.
        let ids = registry::ALIASES.iter().flat_map(|(a, c)| [*a, *c]).chain([
            "crm.upd",
            "crm_upd",
            "crm.update",
            " Draft.Response ",
            "payment.spend",
            "widget.thing",
            "a",
            "",
        ]);
        for id in ids {
            assert_eq!(set.normalize_cow(id), set.normalize_slow(id), "{id:?}");
        }
        let p = set.registered("crm.record.update").expect("registered");
        assert_eq!((p.kind, p.risk, p.minimum_level), (ClassType::ExternalControlled, Risk::Medium, 3));
        assert_eq!(p.constraints["rate_limit"]["count"], 10);
        assert_eq!(set.threshold("crm.record.update").samples_min, 15);
        assert_eq!(set.threshold("email.send.external").ci_low_min, 0.92);
        assert_eq!(set.threshold("read.context"), DEFAULT_THRESHOLD);
    }

    #[test]
    fn invalid_local_classes_are_refused() {
        for bad in [
            "[[class]]\nid = \"Bad_Id\"\ntype = \"internal\"",
            "[[class]]\nid = \"a.b\"\ntype = \"sideways\"",
            "[[class]]\nid = \"a.b\"\ntype = \"internal\"\nminimum_level = 9",
            "[[class]]\nid = \"a.b\"\ntype = \"internal\"\nsurprise = 1",
            "[thresholds.\"a.b\"]\nci_low_min = 2.0\nsamples_min = 1",
        ] {
            assert!(PolicySet::from_toml(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_local_class_cannot_redefine_a_canonical_one() {
        let set = PolicySet::from_toml("[[class]]\nid = \"payment.initiate\"\ntype = \"internal\"").expect("parses");
        assert!(set.policy("payment.initiate").is_human_only());
    }
}
