//! Property tests: any single-byte change, deleted line or reordering of `chain.jsonl` is
//! detected (and located), and a decision signature never verifies for another packet or the
//! other verdict.

use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::Value;
use std::path::Path;
use warrant::protocol::chain::{self, Check, VerifyOptions, VerifyReport};
use warrant::protocol::decision::{self, DecisionError, DecisionInput, Verdict};
use warrant::protocol::graduation::SourceType;
use warrant::protocol::graduation::receipt::{ReceiptInput, ReceiptOutcome, build_receipt};
use warrant::protocol::keys::{PinnedKeys, Principal};
use warrant::protocol::registry::CANONICAL;
use warrant::store::chain_file;

fn principal() -> Principal {
    Principal::from_seed("alice", &[1u8; 32])
}

fn pins() -> PinnedKeys {
    let mut p = PinnedKeys::default();
    p.pin("alice", principal().verifying_key());
    p
}

/// Random content of one signed decision record.
#[derive(Debug, Clone)]
struct Spec {
    agent: String,
    reason: Option<String>,
    approve: bool,
    class: usize,
    packet_hash: [u8; 32],
    /// A receipt record (unsigned, checked from its bytes) instead of a signed decision.
    receipt: bool,
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        "[a-z][a-z0-9-]{0,12}",
        // Any characters, including controls, quotes, backslashes, newlines and astral ones.
        proptest::option::of("(?s).{0,24}"),
        any::<bool>(),
        0..CANONICAL.len(),
        any::<[u8; 32]>(),
        any::<bool>(),
    )
        .prop_map(|(agent, reason, approve, class, packet_hash, receipt)| Spec {
            agent,
            reason,
            approve,
            class,
            packet_hash,
            receipt,
        })
}

/// Appends one signed decision record per spec to `path` with `chain_file::append`.
fn build_chain(path: &Path, specs: &[Spec]) {
    let p = principal();
    for (i, s) in specs.iter().enumerate() {
        let id = format!("p-{i}");
        let hash = format!("sha256:{}", warrant::protocol::canonical::hex(&s.packet_hash));
        let trace = format!("warrant:{id}");
        let at = format!("2026-11-21T09:{:02}:{:02}.{}Z", i / 60, i % 60, i % 9 + 1);
        let input = DecisionInput {
            stands_in_for: &[],
            packet_id: &id,
            packet_hash: &hash,
            action_class: CANONICAL[s.class].id,
            agent: &s.agent,
            trace_id: &trace,
            verdict: if s.approve { Verdict::Approve } else { Verdict::Refuse },
            reason: s.reason.as_deref(),
            decided_at: &at,
        };
        if s.receipt {
            let receipt = build_receipt(&ReceiptInput {
                receipt_id: &format!("r-{i}"),
                action_class: CANONICAL[s.class].id,
                outcome: if s.approve { ReceiptOutcome::Execute } else { ReceiptOutcome::Correct },
                agent: &s.agent,
                packet_id: None,
                source_type: Some(SourceType::Receipt),
                created_at: &at,
                prev_hash: None,
                note: s.reason.as_deref(),
                tool_call: None,
            });
            let mut meta = serde_json::Map::new();
            meta.insert("tg_receipt".into(), receipt);
            let body =
                chain::new_record_body(&s.agent, CANONICAL[s.class].id, None, "success", &trace, "suggest", &at, meta);
            chain_file::append(path, |_| Ok(body)).expect("append");
            continue;
        }
        let signed = decision::sign_decision(&p, &input);
        chain_file::append(path, |_| Ok(decision::record_body(&input, &signed))).expect("append");
    }
}

use crate::lines as support_lines;
use support_lines::line_spans;

/// Verifies `bytes` as a chain file both ways: parsed record by record (`read_chain`, the path
/// exports take) and by the parallel reader that hashes canonical lines from their bytes
/// (`verify_file`, the path `warrant verify` and the console take). The two must agree exactly.
fn verify_bytes(dir: &Path, bytes: &[u8], pinned: Option<&PinnedKeys>) -> VerifyReport {
    let path = dir.join("mutated.jsonl");
    std::fs::write(&path, bytes).expect("write");
    let opts = VerifyOptions { pinned, strict_signatures: true };
    let parsed = chain_file::read_chain(&path).expect("read").verify(opts);
    let fast = chain_file::verify_file(&path, opts).expect("verify_file");
    assert_eq!(parsed, fast, "the parsed and the byte-level verification disagree");
    parsed
}

fn show(r: &VerifyReport) -> String {
    r.findings.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n")
}

/// A fresh chain of signed decisions: its directory, bytes, and line spans; checked to verify clean.
fn fresh_chain(specs: &[Spec]) -> (tempfile::TempDir, Vec<u8>, Vec<(usize, usize)>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("chain.jsonl");
    build_chain(&path, specs);
    let bytes = std::fs::read(&path).expect("read");
    let spans = line_spans(&bytes);
    assert_eq!(spans.len(), specs.len());
    let pinned = pins();
    let report = verify_bytes(dir.path(), &bytes, Some(&pinned));
    assert!(report.is_valid(), "fresh chain must verify:\n{}", show(&report));
    assert_eq!(report.signatures_verified, specs.iter().filter(|s| !s.receipt).count());
    (dir, bytes, spans)
}

fn lines_of(bytes: &[u8], spans: &[(usize, usize)]) -> Vec<Vec<u8>> {
    spans.iter().map(|&(s, e)| bytes[s..e].to_vec()).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    // (a) Any single-byte change to any line is detected, and the first finding names the changed line.
    #[test]
    fn single_byte_change_is_detected(
        specs in proptest::collection::vec(spec(), 2..12),
        line in any::<Index>(),
        offset in any::<Index>(),
        delta in 1..=255u8,
    ) {
        let (dir, bytes, spans) = fresh_chain(&specs);
        let line = line.index(spans.len());
        let (start, end) = spans[line];
        let at = start + offset.index(end - start);
        let mut mutated = bytes.clone();
        mutated[at] = bytes[at].wrapping_add(delta);
        prop_assert_ne!(mutated[at], bytes[at]);

        let pinned = pins();
        // The file's last newline changed: the last line is now a torn append (docs/spool.md),
        // reported as such, whole, and never counted as a record. (Cutting it off is caught by the
        // principal's checkpoint: tests/durability.rs.)
        if at == bytes.len() - 1 {
            for opts in [None, Some(&pinned)] {
                let report = verify_bytes(dir.path(), &mutated, opts);
                prop_assert_eq!(report.torn_tail, Some((end - start) as u64));
                prop_assert_eq!(report.total, line);
            }
            return Ok(());
        }
        for opts in [None, Some(&pinned)] {
            let report = verify_bytes(dir.path(), &mutated, opts);
            prop_assert!(!report.is_valid(), "undetected change at line {} byte {}", line, at - start);
            prop_assert_eq!(report.first().and_then(|f| f.index), Some(line), "{}", show(&report));
        }

        // When the changed line (up to its newline) still parses as JSON, the findings are about
        // that record (and, for a changed entry_hash, the next record's link), not parse errors.
        let changed = &mutated[start..end - 1];
        if mutated[at] != b'\n' && at != end - 1 && serde_json::from_slice::<Value>(changed).is_ok() {
            let report = verify_bytes(dir.path(), &mutated, None);
            let at_line: Vec<_> = report.findings.iter().filter(|f| f.index == Some(line)).collect();
            prop_assert!(!at_line.is_empty(), "{}", show(&report));
            prop_assert!(report.findings.iter().all(|f| f.check != Check::Parse), "{}", show(&report));
            prop_assert!(
                report.findings.iter().all(|f| f.index == Some(line) || f.index == Some(line + 1)),
                "{}", show(&report)
            );
        }
    }

    // (b) Deleting any line but the last, swapping any two lines, or duplicating a line is detected at the first affected line.
    #[test]
    fn deleting_swapping_or_duplicating_lines_is_detected(
        specs in proptest::collection::vec(spec(), 2..12),
        a in any::<Index>(),
        b in any::<Index>(),
    ) {
        let (dir, bytes, spans) = fresh_chain(&specs);
        let lines = lines_of(&bytes, &spans);
        let n = lines.len();
        let original = verify_bytes(dir.path(), &bytes, None);

        // Delete line i.
        let i = a.index(n);
        let mut deleted = lines.clone();
        deleted.remove(i);
        let report = verify_bytes(dir.path(), &deleted.concat(), None);
        if i + 1 < n {
            prop_assert!(!report.is_valid(), "deleting line {} of {} went unnoticed", i, n);
            prop_assert_eq!(report.first().and_then(|f| f.index), Some(i), "{}", show(&report));
        } else {
            // Truncating the tail leaves a valid shorter chain: only a known root detects it.
            prop_assert!(report.is_valid(), "{}", show(&report));
            prop_assert_ne!(&report.root_hash, &original.root_hash);
            prop_assert_eq!(report.total, n - 1);
        }

        // Swap lines i < j.
        let (mut i, mut j) = (a.index(n), b.index(n));
        if i == j {
            j = (i + 1) % n;
        }
        if i > j {
            std::mem::swap(&mut i, &mut j);
        }
        let mut swapped = lines.clone();
        swapped.swap(i, j);
        let report = verify_bytes(dir.path(), &swapped.concat(), None);
        prop_assert!(!report.is_valid(), "swapping lines {} and {} went unnoticed", i, j);
        prop_assert_eq!(report.first().and_then(|f| f.index), Some(i), "{}", show(&report));
        prop_assert!(report.findings.iter().any(|f| f.index == Some(i) && f.check == Check::ChainIndex));

        // Duplicate line i (a replayed record).
        let i = a.index(n);
        let mut duplicated = lines.clone();
        duplicated.insert(i + 1, lines[i].clone());
        let report = verify_bytes(dir.path(), &duplicated.concat(), None);
        prop_assert!(!report.is_valid(), "duplicating line {} went unnoticed", i);
        prop_assert_eq!(report.first().and_then(|f| f.index), Some(i + 1), "{}", show(&report));
    }
}

/// A decision to sign, with a different packet to try it on.
#[derive(Debug, Clone)]
struct Case {
    id: String,
    other_id: String,
    hash: [u8; 32],
    other_hash: [u8; 32],
    approve: bool,
    reason: Option<String>,
    class: usize,
}

fn case() -> impl Strategy<Value = Case> {
    (
        "[A-Za-z0-9_:-][A-Za-z0-9._:-]{0,20}",
        "[A-Za-z0-9_:-][A-Za-z0-9._:-]{0,20}",
        any::<[u8; 32]>(),
        any::<[u8; 32]>(),
        any::<bool>(),
        proptest::option::of("(?s).{0,24}"),
        0..CANONICAL.len(),
    )
        .prop_filter("a different packet", |(id, other, h, oh, ..)| id != other && h != oh)
        .prop_map(|(id, other_id, hash, other_hash, approve, reason, class)| Case {
            id,
            other_id,
            hash,
            other_hash,
            approve,
            reason,
            class,
        })
}

fn prefixed(h: &[u8; 32]) -> String {
    format!("sha256:{}", warrant::protocol::canonical::hex(h))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    // (c) A decision signature verifies for its own document only: never for another packet id, another packet hash, or the flipped verdict.
    #[test]
    fn signature_does_not_transfer(c in case()) {
        let p = principal();
        let pinned = pins();
        let hash = prefixed(&c.hash);
        let other_hash = prefixed(&c.other_hash);
        let verdict = if c.approve { Verdict::Approve } else { Verdict::Refuse };
        let flipped = if c.approve { Verdict::Refuse } else { Verdict::Approve };
        let input = DecisionInput { stands_in_for: &[],
            packet_id: &c.id,
            packet_hash: &hash,
            action_class: CANONICAL[c.class].id,
            agent: "scribe",
            trace_id: "t",
            verdict,
            reason: c.reason.as_deref(),
            decided_at: "2026-11-21T09:00:00Z",
        };
        let signed = decision::sign_decision(&p, &input);
        prop_assert!(decision::verify_document(&signed.document, &signed.signature, &pinned).is_ok());

        let fp = p.fingerprint();
        let variants = [
            DecisionInput { packet_id: &c.other_id, ..input.clone() },
            DecisionInput { packet_hash: &other_hash, ..input.clone() },
            DecisionInput { verdict: flipped, ..input.clone() },
        ];
        for v in &variants {
            let doc = decision::decision_document(v, "alice", &fp);
            prop_assert_ne!(decision::payload_hash(&doc), decision::payload_hash(&signed.document));
            let err = decision::verify_document(&doc, &signed.signature, &pinned);
            prop_assert!(err.is_err(), "signature transferred to {:?}", v);
            // Even with the payload_hash field rewritten to match, Ed25519 refuses.
            let mut sig = signed.signature.clone();
            sig["payload_hash"] = Value::String(decision::payload_hash(&doc));
            prop_assert!(decision::verify_document(&doc, &sig, &pinned).is_err());
        }

        // The decision file: verifies for its packet, refuses another id or changed content, and
        // refuses a file whose document was rewritten for another packet or verdict.
        let appended = chain::Appended { chain_index: 1, entry_hash: prefixed(&[0xab; 32]), record: Value::Null };
        let file = decision::decision_file(&signed, &appended);
        let ok = decision::verify_decision_file(&file, &c.id, Some(&hash), &pinned);
        prop_assert!(ok.as_ref().is_ok_and(|d| d.verdict == verdict), "{:?}", ok);
        prop_assert!(
            matches!(decision::verify_decision_file(&file, &c.other_id, Some(&hash), &pinned), Err(DecisionError::WrongPacket { .. })),
            "replayed onto another packet id"
        );
        prop_assert!(
            matches!(decision::verify_decision_file(&file, &c.id, Some(&other_hash), &pinned), Err(DecisionError::PacketChanged { .. })),
            "accepted for changed packet content"
        );
        for v in &variants {
            let doc = decision::decision_document(v, "alice", &fp);
            let mut forged = file.clone();
            forged["document"] = doc.clone();
            forged["packet_id"] = doc["packet_id"].clone();
            forged["decision"] = doc["decision"].clone();
            let res = decision::verify_decision_file(&forged, v.packet_id, Some(v.packet_hash), &pinned);
            prop_assert!(matches!(res, Err(DecisionError::Signature(_))), "rewritten file accepted: {:?}", res);
        }
    }
}

/// Any JSON value: strings with controls, escapes and astral characters, integers across the
/// whole i64/u64 range, floats, nesting.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
        "(?s).{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::btree_map("(?s).{0,6}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4096, ..ProptestConfig::default() })]

    // The byte-level fast path is sound: the canonical text of any object is recognised and its
    // digest without `entry_hash` equals the parsed one; and any text it recognises (here,
    // canonical texts with one byte changed) is exactly the canonical form of what it parses to.
    #[test]
    fn canonical_scan_accepts_exactly_canonical_text(
        members in proptest::collection::btree_map("(?s).{0,8}", json_value(), 0..8),
        with_hash in any::<bool>(),
        at in any::<Index>(),
        delta in 1..=255u8,
    ) {
        use warrant::protocol::canonical::{self, scan};
        let mut map: serde_json::Map<String, Value> = members.into_iter().collect();
        if with_hash {
            map.insert("entry_hash".into(), Value::String(canonical::sha256_prefixed(b"x")));
        }
        let text = canonical::to_canonical_vec(&Value::Object(map.clone()));
        let mut s = scan::Scan::default();
        fn escaped_key(v: &Value) -> bool {
            match v {
                Value::Object(m) => m.iter().any(|(k, v)| k.chars().any(|c| c < ' ' || c == '"' || c == '\\') || escaped_key(v)),
                Value::Array(a) => a.iter().any(escaped_key),
                _ => false,
            }
        }
        let escaped_key = escaped_key(&Value::Object(map.clone()));
        let deep = text.iter().filter(|&&b| b == b'[' || b == b'{').count() > scan::MAX_DEPTH;
        if !escaped_key && !deep {
            prop_assert!(scan::scan_object(&text, &mut s), "{}", String::from_utf8_lossy(&text));
            let digest = match s.member(&text, "entry_hash") {
                Some((k, _)) => s.digest_without(&text, k),
                None => canonical::canonical_digest(&Value::Object(map.clone())),
            };
            prop_assert_eq!(digest, canonical::canonical_digest_without(&map, "entry_hash"));
        }
        let mut mutated = text.clone();
        let i = at.index(mutated.len());
        mutated[i] = mutated[i].wrapping_add(delta);
        if scan::scan_object(&mutated, &mut s) {
            let parsed = canonical::parse_strict(&mutated);
            prop_assert!(parsed.is_ok(), "accepted text that does not parse: {}", String::from_utf8_lossy(&mutated));
            let again = canonical::to_canonical_vec(&parsed.unwrap_or_default());
            prop_assert_eq!(again, mutated);
        }
    }
}
