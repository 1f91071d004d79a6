//! The JetStream spool (`crates/store/src/jetstream/`) against real `nats-server` processes: the
//! chain's compare-and-set, de-duplication, the refusals of delete, purge and rollup, a chain
//! read back that verifies like the file, many writers on a three-node cluster with the stream
//! leader killed, a live watch across a restart, the decisions bucket, the server permissions of
//! docs/distributed.md, and a credentials file in operator mode.
#![cfg(feature = "jetstream")]

use crate::nats;

use crate::chain_log;

use crate::cli_env;

use crate::spool_log;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use async_nats::HeaderMap;
use async_nats::jetstream::stream;
use nats::{Cluster, Server};
use serde_json::{Value, json};
use warrant::protocol::canonical;
use warrant::protocol::chain::{self, VerifyOptions};
use warrant::store::chain_file;
use warrant::store::jetstream::{
    ChainEntry, ConnectOptions, JetStreamSpool, JsError, SetupOptions, StoreUrl, chain_head_of,
};

const AT: &str = "2026-11-21T10:00:00Z";

fn open(url: &str, timeout: Duration) -> JetStreamSpool {
    let url: StoreUrl = url.parse().expect("store url");
    JetStreamSpool::connect(&url, &ConnectOptions { timeout, ..Default::default() }).expect("connect")
}

fn setup(url: &str, replicas: usize) -> JetStreamSpool {
    let s = open(url, Duration::from_secs(10));
    // A new cluster places R3 streams only once every peer has joined the meta group, and answers
    // nothing while it elects its meta leader (a request then times out; setting up again is
    // harmless: what exists is kept).
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match s.setup(SetupOptions { replicas }) {
            Ok(()) => return s,
            Err(e)
                if replicas > 1
                    && Instant::now() < deadline
                    && ["no suitable peers", "timed out"].iter().any(|m| e.to_string().contains(m)) =>
            {
                std::thread::sleep(Duration::from_millis(250));
            }
            Err(e) => panic!("setup: {e}"),
        }
    }
}

/// A record body with a note; its `record_id` is new each call.
fn body(agent: &str, note: &str) -> serde_json::Map<String, Value> {
    let mut meta = serde_json::Map::new();
    meta.insert("note".into(), json!(note));
    chain::new_record_body(agent, "draft.compose", None, "success", note, "suggest", AT, meta)
}

/// `body` sealed onto `tip`: (line, entry_hash, record).
fn sealed(tip: Option<&ChainEntry>, body: serde_json::Map<String, Value>) -> (Vec<u8>, String, Value) {
    let head = chain_head_of(tip).expect("head");
    let a = chain::seal(body, &head);
    (canonical::to_canonical_vec(&a.record), a.entry_hash, a.record)
}

/// Appends `body` at the head, re-reading the head after a stale one: the acknowledged sequence.
fn append_at_head(s: &JetStreamSpool, body: &serde_json::Map<String, Value>) -> (u64, String) {
    loop {
        let tip = s.head().expect("head");
        let (line, hash, _) = sealed(tip.as_ref(), body.clone());
        match s.append_chain(tip.as_ref().map(|t| t.seq), &line, &hash) {
            Ok(ack) => return (ack.seq, hash),
            Err(JsError::StaleHead { .. }) => {}
            Err(e) => panic!("append: {e}"),
        }
    }
}

fn records(entries: &[ChainEntry]) -> Vec<Value> {
    entries.iter().map(|e| e.record().expect("canonical record")).collect()
}

#[test]
fn a_stale_expected_head_is_refused() {
    let Some(server) = Server::start() else { return };
    let s = setup(&server.store_url("stale"), 1);
    assert_eq!(s.head().expect("head"), None);
    let (line1, hash1, _) = sealed(None, body("a", "first"));
    let ack = s.append_chain(None, &line1, &hash1).expect("first append");
    assert_eq!((ack.seq, ack.duplicate), (1, false));

    // A second record sealed onto the empty chain (a writer that read the head before) is stale.
    let (line, hash, _) = sealed(None, body("a", "late"));
    match s.append_chain(None, &line, &hash) {
        Err(JsError::StaleHead { expected: 0 }) => {}
        other => panic!("expected StaleHead, got {other:?}"),
    }
    // An expectation ahead of the head is refused too.
    let tip = s.head().expect("head").expect("one record");
    let (line, hash, _) = sealed(Some(&tip), body("a", "ahead"));
    assert!(matches!(s.append_chain(Some(5), &line, &hash), Err(JsError::StaleHead { expected: 5 })));
    // At the true head it lands.
    assert_eq!(s.append_chain(Some(tip.seq), &line, &hash).expect("at head").seq, 2);
    let chain = s.read_chain().expect("read");
    assert_eq!(chain.len(), 2);
    assert_eq!(chain[0].line, line1);
    assert!(chain::verify_records(&records(&chain), VerifyOptions::default()).is_valid());
}

#[test]
fn a_retried_append_is_not_duplicated() {
    let Some(server) = Server::start() else { return };
    let s = setup(&server.store_url("retry"), 1);
    let (line, hash, _) = sealed(None, body("a", "once"));
    let first = s.append_chain(None, &line, &hash).expect("append");
    assert!(!first.duplicate);
    // The same append again (an answer lost, a retry): the first sequence, flagged.
    let again = s.append_chain(None, &line, &hash).expect("retry");
    assert_eq!((again.seq, again.duplicate), (first.seq, true));
    // A retry that names the head it moved to is still the same entry.
    let again = s.append_chain(Some(1), &line, &hash).expect("retry at new head");
    assert_eq!((again.seq, again.duplicate), (first.seq, true));
    // Another record lands on top; the retry as it was is still recognised, not appended.
    let tip = s.head().expect("head").expect("one");
    let (line2, hash2, _) = sealed(Some(&tip), body("b", "on top"));
    s.append_chain(Some(tip.seq), &line2, &hash2).expect("second");
    let again = s.append_chain(None, &line, &hash).expect("retry under a newer head");
    assert_eq!((again.seq, again.duplicate), (first.seq, true));
    // A different record sealed onto the same stale head is refused, not taken for a retry.
    let (other, other_hash, _) = sealed(None, body("a", "other"));
    assert!(matches!(s.append_chain(None, &other, &other_hash), Err(JsError::StaleHead { expected: 0 })));
    assert_eq!(s.read_chain().expect("read").len(), 2);
}

/// `bodies` sealed one onto the other after `tip`: (line, entry_hash) each.
fn sealed_run(tip: Option<&ChainEntry>, bodies: &[serde_json::Map<String, Value>]) -> Vec<(Vec<u8>, String)> {
    let mut head = chain_head_of(tip).expect("head");
    bodies
        .iter()
        .map(|b| {
            let a = chain::seal(b.clone(), &head);
            head = chain::ChainHead { last_index: a.chain_index, last_hash: Some(a.entry_hash.clone()) };
            (canonical::to_canonical_vec(&a.record), a.entry_hash)
        })
        .collect()
}

#[test]
fn a_batch_of_records_lands_whole_or_not_at_all() {
    let Some(server) = Server::start() else { return };
    let url = server.store_url("batch");
    let s = setup(&url, 1);
    let five: Vec<_> = (0..5).map(|i| body("a", &format!("b{i}"))).collect();
    let batch = sealed_run(None, &five);
    let ack = s.append_chain_batch(None, &batch).expect("batch");
    assert_eq!((ack.seq, ack.duplicate), (5, false));
    let chain = s.read_chain().expect("read");
    assert_eq!(
        chain.iter().map(|e| e.line.clone()).collect::<Vec<_>>(),
        batch.iter().map(|b| b.0.clone()).collect::<Vec<_>>()
    );
    assert!(chain::verify_records(&records(&chain), VerifyOptions::default()).is_valid());

    // The same batch again (its answer lost): recognised, not appended.
    let again = s.append_chain_batch(None, &batch).expect("retry");
    assert_eq!((again.seq, again.duplicate), (5, true));
    // A batch sealed onto a head that has moved: refused, none of it lands.
    let tip3 = chain[2].clone();
    let stale = sealed_run(Some(&tip3), &[body("a", "s0"), body("a", "s1"), body("a", "s2")]);
    assert!(matches!(s.append_chain_batch(Some(3), &stale), Err(JsError::StaleHead { expected: 3 })));
    assert_eq!(s.read_chain().expect("read").len(), 5);

    // A chain stream made before atomic batches: refused as such, and the store's several
    // records still land one by one through the store boundary; setting up again allows them.
    s.block_on(async {
        let js = s.inner().context();
        let mut cfg = js
            .get_stream(StoreUrl::chain_stream(&url.parse().expect("url")))
            .await
            .expect("stream")
            .cached_info()
            .config
            .clone();
        cfg.allow_atomic_publish = false;
        js.update_stream(cfg).await.expect("disallow atomic batches");
    });
    let tip = s.head().expect("head").expect("five");
    let two = sealed_run(Some(&tip), &[body("a", "d0"), body("a", "d1")]);
    assert!(matches!(s.append_chain_batch(Some(5), &two), Err(JsError::AtomicDisabled(_))), "refused as disabled");
    assert_eq!(s.read_chain().expect("read").len(), 5);
    let log: &dyn warrant::store::ChainLog = &s;
    let head = log.head().expect("head");
    let appended = log.append_after(&head, vec![body("a", "o0"), body("a", "o1")]).expect("one by one");
    assert_eq!(appended.iter().map(|a| a.chain_index).collect::<Vec<_>>(), [6, 7]);
    setup(&url, 1);
    let head = log.head().expect("head");
    let appended = log.append_after(&head, vec![body("a", "t0"), body("a", "t1"), body("a", "t2")]).expect("a batch");
    assert_eq!(appended.iter().map(|a| a.chain_index).collect::<Vec<_>>(), [8, 9, 10]);
    let chain = s.read_chain().expect("read");
    assert_eq!(chain.len(), 10);
    assert!(chain::verify_records(&records(&chain), VerifyOptions::default()).is_valid());
}

#[test]
fn sixteen_threads_through_one_appender_append_each_body_once() {
    let Some(server) = Server::start() else { return };
    let url = server.store_url("appender");
    let s = setup(&url, 1);
    let appender = warrant::store::jetstream::ChainAppender::start(&s);
    // The appender keeps its head; another writer moves it; the next body is sealed again onto
    // the head as it is now.
    assert_eq!(appender.append(body("w", "first")).expect("first").chain_index, 1);
    assert_eq!(append_at_head(&s, &body("outside", "between")).0, 2);
    assert_eq!(appender.append(body("w", "second")).expect("second").chain_index, 3);
    assert_eq!(appender.stale_heads(), 1);
    // Another process appends throughout while sixteen threads append through the appender.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let outside = {
        let (url, stop) = (url.clone(), Arc::clone(&stop));
        std::thread::spawn(move || {
            let o = open(&url, Duration::from_secs(10));
            let mut n = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) || n < 5 {
                append_at_head(&o, &body("outside", &format!("o{n}")));
                n += 1;
            }
            n
        })
    };
    let (threads, each) = (16, 25);
    let acked: Vec<Vec<(u64, String, String)>> = (0..threads)
        .map(|t| {
            let appender = appender.clone();
            std::thread::spawn(move || {
                (0..each)
                    .map(|i| {
                        let note = format!("w{t}-{i}");
                        let a = appender.append(body("w", &note)).expect("append");
                        (a.chain_index, a.entry_hash, note)
                    })
                    .collect()
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|h| h.join().expect("writer"))
        .collect();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let outside_n = outside.join().expect("outside writer");

    let chain = s.read_chain().expect("read");
    let recs = records(&chain);
    assert!(chain::verify_records(&recs, VerifyOptions::default()).is_valid());
    assert_eq!(chain.len(), 3 + threads * each + outside_n, "every body and every outside record, nothing more");
    let mut notes = HashMap::new();
    for r in &recs {
        *notes.entry(r["metadata"]["note"].as_str().expect("note").to_string()).or_insert(0) += 1;
    }
    for (index, hash, note) in acked.iter().flatten() {
        let r = &recs[usize::try_from(*index).expect("index") - 1];
        assert_eq!(
            (r["entry_hash"].as_str(), r["metadata"]["note"].as_str()),
            (Some(hash.as_str()), Some(note.as_str()))
        );
        assert_eq!(notes[note], 1, "{note} is in the chain once");
    }
}

#[test]
fn of_20_concurrent_appends_on_one_head_exactly_one_lands() {
    let Some(server) = Server::start() else { return };
    let url = server.store_url("race");
    let s = setup(&url, 1);
    append_at_head(&s, &body("a", "genesis"));
    let tip = s.head().expect("head").expect("genesis");
    let barrier = Arc::new(Barrier::new(20));
    let handles: Vec<_> = (0..20)
        .map(|i| {
            let (url, barrier, tip) = (url.clone(), barrier.clone(), tip.clone());
            std::thread::spawn(move || {
                let w = open(&url, Duration::from_secs(10));
                let (line, hash, _) = sealed(Some(&tip), body("a", &format!("racer-{i}")));
                barrier.wait();
                w.append_chain(Some(tip.seq), &line, &hash)
            })
        })
        .collect();
    let results: Vec<_> = handles.into_iter().map(|h| h.join().expect("thread")).collect();
    let won: Vec<_> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
    let stale =
        results.iter().filter(|r| matches!(r, Err(JsError::StaleHead { expected }) if *expected == tip.seq)).count();
    assert_eq!(won.len(), 1, "{results:?}");
    assert_eq!(stale, 19, "{results:?}");
    assert_eq!(won[0].seq, 2);
    let chain = s.read_chain().expect("read");
    assert_eq!(chain.len(), 2);
    assert!(chain::verify_records(&records(&chain), VerifyOptions::default()).is_valid());
}

#[test]
fn delete_purge_and_rollup_are_refused_on_the_chain() {
    let Some(server) = Server::start() else { return };
    let url: StoreUrl = server.store_url("immutable").parse().expect("url");
    let s = setup(&url.to_string(), 1);
    for i in 0..3 {
        append_at_head(&s, &body("a", &format!("r{i}")));
    }
    let before = s.read_chain().expect("read");
    let js = s.inner().context().clone();
    s.block_on(async {
        let stream = js.get_stream(url.chain_stream()).await.expect("stream");
        assert!(stream.delete_message(2).await.is_err(), "delete must be refused");
        assert!(stream.purge().await.is_err(), "purge must be refused");
        assert!(stream.purge().keep(1).await.is_err(), "purge keeping one must be refused");
        assert!(stream.purge().filter(url.chain_subject()).await.is_err(), "subject purge must be refused");
        for how in ["all", "sub"] {
            let mut h = HeaderMap::new();
            h.insert("Nats-Rollup", how);
            let r = match js.publish_with_headers(url.chain_subject(), h, "{}".into()).await {
                Ok(ack) => ack.await.map(|_| ()),
                Err(e) => Err(e),
            };
            assert!(r.is_err(), "rollup {how} must be refused");
        }
        // Nor can the stream be reconfigured to allow them.
        let mut cfg = stream.cached_info().config.clone();
        cfg.deny_delete = false;
        assert!(js.update_stream(cfg).await.is_err(), "an update cancelling deny_delete must be refused");
        let mut cfg = stream.cached_info().config.clone();
        cfg.deny_purge = false;
        assert!(js.update_stream(cfg).await.is_err(), "an update cancelling deny_purge must be refused");
    });
    assert_eq!(s.read_chain().expect("read"), before);
}

#[test]
fn setup_is_idempotent_and_refuses_a_weaker_existing_stream() {
    let Some(server) = Server::start() else { return };
    let s = setup(&server.store_url("idem"), 1);
    s.setup(SetupOptions { replicas: 1 }).expect("setup again");
    // A single server cannot hold three replicas: asking for them is an error, not a silent R1.
    assert!(s.setup(SetupOptions { replicas: 3 }).is_err());

    let weak_url: StoreUrl = server.store_url("weak").parse().expect("url");
    let w = open(&weak_url.to_string(), Duration::from_secs(10));
    let js = w.inner().context().clone();
    w.block_on(async {
        js.create_stream(stream::Config {
            name: weak_url.chain_stream(),
            subjects: vec![weak_url.chain_subject()],
            deny_delete: true,
            deny_purge: false,
            ..Default::default()
        })
        .await
        .expect("a weaker stream made beforehand");
    });
    match w.setup(SetupOptions { replicas: 1 }) {
        Err(JsError::WeakerStream { stream, setting }) => {
            assert_eq!(stream, weak_url.chain_stream());
            assert!(setting.contains("deny_purge"), "{setting}");
        }
        other => panic!("expected WeakerStream, got {other:?}"),
    }
}

#[test]
fn a_chain_read_back_verifies_like_the_chain_file() {
    let Some(server) = Server::start() else { return };
    let s = setup(&server.store_url("verify"), 1);
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("chain.jsonl");
    for i in 0..25 {
        let b = body(&format!("agent-{}", i % 3), &format!("record {i}"));
        let (_, js_hash) = append_at_head(&s, &b);
        let on_file = chain_file::append(&file, |_| Ok(b.clone())).expect("file append");
        assert_eq!(on_file.entry_hash, js_hash, "the same record seals to the same hash on both");
    }
    let chain = s.read_chain().expect("read");
    assert_eq!(chain.len(), 25);
    let from_js = chain::verify_records(&records(&chain), VerifyOptions::default());
    let from_file = chain_file::verify_file(&file, VerifyOptions::default()).expect("verify file");
    assert!(from_js.is_valid(), "{:?}", from_js.first());
    assert!(from_file.is_valid());
    assert_eq!(from_js.total, 25);
    assert_eq!(from_js.root_hash, from_file.root_hash);
    // The lines are the file's lines, byte for byte.
    let file_bytes = std::fs::read(&file).expect("read file");
    let mut js_bytes = Vec::new();
    for e in &chain {
        js_bytes.extend_from_slice(&e.line);
        js_bytes.push(b'\n');
    }
    assert_eq!(js_bytes, file_bytes);
    // A tampered copy does not verify: the check above could fail.
    let mut tampered = records(&chain);
    tampered[7]["metadata"]["note"] = json!("changed");
    assert!(!chain::verify_records(&tampered, VerifyOptions::default()).is_valid());
}

#[test]
fn packets_and_receipts_are_published_once_and_listed() {
    let Some(server) = Server::start() else { return };
    let s = setup(&server.store_url("msgs"), 1);
    assert!(s.list_packets().expect("empty list").is_empty());
    let p1 = s.publish_packet("agent-a", b"{\"p\":1}", "sha256:aa").expect("p1");
    let dup = s.publish_packet("agent-a", b"{\"p\":1}", "sha256:aa").expect("p1 again");
    assert_eq!((dup.seq, dup.duplicate), (p1.seq, true));
    s.publish_packet("agent-b", b"{\"p\":2}", "sha256:bb").expect("p2");
    s.publish_receipt("agent-a", b"{\"r\":1}", "sha256:cc").expect("r1");
    let packets = s.list_packets().expect("list");
    assert_eq!(packets.len(), 2);
    assert_eq!((packets[0].agent.as_str(), packets[0].bytes.as_slice()), ("agent-a", &b"{\"p\":1}"[..]));
    assert_eq!(packets[0].msg_id.as_deref(), Some("sha256:aa"));
    assert_eq!(packets[1].agent, "agent-b");
    let receipts = s.list_receipts().expect("receipts");
    assert_eq!(receipts.len(), 1);
    assert_eq!(receipts[0].bytes, b"{\"r\":1}");
    assert!(matches!(s.publish_packet("a.b", b"x", "h"), Err(JsError::BadToken { .. })));
    assert!(matches!(s.publish_packet("*", b"x", "h"), Err(JsError::BadToken { .. })));
}

#[test]
fn a_decision_is_written_once_and_wait_wakes_on_it() {
    let Some(server) = Server::start() else { return };
    let url = server.store_url("decide");
    let s = setup(&url, 1);
    assert_eq!(s.get_decision("agent-a", "p1").expect("none yet"), None);
    // Nothing comes: a timeout is an error, not a default.
    let t0 = Instant::now();
    assert!(matches!(s.wait_decision("agent-a", "p1", Duration::from_millis(300)), Err(JsError::Timeout { .. })));
    assert!(t0.elapsed() >= Duration::from_millis(300));

    let waiter = {
        let url = url.clone();
        std::thread::spawn(move || {
            let w = open(&url, Duration::from_secs(10));
            let t = Instant::now();
            let d = w.wait_decision("agent-a", "p1", Duration::from_secs(20));
            (d, t.elapsed())
        })
    };
    std::thread::sleep(Duration::from_millis(500));
    s.put_decision("agent-a", "p1", b"approved").expect("first decision");
    let (got, waited) = waiter.join().expect("waiter");
    assert_eq!(got.expect("woke").bytes, b"approved");
    assert!(waited < Duration::from_secs(10), "woke on the put, not by a timeout: {waited:?}");

    match s.put_decision("agent-a", "p1", b"refused") {
        Err(JsError::DecisionExists { key }) => assert_eq!(key, "agent-a.p1"),
        other => panic!("a second decision must be refused: {other:?}"),
    }
    assert_eq!(s.get_decision("agent-a", "p1").expect("get").expect("some").bytes, b"approved");
    // A decision already there is returned at once by a later wait.
    assert_eq!(s.wait_decision("agent-a", "p1", Duration::from_secs(5)).expect("there").bytes, b"approved");
    // Another agent's packet of the same id is another key.
    assert_eq!(s.get_decision("agent-b", "p1").expect("other agent"), None);
}

#[test]
fn a_dead_server_is_an_error_never_a_default() {
    let Some(mut server) = Server::start() else { return };
    let url = server.store_url("closed");
    let s = setup(&url, 1);
    append_at_head(&s, &body("a", "one"));
    let quick = open(&url, Duration::from_secs(2));
    server.kill();
    assert!(quick.head().is_err(), "head");
    assert!(quick.read_chain().is_err(), "read");
    assert!(quick.get_decision("agent-a", "p1").is_err(), "get decision");
    assert!(quick.list_packets().is_err(), "list");
    let (line, hash, _) = sealed(None, body("a", "two"));
    assert!(quick.append_chain(Some(1), &line, &hash).is_err(), "append");
    // Connecting to nothing fails.
    let nothing: StoreUrl = format!("nats://127.0.0.1:{}/x", nats::free_port()).parse().expect("url");
    let opts = ConnectOptions { timeout: Duration::from_secs(2), ..Default::default() };
    assert!(matches!(JetStreamSpool::connect(&nothing, &opts), Err(JsError::Connect { .. })));
}

#[test]
fn a_live_watcher_catches_up_across_a_server_restart() {
    let Some(mut server) = Server::start() else { return };
    let url = server.store_url("watch");
    let s = setup(&url, 1);
    let mut watch = s.watch_chain(1).expect("watch");
    let mut appended = Vec::new();
    for i in 0..3 {
        appended.push(append_at_head(&s, &body("a", &format!("before {i}"))));
    }
    let mut seen = Vec::new();
    for _ in 0..3 {
        seen.push(watch.next_timeout(Duration::from_secs(10)).expect("live record"));
    }
    server.kill();
    server.restart();
    // The client reconnects by itself; appends go on once it has.
    let deadline = Instant::now() + Duration::from_secs(30);
    for i in 0..3 {
        let b = body("a", &format!("after {i}"));
        loop {
            let tip = match s.head() {
                Ok(t) => t,
                Err(e) => {
                    assert!(Instant::now() < deadline, "no reconnect: {e}");
                    std::thread::sleep(Duration::from_millis(200));
                    continue;
                }
            };
            let (line, hash, _) = sealed(tip.as_ref(), b.clone());
            match s.append_chain(tip.as_ref().map(|t| t.seq), &line, &hash) {
                Ok(ack) => {
                    appended.push((ack.seq, hash));
                    break;
                }
                Err(e) => {
                    assert!(Instant::now() < deadline, "append after restart: {e}");
                    std::thread::sleep(Duration::from_millis(200));
                }
            }
        }
    }
    for _ in 0..3 {
        seen.push(watch.next_timeout(Duration::from_secs(30)).expect("record after the restart"));
    }
    let seqs: Vec<u64> = seen.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, vec![1, 2, 3, 4, 5, 6], "nothing missed, nothing twice, in order");
    let hashes: Vec<String> =
        seen.iter().map(|e| e.record().expect("rec")["entry_hash"].as_str().expect("hash").to_string()).collect();
    assert_eq!(hashes, appended.iter().map(|(_, h)| h.clone()).collect::<Vec<_>>());
    assert!(matches!(watch.next_timeout(Duration::from_millis(300)), Err(JsError::Timeout { .. })), "nothing more");
    assert!(chain::verify_records(&records(&seen), VerifyOptions::default()).is_valid());
}

/// What one writer got acknowledged: (record_id, entry_hash, seq).
type Acked = Arc<Mutex<Vec<(String, String, u64)>>>;

/// One writer with its own connection: `n` records, each sealed onto the head it read and
/// appended with compare-and-set; after a stale head it reads the head again and seals again.
/// After an append whose answer was lost (timeout, failover) it retries the same line: the
/// retry is a duplicate if the first landed; if the head moved meanwhile it looks whether the
/// record after the expected head is its own.
fn writer(url: String, w: usize, n: usize, acked: Acked) -> usize {
    let s = open(&url, Duration::from_secs(4));
    let deadline = Instant::now() + Duration::from_secs(240);
    let mut stale = 0;
    for i in 0..n {
        let b = body(&format!("w{w:02}"), &format!("w{w:02}-{i:03}"));
        let record_id = b["record_id"].as_str().expect("record_id").to_string();
        'record: loop {
            assert!(Instant::now() < deadline, "writer {w} did not finish");
            let tip = match s.head() {
                Ok(t) => t,
                Err(_) => {
                    std::thread::sleep(Duration::from_millis(100));
                    continue;
                }
            };
            let expected = tip.as_ref().map(|t| t.seq);
            let (line, hash, _) = sealed(tip.as_ref(), b.clone());
            let mut uncertain = false;
            loop {
                assert!(Instant::now() < deadline, "writer {w} did not finish");
                match s.append_chain(expected, &line, &hash) {
                    Ok(ack) => {
                        acked.lock().expect("lock").push((record_id.clone(), hash.clone(), ack.seq));
                        break 'record;
                    }
                    Err(JsError::StaleHead { .. }) if !uncertain => {
                        stale += 1;
                        continue 'record;
                    }
                    Err(JsError::StaleHead { .. }) => {
                        // Did the lost append land? The record right after the expected head says.
                        match s.entry(expected.unwrap_or(0) + 1) {
                            Ok(Some(e))
                                if e.record().ok().and_then(|r| r["entry_hash"].as_str().map(str::to_owned))
                                    == Some(hash.clone()) =>
                            {
                                acked.lock().expect("lock").push((record_id.clone(), hash.clone(), e.seq));
                                break 'record;
                            }
                            Ok(_) => continue 'record,
                            Err(_) => std::thread::sleep(Duration::from_millis(100)),
                        }
                    }
                    Err(e) => {
                        assert!(
                            !e.to_string().contains("wrong last sequence"),
                            "a stale head not reported as StaleHead: {e}"
                        );
                        uncertain = true;
                        std::thread::sleep(Duration::from_millis(100));
                    }
                }
            }
        }
    }
    stale
}

fn check_cluster_chain(s: &JetStreamSpool, acked: &Acked, want: usize) {
    let chain = (0..50)
        .find_map(|_| match s.read_chain() {
            Ok(c) => Some(c),
            Err(_) => {
                std::thread::sleep(Duration::from_millis(200));
                None
            }
        })
        .expect("read the chain");
    let recs = records(&chain);
    let report = chain::verify_records(&recs, VerifyOptions::default());
    assert!(report.is_valid(), "{:?}", report.first());
    let acked = acked.lock().expect("lock").clone();
    assert_eq!(acked.len(), want, "every writer finished every record");
    let mut ids: HashMap<String, usize> = HashMap::new();
    for r in &recs {
        *ids.entry(r["record_id"].as_str().expect("id").to_string()).or_default() += 1;
    }
    assert!(ids.values().all(|&c| c == 1), "a record appears twice");
    assert_eq!(chain.len(), want, "records beyond the acknowledged ones");
    let by_seq: HashMap<u64, &Value> = chain.iter().map(|e| e.seq).zip(recs.iter()).collect();
    let mut seqs = HashSet::new();
    for (id, hash, seq) in &acked {
        let r = by_seq.get(seq).unwrap_or_else(|| panic!("acknowledged sequence {seq} is missing"));
        assert_eq!(r["entry_hash"].as_str(), Some(hash.as_str()), "sequence {seq} is not the acknowledged record");
        assert_eq!(r["record_id"].as_str(), Some(id.as_str()));
        assert!(seqs.insert(*seq), "two acknowledgements of sequence {seq}");
    }
}

#[test]
fn sixteen_writers_on_a_three_node_cluster_lose_and_duplicate_nothing() {
    let Some(cluster) = Cluster::start() else { return };
    let url = cluster.store_url("r3");
    let s = setup(&url, 3);
    let acked: Acked = Arc::default();
    let n = 8;
    let handles: Vec<_> = (0..16)
        .map(|w| {
            let (url, acked) = (url.clone(), acked.clone());
            std::thread::spawn(move || writer(url, w, n, acked))
        })
        .collect();
    let stale: usize = handles.into_iter().map(|h| h.join().expect("writer")).sum();
    assert!(stale > 0, "16 writers on one head must have met stale heads");
    check_cluster_chain(&s, &acked, 16 * n);
}

#[test]
fn the_stream_leader_killed_mid_append_keeps_every_acknowledged_append() {
    let Some(mut cluster) = Cluster::start() else { return };
    let url: StoreUrl = cluster.store_url("failover").parse().expect("url");
    let s = setup(&url.to_string(), 3);
    let acked: Acked = Arc::default();
    let n = 8;
    let handles: Vec<_> = (0..16)
        .map(|w| {
            let (url, acked) = (url.to_string(), acked.clone());
            std::thread::spawn(move || writer(url, w, n, acked))
        })
        .collect();
    let t0 = Instant::now();
    while acked.lock().expect("lock").len() < 24 {
        assert!(t0.elapsed() < Duration::from_secs(120), "writers made no progress");
        std::thread::sleep(Duration::from_millis(10));
    }
    let js = s.inner().context().clone();
    let leader = s
        .block_on(async { js.get_stream(url.chain_stream()).await.map(|st| st.cached_info().cluster.clone()) })
        .expect("stream info")
        .and_then(|c| c.leader)
        .expect("the chain stream has a leader");
    let before = acked.lock().expect("lock").len();
    cluster.node_mut(&leader).kill();
    eprintln!("killed the chain stream's leader {leader} after {before} acknowledged appends");
    let stale: usize = handles.into_iter().map(|h| h.join().expect("writer")).sum();
    eprintln!("stale heads met: {stale}");
    assert!(acked.lock().expect("lock").len() > before, "writers went on after the kill");
    let survivor = cluster.nodes.iter().find(|n| n.running()).expect("a node").port;
    let s2 = open(&format!("nats://127.0.0.1:{survivor}/failover"), Duration::from_secs(10));
    check_cluster_chain(&s2, &acked, 16 * n);
    // The killed node comes back and catches up.
    cluster.node_mut(&leader).restart();
}

/// The permissions of docs/distributed.md ("Server permissions"), with NKey users generated here.
fn permissions_config(principal: &str, agent_a: &str) -> String {
    permissions_block(0, principal, agent_a)
}

/// The `n`th ```conf block of docs/distributed.md (0: an agent that proposes; 1: an agent's
/// host, whose hooks read the chain), for these NKeys, on the spool `perm`.
fn permissions_block(n: usize, principal: &str, agent_a: &str) -> String {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/distributed.md"))
        .expect("docs/distributed.md");
    let block = doc.split("```conf\n").nth(n + 1).expect("the ```conf block in docs/distributed.md");
    let end = block.find("```").expect("end of the block");
    block[..end].replace("PRINCIPAL_NKEY", principal).replace("AGENT_A_NKEY", agent_a).replace("NAME", "perm")
}

/// A server with the `n`th permissions block of docs/distributed.md, the spool `perm` set up by
/// the principal, and the agent's own connection (its NKey, its inbox prefix, a 10 s timeout).
fn under_permissions(n: usize) -> Option<(Server, JetStreamSpool, JetStreamSpool, tempfile::TempDir)> {
    let principal = nkeys::KeyPair::new_user();
    let agent = nkeys::KeyPair::new_user();
    let server = Server::start_with_config(Some(&permissions_block(n, &principal.public_key(), &agent.public_key())))?;
    let dir = tempfile::tempdir().expect("tempdir");
    let url: StoreUrl = server.store_url("perm").parse().expect("url");
    let connect = |name: &str, kp: &nkeys::KeyPair, inbox: Option<&str>| {
        let seed = dir.path().join(name);
        std::fs::write(&seed, kp.seed().expect("seed")).expect("write seed");
        let opts = ConnectOptions {
            nkey_seed_file: Some(seed),
            inbox_prefix: inbox.map(str::to_owned),
            timeout: Duration::from_secs(10),
            ..Default::default()
        };
        JetStreamSpool::connect(&url, &opts).expect("connects")
    };
    let p = connect("principal.nk", &principal, None);
    p.setup(SetupOptions { replicas: 1 }).expect("the principal sets up");
    let a = connect("agent.nk", &agent, Some("_INBOX_agent-a"));
    Some((server, p, a, dir))
}

/// What the server refuses an agent fails at once with the server's reason, not after the
/// whole timeout: the server answers a refused request with an asynchronous error and never a
/// reply (an agent's `list` under the proposing agent's permissions took the 10 s timeout).
#[test]
fn a_request_the_server_refuses_fails_at_once_with_its_reason() {
    let Some((_server, p, a, _dir)) = under_permissions(0) else { return };
    append_at_head(&p, &body("agent-a", "by the principal"));
    for (what, result) in [
        ("reading the chain", a.read_chain().map(|_| ())),
        ("the head", a.head().map(|_| ())),
        ("listing packets", a.list_packets().map(|_| ())),
        ("another agent's decision", a.get_decision("agent-b", "p1").map(|_| ())),
    ] {
        let e = result.expect_err(what);
        assert!(matches!(&e, JsError::Denied(m) if m.contains("Permissions Violation")), "{what}: {e}");
    }
    // Each within a second of its request, all four well inside one timeout.
    let started = Instant::now();
    let e = a.read_chain().expect_err("reading the chain");
    assert!(started.elapsed() < Duration::from_secs(2), "refused after {:?}: {e}", started.elapsed());
    // What it may do still works on the same connection.
    a.publish_packet("agent-a", b"{\"p\":1}", "sha256:p1").expect("its packet");
}

/// Every consumer of the spool's streams and buckets ends when its reader is gone: the server
/// refuses a consumer that asks to outlive its reader by more than 30 s, and gives a durable
/// consumer made without a threshold those 30 s. Under the hooks' permissions an agent made a
/// thousand consumers that lived an hour after it and locked the principal's reads out.
#[test]
fn no_consumer_an_agent_makes_outlives_it_by_more_than_thirty_seconds() {
    use async_nats::jetstream::consumer::{self, DeliverPolicy, push};
    let Some((_server, p, a, _dir)) = under_permissions(1) else { return };
    append_at_head(&p, &body("agent-a", "by the principal"));
    let js = a.inner().context().clone();
    let inbox = js.client().new_inbox();
    let streams = ["warrant_perm_chain", "warrant_perm_spool", "KV_warrant_perm_uses"];
    let filters = ["warrant.perm.chain", "", ""];
    a.block_on(async {
        for (stream, filter) in streams.into_iter().zip(filters) {
            let st = js.get_stream_no_info(stream).await.expect("a handle");
            let hour = st
                .create_consumer(push::Config {
                    name: Some(format!("hour_{}", stream.len())),
                    deliver_subject: inbox.clone(),
                    filter_subject: filter.into(),
                    deliver_policy: DeliverPolicy::New,
                    inactive_threshold: Duration::from_secs(3600),
                    ..Default::default()
                })
                .await;
            let refused = hour.err().map(|e| e.to_string()).unwrap_or_default();
            assert!(refused.contains("inactive"), "{stream}: a consumer of an hour was made ({refused:?})");
            // The refusal is the limit's, not the permissions': twenty seconds are allowed.
            st.create_consumer(push::Config {
                name: Some(format!("short_{}", stream.len())),
                deliver_subject: inbox.clone(),
                filter_subject: filter.into(),
                deliver_policy: DeliverPolicy::New,
                inactive_threshold: Duration::from_secs(20),
                ..Default::default()
            })
            .await
            .expect("a consumer within the limit");
            let name = format!("durable_{}", stream.len());
            let durable = st
                .create_consumer(push::Config {
                    name: Some(name.clone()),
                    durable_name: Some(name.clone()),
                    deliver_subject: inbox.clone(),
                    filter_subject: filter.into(),
                    deliver_policy: DeliverPolicy::New,
                    ..Default::default()
                })
                .await;
            // The server's answer to the create: the consumer as made.
            {
                let c = durable.expect("a durable consumer (the permissions allow it)");
                let info: &consumer::Info = c.cached_info();
                let t = info.config.inactive_threshold;
                assert!(!t.is_zero() && t <= Duration::from_secs(30), "{stream}: a durable consumer idles for {t:?}");
            }
        }
    });
    // The principal's setup again keeps the limit (and an earlier store gets it).
    p.setup(SetupOptions { replicas: 1 }).expect("setup again");
}

/// An agent cannot lock the principal's reads out by filling the streams it reads with
/// consumers: with every stream at the server's consumer limit (an agent under the hooks'
/// permissions made them), the principal's reads, `list` and `verify` still answer, reading
/// message by message. They failed with "maximum consumers limit reached (10026)".
#[test]
fn an_agent_filling_the_consumer_limit_does_not_lock_the_principals_reads_out() {
    use async_nats::jetstream::consumer::{DeliverPolicy, push};
    let Some((server, p, a, dir)) = under_permissions(1) else { return };
    for i in 0..3 {
        append_at_head(&p, &body("agent-a", &format!("record {i}")));
    }
    a.publish_packet("agent-a", b"{\"p\":1}", "sha256:p1").expect("its packet");
    a.publish_receipt("agent-a", b"{\"r\":1}", "sha256:r1").expect("its receipt");
    assert!(a.claim_use("approval+x1.use", b"{}").expect("a claim"));
    let js = a.inner().context().clone();
    let inbox = js.client().new_inbox();
    let made = a.block_on(async {
        let mut made = Vec::new();
        for (stream, filter) in
            [("warrant_perm_chain", "warrant.perm.chain"), ("warrant_perm_spool", ""), ("KV_warrant_perm_uses", "")]
        {
            let st = js.get_stream_no_info(stream).await.expect("a handle");
            let mut n = 0;
            let refusal = loop {
                let c = st
                    .create_consumer(push::Config {
                        name: Some(format!("filler_{n}")),
                        deliver_subject: inbox.clone(),
                        filter_subject: filter.into(),
                        deliver_policy: DeliverPolicy::New,
                        ..Default::default()
                    })
                    .await;
                match c {
                    Ok(_) if n < 20_000 => n += 1,
                    Ok(_) => break String::from("no limit"),
                    Err(e) => break e.to_string(),
                }
            };
            assert!(refusal.contains("maximum consumers limit"), "{stream}: {refusal} after {n}");
            made.push(n);
        }
        made
    });
    // The principal, reading.
    assert_eq!(p.read_chain().expect("the chain").len(), 3);
    assert_eq!(p.read_chain_from(2).expect("the chain from 2").len(), 2);
    assert_eq!(p.list_packets().expect("packets").len(), 1);
    assert_eq!(p.list_receipts().expect("receipts").len(), 1);
    assert_eq!(p.read_spool_from(1).expect("the spool").len(), 2);
    assert_eq!(p.read_uses_from(1).expect("the claims").len(), 1);
    // Appending reads the head with no consumer.
    append_at_head(&p, &body("agent-a", "after the agent's consumers"));
    assert_eq!(p.read_chain().expect("the chain").len(), 4);
    // And the principal's commands.
    let e = cli_env::Env::new();
    let seed = dir.path().join("principal.nk");
    let url = server.store_url("perm");
    for args in [vec!["--store", &url, "list"], vec!["--store", &url, "verify"]] {
        let o = e.cmd(&args).env("NATS_NKEY", &seed).output().expect("run");
        assert_eq!(
            o.status.code(),
            Some(0),
            "{args:?} with {made:?} consumers: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// An agent waiting for its decision waits on across a server restart: its watch missed the
/// server's heartbeats while the server was down ("missed idle heartbeat" ended `propose
/// --wait` with exit 2), and it watches again and gets the decision put after the restart.
#[test]
fn a_wait_for_a_decision_goes_on_across_a_server_restart() {
    let Some(mut server) = Server::start() else { return };
    let url = server.store_url("waits");
    let p = setup(&url, 1);
    let waiting_url = url.clone();
    let waiting = std::thread::spawn(move || {
        let a = open(&waiting_url, Duration::from_secs(2));
        a.wait_decision_or_signal("agent-a", "w-1", Duration::from_secs(60), |_| false)
    });
    std::thread::sleep(Duration::from_secs(1));
    server.kill();
    // Longer than an ordered consumer's idle heartbeat (5 s): the watch notices it is gone.
    std::thread::sleep(Duration::from_secs(7));
    server.restart();
    let deadline = Instant::now() + Duration::from_secs(30);
    while let Err(e) = p.put_decision("agent-a", "w-1", b"approved") {
        assert!(Instant::now() < deadline, "no reconnect: {e}");
        std::thread::sleep(Duration::from_millis(200));
    }
    match waiting.join().expect("the waiting thread") {
        Ok(warrant::store::jetstream::Awaited::Decision(d)) => assert_eq!(d.bytes, b"approved"),
        other => panic!("the wait ended with {other:?}"),
    }
}

#[test]
fn an_agent_publishes_packets_and_reads_its_decisions_and_nothing_else() {
    let principal = nkeys::KeyPair::new_user();
    let agent = nkeys::KeyPair::new_user();
    let other = nkeys::KeyPair::new_user();
    let conf = permissions_config(&principal.public_key(), &agent.public_key());
    let Some(server) = Server::start_with_config(Some(&conf)) else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let seed = |name: &str, kp: &nkeys::KeyPair| {
        let p = dir.path().join(name);
        std::fs::write(&p, kp.seed().expect("seed")).expect("write seed");
        p
    };
    let url: StoreUrl = server.store_url("perm").parse().expect("url");
    let as_user = |seed_file, inbox: Option<&str>, timeout| {
        JetStreamSpool::connect(
            &url,
            &ConnectOptions {
                nkey_seed_file: Some(seed_file),
                inbox_prefix: inbox.map(str::to_owned),
                timeout,
                ..Default::default()
            },
        )
    };
    let p = as_user(seed("principal.nk", &principal), None, Duration::from_secs(10)).expect("principal connects");
    p.setup(SetupOptions { replicas: 1 }).expect("the principal sets up");
    append_at_head(&p, &body("agent-a", "by the principal"));
    p.put_decision("agent-a", "p1", b"approved").expect("decision for agent-a");
    p.put_decision("agent-b", "p9", b"refused").expect("decision for agent-b");
    // A key that is not in the server's config is refused.
    assert!(as_user(seed("other.nk", &other), None, Duration::from_secs(3)).is_err(), "an unknown NKey connects");

    let a = as_user(seed("agent.nk", &agent), Some("_INBOX_agent-a"), Duration::from_secs(2)).expect("agent connects");
    // What it may do.
    a.publish_packet("agent-a", b"{\"p\":1}", "sha256:p1").expect("the agent publishes its packet");
    a.publish_receipt("agent-a", b"{\"r\":1}", "sha256:r1").expect("the agent publishes its receipt");
    assert_eq!(a.get_decision("agent-a", "p1").expect("its decision").expect("there").bytes, b"approved");
    assert_eq!(a.wait_decision("agent-a", "p1", Duration::from_secs(5)).expect("its decision").bytes, b"approved");
    // What it may not.
    assert!(a.publish_packet("agent-b", b"{}", "sha256:x").is_err(), "a packet as another agent");
    assert!(a.get_decision("agent-b", "p9").is_err(), "another agent's decision");
    assert!(a.wait_decision("agent-b", "p9", Duration::from_secs(2)).is_err(), "another agent's decision, watched");
    assert!(a.put_decision("agent-a", "p2", b"approved").is_err(), "a decision of its own");
    let (line, hash, _) = sealed(p.head().expect("head").as_ref(), body("agent-a", "forged"));
    assert!(a.append_chain(Some(1), &line, &hash).is_err(), "a chain append");
    assert!(a.head().is_err(), "reading the chain");
    let js = a.inner().context().clone();
    let chain_stream = url.chain_stream();
    a.block_on(async {
        let st = js.get_stream_no_info(&chain_stream).await.expect("a handle, no request");
        assert!(st.delete_message(1).await.is_err(), "a delete");
        assert!(st.purge().await.is_err(), "a purge");
        assert!(js.delete_stream(&chain_stream).await.is_err(), "deleting the stream");
    });
    // The principal sees the chain as it was, the agent's packet, and no forged decision.
    let chain = p.read_chain().expect("read");
    assert_eq!(chain.len(), 1);
    let packets = p.list_packets().expect("packets");
    assert_eq!(packets.len(), 1);
    assert_eq!(packets[0].agent, "agent-a");
    assert_eq!(p.get_decision("agent-a", "p2").expect("get"), None);
}

#[test]
fn the_jetstream_store_keeps_the_rules_of_every_store() {
    use warrant::store::{ChainLog, DirectoryChain};
    let Some(server) = Server::start() else { return };
    let log = setup(&server.store_url("boundary"), 1);
    let copy = setup(&server.store_url("boundary-copy"), 1);
    chain_log::conformance(&log, &copy);
    // The same records copied into a chain file keep every entry_hash: the file verifies to the
    // same root as the stream, and holds the same bytes a line each.
    let dir = tempfile::tempdir().expect("tempdir");
    let file = DirectoryChain::new(dir.path().join("chain.jsonl"));
    let stored = chain_log::records(&log);
    let log: &dyn ChainLog = &log;
    let mut at = file.head().expect("head");
    for rec in &stored {
        file.append_after(&at, vec![rec.as_object().expect("object").clone()]).expect("copy into the file");
        at = file.head().expect("head");
    }
    assert_eq!(
        file.lines().expect("lines"),
        log.lines().expect("lines"),
        "the file and the stream hold the same lines"
    );
    let on_file = chain_file::verify_file(&dir.path().join("chain.jsonl"), VerifyOptions::default()).expect("verify");
    let on_stream = chain::verify_records(&stored, VerifyOptions::default());
    assert!(on_file.is_valid() && on_stream.is_valid());
    assert_eq!((on_file.total, on_file.root_hash), (on_stream.total, on_stream.root_hash));
}

#[test]
fn of_eight_writers_on_one_jetstream_head_exactly_one_appends() {
    use warrant::store::ChainLog;
    let Some(server) = Server::start() else { return };
    let url = server.store_url("race");
    let log = setup(&url, 1);
    let head = ChainLog::head(&log).expect("head");
    log.append_after(&head, vec![chain_log::body(0)]).expect("first record");
    chain_log::one_of_many_wins(&|| Box::new(open(&url, Duration::from_secs(10))), 8);
}

fn ok(o: &std::process::Output) -> String {
    let out = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert_eq!(o.status.code(), Some(0), "{out}");
    out
}

/// The parts of `warrant verify --json` and `warrant export` that describe the history (not when
/// the export was made).
fn verified(o: &std::process::Output) -> Value {
    let v: Value = serde_json::from_slice(&o.stdout).expect("verify --json");
    json!([v["valid"], v["total"], v["root_hash"], v["signatures_verified"], v["findings"]])
}

fn exported(o: &std::process::Output) -> Value {
    let mut v: Value = serde_json::from_slice(&o.stdout).expect("export");
    v["chain"].as_object_mut().expect("chain").remove("generated_at");
    v
}

#[test]
fn a_spool_migrates_to_jetstream_and_back_and_both_verify_and_export_the_same() {
    let Some(server) = Server::start() else { return };
    let e = cli_env::Env::new();
    // A real history: decisions signed by the principal, a refusal, a receipt.
    for id in ["m-1", "m-2", "m-3"] {
        ok(&e.propose("draft.compose", "agent-a", id, &[]));
    }
    ok(&e.run(&["approve", "--yes", "m-1"]));
    ok(&e.run(&["refuse", "--yes", "m-2", "--reason", "not this one"]));
    ok(&e.run(&["approve", "--yes", "m-3"]));
    let spool = e.spool().display().to_string();
    let url = server.store_url("migrated");

    let out = ok(&e.run(&["migrate", "--from", &spool, "--to", &url]));
    assert!(out.contains("both verify"), "{out}");
    assert!(out.contains("and 3 packets, 0 receipts, 3 decision files (0 already there)"), "{out}");
    let on_dir = e.run(&["verify", "--json"]);
    let on_js = e.run(&["--store", &url, "verify", "--json"]);
    ok(&on_dir);
    ok(&on_js);
    assert_eq!(verified(&on_js), verified(&on_dir), "verify gives the same answer for the same history");
    assert!(verified(&on_js)[3].as_u64().expect("signatures") >= 3, "the decisions' signatures were checked");
    let dir_export = e.run(&["export"]);
    let js_export = e.run(&["--store", &url, "export"]);
    assert_eq!(exported(&js_export), exported(&dir_export), "export gives the same envelope");

    // Run again: nothing is copied twice.
    let again = ok(&e.run(&["migrate", "--from", &spool, "--to", &url]));
    assert!(again.contains("(0 copied, "), "{again}");
    assert!(again.contains("and 0 packets, 0 receipts, 0 decision files (6 already there)"), "{again}");
    // And back, into a new directory: the same chain.
    let back = e.dir.path().join("back");
    ok(&e.run(&["migrate", "--from", &url, "--to", &back.display().to_string()]));
    assert_eq!(
        std::fs::read(back.join("chain.jsonl")).expect("copied chain"),
        std::fs::read(e.spool().join("chain.jsonl")).expect("chain"),
        "the round trip gives the chain file back byte for byte"
    );
    // The packets come back byte for byte, and the decisions with them.
    for id in ["m-1", "m-2", "m-3"] {
        let name = format!("{id}.json");
        assert_eq!(
            std::fs::read(back.join("packets").join(&name)).expect("copied packet"),
            std::fs::read(e.spool().join("packets").join(&name)).expect("packet"),
            "{id}"
        );
        assert!(back.join("decisions").join(&name).exists(), "{id}'s decision file");
    }
    let listed: Value =
        serde_json::from_str(&ok(&e.run(&["--spool", &back.display().to_string(), "list", "--json"]))).expect("list");
    let decision = |id: &str| {
        listed["packets"].as_array().expect("packets").iter().find(|p| p["packet_id"] == json!(id)).expect("listed")
            ["decision"]
            .clone()
    };
    assert_eq!(
        (decision("m-1"), decision("m-2"), decision("m-3")),
        (json!("approve"), json!("refuse"), json!("approve"))
    );
    // Their decisions reached the bucket too, under AGENT.PACKET_ID, and verify as decision files.
    let store =
        JetStreamSpool::connect(&url.parse::<StoreUrl>().expect("url"), &ConnectOptions::default()).expect("connect");
    let d = store.get_decision("agent-a", "m-2").expect("bucket").expect("m-2's decision");
    let v: Value = serde_json::from_slice(&d.bytes).expect("json");
    assert_eq!(v["decision"], json!("refuse"), "{v}");

    // A destination holding another chain is refused, and nothing is written to it.
    let other = cli_env::Env::new();
    ok(&other.propose("draft.compose", "agent-b", "o-1", &[]));
    ok(&other.run(&["approve", "--yes", "o-1"]));
    let before = std::fs::read(other.spool().join("chain.jsonl")).expect("other chain");
    let o = e.run(&["migrate", "--from", &url, "--to", &other.spool().display().to_string()]);
    assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not the start of"), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read(other.spool().join("chain.jsonl")).expect("other chain"), before);

    // A record changed on the way is caught: the source must verify before anything is copied.
    let tampered = e.dir.path().join("tampered");
    std::fs::create_dir_all(&tampered).expect("dir");
    let text = std::fs::read_to_string(e.spool().join("chain.jsonl")).expect("chain");
    std::fs::write(tampered.join("chain.jsonl"), text.replacen("not this one", "fine by me", 1)).expect("write");
    let o = e.run(&["migrate", "--from", &tampered.display().to_string(), "--to", &server.store_url("tampered")]);
    assert_eq!(o.status.code(), Some(1), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("nothing was copied"));

    // What runs on a directory only fails closed, saying so: it exits 2.
    let o = e.run(&["--store", &url, "init", "--agents-group", "agents"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("JetStream"), "{}", String::from_utf8_lossy(&o.stderr));
    let mut hook = e
        .cmd(&["hook", "claude-code", "--wait", "1"])
        .env("WARRANT_STORE", &url)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("hook");
    let event = json!({"session_id": "s", "cwd": "/tmp", "hook_event_name": "PreToolUse",
        "tool_name": "Bash", "tool_input": {"command": "git push"}, "tool_use_id": "h-1"});
    std::io::Write::write_all(&mut hook.stdin.take().expect("stdin"), event.to_string().as_bytes()).expect("event");
    let o = hook.wait_with_output().expect("hook");
    let v: Value = serde_json::from_slice(&o.stdout).expect("the hook answers JSON");
    // The hook governs the call on its replica of the store: the push waits for the principal,
    // and is denied when its wait runs out.
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], json!("deny"), "{v}");
    let reason = v["hookSpecificOutput"]["permissionDecisionReason"].as_str().expect("reason");
    assert!(reason.contains("no decision on"), "{reason}");
}

/// A NATS JWT as `nsc` issues them (NATS JWT v2: `header.claims.signature`, each base64url
/// without padding; the header `{"typ":"JWT","alg":"ed25519-nkey"}`; the signature Ed25519 by
/// `issuer`'s NKey over `header.claims`), with `nats` as the claims' `nats` object.
fn nats_jwt(issuer: &nkeys::KeyPair, subject: &str, name: &str, nats: Value) -> String {
    use base64::Engine as _;
    use sha2::Digest as _;
    let b64 = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
    let iat = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_secs();
    let mut claims = json!({"iat": iat, "iss": issuer.public_key(), "name": name, "sub": subject, "nats": nats});
    let id = sha2::Sha256::digest(claims.to_string().as_bytes());
    claims["jti"] = json!(id.iter().map(|b| format!("{b:02X}")).collect::<String>());
    let signed = format!("{}.{}", b64(br#"{"typ":"JWT","alg":"ed25519-nkey"}"#), b64(claims.to_string().as_bytes()));
    let signature = issuer.sign(signed.as_bytes()).expect("sign");
    format!("{signed}.{}", b64(&signature))
}

/// A `.creds` file's text, as `nsc generate creds` writes it: the user's JWT and NKey seed.
fn creds(jwt: &str, user: &nkeys::KeyPair) -> String {
    format!(
        "-----BEGIN NATS USER JWT-----\n{jwt}\n------END NATS USER JWT------\n\n\
         ************************* IMPORTANT *************************\n\
         NKEY Seed printed below can be used to sign and prove identity.\n\n\
         -----BEGIN USER NKEY SEED-----\n{}\n------END USER NKEY SEED------\n",
        user.seed().expect("seed")
    )
}

/// Operator mode (the server trusts an operator; accounts and users are JWTs, a user connects
/// with a `.creds` file): the principal's commands run on the store with `NATS_CREDS`; without
/// it, or with a user the account never signed, they fail and write nothing.
#[test]
fn a_credentials_file_connects_in_operator_mode_and_nothing_else_does() {
    let operator = nkeys::KeyPair::new_operator();
    let system = nkeys::KeyPair::new_account();
    let account = nkeys::KeyPair::new_account();
    let stranger_account = nkeys::KeyPair::new_account();
    let user = nkeys::KeyPair::new_user();
    let op_jwt = nats_jwt(
        &operator,
        &operator.public_key(),
        "op",
        json!({"type": "operator", "version": 2, "system_account": system.public_key()}),
    );
    let unlimited = json!({"subs": -1, "data": -1, "payload": -1, "imports": -1, "exports": -1,
        "wildcards": true, "conn": -1, "leaf": -1});
    let sys_jwt =
        nats_jwt(&operator, &system.public_key(), "SYS", json!({"type": "account", "version": 2, "limits": unlimited}));
    let mut with_js = unlimited.clone();
    for k in ["mem_storage", "disk_storage", "streams", "consumer"] {
        with_js[k] = json!(-1);
    }
    let acc_jwt = nats_jwt(
        &operator,
        &account.public_key(),
        "warrant",
        json!({"type": "account", "version": 2, "limits": with_js}),
    );
    let user_claims =
        json!({"type": "user", "version": 2, "pub": {}, "sub": {}, "subs": -1, "data": -1, "payload": -1});
    let user_jwt = nats_jwt(&account, &user.public_key(), "principal", user_claims.clone());
    // Signed by an account the operator never issued.
    let stray_jwt = nats_jwt(&stranger_account, &user.public_key(), "stray", user_claims);
    let conf = format!(
        "operator: {op_jwt}\nsystem_account: {}\nresolver: MEMORY\nresolver_preload: {{\n  {}: {sys_jwt}\n  {}: {acc_jwt}\n}}\n",
        system.public_key(),
        system.public_key(),
        account.public_key(),
    );
    let Some(server) = Server::start_with_config(Some(&conf)) else { return };
    let e = cli_env::Env::new();
    let good = e.dir.path().join("principal.creds");
    let stray = e.dir.path().join("stray.creds");
    std::fs::write(&good, creds(&user_jwt, &user)).expect("creds");
    std::fs::write(&stray, creds(&stray_jwt, &user)).expect("creds");
    let url = server.store_url("creds");
    let run = |creds: Option<&std::path::Path>, args: &[&str]| {
        let mut c = e.cmd(args);
        c.env("WARRANT_STORE", &url).env_remove("NATS_CREDS");
        if let Some(p) = creds {
            c.env("NATS_CREDS", p);
        }
        c.output().expect("run warrant")
    };
    // Without credentials, or with a user its account never signed: refused, and no stream made.
    let empty = e.dir.path().join("empty");
    std::fs::create_dir_all(&empty).expect("dir");
    let empty = empty.display().to_string();
    for (what, creds) in [("no credentials", None), ("a stray user", Some(stray.as_path()))] {
        let o = run(creds, &["migrate", "--from", &empty, "--to", &url]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_ne!(o.status.code(), Some(0), "{what}: {err}");
        assert!(err.contains("authorization violation"), "{what}: the server refused it: {err}");
        let o = run(creds, &["verify"]);
        assert_ne!(o.status.code(), Some(0), "{what}: verify must not pass: {}", String::from_utf8_lossy(&o.stderr));
    }
    // With its credentials file the principal creates the store, and its day runs on it.
    ok(&run(Some(&good), &["migrate", "--from", &empty, "--to", &url]));
    ok(&run(
        Some(&good),
        &["propose", "--class", "draft.compose", "--agent", "agent-a", "--summary", "s", "--id", "c-1"],
    ));
    ok(&run(Some(&good), &["approve", "--yes", "c-1"]));
    let v = verified(&run(Some(&good), &["verify", "--json"]));
    assert_eq!((v[0].clone(), v[1].clone()), (json!(true), json!(1)), "{v}");
    // The stray user still reads nothing of it.
    let o = run(Some(&stray), &["verify", "--json"]);
    assert_ne!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stdout));
    assert!(!String::from_utf8_lossy(&o.stdout).contains("root_hash"), "{}", String::from_utf8_lossy(&o.stdout));
}

/// A JetStream store keeps an agent's side of the spool ([`SpoolLog`]) by the rules every store
/// keeps: messages on the agent's subject, decision files as keys of the bucket.
#[test]
fn the_jetstream_store_keeps_the_agents_side_by_the_rules_of_every_store() {
    use warrant::store::publications::SpoolLog;
    let Some(server) = Server::start() else { return };
    let log = setup(&server.store_url("agents-side"), 1);
    spool_log::conformance(&log, &|agent, id, bytes| {
        log.put_decision(agent, id, bytes).expect("decision");
    });
    // On the agent's own subject: the principal's scan names the packet by its subject.
    let packets = log.list_packets().expect("list");
    assert!(packets.iter().all(|m| m.agent == "agent-a"), "{packets:?}");
    // An id that is no subject token is refused before anything is sent.
    let doc = spool_log::packet("p.dot", "agent-a");
    let e = log.publish(warrant::store::publications::Publication::Packet, "agent-a", "p.dot", &doc);
    assert!(e.is_err(), "{e:?}");
    assert_eq!(log.list_packets().expect("list").len(), 2, "nothing was published");
}

/// The consumers of every stream of the store `s` is connected to.
fn consumers(s: &JetStreamSpool) -> usize {
    let js = s.inner().context().clone();
    s.block_on(async move {
        use futures_util::StreamExt as _;
        let mut names = js.stream_names();
        let mut total = 0;
        while let Some(name) = names.next().await {
            let mut stream = js.get_stream(name.expect("stream name")).await.expect("stream");
            total += stream.info().await.expect("stream info").state.consumer_count;
        }
        total
    })
}

/// Reads end with their consumers: commands that only read (a chain read, a listing of packets
/// and receipts, a read of the spool's messages) leave no consumer behind, so the number of
/// consumers does not grow with the number of commands and the server's limit is never reached
/// by reading (it was: each read left an ordered consumer for 30 s).
#[test]
fn reads_leave_no_consumer_behind() {
    let Some(server) = Server::start() else { return };
    let s = setup(&server.store_url("reads"), 1);
    for i in 0..3 {
        append_at_head(&s, &body("agent-a", &format!("record {i}")));
    }
    s.publish_packet("agent-a", b"{\"p\":1}", "sha256:aa").expect("packet");
    s.publish_receipt("agent-a", b"{\"r\":1}", "sha256:bb").expect("receipt");
    let before = consumers(&s);
    for _ in 0..10 {
        assert_eq!(s.read_chain().expect("read").len(), 3);
        assert_eq!(s.read_chain_from(2).expect("read from").len(), 2);
        assert_eq!(s.list_packets().expect("packets").len(), 1);
        assert_eq!(s.list_receipts().expect("receipts").len(), 1);
        assert!(!s.read_spool_from(1).expect("spool").is_empty());
    }
    assert_eq!(consumers(&s), before, "50 reads left consumers behind");
}

/// The principal's commands on a store leave no consumer behind either: after five `list`s,
/// `verify`s and `export`s and a refusal the store has as many consumers as before (each left
/// two to four, for 30 s, and a principal deciding a dozen a second hit the server's limit).
#[test]
fn commands_on_a_store_leave_no_consumer_behind() {
    let Some(server) = Server::start() else { return };
    let e = cli_env::Env::new();
    for id in ["c-1", "c-2"] {
        ok(&e.propose("draft.compose", "agent-a", id, &[]));
    }
    ok(&e.run(&["approve", "--yes", "c-1"]));
    let url = server.store_url("commands");
    ok(&e.run(&["migrate", "--from", &e.spool().display().to_string(), "--to", &url]));
    let s = open(&url, Duration::from_secs(10));
    let before = consumers(&s);
    for _ in 0..5 {
        ok(&e.run(&["--store", &url, "list"]));
        ok(&e.run(&["--store", &url, "verify"]));
        ok(&e.run(&["--store", &url, "export"]));
    }
    ok(&e.run(&["--store", &url, "refuse", "--yes", "c-2", "--reason", "not now"]));
    assert_eq!(consumers(&s), before, "the commands left consumers behind");
}

/// `warrant init --store URL [--replicas N]` makes a store, once: again it only checks what is
/// there; a command on a store that was never made fails, and `--replicas` without a store, or
/// more copies than the server can place, is a usage error (exit 2).
#[test]
fn init_makes_a_store_and_again_checks_it() {
    let Some(server) = Server::start() else { return };
    let e = cli_env::Env::new();
    let url = server.store_url("made");
    assert_ne!(e.run(&["--store", &url, "verify"]).status.code(), Some(0), "a store never made is no store");
    let out = ok(&e.run(&["--store", &url, "init"]));
    assert!(out.contains("ready") && out.contains("1 copy each; 0 chain records"), "{out}");
    let again = ok(&e.run(&["--store", &url, "init", "--replicas", "1"]));
    assert!(again.contains("ready"), "{again}");
    let verified = ok(&e.run(&["--store", &url, "verify"]));
    assert!(verified.contains("0 records") || verified.contains("empty"), "{verified}");
    ok(&e.propose("draft.compose", "agent-a", "i-1", &["--store", &url]));
    assert!(ok(&e.run(&["--store", &url, "list"])).contains("i-1"));
    let o = e.run(&["--store", &url, "init", "--replicas", "3"]);
    assert_eq!(o.status.code(), Some(2), "three copies on one server: {}", String::from_utf8_lossy(&o.stderr));
    let o = e.run(&["init", "--replicas", "1"]);
    assert_eq!(o.status.code(), Some(2), "--replicas names no store: {}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--store"));
}

/// A decision whose signer died between the chain and the bucket reaches the bucket, and so the
/// agent waiting on it: the store's chain holds the signed decision and its bucket nothing (the
/// state a `warrant approve` killed after its append leaves), and the principal's next command
/// writes it there. It was rebuilt from the chain and marked as the bucket's, never written.
#[test]
fn a_decision_in_the_chain_reaches_the_bucket_when_its_signer_died_before() {
    let Some(server) = Server::start() else { return };
    let e = cli_env::Env::new();
    ok(&e.propose("draft.compose", "agent-a", "k-1", &[]));
    let url = server.store_url("crash");
    ok(&e.run(&["migrate", "--from", &e.spool().display().to_string(), "--to", &url]));
    // Signed on the directory spool (whose chain was as empty as the store's), then appended to
    // the store's chain only.
    ok(&e.run(&["approve", "--yes", "k-1"]));
    let line = std::fs::read(e.spool().join("chain.jsonl")).expect("chain");
    let line = line.strip_suffix(b"\n").expect("one record");
    let record: Value = serde_json::from_slice(line).expect("record");
    let s = open(&url, Duration::from_secs(10));
    assert!(s.head().expect("head").is_none(), "the store's chain starts empty");
    s.append_chain(None, line, record["entry_hash"].as_str().expect("entry_hash")).expect("append");
    assert!(s.get_decision("agent-a", "k-1").expect("get").is_none(), "the bucket lacks it, as after the crash");
    ok(&e.run(&["--store", &url, "list"]));
    let held = s.get_decision("agent-a", "k-1").expect("get").expect("the bucket holds the decision");
    let file: Value = serde_json::from_slice(&held.bytes).expect("decision file");
    assert_eq!(file["document"], record["metadata"]["warrant_decision"], "the chain's signed decision");
}

/// A server listed first that accepts connections and never answers (stopped, hung) costs a
/// second, then the next server is used: with `NATS_TIMEOUT=3`, the command still runs (it
/// spent the whole three seconds on the hung server, and failed, before).
#[test]
fn a_hung_server_listed_first_is_passed_over_within_a_second() {
    let Some(server) = Server::start() else { return };
    let hung = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let hung_port = hung.local_addr().expect("addr").port();
    // Accepts, and holds each connection open without a word.
    let held = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let keep = std::sync::Arc::clone(&held);
    std::thread::spawn(move || {
        for conn in hung.incoming().flatten() {
            keep.lock().expect("lock").push(conn);
        }
    });
    let e = cli_env::Env::new();
    let real = server.store_url("failover");
    ok(&e.run(&["--store", &real, "init"]));
    let address = real.strip_prefix("nats://").expect("nats url");
    let both = format!("nats://127.0.0.1:{hung_port},{address}");
    let o = e.cmd(&["--store", &both, "verify"]).env("NATS_TIMEOUT", "3").output().expect("run");
    ok(&o);
    assert!(!held.lock().expect("lock").is_empty(), "the hung server was tried first");
}

/// A packet that could not be published (here: to a store never made; in a leader election: for
/// a moment) is retried with the same id, and the message says so: it said to choose another.
#[test]
fn a_packet_not_published_is_retried_under_the_same_id() {
    let Some(server) = Server::start() else { return };
    let e = cli_env::Env::new();
    let url = server.store_url("never-made");
    let o = e.propose("draft.compose", "agent-a", "r-1", &["--store", &url]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("retry with the same --id") && !err.contains("choose another"), "{err}");
    ok(&e.run(&["--store", &url, "init"]));
    ok(&e.propose("draft.compose", "agent-a", "r-1", &["--store", &url]));
    assert!(ok(&e.run(&["--store", &url, "list"])).contains("r-1"), "the same id, sent again, is published");
}
