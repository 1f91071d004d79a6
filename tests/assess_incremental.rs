//! The console's incremental assessment (`monitor::assess_incremental`) gives exactly what a full
//! `monitor::assess` gives: after packets arrive, after a decision, after a receipt, after a
//! control and a trust change, and as the clock moves (another second, an elevation's expiry).

use serde_json::json;
use std::collections::HashMap;
use std::sync::Arc;
use warrant::monitor::{Assessment, assess, assess_incremental};
use warrant::protocol::control::{ControlState, Elevation, NotebookLevel};
use warrant::protocol::decision::Verdict;
use warrant::protocol::graduation::PolicySet;
use warrant::protocol::packet::{Receipt, parse_packet, parse_receipt};
use warrant::protocol::verdict::VerdictContext;
use warrant::store::spool::{ChainDecision, ChainEvidence, PacketEntry};

const NOW: f64 = 1_795_251_600.0; // 2026-11-21T09:00:00Z

fn entry(n: usize, agent: &str, class: &str, arrived: f64) -> PacketEntry {
    let id = format!("p-{n}");
    let mut doc =
        warrant::protocol::packet::portable_packet(&id, class, agent, "s", json!({"x": n}), "2026-11-21T08:59:00Z");
    if n.is_multiple_of(3) {
        doc["governance"] = json!({"tool": "corrections.merge", "notebook": "nb", "eff_score": 0.7,
            "action": {"action_id": "a-1", "name": "n", "execute_api": "/x", "reversibility": "full",
                       "is_read_only": false, "is_admin": false}});
    }
    let packet = parse_packet(&serde_json::to_vec(&doc).expect("json"), &id).expect("valid packet");
    PacketEntry { file: format!("{id}.json").into(), arrived, owner: 4_000_000, packet: Arc::new(packet) }
}

struct World {
    policies: Arc<PolicySet>,
    controls: ControlState,
    packets: Vec<PacketEntry>,
    receipts: Vec<Arc<Receipt>>,
    decisions: warrant::store::spool::Decisions,
    evidence: ChainEvidence,
    chain_intact: bool,
    now: f64,
}

impl World {
    fn full(&self) -> Assessment {
        let ctx = VerdictContext { policies: &self.policies, controls: &self.controls, now: self.now };
        assess(
            &ctx,
            &self.packets,
            &self.receipts,
            &self.decisions,
            &self.evidence,
            &Default::default(),
            self.chain_intact,
            "local",
        )
    }
    fn incremental(&self, prev: &Assessment) -> Assessment {
        let ctx = VerdictContext { policies: &self.policies, controls: &self.controls, now: self.now };
        assess_incremental(
            Some(prev),
            &self.policies,
            &ctx,
            &self.packets,
            &self.receipts,
            &self.decisions,
            &self.evidence,
            &Default::default(),
            self.chain_intact,
            "local",
        )
    }
}

/// Same gate decisions (with their JSON; an assessment keeps no binding,
/// `Decision::into_verdict_only`), preconditions, verdicts and rates.
fn assert_same(a: &Assessment, b: &Assessment, step: &str) {
    assert_eq!(a.evidence, b.evidence, "{step}: evidence");
    assert_eq!(a.monitor.rates, b.monitor.rates, "{step}: rates");
    assert_eq!(a.monitor.agents, b.monitor.agents, "{step}: agents");
    assert_eq!(a.preconditions, b.preconditions, "{step}: preconditions");
    assert_eq!(a.verdicts, b.verdicts, "{step}: verdicts");
    assert_eq!(a.ran_on_its_own, b.ran_on_its_own, "{step}: calls that ran on their own");
    assert_eq!(a.gate.len(), b.gate.len(), "{step}: gate");
    for (id, d) in &a.gate {
        let e = &b.gate[id];
        assert_eq!(**d, **e, "{step}: gate {id}");
        assert_eq!(d.to_json(), e.to_json(), "{step}: gate JSON {id}");
    }
}

/// Reassesses incrementally from `prev`, checks it against a full assessment, returns it. The
/// console's form, which hands the previous assessment over (`monitor::Previous::Owned`), gives
/// the same.
fn step(w: &World, prev: &Assessment, name: &str) -> Assessment {
    let inc = w.incremental(prev);
    assert_same(&inc, &w.full(), name);
    let ctx = VerdictContext { policies: &w.policies, controls: &w.controls, now: w.now };
    let handed = assess_incremental(
        std::sync::Arc::new(prev.clone()),
        &w.policies,
        &ctx,
        &w.packets,
        &w.receipts,
        &w.decisions,
        &w.evidence,
        &Default::default(),
        w.chain_intact,
        "local",
    );
    assert_same(&handed, &inc, &format!("{name} (handed over)"));
    inc
}

#[test]
fn incremental_equals_full() {
    let policies = PolicySet::from_toml(
        r#"
[tools."corrections.merge"]
tier = "destructive"
required_trust_level = 3
"#,
    )
    .expect("policy");
    let mut w = World {
        policies: Arc::new(policies),
        controls: ControlState::default(),
        packets: (0..40)
            .map(|n| entry(n, &format!("agent-{}", n % 4), "draft.compose", NOW - 100.0 + n as f64))
            .collect(),
        receipts: Vec::new(),
        decisions: HashMap::new(),
        evidence: ChainEvidence::default(),
        chain_intact: true,
        now: NOW,
    };
    let mut a = step(&w, &Assessment::default(), "first");
    a = step(&w, &a, "unchanged");
    assert!(a.gate.len() == 40 && a.verdicts.len() == 40);

    // Packets arrive, a burst from one agent (rate outcomes of the burst change), and one arrives
    // out of order, before older ones.
    w.packets.extend((100..400).map(|n| entry(n, "agent-1", "draft.compose", NOW - 1.0)));
    w.packets.push(entry(80, "agent-2", "email.send", NOW - 99.5));
    a = step(&w, &a, "arrivals");

    // A packet's content changes under the same id.
    w.packets[5] = entry(5, "agent-1", "email.send", w.packets[5].arrived);
    a = step(&w, &a, "changed packet");

    // The principal decides one: it leaves the pending set and its evidence row moves the class.
    let row = warrant::store::spool::decision_evidence(
        "draft.compose",
        Verdict::Approve,
        None,
        "2026-11-21T09:00:00Z",
        Some("p-1"),
    )
    .expect("row");
    w.evidence.push(row);
    w.decisions.insert(
        "p-1".into(),
        Arc::new(ChainDecision {
            cosigners: Vec::new(),
            quorum: None,
            signed: None,
            verdict: Verdict::Approve,
            principal: "alice".into(),
            reason: None,
            decided_at: "2026-11-21T09:00:00Z".into(),
            packet_hash: w.packets[1].packet.content_hash.clone(),
            chain_index: 1,
            entry_hash: String::new(),
            agent: String::new(),
            action_class: String::new(),
            system: None,
            corrected: None,
        }),
    );
    a = step(&w, &a, "decision");
    assert!(!a.gate.contains_key("p-1"));

    // A receipt file arrives.
    let r = json!({"type": "trust_graduation_receipt", "receipt_id": "r-1", "agent": "agent-0", "action_class": "draft.compose", "outcome": "approved",
                   "created_at": "2026-11-21T08:59:30Z"});
    w.receipts.push(Arc::new(parse_receipt(&serde_json::to_vec(&r).expect("json")).expect("receipt")));
    let before = a.evidence.len();
    a = step(&w, &a, "receipt");
    assert_eq!(a.evidence.len(), before + 1, "the receipt is evidence");

    // Another second: decision times (and the bindings derived from them) follow the clock.
    w.now += 1.5;
    a = step(&w, &a, "next second");

    // Controls: a notebook's trust, a quarantine, an elevation, then its expiry.
    w.controls.notebooks.insert(
        "nb".into(),
        NotebookLevel {
            level: warrant::protocol::tiers::NotebookTrust::parse("trusted").expect("level"),
            principal: "alice".into(),
            set_at: String::new(),
        },
    );
    a = step(&w, &a, "notebook trust");
    w.controls.agents.entry("agent-2".into()).or_default().standing =
        warrant::protocol::graduation::gate::AgentStanding::Quarantined;
    a = step(&w, &a, "quarantine");
    w.controls.agents.entry("agent-3".into()).or_default().elevation =
        Some(Elevation { ring: 2, granted_at: String::new(), expires_at: "2026-11-21T09:05:00Z".into() });
    a = step(&w, &a, "elevation");
    w.now = NOW + 301.0;
    a = step(&w, &a, "elevation expired");

    // The chain stops verifying.
    w.chain_intact = false;
    a = step(&w, &a, "chain broken");
    assert!(a.gate.values().all(|d| !d.allowed));

    // Policies replaced by an equal but different set: nothing is reused, the answer is the same.
    w.policies = Arc::new((*w.policies).clone());
    step(&w, &a, "new policy set");
}
