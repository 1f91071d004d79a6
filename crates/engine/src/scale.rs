//! Synthetic spools for the scale runs (`docs/performance.md`): a chain of N records and M
//! pending packets, built with the same functions warrant uses for real records, so the chain
//! verifies against the principal's pinned key.
//!
//! The chain is mostly receipts (agents report far more than the principal decides), with one
//! signed principal decision every `decision_every` records. Records are sealed in memory and
//! written through one buffered writer, synced once at the end: this is a generator, not an
//! append path (appends are [`warrant_store::chain_file::append`], one `fsync` each).

use serde_json::{Value, json};
use std::fs::OpenOptions;
use std::io::{self, BufWriter, Write as _};
use time::OffsetDateTime;
use warrant_protocol::chain::{self, ChainHead};
use warrant_protocol::decision::{self, DecisionInput, Verdict};
use warrant_protocol::graduation::SourceType;
use warrant_protocol::graduation::receipt::{ReceiptInput, ReceiptOutcome, build_receipt};
use warrant_protocol::keys::Principal;
use warrant_store::spool::Spool;

/// What to generate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GenerateSpec {
    /// Chain records to write.
    pub records: u64,
    /// Pending packets to publish in `packets/`.
    pub pending: u64,
    /// One signed principal decision every this many records (0: none); the rest are receipts.
    pub decision_every: u64,
    /// Agents the records and packets are spread over.
    pub agents: u64,
}

impl Default for GenerateSpec {
    fn default() -> Self {
        Self { records: 10_000, pending: 100, decision_every: 50, agents: 16 }
    }
}

/// What was generated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generated {
    /// Records in the chain.
    pub records: u64,
    /// Of which signed decisions.
    pub decisions: u64,
    /// Pending packets published.
    pub pending: u64,
    /// Size of `chain.jsonl` in bytes.
    pub bytes: u64,
    /// `entry_hash` of the last record.
    pub head: Option<String>,
}

/// Writes a new chain of `spec.records` records into `spool` (which must not have a chain yet)
/// and publishes `spec.pending` packets. Record times are spread over the 60 days before `now`,
/// packets over the hour before it.
///
/// # Errors
/// `AlreadyExists` when the spool has a chain; other I/O errors.
pub fn generate(
    spool: &Spool,
    principal: &Principal,
    spec: &GenerateSpec,
    now: OffsetDateTime,
) -> io::Result<Generated> {
    spool.ensure()?;
    let path = spool.chain_path();
    let file = OpenOptions::new().write(true).create_new(true).open(&path)?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    let classes: Vec<&str> = warrant_protocol::registry::CANONICAL.iter().map(|c| c.id).collect();
    let agents = spec.agents.max(1);
    let span = time::Duration::days(60);
    let start = now - span;
    let step = span / i32::try_from(spec.records.max(1)).unwrap_or(i32::MAX);
    let mut head = ChainHead { last_index: 0, last_hash: None };
    let mut prev_receipt: Option<String> = None;
    let (mut decisions, mut bytes) = (0_u64, 0_u64);
    let mut line = Vec::with_capacity(4096);
    for i in 0..spec.records {
        let at = warrant_protocol::clock::format_rfc3339(start + step * i32::try_from(i).unwrap_or(i32::MAX));
        let agent = format!("agent-{:02}", i % agents);
        let class = classes[(i % classes.len() as u64) as usize];
        let decide = spec.decision_every > 0 && (i + 1) % spec.decision_every == 0;
        let body = if decide {
            decisions += 1;
            let packet_id = format!("gen-{i}");
            let verdict = if i % 7 == 0 { Verdict::Refuse } else { Verdict::Approve };
            let trace = format!("warrant:{packet_id}");
            let packet_hash = warrant_protocol::canonical::sha256_prefixed(packet_id.as_bytes());
            let input = DecisionInput {
                stands_in_for: &[],
                packet_id: &packet_id,
                packet_hash: &packet_hash,
                action_class: class,
                agent: &agent,
                trace_id: &trace,
                verdict,
                reason: (verdict == Verdict::Refuse).then_some("generated refusal"),
                decided_at: &at,
            };
            let signed = decision::sign_decision(principal, &input);
            warrant_store::spool::decision_record_body(&input, &signed, prev_receipt.as_deref(), None)
        } else {
            let outcome = match i % 50 {
                0..=34 => ReceiptOutcome::Approve,
                35..=44 => ReceiptOutcome::Execute,
                45..=48 => ReceiptOutcome::Correct,
                _ => ReceiptOutcome::Refuse,
            };
            let source = if i % 3 == 0 { SourceType::Connector } else { SourceType::Receipt };
            let receipt_id = format!("rcpt-gen-{i}");
            let receipt = build_receipt(&ReceiptInput {
                receipt_id: &receipt_id,
                action_class: class,
                outcome,
                agent: &agent,
                packet_id: None,
                source_type: Some(source),
                created_at: &at,
                prev_hash: prev_receipt.as_deref(),
                note: None,
                tool_call: None,
            });
            warrant_store::spool::receipt_record_body(&receipt, outcome, None)
        };
        // Each receipt links to the one before it, the principal's receipts included.
        prev_receipt = body
            .get("metadata")
            .and_then(|m| m.pointer("/tg_receipt/content_hash"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let sealed = chain::seal(body, &head);
        line.clear();
        warrant_protocol::canonical::write_canonical(&sealed.record, &mut line)?;
        line.push(b'\n');
        out.write_all(&line)?;
        bytes += line.len() as u64;
        head = ChainHead { last_index: sealed.chain_index, last_hash: Some(sealed.entry_hash) };
    }
    out.into_inner().map_err(io::IntoInnerError::into_error)?.sync_all()?;
    for j in 0..spec.pending {
        let id = format!("pending-{j:06}");
        let class = classes[(j % classes.len() as u64) as usize];
        let agent = format!("agent-{:02}", j % agents);
        let created = warrant_protocol::clock::format_rfc3339(now - time::Duration::seconds((j % 3600) as i64));
        let summary = format!("generated packet {j} for {class}");
        let doc = warrant_protocol::packet::portable_packet(&id, class, &agent, &summary, json!({"n": j}), &created);
        spool.publish(&spool.packets_dir(), &id, &doc)?;
    }
    Ok(Generated { records: spec.records, decisions, pending: spec.pending, bytes, head: head.last_hash })
}
