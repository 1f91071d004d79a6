//! warrant: a terminal console where a principal decides what AI agents may do.
//!
//! Three layers, dependencies pointing one way (`docs/architecture.md`, Layers; `tests/layers.rs`
//! fails when the protocol names anything above it):
//! - [`protocol`]: pure functions over values: canonical JSON and hashing, OpenTrustGraph records
//!   and their verification, the five models and the composed verdict, and the signed documents
//!   (decisions, controls, grants, key events, checkpoints);
//! - [`store`]: where a spool lives: the directory spool, its chain file under a lock, checkpoint
//!   and key files, configuration;
//! - the surfaces: [`cli`], `console` (the terminal console), [`eval`], [`hook`] (Claude Code and
//!   Codex) and `gateway` (the MCP gateway), with what they share: [`govern`] (one tool call
//!   governed against a spool: publish, judge, wait), [`monitor`] (rate-limit replay, agent
//!   summaries, the assessment of pending packets), [`assess`] (assessing pending packets outside
//!   the console's loop), [`audit`], [`preconditions`] (observing the
//!   world for two-phase execution), [`demo`], [`setup`] and [`scale`].
//!
//! The terminal console and the MCP gateway (tokio, ratatui, notify, `rmcp`) sit behind the
//! default `console` feature.

pub mod protocol;
pub mod store;

pub mod assess;
pub mod audit;
pub mod cli;
pub mod demo;
pub mod eval;
pub mod govern;
pub mod hook;
pub mod monitor;
pub mod preconditions;
pub mod scale;
pub mod setup;

#[cfg(feature = "console")]
pub mod console;
#[cfg(feature = "console")]
pub mod gateway;
