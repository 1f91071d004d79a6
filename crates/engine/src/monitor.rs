//! Live monitoring of agents: per-agent rings, scores, counts, activity and rate-limit buckets,
//! computed as a pure function of the spool snapshot, the chain's decisions and controls, and the
//! time.
//!
//! Rate limits are replayed: every packet file in the spool is an arrival at its file's
//! modification time (the rename into `packets/`), fed in time order into one token bucket per
//! agent at the agent's ring (agent-hypervisor.md §2.8, session `spool`). A packet that arrived
//! with the bucket empty is over the limit, and its verdict is `blocked`. Because the replay
//! depends only on the files, the console and the CLI agree on it.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use warrant_protocol::graduation::gate::AgentStanding;
use warrant_protocol::packet::Receipt;
use warrant_protocol::rings::{RateLimiter, Ring};
use warrant_protocol::verdict::{Governance, RateOutcome, VerdictContext, packet_ring};
use warrant_store::spool::PacketEntry;

/// A map keyed by packet id, hashed with foldhash (seeded per map): the console rebuilds these
/// for every pending packet on every assessment, where SipHash was a tenth of its time.
pub type ByPacket<V> = HashMap<String, V, foldhash::fast::RandomState>;

/// An empty [`ByPacket`] with room for `n` packets.
fn by_packet<V>(n: usize) -> ByPacket<V> {
    HashMap::with_capacity_and_hasher(n, foldhash::fast::RandomState::default())
}

/// The rate limiter's session for spool arrivals.
pub const RATE_SESSION: &str = "spool";
/// Minutes of activity kept per agent (one bucket per minute, oldest first).
pub const ACTIVITY_MINUTES: usize = 30;

/// One agent as the console's agents view shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentSummary {
    /// The agent id.
    pub agent: String,
    /// Its ring now (score, standing and elevation applied).
    pub ring: Ring,
    /// Its effective score: the last score its packets claimed, capped by policy (0 when none).
    pub eff_score: f64,
    /// Active, quarantined or killed.
    pub standing: AgentStanding,
    /// Why it is quarantined or killed.
    pub standing_reason: Option<String>,
    /// Packets without a decision.
    pub pending: usize,
    /// Packets with a decision in the chain.
    pub decided: usize,
    /// Receipt files naming it.
    pub receipts: usize,
    /// Packets and receipts per minute over the last [`ACTIVITY_MINUTES`] minutes, oldest first.
    pub activity: [u64; ACTIVITY_MINUTES],
    /// The ring of the principal's elevation in force, and the seconds it has left.
    pub elevation: Option<(u8, f64)>,
    /// Rate-limit tokens left now, and the bucket's capacity.
    pub tokens: f64,
    /// The bucket's capacity.
    pub capacity: f64,
    /// Arrivals over the rate limit.
    pub rate_rejections: u64,
    /// The latest arrival, unix seconds.
    pub last_seen: f64,
    /// Its tool calls governed by a hook or the gateway, if it made any.
    pub calls: Option<ToolCalls>,
}

/// An agent's tool calls governed by a hook or the gateway: who it is (host, sessions,
/// workspace), how its calls were answered, and its last call.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolCalls {
    /// The host of its last call (`claude-code`, `codex`, `mcp-gateway`).
    pub host: String,
    /// Distinct sessions seen.
    pub sessions: usize,
    /// The workspace directory of its last call, when the host gave one.
    pub workspace: Option<String>,
    /// Calls that ran: approved by the principal, or allowed by the gate on its own.
    pub allowed: u64,
    /// Calls waiting for the principal.
    pub held: u64,
    /// Calls refused: by the principal, blocked by the gate, or expired undecided.
    pub refused: u64,
    /// Calls in the last minute.
    pub last_minute: u64,
    /// The summary of its last call.
    pub last_call: String,
    /// When its last call arrived, unix seconds.
    pub last_at: f64,
}

/// Whether `p` is a tool call the gate lets run with no prompt: a hook or the gateway already
/// ran it, so nothing about it waits for the principal (the console's Pending pane leaves it out;
/// the Agents view counts it). Only `allowed`: a call `allowed_with_constraints` is held for the
/// principal, who alone can check the constraints on a tool call (`warrant_engine::govern`).
///
/// Read from [`Assessment::ran_on_its_own`], which the assessment fills once: a console asks this
/// of every packet on every scan, and a spool rarely holds any such packet (an empty set answers
/// without hashing the id).
#[must_use]
pub fn ran_on_its_own(a: &Assessment, p: &warrant_protocol::packet::Packet) -> bool {
    a.ran_on_its_own.contains(p.id.as_str())
}

/// Whether the composed verdict `v` of `p` lets the tool call `p` run with no prompt
/// ([`ran_on_its_own`]'s test, made once per assessment).
fn runs_on_its_own(v: &warrant_protocol::verdict::PacketVerdict, p: &warrant_protocol::packet::Packet) -> bool {
    v.state == warrant_protocol::packet::DecisionState::Allowed && warrant_protocol::calls::is_call_packet(p)
}

/// Counts each agent's tool calls into its summary, from the verdicts just computed, and the
/// calls that ran with no packet from the receipts that record them ([`count_unpacketed`]).
fn count_calls(
    a: &mut Assessment,
    packets: &[PacketEntry],
    receipts: &[Arc<Receipt>],
    decisions: &warrant_store::spool::Decisions,
    now: f64,
) {
    count_packeted(a, packets, decisions, now);
    count_unpacketed(a, packets, receipts, now);
}

/// Counts the calls that ran with no packet: the receipts a hook or the gateway wrote with a
/// `tool_call` (`{"host", "tool", "calls"}`) that name no packet in the spool, each standing for
/// `calls` calls that ran (the gateway writes one a second for all the calls of a tool). The
/// agent's own word, as every receipt file: shown, never the gate's evidence.
fn count_unpacketed(a: &mut Assessment, packets: &[PacketEntry], receipts: &[Arc<Receipt>], now: f64) {
    let ids: std::collections::HashSet<&str> = packets.iter().map(|e| e.packet.id.as_str()).collect();
    for r in receipts {
        let Some(call) = r.raw.get("tool_call").filter(|c| c.is_object()) else { continue };
        if r.packet_id.as_deref().is_some_and(|p| ids.contains(p)) {
            continue;
        }
        let Some(agent) = r.agent.as_deref() else { continue };
        let Some(summary) = a.monitor.agents.get_mut(agent) else { continue };
        let n = call.get("calls").and_then(serde_json::Value::as_u64).unwrap_or(1).clamp(1, 1_000_000_000);
        let at = warrant_protocol::clock::unix_seconds(&r.created_at).unwrap_or(0.0).min(now);
        let c = summary.calls.get_or_insert_with(ToolCalls::default);
        c.allowed += n;
        if now - at < 60.0 {
            c.last_minute += n;
        }
        if at >= c.last_at {
            let text = |k: &str| {
                call.get(k).and_then(serde_json::Value::as_str).map(|s| warrant_protocol::text::inert(s, 200))
            };
            c.host = text("host").unwrap_or_default();
            let tool = text("tool").unwrap_or_default();
            c.last_call = if n == 1 { tool } else { format!("{tool} ×{n} (no packet)") };
            c.last_at = at;
        }
    }
}

/// Counts each agent's call packets into its summary, from the verdicts just computed.
fn count_packeted(a: &mut Assessment, packets: &[PacketEntry], decisions: &warrant_store::spool::Decisions, now: f64) {
    use warrant_protocol::packet::DecisionState as S;
    let mut sessions: HashMap<&str, std::collections::HashSet<&str>> = HashMap::new();
    for e in packets.iter().filter(|e| warrant_protocol::calls::is_call_packet(&e.packet)) {
        let p = &e.packet;
        if a.monitor.impersonations.contains_key(&p.id) {
            continue;
        }
        let answer = match decisions.get(&p.id) {
            Some(d) if d.verdict == warrant_protocol::decision::Verdict::Approve => S::Allowed,
            Some(_) => S::Blocked,
            None => {
                let expired =
                    p.expires_at.as_deref().and_then(warrant_protocol::clock::unix_seconds).is_some_and(|t| t <= now);
                match a.verdicts.get(&p.id).map(|v| v.state) {
                    // It ran on its own (a packet expires with the wait of its call, whatever the
                    // answer): not a refusal once that time has passed.
                    Some(S::Allowed) => S::Allowed,
                    _ if expired => S::Blocked,
                    Some(S::Blocked) => S::Blocked,
                    _ => S::ReviewRequired,
                }
            }
        };
        let Some(summary) = a.monitor.agents.get_mut(p.agent.as_str()) else { continue };
        let c = summary.calls.get_or_insert_with(ToolCalls::default);
        match answer {
            S::Allowed => c.allowed += 1,
            S::Blocked => c.refused += 1,
            _ => c.held += 1,
        }
        let proposed = p.proposed_action();
        if let Some(s) = proposed.get("session").and_then(serde_json::Value::as_str) {
            let seen = sessions.entry(p.agent.as_str()).or_default();
            seen.insert(s);
            c.sessions = seen.len();
        }
        c.last_minute += u64::from(now - e.arrived < 60.0);
        // Host, workspace and summary are the latest call's, whatever the listing order.
        if e.arrived >= c.last_at {
            c.host = proposed.get("host").and_then(serde_json::Value::as_str).unwrap_or("").to_owned();
            if let Some(d) = proposed.get("cwd").and_then(serde_json::Value::as_str) {
                c.workspace = Some(d.to_owned());
            }
            c.last_call.clone_from(&p.summary);
            c.last_at = e.arrived;
        }
    }
}

/// What monitoring computed: each packet's rate outcome and each agent's summary.
#[derive(Debug, Clone, Default)]
pub struct Monitor {
    /// Rate outcome of each packet, by packet id.
    pub rates: ByPacket<RateOutcome>,
    /// Agents by id.
    pub agents: BTreeMap<String, AgentSummary>,
    /// Packets whose file's owner may not speak for the agent they claim, by packet id, with the
    /// reason ([`speakers`]): never approvable, and not counted for that agent.
    pub impersonations: ByPacket<String>,
    /// Packets held because their publisher also speaks for an agent the principal quarantined
    /// or killed (a control on an agent holds every packet its publisher may speak for, under
    /// any agent id), by packet id, with the reason; never approvable while the control stands.
    /// The spool owner's own packets are never held so ([`warrant_protocol::graduation::PolicySet::spool_owner`]).
    pub held_for_publisher: ByPacket<String>,
}

/// Who may speak for an agent, and on whose word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Speakers<'a> {
    /// The users `policy.toml` names (`[agents."<id>"] users`), resolved to uids.
    Policy(&'a [u32]),
    /// The uid the chain recorded with the first approval of one of its packets.
    Chain(u32),
    /// Nothing recorded yet: the owner of its earliest-arriving packet in the spool.
    FirstSeen(u32),
}

impl Speakers<'_> {
    /// Whether `uid` may speak for the agent.
    #[must_use]
    pub fn allows(&self, uid: u32) -> bool {
        match self {
            Speakers::Policy(uids) => uids.contains(&uid),
            Speakers::Chain(u) | Speakers::FirstSeen(u) => *u == uid,
        }
    }

    /// Why `uid` may not speak for `agent`, in a sentence.
    #[must_use]
    pub fn refusal(&self, agent: &str, uid: u32) -> String {
        let whom = match self {
            Speakers::Policy(uids) => format!("policy.toml lets only uid(s) {uids:?} speak for it"),
            Speakers::Chain(u) => format!("the chain binds it to uid {u} (its first approved or controlled packet)"),
            Speakers::FirstSeen(u) => format!("uid {u} published it first"),
        };
        format!("published by uid {uid}, which may not speak for {agent}: {whom}")
    }
}

/// Who may speak for `agent` ([`Speakers`]): the policy's users, else the chain's binding, else
/// `first_owner`, the owner of the agent's earliest-arriving packet.
#[must_use]
pub fn speakers<'a>(ctx: &VerdictContext<'a>, agent: &str, first_owner: u32) -> Speakers<'a> {
    if let Some(uids) = ctx.policies.agent_uids(agent) {
        return Speakers::Policy(uids);
    }
    ctx.controls.publishers.get(agent).map_or(Speakers::FirstSeen(first_owner), |u| Speakers::Chain(*u))
}

/// The monitor as the store's [`warrant_store::spool::AgentScores`]: an agent's effective score is
/// the one [`observe`] gives it (0 for an agent with no packet). Pass `&Scores` to
/// [`warrant_store::spool::append_control`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Scores;

impl warrant_store::spool::AgentScores for Scores {
    fn effective_score(
        &self,
        ctx: &VerdictContext<'_>,
        snap: &warrant_store::spool::Snapshot,
        view: &warrant_store::spool::ChainView,
        agent: &str,
    ) -> f64 {
        observe(ctx, &snap.packets, &snap.receipts, &view.decisions).agents.get(agent).map_or(0.0, |a| a.eff_score)
    }
}

/// Replays arrivals and summarises agents (see the module docs). `now` is unix seconds.
#[must_use]
pub fn observe(
    ctx: &VerdictContext<'_>,
    packets: &[PacketEntry],
    receipts: &[Arc<Receipt>],
    decisions: &warrant_store::spool::Decisions,
) -> Monitor {
    let mut order: Vec<&PacketEntry> = packets.iter().collect();
    order.sort_by(|a, b| a.arrived.total_cmp(&b.arrived).then_with(|| a.packet.id.cmp(&b.packet.id)));
    let mut limiter = RateLimiter::default();
    let mut mon = Monitor { rates: by_packet(packets.len()), ..Monitor::default() };
    // The owner of each agent's earliest arrival (the order is by arrival).
    let mut first_owner: HashMap<&str, u32> = HashMap::new();
    for e in &order {
        first_owner.entry(e.packet.agent.as_str()).or_insert(e.owner);
    }
    // The uids that speak for an agent under a control, and that agent: the policy's users,
    // else the chain's binding (an approval's or the control's own), else its first publisher.
    let mut controlled: HashMap<u32, (&str, AgentStanding)> = HashMap::new();
    for (agent, c) in ctx.controls.agents.iter().filter(|(_, c)| c.standing != AgentStanding::Active) {
        let uids: Vec<u32> = match ctx.policies.agent_uids(agent) {
            Some(uids) => uids.to_vec(),
            None => ctx
                .controls
                .publishers
                .get(agent)
                .or_else(|| first_owner.get(agent.as_str()))
                .copied()
                .into_iter()
                .collect(),
        };
        // Only where the principal's uid is known (the set was loaded for a spool): her own
        // user speaks for every agent, and a control on one of them holds only that one.
        let Some(principal) = ctx.policies.spool_owner() else { continue };
        for uid in uids.into_iter().filter(|u| *u != principal) {
            controlled.entry(uid).or_insert((agent.as_str(), c.standing));
        }
    }
    let minute_of = |t: f64| -> Option<usize> {
        let age = ((ctx.now - t) / 60.0).floor();
        (0.0..ACTIVITY_MINUTES as f64).contains(&age).then(|| ACTIVITY_MINUTES - 1 - age as usize)
    };
    for e in order {
        let p = &e.packet;
        let who = speakers(ctx, &p.agent, first_owner.get(p.agent.as_str()).copied().unwrap_or(e.owner));
        if !who.allows(e.owner) {
            // Not this agent's packet: it spends none of the agent's tokens and is not its.
            mon.impersonations.insert(p.id.clone(), who.refusal(&p.agent, e.owner));
            continue;
        }
        if let Some((agent, standing)) = controlled.get(&e.owner).filter(|(a, _)| *a != p.agent) {
            mon.held_for_publisher.insert(
                p.id.clone(),
                format!(
                    "published by {}, which also speaks for {agent}, {} by the principal",
                    warrant_store::spool::publisher_label(e.owner),
                    standing.as_str()
                ),
            );
        }
        let governance = Governance::of_packet(p);
        let ring = packet_ring(ctx, p, governance.as_deref());
        if !mon.agents.contains_key(p.agent.as_str()) {
            mon.agents.insert(p.agent.clone(), new_summary(ctx, &p.agent));
        }
        let Some(summary) = mon.agents.get_mut(p.agent.as_str()) else { continue };
        if let Some(score) = governance.as_ref().and_then(|g| g.eff_score) {
            summary.eff_score = ctx.policies.effective_score(&p.agent, score);
        }
        // The bucket is created at the agent's ring; a ring change replaces it (§2.8 update_ring).
        if limiter.bucket(&p.agent, RATE_SESSION, e.arrived).is_some_and(|(r, ..)| r != ring) {
            limiter.update_ring(&p.agent, RATE_SESSION, ring, e.arrived);
        }
        let allowed = limiter.try_check(&p.agent, RATE_SESSION, ring, 1.0, e.arrived);
        let (tokens, capacity) =
            limiter.bucket(&p.agent, RATE_SESSION, e.arrived).map_or((0.0, 0.0), |(_, t, c)| (t, c));
        mon.rates.insert(p.id.clone(), RateOutcome { allowed, ring, tokens, capacity });
        if decisions.contains_key(&p.id) {
            summary.decided += 1;
        } else {
            summary.pending += 1;
        }
        summary.rate_rejections += u64::from(!allowed);
        summary.last_seen = summary.last_seen.max(e.arrived);
        if let Some(m) = minute_of(e.arrived) {
            summary.activity[m] += 1;
        }
    }
    for r in receipts {
        let Some(agent) = r.agent.as_deref().filter(|a| warrant_protocol::packet::is_safe_id(a)) else { continue };
        let summary = mon.agents.entry(agent.to_owned()).or_insert_with(|| new_summary(ctx, agent));
        summary.receipts += 1;
        if let Some(t) = warrant_protocol::clock::unix_seconds(&r.created_at) {
            summary.last_seen = summary.last_seen.max(t.min(ctx.now));
            if let Some(m) = minute_of(t) {
                summary.activity[m] += 1;
            }
        }
    }
    for agent in ctx.controls.agents.keys() {
        mon.agents.entry(agent.clone()).or_insert_with(|| new_summary(ctx, agent));
    }
    for s in mon.agents.values_mut() {
        let (ring, _) = warrant_protocol::verdict::agent_ring(ctx, &s.agent, s.eff_score, false);
        s.ring = ring;
        let limits = limiter.limits(ring);
        match limiter.stats(&s.agent, RATE_SESSION, ctx.now) {
            Some(st) => (s.tokens, s.capacity) = (st.tokens_available, st.capacity),
            None => (s.tokens, s.capacity) = (limits.burst, limits.burst),
        }
    }
    mon
}

fn new_summary(ctx: &VerdictContext<'_>, agent: &str) -> AgentSummary {
    let control = ctx.controls.agents.get(agent);
    AgentSummary {
        agent: agent.to_owned(),
        ring: Ring::Sandbox,
        eff_score: 0.0,
        standing: ctx.controls.standing(agent),
        standing_reason: control.and_then(|c| c.reason.clone()),
        pending: 0,
        decided: 0,
        receipts: 0,
        activity: [0; ACTIVITY_MINUTES],
        elevation: ctx.controls.active_elevation(agent, ctx.now).map(|e| (e.ring, e.remaining_seconds(ctx.now))),
        tokens: 0.0,
        capacity: 0.0,
        rate_rejections: 0,
        last_seen: 0.0,
        calls: None,
    }
}

/// Everything the gates say about a spool at one moment: the evidence, the monitoring, and for
/// each pending packet the Trust Graduation decision, the precondition re-check and the composed
/// verdict. The console and the CLI both use it, so they agree.
#[derive(Debug, Clone, Default)]
pub struct Assessment {
    /// Evidence rows of the spool's receipt files: first those the agents wrote about
    /// themselves — shown apart, capped at the weakest provenance (`model_inferred`), never given
    /// to the gate — then those a pinned gateway signed (`Receipt::observed_by`: provenance
    /// `receipt`, each receipt once), which the gate counts with the chain's
    /// ([`warrant_store::spool::ChainEvidence`], the caller's: the principal's decisions and the receipts
    /// the principal recorded).
    pub evidence: Vec<warrant_protocol::graduation::evidence::EvidenceRow>,
    /// Rates and agent summaries.
    pub monitor: Monitor,
    /// The Trust Graduation gate's decision per pending packet, without the requested action and
    /// its exact-action binding ([`Decision::into_verdict_only`]: the packet holds the action,
    /// and 10,000 pending packets' two copies of it were 9 MB of the console's heap).
    ///
    /// [`Decision::into_verdict_only`]: warrant_protocol::graduation::gate::Decision::into_verdict_only
    pub gate: ByPacket<Arc<warrant_protocol::graduation::gate::Decision<'static>>>,
    /// The precondition re-check per pending packet that has a contract with any.
    pub preconditions: ByPacket<Arc<warrant_protocol::ladder::Revalidation>>,
    /// The composed verdict per pending packet.
    pub verdicts: ByPacket<Arc<warrant_protocol::verdict::PacketVerdict>>,
    /// The ids of the pending packets that are tool calls the gate lets run with no prompt
    /// ([`ran_on_its_own`]).
    pub ran_on_its_own: std::collections::HashSet<String, foldhash::fast::RandomState>,
    /// What the per-packet results were computed from, when [`assess_incremental`] made them
    /// (`None` from [`assess`]: nothing is reused from it).
    pub inputs: Option<AssessInputs>,
    /// Pending packets whose preconditions had no observation in the `revalidations` given, and
    /// were assessed failing them ("not observed yet", fail closed). Their placeholder re-checks
    /// are not kept in [`Assessment::preconditions`] (which holds observations only), so a caller
    /// that observes must assess again: a console shows them blocked only until it has.
    pub unobserved: usize,
}

/// What an [`Assessment`] was computed from, besides the packets and the evidence it keeps: what
/// [`assess_incremental`] compares before reusing a packet's results.
#[derive(Debug, Clone)]
pub struct AssessInputs {
    /// The policy set, held so its address stays its own while compared by pointer.
    policies: Arc<warrant_protocol::graduation::policy::PolicySet>,
    /// The principal's controls.
    controls: warrant_protocol::control::ControlState,
    /// Whether the chain verified.
    chain_intact: bool,
    /// The workspace the gate was asked about.
    workspace: String,
    /// `now`, unix seconds.
    now: f64,
    /// Each assessed packet, by id, as it was when assessed.
    packets: ByPacket<Arc<warrant_protocol::packet::Packet>>,
    /// The chain's evidence (compact: a few thousand distinct rows at most in practice).
    chain_evidence: warrant_store::spool::ChainEvidence,
}

/// The precondition re-checks of pending packets, by packet id, as the caller observed them
/// ([`crate::preconditions::observe_pending`]: the I/O happens there, off the console's UI thread
/// and outside the chain's lock). A packet whose contract has preconditions to re-check but that
/// has no entry here is assessed as failing them ("not observed yet"): fail closed.
pub type Revalidations = ByPacket<Arc<warrant_protocol::ladder::Revalidation>>;

/// The preconditions of `p`'s contract that must be re-checked at execution, if any (a packet
/// without a contract, or with an invalid one, has none here: the verdict refuses the latter).
#[must_use]
pub fn revalidated_preconditions(
    p: &warrant_protocol::packet::Packet,
) -> Option<Vec<warrant_protocol::ladder::ActionPrecondition>> {
    match &Governance::of_packet(p)?.contract {
        Some(Ok(c)) if c.preconditions.iter().any(|x| x.must_revalidate_at_execution) => Some(c.preconditions.clone()),
        _ => None,
    }
}

/// The re-check of preconditions nobody has observed yet: each fails closed.
fn not_observed(pre: &[warrant_protocol::ladder::ActionPrecondition]) -> warrant_protocol::ladder::Revalidation {
    warrant_protocol::ladder::revalidate(pre, |_| Err::<serde_json::Value, _>("not observed yet"))
}

/// Assesses every pending packet of `packets` (those without a decision in `decisions`), with
/// the chain's evidence and the spool's receipt files as the gate's evidence, and the
/// precondition re-checks the caller observed (`revalidations`). Pure: no I/O.
#[must_use]
#[allow(clippy::too_many_arguments)]
pub fn assess(
    ctx: &VerdictContext<'_>,
    packets: &[PacketEntry],
    receipts: &[Arc<Receipt>],
    decisions: &warrant_store::spool::Decisions,
    chain_evidence: &warrant_store::spool::ChainEvidence,
    revalidations: &Revalidations,
    chain_intact: bool,
    workspace: &str,
) -> Assessment {
    assess_with(
        Previous::Borrowed(None),
        None,
        ctx,
        packets,
        receipts,
        decisions,
        chain_evidence,
        revalidations,
        chain_intact,
        workspace,
    )
}

/// [`assess`], reusing `prev`'s results where they cannot differ: the same answer as [`assess`]
/// with the same arguments, cheaper when few packets are new. `prev` is borrowed or handed over
/// ([`Previous`]).
///
/// `policies` must be the policy set `ctx.policies` borrows (otherwise nothing is reused). A
/// pending packet's gate decision and verdict are taken from `prev` only when `prev` was computed
/// with the same policy set (same `Arc`), equal controls, the same `chain_intact` and workspace
/// and equal evidence rows (the chain's and the receipts', compared row by row), and the packet
/// has the same content (same `Arc` or `content_hash`) and an equal rate outcome from this
/// [`observe`]. Time: the gate reads the clock only as its decision time (whole seconds), so in
/// another second the decision is [`warrant_protocol::graduation::gate::Decision::retimed`]; the verdict
/// reads it only through the agent's active elevation, so it is reused only when the elevated
/// ring is the same at both times. Packets with preconditions to re-check take theirs from
/// `revalidations` every time, and their verdicts are recomputed.
/// The monitor (rates, agents) is always recomputed.
#[must_use]
#[allow(clippy::too_many_arguments)]
pub fn assess_incremental<'a>(
    prev: impl Into<Previous<'a>>,
    policies: &Arc<warrant_protocol::graduation::policy::PolicySet>,
    ctx: &VerdictContext<'_>,
    packets: &[PacketEntry],
    receipts: &[Arc<Receipt>],
    decisions: &warrant_store::spool::Decisions,
    chain_evidence: &warrant_store::spool::ChainEvidence,
    revalidations: &Revalidations,
    chain_intact: bool,
    workspace: &str,
) -> Assessment {
    let policies = Some(policies).filter(|p| std::ptr::eq(Arc::as_ptr(p), ctx.policies));
    assess_with(
        prev.into(),
        policies,
        ctx,
        packets,
        receipts,
        decisions,
        chain_evidence,
        revalidations,
        chain_intact,
        workspace,
    )
}

/// The previous assessment [`assess_incremental`] may reuse results from: borrowed
/// (`Option<&Assessment>`), or handed over (`Arc<Assessment>`): then, when none of its results
/// can be reused (the evidence, controls or policies changed), it is dropped before the new one
/// is made (unless another holder keeps it), so the two are not in memory together (the
/// console's 10,000 pending packets' results are tens of megabytes). The answer is the same.
pub enum Previous<'a> {
    /// Borrowed (`None`: there is none).
    Borrowed(Option<&'a Assessment>),
    /// Handed over.
    Owned(Arc<Assessment>),
}

impl<'a> From<Option<&'a Assessment>> for Previous<'a> {
    fn from(prev: Option<&'a Assessment>) -> Self {
        Previous::Borrowed(prev)
    }
}

impl From<Arc<Assessment>> for Previous<'_> {
    fn from(prev: Arc<Assessment>) -> Self {
        Previous::Owned(prev)
    }
}

#[allow(clippy::too_many_arguments)]
fn assess_with(
    prev: Previous<'_>,
    policies: Option<&Arc<warrant_protocol::graduation::policy::PolicySet>>,
    ctx: &VerdictContext<'_>,
    packets: &[PacketEntry],
    receipts: &[Arc<Receipt>],
    decisions: &warrant_store::spool::Decisions,
    chain_evidence: &warrant_store::spool::ChainEvidence,
    revalidations: &Revalidations,
    chain_intact: bool,
    workspace: &str,
) -> Assessment {
    use warrant_protocol::graduation::evidence::SourceType;
    // The receipts' evidence: the chain's is kept compactly by the caller. First the agents' own
    // word, then the receipts a pinned gateway signed (observed outcomes, each once): only those
    // reach the gate, with the chain's.
    let mut evidence: Vec<_> = receipts
        .iter()
        .filter(|r| r.observed_by.is_none())
        .filter_map(|r| {
            warrant_protocol::graduation::receipt::receipt_evidence(&r.raw, Some(SourceType::ModelInferred))
        })
        .collect();
    let own = evidence.len();
    evidence.extend(warrant_protocol::graduation::receipt::observed_evidence(
        receipts.iter().filter_map(|r| Some((&r.raw, r.observed_by.as_deref()?))),
    ));
    // Whether `prev`'s per-packet results were made from the same inputs (fail closed: any doubt
    // and everything is assessed again).
    let reusable = |b: &Assessment| {
        b.inputs.as_ref().is_some_and(|i| {
            policies.is_some_and(|p| Arc::ptr_eq(p, &i.policies))
                && i.chain_intact == chain_intact
                && i.workspace == workspace
                && i.now.is_finite()
                && ctx.now.is_finite()
                && i.controls == *ctx.controls
                && b.evidence == evidence
                && i.chain_evidence.same_rows(chain_evidence)
        })
    };
    let kept: Option<Arc<Assessment>>;
    let base = match prev {
        Previous::Borrowed(prev) => prev.filter(|b| reusable(b)),
        Previous::Owned(prev) => {
            // Not reusable: released here, before the new results are made.
            kept = reusable(&prev).then_some(prev);
            kept.as_deref()
        }
    };
    let mut index = None;
    let monitor = observe(ctx, packets, receipts, decisions);
    let n = packets.len();
    let mut a = Assessment { monitor, gate: by_packet(n), verdicts: by_packet(n), ..Assessment::default() };
    let mut assessed = by_packet(n);
    let now_s = ctx.now as i64;
    for e in packets.iter().filter(|e| !decisions.contains_key(&e.packet.id)) {
        let p = &e.packet;
        let rate = a.monitor.rates.get(&p.id);
        let observed = revalidations.get(&p.id);
        let rv = revalidated_preconditions(p).map(|pre| match observed {
            Some(o) => Arc::clone(o),
            None => {
                a.unobserved += 1;
                Arc::new(not_observed(&pre))
            }
        });
        let reused = base.and_then(|b| {
            let i = b.inputs.as_ref()?;
            let old = i.packets.get(&p.id)?;
            if !(Arc::ptr_eq(old, p) || old.content_hash == p.content_hash)
                || b.monitor.rates.get(&p.id) != rate
                || b.monitor.impersonations.get(&p.id) != a.monitor.impersonations.get(&p.id)
                || b.monitor.held_for_publisher.get(&p.id) != a.monitor.held_for_publisher.get(&p.id)
            {
                return None;
            }
            let gate = b.gate.get(&p.id)?;
            let gate = if i.now as i64 == now_s {
                Arc::clone(gate)
            } else {
                let t = time::OffsetDateTime::from_unix_timestamp(now_s).unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
                Arc::new(gate.retimed(t)?)
            };
            let ring = |t: f64| ctx.controls.active_elevation(&p.agent, t).map(|x| x.ring);
            let verdict =
                (rv.is_none() && ring(i.now) == ring(ctx.now)).then(|| b.verdicts.get(&p.id).cloned()).flatten();
            Some((gate, verdict))
        });
        let (gate, verdict) = match reused {
            Some((gate, Some(verdict))) => (gate, verdict),
            Some((gate, None)) => {
                let verdict = warrant_protocol::verdict::evaluate(ctx, p, &gate, rate, rv.as_deref());
                (gate, Arc::new(verdict))
            }
            None => {
                let index = index.get_or_insert_with(|| {
                    // The chain's evidence (the principal's decisions and the receipts the
                    // principal recorded) and the receipts a pinned gateway observed. What an
                    // agent writes about itself never graduates it.
                    warrant_protocol::graduation::evidence::EvidenceIndex::of_runs(
                        chain_evidence.runs().chain(evidence[own..].iter().map(|r| (r, 1))),
                    )
                });
                let tg = warrant_protocol::verdict::packet_gate(ctx, p, index, workspace, chain_intact);
                let verdict = warrant_protocol::verdict::evaluate(ctx, p, &tg, rate, rv.as_deref());
                (Arc::new(tg.into_verdict_only()), Arc::new(verdict))
            }
        };
        // Who published it: another user than the agent's (an impersonation), or the publisher
        // of an agent under a control. Added once (a reused verdict may carry it already).
        let identity =
            [("impersonation", &a.monitor.impersonations), ("publisher_controlled", &a.monitor.held_for_publisher)]
                .into_iter()
                .find_map(|(label, by)| by.get(&p.id).map(|why| (label, why)))
                .filter(|_| !verdict.models.iter().any(|m| m.model == warrant_protocol::verdict::Model::Identity));
        let verdict = match identity {
            Some((label, why)) => Arc::new((*verdict).clone().with(warrant_protocol::verdict::ModelVerdict::new(
                warrant_protocol::verdict::Model::Identity,
                label,
                warrant_protocol::packet::DecisionState::Blocked,
                why.clone(),
            ))),
            None => verdict,
        };
        a.gate.insert(p.id.clone(), gate);
        if let Some(rv) = rv.filter(|_| observed.is_some()) {
            a.preconditions.insert(p.id.clone(), rv);
        }
        if runs_on_its_own(&verdict, p) {
            a.ran_on_its_own.insert(p.id.clone());
        }
        a.verdicts.insert(p.id.clone(), verdict);
        assessed.insert(p.id.clone(), Arc::clone(p));
    }
    drop(index);
    count_calls(&mut a, packets, receipts, decisions, ctx.now);
    a.inputs = policies.map(|p| AssessInputs {
        policies: Arc::clone(p),
        controls: ctx.controls.clone(),
        chain_intact,
        workspace: workspace.to_owned(),
        now: ctx.now,
        packets: assessed,
        chain_evidence: chain_evidence.clone(),
    });
    a.evidence = evidence;
    a
}
