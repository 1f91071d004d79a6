//! The refusal of a timed-out packet signed as a *system decision* (`"system":
//! "timeout"` in the signed document, `policy.toml [timeouts] sign_refusal = true`). On real
//! files and real Ed25519 keys: it verifies and decides its packet, it is never evidence (the
//! class's posterior does not move, while a person's refusal does), the audit says the system
//! decided it, and a `system` member on an approval, or an unknown one, does not verify.

use serde_json::{Map, Value, json};
use warrant::audit::How;
use warrant::protocol::chain;
use warrant::protocol::decision::{self, DecisionError, DecisionInput, SignedDecision, SystemCause, Verdict};
use warrant::protocol::graduation::Posterior;
use warrant::protocol::graduation::policy::DEFAULT_THRESHOLD;
use warrant::protocol::keys::Principal;
use warrant::store::chain_file;
use warrant::store::prelude::*;
use warrant::store::spool::{self, DecideError, Scanner};

const AT: &str = "2026-11-21T09:00:00Z";
const LATER: &str = "2026-11-21T09:10:00Z";
const CLASS: &str = "draft.compose";
const REASON: &str = "timed out after 10m undecided (policy.toml [timeouts]): a system decision, no person refused it";

use crate::signed_spool;
use signed_spool::Fixture;

fn fixture() -> Fixture {
    signed_spool::fixture_with_seed(9)
}

/// This file's helpers on the shared fixture (a trait: other files add their own).
trait Helpers {
    fn publish(&self, id: &str);
    fn packet(&self, id: &str) -> std::sync::Arc<warrant::protocol::packet::Packet>;
    fn decide(&self, id: &str, verdict: Verdict, reason: Option<&str>) -> Result<spool::Decided, DecideError>;
    fn time_out(&self, id: &str) -> Result<spool::Decided, DecideError>;
    fn view(&self) -> spool::ChainView;
}

impl Helpers for Fixture {
    fn publish(&self, id: &str) {
        let doc = json!({
            "type": "trust_graduation_approval_packet", "packet_id": id, "agent": "agent-a", "action_class": CLASS,
            "proposed_action": {"text": "hello"},
            "decision": {"status": "review_required", "action_class": CLASS, "reason": "test"},
            "external_actions": 0
        });
        self.spool.publish(&self.spool.packets_dir(), id, &doc).expect("publish");
    }
    fn packet(&self, id: &str) -> std::sync::Arc<warrant::protocol::packet::Packet> {
        let snap = Scanner::new().scan(&self.spool).expect("scan");
        std::sync::Arc::clone(&snap.packet(id).unwrap_or_else(|| panic!("no packet {id}: {:?}", snap.invalid)).packet)
    }
    fn decide(&self, id: &str, verdict: Verdict, reason: Option<&str>) -> Result<spool::Decided, DecideError> {
        spool::decide(&self.spool, &self.principal, &self.pinned, &self.packet(id), verdict, reason, AT)
    }
    fn time_out(&self, id: &str) -> Result<spool::Decided, DecideError> {
        spool::decide_system(
            &self.spool,
            &self.principal,
            &self.pinned,
            &self.packet(id),
            SystemCause::Timeout,
            REASON,
            LATER,
        )
    }
    fn view(&self) -> spool::ChainView {
        let view = spool::verify_chain(&self.spool, &self.pinned).expect("verify");
        assert!(view.report.is_valid(), "{:?}", view.report.findings);
        view
    }
}

fn posterior(view: &spool::ChainView) -> Posterior {
    let today = time::macros::date!(2026 - 11 - 21);
    Posterior::of(CLASS, view.evidence.rows_of(CLASS), DEFAULT_THRESHOLD, today)
}

// A system refusal is a signed, verifiable decision: it decides the packet (the chain's decisions,
// the decision file the hook reads) and cannot be decided over; but it is no evidence: the
// class's posterior is what it was, where a person's refusal moves it. The audit says so.
#[test]
fn a_system_refusal_decides_the_packet_but_is_no_evidence() {
    let f = fixture();
    for id in ["p-ok", "p-late", "p-person"] {
        f.publish(id);
    }
    f.decide("p-ok", Verdict::Approve, None).expect("approve");
    let before = f.view();
    assert_eq!(before.evidence.count(CLASS), 1);

    let d = f.time_out("p-late").expect("system refusal");
    assert_eq!(d.signed.document["system"], json!("timeout"));
    assert_eq!(d.signed.document["decision"], json!("refuse"));
    assert_eq!(d.signed.document["reason"], json!(REASON));
    let record: Map<String, Value> = d.appended.record.as_object().cloned().expect("record");
    assert_eq!(decision::check_record_signature(&record, &f.pinned), Ok(true));

    let after = f.view();
    assert_eq!(after.report.signatures_verified, 2);
    let decided = &after.decisions["p-late"];
    assert_eq!((decided.verdict, decided.system), (Verdict::Refuse, Some(SystemCause::Timeout)));
    assert_eq!(decided.reason.as_deref(), Some(REASON));
    assert_eq!(after.decisions["p-ok"].system, None);
    // No evidence row, no posterior moved.
    assert_eq!(after.evidence.count(CLASS), 1, "a timeout is not the principal's refusal");
    assert_eq!(posterior(&after), posterior(&before));

    // The hook's decision file verifies: the agent is told it was refused.
    let file: Value =
        serde_json::from_slice(&std::fs::read(f.spool.decision_path("p-late")).expect("decision file")).expect("json");
    let v = decision::verify_decision_file(&file, "p-late", Some(&f.packet("p-late").content_hash), &f.pinned)
        .expect("the decision file verifies");
    assert_eq!((v.verdict, v.reason.as_deref()), (Verdict::Refuse, Some(REASON)));

    // Judged again from the chain (a hook or the gateway), the agent is told `timeout`.
    let config = f.dir.path().join("config");
    std::fs::create_dir_all(&config).expect("config dir");
    f.pinned.save(&config).expect("pins");
    let governor = warrant::govern::Governor::open(f.spool.clone(), &config).expect("governor");
    match governor.judge("p-late").expect("judge").1 {
        warrant::govern::Outcome::Deny { status, reason, .. } => {
            assert_eq!(status, "timeout");
            assert!(reason.contains("was not decided in time") && reason.contains(REASON), "{reason}");
        }
        other => panic!("{other:?}"),
    }

    // Decided once: neither the console again nor the principal can decide it over.
    assert!(matches!(f.time_out("p-late"), Err(DecideError::AlreadyDecided { .. })));
    assert!(matches!(f.decide("p-late", Verdict::Approve, None), Err(DecideError::AlreadyDecided { .. })));

    // A person's refusal of the same class is evidence, and moves the posterior.
    f.decide("p-person", Verdict::Refuse, Some("wrong tone")).expect("refuse");
    let person = f.view();
    assert_eq!(person.evidence.count(CLASS), 2);
    assert_ne!(posterior(&person), posterior(&before));
    assert_eq!(person.decisions["p-person"].system, None);

    // The audit shows who decided what: the system for the timeout, a person for the rest.
    let (report, entries) = warrant::audit::audit_chain(&f.spool, &f.pinned).expect("audit");
    assert!(report.is_valid());
    let how = |id: &str| entries.iter().find(|e| e.packet_id.as_deref() == Some(id)).map(|e| e.how.clone());
    assert_eq!(how("p-late"), Some(How::System { cause: "timeout".into(), record: None }));
    assert_eq!(how("p-person"), Some(How::Person { record: None }));
    let late = entries.iter().find(|e| e.packet_id.as_deref() == Some("p-late")).expect("entry");
    assert_eq!(late.to_json()["how"], json!({"by": "system", "system": "timeout", "record": null}));
    assert!(late.how.words().contains("no person decided"), "{}", late.how.words());
}

fn input<'a>(id: &'a str, hash: &'a str, verdict: Verdict) -> DecisionInput<'a> {
    DecisionInput {
        stands_in_for: &[],
        packet_id: id,
        packet_hash: hash,
        action_class: CLASS,
        agent: "agent-a",
        trace_id: "t",
        verdict,
        reason: Some(REASON),
        decided_at: AT,
    }
}

/// The principal's genuine signature over the decision of `input` with `system` set to `cause`
/// (what a buggy or malicious signer could produce).
fn signed_with(principal: &Principal, input: &DecisionInput<'_>, cause: Value) -> SignedDecision {
    let mut document = decision::decision_document(input, &principal.name, &principal.fingerprint());
    document["system"] = cause;
    let signature = decision::sign_document(principal, &document);
    SignedDecision { document, signature }
}

fn file_of(signed: &SignedDecision) -> Value {
    let appended =
        chain::Appended { chain_index: 1, entry_hash: format!("sha256:{}", "00".repeat(32)), record: Value::Null };
    decision::decision_file(signed, &appended)
}

// A system decision only ever refuses, and its cause is one warrant knows: an approval carrying
// `system`, or an unknown cause, does not verify (as a chain record or as a decision file), even
// under the principal's genuine signature; such a record in the chain decides nothing.
#[test]
fn a_system_member_on_an_approval_or_an_unknown_cause_does_not_verify() {
    let f = fixture();
    f.publish("p-x");
    let hash = f.packet("p-x").content_hash.clone();
    let (approve, refuse) = (input("p-x", &hash, Verdict::Approve), input("p-x", &hash, Verdict::Refuse));

    // The signer itself refuses to make a system approval.
    assert!(decision::sign_system_decision(&f.principal, &approve, SystemCause::Timeout).is_err());
    let good = decision::sign_system_decision(&f.principal, &refuse, SystemCause::Timeout).expect("refusal");
    assert_eq!(decision::check_record_signature(&decision::record_body(&refuse, &good), &f.pinned), Ok(true));
    assert_eq!(decision::system_of(&good.document), Ok(Some(SystemCause::Timeout)));

    let cases = [
        ("an approval", &approve, json!("timeout"), "not a refusal"),
        ("an unknown cause", &refuse, json!("nap"), "unknown system cause"),
        ("a cause that is not a string", &refuse, json!(true), "unknown system cause"),
        ("an empty cause", &refuse, json!(""), "unknown system cause"),
    ];
    for (case, input, cause, why) in cases {
        let signed = signed_with(&f.principal, input, cause);
        let err = decision::check_record_signature(&decision::record_body(input, &signed), &f.pinned)
            .expect_err(case)
            .to_string();
        assert!(err.contains(why), "{case}: {err}");
        match decision::verify_decision_file(&file_of(&signed), "p-x", Some(&hash), &f.pinned) {
            Err(DecisionError::Malformed(m)) => assert!(m.contains(why), "{case}: {m}"),
            other => panic!("{case}: {other:?}"),
        }
    }

    // In the chain, the approval marked as the system's is a finding and decides nothing.
    let forged = signed_with(&f.principal, &approve, json!("timeout"));
    chain_file::append(&f.spool.chain_path(), |_| Ok(decision::record_body(&approve, &forged))).expect("append");
    let view = spool::verify_chain(&f.spool, &f.pinned).expect("verify");
    assert!(!view.report.is_valid(), "an approval marked as the system's must not verify");
    assert!(view.decisions.is_empty(), "{:?}", view.decisions);
    assert_eq!(view.evidence.count(CLASS), 0);
}
