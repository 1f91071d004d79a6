//! Whether every packet in a spool is this process's user's ([`all_mine`]), remembered between
//! processes: a hook is one process a call, and reading the owner of every packet file (one
//! `stat` each, 25 ms at 10,000 pending packets) on every call of an agent with no publisher yet
//! would cost more than judging the call.
//!
//! The answer is kept in the user's own config directory (`cache/`, mode 0700; the file 0600 and
//! read only when this user owns it), keyed by `packets/`'s device, inode and change time
//! (`ctime`, which no user can set: adding, removing or renaming an entry changes it). An answer
//! is remembered only when `packets/` did not change while its entries were read and last changed
//! at least [`SETTLED`] before: a change within the file system's clock tick may leave `ctime` as
//! it was ("racily clean", as git's index calls it), so a recent one is read again next time.

use std::io;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// How long ago `packets/` must have last changed for its answer to be remembered.
pub(super) const SETTLED: Duration = Duration::from_secs(2);

/// The cache's directory under the config directory.
const CACHE_DIR: &str = "cache";

/// `packets/`'s device, inode and change time (seconds, nanoseconds); `None` when it cannot be
/// read (missing, or not a directory).
type DirStamp = (u64, u64, i64, i64);

fn dir_stamp(dir: &Path) -> Option<DirStamp> {
    use std::os::unix::fs::MetadataExt as _;
    let m = std::fs::symlink_metadata(dir).ok().filter(std::fs::Metadata::is_dir)?;
    Some((m.dev(), m.ino(), m.ctime(), m.ctime_nsec()))
}

/// Whether every entry of `dir` is owned by this process's user (true when it is empty or
/// missing; false when it cannot be read), from the cache in `config_dir` when `dir` has not
/// changed since the answer was remembered (see the module docs), else by reading the owner of
/// each entry — a directory's mode says who may add an entry now, not who added the ones there —
/// and remembering the answer when `dir` has settled ([`SETTLED`], `settled` in tests).
/// Failing to write the cache (a read-only config directory) costs only the next call's time.
pub(super) fn all_mine(dir: &Path, config_dir: &Path, settled: Duration) -> bool {
    let me = rustix::process::geteuid().as_raw();
    let Some(before) = dir_stamp(dir) else {
        return read_all_mine(dir, me);
    };
    let (dev, ino, secs, nanos) = before;
    let cache = config_dir.join(CACHE_DIR).join(format!("packets-owners-{dev}-{ino}"));
    let key = format!("v1 {secs} {nanos} {me}");
    if let Ok(Some(text)) = warrant_store::config::read_text_file_owned(&cache, 256, Some(me))
        && let Some(answer) = text.trim_end().strip_prefix(key.as_str())
    {
        match answer {
            " 1" => return true,
            " 0" => return false,
            _ => {}
        }
    }
    let mine = read_all_mine(dir, me);
    let changed_at = SystemTime::UNIX_EPOCH
        + Duration::from_secs(u64::try_from(secs).unwrap_or(u64::MAX))
        + Duration::from_nanos(u64::try_from(nanos).unwrap_or(0));
    let long_ago = SystemTime::now().duration_since(changed_at).is_ok_and(|d| d >= settled);
    if long_ago && dir_stamp(dir) == Some(before) {
        let _ = remember(&cache, &format!("{key} {}\n", u8::from(mine)));
    }
    mine
}

fn remember(cache: &Path, line: &str) -> io::Result<()> {
    if let Some(parent) = cache.parent() {
        use std::os::unix::fs::DirBuilderExt as _;
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(parent)?;
    }
    warrant_store::atomic::replace_unsynced(cache, line.as_bytes(), 0o600)
}

/// Reads the owner of every entry of `dir` (see [`all_mine`]).
fn read_all_mine(dir: &Path, me: u32) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    match std::fs::read_dir(dir) {
        Ok(entries) => entries.into_iter().all(|e| e.and_then(|e| e.metadata()).is_ok_and(|m| m.uid() == me)),
        Err(e) => e.kind() == io::ErrorKind::NotFound,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache_files(config: &Path) -> Vec<std::path::PathBuf> {
        std::fs::read_dir(config.join(CACHE_DIR))
            .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default()
    }

    /// The answer is remembered once `packets/` settled, read back while it stays as it was
    /// (the cache, not the files, answers: a remembered "no" is returned for files that are all
    /// this user's), and read again from the files once an entry is added.
    #[test]
    fn the_owners_answer_is_remembered_until_the_directory_changes() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let (packets, config) = (tmp.path().join("packets"), tmp.path().join("config"));
        std::fs::create_dir_all(&packets).expect("packets");
        std::fs::write(packets.join("a.json"), "{}").expect("write");
        assert!(all_mine(&packets, &config, Duration::from_secs(3600)), "every file is this user's");
        assert!(cache_files(&config).is_empty(), "a directory changed just now is not remembered");
        assert!(all_mine(&packets, &config, Duration::ZERO));
        let files = cache_files(&config);
        assert_eq!(files.len(), 1, "remembered once settled");
        let text = std::fs::read_to_string(&files[0]).expect("cache");
        assert!(text.ends_with(" 1\n"), "{text}");
        // A remembered "no" for the same directory state is taken as it is: the files are not read.
        std::fs::write(&files[0], text.replace(" 1\n", " 0\n")).expect("rewrite");
        assert!(!all_mine(&packets, &config, Duration::ZERO), "the cache answers while packets/ is unchanged");
        // A new entry changes packets/'s ctime: the files are read again.
        std::fs::write(packets.join("b.json"), "{}").expect("write");
        assert!(all_mine(&packets, &config, Duration::ZERO), "read again after a change");
        assert!(std::fs::read_to_string(&files[0]).expect("cache").ends_with(" 1\n"));
    }

    /// A file owned by another user makes the answer "no", remembered as such; a cache file this
    /// user does not own is not read.
    #[test]
    fn another_users_packet_or_cache_is_not_taken_for_this_users() {
        let me = rustix::process::geteuid().as_raw();
        if me != 0 {
            // Giving a file to another user needs root (CI runs as root); the check above holds
            // the cache's own logic everywhere.
            eprintln!("not root: files owned by another user cannot be made here; skipped");
            return;
        }
        let tmp = tempfile::tempdir().expect("tempdir");
        let (packets, config) = (tmp.path().join("packets"), tmp.path().join("config"));
        std::fs::create_dir_all(&packets).expect("packets");
        let theirs = packets.join("theirs.json");
        std::fs::write(&theirs, "{}").expect("write");
        std::os::unix::fs::chown(&theirs, Some(4242), Some(4242)).expect("chown");
        assert!(!all_mine(&packets, &config, Duration::ZERO));
        let files = cache_files(&config);
        assert!(std::fs::read_to_string(&files[0]).expect("cache").ends_with(" 0\n"));
        std::fs::remove_file(&theirs).expect("remove");
        std::fs::write(packets.join("mine.json"), "{}").expect("write");
        // A cache file of another user's claiming "yes" for this state is passed over.
        let stamp = dir_stamp(&packets).expect("stamp");
        let forged = config.join(CACHE_DIR).join(format!("packets-owners-{}-{}", stamp.0, stamp.1));
        std::fs::write(&forged, format!("v1 {} {} {me} 0\n", stamp.2, stamp.3)).expect("forge");
        std::os::unix::fs::chown(&forged, Some(4242), Some(4242)).expect("chown");
        assert!(all_mine(&packets, &config, Duration::ZERO), "another user's cache file is not read");
    }
}
