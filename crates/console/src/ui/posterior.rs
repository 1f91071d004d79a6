//! An action class's posterior as the Posteriors view's detail shows it, its evidence rows (also
//! shown under a packet) and the interval bar.

use super::common::{kv, own_line, plural, tier_style};
use crate::app::State;
use crate::theme::Theme;
use ratatui::text::{Line, Span};
use warrant_protocol::text::inert;

/// The posterior mean as a marker on a band for the 95% interval, `width` cells over [0, 1]:
/// `·` outside the interval, `━` inside it, `●` at the mean (shape, not only colour).
pub(super) fn interval_bar(theme: &Theme, mean: f64, low: f64, high: f64, width: usize) -> Line<'static> {
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

/// Evidence rows as lines: date, label, provenance, weight, where from. The last `max` rows.
pub(super) fn evidence_lines(state: &State, theme: &Theme, class: &str, max: usize) -> Vec<Line<'static>> {
    let rows: Vec<std::borrow::Cow<'_, warrant_protocol::graduation::EvidenceRow>> =
        state.evidence_for(class).collect();
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

pub(super) fn posterior_lines(
    state: &State,
    theme: &Theme,
    p: &crate::app::ClassPosterior,
    zoomed: bool,
) -> Vec<Line<'static>> {
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
