//! Governing one call against a spool (issue 17): publish the call's packet, judge it with the
//! composed verdict from the spool's verified chain, and wait for the principal's signed decision
//! when a person must decide. The hooks and the gateway are thin surfaces over this; `warrant
//! propose --wait` shares its wait ([`wait_for_decision`]).
//!
//! Fail closed everywhere: every error is an [`Outcome::Deny`] or an `Err` that the surfaces turn
//! into a deny; nothing here ever answers `Allow` for a packet it could not judge.

use crate::protocol::calls::{Classification, ToolCall};
use crate::protocol::decision::Verdict;
use crate::protocol::graduation::policy::PolicySet;
use crate::protocol::keys::PinnedKeys;
use crate::protocol::ladder::ActionPrecondition;
use crate::protocol::packet::DecisionState;
use crate::store::spool::{self, Scanner, Spool};
use serde_json::{Value, json};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Why a call could not be governed (each is a deny for the agent).
#[derive(Debug, thiserror::Error)]
pub enum GovernError {
    /// The spool directory does not exist.
    #[error("no spool at {0}: create it with `warrant init` (a missing spool is never an allow)")]
    NoSpool(PathBuf),
    /// No principal key is pinned, so no decision could ever verify.
    #[error("no principal key is pinned in {0}: pin the principal's key (`warrant keys pin`) first")]
    NoPinnedKey(PathBuf),
    /// The call's packet id exists with other content.
    #[error("packet {0} already exists with another call in it; refusing to reuse it")]
    Conflict(String),
    /// The packet this call wrote is not a valid packet (a defect, or the spool was tampered with).
    #[error("packet {id} is not valid: {reason}")]
    InvalidPacket {
        /// The packet id.
        id: String,
        /// Why.
        reason: String,
    },
    /// The policy files.
    #[error("{0}")]
    Policy(#[from] crate::protocol::graduation::policy::PolicyError),
    /// The pinned keys file.
    #[error("{0}")]
    Keys(#[from] crate::store::key_files::KeyError),
    /// The chain.
    #[error("{0}")]
    Chain(#[from] crate::store::chain_file::ChainError),
    /// I/O.
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// The answer for a call.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Run it: the gate allows it on its own, or the principal approved it.
    Allow {
        /// The packet.
        packet_id: String,
        /// Why, in words.
        reason: String,
        /// The principal signed an approval (not the gate on its own): of this packet, or a grant.
        by_principal: bool,
        /// The principal's grant that allowed it ([`crate::protocol::grant`]), if one did.
        grant: Option<String>,
    },
    /// A person must decide: the packet waits in the console.
    Hold {
        /// The packet.
        packet_id: String,
        /// The composed verdict's state (`review_required`, `human_only`, `deferred`).
        state: DecisionState,
        /// Why, in words.
        reason: String,
        /// What would let it run on its own, if anything (Trust Graduation's path).
        graduation: Option<Value>,
    },
    /// Do not run it.
    Deny {
        /// The packet, if one was published.
        packet_id: Option<String>,
        /// `blocked`, `refused`, `timeout`, `expired`, `quarantined`, `killed`,
        /// `precondition_failed` (and the gateway's `cancelled`).
        status: &'static str,
        /// Why, in words the agent can act on.
        reason: String,
        /// What would change it, if anything.
        remedy: Option<String>,
    },
}

impl Outcome {
    /// The packet id, if any.
    #[must_use]
    pub fn packet_id(&self) -> Option<&str> {
        match self {
            Outcome::Allow { packet_id, .. } | Outcome::Hold { packet_id, .. } => Some(packet_id),
            Outcome::Deny { packet_id, .. } => packet_id.as_deref(),
        }
    }

    /// The reason, in words, with the remedy when there is one.
    #[must_use]
    pub fn message(&self) -> String {
        match self {
            Outcome::Allow { reason, .. } | Outcome::Hold { reason, .. } => reason.clone(),
            Outcome::Deny { reason, remedy: Some(r), .. } => format!("{reason} ({r})"),
            Outcome::Deny { reason, .. } => reason.clone(),
        }
    }
}

/// A published call: its packet and what it is.
#[derive(Debug, Clone)]
pub struct Submitted {
    /// The packet id.
    pub packet_id: String,
    /// The packet's `content_hash` (what a decision must have signed).
    pub content_hash: String,
    /// The agent.
    pub agent: String,
    /// When it was published (the since of kill signals).
    pub at: time::OffsetDateTime,
    /// The classification.
    pub classification: Classification,
    /// The preconditions of the packet's contract as published, with the values observed when
    /// the call was proposed (`expected_at_approval`; `null` where nothing could be observed).
    pub preconditions: Vec<ActionPrecondition>,
    /// The answer now.
    pub outcome: Outcome,
    /// The class's `[timeouts]` entry in `policy.toml`, if it has one.
    pub timeout: Option<crate::protocol::graduation::policy::ClassTimeout>,
    /// The quorum an approval of the class needs (`[cosign]` in `policy.toml`), if any: a
    /// decision file releases the call only with that many co-signatures.
    pub quorum: Option<crate::protocol::decision::Quorum>,
}

impl Submitted {
    /// How long a host whose own wait is `host` (`--wait`) waits for the principal: capped by the
    /// class's `refuse_after` (`wait = "forever"`, or no entry, lets the host's wait stand).
    #[must_use]
    pub fn wait_for(&self, host: Duration) -> Duration {
        self.timeout.map_or(host, |t| t.cap(host))
    }
}

/// Governs calls against one spool with the policies and pinned keys of one configuration
/// directory.
#[derive(Debug)]
pub struct Governor {
    spool: Spool,
    config_dir: PathBuf,
    policies: PolicySet,
    pinned: PinnedKeys,
}

impl Governor {
    /// A governor for `spool`, reading `policy.toml` and the pinned keys from `config_dir` (and
    /// the spool's `policy.toml`). When another user owns the spool (agents run as their own
    /// users), only the spool's `policy.toml` counts, and it must be that user's, the
    /// principal's ([`load_policies`]): an agent cannot loosen the tool table from its own
    /// configuration directory.
    ///
    /// # Errors
    /// [`GovernError::NoSpool`] when the spool directory is missing, [`GovernError::NoPinnedKey`]
    /// when no key is pinned, policy and key-file errors.
    pub fn open(spool: Spool, config_dir: &Path) -> Result<Self, GovernError> {
        if !spool.root().is_dir() {
            return Err(GovernError::NoSpool(spool.root().to_owned()));
        }
        let policies = load_policies(&spool, config_dir)?;
        let pinned = PinnedKeys::load(config_dir)?;
        if pinned.is_empty() {
            return Err(GovernError::NoPinnedKey(config_dir.to_owned()));
        }
        Ok(Self { spool, config_dir: config_dir.to_owned(), policies, pinned })
    }

    /// The policy set.
    #[must_use]
    pub fn policies(&self) -> &PolicySet {
        &self.policies
    }

    /// The spool.
    #[must_use]
    pub fn spool(&self) -> &Spool {
        &self.spool
    }

    /// Classifies `call`, publishes its packet (or finds the one a retry of the same call made:
    /// same id, same call) and judges it.
    ///
    /// The preconditions the tool table declares for the call ([`crate::protocol::calls::action_preconditions`])
    /// are observed now, within the principal's `[preconditions] roots`, and published as their
    /// `expected_at_approval`: the world the call was proposed in. The principal's approval
    /// must then find them unchanged (or it is refused with `precondition_failed`), and the
    /// pending re-check blocks the packet as soon as one changes. One that cannot be observed
    /// (outside the roots, no roots declared, a symlink, over the budget) is published with
    /// `null` and fails the pending re-check, so the call is blocked with the reason. A file that
    /// does not exist is `null` for `file.sha256` (recorded again at approval) and `false` for
    /// `file.exists`.
    ///
    /// The packet expires `expires_in` after it is published (the caller's wait, capped by the
    /// class's `refuse_after` in `policy.toml`'s `[timeouts]`): a call the principal did not
    /// decide in time is never run later, and the console shows it expired.
    ///
    /// # Errors
    /// [`GovernError`]: the surfaces answer every one with a deny.
    pub fn submit(
        &self,
        call: &ToolCall,
        call_id: Option<&str>,
        expires_in: Option<Duration>,
    ) -> Result<Submitted, GovernError> {
        let classification =
            crate::protocol::calls::classify(&self.policies, &call.tool, &call.input, &call.annotations);
        // The class's `refuse_after` caps the wait: the packet expires with it.
        let timeout = self.policies.class_timeout(&classification.class);
        let expires_in = match (expires_in, timeout) {
            (Some(d), Some(t)) => Some(t.cap(d)),
            (None, Some(t)) => t.refuse_after(),
            (d, None) => d,
        };
        let id = crate::protocol::calls::packet_id(call, call_id);
        let now = time::OffsetDateTime::now_utc();
        let mut doc = crate::protocol::calls::call_packet(
            call,
            &classification,
            &self.policies,
            &id,
            &crate::protocol::clock::format_rfc3339(now),
        );
        if let Some(t) = expires_in.and_then(|d| time::Duration::try_from(d).ok()).and_then(|d| now.checked_add(d)) {
            doc["expires_at"] = json!(crate::protocol::clock::format_rfc3339(t));
        }
        self.observe_at_proposal(&mut doc);
        self.spool.ensure()?;
        let published = match self.spool.publish_new(&self.spool.packets_dir(), &id, &doc) {
            Ok(_) => doc,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                // A retried hook: the same call must be in it (its time, and the values its
                // preconditions had when it was first proposed, aside).
                let bytes = spool::read_limited(&self.spool.packets_dir().join(format!("{id}.json")))
                    .map_err(|e| GovernError::InvalidPacket { id: id.clone(), reason: e.to_string() })?;
                let old = crate::protocol::canonical::parse_untrusted(&bytes)
                    .map_err(|reason| GovernError::InvalidPacket { id: id.clone(), reason })?;
                // Everything but the time it was made and when it expires, and the values its
                // preconditions had when first proposed, must be the same; and a packet that
                // expires must have found one that expires too.
                let comparable = |d: &Value| {
                    let mut d = d.clone();
                    if let Some(m) = d.as_object_mut() {
                        m.remove("created_at");
                        m.remove("expires_at");
                        if let Some(g) = m.get("governance").map(without_expected) {
                            m.insert("governance".into(), g);
                        }
                    }
                    d
                };
                let same = comparable(&old) == comparable(&doc)
                    && (doc.get("expires_at").is_none() || old.get("expires_at").is_some());
                if !same {
                    return Err(GovernError::Conflict(id));
                }
                old
            }
            Err(e) => return Err(e.into()),
        };
        let preconditions = serde_json::from_value::<Vec<ActionPrecondition>>(
            published["governance"]["contract"]["preconditions"].clone(),
        )
        .map_err(|e| GovernError::InvalidPacket { id: id.clone(), reason: format!("contract.preconditions: {e}") })?;
        let (content_hash, outcome) = self.judge(&id)?;
        // What was judged is what this call published (or the retried call's packet it found):
        // an agent that swaps the file between the two gets a refusal, never a verdict on other
        // content.
        if content_hash != crate::protocol::canonical::canonical_hash(&published) {
            return Err(GovernError::Conflict(id));
        }
        let quorum = self.policies.cosign(&classification.class).cloned();
        Ok(Submitted {
            packet_id: id,
            content_hash,
            agent: call.agent.clone(),
            at: now,
            classification,
            preconditions,
            outcome,
            timeout,
            quorum,
        })
    }

    /// Fills the `expected_at_approval` of a call packet's preconditions with what is observed
    /// now ([`Governor::submit`]); one that cannot be observed stays `null`.
    fn observe_at_proposal(&self, doc: &mut Value) {
        let Some(list) = doc.pointer_mut("/governance/contract/preconditions").and_then(Value::as_array_mut) else {
            return;
        };
        if list.is_empty() {
            return;
        }
        let Ok(pre) = serde_json::from_value::<Vec<ActionPrecondition>>(Value::Array(list.clone())) else { return };
        let observer = crate::preconditions::Observer::for_policies(&self.policies, Some(&self.config_dir));
        for (entry, observed) in list.iter_mut().zip(observer.observe_each(&pre)) {
            if let Some(Ok(v)) = observed {
                entry["expected_at_approval"] = v;
            }
        }
    }

    /// The check just before an allowed call runs (two-phase execution, `lodestar-and-tiers.md`
    /// §A3): the preconditions the principal's signed decision recorded at approval, re-observed
    /// now; for a call the gate allowed on its own (no decision file), the packet's own, as
    /// observed when it was proposed. `None` when they all hold or there are none; else the
    /// refusal (`precondition_failed`, or `blocked` when the decision cannot be read or does not
    /// verify against the pinned keys and the packet's content hash).
    ///
    /// The gateway calls this just before forwarding; a hook just before answering `allow` (the
    /// host runs the tool after that, so for a hook the window between the answer and the run
    /// stays open).
    ///
    /// `allowed` is the outcome about to be answered: one the principal's approval of this packet
    /// allowed (`by_principal`, no grant) runs only with its decision file there and verifying:
    /// a file removed after the judgement blocks the call, never falls back to the packet's own
    /// preconditions.
    ///
    /// A decision file not there yet for an approval the chain holds is waited for, at most
    /// [`DECISION_FILE_GRACE`].
    #[must_use]
    pub fn recheck_before_run(&self, s: &Submitted, allowed: &Outcome) -> Option<Outcome> {
        let id = s.packet_id.as_str();
        let fail = |status: &'static str, reason: String| {
            Some(Outcome::Deny { packet_id: Some(id.to_owned()), status, reason, remedy: None })
        };
        let path = self.spool.decision_path(id);
        let exists = || !matches!(std::fs::symlink_metadata(&path), Err(e) if e.kind() == io::ErrorKind::NotFound);
        let mut decided = exists();
        let by_approval = matches!(allowed, Outcome::Allow { by_principal: true, grant: None, .. });
        // The principal's process writes the decision file just after the chain record and its
        // checkpoint: a call judged on the chain in that moment waits for the file (at most
        // `DECISION_FILE_GRACE`), and is blocked only when it does not come.
        let until = Instant::now() + DECISION_FILE_GRACE;
        while by_approval && !decided && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
            decided = exists();
        }
        if !decided && by_approval {
            return Some(Outcome::Deny {
                packet_id: Some(id.to_owned()),
                status: "blocked",
                reason: format!(
                    "the principal's decision on {id} is not in decisions/ (removed?): nothing runs without it"
                ),
                remedy: Some("`warrant list` (the principal) writes lost decision files again from the chain".into()),
            });
        }
        let (pre, when) = if decided {
            let bytes = match spool::read_limited(&path) {
                Ok(b) => b,
                Err(e) => return fail("blocked", format!("could not read the decision on {id}: {e}")),
            };
            let decision =
                crate::protocol::canonical::parse_untrusted(&bytes).map_err(|e| e.to_string()).and_then(|v| {
                    crate::protocol::decision::verify_decision_file_under(
                        &v,
                        id,
                        Some(&s.content_hash),
                        &self.pinned,
                        s.quorum.as_ref(),
                    )
                    .map_err(|e| e.to_string())
                });
            let d = match decision {
                Ok(d) if d.verdict == Verdict::Approve => d,
                Ok(d) if d.system.is_some() => return Some(timed_out(id, "")),
                Ok(d) => {
                    return fail(
                        "refused",
                        format!("{id} was refused by {}", crate::protocol::text::inert(&d.principal, 200)),
                    );
                }
                Err(e) => return fail("blocked", format!("the decision on {id} does not verify: {e}")),
            };
            let recorded: Option<Vec<ActionPrecondition>> = d
                .preconditions
                .iter()
                .map(|p| {
                    Some(ActionPrecondition {
                        check_id: p.get("check_id")?.as_str()?.to_owned(),
                        parameters: p.get("parameters").cloned().unwrap_or(Value::Null),
                        expected_at_approval: p.get("expected_at_approval").cloned().unwrap_or(Value::Null),
                        must_revalidate_at_execution: true,
                    })
                })
                .collect();
            let Some(recorded) = recorded else {
                return fail("blocked", format!("the decision on {id} records a precondition warrant cannot read"));
            };
            (recorded, format!("the principal approved {id}"))
        } else {
            (s.preconditions.clone(), format!("{id} was proposed"))
        };
        if !pre.iter().any(|p| p.must_revalidate_at_execution) {
            return None;
        }
        let observer = crate::preconditions::Observer::for_policies(&self.policies, Some(&self.config_dir));
        let rv = observer.recheck(&pre);
        if rv.ok {
            return None;
        }
        let detail = rv.failure.map_or_else(|| "a precondition changed".to_owned(), |f| f.detail);
        fail("precondition_failed", format!("the world changed since {when}: {detail}"))
    }

    /// Judges the packet `id` as the console would now: its verified decision when the chain
    /// has one, else the composed verdict. Returns the packet's `content_hash` and the outcome.
    ///
    /// # Errors
    /// [`GovernError::InvalidPacket`] when the packet is missing or invalid; chain and I/O errors.
    pub fn judge(&self, id: &str) -> Result<(String, Outcome), GovernError> {
        let mut scanner = Scanner::new();
        let mut snap = scanner.scan_packets_selected(&self.spool, recent_or_foreign)?;
        if snap.packet(id).is_none() {
            // The packet judged arrived before the last quiet gap (a call held for a while, then
            // judged again while it waits): judged with every arrival, as the console judges it.
            snap = scanner.scan_packets_selected(&self.spool, |metas| vec![true; metas.len()])?;
        }
        // The receipts a pinned gateway signed are the gate's evidence too (observed outcomes).
        snap.receipts = spool::observed_receipts(&self.spool, &self.config_dir);
        let Some(entry) = snap.packet(id).cloned() else {
            let reason = snap
                .invalid
                .iter()
                .find(|f| f.name == format!("{id}.json"))
                .map_or_else(|| "not in the spool".to_owned(), |f| f.reason.to_string());
            return Err(GovernError::InvalidPacket { id: id.to_owned(), reason });
        };
        let hash = entry.packet.content_hash.clone();
        let view = spool::verify_chain(&self.spool, &self.pinned)?;
        if !view.report.is_valid() {
            // A broken chain: nothing runs, not even what it records as approved.
            let first = view.report.first().map(|f| f.to_string()).unwrap_or_default();
            return Ok((
                hash,
                Outcome::Deny {
                    packet_id: Some(id.to_owned()),
                    status: "blocked",
                    reason: format!("the chain does not verify ({})", crate::protocol::text::inert(&first, 400)),
                    remedy: Some("the principal must repair the chain (`warrant verify`)".into()),
                },
            ));
        }
        if let Some(d) = view.decisions.get(id) {
            let by = crate::protocol::text::inert(&d.signed_by(), 400);
            // A class that needs several principals: an approval that does not meet the policy's
            // quorum (signed under other terms, or before the policy asked for one) holds nothing.
            if d.verdict == Verdict::Approve
                && let Some(q) = self.policies.cosign(&entry.packet.action_class)
                && !d.meets(q)
            {
                return Ok((
                    hash,
                    Outcome::Deny {
                        packet_id: Some(id.to_owned()),
                        status: "blocked",
                        reason: format!(
                            "{id} needs the approval of {} (policy.toml [cosign]); the chain's approval is {by}'s",
                            q.describe()
                        ),
                        remedy: None,
                    },
                ));
            }
            let why =
                d.reason.as_deref().map(|r| format!(": {}", crate::protocol::text::inert(r, 2000))).unwrap_or_default();
            return Ok((
                hash,
                match (d.verdict, d.packet_hash == entry.packet.content_hash) {
                    (_, false) => Outcome::Deny {
                        packet_id: Some(id.to_owned()),
                        status: "blocked",
                        reason: format!("{id} changed after {by} decided it"),
                        remedy: None,
                    },
                    (Verdict::Approve, true) => self.use_approval(id, format!("approved by {by}{why}")),
                    (Verdict::Refuse, true) if d.system.is_some() => timed_out(id, &why),
                    (Verdict::Refuse, true) => Outcome::Deny {
                        packet_id: Some(id.to_owned()),
                        status: "refused",
                        reason: format!("refused by {by}{why}"),
                        remedy: None,
                    },
                },
            ));
        }
        if let Some(at) = expired(&entry.packet) {
            return Ok((hash, expired_undecided(id, at)));
        }
        let a = crate::assess::assess_now(&self.policies, &self.config_dir, &snap, &view, "local");
        let Some(v) = a.verdicts.get(id) else {
            return Err(GovernError::InvalidPacket { id: id.to_owned(), reason: "not assessed".into() });
        };
        let decisive = v.models.iter().find(|m| m.model == v.decisive);
        let reason =
            decisive.map_or_else(|| v.state.as_str().to_owned(), |m| format!("{}: {}", m.model.as_str(), m.reason));
        let class = self.policies.normalize(&entry.packet.action_class);
        let outcome = match v.state {
            DecisionState::AllowedWithConstraints => {
                // The class's constraints bind whatever runs the call: the ones a hook or the
                // gateway can check on the tool's input are checked here; the others, and any
                // that fail, hold the call for the principal (`docs/conformance.md`).
                let Some(gate) = a.gate.get(id) else {
                    return Err(GovernError::InvalidPacket { id: id.to_owned(), reason: "no gate decision".into() });
                };
                let constraints = gate.constraints.clone().into_owned();
                // The count is of the agent's own packets and receipts: where the agent runs as
                // another user than the spool's owner, it may remove them (its own files, in its
                // group's directories), so the count cannot be trusted and the principal decides.
                let counted = spool::owned_by_me(&self.spool);
                let recent = match crate::protocol::calls::rate_window(&constraints) {
                    Some(window) if counted => {
                        Some(self.recent_calls(&entry.packet, &class, window, &view.decisions)?)
                    }
                    _ => None,
                };
                let now = crate::protocol::clock::unix_seconds(&crate::protocol::clock::now_rfc3339())
                    .unwrap_or(f64::INFINITY);
                let mut failures = crate::protocol::calls::constraint_failures(&constraints, now, recent);
                if !counted && constraints.contains_key("rate_limit") {
                    failures.push(
                        "`rate_limit` cannot be counted by the agent's own user (it could remove the files counted)"
                            .to_owned(),
                    );
                }
                let keys: Vec<&str> = constraints
                    .keys()
                    .map(String::as_str)
                    .filter(|k| crate::protocol::graduation::gate::CONSTRAINT_VOCABULARY.contains(k))
                    .collect();
                if failures.is_empty() && recent.is_some() {
                    // The call counts against the rate limit from now on, whatever happens to its
                    // packet: recorded before it runs, or it does not run. A packet that expired
                    // before its record was written may have been left out of another call's count
                    // in between (an expired packet with no record does not count): it does not
                    // run either.
                    if let Err(e) = spool::record_gate_run(&self.spool, id) {
                        failures.push(format!("`rate_limit`: the call could not be recorded for the count ({e})"));
                    } else if let Some(at) = expired(&entry.packet) {
                        return Ok((hash, expired_undecided(id, at)));
                    }
                }
                if failures.is_empty() {
                    Outcome::Allow {
                        packet_id: id.to_owned(),
                        reason: format!("the gate allows it within its constraints ({}: they hold)", keys.join(", ")),
                        by_principal: false,
                        grant: None,
                    }
                } else {
                    Outcome::Hold {
                        packet_id: id.to_owned(),
                        state: DecisionState::AllowedWithConstraints,
                        reason: format!(
                            "{reason}; `{class}` runs on its own only within its constraints, and the principal must decide this call: {}",
                            failures.join("; ")
                        ),
                        graduation: None,
                    }
                }
            }
            DecisionState::Allowed => Outcome::Allow {
                packet_id: id.to_owned(),
                reason: format!("the gate allows it ({reason})"),
                by_principal: false,
                grant: None,
            },
            DecisionState::Blocked => Outcome::Deny {
                packet_id: Some(id.to_owned()),
                status: "blocked",
                reason,
                remedy: v.why_not_approvable().map(|(_, remedy)| remedy),
            },
            state => Outcome::Hold {
                packet_id: id.to_owned(),
                state,
                reason: match a.gate.get(id).and_then(|tg| crate::protocol::verdict::graduation_hint(v, tg, &class)) {
                    Some(hint) => format!("{reason} ({hint})"),
                    None => reason,
                },
                graduation: a.gate.get(id).and_then(|d| d.graduation_path.as_ref().map(|g| g.to_json())),
            },
        };
        // A person would decide: a live grant of the principal's may answer instead. Never for
        // what is blocked or human-only, and never for a class held at its constraints (a grant
        // does not lift a `rate_limit` or an `expires_at` the class runs within).
        let outcome = match outcome {
            Outcome::Hold { state: DecisionState::ReviewRequired | DecisionState::Deferred, .. }
                if !view.grants.is_empty() =>
            {
                self.use_grant(&entry.packet, &view.grants)?.unwrap_or(outcome)
            }
            o => o,
        };
        Ok((hash, outcome))
    }

    /// The first live grant that covers the call packet `packet` and has a use left, claimed for
    /// it ([`spool::claim_grant_use`]): the call runs on it. `None` when no grant covers it, or
    /// every covering grant's uses are taken.
    ///
    /// # Errors
    /// I/O errors claiming a use.
    fn use_grant(
        &self,
        packet: &crate::protocol::packet::Packet,
        grants: &crate::protocol::grant::GrantBook,
    ) -> Result<Option<Outcome>, GovernError> {
        let class = self.policies.normalize(&packet.action_class);
        if self.policies.policy(&class).is_human_only() || self.policies.cosign(&class).is_some() {
            return Ok(None);
        }
        let Some(facts) = crate::protocol::grant::CallFacts::of_packet(packet, &self.policies) else { return Ok(None) };
        let now = crate::protocol::clock::unix_seconds(&crate::protocol::clock::now_rfc3339()).unwrap_or(f64::INFINITY);
        for g in grants.covering(&facts, now) {
            if let Some(n) = spool::claim_grant_use(&self.spool, g, &packet.id)? {
                let by = crate::protocol::text::inert(&g.principal, 200);
                let nth = g.max_uses.map(|max| format!(", use {n} of {max}")).unwrap_or_default();
                return Ok(Some(Outcome::Allow {
                    packet_id: packet.id.clone(),
                    reason: format!(
                        "allowed by {by}'s grant {}{nth}: {}",
                        g.grant_id,
                        crate::protocol::text::inert(&g.describe(), 2000)
                    ),
                    by_principal: true,
                    grant: Some(g.grant_id.clone()),
                }));
            }
        }
        Ok(None)
    }

    /// The principal's approval of `id`, used once ([`spool::claim_approval`]): `Allow` with
    /// `reason` for the first caller, a refusal (`consumed`) for any later one, and a block when
    /// the use cannot be recorded.
    fn use_approval(&self, id: &str, reason: String) -> Outcome {
        match spool::claim_approval(&self.spool, id) {
            Ok(true) => Outcome::Allow { packet_id: id.to_owned(), reason, by_principal: true, grant: None },
            Ok(false) => Outcome::Deny {
                packet_id: Some(id.to_owned()),
                status: "consumed",
                reason: format!("the approval of {id} was already used by another call (an approval answers one call)"),
                remedy: Some("make the call again for a new approval, or ask the principal for a grant".into()),
            },
            Err(e) => Outcome::Deny {
                packet_id: Some(id.to_owned()),
                status: "blocked",
                reason: format!("could not record the use of the approval of {id}: {e}"),
                remedy: None,
            },
        }
    }

    /// How many calls of `class` the packet's agent ran on its own in the last `window` seconds
    /// before `packet` (a `rate_limit` constraint bounds the post-approval boundary: what runs
    /// with no person). A call packet of the agent and class that arrived in the window (its
    /// inode change time) with no decision of the principal counts while it has not expired (a
    /// held call still waiting counts too: the count errs on the side of holding), and after
    /// that when the gate let it run ([`spool::record_gate_run`], written before it ran) or a
    /// receipt names it (one that expired with neither was held and never ran). Every call packet
    /// expires with its hook's wait, whatever the answer: without the record, a call that ran
    /// stopped counting then. Reads every packet, receipt and record in the spool.
    fn recent_calls(
        &self,
        packet: &crate::protocol::packet::Packet,
        class: &str,
        window: u64,
        decisions: &std::collections::HashMap<String, spool::ChainDecision>,
    ) -> Result<u64, GovernError> {
        let snap = Scanner::new().scan(&self.spool)?;
        // When each packet arrived (its inode change time, which no one can set back), not the
        // time it declares.
        let now = crate::protocol::clock::unix_seconds(&crate::protocol::clock::now_rfc3339()).unwrap_or(f64::INFINITY);
        let since = now - window as f64;
        // Read after `now`: a call that ran was recorded before its packet expired
        // (`Governor::judge`), so a packet expired by `now` has its record here.
        let recorded = spool::gate_runs(&self.spool)?;
        let ran: std::collections::HashSet<&str> = snap
            .receipts
            .iter()
            .filter_map(|r| r.packet_id.as_deref())
            .chain(recorded.iter().map(String::as_str))
            .collect();
        let n = snap
            .packets
            .iter()
            .filter(|e| {
                let p = &e.packet;
                p.id != packet.id
                    && p.agent == packet.agent
                    && crate::protocol::calls::is_call_packet(p)
                    && self.policies.normalize(&p.action_class) == class
                    && e.arrived >= since
                    && !decisions.contains_key(&p.id)
                    && (ran.contains(p.id.as_str())
                        || !p
                            .expires_at
                            .as_deref()
                            .and_then(crate::protocol::clock::unix_seconds)
                            .is_some_and(|t| t <= now))
            })
            .count();
        Ok(n as u64)
    }

    /// Waits up to `timeout` for the principal's decision on a held call ([`wait_for_decision`]),
    /// judging the packet again every [`REJUDGE_EVERY`] ([`Governor::judge`]): a call whose class
    /// graduated, or whose notebook the principal raised, while it waited runs then (the console
    /// no longer lists it as waiting); one that the world or the principal's controls now block
    /// (a precondition changed, the agent quarantined) is refused then, with the reason, not at
    /// the timeout.
    #[must_use]
    pub fn wait(&self, s: &Submitted, timeout: Duration) -> Outcome {
        let timeout = s.wait_for(timeout);
        let deadline = Instant::now() + timeout;
        let id = s.packet_id.clone();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let waited = wait_for_decision(
                &self.spool,
                &id,
                &s.content_hash,
                &self.pinned,
                &s.agent,
                s.at,
                None,
                left.min(REJUDGE_EVERY),
                s.quorum.as_ref(),
            );
            if waited != Waited::Timeout || left <= REJUDGE_EVERY {
                return self.outcome_of(s, waited, timeout);
            }
            // Judged with the policies and keys as they are now, not as they were when the call
            // was proposed: a table the principal tightened meanwhile applies.
            match Governor::open(self.spool.clone(), &self.config_dir).and_then(|g| g.judge(&id)) {
                Ok((hash, o @ (Outcome::Allow { .. } | Outcome::Deny { .. }))) if hash == s.content_hash => return o,
                Ok((hash, _)) if hash == s.content_hash => {}
                Ok(_) => {
                    return Outcome::Deny {
                        packet_id: Some(id.clone()),
                        status: "blocked",
                        reason: format!("{id} changed while it waited"),
                        remedy: None,
                    };
                }
                Err(e) => {
                    return Outcome::Deny {
                        packet_id: Some(id.clone()),
                        status: "blocked",
                        reason: format!("could not judge {id} again while it waited: {e}"),
                        remedy: None,
                    };
                }
            }
        }
    }

    /// The answer for a held call whose wait (of `timeout` in all) ended with `waited`.
    fn outcome_of(&self, s: &Submitted, waited: Waited, timeout: Duration) -> Outcome {
        let id = s.packet_id.clone();
        match waited {
            Waited::Decided(d) => {
                let why = d.reason.map(|r| format!(": {}", crate::protocol::text::inert(&r, 2000))).unwrap_or_default();
                let by = if d.cosigners.is_empty() { d.principal } else { d.cosigners.join(" + ") };
                let by = crate::protocol::text::inert(&by, 400);
                match d.verdict {
                    Verdict::Approve => self.use_approval(&id, format!("approved by {by}{why}")),
                    Verdict::Refuse if d.system.is_some() => timed_out(&id, &why),
                    Verdict::Refuse => Outcome::Deny {
                        packet_id: Some(id),
                        status: "refused",
                        reason: format!("refused by {by}{why}"),
                        remedy: None,
                    },
                }
            }
            Waited::Expired => Outcome::Deny {
                packet_id: Some(id),
                status: "expired",
                reason: "the packet expired undecided".into(),
                remedy: Some("propose it again".into()),
            },
            Waited::Stopped(why) => Outcome::Deny {
                packet_id: Some(id),
                status: "killed",
                reason: format!("{} was killed by the principal{why}", s.agent),
                remedy: None,
            },
            Waited::Quarantined(why) => Outcome::Deny {
                packet_id: Some(id),
                status: "quarantined",
                reason: format!("{} is quarantined by the principal{why}", s.agent),
                remedy: Some(format!("the principal must release {} from quarantine", s.agent)),
            },
            Waited::Unverified(why) => Outcome::Deny {
                packet_id: Some(id),
                status: "blocked",
                reason: format!("the decision does not verify: {why}"),
                remedy: None,
            },
            Waited::Timeout => Outcome::Deny {
                packet_id: Some(id.clone()),
                status: "timeout",
                reason: match &s.outcome {
                    Outcome::Hold { state, reason, .. } => format!(
                        "no decision on {id} within {}s; it was held ({}): {reason}",
                        timeout.as_secs_f64(),
                        state.as_str()
                    ),
                    _ => format!("no decision on {id} within {}s", timeout.as_secs_f64()),
                },
                remedy: Some(format!("ask the principal to decide {id} in warrant, then try again")),
            },
        }
    }
}

/// When `packet` expired (its `expires_at`, if that is now or before).
fn expired(packet: &crate::protocol::packet::Packet) -> Option<&str> {
    packet
        .expires_at
        .as_deref()
        .filter(|t| crate::protocol::clock::parse_rfc3339(t).is_some_and(|t| t <= time::OffsetDateTime::now_utc()))
}

/// The answer for the call packet `id` that expired at `at` before it could run.
fn expired_undecided(id: &str, at: &str) -> Outcome {
    Outcome::Deny {
        packet_id: Some(id.to_owned()),
        status: "expired",
        reason: format!("{id} expired undecided at {at}"),
        remedy: Some("make the call again".into()),
    }
}

/// How often a held call is judged again while it waits ([`Governor::wait`]).
pub const REJUDGE_EVERY: Duration = Duration::from_secs(2);

/// How long a call the principal's approval allowed waits for the decision file the chain
/// already holds the approval of ([`Governor::recheck_before_run`]): the principal's process
/// writes it right after the chain record and the checkpoint, so a judgement of the chain in
/// between sees the approval a moment before its file.
pub const DECISION_FILE_GRACE: Duration = Duration::from_secs(2);

/// The policy set a hook or the gateway governs with: `<config_dir>/policy.toml` and the spool's
/// ([`PolicySet::load`]); when another user owns the spool (the principal, with agents running
/// as their own users), the spool's alone, which must be that user's own file
/// ([`PolicySet::load_owned`]), so an agent cannot loosen the tool table from its own
/// configuration directory.
///
/// # Errors
/// [`GovernError::Io`] when the spool cannot be read; policy errors.
pub fn load_policies(spool: &Spool, config_dir: &Path) -> Result<PolicySet, GovernError> {
    use std::os::unix::fs::MetadataExt as _;
    // The directory itself, through a symbolic link the agent may own.
    let principal = std::fs::metadata(spool.root())?.uid();
    let owner = (principal != rustix::process::geteuid().as_raw()).then_some(principal);
    Ok(PolicySet::load_owned(config_dir, Some(spool.root()), owner)?)
}

/// A packet's `governance` with every precondition's `expected_at_approval` set to `null`: two
/// proposals of one call are the same call whatever the world was when each was observed.
fn without_expected(governance: &Value) -> Value {
    let mut g = governance.clone();
    if let Some(list) = g.pointer_mut("/contract/preconditions").and_then(Value::as_array_mut) {
        for p in list.iter_mut().filter_map(Value::as_object_mut) {
            if p.contains_key("expected_at_approval") {
                p.insert("expected_at_approval".into(), Value::Null);
            }
        }
    }
    g
}

/// Which packet files a call's verdict needs ([`Scanner::scan_packets_selected`]): the ones
/// that can change it. The rate limit replays an agent's arrivals (inode change times) with
/// token buckets that are full again after `burst / rate` seconds without one (2 s in every ring
/// of the default table), so the arrivals before the last such quiet gap in the whole directory
/// cannot change any bucket now: the files from that gap on are kept. Who may speak for an agent
/// is, by default, the owner of its first packet ever: while every file is this process's
/// user's, that is this user whatever the agent, so old files are not needed; when another user
/// has published anything, every file is kept and the verdict is exactly the console's.
fn recent_or_foreign(metas: &[std::fs::Metadata]) -> Vec<bool> {
    use std::os::unix::fs::MetadataExt as _;
    let me = rustix::process::geteuid().as_raw();
    if metas.iter().any(|m| m.uid() != me) {
        return vec![true; metas.len()];
    }
    let quiet = crate::protocol::rings::Ring::ALL
        .iter()
        .map(|r| {
            let l = crate::protocol::rings::rate::default_limits(*r);
            l.burst / l.rate
        })
        .fold(0.0_f64, f64::max)
        + 1.0;
    let ctime = |m: &std::fs::Metadata| m.ctime() as f64 + f64::from(m.ctime_nsec() as u32) * 1e-9;
    let mut times: Vec<f64> = metas.iter().map(ctime).collect();
    times.sort_by(|a, b| b.total_cmp(a));
    // From the newest back to the first gap of `quiet` seconds.
    let from = times.windows(2).find(|w| w[0] - w[1] >= quiet).map_or(f64::NEG_INFINITY, |w| w[0]);
    metas.iter().map(|m| ctime(m) >= from).collect()
}

/// How a wait for a decision ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Waited {
    /// A decision file verified against the pinned keys and the packet's content.
    Decided(crate::protocol::decision::VerifiedDecision),
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

/// The answer for a packet the principal's console refused as a system decision when its class's
/// wait ran out (`[timeouts] sign_refusal`): `timeout`, not a person's refusal. `why` is `": "`
/// and the signed reason, or empty.
fn timed_out(id: &str, why: &str) -> Outcome {
    Outcome::Deny {
        packet_id: Some(id.to_owned()),
        status: "timeout",
        reason: format!("{id} was not decided in time{why}"),
        remedy: Some(format!("ask the principal to decide a new request in warrant ({id} can no longer run)")),
    }
}

/// Waits for `decisions/<id>.json` to hold a decision that verifies against `pinned` for the
/// packet content `content_hash`, polling every 50 ms, until `timeout`, the packet's expiry
/// (`expires_at`), or a kill or quarantine signal for `agent` (a kill counts only when given at
/// or after `since`). A decision file that does not verify is reported once on stderr and
/// ignored: it is not a decision.
#[allow(clippy::too_many_arguments)]
#[must_use]
pub fn wait_for_decision(
    spool: &Spool,
    id: &str,
    content_hash: &str,
    pinned: &PinnedKeys,
    agent: &str,
    since: time::OffsetDateTime,
    expires_at: Option<time::OffsetDateTime>,
    timeout: Duration,
    quorum: Option<&crate::protocol::decision::Quorum>,
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
                    .and_then(|b| crate::protocol::canonical::parse_untrusted(&b).map_err(|e| format!("not JSON: {e}")))
                    .and_then(|v| {
                        crate::protocol::decision::verify_decision_file_under(
                            &v,
                            id,
                            Some(content_hash),
                            pinned,
                            quorum,
                        )
                        .map_err(|e| e.to_string())
                    });
                match verdict {
                    Ok(d) => return Waited::Decided(d),
                    Err(e) => {
                        eprintln!(
                            "warrant: ignoring decision file {}: {}",
                            decision_path.display(),
                            crate::protocol::text::inert(&e, 2000)
                        );
                        rejected = Some(stamp);
                    }
                }
            }
        }
        if expires_at.is_some_and(|t| time::OffsetDateTime::now_utc() >= t) {
            return Waited::Expired;
        }
        match standing_signal(spool, agent, since) {
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
/// `agent` there (a stop given since `since`, a quarantine in force: the signals of
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
    remote: &crate::store::jetstream::JetStreamSpool,
    id: &str,
    content_hash: &str,
    pinned: &PinnedKeys,
    agent: &str,
    since: time::OffsetDateTime,
    expires_at: Option<time::OffsetDateTime>,
    timeout: Duration,
    quorum: Option<&crate::protocol::decision::Quorum>,
) -> Result<Waited, crate::store::jetstream::JsError> {
    use crate::store::jetstream::{Awaited, JsError};
    let until_expiry = expires_at.map(|t| {
        let left = t - time::OffsetDateTime::now_utc();
        Duration::try_from(left).unwrap_or(Duration::ZERO)
    });
    let (wait, expiry_first) = match until_expiry {
        Some(e) if e < timeout => (e, true),
        _ => (timeout, false),
    };
    let ran_out = if expiry_first { Waited::Expired } else { Waited::Timeout };
    let applies = |bytes: &[u8]| signal_of(bytes, agent, since).is_some();
    let decision = match remote.wait_decision_or_signal(agent, id, wait, applies) {
        Ok(Awaited::Decision(d)) => d,
        Ok(Awaited::Signal(bytes)) => {
            return Ok(match signal_of(&bytes, agent, since) {
                Some(Signal::Stopped(why)) => Waited::Stopped(why),
                Some(Signal::Quarantined(why)) => Waited::Quarantined(why),
                None => ran_out,
            });
        }
        Err(JsError::Timeout { .. }) => return Ok(ran_out),
        Err(e) => return Err(e),
    };
    let verdict = crate::protocol::canonical::parse_untrusted(&decision.bytes)
        .map_err(|e| format!("not JSON: {e}"))
        .and_then(|v| {
            crate::protocol::decision::verify_decision_file_under(&v, id, Some(content_hash), pinned, quorum)
                .map_err(|e| e.to_string())
        });
    match verdict {
        Ok(d) => Ok(Waited::Decided(d)),
        // The key is written once: no other decision can follow, and this one is none.
        Err(e) => Ok(Waited::Unverified(crate::protocol::text::inert(&e, 2000))),
    }
}

/// What the principal told an agent through `signals/<agent>.json`.
enum Signal {
    /// `agent kill`: `": <reason>"` or empty.
    Stopped(String),
    /// `agent quarantine`: `": <reason>"` or empty.
    Quarantined(String),
}

/// Reads `agent`'s signal; `None` when there is none that applies.
fn standing_signal(spool: &Spool, agent: &str, since: time::OffsetDateTime) -> Option<Signal> {
    if !crate::protocol::packet::is_safe_id(agent) {
        return None;
    }
    let bytes = spool::read_limited(&spool.signals_dir().join(format!("{agent}.json"))).ok()?;
    signal_of(&bytes, agent, since)
}

/// The signal `bytes` (a `signals/<agent>.json`, or its copy in a store) tell `agent`, waiting
/// since `since`: a stop given since then (a second's leeway), or a quarantine in force. `None`
/// for anything else (a release, another agent's, an older stop, a malformed one).
fn signal_of(bytes: &[u8], agent: &str, since: time::OffsetDateTime) -> Option<Signal> {
    let v = crate::protocol::canonical::parse_untrusted(bytes).ok()?;
    let at = v.get("at").and_then(Value::as_str).and_then(crate::protocol::clock::parse_rfc3339)?;
    if v.get("agent").and_then(Value::as_str) != Some(agent) {
        return None;
    }
    let reason = v
        .get("reason")
        .and_then(Value::as_str)
        .map(|r| format!(": {}", crate::protocol::text::inert(r, 400)))
        .unwrap_or_default();
    match v.get("type").and_then(Value::as_str) {
        Some("warrant_stop") if at >= since - time::Duration::seconds(1) => Some(Signal::Stopped(reason)),
        Some("warrant_quarantine") => Some(Signal::Quarantined(reason)),
        _ => None,
    }
}

/// The `_warrant` object the gateway returns and the hooks log: status, reason, packet id,
/// graduation path and what would unblock the call.
#[must_use]
pub fn warrant_object(o: &Outcome) -> Value {
    match o {
        Outcome::Allow { packet_id, reason, .. } => {
            json!({"status": "allowed", "reason": reason, "packet_id": packet_id})
        }
        Outcome::Hold { packet_id, state, reason, graduation } => json!({
            "status": "held", "state": state.as_str(), "reason": reason, "packet_id": packet_id,
            "graduationPath": graduation,
            "unblock": "the principal approves the packet in warrant",
        }),
        Outcome::Deny { packet_id, status, reason, remedy } => json!({
            "status": status, "reason": reason, "packet_id": packet_id, "unblock": remedy,
        }),
    }
}

/// A file's identity and state, to tell whether it changed since it was last read: device,
/// inode, length, modification and change times (ns) of the link itself and of the file it
/// names (the files are read through symbolic links: an edit of a link's target is a change).
/// `None` for one that does not exist.
type Stamp = [Option<(u64, u64, u64, i64, i64, i64, i64)>; 2];

fn stamp(path: &Path) -> Stamp {
    use std::os::unix::fs::MetadataExt as _;
    let of = |m: std::fs::Metadata| (m.dev(), m.ino(), m.len(), m.mtime(), m.mtime_nsec(), m.ctime(), m.ctime_nsec());
    [std::fs::symlink_metadata(path).ok().map(of), std::fs::metadata(path).ok().map(of)]
}

/// What [`Live`] last read, and the stamps of the files it read it from.
#[derive(Debug)]
struct LiveState {
    /// Policies and pinned keys.
    governor: Arc<Governor>,
    /// The chain, verified (extended record by record as it grows).
    chain: Arc<crate::store::spool::VerifiedView>,
    /// The gate's evidence index over the chain's evidence rows.
    index: Arc<crate::protocol::graduation::evidence::EvidenceIndex>,
    /// Whether every file in `packets/` is this process's user's (then whoever publishes first
    /// for an agent, it is this user: [`crate::monitor::speakers`]).
    packets_all_mine: bool,
    /// The stamps ([`stamp`]): chain, config `policy.toml`, spool `policy.toml`, pinned keys,
    /// `packets/`.
    stamps: [Stamp; 5],
}

/// A governor for a long-lived process (the MCP gateway): the policies, the pinned keys and the
/// verified chain are read once and read again only when their files change — the chain is then
/// extended by the records appended to it ([`crate::store::spool::verify_chain_from`]), not verified
/// whole — so a call the gate allows on its own is judged in memory, in microseconds, with no
/// packet ([`Live::quick`]). Every other call goes through [`Governor::submit`] as before.
///
/// Live: a control the principal signs (a notebook raised, an agent quarantined or killed, a
/// refusal that takes a class's graduation away) is a chain record, so the next call sees it.
#[derive(Debug)]
pub struct Live {
    spool: Spool,
    config_dir: PathBuf,
    state: std::sync::RwLock<Option<Arc<LiveState>>>,
}

impl Live {
    /// A live governor for `spool` and `config_dir`; nothing is read until the first call.
    #[must_use]
    pub fn new(spool: Spool, config_dir: &Path) -> Self {
        Self { spool, config_dir: config_dir.to_owned(), state: std::sync::RwLock::new(None) }
    }

    /// The spool.
    #[must_use]
    pub fn spool(&self) -> &Spool {
        &self.spool
    }

    fn paths(&self) -> [PathBuf; 5] {
        [
            self.spool.chain_path(),
            self.config_dir.join("policy.toml"),
            self.spool.root().join("policy.toml"),
            self.config_dir.join(crate::store::key_files::PINNED_FILE),
            self.spool.packets_dir(),
        ]
    }

    fn stamps(&self) -> [Stamp; 5] {
        self.paths().map(|p| stamp(&p))
    }

    /// What was read, when none of its files changed since (ten `stat`s: [`stamp`]); `None` when one
    /// did, or nothing was read yet: then [`Live::refresh`].
    fn fresh(&self) -> Option<Arc<LiveState>> {
        let state = self.state.read().ok()?.clone()?;
        (state.stamps == self.stamps()).then_some(state)
    }

    /// Reads again what changed: the policies and pinned keys when their files did (a new
    /// [`Governor`]), the chain's appended records (or the whole chain when it was rewritten or
    /// the keys changed), the owners of `packets/` when it changed. Blocking: file I/O and
    /// signature checks.
    ///
    /// # Errors
    /// As [`Governor::open`]; chain I/O errors.
    pub fn refresh(&self) -> Result<Arc<Governor>, GovernError> {
        self.refreshed().map(|s| s.governor.clone())
    }

    fn refreshed(&self) -> Result<Arc<LiveState>, GovernError> {
        if let Some(s) = self.fresh() {
            return Ok(s);
        }
        // Stamps first: a change while reading is seen by the next call.
        let stamps = self.stamps();
        let old = self.state.read().ok().and_then(|s| s.clone());
        let config_same = old.as_ref().is_some_and(|o| o.stamps[1..4] == stamps[1..4]);
        let governor = match old.as_ref().filter(|_| config_same) {
            Some(o) => o.governor.clone(),
            None => Arc::new(Governor::open(self.spool.clone(), &self.config_dir)?),
        };
        let progress = std::sync::atomic::AtomicU64::new(0);
        let cache = old.as_ref().filter(|_| config_same).map(|o| o.chain.as_ref());
        let (chain, index) = match old.as_ref().filter(|o| config_same && o.stamps[0] == stamps[0]) {
            Some(o) => (o.chain.clone(), o.index.clone()),
            None => {
                let chain = crate::store::spool::verify_chain_from(&self.spool, &governor.pinned, cache, &progress)?;
                let index = crate::protocol::graduation::evidence::EvidenceIndex::new(chain.view.evidence.rows());
                (Arc::new(chain), Arc::new(index))
            }
        };
        let packets_all_mine = match old.as_ref().filter(|o| o.stamps[4] == stamps[4]) {
            Some(o) => o.packets_all_mine,
            None => all_mine(&self.spool.packets_dir()),
        };
        let state = Arc::new(LiveState { governor, chain, index, packets_all_mine, stamps });
        if let Ok(mut s) = self.state.write() {
            *s = Some(state.clone());
        }
        Ok(state)
    }

    /// Judges `call` in memory, with no packet, when nothing it depends on changed since the last
    /// [`Live::refresh`]: `Some` (the call's action class) when it may run with no packet and no
    /// person, `None` when it must go through [`Governor::submit`] (or the state must be read
    /// again first).
    ///
    /// A call runs with no packet only when all of these hold: the chain verified whole; the tool
    /// table makes the call `safe` and declares no precondition for it; this process's user may
    /// speak for the agent (`[agents] users`, the chain's publisher, or — while every packet in
    /// the spool is this user's — whoever comes first); and the composed verdict over the
    /// principal's controls and the chain's evidence is `allowed` (not `allowed_with_constraints`,
    /// whose constraints only a packet can carry). Such a call is not an arrival for the rings'
    /// rate limit, which meters the packets an agent proposes (`docs/conformance.md`).
    #[must_use]
    pub fn quick(&self, call: &ToolCall) -> Option<String> {
        let state = self.fresh()?;
        let view = &state.chain.view;
        if !view.report.is_valid() {
            return None;
        }
        let policies = &state.governor.policies;
        let c = crate::protocol::calls::classify(policies, &call.tool, &call.input, &call.annotations);
        if c.tier != Some(crate::protocol::tiers::ToolTier::Safe)
            || !crate::protocol::calls::action_preconditions(&c.preconditions, &call.input, call.cwd.as_deref())
                .is_empty()
        {
            return None;
        }
        let now = time::OffsetDateTime::now_utc();
        let id = crate::protocol::calls::packet_id(call, Some("live"));
        let doc =
            crate::protocol::calls::call_packet(call, &c, policies, &id, &crate::protocol::clock::format_rfc3339(now));
        let bytes = serde_json::to_vec(&doc).ok()?;
        let packet = crate::protocol::packet::parse_packet(&bytes, &id).ok()?;
        let ctx = crate::protocol::verdict::VerdictContext {
            policies,
            controls: &view.controls,
            now: now.unix_timestamp() as f64 + f64::from(now.nanosecond()) * 1e-9,
        };
        let me = rustix::process::geteuid().as_raw();
        let who = crate::monitor::speakers(&ctx, &packet.agent, me);
        let speaks = match who {
            crate::monitor::Speakers::FirstSeen(_) => state.packets_all_mine,
            _ => who.allows(me),
        };
        if !speaks {
            return None;
        }
        let tg = crate::protocol::verdict::packet_gate(&ctx, &packet, &state.index, "local", true);
        let v = crate::protocol::verdict::evaluate(&ctx, &packet, &tg, None, None);
        (v.state == DecisionState::Allowed).then_some(c.class)
    }
}

/// Whether every entry of `dir` is owned by this process's user (true when it is empty or
/// missing; false when it cannot be read).
fn all_mine(dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    let me = rustix::process::geteuid().as_raw();
    match std::fs::read_dir(dir) {
        Ok(entries) => entries.into_iter().all(|e| e.and_then(|e| e.metadata()).is_ok_and(|m| m.uid() == me)),
        Err(e) => e.kind() == io::ErrorKind::NotFound,
    }
}
