//! Tampering as the console sees it: a real spool (real files, real Ed25519 keys, a signed
//! checkpoint), a random mutation of `chain.jsonl` (a changed byte, a deleted line, two lines
//! swapped, a forged `previous_hash` with a recomputed `entry_hash`), then the console's own
//! verification path ([`spool::verify_chain_from`] extending its cached verification, and at start
//! [`spool::checkpointed_chain_view`] then the whole chain), fed through `app::update` without a
//! terminal. The console must show, located, the first finding `warrant verify`
//! (`chain_file::verify_file`) reports; and a decision must be refused on it, naming that finding,
//! wherever the mutation is (the checkpointed prefix is trusted only while it hashes to the
//! checkpoint's `prefix_sha256`).
#![cfg(feature = "console")]

use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{Map, Value, json};
use std::sync::atomic::AtomicU64;
use warrant::console::app::{self, Action, ChainState, Mode, State};
use warrant::console::keymap::Keymap;
use warrant::protocol::chain::VerifyOptions;
use warrant::protocol::decision::{self, DecisionInput, Verdict};
use warrant::protocol::graduation::SourceType;
use warrant::protocol::graduation::receipt::{ReceiptInput, ReceiptOutcome, build_receipt};
use warrant::protocol::keys::{PinnedKeys, Principal};
use warrant::protocol::registry::CANONICAL;
use warrant::store::chain_file;
use warrant::store::spool::{self, Scanner, Spool};

fn principal() -> Principal {
    Principal::from_seed("alice", &[7u8; 32])
}

fn pins() -> PinnedKeys {
    let mut p = PinnedKeys::default();
    p.pin("alice", principal().verifying_key());
    p
}

/// One record: a signed decision (approve or refuse) or an agent's receipt.
fn record(i: usize, receipt: bool, approve: bool, class: usize) -> Map<String, Value> {
    let id = format!("done-{i}");
    let at = format!("2026-11-21T08:{:02}:{:02}Z", i / 60, i % 60);
    let class = CANONICAL[class % CANONICAL.len()].id;
    let agent = format!("agent-{}", i % 3);
    if receipt {
        let receipt = build_receipt(&ReceiptInput {
            receipt_id: &format!("r-{i}"),
            action_class: class,
            outcome: if approve { ReceiptOutcome::Execute } else { ReceiptOutcome::Correct },
            agent: &agent,
            packet_id: None,
            source_type: Some(SourceType::Receipt),
            created_at: &at,
            prev_hash: None,
            note: None,
            tool_call: None,
        });
        return spool::receipt_record_body(&receipt, ReceiptOutcome::Execute, None);
    }
    let hash = warrant::protocol::canonical::sha256_prefixed(id.as_bytes());
    let trace = format!("warrant:{id}");
    let input = DecisionInput {
        stands_in_for: &[],
        packet_id: &id,
        packet_hash: &hash,
        action_class: class,
        agent: &agent,
        trace_id: &trace,
        verdict: if approve { Verdict::Approve } else { Verdict::Refuse },
        reason: (!approve).then_some("not now"),
        decided_at: &at,
    };
    let signed = decision::sign_decision(&principal(), &input);
    decision::record_body(&input, &signed)
}

use crate::lines as support_lines;
use support_lines::line_spans;

#[derive(Debug, Clone)]
enum Mutation {
    /// Add `delta` to one byte of a line.
    Byte { line: Index, offset: Index, delta: u8 },
    /// Delete a line (never the last: a shorter chain verifies, only a checkpoint tells).
    Delete(Index),
    /// Swap two lines.
    Swap(Index, Index),
    /// Give a record another `previous_hash` and hash it again, so only its link is wrong.
    Forge { line: Index, hash: [u8; 32] },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<Index>(), any::<Index>(), 1..=255u8).prop_map(|(line, offset, delta)| Mutation::Byte {
            line,
            offset,
            delta
        }),
        any::<Index>().prop_map(Mutation::Delete),
        (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Mutation::Swap(a, b)),
        (any::<Index>(), any::<[u8; 32]>()).prop_map(|(line, hash)| Mutation::Forge { line, hash }),
    ]
}

/// Applies the mutation; returns the new bytes and the first byte it changed (`None` when it
/// changed nothing).
fn mutate(bytes: &[u8], spans: &[(usize, usize)], m: &Mutation) -> (Vec<u8>, Option<usize>) {
    let n = spans.len();
    let lines: Vec<Vec<u8>> = spans.iter().map(|&(s, e)| bytes[s..e].to_vec()).collect();
    let out = match m {
        Mutation::Byte { line, offset, delta } => {
            let (s, e) = spans[line.index(n)];
            let at = s + offset.index(e - s);
            let mut out = bytes.to_vec();
            out[at] = out[at].wrapping_add(*delta);
            out
        }
        Mutation::Delete(i) => {
            let mut l = lines;
            l.remove(i.index(n - 1));
            l.concat()
        }
        Mutation::Swap(a, b) => {
            let (i, mut j) = (a.index(n), b.index(n));
            if i == j {
                j = (i + 1) % n;
            }
            let mut l = lines;
            l.swap(i, j);
            l.concat()
        }
        Mutation::Forge { line, hash } => {
            let i = line.index(n);
            let mut rec: Map<String, Value> = serde_json::from_slice(&lines[i]).expect("record");
            rec.insert("previous_hash".into(), json!(format!("sha256:{}", warrant::protocol::canonical::hex(hash))));
            rec.remove("entry_hash");
            let h = warrant::protocol::canonical::prefixed(&warrant::protocol::canonical::canonical_digest_without(
                &rec,
                "entry_hash",
            ));
            rec.insert("entry_hash".into(), json!(h));
            let mut l = lines;
            l[i] = warrant::protocol::canonical::to_canonical_vec(&Value::Object(rec));
            l[i].push(b'\n');
            l.concat()
        }
    };
    let first = out.iter().zip(bytes).position(|(a, b)| a != b).or((out.len() != bytes.len()).then_some(0));
    (out, first)
}

fn fresh_state() -> State {
    State::new("/tmp/spool".into(), Some("alice".into()), None, false, Keymap::default_map(), 1_795_251_600.0)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn the_console_shows_the_finding_warrant_verify_reports(
        kinds in proptest::collection::vec((any::<bool>(), any::<bool>(), 0..64usize), 3..9),
        checkpoint_at in any::<Index>(),
        m in mutation(),
    ) {
        let dir = tempfile::tempdir().expect("tempdir");
        let spool = Spool::new(dir.path().join("spool")).with_checkpoint_copies(dir.path().join("checkpoints"));
        spool.ensure().expect("spool");
        let path = spool.chain_path();
        for (i, (receipt, approve, class)) in kinds.iter().enumerate() {
            let body = record(i, *receipt, *approve, *class);
            chain_file::append(&path, |_| Ok(body)).expect("append");
        }
        let bytes = std::fs::read(&path).expect("read");
        let spans = line_spans(&bytes);
        // The principal's checkpoint after record k (1-based), as a decision would leave it.
        let k = checkpoint_at.index(spans.len()) + 1;
        let head: Value = serde_json::from_slice(&bytes[spans[k - 1].0..spans[k - 1].1]).expect("record");
        let cp = warrant::protocol::checkpoint::sign(
            &principal(),
            k as u64,
            head["entry_hash"].as_str().expect("hash"),
            spans[k - 1].1 as u64,
            &warrant::protocol::canonical::sha256_prefixed(&bytes[..spans[k - 1].1]),
            "2026-11-21T08:59:00Z",
        );
        warrant::store::checkpoint_files::write(&spool, &cp).expect("checkpoint");
        let pinned = pins();
        let progress = AtomicU64::new(0);

        // The console verified the clean chain whole.
        let clean = spool::verify_chain_from(&spool, &pinned, None, &progress).expect("verify");
        prop_assert!(clean.view.report.is_valid(), "{:?}", clean.view.report.findings);
        prop_assert_eq!(clean.view.report.total, spans.len());
        let mut cached = fresh_state();
        app::update(&mut cached, Action::ChainVerified(Box::new(clean.view.clone())));
        let valid = matches!(cached.chain, ChainState::Valid { .. });
        prop_assert!(valid, "{:?}", cached.chain);

        let (mutated, first_changed) = mutate(&bytes, &spans, &m);
        prop_assume!(first_changed.is_some());
        // A changed final newline makes the last line a torn append, which is not a finding but
        // set aside on open (tests/durability.rs, with the checkpoint that then reports the
        // chain shorter); tests/properties.rs checks that `verify` reports it whole.
        prop_assume!(mutated.last() == Some(&b'\n'));
        std::fs::write(&path, &mutated).expect("write");
        let opts = VerifyOptions { pinned: Some(&pinned), strict_signatures: true };
        let expected = chain_file::verify_file(&path, opts).expect("verify_file");
        let expected = expected.first().cloned().expect("the mutation is a finding");

        // (a) The running console verifies again, from its cache.
        let again = spool::verify_chain_from(&spool, &pinned, Some(&clean), &progress).expect("verify");
        app::update(&mut cached, Action::ChainVerified(Box::new(again.view)));
        match &cached.chain {
            ChainState::Broken { first, .. } => prop_assert_eq!(first, &expected),
            other => prop_assert!(false, "the console shows {:?}, warrant verify {}", other, expected),
        }
        prop_assert_eq!(&cached.mode, &Mode::ChainAlert);

        // (b) A console starting on the mutated spool: the checkpointed tail first, then the
        // whole chain in the background.
        let mut started = fresh_state();
        if let Some(view) = spool::checkpointed_chain_view(&spool, &pinned) {
            app::update(&mut started, Action::ChainCheckpointed(Box::new(view)));
        }
        let whole = spool::verify_chain_from(&spool, &pinned, None, &progress).expect("verify");
        app::update(&mut started, Action::ChainVerified(Box::new(whole.view)));
        match &started.chain {
            ChainState::Broken { first, .. } => prop_assert_eq!(first, &expected),
            other => prop_assert!(false, "the console shows {:?}, warrant verify {}", other, expected),
        }

        // (c) A decision is refused on it, naming the same finding, wherever the mutation is: the
        // checkpointed prefix is trusted only while its bytes hash to the checkpoint's
        // `prefix_sha256`.
        {
            let doc = warrant::protocol::packet::portable_packet(
                "p-new", "email.send.external", "agent-1", "a new packet", json!({}), "2026-11-21T08:59:30Z",
            );
            spool.publish(&spool.packets_dir(), "p-new", &doc).expect("publish");
            let snap = Scanner::new().scan(&spool).expect("scan");
            let entry = snap.packet("p-new").expect("packet");
            let result = spool::decide(
                &spool, &principal(), &pinned, &entry.packet, Verdict::Refuse, Some("no"), "2026-11-21T09:00:00Z",
            );
            match result {
                Err(spool::DecideError::ChainBroken(why)) => prop_assert_eq!(why, expected.to_string()),
                // The last line itself no longer parses: the append refuses before verifying.
                Err(spool::DecideError::Chain(chain_file::ChainError::BadTail { .. })) => {
                    prop_assert_eq!(expected.index, Some(spans.len() - 1), "{}", expected);
                }
                other => prop_assert!(false, "decided on a tampered chain: {:?}", other.map(|d| d.appended.chain_index)),
            }
        }
    }
}
