//! Signed checkpoints: the principal's statement "this chain had `records` records ending in
//! `head_hash`, `bytes` long", signed with every decision and control, so cutting records off the
//! end of a chain is detected (`docs/spool.md`, Checkpoints).
//!
//! A hash chain alone cannot tell a chain from its own prefix: removing the last records leaves a
//! shorter chain that verifies. The checkpoint is written, under the chain's lock and right after
//! the record it follows, to `checkpoint.json` in the spool, to the principal's own copy
//! (`<config dir>/checkpoints/<spool id>.json` for the CLI and the console, out of the agents'
//! reach; see [`crate::store::spool::Spool::with_checkpoint_copies`]), and into the decision file each agent receives. [`crate::store::checkpoint_files::latest`] takes the longest valid one of all of them, and
//! [`crate::store::checkpoint_files::check`] reports a chain shorter than it, or one whose record at the checkpoint is not the
//! one signed.

use crate::protocol::keys::{PinnedKeys, Principal};
use serde_json::{Value, json};

/// The domain of a checkpoint document.
pub const CHECKPOINT_DOMAIN: &str = "warrant.checkpoint/v1";

/// A checkpoint whose signature verified under a pinned key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// Records in the chain at the checkpoint (the last one's `chain_index`).
    pub records: u64,
    /// The `entry_hash` of record `records`.
    pub head_hash: String,
    /// The chain's length in bytes through that record's newline.
    pub bytes: u64,
    /// `"sha256:<hex>"` of the chain's first `bytes` bytes (`None` in checkpoints signed before
    /// warrant wrote it: those still detect truncation, but a decision verifies the whole chain).
    pub prefix_sha256: Option<String>,
    /// Who signed it.
    pub principal: String,
    /// When (RFC 3339).
    pub signed_at: String,
    /// Where it was found.
    pub source: String,
}

/// Signs a checkpoint: `{"document": {domain, records, head_hash, bytes, prefix_sha256,
/// principal, key, signed_at}, "signature": {…}}` (the signature as for decisions, over the
/// canonical document). `prefix_sha256` is `"sha256:<hex>"` of the chain's first `bytes` bytes:
/// the principal signs it only over a chain verified under the lock, so a later decision can
/// trust a prefix whose bytes still hash to it without verifying it again (`docs/spool.md`,
/// Incremental verification).
#[must_use]
pub fn sign(
    principal: &Principal,
    records: u64,
    head_hash: &str,
    bytes: u64,
    prefix_sha256: &str,
    signed_at: &str,
) -> Value {
    let document = json!({
        "domain": CHECKPOINT_DOMAIN,
        "records": records,
        "head_hash": head_hash,
        "bytes": bytes,
        "prefix_sha256": prefix_sha256,
        "principal": principal.name,
        "key": principal.fingerprint(),
        "signed_at": signed_at,
    });
    let signature = crate::protocol::decision::sign_document(principal, &document);
    json!({"document": document, "signature": signature})
}

/// Verifies a signed checkpoint against the pinned keys.
///
/// # Errors
/// A sentence naming what is wrong: shape, domain, or signature.
pub fn verify(signed: &Value, pinned: &PinnedKeys, source: &str) -> Result<Checkpoint, String> {
    let doc = signed.get("document").filter(|d| d.is_object()).ok_or("a checkpoint needs a document")?;
    let sig = signed.get("signature").filter(|d| d.is_object()).ok_or("a checkpoint needs a signature")?;
    if doc.get("domain").and_then(Value::as_str) != Some(CHECKPOINT_DOMAIN) {
        return Err("not a warrant checkpoint".into());
    }
    crate::protocol::decision::verify_document(doc, sig, pinned)?;
    let s = |k: &str| doc.get(k).and_then(Value::as_str).map(str::to_owned);
    let n = |k: &str| doc.get(k).and_then(Value::as_u64);
    let prefix_sha256 = match doc.get("prefix_sha256") {
        None => None,
        Some(Value::String(h)) if crate::protocol::canonical::is_sha256_string(h) => Some(h.clone()),
        Some(_) => return Err("a checkpoint's prefix_sha256 must be a sha256 digest string".into()),
    };
    match (n("records"), s("head_hash"), n("bytes")) {
        (Some(records), Some(head_hash), Some(bytes))
            if records >= 1 && crate::protocol::canonical::is_sha256_string(&head_hash) =>
        {
            Ok(Checkpoint {
                records,
                head_hash,
                bytes,
                prefix_sha256,
                principal: s("principal").unwrap_or_default(),
                signed_at: s("signed_at").unwrap_or_default(),
                source: source.to_owned(),
            })
        }
        _ => Err("a checkpoint needs records >= 1, a sha256 head_hash and bytes".into()),
    }
}
