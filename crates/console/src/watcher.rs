//! The spool watcher: inotify (through notify). A publication under `packets/` or `receipts/`, a
//! change on the spool's root or on `chain.jsonl` asks for a rescan, and the names the events
//! touched are kept for it: a scan for those names looks at those files alone ([`recheck_for`]).
//! The kernel says when its queue overflowed, and the next scan then checks every file; the
//! periodic rescan lists the directories, so an event lost any other way would cost only latency
//! until then.
//!
//! No debouncer: notify's inotify watcher blocks in the kernel until an event comes, so an idle
//! console wakes for nothing, and a packet's rename asks for a scan at once. Bursts are merged by
//! the console (one scan runs at a time, and one more follows when events came meanwhile), not
//! by a timer. Events on temporary dot-files (an agent's write before its rename) and reads are
//! ignored: the scanner skips those files anyway.

use super::app::Action;
use notify::event::{AccessKind, AccessMode, EventKind, ModifyKind};
use notify::{RecommendedWatcher, RecursiveMode, Watcher as _};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::sync::mpsc::UnboundedSender;
use warrant_store::spool::{Recheck, Spool};

/// Owns the watcher; dropping it stops watching.
pub struct SpoolWatcher {
    _watcher: RecommendedWatcher,
}

/// What an event asks for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Wants {
    /// A scan of the directories.
    pub files: bool,
    /// A verification of the chain.
    pub chain: bool,
    /// The scan must `lstat` every file ([`Recheck::Every`]): a file may have changed in place
    /// (written, truncated, its mode changed) under the inode it was parsed from, or events
    /// were lost.
    pub every: bool,
}

/// What `event` asks for; `chain_name` is `chain.jsonl`'s file name.
pub(crate) fn wants(event: &notify::Event, chain_name: Option<&std::ffi::OsStr>) -> Wants {
    if event.need_rescan() {
        return Wants { files: true, chain: true, every: true };
    }
    let in_place = match event.kind {
        // Reads change nothing; a writer closing its file is the end of an in-place write.
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => return Wants::default(),
        // New names, renames into place and removals: the listing's inodes show them.
        EventKind::Create(_) | EventKind::Remove(_) | EventKind::Modify(ModifyKind::Name(_)) => false,
        _ => true,
    };
    let mut w = Wants::default();
    for p in &event.paths {
        let name = p.file_name();
        if name.is_some() && name == chain_name {
            w.chain = true;
        } else if !is_work_in_progress(p) {
            w.files = true;
            w.every |= in_place;
        }
    }
    w
}

/// Most names kept for the next scan's recheck ([`SpoolWatcher::start`]); past this, the next
/// scan checks every file instead.
const MAX_TOUCHED: usize = 4096;

/// The file names (not dot-files, not `chain.jsonl`) an event touched in `packets/` or
/// `receipts/`: what the next scan must `lstat` even if the listing shows a known inode.
pub(crate) fn touched_names(event: &notify::Event, chain_name: Option<&std::ffi::OsStr>) -> Vec<String> {
    event
        .paths
        .iter()
        .filter(|p| !is_work_in_progress(p))
        .filter_map(|p| p.file_name())
        .filter(|n| Some(*n) != chain_name)
        .map(|n| n.to_string_lossy().into_owned())
        .collect()
}

/// How a scan for the names the watcher reported (`touched`) looks at the spool, when it need
/// not check every file: only at those names ([`Recheck::Touched`]), or by listing the
/// directories ([`Recheck::Renamed`]) when no name was reported (the periodic rescan, a change
/// of the chain) or when `packets/` or `receipts/` themselves were touched (replaced or removed,
/// their files are known only by listing them again).
pub(crate) fn recheck_for(spool: &Spool, touched: &[String]) -> Recheck {
    let dirs = [spool.packets_dir(), spool.receipts_dir()];
    let is_dir = |name: &String| dirs.iter().any(|d| d.file_name() == Some(std::ffi::OsStr::new(name)));
    if touched.is_empty() || touched.iter().any(is_dir) { Recheck::Renamed } else { Recheck::Touched }
}

/// A temporary dot-file: an agent's (or warrant's own) write before the rename that publishes it.
fn is_work_in_progress(path: &Path) -> bool {
    path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with('.'))
}

impl SpoolWatcher {
    /// Watches the spool root (for `chain.jsonl`), `packets/` and `receipts/`;
    ///
    /// # Errors
    /// The watcher could not be created (e.g. inotify limits).
    /// `recheck_every` is set when an event asks the next scan to `lstat` every file; `touched`
    /// collects the names events touched, for the next scan to `lstat` (at most
    /// [`MAX_TOUCHED`]; beyond that `recheck_every` is set instead).
    pub fn start(
        spool: &Spool,
        tx: UnboundedSender<Action>,
        recheck_every: Arc<AtomicBool>,
        touched: Arc<std::sync::Mutex<Vec<String>>>,
    ) -> notify::Result<Self> {
        let chain_name = spool.chain_path().file_name().map(std::ffi::OsStr::to_owned);
        let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
            let mut w = match &res {
                Ok(event) => wants(event, chain_name.as_deref()),
                Err(_) => Wants { files: true, chain: true, every: true },
            };
            if w.files
                && let Ok(event) = &res
            {
                match touched.lock() {
                    Ok(mut names) if names.len() < MAX_TOUCHED => {
                        names.extend(touched_names(event, chain_name.as_deref()));
                    }
                    _ => w.every = true,
                }
            }
            if w.every {
                recheck_every.store(true, Ordering::SeqCst);
            }
            if w.files || w.chain {
                // The handler runs on notify's thread: a synchronous send, never an await.
                let _ = tx.send(Action::SpoolChanged { chain: w.chain });
            }
        })?;
        watcher.watch(spool.root(), RecursiveMode::NonRecursive)?;
        watcher.watch(&spool.packets_dir(), RecursiveMode::NonRecursive)?;
        watcher.watch(&spool.receipts_dir(), RecursiveMode::NonRecursive)?;
        // A grant's use (a call that ran on it) leaves the Pending list: `uses/` is watched too
        // (it may be missing in an older spool; the periodic rescan reads it then).
        if spool.uses_dir().is_dir() {
            watcher.watch(&spool.uses_dir(), RecursiveMode::NonRecursive)?;
        }
        Ok(Self { _watcher: watcher })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use notify::event::{CreateKind, ModifyKind, RenameMode};
    use std::ffi::OsStr;
    use std::path::PathBuf;

    fn event(kind: EventKind, paths: &[&str]) -> notify::Event {
        let mut e = notify::Event::new(kind);
        for p in paths {
            e = e.add_path(PathBuf::from(p));
        }
        e
    }

    #[test]
    fn a_scan_for_named_files_looks_only_at_them_unless_a_directory_was_touched() {
        let spool = Spool::new("/s");
        let names = |n: &[&str]| n.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(recheck_for(&spool, &names(&["p-1.json", "r-1.json"])), Recheck::Touched);
        assert_eq!(recheck_for(&spool, &names(&[])), Recheck::Renamed);
        assert_eq!(recheck_for(&spool, &names(&["p-1.json", "packets"])), Recheck::Renamed);
        assert_eq!(recheck_for(&spool, &names(&["receipts"])), Recheck::Renamed);
        assert_eq!(recheck_for(&spool, &names(&["decisions", "checkpoint.json"])), Recheck::Touched);
    }

    #[test]
    fn renames_into_place_ask_for_a_scan_and_temporary_files_do_not() {
        let chain = Some(OsStr::new("chain.jsonl"));
        let listing = Wants { files: true, chain: false, every: false };
        let every = Wants { files: true, chain: false, every: true };
        let rename = EventKind::Modify(ModifyKind::Name(RenameMode::To));
        assert_eq!(wants(&event(rename, &["/s/packets/p-1.json"]), chain), listing);
        let both = EventKind::Modify(ModifyKind::Name(RenameMode::Both));
        assert_eq!(wants(&event(both, &["/s/packets/.p-1.tmp", "/s/packets/p-1.json"]), chain), listing);
        let create = EventKind::Create(CreateKind::File);
        assert_eq!(wants(&event(create, &["/s/packets/.p-1.tmp"]), chain), Wants::default());
        let removed = EventKind::Remove(notify::event::RemoveKind::File);
        assert_eq!(wants(&event(removed, &["/s/packets/p-1.json"]), chain), listing);
        let data = EventKind::Modify(ModifyKind::Data(notify::event::DataChange::Any));
        assert_eq!(wants(&event(data, &["/s/packets/.p-1.tmp"]), chain), Wants::default());
        assert_eq!(wants(&event(data, &["/s/chain.jsonl"]), chain), Wants { chain: true, ..Wants::default() });
        let read = EventKind::Access(AccessKind::Open(AccessMode::Any));
        assert_eq!(wants(&event(read, &["/s/packets/p-1.json"]), chain), Wants::default());
        // A packet written in place keeps its inode: every file is checked.
        assert_eq!(wants(&event(data, &["/s/packets/p-1.json"]), chain), every);
        let closed = EventKind::Access(AccessKind::Close(AccessMode::Write));
        assert_eq!(wants(&event(closed, &["/s/packets/p-1.json"]), chain), every);
        // The names a scan must look at again, whatever inode the listing shows.
        assert_eq!(touched_names(&event(both, &["/s/packets/.p-1.tmp", "/s/packets/p-1.json"]), chain), ["p-1.json"]);
        assert!(touched_names(&event(data, &["/s/chain.jsonl"]), chain).is_empty());
        // The kernel's queue overflowed: everything, at once.
        let overflow = notify::Event::new(EventKind::Other).set_flag(notify::event::Flag::Rescan);
        assert_eq!(wants(&overflow, chain), Wants { files: true, chain: true, every: true });
    }
}
