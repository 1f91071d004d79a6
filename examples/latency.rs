//! Live load: agents publish packets at a fixed rate while the real console runs in tmux, and
//! this measures, for a random sample of the packets, the time from the agent's rename into
//! `packets/` to the packet's first appearance on the screen; then it checks that every packet
//! was listed (the console's pending count and `warrant list --json`).
//!
//! ```text
//! cargo build --release
//! cargo run --release --example latency -- --rate 1000 --seconds 10
//! ```
//! Options: `--rate N` packets per second in all (default 1000), `--seconds S` (default 10),
//! `--threads T` publishing threads (default 2), `--sample K` packets measured (default 1000),
//! `--rows R` pane height (default 60), `--sync` to fsync each file and the directory as
//! `Spool::publish` does, `--bin PATH` (default `target/release/warrant`). tmux must be installed.
//!
//! `--store nats://HOST:PORT/NAME` runs the same measurement over NATS JetStream: the
//! store is created (`warrant migrate` of an empty spool), each publishing thread publishes on
//! its own connection to the agent's subject, the console runs on the store (its replica kept
//! live by the follower), and the time is taken just before each publish (so it includes the
//! publish's acknowledgement: an upper bound). A `nats-server -js` must be running there.
//!
//! Method. 10,000 packets do not fit on a screen, so the measurement narrows what the console
//! shows with its own filter: `K` packets chosen at random carry the word `zqprobe` and their
//! sequence number in their summary, and the console's filter (`/zqprobe`) is typed before the
//! first packet is published, so the pending list shows only the sampled packets, newest first.
//! Every 100 ms the driver presses `home` so the list's window stays at the top, where a new
//! packet arrives. The console still scans, parses and assesses every packet (the filter applies
//! after the scan), so the load is the full rate. A tmux control-mode client captures the top of
//! the pane every millisecond (`capture-pane`, no process per capture) and notes when each sampled
//! sequence number is first in the pane; the time is taken when the capture's answer arrives,
//! so each figure is an upper bound that includes tmux's round trip (printed too). A sampled
//! packet is missed only when more than a screenful of newer sampled packets arrived with it.
//! At the end the filter is cleared (`esc`) and the title's pending count must reach the number
//! published; `warrant list --json` must list every published id.

use std::collections::HashMap;
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

struct Args {
    rate: f64,
    seconds: f64,
    threads: usize,
    sample: usize,
    rows: u16,
    sync: bool,
    bin: String,
    store: Option<String>,
}

fn args() -> Args {
    let mut a = Args {
        rate: 1000.0,
        seconds: 10.0,
        threads: 2,
        sample: 1000,
        rows: 60,
        sync: false,
        bin: "target/release/warrant".into(),
        store: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--rate" => a.rate = value().parse().expect("--rate"),
            "--seconds" => a.seconds = value().parse().expect("--seconds"),
            "--threads" => a.threads = value().parse::<usize>().expect("--threads").max(1),
            "--sample" => a.sample = value().parse().expect("--sample"),
            "--rows" => a.rows = value().parse().expect("--rows"),
            "--bin" => a.bin = value(),
            "--sync" => a.sync = true,
            "--store" => a.store = Some(value()),
            other => panic!("unknown option {other} (see the example's documentation)"),
        }
    }
    a
}

/// splitmix64: the sample's choice, seeded from the clock.
fn next_random(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A tmux control-mode client: one command at a time, its output lines back.
struct Control {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: BufReader<std::process::ChildStdout>,
}

impl Control {
    fn attach(socket: &str) -> Self {
        let mut child = Command::new("tmux")
            .args(["-L", socket, "-C", "attach-session", "-t", "t", "-f", "no-output,ignore-size"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("tmux control client");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut c = Self { child, stdin, stdout };
        c.command("display-message -p ready");
        c
    }

    /// Sends `cmd` and returns the lines of its answer.
    fn command(&mut self, cmd: &str) -> Vec<String> {
        writeln!(self.stdin, "{cmd}").expect("tmux command");
        self.stdin.flush().expect("tmux flush");
        let mut out = Vec::new();
        let mut inside = false;
        let mut line = String::new();
        loop {
            line.clear();
            if self.stdout.read_line(&mut line).expect("tmux read") == 0 {
                panic!("tmux control client ended");
            }
            let l = line.trim_end_matches('\n');
            if l.starts_with("%begin") {
                inside = true;
            } else if inside && (l.starts_with("%end") || l.starts_with("%error")) {
                return out;
            } else if inside {
                out.push(l.to_owned());
            }
        }
    }
}

impl Drop for Control {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn tmux(socket: &str, args: &[&str]) -> String {
    let out = Command::new("tmux").args(["-L", socket]).args(args).output().expect("tmux");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn wait_for(socket: &str, what: &str, limit: Duration) {
    let start = Instant::now();
    while !tmux(socket, &["capture-pane", "-p", "-t", "t"]).contains(what) {
        assert!(start.elapsed() < limit, "the console never showed {what:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The console's CPU time so far (user + system), from `/proc/PID/stat`.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat.rsplit_once(')').map_or("", |(_, r)| r).split_whitespace().collect();
    let tick = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // After the command name: state is field 0, utime 11, stime 12 (clock ticks of 1/100 s).
    (tick(11) + tick(12)) / 100.0
}

/// The sequence numbers of sampled packets in a capture, and the title's pending count.
fn parse_screen(lines: &[String]) -> (Vec<usize>, Option<usize>) {
    let mut seen = Vec::new();
    for l in lines {
        let mut rest = l.as_str();
        while let Some(i) = rest.find("zqprobe ") {
            rest = &rest[i + 8..];
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            if digits.len() == 6
                && let Ok(n) = digits.parse()
            {
                seen.push(n);
            }
        }
    }
    let pending = lines
        .first()
        .and_then(|t| t.split(" pending").next())
        .and_then(|t| t.rsplit(' ').next())
        .and_then(|n| n.parse().ok());
    (seen, pending)
}

/// Packet `k` of the run: its id, agent and document.
fn packet(k: usize, sampled: bool) -> (String, String, serde_json::Value) {
    let id = format!("lat-{k:06}");
    let agent = format!("agent-lat-{}", k % 8);
    let summary = if sampled { format!("zqprobe {k:06}") } else { format!("load {k:06}") };
    let doc = warrant::protocol::packet::portable_packet(
        &id,
        "draft.compose",
        &agent,
        &summary,
        serde_json::json!({"n": k}),
        &warrant::protocol::clock::now_rfc3339(),
    );
    (id, agent, doc)
}

/// Publishes packet `k` to a JetStream store, as `warrant propose` does; the time is taken
/// before the publish.
fn publish_to_store(store: &warrant::store::jetstream::JetStreamSpool, k: usize, sampled: bool) -> Instant {
    let (_, agent, doc) = packet(k, sampled);
    let hash = warrant::protocol::canonical::canonical_hash(&doc);
    let bytes = serde_json::to_vec(&doc).expect("json");
    let t = Instant::now();
    store.publish_packet(&agent, &bytes, &hash).expect("publish");
    t
}

fn publish(packets: &Path, k: usize, sampled: bool, sync: bool) -> Instant {
    let (id, _, doc) = packet(k, sampled);
    let tmp = packets.join(format!(".{id}.tmp"));
    let mut f = std::fs::File::create(&tmp).expect("create");
    f.write_all(&serde_json::to_vec(&doc).expect("json")).expect("write");
    if sync {
        f.sync_all().expect("sync");
    }
    drop(f);
    let t = Instant::now();
    std::fs::rename(&tmp, packets.join(format!("{id}.json"))).expect("rename");
    if sync {
        std::fs::File::open(packets).and_then(|d| d.sync_all()).expect("sync dir");
    }
    t
}

fn main() {
    let a = args();
    let total = (a.rate * a.seconds).round() as usize;
    let dir = tempfile::tempdir().expect("tempdir");
    let spool = dir.path().join("spool");
    let packets = spool.join("packets");
    std::fs::create_dir_all(&packets).expect("spool");
    let env = |k: &str, v: &Path| format!("{k}={}", v.display());
    let mut envs = vec![
        env("WARRANT_CONFIG", &dir.path().join("config")),
        env("WARRANT_SPOOL", &spool),
        env("XDG_DATA_HOME", &dir.path().join("data")),
    ];
    let store_url: Option<warrant::store::jetstream::StoreUrl> =
        a.store.as_ref().map(|s| s.parse().expect("--store: a nats:// store URL"));
    if let Some(url) = &a.store {
        let empty = dir.path().join("empty");
        std::fs::create_dir_all(&empty).expect("dir");
        let made = Command::new(&a.bin)
            .args(["migrate", "--from", &empty.display().to_string(), "--to", url])
            .envs(envs.iter().filter_map(|e| e.split_once('=')))
            .status()
            .expect("warrant migrate");
        assert!(made.success(), "could not create the store {url}");
        envs.push(format!("WARRANT_STORE={url}"));
    }

    // The sample: `a.sample` distinct sequence numbers, a partial Fisher–Yates shuffle.
    let mut seed =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64);
    let mut order: Vec<usize> = (0..total).collect();
    let k = a.sample.min(total);
    for i in 0..k {
        let j = i + (next_random(&mut seed) % (total - i) as u64) as usize;
        order.swap(i, j);
    }
    let sampled: Arc<Vec<bool>> = Arc::new({
        let mut s = vec![false; total];
        for &i in &order[..k] {
            s[i] = true;
        }
        s
    });

    let socket = format!("warrant-latency-{}", std::process::id());
    let rows = a.rows.to_string();
    let mut new = Command::new("tmux");
    new.args(["-L", &socket, "-f", "/dev/null", "new-session", "-d", "-s", "t", "-x", "160", "-y", &rows]);
    for e in &envs {
        new.args(["-e", e]);
    }
    assert!(new.args([a.bin.as_str(), "console", "--read-only"]).status().expect("tmux").success());
    tmux(&socket, &["set-option", "-g", "window-size", "manual"]);
    wait_for(&socket, "no pending packets", Duration::from_secs(20));
    let pid: u32 =
        tmux(&socket, &["display-message", "-p", "-t", "t", "#{pane_pid}"]).trim().parse().expect("pane pid");
    tmux(&socket, &["send-keys", "-t", "t", "/"]);
    tmux(&socket, &["send-keys", "-t", "t", "-l", "zqprobe"]);
    tmux(&socket, &["send-keys", "-t", "t", "Enter"]);
    wait_for(&socket, "nothing matches the filter", Duration::from_secs(10));

    let mut control = Control::attach(&socket);
    let capture = format!("capture-pane -p -t t -S 0 -E {}", a.rows.saturating_sub(3));
    let cpu_before = cpu_seconds(pid);
    let renamed: Arc<Mutex<Vec<Option<Instant>>>> = Arc::new(Mutex::new(vec![None; total]));
    let done = Arc::new(AtomicBool::new(false));
    let start = Instant::now() + Duration::from_millis(200);
    let lateness = Arc::new(Mutex::new(Duration::ZERO));
    let publishers: Vec<_> = (0..a.threads)
        .map(|t| {
            let (renamed, sampled, packets, lateness) =
                (Arc::clone(&renamed), Arc::clone(&sampled), packets.clone(), Arc::clone(&lateness));
            let (rate, threads, sync) = (a.rate, a.threads, a.sync);
            let store = store_url.as_ref().map(|url| {
                warrant::store::jetstream::JetStreamSpool::connect(url, &Default::default()).expect("connect")
            });
            std::thread::spawn(move || {
                let mut late = Duration::ZERO;
                for k in (t..total).step_by(threads) {
                    let due = start + Duration::from_secs_f64(k as f64 / rate);
                    let now = Instant::now();
                    if due > now {
                        std::thread::sleep(due - now);
                    } else {
                        late = late.max(now - due);
                    }
                    let at = match &store {
                        Some(store) => publish_to_store(store, k, sampled[k]),
                        None => publish(&packets, k, sampled[k], sync),
                    };
                    renamed.lock().expect("lock")[k] = Some(at);
                }
                let mut l = lateness.lock().expect("lock");
                *l = (*l).max(late);
            })
        })
        .collect();
    {
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            for p in publishers {
                p.join().expect("publisher");
            }
            done.store(true, Ordering::SeqCst);
        });
    }

    let mut first_seen: HashMap<usize, Instant> = HashMap::new();
    let mut candidates: HashMap<usize, Instant> = HashMap::new();
    let mut round_trips: Vec<Duration> = Vec::new();
    let mut last_home = Instant::now();
    let mut finished_at: Option<Instant> = None;
    loop {
        if last_home.elapsed() >= Duration::from_millis(100) {
            control.command("send-keys -t t Home");
            last_home = Instant::now();
        }
        // One capture a millisecond: the figures' resolution. Back to back, the captures took
        // about a core of this 2-core machine (tmux and this driver) away from the console.
        std::thread::sleep(Duration::from_millis(1));
        let sent = Instant::now();
        let lines = control.command(&capture);
        let got = Instant::now();
        round_trips.push(got - sent);
        // A capture can catch a frame half written (tmux applies the console's output in
        // pieces), so a number counts only when the next capture shows it too; its time is the
        // first capture's.
        let visible = parse_screen(&lines).0.into_iter().filter(|n| sampled.get(*n) == Some(&true));
        let mut next: HashMap<usize, Instant> = HashMap::new();
        for n in visible {
            if first_seen.contains_key(&n) {
                continue;
            }
            match candidates.get(&n) {
                Some(at) => {
                    first_seen.insert(n, *at);
                }
                None => {
                    next.insert(n, got);
                }
            }
        }
        candidates = next;
        if done.load(Ordering::SeqCst) {
            let f = *finished_at.get_or_insert_with(Instant::now);
            if first_seen.len() >= k || f.elapsed() > Duration::from_secs(10) {
                break;
            }
        }
    }
    let published = Instant::now();
    let cpu_run = cpu_seconds(pid) - cpu_before;
    let wall_run = published.duration_since(start).as_secs_f64();

    // Every packet: clear the filter and wait for the full count in the title.
    control.command("send-keys -t t Escape");
    let mut listed = 0;
    let all_listed = loop {
        if let (_, Some(n)) = parse_screen(&control.command(&capture)) {
            listed = n;
            if n == total {
                break Some(published.elapsed());
            }
        }
        if published.elapsed() > Duration::from_secs(30) {
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    drop(control);
    tmux(&socket, &["kill-server"]);

    let out =
        Command::new(&a.bin).args(["list", "--json"]).envs(envs.iter().filter_map(|e| e.split_once('='))).output();
    let cli_ids: std::collections::HashSet<String> = out
        .ok()
        .and_then(|o| serde_json::from_slice::<serde_json::Value>(&o.stdout).ok())
        .and_then(|v| v["packets"].as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(|p| p["packet_id"].as_str().map(str::to_owned))
        .collect();
    let cli_all = (0..total).all(|k| cli_ids.contains(&format!("lat-{k:06}")));

    let renamed = renamed.lock().expect("lock");
    let mut samples: Vec<Duration> = first_seen
        .iter()
        .filter_map(|(n, seen)| renamed.get(*n).copied().flatten().map(|r| seen.saturating_duration_since(r)))
        .collect();
    // How the latency grows with the spool: the median of each tenth of the run, in order.
    let mut by_tenth: Vec<Vec<Duration>> = vec![Vec::new(); 10];
    for (n, seen) in &first_seen {
        if let Some(r) = renamed.get(*n).copied().flatten() {
            by_tenth[(n * 10 / total.max(1)).min(9)].push(seen.saturating_duration_since(r));
        }
    }
    samples.sort();
    round_trips.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let q =
        |v: &[Duration], p: f64| v.get(((v.len().max(1) - 1) as f64 * p).round() as usize).map_or(f64::NAN, |d| ms(*d));
    println!(
        "published {total} packets at {} /s for {} s from {} threads (most behind schedule: {:.1} ms{})",
        a.rate,
        a.seconds,
        a.threads,
        ms(*lateness.lock().expect("lock")),
        if a.sync { ", fsync on" } else { "" }
    );
    println!(
        "{} → on screen, {} of {k} sampled packets seen: p50 {:.1} ms, p95 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        if a.store.is_some() { "publish" } else { "rename" },
        samples.len(),
        q(&samples, 0.5),
        q(&samples, 0.95),
        q(&samples, 0.99),
        samples.last().map_or(f64::NAN, |d| ms(*d)),
    );
    let medians: Vec<String> = by_tenth
        .iter_mut()
        .map(|v| {
            v.sort();
            format!("{:.0}", q(v, 0.5))
        })
        .collect();
    println!("median by tenth of the run (ms): {}", medians.join(" "));
    println!(
        "capture round trip ({} captures): p50 {:.2} ms, p99 {:.2} ms",
        round_trips.len(),
        q(&round_trips, 0.5),
        q(&round_trips, 0.99)
    );
    println!(
        "console CPU during the run: {cpu_run:.2} s over {wall_run:.1} s ({:.0}% of a core)",
        100.0 * cpu_run / wall_run
    );
    match all_listed {
        Some(d) => println!("title shows {total} pending {:.0} ms after the last capture above", ms(d)),
        None => println!("title never showed {total} pending (last seen: {listed})"),
    }
    println!("`warrant list --json` lists every published id: {cli_all} ({} packets)", cli_ids.len());
    let ok = samples.len() == k && all_listed.is_some() && cli_all;
    // `exit` runs no destructors: remove the spool (tens of MB, often on a tmpfs) first.
    drop(dir);
    std::process::exit(i32::from(!ok));
}
