//! Inputs the fuzzers found (`docs/fuzzing.md`), replayed through the fuzz harness
//! (`tests/fuzz_harness/mod.rs`, the same code the targets in `fuzz/` run): none may panic or
//! break a harness property, and each is accepted or refused with a message.
//!
//! Every file in `tests/fuzz_regressions/<target>/` is replayed through `<target>`; the tests
//! below also pin the outcome of each crash that was fixed.

#[path = "fuzz_harness/mod.rs"]
mod harness;

use serde_json::json;
use std::path::{Path, PathBuf};
use warrant::protocol::graduation::evidence::EvidenceRow;
use warrant::protocol::graduation::receipt::receipt_evidence;

type Target = fn(&[u8]) -> Result<(), String>;

fn targets() -> Vec<(&'static str, Target)> {
    #[cfg_attr(not(feature = "console"), allow(unused_mut))]
    let mut t: Vec<(&'static str, Target)> = vec![
        ("packet", harness::packet),
        ("receipt", harness::receipt),
        ("record", harness::record),
        ("chain_export", harness::chain_export),
        ("policy", harness::policy),
        ("config", harness::config),
        ("eval", harness::eval),
        ("canonical", harness::canonical),
    ];
    #[cfg(feature = "console")]
    t.extend([("theme", harness::theme as Target), ("keymap", harness::keymap as Target)]);
    t
}

fn regression_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_regressions")
}

fn inputs(target: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(regression_dir().join(target))
        .map(|rd| rd.filter_map(Result::ok).map(|e| e.path()).filter(|p| p.is_file()).collect())
        .unwrap_or_default();
    files.sort();
    files
}

fn read(target: &str, name: &str) -> Vec<u8> {
    std::fs::read(regression_dir().join(target).join(name)).expect("regression input")
}

fn replay(target: &str, name: &str) -> Result<(), String> {
    let f = targets().into_iter().find(|(t, _)| *t == target).map(|(_, f)| f).expect("a known target");
    f(&read(target, name))
}

// Every kept input, through its target: no panic, and a refusal always says why.
#[test]
fn every_kept_input_replays_without_panic() {
    let mut replayed = 0;
    for (target, f) in targets() {
        for path in inputs(target) {
            let bytes = std::fs::read(&path).expect("regression input");
            if let Err(message) = f(&bytes) {
                assert!(!message.trim().is_empty(), "{}: refused without a message", path.display());
            }
            replayed += 1;
        }
    }
    assert!(replayed > 0, "no regression inputs found under {}", regression_dir().display());
}

// The regression directories hold only targets the harness knows (a misnamed one would never run).
#[test]
fn regression_directories_name_targets() {
    let known =
        ["packet", "receipt", "record", "chain_export", "policy", "config", "theme", "keymap", "eval", "canonical"];
    for entry in std::fs::read_dir(regression_dir()).expect("tests/fuzz_regressions exists") {
        let name = entry.expect("entry").file_name().to_string_lossy().into_owned();
        assert!(known.contains(&name.as_str()), "unknown fuzz target directory {name:?}");
    }
}

// The harness's properties hold on ordinary inputs, and its refusals carry the parser's reason.
#[test]
fn harness_accepts_real_inputs_and_explains_refusals() {
    let packet = warrant::protocol::packet::portable_packet(
        "q-1",
        "email.send.external",
        "agent-scribe",
        "Quote",
        json!({"to": "dana@example.com"}),
        harness::NOW,
    );
    harness::packet(&serde_json::to_vec(&packet).expect("json")).expect("a published packet is accepted");
    let err = harness::packet(b"[1]").expect_err("an array is not a packet");
    assert!(err.contains("not a JSON object"), "{err}");
    let err = harness::eval(b"{\"op\":\"tg.nope\",\"id\":7}\n\n[]\n").expect_err("errors are reported");
    assert!(err.contains("unknown_op") && err.contains("invalid_request"), "{err}");
    let err = harness::config(b"colour = 1").expect_err("unknown key");
    assert!(err.contains("unknown field"), "{err}");
    harness::canonical(br#"{"b":[1.5,-0,1e300,"\u0001"],"a":{}}"#).expect("canonical round trip");
    assert!(harness::record(b"").is_ok(), "an empty chain verifies");
}

// receipt/empty-class: `receipt_evidence` made a row with an empty action class from a receipt
// with `"action_class": ""`, a row `EvidenceRow::from_json` (and the evidence-row schema) refuses.
// Fixed: a receipt whose class is not an action class stands for no evidence.
#[test]
fn receipt_without_an_action_class_is_no_evidence() {
    let err = replay("receipt", "empty-class").expect_err("not a receipt");
    assert!(err.contains("unknown form"), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&read("receipt", "empty-class")).expect("json");
    assert_eq!(receipt_evidence(&v, None), None);
    assert_eq!(receipt_evidence(&json!({"actionClass": "Not A Class", "outcome": "approve"}), None), None);
}

// receipt/bad-created-at: a receipt with `"created_at": "202-12-161T09:00:00Z"` gave a row whose
// `recorded_at` was that text, which `EvidenceRow::from_json` refuses. Fixed: `recorded_at` is kept
// only when it is RFC 3339. `parse_receipt` refuses the file itself, naming the field.
#[test]
fn receipt_with_a_bad_created_at_has_no_recorded_at() {
    let err = replay("receipt", "bad-created-at").expect_err("refused");
    assert!(err.contains("created_at") && err.contains("RFC 3339"), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&read("receipt", "bad-created-at")).expect("json");
    let row = receipt_evidence(&v, None).expect("a row");
    assert_eq!((row.action_class.as_str(), row.recorded_at.as_deref()), ("email.send.external", None));
    EvidenceRow::from_json(&row.to_json("2026-11-21")).expect("the row reads back");
    let good =
        receipt_evidence(&json!({"action_class": "a.b", "outcome": "approve", "created_at": harness::NOW}), None);
    assert_eq!(good.and_then(|r| r.recorded_at).as_deref(), Some(harness::NOW));
}
