//! The protocol: pure functions over values. Nothing here reads or writes a spool, a file or the
//! network, and nothing names the store or a surface (`tests/layers.rs`).
//!
//! - [`canonical`]: canonical JSON and SHA-256 digests (the OpenTrustGraph hash contract);
//! - [`chain`]: OpenTrustGraph records, their verification over any reader, the export envelope,
//!   and linking a record after a head;
//! - [`checkpoint`]: the principal's signed checkpoints, against truncation;
//! - [`keys`]: Ed25519 keys, fingerprints and the pinned public keys verification trusts;
//! - [`decision`]: signed approve/refuse decisions (and co-signatures) and their chain records;
//! - [`control`]: the principal's signed controls (notebook trust, quarantine, kill, elevation);
//! - [`correction`]: approve as corrected: the principal's edit of a proposed action, and its size;
//! - [`grant`]: scoped grants, their signed documents and the live set;
//! - [`key_event`]: key rotations and renames recorded in the chain;
//! - [`chain_evidence`]: evidence rows read from chain records;
//! - [`packet`]: approval packets and receipts in both Trust Graduation forms;
//! - [`calls`]: tool calls of agent hosts and MCP servers as approval packets (the tool table);
//! - [`registry`]: the ten canonical action classes;
//! - [`graduation`]: Trust Graduation v0.1: the gate, evidence, posteriors, packets, receipts;
//! - [`glob`]: the one glob dialect users write (globset);
//! - [`ladder`]: the Lodestar trust ladder L0–L5, action contracts and the three-valued policy gate;
//! - [`tiers`]: workbench tool tiers × notebook trust → auto / gated / confirm;
//! - [`rings`]: the Agent Hypervisor's execution rings, with time as an input;
//! - [`verdict`]: one verdict per packet, every applicable model composed (strictest wins);
//! - [`request`]: the models' request errors;
//! - [`text`]: untrusted text made inert for the terminal;
//! - [`clock`]: canonical timestamps.

pub mod calls;
pub mod canonical;
pub mod chain;
pub mod chain_evidence;
pub mod checkpoint;
pub mod clock;
pub mod control;
pub mod correction;
pub mod decision;
pub mod glob;
pub mod graduation;
pub mod grant;
pub mod interactive;
pub mod key_event;
pub mod keys;
pub mod ladder;
pub mod packet;
pub mod protected;
pub mod registry;
pub mod request;
pub mod rings;
pub mod text;
pub mod tiers;
pub mod verdict;
