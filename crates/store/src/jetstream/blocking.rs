//! The blocking facade for the synchronous CLI ([`JetStreamSpool`], its [`ChainReader`] and
//! [`Watch`]), and the chain on JetStream behind the store boundary ([`crate::ChainLog`]).

use std::fmt;
use std::time::Duration;

use serde_json::Value;

use warrant_protocol::canonical;
use warrant_protocol::chain::ChainHead;

use super::{
    AppendAck, AsyncJetStreamSpool, ChainEntry, ConnectOptions, Decision, JsError, Kind, PublishAck, SetupOptions,
    SpoolMessage, StoreUrl, chain_head_of,
};

/// The blocking facade of [`AsyncJetStreamSpool`] for the synchronous CLI: it owns a small
/// tokio runtime (one worker thread) and blocks on each call.
pub struct JetStreamSpool {
    pub(super) rt: tokio::runtime::Runtime,
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

    /// Blocks on `fut`, ending it as soon as the server refuses a request of this user
    /// ([`AsyncJetStreamSpool::unless_denied`]).
    fn run<T>(&self, fut: impl std::future::Future<Output = Result<T, JsError>>) -> Result<T, JsError> {
        self.rt.block_on(self.inner.unless_denied(fut))
    }

    /// [`AsyncJetStreamSpool::setup`].
    ///
    /// # Errors
    /// As [`AsyncJetStreamSpool::setup`].
    pub fn setup(&self, opts: SetupOptions) -> Result<(), JsError> {
        self.run(self.inner.setup(opts))
    }

    /// [`AsyncJetStreamSpool::check_exists`].
    ///
    /// # Errors
    /// As [`AsyncJetStreamSpool::check_exists`].
    pub fn check_exists(&self) -> Result<(), JsError> {
        self.run(self.inner.check_exists())
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
        self.run(self.inner.append_chain(expected, record_line, entry_hash))
    }

    /// [`AsyncJetStreamSpool::append_chain_batch`].
    ///
    /// # Errors
    /// As [`AsyncJetStreamSpool::append_chain_batch`].
    pub fn append_chain_batch(
        &self,
        expected: Option<u64>,
        records: &[(Vec<u8>, String)],
    ) -> Result<AppendAck, JsError> {
        self.run(self.inner.append_chain_batch(expected, records))
    }

    /// [`AsyncJetStreamSpool::head`].
    ///
    /// # Errors
    /// As [`AsyncJetStreamSpool::head`].
    pub fn head(&self) -> Result<Option<ChainEntry>, JsError> {
        self.run(self.inner.head())
    }

    /// [`AsyncJetStreamSpool::entry`].
    ///
    /// # Errors
    /// As [`AsyncJetStreamSpool::entry`].
    pub fn entry(&self, seq: u64) -> Result<Option<ChainEntry>, JsError> {
        self.run(self.inner.entry(seq))
    }

    /// [`AsyncJetStreamSpool::read_chain`].
    ///
    /// # Errors
    /// As [`AsyncJetStreamSpool::read_chain`].
    pub fn read_chain(&self) -> Result<Vec<ChainEntry>, JsError> {
        self.run(self.inner.read_chain())
    }

    /// [`AsyncJetStreamSpool::read_chain_from`].
    ///
    /// # Errors
    /// As [`AsyncJetStreamSpool::read_chain_from`].
    pub fn read_chain_from(&self, from_seq: u64) -> Result<Vec<ChainEntry>, JsError> {
        self.run(self.inner.read_chain_from(from_seq))
    }

    /// [`AsyncJetStreamSpool::read_chain_some`].
    ///
    /// # Errors
    /// As [`AsyncJetStreamSpool::read_chain_some`].
    pub fn read_chain_some(&self, from_seq: u64, limit: usize) -> Result<Vec<ChainEntry>, JsError> {
        self.run(self.inner.read_chain_some(from_seq, limit))
    }

    /// [`AsyncJetStreamSpool::read_spool_from`].
    ///
    /// # Errors
    /// As [`AsyncJetStreamSpool::read_spool_from`].
    pub fn read_spool_from(&self, from_seq: u64) -> Result<Vec<(Kind, SpoolMessage)>, JsError> {
        self.run(self.inner.read_spool_from(from_seq))
    }

    /// [`AsyncJetStreamSpool::claim_use`].
    ///
    /// # Errors
    /// As [`AsyncJetStreamSpool::claim_use`].
    pub fn claim_use(&self, name: &str, bytes: &[u8]) -> Result<bool, JsError> {
        self.run(self.inner.claim_use(name, bytes))
    }

    /// [`AsyncJetStreamSpool::read_uses_from`].
    ///
    /// # Errors
    /// As [`AsyncJetStreamSpool::read_uses_from`].
    pub fn read_uses_from(&self, from_seq: u64) -> Result<Vec<(u64, String, Vec<u8>)>, JsError> {
        self.run(self.inner.read_uses_from(from_seq))
    }

    /// [`AsyncJetStreamSpool::watch_uses`], as a blocking [`Watch`].
    ///
    /// # Errors
    /// As [`AsyncJetStreamSpool::watch_uses`].
    pub fn watch_uses(&self, from_seq: u64) -> Result<Watch<(u64, String, Vec<u8>)>, JsError> {
        let rx = self.run(self.inner.watch_uses(from_seq))?;
        Ok(Watch { rx, handle: self.rt.handle().clone() })
    }

    /// [`AsyncJetStreamSpool::watch_spool`], as a blocking [`Watch`].
    ///
    /// # Errors
    /// As [`AsyncJetStreamSpool::watch_spool`].
    pub fn watch_spool(&self, from_seq: u64) -> Result<Watch<(Kind, SpoolMessage)>, JsError> {
        let rx = self.run(self.inner.watch_spool(from_seq))?;
        Ok(Watch { rx, handle: self.rt.handle().clone() })
    }

    /// [`AsyncJetStreamSpool::watch_chain`], as a blocking [`ChainWatch`].
    ///
    /// # Errors
    /// As [`AsyncJetStreamSpool::watch_chain`].
    pub fn watch_chain(&self, from_seq: u64) -> Result<ChainWatch, JsError> {
        let rx = self.run(self.inner.watch_chain(from_seq))?;
        Ok(Watch { rx, handle: self.rt.handle().clone() })
    }

    /// [`AsyncJetStreamSpool::publish_packet`].
    ///
    /// # Errors
    /// As [`AsyncJetStreamSpool::publish_packet`].
    pub fn publish_packet(&self, agent: &str, bytes: &[u8], content_hash: &str) -> Result<PublishAck, JsError> {
        self.run(self.inner.publish_packet(agent, bytes, content_hash))
    }

    /// [`AsyncJetStreamSpool::publish_receipt`].
    ///
    /// # Errors
    /// As [`AsyncJetStreamSpool::publish_receipt`].
    pub fn publish_receipt(&self, agent: &str, bytes: &[u8], content_hash: &str) -> Result<PublishAck, JsError> {
        self.run(self.inner.publish_receipt(agent, bytes, content_hash))
    }

    /// [`AsyncJetStreamSpool::list_packets`].
    ///
    /// # Errors
    /// As [`AsyncJetStreamSpool::list_packets`].
    pub fn list_packets(&self) -> Result<Vec<SpoolMessage>, JsError> {
        self.run(self.inner.list_packets())
    }

    /// [`AsyncJetStreamSpool::list_receipts`].
    ///
    /// # Errors
    /// As [`AsyncJetStreamSpool::list_receipts`].
    pub fn list_receipts(&self) -> Result<Vec<SpoolMessage>, JsError> {
        self.run(self.inner.list_receipts())
    }

    /// [`AsyncJetStreamSpool::put_decision`].
    ///
    /// # Errors
    /// As [`AsyncJetStreamSpool::put_decision`].
    pub fn put_decision(&self, agent: &str, packet_id: &str, bytes: &[u8]) -> Result<u64, JsError> {
        self.run(self.inner.put_decision(agent, packet_id, bytes))
    }

    /// [`AsyncJetStreamSpool::get_decision`].
    ///
    /// # Errors
    /// As [`AsyncJetStreamSpool::get_decision`].
    pub fn get_decision(&self, agent: &str, packet_id: &str) -> Result<Option<Decision>, JsError> {
        self.run(self.inner.get_decision(agent, packet_id))
    }

    /// [`AsyncJetStreamSpool::wait_decision`].
    ///
    /// # Errors
    /// As [`AsyncJetStreamSpool::wait_decision`].
    pub fn wait_decision(&self, agent: &str, packet_id: &str, timeout: Duration) -> Result<Decision, JsError> {
        self.run(self.inner.wait_decision(agent, packet_id, timeout))
    }

    /// [`AsyncJetStreamSpool::wait_decision_or_signal`].
    ///
    /// # Errors
    /// As [`AsyncJetStreamSpool::wait_decision_or_signal`].
    pub fn wait_decision_or_signal(
        &self,
        agent: &str,
        packet_id: &str,
        timeout: Duration,
        applies: impl FnMut(&[u8]) -> bool,
    ) -> Result<super::Awaited, JsError> {
        self.run(self.inner.wait_decision_or_signal(agent, packet_id, timeout, applies))
    }

    /// [`AsyncJetStreamSpool::put_signal`].
    ///
    /// # Errors
    /// As [`AsyncJetStreamSpool::put_signal`].
    pub fn put_signal(&self, agent: &str, bytes: &[u8]) -> Result<u64, JsError> {
        self.run(self.inner.put_signal(agent, bytes))
    }
}

/// The chain's record lines as one byte stream (`canonical JSON\n` each, in order), read from
/// the store in parts of [`CHAIN_READ_PART`] records as the reader asks for them: what a
/// verifier over any reader ([`warrant_protocol::chain::verify_reader`]) reads, holding one part
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

impl From<JsError> for crate::StoreError {
    fn from(e: JsError) -> Self {
        match e {
            JsError::StaleHead { expected } => {
                crate::StoreError::Other(format!("stale head: the chain moved past subject sequence {expected}"))
            }
            other => crate::StoreError::Other(other.to_string()),
        }
    }
}

/// The chain on JetStream behind the store boundary ([`crate::ChainLog`]): each record
/// is published with `Nats-Expected-Last-Subject-Sequence` = the sequence of the head it links
/// to and `Nats-Msg-Id` = its `entry_hash` (`distributed-spool.md`), so a stale head is refused
/// by the server and a retried append is not stored twice. A group of records is appended
/// record by record, each one compare-and-set: another writer can stop a group part-way (the
/// records before the refusal stay, each linked and acknowledged).
impl crate::ChainLog for JetStreamSpool {
    fn location(&self) -> String {
        self.inner.url().to_string()
    }

    fn head(&self) -> Result<ChainHead, crate::StoreError> {
        Ok(chain_head_of(self.head()?.as_ref())?)
    }

    fn lines(&self) -> Result<Vec<Vec<u8>>, crate::StoreError> {
        Ok(self.read_chain()?.into_iter().map(|e| e.line).collect())
    }

    fn append_after(
        &self,
        expected: &ChainHead,
        records: Vec<serde_json::Map<String, Value>>,
    ) -> Result<Vec<warrant_protocol::chain::Appended>, crate::StoreError> {
        use crate::StoreError;
        let tip = self.head()?;
        let found = chain_head_of(tip.as_ref())?;
        if &found != expected {
            return Err(StoreError::StaleHead { expected: expected.last_index, found: found.last_index });
        }
        self.append_sealed(tip.map(|t| t.seq), expected, records)
    }
}

impl JetStreamSpool {
    /// [`crate::ChainLog::append_after`] without reading the store's head first, for a caller
    /// that has just found, under the chain's lock, the store's record at `expected`'s index to be
    /// `expected`'s record (a replica's catch-up, `chain_file::catch_up`): the chain's records
    /// are their subject's sequences 1, 2, … (a catch-up checks it), and the stream refuses
    /// deletes, so the compare-and-set on sequence `expected.last_index` alone refuses an append
    /// onto any other head. Saves two round trips (the stream's information and the head's
    /// record) of every decision a replica signs.
    ///
    /// # Errors
    /// As [`crate::ChainLog::append_after`].
    pub fn append_onto_checked(
        &self,
        expected: &ChainHead,
        records: Vec<serde_json::Map<String, Value>>,
    ) -> Result<Vec<warrant_protocol::chain::Appended>, crate::StoreError> {
        self.append_sealed((expected.last_index > 0).then_some(expected.last_index), expected, records)
    }

    /// Seals `records` onto `expected` and appends them from subject sequence `seq` (`None`: an
    /// empty chain): as one atomic batch when there are several and the stream allows it
    /// ([`AsyncJetStreamSpool::append_chain_batch`], one round trip, all or nothing), otherwise
    /// one by one with compare-and-set.
    fn append_sealed(
        &self,
        seq: Option<u64>,
        expected: &ChainHead,
        records: Vec<serde_json::Map<String, Value>>,
    ) -> Result<Vec<warrant_protocol::chain::Appended>, crate::StoreError> {
        let sealed = crate::seal_copies(expected, &records)?;
        let lines: Vec<(Vec<u8>, String)> =
            sealed.iter().map(|one| (canonical::to_canonical_vec(&one.record), one.entry_hash.clone())).collect();
        let mut at = seq;
        for part in lines.chunks(super::MAX_BATCH) {
            let ack = match self.run(self.inner.append_chain_batch(at, part)) {
                Err(JsError::AtomicDisabled(_)) => {
                    for (line, hash) in part {
                        at = Some(self.stale_as_found(at, self.append_chain(at, line, hash))?.seq);
                    }
                    continue;
                }
                other => self.stale_as_found(at, other)?,
            };
            at = Some(ack.seq);
        }
        Ok(sealed)
    }

    /// An append's answer, a stale head reported with the head the store has now.
    fn stale_as_found(&self, at: Option<u64>, r: Result<AppendAck, JsError>) -> Result<AppendAck, crate::StoreError> {
        match r {
            Err(JsError::StaleHead { .. }) => {
                let now = chain_head_of(self.head()?.as_ref())?;
                Err(crate::StoreError::StaleHead { expected: at.unwrap_or(0), found: now.last_index })
            }
            other => Ok(other?),
        }
    }
}
