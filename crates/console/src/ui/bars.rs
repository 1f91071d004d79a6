//! The bars around the views: the title bar (totals), the tab line of the list blocks, the
//! status line (chain, key, spool) and the key hints (or the `:` command line, or a message).

use super::common::plural;
use crate::app::{ChainState, InputPurpose, Mode, Pane, State};
use crate::filter::SortKey;
use crate::theme::Theme;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use warrant_protocol::text::inert;

pub(super) fn render_title(state: &State, theme: &Theme, frame: &mut Frame<'_>, area: Rect) {
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
pub(crate) fn tabs_line(state: &State, theme: &Theme, width: u16) -> Line<'static> {
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

pub(super) fn render_status(state: &State, theme: &Theme, frame: &mut Frame<'_>, area: Rect) {
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

pub(super) fn render_hints(state: &State, theme: &Theme, frame: &mut Frame<'_>, area: Rect) {
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
        Mode::Confirm(_) | Mode::ControlConfirm(_) | Mode::RevokeConfirm(_) => {
            ("confirm", &["confirm", "cancel", "toggle"])
        }
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
        Mode::Normal if state.pane == Pane::Pending => (
            "normal",
            &[
                "down",
                "up",
                "open",
                "approve",
                "refuse",
                "next_pane",
                "filter",
                "sort",
                "copy_id",
                "pager",
                "help",
                "quit",
            ],
        ),
        Mode::Normal if state.pane == Pane::Decided => {
            ("normal", &["down", "up", "open", "next_pane", "filter", "copy_id", "pager", "help", "quit"])
        }
        Mode::Normal => ("normal", &["down", "up", "open", "next_pane", "filter", "log", "help", "quit"]),
    };
    // What enter opens depends on the view (the keymap's own words are kept when changed).
    let opens = match state.pane {
        Pane::Pending => "open packet",
        Pane::Decided => "open decision",
        Pane::Invalid => "open file",
        Pane::Posteriors => "open class",
        Pane::Audit => "open entry",
        Pane::Matrices | Pane::Agents | Pane::Grants => "open",
    };
    let mut spans = Vec::new();
    if state.zoomed && state.mode == Mode::Normal {
        let k = |c: &str| km.first_key("normal", c).unwrap_or_default();
        let decide = state.pane == Pane::Pending && !state.read_only;
        for (keys, desc) in [
            (format!("{}/{}", k("down"), k("up")), "scroll"),
            (format!("{}/{}", k("top"), k("bottom")), "top/end"),
            (format!("{}/{}", k("back"), k("quit")), "back"),
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
        let desc = if c == "open" && desc == "open packet" { opens } else { desc };
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
