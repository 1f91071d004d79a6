//! The console with 10,000 pending packets: scrolling through the list shows the rows around the
//! selection, with the counts of those hidden above and below, and the packet under the cursor
//! in the detail pane. The frame is built from the visible window only (its cost is in
//! `benches/console.rs`), so these tests stay cheap.
#![cfg(feature = "console")]

use std::sync::Arc;
use warrant::console::app::{self, Action, Pane, State};
use warrant::console::keymap::{Key, Keymap};
use warrant::store::spool::{PacketEntry, Recheck, Scanner, Snapshot, Spool};

/// 2026-11-21T09:00:00Z.
const NOW: f64 = 1_795_251_600.0;
const N: usize = 10_000;

/// Packet `k` was created `k` seconds before `NOW`, so the list (newest first) is in `k` order.
fn packet(k: usize) -> serde_json::Value {
    let at = time::OffsetDateTime::from_unix_timestamp(NOW as i64 - k as i64).expect("time");
    warrant::protocol::packet::portable_packet(
        &format!("p-{k:05}"),
        "draft.compose",
        &format!("agent-{}", k % 7),
        &format!("row {k:05}"),
        serde_json::json!({"n": k}),
        &warrant::protocol::clock::format_rfc3339(at),
    )
}

/// A scan as the event loop delivers it: the packets listed at once, then the assessment.
fn scanned(s: &mut State, snap: Snapshot) {
    app::update(s, Action::Scanned(snap));
    app::update(s, Action::Assess);
}

fn snapshot() -> Snapshot {
    let packets = (0..N)
        .map(|k| {
            let bytes = serde_json::to_vec(&packet(k)).expect("json");
            let id = format!("p-{k:05}");
            let p = warrant::protocol::packet::parse_packet(&bytes, &id).expect("valid packet");
            PacketEntry { file: format!("{id}.json").into(), arrived: NOW, owner: 4_000_000, packet: Arc::new(p) }
        })
        .collect();
    Snapshot { packets, receipts: vec![], invalid: vec![], ..Snapshot::default() }
}

fn state() -> State {
    let mut s = State::new("/tmp/spool".into(), None, None, true, Keymap::default_map(), NOW);
    scanned(&mut s, snapshot());
    s
}

fn press(s: &mut State, key: &str, times: usize) {
    for _ in 0..times {
        app::update(s, Action::Key(Key::parse(key).expect("key")));
    }
}

use crate::screen as support_screen;
use support_screen::screen;

/// The `row NNNNN` summaries on the screen's list, top to bottom (a list row names the class
/// before the summary; the detail pane's title line does not).
fn rows(screen: &str) -> Vec<usize> {
    screen
        .lines()
        .filter_map(|l| l.split_once("row ").filter(|(before, _)| before.contains("draft.compose")))
        .filter_map(|(_, r)| r.get(..5).and_then(|d| d.parse().ok()))
        .collect()
}

// At 160×48 the list has 42 rows: the window follows the selection down, and the frame shows
// exactly the rows around it, with the rest counted in the borders.
#[test]
fn scrolling_ten_thousand_packets_shows_the_window_around_the_selection() {
    let mut s = state();
    assert_eq!(s.len(Pane::Pending), N);
    let top = screen(&s, 160, 48);
    assert!(top.contains(" 10000 pending "), "{top}");
    assert_eq!(rows(&top), (0..42).collect::<Vec<_>>(), "{top}");
    assert!(top.contains("↓ 9958 more"), "{top}");
    assert!(!top.contains("newer"), "{top}");

    // Down past the window: the selection stays on the bottom row.
    press(&mut s, "j", 5000);
    let mid = screen(&s, 160, 48);
    assert_eq!(rows(&mid), (4959..=5000).collect::<Vec<_>>(), "{mid}");
    assert!(mid.contains("↑ 4959 newer"), "{mid}");
    // The count sits on the list's bottom border, never over the tab bar.
    let tabs = mid.lines().find(|l| l.contains("1 Pending")).expect("the tab bar");
    assert!(tabs.contains("2 Dec") && tabs.contains("8 Aud") && !tabs.contains("newer"), "{mid}");
    let newer = mid.lines().position(|l| l.contains("newer")).expect("newer");
    let more = mid.lines().position(|l| l.contains("more")).expect("more");
    assert_eq!(newer, more, "both counts on the bottom border: {mid}");
    assert!(mid.contains("↓ 4999 more"), "{mid}");
    // The detail pane shows the packet under the cursor.
    assert!(mid.contains("p-05000"), "{mid}");

    press(&mut s, "pagedown", 3);
    assert_eq!(rows(&screen(&s, 160, 48)).last(), Some(&5030));
    press(&mut s, "k", 1);
    assert_eq!(rows(&screen(&s, 160, 48)).last(), Some(&5029));

    press(&mut s, "G", 1);
    let bottom = screen(&s, 160, 48);
    assert_eq!(rows(&bottom), ((N - 42)..N).collect::<Vec<_>>(), "{bottom}");
    assert!(bottom.contains(&format!("↑ {} newer", N - 42)), "{bottom}");
    assert!(!bottom.contains("more"), "{bottom}");
    assert!(bottom.contains("p-09999"), "{bottom}");

    press(&mut s, "g", 1);
    assert_eq!(rows(&screen(&s, 160, 48)), (0..42).collect::<Vec<_>>());
}

// The narrow layout (list above the detail) scrolls the same way.
#[test]
fn the_narrow_layout_scrolls_too() {
    let mut s = state();
    press(&mut s, "j", 7777);
    let shown = rows(&screen(&s, 80, 24));
    assert_eq!(shown.last(), Some(&7777), "{shown:?}");
    assert!(!shown.is_empty() && shown.windows(2).all(|w| w[1] == w[0] + 1), "{shown:?}");
}

// A new packet arriving above the one under review keeps the selection on that packet, and the
// count of newer rows grows by one.
#[test]
fn arrivals_keep_the_selection_on_the_packet_under_review() {
    let mut s = state();
    press(&mut s, "j", 100);
    let mut snap = snapshot();
    let mut doc = packet(0);
    doc["packet_id"] = "p-new".into();
    doc["summary"] = "the newest".into();
    let newest =
        warrant::protocol::packet::parse_packet(&serde_json::to_vec(&doc).expect("json"), "p-new").expect("packet");
    snap.packets
        .insert(0, PacketEntry { file: "p-new.json".into(), arrived: NOW, owner: 4_000_000, packet: Arc::new(newest) });
    scanned(&mut s, snap);
    assert_eq!(s.selected_packet().map(|p| p.id.clone()).as_deref(), Some("p-00100"));
    let shown = screen(&s, 160, 48);
    assert!(shown.contains(" 10001 pending "), "{shown}");
    assert!(shown.contains(&format!("↑ {} newer", 101 - 41)), "{shown}");
}

// Scanning a real spool of 10,000 files: a rescan with nothing new answers "unchanged", one new
// file answers a snapshot with it first, and a removed file answers a snapshot without it.
#[test]
fn rescans_report_only_changes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spool = Spool::new(dir.path().join("spool"));
    spool.ensure().expect("spool");
    for k in 1..N {
        let bytes = serde_json::to_vec(&packet(k)).expect("json");
        std::fs::write(spool.packets_dir().join(format!("p-{k:05}.json")), bytes).expect("write");
    }
    let mut scanner = Scanner::new();
    let first = scanner.scan_if_changed(&spool, Recheck::Every).expect("scan").expect("the first scan answers");
    assert_eq!(first.packets.len(), N - 1);
    assert!(scanner.scan_if_changed(&spool, Recheck::Every).expect("scan").is_none());
    spool.publish(&spool.packets_dir(), "p-00000", &packet(0)).expect("publish");
    let next = scanner.scan_if_changed(&spool, Recheck::Every).expect("scan").expect("a new file");
    assert_eq!(next.packets.len(), N);
    assert_eq!(next.packets[0].packet.id, "p-00000");
    assert_eq!(next.packets[N - 1].packet.id, "p-09999");
    std::fs::remove_file(spool.packets_dir().join("p-04242.json")).expect("remove");
    let after = scanner.scan_if_changed(&spool, Recheck::Every).expect("scan").expect("a removed file");
    assert_eq!(after.packets.len(), N - 1);
    assert!(after.packet("p-04242").is_none());
    // Listing only: a packet republished by a rename (a new inode) is seen, one rewritten in
    // place under its inode is not, until every file is checked.
    let mut doc = packet(7);
    doc["summary"] = "republished".into();
    spool.publish(&spool.packets_dir(), "p-00007", &doc).expect("publish");
    let next = scanner.scan_if_changed(&spool, Recheck::Renamed).expect("scan").expect("a rename");
    assert_eq!(next.packet("p-00007").map(|e| e.packet.summary.as_str()), Some("republished"));
    assert!(scanner.scan_if_changed(&spool, Recheck::Renamed).expect("scan").is_none());
    doc["summary"] = "rewritten in place".into();
    let path = spool.packets_dir().join("p-00007.json");
    let ino = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&path).expect("stat"));
    std::fs::write(&path, serde_json::to_vec(&doc).expect("json")).expect("rewrite");
    assert_eq!(std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&path).expect("stat")), ino);
    assert!(scanner.scan_if_changed(&spool, Recheck::Renamed).expect("scan").is_none());
    let every = scanner.scan_if_changed(&spool, Recheck::Every).expect("scan").expect("the rewrite");
    assert_eq!(every.packet("p-00007").map(|e| e.packet.summary.as_str()), Some("rewritten in place"));
    // A fresh scanner always answers, even for an unchanged spool.
    let fresh = Scanner::new().scan_if_changed(&spool, Recheck::Renamed).expect("scan");
    assert_eq!(fresh.map(|s| s.packets.len()), Some(N - 1));
}

// At scale: a field filter typed live over 10,000 packets, then every sort, stays cheap
// (each packet's answer to the terms is kept while the filter stays the same) and keeps the
// packet under the cursor.
#[test]
fn field_filters_and_sorts_over_ten_thousand_packets() {
    let mut s = state();
    press(&mut s, "j", 3);
    let start = std::time::Instant::now();
    press(&mut s, "/", 1);
    for c in "agent:*-3 -\"row 09\"".chars() {
        let name = if c == ' ' { "space".to_owned() } else { c.to_string() };
        press(&mut s, &name, 1);
    }
    press(&mut s, "enter", 1);
    let typed = start.elapsed();
    // k % 7 == 3 below 10,000, less those from 9000 on.
    let want = (0..N).filter(|k| k % 7 == 3 && *k < 9000).count();
    assert_eq!(s.len(Pane::Pending), want);
    assert_eq!(s.selected_packet().map(|p| p.id.clone()).as_deref(), Some("p-00003"));
    // A rescan without one of the matching packets.
    let mut snap = snapshot();
    snap.packets.remove(10);
    scanned(&mut s, snap);
    assert_eq!(s.len(Pane::Pending), want - 1);
    press(&mut s, "esc", 1);
    assert_eq!(s.len(Pane::Pending), N - 1);
    let start = std::time::Instant::now();
    press(&mut s, "s", 3);
    let sorted = start.elapsed();
    assert_eq!(s.sort.as_str(), "agent");
    let top: Vec<String> = s.pending()[..4].iter().map(|e| e.packet.id.clone()).collect();
    assert_eq!(top, ["p-00000", "p-00007", "p-00014", "p-00021"]);
    assert_eq!(s.selected_packet().map(|p| p.id.clone()).as_deref(), Some("p-00003"));
    let shown = screen(&s, 160, 48);
    assert!(shown.contains(" sort: agent ") && shown.contains(" above "), "{shown}");
    eprintln!("typing a field filter over {N} packets: {typed:?}; three sorts: {sorted:?}");
}
