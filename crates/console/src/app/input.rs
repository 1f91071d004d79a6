//! Text lines: what a submitted line does for each [`InputPurpose`] (the filter, refusal reasons,
//! control reasons, typed confirmations, elevations, revocation reasons), and the `:` command
//! line's own keys (completion, history) and commands.

use super::approval::confirm_mode;
use super::controls::sign_control;
use super::keys::on_normal_command;
use super::update::apply;
use super::{Action, Button, Confirm, ControlConfirm, Effect, Flash, InputPurpose, Mode, State, sort_words};
use crate::keymap::Key;
use warrant_protocol::control::ControlKind;
use warrant_protocol::decision::Verdict;
use warrant_store::spool::ChainView;

/// The keys the command line handles itself: Tab completes, Up/Down walk the history. `None`
/// for any other key (edited as in every text line). Changes `text` in place and keeps the
/// command line open.
pub(super) fn command_key(state: &mut State, key: &Key, text: &mut String) -> Option<Vec<Effect>> {
    use ratatui::crossterm::event::KeyCode;
    if !key.mods.is_empty() {
        return None;
    }
    match key.code {
        KeyCode::Tab => {
            let (line, options) = crate::command::complete(text, &state.themes);
            *text = line;
            state.completions = if options.len() > 1 { options } else { Vec::new() };
        }
        KeyCode::Up => {
            if let Some(line) = state.history.older(text) {
                *text = line;
            }
        }
        KeyCode::Down => {
            if let Some(line) = state.history.newer() {
                *text = line;
            }
        }
        _ => {
            state.completions.clear();
            return None;
        }
    }
    state.mode = Mode::Input { purpose: InputPurpose::Command, text: std::mem::take(text) };
    Some(vec![])
}

/// Runs a `:` command: the same work as its key. An unknown command or a bad argument does
/// nothing and says why in the status line.
/// `:approve ID`, `:correct ID`: the pending packet `id` is selected first, so what opens is what
/// the key (`a`, `e`) opens on it; else the status line says why it is not there.
fn named_packet(state: &mut State, id: &str, cmd: &str) -> Vec<Effect> {
    if state.select_pending(id) {
        return on_normal_command(state, cmd);
    }
    let shown = warrant_protocol::text::inert(id, 80);
    let text = if state.decisions.contains_key(id) {
        format!("{shown} is already decided (2 lists the decisions)")
    } else if !state.filter.is_empty() && state.snapshot.packets.iter().any(|e| e.packet.id == id) {
        format!("{shown} is hidden by the filter (esc clears it)")
    } else {
        format!("no pending packet {shown}")
    };
    state.flash = Some(Flash { text, error: true });
    vec![]
}

fn run_command(state: &mut State, line: &str) -> Vec<Effect> {
    use crate::command::Command;
    state.completions.clear();
    state.history.push(line);
    let command = match crate::command::parse(line) {
        Ok(c) => c,
        Err(e) => {
            state.flash = Some(Flash { text: e, error: true });
            return vec![];
        }
    };
    let before = (state.pane, state.selection(state.pane));
    let fx = match command {
        Command::Approve(None) => on_normal_command(state, "approve"),
        Command::Approve(Some(id)) => named_packet(state, &id, "approve"),
        Command::Correct(None) => on_normal_command(state, "correct"),
        Command::Correct(Some(id)) => named_packet(state, &id, "correct"),
        Command::Refuse(reason) => {
            let fx = on_normal_command(state, "refuse");
            // With a reason, straight to the same dialog `r` and a typed reason open.
            match (reason, state.mode.clone()) {
                (Some(r), Mode::Input { purpose: p @ InputPurpose::RefuseReason(_), .. }) => submit(state, p, r),
                _ => fx,
            }
        }
        Command::Filter(text) => {
            state.filter = text;
            state.refresh();
            vec![]
        }
        Command::Sort(key) => {
            state.sort = key;
            state.refresh();
            state.flash = Some(Flash {
                text: format!("pending sorted by {}", sort_words(key, state.sort_reverse)),
                error: false,
            });
            vec![]
        }
        Command::Theme(name) => {
            // The event loop loads it and says so in the status line if it cannot.
            state.flash =
                Some(Flash { text: format!("theme {}", warrant_protocol::text::inert(&name, 40)), error: false });
            vec![Effect::Theme(name)]
        }
        Command::Grant(scope) => apply(state, Action::GrantDialog(scope)),
        Command::Quit => on_normal_command(state, "quit"),
        Command::Help => on_normal_command(state, "help"),
        Command::View(pane) => {
            let name = crate::command::VIEWS.iter().find(|(_, p)| *p == pane).map_or("pending", |(n, _)| *n);
            on_normal_command(state, name)
        }
    };
    if (state.pane, state.selection(state.pane)) != before {
        state.detail_scroll = 0;
    }
    fx
}

/// A submitted text line (the mode is already back to normal).
pub(super) fn submit(state: &mut State, purpose: InputPurpose, text: String) -> Vec<Effect> {
    match purpose {
        InputPurpose::Command => return run_command(state, &text),
        InputPurpose::Filter => {
            state.filter_history.push(&text);
            state.filter = text;
            state.refresh();
        }
        InputPurpose::RefuseReason(packet) => {
            if text.trim().is_empty() {
                state.mode = Mode::Input { purpose: InputPurpose::RefuseReason(packet), text };
                state.flash = Some(Flash { text: "a refusal needs a reason".into(), error: true });
            } else {
                state.mode = confirm_mode(state, Confirm::new(packet, Verdict::Refuse, Some(text.trim().to_owned())));
            }
        }
        InputPurpose::RefuseBatchReason(packets) => {
            if text.trim().is_empty() {
                state.mode = Mode::Input { purpose: InputPurpose::RefuseBatchReason(packets), text };
                state.flash = Some(Flash { text: "a refusal needs a reason".into(), error: true });
            } else if let Some(c) = Confirm::batch(packets, Verdict::Refuse, Some(text.trim().to_owned())) {
                state.mode = confirm_mode(state, c);
            }
        }
        InputPurpose::ControlReason(mut input) => {
            let reason = text.trim();
            if reason.is_empty() && matches!(input.kind, ControlKind::Quarantine | ControlKind::Kill) {
                let what = if input.kind == ControlKind::Kill { "a kill" } else { "a quarantine" };
                state.flash = Some(Flash { text: format!("{what} needs a reason"), error: true });
                state.mode = Mode::Input { purpose: InputPurpose::ControlReason(input), text };
            } else {
                input.reason = Some(reason.to_owned()).filter(|r| !r.is_empty());
                state.mode = Mode::ControlConfirm(ControlConfirm { input, focus: Button::Cancel });
            }
        }
        InputPurpose::RevokeReason(grant_id) => {
            let reason = text.trim().to_owned();
            if reason.is_empty() {
                state.flash = Some(Flash { text: "a revocation needs a reason".into(), error: true });
                state.mode = Mode::Input { purpose: InputPurpose::RevokeReason(grant_id), text };
                return vec![];
            }
            // Asked y/n, as every other signed control is.
            state.mode = Mode::RevokeConfirm(super::RevokeConfirm { grant_id, reason, focus: Button::Cancel });
        }
        InputPurpose::TypedConfirm(input) => {
            if text.trim() == input.subject {
                return sign_control(state, input);
            }
            state.flash = Some(Flash {
                text: format!("the typed name is not {}: nothing was signed", input.subject),
                error: true,
            });
        }
        InputPurpose::Elevation(agent) => {
            let mut parts = text.split_whitespace();
            let ring = parts.next().and_then(|r| r.parse::<u8>().ok()).filter(|r| (1..=2).contains(r));
            let ttl = parts.next().and_then(|t| t.parse::<i64>().ok()).filter(|t| *t > 0);
            let (Some(ring), Some(ttl), None) = (ring, ttl, parts.next()) else {
                state.flash = Some(Flash {
                    text: "type the ring (1 or 2) and the TTL in seconds, e.g. `2 300`".into(),
                    error: true,
                });
                state.mode = Mode::Input { purpose: InputPurpose::Elevation(agent), text };
                return vec![];
            };
            let mut input = state.control_input(ControlKind::Elevate, &agent);
            // The Agent Hypervisor's rules, checked now against what the console shows; the
            // runner checks again against the spool and chain when it signs.
            let view = ChainView {
                decisions: (*state.decisions).clone(),
                controls: state.controls.clone(),
                ..ChainView::default()
            };
            match warrant_store::spool::elevation_fields(
                &state.snapshot,
                &view,
                &state.policies,
                &warrant_engine::monitor::Scores,
                &agent,
                ring,
                ttl,
                &input.decided_at,
            ) {
                Ok(fields) => {
                    input.fields = fields;
                    state.mode = Mode::ControlConfirm(ControlConfirm { input, focus: Button::Cancel });
                }
                Err(e) => state.flash = Some(Flash { text: format!("elevation denied: {e}"), error: true }),
            }
        }
    }
    vec![]
}
