//! Generates a spool for scale runs: N signed decision records in `chain.jsonl` and M pending
//! packets, with a config directory whose pinned key verifies every signature.
//!
//! ```text
//! cargo run --release --example gen_spool -- <DIR> <N records> <M packets>
//! WARRANT_CONFIG=<DIR>/config warrant verify <DIR>/spool
//! ```

use serde_json::json;
use std::io::Write as _;
use warrant::chain::{self, ChainHead};
use warrant::decision::{self, DecisionInput, Verdict};
use warrant::keys::{PinnedKeys, Principal};
use warrant::spool::Spool;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(dir), Some(n), Some(m)) =
        (args.get(1), args.get(2).and_then(|s| s.parse::<u64>().ok()), args.get(3).and_then(|s| s.parse::<u64>().ok()))
    else {
        eprintln!("usage: gen_spool <DIR> <N records> <M packets>");
        std::process::exit(2);
    };
    let root = std::path::Path::new(dir);
    let config = root.join("config");
    std::fs::create_dir_all(&config).expect("config dir");
    let principal = Principal::from_seed("scale-principal", &[42; 32]);
    let mut pins = PinnedKeys::default();
    pins.pin(&principal.name, principal.verifying_key());
    pins.save(&config).expect("pins");
    let spool = Spool::new(root.join("spool"));
    spool.ensure().expect("spool");

    let file = std::fs::File::create(spool.chain_path()).expect("chain");
    let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
    let mut head = ChainHead { last_index: 0, last_hash: None };
    for i in 0..n {
        let id = format!("scale-{i:08}");
        let hash = warrant::canonical::sha256_prefixed(id.as_bytes());
        let input = DecisionInput {
            packet_id: &id,
            packet_hash: &hash,
            action_class: if i % 3 == 0 { "email.send.external" } else { "draft.response" },
            agent: "agent-scale",
            trace_id: &id,
            verdict: if i % 7 == 0 { Verdict::Refuse } else { Verdict::Approve },
            reason: (i % 7 == 0).then_some("generated refusal"),
            decided_at: "2026-11-21T09:00:00Z",
        };
        let signed = decision::sign_decision(&principal, &input);
        let appended = chain::seal(decision::record_body(&input, &signed), &head);
        out.write_all(&warrant::canonical::to_canonical_vec(&appended.record)).expect("write");
        out.write_all(b"\n").expect("write");
        head = ChainHead { last_index: appended.chain_index, last_hash: Some(appended.entry_hash) };
    }
    out.flush().expect("flush");
    for j in 0..m {
        let id = format!("pending-{j:08}");
        let doc = warrant::packet::portable_packet(
            &id,
            "email.send.external",
            "agent-scale",
            &format!("Scale packet {j}"),
            json!({"to": "x@example.com", "body": "hello"}),
            "2026-11-21T09:00:00Z",
        );
        spool.publish(&spool.packets_dir(), &id, &doc).expect("packet");
    }
    eprintln!("wrote {n} records and {m} packets under {}", root.display());
}
