//! The store: where a spool lives. Today the directory spool (`docs/spool.md`): packets and
//! receipts as files, the chain file appended under a lock, decision files, the principal's
//! checkpoints and key files, and the configuration. It depends on [`crate::protocol`] and on
//! nothing above it.
//!
//! - [`spool`]: the shared directory, scanning and deciding;
//! - [`chain_file`]: `chain.jsonl`: reads, verification of the file or its tail, durable appends;
//! - [`checkpoint_files`]: the spool's and the principal's checkpoint copies;
//! - [`key_files`]: `principal.key` (protected at rest) and `pinned_keys.toml`;
//! - [`config`]: `config.toml` and the policy files.

pub mod chain_file;
pub mod checkpoint_files;
pub mod config;
pub mod key_files;
pub mod spool;
