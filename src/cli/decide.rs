//! The principal's decisions on packets: `warrant approve` and `refuse` (one packet or a batch),
//! and `warrant list`.

use super::common::{confirmed, load_pinned, load_policies, load_principal, print_json, write_json_inert};
use super::grants::show_grant_preview;
use super::{EXIT_INVALID, EXIT_USAGE, Failure, Review};
use crate::protocol::correction::{self, Correction, EditSize};
use crate::protocol::decision::Verdict;
use crate::protocol::packet::{self, DecisionState};
use crate::store::config::{self, Config};
use crate::store::spool::{self, Scanner, Spool};
use serde_json::{Value, json};
use std::io::Write as _;

/// A fresh scan of `spool` and its packet `id`, or why there is none.
fn scanned_packet(spool: &Spool, id: &str) -> Result<(spool::Snapshot, spool::PacketEntry), Failure> {
    let snap = Scanner::new().scan(spool)?;
    let entry = scanned_in(spool, &snap, id)?;
    Ok((snap, entry))
}

/// What `approve` or `refuse` shows on a terminal before asking: the packet's id, agent,
/// publisher, class and content hash, then the whole packet as JSON, every field, never cut, its
/// text inert (`docs/conformance.md`, "The CLI signs what the principal reviewed").
fn show_for_review(entry: &spool::PacketEntry, verdict: Verdict) -> Result<(), Failure> {
    let p = &entry.packet;
    let t = |s: &str| crate::protocol::text::inert(s, usize::MAX);
    let mut out = std::io::stdout().lock();
    writeln!(out, "Sign {} of this packet?", if verdict == Verdict::Approve { "an APPROVAL" } else { "a REFUSAL" })?;
    writeln!(out, "     packet  {}", t(&p.id))?;
    writeln!(out, "      agent  {}", t(&p.agent))?;
    writeln!(out, "  publisher  {}", spool::publisher_label(entry.owner))?;
    writeln!(out, "      class  {}", t(&p.action_class))?;
    writeln!(out, "    summary  {}", t(&p.summary))?;
    writeln!(out, "       hash  {}", p.content_hash)?;
    writeln!(out, "the whole packet:")?;
    write_json_inert(&mut out, &p.raw)?;
    writeln!(out)?;
    out.flush()?;
    Ok(())
}

/// The difference between the proposed action of `packet` and the principal's correction `c`,
/// every line of both (made inert), `-` removed and `+` added, and what it will count as.
fn show_correction(packet: &packet::Packet, c: &Correction) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "Approve {} as corrected: {} of the action changed ({}‰), recorded as `{}`:",
        crate::protocol::text::inert(&packet.id, 200),
        if c.size == EditSize::MinorEdit { "a little" } else { "much" },
        c.changed_permille,
        c.size.label()
    )?;
    for line in correction::diff_lines(packet.proposed_action(), &c.action) {
        writeln!(out, "{} {}", line.mark(), crate::protocol::text::inert(line.text(), usize::MAX))?;
    }
    out.flush()?;
    Ok(())
}

/// The corrected action `--correct FILE` names (`-`: standard input), as JSON (at most 1 MiB).
///
/// # Errors
/// A usage error when it cannot be read; invalid (exit 1) when it is not JSON. Nothing is signed.
pub(super) fn read_correction(path: &std::path::Path) -> Result<Value, Failure> {
    use std::io::Read as _;
    let limit = packet::MAX_FILE_BYTES;
    let mut bytes = Vec::new();
    let read = if path == std::path::Path::new("-") {
        std::io::stdin().lock().take(limit + 1).read_to_end(&mut bytes)
    } else {
        std::fs::File::open(path).and_then(|f| f.take(limit + 1).read_to_end(&mut bytes))
    };
    read.map_err(|e| Failure::usage(format!("--correct {}: {e}; nothing was signed", path.display())))?;
    if bytes.len() as u64 > limit {
        return Err(Failure::invalid(format!("--correct {}: larger than 1 MiB; nothing was signed", path.display())));
    }
    crate::protocol::canonical::parse_untrusted(&bytes).map_err(|e| {
        Failure::invalid(format!("--correct {}: not valid JSON ({e}); nothing was signed", path.display()))
    })
}

/// What an approval of `id` stands in for, or why the composed verdict of assessment `a` forbids
/// approving it.
fn approvable(a: &crate::monitor::Assessment, id: &str) -> Result<Vec<String>, String> {
    let Some(v) = a.verdicts.get(id) else { return Ok(Vec::new()) };
    match v.why_not_approvable() {
        None => Ok(v.stands_in_for()),
        Some((why, remedy)) => Err(format!(
            "packet {id:?} is {} by {} ({}); it can only be refused. To change that: {}",
            v.state,
            v.decisive.as_str(),
            crate::protocol::text::inert(&why, 300),
            crate::protocol::text::inert(&remedy, 300)
        )),
    }
}

/// `warrant approve ID ID …` / `warrant refuse ID ID … --reason`: one confirmation for the
/// batch (on a terminal, every packet shown whole first; otherwise `--yes`), then
/// [`spool::decide_many`]: one signed record per packet under one lock and one sync, all or
/// nothing. Prints one line per packet signed.
pub(super) fn decide_batch_cli(
    spool: &Spool,
    config: &Config,
    ids: &[String],
    verdict: Verdict,
    reason: Option<&str>,
    review: &Review,
) -> Result<u8, Failure> {
    use std::io::IsTerminal as _;
    if review.hash.is_some() {
        return Err(Failure::usage(
            "--hash names one packet's content; a batch is confirmed on a terminal or with --yes",
        ));
    }
    let interactive = std::io::stdin().is_terminal() && !review.yes;
    if !interactive && !review.yes {
        return Err(Failure::usage(format!("{} of several packets without a terminal needs --yes", verdict.as_str())));
    }
    let policies = load_policies(Some(spool))?;
    let (principal, pinned) = load_principal(config)?;
    let mut snap = Scanner::new().scan(spool)?;
    let mut entries = Vec::with_capacity(ids.len());
    for id in ids {
        entries.push(scanned_in(spool, &snap, id)?);
    }
    if interactive {
        for e in &entries {
            show_for_review(e, verdict)?;
        }
        if !confirmed(&format!("sign {} of these {} packets?", verdict.as_str(), entries.len()))? {
            eprintln!("warrant: nothing was signed");
            return Ok(EXIT_INVALID);
        }
        // What is signed is what was shown.
        snap = Scanner::new().scan(spool)?;
        for e in &entries {
            let now = scanned_in(spool, &snap, &e.packet.id)?;
            if now.packet.content_hash != e.packet.content_hash {
                return Err(Failure::invalid(format!(
                    "packet {:?} changed while you were reviewing it; nothing was signed: review it again",
                    e.packet.id
                )));
            }
        }
    }
    if verdict == Verdict::Approve
        && let Some((e, q)) = entries.iter().find_map(|e| Some((e, policies.cosign(&e.packet.action_class)?)))
    {
        return Err(Failure::invalid(format!(
            "{} needs the approval of {} (policy.toml [cosign]): approve it on its own (`warrant approve {}`); nothing was signed",
            e.packet.id,
            q.describe(),
            e.packet.id
        )));
    }
    let observer = crate::preconditions::Observer::for_policies(&policies, Some(&config::config_dir()));
    let mut revalidations = crate::monitor::Revalidations::default();
    if verdict == Verdict::Approve {
        for e in &entries {
            if let Some(pre) = crate::monitor::revalidated_preconditions(&e.packet) {
                revalidations
                    .insert(e.packet.id.clone(), std::sync::Arc::new(observer.recheck_pending(&pre, Some(e.owner))));
            }
        }
    }
    // The composed verdict, assessed once on the chain verified under the lock.
    let mut assessed: Option<crate::monitor::Assessment> = None;
    let admit = |view: &spool::ChainView, p: &crate::protocol::packet::Packet| -> Result<Vec<String>, String> {
        if verdict == Verdict::Refuse {
            return Ok(Vec::new());
        }
        if let Some(q) = policies.cosign(&p.action_class) {
            return Err(format!("{} needs the approval of {}: approve it on its own", p.id, q.describe()));
        }
        let a = assessed
            .get_or_insert_with(|| crate::assess::assess_view(&policies, &snap, view, &revalidations, &principal.name));
        approvable(a, &p.id)
    };
    let items: Vec<spool::BatchItem<'_>> =
        entries.iter().map(|e| spool::BatchItem { packet: &e.packet, publisher: Some(e.owner) }).collect();
    let decided = spool::decide_many(
        spool,
        &principal,
        &pinned,
        &items,
        verdict,
        reason,
        &crate::protocol::clock::now_rfc3339(),
        &observer,
        admit,
    )
    .map_err(|e| match e {
        spool::BatchError::Decide(spool::DecideError::Io(_) | spool::DecideError::Chain(_)) => {
            Failure::usage(e.to_string())
        }
        _ => Failure::invalid(e.to_string()),
    })?;
    let mut code = 0;
    for (e, d) in entries.iter().zip(&decided) {
        println!(
            "{} {}: record {} {} signed by {} ({})",
            if verdict == Verdict::Approve { "approved" } else { "refused" },
            e.packet.id,
            d.appended.chain_index,
            d.appended.entry_hash,
            principal.name,
            principal.fingerprint()
        );
        if let Some(err) = &d.file_error {
            eprintln!(
                "warrant: {}: the decision is recorded in the chain, but its decision file was not written: {err}",
                e.packet.id
            );
            code = EXIT_USAGE;
        }
    }
    Ok(code)
}

/// The packet `id` of a scan, or why it is not there.
fn scanned_in(spool: &Spool, snap: &spool::Snapshot, id: &str) -> Result<spool::PacketEntry, Failure> {
    if let Some(entry) = snap.packet(id).cloned() {
        return Ok(entry);
    }
    if let Some(bad) = snap.invalid.iter().find(|f| f.name.strip_suffix(".json") == Some(id)) {
        return Err(Failure::invalid(format!("packet {id:?} is invalid: {}", bad.reason)));
    }
    let near = similar_ids(id, snap.packets.iter().map(|e| e.packet.id.as_str()));
    let hint = match near.as_slice() {
        [] => String::from(" (`warrant list` shows the packets)"),
        some => format!(": did you mean {}?", some.iter().map(|i| format!("{i:?}")).collect::<Vec<_>>().join(" or ")),
    };
    Err(Failure::invalid(format!(
        "no valid packet {} in {}{hint}",
        crate::protocol::text::inert(&format!("{id:?}"), 200),
        spool.root().display()
    )))
}

/// Up to three of `ids` that `id` may have been meant as: the same but for case, else within
/// two edits (a swapped, missing, extra or wrong character), nearest first.
fn similar_ids<'a>(id: &str, ids: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut near: Vec<(usize, &str)> = ids
        .filter(|c| *c != id)
        .filter_map(|c| {
            let d = if c.eq_ignore_ascii_case(id) { 0 } else { strsim::damerau_levenshtein(id, c) };
            (d <= 2 && d < id.chars().count()).then_some((d, c))
        })
        .collect();
    near.sort_unstable();
    near.into_iter().take(3).map(|(_, c)| c).collect()
}

/// What an approval carries besides itself: a grant (`--scope`) or a correction (`--correct`),
/// never both.
pub(super) enum With<'a> {
    /// A plain decision.
    Nothing,
    /// A grant signed after the approval.
    Grant(&'a (crate::protocol::grant::ScopeRequest, crate::protocol::grant::GrantOptions)),
    /// The corrected proposed action, as read from `--correct`.
    Correction(Value),
}

pub(super) fn decide_cli(
    spool: &Spool,
    config: &Config,
    id: &str,
    verdict: Verdict,
    reason: Option<&str>,
    review: &Review,
    with: With<'_>,
) -> Result<u8, Failure> {
    use std::io::IsTerminal as _;
    let (grant, correct) = match with {
        With::Nothing => (None, None),
        With::Grant(g) => (Some(g), None),
        With::Correction(v) => (None, Some(v)),
    };
    let interactive = std::io::stdin().is_terminal() && !review.yes;
    if !interactive && review.hash.is_none() && !review.yes {
        return Err(Failure::usage(format!(
            "{} without a terminal needs --hash sha256:… (the content hash `warrant list` prints for {id}) or --yes",
            verdict.as_str()
        )));
    }
    // A broken policy.toml is refused first, as by every command that reads it.
    let policies = load_policies(Some(spool))?;
    let (principal, pinned) = load_principal(config)?;
    let (mut snap, mut entry) = scanned_packet(spool, id)?;
    if let Some(want) = &review.hash
        && *want != entry.packet.content_hash
    {
        return Err(Failure::invalid(format!(
            "packet {id:?} changed since it was reviewed: its content hash is {}, not {}; nothing was signed",
            entry.packet.content_hash,
            crate::protocol::text::inert(want, 80)
        )));
    }
    // A correction is checked against the packet before anything is signed; one equal to the
    // proposed action is an ordinary approval.
    let correction = match correct {
        Some(v) => {
            let c = Correction::new(&entry.packet, &policies, v)
                .map_err(|e| Failure::invalid(format!("--correct: {e}; nothing was signed")))?;
            if c.is_none() {
                eprintln!("warrant: the correction equals the proposed action of {id}: an ordinary approval");
            }
            c
        }
        None => None,
    };
    // A grant asked for is checked before anything is signed, and shown with the packet.
    let decided_at = crate::protocol::clock::now_rfc3339();
    let grant_input = match grant {
        Some((scope, options)) => {
            crate::protocol::grant::prepare(&entry.packet, &policies, scope, options, &decided_at)
                .map_err(|e| Failure::invalid(format!("{e}; nothing was signed")))?
        }
        None => None,
    };
    if interactive {
        show_for_review(&entry, verdict)?;
        if let Some(g) = &grant_input {
            show_grant_preview(g, &snap, &policies, &principal)?;
        }
    }
    // The difference is printed before anything is signed, with or without a terminal.
    if let Some(c) = &correction {
        show_correction(&entry.packet, c)?;
    }
    if interactive {
        let what = if correction.is_some() { "approve as corrected" } else { verdict.as_str() };
        if !confirmed(&format!("sign {what} {id}?"))? {
            eprintln!("warrant: nothing was signed");
            return Ok(EXIT_INVALID);
        }
        // What is signed is what was shown: a packet rewritten while the principal read it is
        // refused, not signed in its new form.
        let (now_snap, now) = scanned_packet(spool, id)?;
        if now.packet.content_hash != entry.packet.content_hash {
            let doing = if correction.is_some() { "correcting" } else { "reviewing" };
            return Err(Failure::invalid(format!(
                "packet {id:?} changed while you were {doing} it; nothing was signed: review it again"
            )));
        }
        (snap, entry) = (now_snap, now);
    }
    // An approval must pass the composed verdict, checked on the chain verified under the lock.
    // Its preconditions are observed here, before the lock is taken, never under it.
    let observer = crate::preconditions::Observer::for_policies(&policies, Some(&config::config_dir()));
    let mut revalidations = crate::monitor::Revalidations::default();
    if verdict == Verdict::Approve
        && let Some(pre) = crate::monitor::revalidated_preconditions(&entry.packet)
    {
        revalidations.insert(id.to_owned(), std::sync::Arc::new(observer.recheck_pending(&pre, Some(entry.owner))));
    }
    let admit = |view: &spool::ChainView| -> Result<Vec<String>, String> {
        if verdict == Verdict::Refuse {
            return Ok(Vec::new());
        }
        let a = crate::assess::assess_view(&policies, &snap, view, &revalidations, &principal.name);
        approvable(&a, id)
    };
    let preconditions = correction.as_ref().and_then(|c| c.preconditions(&entry.packet, &policies));
    let corrected =
        correction.as_ref().map(|c| spool::Corrected { correction: c, preconditions: preconditions.as_deref() });
    let decided = spool::decide_with(
        spool,
        &principal,
        &pinned,
        &entry.packet,
        Some(entry.owner),
        verdict,
        reason,
        corrected,
        &decided_at,
        &observer,
        policies.cosign(&entry.packet.action_class),
        admit,
    )
    .map_err(|e| match e {
        spool::DecideError::Io(_) | spool::DecideError::Chain(_) => Failure::usage(e.to_string()),
        _ => Failure::invalid(e.to_string()),
    })?;
    let word = match (&correction, verdict) {
        (Some(c), _) => format!("approved as corrected ({}, {}‰ changed)", c.size.label(), c.changed_permille),
        (None, Verdict::Approve) => "approved".to_owned(),
        (None, Verdict::Refuse) => "refused".to_owned(),
    };
    println!(
        "{word} {id}{}: record {} {} signed by {} ({})",
        decided.cosigned.as_ref().map(|c| format!(" ({})", c.describe())).unwrap_or_default(),
        decided.appended.chain_index,
        decided.appended.entry_hash,
        principal.name,
        principal.fingerprint()
    );
    if let Some(Value::Array(stands)) = decided.signed.document.get("stands_in_for") {
        for s in stands.iter().filter_map(Value::as_str) {
            println!("  this approval stands in for {s}");
        }
    }
    if let Some(g) = &grant_input {
        match spool::append_grant(spool, &principal, &pinned, g) {
            Ok((g, a)) => {
                println!("granted {}: record {} {}", g.grant_id, a.chain_index, a.entry_hash);
                println!("  covers {}", crate::protocol::text::inert(&g.describe(), usize::MAX));
            }
            Err(e) => {
                eprintln!("warrant: {id} is approved (once), but the grant was not recorded: {e}");
                return Ok(EXIT_USAGE);
            }
        }
    }
    if let Some(e) = &decided.file_error {
        // The agent waiting on the decision file has not got it: not a success.
        eprintln!(
            "warrant: the decision is recorded in the chain, but its decision file was not written: {e}; \
             the next decision or `warrant list` writes it again from the chain"
        );
        return Ok(EXIT_USAGE);
    }
    Ok(0)
}

pub(super) fn list(spool: &Spool, as_json: bool, wide: bool) -> Result<u8, Failure> {
    // A broken policy.toml is refused by a plain listing as by every command that reads it.
    let policies = load_policies(Some(spool))?;
    let pinned = load_pinned()?;
    // The packets and the chain are read at once, one on each core; the chain's view decodes
    // only the prefix decisions of the packets the scan found (every lookup below is by them).
    let (ids_tx, ids_rx) = std::sync::mpsc::channel::<std::collections::HashSet<String>>();
    let (snap, listed) = std::thread::scope(|s| {
        let view = s.spawn(move || {
            // A listing also writes again decision files a full disk cost (`docs/spool.md`).
            let missing = spool::ids_without_decision_files(spool);
            spool::listing_view(spool, &pinned, &missing, &|| ids_rx.recv().ok())
        });
        // A plain listing shows no packet's body: read without them (`Scanner::headers_only`),
        // and only the files changed since the last listing (its cache, in the principal's
        // config directory beside the checkpoint copy).
        let mut scanner = Scanner::for_config(&config::config_dir());
        let mut cache = None;
        if !as_json {
            scanner = scanner.headers_only();
            cache = crate::store::checkpoint_files::listing_cache(spool);
            if let Some(path) = &cache {
                scanner.load_listing(path);
            }
        }
        let snap = scanner.scan(spool);
        // No ids (a failed scan): the channel closes and the view decodes every decision.
        if let Ok(snap) = &snap {
            let _ = ids_tx.send(snap.packets.iter().map(|e| e.packet.id.clone()).collect());
        }
        drop(ids_tx);
        if let (Some(path), Ok(_)) = (&cache, &snap)
            && let Err(e) = scanner.save_listing(path)
        {
            tracing::warn!(error = %e, path = %path.display(), "could not write the listing's cache");
        }
        (snap, view.join())
    });
    let snap = snap?;
    let (view, restored) = listed.map_err(|_| Failure::invalid("internal error: reading the chain panicked"))??;
    if restored > 0 {
        eprintln!("warrant: wrote {restored} decision file(s) again from the chain");
    }
    if let Some(first) = view.report.first() {
        eprintln!(
            "warrant: the chain does not verify ({}); decisions from failing records are not shown",
            crate::protocol::text::inert(&first.to_string(), 400)
        );
    }
    let decided = &view.decisions;
    // Why an undecided packet can no longer be decided ([`spool::withdrawn`]), looked up only for
    // the packets the scan found a record in `uses/` for.
    let checked_at = time::OffsetDateTime::now_utc();
    let withdrawn_of = |e: &spool::PacketEntry| {
        (!decided.contains_key(&e.packet.id) && snap.uses.withdrawals.contains_key(&e.packet.id))
            .then(|| spool::withdrawn(spool, &e.packet.id, Some(e.owner), checked_at))
            .flatten()
    };
    // An undecided call that already ran on one of the principal's grants (its claim in `uses/`
    // names a grant that covers it): it waits for nobody.
    // A plain listing reads packets without their bodies: the few a claim names are read whole,
    // and only the version listed counts.
    let ran_on_grant = |e: &spool::PacketEntry| -> Option<String> {
        if decided.contains_key(&e.packet.id) || !snap.uses.granted.contains_key(&e.packet.id) {
            return None;
        }
        let whole;
        let p = if e.packet.raw.is_null() {
            let bytes = spool::read_limited(&spool.packets_dir().join(&*e.file)).ok()?;
            let stem = e.file.strip_suffix(".json").unwrap_or(&e.file);
            whole = packet::parse_packet(&bytes, stem).ok().filter(|w| w.content_hash == e.packet.content_hash)?;
            &whole
        } else {
            &*e.packet
        };
        snap.uses.ran_on_grant(&view.grants, &policies, p).map(|g| g.grant_id.clone())
    };
    if as_json {
        // warrant's own verdict and the class's risk, not what the packet declares about itself.
        let principal = Config::load().ok().and_then(|c| c.principal).unwrap_or_else(|| "local".into());
        let now = time::OffsetDateTime::now_utc();
        let a = crate::assess::assess_now(&policies, &config::config_dir(), &snap, &view, &principal);
        let packets: Vec<Value> = snap
            .packets
            .iter()
            .map(|e| {
                let p = &e.packet;
                let risk = policies.class_risk(&p.action_class).as_str();
                let withdrawn = withdrawn_of(e);
                let grant = ran_on_grant(e);
                let verdict = a.verdicts.get(&p.id);
                json!({
                    "packet_id": p.id, "agent": p.agent, "action_class": p.action_class,
                    "risk": risk,
                    "declared_risk": p.risk.as_deref().filter(|r| *r != risk),
                    "state": verdict.map(|v| v.state.as_str()),
                    "decisive_model": verdict.map(|v| v.decisive.as_str()),
                    "declared_state": p.state.map(DecisionState::as_str),
                    "publisher": {"uid": e.owner, "user": spool::user_name(e.owner).as_deref()},
                    "impersonation": a.monitor.impersonations.get(&p.id),
                    "summary": p.summary, "content_hash": p.content_hash,
                    "decision": decided.get(&p.id).map(|d| d.verdict.as_str()),
                    "expired": !decided.contains_key(&p.id) && is_expired(p, now),
                    "withdrawn": withdrawn.as_ref().filter(|w| !w.ran()).map(ToString::to_string),
                    "ran": withdrawn.as_ref().is_some_and(spool::Withdrawn::ran) || grant.is_some(),
                    "ran_on_grant": grant,
                    "changed_since_decision": decided.get(&p.id).is_some_and(|d| d.packet_hash != p.content_hash),
                    "cosigners": decided.get(&p.id).map(|d| &d.cosigners).filter(|c| !c.is_empty()),
                    "cosigning": view.cosigning.get(&p.id).filter(|c| c.packet_hash == p.content_hash).map(|c| json!({
                        "signed": c.count, "required": c.quorum.required, "principals": c.quorum.principals,
                        "not_counted": c.not_counted.iter().map(|(n, why)| json!({"name": n, "why": why})).collect::<Vec<_>>(),
                    })),
                })
            })
            .collect();
        let invalid: Vec<Value> = snap
            .invalid
            .iter()
            .map(|f| json!({"file": f.name, "kind": f.kind, "reason": f.reason.to_string()}))
            .collect();
        print_json(&json!({"packets": packets, "invalid": invalid}))?;
        return Ok(0);
    }
    // Buffered: stdout is line-buffered, a write(2) a packet.
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let now = time::OffsetDateTime::now_utc();
    let rows: Vec<ListRow<'_>> = snap
        .packets
        .iter()
        .map(|e| {
            let p = &e.packet;
            // A packet rewritten after its decision: the decision binds the content that was signed.
            let status = match decided.get(&p.id) {
                None => match withdrawn_of(e) {
                    Some(w) if w.ran() => "ran",
                    _ if ran_on_grant(e).is_some() => "ran",
                    Some(_) => "withdrawn",
                    None if is_expired(p, now) => "expired",
                    None => "pending",
                },
                Some(d) if d.packet_hash != p.content_hash => "changed",
                Some(d) => d.verdict.as_str(),
            };
            let t = |s: &str, n: usize| crate::protocol::text::inert(s, n);
            ListRow {
                status,
                packet: p,
                id: t(&p.id, 200),
                agent: t(&p.agent, 200),
                class: t(&p.action_class, 200),
                summary: t(&p.summary, 400),
                risk: policies.class_risk(&p.action_class).as_str(),
            }
        })
        .collect();
    let table = ListTable::new(&rows, if wide { None } else { list_width() });
    writeln!(out, "{}", table.header())?;
    let t = |s: &str, n: usize| crate::protocol::text::inert(s, n);
    for r in &rows {
        writeln!(out, "{}", table.row(r, now.unix_timestamp() as f64))?;
        if let Some(c) =
            view.cosigning.get(&r.packet.id).filter(|c| c.packet_hash == r.packet.content_hash && r.status == "pending")
        {
            writeln!(out, "  co-signing: {}; needs {}", t(&c.describe(), 400), t(&c.quorum.describe(), 400))?;
        }
    }
    for f in &snap.invalid {
        let line = format!(
            "{:9} {}  {}",
            "invalid",
            crate::protocol::text::inert(&f.name, 200),
            crate::protocol::text::inert(&f.reason.to_string(), 400)
        );
        writeln!(out, "{}", table.cut(&line))?;
    }
    out.flush()?;
    // The process ends next: freeing every packet and decision one by one costs more than the
    // listing took to print (their memory goes back to the system with the process).
    std::mem::forget(snap);
    std::mem::forget(view);
    Ok(0)
}

/// One packet of a plain listing: what `list` says of it.
struct ListRow<'a> {
    /// `pending`, `approve`, `refuse`, `expired`, `changed`, `withdrawn` or `ran`.
    status: &'static str,
    packet: &'a packet::Packet,
    /// The packet's id, agent, class and summary made inert (as printed, and as measured).
    id: String,
    agent: String,
    class: String,
    summary: String,
    /// The class's risk by warrant's policy (never the packet's own claim).
    risk: &'static str,
}

/// The plain listing's columns, sized to the terminal: STATUS, ID, HASH (the content hash's
/// first 12 hex digits, 8 below 100 columns), RISK, AGE, AGENT, CLASS and SUMMARY. Ids,
/// agents, classes and summaries are cut (with `…`) at a width from their longest, within a
/// cap, narrowed while the line is too wide (the agent first, the id last), so the columns line
/// up and no line wraps. `width: None` (`--wide`, or a pipe without `COLUMNS`) cuts nothing and
/// shows the whole hash.
struct ListTable {
    width: Option<usize>,
    id: usize,
    hash: usize,
    agent: usize,
    class: usize,
}

impl ListTable {
    fn new(rows: &[ListRow<'_>], width: Option<usize>) -> Self {
        let longest =
            |f: &dyn Fn(&ListRow<'_>) -> usize, header: usize| rows.iter().map(f).max().unwrap_or(0).max(header);
        let (id, agent, class, summary) = (
            longest(&|r| r.id.chars().count(), 2),
            longest(&|r| r.agent.chars().count(), 5),
            longest(&|r| r.class.chars().count(), 5),
            longest(&|r| r.summary.chars().count(), 7),
        );
        let Some(w) = width else { return ListTable { width, id, hash: 71, agent, class } };
        let hash = if w < 100 { 8 } else { 12 };
        // [agent, summary, class, id], cut in this order while the line is too wide: first to
        // widths that still read well, then to the least (the id last: `approve` takes it
        // whole).
        let mut cols = [agent.min(20), summary.min(24), class.min(30), id.min(28)];
        // STATUS, HASH, RISK and AGE with their spaces, and the spaces after ID, AGENT, CLASS.
        let fixed = 10 + hash + 1 + 9 + 5 + 3;
        for (i, floor) in [(0, 12), (1, 20), (3, 16), (2, 20), (1, 12), (0, 8), (2, 14), (3, 10)] {
            let over = (fixed + cols.iter().sum::<usize>()).saturating_sub(w);
            cols[i] -= over.min(cols[i].saturating_sub(floor));
        }
        let [agent, _, class, id] = cols;
        ListTable { width, id, hash, agent, class }
    }

    fn header(&self) -> String {
        self.cut(&format!(
            "{:9} {} {} {:8} {:>4} {} {} SUMMARY",
            "STATUS",
            fit("ID", self.id),
            fit("HASH", self.hash),
            "RISK",
            "AGE",
            fit("AGENT", self.agent),
            fit("CLASS", self.class)
        ))
    }

    fn row(&self, r: &ListRow<'_>, now: f64) -> String {
        let p = r.packet;
        let hash = match self.width {
            None => p.content_hash.clone(),
            Some(_) => fit(
                &p.content_hash.trim_start_matches("sha256:").chars().take(self.hash).collect::<String>(),
                self.hash,
            ),
        };
        let age = p.created_unix().map_or_else(|| "?".to_owned(), |c| crate::protocol::clock::human_age(now - c));
        self.cut(&format!(
            "{:9} {} {} {:8} {:>4} {} {} {}",
            r.status,
            fit(&r.id, self.id),
            hash,
            r.risk,
            age,
            fit(&r.agent, self.agent),
            fit(&r.class, self.class),
            r.summary
        ))
    }

    /// `line` cut to the width, with `…` where it was cut.
    fn cut(&self, line: &str) -> String {
        self.width.map_or_else(|| line.to_owned(), |w| cut_to(line, w))
    }
}

/// `s` cut to `width` characters, its last one `…` when it was cut.
fn cut_to(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// `s` in exactly `width` characters: cut with `…`, or padded.
fn fit(s: &str, width: usize) -> String {
    format!("{:width$}", cut_to(s, width))
}

/// The width a plain listing fits: `COLUMNS` when set, else the terminal's when stdout is one;
/// `None` (nothing cut) for a pipe, so a script reads every character.
fn list_width() -> Option<usize> {
    if let Some(c) = std::env::var("COLUMNS").ok().and_then(|c| c.trim().parse::<usize>().ok()).filter(|c| *c >= 40) {
        return Some(c);
    }
    rustix::termios::tcgetwinsize(std::io::stdout()).ok().map(|w| usize::from(w.ws_col)).filter(|c| *c >= 40)
}

/// Whether the packet's `expires_at` has passed at `now` (an undecided packet then can only be
/// refused).
fn is_expired(p: &packet::Packet, now: time::OffsetDateTime) -> bool {
    p.expires_at.as_deref().and_then(crate::protocol::clock::parse_rfc3339).is_some_and(|t| t <= now)
}
