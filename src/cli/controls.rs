//! The principal's signed controls: `warrant trust` (notebook trust levels) and `warrant agent`
//! (quarantine, release, kill, elevate).

use super::common::{load_pinned, load_policies, load_principal, print_json};
use super::{AgentAction, Failure, TrustAction};
use crate::protocol::control::{ControlInput, ControlKind};
use crate::protocol::packet;
use crate::protocol::tiers::NotebookTrust;
use crate::store::config::Config;
use crate::store::spool::{self, Spool};
use serde_json::{Value, json};
use std::io;

/// Appends a signed control (checked against the chain under its lock) and prints what was
/// recorded.
fn control_cli(spool: &Spool, config: &Config, input: ControlInput) -> Result<u8, Failure> {
    let (principal, pinned) = load_principal(config)?;
    let policies = load_policies(Some(spool))?;
    let (input, appended) =
        spool::append_control(spool, &principal, &pinned, &policies, &crate::monitor::Scores, input).map_err(|e| {
            match e {
                spool::DecideError::Io(_) | spool::DecideError::Chain(_) => Failure::usage(e.to_string()),
                _ => Failure::invalid(e.to_string()),
            }
        })?;
    println!(
        "{} {}: record {} {} signed by {} ({})",
        input.kind.as_str(),
        input.subject,
        appended.chain_index,
        appended.entry_hash,
        principal.name,
        principal.fingerprint()
    );
    if input.kind == ControlKind::Kill {
        // What the kill switch reports as compensated is refused, signed, in the same command.
        let refused = spool::refuse_pending_of(spool, &principal, &pinned, &input)
            .map_err(|e| Failure::invalid(e.to_string()))?;
        println!("refused {} pending packet(s) of {}: {}", refused.len(), input.subject, refused.join(", "));
    }
    Ok(0)
}

fn control_input(kind: ControlKind, subject: &str, reason: Option<String>) -> Result<ControlInput, Failure> {
    if !packet::is_safe_id(subject) {
        return Err(Failure::usage(format!("{subject:?} is not a safe id (letters, digits, . _ - :)")));
    }
    Ok(ControlInput {
        kind,
        subject: subject.to_owned(),
        fields: serde_json::Map::new(),
        reason: reason.map(|r| r.trim().to_owned()).filter(|r| !r.is_empty()),
        decided_at: crate::protocol::clock::now_rfc3339(),
    })
}

pub(super) fn trust_cmd(spool: &Spool, config: &Config, action: TrustAction) -> Result<u8, Failure> {
    let view = spool::verify_chain(spool, &load_pinned()?)?;
    if let Some(first) = view.report.first() {
        eprintln!(
            "warrant: the chain does not verify ({}); levels from failing records are not used",
            crate::protocol::text::inert(&first.to_string(), 400)
        );
    }
    match action {
        TrustAction::Show { json: as_json } => {
            let policies = load_policies(Some(spool))?;
            let notebooks: serde_json::Map<String, Value> = view
                .controls
                .notebooks
                .iter()
                .map(|(id, n)| {
                    (id.clone(), json!({"level": n.level.as_str(), "set_by": n.principal, "set_at": n.set_at}))
                })
                .collect();
            let tools: serde_json::Map<String, Value> =
                policies.tools().map(|(id, t)| (id.to_owned(), json!(t.tier.as_str()))).collect();
            if as_json {
                print_json(
                    &json!({"default_level": NotebookTrust::default().as_str(), "notebooks": notebooks, "tools": tools}),
                )?;
            } else {
                println!("notebooks (any other notebook is {}):", NotebookTrust::default().as_str());
                for (id, n) in &view.controls.notebooks {
                    println!(
                        "  {:<24} {:<10} set by {} at {}",
                        crate::protocol::text::inert(id, 64),
                        n.level.as_str(),
                        crate::protocol::text::inert(&n.principal, 64),
                        crate::protocol::text::inert(&n.set_at, 40)
                    );
                }
                println!("tools (tier from policy.toml; any other tool is unknown and gates to confirm):");
                for (id, t) in policies.tools() {
                    println!("  {:<24} {}", crate::protocol::text::inert(id, 64), t.tier.as_str());
                }
            }
            Ok(0)
        }
        TrustAction::Set { notebook, level, reason, confirm } => {
            let to = NotebookTrust::parse(&level).ok_or_else(|| {
                Failure::usage(format!("{level:?} is not a trust level: cautious, trusted or autonomous"))
            })?;
            let from = view.controls.notebook_trust(&notebook);
            if from == to {
                println!("{notebook} is already {}; nothing recorded", to.as_str());
                return Ok(0);
            }
            if NotebookTrust::requires_typed_confirmation(from, to) {
                let typed = match confirm {
                    Some(c) => c,
                    None if io::IsTerminal::is_terminal(&io::stdin()) => {
                        eprint!(
                            "Raising {notebook} to autonomous lets destructive tools run without confirmation.\nType the notebook name to confirm: "
                        );
                        let mut line = String::new();
                        io::stdin().read_line(&mut line)?;
                        line.trim().to_owned()
                    }
                    None => String::new(),
                };
                if typed != notebook {
                    return Err(Failure::invalid(format!(
                        "raising {notebook} to autonomous needs the typed confirmation `--confirm {notebook}`; nothing recorded"
                    )));
                }
            }
            let mut input = control_input(ControlKind::TrustSet, &notebook, reason)?;
            input.fields.insert("level".into(), json!(to.as_str()));
            input.fields.insert("previous".into(), json!(from.as_str()));
            control_cli(spool, config, input)
        }
    }
}

pub(super) fn agent_cmd(spool: &Spool, config: &Config, action: AgentAction) -> Result<u8, Failure> {
    match action {
        AgentAction::Quarantine { agent, reason } => {
            control_cli(spool, config, control_input(ControlKind::Quarantine, &agent, Some(reason))?)
        }
        AgentAction::Release { agent, reason } => {
            control_cli(spool, config, control_input(ControlKind::Release, &agent, reason)?)
        }
        AgentAction::Kill { agent, reason } => {
            control_cli(spool, config, control_input(ControlKind::Kill, &agent, Some(reason))?)
        }
        AgentAction::Elevate { agent, ring, ttl, reason } => {
            let mut input = control_input(ControlKind::Elevate, &agent, reason)?;
            input.fields.insert("ring".into(), json!(ring));
            input.fields.insert("ttl_seconds".into(), json!(ttl));
            control_cli(spool, config, input)
        }
    }
}
