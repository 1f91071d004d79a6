//! warrant: a terminal console where a principal decides what AI agents may do.
//!
//! The library holds the protocol, as pure functions over values where it can be:
//! - [`canonical`]: canonical JSON and SHA-256 digests (the OpenTrustGraph hash contract);
//! - [`chain`]: OpenTrustGraph records, verification, export and durable appends;
//! - [`keys`]: the principal's Ed25519 key and the pinned public keys;
//! - [`decision`]: signed approve/refuse decisions and their chain records;
//! - [`packet`]: approval packets and receipts in both Trust Graduation forms;
//! - [`registry`]: the ten canonical action classes;
//! - [`graduation`]: Trust Graduation v0.1: the gate, evidence, posteriors, packets, receipts;
//! - [`rings`]: the Agent Hypervisor execution-ring model: rings, elevation, rate limits, kill switch, sagas;
//! - [`spool`]: the shared directory, scanning and deciding;
//! - [`eval`]: the JSON-lines evaluator behind `warrant eval`;
//! - [`text`]: untrusted text made inert for the terminal;
//! - [`clock`] and [`config`]: timestamps and configuration.
//!
//! The terminal console lives in `console` behind the default `console` feature.

pub mod canonical;
pub mod chain;
pub mod cli;
pub mod clock;
pub mod config;
pub mod decision;
pub mod demo;
pub mod eval;
pub mod graduation;
pub mod keys;
pub mod packet;
pub mod registry;
pub mod rings;
pub mod spool;
pub mod text;

#[cfg(feature = "console")]
pub mod console;
