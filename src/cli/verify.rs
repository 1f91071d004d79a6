//! Verifying and auditing: `warrant verify` (a spool, a chain, an export, `--audit`), `export` and
//! `audit`, on a directory or a JetStream store.

use super::common::{directory_at, load_pinned, load_policies, print_json};
use super::{EXIT_INVALID, Failure};
use crate::protocol::chain::{self, VerifyOptions, VerifyReport};
use crate::protocol::decision::Verdict;
use crate::protocol::graduation::PolicySet;
use crate::protocol::keys::PinnedKeys;
#[cfg(feature = "jetstream")]
use crate::store::StoreLocation;
use crate::store::chain_file;
use crate::store::config;
use crate::store::spool::{self, Scanner, Spool};
use serde_json::{Value, json};
use std::io::{Read as _, Write as _};
use std::path::Path;

/// Reads PATH as a spool directory, a JSON-lines chain, or an export envelope, and verifies it.
///
/// A spool's chain and a `.jsonl` chain are warrant's own, so every approval signature in them
/// must be a warrant signature under a pinned key; an export from another producer keeps its
/// foreign signatures opaque (OpenTrustGraph). A directory that is neither a spool (no
/// `chain.jsonl`, `packets/` or `decisions/`) nor readable is a usage error.
///
/// # Errors
/// I/O errors and non-spool directories (exit 2).
pub fn verify_path(path: &Path, pinned: &PinnedKeys) -> Result<VerifyReport, Failure> {
    let own = VerifyOptions { pinned: Some(pinned), strict_signatures: true };
    let meta = std::fs::metadata(path).map_err(|e| Failure::usage(format!("{}: {e}", path.display())))?;
    if meta.is_dir() {
        let spool = directory_at(path.to_owned());
        let looks_like_spool =
            [spool.chain_path(), spool.packets_dir(), spool.decisions_dir()].iter().any(|p| p.exists());
        if !looks_like_spool {
            return Err(Failure::usage(format!(
                "{}: not a spool (no chain.jsonl, packets/ or decisions/)",
                path.display()
            )));
        }
        // The checkpoint first, then the chain: a decision signed between the two reads must
        // not make the chain look cut off (the chain only grows).
        let (checkpoint, notes) = crate::store::checkpoint_files::latest(&spool, pinned);
        // A spool without chain.jsonl has an empty chain, which is valid (as `export` says).
        let chain_path = spool.chain_path();
        let mut report = match chain_file::open_regular(&chain_path, true) {
            Ok(file) => chain::verify_reader(file, own, &std::sync::atomic::AtomicU64::new(0))
                .map_err(|source| chain_file::ChainError::Io { path: chain_path.clone(), source })?,
            Err(chain_file::ChainError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                VerifyReport::default()
            }
            Err(e) => return Err(e.into()),
        };
        for note in notes {
            eprintln!("warrant: {}", crate::protocol::text::inert(&note, 4000));
        }
        if let Some(f) =
            checkpoint.and_then(|cp| crate::store::checkpoint_files::check(&spool.chain_path(), &cp, &report))
        {
            report.findings.push(f);
        }
        return Ok(report);
    }
    // A JSON-lines chain starts with a record line; anything else is read as an export envelope.
    let file = chain_file::open_regular(path, false)?;
    let mut first = Vec::new();
    std::io::BufRead::read_until(
        &mut std::io::BufReader::new(&file).take(chain::MAX_LINE_BYTES as u64),
        b'\n',
        &mut first,
    )
    .map_err(|e| Failure::usage(format!("{}: {e}", path.display())))?;
    let first_is_record = crate::protocol::canonical::parse_strict(first.trim_ascii())
        .ok()
        .and_then(|v| v.get("schema").and_then(Value::as_str).map(|s| s.starts_with("opentrustgraph/")))
        .unwrap_or(false);
    if first_is_record {
        return Ok(chain_file::verify_file(path, own)?);
    }
    let bytes = std::fs::read(path).map_err(|e| Failure::usage(format!("{}: {e}", path.display())))?;
    match crate::protocol::canonical::parse_strict(&bytes) {
        Ok(v @ Value::Object(_)) => {
            let foreign = VerifyOptions { pinned: Some(pinned), strict_signatures: false };
            Ok(chain::verify_export(&v, foreign))
        }
        // Neither an export nor a chain that starts well: verify as JSON lines, which reports
        // the first bad line.
        _ => Ok(chain_file::verify_file(path, own)?),
    }
}

/// Findings `warrant verify` prints before summarising the rest (a tampered million-record chain
/// can have a million findings; `--json` lists every one).
const SHOWN_FINDINGS: usize = 50;

/// The audit of a spool: the entries of its verified chain and the calls of its receipt files,
/// and the verification report.
fn spool_audit(spool: &Spool) -> Result<(VerifyReport, Vec<crate::audit::AuditEntry>), Failure> {
    // A mistyped spool is an error, not an empty audit.
    if !spool.root().is_dir() {
        return Err(Failure::usage(format!("{}: no such spool directory", spool.root().display())));
    }
    let pinned = load_pinned()?;
    Ok(crate::audit::audit_chain(spool, &pinned)?)
}

/// One JSON line with every [`crate::protocol::text::is_unsafe`] character escaped as `\uXXXX` (outside
/// strings a JSON text has none, so escaping the whole line changes no value).
fn json_line_inert(v: &Value) -> String {
    let mut out = String::new();
    for c in v.to_string().chars() {
        if crate::protocol::text::is_unsafe(c) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// `warrant audit`: exit 0, or 1 when the chain does not verify (the records that failed are
/// left out and the first finding is on stderr).
pub(super) fn audit_cmd(
    spool: &Spool,
    as_json: bool,
    since: Option<&str>,
    agent: Option<String>,
) -> Result<u8, Failure> {
    let since = match since {
        Some(t) => Some(crate::protocol::clock::unix_seconds(t).ok_or_else(|| {
            Failure::usage(format!("--since {}: not an RFC 3339 time", crate::protocol::text::inert(t, 80)))
        })?),
        None => None,
    };
    let (report, chain_entries) = spool_audit(spool)?;
    let snap = Scanner::for_config(&config::config_dir()).scan(spool)?;
    let entries = crate::audit::build(
        chain_entries,
        &snap.receipts,
        &snap.uses.granted,
        &crate::audit::AuditFilter { since, agent },
    );
    let mut out = std::io::stdout().lock();
    for e in &entries {
        if as_json {
            writeln!(out, "{}", json_line_inert(&e.to_json()))?;
        } else {
            writeln!(out, "{}", audit_text_line(e))?;
            if e.corrected.is_some() {
                // The difference, when the packet this approval signed is still in the spool.
                let proposed = e
                    .packet_id
                    .as_deref()
                    .and_then(|id| snap.packet(id))
                    .filter(|p| Some(&p.packet.content_hash) == e.packet_hash.as_ref());
                match proposed {
                    Some(p) => {
                        for line in e.corrected_difference(p.packet.proposed_action()) {
                            let text = crate::protocol::text::inert(line.text(), usize::MAX);
                            writeln!(out, "    {} {text}", line.mark())?;
                        }
                    }
                    None => writeln!(out, "    (the packet as proposed is no longer in the spool)")?,
                }
            }
        }
    }
    out.flush()?;
    if let Some(first) = report.first() {
        eprintln!(
            "warrant: the chain does not verify ({}); records that fail a check are left out",
            crate::protocol::text::inert(&first.to_string(), 400)
        );
        return Ok(1);
    }
    Ok(0)
}

/// One audit entry as a line of text (everything from the spool made inert).
fn audit_text_line(e: &crate::audit::AuditEntry) -> String {
    use crate::protocol::text::inert;
    let place = e.record.map_or_else(|| "not in the chain".to_owned(), |r| format!("record {r}"));
    let mut line = format!(
        "{place:<16} {}  {:<10} {:<8} {}  agent {}  {}",
        inert(&e.at, 40),
        e.kind.word(),
        inert(&e.decision, 40),
        inert(&e.action, 80),
        inert(&e.agent, 80),
        e.how.words()
    );
    if let Some(s) = &e.signer {
        line.push_str(&format!("  signer {} {}", inert(&s.name, 64), inert(&s.key, 80)));
    }
    if let Some(p) = &e.packet_id {
        line.push_str(&format!("  packet {}", inert(p, 128)));
    }
    if let Some(t) = &e.tool {
        line.push_str(&format!("  tool {}", inert(t, 80)));
        if e.calls > 1 {
            line.push_str(&format!(" ×{}", e.calls));
        }
    }
    if let Some(r) = &e.receipt_id {
        line.push_str(&format!("  receipt {}", inert(r, 128)));
    }
    if let Some(g) = &e.observed_by {
        line.push_str(&format!("  observed by gateway {}", inert(g, 64)));
    }
    if let Some(r) = &e.reason {
        line.push_str(&format!("  reason \"{}\"", inert(r, 200)));
    }
    if let Some(c) = e.corrected_words() {
        line.push_str(&format!("  {c}"));
    }
    if let Some(h) = &e.entry_hash {
        line.push_str(&format!("  {}", inert(h, 80)));
    }
    line
}

/// `warrant verify --audit FILE`: every line of an exported audit that claims a chain record
/// checked against the spool's verified chain. Exit 0 when the chain verifies and every such
/// line matches, 1 otherwise.
pub(super) fn verify_audit(spool: &Spool, file: &Path, as_json: bool) -> Result<u8, Failure> {
    let text = crate::store::config::read_text_file(file, 1 << 30)
        .map_err(|e| Failure::usage(format!("{}: {e}", file.display())))?;
    let (report, entries) = spool_audit(spool)?;
    let check = crate::audit::check_lines(&text, &entries);
    let ok = report.is_valid() && check.mismatches.is_empty();
    if as_json {
        print_json(&json!({
            "valid": ok,
            "chain_valid": report.is_valid(),
            "checked": check.checked,
            "off_chain": check.off_chain,
            "mismatches": check.mismatches.iter().map(|m| json!({"line": m.line, "message": m.message})).collect::<Vec<_>>(),
        }))?;
    } else {
        let mut err = std::io::stderr().lock();
        if let Some(first) = report.first() {
            writeln!(err, "invalid chain: {}", crate::protocol::text::inert(&first.to_string(), 4000))?;
        }
        for m in &check.mismatches {
            writeln!(err, "audit line {}: {}", m.line, crate::protocol::text::inert(&m.message, 4000))?;
        }
        if ok {
            println!(
                "audit matches the chain: {} lines checked against {} records, {} not in the chain (receipt files, not checkable)",
                check.checked, report.total, check.off_chain
            );
        } else {
            writeln!(
                err,
                "audit does not match the chain: {} mismatches, {} lines matched, {} not in the chain",
                check.mismatches.len(),
                check.checked,
                check.off_chain
            )?;
        }
    }
    Ok(if ok { 0 } else { 1 })
}

/// `warrant verify` of a spool on JetStream: its chain, with the same checks and the same
/// report as for the directory with the same history.
///
/// # Errors
/// Connecting, a missing spool, pinned keys that cannot be read.
#[cfg(feature = "jetstream")]
pub(super) fn verify_store(at: &StoreLocation, as_json: bool) -> Result<u8, Failure> {
    let pinned = load_pinned()?;
    let StoreLocation::JetStream(url) = at else {
        return Err(Failure::usage(format!("{at} is not a JetStream store")));
    };
    let opts = crate::store::jetstream::ConnectOptions::from_env().map_err(Failure::usage)?;
    let fail = |e: crate::store::jetstream::JsError| Failure::usage(format!("{at}: {e}"));
    let store = crate::store::jetstream::JetStreamSpool::connect(url, &opts).map_err(fail)?;
    store.check_exists().map_err(fail)?;
    // Read in parts as the verifier asks for them: one part in memory at a time.
    let progress = std::sync::atomic::AtomicU64::new(0);
    let opts = VerifyOptions { pinned: Some(&pinned), strict_signatures: true };
    let report = chain::verify_reader(store.chain_reader(), opts, &progress)
        .map_err(|e| Failure::usage(format!("{at}: {e}")))?;
    print_report(&report, as_json)
}

/// `warrant export` of a spool on JetStream: the same envelope as for the directory.
///
/// # Errors
/// As [`verify_store`].
#[cfg(feature = "jetstream")]
pub(super) fn export_store(at: &StoreLocation) -> Result<u8, Failure> {
    let pinned = load_pinned()?;
    let log = crate::store::open_chain(at, false, 1).map_err(|e| Failure::usage(format!("{at}: {e}")))?;
    let records = log
        .lines()
        .map_err(|e| Failure::usage(format!("{at}: {e}")))?
        .iter()
        .map(|l| serde_json::from_slice(l).unwrap_or(Value::Null))
        .collect();
    let envelope = chain::export(
        records,
        VerifyOptions { pinned: Some(&pinned), strict_signatures: true },
        &crate::protocol::clock::now_rfc3339(),
    );
    print_json(&envelope)?;
    Ok(0)
}

pub(super) fn verify(path: &Path, as_json: bool) -> Result<u8, Failure> {
    let pinned = load_pinned()?;
    let mut report = verify_path(path, &pinned)?;
    if path.is_dir() && report.is_valid() {
        let spool = directory_at(path.to_owned());
        let policies = load_policies(Some(&spool))?;
        if policies.any_cosign() {
            report.findings.extend(quorum_findings(&spool::verify_chain(&spool, &pinned)?, &pinned, &policies));
        }
    }
    print_report(&report, as_json)
}

/// `warrant verify --since-checkpoint [SPOOL]`: the spool's chain from the principal's latest
/// checkpoint ([`spool::agent_view`]: the checkpoint's signature against the pinned keys, the
/// agents' snapshot it binds, the line it names, every record after it), reading nothing of the
/// records before; without a checkpoint and snapshot that hold, the whole chain, said on
/// stderr. The report's `total` and `root_hash` are the whole chain's, its signatures the
/// tail's; approvals after the checkpoint are held to the policy's quorums.
///
/// # Errors
/// A PATH that is not a spool directory (exit 2); reading the chain.
pub(super) fn verify_since_checkpoint(path: &Path, as_json: bool) -> Result<u8, Failure> {
    if !path.is_dir() {
        return Err(Failure::usage(format!(
            "{}: --since-checkpoint verifies a spool directory (a chain file or an export has no checkpoint)",
            path.display()
        )));
    }
    let pinned = load_pinned()?;
    let spool = directory_at(path.to_owned());
    let view = spool::agent_view(&spool, &pinned)?;
    let mut report = view.chain.view.report.clone();
    let policies = load_policies(Some(&spool))?;
    if report.is_valid() && policies.any_cosign() {
        report.findings.extend(quorum_findings(&view.chain.view, &pinned, &policies));
    }
    let since = view.checkpoint.as_ref().filter(|_| view.from_snapshot());
    if as_json {
        let mut out = report_json(&report);
        out["since_checkpoint"] = since.map_or(Value::Null, |cp| {
            json!({"records": cp.records, "head_hash": cp.head_hash, "principal": cp.principal, "signed_at": cp.signed_at})
        });
        print_json(&out)?;
        return Ok(if report.is_valid() { 0 } else { EXIT_INVALID });
    }
    match since {
        Some(cp) => eprintln!(
            "warrant: records 1-{} taken on the checkpoint {} signed at {} (entry_hash {}); the {} after it verified",
            cp.records,
            crate::protocol::text::inert(&cp.principal, 200),
            crate::protocol::text::inert(&cp.signed_at, 100),
            cp.head_hash,
            (report.total as u64).saturating_sub(cp.records),
        ),
        None => eprintln!(
            "warrant: no checkpoint of the principal's with its agents' snapshot holds for this chain: the whole chain was verified"
        ),
    }
    print_report(&report, false)
}

/// `findings` grouped by their check and message, in the order each first appears: each group's
/// first finding and the record numbers (1-based) of the others.
fn same_findings(findings: &[chain::Finding]) -> Vec<(&chain::Finding, Vec<usize>)> {
    let mut at: std::collections::HashMap<(chain::Check, &str), usize> = std::collections::HashMap::new();
    let mut groups: Vec<(&chain::Finding, Vec<usize>)> = Vec::new();
    for f in findings {
        match at.get(&(f.check, f.message.as_str())) {
            Some(&g) => groups[g].1.extend(f.record()),
            None => {
                at.insert((f.check, f.message.as_str()), groups.len());
                groups.push((f, Vec::new()));
            }
        }
    }
    groups
}

/// The JSON of `warrant verify --json`: `valid`, `total`, `root_hash`, `signatures_verified`,
/// `first` (the first finding), `findings`, `torn_tail_bytes`.
fn report_json(report: &VerifyReport) -> Value {
    json!({
        "valid": report.is_valid(),
        "total": report.total,
        "root_hash": report.root_hash,
        "signatures_verified": report.signatures_verified,
        "first": report.first(),
        "findings": report.findings,
        "torn_tail_bytes": report.torn_tail,
    })
}

/// Prints a verification report as `warrant verify` does (JSON with `--json`), and gives its
/// exit code: 0 when valid, [`EXIT_INVALID`] otherwise.
///
/// # Errors
/// Writing to stdout or stderr.
fn print_report(report: &VerifyReport, as_json: bool) -> Result<u8, Failure> {
    let valid = report.is_valid();
    if as_json {
        print_json(&report_json(report))?;
    } else if valid {
        println!(
            "valid: {} records, root {}, {} signatures verified against pinned keys",
            report.total,
            report.root_hash.as_deref().unwrap_or("null"),
            report.signatures_verified
        );
    } else {
        let mut err = std::io::stderr().lock();
        // A finding repeated for many records (every decision by a key the auditor has not
        // pinned) is printed once, with the records it is about.
        let groups = same_findings(&report.findings);
        for (n, (f, also)) in groups.iter().take(SHOWN_FINDINGS).enumerate() {
            let lead = if n == 0 { "invalid: " } else { "  " };
            writeln!(err, "{lead}{}", crate::protocol::text::inert(&f.to_string(), 4000))?;
            if !also.is_empty() {
                let some: Vec<String> = also.iter().take(8).map(ToString::to_string).collect();
                let etc = if also.len() > 8 { ", …" } else { "" };
                writeln!(
                    err,
                    "    the same for {} more {}: {}{etc}",
                    also.len(),
                    if also.len() == 1 { "record" } else { "records" },
                    some.join(", ")
                )?;
            }
        }
        if let Some(more) = groups.len().checked_sub(SHOWN_FINDINGS).filter(|&n| n > 0) {
            writeln!(err, "  … and {more} more findings ({} in all; `--json` lists every one)", report.findings.len())?;
        }
        if report.findings.iter().all(|f| f.check == chain::Check::UnpinnedKey) {
            writeln!(
                err,
                "note: every finding is a signature by a key you have not pinned: unverifiable, but none was shown to be forged; pin the signer's key (`warrant keys pin`) to verify them"
            )?;
        }
    }
    if let Some(bytes) = report.torn_tail.filter(|_| !as_json) {
        eprintln!(
            "note: the chain ends in a torn line of {bytes} bytes (an append interrupted before it finished, which never \
             reported success); it is not a record, and the next append or the console moves it to a side file"
        );
    }
    Ok(if valid { 0 } else { EXIT_INVALID })
}

/// The approvals in a spool's chain of classes its policy says need several principals
/// (`[cosign]`) that do not meet the quorum (`chain::Check::Quorum`), in chain order, among the
/// decisions of `view`.
fn quorum_findings(view: &spool::ChainView, pinned: &PinnedKeys, policies: &PolicySet) -> Vec<chain::Finding> {
    let mut findings: Vec<chain::Finding> = view
        .decisions
        .iter()
        .filter(|(_, d)| d.verdict == Verdict::Approve)
        .filter_map(|(id, d)| {
            let q = policies.cosign(&d.action_class)?;
            (!d.meets(q)).then(|| chain::Finding {
                index: usize::try_from(d.chain_index.saturating_sub(1)).ok(),
                check: chain::Check::Quorum,
                message: format!(
                    "the approval of {} ({}) is signed by {}: policy.toml [cosign] asks the approval of {}",
                    crate::protocol::text::inert(id, 200),
                    crate::protocol::text::inert(&d.action_class, 200),
                    crate::protocol::text::inert(&d.signed_by(), 400),
                    q.describe()
                ),
            })
        })
        .collect();
    // Approvals gathered towards a quorum that do not count: signed under a name their key is
    // not pinned for here (a key renamed, or pinned by the signer for another name).
    for (id, c) in &view.cosigning {
        // (A key announced by a rotation in the chain is not in `pinned`: its record verified
        // under the rotation, so only a key pinned here for another name is reported.)
        for sig in c.signatures.iter().filter(|s| pinned.get(s.key()).is_some()) {
            let Some((name, key, why)) = c.quorum.count([(sig.principal(), sig.key())], pinned).uncounted.pop() else {
                continue;
            };
            findings.push(chain::Finding {
                index: usize::try_from(sig.chain_index.saturating_sub(1)).ok(),
                check: chain::Check::Quorum,
                message: format!(
                    "the approval of {} under the name {} by key {key} does not count towards {}: {}",
                    crate::protocol::text::inert(id, 200),
                    crate::protocol::text::inert(&name, 200),
                    c.quorum.describe(),
                    crate::protocol::text::inert(&why, 400),
                ),
            });
        }
    }
    findings.sort_by_key(|f| f.index);
    findings
}
