//! [`update`] itself: every [`Action`] dispatched to the state's change and the effects it asks
//! for; effect results (signatures, controls, revocations, scans, chain views) taken into the
//! state; the words for the status line shared with rendering ([`chain_line`], [`short_hash`],
//! [`sort_words`]).

use super::approval::{grant_dialog, measure_confirm, seen_drawn};
use super::keys::{on_key, on_mouse};
use super::{
    Action, AgentClassRecord, ChainState, ControlSummary, Effect, Flash, InputPurpose, LOG_LEN, LogEntry, Mode,
    SignedSummary, State,
};
use crate::filter::SortKey;
use std::collections::HashMap;
use std::sync::Arc;
use warrant_protocol::decision::Verdict;
use warrant_store::spool::{ChainView, Snapshot};

/// Applies an action. Returns the effects to run. Every new status-line message is also kept in
/// the message log.
pub fn update(state: &mut State, action: Action) -> Vec<Effect> {
    let before = state.flash.clone();
    let mut fx = apply(state, action);
    fx.extend(crate::notify::effects(state));
    fx.extend(crate::notify::timeout_effects(state));
    if state.flash != before
        && let Some(f) = &state.flash
    {
        if state.log.len() >= LOG_LEN {
            state.log.pop_front();
        }
        state.log.push_back(LogEntry { at: state.now as i64, text: f.text.clone(), error: f.error });
    }
    fx
}

pub(super) fn apply(state: &mut State, action: Action) -> Vec<Effect> {
    match action {
        Action::Key(key) => on_key(state, key),
        Action::Paste(text) => {
            if let Mode::Input { text: buf, .. } = &mut state.mode {
                // Pasted text may be copied from an agent's packet: no controls, bidi or
                // invisible characters go into a reason the principal signs.
                buf.extend(text.chars().filter(|c| !warrant_protocol::text::is_unsafe(*c)));
            }
            vec![]
        }
        Action::Resize { width, height } => on_resize(state, width, height),
        Action::Drawn { width, height } => {
            if let Mode::Confirm(c) = &mut state.mode {
                let mut c = c.clone();
                seen_drawn(state, &mut c, width, height);
                state.mode = Mode::Confirm(c);
            }
            vec![]
        }
        Action::ScanUnchanged => vec![],
        Action::Assess => {
            state.ensure_assessed();
            vec![]
        }
        Action::Assessed(done) => {
            state.take_assessed(*done);
            vec![]
        }
        Action::AssessFailed(why) => {
            state.flash = Some(Flash { text: why, error: true });
            vec![]
        }
        Action::Tick(now) => {
            state.on_tick(now);
            vec![]
        }
        Action::SpoolChanged { chain } => {
            let mut fx = vec![Effect::Scan];
            if chain {
                fx.push(Effect::VerifyChain { force: false });
            }
            fx
        }
        Action::Scanned(snapshot) => take_scan(state, snapshot),
        Action::ChainProgress { read, total } => {
            // A report that raced the end of its verification is stale.
            if state.chain_progress.is_some() || state.chain_from_checkpoint || state.chain == ChainState::Unknown {
                state.chain_progress = Some((read, total));
            }
            vec![]
        }
        Action::ChainCheckpointed(view) => take_checkpointed_chain(state, view),
        Action::ChainVerified(view) => {
            state.chain_progress = None;
            state.chain_from_checkpoint = false;
            apply_chain_view(state, *view);
            // The audit follows the chain once it has been asked for.
            if state.audit_wanted { vec![Effect::Audit] } else { vec![] }
        }
        Action::Signed(result) => take_signed(state, result),
        Action::Edited { packet_id, content_hash, text } => {
            super::approval::edited(state, &packet_id, &content_hash, text)
        }
        Action::SignedBatch(result) => take_signed_batch(state, result),
        Action::TimeoutRefused { packet_id, after, result } => take_timeout_refusal(state, &packet_id, after, result),
        Action::ControlSigned(result) => take_control_signed(state, result),
        Action::GrantRevoked(result) => take_revocation(state, result),
        Action::ScanFailed(e) | Action::Error(e) => {
            state.flash = Some(Flash { text: e, error: true });
            vec![]
        }
        Action::VerifyFailed(e) => {
            state.chain = ChainState::Unknown;
            state.chain_progress = None;
            state.chain_from_checkpoint = false;
            state.flash =
                Some(Flash { text: format!("{e}; signing is refused until the chain can be verified"), error: true });
            vec![]
        }
        Action::Audited(Ok(entries)) => {
            state.audit_chain = entries;
            state.refresh();
            vec![]
        }
        Action::Audited(Err(e)) => {
            state.flash = Some(Flash { text: format!("audit: {e}"), error: true });
            vec![]
        }
        Action::Mouse(m) => on_mouse(state, m),
        Action::GrantDialog(scope) => grant_dialog(state, &scope),
        Action::Quit => {
            state.quit = true;
            vec![Effect::Quit]
        }
    }
}

/// Takes the terminal's new size: an open sign dialog is laid out again and read again from
/// the top.
fn on_resize(state: &mut State, width: u16, height: u16) -> Vec<Effect> {
    state.viewport = Some((width, height));
    // The dialog is laid out again: its lines are not the lines that were seen. It
    // starts again from the top (what was read already stays read).
    if let Mode::Confirm(mut c) = state.mode.clone() {
        c.scroll = 0;
        c.seen = 0;
        measure_confirm(state, &mut c);
        state.mode = Mode::Confirm(c);
    }
    vec![]
}

/// Takes a finished scan; cancels a sign dialog whose packet changed or went away meanwhile.
fn take_scan(state: &mut State, snapshot: Snapshot) -> Vec<Effect> {
    state.take_snapshot(snapshot);
    // The dialog signs the packet as it was shown: if the file changed or went away
    // meanwhile, cancel rather than sign something the principal is no longer looking at.
    if let Mode::Confirm(c) = &state.mode {
        for p in c.packets() {
            let now = state.snapshot.packet(&p.id).map(|e| e.packet.content_hash.clone());
            if now.as_deref() != Some(p.content_hash.as_str()) {
                let what = if now.is_some() { "changed" } else { "disappeared" };
                state.flash = Some(Flash {
                    text: format!("{} {what} while you were confirming: nothing was signed; review it again", p.id),
                    error: true,
                });
                state.mode = Mode::Normal;
                break;
            }
        }
    }
    vec![]
}

/// Takes the view of the records after the principal's checkpoint, unless a full verification
/// already finished.
fn take_checkpointed_chain(state: &mut State, view: Box<ChainView>) -> Vec<Effect> {
    // A full verification that already finished is newer: keep it.
    if state.chain_progress.is_none() && !matches!(state.chain, ChainState::Unknown) {
        return vec![];
    }
    state.chain_from_checkpoint = true;
    state.chain_progress.get_or_insert((0, 0));
    apply_chain_view(state, *view);
    vec![]
}

/// Takes a signed decision: its evidence moves the posterior at once, and the status line says
/// what was signed (or why nothing was).
fn take_signed(state: &mut State, result: Result<SignedSummary, String>) -> Vec<Effect> {
    state.signing = false;
    match result {
        Ok(s) => {
            // The principal's decision is a receipt: it moves the posterior at once (the
            // chain's next verification replaces this row with the same one from the chain),
            // unless that verification came first (the watcher saw the append before this
            // answer arrived): the chain's evidence holds it already.
            let decided_at = time::OffsetDateTime::from_unix_timestamp(state.now as i64)
                .map_or_else(|_| String::new(), warrant_protocol::clock::format_rfc3339);
            // One approval towards a quorum is no decision yet, and no evidence.
            let partial = s.cosigned.as_ref().is_some_and(|c| !c.met());
            let known = in_the_chain_view(state, &s);
            if let Some(row) = state.snapshot.packet(&s.packet_id).filter(|_| !partial && !known).and_then(|e| {
                let class = state.policies.normalize(&e.packet.action_class);
                warrant_store::spool::decision_evidence(&class, s.verdict, s.corrected, &decided_at, Some(&s.packet_id))
            }) {
                state.chain_evidence.push(row);
                state.recompute_graduation();
            }
            let word = match (s.verdict, s.corrected) {
                (Verdict::Approve, Some(size)) => format!("✓ approved as corrected ({})", size.label()),
                (Verdict::Approve, None) => "✓ approved".to_owned(),
                (Verdict::Refuse, _) => "✗ refused".to_owned(),
            };
            let (grant, error) = match &s.grant {
                None => (String::new(), false),
                Some(Ok(id)) => (format!(" · granted {id}"), false),
                Some(Err(e)) => (format!(" · the grant was NOT recorded: {e}"), true),
            };
            let cosigned = s.cosigned.as_ref().map(|c| format!(" · {}", c.describe())).unwrap_or_default();
            state.flash = Some(Flash {
                text: format!(
                    "{word} {}{cosigned} · record {} {}{grant}",
                    s.packet_id,
                    s.chain_index,
                    short_hash(&s.entry_hash)
                ),
                error,
            });
        }
        Err(e) => state.flash = Some(Flash { text: format!("signing failed: {e}"), error: true }),
    }
    vec![Effect::VerifyChain { force: false }, Effect::Scan]
}

/// Whether the chain view already holds the decision `s` signed (a verification of the chain
/// that ran after the append and answered before the signing job did): its evidence row is
/// counted there, and must not be counted again.
fn in_the_chain_view(state: &State, s: &SignedSummary) -> bool {
    state.decisions.get(&s.packet_id).is_some_and(|d| d.chain_index == s.chain_index)
}

/// Takes a signed batch: the packets leave the selection, their evidence moves the posteriors,
/// and the status line says what was signed (or why nothing was).
fn take_signed_batch(state: &mut State, result: Result<Vec<SignedSummary>, String>) -> Vec<Effect> {
    state.signing = false;
    match result {
        Ok(done) => {
            let decided_at = time::OffsetDateTime::from_unix_timestamp(state.now as i64)
                .map_or_else(|_| String::new(), warrant_protocol::clock::format_rfc3339);
            let mut moved = false;
            for s in &done {
                state.marked.remove(&s.packet_id);
                if in_the_chain_view(state, s) {
                    continue;
                }
                if let Some(row) = state.snapshot.packet(&s.packet_id).and_then(|e| {
                    let class = state.policies.normalize(&e.packet.action_class);
                    warrant_store::spool::decision_evidence(&class, s.verdict, None, &decided_at, Some(&s.packet_id))
                }) {
                    state.chain_evidence.push(row);
                    moved = true;
                }
            }
            if moved {
                state.recompute_graduation();
            }
            let word = if done.first().is_some_and(|s| s.verdict == Verdict::Approve) {
                "✓ approved"
            } else {
                "✗ refused"
            };
            let (first, last) = (done.first().map(|s| s.chain_index), done.last().map(|s| s.chain_index));
            state.flash = Some(Flash {
                text: format!(
                    "{word} {} {} · records {}–{} · one sync",
                    done.len(),
                    crate::ui::plural(done.len(), "packet"),
                    first.unwrap_or(0),
                    last.unwrap_or(0)
                ),
                error: false,
            });
        }
        Err(e) => state.flash = Some(Flash { text: format!("signing failed: {e}"), error: true }),
    }
    vec![Effect::VerifyChain { force: false }, Effect::Scan]
}

/// Takes the system refusal of a timed-out packet: the status line says whether it was signed.
fn take_timeout_refusal(
    state: &mut State,
    packet_id: &str,
    after: std::time::Duration,
    result: Result<Option<SignedSummary>, String>,
) -> Vec<Effect> {
    state.signing = false;
    let after = crate::notify::human(after);
    match result {
        // A system decision is no evidence: no row is added, no posterior moves.
        Ok(Some(s)) => {
            state.flash = Some(Flash {
                text: format!(
                    "{packet_id} refused: timed out after {after} (signed as a system decision) · record {} {}",
                    s.chain_index,
                    short_hash(&s.entry_hash)
                ),
                error: false,
            });
        }
        // Decided elsewhere first: nothing to say.
        Ok(None) => {}
        Err(e) => {
            state.flash = Some(Flash {
                text: format!(
                    "{packet_id} timed out after {after}, but its system refusal was not signed: {e} \
                     (not tried again; the agent was told `timeout`; refuse it yourself)"
                ),
                error: true,
            });
        }
    }
    vec![Effect::VerifyChain { force: false }, Effect::Scan]
}

/// Takes a recorded control (or why it was not recorded) into the status line.
fn take_control_signed(state: &mut State, result: Result<ControlSummary, String>) -> Vec<Effect> {
    state.signing = false;
    state.flash = Some(match result {
        Ok(s) => Flash {
            text: format!(
                "✓ recorded {} {} · record {} {} · applies from the next gate call{}",
                s.kind.as_str(),
                s.subject,
                s.chain_index,
                short_hash(&s.entry_hash),
                if s.refused > 0 {
                    format!(" · {} pending {} refused", s.refused, crate::ui::plural(s.refused, "packet"))
                } else {
                    String::new()
                }
            ),
            error: false,
        },
        Err(e) => Flash { text: format!("control not recorded: {e}"), error: true },
    });
    vec![Effect::VerifyChain { force: false }, Effect::Scan]
}

/// Takes a recorded revocation of a grant (or why it was not recorded) into the status line.
fn take_revocation(state: &mut State, result: Result<(String, u64, String), String>) -> Vec<Effect> {
    state.signing = false;
    state.flash = Some(match result {
        Ok((id, index, hash)) => Flash {
            text: format!(
                "✓ revoked {id} · record {index} {} · the next call it covered waits for you",
                short_hash(&hash)
            ),
            error: false,
        },
        Err(e) => Flash { text: format!("revocation not recorded: {e}"), error: true },
    });
    vec![Effect::VerifyChain { force: false }, Effect::Scan]
}

/// Takes a verified chain view: the chain state (and the broken-chain alert when the first
/// finding is new), decisions, evidence and controls; cancels a control dialog the chain no
/// longer admits.
fn apply_chain_view(state: &mut State, view: ChainView) {
    let ChainView { report, decisions, evidence, controls, grants, cosigning, .. } = view;
    state.cosigning = cosigning;
    state.chain = if report.is_valid() {
        state.chain_alert_seen = false;
        ChainState::Valid { total: report.total, root: report.root_hash.clone() }
    } else {
        let first = report.findings[0].clone();
        let changed = !matches!(&state.chain, ChainState::Broken { first: f, .. } if *f == first);
        if changed {
            state.chain_alert_seen = false;
            if state.mode == Mode::Normal {
                state.mode = Mode::ChainAlert;
            }
        }
        ChainState::Broken { total: report.total, first, count: report.findings.len() }
    };
    state.decisions = Arc::new(decisions);
    let mut records: HashMap<(String, String), AgentClassRecord> = HashMap::new();
    // A system decision (a timeout) is nobody's judgement of the agent: not in its record.
    for d in state.decisions.values().filter(|d| d.system.is_none()) {
        let r = records.entry((d.agent.clone(), state.policies.normalize(&d.action_class))).or_default();
        match d.verdict {
            Verdict::Approve => r.approved += 1,
            Verdict::Refuse => {
                r.refused += 1;
                if r.last_refusal.as_ref().is_none_or(|l| l.chain_index < d.chain_index) {
                    r.last_refusal = Some(d.clone());
                }
            }
        }
    }
    state.agent_records = records;
    state.chain_evidence = evidence;
    state.controls = controls;
    state.grants = grants;
    state.recompute_grants();
    state.recompute_graduation();
    // A control dialog confirms a change from what the chain said: if the chain now says
    // otherwise (another signature moved the notebook or the agent), sign nothing.
    let open = match &state.mode {
        Mode::ControlConfirm(c) => Some(&c.input),
        Mode::Input { purpose: InputPurpose::ControlReason(i) | InputPurpose::TypedConfirm(i), .. } => Some(i),
        _ => None,
    };
    if let Some(i) = open.filter(|i| !state.controls.admits(i, state.now)) {
        state.flash = Some(Flash {
            text: format!(
                "{} changed in the chain while you were confirming: nothing was signed; look again",
                i.subject
            ),
            error: true,
        });
        state.mode = Mode::Normal;
    }
}

/// `sha256:1234abcd…` shortened for one line.
#[must_use]
pub fn short_hash(h: &str) -> String {
    let body = h.strip_prefix("sha256:").unwrap_or(h);
    format!("{}…", &body[..body.len().min(12)])
}

/// How the pending list is ordered, in words: by `key`, `reverse`d or not.
#[must_use]
pub fn sort_words(key: SortKey, reverse: bool) -> &'static str {
    match (key, reverse) {
        (SortKey::Age, false) => "age, newest first",
        (SortKey::Age, true) => "age, oldest first",
        (SortKey::Risk, false) => "risk, highest first",
        (SortKey::Risk, true) => "risk, lowest first",
        (SortKey::Class, false) => "action class, A to Z",
        (SortKey::Class, true) => "action class, Z to A",
        (SortKey::Agent, false) => "agent, A to Z",
        (SortKey::Agent, true) => "agent, Z to A",
    }
}

/// One line describing the chain state.
#[must_use]
pub fn chain_line(chain: &ChainState) -> String {
    match chain {
        ChainState::Unknown => "chain: verifying…".into(),
        ChainState::Valid { total, root } => {
            format!(
                "✓ chain verified: {total} {}, head {}",
                crate::ui::plural(*total, "record"),
                root.as_deref().map_or("(empty)".into(), short_hash)
            )
        }
        ChainState::Broken { first, count, .. } => format!("✗ CHAIN BROKEN: {first} ({count} findings)"),
    }
}
