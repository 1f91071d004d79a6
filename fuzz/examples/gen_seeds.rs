//! Writes the seed corpora `fuzz/seeds/<target>/` from real inputs: the conformance packets,
//! receipts, chains and exports in `tests/fixtures/conformance`, the themes and
//! keymap, the examples in `docs/*.md`, and chains, exports, packets, receipts and decision files
//! built with warrant's own API and signed with the harness's principal (so the strict
//! signature checks start from chains that verify).
//!
//! ```text
//! cargo run --manifest-path fuzz/Cargo.toml --example gen_seeds
//! ```
//!
//! Output is deterministic except for the UUIDv7 record ids of the generated chains.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Map, Value, json};
use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use warrant::protocol::canonical::{parse_strict, to_canonical_vec};
use warrant::protocol::chain::{self, ChainHead, VerifyOptions};
use warrant::protocol::decision::{self, DecisionInput, Verdict};
use warrant::protocol::graduation::evidence::SourceType;
use warrant::protocol::graduation::receipt::{ReceiptInput, ReceiptOutcome, build_receipt};
use warrant_fuzz::{NOW, principal};

const TARGETS: [&str; 10] =
    ["packet", "receipt", "record", "chain_export", "policy", "config", "theme", "keymap", "eval", "canonical"];

struct Seeds {
    out: PathBuf,
    written: BTreeSet<(String, String)>,
}

impl Seeds {
    /// Writes `bytes` as a seed of `target`, named by a short content hash (duplicates merge).
    fn add(&mut self, target: &str, bytes: &[u8]) {
        let name = warrant::protocol::canonical::sha256_hex(bytes)[..16].to_owned();
        if self.written.insert((target.to_owned(), name.clone())) {
            fs::write(self.out.join(target).join(name), bytes).expect("write seed");
        }
    }

    fn add_json(&mut self, target: &str, v: &Value) {
        self.add(target, serde_json::to_string_pretty(v).expect("serialise").as_bytes());
    }
}

fn read(path: &Path) -> Vec<u8> {
    fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = fs::read_dir(dir)
        .map(|rd| rd.filter_map(Result::ok).map(|e| e.path()).filter(|p| p.to_string_lossy().ends_with(ext)).collect())
        .unwrap_or_default();
    out.sort();
    out
}

/// The fenced code blocks of a Markdown file with their info string.
fn code_blocks(md: &str) -> Vec<(String, String)> {
    let mut blocks = Vec::new();
    let mut current: Option<(String, String)> = None;
    for line in md.lines() {
        if let Some(info) = line.trim_start().strip_prefix("```") {
            match current.take() {
                Some(block) => blocks.push(block),
                None => current = Some((info.trim().to_owned(), String::new())),
            }
        } else if let Some((_, body)) = &mut current {
            body.push_str(line);
            body.push('\n');
        }
    }
    blocks
}

/// Every JSON value in `text` read as a stream (a block may hold several).
fn json_values(text: &str) -> Vec<Value> {
    serde_json::Deserializer::from_str(text).into_iter::<Value>().map_while(Result::ok).collect()
}

/// A chain of signed decisions, a control-free foreign record, and a receipt-like record.
fn signed_chain() -> (Vec<Value>, Vec<Value>) {
    let p = principal();
    let mut head = ChainHead { last_index: 0, last_hash: None };
    let mut records = Vec::new();
    let mut files = Vec::new();
    let packets = [
        ("q-1", "email.send.external", "agent-scribe", Verdict::Approve, None),
        ("bid-1", "proposal.submit", "agent-clerk", Verdict::Refuse, Some("price too low")),
        ("post-1", "social.post.public", "agent-herald", Verdict::Approve, Some("copy approved by comms")),
    ];
    for (id, class, agent, verdict, reason) in packets {
        let packet =
            warrant::protocol::packet::portable_packet(id, class, agent, "seed", json!({"summary": "seed"}), NOW);
        let hash = warrant::protocol::canonical::canonical_hash(&packet);
        let trace = format!("warrant:{id}");
        let input = DecisionInput {
            stands_in_for: &[],
            packet_id: id,
            packet_hash: &hash,
            action_class: class,
            agent,
            trace_id: &trace,
            verdict,
            reason,
            decided_at: NOW,
        };
        let signed = decision::sign_decision(&p, &input);
        let sealed = chain::seal(decision::record_body(&input, &signed), &head);
        head = ChainHead { last_index: sealed.chain_index, last_hash: Some(sealed.entry_hash.clone()) };
        files.push(decision::decision_file(&signed, &sealed));
        records.push(sealed.record);
    }
    let mut meta = Map::new();
    meta.insert("parent_record_id".into(), records[0]["record_id"].clone());
    let body =
        chain::new_record_body("agent-scribe", "email.send.external", None, "success", "t-1", "act_auto", NOW, meta);
    records.push(chain::seal(body, &head).record);
    (records, files)
}

fn jsonl(records: &[Value]) -> Vec<u8> {
    let mut out = Vec::new();
    for r in records {
        out.extend(serde_json::to_vec(r).unwrap());
        out.push(b'\n');
    }
    out
}

fn main() {
    let fuzz = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let root = fuzz.parent().expect("fuzz/ is inside the repository").to_owned();
    let shared = root.join("tests/fixtures/conformance");
    assert!(shared.is_dir(), "missing {}", shared.display());
    let out = fuzz.join("seeds");
    let _ = fs::remove_dir_all(&out);
    for t in TARGETS {
        fs::create_dir_all(out.join(t)).unwrap();
    }
    let mut s = Seeds { out, written: BTreeSet::new() };

    // Conformance packets (the reference runtime's camelCase form) and TG decisions.
    let tg = shared.join("trust-graduation");
    for f in files(&tg.join("packets/js-reference"), ".packet.json") {
        s.add("packet", &read(&f));
    }
    for f in files(&tg.join("packets/js-reference"), ".decision.json").iter().take(2) {
        s.add("canonical", &read(f));
    }
    // Receipts: the mission schemas' receipt fixtures, and receipts warrant builds.
    for dir in ["packages/mission-schemas/fixtures/positive", "packages/mission-schemas/fixtures/adversarial"] {
        for f in files(&tg.join(dir), ".json") {
            let name = f.file_name().unwrap().to_string_lossy().into_owned();
            if name.contains("receipt") || name.contains("outcome") {
                s.add("receipt", &read(&f));
            } else if name.contains("policy") {
                s.add("policy", &read(&f));
            } else {
                s.add("canonical", &read(&f));
            }
        }
    }
    for (i, outcome) in ReceiptOutcome::ALL.into_iter().enumerate() {
        let id = format!("r-{i}");
        let r = build_receipt(&ReceiptInput {
            receipt_id: &id,
            action_class: "email.send.external",
            outcome,
            agent: "agent-scribe",
            packet_id: Some("q-1"),
            source_type: [Some(SourceType::Principal), Some(SourceType::Connector), None, Some(SourceType::Receipt)][i],
            created_at: NOW,
            prev_hash: (i > 0).then_some("sha256:0000000000000000000000000000000000000000000000000000000000000000"),
            note: (i == 1).then_some("refused: wrong recipient"),
            tool_call: None,
        });
        s.add_json("receipt", &r);
    }
    s.add_json(
        "receipt",
        &json!([{"action_class": "draft.compose", "label": "approved", "source_type": "principal", "date": "2026-11-20"},
                {"actionClass": "draft.compose", "type": "rejected", "sourceType": "connector"}]),
    );

    // Chains and exports: the OpenTrustGraph fixtures, and a chain signed by the harness's key.
    for f in files(&shared.join("opentrustgraph/fixtures/valid"), ".json")
        .into_iter()
        .chain(files(&shared.join("opentrustgraph/fixtures/invalid"), ".json"))
    {
        let bytes = read(&f);
        s.add("chain_export", &bytes);
        if let Ok(v) = parse_strict(&bytes)
            && let Some(records) = v["records"].as_array()
        {
            s.add("record", &jsonl(records));
        }
    }
    let (records, decision_files) = signed_chain();
    s.add("record", &jsonl(&records));
    s.add("record", &jsonl(&records[..1]));
    let mut torn = jsonl(&records[..2]);
    torn.truncate(torn.len() - 20);
    s.add("record", &torn);
    s.add_json("chain_export", &chain::export(records.clone(), VerifyOptions::default(), NOW));
    for f in &decision_files {
        s.add_json("receipt", f);
    }

    // Packets warrant publishes (`propose`), and one with a full governance block.
    for (id, class) in [("q-1", "email.send.external"), ("pay-1", "payment.initiate"), ("d-1", "draft.compose")] {
        let p = warrant::protocol::packet::portable_packet(
            id,
            class,
            "agent-scribe",
            "Quote for 40 units",
            json!({"to": "dana@example.com", "body": "Grüße\u{1b}[31m"}),
            NOW,
        );
        s.add_json("packet", &p);
    }

    // Themes, the keymap, and every fenced example in the docs and README.
    for f in files(&root.join("themes"), ".toml") {
        s.add("theme", &read(&f));
    }
    s.add("keymap", &read(&root.join("assets/keymap.toml")));
    s.add(
        "keymap",
        b"[normal]\napprove = { keys = [\"y\", \"ctrl-a\"] }\nquit = { keys = [\"f10\"], desc = \"leave\" }\n",
    );
    let mut eval_lines: Vec<Vec<u8>> = Vec::new();
    let mut docs = files(&root.join("docs"), ".md");
    docs.push(root.join("README.md"));
    for md in docs {
        let text = String::from_utf8(read(&md)).expect("docs are UTF-8");
        let mut session = Vec::new();
        for (info, body) in code_blocks(&text) {
            if info == "toml" {
                let target = if warrant::store::config::Config::parse(&body).is_ok() {
                    "config"
                } else if body.contains("[normal]") || body.contains("[confirm]") {
                    "keymap"
                } else if body.contains("[roles") {
                    "theme"
                } else {
                    "policy"
                };
                s.add(target, body.as_bytes());
                continue;
            }
            for v in json_values(&body) {
                s.add("canonical", &to_canonical_vec(&v));
                if v.get("op").is_some() {
                    let mut line = serde_json::to_vec(&v).unwrap();
                    line.push(b'\n');
                    session.extend_from_slice(&line);
                    eval_lines.push(line);
                    for (key, target) in [("packet", "packet"), ("policy", "policy"), ("contract", "policy")] {
                        if let Some(x) = v.get(key) {
                            s.add_json(target, x);
                        }
                    }
                    if let Some(x) = v.get("export").or_else(|| v.get("chain")) {
                        s.add_json("chain_export", x);
                    }
                    if let Some(x) = v.get("packet").and_then(|p| p.get("governance")).and_then(|g| g.get("contract")) {
                        s.add_json("policy", x);
                    }
                } else if v.get("schema").and_then(Value::as_str) == Some(chain::CHAIN_SCHEMA) {
                    s.add_json("chain_export", &v);
                } else if v.get("type").and_then(Value::as_str) == Some("trust_graduation_approval_packet") {
                    s.add_json("packet", &v);
                }
            }
        }
        if !session.is_empty() {
            s.add("eval", &session);
        }
    }
    for line in &eval_lines {
        s.add("eval", line);
    }
    // Requests over the generated chain, packets and receipts, and malformed lines.
    let export = chain::export(records, VerifyOptions::default(), NOW);
    let pk = warrant::protocol::packet::portable_packet(
        "q-9",
        "email.send.external",
        "agent-scribe",
        "s",
        json!({"to": "x"}),
        NOW,
    );
    let mut session = Vec::new();
    for req in [
        json!({"op": "ops", "id": 0}),
        json!({"op": "otg.verify", "id": 1, "export": export}),
        json!({"op": "otg.entry_hash", "id": 2, "record": export["records"][0]}),
        json!({"op": "verdict", "id": 3, "now": NOW, "packet": pk}),
        json!({"op": "tg.can_execute", "id": 4, "action_class": "email.send.external", "now": NOW,
               "context": {"requestedBy": "scribe", "requestedAction": {"to": "b@example.com"}},
               "evidence": [{"action_class": "email.send.external", "label": "approved", "source_type": "principal"}]}),
        json!({"op": "tg.posterior", "id": 5, "action_class": "draft_compose", "now": NOW,
               "evidence": [{"action_class": "draft.compose", "label": "approved"}]}),
    ] {
        session.extend(serde_json::to_vec(&req).unwrap());
        session.push(b'\n');
    }
    session.extend_from_slice(b"{\"op\": \"ops\", \"id\": \"cut\"\n[1]\n\n   \nnot json\n");
    s.add("eval", &session);

    // Configs beyond the docs' example.
    s.add("config", b"principal = \"alice\"\nrescan_seconds = 1\n");
    s.add("config", b"spool = \"/tmp/spool\"\ntheme = \"mono\"\n");

    // The canonical target also runs over the other targets' JSON seeds (docs/fuzzing.md), so
    // they are not copied here.
    let mut total = 0;
    for t in TARGETS {
        let list = files(&s.out.join(t), "");
        let bytes: u64 = list.iter().map(|f| fs::metadata(f).map_or(0, |m| m.len())).sum();
        total += bytes;
        println!("{t:>13}: {:>3} seeds, {bytes:>7} bytes", list.len());
    }
    println!("{:>13}: {total:>7} bytes", "total");
}
