//! Setting a spool up: creating its streams and buckets, or checking that those that exist keep
//! every message ([`AsyncJetStreamSpool::setup`], [`JsError::WeakerStream`]).

use std::time::Duration;

use async_nats::jetstream::ErrorCode;
use async_nats::jetstream::context::GetStreamErrorKind;
use async_nats::jetstream::kv;
use async_nats::jetstream::stream::{self, DiscardPolicy, RetentionPolicy, StorageType};

use super::{AsyncJetStreamSpool, DUPLICATE_WINDOW, JsError, server};

/// How the streams and the bucket are created by [`AsyncJetStreamSpool::setup`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetupOptions {
    /// Replicas of each stream and of the bucket: 1 (one server) or 3 (a three-node cluster).
    pub replicas: usize,
}

/// How long [`AsyncJetStreamSpool::setup`] keeps trying a replicated store's setup while a new
/// cluster settles.
pub const SETUP_SETTLE: std::time::Duration = std::time::Duration::from_secs(30);

impl Default for SetupOptions {
    fn default() -> Self {
        SetupOptions { replicas: 1 }
    }
}

impl AsyncJetStreamSpool {
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
    /// [`JsError::Server`] when the server refuses or does not answer. A replicated store's
    /// request that times out or finds no peers to place it on is tried again for up to
    /// [`SETUP_SETTLE`]: a cluster just started answers nothing while it elects its meta leader
    /// and places nothing until every peer has joined (setting up again is harmless: what exists
    /// is kept).
    pub async fn setup(&self, opts: SetupOptions) -> Result<(), JsError> {
        let deadline = tokio::time::Instant::now() + SETUP_SETTLE;
        loop {
            match self.setup_once(opts).await {
                Err(e)
                    if opts.replicas > 1
                        && tokio::time::Instant::now() < deadline
                        && ["timed out", "no suitable peers"].iter().any(|m| e.to_string().contains(m)) =>
                {
                    tokio::time::sleep(std::time::Duration::from_millis(250)).await;
                }
                done => return done,
            }
        }
    }

    async fn setup_once(&self, opts: SetupOptions) -> Result<(), JsError> {
        let replicas = opts.replicas.max(1);
        let mut chain = self.stream_config(self.url.chain_stream(), vec![self.url.chain_subject()], replicas);
        // A principal's several records (a decision and its checkpoint, a migration) and a
        // library appender's group of records land as one atomic batch
        // (`AsyncJetStreamSpool::append_chain_batch`).
        chain.allow_atomic_publish = true;
        let spool = self.stream_config(
            self.url.spool_stream(),
            vec![format!("warrant.{}.packets.*", self.url.name), format!("warrant.{}.receipts.*", self.url.name)],
            replicas,
        );
        for want in [chain, spool] {
            let name = want.name.clone();
            let mut s =
                self.js.get_or_create_stream(want.clone()).await.map_err(server(format!("create stream {name}")))?;
            let mut got = s.info().await.map_err(server(format!("stream info {name}")))?.config.clone();
            check_stream(&want, &got)?;
            if want.allow_atomic_publish && !got.allow_atomic_publish {
                // A chain stream made before atomic batches were used: allowing them takes
                // nothing away.
                got.allow_atomic_publish = true;
                got =
                    self.js.update_stream(got).await.map_err(server(format!("allow atomic batches on {name}")))?.config;
            }
            self.bound_consumers(got).await?;
        }
        let decisions = format!("warrant spool {}: decisions by AGENT.PACKET_ID, written once", self.url.name);
        self.ensure_bucket(self.url.decisions_bucket(), decisions, replicas).await?;
        let uses = format!("warrant spool {}: claims of single uses, each key created once", self.url.name);
        self.ensure_uses_bucket(self.url.uses_bucket(), uses, replicas).await
    }

    /// The uses bucket's stream as the server must enforce it: each key written once and never
    /// again (`discard: new` per subject with one message per subject, so a put over a claim, a
    /// delete marker or a purge marker is refused), no rollup, no purge, no delete. The hooks'
    /// permissions let an agent publish to every key of the bucket; this makes a claim one the
    /// agent can only take, never give back (`docs/distributed.md`, "Agents' hosts").
    fn uses_stream_config(&self, bucket: &str, description: String, replicas: usize) -> stream::Config {
        let mut c = stream::Config {
            name: format!("KV_{bucket}"),
            description: Some(description),
            subjects: vec![format!("$KV.{bucket}.>")],
            allow_direct: true,
            storage: StorageType::File,
            num_replicas: replicas,
            duplicate_window: DUPLICATE_WINDOW,
            ..Default::default()
        };
        written_once(&mut c);
        idle_consumers_end(&mut c);
        c
    }

    /// Creates the uses bucket ([`Self::uses_stream_config`]) unless it exists; one made by an
    /// earlier warrant as a plain KV bucket is hardened in place, or refused when the server
    /// will not.
    async fn ensure_uses_bucket(&self, bucket: String, description: String, replicas: usize) -> Result<(), JsError> {
        let want = self.uses_stream_config(&bucket, description, replicas);
        let name = want.name.clone();
        let mut s = match self.js.get_stream(&name).await {
            Ok(s) => s,
            Err(e) => match e.kind() {
                GetStreamErrorKind::JetStream(j) if j.error_code() == ErrorCode::STREAM_NOT_FOUND => {
                    self.js.create_stream(want.clone()).await.map_err(server(format!("create bucket {bucket}")))?
                }
                _ => return Err(server(format!("open bucket {bucket}"))(e)),
            },
        };
        let mut got = s.info().await.map_err(server(format!("stream info {name}")))?.config.clone();
        let mut harder = got.clone();
        written_once(&mut harder);
        if got != harder {
            got =
                self.js.update_stream(harder.clone()).await.map_err(server(format!("harden bucket {bucket}")))?.config;
        }
        let weak = |setting: &str| Err(JsError::WeakerStream { stream: name.clone(), setting: setting.to_string() });
        let mut held = got.clone();
        written_once(&mut held);
        if held != got {
            return weak("a claim can be written over, rolled up or purged");
        }
        if got.subjects != want.subjects {
            return weak("other subjects");
        }
        keeps_everything(&name, &got, replicas, "claims")?;
        self.bound_consumers(got).await
    }

    /// Holds every consumer of the stream `got` configures to [`CONSUMER_IDLE_LIMIT`]: the
    /// server refuses a consumer asking for a longer inactivity threshold and gives this one to
    /// those that ask for none (durable ones included), so a consumer whose reader died or
    /// stopped reading is deleted within that time, whoever made it and however. A stream
    /// without the limit (made by an earlier warrant) is updated in place.
    ///
    /// # Errors
    /// [`JsError::Server`] when the update is refused; [`JsError::WeakerStream`] when the
    /// server kept another limit.
    async fn bound_consumers(&self, got: stream::Config) -> Result<(), JsError> {
        let name = got.name.clone();
        let mut harder = got.clone();
        idle_consumers_end(&mut harder);
        let got = if got == harder {
            got
        } else {
            self.js
                .update_stream(harder.clone())
                .await
                .map_err(server(format!("bound the consumers of {name}")))?
                .config
        };
        let mut held = got.clone();
        idle_consumers_end(&mut held);
        if held != got {
            return Err(JsError::WeakerStream {
                stream: name,
                setting: "consumers may stay after their reader is gone (no consumer_limits.inactive_threshold)".into(),
            });
        }
        Ok(())
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
        if !got.deny_delete {
            return weak("deny_delete is false");
        }
        keeps_everything(&store.stream_name, &got, replicas, "decisions")?;
        self.bound_consumers(got).await
    }

    fn stream_config(&self, name: String, subjects: Vec<String>, replicas: usize) -> stream::Config {
        let mut c = stream::Config {
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
        };
        idle_consumers_end(&mut c);
        c
    }
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

/// The longest a consumer of the spool's streams and buckets lives without a reader
/// (`consumer_limits.inactive_threshold` of each stream, which the server enforces on every
/// consumer): the 30 s an ordered consumer asks for.
pub const CONSUMER_IDLE_LIMIT: Duration = Duration::from_secs(30);

/// Sets the consumer limit of [`CONSUMER_IDLE_LIMIT`] (keeping a `max_ack_pending` limit).
fn idle_consumers_end(c: &mut stream::Config) {
    let within = c
        .consumer_limits
        .as_ref()
        .is_some_and(|l| !l.inactive_threshold.is_zero() && l.inactive_threshold <= CONSUMER_IDLE_LIMIT);
    if !within {
        let max_ack_pending = c.consumer_limits.as_ref().map_or(0, |l| l.max_ack_pending);
        c.consumer_limits = Some(stream::ConsumerLimits { inactive_threshold: CONSUMER_IDLE_LIMIT, max_ack_pending });
    }
}

/// Sets what makes the server hold a bucket's keys to one message each, written once: a second
/// message on a key is refused (`discard: new` per subject), and no rollup, purge or delete.
fn written_once(c: &mut stream::Config) {
    c.discard = DiscardPolicy::New;
    c.discard_new_per_subject = true;
    c.max_messages_per_subject = 1;
    c.allow_rollup = false;
    c.deny_purge = true;
    c.deny_delete = true;
}

/// Checks that the bucket stream `stream` (its settings `got`) keeps every message: file
/// storage, at least `replicas`, no limit that drops `what`.
fn keeps_everything(stream: &str, got: &stream::Config, replicas: usize, what: &str) -> Result<(), JsError> {
    let weak = |setting: String| Err(JsError::WeakerStream { stream: stream.to_owned(), setting });
    if got.storage != StorageType::File {
        return weak("memory storage".into());
    }
    if got.num_replicas < replicas {
        return weak(format!("{} replicas, {replicas} wanted", got.num_replicas));
    }
    if got.max_age != Duration::ZERO || got.max_bytes >= 0 || got.max_messages >= 0 {
        return weak(format!("a limit that drops {what} (max_age, max_bytes or max_msgs)"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jetstream::StoreUrl;

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
