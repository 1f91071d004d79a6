#![allow(missing_docs)] // criterion_group! generates an undocumented function.
//! Criterion benchmarks of the console with 10,000 pending packets: one frame's render (160×48,
//! the selection in the middle of the list), the state update a scan result causes, and the
//! spool scans behind it (an unchanged spool checked file by file or by its listing, and one new
//! packet found by the listing or by its name alone).

use criterion::{Criterion, criterion_group, criterion_main};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::hint::black_box;
use warrant::console::app::{self, Action, State};
use warrant::console::keymap::{Key, Keymap};
use warrant::console::theme::Theme;
use warrant::console::ui;
use warrant::store::spool::{Recheck, Scanner, Spool};

/// 2026-11-21T09:00:00Z.
const NOW: f64 = 1_795_251_600.0;
const N: usize = 10_000;
const CLASSES: [&str; 4] = ["email.send.external", "calendar.create", "draft.compose", "social.post.public"];

fn packet(k: usize) -> serde_json::Value {
    let at = time::OffsetDateTime::from_unix_timestamp(NOW as i64 - k as i64).expect("time");
    warrant::protocol::packet::portable_packet(
        &format!("bench-{k:05}"),
        CLASSES[k % CLASSES.len()],
        &format!("agent-{}", k % 7),
        &format!("benchmark packet {k}"),
        serde_json::json!({"n": k}),
        &warrant::protocol::clock::format_rfc3339(at),
    )
}

fn publish(spool: &Spool, k: usize) {
    let bytes = serde_json::to_vec(&packet(k)).expect("json");
    std::fs::write(spool.packets_dir().join(format!("bench-{k:05}.json")), bytes).expect("write");
}

fn benches(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let spool = Spool::new(dir.path().join("spool"));
    spool.ensure().expect("spool");
    for k in 0..N {
        publish(&spool, k);
    }
    let mut scanner = Scanner::new();
    let snap = scanner.scan(&spool).expect("scan");
    assert_eq!(snap.packets.len(), N);

    let mut g = c.benchmark_group("console 10k pending");
    g.sample_size(20);
    let mut state = State::new("/tmp/spool".into(), None, None, true, Keymap::default_map(), NOW);
    app::update(&mut state, Action::Scanned(snap.clone()));
    for _ in 0..N / 2 {
        app::update(&mut state, Action::Key(Key::parse("j").expect("key")));
    }
    let theme = Theme::builtin("default").expect("theme");
    let mut term = Terminal::new(TestBackend::new(160, 48)).expect("terminal");
    g.bench_function("render one frame 160x48", |b| {
        b.iter(|| term.draw(|f| ui::render(black_box(&state), &theme, f)).map(|_| ()).expect("draw"))
    });
    g.bench_function("update with a scan result (listed)", |b| {
        b.iter(|| app::update(&mut state, Action::Scanned(black_box(snap.clone()))))
    });
    g.bench_function("update with a scan result, then assess", |b| {
        b.iter(|| {
            app::update(&mut state, Action::Scanned(black_box(snap.clone())));
            app::update(&mut state, Action::Assess)
        })
    });
    g.bench_function("rescan an unchanged spool, lstat every file", |b| {
        b.iter(|| scanner.scan_if_changed(black_box(&spool), Recheck::Every).expect("scan"))
    });
    g.bench_function("rescan an unchanged spool, listing only", |b| {
        b.iter(|| scanner.scan_if_changed(black_box(&spool), Recheck::Renamed).expect("scan"))
    });
    let mut k = N;
    g.bench_function("scan after one new packet, listing only", |b| {
        b.iter(|| {
            publish(&spool, k);
            k += 1;
            scanner.scan_if_changed(black_box(&spool), Recheck::Renamed).expect("scan")
        })
    });
    g.bench_function("scan after one new packet, its name only", |b| {
        b.iter(|| {
            publish(&spool, k);
            scanner.recheck_names([format!("bench-{k:05}.json")]);
            k += 1;
            scanner.scan_if_changed(black_box(&spool), Recheck::Touched).expect("scan")
        })
    });
    let filtered = {
        let mut s = state.clone();
        for key in ["/", "z", "q", "enter"] {
            app::update(&mut s, Action::Key(Key::parse(key).expect("key")));
        }
        s
    };
    let mut state = filtered;
    g.bench_function("update with a scan result (listed), a filter typed", |b| {
        b.iter(|| app::update(&mut state, Action::Scanned(black_box(snap.clone()))))
    });
    g.finish();
}

criterion_group!(console, benches);
criterion_main!(console);
