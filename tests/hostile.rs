//! Hostile input: every way an agent, or anyone who can write into the spool, might try
//! to get a decision it was not given, crash or hang warrant, hide from the principal or drive
//! the principal's terminal. Each table names its cases; each case must be rejected with a clear
//! reason, and valid input beside it must still work.
//!
//! Real files, real keys in temporary directories, and the real binary for the command line.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use warrant::protocol::chain::{self, Check};
use warrant::protocol::decision::{self, DecisionInput, SignedDecision, Verdict};
use warrant::protocol::keys::{PinnedKeys, Principal};
use warrant::store::chain_file;
use warrant::store::prelude::*;
use warrant::store::spool::{self, DecideError, Scanner};

const AT: &str = "2026-11-21T09:00:00Z";
const BIN: &str = env!("CARGO_BIN_EXE_warrant");

/// Every character [`warrant::protocol::text::inert`] must never let through, for the assertions below.
fn unsafe_char(c: char) -> bool {
    warrant::protocol::text::is_unsafe(c)
}

/// `2^70`, an integer no 64-bit type holds.
const HUGE_INT: &str = "1180591620717411303424";

// ---- fixtures ------------------------------------------------------------------------------------

use crate::signed_spool;
use signed_spool::Fixture;

fn fixture() -> Fixture {
    signed_spool::fixture_with_seed(5)
}

fn portable(id: &str, agent: &str) -> Value {
    warrant::protocol::packet::portable_packet(id, "draft.compose", agent, "s", json!({"text": "hello"}), AT)
}

impl Fixture {
    fn publish(&self, id: &str) {
        self.spool.publish(&self.spool.packets_dir(), id, &portable(id, "agent-a")).expect("publish");
    }
    fn packet(&self, id: &str) -> std::sync::Arc<warrant::protocol::packet::Packet> {
        let snap = Scanner::new().scan(&self.spool).expect("scan");
        std::sync::Arc::clone(&snap.packet(id).unwrap_or_else(|| panic!("no packet {id}: {:?}", snap.invalid)).packet)
    }
    fn decide(&self, id: &str, verdict: Verdict, reason: Option<&str>) -> Result<spool::Decided, DecideError> {
        spool::decide(&self.spool, &self.principal, &self.pinned, &self.packet(id), verdict, reason, AT)
    }
    fn decision_file(&self, id: &str) -> Value {
        serde_json::from_slice(&std::fs::read(self.spool.decision_path(id)).expect("decision file")).expect("json")
    }
    fn view(&self) -> spool::ChainView {
        spool::verify_chain(&self.spool, &self.pinned).expect("verify")
    }
    fn chain_lines(&self) -> Vec<String> {
        std::fs::read_to_string(self.spool.chain_path()).unwrap_or_default().lines().map(str::to_owned).collect()
    }
}

fn input<'a>(id: &'a str, hash: &'a str, verdict: Verdict) -> DecisionInput<'a> {
    DecisionInput {
        stands_in_for: &[],
        packet_id: id,
        packet_hash: hash,
        action_class: "draft.compose",
        agent: "agent-a",
        trace_id: "t",
        verdict,
        reason: Some("ok"),
        decided_at: AT,
    }
}

fn file_of(signed: &SignedDecision) -> Value {
    let fake =
        chain::Appended { chain_index: 1, entry_hash: format!("sha256:{}", "00".repeat(32)), record: Value::Null };
    decision::decision_file(signed, &fake)
}

/// Replaces the Ed25519 bytes of a signature object with `by`'s signature over the same payload
/// hash: a forgery that keeps every label (signer, fingerprint, payload hash) of the original.
fn forge_bytes(sig: &mut Value, by: &Principal) {
    let hash = sig["payload_hash"].as_str().expect("payload_hash").to_owned();
    sig["signature"] = json!(STANDARD.encode(by.sign(hash.as_bytes()).to_bytes()));
}

/// The principal's genuine signature over an arbitrary document (what an attacker who captured
/// a signed document from elsewhere would hold).
fn genuine(principal: &Principal, doc: Value) -> Value {
    let signature = decision::sign_document(principal, &doc);
    json!({"type": "warrant_decision", "version": 1, "packet_id": doc["packet_id"], "decision": doc["decision"],
           "document": doc, "signature": signature})
}

// ---- 1. signatures: the decision file an agent collects ------------------------------------------

// Each way of tampering with a decision file is rejected by `verify_decision_file`, naming why;
// the genuine files verify. Table: (case, file, packet waited for, content hash, expected reason).
#[test]
fn decision_files_forged_unpinned_replayed_swapped_or_edited_are_rejected() {
    let f = fixture();
    f.publish("p-a");
    f.publish("p-b");
    f.decide("p-a", Verdict::Approve, Some("ok")).expect("approve p-a");
    f.decide("p-b", Verdict::Refuse, Some("no")).expect("refuse p-b");
    let (hash_a, hash_b) = (f.packet("p-a").content_hash.clone(), f.packet("p-b").content_hash.clone());
    let (approval_a, refusal_b) = (f.decision_file("p-a"), f.decision_file("p-b"));
    // The genuine files verify, for their packets and their content.
    let ok =
        decision::verify_decision_file(&approval_a, "p-a", Some(hash_a.as_str()), &f.pinned).expect("genuine approval");
    assert_eq!(ok.verdict, Verdict::Approve);
    let ok =
        decision::verify_decision_file(&refusal_b, "p-b", Some(hash_b.as_str()), &f.pinned).expect("genuine refusal");
    assert_eq!(ok.verdict, Verdict::Refuse);

    let mallory = Principal::from_seed("alice", &[66; 32]); // claims to be alice
    let stranger = Principal::from_seed("mallory", &[67; 32]);
    let bob = Principal::from_seed("bob", &[68; 32]);
    let mut pins_with_bob = f.pinned.clone();
    pins_with_bob.pin("bob", bob.verifying_key());
    let edit = |file: &Value, path: &[&str], value: Value| {
        let mut out = file.clone();
        let mut at = &mut out;
        for k in &path[..path.len() - 1] {
            at = &mut at[*k];
        }
        at[path[path.len() - 1]] = value;
        out
    };
    let rehash = |file: &Value| {
        let mut out = file.clone();
        out["signature"]["payload_hash"] = json!(decision::payload_hash(&out["document"]));
        out
    };
    let edited_hash = warrant::protocol::canonical::canonical_hash(&json!({"edited": true}));

    /// (case, decision file, packet waited for, its content hash, pinned keys, expected reason)
    type Case<'a> = (&'a str, Value, &'a str, Option<&'a str>, &'a PinnedKeys, &'a str);
    let cases: Vec<Case<'_>> = vec![
        (
            "forged: another key's signature bytes under alice's labels",
            {
                let mut v = approval_a.clone();
                forge_bytes(&mut v["signature"], &mallory);
                v
            },
            "p-a",
            Some(hash_a.as_str()),
            &f.pinned,
            "(forged)",
        ),
        (
            "forged: a whole decision signed by an unpinned key in alice's name",
            file_of(&decision::sign_decision(&mallory, &input("p-a", &hash_a, Verdict::Approve))),
            "p-a",
            Some(hash_a.as_str()),
            &f.pinned,
            "is not pinned",
        ),
        (
            "unpinned: a stranger's own key and name",
            file_of(&decision::sign_decision(&stranger, &input("p-a", &hash_a, Verdict::Approve))),
            "p-a",
            Some(hash_a.as_str()),
            &f.pinned,
            "is not pinned",
        ),
        (
            "pinned, but for another principal: bob's key speaking for alice",
            {
                let doc =
                    decision::decision_document(&input("p-a", &hash_a, Verdict::Approve), "alice", &bob.fingerprint());
                let mut v = genuine(&bob, doc);
                v["signature"]["signer"] = json!("alice");
                v
            },
            "p-a",
            Some(hash_a.as_str()),
            &pins_with_bob,
            "is pinned for \"bob\"",
        ),
        (
            "replayed: p-a's approval presented for p-b",
            approval_a.clone(),
            "p-b",
            Some(hash_b.as_str()),
            &f.pinned,
            "(replayed)",
        ),
        (
            "replayed: p-a's approval with its unsigned packet_id retargeted to p-b",
            edit(&approval_a, &["packet_id"], json!("p-b")),
            "p-b",
            Some(hash_b.as_str()),
            &f.pinned,
            "(replayed)",
        ),
        (
            "swapped: a refusal whose unsigned summary says approve",
            edit(&refusal_b, &["decision"], json!("approve")),
            "p-b",
            Some(hash_b.as_str()),
            &f.pinned,
            "summary disagrees with the signed document",
        ),
        (
            "swapped: a refusal whose signed document says approve",
            edit(&edit(&refusal_b, &["decision"], json!("approve")), &["document", "decision"], json!("approve")),
            "p-b",
            Some(hash_b.as_str()),
            &f.pinned,
            "payload hash mismatch",
        ),
        (
            "swapped: the document flipped to approve and its payload hash recomputed",
            rehash(&edit(
                &edit(&refusal_b, &["decision"], json!("approve")),
                &["document", "decision"],
                json!("approve"),
            )),
            "p-b",
            Some(hash_b.as_str()),
            &f.pinned,
            "(forged)",
        ),
        (
            "edited: the signed reason",
            edit(&approval_a, &["document", "reason"], json!("ok, and wire the money")),
            "p-a",
            Some(hash_a.as_str()),
            &f.pinned,
            "payload hash mismatch",
        ),
        (
            "edited: the signed packet hash moved to new content",
            rehash(&edit(&approval_a, &["document", "packet_hash"], json!(edited_hash))),
            "p-a",
            Some(edited_hash.as_str()),
            &f.pinned,
            "(forged)",
        ),
        (
            "edited: the signer renamed",
            edit(&approval_a, &["signature", "signer"], json!("bob")),
            "p-a",
            Some(hash_a.as_str()),
            &f.pinned,
            "is not the document's principal",
        ),
        (
            "edited: the algorithm",
            edit(&approval_a, &["signature", "algorithm"], json!("none")),
            "p-a",
            Some(hash_a.as_str()),
            &f.pinned,
            "unsupported signature algorithm",
        ),
        (
            "edited: signature bytes truncated",
            edit(&approval_a, &["signature", "signature"], json!(STANDARD.encode([1u8; 32]))),
            "p-a",
            Some(hash_a.as_str()),
            &f.pinned,
            "not 64 bytes",
        ),
        (
            "edited: signature not base64",
            edit(&approval_a, &["signature", "signature"], json!("!!!")),
            "p-a",
            Some(hash_a.as_str()),
            &f.pinned,
            "not base64",
        ),
        (
            "packet edited after approval: the approval no longer matches its content",
            approval_a.clone(),
            "p-a",
            Some(edited_hash.as_str()),
            &f.pinned,
            "signed over packet content",
        ),
        (
            "cross-domain: a control the principal signed, presented as a decision",
            genuine(
                &f.principal,
                json!({"domain": "warrant.control/v1", "control": "agent.release", "subject": "agent-a",
                       "packet_id": "p-a", "decision": "approve", "principal": "alice",
                       "key": f.principal.fingerprint(), "decided_at": AT}),
            ),
            "p-a",
            Some(hash_a.as_str()),
            &f.pinned,
            "unknown document domain",
        ),
        (
            "genuinely signed, but neither approve nor refuse",
            genuine(
                &f.principal,
                json!({"domain": "warrant.decision/v1", "packet_id": "p-a", "packet_hash": hash_a,
                       "decision": "approve-later", "principal": "alice", "key": f.principal.fingerprint(),
                       "decided_at": AT}),
            ),
            "p-a",
            Some(hash_a.as_str()),
            &f.pinned,
            "neither approve nor refuse",
        ),
        (
            "stripped: no signature",
            edit(&approval_a, &["signature"], Value::Null),
            "p-a",
            Some(hash_a.as_str()),
            &f.pinned,
            "no signature",
        ),
        (
            "stripped: no document",
            edit(&approval_a, &["document"], json!("approve")),
            "p-a",
            Some(hash_a.as_str()),
            &f.pinned,
            "no document",
        ),
        (
            "not a decision file",
            json!({"decision": "approve", "packet_id": "p-a"}),
            "p-a",
            Some(hash_a.as_str()),
            &f.pinned,
            "not a warrant decision file",
        ),
    ];
    for (case, file, id, hash, pins, expected) in &cases {
        let err = decision::verify_decision_file(file, id, *hash, pins).expect_err(case);
        let text = err.to_string();
        assert!(text.contains(expected), "{case}: expected {expected:?}, got {text:?}");
    }
    assert_eq!(cases.len(), 21);
}

// ---- 1. signatures: records in chain.jsonl -------------------------------------------------------

/// Rewrites the last line of the chain with `change` applied to its record; with `reseal`, the
/// record is linked and hashed again (an attacker who recomputes hashes), so only the signature
/// checks can catch it.
fn rewrite_last(f: &Fixture, reseal: bool, change: impl FnOnce(&mut serde_json::Map<String, Value>)) {
    let mut lines = f.chain_lines();
    let last = lines.pop().expect("a record");
    let mut rec: serde_json::Map<String, Value> = serde_json::from_str(&last).expect("record");
    change(&mut rec);
    let text = if reseal {
        let head = match lines.last() {
            Some(prev) => {
                let p: Value = serde_json::from_str(prev).expect("record");
                chain::ChainHead {
                    last_index: p["chain_index"].as_u64().expect("index"),
                    last_hash: p["entry_hash"].as_str().map(str::to_owned),
                }
            }
            None => chain::ChainHead { last_index: 0, last_hash: None },
        };
        warrant::protocol::canonical::to_canonical_string(&chain::seal(rec, &head).record)
    } else {
        warrant::protocol::canonical::to_canonical_string(&Value::Object(rec))
    };
    lines.push(text);
    std::fs::write(f.spool.chain_path(), lines.join("\n") + "\n").expect("rewrite chain");
}

// A forged, unpinned, replayed, swapped or edited decision record in chain.jsonl decides nothing:
// verification names it, the packet stays pending, and nothing more can be signed onto the chain
// until it is examined. Decisions in the genuine records before it still count.
#[test]
fn forged_or_edited_chain_records_decide_nothing() {
    type Attack = Box<dyn Fn(&Fixture)>;
    let victim_input = |f: &Fixture, verdict| {
        let hash = f.packet("victim").content_hash.clone();
        (hash, verdict)
    };
    let append_signed = |f: &Fixture, signed: &SignedDecision, hash: &str, verdict: Verdict| {
        let inp = input("victim", hash, verdict);
        chain_file::append(&f.spool.chain_path(), |_| Ok(decision::record_body(&inp, signed))).expect("append");
    };
    let cases: Vec<(&str, Attack, Check, &str)> = vec![
        (
            "forged: another key's bytes under alice's labels",
            Box::new(move |f: &Fixture| {
                let (hash, v) = victim_input(f, Verdict::Approve);
                let mut signed = decision::sign_decision(&f.principal, &input("victim", &hash, v));
                forge_bytes(&mut signed.signature, &Principal::from_seed("alice", &[66; 32]));
                append_signed(f, &signed, &hash, v);
            }),
            Check::Signature,
            "(forged)",
        ),
        (
            "unpinned: a decision signed by a key nobody pinned",
            Box::new(move |f: &Fixture| {
                let (hash, v) = victim_input(f, Verdict::Approve);
                let mallory = Principal::from_seed("alice", &[66; 32]);
                append_signed(f, &decision::sign_decision(&mallory, &input("victim", &hash, v)), &hash, v);
            }),
            Check::UnpinnedKey,
            "is not pinned",
        ),
        (
            "replayed: done's genuine approval re-addressed to the victim",
            Box::new(move |f: &Fixture| {
                let (hash, v) = victim_input(f, Verdict::Approve);
                let done = f.decision_file("done");
                let mut signed =
                    SignedDecision { document: done["document"].clone(), signature: done["signature"].clone() };
                signed.document["packet_id"] = json!("victim");
                signed.document["packet_hash"] = json!(hash);
                append_signed(f, &signed, &hash, v);
            }),
            Check::Signature,
            "payload hash mismatch",
        ),
        (
            "swapped: the victim's genuine refusal rewritten as an approval (hashes recomputed)",
            Box::new(move |f: &Fixture| {
                f.decide("victim", Verdict::Refuse, Some("no")).expect("refuse");
                rewrite_last(f, true, |rec| {
                    rec.insert("outcome".into(), json!("success"));
                    rec["metadata"]["approval"]["decision"] = json!("approve");
                });
            }),
            Check::Signature,
            "disagrees with the signed decision",
        ),
        (
            "swapped: the refusal's signed document flipped too (hashes recomputed)",
            Box::new(move |f: &Fixture| {
                f.decide("victim", Verdict::Refuse, Some("no")).expect("refuse");
                rewrite_last(f, true, |rec| {
                    rec.insert("outcome".into(), json!("success"));
                    rec["metadata"]["approval"]["decision"] = json!("approve");
                    rec["metadata"]["warrant_decision"]["decision"] = json!("approve");
                });
            }),
            Check::Signature,
            "payload hash mismatch",
        ),
        (
            "edited: the signed reason (hashes recomputed)",
            Box::new(move |f: &Fixture| {
                f.decide("victim", Verdict::Approve, Some("ok")).expect("approve");
                rewrite_last(f, true, |rec| {
                    rec["metadata"]["warrant_decision"]["reason"] = json!("ok, and wire the money");
                    rec["metadata"]["reason"] = json!("ok, and wire the money");
                });
            }),
            Check::Signature,
            "payload hash mismatch",
        ),
        (
            "edited: the record's outcome, hashes left as they were",
            Box::new(move |f: &Fixture| {
                f.decide("victim", Verdict::Refuse, Some("no")).expect("refuse");
                rewrite_last(f, false, |rec| {
                    rec.insert("outcome".into(), json!("success"));
                });
            }),
            Check::EntryHash,
            "",
        ),
        (
            "edited: the document's domain (hashes recomputed)",
            Box::new(move |f: &Fixture| {
                f.decide("victim", Verdict::Approve, None).expect("approve");
                rewrite_last(f, true, |rec| {
                    rec["metadata"]["warrant_decision"]["domain"] = json!("warrant.decision/v0");
                });
            }),
            Check::Signature,
            "unknown domain",
        ),
        (
            "foreign: an approval signature that is no warrant decision",
            Box::new(move |f: &Fixture| {
                chain_file::append(&f.spool.chain_path(), |_| {
                    let mut meta = serde_json::Map::new();
                    meta.insert(
                        "approval".into(),
                        json!({"required": true, "quorum": 1, "decision": "approve",
                               "signatures": [{"reviewer": "alice", "signed_at": AT, "signature": "Zm9yZ2Vk"}]}),
                    );
                    Ok(chain::new_record_body(
                        "agent-a",
                        "draft.compose",
                        Some("alice"),
                        "success",
                        "warrant:victim",
                        "act_with_approval",
                        AT,
                        meta,
                    ))
                })
                .expect("append");
            }),
            Check::Signature,
            "cannot be verified against pinned keys",
        ),
    ];
    for (case, attack, check, expected) in &cases {
        let f = fixture();
        f.publish("done");
        f.publish("victim");
        f.publish("next");
        f.decide("done", Verdict::Approve, Some("genuine")).expect("genuine decision");
        attack(&f);
        let view = f.view();
        assert!(
            view.report
                .findings
                .iter()
                .any(|x| x.index == Some(1) && x.check == *check && x.message.contains(expected)),
            "{case}: {:?}",
            view.report.findings
        );
        assert!(!view.decisions.contains_key("victim"), "{case}: the hostile record decided the victim");
        assert_eq!(
            view.decisions.get("done").map(|d| d.verdict),
            Some(Verdict::Approve),
            "{case}: genuine record lost"
        );
        // Gates fail closed: nothing is signed onto the chain until it is examined.
        let before = f.chain_lines();
        let err = f.decide("next", Verdict::Approve, None).expect_err(case);
        assert!(matches!(err, DecideError::ChainBroken(_)), "{case}: {err}");
        assert_eq!(f.chain_lines(), before, "{case}: appended onto a broken chain");
        assert!(!f.spool.decision_path("next").exists(), "{case}");
    }
    assert_eq!(cases.len(), 9);
}

// ---- 1. signatures: `warrant propose --wait`, end to end -----------------------------------------

struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    /// A temporary directory with an unprotected principal key (`keys init --no-passphrase`).
    fn new() -> Self {
        let e = Self { dir: tempfile::tempdir().expect("tempdir") };
        // As `warrant init` leaves it: no other command creates a spool.
        std::fs::create_dir(e.dir.path().join("spool")).expect("spool dir");
        let o = e.run(&["keys", "init", "--no-passphrase"]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        e
    }
    fn config(&self) -> PathBuf {
        self.dir.path().join("config")
    }
    fn spool(&self) -> PathBuf {
        self.dir.path().join("spool")
    }
    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.args(args)
            .env("WARRANT_CONFIG", self.config())
            .env("WARRANT_SPOOL", self.spool())
            .env("WARRANT_PRINCIPAL", "alice")
            .env("XDG_DATA_HOME", self.dir.path().join("data"))
            .env_remove("NO_COLOR")
            .stdin(Stdio::null());
        c
    }
    fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().expect("run warrant")
    }
    /// The principal's real key, as `warrant keys init --no-passphrase` created it.
    fn principal(&self) -> Principal {
        if !self.config().join("principal.key").exists() {
            let o = self.run(&["keys", "init", "--no-passphrase"]);
            assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        }
        Principal::load(&self.config().join("principal.key"), "alice").expect("the principal's key")
    }
    fn chain(&self) -> String {
        std::fs::read_to_string(self.spool().join("chain.jsonl")).unwrap_or_default()
    }
}

fn text(o: &Output) -> String {
    format!("stdout: {}\nstderr: {}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// How a hostile decision file is put in place.
enum Plant {
    Json(Value),
    Bytes(Vec<u8>),
    Symlink(Value),
    Fifo,
    Socket,
    Dir,
}

// An agent waiting with `propose --wait` never takes a decision file it cannot verify against its
// own pinned keys and the packet it published: each hostile file is reported once with its
// reason, and the agent keeps waiting until it times out (exit 4), never exits 0. A genuine
// decision arriving after a hostile one is still taken.
#[test]
fn propose_wait_keeps_waiting_past_hostile_decision_files() {
    let e = Env::new();
    let alice = e.principal();
    let any_hash = warrant::protocol::canonical::canonical_hash(&json!({"some": "other content"}));
    let signed_for = |id: &str, hash: &str, v: Verdict| file_of(&decision::sign_decision(&alice, &input(id, hash, v)));
    let mallory = Principal::from_seed("alice", &[66; 32]);
    let forged = {
        let mut v = signed_for("w-forged", &any_hash, Verdict::Approve);
        forge_bytes(&mut v["signature"], &mallory);
        v
    };
    let swapped = {
        let mut v = signed_for("w-swapped", &any_hash, Verdict::Refuse);
        v["decision"] = json!("approve");
        v["document"]["decision"] = json!("approve");
        v
    };
    let genuine_text = serde_json::to_string(&signed_for("w-dup", &any_hash, Verdict::Approve)).expect("json");
    let duplicated = genuine_text.replacen('{', r#"{"decision":"refuse","#, 1).into_bytes();
    let cases: Vec<(&str, &str, Plant, &str)> = vec![
        ("forged signature bytes", "w-forged", Plant::Json(forged), "(forged)"),
        (
            "an unpinned key in alice's name",
            "w-unpinned",
            Plant::Json(file_of(&decision::sign_decision(&mallory, &input("w-unpinned", &any_hash, Verdict::Approve)))),
            "is not pinned",
        ),
        ("a refusal swapped to approve", "w-swapped", Plant::Json(swapped), "payload hash mismatch"),
        (
            "another packet's genuine approval",
            "w-replayed",
            Plant::Json(signed_for("w-other", &any_hash, Verdict::Approve)),
            "(replayed)",
        ),
        (
            "a genuine approval of other content under this id",
            "w-content",
            Plant::Json(signed_for("w-content", &any_hash, Verdict::Approve)),
            "signed over packet content",
        ),
        ("a duplicated key", "w-dup", Plant::Bytes(duplicated), "duplicate key"),
        (
            "a symlink to a genuine-looking file",
            "w-link",
            Plant::Symlink(signed_for("w-link", &any_hash, Verdict::Approve)),
            "not a regular file",
        ),
        ("a FIFO", "w-fifo", Plant::Fifo, "not a regular file"),
        ("a socket", "w-socket", Plant::Socket, "not a regular file"),
        ("a directory", "w-dir", Plant::Dir, "not a regular file"),
        ("over 1 MiB", "w-big", Plant::Bytes(vec![b' '; (1 << 20) + 1]), "over the 1 MiB limit"),
        ("nested 100,000 deep", "w-deep", Plant::Bytes(vec![b'['; 100_000]), "recursion limit"),
        ("not UTF-8", "w-latin1", Plant::Bytes(b"{\"type\":\"warrant_decision\xff\"}".to_vec()), "not JSON"),
        (
            "an integer beyond 64 bits",
            "w-int",
            Plant::Bytes(format!("{{\"version\":{HUGE_INT}}}").into_bytes()),
            "64-bit",
        ),
    ];
    let decisions = e.spool().join("decisions");
    std::fs::create_dir_all(&decisions).expect("decisions dir");
    let outside = e.dir.path().join("outside.json");
    // Sockets stay bound while the agents wait.
    let mut sockets = Vec::new();
    for (_, id, plant, _) in &cases {
        let path = decisions.join(format!("{id}.json"));
        match plant {
            Plant::Json(v) => std::fs::write(&path, serde_json::to_vec(v).expect("json")).expect("plant"),
            Plant::Bytes(b) => std::fs::write(&path, b).expect("plant"),
            Plant::Symlink(v) => {
                std::fs::write(&outside, serde_json::to_vec(v).expect("json")).expect("target");
                std::os::unix::fs::symlink(&outside, &path).expect("symlink");
            }
            Plant::Fifo => {
                assert!(Command::new("mkfifo").arg(&path).status().expect("mkfifo").success());
            }
            Plant::Socket => sockets.push(std::os::unix::net::UnixListener::bind(&path).expect("socket")),
            Plant::Dir => std::fs::create_dir(&path).expect("dir"),
        }
    }
    // All agents wait at once (each for 2 s): none of them may take its planted file.
    let agents: Vec<_> = cases
        .iter()
        .map(|(_, id, _, _)| {
            e.cmd(&["propose", "--class", "draft.compose", "--agent", "a", "--summary", "s", "--id", id, "--wait", "2"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn")
        })
        .collect();
    for ((case, id, _, expected), agent) in cases.iter().zip(agents) {
        let out = agent.wait_with_output().expect("agent");
        assert_eq!(out.status.code(), Some(4), "{case}: {}", text(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.matches("ignoring decision file").count(), 1, "{case}: reported once: {err}");
        assert!(err.contains(expected), "{case}: expected {expected:?}: {err}");
        assert!(err.contains(&format!("no decision on {id}")), "{case}: {err}");
        assert_inert(case, &err);
    }
    // A genuine refusal after a forged approval: the agent ignores the forgery, then takes the
    // refusal (exit 3).
    let path = decisions.join("w-late.json");
    let mut forged = signed_for("w-late", &any_hash, Verdict::Approve);
    forge_bytes(&mut forged["signature"], &mallory);
    std::fs::write(&path, serde_json::to_vec(&forged).expect("json")).expect("plant");
    let mut agent = e
        .cmd(&[
            "propose",
            "--class",
            "draft.compose",
            "--agent",
            "a",
            "--summary",
            "s",
            "--id",
            "w-late",
            "--wait",
            "60",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let (tx, rx) = std::sync::mpsc::channel();
    let stderr = agent.stderr.take().expect("stderr");
    let reader = std::thread::spawn(move || {
        for line in std::io::BufRead::lines(std::io::BufReader::new(stderr)) {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    // Refuse only once the agent has seen (and ignored) the forgery.
    let first = rx.recv().expect("the agent reports the forged file");
    assert!(first.contains("ignoring decision file") && first.contains("(forged)"), "{first}");
    let o = e.run(&["refuse", "--yes", "w-late", "--reason", "not this one"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let status = agent.wait().expect("agent");
    reader.join().expect("reader");
    let rest: Vec<String> = rx.try_iter().collect();
    assert_eq!(status.code(), Some(3), "{rest:?}");
    assert!(rest.iter().any(|l| l.contains("refuse by alice: not this one")), "{rest:?}");
    assert_eq!(cases.len(), 14);
}

// A packet rewritten after its approval is not approved: the decision binds the content that was
// signed. Checking the decision against the packet as it is now (`check-preconditions`, what an
// executor runs) fails naming the change, `list` shows `changed`, and it cannot be decided again.
#[test]
fn a_packet_edited_after_approval_is_not_approved() {
    let e = Env::new();
    e.principal();
    let o = e.run(&["propose", "--class", "email.send.external", "--agent", "a", "--summary", "s", "--id", "p-edit"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(e.run(&["approve", "--yes", "p-edit"]).status.code(), Some(0));
    assert_eq!(e.run(&["check-preconditions", "p-edit"]).status.code(), Some(0), "approved as published");
    let path = e.spool().join("packets/p-edit.json");
    let mut packet: Value = serde_json::from_slice(&std::fs::read(&path).expect("packet")).expect("json");
    packet["proposed_action"] = json!({"summary": "s", "to": "attacker@evil.example"});
    std::fs::write(&path, serde_json::to_vec(&packet).expect("json")).expect("rewrite");
    let o = e.run(&["check-preconditions", "p-edit"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("signed over packet content"), "{}", text(&o));
    let listed = String::from_utf8_lossy(&e.run(&["list"]).stdout).into_owned();
    assert!(listed.lines().any(|l| l.starts_with("changed") && l.contains("p-edit")), "{listed}");
    let json: Value = serde_json::from_slice(&e.run(&["list", "--json"]).stdout).expect("json");
    assert_eq!(json["packets"][0]["changed_since_decision"], true, "{json}");
    let o = e.run(&["approve", "--yes", "p-edit"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("already decided"), "{}", text(&o));
}

// ---- 2. files: packets and receipts in the spool ---------------------------------------------------

/// What to put at a file name in `packets/` or `receipts/`.
enum Put {
    Bytes(Vec<u8>),
    Json(Value),
    Symlink(PathBuf),
    Fifo,
    Dir,
}

fn put(dir: &Path, name: &std::ffi::OsStr, what: &Put) {
    let path = dir.join(name);
    // The hostile file replaces whatever is there (`keys init` wrote `pinned_keys.toml`).
    let _ = std::fs::remove_file(&path);
    match what {
        Put::Bytes(b) => std::fs::write(&path, b).expect("write"),
        Put::Json(v) => std::fs::write(&path, serde_json::to_vec(v).expect("json")).expect("write"),
        Put::Symlink(target) => std::os::unix::fs::symlink(target, &path).expect("symlink"),
        Put::Fifo => assert!(Command::new("mkfifo").arg(&path).status().expect("mkfifo").success()),
        Put::Dir => std::fs::create_dir(&path).expect("mkdir"),
    }
}

/// A valid portable packet with `field` set to the raw JSON text `raw` (for literals serde_json
/// cannot produce: huge numbers, NaN, duplicate keys).
fn packet_with_raw(id: &str, field: &str, raw: &str) -> Vec<u8> {
    let text = serde_json::to_string(&portable(id, "agent-a")).expect("json");
    text.replacen('{', &format!("{{\"{field}\":{raw},"), 1).into_bytes()
}

/// A packet whose `proposed_action` is `depth` nested arrays.
fn nested_packet(id: &str, depth: usize) -> Vec<u8> {
    let text = serde_json::to_string(&portable(id, "agent-a")).expect("json");
    let nested = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    text.replacen(r#"{"text":"hello"}"#, &nested, 1).into_bytes()
}

fn with_id(id: Value) -> Value {
    let mut v = portable("placeholder", "agent-a");
    v["packet_id"] = id;
    v
}

// Every hostile file in packets/ and receipts/ is listed as invalid with its reason, none crashes
// or hangs the scan, and the valid packet and receipt beside them load and can be decided.
#[test]
fn hostile_spool_files_are_listed_invalid_and_never_block_valid_ones() {
    use std::os::unix::ffi::OsStrExt as _;
    let f = fixture();
    let outside = f.dir.path().join("outside.json");
    std::fs::write(&outside, serde_json::to_vec(&portable("outside", "agent-a")).expect("json")).expect("outside");
    // Exactly 1 MiB, the limit itself: still valid.
    let mut at_limit = serde_json::to_vec(&portable("at-limit", "agent-a")).expect("json");
    at_limit.resize(1 << 20, b' ');
    let mut over = at_limit.clone();
    over.push(b' ');
    let long_id = "x".repeat(129);
    let name = |s: &str| std::ffi::OsStr::new(s).to_owned();
    let cases: Vec<(std::ffi::OsString, Put, &str)> = vec![
        (name("symlink.json"), Put::Symlink(outside.clone()), "symlinks are refused"),
        (name("dangling.json"), Put::Symlink(f.dir.path().join("nowhere")), "symlinks are refused"),
        (name("dev-zero.json"), Put::Symlink(PathBuf::from("/dev/zero")), "symlinks are refused"),
        (name("fifo.json"), Put::Fifo, "not a regular file"),
        (name("directory.json"), Put::Dir, "not a regular file"),
        (name("over-limit.json"), Put::Bytes(over), "over the 1 MiB limit"),
        (name("latin1.json"), Put::Bytes(latin1_packet()), "not UTF-8"),
        (name("deep-100000.json"), Put::Bytes(vec![b'['; 100_000]), "recursion limit"),
        (name("deep-200.json"), Put::Bytes(nested_packet("deep-200", 200)), "recursion limit"),
        // The packet object and 127 arrays: 128 levels, one too many.
        (name("deep-128.json"), Put::Bytes(nested_packet("deep-128", 127)), "recursion limit"),
        (
            name("dup-top.json"),
            Put::Bytes(packet_with_raw("dup-top", "packet_id", "\"other\"")),
            "duplicate key \"packet_id\"",
        ),
        (
            name("dup-nested.json"),
            Put::Bytes(packet_with_raw("dup-nested", "governance", r#"{"tool":"a","tool":"b"}"#)),
            "duplicate key \"tool\"",
        ),
        (name("float-1e400.json"), Put::Bytes(packet_with_raw("f", "amount", "1e400")), "number out of range"),
        (name("int-2-70.json"), Put::Bytes(packet_with_raw("i", "amount", HUGE_INT)), "64-bit range"),
        (
            name("int-minus-2-70.json"),
            Put::Bytes(packet_with_raw("m", "amount", &format!("-{HUGE_INT}"))),
            "64-bit range",
        ),
        (name("nan.json"), Put::Bytes(packet_with_raw("n", "amount", "NaN")), "not JSON"),
        (name("infinity.json"), Put::Bytes(packet_with_raw("inf", "amount", "-Infinity")), "not JSON"),
        (name("empty.json"), Put::Bytes(Vec::new()), "EOF while parsing"),
        (name("blank.json"), Put::Bytes(b" \n\t ".to_vec()), "EOF while parsing"),
        (
            name("bom.json"),
            Put::Bytes([vec![0xef, 0xbb, 0xbf], serde_json::to_vec(&portable("bom", "a")).expect("json")].concat()),
            "not JSON",
        ),
        (name("surrogate.json"), Put::Bytes(packet_with_raw("sur", "note", r#""\ud800\u0041""#)), "surrogate"),
        (
            name("trailing.json"),
            Put::Bytes([serde_json::to_vec(&portable("tr", "a")).expect("json"), b" {}".to_vec()].concat()),
            "trailing characters",
        ),
        (name("array.json"), Put::Bytes(b"[]".to_vec()), "not a JSON object"),
        (name("id-dotdot.json"), Put::Json(with_id(json!("../../etc/passwd"))), "unsafe id"),
        (name("id-slash.json"), Put::Json(with_id(json!("a/b"))), "unsafe id"),
        (name("id-hidden.json"), Put::Json(with_id(json!(".hidden"))), "unsafe id"),
        (name("id-double-dot.json"), Put::Json(with_id(json!("a..b"))), "unsafe id"),
        (name("id-empty.json"), Put::Json(with_id(json!(""))), "unsafe id"),
        (name("id-long.json"), Put::Json(with_id(json!(long_id))), "unsafe id"),
        (name("id-nul.json"), Put::Json(with_id(json!("a\u{0}b"))), "unsafe id"),
        (name("id-escape.json"), Put::Json(with_id(json!("a\u{1b}[2Jb"))), "unsafe id"),
        (name("id-number.json"), Put::Json(with_id(json!(7))), "must be a string"),
        // No packet_id: the file name is the id, and these names are no ids.
        (name("evil\u{1b}]0;title\u{7}.json"), Put::Json(without_id()), "unsafe id"),
        (std::ffi::OsStr::from_bytes(b"bytes\xff\xfe.json").to_owned(), Put::Json(without_id()), "unsafe id"),
        (name("a\u{202e}nosj.exe.json"), Put::Json(without_id()), "unsafe id"),
    ];
    let packets = f.spool.packets_dir();
    for (n, what, _) in &cases {
        put(&packets, n, what);
    }
    f.publish("valid");
    put(&packets, std::ffi::OsStr::new("at-limit.json"), &Put::Bytes(at_limit));
    // 127 levels, the deepest that loads.
    put(&packets, std::ffi::OsStr::new("deep-127.json"), &Put::Bytes(nested_packet("deep-127", 126)));
    // The same hostility in receipts/, beside a valid receipt.
    let receipts = f.spool.receipts_dir();
    let receipt = json!({"type": "trust_graduation_receipt", "receipt_id": "r-1", "action_class": "draft.compose",
                         "outcome": "execute", "created_at": AT});
    put(&receipts, std::ffi::OsStr::new("r-1.json"), &Put::Json(receipt));
    let receipt_cases: Vec<(&str, Put, &str)> = vec![
        ("fifo.json", Put::Fifo, "not a regular file"),
        ("link.json", Put::Symlink(outside.clone()), "symlinks are refused"),
        ("deep.json", Put::Bytes(vec![b'{'; 100_000]), "not JSON"),
        ("dup.json", Put::Bytes(br#"{"receipt_id":"a","receipt_id":"b"}"#.to_vec()), "duplicate key"),
        ("int.json", Put::Bytes(format!(r#"{{"n":{HUGE_INT}}}"#).into_bytes()), "64-bit range"),
        (
            "unsafe-id.json",
            Put::Json(
                json!({"type": "trust_graduation_receipt", "receipt_id": "../r", "action_class": "draft.compose", "outcome": "execute", "created_at": AT}),
            ),
            "unsafe id",
        ),
    ];
    for (n, what, _) in &receipt_cases {
        put(&receipts, std::ffi::OsStr::new(n), what);
    }

    let snap = Scanner::new().scan(&f.spool).expect("scan");
    let ids: Vec<&str> = snap.packets.iter().map(|p| p.packet.id.as_str()).collect();
    assert_eq!(ids.len(), 3, "only the valid packets load: {ids:?}");
    assert!(ids.contains(&"valid") && ids.contains(&"at-limit") && ids.contains(&"deep-127"), "{ids:?}");
    assert_eq!(snap.receipts.len(), 1);
    assert_eq!(snap.receipts[0].id, "r-1");
    let reason_of = |kind: spool::FileKind, n: &str| {
        snap.invalid
            .iter()
            .find(|x| x.kind == kind && x.name == n)
            .map(|x| x.reason.to_string())
            .unwrap_or_else(|| panic!("{n} is not listed as invalid: {:?}", snap.invalid))
    };
    for (n, _, expected) in &cases {
        let shown = n.to_string_lossy();
        let reason = reason_of(spool::FileKind::Packet, &shown);
        assert!(reason.contains(expected), "{shown:?}: expected {expected:?}, got {reason:?}");
    }
    for (n, _, expected) in &receipt_cases {
        let reason = reason_of(spool::FileKind::Receipt, n);
        assert!(reason.contains(expected), "receipt {n}: expected {expected:?}, got {reason:?}");
    }
    assert_eq!(snap.invalid.len(), cases.len() + receipt_cases.len());
    // The valid packet is decided normally among them; nothing an agent wrote was changed.
    f.decide("valid", Verdict::Approve, None).expect("the valid packet is decidable");
    assert!(f.view().report.is_valid());
    assert_eq!(std::fs::read_link(packets.join("symlink.json")).expect("link"), outside);
    assert_eq!(std::fs::read(packets.join("empty.json")).expect("file").len(), 0);
    assert_eq!(cases.len(), 35);
    assert_eq!(receipt_cases.len(), 6);
}

fn without_id() -> Value {
    let mut v = portable("placeholder", "agent-a");
    v.as_object_mut().expect("object").remove("packet_id");
    v
}

/// A packet whose `note` is `café` in Latin-1: one byte 0xE9, not UTF-8.
fn latin1_packet() -> Vec<u8> {
    let mut b = packet_with_raw("latin1", "note", "\"cafX\"");
    let at = b.windows(4).position(|w| w == b"cafX").expect("marker") + 3;
    b[at] = 0xe9;
    b
}

// ---- 2. files: lines of chain.jsonl --------------------------------------------------------------

// A hostile line appended to a spool's chain is a finding that names it; it never crashes or
// hangs verification, the genuine decision before it still counts, and nothing more is signed
// onto the chain until it is examined.
#[test]
fn hostile_chain_lines_are_findings_not_crashes() {
    let valid_record_text = |f: &Fixture| f.chain_lines().last().expect("a record").clone();
    type Line = Box<dyn Fn(&Fixture) -> Vec<u8>>;
    let cases: Vec<(&str, Line, Check, &str)> = vec![
        (
            "not UTF-8",
            Box::new(|_: &Fixture| b"{\"schema\":\"opentrustgraph/v0.1\xff\"}\n".to_vec()),
            Check::Parse,
            "not JSON",
        ),
        (
            "nested 100,000 deep",
            Box::new(|_: &Fixture| [vec![b'['; 100_000], b"\n".to_vec()].concat()),
            Check::Parse,
            "recursion limit",
        ),
        (
            "a duplicated key",
            Box::new(move |f: &Fixture| {
                let t = valid_record_text(f).replacen('{', r#"{"outcome":"success","#, 1);
                format!("{t}\n").into_bytes()
            }),
            Check::Parse,
            "duplicate key",
        ),
        (
            "a float beyond f64",
            Box::new(|_: &Fixture| b"{\"cost_usd\":1e400}\n".to_vec()),
            Check::Parse,
            "number out of range",
        ),
        ("NaN", Box::new(|_: &Fixture| b"{\"cost_usd\":NaN}\n".to_vec()), Check::Parse, "not JSON"),
        ("an empty line", Box::new(|_: &Fixture| b"\n".to_vec()), Check::Parse, "not JSON"),
        ("an array", Box::new(|_: &Fixture| b"[1,2,3]\n".to_vec()), Check::Parse, "not a JSON object"),
        (
            "a line over 1 MiB",
            Box::new(|_: &Fixture| [b"{\"x\":\"".to_vec(), vec![b'a'; (1 << 20) + 10], b"\"}\n".to_vec()].concat()),
            Check::Parse,
            "longer than",
        ),
        // A torn final line is not a finding but an interrupted append, set aside into a side
        // file (tests/durability.rs).
        (
            "an integer beyond 64 bits in a copied record",
            Box::new(move |f: &Fixture| {
                let t = valid_record_text(f).replacen("\"chain_index\":1", &format!("\"chain_index\":{HUGE_INT}"), 1);
                format!("{t}\n").into_bytes()
            }),
            Check::ChainIndex,
            "",
        ),
        (
            "escape sequences in a record's schema",
            Box::new(move |f: &Fixture| {
                let mut rec: Value = serde_json::from_str(&valid_record_text(f)).expect("record");
                rec["schema"] = json!("\u{1b}]52;c;cm0gLXJmIH4=\u{7}\u{202e}");
                format!("{}\n", warrant::protocol::canonical::to_canonical_string(&rec)).into_bytes()
            }),
            Check::RecordSchema,
            "unsupported record schema",
        ),
    ];
    for (case, line, check, expected) in &cases {
        let f = fixture();
        f.publish("done");
        f.publish("next");
        f.decide("done", Verdict::Approve, None).expect("genuine decision");
        let bytes = line(&f);
        let mut chain = std::fs::OpenOptions::new().append(true).open(f.spool.chain_path()).expect("chain");
        chain.write_all(&bytes).expect("append hostile line");
        drop(chain);
        let view = f.view();
        let hit = view.report.findings.iter().find(|x| x.index == Some(1) && x.check == *check);
        assert!(hit.is_some_and(|x| x.message.contains(expected)), "{case}: {:?}", view.report.findings);
        assert_eq!(view.decisions.get("done").map(|d| d.verdict), Some(Verdict::Approve), "{case}");
        let before = std::fs::read(f.spool.chain_path()).expect("chain");
        let err = f.decide("next", Verdict::Approve, None).expect_err(case);
        assert!(matches!(err, DecideError::ChainBroken(_) | DecideError::Chain(_)), "{case}: {err}");
        assert_eq!(std::fs::read(f.spool.chain_path()).expect("chain"), before, "{case}: the chain changed");
    }
    // chain.jsonl itself as a symlink, a FIFO or a directory: refused without following or blocking.
    for (case, plant) in [("symlink", 0), ("fifo", 1), ("directory", 2)] {
        let f = fixture();
        let path = f.spool.chain_path();
        match plant {
            0 => std::os::unix::fs::symlink(f.dir.path().join("elsewhere.jsonl"), &path).expect("symlink"),
            1 => assert!(Command::new("mkfifo").arg(&path).status().expect("mkfifo").success()),
            _ => std::fs::create_dir(&path).expect("dir"),
        }
        let err = spool::verify_chain(&f.spool, &f.pinned).expect_err(case);
        assert!(matches!(err, chain_file::ChainError::NotRegular { .. }), "{case}: {err}");
    }
    assert_eq!(cases.len(), 10);
}

// ---- 2. files: policy.toml, config.toml, pinned_keys.toml, keymap and theme files ------------------

/// Hostile contents for a TOML file, each with a reason the error must give (the caller checks
/// the file is named too). `key` is a key that file really has, for the cases that need one.
fn hostile_toml(key: &str) -> Vec<(&'static str, Put, String)> {
    vec![
        ("a FIFO", Put::Fifo, "not a regular file".into()),
        ("a directory", Put::Dir, "not a regular file".into()),
        ("over 1 MiB", Put::Bytes(vec![b'#'; (1 << 20) + 1]), "byte limit".into()),
        ("not UTF-8", Put::Bytes(b"# caf\xe9\n".to_vec()), "not UTF-8".into()),
        ("nested 100,000 deep", Put::Bytes([b"x = ".to_vec(), vec![b'['; 100_000]].concat()), String::new()),
        ("a duplicated key", Put::Bytes(format!("{key}\n{key}\n").into_bytes()), "duplicate key".into()),
        ("an integer beyond 64 bits", Put::Bytes(format!("x = {HUGE_INT}\n").into_bytes()), String::new()),
    ]
}

// policy.toml in the spool: every hostile file is an error naming the file and why, never a
// crash or a hang; NaN and infinite numbers fail the range checks; an empty file is no policy.
#[test]
fn hostile_policy_files_are_errors_naming_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("config");
    std::fs::create_dir_all(&config).expect("config");
    let mut cases = hostile_toml("strict = true");
    cases.extend([
        (
            "a NaN score cap",
            Put::Bytes(b"[agents.\"a\"]\nmax_score = nan\n".to_vec()),
            "max_score must be in [0, 1]".into(),
        ),
        (
            "an infinite score cap",
            Put::Bytes(b"[agents.\"a\"]\nmax_score = inf\n".to_vec()),
            "max_score must be in [0, 1]".into(),
        ),
        (
            "a NaN threshold",
            Put::Bytes(b"[thresholds.\"draft.compose\"]\nci_low_min = nan\nsamples_min = 1\n".to_vec()),
            "ci_low_min must be in [0, 1]".into(),
        ),
        ("a negative ladder ceiling", Put::Bytes(b"[ladder]\nauto_approve_up_to = -1\n".to_vec()), String::new()),
        ("an unknown key", Put::Bytes(b"[agents.\"a\"]\nmax_score = 0.5\nbonus = 1\n".to_vec()), "bonus".into()),
    ]);
    for (i, (case, what, expected)) in cases.iter().enumerate() {
        let root = dir.path().join(format!("spool-{i}"));
        std::fs::create_dir_all(&root).expect("spool");
        put(&root, std::ffi::OsStr::new("policy.toml"), what);
        let err = warrant::protocol::graduation::PolicySet::load(&config, Some(&root)).expect_err(case).to_string();
        assert!(err.contains("policy.toml") && err.contains(expected.as_str()), "{case}: {err}");
    }
    let root = dir.path().join("spool-empty");
    std::fs::create_dir_all(&root).expect("spool");
    std::fs::write(root.join("policy.toml"), "").expect("empty");
    warrant::protocol::graduation::PolicySet::load(&config, Some(&root)).expect("an empty policy.toml is no policy");
    assert_eq!(cases.len(), 12);
}

// config.toml, pinned_keys.toml, keymap.toml and a theme file: each hostile file stops the
// command with exit 2 and a message naming the file, before anything is read from the spool or
// shown; nothing hangs on a FIFO.
#[test]
fn hostile_config_files_stop_the_command_naming_the_file() {
    let mut runs = 0;
    #[allow(unused_mut)]
    let mut files: Vec<(&str, &str, Vec<&str>)> = vec![
        ("config.toml", "rescan_seconds = 5", vec!["list"]),
        ("pinned_keys.toml", "[[key]]\nprincipal = \"a\"\npublic_key = \"x\"\nprincipal = \"b\"", vec!["verify"]),
    ];
    #[cfg(feature = "console")]
    files.extend([
        ("keymap.toml", "[normal]\nquit = { keys = [\"q\"] }", vec!["console", "--read-only"]),
        ("themes/hostile.toml", "[base]\nfg = \"red\"", vec!["console", "--read-only", "--theme", "hostile"]),
    ]);
    for (file, key, args) in &files {
        let mut cases = hostile_toml(key);
        if *file == "config.toml" {
            cases.push((
                "a NaN rescan interval",
                Put::Bytes(b"rescan_seconds = nan\n".to_vec()),
                "rescan_seconds".into(),
            ));
            cases.push((
                "a negative rescan interval",
                Put::Bytes(b"rescan_seconds = -5\n".to_vec()),
                "rescan_seconds".into(),
            ));
            cases.push(("an unknown key", Put::Bytes(b"principle = \"alice\"\n".to_vec()), "principle".into()));
        }
        for (case, what, expected) in &cases {
            let e = Env::new();
            let path = e.config().join(file);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("config dir");
            std::fs::create_dir_all(e.spool().join("packets")).expect("spool");
            put(path.parent().expect("parent"), path.file_name().expect("name"), what);
            let o = e.run(args);
            runs += 1;
            assert_eq!(o.status.code(), Some(2), "{file}, {case}: {}", text(&o));
            let err = String::from_utf8_lossy(&o.stderr);
            let name = Path::new(file).file_name().and_then(|n| n.to_str()).expect("name");
            assert!(err.contains(name) && err.contains(expected.as_str()), "{file}, {case}: {err}");
            assert!(!err.contains("raw mode"), "{file}, {case}: the console got as far as the terminal: {err}");
            assert!(o.stdout.is_empty(), "{file}, {case}: {}", text(&o));
        }
    }
    assert_eq!(runs, if cfg!(feature = "console") { 31 } else { 17 });
}

// ---- 2. files: `warrant eval` request lines --------------------------------------------------------

// Each hostile request line gets an error response naming the problem, and the good request
// after it is still answered: one bad line never ends or poisons the session.
#[test]
fn hostile_eval_lines_get_errors_and_the_next_line_still_works() {
    let good = br#"{"op":"tg.can_execute","action_class":"draft.compose","id":"good"}"#;
    let cases: Vec<(&str, Vec<u8>, &str, &str)> = vec![
        ("not UTF-8", b"{\"op\":\"tg.can_execute\xff\"}".to_vec(), "parse_error", ""),
        ("nested 100,000 deep", vec![b'['; 100_000], "parse_error", "recursion limit"),
        ("a duplicated key", br#"{"op":"tg.can_execute","op":"otg.verify"}"#.to_vec(), "parse_error", "duplicate key"),
        (
            "a float beyond f64",
            br#"{"op":"tg.posterior","alpha":1e400}"#.to_vec(),
            "parse_error",
            "number out of range",
        ),
        (
            "an integer beyond 64 bits",
            format!(r#"{{"op":"tg.posterior","n":{HUGE_INT}}}"#).into_bytes(),
            "parse_error",
            "64-bit",
        ),
        (
            "an integer beyond 64 bits in a gate request",
            format!(r#"{{"op":"tg.can_execute","actionClass":"draft.response","context":{{"n":{HUGE_INT}}}}}"#)
                .into_bytes(),
            "parse_error",
            "64-bit",
        ),
        ("NaN", br#"{"op":"tg.posterior","alpha":NaN}"#.to_vec(), "parse_error", ""),
        ("Infinity", br#"{"op":"tg.posterior","alpha":Infinity}"#.to_vec(), "parse_error", ""),
        ("not an object", b"[\"tg.can_execute\"]".to_vec(), "invalid_request", "JSON object"),
        (
            "a line over 1 MiB",
            [b"{\"x\":\"".to_vec(), vec![b'a'; (1 << 20) + 1], b"\"}".to_vec()].concat(),
            "line_too_long",
            "",
        ),
        ("an escape sequence as the op", b"{\"op\":\"\\u001b]52;c;eA==\\u0007\"}".to_vec(), "", ""),
        ("a NUL byte", b"{\"op\":\0}".to_vec(), "parse_error", ""),
    ];
    let mut input = Vec::new();
    for (_, line, _, _) in &cases {
        input.extend_from_slice(line);
        input.push(b'\n');
        input.extend_from_slice(good);
        input.push(b'\n');
    }
    input.extend_from_slice(b"\n   \n"); // blank lines are skipped, not answered
    let evaluator = warrant::eval::Evaluator::new(warrant::protocol::graduation::PolicySet::builtin());
    let mut out = Vec::new();
    warrant::eval::run(&evaluator, &input[..], &mut out).expect("eval");
    let responses: Vec<Value> = out
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).expect("json"))
        .collect();
    assert_eq!(responses.len(), cases.len() * 2, "one response per request line");
    for ((case, _, code, expected), pair) in cases.iter().zip(responses.chunks(2)) {
        let err = &pair[0]["error"];
        assert!(err.is_object(), "{case}: {}", pair[0]);
        assert!(err["code"].as_str().is_some_and(|c| c.contains(code)), "{case}: {err}");
        assert!(err["message"].as_str().is_some_and(|m| m.contains(expected)), "{case}: {err}");
        assert_eq!(pair[1]["id"], "good", "{case}: the next line: {}", pair[1]);
        assert!(pair[1].get("error").is_none(), "{case}: the next line failed: {}", pair[1]);
    }
    // The same through the binary's stdin.
    let e = Env::new();
    let mut child =
        e.cmd(&["eval"]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("eval");
    let mut stdin = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().expect("eval");
    writer.join().expect("writer").expect("write");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let lines: Vec<&[u8]> = out.stdout.split(|&b| b == b'\n').filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), cases.len() * 2);
    assert_eq!(cases.len(), 12);
}

// ---- 2. files: the principal's private key ----------------------------------------------------------

// A private key that group or others may read, write or execute is refused by every command that
// loads it (as ssh refuses an unprotected key), before anything is signed or appended; so is a
// key that is not a regular file. 0600 and 0400 load.
#[test]
fn a_loose_private_key_is_refused_by_every_command_that_loads_it() {
    let e = Env::new();
    assert_eq!(
        e.run(&["propose", "--class", "draft.compose", "--agent", "agent-a", "--summary", "s", "--id", "p"])
            .status
            .code(),
        Some(0)
    );
    let key = e.config().join("principal.key");
    e.principal();
    let chmod = |mode: u32| std::fs::set_permissions(&key, std::fs::Permissions::from_mode(mode)).expect("chmod");
    #[allow(unused_mut)]
    let mut commands: Vec<Vec<&str>> = vec![
        vec!["approve", "--yes", "p"],
        vec!["refuse", "--yes", "p", "--reason", "r"],
        vec!["trust", "set", "nb-1", "trusted"],
        vec!["agent", "quarantine", "agent-a", "--reason", "r"],
        vec!["agent", "release", "agent-a"],
        vec!["agent", "kill", "agent-a", "--reason", "r"],
        vec!["agent", "elevate", "agent-a", "--ring", "2"],
        vec!["keys", "show"],
        vec!["keys", "export"],
    ];
    #[cfg(feature = "console")]
    commands.push(vec!["console"]);
    let refused = |args: &[&str], mode: u32| {
        let o = e.run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?} with mode {mode:o}: {}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("accessible by group or others") && err.contains(&format!("mode {mode:o}")),
            "{args:?}: {err}"
        );
        assert!(err.contains("chmod 600"), "{err}");
        assert!(!String::from_utf8_lossy(&o.stdout).contains("PUBLIC KEY"), "{args:?} printed a key");
    };
    chmod(0o640);
    for args in &commands {
        refused(args, 0o640);
    }
    for mode in [0o644, 0o604, 0o620, 0o602, 0o610, 0o601, 0o666, 0o777] {
        chmod(mode);
        refused(&["approve", "--yes", "p"], mode);
    }
    assert_eq!(e.chain(), "", "nothing was signed with a loose key");
    assert!(!e.spool().join("decisions/p.json").exists());
    for mode in [0o600, 0o400] {
        chmod(mode);
        assert_eq!(e.run(&["keys", "show"]).status.code(), Some(0), "mode {mode:o}");
    }
    // The key file replaced by a FIFO or a directory: refused, without hanging.
    let saved = std::fs::read(&key).expect("key");
    std::fs::remove_file(&key).expect("rm");
    assert!(Command::new("mkfifo").args(["-m", "600"]).arg(&key).status().expect("mkfifo").success());
    let o = e.run(&["approve", "--yes", "p"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a regular file"), "{}", text(&o));
    std::fs::remove_file(&key).expect("rm");
    std::fs::write(&key, saved).expect("restore");
    chmod(0o600);
    let o = e.run(&["approve", "--yes", "p"]);
    assert_eq!(o.status.code(), Some(0), "the restored key signs: {}", text(&o));
    // The library check itself.
    for (mode, ok) in [(0o600, true), (0o400, true), (0o700, true), (0o640, false), (0o604, false), (0o602, false)] {
        chmod(mode);
        let loaded = Principal::load(&key, "alice");
        assert_eq!(loaded.is_ok(), ok, "mode {mode:o}: {loaded:?}");
    }
    assert_eq!(commands.len(), if cfg!(feature = "console") { 10 } else { 9 });
}

// ---- 3. the terminal: command-line output ------------------------------------------------------------

/// Escape sequences (OSC 52 clipboard, OSC 8 hyperlink, CSI, 8-bit CSI), bidi overrides and
/// isolates, zero-width and tag characters.
const EVIL: &str = "\u{1b}]52;c;cm0gLXJmIH4=\u{7}\u{1b}]8;;https://evil.example\u{1b}\\link\u{1b}]8;;\u{1b}\\\u{1b}[2J\u{9b}31m\u{202e}txt.exe\u{2066}\u{200b}\u{feff}\u{e0041}\u{85}end";

fn assert_inert(what: &str, s: &str) {
    assert!(!s.chars().any(|c| unsafe_char(c) && c != '\n'), "{what}: unsafe character in {s:?}");
}

// `list`, `list --json`, `verify`, `verify --json` and error messages print agent-written text
// inert: escapes shown as visible pictures (`␛]52;…`), bidi and invisible characters as
// `⟨U+XXXX⟩`; JSON output escapes them as `\uXXXX`, so it still parses to exactly what the agent
// wrote.
#[test]
fn cli_output_shows_agent_text_inert() {
    let e = Env::new();
    e.principal();
    let packets = e.spool().join("packets");
    std::fs::create_dir_all(&packets).expect("packets");
    // An agent id with escapes is invalid (agent ids are safe ids), its reason inert.
    let agent = format!("agent{EVIL}");
    let summary = format!("Pay{EVIL}");
    let doc =
        warrant::protocol::packet::portable_packet("p-evilagent", "draft.compose", &agent, &summary, json!({}), AT);
    std::fs::write(packets.join("p-evilagent.json"), serde_json::to_vec(&doc).expect("json")).expect("write");
    let doc = warrant::protocol::packet::portable_packet(
        "p-evil",
        "draft.compose",
        "agent-e",
        &summary,
        json!({"body": EVIL}),
        AT,
    );
    std::fs::write(packets.join("p-evil.json"), serde_json::to_vec(&doc).expect("json")).expect("write");
    let mut bad = doc.clone();
    bad["packet_id"] = json!("p-bad");
    bad["decision"]["status"] = json!(format!("yes{EVIL}"));
    std::fs::write(packets.join("p-bad.json"), serde_json::to_vec(&bad).expect("json")).expect("write");
    std::fs::write(
        packets.join(format!("n{}.json", EVIL.replace('/', ""))),
        serde_json::to_vec(&without_id()).expect("json"),
    )
    .expect("hostile file name");

    let o = e.run(&["list"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let (out, err) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert_inert("list", &out);
    assert_inert("list stderr", &err);
    assert!(out.contains("Pay␛]52;c;cm0gLXJmIH4=␇") && out.contains("⟨U+202E⟩txt.exe⟨U+2066⟩"), "{out}");
    assert!(out.contains("⟨U+009B⟩31m") && out.contains("⟨U+E0041⟩"), "{out}");
    assert_eq!(out.lines().filter(|l| l.starts_with("invalid")).count(), 3, "{out}");
    assert!(out.lines().any(|l| l.starts_with("invalid   p-evilagent.json") && l.contains("not a safe id")), "{out}");

    let o = e.run(&["list", "--json"]);
    let raw = String::from_utf8_lossy(&o.stdout);
    assert_inert("list --json", &raw);
    assert!(raw.contains(r"\u202e") && raw.contains(r"\u009b") && raw.contains(r"\udb40\udc41"), "{raw}");
    let listed: Value = serde_json::from_str(&raw).expect("list --json parses");
    let p = listed["packets"].as_array().and_then(|a| a.iter().find(|p| p["packet_id"] == "p-evil")).expect("p-evil");
    assert_eq!(p["summary"], json!(summary), "the JSON carries exactly what the agent wrote");

    // An error quoting an invalid packet's reason.
    let o = e.run(&["approve", "--yes", "p-bad"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_inert("approve stderr", &String::from_utf8_lossy(&o.stderr));

    // A chain with a hostile record: verify names it, inert.
    e.run(&["approve", "--yes", "p-evil"]);
    chain_file::append(&e.spool().join("chain.jsonl"), |_| {
        let mut body = chain::new_record_body(
            &agent,
            "draft.compose",
            None,
            "success",
            "t",
            "suggest",
            AT,
            serde_json::Map::new(),
        );
        body.insert("schema".into(), json!(format!("opentrustgraph/{EVIL}")));
        Ok(body)
    })
    .expect("append");
    let o = e.run(&["verify"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_inert("verify", &err);
    assert!(err.contains("record 2: [record_schema]") && err.contains("]52;c;"), "{err}");
    let o = e.run(&["verify", "--json"]);
    let raw = String::from_utf8_lossy(&o.stdout);
    assert_inert("verify --json", &raw);
    let report: Value = serde_json::from_str(&raw).expect("verify --json parses");
    assert_eq!(report["first"]["check"], "record_schema", "{report}");
    assert!(report["first"]["message"].as_str().is_some_and(|m| m.contains("]52;c;")), "{report}");
    let o = e.run(&["trust", "show"]);
    assert_inert(
        "trust show",
        &format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr)),
    );
}

// ---- 3. the terminal: `inert` over any string -------------------------------------------------------

use proptest::prelude::*;

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

    // Whatever the input: no unsafe character survives, the output is bounded by the limit, at
    // most MAX_MARKS zero-width characters stand together, and safe text within the limit is
    // unchanged.
    #[test]
    fn inert_output_is_safe_and_bounded(
        s in proptest::collection::vec(proptest::prelude::any::<char>(), 0..300)
            .prop_map(|v| v.into_iter().collect::<String>()),
        max in 0usize..400,
    ) {
        use unicode_width::UnicodeWidthChar as _;
        let out = warrant::protocol::text::inert(&s, max);
        proptest::prop_assert!(!out.chars().any(unsafe_char), "{:?} -> {:?}", s, out);
        proptest::prop_assert!(out.chars().count() <= warrant::protocol::text::MAX_EXPANSION * s.chars().count().min(max) + 1);
        let mut run = 0;
        for c in out.chars() {
            run = if c.width() == Some(0) { run + 1 } else { 0 };
            proptest::prop_assert!(run <= warrant::protocol::text::MAX_MARKS, "{:?}", out);
        }
        let plain = s.chars().all(|c| !unsafe_char(c) && c.width() != Some(0));
        if plain && s.chars().count() <= max {
            proptest::prop_assert_eq!(&out, &s);
        }
    }

    // The hostile alphabet, densely: escapes, controls, bidi, marks.
    #[test]
    fn inert_neutralises_dense_hostile_text(
        picks in proptest::collection::vec(0usize..16, 0..500),
    ) {
        const ALPHABET: [&str; 16] = ["\u{1b}", "[", "]", "\u{7}", "\u{9b}", "\u{202e}", "\u{2067}", "\u{200d}",
            "\u{301}", "\u{36f}", "a", "\u{0}", "\u{7f}", "\u{85}", "\u{e0001}", "\u{fe0f}"];
        let s: String = picks.iter().map(|&i| ALPHABET[i]).collect();
        let out = warrant::protocol::text::inert(&s, usize::MAX);
        proptest::prop_assert!(!out.chars().any(unsafe_char), "{:?}", out);
        proptest::prop_assert!(!out.contains(char::from(0x1b)), "an escape survived");
    }
}
