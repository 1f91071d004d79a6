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

use crate::protocol::chain::{self, VerifyOptions};
pub use crate::protocol::chain_evidence::ChainEvidence;
use crate::protocol::control::{ControlEvent, ControlInput, ControlKind, ControlState};
use crate::protocol::decision::{self, DecisionInput, SignedDecision, Verdict};
use crate::protocol::graduation::evidence::{EvidenceRow, SourceType};
use crate::protocol::graduation::receipt::{ReceiptInput, ReceiptOutcome, build_receipt, receipt_evidence};
use crate::protocol::keys::{PinnedKeys, Principal};
use crate::protocol::packet::{self, DecisionState, InvalidReason, MAX_FILE_BYTES, Packet, Receipt};
use crate::store::chain_file::{self, ChainError};
use crate::store::key_files::write_atomic;
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::{self, Read};
use std::os::unix::fs::{DirEntryExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

/// Environment variable that overrides the default spool directory.
pub const SPOOL_ENV: &str = "WARRANT_SPOOL";

/// Paths of one spool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spool {
    root: PathBuf,
    checkpoint_copies: Option<PathBuf>,
}

impl Spool {
    /// A spool rooted at `root` (nothing is created until [`Spool::ensure`]).
    #[must_use]
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into(), checkpoint_copies: None }
    }

    /// The same spool, with the principal's own copies of its checkpoints kept in `dir` (a
    /// directory agents cannot write: the CLI and the console use `<config dir>/checkpoints`),
    /// see [`crate::protocol::checkpoint`].
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
    /// A sentence naming the first unsafe path.
    pub fn check_private(&self) -> Result<(), String> {
        use std::os::unix::fs::PermissionsExt as _;
        let me = rustix::process::geteuid().as_raw();
        let checks = [(self.root.clone(), true), (self.decisions_dir(), true), (self.chain_path(), false)];
        for (path, dir) in checks {
            let meta = match fs::symlink_metadata(&path) {
                Ok(m) => m,
                Err(e) if e.kind() == io::ErrorKind::NotFound && !dir => continue,
                Err(e) => return Err(format!("{}: {e}", path.display())),
            };
            let kind_ok = if dir { meta.file_type().is_dir() } else { meta.file_type().is_file() };
            if !kind_ok {
                let want = if dir { "a directory" } else { "a regular file" };
                return Err(format!("{} is not {want} (symlinks are refused)", path.display()));
            }
            if meta.uid() != me {
                return Err(format!("{} is owned by uid {}, not by this user ({me})", path.display(), meta.uid()));
            }
            if meta.permissions().mode() & 0o022 != 0 {
                return Err(format!(
                    "{} is writable by group or others (mode {:o}); only packets/ and receipts/ may be",
                    path.display(),
                    meta.permissions().mode() & 0o7777
                ));
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
        #[cfg(feature = "jetstream")]
        if let Some(path) = crate::store::replica::publish(self, dir, id, doc, true)? {
            return Ok(path);
        }
        fs::create_dir_all(dir)?;
        let path = dir.join(format!("{id}.json"));
        let mut bytes = serde_json::to_vec_pretty(doc).map_err(io::Error::other)?;
        bytes.push(b'\n');
        let mut tmp = tempfile::Builder::new()
            .prefix(".warrant.")
            .suffix(".tmp")
            .permissions(fs::Permissions::from_mode(0o644))
            .tempfile_in(dir)?;
        io::Write::write_all(&mut tmp, &bytes)?;
        tmp.as_file().sync_all()?;
        tmp.persist_noclobber(&path).map_err(|e| e.error)?;
        fs::File::open(dir)?.sync_all()?;
        Ok(path)
    }

    /// Publishes a JSON document as `<dir>/<id>.json` the way agents must: written to a
    /// temporary dot-file in the same directory, synced, then renamed into place. In a replica
    /// of a JetStream store, a packet or receipt is published to the store first, on its
    /// agent's subject ([`crate::store::replica::publish`]).
    ///
    /// # Errors
    /// An unsafe id, or I/O errors.
    pub fn publish(&self, dir: &Path, id: &str, doc: &Value) -> io::Result<PathBuf> {
        if !packet::is_safe_id(id) {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("unsafe id {id:?}")));
        }
        #[cfg(feature = "jetstream")]
        if let Some(path) = crate::store::replica::publish(self, dir, id, doc, false)? {
            return Ok(path);
        }
        fs::create_dir_all(dir)?;
        let path = dir.join(format!("{id}.json"));
        let mut bytes = serde_json::to_vec_pretty(doc).map_err(io::Error::other)?;
        bytes.push(b'\n');
        write_atomic(&path, &bytes, 0o644)?;
        Ok(path)
    }
}

/// Reads a spool file safely: regular files only (symlinks refused, and `O_NOFOLLOW` against a
/// swap between the check and the open), at most [`MAX_FILE_BYTES`].
///
/// # Errors
/// [`InvalidReason::NotRegular`], [`InvalidReason::TooLarge`] or [`InvalidReason::Io`].
pub fn read_limited(path: &Path) -> Result<Vec<u8>, InvalidReason> {
    let meta = fs::symlink_metadata(path).map_err(|e| InvalidReason::Io(e.to_string()))?;
    if !meta.file_type().is_file() {
        return Err(InvalidReason::NotRegular);
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(InvalidReason::TooLarge(meta.len()));
    }
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| InvalidReason::Io(e.to_string()))?;
    if !file.metadata().map_err(|e| InvalidReason::Io(e.to_string()))?.file_type().is_file() {
        return Err(InvalidReason::NotRegular);
    }
    let mut buf = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_FILE_BYTES + 1).read_to_end(&mut buf).map_err(|e| InvalidReason::Io(e.to_string()))?;
    if buf.len() as u64 > MAX_FILE_BYTES {
        return Err(InvalidReason::TooLarge(buf.len() as u64));
    }
    Ok(buf)
}

/// Which spool directory a file was found in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FileKind {
    /// `packets/`.
    Packet,
    /// `receipts/`.
    Receipt,
}

/// A file that is not a valid packet or receipt, with the reason.
#[derive(Debug, Clone, PartialEq)]
pub struct InvalidFile {
    /// Where it was found.
    pub kind: FileKind,
    /// The file name.
    pub name: String,
    /// Why it is invalid.
    pub reason: InvalidReason,
    /// Arrival time, seconds since the epoch (0 if unknown): see [`PacketEntry::arrived`].
    pub arrived: f64,
}

/// A valid packet with its file's name, arrival time and owner.
#[derive(Debug, Clone, PartialEq)]
pub struct PacketEntry {
    /// The file name in `packets/` (shared with the scanner's cache).
    pub file: Arc<str>,
    /// When the file arrived, seconds since the epoch: its inode change time, which the file's
    /// owner cannot set (`touch -d` sets the modification time, and any change to the file moves
    /// the change time to now). Rate limits are replayed at these times.
    pub arrived: f64,
    /// The uid owning the file: who published it, a fact the agent cannot forge, unlike the
    /// `agent` it claims.
    pub owner: u32,
    /// The parsed packet.
    pub packet: Arc<Packet>,
}

impl PacketEntry {
    /// Seconds since the epoch the packet was created: its own `created_at`, but never later
    /// than its arrival (an agent cannot pin a packet to the top of the list with a future
    /// date), else its arrival.
    #[must_use]
    pub fn created(&self) -> f64 {
        self.packet.created_unix.map_or(self.arrived, |c| c.min(self.arrived))
    }
}

/// The user name of `uid` from the user database (`None` when it has none), remembered for the
/// process's life (the console shows it beside every packet's agent), so each uid is looked up
/// once.
#[must_use]
pub fn user_name(uid: u32) -> Option<Arc<str>> {
    static NAMES: std::sync::OnceLock<std::sync::Mutex<HashMap<u32, Option<Arc<str>>>>> = std::sync::OnceLock::new();
    let names = NAMES.get_or_init(Default::default);
    if let Some(n) = names.lock().ok().and_then(|m| m.get(&uid).cloned()) {
        return n;
    }
    let name: Option<Arc<str>> = uzers::get_user_by_uid(uid).map(|u| u.name().to_string_lossy().into_owned().into());
    if let Ok(mut m) = names.lock() {
        m.insert(uid, name.clone());
    }
    name
}

/// `user (uid N)`, or `uid N` for a uid without a user.
#[must_use]
pub fn publisher_label(uid: u32) -> String {
    user_name(uid)
        .map_or_else(|| format!("uid {uid}"), |n| format!("{} (uid {uid})", crate::protocol::text::inert(&n, 40)))
}

/// What a scan of the spool found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    /// Valid packets, newest first.
    pub packets: Vec<PacketEntry>,
    /// Valid receipts, newest first.
    pub receipts: Vec<Arc<Receipt>>,
    /// Invalid files, by name.
    pub invalid: Vec<InvalidFile>,
    /// The claims in `uses/` ([`read_uses`]; empty for a scan of packets only).
    pub uses: Arc<Uses>,
}

impl Snapshot {
    /// The packet with this id.
    #[must_use]
    pub fn packet(&self, id: &str) -> Option<&PacketEntry> {
        self.packets.iter().find(|p| p.packet.id == id)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    mtime_ns: i128,
    ctime: (i64, i64),
    ino: u64,
    uid: u32,
}

enum Parsed {
    Packet(Arc<Packet>),
    Receipt(Arc<Receipt>),
    Invalid(InvalidReason),
}

/// What a scan re-checks of the files a [`Scanner`] parsed before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recheck {
    /// Every file's `lstat`: its size, modification and change times and inode. One system call
    /// per file, so it costs in proportion to the spool.
    Every,
    /// Only the directory listing's inode numbers: new files, files renamed into place (the way
    /// agents publish) and removed files are found, but a file rewritten in place under the same
    /// inode is not. For a caller that is told about in-place writes some other way (the
    /// console's watcher) and scans with [`Recheck::Every`] then.
    Renamed,
    /// No listing: only the names given to [`Scanner::recheck_names`] are `lstat`ed, in both
    /// directories, so a scan costs in proportion to the names, not to the spool. For a caller
    /// told of every name that changed (the console's inotify watcher, when it lost no events
    /// and saw no directory replaced). A scanner with no complete listing yet (a new one, or one
    /// whose last scan failed) lists as [`Recheck::Renamed`] does.
    Touched,
}

/// A file a scan listed: its kind and name.
type SeenFile = (FileKind, Arc<str>);

/// A scanner's files of one kind: name → stamp, arrival time (the change time, seconds), what it
/// parsed to.
type FileCache = HashMap<Arc<str>, (Stamp, f64, Parsed), foldhash::fast::RandomState>;

/// Scans a spool incrementally: a file is parsed again only when its size, modification time or
/// inode changed, so a rescan of an unchanged spool of many packets costs one `readdir` and one
/// `lstat` per file.
#[derive(Default)]
pub struct Scanner {
    /// Per kind (`packets/`, `receipts/`, indexed by `FileKind as usize`): each file name, its
    /// stamp, its modification time in seconds and what it parsed to. Names are shared
    /// (`Arc<str>`) with every snapshot and looked up by `&str`, so a rescan allocates nothing per
    /// unchanged file.
    /// File names are chosen by agents: the maps are seeded per scanner (foldhash, as
    /// [`crate::monitor::ByPacket`]).
    cache: [FileCache; 2],
    /// A scan has run: [`Scanner::scan_if_changed`] answers `None` only after one.
    scanned: bool,
    /// The last snapshot, and the packet ids it lists: a scan that only adds packet files with
    /// new ids updates it in place instead of rebuilding it from every file.
    last: Option<(Snapshot, HashSet<String, foldhash::fast::RandomState>)>,
    /// File names the next [`Recheck::Renamed`] scan `lstat`s even when the listing shows the
    /// inode they were parsed from ([`Scanner::recheck_names`]).
    recheck: HashSet<String, foldhash::fast::RandomState>,
    /// The pinned gateway keys receipts are checked against ([`Scanner::with_gateway_keys`]).
    gateways: Option<Arc<crate::protocol::keys::GatewayKeys>>,
    /// What each claim file in `uses/` named ([`read_uses`]), and the claims last read.
    uses_known: HashMap<String, Option<String>>,
    uses: Arc<Uses>,
}

/// What a scan's [`Scanner::refresh`] found: the files listed (`None` for a [`Recheck::Touched`]
/// scan, which lists nothing: the cache holds them), the names new to the cache, and whether
/// anything else changed (a file parsed again, or gone).
struct Listing {
    seen: Option<Vec<SeenFile>>,
    added: Vec<SeenFile>,
    other: bool,
}

/// What [`look`] found of a file it could `lstat`.
enum Look {
    /// Not in the cache before: parsed.
    New,
    /// In the cache with another stamp: parsed again.
    Changed,
    /// In the cache with the same stamp: taken as it was.
    Same,
}

/// Looks at the file `name` of `kind` at `path`: `lstat`s it and parses it again unless the cache
/// holds it with the same stamp. Answers the name as the cache shares it and what changed, or
/// `None` when it cannot be `lstat`ed (it is gone; the caller drops it from the cache).
fn look(
    cache: &mut FileCache,
    kind: FileKind,
    name: &str,
    path: &Path,
    gateways: Option<&crate::protocol::keys::GatewayKeys>,
) -> Option<(Arc<str>, Look)> {
    let meta = fs::symlink_metadata(path).ok()?;
    let stamp = Stamp {
        len: meta.len(),
        mtime_ns: mtime_ns(&meta),
        ctime: (meta.ctime(), meta.ctime_nsec()),
        ino: meta.ino(),
        uid: meta.uid(),
    };
    let cached = cache.get_key_value(name);
    if let Some((key, (s, _, _))) = cached
        && *s == stamp
    {
        return Some((Arc::clone(key), Look::Same));
    }
    let (key, change) = match cached {
        Some((key, _)) => (Arc::clone(key), Look::Changed),
        None => (Arc::from(name), Look::New),
    };
    let stem = name.strip_suffix(".json").unwrap_or(name);
    let parsed = match read_limited(path) {
        Err(reason) => Parsed::Invalid(reason),
        Ok(bytes) => match kind {
            FileKind::Packet => match packet::parse_packet(&bytes, stem) {
                // A replica's packet named by its subject's agent must be that agent's
                // (`crate::store::replica`: the server authenticated the publisher).
                Ok(p) if agent_of_name(stem).is_some_and(|a| a != p.agent) => {
                    Parsed::Invalid(InvalidReason::Schema(format!(
                        "published on agent {:?}'s subject, but names agent {:?}",
                        agent_of_name(stem).unwrap_or_default(),
                        p.agent
                    )))
                }
                Ok(p) => Parsed::Packet(Arc::new(p)),
                Err(r) => Parsed::Invalid(r),
            },
            FileKind::Receipt => match packet::parse_receipt(&bytes) {
                Ok(mut r) => {
                    // Checked once per file version: the scanner's gateway keys never change.
                    r.observed_by = gateways.and_then(|g| {
                        crate::protocol::graduation::receipt::gateway_signer(&r.raw, g)
                            .ok()
                            .map(|pin| pin.principal.clone())
                    });
                    Parsed::Receipt(Arc::new(r))
                }
                Err(r) => Parsed::Invalid(r),
            },
        },
    };
    let arrived = stamp.ctime.0 as f64 + stamp.ctime.1 as f64 / 1e9;
    cache.insert(Arc::clone(&key), (stamp, arrived, parsed));
    Some((key, change))
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

/// A file name a scan considers: temporary and hidden files are work in progress, not
/// publications.
fn is_publication(name: &str) -> bool {
    !name.starts_with('.') && name.ends_with(".json")
}

impl Listing {
    fn changed(&self) -> bool {
        self.other || !self.added.is_empty()
    }
}

impl Scanner {
    /// A scanner with an empty cache.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// This scanner, checking every receipt it reads against `gateways`: a receipt whose
    /// signature verifies under one of them is marked [`crate::protocol::packet::Receipt::observed_by`]
    /// (an observed outcome, evidence for the gate); every other receipt stays the agent's own
    /// word. Give it before the first scan (receipts already read are not checked again).
    #[must_use]
    pub fn with_gateway_keys(mut self, gateways: crate::protocol::keys::GatewayKeys) -> Self {
        self.gateways = (!gateways.is_empty()).then(|| Arc::new(gateways));
        self
    }

    /// A scanner checking receipts against the gateway keys pinned in `config_dir`
    /// ([`crate::protocol::keys::GatewayKeys::load`]); when they cannot be read, against none (no receipt
    /// is then an observed outcome: fail closed).
    #[must_use]
    pub fn for_config(config_dir: &Path) -> Self {
        match crate::protocol::keys::GatewayKeys::load(config_dir) {
            Ok(g) => Self::new().with_gateway_keys(g),
            Err(_) => Self::new(),
        }
    }

    /// Asks the next [`Recheck::Renamed`] scan to `lstat` these file names (in `packets/` or
    /// `receipts/`) whatever inode the listing shows: a name replaced twice between two scans can
    /// get back the inode it was parsed from, and a file written in place keeps it. The
    /// console's watcher reports every name an event touched. A [`Recheck::Touched`] scan
    /// `lstat`s only these.
    pub fn recheck_names(&mut self, names: impl IntoIterator<Item = String>) {
        self.recheck.extend(names);
    }

    /// Scans `packets/` and `receipts/`. Missing directories read as empty.
    ///
    /// # Errors
    /// Only when a directory exists but cannot be listed.
    pub fn scan(&mut self, spool: &Spool) -> io::Result<Snapshot> {
        // A failed scan may have cached some files already: the next one rebuilds in full.
        let listing = self.refresh(spool, Recheck::Every).inspect_err(|_| self.last = None)?;
        self.refresh_uses(spool);
        let mut snap = self.snapshot(&listing);
        snap.uses = Arc::clone(&self.uses);
        Ok(snap)
    }

    /// Reads `uses/` again; true when its claims changed.
    fn refresh_uses(&mut self, spool: &Spool) -> bool {
        let uses = read_uses(spool, &mut self.uses_known);
        let changed = *self.uses != uses;
        if changed {
            self.uses = Arc::new(uses);
        }
        changed
    }

    /// Scans `packets/` only, parsing just the files `choose` keeps: it gets the metadata of
    /// every publication in the directory (in listing order) and answers, for each, whether to
    /// parse it. Receipts are not read. The snapshot is built as [`Scanner::scan`] builds one
    /// from the files kept (duplicate and ambiguous ids among them included); a file left out
    /// counts for nothing. For a caller that needs only some of the packets (a hook judging one
    /// call, `crate::govern`), without the cost of parsing every file.
    ///
    /// # Errors
    /// Only when `packets/` exists but cannot be listed.
    pub fn scan_packets_selected(
        &mut self,
        spool: &Spool,
        choose: impl FnOnce(&[fs::Metadata]) -> Vec<bool>,
    ) -> io::Result<Snapshot> {
        let dir = spool.packets_dir();
        let entries = match fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Snapshot::default()),
            Err(e) => return Err(e),
        };
        let mut listed: Vec<(String, fs::Metadata)> = Vec::new();
        for entry in entries {
            let Ok(entry) = entry else { continue };
            let name = entry.file_name().to_string_lossy().into_owned();
            if !is_publication(&name) {
                continue;
            }
            // `DirEntry::metadata` does not follow a symlink, as `look` does not.
            if let Ok(meta) = entry.metadata() {
                listed.push((name, meta));
            }
        }
        let metas: Vec<fs::Metadata> = listed.iter().map(|(_, m)| m.clone()).collect();
        let keep = choose(&metas);
        let cache = &mut self.cache[FileKind::Packet as usize];
        let mut seen: Vec<SeenFile> = Vec::new();
        for ((name, _), keep) in listed.iter().zip(keep) {
            if keep && let Some((key, _)) = look(cache, FileKind::Packet, name, &dir.join(name), None) {
                seen.push((FileKind::Packet, key));
            }
        }
        Ok(self.rebuild(&seen))
    }

    /// Scans like [`Scanner::scan`], but answers `None` when no file was added, removed or
    /// changed (size, modification time, change time or inode) since this scanner's previous
    /// scan, so the caller can skip recomputing what it derived from the last snapshot. The
    /// first scan always answers a snapshot.
    ///
    /// # Errors
    /// Only when a directory exists but cannot be listed.
    pub fn scan_if_changed(&mut self, spool: &Spool, recheck: Recheck) -> io::Result<Option<Snapshot>> {
        // A failed scan may have cached some files already: the next one answers in full.
        let listing = self.refresh(spool, recheck).inspect_err(|_| {
            self.scanned = false;
            self.last = None;
        })?;
        let first = !std::mem::replace(&mut self.scanned, true);
        let uses_changed = self.refresh_uses(spool);
        Ok((listing.changed() || first || uses_changed).then(|| {
            let mut snap = self.snapshot(&listing);
            snap.uses = Arc::clone(&self.uses);
            snap
        }))
    }

    /// Lists both directories (or, for a [`Recheck::Touched`] scan after a complete listing, only
    /// the names to recheck) and parses what is new or changed: the files seen, the names new to
    /// the cache, and whether any other file was changed or removed.
    fn refresh(&mut self, spool: &Spool, recheck: Recheck) -> io::Result<Listing> {
        if recheck == Recheck::Touched && self.last.is_some() {
            return Ok(self.refresh_touched(spool));
        }
        let mut other = false;
        let mut seen: Vec<SeenFile> = Vec::new();
        let mut added: Vec<SeenFile> = Vec::new();
        for (kind, dir) in [(FileKind::Packet, spool.packets_dir()), (FileKind::Receipt, spool.receipts_dir())] {
            let entries = match fs::read_dir(&dir) {
                Ok(e) => e,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            let cache = &mut self.cache[kind as usize];
            for entry in entries {
                let Ok(entry) = entry else { continue };
                let file_name = entry.file_name();
                let name = file_name.to_string_lossy();
                if !is_publication(&name) {
                    continue;
                }
                // The listing's inode is free: a file still under the inode it was parsed from
                // is taken as it was (a new file, or one renamed into place, has a new inode).
                if recheck != Recheck::Every
                    && let Some((key, (s, _, _))) = cache.get_key_value(name.as_ref())
                    && s.ino == entry.ino()
                    && !self.recheck.contains(name.as_ref())
                {
                    seen.push((kind, Arc::clone(key)));
                    continue;
                }
                let Some((key, change)) = look(cache, kind, &name, &entry.path(), self.gateways.as_deref()) else {
                    continue;
                };
                match change {
                    Look::New => added.push((kind, Arc::clone(&key))),
                    Look::Changed => other = true,
                    Look::Same => {}
                }
                seen.push((kind, key));
            }
        }
        // Every name seen is in the cache: as many entries as names means none vanished.
        if self.cache.iter().map(HashMap::len).sum::<usize>() != seen.len() {
            for (k, cache) in self.cache.iter_mut().enumerate() {
                let live: std::collections::HashSet<&str> =
                    seen.iter().filter(|(kind, _)| *kind as usize == k).map(|(_, n)| n.as_ref()).collect();
                cache.retain(|n, _| live.contains(n.as_ref()));
            }
            other = true;
        }
        self.recheck.clear();
        Ok(Listing { seen: Some(seen), added, other })
    }

    /// A [`Recheck::Touched`] scan: each name to recheck looked at in both directories, a name
    /// that cannot be `lstat`ed dropped from the cache.
    fn refresh_touched(&mut self, spool: &Spool) -> Listing {
        let (mut added, mut other) = (Vec::new(), false);
        for name in std::mem::take(&mut self.recheck) {
            if !is_publication(&name) {
                continue;
            }
            for (kind, dir) in [(FileKind::Packet, spool.packets_dir()), (FileKind::Receipt, spool.receipts_dir())] {
                let cache = &mut self.cache[kind as usize];
                match look(cache, kind, &name, &dir.join(&name), self.gateways.as_deref()) {
                    Some((key, Look::New)) => added.push((kind, key)),
                    Some((_, Look::Changed)) => other = true,
                    Some((_, Look::Same)) => {}
                    None => other |= cache.remove(name.as_str()).is_some(),
                }
            }
        }
        Listing { seen: None, added, other }
    }

    /// The snapshot after `listing`: the last one updated in place when the scan only added
    /// packet files whose ids are new (what agents publishing do), else rebuilt from every file.
    fn snapshot(&mut self, listing: &Listing) -> Snapshot {
        // Ids new to the snapshot, each in one added file (two added files with one id rebuild).
        let mut fresh: HashSet<&str> = HashSet::new();
        if !listing.other
            && let Some((snap, ids)) = &mut self.last
            && listing.added.iter().all(|(kind, name)| {
                *kind == FileKind::Packet
                    && match self.cache[FileKind::Packet as usize].get(name) {
                        Some((_, _, Parsed::Packet(p))) => !ids.contains(&p.id) && fresh.insert(p.id.as_str()),
                        Some((_, _, Parsed::Invalid(_))) => true,
                        _ => false,
                    }
            })
        {
            for (kind, name) in &listing.added {
                let Some((stamp, arrived, parsed)) = self.cache[*kind as usize].get(name) else { continue };
                match parsed {
                    Parsed::Packet(p) => {
                        let entry = PacketEntry {
                            file: Arc::clone(name),
                            arrived: *arrived,
                            owner: stamp.uid,
                            packet: Arc::clone(p),
                        };
                        let created = entry.created();
                        // The order of the full sort: newest first, then by id.
                        let at = snap.packets.partition_point(|e| match created.total_cmp(&e.created()) {
                            std::cmp::Ordering::Less => true,
                            std::cmp::Ordering::Equal => e.packet.id < p.id,
                            std::cmp::Ordering::Greater => false,
                        });
                        snap.packets.insert(at, entry);
                        ids.insert(p.id.clone());
                    }
                    Parsed::Invalid(reason) => {
                        let at = snap
                            .invalid
                            .partition_point(|f| (f.name.as_str(), f.kind as u8) < (name.as_ref(), *kind as u8));
                        let file = InvalidFile {
                            kind: *kind,
                            name: name.to_string(),
                            reason: reason.clone(),
                            arrived: *arrived,
                        };
                        snap.invalid.insert(at, file);
                    }
                    Parsed::Receipt(_) => {}
                }
            }
            return snap.clone();
        }
        let snap = match &listing.seen {
            Some(seen) => self.rebuild(seen),
            None => {
                let kinds = [FileKind::Packet, FileKind::Receipt];
                let cached: Vec<SeenFile> = kinds
                    .iter()
                    .flat_map(|kind| self.cache[*kind as usize].keys().map(|name| (*kind, Arc::clone(name))))
                    .collect();
                self.rebuild(&cached)
            }
        };
        let ids = snap.packets.iter().map(|e| e.packet.id.clone()).collect();
        self.last = Some((snap.clone(), ids));
        snap
    }

    fn rebuild(&self, seen: &[SeenFile]) -> Snapshot {
        // A packet id in more than one file of one owner belongs to the file whose name sorts
        // first; the others are invalid. Found without sorting the listing: the answer is the
        // same in any listing order. An id published by two owners is ambiguous: every copy is
        // invalid until one is removed, so another user cannot take over an id.
        let mut holder: HashMap<&str, (&Arc<str>, u32, u32), foldhash::fast::RandomState> =
            HashMap::with_capacity_and_hasher(seen.len(), foldhash::fast::RandomState::default());
        for (kind, name) in seen {
            if let Some((stamp, _, Parsed::Packet(p))) = self.cache[*kind as usize].get(name) {
                holder
                    .entry(p.id.as_str())
                    .and_modify(|(first, low, high)| {
                        *first = (*first).min(name);
                        *low = (*low).min(stamp.uid);
                        *high = (*high).max(stamp.uid);
                    })
                    .or_insert((name, stamp.uid, stamp.uid));
            }
        }
        let mut snap = Snapshot::default();
        snap.packets.reserve(holder.len());
        let mut receipts: Vec<(&Arc<str>, &Arc<Receipt>)> = Vec::new();
        let mut invalid: Vec<InvalidFile> = Vec::new();
        for (kind, name) in seen {
            let Some((stamp, arrived, parsed)) = self.cache[*kind as usize].get(name) else { continue };
            let invalid_file = |reason| InvalidFile { kind: *kind, name: name.to_string(), reason, arrived: *arrived };
            match parsed {
                Parsed::Packet(p) => match holder.get(p.id.as_str()) {
                    Some((_, a, b)) if a != b => invalid.push(invalid_file(InvalidReason::Schema(format!(
                        "ambiguous packet id {:?}: published by uid {a} and by uid {b}; no copy can be decided until the others are removed",
                        p.id
                    )))),
                    Some((first, ..)) if !Arc::ptr_eq(first, name) => invalid.push(invalid_file(
                        InvalidReason::Schema(format!("duplicate packet id {:?} (also in {first})", p.id)),
                    )),
                    _ => snap.packets.push(PacketEntry {
                        file: Arc::clone(name),
                        arrived: *arrived,
                        owner: stamp.uid,
                        packet: Arc::clone(p),
                    }),
                },
                Parsed::Receipt(r) => receipts.push((name, r)),
                Parsed::Invalid(reason) => invalid.push(invalid_file(reason.clone())),
            }
        }
        // Packet ids are unique here (a repeated id is invalid): an unstable sort gives the one order.
        let mut keyed: Vec<(f64, PacketEntry)> = snap.packets.drain(..).map(|e| (e.created(), e)).collect();
        keyed.sort_unstable_by(|(ca, a), (cb, b)| cb.total_cmp(ca).then_with(|| a.packet.id.cmp(&b.packet.id)));
        snap.packets = keyed.into_iter().map(|(_, e)| e).collect();
        // Names are unique within a kind.
        receipts.sort_unstable_by(|(na, a), (nb, b)| b.created_at.cmp(&a.created_at).then_with(|| na.cmp(nb)));
        snap.receipts = receipts.into_iter().map(|(_, r)| Arc::clone(r)).collect();
        invalid.sort_unstable_by(|a, b| a.name.cmp(&b.name).then_with(|| (a.kind as u8).cmp(&(b.kind as u8))));
        snap.invalid = invalid;
        snap
    }
}

fn mtime_ns(meta: &fs::Metadata) -> i128 {
    meta.modified().ok().and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos() as i128)
}

/// A decision as the chain records it (serialized in the principal's fold of a checkpointed
/// prefix, [`PrefixFold`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ChainDecision {
    /// Approve or refuse.
    pub verdict: Verdict,
    /// Who decided.
    pub principal: String,
    /// The reason, if given.
    pub reason: Option<String>,
    /// When.
    pub decided_at: String,
    /// The packet content hash that was signed.
    pub packet_hash: String,
    /// The record's `chain_index`.
    pub chain_index: u64,
    /// The record's `entry_hash`.
    pub entry_hash: String,
    /// The agent, as the signed document names it.
    pub agent: String,
    /// The action class, as the signed document names it.
    pub action_class: String,
    /// An approval that met a quorum (issue 18, co-signing): the distinct principals whose
    /// approvals make it up, sorted (`principal` is the last of them). Empty otherwise.
    pub cosigners: Vec<String>,
    /// The co-signing terms the record's approval was signed under, if any.
    pub quorum: Option<crate::protocol::decision::Quorum>,
    /// For an approval under a quorum: its signed document and signature, until the fold
    /// ([`fold_decision`]) files it with the others.
    pub signed: Option<Box<SignedDecision>>,
    /// Set for a system decision (a refusal the principal's console signed when the packet timed
    /// out, [`decision::SystemCause`]): it decides the packet, and is never evidence nor part
    /// of the agent's record. `None` for a person's decision.
    pub system: Option<decision::SystemCause>,
}

impl ChainDecision {
    /// Whether this approval meets `quorum`: signed under exactly these terms, by at least
    /// `required` distinct listed principals (a plain approval never does).
    #[must_use]
    pub fn meets(&self, quorum: &crate::protocol::decision::Quorum) -> bool {
        self.quorum.as_ref() == Some(quorum) && quorum.met_by(self.cosigners.iter().map(String::as_str))
    }

    /// Who signed it: the co-signers of a quorum, else the one principal.
    #[must_use]
    pub fn signed_by(&self) -> String {
        if self.cosigners.is_empty() { self.principal.clone() } else { self.cosigners.join(" + ") }
    }
}

/// Approvals gathered towards a quorum for a packet no decision settles yet (issue 18).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Cosigning {
    /// The terms they were signed under.
    pub quorum: crate::protocol::decision::Quorum,
    /// The packet content they approve.
    pub packet_hash: String,
    /// The approvals, one per listed principal, in chain order.
    pub signatures: Vec<crate::protocol::decision::CoSignature>,
}

impl Cosigning {
    /// The principals who signed so far, in chain order.
    #[must_use]
    pub fn signers(&self) -> Vec<&str> {
        self.signatures.iter().map(crate::protocol::decision::CoSignature::principal).collect()
    }

    /// `1/2 signed (alice)`.
    #[must_use]
    pub fn describe(&self) -> String {
        signed_so_far(&self.signers(), self.quorum.required)
    }
}

/// `1/2 signed (alice)`: how many of the `required` have signed, and who.
fn signed_so_far<S: AsRef<str>>(signers: &[S], required: usize) -> String {
    let names: Vec<&str> = signers.iter().map(AsRef::as_ref).collect();
    format!("{}/{required} signed ({})", names.len(), names.join(", "))
}

/// Folds one verified decision record (in chain order) into the decisions and the co-signing in
/// progress. An approval under a quorum is gathered in `cosigning` (one per listed principal,
/// over the same content and terms: a change of either starts again) and becomes the packet's
/// decision when `required` distinct principals have signed; a later approval of a decided
/// packet changes nothing. Any other decision (a refusal ends co-signing: one refusal refuses)
/// is the packet's decision as it stands.
pub fn fold_decision(
    decisions: &mut HashMap<String, ChainDecision>,
    cosigning: &mut HashMap<String, Cosigning>,
    id: String,
    mut d: ChainDecision,
) {
    let Some(q) = d.quorum.clone().filter(|_| d.verdict == Verdict::Approve) else {
        cosigning.remove(&id);
        decisions.insert(id, d);
        return;
    };
    if decisions.contains_key(&id) {
        return;
    }
    let Some(signed) = d.signed.take() else { return };
    let fresh = || Cosigning { quorum: q.clone(), packet_hash: d.packet_hash.clone(), signatures: Vec::new() };
    let entry = cosigning.entry(id.clone()).or_insert_with(fresh);
    if entry.quorum != q || entry.packet_hash != d.packet_hash {
        *entry = fresh();
    }
    if !q.lists(&d.principal) || entry.signers().contains(&d.principal.as_str()) {
        return;
    }
    entry.signatures.push(crate::protocol::decision::CoSignature {
        signed: *signed,
        chain_index: d.chain_index,
        entry_hash: d.entry_hash.clone(),
    });
    if entry.signatures.len() >= q.required {
        let mut names: Vec<String> = entry.signers().into_iter().map(str::to_owned).collect();
        names.sort_unstable();
        cosigning.remove(&id);
        d.cosigners = names;
        decisions.insert(id, d);
    }
}

/// The decision a chain record carries, if it is a warrant decision record.
#[must_use]
pub fn chain_decision_of(rec: &Map<String, Value>) -> Option<(String, ChainDecision)> {
    let doc = rec.get("metadata").and_then(|m| m.get("warrant_decision"))?;
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    let id = s(doc, "packet_id")?;
    let verdict = s(doc, "decision").as_deref().and_then(Verdict::parse)?;
    let entry_hash = rec.get("entry_hash").and_then(Value::as_str).unwrap_or_default().to_owned();
    let terms = crate::protocol::decision::cosign_terms(doc).ok().flatten();
    let signed = terms.as_ref().and_then(|_| {
        let mut signature = rec.get("metadata")?.get("approval")?.get("signatures")?.get(0)?.clone();
        if let Value::Object(m) = &mut signature {
            m.remove("reviewer");
            m.remove("signed_at");
        }
        Some(Box::new(SignedDecision { document: doc.clone(), signature }))
    });
    Some((
        id,
        ChainDecision {
            cosigners: Vec::new(),
            quorum: terms.map(|t| t.quorum),
            signed,
            verdict,
            principal: s(doc, "principal").unwrap_or_default(),
            reason: s(doc, "reason"),
            decided_at: s(doc, "decided_at").unwrap_or_default(),
            packet_hash: s(doc, "packet_hash").unwrap_or_default(),
            chain_index: rec.get("chain_index").and_then(Value::as_u64).unwrap_or(0),
            entry_hash,
            agent: s(doc, "agent").unwrap_or_default(),
            action_class: s(doc, "action_class").unwrap_or_default(),
            system: decision::system_of(doc).ok().flatten(),
        },
    ))
}

/// What a verified chain says: the report, the decisions and evidence of the records that
/// passed every check, and the `content_hash` of its last receipt.
#[derive(Debug, Clone, Default)]
pub struct ChainView {
    /// The verification report.
    pub report: chain::VerifyReport,
    /// Decisions by packet id.
    pub decisions: HashMap<String, ChainDecision>,
    /// Evidence rows, in chain order: the principal's signed decisions (`principal`) and the
    /// receipts recorded in the chain (their declared `source_type`), kept compactly
    /// ([`ChainEvidence`]: distinct rows with counts, and the last rows of each class).
    pub evidence: ChainEvidence,
    /// The `content_hash` of the last receipt in the chain (a decision carries one too).
    pub last_receipt_hash: Option<String>,
    /// The principal's controls (notebook levels, agent standings and elevations), folded in
    /// chain order over the control records that passed every check.
    pub controls: ControlState,
    /// The principal's grants, issued and not revoked, folded in chain order over the grant
    /// records that passed every check ([`crate::protocol::grant::GrantBook`]).
    pub grants: crate::protocol::grant::GrantBook,
    /// Approvals gathered towards a quorum, by packet id, for packets not yet decided
    /// ([`fold_decision`]).
    pub cosigning: HashMap<String, Cosigning>,
}

/// The evidence row a chain record stands for: a warrant decision (from its signed document:
/// approve → `approved`, refuse → `rejected`, provenance `principal`) or a receipt recorded with
/// [`record_receipt`] (its outcome's label and declared provenance). Call only on records that
/// verified. A system decision (a document with `system`, [`decision::SystemCause`]) is no
/// evidence: no person judged the action, so a timeout never counts as the principal's refusal.
#[must_use]
pub fn chain_evidence_of(rec: &Map<String, Value>) -> Option<EvidenceRow> {
    let meta = rec.get("metadata")?;
    if let Some(doc) = meta.get("warrant_decision") {
        // One approval towards a quorum is not yet the principals' approval: only the one that
        // meets it (it names its `cosigners`) is evidence, once for the packet.
        if doc.get("system").is_some() || (doc.get("quorum").is_some() && doc.get("cosigners").is_none()) {
            return None;
        }
        let s = |k: &str| doc.get(k).and_then(Value::as_str);
        return decision_evidence(
            s("action_class")?,
            Verdict::parse(s("decision")?)?,
            s("decided_at")?,
            s("packet_id"),
        );
    }
    receipt_evidence(meta.get("tg_receipt")?, None)
}

/// The evidence row of one principal decision: approve → `approved`, refuse → `rejected`,
/// provenance `principal`, dated by `decided_at` (RFC 3339). `None` when `decided_at` has no date.
#[must_use]
pub fn decision_evidence(
    class: &str,
    verdict: Verdict,
    decided_at: &str,
    packet_id: Option<&str>,
) -> Option<EvidenceRow> {
    let date = decided_at.get(..10).filter(|d| crate::protocol::graduation::evidence::is_date(d))?;
    let label = ReceiptOutcome::from(verdict).label();
    let mut row = EvidenceRow::new(class, label, Some(SourceType::Principal), Some(date.to_owned()));
    row.receipt_id = packet_id.map(|p| format!("decision:{p}"));
    row.recorded_at = Some(decided_at.to_owned());
    row.source = Some("principal".into());
    Some(row)
}

fn receipt_hash_of(rec: &Map<String, Value>) -> Option<String> {
    rec.get("metadata")?.get("tg_receipt")?.get("content_hash")?.as_str().map(str::to_owned)
}

/// Verifies a spool's own chain strictly (a symlinked chain is refused, and every approval
/// signature must be a warrant signature under a pinned key) and returns what the records that
/// passed every check say. A record that failed any check decides nothing and is no evidence: a
/// forged record cannot move a packet out of the pending list or graduate a class.
///
/// # Errors
/// I/O errors while reading the chain; a chain that is not a regular file.
pub fn verify_chain(spool: &Spool, pinned: &PinnedKeys) -> Result<ChainView, ChainError> {
    verify_chain_records(spool, pinned, |_| false).map(|(view, _)| view)
}

/// What a chain view was verified from: the view, and the verified prefix it covers (`None`
/// when the chain had findings, so nothing of it can be extended).
#[derive(Debug, Clone, Default)]
pub struct VerifiedView {
    /// What the records that passed every check say, and the report.
    pub view: ChainView,
    /// The prefix of the chain the view covers, when it verified whole.
    pub verified: Option<chain::Verified>,
}

/// Verifies a spool's chain, extending `cache` (a previous [`VerifiedView`] of this spool) when
/// it can: when the chain grew and still starts with the cached prefix ([`chain_file::prefix_holds`]),
/// only the records after it are verified ([`chain_file::verify_tail_with`]) and folded into the cached
/// view; when the tail has any finding, or the prefix does not hold, or there is no cache, the
/// whole chain is verified, so every report with findings comes from a full verification.
/// `progress` counts the bytes read (for a progress bar).
///
/// # Errors
/// As [`verify_chain`].
pub fn verify_chain_from(
    spool: &Spool,
    pinned: &PinnedKeys,
    cache: Option<&VerifiedView>,
    progress: &std::sync::atomic::AtomicU64,
) -> Result<VerifiedView, ChainError> {
    // A chain that did not grow since the cached verification was rewritten (or only touched):
    // it is verified whole. One that grew is checked at the end of the cached prefix.
    let grew = |v: &chain::Verified| fs::symlink_metadata(spool.chain_path()).is_ok_and(|m| m.len() > v.bytes);
    if let Some((base, prefix)) = cache.and_then(|c| c.verified.as_ref().filter(|v| grew(v)).map(|v| (&c.view, v)))
        && let Some((view, _, tail)) = view_after(spool, pinned, prefix, Some(base), &|_| false, progress)?
        && view.report.is_valid()
    {
        return Ok(VerifiedView { verified: tail.verified(), view });
    }
    progress.store(0, std::sync::atomic::Ordering::Relaxed);
    let full = view_after(spool, pinned, &chain::Verified::default(), None, &|_| false, progress)?;
    let (view, _, tail) = full.unwrap_or_default();
    Ok(VerifiedView { verified: tail.verified().filter(|_| view.report.is_valid()), view })
}

/// A chain view, the decision records kept for restoring their files, and the tail verified.
type ViewAfter = (ChainView, Vec<Map<String, Value>>, chain::Tail);

/// A decision found in the chain: line index, packet id, the decision, and the record when the
/// caller asked to keep it.
type FoundDecision = (usize, String, ChainDecision, Option<Map<String, Value>>);

/// Verifies the chain; `keep` says for which packet ids the whole decision record is kept (to
/// restore a decision file from it).
fn verify_chain_records(
    spool: &Spool,
    pinned: &PinnedKeys,
    keep: impl Fn(&str) -> bool,
) -> Result<(ChainView, Vec<Map<String, Value>>), ChainError> {
    let progress = std::sync::atomic::AtomicU64::new(0);
    let full = view_after(spool, pinned, &chain::Verified::default(), None, &keep, &progress)?;
    let (view, kept, _) = full.unwrap_or_default();
    Ok((view, kept))
}

/// Verifies the records after `prefix` ([`chain_file::verify_tail_with`]) and builds the view of the
/// whole chain: `base` is the view of the prefix (`None`: an empty view, right for the empty
/// prefix), the tail's decisions, evidence, receipts and controls are folded onto it, and the
/// principal's latest checkpoint is checked against the whole report. `Ok(None)` when the chain
/// no longer starts with `prefix`.
fn view_after(
    spool: &Spool,
    pinned: &PinnedKeys,
    prefix: &chain::Verified,
    base: Option<&ChainView>,
    keep: &dyn Fn(&str) -> bool,
    progress: &std::sync::atomic::AtomicU64,
) -> Result<Option<ViewAfter>, ChainError> {
    let mut found: Vec<FoundDecision> = Vec::new();
    let mut view = base.cloned().unwrap_or_default();
    // Where each tail record's evidence row went, to take it back if the record fails a check
    // (32-bit halves: 8 bytes a record).
    let mut evidence: Vec<(u32, u32)> = Vec::new();
    let mut controls: Vec<(usize, ControlEvent)> = Vec::new();
    let mut grants: Vec<(usize, crate::protocol::grant::GrantEvent)> = Vec::new();
    let mut publishers: Vec<(usize, String, u32)> = Vec::new();
    let mut last_receipt_hash = None;
    let opts = VerifyOptions { pinned: Some(pinned), strict_signatures: true };
    // The checkpoint is read before the chain: the chain only grows, so it holds at least what a
    // checkpoint read first pins, while one read after could pin records appended after the chain
    // was read (a decision signed meanwhile), and a sound chain would look cut off.
    let (checkpoint, _) = crate::store::checkpoint_files::latest(spool, pinned);
    let tail = chain_file::verify_tail_with(&spool.chain_path(), prefix, opts, &["tg_receipt"], progress, |i, rec| {
        if let Some((id, d)) = chain_decision_of(rec) {
            let kept = keep(&id).then(|| rec.clone());
            found.push((i, id, d, kept));
        }
        if let Some(row) = chain_evidence_of(rec) {
            let pos = view.evidence.push_at(i, row);
            evidence.push((u32::try_from(i).unwrap_or(u32::MAX), u32::try_from(pos).unwrap_or(u32::MAX)));
        }
        if let Some(h) = receipt_hash_of(rec) {
            last_receipt_hash = Some(h);
        }
        if let Some(c) = ControlEvent::of_record(rec) {
            controls.push((i, c));
        }
        if let Some(g) = crate::protocol::grant::GrantEvent::of_record(rec) {
            grants.push((i, g));
        }
        if let Some((agent, uid)) = crate::protocol::control::publisher_of(rec) {
            publishers.push((i, agent.to_owned(), uid));
        }
    })?;
    let Some(tail) = tail else { return Ok(None) };
    let mut report = tail.report.clone();
    if let Some(f) = checkpoint.and_then(|cp| crate::store::checkpoint_files::check(&spool.chain_path(), &cp, &report))
    {
        report.findings.push(f);
    }
    let bad: std::collections::HashSet<usize> = report.findings.iter().filter_map(|f| f.index).collect();
    view.report = report;
    if last_receipt_hash.is_some() {
        view.last_receipt_hash = last_receipt_hash;
    }
    let mut kept = Vec::new();
    for (i, id, d, rec) in found {
        if !bad.contains(&i) {
            kept.extend(rec);
            fold_decision(&mut view.decisions, &mut view.cosigning, id, d);
        }
    }
    for (i, pos) in evidence.into_iter().map(|(i, p)| (i as usize, p as usize)).filter(|(i, _)| bad.contains(i)) {
        view.evidence.remove(pos, i);
    }
    for (_, c) in controls.iter().filter(|(i, _)| !bad.contains(i)) {
        view.controls.apply(c);
    }
    for (_, g) in grants.iter().filter(|(i, _)| !bad.contains(i)) {
        view.grants.apply(g);
    }
    for (_, agent, uid) in publishers.iter().filter(|(i, ..)| !bad.contains(i)) {
        view.controls.bind_publisher(agent, *uid);
    }
    Ok(Some((view, kept, tail)))
}

/// The version of [`PrefixFold`]'s file; a fold of another version is not used.
const FOLD_VERSION: u32 = 1;

/// What a decision needs of a verified prefix of the chain, folded once and kept beside the
/// principal's own checkpoint copy (`<config dir>/checkpoints/<spool id>.fold.json`,
/// [`crate::store::checkpoint_files::fold_copy`]), bound to the checkpoint the principal signed
/// by its `fold_sha256` (`docs/spool.md`, Incremental verification). With it, a decision reads
/// none of the prefix: only the line at its end ([`chain_file::prefix_holds`]) and the records
/// after it. Written only under the chain's lock, from a chain verified under that lock.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
struct PrefixFold {
    /// [`FOLD_VERSION`].
    version: u32,
    /// Records in the prefix (the checkpoint's `records`).
    records: u64,
    /// The prefix's length in bytes (the checkpoint's `bytes`).
    bytes: u64,
    /// The prefix's last `entry_hash` (the checkpoint's `head_hash`).
    head_hash: Option<String>,
    /// SHA-256 over the prefix's bytes, to extend into the next checkpoint's `prefix_sha256`.
    digest: crate::protocol::checkpoint::PrefixDigest,
    /// Decisions by packet id, folded in chain order ([`fold_decision`]).
    decisions: HashMap<String, ChainDecision>,
    /// Approvals gathered towards a quorum, by packet id ([`fold_decision`]).
    cosigning: HashMap<String, Cosigning>,
    /// The principal's control, grant and key-event records, whole, in chain order (replayed
    /// with the same code a verification folds them with).
    events: Vec<Map<String, Value>>,
    /// The first publisher each agent was bound to ([`ControlState::bind_publisher`]), in chain order.
    publishers: Vec<(String, u32)>,
    /// The `content_hash` of the last receipt in the prefix.
    last_receipt_hash: Option<String>,
    /// Every `record_id` of the prefix, as a Bloom filter: a tail id it may hold sends the
    /// decision to the slower path, which compares the ids exactly.
    record_ids: IdFilter,
}

impl PrefixFold {
    /// The chain view the fold stands for (no report, no evidence) and the prefix it covers, its
    /// key events applied to the pins (`pinned`).
    fn view(&self, pinned: &PinnedKeys) -> (ChainView, chain::Verified) {
        let mut prefix = chain::Verified {
            records: self.records,
            bytes: self.bytes,
            head_hash: self.head_hash.clone(),
            keys: crate::protocol::key_event::ChainKeys::default(),
        };
        let mut view =
            ChainView { decisions: self.decisions.clone(), cosigning: self.cosigning.clone(), ..ChainView::default() };
        let mut grants = Vec::new();
        for rec in &self.events {
            if let Some(c) = ControlEvent::of_record(rec) {
                view.controls.apply(&c);
            }
            if let Some(g) = crate::protocol::grant::GrantEvent::of_record(rec) {
                grants.push(g);
            }
            if let Some(e) = crate::protocol::key_event::KeyEvent::of_record(rec) {
                let index = rec.get("chain_index").and_then(Value::as_u64).unwrap_or(0).saturating_sub(1);
                prefix.keys.apply(&e, usize::try_from(index).unwrap_or(usize::MAX), pinned);
            }
        }
        // As a scan of the prefix applies them: controls, then grants, then publishers.
        for g in &grants {
            view.grants.apply(g);
        }
        for (agent, uid) in &self.publishers {
            view.controls.bind_publisher(agent, *uid);
        }
        view.last_receipt_hash = self.last_receipt_hash.clone();
        (view, prefix)
    }
}

/// A Bloom filter of record ids (10 bits an id at capacity, 7 probes: under 1% false positives
/// when full), probed at positions from the SHA-256 of the id, so it reads the same in every
/// build. Serialized as `{"capacity", "count", "bits": base64}`.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
struct IdFilter {
    /// Ids it was sized for; past it, the fold is not used (the slower path builds a larger one).
    capacity: u64,
    /// Ids inserted.
    count: u64,
    #[serde(with = "base64_bytes")]
    bits: Vec<u8>,
}

/// Serde for bytes as a standard base64 string.
mod base64_bytes {
    use base64::Engine as _;
    pub fn serialize<S: serde::Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(bytes))
    }
    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text: String = serde::Deserialize::deserialize(d)?;
        base64::engine::general_purpose::STANDARD.decode(text).map_err(serde::de::Error::custom)
    }
}

/// The two 64-bit halves an id's probes are made from.
fn id_hash(id: &str) -> [u64; 2] {
    use sha2::Digest as _;
    let d: [u8; 32] = sha2::Sha256::digest(id.as_bytes()).into();
    let half = |i: usize| u64::from_le_bytes(d[i..i + 8].try_into().unwrap_or_default());
    [half(0), half(8) | 1]
}

impl IdFilter {
    const PROBES: u64 = 7;
    const BITS_PER_ID: u64 = 10;
    const MIN_CAPACITY: u64 = 1 << 16;

    fn positions(&self, h: [u64; 2]) -> impl Iterator<Item = usize> + '_ {
        let m = (self.bits.len() as u64 * 8).max(1);
        (0..Self::PROBES).map(move |i| (h[0].wrapping_add(i.wrapping_mul(h[1])) % m) as usize)
    }

    /// Whether the filter is sized for what it holds (an empty or overfull one is not used).
    fn usable(&self) -> bool {
        !self.bits.is_empty() && self.count <= self.capacity
    }

    /// Inserts ids (their [`id_hash`]es). An empty filter is first sized for twice as many ids
    /// as it is given (at least [`Self::MIN_CAPACITY`]).
    fn insert_all(&mut self, hashes: &[[u64; 2]]) {
        if self.bits.is_empty() {
            self.capacity = (2 * hashes.len() as u64).max(Self::MIN_CAPACITY);
            self.bits = vec![0; usize::try_from(self.capacity * Self::BITS_PER_ID / 8).unwrap_or(usize::MAX)];
        }
        for h in hashes {
            let pos: Vec<usize> = self.positions(*h).collect();
            for p in pos {
                self.bits[p / 8] |= 1 << (p % 8);
            }
        }
        self.count += hashes.len() as u64;
    }

    /// Whether `id` may be in the filter (false: it certainly is not). An empty filter may hold
    /// anything.
    fn may_hold(&self, id: &str) -> bool {
        self.bits.is_empty() || self.positions(id_hash(id)).all(|p| self.bits[p / 8] & (1 << (p % 8)) != 0)
    }
}

/// What [`extend_fold`] found besides the fold.
#[derive(Default)]
struct PrefixScan {
    /// The records of the decisions whose packet id `keep` named (to restore their files).
    kept: Vec<Map<String, Value>>,
    /// A `record_id` of the range that is also one of `tail_ids` (a duplicate the tail check
    /// cannot see).
    reused_id: Option<String>,
}

/// Calls `found` with every `record_id` value in one chain line (no newline): each
/// `"record_id":"…"` as canonical JSON writes it, and for a line without one, or with an escape
/// in the value, the top-level `record_id` of the line parsed. Extra hits (a nested
/// `record_id`) only make a duplicate check stricter.
fn line_record_ids(line: &[u8], finder: &memchr::memmem::Finder<'_>, found: &mut impl FnMut(&str)) {
    let mut any = false;
    for hit in finder.find_iter(line) {
        let value = &line[hit + finder.needle().len()..];
        let Some(end) = memchr::memchr(b'"', value) else { break };
        match std::str::from_utf8(&value[..end]) {
            Ok(id) if !id.contains('\\') => {
                any = true;
                found(id);
            }
            _ => {
                any = false;
                break;
            }
        }
    }
    if !any
        && let Ok(rec) = serde_json::from_slice::<Map<String, Value>>(line)
        && let Some(id) = rec.get("record_id").and_then(Value::as_str)
    {
        found(id);
    }
}

/// The needle [`line_record_ids`] looks for.
const RECORD_ID_NEEDLE: &str = "\"record_id\":\"";

/// A spool's chain (never through a symlink) opened for reading at byte `from`.
fn open_chain_at(path: &Path, from: u64) -> io::Result<fs::File> {
    use io::{Seek as _, SeekFrom};
    let mut file = chain_file::open_regular(path, true).map_err(|e| io::Error::other(e.to_string()))?;
    file.seek(SeekFrom::Start(from))?;
    Ok(file)
}

/// The `record_id`s of the chain's lines from byte `from` on (the tail after a checkpoint).
fn record_ids_after(path: &Path, from: u64) -> io::Result<std::collections::HashSet<String>> {
    let mut file = open_chain_at(path, from)?;
    let mut tail = Vec::new();
    file.read_to_end(&mut tail)?;
    let finder = memchr::memmem::Finder::new(RECORD_ID_NEEDLE);
    let mut ids = std::collections::HashSet::new();
    for line in tail.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        line_record_ids(line, &finder, &mut |id| {
            ids.insert(id.to_owned());
        });
    }
    Ok(ids)
}

/// Folds the chain's bytes from `fold.bytes` to `to` (the records after the prefix the fold
/// covers; from the start for an empty fold) onto `fold`, read without verifying them again (the
/// caller verified them under the chain's lock, or only shows the result): the bytes extend the
/// fold's SHA-256, every `record_id` goes into its filter, and the principal's controls, grants,
/// key events, the agents' publishers and the decisions are folded in chain order. With
/// `tail_ids`, whether any record of the range has one of those ids; with `keep`, the whole
/// decision records of the packet ids it names.
///
/// One pass: the range is read in 8 MiB blocks, hashed, and searched for the bytes that name
/// these records (`warrant_control`, `warrant_grant`, `warrant_key`, `warrant_decision`, the
/// publisher key); only those lines are parsed. A line with a `\u` escape is parsed too, since a
/// key could be spelled with one, so no such record is missed. Without `hash` (a view only shown,
/// never signed onto) the bytes are not hashed and the ids not filed: the fold is not kept.
///
/// # Errors
/// I/O errors; `UnexpectedEof` when the chain is shorter than `to` or the range does not end
/// with a newline; `InvalidData` when the fold's digest does not cover exactly its bytes.
fn extend_fold(
    path: &Path,
    fold: &mut PrefixFold,
    to: u64,
    keep: &dyn Fn(&str) -> bool,
    tail_ids: Option<&std::collections::HashSet<String>>,
    hash: bool,
) -> io::Result<PrefixScan> {
    use memchr::memmem::Finder;
    let from = fold.bytes;
    if fold.digest.len() != from || to < from {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "the fold does not cover its prefix"));
    }
    let mut reader = io::Read::take(open_chain_at(path, from)?, to - from);
    let finders = [
        Finder::new("warrant_control"),
        Finder::new("warrant_grant"),
        Finder::new("warrant_key"),
        Finder::new("warrant_decision"),
        Finder::new(crate::protocol::control::PUBLISHER_KEY),
        Finder::new("\\u"),
    ];
    let id_finder = Finder::new(RECORD_ID_NEEDLE);
    let tail_ids = tail_ids.filter(|t| !t.is_empty());
    let mut bound: HashSet<String> = fold.publishers.iter().map(|(a, _)| a.clone()).collect();
    let mut ids: Vec<[u64; 2]> = Vec::new();
    let mut out = PrefixScan::default();
    let mut carry: Vec<u8> = Vec::new();
    let mut buf = vec![0u8; 8 << 20];
    let mut read = 0u64;
    loop {
        let n = reader.read(&mut buf)?;
        if n == 0 {
            break;
        }
        read += n as u64;
        if hash {
            fold.digest.update(&buf[..n]);
        }
        carry.extend_from_slice(&buf[..n]);
        let Some(end) = memchr::memrchr(b'\n', &carry) else { continue };
        let block = &carry[..=end];
        let mut start = 0;
        for nl in memchr::memchr_iter(b'\n', block).filter(|_| hash || tail_ids.is_some()) {
            line_record_ids(&block[start..nl], &id_finder, &mut |id| {
                if hash {
                    ids.push(id_hash(id));
                }
                if out.reused_id.is_none() && tail_ids.is_some_and(|t| t.contains(id)) {
                    out.reused_id = Some(id.to_owned());
                }
            });
            start = nl + 1;
        }
        let mut hits: Vec<usize> = finders.iter().flat_map(|f| f.find_iter(block)).collect();
        hits.sort_unstable();
        let mut done_until = 0;
        for h in hits {
            if h < done_until {
                continue;
            }
            let start = memchr::memrchr(b'\n', &block[..h]).map_or(0, |p| p + 1);
            let stop = h + memchr::memchr(b'\n', &block[h..]).unwrap_or(block.len() - h);
            done_until = stop + 1;
            // Lines verified under the chain's lock: parsed as they are.
            let Ok(rec) = serde_json::from_slice::<Map<String, Value>>(&block[start..stop]) else { continue };
            if ControlEvent::of_record(&rec).is_some()
                || crate::protocol::grant::GrantEvent::of_record(&rec).is_some()
                || crate::protocol::key_event::KeyEvent::of_record(&rec).is_some()
            {
                fold.events.push(rec.clone());
            }
            if let Some((agent, uid)) = crate::protocol::control::publisher_of(&rec)
                && bound.insert(agent.to_owned())
            {
                fold.publishers.push((agent.to_owned(), uid));
            }
            if let Some((id, d)) = chain_decision_of(&rec) {
                if keep(&id) {
                    out.kept.push(rec);
                }
                fold_decision(&mut fold.decisions, &mut fold.cosigning, id, d);
            }
        }
        carry.drain(..=end);
    }
    if read != to - from || !carry.is_empty() {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the chain is shorter than its checkpoint"));
    }
    if hash {
        fold.record_ids.insert_all(&ids);
    }
    fold.bytes = to;
    Ok(out)
}

/// The principal's own checkpoint copy ([`crate::store::checkpoint_files::local_copy`]),
/// verified under the pinned keys; `None` when there is none or it does not verify.
fn local_checkpoint(spool: &Spool, pinned: &PinnedKeys) -> Option<crate::protocol::checkpoint::Checkpoint> {
    let local = crate::store::checkpoint_files::local_copy(spool)?;
    let bytes = read_limited(&local).ok()?;
    let signed: Value = serde_json::from_slice(&bytes).ok()?;
    crate::protocol::checkpoint::verify(&signed, pinned, &local.display().to_string()).ok()
}

/// The view of the chain from the principal's own checkpoint copy and the records after it,
/// for the console to show at once while it verifies the whole chain in the background: the
/// tail verified, the prefix taken from the principal's fold of it when the checkpoint binds one
/// ([`crate::protocol::checkpoint::Checkpoint::fold_sha256`]), else trusted as the checkpoint
/// describes it and scanned for its decisions and controls (its bytes are not hashed, unlike
/// before a decision). Its evidence is the tail's only. `None` when there is no copy or anything
/// is in doubt.
#[must_use]
pub fn checkpointed_chain_view(spool: &Spool, pinned: &PinnedKeys) -> Option<ChainView> {
    folded_view(spool, pinned, &|_| false)
        .or_else(|| checkpointed_view(spool, pinned, &|_| false, false))
        .map(|c| c.view)
}

/// A chain view a decision or a control is signed onto ([`verified_view`]), or the console shows
/// first: made from a checkpoint and the records after it ([`folded_view`],
/// [`checkpointed_view`]), or from the whole chain.
struct Checkpointed {
    view: ChainView,
    /// Decision records kept for restoring their files.
    kept: Vec<Map<String, Value>>,
    /// The fold of a prefix of the chain verified under the lock (its `bytes` may end before
    /// the chain does: the records after it are folded on when the next checkpoint is signed),
    /// its `last_receipt_hash` the view's; `None` for a view of a prefix not proven.
    fold: Option<PrefixFold>,
}

/// The chain view a decision or a control is signed onto, from the principal's own signed
/// checkpoint copy and the fold beside it, reading nothing of the prefix: the fold's bytes must
/// hash to the checkpoint's `fold_sha256` and describe its prefix (`records`, `bytes`,
/// `head_hash`); the chain must still end that prefix with the record signed
/// ([`chain_file::prefix_holds`], one line read); no `record_id` of the tail may be in the
/// fold's filter of the prefix's ids; the tail is verified ([`chain_file::verify_tail_with`]) and
/// folded onto the fold's view. `None` whenever anything is in doubt (no copy, a bad signature,
/// no `fold_sha256`, a fold that is missing, altered, of another checkpoint or overfull, a
/// prefix decision whose file `keep` asks to restore, a tail id the filter may hold, a finding in
/// the tail or at a checkpoint): the caller takes a slower path.
fn folded_view(spool: &Spool, pinned: &PinnedKeys, keep: &dyn Fn(&str) -> bool) -> Option<Checkpointed> {
    let cp = local_checkpoint(spool, pinned)?;
    let want = cp.fold_sha256.as_deref()?;
    let bytes = crate::store::checkpoint_files::read_fold(spool).ok()?;
    if crate::protocol::canonical::sha256_prefixed(&bytes) != want {
        return None;
    }
    let mut fold: PrefixFold = serde_json::from_slice(&bytes).ok()?;
    let describes = fold.version == FOLD_VERSION
        && fold.records == cp.records
        && fold.bytes == cp.bytes
        && fold.head_hash.as_deref() == Some(cp.head_hash.as_str())
        && fold.digest.len() == fold.bytes
        && fold.record_ids.usable();
    if !describes || fold.decisions.keys().any(|id| keep(id)) {
        return None;
    }
    let tail_ids = record_ids_after(&spool.chain_path(), fold.bytes).ok()?;
    if tail_ids.iter().any(|id| fold.record_ids.may_hold(id)) {
        return None;
    }
    let (base, prefix) = fold.view(pinned);
    let progress = std::sync::atomic::AtomicU64::new(0);
    let (view, kept, _) = view_after(spool, pinned, &prefix, Some(&base), keep, &progress).ok()??;
    if !view.report.is_valid() {
        return None;
    }
    fold.last_receipt_hash.clone_from(&view.last_receipt_hash);
    Some(Checkpointed { view, kept, fold: Some(fold) })
}

/// The chain view from the principal's own signed checkpoint copy and the records after it, the
/// prefix read: the tail is verified ([`chain_file::verify_tail_with`]), and the prefix is
/// scanned ([`extend_fold`]). With `prove_prefix` (before a signature) the prefix must still be,
/// byte for byte, the one the principal verified: its SHA-256 must equal the checkpoint's
/// `prefix_sha256`, and no tail `record_id` may repeat one of it; the fold made is then kept for
/// the next checkpoint. The view's evidence is the tail's only (`docs/spool.md`, Incremental
/// verification). `None` whenever anything is in doubt (no copy, a bad signature, a checkpoint
/// without `prefix_sha256`, a prefix that changed, a finding in the tail or at a checkpoint, a
/// repeated id): the caller verifies the whole chain.
fn checkpointed_view(
    spool: &Spool,
    pinned: &PinnedKeys,
    keep: &dyn Fn(&str) -> bool,
    prove_prefix: bool,
) -> Option<Checkpointed> {
    let cp = local_checkpoint(spool, pinned)?;
    let tail_ids = if prove_prefix {
        cp.prefix_sha256.as_ref()?;
        Some(record_ids_after(&spool.chain_path(), cp.bytes).ok()?)
    } else {
        None
    };
    let mut fold = PrefixFold { version: FOLD_VERSION, ..PrefixFold::default() };
    let scan = extend_fold(&spool.chain_path(), &mut fold, cp.bytes, keep, tail_ids.as_ref(), prove_prefix).ok()?;
    if scan.reused_id.is_some() {
        return None;
    }
    if prove_prefix && cp.prefix_sha256.as_deref() != Some(fold.digest.finish().as_str()) {
        return None;
    }
    fold.records = cp.records;
    fold.head_hash = Some(cp.head_hash.clone());
    let (base, prefix) = fold.view(pinned);
    let progress = std::sync::atomic::AtomicU64::new(0);
    let (mut view, mut kept, _) = view_after(spool, pinned, &prefix, Some(&base), keep, &progress).ok()??;
    kept.extend(scan.kept);
    if !view.report.is_valid() {
        return None;
    }
    if view.last_receipt_hash.is_none() {
        view.last_receipt_hash = chain_file::find_last(&spool.chain_path(), receipt_hash_of).ok()?;
    }
    fold.last_receipt_hash.clone_from(&view.last_receipt_hash);
    Some(Checkpointed { view, kept, fold: prove_prefix.then_some(fold) })
}

/// Why a decision could not be made.
#[derive(Debug, thiserror::Error)]
pub enum DecideError {
    /// No valid packet with that id is in the spool.
    #[error("no valid packet {0:?} in the spool")]
    UnknownPacket(String),
    /// The packet already has a decision in the chain.
    #[error("packet {id:?} was already decided: {verdict} by {principal} at {at}")]
    AlreadyDecided {
        /// The packet.
        id: String,
        /// What was decided.
        verdict: &'static str,
        /// By whom.
        principal: String,
        /// When.
        at: String,
    },
    /// The packet's decision state forbids execution even with approval.
    #[error(
        "packet {id:?} is {state}: an agent may not execute it even with approval; refuse it (and act yourself if it must be done)"
    )]
    NotApprovable {
        /// The packet.
        id: String,
        /// Its decision state.
        state: DecisionState,
    },
    /// The chain does not verify; nothing is signed onto a broken chain.
    #[error("the chain does not verify ({0}); refusing to sign until it is examined (`warrant verify`)")]
    ChainBroken(String),
    /// The record that would be appended does not pass verification itself (for example a key
    /// that is not pinned for this principal): nothing was appended.
    #[error("refusing to append a record that would not verify: {0}")]
    WouldNotVerify(String),
    /// The packet expired before the decision.
    #[error("packet {id:?} expired at {expires_at}; an expired packet can only be refused")]
    Expired {
        /// The packet.
        id: String,
        /// Its `expires_at`.
        expires_at: String,
    },
    /// The spool is not safe to sign into (see [`Spool::check_private`]).
    #[error("unsafe spool: {0}")]
    UnsafeSpool(String),
    /// A refusal needs a reason.
    #[error("a refusal needs a reason")]
    ReasonRequired,
    /// A precondition of the packet's contract does not hold now (two-phase execution): the
    /// world changed since the agent proposed, so there is nothing sound to approve.
    #[error("precondition_failed: {0}; refuse the packet, or let the agent propose again")]
    PreconditionFailed(String),
    /// The chain as verified under the lock refuses it: a control it no longer admits (it
    /// changed since the principal looked), an elevation the hypervisor's rules deny, an approval
    /// the caller's check forbids (see [`decide_with`]).
    #[error("{0}")]
    Refused(String),
    /// The packet's `governance.contract` is malformed, so its preconditions cannot be recorded.
    #[error("packet {id:?} has an invalid action contract ({reason}); it can only be refused")]
    InvalidContract {
        /// The packet.
        id: String,
        /// What is wrong.
        reason: String,
    },
    /// Appending failed.
    #[error(transparent)]
    Chain(#[from] ChainError),
    /// Scanning the spool or writing the decision file failed.
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// The outcome of a successful decision.
#[derive(Debug, Clone)]
pub struct Decided {
    /// The signed document and signature.
    pub signed: SignedDecision,
    /// The chain record written.
    pub appended: chain::Appended,
    /// The decision file written for the agent.
    pub decision_file: PathBuf,
    /// Set when the decision is recorded in the chain but its decision file could not be
    /// written (the chain is the source of truth; the next decision restores the file).
    pub file_error: Option<String>,
    /// For an approval under a quorum: the terms and who has signed so far, this signature
    /// included. While they are fewer than `required`, no decision file is written and the packet
    /// stays pending.
    pub cosigned: Option<CosignProgress>,
}

/// How far an approval under a quorum has got ([`Decided::cosigned`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CosignProgress {
    /// The terms.
    pub quorum: crate::protocol::decision::Quorum,
    /// Who has signed, in chain order.
    pub signers: Vec<String>,
}

impl CosignProgress {
    /// Whether the quorum is met (the decision file is written).
    #[must_use]
    pub fn met(&self) -> bool {
        self.signers.len() >= self.quorum.required
    }

    /// `1/2 signed (alice); waits for 1 more of bob, carol`, or `2/2 signed (alice, bob)`.
    #[must_use]
    pub fn describe(&self) -> String {
        let head = signed_so_far(&self.signers, self.quorum.required);
        if self.met() {
            return head;
        }
        let rest: Vec<&str> = self
            .quorum
            .principals
            .iter()
            .map(String::as_str)
            .filter(|p| !self.signers.iter().any(|s| s == p))
            .collect();
        format!("{head}; waits for {} more of {}", self.quorum.required - self.signers.len(), rest.join(", "))
    }
}

/// Packet ids that may be decided in the chain but have no decision file: the names of the
/// files in `packets/` (without `.json`; `propose` names them by id) that are safe ids and have
/// no `decisions/<id>.json`. What a decision or a listing restores from the chain, so a decision
/// file lost to a full disk is written again once space returns (`docs/spool.md`).
#[must_use]
pub fn ids_without_decision_files(spool: &Spool) -> std::collections::HashSet<String> {
    let Ok(entries) = fs::read_dir(spool.packets_dir()) else { return Default::default() };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_suffix(".json").map(str::to_owned))
        .filter(|id| packet::is_safe_id(id) && !spool.decision_path(id).exists())
        .collect()
}

/// Verifies the whole chain (as [`verify_chain`]) and writes again every decision file of
/// `missing` (ids, as [`ids_without_decision_files`] finds them) that the chain decided. Returns
/// the view and how many files were restored.
///
/// # Errors
/// As [`verify_chain`]; a decision file that cannot be written is logged and counted out.
pub fn verify_chain_restoring(
    spool: &Spool,
    pinned: &PinnedKeys,
    missing: &std::collections::HashSet<String>,
) -> Result<(ChainView, usize), ChainError> {
    let (view, kept) = verify_chain_records(spool, pinned, |id| missing.contains(id))?;
    Ok((view, restore_all(spool, &kept)))
}

/// Writes the decision file of each record in `kept`; logs the ones that fail.
fn restore_all(spool: &Spool, kept: &[Map<String, Value>]) -> usize {
    // Approvals towards a quorum are no decision on their own; the one that meets the quorum is
    // restored with them (they may come in any order: the prefix's records after the tail's).
    let mut partial: HashMap<String, Vec<decision::CoSignature>> = HashMap::new();
    for (id, d) in kept.iter().filter_map(chain_decision_of) {
        if let Some(signed) = d.signed.filter(|s| s.document.get("cosigners").is_none()) {
            let c = decision::CoSignature { signed: *signed, chain_index: d.chain_index, entry_hash: d.entry_hash };
            partial.entry(id).or_default().push(c);
        }
    }
    kept.iter()
        .filter(|rec| match restore_decision_file(spool, rec, &partial) {
            Ok(done) => done,
            Err(e) => {
                tracing::warn!(error = %e, "could not restore a decision file");
                false
            }
        })
        .count()
}

/// Rebuilds `decisions/<id>.json` from a decision record in the chain (used when an earlier
/// write of the file was lost after its record was appended). An approval that met a quorum is
/// rebuilt with the earlier approvals it names (`cosigners`), taken from `partial` (by packet
/// id); one that did not is no decision and is skipped.
///
/// # Errors
/// I/O errors; a record that is not a warrant decision is ignored.
pub fn restore_decision_file(
    spool: &Spool,
    rec: &Map<String, Value>,
    partial: &HashMap<String, Vec<decision::CoSignature>>,
) -> io::Result<bool> {
    let Some(meta) = rec.get("metadata") else { return Ok(false) };
    let (Some(doc), Some(sig)) =
        (meta.get("warrant_decision"), meta.get("approval").and_then(|a| a.get("signatures")).and_then(|s| s.get(0)))
    else {
        return Ok(false);
    };
    let Some(id) = doc.get("packet_id").and_then(Value::as_str).filter(|id| packet::is_safe_id(id)) else {
        return Ok(false);
    };
    let mut signature = sig.clone();
    if let Value::Object(m) = &mut signature {
        m.remove("reviewer");
        m.remove("signed_at");
    }
    let signed = SignedDecision { document: doc.clone(), signature };
    let appended = chain::Appended {
        chain_index: rec.get("chain_index").and_then(Value::as_u64).unwrap_or(0),
        entry_hash: rec.get("entry_hash").and_then(Value::as_str).unwrap_or_default().to_owned(),
        record: Value::Null,
    };
    let file = match decision::cosign_terms(doc) {
        Ok(None) => decision::decision_file(&signed, &appended),
        Ok(Some(terms)) if !terms.cosigners.is_empty() => {
            let mut earlier: Vec<decision::CoSignature> = partial
                .get(id)
                .into_iter()
                .flatten()
                .filter(|c| {
                    c.signed.document.get("packet_hash") == doc.get("packet_hash")
                        && c.signed.document.get("quorum") == doc.get("quorum")
                        && terms.cosigners.iter().any(|p| p == c.principal())
                        && doc.get("principal").and_then(Value::as_str) != Some(c.principal())
                })
                .cloned()
                .collect();
            earlier.sort_by_key(|c| c.chain_index);
            earlier.dedup_by(|a, b| a.principal() == b.principal());
            decision::cosigned_decision_file(&signed, &appended, &earlier)
        }
        _ => return Ok(false),
    };
    write_decision_file_as(spool, id, &file, Written::FromChain)?;
    Ok(true)
}

/// Who writes a decision file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Written {
    /// The decision just signed here.
    Signed,
    /// Rebuilt from its chain record ([`restore_decision_file`]).
    FromChain,
}

/// Writes `decisions/<id>.json` of a decision just signed; in a replica, also to its store's
/// decisions bucket ([`crate::store::replica::publish_decision`]), which is where agents on
/// other hosts read it.
fn write_decision_file(spool: &Spool, id: &str, file: &Value) -> io::Result<PathBuf> {
    write_decision_file_as(spool, id, file, Written::Signed)
}

/// [`write_decision_file`]; a file rebuilt from the chain is not written to the bucket from here
/// (the principal's host that signed it does; in a replica it is marked as the bucket's,
/// [`crate::store::replica::mark_published`]).
fn write_decision_file_as(spool: &Spool, id: &str, file: &Value, how: Written) -> io::Result<PathBuf> {
    fs::create_dir_all(spool.decisions_dir())?;
    let path = spool.decision_path(id);
    let mut bytes = serde_json::to_vec_pretty(file).map_err(io::Error::other)?;
    bytes.push(b'\n');
    write_atomic(&path, &bytes, 0o644)?;
    #[cfg(feature = "jetstream")]
    match how {
        Written::Signed => crate::store::replica::publish_decision(spool, id, &bytes).map_err(|e| {
            io::Error::other(format!(
                "written here, but not yet to the store's decisions bucket ({e}); the next pull writes it there"
            ))
        })?,
        Written::FromChain => crate::store::replica::mark_published(spool, id)?,
    }
    #[cfg(not(feature = "jetstream"))]
    let _ = how;
    Ok(path)
}

/// Writes the decision file of every decision record in `records` (records just appended to
/// the chain from elsewhere: a replica's catch-up) that has none, as [`restore_decision_file`]
/// does; returns how many. An approval towards a quorum whose earlier approvals are not among
/// `records` is skipped (its file comes with the next full verification, `warrant list`).
#[must_use]
pub fn restore_decision_files(spool: &Spool, records: &[Map<String, Value>]) -> usize {
    let fresh: Vec<Map<String, Value>> = records
        .iter()
        .filter(|rec| chain_decision_of(rec).is_some_and(|(id, _)| !spool.decision_path(&id).exists()))
        .cloned()
        .collect();
    restore_all(spool, &fresh)
}

/// Why a receipt could not be recorded.
#[derive(Debug, thiserror::Error)]
pub enum ReceiptError {
    /// The class, agent or packet id is not acceptable.
    #[error("{0}")]
    Invalid(String),
    /// The spool is not safe to write into (see [`Spool::check_private`]).
    #[error("unsafe spool: {0}")]
    UnsafeSpool(String),
    /// The record would not verify: nothing was appended.
    #[error("refusing to append a record that would not verify: {0}")]
    WouldNotVerify(String),
    /// Appending failed.
    #[error(transparent)]
    Chain(#[from] ChainError),
    /// Creating the spool failed.
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// What [`record_receipt`] records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceiptRequest<'a> {
    /// The action class (normalized and checked against the class-id pattern).
    pub action_class: &'a str,
    /// The outcome.
    pub outcome: ReceiptOutcome,
    /// The agent.
    pub agent: &'a str,
    /// The packet it concerns, if any (a safe id).
    pub packet_id: Option<&'a str>,
    /// Declared provenance.
    pub source_type: Option<SourceType>,
    /// A note.
    pub note: Option<&'a str>,
    /// The tool call a hook or the gateway ran ([`crate::protocol::graduation::receipt::ReceiptInput::tool_call`]).
    pub tool_call: Option<&'a Value>,
}

/// The canonical class and the agent of a receipt request, checked: a class id, a safe agent
/// id, a safe packet id.
fn receipt_subject<'a>(req: &ReceiptRequest<'a>) -> Result<(String, &'a str), ReceiptError> {
    let class = crate::protocol::registry::normalize(req.action_class);
    if !packet::is_class_id(&class) {
        return Err(ReceiptError::Invalid(format!(
            "{:?} is not an action class (like email.send.external)",
            req.action_class
        )));
    }
    let agent = req.agent.trim();
    if !packet::is_safe_id(agent) {
        return Err(ReceiptError::Invalid(format!(
            "agent id {:?} is not a safe id (A-Z a-z 0-9 . _ : -)",
            crate::protocol::text::inert(agent, 60)
        )));
    }
    if let Some(p) = req.packet_id
        && !packet::is_safe_id(p)
    {
        return Err(ReceiptError::Invalid(format!("unsafe packet id {p:?}")));
    }
    Ok((class, agent))
}

/// The portable v0.1 receipt `req` asks for ([`build_receipt`]), with its id, canonical class,
/// checked agent, time and previous receipt hash.
fn receipt_of(
    req: &ReceiptRequest<'_>,
    receipt_id: &str,
    class: &str,
    agent: &str,
    created_at: &str,
    prev_hash: Option<&str>,
) -> Value {
    build_receipt(&ReceiptInput {
        receipt_id,
        action_class: class,
        outcome: req.outcome,
        agent,
        packet_id: req.packet_id,
        source_type: req.source_type,
        created_at,
        prev_hash,
        note: req.note,
        tool_call: req.tool_call,
    })
}

/// Publishes a portable v0.1 receipt as a file in `receipts/` (temp file and rename, mode
/// 0644), as an agent that does not own the spool does: the agent's own word, listed and shown
/// apart, never the gate's evidence (`docs/spool.md`, Receipts). Not chained: `prev_hash` is
/// absent.
///
/// # Errors
/// [`ReceiptError::Invalid`] for a bad class, agent or packet id; I/O errors.
pub fn publish_receipt(
    spool: &Spool,
    req: &ReceiptRequest<'_>,
    created_at: &str,
) -> Result<(Value, PathBuf), ReceiptError> {
    publish_signed_receipt(spool, req, created_at, None)
}

/// [`publish_receipt`], signed with `gateway`'s key when given
/// ([`crate::protocol::graduation::receipt::sign_receipt`]): what `warrant mcp-gateway --sign-receipts`
/// publishes. Once the principal pins that key as a gateway's (`warrant keys pin --gateway`), the
/// receipt is an observed outcome (provenance `receipt`, evidence for the gate).
///
/// # Errors
/// As [`publish_receipt`].
pub fn publish_signed_receipt(
    spool: &Spool,
    req: &ReceiptRequest<'_>,
    created_at: &str,
    gateway: Option<&Principal>,
) -> Result<(Value, PathBuf), ReceiptError> {
    let (class, agent) = receipt_subject(req)?;
    let receipt_id = format!("rcpt-{}", uuid::Uuid::now_v7());
    let mut receipt = receipt_of(req, &receipt_id, &class, agent, created_at, None);
    if let Some(key) = gateway {
        crate::protocol::graduation::receipt::sign_receipt(&mut receipt, key);
    }
    let path = spool.publish(&spool.receipts_dir(), &receipt_id, &receipt)?;
    Ok((receipt, path))
}

/// The receipts of `spool` that a gateway pinned in `config_dir` signed (observed outcomes,
/// [`crate::protocol::packet::Receipt::observed_by`]), for a caller that reads packets only
/// ([`Scanner::scan_packets_selected`]) but judges with the gate's evidence. A scanner is kept per
/// spool and configuration for the process's life, so each receipt file is read and its
/// signature checked once per version; it is replaced when the gateway keys change. Empty when
/// the directory cannot be read. When another user owns the spool (the caller is an agent's hook
/// or a gateway under its own user), the gateway keys are those of the spool's own
/// `pinned_keys.toml`, which that user must own ([`crate::protocol::keys::GatewayKeys::load_owned`]).
#[must_use]
pub fn observed_receipts(spool: &Spool, config_dir: &Path) -> Vec<Arc<Receipt>> {
    type Kept = HashMap<(PathBuf, PathBuf), (crate::protocol::keys::GatewayKeys, Scanner)>;
    static SCANNERS: std::sync::OnceLock<std::sync::Mutex<Kept>> = std::sync::OnceLock::new();
    // In a spool another user (the principal) owns, only that user's pin file counts.
    let Ok(principal) = fs::metadata(spool.root()).map(|m| m.uid()) else { return Vec::new() };
    let owner = (principal != rustix::process::geteuid().as_raw()).then_some(principal);
    // There, the pins are the ones the principal published in the spool: the process's own
    // configuration directory is the agent's (or the gateway user's) to change.
    let dir = if owner.is_some() { spool.root() } else { config_dir };
    let Ok(gateways) = crate::protocol::keys::GatewayKeys::load_owned(dir, owner) else { return Vec::new() };
    if gateways.is_empty() {
        return Vec::new();
    }
    let Ok(mut kept) = SCANNERS.get_or_init(Default::default).lock() else { return Vec::new() };
    let key = (spool.root().to_owned(), config_dir.to_owned());
    let entry =
        kept.entry(key).or_insert_with(|| (gateways.clone(), Scanner::new().with_gateway_keys(gateways.clone())));
    if entry.0 != gateways {
        *entry = (gateways.clone(), Scanner::new().with_gateway_keys(gateways));
    }
    match entry.1.scan(spool) {
        Ok(snap) => snap.receipts.into_iter().filter(|r| r.observed_by.is_some()).collect(),
        Err(_) => Vec::new(),
    }
}

/// Assesses every pending packet of `snap` now, as the console would: the precondition re-checks
/// observed with `policies`' roots (never inside `config_dir`), then [`assess_view`]. The one
/// place the CLI and the governor assemble an assessment outside the event loop.
#[must_use]
pub fn assess_now(
    policies: &crate::protocol::graduation::policy::PolicySet,
    config_dir: &Path,
    snap: &Snapshot,
    view: &ChainView,
    workspace: &str,
) -> crate::monitor::Assessment {
    let observer = crate::preconditions::Observer::for_policies(policies, Some(config_dir));
    let revalidations = crate::preconditions::observe_pending(&observer, &snap.packets, &view.decisions);
    assess_view(policies, snap, view, &revalidations, workspace)
}

/// Assesses every pending packet of `snap` now with the chain's decisions, controls and evidence
/// from `view`, the precondition re-checks already observed (`revalidations`) and `workspace` as
/// the gate's workspace. No I/O: safe under the chain's lock.
#[must_use]
pub fn assess_view(
    policies: &crate::protocol::graduation::policy::PolicySet,
    snap: &Snapshot,
    view: &ChainView,
    revalidations: &crate::monitor::Revalidations,
    workspace: &str,
) -> crate::monitor::Assessment {
    let ctx = crate::protocol::verdict::VerdictContext {
        policies,
        controls: &view.controls,
        now: crate::protocol::clock::unix_seconds(&crate::protocol::clock::now_rfc3339()).unwrap_or(0.0),
    };
    crate::monitor::assess(
        &ctx,
        &snap.packets,
        &snap.receipts,
        &view.decisions,
        &view.evidence,
        revalidations,
        view.report.is_valid(),
        workspace,
    )
}

/// Whether this process's user owns the spool directory (the principal); an agent publishing
/// into a shared spool does not.
#[must_use]
pub fn owned_by_me(spool: &Spool) -> bool {
    // The directory itself, through a symbolic link (which anyone may own).
    fs::metadata(spool.root()).is_ok_and(|m| m.uid() == rustix::process::geteuid().as_raw())
}

/// Records a portable v0.1 receipt in the chain (`record_receipt`): under the chain's lock,
/// finds the last receipt's `content_hash` (scanning back from the tail), builds the receipt with
/// it as `prev_hash`, and appends an OpenTrustGraph record carrying it in `metadata.tg_receipt`
/// (outcome `denied` for a refusal, else `success`; autonomy tier `suggest`; no approval). The
/// whole chain is not re-verified (receipts are unsigned agent reports; `warrant verify` and the
/// console check it), but the new record must verify on its own.
///
/// # Errors
/// [`ReceiptError`]; on any error nothing was appended.
pub fn record_receipt(
    spool: &Spool,
    req: &ReceiptRequest<'_>,
    created_at: &str,
) -> Result<(Value, chain::Appended), ReceiptError> {
    let (class, agent) = receipt_subject(req)?;
    spool.ensure()?;
    spool.check_private().map_err(ReceiptError::UnsafeSpool)?;
    let receipt_id = format!("rcpt-{}", uuid::Uuid::now_v7());
    let path = spool.chain_path();
    let mut refusal = None;
    let mut receipt = Value::Null;
    let appended = chain_file::append(&path, |head| {
        let prev = match chain_file::find_last(&path, receipt_hash_of) {
            Ok(p) => p,
            Err(e) => return Err(e.to_string()),
        };
        receipt = receipt_of(req, &receipt_id, &class, agent, created_at, prev.as_deref());
        let body = receipt_record_body(&receipt, req.outcome, req.packet_id);
        if let Some(problem) = first_problem(&body, head, None) {
            refusal = Some(problem);
            return Err("would not verify".into());
        }
        Ok(body)
    });
    match appended {
        Ok(a) => Ok((receipt, a)),
        Err(e) => Err(refusal.map_or(ReceiptError::Chain(e), ReceiptError::WouldNotVerify)),
    }
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
        serde_json::from_slice(&crate::protocol::canonical::to_canonical_vec(&sealed.record)).ok();
    let rehashed = reread.map(|r| {
        crate::protocol::canonical::prefixed(&crate::protocol::canonical::canonical_digest_without(&r, "entry_hash"))
    });
    (rehashed.as_deref() != Some(sealed.entry_hash.as_str())).then(|| {
        "[entry_hash] the record would not hash the same once read back (a number that does not round-trip)".to_owned()
    })
}

/// The chain record of an agent's receipt (built by `build_receipt`): the receipt in
/// `metadata.tg_receipt`, outcome `denied` for a refusal else `success`, autonomy tier
/// `suggest`, no approver, trace `warrant:<packet id>` or `warrant:receipt:<receipt id>`.
#[must_use]
pub fn receipt_record_body(receipt: &Value, outcome: ReceiptOutcome, packet_id: Option<&str>) -> Map<String, Value> {
    let s = |k: &str| receipt.get(k).and_then(Value::as_str).unwrap_or_default();
    let trace = packet_id.map_or_else(|| format!("warrant:receipt:{}", s("receipt_id")), |p| format!("warrant:{p}"));
    let mut meta = Map::new();
    meta.insert("tg_receipt".into(), receipt.clone());
    chain::new_record_body(
        s("agent"),
        s("action_class"),
        None,
        outcome.otg_outcome(),
        &trace,
        "suggest",
        s("created_at"),
        meta,
    )
}

/// The chain record of a signed decision ([`decision::record_body`]) with the principal's own
/// receipt (`decision:<packet id>`, provenance `principal`, linked to `prev_receipt`) in
/// `metadata.tg_receipt`.
#[must_use]
pub fn decision_record_body(
    input: &DecisionInput<'_>,
    signed: &SignedDecision,
    prev_receipt: Option<&str>,
    publisher: Option<u32>,
) -> Map<String, Value> {
    let mut body = decision::record_body(input, signed);
    let receipt_id = format!("decision:{}", input.packet_id);
    let receipt = build_receipt(&ReceiptInput {
        receipt_id: &receipt_id,
        action_class: input.action_class,
        outcome: input.verdict.into(),
        agent: input.agent,
        packet_id: Some(input.packet_id),
        source_type: Some(SourceType::Principal),
        created_at: input.decided_at,
        prev_hash: prev_receipt,
        note: None,
        tool_call: None,
    });
    if let Some(Value::Object(meta)) = body.get_mut("metadata") {
        meta.insert("tg_receipt".into(), receipt);
        if let Some(uid) = publisher {
            meta.insert(
                crate::protocol::control::PUBLISHER_KEY.into(),
                serde_json::json!({"agent": input.agent, "uid": uid}),
            );
        }
    }
    body
}

/// The chain as verified under the append lock, refusing one that does not verify: what a
/// decision or a control is signed onto. `keep` is as for [`verify_chain_records`]. Three ways,
/// the first that has no doubt: from the principal's own checkpoint copy and its fold of the
/// prefix ([`folded_view`]: nothing of the prefix read, the tail verified); from the copy with
/// the prefix read, hashed and compared with its `prefix_sha256` ([`checkpointed_view`]); from the
/// whole chain verified again ([`whole_view_for_signing`]). A tail with findings always falls
/// back to the whole chain, so the refusal names what `warrant verify` reports. Also returns the
/// fold of the prefix that is known good, for the next checkpoint ([`sign_checkpoint`]).
///
/// # Errors
/// [`DecideError::Chain`] for I/O, [`DecideError::ChainBroken`] with the first finding.
fn verified_view(spool: &Spool, pinned: &PinnedKeys, keep: impl Fn(&str) -> bool) -> Result<Checkpointed, DecideError> {
    if let Some(c) = folded_view(spool, pinned, &keep).or_else(|| checkpointed_view(spool, pinned, &keep, true)) {
        return Ok(c);
    }
    whole_view_for_signing(spool, pinned, &keep)
}

/// The whole chain verified (the parallel byte-level verifier, [`chain_file::verify_file`], with
/// every warrant signature against the pinned keys, and the principal's latest checkpoint
/// checked), then, if it verified, folded once ([`extend_fold`]: controls, grants, key events,
/// publishers, decisions, record ids, SHA-256) for the view and the next checkpoint. As with a
/// checkpointed view, the evidence rows are not read (`docs/spool.md`, Incremental
/// verification). Called under the chain's lock, so the fold reads the bytes that were verified.
///
/// # Errors
/// [`DecideError::Chain`] for I/O, [`DecideError::ChainBroken`] with the first finding.
fn whole_view_for_signing(
    spool: &Spool,
    pinned: &PinnedKeys,
    keep: &dyn Fn(&str) -> bool,
) -> Result<Checkpointed, DecideError> {
    let path = spool.chain_path();
    let opts = VerifyOptions { pinned: Some(pinned), strict_signatures: true };
    let mut report = match fs::symlink_metadata(&path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => chain::VerifyReport::default(),
        _ => chain_file::verify_file(&path, opts)?,
    };
    let (checkpoint, _) = crate::store::checkpoint_files::latest(spool, pinned);
    if let Some(f) = checkpoint.and_then(|cp| crate::store::checkpoint_files::check(&path, &cp, &report)) {
        report.findings.push(f);
    }
    if let Some(first) = report.first() {
        return Err(DecideError::ChainBroken(first.to_string()));
    }
    let bytes = fs::symlink_metadata(&path).map_or(0, |m| m.len());
    let io_error = |e: io::Error| DecideError::Chain(ChainError::Io { path: path.clone(), source: e });
    let mut fold = PrefixFold { version: FOLD_VERSION, ..PrefixFold::default() };
    let scan = if bytes == 0 {
        PrefixScan::default()
    } else {
        extend_fold(&path, &mut fold, bytes, keep, None, true).map_err(io_error)?
    };
    let (mut view, _) = fold.view(pinned);
    view.report = report;
    view.last_receipt_hash = chain_file::find_last(&path, receipt_hash_of)?;
    fold.last_receipt_hash.clone_from(&view.last_receipt_hash);
    Ok(Checkpointed { view, kept: scan.kept, fold: Some(fold) })
}

/// Signs the checkpoint that follows an appended decision or control (`a`: the last record
/// appended; `bytes`: the chain's length now) and writes it
/// ([`crate::store::checkpoint_files::write`]); a failed write is logged, the decision stands.
/// `fold` is the fold of the prefix verified under the lock ([`verified_view`]): the records
/// after it, up to `bytes` (read under the lock), are folded on ([`extend_fold`]), so its SHA-256
/// becomes the checkpoint's `prefix_sha256`; the fold is written beside the principal's copy
/// ([`crate::store::checkpoint_files::write_fold`]) and its digest signed as `fold_sha256`.
/// Without a fold the chain is hashed from its start and no fold is written. Returns the signed
/// checkpoint for the decision file, `Null` when the chain could not be read to hash it (the
/// decision stands without a checkpoint, and the next decision verifies the whole chain).
fn sign_checkpoint(
    spool: &Spool,
    principal: &Principal,
    a: &chain::Appended,
    bytes: u64,
    at: &str,
    fold: Option<PrefixFold>,
) -> Value {
    let verified = fold.is_some();
    let mut fold = fold.unwrap_or_else(|| PrefixFold { version: FOLD_VERSION, ..PrefixFold::default() });
    if let Err(e) = extend_fold(&spool.chain_path(), &mut fold, bytes, &|_| false, None, true) {
        tracing::warn!(error = %e, "could not hash the chain for the checkpoint; none signed");
        return Value::Null;
    }
    fold.records = a.chain_index;
    fold.head_hash = Some(a.entry_hash.clone());
    if let Some(h) = a.record.as_object().and_then(receipt_hash_of) {
        fold.last_receipt_hash = Some(h);
    }
    let fold_sha256 = if verified {
        let written = serde_json::to_vec(&fold).map_err(io::Error::other).and_then(|json| {
            let digest = crate::protocol::canonical::sha256_prefixed(&json);
            crate::store::checkpoint_files::write_fold(spool, &json).map(|w| w.map(|()| digest))
        });
        written.unwrap_or_else(|e| {
            tracing::warn!(error = %e, "could not write the fold of the chain; the next decision reads the chain");
            None
        })
    } else {
        None
    };
    let cp = crate::protocol::checkpoint::sign_with_fold(
        principal,
        a.chain_index,
        &a.entry_hash,
        bytes,
        &fold.digest.finish(),
        fold_sha256.as_deref(),
        at,
    );
    if let Err(e) = crate::store::checkpoint_files::write(spool, &cp) {
        tracing::warn!(error = %e, "could not write the checkpoint");
    }
    cp
}

/// What the packet itself says against `verdict` at `decided_at`, before any chain is read: an
/// approval of a packet that declares itself blocked or human_only, or that expired (or whose
/// times cannot be read), is refused.
fn packet_admits(packet: &Packet, verdict: Verdict, decided_at: &str) -> Result<(), DecideError> {
    if verdict == Verdict::Approve
        && let Some(state @ (DecisionState::Blocked | DecisionState::HumanOnly)) = packet.state
    {
        return Err(DecideError::NotApprovable { id: packet.id.clone(), state });
    }
    if verdict == Verdict::Approve
        && let Some(expires_at) = &packet.expires_at
    {
        let expired = match (
            crate::protocol::clock::unix_seconds(expires_at),
            crate::protocol::clock::unix_seconds(decided_at),
        ) {
            (Some(e), Some(now)) => e <= now,
            _ => true,
        };
        if expired {
            return Err(DecideError::Expired { id: packet.id.clone(), expires_at: expires_at.clone() });
        }
    }
    Ok(())
}

/// Signs a decision on `packet` and records it: under the chain's lock, re-reads and verifies
/// the whole chain (refusing a broken one, and a packet that is already decided), checks that
/// the new record would itself verify, appends it durably, then writes
/// `decisions/<id>.json` atomically. Decision files missing for earlier records are restored
/// from the chain on the way.
///
/// Preconditions are observed with an [`crate::preconditions::Observer`] that has no roots, so
/// an approval of a packet with file or git preconditions fails closed here: callers that honour
/// the principal's `[preconditions] roots` use [`decide_with`].
///
/// # Errors
/// [`DecideError`]; on any error nothing was appended.
pub fn decide(
    spool: &Spool,
    principal: &Principal,
    pinned: &PinnedKeys,
    packet: &Packet,
    verdict: Verdict,
    reason: Option<&str>,
    decided_at: &str,
) -> Result<Decided, DecideError> {
    let observer = crate::preconditions::Observer::default();
    decide_with(
        spool,
        principal,
        pinned,
        packet,
        None,
        verdict,
        reason,
        decided_at,
        &observer,
        None,
        |_| Ok(Vec::new()),
    )
}

/// [`decide`], for a packet whose file `publisher` (a uid) owns, observing an approval's
/// preconditions with `observer` (before the lock is taken), and with `admit` run on the chain as verified under the lock, just before signing: an `Err`
/// refuses the decision ([`DecideError::Refused`]) and nothing is appended. The CLI checks the
/// composed verdict here, so the chain is verified once and the principal's controls cannot
/// change between the check and the signature.
///
/// An approval records `publisher` in the record (`metadata.warrant_publisher`): the chain's
/// first such record for an agent binds the agent id to that uid ([`ControlState::publishers`]).
/// A refusal binds nothing, so refusing a squatter's packet never hands it the agent's name.
///
/// # Errors
/// As [`decide`], and [`DecideError::Refused`].
#[allow(clippy::too_many_arguments)]
pub fn decide_with(
    spool: &Spool,
    principal: &Principal,
    pinned: &PinnedKeys,
    packet: &Packet,
    publisher: Option<u32>,
    verdict: Verdict,
    reason: Option<&str>,
    decided_at: &str,
    observer: &crate::preconditions::Observer,
    quorum: Option<&crate::protocol::decision::Quorum>,
    admit: impl FnOnce(&ChainView) -> Result<Vec<String>, String>,
) -> Result<Decided, DecideError> {
    decide_as(spool, principal, pinned, packet, publisher, verdict, reason, decided_at, observer, quorum, None, admit)
}

/// Signs and records a *system decision* on `packet` ([`decision::SystemCause`]): a refusal,
/// with `reason` (required), its signed document carrying `"system": cause`, made exactly as
/// [`decide`] makes a refusal (under the chain's lock, on a verified chain, once: a packet already
/// decided is [`DecideError::AlreadyDecided`]). The principal's console signs one when a
/// packet of a class with `[timeouts] sign_refusal = true` timed out undecided. It decides the
/// packet (the chain's decisions, `decisions/<id>.json`: the agent is told it was refused), and
/// it is never evidence ([`chain_evidence_of`]).
///
/// # Errors
/// As [`decide`]; on any error nothing was appended.
pub fn decide_system(
    spool: &Spool,
    principal: &Principal,
    pinned: &PinnedKeys,
    packet: &Packet,
    cause: decision::SystemCause,
    reason: &str,
    decided_at: &str,
) -> Result<Decided, DecideError> {
    let observer = crate::preconditions::Observer::default();
    let (verdict, reason) = (Verdict::Refuse, Some(reason));
    decide_as(spool, principal, pinned, packet, None, verdict, reason, decided_at, &observer, None, Some(cause), |_| {
        Ok(Vec::new())
    })
}

/// [`decide_with`] (an approval under `quorum` is one co-signature), signing a system decision
/// when `system` is given ([`decide_system`]).
#[allow(clippy::too_many_arguments)]
fn decide_as(
    spool: &Spool,
    principal: &Principal,
    pinned: &PinnedKeys,
    packet: &Packet,
    publisher: Option<u32>,
    verdict: Verdict,
    reason: Option<&str>,
    decided_at: &str,
    observer: &crate::preconditions::Observer,
    quorum: Option<&crate::protocol::decision::Quorum>,
    system: Option<decision::SystemCause>,
    admit: impl FnOnce(&ChainView) -> Result<Vec<String>, String>,
) -> Result<Decided, DecideError> {
    if verdict == Verdict::Refuse && reason.is_none_or(|r| r.trim().is_empty()) {
        return Err(DecideError::ReasonRequired);
    }
    packet_admits(packet, verdict, decided_at)?;
    spool.ensure()?;
    spool.check_private().map_err(DecideError::UnsafeSpool)?;
    let trace = packet.trace_id.clone().unwrap_or_else(|| format!("warrant:{}", packet.id));
    let action_class = crate::protocol::registry::normalize(&packet.action_class);
    let input = DecisionInput {
        packet_id: &packet.id,
        packet_hash: &packet.content_hash,
        action_class: &action_class,
        agent: &packet.agent,
        trace_id: &trace,
        verdict,
        reason: reason.map(str::trim).filter(|r| !r.is_empty()),
        decided_at,
        stands_in_for: &[],
    };
    let mut preconditions = if verdict == Verdict::Approve { record_preconditions(observer, packet)? } else { None };
    // Signed under the lock, once `admit` has said what the approval stands in for on the
    // verified chain: what is signed is what was checked.
    let mut signed: Option<SignedDecision> = None;
    let chain_path = spool.chain_path();
    let mut refusal: Option<DecideError> = None;
    let mut to_restore: Vec<Map<String, Value>> = Vec::new();
    let mut checkpoint = Value::Null;
    // Under a quorum: the terms signed, and the approvals signed before this one.
    let mut cosign: Option<(decision::Cosign, Vec<decision::CoSignature>)> = None;
    // The fold of the prefix the verification proved, from the check to the checkpoint.
    let fold = std::cell::Cell::new(None);
    // Decision files lost earlier (a full disk) are restored from the chain on the way (listed
    // before the lock is taken): a prefix decision among them needs its record, so the prefix is
    // read then (the fold holds no records).
    let missing = ids_without_decision_files(spool);
    let appended = chain_file::append_then(
        &chain_path,
        chain_file::LOCK_DEADLINE,
        |head| {
            let keep = |id: &str| missing.contains(id) || (id == packet.id && !spool.decision_path(id).exists());
            let (view, kept) = match verified_view(spool, pinned, keep) {
                Ok(c) => {
                    fold.set(c.fold);
                    (c.view, c.kept)
                }
                Err(e) => {
                    let msg = e.to_string();
                    refusal = Some(e);
                    return Err(msg);
                }
            };
            to_restore = kept;
            if let Some(prior) = view.decisions.get(&packet.id).cloned() {
                refusal = Some(DecideError::AlreadyDecided {
                    id: packet.id.clone(),
                    verdict: prior.verdict.as_str(),
                    principal: prior.principal,
                    at: prior.decided_at,
                });
                return Err("already decided".into());
            }
            let stands_in_for = match admit(&view) {
                Ok(s) => s,
                Err(why) => {
                    refusal = Some(DecideError::Refused(why));
                    return Err("refused".into());
                }
            };
            if let Some(q) = quorum.filter(|_| verdict == Verdict::Approve) {
                match cosign_terms_for(&view, packet, principal, q) {
                    Ok(terms) => cosign = Some(terms),
                    Err(why) => {
                        refusal = Some(DecideError::Refused(why));
                        return Err("refused".into());
                    }
                }
            }
            let input = DecisionInput { stands_in_for: &stands_in_for, ..input.clone() };
            let now_signed = match system {
                None => decision::sign_decision_with(
                    principal,
                    &input,
                    preconditions.take(),
                    cosign.as_ref().map(|(c, _)| c),
                ),
                // Only ever a refusal: anything else signs nothing.
                Some(cause) => match decision::sign_system_decision(principal, &input, cause) {
                    Ok(signed) => signed,
                    Err(why) => {
                        refusal = Some(DecideError::Refused(why));
                        return Err("refused".into());
                    }
                },
            };
            let publisher = publisher.filter(|_| verdict == Verdict::Approve);
            let body = decision_record_body(&input, &now_signed, view.last_receipt_hash.as_deref(), publisher);
            signed = Some(now_signed);
            if let Some(problem) = first_problem(&body, head, Some(pinned)) {
                refusal = Some(DecideError::WouldNotVerify(problem));
                return Err("would not verify".into());
            }
            Ok(body)
        },
        |a, bytes| checkpoint = sign_checkpoint(spool, principal, a, bytes, decided_at, fold.take()),
    );
    restore_all(spool, &to_restore);
    let (appended, signed) = match (appended, signed) {
        (Ok(a), Some(signed)) => (a, signed),
        (Ok(_), None) => {
            // Unreachable: the record appended was built from the signature made just before.
            let source = std::io::Error::other("a decision was appended without its signature");
            return Err(DecideError::Chain(ChainError::Io { path: spool.chain_path(), source }));
        }
        (Err(e), _) => return Err(refusal.unwrap_or(DecideError::Chain(e))),
    };
    let path = spool.decision_path(&packet.id);
    let cosigned = cosign.as_ref().map(|(terms, earlier)| {
        let mut signers: Vec<String> = earlier.iter().map(|c| c.principal().to_owned()).collect();
        signers.push(principal.name.clone());
        CosignProgress { quorum: terms.quorum.clone(), signers }
    });
    if cosigned.as_ref().is_some_and(|c| !c.met()) {
        // One approval towards a quorum: recorded, nothing released.
        return Ok(Decided { signed, appended, decision_file: path, file_error: None, cosigned });
    }
    let mut file = match &cosign {
        Some((_, earlier)) => decision::cosigned_decision_file(&signed, &appended, earlier),
        None => decision::decision_file(&signed, &appended),
    };
    if let Value::Object(m) = &mut file {
        m.insert("checkpoint".into(), checkpoint);
    }
    let file_error = write_decision_file(spool, &packet.id, &file).err().map(|e| format!("{}: {e}", path.display()));
    if let Some(e) = &file_error {
        tracing::warn!(error = %e, "decision recorded in the chain, but its decision file was not written");
    }
    Ok(Decided { signed, appended, decision_file: path, file_error, cosigned })
}

/// The co-signing terms of `principal`'s approval of `packet` under `quorum`, on the verified
/// chain `view`, and the approvals signed before it (over the same content, under the same
/// terms): `cosigners` set when this one meets the quorum.
///
/// # Errors
/// A sentence when `principal` is not one of the quorum's, or has signed already.
fn cosign_terms_for(
    view: &ChainView,
    packet: &Packet,
    principal: &Principal,
    quorum: &decision::Quorum,
) -> Result<(decision::Cosign, Vec<decision::CoSignature>), String> {
    let class = crate::protocol::text::inert(&packet.action_class, 200);
    if !quorum.lists(&principal.name) {
        return Err(format!(
            "{class} needs the approval of {}: {:?} is not one of them",
            quorum.describe(),
            principal.name
        ));
    }
    let earlier: Vec<decision::CoSignature> = view
        .cosigning
        .get(&packet.id)
        .filter(|c| c.quorum == *quorum && c.packet_hash == packet.content_hash)
        .map(|c| c.signatures.clone())
        .unwrap_or_default();
    if earlier.iter().any(|c| c.principal() == principal.name) {
        return Err(format!(
            "{} already has your approval ({}/{} signed; needs {}): it waits for another principal",
            packet.id,
            earlier.len(),
            quorum.required,
            quorum.describe()
        ));
    }
    let mut cosigners = Vec::new();
    if earlier.len() + 1 >= quorum.required {
        cosigners = earlier.iter().map(|c| c.principal().to_owned()).collect();
        cosigners.push(principal.name.clone());
        cosigners.sort_unstable();
    }
    Ok((decision::Cosign { quorum: quorum.clone(), cosigners }, earlier))
}

/// One packet of a batch decision ([`decide_many`]).
#[derive(Debug, Clone)]
pub struct BatchItem<'a> {
    /// The packet as the principal reviewed it (its content hash is what gets signed).
    pub packet: &'a Packet,
    /// The uid owning the packet's file, recorded with an approval (as [`decide_with`]).
    pub publisher: Option<u32>,
}

/// Why a batch decision signed nothing: each packet that cannot be decided, and why, in the
/// order given. A batch is all or nothing (`docs/spool.md`, Batch decisions).
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    /// Some packets cannot be decided as asked: nothing was signed.
    #[error("nothing was signed: {} of the {total} packets cannot be decided: {}", .refused.len(), list_refused(.refused))]
    Refused {
        /// How many packets the batch had.
        total: usize,
        /// Packet id and the reason, for each packet refused from the batch.
        refused: Vec<(String, DecideError)>,
    },
    /// The batch as a whole failed (a broken chain, an unsafe spool, a missing reason, no packet,
    /// I/O): nothing was signed.
    #[error(transparent)]
    Decide(#[from] DecideError),
}

fn list_refused(refused: &[(String, DecideError)]) -> String {
    refused
        .iter()
        .map(|(id, e)| format!("{}: {e}", crate::protocol::text::inert(id, 120)))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Signs the same decision on each of `items` and records them as one group (issue 18, batch
/// triage): one signed decision document and one chain record per packet, exactly as
/// [`decide_with`] makes them, appended under one lock of the chain, after one verification of
/// it, with one `fdatasync` for the group ([`chain_file::append_many_then`]) and one checkpoint after
/// the last record; then one decision file per packet.
///
/// **All or nothing.** Every packet is checked as [`decide_with`] checks one (blocked,
/// human_only, expired, preconditions, an invalid contract; under the lock: already decided in
/// the chain, and `admit`, which the caller uses for the composed verdict and which says what an
/// approval stands in for); if any packet fails, nothing is signed and [`BatchError::Refused`]
/// lists every packet that failed and why. A packet listed twice is refused from the batch.
///
/// # Errors
/// [`BatchError`]; on any error nothing was appended.
#[allow(clippy::too_many_arguments)]
pub fn decide_many(
    spool: &Spool,
    principal: &Principal,
    pinned: &PinnedKeys,
    items: &[BatchItem<'_>],
    verdict: Verdict,
    reason: Option<&str>,
    decided_at: &str,
    observer: &crate::preconditions::Observer,
    mut admit: impl FnMut(&ChainView, &Packet) -> Result<Vec<String>, String>,
) -> Result<Vec<Decided>, BatchError> {
    if items.is_empty() {
        return Err(DecideError::Refused("no packet to decide".into()).into());
    }
    if verdict == Verdict::Refuse && reason.is_none_or(|r| r.trim().is_empty()) {
        return Err(DecideError::ReasonRequired.into());
    }
    let reason = reason.map(str::trim).filter(|r| !r.is_empty());
    // Checks of the packets themselves, and their preconditions observed, before the lock.
    let mut refused: Vec<(String, DecideError)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut preconditions: Vec<Option<Value>> = Vec::with_capacity(items.len());
    for item in items {
        let p = item.packet;
        if !seen.insert(p.id.as_str()) {
            refused.push((p.id.clone(), DecideError::Refused("listed twice in the batch".into())));
            preconditions.push(None);
            continue;
        }
        let checked = packet_admits(p, verdict, decided_at)
            .and_then(|()| if verdict == Verdict::Approve { record_preconditions(observer, p) } else { Ok(None) });
        match checked {
            Ok(pre) => preconditions.push(pre),
            Err(e) => {
                refused.push((p.id.clone(), e));
                preconditions.push(None);
            }
        }
    }
    if !refused.is_empty() {
        return Err(BatchError::Refused { total: items.len(), refused });
    }
    spool.ensure().map_err(DecideError::from)?;
    spool.check_private().map_err(DecideError::UnsafeSpool)?;
    let classes: Vec<String> =
        items.iter().map(|i| crate::protocol::registry::normalize(&i.packet.action_class)).collect();
    let traces: Vec<String> =
        items.iter().map(|i| i.packet.trace_id.clone().unwrap_or_else(|| format!("warrant:{}", i.packet.id))).collect();
    let mut signed: Vec<SignedDecision> = Vec::with_capacity(items.len());
    let mut failure: Option<BatchError> = None;
    let mut to_restore: Vec<Map<String, Value>> = Vec::new();
    let mut checkpoint = Value::Null;
    let fold = std::cell::Cell::new(None);
    let missing = ids_without_decision_files(spool);
    let appended = chain_file::append_many_then(
        &spool.chain_path(),
        chain_file::LOCK_DEADLINE,
        |head| {
            let keep = |id: &str| missing.contains(id) || (seen.contains(id) && !spool.decision_path(id).exists());
            let view = match verified_view(spool, pinned, keep) {
                Ok(c) => {
                    fold.set(c.fold);
                    to_restore = c.kept;
                    c.view
                }
                Err(e) => {
                    let msg = e.to_string();
                    failure = Some(e.into());
                    return Err(msg);
                }
            };
            // Every packet is checked on the verified chain before anything is signed.
            let mut stands: Vec<Vec<String>> = Vec::with_capacity(items.len());
            for item in items {
                let p = item.packet;
                if let Some(prior) = view.decisions.get(&p.id).cloned() {
                    refused.push((
                        p.id.clone(),
                        DecideError::AlreadyDecided {
                            id: p.id.clone(),
                            verdict: prior.verdict.as_str(),
                            principal: prior.principal,
                            at: prior.decided_at,
                        },
                    ));
                    continue;
                }
                match admit(&view, p) {
                    Ok(s) => stands.push(s),
                    Err(why) => refused.push((p.id.clone(), DecideError::Refused(why))),
                }
            }
            if !refused.is_empty() {
                failure = Some(BatchError::Refused { total: items.len(), refused: std::mem::take(&mut refused) });
                return Err("refused".into());
            }
            let mut bodies = Vec::with_capacity(items.len());
            let mut head = head.clone();
            let mut prev_receipt = view.last_receipt_hash.clone();
            for (((item, pre), stands_in_for), (class, trace)) in
                items.iter().zip(preconditions.iter_mut()).zip(&stands).zip(classes.iter().zip(&traces))
            {
                let p = item.packet;
                let input = DecisionInput {
                    packet_id: &p.id,
                    packet_hash: &p.content_hash,
                    action_class: class,
                    agent: &p.agent,
                    trace_id: trace,
                    verdict,
                    reason,
                    decided_at,
                    stands_in_for,
                };
                let now_signed = decision::sign_decision_with_preconditions(principal, &input, pre.take());
                let publisher = item.publisher.filter(|_| verdict == Verdict::Approve);
                let body = decision_record_body(&input, &now_signed, prev_receipt.as_deref(), publisher);
                if let Some(problem) = first_problem(&body, &head, Some(pinned)) {
                    failure = Some(DecideError::WouldNotVerify(format!("{}: {problem}", p.id)).into());
                    return Err("would not verify".into());
                }
                prev_receipt = receipt_hash_of(&body).or(prev_receipt);
                let sealed = chain::seal(body.clone(), &head);
                head = chain::ChainHead { last_index: sealed.chain_index, last_hash: Some(sealed.entry_hash) };
                signed.push(now_signed);
                bodies.push(body);
            }
            Ok(bodies)
        },
        |a, bytes| {
            if let Some(last) = a.last() {
                checkpoint = sign_checkpoint(spool, principal, last, bytes, decided_at, fold.take());
            }
        },
    );
    restore_all(spool, &to_restore);
    let appended = match appended {
        Ok(a) if a.len() == items.len() && signed.len() == items.len() => a,
        Ok(_) => {
            // Unreachable: one record was appended for each signature made.
            let source = io::Error::other("a batch was appended without its signatures");
            return Err(DecideError::Chain(ChainError::Io { path: spool.chain_path(), source }).into());
        }
        Err(e) => return Err(failure.unwrap_or(BatchError::Decide(DecideError::Chain(e)))),
    };
    let mut out = Vec::with_capacity(items.len());
    for ((item, signed), appended) in items.iter().zip(signed).zip(appended) {
        let id = &item.packet.id;
        let path = spool.decision_path(id);
        let mut file = decision::decision_file(&signed, &appended);
        if let Value::Object(m) = &mut file {
            m.insert("checkpoint".into(), checkpoint.clone());
        }
        let file_error = write_decision_file(spool, id, &file).err().map(|e| format!("{}: {e}", path.display()));
        if let Some(e) = &file_error {
            tracing::warn!(error = %e, "decision recorded in the chain, but its decision file was not written");
        }
        out.push(Decided { signed, appended, decision_file: path, file_error, cosigned: None });
    }
    Ok(out)
}

/// After a kill: signs a refusal of every pending packet that claims `agent` (no decision in the
/// chain yet), the kill's reason as the refusal's, so what the kill switch reports as compensated
/// is decided in the chain and every waiting agent is answered (issue 16). Returns the ids
/// refused; a packet decided meanwhile is skipped; other failures are returned.
///
/// # Errors
/// The first [`DecideError`] other than "already decided".
pub fn refuse_pending_of(
    spool: &Spool,
    principal: &Principal,
    pinned: &PinnedKeys,
    agent: &str,
    reason: &str,
    decided_at: &str,
) -> Result<Vec<String>, DecideError> {
    let snap = Scanner::new().scan(spool)?;
    let mut refused = Vec::new();
    for e in snap.packets.iter().filter(|e| e.packet.agent == agent) {
        if spool.decision_path(&e.packet.id).exists() {
            continue;
        }
        match decide(spool, principal, pinned, &e.packet, Verdict::Refuse, Some(reason), decided_at) {
            Ok(_) => refused.push(e.packet.id.clone()),
            Err(DecideError::AlreadyDecided { .. }) => {}
            Err(err) => return Err(err),
        }
    }
    Ok(refused)
}

/// Signs a control and records it (the principal's notebook-trust change, quarantine, release,
/// kill or elevation): under the chain's lock, verifies the whole chain (refusing a broken one),
/// prepares the control against that verified view ([`prepare_control`]: a trust change must
/// still start from its `previous` level, a kill runs the kill switch, an elevation is checked by
/// the hypervisor's rules), signs it, checks that the new record would itself verify, and appends
/// it durably. The control applies from the next gate call: every view folds the chain
/// ([`ChainView::controls`]). Returns the control as signed and the record written.
///
/// # Errors
/// [`DecideError`]: an unsafe spool, a broken chain, a control the chain no longer admits or the
/// hypervisor denies ([`DecideError::Refused`]), a record that would not verify, I/O; on
/// any error nothing was appended.
pub fn append_control(
    spool: &Spool,
    principal: &Principal,
    pinned: &PinnedKeys,
    policies: &crate::protocol::graduation::PolicySet,
    mut input: ControlInput,
) -> Result<(ControlInput, chain::Appended), DecideError> {
    if !packet::is_safe_id(&input.subject) {
        return Err(DecideError::WouldNotVerify(format!("{:?} is not a safe notebook or agent id", input.subject)));
    }
    let signed_at = input.decided_at.clone();
    let a = append_signed_record(spool, principal, pinned, &signed_at, |view| {
        prepare_control(spool, policies, view, &mut input)?;
        Ok(crate::protocol::control::record_body(&input, &crate::protocol::control::sign_control(principal, &input)))
    })?;
    standing_signal(spool, &input);
    Ok((input, a))
}

/// After a quarantine or a release is recorded: tells the agent, as the kill switch does, in
/// `signals/<agent>.json` (`{"type": "warrant_quarantine" | "warrant_release", "agent",
/// "reason", "at"}`), so a `propose --wait` stops waiting for a decision that cannot come
/// (issue 16). The chain is the record; a signal that cannot be written is logged, not an error.
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
    let dir = spool.signals_dir();
    let written = fs::create_dir_all(&dir).and_then(|()| {
        let mut bytes = serde_json::to_vec_pretty(&signal).map_err(std::io::Error::other)?;
        bytes.push(b'\n');
        write_atomic(&dir.join(format!("{}.json", input.subject)), &bytes, 0o644)
    });
    if let Err(e) = written {
        tracing::warn!(agent = %input.subject, error = %e, "the {kind} signal was not written");
    }
}

/// Records a key event ([`crate::protocol::key_event`]: a rotation or a rename) signed by `principal`
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
    event: &crate::protocol::key_event::KeyEvent,
    decided_at: &str,
) -> Result<chain::Appended, DecideError> {
    append_signed_record(spool, principal, pinned, decided_at, |_| {
        Ok(crate::protocol::key_event::record_body(event, principal, new, decided_at))
    })
}

/// Records a grant ([`crate::protocol::grant`]) signed by `principal`: under the chain's lock, verifies the
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
    input: &crate::protocol::grant::GrantInput,
) -> Result<(crate::protocol::grant::Grant, chain::Appended), DecideError> {
    let signed = crate::protocol::grant::sign(
        principal,
        crate::protocol::grant::grant_document(input, &principal.name, &principal.fingerprint()),
    );
    let mut grant =
        crate::protocol::grant::Grant::from_document(&signed.document).map_err(DecideError::WouldNotVerify)?;
    let a = append_signed_record(spool, principal, pinned, &input.decided_at, |view| {
        if view.grants.get(&input.grant_id).is_some() || view.grants.revoked(&input.grant_id).is_some() {
            return Err(DecideError::Refused(format!("grant id {} is already in the chain", input.grant_id)));
        }
        Ok(crate::protocol::grant::record_body(&signed))
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
        let doc = crate::protocol::grant::revocation_document(
            grant_id,
            &g.agent,
            reason,
            decided_at,
            &principal.name,
            &principal.fingerprint(),
        );
        Ok(crate::protocol::grant::record_body(&crate::protocol::grant::sign(principal, doc)))
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
    spool.check_private().map_err(DecideError::UnsafeSpool)?;
    let mut refusal: Option<DecideError> = None;
    // The fold of the prefix the verification proved, from the check to the checkpoint.
    let fold = std::cell::Cell::new(None);
    let appended = chain_file::append_then(
        &spool.chain_path(),
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
            sign_checkpoint(spool, principal, a, bytes, signed_at, fold.take());
        },
    );
    appended.map_err(|e| refusal.unwrap_or(DecideError::Chain(e)))
}

/// The suffix of the files that claim one use of a grant or of an approval, in `uses/`.
pub const USE_SUFFIX: &str = ".use";

/// Claims one use of `grant` for the call packet `packet_id`, atomically across processes: a
/// file `uses/grant+<grant_id>+<n>.use` created with `O_EXCL` for the first free `n` ≤
/// `max_uses` (synced, with its directory, before this returns), or, for a grant with no bound,
/// `uses/grant+<grant_id>+<packet_id>.use`. The file names the grant, the packet and the time:
/// the record of which grant allowed which call. `Ok(None)` when every use is taken: of racing
/// callers, exactly `max_uses` succeed.
///
/// Where agents run as their own users, the files are theirs: an agent that deletes its claims
/// could use a bounded grant again (`docs/spool.md`, "Trust boundary"); the audit counts them.
///
/// # Errors
/// I/O errors other than a taken use (each is a refusal for the caller).
pub fn claim_grant_use(
    spool: &Spool,
    grant: &crate::protocol::grant::Grant,
    packet_id: &str,
) -> io::Result<Option<u64>> {
    if !packet::is_safe_id(packet_id) || !packet::is_safe_id(&grant.grant_id) {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "unsafe grant or packet id"));
    }
    let dir = spool.uses_dir();
    fs::create_dir_all(&dir)?;
    let body = |n: Option<u64>| {
        serde_json::json!({
            "type": "warrant_grant_use", "grant_id": grant.grant_id, "packet_id": packet_id,
            "use": n, "at": crate::protocol::clock::now_rfc3339(),
        })
    };
    match grant.max_uses {
        None => {
            let path = dir.join(format!("grant+{}+{packet_id}{USE_SUFFIX}", grant.grant_id));
            match create_claim(&path, &body(None)) {
                Ok(()) => Ok(Some(0)),
                // The same packet judged again (a retried hook): still this grant's one use.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(Some(0)),
                Err(e) => Err(e),
            }
        }
        Some(max) => {
            for n in 1..=max {
                let path = dir.join(format!("grant+{}+{n}{USE_SUFFIX}", grant.grant_id));
                match create_claim(&path, &body(Some(n))) {
                    Ok(()) => return Ok(Some(n)),
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(e),
                }
            }
            Ok(None)
        }
    }
}

/// Claims the one use of the principal's approval of `packet_id` (`uses/approval+<id>.use`,
/// `O_EXCL`, synced): an approval answers one call, so of several processes waiting on one
/// packet (a retried hook, a replayed call) exactly one runs it. `Ok(false)` when it was used.
///
/// # Errors
/// An unsafe id; I/O errors other than a taken use.
pub fn claim_approval(spool: &Spool, packet_id: &str) -> io::Result<bool> {
    if !packet::is_safe_id(packet_id) {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "unsafe packet id"));
    }
    let dir = spool.uses_dir();
    fs::create_dir_all(&dir)?;
    let path = dir.join(format!("approval+{packet_id}{USE_SUFFIX}"));
    let body = serde_json::json!({"type": "warrant_approval_use", "packet_id": packet_id, "at": crate::protocol::clock::now_rfc3339()});
    match create_claim(&path, &body) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e),
    }
}

/// Records, before the call runs, that the gate let the call packet `packet_id` run on its own
/// within its class's `rate_limit` (`uses/gate+<id>.use`, `O_EXCL`, synced with its directory
/// before this returns): the call then counts against the limit for the whole window
/// ([`gate_runs`]), also after its packet expired with the hook's wait and whether or not a
/// receipt ever names it. The same packet judged again (a retried hook) finds its record.
///
/// # Errors
/// An unsafe id; I/O errors other than an existing record (the call must then not run).
pub fn record_gate_run(spool: &Spool, packet_id: &str) -> io::Result<()> {
    if !packet::is_safe_id(packet_id) {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "unsafe packet id"));
    }
    let dir = spool.uses_dir();
    fs::create_dir_all(&dir)?;
    let path = dir.join(format!("gate+{packet_id}{USE_SUFFIX}"));
    let body = serde_json::json!({"type": "warrant_gate_run", "packet_id": packet_id, "at": crate::protocol::clock::now_rfc3339()});
    match create_claim(&path, &body) {
        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => Err(e),
        _ => Ok(()),
    }
}

/// The call packets the gate let run on its own within a rate limit ([`record_gate_run`]), from
/// the names of their records in `uses/` (`+` is in no safe id). A record someone else wrote can
/// only make a count larger.
///
/// # Errors
/// I/O errors reading `uses/` (a missing one is empty): the count is then not known.
pub fn gate_runs(spool: &Spool) -> io::Result<HashSet<String>> {
    let entries = match fs::read_dir(spool.uses_dir()) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(HashSet::new()),
        Err(e) => return Err(e),
    };
    let mut runs = HashSet::new();
    for e in entries {
        let name = e?.file_name();
        let id = name.to_str().and_then(|n| n.strip_prefix("gate+")).and_then(|n| n.strip_suffix(USE_SUFFIX));
        if let Some(id) = id.filter(|id| packet::is_safe_id(id)) {
            runs.insert(id.to_owned());
        }
    }
    Ok(runs)
}

/// Creates `path` with `O_EXCL` (never following a symlink), writes `body`, syncs it and its
/// directory. In a replica of a JetStream store, the claim is first created in the store's uses
/// bucket ([`crate::store::replica::claim`]): `AlreadyExists` when another host made it.
fn create_claim(path: &Path, body: &Value) -> io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut bytes = serde_json::to_vec(body).map_err(io::Error::other)?;
    bytes.push(b'\n');
    // In a replica, the claim is the store's (one use across every host), then this file's
    // (which a follower may have written from the store already).
    #[cfg(feature = "jetstream")]
    let made_in_store = crate::store::replica::claim(path, &bytes)?;
    #[cfg(not(feature = "jetstream"))]
    let made_in_store = false;
    let opened = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path);
    let mut f = match opened {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && made_in_store => return Ok(()),
        other => other?,
    };
    io::Write::write_all(&mut f, &bytes)?;
    f.sync_all()?;
    if let Some(dir) = path.parent() {
        fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

/// The claims in `uses/` ([`claim_grant_use`], [`claim_approval`]): how many uses of each grant
/// are claimed, and which grant each call packet ran on. `+` is in no safe id, so a claim's name
/// says what it claims: `approval+<packet>.use`, `grant+<grant>+<n or packet>.use`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Uses {
    /// Claimed uses by grant id.
    pub by_grant: HashMap<String, u64>,
    /// The grant each call packet ran on, by packet id.
    pub granted: HashMap<String, String>,
}

/// Reads `uses/` ([`Uses`]). `known` keeps what each claim file said (they never change once
/// made) across calls, so a long-lived reader reads each file once. Empty when the directory
/// cannot be read; a file that cannot be read or parsed counts as a use of its grant and names
/// no packet.
#[must_use]
pub fn read_uses(spool: &Spool, known: &mut HashMap<String, Option<String>>) -> Uses {
    let mut uses = Uses::default();
    let Ok(entries) = fs::read_dir(spool.uses_dir()) else { return uses };
    let mut live = HashSet::new();
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(rest) = name.strip_suffix(USE_SUFFIX).and_then(|n| n.strip_prefix("grant+")) else { continue };
        let Some((grant, _)) = rest.split_once('+') else { continue };
        *uses.by_grant.entry(grant.to_owned()).or_insert(0) += 1;
        live.insert(name.to_owned());
        let packet = known.entry(name.to_owned()).or_insert_with(|| {
            let bytes = read_limited(&e.path()).ok()?;
            let v: Value = serde_json::from_slice(&bytes).ok()?;
            v.get("packet_id").and_then(Value::as_str).filter(|p| packet::is_safe_id(p)).map(str::to_owned)
        });
        if let Some(p) = packet {
            uses.granted.insert(p.clone(), grant.to_owned());
        }
    }
    known.retain(|n, _| live.contains(n.as_str()));
    uses
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
    policies: &crate::protocol::graduation::PolicySet,
    view: &ChainView,
    input: &mut ControlInput,
) -> Result<(), DecideError> {
    use crate::protocol::control::ControlKind;
    match input.kind {
        ControlKind::TrustSet => {
            let now = crate::protocol::clock::unix_seconds(&input.decided_at).unwrap_or(0.0);
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
            input.fields = elevation_fields(&snap, view, policies, &input.subject, ring, ttl, &input.decided_at)
                .map_err(|e| DecideError::Refused(format!("elevation denied: {e}")))?;
        }
        ControlKind::Quarantine | ControlKind::Release => {}
    }
    Ok(())
}

/// Runs the kill switch on `agent` (agent-hypervisor.md §2.11): its termination callback writes
/// the stop signal `signals/<agent>.json` (atomically; the agent is expected to watch it), its
/// pending packets are the in-flight steps (compensated: warrant has no substitute agents), and
/// the result, recorded whatever the callback did, is returned as the control's `kill` field.
/// `terminated` is false when the signal could not be written within the callback timeout.
#[must_use]
fn kill_agent(spool: &Spool, snap: &Snapshot, view: &ChainView, input: &ControlInput) -> Map<String, Value> {
    use crate::protocol::rings::kill::{InFlightStep, KillReason, KillSwitch};
    let agent = input.subject.clone();
    let now = crate::protocol::clock::unix_seconds(&input.decided_at).unwrap_or(0.0);
    let steps: Vec<InFlightStep> = snap
        .packets
        .iter()
        .filter(|e| e.packet.agent == agent && !view.decisions.contains_key(&e.packet.id))
        .map(|e| InFlightStep { step_id: e.packet.id.clone(), saga_id: String::new() })
        .collect();
    let signal = serde_json::json!({
        "type": "warrant_stop", "agent": agent, "reason": input.reason, "at": input.decided_at,
    });
    let dir = spool.signals_dir();
    let path = dir.join(format!("{agent}.json"));
    let safe = packet::is_safe_id(&agent) && spool.check_private().is_ok();
    let mut switch = KillSwitch::default();
    switch.register_agent(
        &agent,
        Some(Box::new(move || {
            // Never write through an unsafe name or into a spool others can write to.
            if !safe {
                return Err("unsafe agent id or spool".to_owned());
            }
            fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
            let mut bytes = serde_json::to_vec_pretty(&signal).map_err(|e| e.to_string())?;
            bytes.push(b'\n');
            write_atomic(&path, &bytes, 0o644).map_err(|e| e.to_string())
        })),
    );
    let details = input.reason.clone().unwrap_or_default();
    let result = switch.kill(&agent, "spool", KillReason::Manual, &steps, &details, now);
    let mut kill = serde_json::to_value(&result).unwrap_or(Value::Null);
    // Records carry no floats (the producer profile): the time is the control's own RFC 3339.
    kill["timestamp"] = Value::String(input.decided_at.clone());
    let mut fields = Map::new();
    fields.insert("kill".into(), kill);
    fields
}

/// Checks an elevation the principal asks for against the Agent Hypervisor's rules
/// (agent-hypervisor.md §2.7) and returns the control's fields (`ring`, `ttl_seconds`,
/// `expires_at`, `original_ring`, `trust_score`). The agent's current ring and score come from
/// its packets (see [`crate::monitor`]); the principal's signature is the sponsorship a Ring 1
/// elevation needs.
///
/// # Errors
/// A sentence naming the denial (`invalid_target`, `ring_0_forbidden`, `duplicate_elevation`,
/// `insufficient_trust`), or an agent that is quarantined or killed.
pub fn elevation_fields(
    snap: &Snapshot,
    view: &ChainView,
    policies: &crate::protocol::graduation::PolicySet,
    agent: &str,
    ring: u8,
    ttl_seconds: i64,
    decided_at: &str,
) -> Result<Map<String, Value>, String> {
    use crate::protocol::rings::Ring;
    use crate::protocol::rings::elevation::{ElevationManager, ElevationRequest};
    let now = crate::protocol::clock::unix_seconds(decided_at).unwrap_or(0.0);
    let ctx = crate::protocol::verdict::VerdictContext { policies, controls: &view.controls, now };
    let standing = view.controls.standing(agent);
    if standing != crate::protocol::graduation::gate::AgentStanding::Active {
        return Err(format!("{agent} is {}: release it before elevating it", standing.as_str()));
    }
    if view.controls.active_elevation(agent, now).is_some() {
        return Err(format!("duplicate_elevation: {agent} already has an active elevation"));
    }
    let mon = crate::monitor::observe(&ctx, &snap.packets, &snap.receipts, &view.decisions);
    let eff = mon.agents.get(agent).map_or(0.0, |a| a.eff_score);
    let (current, _) = crate::protocol::verdict::agent_ring(&ctx, agent, eff, false);
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
                .map_or_else(|_| String::new(), crate::protocol::clock::format_rfc3339)
        ),
    );
    fields.insert("trust_score".into(), serde_json::json!(format!("{eff:.4}")));
    Ok(fields)
}

/// The preconditions to record when approving `packet` (lodestar-and-tiers.md §A3), observed
/// by `observer` ([`crate::preconditions::Observer::record`]): `None` when the packet has no
/// contract or nothing to re-check.
///
/// # Errors
/// [`DecideError::PreconditionFailed`] when one does not hold or cannot be observed;
/// [`DecideError::InvalidContract`] for a malformed contract.
pub fn record_preconditions(
    observer: &crate::preconditions::Observer,
    packet: &Packet,
) -> Result<Option<Value>, DecideError> {
    let Some(g) = crate::protocol::verdict::Governance::of_packet(packet) else { return Ok(None) };
    match &g.contract {
        None => Ok(None),
        Some(Err(reason)) => Err(DecideError::InvalidContract { id: packet.id.clone(), reason: reason.clone() }),
        Some(Ok(c)) => observer.record(&c.preconditions).map_err(DecideError::PreconditionFailed),
    }
}

/// The audit entries ([`crate::audit::entry_of_record`]) of every record of `spool`'s chain that
/// passed every check, in chain order, with the verification report (checked as
/// [`verify_chain`] checks, the principal's checkpoint included). A record that failed a check
/// has no entry; the caller says so from the report.
///
/// # Errors
/// As [`verify_chain`].
pub fn audit_chain(
    spool: &Spool,
    pinned: &PinnedKeys,
) -> Result<(chain::VerifyReport, Vec<crate::audit::AuditEntry>), ChainError> {
    let progress = std::sync::atomic::AtomicU64::new(0);
    let opts = VerifyOptions { pinned: Some(pinned), strict_signatures: true };
    let mut entries = Vec::new();
    let keep = ["tg_receipt", "warrant_grant", "approval", "reason"];
    let tail = chain_file::verify_tail_with(
        &spool.chain_path(),
        &chain::Verified::default(),
        opts,
        &keep,
        &progress,
        |i, rec| {
            entries.push(crate::audit::entry_of_record(i, rec));
        },
    )?;
    let mut report = tail.map(|t| t.report).unwrap_or_default();
    let (checkpoint, _) = crate::store::checkpoint_files::latest(spool, pinned);
    if let Some(f) = checkpoint.and_then(|cp| crate::store::checkpoint_files::check(&spool.chain_path(), &cp, &report))
    {
        report.findings.push(f);
    }
    let bad: std::collections::HashSet<u64> =
        report.findings.iter().filter_map(|f| f.index).map(|i| i as u64 + 1).collect();
    entries.retain(|e| e.record.is_some_and(|r| !bad.contains(&r)));
    Ok((report, entries))
}
