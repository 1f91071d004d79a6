//! The Lodestar trust ladder and its three-valued policy gate (`lodestar-and-tiers.md` Part A).
//!
//! - [`TrustLevel`]: the six rungs L0–L5 (§A1);
//! - [`ActionContract`]: the typed contract every proposed action carries (§A2), parsed strictly
//!   with errors naming the field ([`ActionContract::from_json`]);
//! - [`Policy`] and [`gate`]: ordered first-match rules under two floors no rule can lift (§A4):
//!   L5 is always `deny`, L4 is never `allow`, and an action no rule matches is denied;
//! - [`auto_approve_policy`] and [`policy_hash`]: the ceiling preset and the document hash (§A4);
//! - [`check_tool_floor`] and [`merge_preconditions`]: what `propose` enforces (§A1, §A3);
//! - [`revalidate`]: the execution-time precondition re-check of two-phase execution (§A3);
//! - [`DenialKind`]: the machine-readable refusal kinds (§A6);
//! - [`eval_ladder_gate`] and [`eval_ladder_revalidate`]: the `warrant eval` adapters
//!   (`docs/eval-ladder.md`); [`EVAL_OPS`] lists them with `tiers.gate`.
//!
//! Everything here is a pure function of its arguments. Choices where the spec is silent are in
//! `docs/conformance.md, "Trust ladder and tool tiers"`.

use crate::glob::Glob;
use crate::request::RequestError;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};
use std::fmt;

// ---------------------------------------------------------------------------------------------
// Rungs and contract vocabulary (§A1, §A2)
// ---------------------------------------------------------------------------------------------

/// A rung of the trust ladder, 0..=5 (§A1). Serialized as the bare integer; parsing accepts a
/// JSON number with an integral value in range (`3` or `3.0`, as JavaScript's `Number.isInteger`
/// does) and rejects anything else, `6`, `-1`, `2.5` and `"3"` included.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TrustLevel(u8);

impl TrustLevel {
    /// L0, observe only: reads state; never writes or executes.
    pub const L0: Self = Self(0);
    /// L1, suggest only: produces proposals; nothing reaches the world.
    pub const L1: Self = Self(1);
    /// L2, isolated artifact: output in a scratch area; no effect on project state.
    pub const L2: Self = Self(2);
    /// L3, local reversible: changes project state, with a notification.
    pub const L3: Self = Self(3);
    /// L4, external / shared: always needs approval; the gate never returns `allow`.
    pub const L4: Self = Self(4);
    /// L5, prohibited: never runs; the gate always returns `deny`.
    pub const L5: Self = Self(5);
    /// Every rung, in order.
    pub const ALL: [Self; 6] = [Self::L0, Self::L1, Self::L2, Self::L3, Self::L4, Self::L5];

    /// The rung `n`, or `None` above 5.
    #[must_use]
    pub const fn new(n: u8) -> Option<Self> {
        if n <= 5 { Some(Self(n)) } else { None }
    }

    /// The rung's number, 0..=5.
    #[must_use]
    pub const fn get(self) -> u8 {
        self.0
    }

    /// The rung's name from §A1: `observe only`, `suggest only`, `isolated artifact`,
    /// `local reversible`, `external / shared` or `prohibited`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self.0 {
            0 => "observe only",
            1 => "suggest only",
            2 => "isolated artifact",
            3 => "local reversible",
            4 => "external / shared",
            _ => "prohibited",
        }
    }

    /// Parses a JSON trust level (see the type's docs).
    ///
    /// # Errors
    /// [`NotATrustLevel`] naming the value when it is not an integral number in 0..=5.
    pub fn from_json(v: &Value) -> Result<Self, NotATrustLevel> {
        json_integer(v)
            .and_then(|n| u8::try_from(n).ok())
            .and_then(Self::new)
            .ok_or_else(|| NotATrustLevel(v.to_string()))
    }
}

impl fmt::Display for TrustLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "L{}", self.0)
    }
}

impl Serialize for TrustLevel {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u8(self.0)
    }
}

impl<'de> Deserialize<'de> for TrustLevel {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Self::from_json(&Value::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

/// A JSON number with an integral value that fits an `i64` exactly (a float only up to 2^53).
fn json_integer(v: &Value) -> Option<i64> {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    v.as_i64().or_else(|| v.as_f64().filter(|f| f.fract() == 0.0 && f.abs() <= EXACT).map(|f| f as i64))
}

/// How far an action's effects reach (§A2). Ordered `self < session < project < external`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BlastRadius {
    /// `self`: the acting agent only.
    #[serde(rename = "self")]
    SelfOnly,
    /// `session`: the current session.
    Session,
    /// `project`: the project's shared state.
    Project,
    /// `external`: anything outside the project.
    External,
}

/// Whether an action can be undone (§A2). Ordered from easiest to undo.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Reversibility {
    /// `reversible`: can be undone directly.
    Reversible,
    /// `compensable`: a compensating action can offset it.
    Compensable,
    /// `irreversible`: cannot be undone.
    Irreversible,
}

/// The level of a [`ResourceScope`] (§A2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScopeLevel {
    /// `global`.
    Global,
    /// `organization`.
    Organization,
    /// `user`.
    User,
    /// `project`.
    Project,
    /// `repo`.
    Repo,
    /// `session`.
    Session,
}

/// The resource an action touches: `{level, identifier}` (§A2). Compared by exact equality in
/// rule matching (no hierarchy, §A4).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourceScope {
    /// The scope's level.
    pub level: ScopeLevel,
    /// The resource's identifier at that level, e.g. a repository name.
    pub identifier: String,
}

/// The contract's 3-value data sensitivity (§A2): `public`, `private`, `secret`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DataSensitivity {
    /// `public`.
    Public,
    /// `private`.
    Private,
    /// `secret`.
    Secret,
}

/// The 4-value clearance of an approval authority (§A5): ordered
/// `public < internal < confidential < secret`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Clearance {
    /// `public`.
    Public,
    /// `internal`.
    Internal,
    /// `confidential`.
    Confidential,
    /// `secret`.
    Secret,
}

/// A check recorded at proposal and, when `must_revalidate_at_execution`, re-checked just before
/// execution (§A2, §A3). All four fields are required (`parameters` and `expected_at_approval`
/// may be any JSON value, `null` included); unknown fields are refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActionPrecondition {
    /// The checker's key, e.g. `git.head_unchanged`.
    pub check_id: String,
    /// The checker's parameters.
    pub parameters: Value,
    /// The value observed when the action was proposed and approved.
    pub expected_at_approval: Value,
    /// Whether [`revalidate`] re-checks it at execution.
    pub must_revalidate_at_execution: bool,
}

/// The typed action contract (§A2). All six fields are required.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ActionContract {
    /// The rung the action needs.
    pub required_level: TrustLevel,
    /// How far its effects reach.
    pub blast_radius: BlastRadius,
    /// Whether it can be undone.
    pub reversibility: Reversibility,
    /// The resource it touches.
    pub scope: ResourceScope,
    /// The sensitivity of the data it handles.
    pub data_sensitivity: DataSensitivity,
    /// Checks to re-run before execution, the tool's first (see [`merge_preconditions`]).
    pub preconditions: Vec<ActionPrecondition>,
}

impl ActionContract {
    /// Parses a contract strictly: an object with exactly the six fields of §A2, each of its
    /// type; unknown fields (here and in `scope` and each precondition) are refused.
    ///
    /// # Errors
    /// [`LadderError`] naming the field by path, e.g. `contract.scope.level` or
    /// `contract.preconditions[1]`.
    pub fn from_json(v: &Value) -> Result<Self, LadderError> {
        let f = Fields::of(
            v,
            "contract",
            &["required_level", "blast_radius", "reversibility", "scope", "data_sensitivity", "preconditions"],
        )?;
        Ok(Self {
            required_level: f.req("required_level")?,
            blast_radius: f.req("blast_radius")?,
            reversibility: f.req("reversibility")?,
            scope: f.req("scope")?,
            data_sensitivity: f.req("data_sensitivity")?,
            preconditions: f.req_with("preconditions", |v, p| items(v, p, leaf))?,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Errors and strict parsing
// ---------------------------------------------------------------------------------------------

/// Why a contract, a policy or a ceiling was refused, or a contract fell below its tool's floor.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LadderError {
    /// A required field is absent.
    #[error("missing required field `{field}`")]
    Missing {
        /// The field's path, e.g. `contract.blast_radius`.
        field: String,
    },
    /// A field the schema does not have.
    #[error("unknown field `{field}` (expected one of: {expected})")]
    Unknown {
        /// The field's path.
        field: String,
        /// The fields allowed there, comma-separated.
        expected: String,
    },
    /// A field has the wrong type or value.
    #[error("`{field}`: {message}")]
    Invalid {
        /// The field's path, e.g. `policy.rules[0].effect`.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// An auto-approve ceiling that is not an integer in `[0,3]` (§A4).
    #[error("auto_approve_up_to must be an integer in [0,3], got {got}")]
    Ceiling {
        /// The value as given.
        got: String,
    },
    /// A contract below its tool's `required_trust_level` (§A1): Lodestar's `propose()` throws.
    #[error("contract required_level {level} is below the tool's floor {floor}")]
    BelowToolFloor {
        /// The contract's level.
        level: TrustLevel,
        /// The tool's `required_trust_level`.
        floor: TrustLevel,
    },
}

fn invalid(field: &str, message: impl Into<String>) -> LadderError {
    LadderError::Invalid { field: field.to_owned(), message: message.into() }
}

/// An object's fields, read by key with paths for errors; unknown keys are refused up front.
struct Fields<'a> {
    map: &'a Map<String, Value>,
    path: &'a str,
}

impl<'a> Fields<'a> {
    fn of(v: &'a Value, path: &'a str, known: &[&str]) -> Result<Self, LadderError> {
        let Value::Object(map) = v else { return Err(invalid(path, "must be an object")) };
        if let Some(k) = map.keys().find(|k| !known.contains(&k.as_str())) {
            return Err(LadderError::Unknown { field: format!("{path}.{k}"), expected: known.join(", ") });
        }
        Ok(Self { map, path })
    }

    /// An optional field: absent is `None`; present (`null` included) must parse.
    fn opt_with<T>(
        &self,
        key: &str,
        parse: impl FnOnce(&Value, &str) -> Result<T, LadderError>,
    ) -> Result<Option<T>, LadderError> {
        self.map.get(key).map(|v| parse(v, &format!("{}.{key}", self.path))).transpose()
    }

    fn req_with<T>(
        &self,
        key: &str,
        parse: impl FnOnce(&Value, &str) -> Result<T, LadderError>,
    ) -> Result<T, LadderError> {
        self.opt_with(key, parse)?.ok_or_else(|| LadderError::Missing { field: format!("{}.{key}", self.path) })
    }

    fn opt<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>, LadderError> {
        self.opt_with(key, leaf)
    }

    fn req<T: DeserializeOwned>(&self, key: &str) -> Result<T, LadderError> {
        self.req_with(key, leaf)
    }
}

/// A value of a serde type, its error prefixed with its path.
fn leaf<T: DeserializeOwned>(v: &Value, path: &str) -> Result<T, LadderError> {
    T::deserialize(v).map_err(|e| invalid(path, e.to_string()))
}

/// An array, each item parsed at `path[i]`.
fn items<T>(
    v: &Value,
    path: &str,
    parse: impl Fn(&Value, &str) -> Result<T, LadderError>,
) -> Result<Vec<T>, LadderError> {
    let Value::Array(a) = v else { return Err(invalid(path, "must be an array")) };
    a.iter().enumerate().map(|(i, item)| parse(item, &format!("{path}[{i}]"))).collect()
}

// ---------------------------------------------------------------------------------------------
// Policy documents (§A4)
// ---------------------------------------------------------------------------------------------

/// A policy document `{id, version, rules}` (§A4). There is deliberately no default field: an
/// action no rule matches is denied by the engine. [`policy_hash`] covers exactly the three
/// document fields.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Policy {
    /// The policy's id, e.g. `auto-approve`.
    pub id: String,
    /// Its version, e.g. `ceiling-L2`.
    pub version: String,
    /// The rules, evaluated first match in document order.
    pub rules: Vec<Rule>,
    /// Who decisions under this policy are attributed to (the approver id of an auto-approve
    /// preset). Not part of the document or its hash; `None` gives `policy:<id>@<version>`.
    #[serde(skip)]
    pub decider_id: Option<String>,
}

/// One rule: `{match, effect, approval?, reason}` (§A4).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rule {
    /// The conditions, all of which must hold (`match` on the wire).
    #[serde(rename = "match")]
    pub when: RuleMatch,
    /// What a match decides.
    pub effect: Effect,
    /// The approval requirement; only on `require_approval` rules.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval: Option<RuleApproval>,
    /// Copied verbatim into the decision.
    pub reason: String,
}

/// A rule's effect (§A4), serialized `allow`, `deny`, `require_approval`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    /// Allow (at L4, held by the floor instead).
    Allow,
    /// Deny.
    Deny,
    /// Hold for a human approval.
    RequireApproval,
}

/// A JSON value that is not a trust level ([`TrustLevel::from_json`]): the value, as JSON.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected an integer trust level 0..=5, got {0}")]
pub struct NotATrustLevel(pub String);

/// A rule's conditions (§A4). Every present field must hold (AND); an absent field matches
/// anything, so an empty match matches every action. A present field set to `null` is refused.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RuleMatch {
    /// A glob over the tool key: `*` matches any run of characters (none included, `.` too);
    /// every other character is literal ([`Glob::star_only`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<Glob>,
    /// The contract's blast radius is at most this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_blast_radius: Option<BlastRadius>,
    /// The contract's reversibility is one of these (an empty list matches nothing).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reversibility: Option<Vec<Reversibility>>,
    /// The contract's scope equals this exactly.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<ResourceScope>,
    /// The contract's sensitivity equals this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_sensitivity: Option<DataSensitivity>,
    /// The contract's level is at most this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub required_level_lte: Option<TrustLevel>,
}

/// The approval part of a `require_approval` rule: `{required_authority?}` (§A4).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RuleApproval {
    /// Who may resolve the hold.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub required_authority: Option<RequiredAuthority>,
}

/// The authority a resolver must clear (§A5): every present field. `{}` means any configured
/// resolver.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RequiredAuthority {
    /// The approver's `trust_baseline` must be at least this, in `[0,1]`. Written as JavaScript
    /// writes it (`1`, not `1.0`), so [`policy_hash`] agrees with Lodestar's.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "js_number")]
    pub min_trust_baseline: Option<f64>,
    /// The approver's clearance must be at least this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sensitivity_clearance: Option<Clearance>,
    /// One of the approver's scopes must be `global` or equal this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<ResourceScope>,
}

impl Policy {
    /// Parses a policy document strictly: `{id, version, rules}`, each rule `{match, effect,
    /// approval?, reason}` with the six match fields of §A4. `approval` is refused on rules that
    /// are not `require_approval`. `signature` and `signed_by` are refused: warrant does not
    /// verify policy signatures (`docs/conformance.md, "Trust ladder and tool tiers"`).
    ///
    /// # Errors
    /// [`LadderError`] naming the field by path, e.g. `policy.rules[2].match.max_blast_radius`.
    pub fn from_json(v: &Value) -> Result<Self, LadderError> {
        let f = Fields::of(v, "policy", &["id", "version", "rules"])?;
        Ok(Self {
            id: f.req("id")?,
            version: f.req("version")?,
            rules: f.req_with("rules", |v, p| items(v, p, Rule::parse))?,
            decider_id: None,
        })
    }

    /// The id decisions are attributed to: [`Policy::decider_id`] or `policy:<id>@<version>`.
    #[must_use]
    pub fn decider(&self) -> String {
        self.decider_id.clone().unwrap_or_else(|| format!("policy:{}@{}", self.id, self.version))
    }
}

impl Rule {
    fn parse(v: &Value, path: &str) -> Result<Self, LadderError> {
        let f = Fields::of(v, path, &["match", "effect", "approval", "reason"])?;
        let effect = f.req("effect")?;
        let approval = f.opt_with("approval", |v, p| {
            if effect != Effect::RequireApproval {
                return Err(invalid(p, "only allowed on require_approval rules"));
            }
            let f = Fields::of(v, p, &["required_authority"])?;
            Ok(RuleApproval { required_authority: f.opt_with("required_authority", RequiredAuthority::parse)? })
        })?;
        Ok(Self { when: f.req_with("match", RuleMatch::parse)?, effect, approval, reason: f.req("reason")? })
    }
}

impl RuleMatch {
    fn parse(v: &Value, path: &str) -> Result<Self, LadderError> {
        let f = Fields::of(
            v,
            path,
            &["tool", "max_blast_radius", "reversibility", "scope", "data_sensitivity", "required_level_lte"],
        )?;
        Ok(Self {
            tool: f.opt::<String>("tool")?.map(|t| Glob::star_only(&t)),
            max_blast_radius: f.opt("max_blast_radius")?,
            reversibility: f.opt("reversibility")?,
            scope: f.opt("scope")?,
            data_sensitivity: f.opt("data_sensitivity")?,
            required_level_lte: f.opt("required_level_lte")?,
        })
    }

    /// Whether every present condition holds for `tool` and `contract` (§A4).
    #[must_use]
    pub fn matches(&self, tool: &str, contract: &ActionContract) -> bool {
        self.tool.as_ref().is_none_or(|g| g.is_match(tool))
            && self.max_blast_radius.is_none_or(|m| contract.blast_radius <= m)
            && self.reversibility.as_ref().is_none_or(|set| set.contains(&contract.reversibility))
            && self.scope.as_ref().is_none_or(|s| *s == contract.scope)
            && self.data_sensitivity.is_none_or(|d| d == contract.data_sensitivity)
            && self.required_level_lte.is_none_or(|l| contract.required_level <= l)
    }
}

impl RequiredAuthority {
    fn parse(v: &Value, path: &str) -> Result<Self, LadderError> {
        let f = Fields::of(v, path, &["min_trust_baseline", "sensitivity_clearance", "scope"])?;
        let min_trust_baseline = f.opt_with("min_trust_baseline", |v, p| {
            v.as_f64()
                .filter(|b| (0.0..=1.0).contains(b))
                .ok_or_else(|| invalid(p, format!("expected a number in [0,1], got {v}")))
        })?;
        Ok(Self { min_trust_baseline, sensitivity_clearance: f.opt("sensitivity_clearance")?, scope: f.opt("scope")? })
    }
}

/// An `f64` as JavaScript's `JSON.stringify` writes it in `[0,1]`: integral values without `.0`.
fn js_number<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(b) if b.fract() == 0.0 && b.abs() <= 1.0 => s.serialize_i8(if *b > 0.0 { 1 } else { 0 }),
        Some(b) => s.serialize_f64(*b),
        None => s.serialize_none(),
    }
}

/// The §A4 preset `autoApprovePolicy({auto_approve_up_to: n, approver_id})`: id `auto-approve`,
/// version `ceiling-L<n>`, one rule `{match: {required_level_lte: n}, effect: allow, reason:
/// "auto-approved at or below L<n> (ceiling)"}`, decisions attributed to `approver_id`. Under it:
/// L0..=n allow, above n up to L3 deny (no rule matched), L4 hold, L5 deny.
///
/// # Errors
/// [`LadderError::Ceiling`] unless `0 <= n <= 3`.
pub fn auto_approve_policy(n: i64, approver_id: &str) -> Result<Policy, LadderError> {
    let level = u8::try_from(n)
        .ok()
        .and_then(TrustLevel::new)
        .filter(|l| *l <= TrustLevel::L3)
        .ok_or_else(|| LadderError::Ceiling { got: n.to_string() })?;
    Ok(Policy {
        id: "auto-approve".to_owned(),
        version: format!("ceiling-{level}"),
        rules: vec![Rule {
            when: RuleMatch { required_level_lte: Some(level), ..RuleMatch::default() },
            effect: Effect::Allow,
            approval: None,
            reason: format!("auto-approved at or below {level} (ceiling)"),
        }],
        decider_id: Some(approver_id.to_owned()),
    })
}

/// The default ceiling of `lodestar guard wrap --auto-approve-up-to` and the proxy (§A4).
pub const DEFAULT_AUTO_APPROVE_CEILING: i64 = 2;

/// Lower-case hex SHA-256 of the canonical `{id, version, rules}` (§A4 policy signing, §A7.8),
/// absent optionals left out. The ceiling-L3 preset hashes to
/// `f4d59ac6298f0321e9a3c00555c1a7d88d5dfa8187ef910b48969275c2327637`.
#[must_use]
pub fn policy_hash(policy: &Policy) -> String {
    // Serializing these types cannot fail (string keys only, finite numbers).
    let doc = serde_json::to_value(policy).unwrap_or_default();
    crate::canonical::hex(&crate::canonical::canonical_digest(&doc))
}

// ---------------------------------------------------------------------------------------------
// The gate (§A4)
// ---------------------------------------------------------------------------------------------

/// The gate's three outcomes (§A4), ranked `allow < hold < deny`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Approved without a human.
    Allow,
    /// Not approved; needs a human approval.
    Hold,
    /// Not approved.
    Deny,
}

impl Verdict {
    /// The §A6 refusal kind an agent sees: `deny` → `policy_denied`, `hold` →
    /// `approval_required` (the proxy with no approval wait); `allow` → none.
    #[must_use]
    pub const fn denial_kind(self) -> Option<DenialKind> {
        match self {
            Self::Allow => None,
            Self::Hold => Some(DenialKind::ApprovalRequired),
            Self::Deny => Some(DenialKind::PolicyDenied),
        }
    }
}

/// Where a decision came from (§A4): `floor`, `rule` or `default`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MatchSource {
    /// A ladder floor (L5, L4, or the tool floor).
    Floor,
    /// A rule's effect.
    Rule,
    /// The structural deny default (no rule matched at L0–L3).
    Default,
}

/// `matched`: `{source, rule_index?}` (§A4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Matched {
    /// Where the decision came from.
    pub source: MatchSource,
    /// The matching rule's 0-based index, when a rule matched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule_index: Option<usize>,
}

/// The gate's decision `{verdict, reason, decider_id, matched, required_authority?}` (§A4), in
/// Lodestar's field names. `required_authority` is present on every `hold` (the rule's, or `{}`)
/// and absent otherwise.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LadderDecision {
    /// allow, hold or deny.
    pub verdict: Verdict,
    /// The rule's reason verbatim, or the floor's or default's sentence.
    pub reason: String,
    /// Who decided ([`Policy::decider`]).
    pub decider_id: String,
    /// Where the decision came from.
    pub matched: Matched,
    /// Who may resolve a hold.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub required_authority: Option<RequiredAuthority>,
}

impl LadderDecision {
    /// The decision as a JSON object.
    #[must_use]
    pub fn to_json(&self) -> Value {
        // Serializing this type cannot fail (string keys only, finite numbers).
        serde_json::to_value(self).unwrap_or_default()
    }
}

/// Reason of the L4 floor when no rule matches (§A4 step 3).
pub const REASON_L4_FLOOR: &str = "L4 (external/shared) always requires approval";
/// Reason of the L4 floor over a matching `allow` rule (§A4 step 3).
pub const REASON_ALLOW_CANNOT_LIFT: &str = "a matching allow rule cannot lift the floor";
/// Reason of the L5 floor (§A4 step 1; the spec gives no text, this is warrant's).
pub const REASON_L5_FLOOR: &str = "L5 (prohibited) can never run";

/// The three-valued gate (§A4), a pure function of policy and action:
/// 1. level 5 → `deny` (floor), before any rule;
/// 2. the first rule in document order whose match holds;
/// 3. level 4: `deny` rule → deny; `require_approval` → hold with its authority; `allow` rule →
///    hold (floor, [`REASON_ALLOW_CANNOT_LIFT`]); no match → hold (floor, [`REASON_L4_FLOOR`]);
/// 4. levels 0–3: the rule's effect (allow, deny, hold);
/// 5. no match at 0–3 → deny (default, "no policy rule matched … structural deny default").
///
/// The optional arbitration hook (escalation) is not implemented.
#[must_use]
pub fn gate(policy: &Policy, tool: &str, contract: &ActionContract) -> LadderDecision {
    let level = contract.required_level;
    let decide = |verdict, source, rule_index, reason: &str| LadderDecision {
        verdict,
        reason: reason.to_owned(),
        decider_id: policy.decider(),
        matched: Matched { source, rule_index },
        required_authority: (verdict == Verdict::Hold).then(RequiredAuthority::default),
    };
    if level >= TrustLevel::L5 {
        return decide(Verdict::Deny, MatchSource::Floor, None, REASON_L5_FLOOR);
    }
    let l4 = level == TrustLevel::L4;
    let Some((i, rule)) = policy.rules.iter().enumerate().find(|(_, r)| r.when.matches(tool, contract)) else {
        return if l4 {
            decide(Verdict::Hold, MatchSource::Floor, None, REASON_L4_FLOOR)
        } else {
            let reason = format!("no policy rule matched tool {tool:?} at {level}: structural deny default");
            decide(Verdict::Deny, MatchSource::Default, None, &reason)
        };
    };
    match rule.effect {
        Effect::Allow if l4 => decide(Verdict::Hold, MatchSource::Floor, Some(i), REASON_ALLOW_CANNOT_LIFT),
        Effect::Allow => decide(Verdict::Allow, MatchSource::Rule, Some(i), &rule.reason),
        Effect::Deny => decide(Verdict::Deny, MatchSource::Rule, Some(i), &rule.reason),
        Effect::RequireApproval => LadderDecision {
            required_authority: Some(
                rule.approval.as_ref().and_then(|a| a.required_authority.clone()).unwrap_or_default(),
            ),
            ..decide(Verdict::Hold, MatchSource::Rule, Some(i), &rule.reason)
        },
    }
}

// ---------------------------------------------------------------------------------------------
// Tool floors and preconditions (§A1, §A3)
// ---------------------------------------------------------------------------------------------

/// A registered tool's defaults (§A1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolDefaults {
    /// The lowest level a contract for this tool may declare.
    pub required_trust_level: TrustLevel,
    /// Its reversibility.
    pub reversibility: Reversibility,
    /// Its blast radius.
    pub blast_radius: BlastRadius,
    /// The sandbox it runs in.
    pub sandbox: &'static str,
    /// The permissions it is granted.
    pub permissions: &'static [&'static str],
}

/// What an unregistered tool gets (§A1, Lodestar's `CONSERVATIVE_TOOL_DEFAULTS`): floor L3,
/// irreversible, external, `controlled-shell`, fs.read, fs.write, shell.exec, network.egress.
/// Tool annotations from the agent side are not trusted.
pub const CONSERVATIVE_TOOL_DEFAULTS: ToolDefaults = ToolDefaults {
    required_trust_level: TrustLevel::L3,
    reversibility: Reversibility::Irreversible,
    blast_radius: BlastRadius::External,
    sandbox: "controlled-shell",
    permissions: &["fs.read", "fs.write", "shell.exec", "network.egress"],
};

/// The tool floor (§A1): a contract may not declare a level below its tool's
/// `required_trust_level`. `floor` is the registered tool's level; `None` (unregistered) uses
/// [`CONSERVATIVE_TOOL_DEFAULTS`] (L3). A caller cannot lower a floor.
///
/// # Errors
/// [`LadderError::BelowToolFloor`]; Lodestar throws at `propose`, warrant denies
/// ([`gate_with_tool_floor`]).
pub fn check_tool_floor(contract: &ActionContract, floor: Option<TrustLevel>) -> Result<(), LadderError> {
    let floor = floor.unwrap_or(CONSERVATIVE_TOOL_DEFAULTS.required_trust_level);
    if contract.required_level < floor {
        return Err(LadderError::BelowToolFloor { level: contract.required_level, floor });
    }
    Ok(())
}

/// [`check_tool_floor`], then [`gate`]: a contract below its tool's floor is `deny` (source
/// `floor`, the error's sentence as reason).
#[must_use]
pub fn gate_with_tool_floor(
    policy: &Policy,
    tool: &str,
    contract: &ActionContract,
    floor: Option<TrustLevel>,
) -> LadderDecision {
    match check_tool_floor(contract, floor) {
        Ok(()) => gate(policy, tool, contract),
        Err(e) => LadderDecision {
            verdict: Verdict::Deny,
            reason: e.to_string(),
            decider_id: policy.decider(),
            matched: Matched { source: MatchSource::Floor, rule_index: None },
            required_authority: None,
        },
    }
}

/// The preconditions `propose` stores (§A3): the tool's own first, then the caller's. The caller
/// can add checks but not remove or reorder the tool's; a caller check with the same `check_id`
/// is an extra check, not a replacement (all must hold).
#[must_use]
pub fn merge_preconditions(tool: &[ActionPrecondition], caller: &[ActionPrecondition]) -> Vec<ActionPrecondition> {
    tool.iter().chain(caller).cloned().collect()
}

/// The `check_id`s of two-phase execution warrant can observe (`lodestar-and-tiers.md` §A5):
/// the observer (`warrant_engine::preconditions`, a surface) knows these, and a tool table that names
/// another is refused when it is read.
pub const PRECONDITION_CHECKS: [&str; 4] = ["file.sha256", "file.exists", "git.head_unchanged", "git.head"];

/// One re-checked precondition (§A3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PreconditionCheck {
    /// The checker's key.
    pub check_id: String,
    /// `expected_at_approval`.
    pub expected: Value,
    /// What the checker observed now; absent when it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed: Option<Value>,
    /// Whether `observed == expected` (JSON value equality).
    pub holds: bool,
    /// The checker's error, when it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The first failed check, as the execution refusal (§A3, §A6).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PreconditionFailure {
    /// Always [`DenialKind::PreconditionFailed`].
    pub kind: DenialKind,
    /// The check that failed.
    pub check_id: String,
    /// `expected_at_approval`.
    pub expected: Value,
    /// The value observed now; absent when the checker failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed: Option<Value>,
    /// The audit detail naming the check, the expected and the observed value (or the error).
    pub detail: String,
}

/// The execution-time re-check (§A3): `{ok, checks, failure?}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Revalidation {
    /// True when every re-checked precondition holds.
    pub ok: bool,
    /// One entry per precondition with `must_revalidate_at_execution`, in order.
    pub checks: Vec<PreconditionCheck>,
    /// The first failure; the action is then rejected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<PreconditionFailure>,
}

/// Re-checks every precondition with `must_revalidate_at_execution` (§A3); others are skipped
/// and not passed to `observe`. `observe` returns the current value or an error; a check holds
/// when the observed value equals `expected_at_approval` as serde_json values (objects ignore
/// key order; numbers compare by representation, so `1` ≠ `1.0`). A checker error fails the
/// check (fail closed). Every re-checked precondition is observed, also after a failure, so the
/// audit shows them all; `failure` is the first.
pub fn revalidate<E: fmt::Display>(
    preconditions: &[ActionPrecondition],
    mut observe: impl FnMut(&ActionPrecondition) -> Result<Value, E>,
) -> Revalidation {
    let checks: Vec<PreconditionCheck> = preconditions
        .iter()
        .filter(|p| p.must_revalidate_at_execution)
        .map(|p| {
            let (observed, error) = match observe(p) {
                Ok(v) => (Some(v), None),
                Err(e) => (None, Some(e.to_string())),
            };
            PreconditionCheck {
                check_id: p.check_id.clone(),
                expected: p.expected_at_approval.clone(),
                holds: observed.as_ref() == Some(&p.expected_at_approval),
                observed,
                error,
            }
        })
        .collect();
    let failure = checks.iter().find(|c| !c.holds).map(|c| PreconditionFailure {
        kind: DenialKind::PreconditionFailed,
        check_id: c.check_id.clone(),
        expected: c.expected.clone(),
        observed: c.observed.clone(),
        detail: match (&c.observed, &c.error) {
            (Some(o), _) => format!("precondition {:?} failed: expected {}, observed {o}", c.check_id, c.expected),
            (None, e) => format!(
                "precondition {:?} failed: expected {}, checker error: {}",
                c.check_id,
                c.expected,
                e.as_deref().unwrap_or("no value")
            ),
        },
    });
    Revalidation { ok: failure.is_none(), checks, failure }
}

/// The kinds of a refused tool call (§A6, `_meta._lodestar.kind`), serialized in the wire
/// spelling ([`DenialKind::as_str`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DenialKind {
    /// `policy_denied`: the gate said deny.
    PolicyDenied,
    /// `approval_required`: the gate said hold and no approval wait is configured.
    ApprovalRequired,
    /// `approval_timeout`: the hold's deadline passed with no valid resolution.
    ApprovalTimeout,
    /// `approval_denied`: a human denied the hold.
    ApprovalDenied,
    /// `precondition_failed`: a precondition no longer holds at execution.
    PreconditionFailed,
    /// `execution_failed`: the tool itself failed.
    ExecutionFailed,
    /// `tool_not_advertised`: the tool is not offered.
    ToolNotAdvertised,
    /// `tool_registration_lost`: the tool's registration disappeared.
    ToolRegistrationLost,
    /// `proxy_not_initialised`: the proxy was not ready.
    ProxyNotInitialised,
}

impl DenialKind {
    /// Every kind, in §A6 order.
    pub const ALL: [Self; 9] = [
        Self::PolicyDenied,
        Self::ApprovalRequired,
        Self::ApprovalTimeout,
        Self::ApprovalDenied,
        Self::PreconditionFailed,
        Self::ExecutionFailed,
        Self::ToolNotAdvertised,
        Self::ToolRegistrationLost,
        Self::ProxyNotInitialised,
    ];

    /// The wire spelling, e.g. `precondition_failed`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::PolicyDenied => "policy_denied",
            Self::ApprovalRequired => "approval_required",
            Self::ApprovalTimeout => "approval_timeout",
            Self::ApprovalDenied => "approval_denied",
            Self::PreconditionFailed => "precondition_failed",
            Self::ExecutionFailed => "execution_failed",
            Self::ToolNotAdvertised => "tool_not_advertised",
            Self::ToolRegistrationLost => "tool_registration_lost",
            Self::ProxyNotInitialised => "proxy_not_initialised",
        }
    }
}

// ---------------------------------------------------------------------------------------------
// `warrant eval` adapters (docs/eval-ladder.md)
// ---------------------------------------------------------------------------------------------

/// The signature of an eval adapter: a request object to a response object or an error.
pub type EvalOp = fn(&Map<String, Value>) -> Result<Value, RequestError>;

/// The ops of this module and [`crate::tiers`], by name, for the evaluator's dispatch.
pub const EVAL_OPS: [(&str, EvalOp); 3] = [
    ("tiers.gate", crate::tiers::eval_tiers_gate),
    ("ladder.gate", eval_ladder_gate),
    ("ladder.revalidate", eval_ladder_revalidate),
];

fn bad(code: &'static str, message: impl fmt::Display) -> RequestError {
    RequestError { code, message: message.to_string() }
}

/// `warrant eval` op `ladder.gate` (`docs/eval-ladder.md`).
///
/// Request: `tool` (string), `contract` (an [`ActionContract`]), and either `policy` (a
/// [`Policy`] document) or `auto_approve_up_to` (integer 0–3, default 2), not both; optional
/// `approver_id` (string, the decider) and `required_trust_level` (the tool's floor, 0–5; when
/// given, [`gate_with_tool_floor`] applies; `warrant eval` also accepts the deprecated
/// spelling `tool_floor`). Response: the [`LadderDecision`] plus
/// `policy_hash` ([`policy_hash`] of the policy used).
///
/// # Errors
/// `invalid_request` (missing or mistyped `tool`, `approver_id`, `required_trust_level`; a bad ceiling;
/// both `policy` and `auto_approve_up_to`), `invalid_contract`, `invalid_policy`.
pub fn eval_ladder_gate(req: &Map<String, Value>) -> Result<Value, RequestError> {
    let tool =
        req.get("tool").and_then(Value::as_str).ok_or_else(|| bad("invalid_request", "missing string `tool`"))?;
    let contract = req.get("contract").ok_or_else(|| bad("invalid_request", "missing `contract`"))?;
    let contract = ActionContract::from_json(contract).map_err(|e| bad("invalid_contract", e))?;
    let approver = match req.get("approver_id") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(bad("invalid_request", "`approver_id` must be a string")),
    };
    let mut policy = match (req.get("policy"), req.get("auto_approve_up_to")) {
        (Some(_), Some(_)) => {
            return Err(bad("invalid_request", "give either `policy` or `auto_approve_up_to`, not both"));
        }
        (Some(p), None) => Policy::from_json(p).map_err(|e| bad("invalid_policy", e))?,
        (None, ceiling) => {
            let n = match ceiling {
                None => DEFAULT_AUTO_APPROVE_CEILING,
                Some(v) => json_integer(v)
                    .ok_or_else(|| bad("invalid_request", LadderError::Ceiling { got: v.to_string() }))?,
            };
            auto_approve_policy(n, "").map_err(|e| bad("invalid_request", e))?
        }
    };
    policy.decider_id = approver;
    let decision = match req.get("required_trust_level") {
        None => gate(&policy, tool, &contract),
        Some(v) => {
            let floor =
                TrustLevel::from_json(v).map_err(|e| bad("invalid_request", format!("`required_trust_level`: {e}")))?;
            gate_with_tool_floor(&policy, tool, &contract, Some(floor))
        }
    };
    let mut out = decision.to_json();
    out["policy_hash"] = Value::String(policy_hash(&policy));
    Ok(out)
}

/// `warrant eval` op `ladder.revalidate` (`docs/eval-ladder.md`).
///
/// Request: `preconditions` (an array of [`ActionPrecondition`]) and `observed` (an object
/// mapping `check_id` to its current value; a re-checked precondition with no entry fails
/// closed). Response: the [`Revalidation`], `{ok, checks, failure?}`.
///
/// # Errors
/// `invalid_request` (missing `preconditions`, `observed` not an object), `invalid_contract`
/// (a malformed precondition, named by index).
pub fn eval_ladder_revalidate(req: &Map<String, Value>) -> Result<Value, RequestError> {
    let pre = req.get("preconditions").ok_or_else(|| bad("invalid_request", "missing `preconditions`"))?;
    let pre: Vec<ActionPrecondition> = items(pre, "preconditions", leaf).map_err(|e| bad("invalid_contract", e))?;
    let Some(Value::Object(observed)) = req.get("observed") else {
        return Err(bad("invalid_request", "`observed` must be an object mapping check_id to the current value"));
    };
    let result = revalidate(&pre, |p| {
        observed.get(&p.check_id).cloned().ok_or_else(|| format!("no observed value for {:?}", p.check_id))
    });
    // Serializing this type cannot fail (string keys only).
    Ok(serde_json::to_value(&result).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Every example in `docs/eval-ladder.md`: a ```json request block followed by a ```json
    /// response block, answered through [`EVAL_OPS`].
    #[test]
    fn eval_doc_examples_are_answered_as_documented() {
        let doc = include_str!("../../../docs/eval-ladder.md");
        let blocks: Vec<Value> = doc
            .split("```json\n")
            .skip(1)
            .map(|b| serde_json::from_str(b.split("```").next().unwrap_or_default()).expect("example block is JSON"))
            .collect();
        assert_eq!(blocks.len() % 2, 0, "examples come in request/response pairs");
        let mut seen = Vec::new();
        for pair in blocks.chunks(2) {
            let req = pair[0].as_object().expect("request object");
            let op = req["op"].as_str().expect("op");
            let (_, f) = EVAL_OPS.iter().find(|(name, _)| *name == op).expect("known op");
            let got = match f(req) {
                Ok(v) => v,
                Err(e) => json!({"error": {"code": e.code, "message": e.message}}),
            };
            assert_eq!(got, pair[1], "example for {op}");

            seen.push(op);
        }
        for (op, _) in EVAL_OPS {
            assert!(seen.contains(&op), "no example for {op}");
        }
    }

    #[test]
    fn wire_spellings_agree_with_serde() {
        for k in DenialKind::ALL {
            assert_eq!(serde_json::to_value(k).ok(), Some(json!(k.as_str())));
        }
        assert_eq!(serde_json::to_value(BlastRadius::SelfOnly).ok(), Some(json!("self")));
        assert_eq!(serde_json::to_value(Effect::RequireApproval).ok(), Some(json!("require_approval")));
    }

    #[test]
    fn integral_trust_baselines_hash_as_javascript_writes_them() {
        let doc = |b: Value| {
            json!({"id": "p", "version": "1", "rules": [{"match": {}, "effect": "require_approval",
                   "approval": {"required_authority": {"min_trust_baseline": b}}, "reason": "r"}]})
        };
        for (given, written) in
            [(json!(1), json!(1)), (json!(1.0), json!(1)), (json!(0.0), json!(0)), (json!(0.8), json!(0.8))]
        {
            let p = Policy::from_json(&doc(given.clone())).expect("policy");
            assert_eq!(serde_json::to_value(&p).ok(), Some(doc(written.clone())), "{given}");
            let expected = crate::canonical::hex(&crate::canonical::canonical_digest(&doc(written)));
            assert_eq!(policy_hash(&p), expected);
        }
    }

    #[test]
    fn null_optionals_are_refused_not_read_as_absent() {
        let p =
            json!({"id": "p", "version": "1", "rules": [{"match": {"tool": null}, "effect": "allow", "reason": "r"}]});
        let e = Policy::from_json(&p).expect_err("null tool");
        assert!(e.to_string().contains("policy.rules[0].match.tool"), "{e}");
    }
}
