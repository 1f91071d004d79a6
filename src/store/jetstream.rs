//! The spool's log on NATS JetStream (issue 19; the shared reference `distributed-spool.md`,
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
//! [`crate::protocol::chain::verify_records`] exactly as the file does. The compare-and-set is JetStream's:
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
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use async_nats::HeaderMap;
use async_nats::header;
use async_nats::jetstream::ErrorCode;
use async_nats::jetstream::consumer::{DeliverPolicy, push};
use async_nats::jetstream::context::{GetStreamErrorKind, PublishErrorKind};
use async_nats::jetstream::kv;
use async_nats::jetstream::stream::{self, DiscardPolicy, RetentionPolicy, StorageType};
use async_nats::jetstream::{self, Context};
use futures_util::StreamExt;
use serde_json::Value;

use crate::protocol::canonical;
use crate::protocol::chain::ChainHead;

/// The default NATS port, used when a server in a [`StoreUrl`] names none.
pub const DEFAULT_PORT: u16 = 4222;

/// The de-duplication window of both streams: a repeated `Nats-Msg-Id` within it is answered
/// with the first sequence and `duplicate: true`.
pub const DUPLICATE_WINDOW: Duration = Duration::from_secs(120);

/// A malformed store URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    /// The URL starts with neither `nats://` nor `tls://`.
    #[error("a store URL starts with nats:// or tls:// (got {0:?})")]
    Scheme(String),
    /// No `/NAME` after the servers.
    #[error("a store URL ends with /NAME, the spool's name (nats://HOST:PORT/NAME)")]
    MissingName,
    /// The spool's name is not `[A-Za-z0-9_-]+` (it is used in subjects and stream names).
    #[error("the spool's name {0:?} must be letters, digits, '_' or '-'")]
    BadName(String),
    /// A server entry is empty (`nats://a:1,,b:2/x`) or there is none.
    #[error("a store URL names at least one server HOST:PORT, and no empty one")]
    NoServer,
    /// A host is not a DNS name, an IPv4 address or a bracketed IPv6 address.
    #[error("bad server host {0:?}")]
    BadHost(String),
    /// A port is not a number in 1..=65535.
    #[error("bad server port {0:?}")]
    BadPort(String),
    /// The URL carries a user or password (`nats://user:pass@host`): they would end up in
    /// logs and process lists; use a credentials or NKey seed file ([`ConnectOptions`]).
    #[error("credentials do not belong in a store URL; use a credentials or NKey seed file")]
    CredentialsInUrl,
}

/// Where a JetStream spool lives: `nats://HOST:PORT[,HOST2:PORT2...]/NAME` or the same with
/// `tls://` (TLS required on every server).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreUrl {
    /// Whether TLS is required (`tls://`).
    pub tls: bool,
    /// The servers, `(host, port)`; an IPv6 host is kept without its brackets.
    pub servers: Vec<(String, u16)>,
    /// The spool's name, `[A-Za-z0-9_-]+`.
    pub name: String,
}

/// Whether `s` is a non-empty `[A-Za-z0-9_-]+` (a spool name, an agent, a packet id: a single
/// subject token without wildcards).
#[must_use]
pub fn is_token(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl FromStr for StoreUrl {
    type Err = UrlError;

    fn from_str(url: &str) -> Result<Self, UrlError> {
        let (tls, rest) = if let Some(r) = url.strip_prefix("nats://") {
            (false, r)
        } else if let Some(r) = url.strip_prefix("tls://") {
            (true, r)
        } else {
            return Err(UrlError::Scheme(url.split("://").next().unwrap_or(url).to_string()));
        };
        let (hosts, name) = rest.split_once('/').ok_or(UrlError::MissingName)?;
        if name.is_empty() {
            return Err(UrlError::MissingName);
        }
        if !is_token(name) {
            return Err(UrlError::BadName(name.to_string()));
        }
        if hosts.contains('@') {
            return Err(UrlError::CredentialsInUrl);
        }
        let mut servers = Vec::new();
        for entry in hosts.split(',') {
            if entry.is_empty() {
                return Err(UrlError::NoServer);
            }
            servers.push(parse_server(entry)?);
        }
        Ok(StoreUrl { tls, servers, name: name.to_string() })
    }
}

fn parse_server(entry: &str) -> Result<(String, u16), UrlError> {
    let (host, port) = if let Some(v6) = entry.strip_prefix('[') {
        let (host, after) = v6.split_once(']').ok_or_else(|| UrlError::BadHost(entry.to_string()))?;
        if host.is_empty() || !host.bytes().all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.') {
            return Err(UrlError::BadHost(entry.to_string()));
        }
        match after {
            "" => (host, None),
            p => (host, Some(p.strip_prefix(':').ok_or_else(|| UrlError::BadPort(p.to_string()))?)),
        }
    } else {
        match entry.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (entry, None),
        }
    };
    let dns = |h: &str| {
        !h.is_empty()
            && h.split('.').all(|label| {
                !label.is_empty()
                    && !label.starts_with('-')
                    && !label.ends_with('-')
                    && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            })
    };
    if !entry.starts_with('[') && !dns(host) {
        return Err(UrlError::BadHost(host.to_string()));
    }
    let port = match port {
        None => DEFAULT_PORT,
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 && p.bytes().all(|b| b.is_ascii_digit()) => n,
            _ => return Err(UrlError::BadPort(p.to_string())),
        },
    };
    Ok((host.to_string(), port))
}

impl fmt::Display for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let servers: Vec<String> = self
            .server_addresses()
            .into_iter()
            .map(|s| s.split("://").nth(1).unwrap_or_default().to_string())
            .collect();
        write!(f, "{}://{}/{}", if self.tls { "tls" } else { "nats" }, servers.join(","), self.name)
    }
}

impl StoreUrl {
    /// The servers as client URLs (`nats://HOST:PORT` or `tls://HOST:PORT`, IPv6 bracketed).
    #[must_use]
    pub fn server_addresses(&self) -> Vec<String> {
        let scheme = if self.tls { "tls" } else { "nats" };
        self.servers
            .iter()
            .map(|(h, p)| if h.contains(':') { format!("{scheme}://[{h}]:{p}") } else { format!("{scheme}://{h}:{p}") })
            .collect()
    }

    /// The chain's subject, `warrant.NAME.chain`.
    #[must_use]
    pub fn chain_subject(&self) -> String {
        format!("warrant.{}.chain", self.name)
    }

    /// The chain's stream, `warrant_NAME_chain`.
    #[must_use]
    pub fn chain_stream(&self) -> String {
        format!("warrant_{}_chain", self.name)
    }

    /// The packets' and receipts' stream, `warrant_NAME_spool`.
    #[must_use]
    pub fn spool_stream(&self) -> String {
        format!("warrant_{}_spool", self.name)
    }

    /// The subject of `agent`'s packets, `warrant.NAME.packets.AGENT`.
    #[must_use]
    pub fn packet_subject(&self, agent: &str) -> String {
        format!("warrant.{}.packets.{agent}", self.name)
    }

    /// The subject of `agent`'s receipts, `warrant.NAME.receipts.AGENT`.
    #[must_use]
    pub fn receipt_subject(&self, agent: &str) -> String {
        format!("warrant.{}.receipts.{agent}", self.name)
    }

    /// The decisions' KV bucket, `warrant_NAME_decisions`.
    #[must_use]
    pub fn decisions_bucket(&self) -> String {
        format!("warrant_{}_decisions", self.name)
    }

    /// The uses bucket, `warrant_NAME_uses`: the single-use claims of approvals and grants and
    /// the gate's rate-limited runs (`uses/` of a directory spool), each key created once.
    #[must_use]
    pub fn uses_bucket(&self) -> String {
        format!("warrant_{}_uses", self.name)
    }
}

/// How to connect: credentials, TLS, timeouts. Every path is read when connecting; a file that
/// cannot be read is an error ([`JsError::Connect`]).
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    /// A NATS credentials file (`.creds`: a user JWT and its NKey seed).
    pub credentials_file: Option<PathBuf>,
    /// A file holding a user NKey seed (`SU…`), for servers configured with `nkey:` users.
    pub nkey_seed_file: Option<PathBuf>,
    /// CA certificates (PEM) to trust for the servers' TLS certificates.
    pub tls_ca: Option<PathBuf>,
    /// A client certificate and its key (PEM), for servers that verify clients.
    pub tls_client_cert: Option<(PathBuf, PathBuf)>,
    /// The prefix of this connection's reply subjects (default `_INBOX`). An agent user is
    /// allowed to subscribe to its own prefix only (`_INBOX_AGENT`, docs/distributed.md), so
    /// it cannot read the replies of others.
    pub inbox_prefix: Option<String>,
    /// Limit for connecting and for each request, publish acknowledgement or read (default 10 s).
    pub timeout: Duration,
    /// A name for the connection, shown by the server's monitoring.
    pub client_name: Option<String>,
}

impl ConnectOptions {
    /// The options the NATS command-line tools take from the environment: `NATS_CREDS` (a
    /// credentials file), `NATS_NKEY` (a file holding a user NKey seed), `NATS_CA` (CA
    /// certificates), `NATS_CERT` and `NATS_KEY` (a client certificate and its key, both or
    /// neither), `NATS_TIMEOUT` (seconds, default 10), and `NATS_INBOX_PREFIX` (the prefix of
    /// reply subjects, for a user whose permissions allow replies there only, as an agent's in
    /// `docs/distributed.md`). Unset or empty variables are absent.
    ///
    /// # Errors
    /// `NATS_CERT` without `NATS_KEY` (or the reverse), or a `NATS_TIMEOUT` that is not a
    /// number of seconds from 0.1 to 600.
    pub fn from_env() -> Result<Self, String> {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        let tls_client_cert = match (var("NATS_CERT"), var("NATS_KEY")) {
            (Some(c), Some(k)) => Some((c, k)),
            (None, None) => None,
            _ => return Err("NATS_CERT and NATS_KEY go together: set both or neither".into()),
        };
        let timeout = match std::env::var("NATS_TIMEOUT").ok().filter(|v| !v.is_empty()) {
            None => Duration::from_secs(10),
            Some(t) => t
                .parse::<f64>()
                .ok()
                .filter(|s| (0.1..=600.0).contains(s))
                .map(Duration::from_secs_f64)
                .ok_or_else(|| format!("NATS_TIMEOUT={t:?}: give seconds from 0.1 to 600"))?,
        };
        Ok(ConnectOptions {
            credentials_file: var("NATS_CREDS"),
            nkey_seed_file: var("NATS_NKEY"),
            tls_ca: var("NATS_CA"),
            tls_client_cert,
            timeout,
            client_name: Some("warrant".into()),
            inbox_prefix: std::env::var("NATS_INBOX_PREFIX").ok().filter(|v| !v.is_empty()),
        })
    }
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            credentials_file: None,
            nkey_seed_file: None,
            tls_ca: None,
            tls_client_cert: None,
            inbox_prefix: None,
            timeout: Duration::from_secs(10),
            client_name: None,
        }
    }
}

/// How the streams and the bucket are created by [`AsyncJetStreamSpool::setup`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetupOptions {
    /// Replicas of each stream and of the bucket: 1 (one server) or 3 (a three-node cluster).
    pub replicas: usize,
}

impl Default for SetupOptions {
    fn default() -> Self {
        SetupOptions { replicas: 1 }
    }
}

/// An error of the JetStream spool. Every failure is one of these: nothing is defaulted.
#[derive(Debug, thiserror::Error)]
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
    /// ([`crate::protocol::chain::seal`]).
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

/// The async JetStream spool: one connection, the streams' names, and the operations.
#[derive(Clone)]
pub struct AsyncJetStreamSpool {
    url: StoreUrl,
    js: Context,
    client: async_nats::Client,
    timeout: Duration,
}

impl fmt::Debug for AsyncJetStreamSpool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AsyncJetStreamSpool").field("url", &self.url.to_string()).finish_non_exhaustive()
    }
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

impl AsyncJetStreamSpool {
    /// Connects to the servers of `url`. Creates nothing: see [`setup`](Self::setup).
    ///
    /// # Errors
    /// [`JsError::Connect`] when no server answers within `opts.timeout`, a file cannot be read,
    /// or TLS or authentication fails.
    pub async fn connect(url: &StoreUrl, opts: &ConnectOptions) -> Result<Self, JsError> {
        let servers = url.server_addresses().join(",");
        let fail = |message: String| JsError::Connect { servers: servers.clone(), message };
        let mut o = async_nats::ConnectOptions::new()
            .connection_timeout(opts.timeout)
            .request_timeout(Some(opts.timeout))
            .retain_servers_order();
        if let Some(path) = &opts.credentials_file {
            o = o
                .credentials_file(path)
                .await
                .map_err(|e| fail(format!("credentials file {}: {e}", path.display())))?;
        }
        if let Some(path) = &opts.nkey_seed_file {
            let seed =
                std::fs::read_to_string(path).map_err(|e| fail(format!("NKey seed file {}: {e}", path.display())))?;
            o = o.nkey(seed.trim().to_string());
        }
        if let Some(ca) = &opts.tls_ca {
            o = o.add_root_certificates(ca.clone());
        }
        if let Some((cert, key)) = &opts.tls_client_cert {
            o = o.add_client_certificate(cert.clone(), key.clone());
        }
        if url.tls {
            o = o.require_tls(true);
        }
        if let Some(prefix) = &opts.inbox_prefix {
            o = o.custom_inbox_prefix(prefix);
        }
        if let Some(name) = &opts.client_name {
            o = o.name(name);
        }
        let addrs: Vec<async_nats::ServerAddr> = url
            .server_addresses()
            .iter()
            .map(|s| s.parse::<async_nats::ServerAddr>().map_err(|e| fail(format!("{s}: {e}"))))
            .collect::<Result<_, _>>()?;
        let client = tokio::time::timeout(opts.timeout, o.connect(addrs))
            .await
            .map_err(|_| fail(format!("no answer within {:?}", opts.timeout)))?
            .map_err(|e| fail(e.to_string()))?;
        let js = jetstream::ContextBuilder::new().timeout(opts.timeout).build(client.clone());
        Ok(AsyncJetStreamSpool { url: url.clone(), js, client, timeout: opts.timeout })
    }

    /// The store URL this spool was opened with.
    #[must_use]
    pub fn url(&self) -> &StoreUrl {
        &self.url
    }

    /// The JetStream context (for what this module does not wrap; the tests use it to attempt
    /// deletes and purges).
    #[must_use]
    pub fn context(&self) -> &Context {
        &self.js
    }

    /// Whether the spool exists: its chain stream is there (nothing is created).
    ///
    /// # Errors
    /// [`JsError::Server`] naming the missing stream, or the server's own error.
    pub async fn check_exists(&self) -> Result<(), JsError> {
        let name = self.url.chain_stream();
        match self.js.get_stream(&name).await {
            Ok(_) => Ok(()),
            Err(e) => match e.kind() {
                GetStreamErrorKind::JetStream(j) if j.error_code() == ErrorCode::STREAM_NOT_FOUND => {
                    Err(JsError::Server {
                        op: format!("open stream {name}"),
                        message: format!(
                            "no spool {:?} on this server (its chain stream does not exist)",
                            self.url.name
                        ),
                    })
                }
                _ => Err(server(format!("open stream {name}"))(e)),
            },
        }
    }

    /// Creates the chain stream, the packets-and-receipts stream and the decisions bucket, or
    /// checks those that exist. Idempotent; needs the principal's permissions.
    ///
    /// # Errors
    /// [`JsError::WeakerStream`] when one exists with weaker settings (delete, purge or rollup
    /// allowed; a limit that drops messages; memory storage; fewer replicas; other subjects);
    /// [`JsError::Server`] when the server refuses or does not answer.
    pub async fn setup(&self, opts: SetupOptions) -> Result<(), JsError> {
        let replicas = opts.replicas.max(1);
        let chain = self.stream_config(self.url.chain_stream(), vec![self.url.chain_subject()], replicas);
        let spool = self.stream_config(
            self.url.spool_stream(),
            vec![format!("warrant.{}.packets.*", self.url.name), format!("warrant.{}.receipts.*", self.url.name)],
            replicas,
        );
        for want in [chain, spool] {
            let name = want.name.clone();
            let mut s =
                self.js.get_or_create_stream(want.clone()).await.map_err(server(format!("create stream {name}")))?;
            let got = s.info().await.map_err(server(format!("stream info {name}")))?.config.clone();
            check_stream(&want, &got)?;
        }
        let decisions = format!("warrant spool {}: decisions by AGENT.PACKET_ID, written once", self.url.name);
        self.ensure_bucket(self.url.decisions_bucket(), decisions, replicas).await?;
        let uses = format!("warrant spool {}: claims of single uses, each key created once", self.url.name);
        self.ensure_bucket(self.url.uses_bucket(), uses, replicas).await
    }

    /// Creates the KV bucket `bucket` unless it exists, and checks that it keeps every key
    /// (file storage, `replicas`, no limit that drops values, deletes denied).
    async fn ensure_bucket(&self, bucket: String, description: String, replicas: usize) -> Result<(), JsError> {
        let kv_stream = format!("KV_{bucket}");
        let exists = match self.js.get_stream(&kv_stream).await {
            Ok(_) => true,
            Err(e) => match e.kind() {
                GetStreamErrorKind::JetStream(j) if j.error_code() == ErrorCode::STREAM_NOT_FOUND => false,
                _ => return Err(server(format!("open bucket {bucket}"))(e)),
            },
        };
        let store = if exists {
            self.js.get_key_value(&bucket).await.map_err(server(format!("open bucket {bucket}")))?
        } else {
            self.js
                .create_key_value(kv::Config {
                    bucket: bucket.clone(),
                    description,
                    history: 1,
                    storage: StorageType::File,
                    num_replicas: replicas,
                    ..Default::default()
                })
                .await
                .map_err(server(format!("create bucket {bucket}")))?
        };
        let mut s = self
            .js
            .get_stream(&store.stream_name)
            .await
            .map_err(server(format!("stream info {}", store.stream_name)))?;
        let got = s.info().await.map_err(server(format!("stream info {}", store.stream_name)))?.config.clone();
        let weak = |setting: &str| {
            Err(JsError::WeakerStream { stream: store.stream_name.clone(), setting: setting.to_string() })
        };
        if got.max_messages_per_subject < 1 {
            return weak("history below 1");
        }
        if got.storage != StorageType::File {
            return weak("memory storage");
        }
        if got.num_replicas < replicas {
            return weak(&format!("{} replicas, {replicas} wanted", got.num_replicas));
        }
        if got.max_age != Duration::ZERO || got.max_bytes >= 0 || got.max_messages >= 0 {
            return weak("a limit that drops decisions (max_age, max_bytes or max_msgs)");
        }
        if !got.deny_delete {
            return weak("deny_delete is false");
        }
        Ok(())
    }

    fn stream_config(&self, name: String, subjects: Vec<String>, replicas: usize) -> stream::Config {
        stream::Config {
            name,
            description: Some(format!("warrant spool {}", self.url.name)),
            subjects,
            retention: RetentionPolicy::Limits,
            storage: StorageType::File,
            num_replicas: replicas,
            deny_delete: true,
            deny_purge: true,
            allow_rollup: false,
            duplicate_window: DUPLICATE_WINDOW,
            max_messages: -1,
            max_bytes: -1,
            max_age: Duration::ZERO,
            max_messages_per_subject: -1,
            discard: DiscardPolicy::New,
            ..Default::default()
        }
    }

    async fn stream(&self, name: &str) -> Result<stream::Stream, JsError> {
        self.js.get_stream(name).await.map_err(server(format!("open stream {name}")))
    }

    /// Appends one chain record with compare-and-set: `expected` is the subject sequence of the
    /// head the record was sealed onto (`None` for an empty chain; sent as
    /// `Nats-Expected-Last-Subject-Sequence: 0`), `record_line` its canonical JSON (no newline)
    /// and `entry_hash` its `entry_hash` (sent as `Nats-Msg-Id`).
    ///
    /// # Errors
    /// [`JsError::StaleHead`] when the head has moved (never retried here; when the record right
    /// after `expected` is this very `entry_hash`, the answer is that record's sequence with
    /// `duplicate: true` instead, so an append whose answer was lost can be retried as it was);
    /// [`JsError::Timeout`] when no acknowledgement came in time (the append may have landed);
    /// [`JsError::Server`] otherwise.
    pub async fn append_chain(
        &self,
        expected: Option<u64>,
        record_line: &[u8],
        entry_hash: &str,
    ) -> Result<AppendAck, JsError> {
        if entry_hash.is_empty() || entry_hash.bytes().any(|b| b.is_ascii_whitespace() || b.is_ascii_control()) {
            return Err(JsError::BadToken { what: "entry_hash", value: entry_hash.to_string() });
        }
        let expected = expected.unwrap_or(0);
        let mut headers = HeaderMap::new();
        headers.insert(header::NATS_EXPECTED_LAST_SUBJECT_SEQUENCE, expected.to_string().as_str());
        headers.insert(header::NATS_MESSAGE_ID, entry_hash);
        match self.publish(self.url.chain_subject(), headers, record_line).await {
            Ok(ack) => Ok(AppendAck { seq: ack.sequence, duplicate: ack.duplicate }),
            // The server checks the expected sequence before the de-duplication: a retry of an
            // append that landed (its answer lost) is refused as stale. A record sealed onto the
            // head at `expected` can only be the one right after it: when that record carries
            // this `entry_hash`, the append had landed there.
            Err(PublishFail::WrongLastSequence) => match self.entry_msg_id(expected + 1).await? {
                Some(id) if id == entry_hash => Ok(AppendAck { seq: expected + 1, duplicate: true }),
                _ => Err(JsError::StaleHead { expected }),
            },
            Err(PublishFail::Other(e)) => Err(e),
        }
    }

    /// The `Nats-Msg-Id` of the chain record at `seq` (`None` when there is no record there).
    async fn entry_msg_id(&self, seq: u64) -> Result<Option<String>, JsError> {
        let stream = self.stream(&self.url.chain_stream()).await?;
        match stream.get_raw_message(seq).await {
            Ok(m) => Ok(m.headers.get(header::NATS_MESSAGE_ID).map(|v| v.as_str().to_string())),
            Err(e) if e.kind() == stream::LastRawMessageErrorKind::NoMessageFound => Ok(None),
            Err(e) => Err(server(format!("read chain record {seq}"))(e)),
        }
    }

    async fn publish(
        &self,
        subject: String,
        headers: HeaderMap,
        payload: &[u8],
    ) -> Result<jetstream::publish::PublishAck, PublishFail> {
        let op = format!("publish to {subject}");
        let fut = self
            .js
            .publish_with_headers(subject, headers, payload.to_vec().into())
            .await
            .map_err(|e| PublishFail::Other(server(op.clone())(e)))?;
        match fut.await {
            Ok(ack) => Ok(ack),
            Err(e) => Err(match e.kind() {
                PublishErrorKind::WrongLastSequence => PublishFail::WrongLastSequence,
                // A clustered stream's leader refuses a stale expectation with 10164 ("wrong
                // last sequence", without the sequence), which async-nats reports as `Other`.
                PublishErrorKind::Other if server_code(&e) == Some(ErrorCode::STREAM_WRONG_LAST_SEQUENCE_CONSTANT) => {
                    PublishFail::WrongLastSequence
                }
                PublishErrorKind::TimedOut => PublishFail::Other(JsError::Timeout {
                    what: format!("the acknowledgement of {op}"),
                    after: self.timeout,
                }),
                _ => PublishFail::Other(server(op)(e)),
            }),
        }
    }

    /// The chain's head: its last record and that record's subject sequence, or `None` for an
    /// empty chain.
    ///
    /// # Errors
    /// [`JsError::Server`] when the stream cannot be read.
    pub async fn head(&self) -> Result<Option<ChainEntry>, JsError> {
        let stream = self.stream(&self.url.chain_stream()).await?;
        match stream.get_last_raw_message_by_subject(&self.url.chain_subject()).await {
            Ok(m) => Ok(Some(ChainEntry { seq: m.sequence, line: m.payload.to_vec() })),
            Err(e) if e.kind() == stream::LastRawMessageErrorKind::NoMessageFound => Ok(None),
            Err(e) => Err(server("read the chain's head")(e)),
        }
    }

    /// The chain record at subject sequence `seq`, or `None` when there is none (yet). After an
    /// append whose answer was lost (a timeout, a failover), the record at `expected + 1` tells
    /// whether it landed.
    ///
    /// # Errors
    /// [`JsError::Server`] when the stream cannot be read.
    pub async fn entry(&self, seq: u64) -> Result<Option<ChainEntry>, JsError> {
        let stream = self.stream(&self.url.chain_stream()).await?;
        match stream.get_raw_message(seq).await {
            Ok(m) => Ok(Some(ChainEntry { seq: m.sequence, line: m.payload.to_vec() })),
            Err(e) if e.kind() == stream::LastRawMessageErrorKind::NoMessageFound => Ok(None),
            Err(e) => Err(server(format!("read chain record {seq}"))(e)),
        }
    }

    /// Every chain record, in sequence order, read with an ordered consumer. The sequences are
    /// checked to be 1, 2, 3, … (the stream refuses deletes, so a gap is corruption).
    ///
    /// # Errors
    /// [`JsError::Timeout`] when a record does not arrive in time; [`JsError::Corrupt`] on a
    /// gap; [`JsError::Server`] otherwise.
    pub async fn read_chain(&self) -> Result<Vec<ChainEntry>, JsError> {
        self.read_chain_from(1).await
    }

    /// The chain records from subject sequence `from_seq` on (1 for all), in order, up to the
    /// head when the read started; checked to be `from_seq`, `from_seq + 1`, … (a gap is
    /// corruption). What a replica reads to catch up ([`crate::store::replica`]).
    ///
    /// # Errors
    /// As [`read_chain`](Self::read_chain).
    pub async fn read_chain_from(&self, from_seq: u64) -> Result<Vec<ChainEntry>, JsError> {
        self.read_chain_some(from_seq, usize::MAX).await
    }

    /// [`read_chain_from`](Self::read_chain_from), at most `limit` records: a long chain is read
    /// in parts, so a reader holds one part in memory at a time.
    ///
    /// # Errors
    /// As [`read_chain`](Self::read_chain).
    pub async fn read_chain_some(&self, from_seq: u64, limit: usize) -> Result<Vec<ChainEntry>, JsError> {
        let from_seq = from_seq.max(1);
        let all = self.read_some(&self.url.chain_stream(), self.url.chain_subject(), from_seq, limit).await?;
        let mut out = Vec::with_capacity(all.len());
        for (i, m) in all.into_iter().enumerate() {
            let want = from_seq + i as u64;
            if m.seq != want {
                return Err(JsError::Corrupt(format!("chain stream: sequence {} where {want} was expected", m.seq)));
            }
            out.push(ChainEntry { seq: m.seq, line: m.payload });
        }
        Ok(out)
    }

    /// The packets and receipts from stream sequence `from_seq` on (1 for all), in stream
    /// order, up to the last one present when the read started, each with its kind.
    ///
    /// # Errors
    /// As [`read_chain`](Self::read_chain); [`JsError::Corrupt`] for a message on a subject of
    /// neither kind.
    pub async fn read_spool_from(&self, from_seq: u64) -> Result<Vec<(Kind, SpoolMessage)>, JsError> {
        let raw = self.read_all(&self.url.spool_stream(), String::new(), from_seq.max(1)).await?;
        raw.into_iter().map(spool_item).collect()
    }

    /// Watches the packets and receipts live from stream sequence `from_seq` (as
    /// [`watch_chain`](Self::watch_chain) does the chain: an ordered push consumer, no polling).
    ///
    /// # Errors
    /// [`JsError::Server`] when the consumer cannot be created.
    pub async fn watch_spool(
        &self,
        from_seq: u64,
    ) -> Result<tokio::sync::mpsc::Receiver<Result<(Kind, SpoolMessage), JsError>>, JsError> {
        let mut raw = self.watch_raw(&self.url.spool_stream(), String::new(), from_seq).await?;
        let (tx, rx) = tokio::sync::mpsc::channel(1024);
        tokio::spawn(async move {
            while let Some(item) = raw.recv().await {
                let item = item.and_then(spool_item);
                let end = item.is_err();
                if tx.send(item).await.is_err() || end {
                    return;
                }
            }
        });
        Ok(rx)
    }

    /// The messages of `stream` on `filter` (empty: every subject of the stream) from stream
    /// sequence `from_seq`, in order, up to the last one present when the read started (an
    /// ordered consumer, until the server reports none pending).
    async fn read_all(&self, stream_name: &str, filter: String, from_seq: u64) -> Result<Vec<Raw>, JsError> {
        self.read_some(stream_name, filter, from_seq, usize::MAX).await
    }

    /// [`read_all`](Self::read_all), stopping after `limit` messages.
    async fn read_some(
        &self,
        stream_name: &str,
        mut filter: String,
        from_seq: u64,
        limit: usize,
    ) -> Result<Vec<Raw>, JsError> {
        let stream = self.stream(stream_name).await?;
        let no_filter = filter.is_empty();
        if no_filter {
            filter = stream_name.to_owned();
        }
        let consumer = stream
            .create_consumer(push::OrderedConfig {
                name: Some(format!("warrant_read_{}", uuid::Uuid::new_v4().simple())),
                deliver_subject: self.client.new_inbox(),
                filter_subject: if no_filter { String::new() } else { filter.clone() },
                deliver_policy: deliver_from(from_seq),
                ..Default::default()
            })
            .await
            .map_err(server(format!("read {filter}")))?;
        if consumer.cached_info().num_pending == 0 {
            return Ok(Vec::new());
        }
        let mut messages = consumer.messages().await.map_err(server(format!("read {filter}")))?;
        let mut out = Vec::new();
        loop {
            let next = tokio::time::timeout(self.timeout, messages.next())
                .await
                .map_err(|_| JsError::Timeout { what: format!("the next message of {filter}"), after: self.timeout })?;
            let m = match next {
                Some(Ok(m)) => m,
                Some(Err(e)) => return Err(server(format!("read {filter}"))(e)),
                None => {
                    return Err(JsError::Server { op: format!("read {filter}"), message: "the consumer ended".into() });
                }
            };
            let info = m.info().map_err(server(format!("read {filter}")))?;
            let (seq, pending) = (info.stream_sequence, info.pending);
            out.push(Raw {
                seq,
                subject: m.message.subject.to_string(),
                msg_id: m
                    .message
                    .headers
                    .as_ref()
                    .and_then(|h| h.get(header::NATS_MESSAGE_ID))
                    .map(|v| v.as_str().to_string()),
                payload: m.message.payload.to_vec(),
            });
            if pending == 0 || out.len() >= limit {
                return Ok(out);
            }
        }
    }

    /// Watches the chain live from subject sequence `from_seq` (1 for everything; records
    /// appended later arrive as they land), with an ordered push consumer (no polling). The
    /// receiver gets every record once, in order; an error ends the watch (the last item).
    ///
    /// # Errors
    /// [`JsError::Server`] when the consumer cannot be created.
    pub async fn watch_chain(
        &self,
        from_seq: u64,
    ) -> Result<tokio::sync::mpsc::Receiver<Result<ChainEntry, JsError>>, JsError> {
        let mut raw = self.watch_raw(&self.url.chain_stream(), self.url.chain_subject(), from_seq).await?;
        let (tx, rx) = tokio::sync::mpsc::channel(1024);
        tokio::spawn(async move {
            while let Some(item) = raw.recv().await {
                let item = item.map(|r| ChainEntry { seq: r.seq, line: r.payload });
                let end = item.is_err();
                if tx.send(item).await.is_err() || end {
                    return;
                }
            }
        });
        Ok(rx)
    }

    /// The messages of `stream` on `filter` from `from_seq`, live: an ordered push consumer
    /// whose task forwards each message once, in order; an error ends it (the last item).
    async fn watch_raw(
        &self,
        stream_name: &str,
        filter: String,
        from_seq: u64,
    ) -> Result<tokio::sync::mpsc::Receiver<Result<Raw, JsError>>, JsError> {
        let stream = self.stream(stream_name).await?;
        let what = format!("watch {}", if filter.is_empty() { stream_name } else { &filter });
        let consumer = stream
            .create_consumer(push::OrderedConfig {
                name: Some(format!("warrant_watch_{}", uuid::Uuid::new_v4().simple())),
                deliver_subject: self.client.new_inbox(),
                filter_subject: filter,
                deliver_policy: deliver_from(from_seq),
                ..Default::default()
            })
            .await
            .map_err(server(what.clone()))?;
        let mut messages = consumer.messages().await.map_err(server(what.clone()))?;
        let (tx, rx) = tokio::sync::mpsc::channel(1024);
        tokio::spawn(async move {
            loop {
                let item = match messages.next().await {
                    Some(Ok(m)) => match m.info() {
                        Ok(info) => Ok(Raw {
                            seq: info.stream_sequence,
                            subject: m.message.subject.to_string(),
                            msg_id: m
                                .message
                                .headers
                                .as_ref()
                                .and_then(|h| h.get(header::NATS_MESSAGE_ID))
                                .map(|v| v.as_str().to_string()),
                            payload: m.message.payload.to_vec(),
                        }),
                        Err(e) => Err(server(what.clone())(e)),
                    },
                    Some(Err(e)) => Err(server(what.clone())(e)),
                    None => Err(JsError::Runtime(format!("{what}: the watch ended"))),
                };
                let end = item.is_err();
                if tx.send(item).await.is_err() || end {
                    return;
                }
            }
        });
        Ok(rx)
    }

    /// Publishes `agent`'s packet, with `Nats-Msg-Id` = `content_hash`.
    ///
    /// # Errors
    /// [`JsError::BadToken`] for an agent that is not `[A-Za-z0-9_-]+`; [`JsError::Timeout`] or
    /// [`JsError::Server`] when it is not acknowledged.
    pub async fn publish_packet(&self, agent: &str, bytes: &[u8], content_hash: &str) -> Result<PublishAck, JsError> {
        self.publish_kind(Kind::Packets, agent, bytes, content_hash).await
    }

    /// Publishes `agent`'s receipt, with `Nats-Msg-Id` = `content_hash`.
    ///
    /// # Errors
    /// As [`publish_packet`](Self::publish_packet).
    pub async fn publish_receipt(&self, agent: &str, bytes: &[u8], content_hash: &str) -> Result<PublishAck, JsError> {
        self.publish_kind(Kind::Receipts, agent, bytes, content_hash).await
    }

    async fn publish_kind(
        &self,
        kind: Kind,
        agent: &str,
        bytes: &[u8],
        content_hash: &str,
    ) -> Result<PublishAck, JsError> {
        token("agent", agent)?;
        if content_hash.is_empty() || content_hash.bytes().any(|b| b.is_ascii_whitespace() || b.is_ascii_control()) {
            return Err(JsError::BadToken { what: "content hash", value: content_hash.to_string() });
        }
        let subject = match kind {
            Kind::Packets => self.url.packet_subject(agent),
            Kind::Receipts => self.url.receipt_subject(agent),
        };
        let mut headers = HeaderMap::new();
        headers.insert(header::NATS_MESSAGE_ID, content_hash);
        let ack = self.publish(subject, headers, bytes).await.map_err(|e| match e {
            PublishFail::Other(e) => e,
            PublishFail::WrongLastSequence => {
                JsError::Server { op: "publish".into(), message: "wrong last sequence".into() }
            }
        })?;
        Ok(PublishAck { seq: ack.sequence, duplicate: ack.duplicate })
    }

    /// Every packet, in stream order.
    ///
    /// # Errors
    /// As [`read_chain`](Self::read_chain).
    pub async fn list_packets(&self) -> Result<Vec<SpoolMessage>, JsError> {
        self.list_kind(Kind::Packets).await
    }

    /// Every receipt, in stream order.
    ///
    /// # Errors
    /// As [`read_chain`](Self::read_chain).
    pub async fn list_receipts(&self) -> Result<Vec<SpoolMessage>, JsError> {
        self.list_kind(Kind::Receipts).await
    }

    async fn list_kind(&self, kind: Kind) -> Result<Vec<SpoolMessage>, JsError> {
        let filter = match kind {
            Kind::Packets => self.url.packet_subject("*"),
            Kind::Receipts => self.url.receipt_subject("*"),
        };
        let raw = self.read_all(&self.url.spool_stream(), filter, 1).await?;
        Ok(raw
            .into_iter()
            .map(|r| SpoolMessage {
                seq: r.seq,
                agent: r.subject.rsplit('.').next().unwrap_or_default().to_string(),
                msg_id: r.msg_id,
                bytes: r.payload,
            })
            .collect())
    }

    async fn decisions(&self) -> Result<kv::Store, JsError> {
        let bucket = self.url.decisions_bucket();
        self.js.get_key_value(&bucket).await.map_err(server(format!("open bucket {bucket}")))
    }

    /// Writes the decision on `agent`'s packet `packet_id`, once: a second decision for the
    /// same packet is refused ([`JsError::DecisionExists`]). Returns the bucket's revision.
    ///
    /// # Errors
    /// [`JsError::DecisionExists`]; [`JsError::BadToken`] for an agent or packet id that is not
    /// `[A-Za-z0-9_-]+`; [`JsError::Server`] otherwise.
    pub async fn put_decision(&self, agent: &str, packet_id: &str, bytes: &[u8]) -> Result<u64, JsError> {
        let key = decision_key(agent, packet_id)?;
        let store = self.decisions().await?;
        match store.create(&key, bytes.to_vec().into()).await {
            Ok(rev) => Ok(rev),
            Err(e) if e.kind() == kv::CreateErrorKind::AlreadyExists => Err(JsError::DecisionExists { key }),
            Err(e) => Err(server(format!("write decision {key}"))(e)),
        }
    }

    /// The decision on `agent`'s packet `packet_id`, or `None` when there is none yet.
    ///
    /// # Errors
    /// [`JsError::Server`] when the bucket cannot be read (never `None` for that).
    pub async fn get_decision(&self, agent: &str, packet_id: &str) -> Result<Option<Decision>, JsError> {
        let key = decision_key(agent, packet_id)?;
        let store = self.decisions().await?;
        match store.entry(&key).await.map_err(server(format!("read decision {key}")))? {
            Some(e) if e.operation == kv::Operation::Put => {
                Ok(Some(Decision { revision: e.revision, bytes: e.value.to_vec() }))
            }
            Some(_) | None => Ok(None),
        }
    }

    /// Waits for the decision on `agent`'s packet `packet_id`, with a KV watch that first
    /// delivers the decision already there (no polling, and no race with a decision written
    /// just before the watch).
    ///
    /// # Errors
    /// [`JsError::Timeout`] when none came within `timeout`; [`JsError::Server`] otherwise.
    pub async fn wait_decision(&self, agent: &str, packet_id: &str, timeout: Duration) -> Result<Decision, JsError> {
        let key = decision_key(agent, packet_id)?;
        let store = self.decisions().await?;
        let subject = format!("{}{key}", store.prefix);
        let wait = async {
            // An ordered consumer of the one key, named so that its create request names the
            // key's subject (`$JS.API.CONSUMER.CREATE.KV_….NAME.$KV.….AGENT.PACKET_ID`), which a
            // server permission can grant per agent (docs/distributed.md); the KV watch of
            // async-nats creates unnamed consumers, whose request names no subject.
            let consumer = store
                .stream
                .create_consumer(push::OrderedConfig {
                    name: Some(format!("warrant_wait_{}", uuid::Uuid::new_v4().simple())),
                    deliver_subject: self.client.new_inbox(),
                    filter_subject: subject.clone(),
                    deliver_policy: DeliverPolicy::LastPerSubject,
                    ..Default::default()
                })
                .await
                .map_err(server(format!("watch decision {key}")))?;
            let mut messages = consumer.messages().await.map_err(server(format!("watch decision {key}")))?;
            while let Some(m) = messages.next().await {
                let m = m.map_err(server(format!("watch decision {key}")))?;
                let op = m.message.headers.as_ref().and_then(|h| h.get("KV-Operation")).map(|v| v.as_str().to_string());
                if op.is_none() {
                    let info = m.info().map_err(server(format!("watch decision {key}")))?;
                    return Ok(Decision { revision: info.stream_sequence, bytes: m.message.payload.to_vec() });
                }
            }
            Err(JsError::Server { op: format!("watch decision {key}"), message: "the watch ended".into() })
        };
        tokio::time::timeout(timeout, wait)
            .await
            .map_err(|_| JsError::Timeout { what: format!("the decision {key}"), after: timeout })?
    }
}

impl AsyncJetStreamSpool {
    /// Creates the claim `name` (a `uses/` file name: `approval+ID.use`, `grant+G+N.use`,
    /// `gate+ID.use`) with `bytes`, once: `Ok(false)` when it exists already (the use was taken).
    /// The key is the name in hex ([`use_key`]): `+` and `:` are no key characters.
    ///
    /// # Errors
    /// [`JsError::Server`] and [`JsError::Timeout`]: the claim is then not made.
    pub async fn claim_use(&self, name: &str, bytes: &[u8]) -> Result<bool, JsError> {
        let bucket = self.url.uses_bucket();
        let store = self.js.get_key_value(&bucket).await.map_err(server(format!("open bucket {bucket}")))?;
        match store.create(use_key(name), bytes.to_vec().into()).await {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == kv::CreateErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(server(format!("claim {name}"))(e)),
        }
    }

    /// The claims from the uses bucket's stream sequence `from_seq` on, in order, up to the last
    /// one when the read started: `(sequence, name, bytes)`.
    ///
    /// # Errors
    /// As [`read_chain`](Self::read_chain); [`JsError::Corrupt`] for a key that is not a name.
    pub async fn read_uses_from(&self, from_seq: u64) -> Result<Vec<(u64, String, Vec<u8>)>, JsError> {
        let stream = format!("KV_{}", self.url.uses_bucket());
        let raw = self.read_all(&stream, String::new(), from_seq.max(1)).await?;
        raw.into_iter()
            .map(|r| {
                let key = r.subject.rsplit('.').next().unwrap_or_default();
                let name = use_name(key)
                    .ok_or_else(|| JsError::Corrupt(format!("uses bucket: key {key:?} is not a claim's name")))?;
                Ok((r.seq, name, r.payload))
            })
            .collect()
    }
}

impl AsyncJetStreamSpool {
    /// Watches the uses bucket's claims live from stream sequence `from_seq` (as
    /// [`watch_chain`](Self::watch_chain): an ordered push consumer, no polling).
    ///
    /// # Errors
    /// [`JsError::Server`] when the consumer cannot be created.
    pub async fn watch_uses(
        &self,
        from_seq: u64,
    ) -> Result<tokio::sync::mpsc::Receiver<Result<(u64, String, Vec<u8>), JsError>>, JsError> {
        let stream = format!("KV_{}", self.url.uses_bucket());
        let mut raw = self.watch_raw(&stream, String::new(), from_seq).await?;
        let (tx, rx) = tokio::sync::mpsc::channel(1024);
        tokio::spawn(async move {
            while let Some(item) = raw.recv().await {
                let item = item.and_then(|r| {
                    let key = r.subject.rsplit('.').next().unwrap_or_default().to_owned();
                    use_name(&key)
                        .map(|name| (r.seq, name, r.payload))
                        .ok_or_else(|| JsError::Corrupt(format!("uses bucket: key {key:?} is not a claim's name")))
                });
                let end = item.is_err();
                if tx.send(item).await.is_err() || end {
                    return;
                }
            }
        });
        Ok(rx)
    }
}

/// The uses bucket's key of the claim `name`: its bytes in lowercase hex.
#[must_use]
pub fn use_key(name: &str) -> String {
    name.bytes().map(|b| format!("{b:02x}")).collect()
}

/// The claim name of a uses bucket key ([`use_key`]), or `None` for a key that is not one.
#[must_use]
pub fn use_name(key: &str) -> Option<String> {
    if !key.len().is_multiple_of(2) {
        return None;
    }
    let bytes: Option<Vec<u8>> =
        (0..key.len()).step_by(2).map(|i| u8::from_str_radix(key.get(i..i + 2)?, 16).ok()).collect();
    String::from_utf8(bytes?).ok()
}

/// The JetStream error code behind a client error, if the server sent one.
fn server_code(e: &(dyn std::error::Error + 'static)) -> Option<ErrorCode> {
    std::error::Error::source(e).and_then(|s| s.downcast_ref::<jetstream::Error>()).map(jetstream::Error::error_code)
}

enum PublishFail {
    WrongLastSequence,
    Other(JsError),
}

struct Raw {
    seq: u64,
    subject: String,
    msg_id: Option<String>,
    payload: Vec<u8>,
}

/// The deliver policy that starts at stream sequence `from_seq` (1 or 0: everything).
fn deliver_from(from_seq: u64) -> DeliverPolicy {
    if from_seq <= 1 { DeliverPolicy::All } else { DeliverPolicy::ByStartSequence { start_sequence: from_seq } }
}

/// A spool stream message as a packet or receipt of the agent its subject names.
fn spool_item(r: Raw) -> Result<(Kind, SpoolMessage), JsError> {
    let kind = Kind::of_subject(&r.subject)
        .ok_or_else(|| JsError::Corrupt(format!("spool stream: message {} on subject {:?}", r.seq, r.subject)))?;
    let agent = r.subject.rsplit('.').next().unwrap_or_default().to_string();
    Ok((kind, SpoolMessage { seq: r.seq, agent, msg_id: r.msg_id, bytes: r.payload }))
}

fn token(what: &'static str, value: &str) -> Result<(), JsError> {
    if is_token(value) { Ok(()) } else { Err(JsError::BadToken { what, value: value.to_string() }) }
}

/// The decisions bucket's key for `agent`'s packet `packet_id`: `AGENT.PACKET_ID` (the agent
/// first, so a server permission can give an agent its own decisions and no others).
///
/// # Errors
/// [`JsError::BadToken`] when either is not `[A-Za-z0-9_-]+`.
pub fn decision_key(agent: &str, packet_id: &str) -> Result<String, JsError> {
    token("agent", agent)?;
    token("packet id", packet_id)?;
    Ok(format!("{agent}.{packet_id}"))
}

/// The first setting of `got` weaker than `want` (the spool's stream settings).
fn check_stream(want: &stream::Config, got: &stream::Config) -> Result<(), JsError> {
    let weak = |setting: String| Err(JsError::WeakerStream { stream: want.name.clone(), setting });
    if !got.deny_delete {
        return weak("deny_delete is false".into());
    }
    if !got.deny_purge {
        return weak("deny_purge is false".into());
    }
    if got.allow_rollup {
        return weak("allow_rollup is true".into());
    }
    if got.storage != StorageType::File {
        return weak("memory storage".into());
    }
    if got.num_replicas < want.num_replicas {
        return weak(format!("{} replicas, {} wanted", got.num_replicas, want.num_replicas));
    }
    if got.retention != RetentionPolicy::Limits {
        return weak(format!("retention {:?} drops messages", got.retention));
    }
    if got.max_age != Duration::ZERO || got.max_bytes >= 0 || got.max_messages >= 0 || got.max_messages_per_subject >= 0
    {
        return weak("a limit that drops messages (max_age, max_bytes, max_msgs or max_msgs_per_subject)".into());
    }
    if got.discard != DiscardPolicy::New {
        return weak("discard old".into());
    }
    let mut a = got.subjects.clone();
    let mut b = want.subjects.clone();
    a.sort();
    b.sort();
    if a != b {
        return weak(format!("subjects {a:?}, {b:?} wanted"));
    }
    if got.duplicate_window < want.duplicate_window {
        return weak(format!("duplicate window {:?}, {:?} wanted", got.duplicate_window, want.duplicate_window));
    }
    if got.sealed {
        return weak("sealed".into());
    }
    if got.mirror.is_some() || got.sources.as_ref().is_some_and(|s| !s.is_empty()) {
        return weak("a mirror or sources".into());
    }
    Ok(())
}

/// The blocking facade of [`AsyncJetStreamSpool`] for the synchronous CLI: it owns a small
/// tokio runtime (one worker thread) and blocks on each call.
pub struct JetStreamSpool {
    rt: tokio::runtime::Runtime,
    inner: AsyncJetStreamSpool,
}

impl fmt::Debug for JetStreamSpool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.fmt(f)
    }
}

impl JetStreamSpool {
    /// Starts the runtime and connects ([`AsyncJetStreamSpool::connect`]).
    ///
    /// # Errors
    /// [`JsError::Runtime`] when the runtime cannot start; otherwise as
    /// [`AsyncJetStreamSpool::connect`].
    pub fn connect(url: &StoreUrl, opts: &ConnectOptions) -> Result<Self, JsError> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("warrant-jetstream")
            .enable_all()
            .build()
            .map_err(|e| JsError::Runtime(format!("start the JetStream runtime: {e}")))?;
        let inner = rt.block_on(AsyncJetStreamSpool::connect(url, opts))?;
        Ok(JetStreamSpool { rt, inner })
    }

    /// The async spool (its methods may be run with [`block_on`](Self::block_on)).
    #[must_use]
    pub fn inner(&self) -> &AsyncJetStreamSpool {
        &self.inner
    }

    /// Runs `fut` on this spool's runtime.
    pub fn block_on<F: std::future::Future>(&self, fut: F) -> F::Output {
        self.rt.block_on(fut)
    }

    /// [`AsyncJetStreamSpool::setup`].
    ///
    /// # Errors
    /// As [`AsyncJetStreamSpool::setup`].
    pub fn setup(&self, opts: SetupOptions) -> Result<(), JsError> {
        self.rt.block_on(self.inner.setup(opts))
    }

    /// [`AsyncJetStreamSpool::check_exists`].
    ///
    /// # Errors
    /// As [`AsyncJetStreamSpool::check_exists`].
    pub fn check_exists(&self) -> Result<(), JsError> {
        self.rt.block_on(self.inner.check_exists())
    }

    /// [`AsyncJetStreamSpool::append_chain`].
    ///
    /// # Errors
    /// As [`AsyncJetStreamSpool::append_chain`].
    pub fn append_chain(
        &self,
        expected: Option<u64>,
        record_line: &[u8],
        entry_hash: &str,
    ) -> Result<AppendAck, JsError> {
        self.rt.block_on(self.inner.append_chain(expected, record_line, entry_hash))
    }

    /// [`AsyncJetStreamSpool::head`].
    ///
    /// # Errors
    /// As [`AsyncJetStreamSpool::head`].
    pub fn head(&self) -> Result<Option<ChainEntry>, JsError> {
        self.rt.block_on(self.inner.head())
    }

    /// [`AsyncJetStreamSpool::entry`].
    ///
    /// # Errors
    /// As [`AsyncJetStreamSpool::entry`].
    pub fn entry(&self, seq: u64) -> Result<Option<ChainEntry>, JsError> {
        self.rt.block_on(self.inner.entry(seq))
    }

    /// [`AsyncJetStreamSpool::read_chain`].
    ///
    /// # Errors
    /// As [`AsyncJetStreamSpool::read_chain`].
    pub fn read_chain(&self) -> Result<Vec<ChainEntry>, JsError> {
        self.rt.block_on(self.inner.read_chain())
    }

    /// [`AsyncJetStreamSpool::read_chain_from`].
    ///
    /// # Errors
    /// As [`AsyncJetStreamSpool::read_chain_from`].
    pub fn read_chain_from(&self, from_seq: u64) -> Result<Vec<ChainEntry>, JsError> {
        self.rt.block_on(self.inner.read_chain_from(from_seq))
    }

    /// [`AsyncJetStreamSpool::read_chain_some`].
    ///
    /// # Errors
    /// As [`AsyncJetStreamSpool::read_chain_some`].
    pub fn read_chain_some(&self, from_seq: u64, limit: usize) -> Result<Vec<ChainEntry>, JsError> {
        self.rt.block_on(self.inner.read_chain_some(from_seq, limit))
    }

    /// [`AsyncJetStreamSpool::read_spool_from`].
    ///
    /// # Errors
    /// As [`AsyncJetStreamSpool::read_spool_from`].
    pub fn read_spool_from(&self, from_seq: u64) -> Result<Vec<(Kind, SpoolMessage)>, JsError> {
        self.rt.block_on(self.inner.read_spool_from(from_seq))
    }

    /// [`AsyncJetStreamSpool::claim_use`].
    ///
    /// # Errors
    /// As [`AsyncJetStreamSpool::claim_use`].
    pub fn claim_use(&self, name: &str, bytes: &[u8]) -> Result<bool, JsError> {
        self.rt.block_on(self.inner.claim_use(name, bytes))
    }

    /// [`AsyncJetStreamSpool::read_uses_from`].
    ///
    /// # Errors
    /// As [`AsyncJetStreamSpool::read_uses_from`].
    pub fn read_uses_from(&self, from_seq: u64) -> Result<Vec<(u64, String, Vec<u8>)>, JsError> {
        self.rt.block_on(self.inner.read_uses_from(from_seq))
    }

    /// [`AsyncJetStreamSpool::watch_uses`], as a blocking [`Watch`].
    ///
    /// # Errors
    /// As [`AsyncJetStreamSpool::watch_uses`].
    pub fn watch_uses(&self, from_seq: u64) -> Result<Watch<(u64, String, Vec<u8>)>, JsError> {
        let rx = self.rt.block_on(self.inner.watch_uses(from_seq))?;
        Ok(Watch { rx, handle: self.rt.handle().clone() })
    }

    /// [`AsyncJetStreamSpool::watch_spool`], as a blocking [`Watch`].
    ///
    /// # Errors
    /// As [`AsyncJetStreamSpool::watch_spool`].
    pub fn watch_spool(&self, from_seq: u64) -> Result<Watch<(Kind, SpoolMessage)>, JsError> {
        let rx = self.rt.block_on(self.inner.watch_spool(from_seq))?;
        Ok(Watch { rx, handle: self.rt.handle().clone() })
    }

    /// [`AsyncJetStreamSpool::watch_chain`], as a blocking [`ChainWatch`].
    ///
    /// # Errors
    /// As [`AsyncJetStreamSpool::watch_chain`].
    pub fn watch_chain(&self, from_seq: u64) -> Result<ChainWatch, JsError> {
        let rx = self.rt.block_on(self.inner.watch_chain(from_seq))?;
        Ok(Watch { rx, handle: self.rt.handle().clone() })
    }

    /// [`AsyncJetStreamSpool::publish_packet`].
    ///
    /// # Errors
    /// As [`AsyncJetStreamSpool::publish_packet`].
    pub fn publish_packet(&self, agent: &str, bytes: &[u8], content_hash: &str) -> Result<PublishAck, JsError> {
        self.rt.block_on(self.inner.publish_packet(agent, bytes, content_hash))
    }

    /// [`AsyncJetStreamSpool::publish_receipt`].
    ///
    /// # Errors
    /// As [`AsyncJetStreamSpool::publish_receipt`].
    pub fn publish_receipt(&self, agent: &str, bytes: &[u8], content_hash: &str) -> Result<PublishAck, JsError> {
        self.rt.block_on(self.inner.publish_receipt(agent, bytes, content_hash))
    }

    /// [`AsyncJetStreamSpool::list_packets`].
    ///
    /// # Errors
    /// As [`AsyncJetStreamSpool::list_packets`].
    pub fn list_packets(&self) -> Result<Vec<SpoolMessage>, JsError> {
        self.rt.block_on(self.inner.list_packets())
    }

    /// [`AsyncJetStreamSpool::list_receipts`].
    ///
    /// # Errors
    /// As [`AsyncJetStreamSpool::list_receipts`].
    pub fn list_receipts(&self) -> Result<Vec<SpoolMessage>, JsError> {
        self.rt.block_on(self.inner.list_receipts())
    }

    /// [`AsyncJetStreamSpool::put_decision`].
    ///
    /// # Errors
    /// As [`AsyncJetStreamSpool::put_decision`].
    pub fn put_decision(&self, agent: &str, packet_id: &str, bytes: &[u8]) -> Result<u64, JsError> {
        self.rt.block_on(self.inner.put_decision(agent, packet_id, bytes))
    }

    /// [`AsyncJetStreamSpool::get_decision`].
    ///
    /// # Errors
    /// As [`AsyncJetStreamSpool::get_decision`].
    pub fn get_decision(&self, agent: &str, packet_id: &str) -> Result<Option<Decision>, JsError> {
        self.rt.block_on(self.inner.get_decision(agent, packet_id))
    }

    /// [`AsyncJetStreamSpool::wait_decision`].
    ///
    /// # Errors
    /// As [`AsyncJetStreamSpool::wait_decision`].
    pub fn wait_decision(&self, agent: &str, packet_id: &str, timeout: Duration) -> Result<Decision, JsError> {
        self.rt.block_on(self.inner.wait_decision(agent, packet_id, timeout))
    }
}

/// The chain's record lines as one byte stream (`canonical JSON\n` each, in order), read from
/// the store in parts of [`CHAIN_READ_PART`] records as the reader asks for them: what a
/// verifier over any reader ([`crate::protocol::chain::verify_reader`]) reads, holding one part
/// at a time, never the whole chain. The stream ends at the head the last part found.
#[derive(Debug)]
pub struct ChainReader<'a> {
    spool: &'a JetStreamSpool,
    next_seq: u64,
    buf: Vec<u8>,
    pos: usize,
    done: bool,
}

/// How many records a [`ChainReader`] reads from the store at a time.
pub const CHAIN_READ_PART: usize = 8192;

impl std::io::Read for ChainReader<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.pos == self.buf.len() && !self.done {
            let part = self.spool.read_chain_some(self.next_seq, CHAIN_READ_PART).map_err(std::io::Error::other)?;
            self.buf.clear();
            self.pos = 0;
            match part.last() {
                None => self.done = true,
                Some(last) => self.next_seq = last.seq + 1,
            }
            for e in part {
                self.buf.extend_from_slice(&e.line);
                self.buf.push(b'\n');
            }
        }
        let n = out.len().min(self.buf.len() - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

impl JetStreamSpool {
    /// The chain as a [`ChainReader`], from its first record.
    #[must_use]
    pub fn chain_reader(&self) -> ChainReader<'_> {
        ChainReader { spool: self, next_seq: 1, buf: Vec::new(), pos: 0, done: false }
    }
}

/// A live watch for synchronous code ([`JetStreamSpool::watch_chain`],
/// [`JetStreamSpool::watch_spool`]); the replica's follower turns its items into files. It must
/// not outlive its [`JetStreamSpool`].
#[derive(Debug)]
pub struct Watch<T> {
    rx: tokio::sync::mpsc::Receiver<Result<T, JsError>>,
    handle: tokio::runtime::Handle,
}

/// A live watch of the chain ([`JetStreamSpool::watch_chain`]).
pub type ChainWatch = Watch<ChainEntry>;

impl<T> Watch<T> {
    /// The next item, waiting at most `timeout`.
    ///
    /// # Errors
    /// [`JsError::Timeout`] when none arrived in time (the watch goes on); any other error ends
    /// the watch.
    pub fn next_timeout(&mut self, timeout: Duration) -> Result<T, JsError> {
        // One already waiting is taken without entering the runtime (a follower at 1,000
        // messages a second would otherwise block on the runtime for each).
        match self.rx.try_recv() {
            Ok(item) => return item,
            Err(tokio::sync::mpsc::error::TryRecvError::Disconnected) => {
                return Err(JsError::Runtime("the watch ended".into()));
            }
            Err(tokio::sync::mpsc::error::TryRecvError::Empty) => {}
        }
        let rx = &mut self.rx;
        match self.handle.block_on(async { tokio::time::timeout(timeout, rx.recv()).await }) {
            Ok(Some(item)) => item,
            Ok(None) => Err(JsError::Runtime("the watch ended".into())),
            Err(_) => Err(JsError::Timeout { what: "the next watched message".into(), after: timeout }),
        }
    }

    /// The next item, waiting as long as it takes (`None` once the watch has ended, after its
    /// last item, an error).
    pub fn next_blocking(&mut self) -> Option<Result<T, JsError>> {
        let rx = &mut self.rx;
        self.handle.block_on(rx.recv())
    }

    /// The receiver itself, for async code.
    #[must_use]
    pub fn into_receiver(self) -> tokio::sync::mpsc::Receiver<Result<T, JsError>> {
        self.rx
    }
}

impl From<JsError> for crate::store::StoreError {
    fn from(e: JsError) -> Self {
        match e {
            JsError::StaleHead { expected } => {
                crate::store::StoreError::Other(format!("stale head: the chain moved past subject sequence {expected}"))
            }
            other => crate::store::StoreError::Other(other.to_string()),
        }
    }
}

/// The chain on JetStream behind the store boundary ([`crate::store::ChainLog`]): each record
/// is published with `Nats-Expected-Last-Subject-Sequence` = the sequence of the head it links
/// to and `Nats-Msg-Id` = its `entry_hash` (`distributed-spool.md`), so a stale head is refused
/// by the server and a retried append is not stored twice. A group of records is appended
/// record by record, each one compare-and-set: another writer can stop a group part-way (the
/// records before the refusal stay, each linked and acknowledged).
impl crate::store::ChainLog for JetStreamSpool {
    fn location(&self) -> String {
        self.inner.url().to_string()
    }

    fn head(&self) -> Result<ChainHead, crate::store::StoreError> {
        Ok(chain_head_of(self.head()?.as_ref())?)
    }

    fn lines(&self) -> Result<Vec<Vec<u8>>, crate::store::StoreError> {
        Ok(self.read_chain()?.into_iter().map(|e| e.line).collect())
    }

    fn append_after(
        &self,
        expected: &ChainHead,
        records: Vec<serde_json::Map<String, Value>>,
    ) -> Result<Vec<crate::protocol::chain::Appended>, crate::store::StoreError> {
        use crate::store::StoreError;
        let tip = self.head()?;
        let found = chain_head_of(tip.as_ref())?;
        if &found != expected {
            return Err(StoreError::StaleHead { expected: expected.last_index, found: found.last_index });
        }
        let sealed = crate::store::seal_copies(expected, &records)?;
        let mut seq = tip.map(|t| t.seq);
        let mut out = Vec::with_capacity(sealed.len());
        for one in sealed {
            let line = canonical::to_canonical_vec(&one.record);
            match self.append_chain(seq, &line, &one.entry_hash) {
                Ok(ack) => seq = Some(ack.seq),
                Err(JsError::StaleHead { .. }) => {
                    let now = chain_head_of(self.head()?.as_ref())?;
                    return Err(StoreError::StaleHead { expected: one.chain_index - 1, found: now.last_index });
                }
                Err(e) => return Err(e.into()),
            }
            out.push(one);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_urls_parse() {
        let u: StoreUrl = "nats://127.0.0.1:4222,nats2.example:5222,[::1]:6222/main_spool-1".parse().expect("parses");
        assert!(!u.tls);
        assert_eq!(u.servers, vec![("127.0.0.1".into(), 4222), ("nats2.example".into(), 5222), ("::1".into(), 6222)]);
        assert_eq!(u.name, "main_spool-1");
        assert_eq!(u.server_addresses()[2], "nats://[::1]:6222");
        assert_eq!(u.to_string(), "nats://127.0.0.1:4222,nats2.example:5222,[::1]:6222/main_spool-1");
        let t: StoreUrl = "tls://host/x".parse().expect("parses");
        assert!(t.tls);
        assert_eq!(t.servers, vec![("host".into(), DEFAULT_PORT)]);
        assert_eq!(t.chain_subject(), "warrant.x.chain");
        assert_eq!(t.packet_subject("a1"), "warrant.x.packets.a1");
        assert_eq!(t.decisions_bucket(), "warrant_x_decisions");
    }

    #[test]
    fn malformed_store_urls_are_refused_with_the_reason() {
        let cases: &[(&str, UrlError)] = &[
            ("http://h:1/x", UrlError::Scheme("http".into())),
            ("h:1/x", UrlError::Scheme("h:1/x".into())),
            ("nats://h:1", UrlError::MissingName),
            ("nats://h:1/", UrlError::MissingName),
            ("nats://h:1/a.b", UrlError::BadName("a.b".into())),
            ("nats://h:1/a/b", UrlError::BadName("a/b".into())),
            ("nats://h:1/a*", UrlError::BadName("a*".into())),
            ("nats:///x", UrlError::NoServer),
            ("nats://h:1,,h:2/x", UrlError::NoServer),
            ("nats://h:0/x", UrlError::BadPort("0".into())),
            ("nats://h:65536/x", UrlError::BadPort("65536".into())),
            ("nats://h:+1/x", UrlError::BadPort("+1".into())),
            ("nats://h:/x", UrlError::BadPort(String::new())),
            ("nats://h_x:1/x", UrlError::BadHost("h_x".into())),
            ("nats://-h:1/x", UrlError::BadHost("-h".into())),
            ("nats://[zz]:1/x", UrlError::BadHost("[zz]:1".into())),
            ("nats://[::1]4222/x", UrlError::BadPort("4222".into())),
            ("nats://u:p@h:1/x", UrlError::CredentialsInUrl),
        ];
        for (url, want) in cases {
            assert_eq!(url.parse::<StoreUrl>().as_ref(), Err(want), "{url}");
        }
    }

    #[test]
    fn decision_keys_put_the_agent_first_and_refuse_subject_syntax() {
        assert_eq!(decision_key("agent-1", "p_2").expect("key"), "agent-1.p_2");
        for (a, p) in [("a.b", "p"), ("a", "p.q"), ("*", "p"), ("a", ">"), ("", "p"), ("a", "p q")] {
            assert!(matches!(decision_key(a, p), Err(JsError::BadToken { .. })), "{a} {p}");
        }
    }

    #[test]
    fn weaker_streams_are_named() {
        let url: StoreUrl = "nats://h/x".parse().expect("url");
        let want = stream::Config {
            name: url.chain_stream(),
            subjects: vec![url.chain_subject()],
            storage: StorageType::File,
            num_replicas: 3,
            deny_delete: true,
            deny_purge: true,
            duplicate_window: DUPLICATE_WINDOW,
            max_messages: -1,
            max_bytes: -1,
            max_messages_per_subject: -1,
            discard: DiscardPolicy::New,
            ..Default::default()
        };
        assert!(check_stream(&want, &want).is_ok());
        let weaker: Vec<(stream::Config, &str)> = vec![
            (stream::Config { deny_delete: false, ..want.clone() }, "deny_delete"),
            (stream::Config { deny_purge: false, ..want.clone() }, "deny_purge"),
            (stream::Config { allow_rollup: true, ..want.clone() }, "allow_rollup"),
            (stream::Config { storage: StorageType::Memory, ..want.clone() }, "memory"),
            (stream::Config { num_replicas: 1, ..want.clone() }, "replicas"),
            (stream::Config { max_age: Duration::from_secs(60), ..want.clone() }, "limit"),
            (stream::Config { max_messages: 10, ..want.clone() }, "limit"),
            (stream::Config { subjects: vec!["warrant.x.>".into()], ..want.clone() }, "subjects"),
            (stream::Config { duplicate_window: Duration::from_secs(1), ..want.clone() }, "duplicate window"),
        ];
        for (got, word) in weaker {
            match check_stream(&want, &got) {
                Err(JsError::WeakerStream { setting, .. }) => assert!(setting.contains(word), "{setting} vs {word}"),
                other => panic!("{word}: {other:?}"),
            }
        }
    }
}
