//! Receipts: published into `receipts/` as an agent does, or recorded in the chain.

use super::first_problem;
use super::view::receipt_hash_of;
use super::{Scanner, Spool};
use crate::chain_file::{self, ChainError};
use crate::prelude::*;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use warrant_protocol::chain;
use warrant_protocol::graduation::evidence::SourceType;
use warrant_protocol::graduation::receipt::{ReceiptInput, ReceiptOutcome, build_receipt};
use warrant_protocol::keys::Principal;
use warrant_protocol::packet::{self, Receipt};

/// Why a receipt could not be recorded.
#[derive(Debug, thiserror::Error)]
pub enum ReceiptError {
    /// The class, agent or packet id is not acceptable.
    #[error("{0}")]
    Invalid(String),
    /// The spool is not safe to write into (see [`Spool::check_private`]).
    #[error("unsafe spool: {0}")]
    UnsafeSpool(#[from] crate::spool::UnsafeSpool),
    /// The record would not verify: nothing was appended.
    #[error("refusing to append a record that would not verify: {0}")]
    WouldNotVerify(String),
    /// Appending failed.
    #[error(transparent)]
    Chain(#[from] ChainError),
    /// Creating the spool failed.
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// What [`record_receipt`] records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceiptRequest<'a> {
    /// The action class (normalized and checked against the class-id pattern).
    pub action_class: &'a str,
    /// The outcome.
    pub outcome: ReceiptOutcome,
    /// The agent.
    pub agent: &'a str,
    /// The packet it concerns, if any (a safe id).
    pub packet_id: Option<&'a str>,
    /// Declared provenance.
    pub source_type: Option<SourceType>,
    /// A note.
    pub note: Option<&'a str>,
    /// The tool call a hook or the gateway ran ([`warrant_protocol::graduation::receipt::ReceiptInput::tool_call`]).
    pub tool_call: Option<&'a Value>,
}

/// The canonical class and the agent of a receipt request, checked: a class id, a safe agent
/// id, a safe packet id.
fn receipt_subject<'a>(req: &ReceiptRequest<'a>) -> Result<(String, &'a str), ReceiptError> {
    let class = warrant_protocol::registry::normalize(req.action_class);
    if !packet::is_class_id(&class) {
        return Err(ReceiptError::Invalid(format!(
            "{:?} is not an action class (like email.send.external)",
            req.action_class
        )));
    }
    let agent = req.agent.trim();
    if !packet::is_safe_id(agent) {
        return Err(ReceiptError::Invalid(format!(
            "agent id {:?} is not a safe id (A-Z a-z 0-9 . _ : -)",
            warrant_protocol::text::inert(agent, 60)
        )));
    }
    if let Some(p) = req.packet_id
        && !packet::is_safe_id(p)
    {
        return Err(ReceiptError::Invalid(format!("unsafe packet id {p:?}")));
    }
    Ok((class, agent))
}

/// The portable v0.1 receipt `req` asks for ([`build_receipt`]), with its id, canonical class,
/// checked agent, time and previous receipt hash.
fn receipt_of(
    req: &ReceiptRequest<'_>,
    receipt_id: &str,
    class: &str,
    agent: &str,
    created_at: &str,
    prev_hash: Option<&str>,
) -> Value {
    build_receipt(&ReceiptInput {
        receipt_id,
        action_class: class,
        outcome: req.outcome,
        agent,
        packet_id: req.packet_id,
        source_type: req.source_type,
        created_at,
        prev_hash,
        note: req.note,
        tool_call: req.tool_call,
    })
}

/// Publishes a portable v0.1 receipt as a file in `receipts/` (temp file and rename, mode
/// 0644), as an agent that does not own the spool does: the agent's own word, listed and shown
/// apart, never the gate's evidence (`docs/spool.md`, Receipts). Not chained: `prev_hash` is
/// absent.
///
/// # Errors
/// [`ReceiptError::Invalid`] for a bad class, agent or packet id; I/O errors.
pub fn publish_receipt(
    spool: &Spool,
    req: &ReceiptRequest<'_>,
    created_at: &str,
) -> Result<(Value, PathBuf), ReceiptError> {
    publish_signed_receipt(spool, req, created_at, None)
}

/// [`publish_receipt`], signed with `gateway`'s key when given
/// ([`warrant_protocol::graduation::receipt::sign_receipt`]): what `warrant mcp-gateway --sign-receipts`
/// publishes. Once the principal pins that key as a gateway's (`warrant keys pin --gateway`), the
/// receipt is an observed outcome (provenance `receipt`, evidence for the gate).
///
/// # Errors
/// As [`publish_receipt`].
pub fn publish_signed_receipt(
    spool: &Spool,
    req: &ReceiptRequest<'_>,
    created_at: &str,
    gateway: Option<&Principal>,
) -> Result<(Value, PathBuf), ReceiptError> {
    let (class, agent) = receipt_subject(req)?;
    let receipt_id = format!("rcpt-{}", uuid::Uuid::now_v7());
    let mut receipt = receipt_of(req, &receipt_id, &class, agent, created_at, None);
    if let Some(key) = gateway {
        warrant_protocol::graduation::receipt::sign_receipt(&mut receipt, key);
    }
    let path = spool.publish(&spool.receipts_dir(), &receipt_id, &receipt)?;
    Ok((receipt, path))
}

/// The receipts of `spool` that a gateway pinned in `config_dir` signed (observed outcomes,
/// [`warrant_protocol::packet::Receipt::observed_by`]), for a caller that reads packets only
/// ([`Scanner::scan_packets_selected`]) but judges with the gate's evidence. A scanner is kept per
/// spool and configuration for the process's life, so each receipt file is read and its
/// signature checked once per version; it is replaced when the gateway keys change. Empty when
/// the directory cannot be read. When another user owns the spool (the caller is an agent's hook
/// or a gateway under its own user), the gateway keys are those of the spool's own
/// `pinned_keys.toml`, which that user must own ([`warrant_protocol::keys::GatewayKeys::load_owned`]).
#[must_use]
pub fn observed_receipts(spool: &Spool, config_dir: &Path) -> Vec<Arc<Receipt>> {
    type Kept = HashMap<(PathBuf, PathBuf), (warrant_protocol::keys::GatewayKeys, Scanner)>;
    static SCANNERS: std::sync::OnceLock<std::sync::Mutex<Kept>> = std::sync::OnceLock::new();
    // In a spool another user (the principal) owns, only that user's pin file counts.
    let Ok(principal) = fs::metadata(spool.root()).map(|m| m.uid()) else { return Vec::new() };
    let owner = (principal != rustix::process::geteuid().as_raw()).then_some(principal);
    // There, the pins are the ones the principal published in the spool: the process's own
    // configuration directory is the agent's (or the gateway user's) to change.
    let dir = if owner.is_some() { spool.root() } else { config_dir };
    let Ok(gateways) = warrant_protocol::keys::GatewayKeys::load_owned(dir, owner) else { return Vec::new() };
    if gateways.is_empty() {
        return Vec::new();
    }
    let Ok(mut kept) = SCANNERS.get_or_init(Default::default).lock() else { return Vec::new() };
    let key = (spool.root().to_owned(), config_dir.to_owned());
    let entry =
        kept.entry(key).or_insert_with(|| (gateways.clone(), Scanner::new().with_gateway_keys(gateways.clone())));
    if entry.0 != gateways {
        *entry = (gateways.clone(), Scanner::new().with_gateway_keys(gateways));
    }
    match entry.1.scan(spool) {
        Ok(snap) => snap.receipts.into_iter().filter(|r| r.observed_by.is_some()).collect(),
        Err(_) => Vec::new(),
    }
}

/// Records a portable v0.1 receipt in the chain (`record_receipt`): under the chain's lock,
/// finds the last receipt's `content_hash` (scanning back from the tail), builds the receipt with
/// it as `prev_hash`, and appends an OpenTrustGraph record carrying it in `metadata.tg_receipt`
/// (outcome `denied` for a refusal, else `success`; autonomy tier `suggest`; no approval). The
/// whole chain is not re-verified (receipts are unsigned agent reports; `warrant verify` and the
/// console check it), but the new record must verify on its own.
///
/// # Errors
/// [`ReceiptError`]; on any error nothing was appended.
pub fn record_receipt(
    spool: &Spool,
    req: &ReceiptRequest<'_>,
    created_at: &str,
) -> Result<(Value, chain::Appended), ReceiptError> {
    let (class, agent) = receipt_subject(req)?;
    spool.ensure()?;
    spool.check_private()?;
    let receipt_id = format!("rcpt-{}", uuid::Uuid::now_v7());
    let path = spool.chain_path();
    let mut refusal = None;
    let mut receipt = Value::Null;
    let appended = chain_file::append_to(&path, spool.chain_upstream(), |head| {
        let prev = match chain_file::find_last(&path, receipt_hash_of) {
            Ok(p) => p,
            Err(e) => return Err(e.to_string()),
        };
        receipt = receipt_of(req, &receipt_id, &class, agent, created_at, prev.as_deref());
        let body = receipt_record_body(&receipt, req.outcome, req.packet_id);
        if let Some(problem) = first_problem(&body, head, None) {
            refusal = Some(problem);
            return Err("would not verify".into());
        }
        Ok(body)
    });
    match appended {
        Ok(a) => Ok((receipt, a)),
        Err(e) => Err(refusal.map_or(ReceiptError::Chain(e), ReceiptError::WouldNotVerify)),
    }
}

/// The chain record of an agent's receipt (built by `build_receipt`): the receipt in
/// `metadata.tg_receipt`, outcome `denied` for a refusal else `success`, autonomy tier
/// `suggest`, no approver, trace `warrant:<packet id>` or `warrant:receipt:<receipt id>`.
#[must_use]
pub fn receipt_record_body(receipt: &Value, outcome: ReceiptOutcome, packet_id: Option<&str>) -> Map<String, Value> {
    let s = |k: &str| receipt.get(k).and_then(Value::as_str).unwrap_or_default();
    let trace = packet_id.map_or_else(|| format!("warrant:receipt:{}", s("receipt_id")), |p| format!("warrant:{p}"));
    let mut meta = Map::new();
    meta.insert("tg_receipt".into(), receipt.clone());
    chain::new_record_body(
        s("agent"),
        s("action_class"),
        None,
        outcome.otg_outcome(),
        &trace,
        "suggest",
        s("created_at"),
        meta,
    )
}
