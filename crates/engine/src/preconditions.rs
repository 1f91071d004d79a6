//! Observing the world for two-phase execution (lodestar-and-tiers.md §A3): the checks warrant
//! itself can evaluate for a contract's preconditions. This is the I/O edge; comparing what was
//! recorded at approval with what is observed now is the pure [`warrant_protocol::ladder::revalidate`].
//!
//! | `check_id` | `parameters` | observed value |
//! | --- | --- | --- |
//! | `file.sha256` | `{"path": "/abs/file"}` | `"sha256:<hex>"` of the contents, `null` when absent |
//! | `file.exists` | `{"path": "/abs/path"}` | `true` / `false` |
//! | `git.head_unchanged` (also `git.head`) | `{"repo": "/abs/repo"}` | the object id `HEAD` resolves to (40 or 64 lowercase hex digits) |
//!
//! The principal's process does the observing, and an agent names the paths, so an observation
//! must never tell an agent anything the agent could not read itself (`docs/spool.md`,
//! Threat model):
//! - **Confinement.** A path must be absolute, without `.` or `..`, and inside one of the roots
//!   the principal declares in `policy.toml` (`[preconditions] roots`, an agent's workspace). It
//!   is opened one component at a time from the root with `O_NOFOLLOW`, so a symlink anywhere
//!   below the root is refused, never followed. The configuration directory (the principal's key,
//!   pinned keys, checkpoints) is refused wherever it appears, by path and by inode. No roots
//!   declared: every file and git check fails closed.
//! - **No content.** A file is represented by its digest or its existence; a git `HEAD` is parsed
//!   (`ref: refs/…` or an object id) and anything else fails closed. No error message quotes what
//!   a file holds.
//! - **A budget.** At most [`Budget::checks_per_packet`] checks per packet, bytes per file and
//!   per packet, and wall time per packet; past any of them the check fails closed. Digests are
//!   kept per inode while the file's size, modification and change times stay the same (the
//!   change time is one the file's owner cannot set), so a thousand packets naming one large
//!   file hash it once.
//!
//! - **As the publisher.** What is observed for a packet the principal approves or reviews is
//!   observed as its publisher (the uid owning the packet file) could: every directory on the
//!   way must be searchable and a file read must be readable by that user (its uid and groups,
//!   by the mode bits; an ACL that grants more is not consulted, so it fails closed). Otherwise
//!   the check cannot be observed and the packet cannot be approved, with the reason: a
//!   principal's approval never records the digest of a file its agent could not read, nor
//!   whether a path it could not reach exists.
//!
//! Callers observe off the console's UI thread and never while holding the chain's lock.
//!
//! Any other `check_id` cannot be observed, which fails the precondition closed.

use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use warrant_protocol::ladder::{ActionPrecondition, Revalidation, revalidate};

/// The `check_id`s [`Observer::observe`] knows (the protocol's list).
pub use warrant_protocol::ladder::PRECONDITION_CHECKS as CHECKS;

/// Limits on what observing one packet's preconditions may cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Checks observed per packet; the ones past it fail closed.
    pub checks_per_packet: usize,
    /// Largest file `file.sha256` hashes, in bytes.
    pub bytes_per_file: u64,
    /// Bytes read for one packet's checks, all of them together.
    pub bytes_per_packet: u64,
    /// Wall time for one packet's checks.
    pub time_per_packet: Duration,
}

impl Default for Budget {
    /// 8 checks, 64 MiB a file, 64 MiB and 2 s a packet.
    fn default() -> Self {
        Self {
            checks_per_packet: 8,
            bytes_per_file: 64 << 20,
            bytes_per_packet: 64 << 20,
            time_per_packet: Duration::from_secs(2),
        }
    }
}

/// The user a packet's checks are observed for ([`Observer`], "As the publisher"): its uid and
/// every group it is in, from the user database. `None` where the observing process runs as
/// that user (the kernel then checks) or as a user that may read everything anyway (root
/// publishing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reader {
    uid: u32,
    gids: Vec<u32>,
}

impl Reader {
    /// The reader for packets published by `uid`, or `None` when this process is `uid` or the
    /// publisher is root.
    #[must_use]
    pub fn for_publisher(uid: u32) -> Option<Self> {
        if uid == 0 || uid == rustix::process::geteuid().as_raw() {
            return None;
        }
        let gids = uzers::get_user_by_uid(uid)
            .map(|u| {
                let mut g: Vec<u32> = uzers::get_user_groups(u.name(), u.primary_group_id())
                    .map(|gs| gs.iter().map(uzers::Group::gid).collect())
                    .unwrap_or_default();
                g.push(u.primary_group_id());
                g
            })
            .unwrap_or_default();
        Some(Self { uid, gids })
    }

    /// Whether this user has every permission in `want` (`0o4` read, `0o1` search) on the file
    /// `st` describes, by its mode bits.
    fn may(&self, st: &rustix::fs::Stat, want: u32) -> bool {
        let mode = st.st_mode;
        let bits = if st.st_uid == self.uid {
            mode >> 6
        } else if self.gids.contains(&st.st_gid) {
            mode >> 3
        } else {
            mode
        };
        bits & want == want
    }

    /// Refuses `path` (the file `st` describes) unless this user has `want` on it.
    fn check(&self, path: &Path, st: &rustix::fs::Stat, want: u32) -> Result<(), String> {
        if self.may(st, want) {
            return Ok(());
        }
        let what = if want == 0o1 { "search" } else { "read" };
        Err(format!(
            "its publisher ({}) may not {what} {}: a precondition observes only what its publisher may read",
            warrant_store::spool::publisher_label(self.uid),
            path.display()
        ))
    }
}

/// What one packet's checks have spent of the [`Budget`].
#[derive(Debug)]
struct Spent {
    checks: usize,
    bytes: u64,
    deadline: Instant,
    /// Whom the checks are observed for (`None`: this process's own permissions).
    reader: Option<Reader>,
}

/// A digest kept per `(dev, ino)`: valid while size, mtime and ctime (nanoseconds) are unchanged.
type Stamp = (u64, i128, i128);

/// Observes preconditions for the principal, confined to the declared roots and within a budget
/// (see the module docs). Cheap to share: the digest cache is behind a lock.
#[derive(Debug, Default)]
pub struct Observer {
    /// Each root as declared and as made canonical: a path may name it either way, and the walk
    /// opens the canonical one.
    roots: Vec<(PathBuf, PathBuf)>,
    /// The principal's configuration directory, canonical, and its `(dev, ino)`.
    guarded: Option<(PathBuf, (u64, u64))>,
    budget: Budget,
    digests: Mutex<HashMap<(u64, u64), (Stamp, String)>>,
}

/// Deciding records an approval's preconditions as this observer sees them (the store's side
/// of it, [`warrant_store::spool::decide_with`]).
impl warrant_store::spool::PreconditionRecorder for Observer {
    fn record(&self, preconditions: &[ActionPrecondition], publisher: Option<u32>) -> Result<Option<Value>, String> {
        Observer::record(self, preconditions, publisher)
    }
}

/// Most digests kept; the cache is emptied when it is full.
const MAX_KEPT_DIGESTS: usize = 4096;

fn errno_text(path: &Path, e: Errno) -> String {
    format!("{}: {}", path.display(), std::io::Error::from(e))
}

impl Observer {
    /// An observer confined to `roots` (the principal's declared workspaces; made canonical here,
    /// so a root may itself be reached through a symlink the principal chose), refusing the
    /// configuration directory `config_dir` wherever it appears.
    #[must_use]
    pub fn new(roots: &[PathBuf], config_dir: Option<&Path>, budget: Budget) -> Self {
        use std::os::unix::fs::MetadataExt as _;
        let guarded = config_dir.and_then(|d| {
            let canonical = std::fs::canonicalize(d).ok()?;
            let meta = std::fs::metadata(&canonical).ok()?;
            Some((canonical, (meta.dev(), meta.ino())))
        });
        let roots = roots.iter().map(|r| (r.clone(), std::fs::canonicalize(r).unwrap_or_else(|_| r.clone()))).collect();
        Self { roots, guarded, budget, digests: Mutex::default() }
    }

    /// The observer for a policy set's `[preconditions] roots`, guarding `config_dir`.
    #[must_use]
    pub fn for_policies(policies: &warrant_protocol::graduation::PolicySet, config_dir: Option<&Path>) -> Self {
        Self::new(policies.precondition_roots(), config_dir, Budget::default())
    }

    /// Observes one check now, outside any budget but the per-file one (the CLI's one-off use).
    ///
    /// # Errors
    /// A sentence for an unknown check, bad parameters, a path outside the roots or through a
    /// symlink, a budget exceeded, or an I/O error other than "not found". It never quotes what
    /// a file holds.
    pub fn observe(&self, check_id: &str, parameters: &Value) -> Result<Value, String> {
        self.observe_within(check_id, parameters, &mut self.spent())
    }

    fn spent(&self) -> Spent {
        self.spent_for(None)
    }

    fn spent_for(&self, publisher: Option<u32>) -> Spent {
        Spent {
            checks: 0,
            bytes: 0,
            deadline: Instant::now() + self.budget.time_per_packet,
            reader: publisher.and_then(Reader::for_publisher),
        }
    }

    fn observe_within(&self, check_id: &str, parameters: &Value, spent: &mut Spent) -> Result<Value, String> {
        spent.checks += 1;
        if spent.checks > self.budget.checks_per_packet {
            return Err(format!(
                "over the budget of {} precondition checks per packet: not observed",
                self.budget.checks_per_packet
            ));
        }
        match check_id {
            "file.sha256" => {
                let path = abs_path(parameters, "path")?;
                self.file_digest(&path, spent)
            }
            "file.exists" => {
                let path = abs_path(parameters, "path")?;
                let (dir, name) = match self.open_parent(&path, spent.reader.as_ref()) {
                    Ok(p) => p,
                    Err(Missing) => return Ok(json!(false)),
                    Err(e) => return Err(e.into_message()),
                };
                match rustix::fs::statat(&dir, name.as_str(), AtFlags::SYMLINK_NOFOLLOW) {
                    Ok(st) if file_type(&st) == rustix::fs::FileType::Symlink => {
                        Err(format!("{} is a symlink (not followed)", path.display()))
                    }
                    Ok(st) => {
                        self.refuse_guarded(&path, &st)?;
                        Ok(json!(true))
                    }
                    Err(Errno::NOENT) => Ok(json!(false)),
                    Err(e) => Err(errno_text(&path, e)),
                }
            }
            "git.head_unchanged" | "git.head" => {
                self.git_head(&abs_path(parameters, "repo")?, spent).map(Value::String)
            }
            other => Err(format!("warrant cannot observe {other:?} (it knows {})", CHECKS.join(", "))),
        }
    }

    /// Observes each precondition marked `must_revalidate_at_execution` now, within one packet's
    /// budget, in order (`None` for one not marked): what [`crate::govern::Governor::submit`]
    /// records as a call's `expected_at_approval` when the call is proposed.
    #[must_use]
    pub fn observe_each(&self, preconditions: &[ActionPrecondition]) -> Vec<Option<Result<Value, String>>> {
        let mut spent = self.spent();
        preconditions
            .iter()
            .map(|p| {
                p.must_revalidate_at_execution.then(|| self.observe_within(&p.check_id, &p.parameters, &mut spent))
            })
            .collect()
    }

    /// Re-checks preconditions against the world now ([`warrant_protocol::ladder::revalidate`] with this
    /// observer, one packet's budget): the execution-time check of an approved action.
    #[must_use]
    pub fn recheck(&self, preconditions: &[ActionPrecondition]) -> Revalidation {
        let mut spent = self.spent();
        revalidate(preconditions, |p| self.observe_within(&p.check_id, &p.parameters, &mut spent))
    }

    /// The review-time check of a pending packet: a precondition the agent gave a value for must
    /// hold now; one without a value will be recorded at approval, so it is shown with what is
    /// observed now as its expected value (it fails only when it cannot be observed).
    /// `publisher` is the uid owning the packet file: the checks are observed as that user could
    /// (the module docs, "As the publisher"); `None` observes with this process's permissions.
    #[must_use]
    pub fn recheck_pending(&self, preconditions: &[ActionPrecondition], publisher: Option<u32>) -> Revalidation {
        let mut spent = self.spent_for(publisher);
        let mut now: Vec<Option<Result<Value, String>>> = preconditions
            .iter()
            .map(|p| {
                p.must_revalidate_at_execution.then(|| self.observe_within(&p.check_id, &p.parameters, &mut spent))
            })
            .collect();
        let filled: Vec<ActionPrecondition> = preconditions
            .iter()
            .zip(&now)
            .map(|(p, observed)| {
                let mut p = p.clone();
                if p.expected_at_approval.is_null()
                    && let Some(Ok(v)) = observed
                {
                    p.expected_at_approval = v.clone();
                }
                p
            })
            .collect();
        let mut observed = now.iter_mut().filter_map(Option::take);
        revalidate(&filled, |_| observed.next().unwrap_or_else(|| Err("not observed".into())))
    }

    /// The preconditions to record when approving a packet with `preconditions` (§A3): each one
    /// marked `must_revalidate_at_execution`, observed now within one packet's budget. One whose
    /// `expected_at_approval` is set must hold now; one without is recorded with what is
    /// observed. `None` when there is nothing to re-check. Observed as `publisher` could (the
    /// module docs, "As the publisher"; `None`: with this process's permissions).
    ///
    /// # Errors
    /// A sentence naming the first check that does not hold or cannot be observed (one its
    /// publisher may not read among them).
    pub fn record(
        &self,
        preconditions: &[ActionPrecondition],
        publisher: Option<u32>,
    ) -> Result<Option<Value>, String> {
        let mut spent = self.spent_for(publisher);
        let mut recorded = Vec::new();
        for p in preconditions.iter().filter(|p| p.must_revalidate_at_execution) {
            let observed = self
                .observe_within(&p.check_id, &p.parameters, &mut spent)
                .map_err(|e| format!("{:?} cannot be observed: {e}", p.check_id))?;
            if !p.expected_at_approval.is_null() && p.expected_at_approval != observed {
                return Err(format!("{:?} expected {} but observed {observed}", p.check_id, p.expected_at_approval));
            }
            recorded.push(json!({
                "check_id": p.check_id, "parameters": p.parameters, "expected_at_approval": observed,
            }));
        }
        Ok((!recorded.is_empty()).then_some(Value::Array(recorded)))
    }

    /// The root `path` lies in (canonical) and the rest of `path` below it, or why it may not be
    /// observed.
    fn root_of<'p>(&self, path: &'p Path) -> Result<(&Path, &'p Path), String> {
        if path.components().any(|c| matches!(c, Component::ParentDir | Component::CurDir)) {
            return Err(format!("{} must not contain `.` or `..`", path.display()));
        }
        if let Some((config, _)) = &self.guarded
            && (path.starts_with(config) || config.starts_with(path))
        {
            return Err(format!("{} is warrant's configuration directory or holds it: refused", path.display()));
        }
        if self.roots.is_empty() {
            return Err(
                "no precondition roots are declared ([preconditions] roots in policy.toml): file and git checks fail closed"
                    .into(),
            );
        }
        let (root, rest) = self
            .roots
            .iter()
            .find_map(|(declared, canonical)| {
                let rest = path.strip_prefix(canonical).or_else(|_| path.strip_prefix(declared)).ok()?;
                Some((canonical.as_path(), rest))
            })
            .ok_or_else(|| {
                format!(
                    "{} is outside the precondition roots declared in policy.toml ([preconditions] roots)",
                    path.display()
                )
            })?;
        if let Some((config, _)) = &self.guarded
            && root.starts_with(config)
        {
            return Err(format!(
                "the precondition root {} is inside warrant's configuration directory",
                root.display()
            ));
        }
        Ok((root, rest))
    }

    /// Refuses the configuration directory (by inode) wherever a walk meets it.
    fn refuse_guarded(&self, path: &Path, st: &rustix::fs::Stat) -> Result<(), String> {
        match &self.guarded {
            Some((_, id)) if *id == (st.st_dev, st.st_ino) => {
                Err(format!("{} is warrant's configuration directory: refused", path.display()))
            }
            _ => Ok(()),
        }
    }

    /// Opens the directory holding `path`'s last component, walking from its root one component
    /// at a time without following symlinks, and returns it with that last component.
    /// With a `reader`, every directory from `/` to the last one must be searchable by it.
    fn open_parent(&self, path: &Path, reader: Option<&Reader>) -> Result<(OwnedFd, String), WalkError> {
        let (root, below) = self.root_of(path).map_err(WalkError::Refused)?;
        if let Some(r) = reader {
            // The root's own ancestors: the walk below starts at the root.
            for dir in root.ancestors().skip(1) {
                let st = rustix::fs::stat(dir).map_err(|e| WalkError::Refused(errno_text(dir, e)))?;
                r.check(dir, &st, 0o1).map_err(WalkError::Refused)?;
            }
        }
        let rest: Vec<String> = below.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
        let Some((last, dirs)) = rest.split_last() else {
            return Err(WalkError::Refused(format!("{} is a precondition root itself", path.display())));
        };
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let mut dir = rustix::fs::open(root, flags, Mode::empty()).map_err(|e| match e {
            Errno::NOENT => Missing,
            e => WalkError::Refused(errno_text(root, e)),
        })?;
        self.check_dir(path, &dir, reader)?;
        for name in dirs {
            dir = rustix::fs::openat(&dir, name.as_str(), flags | OFlags::NOFOLLOW, Mode::empty()).map_err(
                |e| match e {
                    Errno::NOENT => Missing,
                    Errno::LOOP | Errno::NOTDIR => WalkError::Refused(format!(
                        "{}: {name:?} is a symlink or not a directory (symlinks below a root are not followed)",
                        path.display()
                    )),
                    e => WalkError::Refused(errno_text(path, e)),
                },
            )?;
            self.check_dir(path, &dir, reader)?;
        }
        Ok((dir, last.clone()))
    }

    fn check_dir(&self, path: &Path, dir: &OwnedFd, reader: Option<&Reader>) -> Result<(), WalkError> {
        let st = rustix::fs::fstat(dir).map_err(|e| WalkError::Refused(errno_text(path, e)))?;
        self.refuse_guarded(path, &st).map_err(WalkError::Refused)?;
        match reader {
            Some(r) => r.check(path.parent().unwrap_or(path), &st, 0o1).map_err(WalkError::Refused),
            None => Ok(()),
        }
    }

    /// Opens the regular file at `path` (confined, no symlinks), at most `limit` bytes. `None`
    /// when it does not exist.
    /// With a `reader`, the file must be readable by it (and its directories searchable).
    fn open_file(
        &self,
        path: &Path,
        limit: u64,
        reader: Option<&Reader>,
    ) -> Result<Option<(std::fs::File, rustix::fs::Stat)>, String> {
        let (dir, name) = match self.open_parent(path, reader) {
            Ok(p) => p,
            Err(Missing) => return Ok(None),
            Err(e) => return Err(e.into_message()),
        };
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd = match rustix::fs::openat(&dir, name.as_str(), flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(None),
            Err(Errno::LOOP) => return Err(format!("{} is a symlink (not followed)", path.display())),
            Err(e) => return Err(errno_text(path, e)),
        };
        let st = rustix::fs::fstat(&fd).map_err(|e| errno_text(path, e))?;
        if file_type(&st) != rustix::fs::FileType::RegularFile {
            return Err(format!("{} is not a regular file", path.display()));
        }
        if let Some(r) = reader {
            r.check(path, &st, 0o4)?;
        }
        if u64::try_from(st.st_size).unwrap_or(u64::MAX) > limit {
            return Err(format!("{} is over {limit} bytes", path.display()));
        }
        Ok(Some((std::fs::File::from(fd), st)))
    }

    /// Reads all of `file` (at most `limit` bytes) into `sink`, charging `spent`.
    fn read_charged(
        &self,
        path: &Path,
        mut file: std::fs::File,
        spent: &mut Spent,
        mut sink: impl FnMut(&[u8]),
    ) -> Result<(), String> {
        let mut buf = vec![0u8; 1 << 16];
        loop {
            if Instant::now() > spent.deadline {
                return Err(format!(
                    "over the time budget of {:?} per packet while reading {}",
                    self.budget.time_per_packet,
                    path.display()
                ));
            }
            let n = file.read(&mut buf).map_err(|e| format!("{}: {e}", path.display()))?;
            if n == 0 {
                return Ok(());
            }
            spent.bytes += n as u64;
            if spent.bytes > self.budget.bytes_per_packet {
                return Err(format!("over the budget of {} bytes read per packet", self.budget.bytes_per_packet));
            }
            sink(&buf[..n]);
        }
    }

    fn file_digest(&self, path: &Path, spent: &mut Spent) -> Result<Value, String> {
        let Some((file, st)) = self.open_file(path, self.budget.bytes_per_file, spent.reader.as_ref())? else {
            return Ok(Value::Null);
        };
        let key = (st.st_dev, st.st_ino);
        let stamp: Stamp = (
            u64::try_from(st.st_size).unwrap_or(u64::MAX),
            i128::from(st.st_mtime) * 1_000_000_000 + i128::from(st.st_mtime_nsec),
            i128::from(st.st_ctime) * 1_000_000_000 + i128::from(st.st_ctime_nsec),
        );
        if let Some((kept, digest)) = self.digests.lock().ok().and_then(|m| m.get(&key).cloned())
            && kept == stamp
        {
            return Ok(json!(digest));
        }
        let mut hasher = Sha256::new();
        self.read_charged(path, file, spent, |b| hasher.update(b))?;
        let digest = format!("sha256:{}", warrant_protocol::canonical::hex(&hasher.finalize()));
        if let Ok(mut m) = self.digests.lock() {
            if m.len() >= MAX_KEPT_DIGESTS {
                m.clear();
            }
            m.insert(key, (stamp, digest.clone()));
        }
        Ok(json!(digest))
    }

    /// A small text file below a repository (`HEAD`, a loose ref, `packed-refs`), confined.
    fn read_small(&self, path: &Path, limit: u64, spent: &mut Spent) -> Result<Option<Vec<u8>>, String> {
        let Some((file, _)) = self.open_file(path, limit, spent.reader.as_ref())? else { return Ok(None) };
        let mut out = Vec::new();
        self.read_charged(path, file, spent, |b| out.extend_from_slice(b))?;
        Ok(Some(out))
    }

    /// The object id `HEAD` of the repository at `repo` resolves to, read from `.git` directly (a
    /// detached object id, a loose ref, or `packed-refs`). Only well-formed refs and object ids
    /// are accepted; nothing a file holds is ever returned or quoted otherwise.
    fn git_head(&self, repo: &Path, spent: &mut Spent) -> Result<String, String> {
        let git = repo.join(".git");
        let head = self.read_small(&git.join("HEAD"), 4096, spent)?.ok_or_else(|| {
            format!("{}: no .git/HEAD (a `.git` file or a bare repository is not read)", repo.display())
        })?;
        match parse_head(&head)? {
            Head::Detached(id) => Ok(id),
            Head::Ref(reference) => {
                if let Some(loose) = self.read_small(&git.join(&reference), 4096, spent)? {
                    return object_id(&loose).ok_or_else(|| format!("{reference} does not hold an object id"));
                }
                let packed = self
                    .read_small(&git.join("packed-refs"), 16 << 20, spent)?
                    .ok_or_else(|| format!("{reference} does not resolve"))?;
                packed_ref(&packed, &reference).ok_or_else(|| format!("{reference} does not resolve"))
            }
        }
    }
}

/// Observes the preconditions of every pending packet (no decision in `decisions`) whose contract
/// has any to re-check ([`crate::monitor::revalidated_preconditions`]), each within one packet's
/// budget: what [`crate::monitor::assess`] takes as its `revalidations`.
#[must_use]
pub fn observe_pending<D>(
    observer: &Observer,
    packets: &[warrant_store::spool::PacketEntry],
    decisions: &HashMap<String, D>,
) -> crate::monitor::Revalidations {
    let mut out = crate::monitor::Revalidations::default();
    for e in packets.iter().filter(|e| !decisions.contains_key(&e.packet.id)) {
        if let Some(pre) = crate::monitor::revalidated_preconditions(&e.packet) {
            out.insert(e.packet.id.clone(), std::sync::Arc::new(observer.recheck_pending(&pre, Some(e.owner))));
        }
    }
    out
}

/// Why a confined walk stopped.
enum WalkError {
    /// A component does not exist.
    Missing,
    /// Anything else: refused, with the sentence.
    Refused(String),
}
use WalkError::Missing;

impl WalkError {
    fn into_message(self) -> String {
        match self {
            Missing => "not found".into(),
            WalkError::Refused(m) => m,
        }
    }
}

fn file_type(st: &rustix::fs::Stat) -> rustix::fs::FileType {
    rustix::fs::FileType::from_raw_mode(st.st_mode)
}

fn abs_path(parameters: &Value, key: &str) -> Result<PathBuf, String> {
    let p = parameters.get(key).and_then(Value::as_str).ok_or_else(|| format!("parameters.{key} must be a string"))?;
    let path = PathBuf::from(p);
    if !path.is_absolute() {
        return Err(format!("parameters.{key} must be an absolute path, not {p:?}"));
    }
    Ok(path)
}

/// What `.git/HEAD` holds, parsed.
#[derive(Debug, PartialEq, Eq)]
enum Head {
    /// `ref: refs/…`: a well-formed ref name.
    Ref(String),
    /// An object id (40 or 64 lowercase hex digits).
    Detached(String),
}

/// Parses `.git/HEAD`: `ref: <refname>` with a well-formed name under `refs/`, or an object id,
/// each with an optional final newline. Anything else fails, without quoting it.
fn parse_head(bytes: &[u8]) -> Result<Head, String> {
    let text = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    if let Some(name) = text.strip_prefix(b"ref: ") {
        let name = std::str::from_utf8(name).ok().filter(|n| is_ref_name(n));
        return name.map(|n| Head::Ref(n.to_owned())).ok_or_else(|| "HEAD names no well-formed ref under refs/".into());
    }
    object_id(bytes).map(Head::Detached).ok_or_else(|| "HEAD is neither a ref nor an object id".into())
}

/// A ref name under `refs/` that `git check-ref-format` accepts, restricted to a safe alphabet
/// (letters, digits, `-`, `_`, `.`, `/`): no empty component, none starting with `.` or ending in
/// `.lock`, no `..`.
fn is_ref_name(name: &str) -> bool {
    name.starts_with("refs/")
        && name.len() <= 1024
        && name.split('/').all(|c| !c.is_empty() && !c.starts_with('.') && !c.ends_with(".lock") && !c.ends_with('.'))
        && !name.contains("..")
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'/'))
}

/// An object id: 40 (SHA-1) or 64 (SHA-256) lowercase hex digits, with an optional final newline.
fn object_id(bytes: &[u8]) -> Option<String> {
    let id = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    ((id.len() == 40 || id.len() == 64) && id.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
        .then(|| String::from_utf8_lossy(id).into_owned())
}

/// The object id `packed-refs` gives `reference`: lines `<object id> <refname>`; comments (`#`)
/// and peeled lines (`^`) are skipped.
fn packed_ref(bytes: &[u8], reference: &str) -> Option<String> {
    bytes
        .split(|b| *b == b'\n')
        .filter(|l| !l.starts_with(b"#") && !l.starts_with(b"^"))
        .filter_map(|l| {
            let sp = memchr::memchr(b' ', l)?;
            (&l[sp + 1..] == reference.as_bytes()).then(|| object_id(&l[..sp])).flatten()
        })
        .next()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn confined(root: &Path) -> Observer {
        Observer::new(&[root.to_owned()], None, Budget::default())
    }

    #[test]
    fn files_and_git_heads_are_observed_and_unknown_checks_fail() {
        let dir = tempfile::tempdir().expect("tempdir");
        let obs = confined(dir.path());
        let f = dir.path().join("a.txt");
        let params = json!({"path": f.to_str()});
        assert_eq!(obs.observe("file.sha256", &params), Ok(Value::Null));
        assert_eq!(obs.observe("file.exists", &params), Ok(json!(false)));
        std::fs::write(&f, b"abc").expect("write");
        assert_eq!(
            obs.observe("file.sha256", &params),
            Ok(json!("sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"))
        );
        assert_eq!(obs.observe("file.exists", &params), Ok(json!(true)));
        assert!(obs.observe("file.exists", &json!({"path": "relative/x"})).is_err());
        assert!(obs.observe("shell.exec", &json!({})).is_err());
        let git = dir.path().join(".git/refs/heads");
        std::fs::create_dir_all(&git).expect("mkdir");
        std::fs::write(dir.path().join(".git/HEAD"), "ref: refs/heads/main\n").expect("write");
        let one = "1".repeat(40);
        std::fs::write(git.join("main"), format!("{one}\n")).expect("write");
        let repo = json!({"repo": dir.path().to_str()});
        assert_eq!(obs.observe("git.head_unchanged", &repo), Ok(json!(one)));
        std::fs::remove_file(git.join("main")).expect("rm");
        let two = "2".repeat(64);
        std::fs::write(
            dir.path().join(".git/packed-refs"),
            format!("# pack-refs with: peeled\n{two} refs/heads/main\n"),
        )
        .expect("write");
        assert_eq!(obs.observe("git.head", &repo), Ok(json!(two)));
        // A FIFO or a directory is refused at once, never read (a named pipe would hang).
        let fifo = dir.path().join("pipe");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().is_ok_and(|s| s.success());
        assert!(made, "mkfifo");
        let r = obs.observe("file.sha256", &json!({"path": fifo.to_str()}));
        assert!(r.as_ref().is_err_and(|e| e.contains("not a regular file")), "{r:?}");
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).expect("mkdir");
        let r = obs.observe("file.sha256", &json!({"path": sub.to_str()}));
        assert!(r.is_err(), "a directory: {r:?}");
    }

    #[test]
    fn head_contents_are_parsed_never_returned() {
        assert_eq!(parse_head(b"ref: refs/heads/feature/x-1\n"), Ok(Head::Ref("refs/heads/feature/x-1".into())));
        assert_eq!(parse_head(&[b'a'; 40]), Ok(Head::Detached("a".repeat(40))));
        for bad in [
            &b"-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIA==\n"[..],
            b"ref: ../../principal.key",
            b"ref: refs/heads/../x",
            b"ref: refs/heads/.hidden",
            b"ref: refs/heads/x.lock",
            b"ref: HEAD",
            &[b'A'; 40],
            &[b'a'; 41],
            b"",
        ] {
            let e = parse_head(bad).expect_err("malformed HEAD");
            assert!(!e.contains("PRIVATE") && !e.contains("principal"), "{e}");
        }
        assert_eq!(
            packed_ref(format!("^{}\n{} refs/heads/m\n", "c".repeat(40), "d".repeat(40)).as_bytes(), "refs/heads/m"),
            Some("d".repeat(40))
        );
        assert_eq!(packed_ref(b"secret refs/heads/m\n", "refs/heads/m"), None);
    }

    #[test]
    fn paths_outside_the_roots_through_symlinks_or_into_the_config_are_refused() {
        let top = tempfile::tempdir().expect("tempdir");
        let root = top.path().join("work");
        let config = top.path().join("config");
        std::fs::create_dir_all(&root).expect("mkdir");
        std::fs::create_dir_all(&config).expect("mkdir");
        std::fs::write(config.join("principal.key"), b"secret").expect("write");
        std::fs::write(top.path().join("outside.txt"), b"x").expect("write");
        let obs = Observer::new(std::slice::from_ref(&root), Some(&config), Budget::default());
        let refused = |check: &str, key: &str, p: &Path| {
            let r = obs.observe(check, &json!({key: p.to_str()}));
            assert!(r.is_err(), "{check} {}: {r:?}", p.display());
        };
        // Outside the root, through `..`, through a symlink, and the config directory itself.
        refused("file.sha256", "path", &top.path().join("outside.txt"));
        refused("file.exists", "path", &top.path().join("outside.txt"));
        refused("file.sha256", "path", &root.join("../outside.txt"));
        std::os::unix::fs::symlink(config.join("principal.key"), root.join("key")).expect("symlink");
        refused("file.sha256", "path", &root.join("key"));
        refused("file.exists", "path", &root.join("key"));
        std::os::unix::fs::symlink(&config, root.join("cfg")).expect("symlink");
        refused("file.sha256", "path", &root.join("cfg/principal.key"));
        refused("file.exists", "path", &root.join("cfg/principal.key"));
        let repo = root.join("repo");
        std::fs::create_dir_all(repo.join(".git")).expect("mkdir");
        std::os::unix::fs::symlink(config.join("principal.key"), repo.join(".git/HEAD")).expect("symlink");
        refused("git.head_unchanged", "repo", &repo);
        // A root the principal declared through a symlink: a path may name it either way.
        std::fs::write(root.join("ok.txt"), b"ok").expect("write");
        std::os::unix::fs::symlink(&root, top.path().join("work-link")).expect("symlink");
        let linked = Observer::new(&[top.path().join("work-link")], Some(&config), Budget::default());
        for p in [top.path().join("work-link/ok.txt"), root.join("ok.txt")] {
            assert_eq!(linked.observe("file.exists", &json!({"path": p.to_str()})), Ok(json!(true)), "{}", p.display());
        }
        // No roots: everything fails closed.
        let none = Observer::new(&[], Some(&config), Budget::default());
        let r = none.observe("file.exists", &json!({"path": root.join("x").to_str()}));
        assert!(r.is_err_and(|e| e.contains("no precondition roots")));
        // A root that holds the config directory still refuses it, by path.
        let wide = Observer::new(&[top.path().to_owned()], Some(&config), Budget::default());
        let r = wide.observe("file.sha256", &json!({"path": config.join("principal.key").to_str()}));
        assert!(r.is_err_and(|e| e.contains("configuration directory")));
    }

    #[test]
    fn budgets_bound_checks_bytes_and_hash_each_file_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let big = dir.path().join("big");
        std::fs::write(&big, vec![7u8; 3 << 20]).expect("write");
        let budget = Budget { checks_per_packet: 3, bytes_per_packet: 4 << 20, ..Budget::default() };
        let obs = Observer::new(&[dir.path().to_owned()], None, budget);
        let pre = |n: usize| -> Vec<ActionPrecondition> {
            (0..n)
                .map(|_| ActionPrecondition {
                    check_id: "file.sha256".into(),
                    parameters: json!({"path": big.to_str()}),
                    expected_at_approval: Value::Null,
                    must_revalidate_at_execution: true,
                })
                .collect()
        };
        // Three checks of one file: hashed once (the later ones come from the kept digest).
        let rv = obs.recheck_pending(&pre(3), None);
        assert!(rv.ok, "{rv:?}");
        // A fourth check is over the count budget and fails closed.
        let rv = obs.recheck_pending(&pre(4), None);
        assert!(!rv.ok);
        assert!(rv.checks[3].error.as_deref().is_some_and(|e| e.contains("budget")), "{rv:?}");
        // A fresh observer with a smaller byte budget cannot hash the file at all.
        let small = Observer::new(&[dir.path().to_owned()], None, Budget { bytes_per_packet: 1 << 20, ..budget });
        let r = small.observe("file.sha256", &json!({"path": big.to_str()}));
        assert!(r.is_err_and(|e| e.contains("budget")));
        // Changing the file (its ctime moves) is seen: the kept digest is not reused.
        let before = obs.observe("file.sha256", &json!({"path": big.to_str()})).expect("digest");
        std::fs::write(&big, vec![8u8; 3 << 20]).expect("write");
        let after = obs.observe("file.sha256", &json!({"path": big.to_str()})).expect("digest");
        assert_ne!(before, after);
    }
}
