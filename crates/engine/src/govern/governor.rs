//! The governor of one call ([`Governor`]): publish its packet, judge it with the composed
//! verdict from the verified chain, hold it for the principal, and recheck it before it runs.

use super::*;

/// Governs calls against one spool with the policies and pinned keys of one configuration
/// directory.
#[derive(Debug)]
pub struct Governor {
    spool: Spool,
    config_dir: PathBuf,
    pub(super) policies: PolicySet,
    pub(super) pinned: PinnedKeys,
    /// The protected set, resolved once when the governor opens ([`super::paths::protected_set`]).
    protected: warrant_protocol::protected::ProtectedPaths,
    /// What "now" is when a grant, a packet or a wait expires ([`Governor::with_clock`]).
    clock: crate::clock::Clock,
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
        let protected = super::paths::protected_set(&policies, config_dir, spool.root());
        Ok(Self { spool, config_dir: config_dir.to_owned(), policies, pinned, protected, clock: Default::default() })
    }

    /// The governor judging at `clock`'s time (the system's by default): when grants, packets
    /// and waits expire, and the time constraints and rate windows are counted from. The chain's
    /// controls and the assessment's rings read the system clock.
    #[must_use]
    pub fn with_clock(mut self, clock: crate::clock::Clock) -> Self {
        self.clock = clock;
        self
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

    /// What `call` is: the tool table's classification ([`warrant_protocol::calls::classify`]),
    /// raised for every protected file the call names as resolved here, in the call's real
    /// working directory ([`super::paths::protected_hits`]): warrant's configuration, the spool,
    /// and the built-in and `policy.toml` protected set.
    #[must_use]
    pub fn classify(&self, call: &ToolCall) -> warrant_protocol::calls::Classification {
        let mut c = warrant_protocol::calls::classify(&self.policies, &call.tool, &call.input, &call.annotations);
        let command = self.policies.command_field(&call.tool);
        c.protect(&super::paths::protected_hits(&self.protected, call, command));
        // A `safe` git command is safe only while git's configuration runs nothing for it.
        if c.tier == Some(warrant_protocol::tiers::ToolTier::Safe)
            && let Some(line) = command.and_then(|f| call.input.get(f))
        {
            let cwd = call.workdir.as_deref().or(call.cwd.as_deref()).map(PathBuf::from).filter(|d| d.is_absolute());
            match cwd.or_else(|| std::env::current_dir().ok()) {
                Some(cwd) => c.unsafe_by_configuration(&super::gitconfig::hazards(line, &cwd)),
                None => c.unsafe_by_configuration(&["no working directory to read git's configuration in".into()]),
            }
        }
        c
    }

    /// The agent's call that is exactly the correction the principal approved for an earlier
    /// call its host could not change (the hook refused that one with the corrected input, and
    /// left its packet id under the corrected call's key, [`spool::record_corrected_call`]): it
    /// runs once, with no packet, within [`CORRECTED_RUN_WITHIN`] of the approval. `None` (the
    /// call is judged as any other) unless the principal's decision file on that packet verifies,
    /// is an approval as corrected of this agent's packet, and its corrected action is this
    /// call's proposed action in every member (tool, host, session, working directory, input),
    /// and its preconditions hold; then its one run is claimed ([`Self::claim_correction`]: a
    /// refusal `consumed` when it ran already, `blocked` when the claim cannot be recorded). What
    /// the agent may write (the pointer, the packet) decides nothing the principal did not sign.
    ///
    /// # Errors
    /// The chain cannot be read: the call must not run.
    pub fn corrected_rerun(&self, call: &ToolCall) -> Result<Option<Outcome>, GovernError> {
        let key = warrant_protocol::calls::call_key(call);
        let Some(id) = spool::corrected_call_of(&self.spool, &key) else { return Ok(None) };
        let classification = self.classify(call);
        let class = self.policies.normalize(&classification.class);
        // The packet is a hook's or the gateway's call packet of this agent, tool and class (one
        // needing several principals is never approved as corrected).
        let Some(packet) = spool::read_limited(&self.spool.packets_dir().join(format!("{id}.json")))
            .ok()
            .and_then(|b| warrant_protocol::packet::parse_packet(&b, &id).ok())
            .filter(|p| p.agent == call.agent && warrant_protocol::calls::is_call_packet(p))
            .filter(|p| {
                warrant_protocol::verdict::Governance::of_packet(p).and_then(|g| g.tool.clone()).as_deref()
                    == Some(call.tool.as_str())
            })
            .filter(|p| self.policies.normalize(&p.action_class) == class && self.policies.cosign(&class).is_none())
        else {
            return Ok(None);
        };
        let Ok(decision) = self.verify_decision_file(&id, &packet.content_hash, None) else { return Ok(None) };
        let Some(correction) = decision.correction else { return Ok(None) };
        let doc = warrant_protocol::calls::call_packet(call, &classification, &self.policies, &id, "");
        let same = warrant_protocol::canonical::canonical_digest(&doc["proposed_action"])
            == warrant_protocol::canonical::canonical_digest(&correction.action);
        let recent = warrant_protocol::clock::parse_rfc3339(&decision.decided_at)
            .is_some_and(|at| self.clock.now() - at <= CORRECTED_RUN_WITHIN);
        if !same || !recent {
            return Ok(None);
        }
        // The chain verifies and the agent stands as it did: otherwise the call is judged anew
        // (and refused there with the reason).
        let agent = spool::agent_view(&self.spool, &self.pinned)?;
        let view = &agent.chain.view;
        if !view.report.is_valid()
            || view.controls.standing(&call.agent) != warrant_protocol::graduation::gate::AgentStanding::Active
        {
            return Ok(None);
        }
        let allowed = Outcome::Allow {
            packet_id: id.clone(),
            reason: format!("is the correction the principal approved for {id}, run once"),
            by_principal: true,
            grant: None,
            corrected: None,
        };
        // The preconditions the approval recorded (the corrected call's) are re-checked now.
        let submitted = Submitted {
            packet_id: id.clone(),
            content_hash: packet.content_hash.clone(),
            agent: call.agent.clone(),
            at: self.clock.now(),
            classification,
            preconditions: Vec::new(),
            outcome: allowed.clone(),
            timeout: None,
            quorum: None,
        };
        if let Some(failed) = self.recheck_before_run(&submitted, &allowed) {
            return Ok(Some(failed));
        }
        match self.claim_correction(&id) {
            None => Ok(Some(allowed)),
            refused => Ok(refused),
        }
    }

    /// Claims the one run of the correction the principal approved for `id`, for a surface about
    /// to run it itself (Claude Code's `updatedInput`, the gateway's corrected arguments): a
    /// correction runs once, whichever surface runs it ([`Self::corrected_rerun`] claims the
    /// same). `None` when the claim is taken; else the refusal.
    #[must_use]
    pub fn claim_correction(&self, id: &str) -> Option<Outcome> {
        let refused = |status: &'static str, reason: String| {
            Some(Outcome::Deny { packet_id: Some(id.to_owned()), status, reason, remedy: None })
        };
        match spool::claim_corrected_run(&self.spool, id) {
            Ok(true) => None,
            Ok(false) => refused("consumed", format!("the correction of {id} already ran (a correction runs once)")),
            Err(e) => refused("blocked", format!("could not record the run of the correction of {id}: {e}")),
        }
    }

    /// Classifies `call`, publishes its packet (or finds the one a retry of the same call made:
    /// same id, same call) and judges it.
    ///
    /// The preconditions the tool table declares for the call ([`warrant_protocol::calls::action_preconditions`])
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
        let classification = self.classify(call);
        // The class's `refuse_after` caps the wait: the packet expires with it.
        let timeout = self.policies.class_timeout(&classification.class);
        let expires_in = match (expires_in, timeout) {
            (Some(d), Some(t)) => Some(t.cap(d)),
            (None, Some(t)) => t.refuse_after(),
            (d, None) => d,
        };
        let id = warrant_protocol::calls::packet_id(call, call_id);
        let now = self.clock.now();
        let mut doc = warrant_protocol::calls::call_packet(
            call,
            &classification,
            &self.policies,
            &id,
            &warrant_protocol::clock::format_rfc3339(now),
        );
        if let Some(t) = expires_in.and_then(|d| time::Duration::try_from(d).ok()).and_then(|d| now.checked_add(d)) {
            doc["expires_at"] = json!(warrant_protocol::clock::format_rfc3339(t));
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
                let old = warrant_protocol::canonical::parse_untrusted(&bytes)
                    .map_err(|reason| GovernError::InvalidPacket { id: id.clone(), reason: reason.to_string() })?;
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
        let (content_hash, mut outcome) = self.judge(&id)?;
        // The agent is told why its call waits when the table alone would have let it run.
        if let Outcome::Hold { reason, .. } = &mut outcome
            && !classification.raised.is_empty()
        {
            reason.push_str(&format!("; the call {}", classification.raised.join("; ")));
        }
        // What was judged is what this call published (or the retried call's packet it found):
        // an agent that swaps the file between the two gets a refusal, never a verdict on other
        // content.
        if content_hash != warrant_protocol::canonical::canonical_hash(&published) {
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
                warrant_protocol::canonical::parse_untrusted(&bytes).map_err(|e| e.to_string()).and_then(|v| {
                    warrant_protocol::decision::verify_decision_file_under(
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
                        format!("{id} was refused by {}", warrant_protocol::text::inert(&d.principal, 200)),
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
    /// The chain is read from the agents' snapshot of the principal's last checkpoint and the
    /// records after it ([`spool::agent_view`]), with exact decisions for `id` and the recent
    /// arrivals ([`spool::AgentView::complete`]); the whole chain only when the snapshot cannot
    /// be used or cannot give one of those decisions. An older packet decided in the snapshot's
    /// prefix and not among its latest decisions counts as undecided in a `rate_limit` window:
    /// the count errs on the side of holding.
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
        // From the agents' snapshot and the records after it, with exact decisions for this
        // packet and the recent arrivals the assessment weighs; when the snapshot cannot give
        // one of them, the whole chain, whose decisions are exact.
        let mut agent = spool::agent_view(&self.spool, &self.pinned)?;
        let (view, agent) = if agent.complete(snap.packets.iter().map(|e| e.packet.id.as_str()).chain([id])) {
            (std::mem::take(&mut agent.chain.view), Some(agent))
        } else {
            (spool::verify_chain(&self.spool, &self.pinned)?, None)
        };
        // Whether a packet is decided, as far as the view knows (one decided in the snapshot's
        // prefix and not among its latest decisions reads as undecided: a count errs on holding).
        let decided =
            |p: &str| view.decisions.contains_key(p) || agent.as_ref().is_some_and(|a| a.decision_before(p).is_some());
        if !view.report.is_valid() {
            // A broken chain: nothing runs, not even what it records as approved.
            let first = view.report.first().map(|f| f.to_string()).unwrap_or_default();
            return Ok((
                hash,
                Outcome::Deny {
                    packet_id: Some(id.to_owned()),
                    status: "blocked",
                    reason: format!("the chain does not verify ({})", warrant_protocol::text::inert(&first, 400)),
                    remedy: Some("the principal must repair the chain (`warrant verify`)".into()),
                },
            ));
        }
        // A call answered before (a retried host call after a timeout or a refusal) never runs,
        // whatever the chain says since; one whose hook stopped waiting with no answer does not
        // run unless the principal decided it while it waited.
        if let Some(w) = spool::withdrawn(&self.spool, id, Some(entry.owner), self.clock.now())
            && !w.ran()
            && (w.answered() || !view.decisions.contains_key(id))
        {
            return Ok((
                hash,
                Outcome::Deny {
                    packet_id: Some(id.to_owned()),
                    status: "withdrawn",
                    reason: format!("{id} was withdrawn: {w}; it will not run"),
                    remedy: Some("make the call again for a new request".into()),
                },
            ));
        }
        if let Some(d) = view.decisions.get(id) {
            return Ok((hash, self.decided_outcome(id, &entry, d)));
        }
        if let Some(at) = expired(&entry.packet, self.clock.now()) {
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
                self.within_constraints(id, &entry, &class, &reason, &a, &decided)?
            }
            DecisionState::Allowed => Outcome::Allow {
                packet_id: id.to_owned(),
                reason: format!("the gate allows it ({reason})"),
                by_principal: false,
                grant: None,
                corrected: None,
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
                reason: match a.gate.get(id).and_then(|tg| warrant_protocol::verdict::graduation_hint(v, tg, &class)) {
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

    /// The outcome of the call packet `entry` (`id`) that the chain has the decision `d` on: a
    /// refusal, a timeout, an approval (used once its decision file verifies), or a block when
    /// the approval does not meet the class's quorum or the packet changed after it.
    fn decided_outcome(&self, id: &str, entry: &spool::PacketEntry, d: &spool::ChainDecision) -> Outcome {
        let by = warrant_protocol::text::inert(&d.signed_by(), 400);
        // A class that needs several principals: an approval that does not meet the policy's
        // quorum (signed under other terms, or before the policy asked for one) holds nothing.
        if d.verdict == Verdict::Approve
            && let Some(q) = self.policies.cosign(&entry.packet.action_class)
            && !d.meets(q)
        {
            return Outcome::Deny {
                packet_id: Some(id.to_owned()),
                status: "blocked",
                reason: format!(
                    "{id} needs the approval of {} (policy.toml [cosign]); the chain's approval is {by}'s",
                    q.describe()
                ),
                remedy: None,
            };
        }
        let why =
            d.reason.as_deref().map(|r| format!(": {}", warrant_protocol::text::inert(r, 2000))).unwrap_or_default();
        match (d.verdict, d.packet_hash == entry.packet.content_hash) {
            (_, false) => Outcome::Deny {
                packet_id: Some(id.to_owned()),
                status: "blocked",
                reason: format!("{id} changed after {by} decided it"),
                remedy: None,
            },
            (Verdict::Approve, true) => {
                // Verified before it is used: a decision file that does not verify
                // leaves the approval unused.
                let quorum = self.policies.cosign(&entry.packet.action_class);
                match self.verify_decision_file(id, &entry.packet.content_hash, quorum) {
                    Ok(d) => self.use_approval(id, entry.packet.proposed_action(), d.correction, &format!("{by}{why}")),
                    Err(reason) => Outcome::Deny {
                        packet_id: Some(id.to_owned()),
                        status: "blocked",
                        reason: format!("{reason}; the approval was not used"),
                        remedy: Some(
                            "`warrant list` (the principal) writes lost decision files again from the chain".into(),
                        ),
                    },
                }
            }
            (Verdict::Refuse, true) if d.system.is_some() => timed_out(id, &why),
            (Verdict::Refuse, true) => Outcome::Deny {
                packet_id: Some(id.to_owned()),
                status: "refused",
                reason: format!("refused by {by}{why}"),
                remedy: None,
            },
        }
    }

    /// The outcome of the call packet `entry` (`id`) that the gate allows within its class's
    /// constraints: allowed when the ones a hook or the gateway can check on the tool's input hold
    /// (a `rate_limit` counted, and the call recorded for the count), else held for the principal.
    fn within_constraints(
        &self,
        id: &str,
        entry: &spool::PacketEntry,
        class: &str,
        reason: &str,
        a: &crate::monitor::Assessment,
        decided: &dyn Fn(&str) -> bool,
    ) -> Result<Outcome, GovernError> {
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
        let recent = match warrant_protocol::calls::rate_window(&constraints) {
            Some(window) if counted => Some(self.recent_calls(&entry.packet, class, window, decided)?),
            _ => None,
        };
        let now = self.clock.now_unix();
        let mut failures = warrant_protocol::calls::constraint_failures(&constraints, now, recent);
        if !counted && constraints.contains_key("rate_limit") {
            failures.push(
                "`rate_limit` cannot be counted by the agent's own user (it could remove the files counted)".to_owned(),
            );
        }
        let keys: Vec<&str> = constraints
            .keys()
            .map(String::as_str)
            .filter(|k| warrant_protocol::graduation::gate::CONSTRAINT_VOCABULARY.contains(k))
            .collect();
        if failures.is_empty() && recent.is_some() {
            // The call counts against the rate limit from now on, whatever happens to its
            // packet: recorded before it runs, or it does not run. A packet that expired
            // before its record was written may have been left out of another call's count
            // in between (an expired packet with no record does not count): it does not
            // run either.
            if let Err(e) = spool::record_gate_run(&self.spool, id) {
                failures.push(format!("`rate_limit`: the call could not be recorded for the count ({e})"));
            } else if let Some(at) = expired(&entry.packet, self.clock.now()) {
                return Ok(expired_undecided(id, at));
            }
        }
        Ok(if failures.is_empty() {
            Outcome::Allow {
                packet_id: id.to_owned(),
                reason: format!("the gate allows it within its constraints ({}: they hold)", keys.join(", ")),
                by_principal: false,
                grant: None,
                corrected: None,
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
        })
    }

    /// The first live grant that covers the call packet `packet` and has a use left, claimed for
    /// it ([`spool::claim_grant_use`]): the call runs on it. `None` when no grant covers it, or
    /// every covering grant's uses are taken.
    ///
    /// # Errors
    /// I/O errors claiming a use.
    fn use_grant(
        &self,
        packet: &warrant_protocol::packet::Packet,
        grants: &warrant_protocol::grant::GrantBook,
    ) -> Result<Option<Outcome>, GovernError> {
        let class = self.policies.normalize(&packet.action_class);
        if self.policies.policy(&class).is_human_only() || self.policies.cosign(&class).is_some() {
            return Ok(None);
        }
        let Some(mut facts) = warrant_protocol::grant::CallFacts::of_packet(packet, &self.policies) else {
            return Ok(None);
        };
        // A pattern covers the file a path resolves to, not its spelling: a path below a
        // granted directory that is a symlink to a file elsewhere is not below it. A path that
        // cannot be resolved has no argument a pattern covers.
        if self.policies.command_field(&facts.tool).is_none()
            && let Some(arg) = facts.argument.take()
        {
            facts.argument = super::paths::resolve(Path::new(&arg), Path::new("/"))
                .and_then(|p| p.to_str().map(str::to_owned))
                .filter(|p| p.len() <= warrant_protocol::grant::MAX_ARGUMENT);
        }
        let now = self.clock.now_unix();
        for g in grants.covering(&facts, now) {
            if let Some(n) = spool::claim_grant_use(&self.spool, g, &packet.id)? {
                let by = warrant_protocol::text::inert(&g.principal, 200);
                let nth = g.max_uses.map(|max| format!(", use {n} of {max}")).unwrap_or_default();
                return Ok(Some(Outcome::Allow {
                    packet_id: packet.id.clone(),
                    reason: format!(
                        "allowed by {by}'s grant {}{nth}: {}",
                        g.grant_id,
                        warrant_protocol::text::inert(&g.describe(), 2000)
                    ),
                    by_principal: true,
                    grant: Some(g.grant_id.clone()),
                    corrected: None,
                }));
            }
        }
        Ok(None)
    }

    /// Reads and verifies the decision file of the approved packet `id` (against the pinned keys,
    /// the packet's `content_hash` and the class's `quorum`), waiting at most
    /// [`DECISION_FILE_GRACE`] for a file the principal's process is about to write: the check a
    /// use of the approval needs first, so a decision that does not verify consumes nothing.
    ///
    /// # Errors
    /// The reason, when the file is missing, unreadable, or does not verify as an approval.
    fn verify_decision_file(
        &self,
        id: &str,
        content_hash: &str,
        quorum: Option<&warrant_protocol::decision::Quorum>,
    ) -> Result<warrant_protocol::decision::VerifiedDecision, String> {
        let path = self.spool.decision_path(id);
        let until = Instant::now() + DECISION_FILE_GRACE;
        let missing = || matches!(std::fs::symlink_metadata(&path), Err(e) if e.kind() == io::ErrorKind::NotFound);
        while missing() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        if missing() {
            return Err(format!("the principal's decision on {id} is not in decisions/"));
        }
        let bytes = spool::read_limited(&path).map_err(|e| format!("could not read the decision on {id}: {e}"))?;
        let file = warrant_protocol::canonical::parse_untrusted(&bytes)
            .map_err(|e| format!("the decision on {id} does not verify: {e}"))?;
        match warrant_protocol::decision::verify_decision_file_under(
            &file,
            id,
            Some(content_hash),
            &self.pinned,
            quorum,
        ) {
            Ok(d) if d.verdict == Verdict::Approve => Ok(d),
            Ok(_) => Err(format!("the decision file on {id} is not an approval")),
            Err(e) => Err(format!("the decision on {id} does not verify: {e}")),
        }
    }

    /// The principal's approval of `id` (signed by `by`, its reason included), used once
    /// ([`spool::claim_approval`]): `Allow` for the first caller, with the corrected input when it
    /// is an approval as corrected of the call `proposed` ([`corrected_call`]); a refusal
    /// (`consumed`) for any later one, and a block when the use cannot be recorded or the
    /// correction is not of this call.
    fn use_approval(
        &self,
        id: &str,
        proposed: &Value,
        correction: Option<warrant_protocol::correction::Correction>,
        by: &str,
    ) -> Outcome {
        let corrected = match corrected_call(id, proposed, correction) {
            Ok(c) => c,
            Err(denied) => return denied,
        };
        let how = if corrected.is_some() { "approved as corrected" } else { "approved" };
        let reason = format!("{how} by {by}");
        match spool::claim_approval(&self.spool, id) {
            Ok(true) => Outcome::Allow { packet_id: id.to_owned(), reason, by_principal: true, grant: None, corrected },
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
        packet: &warrant_protocol::packet::Packet,
        class: &str,
        window: u64,
        decided: &dyn Fn(&str) -> bool,
    ) -> Result<u64, GovernError> {
        let snap = Scanner::new().scan(&self.spool)?;
        // When each packet arrived (its inode change time, which no one can set back), not the
        // time it declares.
        let now = self.clock.now_unix();
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
                    && warrant_protocol::calls::is_call_packet(p)
                    && self.policies.normalize(&p.action_class) == class
                    && e.arrived >= since
                    && !decided(&p.id)
                    && (ran.contains(p.id.as_str())
                        || !p
                            .expires_at
                            .as_deref()
                            .and_then(warrant_protocol::clock::unix_seconds)
                            .is_some_and(|t| t <= now))
            })
            .count();
        Ok(n as u64)
    }

    /// Records, before a hook or gateway waits up to `total` for the principal's decision on
    /// the held call `s`, when that wait ends ([`spool::record_wait`]): no approval runs the call
    /// after it, whoever stops this process and whatever its packet's `expires_at` says.
    ///
    /// Keep the returned hold while waiting: when no process holds one, the call is withdrawn
    /// at once (a killed hook, an interrupted host).
    ///
    /// # Errors
    /// The refusal to answer when the record cannot be written: a call whose withdrawal cannot
    /// be made sure of does not wait.
    pub fn hold_until(&self, s: &Submitted, total: Duration) -> Result<spool::WaitHold, Outcome> {
        let until = self.clock.now() + time::Duration::try_from(s.wait_for(total)).unwrap_or_default();
        spool::record_wait(&self.spool, &s.packet_id, until).map_err(|e| Outcome::Deny {
            packet_id: Some(s.packet_id.clone()),
            status: "blocked",
            reason: format!("could not record how long {} waits: {e}", s.packet_id),
            remedy: None,
        })
    }

    /// Records how the call was answered ([`spool::record_answer`]): a refusal naming its packet
    /// (no later decision runs it), or `allowed` (it runs now: it leaves the principal's
    /// Pending, and no one signs a decision on a call that already ran). A `Hold` records
    /// nothing. A record that cannot be written is reported on stderr; the wait's record
    /// ([`Governor::hold_until`]) still withdraws the call when its time ends.
    pub fn answered(&self, outcome: &Outcome) {
        let (id, status) = match outcome {
            Outcome::Deny { packet_id: Some(id), status, .. } => (id, *status),
            Outcome::Allow { packet_id, .. } => (packet_id, spool::ALLOWED),
            _ => return,
        };
        if let Err(e) = spool::record_answer(&self.spool, id, status) {
            eprintln!("warrant: could not record the answer to {id}: {e}");
        }
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
        let decision_within = |wait: Duration| {
            wait_for_decision(&self.spool, &id, &s.content_hash, &self.pinned, &s.agent, None, wait, s.quorum.as_ref())
        };
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let waited = decision_within(left.min(REJUDGE_EVERY));
            if waited != Waited::Timeout || left <= REJUDGE_EVERY {
                // A decision written as the wait ran out is looked for once more: an approval is
                // taken until shortly before the wait's end (`spool::WITHDRAW_MARGIN`).
                let waited = if waited == Waited::Timeout { decision_within(Duration::ZERO) } else { waited };
                return self.outcome_of(s, waited, timeout);
            }
            // Judged with the policies and keys as they are now, not as they were when the call
            // was proposed: a table the principal tightened meanwhile applies.
            match Governor::open(self.spool.clone(), &self.config_dir).and_then(|g| g.judge(&id)) {
                Ok((hash, o @ Outcome::Allow { .. })) if hash == s.content_hash => return o,
                Ok((hash, o @ Outcome::Deny { .. })) if hash == s.content_hash => {
                    // A decision that came while this judgement ran (it read the chain before the
                    // principal's record) is her word on the call, and wins over that reading.
                    let late = decision_within(Duration::ZERO);
                    return match late {
                        Waited::Decided(_) => self.outcome_of(s, late, timeout),
                        _ => o,
                    };
                }
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

    /// The proposed action of the packet `s` submitted, as submitted (its content hash): `null`
    /// when the file is gone or changed, which no correction matches.
    fn proposed_action(&self, s: &Submitted) -> Value {
        spool::read_limited(&self.spool.packets_dir().join(format!("{}.json", s.packet_id)))
            .ok()
            .and_then(|b| warrant_protocol::packet::parse_packet(&b, &s.packet_id).ok())
            .filter(|p| p.content_hash == s.content_hash)
            .map_or(Value::Null, |p| p.proposed_action().clone())
    }

    /// The answer for a held call whose wait (of `timeout` in all) ended with `waited`.
    fn outcome_of(&self, s: &Submitted, waited: Waited, timeout: Duration) -> Outcome {
        let id = s.packet_id.clone();
        match waited {
            Waited::Decided(d) => {
                let why =
                    d.reason.map(|r| format!(": {}", warrant_protocol::text::inert(&r, 2000))).unwrap_or_default();
                let by = if d.cosigners.is_empty() { d.principal } else { d.cosigners.join(" + ") };
                let by = warrant_protocol::text::inert(&by, 400);
                match d.verdict {
                    Verdict::Approve => {
                        self.use_approval(&id, &self.proposed_action(s), d.correction, &format!("{by}{why}"))
                    }
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
fn expired(packet: &warrant_protocol::packet::Packet, now: time::OffsetDateTime) -> Option<&str> {
    packet.expires_at.as_deref().filter(|t| warrant_protocol::clock::parse_rfc3339(t).is_some_and(|t| t <= now))
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
    let quiet = warrant_protocol::rings::Ring::ALL
        .iter()
        .map(|r| {
            let l = warrant_protocol::rings::rate::default_limits(*r);
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

/// How long after the principal approves a call as corrected the agent's call with exactly the
/// corrected input may run ([`Governor::corrected_rerun`]), for a host that could not run the
/// correction itself: the model is told at once, and retries at once.
pub const CORRECTED_RUN_WITHIN: time::Duration = time::Duration::minutes(10);

/// The input a tool call approved as corrected runs with: the `input` of the corrected action a
/// verified decision signed (a governed call is always a tool call, [`warrant_protocol::calls::call_packet`]);
/// `Ok(None)` for a plain approval. A correction without an object `input` runs nothing.
fn corrected_call(
    id: &str,
    proposed: &Value,
    correction: Option<warrant_protocol::correction::Correction>,
) -> Result<Option<Box<Value>>, Outcome> {
    let Some(c) = correction else { return Ok(None) };
    // Every member but the input is the call's as proposed (the tool, host, session, directory).
    fn others(v: &Value) -> Option<std::collections::BTreeMap<&String, &Value>> {
        v.as_object().map(|m| m.iter().filter(|(k, _)| *k != "input").collect())
    }
    match c.action.get("input") {
        Some(input @ Value::Object(_)) if others(&c.action) == others(proposed) => Ok(Some(Box::new(input.clone()))),
        _ => Err(Outcome::Deny {
            packet_id: Some(id.to_owned()),
            status: "blocked",
            reason: format!(
                "the principal's correction of {id} is not this call with another input; the approval was not used"
            ),
            remedy: None,
        }),
    }
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
