//! The library's own tests: conformance vectors and schemas of the five models, properties, the
//! store's directory spool and its boundary, the layers guard, fuzz regressions. None runs the
//! binary.
//!
//! One test binary per concern: each file of `tests/` is a module here (Cargo's `autotests` are
//! off), so a change relinks one binary, not one per file.

#[path = "../assess_incremental.rs"]
mod assess_incremental;
#[path = "../fuzz_regressions.rs"]
mod fuzz_regressions;
#[path = "../ladder_tiers.rs"]
mod ladder_tiers;
#[path = "../layers.rs"]
mod layers;
#[path = "../otg_fixtures.rs"]
mod otg_fixtures;
#[path = "../prefix_fold.rs"]
mod prefix_fold;
#[path = "../properties.rs"]
mod properties;
#[path = "../rings_conformance.rs"]
mod rings_conformance;
#[path = "../schemas.rs"]
mod schemas;
#[path = "../signing.rs"]
mod signing;
#[path = "../spool.rs"]
mod spool;
#[path = "../store_boundary.rs"]
mod store_boundary;
#[path = "../system_decision.rs"]
mod system_decision;
#[path = "../tg_properties.rs"]
mod tg_properties;
#[path = "../tg_schemas.rs"]
mod tg_schemas;
#[path = "../tg_vectors.rs"]
mod tg_vectors;
#[path = "../verdict.rs"]
mod verdict;

// The helpers the tests share, each compiled once for this binary (not every suite uses all of
// each).
#[allow(dead_code)]
#[path = "../support/chain_log.rs"]
mod chain_log;
#[allow(dead_code)]
#[path = "../support/lines.rs"]
mod lines;
#[allow(dead_code)]
#[path = "../support/signed_spool.rs"]
mod signed_spool;
#[allow(dead_code)]
#[path = "../support/spool_log.rs"]
mod spool_log;
