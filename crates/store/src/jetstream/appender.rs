//! One writer of the chain for a whole process ([`ChainAppender`]): any number of threads hand
//! it record bodies; it seals them onto the head it keeps and appends what has queued as one
//! atomic batch, so sixteen writers cost about what one does instead of racing each other for
//! the head (`docs/performance.md`, "JetStream chain appends").

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot};

use warrant_protocol::canonical;
use warrant_protocol::chain::{self, Appended, ChainHead};

use super::{AsyncJetStreamSpool, JetStreamSpool, JsError, MAX_BATCH, chain_head_of};

/// How many stale heads in a row a group of records survives before its writers get
/// [`JsError::StaleHead`]: another process appending without pause.
const STALE_LIMIT: u32 = 64;

/// Requests waiting for the appender; a writer beyond them waits to hand its body over.
const QUEUE: usize = 4 * MAX_BATCH;

struct Request {
    body: Map<String, Value>,
    reply: oneshot::Sender<Result<Appended, JsError>>,
}

/// The chain's one writer in this process, shared by any number of threads (clone the handle).
///
/// Each [`append`](Self::append) hands a record body (as [`chain::new_record_body`] makes) to a
/// task on the spool's runtime. The task keeps the chain's head, seals what has queued (up to
/// [`MAX_BATCH`] bodies, in the order they arrived) one onto the other, and appends them with
/// [`AsyncJetStreamSpool::append_chain_batch`]: one round trip, all or nothing, compare-and-set
/// on the head it sealed onto. When another process appended first, it reads the head again and
/// seals the same bodies onto it: a body is in the chain once, wherever the head was when it
/// landed. So the appender is for records whose meaning does not depend on what precedes them
/// (receipts, evidence rows, audit events); a decision, valid only on the fold it was checked
/// against, goes through [`crate::ChainLog::append_after`] with its head.
///
/// Dropping every handle ends the task once the queue is empty.
#[derive(Clone)]
pub struct ChainAppender {
    tx: mpsc::Sender<Request>,
    counts: Arc<Counts>,
}

/// What the appender's task has done, for the benchmarks and the curious.
#[derive(Default)]
struct Counts {
    stale: AtomicU64,
    groups: AtomicU64,
}

impl std::fmt::Debug for ChainAppender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChainAppender")
            .field("groups", &self.groups())
            .field("stale_heads", &self.stale_heads())
            .finish_non_exhaustive()
    }
}

impl ChainAppender {
    /// Starts the appender's task on `spool`'s runtime, with its own handle on the connection.
    /// The head is read when the first body arrives.
    #[must_use]
    pub fn start(spool: &JetStreamSpool) -> Self {
        let (tx, rx) = mpsc::channel(QUEUE);
        let counts = Arc::new(Counts::default());
        let _task = spool.rt.spawn(run(spool.inner().clone(), rx, Arc::clone(&counts)));
        ChainAppender { tx, counts }
    }

    /// Appends `body` and blocks until it is in the chain: the record as sealed, with its
    /// `chain_index` (its subject sequence) and `entry_hash`. Call from a thread that is not
    /// running the spool's runtime (as the CLI and the benchmarks do); see
    /// [`append_async`](Self::append_async) otherwise.
    ///
    /// # Errors
    /// As [`append_async`](Self::append_async).
    pub fn append(&self, body: Map<String, Value>) -> Result<Appended, JsError> {
        let (reply, answer) = oneshot::channel();
        self.tx.blocking_send(Request { body, reply }).map_err(|_| ended())?;
        answer.blocking_recv().map_err(|_| ended())?
    }

    /// [`append`](Self::append) for async callers.
    ///
    /// # Errors
    /// [`JsError::StaleHead`] when other processes moved the head 64 times in a row
    /// before this body's group landed (nothing of it landed); [`JsError::Timeout`] when the
    /// store did not acknowledge in time (the group may have landed, whole); the store's
    /// errors as [`AsyncJetStreamSpool::append_chain_batch`]; [`JsError::Runtime`] when the
    /// appender's task has ended.
    pub async fn append_async(&self, body: Map<String, Value>) -> Result<Appended, JsError> {
        let (reply, answer) = oneshot::channel();
        self.tx.send(Request { body, reply }).await.map_err(|_| ended())?;
        answer.await.map_err(|_| ended())?
    }

    /// How many times a group was sealed onto a head another process had moved, and sealed again.
    #[must_use]
    pub fn stale_heads(&self) -> u64 {
        self.counts.stale.load(Ordering::Relaxed)
    }

    /// How many groups of records have landed (each one atomic batch, or one record).
    #[must_use]
    pub fn groups(&self) -> u64 {
        self.counts.groups.load(Ordering::Relaxed)
    }
}

fn ended() -> JsError {
    JsError::Runtime("the chain appender's task has ended (its runtime was shut down)".into())
}

/// The appender's task: groups what has queued, appends it, answers each writer.
async fn run(spool: AsyncJetStreamSpool, mut rx: mpsc::Receiver<Request>, counts: Arc<Counts>) {
    let mut queue: VecDeque<Request> = VecDeque::new();
    let mut head: Option<ChainHead> = None;
    let mut atomic = true;
    let mut stale_in_a_row = 0;
    loop {
        if queue.is_empty() {
            match rx.recv().await {
                Some(r) => queue.push_back(r),
                None => return,
            }
        }
        while queue.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(r) => queue.push_back(r),
                Err(_) => break,
            }
        }
        let tip = match head.take() {
            Some(h) => h,
            None => match spool.unless_denied(spool.head()).await.and_then(|t| chain_head_of(t.as_ref())) {
                Ok(h) => h,
                Err(e) => {
                    let n = queue.len();
                    answer_all(&mut queue, n, &Err(e));
                    continue;
                }
            },
        };
        let n = if atomic { queue.len().min(MAX_BATCH) } else { 1 };
        let mut at = tip.clone();
        let sealed: Vec<Appended> = queue
            .iter()
            .take(n)
            .map(|r| {
                let one = chain::seal(r.body.clone(), &at);
                at = ChainHead { last_index: one.chain_index, last_hash: Some(one.entry_hash.clone()) };
                one
            })
            .collect();
        let lines: Vec<(Vec<u8>, String)> =
            sealed.iter().map(|a| (canonical::to_canonical_vec(&a.record), a.entry_hash.clone())).collect();
        let onto = (tip.last_index > 0).then_some(tip.last_index);
        match spool.unless_denied(spool.append_chain_batch(onto, &lines)).await {
            Ok(ack) if ack.seq == at.last_index => {
                stale_in_a_row = 0;
                counts.groups.fetch_add(1, Ordering::Relaxed);
                head = Some(at);
                for (r, one) in queue.drain(..n).zip(sealed) {
                    let _gone = r.reply.send(Ok(one));
                }
            }
            Ok(ack) => answer_all(
                &mut queue,
                n,
                &Err(JsError::Corrupt(format!(
                    "the store put record {} at subject sequence {} (a chain's records are their sequences)",
                    at.last_index, ack.seq
                ))),
            ),
            Err(JsError::StaleHead { .. }) if stale_in_a_row < STALE_LIMIT => {
                stale_in_a_row += 1;
                counts.stale.fetch_add(1, Ordering::Relaxed);
            }
            Err(JsError::AtomicDisabled(_)) if atomic => {
                atomic = false;
                head = Some(tip);
            }
            Err(e) => {
                stale_in_a_row = 0;
                answer_all(&mut queue, n, &Err(e));
            }
        }
    }
}

/// Answers the first `n` writers in `queue` with `answer` and drops them.
fn answer_all(queue: &mut VecDeque<Request>, n: usize, answer: &Result<Appended, JsError>) {
    for r in queue.drain(..n) {
        let _gone = r.reply.send(answer.clone());
    }
}
