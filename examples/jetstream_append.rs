//! Chain appends per second on NATS JetStream (`warrant::store::jetstream`), against a
//! server you start by hand: appends with compare-and-set (each record sealed onto the head and
//! published with `Nats-Expected-Last-Subject-Sequence` and `Nats-Msg-Id`) from 1 writer and from
//! 16 writers (threads, each its own connection, re-reading the head after a stale one), beside
//! the raw JetStream publish rate (one publish awaiting its acknowledgement, no headers) on a
//! stream with the same settings (file storage, deny delete/purge/rollup, the same replicas) on
//! the same server, measured in the same run; and the same bodies through the library's
//! [`ChainAppender`] (one writer task for the process: what has queued is sealed and appended as
//! one atomic batch) from 1 and from 16 threads.
//!
//! ```text
//! nats-server -js -a 127.0.0.1 -p 4222 -sd /tmp/js-bench &
//! cargo run --release --example jetstream_append -- [--url nats://127.0.0.1:4222/bench] [--count 2000] [--writers 16] [--replicas 1]
//! ```
//! Each run makes new streams (the spool's name gets a time suffix), so it starts empty.

use serde_json::{Map, Value, json};
use std::time::{Duration, Instant};
use warrant::protocol::canonical;
use warrant::protocol::chain;
use warrant::store::jetstream::{
    ChainAppender, ChainEntry, ConnectOptions, JetStreamSpool, JsError, SetupOptions, StoreUrl, chain_head_of,
};

/// A record body whose line is about 1 KB, like a receipt's (as `examples/append_rate.rs`).
fn body(writer: usize, seq: usize) -> Map<String, Value> {
    let mut meta = Map::new();
    meta.insert("note".into(), json!(format!("w{writer:02}-s{seq:06}")));
    meta.insert("pad".into(), json!("x".repeat(600)));
    chain::new_record_body("agent-rate", "draft.compose", None, "success", "t", "suggest", "2026-11-21T09:00:00Z", meta)
}

fn sealed(tip: Option<&ChainEntry>, b: Map<String, Value>) -> (Vec<u8>, String) {
    let a = chain::seal(b, &chain_head_of(tip).expect("head"));
    (canonical::to_canonical_vec(&a.record), a.entry_hash)
}

fn connect(url: &StoreUrl) -> JetStreamSpool {
    JetStreamSpool::connect(url, &ConnectOptions { timeout: Duration::from_secs(10), ..Default::default() })
        .expect("connect")
}

/// One writer that keeps its own head: seal onto the last append, no re-read.
fn single_writer(url: &StoreUrl, count: usize) -> f64 {
    let s = connect(url);
    let mut tip = s.head().expect("head");
    let t = Instant::now();
    for i in 0..count {
        let (line, hash) = sealed(tip.as_ref(), body(0, i));
        let ack = s.append_chain(tip.as_ref().map(|t| t.seq), &line, &hash).expect("append");
        tip = Some(ChainEntry { seq: ack.seq, line });
    }
    count as f64 / t.elapsed().as_secs_f64()
}

/// `writers` threads, each its own connection: read the head, seal, append; again on a stale head.
fn many_writers(url: &StoreUrl, writers: usize, count: usize) -> (f64, usize) {
    let per = count / writers;
    let t = Instant::now();
    let handles: Vec<_> = (0..writers)
        .map(|w| {
            let url = url.clone();
            std::thread::spawn(move || {
                let s = connect(&url);
                let mut stale = 0;
                for i in 0..per {
                    let b = body(w, i);
                    loop {
                        let tip = s.head().expect("head");
                        let (line, hash) = sealed(tip.as_ref(), b.clone());
                        match s.append_chain(tip.as_ref().map(|t| t.seq), &line, &hash) {
                            Ok(_) => break,
                            Err(JsError::StaleHead { .. }) => stale += 1,
                            Err(e) => panic!("append: {e}"),
                        }
                    }
                }
                stale
            })
        })
        .collect();
    let stale = handles.into_iter().map(|h| h.join().expect("writer")).sum();
    ((per * writers) as f64 / t.elapsed().as_secs_f64(), stale)
}

/// `writers` threads appending through one [`ChainAppender`]: appends a second, stale heads,
/// records per group.
fn through_appender(url: &StoreUrl, writers: usize, count: usize) -> (f64, u64, f64) {
    let s = connect(url);
    let appender = ChainAppender::start(&s);
    let per = count / writers;
    let t = Instant::now();
    let handles: Vec<_> = (0..writers)
        .map(|w| {
            let appender = appender.clone();
            std::thread::spawn(move || {
                for i in 0..per {
                    appender.append(body(w, i)).expect("append through the appender");
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("writer");
    }
    let rate = (per * writers) as f64 / t.elapsed().as_secs_f64();
    (rate, appender.stale_heads(), (per * writers) as f64 / appender.groups().max(1) as f64)
}

/// Raw publishes awaiting each acknowledgement, from `writers` connections, on a stream with the
/// chain stream's settings (another name and subject).
fn raw(url: &StoreUrl, writers: usize, count: usize) -> f64 {
    let s = connect(url);
    let js = s.inner().context().clone();
    let subject = format!("warrant.{}.raw", url.name);
    s.block_on(async {
        let chain = js.get_stream(url.chain_stream()).await.expect("chain stream");
        let mut cfg = chain.cached_info().config.clone();
        cfg.name = format!("warrant_{}_raw", url.name);
        cfg.subjects = vec![subject.clone()];
        js.get_or_create_stream(cfg).await.expect("raw stream");
    });
    let per = count / writers;
    let line = sealed(None, body(0, 0)).0;
    let t = Instant::now();
    let handles: Vec<_> = (0..writers)
        .map(|_| {
            let (url, subject, line) = (url.clone(), subject.clone(), line.clone());
            std::thread::spawn(move || {
                let s = connect(&url);
                let js = s.inner().context().clone();
                s.block_on(async {
                    for _ in 0..per {
                        js.publish(subject.clone(), line.clone().into()).await.expect("publish").await.expect("ack");
                    }
                });
            })
        })
        .collect();
    for h in handles {
        h.join().expect("publisher");
    }
    (per * writers) as f64 / t.elapsed().as_secs_f64()
}

fn main() {
    let mut url = "nats://127.0.0.1:4222/bench".to_string();
    let (mut count, mut writers, mut replicas) = (2000usize, 16usize, 1usize);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut v = || args.next().expect("a value");
        match a.as_str() {
            "--url" => url = v(),
            "--count" => count = v().parse().expect("--count N"),
            "--writers" => writers = v().parse().expect("--writers N"),
            "--replicas" => replicas = v().parse().expect("--replicas 1|3"),
            _ => panic!("usage: jetstream_append [--url URL] [--count N] [--writers N] [--replicas 1|3]"),
        }
    }
    let base: StoreUrl = url.parse().expect("store url");
    let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_secs();
    let fresh = |tag: &str| StoreUrl { name: format!("{}_{tag}_{stamp}", base.name), ..base.clone() };
    let (one, many, lib1, libn) = (fresh("one"), fresh("many"), fresh("lib1"), fresh("libn"));
    for u in [&one, &many, &lib1, &libn] {
        connect(u).setup(SetupOptions { replicas }).expect("setup");
    }
    println!("{count} appends of ~1 KB records on {} (replicas {replicas})", base.server_addresses().join(","));
    let raw1 = raw(&one, 1, count);
    let cas1 = single_writer(&one, count);
    let rawn = raw(&many, writers, count);
    let (casn, stale) = many_writers(&many, writers, count);
    let (app1, _, _) = through_appender(&lib1, 1, count);
    let (appn, app_stale, group) = through_appender(&libn, writers, count);
    println!("| | 1 writer | {writers} writers |");
    println!("| --- | --- | --- |");
    println!("| raw JetStream publish (ack awaited) | {raw1:.0} | {rawn:.0} |");
    println!("| chain append with compare-and-set | {cas1:.0} | {casn:.0} ({stale} stale heads) |");
    println!(
        "| through one ChainAppender (atomic batches) | {app1:.0} | {appn:.0} ({app_stale} stale heads, {group:.1} records a batch) |"
    );
    println!(
        "appender / raw publish: {:.0}% with 1 writer, {:.0}% with {writers}",
        100.0 * app1 / raw1,
        100.0 * appn / rawn
    );
    for (u, want) in
        [(&one, count), (&many, count / writers * writers), (&lib1, count), (&libn, count / writers * writers)]
    {
        let s = connect(u);
        let chain = s.read_chain().expect("read back");
        let recs: Vec<Value> = chain.iter().map(|e| e.record().expect("record")).collect();
        let report = chain::verify_records(&recs, chain::VerifyOptions::default());
        assert!(report.is_valid(), "{:?}", report.first());
        assert_eq!(report.total, want, "{}: every append is in the chain", u.chain_stream());
        println!("{}: {} records read back, verified", u.chain_stream(), report.total);
    }
}
