//! Rendering: pure functions from `&State` to a frame. Nothing here changes state.
//!
//! Text that comes from packets (summaries, bodies, recipients, reasons, file names) goes through
//! [`inert`] first, so control characters, escape sequences and bidi overrides are shown as
//! visible placeholders and never reach the terminal.

use super::app::{Button, ChainState, InputPurpose, Mode, Pane, State, chain_line};
use super::theme::Theme;
use crate::clock;
use crate::decision::Verdict;
use crate::packet::{DecisionState, Packet};
pub use crate::text::inert;
use ratatui::Frame;
use ratatui::layout::{Alignment, Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span, Text};
use ratatui::widgets::{Block, Borders, Cell, Clear, Paragraph, Row, Table, Wrap};
use serde_json::Value;

/// Smallest usable terminal.
pub const MIN_WIDTH: u16 = 40;
/// Smallest usable terminal height.
pub const MIN_HEIGHT: u16 = 10;

/// Glyph and word for a decision state (never colour alone).
#[must_use]
pub fn state_label(s: Option<DecisionState>) -> (&'static str, &'static str) {
    match s {
        Some(DecisionState::Allowed) => ("✓", "allowed"),
        Some(DecisionState::AllowedWithConstraints) => ("≈", "constrained"),
        Some(DecisionState::ReviewRequired) => ("●", "review"),
        Some(DecisionState::Deferred) => ("◌", "deferred"),
        Some(DecisionState::Blocked) => ("⊘", "blocked"),
        Some(DecisionState::HumanOnly) => ("◆", "human only"),
        None => ("?", "unknown"),
    }
}

fn verdict_label(v: Verdict) -> (&'static str, &'static str, &'static str) {
    match v {
        Verdict::Approve => ("✓", "APPROVED", "approve"),
        Verdict::Refuse => ("✗", "REFUSED", "refuse"),
    }
}

fn risk_style(theme: &Theme, risk: Option<&str>) -> Style {
    match risk {
        Some("low") => theme.get("risk_low"),
        Some("medium") => theme.get("risk_medium"),
        Some("high") => theme.get("risk_high"),
        Some("critical") => theme.get("risk_critical"),
        _ => theme.get("muted"),
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
    if state.zoomed {
        render_detail(state, theme, frame, body, true);
    } else if body.width >= 120 {
        let [list, detail] = Layout::horizontal([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(body);
        render_list(state, theme, frame, list);
        render_detail(state, theme, frame, detail, false);
    } else {
        let list_h = (body.height * 2 / 5).max(5).min(body.height.saturating_sub(3));
        let [list, detail] = Layout::vertical([Constraint::Length(list_h), Constraint::Min(3)]).areas(body);
        render_list(state, theme, frame, list);
        render_detail(state, theme, frame, detail, false);
    }
    render_status(state, theme, frame, status);
    render_hints(state, theme, frame, hints);
    match &state.mode {
        Mode::Help => render_help(state, theme, frame, area),
        Mode::Confirm(c) => render_confirm(state, theme, frame, area, c),
        Mode::ChainAlert => render_chain_alert(state, theme, frame, area),
        Mode::Input { purpose: InputPurpose::RefuseReason(p), text } => render_reason(theme, frame, area, p, text),
        Mode::Input { purpose: InputPurpose::Filter, .. } | Mode::Normal => {}
    }
}

fn render_title(state: &State, theme: &Theme, frame: &mut Frame<'_>, area: Rect) {
    let mut spans = vec![
        Span::styled(" warrant ", theme.get("title")),
        Span::styled(format!(" {} pending ", state.len(Pane::Pending)), theme.get("pending")),
        Span::styled(format!("· {} decided ", state.decisions.len()), theme.get("muted")),
        Span::styled(format!("· {} receipts ", state.receipts().len()), theme.get("muted")),
    ];
    if !state.snapshot.invalid.is_empty() {
        spans.push(Span::styled(format!("· ⚠ {} invalid ", state.snapshot.invalid.len()), theme.get("invalid")));
    }
    if state.read_only {
        spans.push(Span::styled(" READ-ONLY ", theme.get("warn")));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn tabs_line(state: &State, theme: &Theme) -> Line<'static> {
    let mut spans = Vec::new();
    for (i, pane) in Pane::ALL.iter().enumerate() {
        let label = format!(" {} {} ({}) ", i + 1, pane.title(), state.len(*pane));
        let style = if *pane == state.pane { theme.get("selection") } else { theme.get("muted") };
        spans.push(Span::styled(label, style));
    }
    if !state.filter.is_empty() || matches!(state.mode, Mode::Input { purpose: InputPurpose::Filter, .. }) {
        spans.push(Span::styled(format!(" /{} ", inert(&state.filter, 40)), theme.get("accent")));
    }
    Line::from(spans)
}

/// First visible row so that `selected` is on screen in a window of `height` rows.
fn window(selected: usize, len: usize, height: usize) -> (usize, usize) {
    if height == 0 || len == 0 {
        return (0, 0);
    }
    let offset = selected.saturating_sub(height - 1);
    (offset, (offset + height).min(len))
}

fn render_list(state: &State, theme: &Theme, frame: &mut Frame<'_>, area: Rect) {
    // The selection stays on the packet under review when newer ones arrive above it, so rows
    // hidden above or below the window are always announced.
    let rows_h = area.height.saturating_sub(3) as usize;
    let sel = state.selection(state.pane);
    let len = state.len(state.pane);
    let (from, to) = window(sel, len, rows_h);
    let mut block = Block::default()
        .borders(Borders::ALL)
        .border_style(if state.zoomed { theme.get("border") } else { theme.get("border_focus") })
        .title(tabs_line(state, theme));
    if from > 0 {
        block =
            block.title_top(Line::from(Span::styled(format!(" ↑ {from} newer "), theme.get("warn"))).right_aligned());
    }
    if to < len {
        block = block.title_bottom(
            Line::from(Span::styled(format!(" ↓ {} more ", len - to), theme.get("muted"))).right_aligned(),
        );
    }
    let inner = block.inner(area);
    frame.render_widget(block, area);
    // The fixed columns take 63 cells with spacing; show summaries when at least 10 more fit.
    let wide = inner.width >= 74;
    let (header, widths, rows): (Vec<&str>, Vec<Constraint>, Vec<Row<'_>>) = match state.pane {
        Pane::Pending => {
            let rows = state.pending()[from..to]
                .iter()
                .map(|e| {
                    let p = &e.packet;
                    let (g, w) = state_label(p.state);
                    let mut cells = vec![
                        Cell::from(clock::human_age(state.now - e.created())),
                        Cell::from(inert(&p.agent, 24)),
                        Cell::from(inert(&p.action_class, 32)),
                        Cell::from(p.risk.clone().unwrap_or_else(|| "?".into()))
                            .style(risk_style(theme, p.risk.as_deref())),
                        Cell::from(format!("{g} {w}")).style(theme.get("pending")),
                    ];
                    if wide {
                        cells.push(Cell::from(inert(&p.summary, 200)));
                    }
                    Row::new(cells)
                })
                .collect();
            let mut widths = vec![
                Constraint::Length(4),
                Constraint::Length(14),
                Constraint::Length(20),
                Constraint::Length(8),
                Constraint::Length(12),
            ];
            let mut header = vec!["AGE", "AGENT", "ACTION CLASS", "RISK", "STATE"];
            if wide {
                widths.push(Constraint::Min(10));
                header.push("SUMMARY");
            }
            (header, widths, rows)
        }
        Pane::Decided => {
            let rows = state.decided()[from..to]
                .iter()
                .map(|r| {
                    let (g, w, role) = verdict_label(r.decision.verdict);
                    let age = clock::unix_seconds(&r.decision.decided_at)
                        .map_or("?".into(), |t| clock::human_age(state.now - t));
                    let p = r.packet.as_deref();
                    Row::new(vec![
                        Cell::from(age),
                        Cell::from(format!("{g} {w}")).style(theme.get(role)),
                        Cell::from(inert(&r.id, 40)),
                        Cell::from(inert(p.map_or("?", |p| &p.agent), 24)),
                        Cell::from(inert(p.map_or("?", |p| &p.action_class), 32)),
                        Cell::from(inert(&r.decision.principal, 24)),
                    ])
                })
                .collect();
            (
                vec!["AGE", "DECISION", "PACKET", "AGENT", "ACTION CLASS", "BY"],
                vec![
                    Constraint::Length(4),
                    Constraint::Length(10),
                    Constraint::Min(12),
                    Constraint::Length(14),
                    Constraint::Length(20),
                    Constraint::Length(10),
                ],
                rows,
            )
        }
        Pane::Posteriors => {
            let bar_w = if inner.width >= 100 { 24 } else { 12 };
            let rows = state.posteriors()[from..to]
                .iter()
                .map(|p| {
                    let human_only = state.policies.policy(&p.action_class).is_human_only();
                    let ready = match (human_only, p.graduation_ready()) {
                        (true, _) => ("◆ human", "muted"),
                        (false, true) => ("✓ ready", "ok"),
                        (false, false) => ("· not yet", "muted"),
                    };
                    let more = match p.to_graduate {
                        Some(0) => "—".to_owned(),
                        Some(n) => format!("+{n}"),
                        None => "never".to_owned(),
                    };
                    Row::new(vec![
                        Cell::from(inert(&p.action_class, 32)),
                        Cell::from(interval_bar(theme, p.mean, p.ci_low, p.ci_high, bar_w)),
                        Cell::from(format!("{:.2} [{:.2}–{:.2}]", p.mean, p.ci_low, p.ci_high)),
                        Cell::from(format!("{}", p.samples)),
                        Cell::from(p.tier.as_str()).style(tier_style(theme, p.tier)),
                        Cell::from(ready.0).style(theme.get(ready.1)),
                        Cell::from(more),
                    ])
                })
                .collect();
            (
                vec!["ACTION CLASS", "95% INTERVAL", "MEAN [LOW–HIGH]", "N", "TIER", "GRADUATION", "TO GO"],
                vec![
                    Constraint::Length(20),
                    Constraint::Length(bar_w as u16),
                    Constraint::Length(17),
                    Constraint::Length(4),
                    Constraint::Length(11),
                    Constraint::Length(10),
                    Constraint::Length(6),
                ],
                rows,
            )
        }
        Pane::Invalid => {
            let rows = state.invalid()[from..to]
                .iter()
                .map(|f| {
                    let kind = match f.kind {
                        crate::spool::FileKind::Packet => "packet",
                        crate::spool::FileKind::Receipt => "receipt",
                    };
                    Row::new(vec![
                        Cell::from(format!("⚠ {kind}")).style(theme.get("invalid")),
                        Cell::from(inert(&f.name, 60)),
                        Cell::from(inert(&f.reason.to_string(), 300)),
                    ])
                })
                .collect();
            (
                vec!["KIND", "FILE", "REASON"],
                vec![Constraint::Length(9), Constraint::Length(28), Constraint::Min(10)],
                rows,
            )
        }
    };
    if state.len(state.pane) == 0 {
        let msg = match (state.pane, state.filter.is_empty()) {
            (_, false) => "nothing matches the filter (esc clears it)",
            (Pane::Pending, true) => "no pending packets: agents publish them in packets/",
            (Pane::Decided, true) => "no decisions yet",
            (Pane::Invalid, true) => "no invalid files",
            (Pane::Posteriors, true) => "no action classes",
        };
        frame.render_widget(Paragraph::new(msg).style(theme.get("muted")), inner);
        return;
    }
    let rows: Vec<Row<'_>> = rows
        .into_iter()
        .enumerate()
        .map(|(i, r)| if from + i == sel { r.style(theme.get("selection")) } else { r })
        .collect();
    let table = Table::new(rows, widths).header(Row::new(header).style(theme.get("header"))).column_spacing(1);
    frame.render_widget(table, inner);
}

/// The posterior mean as a marker on a band for the 95% interval, `width` cells over [0, 1]:
/// `·` outside the interval, `━` inside it, `●` at the mean (shape, not only colour).
fn interval_bar(theme: &Theme, mean: f64, low: f64, high: f64, width: usize) -> Line<'static> {
    let cell = |x: f64| ((x.clamp(0.0, 1.0) * width as f64).floor() as usize).min(width.saturating_sub(1));
    let (lo, hi, m) = (cell(low), cell(high), cell(mean));
    let spans: Vec<Span<'static>> = (0..width)
        .map(|i| {
            if i == m {
                Span::styled("●", theme.get("title"))
            } else if (lo..=hi).contains(&i) {
                Span::styled("━", theme.get("accent"))
            } else {
                Span::styled("·", theme.get("muted"))
            }
        })
        .collect();
    Line::from(spans)
}

fn tier_style(theme: &Theme, tier: crate::graduation::Tier) -> Style {
    match tier {
        crate::graduation::Tier::Review => theme.get("warn"),
        crate::graduation::Tier::Gated => theme.get("muted"),
        crate::graduation::Tier::Supervised => theme.get("pending"),
        crate::graduation::Tier::AutoCapped => theme.get("ok"),
    }
}

/// Evidence rows as lines: date, label, provenance, weight, where from. The last `max` rows.
fn evidence_lines(state: &State, theme: &Theme, class: &str, max: usize) -> Vec<Line<'static>> {
    let rows: Vec<&crate::graduation::EvidenceRow> = state.evidence_for(class).collect();
    let mut out = vec![Line::from(Span::styled(
        format!("evidence rows for {} ({})", inert(class, 60), rows.len()),
        theme.get("header"),
    ))];
    if rows.is_empty() {
        out.push(Line::from(Span::styled(
            "  none yet: approvals, refusals and receipts become evidence",
            theme.get("muted"),
        )));
    }
    let skip = rows.len().saturating_sub(max);
    if skip > 0 {
        out.push(Line::from(Span::styled(format!("  … {skip} earlier rows (enter shows all)"), theme.get("muted"))));
    }
    for r in rows.iter().skip(skip) {
        let role = if r.evidence_weight > 0.0 {
            "approve"
        } else if r.evidence_weight < 0.0 {
            "refuse"
        } else {
            "muted"
        };
        out.push(Line::from(vec![
            Span::styled(format!("  {} ", r.date.as_deref().unwrap_or("????-??-??")), theme.get("muted")),
            Span::styled(format!("{:<14}", inert(&r.label, 14)), theme.get(role)),
            Span::raw(format!(
                " {:<14} {:>+7.4}  {}",
                r.source_type.map_or("(unknown)", |t| t.as_str()),
                r.evidence_weight,
                inert(r.source.as_deref().unwrap_or(""), 12)
            )),
        ]));
    }
    out
}

/// The gate's decision on a packet: state, mode, reason, graduationPath, constraints.
fn gate_lines(theme: &Theme, d: &crate::graduation::Decision, width: usize) -> Vec<Line<'static>> {
    let (g, w) = state_label(Some(d.status));
    let style = if d.allowed { theme.get("ok") } else { theme.get("pending") };
    let mut out = vec![
        Line::from(Span::styled("warrant's gate (Trust Graduation)", theme.get("header"))),
        kv(
            theme,
            "decision",
            Span::styled(format!("{g} {} · mode {} · tier {} (level {})", w, d.mode, d.tier, d.autonomy_level), style),
        ),
        kv(theme, "because", inert(&d.reason, width)),
    ];
    if let Some(gp) = &d.graduation_path {
        out.push(kv(
            theme,
            "path",
            format!(
                "level {} of {} needed · next: {} · fallback: {}",
                gp.current,
                gp.needed,
                gp.next_best_action.as_str(),
                gp.safe_fallback_action_class
            ),
        ));
        out.push(kv(theme, "needs", gp.required_evidence.join("; ")));
    }
    if !d.constraints.is_empty() {
        out.push(kv(theme, "limits", inert(&serde_json::Value::Object(d.constraints.clone()).to_string(), width)));
    }
    out.into_iter().map(own_line).collect()
}

fn posterior_lines(state: &State, theme: &Theme, p: &super::app::ClassPosterior, zoomed: bool) -> Vec<Line<'static>> {
    let policy = state.policies.policy(&p.action_class);
    let ready = if p.graduation_ready() {
        "✓ graduation ready (a recommendation: the gate still decides)"
    } else {
        "· not ready"
    };
    let more = match p.to_graduate {
        Some(0) => "none".to_owned(),
        Some(n) => format!("{n} more receipt-grade approvals (0.85 each), if nothing else changes"),
        None => "no number of approvals: a recent trust violation must be cleared first".to_owned(),
    };
    let mut lines = vec![
        Line::from(Span::styled(inert(&p.action_class, 80), theme.get("title"))),
        kv(
            theme,
            "type",
            format!(
                "{} · risk {} · minimum level {}{}",
                policy.kind,
                policy.risk.as_str(),
                policy.minimum_level,
                if policy.approval_required() { " · always needs approval" } else { "" }
            ),
        ),
        kv(theme, "posterior", format!("Beta(α {:.4}, β {:.4}) from prior Beta(2, 2)", p.alpha, p.beta)),
        kv(theme, "mean", format!("{:.4}", p.mean)),
        kv(
            theme,
            "95% CI",
            format!("[{:.4}, {:.4}] width {:.4} (exact, equal-tailed)", p.ci_low, p.ci_high, p.ci_width()),
        ),
        Line::from(
            std::iter::once(Span::raw(" ".repeat(12)))
                .chain(interval_bar(theme, p.mean, p.ci_low, p.ci_high, 40).spans)
                .collect::<Vec<_>>(),
        ),
        kv(theme, "samples", format!("{} (+{} −{} ·{} neutral)", p.samples, p.positive, p.negative, p.neutral)),
        kv(
            theme,
            "quality",
            format!(
                "strong {} · partial {} · ambiguous {} · weak {} · neutral {}",
                p.quality.strong, p.quality.partial, p.quality.ambiguous, p.quality.weak, p.quality.neutral
            ),
        ),
        kv(theme, "tier", Span::styled(p.tier.as_str().to_owned(), tier_style(theme, p.tier))),
        kv(
            theme,
            "threshold",
            format!("ci_low ≥ {:.2} and samples ≥ {}", p.threshold.ci_low_min, p.threshold.samples_min),
        ),
        kv(
            theme,
            "graduation",
            Span::styled(ready, if p.graduation_ready() { theme.get("ok") } else { theme.get("muted") }),
        ),
        kv(theme, "to go", more),
    ];
    if p.needs_more_evidence() {
        lines.push(kv(theme, "note", "needs more evidence (fewer than 10 samples or an interval wider than 0.35)"));
    }
    if p.trust_violation_recent {
        lines
            .push(Line::from(Span::styled("⚠ a trust violation in the last 30 days forces review", theme.get("warn"))));
    }
    lines.push(Line::from(""));
    lines.extend(evidence_lines(state, theme, &p.action_class, if zoomed { usize::MAX } else { 12 }));
    lines.into_iter().map(own_line).collect()
}

fn kv<'a>(theme: &Theme, k: &'a str, v: impl Into<Span<'a>>) -> Line<'a> {
    Line::from(vec![Span::styled(format!("{k:>10}  "), theme.get("muted")), v.into()])
}

/// A JSON value as indented, inert text lines.
fn json_lines(v: &Value, width: usize, max_lines: usize) -> Vec<String> {
    let pretty = serde_json::to_string_pretty(v).unwrap_or_default();
    let mut out = Vec::new();
    for line in pretty.lines() {
        if out.len() >= max_lines {
            out.push("…".into());
            break;
        }
        out.push(inert(line, width.max(8)));
    }
    out
}

/// Strings of a JSON object as `key: value` lines, multi-line strings split and made inert;
/// other values as compact JSON.
fn field_lines(v: &Value, width: usize, max_lines: usize) -> Vec<String> {
    let Value::Object(map) = v else { return json_lines(v, width, max_lines) };
    let mut out = Vec::new();
    for (k, val) in map {
        match val {
            Value::String(s) => {
                let mut parts = s.split('\n');
                out.push(format!("{}: {}", inert(k, width), inert(parts.next().unwrap_or(""), width)));
                for more in parts {
                    out.push(format!("  {}", inert(more, width)));
                }
            }
            other => out.push(format!("{}: {}", inert(k, width), inert(&other.to_string(), width))),
        }
        if out.len() >= max_lines {
            out.truncate(max_lines);
            out.push("…".into());
            break;
        }
    }
    out
}

fn evidence_summary(v: &Value) -> String {
    match v {
        Value::Array(rows) => {
            let mut by: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
            for r in rows {
                let label = r.get("label").or_else(|| r.get("type")).and_then(Value::as_str).unwrap_or("?");
                *by.entry(label.to_owned()).or_default() += 1;
            }
            let parts: Vec<String> = by.iter().map(|(k, n)| format!("{n} {k}")).collect();
            format!("{} rows: {}", rows.len(), parts.join(", "))
        }
        Value::Object(m) => {
            let keys = ["approvals", "edits", "rejections", "held", "receipts", "trustIssues", "positive", "negative"];
            let parts: Vec<String> =
                keys.iter().filter_map(|k| m.get(*k).and_then(Value::as_u64).map(|n| format!("{k} {n}"))).collect();
            if parts.is_empty() { "summary object".into() } else { parts.join(" · ") }
        }
        Value::Null => "none supplied".into(),
        _ => "unrecognised".into(),
    }
}

fn packet_lines<'a>(state: &State, theme: &Theme, p: &'a Packet, width: usize, zoomed: bool) -> Vec<Line<'a>> {
    let (g, w) = state_label(p.state);
    let mut lines = vec![
        Line::from(Span::styled(inert(&p.summary, width), theme.get("title"))),
        kv(theme, "packet", inert(&p.id, width)),
        kv(theme, "agent", inert(&p.agent, width)),
        kv(
            theme,
            "class",
            format!(
                "{}{}",
                inert(&p.action_class, 60),
                crate::registry::lookup(&p.action_class)
                    .map_or(" (not a canonical class)".into(), |c| format!(" ({})", c.kind))
            ),
        ),
        kv(
            theme,
            "risk",
            Span::styled(p.risk.clone().unwrap_or_else(|| "unknown".into()), risk_style(theme, p.risk.as_deref())),
        ),
        kv(theme, "state", Span::styled(format!("{g} {w}"), theme.get("pending"))),
    ];
    if let Some(r) = &p.reason {
        lines.push(kv(theme, "reason", inert(r, width)));
    }
    if let Some(c) = &p.created_at {
        let age =
            clock::unix_seconds(c).map_or(String::new(), |t| format!(" ({} ago)", clock::human_age(state.now - t)));
        lines.push(kv(theme, "created", format!("{}{age}", inert(c, 40))));
    }
    if let Some(e) = &p.expires_at {
        let expired = clock::unix_seconds(e).is_none_or(|t| t <= state.now);
        if expired {
            lines.push(kv(
                theme,
                "expires",
                Span::styled(format!("{} ⚠ EXPIRED: refuse only", inert(e, 40)), theme.get("warn")),
            ));
        } else {
            lines.push(kv(theme, "expires", inert(e, 40)));
        }
    }
    if let Some(t) = state.changed_at(&p.id) {
        lines.push(Line::from(Span::styled(
            format!(
                "⚠ CHANGED {} ago: the agent rewrote this packet after it first appeared",
                clock::human_age(state.now - t)
            ),
            theme.get("error"),
        )));
    }
    let hash = if p.content_hash.len() <= width || zoomed {
        p.content_hash.clone()
    } else {
        format!("{}…", &p.content_hash[..width.saturating_sub(1).clamp(16, p.content_hash.len())])
    };
    lines.push(kv(theme, "hash", Span::styled(hash, theme.get("accent"))));
    lines.push(kv(
        theme,
        "evidence",
        format!("{} · {} receipts for this class", evidence_summary(&p.evidence), state.receipts_for(&p.action_class)),
    ));
    if let Some(d) = state.decisions.get(&p.id) {
        let (g, w, role) = verdict_label(d.verdict);
        lines.push(kv(
            theme,
            "decision",
            Span::styled(
                format!("{g} {w} by {} at {}", inert(&d.principal, 30), inert(&d.decided_at, 30)),
                theme.get(role),
            ),
        ));
        if let Some(r) = &d.reason {
            lines.push(kv(theme, "because", inert(r, width)));
        }
        lines.push(kv(theme, "record", format!("#{} {}", d.chain_index, d.entry_hash)));
        if d.packet_hash != p.content_hash {
            lines.push(Line::from(Span::styled(
                "⚠ the packet file changed after this decision was signed",
                theme.get("error"),
            )));
        }
    }
    // Zoomed, nothing is cut: every field of the packet, every character, wrapped and scrolled.
    let (width, budget) = if zoomed { (usize::MAX, usize::MAX) } else { (width, 60) };
    lines.push(Line::from(Span::styled("proposed action", theme.get("header"))));
    lines.extend(field_lines(&p.proposed_action, width, budget).into_iter().map(|l| Line::from(format!("  {l}"))));
    if !p.context.is_null() && p.context != p.proposed_action {
        lines.push(Line::from(Span::styled("context", theme.get("header"))));
        lines.extend(field_lines(&p.context, width, budget).into_iter().map(|l| Line::from(format!("  {l}"))));
    }
    if let Some(d) = state.gate_decision(&p.id) {
        lines.extend(gate_lines(theme, d, width));
        let class = state.policies.normalize(&p.action_class);
        lines.extend(evidence_lines(state, theme, &class, if zoomed { usize::MAX } else { 5 }));
    }
    let others = other_fields(p);
    if !others.is_empty() {
        lines.push(Line::from(Span::styled("other fields", theme.get("header"))));
        let rest = Value::Object(others);
        lines.extend(field_lines(&rest, width, budget).into_iter().map(|l| Line::from(format!("  {l}"))));
    }
    lines
}

/// Top-level fields of a packet that the sections above do not show: nothing an agent writes
/// is hidden from the principal.
fn other_fields(p: &Packet) -> serde_json::Map<String, Value> {
    const SHOWN: [&str; 24] = [
        "type",
        "packet_id",
        "agent",
        "requested_by",
        "summary",
        "action_class",
        "proposed_action",
        "context",
        "evidence",
        "created_at",
        "expires_at",
        "trace_id",
        "external_actions",
        "risk",
        "risk_class",
        "protocol",
        "packetId",
        "requestedBy",
        "actionClass",
        "riskClass",
        "requestedAction",
        "createdAt",
        "expiresAt",
        "decisionId",
    ];
    let Value::Object(map) = &p.raw else { return serde_json::Map::new() };
    let mut out: serde_json::Map<String, Value> =
        map.iter().filter(|(k, _)| !SHOWN.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect();
    // The portable decision's status and reason are shown above; keep whatever else it carries.
    if let Some(Value::Object(d)) = out.get_mut("decision") {
        d.remove("status");
        d.remove("reason");
        if d.get("action_class").and_then(Value::as_str) == Some(p.action_class.as_str()) {
            d.remove("action_class");
        }
        if d.is_empty() {
            out.remove("decision");
        }
    }
    out
}

fn render_detail(state: &State, theme: &Theme, frame: &mut Frame<'_>, area: Rect, zoomed: bool) {
    let title =
        if zoomed { " Packet: the whole file (j/k scroll · esc back) " } else { " Packet (enter: read it whole) " };
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(if zoomed { theme.get("border_focus") } else { theme.get("border") })
        .title(Span::styled(title, theme.get("title")));
    let inner = block.inner(area);
    let width = inner.width.saturating_sub(14) as usize;
    let lines: Vec<Line<'_>> = match state.pane {
        Pane::Invalid => match state.invalid().get(state.selection(Pane::Invalid)) {
            Some(f) => vec![
                kv(theme, "file", inert(&f.name, width)),
                kv(theme, "in", if f.kind == crate::spool::FileKind::Packet { "packets/" } else { "receipts/" }),
                kv(theme, "problem", Span::styled(inert(&f.reason.to_string(), 1000), theme.get("invalid"))),
                Line::from(""),
                Line::from(Span::styled(
                    "The file is left as the agent wrote it; fix or remove it there.",
                    theme.get("muted"),
                )),
            ],
            None => vec![],
        },
        Pane::Posteriors => match state.selected_posterior() {
            Some(p) => posterior_lines(state, theme, p, zoomed),
            None => vec![],
        },
        _ => match state.selected_packet() {
            Some(p) => packet_lines(state, theme, &p, width, zoomed).into_iter().map(own_line).collect(),
            None => match state.decided().get(state.selection(Pane::Decided)) {
                Some(r) if state.pane == Pane::Decided => {
                    let (g, w, role) = verdict_label(r.decision.verdict);
                    vec![
                        kv(theme, "packet", inert(&r.id, width)),
                        kv(
                            theme,
                            "decision",
                            Span::styled(format!("{g} {w} by {}", inert(&r.decision.principal, 30)), theme.get(role)),
                        ),
                        kv(theme, "record", format!("#{} {}", r.decision.chain_index, r.decision.entry_hash)),
                        Line::from(Span::styled("the packet file is no longer in the spool", theme.get("muted"))),
                    ]
                }
                _ => vec![],
            },
        },
    };
    let para = Paragraph::new(Text::from(lines)).wrap(Wrap { trim: false });
    let total = para.line_count(inner.width);
    let height = usize::from(inner.height);
    let max_scroll = total.saturating_sub(height);
    let scroll = if zoomed { usize::from(state.detail_scroll).min(max_scroll) } else { 0 };
    let mut block = block;
    if scroll > 0 {
        block = block
            .title_top(Line::from(Span::styled(format!(" ↑ {scroll} lines "), theme.get("muted"))).right_aligned());
    }
    let below = total.saturating_sub(scroll + height);
    if below > 0 {
        let hint =
            if zoomed { format!(" ↓ {below} more lines ") } else { format!(" ↓ {below} more lines: enter ") };
        block = block.title_bottom(Line::from(Span::styled(hint, theme.get("warn"))).right_aligned());
    }
    frame.render_widget(para.block(block).scroll((u16::try_from(scroll).unwrap_or(u16::MAX), 0)), area);
}

fn own_line(l: Line<'_>) -> Line<'static> {
    Line::from(l.spans.into_iter().map(|s| Span::styled(s.content.into_owned(), s.style)).collect::<Vec<_>>())
}

fn render_status(state: &State, theme: &Theme, frame: &mut Frame<'_>, area: Rect) {
    let chain = match &state.chain {
        ChainState::Broken { first, .. } => Span::styled(
            format!(
                " ✗ CHAIN BROKEN: record {} [{}] ",
                first.index.map_or("-".into(), |i| i.to_string()),
                first.check.as_str()
            ),
            theme.get("error"),
        ),
        ChainState::Valid { total, .. } => Span::styled(format!(" ✓ chain ok · {total} records "), theme.get("ok")),
        ChainState::Unknown => Span::styled(" … verifying chain ", theme.get("muted")),
    };
    let key = match (&state.fingerprint, state.read_only) {
        (_, true) => Span::styled(" read-only ", theme.get("warn")),
        (Some(fp), false) => Span::styled(
            format!(" key {} {} ", inert(state.principal.as_deref().unwrap_or(""), 20), fp.get(..19).unwrap_or(fp)),
            theme.get("accent"),
        ),
        (None, false) => Span::styled(" no key ", theme.get("warn")),
    };
    let spool = Span::styled(format!(" {} ", inert(&state.spool_path, 60)), theme.get("muted"));
    frame.render_widget(Paragraph::new(Line::from(vec![chain, key, spool])), area);
}

fn render_hints(state: &State, theme: &Theme, frame: &mut Frame<'_>, area: Rect) {
    if let Some(f) = &state.flash {
        let style = if f.error { theme.get("error") } else { theme.get("accent") };
        frame.render_widget(Paragraph::new(Span::styled(format!(" {} ", inert(&f.text, 400)), style)), area);
        return;
    }
    let km = &state.keymap;
    let (mode, commands): (&str, &[&str]) = match &state.mode {
        Mode::Input { .. } => ("input", &["submit", "cancel"]),
        Mode::Confirm(_) => ("confirm", &["confirm", "cancel", "toggle"]),
        Mode::Help => ("help", &["close"]),
        Mode::ChainAlert => ("help", &[]),
        Mode::Normal if state.read_only => ("normal", &["down", "up", "open", "next_pane", "filter", "help", "quit"]),
        Mode::Normal => ("normal", &["down", "up", "open", "approve", "refuse", "next_pane", "filter", "help", "quit"]),
    };
    let mut spans = Vec::new();
    if state.zoomed && state.mode == Mode::Normal {
        let k = |c: &str| km.first_key("normal", c).unwrap_or_default();
        for (keys, desc) in [
            (format!("{}/{}", k("down"), k("up")), "scroll"),
            (format!("{}/{}", k("top"), k("bottom")), "top/end"),
            (k("back"), "back"),
            (k("approve"), "approve"),
            (k("refuse"), "refuse"),
            (k("help"), "help"),
        ] {
            spans.push(Span::styled(format!(" {keys}"), theme.get("key_hint")));
            spans.push(Span::styled(format!(" {desc} "), theme.get("muted")));
        }
        frame.render_widget(Paragraph::new(Line::from(spans)), area);
        return;
    }
    if let Mode::Input { purpose: InputPurpose::Filter, text } = &state.mode {
        spans.push(Span::styled(format!(" filter: {}▏ ", inert(text, 60)), theme.get("accent")));
    }
    for c in commands {
        let Some(key) = km.first_key(mode, c) else { continue };
        let desc = km.bindings(mode).iter().find(|b| b.command == *c).map_or("", |b| b.desc.as_str());
        spans.push(Span::styled(format!(" {key}"), theme.get("key_hint")));
        spans.push(Span::styled(format!(" {desc} "), theme.get("muted")));
    }
    if matches!(state.mode, Mode::ChainAlert) {
        spans.push(Span::styled(" any key: acknowledge ", theme.get("key_hint")));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect { x: area.x + (area.width - w) / 2, y: area.y + (area.height - h) / 2, width: w, height: h }
}

fn render_help(state: &State, theme: &Theme, frame: &mut Frame<'_>, area: Rect) {
    // Sections flow into as many columns as the height requires, so nothing is cut off.
    let mut lines: Vec<Line<'_>> = Vec::new();
    for (mode, title) in [("normal", "Lists"), ("confirm", "Confirmation"), ("input", "Text line"), ("help", "Help")] {
        if !lines.is_empty() {
            lines.push(Line::from(""));
        }
        lines.push(Line::from(Span::styled(title, theme.get("header"))));
        for b in state.keymap.bindings(mode) {
            let keys: Vec<String> = b.keys.iter().map(super::keymap::Key::label).collect();
            lines.push(Line::from(vec![
                Span::styled(format!(" {:<15} ", keys.join(" ")), theme.get("key_hint")),
                Span::raw(b.desc.clone()),
            ]));
        }
    }
    const COLUMN: u16 = 38;
    let height = area.height.saturating_sub(4).max(1) as usize;
    let columns = lines.len().div_ceil(height).max(1) as u16;
    let rect = centered(area, (COLUMN * columns + 2).min(area.width), (lines.len().min(height) + 2) as u16);
    frame.render_widget(Clear, rect);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.get("border_focus"))
        .title(" Help: keys (esc closes) ");
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    let areas = Layout::horizontal(vec![Constraint::Length(COLUMN); columns as usize]).split(inner);
    for (chunk, col) in lines.chunks(height).zip(areas.iter()) {
        frame.render_widget(Paragraph::new(chunk.to_vec()), *col);
    }
}

fn render_confirm(state: &State, theme: &Theme, frame: &mut Frame<'_>, area: Rect, c: &super::app::Confirm) {
    let (g, _, role) = verdict_label(c.verdict);
    let p = &c.packet;
    let mut lines = vec![
        Line::from(Span::styled(
            format!(
                "{g} Sign {} this packet?",
                if c.verdict == Verdict::Approve { "an APPROVAL of" } else { "a REFUSAL of" }
            ),
            theme.get(role),
        )),
        Line::from(""),
        kv(theme, "packet", inert(&p.id, 60)),
        kv(theme, "agent", inert(&p.agent, 40)),
        kv(theme, "class", Span::styled(inert(&p.action_class, 60), theme.get("title"))),
        kv(theme, "payload", "SHA-256 of the packet's canonical JSON:"),
        Line::from(Span::styled(format!("  {}", p.content_hash), theme.get("accent"))),
        kv(theme, "key", state.fingerprint.clone().unwrap_or_default()),
        kv(theme, "principal", inert(state.principal.as_deref().unwrap_or(""), 40)),
    ];
    if let Some(r) = &c.reason {
        lines.push(kv(theme, "reason", inert(r, 60)));
    }
    // What is being signed, in brief: the first fields of the proposed action.
    let preview = field_lines(&p.proposed_action, usize::from(area.width.saturating_sub(20)).clamp(20, 80), 6);
    lines.push(kv(theme, "action", ""));
    lines.extend(preview.into_iter().map(|l| Line::from(format!("    {l}"))));
    lines.push(Line::from(Span::styled("    (the whole packet: esc, then enter)", theme.get("muted"))));
    lines.push(Line::from(""));
    let button = |label: &str, b: Button| {
        Span::styled(format!("[ {label} ]"), if c.focus == b { theme.get("button_focus") } else { theme.get("button") })
    };
    lines.push(
        Line::from(vec![
            button("Cancel", Button::Cancel),
            Span::raw("   "),
            button(if c.verdict == Verdict::Approve { "Sign approval" } else { "Sign refusal" }, Button::Sign),
        ])
        .alignment(Alignment::Center),
    );
    lines.push(
        Line::from(Span::styled("y sign · n/esc cancel · tab move · enter press", theme.get("muted")))
            .alignment(Alignment::Center),
    );
    let rect = centered(area, 96, lines.len() as u16 + 2);
    frame.render_widget(Clear, rect);
    frame.render_widget(
        Paragraph::new(lines).block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(theme.get(role))
                .title(Span::styled(format!(" Confirm: {} ", c.verdict.as_str()), theme.get(role))),
        ),
        rect,
    );
}

fn render_reason(theme: &Theme, frame: &mut Frame<'_>, area: Rect, p: &Packet, text: &str) {
    let lines = vec![
        kv(theme, "refuse", inert(&p.id, 60)),
        kv(theme, "class", inert(&p.action_class, 60)),
        Line::from(""),
        Line::from(vec![
            Span::styled("reason: ", theme.get("header")),
            Span::raw(inert(text, 200)),
            Span::styled("▏", theme.get("accent")),
        ]),
        Line::from(""),
        Line::from(Span::styled("enter continue · esc cancel", theme.get("muted"))),
    ];
    let rect = centered(area, 80, lines.len() as u16 + 2);
    frame.render_widget(Clear, rect);
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(Block::default().borders(Borders::ALL).border_style(theme.get("refuse")).title(" Refuse: why? ")),
        rect,
    );
}

fn render_chain_alert(state: &State, theme: &Theme, frame: &mut Frame<'_>, area: Rect) {
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
    frame.render_widget(Clear, rect);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_keeps_the_selection_visible() {
        assert_eq!(window(0, 100, 10), (0, 10));
        assert_eq!(window(15, 100, 10), (6, 16));
        assert_eq!(window(99, 100, 10), (90, 100));
        assert_eq!(window(3, 5, 10), (0, 5));
        assert_eq!(window(0, 0, 10), (0, 0));
    }
}
