//! Deciding packets: opening the sign dialog for one packet or a selection (every check that may
//! refuse an approval first), scrolling it until it has been read, the grant scopes `s` and
//! `:grant` attach to an approval, and signing ([`Effect::Sign`], [`Effect::SignBatch`]).

use super::{BatchSign, Button, ChainState, Confirm, Effect, Flash, InputPurpose, Mode, Pane, SETTLE_SECONDS, State};
use std::collections::BTreeSet;
use std::sync::Arc;
use warrant_protocol::decision::Verdict;
use warrant_protocol::packet::{DecisionState, Packet};
use warrant_protocol::verdict::PacketVerdict;

pub(super) fn start_decision(state: &mut State, approve: bool) -> Vec<Effect> {
    if state.pane != Pane::Pending {
        state.flash = Some(Flash { text: "select a pending packet to decide (press 1)".into(), error: true });
        return vec![];
    }
    if !state.marked.is_empty() {
        return start_batch_decision(state, approve);
    }
    let Some(packet) = state.selected_packet() else {
        state.flash = Some(Flash { text: "no pending packet selected".into(), error: true });
        return vec![];
    };
    if let Err(why) = state.can_sign() {
        if matches!(state.chain, ChainState::Broken { .. }) && !state.chain_alert_seen {
            state.mode = Mode::ChainAlert;
        }
        state.flash = Some(Flash { text: why, error: true });
        return vec![];
    }
    if let Some(t) = state.changed_at(&packet.id).filter(|t| state.now - t < SETTLE_SECONDS) {
        let wait = (SETTLE_SECONDS - (state.now - t)).ceil();
        state.flash = Some(Flash {
            text: format!("{} just changed: read it again (decisions open in {wait:.0}s)", packet.id),
            error: true,
        });
        return vec![];
    }
    if approve && let Some(after) = state.packet_timed_out(&packet) {
        state.flash = Some(Flash {
            text: format!(
                "{} timed out after {} (policy.toml [timeouts]): it can only be refused",
                packet.id,
                crate::notify::human(after)
            ),
            error: true,
        });
        return vec![];
    }
    if approve
        && let Some(expires) = packet.expires_at.as_deref()
        && warrant_protocol::clock::unix_seconds(expires).is_none_or(|t| t <= state.now)
    {
        state.flash =
            Some(Flash { text: format!("{} expired at {expires}: it can only be refused", packet.id), error: true });
        return vec![];
    }
    if approve && let Some(text) = approval_forbidden(state, &packet) {
        state.flash = Some(Flash { text, error: true });
        return vec![];
    }
    if approve && let Some(c) = state.cosigned_by_me(&packet) {
        state.flash = Some(Flash {
            text: format!("{} has your approval already ({}): it waits for another principal", packet.id, c.describe()),
            error: true,
        });
        return vec![];
    }
    state.mode = if approve {
        confirm_mode(state, Confirm::new(packet, Verdict::Approve, None))
    } else {
        Mode::Input { purpose: InputPurpose::RefuseReason(packet), text: String::new() }
    };
    vec![]
}

/// `a`/`r` with a selection: one dialog for every selected packet (in the pending list's order,
/// then the selected packets the filter hides, in the spool's order). The batch is all or
/// nothing: when any packet cannot be approved now (it just changed, timed out, expired, or the
/// composed verdict forbids it), no dialog opens and the status line says which and why.
fn start_batch_decision(state: &mut State, approve: bool) -> Vec<Effect> {
    if let Err(why) = state.can_sign() {
        if matches!(state.chain, ChainState::Broken { .. }) && !state.chain_alert_seen {
            state.mode = Mode::ChainAlert;
        }
        state.flash = Some(Flash { text: why, error: true });
        return vec![];
    }
    let packets = selected_packets(state);
    if packets.is_empty() {
        state.flash = Some(Flash { text: "no pending packet selected".into(), error: true });
        return vec![];
    }
    let mut problems = Vec::new();
    for p in &packets {
        if let Some(t) = state.changed_at(&p.id).filter(|t| state.now - t < SETTLE_SECONDS) {
            let wait = (SETTLE_SECONDS - (state.now - t)).ceil();
            problems.push(format!("{} just changed (decisions open in {wait:.0}s)", p.id));
        } else if approve && let Some(after) = state.packet_timed_out(p) {
            problems.push(format!("{} timed out after {}", p.id, crate::notify::human(after)));
        } else if approve
            && let Some(expires) = p.expires_at.as_deref()
            && warrant_protocol::clock::unix_seconds(expires).is_none_or(|t| t <= state.now)
        {
            problems.push(format!("{} expired at {expires}", p.id));
        } else if approve && let Some(text) = approval_forbidden(state, p) {
            problems.push(text);
        } else if approve && let Some(q) = state.policies.cosign(&p.action_class) {
            problems.push(format!("{} needs the approval of {}: approve it on its own", p.id, q.describe()));
        }
    }
    if let Some(first) = problems.first() {
        let n = problems.len();
        state.flash = Some(Flash {
            text: format!(
                "nothing to sign: {n} of the {} selected cannot be {} now ({first}{}); unselect {} (space) and try again",
                packets.len(),
                if approve { "approved" } else { "refused" },
                if n > 1 { format!("; and {} more", n - 1) } else { String::new() },
                if n > 1 { "them" } else { "it" },
            ),
            error: true,
        });
        return vec![];
    }
    state.mode = if approve {
        match Confirm::batch(packets, Verdict::Approve, None) {
            Some(c) => confirm_mode(state, c),
            None => Mode::Normal,
        }
    } else {
        Mode::Input { purpose: InputPurpose::RefuseBatchReason(packets), text: String::new() }
    };
    vec![]
}

/// The selected packets, in the pending list's order, then those the filter hides (in the
/// spool's order).
fn selected_packets(state: &State) -> Vec<Arc<Packet>> {
    let mut out: Vec<Arc<Packet>> =
        state.pending.iter().filter(|e| state.marked.contains(&e.packet.id)).map(|e| Arc::clone(&e.packet)).collect();
    let shown: BTreeSet<&str> = out.iter().map(|p| p.id.as_str()).collect();
    let hidden: Vec<Arc<Packet>> = state
        .snapshot
        .packets
        .iter()
        .filter(|e| state.marked.contains(&e.packet.id) && !shown.contains(e.packet.id.as_str()))
        .map(|e| Arc::clone(&e.packet))
        .collect();
    out.extend(hidden);
    out
}

/// Why an approval of `packet` is refused, if it is: what the packet declares, then the composed
/// verdict of every model (strictest wins), saying blocked or human_only. The decisive model's
/// reason is given.
fn approval_forbidden(state: &mut State, packet: &Packet) -> Option<String> {
    // Never on a stale assessment: a packet the models have not seen yet is assessed now.
    state.ensure_assessed();
    let forbidden = |s: &DecisionState| matches!(s, DecisionState::Blocked | DecisionState::HumanOnly);
    if let Some(s) = packet.state.filter(forbidden) {
        return Some(format!("{} is {s}: an agent may not execute it even with approval; refuse it with r", packet.id));
    }
    let v = state.verdict(&packet.id)?;
    let (why, remedy) = v.why_not_approvable()?;
    Some(format!(
        "{} is {} by {} ({why}); to change that: {remedy}. It can only be refused (r)",
        packet.id,
        v.state,
        v.decisive.as_str()
    ))
}

pub(super) fn sign(state: &mut State, c: Confirm) -> Vec<Effect> {
    state.mode = Mode::Normal;
    if let Err(why) = state.can_sign() {
        state.flash = Some(Flash { text: why, error: true });
        return vec![];
    }
    if !c.batch.is_empty() {
        return sign_batch(state, c);
    }
    // The verdict may have changed while the dialog was open (the agent was quarantined, an
    // elevation expired, a precondition changed): check it again at the moment of signing.
    if c.verdict == Verdict::Approve
        && let Some(text) = approval_forbidden(state, &c.packet)
    {
        state.flash = Some(Flash { text: format!("nothing was signed: {text}"), error: true });
        return vec![];
    }
    state.signing = true;
    state.flash = Some(Flash { text: format!("signing {} {}…", c.verdict.as_str(), c.packet.id), error: false });
    let publisher =
        state.snapshot.packet(&c.packet.id).filter(|e| e.packet.content_hash == c.packet.content_hash).map(|e| e.owner);
    let stands_in_for = match c.verdict {
        Verdict::Approve => state.verdict(&c.packet.id).map(PacketVerdict::stands_in_for).unwrap_or_default(),
        Verdict::Refuse => Vec::new(),
    };
    let grant = c.grant.filter(|_| c.verdict == Verdict::Approve && c.correction.is_none());
    let correction = c.correction.filter(|_| c.verdict == Verdict::Approve);
    vec![Effect::Sign {
        packet: c.packet,
        publisher,
        verdict: c.verdict,
        reason: c.reason,
        stands_in_for,
        grant,
        correction,
    }]
}

/// `e` (or `:correct`) on a pending packet: every check an approval makes first, then the
/// packet's proposed action in the principal's editor ([`Effect::Edit`], sorted indented JSON).
pub(super) fn start_correction(state: &mut State) -> Vec<Effect> {
    if !state.marked.is_empty() {
        state.flash =
            Some(Flash { text: "a correction is of one packet: clear the selection (V)".into(), error: true });
        return vec![];
    }
    // The checks of an approval, through its own path: a packet it refuses is not corrected
    // (and the mode it set, a broken chain's alert, stays).
    let fx = start_decision(state, true);
    if !matches!(state.mode, Mode::Confirm(_)) {
        return fx;
    }
    let Mode::Confirm(c) = std::mem::replace(&mut state.mode, Mode::Normal) else { return fx };
    if state.policies.cosign(&c.packet.action_class).is_some() {
        state.flash = Some(Flash {
            text: format!(
                "{} needs several principals' approval: it cannot be approved as corrected (refuse it, saying why)",
                c.packet.id
            ),
            error: true,
        });
        return fx;
    }
    let text = warrant_protocol::correction::sorted_pretty(c.packet.proposed_action()) + "\n";
    state.flash = Some(Flash { text: format!("correcting {} in your editor…", c.packet.id), error: false });
    vec![Effect::Edit { packet: c.packet, text }]
}

/// The editor of a correction exited: the approval dialog opens on the difference between the
/// packet's proposed action and the correction, or the status line says why nothing will be
/// signed (the packet changed meanwhile, the text is not JSON, the correction is refused, or it
/// changes nothing).
pub(super) fn edited(
    state: &mut State,
    packet_id: &str,
    content_hash: &str,
    text: Result<String, String>,
) -> Vec<Effect> {
    let refuse = |state: &mut State, why: String| {
        state.flash = Some(Flash { text: format!("{packet_id}: {why}; nothing was signed"), error: true });
        vec![]
    };
    let text = match text {
        Ok(t) => t,
        Err(e) => return refuse(state, format!("the editor's file could not be read ({e})")),
    };
    let Some(entry) = state.snapshot.packet(packet_id) else {
        return refuse(state, "it is no longer pending".into());
    };
    if entry.packet.content_hash != content_hash {
        return refuse(state, "it changed while you were correcting it".into());
    }
    let packet = Arc::clone(&entry.packet);
    let value = match warrant_protocol::canonical::parse_untrusted(text.as_bytes()) {
        Ok(v) => v,
        Err(e) => return refuse(state, format!("the correction is not valid JSON ({e})")),
    };
    let correction = match warrant_protocol::correction::Correction::new(&packet, &state.policies, value) {
        Ok(Some(c)) => c,
        Ok(None) => return refuse(state, "the correction changes nothing (a approves it as proposed)".into()),
        Err(e) => return refuse(state, e.to_string()),
    };
    // Selected again, so the approval's checks run on this packet now.
    if !state.select_pending(packet_id) {
        return refuse(state, "it is no longer in the pending list (a filter may hide it)".into());
    }
    let fx = start_decision(state, true);
    if let Mode::Confirm(c) = &mut state.mode {
        c.correction = Some(Box::new(correction));
        let mut c = c.clone();
        measure_confirm(state, &mut c);
        state.mode = Mode::Confirm(c);
    }
    fx
}

/// *Sign* in a batch dialog: every approval checked again at the moment of signing (all or
/// nothing), then one [`Effect::SignBatch`].
fn sign_batch(state: &mut State, c: Confirm) -> Vec<Effect> {
    if c.verdict == Verdict::Approve {
        for p in &c.batch {
            if let Some(text) = approval_forbidden(state, p) {
                state.flash = Some(Flash { text: format!("nothing was signed: {text}"), error: true });
                return vec![];
            }
        }
    }
    state.signing = true;
    state.flash = Some(Flash {
        text: format!(
            "signing {} of {} {}…",
            c.verdict.as_str(),
            c.batch.len(),
            crate::ui::plural(c.batch.len(), "packet")
        ),
        error: false,
    });
    let items = c
        .batch
        .iter()
        .map(|p| BatchSign {
            packet: Arc::clone(p),
            publisher: state
                .snapshot
                .packet(&p.id)
                .filter(|e| e.packet.content_hash == p.content_hash)
                .map(|e| e.owner),
            stands_in_for: match c.verdict {
                Verdict::Approve => state.verdict(&p.id).map(PacketVerdict::stands_in_for).unwrap_or_default(),
                Verdict::Refuse => Vec::new(),
            },
        })
        .collect();
    vec![Effect::SignBatch { items, verdict: c.verdict, reason: c.reason }]
}

/// The mode of a newly opened sign dialog, measured at the terminal's size.
pub(super) fn confirm_mode(state: &State, mut c: Confirm) -> Mode {
    measure_confirm(state, &mut c);
    Mode::Confirm(c)
}

/// Keeps the dialog's scroll within its content at the terminal's size.
pub(super) fn measure_confirm(state: &State, c: &mut Confirm) {
    let Some((w, h)) = state.viewport else { return };
    let (total, visible) = crate::dialog::confirm_extent(state, c, w, h);
    c.scroll = c.scroll.min(total.saturating_sub(visible));
}

/// A frame of the dialog was drawn at `width`×`height`: the lines it showed extend what has been
/// seen when they follow what was seen without a gap. When the last line has been seen that way,
/// the dialog is read. A frame below the smallest size the console draws shows nothing.
pub(super) fn seen_drawn(state: &State, c: &mut Confirm, width: u16, height: u16) {
    if state.viewport != Some((width, height)) {
        // The layout `update` measured is not the one drawn: count nothing from this frame.
        return;
    }
    let (total, visible) = crate::dialog::confirm_extent(state, c, width, height);
    if visible == 0 {
        return;
    }
    let scroll = c.scroll.min(total.saturating_sub(visible));
    if scroll <= c.seen {
        c.seen = c.seen.max(scroll + visible).min(total);
    }
    if c.seen >= total {
        c.read = true;
    }
}

/// A scrolling key in the sign dialog: a line, a page (one line of overlap), the top, or zoom
/// (the dialog takes the whole terminal, laid out again from the top).
pub(super) fn scroll_confirm(state: &State, c: &mut Confirm, cmd: &str) {
    let visible = state.viewport.map_or(0, |(w, h)| crate::dialog::confirm_extent(state, c, w, h).1);
    let page = visible.saturating_sub(1).max(1);
    match cmd {
        "down" => c.scroll += 1,
        "up" => c.scroll = c.scroll.saturating_sub(1),
        "page_down" => c.scroll += page,
        "page_up" => c.scroll = c.scroll.saturating_sub(page),
        "top" => c.scroll = 0,
        "zoom" => {
            c.zoomed = !c.zoomed;
            c.scroll = 0;
            c.seen = 0;
        }
        _ => {}
    }
    measure_confirm(state, c);
}

/// The scopes `s` offers in an approval dialog, in order: once, this session, an hour, a working
/// day, the call's own argument as a pattern, and the class up to the call's own amount and
/// recipients' domains (never wider: a wider pattern or constraint is typed with `:grant pattern
/// GLOB` or `:grant class …`). Only those the rules allow for this packet ([`warrant_protocol::grant::prepare`]).
fn scope_choices(state: &State, p: &Packet) -> Vec<warrant_protocol::grant::GrantInput> {
    use warrant_protocol::grant::{GrantOptions, Narrowing, ScopeRequest, ToolPattern};
    let Ok(now) = time::OffsetDateTime::from_unix_timestamp(state.now as i64) else { return Vec::new() };
    let at = warrant_protocol::clock::format_rfc3339(now);
    let mut asks = vec![ScopeRequest::Session];
    for h in ["1h", "8h"] {
        if let Ok(t) = warrant_protocol::grant::parse_until(h, now) {
            asks.push(ScopeRequest::Until(t));
        }
    }
    if let Some(f) = warrant_protocol::grant::CallFacts::of_packet(p, &state.policies)
        && let Some(arg) = f.argument
        && !arg.contains(['*', '?'])
    {
        asks.push(ScopeRequest::Pattern(ToolPattern { tool: f.tool.clone(), argument: Some(arg) }));
    }
    if let Some(f) = warrant_protocol::grant::CallFacts::of_packet(p, &state.policies) {
        let n = Narrowing {
            // Only a whole amount: the grant's maximum is a whole number, never above the call's.
            max_amount: f.amount.filter(|a| a.fract() == 0.0 && *a <= 9.0e15).map(|a| a as u64),
            domain_allowlist: f.recipient_domains.unwrap_or_default(),
        };
        if n.max_amount.is_some() || !n.domain_allowlist.is_empty() {
            asks.push(ScopeRequest::Class(n));
        }
    }
    asks.iter()
        .filter_map(|a| {
            warrant_protocol::grant::prepare(p, &state.policies, a, &GrantOptions::default(), &at).ok().flatten()
        })
        .collect()
}

/// `s` in an approval dialog of one packet: the next scope ([`scope_choices`]), back to once
/// after the last. The dialog must then be read again before it can be signed.
pub(super) fn cycle_scope(state: &mut State, c: &mut Confirm) {
    if c.correction.is_some() {
        state.flash =
            Some(Flash { text: "an approval as corrected is of this call once: no grant".into(), error: true });
        return;
    }
    if c.verdict != Verdict::Approve || !c.batch.is_empty() {
        state.flash = Some(Flash { text: "a grant comes with the approval of one packet".into(), error: true });
        return;
    }
    let choices = scope_choices(state, &c.packet);
    if choices.is_empty() {
        state.flash = Some(Flash {
            text: format!("no grant can cover {} (human-only, destructive or not a tool call): once only", c.packet.id),
            error: true,
        });
        return;
    }
    // By place in the list: "1 hour" and "8 hours" differ only by an expiry computed from the
    // clock, which has moved since the last press.
    let next = match (&c.grant, c.grant_choice) {
        (None, _) => Some(0),
        (Some(_), Some(i)) => Some(i + 1).filter(|i| *i < choices.len()),
        // A grant `:grant` named: the next press approves once.
        (Some(_), None) => None,
    };
    c.grant = next.map(|i| Box::new(choices[i].clone()));
    c.grant_choice = next;
    set_grant_read_again(state, c);
}

/// The dialog changed what it signs: it is read again from the top before *Sign* unlocks.
fn set_grant_read_again(state: &mut State, c: &mut Confirm) {
    c.read = false;
    c.seen = 0;
    c.scroll = 0;
    c.focus = Button::Cancel;
    measure_confirm(state, c);
    state.flash = Some(Flash {
        text: match &c.grant {
            Some(g) => format!("with a grant ({}): read the dialog again, then sign", g.scope.as_str()),
            None => "once: this call only".into(),
        },
        error: false,
    });
}

/// `:grant session|until TIME|pattern GLOB`: the approval dialog of the selected pending packet,
/// with that grant (checked by [`warrant_protocol::grant::prepare`]; nothing opens when it is refused).
pub(super) fn grant_dialog(state: &mut State, scope: &str) -> Vec<Effect> {
    let text = scope.trim();
    let asked = match text.split_once(char::is_whitespace) {
        Some((kind @ ("until" | "pattern" | "class"), rest)) => format!("{kind}:{}", rest.trim()),
        _ => text.to_owned(),
    };
    let Ok(now) = time::OffsetDateTime::from_unix_timestamp(state.now as i64) else { return vec![] };
    let request = match warrant_protocol::grant::ScopeRequest::parse(&asked, now) {
        Ok(r) => r,
        Err(e) => {
            state.flash = Some(Flash { text: e.to_string(), error: true });
            return vec![];
        }
    };
    let fx = start_decision(state, true);
    let Mode::Confirm(mut c) = std::mem::replace(&mut state.mode, Mode::Normal) else { return fx };
    if !c.batch.is_empty() {
        state.flash = Some(Flash {
            text: "a grant comes with the approval of one packet: clear the selection (V)".into(),
            error: true,
        });
        return fx;
    }
    let at = warrant_protocol::clock::format_rfc3339(now);
    match warrant_protocol::grant::prepare(
        &c.packet,
        &state.policies,
        &request,
        &warrant_protocol::grant::GrantOptions::default(),
        &at,
    ) {
        Ok(grant) => {
            c.grant = grant.map(Box::new);
            set_grant_read_again(state, &mut c);
            state.mode = Mode::Confirm(c);
        }
        Err(e) => state.flash = Some(Flash { text: format!("no grant: {e}"), error: true }),
    }
    fx
}
