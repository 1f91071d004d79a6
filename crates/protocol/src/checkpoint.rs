//! Signed checkpoints: the principal's statement "this chain had `records` records ending in
//! `head_hash`, `bytes` long", signed with every decision and control, so cutting records off the
//! end of a chain is detected (`docs/spool.md`, Checkpoints).
//!
//! A hash chain alone cannot tell a chain from its own prefix: removing the last records leaves a
//! shorter chain that verifies. The checkpoint is written, under the chain's lock and right after
//! the record it follows, to `checkpoint.json` in the spool, to the principal's own copy
//! (`<config dir>/checkpoints/<spool id>.json` for the CLI and the console, out of the agents'
//! reach; see `warrant_store::spool::Spool::with_checkpoint_copies`), and into the decision file each agent receives. `warrant_store::checkpoint_files::latest` takes the longest valid one of all of them, and
//! `warrant_store::checkpoint_files::check` reports a chain shorter than it, or one whose record at the checkpoint is not the
//! one signed.

use crate::keys::{PinnedKeys, Principal};
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
    /// `"sha256:<hex>"` of the principal's fold of the prefix (the file beside the principal's
    /// own copy of this checkpoint, `warrant_store::checkpoint_files::fold_copy`): what a decision
    /// needs of the first `records` records, so the next decision reads none of them
    /// (`docs/spool.md`, Incremental verification). `None` in checkpoints signed without one
    /// (before warrant wrote it, or when the fold could not be written): the next decision takes
    /// the slower path once.
    pub fold_sha256: Option<String>,
    /// `"sha256:<hex>"` of the agents' snapshot of the prefix (`snapshot.json` in the spool,
    /// `warrant_store::snapshot`): the state an agent-side process needs of the first `records`
    /// records (controls, grants, key events, publishers, evidence, which packets were decided),
    /// so a hook verifies one signature and the records after it instead of the whole chain
    /// (`docs/spool.md`, Agents' snapshots). `None` in checkpoints signed without one.
    pub snapshot_sha256: Option<String>,
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
    sign_with_fold(
        principal,
        records,
        head_hash,
        bytes,
        Digests { prefix_sha256, fold: None, snapshot: None },
        signed_at,
    )
}

/// The digests a checkpoint binds besides its head ([`sign_with_fold`]), each `"sha256:<hex>"`.
#[derive(Debug, Clone, Copy)]
pub struct Digests<'a> {
    /// Of the chain's first `bytes` bytes ([`Checkpoint::prefix_sha256`]).
    pub prefix_sha256: &'a str,
    /// Of the principal's fold of the prefix ([`Checkpoint::fold_sha256`]), if written.
    pub fold: Option<&'a str>,
    /// Of the agents' snapshot of the prefix ([`Checkpoint::snapshot_sha256`]), if written.
    pub snapshot: Option<&'a str>,
}

/// [`sign`], binding the principal's fold of the prefix and the agents' snapshot of it too: with
/// `digests.fold` (`"sha256:<hex>"` of the fold file's bytes) the document gains a `fold_sha256`
/// member, and a fold is used in place of the prefix only when its bytes hash to it
/// ([`Checkpoint::fold_sha256`]); `digests.snapshot` likewise gives `snapshot_sha256`
/// ([`Checkpoint::snapshot_sha256`]).
#[must_use]
pub fn sign_with_fold(
    principal: &Principal,
    records: u64,
    head_hash: &str,
    bytes: u64,
    digests: Digests<'_>,
    signed_at: &str,
) -> Value {
    let Digests { prefix_sha256, fold: fold_sha256, snapshot: snapshot_sha256 } = digests;
    let mut document = json!({
        "domain": CHECKPOINT_DOMAIN,
        "records": records,
        "head_hash": head_hash,
        "bytes": bytes,
        "prefix_sha256": prefix_sha256,
        "principal": principal.name,
        "key": principal.fingerprint(),
        "signed_at": signed_at,
    });
    if let Value::Object(m) = &mut document {
        for (key, digest) in [("fold_sha256", fold_sha256), ("snapshot_sha256", snapshot_sha256)] {
            if let Some(d) = digest {
                m.insert(key.into(), Value::String(d.to_owned()));
            }
        }
    }
    let signature = crate::decision::sign_document(principal, &document);
    json!({"document": document, "signature": signature})
}

/// Why a signed checkpoint does not verify ([`verify`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckpointError {
    /// The file is not JSON (the parser's message).
    #[error("not JSON: {0}")]
    NotJson(String),
    /// A member is missing or malformed: the sentence says which.
    #[error("{0}")]
    Shape(&'static str),
    /// `prefix_sha256` or `fold_sha256` is not a SHA-256 digest string.
    #[error("a checkpoint's {0} must be a sha256 digest string")]
    Digest(&'static str),
    /// Its domain is not a checkpoint's.
    #[error("not a warrant checkpoint")]
    NotACheckpoint,
    /// The signature does not verify under a pinned key.
    #[error(transparent)]
    Signature(#[from] crate::decision::SignatureError),
}

/// Verifies a signed checkpoint against the pinned keys.
///
/// # Errors
/// A [`CheckpointError`]: the shape, the domain, or the signature.
pub fn verify(signed: &Value, pinned: &PinnedKeys, source: &str) -> Result<Checkpoint, CheckpointError> {
    let doc = signed
        .get("document")
        .filter(|d| d.is_object())
        .ok_or(CheckpointError::Shape("a checkpoint needs a document"))?;
    let sig = signed
        .get("signature")
        .filter(|d| d.is_object())
        .ok_or(CheckpointError::Shape("a checkpoint needs a signature"))?;
    if doc.get("domain").and_then(Value::as_str) != Some(CHECKPOINT_DOMAIN) {
        return Err(CheckpointError::NotACheckpoint);
    }
    crate::decision::verify_document(doc, sig, pinned)?;
    let s = |k: &str| doc.get(k).and_then(Value::as_str).map(str::to_owned);
    let n = |k: &str| doc.get(k).and_then(Value::as_u64);
    let digest = |key: &str| match doc.get(key) {
        None => Ok(None),
        Some(Value::String(h)) if crate::canonical::is_sha256_string(h) => Ok(Some(h.clone())),
        Some(_) => Err(CheckpointError::Digest(match key {
            "prefix_sha256" => "prefix_sha256",
            "fold_sha256" => "fold_sha256",
            _ => "snapshot_sha256",
        })),
    };
    let prefix_sha256 = digest("prefix_sha256")?;
    let fold_sha256 = digest("fold_sha256")?;
    let snapshot_sha256 = digest("snapshot_sha256")?;
    match (n("records"), s("head_hash"), n("bytes")) {
        (Some(records), Some(head_hash), Some(bytes))
            if records >= 1 && crate::canonical::is_sha256_string(&head_hash) =>
        {
            Ok(Checkpoint {
                records,
                head_hash,
                bytes,
                prefix_sha256,
                fold_sha256,
                snapshot_sha256,
                principal: s("principal").unwrap_or_default(),
                signed_at: s("signed_at").unwrap_or_default(),
                source: source.to_owned(),
            })
        }
        _ => Err(CheckpointError::Shape("a checkpoint needs records >= 1, a sha256 head_hash and bytes")),
    }
}

/// SHA-256 over a chain's first bytes that can be stored and extended later: the state after the
/// whole 64-byte blocks hashed so far, the byte count and the bytes after the last whole block
/// (FIPS 180-4 §6.2, the compression function of [`sha2::block_api::compress256`]). The principal's fold of
/// a checkpointed prefix carries it, so the next checkpoint's `prefix_sha256` extends it over the
/// records after the prefix without reading the prefix again. Serialized as
/// `{"state": [8 u32], "len": bytes hashed, "pending": [fewer than 64 bytes]}`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PrefixDigest {
    state: [u32; 8],
    len: u64,
    pending: Vec<u8>,
}

/// SHA-256's initial hash value (FIPS 180-4 §5.3.3).
const SHA256_H0: [u32; 8] =
    [0x6a09_e667, 0xbb67_ae85, 0x3c6e_f372, 0xa54f_f53a, 0x510e_527f, 0x9b05_688c, 0x1f83_d9ab, 0x5be0_cd19];

impl Default for PrefixDigest {
    fn default() -> Self {
        Self { state: SHA256_H0, len: 0, pending: Vec::new() }
    }
}

impl PrefixDigest {
    /// How many bytes were hashed.
    #[must_use]
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether nothing was hashed yet.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Hashes `data` after what was hashed so far.
    pub fn update(&mut self, mut data: &[u8]) {
        self.len += data.len() as u64;
        // A stored state that is not well formed (more than a block pending) is never extended
        // into a wrong digest: `pending` is kept below 64 bytes by construction, and a longer
        // one read back is compressed as it comes.
        if !self.pending.is_empty() {
            let take = (64 - self.pending.len() % 64).min(data.len());
            self.pending.extend_from_slice(&data[..take]);
            data = &data[take..];
            if !self.pending.len().is_multiple_of(64) {
                return;
            }
            sha2::block_api::compress256(&mut self.state, self.pending.as_chunks::<64>().0);
            self.pending.clear();
        }
        let whole = data.len() - data.len() % 64;
        sha2::block_api::compress256(&mut self.state, data[..whole].as_chunks::<64>().0);
        self.pending.extend_from_slice(&data[whole..]);
    }

    /// The digest of everything hashed, `"sha256:<hex>"` (the state itself is left as it is).
    #[must_use]
    pub fn finish(&self) -> String {
        let mut state = self.state;
        let mut tail = self.pending.clone();
        tail.push(0x80);
        while tail.len() % 64 != 56 {
            tail.push(0);
        }
        tail.extend_from_slice(&self.len.wrapping_mul(8).to_be_bytes());
        sha2::block_api::compress256(&mut state, tail.as_chunks::<64>().0);
        let mut digest = [0u8; 32];
        for (out, word) in digest.chunks_exact_mut(4).zip(state) {
            out.copy_from_slice(&word.to_be_bytes());
        }
        crate::canonical::prefixed(&digest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decision::SignatureError;

    #[test]
    fn each_way_a_checkpoint_fails_is_its_own_error() {
        let alice = Principal::from_seed("alice", &[1; 32]);
        let mut pinned = PinnedKeys::default();
        pinned.pin("alice", alice.verifying_key());
        let head = crate::canonical::sha256_prefixed(b"head");
        let good = sign(&alice, 3, &head, 900, &head, "2026-11-27T00:00:00Z");
        assert_eq!(verify(&good, &pinned, "f").map(|c| c.records), Ok(3));
        assert_eq!(verify(&json!({}), &pinned, "f"), Err(CheckpointError::Shape("a checkpoint needs a document")));
        let mut other = good.clone();
        other["document"]["domain"] = json!("warrant.decision/v1");
        assert_eq!(verify(&other, &pinned, "f"), Err(CheckpointError::NotACheckpoint));
        let mut edited = good.clone();
        edited["document"]["records"] = json!(4);
        assert!(matches!(
            verify(&edited, &pinned, "f"),
            Err(CheckpointError::Signature(SignatureError::Edited { .. }))
        ));
        let mallory = Principal::from_seed("alice", &[2; 32]);
        let forged = sign(&mallory, 3, &head, 900, &head, "2026-11-27T00:00:00Z");
        assert!(matches!(verify(&forged, &pinned, "f"), Err(CheckpointError::Signature(SignatureError::Unpinned(_)))));
        let bad_fold = sign_with_fold(
            &alice,
            3,
            &head,
            900,
            Digests { prefix_sha256: &head, fold: Some("md5:x"), snapshot: None },
            "2026-11-27T00:00:00Z",
        );
        assert_eq!(verify(&bad_fold, &pinned, "f"), Err(CheckpointError::Digest("fold_sha256")));
        let no_records = sign(&alice, 0, &head, 900, &head, "2026-11-27T00:00:00Z");
        assert!(matches!(verify(&no_records, &pinned, "f"), Err(CheckpointError::Shape(_))));
    }

    #[test]
    fn public_keys_and_quorums_fail_by_kind() {
        use crate::keys::{PublicKeyError, parse_public_key};
        use base64::Engine as _;
        let raw = base64::engine::general_purpose::STANDARD;
        assert!(matches!(parse_public_key("not base64!"), Err(PublicKeyError::Encoding(_))));
        assert_eq!(parse_public_key(&raw.encode([7u8; 31])), Err(PublicKeyError::Length));
        assert!(matches!(
            parse_public_key("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----"),
            Err(PublicKeyError::Pem(_))
        ));
        let key = Principal::from_seed("a", &[3; 32]).verifying_key();
        assert_eq!(parse_public_key(&raw.encode(key.as_bytes())), Ok(key));
        use crate::decision::{Quorum, QuorumError};
        let names = |n: &[&str]| n.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(Quorum::new(3, names(&["a", "b", "b"])), Err(QuorumError::Required { required: 3, listed: 2 }));
        assert_eq!(Quorum::new(0, names(&["a"])), Err(QuorumError::Required { required: 0, listed: 1 }));
        assert_eq!(Quorum::new(1, names(&[" a"])), Err(QuorumError::Name));
        assert!(Quorum::new(2, names(&["b", "a"])).is_ok_and(|q| q.principals == ["a", "b"]));
    }

    #[test]
    fn a_prefix_digest_extended_in_pieces_is_sha256() {
        let data: Vec<u8> = (0..5000u32).map(|i| (i * 7 % 251) as u8).collect();
        for cut in [0, 1, 55, 56, 63, 64, 65, 127, 128, 1000, 4999, 5000] {
            let mut d = PrefixDigest::default();
            d.update(&data[..cut]);
            let stored: PrefixDigest = serde_json::from_slice(&serde_json::to_vec(&d).expect("json")).expect("back");
            let mut d = stored;
            for piece in data[cut..].chunks(37) {
                d.update(piece);
            }
            assert_eq!(d.len(), 5000);
            assert_eq!(d.finish(), crate::canonical::sha256_prefixed(&data), "cut at {cut}");
        }
        assert_eq!(PrefixDigest::default().finish(), crate::canonical::sha256_prefixed(b""));
    }
}
