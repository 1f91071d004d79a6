//! Helpers many commands share: resolving the spool, loading the principal's key, the pinned
//! keys and the policies, printing JSON with inert text, asking on the terminal, and naming a
//! JetStream store.

use super::Failure;
use crate::protocol::graduation::PolicySet;
use crate::protocol::keys::{PinnedKeys, Principal};
use crate::store::StoreLocation;
use crate::store::chain_file;
use crate::store::config::{self, Config};
use crate::store::key_files;
use crate::store::prelude::*;
use crate::store::spool::Spool;
use serde_json::Value;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

/// `spool` with the principal's copies of its checkpoints in `<config dir>/checkpoints`.
pub(super) fn with_principal_copies(spool: Spool) -> Spool {
    spool.with_checkpoint_copies(config::config_dir().join("checkpoints"))
}

/// The directory at `root` read as a directory spool, whatever it holds: for verifying a path,
/// which reads the files there and needs no store (a replica's copy verifies offline too), with
/// the principal's copies of its checkpoints.
pub(super) fn directory_at(root: PathBuf) -> Spool {
    with_principal_copies(Spool::new(root))
}

/// The spool at `root` as `open` opens it — [`Spool::open`]: a directory spool, or the replica of
/// the store its marker names, connected now; [`Spool::open_directory`] where no replica may be
/// opened — with the principal's copies of its checkpoints in `<config dir>/checkpoints`.
///
/// # Errors
/// A path that is not a directory; `open`'s errors (a replica whose marker cannot be read or
/// whose store cannot be reached is never worked on as a directory), as usage errors naming the
/// spool.
pub(super) fn spool_opened(
    root: PathBuf,
    open: impl FnOnce(PathBuf) -> Result<Spool, crate::store::StoreError>,
) -> Result<Spool, Failure> {
    if std::fs::metadata(&root).is_ok_and(|m| !m.is_dir()) {
        return Err(Failure::usage(format!("{} is not a directory, so it cannot be a spool", root.display())));
    }
    let spool = open(root.clone()).map_err(|e| Failure::usage(format!("{}: {e}", root.display())))?;
    Ok(with_principal_copies(spool))
}

/// Moves a torn final line of the spool's chain to a side file (an append interrupted by a
/// crash), telling the principal where it went.
///
/// # Errors
/// The chain's lock or I/O errors.
pub(super) fn set_aside_torn_tail(spool: &Spool) -> Result<(), Failure> {
    if spool.chain_path().symlink_metadata().is_err() {
        return Ok(());
    }
    if let Some(aside) = chain_file::recover_torn_tail(&spool.chain_path())? {
        eprintln!("warrant: {}", aside.message());
    }
    Ok(())
}

/// The resolved spool ([`resolve_new_spool`]), which must exist: nothing but `warrant init`
/// (and the generators of test spools) creates one, so a mistyped path is an error that says
/// so, never an empty spool an agent waits on and the principal never opens.
///
/// # Errors
/// A usage error naming the path and how to create a spool there; those of
/// [`resolve_new_spool`].
pub(super) fn resolve_spool(arg: Option<PathBuf>, config: &Config) -> Result<Spool, Failure> {
    resolve_spool_with(arg, config, Spool::open)
}

/// [`resolve_spool`], the spool opened by `open` ([`spool_opened`]).
///
/// # Errors
/// As [`resolve_spool`], and `open`'s.
pub(super) fn resolve_spool_with(
    arg: Option<PathBuf>,
    config: &Config,
    open: impl FnOnce(PathBuf) -> Result<Spool, crate::store::StoreError>,
) -> Result<Spool, Failure> {
    let spool = resolve_new_spool_with(arg, config, open)?;
    require_spool(&spool)?;
    Ok(spool)
}

/// A usage error unless something is at `spool`'s path ([`spool_opened`] has refused a path that
/// is not a directory).
///
/// # Errors
/// The path, that there is no spool there, and the command that makes one.
fn require_spool(spool: &Spool) -> Result<(), Failure> {
    match spool.root().metadata() {
        Ok(_) => Ok(()),
        Err(_) => Err(Failure::usage(format!(
            "no spool at {} (nothing is there): check the path (--spool, WARRANT_SPOOL, `spool` in config.toml), \
             or create a spool there with `warrant init {}` (add --agents-group GROUP to share it with agents running \
             as other users)",
            spool.root().display(),
            spool.root().display()
        ))),
    }
}

/// The resolved spool, existing or not (for the commands that create one): `--spool`/`WARRANT_SPOOL`, else `spool` in config.toml, else the default.
///
/// # Errors
/// No spool named, a JetStream store (opened by the caller as a replica), or [`spool_opened`]'s.
pub(super) fn resolve_new_spool(arg: Option<PathBuf>, config: &Config) -> Result<Spool, Failure> {
    resolve_new_spool_with(arg, config, Spool::open)
}

/// [`resolve_new_spool`], the spool opened by `open` ([`spool_opened`]).
fn resolve_new_spool_with(
    arg: Option<PathBuf>,
    config: &Config,
    open: impl FnOnce(PathBuf) -> Result<Spool, crate::store::StoreError>,
) -> Result<Spool, Failure> {
    if arg.is_none()
        && let Some(text) = &config.store
    {
        return match text.parse::<StoreLocation>().map_err(Failure::usage)? {
            StoreLocation::Directory(root) => spool_opened(root, open),
            #[cfg(feature = "jetstream")]
            at @ StoreLocation::JetStream(_) => Err(jetstream_not_yet(&at)),
        };
    }
    let root = arg
        .or_else(|| config.spool.clone())
        .or_else(Spool::default_root)
        .ok_or_else(|| Failure::usage("no spool directory: pass --spool or set WARRANT_SPOOL"))?;
    spool_opened(root, open)
}

/// Loads (creating on first use) the principal's key, telling the user when it was created, and
/// the pinned keys, which must pin that key for the principal's name.
///
/// # Errors
/// Key errors, and a key that is not pinned for this principal, as usage errors.
pub fn load_principal(config: &Config) -> Result<(Principal, PinnedKeys), Failure> {
    load_principal_from(&config::config_dir(), &config.principal_name())
}

/// How many times a passphrase typed on the terminal may be wrong before the command gives up.
const PASSPHRASE_TRIES: usize = 3;

/// [`load_principal`] from the configuration directory `dir`: the key file is opened (asking its
/// passphrase from `WARRANT_PASSPHRASE_FILE` or the terminal when it is protected),
/// never created (`warrant keys init` does that), and must be pinned for `name`.
///
/// # Errors
/// A usage failure (exit 2): no key, no passphrase to be had, a wrong passphrase (three times,
/// on a terminal), an unpinned key.
pub(super) fn load_principal_from(dir: &Path, name: &str) -> Result<(Principal, PinnedKeys), Failure> {
    let path = dir.join(key_files::PRIVATE_KEY_FILE);
    if matches!(std::fs::symlink_metadata(&path), Err(e) if e.kind() == io::ErrorKind::NotFound) {
        return Err(key_files::KeyError::NoKey { dir: dir.to_owned() }.into());
    }
    let source = super::passphrase::passphrase_source();
    let prompt = format!("passphrase for {}: ", path.display());
    // On a terminal a mistyped passphrase is asked again, three tries in all (as ssh does); a
    // passphrase file is read once.
    let mut tries = 0;
    let principal = loop {
        tries += 1;
        match Principal::load_with(&path, name, || super::passphrase::read_passphrase(&source, &prompt, &path)) {
            Err(key_files::KeyError::WrongPassphrase { .. })
                if source == super::passphrase::PassphraseSource::Terminal && tries < PASSPHRASE_TRIES =>
            {
                eprintln!(
                    "wrong passphrase, try again ({} of {PASSPHRASE_TRIES} tries left)",
                    PASSPHRASE_TRIES - tries
                );
            }
            loaded => break loaded?,
        }
    };
    // A signature verifies only under a key pinned for the signing principal; catch a renamed
    // principal or an unpinned own key here rather than at the first signature.
    let pinned = PinnedKeys::load(dir)?;
    match pinned.get(&principal.fingerprint()) {
        Some(pin) if pin.principal == principal.name => Ok((principal, pinned)),
        Some(pin) if pin.speaks_for(&principal.name) => Err(Failure::usage(format!(
            "the principal {:?} was renamed {:?} (`warrant keys rename`); set WARRANT_PRINCIPAL={:?} (or `principal` in config.toml)",
            principal.name, pin.principal, pin.principal
        ))),
        // Re-pinning the key by hand would make every record signed under the old name fail;
        // a rename recorded in the chain keeps them valid.
        Some(pin) => Err(Failure::usage(format!(
            "the key {} is pinned for principal {:?}, not {:?}: if {:?} is your new name, record the rename with `warrant keys rename {:?}` (records signed as {:?} stay valid); otherwise set WARRANT_PRINCIPAL={:?} (or `principal` in config.toml)",
            principal.fingerprint(),
            pin.principal,
            principal.name,
            principal.name,
            principal.name,
            pin.principal,
            pin.principal
        ))),
        None => Err(Failure::usage(format!(
            "the principal key {} is not pinned, so its signatures would not verify; pin it with `warrant keys export | warrant keys pin --principal {:?} -`",
            principal.fingerprint(),
            principal.name
        ))),
    }
}

pub(super) fn load_pinned() -> Result<PinnedKeys, Failure> {
    Ok(PinnedKeys::load(&config::config_dir())?)
}

/// The policy set: built-in classes plus `<config>/policy.toml` and the spool's `policy.toml`.
///
/// # Errors
/// A usage failure naming the file and what is wrong with it.
pub fn load_policies(spool: Option<&Spool>) -> Result<PolicySet, Failure> {
    PolicySet::load(&config::config_dir(), spool.map(Spool::root)).map_err(|e| Failure::usage(e.to_string()))
}

/// Prints `v` as pretty JSON in which every [`crate::protocol::text::is_unsafe`] character inside a
/// string (C1 controls, bidi overrides, zero-width characters, …) is written as a `\uXXXX`
/// escape, like the C0 controls serde_json already escapes: the same JSON value for programs,
/// inert text on a terminal.
pub(super) fn print_json(v: &Value) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    write_json_inert(&mut out, v)?;
    writeln!(out)?;
    out.flush()?;
    Ok(())
}

/// Writes `v` as pretty JSON with every [`crate::protocol::text::is_unsafe`] character escaped (see
/// `print_json`); the text parses back to exactly `v`.
///
/// # Errors
/// The writer's errors.
///
/// ```
/// let v = serde_json::json!({"agent": "a\u{202e}b\u{9b}c\u{1b}"});
/// let mut out = Vec::new();
/// warrant::cli::write_json_inert(&mut out, &v).unwrap();
/// let text = String::from_utf8(out).unwrap();
/// assert!(text.contains(r"a\u202eb\u009bc\u001b"), "{text}");
/// assert_eq!(serde_json::from_str::<serde_json::Value>(&text).unwrap(), v);
/// ```
pub fn write_json_inert<W: io::Write>(out: &mut W, v: &Value) -> io::Result<()> {
    struct Inert<'a>(serde_json::ser::PrettyFormatter<'a>);
    impl serde_json::ser::Formatter for Inert<'_> {
        fn write_string_fragment<W: ?Sized + io::Write>(&mut self, w: &mut W, fragment: &str) -> io::Result<()> {
            let mut start = 0;
            for (i, c) in fragment.char_indices() {
                if crate::protocol::text::is_unsafe(c) {
                    w.write_all(&fragment.as_bytes()[start..i])?;
                    let mut units = [0u16; 2];
                    for unit in c.encode_utf16(&mut units) {
                        write!(w, "\\u{unit:04x}")?;
                    }
                    start = i + c.len_utf8();
                }
            }
            w.write_all(&fragment.as_bytes()[start..])
        }
        fn begin_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
            self.0.begin_array(w)
        }
        fn end_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
            self.0.end_array(w)
        }
        fn begin_array_value<W: ?Sized + io::Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
            self.0.begin_array_value(w, first)
        }
        fn end_array_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
            self.0.end_array_value(w)
        }
        fn begin_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
            self.0.begin_object(w)
        }
        fn end_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
            self.0.end_object(w)
        }
        fn begin_object_key<W: ?Sized + io::Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
            self.0.begin_object_key(w, first)
        }
        fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
            self.0.begin_object_value(w)
        }
        fn end_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
            self.0.end_object_value(w)
        }
    }
    let mut ser = serde_json::Serializer::with_formatter(out, Inert(serde_json::ser::PrettyFormatter::new()));
    // An I/O error keeps its kind (a closed pipe is not a failure: `Failure::closed_pipe`).
    serde::Serialize::serialize(v, &mut ser).map_err(io::Error::from)
}

/// Asks `question` on the terminal; true only for `y` or `yes`.
pub(super) fn confirmed(question: &str) -> Result<bool, Failure> {
    eprint!("{question} [y/N] ");
    std::io::stderr().flush()?;
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer)?;
    Ok(matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes"))
}

/// The JetStream store the command line or `config.toml` names, if any (`--spool` wins).
///
/// # Errors
/// A `store` that is neither a directory nor a valid JetStream URL.
#[cfg(feature = "jetstream")]
pub(super) fn jetstream_store(spool_arg: Option<&PathBuf>, config: &Config) -> Result<Option<StoreLocation>, Failure> {
    match (spool_arg, &config.store) {
        (None, Some(text)) => match text.parse::<StoreLocation>().map_err(Failure::usage)? {
            at @ StoreLocation::JetStream(_) => Ok(Some(at)),
            StoreLocation::Directory(_) => Ok(None),
        },
        _ => Ok(None),
    }
}

/// What a command that does not run over JetStream yet answers (fail closed: the hooks deny, the
/// gateway refuses every call, with this reason).
#[cfg(feature = "jetstream")]
pub(super) fn jetstream_not_yet(at: &StoreLocation) -> Failure {
    Failure::usage(format!(
        "the spool is on JetStream ({at}): the hooks and the MCP gateway need a directory spool in this version; \
         on JetStream, agents publish with `warrant propose --wait` and the principal works on a replica \
         (docs/distributed.md)"
    ))
}
