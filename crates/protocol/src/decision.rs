//! Signed decisions: the principal's approve or refuse over one approval packet.
//!
//! The signing rule follows Lodestar's signed side channel (`lodestar-and-tiers.md` §A7.4):
//! the signed *document* is canonicalised (sorted keys, no whitespace, no floats), its SHA-256 is
//! written as 64 lower-case hex characters (`payload_hash`), and the Ed25519 signature is over
//! those 64 ASCII bytes. The document binds the domain, packet id, packet content hash, action
//! class, agent, decision, principal, key fingerprint, time and (only when given) the reason, so
//! a signature cannot be moved to another packet, flipped between approve and refuse, or claimed
//! by another principal. `docs/spool.md` gives the exact bytes and a test vector.
//!
//! A *system decision* ([`SystemCause`], [`sign_system_decision`]) is a refusal the principal's
//! console signed on its own by the principal's rule (a timeout); its document carries `system`,
//! and it is never evidence.

use crate::canonical;
use crate::chain::{self, Appended};
use crate::correction::Correction;
use crate::keys::{PinnedKey, PinnedKeys, Principal};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::Signature;
use serde_json::{Map, Value, json};

/// The domain string of a decision document; it separates decision signatures from any other
/// document warrant signs.
pub const DECISION_DOMAIN: &str = "warrant.decision/v1";
/// The `type` of a decision file in `decisions/`.
pub const DECISION_FILE_TYPE: &str = "warrant_decision";
/// The only signature algorithm warrant writes or accepts.
pub const ALGORITHM: &str = "ed25519";

/// Approve or refuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The principal approves this exact packet content (binding it to one execution is the
    /// executor's job: it consumes the decision file).
    Approve,
    /// The principal refuses it.
    Refuse,
}

impl Verdict {
    /// `"approve"` or `"refuse"`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Approve => "approve",
            Verdict::Refuse => "refuse",
        }
    }

    /// Parses `"approve"` or `"refuse"`.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "approve" => Some(Verdict::Approve),
            "refuse" => Some(Verdict::Refuse),
            _ => None,
        }
    }

    /// The OpenTrustGraph `outcome` of the chain record: `success` or `denied`.
    #[must_use]
    pub fn outcome(self) -> &'static str {
        match self {
            Verdict::Approve => "success",
            Verdict::Refuse => "denied",
        }
    }
}

/// What the principal decides about one packet, before signing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecisionInput<'a> {
    /// The packet id.
    pub packet_id: &'a str,
    /// The packet's content hash (`sha256:<hex>` of its canonical JSON).
    pub packet_hash: &'a str,
    /// The packet's canonical action class.
    pub action_class: &'a str,
    /// The agent that proposed it.
    pub agent: &'a str,
    /// The trace id to record (the packet's own, else `warrant:<packet id>`).
    pub trace_id: &'a str,
    /// Approve or refuse.
    pub verdict: Verdict,
    /// Optional reason (required for refusals by the CLI and console, not by the format).
    pub reason: Option<&'a str>,
    /// Decision time, RFC 3339 UTC as written by [`crate::clock::format_rfc3339`].
    pub decided_at: &'a str,
    /// What an approval stands in for besides the ordinary approval: a ring
    /// sponsorship for this action, a ladder hold resolved, a tier confirmation
    /// ([`crate::verdict::PacketVerdict::stands_in_for`]). Signed as the document's
    /// `stands_in_for` array only when not empty.
    pub stands_in_for: &'a [String],
}

/// The canonical document that is signed for a decision.
///
/// ```
/// use warrant_protocol::decision::{decision_document, DecisionInput, Verdict};
/// let input = DecisionInput {
///     packet_id: "p-1", packet_hash: "sha256:00", action_class: "email.send.external",
///     agent: "scribe", trace_id: "t", verdict: Verdict::Refuse, reason: Some("not now"),
///     decided_at: "2026-11-21T09:00:00Z", stands_in_for: &[],
/// };
/// let doc = decision_document(&input, "alice", "SHA256:k");
/// assert_eq!(doc["decision"], "refuse");
/// assert_eq!(doc["domain"], "warrant.decision/v1");
/// assert_eq!(doc["reason"], "not now");
/// ```
#[must_use]
pub fn decision_document(input: &DecisionInput<'_>, principal: &str, key_fingerprint: &str) -> Value {
    let mut doc = json!({
        "domain": DECISION_DOMAIN,
        "packet_id": input.packet_id,
        "packet_hash": input.packet_hash,
        "action_class": input.action_class,
        "agent": input.agent,
        "decision": input.verdict.as_str(),
        "principal": principal,
        "key": key_fingerprint,
        "decided_at": input.decided_at,
    });
    if let Value::Object(map) = &mut doc {
        if let Some(reason) = input.reason {
            map.insert("reason".into(), json!(reason));
        }
        if !input.stands_in_for.is_empty() {
            map.insert("stands_in_for".into(), json!(input.stands_in_for));
        }
    }
    doc
}

/// Lower-case hex SHA-256 of a document's canonical bytes: the 64 ASCII bytes that are signed.
#[must_use]
pub fn payload_hash(doc: &Value) -> String {
    canonical::hex(&canonical::canonical_digest(doc))
}

/// Signs a document: returns the detached signature object
/// `{algorithm, signer, key_fingerprint, payload_hash, signature}` (signature in standard
/// base64 with padding, 88 characters).
#[must_use]
pub fn sign_document(principal: &Principal, doc: &Value) -> Value {
    let hash = payload_hash(doc);
    let sig = principal.sign(hash.as_bytes());
    json!({
        "algorithm": ALGORITHM,
        "signer": principal.name,
        "key_fingerprint": principal.fingerprint(),
        "payload_hash": hash,
        "signature": STANDARD.encode(sig.to_bytes()),
    })
}

/// Verifies a detached signature object over `doc` against the pinned keys, in Lodestar's
/// reject order (§A7.6): payload hash, signer, algorithm, pinned key, Ed25519 (`verify_strict`).
///
/// # Errors
/// A sentence naming the first failed check.
pub fn verify_document<'p>(doc: &Value, sig: &Value, pinned: &'p PinnedKeys) -> Result<&'p PinnedKey, SignatureError> {
    let field = |k: &str| sig.get(k).and_then(Value::as_str);
    let claimed = field("payload_hash").ok_or(SignatureError::Missing("payload_hash"))?;
    let actual = payload_hash(doc);
    if claimed != actual {
        return Err(SignatureError::Edited { signed: claimed.to_owned(), now: actual });
    }
    let signer = field("signer").ok_or(SignatureError::Missing("signer"))?;
    let principal = doc.get("principal").and_then(Value::as_str);
    if Some(signer) != principal {
        return Err(SignatureError::NotThePrincipal {
            signer: signer.to_owned(),
            principal: principal.map(str::to_owned),
        });
    }
    let fp = signed_key(sig)?;
    if doc.get("key").and_then(Value::as_str).is_some_and(|k| k != fp) {
        return Err(SignatureError::KeyDiffers);
    }
    let pin = pinned.get(fp).ok_or_else(|| SignatureError::Unpinned(unpinned_message(fp, signer)))?;
    if !pin.speaks_for(signer) {
        return Err(SignatureError::PinnedForAnother {
            fingerprint: fp.to_owned(),
            pinned_for: pin.principal.clone(),
            signer: signer.to_owned(),
        });
    }
    let signature = signature_bytes(sig)?;
    pin.key
        .verify_strict(actual.as_bytes(), &signature)
        .map_err(|_| SignatureError::Forged { role: "pinned", fingerprint: fp.to_owned() })?;
    Ok(pin)
}

/// Why a detached signature over a document does not verify ([`verify_document`],
/// `GatewayKeys::verify_document`): one variant per failed check, in the order they are made.
/// Its text is the sentence a report shows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// The signature object lacks a member (`payload_hash`, `signer`, `key_fingerprint`,
    /// `signature`).
    #[error("signature has no {0}")]
    Missing(&'static str),
    /// The document's payload hash is not the one signed: the document was edited.
    #[error("payload hash mismatch: the signed document was edited (signed {signed}, now {now})")]
    Edited {
        /// The `payload_hash` the signature claims.
        signed: String,
        /// The document's payload hash now.
        now: String,
    },
    /// The signer is not the document's `principal`.
    #[error("signer {signer:?} is not the document's principal {principal:?}")]
    NotThePrincipal {
        /// The signature's `signer`.
        signer: String,
        /// The document's `principal`, if any.
        principal: Option<String>,
    },
    /// An algorithm other than [`ALGORITHM`].
    #[error("unsupported signature algorithm {0:?}")]
    Algorithm(Option<String>),
    /// The signature's key is not the key the document names.
    #[error("signature key differs from the key named in the document")]
    KeyDiffers,
    /// The key is not pinned ([`unpinned_message`]: unverifiable, not shown to be forged).
    #[error("{0}")]
    Unpinned(String),
    /// The key is not pinned as a gateway's.
    #[error("key {0} is not pinned as a gateway key")]
    NotAGatewayKey(String),
    /// The key is pinned for another principal.
    #[error("key {fingerprint} is pinned for {pinned_for:?}, not {signer:?}")]
    PinnedForAnother {
        /// The signing key's fingerprint.
        fingerprint: String,
        /// Whom it is pinned for.
        pinned_for: String,
        /// Who the signature says signed.
        signer: String,
    },
    /// The signature bytes are not base64.
    #[error("signature is not base64: {0}")]
    NotBase64(String),
    /// The signature bytes are not 64 bytes long.
    #[error("signature is not 64 bytes")]
    NotSixtyFourBytes,
    /// Ed25519 (`verify_strict`) refuses the signature under the pinned key: forged.
    #[error("Ed25519 signature does not verify under {role} key {fingerprint} (forged)")]
    Forged {
        /// Which pins the key is among: `pinned` (a principal's) or `gateway`.
        role: &'static str,
        /// The pinned key's fingerprint.
        fingerprint: String,
    },
}

/// A signed document's content breaks a rule of its kind (a control without a subject, a grant
/// whose scope does not parse, co-signing terms out of order, …): the sentence says which.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DocumentError(pub String);

impl From<String> for DocumentError {
    fn from(sentence: String) -> Self {
        DocumentError(sentence)
    }
}

impl From<&str> for DocumentError {
    fn from(sentence: &str) -> Self {
        DocumentError(sentence.to_owned())
    }
}

/// Why a chain record carrying a signed warrant document fails [`check_record_signature`]: one
/// variant per kind of failure. Its text is the sentence a report shows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// More than one of `warrant_decision`, `warrant_control`, `warrant_key`, `warrant_grant`.
    #[error("a record carries more than one signed warrant document")]
    SeveralDocuments,
    /// The document's `domain` is not its kind's.
    #[error("{document} has an unknown domain {found:?}")]
    UnknownDomain {
        /// The metadata member (`warrant_control`, …).
        document: &'static str,
        /// The `domain` it has, as JSON, if any.
        found: Option<String>,
    },
    /// `metadata.approval.signatures` has no signature (or not as many as the kind needs).
    #[error("{document} without {needed} in metadata.approval")]
    MissingSignature {
        /// The metadata member.
        document: &'static str,
        /// What is missing (`a signature`, `the new key's signature (proof of possession)`).
        needed: &'static str,
    },
    /// A key event carries more or fewer signatures than its kind.
    #[error("{event} carries {got} signatures, expected {expected}")]
    SignatureCount {
        /// `key.rotate` or `principal.rename`.
        event: &'static str,
        /// How many it carries.
        got: usize,
        /// How many it must.
        expected: usize,
    },
    /// A signature does not verify under the pinned keys.
    #[error(transparent)]
    Signature(#[from] SignatureError),
    /// A rotation's second signature does not prove the announcer holds the new key.
    #[error("key.rotate: {0}")]
    Possession(String),
    /// A rename would take a name another pinned key speaks for.
    #[error(
        "principal.rename to {name:?}, a name the key {other} speaks for: a rename never takes another principal's name"
    )]
    NameTaken {
        /// The new name (made inert for the terminal).
        name: String,
        /// The fingerprint of the key that speaks for it.
        other: String,
    },
    /// The document is malformed for its kind.
    #[error(transparent)]
    Document(#[from] DocumentError),
    /// A field of the chain record says something other than the signed document.
    #[error("record field `{field}` disagrees with the signed {what}")]
    Disagrees {
        /// The record field (`agent`, `metadata.approval.decision`, …).
        field: &'static str,
        /// The kind of document (`decision`, `control`, `grant`, `key event`).
        what: &'static str,
    },
}

/// The text of a [`SignatureError`], for the reports that carry sentences.
impl From<SignatureError> for String {
    fn from(e: SignatureError) -> Self {
        e.to_string()
    }
}

/// The signature's algorithm checked and its key's fingerprint.
///
/// # Errors
/// [`SignatureError::Algorithm`], [`SignatureError::Missing`].
pub(crate) fn signed_key(sig: &Value) -> Result<&str, SignatureError> {
    let field = |k: &str| sig.get(k).and_then(Value::as_str);
    if field("algorithm") != Some(ALGORITHM) {
        return Err(SignatureError::Algorithm(field("algorithm").map(str::to_owned)));
    }
    field("key_fingerprint").ok_or(SignatureError::Missing("key_fingerprint"))
}

/// The Ed25519 signature in the `signature` member of a signature object.
///
/// # Errors
/// [`SignatureError::Missing`], [`SignatureError::NotBase64`],
/// [`SignatureError::NotSixtyFourBytes`].
pub(crate) fn signature_bytes(sig: &Value) -> Result<Signature, SignatureError> {
    let text = sig.get("signature").and_then(Value::as_str).ok_or(SignatureError::Missing("signature bytes"))?;
    let raw = STANDARD.decode(text).map_err(|e| SignatureError::NotBase64(e.to_string()))?;
    let bytes: [u8; 64] = raw.try_into().map_err(|_| SignatureError::NotSixtyFourBytes)?;
    Ok(Signature::from_bytes(&bytes))
}

/// What a verifier is told when a signature names a key it has not pinned: which key, for whom,
/// and how to pin it. Such a signature is unverifiable, never valid; but it is not shown to be
/// forged either, so the message says so and names the fix.
#[must_use]
pub fn unpinned_message(fp: &str, signer: &str) -> String {
    let name = crate::text::inert(signer, 200);
    format!(
        "key {fp} is not pinned: the signature of {name:?} cannot be checked (unverifiable, not shown to be forged); \
         if you trust {name:?}'s key, get it from them (`warrant keys export`), check that its fingerprint is {fp}, \
         and pin it: `warrant keys pin --principal {name:?} FILE`"
    )
}

/// A decision signed by the principal: the document and its detached signature.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SignedDecision {
    /// The canonical document.
    pub document: Value,
    /// The detached signature object.
    pub signature: Value,
}

/// Signs a decision.
#[must_use]
pub fn sign_decision(principal: &Principal, input: &DecisionInput<'_>) -> SignedDecision {
    sign_decision_with_preconditions(principal, input, None)
}

/// Signs a decision that records the preconditions observed at approval (two-phase execution,
/// lodestar-and-tiers.md §A3): `preconditions` is an array of `{check_id, parameters,
/// expected_at_approval}` added to the signed document, so the agent (and `warrant
/// check-preconditions`) re-checks exactly what the principal approved against.
#[must_use]
pub fn sign_decision_with_preconditions(
    principal: &Principal,
    input: &DecisionInput<'_>,
    preconditions: Option<Value>,
) -> SignedDecision {
    sign_decision_with(principal, input, preconditions, None, None)
}

/// [`sign_decision_with_preconditions`], and for an approval of a class that needs several
/// principals, the co-signing terms signed into the document: `quorum` (the `k` of `n` the
/// signer approves under) and, on the signature that meets it, `cosigners` (every principal
/// whose approval makes up the quorum, this one included; [`Cosign`]); and for an approval as
/// corrected, the principal's [`Correction`] as the document's `correction` member
/// ([`Correction::to_json`]: the corrected action, its size and label), so the chain proves which
/// action was approved beside the packet's hash as published.
#[must_use]
pub fn sign_decision_with(
    principal: &Principal,
    input: &DecisionInput<'_>,
    preconditions: Option<Value>,
    cosign: Option<&Cosign>,
    correction: Option<&Correction>,
) -> SignedDecision {
    let mut document = decision_document(input, &principal.name, &principal.fingerprint());
    if let Value::Object(m) = &mut document {
        if let Some(c) = correction.filter(|_| input.verdict == Verdict::Approve) {
            m.insert("correction".into(), c.to_json());
        }
        if let Some(p) = preconditions {
            m.insert("preconditions".into(), p);
        }
        if let Some(c) = cosign {
            m.insert("quorum".into(), c.quorum.to_json());
            if !c.cosigners.is_empty() {
                m.insert("cosigners".into(), json!(c.cosigners));
            }
        }
    }
    let signature = sign_document(principal, &document);
    SignedDecision { document, signature }
}

/// How many of which principals must approve a packet of a class before it is approved
/// (co-signing: `[cosign."<class>"] required = k, principals = [n names]` in
/// `policy.toml`). Signed into every co-signature as `{"required": k, "principals": [...]}`
/// (`principals` sorted, distinct), so a signature counts only under the terms its signer saw.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Quorum {
    /// `k`: distinct listed principals whose approvals are needed, `1..=principals.len()`.
    pub required: usize,
    /// The `n` principals who may co-sign, sorted and distinct.
    pub principals: Vec<String>,
}

/// Why co-signing terms cannot be made ([`Quorum::new`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuorumError {
    /// A principal's name is empty or has white space around it.
    #[error("a principal's name is empty or has white space around it")]
    Name,
    /// `required` is 0 or more than the distinct principals listed.
    #[error("required = {required} must be 1..={listed} (the principals listed)")]
    Required {
        /// `k` as given.
        required: usize,
        /// The distinct principals listed.
        listed: usize,
    },
}

impl Quorum {
    /// The terms `k` of `principals` (sorted, duplicates dropped).
    ///
    /// # Errors
    /// [`QuorumError::Name`] for an empty name or one with white space around it,
    /// [`QuorumError::Required`] when `k` is 0 or more than the distinct principals.
    pub fn new(required: usize, principals: impl IntoIterator<Item = String>) -> Result<Self, QuorumError> {
        let mut principals: Vec<String> = principals.into_iter().collect();
        principals.sort_unstable();
        principals.dedup();
        if principals.iter().any(|p| p.trim().is_empty() || p.trim() != p) {
            return Err(QuorumError::Name);
        }
        if required == 0 || required > principals.len() {
            return Err(QuorumError::Required { required, listed: principals.len() });
        }
        Ok(Quorum { required, principals })
    }

    /// The signed form, `{"required": k, "principals": [...]}`.
    #[must_use]
    pub fn to_json(&self) -> Value {
        json!({"required": self.required, "principals": self.principals})
    }

    /// Reads the signed form back; `None` unless it is exactly what [`Quorum::to_json`] writes
    /// for valid terms (sorted, distinct principals; `k` in range).
    #[must_use]
    pub fn from_json(v: &Value) -> Option<Self> {
        let m = v.as_object().filter(|m| m.len() == 2)?;
        let required = usize::try_from(m.get("required")?.as_u64()?).ok()?;
        let names: Vec<String> =
            m.get("principals")?.as_array()?.iter().map(|p| p.as_str().map(str::to_owned)).collect::<Option<_>>()?;
        let q = Quorum::new(required, names.clone()).ok()?;
        (q.principals == names).then_some(q)
    }

    /// Whether `principal` is one of those who may co-sign.
    #[must_use]
    pub fn lists(&self, principal: &str) -> bool {
        self.principals.binary_search_by(|p| p.as_str().cmp(principal)).is_ok()
    }

    /// Whether the distinct listed principals among `signers` are at least `required`.
    /// `signers` must already be the names their keys are pinned for ([`Quorum::count`]), never
    /// the names the documents claim.
    #[must_use]
    pub fn met_by<'a>(&self, signers: impl IntoIterator<Item = &'a str>) -> bool {
        let mut seen: Vec<&str> = signers.into_iter().filter(|s| self.lists(s)).collect();
        seen.sort_unstable();
        seen.dedup();
        seen.len() >= self.required
    }

    /// Counts approvals towards these terms by **key**, never by name (`docs/spool.md`,
    /// Co-signing): each approval is `(name, key)`, the principal its document names and the
    /// fingerprint of the key that signed it. An approval counts for `name` only when `name` is
    /// listed and the verifier's `pinned` keys bind that key to exactly that name (the pin's
    /// principal: not one of its earlier names, which a rename in the chain or on the signer's
    /// host can add). So one key counts once, however many names it signed under (a key has one
    /// principal), and two keys pinned for one name count once. Returns the distinct names that
    /// count, sorted, and the approvals that do not, each with the reason, for `warrant verify`.
    #[must_use]
    pub fn count<'a>(
        &self,
        approvals: impl IntoIterator<Item = (&'a str, &'a str)>,
        pinned: &PinnedKeys,
    ) -> QuorumCount {
        let mut count = QuorumCount::default();
        for (name, key) in approvals {
            let why = if !self.lists(name) {
                Some(format!("{name:?} is not one of the quorum's principals"))
            } else {
                match pinned.get(key) {
                    None => Some(format!("key {key} is not pinned")),
                    Some(pin) if pin.principal != name => Some(format!(
                        "key {key} is pinned for {:?}, not {name:?}: one key counts once, for the name it is pinned for",
                        pin.principal
                    )),
                    Some(_) => None,
                }
            };
            match why {
                None => count.signers.push(name.to_owned()),
                Some(why) => count.uncounted.push((name.to_owned(), key.to_owned(), why)),
            }
        }
        count.signers.sort_unstable();
        count.signers.dedup();
        count
    }

    /// `2 of alice, bob, carol`.
    #[must_use]
    pub fn describe(&self) -> String {
        format!("{} of {}", self.required, self.principals.join(", "))
    }
}

/// What [`Quorum::count`] found: the listed principals whose approvals count, and those that do
/// not.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QuorumCount {
    /// The distinct listed names whose pinned keys approved, sorted.
    pub signers: Vec<String>,
    /// `(name signed under, key fingerprint, why it does not count)`, in the order given.
    pub uncounted: Vec<(String, String, String)>,
}

/// The co-signing terms of one signature ([`sign_decision_with`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cosign {
    /// The terms the signer approves under.
    pub quorum: Quorum,
    /// Empty, unless this signature meets the quorum: then every principal whose approval makes
    /// it up, this one included, sorted.
    pub cosigners: Vec<String>,
}

/// Why a decision was made by the system rather than by a person: the `system` member of a
/// *system decision*'s signed document. A system decision is only ever a refusal,
/// signed with the principal's key by the principal's running console when a rule the principal
/// configured says so (`[timeouts] sign_refusal = true` in `policy.toml`). It decides its packet
/// like any decision, but it is **never evidence**: no person judged the action, so it counts
/// neither as the principal's refusal of the class nor in the agent's record
/// (`docs/conformance.md`, class timeouts; `docs/spool.md`, the decision document).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SystemCause {
    /// The packet's class timed out undecided (`refuse_after`): `"timeout"`.
    Timeout,
}

impl SystemCause {
    /// The document's spelling: `"timeout"`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            SystemCause::Timeout => "timeout",
        }
    }

    /// Parses the document's spelling; `None` for anything else.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        (s == "timeout").then_some(SystemCause::Timeout)
    }
}

/// The `system` member of a signed decision document, checked: `Ok(None)` for a person's
/// decision (no `system` member), `Ok(Some(cause))` for a system refusal.
///
/// # Errors
/// A `system` member that is not a known cause (a string [`SystemCause::parse`] reads), or one on
/// a decision that is not a refusal: a system decision never approves anything.
pub fn system_of(doc: &Value) -> Result<Option<SystemCause>, DocumentError> {
    let Some(v) = doc.get("system") else { return Ok(None) };
    let cause = v.as_str().and_then(SystemCause::parse).ok_or_else(|| {
        format!("signed decision has an unknown system cause {}", crate::text::inert(&v.to_string(), 80))
    })?;
    if doc.get("decision").and_then(Value::as_str) != Some(Verdict::Refuse.as_str()) {
        return Err("a system decision that is not a refusal (a system decision only ever refuses)".into());
    }
    Ok(Some(cause))
}

/// A system decision was asked to approve ([`sign_system_decision`]): nothing was signed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a system decision only ever refuses: nothing was signed")]
pub struct NotARefusal;

/// Signs a system decision: the refusal `input` describes, its document carrying
/// `"system": cause` ([`SystemCause`]). The reason should say what happened in words (the
/// console's: `timed out after 10m undecided (policy.toml [timeouts]) …`).
///
/// # Errors
/// [`NotARefusal`] when `input` is not a refusal: a system decision only ever refuses (nothing
/// is signed).
pub fn sign_system_decision(
    principal: &Principal,
    input: &DecisionInput<'_>,
    cause: SystemCause,
) -> Result<SignedDecision, NotARefusal> {
    if input.verdict != Verdict::Refuse {
        return Err(NotARefusal);
    }
    let mut document = decision_document(input, &principal.name, &principal.fingerprint());
    if let Value::Object(m) = &mut document {
        m.insert("system".into(), json!(cause.as_str()));
    }
    let signature = sign_document(principal, &document);
    Ok(SignedDecision { document, signature })
}

/// The chain record body for a signed decision: `action` = the action class, `approver` = the
/// principal, `outcome` `success` (approve) or `denied` (refuse), `autonomy_tier`
/// `act_with_approval`, and `metadata.approval` carrying the signature (OpenTrustGraph §2.4),
/// plus `metadata.warrant_decision` with the signed document.
#[must_use]
pub fn record_body(input: &DecisionInput<'_>, signed: &SignedDecision) -> Map<String, Value> {
    let principal = signed.document["principal"].as_str().unwrap_or_default();
    let mut meta = approval_metadata(signed, input.decided_at, input.verdict.as_str());
    meta.insert("warrant_decision".into(), signed.document.clone());
    if let Some(reason) = input.reason {
        meta.insert("reason".into(), json!(reason));
    }
    chain::new_record_body(
        input.agent,
        input.action_class,
        Some(principal),
        input.verdict.outcome(),
        input.trace_id,
        "act_with_approval",
        input.decided_at,
        meta,
    )
}

/// The metadata of a record signed by the principal: `approval` = `{required: true, quorum: 1,
/// signatures: [the signature with reviewer and signed_at], decision}` (OpenTrustGraph §2.4).
/// The caller adds the signed document under its own key.
#[must_use]
pub fn approval_metadata(signed: &SignedDecision, signed_at: &str, decision: &str) -> Map<String, Value> {
    let principal = signed.document["principal"].as_str().unwrap_or_default();
    let mut sig = signed.signature.clone();
    if let Value::Object(m) = &mut sig {
        m.insert("reviewer".into(), json!(principal));
        m.insert("signed_at".into(), json!(signed_at));
    }
    let mut meta = Map::new();
    meta.insert("approval".into(), json!({"required": true, "quorum": 1, "signatures": [sig], "decision": decision}));
    meta
}

/// Checks the signature of a chain record that carries a signed warrant document in its
/// `metadata` (`warrant_decision`, `warrant_control`, `warrant_key` or `warrant_grant`, at most one
/// of them): the one check of a signed document in a chain record, for every kind.
///
/// Returns `Ok(false)` for records without one (foreign records, whose signatures are opaque to
/// OpenTrustGraph), `Ok(true)` when the signature verifies under a pinned key and the record
/// agrees with the signed document (action class, agent, approver, outcome, time).
///
/// # Errors
/// A [`RecordError`] naming what failed.
pub fn check_record_signature(rec: &Map<String, Value>, pinned: &PinnedKeys) -> Result<bool, RecordError> {
    let Some(meta) = rec.get("metadata").and_then(Value::as_object) else { return Ok(false) };
    let mut carried = SIGNED_DOCUMENTS.iter().filter_map(|k| meta.get(*k).map(|doc| (*k, doc)));
    let Some((key, doc)) = carried.next() else { return Ok(false) };
    if carried.next().is_some() {
        return Err(RecordError::SeveralDocuments);
    }
    match key {
        "warrant_control" => crate::control::check_record(rec, meta, doc, pinned)?,
        "warrant_key" => crate::key_event::check_record(rec, meta, doc, pinned)?,
        "warrant_grant" => crate::grant::check_record(rec, meta, doc, pinned)?,
        _ => check_decision_record(rec, meta, doc, pinned)?,
    }
    Ok(true)
}

/// The signed documents a chain record's `metadata` may carry, at most one of them: a decision,
/// a control, a key event, a grant.
const SIGNED_DOCUMENTS: [&str; 4] = ["warrant_decision", "warrant_control", "warrant_key", "warrant_grant"];

/// The document `key` of a record's metadata is of `domain`.
///
/// # Errors
/// [`RecordError::UnknownDomain`].
pub(crate) fn check_domain(doc: &Value, key: &'static str, domain: &str) -> Result<(), RecordError> {
    if doc.get("domain").and_then(Value::as_str) != Some(domain) {
        return Err(RecordError::UnknownDomain { document: key, found: doc.get("domain").map(Value::to_string) });
    }
    Ok(())
}

/// Every `(field, agrees)` pair agrees: the chain record says what the signed `what` says.
///
/// # Errors
/// [`RecordError::Disagrees`] naming the first record field that disagrees.
pub(crate) fn record_agrees(checks: &[(&'static str, bool)], what: &'static str) -> Result<(), RecordError> {
    match checks.iter().find(|(_, ok)| !ok) {
        Some((field, _)) => Err(RecordError::Disagrees { field, what }),
        None => Ok(()),
    }
}

/// What a chain record carrying a principal's signed action (a control, a grant) says that
/// differs by kind; [`signed_action_agrees`] checks the rest.
pub(crate) struct SignedAction<'a> {
    /// The record's `action`.
    pub(crate) action: &'a str,
    /// The record's `agent`.
    pub(crate) agent: Option<&'a str>,
    /// The record's `metadata.approval.decision`.
    pub(crate) decision: Option<&'a str>,
}

/// The chain record `rec` agrees with the principal's signed `what` (`doc`, signed by `sig`):
/// `expected`'s action, agent and approval decision, and the document's principal as approver
/// and reviewer, its `decided_at` as timestamp and signed_at, outcome `success`.
///
/// # Errors
/// [`RecordError::Disagrees`] naming the first record field that disagrees.
pub(crate) fn signed_action_agrees(
    rec: &Map<String, Value>,
    meta: &Map<String, Value>,
    sig: &Value,
    doc: &Value,
    expected: &SignedAction<'_>,
    what: &'static str,
) -> Result<(), RecordError> {
    let d = |k: &str| doc.get(k).and_then(Value::as_str);
    let r = |k: &str| rec.get(k).and_then(Value::as_str);
    let checks = [
        ("action", r("action") == Some(expected.action)),
        ("agent", r("agent") == expected.agent),
        ("approver", r("approver") == d("principal")),
        ("outcome", r("outcome") == Some("success")),
        ("timestamp", r("timestamp") == d("decided_at")),
        ("reviewer", sig.get("reviewer").and_then(Value::as_str) == d("principal")),
        ("signed_at", sig.get("signed_at").and_then(Value::as_str) == d("decided_at")),
        (
            "metadata.approval.decision",
            meta.get("approval").and_then(|a| a.get("decision")).and_then(Value::as_str) == expected.decision,
        ),
    ];
    record_agrees(&checks, what)
}

/// [`check_record_signature`] for a record carrying `metadata.warrant_decision` (`doc`).
fn check_decision_record(
    rec: &Map<String, Value>,
    meta: &Map<String, Value>,
    doc: &Value,
    pinned: &PinnedKeys,
) -> Result<(), RecordError> {
    check_domain(doc, "warrant_decision", DECISION_DOMAIN)?;
    let sig = verified_signature(meta, "warrant_decision", pinned)?;
    let d = |k: &str| doc.get(k).and_then(Value::as_str);
    let r = |k: &str| rec.get(k).and_then(Value::as_str);
    let verdict = d("decision")
        .and_then(Verdict::parse)
        .ok_or(DocumentError::from("signed decision is neither approve nor refuse"))?;
    system_of(doc)?;
    let mismatches = [
        ("outcome", r("outcome") == Some(verdict.outcome())),
        ("action", r("action") == d("action_class")),
        ("agent", r("agent") == d("agent")),
        ("approver", r("approver") == d("principal")),
        ("reviewer", sig.get("reviewer").and_then(Value::as_str) == d("principal")),
        ("signed_at", sig.get("signed_at").and_then(Value::as_str) == d("decided_at")),
        ("timestamp", r("timestamp") == d("decided_at")),
        (
            "metadata.reason",
            meta.get("reason").and_then(Value::as_str) == d("reason")
                && meta.get("reason").is_none_or(Value::is_string),
        ),
        (
            "metadata.approval.decision",
            meta.get("approval").and_then(|a| a.get("decision")).is_none_or(|v| v.as_str() == d("decision")),
        ),
    ];
    record_agrees(&mismatches, "decision")?;
    cosign_terms(doc)?;
    correction_of(doc)?;
    Ok(())
}

/// The principal's correction a signed decision document carries ([`sign_decision_with`]), if
/// any: only on an approval, never under co-signing terms, in exactly the form
/// [`Correction::to_json`] writes.
///
/// # Errors
/// A [`DocumentError`] naming the rule broken.
pub fn correction_of(doc: &Value) -> Result<Option<Correction>, DocumentError> {
    let Some(c) = doc.get("correction") else { return Ok(None) };
    if doc.get("decision").and_then(Value::as_str) != Some(Verdict::Approve.as_str()) {
        return Err("only an approval is corrected: a refusal carries no `correction`".into());
    }
    if doc.get("quorum").is_some() {
        return Err("an approval under co-signing terms carries no `correction`".into());
    }
    Correction::from_json(c).map(Some).map_err(DocumentError)
}

/// The co-signing terms a signed decision document carries ([`sign_decision_with`]), if any.
///
/// `quorum` appears only on an approval, in exactly the form [`Quorum::to_json`] writes, and
/// lists the document's principal; `cosigners` appears only with `quorum`, sorted, distinct,
/// every name listed, the principal among them, and at least `required` of them.
///
/// # Errors
/// A [`DocumentError`] naming the first rule broken.
pub fn cosign_terms(doc: &Value) -> Result<Option<Cosign>, DocumentError> {
    let Some(q) = doc.get("quorum") else {
        return match doc.get("cosigners") {
            Some(_) => Err("`cosigners` without `quorum` in a signed decision".into()),
            None => Ok(None),
        };
    };
    if doc.get("decision").and_then(Value::as_str) != Some(Verdict::Approve.as_str()) {
        return Err("only an approval is co-signed: a refusal carries no `quorum`".into());
    }
    let quorum = Quorum::from_json(q).ok_or("`quorum` is not {required: k, principals: [sorted, distinct names]}")?;
    let principal = doc.get("principal").and_then(Value::as_str).unwrap_or_default();
    if !quorum.lists(principal) {
        return Err(format!("the signer {principal:?} is not one of the quorum's principals").into());
    }
    let cosigners: Vec<String> = match doc.get("cosigners") {
        None => Vec::new(),
        Some(v) => {
            let names: Vec<String> = v
                .as_array()
                .and_then(|a| a.iter().map(|n| n.as_str().map(str::to_owned)).collect())
                .ok_or("`cosigners` is not an array of names")?;
            let sorted = names.windows(2).all(|w| w[0] < w[1]);
            if !sorted
                || names.len() < quorum.required
                || !names.iter().all(|n| quorum.lists(n))
                || !names.iter().any(|n| n == principal)
            {
                return Err(format!(
                    "`cosigners` must be at least {} distinct sorted names of the quorum, the signer's among them",
                    quorum.required
                )
                .into());
            }
            names
        }
    };
    Ok(Some(Cosign { quorum, cosigners }))
}

/// The first signature of `metadata.approval.signatures`, checked over the record's signed
/// document `metadata.<document>` with [`verify_document`] (decisions, controls, grants).
///
/// # Errors
/// [`RecordError::MissingSignature`], or [`RecordError::Signature`] when it does not verify
/// under `pinned`; [`RecordError::Document`] when `meta` has no `document`.
pub fn verified_signature<'a>(
    meta: &'a Map<String, Value>,
    document: &'static str,
    pinned: &PinnedKeys,
) -> Result<&'a Value, RecordError> {
    let sig = meta
        .get("approval")
        .and_then(|a| a.get("signatures"))
        .and_then(Value::as_array)
        .and_then(|s| s.first())
        .ok_or(RecordError::MissingSignature { document, needed: "a signature" })?;
    let doc = meta.get(document).ok_or_else(|| DocumentError(format!("no {document} in metadata")))?;
    verify_document(doc, sig, pinned)?;
    Ok(sig)
}

/// True when a record's metadata carries a warrant-signed document (a decision or a control).
#[must_use]
pub fn is_warrant_signed(meta: Option<&Value>) -> bool {
    meta.is_some_and(|m| SIGNED_DOCUMENTS.iter().any(|k| m.get(*k).is_some()))
}

/// The decision file written to `decisions/<packet id>.json` for the agent.
#[must_use]
pub fn decision_file(signed: &SignedDecision, appended: &Appended) -> Value {
    json!({
        "type": DECISION_FILE_TYPE,
        "version": 1,
        "packet_id": signed.document["packet_id"],
        "decision": signed.document["decision"],
        "document": signed.document,
        "signature": signed.signature,
        "chain": {"chain_index": appended.chain_index, "entry_hash": appended.entry_hash},
    })
}

/// The decision file written when the last signature a quorum needs is appended: as
/// [`decision_file`] for that signature, plus `cosignatures`, the earlier approvals that make up
/// the quorum (`[{document, signature, chain: {chain_index, entry_hash}}]`, in chain order).
#[must_use]
pub fn cosigned_decision_file(signed: &SignedDecision, appended: &Appended, earlier: &[CoSignature]) -> Value {
    let mut file = decision_file(signed, appended);
    if let Value::Object(m) = &mut file {
        let all: Vec<Value> = earlier
            .iter()
            .map(|c| {
                json!({
                    "document": c.signed.document,
                    "signature": c.signed.signature,
                    "chain": {"chain_index": c.chain_index, "entry_hash": c.entry_hash},
                })
            })
            .collect();
        m.insert("cosignatures".into(), Value::Array(all));
    }
    file
}

/// One principal's approval towards a quorum, as the chain holds it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CoSignature {
    /// The signed document and its detached signature.
    pub signed: SignedDecision,
    /// Its record's `chain_index`.
    pub chain_index: u64,
    /// Its record's `entry_hash`.
    pub entry_hash: String,
}

impl CoSignature {
    /// The principal its document names (what it claims; [`Quorum::count`] decides what it
    /// counts for).
    #[must_use]
    pub fn principal(&self) -> &str {
        self.signed.document["principal"].as_str().unwrap_or_default()
    }

    /// The fingerprint of the key that signed it (`signature.key_fingerprint`).
    #[must_use]
    pub fn key(&self) -> &str {
        self.signed.signature["key_fingerprint"].as_str().unwrap_or_default()
    }
}

/// The most co-signatures a decision file may carry (more is malformed, not read).
pub const MAX_COSIGNATURES: usize = 64;

/// A decision file that verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedDecision {
    /// Approve or refuse.
    pub verdict: Verdict,
    /// The principal that signed, as the document names it.
    pub principal: String,
    /// The fingerprint of the key that signed (pinned for `principal`, or one of its earlier
    /// names).
    pub key: String,
    /// The reason, if any.
    pub reason: Option<String>,
    /// When it was decided.
    pub decided_at: String,
    /// The chain record's `entry_hash`, as the file states it.
    pub entry_hash: Option<String>,
    /// The preconditions recorded at approval (`[{check_id, parameters, expected_at_approval}]`),
    /// empty when none.
    pub preconditions: Vec<Value>,
    /// For an approval under a quorum: the distinct principals whose signatures make it up,
    /// sorted; empty otherwise.
    pub cosigners: Vec<String>,
    /// Set for a system decision (a refusal signed because the packet timed out): the agent is
    /// told `timeout`, not that a person refused.
    pub system: Option<SystemCause>,
    /// For an approval as corrected: the action the principal approved instead of the one
    /// proposed ([`correction_of`]).
    pub correction: Option<Correction>,
}

/// Why a decision file was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecisionError {
    /// Not a decision file.
    #[error("not a warrant decision file: {0}")]
    Malformed(String),
    /// The file is for another packet (a replayed decision).
    #[error("decision is for packet {found:?}, not {expected:?} (replayed)")]
    WrongPacket {
        /// The packet waited for.
        expected: String,
        /// The packet named in the signed document.
        found: String,
    },
    /// The packet's content changed after the decision was signed.
    #[error("decision was signed over packet content {signed}, but the packet is now {actual}")]
    PacketChanged {
        /// The hash in the signed document.
        signed: String,
        /// The hash of the packet as it is now.
        actual: String,
    },
    /// The signature does not verify.
    #[error("signature rejected: {0}")]
    Signature(String),
    /// An approval of a class that needs several principals lacks their signatures.
    #[error("not enough co-signatures: {0}")]
    Quorum(String),
}

/// Verifies a decision file for `packet_id` against the pinned keys. With `packet_hash`, also
/// checks that the decision was signed over that exact packet content. An approval whose
/// document carries co-signing terms must meet them ([`verify_decision_file_under`]).
///
/// # Errors
/// [`DecisionError`] naming the first failed check.
pub fn verify_decision_file(
    file: &Value,
    packet_id: &str,
    packet_hash: Option<&str>,
    pinned: &PinnedKeys,
) -> Result<VerifiedDecision, DecisionError> {
    verify_decision_file_under(file, packet_id, packet_hash, pinned, None)
}

/// [`verify_decision_file`] for a packet whose class needs `required` (the policy's
/// `[cosign]` terms): an approval holds only with signatures, each verified like the
/// file's own, over the same packet id and content, each signed under exactly these terms, from
/// at least `required.required` distinct listed principals (the file's `signature` and its
/// `cosignatures`). With `required: None`, an approval whose document carries terms must meet
/// those: a single co-signature is never an approval. Refusals need one signature.
///
/// # Errors
/// [`DecisionError`] naming the first failed check; [`DecisionError::Quorum`] when the
/// signatures that verify do not make up the quorum.
pub fn verify_decision_file_under(
    file: &Value,
    packet_id: &str,
    packet_hash: Option<&str>,
    pinned: &PinnedKeys,
    required: Option<&Quorum>,
) -> Result<VerifiedDecision, DecisionError> {
    let mut d = verify_one_decision(file, packet_id, packet_hash, pinned)?;
    if d.verdict == Verdict::Refuse {
        return Ok(d);
    }
    let own = cosign_terms(&file["document"]).map_err(|e| DecisionError::Malformed(e.0))?;
    let terms = match (required, own) {
        (None, None) => return Ok(d),
        (Some(q), _) => q.clone(),
        (None, Some(c)) => c.quorum,
    };
    let signed_hash = file["document"]["packet_hash"].as_str().unwrap_or_default().to_owned();
    let under_terms = |doc: &Value| matches!(cosign_terms(doc), Ok(Some(c)) if c.quorum == terms);
    // (name signed under, key) of every approval under these terms: counted by key below.
    let mut approvals: Vec<(String, String)> = Vec::new();
    if under_terms(&file["document"]) {
        approvals.push((d.principal.clone(), d.key.clone()));
    }
    let extra = match file.get("cosignatures") {
        None => &[][..],
        Some(Value::Array(a)) if a.len() <= MAX_COSIGNATURES => a.as_slice(),
        Some(_) => {
            return Err(DecisionError::Malformed(format!(
                "`cosignatures` is not an array of at most {MAX_COSIGNATURES}"
            )));
        }
    };
    for (i, c) in extra.iter().enumerate() {
        let doc = c
            .get("document")
            .filter(|d| d.is_object())
            .ok_or_else(|| DecisionError::Malformed(format!("co-signature {i} has no document")))?;
        let sig =
            c.get("signature").ok_or_else(|| DecisionError::Malformed(format!("co-signature {i} has no signature")))?;
        verify_document(doc, sig, pinned).map_err(|e| DecisionError::Signature(format!("co-signature {i}: {e}")))?;
        let f = |k: &str| doc.get(k).and_then(Value::as_str);
        if f("domain") != Some(DECISION_DOMAIN)
            || f("packet_id") != Some(packet_id)
            || f("packet_hash") != Some(signed_hash.as_str())
            || f("decision") != Some(Verdict::Approve.as_str())
        {
            return Err(DecisionError::Signature(format!(
                "co-signature {i} is not an approval of this packet's content"
            )));
        }
        if under_terms(doc) {
            let key = sig.get("key_fingerprint").and_then(Value::as_str).unwrap_or_default();
            approvals.push((f("principal").unwrap_or_default().to_owned(), key.to_owned()));
        }
    }
    let signers = terms.count(approvals.iter().map(|(n, k)| (n.as_str(), k.as_str())), pinned).signers;
    if signers.len() < terms.required {
        let by = if signers.is_empty() { "nobody under these terms".to_owned() } else { signers.join(", ") };
        return Err(DecisionError::Quorum(format!(
            "{packet_id} needs the approval of {}; signed by {by}",
            terms.describe()
        )));
    }
    d.cosigners = signers;
    Ok(d)
}

/// The checks of one decision file's own document and signature ([`verify_decision_file`]).
fn verify_one_decision(
    file: &Value,
    packet_id: &str,
    packet_hash: Option<&str>,
    pinned: &PinnedKeys,
) -> Result<VerifiedDecision, DecisionError> {
    if file.get("type").and_then(Value::as_str) != Some(DECISION_FILE_TYPE) {
        return Err(DecisionError::Malformed("`type` is not warrant_decision".into()));
    }
    let doc =
        file.get("document").filter(|d| d.is_object()).ok_or_else(|| DecisionError::Malformed("no document".into()))?;
    let sig = file
        .get("signature")
        .filter(|d| d.is_object())
        .ok_or_else(|| DecisionError::Malformed("no signature".into()))?;
    verify_document(doc, sig, pinned).map_err(|e| DecisionError::Signature(e.to_string()))?;
    let d = |k: &str| doc.get(k).and_then(Value::as_str).map(str::to_owned);
    if d("domain").as_deref() != Some(DECISION_DOMAIN) {
        return Err(DecisionError::Malformed("unknown document domain".into()));
    }
    let found = d("packet_id").unwrap_or_default();
    if found != packet_id {
        return Err(DecisionError::WrongPacket { expected: packet_id.to_owned(), found });
    }
    if let Some(actual) = packet_hash {
        let signed = d("packet_hash").unwrap_or_default();
        if signed != actual {
            return Err(DecisionError::PacketChanged { signed, actual: actual.to_owned() });
        }
    }
    let verdict = d("decision")
        .as_deref()
        .and_then(Verdict::parse)
        .ok_or_else(|| DecisionError::Malformed("decision is neither approve nor refuse".into()))?;
    let system = system_of(doc).map_err(|e| DecisionError::Malformed(e.0))?;
    let correction = correction_of(doc).map_err(|e| DecisionError::Malformed(e.0))?;
    // The unsigned summary fields must agree with the signed document.
    if file.get("decision").and_then(Value::as_str) != Some(verdict.as_str())
        || file.get("packet_id").and_then(Value::as_str) != Some(packet_id)
    {
        return Err(DecisionError::Signature("file summary disagrees with the signed document".into()));
    }
    Ok(VerifiedDecision {
        verdict,
        principal: d("principal").unwrap_or_default(),
        key: sig.get("key_fingerprint").and_then(Value::as_str).unwrap_or_default().to_owned(),
        reason: d("reason"),
        decided_at: d("decided_at").unwrap_or_default(),
        entry_hash: file.get("chain").and_then(|c| c.get("entry_hash")).and_then(Value::as_str).map(str::to_owned),
        preconditions: doc.get("preconditions").and_then(Value::as_array).cloned().unwrap_or_default(),
        cosigners: Vec::new(),
        system,
        correction,
    })
}
