//! The dialogs: the sign dialog for decisions (scrolled from `dialog::confirm_layout`), the
//! refusal reasons, and the previews of the principal's controls (reason, elevation, typed
//! confirmation).

use super::common::{centered, kv, plural, verdict_label};
use crate::app::{Button, State};
use crate::theme::Theme;
use ratatui::Frame;
use ratatui::layout::{Alignment, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use warrant_protocol::control::{ControlInput, ControlKind};
use warrant_protocol::decision::Verdict;
use warrant_protocol::packet::Packet;
use warrant_protocol::rings::Ring;
use warrant_protocol::text::inert;
use warrant_protocol::tiers::{NotebookTrust, ToolTier};

pub(super) fn render_confirm(state: &State, theme: &Theme, frame: &mut Frame<'_>, area: Rect, c: &crate::app::Confirm) {
    let (_, _, role) = verdict_label(c.verdict);
    let (rows, g) = crate::dialog::confirm_layout(state, c, area);
    let visible = usize::from(g.body.height);
    // The same clamp as `update`'s; the scroll itself only changes there.
    let scroll = c.scroll.min(rows.len().saturating_sub(visible));
    let lines: Vec<Line<'static>> = rows
        .iter()
        .skip(scroll)
        .take(visible)
        .map(|r| Line::from(r.0.iter().map(|(t, role)| Span::styled(t.clone(), theme.get(role))).collect::<Vec<_>>()))
        .collect();
    super::common::clear_around(frame, g.rect, area);
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
            {
                // What fits the footer: signing, cancelling and the grant's scope first, then
                // the keys a reader can guess (move, press) as room allows.
                let mut keys = vec![
                    format!("{} sign", k("confirm")),
                    format!("{} cancel", k("cancel")),
                    format!("{}/{} scroll", k("down"), k("up")),
                    format!("{} zoom", k("zoom")),
                    format!("{} move", k("toggle")),
                    format!("{} press", k("activate")),
                ];
                // A grant comes with the approval of one packet only.
                if c.verdict == Verdict::Approve && c.batch.is_empty() {
                    keys.insert(2, format!("{} grant scope", k("scope")));
                }
                let width = usize::from(g.footer.width);
                while keys.len() > 4 && keys.iter().map(|k| k.chars().count() + 3).sum::<usize>() > width + 3 {
                    keys.pop();
                }
                keys.join(" · ")
            },
            theme.get("muted"),
        ))
        .alignment(Alignment::Center),
    ];
    frame.render_widget(Paragraph::new(footer), g.footer);
}

pub(super) fn render_reason(theme: &Theme, frame: &mut Frame<'_>, area: Rect, p: &Packet, text: &str) {
    let head = vec![kv(theme, "refuse", inert(&p.id, 60)), kv(theme, "class", inert(&p.action_class, 60))];
    render_refusal_reason(theme, frame, area, head, "reason: ", text, "enter continue · esc cancel", " Refuse: why? ");
}

/// The one reason for refusing a selection: how many packets, their classes; every packet is
/// listed whole in the dialog that follows.
pub(super) fn render_batch_reason(
    theme: &Theme,
    frame: &mut Frame<'_>,
    area: Rect,
    ps: &[std::sync::Arc<Packet>],
    text: &str,
) {
    let head = vec![
        kv(theme, "refuse", format!("{} selected {}", ps.len(), plural(ps.len(), "packet"))),
        kv(theme, "classes", inert(&crate::dialog::counted(ps.iter().map(|p| p.action_class.as_str())), 200)),
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
    super::common::clear_around(frame, rect, area);
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(Block::default().borders(Borders::ALL).border_style(theme.get("refuse")).title(title)),
        rect,
    );
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
                let before = warrant_protocol::tiers::gate_action(Some(tier), from);
                let after = warrant_protocol::tiers::gate_action(Some(tier), to);
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
pub(super) fn render_control_confirm(
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
            lines.extend(super::common::sign_buttons(theme, focus.unwrap_or(Button::Cancel), "Sign control"))
        }
    }
    // Tall enough for the wrapped text, so the buttons are never cut off.
    let para = Paragraph::new(lines).wrap(Wrap { trim: false });
    let height = para.line_count(96.min(area.width).saturating_sub(2));
    let rect = centered(area, 96, u16::try_from(height + 2).unwrap_or(u16::MAX));
    super::common::clear_around(frame, rect, area);
    frame.render_widget(
        para.block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(theme.get(role))
                .title(Span::styled(format!(" Confirm: {} ", control_in_words(input)), theme.get(role))),
        ),
        rect,
    );
}

pub(super) fn render_control_reason(
    theme: &Theme,
    frame: &mut Frame<'_>,
    area: Rect,
    input: &ControlInput,
    text: &str,
) {
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
    super::common::clear_around(frame, rect, area);
    frame.render_widget(
        Paragraph::new(lines).wrap(Wrap { trim: false }).block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(theme.get("refuse"))
                .title(format!(" {}: why? ", capitalized(&control_in_words(input)))),
        ),
        rect,
    );
}

pub(super) fn render_elevation_input(
    state: &State,
    theme: &Theme,
    frame: &mut Frame<'_>,
    area: Rect,
    agent: &str,
    text: &str,
) {
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
    super::common::clear_around(frame, rect, area);
    frame.render_widget(
        Paragraph::new(lines).wrap(Wrap { trim: false }).block(
            Block::default().borders(Borders::ALL).border_style(theme.get("warn")).title(" Elevate: ring and TTL "),
        ),
        rect,
    );
}

/// What a control does, in words, with its subject: `quarantine agent-scribe`, `set the trust
/// of notebook nb-1`. Dialog titles use these, not the wire names (`agent.quarantine`), which the
/// dialog's body still shows.
fn control_in_words(input: &warrant_protocol::control::ControlInput) -> String {
    let subject = inert(&input.subject, 40);
    match input.kind {
        ControlKind::TrustSet => format!("set the trust of notebook {subject}"),
        ControlKind::Quarantine => format!("quarantine {subject}"),
        ControlKind::Release => format!("release {subject}"),
        ControlKind::Kill => format!("kill {subject}"),
        ControlKind::Elevate => format!("raise the ring of {subject}"),
    }
}

/// `s` with its first letter capital.
fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or_default()
}
