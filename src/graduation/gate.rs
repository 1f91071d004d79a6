//! `can_execute`: the Trust Graduation gate (`trust-graduation.md` §3).
//!
//! The decision order is the reference runtime's (§3.2, beta.4), after warrant's fail-closed
//! `blocked` rules:
//!
//! | # | condition | status | mode |
//! |---|---|---|---|
//! | 0 | class id malformed; chain broken; agent killed or quarantined; unknown class under a strict policy | `blocked` | `denied` |
//! | a | human-only class | `human_only` | `human_only` |
//! | b | approval required, no valid exact grant | `review_required` (`deferred` if asynchronous) | `approval_required` |
//! | c | approval required, valid exact grant | `deferred` | `pending_atomic_consumption` |
//! | d | tier `review` | `review_required` / `deferred` | `review_only` |
//! | f | autonomy level below the class minimum | `review_required` | `insufficient_evidence` |
//! | g | otherwise | `allowed_with_constraints` when a vocabulary constraint applies, else `allowed` | by tier |
//!
//! Divergences from the reference (all in `docs/conformance.md`): the `blocked` rules; `external`
//! classes always need approval; context constraints can narrow the policy's constraints but
//! never remove them; evidence is matched on the canonical class and weighted as
//! [`super::evidence`] describes; a missing nonce is derived from the request, not random.
//!
//! A decision is a pure function of its inputs: no I/O, no clock, no randomness.

use super::binding::{self, BindingInput};
use super::evidence::{EvidenceRow, EvidenceSummary, Tier};
use super::policy::{ClassPolicy, PolicySet};
use crate::packet::{DecisionState, is_class_id};
use serde_json::{Map, Value, json};
use std::fmt;
use time::OffsetDateTime;

/// An agent's standing, from the principal's controls (kill switch, quarantine).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentStanding {
    /// May act within the gate.
    #[default]
    Active,
    /// Quarantined by the principal: everything it asks is blocked.
    Quarantined,
    /// Stopped by the kill switch: everything it asks is blocked.
    Killed,
}

impl AgentStanding {
    /// `active`, `quarantined` or `killed`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Quarantined => "quarantined",
            Self::Killed => "killed",
        }
    }

    /// Parses `active`, `quarantined` or `killed`.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "active" => Some(Self::Active),
            "quarantined" => Some(Self::Quarantined),
            "killed" => Some(Self::Killed),
            _ => None,
        }
    }
}

/// Everything the gate reads for one decision.
#[derive(Debug, Clone)]
pub struct GateRequest<'a> {
    /// The action class as requested (normalized by the gate).
    pub action_class: &'a str,
    /// The request context (an object; anything else reads as `{}`): `principal`,
    /// `requestedBy`, `tenant`, `target`/`recipient`, `input`, `requestedAction`, `constraints`,
    /// `expiresAt`, `nonce`, `asynchronousApproval`, `approvalState`.
    pub context: &'a Value,
    /// A presented approval: a plain `{state: "approved"}` flag or an exact `ApprovalGrant`.
    pub approval: Option<&'a Value>,
    /// Evidence rows (any classes; the gate uses those of the requested class).
    pub evidence: &'a [EvidenceRow],
    /// The workspace (default principal and binding workspace).
    pub workspace: &'a str,
    /// The decision time.
    pub now: OffsetDateTime,
    /// The requesting agent's standing.
    pub agent: AgentStanding,
    /// False when the chain the evidence comes from does not verify.
    pub chain_intact: bool,
}

/// The gate's mode (the reference's `mode` enum).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Allowed at the gated tier.
    Allowed,
    /// Allowed at the supervised tier.
    Supervised,
    /// Allowed at the auto-capped tier.
    AutoCapped,
    /// Needs an exact approval.
    ApprovalRequired,
    /// Negative evidence: review only.
    ReviewOnly,
    /// Not enough evidence for the class's minimum level.
    InsufficientEvidence,
    /// Blocked.
    Denied,
    /// A valid grant must be consumed atomically before execution.
    PendingAtomicConsumption,
    /// Human only.
    HumanOnly,
}

impl Mode {
    /// The wire spelling.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Allowed => "allowed",
            Mode::Supervised => "supervised",
            Mode::AutoCapped => "auto_capped",
            Mode::ApprovalRequired => "approval_required",
            Mode::ReviewOnly => "review_only",
            Mode::InsufficientEvidence => "insufficient_evidence",
            Mode::Denied => "denied",
            Mode::PendingAtomicConsumption => "pending_atomic_consumption",
            Mode::HumanOnly => "human_only",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `graduationPath.next_best_action`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NextAction {
    /// `prepareApprovalPacket` (camelCase, as the schema spells it).
    PrepareApprovalPacket,
    /// `request_principal_approval`.
    RequestPrincipalApproval,
    /// `collect_receipt`.
    CollectReceipt,
    /// `reduce_scope`.
    ReduceScope,
    /// `stop`.
    Stop,
}

impl NextAction {
    /// The wire spelling.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            NextAction::PrepareApprovalPacket => "prepareApprovalPacket",
            NextAction::RequestPrincipalApproval => "request_principal_approval",
            NextAction::CollectReceipt => "collect_receipt",
            NextAction::ReduceScope => "reduce_scope",
            NextAction::Stop => "stop",
        }
    }
}

/// `graduationPath` (§3.4): `needed` and `current` are autonomy levels, as in the reference.
#[derive(Debug, Clone, PartialEq)]
pub struct GraduationPath {
    /// The class's minimum autonomy level.
    pub needed: u8,
    /// The level the evidence supports.
    pub current: u8,
    /// What the agent should do next.
    pub next_best_action: NextAction,
    /// A safer class the agent may use instead.
    pub safe_fallback_action_class: &'static str,
    /// Evidence that would move the class.
    pub required_evidence: &'static [&'static str],
}

impl GraduationPath {
    /// As JSON (snake_case members, as `decision.schema.json` spells them).
    #[must_use]
    pub fn to_json(&self) -> Value {
        json!({
            "needed": self.needed,
            "current": self.current,
            "next_best_action": self.next_best_action.as_str(),
            "safe_fallback_action_class": self.safe_fallback_action_class,
            "required_evidence": self.required_evidence,
        })
    }
}

/// A gate decision (`decision.schema.json`, plus the reference's `mode`, `tier`,
/// `autonomy_level`, `allowed`, `needs_approval` and identifiers).
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// One of the six states.
    pub status: DecisionState,
    /// The canonical class.
    pub action_class: String,
    /// The class as requested.
    pub requested_class: String,
    /// A fixed English sentence (the reference's, for its rules).
    pub reason: String,
    /// The mode.
    pub mode: Mode,
    /// The count-based tier of the class's evidence.
    pub tier: Tier,
    /// The autonomy level of the tier (0–3).
    pub autonomy_level: u8,
    /// May the agent execute now? Only for `allowed` and `allowed_with_constraints`.
    pub allowed: bool,
    /// Does the principal need to act?
    pub needs_approval: bool,
    /// The constraints that apply.
    pub constraints: Map<String, Value>,
    /// How the class could graduate; absent when allowed or pending consumption.
    pub graduation_path: Option<GraduationPath>,
    /// A valid grant must be consumed atomically before execution.
    pub requires_atomic_consumption: bool,
    /// The agent should prepare an approval packet (the reference's `packet`).
    pub approval_packet_required: bool,
    /// `tgd_<YYYYMMDDhhmmss>_<slug of the requested class>`.
    pub decision_id: String,
    /// The decision time, JS ISO form.
    pub created_at: String,
    /// The exact-action binding, for classes that need approval.
    pub action_binding: Option<Value>,
    /// The presented approval's check result, when one was presented.
    pub approval_check: Option<Result<&'static str, &'static str>>,
    /// The evidence summary of the class.
    pub summary: EvidenceSummary,
    /// The requested action (`context.requestedAction`, else the context).
    pub requested_action: Value,
}

impl Decision {
    /// The decision as a portable v0.1 decision object (`decision.schema.json`; its
    /// `additionalProperties: true` admits the extra members).
    #[must_use]
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("status".into(), json!(self.status.as_str()));
        m.insert("action_class".into(), json!(self.action_class));
        m.insert("reason".into(), json!(self.reason));
        m.insert("mode".into(), json!(self.mode.as_str()));
        m.insert("tier".into(), json!(self.tier.as_str()));
        m.insert("autonomy_level".into(), json!(self.autonomy_level));
        m.insert("allowed".into(), json!(self.allowed));
        m.insert("needs_approval".into(), json!(self.needs_approval));
        m.insert("constraints".into(), Value::Object(self.constraints.clone()));
        if let Some(g) = &self.graduation_path {
            m.insert("graduationPath".into(), g.to_json());
        }
        if self.requires_atomic_consumption {
            m.insert("requires_atomic_consumption".into(), json!(true));
        }
        m.insert("approval_packet_required".into(), json!(self.approval_packet_required));
        m.insert("decision_id".into(), json!(self.decision_id));
        m.insert("created_at".into(), json!(self.created_at));
        if let Some(b) = &self.action_binding {
            m.insert("action_binding".into(), b.clone());
        }
        let mut observed = Map::new();
        observed.insert("requested_action_class".into(), json!(self.requested_class));
        observed.insert("evidence".into(), self.summary.to_json());
        if let Some(check) = self.approval_check {
            observed.insert(
                "approval".into(),
                match check {
                    Ok(code) => json!({"valid": true, "code": code}),
                    Err(code) => json!({"valid": false, "code": code}),
                },
            );
        }
        m.insert("observed".into(), Value::Object(observed));
        Value::Object(m)
    }
}

/// The constraint vocabulary of `decision.schema.json` (ten keys).
pub const CONSTRAINT_VOCABULARY: [&str; 10] = [
    "internal_only",
    "staging_only",
    "dry_run_only",
    "requires_witness",
    "max_amount",
    "rate_limit",
    "recipient_allowlist",
    "domain_allowlist",
    "redaction_rules",
    "expires_at",
];

const R_ALLOWED: &str = "Action is inside the current trust boundary.";
const R_HUMAN_ONLY: &str =
    "Human-only action class. The agent may prepare rationale, but only the principal may execute.";
const R_APPROVAL: &str =
    "External, public, money, legal, or authority-changing actions require explicit human approval.";
const R_GRANT: &str = "The grant matches this exact action. The executor must atomically consume it before the provider call; validation alone is not execution authority.";
const R_REVIEW: &str =
    "Negative evidence, trust issues, or high rejection rate require review before expanding autonomy.";
const EVIDENCE_APPROVAL: &[&str] =
    &["principal approval receipt", "successful execution receipt for the same action_class"];
const EVIDENCE_RECEIPT: &[&str] = &["approval or correction receipt for the same action_class"];

/// The reference's slug: lower-case, runs outside `[a-z0-9]` become `-`, trimmed, at most 60
/// characters, `action` when empty.
#[must_use]
pub fn slug(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let t: String = out.trim_matches('-').chars().take(60).collect();
    if t.is_empty() { "action".into() } else { t }
}

fn stamp14(created_at: &str) -> String {
    created_at.bytes().filter(u8::is_ascii_digit).take(14).map(char::from).collect()
}

/// The safe fallback class for `insufficient_evidence` (§3.4).
fn fallback_for(class: &str) -> &'static str {
    let has = |w: &[&str]| w.iter().any(|x| class.contains(x));
    if has(&["email", "message", "reply", "response"]) {
        "draft.response"
    } else if has(&["calendar", "proposal", "post", "payment"]) {
        "draft.compose"
    } else {
        "tool.call.local"
    }
}

fn truthy(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|x| x != 0.0),
        Some(Value::String(s)) => !s.is_empty(),
        Some(_) => true,
    }
}

/// Merges the context's constraints into the policy's, so that the context can only narrow
/// them: booleans OR, `max_amount` the smaller, allowlists intersect (an empty policy list takes
/// the context's), `redaction_rules` union, `rate_limit` the smaller count for the same window,
/// `expires_at` the earlier; other keys from the context are added, never replacing the
/// policy's.
#[must_use]
pub fn merge_constraints(policy: &Map<String, Value>, context: &Map<String, Value>) -> Map<String, Value> {
    let mut out = policy.clone();
    for (k, v) in context {
        let Some(p) = policy.get(k) else {
            out.insert(k.clone(), v.clone());
            continue;
        };
        let merged = match k.as_str() {
            "internal_only" | "staging_only" | "dry_run_only" | "requires_witness" => {
                json!(p.as_bool().unwrap_or(true) || v.as_bool().unwrap_or(true))
            }
            "max_amount" => match (p.as_f64(), v.as_f64()) {
                (Some(a), Some(b)) if b < a => v.clone(),
                _ => p.clone(),
            },
            "recipient_allowlist" | "domain_allowlist" => match (p.as_array(), v.as_array()) {
                (Some(a), Some(b)) if a.is_empty() => json!(b),
                (Some(a), Some(b)) if !b.is_empty() => json!(a.iter().filter(|x| b.contains(x)).collect::<Vec<_>>()),
                _ => p.clone(),
            },
            "redaction_rules" => match (p.as_array(), v.as_array()) {
                (Some(a), Some(b)) => {
                    let mut u = a.clone();
                    u.extend(b.iter().filter(|x| !a.contains(x)).cloned());
                    json!(u)
                }
                _ => p.clone(),
            },
            "rate_limit" => {
                let count = |x: &Value| x.get("count").and_then(Value::as_u64);
                let same_window = p.get("window").is_some() && p.get("window") == v.get("window");
                match (count(p), count(v)) {
                    (Some(a), Some(b)) if same_window && b < a => v.clone(),
                    _ => p.clone(),
                }
            }
            "expires_at" => {
                let t = |x: &Value| x.as_str().and_then(crate::clock::parse_rfc3339);
                match (t(p), t(v)) {
                    (Some(a), Some(b)) if b < a => v.clone(),
                    _ => p.clone(),
                }
            }
            _ => p.clone(),
        };
        out.insert(k.clone(), merged);
    }
    out
}

/// Checks the vocabulary members of a constraints object against `decision.schema.json`.
///
/// # Errors
/// The first malformed member.
pub fn check_constraints(c: &Map<String, Value>) -> Result<(), String> {
    let strings = |v: &Value| v.as_array().is_some_and(|a| a.iter().all(Value::is_string));
    for (k, v) in c {
        let ok = match k.as_str() {
            "internal_only" | "staging_only" | "dry_run_only" | "requires_witness" => v.is_boolean(),
            "max_amount" => v.as_f64().is_some_and(|x| x >= 0.0),
            "recipient_allowlist" | "domain_allowlist" | "redaction_rules" => strings(v),
            "rate_limit" => {
                v.get("count").is_some_and(|n| n.is_u64() && n.as_u64().is_some_and(|n| n >= 1))
                    && v.get("window").is_some_and(Value::is_string)
            }
            "expires_at" => v.as_str().and_then(crate::clock::parse_rfc3339).is_some(),
            _ => true,
        };
        if !ok {
            return Err(format!("constraints.{k} is malformed ({v})"));
        }
    }
    Ok(())
}

fn str_of<'a>(ctx: &'a Value, keys: &[&str]) -> Option<&'a str> {
    keys.iter().find_map(|k| ctx.get(*k).and_then(Value::as_str))
}

/// A nonce derived from the request (UUID-shaped), for requests that bring none: the same exact
/// request at the same instant gets the same nonce, any other request another.
fn derived_nonce(parts: &[&str]) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_be_bytes());
        h.update(p.as_bytes());
    }
    let d = h.finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&d[..16]);
    uuid::Builder::from_random_bytes(bytes).into_uuid().to_string()
}

struct Outcome {
    status: DecisionState,
    mode: Mode,
    reason: String,
    allowed: bool,
    needs_approval: bool,
    packet: bool,
    path: Option<(NextAction, &'static str)>,
}

impl Outcome {
    fn review(asynchronous: bool, mode: Mode, reason: String, next: NextAction, fallback: &'static str) -> Self {
        Outcome {
            status: if asynchronous { DecisionState::Deferred } else { DecisionState::ReviewRequired },
            mode,
            reason,
            allowed: false,
            needs_approval: true,
            packet: true,
            path: Some((next, fallback)),
        }
    }

    fn blocked(reason: String) -> Self {
        Outcome {
            status: DecisionState::Blocked,
            mode: Mode::Denied,
            reason,
            allowed: false,
            needs_approval: false,
            packet: false,
            path: Some((NextAction::Stop, "draft.compose")),
        }
    }
}

/// Decides whether `req.action_class` may execute now (§3.2, with warrant's fail-closed
/// `blocked` rules first). Never fails: anything the gate cannot establish ends in a state
/// where `allowed` is false.
#[must_use]
pub fn can_execute(policies: &PolicySet, req: &GateRequest<'_>) -> Decision {
    let canonical = policies.normalize(req.action_class);
    let policy: std::borrow::Cow<'_, ClassPolicy> = policies.policy(&canonical);
    let summary = EvidenceSummary::of(&canonical, req.evidence);
    let tier = summary.tier();
    let level = tier.autonomy_level();
    let ctx = if req.context.is_object() { req.context } else { &Value::Null };
    let created_at = binding::js_iso(req.now);
    let malformed_constraints = match ctx.get("constraints") {
        Some(Value::Object(c)) => check_constraints(c).err(),
        _ => None,
    };
    let constraints = match ctx.get("constraints") {
        Some(Value::Object(c)) if malformed_constraints.is_none() => merge_constraints(&policy.constraints, c),
        _ => policy.constraints.clone(),
    };
    let requested_action = match ctx.get("requestedAction") {
        Some(v @ Value::Object(_)) => v.clone(),
        _ if ctx.is_object() => ctx.clone(),
        _ => json!({}),
    };
    let asynchronous = truthy(ctx.get("asynchronousApproval"));
    let approval_presented = req.approval.and_then(|a| a.get("state")).and_then(Value::as_str) == Some("approved")
        || ctx.get("approvalState").and_then(Value::as_str) == Some("approved");
    let approval_required = policy.approval_required();

    let mut action_binding = None;
    let mut approval_check = None;
    if approval_required && !policy.is_human_only() && is_class_id(&canonical) {
        let principal = str_of(ctx, &["principal"]).unwrap_or(req.workspace);
        let requested_by = str_of(ctx, &["requestedBy", "requested_by"]).unwrap_or("agent");
        let tenant = str_of(ctx, &["tenant"]).unwrap_or("");
        let target = str_of(ctx, &["target", "recipient"]).unwrap_or("");
        let input = ctx.get("input").unwrap_or(&requested_action);
        let default_expiry;
        let expires_at = match str_of(ctx, &["expiresAt"])
            .or_else(|| constraints.get("expires_at").and_then(Value::as_str))
            .or_else(|| req.approval.and_then(|a| a.get("expiresAt")).and_then(Value::as_str))
        {
            Some(e) => e,
            None => {
                default_expiry = binding::js_iso(req.now + binding::DEFAULT_TTL);
                &default_expiry
            }
        };
        let input_hash = binding::digest(input);
        let derived;
        let nonce = match str_of(ctx, &["nonce"])
            .or_else(|| req.approval.and_then(|a| a.get("nonce")).and_then(Value::as_str))
        {
            Some(n) => n,
            None => {
                derived = derived_nonce(&[
                    &canonical,
                    req.workspace,
                    principal,
                    requested_by,
                    tenant,
                    target,
                    &input_hash,
                    &created_at,
                ]);
                &derived
            }
        };
        let constraints_value = Value::Object(constraints.clone());
        let b = binding::bind_action(&BindingInput {
            action_class: &canonical,
            workspace: req.workspace,
            principal,
            requested_by,
            tenant,
            target,
            input,
            constraints: &constraints_value,
            expires_at,
            nonce,
        });
        if approval_presented {
            approval_check = Some(binding::validate_grant(&b, req.approval, req.now));
        }
        action_binding = Some(b);
    }
    let valid_grant = matches!(approval_check, Some(Ok(_)));

    let outcome = if !is_class_id(&canonical) {
        Outcome::blocked(format!(
            "{:?} is not an action class (like email.send.external); the gate fails closed.",
            req.action_class
        ))
    } else if let Some(why) = malformed_constraints {
        Outcome::blocked(format!("The request's {why}; the gate fails closed."))
    } else if !req.chain_intact {
        Outcome::blocked("The evidence chain does not verify; nothing runs until the principal examines it.".into())
    } else if req.agent == AgentStanding::Killed {
        Outcome::blocked(
            "The agent was stopped by the kill switch; it may not act until the principal restores it.".into(),
        )
    } else if req.agent == AgentStanding::Quarantined {
        Outcome::blocked("The agent is quarantined; its actions are denied until the principal releases it.".into())
    } else if policies.strict && policies.registered(&canonical).is_none() {
        Outcome::blocked(format!(
            "Unknown action class {canonical}: the policy is strict and no local class declares it."
        ))
    } else if policy.is_human_only() {
        Outcome {
            status: DecisionState::HumanOnly,
            mode: Mode::HumanOnly,
            reason: R_HUMAN_ONLY.into(),
            allowed: false,
            needs_approval: true,
            packet: false,
            path: Some((NextAction::Stop, "draft.compose")),
        }
    } else if approval_required && !valid_grant {
        let reason = match approval_check {
            Some(Err(code)) => format!("Presented approval does not authorize this exact action: {code}."),
            _ => R_APPROVAL.into(),
        };
        Outcome::review(
            asynchronous,
            Mode::ApprovalRequired,
            reason,
            NextAction::PrepareApprovalPacket,
            "draft.response",
        )
    } else if approval_required {
        Outcome {
            status: DecisionState::Deferred,
            mode: Mode::PendingAtomicConsumption,
            reason: R_GRANT.into(),
            allowed: false,
            needs_approval: false,
            packet: false,
            path: None,
        }
    } else if tier == Tier::Review {
        Outcome::review(
            asynchronous,
            Mode::ReviewOnly,
            R_REVIEW.into(),
            NextAction::RequestPrincipalApproval,
            "draft.response",
        )
    } else if level < policy.minimum_level {
        Outcome::review(
            false,
            Mode::InsufficientEvidence,
            format!(
                "Action requires autonomy level {}; current evidence supports level {level}.",
                policy.minimum_level
            ),
            NextAction::CollectReceipt,
            fallback_for(&canonical),
        )
    } else {
        let constrained = CONSTRAINT_VOCABULARY.iter().any(|k| constraints.contains_key(*k));
        Outcome {
            status: if constrained { DecisionState::AllowedWithConstraints } else { DecisionState::Allowed },
            mode: match tier {
                Tier::AutoCapped => Mode::AutoCapped,
                Tier::Supervised => Mode::Supervised,
                _ => Mode::Allowed,
            },
            reason: R_ALLOWED.into(),
            allowed: true,
            needs_approval: false,
            packet: false,
            path: None,
        }
    };
    let requires_atomic_consumption = outcome.mode == Mode::PendingAtomicConsumption;
    Decision {
        status: outcome.status,
        decision_id: format!("tgd_{}_{}", stamp14(&created_at), slug(req.action_class)),
        graduation_path: outcome.path.map(|(next, fallback)| GraduationPath {
            needed: policy.minimum_level,
            current: level,
            next_best_action: next,
            safe_fallback_action_class: fallback,
            required_evidence: if policy.requires_approval { EVIDENCE_APPROVAL } else { EVIDENCE_RECEIPT },
        }),
        action_class: canonical.clone(),
        requested_class: req.action_class.to_owned(),
        reason: outcome.reason,
        mode: outcome.mode,
        tier,
        autonomy_level: level,
        allowed: outcome.allowed,
        needs_approval: outcome.needs_approval,
        constraints,
        requires_atomic_consumption,
        approval_packet_required: outcome.packet,
        created_at,
        action_binding,
        approval_check,
        summary,
        requested_action,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_like_the_reference() {
        assert_eq!(slug("email.send.external"), "email-send-external");
        assert_eq!(slug("--A__b--"), "a-b");
        assert_eq!(slug("..."), "action");
        assert_eq!(slug(&"x".repeat(80)).len(), 60);
    }

    #[test]
    fn context_constraints_only_narrow() {
        let policy = json!({"domain_allowlist": [], "rate_limit": {"count": 5, "window": "PT1H"}, "max_amount": 100});
        let ctx = json!({"domain_allowlist": ["company.com"], "rate_limit": {"count": 500, "window": "PT1H"},
                         "max_amount": 1000, "scope": "once"});
        let (Value::Object(p), Value::Object(c)) = (policy, ctx) else { unreachable!() };
        let m = merge_constraints(&p, &c);
        assert_eq!(m["domain_allowlist"], json!(["company.com"]));
        assert_eq!(m["rate_limit"]["count"], 5);
        assert_eq!(m["max_amount"], 100);
        assert_eq!(m["scope"], "once");
        let empty = Map::new();
        assert_eq!(merge_constraints(&p, &empty), p);
    }
}
