//! End to end: the real `warrant` binary in a real terminal (tmux), a real spool on disk, the
//! real inotify watcher and real Ed25519 keys. Requires tmux (`.ci/run` installs it). Each test
//! runs once on a directory spool (`directory::NAME`) and once on a JetStream store on a real
//! `nats-server`, through the principal's replica (`jetstream::NAME`, feature `jetstream`).
#![cfg(feature = "console")]

use crate::tmux;
use warrant::store::prelude::*;

#[cfg(feature = "jetstream")]
use crate::nats;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tmux::Tmux;

const BIN: &str = env!("CARGO_BIN_EXE_warrant");

/// Generates `directory::NAME` and `jetstream::NAME` for each test body `NAME(store: Store)`:
/// the first on a directory spool (`WARRANT_SPOOL`), the second on a JetStream store of its own
/// on a real `nats-server` (`WARRANT_STORE` and this host's replica, `WARRANT_REPLICA`), where the
/// test publishes the agents' packets on their agents' subjects. Without `nats-server` the
/// JetStream ones are skipped, except under `CI=true`, where they fail (`tests/support/nats.rs`).
///
/// Directory only (`directory_only`), each inherently about a directory spool:
/// - `the_demo_signs_with_a_throwaway_key_and_leaves_nothing_behind`: `warrant demo` makes and
///   removes its own temporary directory spool (on a store it exits 2, docs/distributed.md).
/// - `the_console_verifies_the_chain_once_at_start`: the chain is made by `generate-spool` in the
///   directory; a replica's console starts the same way.
///
/// Within `malformed_files_are_listed_and_valid_packets_still_show`, the symlink planted in
/// `packets/` is the directory's only: a store's messages are bytes.
macro_rules! per_store {
    (both: [$($name:ident),* $(,)?], directory_only: [$($dir:ident),* $(,)?] $(,)?) => {
        mod directory {
            $(#[test]
            fn $name() {
                super::$name(super::Store::Directory)
            })*
            $(#[test]
            fn $dir() {
                super::$dir(super::Store::Directory)
            })*
        }
        #[cfg(feature = "jetstream")]
        mod jetstream {
            $(#[test]
            fn $name() {
                let Some(store) = super::Store::jetstream() else { return };
                super::$name(store)
            })*
        }
    };
}

per_store! {
    both: [
        approve_a_real_packet_from_the_console,
        refuse_with_a_reason_while_the_agent_waits,
        malformed_files_are_listed_and_valid_packets_still_show,
        quarantine_an_agent_and_raise_a_notebook_from_the_console,
        the_console_asks_for_the_passphrase_once,
        a_new_packet_runs_the_notify_command_with_inert_text_and_counts_in_the_title,
        filter_by_fields_sort_and_select_in_the_console,
        approve_100_packets_with_one_confirmation,
        command_line_and_mouse_in_the_console,
        a_timed_out_packet_is_refused_as_a_system_decision_by_the_running_console,
    ],
    directory_only: [
        the_demo_signs_with_a_throwaway_key_and_leaves_nothing_behind,
        copy_to_the_clipboard_and_read_in_the_pager,
        the_readme_screen_is_the_demo_as_it_opens,
        the_console_verifies_the_chain_once_at_start,
    ],
}

/// Where a test's spool lives.
enum Store {
    /// A directory spool.
    Directory,
    /// A JetStream store on this server.
    #[cfg(feature = "jetstream")]
    JetStream(nats::Server),
}

impl Store {
    /// A store on a new `nats-server`; `None` when there is none (skipped outside CI). The server
    /// takes messages up to 4 MiB (its default is 1 MiB, warrant's file limit), so an agent's
    /// oversized packet reaches the replica, as it would reach a directory spool, and the
    /// scanner must refuse it there.
    #[cfg(feature = "jetstream")]
    fn jetstream() -> Option<Self> {
        nats::Server::start_with_config(Some("max_payload: 4MB\n")).map(Store::JetStream)
    }
}

/// A JetStream store a [`World`] runs on, and a connection to it that plays the agents' hosts.
#[cfg(feature = "jetstream")]
struct OnStore {
    url: String,
    remote: warrant::store::jetstream::JetStreamSpool,
    _server: nats::Server,
}

fn conformance(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/conformance").join(rel)
}

/// A temporary config dir and spool (or a store and this host's replica of it), and the
/// environment that points warrant at them.
struct World {
    dir: tempfile::TempDir,
    #[cfg(feature = "jetstream")]
    store: Option<OnStore>,
}

impl World {
    /// A temporary directory with an unprotected principal key (`keys init --no-passphrase`).
    fn new(store: Store) -> Self {
        let w = Self::without_key(store);
        assert!(w.cli(&["keys", "init", "--no-passphrase"]).status.success(), "keys init");
        w
    }
    /// A temporary directory, no key; on a store, its streams and buckets created.
    fn without_key(store: Store) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        match store {
            Store::Directory => {
                // As `warrant init` leaves it: no other command creates a spool.
                std::fs::create_dir(dir.path().join("spool")).expect("spool dir");
                Self {
                    dir,
                    #[cfg(feature = "jetstream")]
                    store: None,
                }
            }
            #[cfg(feature = "jetstream")]
            Store::JetStream(server) => {
                use warrant::store::jetstream::{ConnectOptions, JetStreamSpool, SetupOptions, StoreUrl};
                let url = server.store_url("e2e");
                let parsed: StoreUrl = url.parse().expect("store url");
                let remote = JetStreamSpool::connect(&parsed, &ConnectOptions::default()).expect("connect");
                remote.setup(SetupOptions::default()).expect("create the store");
                Self { dir, store: Some(OnStore { url, remote, _server: server }) }
            }
        }
    }
    /// Whether warrant runs on a JetStream store.
    fn on_a_store(&self) -> bool {
        #[cfg(feature = "jetstream")]
        let on = self.store.is_some();
        #[cfg(not(feature = "jetstream"))]
        let on = false;
        on
    }
    /// The spool; on a store, this host's replica (the principal's local copy of it).
    fn spool(&self) -> PathBuf {
        if self.on_a_store() {
            return self.dir.path().join("replica");
        }
        self.dir.path().join("spool")
    }
    fn env(&self) -> Vec<(&'static str, String)> {
        let mut env = vec![
            ("WARRANT_CONFIG", self.dir.path().join("config").display().to_string()),
            ("WARRANT_PRINCIPAL", "e2e-principal".into()),
            ("XDG_DATA_HOME", self.dir.path().join("data").display().to_string()),
            ("TERM", "xterm-256color".into()),
        ];
        #[cfg(feature = "jetstream")]
        if let Some(store) = &self.store {
            env.push(("WARRANT_STORE", store.url.clone()));
            env.push(("WARRANT_REPLICA", self.spool().display().to_string()));
            return env;
        }
        env.push(("WARRANT_SPOOL", self.spool().display().to_string()));
        env
    }
    /// `warrant verify` of the spool: its directory; on a store, the store's chain stream.
    fn verify(&self, extra: &[&str]) -> std::process::Output {
        let spool = self.spool().display().to_string();
        let mut args = vec!["verify"];
        if !self.on_a_store() {
            args.push(&spool);
        }
        args.extend_from_slice(extra);
        self.cli(&args)
    }
    fn cli(&self, args: &[&str]) -> std::process::Output {
        let mut cmd = Command::new(BIN);
        cmd.args(args);
        for (k, v) in self.env() {
            cmd.env(k, v);
        }
        cmd.output().expect("run warrant")
    }
    /// Publishes bytes as an agent must: a temporary dot-file, then a rename; on a store, as
    /// an agent's host does, on the subject of the packet's agent (bytes that are no packet, on
    /// `agent-unknown`'s).
    fn publish(&self, name: &str, bytes: &[u8]) -> Instant {
        #[cfg(feature = "jetstream")]
        if let Some(store) = &self.store {
            let agent = warrant::protocol::packet::parse_packet(bytes, "published")
                .map_or_else(|_| "agent-unknown".into(), |p| p.agent);
            let at = Instant::now();
            let hash = warrant::protocol::canonical::sha256_prefixed(bytes);
            let ack = store.remote.publish_packet(&agent, bytes, &hash).expect("publish on the agent's subject");
            assert!(!ack.duplicate, "{name} published once");
            return at;
        }
        let dir = self.spool().join("packets");
        std::fs::create_dir_all(&dir).expect("packets dir");
        let tmp = dir.join(format!(".{name}.tmp"));
        std::fs::write(&tmp, bytes).expect("write");
        let at = Instant::now();
        std::fs::rename(&tmp, dir.join(name)).expect("rename");
        at
    }
    fn chain(&self) -> Vec<Value> {
        std::fs::read_to_string(self.spool().join("chain.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("chain line"))
            .collect()
    }
}

fn wait_file(path: &Path) {
    let start = Instant::now();
    while !path.exists() {
        assert!(start.elapsed() < Duration::from_secs(20), "{} never appeared", path.display());
        std::thread::sleep(Duration::from_millis(10));
    }
}

// Publish a real js-reference packet, see it appear, approve it with a, y: the decision file
// verifies, the chain gained one signed record, and `warrant verify` exits 0.
fn approve_a_real_packet_from_the_console(store: Store) {
    let w = World::new(store);
    let tmux = Tmux::start("approve", &w.env(), &["console"]);
    tmux.wait_for("the console", |s| s.contains("chain ok") && s.contains("0 pending"));
    let bytes = std::fs::read(conformance("trust-graduation/packets/js-reference/01-email-send-external.packet.json"))
        .expect("fixture");
    let published = w.publish("quote.json", &bytes);
    let (_, _) = tmux.wait_for("the packet", |s| s.contains("agent-scribe") && s.contains("email.send.external"));
    eprintln!("rename → on screen: {:?}", published.elapsed());
    tmux.send(&["a"]);
    tmux.wait_for("the confirmation", |s| s.contains("Confirm: approve") && s.contains("[ Cancel ]"));
    tmux.send(&["y"]);
    tmux.wait_for("the approval", |s| s.contains("approved tg_20261120090000_email-send-external"));

    let id = "tg_20261120090000_email-send-external";
    let decision_path = w.spool().join("decisions").join(format!("{id}.json"));
    wait_file(&decision_path);
    let file: Value = serde_json::from_slice(&std::fs::read(&decision_path).expect("decision")).expect("json");
    let pinned = warrant::protocol::keys::PinnedKeys::load(&w.dir.path().join("config")).expect("pins");
    let packet = warrant::protocol::packet::parse_packet(&bytes, "quote").expect("packet");
    let verified = warrant::protocol::decision::verify_decision_file(&file, id, Some(&packet.content_hash), &pinned)
        .expect("decision verifies");
    assert_eq!(verified.verdict, warrant::protocol::decision::Verdict::Approve);
    assert_eq!(verified.principal, "e2e-principal");

    let chain = w.chain();
    assert_eq!(chain.len(), 1);
    assert_eq!(chain[0]["outcome"], "success");
    assert_eq!(chain[0]["autonomy_tier"], "act_with_approval");
    assert_eq!(chain[0]["approver"], "e2e-principal");
    assert_eq!(chain[0]["metadata"]["approval"]["signatures"].as_array().map(Vec::len), Some(1));
    let out = w.verify(&[]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("1 signatures verified"));
    tmux.send(&["q"]);
    let start = Instant::now();
    while tmux.alive() && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!tmux.alive(), "q did not quit the console");
}

// An agent waits with `propose --wait`; the principal refuses with a reason in the console;
// the agent exits 3 and the chain records a signed refusal with the reason.
fn refuse_with_a_reason_while_the_agent_waits(store: Store) {
    let w = World::new(store);
    // The agent's key side: the same config, so the principal's key is pinned for the agent too.
    let tmux = Tmux::start("refuse", &w.env(), &["console"]);
    tmux.wait_for("the console", |s| s.contains("chain ok"));
    let mut agent = Command::new(BIN);
    agent.args([
        "propose",
        "--class",
        "social.post.public",
        "--agent",
        "agent-herald",
        "--summary",
        "Announce the v2 launch",
        "--id",
        "post-1",
        "--wait",
        "30",
    ]);
    for (k, v) in w.env() {
        agent.env(k, v);
    }
    let agent = agent.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("propose");
    tmux.wait_for("the packet", |s| s.contains("agent-herald") && s.contains("Announce the v2 launch"));
    tmux.send(&["r"]);
    tmux.wait_for("the reason prompt", |s| s.contains("Refuse: why?"));
    tmux.type_text("not before the launch review");
    tmux.send(&["Enter"]);
    tmux.wait_for("the confirmation", |s| s.contains("Confirm: refuse") && s.contains("not before the launch review"));
    tmux.send(&["y"]);
    let out = agent.wait_with_output().expect("agent");
    assert_eq!(out.status.code(), Some(3), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not before the launch review"));
    let chain = w.chain();
    assert_eq!(chain.len(), 1);
    assert_eq!(chain[0]["outcome"], "denied");
    assert_eq!(chain[0]["metadata"]["reason"], "not before the launch review");
    assert_eq!(chain[0]["metadata"]["warrant_decision"]["decision"], "refuse");
    let out = w.verify(&["--json"]);
    assert_eq!(out.status.code(), Some(0));
    let report: Value = serde_json::from_slice(&out.stdout).expect("json report");
    assert_eq!(report["valid"], true);
    assert_eq!(report["signatures_verified"], 1);
    tmux.wait_for("the refused flash", |s| s.contains("refused post-1"));
}

// Malformed files never crash the console nor hide valid packets: each is listed with its reason.
// Runs with NO_COLOR=1 (the mono theme).
fn malformed_files_are_listed_and_valid_packets_still_show(store: Store) {
    let w = World::new(store);
    let mut env = w.env();
    env.push(("NO_COLOR", "1".into()));
    let tmux = Tmux::start("malformed", &env, &["console"]);
    tmux.wait_for("the console", |s| s.contains("chain ok"));
    let first = std::fs::read(conformance("trust-graduation/packets/js-reference/04-calendar-create.packet.json"))
        .expect("fixture");
    w.publish("a-calendar.json", &first);
    w.publish("b-notjson.json", b"{\"type\": \"trust_graduation_approval_packet\",");
    w.publish("c-binary.json", b"\xff\xfe\x00garbage");
    w.publish("d-schema.json", br#"{"type":"trust_graduation_approval_packet","action_class":"Email","proposed_action":{},"decision":{"status":"allowed","action_class":"a.b","reason":""},"external_actions":0}"#);
    w.publish("e-pathid.json", br#"{"type":"trust_graduation_approval_packet","packet_id":"../../etc/passwd","action_class":"a.b","proposed_action":{},"decision":{"status":"allowed","action_class":"a.b","reason":""},"external_actions":0}"#);
    let mut big = b"{\"pad\":\"".to_vec();
    big.resize(1 << 21, b'x');
    big.extend_from_slice(b"\"}");
    w.publish("f-huge.json", &big);
    // A symlink in `packets/` is a directory spool's: a store's messages are bytes.
    if !w.on_a_store() {
        std::os::unix::fs::symlink("/etc/hostname", w.spool().join("packets").join("g-link.json")).expect("symlink");
    }
    let nested = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    w.publish("h-deep.json", nested.as_bytes());
    let second = std::fs::read(conformance("trust-graduation/packets/js-reference/13-draft-response.packet.json"))
        .expect("fixture");
    w.publish("z-draft.json", &second);
    let (invalid, published) = if w.on_a_store() { (6, 8) } else { (7, 9) };
    let (screen, _) = tmux.wait_for("valid packets and invalid count", |s| {
        s.contains("2 pending") && s.contains(&format!("{invalid} invalid"))
    });
    assert!(screen.contains("calendar.create") && screen.contains("draft.response"), "{screen}");
    tmux.send(&["3"]);
    // On a store, what names no agent of its subject is named by that subject and its sequence.
    let shown = if w.on_a_store() { "~agent-unknown@3.json" } else { "c-binary.json" };
    let (screen, _) =
        tmux.wait_for("the invalid list", |s| s.contains(&format!("Invalid ({invalid})")) && s.contains(shown));
    let mut reasons = vec!["not JSON", "over the 1 MiB limit", "unsafe id", "class-id pattern"];
    if !w.on_a_store() {
        reasons.push("not a regular file");
    }
    for reason in reasons {
        assert!(screen.contains(reason), "missing {reason:?}:\n{screen}");
    }
    // Nothing an agent wrote was deleted or rewritten.
    let names: Vec<String> = std::fs::read_dir(w.spool().join("packets"))
        .expect("dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), published, "{names:?}");
    let kept = if w.on_a_store() { "packets/~agent-unknown@2.json" } else { "packets/b-notjson.json" };
    assert_eq!(std::fs::read(w.spool().join(kept)).expect("kept"), b"{\"type\": \"trust_graduation_approval_packet\",");
    #[cfg(feature = "jetstream")]
    if let Some(store) = &w.store {
        assert_eq!(store.remote.list_packets().expect("the spool stream").len(), published, "all in the store");
    }
    assert!(tmux.alive(), "the console died");
    tmux.send(&["1", "j"]);
    tmux.wait_for("the pending list again", |s| s.contains("Pending (2)"));
}

// The real console: the agents view quarantines an agent (a reason, a dialog, a signed
// control appended in the background), its packet turns blocked; the matrices view raises a
// notebook's trust; the CLI reads both back from the verified chain.
fn quarantine_an_agent_and_raise_a_notebook_from_the_console(store: Store) {
    let w = World::new(store);
    let tmux = Tmux::start("controls", &w.env(), &["console"]);
    tmux.wait_for("the console", |s| s.contains("chain ok") && s.contains("0 pending"));
    let packet = serde_json::json!({
        "type": "trust_graduation_approval_packet", "packet_id": "gov-1", "agent": "agent-e2e",
        "action_class": "draft.compose", "summary": "Append the notes", "proposed_action": {"text": "notes"},
        "decision": {"status": "review_required", "action_class": "draft.compose", "reason": "test"},
        "external_actions": 0,
        "governance": {"tool": "notes.append", "notebook": "nb-e2e", "eff_score": 0.7}
    });
    w.publish("gov-1.json", &serde_json::to_vec(&packet).expect("json"));
    tmux.wait_for("the packet", |s| s.contains("agent-e2e") && s.contains("Append the notes"));
    tmux.send(&["6"]);
    tmux.wait_for("the agents view", |s| s.contains("Agents (1)") && s.contains("✓ active"));
    tmux.send(&["Q"]);
    tmux.wait_for("the reason prompt", |s| s.contains("Quarantine agent-e2e: why?"));
    tmux.type_text("e2e drill");
    tmux.send(&["Enter"]);
    tmux.wait_for("the confirmation", |s| s.contains("Confirm: quarantine agent-e2e") && s.contains("e2e drill"));
    tmux.send(&["y"]);
    tmux.wait_for("the recorded flash", |s| s.contains("recorded agent.quarantine agent-e2e"));
    tmux.send(&["6"]);
    tmux.wait_for("the quarantined agent", |s| s.contains("⊘ quarantined"));
    tmux.send(&["1"]);
    tmux.wait_for("the blocked packet", |s| s.contains("⊘ blocked") && s.contains("Append the notes"));
    tmux.send(&["5"]);
    tmux.wait_for("the matrices view", |s| s.contains("Tool tiers × notebook trust") && s.contains("nb-e2e"));
    tmux.send(&["+"]);
    tmux.wait_for("the trust dialog", |s| {
        s.contains("Confirm: set the trust of notebook nb-e2e") && s.contains("cautious → trusted")
    });
    tmux.send(&["y"]);
    tmux.wait_for("the recorded flash", |s| s.contains("recorded notebook.trust_set nb-e2e"));

    let chain = w.chain();
    assert_eq!(chain.len(), 2);
    assert_eq!(chain[0]["action"], "warrant.control.agent.quarantine");
    assert_eq!(chain[0]["metadata"]["warrant_control"]["reason"], "e2e drill");
    assert_eq!(chain[1]["metadata"]["warrant_control"]["level"], "trusted");
    assert_eq!(chain[1]["metadata"]["warrant_control"]["previous"], "cautious");
    let out = w.verify(&["--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).expect("json report");
    assert_eq!(report["signatures_verified"], 2);
    let out = w.cli(&["trust", "show", "--json"]);
    let shown: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(shown["notebooks"]["nb-e2e"]["level"], "trusted", "{shown}");
}

// With a protected key the console asks for the passphrase once, before it takes the
// terminal (again after a mistyped one, three tries in all); three wrong ones start nothing; the right one opens the console, which then signs without
// asking again (the key stays in memory until it quits).
fn the_console_asks_for_the_passphrase_once(store: Store) {
    let w = World::without_key(store);
    let pass = w.dir.path().join("pass");
    std::fs::write(&pass, "s3cret phrase\n").expect("write");
    let mut init = Command::new(BIN);
    init.args(["keys", "init"]).env("WARRANT_PASSPHRASE_FILE", &pass);
    for (k, v) in w.env() {
        init.env(k, v);
    }
    assert!(init.output().expect("keys init").status.success(), "keys init");
    // Three wrong ones, each asked again (as ssh does), start nothing.
    let wrong = Tmux::start("pass-wrong", &w.env(), &["console"]);
    for (n, tries) in [(1, "2 of 3"), (2, "1 of 3"), (3, "")] {
        wrong.wait_for("the prompt", |s| s.matches("passphrase for").count() == n);
        wrong.type_text("not it");
        wrong.send(&["Enter"]);
        if !tries.is_empty() {
            wrong.wait_for("asked again", |s| s.contains(&format!("try again ({tries} tries left)")));
        }
    }
    let start = Instant::now();
    while wrong.alive() && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!wrong.alive(), "a wrong passphrase must not start the console: {}", wrong.screen());
    // A mistyped one, then the right one, opens the console.
    let tmux = Tmux::start("pass-right", &w.env(), &["console"]);
    tmux.wait_for("the prompt", |s| s.contains("passphrase for"));
    tmux.type_text("s3cret phrasee");
    tmux.send(&["Enter"]);
    tmux.wait_for("asked again", |s| s.contains("try again (2 of 3 tries left)"));
    tmux.type_text("s3cret phrase");
    tmux.send(&["Enter"]);
    tmux.wait_for("the console", |s| s.contains("chain ok") && s.contains("0 pending"));
    let bytes = std::fs::read(conformance("trust-graduation/packets/js-reference/01-email-send-external.packet.json"))
        .expect("fixture");
    w.publish("quote.json", &bytes);
    tmux.wait_for("the packet", |s| s.contains("agent-scribe"));
    tmux.send(&["a"]);
    tmux.wait_for("the confirmation", |s| s.contains("Confirm: approve"));
    tmux.send(&["y"]);
    tmux.wait_for("the approval", |s| s.contains("approved tg_20261120090000_email-send-external"));
    assert_eq!(w.chain().len(), 1, "signed with the key opened at start, without asking again");
}

// `warrant demo` on a machine with the principal's variables exported (WARRANT_SPOOL or
// WARRANT_STORE, WARRANT_CONFIG with a broken config.toml, WARRANT_PRINCIPAL): it opens with a
// realistic mix (a blocked packet with its reason, a human-only payment, decidable ones), signs
// an approval with its own throwaway key, and on quit has read and written nothing of the
// principal's (the spool and the configuration byte for byte as before) and removes its
// temporary spool.
fn the_demo_signs_with_a_throwaway_key_and_leaves_nothing_behind(store: Store) {
    let w = World::without_key(store);
    let home = w.dir.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    let config = w.dir.path().join("config");
    std::fs::create_dir_all(&config).expect("config");
    std::fs::write(config.join("config.toml"), "theme = \"unterminated\n").expect("a broken config.toml");
    std::fs::write(w.spool().join("chain.jsonl"), "").expect("the principal's empty chain");
    let mut env = w.env();
    env.push(("HOME", home.display().to_string()));
    env.push(("XDG_CONFIG_HOME", home.join(".config").display().to_string()));
    let before = (tree(&config), tree(&w.spool()), tree(&home));
    let tmux = Tmux::start("demo", &env, &["demo", "--interval", "30"]);
    let (screen, _) = tmux.wait_for("the opening packets", |s| {
        s.contains("⊘ blocked") && s.contains("◆ human only") && s.contains("● review") && s.contains("chain ok")
    });
    let spool = screen
        .split_whitespace()
        .find(|w| w.contains("warrant-demo-"))
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("the demo's spool on the status line:\n{screen}"));
    assert!(spool.is_dir(), "{}", spool.display());
    // Approve the calendar invite (decidable): filter to it, open the dialog, sign.
    tmux.send(&["/"]);
    tmux.type_text("calendar");
    tmux.send(&["Enter", "a"]);
    tmux.wait_for("the confirmation", |s| s.contains("Confirm: approve"));
    tmux.send(&["z", "y"]);
    tmux.wait_for("the approval", |s| s.contains("approved demo-") && s.contains("calendar-create"));
    tmux.send(&["q"]);
    let start = Instant::now();
    while tmux.alive() && start.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!tmux.alive(), "the demo quit");
    assert!(before == (tree(&config), tree(&w.spool()), tree(&home)), "the demo changed the principal's files");
    assert!(!spool.starts_with(w.spool()), "the demo ran on its own spool, not {}", w.spool().display());
    assert!(!spool.exists(), "the demo's temporary spool {} was removed", spool.display());
}

/// The README's screen (the ```text block under "## Try it"): the console as `warrant demo`
/// opens, at 100×30, the newest packet selected.
fn readme_screen(readme: &str) -> (usize, usize) {
    let from = readme.find("## Try it").expect("the README's Try it section");
    let open = from + readme[from..].find("```text\n").expect("the screen's block") + "```text\n".len();
    let close = open + readme[open..].find("```").expect("the block's end");
    (open, close)
}

/// A screen with what differs from run to run masked, a word at a time: times, ages, hashes,
/// fingerprints, paths, counts of lines, the publishing user, and text cut to fit (`…`, whose
/// cut moves with the width of the ages); box-drawing runs and runs of spaces are read as one.
fn screen_words(screen: &str) -> Vec<String> {
    screen
        .lines()
        .map(|line| {
            let line = match line.find("publisher ") {
                Some(i) => &line[..i + "publisher".len()],
                None => line,
            };
            line.split_whitespace()
                .filter(|w| !w.contains('…'))
                .map(|w| {
                    let core = w.trim_matches(|c: char| "\"',:;()[]{}│".contains(c));
                    let volatile = core.contains("sha256:")
                        || core.contains("SHA256:")
                        || core.starts_with('/')
                        || (core.len() >= 10 && core.as_bytes().get(4) == Some(&b'-') && core.contains('T'))
                        || (!core.is_empty() && core.chars().all(|c| c.is_ascii_digit()))
                        || core
                            .strip_suffix(['s', 'm', 'h'])
                            .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
                    if volatile {
                        "#".to_owned()
                    } else if !w.is_empty() && w.chars().all(|c| "─┌┐└┘│".contains(c)) {
                        "─".to_owned()
                    } else {
                        w.to_owned()
                    }
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .filter(|l| !l.is_empty())
        .collect()
}

// The README's screen is the real demo's (issue 32: it was written by hand, and showed six
// tabs where there are eight): `warrant demo` under tmux at 100×30, captured once its opening
// packets are assessed, must read as the README's block, word for word once what differs from
// run to run is masked. `WARRANT_UPDATE_README=1` writes the capture into the README instead.
fn the_readme_screen_is_the_demo_as_it_opens(store: Store) {
    let w = World::without_key(store);
    let home = w.dir.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    let env = vec![
        ("HOME", home.display().to_string()),
        ("TERM", "xterm-256color".to_owned()),
        ("XDG_CONFIG_HOME", home.join(".config").display().to_string()),
    ];
    let tmux = Tmux::start_sized("readme", &env, &["demo", "--interval", "30"], 100, 30);
    tmux.wait_for("the opening packets, assessed", |s| {
        s.contains("7 pending") && s.contains("⊘ blocked") && s.contains("◆ human only") && s.contains("chain ok")
    });
    // The newest packet selected (the selection stays on a packet while newer ones arrive above
    // it, so which one a scan's timing left selected varies); then settled: the same screen
    // (masked) twice, 300 ms apart.
    tmux.send(&["g"]);
    let start = Instant::now();
    let mut screen = tmux.screen();
    loop {
        std::thread::sleep(Duration::from_millis(300));
        let again = tmux.screen();
        if screen_words(&again) == screen_words(&screen) || start.elapsed() > Duration::from_secs(10) {
            screen = again;
            break;
        }
        screen = again;
    }
    tmux.send(&["q"]);
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/README.md");
    let readme = std::fs::read_to_string(path).expect("README.md");
    let (open, close) = readme_screen(&readme);
    let captured: String =
        screen.lines().map(str::trim_end).collect::<Vec<_>>().join("\n").trim_end().to_owned() + "\n";
    if std::env::var_os("WARRANT_UPDATE_README").is_some() {
        std::fs::write(path, format!("{}{captured}{}", &readme[..open], &readme[close..])).expect("write README.md");
        return;
    }
    let (want, got) = (screen_words(&readme[open..close]), screen_words(&captured));
    assert!(
        want == got,
        "README.md's screen is not the demo's (WARRANT_UPDATE_README=1 writes the capture in):\n{captured}\nfirst difference: {:?}",
        want.iter()
            .zip(&got)
            .find(|(a, b)| a != b)
            .map_or_else(|| format!("{} lines against {}", want.len(), got.len()), |(a, b)| format!("{a:?} != {b:?}"))
    );
}

/// Every file under `dir` (recursively) with its bytes; empty when `dir` does not exist.
fn tree(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(d) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries {
            let path = e.expect("entry").path();
            if path.is_dir() {
                todo.push(path);
            } else {
                out.insert(path.clone(), std::fs::read(&path).unwrap_or_default());
            }
        }
    }
    out
}

// The real console with `[notify]` in config.toml. A packet there at start-up is not
// announced; one published later runs the principal's command (a shell script writing its
// environment to a file) with the packet's fields made inert, and the title shows the count.
fn a_new_packet_runs_the_notify_command_with_inert_text_and_counts_in_the_title(store: Store) {
    let w = World::new(store);
    let out = w.dir.path().join("notified.txt");
    let script = w.dir.path().join("notify.sh");
    std::fs::write(&script, "#!/bin/sh\nenv | grep '^WARRANT_' | sort >> \"$1\"\necho ---- >> \"$1\"\n")
        .expect("script");
    let config = format!(
        "[notify]\nbell = true\ncommand = [\"/bin/sh\", {:?}, {:?}]\n",
        script.display().to_string(),
        out.display().to_string()
    );
    std::fs::write(w.dir.path().join("config/config.toml"), config).expect("config.toml");
    let packet = |id: &str, summary: &str| {
        serde_json::to_vec(&serde_json::json!({
            "type": "trust_graduation_approval_packet",
            "packet_id": id,
            "agent": "agent-scribe",
            "summary": summary,
            "action_class": "email.send.external",
            "proposed_action": {"to": "dana@northwind.example"},
            "decision": {"status": "review_required", "action_class": "email.send.external", "reason": "Awaiting."},
            "external_actions": 0,
            "created_at": warrant::protocol::clock::now_rfc3339(),
        }))
        .expect("json")
    };
    w.publish("p-old.json", &packet("p-old", "There before the console"));
    let tmux = Tmux::start("notify", &w.env(), &["console"]);
    tmux.wait_for("the console", |s| s.contains("chain ok") && s.contains("1 pending"));
    w.publish("p-new.json", &packet("p-new", "Pay now \u{1b}]0;pwned\u{7}\u{1b}[2J $(id)"));
    tmux.wait_for("the new packet", |s| s.contains("2 pending"));
    let start = Instant::now();
    let text = loop {
        let text = std::fs::read_to_string(&out).unwrap_or_default();
        if text.contains("----") {
            break text;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "the notify command never ran");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(text.matches("----").count(), 1, "one packet announced: {text}");
    assert!(text.contains("WARRANT_PACKET_ID=p-new\n"), "{text}");
    assert!(text.contains("WARRANT_AGENT=agent-scribe\n"), "{text}");
    assert!(text.contains("WARRANT_CLASS=email.send.external\n"), "{text}");
    assert!(text.contains("WARRANT_SUMMARY=Pay now ␛]0;pwned␇␛[2J $(id)\n"), "{text}");
    assert!(text.contains("WARRANT_PENDING=2\n"), "{text}");
    assert!(!text.contains('\u{1b}') && !text.contains('\u{7}'), "{text:?}");
    assert_eq!(tmux.title(), "warrant — 2 pending");
    assert!(!tmux.screen().contains("notify command"), "no failure in the status line");
    tmux.send(&["q"]);
}

// The real binary filters by fields and sorts the pending list; an unknown field says
// so and shows nothing; `space` marks a packet for batch triage and signs nothing.
fn filter_by_fields_sort_and_select_in_the_console(store: Store) {
    let w = World::new(store);
    let tmux = Tmux::start("filter", &w.env(), &["console"]);
    tmux.wait_for("the console", |s| s.contains("chain ok") && s.contains("0 pending"));
    let now = warrant::protocol::clock::format_rfc3339(time::OffsetDateTime::now_utc());
    for (id, class, agent, summary) in [
        ("f-draft", "draft.compose", "agent-scribe", "Draft the minutes"),
        ("f-mail", "email.send.external", "agent-scribe", "Mail Northwind the quote"),
        ("f-pay", "payment.initiate", "agent-bursar", "Pay the Northwind invoice"),
    ] {
        let doc =
            warrant::protocol::packet::portable_packet(id, class, agent, summary, serde_json::json!({"n": 1}), &now);
        w.publish(&format!("{id}.json"), &serde_json::to_vec(&doc).expect("json"));
    }
    tmux.wait_for("the packets", |s| s.contains("3 pending") && s.contains("Pay the Northwind"));
    tmux.send(&["/"]);
    tmux.type_text("agent:scribe \"northwind\"");
    tmux.send(&["Enter"]);
    tmux.wait_for("the field filter", |s| {
        s.contains("filtered: 1 of 3") && s.contains("Mail Northwind") && !s.contains("Pay the Northwind")
    });
    tmux.send(&["/", "C-u"]);
    tmux.type_text("colour:red");
    tmux.wait_for("the unknown field", |s| s.contains("✗ unknown field colour:") && s.contains("filtered: 0 of 3"));
    tmux.send(&["Escape"]);
    tmux.wait_for("the whole list", |s| !s.contains("filtered:") && s.contains("Draft the minutes"));
    tmux.send(&["s"]);
    let (sorted, _) = tmux.wait_for("the sort", |s| s.contains("sort: risk"));
    let row = |text: &str| sorted.lines().position(|l| l.contains(text)).unwrap_or(usize::MAX);
    assert!(row("Pay the Northwind") < row("Mail Northwind") && row("Mail Northwind") < row("Draft the"), "{sorted}");
    tmux.send(&["Space"]);
    tmux.wait_for("the selection", |s| s.contains("■ 1 selected"));
    assert!(w.chain().is_empty(), "selecting signs nothing");
    tmux.send(&["q"]);
}

// Batch triage: 100 packets published, `v` selects them all, `a` opens ONE dialog
// listing them, read to its end, `y` signs: 100 signed chain records (one per packet, each its
// own signature) that `warrant verify` accepts, and 100 decision files that verify.
fn approve_100_packets_with_one_confirmation(store: Store) {
    let w = World::new(store);
    let tmux = Tmux::start("batch", &w.env(), &["console"]);
    tmux.wait_for("the console", |s| s.contains("chain ok") && s.contains("0 pending"));
    let now = warrant::protocol::clock::format_rfc3339(time::OffsetDateTime::now_utc());
    let mut hashes = std::collections::HashMap::new();
    for i in 0..100 {
        let id = format!("b-{i:03}");
        let doc = warrant::protocol::packet::portable_packet(
            &id,
            "draft.compose",
            // Ten agents of ten packets each: within the class's rate limit (10 per agent).
            &format!("agent-w{}", i / 10),
            &format!("Draft {i}"),
            serde_json::json!({"to": format!("team-{i}@example.com")}),
            &now,
        );
        let bytes = serde_json::to_vec(&doc).expect("json");
        hashes.insert(id.clone(), warrant::protocol::packet::parse_packet(&bytes, &id).expect("packet").content_hash);
        w.publish(&format!("{id}.json"), &bytes);
    }
    tmux.wait_for("the packets", |s| s.contains("100 pending"));
    tmux.send(&["v"]);
    tmux.wait_for("the selection", |s| s.contains("■ 100 selected"));
    tmux.send(&["a"]);
    tmux.wait_for("one dialog", |s| s.contains("each of these 100 packets") && s.contains("[ Cancel ]"));
    // The dialog takes the whole terminal (z) and is paged to its end, one page at a time, each
    // drawn before the next key: a line counts as read only once it was on screen, and keys sent
    // together on a loaded machine are handled before their frames are drawn (the dialog then
    // asks, rightly, to be read again from the top).
    tmux.send(&["z"]);
    let mut read = false;
    for _ in 0..300 {
        let before = tmux.screen();
        if !before.contains("read to the end") {
            read = true;
            break;
        }
        tmux.send(&["NPage"]);
        tmux.wait_for("the next page", |s| s != before);
    }
    assert!(read, "the dialog was never read to its end:\n{}", tmux.screen());
    assert!(tmux.screen().contains("team-99@example.com"), "the last destination is on screen");
    assert!(w.chain().is_empty(), "nothing is signed before y");
    tmux.send(&["y"]);
    tmux.wait_for("the batch", |s| s.contains("approved 100 packets"));

    let chain = w.chain();
    assert_eq!(chain.len(), 100, "one record per packet");
    let pinned = warrant::protocol::keys::PinnedKeys::load(&w.dir.path().join("config")).expect("pins");
    let mut ids = std::collections::BTreeSet::new();
    for rec in &chain {
        assert_eq!(rec["metadata"]["approval"]["signatures"].as_array().map(Vec::len), Some(1), "{rec}");
        let id = rec["metadata"]["warrant_decision"]["packet_id"].as_str().expect("packet id").to_owned();
        assert_eq!(rec["metadata"]["warrant_decision"]["decision"], "approve");
        let file: Value = serde_json::from_slice(
            &std::fs::read(w.spool().join("decisions").join(format!("{id}.json"))).expect("decision file"),
        )
        .expect("json");
        let verified = warrant::protocol::decision::verify_decision_file(&file, &id, Some(&hashes[&id]), &pinned)
            .expect("decision file verifies");
        assert_eq!(verified.verdict, warrant::protocol::decision::Verdict::Approve);
        ids.insert(id);
    }
    assert_eq!(ids.len(), 100, "100 distinct packets");
    let out = w.verify(&[]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("100 signatures verified"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    tmux.wait_for("the list emptied", |s| s.contains("0 pending"));
    tmux.send(&["q"]);
}

/// Sends a left click at the 0-based cell (`column`, `row`) as a terminal in SGR mouse mode
/// reports it (`ESC [ < 0 ; X ; Y M`, then the release `m`), written to the pane's input.
fn click(tmux: &Tmux, column: usize, row: usize) {
    let (x, y) = (column + 1, row + 1);
    tmux.type_text(&format!("\x1b[<0;{x};{y}M\x1b[<0;{x};{y}m"));
}

// Issue 32, item 11, in the real terminal: `y` and `Y` put the packet's id and content hash on
// the clipboard with OSC 52 (tmux, told to accept it, holds them in its paste buffer), and `p`
// shows the whole packet in the real `less` (through `tee`, which keeps what it was given), then
// `q` gives the console back, redrawn. Nothing is signed.
fn copy_to_the_clipboard_and_read_in_the_pager(store: Store) {
    let w = World::new(store);
    let long = format!("line one\n{}\nTHE-END", "word ".repeat(400));
    let payload = w.dir.path().join("payload.json");
    std::fs::write(&payload, serde_json::json!({"to": "dana@example.com", "body": long}).to_string()).expect("payload");
    let payload = payload.display().to_string();
    let o = w.cli(&[
        "propose",
        "--class",
        "email.send.external",
        "--agent",
        "agent-a",
        "--summary",
        "Quote",
        "--id",
        "c-1",
        "--payload",
        &payload,
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let file = std::fs::read_dir(w.spool().join("packets")).expect("packets").flatten().next().expect("the packet");
    let bytes = std::fs::read(file.path()).expect("read the packet");
    let hash = warrant::protocol::packet::parse_packet(&bytes, "c-1").expect("a packet").content_hash;
    let paged = w.dir.path().join("paged.txt");
    let mut env = w.env();
    env.push(("PAGER", format!("tee '{}' | less", paged.display())));
    let tmux = Tmux::start("clipboard", &env, &["console"]);
    tmux.accept_clipboard();
    tmux.wait_for("the packet", |s| s.contains("chain ok") && s.contains("1 pending"));
    tmux.send(&["y"]);
    tmux.wait_for("the copy", |s| s.contains("copied id c-1"));
    let wait_clipboard = |want: &str| {
        let start = Instant::now();
        while tmux.clipboard() != want {
            assert!(start.elapsed() < Duration::from_secs(10), "clipboard {:?}, not {want:?}", tmux.clipboard());
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    wait_clipboard("c-1");
    tmux.send(&["Y"]);
    wait_clipboard(&hash);
    tmux.send(&["p"]);
    let (pager, _) = tmux.wait_for("less", |s| s.contains("packet c-1") && !s.contains("chain ok"));
    assert!(pager.contains(&hash), "{pager}");
    tmux.send(&["q"]);
    tmux.wait_for("the console again", |s| s.contains("chain ok") && s.contains("1 pending"));
    let text = std::fs::read_to_string(&paged).expect("the pager's input");
    for whole in ["packet c-1", hash.as_str(), "dana@example.com", "THE-END"] {
        assert!(text.contains(whole), "{whole:?} not in what the pager got:\n{text}");
    }
    assert!(text.contains(&"word ".repeat(400).trim_end().replace('\n', "")), "the long body whole");
    assert!(w.chain().is_empty(), "copying and paging signed nothing");
    tmux.send(&["q"]);
}

// `:audit` runs from the command line of the real console and shows the chain's
// decision in the Audit view; an unknown command says so; a mouse click on a row selects it.
fn command_line_and_mouse_in_the_console(store: Store) {
    let w = World::new(store);
    for (id, summary) in [("m-1", "First draft"), ("m-2", "Second draft"), ("m-3", "Third draft")] {
        let o = w.cli(&["propose", "--class", "draft.compose", "--agent", "agent-a", "--summary", summary, "--id", id]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    assert!(w.cli(&["approve", "--yes", "m-1"]).status.success());
    let tmux = Tmux::start("cmdline", &w.env(), &["console"]);
    let (screen, _) = tmux.wait_for("the packets", |s| s.contains("chain ok") && s.contains("2 pending"));

    // A click on the row of m-2 (newest first: m-3 is selected) selects it: the detail shows it.
    let row = screen.lines().position(|l| l.contains("Second draft")).expect("row of m-2");
    assert!(!screen.contains("packet  m-2"), "{screen}");
    click(&tmux, 10, row);
    tmux.wait_for("the clicked packet in the detail", |s| s.contains("packet  m-2"));

    tmux.send(&[":"]);
    tmux.type_text("frob");
    tmux.send(&["Enter"]);
    tmux.wait_for("the error", |s| s.contains("unknown command :frob"));
    tmux.send(&[":"]);
    tmux.type_text("au");
    tmux.send(&["Tab"]);
    tmux.wait_for("the completion", |s| s.contains(":audit▏"));
    tmux.send(&["Enter"]);
    // The Audit view reads the chain in the background (on JetStream, from the server): wait
    // for the decision itself, not the view's frame (its empty state names "decision" too).
    let (audit, _) =
        tmux.wait_for("the audit", |s| s.contains("Audit entry") && s.contains("approve") && s.contains("person"));
    assert!(!audit.contains("nothing to audit yet"), "{audit}");
    assert!(w.chain().len() == 1, "the command line signed nothing");
    tmux.send(&["q"]);
}

// `[timeouts] sign_refusal = true` under the real console. A packet left undecided past
// its class's `refuse_after` (1 s) is refused by the running console on its own, signed with the
// principal's key as a system decision (`"system": "timeout"`): the chain verifies, the decision
// file the hook reads says refused, the class gains no evidence, and the audit says no person
// decided it.
fn a_timed_out_packet_is_refused_as_a_system_decision_by_the_running_console(store: Store) {
    let w = World::new(store);
    let policy = "[timeouts.\"email.*\"]\nrefuse_after = \"PT1S\"\nsign_refusal = true\n";
    std::fs::write(w.dir.path().join("config/policy.toml"), policy).expect("policy.toml");
    let tmux = Tmux::start("timeout", &w.env(), &["console"]);
    tmux.wait_for("the console", |s| s.contains("chain ok") && s.contains("0 pending"));
    let now = warrant::protocol::clock::now_rfc3339();
    let doc = warrant::protocol::packet::portable_packet(
        "t-mail",
        "email.send.external",
        "agent-scribe",
        "Mail Northwind the quote",
        serde_json::json!({"to": "dana@northwind.example"}),
        &now,
    );
    let bytes = serde_json::to_vec(&doc).expect("json");
    let published = w.publish("t-mail.json", &bytes);
    let (screen, _) = tmux.wait_for("the system refusal", |s| s.contains("t-mail refused: timed out after 1s"));
    eprintln!("published → refused on screen: {:?}", published.elapsed());
    assert!(screen.contains("signed as a system decision"), "{screen}");
    tmux.wait_for("the packet to leave Pending", |s| s.contains("0 pending"));

    let chain = w.chain();
    assert_eq!(chain.len(), 1, "one record, signed once");
    assert_eq!(chain[0]["outcome"], "denied");
    let signed = &chain[0]["metadata"]["warrant_decision"];
    assert_eq!(signed["system"], "timeout");
    assert_eq!(signed["decision"], "refuse");
    assert_eq!(signed["principal"], "e2e-principal");
    assert!(signed["reason"].as_str().is_some_and(|r| r.starts_with("timed out after 1s undecided")), "{signed}");

    let pinned = warrant::protocol::keys::PinnedKeys::load(&w.dir.path().join("config")).expect("pins");
    let file: Value =
        serde_json::from_slice(&std::fs::read(w.spool().join("decisions/t-mail.json")).expect("decision file"))
            .expect("json");
    let packet = warrant::protocol::packet::parse_packet(&bytes, "t-mail").expect("packet");
    let verified =
        warrant::protocol::decision::verify_decision_file(&file, "t-mail", Some(&packet.content_hash), &pinned)
            .expect("decision file verifies");
    assert_eq!(verified.verdict, warrant::protocol::decision::Verdict::Refuse);

    let out = w.verify(&[]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let view =
        warrant::store::spool::verify_chain(&warrant::store::spool::Spool::new(w.spool()), &pinned).expect("verify");
    assert_eq!(view.decisions["t-mail"].system, Some(warrant::protocol::decision::SystemCause::Timeout));
    assert_eq!(view.evidence.count("email.send.external"), 0, "a timeout is not the principal's refusal");
    let spool = w.spool().display().to_string();
    let out = if w.on_a_store() { w.cli(&["audit"]) } else { w.cli(&["audit", "--spool", &spool]) };
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("a system decision (timeout): signed by the console, no person decided"), "{text}");
    tmux.send(&["q"]);
}

// At start the console lists the packets first, then verifies the chain once, in the background:
// not a second time because a rescan or the first scan asked while the first verification ran
// (a million-record chain took twice as long to show `chain ok`).
fn the_console_verifies_the_chain_once_at_start(store: Store) {
    let w = World::new(store);
    // Enough packets that the first scan takes longer than the event loop's first turn.
    let out = w.cli(&["generate-spool", "--records", "20000", "--pending", "2000", "--decision-every", "100"]);
    assert!(out.status.success(), "generate-spool: {}", String::from_utf8_lossy(&out.stderr));
    let tmux = Tmux::start("verify-once", &w.env(), &["console"]);
    tmux.wait_for("the verified chain", |s| s.contains("chain ok") && s.contains("2000 pending"));
    // Past the first rescan (every 5 s by default): an unchanged chain is not verified again.
    std::thread::sleep(Duration::from_secs(6));
    tmux.send(&["q"]);
    let start = Instant::now();
    while tmux.alive() && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!tmux.alive(), "q did not quit the console");
    let log = std::fs::read_to_string(w.dir.path().join("data/warrant/warrant.log")).expect("the console's log");
    let verified: Vec<&str> = log.lines().filter(|l| l.contains("chain verified")).collect();
    assert_eq!(verified.len(), 1, "the chain was verified {} times:\n{log}", verified.len());
    assert!(verified[0].contains("records=20000") && verified[0].contains("findings=0"), "{}", verified[0]);
}
