//! Approve as corrected (issue 35) on the command line: `warrant approve ID --correct FILE|-`
//! prints the difference and signs the corrected action into the approval; `propose --wait`
//! prints what may run and exits 9; the correction is the class's evidence (`minor_edit` or
//! `heavy_rewrite` by the size of the edit) and the audit shows it.

use crate::cli_env;
use cli_env::{Env, text};
use serde_json::{Value, json};
use std::io::Write as _;
use std::process::Stdio;
use std::time::{Duration, Instant};
use warrant::store::prelude::*;

/// A portable packet `id` proposing `action` for `email.send.external`, with an agent waiting on
/// it (`propose --wait 60`); returns the waiting process.
fn propose_waiting(e: &Env, id: &str, action: &Value) -> std::process::Child {
    let payload = e.dir.path().join(format!("{id}.payload.json"));
    std::fs::write(&payload, action.to_string()).expect("payload");
    let child = e
        .cmd(&[
            "propose",
            "--class",
            "email.send.external",
            "--agent",
            "scribe",
            "--summary",
            "send the quote",
            "--id",
            id,
            "--payload",
            payload.to_str().expect("utf-8"),
            "--wait",
            "60",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("propose");
    let path = e.spool().join("packets").join(format!("{id}.json"));
    let t = Instant::now();
    while !path.exists() {
        assert!(t.elapsed() < Duration::from_secs(20), "{id} was never published");
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

/// `warrant approve --yes ID --correct -` with `correction` on standard input.
fn approve_corrected(e: &Env, id: &str, correction: &Value) -> std::process::Output {
    let mut child = e
        .cmd(&["approve", "--yes", id, "--correct", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("approve");
    child.stdin.take().expect("stdin").write_all(correction.to_string().as_bytes()).expect("write");
    child.wait_with_output().expect("approve")
}

#[test]
fn the_agent_waiting_gets_the_corrected_action_and_the_correction_is_evidence_and_audited() {
    let e = Env::new();
    let body = "Thanks for the quote of 1,200 EUR; we accept the terms and will sign on Monday.";
    let proposed = json!({"to": "bob@example.com", "subject": "Quote", "body": body});
    let waiting = propose_waiting(&e, "q-1", &proposed);
    let fixed = json!({"to": "rob@example.com", "subject": "Quote", "body": body});
    let o = approve_corrected(&e, "q-1", &fixed);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    for line in [r#"-   "to": "bob@example.com""#, r#"+   "to": "rob@example.com""#, r#"    "subject": "Quote","#] {
        assert!(out.lines().any(|l| l == line), "{line:?} in the difference: {out}");
    }
    let o = waiting.wait_with_output().expect("propose --wait");
    assert_eq!(o.status.code(), Some(9), "approved as corrected: {}", text(&o));
    let printed: Vec<&str> = std::str::from_utf8(&o.stdout).expect("utf-8").lines().collect();
    assert_eq!(printed.len(), 2, "the id, then the corrected action: {printed:?}");
    assert_eq!(serde_json::from_str::<Value>(printed[1]).expect("JSON"), fixed, "what may run is the correction");
    // `check-preconditions q-1 && run` never runs the proposal the principal corrected.
    let o = e.run(&["check-preconditions", "q-1"]);
    assert_eq!(o.status.code(), Some(9), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("rob@example.com"), "{}", text(&o));

    // A rewrite of most of the message is a heavy one.
    let waiting = propose_waiting(&e, "q-2", &proposed);
    let rewritten = json!({"to": "bob@example.com", "subject": "Quote", "body": "We decline, sorry."});
    let o = approve_corrected(&e, "q-2", &rewritten);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("approved as corrected (heavy_rewrite"), "{}", text(&o));
    assert_eq!(waiting.wait_with_output().expect("wait").status.code(), Some(9));

    // A correction equal to the proposal (members in another order) is an ordinary approval.
    let waiting = propose_waiting(&e, "q-3", &proposed);
    let same = json!({"body": body, "subject": "Quote", "to": "bob@example.com"});
    let o = approve_corrected(&e, "q-3", &same);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("an ordinary approval"), "{}", text(&o));
    assert_eq!(waiting.wait_with_output().expect("wait").status.code(), Some(0));

    // The chain's evidence for the class: one of each, by the principal.
    let chain = std::fs::read_to_string(e.spool().join("chain.jsonl")).expect("chain");
    let labels: Vec<String> = chain
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("record"))
        .filter_map(|r| r["metadata"]["tg_receipt"]["label"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(labels, ["minor_edit", "heavy_rewrite", "approved"], "{chain}");

    // The posterior moves by the spec's weights: +0.35 and −0.55 for the corrections, +0.85
    // for the approval, from Beta(2,2) (positive evidence adds to α, negative to β).
    let pinned = warrant::protocol::keys::PinnedKeys::load(&e.config()).expect("pins");
    let view =
        warrant::store::spool::verify_chain(&warrant::store::spool::Spool::new(e.spool()), &pinned).expect("verify");
    let class = "email.send.external";
    let today = time::OffsetDateTime::now_utc().date();
    let threshold = warrant::protocol::graduation::policy::DEFAULT_THRESHOLD;
    let p = warrant::protocol::graduation::Posterior::of(class, view.evidence.rows_of(class), threshold, today);
    assert!((p.alpha - (2.0 + 0.35 + 0.85)).abs() < 1e-9, "α {}", p.alpha);
    assert!((p.beta - (2.0 + 0.55)).abs() < 1e-9, "β {}", p.beta);

    // The audit names the corrections and what was approved, in text and as JSON.
    let o = e.run(&["audit"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let audit = String::from_utf8_lossy(&o.stdout);
    assert!(audit.contains(r#"as corrected (minor_edit, "#) && audit.contains("rob@example.com"), "{audit}");
    // With the difference, as the packet proposed it (still in the spool).
    assert!(audit.lines().any(|l| l == r#"    -   "to": "bob@example.com""#), "{audit}");
    assert!(audit.lines().any(|l| l == r#"    +   "to": "rob@example.com""#), "{audit}");
    let o = e.run(&["audit", "--json"]);
    let entries: Vec<Value> =
        String::from_utf8_lossy(&o.stdout).lines().map(|l| serde_json::from_str(l).expect("JSON")).collect();
    let corrected: Vec<&Value> = entries.iter().filter(|x| !x["corrected"].is_null()).collect();
    assert_eq!(corrected.len(), 2, "{entries:#?}");
    assert_eq!(corrected[0]["corrected"]["action"], fixed);
    assert_eq!(corrected[0]["decision"], json!("approve"));
    let o = e.run(&["verify"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}
