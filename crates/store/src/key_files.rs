//! The principal's key files and `pinned_keys.toml` (the directory store's side of [`warrant_protocol::keys`]).
//!
//! Key material follows Lodestar's conventions (`lodestar-and-tiers.md` §A7.2, §A7.3): the private
//! key is PKCS#8 PEM in a file of mode 0600, created through a temporary file and a rename so it is
//! never readable by others, and refused (as ssh does) when its mode lets group or others read
//! it. Verification trusts only keys listed in `pinned_keys.toml`; a key is named by its
//! fingerprint `SHA256:<base64 of SHA-256(raw 32-byte public key), unpadded>` (the ssh form).
//!
//! **At rest the key is protected by a passphrase**, as minisign and `ssh-keygen`
//! protect theirs: `principal.key` then holds the PKCS#8 PEM encrypted as an ASCII-armored
//! [age](https://age-encryption.org/v1) file to the passphrase (scrypt, a memory-hard KDF, and
//! ChaCha20-Poly1305, an AEAD, by the `age` crate), so `age -d principal.key` also opens it. A
//! file holding the plain PEM is an unprotected key (`warrant keys init --no-passphrase`, or a key
//! made before passphrases). The passphrase comes from `WARRANT_PASSPHRASE_FILE` (the first line
//! of that file, as restic's `RESTIC_PASSWORD_FILE`) or the terminal (the command line asks it); with
//! neither, loading a protected key fails with a clear error, never falls back to anything.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::SigningKey;
use ed25519_dalek::pkcs8::{DecodePrivateKey, EncodePrivateKey};
use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use warrant_protocol::keys::{GatewayKeys, PinnedKeys, Principal, fingerprint, parse_public_key};

/// File name of the private key inside the config directory.
pub const PRIVATE_KEY_FILE: &str = "principal.key";
/// File name of the principal's public key (SPKI PEM) inside the config directory.
pub const PUBLIC_KEY_FILE: &str = "principal.pub";
/// File name of the pinned keys inside the config directory.
pub const PINNED_FILE: &str = "pinned_keys.toml";
/// Errors of loading, creating or pinning keys.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// A key file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The private key file is readable by group or others.
    #[error("{path}: private key is accessible by group or others (mode {mode:o}); run `chmod 600 {path}`")]
    LoosePermissions {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The private key path is a directory, FIFO or device, not a regular file.
    #[error("{path}: not a regular file (the private key must be a file of its own)")]
    NotRegular {
        /// The path.
        path: PathBuf,
    },
    /// A key file does not hold a valid Ed25519 key.
    #[error("{path}: not a valid Ed25519 key: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// The pinned-keys file does not parse.
    #[error("{path}: {message}")]
    Pinned {
        /// The file.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// The key is protected and no passphrase could be had.
    #[error(
        "{path} is protected by a passphrase and there is no terminal to ask for it: set WARRANT_PASSPHRASE_FILE to a file holding the passphrase, or run the command on a terminal"
    )]
    NoPassphrase {
        /// The key file.
        path: PathBuf,
    },
    /// The file `WARRANT_PASSPHRASE_FILE` names cannot be read.
    #[error(
        "WARRANT_PASSPHRASE_FILE names {path}, which cannot be read ({message}): set it to a file holding the passphrase on its first line, or unset it to be asked on the terminal"
    )]
    PassphraseFile {
        /// The file the variable names.
        path: PathBuf,
        /// Why it cannot be read.
        message: String,
    },
    /// The passphrase does not open the key.
    #[error("{path}: wrong passphrase (nothing was signed)")]
    WrongPassphrase {
        /// The key file.
        path: PathBuf,
    },
    /// No key exists yet, and none is created without the principal asking for one.
    #[error(
        "no principal key in {dir}: create one with `warrant keys init` (it asks for a passphrase; `--no-passphrase` for tests)"
    )]
    NoKey {
        /// The configuration directory.
        dir: PathBuf,
    },
    /// `keys init` would overwrite an existing key.
    #[error("{path} already exists: warrant never overwrites the principal's key")]
    Exists {
        /// The key file.
        path: PathBuf,
    },
}
/// The first line of an ASCII-armored age file.
const AGE_ARMOR: &str = "-----BEGIN AGE ENCRYPTED FILE-----";
/// Largest scrypt work factor (log2 N) accepted when opening a key: about 16 times the cost
/// warrant picks when it protects one, never hours of CPU.
const MAX_SCRYPT_LOG_N: u8 = 22;
/// How the private key is kept at rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protection {
    /// Encrypted to a passphrase (an age file).
    Passphrase,
    /// Plain PKCS#8 PEM.
    None,
}
/// How the key file at `path` is protected (read from its first line; nothing is decrypted).
///
/// # Errors
/// I/O errors (`NotFound` when there is no key).
pub fn protection(path: &Path) -> Result<Protection, KeyError> {
    let bytes = read_key_file(path)?;
    Ok(if bytes.starts_with(AGE_ARMOR.as_bytes()) { Protection::Passphrase } else { Protection::None })
}
/// Reads a private key file, refusing one that group or others may read, write or execute (any
/// of the mode bits `0o077`, as ssh refuses an unprotected key), and anything but a regular file
/// of at most 64 KiB. The mode is checked on the opened file itself (no window between the check
/// and the read), and the file is opened non-blocking, so a FIFO in its place cannot hang warrant.
fn read_key_file(path: &Path) -> Result<zeroize::Zeroizing<Vec<u8>>, KeyError> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    const MAX_KEY_BYTES: u64 = 64 << 10;
    let io_err = |source| KeyError::Io { path: path.to_owned(), source };
    let file =
        fs::OpenOptions::new().read(true).custom_flags(crate::open_flags::NONBLOCK).open(path).map_err(io_err)?;
    let meta = file.metadata().map_err(io_err)?;
    if !meta.is_file() {
        return Err(KeyError::NotRegular { path: path.to_owned() });
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(KeyError::LoosePermissions { path: path.to_owned(), mode });
    }
    if meta.len() > MAX_KEY_BYTES {
        return Err(KeyError::Invalid { path: path.to_owned(), message: "file is too large to be a key".into() });
    }
    let mut bytes = zeroize::Zeroizing::new(Vec::new());
    file.take(MAX_KEY_BYTES).read_to_end(&mut bytes).map_err(io_err)?;
    Ok(bytes)
}

/// The principal's key file, `principal.key` (protected at rest), and its public half.
pub trait PrincipalKeyFile: Sized {
    /// Loads the principal's key from `dir`, creating it **unprotected** (and pinning it) on first
    /// use: for tests, benchmarks and the demo's throwaway key. The command line and the console
    /// never create a key this way (see [`Principal::init`]).
    /// Returns the principal and whether the key was created now.
    ///
    /// # Errors
    /// I/O errors, a key file with loose permissions, a protected key (no passphrase is asked
    /// here), or a file that is not an Ed25519 key.
    fn load_or_create(dir: &Path, name: &str) -> Result<(Self, bool), KeyError>;

    /// Creates the principal's key in `dir` (`principal.key`, mode 0600, never overwriting one;
    /// `principal.pub`) and pins it for `name`. With a passphrase the key is encrypted to it (an
    /// age file: scrypt and ChaCha20-Poly1305); without, it is plain PKCS#8 PEM.
    ///
    /// # Errors
    /// [`KeyError::Exists`] when a key is already there; I/O errors.
    fn init(dir: &Path, name: &str, passphrase: Option<&age::secrecy::SecretString>) -> Result<Self, KeyError>;

    /// A fresh random key for `name` (`path` names the key file in errors).
    ///
    /// # Errors
    /// The operating system's random source failing.
    fn generate(name: &str, path: &Path) -> Result<Self, KeyError>;

    /// Writes this private key to `path` (mode 0600, through a temporary file in the same
    /// directory and a no-clobber rename, never overwriting a file): encrypted to `passphrase` as
    /// an age file, or plain PKCS#8 PEM without one.
    ///
    /// # Errors
    /// [`KeyError::Exists`] when `path` exists; I/O errors.
    fn write_private(&self, path: &Path, passphrase: Option<&age::secrecy::SecretString>) -> Result<(), KeyError>;

    /// Loads an unprotected private key file (`read_key_file`'s checks); a protected one is
    /// [`KeyError::NoPassphrase`] (use [`Principal::load_with`]).
    ///
    /// # Errors
    /// As [`Principal::load_or_create`].
    fn load(path: &Path, name: &str) -> Result<Self, KeyError>;

    /// Loads a private key file, asking `passphrase` only when it is protected. The decrypted PEM
    /// is wiped from memory after parsing; the key itself is wiped when the principal is dropped.
    ///
    /// # Errors
    /// I/O errors, loose permissions, anything but a regular file of at most 64 KiB,
    /// [`KeyError::WrongPassphrase`], the `passphrase` closure's own error, a file that is not an Ed25519 key.
    fn load_with(
        path: &Path,
        name: &str,
        passphrase: impl FnOnce() -> Result<age::secrecy::SecretString, KeyError>,
    ) -> Result<Self, KeyError>;
}

impl PrincipalKeyFile for Principal {
    fn load_or_create(dir: &Path, name: &str) -> Result<(Self, bool), KeyError> {
        let path = dir.join(PRIVATE_KEY_FILE);
        match Self::load(&path, name) {
            Ok(p) => return Ok((p, false)),
            Err(KeyError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        match Self::init(dir, name, None) {
            Ok(p) => Ok((p, true)),
            // Another process created the key first: use theirs.
            Err(KeyError::Exists { .. }) => Self::load(&path, name).map(|p| (p, false)),
            Err(e) => Err(e),
        }
    }

    fn init(dir: &Path, name: &str, passphrase: Option<&age::secrecy::SecretString>) -> Result<Self, KeyError> {
        let path = dir.join(PRIVATE_KEY_FILE);
        fs::create_dir_all(dir).map_err(|source| KeyError::Io { path: dir.to_owned(), source })?;
        let principal = Self::generate(name, &path)?;
        principal.write_private(&path, passphrase)?;
        let public = principal.public_pem();
        write_atomic(&dir.join(PUBLIC_KEY_FILE), public.as_bytes(), 0o644)
            .map_err(|source| KeyError::Io { path: dir.join(PUBLIC_KEY_FILE), source })?;
        let mut pinned = PinnedKeys::load(dir)?;
        pinned.pin(name, principal.verifying_key());
        pinned.save(dir)?;
        Ok(principal)
    }

    fn generate(name: &str, path: &Path) -> Result<Self, KeyError> {
        let mut seed = zeroize::Zeroizing::new([0u8; 32]);
        getrandom::fill(&mut seed[..])
            .map_err(|e| KeyError::Io { path: path.to_owned(), source: io::Error::other(e.to_string()) })?;
        Ok(Self::from_seed(name, &seed))
    }

    fn write_private(&self, path: &Path, passphrase: Option<&age::secrecy::SecretString>) -> Result<(), KeyError> {
        let path = path.to_owned();
        let pem = self
            .signing_key()
            .to_pkcs8_pem(ed25519_dalek::pkcs8::spki::der::pem::LineEnding::LF)
            .map_err(|e| KeyError::Invalid { path: path.clone(), message: e.to_string() })?;
        let stored = match passphrase {
            None => zeroize::Zeroizing::new(pem.as_bytes().to_vec()),
            Some(pass) => {
                let recipient = age::scrypt::Recipient::new(pass.clone());
                let armored = age::encrypt_and_armor(&recipient, pem.as_bytes())
                    .map_err(|e| KeyError::Invalid { path: path.clone(), message: e.to_string() })?;
                zeroize::Zeroizing::new(armored.into_bytes())
            }
        };
        match crate::atomic::write_new(&path, &stored, 0o600) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(KeyError::Exists { path }),
            Err(source) => Err(KeyError::Io { path, source }),
        }
    }

    fn load(path: &Path, name: &str) -> Result<Self, KeyError> {
        Self::load_with(path, name, || Err(KeyError::NoPassphrase { path: path.to_owned() }))
    }

    fn load_with(
        path: &Path,
        name: &str,
        passphrase: impl FnOnce() -> Result<age::secrecy::SecretString, KeyError>,
    ) -> Result<Self, KeyError> {
        let bytes = read_key_file(path)?;
        let pem = if bytes.starts_with(AGE_ARMOR.as_bytes()) {
            let mut identity = age::scrypt::Identity::new(passphrase()?);
            identity.set_max_work_factor(MAX_SCRYPT_LOG_N);
            zeroize::Zeroizing::new(age::decrypt(&identity, &bytes).map_err(|e| match e {
                age::DecryptError::DecryptionFailed | age::DecryptError::NoMatchingKeys => {
                    KeyError::WrongPassphrase { path: path.to_owned() }
                }
                other => KeyError::Invalid { path: path.to_owned(), message: other.to_string() },
            })?)
        } else {
            bytes
        };
        let text = std::str::from_utf8(&pem)
            .map_err(|_| KeyError::Invalid { path: path.to_owned(), message: "not UTF-8 PEM".into() })?;
        let key = SigningKey::from_pkcs8_pem(text)
            .map_err(|e| KeyError::Invalid { path: path.to_owned(), message: e.to_string() })?;
        Ok(Self::from_signing_key(name, key))
    }
}
pub use crate::atomic::write_atomic;
#[derive(serde::Serialize, serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct PinnedFile {
    #[serde(default, rename = "key")]
    keys: Vec<PinnedEntry>,
}
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct PinnedEntry {
    principal: String,
    /// Standard base64 of the raw 32-byte key.
    public_key: String,
    /// Informational; recomputed on load.
    #[serde(default)]
    fingerprint: String,
    /// Earlier names of the principal ([`PinnedKey::aliases`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    aliases: Vec<String>,
    /// `gateway` for a gateway's receipt-signing key ([`GatewayKeys`]); absent (or `principal`)
    /// for a principal's key, so files written before roles existed mean what they meant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    role: Option<String>,
}
/// The role a `pinned_keys.toml` entry gives its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyRole {
    /// A principal's key: verifies decisions, controls, key events and checkpoints.
    Principal,
    /// A gateway's key (`role = "gateway"`): verifies only the receipts that gateway signs.
    Gateway,
}
/// A pinned key's `role` that is neither `principal` nor `gateway` ([`KeyRole::parse`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown role {0:?} (expected \"principal\" or \"gateway\")")]
pub struct UnknownRole(pub String);

impl KeyRole {
    /// The role of an entry's `role` field: absent or `principal` is a principal's key,
    /// `gateway` a gateway's; anything else is an error (never read as either).
    ///
    /// # Errors
    /// [`UnknownRole`], naming it.
    pub fn parse(role: Option<&str>) -> Result<Self, UnknownRole> {
        match role {
            None | Some("principal") => Ok(KeyRole::Principal),
            Some("gateway") => Ok(KeyRole::Gateway),
            Some(other) => Err(UnknownRole(other.to_owned())),
        }
    }

    /// The spelling `keys show` prints.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            KeyRole::Principal => "principal",
            KeyRole::Gateway => "gateway",
        }
    }
}
/// Reads `pinned_keys.toml` in `dir` (a missing file is empty) and returns its path and the keys
/// of `role`, parsed, with the raw entries of every other role (kept as they are when the file is
/// written again).
fn read_pinned(dir: &Path, role: KeyRole) -> Result<(PinnedKeys, Vec<PinnedEntry>), KeyError> {
    read_pinned_owned(dir, role, None)
}
/// [`read_pinned`] of a file `owner` owns (`None`: any); another user's file is an empty set.
fn read_pinned_owned(
    dir: &Path,
    role: KeyRole,
    owner: Option<u32>,
) -> Result<(PinnedKeys, Vec<PinnedEntry>), KeyError> {
    let path = dir.join(PINNED_FILE);
    let text = match crate::config::read_text_file_owned(&path, crate::config::MAX_CONFIG_BYTES, owner) {
        Ok(Some(t)) => t,
        Ok(None) => return Ok((PinnedKeys::default(), Vec::new())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((PinnedKeys::default(), Vec::new())),
        Err(source) => return Err(KeyError::Io { path, source }),
    };
    let file: PinnedFile =
        toml::from_str(&text).map_err(|e| KeyError::Pinned { path: path.clone(), message: e.to_string() })?;
    let mut out = PinnedKeys::default();
    let mut others = Vec::new();
    for entry in file.keys {
        let pin_err =
            |m: String| KeyError::Pinned { path: path.clone(), message: format!("pin for {:?}: {m}", entry.principal) };
        let entry_role = KeyRole::parse(entry.role.as_deref()).map_err(|e| pin_err(e.to_string()))?;
        let key = parse_public_key(&entry.public_key).map_err(|e| pin_err(e.to_string()))?;
        if entry_role != role {
            others.push(entry);
            continue;
        }
        out.pin(&entry.principal, key);
        for alias in entry.aliases {
            out.add_alias(&fingerprint(&key), &alias);
        }
    }
    Ok((out, others))
}
/// The entries of `keys`, with `role` written out (`None` for a principal's).
fn entries_of(keys: &PinnedKeys, role: KeyRole) -> Vec<PinnedEntry> {
    keys.iter()
        .map(|k| PinnedEntry {
            principal: k.principal.clone(),
            public_key: STANDARD.encode(k.key.as_bytes()),
            fingerprint: k.fingerprint.clone(),
            aliases: k.aliases.clone(),
            role: (role == KeyRole::Gateway).then(|| "gateway".to_owned()),
        })
        .collect()
}
/// Writes `entries` to `pinned_keys.toml` in `dir`, atomically.
fn write_pinned(dir: &Path, entries: Vec<PinnedEntry>) -> Result<(), KeyError> {
    let path = dir.join(PINNED_FILE);
    let text = format!(
        "# Public keys whose signatures warrant accepts. Edit with `warrant keys pin|unpin`.\n# A key with role = \"gateway\" verifies only the receipts its gateway signs, never a decision.\n{}",
        toml::to_string(&PinnedFile { keys: entries }).unwrap_or_default()
    );
    write_atomic(&path, text.as_bytes(), 0o644).map_err(|source| KeyError::Io { path, source })
}

/// The principal keys of `pinned_keys.toml`.
pub trait PinnedKeysFile: Sized {
    /// Loads the **principal** keys of `pinned_keys.toml` in `dir` (entries without a `role`, or
    /// `role = "principal"`); a missing file is an empty set. Gateway keys are
    /// [`GatewayKeys::load`]'s.
    ///
    /// # Errors
    /// I/O errors, or a file that does not parse, holds an invalid key or an unknown role (a
    /// broken pin would otherwise look exactly like a forgery, §A7.3).
    fn load(dir: &Path) -> Result<Self, KeyError>;

    /// Writes the set to `pinned_keys.toml` in `dir`, atomically, keeping the file's gateway keys.
    ///
    /// # Errors
    /// I/O errors; a file that does not parse (its gateway keys could not be kept).
    fn save(&self, dir: &Path) -> Result<(), KeyError>;
}

impl PinnedKeysFile for PinnedKeys {
    fn load(dir: &Path) -> Result<Self, KeyError> {
        // Principal keys only: a `role = "gateway"` entry is never in this set, so no gateway key
        // can verify a decision, control, key event or checkpoint.
        read_pinned(dir, KeyRole::Principal).map(|(keys, _)| keys)
    }

    fn save(&self, dir: &Path) -> Result<(), KeyError> {
        let (_, others) = read_pinned(dir, KeyRole::Principal)?;
        let mut entries = entries_of(self, KeyRole::Principal);
        entries.extend(others);
        write_pinned(dir, entries)
    }
}

/// The gateway keys of `pinned_keys.toml`.
pub trait GatewayKeysFile: Sized {
    /// Loads the gateway keys of `pinned_keys.toml` in `dir`; a missing file is an empty set.
    ///
    /// # Errors
    /// As [`PinnedKeys::load`].
    fn load(dir: &Path) -> Result<Self, KeyError>;

    /// [`GatewayKeys::load`] from a `pinned_keys.toml` that `owner` owns (`None`: any); another
    /// user's file is an empty set. A hook or gateway runs as the agent's user: in a spool the
    /// principal owns, only a file the principal owns may say whose receipts are observed
    /// outcomes, or an agent could pin its own key and graduate itself.
    ///
    /// # Errors
    /// As [`PinnedKeys::load`].
    fn load_owned(dir: &Path, owner: Option<u32>) -> Result<Self, KeyError>;

    /// Writes the set to `pinned_keys.toml` in `dir`, atomically, keeping the file's principal
    /// keys.
    ///
    /// # Errors
    /// As [`PinnedKeys::save`].
    fn save(&self, dir: &Path) -> Result<(), KeyError>;
}

impl GatewayKeysFile for GatewayKeys {
    fn load(dir: &Path) -> Result<Self, KeyError> {
        Self::load_owned(dir, None)
    }

    fn load_owned(dir: &Path, owner: Option<u32>) -> Result<Self, KeyError> {
        let principals = PinnedKeys::load(dir)?;
        let (mut keys, _) = read_pinned_owned(dir, KeyRole::Gateway, owner)?;
        keys.retain(|k| principals.get(&k.fingerprint).is_none());
        Ok(Self::from_pinned(keys))
    }

    fn save(&self, dir: &Path) -> Result<(), KeyError> {
        let (_, others) = read_pinned(dir, KeyRole::Gateway)?;
        let mut entries = others;
        entries.extend(entries_of(self.as_pinned(), KeyRole::Gateway));
        write_pinned(dir, entries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc8032_seed_gives_the_lodestar_public_key() {
        let seed: [u8; 32] = [
            0x9d, 0x61, 0xb1, 0x9d, 0xef, 0xfd, 0x5a, 0x60, 0xba, 0x84, 0x4a, 0xf4, 0x92, 0xec, 0x2c, 0xc4, 0x44, 0x49,
            0xc5, 0x69, 0x7b, 0x32, 0x69, 0x19, 0x70, 0x3b, 0xac, 0x03, 0x1c, 0xae, 0x7f, 0x60,
        ];
        let p = Principal::from_seed("operator", &seed);
        assert_eq!(
            warrant_protocol::canonical::hex(p.verifying_key().as_bytes()),
            "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
        );
        assert!(p.public_pem().contains("MCowBQYDK2VwAyEA11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo="));
    }

    #[test]
    fn creates_a_0600_key_pins_it_and_reloads_the_same_key() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (p1, created) = Principal::load_or_create(dir.path(), "alice").expect("create");
        assert!(created);
        let mode = fs::metadata(dir.path().join(PRIVATE_KEY_FILE)).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let (p2, created) = Principal::load_or_create(dir.path(), "alice").expect("load");
        assert!(!created);
        assert_eq!(p1.fingerprint(), p2.fingerprint());
        let pinned = PinnedKeys::load(dir.path()).expect("pins");
        assert_eq!(pinned.get(&p1.fingerprint()).map(|k| k.principal.as_str()), Some("alice"));
        assert!(!format!("{p1:?}").contains("PRIVATE"));
    }

    #[test]
    fn refuses_a_key_readable_by_others() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (_p, _) = Principal::load_or_create(dir.path(), "alice").expect("create");
        let path = dir.path().join(PRIVATE_KEY_FILE);
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).expect("chmod");
        let err = Principal::load(&path, "alice").expect_err("loose key must be refused");
        assert!(matches!(err, KeyError::LoosePermissions { mode: 0o640, .. }), "{err}");
    }

    #[test]
    fn pinned_keys_round_trip_and_unpin() {
        let dir = tempfile::tempdir().expect("tempdir");
        let a = Principal::from_seed("a", &[1; 32]);
        let b = Principal::from_seed("b", &[2; 32]);
        let mut pins = PinnedKeys::default();
        pins.pin("a", a.verifying_key());
        pins.pin("b", b.verifying_key());
        pins.save(dir.path()).expect("save");
        let mut loaded = PinnedKeys::load(dir.path()).expect("load");
        assert_eq!(loaded, pins);
        assert!(loaded.unpin(&a.fingerprint()));
        assert!(!loaded.unpin(&a.fingerprint()));
        assert!(loaded.get(&a.fingerprint()).is_none());
        assert_eq!(loaded.len(), 1);
    }

    #[test]
    fn a_renamed_pin_keeps_its_old_name_as_an_alias_across_save_and_load() {
        let dir = tempfile::tempdir().expect("tempdir");
        let a = Principal::from_seed("a", &[1; 32]);
        let mut pins = PinnedKeys::default();
        pins.pin("alice", a.verifying_key());
        assert!(pins.rename(&a.fingerprint(), "alice2"));
        assert!(!pins.rename("SHA256:none", "x"));
        pins.save(dir.path()).expect("save");
        let loaded = PinnedKeys::load(dir.path()).expect("load");
        let pin = loaded.get(&a.fingerprint()).expect("pinned");
        assert_eq!(pin.principal, "alice2");
        assert!(pin.speaks_for("alice") && pin.speaks_for("alice2") && !pin.speaks_for("bob"));
        // Re-pinning binds the key afresh: the aliases go.
        let mut again = loaded.clone();
        again.pin("bob", a.verifying_key());
        assert!(!again.get(&a.fingerprint()).expect("pinned").speaks_for("alice"));
    }

    #[test]
    fn gateway_roles_are_kept_apart_from_principal_keys() {
        let dir = tempfile::tempdir().expect("tempdir");
        let a = Principal::from_seed("alice", &[1; 32]);
        let g = Principal::from_seed("gw", &[2; 32]);
        let u = Principal::from_seed("old", &[3; 32]);
        let b64 = |p: &Principal| STANDARD.encode(p.verifying_key().as_bytes());
        // A file written before roles: its entries are principal keys.
        fs::write(
            dir.path().join(PINNED_FILE),
            format!(
                "[[key]]\nprincipal = \"alice\"\npublic_key = \"{}\"\n\n[[key]]\nprincipal = \"fs-gw\"\npublic_key = \"{}\"\nrole = \"gateway\"\n\n[[key]]\nprincipal = \"old\"\npublic_key = \"{}\"\nrole = \"principal\"\n",
                b64(&a),
                b64(&g),
                b64(&u)
            ),
        )
        .expect("write");
        let pinned = PinnedKeys::load(dir.path()).expect("load");
        assert_eq!(pinned.len(), 2, "only principal keys: {pinned:?}");
        assert!(pinned.get(&a.fingerprint()).is_some() && pinned.get(&u.fingerprint()).is_some());
        assert!(pinned.get(&g.fingerprint()).is_none(), "a gateway key is never a principal key");
        let gateways = GatewayKeys::load(dir.path()).expect("gateways");
        assert_eq!(gateways.len(), 1);
        assert_eq!(gateways.get(&g.fingerprint()).map(|k| k.principal.as_str()), Some("fs-gw"));
        // Only from a file the given owner owns: another user's says nothing.
        let me = rustix::process::geteuid().as_raw();
        assert_eq!(GatewayKeys::load_owned(dir.path(), Some(me)).expect("mine"), gateways);
        assert!(GatewayKeys::load_owned(dir.path(), Some(me.wrapping_add(1))).expect("another's").is_empty());
        // Saving either set keeps the other's entries.
        let mut p2 = pinned.clone();
        p2.unpin(&u.fingerprint());
        p2.save(dir.path()).expect("save");
        assert_eq!(GatewayKeys::load(dir.path()).expect("gateways"), gateways);
        let mut g2 = gateways.clone();
        g2.pin("other-gw", u.verifying_key());
        g2.save(dir.path()).expect("save");
        assert_eq!(PinnedKeys::load(dir.path()).expect("load"), p2);
        assert_eq!(GatewayKeys::load(dir.path()).expect("gateways").len(), 2);
        // A key pinned as a principal's is never a gateway key, whatever else the file says.
        let mut g3 = GatewayKeys::default();
        g3.pin("sneaky", a.verifying_key());
        g3.save(dir.path()).expect("save");
        assert!(GatewayKeys::load(dir.path()).expect("gateways").get(&a.fingerprint()).is_none());
        // An unknown role is an error, never read as a principal's key.
        fs::write(
            dir.path().join(PINNED_FILE),
            format!("[[key]]\nprincipal = \"x\"\npublic_key = \"{}\"\nrole = \"admin\"\n", b64(&a)),
        )
        .expect("write");
        let err = PinnedKeys::load(dir.path()).expect_err("unknown role");
        assert!(err.to_string().contains("unknown role"), "{err}");
        assert!(GatewayKeys::load(dir.path()).is_err());
    }

    #[test]
    fn a_gateway_signature_verifies_only_under_a_pinned_gateway_key() {
        let g = Principal::from_seed("gw", &[2; 32]);
        let other = Principal::from_seed("gw", &[4; 32]);
        let doc = serde_json::json!({"domain": "warrant.receipt/v1", "content_hash": "sha256:00"});
        let sig = warrant_protocol::decision::sign_document(&g, &doc);
        let mut gateways = GatewayKeys::default();
        assert!(gateways.verify_document(&doc, &sig).is_err(), "not pinned");
        gateways.pin("fs-gw", g.verifying_key());
        assert_eq!(gateways.verify_document(&doc, &sig).map(|k| k.principal.as_str()), Ok("fs-gw"));
        let forged = warrant_protocol::decision::sign_document(&other, &doc);
        assert!(gateways.verify_document(&doc, &forged).is_err());
        let edited = serde_json::json!({"domain": "warrant.receipt/v1", "content_hash": "sha256:01"});
        assert!(gateways.verify_document(&edited, &sig).is_err());
    }
}
