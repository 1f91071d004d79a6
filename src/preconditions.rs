//! Observing the world for two-phase execution (lodestar-and-tiers.md §A3): the checks warrant
//! itself can evaluate for a contract's preconditions. This is the I/O edge; comparing what was
//! recorded at approval with what is observed now is the pure [`crate::ladder::revalidate`].
//!
//! | `check_id` | `parameters` | observed value |
//! | --- | --- | --- |
//! | `file.sha256` | `{"path": "/abs/file"}` | `"sha256:<hex>"` of the contents, `null` when absent |
//! | `file.exists` | `{"path": "/abs/path"}` | `true` / `false` |
//! | `git.head_unchanged` (also `git.head`) | `{"repo": "/abs/repo"}` | the commit `HEAD` resolves to |
//!
//! Paths must be absolute (a precondition must not depend on the working directory). Any other
//! `check_id` cannot be observed, which fails the precondition closed.

use crate::ladder::{ActionPrecondition, Revalidation, revalidate};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::{Path, PathBuf};

/// The `check_id`s [`observe`] knows.
pub const CHECKS: [&str; 4] = ["file.sha256", "file.exists", "git.head_unchanged", "git.head"];

fn abs_path(parameters: &Value, key: &str) -> Result<PathBuf, String> {
    let p = parameters.get(key).and_then(Value::as_str).ok_or_else(|| format!("parameters.{key} must be a string"))?;
    let path = PathBuf::from(p);
    if !path.is_absolute() {
        return Err(format!("parameters.{key} must be an absolute path, not {p:?}"));
    }
    Ok(path)
}

/// Observes one check now.
///
/// # Errors
/// A sentence for an unknown check, bad parameters, or an I/O error other than "not found".
pub fn observe(check_id: &str, parameters: &Value) -> Result<Value, String> {
    match check_id {
        "file.sha256" => {
            let path = abs_path(parameters, "path")?;
            let Some(mut file) = open_regular(&path, MAX_HASHED_BYTES)? else { return Ok(Value::Null) };
            let mut hasher = Sha256::new();
            let mut buf = vec![0u8; 1 << 16];
            loop {
                let n = file.read(&mut buf).map_err(|e| format!("{}: {e}", path.display()))?;
                if n == 0 {
                    break;
                }
                hasher.update(&buf[..n]);
            }
            Ok(json!(format!("sha256:{}", crate::canonical::hex(&hasher.finalize()))))
        }
        "file.exists" => Ok(json!(abs_path(parameters, "path")?.exists())),
        "git.head_unchanged" | "git.head" => git_head(&abs_path(parameters, "repo")?).map(Value::String),
        other => Err(format!("warrant cannot observe {other:?} (it knows {})", CHECKS.join(", "))),
    }
}

/// Largest file `file.sha256` hashes (64 MiB): a precondition must not stall the console.
pub const MAX_HASHED_BYTES: u64 = 64 << 20;

/// Opens `path` for reading only if it is a regular file of at most `limit` bytes (a FIFO, a
/// device or a directory named by a packet could otherwise hang or flood the reader). The open
/// does not block on a FIFO. `Ok(None)` when it does not exist.
fn open_regular(path: &Path, limit: u64) -> Result<Option<std::fs::File>, String> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = match std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let meta = file.metadata().map_err(|e| format!("{}: {e}", path.display()))?;
    if !meta.is_file() {
        return Err(format!("{} is not a regular file", path.display()));
    }
    if meta.len() > limit {
        return Err(format!("{} is over {limit} bytes", path.display()));
    }
    Ok(Some(file))
}

/// The commit `HEAD` of the repository at `repo` resolves to, read from `.git` directly (a
/// detached hash, a loose ref, or `packed-refs`).
fn git_head(repo: &Path) -> Result<String, String> {
    let git = repo.join(".git");
    let read = |p: &Path| -> Result<String, String> {
        let mut text = String::new();
        open_regular(p, 1 << 20)?
            .ok_or_else(|| format!("{}: not found", p.display()))?
            .read_to_string(&mut text)
            .map_err(|e| format!("{}: {e}", p.display()))?;
        Ok(text)
    };
    let head = read(&git.join("HEAD"))?;
    let head = head.trim();
    let Some(reference) = head.strip_prefix("ref: ") else { return Ok(head.to_owned()) };
    if reference.split('/').any(|c| c == ".." || c.is_empty()) {
        return Err(format!("unsafe ref {reference:?}"));
    }
    if let Ok(hash) = read(&git.join(reference)) {
        return Ok(hash.trim().to_owned());
    }
    let packed = read(&git.join("packed-refs"))?;
    packed
        .lines()
        .filter_map(|l| l.split_once(' '))
        .find(|(_, name)| *name == reference)
        .map(|(hash, _)| hash.to_owned())
        .ok_or_else(|| format!("{reference} does not resolve"))
}

/// Re-checks preconditions against the world now ([`crate::ladder::revalidate`] with
/// [`observe`]): the execution-time check of an approved action.
#[must_use]
pub fn recheck(preconditions: &[ActionPrecondition]) -> Revalidation {
    revalidate(preconditions, |p| observe(&p.check_id, &p.parameters))
}

/// The review-time check of a pending packet: a precondition the agent gave a value for must hold
/// now; one without a value will be recorded at approval, so it is shown with what is observed
/// now as its expected value (it fails only when it cannot be observed).
#[must_use]
pub fn recheck_pending(preconditions: &[ActionPrecondition]) -> Revalidation {
    let filled: Vec<ActionPrecondition> = preconditions
        .iter()
        .map(|p| {
            let mut p = p.clone();
            if p.expected_at_approval.is_null()
                && let Ok(now) = observe(&p.check_id, &p.parameters)
            {
                p.expected_at_approval = now;
            }
            p
        })
        .collect();
    recheck(&filled)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_and_git_heads_are_observed_and_unknown_checks_fail() {
        let dir = tempfile::tempdir().expect("tempdir");
        let f = dir.path().join("a.txt");
        let params = json!({"path": f.to_str()});
        assert_eq!(observe("file.sha256", &params), Ok(Value::Null));
        assert_eq!(observe("file.exists", &params), Ok(json!(false)));
        std::fs::write(&f, b"abc").expect("write");
        assert_eq!(
            observe("file.sha256", &params),
            Ok(json!("sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"))
        );
        assert_eq!(observe("file.exists", &params), Ok(json!(true)));
        assert!(observe("file.exists", &json!({"path": "relative/x"})).is_err());
        assert!(observe("shell.exec", &json!({})).is_err());
        let git = dir.path().join(".git/refs/heads");
        std::fs::create_dir_all(&git).expect("mkdir");
        std::fs::write(dir.path().join(".git/HEAD"), "ref: refs/heads/main\n").expect("write");
        std::fs::write(git.join("main"), "1111111111111111111111111111111111111111\n").expect("write");
        let repo = json!({"repo": dir.path().to_str()});
        assert_eq!(observe("git.head_unchanged", &repo), Ok(json!("1111111111111111111111111111111111111111")));
        std::fs::remove_file(git.join("main")).expect("rm");
        std::fs::write(dir.path().join(".git/packed-refs"), "2222 refs/heads/main\n").expect("write");
        assert_eq!(observe("git.head", &repo), Ok(json!("2222")));
        // A FIFO or a directory is refused at once, never read (a named pipe would hang).
        let fifo = dir.path().join("pipe");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().is_ok_and(|s| s.success());
        assert!(made, "mkfifo");
        let r = observe("file.sha256", &json!({"path": fifo.to_str()}));
        assert!(r.as_ref().is_err_and(|e| e.contains("not a regular file")), "{r:?}");
        let r = observe("file.sha256", &json!({"path": dir.path().to_str()}));
        assert!(r.is_err(), "a directory: {r:?}");
    }
}
