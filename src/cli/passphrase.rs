//! The passphrase of a protected principal key: from `WARRANT_PASSPHRASE_FILE` or asked on the
//! terminal. The store opens the key file (`warrant_store::key_files`); asking a person is the
//! command line's.

use crate::store::key_files::KeyError;
use std::io;
use std::path::{Path, PathBuf};

/// Where a passphrase comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PassphraseSource {
    /// `WARRANT_PASSPHRASE_FILE`: the first line of this file.
    File(PathBuf),
    /// Asked on the terminal (`/dev/tty`, without echo).
    Terminal,
    /// Neither: a protected key cannot be opened.
    Unavailable,
}
/// The passphrase source of this process: `WARRANT_PASSPHRASE_FILE` when set, else the terminal
/// when standard input is one, else none.
#[must_use]
pub fn passphrase_source() -> PassphraseSource {
    use std::io::IsTerminal as _;
    match std::env::var_os("WARRANT_PASSPHRASE_FILE").filter(|v| !v.is_empty()) {
        Some(f) => PassphraseSource::File(PathBuf::from(f)),
        None if io::stdin().is_terminal() => PassphraseSource::Terminal,
        None => PassphraseSource::Unavailable,
    }
}
/// A passphrase from `source`, asking with `prompt` on the terminal. `key` names the key file in
/// errors.
///
/// # Errors
/// [`KeyError::NoPassphrase`] without a source; I/O errors of the file or the terminal; an empty
/// passphrase.
pub fn read_passphrase(
    source: &PassphraseSource,
    prompt: &str,
    key: &Path,
) -> Result<age::secrecy::SecretString, KeyError> {
    let text = match source {
        PassphraseSource::File(f) => {
            let text = crate::store::config::read_text_file(f, 64 << 10)
                .map_err(|e| KeyError::PassphraseFile { path: f.clone(), message: e.to_string() })?;
            zeroize::Zeroizing::new(text.lines().next().unwrap_or_default().to_owned())
        }
        PassphraseSource::Terminal => zeroize::Zeroizing::new(
            rpassword::prompt_password(prompt)
                .map_err(|source| KeyError::Io { path: PathBuf::from("/dev/tty"), source })?,
        ),
        PassphraseSource::Unavailable => return Err(KeyError::NoPassphrase { path: key.to_owned() }),
    };
    if text.is_empty() {
        return Err(KeyError::Invalid { path: key.to_owned(), message: "the passphrase is empty".into() });
    }
    Ok(age::secrecy::SecretString::from(text.as_str().to_owned()))
}
