//! Many writers on one spool, shared by `tests/concurrency.rs` (a small run in CI) and
//! `examples/writers.rs` (the full run): library writers (threads calling
//! `spool::record_receipt` and `spool::decide`) and CLI writers (threads running the real
//! `warrant receipt` / `approve` / `refuse` processes) append at once while the real console runs
//! under tmux on the same spool. Every record carries its writer's tag `wNN-sNNNNN` (a receipt's
//! `note`, a decision's packet id `p-wNN-sNNNNN`), so the chain can be checked afterwards: it
//! verifies, every acknowledged append is present exactly once at the index it reported, and each
//! writer's records appear in its own order.
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use warrant::protocol::chain::VerifyOptions;
use warrant::protocol::decision::Verdict;
use warrant::protocol::graduation::receipt::ReceiptOutcome;
use warrant::protocol::keys::{PinnedKeys, Principal};
use warrant::store::chain_file;
use warrant::store::prelude::*;
use warrant::store::spool::{self, ReceiptRequest, Spool};

/// What to run.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The real `warrant` binary.
    pub bin: PathBuf,
    /// A directory for the spool, the config (keys) and the console's data.
    pub dir: PathBuf,
    /// Writers in all.
    pub writers: usize,
    /// Of which run the CLI (the rest call the library from threads).
    pub cli_writers: usize,
    /// Records in all (split evenly among writers).
    pub records: usize,
    /// Every `decide_every`-th record of a writer is a decision (a packet published, then
    /// approved or refused); the others are receipts.
    pub decide_every: usize,
    /// Run the console under tmux during the writes.
    pub console: bool,
    /// How long to wait for the console to show the final chain.
    pub console_deadline: Duration,
}

/// What happened.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Appends that reported success.
    pub acked: usize,
    /// Of which decisions.
    pub decisions: usize,
    /// Appends that failed (each with its error), expected none.
    pub failures: Vec<String>,
    /// Wall time of the writes, seconds.
    pub seconds: f64,
    /// Records in the chain afterwards.
    pub chain_records: usize,
    /// Chain bytes.
    pub chain_bytes: u64,
    /// `chain_file::verify_file` with the pinned keys: valid?
    pub verify_file_valid: bool,
    /// Signatures it verified.
    pub signatures: usize,
    /// `warrant verify --json` exit code and `valid`.
    pub warrant_verify: (Option<i32>, bool),
    /// Seconds `chain_file::verify_file` took.
    pub verify_seconds: f64,
    /// Problems found by the checks (lost, duplicated, out of order, wrong index).
    pub problems: Vec<String>,
    /// The console was alive and showed `chain ok · N records` at the end (None: not run).
    pub console_ok: Option<bool>,
    /// The console's last screen.
    pub console_screen: String,
    /// Torn side files found (expected none).
    pub side_files: usize,
}

impl Outcome {
    /// Appends per second over the run.
    pub fn rate(&self) -> f64 {
        self.acked as f64 / self.seconds.max(1e-9)
    }

    /// Everything held.
    pub fn all_good(&self) -> bool {
        self.failures.is_empty()
            && self.problems.is_empty()
            && self.verify_file_valid
            && self.warrant_verify == (Some(0), true)
            && self.console_ok != Some(false)
            && self.side_files == 0
            && self.chain_records == self.acked
    }
}

/// The environment that points the real binary at the plan's spool and config.
pub fn env(dir: &Path) -> Vec<(&'static str, String)> {
    vec![
        ("WARRANT_CONFIG", dir.join("config").display().to_string()),
        ("WARRANT_SPOOL", dir.join("spool").display().to_string()),
        ("WARRANT_PRINCIPAL", "load-principal".into()),
        ("XDG_DATA_HOME", dir.join("data").display().to_string()),
        ("TERM", "xterm-256color".into()),
    ]
}

/// A writer's tag for its `seq`-th record.
pub fn tag(writer: usize, seq: usize) -> String {
    format!("w{writer:02}-s{seq:05}")
}

/// The tag a chain record carries: a receipt's note, or a decision's packet id.
pub fn tag_of(rec: &Value) -> Option<(usize, usize)> {
    let text = rec
        .pointer("/metadata/tg_receipt/note")
        .and_then(Value::as_str)
        .or_else(|| rec.get("trace_id").and_then(Value::as_str).and_then(|t| t.strip_prefix("warrant:p-")))?;
    let (w, s) = text.strip_prefix('w')?.split_once("-s")?;
    Some((w.parse().ok()?, s.parse().ok()?))
}

/// A private tmux server running one command; killed on drop.
pub struct Tmux {
    socket: String,
}

impl Tmux {
    /// Starts `bin args` in a 120×32 terminal with `env`.
    pub fn start(name: &str, env: &[(&str, String)], bin: &Path, args: &[&str]) -> Self {
        let socket = format!("warrant-{name}-{}", std::process::id());
        let mut cmd = Command::new("tmux");
        cmd.args(["-L", &socket, "-f", "/dev/null", "new-session", "-d", "-s", "t", "-x", "120", "-y", "32"]);
        for (k, v) in env {
            cmd.args(["-e", &format!("{k}={v}")]);
        }
        cmd.arg(bin).args(args);
        let status = cmd.status().expect("tmux is required (apt-get install -y tmux)");
        assert!(status.success(), "tmux new-session failed");
        Self { socket }
    }

    /// The screen's text.
    pub fn screen(&self) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "capture-pane", "-p", "-t", "t"])
            .output()
            .expect("capture-pane");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Whether the session still runs.
    pub fn alive(&self) -> bool {
        Command::new("tmux")
            .args(["-L", &self.socket, "has-session", "-t", "t"])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    /// Waits until the screen satisfies `pred` or `deadline` passes; returns the last screen.
    pub fn wait_for(&self, deadline: Duration, pred: impl Fn(&str) -> bool) -> (bool, String) {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if pred(&s) {
                return (true, s);
            }
            if start.elapsed() > deadline {
                return (false, s);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux").args(["-L", &self.socket, "kill-server"]).stderr(Stdio::null()).status();
    }
}

/// One acknowledged append: (writer, seq, chain_index it reported).
type Ack = (usize, usize, u64);

enum Reply {
    Ack(Ack, bool),
    Fail(String),
}

fn packet_doc(id: &str, writer: usize) -> Value {
    warrant::protocol::packet::portable_packet(
        id,
        "draft.compose",
        &format!("agent-w{writer:02}"),
        &format!("load test {id}"),
        serde_json::json!({"text": id}),
        &warrant::protocol::clock::now_rfc3339(),
    )
}

fn library_writer(
    plan: &Plan,
    spool: &Spool,
    principal: &Principal,
    pinned: &PinnedKeys,
    w: usize,
    n: usize,
) -> Vec<Reply> {
    let mut out = Vec::with_capacity(n);
    for seq in 0..n {
        let t = tag(w, seq);
        if (seq + 1) % plan.decide_every == 0 {
            let id = format!("p-{t}");
            let doc = packet_doc(&id, w);
            let bytes = serde_json::to_vec(&doc).expect("json");
            if let Err(e) = spool.publish(&spool.packets_dir(), &id, &doc) {
                out.push(Reply::Fail(format!("{t}: publish: {e}")));
                continue;
            }
            let packet = warrant::protocol::packet::parse_packet(&bytes, &id).expect("packet");
            let (verdict, reason) =
                if seq % 2 == 0 { (Verdict::Approve, None) } else { (Verdict::Refuse, Some(t.as_str())) };
            match spool::decide(
                spool,
                principal,
                pinned,
                &packet,
                verdict,
                reason,
                &warrant::protocol::clock::now_rfc3339(),
            ) {
                Ok(d) => out.push(Reply::Ack((w, seq, d.appended.chain_index), true)),
                Err(e) => out.push(Reply::Fail(format!("{t}: decide: {e}"))),
            }
        } else {
            let req = ReceiptRequest {
                action_class: "draft.compose",
                outcome: ReceiptOutcome::Execute,
                agent: &format!("agent-w{w:02}"),
                packet_id: None,
                source_type: None,
                note: Some(&t),
                tool_call: None,
            };
            match spool::record_receipt(spool, &req, &warrant::protocol::clock::now_rfc3339()) {
                Ok((_, a)) => out.push(Reply::Ack((w, seq, a.chain_index), false)),
                Err(e) => out.push(Reply::Fail(format!("{t}: receipt: {e}"))),
            }
        }
    }
    out
}

/// `record N` in the CLI's `approved …: record N sha256:…` line.
fn record_index(stdout: &str) -> Option<u64> {
    stdout.split_once(": record ")?.1.split_whitespace().next()?.parse().ok()
}

fn cli_writer(plan: &Plan, spool: &Spool, w: usize, n: usize) -> Vec<Reply> {
    let env = env(&plan.dir);
    let run = |args: &[&str]| {
        let mut cmd = Command::new(&plan.bin);
        cmd.args(args).stdin(Stdio::null());
        for (k, v) in &env {
            cmd.env(k, v);
        }
        cmd.output()
    };
    let mut out = Vec::with_capacity(n);
    for seq in 0..n {
        let t = tag(w, seq);
        let decision = (seq + 1) % plan.decide_every == 0;
        let result = if decision {
            let id = format!("p-{t}");
            if let Err(e) = spool.publish(&spool.packets_dir(), &id, &packet_doc(&id, w)) {
                out.push(Reply::Fail(format!("{t}: publish: {e}")));
                continue;
            }
            if seq % 2 == 0 { run(&["approve", "--yes", &id]) } else { run(&["refuse", "--yes", &id, "--reason", &t]) }
        } else {
            let agent = format!("agent-w{w:02}");
            run(&["receipt", "--class", "draft.compose", "--outcome", "execute", "--agent", &agent, "--note", &t])
        };
        match result {
            Ok(o) if o.status.success() => {
                let stdout = String::from_utf8_lossy(&o.stdout);
                let index = if decision {
                    record_index(&stdout)
                } else {
                    serde_json::from_str::<Value>(&stdout).ok().and_then(|v| v.pointer("/chain/chain_index")?.as_u64())
                };
                match index {
                    Some(i) => out.push(Reply::Ack((w, seq, i), decision)),
                    None => out.push(Reply::Fail(format!("{t}: exit 0 but no chain index in {stdout:?}"))),
                }
            }
            Ok(o) => out.push(Reply::Fail(format!(
                "{t}: exit {:?}: {}",
                o.status.code(),
                String::from_utf8_lossy(&o.stderr).trim()
            ))),
            Err(e) => out.push(Reply::Fail(format!("{t}: spawn: {e}"))),
        }
    }
    out
}

/// Runs the plan: sets up the spool and the principal's key, starts the console, runs the
/// writers, then checks the chain and the console.
pub fn run(plan: &Plan) -> Outcome {
    let spool = Spool::new(plan.dir.join("spool")).with_checkpoint_copies(plan.dir.join("config/checkpoints"));
    spool.ensure().expect("spool");
    let (principal, _) = Principal::load_or_create(&plan.dir.join("config"), "load-principal").expect("key");
    let pinned = PinnedKeys::load(&plan.dir.join("config")).expect("pins");
    let env = env(&plan.dir);
    let console = plan.console.then(|| {
        let tmux = Tmux::start("writers", &env, &plan.bin, &["console"]);
        let (ok, screen) = tmux.wait_for(Duration::from_secs(20), |s| s.contains("chain ok"));
        assert!(ok, "the console did not start:\n{screen}");
        tmux
    });
    let per_writer = plan.records / plan.writers;
    let extra = plan.records % plan.writers;
    let start = Instant::now();
    let replies: Vec<Vec<Reply>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..plan.writers)
            .map(|w| {
                let n = per_writer + usize::from(w < extra);
                let (spool, principal, pinned) = (&spool, &principal, &pinned);
                s.spawn(move || {
                    if w < plan.cli_writers {
                        cli_writer(plan, spool, w, n)
                    } else {
                        library_writer(plan, spool, principal, pinned, w, n)
                    }
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("writer thread")).collect()
    });
    let mut out = Outcome { seconds: start.elapsed().as_secs_f64(), ..Outcome::default() };
    let mut acks: Vec<Ack> = Vec::new();
    for r in replies.into_iter().flatten() {
        match r {
            Reply::Ack(a, decision) => {
                acks.push(a);
                out.decisions += usize::from(decision);
            }
            Reply::Fail(e) => out.failures.push(e),
        }
    }
    out.acked = acks.len();
    check_chain(&spool, &pinned, &acks, &mut out);
    let verify = Command::new(&plan.bin)
        .args(["verify", &spool.root().display().to_string(), "--json"])
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .output()
        .expect("warrant verify");
    let valid =
        serde_json::from_slice::<Value>(&verify.stdout).ok().and_then(|v| v["valid"].as_bool()).unwrap_or(false);
    out.warrant_verify = (verify.status.code(), valid);
    if let Some(tmux) = console {
        let want = format!("chain ok · {} records", out.chain_records);
        let (shown, screen) = tmux.wait_for(plan.console_deadline, |s| s.contains(&want));
        out.console_ok = Some(shown && tmux.alive());
        out.console_screen = screen;
    }
    out.side_files = std::fs::read_dir(spool.root())
        .map(|d| d.flatten().filter(|e| e.file_name().to_string_lossy().contains(".torn-")).count())
        .unwrap_or(0);
    out
}

/// Verifies the chain and checks it against the acknowledgements: none lost, none duplicated,
/// each at the index it reported, each writer's records in its own order.
pub fn check_chain(spool: &Spool, pinned: &PinnedKeys, acks: &[Ack], out: &mut Outcome) {
    let path = spool.chain_path();
    out.chain_bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let started = Instant::now();
    let opts = VerifyOptions { pinned: Some(pinned), strict_signatures: true };
    let report = chain_file::verify_file(&path, opts).expect("verify_file");
    out.verify_seconds = started.elapsed().as_secs_f64();
    // The records whole (verify_file hands its callback only the fields it keeps).
    let tags: Vec<Option<(usize, usize)>> =
        chain_file::read_chain(&path).expect("read_chain").records.iter().map(tag_of).collect();
    out.verify_file_valid = report.is_valid() && report.torn_tail.is_none();
    out.signatures = report.signatures_verified;
    out.chain_records = report.total;
    if !report.is_valid() {
        out.problems.push(format!("chain does not verify: {:?}", report.first()));
    }
    let mut seen: HashSet<(usize, usize)> = HashSet::new();
    let mut last: HashMap<usize, usize> = HashMap::new();
    for (i, t) in tags.iter().enumerate() {
        let Some((w, s)) = *t else {
            out.problems.push(format!("record {} carries no writer tag", i + 1));
            continue;
        };
        if !seen.insert((w, s)) {
            out.problems.push(format!("record {}: {} is duplicated", i + 1, tag(w, s)));
        }
        if let Some(&prev) = last.get(&w)
            && prev >= s
        {
            out.problems.push(format!("record {}: {} follows {} of the same writer", i + 1, tag(w, s), tag(w, prev)));
        }
        last.insert(w, s);
    }
    for &(w, s, index) in acks {
        let at = usize::try_from(index).ok().and_then(|i| i.checked_sub(1)).and_then(|i| tags.get(i));
        if at != Some(&Some((w, s))) {
            let found = if seen.contains(&(w, s)) { "elsewhere" } else { "nowhere: lost" };
            out.problems.push(format!("{} reported record {index}; it is {found}", tag(w, s)));
        }
    }
}

/// The figures, one per line, as the example prints them.
pub fn report(plan: &Plan, o: &Outcome) -> String {
    format!(
        "writers {} ({} CLI processes, {} library threads), decision every {} records\n\
         records {} acknowledged ({} decisions), {} failed, chain {} records, {} bytes\n\
         seconds {:.2}, appends/s {:.0}\n\
         verify_file: {} ({} signatures, {:.2} s); warrant verify: exit {:?}, valid {}\n\
         lost/duplicated/out of order/wrong index: {}; torn side files: {}\n\
         console: {}",
        plan.writers,
        plan.cli_writers,
        plan.writers - plan.cli_writers,
        plan.decide_every,
        o.acked,
        o.decisions,
        o.failures.len(),
        o.chain_records,
        o.chain_bytes,
        o.seconds,
        o.rate(),
        if o.verify_file_valid { "valid" } else { "INVALID" },
        o.signatures,
        o.verify_seconds,
        o.warrant_verify.0,
        o.warrant_verify.1,
        o.problems.len(),
        o.side_files,
        match o.console_ok {
            None => "not run".into(),
            Some(true) => format!("alive, shows chain ok · {} records", o.chain_records),
            Some(false) => "FAILED (dead, or never showed the final chain)".into(),
        },
    )
}
