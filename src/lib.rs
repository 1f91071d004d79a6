//! warrant: a terminal console where a principal decides what AI agents may do.
//!
//! The library holds the protocol, as pure functions over values where it can be:
//! - [`calls`]: tool calls of agent hosts and MCP servers as approval packets (the tool table);
//! - [`canonical`]: canonical JSON and SHA-256 digests (the OpenTrustGraph hash contract);
//! - [`chain`]: OpenTrustGraph records, verification, export and durable appends;
//! - [`checkpoint`]: the principal's signed checkpoints, against truncation;
//! - [`keys`]: the principal's Ed25519 key and the pinned public keys;
//! - [`decision`]: signed approve/refuse decisions and their chain records;
//! - [`control`]: the principal's signed controls (notebook trust, quarantine, kill, elevation);
//! - [`audit`]: the audit: every decision, control, grant and allowed call, with how it was allowed;
//! - [`packet`]: approval packets and receipts in both Trust Graduation forms;
//! - [`registry`]: the ten canonical action classes;
//! - [`graduation`]: Trust Graduation v0.1: the gate, evidence, posteriors, packets, receipts;
//! - [`ladder`]: the Lodestar trust ladder L0–L5, action contracts and the three-valued policy gate;
//! - [`tiers`]: workbench tool tiers × notebook trust → auto / gated / confirm;
//! - [`rings`]: the Agent Hypervisor's execution rings (enforcer, elevation, rate limits, kill
//!   switch, quarantine, isolation, sagas), with time as an input;
//! - [`verdict`]: one verdict per packet, every applicable model composed (strictest wins);
//! - [`monitor`]: rate-limit replay, agent summaries and the assessment of pending packets;
//! - [`preconditions`]: observing the world for two-phase execution;
//! - [`govern`]: one tool call governed against a spool: publish, judge, wait (hooks, gateway);
//! - [`spool`]: the shared directory, scanning and deciding;
//! - [`scale`]: synthetic spools for the scale runs;
//! - [`eval`]: the JSON-lines evaluator behind `warrant eval`;
//! - [`text`]: untrusted text made inert for the terminal;
//! - [`clock`] and [`config`]: timestamps and configuration.
//!
//! The terminal console lives in `console`, and the MCP gateway (`warrant mcp-gateway`, with
//! tokio and `rmcp`) in `gateway`, both behind the default `console` feature; the protocol
//! modules above import neither.

pub mod audit;
pub mod calls;
pub mod canonical;
pub mod chain;
pub mod chain_evidence;
pub mod checkpoint;
pub mod cli;
pub mod clock;
pub mod config;
pub mod control;
pub mod decision;
pub mod demo;
pub mod eval;
pub mod govern;
pub mod graduation;
pub mod grant;
pub mod hook;
pub mod key_event;
pub mod keys;
pub mod ladder;
pub mod monitor;
pub mod packet;
pub mod preconditions;
pub mod registry;
pub mod request;
pub mod rings;
pub mod scale;
pub mod setup;
pub mod spool;
pub mod text;
pub mod tiers;
pub mod verdict;

#[cfg(feature = "console")]
pub mod console;
#[cfg(feature = "console")]
pub mod gateway;
#[cfg(feature = "jetstream")]
pub mod jetstream;
