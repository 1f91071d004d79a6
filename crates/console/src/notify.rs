//! Telling the principal that a packet needs them, and the class timeouts the console enforces.
//!
//! [`super::app::update`] finds, after each new assessment made with the chain read, the packets
//! that need the principal (undecided, and not a tool call the gate let run on its own: what the
//! Pending list shows) and were not seen before (`effects`); the first such assessment after
//! start-up only marks what is already there as seen. It returns [`Effect::Notify`] with them,
//! and [`Effect::Title`] when the pending count changed. A packet past its class's
//! `refuse_after` is shown as timed out ([`State::timed_out`]); nothing is signed for it unless
//! its class says `sign_refusal = true`: then `timeout_effects` returns
//! [`Effect::RefuseTimedOut`] for it, once per packet and one at a time, and the runner signs the
//! refusal as a *system decision* ([`warrant_store::spool::decide_system`]), which decides the packet but
//! is never evidence. The runner performs the effects
//! (`console::Runner`): the bell, the title (warrant's own text: [`title`]), and the principal's
//! `notify_command` ([`spawn`]), whose environment carries the packet's id, class, agent and
//! summary made inert ([`Notice::env`]).

use super::app::{ChainState, Effect, Mode, State};
use std::collections::HashSet;
use std::sync::Arc;
use warrant_protocol::graduation::policy::ClassTimeout;
use warrant_protocol::packet::Packet;

/// The most characters of the summary the notify command gets (before [`warrant_protocol::text::inert`]).
pub const MAX_SUMMARY: usize = 200;
/// The most characters of the id, class and agent the notify command gets.
pub const MAX_FIELD: usize = 128;
/// The most notify commands one batch of new packets starts, and the most that run at once (the
/// rest are logged; `WARRANT_PENDING` counts every pending packet).
pub const MAX_COMMANDS: usize = 5;

/// A packet that needs the principal, as [`Effect::Notify`] carries it: the agent's own words,
/// made inert only where they leave warrant ([`Notice::env`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// The packet id.
    pub id: String,
    /// The action class, as the packet names it.
    pub class: String,
    /// The agent.
    pub agent: String,
    /// The packet's summary.
    pub summary: String,
}

impl Notice {
    /// The notice for `p`.
    #[must_use]
    pub fn of(p: &Packet) -> Self {
        Self { id: p.id.clone(), class: p.action_class.clone(), agent: p.agent.clone(), summary: p.summary.clone() }
    }

    /// The environment of the notify command: `WARRANT_PACKET_ID`, `WARRANT_CLASS`,
    /// `WARRANT_AGENT`, `WARRANT_SUMMARY` (each through [`warrant_protocol::text::inert`], so no control,
    /// escape, bidi or invisible character reaches the command, and cut to [`MAX_FIELD`] or
    /// [`MAX_SUMMARY`] characters) and `WARRANT_PENDING` (the pending count).
    #[must_use]
    pub fn env(&self, pending: usize) -> [(&'static str, String); 5] {
        use warrant_protocol::text::inert;
        [
            ("WARRANT_PACKET_ID", inert(&self.id, MAX_FIELD)),
            ("WARRANT_CLASS", inert(&self.class, MAX_FIELD)),
            ("WARRANT_AGENT", inert(&self.agent, MAX_FIELD)),
            ("WARRANT_SUMMARY", inert(&self.summary, MAX_SUMMARY)),
            ("WARRANT_PENDING", pending.to_string()),
        ]
    }
}

/// The terminal's title: warrant's own words and a count, never an agent's text.
#[must_use]
pub fn title(pending: usize) -> String {
    format!("warrant — {pending} pending")
}

/// Starts the principal's notify command (`[notify] command`, a program and its arguments; no
/// shell unless the program is one) for `notice`, with [`Notice::env`] added to warrant's own
/// environment, standard input, output and error on `/dev/null` (the console owns the
/// terminal). The caller reaps the child ([`std::process::Child::wait`]).
///
/// # Errors
/// An empty command, or the program could not be started.
pub fn spawn(command: &[String], notice: &Notice, pending: usize) -> std::io::Result<std::process::Child> {
    let (program, args) = command
        .split_first()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "empty [notify] command"))?;
    std::process::Command::new(program)
        .args(args)
        .envs(notice.env(pending))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
}

/// What the console has told the principal about, kept in the [`State`].
#[derive(Debug, Clone, Default)]
pub struct Notified {
    /// The first assessment after start-up was seen: its packets were there already.
    primed: bool,
    /// Packets already counted as seen (notified, or there at start-up).
    seen: HashSet<String>,
    /// The assessment last looked at (held, so its address is not reused).
    assessment: Option<Arc<warrant_engine::monitor::Assessment>>,
    /// The pending count last put in the title.
    title: Option<usize>,
}

impl State {
    /// The class's `refuse_after` when the undecided packet `e` is past it: the packet is timed
    /// out (shown so, and never approved: its call was refused at that time). The wait counts
    /// from when the packet arrived or from its `created_at`, whichever is later (a backdated
    /// packet does not time out early). A packet of a class with no `[timeouts]` entry or with
    /// `wait = "forever"` never times out here.
    #[must_use]
    pub fn timed_out(&self, e: &warrant_store::spool::PacketEntry) -> Option<std::time::Duration> {
        let p = &e.packet;
        let ClassTimeout::RefuseAfter { after, .. } = self.policies.class_timeout(&p.action_class)? else {
            return None;
        };
        let from = p
            .created_at
            .as_deref()
            .and_then(warrant_protocol::clock::unix_seconds)
            .map_or(e.arrived, |c| c.max(e.arrived));
        (from + after.as_secs_f64() <= self.now && !self.decisions.contains_key(&p.id)).then_some(after)
    }

    /// [`State::timed_out`] of the packet `p` as the last scan found it (`None` when it is not in
    /// it).
    #[must_use]
    pub fn packet_timed_out(&self, p: &Packet) -> Option<std::time::Duration> {
        self.snapshot.packet(&p.id).and_then(|e| self.timed_out(e))
    }
}

/// The system refusals of timed-out packets this console asked for (`sign_refusal = true`), kept
/// in the [`State`]: each packet's refusal is asked for once per console run, whether it was
/// signed or failed (a failure is shown, never retried in a loop).
#[derive(Debug, Clone, Default)]
pub struct TimeoutRefusals {
    /// Packets whose system refusal was asked for.
    tried: HashSet<String>,
    /// What the last look that found nothing due looked at (the second, the snapshot generation,
    /// the number of decisions): the same again finds nothing, so keys and frames cost nothing.
    idle: Option<(i64, u64, usize)>,
}

impl TimeoutRefusals {
    /// True when the system refusal of packet `id` was asked for already.
    #[must_use]
    pub fn tried(&self, id: &str) -> bool {
        self.tried.contains(id)
    }
}

/// The reason signed into the system refusal of a packet that timed out after `after`.
#[must_use]
pub fn timeout_reason(after: std::time::Duration) -> String {
    format!(
        "timed out after {} undecided (policy.toml [timeouts]): a system decision, no person refused it",
        human(after)
    )
}

/// The system refusal the state now calls for: [`Effect::RefuseTimedOut`] for the first pending
/// packet (what the Pending list holds, whatever the filter) that is timed out
/// ([`State::timed_out`]), whose class has `sign_refusal = true`, and whose refusal was not asked
/// for before; nothing unless the console can sign now ([`State::can_sign`]: a key, the chain
/// verified and valid, no signature in flight), the assessment is of the last scan (so a tool call
/// the gate lets run is not taken for one that waits), and no dialog is confirming a signature of
/// the principal's. It marks the packet as asked for and the state as signing.
pub(super) fn timeout_effects(state: &mut State) -> Vec<Effect> {
    if !state.policies.signs_timeouts()
        || state.can_sign().is_err()
        || state.snapshot_generation() == 0
        || state.assessment_due()
        || matches!(state.mode, Mode::Confirm(_) | Mode::ControlConfirm(_) | Mode::RevokeConfirm(_))
    {
        return vec![];
    }
    let looked_at = (state.now.floor() as i64, state.snapshot_generation(), state.decisions.len());
    if state.timeout_refusals.idle == Some(looked_at) {
        return vec![];
    }
    let due = state.snapshot.packets.iter().find_map(|e| {
        let p = &e.packet;
        if state.timeout_refusals.tried(&p.id)
            || state.decisions.contains_key(&p.id)
            || warrant_engine::monitor::ran_on_its_own(state.assessment(), p)
            || state.ran_on_grant(p).is_some()
        {
            return None;
        }
        let after = state.timed_out(e)?;
        state.policies.class_timeout(&p.action_class)?.signs_refusal().then(|| (Arc::clone(p), after))
    });
    let Some((packet, after)) = due else {
        state.timeout_refusals.idle = Some(looked_at);
        return vec![];
    };
    let tried = &mut state.timeout_refusals.tried;
    tried.insert(packet.id.clone());
    // Packets gone from the spool are forgotten once they outnumber the ones there.
    if tried.len() > 2 * state.snapshot.packets.len() + 1024 {
        let there: HashSet<&str> = state.snapshot.packets.iter().map(|e| e.packet.id.as_str()).collect();
        tried.retain(|id| there.contains(id.as_str()));
    }
    state.signing = true;
    vec![Effect::RefuseTimedOut { reason: timeout_reason(after), packet, after }]
}

/// `30s`, `10m`, `1h 30m`: a timeout in words.
#[must_use]
pub fn human(d: std::time::Duration) -> String {
    humantime::format_duration(std::time::Duration::from_secs(d.as_secs().max(1))).to_string()
}

/// The effects the state now calls for: [`Effect::Notify`] for packets that need the principal
/// and are new since the last assessment looked at (none for what the first assessment after
/// start-up found), and [`Effect::Title`] when the pending count changed.
pub(super) fn effects(state: &mut State) -> Vec<Effect> {
    let mut fx = Vec::new();
    let pending = state.pending_total();
    let mut notified = std::mem::take(&mut state.notified);
    if notified.title != Some(pending) {
        notified.title = Some(pending);
        fx.push(Effect::Title { pending });
    }
    // Only an assessment of the last scan with the chain read says which packets wait for a
    // person (a tool call the gate lets run never does; before the chain is read the gate
    // blocks everything), and only a new one can show new packets.
    let fresh = state.snapshot_generation() > 0
        && !state.assessment_due()
        && !matches!(state.chain, ChainState::Unknown)
        && !notified.assessment.as_ref().is_some_and(|a| Arc::ptr_eq(a, state.assessment_arc()));
    if fresh {
        notified.assessment = Some(Arc::clone(state.assessment_arc()));
        let mut new = Vec::new();
        for e in &state.snapshot.packets {
            let p = &e.packet;
            if state.decisions.contains_key(&p.id)
                || warrant_engine::monitor::ran_on_its_own(state.assessment(), p)
                || notified.seen.contains(&p.id)
            {
                continue;
            }
            notified.seen.insert(p.id.clone());
            if notified.primed {
                new.push(Notice::of(p));
            }
        }
        notified.primed = true;
        // Packets gone from the spool are forgotten once they outnumber the ones there.
        if notified.seen.len() > 2 * state.snapshot.packets.len() + 1024 {
            let there: HashSet<&str> = state.snapshot.packets.iter().map(|e| e.packet.id.as_str()).collect();
            notified.seen.retain(|id| there.contains(id.as_str()));
        }
        if !new.is_empty() {
            fx.push(Effect::Notify { packets: new, pending });
        }
    }
    state.notified = notified;
    fx
}
