//! One verdict per packet: every gating model that applies, composed.
//!
//! A packet always has a Trust Graduation action class; it may also carry a `governance` object
//! (top level in a portable packet, `context.governance` in a runtime packet, whose schema
//! forbids extra top-level keys):
//!
//! ```json
//! "governance": {
//!   "tool": "corrections.merge",       // tool key: its tier and ladder floor come from policy.toml
//!   "notebook": "nb-sales",            // the notebook whose trust level applies
//!   "action": { "action_id": "merge-1", "name": "Merge", "execute_api": "/merge",
//!               "reversibility": "partial", "is_read_only": false, "is_admin": false },
//!   "eff_score": 0.72, "has_consensus": false,
//!   "contract": { "required_level": 3, "blast_radius": "project", "reversibility": "reversible",
//!                 "scope": {"level": "repo", "identifier": "acme/web"},
//!                 "data_sensitivity": "private", "preconditions": [] }
//! }
//! ```
//!
//! Each model that applies gives a [`ModelVerdict`] in its own words and mapped into the six
//! decision states; the strictest state wins ([`compose`]). The mapping and the strictness order
//! are the table in `docs/conformance.md` ("One verdict"):
//!
//! | model | its verdict | decision state |
//! | --- | --- | --- |
//! | Trust Graduation | the gate's status | itself |
//! | tool tiers × notebook trust | auto / gated / confirm | allowed / deferred / review_required |
//! | execution rings | allowed / ring shortfall / witness required / invalid | allowed / review_required / human_only / blocked |
//! | rate limit | within / exceeded | allowed / blocked |
//! | trust ladder | allow / hold / deny below L5 / deny at L5 | allowed / review_required / review_required / blocked |
//! | preconditions | hold / changed | allowed / blocked |
//!
//! Strictness: allowed < allowed_with_constraints < deferred < review_required < human_only <
//! blocked. `blocked` means that no one may approve the packet: the agent is killed
//! or quarantined, the ladder says L5 (prohibited), the chain is broken, the packet or one of its
//! governance parts is malformed, the rate limit is exceeded, a precondition no longer holds, or
//! the file's owner may not speak for the agent. A ring or ladder shortfall that a person can
//! authorise is `review_required`: the principal's signature on that one action is the
//! sponsorship the ring model asks for, or resolves the ladder's hold, and the approval record
//! says so ([`PacketVerdict::stands_in_for`], signed as the decision's `stands_in_for`). Every
//! `blocked` and `human_only` verdict names what would change it ([`ModelVerdict::remedy`]).
//! A model that does not apply is left out. Ring, tier and ladder verdicts can only make a packet
//! stricter: the Trust Graduation gate always applies, so an agent that claims a high score
//! gains nothing the gate does not already allow.

use crate::control::ControlState;
use crate::graduation::evidence::EvidenceIndex;
use crate::graduation::gate::{AgentStanding, Decision, GateRequest, can_execute};
use crate::graduation::policy::PolicySet;
use crate::ladder::{self, ActionContract, Revalidation, TrustLevel};
use crate::packet::{DecisionState, Packet};
use crate::rings::{self, ActionDescriptor, Ring};
use crate::tiers::{self, TierAction};
use serde_json::{Value, json};
use std::sync::Arc;

/// The gating models warrant composes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Model {
    /// Trust Graduation v0.1: the action class gate.
    TrustGraduation,
    /// Tool tiers × notebook trust.
    Tiers,
    /// Execution rings: the agent's ring against the action's required ring.
    Rings,
    /// Per-ring token-bucket rate limits.
    RateLimit,
    /// Lodestar's trust ladder with the auto-approve ceiling.
    Ladder,
    /// Two-phase execution: the contract's preconditions against the world now.
    Preconditions,
    /// Who published the packet: the file's owner may speak for the agent it claims
    /// (`docs/spool.md`, Threat model). Not one of the five models: a packet an agent's owner
    /// may not speak for is `blocked`, never approvable, and not counted for that agent.
    Identity,
}

impl Model {
    /// The wire spelling.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Model::TrustGraduation => "trust_graduation",
            Model::Tiers => "tiers",
            Model::Rings => "rings",
            Model::RateLimit => "rate_limit",
            Model::Ladder => "ladder",
            Model::Preconditions => "preconditions",
            Model::Identity => "identity",
        }
    }
}

/// One model's verdict on a packet.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ModelVerdict {
    /// Which model.
    pub model: Model,
    /// The model's own word (`auto`, `hold`, `allowed`, `review_required`, …).
    pub verdict: String,
    /// Mapped into the six decision states.
    pub state: DecisionState,
    /// Why, in a sentence.
    pub reason: String,
    /// For a shortfall a principal's signature may authorise (a ring sponsorship, a ladder hold
    /// resolved, a tier confirmation): what an approval stands in for, in words recorded in the
    /// signed decision. `None` when the model asks nothing of the principal.
    pub stands_in_for: Option<String>,
    /// For a `blocked` or `human_only` verdict: what would change it, in one line ("release
    /// agent-x from quarantine", "fix field `governance.action.reversibility`").
    pub remedy: Option<String>,
}

impl ModelVerdict {
    /// A model's verdict: its own word (`verdict`), the decision state it maps to, and why.
    #[must_use]
    pub fn new(model: Model, verdict: &str, state: DecisionState, reason: impl Into<String>) -> Self {
        Self { model, verdict: verdict.to_owned(), state, reason: reason.into(), stands_in_for: None, remedy: None }
    }

    /// This verdict with what an approval stands in for ([`ModelVerdict::stands_in_for`]).
    #[must_use]
    pub fn standing_in_for(mut self, what: impl Into<String>) -> Self {
        self.stands_in_for = Some(what.into());
        self
    }

    /// This verdict with what would change it ([`ModelVerdict::remedy`]).
    #[must_use]
    pub fn with_remedy(mut self, what: impl Into<String>) -> Self {
        self.remedy = Some(what.into());
        self
    }

    /// A malformed input: `blocked`, "fail closed: …", and the remedy "fix field `…`" naming the
    /// part (`field`, dotted from the packet's top level).
    fn malformed(model: Model, field: &str, reason: impl std::fmt::Display) -> Self {
        Self::new(model, "invalid", DecisionState::Blocked, format!("fail closed: {reason}"))
            .with_remedy(format!("the agent must fix field `{field}` and propose again"))
    }
}

/// How strict a decision state is: allowed 0 … blocked 5 (the composition order).
#[must_use]
pub fn strictness(state: DecisionState) -> u8 {
    match state {
        DecisionState::Allowed => 0,
        DecisionState::AllowedWithConstraints => 1,
        DecisionState::Deferred => 2,
        DecisionState::ReviewRequired => 3,
        DecisionState::HumanOnly => 4,
        DecisionState::Blocked => 5,
    }
}

/// The composed verdict: the strictest model's state, and every model's verdict side by side.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PacketVerdict {
    /// The strictest state.
    pub state: DecisionState,
    /// The model that decided it (the first of the strictest, in evaluation order).
    pub decisive: Model,
    /// Each model that applied, in evaluation order.
    pub models: Vec<ModelVerdict>,
}

impl PacketVerdict {
    /// What an approval of this packet stands in for: each model's
    /// [`ModelVerdict::stands_in_for`], in evaluation order, for the models that hold the packet
    /// for review (state `review_required` or `deferred`). Empty when the approval is an
    /// ordinary one. Recorded in the signed decision (`stands_in_for`, `docs/spool.md`).
    #[must_use]
    pub fn stands_in_for(&self) -> Vec<String> {
        self.models
            .iter()
            .filter(|m| matches!(m.state, DecisionState::ReviewRequired | DecisionState::Deferred))
            .filter_map(|m| m.stands_in_for.clone())
            .collect()
    }

    /// Whether a person may approve this packet: not `blocked` (no one may) and not `human_only`
    /// (the action is done by a person, outside warrant).
    #[must_use]
    pub fn approvable(&self) -> bool {
        !matches!(self.state, DecisionState::Blocked | DecisionState::HumanOnly)
    }

    /// For a packet that cannot be approved: why, in one line (the decisive model's reason), and
    /// what would change it (its remedy, or a generic one). `None` when the packet is approvable.
    #[must_use]
    pub fn why_not_approvable(&self) -> Option<(String, String)> {
        if self.approvable() {
            return None;
        }
        let m = self.models.iter().find(|m| m.model == self.decisive && m.state == self.state);
        let reason = m.map_or_else(|| "no model vouched for the packet".to_owned(), |m| m.reason.clone());
        let remedy = m
            .and_then(|m| m.remedy.clone())
            .unwrap_or_else(|| "nothing the principal can sign; refuse it with a reason".to_owned());
        Some((reason, remedy))
    }

    /// This verdict with `model` added, composed again.
    #[must_use]
    pub fn with(self, model: ModelVerdict) -> Self {
        let mut models = self.models;
        models.push(model);
        compose(models)
    }
}

/// Composes model verdicts: the strictest state wins; ties go to the earlier model. An empty
/// list is `blocked` (nothing vouched for the packet).
#[must_use]
pub fn compose(models: Vec<ModelVerdict>) -> PacketVerdict {
    let decisive = models.iter().fold(None::<&ModelVerdict>, |best, m| match best {
        Some(b) if strictness(b.state) >= strictness(m.state) => Some(b),
        _ => Some(m),
    });
    let (state, model) = decisive.map_or((DecisionState::Blocked, Model::TrustGraduation), |m| (m.state, m.model));
    PacketVerdict { state, decisive: model, models }
}

/// The Trust Graduation gate's decision as a model verdict. A `blocked` or `human_only` gate
/// decision gets its remedy from `gate_remedy`.
#[must_use]
pub fn trust_graduation(d: &Decision) -> ModelVerdict {
    let v = ModelVerdict::new(Model::TrustGraduation, d.status.as_str(), d.status, d.reason.clone());
    match d.status {
        DecisionState::HumanOnly => v.with_remedy(format!(
            "{} is human only: a person performs it outside warrant; refuse the packet",
            d.action_class
        )),
        _ => v,
    }
}

/// What would change a Trust Graduation gate's `blocked` decision on `packet`, given the agent's
/// standing: release the agent, fix the class, repair the chain, or declare the class.
fn gate_remedy(packet: &Packet, standing: AgentStanding, d: &Decision) -> String {
    match standing {
        AgentStanding::Quarantined => {
            return format!(
                "release {} from quarantine (R in the Agents view, or `warrant agent release`)",
                packet.agent
            );
        }
        AgentStanding::Killed => {
            return format!(
                "release {} from the kill switch (`warrant agent release`), then it proposes again",
                packet.agent
            );
        }
        AgentStanding::Active => {}
    }
    if !crate::packet::is_class_id(&crate::registry::normalize(&packet.action_class)) {
        return "the agent must fix field `action_class` (a dotted class like email.send.external)".to_owned();
    }
    if d.reason == crate::graduation::gate::R_CHAIN_BROKEN {
        return "repair the chain: `warrant verify` names the first failing record".to_owned();
    }
    if d.reason.starts_with("Unknown action class") {
        return format!("declare {} in policy.toml's local classes (the policy is strict)", d.action_class);
    }
    "the agent must fix field `context.constraints` and propose again".to_owned()
}

/// Tool tiers × notebook trust: `auto` → allowed, `gated` → deferred, `confirm` →
/// review_required. An unregistered tool or an unnamed notebook fails closed to `confirm`.
#[must_use]
pub fn tiers(
    tool: Option<&str>,
    tier: Option<tiers::ToolTier>,
    notebook: Option<&str>,
    trust: Option<tiers::NotebookTrust>,
) -> ModelVerdict {
    let action = tiers::gate_action(tier, trust);
    let state = match action {
        TierAction::Auto => DecisionState::Allowed,
        TierAction::Gated => DecisionState::Deferred,
        TierAction::Confirm => DecisionState::ReviewRequired,
    };
    let tier_text = match (tool, tier) {
        (Some(t), Some(tier)) => format!("tool {t} is {tier}"),
        (Some(t), None) => format!("tool {t} has no tier in policy.toml (unknown: fail closed)"),
        (None, _) => "no tool named (unknown tier: fail closed)".to_owned(),
    };
    let trust_text = match (notebook, trust) {
        (Some(n), Some(trust)) => format!("notebook {n} is {trust}"),
        _ => "no notebook named (unknown trust: fail closed)".to_owned(),
    };
    let v = ModelVerdict::new(Model::Tiers, action.as_str(), state, format!("{tier_text}; {trust_text} → {action}"));
    match action {
        TierAction::Auto => v,
        TierAction::Gated | TierAction::Confirm => {
            v.standing_in_for(format!("tier confirmation: {tier_text}; {trust_text}"))
        }
    }
}

/// The ring check of an active agent as a model verdict: allowed → allowed; an action needing
/// Ring 0 → human_only (an SRE witness, a human, must attest); an insufficient ring →
/// review_required, the principal's signature sponsoring the required ring for this one action
/// (`sponsorship_required`); an invalid descriptor → blocked. A quarantined or killed agent's
/// ring is judged by [`evaluate`], which blocks it.
#[must_use]
pub fn rings_verdict(r: &rings::RingCheckResult) -> ModelVerdict {
    if r.allowed {
        ModelVerdict::new(Model::Rings, "allowed", DecisionState::Allowed, r.reason.clone())
    } else if r.requires_sre_witness {
        ModelVerdict::new(Model::Rings, "requires_sre_witness", DecisionState::HumanOnly, r.reason.clone()).with_remedy(
            "a Ring 0 action needs an SRE witness: a person performs it outside warrant; refuse the packet",
        )
    } else if r.agent_ring > r.required_ring && r.required_ring != Ring::Root {
        let (need, have) = (r.required_ring.value(), r.agent_ring.value());
        ModelVerdict::new(
            Model::Rings,
            "sponsorship_required",
            DecisionState::ReviewRequired,
            format!("{}; an approval sponsors Ring {need} for this action only", r.reason),
        )
        .standing_in_for(format!("ring sponsorship: Ring {need} for this action (agent at Ring {have})"))
    } else {
        ModelVerdict::new(Model::Rings, "denied", DecisionState::Blocked, r.reason.clone())
            .with_remedy("the agent must fix field `governance.action` and propose again")
    }
}

/// The trust ladder's decision on `contract` as a model verdict: allow → allowed; hold →
/// review_required (the approval resolves the hold); deny below L5 (a level above the
/// auto-approve ceiling no rule allows, or a contract below its tool's floor) →
/// review_required, a shortfall the principal may authorise; deny at L5 → blocked (prohibited).
#[must_use]
pub fn ladder_verdict(d: &ladder::LadderDecision, contract: &ActionContract) -> ModelVerdict {
    let level = contract.required_level;
    match d.verdict {
        ladder::Verdict::Allow => ModelVerdict::new(Model::Ladder, "allow", DecisionState::Allowed, d.reason.clone()),
        ladder::Verdict::Deny if level >= TrustLevel::L5 => {
            ModelVerdict::new(Model::Ladder, "deny", DecisionState::Blocked, d.reason.clone()).with_remedy(format!(
                "{level} is prohibited: no signature allows it; the agent must propose a lower-level action"
            ))
        }
        ladder::Verdict::Hold | ladder::Verdict::Deny => {
            let word = if d.verdict == ladder::Verdict::Hold { "hold" } else { "deny" };
            ModelVerdict::new(Model::Ladder, word, DecisionState::ReviewRequired, d.reason.clone()).standing_in_for(
                format!("ladder hold resolved: an {level} action the ladder does not allow on its own"),
            )
        }
    }
}

/// The `governance` object of a packet, parsed. Each part is `None` when absent and `Err` with a
/// reason when present but malformed.
#[derive(Debug, Clone, Default)]
pub struct Governance {
    /// The tool key.
    pub tool: Option<String>,
    /// The notebook id.
    pub notebook: Option<String>,
    /// The Agent Hypervisor action descriptor.
    pub action: Option<Result<ActionDescriptor, crate::rings::ValidationError>>,
    /// The agent's claimed effective score (`eff_score`), before policy caps.
    pub eff_score: Option<f64>,
    /// The agent's claimed consensus (`has_consensus`).
    pub has_consensus: bool,
    /// The Lodestar action contract.
    pub contract: Option<Result<ActionContract, crate::ladder::LadderError>>,
    /// Set when the object itself (or a scalar field) is malformed.
    pub error: Option<String>,
}

/// A packet's parsed `governance` object, computed on first use from the packet's `raw` and
/// `context` (which do not change once a packet is parsed) and shared by every later call:
/// the console assesses each pending packet on every scan. Equal for every two packets (it is a
/// function of fields that are compared themselves).
#[derive(Default)]
pub struct GovernanceCache(std::sync::OnceLock<Option<Arc<Governance>>>);

impl Clone for GovernanceCache {
    fn clone(&self) -> Self {
        let lock = std::sync::OnceLock::new();
        if let Some(g) = self.0.get() {
            let _ = lock.set(g.clone());
        }
        Self(lock)
    }
}

impl PartialEq for GovernanceCache {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for GovernanceCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("GovernanceCache")
    }
}

impl Governance {
    /// The packet's `governance` object (portable: top level; runtime: `context.governance`),
    /// parsed once per packet ([`GovernanceCache`]).
    #[must_use]
    pub fn of_packet(p: &Packet) -> Option<Arc<Self>> {
        p.governance
            .0
            .get_or_init(|| {
                let raw = p.raw.get("governance").or_else(|| p.context().get("governance"))?;
                Some(Arc::new(Self::from_json(raw)))
            })
            .clone()
    }

    /// Parses a governance object; never fails: problems are recorded per part.
    #[must_use]
    pub fn from_json(v: &Value) -> Self {
        let Value::Object(m) = v else {
            return Governance { error: Some("`governance` must be an object".into()), ..Self::default() };
        };
        let mut g = Governance::default();
        let mut errors = Vec::new();
        g.tool = match m.get("tool") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if crate::calls::is_tool_key(s) => Some(s.clone()),
            Some(_) => {
                errors.push("`governance.tool` must be a tool key (a safe id, `/` between parts)".to_owned());
                None
            }
        };
        g.notebook = match m.get("notebook") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if crate::packet::is_safe_id(s) => Some(s.clone()),
            Some(_) => {
                errors.push("`governance.notebook` must be a safe id".to_owned());
                None
            }
        };
        match m.get("eff_score") {
            None | Some(Value::Null) => {}
            Some(Value::Number(n)) => g.eff_score = n.as_f64(),
            Some(_) => errors.push("`governance.eff_score` must be a number".into()),
        }
        match m.get("has_consensus") {
            None | Some(Value::Null) => {}
            Some(Value::Bool(b)) => g.has_consensus = *b,
            Some(_) => errors.push("`governance.has_consensus` must be a boolean".into()),
        }
        g.action = m.get("action").map(ActionDescriptor::from_json);
        g.contract = m.get("contract").map(ActionContract::from_json);
        let known = ["tool", "notebook", "action", "eff_score", "has_consensus", "contract", "session_id"];
        if let Some(k) = m.keys().find(|k| !known.contains(&k.as_str())) {
            errors.push(format!("unknown field `governance.{k}`"));
        }
        if !errors.is_empty() {
            g.error = Some(errors.join("; "));
        }
        g
    }
}

/// What the composition reads besides the packet: the policies, the principal's controls, the
/// time and what the edges observed (rate limits, preconditions).
#[derive(Debug, Clone, Copy)]
pub struct VerdictContext<'a> {
    /// Policies (tools, ladder ceiling, agent score caps).
    pub policies: &'a PolicySet,
    /// Notebook levels, agent standings and elevations from the chain.
    pub controls: &'a ControlState,
    /// Now, unix seconds (elevation expiry).
    pub now: f64,
}

/// An agent's ring at `now`: from its effective score (claimed, capped by policy), Ring 3 when
/// quarantined or killed, and the principal's unexpired elevation when it is more privileged.
#[must_use]
pub fn agent_ring(ctx: &VerdictContext<'_>, agent: &str, claimed: f64, has_consensus: bool) -> (Ring, f64) {
    let eff = ctx.policies.effective_score(agent, claimed);
    if ctx.controls.standing(agent) != AgentStanding::Active {
        return (Ring::Sandbox, eff);
    }
    let base = rings::from_eff_score(eff, has_consensus);
    let elevated = ctx.controls.active_elevation(agent, ctx.now).and_then(|e| Ring::from_value(i64::from(e.ring)));
    (elevated.filter(|e| e.value() < base.value()).unwrap_or(base), eff)
}

/// The ring an agent's packet puts it in: from the packet's governance score (0 when absent).
#[must_use]
pub fn packet_ring(ctx: &VerdictContext<'_>, packet: &Packet, governance: Option<&Governance>) -> Ring {
    let (claimed, consensus) = governance.map_or((0.0, false), |g| (g.eff_score.unwrap_or(0.0), g.has_consensus));
    agent_ring(ctx, &packet.agent, claimed, consensus).0
}

/// Evaluates every model that applies to `packet` and composes them. `tg` is the Trust
/// Graduation gate's decision (computed by the caller with the agent's standing), `rate` the rate
/// limiter's answer for this packet's arrival (`None` when not tracked), `preconditions` the
/// re-check of the contract's preconditions against the world now (`None` when not observed).
#[must_use]
pub fn evaluate(
    ctx: &VerdictContext<'_>,
    packet: &Packet,
    tg: &Decision,
    rate: Option<&RateOutcome>,
    preconditions: Option<&Revalidation>,
) -> PacketVerdict {
    let standing = ctx.controls.standing(&packet.agent);
    let mut tg_verdict = trust_graduation(tg);
    if tg.status == DecisionState::Blocked {
        tg_verdict = tg_verdict.with_remedy(gate_remedy(packet, standing, tg));
    }
    let mut models = vec![tg_verdict];
    let governance = Governance::of_packet(packet);
    if let Some(r) = rate {
        models.push(if r.allowed {
            ModelVerdict::new(
                Model::RateLimit,
                "within",
                DecisionState::Allowed,
                format!("{:.1} of {} tokens left at ring {}", r.tokens, r.capacity, r.ring.value()),
            )
        } else {
            ModelVerdict::new(
                Model::RateLimit,
                "exceeded",
                DecisionState::Blocked,
                format!("{} exceeded the rate limit for ring {} (burst {})", packet.agent, r.ring.value(), r.capacity),
            )
            .with_remedy(format!("{} must propose again once its rate limit has refilled", packet.agent))
        });
    }
    let Some(g) = governance else { return compose(models) };
    if let Some(e) = &g.error {
        models.push(ModelVerdict::malformed(Model::TrustGraduation, "governance", e));
    }
    // A tool call is classified again from its exact input and the principal's tool
    // table: what the packet declares about itself is never what gates it.
    let mut wanted_preconditions = Vec::new();
    let call = g.tool.as_deref().and_then(|t| {
        let c = crate::calls::classify_proposed(ctx.policies, packet.proposed_action(), t)?;
        let (input, _) = crate::calls::call_of_packet(packet.proposed_action(), t)?;
        let cwd = packet.proposed_action().get("cwd").and_then(Value::as_str);
        wanted_preconditions = crate::calls::action_preconditions(&c.preconditions, input, cwd);
        Some(c)
    });
    if let Some(c) = &call {
        let declared = ctx.policies.normalize(&packet.action_class);
        if declared != c.class {
            models.push(ModelVerdict::malformed(
                Model::TrustGraduation,
                "action_class",
                format!("the tool table makes this call {} ({}), the packet says {declared}", c.class, c.rule),
            ));
        }
        // The preconditions the table declares for this call must all be in the contract, to be
        // re-checked: a packet cannot drop the checks the principal asked for.
        let carried = match &g.contract {
            Some(Ok(contract)) => contract.preconditions.as_slice(),
            _ => &[],
        };
        if let Some(missing) = wanted_preconditions.iter().find(|w| {
            !carried
                .iter()
                .any(|p| p.must_revalidate_at_execution && p.check_id == w.check_id && p.parameters == w.parameters)
        }) {
            models.push(ModelVerdict::malformed(
                Model::Ladder,
                "governance.contract.preconditions",
                format!(
                    "the tool table asks {} for this call ({}); the packet's contract does not carry it",
                    missing.check_id, missing.parameters
                ),
            ));
        }
    }
    if g.tool.is_some() || g.notebook.is_some() {
        let tier = match &call {
            Some(c) => c.tier,
            None => g.tool.as_deref().and_then(|t| ctx.policies.tool(t)).map(|t| t.tier),
        };
        let trust = g.notebook.as_deref().map(|n| ctx.controls.notebook_trust(n));
        models.push(tiers(g.tool.as_deref(), tier, g.notebook.as_deref(), trust));
    }
    match &g.action {
        None => {}
        Some(Err(e)) => models.push(ModelVerdict::malformed(
            Model::Rings,
            &descriptor_field(&e.to_string()),
            format!("invalid action descriptor: {e}"),
        )),
        Some(Ok(action)) => {
            let (ring, eff) = agent_ring(ctx, &packet.agent, g.eff_score.unwrap_or(0.0), g.has_consensus);
            let check = rings::check(ring, action, eff, g.has_consensus, false);
            models.push(if standing == AgentStanding::Active || check.allowed {
                rings_verdict(&check)
            } else {
                // A quarantined or killed agent is in Ring 3: no signature sponsors it.
                ModelVerdict::new(Model::Rings, "denied", DecisionState::Blocked, check.reason.clone())
                    .with_remedy(format!("release {} ({}) first", packet.agent, standing.as_str()))
            });
        }
    }
    match &g.contract {
        None => {}
        Some(Err(e)) => models.push(ModelVerdict::malformed(
            Model::Ladder,
            "governance.contract",
            format!("invalid action contract: {e}"),
        )),
        Some(Ok(contract)) => {
            let tool = g.tool.as_deref().unwrap_or("");
            // A registered tool without a floor has none; an unregistered one gets Lodestar's
            // conservative defaults (L3).
            let floor = call
                .as_ref()
                .map(|c| TrustLevel::new(c.level).unwrap_or(TrustLevel::L5))
                .or_else(|| ctx.policies.tool(tool).map(|t| TrustLevel::new(t.floor()).unwrap_or(TrustLevel::L0)))
                // An unregistered tool whose floor a request raised (never below L3).
                .or_else(|| ctx.policies.unregistered_floor(tool).and_then(TrustLevel::new));
            models.push(match ladder::auto_approve_policy(i64::from(ctx.policies.ladder_ceiling), "warrant") {
                Ok(policy) => ladder_verdict(&ladder::gate_with_tool_floor(&policy, tool, contract, floor), contract),
                Err(e) => {
                    ModelVerdict::new(Model::Ladder, "invalid", DecisionState::Blocked, format!("fail closed: {e}"))
                        .with_remedy("fix `ladder_ceiling` in policy.toml")
                }
            });
            if let Some(rv) = preconditions {
                models.push(preconditions_verdict(rv));
            }
        }
    }
    compose(models)
}

/// What would let a held packet of a class that must first earn evidence (Trust Graduation's
/// `insufficient_evidence`) run on its own, in one line: how many more approved calls graduate
/// its class (`EvidenceSummary::approvals_to_reach`), and which other model still holds it, if
/// any. `None` when the gate does not hold it for evidence.
#[must_use]
pub fn graduation_hint(v: &PacketVerdict, tg: &Decision, class: &str) -> Option<String> {
    if tg.mode != crate::graduation::gate::Mode::InsufficientEvidence {
        return None;
    }
    let needed = tg.graduation_path.as_ref().map_or(1, |g| g.needed);
    let Some(n) = tg.summary.approvals_to_reach(needed) else {
        return Some(format!(
            "`{class}` cannot graduate on approvals while its evidence holds a refusal, a trust issue or heavy edits"
        ));
    };
    let others: Vec<&str> = v
        .models
        .iter()
        .filter(|m| {
            m.model != Model::TrustGraduation && strictness(m.state) > strictness(DecisionState::AllowedWithConstraints)
        })
        .map(|m| m.model.as_str())
        .collect();
    let calls = if n == 1 { "call" } else { "calls" };
    Some(if others.is_empty() {
        format!("{n} more approved {calls} of `{class}` and it runs on its own")
    } else {
        format!("{n} more approved {calls} of `{class}` graduate it; {} still hold(s) it", others.join(", "))
    })
}

/// The precondition re-check as a model verdict: all hold → allowed; any changed or
/// unobservable → blocked (`precondition_failed`).
#[must_use]
pub fn preconditions_verdict(rv: &Revalidation) -> ModelVerdict {
    match &rv.failure {
        None => ModelVerdict::new(
            Model::Preconditions,
            "hold",
            DecisionState::Allowed,
            format!("{} precondition(s) hold", rv.checks.len()),
        ),
        // Observed, and different: the world moved.
        Some(f) if f.observed.is_some() => {
            ModelVerdict::new(Model::Preconditions, "precondition_failed", DecisionState::Blocked, f.detail.clone())
                .with_remedy("the world changed since the agent proposed: it must propose again against it")
        }
        // Not observable (outside the roots, a symlink, over the budget, an unknown check).
        Some(f) => {
            ModelVerdict::new(Model::Preconditions, "precondition_failed", DecisionState::Blocked, f.detail.clone())
                .with_remedy(
                    "warrant could not observe it: the principal declares [preconditions] roots covering the \
                     path in policy.toml, or the agent proposes a path below them",
                )
        }
    }
}

/// The dotted field an action descriptor's error names: `governance.action.<field>` when the
/// message names one in backticks or quotes, else `governance.action`.
fn descriptor_field(error: &str) -> String {
    let named = ["`", "'", "\""].iter().find_map(|q| {
        let start = error.find(q)? + q.len();
        let len = error[start..].find(q)?;
        let name = &error[start..start + len];
        name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_').then_some(name)
    });
    named.map_or_else(|| "governance.action".to_owned(), |n| format!("governance.action.{n}"))
}

/// The rate limiter's answer for one packet's arrival.
#[derive(Debug, Clone, PartialEq)]
pub struct RateOutcome {
    /// Within the bucket.
    pub allowed: bool,
    /// The ring whose limits applied.
    pub ring: Ring,
    /// Tokens left after this arrival.
    pub tokens: f64,
    /// The bucket's capacity (the ring's burst).
    pub capacity: f64,
}

impl PacketVerdict {
    /// The verdict as JSON: `{"state", "decisive", "models": [{"model", "verdict", "state", "reason"}]}`.
    #[must_use]
    pub fn to_json(&self) -> Value {
        let mut out = json!({
            "state": self.state.as_str(),
            "decisive": self.decisive.as_str(),
            "models": self.models.iter().map(|m| {
                let mut o = json!({
                    "model": m.model.as_str(), "verdict": m.verdict, "state": m.state.as_str(), "reason": m.reason,
                });
                if let (Some(s), Value::Object(o)) = (&m.stands_in_for, &mut o) {
                    o.insert("stands_in_for".into(), json!(s));
                }
                if let (Some(r), Value::Object(o)) = (&m.remedy, &mut o) {
                    o.insert("remedy".into(), json!(r));
                }
                o
            }).collect::<Vec<_>>(),
        });
        if let (Some((why, remedy)), Value::Object(o)) = (self.why_not_approvable(), &mut out) {
            o.insert("not_approvable".into(), json!({"reason": why, "remedy": remedy}));
        }
        let stands = self.stands_in_for();
        if let (false, Value::Object(o)) = (stands.is_empty(), &mut out) {
            o.insert("stands_in_for".into(), json!(stands));
        }
        out
    }
}

/// The Trust Graduation gate's decision on a packet: its class, its context (or, for a packet
/// without one, `{requestedBy, requestedAction}`), no presented approval, the agent's standing
/// from the principal's controls, and the chain's evidence (indexed once with
/// [`EvidenceIndex::new`] for all the packets assessed against it).
#[must_use]
pub fn packet_gate<'a>(
    ctx: &VerdictContext<'a>,
    packet: &'a Packet,
    evidence: &'a EvidenceIndex,
    workspace: &'a str,
    chain_intact: bool,
) -> Decision<'a> {
    let now = time::OffsetDateTime::from_unix_timestamp(ctx.now as i64).unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    let agent = ctx.controls.standing(&packet.agent);
    if packet.context().is_object() {
        let req = GateRequest {
            action_class: &packet.action_class,
            context: packet.context(),
            approval: None,
            evidence,
            workspace,
            now,
            agent,
            chain_intact,
        };
        return can_execute(ctx.policies, &req);
    }
    let context = json!({"requestedBy": packet.agent, "requestedAction": packet.proposed_action()});
    let req = GateRequest {
        action_class: &packet.action_class,
        context: &context,
        approval: None,
        evidence,
        workspace,
        now,
        agent,
        chain_intact,
    };
    can_execute(ctx.policies, &req).into_owned()
}
