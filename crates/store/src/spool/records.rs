//! The principal's other signed records: controls, key events and grants.

use super::first_problem;
use super::fold::{sign_checkpoint, verified_view};
use super::{ChainView, DecideError, Scanner, Snapshot, Spool};
use crate::atomic::write_atomic;
use crate::chain_file;
use serde_json::{Map, Value};
use std::fs;
use std::io;
use warrant_protocol::chain;
use warrant_protocol::control::{ControlInput, ControlKind};
use warrant_protocol::keys::{PinnedKeys, Principal};
use warrant_protocol::packet;

/// Signs a control and records it (the principal's notebook-trust change, quarantine, release,
/// kill or elevation): under the chain's lock, verifies the whole chain (refusing a broken one),
/// prepares the control against that verified view (`prepare_control`: a trust change must
/// still start from its `previous` level, a kill runs the kill switch, an elevation is checked by
/// the hypervisor's rules), signs it, checks that the new record would itself verify, and appends
/// it durably. The control applies from the next gate call: every view folds the chain
/// ([`ChainView::controls`]). An elevation is checked against the agent's effective score as
/// `scores` observes it. Returns the control as signed and the record written.
///
/// # Errors
/// [`DecideError`]: an unsafe spool, a broken chain, a control the chain no longer admits or the
/// hypervisor denies ([`DecideError::Refused`]), a record that would not verify, I/O; on
/// any error nothing was appended.
pub fn append_control(
    spool: &Spool,
    principal: &Principal,
    pinned: &PinnedKeys,
    policies: &warrant_protocol::graduation::PolicySet,
    scores: &dyn AgentScores,
    mut input: ControlInput,
) -> Result<(ControlInput, chain::Appended), DecideError> {
    if !packet::is_safe_id(&input.subject) {
        return Err(DecideError::WouldNotVerify(format!("{:?} is not a safe notebook or agent id", input.subject)));
    }
    let signed_at = input.decided_at.clone();
    let a = append_signed_record(spool, principal, pinned, &signed_at, |view| {
        prepare_control(spool, policies, scores, view, &mut input)?;
        let mut body =
            warrant_protocol::control::record_body(&input, &warrant_protocol::control::sign_control(principal, &input));
        // A quarantine or a kill binds the agent to its publisher when nothing did before (no
        // approval, no `[agents] users`): the control then holds every packet that user
        // publishes, under any agent id, on every host that reads the chain.
        if matches!(input.kind, ControlKind::Quarantine | ControlKind::Kill)
            && !view.controls.publishers.contains_key(&input.subject)
            && policies.agent_uids(&input.subject).is_none()
            && let Some(uid) = first_publisher(spool, &input.subject)?
            && let Some(Value::Object(meta)) = body.get_mut("metadata")
        {
            meta.insert(
                warrant_protocol::control::PUBLISHER_KEY.into(),
                serde_json::json!({"agent": input.subject, "uid": uid}),
            );
        }
        Ok(body)
    })?;
    standing_signal(spool, &input);
    Ok((input, a))
}

/// The owner of `agent`'s earliest-arriving packet in the spool, if it has one.
fn first_publisher(spool: &Spool, agent: &str) -> Result<Option<u32>, DecideError> {
    let snap = Scanner::new().scan(spool)?;
    Ok(snap
        .packets
        .iter()
        .filter(|e| e.packet.agent == agent)
        .min_by(|a, b| a.arrived.total_cmp(&b.arrived))
        .map(|e| e.owner))
}

/// After a quarantine or a release is recorded: tells the agent, as the kill switch does, in
/// `signals/<agent>.json` (`{"type": "warrant_quarantine" | "warrant_release", "agent",
/// "reason", "at"}`), so a `propose --wait` stops waiting for a decision that cannot come. The
/// chain is the record; a signal that cannot be written is logged, not an error.
fn standing_signal(spool: &Spool, input: &ControlInput) {
    let kind = match input.kind {
        ControlKind::Quarantine => "warrant_quarantine",
        ControlKind::Release => "warrant_release",
        _ => return,
    };
    if !packet::is_safe_id(&input.subject) {
        return;
    }
    let signal = serde_json::json!({
        "type": kind, "agent": input.subject, "reason": input.reason, "at": input.decided_at,
    });
    if let Err(e) = write_signal(spool, &input.subject, &signal) {
        tracing::warn!(agent = %input.subject, error = %e, "the {kind} signal was not written");
    }
}

/// Writes the principal's `signal` to `agent` as `signals/<agent>.json` (atomically) and, in a
/// replica of a JetStream store, to the store, where an agent waiting on another host sees it
/// ([`crate::upstream::Upstream::publish_signal`]; `docs/distributed.md`).
///
/// # Errors
/// `PermissionDenied` for an unsafe agent id or spool, other I/O errors, the store's errors.
fn write_signal(spool: &Spool, agent: &str, signal: &Value) -> io::Result<()> {
    // Never write through an unsafe name or into a spool others can write to.
    if !packet::is_safe_id(agent) || spool.check_private().is_err() {
        return Err(io::Error::new(io::ErrorKind::PermissionDenied, "unsafe agent id or spool"));
    }
    let dir = spool.signals_dir();
    fs::create_dir_all(&dir)?;
    let mut bytes = serde_json::to_vec_pretty(signal)?;
    bytes.push(b'\n');
    write_atomic(&dir.join(format!("{agent}.json")), &bytes, 0o644)?;
    if let Some(store) = spool.chain_upstream() {
        store.publish_signal(agent, &bytes).map_err(io::Error::other)?;
    }
    Ok(())
}

/// Records a key event ([`warrant_protocol::key_event`]: a rotation or a rename) signed by `principal`
/// (and, for a rotation, by the new key `new`): under the chain's lock, verifies the whole chain
/// (refusing a broken one), checks that the new record would itself verify under `pinned`, and
/// appends it durably. Returns the record written.
///
/// # Errors
/// [`DecideError`]: an unsafe spool, a broken chain, a record that would not verify, I/O; on any
/// error nothing was appended.
pub fn append_key_event(
    spool: &Spool,
    principal: &Principal,
    new: Option<&Principal>,
    pinned: &PinnedKeys,
    event: &warrant_protocol::key_event::KeyEvent,
    decided_at: &str,
) -> Result<chain::Appended, DecideError> {
    append_signed_record(spool, principal, pinned, decided_at, |_| {
        Ok(warrant_protocol::key_event::record_body(event, principal, new, decided_at))
    })
}

/// Records a grant ([`warrant_protocol::grant`]) signed by `principal`: under the chain's lock, verifies the
/// whole chain (refusing a broken one, or a grant id already used), checks that the new record
/// would itself verify under `pinned`, and appends it durably. Returns the grant as the chain
/// now holds it.
///
/// # Errors
/// [`DecideError`]: an unsafe spool, a broken chain, a record that would not verify, I/O; on any
/// error nothing was appended.
pub fn append_grant(
    spool: &Spool,
    principal: &Principal,
    pinned: &PinnedKeys,
    input: &warrant_protocol::grant::GrantInput,
) -> Result<(warrant_protocol::grant::Grant, chain::Appended), DecideError> {
    let signed = warrant_protocol::grant::sign(
        principal,
        warrant_protocol::grant::grant_document(input, &principal.name, &principal.fingerprint()),
    );
    let mut grant = warrant_protocol::grant::Grant::from_document(&signed.document)
        .map_err(|e| DecideError::WouldNotVerify(e.to_string()))?;
    let a = append_signed_record(spool, principal, pinned, &input.decided_at, |view| {
        if view.grants.get(&input.grant_id).is_some() || view.grants.revoked(&input.grant_id).is_some() {
            return Err(DecideError::Refused(format!("grant id {} is already in the chain", input.grant_id)));
        }
        Ok(warrant_protocol::grant::record_body(&signed))
    })?;
    grant.chain_index = a.chain_index;
    Ok((grant, a))
}

/// Records the revocation of the live grant `grant_id`, signed by `principal`, with `reason`
/// (required): effective for the next call a hook or the gateway judges.
///
/// # Errors
/// [`DecideError::ReasonRequired`]; [`DecideError::Refused`] when the chain holds no live grant
/// with that id (unknown, or already revoked); as [`append_grant`].
pub fn revoke_grant(
    spool: &Spool,
    principal: &Principal,
    pinned: &PinnedKeys,
    grant_id: &str,
    reason: &str,
    decided_at: &str,
) -> Result<chain::Appended, DecideError> {
    if reason.trim().is_empty() {
        return Err(DecideError::ReasonRequired);
    }
    // The agent is the grant's, as the chain verified under the lock holds it.
    append_signed_record(spool, principal, pinned, decided_at, |view| {
        let g = match (view.grants.get(grant_id), view.grants.revoked(grant_id)) {
            (Some(g), _) => g,
            (None, Some((_, r))) => {
                return Err(DecideError::Refused(format!(
                    "{grant_id} was already revoked by {} at {}",
                    r.principal, r.decided_at
                )));
            }
            (None, None) => return Err(DecideError::Refused(format!("no grant {grant_id:?} in the chain"))),
        };
        let doc = warrant_protocol::grant::revocation_document(
            grant_id,
            &g.agent,
            reason,
            decided_at,
            &principal.name,
            &principal.fingerprint(),
        );
        Ok(warrant_protocol::grant::record_body(&warrant_protocol::grant::sign(principal, doc)))
    })
}

/// Appends the signed record `body_of` makes from the chain as verified under the chain's lock
/// (a control, a key event, a grant): refuses a broken chain, and whatever `body_of` refuses;
/// checks that the record would itself verify under `pinned`; appends it durably and signs the
/// checkpoint that follows (dated `signed_at`).
///
/// # Errors
/// [`DecideError`]: an unsafe spool, a broken chain, `body_of`'s refusal, a record that would
/// not verify, I/O; on any error nothing was appended.
fn append_signed_record(
    spool: &Spool,
    principal: &Principal,
    pinned: &PinnedKeys,
    signed_at: &str,
    mut body_of: impl FnMut(&ChainView) -> Result<Map<String, Value>, DecideError>,
) -> Result<chain::Appended, DecideError> {
    spool.ensure()?;
    spool.check_private()?;
    let mut refusal: Option<DecideError> = None;
    // The fold of the prefix the verification proved, from the check to the checkpoint.
    let fold = std::cell::Cell::new(None);
    let appended = chain_file::append_then(
        &spool.chain_path(),
        spool.chain_upstream(),
        chain_file::LOCK_DEADLINE,
        |head| {
            let view = match verified_view(spool, pinned, |_| false) {
                Ok(c) => {
                    fold.set(c.fold);
                    c.view
                }
                Err(e) => {
                    let msg = e.to_string();
                    refusal = Some(e);
                    return Err(msg);
                }
            };
            let body = match body_of(&view) {
                Ok(b) => b,
                Err(e) => {
                    let msg = e.to_string();
                    refusal = Some(e);
                    return Err(msg);
                }
            };
            if let Some(problem) = first_problem(&body, head, Some(pinned)) {
                refusal = Some(DecideError::WouldNotVerify(problem));
                return Err("would not verify".into());
            }
            Ok(body)
        },
        |a, bytes| {
            sign_checkpoint(spool, principal, pinned, a, bytes, signed_at, fold.take());
        },
    );
    appended.map_err(|e| refusal.unwrap_or(DecideError::Chain(e)))
}

/// The control-specific part of [`append_control`], against the chain as verified under the
/// lock: a trust change must start from the level it names as `previous` (nobody changed it
/// since the principal looked); a kill runs the kill switch ([`kill_agent`]) and adds its result;
/// an elevation's `ring` and `ttl_seconds` are checked by the hypervisor's rules and replaced by
/// the granted fields ([`elevation_fields`]).
///
/// # Errors
/// [`DecideError::Refused`] with the reason; I/O errors scanning the spool.
fn prepare_control(
    spool: &Spool,
    policies: &warrant_protocol::graduation::PolicySet,
    scores: &dyn AgentScores,
    view: &ChainView,
    input: &mut ControlInput,
) -> Result<(), DecideError> {
    use warrant_protocol::control::ControlKind;
    match input.kind {
        ControlKind::TrustSet => {
            let now = warrant_protocol::clock::unix_seconds(&input.decided_at).unwrap_or(0.0);
            if !view.controls.admits(input, now) {
                return Err(DecideError::Refused(format!(
                    "{} is now {} in the chain, not the level this change starts from; look again",
                    input.subject,
                    view.controls.notebook_trust(&input.subject)
                )));
            }
        }
        ControlKind::Kill => {
            let snap = Scanner::new().scan(spool)?;
            let fields = kill_agent(spool, &snap, view, input);
            input.fields.extend(fields);
        }
        ControlKind::Elevate => {
            let ring = input.fields.get("ring").and_then(Value::as_u64).and_then(|r| u8::try_from(r).ok());
            let ttl = input.fields.get("ttl_seconds").and_then(Value::as_i64);
            let (Some(ring), Some(ttl)) = (ring, ttl) else {
                return Err(DecideError::Refused("an elevation needs a ring and a TTL".into()));
            };
            let snap = Scanner::new().scan(spool)?;
            input.fields =
                elevation_fields(&snap, view, policies, scores, &input.subject, ring, ttl, &input.decided_at)
                    .map_err(|e| DecideError::Refused(format!("elevation denied: {e}")))?;
        }
        ControlKind::Quarantine | ControlKind::Release => {}
    }
    Ok(())
}

/// Runs the kill switch on `agent` (agent-hypervisor.md §2.11): its termination callback writes
/// the stop signal `signals/<agent>.json` (atomically; the agent is expected to watch it; in a
/// replica also to the store, [`write_signal`]), its
/// pending packets are the in-flight steps (compensated: warrant has no substitute agents), and
/// the result, recorded whatever the callback did, is returned as the control's `kill` field.
/// `terminated` is false when the signal could not be written within the callback timeout.
#[must_use]
fn kill_agent(spool: &Spool, snap: &Snapshot, view: &ChainView, input: &ControlInput) -> Map<String, Value> {
    use warrant_protocol::rings::kill::{InFlightStep, KillReason, KillSwitch};
    let agent = input.subject.clone();
    let now = warrant_protocol::clock::unix_seconds(&input.decided_at).unwrap_or(0.0);
    let steps: Vec<InFlightStep> = snap
        .packets
        .iter()
        .filter(|e| e.packet.agent == agent && !view.decisions.contains_key(&e.packet.id))
        .map(|e| InFlightStep { step_id: e.packet.id.clone(), saga_id: String::new() })
        .collect();
    let signal = serde_json::json!({
        "type": "warrant_stop", "agent": agent, "reason": input.reason, "at": input.decided_at,
    });
    let (spool, to) = (spool.clone(), agent.clone());
    let mut switch = KillSwitch::default();
    switch.register_agent(&agent, Some(Box::new(move || write_signal(&spool, &to, &signal))));
    let details = input.reason.clone().unwrap_or_default();
    let result =
        switch.kill(&agent, "spool", KillReason::Manual, &steps, &details, now, &crate::termination::run_with_timeout);
    let mut kill = serde_json::to_value(&result).unwrap_or(Value::Null);
    // Records carry no floats (the producer profile): the time is the control's own RFC 3339.
    kill["timestamp"] = Value::String(input.decided_at.clone());
    let mut fields = Map::new();
    fields.insert("kill".into(), kill);
    fields
}

/// Checks an elevation the principal asks for against the Agent Hypervisor's rules
/// (agent-hypervisor.md §2.7) and returns the control's fields (`ring`, `ttl_seconds`,
/// `expires_at`, `original_ring`, `trust_score`). The agent's current ring follows from its
/// effective score, which `scores` observes from its packets; the principal's signature is the
/// sponsorship a Ring 1 elevation needs.
///
/// # Errors
/// A sentence naming the denial (`invalid_target`, `ring_0_forbidden`, `duplicate_elevation`,
/// `insufficient_trust`), or an agent that is quarantined or killed.
#[allow(clippy::too_many_arguments)]
pub fn elevation_fields(
    snap: &Snapshot,
    view: &ChainView,
    policies: &warrant_protocol::graduation::PolicySet,
    scores: &dyn AgentScores,
    agent: &str,
    ring: u8,
    ttl_seconds: i64,
    decided_at: &str,
) -> Result<Map<String, Value>, String> {
    use warrant_protocol::rings::Ring;
    use warrant_protocol::rings::elevation::{ElevationManager, ElevationRequest};
    let now = warrant_protocol::clock::unix_seconds(decided_at).unwrap_or(0.0);
    let ctx = warrant_protocol::verdict::VerdictContext { policies, controls: &view.controls, now };
    let standing = view.controls.standing(agent);
    if standing != warrant_protocol::graduation::gate::AgentStanding::Active {
        return Err(format!("{agent} is {}: release it before elevating it", standing.as_str()));
    }
    if view.controls.active_elevation(agent, now).is_some() {
        return Err(format!("duplicate_elevation: {agent} already has an active elevation"));
    }
    let eff = scores.effective_score(&ctx, snap, view, agent);
    let (current, _) = warrant_protocol::verdict::agent_ring(&ctx, agent, eff, false);
    let target = Ring::from_value(i64::from(ring)).ok_or_else(|| format!("ring {ring} is not 0-3"))?;
    let mut req = ElevationRequest::new(agent, "spool", current, target);
    req.ttl_seconds = ttl_seconds;
    req.trust_score = Some(eff);
    req.attestation = Some("principal");
    let granted = ElevationManager::default()
        .request(&req, now)
        .map_err(|e| e.to_string().lines().map(str::trim).collect::<Vec<_>>().join("; "))?;
    let mut fields = Map::new();
    fields.insert("ring".into(), serde_json::json!(target.value()));
    fields.insert("original_ring".into(), serde_json::json!(current.value()));
    fields.insert("ttl_seconds".into(), serde_json::json!((granted.expires_at - granted.granted_at) as i64));
    fields.insert(
        "expires_at".into(),
        serde_json::json!(
            time::OffsetDateTime::from_unix_timestamp(granted.expires_at as i64)
                .map_or_else(|_| String::new(), warrant_protocol::clock::format_rfc3339)
        ),
    );
    fields.insert("trust_score".into(), serde_json::json!(format!("{eff:.4}")));
    Ok(fields)
}

/// An agent's effective trust score as the surfaces observe it from the spool (the live monitor,
/// `warrant_engine::monitor::Scores`, which replays the agent's packets in arrival order and keeps the
/// last score they claimed, capped by policy): what an elevation is checked against
/// (agent-hypervisor.md §2.7) and recorded with ([`elevation_fields`]).
pub trait AgentScores {
    /// `agent`'s effective score in `[0, 1]` (0 when it has claimed none), observed from `snap`
    /// and `view` under `ctx` (its policies, controls and time).
    fn effective_score(
        &self,
        ctx: &warrant_protocol::verdict::VerdictContext<'_>,
        snap: &Snapshot,
        view: &ChainView,
        agent: &str,
    ) -> f64;
}
