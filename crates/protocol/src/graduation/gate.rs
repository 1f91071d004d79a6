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
use super::evidence::{EvidenceIndex, EvidenceSummary, Tier};
use super::policy::{ClassPolicy, PolicySet};
use crate::packet::{DecisionState, is_class_id};
use serde_json::{Map, Value, json};
use std::borrow::Cow;
use std::fmt;
use std::sync::OnceLock;
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
    /// The evidence, prepared once with [`EvidenceIndex::new`] (rows of any classes; the gate
    /// reads the summary of the requested class, §4.4).
    pub evidence: &'a EvidenceIndex,
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

/// What a decision's exact-action binding commits to (§3.5, A2A extension v1), kept unhashed
/// until it is read: [`Decision::action_binding`] builds the `ActionBinding` object (its
/// `inputHash` and `actionHash` SHA-256 digests) once and keeps it. The class, the constraints
/// and the decision time come from the decision itself.
#[derive(Debug, Clone)]
pub struct ActionBinding<'a> {
    /// `workspace`.
    pub workspace: Cow<'a, str>,
    /// `principal` (the context's, else the workspace).
    pub principal: Cow<'a, str>,
    /// `requestedBy` (the context's `requestedBy`/`requested_by`, else `agent`).
    pub requested_by: Cow<'a, str>,
    /// `tenant` (may be empty).
    pub tenant: Cow<'a, str>,
    /// `target` (the context's `target`/`recipient`; may be empty).
    pub target: Cow<'a, str>,
    /// The exact provider input: the context's `input`, else the requested action.
    pub input: Cow<'a, Value>,
    /// The expiry as given (context `expiresAt`, else constraints `expires_at`, else the
    /// approval's `expiresAt`); `None`: the decision time plus [`binding::DEFAULT_TTL`].
    pub expires_at: Option<Cow<'a, str>>,
    /// The nonce as given (context, else approval); `None`: derived from the request.
    pub nonce: Option<Cow<'a, str>>,
    digests: OnceLock<BindingDigests>,
    value: OnceLock<Value>,
}

/// What a binding derives from its request and decision time, computed once: the expiry and
/// nonce as bound (given, else defaulted or derived) and the two digests.
#[derive(Debug, Clone)]
struct BindingDigests {
    expires_at: String,
    nonce: String,
    input_hash: String,
    action_hash: String,
}

impl PartialEq for ActionBinding<'_> {
    /// Compares what the binding commits to (not whether it was hashed yet).
    fn eq(&self, other: &Self) -> bool {
        self.workspace == other.workspace
            && self.principal == other.principal
            && self.requested_by == other.requested_by
            && self.tenant == other.tenant
            && self.target == other.target
            && self.input == other.input
            && self.expires_at == other.expires_at
            && self.nonce == other.nonce
    }
}

impl ActionBinding<'_> {
    /// Detaches the binding from the request it borrows from.
    #[must_use]
    pub fn into_owned(self) -> ActionBinding<'static> {
        ActionBinding {
            workspace: Cow::Owned(self.workspace.into_owned()),
            principal: Cow::Owned(self.principal.into_owned()),
            requested_by: Cow::Owned(self.requested_by.into_owned()),
            tenant: Cow::Owned(self.tenant.into_owned()),
            target: Cow::Owned(self.target.into_owned()),
            input: Cow::Owned(self.input.into_owned()),
            expires_at: self.expires_at.map(|e| Cow::Owned(e.into_owned())),
            nonce: self.nonce.map(|n| Cow::Owned(n.into_owned())),
            digests: self.digests,
            value: self.value,
        }
    }

    /// The expiry, nonce and digests of the binding for `action_class` (canonical) decided at
    /// `now`, computed on first use: the nonce is derived and the expiry defaulted here when the
    /// request gave none.
    fn digests(&self, action_class: &str, constraints: &Map<String, Value>, now: OffsetDateTime) -> &BindingDigests {
        self.digests.get_or_init(|| {
            let expires_at = match &self.expires_at {
                Some(e) => e.clone().into_owned(),
                // Out of the representable range (a `now` near the year 9999): the binding expires
                // at `now` itself, so nothing can be approved against it (fail closed).
                None => binding::js_iso(now.checked_add(binding::DEFAULT_TTL).unwrap_or(now)),
            };
            let input_hash = binding::digest(&self.input);
            let nonce = match &self.nonce {
                Some(n) => n.clone().into_owned(),
                None => derived_nonce(&[
                    action_class,
                    &self.workspace,
                    &self.principal,
                    &self.requested_by,
                    &self.tenant,
                    &self.target,
                    &input_hash,
                    &binding::js_iso(now),
                ]),
            };
            let mut d = BindingDigests { expires_at, nonce, input_hash, action_hash: String::new() };
            d.action_hash = binding::action_hash(&self.input_for(action_class, constraints, &d), &d.input_hash);
            d
        })
    }

    /// The binding's members as [`binding`] reads them, with the derived expiry and nonce.
    fn input_for<'s>(
        &'s self,
        action_class: &'s str,
        constraints: &'s Map<String, Value>,
        d: &'s BindingDigests,
    ) -> BindingInput<'s> {
        BindingInput {
            action_class,
            workspace: &self.workspace,
            principal: &self.principal,
            requested_by: &self.requested_by,
            tenant: &self.tenant,
            target: &self.target,
            input: &self.input,
            constraints,
            expires_at: &d.expires_at,
            nonce: &d.nonce,
        }
    }

    /// The `ActionBinding` object for `action_class` (canonical) under `constraints`, decided at
    /// `now`, built on first use.
    fn value(&self, action_class: &str, constraints: &Map<String, Value>, now: OffsetDateTime) -> &Value {
        self.value.get_or_init(|| {
            let d = self.digests(action_class, constraints, now);
            binding::binding_object(
                &self.input_for(action_class, constraints, d),
                d.input_hash.clone(),
                d.action_hash.clone(),
            )
        })
    }

    /// Appends the binding's compact JSON (the bytes [`ActionBinding::value`] serializes to) to
    /// `out` without building the object.
    fn write_json(&self, action_class: &str, constraints: &Map<String, Value>, now: OffsetDateTime, out: &mut Vec<u8>) {
        let d = self.digests(action_class, constraints, now);
        // Writing into a Vec cannot fail.
        let _ = binding::write_binding(
            &self.input_for(action_class, constraints, d),
            &d.input_hash,
            Some(&d.action_hash),
            out,
        );
    }
}

/// A gate decision (`decision.schema.json`, plus the reference's `mode`, `tier`,
/// `autonomy_level`, `allowed`, `needs_approval` and identifiers).
///
/// It borrows what it can from the request and the policy set (`'a`);
/// [`Decision::into_owned`] detaches it. `created_at`, `decision_id` and the exact-action
/// binding are derived on demand ([`Decision::created_at`], [`Decision::decision_id`],
/// [`Decision::action_binding`]), so deciding allocates nothing in the common case; the
/// binding's SHA-256 digests are computed when it is first read, or at decision time when a
/// presented approval had to be checked against it. [`Decision::to_json`] and
/// [`Decision::write_json`] give the same JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision<'a> {
    /// One of the six states.
    pub status: DecisionState,
    /// The canonical class.
    pub action_class: Cow<'a, str>,
    /// The class as requested.
    pub requested_class: Cow<'a, str>,
    /// A fixed English sentence (the reference's, for its rules).
    pub reason: Cow<'static, str>,
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
    /// The constraints that apply (the policy's, narrowed by the context's).
    pub constraints: Cow<'a, Map<String, Value>>,
    /// How the class could graduate; absent when allowed or pending consumption.
    pub graduation_path: Option<GraduationPath>,
    /// A valid grant must be consumed atomically before execution.
    pub requires_atomic_consumption: bool,
    /// The agent should prepare an approval packet (the reference's `packet`).
    pub approval_packet_required: bool,
    /// The decision time (the request's `now`).
    pub now: OffsetDateTime,
    /// What the exact-action binding commits to, for classes that need approval
    /// ([`Decision::action_binding`] gives the object).
    ///
    /// Boxed: most decisions kept (an assessment's, [`Decision::into_verdict_only`]) have none,
    /// and it is over half a decision's size inline.
    pub binding: Option<Box<ActionBinding<'a>>>,
    /// The presented approval's check result, when one was presented.
    pub approval_check: Option<Result<&'static str, &'static str>>,
    /// The evidence summary of the class.
    pub summary: EvidenceSummary,
    /// The requested action (`context.requestedAction`, else the context).
    pub requested_action: Cow<'a, Value>,
}

impl Decision<'_> {
    /// The decision time, JS ISO form (`2026-05-30T12:00:00.000Z`).
    #[must_use]
    pub fn created_at(&self) -> String {
        binding::js_iso(self.now)
    }

    /// `tgd_<YYYYMMDDhhmmss>_<slug of the requested class>`.
    #[must_use]
    pub fn decision_id(&self) -> String {
        self.decision_id_at(&self.created_at())
    }

    /// [`Decision::decision_id`] from an already formatted `created_at`.
    fn decision_id_at(&self, created_at: &str) -> String {
        let slug = slug(&self.requested_class);
        let mut id = String::with_capacity(4 + 14 + 1 + slug.len());
        id.push_str("tgd_");
        id.extend(created_at.bytes().filter(u8::is_ascii_digit).take(14).map(char::from));
        id.push('_');
        id.push_str(&slug);
        id
    }

    /// The exact-action binding (`ActionBinding`, §3.5) for classes that need approval, built on
    /// first use: `inputHash` and `actionHash` are `sha256:` digests of canonical JSON, the
    /// nonce is derived from the request when it gave none, the expiry defaults to the decision
    /// time plus 10 minutes.
    #[must_use]
    pub fn action_binding(&self) -> Option<&Value> {
        self.binding.as_ref().map(|b| b.value(&self.action_class, &self.constraints, self.now))
    }

    /// The same decision made at `now` instead: what [`can_execute`] answers for the same
    /// request at another time when nothing else changed and no approval was presented (the
    /// decision time is the only input read from the clock; the binding, whose nonce and default
    /// expiry derive from it, is rebuilt on first use). Decisions with a presented approval
    /// checked (`approval_check` set) depend on the time through the check: `None` for them.
    #[must_use]
    pub fn retimed(&self, now: OffsetDateTime) -> Option<Decision<'static>> {
        if self.approval_check.is_some() {
            return None;
        }
        let mut d = self.clone().into_owned();
        d.now = now;
        if let Some(b) = d.binding.as_mut() {
            b.digests = OnceLock::new();
            b.value = OnceLock::new();
        }
        Some(d)
    }

    /// Detaches the decision from the request and policy set it borrows from.
    #[must_use]
    pub fn into_owned(mut self) -> Decision<'static> {
        let binding = self.binding.take().map(|b| Box::new(b.into_owned()));
        let requested_action = std::mem::replace(&mut self.requested_action, Cow::Owned(Value::Null)).into_owned();
        Decision { binding, requested_action: Cow::Owned(requested_action), ..self.into_verdict_only() }
    }

    /// [`Decision::into_owned`] without the two copies of the requested action: `binding` is
    /// `None` and `requested_action` is `null`. For a caller that keeps many decisions beside
    /// the requests they were made from (the console's assessment of every pending packet, whose
    /// packets hold the action): the state, mode, tier, constraints, graduation path and evidence
    /// summary are kept, and [`Decision::action_binding`], [`Decision::to_json`] and
    /// `prepare_approval_packet` of the result do not describe the request — recompute the
    /// decision for those.
    #[must_use]
    pub fn into_verdict_only(self) -> Decision<'static> {
        Decision {
            status: self.status,
            action_class: Cow::Owned(self.action_class.into_owned()),
            requested_class: Cow::Owned(self.requested_class.into_owned()),
            reason: self.reason,
            mode: self.mode,
            tier: self.tier,
            autonomy_level: self.autonomy_level,
            allowed: self.allowed,
            needs_approval: self.needs_approval,
            constraints: Cow::Owned(self.constraints.into_owned()),
            graduation_path: self.graduation_path,
            requires_atomic_consumption: self.requires_atomic_consumption,
            approval_packet_required: self.approval_packet_required,
            now: self.now,
            binding: None,
            approval_check: self.approval_check,
            summary: self.summary,
            requested_action: Cow::Owned(Value::Null),
        }
    }

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
        m.insert("constraints".into(), Value::Object(self.constraints.clone().into_owned()));
        if let Some(g) = &self.graduation_path {
            m.insert("graduationPath".into(), g.to_json());
        }
        if self.requires_atomic_consumption {
            m.insert("requires_atomic_consumption".into(), json!(true));
        }
        m.insert("approval_packet_required".into(), json!(self.approval_packet_required));
        m.insert("decision_id".into(), json!(self.decision_id()));
        m.insert("created_at".into(), json!(self.created_at()));
        if let Some(b) = self.action_binding() {
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

    /// Appends [`Decision::to_json`]'s compact serialization to `out` without building it: the
    /// same bytes (members in the same sorted order), plus an `id` member in its sorted place
    /// when `id` is given (how `warrant eval` echoes a request id).
    ///
    /// # Errors
    /// Only those of writing into `out` through serde_json (none for a `Vec`).
    pub fn write_json(&self, id: Option<&Value>, out: &mut Vec<u8>) -> serde_json::Result<()> {
        // Keys and the fixed texts (states, modes, reasons) need no escaping: they are written
        // as bytes; strings from the request go through `canonical::write_str` (serde_json's
        // escapes), JSON values from the request through serde_json.
        use crate::canonical::write_str;
        out.push(b'{');
        if let Some(b) = &self.binding {
            // `action_binding` sorts first: written straight from its members (the bytes its
            // `actionHash` covers, plus that hash).
            out.extend_from_slice(b"\"action_binding\":");
            b.write_json(&self.action_class, &self.constraints, self.now, out);
            out.push(b',');
        }
        out.extend_from_slice(b"\"action_class\":");
        write_str(&self.action_class, out).map_err(serde_json::Error::io)?;
        out.extend_from_slice(if self.allowed { b",\"allowed\":true" } else { b",\"allowed\":false" });
        out.extend_from_slice(if self.approval_packet_required {
            b",\"approval_packet_required\":true"
        } else {
            b",\"approval_packet_required\":false"
        });
        out.extend_from_slice(b",\"autonomy_level\":");
        write_u32(u32::from(self.autonomy_level), out);
        out.extend_from_slice(b",\"constraints\":");
        serde_json::to_writer(&mut *out, self.constraints.as_ref())?;
        let created_at = self.created_at();
        out.extend_from_slice(b",\"created_at\":");
        write_str(&created_at, out).map_err(serde_json::Error::io)?;
        out.extend_from_slice(b",\"decision_id\":");
        write_str(&self.decision_id_at(&created_at), out).map_err(serde_json::Error::io)?;
        if let Some(g) = &self.graduation_path {
            out.extend_from_slice(b",\"graduationPath\":{\"current\":");
            write_u32(u32::from(g.current), out);
            out.extend_from_slice(b",\"needed\":");
            write_u32(u32::from(g.needed), out);
            out.extend_from_slice(b",\"next_best_action\":\"");
            out.extend_from_slice(g.next_best_action.as_str().as_bytes());
            out.extend_from_slice(b"\",\"required_evidence\":");
            serde_json::to_writer(&mut *out, g.required_evidence)?;
            out.extend_from_slice(b",\"safe_fallback_action_class\":");
            write_str(g.safe_fallback_action_class, out).map_err(serde_json::Error::io)?;
            out.push(b'}');
        }
        if let Some(id) = id {
            out.extend_from_slice(b",\"id\":");
            serde_json::to_writer(&mut *out, id)?;
        }
        out.extend_from_slice(b",\"mode\":\"");
        out.extend_from_slice(self.mode.as_str().as_bytes());
        out.extend_from_slice(if self.needs_approval {
            b"\",\"needs_approval\":true,\"observed\":{"
        } else {
            b"\",\"needs_approval\":false,\"observed\":{"
        });
        if let Some(check) = self.approval_check {
            let (valid, code) = match check {
                Ok(code) => (true, code),
                Err(code) => (false, code),
            };
            out.extend_from_slice(b"\"approval\":{\"code\":");
            write_str(code, out).map_err(serde_json::Error::io)?;
            out.extend_from_slice(if valid { b",\"valid\":true}," } else { b",\"valid\":false}," });
        }
        out.extend_from_slice(b"\"evidence\":");
        self.summary.write_json(out)?;
        out.extend_from_slice(b",\"requested_action_class\":");
        write_str(&self.requested_class, out).map_err(serde_json::Error::io)?;
        out.extend_from_slice(b"},\"reason\":");
        write_str(&self.reason, out).map_err(serde_json::Error::io)?;
        if self.requires_atomic_consumption {
            out.extend_from_slice(b",\"requires_atomic_consumption\":true");
        }
        out.extend_from_slice(b",\"status\":\"");
        out.extend_from_slice(self.status.as_str().as_bytes());
        out.extend_from_slice(b"\",\"tier\":\"");
        out.extend_from_slice(self.tier.as_str().as_bytes());
        out.extend_from_slice(b"\"}");
        Ok(())
    }
}

/// Appends `n` in decimal.
pub(crate) fn write_u32(n: u32, out: &mut Vec<u8>) {
    let mut digits = [0u8; 10];
    let mut i = digits.len();
    let mut n = n;
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
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
/// The gate's reason when the evidence chain does not verify (warrant's fail-closed rule).
pub const R_CHAIN_BROKEN: &str = "The evidence chain does not verify; nothing runs until the principal examines it.";
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
    if s.is_ascii() {
        // ASCII lower-cases byte by byte: the same result without the per-char Unicode pass.
        let mut out = String::with_capacity(s.len().min(60));
        let mut dash = false;
        for b in s.bytes().map(|b| b.to_ascii_lowercase()) {
            if b.is_ascii_lowercase() || b.is_ascii_digit() {
                if dash && !out.is_empty() {
                    out.push('-');
                    if out.len() == 60 {
                        break;
                    }
                }
                dash = false;
                out.push(char::from(b));
                if out.len() == 60 {
                    break;
                }
            } else {
                dash = true;
            }
        }
        return if out.is_empty() { "action".into() } else { out };
    }
    slug_chars(s)
}

/// [`slug`] for any text, character by character.
fn slug_chars(s: &str) -> String {
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

/// A constraints member that breaks `decision.schema.json` ([`check_constraints`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("constraints.{member} is malformed ({value})")]
pub struct ConstraintError {
    /// The member's name (`max_amount`, …).
    pub member: String,
    /// Its value, as JSON.
    pub value: String,
}

/// Checks the vocabulary members of a constraints object against `decision.schema.json`.
///
/// # Errors
/// [`ConstraintError`] naming the first malformed member.
pub fn check_constraints(c: &Map<String, Value>) -> Result<(), ConstraintError> {
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
            return Err(ConstraintError { member: k.clone(), value: v.to_string() });
        }
    }
    Ok(())
}

/// The context members the gate reads, found in one pass over the context object (instead of a
/// map lookup per member).
#[derive(Default)]
struct ContextView<'a> {
    principal: Option<&'a Value>,
    requested_by: Option<&'a Value>,
    requested_by_snake: Option<&'a Value>,
    tenant: Option<&'a Value>,
    target: Option<&'a Value>,
    recipient: Option<&'a Value>,
    input: Option<&'a Value>,
    requested_action: Option<&'a Value>,
    constraints: Option<&'a Value>,
    expires_at: Option<&'a Value>,
    nonce: Option<&'a Value>,
    asynchronous_approval: Option<&'a Value>,
    approval_state: Option<&'a Value>,
}

impl<'a> ContextView<'a> {
    fn of(ctx: &'a Value) -> Self {
        let mut v = ContextView::default();
        let Value::Object(m) = ctx else { return v };
        for (k, value) in m {
            let slot = match k.as_str() {
                "principal" => &mut v.principal,
                "requestedBy" => &mut v.requested_by,
                "requested_by" => &mut v.requested_by_snake,
                "tenant" => &mut v.tenant,
                "target" => &mut v.target,
                "recipient" => &mut v.recipient,
                "input" => &mut v.input,
                "requestedAction" => &mut v.requested_action,
                "constraints" => &mut v.constraints,
                "expiresAt" => &mut v.expires_at,
                "nonce" => &mut v.nonce,
                "asynchronousApproval" => &mut v.asynchronous_approval,
                "approvalState" => &mut v.approval_state,
                _ => continue,
            };
            *slot = Some(value);
        }
        v
    }
}

/// The first of `members` that is a string (as `ctx.get(k).and_then(Value::as_str)` in order).
fn str_of<'a>(members: &[Option<&'a Value>]) -> Option<&'a str> {
    members.iter().find_map(|m| m.and_then(Value::as_str))
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
    reason: Cow<'static, str>,
    allowed: bool,
    needs_approval: bool,
    packet: bool,
    path: Option<(NextAction, &'static str)>,
}

impl Outcome {
    fn review(
        asynchronous: bool,
        mode: Mode,
        reason: Cow<'static, str>,
        next: NextAction,
        fallback: &'static str,
    ) -> Self {
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

    fn blocked(reason: Cow<'static, str>) -> Self {
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
///
/// The class's evidence is read from the prepared [`EvidenceIndex`] (one lookup), and nothing is
/// hashed unless a presented approval must be checked against the exact-action binding; the
/// binding is otherwise built when [`Decision::action_binding`] is first called.
#[must_use]
pub fn can_execute<'a>(policies: &'a PolicySet, req: &GateRequest<'a>) -> Decision<'a> {
    static NULL: Value = Value::Null;
    let canonical = policies.normalize_cow(req.action_class);
    let class_ok = is_class_id(&canonical);
    let policy: Cow<'a, ClassPolicy> = policies.policy(&canonical);
    let summary = req.evidence.summary(&canonical);
    let tier = summary.tier();
    let level = tier.autonomy_level();
    let ctx: &'a Value = if req.context.is_object() { req.context } else { &NULL };
    let view = ContextView::of(ctx);
    let (malformed_constraints, constraints) = request_constraints(&view, &policy);
    let requested_action: Cow<'a, Value> = match view.requested_action {
        Some(v @ Value::Object(_)) => Cow::Borrowed(v),
        _ if ctx.is_object() => Cow::Borrowed(ctx),
        _ => Cow::Owned(Value::Object(Map::new())),
    };
    let asynchronous = truthy(view.asynchronous_approval);
    let approval_presented = req.approval.and_then(|a| a.get("state")).and_then(Value::as_str) == Some("approved")
        || view.approval_state.and_then(Value::as_str) == Some("approved");
    let approval_required = policy.approval_required();

    let (binding, approval_check) = if approval_required && !policy.is_human_only() && class_ok {
        let (b, check) = approval_binding(req, &view, &canonical, &constraints, &requested_action, approval_presented);
        (Some(Box::new(b)), check)
    } else {
        (None, None)
    };
    let valid_grant = matches!(approval_check, Some(Ok(_)));

    let outcome = if let Some(blocked) = blocked_outcome(policies, req, &canonical, class_ok, malformed_constraints) {
        blocked
    } else if policy.is_human_only() {
        Outcome {
            status: DecisionState::HumanOnly,
            mode: Mode::HumanOnly,
            reason: Cow::Borrowed(R_HUMAN_ONLY),
            allowed: false,
            needs_approval: true,
            packet: false,
            path: Some((NextAction::Stop, "draft.compose")),
        }
    } else if approval_required && !valid_grant {
        let reason = match approval_check {
            Some(Err(code)) => Cow::Owned(format!("Presented approval does not authorize this exact action: {code}.")),
            _ => Cow::Borrowed(R_APPROVAL),
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
            reason: Cow::Borrowed(R_GRANT),
            allowed: false,
            needs_approval: false,
            packet: false,
            path: None,
        }
    } else if tier == Tier::Review {
        Outcome::review(
            asynchronous,
            Mode::ReviewOnly,
            Cow::Borrowed(R_REVIEW),
            NextAction::RequestPrincipalApproval,
            "draft.response",
        )
    } else if level < policy.minimum_level {
        Outcome::review(
            false,
            Mode::InsufficientEvidence,
            Cow::Owned(format!(
                "Action requires autonomy level {}; current evidence supports level {level}.",
                policy.minimum_level
            )),
            NextAction::CollectReceipt,
            fallback_for(&canonical),
        )
    } else {
        allowed_outcome(tier, &constraints)
    };
    let requires_atomic_consumption = outcome.mode == Mode::PendingAtomicConsumption;
    Decision {
        status: outcome.status,
        graduation_path: outcome.path.map(|(next, fallback)| GraduationPath {
            needed: policy.minimum_level,
            current: level,
            next_best_action: next,
            safe_fallback_action_class: fallback,
            required_evidence: if policy.requires_approval { EVIDENCE_APPROVAL } else { EVIDENCE_RECEIPT },
        }),
        action_class: canonical,
        requested_class: Cow::Borrowed(req.action_class),
        reason: outcome.reason,
        mode: outcome.mode,
        tier,
        autonomy_level: level,
        allowed: outcome.allowed,
        needs_approval: outcome.needs_approval,
        constraints,
        requires_atomic_consumption,
        approval_packet_required: outcome.packet,
        now: req.now,
        binding,
        approval_check,
        summary,
        requested_action,
    }
}

/// The constraints the request runs within: the class's, merged with the request's own when they
/// are well formed; and what is wrong with the request's own when they are not.
fn request_constraints<'a>(
    view: &ContextView<'a>,
    policy: &Cow<'a, ClassPolicy>,
) -> (Option<ConstraintError>, Cow<'a, Map<String, Value>>) {
    let ctx_constraints = match view.constraints {
        Some(Value::Object(c)) => Some(c),
        _ => None,
    };
    let malformed_constraints = ctx_constraints.and_then(|c| check_constraints(c).err());
    let constraints: Cow<'a, Map<String, Value>> = match (ctx_constraints, policy) {
        (Some(c), _) if malformed_constraints.is_none() && !c.is_empty() => {
            Cow::Owned(merge_constraints(&policy.constraints, c))
        }
        (_, Cow::Borrowed(p)) => {
            let p: &'a ClassPolicy = p;
            Cow::Borrowed(&p.constraints)
        }
        (_, Cow::Owned(p)) => Cow::Owned(p.constraints.clone()),
    };
    (malformed_constraints, constraints)
}

/// The exact-action binding of the request `req` (its value is built when first asked for), and
/// the check of the approval presented with it, when one is, against that binding.
fn approval_binding<'a>(
    req: &GateRequest<'a>,
    view: &ContextView<'a>,
    canonical: &str,
    constraints: &Map<String, Value>,
    requested_action: &Cow<'a, Value>,
    approval_presented: bool,
) -> (ActionBinding<'a>, Option<Result<&'static str, &'static str>>) {
    let expires_at = str_of(&[view.expires_at])
        .map(Cow::Borrowed)
        .or_else(|| constraints.get("expires_at").and_then(Value::as_str).map(|e| Cow::Owned(e.to_owned())))
        .or_else(|| req.approval.and_then(|a| a.get("expiresAt")).and_then(Value::as_str).map(Cow::Borrowed));
    let nonce = str_of(&[view.nonce])
        .or_else(|| req.approval.and_then(|a| a.get("nonce")).and_then(Value::as_str))
        .map(Cow::Borrowed);
    let b = ActionBinding {
        workspace: Cow::Borrowed(req.workspace),
        principal: Cow::Borrowed(str_of(&[view.principal]).unwrap_or(req.workspace)),
        requested_by: Cow::Borrowed(str_of(&[view.requested_by, view.requested_by_snake]).unwrap_or("agent")),
        tenant: Cow::Borrowed(str_of(&[view.tenant]).unwrap_or("")),
        target: Cow::Borrowed(str_of(&[view.target, view.recipient]).unwrap_or("")),
        input: view.input.map_or_else(|| requested_action.clone(), Cow::Borrowed),
        expires_at,
        nonce,
        digests: OnceLock::new(),
        value: OnceLock::new(),
    };
    let mut approval_check = None;
    if approval_presented {
        let built = b.value(canonical, constraints, req.now);
        approval_check = Some(binding::validate_grant(built, req.approval, req.now));
    }
    (b, approval_check)
}

/// The outcome when one of the gate's fail-closed rules applies: not an action class, malformed
/// constraints, a broken chain, a stopped or quarantined agent, an unknown class under a strict
/// policy.
fn blocked_outcome(
    policies: &PolicySet,
    req: &GateRequest<'_>,
    canonical: &str,
    class_ok: bool,
    malformed_constraints: Option<ConstraintError>,
) -> Option<Outcome> {
    if !class_ok {
        Some(Outcome::blocked(Cow::Owned(format!(
            "{:?} is not an action class (like email.send.external); the gate fails closed.",
            req.action_class
        ))))
    } else if let Some(why) = malformed_constraints {
        Some(Outcome::blocked(Cow::Owned(format!("The request's {why}; the gate fails closed."))))
    } else if !req.chain_intact {
        Some(Outcome::blocked(Cow::Borrowed(R_CHAIN_BROKEN)))
    } else if req.agent == AgentStanding::Killed {
        Some(Outcome::blocked(Cow::Borrowed(
            "The agent was stopped by the kill switch; it may not act until the principal restores it.",
        )))
    } else if req.agent == AgentStanding::Quarantined {
        Some(Outcome::blocked(Cow::Borrowed(
            "The agent is quarantined; its actions are denied until the principal releases it.",
        )))
    } else if policies.strict && policies.registered(canonical).is_none() {
        Some(Outcome::blocked(Cow::Owned(format!(
            "Unknown action class {canonical}: the policy is strict and no local class declares it."
        ))))
    } else {
        None
    }
}

/// The outcome of an allowed call: within its constraints when it has any the gate knows.
fn allowed_outcome(tier: Tier, constraints: &Map<String, Value>) -> Outcome {
    let constrained = CONSTRAINT_VOCABULARY.iter().any(|k| constraints.contains_key(*k));
    Outcome {
        status: if constrained { DecisionState::AllowedWithConstraints } else { DecisionState::Allowed },
        mode: match tier {
            Tier::AutoCapped => Mode::AutoCapped,
            Tier::Supervised => Mode::Supervised,
            _ => Mode::Allowed,
        },
        reason: Cow::Borrowed(R_ALLOWED),
        allowed: true,
        needs_approval: false,
        packet: false,
        path: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graduation::evidence::{EvidenceRow, SourceType};

    /// `write_json` (bytes written member by member) gives exactly serde_json's serialization of
    /// `to_json` with the id added, for every state and optional member: allowed, review with a
    /// graduation path, human-only, an exact binding, a checked approval, escapes in the
    /// request's strings, and no id.
    #[test]
    fn write_json_is_to_json_byte_for_byte() {
        let policies = PolicySet::default();
        let rows: Vec<EvidenceRow> = (0..12)
            .map(|i| {
                let label = ["approved", "rejected", "minor edit", "trust_issue"][i % 4];
                EvidenceRow::new("draft.response", label, Some(SourceType::Receipt), None)
            })
            .collect();
        let evidence = EvidenceIndex::new(&rows);
        let now = time::macros::datetime!(2026-11-21 09:00:00.25 UTC);
        let contexts = [
            json!({}),
            json!({"requestedBy": "scr\"ibe\n", "target": "a@b.c", "nonce": "n-1", "constraints": {"max_amount": 5}}),
            json!({"approvalState": "approved", "asynchronousApproval": true}),
        ];
        let approvals = [None, Some(json!({"state": "approved"})), Some(json!({"grantId": "g", "state": "approved"}))];
        let mut seen = std::collections::BTreeSet::new();
        for class in ["draft.response", "email.send.external", "payment.spend", "Draft_Response", "widget.thing"] {
            for context in &contexts {
                for approval in &approvals {
                    for agent in [AgentStanding::Active, AgentStanding::Quarantined] {
                        for id in [None, Some(json!(7)), Some(json!({"a": ["é\u{1}"]}))] {
                            let req = GateRequest {
                                action_class: class,
                                context,
                                approval: approval.as_ref(),
                                evidence: &evidence,
                                workspace: "w\\s",
                                now,
                                agent,
                                chain_intact: true,
                            };
                            let d = can_execute(&policies, &req);
                            seen.insert((d.status.as_str(), d.graduation_path.is_some(), d.binding.is_some()));
                            let mut want = d.to_json();
                            if let (Some(id), Value::Object(m)) = (&id, &mut want) {
                                m.insert("id".into(), id.clone());
                            }
                            let mut got = Vec::new();
                            d.write_json(id.as_ref(), &mut got).expect("write");
                            assert_eq!(
                                String::from_utf8_lossy(&got),
                                serde_json::to_string(&want).expect("json"),
                                "{class} {context} {approval:?}"
                            );
                        }
                    }
                }
            }
        }
        // The cases are not vacuous: several states, with and without a path and a binding.
        assert!(seen.len() >= 5, "{seen:?}");
        assert!(seen.iter().any(|s| s.1) && seen.iter().any(|s| s.2), "{seen:?}");
    }

    /// `into_owned` keeps every field; `into_verdict_only` keeps every field but the requested
    /// action and its binding, on a decision that has both.
    #[test]
    fn the_verdict_only_decision_is_the_decision_without_the_action() {
        let policies = PolicySet::default();
        let evidence = EvidenceIndex::new(&[]);
        let context = json!({"requestedBy": "scribe", "target": "a@b.c", "input": {"to": "a@b.c", "body": "hi"}});
        let req = GateRequest {
            action_class: "email.send.external",
            context: &context,
            approval: None,
            evidence: &evidence,
            workspace: "w",
            now: time::macros::datetime!(2026-11-21 09:00:00 UTC),
            agent: AgentStanding::Active,
            chain_intact: true,
        };
        let d = can_execute(&policies, &req);
        assert!(d.binding.is_some() && !d.requested_action.is_null(), "{d:?}");
        assert_eq!(d.clone().into_owned(), d);
        let slim = d.clone().into_verdict_only();
        assert!(slim.binding.is_none() && slim.requested_action.is_null() && slim.action_binding().is_none());
        let full = Decision { binding: None, requested_action: Cow::Owned(Value::Null), ..d };
        assert_eq!(slim, full);
    }

    #[test]
    fn slugs_like_the_reference() {
        assert_eq!(slug("email.send.external"), "email-send-external");
        assert_eq!(slug("--A__b--"), "a-b");
        assert_eq!(slug("..."), "action");
        assert_eq!(slug(&"x".repeat(80)).len(), 60);
        let long = format!("{}..yy", "x".repeat(59));
        for s in [
            "email.send.external",
            "--A__b--",
            "...",
            "",
            "Draft_Response",
            "a",
            "-a-",
            "a--b",
            &long,
            &long[1..],
            &"ab.".repeat(30),
            "İx",
            "\u{212a}elvin",
            "ÉMAIL.send",
            "x\u{0}y",
        ] {
            assert_eq!(slug(s), slug_chars(s), "{s:?}");
        }
        assert!(slug(&long).ends_with('-'));
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
