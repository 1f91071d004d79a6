//! The sign dialog's content and layout, shared by `update` (which decides when the whole of it
//! has been on screen, unlocking an approval) and rendering (which draws it). Pure functions of
//! the state, the dialog and the terminal's size: both sides compute the same lines.
//!
//! The dialog scrolls: every field of the proposed action is in it, wrapped, never cut, the
//! fields that say where the action goes first. Below the scrolling part, a fixed footer says
//! how much is still unseen and holds the buttons.

use super::app::{Confirm, State};
use super::fields::{FieldLine, field_lines};
use ratatui::layout::Rect;
use warrant_protocol::decision::Verdict;
use warrant_protocol::text::inert;

/// One display line of the dialog: pieces of text with their theme role. Lines are made to fit
/// the dialog's width, so the count of lines is the count of rows on screen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row(pub Vec<(String, &'static str)>);

/// Rows of the fixed footer: what is left unseen, the buttons, the keys.
pub const FOOTER: u16 = 3;

/// Where the dialog is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// The whole dialog, borders included.
    pub rect: Rect,
    /// The scrolling content.
    pub body: Rect,
    /// The fixed footer.
    pub footer: Rect,
}

/// The dialog's outer width on a terminal `area`: it grows with the terminal up to 120 columns,
/// and takes the whole screen when zoomed or narrow.
#[must_use]
pub fn outer_width(area: Rect, zoomed: bool) -> u16 {
    if zoomed || area.width < 64 { area.width } else { (area.width - 4).min(120) }
}

/// The width of the content inside the borders.
#[must_use]
pub fn content_width(area: Rect, zoomed: bool) -> usize {
    usize::from(outer_width(area, zoomed).saturating_sub(2))
}

/// The dialog's rectangle for `rows` lines of content: as tall as the content and footer need,
/// at most the terminal (the whole terminal when zoomed), centred.
#[must_use]
pub fn geometry(area: Rect, rows: usize, zoomed: bool) -> Geometry {
    let w = outer_width(area, zoomed);
    let want = u16::try_from(rows).unwrap_or(u16::MAX).saturating_add(FOOTER + 2);
    let h = if zoomed { area.height } else { want.min(area.height) };
    let rect = Rect { x: area.x + (area.width - w) / 2, y: area.y + (area.height - h) / 2, width: w, height: h };
    let inner = Rect {
        x: rect.x + 1,
        y: rect.y + 1,
        width: rect.width.saturating_sub(2),
        height: rect.height.saturating_sub(2),
    };
    let body_h = inner.height.saturating_sub(FOOTER);
    Geometry {
        rect,
        body: Rect { height: body_h, ..inner },
        footer: Rect { y: inner.y + body_h, height: inner.height - body_h, ..inner },
    }
}

/// A labelled value: the label right-aligned in 10 columns, the value wrapped under itself.
fn labelled(out: &mut Vec<Row>, label: &str, value: &str, role: &'static str, width: usize) {
    let avail = width.saturating_sub(12).max(8);
    for (i, piece) in super::fields::wrap(value, avail).into_iter().enumerate() {
        let lead = if i == 0 { format!("{label:>10}  ") } else { " ".repeat(12) };
        out.push(Row(vec![(lead, "muted"), (piece, role)]));
    }
}

fn field_row(l: FieldLine, indent: usize) -> Row {
    let (key_role, text_role) = if l.important { ("accent", "title") } else { ("muted", "base") };
    Row(vec![(" ".repeat(indent + l.indent), "base"), (l.key, key_role), (l.text, text_role)])
}

/// Every line of the dialog's scrolling content at `width` columns: what is signed (packet,
/// agent, class, the content hash, the key, the principal, the reason) and every field of the
/// proposed action, where it goes first.
#[must_use]
pub fn confirm_rows(state: &State, c: &Confirm, width: usize) -> Vec<Row> {
    if !c.batch.is_empty() {
        return batch_rows(state, c, width);
    }
    let p = &c.packet;
    let role = if c.verdict == Verdict::Approve { "approve" } else { "refuse" };
    let what = match (c.verdict, &c.correction) {
        (Verdict::Approve, Some(_)) => "✓ Sign an APPROVAL AS CORRECTED of this packet?",
        (Verdict::Approve, None) => "✓ Sign an APPROVAL of this packet?",
        (Verdict::Refuse, _) => "✗ Sign a REFUSAL of this packet?",
    };
    let mut out = vec![Row(vec![(what.to_owned(), role)]), Row(vec![])];
    let any = usize::MAX;
    labelled(&mut out, "summary", &inert(&p.summary, any), "base", width);
    labelled(&mut out, "packet", &inert(&p.id, any), "base", width);
    labelled(&mut out, "agent", &inert(&p.agent, any), "base", width);
    labelled(&mut out, "class", &inert(&p.action_class, any), "title", width);
    labelled(&mut out, "payload", "SHA-256 of the packet's canonical JSON:", "base", width);
    for piece in super::fields::wrap(&p.content_hash, width.saturating_sub(2)) {
        out.push(Row(vec![("  ".into(), "base"), (piece, "accent")]));
    }
    labelled(&mut out, "key", state.fingerprint.as_deref().unwrap_or(""), "base", width);
    labelled(&mut out, "principal", &inert(state.principal.as_deref().unwrap_or(""), any), "base", width);
    if let Some(r) = &c.reason {
        labelled(&mut out, "reason", &inert(r, any), "base", width);
    }
    // What an approval stands in for is signed with it: shown before it is signed.
    if c.verdict == Verdict::Approve {
        for what in
            state.verdict(&p.id).map(warrant_protocol::verdict::PacketVerdict::stands_in_for).unwrap_or_default()
        {
            labelled(&mut out, "stands in", &format!("for {}", inert(&what, any)), "warn", width);
        }
        // The co-signing terms are signed with the approval (`[cosign]`): shown before it is.
        if let Some(q) = state.policies.cosign(&p.action_class) {
            let before = state.cosigned(p).map_or(0, |c| c.count.len());
            let signed = state
                .cosigned(p)
                .map_or_else(|| "nobody has signed".to_owned(), warrant_store::spool::Cosigning::describe);
            let then = if before + 1 >= q.required {
                format!("yours is {} of {}: it approves the packet", before + 1, q.required)
            } else {
                format!("yours is {} of {}: the call waits for more", before + 1, q.required)
            };
            let text = format!("needs {} · {signed} · {then}", q.describe());
            labelled(&mut out, "co-sign", &inert(&text, any), "warn", width);
        }
        if c.correction.is_none() {
            grant_rows(state, c, &mut out, width);
        }
    }
    out.push(Row(vec![]));
    if let Some(correction) = c.correction.as_deref().filter(|_| c.verdict == Verdict::Approve) {
        correction_rows(p, correction, &mut out, width);
        return out;
    }
    let fields = field_lines(p.proposed_action(), width.saturating_sub(2), usize::MAX, true);
    let n = match p.proposed_action() {
        serde_json::Value::Object(m) => m.len(),
        _ => 1,
    };
    out.push(Row(vec![(
        format!("proposed action: {n} field{}, every one, where it goes first", if n == 1 { "" } else { "s" }),
        "header",
    )]));
    out.extend(fields.into_iter().map(|l| field_row(l, 2)));
    out
}

/// An approval as corrected: the evidence it is, then the whole difference between the proposed
/// action and the correction, every line of both (`-` removed, `+` added), wrapped, never cut.
fn correction_rows(
    p: &warrant_protocol::packet::Packet,
    c: &warrant_protocol::correction::Correction,
    out: &mut Vec<Row>,
    width: usize,
) {
    let evidence = format!(
        "{} ({}‰ of the action changed): the agent runs the corrected action",
        c.size.label(),
        c.changed_permille
    );
    labelled(out, "corrected", &evidence, "warn", width);
    out.push(Row(vec![]));
    out.push(Row(vec![("the difference, every line of both (- proposed, + corrected):".to_owned(), "header")]));
    for line in warrant_protocol::correction::diff_lines(p.proposed_action(), &c.action) {
        let role = diff_role(&line);
        let pieces = super::fields::wrap(&inert(line.text(), usize::MAX), width.saturating_sub(4));
        for (i, piece) in pieces.into_iter().enumerate() {
            let lead = if i == 0 { line.mark() } else { ' ' };
            out.push(Row(vec![(format!("  {lead} "), role), (piece, role)]));
        }
    }
}

/// The theme role a line of a correction's difference is drawn in.
#[must_use]
pub fn diff_role(line: &warrant_protocol::correction::DiffLine) -> &'static str {
    match line {
        warrant_protocol::correction::DiffLine::Same(_) => "muted",
        warrant_protocol::correction::DiffLine::Removed(_) => "refuse",
        warrant_protocol::correction::DiffLine::Added(_) => "approve",
    }
}

/// The scope of an approval of one packet: once, or the grant signed with it in words
/// and the calls of the spool it would have covered, every one.
fn grant_rows(state: &State, c: &Confirm, out: &mut Vec<Row>, width: usize) {
    let any = usize::MAX;
    let Some(input) = &c.grant else {
        // Only a tool call can be granted more than once: for others there is nothing to choose.
        if warrant_protocol::grant::CallFacts::of_packet(&c.packet, &state.policies).is_some() {
            labelled(out, "scope", "once: this call only (s: grant more)", "base", width);
        }
        return;
    };
    let principal = state.principal.as_deref().unwrap_or_default();
    let doc =
        warrant_protocol::grant::grant_document(input, principal, state.fingerprint.as_deref().unwrap_or_default());
    let Ok(g) = warrant_protocol::grant::Grant::from_document(&doc) else {
        labelled(out, "scope", "this grant is malformed: it will not be signed", "error", width);
        return;
    };
    labelled(out, "GRANT", &format!("{}: {}", g.scope.as_str(), inert(&g.describe(), any)), "warn", width);
    let past =
        warrant_protocol::grant::past_calls(&g, state.snapshot.packets.iter().map(|e| &*e.packet), &state.policies);
    let n = past.len();
    labelled(
        out,
        "covers",
        &format!("{n} earlier call{} in this spool{}", if n == 1 { "" } else { "s" }, if n > 0 { ":" } else { "" }),
        "base",
        width,
    );
    for p in past {
        let line = format!("{}  {}", inert(&p.id, any), inert(&p.summary, any));
        for piece in super::fields::wrap(&line, width.saturating_sub(2)) {
            out.push(Row(vec![("  ".into(), "base"), (piece, "muted")]));
        }
    }
}

/// Distinct values with their counts, most frequent first then by name: `email.send ×3, pay ×1`.
#[must_use]
pub fn counted<'a>(values: impl Iterator<Item = &'a str>) -> String {
    let mut counts: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for v in values {
        *counts.entry(v).or_default() += 1;
    }
    let mut v: Vec<(&str, usize)> = counts.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    v.iter().map(|(k, n)| format!("{k} ×{n}")).collect::<Vec<_>>().join(", ")
}

/// The batch dialog: what is signed for all (count, classes, agents, key, principal,
/// the one reason), then each packet as the single dialog shows it (summary, id, agent, class,
/// content hash, what an approval stands in for, and every field of the proposed action, where
/// it goes first), numbered. Nothing is cut: the dialog scrolls.
fn batch_rows(state: &State, c: &Confirm, width: usize) -> Vec<Row> {
    let n = c.batch.len();
    let role = if c.verdict == Verdict::Approve { "approve" } else { "refuse" };
    let what = if c.verdict == Verdict::Approve {
        format!("✓ Sign an APPROVAL of each of these {n} packets?")
    } else {
        format!("✗ Sign a REFUSAL of each of these {n} packets?")
    };
    let any = usize::MAX;
    let mut out = vec![Row(vec![(what, role)]), Row(vec![])];
    labelled(&mut out, "packets", &format!("{n}, each signed and recorded on its own"), "base", width);
    labelled(
        &mut out,
        "classes",
        &inert(&counted(c.batch.iter().map(|p| p.action_class.as_str())), any),
        "title",
        width,
    );
    labelled(&mut out, "agents", &inert(&counted(c.batch.iter().map(|p| p.agent.as_str())), any), "base", width);
    labelled(&mut out, "key", state.fingerprint.as_deref().unwrap_or(""), "base", width);
    labelled(&mut out, "principal", &inert(state.principal.as_deref().unwrap_or(""), any), "base", width);
    if let Some(r) = &c.reason {
        labelled(&mut out, "reason", &inert(r, any), "base", width);
    }
    for (i, p) in c.batch.iter().enumerate() {
        out.push(Row(vec![]));
        out.push(Row(vec![(format!("── {} of {n} ──", i + 1), "header")]));
        labelled(&mut out, "summary", &inert(&p.summary, any), "base", width);
        labelled(&mut out, "packet", &inert(&p.id, any), "base", width);
        labelled(&mut out, "agent", &inert(&p.agent, any), "base", width);
        labelled(&mut out, "class", &inert(&p.action_class, any), "title", width);
        labelled(&mut out, "payload", &p.content_hash, "accent", width);
        if c.verdict == Verdict::Approve {
            for what in
                state.verdict(&p.id).map(warrant_protocol::verdict::PacketVerdict::stands_in_for).unwrap_or_default()
            {
                labelled(&mut out, "stands in", &format!("for {}", inert(&what, any)), "warn", width);
            }
        }
        let fields = field_lines(p.proposed_action(), width.saturating_sub(2), usize::MAX, true);
        out.extend(fields.into_iter().map(|l| field_row(l, 2)));
    }
    out
}

/// The dialog's lines and where they go on a terminal `area`.
#[must_use]
pub fn confirm_layout(state: &State, c: &Confirm, area: Rect) -> (Vec<Row>, Geometry) {
    let rows = confirm_rows(state, c, content_width(area, c.zoomed));
    let g = geometry(area, rows.len(), c.zoomed);
    (rows, g)
}

/// The number of content lines and how many of them fit on screen at once, on a terminal
/// `width`×`height`. Nothing fits below the console's smallest size (it shows "terminal too
/// small" there).
#[must_use]
pub fn confirm_extent(state: &State, c: &Confirm, width: u16, height: u16) -> (usize, usize) {
    let area = Rect { x: 0, y: 0, width, height };
    let (rows, g) = confirm_layout(state, c, area);
    let visible =
        if width < super::ui::MIN_WIDTH || height < super::ui::MIN_HEIGHT { 0 } else { usize::from(g.body.height) };
    (rows.len(), visible)
}
