//! The Grants view (`7`): the principal's grants from the verified chain, with their
//! uses so far (`uses/`), end and signer; `x` revokes the selected one with a reason (a signed
//! revocation, effective for the next call). Rows are computed in `update`
//! ([`rows`]); [`render`] only reads them.

use super::app::State;
use super::theme::Theme;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use std::sync::Arc;
use warrant_protocol::grant::{Grant, GrantBook};
use warrant_protocol::text::inert;
use warrant_store::spool::Uses;

/// Where a grant stands now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GrantStatus {
    /// It covers calls.
    Live,
    /// Past its end.
    Expired,
    /// Every use claimed.
    UsedUp,
}

impl GrantStatus {
    /// The word shown.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            GrantStatus::Live => "live",
            GrantStatus::Expired => "expired",
            GrantStatus::UsedUp => "used up",
        }
    }
}

/// One row of the Grants view.
#[derive(Debug, Clone, PartialEq)]
pub struct GrantRow {
    /// The grant as the chain holds it.
    pub grant: Arc<Grant>,
    /// Its status at the time the rows were computed.
    pub status: GrantStatus,
    /// Uses claimed so far.
    pub uses: u64,
}

/// The rows: every grant issued and not revoked, live ones first, then in the order they were
/// signed; `now` in unix seconds.
#[must_use]
pub fn rows(book: &GrantBook, uses: &Uses, now: f64) -> Vec<GrantRow> {
    let mut rows: Vec<GrantRow> = book
        .issued()
        .into_iter()
        .map(|g| {
            let used = uses.by_grant.get(&g.grant_id).copied().unwrap_or(0);
            let status = if g.expires_unix.is_some_and(|t| t <= now) {
                GrantStatus::Expired
            } else if g.max_uses.is_some_and(|m| used >= m) {
                GrantStatus::UsedUp
            } else {
                GrantStatus::Live
            };
            GrantRow { grant: Arc::clone(g), status, uses: used }
        })
        .collect();
    rows.sort_by_key(|r| (r.status != GrantStatus::Live, r.grant.chain_index));
    rows
}

/// The uses of a row in words: `3 uses` or `1/5 uses`.
#[must_use]
pub fn uses_words(r: &GrantRow) -> String {
    match r.grant.max_uses {
        Some(m) => format!("{}/{m} uses", r.uses),
        None => format!("{} use{}", r.uses, if r.uses == 1 { "" } else { "s" }),
    }
}

/// The height of the selected grant's box below the list, in a view `height` rows high (none
/// when it would not leave the list room).
#[must_use]
pub fn detail_height(height: u16) -> u16 {
    match height {
        20.. => 10,
        16.. => 8,
        _ => 0,
    }
}

/// Draws the Grants view: the list, and the selected grant whole below it.
pub fn render(state: &State, theme: &Theme, frame: &mut Frame<'_>, area: Rect) {
    let rows = state.grant_rows();
    let detail_h = detail_height(area.height);
    let [list_area, detail_area] = Layout::vertical([Constraint::Min(4), Constraint::Length(detail_h)]).areas(area);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.get("border_focus"))
        .title(super::ui::tabs_line(state, theme, area.width));
    let inner = block.inner(list_area);
    frame.render_widget(block, list_area);
    if rows.is_empty() {
        let msg = "no grants: approve a held call with a scope (session, until, pattern) to grant more than one call";
        frame.render_widget(Paragraph::new(msg).style(theme.get("muted")).wrap(Wrap { trim: true }), inner);
        return;
    }
    let sel = state.selection(super::app::Pane::Grants);
    let (from, to) = super::ui::window(sel, rows.len(), usize::from(inner.height));
    let lines: Vec<Line<'_>> = rows[from..to]
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let selected = from + i == sel;
            let g = &r.grant;
            let status_style = match r.status {
                GrantStatus::Live => theme.get("ok"),
                _ => theme.get("muted"),
            };
            let until = g.expires_at.as_deref().unwrap_or("until revoked");
            let mut line = Line::from(vec![
                Span::raw(if selected { "▶ " } else { "  " }),
                Span::styled(format!("{:<8}", r.status.as_str()), status_style),
                Span::raw(format!("{:<8}", g.scope.as_str())),
                Span::raw(format!("{:<10}", uses_words(r))),
                Span::raw(format!("{:<22}", inert(until, 40))),
                Span::raw(inert(&format!("{} · {} · {}", g.agent, g.tool, g.action_class), 200)),
            ]);
            if selected {
                line = line.style(theme.get("selected"));
            }
            line
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), inner);
    if detail_h == 0 {
        return;
    }
    let Some(r) = rows.get(sel) else { return };
    let g = &r.grant;
    let t = |s: &str| inert(s, 400);
    let mut lines = vec![
        Line::from(vec![Span::styled("covers  ", theme.get("muted")), Span::raw(t(&g.describe()))]),
        Line::from(vec![
            Span::styled("grant   ", theme.get("muted")),
            Span::raw(format!("{} · {} · {}", t(&g.grant_id), r.status.as_str(), uses_words(r))),
        ]),
        Line::from(vec![
            Span::styled("signed  ", theme.get("muted")),
            Span::raw(format!(
                "by {} ({}) at {} · record {}",
                t(&g.principal),
                t(&g.key),
                t(&g.decided_at),
                g.chain_index
            )),
        ]),
        Line::from(vec![
            Span::styled("with    ", theme.get("muted")),
            Span::raw(format!("the approval of {}", t(&g.packet_id))),
        ]),
    ];
    if let Some(reason) = &g.reason {
        lines.push(Line::from(vec![Span::styled("why     ", theme.get("muted")), Span::raw(t(reason))]));
    }
    if r.status == GrantStatus::Live && !state.read_only {
        let key = state.keymap.first_key("normal", "revoke").unwrap_or_default();
        lines.push(Line::from(Span::styled(
            format!("{key}: revoke (the next call waits for you again)"),
            theme.get("muted"),
        )));
    }
    let block = Block::default().borders(Borders::ALL).border_style(theme.get("border"));
    frame.render_widget(Paragraph::new(lines).block(block).wrap(Wrap { trim: false }), detail_area);
}

/// The dialog previewing the revocation of a grant before it is signed: the grant, what it
/// covers, the reason, the principal's key, and Cancel (focused first) / Sign.
pub fn render_revoke_confirm(
    state: &State,
    theme: &Theme,
    frame: &mut Frame<'_>,
    area: Rect,
    c: &crate::app::RevokeConfirm,
) {
    let words = state.grants.get(&c.grant_id).map_or_else(String::new, |g| g.describe());
    let kv = |k: &str, v: String| Line::from(vec![Span::styled(format!("{k:<10} "), theme.get("muted")), Span::raw(v)]);
    let mut lines = vec![
        Line::from(Span::styled("Sign the revocation of this grant?", theme.get("refuse"))),
        Line::from(""),
        kv("grant", inert(&c.grant_id, 80)),
        kv("covers", inert(&words, 400)),
        kv("reason", inert(&c.reason, 500)),
        kv("principal", inert(state.principal.as_deref().unwrap_or(""), 40)),
        kv("key", state.fingerprint.clone().unwrap_or_default()),
        Line::from(""),
        Line::from(Span::styled(
            "  calls it covered wait for you again from the moment it is signed",
            theme.get("refuse"),
        )),
        Line::from(""),
    ];
    lines.extend(crate::ui::sign_buttons(theme, c.focus, "Sign revocation"));
    let para = Paragraph::new(lines).wrap(Wrap { trim: false });
    let w = area.width.saturating_sub(4).min(96);
    let height = u16::try_from(para.line_count(w.saturating_sub(2)) + 2).unwrap_or(u16::MAX).min(area.height);
    let r =
        Rect { x: area.x + (area.width - w) / 2, y: area.y + area.height.saturating_sub(height) / 2, width: w, height };
    crate::ui::clear_around(frame, r, area);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.get("refuse"))
        .title(format!(" Confirm: revoke grant {} ", inert(&c.grant_id, 40)));
    frame.render_widget(para.block(block), r);
}

/// The line where the principal says why a grant is revoked (enter goes on to the y/n dialog).
pub fn render_revoke_reason(
    state: &State,
    theme: &Theme,
    frame: &mut Frame<'_>,
    area: Rect,
    grant_id: &str,
    text: &str,
) {
    let words =
        state.grants.get(grant_id).map_or_else(|| grant_id.to_owned(), |g| format!("{grant_id}: {}", g.describe()));
    let w = area.width.saturating_sub(4).min(100);
    let r =
        Rect { x: area.x + (area.width - w) / 2, y: area.y + area.height / 3, width: w, height: 6.min(area.height) };
    crate::ui::clear_around(frame, r, area);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.get("border_focus"))
        .title(" Revoke a grant: why? (enter continues, esc cancels) ");
    let lines = vec![
        Line::from(Span::raw(inert(&words, 400))),
        Line::from(vec![Span::styled("reason: ", theme.get("muted")), Span::raw(inert(text, 500)), Span::raw("▏")]),
    ];
    frame.render_widget(Paragraph::new(lines).block(block).wrap(Wrap { trim: false }), r);
}
