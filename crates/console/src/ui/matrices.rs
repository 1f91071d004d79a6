//! The Matrices view: what each ring may touch and who is in it, tool tier × notebook trust, the
//! notebooks with their levels.

use super::agents::standing_label;
use super::bars::tabs_line;
use super::common::window;
use crate::app::{Pane, State};
use crate::theme::Theme;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row, Table, Wrap};
use warrant_engine::monitor::AgentSummary;
use warrant_protocol::graduation::gate::AgentStanding;
use warrant_protocol::rings::Ring;
use warrant_protocol::text::inert;
use warrant_protocol::tiers::{NotebookTrust, TierAction, ToolTier};

/// The matrices view: what each ring may touch (and who is in it), the tool tier × notebook
/// trust matrix with the selected notebook's column highlighted, and the notebooks.
pub(super) fn render_matrices(state: &State, theme: &Theme, frame: &mut Frame<'_>, area: Rect) {
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.get("border_focus"))
        .title(tabs_line(state, theme, area.width));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    // Blank lines between the sections when there is room for them.
    let gap = u16::from(inner.height >= 26 || inner.width >= 110);
    let [rings_area, _, rest] =
        Layout::vertical([Constraint::Length(6), Constraint::Length(gap), Constraint::Min(3)]).areas(inner);
    render_ring_matrix(state, theme, frame, rings_area);
    let (tiers_area, notebooks_area) = if rest.width >= 110 {
        let [a, b] = Layout::horizontal([Constraint::Length(50), Constraint::Min(30)]).spacing(2).areas(rest);
        (a, b)
    } else {
        let tools = tools_line(state);
        let tools_h = u16::try_from(tools.chars().count().div_ceil(usize::from(rest.width.max(1)))).unwrap_or(1);
        let [a, _, b] =
            Layout::vertical([Constraint::Length(5 + tools_h), Constraint::Length(gap), Constraint::Min(2)])
                .areas(rest);
        (a, b)
    };
    render_tier_matrix(state, theme, frame, tiers_area);
    render_notebooks(state, theme, frame, notebooks_area);
}

fn render_ring_matrix(state: &State, theme: &Theme, frame: &mut Frame<'_>, area: Rect) {
    let [title, table] = Layout::vertical([Constraint::Length(1), Constraint::Min(1)]).areas(area);
    frame.render_widget(
        Paragraph::new(Line::from(vec![
            Span::styled("Rings: what each may touch", theme.get("header")),
            Span::styled("  (agents in it now, by effective score)", theme.get("muted")),
        ])),
        title,
    );
    // The fixed columns take 51 cells and 6 spaces; the agents get the rest, with "+N" for
    // those that do not fit.
    let agents_w = usize::from(table.width).saturating_sub(57).max(10);
    let rows: Vec<Row<'_>> = Ring::ALL
        .into_iter()
        .map(|ring| {
            let [net, fs, sub, tools, rate] = ring_cells(ring);
            let members: Vec<&AgentSummary> =
                state.assessment().monitor.agents.values().filter(|a| a.ring == ring).collect();
            let mut agents: Vec<Span<'_>> = Vec::new();
            let mut used = 0;
            for (i, a) in members.iter().enumerate() {
                let text = format!("{} {:.2}", inert(&a.agent, 24), a.eff_score);
                let sep = if i > 0 { 2 } else { 0 };
                let more = members.len() - i - 1;
                let suffix = if more > 0 { 1 + format!("+{more}").len() } else { 0 };
                if i > 0 && used + sep + text.chars().count() + suffix > agents_w {
                    agents.push(Span::styled(format!(" +{}", members.len() - i), theme.get("muted")));
                    break;
                }
                if i > 0 {
                    agents.push(Span::raw(", "));
                }
                let role = if a.standing == AgentStanding::Active { "base" } else { standing_label(a.standing).1 };
                used += sep + text.chars().count();
                agents.push(Span::styled(text, theme.get(role)));
            }
            let agents = if agents.is_empty() {
                Line::from(Span::styled("—", theme.get("muted")))
            } else {
                Line::from(agents)
            };
            let role = |s: &str| if s.starts_with('✗') { theme.get("muted") } else { theme.get("base") };
            Row::new(vec![
                Cell::from(ring_name(ring)).style(theme.get("title")),
                Cell::from(net.clone()).style(role(&net)),
                Cell::from(fs.clone()).style(role(&fs)),
                Cell::from(sub.clone()).style(role(&sub)),
                Cell::from(tools),
                Cell::from(rate),
                Cell::from(agents),
            ])
        })
        .collect();
    let widths = [
        Constraint::Length(12),
        Constraint::Length(7),
        Constraint::Length(11),
        Constraint::Length(7),
        Constraint::Length(5),
        Constraint::Length(9),
        Constraint::Min(10),
    ];
    let header = Row::new(vec!["RING", "NETWORK", "FILESYSTEM", "SUBPROC", "TOOLS", "RATE", "AGENTS NOW"])
        .style(theme.get("header"));
    frame.render_widget(Table::new(rows, widths).header(header).column_spacing(1), table);
}

fn render_tier_matrix(state: &State, theme: &Theme, frame: &mut Frame<'_>, area: Rect) {
    let highlight = state.selected_notebook().map(|n| n.level);
    let mut lines = vec![Line::from(Span::styled("Tool tiers × notebook trust", theme.get("header")))];
    let mut head = vec![Span::raw(format!("{:<13}", ""))];
    for t in NotebookTrust::ALL {
        let (label, style) = if Some(t) == highlight {
            (format!("▾{:<11}", t.as_str()), theme.get("selection"))
        } else {
            (format!(" {:<11}", t.as_str()), theme.get("header"))
        };
        head.push(Span::styled(label, style));
    }
    lines.push(Line::from(head));
    for tier in ToolTier::ALL {
        let mut row = vec![Span::styled(format!("{:<13}", tier.as_str()), theme.get("header"))];
        for t in NotebookTrust::ALL {
            let (label, role) = tier_action_label(warrant_protocol::tiers::gate_action(Some(tier), Some(t)));
            let mut style = theme.get(role);
            if Some(t) == highlight {
                style = style.patch(theme.get("selection"));
            }
            row.push(Span::styled(format!(" {label:<11}"), style));
        }
        lines.push(Line::from(row));
    }
    lines.push(Line::from(Span::styled(tools_line(state), theme.get("muted"))));
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), area);
}

/// The tools `policy.toml` registers, by tier, in one line.
fn tools_line(state: &State) -> String {
    let mut by_tier: Vec<String> = Vec::new();
    for tier in ToolTier::ALL {
        let tools: Vec<String> =
            state.policies.tools().filter(|(_, t)| t.tier == tier).map(|(k, _)| inert(k, 32)).collect();
        if !tools.is_empty() {
            by_tier.push(format!("{tier}: {}", tools.join(", ")));
        }
    }
    if by_tier.is_empty() {
        "no tools in policy.toml: an unregistered tool gates to confirm".to_owned()
    } else {
        format!("tools · {}", by_tier.join(" · "))
    }
}

fn render_notebooks(state: &State, theme: &Theme, frame: &mut Frame<'_>, area: Rect) {
    let [title, table] = Layout::vertical([Constraint::Length(1), Constraint::Min(1)]).areas(area);
    let km = &state.keymap;
    let len = state.notebooks().len();
    let sel = state.selection(Pane::Matrices);
    let (from, to) = window(sel, len, usize::from(table.height.saturating_sub(1)));
    let mut spans = vec![Span::styled("Notebooks", theme.get("header"))];
    if from > 0 || to < len {
        spans.push(Span::styled(format!(" {}–{} of {len}", from + 1, to), theme.get("warn")));
    }
    if !state.read_only {
        let k = |c: &str| km.first_key("normal", c).unwrap_or_default();
        spans.push(Span::styled(format!("  {} raise · {} lower", k("raise"), k("lower")), theme.get("muted")));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), title);
    if state.notebooks().is_empty() {
        let msg = if state.filter.is_empty() {
            "no notebooks yet: packets name one in governance.notebook; any other notebook is cautious"
        } else {
            "nothing matches the filter (esc clears it)"
        };
        frame.render_widget(Paragraph::new(msg).wrap(Wrap { trim: true }).style(theme.get("muted")), table);
        return;
    }
    let wide = table.width >= 60;
    let rows: Vec<Row<'_>> = state.notebooks()[from..to]
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let mut cells = vec![
                Cell::from(inert(&n.id, 40)),
                Cell::from(n.level.as_str()).style(trust_style(theme, n.level)),
                Cell::from(n.pending.to_string()),
                Cell::from(n.set_by.as_deref().map_or_else(|| "(default)".into(), |p| inert(p, 20))),
            ];
            if wide {
                cells.push(Cell::from(inert(n.set_at.as_deref().unwrap_or(""), 24)));
            }
            let row = Row::new(cells);
            if from + i == sel { row.style(theme.get("selection")) } else { row }
        })
        .collect();
    let mut widths = vec![Constraint::Min(10), Constraint::Length(10), Constraint::Length(7), Constraint::Length(10)];
    let mut header = vec!["NOTEBOOK", "LEVEL", "PENDING", "SET BY"];
    if wide {
        widths.push(Constraint::Length(20));
        header.push("SET AT");
    }
    frame.render_widget(
        Table::new(rows, widths).header(Row::new(header).style(theme.get("header"))).column_spacing(1),
        table,
    );
}

/// Glyph and style role of a tier × trust cell.
fn tier_action_label(a: TierAction) -> (&'static str, &'static str) {
    match a {
        TierAction::Auto => ("✓ auto", "ok"),
        TierAction::Gated => ("◌ gated", "pending"),
        TierAction::Confirm => ("● confirm", "warn"),
    }
}

fn trust_style(theme: &Theme, t: NotebookTrust) -> Style {
    match t {
        NotebookTrust::Cautious => theme.get("pending"),
        NotebookTrust::Trusted => theme.get("ok"),
        NotebookTrust::Autonomous => theme.get("warn"),
    }
}

/// What a ring may touch, as cells: network, filesystem, subprocess, tools, rate.
pub(super) fn ring_cells(ring: Ring) -> [String; 5] {
    let c = warrant_protocol::rings::constraints(ring);
    let limits = warrant_protocol::rings::rate::default_limits(ring);
    let scope = serde_json::to_value(c.filesystem_scope).ok().and_then(|v| v.as_str().map(str::to_owned));
    let scope = scope.unwrap_or_else(|| "?".into());
    [
        match (c.network_allowed, c.network_allowlist.len()) {
            (false, _) => "✗ none".into(),
            (true, 0) => "✓ any".into(),
            (true, n) => format!("✓ {n} hosts"),
        },
        match (scope.as_str(), c.filesystem_writable) {
            ("none", _) => "✗ none".into(),
            (s, true) => format!("✓ {s} rw"),
            (s, false) => format!("✓ {s} ro"),
        },
        if c.subprocess_allowed { "✓ yes".into() } else { "✗ no".into() },
        c.max_concurrent_tools.to_string(),
        format!("{}/s {}", limits.rate, limits.burst),
    ]
}

fn ring_name(ring: Ring) -> &'static str {
    match ring {
        Ring::Root => "0 root",
        Ring::Privileged => "1 privileged",
        Ring::Standard => "2 standard",
        Ring::Sandbox => "3 sandbox",
    }
}
