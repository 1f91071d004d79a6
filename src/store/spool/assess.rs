//! What the surfaces above the store read of a spool: assessments of pending packets and the audit.

use super::{ChainView, Snapshot, Spool};
use crate::protocol::chain::{self, VerifyOptions};
use crate::protocol::keys::PinnedKeys;
use crate::store::chain_file::{self, ChainError};
use std::path::Path;

// Named in documentation only.
#[cfg(doc)]
use super::verify_chain;

/// Assesses every pending packet of `snap` now, as the console would: the precondition re-checks
/// observed with `policies`' roots (never inside `config_dir`), then [`assess_view`]. The one
/// place the CLI and the governor assemble an assessment outside the event loop.
#[must_use]
pub fn assess_now(
    policies: &crate::protocol::graduation::policy::PolicySet,
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
    policies: &crate::protocol::graduation::policy::PolicySet,
    snap: &Snapshot,
    view: &ChainView,
    revalidations: &crate::monitor::Revalidations,
    workspace: &str,
) -> crate::monitor::Assessment {
    let ctx = crate::protocol::verdict::VerdictContext {
        policies,
        controls: &view.controls,
        now: crate::protocol::clock::unix_seconds(&crate::protocol::clock::now_rfc3339()).unwrap_or(0.0),
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

/// The audit entries ([`crate::audit::entry_of_record`]) of every record of `spool`'s chain that
/// passed every check, in chain order, with the verification report (checked as
/// [`verify_chain`] checks, the principal's checkpoint included). A record that failed a check
/// has no entry; the caller says so from the report.
///
/// # Errors
/// As [`verify_chain`].
pub fn audit_chain(
    spool: &Spool,
    pinned: &PinnedKeys,
) -> Result<(chain::VerifyReport, Vec<crate::audit::AuditEntry>), ChainError> {
    let progress = std::sync::atomic::AtomicU64::new(0);
    let opts = VerifyOptions { pinned: Some(pinned), strict_signatures: true };
    let mut entries = Vec::new();
    let keep = ["tg_receipt", "warrant_grant", "approval", "reason"];
    let tail = chain_file::verify_tail_with(
        &spool.chain_path(),
        &chain::Verified::default(),
        opts,
        &keep,
        &progress,
        |i, rec| {
            entries.push(crate::audit::entry_of_record(i, rec));
        },
    )?;
    let mut report = tail.map(|t| t.report).unwrap_or_default();
    let (checkpoint, _) = crate::store::checkpoint_files::latest(spool, pinned);
    if let Some(f) = checkpoint.and_then(|cp| crate::store::checkpoint_files::check(&spool.chain_path(), &cp, &report))
    {
        report.findings.push(f);
    }
    let bad: std::collections::HashSet<u64> =
        report.findings.iter().filter_map(|f| f.index).map(|i| i as u64 + 1).collect();
    entries.retain(|e| e.record.is_some_and(|r| !bad.contains(&r)));
    Ok((report, entries))
}
