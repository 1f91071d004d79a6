//! An agent's side of a spool as every store keeps it (the store boundary, beside
//! [`ChainLog`](super::ChainLog) for the chain): publishing a packet or a receipt once, listing
//! what was published, and reading the principal's decision file on a packet. The directory
//! spool keeps them as files (`packets/<id>.json`, `receipts/<id>.json`, `decisions/<id>.json`,
//! `docs/spool.md`); a JetStream store as messages on the agent's subject and keys of the
//! decisions bucket (`docs/distributed.md`). Both are held to one set of conformance checks
//! (`tests/support/spool_log.rs`).

use super::StoreError;
use super::spool::Spool;
use serde_json::Value;
use std::io;

/// Which of an agent's publications: a packet (an action it proposes) or a receipt (what it did).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Publication {
    /// A packet (`packets/`, `warrant.NAME.packets.AGENT`).
    Packet,
    /// A receipt (`receipts/`, `warrant.NAME.receipts.AGENT`).
    Receipt,
}

/// What an agent's side needs from a spool, on every store: publish a packet or receipt once,
/// list what was published, and read the decision file the principal wrote on a packet. Waiting
/// for that decision is the surfaces' (`govern::wait_for_decision` watches a directory's file and
/// the principal's signals; `govern::wait_for_store_decision` watches the bucket's key), and a
/// decision file is only ever trusted once it verifies against the pinned keys.
pub trait SpoolLog {
    /// Where the spool lives, for messages (a path or a URL).
    fn location(&self) -> String;

    /// Publishes `doc`, `agent`'s packet or receipt `id`, as its JSON text (pretty-printed, one
    /// trailing newline, the bytes every store keeps). Returns `true` when published, `false`
    /// when the same publication is there already (a retried publish: the same id with the same
    /// canonical content on a directory, the same content hash within the stream's de-duplication
    /// window on JetStream).
    ///
    /// # Errors
    /// [`StoreError::Other`] for an id or agent the store cannot name, another publication under
    /// the same id (a directory), and the store's I/O or server errors: never `Ok` unless the
    /// publication is durable.
    fn publish(&self, kind: Publication, agent: &str, id: &str, doc: &Value) -> Result<bool, StoreError>;

    /// Every publication of `kind`, as stored (bytes, unparsed: a malformed one is listed too, for
    /// the scanner to list as invalid), in the store's order (by file name on a directory, in
    /// stream order on JetStream).
    ///
    /// # Errors
    /// The store's I/O or server errors.
    fn publications(&self, kind: Publication) -> Result<Vec<Vec<u8>>, StoreError>;

    /// The decision file on `agent`'s packet `id` as stored, unverified; `None` when there is none.
    ///
    /// # Errors
    /// The store's I/O or server errors (never `None` for those).
    fn decision(&self, agent: &str, id: &str) -> Result<Option<Vec<u8>>, StoreError>;
}

/// The directory spool (and a replica of a JetStream store, whose [`Spool::publish_new`] sends a
/// publication to the store first).
impl SpoolLog for Spool {
    fn location(&self) -> String {
        self.root().display().to_string()
    }

    fn publish(&self, kind: Publication, _agent: &str, id: &str, doc: &Value) -> Result<bool, StoreError> {
        let dir = match kind {
            Publication::Packet => self.packets_dir(),
            Publication::Receipt => self.receipts_dir(),
        };
        let err =
            |e: &dyn std::fmt::Display| StoreError::Other(format!("{}: {e}", dir.join(format!("{id}.json")).display()));
        match self.publish_new(&dir, id, doc) {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                let there = super::spool::read_limited(&dir.join(format!("{id}.json"))).map_err(|e| err(&e))?;
                let same = warrant_protocol::canonical::parse_untrusted(&there).is_ok_and(|v| {
                    warrant_protocol::canonical::canonical_hash(&v) == warrant_protocol::canonical::canonical_hash(doc)
                });
                if same { Ok(false) } else { Err(err(&"already exists, holding another publication")) }
            }
            Err(e) => Err(err(&e)),
        }
    }

    fn publications(&self, kind: Publication) -> Result<Vec<Vec<u8>>, StoreError> {
        let dir = match kind {
            Publication::Packet => self.packets_dir(),
            Publication::Receipt => self.receipts_dir(),
        };
        let err = |e: &dyn std::fmt::Display| StoreError::Other(format!("{}: {e}", dir.display()));
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(err(&e)),
        };
        let mut names = Vec::new();
        for entry in entries {
            let name = entry.map_err(|e| err(&e))?.file_name().to_string_lossy().into_owned();
            // Temporary files of a publication under way are dot-files (`Spool::publish`).
            if super::spool::is_publication(&name) {
                names.push(name);
            }
        }
        names.sort();
        names.iter().map(|n| super::spool::read_limited(&dir.join(n)).map_err(|e| err(&e))).collect()
    }

    fn decision(&self, _agent: &str, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let path = self.decision_path(id);
        match std::fs::symlink_metadata(&path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            _ => super::spool::read_limited(&path)
                .map(Some)
                .map_err(|e| StoreError::Other(format!("{}: {e}", path.display()))),
        }
    }
}

/// A JetStream store: publications are messages on the agent's subject with `Nats-Msg-Id` = the
/// content hash; decision files are keys `AGENT.PACKET_ID` of the decisions bucket.
#[cfg(feature = "jetstream")]
impl SpoolLog for super::jetstream::JetStreamSpool {
    fn location(&self) -> String {
        self.inner().url().to_string()
    }

    fn publish(&self, kind: Publication, agent: &str, id: &str, doc: &Value) -> Result<bool, StoreError> {
        let err = |e: &dyn std::fmt::Display| StoreError::Other(format!("{}: {e}", self.inner().url()));
        if !super::jetstream::is_token(id) {
            return Err(err(&format!("packet or receipt id {id:?} is no subject token")));
        }
        let mut bytes = serde_json::to_vec_pretty(doc).map_err(|e| err(&e))?;
        bytes.push(b'\n');
        let hash = warrant_protocol::canonical::canonical_hash(doc);
        let ack = match kind {
            Publication::Packet => self.publish_packet(agent, &bytes, &hash),
            Publication::Receipt => self.publish_receipt(agent, &bytes, &hash),
        }
        .map_err(|e| err(&e))?;
        Ok(!ack.duplicate)
    }

    fn publications(&self, kind: Publication) -> Result<Vec<Vec<u8>>, StoreError> {
        let listed = match kind {
            Publication::Packet => self.list_packets(),
            Publication::Receipt => self.list_receipts(),
        };
        Ok(listed
            .map_err(|e| StoreError::Other(format!("{}: {e}", self.inner().url())))?
            .into_iter()
            .map(|m| m.bytes)
            .collect())
    }

    fn decision(&self, agent: &str, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.get_decision(agent, id)
            .map(|d| d.map(|d| d.bytes))
            .map_err(|e| StoreError::Other(format!("{}: {e}", self.inner().url())))
    }
}
