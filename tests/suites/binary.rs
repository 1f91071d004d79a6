//! The real `warrant` binary, driven as its users and agents drive it: the command line, hooks,
//! the MCP gateway, the real agent hosts, grants, co-signing, keys, the eval server, durability
//! under kill -9, JetStream stores and hosts in their own network namespaces, and every command
//! example of the docs.
//!
//! One test binary per concern: each file of `tests/` is a module here (Cargo's `autotests` are
//! off), so a change relinks one binary, not one per file.

#[path = "../agent_snapshot.rs"]
mod agent_snapshot;
#[path = "../attacks.rs"]
mod attacks;
#[path = "../batch.rs"]
mod batch;
#[path = "../cli.rs"]
mod cli;
#[path = "../concurrency.rs"]
mod concurrency;
#[path = "../correction.rs"]
mod correction;
#[path = "../cosign.rs"]
mod cosign;
#[path = "../daily.rs"]
mod daily;
#[path = "../distributed.rs"]
mod distributed;
#[path = "../docs_examples.rs"]
mod docs_examples;
#[path = "../durability.rs"]
mod durability;
#[path = "../eval_e2e.rs"]
mod eval_e2e;
#[path = "../eval_extremes.rs"]
mod eval_extremes;
#[path = "../gateway.rs"]
mod gateway;
#[path = "../gateway_listen.rs"]
mod gateway_listen;
#[path = "../grants.rs"]
mod grants;
#[path = "../hooks.rs"]
mod hooks;
#[path = "../hostile.rs"]
mod hostile;
#[path = "../jetstream.rs"]
mod jetstream;
#[path = "../keys.rs"]
mod keys;
#[path = "../live_governor.rs"]
mod live_governor;
#[path = "../mcp_setup.rs"]
mod mcp_setup;
#[path = "../real_hosts.rs"]
mod real_hosts;

// The helpers the tests share, each compiled once for this binary (not every suite uses all of
// each).
#[allow(dead_code)]
#[path = "../support/chain_log.rs"]
mod chain_log;
#[allow(dead_code)]
#[path = "../support/cli_env.rs"]
mod cli_env;
#[allow(dead_code)]
#[path = "../support/nats.rs"]
mod nats;
#[allow(dead_code)]
#[path = "../support/netns.rs"]
mod netns;
#[allow(dead_code)]
#[path = "../support/real_parts.rs"]
mod real_parts;
#[allow(dead_code)]
#[path = "../support/screen.rs"]
mod screen;
#[allow(dead_code)]
#[path = "../support/signed_spool.rs"]
mod signed_spool;
#[allow(dead_code)]
#[path = "../support/spool_log.rs"]
mod spool_log;
#[allow(dead_code)]
#[path = "../support/tmux.rs"]
mod tmux;
#[allow(dead_code)]
#[path = "../support/writers.rs"]
mod writers;
