//! Approval packets and receipts as warrant emits them (`approval-packet.schema.json`,
//! `receipt.schema.json`), and the evidence a receipt stands for.
//!
//! Receipt chaining (§6; the spec leaves it open, `docs/conformance.md` "Receipt hashes"):
//! `content_hash` = `sha256:` + hex SHA-256 of the canonical JSON of the receipt without
//! `content_hash` and `signature`; `prev_hash` is the `content_hash` of the previous receipt in
//! the same chain, absent on the first.

use super::evidence::{EvidenceRow, RowRead, SourceType};
use super::gate::Decision;
use crate::canonical;
use crate::chain_evidence::PackedRow;
use serde_json::{Map, Value, json};
use std::fmt;

/// The four receipt outcomes the spec names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReceiptOutcome {
    /// The principal (or a reviewer) approved.
    Approve,
    /// Refused.
    Refuse,
    /// Corrected before use.
    Correct,
    /// Executed.
    Execute,
}

impl ReceiptOutcome {
    /// All four.
    pub const ALL: [ReceiptOutcome; 4] =
        [ReceiptOutcome::Approve, ReceiptOutcome::Refuse, ReceiptOutcome::Correct, ReceiptOutcome::Execute];

    /// The wire spelling.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            ReceiptOutcome::Approve => "approve",
            ReceiptOutcome::Refuse => "refuse",
            ReceiptOutcome::Correct => "correct",
            ReceiptOutcome::Execute => "execute",
        }
    }

    /// Parses the wire spelling.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|o| o.as_str() == s)
    }

    /// The evidence label (§4.1, warrant's mapping): approved, rejected, edited, sent.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            ReceiptOutcome::Approve => "approved",
            ReceiptOutcome::Refuse => "rejected",
            ReceiptOutcome::Correct => "edited",
            ReceiptOutcome::Execute => "sent",
        }
    }

    /// The OpenTrustGraph outcome of its chain record.
    #[must_use]
    pub fn otg_outcome(self) -> &'static str {
        match self {
            ReceiptOutcome::Refuse => "denied",
            _ => "success",
        }
    }
}

impl From<crate::decision::Verdict> for ReceiptOutcome {
    fn from(v: crate::decision::Verdict) -> Self {
        match v {
            crate::decision::Verdict::Approve => ReceiptOutcome::Approve,
            crate::decision::Verdict::Refuse => ReceiptOutcome::Refuse,
        }
    }
}

impl fmt::Display for ReceiptOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a receipt records.
#[derive(Debug, Clone, PartialEq)]
pub struct ReceiptInput<'a> {
    /// `receipt_id` (non-empty, a safe id).
    pub receipt_id: &'a str,
    /// Canonical action class.
    pub action_class: &'a str,
    /// The outcome.
    pub outcome: ReceiptOutcome,
    /// The agent the receipt is about.
    pub agent: &'a str,
    /// The packet it concerns, if any.
    pub packet_id: Option<&'a str>,
    /// Provenance of the evidence.
    pub source_type: Option<SourceType>,
    /// RFC 3339.
    pub created_at: &'a str,
    /// The previous receipt's `content_hash`.
    pub prev_hash: Option<&'a str>,
    /// A reason or note, if any.
    pub note: Option<&'a str>,
    /// The tool call a hook or the gateway ran, as `tool_call` (an extension field: the schema
    /// allows any): `{"host", "tool", "calls"}`, `calls` counting the calls one receipt stands for
    /// (the gateway's calls that ran with no packet). The Agents view counts them.
    pub tool_call: Option<&'a Value>,
}

/// The `content_hash` of a receipt: over everything but `content_hash` and `signature`.
#[must_use]
pub fn content_hash(receipt: &Map<String, Value>) -> String {
    let mut m = receipt.clone();
    m.remove("content_hash");
    m.remove("signature");
    canonical::canonical_hash(&Value::Object(m))
}

/// Builds a portable v0.1 receipt with its `content_hash`.
#[must_use]
pub fn build_receipt(r: &ReceiptInput<'_>) -> Value {
    build_receipt_labelled(r, r.outcome.label())
}

/// [`build_receipt`] with the evidence `label` given rather than the outcome's own: a
/// `correct` receipt of an approval as corrected is `minor_edit` or `heavy_rewrite` by the
/// edit's size ([`crate::correction::EditSize`]).
#[must_use]
pub fn build_receipt_labelled(r: &ReceiptInput<'_>, label: &str) -> Value {
    let mut m = Map::new();
    m.insert("type".into(), json!("trust_graduation_receipt"));
    m.insert("receipt_id".into(), json!(r.receipt_id));
    m.insert("action_class".into(), json!(r.action_class));
    m.insert("outcome".into(), json!(r.outcome.as_str()));
    m.insert("external_action_executed".into(), json!(r.outcome == ReceiptOutcome::Execute));
    match r.outcome {
        ReceiptOutcome::Approve => m.insert("human_approved".into(), json!(true)),
        ReceiptOutcome::Refuse => m.insert("human_approved".into(), json!(false)),
        _ => None,
    };
    m.insert("created_at".into(), json!(r.created_at));
    m.insert("agent".into(), json!(r.agent));
    m.insert("label".into(), json!(label));
    if let Some(p) = r.packet_id {
        m.insert("packet_id".into(), json!(p));
    }
    if let Some(t) = r.source_type {
        m.insert("source_type".into(), json!(t.as_str()));
    }
    if let Some(n) = r.note {
        m.insert("note".into(), json!(n));
    }
    if let Some(t) = r.tool_call {
        m.insert("tool_call".into(), t.clone());
    }
    if let Some(p) = r.prev_hash {
        m.insert("prev_hash".into(), json!(p));
    }
    let hash = content_hash(&m);
    m.insert("content_hash".into(), json!(hash));
    Value::Object(m)
}

/// The evidence row a receipt stands for: its class, the label of its outcome (or of its own
/// `label`/`outcome` text for foreign receipts), its date, and `source_type` — at most
/// `max_provenance` (a receipt file an agent dropped in the spool counts at most as a
/// connector's). `None` when the class is not an action class; `recorded_at` is the
/// `created_at` only when that is RFC 3339, so the row is one [`EvidenceRow::from_json`] accepts.
#[must_use]
pub fn receipt_evidence(receipt: &Value, max_provenance: Option<SourceType>) -> Option<EvidenceRow> {
    read_of_fields(|k| receipt.get(k).and_then(Value::as_str), max_provenance).map(RowRead::into_row)
}

/// [`receipt_evidence`] of a receipt's JSON text, and its `content_hash` (when a string), read
/// without building a [`Value`]: only the members the row needs, as borrowed text. The same
/// row as [`receipt_evidence`] of the parsed text (test
/// `receipt_evidence_of_text_is_of_the_value`); `(None, None)` when the text is not a JSON
/// object.
#[must_use]
pub fn receipt_evidence_of_text(
    text: &str,
    max_provenance: Option<SourceType>,
) -> (Option<EvidenceRow>, Option<String>) {
    let Ok(fields) = serde_json::from_str::<ReceiptFields<'_>>(text) else { return (None, None) };
    let hash = fields.get("content_hash").map(str::to_owned);
    (read_of_fields(|k| fields.get(k), max_provenance).map(RowRead::into_row), hash)
}

/// [`receipt_evidence_of_text`] packed into one allocation, for a verifier's worker to hand to
/// the thread that folds the chain: the row as a [`PackedRow`] whose
/// [`PackedRow::extra`] is the receipt's `content_hash`; the hash on its own (`.1`) only when
/// the receipt stands for no row. `(None, None)` when the text is not a JSON object. The same
/// row and hash as [`receipt_evidence_of_text`] (test `receipt_evidence_of_text_is_of_the_value`).
#[must_use]
pub fn receipt_evidence_packed(text: &str, max_provenance: Option<SourceType>) -> (Option<PackedRow>, Option<String>) {
    let Ok(fields) = serde_json::from_str::<ReceiptFields<'_>>(text) else { return (None, None) };
    let hash = fields.get("content_hash");
    match read_of_fields(|k| fields.get(k), max_provenance).and_then(|row| PackedRow::of_read(&row, hash)) {
        Some(row) => (Some(row), None),
        None => (None, hash.map(str::to_owned)),
    }
}

/// The row of [`receipt_evidence`] from a receipt's string members (`get`: the member's value
/// when it is a string), borrowing them.
fn read_of_fields<'v>(
    get: impl Fn(&str) -> Option<&'v str>,
    max_provenance: Option<SourceType>,
) -> Option<RowRead<'v>> {
    let first = |keys: &[&str]| keys.iter().find_map(|k| get(k));
    let class = crate::registry::normalize_cow(first(&["action_class", "actionClass"])?);
    if !crate::packet::is_class_id(&class) {
        return None;
    }
    let outcome = first(&["outcome"])?;
    let label = ReceiptOutcome::parse(outcome).map_or(outcome, |o| o.label());
    let declared = first(&["source_type", "sourceType"]).and_then(SourceType::parse);
    let source_type = match (declared, max_provenance) {
        (Some(d), Some(cap)) if d.weight() > cap.weight() => Some(cap),
        (None, Some(_)) => None,
        (d, _) => d,
    };
    let created = first(&["created_at", "createdAt"]);
    let date = created.and_then(|c| c.get(..10)).filter(|d| super::evidence::is_date(d));
    let mut row = RowRead::new(class, label, source_type, date);
    row.receipt_id = first(&["receipt_id", "receiptId"]);
    row.recorded_at = created.filter(|c| crate::clock::parse_rfc3339(c).is_some());
    row.source = Some(if max_provenance.is_some() { "spool" } else { "chain" });
    Some(row)
}

/// The members of a receipt [`receipt_evidence_of_text`] reads, each `Some` only when it is a
/// string (as `Value::as_str` reads it); any other member is skipped unread. A member named twice
/// keeps its last value, as serde_json's `Value` does.
#[derive(Default)]
struct ReceiptFields<'a> {
    values: [Option<std::borrow::Cow<'a, str>>; RECEIPT_FIELDS.len()],
}

/// The receipt members [`ReceiptFields`] keeps.
const RECEIPT_FIELDS: [&str; 10] = [
    "action_class",
    "actionClass",
    "outcome",
    "source_type",
    "sourceType",
    "created_at",
    "createdAt",
    "receipt_id",
    "receiptId",
    "content_hash",
];

impl ReceiptFields<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        let k = RECEIPT_FIELDS.iter().position(|f| *f == key)?;
        self.values[k].as_deref()
    }
}

/// A member's value: its text when it is a string, else `None` (read and dropped).
struct MaybeStr<'a>(Option<std::borrow::Cow<'a, str>>);
impl<'de> serde::Deserialize<'de> for MaybeStr<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = MaybeStr<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(MaybeStr(Some(std::borrow::Cow::Borrowed(v))))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(MaybeStr(Some(std::borrow::Cow::Owned(v.to_owned()))))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(MaybeStr(Some(std::borrow::Cow::Owned(v))))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(MaybeStr(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(MaybeStr(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(MaybeStr(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(MaybeStr(None))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(MaybeStr(None))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                while a.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(MaybeStr(None))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                while a.next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?.is_some() {}
                Ok(MaybeStr(None))
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> serde::Deserialize<'de> for ReceiptFields<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Members;
        impl<'de> serde::de::Visitor<'de> for Members {
            type Value = ReceiptFields<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a receipt object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                let mut out = ReceiptFields::default();
                while let Some(crate::canonical::Text(key)) = a.next_key()? {
                    match RECEIPT_FIELDS.iter().position(|f| *f == key) {
                        Some(k) => out.values[k] = a.next_value::<MaybeStr<'de>>()?.0,
                        None => {
                            a.next_value::<serde::de::IgnoredAny>()?;
                        }
                    }
                }
                Ok(out)
            }
        }
        d.deserialize_map(Members)
    }
}

/// The `domain` of the document a gateway signs for a receipt ([`sign_receipt`]).
pub const RECEIPT_SIGNATURE_DOMAIN: &str = "warrant.receipt/v1";

/// The document a gateway's signature on a receipt covers: the domain and the receipt's
/// `content_hash` (which commits to everything in the receipt but the hash and the signature).
#[must_use]
pub fn receipt_signature_document(content_hash: &str) -> Value {
    json!({"domain": RECEIPT_SIGNATURE_DOMAIN, "content_hash": content_hash})
}

/// Signs a receipt built by [`build_receipt`] with a gateway's key: its `signature` is the
/// detached signature object of [`crate::decision::sign_document`] (`algorithm`, `signer`,
/// `key_fingerprint`, `payload_hash`, base64 `signature`) over
/// [`receipt_signature_document`] of its `content_hash`. The `content_hash` does not cover
/// `signature`, so it is unchanged. A receipt without a `content_hash` is left unsigned.
pub fn sign_receipt(receipt: &mut Value, key: &crate::keys::Principal) {
    let Some(hash) = receipt.get("content_hash").and_then(Value::as_str).map(str::to_owned) else { return };
    let sig = crate::decision::sign_document(key, &receipt_signature_document(&hash));
    if let Some(m) = receipt.as_object_mut() {
        m.insert("signature".into(), sig);
    }
}

/// The pinned gateway key that signed `receipt`: its `content_hash` is the hash of its content
/// ([`content_hash`]) and its `signature` ([`sign_receipt`]) verifies under a key of
/// `gateways` (never a principal's: [`crate::keys::GatewayKeys`] holds none).
///
/// # Errors
/// Why the receipt is not a gateway's observation ([`GatewayReceiptError`]): not an object, no
/// signature or content hash, an edited receipt, a key that is not pinned as a gateway's, a bad
/// signature.
pub fn gateway_signer<'k>(
    receipt: &Value,
    gateways: &'k crate::keys::GatewayKeys,
) -> Result<&'k crate::keys::PinnedKey, GatewayReceiptError> {
    let m = receipt.as_object().ok_or(GatewayReceiptError::NotAnObject)?;
    let sig = m.get("signature").filter(|s| s.is_object()).ok_or(GatewayReceiptError::Unsigned)?;
    let declared = m.get("content_hash").and_then(Value::as_str).ok_or(GatewayReceiptError::NoContentHash)?;
    if content_hash(m) != declared {
        return Err(GatewayReceiptError::Edited);
    }
    Ok(gateways.verify_document(&receipt_signature_document(declared), sig)?)
}

/// Why a receipt is not a pinned gateway's observation ([`gateway_signer`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GatewayReceiptError {
    /// Not a JSON object.
    #[error("a receipt is a JSON object")]
    NotAnObject,
    /// No `signature` object.
    #[error("the receipt is not signed")]
    Unsigned,
    /// No `content_hash`.
    #[error("the receipt has no content_hash")]
    NoContentHash,
    /// Its `content_hash` is not the hash of its content.
    #[error("the receipt's content_hash is not the hash of its content (edited)")]
    Edited,
    /// The signature does not verify under a pinned gateway key.
    #[error(transparent)]
    Signature(#[from] crate::decision::SignatureError),
}

/// The evidence rows of receipts a pinned gateway signed, each given with that gateway's name
/// (as [`gateway_signer`] found it): observed outcomes, provenance `receipt` whatever the receipt
/// declares, `source` `gateway:<name>`, each receipt counted once — a copy under another file
/// name (same `content_hash`) or another receipt with the same `receipt_id` adds nothing.
/// Unsigned and badly signed receipts have no row here (they stay the agent's own word,
/// [`receipt_evidence`] capped by the caller).
#[must_use]
pub fn observed_evidence<'r>(receipts: impl IntoIterator<Item = (&'r Value, &'r str)>) -> Vec<EvidenceRow> {
    let mut seen = std::collections::HashSet::new();
    let mut rows = Vec::new();
    for (r, gateway) in receipts {
        let hash = r.get("content_hash").and_then(Value::as_str).unwrap_or_default();
        let id = r.get("receipt_id").and_then(Value::as_str).unwrap_or_default();
        if !seen.insert(format!("h:{hash}")) || (!id.is_empty() && !seen.insert(format!("i:{id}"))) {
            continue;
        }
        let mut observed = r.clone();
        if let Some(m) = observed.as_object_mut() {
            m.insert("source_type".into(), json!(SourceType::Receipt.as_str()));
        }
        if let Some(mut row) = receipt_evidence(&observed, None) {
            row.source = Some(format!("gateway:{gateway}"));
            rows.push(row);
        }
    }
    rows
}

/// [`observed_evidence`] of the receipts among `receipts` that a key of `gateways` signed.
#[must_use]
pub fn verified_evidence<'r>(
    receipts: impl IntoIterator<Item = &'r Value>,
    gateways: &crate::keys::GatewayKeys,
) -> Vec<EvidenceRow> {
    observed_evidence(
        receipts.into_iter().filter_map(|r| gateway_signer(r, gateways).ok().map(|pin| (r, pin.principal.as_str()))),
    )
}

/// Builds a portable v0.1 approval packet from a gate decision (`prepareApprovalPacket`):
/// `external_actions: 0`, the decision, the evidence rows of the class, the exact action binding
/// when the class needs approval, and an expiry (the binding's, else `created_at` + 10 minutes).
/// The `packet_id` is `tg_<YYYYMMDDhhmmss>_<class slug>_<8 hex>` where the hex digits commit to
/// the proposed action, the agent and the time, so the function stays pure.
#[must_use]
pub fn prepare_approval_packet(decision: &Decision<'_>, evidence: &[EvidenceRow], agent: &str, summary: &str) -> Value {
    let decided_at = decision.created_at();
    let created = crate::clock::parse_rfc3339(&decided_at);
    let created_at = created.map_or_else(|| decided_at.clone(), crate::clock::format_rfc3339);
    let expires_at =
        decision.action_binding().and_then(|b| b.get("expiresAt")).and_then(Value::as_str).map(str::to_owned).or_else(
            || created.map(|t| crate::clock::format_rfc3339(t.checked_add(super::binding::DEFAULT_TTL).unwrap_or(t))),
        );
    let commitment =
        canonical::canonical_digest(&json!({"action": decision.requested_action, "agent": agent, "at": decided_at}));
    let digits: String = decided_at.bytes().filter(u8::is_ascii_digit).take(14).map(char::from).collect();
    let packet_id =
        format!("tg_{digits}_{}_{}", super::gate::slug(&decision.action_class), &canonical::hex(&commitment)[..8]);
    let today = &decided_at[..decided_at.len().min(10)];
    let rows: Vec<Value> =
        evidence.iter().filter(|r| r.action_class == decision.action_class).map(|r| r.to_json(today)).collect();
    let mut m = Map::new();
    m.insert("type".into(), json!("trust_graduation_approval_packet"));
    m.insert("packet_id".into(), json!(packet_id));
    m.insert("agent".into(), json!(agent));
    m.insert("summary".into(), json!(summary));
    m.insert("action_class".into(), json!(decision.action_class));
    m.insert("proposed_action".into(), decision.requested_action.clone().into_owned());
    m.insert("decision".into(), decision.to_json());
    m.insert("external_actions".into(), json!(0));
    m.insert("evidence".into(), json!(rows));
    m.insert("required_approval".into(), json!(decision.needs_approval || !decision.allowed));
    m.insert("created_at".into(), json!(created_at));
    if let Some(e) = expires_at {
        m.insert("expires_at".into(), json!(e));
    }
    if let Some(b) = decision.action_binding() {
        m.insert("action_binding".into(), b.clone());
    }
    m.insert(
        "receipt_preview".into(),
        json!({"type": "trust_graduation_receipt", "action_class": decision.action_class, "outcome": "approve | refuse"}),
    );
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    // The chain's receipts are read from their text (the console's verification of a long
    // chain), packed or not: the same row and hash as from the parsed value, whatever the
    // receipt holds.
    #[test]
    fn receipt_evidence_of_text_is_of_the_value() {
        let texts = [
            r#"{"action_class":"draft.compose","content_hash":"sha256:ab","created_at":"2026-09-30T12:05:30.574Z","label":"approved","outcome":"approve","receipt_id":"r-1","source_type":"receipt"}"#,
            r#"{"actionClass":"email.send.external","createdAt":"2026-09-30","outcome":"execute","receiptId":"r-2","sourceType":"principal"}"#,
            r#"{"action_class":7,"actionClass":"draft.compose","outcome":"reject","created_at":null,"createdAt":"2026-01-02T03:04:05Z"}"#,
            r#"{"action_class":"draft.compose","outcome":"caf\u00e9 \"quoted\"","receipt_id":"r\n3","tool_call":{"a":[1,{"b":2}]},"content_hash":{"x":1}}"#,
            r#"{"action_class":"Draft Compose","outcome":"approve"}"#,
            r#"{"action_class":"draft.compose","outcome":"approve","outcome":"reject","source_type":"spool"}"#,
            r#"{"action_class":"draft.compose"}"#,
            r#"{"action_class":"draft.compose","outcome":["approve"],"big":123456789012345678901234567890}"#,
            r#""draft.compose""#,
            r#"[{"action_class":"draft.compose","outcome":"approve"}]"#,
            r#"{}"#,
        ];
        for text in texts {
            let value: Value = serde_json::from_str(text).expect("json");
            for cap in [None, Some(SourceType::Connector), Some(SourceType::Principal)] {
                let hash = value.get("content_hash").and_then(Value::as_str).map(str::to_owned);
                let hash = hash.filter(|_| value.is_object());
                let (packed, alone) = receipt_evidence_packed(text, cap);
                assert_eq!(packed.as_ref().map(PackedRow::to_row), receipt_evidence(&value, cap), "{text} {cap:?}");
                let packed_hash = packed.as_ref().map_or_else(|| alone.clone(), |p| p.extra().map(str::to_owned));
                assert_eq!(packed_hash, hash, "the hash packed beside the row, or alone: {text} {cap:?}");
                assert!(packed.is_none() || alone.is_none(), "the hash is given once: {text}");
                assert_eq!(
                    receipt_evidence_of_text(text, cap),
                    (receipt_evidence(&value, cap), hash),
                    "{text} {cap:?}"
                );
            }
        }
        assert!(receipt_evidence_of_text(texts[0], None).0.is_some(), "a receipt is read at all");
    }

    #[test]
    fn receipts_chain_by_content_hash() {
        let input = ReceiptInput {
            receipt_id: "r1",
            action_class: "draft.compose",
            outcome: ReceiptOutcome::Execute,
            agent: "scribe",
            packet_id: None,
            source_type: Some(SourceType::Receipt),
            created_at: "2026-11-21T09:00:00Z",
            prev_hash: None,
            note: None,
            tool_call: None,
        };
        let first = build_receipt(&input);
        let h1 = first["content_hash"].as_str().expect("hash").to_owned();
        assert_eq!(first.as_object().map(content_hash).as_deref(), Some(h1.as_str()));
        let second = build_receipt(&ReceiptInput { receipt_id: "r2", prev_hash: Some(&h1), ..input });
        assert_eq!(second["prev_hash"], h1.as_str());
        assert_ne!(second["content_hash"], first["content_hash"]);
        let row = receipt_evidence(&second, None).expect("row");
        assert_eq!((row.label.as_str(), row.evidence_weight), ("sent", 1.0));
        let capped = receipt_evidence(&second, Some(SourceType::Connector)).expect("row");
        assert_eq!(capped.evidence_weight, 0.3);
    }

    #[test]
    fn a_signed_receipt_counts_once_and_only_under_a_pinned_gateway_key() {
        let gw = crate::keys::Principal::from_seed("fs-gw", &[7; 32]);
        let principal = crate::keys::Principal::from_seed("alice", &[8; 32]);
        let input = ReceiptInput {
            receipt_id: "rcpt-1",
            action_class: "file.write",
            outcome: ReceiptOutcome::Execute,
            agent: "coder",
            packet_id: Some("p1"),
            source_type: None,
            created_at: "2026-11-21T09:00:00Z",
            prev_hash: None,
            note: None,
            tool_call: None,
        };
        let mut r = build_receipt(&input);
        let hash = r["content_hash"].clone();
        sign_receipt(&mut r, &gw);
        assert_eq!(r["content_hash"], hash, "the signature is outside the content hash");
        assert_eq!(r.as_object().map(content_hash), hash.as_str().map(str::to_owned));
        let mut gateways = crate::keys::GatewayKeys::default();
        assert!(verified_evidence([&r], &gateways).is_empty(), "an unpinned gateway's receipt is not observed");
        gateways.pin("fs-gw", gw.verifying_key());
        let rows = verified_evidence([&r, &r.clone()], &gateways);
        assert_eq!(rows.len(), 1, "a copy counts once: {rows:?}");
        assert_eq!(rows[0].source_type, Some(SourceType::Receipt));
        assert_eq!(rows[0].evidence_weight, 1.0);
        assert_eq!(rows[0].source.as_deref(), Some("gateway:fs-gw"));
        // Edited under the signature: the content hash no longer matches.
        let mut edited = r.clone();
        edited["action_class"] = json!("email.send.external");
        assert!(gateway_signer(&edited, &gateways).is_err());
        // Edited and re-hashed: the signature no longer covers it.
        let mut rehashed = edited.clone();
        let h = rehashed.as_object().map(content_hash).expect("object");
        rehashed["content_hash"] = json!(h);
        assert!(gateway_signer(&rehashed, &gateways).is_err());
        // Signed by a principal's key: not a gateway's observation.
        let mut by_principal = build_receipt(&ReceiptInput { receipt_id: "rcpt-2", ..input.clone() });
        sign_receipt(&mut by_principal, &principal);
        assert!(verified_evidence([&by_principal], &gateways).is_empty());
        // Unsigned: not observed.
        assert!(verified_evidence([&build_receipt(&input)], &gateways).is_empty());
    }
}
