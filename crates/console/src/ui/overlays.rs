//! The overlays over the views: the help (keys, commands and the glyphs' legend, in columns,
//! scrolling), the message log and the broken-chain alert.

use super::common::{centered, hang, plural};
use crate::app::{State, chain_line};
use crate::theme::Theme;
use ratatui::Frame;
use ratatui::layout::{Alignment, Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use warrant_protocol::clock;
use warrant_protocol::text::inert;

/// Width of one column of the help overlay.
const HELP_COLUMN: u16 = 38;

/// What the glyphs of the lists mean, as `?` explains them (glyph, meaning).
pub const LEGEND: [(&str, &str); 14] = [
    ("● review", "waits for you"),
    ("○ gate: allow", "the gate lets it run"),
    ("≈ gate: limits", "runs within limits"),
    ("◌ deferred", "waits for more"),
    ("⊘ blocked", "a model forbids it"),
    ("◆ human only", "never automatic"),
    ("⏱", "expires / timed out"),
    ("■", "selected for a batch"),
    ("✍1/2", "co-signs given/needed"),
    ("⚠", "invalid / look-alike"),
    ("∉ chain", "a call, not a record"),
    ("✓ ✗", "approved, refused"),
    ("RISK*", "packet claims another"),
    ("▼ ▲", "sorted column, order"),
];

/// The help overlay's sections: per key mode its bindings (keys, description), then the `:`
/// commands and the legend of glyphs.
fn help_sections(keymap: &crate::keymap::Keymap) -> Vec<(&'static str, Vec<(String, String)>)> {
    let mut out: Vec<(&'static str, Vec<(String, String)>)> =
        [("normal", "Lists"), ("confirm", "Confirmation"), ("input", "Text line"), ("help", "Help")]
            .into_iter()
            .map(|(mode, title)| {
                let rows = keymap
                    .bindings(mode)
                    .iter()
                    .map(|b| {
                        let keys: Vec<String> = b.keys.iter().map(crate::keymap::Key::label).collect();
                        (keys.join(" "), b.desc.clone())
                    })
                    .collect();
                (title, rows)
            })
            .collect();
    let pairs = |list: &[(&str, &str)]| list.iter().map(|(a, b)| ((*a).to_owned(), (*b).to_owned())).collect();
    out.push(("Commands after :", pairs(&crate::command::HELP)));
    out.push(("Legend", pairs(&LEGEND)));
    out
}

/// Lines of the help overlay: a title per section, a line per row, blank lines between
/// sections with `gaps`.
fn help_line_count(keymap: &crate::keymap::Keymap, gaps: bool) -> usize {
    let sections = help_sections(keymap);
    sections.iter().map(|(_, rows)| rows.len() + 1).sum::<usize>() + if gaps { sections.len() - 1 } else { 0 }
}

/// How many lines of the help overlay fit on a `width`×`height` terminal.
fn help_fit(width: u16, height: u16) -> usize {
    usize::from(width.saturating_sub(2) / HELP_COLUMN).max(1) * usize::from(height.saturating_sub(2).max(1))
}

/// How far the help overlay can scroll on a `width`×`height` terminal (0 when it fits).
#[must_use]
pub fn help_scroll_limit(keymap: &crate::keymap::Keymap, width: u16, height: u16) -> usize {
    help_line_count(keymap, false).saturating_sub(help_fit(width, height))
}

pub(super) fn render_help(state: &State, theme: &Theme, frame: &mut Frame<'_>, area: Rect) {
    // Sections flow into as many columns as the height requires; when the columns would not fit
    // across, the blank lines between sections go first, then the overlay scrolls (j/k) and says
    // how many lines are above and below.
    const COLUMN: u16 = HELP_COLUMN;
    let height = area.height.saturating_sub(2).max(1) as usize;
    let fit = help_fit(area.width, area.height);
    let help = help_sections(&state.keymap);
    let sections = |gaps: bool| {
        let mut lines: Vec<Line<'_>> = Vec::new();
        for (title, rows) in &help {
            if gaps && !lines.is_empty() {
                lines.push(Line::from(""));
            }
            lines.push(Line::from(Span::styled(*title, theme.get("header"))));
            for (keys, desc) in rows {
                lines.push(Line::from(vec![
                    Span::styled(format!(" {keys:<15} "), theme.get("key_hint")),
                    Span::raw(inert(desc, 60)),
                ]));
            }
        }
        lines
    };
    let mut lines = sections(true);
    if lines.len() > fit {
        lines = sections(false);
    }
    let total = lines.len();
    let skip = state.help_scroll.min(total.saturating_sub(fit));
    let lines: Vec<Line<'_>> = lines.into_iter().skip(skip).take(fit).collect();
    let below = total - skip - lines.len();
    let columns = lines.len().div_ceil(height).max(1) as u16;
    let rect = centered(area, (COLUMN * columns + 2).min(area.width), (lines.len().min(height) + 2) as u16);
    super::common::clear_around(frame, rect, area);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.get("border_focus"))
        .title(" Help: keys, commands, legend (esc closes) ");
    let block = if skip > 0 {
        block.title_top(
            Line::from(Span::styled(format!(" ↑ {skip} {} ", plural(skip, "line")), theme.get("muted")))
                .right_aligned(),
        )
    } else {
        block
    };
    let block = if below > 0 {
        let k = state.keymap.first_key("help", "down").unwrap_or_default();
        block.title_bottom(
            Line::from(Span::styled(
                format!(" ↓ {below} more {} — {k} to scroll ", plural(below, "line")),
                theme.get("warn"),
            ))
            .right_aligned(),
        )
    } else {
        block
    };
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    let areas = Layout::horizontal(vec![Constraint::Length(COLUMN); columns as usize]).split(inner);
    for (chunk, col) in lines.chunks(height).zip(areas.iter()) {
        frame.render_widget(Paragraph::new(chunk.to_vec()), *col);
    }
}

/// The message log: recent status-line messages, whole and wrapped, newest last.
pub(super) fn render_log(state: &State, theme: &Theme, frame: &mut Frame<'_>, area: Rect) {
    let rect = centered(area, area.width.saturating_sub(4).max(area.width.min(40)), area.height.saturating_sub(2));
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.get("border_focus"))
        .title(Span::styled(" Messages, newest last (any key closes) ", theme.get("title")));
    let inner = block.inner(rect);
    let width = usize::from(inner.width);
    let mut lines: Vec<Line<'static>> = Vec::new();
    for e in &state.log {
        let at = time::OffsetDateTime::from_unix_timestamp(e.at)
            .map_or_else(|_| String::new(), clock::format_rfc3339)
            .get(11..19)
            .unwrap_or("")
            .to_owned();
        let style = if e.error { theme.get("error") } else { theme.get("base") };
        let line = Line::from(vec![
            Span::styled(format!("{at}  "), theme.get("muted")),
            Span::styled(inert(&e.text, 4000), style),
        ]);
        lines.extend(hang(line, width));
    }
    if lines.is_empty() {
        lines.push(Line::from(Span::styled("no messages yet", theme.get("muted"))));
    }
    let height = usize::from(inner.height);
    let skip = lines.len().saturating_sub(height);
    let mut block = block;
    if skip > 0 {
        block = block.title_top(
            Line::from(Span::styled(format!(" ↑ {skip} older {} ", plural(skip, "line")), theme.get("muted")))
                .right_aligned(),
        );
    }
    super::common::clear_around(frame, rect, area);
    frame.render_widget(Paragraph::new(lines.split_off(skip)).block(block), rect);
}

pub(super) fn render_chain_alert(state: &State, theme: &Theme, frame: &mut Frame<'_>, area: Rect) {
    let lines = vec![
        Line::from(Span::styled(inert(&chain_line(&state.chain), 2000), theme.get("error"))),
        Line::from(""),
        Line::from("The chain of decisions in this spool does not verify. Something edited, removed or"),
        Line::from("reordered records, or a signature is not from a pinned key. Signing is refused"),
        Line::from("until the chain verifies again. Examine it with `warrant verify --json`."),
        Line::from(""),
        Line::from(Span::styled(inert(&state.spool_path, 80), theme.get("muted"))),
        Line::from(""),
        Line::from(Span::styled("press any key to acknowledge", theme.get("key_hint"))).alignment(Alignment::Center),
    ];
    let rect = centered(area, 92, lines.len() as u16 + 2);
    super::common::clear_around(frame, rect, area);
    frame.render_widget(
        Paragraph::new(lines).wrap(Wrap { trim: false }).block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(theme.get("error"))
                .title(Span::styled(" ✗ Chain broken ", theme.get("error"))),
        ),
        rect,
    );
}
