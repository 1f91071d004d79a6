//! The detail pane: a packet whole (its fields, the composed verdict, the gate's decision, the
//! agent's record), an invalid file, a decided packet whose file is gone, an audit entry.

use super::common::{decision_label, hang, kv, own_line, plural, risk_style, state_label, state_style, verdict_label};
use super::posterior::{evidence_lines, posterior_lines};
use crate::app::{Pane, State};
use crate::theme::Theme;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span, Text};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use serde_json::Value;
use warrant_protocol::clock;
use warrant_protocol::packet::Packet;
use warrant_protocol::text::inert;

pub(super) fn render_detail(state: &State, theme: &Theme, frame: &mut Frame<'_>, area: Rect, zoomed: bool) {
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
                kv(
                    theme,
                    "in",
                    if f.kind == warrant_store::spool::FileKind::Packet { "packets/" } else { "receipts/" },
                ),
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
        Pane::Audit => state.selected_audit().map_or_else(Vec::new, |e| audit_lines(theme, state, e)),
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
        lines.push(kv(theme, "publisher", warrant_store::spool::publisher_label(uid)));
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
                warrant_protocol::registry::lookup(&p.action_class)
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
    approval_lines(&mut lines, state, theme, p, text_w);
    if let Some(r) = &p.reason {
        lines.push(kv(theme, "reason", inert(r, text_w)));
    }
    time_lines(&mut lines, state, theme, p);
    grant_lines(&mut lines, state, theme, p, text_w);
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
            evidence_summary(p.evidence()),
            state.receipts_for(&p.action_class)
        ),
    ));
    lines.extend(record_lines(state, theme, p));
    decision_lines(&mut lines, state, theme, p, text_w);
    // Zoomed, nothing is cut: every field of the packet, every character, wrapped and scrolled.
    let budget = if zoomed { usize::MAX } else { 60 };
    lines.push(Line::from(Span::styled("proposed action (where it goes first)", theme.get("header"))));
    lines.extend(value_lines(theme, p.proposed_action(), row, budget, true));
    if !p.context().is_null() && p.context() != p.proposed_action() {
        lines.push(Line::from(Span::styled("context", theme.get("header"))));
        lines.extend(value_lines(theme, p.context(), row, budget, false));
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

/// The lines on approving `p`: why no one may, what would change that, the graduation hint,
/// what an approval stands in for, and who has co-signed.
fn approval_lines(lines: &mut Vec<Line<'_>>, state: &State, theme: &Theme, p: &Packet, text_w: usize) {
    // A packet no one may approve: why, in one line, and what would change it.
    if let Some((why, remedy)) =
        state.verdict(&p.id).and_then(warrant_protocol::verdict::PacketVerdict::why_not_approvable)
    {
        // Whole, wrapped under the key: this line is the way out.
        lines.push(kv(theme, "why", Span::styled(inert(&why, usize::MAX), theme.get("warn"))));
        lines.push(kv(theme, "to change", inert(&remedy, usize::MAX)));
    }
    if let (Some(v), Some(tg)) = (state.verdict(&p.id), state.gate_decision(&p.id))
        && let Some(hint) =
            warrant_protocol::verdict::graduation_hint(v, tg, &state.policies.normalize(&p.action_class))
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
            .map_or_else(|| format!("0/{} signed", q.required), warrant_store::spool::Cosigning::describe);
        let text = format!("{signed} · needs {} (policy.toml [cosign])", q.describe());
        lines.push(kv(theme, "co-sign", inert(&text, usize::MAX)));
    }
}

/// The lines on `p`'s time: when it was created, when it expires, and whether it timed out.
fn time_lines(lines: &mut Vec<Line<'_>>, state: &State, theme: &Theme, p: &Packet) {
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
            .is_some_and(warrant_protocol::graduation::policy::ClassTimeout::signs_refusal);
        let then =
            if signs { "this console signs its refusal as a system decision (not evidence)" } else { "refuse only" };
        lines.push(kv(
            theme,
            "timeout",
            Span::styled(
                format!(
                    "⏱ TIMED OUT after {} (policy.toml): the agent was told `timeout`; {then}",
                    crate::notify::human(after)
                ),
                theme.get("warn"),
            ),
        ));
    }
}

/// The line on `p`'s grant: the grant it ran on, a use claimed that no grant covers, or the
/// grant that covers it while it is undecided.
fn grant_lines(lines: &mut Vec<Line<'_>>, state: &State, theme: &Theme, p: &Packet, text_w: usize) {
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
}

/// The lines on `p`'s decision in the chain: the verdict, by whom and when, why, its record,
/// and whether the packet changed after it was signed.
fn decision_lines(lines: &mut Vec<Line<'_>>, state: &State, theme: &Theme, p: &Packet, text_w: usize) {
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

/// A JSON value as indented key/value lines (nested objects indented, long values wrapped under
/// their key, with `where_first` where the action goes first), inert, `width` columns wide, two columns in.
fn value_lines(theme: &Theme, v: &Value, width: usize, budget: usize, where_first: bool) -> Vec<Line<'static>> {
    crate::fields::field_lines(v, width.saturating_sub(2), budget, where_first)
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

/// What the principal knows of a packet's agent and class: the agent's record for
/// the class in the verified chain (approved, refused, the last refusal and its reason), the
/// class's posterior (mean and 95% credible interval), and the contract's reversibility and
/// blast radius in words.
fn record_lines(state: &State, theme: &Theme, p: &Packet) -> Vec<Line<'static>> {
    use warrant_protocol::ladder::{BlastRadius, Reversibility};
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
    // The agent's history with this class ("record" means a chain record only).
    lines.push(kv(theme, "history", record));
    if let Some(c) = state.posterior_of(&p.action_class) {
        lines.push(kv(
            theme,
            "posterior",
            format!(
                "mean {:.2} · 95% interval {:.2}–{:.2} · {} ({} {})",
                c.mean,
                c.ci_low,
                c.ci_high,
                c.tier.as_str(),
                c.samples,
                super::common::plural(usize::try_from(c.samples).unwrap_or(usize::MAX), "sample")
            ),
        ));
    }
    let contract = warrant_protocol::verdict::Governance::of_packet(p)
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

/// The gate's decision on a packet: state, mode, reason, graduationPath, constraints.
fn gate_lines(theme: &Theme, d: &warrant_protocol::graduation::Decision, width: usize) -> Vec<Line<'static>> {
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

/// The detail of an audit entry: every field, agent text inert.
fn audit_lines(theme: &Theme, state: &State, e: &warrant_engine::audit::AuditEntry) -> Vec<Line<'static>> {
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
    if let Some(c) = e.corrected_words() {
        lines.push(kv(theme, "approved", c));
        // The difference, when the packet this approval signed is still in the spool.
        let proposed = e
            .packet_id
            .as_deref()
            .and_then(|id| state.snapshot.packet(id))
            .filter(|p| Some(&p.packet.content_hash) == e.packet_hash.as_ref());
        if let Some(p) = proposed {
            for line in e.corrected_difference(p.packet.proposed_action()) {
                let text = format!("  {} {}", line.mark(), inert(line.text(), usize::MAX));
                lines.push(Line::from(Span::styled(text, theme.get(crate::dialog::diff_role(&line)))));
            }
        }
    }
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
