//! The spool's KV buckets: decisions, written once by `AGENT.PACKET_ID` ([`decision_key`]), and
//! the claims of single uses ([`use_key`]).

use std::time::Duration;

use async_nats::jetstream::consumer::{DeliverPolicy, push};
use async_nats::jetstream::kv;
use futures_util::StreamExt;

use super::{AsyncJetStreamSpool, Decision, JsError, server, token};

impl AsyncJetStreamSpool {
    async fn decisions(&self) -> Result<kv::Store, JsError> {
        self.bucket(0, self.url.decisions_bucket()).await
    }

    /// The KV bucket `bucket` (cached in slot `slot` once opened). Opening asks the server for
    /// the bucket's stream; a request that goes unanswered or is answered 503 (a cluster
    /// electing the stream's leader after a fault) is made again as a direct get is
    /// ([`super::async_spool::again_while`]), unless the server reported a refused permission
    /// meanwhile. Seen in the fault test: the principal's first read after a follower resumed
    /// timed out.
    async fn bucket(&self, slot: usize, bucket: String) -> Result<kv::Store, JsError> {
        let open = || async {
            let mut denials = self.denials.clone();
            denials.borrow_and_update();
            let recovering = |e: &_| recovering(e) && !denials.has_changed().unwrap_or(true);
            super::async_spool::again_while(recovering, || self.js.get_key_value(&bucket))
                .await
                .map_err(server(format!("open bucket {bucket}")))
        };
        self.buckets[slot].get_or_try_init(open).await.cloned()
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
    /// just before the watch). A watch that fails (a missed heartbeat during a leader
    /// election, a server restarting) is made again, until `timeout`.
    ///
    /// # Errors
    /// [`JsError::Timeout`] when none came within `timeout`; [`JsError::BadToken`].
    pub async fn wait_decision(&self, agent: &str, packet_id: &str, timeout: Duration) -> Result<Decision, JsError> {
        let key = decision_key(agent, packet_id)?;
        self.watch_keys(std::slice::from_ref(&key), timeout, |_, d| Some(d)).await
    }

    /// Waits for the decision on `agent`'s packet `packet_id`, or for a signal of the principal
    /// to `agent` ([`put_signal`](Self::put_signal)) that `applies` accepts, whichever comes
    /// first: two watches of one key each, which first deliver what is there already, made
    /// again when they fail, as in [`wait_decision`](Self::wait_decision). A signal `applies`
    /// refuses (a release, an older stop) is passed over and the wait goes on.
    ///
    /// # Errors
    /// [`JsError::Timeout`] when neither came within `timeout`; [`JsError::BadToken`].
    pub async fn wait_decision_or_signal(
        &self,
        agent: &str,
        packet_id: &str,
        timeout: Duration,
        mut applies: impl FnMut(&[u8]) -> bool,
    ) -> Result<Awaited, JsError> {
        let key = decision_key(agent, packet_id)?;
        let signal = signal_key(agent)?;
        let keys = [key.clone(), signal];
        self.watch_keys(&keys, timeout, |i, d| match i {
            0 => Some(Awaited::Decision(d)),
            _ => applies(&d.bytes).then_some(Awaited::Signal(d.bytes)),
        })
        .await
    }

    /// Watches the decisions bucket's `keys` (each delivering its value there first) until
    /// `accept` takes a value (`accept(index of the key, value)`). When a watch fails or ends
    /// (the ordered consumer missed its heartbeats while the stream's leader moved, the server
    /// restarted, the bucket could not be opened), every watch is made again half a second
    /// later: a value put meanwhile is delivered then, as the value there first. The wait ends
    /// after `timeout` ([`JsError::Timeout`], naming the first key); a permission the server
    /// refuses ends it at once ([`unless_denied`](Self::unless_denied)). The watches' consumers
    /// are deleted when it ends.
    async fn watch_keys<R>(
        &self,
        keys: &[String],
        timeout: Duration,
        mut accept: impl FnMut(usize, Decision) -> Option<R>,
    ) -> Result<R, JsError> {
        let stream = format!("KV_{}", self.url.decisions_bucket());
        let deadline = tokio::time::Instant::now() + timeout;
        let ran_out = || JsError::Timeout { what: format!("the decision {}", keys[0]), after: timeout };
        loop {
            // Named here, so that they are deleted when the wait ends, however it ends (the
            // server would keep each 30 s after, and every wait would leave two).
            let names: Vec<String> =
                keys.iter().map(|_| format!("warrant_wait_{}", uuid::Uuid::new_v4().simple())).collect();
            let attempt = async {
                let store = self.decisions().await?;
                let mut watches = Vec::with_capacity(keys.len());
                for (i, (key, name)) in keys.iter().zip(&names).enumerate() {
                    watches.push(self.watch_key(&store, key, name.clone()).await?.map(move |e| (i, e)).boxed());
                }
                let mut all = futures_util::stream::select_all(watches);
                while let Some((i, entry)) = all.next().await {
                    if let Some(found) = entry?.and_then(|d| accept(i, d)) {
                        return Ok(found);
                    }
                }
                Err(JsError::Server { op: format!("watch {}", keys.join(", ")), message: "the watch ended".into() })
            };
            let result = tokio::time::timeout_at(deadline, attempt).await;
            for name in &names {
                self.forget_consumer(&stream, name).await;
            }
            match result {
                Ok(Ok(found)) => return Ok(found),
                Err(_) => return Err(ran_out()),
                Ok(Err(e @ JsError::Denied(_))) => return Err(e),
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "a decision's watch failed; watching again");
                    if tokio::time::timeout_at(deadline, tokio::time::sleep(Duration::from_millis(500))).await.is_err()
                    {
                        return Err(ran_out());
                    }
                }
            }
        }
    }

    /// The values of the bucket's `key` as they are put, the one there first: `Some` for a
    /// value, `None` for a delete or purge.
    async fn watch_key(
        &self,
        store: &kv::Store,
        key: &str,
        name: String,
    ) -> Result<impl futures_util::Stream<Item = Result<Option<Decision>, JsError>> + use<>, JsError> {
        let subject = format!("{}{key}", store.prefix);
        let op = format!("watch {key}");
        // An ordered consumer of the one key, named so that its create request names the key's
        // subject (`$JS.API.CONSUMER.CREATE.KV_….NAME.$KV.….AGENT.PACKET_ID`), which a server
        // permission can grant per agent (docs/distributed.md); the KV watch of async-nats
        // creates unnamed consumers, whose request names no subject.
        let consumer = store
            .stream
            .create_consumer(push::OrderedConfig {
                name: Some(name),
                deliver_subject: self.client.new_inbox(),
                filter_subject: subject,
                deliver_policy: DeliverPolicy::LastPerSubject,
                ..Default::default()
            })
            .await
            .map_err(server(op.clone()))?;
        let messages = consumer.messages().await.map_err(server(op.clone()))?;
        Ok(messages.map(move |m| {
            let m = m.map_err(server(op.clone()))?;
            let deleted = m.message.headers.as_ref().and_then(|h| h.get("KV-Operation")).is_some();
            if deleted {
                return Ok(None);
            }
            let info = m.info().map_err(server(op.clone()))?;
            Ok(Some(Decision { revision: info.stream_sequence, bytes: m.message.payload.to_vec() }))
        }))
    }

    /// Puts the principal's signal to `agent` (`{"type": "warrant_stop" | "warrant_quarantine"
    /// | "warrant_release", "agent", "reason", "at"}`, as in `signals/<agent>.json`) under
    /// [`signal_key`], replacing the one before: a waiting agent sees it
    /// ([`wait_decision_or_signal`](Self::wait_decision_or_signal)). Returns the revision.
    ///
    /// # Errors
    /// [`JsError::BadToken`] for an agent id that is not `[A-Za-z0-9_-]+`; [`JsError::Server`].
    pub async fn put_signal(&self, agent: &str, bytes: &[u8]) -> Result<u64, JsError> {
        let key = signal_key(agent)?;
        let store = self.decisions().await?;
        store.put(&key, bytes.to_vec().into()).await.map_err(server(format!("write signal {key}")))
    }
}

/// What came first while waiting on a packet ([`AsyncJetStreamSpool::wait_decision_or_signal`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Awaited {
    /// The decision file on the packet, as stored (unverified).
    Decision(Decision),
    /// A signal of the principal to the agent, as stored (unverified), that the caller accepted.
    Signal(Vec<u8>),
}

/// The key of `agent`'s signal in the decisions bucket: `AGENT.signal.latest`. It has three
/// tokens, so it is never a decision's `AGENT.PACKET_ID` (a packet id is one token), and it is
/// among the agent's own keys (`AGENT.>`), which the documented permissions let it watch.
///
/// # Errors
/// [`JsError::BadToken`] for an agent id that is not `[A-Za-z0-9_-]+`.
pub fn signal_key(agent: &str) -> Result<String, JsError> {
    token("agent", agent)?;
    Ok(format!("{agent}.signal.latest"))
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
        let store = self.bucket(1, bucket).await?;
        match store.create(use_key(name), bytes.to_vec().into()).await {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == kv::CreateErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(server(format!("claim {name}"))(e)),
        }
    }

    /// The claims from the uses bucket's stream sequence `from_seq` on, in order, up to the last
    /// one when the read started: `(sequence, name, bytes)`.
    ///
    /// A key that is not a claim's name (an agent may create any key it can spell) is skipped
    /// with a warning: it claims nothing, and it stops nothing.
    ///
    /// # Errors
    /// As [`read_chain`](Self::read_chain).
    pub async fn read_uses_from(&self, from_seq: u64) -> Result<Vec<(u64, String, Vec<u8>)>, JsError> {
        let stream = format!("KV_{}", self.url.uses_bucket());
        let raw = self.read_all(&stream, String::new(), from_seq.max(1)).await?;
        Ok(raw.into_iter().filter_map(|r| claim_of(r.seq, &r.subject, r.payload)).collect())
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
                let item = match item {
                    Ok(r) => match claim_of(r.seq, &r.subject, r.payload) {
                        Some(claim) => Ok(claim),
                        None => continue,
                    },
                    Err(e) => Err(e),
                };
                let end = item.is_err();
                if tx.send(item).await.is_err() || end {
                    return;
                }
            }
        });
        Ok(rx)
    }
}

/// The claim a uses bucket message on `subject` holds, or `None` (with a warning) for a key that
/// is not a claim's name ([`use_name`]) or a name that is no claim file's.
fn claim_of(seq: u64, subject: &str, payload: Vec<u8>) -> Option<(u64, String, Vec<u8>)> {
    let key = subject.rsplit('.').next().unwrap_or_default();
    let name = use_name(key).filter(|n| is_claim_name(n));
    if name.is_none() {
        tracing::warn!(seq, key = %warrant_protocol::text::inert(key, 200), "uses bucket: skipped a key that is no claim's name");
    }
    Some((seq, name?, payload))
}

/// Whether `name` can be a claim's file name in `uses/`: `<kind>+<ids>.use`, one path component,
/// not hidden.
#[must_use]
pub fn is_claim_name(name: &str) -> bool {
    !name.contains('/') && !name.starts_with('.') && name.ends_with(".use") && name.contains('+') && name.len() <= 255
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

/// Whether opening a bucket failed as a recovering cluster makes requests fail: no answer in
/// time (or no responder), or 503 "JetStream system temporarily unavailable".
fn recovering(e: &async_nats::jetstream::context::KeyValueError) -> bool {
    use async_nats::jetstream::context::{GetStreamError, GetStreamErrorKind, KeyValueErrorKind};
    if e.kind() != KeyValueErrorKind::GetBucket {
        return false;
    }
    let cause = std::error::Error::source(e).and_then(|s| s.downcast_ref::<GetStreamError>());
    match cause.map(GetStreamError::kind) {
        Some(GetStreamErrorKind::Request) => true,
        Some(GetStreamErrorKind::JetStream(j)) => {
            j.code() == 503 || j.error_code() == async_nats::jetstream::ErrorCode::CLUSTER_NOT_AVAILABLE
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decision_keys_put_the_agent_first_and_refuse_subject_syntax() {
        assert_eq!(decision_key("agent-1", "p_2").expect("key"), "agent-1.p_2");
        for (a, p) in [("a.b", "p"), ("a", "p.q"), ("*", "p"), ("a", ">"), ("", "p"), ("a", "p q")] {
            assert!(matches!(decision_key(a, p), Err(JsError::BadToken { .. })), "{a} {p}");
        }
    }
}
