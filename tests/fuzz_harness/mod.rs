//! The fuzz harness: one function per fuzz target, shared by the targets in `fuzz/fuzz_targets/`
//! (as the `warrant_fuzz` library) and by `tests/fuzz_regressions.rs`, which replays every kept
//! crash through the same code.
//!
//! Each function feeds arbitrary bytes to warrant's parsers and checks cheap properties of what
//! they accept; a broken property panics, which the fuzzer reports as a crash. Each returns
//! `Ok(())` when the input was accepted and `Err(message)` with the parser's error otherwise, so
//! a regression test can assert that a rejected input is rejected with a clear message.
#![allow(dead_code, clippy::unwrap_used)]

use serde_json::{Map, Value, json};
use std::io::Cursor;
use warrant::protocol::canonical::{self, parse_strict, to_canonical_vec};
use warrant::protocol::chain::{self, ChainHead, Line, VerifyOptions, VerifyReport};
use warrant::protocol::decision::{self, DecisionInput, Verdict};
use warrant::protocol::graduation::evidence::{EvidenceRow, EvidenceSummary, SourceType, rows_from_json};
use warrant::protocol::graduation::gate::{AgentStanding, GateRequest, can_execute};
use warrant::protocol::graduation::policy::PolicySet;
use warrant::protocol::graduation::posterior::Posterior;
use warrant::protocol::graduation::receipt::{content_hash, receipt_evidence};
use warrant::protocol::keys::{PinnedKeys, Principal};
use warrant::protocol::packet::{self, DecisionState};
use warrant::store::chain_file::ChainReader;

/// The time every harness decision is signed at and every export is generated at.
pub const NOW: &str = "2026-11-21T09:00:00Z";

/// The seed of the principal whose signatures the harness pins (`fuzz/examples/gen_seeds.rs`
/// signs the seed chains with it, so the fuzzer starts from chains whose signatures verify).
pub const PRINCIPAL_SEED: [u8; 32] = [7; 32];

/// The principal the harness signs with.
#[must_use]
pub fn principal() -> Principal {
    Principal::from_seed("fuzz-principal", &PRINCIPAL_SEED)
}

/// Keys with [`principal`] pinned.
#[must_use]
pub fn pinned() -> PinnedKeys {
    let p = principal();
    let mut keys = PinnedKeys::default();
    keys.pin(&p.name, p.verifying_key());
    keys
}

/// The verification options of a spool's own chain: signatures checked against [`pinned`].
fn strict(keys: &PinnedKeys) -> VerifyOptions<'_> {
    VerifyOptions { pinned: Some(keys), strict_signatures: true }
}

/// Bytes as text, or the reason they are not UTF-8.
fn text(data: &[u8]) -> Result<&str, String> {
    std::str::from_utf8(data).map_err(|e| format!("not UTF-8: {e}"))
}

/// Canonical JSON is a fixed point: parse → canonical → parse gives the same value and the
/// same bytes, so a hash computed when writing is the hash recomputed when verifying.
pub fn canonical(data: &[u8]) -> Result<(), String> {
    let value = parse_strict(data).map_err(|e| e.to_string())?;
    let bytes = to_canonical_vec(&value);
    let again = parse_strict(&bytes).unwrap_or_else(|e| panic!("canonical bytes do not parse: {e}"));
    assert_eq!(again, value, "canonical JSON read back differs");
    assert_eq!(to_canonical_vec(&again), bytes, "canonical JSON is not a fixed point");
    assert_eq!(canonical::canonical_digest(&again), canonical::canonical_digest(&value));
    if let Value::Object(map) = &value {
        // The entry-hash preimage (the object without a top-level key) agrees with removing it.
        let mut without = map.clone();
        let skip = map.keys().next().cloned().unwrap_or_default();
        without.remove(&skip);
        assert_eq!(
            canonical::canonical_digest_without(map, &skip),
            canonical::canonical_digest(&Value::Object(without)),
            "canonical_digest_without disagrees with removing the key"
        );
    }
    Ok(())
}

/// An approval packet: `packet::parse_packet` (portable and runtime forms). An accepted packet
/// has a safe id and the content hash of its canonical JSON, parses the same from its canonical
/// bytes, shows inert text, and can be decided: the signed decision record passes the checks
/// an append runs (no packet can poison the chain) and verifies under the pinned key.
pub fn packet(data: &[u8]) -> Result<(), String> {
    let p = packet::parse_packet(data, "fuzz-stem").map_err(|e| e.to_string())?;
    assert!(packet::is_safe_id(&p.id), "accepted an unsafe id {:?}", p.id);
    assert_eq!(p.content_hash, canonical::canonical_hash(&p.raw));
    let again = packet::parse_packet(&to_canonical_vec(&p.raw), "fuzz-stem").expect("canonical packet parses");
    assert_eq!(again, p, "the packet reads differently from its canonical bytes");
    for s in [&p.summary, &p.agent, &p.action_class] {
        assert!(
            !warrant::protocol::text::inert(s, 200).chars().any(char::is_control),
            "control character survives inert"
        );
    }
    assert!(!p.agent.trim().is_empty(), "empty agent");
    let _ = warrant::protocol::verdict::Governance::of_packet(&p);

    let principal = principal();
    let keys = pinned();
    let trace = p.trace_id.clone().unwrap_or_else(|| format!("warrant:{}", p.id));
    let class = warrant::protocol::registry::normalize(&p.action_class);
    let mut head = ChainHead { last_index: 0, last_hash: None };
    let mut records = Vec::new();
    for (verdict, reason) in [(Verdict::Refuse, Some("fuzz refusal")), (Verdict::Approve, None)] {
        let input = DecisionInput {
            stands_in_for: &[],
            packet_id: &p.id,
            packet_hash: &p.content_hash,
            action_class: &class,
            agent: &p.agent,
            trace_id: &trace,
            verdict,
            reason,
            decided_at: NOW,
        };
        let signed = decision::sign_decision(&principal, &input);
        let sealed = chain::seal(decision::record_body(&input, &signed), &head);
        let Value::Object(rec) = &sealed.record else { panic!("sealed record is not an object") };
        let findings = chain::check_new_record(rec, Some(&keys));
        assert!(findings.is_empty(), "a decision on an accepted packet fails the append checks: {findings:?}");
        let file = decision::decision_file(&signed, &sealed);
        let verified = decision::verify_decision_file(&file, &p.id, Some(&p.content_hash), &keys)
            .unwrap_or_else(|e| panic!("own decision file rejected: {e}"));
        assert_eq!(verified.verdict, verdict);
        head = ChainHead { last_index: sealed.chain_index, last_hash: Some(sealed.entry_hash.clone()) };
        records.push(sealed.record);
    }
    let report = chain::verify_records(&records, strict(&keys));
    assert!(report.is_valid(), "decisions on an accepted packet do not verify: {:?}", report.findings);
    assert_eq!(report.signatures_verified, 2);
    Ok(())
}

/// A receipt: `packet::parse_receipt`, the evidence row a receipt stands for
/// (`graduation::receipt::receipt_evidence`, from the spool and from the chain), evidence rows
/// (`rows_from_json`) and, for a `warrant_decision` file, `decision::verify_decision_file`.
pub fn receipt(data: &[u8]) -> Result<(), String> {
    let parsed = packet::parse_receipt(data);
    let Ok(value) = parse_strict(data) else {
        return parsed.map(|_| ()).map_err(|e| e.to_string());
    };
    if let Ok(r) = &parsed {
        assert!(packet::is_safe_id(&r.id), "accepted an unsafe receipt id {:?}", r.id);
        assert!(packet::is_class_id(&r.action_class));
        assert_eq!(r.raw, value);
    }
    if let Value::Object(m) = &value {
        let hash = content_hash(m);
        assert!(canonical::is_sha256_string(&hash));
    }
    let today = time::macros::date!(2026 - 11 - 21);
    for cap in [Some(SourceType::Connector), None] {
        if let Some(row) = receipt_evidence(&value, cap) {
            let json = row.to_json("2026-11-21");
            let back = EvidenceRow::from_json(&json).unwrap_or_else(|e| panic!("own evidence row rejected: {e}"));
            let summary = EvidenceSummary::of(&row.action_class, [&row, &back]);
            let rate = summary.rejection_rate();
            assert!((0.0..=1.0).contains(&rate), "rejection rate {rate} outside [0, 1]");
            let _ = summary.to_json();
            let policies = PolicySet::builtin();
            let class = policies.normalize(&row.action_class);
            let post = Posterior::of(&class, [&row, &back], policies.threshold(&class), today);
            let _ = post.to_json();
        }
    }
    if let Ok(rows) = rows_from_json(&value) {
        for row in &rows {
            let _ = row.to_json("2026-11-21");
        }
        let policies = PolicySet::builtin();
        for row in rows.iter().take(4) {
            let class = policies.normalize(&row.action_class);
            let post = Posterior::of(&class, &rows, policies.threshold(&class), today);
            let _ = (post.to_json(), post.approvals_to_graduate());
        }
    }
    if value.get("type").and_then(Value::as_str) == Some(decision::DECISION_FILE_TYPE) {
        let id = value.get("packet_id").and_then(Value::as_str).unwrap_or_default();
        let hash = value.get("document").and_then(|d| d.get("packet_hash")).and_then(Value::as_str);
        let _ = decision::verify_decision_file(&value, id, hash, &pinned());
    }
    parsed.map(|_| ()).map_err(|e| e.to_string())
}

/// Verifies `lines` leniently (OpenTrustGraph checks alone) and strictly (signatures against
/// [`pinned`]); every lenient finding is also a strict one.
fn verify_both(lines: &[Line<Value>], keys: &PinnedKeys) -> (VerifyReport, VerifyReport) {
    let lenient = chain::verify_stream(lines.iter().map(borrowed), VerifyOptions::default(), |_, _| {});
    let strict = chain::verify_stream(lines.iter().map(borrowed), strict(keys), |_, _| {});
    for f in &lenient.findings {
        assert!(strict.findings.contains(f), "lenient finding {f} missing from the strict report");
    }
    for report in [&lenient, &strict] {
        assert_eq!(report.total, lines.len());
        assert!(report.findings.iter().all(|f| f.index.is_some_and(|i| i < lines.len())));
    }
    assert_eq!(lenient.root_hash, strict.root_hash);
    (lenient, strict)
}

fn borrowed(line: &Line<Value>) -> Line<&Value> {
    match line {
        Line::Record(v) => Line::Record(v),
        Line::Unparsable(m) => Line::Unparsable(m.clone()),
    }
}

/// `chain.jsonl` bytes: `chain_file::ChainReader` and `chain::verify_stream`. A chain that verifies
/// still verifies, with the same head, when its records are written out again (plain and
/// canonical JSON), and its export verifies with `verified: true`.
pub fn record(data: &[u8]) -> Result<(), String> {
    let mut reader = ChainReader::new(Cursor::new(data));
    let lines: Vec<Line<Value>> = reader.by_ref().collect();
    assert!(reader.error.is_none(), "reading from memory failed");
    let keys = pinned();
    let (lenient, strict_report) = verify_both(&lines, &keys);
    // The byte path (`verify_reader`: canonical lines hashed without parsing, in parallel)
    // reports exactly what the parsed path does, torn final line included.
    for (opts, parsed) in [(VerifyOptions::default(), &lenient), (strict(&keys), &strict_report)] {
        let progress = std::sync::atomic::AtomicU64::new(0);
        let bytes = chain::verify_reader(Cursor::new(data), opts, &progress).expect("reading from memory");
        let expected = VerifyReport { torn_tail: reader.torn_tail, ..parsed.clone() };
        assert_eq!(bytes, expected, "the byte path and the parsed path disagree");
    }
    if !lenient.is_valid() {
        return Err(lenient.first().map(ToString::to_string).unwrap_or_default());
    }
    let records: Vec<Value> = lines
        .into_iter()
        .map(|l| match l {
            Line::Record(v) => v,
            Line::Unparsable(m) => panic!("a valid chain has an unparsable line: {m}"),
        })
        .collect();
    for write in [|v: &Value| serde_json::to_vec(v).unwrap(), to_canonical_vec] {
        let mut text = Vec::new();
        for r in &records {
            text.extend(write(r));
            text.push(b'\n');
        }
        let again: Vec<Line<Value>> = ChainReader::new(Cursor::new(&text)).collect();
        let (l2, s2) = verify_both(&again, &keys);
        assert!(l2.is_valid(), "a valid chain fails once written out again: {:?}", l2.findings);
        assert_eq!(l2.root_hash, lenient.root_hash);
        assert_eq!(s2, strict_report, "strict verification changed when the chain was written out again");
    }
    let env = chain::export(records, VerifyOptions::default(), NOW);
    assert_eq!(env["chain"]["verified"], json!(true));
    let report = chain::verify_export(&env, VerifyOptions::default());
    assert!(report.is_valid(), "the export of a valid chain does not verify: {:?}", report.findings);
    Ok(())
}

/// An `opentrustgraph-chain/v0` export: `chain::verify_export`. Verification reads the envelope
/// from its canonical bytes the same way; a valid envelope's records re-export valid.
pub fn chain_export(data: &[u8]) -> Result<(), String> {
    let envelope = parse_strict(data).map_err(|e| e.to_string())?;
    let keys = pinned();
    let lenient = chain::verify_export(&envelope, VerifyOptions::default());
    let strict = chain::verify_export(&envelope, strict(&keys));
    let again = parse_strict(&to_canonical_vec(&envelope)).expect("canonical envelope parses");
    assert_eq!(chain::verify_export(&again, VerifyOptions::default()), lenient);
    if strict.is_valid() {
        assert!(lenient.is_valid(), "strictly valid but leniently invalid: {:?}", lenient.findings);
    }
    if !lenient.is_valid() {
        return Err(lenient.first().map(ToString::to_string).unwrap_or_default());
    }
    let records = envelope["records"].as_array().cloned().expect("a valid export has records");
    let env = chain::export(records, VerifyOptions::default(), NOW);
    let report = chain::verify_export(&env, VerifyOptions::default());
    assert!(report.is_valid(), "re-export of a valid export does not verify: {:?}", report.findings);
    assert_eq!(report.root_hash, lenient.root_hash);
    Ok(())
}

/// Policies: `policy.toml` (`PolicySet::from_toml`, then the gate over every class), the trust
/// ladder's JSON policy (`ladder::Policy::from_json`, gated and hashed) and action contract
/// (`ladder::ActionContract::from_json`), and reference-runtime custom class policies
/// (`PolicySet::with_custom`). The gate never allows what it marks as needing approval or
/// blocks.
pub fn policy(data: &[u8]) -> Result<(), String> {
    let mut first_error = None;
    match text(data).and_then(|t| PolicySet::from_toml(t).map_err(|e| e.to_string())) {
        Ok(set) => exercise_policies(&set),
        Err(e) => first_error = Some(e),
    }
    let Ok(value) = parse_strict(data) else {
        return first_error.map_or(Ok(()), Err);
    };
    let contract = warrant::protocol::ladder::ActionContract::from_json(&json!({
        "required_level": 3, "blast_radius": "project", "reversibility": "reversible",
        "scope": {"level": "repo", "identifier": "acme/crm"}, "data_sensitivity": "private", "preconditions": []
    }));
    assert!(contract.is_ok(), "the harness's contract is valid");
    match warrant::protocol::ladder::Policy::from_json(&value) {
        Ok(policy) => {
            let hash = warrant::protocol::ladder::policy_hash(&policy);
            assert_eq!(hash.len(), 64);
            if let Ok(c) = &contract {
                let _ = warrant::protocol::ladder::gate(&policy, "fs.write_file", c).to_json();
            }
        }
        Err(e) => first_error = first_error.or(Some(e.to_string())),
    }
    if let Ok(c) = warrant::protocol::ladder::ActionContract::from_json(&value) {
        for n in 0..=3 {
            let policy = warrant::protocol::ladder::auto_approve_policy(n, "fuzz").expect("ceilings 0..=3 are valid");
            let _ = warrant::protocol::ladder::gate(&policy, "fs.write_file", &c).to_json();
        }
    }
    let custom = match &value {
        Value::Array(items) => items.clone(),
        other => vec![other.clone()],
    };
    if let Ok(set) = PolicySet::builtin().with_custom(&custom) {
        exercise_policies(&set);
    }
    first_error.map_or(Ok(()), Err)
}

fn exercise_policies(set: &PolicySet) {
    let _ = warrant::protocol::graduation::discovery_document(set);
    let classes: Vec<String> = set.classes().map(|c| c.id.clone()).chain(["widget.thing".to_owned()]).collect();
    for id in &classes {
        let _ = set.threshold(id);
        let _ = set.policy(id).to_json();
        let context = json!({"requestedAction": {"to": "x@example.com"}});
        let req = GateRequest {
            action_class: id,
            context: &context,
            approval: None,
            evidence: &warrant::protocol::graduation::EvidenceIndex::default(),
            workspace: "fuzz",
            now: time::macros::datetime!(2026-11-21 09:00 UTC),
            agent: AgentStanding::Active,
            chain_intact: true,
        };
        let d = can_execute(set, &req);
        let allows = matches!(d.status, DecisionState::Allowed | DecisionState::AllowedWithConstraints);
        assert!(allows || !d.allowed, "allowed with status {}", d.status);
        let _ = d.to_json();
    }
    for score in [0.0, 0.5, 1.0] {
        let eff = set.effective_score("agent", score);
        assert!((0.0..=score).contains(&eff), "effective score {eff} outside [0, {score}]");
    }
    assert!(set.ladder_ceiling <= 3);
}

/// `config.toml`: `config::Config::parse`.
pub fn config(data: &[u8]) -> Result<(), String> {
    let config = warrant::store::config::Config::parse(text(data)?).map_err(|e| e.to_string())?;
    let _ = config.principal_name();
    Ok(())
}

/// A theme file: `console::theme::Theme::parse`, alone and over the default theme. A theme that
/// parses defines every role.
#[cfg(feature = "console")]
pub fn theme(data: &[u8]) -> Result<(), String> {
    use warrant::console::theme::{ROLES, Theme};
    let text = text(data)?;
    static BASE: std::sync::OnceLock<Theme> = std::sync::OnceLock::new();
    let base = BASE.get_or_init(|| Theme::builtin("default").expect("the default theme parses"));
    let over = Theme::parse(text, Some(base));
    let alone = Theme::parse(text, None);
    if let Ok(t) = &alone {
        assert_eq!(over.as_ref().ok(), Some(t), "a complete theme reads differently over a base");
    }
    let theme = over?;
    for role in ROLES {
        let _ = theme.get(role);
    }
    Ok(())
}

/// A keymap file: `console::keymap::Keymap::parse` over the default map, and `Key::parse` on
/// each line. In a keymap that parses, every key of a binding looks up that binding's command.
#[cfg(feature = "console")]
pub fn keymap(data: &[u8]) -> Result<(), String> {
    use warrant::console::keymap::{Key, Keymap, MODES};
    let text = text(data)?;
    for line in text.lines().take(64) {
        if let Ok(k) = Key::parse(line) {
            assert!(!k.label().is_empty());
        }
    }
    static BASE: std::sync::OnceLock<Keymap> = std::sync::OnceLock::new();
    let base = BASE.get_or_init(Keymap::default_map);
    let _ = Keymap::parse(text, None);
    let km = Keymap::parse(text, Some(base))?;
    for mode in MODES {
        for b in km.bindings(mode) {
            for k in &b.keys {
                assert_eq!(km.command(mode, k), Some(b.command.as_str()), "[{mode}] {} ", k.label());
                let _ = km.first_key(mode, &b.command);
            }
        }
    }
    Ok(())
}

/// A `warrant eval` session: `eval::run` over the bytes as request lines. Exactly one response
/// line per non-blank request line, each a JSON object; an error response carries only `error`
/// (a non-empty `code` and a `message`) and the request's `id`, never a decision; a response
/// echoes the request's `id`.
pub fn eval(data: &[u8]) -> Result<(), String> {
    let evaluator = warrant::eval::Evaluator::new(PolicySet::builtin());
    let mut out = Vec::new();
    warrant::eval::run(&evaluator, data, &mut out).expect("writing to memory cannot fail");
    // `run` answers a panicking line with `internal_error`: for the fuzzer that is still a crash.
    assert_eq!(evaluator.internal_errors(), 0, "a line panicked (see stderr)");
    let requests: Vec<&[u8]> = data.split(|&b| b == b'\n').map(<[u8]>::trim_ascii).filter(|l| !l.is_empty()).collect();
    let text = std::str::from_utf8(&out).expect("responses are UTF-8");
    assert!(out.is_empty() || out.ends_with(b"\n"), "the last response is not a whole line");
    let responses: Vec<&str> = text.lines().collect();
    assert_eq!(responses.len(), requests.len(), "one response line per request line");
    // The typed fast path of `respond` answers exactly what the general path does, but for
    // what is fresh in every decision: its time stamps (the clock, when the request has no
    // `now`) and its action binding's nonce, expiry and the hash over them.
    let untimed = |v: Value| match v {
        Value::Object(mut m) => {
            m.remove("created_at");
            m.remove("decision_id");
            if let Some(Value::Object(binding)) = m.get_mut("action_binding") {
                for fresh in ["nonce", "expiresAt", "actionHash"] {
                    binding.remove(fresh);
                }
            }
            Value::Object(m)
        }
        other => other,
    };
    // `tg.can_execute` is stateless (the only op with a fast path); other ops may change the
    // session (rate limits), so they are not replayed.
    let replay = warrant::eval::Evaluator::new(PolicySet::builtin());
    for (request, line) in requests.iter().zip(&responses) {
        let gate_op =
            matches!(parse_strict(request), Ok(Value::Object(r)) if r.get("op") == Some(&json!("tg.can_execute")));
        if !gate_op {
            continue;
        }
        let general = untimed(replay.handle_line(request));
        let fast = untimed(parse_strict(line.as_bytes()).expect("a response is JSON"));
        assert_eq!(fast, general, "respond and handle_line disagree on {}", String::from_utf8_lossy(request));
    }
    let mut errors = Vec::new();
    for (request, line) in requests.iter().zip(&responses) {
        let response: Map<String, Value> = match parse_strict(line.as_bytes()) {
            Ok(Value::Object(m)) => m,
            other => panic!("response is not a JSON object: {other:?}"),
        };
        let id = match parse_strict(request) {
            // A line refused for an integer outside 64 bits echoes its id unless it is fractional
            // (it may be that integer, approximated).
            Ok(Value::Object(r)) if warrant::protocol::canonical::parse_untrusted(request).is_err() => {
                r.get("id").filter(|id| !id.as_number().is_some_and(serde_json::Number::is_f64)).cloned()
            }
            Ok(Value::Object(r)) => r.get("id").cloned(),
            _ => None,
        };
        assert_eq!(response.get("id"), id.as_ref(), "the response does not echo the request's id");
        if let Some(error) = response.get("error") {
            assert!(response.keys().all(|k| k == "error" || k == "id"), "error response with more: {line}");
            let code = error.get("code").and_then(Value::as_str).unwrap_or_default();
            assert!(!code.is_empty() && error.get("message").is_some_and(Value::is_string), "bad error: {line}");
            errors.push(format!("{code}: {}", error["message"].as_str().unwrap_or_default()));
        } else if response.get("allowed") == Some(&Value::Bool(true))
            && let Some(status) = response.get("status").and_then(Value::as_str).and_then(DecisionState::parse)
        {
            let allows = matches!(status, DecisionState::Allowed | DecisionState::AllowedWithConstraints);
            assert!(allows, "allowed with status {status}: {line}");
        }
    }
    if errors.is_empty() { Ok(()) } else { Err(errors.join("; ")) }
}
