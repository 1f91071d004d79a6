//! `warrant mcp-gateway --listen SOCKET --sign-receipts` under its
//! own configuration (its own key, as a gateway run under its own Unix user has), the real
//! `mcp-server-filesystem` behind it, and the real Python `mcp` SDK client
//! (`tests/support/mcp_client.py`) connecting through `warrant mcp-gateway --connect SOCKET`. The
//! gateway's receipts are signed; once the principal pins its key with `keys pin --gateway` they
//! count as observed outcomes (`receipt` provenance) in `warrant eval`'s posterior, and a copy
//! under another name counts once; unpinned they do not. A gateway key never signs an approval.
//!
//! The servers and the SDK are `.ci/run`'s: without them the end-to-end test fails when
//! `CI=true` and is skipped (with the reason printed) elsewhere. The other tests need neither.
#![cfg(feature = "console")]

use warrant::store::prelude::*;

use crate::cli_env;
use crate::real_parts;
use real_parts::have;

use cli_env::{BIN, Env, text};
use serde_json::{Value, json};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const CLIENT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/mcp_client.py");

/// Reads are safe (they run with no packet); writes are mutating (held for the principal).
const POLICY: &str = r#"
[tools."filesystem/read_*"]
tier = "safe"
class = "read.context"
level = 1

[tools."filesystem/write_file"]
tier = "mutating"
class = "file.write"
level = 2
"#;

/// `warrant ARGS` under the gateway's own configuration `config` (its user's `WARRANT_CONFIG`),
/// on the principal's spool.
fn gw_cmd(env: &Env, config: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.args(args)
        .env("WARRANT_CONFIG", config)
        .env("WARRANT_SPOOL", env.spool())
        .env("WARRANT_PRINCIPAL", "fs-gw")
        .env("XDG_DATA_HOME", env.dir.path().join("gw-data"))
        .env_remove("WARRANT_PASSPHRASE_FILE")
        .stdin(Stdio::null());
    c
}

fn ok(o: &Output) {
    assert_eq!(o.status.code(), Some(0), "{}", text(o));
}

/// The gateway's configuration, as the set-up in docs/integrations.md makes it: its own key
/// (`keys init --no-passphrase`, then unpinned as a principal: it is no principal), the
/// principal's public key pinned, and the tool table.
fn gateway_config(env: &Env) -> PathBuf {
    let config = env.dir.path().join("gw-config");
    ok(&gw_cmd(env, &config, &["keys", "init", "--no-passphrase"]).output().expect("keys init"));
    let own = public_fingerprint(&config.join("principal.pub"));
    ok(&gw_cmd(env, &config, &["keys", "unpin", &own]).output().expect("unpin"));
    let alice = env.config().join("principal.pub");
    ok(&gw_cmd(env, &config, &["keys", "pin", "--principal", "alice", &alice.to_string_lossy()])
        .output()
        .expect("pin alice"));
    std::fs::write(config.join("policy.toml"), POLICY).expect("policy");
    config
}

/// The fingerprint of a public key file, as `warrant keys pin` prints it.
fn public_fingerprint(path: &Path) -> String {
    use base64::Engine as _;
    use ed25519_dalek::pkcs8::DecodePublicKey as _;
    use sha2::Digest as _;
    let pem = std::fs::read_to_string(path).expect("public key");
    let key = ed25519_dalek::VerifyingKey::from_public_key_pem(&pem).expect("pem");
    format!("SHA256:{}", base64::engine::general_purpose::STANDARD_NO_PAD.encode(sha2::Sha256::digest(key.as_bytes())))
}

/// A listening gateway; stopped with SIGTERM when dropped.
struct Listening {
    child: Option<Child>,
}

impl Listening {
    fn start(env: &Env, config: &Path, root: &Path, socket: &Path) -> Self {
        let child = gw_cmd(env, config, &[])
            .args(["mcp-gateway", "--listen"])
            .arg(socket)
            .args(["--sign-receipts", "--wait", "60", "--", "mcp-server-filesystem"])
            .arg(root)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("warrant mcp-gateway --listen");
        let deadline = Instant::now() + Duration::from_secs(20);
        while !socket.exists() {
            assert!(Instant::now() < deadline, "the gateway never listened on {}", socket.display());
            std::thread::sleep(Duration::from_millis(20));
        }
        Self { child: Some(child) }
    }

    /// SIGTERM; the gateway's exit status and stderr.
    fn stop(&mut self) -> (Option<i32>, String) {
        let Some(mut child) = self.child.take() else { return (None, String::new()) };
        let pid = rustix::process::Pid::from_raw(i32::try_from(child.id()).expect("pid")).expect("pid");
        rustix::process::kill_process(pid, rustix::process::Signal::TERM).expect("SIGTERM");
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if let Some(status) = child.try_wait().expect("wait") {
                let mut err = String::new();
                if let Some(mut e) = child.stderr.take() {
                    use std::io::Read as _;
                    let _ = e.read_to_string(&mut err);
                }
                return (status.code(), err);
            }
            assert!(Instant::now() < deadline, "the gateway did not stop on SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The Python client running `steps` against `warrant mcp-gateway --connect SOCKET` (as the
/// agent's user would: no warrant configuration of its own is needed).
fn agent(env: &Env, socket: &Path, steps: &Value) -> Child {
    Command::new("python3")
        .arg(CLIENT)
        .arg(steps.to_string())
        .arg("--")
        .args([BIN, "mcp-gateway", "--connect"])
        .arg(socket)
        .env("XDG_DATA_HOME", env.dir.path().join("agent-data"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 mcp_client.py")
}

fn call(tool: &str, args: Value) -> Value {
    json!({"call": tool, "args": args, "progress": true})
}

/// `warrant list --json`'s packets (the principal's view).
fn packets(env: &Env) -> Vec<Value> {
    let o = env.run(&["list", "--json"]);
    ok(&o);
    let v: Value = serde_json::from_slice(&o.stdout).expect("list --json");
    v["packets"].as_array().cloned().unwrap_or_default()
}

/// The receipt files in `receipts/`, with their paths.
fn receipts(env: &Env) -> Vec<(PathBuf, Value)> {
    let Ok(dir) = std::fs::read_dir(env.spool().join("receipts")) else { return Vec::new() };
    dir.filter_map(|e| {
        let p = e.ok()?.path();
        let v = serde_json::from_slice(&std::fs::read(&p).ok()?).ok()?;
        Some((p, v))
    })
    .collect()
}

/// `warrant eval`'s `tg.posterior` for `class`, under the principal's configuration.
fn posterior(env: &Env, class: &str) -> Value {
    let mut child = env.cmd(&["eval"]).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("eval");
    let line = json!({"op": "tg.posterior", "action_class": class}).to_string();
    child.stdin.take().expect("stdin").write_all(format!("{line}\n").as_bytes()).expect("write");
    let o = child.wait_with_output().expect("eval");
    ok(&o);
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)))
}

/// The posterior's rows from `source` (`principal`; `gateway:<name>` for a gateway's observed
/// receipts).
fn by_source(p: &Value, source: &str) -> u64 {
    p["by_source"][source].as_u64().unwrap_or(0)
}

/// The posterior's strong rows (provenance `principal` or `receipt`; the agent's own word is
/// weak).
fn strong(p: &Value) -> u64 {
    p["evidence_quality"]["strong"].as_u64().unwrap_or(0)
}

// The whole loop: a read and an approved write through `--listen`/`--connect`; the gateway's
// receipts are signed; unpinned they are not evidence, pinned with `keys pin --gateway` they are
// (`receipt` provenance, each once, a copy under another name adding nothing); SIGTERM stops the
// gateway and removes its socket.
#[test]
fn signed_receipts_of_a_listening_gateway_count_once_pinned_and_not_before() {
    if !have(&["mcp-server-filesystem"]) {
        return;
    }
    let env = Env::new();
    env.policy(POLICY);
    std::fs::create_dir_all(env.spool()).expect("spool");
    let gw_config = gateway_config(&env);
    let gw_fp = public_fingerprint(&gw_config.join("principal.pub"));
    let root = tempfile::tempdir().expect("root");
    std::fs::write(root.path().join("hello.txt"), "hello\n").expect("write");
    let socket = env.dir.path().join("gw.sock");
    let mut gw = Listening::start(&env, &gw_config, root.path(), &socket);
    {
        use std::os::unix::fs::{FileTypeExt as _, PermissionsExt as _};
        let m = std::fs::symlink_metadata(&socket).expect("socket");
        assert!(m.file_type().is_socket());
        assert_eq!(m.permissions().mode() & 0o777, 0o660, "a group can be given access, nobody else");
    }
    // A read: safe, it runs with no packet.
    let read = agent(&env, &socket, &json!([call("read_text_file", json!({"path": root.path().join("hello.txt")}))]));
    let o = read.wait_with_output().expect("client");
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{out}\n{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.contains("hello"), "the read ran through the socket: {out}");
    // A write: held until the principal approves it.
    let target = root.path().join("approved.txt");
    let write = agent(&env, &socket, &json!([call("write_file", json!({"path": target, "content": "approved\n"}))]));
    let deadline = Instant::now() + Duration::from_secs(40);
    let id = loop {
        let waiting: Vec<Value> = packets(&env)
            .into_iter()
            .filter(|p| p["summary"].as_str().is_some_and(|s| s.contains("write_file")))
            .collect();
        if let Some(p) = waiting.first() {
            break p["packet_id"].as_str().expect("id").to_owned();
        }
        assert!(Instant::now() < deadline, "no held packet for the write");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(!target.exists(), "nothing runs while held");
    ok(&env.run(&["approve", "--yes", &id]));
    let o = write.wait_with_output().expect("client");
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{out}\n{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.contains("\"isError\": false"), "{out}");
    assert_eq!(std::fs::read_to_string(&target).expect("written"), "approved\n");
    // Both receipts (the write's at once, the read's when its session ended), both signed by
    // the gateway's key.
    let deadline = Instant::now() + Duration::from_secs(20);
    let signed = loop {
        let r = receipts(&env);
        if r.len() >= 2 {
            break r;
        }
        assert!(Instant::now() < deadline, "receipts: {r:?}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(signed.len(), 2, "{signed:?}");
    for (_, r) in &signed {
        assert_eq!(r["signature"]["key_fingerprint"], json!(gw_fp), "{r}");
        assert_eq!(r["signature"]["algorithm"], json!("ed25519"), "{r}");
    }
    let classes: Vec<&str> = signed.iter().filter_map(|(_, r)| r["action_class"].as_str()).collect();
    assert!(classes.contains(&"file.write") && classes.contains(&"read.context"), "{classes:?}");
    // Unpinned: the agent's own word, not evidence.
    let before = posterior(&env, "file.write");
    assert_eq!(by_source(&before, "gateway:fs-gw"), 0, "{before}");
    assert_eq!((before["samples"].clone(), strong(&before)), (json!(1), 1), "only the approval: {before}");
    assert_eq!(by_source(&before, "principal"), 1, "the approval: {before}");
    assert_eq!(posterior(&env, "read.context")["samples"], json!(0));
    // Pinned as a gateway's key: observed outcomes.
    let o = env.run(&["keys", "pin", "--gateway", "fs-gw", &gw_config.join("principal.pub").to_string_lossy()]);
    ok(&o);
    assert!(String::from_utf8_lossy(&o.stdout).contains(&gw_fp), "the fingerprint is shown: {}", text(&o));
    let shown = env.run(&["keys", "show"]);
    assert!(String::from_utf8_lossy(&shown.stdout).contains(&format!("{gw_fp}  gateway    fs-gw")), "{}", text(&shown));
    let after = posterior(&env, "file.write");
    assert_eq!(by_source(&after, "gateway:fs-gw"), 1, "{after}");
    assert_eq!((after["samples"].clone(), strong(&after)), (json!(2), 2), "an observed outcome: {after}");
    let read_after = posterior(&env, "read.context");
    assert_eq!((read_after["samples"].clone(), strong(&read_after)), (json!(1), 1), "{read_after}");
    // A copy under another name counts once.
    let (path, _) = signed.iter().find(|(_, r)| r["action_class"] == json!("file.write")).expect("write receipt");
    std::fs::copy(path, env.spool().join("receipts/copied.json")).expect("copy");
    assert_eq!(posterior(&env, "file.write")["samples"], json!(2), "a replayed receipt counts once");
    // An edited copy (another receipt id, same signature) is not observed at all.
    let mut edited: Value = serde_json::from_slice(&std::fs::read(path).expect("read")).expect("json");
    edited["receipt_id"] = json!("rcpt-replayed");
    std::fs::write(env.spool().join("receipts/edited.json"), edited.to_string()).expect("write");
    let p = posterior(&env, "file.write");
    assert_eq!((p["samples"].clone(), by_source(&p, "gateway:fs-gw")), (json!(2), 1), "{p}");
    // Unpinned again: gone.
    ok(&env.run(&["keys", "unpin", &gw_fp]));
    assert_eq!(by_source(&posterior(&env, "file.write"), "gateway:fs-gw"), 0);
    // SIGTERM stops it and removes the socket.
    let (code, stderr) = gw.stop();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!socket.exists(), "the socket is removed on exit");
}

// A gateway key never signs an approval: `warrant approve` with the gateway's key refuses (it is
// not a principal's key), and a decision record signed with it (forged into the chain with a
// key set that trusts it) makes the principal's chain fail to verify and approves nothing.
#[test]
fn a_gateway_key_cannot_sign_an_approval() {
    let env = Env::new();
    std::fs::create_dir_all(env.spool()).expect("spool");
    let gw_config = gateway_config(&env);
    ok(&env.run(&["keys", "pin", "--gateway", "fs-gw", &gw_config.join("principal.pub").to_string_lossy()]));
    ok(&env.propose("draft.compose", "scribe", "p-forge", &[]));
    // The gateway's key under the principal's pins: not a principal's key.
    let mixed = env.dir.path().join("mixed");
    std::fs::create_dir_all(&mixed).expect("dir");
    std::fs::copy(env.config().join("pinned_keys.toml"), mixed.join("pinned_keys.toml")).expect("copy");
    let key = mixed.join("principal.key");
    std::fs::copy(gw_config.join("principal.key"), &key).expect("copy");
    let o = gw_cmd(&env, &mixed, &["approve", "--yes", "p-forge"])
        .env("WARRANT_PRINCIPAL", "fs-gw")
        .output()
        .expect("approve");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not pinned"), "{}", text(&o));
    // A decision signed with it, appended by a writer that trusts it.
    let gateway =
        warrant::protocol::keys::Principal::load(&gw_config.join("principal.key"), "fs-gw").expect("gateway key");
    let mut trusting = warrant::protocol::keys::PinnedKeys::load(&env.config()).expect("pins");
    trusting.pin("fs-gw", gateway.verifying_key());
    let spool = warrant::store::spool::Spool::new(env.spool());
    let bytes = std::fs::read(env.spool().join("packets/p-forge.json")).expect("packet");
    let packet = warrant::protocol::packet::parse_packet(&bytes, "p-forge").expect("packet");
    warrant::store::spool::decide(
        &spool,
        &gateway,
        &trusting,
        &packet,
        warrant::protocol::decision::Verdict::Approve,
        Some("forged"),
        "2026-11-21T09:00:00Z",
    )
    .expect("appended");
    let o = env.run(&["verify"]);
    assert_ne!(o.status.code(), Some(0), "a gateway-signed decision does not verify: {}", text(&o));
    let listed = packets(&env);
    let p = listed.iter().find(|p| p["packet_id"] == json!("p-forge")).expect("packet");
    assert_ne!(p["state"], json!("approved"), "{p}");
}

#[test]
fn connect_to_a_missing_socket_exits_non_zero_with_the_reason() {
    let dir = tempfile::tempdir().expect("dir");
    let o = Command::new(BIN)
        .args(["mcp-gateway", "--connect"])
        .arg(dir.path().join("nobody.sock"))
        .stdin(Stdio::null())
        .output()
        .expect("run");
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot reach the MCP gateway"), "{}", text(&o));
    assert!(o.stdout.is_empty(), "nothing for the client to read");
}

#[test]
fn sign_receipts_without_a_loadable_key_refuses_to_start() {
    let env = Env::without_key();
    let socket = env.dir.path().join("gw.sock");
    let o = env
        .cmd(&["mcp-gateway", "--listen", &socket.to_string_lossy(), "--sign-receipts", "--", "true"])
        .output()
        .expect("run");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--sign-receipts"), "{}", text(&o));
    assert!(!socket.exists(), "it never listened");
    // A protected key with no passphrase to be had: refused too, never unsigned.
    let e = Env::without_key();
    let pass = e.dir.path().join("pass");
    std::fs::write(&pass, "correct horse\n").expect("write");
    ok(&e.cmd(&["keys", "init"]).env("WARRANT_PASSPHRASE_FILE", &pass).output().expect("init"));
    let o = e
        .cmd(&["mcp-gateway", "--listen", &socket.to_string_lossy(), "--sign-receipts", "--", "true"])
        .env_remove("WARRANT_PASSPHRASE_FILE")
        .output()
        .expect("run");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("WARRANT_PASSPHRASE_FILE"), "{}", text(&o));
    // Only with --listen.
    let o = env.cmd(&["mcp-gateway", "--sign-receipts", "--", "true"]).output().expect("run");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

#[test]
fn listen_refuses_a_path_that_is_not_a_socket() {
    let env = Env::new();
    let path = env.dir.path().join("not-a-socket");
    std::fs::write(&path, "keep\n").expect("write");
    let o = env.cmd(&["mcp-gateway", "--listen", &path.to_string_lossy(), "--", "true"]).output().expect("run");
    assert_ne!(o.status.code(), Some(0), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a socket"), "{}", text(&o));
    assert_eq!(std::fs::read_to_string(&path).expect("kept"), "keep\n");
}
