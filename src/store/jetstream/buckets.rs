//! The spool's KV buckets: decisions, written once by `AGENT.PACKET_ID` ([`decision_key`]), and
//! the claims of single uses ([`use_key`]).

use std::time::Duration;

use async_nats::jetstream::consumer::{DeliverPolicy, push};
use async_nats::jetstream::kv;
use futures_util::StreamExt;

use super::{AsyncJetStreamSpool, Decision, JsError, server, token};

impl AsyncJetStreamSpool {
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
