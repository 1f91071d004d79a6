//! warrant: a terminal console where a principal decides what AI agents may do.
//!
//! The layers are crates, dependencies pointing one way (`docs/architecture.md`, Layers):
//! - [`protocol`] (`warrant-protocol`): pure functions over values: canonical JSON and hashing,
//!   OpenTrustGraph records and their verification, the five models and the composed verdict,
//!   and the signed documents (decisions, controls, grants, key events, checkpoints);
//! - [`store`] (`warrant-store`): where a spool lives: the directory spool, its chain file under a
//!   lock, checkpoint and key files, configuration; JetStream behind the `jetstream` feature;
//! - the engine (`warrant-engine`): [`govern`] (one tool call governed against a spool: publish,
//!   judge, wait), [`monitor`] (rate-limit replay, agent summaries, the assessment of pending
//!   packets), [`assess`], [`audit`], [`preconditions`] (observing the world for two-phase
//!   execution), [`demo`] and [`scale`];
//! - the surfaces: `console` (`warrant-console`, the terminal console) and `gateway`
//!   (`warrant-gateway`, the MCP gateway), both behind the default `console` feature, and this
//!   crate's [`cli`], [`eval`], [`hook`] (Claude Code and Codex) and [`setup`].
//!
//! This crate re-exports the layers under the names above, so `warrant::protocol::chain` is
//! `warrant_protocol::chain`.

pub use warrant_engine::{assess, audit, clock, demo, govern, monitor, preconditions, scale};
pub use warrant_protocol as protocol;
pub use warrant_store as store;

#[cfg(feature = "console")]
pub use warrant_console as console;
#[cfg(feature = "console")]
pub use warrant_gateway as gateway;

pub mod cli;
pub mod eval;
pub mod hook;
pub mod mcp_setup;
pub mod setup;
