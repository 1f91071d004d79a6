//! Mouse hit-testing: what a click lands on ([`Hit`]), from the layout `render` draws, worked
//! out again.

use super::bars::tabs_line;
use super::common::window;
use super::{MIN_HEIGHT, MIN_WIDTH};
use crate::app::{Pane, State};
use crate::theme::Theme;
use ratatui::layout::{Constraint, Layout, Rect};

/// What a mouse click at (`column`, `row`) lands on, on a `width`×`height` terminal showing
/// `state` (the layout `render` draws, worked out again: rendering stays a pure read).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hit {
    /// A view's tab in the list's title.
    Tab(Pane),
    /// A row of the focused list (index into the filtered list).
    Row(usize),
}

/// The list's area on a `width`×`height` terminal, when the focused view draws one (not the
/// Matrices and Agents views, and not while the packet is zoomed).
pub(super) fn list_area(state: &State, width: u16, height: u16) -> Option<Rect> {
    let area = Rect::new(0, 0, width, height);
    if width < MIN_WIDTH || height < MIN_HEIGHT || state.zoomed || matches!(state.pane, Pane::Matrices | Pane::Agents) {
        return None;
    }
    let [_, body, _, _] =
        Layout::vertical([Constraint::Length(1), Constraint::Min(3), Constraint::Length(1), Constraint::Length(1)])
            .areas(area);
    Some(if state.pane == Pane::Grants {
        let [list, _] =
            Layout::vertical([Constraint::Min(4), Constraint::Length(crate::grants::detail_height(body.height))])
                .areas(body);
        list
    } else {
        super::split_body(body)[0]
    })
}

/// What a click at (`column`, `row`) lands on ([`Hit`]), if anything.
#[must_use]
pub fn hit(state: &State, width: u16, height: u16, column: u16, row: u16) -> Option<Hit> {
    let list = list_area(state, width, height)?;
    if column <= list.x || column >= list.right().saturating_sub(1) || row < list.y || row >= list.bottom() {
        return None;
    }
    if row == list.y {
        // The tabs start after the block's corner, one span per view in `Pane::ALL` order.
        let theme = Theme::builtin("mono")?;
        let tabs = tabs_line(state, &theme, list.width);
        let mut x = list.x + 1;
        for (span, pane) in tabs.spans.iter().zip(Pane::ALL) {
            let w = u16::try_from(span.width()).unwrap_or(u16::MAX);
            if column >= x && column < x.saturating_add(w) {
                return Some(Hit::Tab(pane));
            }
            x = x.saturating_add(w);
        }
        return None;
    }
    // Border, header, then the rows of the window `render_list` shows (the Grants view's list
    // has no header).
    let header = u16::from(state.pane != Pane::Grants);
    let first_row = list.y + 1 + header;
    if row < first_row || row >= list.bottom().saturating_sub(1) {
        return None;
    }
    let rows_h = list.height.saturating_sub(2 + header) as usize;
    let len = state.len(state.pane);
    let (from, to) = window(state.selection(state.pane), len, rows_h);
    let i = from + usize::from(row - first_row);
    (i < to).then_some(Hit::Row(i))
}
