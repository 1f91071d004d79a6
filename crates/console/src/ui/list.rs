//! The list panes (Pending, Decided, Invalid, Posteriors, Audit): the table with columns that
//! narrow and drop to fit, and the window of rows around the selection.

use super::bars::tabs_line;
use super::common::{cut_line, decision_label, risk_style, state_label, state_style, tier_style, window};
use super::posterior::interval_bar;
use crate::app::{Pane, State};
use crate::filter::SortKey;
use crate::theme::Theme;
use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row, Table};
use warrant_protocol::clock;
use warrant_protocol::text::inert;

/// A column of a list: its header, its cells (already inert), the narrowest it may become (its
/// cells then end in `…`), and when it goes if even that does not fit (higher goes first; 0
/// never goes). A column whose cells are `fixed` keeps its width or goes.
struct Column {
    header: String,
    cells: Vec<Line<'static>>,
    min: usize,
    drop: u8,
    fixed: bool,
}

impl Column {
    fn new(header: &str, cells: Vec<Line<'static>>, min: usize, drop: u8) -> Self {
        Self { header: header.to_owned(), cells, min, drop, fixed: false }
    }

    fn natural(&self) -> usize {
        self.cells.iter().map(Line::width).chain([self.header.chars().count()]).max().unwrap_or(0)
    }
}

/// A fitted table: its headers, its columns' constraints and its rows.
type Table3 = (Vec<String>, Vec<Constraint>, Vec<Row<'static>>);

/// Widths for `columns` in `avail` cells (one cell between columns): each as wide as its widest
/// cell; when that does not fit, decorative columns (`drop` 4 and up) go first, then the widest
/// shrinkable columns narrow towards their minimum (cut with `…`), then columns go by their
/// `drop` order. The last column takes what is left.
/// Returns the headers, the constraints and the rows.
fn fit_columns(mut columns: Vec<Column>, avail: usize) -> Table3 {
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
    let headers = columns.iter().map(|c| c.header.clone()).collect();
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

pub(super) fn render_list(state: &State, theme: &Theme, frame: &mut Frame<'_>, area: Rect) {
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
    let (header, widths, rows): Table3 = match state.pane {
        Pane::Pending => pending_table(state, theme, from, to, avail),
        Pane::Decided => decided_table(state, theme, from, to, avail),
        Pane::Posteriors => posteriors_table(state, theme, from, to, avail),
        Pane::Invalid => invalid_table(state, theme, from, to, avail),
        Pane::Audit => audit_table(state, theme, from, to, avail),
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

/// The Pending table of the rows `from..to`, fitted to `avail` cells.
fn pending_table(state: &State, theme: &Theme, from: usize, to: usize, avail: usize) -> Table3 {
    let list = &state.pending()[from..to];
    let mut cols = vec![
        // `⏱` marks a packet past its class's `refuse_after` (timed out).
        Column::new(
            "AGE",
            list.iter()
                .map(|e| match state.timed_out(e) {
                    Some(_) => styled(format!("⏱{}", clock::human_age(state.now - e.created())), theme.get("warn")),
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
                        // Past its `expires_at` it can only be refused: marked, not shown live;
                        // before it, the time left.
                        match state.expires_in(&e.packet) {
                            Some(left) if left <= 0.0 => styled("⏱ expired".into(), theme.get("warn")),
                            Some(left) => {
                                styled(format!("{g} {w} ⏱{}", clock::human_age(left)), state_style(theme, shown))
                            }
                            None => styled(format!("{g} {w}"), state_style(theme, shown)),
                        }
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
    // The sorted column says so, and which way: ▼ from the top of the order down (newest,
    // highest risk, A to Z), ▲ reversed.
    let sorted = match state.sort {
        SortKey::Age => "AGE",
        SortKey::Risk => "RISK",
        SortKey::Class => "ACTION CLASS",
        SortKey::Agent => "AGENT",
    };
    if let Some(c) = cols.iter_mut().find(|c| c.header == sorted) {
        c.header = format!("{sorted} {}", if state.sort_reverse { "▲" } else { "▼" });
    }
    fit_columns(cols, avail)
}

/// The Decided table of the rows `from..to`, fitted to `avail` cells.
fn decided_table(state: &State, theme: &Theme, from: usize, to: usize, avail: usize) -> Table3 {
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

/// The Posteriors table of the rows `from..to`, fitted to `avail` cells (the interval band takes
/// the room the other columns leave).
fn posteriors_table(state: &State, theme: &Theme, from: usize, to: usize, avail: usize) -> Table3 {
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
        cols.iter().enumerate().filter(|(i, _)| *i != 1).map(|(_, c)| c.natural()).sum::<usize>() + cols.len() - 1;
    let bar_w = avail.saturating_sub(others).clamp(6, 24);
    cols[1].cells = list.iter().map(|p| interval_bar(theme, p.mean, p.ci_low, p.ci_high, bar_w)).collect();
    if list.is_empty() {
        cols[1].cells.clear();
    }
    fit_columns(cols, avail)
}

/// The Invalid table of the rows `from..to`, fitted to `avail` cells.
fn invalid_table(state: &State, theme: &Theme, from: usize, to: usize, avail: usize) -> Table3 {
    let list = &state.invalid()[from..to];
    let cols = vec![
        Column {
            fixed: true,
            ..Column::new(
                "KIND",
                list.iter()
                    .map(|f| {
                        let kind = match f.kind {
                            warrant_store::spool::FileKind::Packet => "packet",
                            warrant_store::spool::FileKind::Receipt => "receipt",
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

/// The Audit table of the rows `from..to`, fitted to `avail` cells.
fn audit_table(state: &State, theme: &Theme, from: usize, to: usize, avail: usize) -> Table3 {
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
        // A time is whole or gone, never cut to `2026-11-2…`.
        Column {
            fixed: true,
            ..Column::new("TIME", list.iter().map(|e| raw(inert(e.at.get(..19).unwrap_or(&e.at), 19))).collect(), 0, 3)
        },
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

/// A cell of plain text.
fn raw(t: String) -> Line<'static> {
    Line::from(t)
}

/// A cell of text in the style `st`.
fn styled(t: String, st: Style) -> Line<'static> {
    Line::from(Span::styled(t, st))
}

/// How an audit entry was allowed, in a few words for the list.
fn audit_how_short(e: &warrant_engine::audit::AuditEntry) -> String {
    use warrant_engine::audit::How;
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
