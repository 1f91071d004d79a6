//! The spool's log on NATS JetStream (the shared reference `distributed-spool.md`,
//! and `docs/distributed.md`): the chain, packets, receipts and decisions on a real JetStream
//! server or cluster, for agents on many hosts and a principal reviewing from another.
//!
//! Layout, for a spool named `NAME` (`[A-Za-z0-9_-]+`):
//!
//! | what | JetStream | subjects / keys | written with |
//! |---|---|---|---|
//! | the chain | stream `warrant_NAME_chain` | `warrant.NAME.chain` | `Nats-Expected-Last-Subject-Sequence` = the head's sequence, `Nats-Msg-Id` = `entry_hash` |
//! | packets, receipts | stream `warrant_NAME_spool` | `warrant.NAME.packets.AGENT`, `warrant.NAME.receipts.AGENT` | `Nats-Msg-Id` = the content hash |
//! | decisions | KV bucket `warrant_NAME_decisions` | key `AGENT.PACKET_ID` | KV `create` (written once) |
//!
//! Both streams refuse delete, purge and rollup (`deny_delete`, `deny_purge`, `allow_rollup:
//! false`), keep every message (no age, count or size limit), and are stored in files with 1 or
//! 3 replicas. A stream or bucket that already exists with weaker settings is refused
//! ([`JsError::WeakerStream`]), never silently used.
//!
//! A chain record is the same canonical JSON line the chain file holds (without its newline):
//! the record still carries `previous_hash`, so a chain read from JetStream verifies with
//! [`warrant_protocol::chain::verify_records`] exactly as the file does. The compare-and-set is JetStream's:
//! an append names the subject sequence of the head it was sealed onto, and the server refuses it
//! when the head has moved ([`JsError::StaleHead`], server error 10071, "wrong last sequence", or
//! 10164 from a clustered stream's leader).
//! The caller re-reads the head and seals again; nothing here retries an append.
//!
//! Everything fails closed: a timeout, a lost connection or an unexpected answer is an error,
//! never an empty list or a missing decision.
//!
//! [`JetStreamSpool`] is the blocking facade for warrant's synchronous CLI; it owns a small tokio
//! runtime (one worker thread, so the connection's pings, reconnects and the watchers' heartbeats
//! are served between calls too) and wraps [`AsyncJetStreamSpool`].

use std::fmt;
use std::time::Duration;

use serde_json::Value;

use warrant_protocol::canonical;
use warrant_protocol::chain::ChainHead;

mod appender;
mod async_spool;
mod blocking;
mod buckets;
mod connect;
mod streams;

pub use appender::ChainAppender;
pub use async_spool::{AsyncJetStreamSpool, MAX_BATCH};
pub use blocking::{CHAIN_READ_PART, ChainReader, ChainWatch, JetStreamSpool, Watch};
pub use buckets::{Awaited, decision_key, is_claim_name, signal_key, use_key, use_name};
pub use connect::{ConnectOptions, DEFAULT_PORT, StoreUrl, UrlError, is_token};
pub use streams::{CONSUMER_IDLE_LIMIT, SETUP_SETTLE, SetupOptions};

/// The de-duplication window of both streams: a repeated `Nats-Msg-Id` within it is answered
/// with the first sequence and `duplicate: true`.
pub const DUPLICATE_WINDOW: Duration = Duration::from_secs(120);

/// An error of the JetStream spool. Every failure is one of these: nothing is defaulted.
#[derive(Debug, Clone, thiserror::Error)]
pub enum JsError {
    /// Connecting failed (no server answered, TLS, credentials, or an unreadable file).
    #[error("connect to {servers}: {message}")]
    Connect {
        /// The servers tried.
        servers: String,
        /// What failed.
        message: String,
    },
    /// The chain's head is no longer the one the record was sealed onto (server error 10071,
    /// "wrong last sequence", or 10164 from a clustered stream's leader): another append landed
    /// first. Re-read the head and seal again.
    #[error("stale head: the chain's head is no longer at subject sequence {expected}")]
    StaleHead {
        /// The subject sequence the append expected (0 for an empty chain).
        expected: u64,
    },
    /// A stream or bucket exists with settings weaker than the spool needs.
    #[error("{stream} exists with weaker settings than warrant needs: {setting}")]
    WeakerStream {
        /// The stream's name.
        stream: String,
        /// The first setting found weaker.
        setting: String,
    },
    /// A decision for this packet exists already: decisions are written once.
    #[error("a decision for {key} exists already")]
    DecisionExists {
        /// The decision's key, `AGENT.PACKET_ID`.
        key: String,
    },
    /// An agent, packet id or message id is not `[A-Za-z0-9_-]+` (or, for a message id, empty).
    #[error("{what} {value:?} must be letters, digits, '_' or '-'")]
    BadToken {
        /// What the value is.
        what: &'static str,
        /// The value.
        value: String,
    },
    /// Nothing arrived within the limit.
    #[error("timed out after {after:?} waiting for {what}")]
    Timeout {
        /// What was awaited.
        what: String,
        /// The limit.
        after: Duration,
    },
    /// The server refused or failed an operation, or the connection failed during it.
    #[error("{op}: {message}")]
    Server {
        /// The operation.
        op: String,
        /// The client's or the server's error.
        message: String,
    },
    /// What was read is not what the spool writes (a gap in sequences, a record that is not
    /// canonical JSON, a record without `chain_index` or `entry_hash`).
    #[error("{0}")]
    Corrupt(String),
    /// The server's permissions refused a request or subscription of this user (its message,
    /// `Permissions Violation for Publish to "SUBJECT"`): nothing was done.
    #[error("the server refused this user: {0}")]
    Denied(String),
    /// The chain stream does not allow atomic batches (`allow_atomic`; one set up before warrant
    /// used them): append the records one by one, or set the spool up again to allow them.
    #[error("stream {0} does not allow atomic batches")]
    AtomicDisabled(String),
    /// The runtime of the blocking facade could not be started, or a watch ended.
    #[error("{0}")]
    Runtime(String),
}

fn server<E: fmt::Display>(op: impl Into<String>) -> impl FnOnce(E) -> JsError {
    let op = op.into();
    move |e| JsError::Server { op, message: e.to_string() }
}

/// The answer to a chain append.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendAck {
    /// The record's subject (and stream) sequence in the chain stream, from 1.
    pub seq: u64,
    /// True when the same `entry_hash` was appended before: `seq` is the first append's.
    pub duplicate: bool,
}

/// One chain record as stored: its sequence and its canonical JSON line (no newline).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainEntry {
    /// The subject sequence, from 1 (the record's `chain_index` when the chain started empty).
    pub seq: u64,
    /// The record's canonical JSON, as the chain file holds it without its newline.
    pub line: Vec<u8>,
}

impl ChainEntry {
    /// The record, parsed strictly (as the chain file's verifier parses a line).
    ///
    /// # Errors
    /// [`JsError::Corrupt`] when the line is not canonical JSON.
    pub fn record(&self) -> Result<Value, JsError> {
        canonical::parse_strict(&self.line)
            .map_err(|e| JsError::Corrupt(format!("chain record at sequence {}: {e}", self.seq)))
    }

    /// The [`ChainHead`] a new record is sealed onto when this entry is the head
    /// ([`warrant_protocol::chain::seal`]).
    ///
    /// # Errors
    /// [`JsError::Corrupt`] when the record has no `chain_index` or `entry_hash`.
    pub fn chain_head(&self) -> Result<ChainHead, JsError> {
        let rec = self.record()?;
        let index = rec.get("chain_index").and_then(Value::as_u64);
        let hash = rec.get("entry_hash").and_then(Value::as_str);
        match (index, hash) {
            (Some(last_index), Some(h)) => Ok(ChainHead { last_index, last_hash: Some(h.to_string()) }),
            _ => {
                Err(JsError::Corrupt(format!("chain record at sequence {} has no chain_index or entry_hash", self.seq)))
            }
        }
    }
}

/// The [`ChainHead`] to seal onto after `tip` ([`AsyncJetStreamSpool::head`]): the empty head
/// for an empty chain.
///
/// # Errors
/// As [`ChainEntry::chain_head`].
pub fn chain_head_of(tip: Option<&ChainEntry>) -> Result<ChainHead, JsError> {
    tip.map_or(Ok(ChainHead { last_index: 0, last_hash: None }), ChainEntry::chain_head)
}

/// A packet or receipt as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpoolMessage {
    /// The stream sequence.
    pub seq: u64,
    /// The agent (the subject's last token).
    pub agent: String,
    /// The `Nats-Msg-Id` it was published with (the content hash).
    pub msg_id: Option<String>,
    /// The bytes published.
    pub bytes: Vec<u8>,
}

/// The answer to publishing a packet or receipt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PublishAck {
    /// The stream sequence.
    pub seq: u64,
    /// True when the same content hash was published within [`DUPLICATE_WINDOW`].
    pub duplicate: bool,
}

/// A decision as stored in the KV bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// The bucket's revision of this decision.
    pub revision: u64,
    /// The bytes written.
    pub bytes: Vec<u8>,
}

/// Which of the spool's two message kinds, as its subject names it
/// (`warrant.NAME.packets.AGENT`, `warrant.NAME.receipts.AGENT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Approval packets.
    Packets,
    /// Receipts.
    Receipts,
}

impl Kind {
    /// The kind a spool subject names, or `None` for a subject of neither kind.
    #[must_use]
    pub fn of_subject(subject: &str) -> Option<Self> {
        let mut tokens = subject.rsplit('.');
        let _agent = tokens.next()?;
        match tokens.next()? {
            "packets" => Some(Kind::Packets),
            "receipts" => Some(Kind::Receipts),
            _ => None,
        }
    }
}

struct Raw {
    seq: u64,
    subject: String,
    msg_id: Option<String>,
    payload: Vec<u8>,
}

fn token(what: &'static str, value: &str) -> Result<(), JsError> {
    if is_token(value) { Ok(()) } else { Err(JsError::BadToken { what, value: value.to_string() }) }
}
