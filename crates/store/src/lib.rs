//! The store: where a spool lives. Today the directory spool (`docs/spool.md`): packets and
//! receipts as files, the chain file appended under a lock, decision files, the principal's
//! checkpoints and key files, and the configuration. It depends on [`warrant_protocol`] and on
//! nothing above it.
//!
//! - [`spool`]: the shared directory, scanning and deciding;
//! - [`atomic`]: durable whole-file writes (staged, synced, renamed, the directory synced);
//! - [`chain_file`]: `chain.jsonl`: reads, verification of the file or its tail, durable appends;
//! - [`checkpoint_files`]: the spool's and the principal's checkpoint copies;
//! - [`key_files`]: `principal.key` (protected at rest) and `pinned_keys.toml`;
//! - [`config`]: `config.toml` and the policy files;
//! - [`publications`]: an agent's side of every store ([`publications::SpoolLog`]): packets and
//!   receipts published once and listed, and the decision files on them;
//! - [`open_flags`]: the `open(2)` flags of careful opens, from `rustix`;
//! - [`termination`]: running a kill switch's termination callback on its own thread;
//! - `jetstream` (feature `jetstream`): the spool on NATS JetStream (`docs/distributed.md`);
//! - `replica` (feature `jetstream`): a JetStream spool worked on through a directory on this
//!   host that the store keeps equal to the streams;
//! - [`upstream`]: the store a replica works through, as the directory code calls it (a trait
//!   object, so a program that opens no replica links no store client).

pub mod atomic;
pub mod chain_file;
pub mod checkpoint_files;
pub mod config;
#[cfg(feature = "jetstream")]
pub mod jetstream;
pub mod key_files;
pub mod open_flags;
pub mod publications;
#[cfg(feature = "jetstream")]
pub mod replica;
pub mod spool;
pub mod termination;
pub mod upstream;

/// The traits that read and write the protocol's key and policy values as files
/// (`Principal::load`, `PinnedKeys::load`, `GatewayKeys::load`, `PolicySet::load`): `use
/// warrant_store::prelude::*;` brings them into scope.
pub mod prelude {
    pub use crate::config::PolicyFiles;
    pub use crate::key_files::{GatewayKeysFile, PinnedKeysFile, PrincipalKeyFile};
}

use serde_json::{Map, Value};
use std::path::PathBuf;
use warrant_protocol::chain::{Appended, ChainHead, seal};

/// Why a store could not read or extend the chain.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The chain's head is no longer the one the append links to: another writer appended
    /// first. Nothing was written; the caller reads the head again and decides anew.
    #[error("the chain's head moved: the append links to record {expected} but the chain is at record {found}")]
    StaleHead {
        /// `chain_index` the append expected as the head (0: an empty chain).
        expected: u64,
        /// `chain_index` of the head found.
        found: u64,
    },
    /// A record to copy does not hash to its own `entry_hash` once linked after the head (a
    /// copy must be the same record, byte for byte in its canonical form).
    #[error("record {chain_index} would not keep its entry_hash when linked here ({message})")]
    NotACopy {
        /// The record's `chain_index`.
        chain_index: u64,
        /// What differs.
        message: String,
    },
    /// The directory store's chain file.
    #[error(transparent)]
    Directory(#[from] chain_file::ChainError),
    /// A directory that is the replica of a store (it holds the replica's marker), opened
    /// where only a directory spool can be ([`spool::Spool::open_directory`]).
    #[error("{} is the replica of a JetStream store: {why}", root.display())]
    Replica {
        /// The replica's root.
        root: std::path::PathBuf,
        /// What to do instead.
        why: String,
    },
    /// Any other failure of the store (the network, the server, a malformed stored record).
    #[error("{0}")]
    Other(String),
}

/// The chain as every store keeps it (the store boundary; OpenTrustGraph §2, §4):
/// records read in chain order, and appends that link to a head the caller names, refused when
/// the chain moved on (compare-and-set), so two writers can never both extend the same head.
/// The records are the protocol's ([`warrant_protocol::chain`]); where they are kept is the
/// store's: `chain.jsonl` under its lock ([`DirectoryChain`]) or a JetStream subject published
/// with the expected last sequence.
pub trait ChainLog {
    /// Where the chain lives, for messages (a path or a URL).
    fn location(&self) -> String;

    /// The head the next append links to: the last record's `chain_index` and `entry_hash`
    /// (`0` and `None` for an empty chain).
    ///
    /// # Errors
    /// The store's I/O errors; a last record that does not parse.
    fn head(&self) -> Result<ChainHead, StoreError>;

    /// Every record line in chain order, as stored (canonical JSON without the newline).
    ///
    /// # Errors
    /// The store's I/O errors.
    fn lines(&self) -> Result<Vec<Vec<u8>>, StoreError>;

    /// Appends `records` in order after `expected`, all or none, if the chain's head is still
    /// `expected`. Each record is linked ([`seal`]: `chain_index`, `previous_hash`,
    /// `entry_hash`); a record that carries an `entry_hash` already (a copy, `warrant migrate`)
    /// must keep it, or nothing is written ([`StoreError::NotACopy`]).
    ///
    /// # Errors
    /// [`StoreError::StaleHead`] when another writer appended first; [`StoreError::NotACopy`];
    /// the store's I/O errors (nothing acknowledged was lost: an append is reported only once
    /// it is durable).
    fn append_after(&self, expected: &ChainHead, records: Vec<Map<String, Value>>)
    -> Result<Vec<Appended>, StoreError>;
}

/// Seals `records` one after the other from `head` and checks that each one that names an
/// `entry_hash` keeps it: the check every store makes before it writes a copied record.
///
/// # Errors
/// [`StoreError::NotACopy`] for the first record that would change.
pub fn seal_copies(head: &ChainHead, records: &[Map<String, Value>]) -> Result<Vec<Appended>, StoreError> {
    let mut head = head.clone();
    let mut out = Vec::with_capacity(records.len());
    for rec in records {
        let claimed = rec.get("entry_hash").and_then(Value::as_str).map(str::to_owned);
        let claimed_index = rec.get("chain_index").and_then(Value::as_u64);
        let one = seal(rec.clone(), &head);
        if let Some(index) = claimed_index
            && index != one.chain_index
        {
            return Err(StoreError::NotACopy {
                chain_index: index,
                message: format!("it would be record {}", one.chain_index),
            });
        }
        if let Some(claimed) = claimed
            && claimed != one.entry_hash
        {
            return Err(StoreError::NotACopy {
                chain_index: one.chain_index,
                message: format!("it claims {claimed}, it hashes to {}", one.entry_hash),
            });
        }
        head = ChainHead { last_index: one.chain_index, last_hash: Some(one.entry_hash.clone()) };
        out.push(one);
    }
    Ok(out)
}

/// The directory store's chain: `chain.jsonl` at `path`, appended under its lock
/// ([`chain_file::append_many_then`], one `fdatasync` under the lock for the group).
#[derive(Debug, Clone)]
pub struct DirectoryChain {
    path: PathBuf,
}

impl DirectoryChain {
    /// The chain file `path` (a spool's `chain.jsonl`, never followed through a symlink).
    #[must_use]
    pub fn new(path: PathBuf) -> Self {
        Self { path }
    }
}

impl ChainLog for DirectoryChain {
    fn location(&self) -> String {
        self.path.display().to_string()
    }

    fn head(&self) -> Result<ChainHead, StoreError> {
        Ok(chain_file::head(&self.path)?)
    }

    fn lines(&self) -> Result<Vec<Vec<u8>>, StoreError> {
        let bytes = match chain_file::open_regular(&self.path, true) {
            Ok(mut f) => {
                let mut b = Vec::new();
                std::io::Read::read_to_end(&mut f, &mut b)
                    .map_err(|source| chain_file::ChainError::Io { path: self.path.clone(), source })?;
                b
            }
            Err(chain_file::ChainError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                Vec::new()
            }
            Err(e) => return Err(e.into()),
        };
        Ok(bytes.split(|b| *b == b'\n').filter(|l| !l.is_empty()).map(<[u8]>::to_vec).collect())
    }

    fn append_after(
        &self,
        expected: &ChainHead,
        records: Vec<Map<String, Value>>,
    ) -> Result<Vec<Appended>, StoreError> {
        // The builder runs under the chain's lock: what it refuses is kept here, typed.
        let mut refused = None;
        // A directory's chain: its appends never go anywhere but the file.
        let result = chain_file::append_many_then(
            &self.path,
            None,
            chain_file::LOCK_DEADLINE,
            |head| {
                let check = if head == expected {
                    seal_copies(head, &records).map(drop)
                } else {
                    Err(StoreError::StaleHead { expected: expected.last_index, found: head.last_index })
                };
                match check {
                    Ok(()) => Ok(records),
                    Err(e) => {
                        let message = e.to_string();
                        refused = Some(e);
                        Err(message)
                    }
                }
            },
            |_, _| {},
        );
        match (result, refused) {
            (Ok(appended), _) => Ok(appended),
            (Err(_), Some(e)) => Err(e),
            (Err(e), None) => Err(e.into()),
        }
    }
}

/// Where a spool lives, as `--store`, `WARRANT_STORE` or `store =` in `config.toml` name it: a
/// directory (the embedded default), or `nats://HOST:PORT[,HOST:PORT…]/NAME` (`tls://` for TLS)
/// for JetStream ([`jetstream::StoreUrl`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreLocation {
    /// The directory spool at this path.
    Directory(PathBuf),
    /// A spool on NATS JetStream.
    #[cfg(feature = "jetstream")]
    JetStream(jetstream::StoreUrl),
}

/// A store location that cannot be read ([`StoreLocation`]'s `FromStr`).
///
/// ```
/// use warrant_store::{StoreLocation, StoreLocationError};
/// assert_eq!("".parse::<StoreLocation>().unwrap_err(), StoreLocationError::Empty);
/// assert!(matches!("/srv/spool".parse::<StoreLocation>(), Ok(StoreLocation::Directory(_))));
/// #[cfg(not(feature = "jetstream"))]
/// assert!(matches!("nats://h:4222/s".parse::<StoreLocation>(), Err(StoreLocationError::NoJetStream(_))));
/// #[cfg(feature = "jetstream")]
/// assert!(matches!("nats://h:4222/s".parse::<StoreLocation>(), Ok(StoreLocation::JetStream(_))));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreLocationError {
    /// Empty text.
    #[error("an empty store: give a directory or nats://HOST:PORT/NAME")]
    Empty,
    /// A NATS URL in a build without the `jetstream` feature.
    #[error("{0}: this build of warrant has no JetStream support (the `jetstream` feature)")]
    NoJetStream(String),
    /// A NATS URL that is malformed (the URL reader's reason).
    #[error("{0}")]
    Url(String),
}

impl std::str::FromStr for StoreLocation {
    type Err = StoreLocationError;

    /// A `nats://` or `tls://` URL is JetStream (an error when this build has no `jetstream`
    /// feature, never read as a directory of that name); anything else is a directory path.
    fn from_str(text: &str) -> Result<Self, StoreLocationError> {
        if text.is_empty() {
            return Err(StoreLocationError::Empty);
        }
        if text.starts_with("nats://") || text.starts_with("tls://") {
            #[cfg(feature = "jetstream")]
            return text
                .parse()
                .map(StoreLocation::JetStream)
                .map_err(|e: jetstream::UrlError| StoreLocationError::Url(e.to_string()));
            #[cfg(not(feature = "jetstream"))]
            return Err(StoreLocationError::NoJetStream(text.to_owned()));
        }
        Ok(StoreLocation::Directory(PathBuf::from(text)))
    }
}

impl std::fmt::Display for StoreLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreLocation::Directory(p) => write!(f, "{}", p.display()),
            #[cfg(feature = "jetstream")]
            StoreLocation::JetStream(url) => write!(f, "{url}"),
        }
    }
}

/// Opens the chain of the spool at `at` ([`ChainLog`]): a directory's `chain.jsonl`, or the
/// chain stream of a JetStream spool, connected with the NATS ecosystem's environment
/// ([`jetstream::ConnectOptions::from_env`]). With `create`, a JetStream spool's streams are
/// set up first (`replicas` copies of each; an existing weaker stream is refused) and a
/// directory is created; without it, a spool that does not exist is an error, never an empty
/// chain.
///
/// # Errors
/// Connecting, a missing spool, or the store's own errors.
pub fn open_chain(at: &StoreLocation, create: bool, replicas: usize) -> Result<Box<dyn ChainLog>, StoreError> {
    match at {
        StoreLocation::Directory(root) => {
            if create {
                std::fs::create_dir_all(root).map_err(|e| StoreError::Other(format!("{}: {e}", root.display())))?;
            } else if !root.is_dir() {
                return Err(StoreError::Other(format!("{}: no such spool directory", root.display())));
            }
            let _ = replicas;
            Ok(Box::new(DirectoryChain::new(root.join("chain.jsonl"))))
        }
        #[cfg(feature = "jetstream")]
        StoreLocation::JetStream(url) => {
            let opts = jetstream::ConnectOptions::from_env().map_err(|e| StoreError::Other(e.to_string()))?;
            let spool = jetstream::JetStreamSpool::connect(url, &opts)?;
            if create {
                spool.setup(jetstream::SetupOptions { replicas })?;
            } else {
                spool.check_exists()?;
            }
            Ok(Box::new(spool))
        }
    }
}
