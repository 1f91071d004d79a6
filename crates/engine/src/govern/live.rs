//! The long-lived governor the MCP gateway keeps between calls ([`Live`]): re-read only when a
//! file it was read from changed.

use super::*;

/// A file's identity and state, to tell whether it changed since it was last read: device,
/// inode, length, modification and change times (ns) of the link itself and of the file it
/// names (the files are read through symbolic links: an edit of a link's target is a change).
/// `None` for one that does not exist.
type Stamp = [Option<(u64, u64, u64, i64, i64, i64, i64)>; 2];

///
/// One `lstat` when the path is not a symbolic link: then the file it names is itself (`stat`
/// resolves what `lstat` does, and follows only a link in the last component), and a path
/// `lstat` cannot resolve `stat` cannot either. A link costs a second call, a `stat`. The same
/// stamp as the two calls give (test `a_stamp_is_what_lstat_and_stat_say`).
fn stamp(path: &Path) -> Stamp {
    use std::os::unix::fs::MetadataExt as _;
    let of = |m: &std::fs::Metadata| (m.dev(), m.ino(), m.len(), m.mtime(), m.mtime_nsec(), m.ctime(), m.ctime_nsec());
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => [Some(of(&m)), std::fs::metadata(path).ok().as_ref().map(of)],
        Ok(m) => [Some(of(&m)); 2],
        Err(_) => [None; 2],
    }
}

/// What [`Live`] last read, and the stamps of the files it read it from.
#[derive(Debug)]
struct LiveState {
    /// Policies and pinned keys.
    governor: Arc<Governor>,
    /// The chain, verified (extended record by record as it grows).
    chain: Arc<warrant_store::spool::VerifiedView>,
    /// The gate's evidence index over the chain's evidence rows.
    index: Arc<warrant_protocol::graduation::evidence::EvidenceIndex>,
    /// `Some(class)` when the chain view's evidence is that canonical action class's alone
    /// ([`warrant_store::spool::AgentView::evidence_only`]): no other class is judged on it.
    evidence_only: Option<String>,
    /// Whether every file in `packets/` is this process's user's (then whoever publishes first
    /// for an agent, it is this user: [`crate::monitor::speakers`]). Read only when a call's
    /// agent has no publisher yet, once per state, from the user's cache while `packets/` is
    /// unchanged (`owners`), else a `stat` a packet.
    packets_all_mine: std::sync::OnceLock<bool>,
    /// The stamps ([`stamp`]): chain, config `policy.toml`, spool `policy.toml`, pinned keys,
    /// `packets/`.
    stamps: [Stamp; 5],
}

/// A governor for a long-lived process (the MCP gateway) or a hook's one call: the policies, the
/// pinned keys and the verified chain are read once — the chain from the agents' snapshot of the
/// principal's last checkpoint and the records after it ([`warrant_store::spool::agent_view`]) —
/// and read again only when their files change — the chain is then extended by the records
/// appended to it ([`warrant_store::spool::verify_chain_from`]), not verified whole — so a call the gate allows on its own is judged in memory, in microseconds, with no
/// packet ([`Live::quick`]). Every other call goes through [`Governor::submit`] as before.
///
/// Live: a control the principal signs (a notebook raised, an agent quarantined or killed, a
/// refusal that takes a class's graduation away) is a chain record, so the next call sees it.
#[derive(Debug)]
pub struct Live {
    spool: Spool,
    config_dir: PathBuf,
    state: std::sync::RwLock<Option<Arc<LiveState>>>,
    /// The policies and pinned keys read ahead of the chain ([`Live::governor`]), with the
    /// stamps of their files taken before they were read; taken by the first state read while
    /// those files are unchanged.
    seed: std::sync::Mutex<Option<(Arc<Governor>, [Stamp; 3])>>,
    /// The one canonical action class whose evidence is read ([`Live::evidence_only`]); `None`:
    /// every class's.
    evidence_only: Option<String>,
}

impl Live {
    /// A live governor for `spool` and `config_dir`; nothing is read until the first call.
    #[must_use]
    pub fn new(spool: Spool, config_dir: &Path) -> Self {
        Self {
            spool,
            config_dir: config_dir.to_owned(),
            state: std::sync::RwLock::new(None),
            seed: std::sync::Mutex::new(None),
            evidence_only: None,
        }
    }

    /// Reads the evidence of the canonical action class `class` alone (as
    /// [`PolicySet::normalize`] gives it), for a process that judges calls of that class only —
    /// a hook's one call: from the agents' snapshot only that class's evidence runs are read
    /// back ([`warrant_store::spool::agent_view_for_class`]). [`Live::quick`] then judges only a
    /// call whose packet has that class and sends any other to [`Governor::submit`]. What was
    /// read before is dropped.
    pub fn evidence_only(&mut self, class: String) {
        self.evidence_only = Some(class);
        if let Ok(mut s) = self.state.write() {
            *s = None;
        }
    }

    /// The policies and pinned keys ([`Governor`]), as the next [`Live::refresh`] will use them:
    /// those of what was read while their files are unchanged, else read now (their files'
    /// stamps taken first) and kept for the next refresh, which then reads only the chain.
    ///
    /// # Errors
    /// As [`Governor::open`].
    pub fn governor(&self) -> Result<Arc<Governor>, GovernError> {
        let stamps = self.stamps();
        let config: [Stamp; 3] = [stamps[1], stamps[2], stamps[3]];
        if let Some(s) = self.state.read().ok().and_then(|s| s.clone()).filter(|s| s.stamps[1..4] == config) {
            return Ok(s.governor.clone());
        }
        // A cache: one left by a thread that panicked is as good as any.
        let mut seed = self.seed.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((g, _)) = seed.as_ref().filter(|(_, at)| *at == config) {
            return Ok(g.clone());
        }
        let governor = Arc::new(Governor::open(self.spool.clone(), &self.config_dir)?);
        *seed = Some((governor.clone(), config));
        Ok(governor)
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
            self.config_dir.join(warrant_store::key_files::PINNED_FILE),
            self.spool.packets_dir(),
        ]
    }

    fn stamps(&self) -> [Stamp; 5] {
        self.paths().map(|p| stamp(&p))
    }

    /// What was read, when none of its files changed since (five `lstat`s, and a `stat` for each path that is a link: [`stamp`]); `None` when one
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
        let seeded = || {
            let seed = self.seed.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take()?;
            (seed.1[..] == stamps[1..4]).then_some(seed.0)
        };
        let governor = match old.as_ref().filter(|_| config_same) {
            Some(o) => o.governor.clone(),
            None => match seeded() {
                Some(g) => g,
                None => Arc::new(Governor::open(self.spool.clone(), &self.config_dir)?),
            },
        };
        let progress = std::sync::atomic::AtomicU64::new(0);
        let cache = old.as_ref().filter(|_| config_same).map(|o| o.chain.as_ref());
        let (chain, index, evidence_only) = match old.as_ref().filter(|o| config_same && o.stamps[0] == stamps[0]) {
            Some(o) => (o.chain.clone(), o.index.clone(), o.evidence_only.clone()),
            None => {
                // The first read starts from the agents' snapshot when the principal's checkpoint
                // binds one (its decisions are then the tail's only: `quick` reads none).
                // A view extended from the last one keeps what its evidence covers.
                let (chain, evidence_only) = match cache {
                    Some(_) => (
                        warrant_store::spool::verify_chain_from(&self.spool, &governor.pinned, cache, &progress)?,
                        old.as_ref().and_then(|o| o.evidence_only.clone()),
                    ),
                    None => {
                        let agent = match self.evidence_only.as_deref() {
                            Some(class) => {
                                warrant_store::spool::agent_view_for_class(&self.spool, &governor.pinned, class)?
                            }
                            None => warrant_store::spool::agent_view(&self.spool, &governor.pinned)?,
                        };
                        (agent.chain, agent.evidence_only)
                    }
                };
                let index = warrant_protocol::graduation::evidence::EvidenceIndex::of_runs(chain.view.evidence.runs());
                (Arc::new(chain), Arc::new(index), evidence_only)
            }
        };
        let packets_all_mine = match old.as_ref().filter(|o| o.stamps[4] == stamps[4]) {
            Some(o) => o.packets_all_mine.clone(),
            None => std::sync::OnceLock::new(),
        };
        let state = Arc::new(LiveState { governor, chain, index, evidence_only, packets_all_mine, stamps });
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
    /// whose constraints only a packet can carry); and, for a governor that read one class's
    /// evidence ([`Live::evidence_only`]), the call's class is that class. Such a call is not an
    /// arrival for the rings' rate limit, which meters the packets an agent proposes
    /// (`docs/conformance.md`).
    #[must_use]
    pub fn quick(&self, call: &ToolCall) -> Option<String> {
        let state = self.fresh()?;
        let view = &state.chain.view;
        if !view.report.is_valid() {
            return None;
        }
        let policies = &state.governor.policies;
        let c = state.governor.classify(call);
        if c.tier != Some(warrant_protocol::tiers::ToolTier::Safe)
            || !warrant_protocol::calls::action_preconditions(&c.preconditions, &call.input, call.cwd.as_deref())
                .is_empty()
        {
            return None;
        }
        let now = time::OffsetDateTime::now_utc();
        let id = warrant_protocol::calls::packet_id(call, Some("live"));
        let doc = warrant_protocol::calls::call_packet(
            call,
            &c,
            policies,
            &id,
            &warrant_protocol::clock::format_rfc3339(now),
        );
        let packet = warrant_protocol::packet::packet_from_value(doc, &id).ok()?;
        // Only the class whose evidence was read is judged here (as the view says it was read):
        // the gate reads the summary of the packet's class as the policies name it.
        if state.evidence_only.as_deref().is_some_and(|only| policies.normalize_cow(&packet.action_class) != only) {
            return None;
        }
        let ctx = warrant_protocol::verdict::VerdictContext {
            policies,
            controls: &view.controls,
            now: now.unix_timestamp() as f64 + f64::from(now.nanosecond()) * 1e-9,
        };
        let me = rustix::process::geteuid().as_raw();
        let who = crate::monitor::speakers(&ctx, &packet.agent, me);
        let speaks = match who {
            crate::monitor::Speakers::FirstSeen(_) => *state.packets_all_mine.get_or_init(|| {
                super::owners::all_mine(&self.spool.packets_dir(), &self.config_dir, super::owners::SETTLED)
            }),
            _ => who.allows(me),
        };
        if !speaks {
            return None;
        }
        let tg = warrant_protocol::verdict::packet_gate(&ctx, &packet, &state.index, "local", true);
        let v = warrant_protocol::verdict::evaluate(&ctx, &packet, &tg, None, None);
        (v.state == DecisionState::Allowed).then_some(c.class)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stamp read with one `lstat` where it can be is the stamp of an `lstat` and a `stat`:
    /// for a file, a directory, a missing path, a path under a file, a link to a file, a link to
    /// a directory, a dangling link and a link to a link; and an edit of a link's target moves
    /// the link's stamp.
    #[test]
    fn a_stamp_is_what_lstat_and_stat_say() {
        use std::os::unix::fs::{MetadataExt as _, symlink};
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        std::fs::write(d.join("file"), "a").expect("write");
        std::fs::create_dir(d.join("dir")).expect("mkdir");
        symlink(d.join("file"), d.join("to-file")).expect("link");
        symlink(d.join("dir"), d.join("to-dir")).expect("link");
        symlink(d.join("gone"), d.join("dangling")).expect("link");
        symlink(d.join("to-file"), d.join("to-link")).expect("link");
        let of =
            |m: std::fs::Metadata| (m.dev(), m.ino(), m.len(), m.mtime(), m.mtime_nsec(), m.ctime(), m.ctime_nsec());
        let both = |p: &Path| [std::fs::symlink_metadata(p).ok().map(of), std::fs::metadata(p).ok().map(of)];
        for name in ["file", "dir", "missing", "file/under", "to-file", "to-dir", "dangling", "to-link"] {
            let path = d.join(name);
            assert_eq!(stamp(&path), both(&path), "{name}");
        }
        let before = stamp(&d.join("to-file"));
        std::fs::write(d.join("file"), "longer").expect("write");
        assert_ne!(stamp(&d.join("to-file")), before, "the target's edit is the link's change");
        assert!(stamp(&d.join("dangling"))[0].is_some() && stamp(&d.join("dangling"))[1].is_none());
    }
}
