//! Waiting for the principal: a decision file that verifies, the packet's expiry, or her
//! signals to the agent, on a directory spool or a JetStream store ([`wait_for_decision`]).

use super::*;

/// How a wait for a decision ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Waited {
    /// A decision file verified against the pinned keys and the packet's content.
    Decided(warrant_protocol::decision::VerifiedDecision),
    /// The packet's `expires_at` passed.
    Expired,
    /// The agent was killed (`": <reason>"` or empty).
    Stopped(String),
    /// The agent is quarantined (`": <reason>"` or empty).
    Quarantined(String),
    /// The time ran out.
    Timeout,
    /// The decision that came does not verify (a JetStream store's bucket holds one decision
    /// per packet: no other can follow). The reason, inert.
    Unverified(String),
}

/// Waits for `decisions/<id>.json` to hold a decision that verifies against `pinned` for the
/// packet content `content_hash`, polling every 50 ms, until `timeout`, the packet's expiry
/// (`expires_at`), or a kill or quarantine signal for `agent` (one in force: a kill or a
/// quarantine the principal has not released, whenever it was given). A decision file that
/// does not verify is reported once on stderr and ignored: it is not a decision. A refusal that
/// comes with the agent's stop signal (a kill refuses its agent's pending packets) is
/// [`Waited::Stopped`].
#[allow(clippy::too_many_arguments)]
#[must_use]
pub fn wait_for_decision(
    spool: &Spool,
    id: &str,
    content_hash: &str,
    pinned: &PinnedKeys,
    agent: &str,
    expires_at: Option<time::OffsetDateTime>,
    timeout: Duration,
    quorum: Option<&warrant_protocol::decision::Quorum>,
) -> Waited {
    let deadline = Instant::now() + timeout;
    let decision_path = spool.decision_path(id);
    let mut rejected: Option<(std::time::SystemTime, u64)> = None;
    loop {
        if let Ok(meta) = std::fs::symlink_metadata(&decision_path) {
            let stamp = (meta.modified().unwrap_or(std::time::UNIX_EPOCH), meta.len());
            if rejected != Some(stamp) {
                let verdict = spool::read_limited(&decision_path)
                    .map_err(|e| e.to_string())
                    .and_then(|b| {
                        warrant_protocol::canonical::parse_untrusted(&b).map_err(|e| format!("not JSON: {e}"))
                    })
                    .and_then(|v| {
                        warrant_protocol::decision::verify_decision_file_under(
                            &v,
                            id,
                            Some(content_hash),
                            pinned,
                            quorum,
                        )
                        .map_err(|e| e.to_string())
                    });
                match verdict {
                    // A kill refuses its agent's pending packets after raising the stop signal:
                    // the waiting agent hears that it was killed (exit 7), not a plain refusal.
                    Ok(d) if d.verdict == warrant_protocol::decision::Verdict::Refuse => {
                        return match standing_signal(spool, agent) {
                            Some(Signal::Stopped(why)) => Waited::Stopped(why),
                            _ => Waited::Decided(d),
                        };
                    }
                    Ok(d) => return Waited::Decided(d),
                    Err(e) => {
                        eprintln!(
                            "warrant: ignoring decision file {}: {}",
                            decision_path.display(),
                            warrant_protocol::text::inert(&e, 2000)
                        );
                        rejected = Some(stamp);
                    }
                }
            }
        }
        if expires_at.is_some_and(|t| time::OffsetDateTime::now_utc() >= t) {
            return Waited::Expired;
        }
        match standing_signal(spool, agent) {
            Some(Signal::Stopped(why)) => return Waited::Stopped(why),
            Some(Signal::Quarantined(why)) => return Waited::Quarantined(why),
            None => {}
        }
        if Instant::now() >= deadline {
            return Waited::Timeout;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// [`wait_for_decision`] on a JetStream store (`docs/distributed.md`): waits for the decision
/// on `agent`'s packet `id` in the store's decisions bucket, or for the principal's signal to
/// `agent` there (a stop or a quarantine in force: the signals of
/// `signals/<agent>.json`, which the principal's replica puts in the store), with a watch of
/// each key (no polling), at most `timeout` and never past `expires_at`, and verifies a decision
/// as a decision file. The bucket is written once per key, so a decision that does not verify
/// is `Waited::Unverified`, and the packet is never approved.
///
/// # Errors
/// The store's errors other than the wait running out: never a decision.
#[cfg(feature = "jetstream")]
#[allow(clippy::too_many_arguments)]
pub fn wait_for_store_decision(
    remote: &warrant_store::jetstream::JetStreamSpool,
    id: &str,
    content_hash: &str,
    pinned: &PinnedKeys,
    agent: &str,
    expires_at: Option<time::OffsetDateTime>,
    timeout: Duration,
    quorum: Option<&warrant_protocol::decision::Quorum>,
) -> Result<Waited, warrant_store::jetstream::JsError> {
    use warrant_store::jetstream::{Awaited, JsError};
    let until_expiry = expires_at.map(|t| {
        let left = t - time::OffsetDateTime::now_utc();
        Duration::try_from(left).unwrap_or(Duration::ZERO)
    });
    let (wait, expiry_first) = match until_expiry {
        Some(e) if e < timeout => (e, true),
        _ => (timeout, false),
    };
    let ran_out = if expiry_first { Waited::Expired } else { Waited::Timeout };
    let applies = |bytes: &[u8]| signal_of(bytes, agent).is_some();
    let decision = match remote.wait_decision_or_signal(agent, id, wait, applies) {
        Ok(Awaited::Decision(d)) => d,
        Ok(Awaited::Signal(bytes)) => {
            return Ok(match signal_of(&bytes, agent) {
                Some(Signal::Stopped(why)) => Waited::Stopped(why),
                Some(Signal::Quarantined(why)) => Waited::Quarantined(why),
                None => ran_out,
            });
        }
        Err(JsError::Timeout { .. }) => return Ok(ran_out),
        Err(e) => return Err(e),
    };
    let verdict = warrant_protocol::canonical::parse_untrusted(&decision.bytes)
        .map_err(|e| format!("not JSON: {e}"))
        .and_then(|v| {
            warrant_protocol::decision::verify_decision_file_under(&v, id, Some(content_hash), pinned, quorum)
                .map_err(|e| e.to_string())
        });
    match verdict {
        Ok(d) => Ok(Waited::Decided(d)),
        // The key is written once: no other decision can follow, and this one is none.
        Err(e) => Ok(Waited::Unverified(warrant_protocol::text::inert(&e, 2000))),
    }
}

/// What the principal told an agent through `signals/<agent>.json`.
enum Signal {
    /// `agent kill`: `": <reason>"` or empty.
    Stopped(String),
    /// `agent quarantine`: `": <reason>"` or empty.
    Quarantined(String),
}

/// Reads the signal for `agent` or for any agent id confusable with it
/// ([`warrant_protocol::control::agent_skeleton`]: a quarantine of `ag1` stops `AG1` too, as the
/// principal's controls hold it); `None` when there is none that applies. A stop wins over a
/// quarantine.
fn standing_signal(spool: &Spool, agent: &str) -> Option<Signal> {
    use warrant_protocol::control::agent_skeleton;
    if !warrant_protocol::packet::is_safe_id(agent) {
        return None;
    }
    let skeleton = agent_skeleton(agent);
    let mut found = None;
    for e in std::fs::read_dir(spool.signals_dir()).ok()?.flatten() {
        let name = e.file_name();
        let Some(id) = name.to_str().and_then(|n| n.strip_suffix(".json")) else { continue };
        if !warrant_protocol::packet::is_safe_id(id) || agent_skeleton(id) != skeleton {
            continue;
        }
        let Ok(bytes) = spool::read_limited(&e.path()) else { continue };
        match signal_of(&bytes, id) {
            Some(stop @ Signal::Stopped(_)) => return Some(stop),
            Some(q) => found = Some(q),
            None => {}
        }
    }
    found
}

/// The signal `bytes` (a `signals/<agent>.json`, or its copy in a store) tell `agent`: a stop or
/// a quarantine, which stays in force until the principal releases the agent (the release
/// replaces the signal), whenever it was given: a killed agent's packets are blocked by its
/// standing in the chain, so a wait that began after the kill ends with it at once, not at its
/// timeout. `None` for anything else (a release, another agent's, a malformed one).
fn signal_of(bytes: &[u8], agent: &str) -> Option<Signal> {
    let v = warrant_protocol::canonical::parse_untrusted(bytes).ok()?;
    if v.get("agent").and_then(Value::as_str) != Some(agent) {
        return None;
    }
    let reason = v
        .get("reason")
        .and_then(Value::as_str)
        .map(|r| format!(": {}", warrant_protocol::text::inert(r, 400)))
        .unwrap_or_default();
    match v.get("type").and_then(Value::as_str) {
        Some("warrant_stop") => Some(Signal::Stopped(reason)),
        Some("warrant_quarantine") => Some(Signal::Quarantined(reason)),
        _ => None,
    }
}
