//! warrant's engine: what the surfaces (the CLI, the hooks, the console and the MCP gateway)
//! share above the store. It depends on `warrant-protocol` and `warrant-store`, and on nothing
//! above it.
//!
//! - [`govern`]: one tool call governed against a spool: publish, judge, wait;
//! - [`monitor`]: rate-limit replay, agent summaries, the assessment of pending packets;
//! - [`assess`]: assessing pending packets outside the console's loop;
//! - [`audit`]: the audit of what was allowed and why;
//! - [`preconditions`]: observing the world for two-phase execution;
//! - [`demo`]: simulated agents for `warrant demo`;
//! - [`scale`]: synthetic spools for the scale runs.

pub mod assess;
pub mod audit;
pub mod clock;
pub mod demo;
pub mod govern;
pub mod monitor;
pub mod preconditions;
pub mod scale;
