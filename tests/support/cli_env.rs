//! A temporary config directory and spool for running the real `warrant` binary.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_warrant");

/// A temporary directory holding `config/` (WARRANT_CONFIG), `spool/` (WARRANT_SPOOL) and `data/`.
pub struct Env {
    /// The directory; removed on drop.
    pub dir: tempfile::TempDir,
}

impl Env {
    /// A fresh directory with an unprotected principal key (`keys init --no-passphrase`).
    pub fn new() -> Self {
        let e = Self::without_key();
        let o = e.run(&["keys", "init", "--no-passphrase"]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        e
    }
    /// A fresh directory, no key.
    pub fn without_key() -> Self {
        Self { dir: tempfile::tempdir().expect("tempdir") }
    }
    /// The principal's configuration directory.
    pub fn config(&self) -> PathBuf {
        self.dir.path().join("config")
    }
    /// The spool.
    pub fn spool(&self) -> PathBuf {
        self.dir.path().join("spool")
    }
    /// Writes `<config>/policy.toml`.
    pub fn policy(&self, text: &str) {
        std::fs::create_dir_all(self.config()).expect("config dir");
        std::fs::write(self.config().join("policy.toml"), text).expect("policy.toml");
    }
    /// `warrant ARGS` with this environment and no standard input.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.args(args)
            .env("WARRANT_CONFIG", self.config())
            .env("WARRANT_SPOOL", self.spool())
            .env("WARRANT_PRINCIPAL", "alice")
            .env("XDG_DATA_HOME", self.dir.path().join("data"))
            .stdin(Stdio::null());
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
    /// file written directly into `packets/`.
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
        let dir = self.spool().join("packets");
        std::fs::create_dir_all(&dir).expect("packets dir");
        std::fs::write(dir.join(format!("{id}.json")), serde_json::to_vec(&doc).expect("json")).expect("write");
    }
}

/// A command's stdout and stderr, for assertion messages.
pub fn text(o: &Output) -> String {
    format!("stdout: {}\nstderr: {}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}
