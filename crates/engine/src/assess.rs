//! Assessing pending packets outside the console's event loop (the CLI and the governor): the
//! composed verdicts ([`crate::monitor::assess`]) of a spool snapshot with the chain's view, and
//! the precondition re-checks observed now. A surface: it reads the world (preconditions) and
//! the store's views, which the store itself never assesses.

use std::path::Path;
use warrant_store::spool::{ChainView, Snapshot};

/// Assesses every pending packet of `snap` now, as the console would: the precondition re-checks
/// observed with `policies`' roots (never inside `config_dir`), then [`assess_view`]. The one
/// place the CLI and the governor assemble an assessment outside the event loop.
#[must_use]
pub fn assess_now(
    policies: &warrant_protocol::graduation::policy::PolicySet,
    config_dir: &Path,
    snap: &Snapshot,
    view: &ChainView,
    workspace: &str,
) -> crate::monitor::Assessment {
    let observer = crate::preconditions::Observer::for_policies(policies, Some(config_dir));
    let revalidations = crate::preconditions::observe_pending(&observer, &snap.packets, &view.decisions);
    assess_view(policies, snap, view, &revalidations, workspace)
}

/// Assesses every pending packet of `snap` now with the chain's decisions, controls and evidence
/// from `view`, the precondition re-checks already observed (`revalidations`) and `workspace` as
/// the gate's workspace. No I/O: safe under the chain's lock.
#[must_use]
pub fn assess_view(
    policies: &warrant_protocol::graduation::policy::PolicySet,
    snap: &Snapshot,
    view: &ChainView,
    revalidations: &crate::monitor::Revalidations,
    workspace: &str,
) -> crate::monitor::Assessment {
    let ctx = warrant_protocol::verdict::VerdictContext {
        policies,
        controls: &view.controls,
        now: warrant_protocol::clock::unix_seconds(&warrant_protocol::clock::now_rfc3339()).unwrap_or(0.0),
    };
    crate::monitor::assess(
        &ctx,
        &snap.packets,
        &snap.receipts,
        &view.decisions,
        &view.evidence,
        revalidations,
        view.report.is_valid(),
        workspace,
    )
}
