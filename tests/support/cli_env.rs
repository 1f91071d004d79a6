//! A temporary config directory and spool for running the real `warrant` binary: a directory
//! spool, or (with [`Env::on_store`]) a JetStream store worked on through this host's replica.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_warrant");

/// The hooks' own binary, which `warrant setup` writes into the hosts' settings.
pub const HOOK_BIN: &str = env!("CARGO_BIN_EXE_warrant-hook");

/// A temporary directory holding `config/` (WARRANT_CONFIG), `spool/` (WARRANT_SPOOL) and `data/`;
/// on a store, `replica/` (WARRANT_REPLICA) instead of `spool/`.
pub struct Env {
    /// The directory; removed on drop.
    pub dir: tempfile::TempDir,
    /// The JetStream store the commands run on (`WARRANT_STORE`), when not a directory spool.
    #[cfg(feature = "jetstream")]
    pub store: Option<OnStore>,
}

/// A JetStream store an [`Env`] runs on: its URL, a connection to it (playing the agents' hosts,
/// which publish on their agents' subjects) and whatever keeps its server running.
#[cfg(feature = "jetstream")]
pub struct OnStore {
    /// `nats://HOST:PORT/NAME`.
    pub url: String,
    /// A connection to the store.
    pub remote: warrant::store::jetstream::JetStreamSpool,
    /// The server (a `nats::Server`), stopped when the environment is dropped.
    _server: Box<dyn std::any::Any>,
}

impl Env {
    /// A fresh directory with an unprotected principal key (`keys init --no-passphrase`).
    pub fn new() -> Self {
        let e = Self::without_key();
        let o = e.run(&["keys", "init", "--no-passphrase"]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        e
    }
    /// A fresh directory, no key, and an empty spool directory (as a principal who ran
    /// `warrant init` has: no other command creates a spool).
    pub fn without_key() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("spool")).expect("spool dir");
        Self {
            dir,
            #[cfg(feature = "jetstream")]
            store: None,
        }
    }
    /// Puts this environment on the store `url` (whose server `server` keeps running as long as
    /// the environment), creating the store's streams and buckets: every command then runs with
    /// `WARRANT_STORE` and this host's replica (`WARRANT_REPLICA`) instead of `WARRANT_SPOOL`.
    #[cfg(feature = "jetstream")]
    pub fn on_store(mut self, url: &str, server: Box<dyn std::any::Any>) -> Self {
        use warrant::store::jetstream::{ConnectOptions, JetStreamSpool, SetupOptions, StoreUrl};
        let parsed: StoreUrl = url.parse().expect("store url");
        let remote = JetStreamSpool::connect(&parsed, &ConnectOptions::default()).expect("connect to the store");
        remote.setup(SetupOptions::default()).expect("create the store");
        self.store = Some(OnStore { url: url.to_owned(), remote, _server: server });
        self
    }
    /// Whether the commands run on a JetStream store.
    pub fn on_a_store(&self) -> bool {
        #[cfg(feature = "jetstream")]
        let on = self.store.is_some();
        #[cfg(not(feature = "jetstream"))]
        let on = false;
        on
    }
    /// The principal's configuration directory.
    pub fn config(&self) -> PathBuf {
        self.dir.path().join("config")
    }
    /// The spool; on a store, this host's replica of it (the principal's local copy, pulled
    /// from the store before each command).
    pub fn spool(&self) -> PathBuf {
        if self.on_a_store() {
            return self.dir.path().join("replica");
        }
        self.dir.path().join("spool")
    }
    /// Writes `<config>/policy.toml`.
    pub fn policy(&self, text: &str) {
        std::fs::create_dir_all(self.config()).expect("config dir");
        std::fs::write(self.config().join("policy.toml"), text).expect("policy.toml");
    }
    /// `warrant ARGS` with this environment and no standard input.
    pub fn cmd(&self, args: &[&str]) -> Command {
        self.cmd_of(BIN, args)
    }
    /// `program ARGS` (`warrant` or [`HOOK_BIN`]) in this environment.
    pub fn cmd_of(&self, program: &str, args: &[&str]) -> Command {
        let mut c = Command::new(program);
        c.args(args)
            .env("WARRANT_CONFIG", self.config())
            .env("WARRANT_PRINCIPAL", "alice")
            .env("XDG_DATA_HOME", self.dir.path().join("data"))
            .stdin(Stdio::null());
        #[cfg(feature = "jetstream")]
        if let Some(store) = &self.store {
            c.env("WARRANT_STORE", &store.url).env("WARRANT_REPLICA", self.spool()).env_remove("WARRANT_SPOOL");
            return c;
        }
        c.env("WARRANT_SPOOL", self.spool());
        c
    }
    /// Runs `warrant ARGS` to completion.
    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().expect("run warrant")
    }
    /// `warrant propose` with a class, agent and id, the summary "s", and `extra` flags.
    pub fn propose(&self, class: &str, agent: &str, id: &str, extra: &[&str]) -> Output {
        let mut args = vec!["propose", "--class", class, "--agent", agent, "--summary", "s", "--id", id];
        args.extend_from_slice(extra);
        self.run(&args)
    }
    /// Publishes a portable packet `id` of `draft.compose` by `agent`, with `governance`, as a
    /// file written directly into `packets/`; on a store, on `agent`'s subject.
    pub fn publish_governed(&self, id: &str, agent: &str, governance: serde_json::Value) {
        let mut doc = warrant::protocol::packet::portable_packet(
            id,
            "draft.compose",
            agent,
            "s",
            serde_json::json!({"text": "x"}),
            "2026-11-21T09:00:00Z",
        );
        doc["governance"] = governance;
        let bytes = serde_json::to_vec(&doc).expect("json");
        if self.publish_on_store("packets", agent, &bytes) {
            return;
        }
        let dir = self.spool().join("packets");
        std::fs::create_dir_all(&dir).expect("packets dir");
        std::fs::write(dir.join(format!("{id}.json")), bytes).expect("write");
    }
    /// On a store, publishes `bytes` as `agent`'s host does, on its subject of `kind` (`packets`
    /// or `receipts`), and returns true; on a directory spool does nothing and returns false.
    pub fn publish_on_store(&self, kind: &str, agent: &str, bytes: &[u8]) -> bool {
        #[cfg(feature = "jetstream")]
        if let Some(store) = &self.store {
            let hash = warrant::protocol::canonical::sha256_prefixed(bytes);
            let ack = match kind {
                "packets" => store.remote.publish_packet(agent, bytes, &hash),
                "receipts" => store.remote.publish_receipt(agent, bytes, &hash),
                _ => panic!("nothing but packets and receipts is published: {kind}"),
            }
            .expect("publish on the agent's subject");
            assert!(!ack.duplicate, "published once");
            return true;
        }
        let _ = (kind, agent, bytes);
        false
    }
}

/// A command's stdout and stderr, for assertion messages.
pub fn text(o: &Output) -> String {
    format!("stdout: {}\nstderr: {}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}
