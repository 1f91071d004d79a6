//! The Agents view: one row per agent (ring, score, standing, activity, rate, elevation) and the
//! selected agent's detail.

use super::bars::tabs_line;
use super::common::{cut_line, kv, own_line, window};
use super::matrices::ring_cells;
use crate::app::{Pane, State};
use crate::theme::Theme;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row, Table, Wrap};
use warrant_engine::monitor::AgentSummary;
use warrant_protocol::clock;
use warrant_protocol::graduation::gate::AgentStanding;
use warrant_protocol::text::inert;

/// The agents view: one row per agent seen in packets, receipts or controls, and the selected
/// agent's detail below.
pub(super) fn render_agents(state: &State, theme: &Theme, frame: &mut Frame<'_>, area: Rect) {
    let len = state.agents().len();
    // Two more lines for an agent whose tool calls a hook or the gateway governs.
    let calls = state.selected_agent().is_some_and(|a| a.calls.is_some());
    let detail_h = if area.height >= 18 { 9 + 2 * u16::from(calls && area.height >= 22) } else { 0 };
    // The detail: standing, ring, what it may touch, elevation, rate, counts, keys.
    let [list_area, detail_area] = Layout::vertical([Constraint::Min(4), Constraint::Length(detail_h)]).areas(area);
    let rows_h = usize::from(list_area.height.saturating_sub(3));
    let sel = state.selection(Pane::Agents);
    let (from, to) = window(sel, len, rows_h);
    let mut block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.get("border_focus"))
        .title(tabs_line(state, theme, area.width));
    if to < len {
        block = block.title_bottom(
            Line::from(Span::styled(format!(" ↓ {} more ", len - to), theme.get("muted"))).right_aligned(),
        );
    }
    let inner = block.inner(list_area);
    frame.render_widget(block, list_area);
    if len == 0 {
        let msg = if state.filter.is_empty() {
            "no agents yet: agents appear with their packets, receipts or the principal's controls"
        } else {
            "nothing matches the filter (esc clears it)"
        };
        frame.render_widget(Paragraph::new(msg).style(theme.get("muted")), inner);
    } else {
        let wide = inner.width >= 110;
        let spark_w = if wide { warrant_engine::monitor::ACTIVITY_MINUTES } else { 12 };
        // The agent's id takes what the other columns leave, and ends in `…` when cut.
        let others =
            if wide { 4 + 5 + 13 + 4 + 4 + spark_w + 13 + 9 + 5 + 9 } else { 1 + 5 + 13 + 5 + spark_w + 8 + 8 + 7 };
        let agent_w = usize::from(inner.width).saturating_sub(others).max(if wide { 14 } else { 10 });
        let rows: Vec<Row<'_>> = state.agents()[from..to]
            .iter()
            .enumerate()
            .map(|(i, a)| {
                let (standing, role) = standing_label(a.standing);
                let mut tokens = vec![Span::raw(if wide {
                    format!("{:.1}/{:.0}", a.tokens, a.capacity)
                } else {
                    format!("{:.0}/{:.0}", a.tokens.floor(), a.capacity)
                })];
                if a.rate_rejections > 0 {
                    tokens.push(Span::styled(format!(" ✗{}", a.rate_rejections), theme.get("warn")));
                }
                let elevation = match state.elevation_left(a) {
                    Some((ring, left)) => Span::styled(format!("↑{ring} {}", countdown(left)), theme.get("accent")),
                    None => Span::styled("—", theme.get("muted")),
                };
                let mut cells = vec![
                    Cell::from(cut_line(Line::from(inert(&a.agent, 200)), agent_w)),
                    Cell::from(a.ring.value().to_string()),
                    Cell::from(format!("{:.2}", a.eff_score)),
                    Cell::from(standing).style(theme.get(role)),
                ];
                if wide {
                    cells.push(Cell::from(a.pending.to_string()));
                    cells.push(Cell::from(a.decided.to_string()));
                } else {
                    cells.push(Cell::from(format!("{}/{}", a.pending, a.decided)));
                }
                cells.push(Cell::from(sparkline(&a.activity, spark_w)).style(theme.get("accent")));
                cells.push(Cell::from(Line::from(tokens)));
                cells.push(Cell::from(elevation));
                if wide {
                    let seen = if a.last_seen > 0.0 { clock::human_age(state.now - a.last_seen) } else { "—".into() };
                    cells.push(Cell::from(seen));
                }
                let row = Row::new(cells);
                if from + i == sel { row.style(theme.get("selection")) } else { row }
            })
            .collect();
        let (header, widths): (Vec<&str>, Vec<Constraint>) = if wide {
            (
                vec![
                    "AGENT",
                    "RING",
                    "SCORE",
                    "STANDING",
                    "PEND",
                    "DONE",
                    "ACTIVITY (30 MIN)",
                    "TOKENS",
                    "ELEVATED",
                    "SEEN",
                ],
                vec![
                    Constraint::Min(14),
                    Constraint::Length(4),
                    Constraint::Length(5),
                    Constraint::Length(13),
                    Constraint::Length(4),
                    Constraint::Length(4),
                    Constraint::Length(spark_w as u16),
                    Constraint::Length(13),
                    Constraint::Length(9),
                    Constraint::Length(5),
                ],
            )
        } else {
            (
                vec!["AGENT", "R", "SCORE", "STANDING", "P/D", "LAST 12 MIN", "TOKENS", "ELEVATED"],
                vec![
                    Constraint::Min(10),
                    Constraint::Length(1),
                    Constraint::Length(5),
                    Constraint::Length(13),
                    Constraint::Length(5),
                    Constraint::Length(spark_w as u16),
                    Constraint::Length(8),
                    Constraint::Length(8),
                ],
            )
        };
        frame.render_widget(
            Table::new(rows, widths).header(Row::new(header).style(theme.get("header"))).column_spacing(1),
            inner,
        );
    }
    if detail_h > 0 {
        render_agent_detail(state, theme, frame, detail_area);
    }
}

fn render_agent_detail(state: &State, theme: &Theme, frame: &mut Frame<'_>, area: Rect) {
    let Some(a) = state.selected_agent() else {
        frame.render_widget(Block::default().borders(Borders::ALL).border_style(theme.get("border")), area);
        return;
    };
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.get("border"))
        .title(Span::styled(format!(" Agent {} ", inert(&a.agent, 60)), theme.get("title")));
    let lines = agent_lines(state, theme, a);
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }).block(block), area);
}

fn agent_lines(state: &State, theme: &Theme, a: &AgentSummary) -> Vec<Line<'static>> {
    let (standing, role) = standing_label(a.standing);
    let control = state.controls().agents.get(&a.agent);
    let mut standing_text = standing.to_owned();
    if a.standing != AgentStanding::Active {
        if let Some(since) = control.and_then(|c| c.since.as_deref()) {
            standing_text.push_str(&format!(" since {}", inert(since, 30)));
        }
        if let Some(r) = &a.standing_reason {
            standing_text.push_str(&format!(": {}", inert(r, 200)));
        }
        standing_text.push_str(" · everything it asks is blocked");
    }
    let [net, fs, sub, tools, rate] = ring_cells(a.ring);
    let rate = rate.replacen(' ', " burst ", 1);
    let elevation = match (state.elevation_left(a), control.and_then(|c| c.elevation.as_ref())) {
        (Some((ring, left)), Some(e)) => {
            format!("ring {ring} until {} ({} left; ends by itself)", inert(&e.expires_at, 30), countdown(left))
        }
        (Some((ring, left)), None) => format!("ring {ring} ({} left)", countdown(left)),
        _ => "none".to_owned(),
    };
    let seen =
        if a.last_seen > 0.0 { format!("{} ago", clock::human_age(state.now - a.last_seen)) } else { "never".into() };
    let mut lines = vec![
        kv(theme, "standing", Span::styled(standing_text, theme.get(role))),
        kv(theme, "ring", format!("{} · effective score {:.2}", a.ring.label(), a.eff_score)),
        kv(theme, "may touch", format!("net {net} · fs {fs} · proc {sub} · {tools} tools · {rate}")),
        kv(theme, "elevation", elevation),
        kv(
            theme,
            "rate",
            match a.rate_rejections {
                0 => format!("{:.1} of {:.0} tokens · none over the limit", a.tokens, a.capacity),
                n => format!(
                    "{:.1} of {:.0} tokens · {n} {} over the limit (blocked)",
                    a.tokens,
                    a.capacity,
                    if n == 1 { "call" } else { "calls" }
                ),
            },
        ),
        kv(
            theme,
            "activity",
            format!("pending {} · decided {} · receipts {} · last seen {seen}", a.pending, a.decided, a.receipts),
        ),
    ];
    if let Some(c) = &a.calls {
        let sessions = match c.sessions {
            0 => String::new(),
            1 => " · 1 session".to_owned(),
            n => format!(" · {n} sessions"),
        };
        let workspace = c.workspace.as_deref().map(|w| format!(" · {}", inert(w, 120))).unwrap_or_default();
        lines.push(kv(
            theme,
            "calls",
            format!(
                "{}{sessions}{workspace} · {}/min · allowed {} · held {} · refused {}",
                inert(&c.host, 40),
                c.last_minute,
                c.allowed,
                c.held,
                c.refused
            ),
        ));
        lines.push(kv(
            theme,
            "last call",
            format!("{} ({} ago)", inert(&c.last_call, 200), clock::human_age(state.now - c.last_at)),
        ));
    }
    let km = &state.keymap;
    if !state.read_only {
        let k = |c: &str| km.first_key("normal", c).unwrap_or_default();
        lines.push(Line::from(Span::styled(
            format!(
                "{} quarantine · {} release · {} kill · {} elevate (signed after confirming)",
                k("quarantine"),
                k("release"),
                k("kill"),
                k("elevate")
            ),
            theme.get("key_hint"),
        )));
    }
    lines.into_iter().map(own_line).collect()
}

/// Glyph, word and style role of an agent's standing.
pub(super) fn standing_label(s: AgentStanding) -> (&'static str, &'static str) {
    match s {
        AgentStanding::Active => ("✓ active", "ok"),
        AgentStanding::Quarantined => ("⊘ quarantined", "warn"),
        AgentStanding::Killed => ("✗ killed", "refuse"),
    }
}

/// The last `width` minutes of activity as a sparkline: `·` for an idle minute, else ▁…█ scaled
/// to the busiest minute shown.
fn sparkline(activity: &[u64], width: usize) -> String {
    const BLOCKS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let shown = &activity[activity.len().saturating_sub(width)..];
    let max = shown.iter().copied().max().unwrap_or(0).max(1);
    shown.iter().map(|&v| if v == 0 { '·' } else { BLOCKS[((v * 8).div_ceil(max) as usize).clamp(1, 8) - 1] }).collect()
}

/// `mm:ss`.
fn countdown(seconds: f64) -> String {
    let s = seconds.max(0.0).ceil() as u64;
    format!("{:02}:{:02}", s / 60, s % 60)
}
