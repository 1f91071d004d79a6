//! Workbench tool tiers × notebook trust (`lodestar-and-tiers.md` Part B).
//!
//! [`gate_action`] is the documented pure matrix (§B2): a tool's fixed [`ToolTier`] and the
//! notebook's [`NotebookTrust`] give a [`TierAction`].
//!
//! | tier \ trust | cautious | trusted | autonomous |
//! | --- | --- | --- | --- |
//! | safe | auto | auto | auto |
//! | mutating | confirm | auto | auto |
//! | destructive | confirm | confirm | auto |
//!
//! Choices where the docs are silent or contradict each other (`docs/conformance.md, "Trust ladder and tool tiers"`):
//! - an unknown tier or trust level fails closed to `confirm`, never `auto` (§B4);
//! - parsing is exact and case-sensitive: `"Safe"`, `" safe"` and `""` are unknown, not `safe`
//!   (a gate must not guess what a misspelt level meant; the fail-closed answer covers the typo);
//! - the vocabulary is tiers × trust → action; the page calling auto/gated/confirm "trust levels"
//!   is treated as stale (§B5), and a new notebook starts at `cautious`, not a project default.

use crate::request::RequestError;
use serde_json::{Map, Value, json};
use std::fmt;

/// A tool's tier, declared once per tool and fixed at runtime (§B2). Ordered by impact:
/// `safe < mutating < destructive`. Serialized lowercase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolTier {
    /// Read-only; does not write to the data store.
    Safe,
    /// Produces persistent state (events, reports, records).
    Mutating,
    /// Hard to reverse without rolling back the audit log.
    Destructive,
}

/// A notebook's trust level (§B2). Ordered `cautious < trusted < autonomous`; a new notebook
/// starts at `cautious` (the [`Default`]). Serialized lowercase.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NotebookTrust {
    /// Only safe tools run without a prompt. The default for a new notebook.
    #[default]
    Cautious,
    /// Safe and mutating tools run without a prompt.
    Trusted,
    /// Every tool runs without a prompt, destructive ones included.
    Autonomous,
}

/// What the gate does with a call (§B2). Serialized lowercase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TierAction {
    /// Runs at once; an event is appended.
    Auto,
    /// Queued for batch review. A documented output that **no matrix cell produces** (§B2), and
    /// nothing in warrant produces it either: it exists so the console's composition table can
    /// name the workbench's third outcome.
    Gated,
    /// A "Run this?" prompt with the rendered parameters; the principal approves first.
    Confirm,
}

/// The direction of a trust change (see [`NotebookTrust::change`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TrustChange {
    /// To a more permissive level.
    Raise,
    /// To a stricter level.
    Lower,
    /// To the same level.
    Same,
}

impl ToolTier {
    /// Every tier, in order.
    pub const ALL: [Self; 3] = [Self::Safe, Self::Mutating, Self::Destructive];

    /// The wire spelling: `safe`, `mutating` or `destructive`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Safe => "safe",
            Self::Mutating => "mutating",
            Self::Destructive => "destructive",
        }
    }

    /// Parses the exact, case-sensitive wire spelling; anything else (`"Safe"`, `" safe"`, `""`)
    /// is `None`, which [`gate_action`] treats as unknown and fails closed.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == s)
    }
}

impl NotebookTrust {
    /// Every level, in order.
    pub const ALL: [Self; 3] = [Self::Cautious, Self::Trusted, Self::Autonomous];

    /// The wire spelling: `cautious`, `trusted` or `autonomous`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Cautious => "cautious",
            Self::Trusted => "trusted",
            Self::Autonomous => "autonomous",
        }
    }

    /// Parses the exact, case-sensitive wire spelling; anything else is `None` (unknown).
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == s)
    }

    /// Whether going from `from` to `to` raises, lowers or keeps the level.
    #[must_use]
    pub fn change(from: Self, to: Self) -> TrustChange {
        match to.cmp(&from) {
            std::cmp::Ordering::Greater => TrustChange::Raise,
            std::cmp::Ordering::Less => TrustChange::Lower,
            std::cmp::Ordering::Equal => TrustChange::Same,
        }
    }

    /// True when the change needs a typed confirmation: raising to `autonomous` (which auto-runs
    /// destructive tools) from any other level. The console asks the principal to type the
    /// notebook's name. Lowering, or staying, never does. warrant's choice; the docs only say a
    /// change is logged (§B2).
    #[must_use]
    pub fn requires_typed_confirmation(from: Self, to: Self) -> bool {
        to == Self::Autonomous && Self::change(from, to) == TrustChange::Raise
    }
}

impl TierAction {
    /// The wire spelling: `auto`, `gated` or `confirm`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Gated => "gated",
            Self::Confirm => "confirm",
        }
    }
}

macro_rules! display_as_str {
    ($($t:ty),*) => {$(
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    )*};
}
display_as_str!(ToolTier, NotebookTrust, TierAction);

/// The tier × trust matrix (§B2). `None` is an unknown tier or trust level and gives `confirm`
/// (fail closed, §B4); no input gives [`TierAction::Gated`].
#[must_use]
pub const fn gate_action(tier: Option<ToolTier>, trust: Option<NotebookTrust>) -> TierAction {
    use NotebookTrust::{Autonomous, Trusted};
    use ToolTier::{Destructive, Mutating, Safe};
    match (tier, trust) {
        (Some(Safe), Some(_))
        | (Some(Mutating), Some(Trusted | Autonomous))
        | (Some(Destructive), Some(Autonomous)) => TierAction::Auto,
        _ => TierAction::Confirm,
    }
}

/// [`gate_action`] over wire spellings, parsed exactly ([`ToolTier::parse`],
/// [`NotebookTrust::parse`]); an unknown spelling gives `confirm`.
#[must_use]
pub fn gate_action_str(tier: &str, trust: &str) -> TierAction {
    gate_action(ToolTier::parse(tier), NotebookTrust::parse(trust))
}

/// `warrant eval` op `tiers.gate` (`docs/eval-ladder.md`).
///
/// Request fields `tool_tier` and `notebook_trust`: each a string, or `null` for "unknown"
/// (the workbench tests' `None`). Response `{"action", "tool_tier", "notebook_trust",
/// "fail_closed", "reason"}`: the inputs are echoed as given, and `fail_closed` is true when an
/// unknown input forced `confirm`.
///
/// # Errors
/// `invalid_request` when a field is missing or is neither a string nor `null`.
pub fn eval_tiers_gate(req: &Map<String, Value>) -> Result<Value, RequestError> {
    let field = |name: &str| match req.get(name) {
        Some(v @ (Value::String(_) | Value::Null)) => Ok((v, v.as_str())),
        Some(_) => Err(RequestError { code: "invalid_request", message: format!("`{name}` must be a string or null") }),
        None => Err(RequestError { code: "invalid_request", message: format!("missing `{name}`") }),
    };
    let (tier_raw, tier_str) = field("tool_tier")?;
    let (trust_raw, trust_str) = field("notebook_trust")?;
    let tier = tier_str.and_then(ToolTier::parse);
    let trust = trust_str.and_then(NotebookTrust::parse);
    let action = gate_action(tier, trust);
    let reason = match (tier, trust) {
        (Some(tier), Some(trust)) => match action {
            TierAction::Auto => format!("{tier} tools run automatically in a {trust} notebook"),
            _ => format!("{tier} tools need confirmation in a {trust} notebook"),
        },
        (None, Some(_)) => "unknown tool tier: fails closed to confirm".to_owned(),
        (Some(_), None) => "unknown notebook trust: fails closed to confirm".to_owned(),
        (None, None) => "unknown tool tier and notebook trust: fails closed to confirm".to_owned(),
    };
    Ok(json!({
        "action": action,
        "tool_tier": tier_raw,
        "notebook_trust": trust_raw,
        "fail_closed": tier.is_none() || trust.is_none(),
        "reason": reason,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_spellings_agree_with_serde() {
        for t in ToolTier::ALL {
            assert_eq!(serde_json::to_value(t).ok(), Some(json!(t.as_str())));
            assert_eq!(ToolTier::parse(t.as_str()), Some(t));
        }
        for t in NotebookTrust::ALL {
            assert_eq!(serde_json::to_value(t).ok(), Some(json!(t.as_str())));
            assert_eq!(NotebookTrust::parse(t.as_str()), Some(t));
        }
        for a in [TierAction::Auto, TierAction::Gated, TierAction::Confirm] {
            assert_eq!(serde_json::to_value(a).ok(), Some(json!(a.as_str())));
        }
    }

    #[test]
    fn eval_rejects_wrong_types_and_missing_fields() {
        let req = |v: Value| v.as_object().cloned().unwrap_or_default();
        let missing = eval_tiers_gate(&req(json!({"tool_tier": "safe"})));
        assert_eq!(missing.map_err(|e| e.code), Err("invalid_request"));
        let number = eval_tiers_gate(&req(json!({"tool_tier": 1, "notebook_trust": "trusted"})));
        assert_eq!(number.map_err(|e| e.code), Err("invalid_request"));
        let null = eval_tiers_gate(&req(json!({"tool_tier": null, "notebook_trust": "autonomous"})));
        assert_eq!(
            null.ok().map(|v| (v["action"].clone(), v["fail_closed"].clone())),
            Some((json!("confirm"), json!(true)))
        );
    }
}
