//! Action classes and their policies: class types, risks, the reference runtime's policies
//! (canonical and inferred), graduation thresholds, and a class read from TOML or JSON.

use super::PolicyError;
use crate::packet::is_class_id;
use crate::registry;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::fmt;

/// A class's spec type (`action-class.schema.json` `type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClassType {
    /// No effect outside the workspace.
    Internal,
    /// An external effect under structured controls (may graduate with constraints).
    ExternalControlled,
    /// An external effect: always approval-gated.
    External,
    /// Only the principal may execute.
    HumanOnly,
}

impl ClassType {
    /// The wire spelling (with its literal space and hyphen).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            ClassType::Internal => "internal",
            ClassType::ExternalControlled => "external controlled",
            ClassType::External => "external",
            ClassType::HumanOnly => "human-only",
        }
    }

    /// Parses the wire spelling.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        [ClassType::Internal, ClassType::ExternalControlled, ClassType::External, ClassType::HumanOnly]
            .into_iter()
            .find(|t| t.as_str() == s)
    }

    /// True for the types whose actions leave the workspace.
    #[must_use]
    pub fn is_external(self) -> bool {
        !matches!(self, ClassType::Internal)
    }
}

impl fmt::Display for ClassType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The four risk classes of the reference runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Risk {
    /// Low.
    Low,
    /// Medium.
    Medium,
    /// High.
    High,
    /// Critical.
    Critical,
}

impl Risk {
    /// The wire spelling.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Risk::Low => "low",
            Risk::Medium => "medium",
            Risk::High => "high",
            Risk::Critical => "critical",
        }
    }

    /// Parses the wire spelling.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        [Risk::Low, Risk::Medium, Risk::High, Risk::Critical].into_iter().find(|r| r.as_str() == s)
    }
}

/// The policy of one action class (the reference runtime's `ActionPolicy`, §1.3 and §2).
#[derive(Debug, Clone, PartialEq)]
pub struct ClassPolicy {
    /// Canonical class id.
    pub id: String,
    /// Spec type.
    pub kind: ClassType,
    /// Risk class.
    pub risk: Risk,
    /// Autonomy level (0–5) the evidence must support for the class to run without review.
    pub minimum_level: u8,
    /// Approval required by policy, whatever the evidence.
    pub requires_approval: bool,
    /// A receipt is expected after execution.
    pub receipt_required: bool,
    /// Only the principal may execute.
    pub human_only: bool,
    /// The reference's `externalSideEffects` (`none`, `email_send`, …).
    pub external_side_effects: String,
    /// Default constraints (the constraint vocabulary of `decision.schema.json`).
    pub constraints: Map<String, Value>,
    /// Description for humans.
    pub description: String,
    /// Legacy ids that canonicalize to this class.
    pub aliases: Vec<String>,
    /// True when the policy was inferred from the class name (an unknown class).
    pub inferred: bool,
    /// True for a local class added by configuration.
    pub local: bool,
}

impl ClassPolicy {
    /// True when the gate must require an exact approval: high or critical risk, approval by
    /// policy, or an `external` type (warrant: external classes never graduate, §3.1).
    #[must_use]
    pub fn approval_required(&self) -> bool {
        matches!(self.risk, Risk::High | Risk::Critical) || self.requires_approval || self.kind == ClassType::External
    }

    /// True when only the principal may execute.
    #[must_use]
    pub fn is_human_only(&self) -> bool {
        self.human_only || self.kind == ClassType::HumanOnly || self.id == "payment.initiate"
    }

    /// The registry row as a portable v0.1 action class (`action-class.schema.json`).
    #[must_use]
    pub fn to_json(&self) -> Value {
        let mut v = json!({"id": self.id, "type": self.kind.as_str(), "description": self.description});
        if !self.aliases.is_empty() {
            v["aliases"] = json!(self.aliases);
        }
        v
    }
}

/// Per-class graduation thresholds (§5.3): `graduation_ready` needs `ci_low ≥ ci_low_min` and
/// `samples ≥ samples_min`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Threshold {
    /// Lower bound of the 95% credible interval required, in [0, 1].
    pub ci_low_min: f64,
    /// Samples required.
    pub samples_min: u32,
}

/// The spec's default thresholds: 0.80/10 for every class, except email.send.external
/// (0.92/30) and calendar.create (0.88/20).
pub const DEFAULT_THRESHOLD: Threshold = Threshold { ci_low_min: 0.80, samples_min: 10 };

pub(super) fn builtin_thresholds() -> HashMap<String, Threshold> {
    [
        ("draft.compose", Threshold { ci_low_min: 0.80, samples_min: 10 }),
        ("email.send.external", Threshold { ci_low_min: 0.92, samples_min: 30 }),
        ("calendar.create", Threshold { ci_low_min: 0.88, samples_min: 20 }),
    ]
    .into_iter()
    .map(|(k, t)| (k.to_owned(), t))
    .collect()
}

/// The reference runtime's policy for a canonical class (§2 table).
pub(super) fn canonical_policy(c: &registry::ActionClass) -> ClassPolicy {
    let (min, requires, receipt, effects) = match c.id {
        "read.context" => (0, false, false, "none"),
        "draft.compose" | "draft.response" | "tool.call.local" => (1, false, false, "none"),
        "email.send.internal" => (3, false, true, "email_send"),
        "email.send.external" => (5, true, true, "email_send"),
        "calendar.create" => (5, true, true, "calendar_invite"),
        "social.post.public" => (5, true, true, "public_post"),
        "payment.initiate" => (5, true, true, "money_movement"),
        _ => (5, true, true, "external_write"),
    };
    let constraints = if c.id == "email.send.internal" {
        json!({"domain_allowlist": [], "rate_limit": {"count": 5, "window": "PT1H"}})
    } else {
        json!({})
    };
    ClassPolicy {
        id: c.id.to_owned(),
        kind: ClassType::parse(c.kind).unwrap_or(ClassType::External),
        risk: Risk::parse(c.risk).unwrap_or(Risk::Critical),
        minimum_level: min,
        requires_approval: requires,
        receipt_required: receipt,
        human_only: c.kind == "human-only",
        external_side_effects: effects.to_owned(),
        constraints: constraints.as_object().cloned().unwrap_or_default(),
        description: c.description.to_owned(),
        aliases: registry::ALIASES.iter().filter(|(_, to)| *to == c.id).map(|(a, _)| (*a).to_owned()).collect(),
        inferred: false,
        local: false,
    }
}

/// The policy the reference runtime infers for a class it does not know (§2 "Unknown classes").
pub(super) fn inferred_policy(id: &str) -> ClassPolicy {
    let risk = registry::risk_of(id).and_then(Risk::parse).unwrap_or(Risk::Critical);
    let has = |words: &[&str]| words.iter().any(|w| id.contains(w));
    let effects = if has(&["payment", "spend"]) {
        "money_movement"
    } else if has(&["post", "publish", "public"]) {
        "public_post"
    } else if has(&["invite", "calendar"]) {
        "calendar_invite"
    } else if has(&["email", "mail", "send"]) {
        "email_send"
    } else if risk >= Risk::High {
        "external_write"
    } else {
        "none"
    };
    ClassPolicy {
        id: id.to_owned(),
        kind: if risk >= Risk::High { ClassType::External } else { ClassType::Internal },
        risk,
        minimum_level: 1,
        requires_approval: risk != Risk::Low,
        receipt_required: risk != Risk::Low,
        human_only: false,
        external_side_effects: effects.to_owned(),
        constraints: Map::new(),
        description: format!("Unknown class {id}, policy inferred from its name."),
        aliases: Vec::new(),
        inferred: true,
        local: false,
    }
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ClassDef {
    id: String,
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    risk: Option<String>,
    #[serde(default)]
    minimum_level: Option<u8>,
    #[serde(default)]
    requires_approval: Option<bool>,
    #[serde(default)]
    receipt_required: Option<bool>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    aliases: Vec<String>,
    #[serde(default)]
    constraints: Option<toml::Table>,
}

pub(super) fn class_from_def(def: ClassDef) -> Result<ClassPolicy, PolicyError> {
    let err = |message: String| PolicyError::Class { id: def.id.clone(), message };
    if !is_class_id(&def.id) {
        return Err(err("does not match the class-id pattern ^[a-z][a-z0-9]*(\\.[a-z][a-z0-9]*)+$".into()));
    }
    let kind = ClassType::parse(&def.kind).ok_or_else(|| {
        err(format!("type {:?} is not internal, external controlled, external or human-only", def.kind))
    })?;
    let default_risk = match kind {
        ClassType::Internal => Risk::Low,
        ClassType::ExternalControlled => Risk::Medium,
        ClassType::External => Risk::High,
        ClassType::HumanOnly => Risk::Critical,
    };
    let risk = match &def.risk {
        Some(r) => Risk::parse(r).ok_or_else(|| err(format!("risk {r:?} is not low, medium, high or critical")))?,
        None => default_risk,
    };
    let minimum_level = def.minimum_level.unwrap_or(match kind {
        ClassType::Internal => 1,
        ClassType::ExternalControlled => 3,
        _ => 5,
    });
    if minimum_level > 5 {
        return Err(err("minimum_level must be 0 to 5".into()));
    }
    for alias in &def.aliases {
        if alias.trim().is_empty() {
            return Err(err("empty alias".into()));
        }
    }
    let constraints = match def.constraints {
        Some(t) => match serde_json::to_value(t) {
            Ok(Value::Object(m)) => m,
            _ => return Err(err("constraints must be a table".into())),
        },
        None => Map::new(),
    };
    Ok(ClassPolicy {
        requires_approval: def.requires_approval.unwrap_or(kind == ClassType::External),
        receipt_required: def.receipt_required.unwrap_or(kind.is_external()),
        human_only: kind == ClassType::HumanOnly,
        external_side_effects: if kind.is_external() { "external_write" } else { "none" }.to_owned(),
        description: def.description.unwrap_or_else(|| format!("Local class {}.", def.id)),
        aliases: def.aliases.iter().map(|a| a.trim().to_lowercase()).collect(),
        id: def.id,
        kind,
        risk,
        minimum_level,
        constraints,
        inferred: false,
        local: true,
    })
}

pub(super) fn class_from_json(v: &Value) -> Result<ClassPolicy, PolicyError> {
    let get = |keys: &[&str]| keys.iter().find_map(|k| v.get(*k)).filter(|x| !x.is_null());
    let raw_id = get(&["actionClass", "action_class", "id"]).and_then(Value::as_str).unwrap_or_default();
    let err = |message: &str| PolicyError::Class { id: raw_id.to_owned(), message: message.to_owned() };
    let id = registry::normalize(raw_id);
    if !is_class_id(&id) {
        return Err(err("a custom policy needs an `actionClass` matching the class-id pattern"));
    }
    let bool_of = |keys: &[&str]| -> Result<Option<bool>, PolicyError> {
        match get(keys) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(err(&format!("`{}` must be a boolean", keys[0]))),
        }
    };
    let risk = match get(&["riskClass", "risk_class", "risk"]) {
        None => registry::risk_of(&id).and_then(Risk::parse).unwrap_or(Risk::Critical),
        Some(r) => {
            r.as_str().and_then(Risk::parse).ok_or_else(|| err("`riskClass` must be low, medium, high or critical"))?
        }
    };
    let minimum_level = match get(&["minimumLevel", "minimum_level"]) {
        None => 1,
        Some(n) => n.as_u64().filter(|n| *n <= 5).ok_or_else(|| err("`minimumLevel` must be an integer 0 to 5"))? as u8,
    };
    let human_only = bool_of(&["humanOnly", "human_only"])?.unwrap_or(false);
    let kind = match get(&["type", "kind"]) {
        Some(t) => t.as_str().and_then(ClassType::parse).ok_or_else(|| err("`type` is not a class type"))?,
        None if human_only => ClassType::HumanOnly,
        None if risk >= Risk::High => ClassType::External,
        None => ClassType::Internal,
    };
    let constraints = match get(&["constraints"]) {
        None => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => return Err(err("`constraints` must be an object")),
    };
    Ok(ClassPolicy {
        requires_approval: bool_of(&["requiresApproval", "requires_approval"])?.unwrap_or(risk != Risk::Low),
        receipt_required: bool_of(&["receiptRequired", "receipt_required"])?.unwrap_or(risk != Risk::Low),
        human_only,
        external_side_effects: get(&["externalSideEffects", "external_side_effects"])
            .and_then(Value::as_str)
            .unwrap_or("none")
            .to_owned(),
        description: get(&["description"]).and_then(Value::as_str).unwrap_or("Custom policy.").to_owned(),
        aliases: Vec::new(),
        id,
        kind,
        risk,
        minimum_level,
        constraints,
        inferred: false,
        local: true,
    })
}
