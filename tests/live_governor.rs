//! The long-lived governor the MCP gateway keeps between calls (`warrant::govern::Live`): a
//! call the gate allows on its own is judged in memory with no packet, and every change the
//! principal makes — the tool table, a quarantine, the chain itself — is seen by the next call.

use crate::cli_env;

use cli_env::{Env, text};
use serde_json::{Value, json};
use warrant::govern::Live;
use warrant::protocol::calls::ToolCall;
use warrant::store::spool::Spool;

const SAFE_READ: &str = "[tools.\"fs/read\"]\ntier = \"safe\"\nclass = \"read.context\"\nlevel = 1\n";

fn call(tool: &str) -> ToolCall {
    ToolCall {
        host: "mcp-gateway".into(),
        agent: "reader".into(),
        session: Some("conn1".into()),
        tool: tool.into(),
        input: json!({"path": "/tmp/a"}),
        notebook: "notes".into(),
        cwd: None,
        workdir: None,
        annotations: Value::Null,
    }
}

fn ok(env: &Env, args: &[&str]) {
    let o = env.run(args);
    assert_eq!(o.status.code(), Some(0), "warrant {args:?}: {}", text(&o));
}

#[test]
fn a_safe_call_runs_with_no_packet_until_the_principal_changes_something() {
    let env = Env::new();
    env.policy(SAFE_READ);
    std::fs::create_dir_all(env.spool()).expect("spool");
    let live = Live::new(Spool::new(env.spool()), &env.config());
    // Nothing read yet: the caller must refresh first.
    assert_eq!(live.quick(&call("fs/read")), None);
    live.refresh().expect("refresh");
    assert_eq!(live.quick(&call("fs/read")).as_deref(), Some("read.context"));
    // A tool the table does not name is never allowed with no packet.
    assert_eq!(live.quick(&call("fs/write")), None);
    assert!(std::fs::read_dir(env.spool().join("packets")).map_or(0, |d| d.count()) == 0, "no packet published");

    // The tool table changes: the next call is not judged on the old one.
    env.policy(&SAFE_READ.replace("\"safe\"", "\"mutating\""));
    assert_eq!(live.quick(&call("fs/read")), None, "stale: must refresh");
    live.refresh().expect("refresh");
    assert_eq!(live.quick(&call("fs/read")), None, "a mutating call needs a packet");
    env.policy(SAFE_READ);
    live.refresh().expect("refresh");
    assert!(live.quick(&call("fs/read")).is_some());

    // A quarantine is a chain record: the next call sees it, and a release lifts it.
    ok(&env, &["agent", "quarantine", "reader", "--reason", "test"]);
    assert_eq!(live.quick(&call("fs/read")), None);
    live.refresh().expect("refresh");
    assert_eq!(live.quick(&call("fs/read")), None, "a quarantined agent's calls are judged with a packet");
    ok(&env, &["agent", "release", "reader"]);
    live.refresh().expect("refresh");
    assert!(live.quick(&call("fs/read")).is_some());

    // A chain that no longer verifies: nothing runs with no packet.
    let chain = env.spool().join("chain.jsonl");
    let mut bytes = std::fs::read(&chain).expect("chain");
    let at = bytes.iter().position(|&b| b == b'"').expect("a record");
    bytes[at + 1] ^= 1;
    std::fs::write(&chain, bytes).expect("tamper");
    live.refresh().expect("refresh");
    assert_eq!(live.quick(&call("fs/read")), None, "a broken chain allows nothing on its own");
}

/// A live governor that reads one class's evidence from the agents' snapshot (a hook's one call,
/// `Live::evidence_only`) judges calls of that class alone: a `safe` call of another class,
/// which an unrestricted governor allows, goes to a packet. With no snapshot the whole chain is
/// read, every class's evidence, and both are judged. The policies it read ahead
/// (`Live::governor`) are the ones its refresh uses, unless their file changed in between.
#[test]
fn a_governor_of_one_class_judges_that_class_alone() {
    let env = Env::new();
    let two_classes =
        format!("{SAFE_READ}[tools.\"fs/grep\"]\ntier = \"safe\"\nclass = \"draft.compose\"\nlevel = 1\n");
    env.policy(&two_classes);
    std::fs::create_dir_all(env.spool()).expect("spool");
    let all = Live::new(Spool::new(env.spool()), &env.config());
    all.refresh().expect("refresh");
    assert_eq!(all.quick(&call("fs/read")).as_deref(), Some("read.context"));
    assert_eq!(all.quick(&call("fs/grep")).as_deref(), Some("draft.compose"));

    let one_class = || {
        let mut one = Live::new(Spool::new(env.spool()), &env.config());
        let governor = one.governor().expect("policies");
        one.evidence_only(governor.policies().normalize(&governor.classify(&call("fs/read")).class));
        assert!(std::sync::Arc::ptr_eq(&governor, &one.refresh().expect("refresh")), "read once");
        one
    };
    let whole = one_class();
    assert_eq!(whole.quick(&call("fs/grep")).as_deref(), Some("draft.compose"), "no snapshot: the whole chain");
    // The principal's control signs a checkpoint and writes the agents' snapshot.
    ok(&env, &["agent", "quarantine", "someone-else", "--reason", "test"]);
    let one = one_class();
    assert_eq!(one.quick(&call("fs/read")).as_deref(), Some("read.context"));
    assert_eq!(one.quick(&call("fs/grep")), None, "another class's evidence was not read: a packet judges it");
    assert_eq!(all.quick(&call("fs/grep")), None, "stale: the chain changed");
    all.refresh().expect("refresh");
    assert_eq!(all.quick(&call("fs/grep")).as_deref(), Some("draft.compose"), "every class's evidence");

    // The tool table changes between the read ahead and the refresh: it is read again.
    let ahead = Live::new(Spool::new(env.spool()), &env.config());
    let early = ahead.governor().expect("policies");
    env.policy(&two_classes.replacen("\"safe\"", "\"mutating\"", 1));
    let used = ahead.refresh().expect("refresh");
    assert!(!std::sync::Arc::ptr_eq(&early, &used), "the policies read ahead are stale");
    assert_eq!(ahead.quick(&call("fs/read")), None, "fs/read is mutating now");
}

#[test]
fn without_a_pinned_key_or_a_spool_refresh_fails_and_nothing_is_allowed() {
    let env = Env::without_key();
    env.policy(SAFE_READ);
    let live = Live::new(Spool::new(env.spool()), &env.config());
    assert!(live.refresh().is_err(), "no spool");
    std::fs::create_dir_all(env.spool()).expect("spool");
    assert!(live.refresh().is_err(), "no pinned key");
    assert_eq!(live.quick(&call("fs/read")), None);
}

/// A packet judged again while its call waits (the hooks and the gateway re-judge held calls)
/// is found however long ago it arrived: the governor reads only the arrivals since the last
/// quiet gap of the rate limiter (3 s with the default limits), and a call held across such a gap
/// was "not in the spool" and denied (seen in `tests/gateway.rs` under load).
#[test]
fn a_packet_that_arrived_before_a_quiet_gap_is_still_judged() {
    let env = Env::new();
    ok(&env, &["propose", "--class", "draft.compose", "--agent", "a", "--summary", "s", "--id", "early"]);
    std::thread::sleep(std::time::Duration::from_millis(3_300));
    ok(&env, &["propose", "--class", "draft.compose", "--agent", "a", "--summary", "s", "--id", "late"]);
    let governor = warrant::govern::Governor::open(Spool::new(env.spool()), &env.config()).expect("governor");
    // Both judged alike (the same class and agent, the gate's verdict).
    let judged: Vec<String> = ["early", "late"]
        .iter()
        .map(|id| match governor.judge(id) {
            Ok((_, outcome)) => format!("{:?}", warrant::govern::warrant_object(&outcome)["status"]),
            Err(e) => panic!("{id} is judged: {e}"),
        })
        .collect();
    assert_eq!(judged[0], judged[1], "{judged:?}");
    // A packet that is not there is still no packet.
    assert!(governor.judge("never").is_err());
}
