//! The store a replica's directory works through (`docs/distributed.md`, "Replicas"): what the
//! directory spool's own code — the chain's append path, publications, claims, decision files,
//! signals — asks of it, as one trait object.
//!
//! The directory code calls the store only through [`Upstream`], and the one implementation
//! (the JetStream store, feature `jetstream`, in `replica`) becomes an `Upstream` only
//! where a replica is opened ([`crate::spool::Spool::open`], `replica::open`). A program that
//! never opens one — the hooks' binary, which opens its spool with
//! [`crate::spool::Spool::open_directory`] — links none of the store's client (its runtime, TLS
//! and NATS code), even in a build with the `jetstream` feature: the linker finds no path to it.

use crate::StoreError;
use crate::chain_file::ChainError;
use crate::spool::Spool;
use serde_json::Value;
use std::any::Any;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use warrant_protocol::chain::{Appended, ChainHead};

/// A replica's store, as the directory spool's code uses it. Every method is called only on a
/// replica ([`Spool::is_replica`]); a directory spool has no `Upstream` and its appends and
/// publications never touch the network.
pub trait Upstream: Send + Sync + 'static {
    /// Where the store is, as its URL reads (`nats://HOST:PORT/NAME`): for messages, and to tell
    /// two replicas' stores apart.
    fn location(&self) -> String;

    /// Brings the replica's chain file `path` (open as `file`, under the chain's lock) up to
    /// the store's head: the store's records after the file's head, checked to link, appended.
    ///
    /// # Errors
    /// [`ChainError::Store`] when the store cannot be read or holds another chain; I/O errors.
    fn catch_up_locked(&self, path: &Path, file: &mut File) -> Result<(), ChainError>;

    /// Publishes the records `appended`, sealed on `built_on`, to the store with
    /// compare-and-set on that head (before they are written to the file).
    ///
    /// # Errors
    /// [`ChainError::Store`]: the store moved on (another host appended first) or failed.
    fn push(&self, path: &Path, built_on: &ChainHead, appended: &[Appended]) -> Result<(), ChainError>;

    /// Creates the claim `path` (a file of `uses/`) holding `bytes` in the store's uses bucket
    /// first: one use across every host.
    ///
    /// # Errors
    /// `AlreadyExists` when the store holds the claim (another process or host took the use);
    /// the store's errors (the claim is then not made, and the use must not be taken).
    fn claim(&self, path: &Path, bytes: &[u8]) -> io::Result<()>;

    /// Publishes the packet or receipt `doc` (to be `<dir>/<id>.json` in `spool`) to the store
    /// on its agent's subject, then writes it into the replica; returns where. With `new`, a
    /// packet the replica or the store holds already is `AlreadyExists`.
    ///
    /// # Errors
    /// A directory that is neither `packets/` nor `receipts/`; a document naming no agent; the
    /// store's errors.
    fn publish(&self, spool: &Spool, dir: &Path, id: &str, doc: &Value, new: bool) -> io::Result<PathBuf>;

    /// Writes the signed decision file `bytes` of packet `id` to the store's decisions bucket
    /// (where `propose --wait` on any host reads it), and marks it published in `spool`.
    ///
    /// # Errors
    /// The store's errors; a bucket holding another decision under the key.
    fn publish_decision(&self, spool: &Spool, id: &str, bytes: &[u8]) -> Result<(), StoreError>;

    /// Puts the principal's signal `bytes` to `agent` (a stop, a quarantine, a release) in the
    /// store, where an agent waiting on another host sees it.
    ///
    /// # Errors
    /// The store's errors; an agent id the store cannot key.
    fn publish_signal(&self, agent: &str, bytes: &[u8]) -> Result<(), StoreError>;

    /// The store as itself, for code that works on it directly (a replica's pull and follower).
    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync>;
}
