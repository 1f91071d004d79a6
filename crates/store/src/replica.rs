//! A JetStream spool worked on through a *replica*: a directory spool on this host that the
//! store keeps equal to the streams (`docs/distributed.md`, "Replicas").
//!
//! ```text
//! <replica>/.store                 the store URL it replicates (a replica is never anything else)
//! <replica>/chain.jsonl            the chain stream's records, byte for byte, in order
//! <replica>/packets/<id>.json      packets whose subject's agent is the packet's agent
//! <replica>/packets/~AGENT@SEQ.json  any other packet message (listed as invalid with the reason)
//! <replica>/receipts/~AGENT@SEQ.json receipts
//! <replica>/decisions/<id>.json    decision files, also written to the decisions bucket
//! <replica>/published/<id>         a decision file the bucket holds
//! <replica>/rebuilt/<id>           a decision file rebuilt from the chain, for a host with the
//!                                  principal's key to write to the bucket (`publish_rebuilt`)
//! <replica>/uses/<claim>.use       the uses bucket's claims (one use across every host)
//! <replica>/.pulled                the spool stream's next sequence
//! <replica>/.pulled-uses           the uses bucket's next sequence
//! ```
//!
//! Every surface works on the replica as on a directory spool: the scanner, the console's
//! inotify watch, the decide path with its checkpoints and fold, the audit. What others must see
//! goes to JetStream first:
//! - **the chain**: every append to a replica's `chain.jsonl` ([`crate::chain_file`]'s
//!   one append path) first catches the replica up with the chain stream under the chain's lock,
//!   then builds its records on that head and publishes them with compare-and-set
//!   ([`crate::ChainLog::append_after`]); only what the store acknowledged is written to
//!   the file. A refusal (another principal's host appended first) writes nothing and is
//!   reported; the replica never holds a record the store does not.
//! - **decisions**: a decision file written into a replica is also written to the decisions
//!   bucket under `AGENT.PACKET_ID` ([`Upstream::publish_decision`]), where `propose --wait`
//!   reads it.
//! - **packets and receipts** published into a replica (the hooks' and the gateway's governor,
//!   on an agent's host) go to the spool stream on their agent's subject first
//!   ([`Upstream::publish`]).
//! - **claims** (`uses/`: an approval's one use, a grant's uses, the gate's rate-limited runs)
//!   are created in the store's uses bucket first ([`Upstream::claim`]), so a use is taken once
//!   across every host.
//!
//! Reads come from the replica after [`pull`] (the CLI pulls before each command) or while a
//! [`Follower`] keeps it live (the console): packets and receipts from the spool stream, the
//! chain from the chain stream, both with ordered push consumers (no polling).
//!
//! Nothing fails open: a store that cannot be reached, a record that does not link, a replica
//! that holds another chain or names another store is an error, never an empty spool.

use crate::StoreError;
use crate::atomic::write_atomic;
use crate::jetstream::{ConnectOptions, JetStreamSpool, Kind, SpoolMessage, StoreUrl};
use crate::spool::{Spool, sequence_name};
use crate::upstream::Upstream;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use warrant_protocol::packet::{self, InvalidReason};

/// The file in a replica's root naming the store it replicates (`nats://…/NAME` and a newline),
/// read once when the spool is opened ([`Spool::open`]).
pub const MARKER: &str = crate::spool::REPLICA_MARKER;

/// The file holding the spool stream's next sequence to read.
const PULLED: &str = ".pulled";

/// The file holding the uses bucket's next sequence to read.
const PULLED_USES: &str = ".pulled-uses";

/// The directory of markers of decisions the bucket holds.
const PUBLISHED: &str = "published";
/// Decision files rebuilt from the chain whose place in the bucket no principal's host has
/// confirmed yet ([`publish_rebuilt`]).
const REBUILT: &str = "rebuilt";

/// The store a replica at `root` replicates, or `None` when `root` is not a replica (no
/// [`MARKER`]).
///
/// # Errors
/// A marker that is not a regular file, cannot be read, or does not hold a store URL.
pub fn store_of(root: &Path) -> Result<Option<StoreUrl>, StoreError> {
    let path = root.join(MARKER);
    match fs::symlink_metadata(&path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(StoreError::Other(format!("{}: {e}", path.display()))),
        Ok(_) => {}
    }
    let bytes = crate::spool::read_limited(&path)
        .map_err(|e: InvalidReason| StoreError::Other(format!("{}: {e}", path.display())))?;
    let text = std::str::from_utf8(&bytes).map_err(|e| StoreError::Other(format!("{}: {e}", path.display())))?;
    text.trim()
        .parse::<StoreUrl>()
        .map(Some)
        .map_err(|e| StoreError::Other(format!("{}: not a store URL: {e}", path.display())))
}

/// A connection to the store `url` names, with [`ConnectOptions::from_env`], checked to exist:
/// what a replica's [`Spool`] holds ([`Spool::with_upstream`]).
///
/// # Errors
/// The environment's connection options; the connection's errors; a store that does not exist.
pub fn connect(url: &StoreUrl) -> Result<Arc<JetStreamSpool>, StoreError> {
    let opts = ConnectOptions::from_env().map_err(|e| StoreError::Other(e.to_string()))?;
    let remote = off_runtime(|| JetStreamSpool::connect(url, &opts))?;
    remote_check(&remote)?;
    Ok(Arc::new(remote))
}

fn remote_check(remote: &JetStreamSpool) -> Result<(), StoreError> {
    off_runtime(|| remote.check_exists()).map_err(StoreError::from)
}

/// Runs `f`, which blocks on a [`JetStreamSpool`]'s own runtime, on a thread of its own when
/// called from inside an async runtime (the console's), where blocking on another runtime is
/// refused.
pub(crate) fn off_runtime<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    if tokio::runtime::Handle::try_current().is_err() {
        return f();
    }
    std::thread::scope(|s| match s.spawn(f).join() {
        Ok(r) => r,
        Err(panic) => std::panic::resume_unwind(panic),
    })
}

/// The default replica directory of `url`: `<data dir>/warrant/replicas/NAME`.
#[must_use]
pub fn default_dir(url: &StoreUrl) -> Option<PathBuf> {
    directories::BaseDirs::new().map(|d| d.data_dir().join("warrant").join("replicas").join(&url.name))
}

/// Opens (creating on first use) the replica of `url` at `dir` and [`pull`]s it.
///
/// # Errors
/// A `dir` that is a directory spool (a chain without a marker) or the replica of another
/// store; the store's errors (it must exist: `warrant migrate` or the setup creates it).
pub fn open(url: &StoreUrl, dir: &Path) -> Result<(Spool, Pulled), StoreError> {
    let directory = Spool::new(dir);
    match store_of(dir)? {
        // A spool is its name: the same spool reached through other servers of its cluster is
        // the same store (the catch-up checks that the chains agree). The marker keeps the
        // servers named last, which the replica's writes use.
        Some(other) if other.name != url.name || other.tls != url.tls => {
            return Err(StoreError::Other(format!(
                "{} is the replica of {other}, not of {url}: name another directory with --replica",
                dir.display()
            )));
        }
        Some(other) => {
            if other.to_string() != url.to_string() {
                let mut line = url.to_string().into_bytes();
                line.push(b'\n');
                write_atomic(&dir.join(MARKER), &line, 0o644)
                    .map_err(|e| StoreError::Other(format!("{}: {e}", dir.join(MARKER).display())))?;
            }
        }
        None => {
            if directory.chain_path().exists() || directory.packets_dir().exists() {
                return Err(StoreError::Other(format!(
                    "{} is a directory spool, not a replica of {url}: name an empty directory with --replica \
                     (or copy the spool with `warrant migrate`)",
                    dir.display()
                )));
            }
            // The marker first: a second process opening the same new replica meanwhile finds
            // the marker, or an empty directory, never the spool's directories without it.
            let io = |e: io::Error| StoreError::Other(format!("{}: {e}", dir.display()));
            fs::create_dir_all(dir).map_err(io)?;
            let mut line = url.to_string().into_bytes();
            line.push(b'\n');
            write_atomic(&dir.join(MARKER), &line, 0o644).map_err(io)?;
        }
    }
    directory.ensure().map_err(|e| StoreError::Other(format!("{}: {e}", dir.display())))?;
    let spool = directory.with_upstream(connect(url)?);
    let pulled = pull(&spool)?;
    Ok((spool, pulled))
}

/// What a [`pull`] brought.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pulled {
    /// Chain records appended to the replica.
    pub records: u64,
    /// Packet and receipt messages read from the spool stream.
    pub messages: u64,
    /// Decision files written to the bucket that it did not hold yet.
    pub decisions: u64,
}

/// Brings the replica `spool` up to date with its store: the chain's new records (verified to
/// link, [`crate::chain_file::catch_up`]), the spool stream's new packets and receipts
/// ([`materialise`]), and any decision file the bucket does not hold yet.
///
/// # Errors
/// `spool` is not a replica; the store's errors; a record that does not link to the replica's
/// head (the replica holds another chain); I/O errors of the replica.
pub fn pull(spool: &Spool) -> Result<Pulled, StoreError> {
    let remote = spool
        .upstream()
        .ok_or_else(|| StoreError::Other(format!("{} is not a replica of a store", spool.root().display())))?;
    let records = catch_up(spool, &remote)?;
    let messages = pull_spool(spool, &remote)?;
    pull_uses(spool, &remote).map_err(|e| {
        StoreError::Other(format!(
            "{e} (a store set up by an older warrant has no uses bucket: `warrant migrate --from EMPTY_DIR --to {}` adds it)",
            remote.inner().url()
        ))
    })?;
    let decisions = publish_missing(spool, &remote)?;
    Ok(Pulled { records, messages, decisions })
}

/// [`crate::chain_file::catch_up`], then the decision files of the decisions it brought
/// ([`crate::spool::restore_decision_files`]); returns how many records.
fn catch_up(spool: &Spool, remote: &JetStreamSpool) -> Result<u64, StoreError> {
    let caught = crate::chain_file::catch_up(&spool.chain_path(), remote)?;
    if !caught.decisions.is_empty() {
        let _ = crate::spool::restore_decision_files(spool, &caught.decisions);
    }
    Ok(caught.records)
}

/// Writes the uses bucket's new claims into `uses/`.
fn pull_uses(spool: &Spool, remote: &JetStreamSpool) -> Result<(), StoreError> {
    let io = |e: io::Error| StoreError::Other(format!("{}: {e}", spool.uses_dir().display()));
    let from = read_next(spool, PULLED_USES);
    let claims = off_runtime(|| remote.read_uses_from(from))?;
    let Some(last) = claims.last().map(|(seq, ..)| *seq) else { return Ok(()) };
    for (_, name, bytes) in &claims {
        write_claim(spool, name, bytes).map_err(io)?;
    }
    save_next_as(spool, PULLED_USES, last + 1).map_err(io)
}

/// Writes the claim `name` into `uses/` unless it is there (not synced: see [`save_next`]).
fn write_claim(spool: &Spool, name: &str, bytes: &[u8]) -> io::Result<()> {
    if !crate::jetstream::is_claim_name(name) {
        // The store's readers skip such keys already; one here is skipped too, never an error
        // that would stop the follower for good.
        tracing::warn!(name = %warrant_protocol::text::inert(name, 200), "uses bucket: skipped a name that is no claim's");
        return Ok(());
    }
    fs::create_dir_all(spool.uses_dir())?;
    use std::os::unix::fs::OpenOptionsExt as _;
    let opened = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(spool.uses_dir().join(name));
    match opened {
        Ok(mut f) => io::Write::write_all(&mut f, bytes),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

/// In a replica, marks the decision file of `id`, rebuilt from its chain record, as one whose
/// place in the bucket is not confirmed: the principal's host that signed it writes it to the
/// bucket before its file, but may have died between the chain and the bucket. A host with the
/// principal's key writes it there ([`publish_rebuilt`]); an agent's host, whose permissions
/// refuse writing decisions, leaves it.
///
/// # Errors
/// I/O errors.
pub fn mark_rebuilt(spool: &Spool, id: &str) -> io::Result<()> {
    if !spool.is_replica() || spool.root().join(PUBLISHED).join(id).exists() {
        return Ok(());
    }
    let marks = spool.root().join(REBUILT);
    fs::create_dir_all(&marks)?;
    fs::write(marks.join(id), b"")
}

/// Writes every decision file of the replica marked rebuilt ([`mark_rebuilt`]) to the
/// decisions bucket, once (a bucket that already holds the same decision counts as written),
/// and marks it published; returns how many the bucket did not hold. For the principal's hosts:
/// every signed decision in the chain reaches the bucket, and the agent waiting on it, even when
/// the process that signed it was killed between the chain and the bucket.
///
/// # Errors
/// The store's errors (the next call writes what is left); nothing for a directory spool.
pub fn publish_rebuilt(spool: &Spool) -> Result<u64, StoreError> {
    let Some(remote) = spool.upstream() else { return Ok(0) };
    let marks = spool.root().join(REBUILT);
    let Ok(entries) = fs::read_dir(&marks) else { return Ok(0) };
    let mut written = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(id) = name.to_str().filter(|id| packet::is_safe_id(id)) else { continue };
        let held = spool.root().join(PUBLISHED).join(id).exists();
        if !held {
            let bytes = crate::spool::read_limited(&spool.decision_path(id))
                .map_err(|e| StoreError::Other(format!("{}: {e}", spool.decision_path(id).display())))?;
            match put_decision(spool, &remote, id, &bytes) {
                Ok(()) => written += 1,
                Err(Put::Another(message)) => tracing::warn!(%message, "a rebuilt decision not in the store's bucket"),
                Err(Put::Failed(e)) => return Err(e),
            }
        }
        let _ = fs::remove_file(entry.path());
    }
    Ok(written)
}

fn pull_spool(spool: &Spool, remote: &JetStreamSpool) -> Result<u64, StoreError> {
    let io = |e: io::Error| StoreError::Other(format!("{}: {e}", spool.root().display()));
    let from = next_seq(spool);
    let items = off_runtime(|| remote.read_spool_from(from))?;
    let count = items.len() as u64;
    let mut next = from;
    for (kind, msg) in &items {
        materialise(spool, *kind, msg).map_err(io)?;
        next = msg.seq + 1;
    }
    if count > 0 {
        save_next(spool, next).map_err(io)?;
    }
    Ok(count)
}

/// Records that the spool stream was read up to `next` (exclusive), after flushing the files
/// written so far to disk (`syncfs`: the messages are written without a sync each, and the
/// mark must never be durable before them; a lost mark only means reading them again).
fn save_next(spool: &Spool, next: u64) -> io::Result<()> {
    save_next_as(spool, PULLED, next)
}

/// [`save_next`] into the file `name`.
fn save_next_as(spool: &Spool, name: &str, next: u64) -> io::Result<()> {
    let root = fs::File::open(spool.root())?;
    rustix::fs::syncfs(&root)?;
    write_atomic(&spool.root().join(name), format!("{next}\n").as_bytes(), 0o644)
}

/// The spool stream's next sequence to read (1 when the replica has read none).
fn next_seq(spool: &Spool) -> u64 {
    read_next(spool, PULLED)
}

/// The next sequence recorded in the file `name` of the replica (1 when none).
fn read_next(spool: &Spool, name: &str) -> u64 {
    fs::read_to_string(spool.root().join(name)).ok().and_then(|s| s.trim().parse().ok()).unwrap_or(1)
}

/// Writes one spool message into the replica, never replacing a file. A packet whose agent is
/// the agent its subject names (the server authenticated the publisher: `docs/distributed.md`,
/// "Server permissions") is written as `packets/<id>.json`; any other packet message, and every
/// receipt, as [`sequence_name`] (the scanner lists a packet there whose agent differs from the
/// name's as invalid, and a repeated id as a duplicate). A message already written is skipped.
/// Returns the file.
///
/// # Errors
/// I/O errors of the replica.
pub fn materialise(spool: &Spool, kind: Kind, msg: &SpoolMessage) -> io::Result<PathBuf> {
    materialise_new(spool, kind, msg).map(|(path, _)| path)
}

/// [`materialise`], also saying whether the file was written now (`false`: it was there).
///
/// # Errors
/// As [`materialise`].
pub fn materialise_new(spool: &Spool, kind: Kind, msg: &SpoolMessage) -> io::Result<(PathBuf, bool)> {
    let by_seq = sequence_name(&msg.agent, msg.seq);
    let (dir, names) = match kind {
        Kind::Receipts => (spool.receipts_dir(), vec![by_seq]),
        Kind::Packets => {
            let by_id = packet::parse_packet(&msg.bytes, by_seq.trim_end_matches(".json"))
                .ok()
                .filter(|p| p.agent == msg.agent)
                .map(|p| format!("{}.json", p.id));
            (spool.packets_dir(), by_id.into_iter().chain([by_seq]).collect())
        }
    };
    fs::create_dir_all(&dir)?;
    for name in names {
        let path = dir.join(&name);
        match fs::read(&path) {
            Ok(existing) if existing == msg.bytes => return Ok((path, false)),
            Ok(_) => continue,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        // Not synced here: [`save_next`] flushes the replica before it marks messages read.
        let mut tmp = tempfile::Builder::new().prefix(".warrant.").suffix(".tmp").tempfile_in(&dir)?;
        io::Write::write_all(&mut tmp, &msg.bytes)?;
        use std::os::unix::fs::PermissionsExt as _;
        tmp.as_file().set_permissions(fs::Permissions::from_mode(0o644))?;
        // A rename that never replaces (`RENAME_NOREPLACE`), as agents publish: the console's
        // watcher reads a rename as a new file, where a link would make it look at every file.
        let tmp = tmp.into_temp_path();
        let cwd = rustix::fs::CWD;
        match rustix::fs::renameat_with(cwd, &*tmp, cwd, &path, rustix::fs::RenameFlags::NOREPLACE) {
            Ok(()) => {
                // Renamed away: nothing left for the temporary path to remove.
                let _ = tmp.keep();
                return Ok((path, true));
            }
            // Another process wrote the name meanwhile: the same message (a concurrent pull of
            // the same replica) is written; another keeps the name and this one tries the next.
            Err(rustix::io::Errno::EXIST) => match fs::read(&path) {
                Ok(existing) if existing == msg.bytes => return Ok((path, false)),
                _ => continue,
            },
            Err(e) => return Err(e.into()),
        }
    }
    Err(io::Error::other(format!("message {} could not be written to {}", msg.seq, dir.display())))
}

/// The JetStream store as a replica's directory code calls it ([`crate::upstream`]): the chain's
/// catch-up and compare-and-set append ([`crate::chain_file`]), packets and receipts on their
/// agent's subject, claims in the uses bucket, decision files in the decisions bucket, signals.
/// The coercion to `dyn Upstream` happens only where a replica is opened ([`open`],
/// [`Spool::open`]).
impl Upstream for JetStreamSpool {
    fn location(&self) -> String {
        self.inner().url().to_string()
    }

    fn catch_up_locked(&self, path: &Path, file: &mut fs::File) -> Result<(), crate::chain_file::ChainError> {
        crate::chain_file::catch_up_locked(path, file, self).map(drop)
    }

    fn push(
        &self,
        path: &Path,
        built_on: &warrant_protocol::chain::ChainHead,
        appended: &[warrant_protocol::chain::Appended],
    ) -> Result<(), crate::chain_file::ChainError> {
        crate::chain_file::push_to_store(path, self, built_on, appended)
    }

    /// The claim `<replica>/uses/<name>` is made in the uses bucket (the file is then this
    /// process's claim, even if a follower wrote it first).
    fn claim(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        let name =
            path.file_name().and_then(|n| n.to_str()).ok_or_else(|| io::Error::other("a claim's name is not UTF-8"))?;
        match off_runtime(|| self.claim_use(name, bytes)) {
            Ok(true) => Ok(()),
            Ok(false) => Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{name} is claimed in {}", self.inner().url()),
            )),
            Err(e) => Err(io::Error::other(format!("{}: {e}", self.inner().url()))),
        }
    }

    /// Published on the agent's subject (`agent`, `requested_by` or `requestedBy`), then written
    /// into the replica as [`materialise`] does. With `new`, a packet whose id the replica holds,
    /// or whose content the store holds already (a retried publication), is `AlreadyExists`
    /// (written into the replica first, so the caller finds it).
    fn publish(&self, spool: &Spool, dir: &Path, id: &str, doc: &serde_json::Value, new: bool) -> io::Result<PathBuf> {
        let kind = if dir == spool.packets_dir() {
            Kind::Packets
        } else if dir == spool.receipts_dir() {
            Kind::Receipts
        } else {
            return Err(io::Error::other(format!(
                "{}: only packets and receipts are published to a store",
                dir.display()
            )));
        };
        let agent = ["agent", "requested_by", "requestedBy"]
            .iter()
            .find_map(|k| doc.get(*k).and_then(serde_json::Value::as_str))
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, format!("{id} names no agent")))?;
        let exists = || io::Error::new(io::ErrorKind::AlreadyExists, format!("{id} was published before"));
        if new && kind == Kind::Packets && dir.join(format!("{id}.json")).exists() {
            return Err(exists());
        }
        let bytes = crate::spool::spool_json(doc)?;
        let hash = warrant_protocol::canonical::canonical_hash(doc);
        let ack = off_runtime(|| match kind {
            Kind::Packets => self.publish_packet(agent, &bytes, &hash),
            Kind::Receipts => self.publish_receipt(agent, &bytes, &hash),
        })
        .map_err(|e| io::Error::other(format!("{}: {e}", self.inner().url())))?;
        let msg = SpoolMessage { seq: ack.seq, agent: agent.to_owned(), msg_id: Some(hash), bytes };
        let path = materialise(spool, kind, &msg)?;
        if new && ack.duplicate {
            return Err(exists());
        }
        Ok(path)
    }

    /// Written under `AGENT.ID` (the agent of its signed document), once, and marked in
    /// `published/`. A bucket that holds the same decision under the key already counts as
    /// written (another of the principal's hosts wrote it: the key is written once); one holding
    /// *another* decision (which agents waiting on the packet read instead, and which the bucket
    /// will never replace) is an error, as is an agent or id the bucket cannot key
    /// (`[A-Za-z0-9_-]+`). On the store's other errors the next pull writes it.
    fn publish_decision(&self, spool: &Spool, id: &str, bytes: &[u8]) -> Result<(), StoreError> {
        put_decision(spool, self, id, bytes).map_err(|e| match e {
            Put::Another(message) => StoreError::Other(message),
            Put::Failed(e) => StoreError::Other(format!("{e}; the next pull writes it there")),
        })
    }

    /// [`JetStreamSpool::put_signal`].
    fn publish_signal(&self, agent: &str, bytes: &[u8]) -> Result<(), StoreError> {
        off_runtime(|| self.put_signal(agent, bytes)).map(|_| ()).map_err(StoreError::from)
    }

    fn into_any(self: Arc<Self>) -> Arc<dyn std::any::Any + Send + Sync> {
        self
    }
}

/// Why [`put_decision`] did not write a decision file to the bucket.
enum Put {
    /// The bucket holds another decision under its key: it never will hold this one.
    Another(String),
    /// Any other error: a later write may succeed.
    Failed(StoreError),
}

impl From<StoreError> for Put {
    fn from(e: StoreError) -> Self {
        Put::Failed(e)
    }
}

fn put_decision(spool: &Spool, remote: &JetStreamSpool, id: &str, bytes: &[u8]) -> Result<(), Put> {
    let doc: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| StoreError::Other(format!("decision file {id}: {e}")))?;
    let agent = doc
        .pointer("/document/agent")
        .and_then(serde_json::Value::as_str)
        .ok_or_else(|| StoreError::Other(format!("decision file {id} names no agent")))?;
    match off_runtime(|| remote.put_decision(agent, id, bytes)) {
        Ok(_) => {}
        Err(crate::jetstream::JsError::DecisionExists { key }) => {
            // Written once: the same decision is this one, written by another of the principal's
            // hosts (or by this one, before); any other is what agents read instead of it.
            let held = off_runtime(|| remote.get_decision(agent, id)).map_err(StoreError::from)?;
            let same = held.is_some_and(|d| {
                serde_json::from_slice::<serde_json::Value>(&d.bytes)
                    .is_ok_and(|v| v.get("document") == doc.get("document"))
            });
            if !same {
                return Err(Put::Another(format!(
                    "the store's decisions bucket holds another decision under {key}, written once: an agent waiting \
                     on {id} reads that one, not this"
                )));
            }
        }
        Err(e) => return Err(Put::Failed(e.into())),
    }
    let marks = spool.root().join(PUBLISHED);
    fs::create_dir_all(&marks)
        .and_then(|()| fs::write(marks.join(id), b""))
        .map_err(|e| Put::Failed(StoreError::Other(format!("{}: {e}", marks.display()))))
}

/// Writes every decision file of the replica that is not marked published to the bucket (one
/// whose earlier write failed); returns how many.
fn publish_missing(spool: &Spool, remote: &JetStreamSpool) -> Result<u64, StoreError> {
    let Ok(entries) = fs::read_dir(spool.decisions_dir()) else { return Ok(0) };
    let marks = spool.root().join(PUBLISHED);
    let rebuilt = spool.root().join(REBUILT);
    let mut count = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(id) = name.to_str().and_then(|n| n.strip_suffix(".json")) else { continue };
        // A rebuilt file is the principal's hosts' to write ([`publish_rebuilt`]).
        if !packet::is_safe_id(id) || marks.join(id).exists() || rebuilt.join(id).exists() {
            continue;
        }
        // Something other than a decision file in its place (a directory, a symlink) is no
        // decision to write: it is logged, and the replica's other decisions still go there.
        let bytes = match crate::spool::read_limited(&entry.path()) {
            Ok(bytes) => bytes,
            Err(e) => {
                tracing::warn!(path = %entry.path().display(), error = %e, "not a decision file: not written to the store");
                continue;
            }
        };
        match put_decision(spool, remote, id, &bytes) {
            Ok(()) => count += 1,
            // Reported by the command that signed it; the bucket will never take it, and the
            // replica's other decisions still go there.
            Err(Put::Another(message)) => tracing::warn!(%message, "a decision file not in the store's bucket"),
            Err(Put::Failed(e)) => return Err(e),
        }
    }
    Ok(count)
}

/// Keeps a replica live while it runs: two threads follow the store's chain and spool streams
/// with ordered push consumers and write what arrives into the replica (the console's inotify
/// watch sees it as it sees agents publishing into a directory). When a watch ends (the store
/// went away), its thread reconnects and catches up, reporting the error to `on_error`.
#[derive(Debug)]
pub struct Follower {
    stop: Arc<std::sync::atomic::AtomicBool>,
}

impl Drop for Follower {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Starts a [`Follower`] of the replica `spool` (after a [`pull`]).
///
/// # Errors
/// `spool` is not a replica; the store's errors.
pub fn follow(spool: &Spool, on_error: impl Fn(String) + Send + Sync + 'static) -> Result<Follower, StoreError> {
    let remote = spool
        .upstream()
        .ok_or_else(|| StoreError::Other(format!("{} is not a replica of a store", spool.root().display())))?;
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let on_error = Arc::new(on_error);
    for what in [Followed::Chain, Followed::Spool, Followed::Uses] {
        let (spool, remote, stop, on_error) =
            (spool.clone(), Arc::clone(&remote), Arc::clone(&stop), Arc::clone(&on_error));
        std::thread::Builder::new()
            .name(format!("warrant-follow-{what:?}"))
            .spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let result = match what {
                        Followed::Chain => follow_chain(&spool, &remote, &stop),
                        Followed::Spool => follow_spool(&spool, &remote, &stop),
                        Followed::Uses => follow_uses(&spool, &remote, &stop),
                    };
                    if let Err(e) = result {
                        on_error(format!("{}: {e}; reconnecting", remote.inner().url()));
                        std::thread::sleep(std::time::Duration::from_secs(1));
                    }
                }
            })
            .map_err(|e| StoreError::Other(format!("start the replica's follower: {e}")))?;
    }
    Ok(Follower { stop })
}

/// What a follower thread follows.
#[derive(Debug, Clone, Copy)]
enum Followed {
    Chain,
    Spool,
    Uses,
}

/// How long a follower waits for a message before it looks at its stop flag again.
const FOLLOW_TICK: std::time::Duration = std::time::Duration::from_millis(500);

fn follow_chain(
    spool: &Spool,
    remote: &JetStreamSpool,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<(), StoreError> {
    catch_up(spool, remote)?;
    let from = crate::chain_file::head(&spool.chain_path())?.last_index + 1;
    let mut watch = remote.watch_chain(from)?;
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        match watch.next_timeout(FOLLOW_TICK) {
            // The record is read again by the catch-up, under the chain's lock, with every
            // record before it that this replica lacks.
            Ok(_) => {
                catch_up(spool, remote)?;
            }
            Err(crate::jetstream::JsError::Timeout { .. }) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

fn follow_spool(
    spool: &Spool,
    remote: &JetStreamSpool,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<(), StoreError> {
    let io = |e: io::Error| StoreError::Other(format!("{}: {e}", spool.root().display()));
    pull_spool(spool, remote)?;
    let mut watch = remote.watch_spool(next_seq(spool))?;
    // The next sequence not yet marked read, and how many messages since the last mark.
    let (mut next, mut unsaved) = (None, 0u32);
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        match watch.next_timeout(FOLLOW_TICK) {
            Ok((kind, msg)) => {
                materialise(spool, kind, &msg).map_err(io)?;
                next = Some(msg.seq + 1);
                unsaved += 1;
                if unsaved >= 1024 {
                    save_next(spool, msg.seq + 1).map_err(io)?;
                    unsaved = 0;
                }
            }
            Err(crate::jetstream::JsError::Timeout { .. }) => {
                if let Some(n) = next.filter(|_| unsaved > 0) {
                    save_next(spool, n).map_err(io)?;
                    unsaved = 0;
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

fn follow_uses(spool: &Spool, remote: &JetStreamSpool, stop: &std::sync::atomic::AtomicBool) -> Result<(), StoreError> {
    let io = |e: io::Error| StoreError::Other(format!("{}: {e}", spool.uses_dir().display()));
    pull_uses(spool, remote)?;
    let mut watch = remote.watch_uses(read_next(spool, PULLED_USES))?;
    let mut next = None;
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        match watch.next_timeout(FOLLOW_TICK) {
            Ok((seq, name, bytes)) => {
                write_claim(spool, &name, &bytes).map_err(io)?;
                next = Some(seq + 1);
            }
            Err(crate::jetstream::JsError::Timeout { .. }) => {
                if let Some(n) = next.take() {
                    save_next_as(spool, PULLED_USES, n).map_err(io)?;
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// What `warrant migrate` copied besides the chain ([`copy_spool_to_store`],
/// [`copy_store_to_spool`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CopiedSpool {
    /// Packets written.
    pub packets: u64,
    /// Receipts written.
    pub receipts: u64,
    /// Decision files written.
    pub decisions: u64,
    /// Items the destination held already.
    pub already: u64,
    /// Files that could not be copied, each with the reason (invalid, or an agent id that is no
    /// subject token).
    pub not_copied: Vec<String>,
}

/// Copies a directory spool's packets, receipts and decision files to the store `remote`
/// (after its chain: the decisions bucket holds only what the chain decided). A packet or
/// receipt goes to its agent's subject with its content hash as `Nats-Msg-Id`; one whose content
/// hash the spool stream holds already is not published again, however long ago. A decision
/// file goes to the bucket under `AGENT.PACKET_ID`. Files that are invalid, or name an agent that
/// is no subject token, are listed in [`CopiedSpool::not_copied`]; nothing else is skipped.
///
/// # Errors
/// The store's errors.
pub fn copy_spool_to_store(src: &Spool, remote: &JetStreamSpool) -> Result<CopiedSpool, StoreError> {
    let mut copied = CopiedSpool::default();
    let present: std::collections::HashSet<String> =
        off_runtime(|| remote.read_spool_from(1))?.into_iter().filter_map(|(_, m)| m.msg_id).collect();
    for kind in [Kind::Packets, Kind::Receipts] {
        let dir = match kind {
            Kind::Packets => src.packets_dir(),
            Kind::Receipts => src.receipts_dir(),
        };
        for (name, bytes) in publications(&dir, &mut copied.not_copied) {
            let stem = name.trim_end_matches(".json");
            let agent = match kind {
                Kind::Packets => packet::parse_packet(&bytes, stem).map(|p| Some(p.agent)),
                Kind::Receipts => packet::parse_receipt(&bytes).map(|r| r.agent),
            };
            let agent = match agent {
                Ok(Some(a)) if crate::jetstream::is_token(&a) => a,
                Ok(Some(a)) => {
                    copied
                        .not_copied
                        .push(format!("{}: agent id {a:?} is no subject token", dir.join(&name).display()));
                    continue;
                }
                Ok(None) => {
                    copied.not_copied.push(format!("{}: names no agent", dir.join(&name).display()));
                    continue;
                }
                Err(e) => {
                    copied.not_copied.push(format!("{}: invalid: {e}", dir.join(&name).display()));
                    continue;
                }
            };
            let hash = match warrant_protocol::canonical::parse_untrusted(&bytes) {
                Ok(v) => warrant_protocol::canonical::canonical_hash(&v),
                Err(e) => {
                    copied.not_copied.push(format!("{}: invalid: {e}", dir.join(&name).display()));
                    continue;
                }
            };
            if present.contains(&hash) {
                copied.already += 1;
                continue;
            }
            let ack = off_runtime(|| match kind {
                Kind::Packets => remote.publish_packet(&agent, &bytes, &hash),
                Kind::Receipts => remote.publish_receipt(&agent, &bytes, &hash),
            })?;
            match (ack.duplicate, kind) {
                (true, _) => copied.already += 1,
                (false, Kind::Packets) => copied.packets += 1,
                (false, Kind::Receipts) => copied.receipts += 1,
            }
        }
    }
    for (name, bytes) in publications(&src.decisions_dir(), &mut copied.not_copied) {
        let id = name.trim_end_matches(".json");
        let agent = serde_json::from_slice::<serde_json::Value>(&bytes)
            .ok()
            .and_then(|v| v.pointer("/document/agent").and_then(serde_json::Value::as_str).map(str::to_owned));
        let Some(agent) = agent else {
            copied.not_copied.push(format!("{}: not a decision file", src.decisions_dir().join(&name).display()));
            continue;
        };
        match off_runtime(|| remote.put_decision(&agent, id, &bytes)) {
            Ok(_) => copied.decisions += 1,
            Err(crate::jetstream::JsError::DecisionExists { .. }) => copied.already += 1,
            Err(crate::jetstream::JsError::BadToken { what, value }) => {
                copied.not_copied.push(format!(
                    "{}: {what} {value:?} is no subject token",
                    src.decisions_dir().join(&name).display()
                ));
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(copied)
}

/// The files of `dir` a spool scan considers (`*.json`, not hidden), sorted by name, with their
/// bytes; one that cannot be read is listed in `not_copied`.
fn publications(dir: &Path, not_copied: &mut Vec<String>) -> Vec<(String, Vec<u8>)> {
    let Ok(entries) = fs::read_dir(dir) else { return Vec::new() };
    let mut names: Vec<String> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .filter(|n| crate::spool::is_publication(n))
        .collect();
    names.sort();
    names
        .into_iter()
        .filter_map(|name| match crate::spool::read_limited(&dir.join(&name)) {
            Ok(bytes) => Some((name, bytes)),
            Err(e) => {
                not_copied.push(format!("{}: {e}", dir.join(&name).display()));
                None
            }
        })
        .collect()
}

/// Copies the store's packets and receipts into the directory spool `dst` (named as in a
/// replica, [`materialise`]), then writes the decision file of every packet the chain (copied
/// first) decided, as `warrant list` rebuilds a lost one.
///
/// # Errors
/// The store's errors; I/O errors of `dst`; a chain that does not verify.
pub fn copy_store_to_spool(
    remote: &JetStreamSpool,
    dst: &Spool,
    pinned: &warrant_protocol::keys::PinnedKeys,
) -> Result<CopiedSpool, StoreError> {
    let io = |e: io::Error| StoreError::Other(format!("{}: {e}", dst.root().display()));
    dst.ensure().map_err(io)?;
    let mut copied = CopiedSpool::default();
    for (kind, msg) in off_runtime(|| remote.read_spool_from(1))? {
        match (materialise_new(dst, kind, &msg).map_err(io)?.1, kind) {
            (false, _) => copied.already += 1,
            (true, Kind::Packets) => copied.packets += 1,
            (true, Kind::Receipts) => copied.receipts += 1,
        }
    }
    let missing = crate::spool::ids_without_decision_files(dst);
    let (_, restored) = crate::spool::verify_chain_restoring(dst, pinned, &missing)?;
    copied.decisions = restored as u64;
    Ok(copied)
}
