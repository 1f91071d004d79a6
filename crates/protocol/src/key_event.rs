//! The principal's key events in the chain: a key rotation and a rename.
//!
//! Pins bind a key (by fingerprint) to a principal's name, and every signed record names its
//! principal and key, so a new key or a new name would otherwise make every later signature
//! unverifiable for anyone who pinned the old one, and re-pinning by hand would make every
//! earlier one fail. Instead the principal announces the change in the chain, signed with the key
//! the verifier already trusts:
//!
//! - **`key.rotate`**: the principal `principal`, speaking with its current key `key`, announces
//!   `new_key` (fingerprint) and `new_public_key` (standard base64 of the raw 32 bytes). The
//!   record carries two signatures over the same document: the first by the old key (the
//!   announcement, verified against the pins like any warrant signature), the second by the new
//!   key (proof that whoever announced it holds it), verified against `new_public_key` itself.
//! - **`principal.rename`**: the principal `principal`, with its key `key`, announces that it is
//!   now called `new_principal`. One signature, by that key under the old name.
//!
//! Document shape (`domain` `warrant.key/v1`), carried as `metadata.warrant_key`:
//!
//! ```json
//! {"domain": "warrant.key/v1", "event": "key.rotate", "principal": "alice", "key": "SHA256:…old",
//!  "new_key": "SHA256:…new", "new_public_key": "<base64>", "decided_at": "2026-11-21T09:00:00Z"}
//! {"domain": "warrant.key/v1", "event": "principal.rename", "principal": "alice",
//!  "new_principal": "alice.smith", "key": "SHA256:…", "decided_at": "2026-11-21T09:00:00Z"}
//! ```
//!
//! The chain verifier folds the verified events in order into [`ChainKeys`]: from a verified
//! rotation on, the new key speaks for the principal and the old key is **retired** (a later
//! record it signs is refused); from a verified rename on, the key also speaks for the new name.
//! Nothing before the announcing record changes, so a record signed with the new key (or under
//! the new name) before its announcement is refused by a verifier who pinned only the old key.
//! An event that does not verify (an unpinned or forged signer) changes nothing.

use crate::chain;
use crate::decision::{DocumentError, RecordError, SignatureError, SignedDecision, sign_document, verify_document};
use crate::keys::{PinnedKeys, Principal, fingerprint};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::VerifyingKey;
use serde_json::{Map, Value, json};

/// The domain string of a key event document.
pub const KEY_DOMAIN: &str = "warrant.key/v1";

/// A key event, as read from a verified document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyEvent {
    /// `key.rotate`: `principal` now signs with `new_key`; `old` is retired.
    Rotate {
        /// The principal.
        principal: String,
        /// The retired key's fingerprint.
        old: String,
        /// The new key.
        new_key: VerifyingKey,
    },
    /// `principal.rename`: the key `key` now also speaks for `new_principal`.
    Rename {
        /// The former name.
        principal: String,
        /// The new name.
        new_principal: String,
        /// The key's fingerprint.
        key: String,
    },
}

impl KeyEvent {
    /// The wire spelling (`event`).
    #[must_use]
    pub fn as_str(&self) -> &'static str {
        match self {
            KeyEvent::Rotate { .. } => "key.rotate",
            KeyEvent::Rename { .. } => "principal.rename",
        }
    }

    /// The chain record's `action`: `warrant.key.rotate` or `warrant.key.rename`.
    #[must_use]
    pub fn record_action(&self) -> &'static str {
        match self {
            KeyEvent::Rotate { .. } => "warrant.key.rotate",
            KeyEvent::Rename { .. } => "warrant.key.rename",
        }
    }

    /// The signed document for this event by `principal`'s key, at `decided_at`.
    #[must_use]
    pub fn document(&self, decided_at: &str) -> Value {
        match self {
            KeyEvent::Rotate { principal, old, new_key } => json!({
                "domain": KEY_DOMAIN,
                "event": self.as_str(),
                "principal": principal,
                "key": old,
                "new_key": fingerprint(new_key),
                "new_public_key": STANDARD.encode(new_key.as_bytes()),
                "decided_at": decided_at,
            }),
            KeyEvent::Rename { principal, new_principal, key } => json!({
                "domain": KEY_DOMAIN,
                "event": self.as_str(),
                "principal": principal,
                "new_principal": new_principal,
                "key": key,
                "decided_at": decided_at,
            }),
        }
    }

    /// Reads a key event document (its signatures are checked by [`crate::decision::check_record_signature`]).
    ///
    /// # Errors
    /// A sentence for an unknown event, a missing field, a new key whose fingerprint differs from
    /// the one named, or an empty or unchanged new name.
    pub fn from_document(doc: &Value) -> Result<Self, DocumentError> {
        let s = |k: &str| doc.get(k).and_then(Value::as_str);
        if s("domain") != Some(KEY_DOMAIN) {
            return Err(format!("warrant_key has an unknown domain {:?}", doc.get("domain")).into());
        }
        let principal = s("principal").filter(|p| !p.trim().is_empty()).ok_or("key event without a principal")?;
        let key = s("key").ok_or("key event without a key")?;
        match s("event") {
            Some("key.rotate") => {
                let new_key = crate::keys::parse_public_key(s("new_public_key").unwrap_or_default())
                    .map_err(|e| format!("key.rotate: new_public_key is not an Ed25519 key: {e}"))?;
                if s("new_key") != Some(fingerprint(&new_key).as_str()) {
                    return Err("key.rotate: new_key is not the fingerprint of new_public_key".into());
                }
                if fingerprint(&new_key) == key {
                    return Err("key.rotate: the new key is the old key".into());
                }
                Ok(KeyEvent::Rotate { principal: principal.to_owned(), old: key.to_owned(), new_key })
            }
            Some("principal.rename") => {
                let new_principal = s("new_principal")
                    .filter(|p| !p.trim().is_empty())
                    .ok_or("principal.rename without a new_principal")?;
                if new_principal == principal {
                    return Err("principal.rename: the new name is the old name".into());
                }
                Ok(KeyEvent::Rename {
                    principal: principal.to_owned(),
                    new_principal: new_principal.to_owned(),
                    key: key.to_owned(),
                })
            }
            other => Err(format!("unknown key event {other:?}").into()),
        }
    }

    /// The event a chain record carries, if any (its signatures are not checked here).
    #[must_use]
    pub fn of_record(rec: &Map<String, Value>) -> Option<Self> {
        Self::from_document(rec.get("metadata")?.get("warrant_key")?).ok()
    }
}

/// The chain record body announcing `event`: signed by `current` (the key the verifiers trust)
/// and, for a rotation, also by `new` (proof of possession). `agent` is `principal:<name>`,
/// `approver` the principal, `outcome` `success`, `autonomy_tier` `act_with_approval`,
/// `metadata.approval` with the signatures and `metadata.warrant_key` with the document.
#[must_use]
pub fn record_body(
    event: &KeyEvent,
    current: &Principal,
    new: Option<&Principal>,
    decided_at: &str,
) -> Map<String, Value> {
    let document = event.document(decided_at);
    let signed = SignedDecision { signature: sign_document(current, &document), document };
    let mut meta = crate::decision::approval_metadata(&signed, decided_at, event.as_str());
    if let Some(new) = new {
        let mut proof = sign_document(new, &signed.document);
        if let Value::Object(m) = &mut proof {
            m.insert("reviewer".into(), json!(current.name));
            m.insert("signed_at".into(), json!(decided_at));
        }
        if let Some(list) = meta.get_mut("approval").and_then(|a| a.get_mut("signatures")).and_then(Value::as_array_mut)
        {
            list.push(proof);
        }
    }
    meta.insert("warrant_key".into(), signed.document.clone());
    let principal = signed.document["principal"].as_str().unwrap_or_default();
    chain::new_record_body(
        &format!("principal:{principal}"),
        event.record_action(),
        Some(principal),
        "success",
        &format!("warrant:key:{}", signed.document["key"].as_str().unwrap_or_default()),
        "act_with_approval",
        decided_at,
        meta,
    )
}

/// The fingerprint and signer of a record's first approval signature (the one verified against
/// the pins), if it names them.
#[must_use]
pub fn first_signer(rec: &Map<String, Value>) -> Option<(&str, &str)> {
    let sig = rec.get("metadata")?.get("approval")?.get("signatures")?.as_array()?.first()?;
    Some((sig.get("key_fingerprint")?.as_str()?, sig.get("signer")?.as_str()?))
}

/// Checks a chain record carrying `metadata.warrant_key` (`doc`, its only signed document:
/// [`crate::decision::check_record_signature`]): the first signature verifies under a key
/// pinned for the document's principal, a rotation's second signature verifies under the
/// announced key itself, and the record agrees with the document.
///
/// # Errors
/// A [`RecordError`] naming what failed.
pub(crate) fn check_record(
    rec: &Map<String, Value>,
    meta: &Map<String, Value>,
    doc: &Value,
    pinned: &PinnedKeys,
) -> Result<(), RecordError> {
    let event = KeyEvent::from_document(doc)?;
    let missing = |needed| RecordError::MissingSignature { document: "warrant_key", needed };
    let sigs = meta
        .get("approval")
        .and_then(|a| a.get("signatures"))
        .and_then(Value::as_array)
        .ok_or(missing("signatures"))?;
    let first = sigs.first().ok_or(missing("a signature"))?;
    verify_document(doc, first, pinned)?;
    let expected = match &event {
        KeyEvent::Rotate { new_key, .. } => {
            let proof = sigs.get(1).ok_or(missing("the new key's signature (proof of possession)"))?;
            verify_possession(doc, proof, new_key)?;
            2
        }
        KeyEvent::Rename { new_principal, key, .. } => {
            // A name is one principal's: a key that took a name another key speaks for would
            // sign as two principals (two co-signatures of a quorum).
            if let Some(other) = pinned.name_taken(key, new_principal) {
                return Err(RecordError::NameTaken {
                    name: crate::text::inert(new_principal, 200),
                    other: other.fingerprint.clone(),
                });
            }
            1
        }
    };
    if sigs.len() != expected {
        return Err(RecordError::SignatureCount { event: event.as_str(), got: sigs.len(), expected });
    }
    let d = |k: &str| doc.get(k).and_then(Value::as_str);
    let r = |k: &str| rec.get(k).and_then(Value::as_str);
    let principal = d("principal").unwrap_or_default();
    let checks = [
        ("action", r("action") == Some(event.record_action())),
        ("agent", r("agent") == Some(format!("principal:{principal}").as_str())),
        ("approver", r("approver") == Some(principal)),
        ("outcome", r("outcome") == Some("success")),
        ("timestamp", r("timestamp") == d("decided_at")),
        ("reviewer", sigs.iter().all(|s| s.get("reviewer").and_then(Value::as_str) == Some(principal))),
        ("signed_at", sigs.iter().all(|s| s.get("signed_at").and_then(Value::as_str) == d("decided_at"))),
        (
            "metadata.approval.decision",
            meta.get("approval").and_then(|a| a.get("decision")).and_then(Value::as_str) == Some(event.as_str()),
        ),
    ];
    crate::decision::record_agrees(&checks, "key event")
}

/// The new key's signature over a rotation document, verified against the announced key itself
/// (not against the pins: the point is that the announcer holds it).
fn verify_possession(doc: &Value, proof: &Value, new_key: &VerifyingKey) -> Result<(), RecordError> {
    let field = |k: &str| proof.get(k).and_then(Value::as_str);
    let hash = crate::decision::payload_hash(doc);
    if field("payload_hash") != Some(hash.as_str()) {
        return Err(RecordError::Possession("the new key's signature is over another document".into()));
    }
    if field("key_fingerprint") != Some(fingerprint(new_key).as_str()) {
        return Err(RecordError::Possession("the second signature is not by the new key".into()));
    }
    if field("algorithm") != Some(crate::decision::ALGORITHM) {
        return Err(SignatureError::Algorithm(field("algorithm").map(str::to_owned)).into());
    }
    let signature = crate::decision::signature_bytes(proof)?;
    new_key
        .verify_strict(hash.as_bytes(), &signature)
        .map_err(|_| RecordError::Possession("the new key's signature does not verify (forged)".into()))
}

/// The trust a chain's verified key events add to the verifier's pins, folded in chain order.
/// Empty (and free) for a chain without key events. Carried with a verified prefix
/// ([`crate::chain::Verified::keys`]), so verifying only the records after it still knows the
/// events before it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChainKeys {
    /// The pins plus what the events so far added; `None` until the first event.
    effective: Option<PinnedKeys>,
    /// Keys retired by a rotation: fingerprint → the 0-based index of the rotation record.
    retired: Vec<(String, usize)>,
}

impl ChainKeys {
    /// True before any verified key event.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.effective.is_none()
    }

    /// The pins in effect at this point of the chain (`None`: the verifier's own, unchanged).
    #[must_use]
    pub fn effective(&self) -> Option<&PinnedKeys> {
        self.effective.as_ref()
    }

    /// The index of the rotation that retired the key `fp`, if one did.
    #[must_use]
    pub fn retired_at(&self, fp: &str) -> Option<usize> {
        self.retired.iter().find(|(f, _)| f == fp).map(|&(_, i)| i)
    }

    /// Applies a verified event of record `index`, starting from `pinned` on the first one.
    pub fn apply(&mut self, event: &KeyEvent, index: usize, pinned: &PinnedKeys) {
        let effective = self.effective.get_or_insert_with(|| pinned.clone());
        match event {
            KeyEvent::Rotate { principal, old, new_key } => {
                // The new key speaks for the principal (unless the verifier pinned it itself, for
                // whomever it chose).
                if effective.get(&fingerprint(new_key)).is_none() {
                    effective.pin(principal, *new_key);
                }
                if self.retired_at(old).is_none() {
                    self.retired.push((old.clone(), index));
                }
            }
            KeyEvent::Rename { new_principal, key, .. } => {
                // Only a key the verifier trusts (pinned or announced) gains the name.
                effective.add_alias(key, new_principal);
            }
        }
    }
}
