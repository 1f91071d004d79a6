//! Keys and the mouse: a key dispatched by the mode (help, log, alert, the dialogs' keys, text
//! lines), the normal mode's commands (movement, views, filter, sort, marks, the decisions and
//! controls they start), and mouse clicks and the wheel.

use super::approval::{cycle_scope, scroll_confirm, sign, start_decision};
use super::controls::{sign_control, start_agent_control, start_revoke, start_trust_change};
use super::input::{command_key, submit};
use super::{
    Button, ChainState, Effect, Flash, InputPurpose, Mode, MouseInput, MouseKind, Pane, State, chain_line, sort_words,
};
use crate::keymap::Key;
use warrant_protocol::control::ControlKind;

/// Page size used by page up/down.
const PAGE: isize = 10;

pub(super) fn on_key(state: &mut State, key: Key) -> Vec<Effect> {
    // A key acknowledges an informational flash; errors stay until the next key too.
    state.flash = None;
    match state.mode.clone() {
        Mode::Normal => on_normal(state, key),
        Mode::Help => {
            let (w, h) = state.viewport.unwrap_or((crate::ui::MIN_WIDTH, crate::ui::MIN_HEIGHT));
            let most = crate::ui::help_scroll_limit(&state.keymap, w, h);
            match state.keymap.command("help", &key) {
                Some("down") => state.help_scroll = (state.help_scroll + 1).min(most),
                Some("up") => state.help_scroll = state.help_scroll.saturating_sub(1),
                Some(_) => {
                    state.mode = Mode::Normal;
                    state.help_scroll = 0;
                }
                None => {}
            }
            vec![]
        }
        Mode::Log => {
            state.mode = Mode::Normal;
            vec![]
        }
        Mode::ChainAlert => {
            // Any key acknowledges, after which the alert does not return for this finding.
            state.chain_alert_seen = true;
            state.mode = Mode::Normal;
            vec![]
        }
        Mode::Confirm(mut c) => {
            if state.keymap.command("confirm", &key) == Some("scope") {
                cycle_scope(state, &mut c);
                state.mode = Mode::Confirm(c);
                return vec![];
            }
            if let Some(cmd @ ("down" | "up" | "page_down" | "page_up" | "top" | "zoom")) =
                state.keymap.command("confirm", &key)
            {
                scroll_confirm(state, &mut c, cmd);
                state.mode = Mode::Confirm(c);
                return vec![];
            }
            match dialog_key(state, &key, &mut c.focus) {
                Some(true) if !c.unlocked() => {
                    c.focus = Button::Cancel;
                    state.mode = Mode::Confirm(c);
                    state.flash = Some(Flash {
                        text: "nothing was signed: read the whole dialog first (j/pgdn to its end, or z to zoom)"
                            .into(),
                        error: true,
                    });
                    vec![]
                }
                Some(true) => sign(state, c),
                Some(false) => cancelled(state),
                None => {
                    // Sign cannot take the focus until the dialog has been read.
                    if !c.unlocked() {
                        c.focus = Button::Cancel;
                    }
                    state.mode = Mode::Confirm(c);
                    vec![]
                }
            }
        }
        Mode::RevokeConfirm(mut c) => match dialog_key(state, &key, &mut c.focus) {
            Some(true) => super::controls::sign_revocation(state, c.grant_id, c.reason),
            Some(false) => cancelled(state),
            None => {
                state.mode = Mode::RevokeConfirm(c);
                vec![]
            }
        },
        Mode::ControlConfirm(mut c) => match dialog_key(state, &key, &mut c.focus) {
            Some(true) => sign_control(state, c.input),
            Some(false) => cancelled(state),
            None => {
                state.mode = Mode::ControlConfirm(c);
                vec![]
            }
        },
        Mode::Input { purpose, mut text } => {
            if purpose == InputPurpose::Command
                && let Some(fx) = command_key(state, &key, &mut text)
            {
                return fx;
            }
            // The filter line has its own history, walked with Up/Down as the `:` line's.
            if purpose == InputPurpose::Filter
                && key.mods.is_empty()
                && let Some(line) = match key.code {
                    ratatui::crossterm::event::KeyCode::Up => Some(state.filter_history.older(&text)),
                    ratatui::crossterm::event::KeyCode::Down => Some(state.filter_history.newer()),
                    _ => None,
                }
            {
                if let Some(line) = line {
                    text = line;
                    state.filter.clone_from(&text);
                    state.refresh();
                }
                state.mode = Mode::Input { purpose, text };
                return vec![];
            }
            match state.keymap.command("input", &key) {
                Some("submit") => {
                    state.mode = Mode::Normal;
                    return submit(state, purpose, text);
                }
                Some("cancel") => {
                    state.mode = Mode::Normal;
                    match purpose {
                        InputPurpose::Filter => {
                            state.filter.clear();
                            state.refresh();
                        }
                        InputPurpose::RefuseReason(_) | InputPurpose::RefuseBatchReason(_) | InputPurpose::Command => {}
                        InputPurpose::ControlReason(_)
                        | InputPurpose::TypedConfirm(_)
                        | InputPurpose::Elevation(_)
                        | InputPurpose::RevokeReason(_) => {
                            return cancelled(state);
                        }
                    }
                    return vec![];
                }
                Some("erase") => {
                    text.pop();
                }
                Some("clear") => text.clear(),
                _ => {
                    if let ratatui::crossterm::event::KeyCode::Char(c) = key.code
                        && key.mods.is_empty()
                        && !c.is_control()
                        && text.chars().count() < 500
                    {
                        text.push(c);
                    }
                }
            }
            if purpose == InputPurpose::Filter {
                // Live filtering as the principal types.
                state.filter.clone_from(&text);
                state.refresh();
            }
            state.mode = Mode::Input { purpose, text };
            vec![]
        }
    }
}

fn on_normal(state: &mut State, key: Key) -> Vec<Effect> {
    let Some(cmd) = state.keymap.command("normal", &key).map(str::to_owned) else { return vec![] };
    // In the zoomed packet view the movement keys scroll the packet instead of the list.
    if state.zoomed {
        let step = match cmd.as_str() {
            "down" => Some(1),
            "up" => Some(-1),
            "page_down" => Some(10),
            "page_up" => Some(-10),
            "top" => Some(-60_000),
            "bottom" => Some(60_000),
            _ => None,
        };
        if let Some(d) = step {
            state.detail_scroll = (i32::from(state.detail_scroll) + d).clamp(0, 60_000) as u16;
            return vec![];
        }
    }
    // `q` in the whole-packet view goes back to the lists, as in less and k9s (ctrl-c still
    // quits): quitting from there lost the view and, with a protected key, the passphrase.
    let cmd =
        if state.zoomed && cmd == "quit" && Key::parse("ctrl-c").ok() != Some(key) { "back".to_owned() } else { cmd };
    let before = (state.pane, state.selection(state.pane));
    let fx = on_normal_command(state, &cmd);
    if (state.pane, state.selection(state.pane)) != before {
        state.detail_scroll = 0;
    }
    fx
}

pub(super) fn on_normal_command(state: &mut State, cmd: &str) -> Vec<Effect> {
    match cmd {
        "down" => state.move_selection(1),
        "up" => state.move_selection(-1),
        "top" => state.selected[state.pane as usize] = 0,
        "bottom" => state.selected[state.pane as usize] = state.len(state.pane).saturating_sub(1),
        "page_down" => state.move_selection(PAGE),
        "page_up" => state.move_selection(-PAGE),
        "open"
            if (state.selected_packet().is_some()
                || matches!(state.pane, Pane::Invalid | Pane::Posteriors | Pane::Audit)
                    && state.len(state.pane) > 0) =>
        {
            state.zoomed = true;
        }
        "back" => {
            if state.zoomed {
                state.zoomed = false;
            } else if !state.filter.is_empty() {
                state.filter.clear();
                state.refresh();
            }
        }
        "next_pane" | "prev_pane" => {
            let i = Pane::ALL.iter().position(|p| *p == state.pane).unwrap_or(0);
            let n = Pane::ALL.len();
            state.pane = Pane::ALL[if cmd == "next_pane" { (i + 1) % n } else { (i + n - 1) % n }];
            if matches!(state.pane, Pane::Matrices | Pane::Agents | Pane::Grants) {
                state.zoomed = false;
            }
            if state.pane == Pane::Audit && !state.audit_wanted {
                state.audit_wanted = true;
                return vec![Effect::Audit];
            }
        }
        "pending" => state.pane = Pane::Pending,
        "decided" => state.pane = Pane::Decided,
        "invalid" => state.pane = Pane::Invalid,
        "posteriors" => state.pane = Pane::Posteriors,
        "matrices" | "agents" | "grants" => {
            state.pane = match cmd {
                "matrices" => Pane::Matrices,
                "agents" => Pane::Agents,
                _ => Pane::Grants,
            };
            state.zoomed = false;
        }
        "revoke" => return start_revoke(state),
        "audit" => {
            state.pane = Pane::Audit;
            if !state.audit_wanted {
                state.audit_wanted = true;
                return vec![Effect::Audit];
            }
        }
        "command" => {
            state.completions.clear();
            state.mode = Mode::Input { purpose: InputPurpose::Command, text: String::new() };
        }
        "approve" | "refuse" => return start_decision(state, cmd == "approve"),
        "raise" | "lower" => return start_trust_change(state, cmd == "raise"),
        "quarantine" => return start_agent_control(state, ControlKind::Quarantine),
        "release" => return start_agent_control(state, ControlKind::Release),
        "kill" => return start_agent_control(state, ControlKind::Kill),
        "elevate" => return start_agent_control(state, ControlKind::Elevate),
        "filter" => {
            state.mode = Mode::Input { purpose: InputPurpose::Filter, text: state.filter.clone() };
        }
        "sort" | "sort_reverse" | "mark" | "mark_all" | "unmark_all" if state.pane != Pane::Pending => {
            let what = if cmd.starts_with("sort") { "sorting orders" } else { "selecting marks packets of" };
            state.flash = Some(Flash { text: format!("{what} the pending list (press 1)"), error: true });
        }
        "sort" => {
            // The packet under the cursor stays under it: `refresh` keeps the selection by id.
            state.sort = state.sort.next();
            resorted(state);
        }
        "sort_reverse" => {
            state.sort_reverse = !state.sort_reverse;
            resorted(state);
        }
        "mark" => {
            if let Some(id) = state.selected_packet().map(|p| p.id.clone()) {
                if !state.marked.remove(&id) {
                    state.marked.insert(id);
                }
                // Down to the next packet, so that space runs down the list (not while one
                // packet is read whole: what is shown stays).
                if !state.zoomed {
                    state.move_selection(1);
                }
            }
        }
        "mark_all" => {
            state.marked.extend(state.pending.iter().map(|e| e.packet.id.clone()));
            let shown = state.pending.len();
            state.flash = Some(Flash {
                text: format!("{} selected: every packet shown ({shown}) · V clears the selection", state.marked.len()),
                error: false,
            });
        }
        "unmark_all" if !state.marked.is_empty() => {
            state.flash = Some(Flash { text: format!("{} unselected", state.marked.len()), error: false });
            state.marked.clear();
        }
        "chain" => {
            if matches!(state.chain, ChainState::Broken { .. }) {
                state.mode = Mode::ChainAlert;
            } else {
                state.flash = Some(Flash { text: chain_line(&state.chain), error: false });
            }
            return vec![Effect::VerifyChain { force: true }];
        }
        "copy_id" | "copy_hash" => return copy_selected(state, cmd == "copy_hash"),
        "pager" => return page_selected(state),
        "correct" => return super::approval::start_correction(state),
        "help" => state.mode = Mode::Help,
        "log" => state.mode = Mode::Log,
        "quit" => {
            state.quit = true;
            return vec![Effect::Quit];
        }
        _ => {}
    }
    vec![]
}

/// The pending list in its new order, said in the status line.
fn resorted(state: &mut State) {
    state.refresh();
    state.flash =
        Some(Flash { text: format!("pending sorted by {}", sort_words(state.sort, state.sort_reverse)), error: false });
}

/// `y` / `Y`: the selected packet's id or content hash (or the audit entry's packet id or
/// entry_hash) to the clipboard, whole.
fn copy_selected(state: &mut State, hash: bool) -> Vec<Effect> {
    let (what, a) = if hash { ("hash", "a hash") } else { ("id", "an id") };
    let text = match (state.pane, state.selected_packet()) {
        (_, Some(p)) => Some(if hash { p.content_hash.clone() } else { p.id.clone() }),
        (Pane::Audit, None) => state.selected_audit().and_then(|e| {
            if hash { e.entry_hash.clone() } else { e.packet_id.clone().or_else(|| e.receipt_id.clone()) }
        }),
        _ => None,
    };
    let Some(text) = text else {
        state.flash = Some(Flash { text: format!("nothing selected here has {a} to copy"), error: true });
        return vec![];
    };
    state.flash = Some(Flash {
        text: format!(
            "copied {what} {} (sent to the terminal's clipboard, OSC 52)",
            warrant_protocol::text::inert(&text, 80)
        ),
        error: false,
    });
    vec![Effect::Copy(text)]
}

/// `p`: the selected packet whole (every field, as published, pretty-printed) in `$PAGER`.
fn page_selected(state: &mut State) -> Vec<Effect> {
    let Some(p) = state.selected_packet() else {
        state.flash = Some(Flash { text: "p opens a packet: select one in Pending or Decided".into(), error: true });
        return vec![];
    };
    vec![Effect::Pager(packet_text(&p))]
}

/// A packet as the pager shows it: its id, content hash and file's fields, pretty-printed, each
/// line made inert (escapes and bidi overrides shown as placeholders, as on the screen).
fn packet_text(p: &warrant_protocol::packet::Packet) -> String {
    let body = if p.raw.is_null() {
        "(the packet's body was not loaded)".to_owned()
    } else {
        serde_json::to_string_pretty(&p.raw).unwrap_or_default()
    };
    let shown = |s: &str| warrant_protocol::text::inert(s, usize::MAX);
    let mut out = format!("packet {}\ncontent_hash {}\n\n", shown(&p.id), shown(&p.content_hash));
    for line in body.lines() {
        out.push_str(&shown(line));
        out.push('\n');
    }
    out
}

/// A mouse event in the normal mode: a click on a view's tab switches to it, a click on a row
/// selects it, the wheel moves the selection (three rows a notch). Elsewhere, and in dialogs,
/// the mouse does nothing (nothing is ever signed by a click).
pub(super) fn on_mouse(state: &mut State, m: MouseInput) -> Vec<Effect> {
    if state.mode != Mode::Normal {
        return vec![];
    }
    let before = (state.pane, state.selection(state.pane));
    let mut fx = vec![];
    match m.kind {
        MouseKind::ScrollUp if state.zoomed => state.detail_scroll = state.detail_scroll.saturating_sub(3),
        MouseKind::ScrollDown if state.zoomed => {
            state.detail_scroll = state.detail_scroll.saturating_add(3).min(60_000)
        }
        MouseKind::ScrollUp => state.move_selection(-3),
        MouseKind::ScrollDown => state.move_selection(3),
        MouseKind::Click => {
            let Some((w, h)) = state.viewport else { return vec![] };
            match crate::ui::hit(state, w, h, m.column, m.row) {
                Some(crate::ui::Hit::Tab(pane)) => {
                    let cmd = crate::command::VIEWS.iter().find(|(_, p)| *p == pane).map_or("pending", |(n, _)| *n);
                    fx = on_normal_command(state, cmd);
                }
                Some(crate::ui::Hit::Row(i)) => state.selected[state.pane as usize] = i,
                None => {}
            }
        }
    }
    if (state.pane, state.selection(state.pane)) != before {
        state.detail_scroll = 0;
    }
    fx
}

/// A key in a sign/cancel dialog: `Some(true)` signs, `Some(false)` cancels, `None` stays (the
/// focus may have moved).
fn dialog_key(state: &State, key: &Key, focus: &mut Button) -> Option<bool> {
    match state.keymap.command("confirm", key) {
        Some("confirm") => Some(true),
        Some("cancel") => Some(false),
        Some("toggle") => {
            *focus = if *focus == Button::Cancel { Button::Sign } else { Button::Cancel };
            None
        }
        Some("activate") => Some(*focus == Button::Sign),
        _ => None,
    }
}

fn cancelled(state: &mut State) -> Vec<Effect> {
    state.mode = Mode::Normal;
    state.flash = Some(Flash { text: "cancelled: nothing was signed".into(), error: false });
    vec![]
}
