//! Durability of the chain: a torn final line is set aside, never dropped or repaired into the
//! chain; the principal's signed checkpoints detect records cut off the end.

use serde_json::{Map, Value, json};
use warrant::protocol::chain::{self, Check, VerifyOptions};
use warrant::protocol::decision::Verdict;
use warrant::protocol::keys::{PinnedKeys, Principal};
use warrant::store::chain_file;
use warrant::store::spool::{self, Scanner, Spool};

fn receipt_body(n: u64) -> Map<String, Value> {
    let mut meta = Map::new();
    meta.insert("note".into(), json!(format!("receipt {n}")));
    chain::new_record_body("agent-a", "draft.compose", None, "success", "t", "suggest", "2026-11-21T09:00:00Z", meta)
}

#[test]
fn a_torn_final_line_is_reported_then_set_aside_byte_for_byte() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("chain.jsonl");
    for n in 0..3 {
        chain_file::append(&path, |_| Ok(receipt_body(n))).expect("append");
    }
    let whole = std::fs::read(&path).expect("read");
    let fragment = br#"{"action":"draft.compose","agent":"agent-a","approver":nu"#;
    std::fs::write(&path, [whole.as_slice(), fragment].concat()).expect("tear");

    // Verification reports the torn tail, and the three records still verify.
    let report = chain_file::verify_file(&path, VerifyOptions::default()).expect("verify");
    assert!(report.is_valid(), "{:?}", report.findings);
    assert_eq!((report.total, report.torn_tail), (3, Some(fragment.len() as u64)));

    // Recovery moves exactly the fragment to a side file and restores the chain's bytes.
    let aside = chain_file::recover_torn_tail(&path).expect("recover").expect("something set aside");
    assert_eq!(std::fs::read(&aside.side_file).expect("side file"), fragment);
    assert_eq!((aside.bytes, aside.offset), (fragment.len() as u64, whole.len() as u64));
    assert!(aside.message().contains("torn") && aside.message().contains(&aside.side_file.display().to_string()));
    assert_eq!(std::fs::read(&path).expect("read"), whole);
    assert_eq!(chain_file::recover_torn_tail(&path).expect("again"), None);

    // An append onto a torn chain sets the fragment aside itself and links to the last record.
    std::fs::write(&path, [whole.as_slice(), b"{\"half"].concat()).expect("tear again");
    let appended = chain_file::append(&path, |_| Ok(receipt_body(9))).expect("append after a tear");
    assert_eq!(appended.chain_index, 4);
    let sides: Vec<_> = std::fs::read_dir(dir.path())
        .expect("dir")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("chain.jsonl.torn-"))
        .collect();
    assert_eq!(sides.len(), 2, "each tear keeps its own side file");
    let report = chain_file::verify_file(&path, VerifyOptions::default()).expect("verify");
    assert!(report.is_valid() && report.torn_tail.is_none(), "{:?}", report);
    assert_eq!(report.total, 4);
}

struct Fixture {
    _dir: tempfile::TempDir,
    spool: Spool,
    principal: Principal,
    pinned: PinnedKeys,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("tempdir");
    let spool = Spool::new(dir.path().join("spool")).with_checkpoint_copies(dir.path().join("copies"));
    spool.ensure().expect("spool");
    let principal = Principal::from_seed("alice", &[7u8; 32]);
    let mut pinned = PinnedKeys::default();
    pinned.pin("alice", principal.verifying_key());
    Fixture { _dir: dir, spool, principal, pinned }
}

fn decide_all(f: &Fixture, n: usize) {
    for i in 0..n {
        let id = format!("p-{i}");
        let doc = warrant::protocol::packet::portable_packet(
            &id,
            "draft.compose",
            "agent-a",
            "s",
            json!({"n": i}),
            "2026-11-21T09:00:00Z",
        );
        f.spool.publish(&f.spool.packets_dir(), &id, &doc).expect("publish");
    }
    let snap = Scanner::new().scan(&f.spool).expect("scan");
    for i in 0..n {
        let id = format!("p-{i}");
        let packet = snap.packet(&id).expect("packet").packet.clone();
        spool::decide(&f.spool, &f.principal, &f.pinned, &packet, Verdict::Approve, None, "2026-11-21T10:00:00Z")
            .expect("decide");
    }
}

#[test]
fn every_decision_signs_a_checkpoint_and_truncation_is_detected() {
    let f = fixture();
    decide_all(&f, 4);
    let (cp, notes) = warrant::store::checkpoint_files::latest(&f.spool, &f.pinned);
    let cp = cp.expect("a checkpoint");
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(cp.records, 4);
    let bytes = std::fs::read(f.spool.chain_path()).expect("chain");
    assert_eq!(cp.bytes, bytes.len() as u64);
    // The agent's decision file carries the checkpoint signed with it.
    let file: Value =
        serde_json::from_slice(&std::fs::read(f.spool.decision_path("p-3")).expect("decision file")).expect("json");
    assert_eq!(warrant::protocol::checkpoint::verify(&file["checkpoint"], &f.pinned, "p-3").expect("valid").records, 4);
    assert!(spool::verify_chain(&f.spool, &f.pinned).expect("verify").report.is_valid());

    // Cut the last record off: the chain alone still verifies, the checkpoint does not agree.
    let cut = bytes[..bytes.len() - 1].iter().rposition(|&b| b == b'\n').expect("newline") + 1;
    std::fs::write(f.spool.chain_path(), &bytes[..cut]).expect("truncate");
    let plain = chain_file::verify_file(&f.spool.chain_path(), VerifyOptions::default()).expect("verify");
    assert!(plain.is_valid(), "a prefix of a chain is a valid chain");
    let view = spool::verify_chain(&f.spool, &f.pinned).expect("verify");
    let first = view.report.first().expect("a finding");
    assert_eq!((first.index, first.check), (None, Check::Checkpoint), "{first}");
    assert!(first.message.contains("3 records, fewer than the 4"), "{first}");
    // A broken chain is never signed onto.
    let snap = Scanner::new().scan(&f.spool).expect("scan");
    let doc = warrant::protocol::packet::portable_packet(
        "p-x",
        "draft.compose",
        "agent-a",
        "s",
        json!({}),
        "2026-11-21T09:00:00Z",
    );
    f.spool.publish(&f.spool.packets_dir(), "p-x", &doc).expect("publish");
    let snap2 = Scanner::new().scan(&f.spool).expect("scan");
    drop(snap);
    let packet = snap2.packet("p-x").expect("packet").packet.clone();
    let err = spool::decide(&f.spool, &f.principal, &f.pinned, &packet, Verdict::Approve, None, "2026-11-21T10:00:00Z")
        .expect_err("refused");
    assert!(matches!(err, spool::DecideError::ChainBroken(_)), "{err}");
}

fn publish_and_decide(f: &Fixture, id: &str) -> Result<spool::Decided, spool::DecideError> {
    let doc = warrant::protocol::packet::portable_packet(
        id,
        "draft.compose",
        "agent-a",
        "s",
        json!({}),
        "2026-11-21T09:00:00Z",
    );
    f.spool.publish(&f.spool.packets_dir(), id, &doc).expect("publish");
    let snap = Scanner::new().scan(&f.spool).expect("scan");
    let packet = snap.packet(id).expect("packet").packet.clone();
    spool::decide(&f.spool, &f.principal, &f.pinned, &packet, Verdict::Approve, None, "2026-11-21T10:00:00Z")
}

/// The checkpoint a decision signs hashes the chain's bytes before it (`prefix_sha256`), and
/// the next decision, verifying only the records after it, still sees what only the whole chain
/// shows: a tail record repeating a `record_id` of the prefix.
#[test]
fn checkpoints_hash_their_prefix_and_a_repeated_record_id_is_refused() {
    let f = fixture();
    decide_all(&f, 2);
    // Receipts after the checkpoint, then a decision: its checkpoint extends the prefix's hash.
    for n in 0..3 {
        chain_file::append(&f.spool.chain_path(), |_| Ok(receipt_body(n))).expect("append");
    }
    publish_and_decide(&f, "p-next").expect("decided after the receipts");
    let (cp, _) = warrant::store::checkpoint_files::latest(&f.spool, &f.pinned);
    let cp = cp.expect("a checkpoint");
    let bytes = std::fs::read(f.spool.chain_path()).expect("chain");
    assert_eq!((cp.records, cp.bytes), (6, bytes.len() as u64));
    assert_eq!(cp.prefix_sha256, Some(warrant::protocol::canonical::sha256_prefixed(&bytes)));

    // A receipt reusing the first record's id: the tail alone is clean, the chain is not.
    let first: Value = serde_json::from_slice(bytes.split(|&b| b == b'\n').next().expect("line")).expect("json");
    let mut body = receipt_body(9);
    body.insert("record_id".into(), first["record_id"].clone());
    chain_file::append(&f.spool.chain_path(), |_| Ok(body)).expect("append");
    let full = chain_file::verify_file(&f.spool.chain_path(), VerifyOptions::default()).expect("verify");
    let expected = full.first().expect("a duplicate").to_string();
    assert!(expected.contains("duplicate record_id"), "{expected}");
    match publish_and_decide(&f, "p-after-dup") {
        Err(spool::DecideError::ChainBroken(why)) => assert_eq!(why, expected),
        other => panic!("decided onto a chain with a repeated record_id: {:?}", other.map(|d| d.appended.chain_index)),
    }
}

#[test]
fn a_rewritten_head_and_a_forged_checkpoint_are_caught() {
    let f = fixture();
    decide_all(&f, 2);
    let good = std::fs::read(f.spool.chain_path()).expect("chain");
    let cp_file = f.spool.root().join(warrant::store::checkpoint_files::CHECKPOINT_FILE);
    let signed: Value = serde_json::from_slice(&std::fs::read(&cp_file).expect("checkpoint")).expect("json");

    // A checkpoint claiming more records, re-signed by a key that is not pinned, is ignored with a note.
    let mallory = Principal::from_seed("alice", &[9u8; 32]);
    let head = signed["document"]["head_hash"].as_str().expect("hash");
    let forged = warrant::protocol::checkpoint::sign(
        &mallory,
        99,
        head,
        1,
        &warrant::protocol::canonical::sha256_prefixed(&good),
        "t",
    );
    std::fs::write(&cp_file, serde_json::to_vec(&forged).expect("json")).expect("write");
    let (cp, notes) = warrant::store::checkpoint_files::latest(&f.spool, &f.pinned);
    assert_eq!(cp.expect("the decision files' checkpoint").records, 2);
    assert!(notes.iter().any(|n| n.contains("checkpoint ignored")), "{notes:?}");

    // The principal's private copy survives the spool's files being deleted.
    std::fs::remove_file(&cp_file).expect("rm");
    for e in std::fs::read_dir(f.spool.decisions_dir()).expect("dir").flatten() {
        std::fs::remove_file(e.path()).expect("rm");
    }
    let (cp, _) = warrant::store::checkpoint_files::latest(&f.spool, &f.pinned);
    assert_eq!(cp.expect("the principal's copy").records, 2);

    // Cut the last record and append another in its place: as long, valid, but not what was signed.
    let text = String::from_utf8(good).expect("utf-8");
    let first_line = text.lines().next().expect("line");
    std::fs::write(f.spool.chain_path(), format!("{first_line}\n")).expect("cut");
    chain_file::append(&f.spool.chain_path(), |_| Ok(receipt_body(1))).expect("append");
    let view = spool::verify_chain(&f.spool, &f.pinned).expect("verify");
    let finding = view.report.findings.iter().find(|x| x.check == Check::Checkpoint).expect("checkpoint finding");
    assert_eq!(finding.index, Some(1), "{finding}");
    assert!(finding.message.contains("rewritten"), "{finding}");
}

// ---------------------------------------------------------------------------------------------
// Crashes: writers killed with SIGKILL at random points of their appends.
//
// The test binary runs itself as the child writers (the same test, with WARRANT_CRASH_CHILD set),
// so the children are real processes calling the real library: `chain_file::append` on a real file
// under the real lock. A looping child prints `B <seq>` before an append, `L <seq>` from inside
// the builder (called under the lock, just before the line is written) and `A <seq> <index>`
// only after `append` returned Ok: the acknowledgement. A torn child takes the chain's lock as
// warrant does, writes a prefix of a genuine sealed line with plain file I/O (as a write cut short
// would leave it), prints `T <len> <hex>` and waits to be killed.
// ---------------------------------------------------------------------------------------------

const CHILD_ENV: &str = "WARRANT_CRASH_CHILD";

fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

fn tagged_body(tag: &str) -> Map<String, Value> {
    let mut meta = Map::new();
    meta.insert("note".into(), json!(tag));
    chain::new_record_body(
        "agent-crash",
        "draft.compose",
        None,
        "success",
        "t",
        "suggest",
        "2026-11-21T09:00:00Z",
        meta,
    )
}

/// The child's side: `loop <chain> <writer>` or `torn <chain> <writer> <seed>`. Never returns.
fn crash_child(spec: &str) -> ! {
    use std::io::Write as _;
    let parts: Vec<&str> = spec.split('\u{1f}').collect();
    let path = std::path::PathBuf::from(parts[1]);
    let writer = parts[2];
    let mut out = std::io::stdout().lock();
    // The test harness may have printed "test <name> ... " without a newline.
    writeln!(out).expect("stdout");
    if parts[0] == "loop" {
        for seq in 0u64.. {
            writeln!(out, "B {seq}").and_then(|()| out.flush()).expect("stdout");
            let appended = chain_file::append(&path, |_| {
                // Under the lock: the line is written right after this returns.
                let mut o = std::io::stdout().lock();
                writeln!(o, "L {seq}").and_then(|()| o.flush()).expect("stdout");
                Ok(tagged_body(&format!("{writer}:{seq}")))
            });
            match appended {
                Ok(a) => writeln!(out, "A {seq} {}", a.chain_index).and_then(|()| out.flush()).expect("stdout"),
                Err(e) => writeln!(out, "E {seq} {e}").and_then(|()| out.flush()).expect("stdout"),
            }
        }
        unreachable!()
    }
    // A torn writer: lock as warrant does, then write part of a genuine next line.
    let mut seed: u64 = parts[3].parse().expect("seed");
    let lock = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path.with_file_name(".chain.lock"))
        .expect("lock file");
    // Poll as warrant does, but faster: a blocking flock can starve behind four looping writers.
    loop {
        match lock.try_lock() {
            Ok(()) => break,
            Err(std::fs::TryLockError::WouldBlock) => std::thread::sleep(std::time::Duration::from_micros(20)),
            Err(std::fs::TryLockError::Error(e)) => panic!("lock: {e}"),
        }
    }
    let bytes = std::fs::read(&path).unwrap_or_default();
    if !bytes.is_empty() && bytes.last() != Some(&b'\n') {
        // An earlier fragment is still there: adding to it would make one longer fragment.
        writeln!(out, "S").and_then(|()| out.flush()).expect("stdout");
    } else {
        let head = match bytes[..bytes.len().saturating_sub(1)].rsplit(|&b| b == b'\n').next() {
            Some(last) if !last.is_empty() => {
                let v: Value = serde_json::from_slice(last).expect("last line");
                chain::ChainHead {
                    last_index: v["chain_index"].as_u64().expect("index"),
                    last_hash: v["entry_hash"].as_str().map(str::to_owned),
                }
            }
            _ => chain::ChainHead { last_index: 0, last_hash: None },
        };
        let sealed = chain::seal(tagged_body(&format!("{writer}:torn")), &head);
        let line = warrant::protocol::canonical::to_canonical_vec(&sealed.record);
        // 1..=line.len() bytes of the line, never its newline: a torn line.
        let cut = 1 + (xorshift(&mut seed) as usize) % line.len();
        let mut file = std::fs::OpenOptions::new().create(true).append(true).open(&path).expect("chain");
        file.write_all(&line[..cut]).expect("write");
        let hex: String = line[..cut].iter().map(|b| format!("{b:02x}")).collect();
        writeln!(out, "T {cut} {hex}").and_then(|()| out.flush()).expect("stdout");
    }
    // Wait to be killed (holding the lock); give up after a minute should the parent be gone.
    std::thread::sleep(std::time::Duration::from_secs(60));
    std::process::exit(3)
}

/// A child process and the lines it printed.
struct Child {
    proc: std::process::Child,
    lines: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    reader: Option<std::thread::JoinHandle<()>>,
    writer: String,
}

fn spawn_child(spec: &str, writer: &str) -> Child {
    use std::io::BufRead as _;
    // The test's own name in this test binary: its module path without the crate.
    let module = module_path!().split_once("::").map_or("", |(_, m)| m);
    let test = "sigkill_at_random_points_of_appends_loses_nothing_acknowledged";
    let exact = if module.is_empty() { test.to_owned() } else { format!("{module}::{test}") };
    let mut proc = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args(["--exact", &exact, "--nocapture"])
        .env(CHILD_ENV, spec)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .expect("spawn child");
    let stdout = proc.stdout.take().expect("stdout");
    let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = lines.clone();
    let reader = std::thread::spawn(move || {
        // Only the child's own lines (the test harness prints its own too).
        let ours = |l: &str| l == "S" || ["B ", "L ", "A ", "E ", "T "].iter().any(|p| l.starts_with(p));
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok).filter(|l| ours(l)) {
            sink.lock().expect("lines").push(line);
        }
    });
    Child { proc, lines, reader: Some(reader), writer: writer.to_owned() }
}

/// Kills a child with SIGKILL, reaps it, and returns everything it printed.
fn kill_child(mut c: Child) -> (String, Vec<String>) {
    c.proc.kill().expect("SIGKILL");
    c.proc.wait().expect("reap");
    if let Some(reader) = c.reader.take() {
        reader.join().expect("reader");
    }
    let lines = std::mem::take(&mut *c.lines.lock().expect("lines"));
    (std::mem::take(&mut c.writer), lines)
}

impl Drop for Child {
    /// A failing test still kills its children.
    fn drop(&mut self) {
        let _ = self.proc.kill();
        let _ = self.proc.wait();
    }
}

fn wait_line(c: &Child, pred: impl Fn(&str) -> bool) -> String {
    let start = std::time::Instant::now();
    loop {
        if let Some(l) = c.lines.lock().expect("lines").iter().find(|l| pred(l)) {
            return l.clone();
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(20),
            "child {} never printed its line; it printed {:?}; /proc/locks:\n{}",
            c.writer,
            c.lines.lock().expect("lines"),
            std::fs::read_to_string("/proc/locks").unwrap_or_default()
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

fn from_hex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex")).collect()
}

// SIGKILL at random moments of tight append loops (4 writers at once) and of torn writes: the
// chain verifies, every acknowledged append is there exactly once at its index and in its
// writer's order, and every torn line was set aside byte for byte with a message, never dropped
// or joined to the chain. WARRANT_CRASH_KILLS (default 100) sets the number of kills.
#[test]
fn sigkill_at_random_points_of_appends_loses_nothing_acknowledged() {
    if let Ok(spec) = std::env::var(CHILD_ENV) {
        crash_child(&spec);
    }
    let kills: usize = std::env::var("WARRANT_CRASH_KILLS").ok().and_then(|k| k.parse().ok()).unwrap_or(100);
    let mut seed: u64 = std::env::var("WARRANT_CRASH_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64) | 1
    });
    eprintln!("WARRANT_CRASH_SEED={seed}");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("chain.jsonl");
    let path_s = path.display().to_string();
    let sep = '\u{1f}';
    let mut generation = 0usize;
    let next_loop = |generation: &mut usize| {
        *generation += 1;
        let w = format!("g{generation}");
        spawn_child(&format!("loop{sep}{path_s}{sep}{w}"), &w)
    };
    let mut live: Vec<Child> = (0..4).map(|_| next_loop(&mut generation)).collect();
    let mut finished: Vec<(String, Vec<String>)> = Vec::new();
    let mut torn: Vec<Vec<u8>> = Vec::new();
    let (mut skipped, mut torn_kills) = (0, 0);
    let started = std::time::Instant::now();
    // The last kills stop the four loop writers one by one (no restart), then a final torn write,
    // so that it stays at the end of the chain for the checks below.
    let finale = kills.saturating_sub(1 + live.len());
    for k in 0..kills {
        if k + 1 == kills || (k % 5 == 4 && k < finale) {
            // A torn write, killed once it is written.
            generation += 1;
            let w = format!("t{generation}");
            let spec = format!("torn{sep}{path_s}{sep}{w}{sep}{}", xorshift(&mut seed));
            let child = spawn_child(&spec, &w);
            let line = wait_line(&child, |l| l.starts_with("T ") || l == "S");
            match line.split(' ').collect::<Vec<_>>()[..] {
                ["T", _, hex] => torn.push(from_hex(hex)),
                _ => skipped += 1,
            }
            torn_kills += 1;
            kill_child(child);
            continue;
        }
        std::thread::sleep(std::time::Duration::from_micros(xorshift(&mut seed) % 8000));
        let slot = (xorshift(&mut seed) % live.len() as u64) as usize;
        let victim = live.swap_remove(slot);
        finished.push(kill_child(victim));
        if k < finale {
            live.push(next_loop(&mut generation));
        }
    }
    let elapsed = started.elapsed();
    assert!(live.is_empty(), "every loop writer was killed");

    // Phases at death, from the last line each writer printed.
    let text = std::fs::read(&path).expect("chain");
    let records: Vec<Value> = text
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty() && l.ends_with(b"}"))
        .filter_map(|l| serde_json::from_slice(l).ok())
        .collect();
    let note = |r: &Value| r.pointer("/metadata/note").and_then(Value::as_str).map(str::to_owned);
    let present: std::collections::HashSet<String> = records.iter().filter_map(note).collect();
    let (mut idle, mut before_lock, mut under_lock_unwritten, mut written_unacked) = (0, 0, 0, 0);
    let mut acked: Vec<(String, u64)> = Vec::new();
    for (writer, lines) in &finished {
        for l in lines {
            if let ["A", seq, index] = l.split(' ').collect::<Vec<_>>()[..] {
                acked.push((format!("{writer}:{seq}"), index.parse().expect("index")));
            }
            assert!(!l.starts_with('E'), "{writer}: an append failed: {l}");
        }
        match lines.last().map(|l| l.split(' ').collect::<Vec<_>>()) {
            None => idle += 1,
            Some(v) if v[0] == "A" => idle += 1,
            Some(v) if v[0] == "B" => before_lock += 1,
            Some(v) if present.contains(&format!("{writer}:{}", v[1])) => written_unacked += 1,
            Some(_) => under_lock_unwritten += 1,
        }
    }
    eprintln!(
        "{kills} kills in {elapsed:.2?} ({torn_kills} torn writers, {skipped} skipped); loop writers at death: \
         {idle} between appends, {before_lock} in append before the builder (taking the lock, reading the head), \
         {under_lock_unwritten} under the lock before their line was written, {written_unacked} after their line \
         was written but before the acknowledgement (syncing); {} acknowledged appends",
        acked.len()
    );

    // The torn line at the end is detected on open (`warrant verify` says so, and verifies the rest).
    let report = chain_file::verify_file(&path, VerifyOptions::default()).expect("verify");
    assert!(report.is_valid(), "{:?}", report.findings);
    let last_torn = torn.last().expect("at least one torn write");
    assert_eq!(report.torn_tail, Some(last_torn.len() as u64), "the final torn line is reported");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_warrant"))
        .args(["verify", &dir.path().display().to_string()])
        .env("WARRANT_CONFIG", dir.path().join("config"))
        .output()
        .expect("warrant verify");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("the chain ends in a torn line"));
    // Opening it for the principal sets it aside with a message naming the side file.
    let aside = chain_file::recover_torn_tail(&path).expect("recover").expect("set aside");
    assert!(aside.message().contains(&aside.side_file.display().to_string()), "{}", aside.message());

    // Every torn line is in its own side file, byte for byte; none is in the chain.
    let mut sides: Vec<Vec<u8>> = std::fs::read_dir(dir.path())
        .expect("dir")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("chain.jsonl.torn-"))
        .map(|e| std::fs::read(e.path()).expect("side file"))
        .collect();
    sides.sort();
    torn.sort();
    // A writer killed between copying a fragment and cutting it off the chain leaves a second
    // copy (the next append copies it again): never less than the fragment, never a loss.
    let copies = sides.len();
    sides.dedup();
    // Every torn writer's fragment is set aside byte for byte.
    for t in &torn {
        assert!(sides.contains(t), "torn write of {} bytes not set aside", t.len());
    }
    // Any other side file is a loop writer's own line cut short by the SIGKILL inside write(2)
    // (Linux ends a write to a regular file early, at a page boundary, when a fatal signal is
    // pending): a fragment of a record, without its newline, whose append never reported
    // success (its writer died before the acknowledgement, which the checks below confirm).
    let in_write: Vec<&Vec<u8>> = sides.iter().filter(|s| !torn.contains(s)).collect();
    for fragment in &in_write {
        assert!(
            fragment.first() == Some(&b'{') && !fragment.contains(&b'\n') && fragment.len() < 4096,
            "a side file that is not a torn line: {}",
            String::from_utf8_lossy(fragment)
        );
    }
    eprintln!(
        "{} torn lines set aside ({} side files: {} extra copies from kills during a set-aside, {} lines torn by \
         SIGKILL inside write(2))",
        torn.len(),
        copies,
        copies - sides.len(),
        in_write.len()
    );

    // The chain verifies; every acknowledged append is present, once, at its index; each writer's
    // records are in its order.
    let report = chain_file::verify_file(&path, VerifyOptions::default()).expect("verify");
    assert!(report.is_valid() && report.torn_tail.is_none(), "{report:?}");
    let text = std::fs::read_to_string(&path).expect("chain");
    let notes: Vec<String> =
        text.lines().map(|l| note(&serde_json::from_str(l).expect("record")).expect("note")).collect();
    assert_eq!(notes.len(), report.total);
    let unique: std::collections::HashSet<&String> = notes.iter().collect();
    assert_eq!(unique.len(), notes.len(), "no record twice");
    for (tag, index) in &acked {
        assert_eq!(notes.get(*index as usize - 1), Some(tag), "acknowledged {tag} at record {index}");
    }
    let mut last: std::collections::HashMap<&str, u64> = std::collections::HashMap::new();
    for n in &notes {
        let (w, seq) = n.split_once(':').expect("tag");
        let seq: u64 = seq.parse().expect("a looping writer's record; torn ones are set aside");
        if let Some(prev) = last.insert(w, seq) {
            assert!(prev < seq, "{w}: {seq} after {prev}");
        }
    }
    assert!(acked.len() > kills, "the writers made progress between kills");
}
