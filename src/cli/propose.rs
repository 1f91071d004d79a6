//! The agent's commands: `warrant propose` (publishing a packet, and `--wait` for its decision)
//! and `warrant check-preconditions`.

use super::common::{load_pinned, load_policies, print_json};
use super::{
    EXIT_CORRECTED, EXIT_EXPIRED, EXIT_INVALID, EXIT_PENDING, EXIT_QUARANTINED, EXIT_REFUSED, EXIT_STOPPED,
    EXIT_TIMEOUT, Failure,
};
use crate::govern::Waited;
use crate::protocol::decision::{self, Verdict};
use crate::protocol::graduation::PolicySet;
use crate::protocol::packet;
use crate::store::config;
use crate::store::publications::{Publication, SpoolLog};
use crate::store::spool::{self, Scanner, Spool};
use serde_json::{Value, json};
use std::io::{self, Read as _};
use std::path::Path;
use std::time::Duration;

/// `propose`'s optional flags.
pub(super) struct ProposeOptions<'a> {
    pub(super) payload: Option<&'a Path>,
    pub(super) id: Option<String>,
    pub(super) wait: Option<f64>,
    pub(super) expires: Option<&'a str>,
}

/// When a packet proposed `now` expires: `--expires` (a duration such as `30m`, or an RFC 3339
/// time in the future), else the class's `[expiry]` default in policy.toml, else never.
fn expiry_of(
    expires: Option<&str>,
    policies: &PolicySet,
    class: &str,
    now: time::OffsetDateTime,
) -> Result<Option<time::OffsetDateTime>, Failure> {
    let after = |d: std::time::Duration| {
        time::Duration::try_from(d)
            .ok()
            .and_then(|d| now.checked_add(d))
            .ok_or_else(|| Failure::usage("--expires is too far away"))
    };
    match expires {
        None => policies.default_expiry(class).map(after).transpose(),
        Some(s) => match crate::protocol::clock::parse_rfc3339(s) {
            Some(t) if t > now => Ok(Some(t)),
            Some(_) => Err(Failure::usage(format!("--expires {s} is not in the future"))),
            None => {
                let d = crate::protocol::clock::parse_duration(s)
                    .map_err(|e| Failure::usage(format!("--expires: {e}, or an RFC 3339 time")))?;
                if d.is_zero() {
                    return Err(Failure::usage("--expires must be later than now"));
                }
                after(d).map(Some)
            }
        },
    }
}

/// Where `warrant propose` publishes: a directory spool, or a JetStream store (the agent's side
/// of `docs/distributed.md`: the packet to the spool stream, the decision from the bucket).
pub(super) enum ProposeTo<'a> {
    Directory(&'a Spool),
    #[cfg(feature = "jetstream")]
    Store(&'a crate::store::jetstream::StoreUrl),
}

pub(super) fn propose(
    to: ProposeTo<'_>,
    class: &str,
    agent: &str,
    summary: &str,
    opts: &ProposeOptions<'_>,
) -> Result<u8, Failure> {
    let spool = match to {
        ProposeTo::Directory(spool) => Some(spool),
        #[cfg(feature = "jetstream")]
        ProposeTo::Store(_) => None,
    };
    let (payload, id, wait) = (opts.payload, opts.id.clone(), opts.wait);
    let wait_for = wait_duration(wait)?;
    let class = crate::protocol::registry::normalize(class);
    if !packet::is_class_id(&class) {
        return Err(Failure::usage(format!("{class:?} is not an action class (like email.send.external)")));
    }
    if !packet::is_safe_id(agent) {
        return Err(Failure::usage(format!(
            "agent id {:?} is not a safe id: use only A-Z a-z 0-9 . _ : -",
            crate::protocol::text::inert(agent, 60)
        )));
    }
    let proposed = proposed_action(payload, summary)?;
    let id = id.unwrap_or_else(|| format!("wp-{}", uuid::Uuid::now_v7().simple()));
    if !packet::is_safe_id(&id) {
        return Err(Failure::usage(format!("unsafe packet id {id:?}")));
    }
    if summary.trim().is_empty() {
        return Err(Failure::usage("--summary must not be blank: it is what the principal reads first"));
    }
    let now = time::OffsetDateTime::now_utc();
    let policies = load_policies(spool)?;
    let expires_at = expiry_of(opts.expires, &policies, &class, now)?;
    let mut doc =
        packet::portable_packet(&id, &class, agent, summary, proposed, &crate::protocol::clock::format_rfc3339(now));
    if let Some(t) = expires_at {
        doc["expires_at"] = json!(crate::protocol::clock::format_rfc3339(t));
    }
    let content_hash = crate::protocol::canonical::canonical_hash(&doc);
    #[cfg(feature = "jetstream")]
    let remote = match to {
        ProposeTo::Store(url) => Some(connect_store(url, agent, &id)?),
        ProposeTo::Directory(_) => None,
    };
    if let Some(spool) = spool {
        spool.ensure()?;
    }
    // Published through the store boundary, on either store. A packet is never replaced,
    // pending or decided (a decision file in `decisions/` is not consulted: only the chain
    // decides, and an agent-planted file must not block a new packet).
    let log: &dyn SpoolLog = match spool {
        Some(spool) => spool,
        #[cfg(feature = "jetstream")]
        None => remote.as_ref().ok_or_else(|| Failure::usage("internal error: no store to publish to"))?,
        #[cfg(not(feature = "jetstream"))]
        None => return Err(Failure::usage("internal error: no spool to publish to")),
    };
    publish_packet(log, agent, &id, &doc)?;
    println!("{id}");
    let (Some(seconds), Some(wait_for)) = (wait, wait_for) else { return Ok(0) };
    let pinned = load_pinned()?;
    let quorum = policies.cosign(&class);
    let waited = match spool {
        Some(spool) => {
            crate::govern::wait_for_decision(spool, &id, &content_hash, &pinned, agent, expires_at, wait_for, quorum)
        }
        #[cfg(feature = "jetstream")]
        None => {
            let remote = remote.ok_or_else(|| Failure::usage("internal error: no store to wait on"))?;
            crate::govern::wait_for_store_decision(
                &remote,
                &id,
                &content_hash,
                &pinned,
                agent,
                expires_at,
                wait_for,
                quorum,
            )
            .map_err(|e| Failure::usage(format!("{}: {e}; {id} is not approved", remote.inner().url())))?
        }
        #[cfg(not(feature = "jetstream"))]
        None => return Err(Failure::usage("internal error: no spool to wait on")),
    };
    Ok(exit_code(waited, &id, agent, seconds, &doc))
}

/// How long `--wait` waits: `wait` seconds, from 0 to a year.
fn wait_duration(wait: Option<f64>) -> Result<Option<Duration>, Failure> {
    Ok(match wait {
        Some(s) => Some(
            Duration::try_from_secs_f64(s)
                .ok()
                .filter(|d| *d <= Duration::from_secs(366 * 86_400))
                .ok_or_else(|| Failure::usage(format!("--wait {s}: give a number of seconds from 0 to a year")))?,
        ),
        None => None,
    })
}

/// The proposed action: the JSON of `payload` (a file, or `-` for stdin; text that is not JSON is
/// kept as text), else the summary.
fn proposed_action(payload: Option<&Path>, summary: &str) -> Result<Value, Failure> {
    Ok(match payload {
        None => json!({"summary": summary}),
        Some(path) => {
            let mut text = String::new();
            if path == Path::new("-") {
                std::io::stdin().read_to_string(&mut text)?;
            } else {
                text = std::fs::read_to_string(path).map_err(|e| Failure::usage(format!("{}: {e}", path.display())))?;
            }
            serde_json::from_str(&text).unwrap_or_else(|_| json!({"text": text}))
        }
    })
}

/// Publishes the packet `doc` as `id` to `log`, unless a packet `id` was published there before.
fn publish_packet(log: &dyn SpoolLog, agent: &str, id: &str, doc: &Value) -> Result<(), Failure> {
    match log.publish(Publication::Packet, agent, id, doc) {
        Ok(true) => tracing::info!(packet = %id, at = %log.location(), "published packet"),
        Ok(false) => {
            return Err(Failure::usage(format!(
                "packet {id:?} was published before in {}; choose another --id",
                log.location()
            )));
        }
        // Not published, so the same id is the one to send again (a packet is published once,
        // however often it is sent): in a moment during a leader election, after `warrant init`
        // when the store was never made.
        Err(e) => {
            return Err(Failure::usage(format!(
                "packet {id:?} was not published ({e}); nothing was published under it, so retry with the same \
                 --id (a store that was never made is made by `warrant init --store URL`)"
            )));
        }
    }
    Ok(())
}

/// The exit code for what the wait for packet `id` came to, with what happened said on stderr.
fn exit_code(waited: Waited, id: &str, agent: &str, seconds: f64, doc: &Value) -> u8 {
    match waited {
        // A system decision: the principal's console refused it when its class's wait ran out.
        Waited::Decided(d) if d.system.is_some() => {
            eprintln!("warrant: {id} was not decided in time (refused as a system decision, not by a person)");
            EXIT_TIMEOUT
        }
        Waited::Decided(d) => {
            let reason = d.reason.map(|r| format!(": {}", crate::protocol::text::inert(&r, 2000))).unwrap_or_default();
            let by = if d.cosigners.is_empty() { d.principal } else { d.cosigners.join(" + ") };
            let by = crate::protocol::text::inert(&by, 400);
            match (d.verdict, d.correction) {
                // What may run is the corrected action: printed whole, as one line of JSON.
                (Verdict::Approve, Some(c)) => {
                    eprintln!(
                        "approve as corrected by {by}{reason} ({}, {}‰ changed)",
                        c.size.label(),
                        c.changed_permille
                    );
                    println!("{}", c.action);
                    EXIT_CORRECTED
                }
                (Verdict::Approve, None) => {
                    eprintln!("approve by {by}{reason}");
                    0
                }
                (Verdict::Refuse, _) => {
                    eprintln!("refuse by {by}{reason}");
                    EXIT_REFUSED
                }
            }
        }
        Waited::Expired => {
            eprintln!("warrant: {id} expired undecided at {}; it can no longer be approved", doc["expires_at"]);
            EXIT_EXPIRED
        }
        Waited::Stopped(why) => {
            eprintln!("warrant: {agent} was killed by the principal{why}; {id} will not be approved");
            EXIT_STOPPED
        }
        Waited::Quarantined(why) => {
            eprintln!(
                "warrant: {agent} is quarantined by the principal{why}; {id} is blocked until the principal releases it"
            );
            EXIT_QUARANTINED
        }
        Waited::Timeout => {
            eprintln!("warrant: no decision on {id} within {seconds}s");
            EXIT_TIMEOUT
        }
        Waited::Unverified(why) => {
            eprintln!("warrant: the decision on {id} does not verify ({why}); {id} is not approved");
            EXIT_INVALID
        }
    }
}

/// Connects to the store `url` for `agent`'s packet `id`: both must be subject tokens there
/// (the packet goes to `agent`'s subject, which the server's permissions bind to the agent's
/// credentials). Returns the connection, to publish on and to wait on.
///
/// # Errors
/// The connection's errors; an agent or packet id that is no subject token.
#[cfg(feature = "jetstream")]
fn connect_store(
    url: &crate::store::jetstream::StoreUrl,
    agent: &str,
    id: &str,
) -> Result<crate::store::jetstream::JetStreamSpool, Failure> {
    use crate::store::jetstream::{ConnectOptions, JetStreamSpool};
    for (what, value) in [("agent", agent), ("packet", id)] {
        if !crate::store::jetstream::is_token(value) {
            return Err(Failure::usage(format!(
                "{what} id {:?}: on a JetStream store, agent and packet ids use only A-Z a-z 0-9 _ - (they are subject tokens)",
                crate::protocol::text::inert(value, 60)
            )));
        }
    }
    let opts = ConnectOptions::from_env().map_err(Failure::usage)?;
    JetStreamSpool::connect(url, &opts).map_err(|e| Failure::usage(format!("{url}: {e}")))
}

pub(super) fn check_preconditions(spool: &Spool, id: &str, as_json: bool) -> Result<u8, Failure> {
    use crate::protocol::ladder::ActionPrecondition;
    if !packet::is_safe_id(id) {
        return Err(Failure::usage(format!("{id:?} is not a packet id")));
    }
    let pinned = load_pinned()?;
    let snap = Scanner::new().scan(spool)?;
    let entry = snap.packet(id);
    let decision_path = spool.decision_path(id);
    let read = match std::fs::symlink_metadata(&decision_path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(e),
        _ => Ok(spool::read_limited(&decision_path)
            .map_err(|e| Failure::invalid(format!("{}: {e}", decision_path.display())))?),
    };
    // An approval as corrected: what may run is the correction, said once the checks hold.
    let mut corrected: Option<Value> = None;
    let (phase, preconditions): (&str, Vec<ActionPrecondition>) = match read {
        Ok(bytes) => {
            let file: Value = crate::protocol::canonical::parse_untrusted(&bytes)
                .map_err(|e| Failure::invalid(format!("{}: not JSON: {e}", decision_path.display())))?;
            let hash = entry.map(|e| e.packet.content_hash.as_str());
            // A class that needs several principals: only an approval with its quorum counts.
            let class = entry.map_or_else(
                || file["document"]["action_class"].as_str().unwrap_or_default().to_owned(),
                |e| e.packet.action_class.clone(),
            );
            let policies = load_policies(Some(spool))?;
            let d = decision::verify_decision_file_under(&file, id, hash, &pinned, policies.cosign(&class))
                .map_err(|e| Failure::invalid(e.to_string()))?;
            if d.verdict == Verdict::Refuse {
                println!("{id} was refused by {}; nothing may execute", d.principal);
                return Ok(EXIT_REFUSED);
            }
            corrected = d.correction.map(|c| c.action);
            let recorded = d
                .preconditions
                .iter()
                .map(|p| {
                    Ok(ActionPrecondition {
                        check_id: p.get("check_id").and_then(Value::as_str).ok_or("no check_id")?.to_owned(),
                        parameters: p.get("parameters").cloned().unwrap_or(Value::Null),
                        expected_at_approval: p.get("expected_at_approval").cloned().unwrap_or(Value::Null),
                        must_revalidate_at_execution: true,
                    })
                })
                .collect::<Result<Vec<_>, &str>>()
                .map_err(|e| Failure::invalid(format!("recorded precondition: {e}")))?;
            ("approved", recorded)
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let entry = entry.ok_or_else(|| Failure::invalid(format!("no packet or decision {id:?} in the spool")))?;
            let contract =
                crate::protocol::verdict::Governance::of_packet(&entry.packet).and_then(|g| g.contract.clone());
            let preconditions = match contract {
                Some(Ok(c)) => c.preconditions,
                Some(Err(e)) => return Err(Failure::invalid(format!("{id}: invalid action contract: {e}"))),
                None => Vec::new(),
            };
            ("pending", preconditions)
        }
        Err(e) => return Err(e.into()),
    };
    let policies = load_policies(Some(spool))?;
    let observer = crate::preconditions::Observer::for_policies(&policies, Some(&config::config_dir()));
    // Observed as its publisher could: what this prints must not tell more than that user may read.
    let rv = if phase == "pending" {
        observer.recheck_pending(&preconditions, entry.map(|e| e.owner))
    } else {
        observer.recheck(&preconditions)
    };
    if as_json {
        let mut report = json!({"packet_id": id, "phase": phase, "revalidation": rv});
        if let Some(c) = &corrected {
            report["corrected_action"] = c.clone();
        }
        print_json(&report)?;
    } else {
        println!("{id} ({phase}): {} precondition(s) to re-check", rv.checks.len());
        for c in &rv.checks {
            let now = c.observed.as_ref().map_or_else(|| c.error.clone().unwrap_or_default(), Value::to_string);
            println!(
                "  {} {:<22} expected {}  now {}",
                if c.holds { "✓" } else { "✗" },
                crate::protocol::text::inert(&c.check_id, 64),
                crate::protocol::text::inert(&c.expected.to_string(), 120),
                crate::protocol::text::inert(&now, 120)
            );
        }
        if let Some(f) = &rv.failure {
            println!("precondition_failed: {}", crate::protocol::text::inert(&f.detail, 400));
        }
        if let (Some(c), true) = (&corrected, rv.ok) {
            let c = crate::protocol::text::inert(&c.to_string(), usize::MAX);
            println!("approved as corrected: run this instead of what was proposed: {c}");
        }
    }
    // 0 only for a packet approved by a verified decision whose preconditions all hold: an
    // agent written as `check-preconditions X && run` never runs a pending packet, nor the
    // proposal of one the principal corrected (9: run the correction).
    Ok(match (phase, rv.ok) {
        ("pending", _) => EXIT_PENDING,
        (_, true) if corrected.is_some() => EXIT_CORRECTED,
        (_, true) => 0,
        (_, false) => EXIT_INVALID,
    })
}
