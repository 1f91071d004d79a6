//! One principal, many machines (`docs/distributed.md`): the real `warrant` binary on
//! a JetStream store, against real `nats-server` processes. Each host is its own process with
//! its own configuration directory and data directory (the principal's replica lives in hers),
//! talking to its own node of a three-node cluster: agents publish with `warrant propose --wait`,
//! the principal approves and refuses on her replica, the agents get the signed decisions.
#![cfg(feature = "jetstream")]

use crate::nats;

use crate::cli_env;

use std::path::PathBuf;
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use cli_env::{Env, text};
use nats::{Cluster, Server};
use serde_json::{Value, json};
use warrant::store::jetstream::{ConnectOptions, JetStreamSpool, StoreUrl};

/// Runs `warrant` for `env` with `extra` environment, to completion.
fn run_with(env: &Env, extra: &[(&str, &str)], args: &[&str]) -> Output {
    let mut c = env.cmd(args);
    for (k, v) in extra {
        c.env(k, v);
    }
    c.output().expect("run warrant")
}

fn ok(o: &Output) -> String {
    assert_eq!(o.status.code(), Some(0), "{}", text(o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// An agent's host: its own configuration (no key of its own; the principal's key pinned, so it
/// can verify her decisions) and nothing else.
fn agent_host(principal: &Env) -> Env {
    let a = Env::without_key();
    let public = principal.config().join("principal.pub");
    ok(&a.run(&["keys", "pin", "--principal", "alice", public.to_str().expect("utf-8")]));
    a
}

/// `warrant propose --wait` on `url` as `agent`, running in the background.
fn propose_waiting(host: &Env, url: &str, extra: &[(&str, &str)], agent: &str, id: &str) -> Child {
    let mut c = host.cmd(&propose_wait_args(url, agent, id, "120"));
    for (k, v) in extra {
        c.env(k, v);
    }
    c.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("propose")
}

/// `--store URL propose … --id ID --wait SECONDS` for a `draft.compose` packet of `agent`.
fn propose_wait_args<'a>(url: &'a str, agent: &'a str, id: &'a str, seconds: &'a str) -> [&'a str; 13] {
    [
        "--store",
        url,
        "propose",
        "--class",
        "draft.compose",
        "--agent",
        agent,
        "--summary",
        id,
        "--id",
        id,
        "--wait",
        seconds,
    ]
}

/// Polls `warrant list --json` on the principal's replica until `ids` are all pending.
fn wait_pending(principal: &Env, extra: &[(&str, &str)], url: &str, ids: &[&str]) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let o = run_with(principal, extra, &["--store", url, "list", "--json"]);
        let listed: Value = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
        let pending =
            |id: &str| listed["packets"].as_array().is_some_and(|ps| ps.iter().any(|p| p["packet_id"] == json!(id)));
        if o.status.code() == Some(0) && ids.iter().all(|id| pending(id)) {
            return listed;
        }
        assert!(Instant::now() < deadline, "not all of {ids:?} reached the principal: {}", text(&o));
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn node_url(port: u16, name: &str) -> String {
    format!("nats://127.0.0.1:{port}/{name}")
}

/// Creates the store's streams and buckets (`warrant init --store URL --replicas N`, as
/// `docs/distributed.md` does it).
fn create_store(principal: &Env, extra: &[(&str, &str)], url: &str, replicas: &str) {
    ok(&run_with(principal, extra, &["--store", url, "init", "--replicas", replicas]));
}

/// The store's chain, read by `warrant migrate` into a fresh directory.
fn store_chain(principal: &Env, extra: &[(&str, &str)], url: &str) -> Vec<u8> {
    let copy = principal.dir.path().join(format!("copy-{}", uuid_like()));
    ok(&run_with(principal, extra, &["migrate", "--from", url, "--to", copy.to_str().expect("utf-8")]));
    std::fs::read(copy.join("chain.jsonl")).expect("copied chain")
}

fn uuid_like() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_nanos()
}

fn replica_dir(principal: &Env) -> PathBuf {
    principal.dir.path().join("data").join("warrant").join("replicas").join("team")
}

#[test]
fn a_principal_on_one_host_approves_packets_from_agents_on_two_others_through_a_cluster() {
    let Some(cluster) = Cluster::start() else { return };
    let ports: Vec<u16> = cluster.nodes.iter().map(|n| n.port).collect();
    // Each host talks to its own node; the principal's host names all three (failover).
    let (url_a, url_b, url_p) = (node_url(ports[0], "team"), node_url(ports[1], "team"), cluster.store_url("team"));
    let principal = Env::new();
    create_store(&principal, &[], &url_p, "3");
    let (host_a, host_b) = (agent_host(&principal), agent_host(&principal));

    let a1 = propose_waiting(&host_a, &url_a, &[], "agent-a", "a-1");
    let a2 = propose_waiting(&host_a, &url_a, &[], "agent-a", "a-2");
    let b1 = propose_waiting(&host_b, &url_b, &[], "agent-b", "b-1");
    let listed = wait_pending(&principal, &[], &url_p, &["a-1", "a-2", "b-1"]);
    let agent_of = |id: &str| {
        listed["packets"].as_array().expect("packets").iter().find(|p| p["packet_id"] == json!(id)).expect("listed")
            ["agent"]
            .clone()
    };
    assert_eq!(agent_of("a-1"), json!("agent-a"));
    assert_eq!(agent_of("b-1"), json!("agent-b"));

    ok(&principal.run(&["--store", &url_p, "approve", "--yes", "a-1"]));
    ok(&principal.run(&["--store", &url_p, "refuse", "--yes", "a-2", "--reason", "not this one"]));
    ok(&principal.run(&["--store", &url_p, "approve", "--yes", "b-1"]));

    let done = |c: Child| c.wait_with_output().expect("agent");
    let (a1, a2, b1) = (done(a1), done(a2), done(b1));
    assert_eq!(a1.status.code(), Some(0), "{}", text(&a1));
    assert!(String::from_utf8_lossy(&a1.stderr).contains("approve by alice"), "{}", text(&a1));
    assert_eq!(a2.status.code(), Some(3), "a refusal exits 3: {}", text(&a2));
    assert!(String::from_utf8_lossy(&a2.stderr).contains("not this one"), "{}", text(&a2));
    assert_eq!(b1.status.code(), Some(0), "{}", text(&b1));

    // The store's chain verifies with the three signed decisions, and the principal's replica
    // holds it byte for byte.
    let v: Value = serde_json::from_str(&ok(&principal.run(&["--store", &url_p, "verify", "--json"]))).expect("json");
    assert_eq!(v["valid"], json!(true), "{v}");
    assert_eq!(v["total"], json!(3), "{v}");
    let chain = store_chain(&principal, &[], &url_a);
    assert_eq!(chain, std::fs::read(replica_dir(&principal).join("chain.jsonl")).expect("replica chain"));
    // Now decided, the listing says so.
    let listed = wait_pending(&principal, &[], &url_p, &["a-1"]);
    let state = |id: &str| {
        listed["packets"].as_array().expect("packets").iter().find(|p| p["packet_id"] == json!(id)).expect("listed")
            ["decision"]
            .clone()
    };
    assert_eq!(
        (state("a-1"), state("a-2"), state("b-1")),
        (json!("approve"), json!("refuse"), json!("approve")),
        "{listed}"
    );
}

#[test]
fn two_of_the_principals_hosts_never_fork_the_chain() {
    let Some(server) = Server::start() else { return };
    let url = server.store_url("team");
    let principal = Env::new();
    create_store(&principal, &[], &url, "1");
    let agent = agent_host(&principal);
    let ids: Vec<String> = (0..8).map(|i| format!("f-{i}")).collect();
    let mut waiting = Vec::new();
    for id in &ids {
        waiting.push(propose_waiting(&agent, &url, &[], "agent-a", id));
    }
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    wait_pending(&principal, &[], &url, &refs);
    // Two replicas of the one store (two of the principal's hosts), each approving its half,
    // at the same time.
    let replicas = [principal.dir.path().join("replica-1"), principal.dir.path().join("replica-2")];
    let mut approvals = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        let replica = replicas[i % 2].to_str().expect("utf-8").to_owned();
        approvals.push(
            principal
                .cmd(&["--store", &url, "--replica", &replica, "approve", "--yes", id])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("approve"),
        );
    }
    let mut refused = Vec::new();
    for (id, a) in ids.iter().zip(approvals) {
        let o = a.wait_with_output().expect("approve");
        if o.status.code() != Some(0) {
            // The only refusal allowed: the other host appended first; nothing was written.
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(err.contains("moved on") || err.contains("locked"), "{id}: {}", text(&o));
            refused.push(id.clone());
        }
    }
    // Tried again, each lands.
    for id in &refused {
        ok(&principal.run(&[
            "--store",
            &url,
            "--replica",
            replicas[0].to_str().expect("utf-8"),
            "approve",
            "--yes",
            id,
        ]));
    }
    for w in waiting {
        let o = w.wait_with_output().expect("agent");
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    }
    let v: Value = serde_json::from_str(&ok(&principal.run(&["--store", &url, "verify", "--json"]))).expect("json");
    assert_eq!((v["valid"].clone(), v["total"].clone()), (json!(true), json!(8)), "{v}");
    let chain = store_chain(&principal, &[], &url);
    for r in &replicas {
        // Pulled by racing processes, each packet is in the replica once: nothing is invalid.
        let listed: Value = serde_json::from_str(&ok(&principal.run(&[
            "--store",
            &url,
            "--replica",
            r.to_str().expect("utf-8"),
            "list",
            "--json",
        ])))
        .expect("json");
        assert_eq!(listed["invalid"], json!([]), "{listed}");
        assert_eq!(
            std::fs::read(r.join("chain.jsonl")).expect("replica chain"),
            chain,
            "{} is the store's chain",
            r.display()
        );
    }
}

#[test]
fn a_replica_is_only_ever_the_replica_of_its_store() {
    let Some(server) = Server::start() else { return };
    let (url, other_url) = (server.store_url("team"), server.store_url("other"));
    let principal = Env::new();
    create_store(&principal, &[], &url, "1");
    create_store(&principal, &[], &other_url, "1");
    // A directory spool is not turned into a replica.
    ok(&principal.propose("draft.compose", "agent-a", "local-1", &[]));
    let local = principal.spool();
    let o = principal.run(&["--store", &url, "--replica", local.to_str().expect("utf-8"), "list"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("is a directory spool, not a replica"), "{}", text(&o));
    // A replica of one store is not used for another.
    ok(&principal.run(&["--store", &url, "list"]));
    let o =
        principal.run(&["--store", &other_url, "--replica", replica_dir(&principal).to_str().expect("utf-8"), "list"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("is the replica of"), "{}", text(&o));
    // A store that cannot be reached is an error, never an empty spool.
    let o = run_with(&principal, &[("NATS_TIMEOUT", "1")], &["--store", "nats://127.0.0.1:1/team", "list"]);
    assert_ne!(o.status.code(), Some(0), "{}", text(&o));
}

#[test]
fn a_replica_whose_chain_was_changed_is_refused_and_the_store_keeps_its_own() {
    let Some(server) = Server::start() else { return };
    let url = server.store_url("team");
    let principal = Env::new();
    create_store(&principal, &[], &url, "1");
    let agent = agent_host(&principal);
    for id in ["t-1", "t-2"] {
        ok(&run_with(
            &agent,
            &[],
            &[
                "--store",
                &url,
                "propose",
                "--class",
                "draft.compose",
                "--agent",
                "agent-a",
                "--summary",
                "s",
                "--id",
                id,
            ],
        ));
    }
    ok(&principal.run(&["--store", &url, "approve", "--yes", "t-1"]));
    // Someone rewrites the replica's record (the reason of the approval).
    let chain = replica_dir(&principal).join("chain.jsonl");
    let before = std::fs::read_to_string(&chain).expect("chain");
    let tampered = before.replacen("\"agent-a\"", "\"agent-z\"", 1);
    assert_ne!(tampered, before);
    std::fs::write(&chain, tampered).expect("tamper");
    // A decision on it is refused, and nothing reaches the store.
    let o = principal.run(&["--store", &url, "approve", "--yes", "t-2"]);
    assert_ne!(o.status.code(), Some(0), "{}", text(&o));
    let v: Value = serde_json::from_str(&ok(&principal.run(&["--store", &url, "verify", "--json"]))).expect("json");
    assert_eq!((v["valid"].clone(), v["total"].clone()), (json!(true), json!(1)), "{v}");
    // Another of the principal's hosts appends; the changed replica cannot follow it.
    let fresh = principal.dir.path().join("fresh");
    ok(&principal.run(&["--store", &url, "--replica", fresh.to_str().expect("utf-8"), "approve", "--yes", "t-2"]));
    let o = principal.run(&["--store", &url, "list"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("does not hold a prefix"), "{}", text(&o));
}

#[test]
fn a_packet_published_on_another_agents_subject_is_listed_as_invalid() {
    let Some(server) = Server::start() else { return };
    let url = server.store_url("team");
    let principal = Env::new();
    create_store(&principal, &[], &url, "1");
    let remote =
        JetStreamSpool::connect(&url.parse::<StoreUrl>().expect("url"), &ConnectOptions::default()).expect("connect");
    let forged = warrant::protocol::packet::portable_packet(
        "forged-1",
        "draft.compose",
        "agent-a",
        "as agent-a",
        json!({"summary": "x"}),
        "2026-11-26T00:00:00Z",
    );
    let bytes = serde_json::to_vec(&forged).expect("json");
    remote.publish_packet("agent-b", &bytes, "sha256:forged").expect("publish");
    let listed: Value = serde_json::from_str(&ok(&principal.run(&["--store", &url, "list", "--json"]))).expect("json");
    let packets = listed["packets"].as_array().expect("packets");
    assert!(!packets.iter().any(|p| p["packet_id"] == json!("forged-1")), "{listed}");
    let invalid = listed["invalid"].to_string();
    assert!(invalid.contains("published on agent \\\"agent-b\\\"'s subject"), "{listed}");
}

/// The `index`th ```conf block of `docs/distributed.md` (0: agents that propose; 1: agents'
/// hosts that run the hooks or the gateway) for the spool `team` and these users.
fn permission_block(index: usize, principal: &str, agent_a: &str) -> String {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/distributed.md")).expect("docs");
    let blocks: Vec<&str> = doc.split("```conf\n").skip(1).map(|b| b.split("```").next().expect("block")).collect();
    let block = blocks.get(index).unwrap_or_else(|| panic!("docs/distributed.md has ```conf block {index}"));
    block.replace("PRINCIPAL_NKEY", principal).replace("AGENT_A_NKEY", agent_a).replace("NAME", "team")
}

/// A server with the `index`th permission block, the store `team` created with the principal's
/// NKey, and an agent's host with the agent's NKey and inbox prefix.
struct Credentialed {
    server: Server,
    url: String,
    principal: Env,
    principal_seed: PathBuf,
    agent: Env,
    agent_seed: PathBuf,
}

impl Credentialed {
    fn start(index: usize) -> Option<Credentialed> {
        let (principal_key, agent_key) = (nkeys::KeyPair::new_user(), nkeys::KeyPair::new_user());
        let conf = permission_block(index, &principal_key.public_key(), &agent_key.public_key());
        let server = Server::start_with_config(Some(&conf))?;
        let url = server.store_url("team");
        let seed = |env: &Env, kp: &nkeys::KeyPair| -> PathBuf {
            let p = env.dir.path().join("user.nk");
            std::fs::write(&p, kp.seed().expect("seed")).expect("seed file");
            p
        };
        let principal = Env::new();
        let principal_seed = seed(&principal, &principal_key);
        let agent = agent_host(&principal);
        let agent_seed = seed(&agent, &agent_key);
        let c = Credentialed { server, url, principal, principal_seed, agent, agent_seed };
        create_store(&c.principal, &c.p_env(), &c.url, "1");
        Some(c)
    }

    /// The principal's environment: her NKey.
    fn p_env(&self) -> [(&str, &str); 1] {
        [("NATS_NKEY", self.principal_seed.to_str().expect("utf-8"))]
    }

    /// The agent's environment: its NKey and the inbox prefix its permissions allow.
    fn a_env(&self) -> [(&str, &str); 3] {
        [
            ("NATS_NKEY", self.agent_seed.to_str().expect("utf-8")),
            ("NATS_INBOX_PREFIX", "_INBOX_agent-a"),
            ("NATS_TIMEOUT", "3"),
        ]
    }
}

/// The agents' side under the server permissions of `docs/distributed.md`: the agent's own NKey
/// and inbox prefix, from the environment `warrant propose` reads.
#[test]
fn an_agent_with_its_own_credentials_proposes_and_waits_under_the_documented_permissions() {
    let Some(c) = Credentialed::start(0) else { return };
    let (url, principal, agent) = (&c.url, &c.principal, &c.agent);
    let (p_env, a_env) = (c.p_env(), c.a_env());

    let waiting = propose_waiting(agent, url, &a_env, "agent-a", "c-1");
    wait_pending(principal, &p_env, url, &["c-1"]);
    ok(&run_with(principal, &p_env, &["--store", url, "approve", "--yes", "c-1"]));
    let o = waiting.wait_with_output().expect("agent");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));

    // With its credentials it cannot publish as another agent, nor act as the principal.
    let o = run_with(
        agent,
        &a_env,
        &["--store", url, "propose", "--class", "draft.compose", "--agent", "agent-b", "--summary", "s"],
    );
    assert_ne!(o.status.code(), Some(0), "{}", text(&o));
    let replica = agent.dir.path().join("replica");
    // Refused at once with the server's reason, not after the timeout (3 s here, 10 s by default).
    let started = Instant::now();
    let o = run_with(agent, &a_env, &["--store", url, "--replica", replica.to_str().expect("utf-8"), "list"]);
    assert_ne!(o.status.code(), Some(0), "the agent read the chain: {}", text(&o));
    assert!(started.elapsed() < Duration::from_secs(2), "refused after {:?}: {}", started.elapsed(), text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("Permissions Violation"), "{}", text(&o));
    let chain_before = store_chain(principal, &p_env, url);
    let o = run_with(
        agent,
        &a_env,
        &["--store", url, "--replica", replica.to_str().expect("utf-8"), "approve", "--yes", "c-1"],
    );
    assert_ne!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(store_chain(principal, &p_env, url), chain_before, "the agent appended nothing");
}

/// The principal's signals travel through the store: under the documented propose-only
/// permissions, an agent waiting on another host learns of a quarantine (exit 8) and, after a
/// release, of a kill (exit 7, or 3 when the kill's refusal of its packet reaches it first), as
/// it would on a directory spool; a release is no reason to stop waiting.
#[test]
fn a_quarantine_and_a_kill_reach_an_agent_waiting_on_another_host() {
    let Some(c) = Credentialed::start(0) else { return };
    let (url, principal, agent) = (&c.url, &c.principal, &c.agent);
    let (p_env, a_env) = (c.p_env(), c.a_env());

    let waiting = propose_waiting(agent, url, &a_env, "agent-a", "q-1");
    wait_pending(principal, &p_env, url, &["q-1"]);
    ok(&run_with(principal, &p_env, &["--store", url, "agent", "quarantine", "agent-a", "--reason", "odd"]));
    let o = waiting.wait_with_output().expect("agent");
    assert_eq!(o.status.code(), Some(8), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("quarantined by the principal: odd"), "{}", text(&o));

    ok(&run_with(principal, &p_env, &["--store", url, "agent", "release", "agent-a"]));
    let waiting = propose_waiting(agent, url, &a_env, "agent-a", "q-2");
    wait_pending(principal, &p_env, url, &["q-2"]);
    // Released: the agent waits on; the principal's approval reaches it.
    ok(&run_with(principal, &p_env, &["--store", url, "approve", "--yes", "q-2"]));
    let o = waiting.wait_with_output().expect("agent");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));

    let waiting = propose_waiting(agent, url, &a_env, "agent-a", "q-3");
    wait_pending(principal, &p_env, url, &["q-3"]);
    ok(&run_with(principal, &p_env, &["--store", url, "agent", "kill", "agent-a", "--reason", "runaway"]));
    let o = waiting.wait_with_output().expect("agent");
    let err = String::from_utf8_lossy(&o.stderr);
    match o.status.code() {
        Some(7) => assert!(err.contains("was killed by the principal: runaway"), "{}", text(&o)),
        Some(3) => assert!(err.contains("killed: runaway"), "{}", text(&o)),
        other => panic!("a killed agent's wait ends with 7 or 3, not {other:?}: {}", text(&o)),
    }
}

#[cfg(feature = "console")]
use crate::tmux;

/// The console on a JetStream store: packets published on another host appear live (the
/// replica's follower, no polling), an approval in the console reaches the waiting agent, and
/// after the server restarts the console catches up with what was published meanwhile.
#[cfg(feature = "console")]
#[test]
fn the_console_on_a_store_shows_packets_live_and_its_approval_reaches_the_agent_across_a_restart() {
    let Some(mut server) = Server::start() else { return };
    let url = server.store_url("team");
    let principal = Env::new();
    create_store(&principal, &[], &url, "1");
    let agent = agent_host(&principal);
    let env = vec![
        ("WARRANT_CONFIG", principal.config().display().to_string()),
        ("WARRANT_PRINCIPAL", "alice".into()),
        ("XDG_DATA_HOME", principal.dir.path().join("data").display().to_string()),
        ("WARRANT_STORE", url.clone()),
        ("NATS_TIMEOUT", "2".into()),
        ("TERM", "xterm-256color".into()),
    ];
    let console = tmux::Tmux::start("distributed", &env, &["console"]);
    console.wait_for("the console", |s| s.contains("chain ok") && s.contains("0 pending"));

    let waiting = propose_waiting(&agent, &url, &[], "agent-a", "live-1");
    console.wait_for("the packet from the other host", |s| s.contains("live-1") && s.contains("1 pending"));
    console.send(&["a"]);
    console.wait_for("the confirmation", |s| s.contains("Confirm: approve"));
    console.send(&["y"]);
    console.wait_for("the approval", |s| s.contains("approved live-1"));
    let o = waiting.wait_with_output().expect("agent");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));

    // The server goes away and comes back; what is published after is shown.
    server.kill();
    std::thread::sleep(Duration::from_millis(500));
    server.restart();
    ok(&run_with(
        &agent,
        &[],
        &[
            "--store",
            &url,
            "propose",
            "--class",
            "draft.compose",
            "--agent",
            "agent-b",
            "--summary",
            "after",
            "--id",
            "live-2",
        ],
    ));
    console.wait_for("the packet published after the restart", |s| s.contains("live-2") && s.contains("1 pending"));
    console.send(&["q"]);
}

fn hook_fixture(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hooks").join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `warrant hook claude-code` on `host` against the store `url`, with `input` on stdin.
fn spawn_hook_on(host: &Env, url: &str, replica: &std::path::Path, input: &[u8]) -> Child {
    let mut child = host
        .cmd(&["--store", url, "--replica", replica.to_str().expect("utf-8"), "hook", "claude-code", "--wait", "60"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("hook");
    std::io::Write::write_all(&mut child.stdin.take().expect("stdin"), input).expect("event");
    child
}

/// Claude Code's PreToolUse answer: the decision and its reason.
fn hook_decision(o: &Output) -> (String, String) {
    assert_eq!(o.status.code(), Some(0), "{}", text(o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", text(o)));
    let out = &v["hookSpecificOutput"];
    (
        out["permissionDecision"].as_str().expect("decision").to_owned(),
        out["permissionDecisionReason"].as_str().expect("reason").to_owned(),
    )
}

/// The hooks on agents' hosts over JetStream: the governor runs on each host's replica; a safe
/// read runs on its own, a push is held until the principal on her host approves, the
/// approval's one use is taken once across hosts, and a receipt reaches the principal.
#[test]
fn hooks_on_two_agent_hosts_are_governed_through_the_store() {
    let Some(server) = Server::start() else { return };
    let url = server.store_url("team");
    let principal = Env::new();
    create_store(&principal, &[], &url, "1");
    let (host_a, host_b) = (agent_host(&principal), agent_host(&principal));
    let (replica_a, replica_b) = (host_a.dir.path().join("replica"), host_b.dir.path().join("replica"));

    let o = spawn_hook_on(&host_a, &url, &replica_a, &hook_fixture("claude-code-pre-tool-use-read.json"))
        .wait_with_output()
        .expect("hook");
    let (decision, reason) = hook_decision(&o);
    assert_eq!(decision, "allow", "{reason}");

    let push = hook_fixture("claude-code-pre-tool-use-bash-git-push.json");
    let held = spawn_hook_on(&host_a, &url, &replica_a, &push);
    wait_pending(&principal, &[], &url, &["cc-toolu_01PushMain"]);
    ok(&principal.run(&["--store", &url, "approve", "--yes", "cc-toolu_01PushMain", "--reason", "release day"]));
    let (decision, reason) = hook_decision(&held.wait_with_output().expect("hook"));
    assert_eq!(decision, "allow", "{reason}");
    assert!(reason.contains("approved by alice: release day"), "{reason}");

    // The same call replayed on another host: the approval was used once, on host A.
    let o = spawn_hook_on(&host_b, &url, &replica_b, &push).wait_with_output().expect("hook");
    let (decision, reason) = hook_decision(&o);
    assert_ne!(decision, "allow", "the approval ran twice: {reason}");
    assert!(reason.contains("already used"), "{reason}");

    // A receipt from host A reaches the principal's replica.
    let o = host_a
        .cmd(&["--store", &url, "--replica", replica_a.to_str().expect("utf-8"), "hook", "claude-code"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            std::io::Write::write_all(
                &mut c.stdin.take().expect("stdin"),
                &hook_fixture("claude-code-post-tool-use-read.json"),
            )?;
            c.wait_with_output()
        })
        .expect("receipt hook");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    ok(&principal.run(&["--store", &url, "list"]));
    let receipts = std::fs::read_dir(replica_dir(&principal).join("receipts")).expect("receipts").count();
    assert!(receipts >= 1, "the receipt did not reach the principal's replica");
}

/// A hook on an agent's host with the agent's own credentials, under the documented
/// permissions for hooks' hosts: its calls are governed on its replica, held ones run once the
/// principal approves; it cannot publish as another agent nor append to the chain.
#[test]
fn a_hook_with_its_agents_own_credentials_runs_under_the_documented_permissions() {
    let Some(c) = Credentialed::start(1) else { return };
    let (url, principal, agent, server) = (&c.url, &c.principal, &c.agent, &c.server);
    let (p_env, a_env, a_seed) = (c.p_env(), c.a_env(), &c.agent_seed);
    let replica = agent.dir.path().join("replica");
    let hook = |args: &[&str], input: &[u8]| {
        let mut all =
            vec!["--store", url.as_str(), "--replica", replica.to_str().expect("utf-8"), "hook", "claude-code"];
        all.extend_from_slice(args);
        let mut c = agent.cmd(&all);
        for (k, v) in a_env {
            c.env(k, v);
        }
        let mut child = c.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("hook");
        std::io::Write::write_all(&mut child.stdin.take().expect("stdin"), input).expect("event");
        child
    };

    let read = hook(&["--agent", "agent-a"], &hook_fixture("claude-code-pre-tool-use-read.json"));
    let (decision, reason) = hook_decision(&read.wait_with_output().expect("hook"));
    assert_eq!(decision, "allow", "{reason}\n{}", server.log());
    let held =
        hook(&["--agent", "agent-a", "--wait", "60"], &hook_fixture("claude-code-pre-tool-use-bash-git-push.json"));
    wait_pending(principal, &p_env, url, &["cc-toolu_01PushMain"]);
    ok(&run_with(principal, &p_env, &["--store", url, "approve", "--yes", "cc-toolu_01PushMain"]));
    let (decision, reason) = hook_decision(&held.wait_with_output().expect("hook"));
    assert_eq!(decision, "allow", "{reason}\n{}", server.log());

    // As another agent: its packet is refused by the server, and the call is denied.
    let mut other: Value =
        serde_json::from_slice(&hook_fixture("claude-code-pre-tool-use-bash-git-push.json")).expect("json");
    other["tool_use_id"] = json!("toolu_02Other");
    let as_b = hook(&["--agent", "agent-b", "--wait", "5"], other.to_string().as_bytes());
    let (decision, reason) = hook_decision(&as_b.wait_with_output().expect("hook"));
    assert_eq!(decision, "deny", "{reason}");

    // It reads the chain (its replica verified it), and cannot append to it.
    let as_agent = JetStreamSpool::connect(
        &url.parse::<StoreUrl>().expect("url"),
        &ConnectOptions {
            nkey_seed_file: Some(a_seed.clone()),
            inbox_prefix: Some("_INBOX_agent-a".into()),
            timeout: Duration::from_secs(3),
            ..Default::default()
        },
    )
    .expect("the agent connects");
    let chain_before = store_chain(principal, &p_env, url);
    let head = as_agent.head().expect("the agent reads the chain's head").expect("a record");
    let mut forged: Value = serde_json::from_slice(&head.line).expect("record");
    forged["chain_index"] = json!(head.seq + 1);
    let line = serde_json::to_vec(&forged).expect("json");
    assert!(as_agent.append_chain(Some(head.seq), &line, "sha256:forged").is_err(), "the agent appended to the chain");
    assert_eq!(store_chain(principal, &p_env, url), chain_before, "the agent appended nothing");

    // Issue "guarantees on the things themselves" §3: the permission block lets the agent publish
    // to every key of the uses bucket. A put of a key that is not a claim's name made `list` and
    // `approve` fail for good, and a purge gave a use back. What the docs promise ("can only take
    // a use, never give one") is what the server enforces: raw publishes with the agent's own
    // credentials, as any NATS client would send them.
    let bucket = url.parse::<StoreUrl>().expect("url").uses_bucket();
    let claim = format!("$KV.{bucket}.{}", warrant::store::jetstream::use_key("approval+cc-toolu_01PushMain.use"));
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let published: Vec<(&str, bool)> = rt.block_on(async {
        let seed = std::fs::read_to_string(a_seed).expect("seed");
        let client = async_nats::ConnectOptions::with_nkey(seed.trim().to_owned())
            .custom_inbox_prefix("_INBOX_agent-a")
            .connect(server.address())
            .await
            .expect("the agent connects");
        let js = async_nats::jetstream::new(client);
        let mut tried = Vec::new();
        for (what, headers) in [
            ("purge", vec![("KV-Operation", "PURGE"), ("Nats-Rollup", "sub")]),
            ("delete marker", vec![("KV-Operation", "DEL")]),
            ("put over the claim", vec![]),
        ] {
            let mut h = async_nats::HeaderMap::new();
            for (k, v) in headers {
                h.insert(k, v);
            }
            let acked = match js.publish_with_headers(claim.clone(), h, "given back".into()).await {
                Ok(ack) => ack.await.is_ok(),
                Err(_) => false,
            };
            tried.push((what, acked));
        }
        let junk = format!("$KV.{bucket}.zz-not-a-claim");
        let acked = match js.publish(junk, "junk".into()).await {
            Ok(ack) => ack.await.is_ok(),
            Err(_) => false,
        };
        tried.push(("a key that is no claim's name", acked));
        tried
    });
    for (what, acked) in &published[..3] {
        assert!(!acked, "the server took the agent's {what} of a claim");
    }
    // The claim still holds: the approval's one use cannot be taken again.
    let as_principal = JetStreamSpool::connect(
        &url.parse::<StoreUrl>().expect("url"),
        &ConnectOptions {
            nkey_seed_file: Some(c.principal_seed.clone()),
            timeout: Duration::from_secs(3),
            ..Default::default()
        },
    )
    .expect("the principal connects");
    assert_eq!(
        as_principal.claim_use("approval+cc-toolu_01PushMain.use", b"{}").ok(),
        Some(false),
        "a use was given back"
    );
    // A junk key (the server may take it: the permission names every key) stops nothing.
    let o = run_with(principal, &p_env, &["--store", url, "list"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = run_with(
        principal,
        &p_env,
        &[
            "--store",
            url,
            "propose",
            "--class",
            "draft.compose",
            "--agent",
            "agent-a",
            "--summary",
            "s",
            "--id",
            "after-junk",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    ok(&run_with(principal, &p_env, &["--store", url, "approve", "--yes", "after-junk"]));
}

/// One principal's day, run once on a directory spool and once on a JetStream store, with the
/// same commands: the same exit codes, the same decisions and controls in the chain, the same
/// verification and audit answers.
#[test]
fn the_principals_commands_answer_the_same_on_a_directory_and_on_a_store() {
    let Some(server) = Server::start() else { return };
    let run_day = |store: Option<&str>| -> Vec<(String, Option<i32>, Value)> {
        let e = Env::new();
        let pre: Vec<&str> = store.map(|url| vec!["--store", url]).unwrap_or_default();
        if let Some(url) = store {
            create_store(&e, &[], url, "1");
        }
        let mut answers = Vec::new();
        let mut step = |name: &str, args: &[&str]| {
            let all: Vec<&str> = pre.iter().copied().chain(args.iter().copied()).collect();
            let o = e.run(&all);
            // One JSON document, or JSON lines (`audit --json`) as an array.
            let json = serde_json::from_slice::<Value>(&o.stdout).unwrap_or_else(|_| {
                String::from_utf8_lossy(&o.stdout)
                    .lines()
                    .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                    .collect()
            });
            answers.push((name.to_owned(), o.status.code(), json));
            o
        };
        for (agent, id) in [("agent-a", "d-1"), ("agent-a", "d-2"), ("agent-a", "d-3"), ("agent-b", "d-4")] {
            step("propose", &["propose", "--class", "draft.compose", "--agent", agent, "--summary", id, "--id", id]);
        }
        step("approve", &["approve", "--yes", "d-1", "--reason", "fine"]);
        step("refuse", &["refuse", "--yes", "d-2", "--reason", "not this"]);
        step("approve again", &["approve", "--yes", "d-1"]);
        step("quarantine", &["agent", "quarantine", "agent-b", "--reason", "looks odd"]);
        step("approve quarantined", &["approve", "--yes", "d-4"]);
        step("release", &["agent", "release", "agent-b", "--reason", "checked"]);
        step("approve released", &["approve", "--yes", "d-4"]);
        let o = step("list", &["list", "--json"]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        step("verify", &["verify", "--json"]);
        step("audit", &["audit", "--json"]);
        answers
    };
    let on_dir = run_day(None);
    let on_store = run_day(Some(&server.store_url("day")));
    assert_eq!(on_dir.len(), on_store.len());
    let codes: Vec<Option<i32>> = on_dir.iter().map(|(_, c, _)| *c).collect();
    assert!(codes.iter().filter(|c| **c != Some(0)).count() >= 2, "the refused steps fail: {codes:?}");
    for ((name, dir_code, dir_json), (_, store_code, store_json)) in on_dir.iter().zip(&on_store) {
        assert_eq!(dir_code, store_code, "{name}: exit codes differ");
        match name.as_str() {
            "list" => {
                let view = |v: &Value| -> Vec<(Value, Value, Value)> {
                    let mut rows: Vec<_> = v["packets"]
                        .as_array()
                        .expect("packets")
                        .iter()
                        .map(|p| (p["packet_id"].clone(), p["decision"].clone(), p["state"].clone()))
                        .collect();
                    rows.sort_by_key(|r| r.0.to_string());
                    rows
                };
                assert_eq!(view(dir_json), view(store_json), "list");
            }
            "verify" => {
                assert!(dir_json["total"].as_u64().is_some_and(|n| n >= 5), "verify: {dir_json}");
                for k in ["valid", "total", "signatures_verified", "findings"] {
                    assert_eq!(dir_json[k], store_json[k], "verify: {k}");
                }
            }
            "audit" => {
                let entries = |v: &Value| v.as_array().or_else(|| v["entries"].as_array()).map(Vec::len);
                assert!(entries(dir_json).is_some_and(|n| n > 0), "audit: {dir_json}");
                assert_eq!(entries(dir_json), entries(store_json), "audit: entries");
            }
            _ => {}
        }
    }
}

/// A chain longer than one part of the catch-up (`chain_file::CATCH_UP_PART`) reaches a new
/// replica whole, byte for byte, and verifies there.
#[test]
fn a_long_chain_is_pulled_into_a_replica_in_parts_byte_for_byte() {
    let Some(server) = Server::start() else { return };
    let url = server.store_url("long");
    let principal = Env::new();
    let records = (warrant::store::chain_file::CATCH_UP_PART * 2 + 17).to_string();
    let source = principal.dir.path().join("source");
    ok(&principal.run(&[
        "--spool",
        source.to_str().expect("utf-8"),
        "generate-spool",
        "--records",
        &records,
        "--pending",
        "3",
    ]));
    ok(&principal.run(&["migrate", "--from", source.to_str().expect("utf-8"), "--to", &url]));
    let replica = principal.dir.path().join("replica");
    let v: Value = serde_json::from_str(&ok(&principal.run(&[
        "--store",
        &url,
        "--replica",
        replica.to_str().expect("utf-8"),
        "verify",
        "--json",
    ])))
    .expect("json");
    assert_eq!(v["valid"], json!(true), "{v}");
    ok(&principal.run(&["--store", &url, "--replica", replica.to_str().expect("utf-8"), "list"]));
    assert_eq!(
        std::fs::read(replica.join("chain.jsonl")).expect("replica chain"),
        std::fs::read(source.join("chain.jsonl")).expect("source chain"),
        "the replica holds the chain byte for byte"
    );
}

use crate::netns;

/// `warrant ARGS` as `env`'s user, inside network-namespace host `i`.
fn in_host(hosts: &netns::Hosts, i: usize, env: &Env, args: &[&str]) -> std::process::Command {
    let mut c = hosts.command(i, cli_env::BIN);
    c.args(args)
        .env("WARRANT_CONFIG", env.config())
        .env("WARRANT_SPOOL", env.spool())
        .env("WARRANT_PRINCIPAL", "alice")
        .env("XDG_DATA_HOME", env.dir.path().join("data"))
        .stdin(Stdio::null());
    c
}

/// The same day with each host in its own network namespace (its own network stack, reaching
/// the cluster only through its link), where the machine allows it: the principal in one,
/// agents in two others, each on its own node of a three-node cluster with R3 streams.
#[test]
fn hosts_in_their_own_network_namespaces_decide_through_the_cluster() {
    let hosts = match netns::Hosts::create(3) {
        Ok(h) => h,
        Err(why) => {
            eprintln!(
                "skipped: this machine cannot make network namespaces ({why}); the tests above run each host as a process"
            );
            return;
        }
    };
    let Some(cluster) = Cluster::start_on("0.0.0.0") else { return };
    let ports: Vec<u16> = cluster.nodes.iter().map(|n| n.port).collect();
    let url = |host: usize, node: usize| format!("nats://{}:{}/team", hosts.gateway(host), ports[node]);
    let principal = Env::new();
    let (host_a, host_b) = (agent_host(&principal), agent_host(&principal));
    let empty = principal.dir.path().join("empty");
    std::fs::create_dir_all(&empty).expect("dir");
    let p_url = url(0, 2);
    ok(&in_host(
        &hosts,
        0,
        &principal,
        &["migrate", "--from", empty.to_str().expect("utf-8"), "--to", &p_url, "--replicas", "3"],
    )
    .output()
    .expect("migrate"));

    // A host's own loopback is not the servers' host: the link is the only way out.
    let o = in_host(
        &hosts,
        1,
        &host_a,
        &[
            "--store",
            &format!("nats://127.0.0.1:{}/team", ports[0]),
            "propose",
            "--class",
            "draft.compose",
            "--agent",
            "agent-a",
            "--summary",
            "s",
        ],
    )
    .env("NATS_TIMEOUT", "3")
    .output()
    .expect("propose");
    assert_ne!(o.status.code(), Some(0), "host 1 reached a server on its own loopback: {}", text(&o));

    let spawn = |i: usize, env: &Env, agent: &str, id: &str, node: usize| {
        in_host(
            &hosts,
            i,
            env,
            &[
                "--store",
                &url(i, node),
                "propose",
                "--class",
                "draft.compose",
                "--agent",
                agent,
                "--summary",
                id,
                "--id",
                id,
                "--wait",
                "120",
            ],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("propose")
    };
    let a = spawn(1, &host_a, "agent-a", "ns-a", 0);
    let b = spawn(2, &host_b, "agent-b", "ns-b", 1);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let o = in_host(&hosts, 0, &principal, &["--store", &p_url, "list", "--json"]).output().expect("list");
        let v: Value = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
        let has = |id: &str| v["packets"].as_array().is_some_and(|ps| ps.iter().any(|p| p["packet_id"] == json!(id)));
        if has("ns-a") && has("ns-b") {
            break;
        }
        assert!(Instant::now() < deadline, "the packets never reached the principal's host: {}", text(&o));
        std::thread::sleep(Duration::from_millis(200));
    }
    ok(&in_host(&hosts, 0, &principal, &["--store", &p_url, "approve", "--yes", "ns-a"]).output().expect("approve"));
    ok(&in_host(&hosts, 0, &principal, &["--store", &p_url, "refuse", "--yes", "ns-b", "--reason", "no"])
        .output()
        .expect("refuse"));
    let (a, b) = (a.wait_with_output().expect("agent a"), b.wait_with_output().expect("agent b"));
    assert_eq!(a.status.code(), Some(0), "{}", text(&a));
    assert_eq!(b.status.code(), Some(3), "{}", text(&b));
    let v: Value = serde_json::from_slice(
        &in_host(&hosts, 0, &principal, &["--store", &p_url, "verify", "--json"]).output().expect("verify").stdout,
    )
    .expect("json");
    assert_eq!((v["valid"].clone(), v["total"].clone()), (json!(true), json!(2)), "{v}");
}

/// Runs `openssl ARGS` in `dir`.
fn openssl(dir: &std::path::Path, args: &[&str]) {
    let o = std::process::Command::new("openssl").args(args).current_dir(dir).output().expect("openssl");
    assert!(o.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&o.stderr));
}

/// A store whose server requires TLS (`tls://`), with the CA from `NATS_CA`: the principal
/// creates it and an agent proposes through it; without the CA, or with `nats://` to it, nothing
/// connects and nothing is published.
#[test]
fn a_tls_store_is_reached_with_the_ca_from_nats_ca_and_refused_without_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    // A CA, and a server certificate for 127.0.0.1 that it signs.
    openssl(
        d,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            "/CN=warrant test CA",
        ],
    );
    openssl(
        d,
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=127.0.0.1",
        ],
    );
    std::fs::write(d.join("san.ext"), "subjectAltName=IP:127.0.0.1\n").expect("ext");
    openssl(
        d,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.pem",
            "-days",
            "2",
            "-extfile",
            "san.ext",
        ],
    );
    let conf = format!(
        "tls {{\n  cert_file: \"{}\"\n  key_file: \"{}\"\n}}\n",
        d.join("server.pem").display(),
        d.join("server.key").display()
    );
    let Some(server) = Server::start_with_config(Some(&conf)) else { return };
    let url = format!("tls://127.0.0.1:{}/team", server.port);
    let ca = d.join("ca.pem");
    let with_ca = [("NATS_CA", ca.to_str().expect("utf-8")), ("NATS_TIMEOUT", "3")];
    let principal = Env::new();
    create_store(&principal, &with_ca, &url, "1");
    let agent = agent_host(&principal);
    let propose = |env: &[(&str, &str)], url: &str, id: &str| {
        run_with(
            &agent,
            env,
            &[
                "--store",
                url,
                "propose",
                "--class",
                "draft.compose",
                "--agent",
                "agent-a",
                "--summary",
                "s",
                "--id",
                id,
            ],
        )
    };
    ok(&propose(&with_ca, &url, "tls-1"));
    // Without the CA the server's certificate is not trusted; nats:// does not turn TLS off.
    let o = propose(&[("NATS_TIMEOUT", "3")], &url, "tls-2");
    assert_ne!(o.status.code(), Some(0), "{}", text(&o));
    let o = propose(&[("NATS_TIMEOUT", "3")], &format!("nats://127.0.0.1:{}/team", server.port), "tls-3");
    assert_ne!(o.status.code(), Some(0), "{}", text(&o));
    let listed = wait_pending(&principal, &with_ca, &url, &["tls-1"]);
    let ids: Vec<&Value> = listed["packets"].as_array().expect("packets").iter().map(|p| &p["packet_id"]).collect();
    assert_eq!(ids, vec![&json!("tls-1")], "only the packet sent with the CA landed");
}

/// What one agent's `propose --wait` came to: (packet id, exit code, what it said).
type Outcome = (String, Option<i32>, String);

/// How an [`Env`] runs `warrant` (program, environment, directory), to run it from other
/// threads (an `Env` stays on its own).
struct Runner {
    program: std::ffi::OsString,
    envs: Vec<(std::ffi::OsString, Option<std::ffi::OsString>)>,
    dir: Option<PathBuf>,
}

impl Runner {
    fn of(env: &Env) -> Runner {
        let c = env.cmd(&[]);
        Runner {
            program: c.get_program().to_owned(),
            envs: c.get_envs().map(|(k, v)| (k.to_owned(), v.map(ToOwned::to_owned))).collect(),
            dir: c.get_current_dir().map(ToOwned::to_owned),
        }
    }

    fn cmd(&self, args: &[&str]) -> std::process::Command {
        let mut c = std::process::Command::new(&self.program);
        for (k, v) in &self.envs {
            match v {
                Some(v) => c.env(k, v),
                None => c.env_remove(k),
            };
        }
        if let Some(d) = &self.dir {
            c.current_dir(d);
        }
        c.args(args);
        c
    }
}

/// One agent proposing `n` packets one after another, each with `propose --wait`, as an agent
/// does: a packet the store did not take ("was not published … retry with the same --id") is
/// sent again under the same id; anything else is its outcome.
fn agent_under_faults(host: &Runner, url: &str, agent: &str, n: usize) -> Vec<Outcome> {
    let mut out = Vec::new();
    for j in 0..n {
        let id = format!("{agent}-{j}");
        let deadline = Instant::now() + Duration::from_secs(150);
        loop {
            let o = host.cmd(&propose_wait_args(url, agent, &id, "150")).output().expect("propose");
            let said = text(&o);
            if o.status.code() == Some(2) && said.contains("was not published") && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(300));
                continue;
            }
            out.push((id, o.status.code(), said));
            break;
        }
    }
    out
}

/// The principal under faults: lists what is pending and decides it (approving one, refusing
/// the next), killing some of her own `approve`s part-way, until `done`; commands that fail
/// while a node is down are tried again on the next round. Returns how many were killed.
fn principal_under_faults(principal: &Runner, url: &str, done: &std::sync::atomic::AtomicBool) -> usize {
    let (mut n, mut killed) = (0usize, 0usize);
    let deadline = Instant::now() + Duration::from_secs(200);
    while !done.load(std::sync::atomic::Ordering::SeqCst) && Instant::now() < deadline {
        let o = principal.cmd(&["--store", url, "list", "--json"]).env("NATS_TIMEOUT", "3").output().expect("list");
        let listed: Value = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
        let pending: Vec<String> = listed["packets"]
            .as_array()
            .map(|ps| {
                ps.iter().filter(|p| p["decision"].is_null()).filter_map(|p| p["packet_id"].as_str().map(str::to_owned))
            })
            .into_iter()
            .flatten()
            .collect();
        for id in pending {
            n += 1;
            let mut args = vec!["--store", url, "approve", "--yes", id.as_str()];
            if n % 2 == 1 {
                args = vec!["--store", url, "refuse", "--yes", id.as_str(), "--reason", "not under load"];
            }
            if n % 4 == 2 && killed < 5 {
                // Killed part-way: before, during or after its chain append.
                let mut child = principal.cmd(&args).env("NATS_TIMEOUT", "3").spawn().expect("approve");
                std::thread::sleep(Duration::from_millis(40 + 60 * killed as u64));
                let _ = child.kill();
                let _ = child.wait();
                killed += 1;
                continue;
            }
            let _ = principal.cmd(&args).env("NATS_TIMEOUT", "3").output();
        }
        std::thread::sleep(Duration::from_millis(150));
    }
    killed
}

/// The fault test of a three-node cluster (R3): four agents proposing and waiting, the principal
/// deciding, the chain stream's leader killed and restarted, a follower paused and resumed, the
/// principal's own `approve` killed part-way several times; then reconciliation. Every packet an
/// agent proposed is in the store once; every agent's wait ends with its decision (none with an
/// error: a wait watches again across a failover); every decision in the chain is in the
/// decisions bucket (a killed approve's decision is published by the principal's next command);
/// `verify` is valid; the consumers left are few.
#[test]
fn a_cluster_under_load_and_faults_loses_nothing_and_every_wait_ends_with_its_decision() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let Some(mut cluster) = Cluster::start() else { return };
    let url = cluster.store_url("faults");
    let principal = Env::new();
    create_store(&principal, &[], &url, "3");
    let done = AtomicBool::new(false);
    let (agents, per_agent) = (["fa", "fb", "fc", "fd"], 5);
    let hosts: Vec<Env> = agents.iter().map(|_| agent_host(&principal)).collect();
    let host_runners: Vec<Runner> = hosts.iter().map(Runner::of).collect();
    let principal_runner = Runner::of(&principal);
    let s = JetStreamSpool::connect(&url.parse::<StoreUrl>().expect("url"), &ConnectOptions::default()).expect("store");
    let chain_leader = |s: &JetStreamSpool| -> Option<String> {
        let js = s.inner().context().clone();
        let stream = s.inner().url().chain_stream();
        s.block_on(async move {
            let st = js.get_stream(stream).await.ok()?;
            st.cached_info().cluster.as_ref()?.leader.clone()
        })
    };
    let (outcomes, killed) = std::thread::scope(|scope| {
        let runs: Vec<_> = agents
            .iter()
            .zip(&host_runners)
            .map(|(agent, host)| scope.spawn(|| agent_under_faults(host, &url, agent, per_agent)))
            .collect();
        let deciding = scope.spawn(|| principal_under_faults(&principal_runner, &url, &done));
        // The faults, while they work.
        std::thread::sleep(Duration::from_secs(3));
        let leader = chain_leader(&s).expect("the chain stream's leader");
        cluster.node_mut(&leader).kill();
        std::thread::sleep(Duration::from_secs(4));
        cluster.node_mut(&leader).restart();
        std::thread::sleep(Duration::from_secs(2));
        let leader = chain_leader(&s).unwrap_or_default();
        let follower = cluster.nodes.iter().find(|n| n.name != leader).expect("a follower").name.clone();
        cluster.node_mut(&follower).pause();
        std::thread::sleep(Duration::from_secs(5));
        cluster.node_mut(&follower).resume();
        let outcomes: Vec<Outcome> = runs.into_iter().flat_map(|r| r.join().expect("agent")).collect();
        done.store(true, Ordering::SeqCst);
        (outcomes, deciding.join().expect("principal"))
    });
    eprintln!("{} packets decided; {killed} approvals killed part-way", outcomes.len());
    assert!(killed > 0, "no approve was killed part-way");
    // Every wait ended with a decision: 0 (approved) or 3 (refused).
    let failed: Vec<&Outcome> = outcomes.iter().filter(|(_, code, _)| !matches!(code, Some(0 | 3))).collect();
    assert!(failed.is_empty(), "waits that did not end with a decision: {failed:#?}");
    assert_eq!(outcomes.len(), agents.len() * per_agent);

    // Reconciliation: the principal's next command publishes what a killed approve left.
    ok(&run_with(&principal, &[], &["--store", &url, "list"]));
    // Every packet once.
    let packets = s.list_packets().expect("packets");
    let mut ids: Vec<String> = packets
        .iter()
        .map(|m| {
            serde_json::from_slice::<Value>(&m.bytes).expect("packet")["packet_id"].as_str().expect("id").to_owned()
        })
        .collect();
    ids.sort();
    let mut want: Vec<String> = outcomes.iter().map(|(id, _, _)| id.clone()).collect();
    want.sort();
    assert_eq!(ids, want, "every proposed packet in the store, once");
    // Every decision in the chain, in the bucket, as the agent got it.
    let mut decided = 0;
    for entry in s.read_chain().expect("the chain") {
        let rec = entry.record().expect("record");
        let Some(doc) = rec.pointer("/metadata/warrant_decision") else { continue };
        let (agent, id) = (rec["agent"].as_str().expect("agent"), doc["packet_id"].as_str().expect("packet id"));
        let held =
            s.get_decision(agent, id).expect("read the bucket").unwrap_or_else(|| panic!("{id}: not in the bucket"));
        let file: Value = serde_json::from_slice(&held.bytes).expect("decision file");
        assert_eq!(&file["document"], doc, "{id}: the chain's decision");
        let code = outcomes.iter().find(|(o, _, _)| o == id).and_then(|(_, c, _)| *c);
        let want = if doc["decision"] == json!("approve") { Some(0) } else { Some(3) };
        assert_eq!(code, want, "{id}: the agent's exit is the chain's verdict");
        decided += 1;
    }
    assert_eq!(decided, outcomes.len(), "one decision a packet");
    let report: Value =
        serde_json::from_str(&ok(&run_with(&principal, &[], &["--store", &url, "verify", "--json"]))).expect("json");
    assert_eq!(report["valid"], json!(true), "{report}");
    // The consumers left: the principal's follower-free commands delete theirs, agents' last
    // at most 30 s; hundreds of commands ran.
    let js = s.inner().context().clone();
    let consumers = s.block_on(async move {
        use futures_util::StreamExt as _;
        let mut names = js.stream_names();
        let mut total = 0;
        while let Some(name) = names.next().await {
            total += js.get_stream(name.expect("name")).await.expect("stream").cached_info().state.consumer_count;
        }
        total
    });
    eprintln!("{consumers} consumers left");
    assert!(consumers <= 4 * agents.len(), "{consumers} consumers left");
}
