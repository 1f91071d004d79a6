//! Rendering: pure functions from `&State` to a frame. Nothing here changes state.
//!
//! Text that comes from packets (summaries, bodies, recipients, reasons, file names) goes through
//! [`inert`] first, so control characters, escape sequences and bidi overrides are shown as
//! visible placeholders and never reach the terminal.

use super::app::{Button, ChainState, InputPurpose, Mode, Pane, State, chain_line};
use super::filter::SortKey;
use super::theme::Theme;
use crate::monitor::AgentSummary;
use crate::protocol::clock;
use crate::protocol::control::{ControlInput, ControlKind};
use crate::protocol::decision::Verdict;
use crate::protocol::graduation::gate::AgentStanding;
use crate::protocol::packet::{DecisionState, Packet};
use crate::protocol::rings::Ring;
pub use crate::protocol::text::inert;
use crate::protocol::tiers::{NotebookTrust, TierAction, ToolTier};
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

/// Glyph and word for a decision state (never colour alone). `allowed` and
/// `allowed_with_constraints` read as the gate's opinion (`○ gate: allow`), never as a decision.
#[must_use]
pub fn state_label(s: Option<DecisionState>) -> (&'static str, &'static str) {
    match s {
        // A state is what the gate says, not a decision: a waiting packet the gate would let run
        // on its own is never shown as `✓ allowed`, which reads as an approval (issue 16).
        Some(DecisionState::Allowed) => ("○", "gate: allow"),
        Some(DecisionState::AllowedWithConstraints) => ("≈", "gate: limits"),
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

/// [`verdict_label`] of a chain decision; a system refusal (a timeout) is `⏱ TIMEOUT`.
fn decision_label(d: &crate::store::spool::ChainDecision) -> (&'static str, &'static str, &'static str) {
    match d.system {
        Some(crate::protocol::decision::SystemCause::Timeout) => ("⏱", "TIMEOUT", "refuse"),
        None => verdict_label(d.verdict),
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
    if state.pane == Pane::Matrices {
        render_matrices(state, theme, frame, body);
    } else if state.pane == Pane::Agents {
        render_agents(state, theme, frame, body);
    } else if state.pane == Pane::Grants {
        super::grants::render(state, theme, frame, body);
    } else if state.zoomed {
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
        Mode::Log => render_log(state, theme, frame, area),
        Mode::Input { purpose: InputPurpose::RefuseReason(p), text } => render_reason(theme, frame, area, p, text),
        Mode::Input { purpose: InputPurpose::RefuseBatchReason(ps), text } => {
            render_batch_reason(theme, frame, area, ps, text);
        }
        Mode::ControlConfirm(c) => render_control_confirm(state, theme, frame, area, &c.input, Some(c.focus), None),
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
            super::grants::render_revoke_reason(state, theme, frame, area, grant, text);
        }
        Mode::Input { purpose: InputPurpose::Filter | InputPurpose::Command, .. } | Mode::Normal => {}
    }
}

fn render_title(state: &State, theme: &Theme, frame: &mut Frame<'_>, area: Rect) {
    // The spool's totals, whatever the filter; the filter's own count follows, said as such.
    let receipts = state.receipts().len();
    let mut spans = vec![
        Span::styled(" warrant ", theme.get("title")),
        Span::styled(format!(" {} pending ", state.pending_total()), theme.get("pending")),
        Span::styled(format!("· {} decided ", state.decisions.len()), theme.get("muted")),
        Span::styled(format!("· {receipts} {} ", plural(receipts, "receipt")), theme.get("muted")),
    ];
    if !state.snapshot.invalid.is_empty() {
        spans.push(Span::styled(format!("· ⚠ {} invalid ", state.snapshot.invalid.len()), theme.get("invalid")));
    }
    if !state.filter.is_empty() {
        spans.push(Span::styled(
            format!("· filtered: {} of {} ", state.len(Pane::Pending), state.pending_total()),
            theme.get("accent"),
        ));
    }
    if !state.marked.is_empty() {
        spans.push(Span::styled(format!("· ■ {} selected ", state.marked.len()), theme.get("accent")));
    }
    if state.read_only {
        spans.push(Span::styled(" READ-ONLY ", theme.get("warn")));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// The pane tabs for a block title `width` cells wide: every pane with its count when that fits,
/// else counts only for the packet lists, else none, else short names with the packet lists'
/// counts, else only numbers (the focused pane always shows its name and count).
pub(super) fn tabs_line(state: &State, theme: &Theme, width: u16) -> Line<'static> {
    let filter = (!state.filter.is_empty() || matches!(state.mode, Mode::Input { purpose: InputPurpose::Filter, .. }))
        .then(|| {
            let mark = if state.filter_error.is_some() { "✗ " } else { "" };
            format!(" {mark}/{} ", inert(&state.filter, 40))
        });
    // The pending list's order, when it is not the default (newest first).
    let sort =
        (state.pane == Pane::Pending && state.sort != SortKey::Age).then(|| format!(" sort: {} ", state.sort.as_str()));
    let room = usize::from(width.saturating_sub(2))
        .saturating_sub(filter.as_ref().map_or(0, |f| f.chars().count()))
        .saturating_sub(sort.as_ref().map_or(0, |f| f.chars().count()));
    let labels = |detail: u8| -> Vec<String> {
        Pane::ALL
            .iter()
            .map(|pane| match detail {
                _ if *pane == state.pane => format!(" {} {} ({}) ", pane.number(), pane.title(), state.len(*pane)),
                3 => format!(" {} {} ({}) ", pane.number(), pane.title(), state.len(*pane)),
                2 if matches!(pane, Pane::Pending | Pane::Decided | Pane::Invalid) => {
                    format!(" {} {} ({}) ", pane.number(), pane.title(), state.len(*pane))
                }
                1 | 2 => format!(" {} {} ", pane.number(), pane.title()),
                4 if matches!(pane, Pane::Pending | Pane::Decided | Pane::Invalid) => {
                    format!(" {} {} ({}) ", pane.number(), short_title(*pane), state.len(*pane))
                }
                4 | 5 => format!(" {} {} ", pane.number(), short_title(*pane)),
                _ => format!(" {} ", pane.number()),
            })
            .collect()
    };
    let chosen = [3, 2, 1, 4, 5, 0]
        .into_iter()
        .map(labels)
        .find(|l| l.iter().map(|s| s.chars().count()).sum::<usize>() <= room)
        .unwrap_or_else(|| labels(0));
    let mut spans: Vec<Span<'static>> = Pane::ALL
        .iter()
        .zip(chosen)
        .map(|(pane, label)| {
            Span::styled(label, if *pane == state.pane { theme.get("selection") } else { theme.get("muted") })
        })
        .collect();
    if let Some(f) = sort {
        spans.push(Span::styled(f, theme.get("header")));
    }
    if let Some(f) = filter {
        spans.push(Span::styled(f, theme.get(if state.filter_error.is_some() { "error" } else { "accent" })));
    }
    Line::from(spans)
}

/// A pane's name in four letters or fewer, for narrow tab bars.
fn short_title(pane: Pane) -> &'static str {
    match pane {
        Pane::Pending => "Pend",
        Pane::Decided => "Dec",
        Pane::Invalid => "Inv",
        Pane::Posteriors => "Post",
        Pane::Matrices => "Mat",
        Pane::Agents => "Agt",
        Pane::Grants => "Gr",
        Pane::Audit => "Aud",
    }
}

/// The style of a decision state: never the only signal (glyphs and words go with it).
fn state_style(theme: &Theme, s: Option<DecisionState>) -> Style {
    match s {
        Some(DecisionState::Allowed | DecisionState::AllowedWithConstraints) => theme.get("ok"),
        Some(DecisionState::Blocked) => theme.get("refuse"),
        Some(DecisionState::HumanOnly) => theme.get("warn"),
        _ => theme.get("pending"),
    }
}

/// First visible row so that `selected` is on screen in a window of `height` rows.
pub(super) fn window(selected: usize, len: usize, height: usize) -> (usize, usize) {
    if height == 0 || len == 0 {
        return (0, 0);
    }
    let offset = selected.saturating_sub(height - 1);
    (offset, (offset + height).min(len))
}

/// A column of a list: its header, its cells (already inert), the narrowest it may become (its
/// cells then end in `…`), and when it goes if even that does not fit (higher goes first; 0
/// never goes). A column whose cells are `fixed` keeps its width or goes.
struct Column {
    header: &'static str,
    cells: Vec<Line<'static>>,
    min: usize,
    drop: u8,
    fixed: bool,
}

impl Column {
    fn new(header: &'static str, cells: Vec<Line<'static>>, min: usize, drop: u8) -> Self {
        Self { header, cells, min, drop, fixed: false }
    }

    fn natural(&self) -> usize {
        self.cells.iter().map(Line::width).chain([self.header.chars().count()]).max().unwrap_or(0)
    }
}

/// `line` cut to `width` cells, ending in `…` when anything was cut.
fn cut_line(line: Line<'static>, width: usize) -> Line<'static> {
    use unicode_width::UnicodeWidthChar;
    if line.width() <= width {
        return line;
    }
    let mut used = 0;
    let mut spans = Vec::new();
    for span in line.spans {
        let mut piece = String::new();
        for ch in span.content.chars() {
            let w = ch.width().unwrap_or(0);
            if used + w + 1 > width {
                break;
            }
            piece.push(ch);
            used += w;
        }
        let full = piece.chars().count() == span.content.chars().count();
        spans.push(Span::styled(piece, span.style));
        if !full {
            spans.push(Span::styled("…", span.style));
            break;
        }
    }
    Line::from(spans)
}

/// Widths for `columns` in `avail` cells (one cell between columns): each as wide as its widest
/// cell; when that does not fit, decorative columns (`drop` 4 and up) go first, then the widest
/// shrinkable columns narrow towards their minimum (cut with `…`), then columns go by their
/// `drop` order. The last column takes what is left.
/// Returns the headers, the constraints and the rows.
fn fit_columns(mut columns: Vec<Column>, avail: usize) -> (Vec<&'static str>, Vec<Constraint>, Vec<Row<'static>>) {
    let mut widths: Vec<usize>;
    loop {
        widths = columns.iter().map(Column::natural).collect();
        let spacing = columns.len().saturating_sub(1);
        let mut total: usize = widths.iter().sum::<usize>() + spacing;
        // Decorative columns (drop order 4 and up) go before any text is cut.
        if total > avail
            && let Some(go) = (0..columns.len()).filter(|&i| columns[i].drop >= 4).max_by_key(|&i| columns[i].drop)
        {
            columns.remove(go);
            continue;
        }
        while total > avail {
            // Narrow the widest column that can still narrow.
            let Some(i) = (0..columns.len())
                .filter(|&i| !columns[i].fixed && widths[i] > columns[i].min)
                .max_by_key(|&i| widths[i])
            else {
                break;
            };
            widths[i] -= 1;
            total -= 1;
        }
        if total <= avail || columns.len() <= 1 {
            break;
        }
        let Some(go) = (0..columns.len()).filter(|&i| columns[i].drop > 0).max_by_key(|&i| (columns[i].drop, i)) else {
            break;
        };
        columns.remove(go);
    }
    let n = columns.len();
    let headers = columns.iter().map(|c| c.header).collect();
    let constraints = widths
        .iter()
        .enumerate()
        .map(|(i, w)| {
            if i + 1 == n {
                Constraint::Min(u16::try_from(*w).unwrap_or(u16::MAX))
            } else {
                Constraint::Length(u16::try_from(*w).unwrap_or(u16::MAX))
            }
        })
        .collect();
    let rows_n = columns.first().map_or(0, |c| c.cells.len());
    let mut cells: Vec<std::vec::IntoIter<Line<'static>>> = columns.into_iter().map(|c| c.cells.into_iter()).collect();
    let rows = (0..rows_n)
        .map(|_| {
            Row::new(
                cells
                    .iter_mut()
                    .zip(&widths)
                    .map(|(it, w)| Cell::from(cut_line(it.next().unwrap_or_default(), *w)))
                    .collect::<Vec<_>>(),
            )
        })
        .collect();
    (headers, constraints, rows)
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
        .title(tabs_line(state, theme, area.width));
    // Rows above the window are told on the bottom border, left, so the tabs keep the top one.
    if from > 0 {
        // Newer only in the scan's order; sorted otherwise, they are only above.
        let above = if state.pane == Pane::Pending && state.sort != SortKey::Age { "above" } else { "newer" };
        block = block.title_bottom(Line::from(Span::styled(format!(" ↑ {from} {above} "), theme.get("warn"))));
    }
    if to < len {
        block = block.title_bottom(
            Line::from(Span::styled(format!(" ↓ {} more ", len - to), theme.get("muted"))).right_aligned(),
        );
    }
    let inner = block.inner(area);
    frame.render_widget(block, area);
    // Columns are as wide as their content; when the pane is narrower, the longest names narrow
    // (cut with `…`), then the least needed columns go. Nothing is cut silently.
    let avail = usize::from(inner.width);
    let raw = |t: String| Line::from(t);
    let styled = |t: String, st: Style| Line::from(Span::styled(t, st));
    let (header, widths, rows): (Vec<&str>, Vec<Constraint>, Vec<Row<'_>>) = match state.pane {
        Pane::Pending => {
            let list = &state.pending()[from..to];
            let mut cols = vec![
                // `⏱` marks a packet past its class's `refuse_after` (timed out).
                Column::new(
                    "AGE",
                    list.iter()
                        .map(|e| match state.timed_out(e) {
                            Some(_) => {
                                styled(format!("⏱{}", clock::human_age(state.now - e.created())), theme.get("warn"))
                            }
                            None => raw(clock::human_age(state.now - e.created())),
                        })
                        .collect(),
                    3,
                    0,
                ),
                Column::new(
                    "AGENT",
                    list.iter()
                        .map(|e| match state.look_alike(&e.packet.agent) {
                            Some(_) => styled(format!("⚠{}", inert(&e.packet.agent, 64)), theme.get("warn")),
                            None => raw(inert(&e.packet.agent, 64)),
                        })
                        .collect(),
                    8,
                    0,
                ),
                // `✍1/2`: a class that needs several principals, and how many have signed.
                Column::new(
                    "ACTION CLASS",
                    list.iter()
                        .map(|e| match state.policies.cosign(&e.packet.action_class) {
                            Some(q) => {
                                let n = state.cosigned(&e.packet).map_or(0, |c| c.signatures.len());
                                raw(format!("{} ✍{n}/{}", inert(&e.packet.action_class, 64), q.required))
                            }
                            None => raw(inert(&e.packet.action_class, 64)),
                        })
                        .collect(),
                    10,
                    0,
                ),
                // The class's risk as warrant's policies define it; `*` when the packet claims another.
                Column::new(
                    "RISK",
                    list.iter()
                        .map(|e| {
                            let p = &e.packet;
                            let risk = state.policies.class_risk(&p.action_class).as_str();
                            let claims_other = p.risk.as_deref().is_some_and(|r| r != risk);
                            styled(
                                if claims_other { format!("{risk}*") } else { risk.to_owned() },
                                risk_style(theme, Some(risk)),
                            )
                        })
                        .collect(),
                    4,
                    2,
                ),
                // The composed verdict of every model, not only what the packet declares.
                Column {
                    fixed: true,
                    ..Column::new(
                        "STATE",
                        list.iter()
                            .map(|e| {
                                let shown = state.shown_state(&e.packet);
                                let (g, w) = state_label(shown);
                                styled(format!("{g} {w}"), state_style(theme, shown))
                            })
                            .collect(),
                        0,
                        0,
                    )
                },
                Column::new("SUMMARY", list.iter().map(|e| raw(inert(&e.packet.summary, 200))).collect(), 10, 3),
            ];
            // Packets selected for batch triage are marked `■`, in a column there only while
            // something is selected.
            if !state.marked.is_empty() {
                let cells = list
                    .iter()
                    .map(|e| {
                        if state.marked.contains(&e.packet.id) {
                            styled("■".into(), theme.get("accent"))
                        } else {
                            raw(" ".into())
                        }
                    })
                    .collect();
                cols.insert(0, Column { fixed: true, ..Column::new("■", cells, 0, 0) });
            }
            fit_columns(cols, avail)
        }
        Pane::Decided => {
            let list = &state.decided()[from..to];
            let cols = vec![
                Column::new(
                    "AGE",
                    list.iter()
                        .map(|r| {
                            raw(clock::unix_seconds(&r.decision.decided_at)
                                .map_or("?".into(), |t| clock::human_age(state.now - t)))
                        })
                        .collect(),
                    3,
                    0,
                ),
                Column {
                    fixed: true,
                    ..Column::new(
                        "DECISION",
                        list.iter()
                            .map(|r| {
                                let (g, w, role) = decision_label(&r.decision);
                                styled(format!("{g} {w}"), theme.get(role))
                            })
                            .collect(),
                        0,
                        0,
                    )
                },
                Column::new("PACKET", list.iter().map(|r| raw(inert(&r.id, 64))).collect(), 8, 0),
                Column::new(
                    "AGENT",
                    list.iter().map(|r| raw(inert(r.packet.as_deref().map_or("?", |p| &p.agent), 64))).collect(),
                    8,
                    0,
                ),
                Column::new(
                    "ACTION CLASS",
                    list.iter().map(|r| raw(inert(r.packet.as_deref().map_or("?", |p| &p.action_class), 64))).collect(),
                    10,
                    0,
                ),
                Column::new(
                    "BY",
                    list.iter()
                        .map(|r| match r.decision.system {
                            // The console signed it by the principal's rule: no person decided.
                            Some(_) => raw("system".into()),
                            None => raw(inert(&r.decision.principal, 40)),
                        })
                        .collect(),
                    6,
                    2,
                ),
            ];
            fit_columns(cols, avail)
        }
        Pane::Posteriors => {
            let list = &state.posteriors()[from..to];
            let fixed = |c: Column| Column { fixed: true, ..c };
            let mut cols = vec![
                Column::new("ACTION CLASS", list.iter().map(|p| raw(inert(&p.action_class, 64))).collect(), 10, 0),
                fixed(Column::new("95% INTERVAL", vec![], 0, 4)),
                fixed(Column::new(
                    "MEAN [LOW–HIGH]",
                    list.iter().map(|p| raw(format!("{:.2} [{:.2}–{:.2}]", p.mean, p.ci_low, p.ci_high))).collect(),
                    0,
                    0,
                )),
                fixed(Column::new("N", list.iter().map(|p| raw(p.samples.to_string())).collect(), 0, 0)),
                fixed(Column::new(
                    "TIER",
                    list.iter().map(|p| styled(p.tier.as_str().to_owned(), tier_style(theme, p.tier))).collect(),
                    0,
                    0,
                )),
                fixed(Column::new(
                    "GRADUATION",
                    list.iter()
                        .map(|p| {
                            let human_only = state.policies.policy(&p.action_class).is_human_only();
                            let (t, role) = match (human_only, p.graduation_ready()) {
                                (true, _) => ("◆ human", "muted"),
                                (false, true) => ("✓ ready", "ok"),
                                (false, false) => ("· not yet", "muted"),
                            };
                            styled(t.to_owned(), theme.get(role))
                        })
                        .collect(),
                    0,
                    2,
                )),
                fixed(Column::new(
                    "TO GO",
                    list.iter()
                        .map(|p| {
                            raw(match p.to_graduate {
                                Some(0) => "—".to_owned(),
                                Some(n) => format!("+{n}"),
                                None => "never".to_owned(),
                            })
                        })
                        .collect(),
                    0,
                    3,
                )),
            ];
            // The band takes the room the other columns leave, between 6 and 24 cells.
            let others: usize =
                cols.iter().enumerate().filter(|(i, _)| *i != 1).map(|(_, c)| c.natural()).sum::<usize>() + cols.len()
                    - 1;
            let bar_w = avail.saturating_sub(others).clamp(6, 24);
            cols[1].cells = list.iter().map(|p| interval_bar(theme, p.mean, p.ci_low, p.ci_high, bar_w)).collect();
            if list.is_empty() {
                cols[1].cells.clear();
            }
            fit_columns(cols, avail)
        }
        Pane::Invalid => {
            let list = &state.invalid()[from..to];
            let cols = vec![
                Column {
                    fixed: true,
                    ..Column::new(
                        "KIND",
                        list.iter()
                            .map(|f| {
                                let kind = match f.kind {
                                    crate::store::spool::FileKind::Packet => "packet",
                                    crate::store::spool::FileKind::Receipt => "receipt",
                                };
                                styled(format!("⚠ {kind}"), theme.get("invalid"))
                            })
                            .collect(),
                        0,
                        0,
                    )
                },
                Column::new("FILE", list.iter().map(|f| raw(inert(&f.name, 80))).collect(), 10, 0),
                Column::new("REASON", list.iter().map(|f| raw(inert(&f.reason.to_string(), 300))).collect(), 10, 0),
            ];
            fit_columns(cols, avail)
        }
        Pane::Audit => {
            let list = &state.audit()[from..to];
            let cols = vec![
                Column::new(
                    "#",
                    list.iter()
                        .map(|e| match e.record {
                            Some(r) => raw(r.to_string()),
                            // Not a chain record: the receipt file's word (marked, not numbered).
                            None => styled("∉ chain".into(), theme.get("warn")),
                        })
                        .collect(),
                    7,
                    0,
                ),
                Column::new(
                    "TIME",
                    list.iter().map(|e| raw(inert(e.at.get(..19).unwrap_or(&e.at), 19))).collect(),
                    10,
                    3,
                ),
                Column::new("KIND", list.iter().map(|e| raw(e.kind.word().to_owned())).collect(), 4, 0),
                Column::new(
                    "WHAT",
                    list.iter()
                        .map(|e| {
                            let role = match e.decision.as_str() {
                                "approve" => "approve",
                                "refuse" => "refuse",
                                _ => "base",
                            };
                            styled(inert(&e.decision, 40), theme.get(role))
                        })
                        .collect(),
                    6,
                    0,
                ),
                Column::new("ACTION", list.iter().map(|e| raw(inert(&e.action, 80))).collect(), 8, 0),
                Column::new("AGENT", list.iter().map(|e| raw(inert(&e.agent, 64))).collect(), 6, 1),
                Column::new("HOW", list.iter().map(|e| raw(audit_how_short(e))).collect(), 6, 0),
                Column::new(
                    "SIGNER",
                    list.iter().map(|e| raw(e.signer.as_ref().map_or("—".into(), |s| inert(&s.name, 40)))).collect(),
                    6,
                    2,
                ),
            ];
            fit_columns(cols, avail)
        }
        // Drawn by their own views.
        Pane::Matrices | Pane::Agents | Pane::Grants => (vec![], vec![], vec![]),
    };
    if state.len(state.pane) == 0 {
        let error = state
            .filter_error
            .as_ref()
            .map(|e| format!("the filter matches nothing: {} (esc clears it)", inert(e, 200)));
        let msg = match (state.pane, state.filter.is_empty()) {
            _ if error.is_some() => error.as_deref().unwrap_or_default(),
            (_, false) => "nothing matches the filter (esc clears it)",
            (Pane::Pending, true) => "no pending packets: agents publish them in packets/",
            (Pane::Decided, true) => "no decisions yet",
            (Pane::Invalid, true) => "no invalid files",
            (Pane::Posteriors, true) => "no action classes",
            (Pane::Matrices, true) => "no notebooks",
            (Pane::Agents, true) => "no agents",
            (Pane::Grants, true) => "no grants",
            (Pane::Audit, true) if !state.audit_wanted => "the audit is being built…",
            (Pane::Audit, true) => "nothing to audit yet: no decision, control or call",
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

fn tier_style(theme: &Theme, tier: crate::protocol::graduation::Tier) -> Style {
    match tier {
        crate::protocol::graduation::Tier::Review => theme.get("warn"),
        crate::protocol::graduation::Tier::Gated => theme.get("muted"),
        crate::protocol::graduation::Tier::Supervised => theme.get("pending"),
        crate::protocol::graduation::Tier::AutoCapped => theme.get("ok"),
    }
}

/// Evidence rows as lines: date, label, provenance, weight, where from. The last `max` rows.
fn evidence_lines(state: &State, theme: &Theme, class: &str, max: usize) -> Vec<Line<'static>> {
    let rows: Vec<&crate::protocol::graduation::EvidenceRow> = state.evidence_for(class).collect();
    let count = state.evidence_count(class);
    let mut out = vec![Line::from(Span::styled(
        format!("evidence rows for {} ({count})", inert(class, 60)),
        theme.get("header"),
    ))];
    if rows.is_empty() {
        out.push(Line::from(Span::styled(
            "  none yet: approvals, refusals and receipts become evidence",
            theme.get("muted"),
        )));
    }
    let skip = rows.len().saturating_sub(max);
    let earlier = count.saturating_sub(rows.len()) + skip;
    if earlier > 0 {
        let hint = if count > rows.len() { "counted in the posterior" } else { "enter shows all" };
        out.push(Line::from(Span::styled(
            format!("  … {earlier} earlier {} ({hint})", plural(earlier, "row")),
            theme.get("muted"),
        )));
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
            Span::styled(format!("  {} ", inert(r.date.as_deref().unwrap_or("????-??-??"), 10)), theme.get("muted")),
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
fn gate_lines(theme: &Theme, d: &crate::protocol::graduation::Decision, width: usize) -> Vec<Line<'static>> {
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
                inert(gp.safe_fallback_action_class, 60)
            ),
        ));
        out.push(kv(theme, "needs", inert(&gp.required_evidence.join("; "), 2000)));
    }
    if !d.constraints.is_empty() {
        out.push(kv(theme, "limits", inert(&serde_json::to_string(&d.constraints).unwrap_or_default(), width)));
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

/// A JSON value as indented key/value lines (nested objects indented, long values wrapped under
/// their key, with `where_first` where the action goes first), inert, `width` columns wide, two columns in.
fn value_lines(theme: &Theme, v: &Value, width: usize, budget: usize, where_first: bool) -> Vec<Line<'static>> {
    super::fields::field_lines(v, width.saturating_sub(2), budget, where_first)
        .into_iter()
        .map(|l| {
            let (key_role, text_role) = if l.important { ("accent", "title") } else { ("muted", "base") };
            Line::from(vec![
                Span::raw(" ".repeat(2 + l.indent)),
                Span::styled(l.key, theme.get(key_role)),
                Span::styled(l.text, theme.get(text_role)),
            ])
        })
        .collect()
}

fn evidence_summary(v: &Value) -> String {
    match v {
        Value::Array(rows) => {
            let mut by: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
            for r in rows {
                let label = r.get("label").or_else(|| r.get("type")).and_then(Value::as_str).unwrap_or("?");
                *by.entry(label.to_owned()).or_default() += 1;
            }
            // Labels are the agent's words: inert, and cut so a packet cannot flood the line.
            let parts: Vec<String> = by.iter().take(8).map(|(k, n)| format!("{n} {}", inert(k, 24))).collect();
            let more = if by.len() > 8 { format!(", {} more labels", by.len() - 8) } else { String::new() };
            format!("{} rows: {}{more}", rows.len(), parts.join(", "))
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

/// The composed verdict: its state and decisive model, each model's verdict side by side (its
/// own word, the state it maps to, why), then the contract's preconditions as observed now.
/// `row` is the width available; `max` caps each text (unlimited when zoomed).
fn verdict_lines(state: &State, theme: &Theme, id: &str, row: usize, max: usize) -> Vec<Line<'static>> {
    let Some(v) = state.verdict(id) else { return vec![] };
    let (g, w) = state_label(Some(v.state));
    let mut out = vec![
        Line::from(Span::styled("Verdict (every model that applies; the strictest wins)", theme.get("header"))),
        kv(
            theme,
            "composed",
            Span::styled(format!("{g} {w} · decisive: {}", v.decisive.as_str()), state_style(theme, Some(v.state))),
        ),
    ];
    let decisive = v.models.iter().position(|m| m.model == v.decisive && m.state == v.state);
    let model_w = v.models.iter().map(|m| m.model.as_str().len()).max().unwrap_or(0);
    let verdict_w = v.models.iter().map(|m| inert(&m.verdict, 24).chars().count()).max().unwrap_or(0);
    // Model, its word and the state fit on one row; the reason follows on the same row when the
    // view is wide enough, else on the next, indented.
    let fixed = 4 + model_w + 1 + verdict_w + 1 + 15;
    let one_row = row >= fixed + 40;
    for (i, m) in v.models.iter().enumerate() {
        let (g, w) = state_label(Some(m.state));
        let mut spans = vec![
            Span::styled(if Some(i) == decisive { "  ▶ " } else { "    " }, theme.get("title")),
            Span::raw(format!("{:<model_w$} {:<verdict_w$} ", m.model.as_str(), inert(&m.verdict, 24))),
            Span::styled(format!("{g} {w:<13}"), state_style(theme, Some(m.state))),
        ];
        if one_row {
            spans.push(Span::raw(inert(&m.reason, max)));
            out.push(Line::from(spans));
        } else {
            out.push(Line::from(spans));
            out.push(Line::from(Span::styled(format!("      {}", inert(&m.reason, max)), theme.get("muted"))));
        }
    }
    if let Some(rv) = state.preconditions(id) {
        out.push(Line::from(Span::styled(
            format!("preconditions ({} re-checked now)", rv.checks.len()),
            theme.get("header"),
        )));
        for c in &rv.checks {
            let now = match (&c.observed, &c.error) {
                (Some(o), _) => o.to_string(),
                (None, Some(e)) => format!("cannot observe: {e}"),
                (None, None) => "?".to_owned(),
            };
            let (mark, role) = if c.holds { ("✓ holds  ", "ok") } else { ("✗ changed", "refuse") };
            out.push(Line::from(vec![
                Span::styled(format!("  {mark} "), theme.get(role)),
                Span::raw(format!(
                    "{}  expected {}  now {}",
                    inert(&c.check_id, 40),
                    inert(&c.expected.to_string(), max),
                    inert(&now, max)
                )),
            ]));
        }
    }
    out
}

/// What the principal knows of a packet's agent and class (issue 18): the agent's record for
/// the class in the verified chain (approved, refused, the last refusal and its reason), the
/// class's posterior (mean and 95% credible interval), and the contract's reversibility and
/// blast radius in words.
fn record_lines(state: &State, theme: &Theme, p: &Packet) -> Vec<Line<'static>> {
    use crate::protocol::ladder::{BlastRadius, Reversibility};
    let mut lines = Vec::new();
    let record = match state.agent_record(&p.agent, &p.action_class) {
        Some(r) => {
            let mut text = format!("{} approved · {} refused", r.approved, r.refused);
            if let Some(l) = &r.last_refusal {
                text.push_str(&format!(
                    " · last refused {} (record {}){}",
                    inert(&l.decided_at, 30),
                    l.chain_index,
                    l.reason.as_deref().map_or(String::new(), |why| format!(": {}", inert(why, 200)))
                ));
            }
            text
        }
        None => "no decision yet for this agent and class".to_owned(),
    };
    lines.push(kv(theme, "record", record));
    if let Some(c) = state.posterior_of(&p.action_class) {
        lines.push(kv(
            theme,
            "posterior",
            format!(
                "mean {:.2} · 95% interval {:.2}–{:.2} · {} ({} samples)",
                c.mean,
                c.ci_low,
                c.ci_high,
                c.tier.as_str(),
                c.samples
            ),
        ));
    }
    let contract = crate::protocol::verdict::Governance::of_packet(p)
        .and_then(|g| g.contract.as_ref().and_then(|c| c.as_ref().ok()).cloned());
    if let Some(c) = contract {
        let undo = match c.reversibility {
            Reversibility::Reversible => "can be undone",
            Reversibility::Compensable => "cannot be undone, only offset by a compensating action",
            Reversibility::Irreversible => "cannot be undone",
        };
        let reach = match c.blast_radius {
            BlastRadius::SelfOnly => "the agent itself only",
            BlastRadius::Session => "this session",
            BlastRadius::Project => "the project's shared state",
            BlastRadius::External => "beyond the project: other people and systems",
        };
        let role = if c.reversibility == Reversibility::Irreversible { "warn" } else { "base" };
        lines.push(kv(theme, "undo", Span::styled(undo, theme.get(role))));
        lines.push(kv(theme, "reaches", reach));
    }
    lines.into_iter().map(own_line).collect()
}

fn packet_lines<'a>(state: &State, theme: &Theme, p: &'a Packet, width: usize, zoomed: bool) -> Vec<Line<'a>> {
    let shown = state.shown_state(p);
    let (g, w) = state_label(shown);
    let row = width + 14;
    let declared = match (state.verdict(&p.id), p.state) {
        (Some(v), Some(d)) if v.state != d => format!(" (composed; the packet declares {})", state_label(Some(d)).1),
        (Some(_), _) => " (composed)".to_owned(),
        _ => String::new(),
    };
    // What the agent wrote is cut to the pane in the split view, and shown whole when zoomed.
    let text_w = if zoomed { usize::MAX } else { width };
    let mut lines = vec![
        Line::from(Span::styled(inert(&p.summary, text_w), theme.get("title"))),
        kv(theme, "packet", inert(&p.id, text_w)),
        kv(theme, "agent", inert(&p.agent, text_w)),
    ];
    if let Some(other) = state.look_alike(&p.agent) {
        lines.push(Line::from(Span::styled(
            format!("  ⚠ looks like agent {} on screen: a different agent", inert(other, 60)),
            theme.get("warn"),
        )));
    }
    if let Some((uid, refused)) = state.publisher(&p.id) {
        lines.push(kv(theme, "publisher", crate::store::spool::publisher_label(uid)));
        if let Some(why) = refused {
            lines.push(Line::from(Span::styled(format!("  ✗ {}", inert(why, 300)), theme.get("error"))));
        }
    }
    lines.extend([
        kv(
            theme,
            "class",
            format!(
                "{}{}",
                inert(&p.action_class, 60),
                crate::protocol::registry::lookup(&p.action_class)
                    .map_or(" (not a canonical class)".into(), |c| format!(" ({})", c.kind))
            ),
        ),
        {
            let risk = state.policies.class_risk(&p.action_class).as_str();
            let claim = match p.risk.as_deref() {
                Some(r) if r != risk => format!("  (the packet claims {})", inert(r, 20)),
                _ => String::new(),
            };
            kv(theme, "risk", Span::styled(format!("{risk}{claim}"), risk_style(theme, Some(risk))))
        },
        kv(theme, "state", Span::styled(format!("{g} {w}{declared}"), state_style(theme, shown))),
    ]);
    // A packet no one may approve: why, in one line, and what would change it.
    if let Some((why, remedy)) =
        state.verdict(&p.id).and_then(crate::protocol::verdict::PacketVerdict::why_not_approvable)
    {
        // Whole, wrapped under the key: this line is the way out.
        lines.push(kv(theme, "why", Span::styled(inert(&why, usize::MAX), theme.get("warn"))));
        lines.push(kv(theme, "to change", inert(&remedy, usize::MAX)));
    }
    if let (Some(v), Some(tg)) = (state.verdict(&p.id), state.gate_decision(&p.id))
        && let Some(hint) = crate::protocol::verdict::graduation_hint(v, tg, &state.policies.normalize(&p.action_class))
    {
        lines.push(kv(theme, "graduation", inert(&hint, usize::MAX)));
    }
    if let Some(v) = state.verdict(&p.id).filter(|v| v.approvable()) {
        for s in v.stands_in_for() {
            lines.push(kv(theme, "approving", format!("stands in for {}", inert(&s, text_w))));
        }
    }
    // A class that needs several principals: who has signed, and how many are needed.
    if let Some(q) = state.policies.cosign(&p.action_class) {
        let signed = state
            .cosigned(p)
            .map_or_else(|| format!("0/{} signed", q.required), crate::store::spool::Cosigning::describe);
        let text = format!("{signed} · needs {} (policy.toml [cosign])", q.describe());
        lines.push(kv(theme, "co-sign", inert(&text, usize::MAX)));
    }
    if let Some(r) = &p.reason {
        lines.push(kv(theme, "reason", inert(r, text_w)));
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
    if let Some(after) = state.packet_timed_out(p) {
        let signs = state
            .policies
            .class_timeout(&p.action_class)
            .is_some_and(crate::protocol::graduation::policy::ClassTimeout::signs_refusal);
        let then =
            if signs { "this console signs its refusal as a system decision (not evidence)" } else { "refuse only" };
        lines.push(kv(
            theme,
            "timeout",
            Span::styled(
                format!(
                    "⏱ TIMED OUT after {} (policy.toml): the agent was told `timeout`; {then}",
                    super::notify::human(after)
                ),
                theme.get("warn"),
            ),
        ));
    }
    if let Some(g) = state.ran_on_grant(p) {
        lines.push(kv(theme, "grant", format!("ran on {}: {}", inert(&g.grant_id, 80), inert(&g.describe(), text_w))));
    } else if let Some(claimed) = state.snapshot.uses.granted.get(&p.id) {
        lines.push(kv(
            theme,
            "grant",
            Span::styled(
                format!("⚠ uses/ claims {} for this call, a grant that does not cover it", inert(claimed, 80)),
                theme.get("warn"),
            ),
        ));
    } else if !state.decisions.contains_key(&p.id)
        && let Some(g) = state.covering_grant(p)
    {
        lines.push(kv(
            theme,
            "grant",
            Span::styled(
                format!("covered by {}: {}", inert(&g.grant_id, 80), inert(&g.describe(), text_w)),
                theme.get("accent"),
            ),
        ));
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
        format!(
            "{} · {} agent receipts (not evidence)",
            evidence_summary(&p.evidence),
            state.receipts_for(&p.action_class)
        ),
    ));
    lines.extend(record_lines(state, theme, p));
    if let Some(d) = state.decisions.get(&p.id) {
        let (g, w, role) = decision_label(d);
        let by = match d.system {
            Some(_) => format!(
                "refused as a system decision (signed with {}'s key, no person decided)",
                inert(&d.principal, 30)
            ),
            None => format!("by {}", inert(&d.principal, 30)),
        };
        lines.push(kv(
            theme,
            "decision",
            Span::styled(format!("{g} {w} {by} at {}", inert(&d.decided_at, 30)), theme.get(role)),
        ));
        if let Some(r) = &d.reason {
            lines.push(kv(theme, "because", inert(r, text_w)));
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
    let budget = if zoomed { usize::MAX } else { 60 };
    lines.push(Line::from(Span::styled("proposed action (where it goes first)", theme.get("header"))));
    lines.extend(value_lines(theme, &p.proposed_action, row, budget, true));
    if !p.context.is_null() && p.context != p.proposed_action {
        lines.push(Line::from(Span::styled("context", theme.get("header"))));
        lines.extend(value_lines(theme, &p.context, row, budget, false));
    }
    lines.extend(verdict_lines(state, theme, &p.id, row, if zoomed { usize::MAX } else { row * 2 }));
    if let Some(d) = state.gate_decision(&p.id) {
        lines.extend(gate_lines(theme, d, if zoomed { usize::MAX } else { width }));
        let class = state.policies.normalize(&p.action_class);
        lines.extend(evidence_lines(state, theme, &class, if zoomed { usize::MAX } else { 5 }));
    }
    let others = other_fields(p);
    if !others.is_empty() {
        lines.push(Line::from(Span::styled("other fields", theme.get("header"))));
        let rest = Value::Object(others);
        lines.extend(value_lines(theme, &rest, row, budget, false));
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
    // The title names what the detail shows: a packet, an invalid file, or an action class.
    let what = match state.pane {
        Pane::Posteriors => "Class",
        Pane::Invalid => "File",
        Pane::Audit => "Audit entry",
        _ => "Packet",
    };
    let title = if zoomed {
        let whole = if state.pane == Pane::Posteriors { "all of it" } else { "the whole file" };
        format!(" {what}: {whole} (j/k scroll · esc back) ")
    } else {
        format!(" {what} (enter: read it whole) ")
    };
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
                kv(theme, "in", if f.kind == crate::store::spool::FileKind::Packet { "packets/" } else { "receipts/" }),
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
        Pane::Audit => state.selected_audit().map_or_else(Vec::new, |e| audit_lines(theme, e)),
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
    // Long lines continue under their value, not at column 0.
    let lines: Vec<Line<'_>> = lines.into_iter().flat_map(|l| hang(l, usize::from(inner.width))).collect();
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
        let hint = if zoomed {
            format!(" ↓ {below} more {} ", plural(below, "line"))
        } else {
            format!(" ↓ {below} more {}: enter ", plural(below, "line"))
        };
        block = block.title_bottom(Line::from(Span::styled(hint, theme.get("warn"))).right_aligned());
    }
    frame.render_widget(para.block(block).scroll((u16::try_from(scroll).unwrap_or(u16::MAX), 0)), area);
}

/// A line wider than `width` split into lines that fit, the continuations indented under the
/// value: past a `kv` label, or two columns past the line's own indentation (at most half the
/// width). Breaks after a space when one leaves at least half a row; styles are kept; nothing is
/// dropped.
fn hang(line: Line<'_>, width: usize) -> Vec<Line<'static>> {
    use unicode_width::UnicodeWidthChar;
    let line = own_line(line);
    if line.width() <= width || width < 8 {
        return vec![line];
    }
    let label = line.spans.first().is_some_and(|s| s.content.chars().count() == 12 && s.content.ends_with("  "));
    let chars: Vec<(char, usize)> =
        line.spans.iter().enumerate().flat_map(|(i, s)| s.content.chars().map(move |c| (c, i))).collect();
    let lead = chars.iter().take_while(|(c, _)| *c == ' ').count();
    let indent = if label { 12 } else { lead + 2 }.min(width / 2);
    // Row boundaries (char indices where a new row starts).
    let mut starts = vec![0];
    let (mut start, mut row_w, mut avail) = (0, 0, width);
    let mut i = 0;
    while i < chars.len() {
        let w = chars[i].0.width().unwrap_or(0);
        if row_w + w > avail && i > start {
            let space = (start + 1..i).rev().find(|&j| chars[j - 1].0 == ' ');
            let cut = space.filter(|&j| {
                let used: usize = chars[start..j].iter().map(|(c, _)| c.width().unwrap_or(0)).sum();
                used * 2 >= avail
            });
            let at = cut.unwrap_or(i);
            starts.push(at);
            start = at;
            avail = width - indent;
            row_w = chars[at..i].iter().map(|(c, _)| c.width().unwrap_or(0)).sum();
            continue;
        }
        row_w += w;
        i += 1;
    }
    starts.push(chars.len());
    starts
        .windows(2)
        .enumerate()
        .map(|(row, r)| {
            let mut spans: Vec<Span<'static>> = Vec::new();
            if row > 0 {
                spans.push(Span::raw(" ".repeat(indent)));
            }
            let fixed = spans.len();
            for (c, si) in &chars[r[0]..r[1]] {
                let style = line.spans[*si].style;
                let n = spans.len();
                match spans.last_mut() {
                    Some(last) if n > fixed && last.style == style => last.content.to_mut().push(*c),
                    _ => spans.push(Span::styled(c.to_string(), style)),
                }
            }
            Line::from(spans)
        })
        .collect()
}

fn own_line(l: Line<'_>) -> Line<'static> {
    Line::from(l.spans.into_iter().map(|s| Span::styled(s.content.into_owned(), s.style)).collect::<Vec<_>>())
}

fn render_status(state: &State, theme: &Theme, frame: &mut Frame<'_>, area: Rect) {
    let chain = match &state.chain {
        ChainState::Broken { first, .. } => Span::styled(
            format!(
                " ✗ CHAIN BROKEN: record {} [{}] ",
                first.record().map_or("-".into(), |n| n.to_string()),
                first.check.as_str()
            ),
            theme.get("error"),
        ),
        ChainState::Valid { total, .. } if state.chain_from_checkpoint => Span::styled(
            format!(" ✓ chain ok since checkpoint · {total} {} ", plural(*total, "record")),
            theme.get("ok"),
        ),
        ChainState::Valid { total, .. } => {
            Span::styled(format!(" ✓ chain ok · {total} {} ", plural(*total, "record")), theme.get("ok"))
        }
        ChainState::Unknown => Span::styled(" … verifying chain ", theme.get("muted")),
    };
    let progress = state.chain_progress.map(|(read, total)| {
        let pct = read.saturating_mul(100).checked_div(total).unwrap_or(0).min(100);
        let filled = usize::try_from(pct / 10).unwrap_or(0);
        Span::styled(
            format!(" verifying {}{} {pct}% ", "█".repeat(filled), "░".repeat(10 - filled)),
            theme.get("muted"),
        )
    });
    let key = match (&state.fingerprint, state.read_only) {
        (_, true) => Span::styled(" read-only ", theme.get("warn")),
        (Some(fp), false) => Span::styled(
            format!(" key {} {} ", inert(state.principal.as_deref().unwrap_or(""), 20), fp.get(..19).unwrap_or(fp)),
            theme.get("accent"),
        ),
        (None, false) => Span::styled(" no key ", theme.get("warn")),
    };
    let spool = Span::styled(format!(" {} ", inert(&state.spool_path, 60)), theme.get("muted"));
    let spans: Vec<Span<'_>> = std::iter::once(chain).chain(progress).chain([key, spool]).collect();
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn render_hints(state: &State, theme: &Theme, frame: &mut Frame<'_>, area: Rect) {
    if let Mode::Input { purpose: InputPurpose::Command, text } = &state.mode {
        // The command line, as vim and k9s have it: `:` and the text, then Tab's candidates.
        let mut spans = vec![Span::styled(format!(":{}▏", inert(text, 200)), theme.get("accent"))];
        if !state.completions.is_empty() {
            spans.push(Span::styled(format!("  {}", state.completions.join(" ")), theme.get("muted")));
        }
        frame.render_widget(Paragraph::new(Line::from(spans)), area);
        return;
    }
    if let Some(f) = &state.flash {
        let style = if f.error { theme.get("error") } else { theme.get("accent") };
        frame.render_widget(Paragraph::new(Span::styled(format!(" {} ", inert(&f.text, 400)), style)), area);
        return;
    }
    let km = &state.keymap;
    let (mode, commands): (&str, &[&str]) = match &state.mode {
        Mode::Input { .. } => ("input", &["submit", "cancel"]),
        Mode::Confirm(_) | Mode::ControlConfirm(_) => ("confirm", &["confirm", "cancel", "toggle"]),
        Mode::Help => ("help", &["close"]),
        Mode::ChainAlert | Mode::Log => ("help", &[]),
        Mode::Normal if state.read_only => ("normal", &["down", "up", "open", "next_pane", "filter", "help", "quit"]),
        Mode::Normal if state.pane == Pane::Matrices => {
            ("normal", &["raise", "lower", "down", "up", "next_pane", "filter", "help", "quit"])
        }
        Mode::Normal if state.pane == Pane::Agents => {
            ("normal", &["quarantine", "release", "kill", "elevate", "next_pane", "help", "quit"])
        }
        Mode::Normal if state.pane == Pane::Grants => {
            ("normal", &["down", "up", "revoke", "next_pane", "help", "quit"])
        }
        Mode::Normal if state.pane == Pane::Pending => {
            ("normal", &["down", "up", "open", "approve", "refuse", "next_pane", "filter", "help", "quit"])
        }
        Mode::Normal => ("normal", &["down", "up", "open", "next_pane", "filter", "log", "help", "quit"]),
    };
    let mut spans = Vec::new();
    if state.zoomed && state.mode == Mode::Normal {
        let k = |c: &str| km.first_key("normal", c).unwrap_or_default();
        let decide = state.pane == Pane::Pending && !state.read_only;
        for (keys, desc) in [
            (format!("{}/{}", k("down"), k("up")), "scroll"),
            (format!("{}/{}", k("top"), k("bottom")), "top/end"),
            (k("back"), "back"),
            (if decide { k("approve") } else { String::new() }, "approve"),
            (if decide { k("refuse") } else { String::new() }, "refuse"),
            (k("help"), "help"),
        ]
        .into_iter()
        .filter(|(k, _)| !k.is_empty())
        {
            spans.push(Span::styled(format!(" {keys}"), theme.get("key_hint")));
            spans.push(Span::styled(format!(" {desc} "), theme.get("muted")));
        }
        frame.render_widget(Paragraph::new(Line::from(spans)), area);
        return;
    }
    if let Mode::Input { purpose: InputPurpose::Filter, text } = &state.mode {
        spans.push(Span::styled(format!(" filter: {}▏ ", inert(text, 60)), theme.get("accent")));
        if let Some(e) = &state.filter_error {
            spans.push(Span::styled(format!("✗ {} ", inert(e, 120)), theme.get("error")));
        }
    }
    // Hints that do not fit go whole, never cut; help (which lists every key) is kept.
    let hint = |c: &str| {
        let key = km.first_key(mode, c)?;
        let desc = km.bindings(mode).iter().find(|b| b.command == c).map_or("", |b| b.desc.as_str());
        Some([
            Span::styled(format!(" {key}"), theme.get("key_hint")),
            Span::styled(format!(" {desc} "), theme.get("muted")),
        ])
    };
    let reserved =
        if commands.contains(&"help") { hint("help").map_or(0, |h| h.iter().map(Span::width).sum()) } else { 0 };
    let mut used: usize = spans.iter().map(Span::width).sum::<usize>() + reserved;
    for c in commands.iter().filter(|c| **c != "help") {
        let Some(h) = hint(c) else { continue };
        let w: usize = h.iter().map(Span::width).sum();
        if used + w > usize::from(area.width) {
            continue;
        }
        used += w;
        spans.extend(h);
    }
    if commands.contains(&"help")
        && let Some(h) = hint("help")
    {
        spans.extend(h);
    }
    if matches!(state.mode, Mode::ChainAlert | Mode::Log) {
        let what = if state.mode == Mode::Log { " any key: close " } else { " any key: acknowledge " };
        spans.push(Span::styled(what, theme.get("key_hint")));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// How an audit entry was allowed, in a few words for the list.
fn audit_how_short(e: &crate::audit::AuditEntry) -> String {
    use crate::audit::How;
    match &e.how {
        How::Person { record: None } => "person".into(),
        How::Person { record: Some(n) } => format!("person (#{n})"),
        How::System { cause, record: None } => format!("system {}", inert(cause, 16)),
        How::System { cause, record: Some(n) } => format!("system {} (#{n})", inert(cause, 16)),
        How::Gate { .. } => "gate".into(),
        How::Grant { grant_id } => format!("grant {}", inert(grant_id, 24)),
        How::Recorded => "recorded".into(),
    }
}

/// The detail of an audit entry: every field, agent text inert.
fn audit_lines(theme: &Theme, e: &crate::audit::AuditEntry) -> Vec<Line<'static>> {
    let place = match e.record {
        Some(r) => Span::raw(format!("record {r} of the verified chain")),
        None => Span::styled("not in the chain: a receipt file (the writer's word)", theme.get("warn")),
    };
    let mut lines = vec![
        kv(theme, "entry", place),
        kv(theme, "kind", e.kind.word()),
        kv(theme, "what", inert(&e.decision, 80)),
        kv(theme, "action", inert(&e.action, 200)),
        kv(theme, "agent", inert(&e.agent, 200)),
        kv(theme, "at", inert(&e.at, 40)),
        kv(theme, "how", e.how.words()),
        kv(theme, "signer", e.signer_words()),
    ];
    let optional = [
        ("packet", e.packet_id.as_deref()),
        ("grant", e.grant_id.as_deref()),
        ("reason", e.reason.as_deref()),
        ("receipt", e.receipt_id.as_deref()),
        ("tool", e.tool.as_deref()),
        ("observed by", e.observed_by.as_deref()),
        ("entry_hash", e.entry_hash.as_deref()),
    ];
    for (k, v) in optional {
        if let Some(v) = v {
            lines.push(kv(theme, k, inert(v, 400)));
        }
    }
    if e.calls > 1 {
        lines.push(kv(theme, "calls", e.calls.to_string()));
    }
    lines.into_iter().map(own_line).collect()
}

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
fn list_area(state: &State, width: u16, height: u16) -> Option<Rect> {
    let area = Rect::new(0, 0, width, height);
    if width < MIN_WIDTH || height < MIN_HEIGHT || state.zoomed || matches!(state.pane, Pane::Matrices | Pane::Agents) {
        return None;
    }
    let [_, body, _, _] =
        Layout::vertical([Constraint::Length(1), Constraint::Min(3), Constraint::Length(1), Constraint::Length(1)])
            .areas(area);
    Some(if state.pane == Pane::Grants {
        let [list, _] =
            Layout::vertical([Constraint::Min(4), Constraint::Length(super::grants::detail_height(body.height))])
                .areas(body);
        list
    } else if body.width >= 120 {
        let [list, _] = Layout::horizontal([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(body);
        list
    } else {
        let list_h = (body.height * 2 / 5).max(5).min(body.height.saturating_sub(3));
        let [list, _] = Layout::vertical([Constraint::Length(list_h), Constraint::Min(3)]).areas(body);
        list
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

fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect { x: area.x + (area.width - w) / 2, y: area.y + (area.height - h) / 2, width: w, height: h }
}

/// Width of one column of the help overlay.
const HELP_COLUMN: u16 = 38;

/// Lines of the help overlay: a title per mode, a line per binding, blank lines between
/// sections with `gaps`.
fn help_line_count(keymap: &super::keymap::Keymap, gaps: bool) -> usize {
    let modes = ["normal", "confirm", "input", "help"];
    modes.iter().map(|m| keymap.bindings(m).len() + 1).sum::<usize>() + if gaps { modes.len() - 1 } else { 0 }
}

/// How many lines of the help overlay fit on a `width`×`height` terminal.
fn help_fit(width: u16, height: u16) -> usize {
    usize::from(width.saturating_sub(2) / HELP_COLUMN).max(1) * usize::from(height.saturating_sub(2).max(1))
}

/// How far the help overlay can scroll on a `width`×`height` terminal (0 when it fits).
#[must_use]
pub fn help_scroll_limit(keymap: &super::keymap::Keymap, width: u16, height: u16) -> usize {
    help_line_count(keymap, false).saturating_sub(help_fit(width, height))
}

fn render_help(state: &State, theme: &Theme, frame: &mut Frame<'_>, area: Rect) {
    // Sections flow into as many columns as the height requires; when the columns would not fit
    // across, the blank lines between sections go first, then the overlay scrolls (j/k) and says
    // how many lines are above and below.
    const COLUMN: u16 = HELP_COLUMN;
    let height = area.height.saturating_sub(2).max(1) as usize;
    let fit = help_fit(area.width, area.height);
    let sections = |gaps: bool| {
        let mut lines: Vec<Line<'_>> = Vec::new();
        for (mode, title) in
            [("normal", "Lists"), ("confirm", "Confirmation"), ("input", "Text line"), ("help", "Help")]
        {
            if gaps && !lines.is_empty() {
                lines.push(Line::from(""));
            }
            lines.push(Line::from(Span::styled(title, theme.get("header"))));
            for b in state.keymap.bindings(mode) {
                let keys: Vec<String> = b.keys.iter().map(super::keymap::Key::label).collect();
                lines.push(Line::from(vec![
                    Span::styled(format!(" {:<15} ", keys.join(" ")), theme.get("key_hint")),
                    Span::raw(inert(&b.desc, 60)),
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
    frame.render_widget(Clear, rect);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.get("border_focus"))
        .title(" Help: keys (esc closes) ");
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

fn render_confirm(state: &State, theme: &Theme, frame: &mut Frame<'_>, area: Rect, c: &super::app::Confirm) {
    let (_, _, role) = verdict_label(c.verdict);
    let (rows, g) = super::dialog::confirm_layout(state, c, area);
    let visible = usize::from(g.body.height);
    // The same clamp as `update`'s; the scroll itself only changes there.
    let scroll = c.scroll.min(rows.len().saturating_sub(visible));
    let lines: Vec<Line<'static>> = rows
        .iter()
        .skip(scroll)
        .take(visible)
        .map(|r| Line::from(r.0.iter().map(|(t, role)| Span::styled(t.clone(), theme.get(role))).collect::<Vec<_>>()))
        .collect();
    frame.render_widget(Clear, g.rect);
    let title = if c.zoomed {
        format!(" Confirm: {} (z: unzoom) ", c.verdict.as_str())
    } else {
        format!(" Confirm: {} ", c.verdict.as_str())
    };
    let mut block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.get(role))
        .title(Span::styled(title, theme.get(role)));
    if scroll > 0 {
        block = block.title_top(
            Line::from(Span::styled(format!(" ↑ {scroll} {} above ", plural(scroll, "line")), theme.get("muted")))
                .right_aligned(),
        );
    }
    frame.render_widget(block, g.rect);
    frame.render_widget(Paragraph::new(lines), g.body);

    let km = &state.keymap;
    let k = |cmd: &str| km.first_key("confirm", cmd).unwrap_or_default();
    let below = rows.len().saturating_sub(scroll + visible);
    // This frame shows the end after everything above it: `update` unlocks the dialog when told
    // the frame was drawn.
    let unlocked = c.unlocked() || (below == 0 && scroll <= c.seen && visible > 0);
    let status = if below > 0 {
        let unlock = if unlocked {
            String::new()
        } else {
            format!(", {} unlocks at the end ({} zooms)", k("confirm"), k("zoom"))
        };
        Span::styled(
            format!("↓ {below} more {} — {}/{} to read{unlock}", plural(below, "line"), k("down"), k("page_down")),
            theme.get("warn"),
        )
    } else if unlocked {
        Span::styled(
            format!("✓ all {} {} of the dialog have been on screen", rows.len(), plural(rows.len(), "line")),
            theme.get("ok"),
        )
    } else {
        Span::styled(format!("scroll to the top ({}) and read down to unlock", k("top")), theme.get("warn"))
    };
    let button = |label: String, b: Button, locked: bool| {
        let style = if locked {
            theme.get("muted")
        } else if c.focus == b {
            theme.get("button_focus")
        } else {
            theme.get("button")
        };
        Span::styled(format!("[ {label} ]"), style)
    };
    let sign = if c.verdict == Verdict::Approve { "Sign approval" } else { "Sign refusal" };
    let locked = !unlocked;
    let sign = if locked { format!("{sign}: read to the end") } else { sign.to_owned() };
    let footer = vec![
        Line::from(status).alignment(Alignment::Center),
        Line::from(vec![
            button("Cancel".into(), Button::Cancel, false),
            Span::raw("   "),
            button(sign, Button::Sign, locked),
        ])
        .alignment(Alignment::Center),
        Line::from(Span::styled(
            format!(
                "{} sign · {} cancel · {}/{} scroll · {} zoom · {} move · {} press",
                k("confirm"),
                k("cancel"),
                k("down"),
                k("up"),
                k("zoom"),
                k("toggle"),
                k("activate")
            ),
            theme.get("muted"),
        ))
        .alignment(Alignment::Center),
    ];
    frame.render_widget(Paragraph::new(footer), g.footer);
}

/// `word` for `n` of them: "1 line", "2 lines".
#[must_use]
pub fn plural(n: usize, word: &str) -> String {
    if n == 1 { word.to_owned() } else { format!("{word}s") }
}

fn render_reason(theme: &Theme, frame: &mut Frame<'_>, area: Rect, p: &Packet, text: &str) {
    let head = vec![kv(theme, "refuse", inert(&p.id, 60)), kv(theme, "class", inert(&p.action_class, 60))];
    render_refusal_reason(theme, frame, area, head, "reason: ", text, "enter continue · esc cancel", " Refuse: why? ");
}

/// The one reason for refusing a selection: how many packets, their classes; every packet is
/// listed whole in the dialog that follows.
fn render_batch_reason(theme: &Theme, frame: &mut Frame<'_>, area: Rect, ps: &[std::sync::Arc<Packet>], text: &str) {
    let head = vec![
        kv(theme, "refuse", format!("{} selected {}", ps.len(), plural(ps.len(), "packet"))),
        kv(theme, "classes", inert(&super::dialog::counted(ps.iter().map(|p| p.action_class.as_str())), 200)),
    ];
    let hint = "enter continue (every packet is shown before signing) · esc cancel";
    render_refusal_reason(theme, frame, area, head, "one reason for all: ", text, hint, " Refuse the selection: why? ");
}

/// A refusal's reason line in a box: `head` (what is refused), the `prompt` and the text typed
/// so far with a cursor, then `hint`.
#[allow(clippy::too_many_arguments)]
fn render_refusal_reason(
    theme: &Theme,
    frame: &mut Frame<'_>,
    area: Rect,
    mut lines: Vec<Line<'static>>,
    prompt: &'static str,
    text: &str,
    hint: &'static str,
    title: &'static str,
) {
    lines.extend([
        Line::from(""),
        Line::from(vec![
            Span::styled(prompt, theme.get("header")),
            Span::raw(inert(text, 200)),
            Span::styled("▏", theme.get("accent")),
        ]),
        Line::from(""),
        Line::from(Span::styled(hint, theme.get("muted"))),
    ]);
    let rect = centered(area, 80, lines.len() as u16 + 2);
    frame.render_widget(Clear, rect);
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(Block::default().borders(Borders::ALL).border_style(theme.get("refuse")).title(title)),
        rect,
    );
}

/// The message log: recent status-line messages, whole and wrapped, newest last.
fn render_log(state: &State, theme: &Theme, frame: &mut Frame<'_>, area: Rect) {
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
    frame.render_widget(Clear, rect);
    frame.render_widget(Paragraph::new(lines.split_off(skip)).block(block), rect);
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

/// Glyph, word and style role of an agent's standing.
fn standing_label(s: AgentStanding) -> (&'static str, &'static str) {
    match s {
        AgentStanding::Active => ("✓ active", "ok"),
        AgentStanding::Quarantined => ("⊘ quarantined", "warn"),
        AgentStanding::Killed => ("✗ killed", "refuse"),
    }
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
fn ring_cells(ring: Ring) -> [String; 5] {
    let c = crate::protocol::rings::constraints(ring);
    let limits = crate::protocol::rings::rate::default_limits(ring);
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

/// The matrices view: what each ring may touch (and who is in it), the tool tier × notebook
/// trust matrix with the selected notebook's column highlighted, and the notebooks.
fn render_matrices(state: &State, theme: &Theme, frame: &mut Frame<'_>, area: Rect) {
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
            let (label, role) = tier_action_label(crate::protocol::tiers::gate_action(Some(tier), Some(t)));
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

/// The agents view: one row per agent seen in packets, receipts or controls, and the selected
/// agent's detail below.
fn render_agents(state: &State, theme: &Theme, frame: &mut Frame<'_>, area: Rect) {
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
        let spark_w = if wide { crate::monitor::ACTIVITY_MINUTES } else { 12 };
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
            format!("{:.1} of {:.0} tokens · {} over the limit (blocked)", a.tokens, a.capacity, a.rate_rejections),
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

/// What a control will do, in a sentence per line, for the dialog.
fn control_effect_lines(state: &State, input: &ControlInput) -> Vec<String> {
    let field = |k: &str| input.fields.get(k).map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned));
    let subject = inert(&input.subject, 60);
    match input.kind {
        ControlKind::TrustSet => {
            let to = field("level").as_deref().and_then(NotebookTrust::parse);
            let from = field("previous").as_deref().and_then(NotebookTrust::parse);
            let mut out = vec![format!(
                "{subject}: {} → {}",
                from.map_or("?", NotebookTrust::as_str),
                to.map_or("?", NotebookTrust::as_str)
            )];
            for tier in ToolTier::ALL {
                let before = crate::protocol::tiers::gate_action(Some(tier), from);
                let after = crate::protocol::tiers::gate_action(Some(tier), to);
                if before != after {
                    out.push(format!("{tier} tools: {before} → {after}"));
                }
            }
            if to == Some(NotebookTrust::Autonomous) {
                out.push("destructive tools will run without any confirmation".into());
            }
            out
        }
        ControlKind::Quarantine => {
            vec![format!("everything {subject} asks is blocked until released; it drops to ring 3")]
        }
        ControlKind::Kill => {
            let pending = state
                .snapshot
                .packets
                .iter()
                .filter(|e| e.packet.agent == input.subject && !state.decisions.contains_key(&e.packet.id))
                .count();
            vec![
                format!("the kill switch writes signals/{subject}.json (the stop signal)"),
                format!(
                    "its {pending} pending packet(s) are compensated; everything it asks is blocked until released"
                ),
            ]
        }
        ControlKind::Release => vec![format!("{subject} is active again, at the ring its score earns")],
        ControlKind::Elevate => vec![format!(
            "ring {} → {} for {} s from the signature (about until {}), then back",
            field("original_ring").unwrap_or_else(|| "?".into()),
            field("ring").unwrap_or_else(|| "?".into()),
            field("ttl_seconds").unwrap_or_else(|| "?".into()),
            field("expires_at").unwrap_or_else(|| "?".into()),
        )],
    }
}

/// The dialog previewing a control before it is signed: buttons, or (`typed`) the line where
/// the notebook's name must be typed.
fn render_control_confirm(
    state: &State,
    theme: &Theme,
    frame: &mut Frame<'_>,
    area: Rect,
    input: &ControlInput,
    focus: Option<Button>,
    typed: Option<&str>,
) {
    let role = match input.kind {
        ControlKind::Kill | ControlKind::Quarantine => "refuse",
        ControlKind::Release => "approve",
        ControlKind::TrustSet | ControlKind::Elevate => "warn",
    };
    let mut lines = vec![
        Line::from(Span::styled(format!("Sign this control: {}?", input.kind.as_str()), theme.get(role))),
        Line::from(""),
        kv(theme, "control", input.kind.as_str()),
        kv(theme, "subject", inert(&input.subject, 60)),
    ];
    for (k, v) in &input.fields {
        let v = v.as_str().map_or_else(|| v.to_string(), str::to_owned);
        lines.push(kv(theme, "", format!("{} = {}", inert(k, 20), inert(&v, 60))));
    }
    if let Some(r) = &input.reason {
        lines.push(kv(theme, "reason", inert(r, 60)));
    }
    lines.push(kv(theme, "principal", inert(state.principal.as_deref().unwrap_or(""), 40)));
    lines.push(kv(theme, "key", state.fingerprint.clone().unwrap_or_default()));
    lines.push(kv(theme, "record", format!("{} (dated when signed)", input.kind.record_action())));
    lines.push(Line::from(""));
    for l in control_effect_lines(state, input) {
        lines.push(Line::from(Span::styled(format!("  {l}"), theme.get(role))));
    }
    lines.push(Line::from(""));
    match (typed, focus) {
        (Some(text), _) => {
            lines.push(Line::from(vec![
                Span::styled(format!("type {} to confirm: ", inert(&input.subject, 40)), theme.get("header")),
                Span::raw(inert(text, 60)),
                Span::styled("▏", theme.get("accent")),
            ]));
            lines.push(
                Line::from(Span::styled("enter sign · esc cancel · anything else cancels", theme.get("muted")))
                    .alignment(Alignment::Center),
            );
        }
        (None, focus) => {
            let button = |label: &str, b: Button| {
                let style = if focus == Some(b) { theme.get("button_focus") } else { theme.get("button") };
                Span::styled(format!("[ {label} ]"), style)
            };
            lines.push(
                Line::from(vec![
                    button("Cancel", Button::Cancel),
                    Span::raw("   "),
                    button("Sign control", Button::Sign),
                ])
                .alignment(Alignment::Center),
            );
            lines.push(
                Line::from(Span::styled("y sign · n/esc cancel · tab move · enter press", theme.get("muted")))
                    .alignment(Alignment::Center),
            );
        }
    }
    // Tall enough for the wrapped text, so the buttons are never cut off.
    let para = Paragraph::new(lines).wrap(Wrap { trim: false });
    let height = para.line_count(96.min(area.width).saturating_sub(2));
    let rect = centered(area, 96, u16::try_from(height + 2).unwrap_or(u16::MAX));
    frame.render_widget(Clear, rect);
    frame.render_widget(
        para.block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(theme.get(role))
                .title(Span::styled(format!(" Confirm: {} ", input.kind.as_str()), theme.get(role))),
        ),
        rect,
    );
}

fn render_control_reason(theme: &Theme, frame: &mut Frame<'_>, area: Rect, input: &ControlInput, text: &str) {
    let required = matches!(input.kind, ControlKind::Quarantine | ControlKind::Kill);
    let lines = vec![
        kv(theme, "control", input.kind.as_str()),
        kv(theme, "agent", inert(&input.subject, 60)),
        Line::from(""),
        Line::from(vec![
            Span::styled(if required { "reason: " } else { "reason (optional): " }, theme.get("header")),
            Span::raw(inert(text, 200)),
            Span::styled("▏", theme.get("accent")),
        ]),
        Line::from(""),
        Line::from(Span::styled("enter continue · esc cancel", theme.get("muted"))),
    ];
    let rect = centered(area, 80, lines.len() as u16 + 2);
    frame.render_widget(Clear, rect);
    frame.render_widget(
        Paragraph::new(lines).wrap(Wrap { trim: false }).block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(theme.get("refuse"))
                .title(format!(" {}: why? ", input.kind.as_str())),
        ),
        rect,
    );
}

fn render_elevation_input(state: &State, theme: &Theme, frame: &mut Frame<'_>, area: Rect, agent: &str, text: &str) {
    let ring = state.assessment().monitor.agents.get(agent).map_or(Ring::Sandbox, |a| a.ring);
    let lines = vec![
        kv(theme, "elevate", inert(agent, 60)),
        kv(theme, "now", ring.label()),
        Line::from(""),
        Line::from(vec![
            Span::styled("ring (1 or 2) and TTL in seconds: ", theme.get("header")),
            Span::raw(inert(text, 40)),
            Span::styled("▏", theme.get("accent")),
        ]),
        Line::from(Span::styled("e.g. `2 300`: ring 2 for five minutes; `1 300`: ring 1", theme.get("muted"))),
        Line::from(""),
        Line::from(Span::styled("enter continue · esc cancel", theme.get("muted"))),
    ];
    let rect = centered(area, 80, lines.len() as u16 + 2);
    frame.render_widget(Clear, rect);
    frame.render_widget(
        Paragraph::new(lines).wrap(Wrap { trim: false }).block(
            Block::default().borders(Borders::ALL).border_style(theme.get("warn")).title(" Elevate: ring and TTL "),
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
