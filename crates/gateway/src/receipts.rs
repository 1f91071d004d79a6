//! The receipts of calls that ran with no packet: counted per tool, class and result, and
//! written in batches.

use super::Shared;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// How often the receipts of calls that ran with no packet are written (and once more when the
/// connection ends).
pub const RECEIPTS_EVERY: Duration = Duration::from_secs(1);

/// The calls of one tool and action class that ran with no packet since the last receipt, with
/// one result (`isError` or not).
#[derive(Debug)]
pub(super) struct Unpacketed {
    count: u64,
    first: String,
    last: String,
    first_at: String,
    last_at: String,
}

impl Shared {
    /// Counts a call that ran with no packet towards its receipt.
    pub(super) fn ran_unpacketed(&self, class: String, key: String, call_id: &str, is_error: bool) {
        let at = warrant_protocol::clock::now_rfc3339();
        if let Ok(mut m) = self.unpacketed.lock() {
            let e = m.entry((class, key, is_error)).or_insert_with(|| Unpacketed {
                count: 0,
                first: call_id.to_owned(),
                last: String::new(),
                first_at: at.clone(),
                last_at: String::new(),
            });
            e.count += 1;
            call_id.clone_into(&mut e.last);
            e.last_at = at;
        }
    }

    /// Writes one receipt for each tool, class and result whose calls ran with no packet since
    /// the last time: its note counts them and names the first and last call ids and times.
    /// What could not be written is kept for the next time, and until it is, no call runs with
    /// no packet ([`Shared::receipts_behind`]): each then needs its own packet, which fails
    /// closed while the spool cannot be written.
    pub(super) async fn flush_receipts(self: Arc<Self>) {
        let batch = match self.unpacketed.lock() {
            Ok(mut m) if !m.is_empty() => std::mem::take(&mut *m),
            _ => return,
        };
        let (Some(live), agent, signer) = (self.live.clone(), self.opts.agent.clone(), self.opts.signer.clone()) else {
            return;
        };
        let written = tokio::task::spawn_blocking(move || {
            let mut unwritten = Vec::new();
            for ((class, key, is_error), u) in batch {
                let note = format!(
                    "{} call(s) of {key} ran with no packet (the gate allows them on their own), isError {is_error}: {} ({}) to {} ({})",
                    u.count, u.first, u.first_at, u.last, u.last_at
                );
                let call = json!({"host": "mcp-gateway", "tool": key, "calls": u.count});
                let req = warrant_store::spool::ReceiptRequest {
                    action_class: &class,
                    outcome: warrant_protocol::graduation::receipt::ReceiptOutcome::Execute,
                    agent: &agent,
                    packet_id: None,
                    source_type: None,
                    note: Some(&note),
                    tool_call: Some(&call),
                };
                let now = warrant_protocol::clock::now_rfc3339();
                // Only a result the tool reported as a success is signed: an observed outcome is
                // evidence for the class, and an error is no evidence of a good call.
                let signer = signer.as_deref().filter(|_| !is_error);
                if let Err(e) = warrant_store::spool::publish_signed_receipt(live.spool(), &req, &now, signer) {
                    eprintln!("warrant mcp-gateway: could not record the receipt of {note}: {e}");
                    unwritten.push(((class, key, is_error), u));
                }
            }
            unwritten
        })
        .await;
        let (unwritten, lost) = match written {
            Ok(u) => (u, false),
            Err(e) => {
                eprintln!("warrant mcp-gateway: could not record receipts: {e}");
                (Vec::new(), true)
            }
        };
        let behind = lost || !unwritten.is_empty();
        if let Ok(mut m) = self.unpacketed.lock() {
            for (k, u) in unwritten {
                match m.get_mut(&k) {
                    Some(newer) => {
                        newer.count += u.count;
                        newer.first = u.first;
                        newer.first_at = u.first_at;
                    }
                    None => {
                        m.insert(k, u);
                    }
                }
            }
        }
        self.receipts_behind.store(behind, std::sync::atomic::Ordering::SeqCst);
    }
}
