//! The spool: the directory agents and the console share (`docs/spool.md`).
//!
//! ```text
//! <spool>/packets/<name>.json      approval packets, published by agents (tmp + rename)
//! <spool>/receipts/<name>.json     receipts, published by agents
//! <spool>/decisions/<id>.json      signed decisions for agents to pick up (written atomically)
//! <spool>/chain.jsonl              the OpenTrustGraph chain, append-only, the source of truth
//! ```
//!
//! Scanning never deletes or rewrites what an agent wrote. Files that are symlinks, not regular,
//! over 1 MiB, not JSON, fail their schema, or carry unsafe or duplicate ids are listed as
//! invalid with the reason, beside the valid ones.

use crate::atomic::write_atomic;
use serde_json::{Map, Value};
use std::fs;
use std::io::{self, Read};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use warrant_protocol::chain;
pub use warrant_protocol::chain_evidence::ChainEvidence;
use warrant_protocol::keys::PinnedKeys;
use warrant_protocol::packet::{self, InvalidReason, MAX_FILE_BYTES};

mod batch;
mod decide;
mod decision_files;
mod fold;
mod receipts;
mod records;
mod scan;
mod snapshot;
mod uses;
mod view;

pub use batch::{BatchError, BatchItem, decide_many};
pub use decide::{
    Corrected, CosignProgress, DecideError, Decided, KillRefusalError, PreconditionRecorder, Unobserved, decide,
    decide_system, decide_with, decision_record_body, record_preconditions, refuse_pending_of,
};
pub use decision_files::{
    ids_without_decision_files, listing_view, restore_decision_file, restore_decision_files, verify_chain_restoring,
};
pub use fold::{Wanted, checkpointed_chain_view};
pub use receipts::{
    ReceiptError, ReceiptRequest, observed_receipts, publish_receipt, publish_signed_receipt, receipt_record_body,
    record_receipt,
};
pub use records::{AgentScores, append_control, append_grant, append_key_event, elevation_fields, revoke_grant};
pub(crate) use scan::is_publication;
pub use scan::{FileKind, InvalidFile, PacketEntry, Recheck, Scanner, Snapshot, publisher_label, user_name};
pub use snapshot::{AgentView, SNAPSHOT_FILE, agent_view, agent_view_for_class};
pub use uses::{
    ALLOWED, PERMISSION_AFTER, USE_SUFFIX, Uses, WITHDRAW_MARGIN, WaitHold, Withdrawn, claim_approval,
    claim_corrected_run, claim_grant_use, corrected_call_of, gate_runs, permission_answered_by, read_uses,
    record_answer, record_call, record_corrected_call, record_gate_run, record_wait, withdrawn,
};
pub use view::{
    ChainDecision, ChainView, Cosigning, Decisions, VerifiedView, chain_decision_of, chain_evidence_of,
    decision_evidence, fold_decision, verify_chain, verify_chain_from,
};
/// Environment variable that overrides the default spool directory.
pub const SPOOL_ENV: &str = "WARRANT_SPOOL";

/// One spool, opened as what it is: a directory spool ([`Spool::new`]), whose appends and
/// publications are files and never touch the network, or the replica of a JetStream store
/// ([`Spool::open`] on a directory holding a replica's marker, or `replica::open`), whose
/// appends, publications, claims and decisions go to its store first.
#[derive(Clone)]
pub struct Spool {
    root: PathBuf,
    checkpoint_copies: Option<PathBuf>,
    /// The store this directory replicates (`None`: a directory spool), only ever as the trait
    /// object ([`crate::upstream`]).
    upstream: Option<std::sync::Arc<dyn crate::upstream::Upstream>>,
}

impl std::fmt::Debug for Spool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("Spool");
        d.field("root", &self.root).field("checkpoint_copies", &self.checkpoint_copies);
        d.field("upstream", &self.upstream.as_ref().map(|u| u.location()));
        d.finish()
    }
}

/// Two spools are equal when they are the same directory, with the same checkpoint copies, and
/// both directories or both replicas of the same store.
impl PartialEq for Spool {
    fn eq(&self, other: &Self) -> bool {
        let same_store = match (&self.upstream, &other.upstream) {
            (None, None) => true,
            (Some(a), Some(b)) => a.location() == b.location(),
            _ => false,
        };
        self.root == other.root && self.checkpoint_copies == other.checkpoint_copies && same_store
    }
}

impl Eq for Spool {}

/// The file in a replica's root naming the store it replicates (`nats://…/NAME` and a newline).
pub const REPLICA_MARKER: &str = ".store";

/// A part of the spool only warrant writes that others could write ([`Spool::check_private`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} {problem}", path.display())]
pub struct UnsafeSpool {
    /// The path.
    pub path: PathBuf,
    /// What is wrong: not a real directory or file, another owner, writable by others, or the
    /// operating system's reason it could not be examined.
    pub problem: String,
}

impl Spool {
    /// A directory spool rooted at `root` (nothing is created until [`Spool::ensure`]). Its
    /// appends and publications are files only: for a replica of a store, use [`Spool::open`].
    #[must_use]
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into(), checkpoint_copies: None, upstream: None }
    }

    /// The spool at `root` as what it is: a directory spool, or, when `root` holds a replica's
    /// marker ([`REPLICA_MARKER`]), the replica of the store it names, connected once here (with
    /// `ConnectOptions::from_env`). The marker is read once, when the spool is opened.
    ///
    /// # Errors
    /// A marker that cannot be read or names no store; the store's connection errors; a marker
    /// in a build without the `jetstream` feature (a replica is never worked on as a directory).
    pub fn open(root: impl Into<PathBuf>) -> Result<Self, crate::StoreError> {
        let spool = Self::new(root);
        #[cfg(feature = "jetstream")]
        {
            let Some(url) = crate::replica::store_of(&spool.root)? else { return Ok(spool) };
            let upstream = crate::replica::connect(&url)?;
            Ok(spool.with_upstream(upstream))
        }
        #[cfg(not(feature = "jetstream"))]
        spool.refuse_replica("this build of warrant has no JetStream support")
    }

    /// The directory spool at `root`, never a replica: what a program that works on directory
    /// spools alone opens (the hooks' binary, which hands a replica to `warrant`). Unlike
    /// [`Spool::open`] it reaches no store's client, so a program that opens its spools only
    /// with it links none ([`crate::upstream`]).
    ///
    /// # Errors
    /// [`crate::StoreError::Replica`] when `root` holds a replica's marker ([`REPLICA_MARKER`]),
    /// or a marker that cannot be examined (a replica is never worked on as a directory).
    pub fn open_directory(root: impl Into<PathBuf>) -> Result<Self, crate::StoreError> {
        Self::new(root).refuse_replica("open it as a replica")
    }

    /// `self` unless its root holds a replica's marker (or one that cannot be examined): then
    /// [`crate::StoreError::Replica`] with `why`.
    fn refuse_replica(self, why: &str) -> Result<Self, crate::StoreError> {
        match fs::symlink_metadata(self.root.join(REPLICA_MARKER)) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(self),
            _ => Err(crate::StoreError::Replica { root: self.root, why: why.to_owned() }),
        }
    }

    /// The same directory as the replica of `upstream`: appends, publications, claims and
    /// decision files go to that store first.
    #[must_use]
    pub fn with_upstream(mut self, upstream: std::sync::Arc<dyn crate::upstream::Upstream>) -> Self {
        self.upstream = Some(upstream);
        self
    }

    /// The JetStream store this spool replicates, or `None` for a directory spool.
    #[cfg(feature = "jetstream")]
    #[must_use]
    pub fn upstream(&self) -> Option<std::sync::Arc<crate::jetstream::JetStreamSpool>> {
        std::sync::Arc::clone(self.upstream.as_ref()?).into_any().downcast().ok()
    }

    /// The store this spool replicates, as the directory code calls it (`None`: a directory
    /// spool): where the chain file's appends go first ([`crate::chain_file::Upstream`]), and
    /// publications, claims, decision files and signals too.
    #[must_use]
    pub fn chain_upstream(&self) -> crate::chain_file::Upstream<'_> {
        self.upstream.as_deref()
    }

    /// Whether this spool is the replica of a store.
    #[must_use]
    pub fn is_replica(&self) -> bool {
        self.chain_upstream().is_some()
    }

    /// The same spool, with the principal's own copies of its checkpoints kept in `dir` (a
    /// directory agents cannot write: the CLI and the console use `<config dir>/checkpoints`),
    /// see [`warrant_protocol::checkpoint`].
    #[must_use]
    pub fn with_checkpoint_copies(mut self, dir: impl Into<PathBuf>) -> Self {
        self.checkpoint_copies = Some(dir.into());
        self
    }

    /// Where the principal's copies of checkpoints are kept, if anywhere.
    #[must_use]
    pub fn checkpoint_copies(&self) -> Option<&Path> {
        self.checkpoint_copies.as_deref()
    }

    /// `<data dir>/warrant/spool` from the platform's data directory.
    #[must_use]
    pub fn default_root() -> Option<PathBuf> {
        directories::BaseDirs::new().map(|d| d.data_dir().join("warrant").join("spool"))
    }

    /// The spool directory.
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }
    /// `packets/`.
    #[must_use]
    pub fn packets_dir(&self) -> PathBuf {
        self.root.join("packets")
    }
    /// `receipts/`.
    #[must_use]
    pub fn receipts_dir(&self) -> PathBuf {
        self.root.join("receipts")
    }
    /// `decisions/`.
    #[must_use]
    pub fn decisions_dir(&self) -> PathBuf {
        self.root.join("decisions")
    }
    /// `chain.jsonl`.
    #[must_use]
    pub fn chain_path(&self) -> PathBuf {
        self.root.join("chain.jsonl")
    }
    /// `signals/`: where warrant tells agents to stop (`signals/<agent>.json`, written by the
    /// kill switch).
    #[must_use]
    pub fn signals_dir(&self) -> PathBuf {
        self.root.join("signals")
    }
    /// `uses/`: the claims of single uses of grants and approvals ([`claim_grant_use`],
    /// [`claim_approval`]).
    #[must_use]
    pub fn uses_dir(&self) -> PathBuf {
        self.root.join("uses")
    }

    /// `decisions/<id>.json` (the id must be safe; see [`packet::is_safe_id`]).
    #[must_use]
    pub fn decision_path(&self, packet_id: &str) -> PathBuf {
        self.decisions_dir().join(format!("{packet_id}.json"))
    }

    /// Creates the spool's directories if missing.
    ///
    /// # Errors
    /// I/O errors.
    ///
    /// The spool directory and `decisions/` are created with mode 0755 whatever the umask (a
    /// umask of 002 would otherwise make them group-writable, which [`Spool::check_private`]
    /// refuses); `packets/` and `receipts/` follow the umask, and the principal opens them to the
    /// agents' group (see `docs/spool.md`, "Trust boundary").
    pub fn ensure(&self) -> io::Result<()> {
        use std::os::unix::fs::DirBuilderExt as _;
        let mut private = fs::DirBuilder::new();
        private.recursive(true).mode(0o755);
        for dir in [&self.root, &self.decisions_dir()] {
            if !dir.exists() {
                private.create(dir)?;
                // `mode` is masked by the umask: set it exactly on what was just created.
                fs::set_permissions(dir, fs::Permissions::from_mode(0o755))?;
            }
        }
        for dir in [self.packets_dir(), self.receipts_dir(), self.uses_dir()] {
            fs::create_dir_all(dir)?;
        }
        Ok(())
    }

    /// Checks that the parts of the spool only warrant writes are the principal's alone: the
    /// spool directory and `decisions/` are real directories (not symlinks), and they and
    /// `chain.jsonl` are owned by this user and not writable by group or others. Agents publish
    /// into `packets/` and `receipts/` only (see `docs/spool.md`, "Trust boundary").
    ///
    /// # Errors
    /// [`UnsafeSpool`] naming the first unsafe path and what is wrong with it.
    pub fn check_private(&self) -> Result<(), UnsafeSpool> {
        use std::os::unix::fs::PermissionsExt as _;
        let me = rustix::process::geteuid().as_raw();
        let checks = [(self.root.clone(), true), (self.decisions_dir(), true), (self.chain_path(), false)];
        for (path, dir) in checks {
            let meta = match fs::symlink_metadata(&path) {
                Ok(m) => m,
                Err(e) if e.kind() == io::ErrorKind::NotFound && !dir => continue,
                Err(e) => return Err(UnsafeSpool { path, problem: e.to_string() }),
            };
            let kind_ok = if dir { meta.file_type().is_dir() } else { meta.file_type().is_file() };
            if !kind_ok {
                let want = if dir { "a directory" } else { "a regular file" };
                return Err(UnsafeSpool { path, problem: format!("is not {want} (symlinks are refused)") });
            }
            if meta.uid() != me {
                let problem = format!("is owned by uid {}, not by this user ({me})", meta.uid());
                return Err(UnsafeSpool { path, problem });
            }
            if meta.permissions().mode() & 0o022 != 0 {
                let problem = format!(
                    "is writable by group or others (mode {:o}); only packets/ and receipts/ may be",
                    meta.permissions().mode() & 0o7777
                );
                return Err(UnsafeSpool { path, problem });
            }
        }
        Ok(())
    }

    /// [`Spool::publish`], but never replacing a file: `ErrorKind::AlreadyExists` when
    /// `<dir>/<id>.json` exists (the rename is a no-clobber link, so two publishers racing for one
    /// id cannot both succeed).
    ///
    /// # Errors
    /// As [`Spool::publish`], and `AlreadyExists`.
    pub fn publish_new(&self, dir: &Path, id: &str, doc: &Value) -> io::Result<PathBuf> {
        if !packet::is_safe_id(id) {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("unsafe id {id:?}")));
        }
        let bytes = spool_json(doc)?;
        if let Some(store) = self.chain_upstream() {
            return store.publish(self, dir, id, doc, true);
        }
        fs::create_dir_all(dir)?;
        let path = dir.join(format!("{id}.json"));
        crate::atomic::write_new(&path, &bytes, 0o644)?;
        Ok(path)
    }

    /// Publishes a JSON document as `<dir>/<id>.json` the way agents must: written to a
    /// temporary dot-file in the same directory, synced, then renamed into place. In a replica
    /// of a JetStream store, a packet or receipt is published to the store first, on its
    /// agent's subject ([`crate::upstream::Upstream::publish`]).
    ///
    /// # Errors
    /// An unsafe id, or I/O errors.
    pub fn publish(&self, dir: &Path, id: &str, doc: &Value) -> io::Result<PathBuf> {
        if !packet::is_safe_id(id) {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("unsafe id {id:?}")));
        }
        let bytes = spool_json(doc)?;
        if let Some(store) = self.chain_upstream() {
            return store.publish(self, dir, id, doc, false);
        }
        fs::create_dir_all(dir)?;
        let path = dir.join(format!("{id}.json"));
        write_atomic(&path, &bytes, 0o644)?;
        Ok(path)
    }
}

/// `doc` as a spool file holds it: pretty JSON and a newline, or compact JSON when the pretty
/// form would pass [`MAX_FILE_BYTES`] (indentation grows with nesting: a deeply nested input
/// would be written many times its size). Never more than `MAX_FILE_BYTES`, and never made
/// larger in memory first: a document past the limit is refused as it is written.
///
/// # Errors
/// `InvalidInput` for a document that is over [`MAX_FILE_BYTES`] even compact (every reader
/// would list it as invalid): the caller refuses what it was publishing.
pub fn spool_json(doc: &Value) -> io::Result<Vec<u8>> {
    /// A buffer that refuses to grow past `MAX_FILE_BYTES`.
    struct Bounded(Vec<u8>);
    impl io::Write for Bounded {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if (self.0.len() + buf.len()) as u64 >= MAX_FILE_BYTES {
                return Err(io::Error::new(io::ErrorKind::FileTooLarge, "over the limit"));
            }
            self.0.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut out = Bounded(Vec::new());
    if serde_json::to_writer_pretty(&mut out, doc).is_err() {
        out.0.clear();
        serde_json::to_writer(&mut out, doc).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("the document is over {MAX_FILE_BYTES} bytes, the most a spool file may hold: not published"),
            )
        })?;
    }
    out.0.push(b'\n');
    Ok(out.0)
}

/// Reads a spool file safely: regular files only (symlinks refused: opened with `O_NOFOLLOW`,
/// and with `O_NONBLOCK`, so a FIFO never blocks; what was opened is checked by `fstat`), at most
/// [`MAX_FILE_BYTES`].
///
/// # Errors
/// [`InvalidReason::NotRegular`], [`InvalidReason::TooLarge`] or [`InvalidReason::Io`].
pub fn read_limited(path: &Path) -> Result<Vec<u8>, InvalidReason> {
    read_limited_meta(path).map(|(bytes, _)| bytes)
}

/// [`read_limited`], with the metadata of the file read (its `fstat`, taken before the read): an
/// `open`, an `fstat`, the reads and a `close`, and no path lookup but the `open`'s.
///
/// # Errors
/// As [`read_limited`]: a path that cannot be opened is [`InvalidReason::NotRegular`] when its
/// `lstat` shows something other than a regular file (a symbolic link, which `O_NOFOLLOW`
/// refuses), else [`InvalidReason::Io`].
pub fn read_limited_meta(path: &Path) -> Result<(Vec<u8>, fs::Metadata), InvalidReason> {
    let io = |e: io::Error| InvalidReason::Io(e.to_string());
    let file = match fs::OpenOptions::new()
        .read(true)
        .custom_flags(crate::open_flags::NOFOLLOW | crate::open_flags::NONBLOCK)
        .open(path)
    {
        Ok(file) => file,
        Err(e) => {
            return Err(match fs::symlink_metadata(path) {
                Ok(meta) if !meta.file_type().is_file() => InvalidReason::NotRegular,
                _ => io(e),
            });
        }
    };
    let meta = file.metadata().map_err(io)?;
    if !meta.file_type().is_file() {
        return Err(InvalidReason::NotRegular);
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(InvalidReason::TooLarge(meta.len()));
    }
    // One byte more than the file holds: a file that has not grown since the `fstat` is read to
    // its end without the buffer growing.
    let mut buf = Vec::with_capacity(meta.len() as usize + 1);
    file.take(MAX_FILE_BYTES + 1).read_to_end(&mut buf).map_err(io)?;
    if buf.len() as u64 > MAX_FILE_BYTES {
        return Err(InvalidReason::TooLarge(buf.len() as u64));
    }
    Ok((buf, meta))
}

/// The file name a spool message gets in a replica that names it by its stream sequence:
/// `~AGENT@SEQ.json` (`~` sorts after every id character, so a file named by its packet id wins
/// a repeated id; `@` is no id character, so the agent is read back unambiguously).
#[must_use]
pub fn sequence_name(agent: &str, seq: u64) -> String {
    format!("~{agent}@{seq}.json")
}

/// The agent a replica file name of [`sequence_name`]'s form names, or `None` for another name.
#[must_use]
pub fn agent_of_name(stem: &str) -> Option<&str> {
    stem.strip_prefix('~')?.split_once('@').map(|(agent, _)| agent)
}

/// Whether this process's user owns the spool directory (the principal); an agent publishing
/// into a shared spool does not.
#[must_use]
pub fn owned_by_me(spool: &Spool) -> bool {
    // The directory itself, through a symbolic link (which anyone may own).
    fs::metadata(spool.root()).is_ok_and(|m| m.uid() == rustix::process::geteuid().as_raw())
}

/// The first reason the record `body` would not verify once sealed onto `head` (shape, approval
/// rule, and with `pinned` its signature), as `[check] message`.
fn first_problem(body: &Map<String, Value>, head: &chain::ChainHead, pinned: Option<&PinnedKeys>) -> Option<String> {
    let sealed = chain::seal(body.clone(), head);
    let problems = sealed.record.as_object().map(|r| chain::check_new_record(r, pinned)).unwrap_or_default();
    if let Some(f) = problems.first() {
        return Some(format!("[{}] {}", f.check.as_str(), f.message));
    }
    // The line as written must hash the same once read back (a float whose text does not
    // round-trip would break the chain for every verifier).
    let reread: Option<Map<String, Value>> =
        serde_json::from_slice(&warrant_protocol::canonical::to_canonical_vec(&sealed.record)).ok();
    let rehashed = reread.map(|r| {
        warrant_protocol::canonical::prefixed(&warrant_protocol::canonical::canonical_digest_without(&r, "entry_hash"))
    });
    (rehashed.as_deref() != Some(sealed.entry_hash.as_str())).then(|| {
        "[entry_hash] the record would not hash the same once read back (a number that does not round-trip)".to_owned()
    })
}
