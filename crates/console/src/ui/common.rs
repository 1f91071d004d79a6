//! What every view shares: the glyphs, words and styles of states, verdicts and risks, list
//! windows, `kv` lines, hanging wrap, cutting a line to a width, centring a box, plurals.

use crate::theme::Theme;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use warrant_protocol::decision::Verdict;
use warrant_protocol::packet::DecisionState;

/// Glyph and word for a decision state (never colour alone). `allowed` and
/// `allowed_with_constraints` read as the gate's opinion (`○ gate: allow`), never as a decision.
#[must_use]
pub fn state_label(s: Option<DecisionState>) -> (&'static str, &'static str) {
    match s {
        // A state is what the gate says, not a decision: a waiting packet the gate would let run
        // on its own is never shown as `✓ allowed`, which reads as an approval.
        Some(DecisionState::Allowed) => ("○", "gate: allow"),
        Some(DecisionState::AllowedWithConstraints) => ("≈", "gate: limits"),
        Some(DecisionState::ReviewRequired) => ("●", "review"),
        Some(DecisionState::Deferred) => ("◌", "deferred"),
        Some(DecisionState::Blocked) => ("⊘", "blocked"),
        Some(DecisionState::HumanOnly) => ("◆", "human only"),
        None => ("?", "unknown"),
    }
}

pub(super) fn verdict_label(v: Verdict) -> (&'static str, &'static str, &'static str) {
    match v {
        Verdict::Approve => ("✓", "APPROVED", "approve"),
        Verdict::Refuse => ("✗", "REFUSED", "refuse"),
    }
}

/// [`verdict_label`] of a chain decision; a system refusal (a timeout) is `⏱ TIMEOUT`.
pub(super) fn decision_label(d: &warrant_store::spool::ChainDecision) -> (&'static str, &'static str, &'static str) {
    match d.system {
        Some(warrant_protocol::decision::SystemCause::Timeout) => ("⏱", "TIMEOUT", "refuse"),
        None => verdict_label(d.verdict),
    }
}

pub(super) fn risk_style(theme: &Theme, risk: Option<&str>) -> Style {
    match risk {
        Some("low") => theme.get("risk_low"),
        Some("medium") => theme.get("risk_medium"),
        Some("high") => theme.get("risk_high"),
        Some("critical") => theme.get("risk_critical"),
        _ => theme.get("muted"),
    }
}

/// The style of a decision state: never the only signal (glyphs and words go with it).
pub(super) fn state_style(theme: &Theme, s: Option<DecisionState>) -> Style {
    match s {
        Some(DecisionState::Allowed | DecisionState::AllowedWithConstraints) => theme.get("ok"),
        Some(DecisionState::Blocked) => theme.get("refuse"),
        Some(DecisionState::HumanOnly) => theme.get("warn"),
        _ => theme.get("pending"),
    }
}

pub(super) fn tier_style(theme: &Theme, tier: warrant_protocol::graduation::Tier) -> Style {
    match tier {
        warrant_protocol::graduation::Tier::Review => theme.get("warn"),
        warrant_protocol::graduation::Tier::Gated => theme.get("muted"),
        warrant_protocol::graduation::Tier::Supervised => theme.get("pending"),
        warrant_protocol::graduation::Tier::AutoCapped => theme.get("ok"),
    }
}

/// First visible row so that `selected` is on screen in a window of `height` rows.
pub(crate) fn window(selected: usize, len: usize, height: usize) -> (usize, usize) {
    if height == 0 || len == 0 {
        return (0, 0);
    }
    let offset = selected.saturating_sub(height - 1);
    (offset, (offset + height).min(len))
}

/// `line` cut to `width` cells, ending in `…` when anything was cut.
pub(super) fn cut_line(line: Line<'static>, width: usize) -> Line<'static> {
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

pub(super) fn kv<'a>(theme: &Theme, k: &'a str, v: impl Into<Span<'a>>) -> Line<'a> {
    Line::from(vec![Span::styled(format!("{k:>10}  "), theme.get("muted")), v.into()])
}

/// A line wider than `width` split into lines that fit, the continuations indented under the
/// value: past a `kv` label, or two columns past the line's own indentation (at most half the
/// width). Breaks after a space when one leaves at least half a row; styles are kept; nothing is
/// dropped.
pub(super) fn hang(line: Line<'_>, width: usize) -> Vec<Line<'static>> {
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

pub(super) fn own_line(l: Line<'_>) -> Line<'static> {
    Line::from(l.spans.into_iter().map(|s| Span::styled(s.content.into_owned(), s.style)).collect::<Vec<_>>())
}

pub(super) fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect { x: area.x + (area.width - w) / 2, y: area.y + (area.height - h) / 2, width: w, height: h }
}

/// The two centred lines closing a signed control's dialog: `[ Cancel ]   [ SIGN ]` (the
/// `focus`ed one highlighted) and the keys that answer it.
pub(crate) fn sign_buttons(theme: &Theme, focus: crate::app::Button, sign: &str) -> [Line<'static>; 2] {
    use crate::app::Button;
    let button = |label: &str, b: Button| {
        Span::styled(format!("[ {label} ]"), theme.get(if focus == b { "button_focus" } else { "button" }))
    };
    [
        Line::from(vec![button("Cancel", Button::Cancel), Span::raw("   "), button(sign, Button::Sign)])
            .alignment(ratatui::layout::Alignment::Center),
        Line::from(Span::styled("y sign · n/esc cancel · tab move · enter press", theme.get("muted")))
            .alignment(ratatui::layout::Alignment::Center),
    ]
}

/// Clears `rect` and one cell around it (within `area`) before a dialog or overlay is drawn
/// there, so no lone character of the view below shows beside its border (at 120 columns the
/// confirmation dialog left one column of the detail, a stray "s", on its right).
pub fn clear_around(frame: &mut ratatui::Frame<'_>, rect: Rect, area: Rect) {
    let x = rect.x.saturating_sub(1).max(area.x);
    let y = rect.y.saturating_sub(1).max(area.y);
    let right = rect.right().saturating_add(1).min(area.right());
    let bottom = rect.bottom().saturating_add(1).min(area.bottom());
    let margin = Rect { x, y, width: right.saturating_sub(x), height: bottom.saturating_sub(y) };
    frame.render_widget(ratatui::widgets::Clear, margin);
}

/// `word` for `n` of them: "1 line", "2 lines".
#[must_use]
pub fn plural(n: usize, word: &str) -> String {
    if n == 1 { word.to_owned() } else { format!("{word}s") }
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
