//! Durable file writes: a file appears whole or not at all, and survives a crash once written.
//!
//! Each write goes to a temporary dot-file in the target's directory, created with its final
//! mode, is synced (`fsync`), renamed into place, and the directory is synced so the rename
//! itself survives a crash. [`write_atomic`] replaces an existing file; [`write_new`] never
//! does (a no-clobber link, so two writers racing for one name cannot both succeed).

use std::fs;
use std::io::{self, Write as _};
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

/// The temporary file for `path`: a dot-file in its directory with `mode`, holding `bytes`,
/// synced.
fn staged(path: &Path, bytes: &[u8], mode: u32) -> io::Result<tempfile::NamedTempFile> {
    let tmp = unsynced(path, bytes, mode)?;
    tmp.as_file().sync_all()?;
    Ok(tmp)
}

/// The temporary file for `path`, not synced.
fn unsynced(path: &Path, bytes: &[u8], mode: u32) -> io::Result<tempfile::NamedTempFile> {
    let mut tmp = tempfile::Builder::new()
        .prefix(".warrant.")
        .suffix(".tmp")
        .permissions(fs::Permissions::from_mode(mode))
        .tempfile_in(directory(path))?;
    tmp.write_all(bytes)?;
    Ok(tmp)
}

/// Writes `bytes` to `path` with mode `mode`, replacing any file there whole (a temporary file
/// renamed into place), but not durably: nothing is synced. For caches a signed digest binds
/// (the principal's fold, the agents' snapshot): one lost or half-written by a crash only sends
/// its next reader to the chain, and a decision does not wait for it to reach the disk.
///
/// # Errors
/// I/O errors; on one, `path` is unchanged.
pub fn replace_unsynced(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    unsynced(path, bytes, mode)?.persist(path).map_err(|e| e.error)?;
    Ok(())
}

fn directory(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// Writes `bytes` to `path` with mode `mode` (e.g. `0o644`), replacing any file there, durably:
/// staged in a synced temporary file, renamed into place, the directory synced.
///
/// # Errors
/// I/O errors; on one, `path` is unchanged.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    staged(path, bytes, mode)?.persist(path).map_err(|e| e.error)?;
    fs::File::open(directory(path))?.sync_all()
}

/// [`write_atomic`], but never replacing a file: `ErrorKind::AlreadyExists` when `path` exists.
///
/// # Errors
/// I/O errors, and `AlreadyExists`; on one, `path` is unchanged.
pub fn write_new(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    staged(path, bytes, mode)?.persist_noclobber(path).map_err(|e| e.error)?;
    fs::File::open(directory(path))?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_replaces_or_refuses_to_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("a.json");
        write_new(&path, b"one", 0o600).expect("new");
        assert_eq!(fs::read(&path).expect("read"), b"one");
        assert_eq!(fs::metadata(&path).expect("meta").permissions().mode() & 0o777, 0o600);
        let e = write_new(&path, b"two", 0o600).expect_err("exists");
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read(&path).expect("read"), b"one", "unchanged");
        write_atomic(&path, b"three", 0o644).expect("replace");
        assert_eq!(fs::read(&path).expect("read"), b"three");
        assert_eq!(fs::metadata(&path).expect("meta").permissions().mode() & 0o777, 0o644);
        let names: Vec<_> = fs::read_dir(dir.path()).expect("dir").map(|d| d.expect("entry").file_name()).collect();
        assert_eq!(names, ["a.json"], "no temporary file is left");
    }
}
