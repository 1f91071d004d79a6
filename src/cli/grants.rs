//! Grants: `warrant grants list|revoke`, and the preview `approve --scope` shows.

use super::common::{load_pinned, load_principal, write_json_inert};
use super::{Failure, GrantsAction};
use crate::protocol::graduation::PolicySet;
use crate::protocol::keys::Principal;
use crate::store::config::Config;
use crate::store::spool::{self, Spool};
use serde_json::{Value, json};
use std::io::Write as _;

/// What `approve --scope` shows before asking: the grant in words, and the calls in the spool it
/// would have covered (`grant::Grant::covers`, time aside).
pub(super) fn show_grant_preview(
    input: &crate::protocol::grant::GrantInput,
    snap: &spool::Snapshot,
    policies: &PolicySet,
    principal: &Principal,
) -> Result<(), Failure> {
    let g = grant_preview(input, principal)?;
    let past = crate::protocol::grant::past_calls(&g, snap.packets.iter().map(|e| &*e.packet), policies);
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "and a GRANT ({}) for {}",
        g.scope.as_str(),
        crate::protocol::text::inert(&g.describe(), usize::MAX)
    )?;
    writeln!(
        out,
        "it would have covered {} earlier call{} in this spool:",
        past.len(),
        if past.len() == 1 { "" } else { "s" }
    )?;
    for p in &past {
        writeln!(
            out,
            "  {}  {}",
            crate::protocol::text::inert(&p.id, 120),
            crate::protocol::text::inert(&p.summary, 200)
        )?;
    }
    out.flush()?;
    Ok(())
}

/// The grant `input` would be once signed by `principal` (for previews).
fn grant_preview(
    input: &crate::protocol::grant::GrantInput,
    principal: &Principal,
) -> Result<crate::protocol::grant::Grant, Failure> {
    crate::protocol::grant::Grant::from_document(&crate::protocol::grant::grant_document(
        input,
        &principal.name,
        &principal.fingerprint(),
    ))
    .map_err(Failure::invalid)
}

/// `warrant grants list|revoke`.
pub(super) fn grants_cmd(spool: &Spool, config: &Config, action: GrantsAction) -> Result<u8, Failure> {
    match action {
        GrantsAction::List { json, all } => {
            if !spool.root().is_dir() {
                return Err(Failure::usage(format!("{}: no such spool directory", spool.root().display())));
            }
            let view = spool::verify_chain(spool, &load_pinned()?)?;
            if let Some(first) = view.report.first() {
                return Err(Failure::invalid(format!(
                    "the chain does not verify ({first}); its grants are not listed (`warrant verify`)"
                )));
            }
            let uses = spool::read_uses(spool, &mut std::collections::HashMap::new()).by_grant;
            let now =
                crate::protocol::clock::unix_seconds(&crate::protocol::clock::now_rfc3339()).unwrap_or(f64::INFINITY);
            let mut rows: Vec<(
                std::sync::Arc<crate::protocol::grant::Grant>,
                &'static str,
                Option<&crate::protocol::grant::Revocation>,
            )> = Vec::new();
            for g in view.grants.issued() {
                let used = uses.get(&g.grant_id).copied().unwrap_or(0);
                let status = if g.expires_unix.is_some_and(|t| t <= now) {
                    "expired"
                } else if g.max_uses.is_some_and(|m| used >= m) {
                    "used up"
                } else {
                    "live"
                };
                if all || status == "live" {
                    rows.push((g.clone(), status, None));
                }
            }
            if all {
                for (g, r) in view.grants.revoked_all() {
                    rows.push((g.clone(), "revoked", Some(r)));
                }
                rows.sort_by_key(|(g, ..)| g.chain_index);
            }
            if json {
                let list: Vec<Value> = rows
                    .iter()
                    .map(|(g, status, revoked)| {
                        let mut v = grant_json(g, uses.get(&g.grant_id).copied().unwrap_or(0));
                        v["status"] = json!(status);
                        if let Some(r) = revoked {
                            v["revoked"] = json!({"by": r.principal, "at": r.decided_at, "reason": r.reason});
                        }
                        v
                    })
                    .collect();
                write_json_inert(&mut std::io::stdout().lock(), &Value::Array(list))?;
                println!();
                return Ok(0);
            }
            if rows.is_empty() {
                println!("no {}grants in {}", if all { "" } else { "live " }, spool.root().display());
                return Ok(0);
            }
            for (g, status, revoked) in &rows {
                let used = uses.get(&g.grant_id).copied().unwrap_or(0);
                let t = |s: &str| crate::protocol::text::inert(s, usize::MAX);
                let uses = match g.max_uses {
                    Some(m) => format!("{used}/{m} uses"),
                    None => format!("{used} use{}", if used == 1 { "" } else { "s" }),
                };
                println!("{}  {status}  {}  {uses}", g.grant_id, g.scope.as_str());
                println!("  covers {}", t(&g.describe()));
                println!(
                    "  signed by {} ({}) at {}, record {}",
                    t(&g.principal),
                    t(&g.key),
                    t(&g.decided_at),
                    g.chain_index
                );
                if let Some(r) = revoked {
                    println!("  revoked by {} at {}: {}", t(&r.principal), t(&r.decided_at), t(&r.reason));
                }
            }
            Ok(0)
        }
        GrantsAction::Revoke { id, reason } => {
            let (principal, pinned) = load_principal(config)?;
            let a =
                spool::revoke_grant(spool, &principal, &pinned, &id, &reason, &crate::protocol::clock::now_rfc3339())
                    .map_err(|e| match e {
                    spool::DecideError::Io(_) | spool::DecideError::Chain(_) => Failure::usage(e.to_string()),
                    _ => Failure::invalid(e.to_string()),
                })?;
            println!(
                "revoked {id}: record {} {} signed by {} ({})",
                a.chain_index,
                a.entry_hash,
                principal.name,
                principal.fingerprint()
            );
            Ok(0)
        }
    }
}

/// A grant as `warrant grants list --json` prints it.
fn grant_json(g: &crate::protocol::grant::Grant, uses: u64) -> Value {
    json!({
        "grant_id": g.grant_id, "scope": g.scope.as_str(), "covers": g.describe(), "agent": g.agent,
        "notebook": g.notebook, "action_class": g.action_class, "tool": g.tool,
        "session": match &g.scope { crate::protocol::grant::Scope::Session(s) => Some(s.clone()), _ => None },
        "pattern": match &g.scope { crate::protocol::grant::Scope::Pattern(p) => Some(p.to_string()), _ => None },
        "constraints": match &g.scope { crate::protocol::grant::Scope::Class(n) => Some(n.to_json()), _ => None },
        "workdir": g.workdir,
        "expires_at": g.expires_at, "max_uses": g.max_uses, "uses": uses,
        "covers_destructive": g.covers_destructive, "packet_id": g.packet_id, "principal": g.principal,
        "key": g.key, "decided_at": g.decided_at, "reason": g.reason, "record": g.chain_index,
    })
}
