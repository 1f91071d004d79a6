//! The rules every store keeps for an agent's side of a spool ([`SpoolLog`]): shared by
//! `tests/store_boundary.rs` (the directory spool) and `tests/jetstream.rs` (a real server).

use serde_json::{Value, json};
use warrant::store::publications::{Publication, SpoolLog};

/// The packet `id` of `agent`, as `warrant propose` makes it.
pub fn packet(id: &str, agent: &str) -> Value {
    warrant::protocol::packet::portable_packet(
        id,
        "draft.compose",
        agent,
        "s",
        json!({"text": id}),
        "2026-11-21T09:00:00Z",
    )
}

/// The bytes every store keeps for `doc`.
pub fn stored_bytes(doc: &Value) -> Vec<u8> {
    let mut b = serde_json::to_vec_pretty(doc).expect("json");
    b.push(b'\n');
    b
}

/// Holds `log` (an empty spool) to the rules: a publication is kept once (a retry is answered
/// `false` and adds nothing), listed as the bytes published, packets and receipts apart, in
/// publication order; a decision file is read back as written by `write_decision(agent, id,
/// bytes)` (the principal's side of the store), and a packet with none has none.
pub fn conformance(log: &dyn SpoolLog, write_decision: &dyn Fn(&str, &str, &[u8])) {
    let at = log.location();
    for kind in [Publication::Packet, Publication::Receipt] {
        assert!(log.publications(kind).expect("list").is_empty(), "{at}: an empty spool lists nothing");
    }
    let p1 = packet("p-1", "agent-a");
    let p2 = packet("p-2", "agent-a");
    assert!(log.publish(Publication::Packet, "agent-a", "p-1", &p1).expect("publish"), "{at}: a new packet");
    assert!(!log.publish(Publication::Packet, "agent-a", "p-1", &p1).expect("retry"), "{at}: a retry is no new packet");
    assert!(log.publish(Publication::Packet, "agent-a", "p-2", &p2).expect("publish"), "{at}: a second packet");
    let receipt =
        json!({"type": "warrant_call_receipt", "agent": "agent-a", "id": "r-1", "created_at": "2026-11-21T09:01:00Z"});
    assert!(log.publish(Publication::Receipt, "agent-a", "r-1", &receipt).expect("publish"), "{at}: a receipt");
    assert_eq!(
        log.publications(Publication::Packet).expect("list"),
        vec![stored_bytes(&p1), stored_bytes(&p2)],
        "{at}: the packets, once each, as published"
    );
    assert_eq!(
        log.publications(Publication::Receipt).expect("list"),
        vec![stored_bytes(&receipt)],
        "{at}: the receipt"
    );

    assert_eq!(log.decision("agent-a", "p-1").expect("read"), None, "{at}: no decision yet");
    let decision = br#"{"document":{"decision":"approve"},"signature":"x"}"#;
    write_decision("agent-a", "p-1", decision);
    assert_eq!(log.decision("agent-a", "p-1").expect("read").as_deref(), Some(&decision[..]), "{at}: as written");
    assert_eq!(log.decision("agent-a", "p-2").expect("read"), None, "{at}: another packet's is not this one's");
}
