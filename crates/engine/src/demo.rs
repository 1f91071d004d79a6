//! Simulated agents for `warrant demo`: they publish realistic approval packets (both forms) and
//! receipts into a spool the way real agents must (temporary file, then rename), plus one
//! malformed packet so the invalid list has something to show.
//!
//! The demo spool also gets a `policy.toml` registering the agents' tools (tiers and ladder
//! floors), packets carry `governance` blocks (tool, notebook, action descriptor, score, ladder
//! contract), one packet has a precondition on a file the demo later edits (so the console shows
//! the world drifting under a pending approval), and one agent misbehaves: `agent-rogue` bursts
//! past its Ring 3 rate limit and asks for Ring 0 (an admin action).

use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;
use warrant_store::spool::Spool;

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

/// The demo spool's `policy.toml`: [`DEMO_POLICY`], and the directory of the world file as the
/// one root its precondition may observe.
#[must_use]
pub fn demo_policy(spool: &Spool) -> String {
    let world = world_file(spool);
    let root = world.parent().unwrap_or(spool.root()).to_string_lossy().into_owned();
    format!("{DEMO_POLICY}\n[preconditions]\nroots = [{}]\n", toml::Value::String(root))
}

/// The demo spool's `policy.toml` without its precondition root: the tools the simulated agents use, with their tiers and
/// ladder floors.
pub const DEMO_POLICY: &str = r#"# Written by `warrant demo`: the simulated agents' tools.
[tools."mail.send"]
tier = "mutating"
required_trust_level = 4

[tools."calendar.write"]
tier = "mutating"
required_trust_level = 3

[tools."feed.post"]
tier = "destructive"
required_trust_level = 4

[tools."ledger.pay"]
tier = "destructive"
required_trust_level = 4

[tools."drafts.write"]
tier = "safe"
required_trust_level = 1

[tools."reports.publish"]
tier = "mutating"
required_trust_level = 3

[ladder]
auto_approve_up_to = 3

[agents."agent-rogue"]
max_score = 0.5
"#;

/// The governance block an agent attaches: (tool, notebook, score, reversibility, ladder level,
/// blast radius) by agent.
fn governance_of(agent: &str, class: &str, seq: u64) -> Value {
    let (tool, notebook, score, reversibility, level, radius) = match agent {
        "agent-scribe" if class == "email.send.internal" => ("mail.send", "nb-ops", 0.82, "full", 3, "project"),
        "agent-scribe" => ("mail.send", "nb-sales", 0.82, "none", 4, "external"),
        "agent-planner" => ("calendar.write", "nb-ops", 0.9, "full", 3, "project"),
        "agent-herald" => ("feed.post", "nb-marketing", 0.66, "none", 4, "external"),
        "agent-bursar" => ("ledger.pay", "nb-finance", 0.97, "none", 4, "external"),
        "agent-helper" => ("drafts.write", "nb-support", 0.7, "full", 1, "self"),
        _ => ("reports.publish", "nb-ops", 0.55, "partial", 3, "project"),
    };
    json!({
        "tool": tool,
        "notebook": notebook,
        "eff_score": score,
        "has_consensus": false,
        "action": {
            "action_id": format!("act-{seq}"), "name": class, "execute_api": format!("/{}", tool.replace('.', "/")),
            "undo_api": if reversibility == "none" { Value::Null } else { json!(format!("/{}/undo", tool.replace('.', "/"))) },
            "reversibility": reversibility, "undo_window_seconds": if reversibility == "none" { 0 } else { 3600 },
            "is_read_only": false, "is_admin": false,
        },
        "contract": {
            "required_level": level, "blast_radius": radius,
            "reversibility": match reversibility { "full" => "reversible", "partial" => "compensable", _ => "irreversible" },
            "scope": {"level": "project", "identifier": "acme"},
            "data_sensitivity": if radius == "external" { "private" } else { "public" },
            "preconditions": [],
        },
    })
}

/// Publishes one portable v0.1 packet.
fn publish_packet(spool: &Spool, rng: &mut Rng, seq: u64) -> std::io::Result<()> {
    let len = proposals().len() as u64;
    // Walk the proposals in order from a random start, so every agent gets its turn.
    let start = rng.0 % len;
    publish_proposal(spool, ((start + seq) % len) as usize, seq, &warrant_protocol::clock::now_rfc3339())
}

/// When the `k`th of the opening packets was made: a second apart, the last one a second ago, so
/// they open in a fixed order (newest first: the reverse of publication) with ages a few
/// seconds apart, as agents that have been at work for a moment would leave them.
fn opening_time(k: i64) -> String {
    let at = time::OffsetDateTime::now_utc() - time::Duration::seconds(7 - k);
    warrant_protocol::clock::format_rfc3339(at)
}

/// The opening packets, by index into [`proposals`]: an external email and a calendar invite
/// (decidable), a payment (human only) and a draft reply (decidable).
const OPENING: [usize; 4] = [0, 2, 5, 6];

/// Publishes [`proposals`]`[index]` as packet number `seq`, made at `created` (RFC 3339).
fn publish_proposal(spool: &Spool, index: usize, seq: u64, created: &str) -> std::io::Result<()> {
    let all = proposals();
    let Some((agent, class, summary, action)) = all.get(index) else { return Ok(()) };
    let id = format!("demo-{seq:04}-{}", class.replace('.', "-"));
    let mut doc = warrant_protocol::packet::portable_packet(&id, class, agent, summary, action.clone(), created);
    doc["governance"] = governance_of(agent, class, seq);
    spool.publish(&spool.packets_dir(), &id, &doc).map(|_| ())
}

/// A packet no one may approve: its contract asks for L5, which the trust ladder prohibits.
/// The console shows it `⊘ blocked` with why and what would change it.
fn publish_prohibited_packet(spool: &Spool, created: &str) -> std::io::Result<()> {
    let id = "demo-crm-purge";
    let mut doc = warrant_protocol::packet::portable_packet(
        id,
        "crm.record.delete",
        "agent-archivist",
        "Delete 3,400 inactive contacts from the CRM",
        json!({"system": "crm.acme.example", "filter": "last_activity < 2024-01-01", "records": 3400}),
        created,
    );
    let mut g = governance_of("agent-archivist", "crm.record.delete", 0);
    g["tool"] = json!("crm.purge");
    g["contract"]["required_level"] = json!(5);
    g["contract"]["blast_radius"] = json!("external");
    doc["governance"] = g;
    spool.publish(&spool.packets_dir(), id, &doc).map(|_| ())
}

/// The world file the precondition packet depends on.
fn world_file(spool: &Spool) -> std::path::PathBuf {
    spool.root().join("world").join("q3-report.csv")
}

/// Writes the world file whole, by a rename: the console, observing it at any moment, sees the
/// old content or the new, never a truncated file (whose hash would fail the precondition).
fn write_world(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    let tmp = path.with_extension("csv.tmp");
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}

/// A packet whose contract has a precondition on the world file's hash: approving it records the
/// hash, and the demo edits the file later, so the drift shows in the console.
fn publish_precondition_packet(spool: &Spool, created: &str) -> std::io::Result<()> {
    let path = world_file(spool);
    std::fs::create_dir_all(path.parent().unwrap_or(spool.root()))?;
    write_world(&path, "region,revenue\nnorth,118000\nsouth,97000\n")?;
    let params = json!({"path": path.to_string_lossy()});
    let root = path.parent().unwrap_or(spool.root()).to_owned();
    let observer = crate::preconditions::Observer::new(&[root], None, crate::preconditions::Budget::default());
    let expected = observer.observe("file.sha256", &params).unwrap_or(Value::Null);
    let id = "demo-report-publish";
    let mut doc = warrant_protocol::packet::portable_packet(
        id,
        "document.publish.internal",
        "agent-analyst",
        "Publish the Q3 revenue report to the intranet",
        json!({"file": path.to_string_lossy(), "destination": "intranet/reports/q3"}),
        created,
    );
    let mut g = governance_of("agent-analyst", "document.publish.internal", 0);
    g["contract"]["preconditions"] = json!([{
        "check_id": "file.sha256", "parameters": params, "expected_at_approval": expected,
        "must_revalidate_at_execution": true,
    }]);
    doc["governance"] = g;
    spool.publish(&spool.packets_dir(), id, &doc).map(|_| ())
}

/// The misbehaving agent: a burst of packets past its Ring 3 rate limit (burst 10), and a request
/// for an admin (Ring 0) action.
fn publish_rogue_burst(spool: &Spool, seq: u64) -> std::io::Result<()> {
    for i in 0..14 {
        let id = format!("demo-rogue-{seq:04}-{i:02}");
        let mut doc = warrant_protocol::packet::portable_packet(
            &id,
            "data.export",
            "agent-rogue",
            &format!("Export the customer table, part {}", i + 1),
            json!({"table": "customers", "part": i + 1, "destination": "s3://rogue-bucket/dump"}),
            &warrant_protocol::clock::now_rfc3339(),
        );
        let mut g = governance_of("agent-rogue", "data.export", seq * 100 + i);
        // It claims a score it does not have (policy.toml caps it at 0.5).
        g["eff_score"] = json!(0.99);
        if i == 0 {
            g["action"]["is_admin"] = json!(true);
            g["action"]["name"] = json!("Grant itself database admin");
            doc["summary"] = json!("Grant itself database admin (asks for Ring 0)");
        }
        doc["governance"] = g;
        spool.publish(&spool.packets_dir(), &id, &doc)?;
    }
    Ok(())
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
        "created_at": warrant_protocol::clock::now_rfc3339(),
    });
    spool.publish(&spool.receipts_dir(), &id, &doc).map(|_| ())
}

/// A packet in the reference runtime's camelCase form, made at `created` (RFC 3339).
fn runtime_packet(created: &str) -> Value {
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
        "createdAt": created,
    })
}

impl Demo {
    /// Starts the simulated agents on `spool`, acting every `interval`.
    #[must_use]
    pub fn start(spool: Spool, interval: Duration) -> Self {
        // The tools' policy is in place before the console loads its policies.
        let _ = spool.ensure();
        let policy = spool.root().join("policy.toml");
        if !policy.exists() {
            let _ = std::fs::write(&policy, demo_policy(&spool));
        }
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let handle = std::thread::Builder::new()
            .name("warrant-demo".into())
            .spawn(move || {
                let _ = publish_precondition_packet(&spool, &opening_time(0));
                let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64) | 1;
                let mut rng = Rng(seed);
                let mut seq = 0_u64;
                // An opening burst so the console has work at once: a realistic mix, most
                // decidable, one human only, one blocked with its reason.
                for index in OPENING {
                    seq += 1;
                    let _ = publish_proposal(&spool, index, seq, &opening_time(seq as i64));
                }
                let _ = spool.publish(
                    &spool.packets_dir(),
                    "tg_demo_email-send-external",
                    &runtime_packet(&opening_time(5)),
                );
                // The newest, so the console opens on it: why it can never run, and what would
                // change that.
                let _ = publish_prohibited_packet(&spool, &opening_time(6));
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
                    let _ = match seq % 40 {
                        // The rogue agent bursts early and then now and then.
                        14 => publish_rogue_burst(&spool, seq),
                        // The world changes under the pending report.
                        18 => write_world(&world_file(&spool), "region,revenue\nnorth,118000\nsouth,79000\n"),
                        _ if rng.next().is_multiple_of(3) => publish_receipt(&spool, &mut rng, seq),
                        _ => publish_packet(&spool, &mut rng, seq),
                    };
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
    use warrant_store::prelude::*;

    #[test]
    fn demo_agents_publish_valid_packets_receipts_and_one_invalid_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let spool = Spool::new(dir.path());
        let demo = Demo::start(spool.clone(), Duration::from_millis(10));
        let mut scanner = warrant_store::spool::Scanner::new();
        let mut snap = scanner.scan(&spool).expect("scan");
        for _ in 0..400 {
            let rogue = snap.packets.iter().filter(|e| e.packet.agent == "agent-rogue").count();
            if snap.packets.len() >= 24 && !snap.receipts.is_empty() && rogue >= 14 {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
            snap = scanner.scan(&spool).expect("scan");
        }
        drop(demo);
        assert!(snap.packets.len() >= 6, "packets: {}", snap.packets.len());
        assert!(!snap.receipts.is_empty());
        assert!(snap.packets.iter().any(|p| p.packet.form == warrant_protocol::packet::PacketForm::Runtime));
        assert_eq!(snap.invalid.len(), 1, "{:?}", snap.invalid);
        assert!(snap.invalid[0].reason.to_string().contains("external_actions"));
        // The misbehaving agent: over its rate limit, and asking for Ring 0.
        let policies =
            warrant_protocol::graduation::PolicySet::load(dir.path(), Some(dir.path())).expect("demo policy");
        assert!(policies.tool("feed.post").is_some());
        let controls = warrant_protocol::control::ControlState::default();
        let now = warrant_protocol::clock::unix_seconds(&warrant_protocol::clock::now_rfc3339()).unwrap_or(0.0);
        let ctx = warrant_protocol::verdict::VerdictContext { policies: &policies, controls: &controls, now };
        let a = crate::monitor::assess(
            &ctx,
            &snap.packets,
            &snap.receipts,
            &Default::default(),
            &Default::default(),
            &Default::default(),
            true,
            "demo",
        );
        let rogue = &a.monitor.agents["agent-rogue"];
        // A burst of 14 against Ring 3's bucket (10 tokens, 5 a second): what the bucket can
        // have let through is 10 plus what it refilled between the first and the last arrival
        // (the files' modification times), however slowly the demo could publish them.
        let limits = warrant_protocol::rings::rate::default_limits(warrant_protocol::rings::Ring::Sandbox);
        let times: Vec<f64> =
            snap.packets.iter().filter(|e| e.packet.agent == "agent-rogue").map(|e| e.arrived).collect();
        let span = times.iter().copied().fold(f64::MIN, f64::max) - times.iter().copied().fold(f64::MAX, f64::min);
        let most_allowed = limits.burst + (limits.rate * span).ceil();
        assert!(times.len() >= 14, "{} rogue packets", times.len());
        assert!(
            rogue.rate_rejections as f64 >= times.len() as f64 - most_allowed,
            "{} packets over {span:.3} s against a burst of {}: {rogue:?}",
            times.len(),
            limits.burst
        );
        assert!(span >= 0.6 || rogue.rate_rejections >= 1, "a burst inside {span:.3} s is rejected: {rogue:?}");
        assert!((rogue.eff_score - 0.5).abs() < 1e-9, "its claimed 0.99 is capped by policy");
        let admin =
            a.verdicts.iter().find(|(id, _)| id.ends_with("-00") && id.starts_with("demo-rogue")).expect("admin");
        assert!(matches!(
            admin.1.state,
            warrant_protocol::packet::DecisionState::Blocked | warrant_protocol::packet::DecisionState::HumanOnly
        ));
        assert!(a.verdicts.values().any(|v| {
            v.models.iter().any(|m| m.model == warrant_protocol::verdict::Model::RateLimit && m.verdict == "exceeded")
        }));
        // Its precondition, observed by nobody here, fails closed (and is not kept as observed).
        assert_eq!(a.unobserved, 1);
        assert!(!a.preconditions.contains_key("demo-report-publish"));
        // The opening mix: most decidable, one human only, one blocked with its reason.
        // (demo-report-publish is decidable until the demo changes its world file, at tick 18.)
        let report = &a.verdicts["demo-report-publish"];
        assert!(
            report.approvable() || report.decisive == warrant_protocol::verdict::Model::Preconditions,
            "{report:?}"
        );
        let opening = [
            "demo-0001-email-send-external",
            "demo-0002-calendar-create",
            "demo-0003-payment-initiate",
            "demo-0004-draft-response",
            "tg_demo_email-send-external",
            "demo-crm-purge",
        ];
        let state = |id: &str| a.verdicts.get(id).map(|v| v.state);
        use warrant_protocol::packet::DecisionState::{Blocked, HumanOnly};
        let states: Vec<_> = opening.iter().map(|id| (*id, state(id))).collect();
        assert!(states.iter().all(|(_, s)| s.is_some()), "every opening packet is assessed: {states:?}");
        let blocked: Vec<&str> = opening.iter().copied().filter(|id| state(id) == Some(Blocked)).collect();
        let human: Vec<&str> = opening.iter().copied().filter(|id| state(id) == Some(HumanOnly)).collect();
        assert_eq!((blocked, human), (vec!["demo-crm-purge"], vec!["demo-0003-payment-initiate"]), "{states:?}");
        let (why, remedy) = a.verdicts["demo-crm-purge"].why_not_approvable().expect("blocked");
        assert!(why.contains("L5") && remedy.contains("prohibited"), "{why} / {remedy}");
    }
}
