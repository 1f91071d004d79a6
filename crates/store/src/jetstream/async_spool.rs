//! The async JetStream spool ([`AsyncJetStreamSpool`]): its connection, and the chain's and the
//! packets' and receipts' streams: appends, publishes, reads and live watches.

use std::fmt;
use std::time::Duration;

use async_nats::HeaderMap;
use async_nats::header;
use async_nats::jetstream::ErrorCode;
use async_nats::jetstream::consumer::{DeliverPolicy, push};
use async_nats::jetstream::context::PublishErrorKind;
use async_nats::jetstream::stream;
use async_nats::jetstream::{self, Context};
use futures_util::StreamExt;

use super::{AppendAck, ChainEntry, JsError, Kind, PublishAck, Raw, SpoolMessage, StoreUrl, server, token};

/// The async JetStream spool: one connection, the streams' names, and the operations.
#[derive(Clone)]
pub struct AsyncJetStreamSpool {
    pub(super) url: StoreUrl,
    pub(super) js: Context,
    pub(super) client: async_nats::Client,
    pub(super) timeout: Duration,
    /// The permission violations the server reported on this connection ([`Self::unless_denied`]).
    pub(super) denials: tokio::sync::watch::Receiver<super::connect::Denial>,
    /// The decisions and uses buckets once opened (opening one asks the server for its
    /// stream's info: a round trip each put or claim saved).
    pub(super) buckets: std::sync::Arc<[tokio::sync::OnceCell<async_nats::jetstream::kv::Store>; 2]>,
}

impl fmt::Debug for AsyncJetStreamSpool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AsyncJetStreamSpool").field("url", &self.url.to_string()).finish_non_exhaustive()
    }
}

impl AsyncJetStreamSpool {
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

    /// Runs `fut`, unless the server reports a permission violation while it runs: the server
    /// answers a refused request with an asynchronous error and no reply, so the request would
    /// otherwise wait out the whole timeout (10 s) before failing.
    ///
    /// # Errors
    /// [`JsError::Denied`] with the server's message as soon as it arrives; otherwise `fut`'s.
    pub async fn unless_denied<T>(
        &self,
        fut: impl std::future::Future<Output = Result<T, JsError>>,
    ) -> Result<T, JsError> {
        let mut denials = self.denials.clone();
        denials.borrow_and_update();
        tokio::select! {
            biased;
            out = fut => out,
            Ok(()) = denials.changed() => Err(JsError::Denied(denials.borrow().message.clone())),
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
            Err(PublishFail::AtomicDisabled) => Err(JsError::AtomicDisabled(self.url.chain_stream())),
            Err(PublishFail::Other(e)) => Err(e),
        }
    }

    /// Appends several chain records, sealed one onto the other, as one JetStream atomic batch
    /// (ADR-50: `Nats-Batch-Id`, `Nats-Batch-Sequence` 1…n, `Nats-Batch-Commit: 1` on the last):
    /// all land, at subject sequences `expected + 1 ..= expected + n`, or none does. The first
    /// record carries the compare-and-set (`Nats-Expected-Last-Subject-Sequence`, as
    /// [`Self::append_chain`]), every one its `entry_hash` as `Nats-Msg-Id`. `records` are
    /// `(canonical line without newline, entry_hash)` in chain order, at most [`MAX_BATCH`]; one
    /// record is [`Self::append_chain`]. One round trip for the whole batch; the server syncs
    /// its file store on each commit (about three `fsync`s), which a single publish does not.
    ///
    /// # Errors
    /// [`JsError::StaleHead`] when the head has moved or a record of the batch is in the
    /// de-duplication window (nothing of the batch landed now; when the record right after
    /// `expected` is the batch's first, the batch had landed before and the answer is its last
    /// sequence with `duplicate: true`); [`JsError::AtomicDisabled`] when the chain stream does
    /// not allow atomic batches (one made before they were used: append the records one by
    /// one); [`JsError::Timeout`] when no acknowledgement came in time (the batch may have
    /// landed, whole); [`JsError::BadToken`] for an empty or oversized batch or a bad
    /// `entry_hash`; [`JsError::Server`] otherwise.
    pub async fn append_chain_batch(
        &self,
        expected: Option<u64>,
        records: &[(Vec<u8>, String)],
    ) -> Result<AppendAck, JsError> {
        let (first, last) = match records {
            [] => return Err(JsError::BadToken { what: "batch", value: "no records".into() }),
            [(line, hash)] => return self.append_chain(expected, line, hash).await,
            [first, .., last] => (first, last),
        };
        if records.len() > MAX_BATCH {
            return Err(JsError::BadToken {
                what: "batch",
                value: format!("{} records (at most {MAX_BATCH})", records.len()),
            });
        }
        for (_, hash) in records {
            if hash.is_empty() || hash.bytes().any(|b| b.is_ascii_whitespace() || b.is_ascii_control()) {
                return Err(JsError::BadToken { what: "entry_hash", value: hash.clone() });
            }
        }
        let expected = expected.unwrap_or(0);
        // Unique per attempt: the first record's hash names its head, and a batch is never sent
        // twice onto one head but as a retry of itself (a stale one is sealed again onto the
        // new head).
        let id: String = first.1.chars().filter(char::is_ascii_alphanumeric).rev().take(60).collect();
        let subject = self.url.chain_subject();
        let n = records.len();
        for (i, (line, hash)) in records[..n - 1].iter().enumerate() {
            let mut headers = batch_headers(&id, i + 1, hash);
            if i == 0 {
                headers.insert(header::NATS_EXPECTED_LAST_SUBJECT_SEQUENCE, expected.to_string().as_str());
            }
            self.client
                .publish_with_headers(subject.clone(), headers, line.clone().into())
                .await
                .map_err(server(format!("publish to {subject}")))?;
        }
        let mut headers = batch_headers(&id, n, &last.1);
        headers.insert(header::NATS_BATCH_COMMIT, "1");
        match self.publish(subject, headers, &last.0).await {
            Ok(ack) => Ok(AppendAck { seq: ack.sequence, duplicate: ack.duplicate }),
            Err(PublishFail::WrongLastSequence) => match self.entry_msg_id(expected + 1).await? {
                Some(id) if id == first.1 => Ok(AppendAck { seq: expected + n as u64, duplicate: true }),
                _ => Err(JsError::StaleHead { expected }),
            },
            Err(PublishFail::AtomicDisabled) => Err(JsError::AtomicDisabled(self.url.chain_stream())),
            Err(PublishFail::Other(e)) => Err(e),
        }
    }

    /// The `Nats-Msg-Id` of the chain record at `seq` (`None` when there is no record there).
    async fn entry_msg_id(&self, seq: u64) -> Result<Option<String>, JsError> {
        let stream = self.stream(&self.url.chain_stream()).await?;
        match while_electing(|| stream.get_raw_message(seq)).await {
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
                // A batch that landed before, sent again (its answer lost): its records' message
                // ids are within the de-duplication window, which a batch refuses with 10201
                // instead of answering `duplicate` (the caller looks whether it landed).
                PublishErrorKind::Other if server_code(&e) == Some(ErrorCode(ATOMIC_PUBLISH_DUPLICATE)) => {
                    PublishFail::WrongLastSequence
                }
                PublishErrorKind::Other if server_code(&e) == Some(ErrorCode(ATOMIC_PUBLISH_DISABLED)) => {
                    PublishFail::AtomicDisabled
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
        let subject = self.url.chain_subject();
        match while_electing(|| stream.get_last_raw_message_by_subject(&subject)).await {
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
        match while_electing(|| stream.get_raw_message(seq)).await {
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
    /// corruption). What a replica reads to catch up ([`crate::replica`]).
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
    pub(super) async fn read_all(&self, stream_name: &str, filter: String, from_seq: u64) -> Result<Vec<Raw>, JsError> {
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
        let pattern = if no_filter { ">".to_owned() } else { filter.clone() };
        // A short tail (a replica pulling what is new since its last command, usually nothing or
        // a few messages) is read message by message: no consumer to create, replicate and
        // delete, which took three round trips and a consensus round on a cluster.
        let last = stream.cached_info().state.last_sequence;
        if last < from_seq.max(1) || last - from_seq.max(1) < SHORT_TAIL {
            return read_by_sequence(&stream, &pattern, from_seq, limit).await;
        }
        if no_filter {
            filter = stream_name.to_owned();
        }
        let name = format!("warrant_read_{}", uuid::Uuid::new_v4().simple());
        let made = stream
            .create_consumer(push::OrderedConfig {
                name: Some(name.clone()),
                deliver_subject: self.client.new_inbox(),
                filter_subject: if no_filter { String::new() } else { filter.clone() },
                deliver_policy: deliver_from(from_seq),
                ..Default::default()
            })
            .await;
        let consumer = match made {
            Ok(c) => c,
            Err(e) if matches!(e.kind(), stream::ConsumerErrorKind::JetStream(j) if j.error_code() == ErrorCode::MAXIMUM_CONSUMERS_LIMIT) =>
            {
                tracing::warn!(stream = %stream_name, "the stream has all the consumers the server allows; reading message by message");
                return read_by_sequence(&stream, &pattern, from_seq, limit).await;
            }
            Err(e) => return Err(server(format!("read {filter}"))(e)),
        };
        let read = self.drain(consumer, &filter, limit).await;
        self.forget_consumer(stream_name, &name).await;
        read
    }

    /// Deletes the consumer `name` of `stream_name` once its read is over: the server would keep
    /// an ordered consumer 30 s after its last use, and reads would pile consumers up to the
    /// server's limit. The request is sent and flushed, its answer not awaited: an agent's
    /// permissions refuse it (the server then drops the consumer after those 30 s, as it does the
    /// consumer of a process killed mid-read), and waiting for an answer that never comes would
    /// hold up every read.
    pub(super) async fn forget_consumer(&self, stream_name: &str, name: &str) {
        let subject = format!("$JS.API.CONSUMER.DELETE.{stream_name}.{name}");
        let sent = self.client.publish(subject, Default::default()).await.map_err(|e| e.to_string());
        if let Err(e) = sent.and(self.client.flush().await.map_err(|e| e.to_string())) {
            tracing::debug!(consumer = %name, error = %e, "a read's consumer was not deleted; the server drops it in 30 s");
        }
    }

    /// The messages `consumer` delivers, up to the last one pending when it was made or `limit`.
    async fn drain(
        &self,
        consumer: async_nats::jetstream::consumer::Consumer<push::OrderedConfig>,
        filter: &str,
        limit: usize,
    ) -> Result<Vec<Raw>, JsError> {
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
    pub(super) async fn watch_raw(
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
            PublishFail::AtomicDisabled => {
                JsError::Server { op: "publish".into(), message: "atomic publish is disabled".into() }
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
}

/// How many messages [`read_by_sequence`] asks for at a time.
const GETS_IN_FLIGHT: usize = 64;

/// A read of at most this many messages goes message by message ([`read_by_sequence`]), not
/// through a consumer.
const SHORT_TAIL: u64 = 64;

/// The messages of `stream` on `filter` from `from_seq` to its last sequence when the read
/// started, at most `limit`, each fetched by its sequence (`STREAM.MSG.GET`, answered by the
/// stream's leader), [`GETS_IN_FLIGHT`] at a time: the read of [`AsyncJetStreamSpool::read_all`]
/// without a consumer, for a short tail ([`SHORT_TAIL`]) and for a stream whose consumers are at
/// the server's limit (agents may make consumers on the streams they read; a principal's read
/// must not depend on a free one). A sequence with no message (deleted from a bucket an earlier
/// version made, before `warrant init` hardened it) is passed over, as a consumer passes it
/// over; the chain's reader checks that its sequences follow each other.
async fn read_by_sequence(
    stream: &stream::Stream,
    filter: &str,
    from_seq: u64,
    limit: usize,
) -> Result<Vec<Raw>, JsError> {
    let last = stream.cached_info().state.last_sequence;
    let fetches = futures_util::stream::iter(from_seq.max(1)..=last)
        .map(|seq| async move {
            match while_electing(|| stream.get_raw_message(seq)).await {
                Ok(m) => Ok(Some(Raw {
                    seq,
                    subject: m.subject.to_string(),
                    msg_id: m.headers.get(header::NATS_MESSAGE_ID).map(|v| v.as_str().to_string()),
                    payload: m.payload.to_vec(),
                })),
                Err(e) if e.kind() == stream::LastRawMessageErrorKind::NoMessageFound => Ok(None),
                Err(e) => Err(server(format!("read {filter} at {seq}"))(e)),
            }
        })
        .buffered(GETS_IN_FLIGHT);
    let mut fetches = std::pin::pin!(fetches);
    let mut out = Vec::new();
    while out.len() < limit {
        match fetches.next().await {
            Some(m) => {
                if let Some(m) = m?.filter(|m| subject_matches(filter, &m.subject)) {
                    out.push(m);
                }
            }
            None => break,
        }
    }
    Ok(out)
}

/// Whether `subject` matches the subject filter `filter` (`*` one token, `>` the rest).
fn subject_matches(filter: &str, subject: &str) -> bool {
    let mut tokens = subject.split('.');
    for f in filter.split('.') {
        match (f, tokens.next()) {
            (">", Some(_)) => return true,
            ("*", Some(_)) => {}
            (f, Some(t)) if f == t => {}
            _ => return false,
        }
    }
    tokens.next().is_none()
}

/// How long a read is made again while a cluster recovers from a fault ([`again_while`]): an
/// election takes a few seconds after a leader is lost.
const ELECTION: Duration = Duration::from_secs(5);

/// `get()` (a read), made again while `recovering` says its error is a cluster's recovering
/// from a fault (a stream's leader being elected): after 50 ms, doubling to 500 ms, once at
/// least and then until [`ELECTION`] has passed since the first try (one that waited out a
/// request's timeout is made once more); any other answer is returned at once.
pub(super) async fn again_while<T, E, F, Fut>(recovering: impl Fn(&E) -> bool, mut get: F) -> Result<T, E>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, E>>,
{
    let deadline = tokio::time::Instant::now() + ELECTION;
    let mut pause = Duration::from_millis(50);
    let mut first = true;
    loop {
        match get().await {
            Err(e) if recovering(&e) && (first || tokio::time::Instant::now() + pause < deadline) => {
                first = false;
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_millis(500));
            }
            r => return r,
        }
    }
}

/// A direct get of one message made again while its stream's leader is elected
/// ([`again_while`], [`electing`]); a refused permission is not waited on.
async fn while_electing<T, F, Fut>(get: F) -> Result<T, stream::LastRawMessageError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, stream::LastRawMessageError>>,
{
    again_while(electing, get).await
}

/// Whether a direct get failed because the stream has no leader yet (503, or error code 10008).
fn electing(e: &stream::LastRawMessageError) -> bool {
    matches!(e.kind(), stream::LastRawMessageErrorKind::JetStream(j)
        if j.code() == 503 || j.error_code() == ErrorCode::CLUSTER_NOT_AVAILABLE)
}

/// The JetStream error code behind a client error, if the server sent one.
fn server_code(e: &(dyn std::error::Error + 'static)) -> Option<ErrorCode> {
    std::error::Error::source(e).and_then(|s| s.downcast_ref::<jetstream::Error>()).map(jetstream::Error::error_code)
}

enum PublishFail {
    WrongLastSequence,
    /// The stream does not allow atomic batches (server error 10174).
    AtomicDisabled,
    Other(JsError),
}

/// At most this many records in one atomic batch (the server's limit is 1,000 messages).
pub const MAX_BATCH: usize = 256;

/// nats-server's `JSAtomicPublishDisabledErr`: the stream does not allow atomic batches.
const ATOMIC_PUBLISH_DISABLED: u64 = 10174;

/// nats-server's `JSAtomicPublishContainsDuplicateMessageErr`: a message id of the batch is
/// within the stream's de-duplication window.
const ATOMIC_PUBLISH_DUPLICATE: u64 = 10201;

/// The headers of message `seq` (from 1) of atomic batch `id`, carrying `msg_id`.
fn batch_headers(id: &str, seq: usize, msg_id: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(header::NATS_BATCH_ID, id);
    headers.insert(header::NATS_BATCH_SEQUENCE, seq.to_string().as_str());
    headers.insert(header::NATS_MESSAGE_ID, msg_id);
    headers
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

#[cfg(test)]
mod tests {
    #[test]
    fn subject_filters_match_by_token() {
        use super::subject_matches as m;
        assert!(m("warrant.t.packets.*", "warrant.t.packets.agent-a"));
        assert!(!m("warrant.t.packets.*", "warrant.t.receipts.agent-a"));
        assert!(!m("warrant.t.packets.*", "warrant.t.packets.a.b"));
        assert!(m("warrant.t.>", "warrant.t.packets.a"));
        assert!(!m("warrant.t.>", "warrant.t"));
        assert!(m("warrant.t.chain", "warrant.t.chain") && !m("warrant.t.chain", "warrant.t.chain.x"));
    }
}
