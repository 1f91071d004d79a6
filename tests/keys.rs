//! The principal's key and name: `warrant keys rotate` and `warrant keys rename`
//! announce a new key or name in the chain, signed with the key verifiers already trust; earlier
//! records keep verifying, later ones verify for an auditor who pinned only the old key, and an
//! auditor without any pin is told which key to pin instead of "verification failed".
//!
//! The flows run the real binary with keys made by `warrant keys init --no-passphrase`; the
//! adversarial chains (records out of order, forged announcements) are built with the library's
//! own signing and appending, from real Ed25519 keys, and verified by the binary.

use crate::cli_env;
use warrant::store::prelude::*;

use base64::Engine as _;
use cli_env::{BIN, Env, text};
use serde_json::Value;
use std::path::{Path, PathBuf};
use warrant::protocol::decision::{self, DecisionInput, Verdict};
use warrant::protocol::key_event::{self, KeyEvent};
use warrant::protocol::keys::Principal;
use warrant::store::chain_file;

const AT: &str = "2026-11-21T09:00:00Z";

/// The principal's current fingerprint, from `warrant keys show`.
fn fingerprint(e: &Env) -> String {
    let show = String::from_utf8_lossy(&e.run(&["keys"]).stdout).into_owned();
    show.lines().find_map(|l| l.strip_prefix("key        ")).expect("fingerprint line").trim().to_owned()
}

/// An auditor's configuration directory pinning `pems` (principal, public key file) through
/// `warrant keys pin`.
fn auditor(e: &Env, name: &str, pems: &[(&str, &Path)]) -> PathBuf {
    let dir = e.dir.path().join(name);
    std::fs::create_dir_all(&dir).expect("auditor dir");
    for (principal, pem) in pems {
        let o = std::process::Command::new(BIN)
            .args(["keys", "pin", "--principal", principal, &pem.display().to_string()])
            .env("WARRANT_CONFIG", &dir)
            .output()
            .expect("pin");
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    }
    dir
}

/// `warrant verify --json PATH` with the auditor's pins: the exit code and the report.
fn verify_as(e: &Env, config: &Path, path: &Path) -> (Option<i32>, Value, String) {
    let o =
        e.cmd(&["verify", "--json", &path.display().to_string()]).env("WARRANT_CONFIG", config).output().expect("run");
    let report: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("json: {}", text(&o)));
    (o.status.code(), report, text(&o))
}

/// [`verify_as`] exits 0 with `signatures` signatures verified; `what` says why in a failure.
fn verifies(e: &Env, config: &Path, path: &Path, signatures: u64, what: &str) {
    let (code, report, out) = verify_as(e, config, path);
    assert_eq!(code, Some(0), "{what}: {out}");
    assert_eq!(report["signatures_verified"], signatures, "{what}: {out}");
}

fn export_pem(e: &Env, file: &str) -> PathBuf {
    let o = e.run(&["keys", "export"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let path = e.dir.path().join(file);
    std::fs::write(&path, &o.stdout).expect("pem");
    path
}

fn approve(e: &Env, id: &str) {
    e.propose("draft.compose", "scribe", id, &[]);
    let o = e.run(&["approve", "--yes", id]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

// Rotation: the new key signs, `warrant verify` passes for the principal, and for an auditor who
// pinned only the old key (the rotation record, signed by the old key, vouches for the new one);
// the old key file is kept aside, private.
#[test]
fn rotate_then_approve_verifies_for_the_principal_and_an_auditor_of_the_old_key() {
    let e = Env::new();
    approve(&e, "p1");
    let old_pem = export_pem(&e, "old.pub");
    let old_fp = fingerprint(&e);
    let o = e.run(&["keys", "rotate", "--no-passphrase"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let new_fp = fingerprint(&e);
    assert_ne!(old_fp, new_fp, "rotate makes a new key");
    let retired: Vec<_> = std::fs::read_dir(e.config())
        .expect("config")
        .filter_map(Result::ok)
        .filter(|d| d.file_name().to_string_lossy().ends_with(".retired"))
        .collect();
    assert_eq!(retired.len(), 1, "the old key is kept aside");
    let mode = std::os::unix::fs::PermissionsExt::mode(&retired[0].metadata().expect("meta").permissions());
    assert_eq!(mode & 0o777, 0o600);
    // The retired file is the old key.
    let kept = Principal::load(&retired[0].path(), "alice").expect("load retired");
    assert_eq!(kept.fingerprint(), old_fp);
    approve(&e, "p2");
    let chain_path = e.spool().join("chain.jsonl");
    verifies(&e, &e.config(), &chain_path, 3, "verify");
    let aud = auditor(&e, "auditor", &[("alice", &old_pem)]);
    verifies(&e, &aud, &chain_path, 3, "the old key's pin vouches for the new key through the chain");
    // Both keys stay pinned for the principal.
    let show = String::from_utf8_lossy(&e.run(&["keys"]).stdout).into_owned();
    assert!(show.contains(&old_fp) && show.contains(&new_fp), "{show}");
    // An export verifies the same way for the auditor.
    let export = e.run(&["export"]);
    assert_eq!(export.status.code(), Some(0), "{}", text(&export));
    let export_path = e.dir.path().join("export.json");
    std::fs::write(&export_path, &export.stdout).expect("export");
    verifies(&e, &aud, &export_path, 3, "verify");
}

// Nothing is rotated onto a broken chain: the key, the pins and the config directory stay as
// they were. A rename to the name the key already has is refused.
#[test]
fn rotate_refuses_a_broken_chain_and_rename_an_unchanged_name() {
    let e = Env::new();
    approve(&e, "p1");
    let chain_path = e.spool().join("chain.jsonl");
    let mut bytes = std::fs::read(&chain_path).expect("chain");
    let at = bytes.iter().position(|&b| b == b'p').expect("a letter to flip");
    bytes[at] = b'q';
    std::fs::write(&chain_path, &bytes).expect("tamper");
    let key = std::fs::read(e.config().join("principal.key")).expect("key");
    let pins = std::fs::read(e.config().join("pinned_keys.toml")).expect("pins");
    let o = e.run(&["keys", "rotate", "--no-passphrase"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("does not verify"), "{}", text(&o));
    assert_eq!(std::fs::read(e.config().join("principal.key")).expect("key"), key);
    assert_eq!(std::fs::read(e.config().join("pinned_keys.toml")).expect("pins"), pins);
    let names: Vec<String> = std::fs::read_dir(e.config())
        .expect("config")
        .filter_map(Result::ok)
        .map(|d| d.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("principal.key."))
        .collect();
    assert!(names.is_empty(), "no new or retired key left behind: {names:?}");
    let o = e.run(&["keys", "rename", "alice"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
}

// A protected key stays protected across a rotation: with WARRANT_PASSPHRASE_FILE the new key is
// an age file, and signing with it needs the passphrase.
#[test]
fn rotate_protects_the_new_key_with_the_passphrase() {
    let e = Env::without_key();
    let pass = e.dir.path().join("pass");
    std::fs::write(&pass, "correct horse\n").expect("pass");
    let o = e.cmd(&["keys", "init"]).env("WARRANT_PASSPHRASE_FILE", &pass).output().expect("init");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    e.propose("draft.compose", "scribe", "p1", &[]);
    let o = e.cmd(&["keys", "rotate"]).env("WARRANT_PASSPHRASE_FILE", &pass).output().expect("rotate");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let key = std::fs::read_to_string(e.config().join("principal.key")).expect("key");
    assert!(key.starts_with("-----BEGIN AGE ENCRYPTED FILE-----"), "{key}");
    assert_eq!(e.run(&["approve", "--yes", "p1"]).status.code(), Some(2), "no passphrase, no signature");
    let o = e.cmd(&["approve", "--yes", "p1"]).env("WARRANT_PASSPHRASE_FILE", &pass).output().expect("approve");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // Without a passphrase source and without --no-passphrase, nothing is rotated.
    let before = std::fs::read(e.config().join("principal.key")).expect("key");
    let o = e.run(&["keys", "rotate"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert_eq!(std::fs::read(e.config().join("principal.key")).expect("key"), before);
}

/// A decision record for packet `id` signed by `p`, appended to the chain at `path`.
fn append_decision(path: &Path, p: &Principal, id: &str) {
    let hash = warrant::protocol::canonical::canonical_hash(&serde_json::json!({ "id": id }));
    let input = DecisionInput {
        stands_in_for: &[],
        packet_id: id,
        packet_hash: &hash,
        action_class: "draft.compose",
        agent: "scribe",
        trace_id: "t",
        verdict: Verdict::Approve,
        reason: None,
        decided_at: AT,
    };
    let signed = decision::sign_decision(p, &input);
    chain_file::append(path, |_| Ok(decision::record_body(&input, &signed))).expect("append decision");
}

fn append_event(path: &Path, event: &KeyEvent, current: &Principal, new: Option<&Principal>) {
    chain_file::append(path, |_| Ok(key_event::record_body(event, current, new, AT))).expect("append event");
}

fn pin_file(e: &Env, name: &str, p: &Principal) -> PathBuf {
    let path = e.dir.path().join(name);
    std::fs::write(&path, base64::engine::general_purpose::STANDARD.encode(p.verifying_key().as_bytes())).expect("pub");
    path
}

fn finding_checks(report: &Value) -> Vec<(u64, String)> {
    report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| (f["index"].as_u64().unwrap_or(u64::MAX), f["check"].as_str().unwrap_or_default().to_owned()))
        .collect()
}

// For an auditor who pinned only the old key: the new key is trusted only after the rotation
// record; the old key is retired by it; a rotation signed by an unpinned key (or whose new-key
// proof is forged) makes no key trusted.
#[test]
fn chain_trust_in_a_new_key_starts_at_a_verified_rotation_and_retires_the_old_key() {
    let e = Env::new();
    let old = Principal::from_seed("alice", &[1; 32]);
    let new = Principal::from_seed("alice", &[2; 32]);
    let aud = auditor(&e, "auditor", &[("alice", &pin_file(&e, "old.pub", &old))]);
    let path = e.dir.path().join("rotated.jsonl");
    append_decision(&path, &old, "a"); // 0: old key, fine
    append_decision(&path, &new, "b"); // 1: new key before its announcement
    let rotate = KeyEvent::Rotate { principal: "alice".into(), old: old.fingerprint(), new_key: new.verifying_key() };
    append_event(&path, &rotate, &old, Some(&new)); // 2: the rotation
    append_decision(&path, &new, "c"); // 3: new key, fine
    append_decision(&path, &old, "d"); // 4: the retired key
    let (code, report, out) = verify_as(&e, &aud, &path);
    assert_eq!(code, Some(1), "{out}");
    assert_eq!(finding_checks(&report), vec![(1, "unpinned_key".to_owned()), (4, "signature".to_owned())], "{out}");
    assert!(report["findings"][1]["message"].as_str().is_some_and(|m| m.contains("retired")), "{out}");
    assert_eq!(report["signatures_verified"], 3, "{out}");

    // A rotation announced by a key nobody pinned trusts nothing.
    let mallory = Principal::from_seed("alice", &[66; 32]);
    let mallory2 = Principal::from_seed("alice", &[67; 32]);
    let path = e.dir.path().join("forged.jsonl");
    append_decision(&path, &old, "a");
    let forged =
        KeyEvent::Rotate { principal: "alice".into(), old: mallory.fingerprint(), new_key: mallory2.verifying_key() };
    append_event(&path, &forged, &mallory, Some(&mallory2));
    append_decision(&path, &mallory2, "b");
    let (code, report, out) = verify_as(&e, &aud, &path);
    assert_eq!(code, Some(1), "{out}");
    assert_eq!(finding_checks(&report), vec![(1, "unpinned_key".to_owned()), (2, "unpinned_key".to_owned())], "{out}");

    // The old key announcing a key whose holder did not sign (the proof is by another key):
    // refused, and the announced key stays untrusted.
    let path = e.dir.path().join("no-proof.jsonl");
    let claimed = KeyEvent::Rotate { principal: "alice".into(), old: old.fingerprint(), new_key: new.verifying_key() };
    append_event(&path, &claimed, &old, Some(&mallory));
    append_decision(&path, &new, "b");
    let (code, report, out) = verify_as(&e, &aud, &path);
    assert_eq!(code, Some(1), "{out}");
    assert_eq!(finding_checks(&report), vec![(0, "signature".to_owned()), (1, "unpinned_key".to_owned())], "{out}");
    assert!(report["findings"][0]["message"].as_str().is_some_and(|m| m.contains("not by the new key")), "{out}");
}

// Rename: the configured name changed first, so signing is refused with the working fix;
// `keys rename` records the rename; signatures under the new name then verify, for the principal
// and for an auditor who pinned the key under the old name, and the earlier records still do.
#[test]
fn rename_keeps_earlier_records_valid_and_the_mismatch_error_suggests_it() {
    let e = Env::new();
    approve(&e, "p1");
    let pem = export_pem(&e, "alice.pub");
    e.propose("draft.compose", "scribe", "p2", &[]);
    let o = e.cmd(&["approve", "--yes", "p2"]).env("WARRANT_PRINCIPAL", "alice.smith").output().expect("run");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(err.contains("warrant keys rename \"alice.smith\""), "{err}");
    assert!(!err.contains("keys pin"), "re-pinning by hand breaks earlier records: {err}");
    let o = e.cmd(&["keys", "rename", "alice.smith"]).env("WARRANT_PRINCIPAL", "alice.smith").output().expect("run");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = e.cmd(&["approve", "--yes", "p2"]).env("WARRANT_PRINCIPAL", "alice.smith").output().expect("run");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let chain_path = e.spool().join("chain.jsonl");
    verifies(&e, &e.config(), &chain_path, 3, "verify");
    let aud = auditor(&e, "auditor", &[("alice", &pem)]);
    verifies(&e, &aud, &chain_path, 3, "verify");
    // The old name no longer signs: the error names the new one.
    e.propose("draft.compose", "scribe", "p3", &[]);
    let o = e.run(&["approve", "--yes", "p3"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("renamed \"alice.smith\""), "{}", text(&o));
}

// A record under the new name before the rename is refused for an auditor of the old name.
#[test]
fn a_new_name_is_trusted_only_after_its_rename_record() {
    let e = Env::new();
    let key = Principal::from_seed("alice", &[1; 32]);
    let mut renamed = Principal::from_seed("alice.smith", &[1; 32]);
    let aud = auditor(&e, "auditor", &[("alice", &pin_file(&e, "alice.pub", &key))]);
    let path = e.dir.path().join("renamed.jsonl");
    append_decision(&path, &renamed, "early"); // 0: the new name too early
    let rename =
        KeyEvent::Rename { principal: "alice".into(), new_principal: "alice.smith".into(), key: key.fingerprint() };
    append_event(&path, &rename, &key, None); // 1
    append_decision(&path, &renamed, "late"); // 2
    append_decision(&path, &key, "old-name"); // 3: the old name still verifies
    let (code, report, out) = verify_as(&e, &aud, &path);
    assert_eq!(code, Some(1), "{out}");
    assert_eq!(finding_checks(&report), vec![(0, "signature".to_owned())], "{out}");
    assert!(report["findings"][0]["message"].as_str().is_some_and(|m| m.contains("pinned for \"alice\"")), "{out}");
    // A rename signed by a stranger's key for alice's name changes nothing.
    let mallory = Principal::from_seed("alice", &[66; 32]);
    renamed.name = "mallory".into();
    let path = e.dir.path().join("stolen-name.jsonl");
    let stolen =
        KeyEvent::Rename { principal: "alice".into(), new_principal: "mallory".into(), key: key.fingerprint() };
    append_event(&path, &stolen, &mallory, None);
    append_decision(&path, &renamed, "x");
    let (code, report, out) = verify_as(&e, &aud, &path);
    assert_eq!(code, Some(1), "{out}");
    assert_eq!(finding_checks(&report).len(), 2, "{out}");
    assert_eq!(finding_checks(&report)[1], (1, "signature".to_owned()), "{out}");
}

// An auditor with an empty pin set: the finding names the key and how to pin it, and is told
// apart from a forged signature.
#[test]
fn an_auditor_without_the_pin_gets_the_pin_hint_not_a_forgery() {
    let e = Env::new();
    approve(&e, "p1");
    let fp = fingerprint(&e);
    let empty = e.dir.path().join("empty");
    std::fs::create_dir_all(&empty).expect("dir");
    let chain_path = e.spool().join("chain.jsonl");
    let (code, report, out) = verify_as(&e, &empty, &chain_path);
    assert_eq!(code, Some(1), "{out}");
    assert_eq!(report["first"]["check"], "unpinned_key", "{out}");
    let message = report["first"]["message"].as_str().expect("message");
    assert!(message.contains(&fp) && message.contains("warrant keys pin --principal \"alice\""), "{message}");
    assert!(message.contains("not shown to be forged"), "{message}");
    let o = e.cmd(&["verify", &chain_path.display().to_string()]).env("WARRANT_CONFIG", &empty).output().expect("run");
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("none was shown to be forged"), "{}", text(&o));
    // A forged signature under a pinned key is a `signature` finding, not a pin hint.
    let key = Principal::from_seed("alice", &[1; 32]);
    let aud = auditor(&e, "auditor", &[("alice", &pin_file(&e, "k.pub", &key))]);
    let path = e.dir.path().join("forged.jsonl");
    let mallory = Principal::from_seed("alice", &[66; 32]);
    let hash = warrant::protocol::canonical::canonical_hash(&serde_json::json!({"id": "f"}));
    let input = DecisionInput {
        stands_in_for: &[],
        packet_id: "f",
        packet_hash: &hash,
        action_class: "draft.compose",
        agent: "scribe",
        trace_id: "t",
        verdict: Verdict::Approve,
        reason: None,
        decided_at: AT,
    };
    // Mallory's signature bytes over a document that claims alice's pinned key.
    let doc = decision::decision_document(&input, "alice", &key.fingerprint());
    let mut sig = decision::sign_document(&mallory, &doc);
    sig["key_fingerprint"] = Value::from(key.fingerprint());
    let signed = decision::SignedDecision { document: doc, signature: sig };
    chain_file::append(&path, |_| Ok(decision::record_body(&input, &signed))).expect("append");
    let (code, report, out) = verify_as(&e, &aud, &path);
    assert_eq!(code, Some(1), "{out}");
    assert_eq!(report["first"]["check"], "signature", "{out}");
    assert!(report["first"]["message"].as_str().is_some_and(|m| m.contains("(forged)")), "{out}");
}

// The principal's own signing checks the chain incrementally, after its signed checkpoint; the
// rotation in the checkpointed prefix still retires the old key there: a record the old key
// signed after the rotation breaks the chain, and nothing more is signed onto it.
#[test]
fn a_retired_key_breaks_the_chain_for_the_incremental_check_before_signing() {
    let e = Env::new();
    approve(&e, "p1");
    assert_eq!(e.run(&["keys", "rotate", "--no-passphrase"]).status.code(), Some(0));
    approve(&e, "p2");
    let retired = std::fs::read_dir(e.config())
        .expect("config")
        .filter_map(Result::ok)
        .find(|d| d.file_name().to_string_lossy().ends_with(".retired"))
        .expect("retired key");
    let old = Principal::load(&retired.path(), "alice").expect("old key");
    append_decision(&e.spool().join("chain.jsonl"), &old, "late");
    e.propose("draft.compose", "scribe", "p3", &[]);
    let o = e.run(&["approve", "--yes", "p3"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("retired"), "{}", text(&o));
    let o = e.run(&["verify"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
}

// A rotation record with any other finding (here a field the record schema does not have, which
// its signature does not cover) announces nothing.
#[test]
fn a_rotation_record_with_a_finding_trusts_no_new_key() {
    let e = Env::new();
    let old = Principal::from_seed("alice", &[1; 32]);
    let new = Principal::from_seed("alice", &[2; 32]);
    let aud = auditor(&e, "auditor", &[("alice", &pin_file(&e, "old.pub", &old))]);
    let path = e.dir.path().join("flawed.jsonl");
    let rotate = KeyEvent::Rotate { principal: "alice".into(), old: old.fingerprint(), new_key: new.verifying_key() };
    chain_file::append(&path, |_| {
        let mut body = key_event::record_body(&rotate, &old, Some(&new), AT);
        body.insert("unexpected".into(), Value::from(1));
        Ok(body)
    })
    .expect("append");
    append_decision(&path, &new, "b");
    let (code, report, out) = verify_as(&e, &aud, &path);
    assert_eq!(code, Some(1), "{out}");
    let checks = finding_checks(&report);
    assert_eq!(checks.first().map(|c| c.0), Some(0), "{out}");
    assert!(checks.contains(&(1, "unpinned_key".to_owned())), "the new key stays untrusted: {out}");
}

// The README's "Keys and pinning" block run by a principal on their own machine: pinning their
// own exported key for another name is refused (exit 2), says it is their own key and names the
// fix that works (`keys rename`), and changes nothing: the chain still verifies, and signing
// still works. A key pinned for someone is not moved to another name either; unpinning first is
// the way, and pinning a key again for its own name is a no-op.
#[test]
fn pinning_a_pinned_key_for_another_name_is_refused_with_the_fix_that_works() {
    let e = Env::new();
    approve(&e, "p1");
    let fp = fingerprint(&e);
    let own = export_pem(&e, "alice.pub");
    let pins = e.config().join("pinned_keys.toml");
    let before = std::fs::read(&pins).expect("pinned_keys.toml");

    let o = e.run(&["keys", "pin", "--principal", "sam", &own.display().to_string()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = text(&o);
    assert!(err.contains(&fp) && err.contains("your own key") && err.contains("warrant keys rename sam"), "{err}");
    assert_eq!(std::fs::read(&pins).expect("pins"), before, "nothing was re-pinned");
    let o = e.run(&["verify"]);
    assert_eq!(o.status.code(), Some(0), "the chain still verifies: {}", text(&o));
    approve(&e, "p2");

    let o = e.run(&["keys", "pin", "--principal", "alice", &own.display().to_string()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("already pinned for alice"), "{}", text(&o));
    assert_eq!(std::fs::read(&pins).expect("pins"), before);

    let bob = e.dir.path().join("bob.pub");
    std::fs::write(&bob, Principal::from_seed("bob", &[7; 32]).public_pem()).expect("bob.pub");
    assert_eq!(e.run(&["keys", "pin", "--principal", "bob", &bob.display().to_string()]).status.code(), Some(0));
    let bob_fp = Principal::from_seed("bob", &[7; 32]).fingerprint();
    let o = e.run(&["keys", "pin", "--principal", "carol", &bob.display().to_string()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains(&format!("warrant keys unpin {bob_fp}")), "{}", text(&o));
    assert_eq!(e.run(&["keys", "unpin", &bob_fp]).status.code(), Some(0));
    let o = e.run(&["keys", "pin", "--principal", "carol", &bob.display().to_string()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("for carol"), "{}", text(&o));
}

// An auditor without the pin, on a chain of several decisions (issue 32, item 14): the long
// message (which key, how to pin it) is printed once, with the other records it is about, not
// once per record.
#[test]
fn an_auditor_without_the_pin_reads_the_hint_once_for_every_record() {
    let e = Env::new();
    for id in ["p1", "p2", "p3", "p4"] {
        approve(&e, id);
    }
    let empty = e.dir.path().join("empty");
    std::fs::create_dir_all(&empty).expect("dir");
    let chain_path = e.spool().join("chain.jsonl");
    let o = e.cmd(&["verify", &chain_path.display().to_string()]).env("WARRANT_CONFIG", &empty).output().expect("run");
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.matches("warrant keys pin --principal").count(), 1, "{err}");
    assert!(err.contains("the same for 3 more records: 2, 3, 4"), "{err}");
    assert!(err.contains("not shown to be forged") || err.contains("none was shown to be forged"), "{err}");
}
