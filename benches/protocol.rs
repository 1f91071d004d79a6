#![allow(missing_docs)] // criterion_group! generates an undocumented function.
//! Criterion benchmarks of the protocol core: canonical hashing of a record, chain
//! verification, packet parsing, and decision signing and verification.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Value, json};
use std::hint::black_box;
use warrant::protocol::chain::{self, ChainHead, VerifyOptions};
use warrant::protocol::decision::{self, DecisionInput, Verdict};
use warrant::protocol::keys::{PinnedKeys, Principal};
use warrant::store::chain_file;

fn input(i: u64, id: &str, hash: &str) -> DecisionInput<'static> {
    // Leak small strings: benchmark set-up only.
    let id: &'static str = Box::leak(id.to_owned().into_boxed_str());
    let hash: &'static str = Box::leak(hash.to_owned().into_boxed_str());
    DecisionInput {
        stands_in_for: &[],
        packet_id: id,
        packet_hash: hash,
        action_class: "email.send.external",
        agent: "agent-bench",
        trace_id: id,
        verdict: if i.is_multiple_of(2) { Verdict::Approve } else { Verdict::Refuse },
        reason: Some("benchmark"),
        decided_at: "2026-11-21T09:00:00Z",
    }
}

fn build_chain(principal: &Principal, n: u64) -> Vec<Value> {
    let mut head = ChainHead { last_index: 0, last_hash: None };
    let mut out = Vec::with_capacity(n as usize);
    for i in 0..n {
        let id = format!("bench-{i}");
        let inp = input(i, &id, &warrant::protocol::canonical::sha256_prefixed(id.as_bytes()));
        let signed = decision::sign_decision(principal, &inp);
        let a = chain::seal(decision::record_body(&inp, &signed), &head);
        head = ChainHead { last_index: a.chain_index, last_hash: Some(a.entry_hash) };
        out.push(a.record);
    }
    out
}

fn benches(c: &mut Criterion) {
    let principal = Principal::from_seed("bench", &[9; 32]);
    let mut pins = PinnedKeys::default();
    pins.pin("bench", principal.verifying_key());
    let records = build_chain(&principal, 1000);

    let Value::Object(rec) = &records[10] else { unreachable!() };
    let bytes = warrant::protocol::canonical::to_canonical_vec(&records[10]).len() as u64;
    let mut g = c.benchmark_group("canonical");
    g.throughput(Throughput::Bytes(bytes));
    g.bench_function("entry_hash of one decision record", |b| {
        b.iter(|| warrant::protocol::canonical::canonical_digest_without(black_box(rec), "entry_hash"))
    });
    g.finish();

    let mut g = c.benchmark_group("chain");
    g.throughput(Throughput::Elements(records.len() as u64));
    g.bench_function("verify 1000 records, hashes only", |b| {
        b.iter(|| chain::verify_records(black_box(&records), VerifyOptions::default()))
    });
    g.bench_function("verify 1000 records with signatures", |b| {
        b.iter(|| {
            chain::verify_records(black_box(&records), VerifyOptions { pinned: Some(&pins), strict_signatures: true })
        })
    });
    let text: String = records.iter().map(|r| warrant::protocol::canonical::to_canonical_string(r) + "\n").collect();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("chain.jsonl");
    std::fs::write(&path, &text).expect("write");
    g.throughput(Throughput::Bytes(text.len() as u64));
    g.bench_function("read and verify chain.jsonl of 1000 records", |b| {
        b.iter(|| {
            chain_file::read_chain(black_box(&path))
                .expect("read")
                .verify(VerifyOptions { pinned: Some(&pins), strict_signatures: true })
        })
    });
    g.finish();

    // The scale spool's mix (`warrant generate-spool`): receipts, one signed decision every 50
    // records, verified from the file's bytes by the parallel byte path `warrant verify` uses.
    let spool = warrant::store::spool::Spool::new(dir.path().join("scale"));
    let spec = warrant::scale::GenerateSpec { records: 10_000, pending: 0, ..Default::default() };
    let generated =
        warrant::scale::generate(&spool, &principal, &spec, time::OffsetDateTime::now_utc()).expect("generate");
    let mut g = c.benchmark_group("chain");
    g.throughput(Throughput::Bytes(generated.bytes));
    g.bench_function("verify_file, 10,000 generated records (receipts, a signed decision every 50)", |b| {
        b.iter(|| {
            let report = chain_file::verify_file(
                black_box(&spool.chain_path()),
                VerifyOptions { pinned: Some(&pins), strict_signatures: true },
            )
            .expect("verify");
            assert!(report.is_valid() && report.total == 10_000);
        })
    });
    g.finish();

    let packet = serde_json::to_vec(&json!({
        "type": "trust_graduation_approval_packet", "packet_id": "p-1", "agent": "scribe", "summary": "Quote",
        "action_class": "email.send.external",
        "proposed_action": {"to": "dana@northwind.example", "subject": "Quote", "body": "Hi Dana,\nAttached is the quote."},
        "decision": {"status": "review_required", "action_class": "email.send.external", "reason": "needs approval"},
        "external_actions": 0, "created_at": "2026-11-21T09:00:00Z"
    }))
    .expect("json");
    let mut g = c.benchmark_group("packet");
    g.throughput(Throughput::Bytes(packet.len() as u64));
    g.bench_function("parse and validate a portable packet", |b| {
        b.iter(|| warrant::protocol::packet::parse_packet(black_box(&packet), "p-1"))
    });
    g.finish();

    let inp = input(0, "p-1", &warrant::protocol::canonical::sha256_prefixed(b"p-1"));
    let signed = decision::sign_decision(&principal, &inp);
    let mut g = c.benchmark_group("decision");
    g.bench_function("sign", |b| b.iter(|| decision::sign_decision(black_box(&principal), black_box(&inp))));
    g.bench_function("verify against pinned keys", |b| {
        b.iter(|| decision::verify_document(black_box(&signed.document), &signed.signature, &pins))
    });
    g.finish();
}

fn graduation(c: &mut Criterion) {
    use warrant::protocol::graduation::evidence::{EvidenceIndex, EvidenceRow, SourceType};
    use warrant::protocol::graduation::gate::{AgentStanding, GateRequest, can_execute};
    use warrant::protocol::graduation::policy::PolicySet;
    use warrant::protocol::graduation::posterior::Posterior;
    let policies = PolicySet::builtin();
    // 40 rows for each of the two classes decided below (approvals with receipts, dated).
    let rows: Vec<EvidenceRow> = ["draft.response", "email.send.external"]
        .into_iter()
        .flat_map(|class| {
            (0..40).map(move |i| {
                let date = format!("2026-11-{:02}", 1 + i % 20);
                EvidenceRow::new(class, "approved", Some(SourceType::Receipt), Some(date))
            })
        })
        .collect();
    let index = EvidenceIndex::new(&rows);
    let context = serde_json::json!({"requestedBy": "scribe"});
    let now = time::macros::datetime!(2026-11-21 09:00 UTC);
    fn request<'a>(class: &'a str, context: &'a serde_json::Value, evidence: &'a EvidenceIndex) -> GateRequest<'a> {
        GateRequest {
            action_class: class,
            context,
            approval: None,
            evidence,
            workspace: "local",
            now: time::macros::datetime!(2026-11-21 09:00 UTC),
            agent: AgentStanding::Active,
            chain_intact: true,
        }
    }
    let mut g = c.benchmark_group("gate");
    g.throughput(Throughput::Elements(1));
    for class in ["draft.response", "email.send.external"] {
        g.bench_function(format!("can_execute {class}, 40 evidence rows"), |b| {
            b.iter(|| can_execute(black_box(&policies), &request(black_box(class), &context, black_box(&index))))
        });
    }
    g.bench_function("can_execute email.send.external, 40 evidence rows, with its action binding", |b| {
        b.iter(|| {
            let d = can_execute(
                black_box(&policies),
                &request(black_box("email.send.external"), &context, black_box(&index)),
            );
            d.action_binding().map(|v| v.as_object().map(serde_json::Map::len))
        })
    });
    g.bench_function("index 80 rows, then can_execute draft.response", |b| {
        b.iter(|| {
            let index = EvidenceIndex::new(black_box(&rows));
            can_execute(&policies, &request(black_box("draft.response"), &context, &index)).allowed
        })
    });
    g.finish();
    c.bench_function("posterior with exact 95% interval, 40 rows", |b| {
        b.iter(|| Posterior::of("draft.response", black_box(&rows), policies.threshold("draft.response"), now.date()));
    });
    let eval = warrant::eval::Evaluator::default();
    let mut g = c.benchmark_group("eval");
    g.throughput(Throughput::Elements(1));
    let line = br#"{"op":"tg.can_execute","id":1,"action_class":"draft.response","now":"2026-11-21T09:00:00Z"}"#;
    g.bench_function("eval line tg.can_execute (parse, gate, serialize)", |b| b.iter(|| eval.handle_line(line)));
    let mut out = Vec::with_capacity(4096);
    g.bench_function("eval respond tg.can_execute", |b| {
        b.iter(|| {
            out.clear();
            eval.respond(black_box(line), &mut out);
            out.len()
        })
    });
    let inline: Vec<serde_json::Value> = rows[..40].iter().map(|r| r.to_json("2026-11-21")).collect();
    let line40 = serde_json::to_vec(&serde_json::json!({"op": "tg.can_execute", "id": 1,
        "action_class": "draft.response", "now": "2026-11-21T09:00:00Z", "evidence": inline}))
    .expect("json");
    // The same rows with one date changed: alternating with `line40`, every line's rows differ
    // from the previous line's, so each is read and weighted (no kept evidence serves).
    let mut other: Vec<serde_json::Value> = rows[..40].iter().map(|r| r.to_json("2026-11-21")).collect();
    other[0]["date"] = serde_json::json!("2026-11-02");
    let line40b = serde_json::to_vec(&serde_json::json!({"op": "tg.can_execute", "id": 1,
        "action_class": "draft.response", "now": "2026-11-21T09:00:00Z", "evidence": other}))
    .expect("json");
    for l in [&line40, &line40b] {
        out.clear();
        eval.respond(l, &mut out);
        let answer: serde_json::Value = serde_json::from_slice(&out).expect("an answer");
        assert_eq!(answer["observed"]["evidence"]["positive"], 40, "{answer}");
    }
    g.throughput(Throughput::Bytes(line40.len() as u64));
    g.bench_function("eval respond tg.can_execute, 40 inline evidence rows, repeated", |b| {
        b.iter(|| {
            out.clear();
            eval.respond(black_box(&line40), &mut out);
            out.len()
        })
    });
    let mut flip = false;
    g.bench_function("eval respond tg.can_execute, 40 inline evidence rows, read each time", |b| {
        b.iter(|| {
            out.clear();
            flip = !flip;
            eval.respond(black_box(if flip { &line40 } else { &line40b }), &mut out);
            out.len()
        })
    });
    g.finish();
}

fn verdict(c: &mut Criterion) {
    use warrant::protocol::control::ControlState;
    use warrant::protocol::graduation::policy::PolicySet;
    use warrant::protocol::verdict::{VerdictContext, evaluate, packet_gate};
    let policies =
        PolicySet::from_toml("[tools.\"corrections.merge\"]\ntier = \"destructive\"\nrequired_trust_level = 3\n")
            .expect("policy");
    let controls = ControlState::default();
    let mut doc = warrant::protocol::packet::portable_packet(
        "p-1",
        "draft.compose",
        "agent-a",
        "s",
        json!({"x": 1}),
        "2026-11-21T09:00:00Z",
    );
    doc["governance"] = json!({
        "tool": "corrections.merge", "notebook": "nb", "eff_score": 0.72,
        "action": {"action_id": "a-1", "name": "Merge", "execute_api": "/merge", "reversibility": "partial"},
        "contract": {"required_level": 3, "blast_radius": "project", "reversibility": "reversible",
                     "scope": {"level": "repo", "identifier": "acme"}, "data_sensitivity": "private", "preconditions": []},
    });
    let packet =
        warrant::protocol::packet::parse_packet(&serde_json::to_vec(&doc).expect("json"), "p-1").expect("packet");
    let ctx = VerdictContext { policies: &policies, controls: &controls, now: 1_795_251_600.0 };
    let evidence = warrant::protocol::graduation::evidence::EvidenceIndex::default();
    c.bench_function("verdict: gate + tiers + rings + ladder, composed", |b| {
        b.iter(|| {
            let tg = packet_gate(&ctx, black_box(&packet), &evidence, "local", true);
            evaluate(&ctx, &packet, &tg, None, None)
        })
    });
}

/// The gate's lookup of live grants: the composed verdict of a held call and the
/// grant book's lookup, with 0 and 100,000 live grants (spread over agents and tools, and all
/// for the call's own agent and tool in other sessions), side by side.
fn grants(c: &mut Criterion) {
    use warrant::protocol::calls::{ToolCall, call_packet, classify};
    use warrant::protocol::control::ControlState;
    use warrant::protocol::graduation::policy::PolicySet;
    use warrant::protocol::grant::{CallFacts, Grant, GrantBook, GrantEvent, Scope};
    use warrant::protocol::verdict::{VerdictContext, evaluate, packet_gate};
    let policies = PolicySet::from_toml("").expect("policy");
    let controls = ControlState::default();
    let call = ToolCall {
        host: "claude-code".into(),
        agent: "claude-code".into(),
        session: Some("sess-0".into()),
        tool: "Bash".into(),
        input: json!({"command": "git push origin feature/x"}),
        notebook: "shop-1a2b3c".into(),
        cwd: Some("/home/user/shop".into()),
        workdir: None,
        annotations: serde_json::Value::Null,
    };
    let class = classify(&policies, &call.tool, &call.input, &call.annotations);
    let doc = call_packet(&call, &class, &policies, "cc-1", "2026-11-25T09:00:00Z");
    let packet =
        warrant::protocol::packet::parse_packet(&serde_json::to_vec(&doc).expect("json"), "cc-1").expect("packet");
    let ctx = VerdictContext { policies: &policies, controls: &controls, now: 1_795_251_600.0 };
    let evidence = warrant::protocol::graduation::evidence::EvidenceIndex::default();
    let grant = |i: u64, agent: &str, tool: &str, session: &str| Grant {
        grant_id: format!("grant-{i}"),
        scope: Scope::Session(session.to_owned()),
        agent: agent.to_owned(),
        notebook: "shop-1a2b3c".into(),
        action_class: "code.push".into(),
        tool: tool.to_owned(),
        expires_at: None,
        expires_unix: None,
        max_uses: None,
        covers_destructive: false,
        workdir: None,
        packet_id: format!("cc-{i}"),
        principal: "alice".into(),
        key: "SHA256:x".into(),
        decided_at: "2026-11-25T09:00:00Z".into(),
        reason: None,
        chain_index: i,
    };
    let spread = {
        let mut b = GrantBook::default();
        for i in 0..100_000 {
            b.apply(&GrantEvent::Issue(Box::new(grant(
                i,
                &format!("agent-{}", i % 1000),
                &format!("tool{}", i % 100),
                "s",
            ))));
        }
        b
    };
    let same_key = {
        let mut b = GrantBook::default();
        for i in 0..100_000 {
            b.apply(&GrantEvent::Issue(Box::new(grant(i, "claude-code", "Bash", &format!("sess-{}", i + 1)))));
        }
        b
    };
    let mut g = c.benchmark_group("gate with live grants");
    for (name, book) in [
        ("0 grants", GrantBook::default()),
        ("100000 grants, other agents and tools", spread),
        ("100000 grants, the call's agent and tool in other sessions", same_key),
    ] {
        g.bench_function(format!("verdict and grant lookup, {name}"), |b| {
            b.iter(|| {
                let tg = packet_gate(&ctx, black_box(&packet), &evidence, "local", true);
                let v = evaluate(&ctx, &packet, &tg, None, None);
                let facts = CallFacts::of_packet(&packet, &policies).expect("a call");
                (v.state, book.covering(&facts, ctx.now).next().is_some())
            })
        });
        let facts = CallFacts::of_packet(&packet, &policies).expect("a call");
        g.bench_function(format!("grant lookup alone, {name}"), |b| {
            b.iter(|| book.covering(black_box(&facts), ctx.now).next().is_some())
        });
    }
    g.finish();
}

criterion_group!(protocol, benches, graduation, verdict, grants);
criterion_main!(protocol);
