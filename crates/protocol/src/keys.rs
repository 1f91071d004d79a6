//! The principal's Ed25519 key and the set of pinned public keys, as values: fingerprints,
//! signing, the pins verification trusts. Reading and writing them (`principal.key`, protected at
//! rest, and `pinned_keys.toml`) is the store's, `warrant_store::key_files`.
//!
//! Key material follows Lodestar's conventions (`lodestar-and-tiers.md` §A7.2, §A7.3).
//! Verification trusts only pinned keys; a key is named by its fingerprint
//! `SHA256:<base64 of SHA-256(raw 32-byte public key), unpadded>` (the ssh form).

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};
use ed25519_dalek::pkcs8::{DecodePublicKey, EncodePublicKey};
use ed25519_dalek::{SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};

/// The ssh-style fingerprint `SHA256:<unpadded base64>` of a public key (43 base64 characters).
#[must_use]
pub fn fingerprint(key: &VerifyingKey) -> String {
    format!("SHA256:{}", STANDARD_NO_PAD.encode(Sha256::digest(key.as_bytes())))
}

/// The principal: a name and the signing key that speaks for it.
pub struct Principal {
    /// The principal's name, bound into every signed decision.
    pub name: String,
    pub(crate) key: SigningKey,
}

impl std::fmt::Debug for Principal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print key material.
        f.debug_struct("Principal")
            .field("name", &self.name)
            .field("fingerprint", &self.fingerprint())
            .finish_non_exhaustive()
    }
}

impl Principal {
    /// A principal from a raw 32-byte secret seed (tests and test vectors).
    #[must_use]
    pub fn from_seed(name: &str, seed: &[u8; 32]) -> Self {
        Self { name: name.to_owned(), key: SigningKey::from_bytes(seed) }
    }

    /// A principal from its signing key (the store, reading `principal.key`).
    #[must_use]
    pub fn from_signing_key(name: &str, key: SigningKey) -> Self {
        Self { name: name.to_owned(), key }
    }

    /// The signing key itself (the store, writing `principal.key`). Never print it.
    #[must_use]
    pub fn signing_key(&self) -> &SigningKey {
        &self.key
    }

    /// The public key.
    #[must_use]
    pub fn verifying_key(&self) -> VerifyingKey {
        self.key.verifying_key()
    }

    /// The public key's fingerprint.
    #[must_use]
    pub fn fingerprint(&self) -> String {
        fingerprint(&self.verifying_key())
    }

    /// Signs `message` (pure Ed25519, no prehash).
    #[must_use]
    pub fn sign(&self, message: &[u8]) -> ed25519_dalek::Signature {
        use ed25519_dalek::Signer as _;
        self.key.sign(message)
    }

    /// The public key as SPKI PEM (what `warrant keys export` prints).
    #[must_use]
    pub fn public_pem(&self) -> String {
        public_pem(&self.verifying_key())
    }
}

/// A public key as SPKI PEM.
#[must_use]
pub fn public_pem(key: &VerifyingKey) -> String {
    key.to_public_key_pem(ed25519_dalek::pkcs8::spki::der::pem::LineEnding::LF).unwrap_or_default()
}

/// Why text is not an Ed25519 public key ([`parse_public_key`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PublicKeyError {
    /// PEM that is not an Ed25519 SubjectPublicKeyInfo.
    #[error("{0}")]
    Pem(String),
    /// Neither PEM nor standard base64.
    #[error("not PEM or base64: {0}")]
    Encoding(String),
    /// Base64 of other than 32 bytes.
    #[error("raw key must be 32 bytes")]
    Length,
    /// 32 bytes that are not a valid Ed25519 point.
    #[error("{0}")]
    NotAKey(String),
}

/// Parses a public key from SPKI PEM, or from standard base64 of the raw 32 bytes.
///
/// # Errors
/// A [`PublicKeyError`] saying why the text is not an Ed25519 public key.
pub fn parse_public_key(text: &str) -> Result<VerifyingKey, PublicKeyError> {
    let text = text.trim();
    if text.starts_with("-----BEGIN") {
        return VerifyingKey::from_public_key_pem(text).map_err(|e| PublicKeyError::Pem(e.to_string()));
    }
    let raw = STANDARD.decode(text).map_err(|e| PublicKeyError::Encoding(e.to_string()))?;
    let bytes: [u8; 32] = raw.try_into().map_err(|_| PublicKeyError::Length)?;
    VerifyingKey::from_bytes(&bytes).map_err(|e| PublicKeyError::NotAKey(e.to_string()))
}

/// One pinned key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinnedKey {
    /// The principal this key speaks for.
    pub principal: String,
    /// Earlier names of that principal (`warrant keys rename`): signatures under these names
    /// made with this key still verify, so records made before a rename stay valid.
    pub aliases: Vec<String>,
    /// The key.
    pub key: VerifyingKey,
    /// Its fingerprint.
    pub fingerprint: String,
}

impl PinnedKey {
    /// True when this key speaks for `name`: its principal or one of its earlier names.
    #[must_use]
    pub fn speaks_for(&self, name: &str) -> bool {
        self.principal == name || self.aliases.iter().any(|a| a == name)
    }
}

/// The public keys verification accepts, keyed by fingerprint.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PinnedKeys {
    pub(crate) keys: Vec<PinnedKey>,
}

impl PinnedKeys {
    /// Keeps only the keys for which `keep` is true.
    pub fn retain(&mut self, keep: impl FnMut(&PinnedKey) -> bool) {
        self.keys.retain(keep);
    }

    /// Adds (or re-binds) a key for `principal`.
    pub fn pin(&mut self, principal: &str, key: VerifyingKey) {
        let fp = fingerprint(&key);
        self.keys.retain(|k| k.fingerprint != fp);
        self.keys.push(PinnedKey { principal: principal.to_owned(), aliases: Vec::new(), key, fingerprint: fp });
    }

    /// Renames the principal of the pinned key `fingerprint` to `new_name`, keeping its former
    /// name (and earlier aliases) as aliases, so signatures made under them still verify. False
    /// when no such key is pinned.
    pub fn rename(&mut self, fingerprint: &str, new_name: &str) -> bool {
        let Some(k) = self.keys.iter_mut().find(|k| k.fingerprint == fingerprint) else { return false };
        if k.principal != new_name {
            let old = std::mem::replace(&mut k.principal, new_name.to_owned());
            k.aliases.retain(|a| a != new_name);
            if !k.aliases.contains(&old) {
                k.aliases.push(old);
            }
        }
        true
    }

    /// The other pinned key that already speaks for `name`, if renaming the key `fingerprint` to
    /// `name` would take another principal's name (one principal signing as two). A
    /// key going back to a name it had (its retired predecessor keeps speaking for it) takes
    /// nothing.
    #[must_use]
    pub fn name_taken(&self, fingerprint: &str, name: &str) -> Option<&PinnedKey> {
        if self.get(fingerprint).is_some_and(|k| k.speaks_for(name)) {
            return None;
        }
        self.keys.iter().find(|k| k.fingerprint != fingerprint && k.speaks_for(name))
    }

    /// Adds `alias` as an earlier name of the pinned key `fingerprint` (no-op when it is the
    /// principal or already an alias, or when no such key is pinned).
    pub fn add_alias(&mut self, fingerprint: &str, alias: &str) {
        if let Some(k) = self.keys.iter_mut().find(|k| k.fingerprint == fingerprint)
            && !k.speaks_for(alias)
        {
            k.aliases.push(alias.to_owned());
        }
    }

    /// Removes the key with this fingerprint; true if one was removed.
    pub fn unpin(&mut self, fingerprint: &str) -> bool {
        let before = self.keys.len();
        self.keys.retain(|k| k.fingerprint != fingerprint);
        before != self.keys.len()
    }

    /// The pinned key with this fingerprint.
    #[must_use]
    pub fn get(&self, fingerprint: &str) -> Option<&PinnedKey> {
        self.keys.iter().find(|k| k.fingerprint == fingerprint)
    }

    /// Every pinned key.
    pub fn iter(&self) -> std::slice::Iter<'_, PinnedKey> {
        self.keys.iter()
    }

    /// Number of pinned keys.
    #[must_use]
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// True when no key is pinned.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

/// The gateways' receipt-signing keys: the `role = "gateway"` entries of `pinned_keys.toml`
/// (`warrant keys pin --gateway NAME FILE`). A separate type from [`PinnedKeys`], which never holds
/// them: the only thing a gateway key verifies is a receipt ([`GatewayKeys::verify_document`]).
/// A key pinned as a principal's too is left out here: a principal's signature on a receipt is
/// not a gateway's observation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GatewayKeys {
    pub(crate) keys: PinnedKeys,
}

impl GatewayKeys {
    /// The gateway keys `keys` (the store, reading `pinned_keys.toml`).
    #[must_use]
    pub fn from_pinned(keys: PinnedKeys) -> Self {
        Self { keys }
    }

    /// The keys as a pinned set (the store, writing `pinned_keys.toml`).
    #[must_use]
    pub fn as_pinned(&self) -> &PinnedKeys {
        &self.keys
    }

    /// Adds (or re-binds) the key of the gateway `name`.
    pub fn pin(&mut self, name: &str, key: VerifyingKey) {
        self.keys.pin(name, key);
    }

    /// Removes the key with this fingerprint; true if one was removed.
    pub fn unpin(&mut self, fingerprint: &str) -> bool {
        self.keys.unpin(fingerprint)
    }

    /// The gateway key with this fingerprint (its `principal` is the gateway's name).
    #[must_use]
    pub fn get(&self, fingerprint: &str) -> Option<&PinnedKey> {
        self.keys.get(fingerprint)
    }

    /// Every gateway key.
    pub fn iter(&self) -> std::slice::Iter<'_, PinnedKey> {
        self.keys.iter()
    }

    /// Number of gateway keys.
    #[must_use]
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// True when no gateway key is pinned.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Verifies a detached signature object made by [`crate::decision::sign_document`] over
    /// `doc` against the gateway keys: payload hash, algorithm, a pinned gateway key, Ed25519
    /// (`verify_strict`). The `signer` name is not checked (the gateway's own configuration names
    /// it; the pin's name is the principal's); the key is.
    ///
    /// # Errors
    /// The first failed check, a [`crate::decision::SignatureError`].
    pub fn verify_document(
        &self,
        doc: &serde_json::Value,
        sig: &serde_json::Value,
    ) -> Result<&PinnedKey, crate::decision::SignatureError> {
        use crate::decision::SignatureError;
        let claimed = sig
            .get("payload_hash")
            .and_then(serde_json::Value::as_str)
            .ok_or(SignatureError::Missing("payload_hash"))?;
        let actual = crate::decision::payload_hash(doc);
        if claimed != actual {
            return Err(SignatureError::Edited { signed: claimed.to_owned(), now: actual });
        }
        let fp = crate::decision::signed_key(sig)?;
        let pin = self.keys.get(fp).ok_or_else(|| SignatureError::NotAGatewayKey(fp.to_owned()))?;
        let signature = crate::decision::signature_bytes(sig)?;
        pin.key
            .verify_strict(actual.as_bytes(), &signature)
            .map_err(|_| SignatureError::Forged { role: "gateway", fingerprint: fp.to_owned() })?;
        Ok(pin)
    }
}
