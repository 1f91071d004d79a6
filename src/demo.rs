//! Simulated agents for `warrant demo`: they publish realistic approval packets (both forms) and
//! receipts into a spool the way real agents must (temporary file, then rename), plus one
//! malformed packet so the invalid list has something to show.

use crate::spool::Spool;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// A running set of simulated agents; dropping it stops them.
pub struct Demo {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

/// A tiny deterministic generator (xorshift64*), enough to vary the demo.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[(self.next() % items.len() as u64) as usize]
    }
}

/// One thing a simulated agent may ask for: (agent, action class, summary, proposed action).
fn proposals() -> Vec<(&'static str, &'static str, &'static str, Value)> {
    vec![
        (
            "agent-scribe",
            "email.send.external",
            "Quote for 40 units to Dana at Northwind",
            json!({"to": "dana@northwind.example", "subject": "Quote for 40 units", "body": "Hi Dana,\nAttached is the quote we discussed: 40 units at $18.50.\nBest, Sam"}),
        ),
        (
            "agent-scribe",
            "email.send.internal",
            "Weekly status to the ops list",
            json!({"to": "ops@acme.example", "subject": "Weekly status", "body": "Shipped: invoicing v2. Blocked: vendor SSO."}),
        ),
        (
            "agent-planner",
            "calendar.create",
            "Kick-off with Northwind, Tue 10:00",
            json!({"title": "Northwind kick-off", "start": "2026-11-24T10:00:00Z", "duration_minutes": 45, "invitees": ["dana@northwind.example", "sam@acme.example"]}),
        ),
        (
            "agent-herald",
            "social.post.public",
            "Announce the v2 release on the company feed",
            json!({"channel": "company-feed", "text": "Invoicing v2 is live: faster exports, fewer clicks."}),
        ),
        (
            "agent-clerk",
            "proposal.submit",
            "Submit the city parks maintenance bid",
            json!({"portal": "procurement.city.example", "reference": "RFP-2026-114", "amount_usd": 84200}),
        ),
        (
            "agent-bursar",
            "payment.initiate",
            "Pay invoice INV-3312 to Acme Paper",
            json!({"payee": "Acme Paper", "invoice": "INV-3312", "amount_usd": 1250}),
        ),
        (
            "agent-helper",
            "draft.response",
            "Reply to a customer asking about refunds",
            json!({"thread": "support-9921", "body": "Thanks for asking — refunds take 5 business days."}),
        ),
    ]
}

/// Publishes one portable v0.1 packet.
fn publish_packet(spool: &Spool, rng: &mut Rng, seq: u64) -> std::io::Result<()> {
    let all = proposals();
    // Walk the proposals in order from a random start, so every agent gets its turn.
    let start = rng.0 % all.len() as u64;
    let (agent, class, summary, action) = &all[((start + seq) % all.len() as u64) as usize];
    let id = format!("demo-{seq:04}-{}", class.replace('.', "-"));
    let doc = crate::packet::portable_packet(&id, class, agent, summary, action.clone(), &crate::clock::now_rfc3339());
    spool.publish(&spool.packets_dir(), &id, &doc).map(|_| ())
}

/// Publishes one receipt from an agent that executed an earlier approved action.
fn publish_receipt(spool: &Spool, rng: &mut Rng, seq: u64) -> std::io::Result<()> {
    let all = proposals();
    let (agent, class, _, _) = rng.pick(&all);
    let outcome = *rng.pick(&["execute", "approve", "correct", "execute"]);
    let id = format!("demo-receipt-{seq:04}");
    let doc = json!({
        "type": "trust_graduation_receipt",
        "receipt_id": id,
        "action_class": class,
        "outcome": outcome,
        "agent": agent,
        "external_action_executed": outcome == "execute",
        "created_at": crate::clock::now_rfc3339(),
    });
    spool.publish(&spool.receipts_dir(), &id, &doc).map(|_| ())
}

/// A packet in the reference runtime's camelCase form.
fn runtime_packet() -> Value {
    json!({
        "protocol": "trust-graduation", "version": "1.0",
        "packetId": "tg_demo_email-send-external", "decisionId": "tgd_demo_email-send-external",
        "workspace": "acme-ops", "requestedBy": "agent-courier", "principal": "principal-1",
        "actionClass": "email.send.external", "riskClass": "high", "externalSideEffects": "email_send",
        "approvalRequired": true, "receiptRequired": true,
        "reason": "Human approval required before this action can execute.",
        "requestedAction": {"recipient": "ops@partner.example", "subject": "Contract renewal terms", "body": "Attached are the renewal terms for 2027."},
        "context": {"recipient": "ops@partner.example", "subject": "Contract renewal terms"},
        "decisions": [
            {"id": "approve_once", "label": "Approve once", "effect": "Allows this action only."},
            {"id": "revise", "label": "Revise", "effect": "Keeps action blocked and returns changes to the agent."},
            {"id": "reject", "label": "Reject", "effect": "Blocks action and records negative evidence."}
        ],
        "createdAt": crate::clock::now_rfc3339(),
    })
}

impl Demo {
    /// Starts the simulated agents on `spool`, acting every `interval`.
    #[must_use]
    pub fn start(spool: Spool, interval: Duration) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let handle = std::thread::Builder::new()
            .name("warrant-demo".into())
            .spawn(move || {
                let _ = spool.ensure();
                let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64) | 1;
                let mut rng = Rng(seed);
                let mut seq = 0_u64;
                // An opening burst so the console has work at once.
                for _ in 0..4 {
                    seq += 1;
                    let _ = publish_packet(&spool, &mut rng, seq);
                }
                let _ = spool.publish(&spool.packets_dir(), "tg_demo_email-send-external", &runtime_packet());
                // A malformed packet: an agent that forgot `external_actions: 0`.
                let _ = spool.publish(
                    &spool.packets_dir(),
                    "demo-broken",
                    &json!({"type": "trust_graduation_approval_packet", "action_class": "social.post.public",
                            "proposed_action": {"text": "hello"}, "decision": {"status": "allowed", "action_class": "social.post.public", "reason": "?"},
                            "external_actions": 1}),
                );
                while !flag.load(Ordering::Relaxed) {
                    // Sleep in small steps so dropping the demo stops it promptly.
                    let mut slept = Duration::ZERO;
                    while slept < interval && !flag.load(Ordering::Relaxed) {
                        let step = Duration::from_millis(50).min(interval - slept);
                        std::thread::sleep(step);
                        slept += step;
                    }
                    if flag.load(Ordering::Relaxed) {
                        break;
                    }
                    seq += 1;
                    let _ = if rng.next().is_multiple_of(3) { publish_receipt(&spool, &mut rng, seq) } else { publish_packet(&spool, &mut rng, seq) };
                }
            })
            .ok();
        Self { stop, handle }
    }
}

impl Drop for Demo {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demo_agents_publish_valid_packets_receipts_and_one_invalid_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let spool = Spool::new(dir.path());
        let demo = Demo::start(spool.clone(), Duration::from_millis(10));
        let mut scanner = crate::spool::Scanner::new();
        let mut snap = scanner.scan(&spool).expect("scan");
        for _ in 0..200 {
            if snap.packets.len() >= 6 && !snap.receipts.is_empty() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
            snap = scanner.scan(&spool).expect("scan");
        }
        drop(demo);
        assert!(snap.packets.len() >= 6, "packets: {}", snap.packets.len());
        assert!(!snap.receipts.is_empty());
        assert!(snap.packets.iter().any(|p| p.packet.form == crate::packet::PacketForm::Runtime));
        assert_eq!(snap.invalid.len(), 1, "{:?}", snap.invalid);
        assert!(snap.invalid[0].reason.to_string().contains("external_actions"));
    }
}
