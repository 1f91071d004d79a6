//! Rendering: pure functions from `&State` to a frame. Nothing here changes state.
//!
//! Text that comes from packets (summaries, bodies, recipients, reasons, file names) goes through
//! [`inert`] first, so control characters, escape sequences and bidi overrides are shown as
//! visible placeholders and never reach the terminal.
//!
//! [`render`] lays out the frame and calls one renderer per part, one concern per file:
//!
//! - `common.rs`: labels, styles and line helpers every view shares;
//! - `bars.rs`: the title bar, the list blocks' tab line, the status line and the key hints;
//! - `list.rs`: the list panes (Pending, Decided, Invalid, Posteriors, Audit);
//! - `detail.rs`: the detail pane (a packet, an invalid file, an audit entry);
//! - `posterior.rs`: a class's posterior and its evidence rows;
//! - `matrices.rs`: the Matrices view (rings, tool tier × notebook trust, notebooks);
//! - `agents.rs`: the Agents view;
//! - `dialogs.rs`: the sign dialog, refusal reasons and the controls' dialogs;
//! - `overlays.rs`: the help, the message log and the broken-chain alert;
//! - `mouse.rs`: what a click lands on ([`hit`]).
//!
//! The Grants view is drawn by [`super::grants`].

mod agents;
mod bars;
mod common;
mod detail;
mod dialogs;
mod list;
mod matrices;
mod mouse;
mod overlays;
mod posterior;

use crate::app::{InputPurpose, Mode, Pane, State};
use crate::theme::Theme;
use agents::render_agents;
use bars::{render_hints, render_status, render_title};
use detail::render_detail;
use dialogs::{
    render_batch_reason, render_confirm, render_control_confirm, render_control_reason, render_elevation_input,
    render_reason,
};
use list::render_list;
use matrices::render_matrices;
use overlays::{render_chain_alert, render_help, render_log};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout};
use ratatui::widgets::{Block, Paragraph, Wrap};
pub use warrant_protocol::text::inert;

pub(crate) use bars::tabs_line;
pub(crate) use common::sign_buttons;
pub(crate) use common::window;
pub use common::{clear_around, plural, state_label};
pub use mouse::{Hit, hit};
pub use overlays::help_scroll_limit;

/// Smallest usable terminal.
pub const MIN_WIDTH: u16 = 40;
/// Smallest usable terminal height.
pub const MIN_HEIGHT: u16 = 10;

/// The narrowest body that shows the detail beside the list rather than below it: the list then
/// has 88 cells, room for every Pending column with a readable summary (at 120 it had 66, and
/// summaries shrank to 10 characters).
pub const SIDE_BY_SIDE_WIDTH: u16 = 160;

/// The list's and the detail's areas in the body `body`: side by side (55% : 45%) from
/// [`SIDE_BY_SIDE_WIDTH`] cells, else the list above (two fifths of the height, at least five
/// rows) and the detail below. `render` and the mouse's hit-test share it.
pub(super) fn split_body(body: ratatui::layout::Rect) -> [ratatui::layout::Rect; 2] {
    if body.width >= SIDE_BY_SIDE_WIDTH {
        Layout::horizontal([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(body)
    } else {
        let list_h = (body.height * 2 / 5).max(5).min(body.height.saturating_sub(3));
        Layout::vertical([Constraint::Length(list_h), Constraint::Min(3)]).areas(body)
    }
}

/// Draws the whole console.
pub fn render(state: &State, theme: &Theme, frame: &mut Frame<'_>) {
    let area = frame.area();
    frame.render_widget(Block::default().style(theme.get("base")), area);
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        let msg = format!("terminal too small: {}×{} (need {MIN_WIDTH}×{MIN_HEIGHT})", area.width, area.height);
        frame.render_widget(Paragraph::new(msg).wrap(Wrap { trim: true }).style(theme.get("warn")), area);
        return;
    }
    let [title, body, status, hints] =
        Layout::vertical([Constraint::Length(1), Constraint::Min(3), Constraint::Length(1), Constraint::Length(1)])
            .areas(area);
    render_title(state, theme, frame, title);
    if state.pane == Pane::Matrices {
        render_matrices(state, theme, frame, body);
    } else if state.pane == Pane::Agents {
        render_agents(state, theme, frame, body);
    } else if state.pane == Pane::Grants {
        crate::grants::render(state, theme, frame, body);
    } else if state.zoomed {
        render_detail(state, theme, frame, body, true);
    } else {
        let [list, detail] = split_body(body);
        render_list(state, theme, frame, list);
        render_detail(state, theme, frame, detail, false);
    }
    render_status(state, theme, frame, status);
    render_hints(state, theme, frame, hints);
    match &state.mode {
        Mode::Help => render_help(state, theme, frame, area),
        Mode::Confirm(c) => render_confirm(state, theme, frame, area, c),
        Mode::ChainAlert => render_chain_alert(state, theme, frame, area),
        Mode::Log => render_log(state, theme, frame, area),
        Mode::Input { purpose: InputPurpose::RefuseReason(p), text } => render_reason(theme, frame, area, p, text),
        Mode::Input { purpose: InputPurpose::RefuseBatchReason(ps), text } => {
            render_batch_reason(theme, frame, area, ps, text);
        }
        Mode::ControlConfirm(c) => render_control_confirm(state, theme, frame, area, &c.input, Some(c.focus), None),
        Mode::RevokeConfirm(c) => crate::grants::render_revoke_confirm(state, theme, frame, area, c),
        Mode::Input { purpose: InputPurpose::TypedConfirm(input), text } => {
            render_control_confirm(state, theme, frame, area, input, None, Some(text));
        }
        Mode::Input { purpose: InputPurpose::ControlReason(input), text } => {
            render_control_reason(theme, frame, area, input, text);
        }
        Mode::Input { purpose: InputPurpose::Elevation(agent), text } => {
            render_elevation_input(state, theme, frame, area, agent, text);
        }
        Mode::Input { purpose: InputPurpose::RevokeReason(grant), text } => {
            crate::grants::render_revoke_reason(state, theme, frame, area, grant, text);
        }
        Mode::Input { purpose: InputPurpose::Filter | InputPurpose::Command, .. } | Mode::Normal => {}
    }
}
