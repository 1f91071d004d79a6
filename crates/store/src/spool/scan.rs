//! Scanning a spool's `packets/` and `receipts/`: the incremental [`Scanner`] and the [`Snapshot`] it finds.

use super::{Spool, Uses, agent_of_name, read_limited_meta, read_uses};
use crate::prelude::*;
use std::collections::{HashMap, HashSet};
use std::fs;
use std::io;
use std::os::unix::fs::{DirEntryExt, MetadataExt};
use std::path::Path;
use std::sync::Arc;
use std::time::SystemTime;
use warrant_protocol::packet::{self, InvalidReason, Packet, Receipt};

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
        self.packet.created_unix().map_or(self.arrived, |c| c.min(self.arrived))
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
        .map_or_else(|| format!("uid {uid}"), |n| format!("{} (uid {uid})", warrant_protocol::text::inert(&n, 40)))
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

#[derive(Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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
    /// `warrant_engine::monitor::ByPacket`).
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
    gateways: Option<Arc<warrant_protocol::keys::GatewayKeys>>,
    /// Packets are kept without their bodies ([`Scanner::headers_only`]).
    headers_only: bool,
    /// A scan found a file added, changed or removed since the scanner was made or loaded
    /// ([`Scanner::save_listing`] writes only then).
    listing_changed: bool,
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
fn look(cache: &mut FileCache, kind: FileKind, name: &str, path: &Path, how: Reading<'_>) -> Option<(Arc<str>, Look)> {
    let probed = probe(cache, kind, name, path, how)?;
    Some(apply(cache, name, probed))
}

/// A packet file as a listing keeps it between runs ([`Scanner::save_listing`]).
#[derive(serde::Serialize, serde::Deserialize)]
struct ListedFile {
    name: String,
    stamp: Stamp,
    packet: Result<warrant_protocol::packet::PacketHeaders, InvalidReason>,
}

/// The most bytes a listing cache may have to be read (256 MiB): a larger one is not used.
const MAX_LISTING_BYTES: u64 = 256 << 20;

/// How a scan reads the files it parses: the gateway keys receipts are checked against, and
/// whether packets keep their bodies ([`Scanner::headers_only`]).
#[derive(Clone, Copy)]
struct Reading<'a> {
    gateways: Option<&'a warrant_protocol::keys::GatewayKeys>,
    bodies: bool,
}

/// A packet without its bodies, for a listing: `raw`, `proposed_action`, `context` and
/// `evidence` become `null` (and with `raw`, the `governance` object read from it on first use).
/// Every other field, `content_hash` among them, is the packet's as parsed.
fn drop_bodies(p: &mut Packet) {
    // The bodies are read from `raw` ([`Packet::proposed_action`]): nulled with it.
    p.raw = serde_json::Value::Null;
}

/// What [`probe`] found of a file: its stamp, and the file parsed when the cache does not hold
/// it with that stamp.
type Probe = (Stamp, Option<Parsed>);

/// The read-only half of [`look`] (the cache is only read, so many files can be probed at once):
/// `None` when the file cannot be `lstat`ed.
fn probe(cache: &FileCache, kind: FileKind, name: &str, path: &Path, how: Reading<'_>) -> Option<Probe> {
    let stamp_of = |meta: &fs::Metadata| Stamp {
        len: meta.len(),
        mtime_ns: mtime_ns(meta),
        ctime: (meta.ctime(), meta.ctime_nsec()),
        ino: meta.ino(),
        uid: meta.uid(),
    };
    if let Some((cached, _, _)) = cache.get(name) {
        let stamp = stamp_of(&fs::symlink_metadata(path).ok()?);
        if *cached == stamp {
            return Some((stamp, None));
        }
    }
    // New or changed: opened and read first, its stamp the file's that was read (`fstat`), with
    // no `lstat` before (a scan of 10,000 new packets makes 20,000 fewer path lookups). A file
    // that could not be read is stamped by its `lstat`; one that cannot be `lstat`ed is gone.
    match read_limited_meta(path) {
        Ok((bytes, meta)) => Some((stamp_of(&meta), Some(parse_file(kind, name, Ok(bytes), how)))),
        Err(reason) => {
            let stamp = stamp_of(&fs::symlink_metadata(path).ok()?);
            Some((stamp, Some(parse_file(kind, name, Err(reason), how))))
        }
    }
}

/// The file `name` of `kind`, as read (at most the size limit), parsed.
fn parse_file(kind: FileKind, name: &str, read: Result<Vec<u8>, InvalidReason>, how: Reading<'_>) -> Parsed {
    let stem = name.strip_suffix(".json").unwrap_or(name);
    match read {
        Err(reason) => Parsed::Invalid(reason),
        Ok(bytes) => match kind {
            FileKind::Packet => match packet::parse_packet(&bytes, stem) {
                // A replica's packet named by its subject's agent must be that agent's
                // (`crate::replica`: the server authenticated the publisher).
                Ok(p) if agent_of_name(stem).is_some_and(|a| a != p.agent) => {
                    Parsed::Invalid(InvalidReason::Schema(format!(
                        "published on agent {:?}'s subject, but names agent {:?}",
                        agent_of_name(stem).unwrap_or_default(),
                        p.agent
                    )))
                }
                Ok(mut p) => {
                    if !how.bodies {
                        drop_bodies(&mut p);
                    }
                    Parsed::Packet(Arc::new(p))
                }
                Err(r) => Parsed::Invalid(r),
            },
            FileKind::Receipt => match packet::parse_receipt(&bytes) {
                Ok(mut r) => {
                    // Checked once per file version: the scanner's gateway keys never change.
                    r.observed_by = how.gateways.and_then(|g| {
                        warrant_protocol::graduation::receipt::gateway_signer(&r.raw, g)
                            .ok()
                            .map(|pin| pin.principal.clone())
                    });
                    Parsed::Receipt(Arc::new(r))
                }
                Err(r) => Parsed::Invalid(r),
            },
        },
    }
}

/// The writing half of [`look`]: records what [`probe`] found of `name` in the cache.
fn apply(cache: &mut FileCache, name: &str, (stamp, parsed): Probe) -> (Arc<str>, Look) {
    let cached = cache.get_key_value(name).map(|(key, _)| Arc::clone(key));
    let Some(parsed) = parsed else {
        // Probed as the cache holds it.
        return (cached.unwrap_or_else(|| Arc::from(name)), Look::Same);
    };
    let (key, change) = match cached {
        Some(key) => (key, Look::Changed),
        None => (Arc::from(name), Look::New),
    };
    let arrived = stamp.ctime.0 as f64 + stamp.ctime.1 as f64 / 1e9;
    cache.insert(Arc::clone(&key), (stamp, arrived, parsed));
    (key, change)
}

/// Probes `todo` (kind, name, path), on every core when there are many: [`probe`] of each, in order.
/// The threads (the caller's among them) take the files in blocks of [`PROBE_BLOCK`] as they
/// go, so a thread the scheduler holds back does not leave half the files waiting for it.
fn probe_all(
    cache: &FileCache,
    todo: &[(FileKind, String, std::path::PathBuf)],
    how: Reading<'_>,
) -> Vec<Option<Probe>> {
    let one = |(kind, name, path): &(FileKind, String, std::path::PathBuf)| probe(cache, *kind, name, path, how);
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get).min(8);
    if todo.len() < PARALLEL_PROBES || cores < 2 {
        return todo.iter().map(one).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let work = || {
        let mut done: Vec<(usize, Option<Probe>)> = Vec::new();
        loop {
            let start = next.fetch_add(PROBE_BLOCK, std::sync::atomic::Ordering::Relaxed);
            if start >= todo.len() {
                return done;
            }
            let end = (start + PROBE_BLOCK).min(todo.len());
            done.extend((start..end).map(|i| (i, one(&todo[i]))));
        }
    };
    let parts = std::thread::scope(|s| {
        let helpers: Vec<_> = (1..cores).map(|_| s.spawn(work)).collect();
        let mut parts = vec![work()];
        parts.extend(helpers.into_iter().map(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))));
        parts
    });
    let mut probes: Vec<Option<Probe>> = std::iter::repeat_with(|| None).take(todo.len()).collect();
    for (i, probed) in parts.into_iter().flatten() {
        probes[i] = probed;
    }
    probes
}

/// Files a scanning thread takes at a time ([`probe_all`]).
const PROBE_BLOCK: usize = 64;

/// From this many files to read, a full scan reads and parses them on every core.
const PARALLEL_PROBES: usize = 512;

/// A file name a scan considers: temporary and hidden files are work in progress, not
/// publications.
pub(crate) fn is_publication(name: &str) -> bool {
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
    /// signature verifies under one of them is marked [`warrant_protocol::packet::Receipt::observed_by`]
    /// (an observed outcome, evidence for the gate); every other receipt stays the agent's own
    /// word. Give it before the first scan (receipts already read are not checked again).
    #[must_use]
    pub fn with_gateway_keys(mut self, gateways: warrant_protocol::keys::GatewayKeys) -> Self {
        self.gateways = (!gateways.is_empty()).then(|| Arc::new(gateways));
        self
    }

    /// This scanner, keeping each packet without its bodies: `raw`, `proposed_action`,
    /// `context` and `evidence` are `null` in every packet it parses (the id, agent, class,
    /// summary, state, times and `content_hash` are kept). For a listing that shows only those
    /// (`warrant list`): 10,000 packets then take a few megabytes instead of tens, and the
    /// memory a packet's parse used is reused by the next. Nothing that judges, shows or signs
    /// a packet may use such a scan.
    #[must_use]
    pub fn headers_only(mut self) -> Self {
        self.headers_only = true;
        self
    }

    /// Loads into this [`Scanner::headers_only`] scanner the packet files a listing kept at
    /// `path` ([`Scanner::save_listing`]: each file's name, its stamp, and its headers or why it
    /// is invalid), so the next scan parses only files whose stamp differs: the size, the
    /// modification time, the inode, the owner and the change time, which no one can set (any
    /// write or rename moves it), so a file rewritten since is read again. A cache that cannot
    /// be read, or a scanner that keeps bodies, loads nothing. The cache is the principal's
    /// (`checkpoint_files::listing_cache`, mode 0600 in the config directory), never a
    /// file an agent can write.
    pub fn load_listing(&mut self, path: &Path) {
        if !self.headers_only {
            return;
        }
        let Ok(bytes) = crate::checkpoint_files::read_regular(path, MAX_LISTING_BYTES) else { return };
        let Ok(files) = serde_json::from_slice::<Vec<ListedFile>>(&bytes) else { return };
        let cache = &mut self.cache[FileKind::Packet as usize];
        for f in files {
            let parsed = match f.packet {
                Ok(h) => Parsed::Packet(Arc::new(Packet::from_headers(h))),
                Err(reason) => Parsed::Invalid(reason),
            };
            let arrived = f.stamp.ctime.0 as f64 + f.stamp.ctime.1 as f64 / 1e9;
            cache.insert(Arc::from(f.name), (f.stamp, arrived, parsed));
        }
    }

    /// Writes this scanner's packet files to `path` for the next listing
    /// ([`Scanner::load_listing`]) when a scan since it was made or loaded found a change,
    /// atomically, mode 0600. A scanner that keeps bodies writes nothing.
    ///
    /// # Errors
    /// I/O errors.
    pub fn save_listing(&self, path: &Path) -> io::Result<()> {
        if !self.headers_only || !self.listing_changed {
            return Ok(());
        }
        let files: Vec<ListedFile> = self.cache[FileKind::Packet as usize]
            .iter()
            .filter_map(|(name, (stamp, _, parsed))| {
                let packet = match parsed {
                    Parsed::Packet(p) => Ok(p.headers()),
                    Parsed::Invalid(r) => Err(r.clone()),
                    Parsed::Receipt(_) => return None,
                };
                Some(ListedFile { name: name.to_string(), stamp: *stamp, packet })
            })
            .collect();
        let bytes = serde_json::to_vec(&files).map_err(io::Error::other)?;
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir)?;
        }
        crate::atomic::replace_unsynced(path, &bytes, 0o600)
    }

    /// A scanner checking receipts against the gateway keys pinned in `config_dir`
    /// ([`warrant_protocol::keys::GatewayKeys::load`]); when they cannot be read, against none (no receipt
    /// is then an observed outcome: fail closed).
    #[must_use]
    pub fn for_config(config_dir: &Path) -> Self {
        match warrant_protocol::keys::GatewayKeys::load(config_dir) {
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
        self.listing_changed |= listing.changed();
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
    /// call, `warrant_engine::govern`), without the cost of parsing every file.
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
            if keep
                && let Some((key, _)) = look(
                    cache,
                    FileKind::Packet,
                    name,
                    &dir.join(name),
                    Reading { gateways: None, bodies: !self.headers_only },
                )
            {
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
        let reading = Reading { gateways: self.gateways.as_deref(), bodies: !self.headers_only };
        for (kind, dir) in [(FileKind::Packet, spool.packets_dir()), (FileKind::Receipt, spool.receipts_dir())] {
            let entries = match fs::read_dir(&dir) {
                Ok(e) => e,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            let cache = &mut self.cache[kind as usize];
            // In listing order: a name taken from the cache as it is, or the index of a file to
            // probe (all probed at once, on every core when there are many: `probe_all`).
            let mut order: Vec<Result<Arc<str>, usize>> = Vec::new();
            let mut todo: Vec<(FileKind, String, std::path::PathBuf)> = Vec::new();
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
                    order.push(Ok(Arc::clone(key)));
                    continue;
                }
                order.push(Err(todo.len()));
                todo.push((kind, name.into_owned(), entry.path()));
            }
            let mut probes = probe_all(cache, &todo, reading);
            for slot in order {
                let i = match slot {
                    Ok(key) => {
                        seen.push((kind, key));
                        continue;
                    }
                    Err(i) => i,
                };
                // A file that cannot be `lstat`ed is gone: dropped from the cache below.
                let Some(probed) = probes[i].take() else { continue };
                let (key, change) = apply(cache, &todo[i].1, probed);
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
        let reading = Reading { gateways: self.gateways.as_deref(), bodies: !self.headers_only };
        for name in std::mem::take(&mut self.recheck) {
            if !is_publication(&name) {
                continue;
            }
            for (kind, dir) in [(FileKind::Packet, spool.packets_dir()), (FileKind::Receipt, spool.receipts_dir())] {
                let cache = &mut self.cache[kind as usize];
                match look(cache, kind, &name, &dir.join(&name), reading) {
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
