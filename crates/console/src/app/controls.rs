//! The principal's other signed records: notebook trust (`+`/`-` in the Matrices view), agent
//! controls (quarantine, release, kill, elevate in the Agents view) and revoking a grant (`x` in
//! the Grants view), each confirmed before it is signed.

use super::{Button, ControlConfirm, Effect, Flash, InputPurpose, Mode, Pane, State};
use warrant_protocol::control::{ControlInput, ControlKind};
use warrant_protocol::graduation::gate::AgentStanding;
use warrant_protocol::tiers::NotebookTrust;

impl State {
    /// A control on `subject` dated now (the runner re-stamps it when it signs).
    pub(super) fn control_input(&self, kind: ControlKind, subject: &str) -> ControlInput {
        let decided_at = time::OffsetDateTime::from_unix_timestamp(self.now as i64)
            .map_or_else(|_| String::new(), warrant_protocol::clock::format_rfc3339);
        ControlInput { kind, subject: subject.to_owned(), fields: serde_json::Map::new(), reason: None, decided_at }
    }
}

/// `+`/`-` on a notebook in the matrices view: one level up or down, confirmed by a dialog, or by
/// typing the notebook's name to raise it to `autonomous`.
pub(super) fn start_trust_change(state: &mut State, raise: bool) -> Vec<Effect> {
    if state.pane != Pane::Matrices {
        state.flash = Some(Flash { text: "select a notebook in the matrices view (press 5)".into(), error: true });
        return vec![];
    }
    let Some(id) = state.selected_notebook().map(|n| n.id.clone()) else {
        state.flash = Some(Flash {
            text: "no notebook: packets name one in governance.notebook, or the chain sets a level".into(),
            error: true,
        });
        return vec![];
    };
    if let Err(why) = state.can_sign() {
        state.flash = Some(Flash { text: why, error: true });
        return vec![];
    }
    let from = state.controls.notebook_trust(&id);
    let i = NotebookTrust::ALL.iter().position(|l| *l == from).unwrap_or(0);
    let to =
        if raise { NotebookTrust::ALL.get(i + 1) } else { i.checked_sub(1).and_then(|j| NotebookTrust::ALL.get(j)) };
    let Some(&to) = to else {
        let word = if raise { "raise" } else { "lower" };
        state.flash = Some(Flash { text: format!("{id} is already {from}: nothing to {word}"), error: true });
        return vec![];
    };
    let mut input = state.control_input(ControlKind::TrustSet, &id);
    input.fields.insert("level".into(), serde_json::json!(to.as_str()));
    input.fields.insert("previous".into(), serde_json::json!(from.as_str()));
    state.mode = if NotebookTrust::requires_typed_confirmation(from, to) {
        Mode::Input { purpose: InputPurpose::TypedConfirm(input), text: String::new() }
    } else {
        Mode::ControlConfirm(ControlConfirm { input, focus: Button::Cancel })
    };
    vec![]
}

/// `Q`/`R`/`K`/`E` on an agent in the agents view: a reason (or the elevation's ring and TTL)
/// first, then the dialog.
pub(super) fn start_agent_control(state: &mut State, kind: ControlKind) -> Vec<Effect> {
    if state.pane != Pane::Agents {
        state.flash = Some(Flash { text: "select an agent in the agents view (press 6)".into(), error: true });
        return vec![];
    }
    let Some(agent) = state.selected_agent().map(|a| a.agent.clone()) else {
        state.flash = Some(Flash { text: "no agent selected".into(), error: true });
        return vec![];
    };
    if let Err(why) = state.can_sign() {
        state.flash = Some(Flash { text: why, error: true });
        return vec![];
    }
    let input = state.control_input(kind, &agent);
    if !state.controls.admits(&input, state.now) {
        let standing = state.controls.standing(&agent);
        let text = match kind {
            ControlKind::Elevate if standing == AgentStanding::Active => {
                format!("{agent} already has an elevation in force")
            }
            ControlKind::Elevate => format!("{agent} is {}: release it before elevating it", standing.as_str()),
            _ => format!("{agent} is already {}: nothing to change", standing.as_str()),
        };
        state.flash = Some(Flash { text, error: true });
        return vec![];
    }
    state.mode = if kind == ControlKind::Elevate {
        // The prompt starts on the next ring up from the one the agent has (never on a ring it
        // already has, which would elevate nothing); ring 1 is as high as an elevation goes.
        let ring = state.assessment().monitor.agents.get(&agent).map_or(3, |a| a.ring.value());
        let Some(next) = ring.checked_sub(1).filter(|r| *r >= 1) else {
            state.flash = Some(Flash {
                text: format!("{agent} is in ring {ring}: no elevation goes higher than ring 1"),
                error: true,
            });
            return vec![];
        };
        Mode::Input { purpose: InputPurpose::Elevation(agent), text: format!("{next} 300") }
    } else {
        Mode::Input { purpose: InputPurpose::ControlReason(input), text: String::new() }
    };
    vec![]
}

pub(super) fn sign_control(state: &mut State, input: ControlInput) -> Vec<Effect> {
    state.mode = Mode::Normal;
    if let Err(why) = state.can_sign() {
        state.flash = Some(Flash { text: why, error: true });
        return vec![];
    }
    state.signing = true;
    state.flash = Some(Flash { text: format!("signing {} {}…", input.kind.as_str(), input.subject), error: false });
    vec![Effect::Control(input)]
}

/// `x` in the Grants view: asks why, then signs the revocation of the selected live grant.
pub(super) fn start_revoke(state: &mut State) -> Vec<Effect> {
    if state.pane != Pane::Grants {
        state.flash = Some(Flash { text: "revoking is for grants: press 7 for the Grants view".into(), error: true });
        return vec![];
    }
    let Some(row) = state.grant_rows.get(state.selection(Pane::Grants)) else { return vec![] };
    if row.status != crate::grants::GrantStatus::Live {
        state.flash = Some(Flash {
            text: format!("{} is {}: it covers nothing already", row.grant.grant_id, row.status.as_str()),
            error: true,
        });
        return vec![];
    }
    if let Err(e) = state.can_sign() {
        state.flash = Some(Flash { text: e, error: true });
        return vec![];
    }
    state.mode = Mode::Input { purpose: InputPurpose::RevokeReason(row.grant.grant_id.clone()), text: String::new() };
    vec![]
}

/// The revocation dialog answered: signed on `true` (y, or enter on Sign), else cancelled.
pub(super) fn sign_revocation(state: &mut State, grant_id: String, reason: String) -> Vec<Effect> {
    state.mode = Mode::Normal;
    if let Err(e) = state.can_sign() {
        state.flash = Some(Flash { text: e, error: true });
        return vec![];
    }
    state.signing = true;
    state.flash = Some(Flash { text: format!("signing the revocation of {grant_id}…"), error: false });
    vec![Effect::RevokeGrant { grant_id, reason }]
}
