//! The spool watcher: inotify, through the `inotify` crate, on a thread of its own. A
//! publication under `packets/` or `receipts/`, a change on the spool's root or on `chain.jsonl`
//! asks for a rescan, and the names the events touched are kept for it: a scan for those names
//! looks at those files alone ([`recheck_for`]). The kernel says when its queue overflowed, and
//! the next scan then checks every file; the periodic rescan lists the directories, so an event
//! lost any other way would cost only latency until then.
//!
//! The watch asks the kernel only for what changes a file (created, written, closed after a
//! write, its attributes changed, moved, deleted): not for opens. notify's inotify watcher asks
//! for `IN_OPEN` as well and has no setting to leave it out, so each file the console read (all
//! 10,000 packets of its first scan, and every packet after) was one more event for the kernel to
//! queue and for notify's thread to read, map and drop (`docs/performance.md`, The console's
//! start-up).
//!
//! No debouncer: the thread blocks in the kernel until events come, so an idle console wakes for
//! nothing, and a packet's rename asks for a scan at once. The events of one read are merged into
//! one request, and bursts are merged by the console (one scan runs at a time, and one more
//! follows when events came meanwhile), not by a timer. Events on temporary dot-files (an agent's
//! write before its rename) are ignored: the scanner skips those files anyway.

use super::app::Action;
use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask, Watches};
use std::ffi::{OsStr, OsString};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::sync::mpsc::UnboundedSender;
use warrant_store::spool::{Recheck, Spool};

/// What the watch asks the kernel for: every change to a name or a file's contents or
/// attributes, and the watched directory itself deleted or moved. Not `IN_OPEN`, `IN_ACCESS` or
/// `IN_CLOSE_NOWRITE`: reading a file changes nothing.
const MASK: WatchMask = WatchMask::CREATE
    .union(WatchMask::DELETE)
    .union(WatchMask::MODIFY)
    .union(WatchMask::ATTRIB)
    .union(WatchMask::CLOSE_WRITE)
    .union(WatchMask::MOVED_FROM)
    .union(WatchMask::MOVED_TO)
    .union(WatchMask::DELETE_SELF)
    .union(WatchMask::MOVE_SELF)
    .union(WatchMask::ONLYDIR);

/// Owns the watcher's thread; dropping it removes the watches, which wakes the thread (the
/// kernel queues `IN_IGNORED` for each), and the thread ends.
pub struct SpoolWatcher {
    watches: Watches,
    descriptors: Vec<WatchDescriptor>,
    stop: Arc<AtomicBool>,
}

impl Drop for SpoolWatcher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for wd in self.descriptors.drain(..) {
            let _ = self.watches.remove(wd);
        }
    }
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

impl Wants {
    fn merge(&mut self, other: Self) {
        self.files |= other.files;
        self.chain |= other.chain;
        self.every |= other.every;
    }
}

/// What an event with `mask` on `name` asks for: `name` is the event's file name in the watched
/// directory, or the watched directory's own name for an event on it (deleted, moved);
/// `chain_name` is `chain.jsonl`'s file name.
pub(crate) fn wants(mask: EventMask, name: &OsStr, chain_name: Option<&OsStr>) -> Wants {
    if mask.contains(EventMask::Q_OVERFLOW) {
        return Wants { files: true, chain: true, every: true };
    }
    if mask.contains(EventMask::IGNORED) {
        // A watch removed: by the kernel after the directory's own deletion or move (that event
        // came first), or by `SpoolWatcher`'s drop.
        return Wants::default();
    }
    // New names, renames into place and removals: the listing's inodes show them. A write, a
    // writer closing its file or a change of mode happens in place, under the same inode.
    let listing = EventMask::CREATE
        | EventMask::DELETE
        | EventMask::MOVED_FROM
        | EventMask::MOVED_TO
        | EventMask::DELETE_SELF
        | EventMask::MOVE_SELF;
    let in_place = !listing.intersects(mask);
    if Some(name) == chain_name {
        Wants { chain: true, ..Wants::default() }
    } else if is_work_in_progress(name) {
        Wants::default()
    } else {
        Wants { files: true, every: in_place, chain: false }
    }
}

/// Most names kept for the next scan's recheck ([`SpoolWatcher::start`]); past this, the next
/// scan checks every file instead.
const MAX_TOUCHED: usize = 4096;

/// The file name an event touched in `packets/` or `receipts/` (not a dot-file, not
/// `chain.jsonl`): what the next scan must `lstat` even if the listing shows a known inode.
pub(crate) fn touched_name(name: &OsStr, chain_name: Option<&OsStr>) -> Option<String> {
    (!is_work_in_progress(name) && Some(name) != chain_name).then(|| name.to_string_lossy().into_owned())
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
fn is_work_in_progress(name: &OsStr) -> bool {
    name.as_encoded_bytes().first() == Some(&b'.')
}

impl SpoolWatcher {
    /// Watches the spool root (for `chain.jsonl`), `packets/`, `receipts/` and, when it exists,
    /// `uses/`, on a thread named `spool-watcher`.
    ///
    /// `recheck_every` is set when an event asks the next scan to `lstat` every file; `touched`
    /// collects the names events touched, for the next scan to `lstat` (at most
    /// [`MAX_TOUCHED`]; beyond that `recheck_every` is set instead). Each read of the kernel's
    /// queue sends at most one [`Action::SpoolChanged`].
    ///
    /// # Errors
    /// inotify could not be initialised (the per-user instance limit), a directory could not be
    /// watched (missing, the per-user watch limit), or the thread could not be started.
    pub fn start(
        spool: &Spool,
        tx: UnboundedSender<Action>,
        recheck_every: Arc<AtomicBool>,
        touched: Arc<std::sync::Mutex<Vec<String>>>,
    ) -> std::io::Result<Self> {
        let chain_name = spool.chain_path().file_name().map(OsStr::to_owned);
        let mut inotify = Inotify::init()?;
        let mut dirs = vec![spool.root().to_path_buf(), spool.packets_dir(), spool.receipts_dir()];
        // A grant's use (a call that ran on it) leaves the Pending list: `uses/` is watched too
        // (it may be missing in an older spool; the periodic rescan reads it then).
        if spool.uses_dir().is_dir() {
            dirs.push(spool.uses_dir());
        }
        let mut watched: Vec<(WatchDescriptor, OsString)> = Vec::with_capacity(dirs.len());
        for dir in &dirs {
            let wd = inotify.watches().add(dir, MASK)?;
            watched.push((wd, dir.file_name().map(OsStr::to_owned).unwrap_or_default()));
        }
        let watcher = Self {
            watches: inotify.watches(),
            descriptors: watched.iter().map(|(wd, _)| wd.clone()).collect(),
            stop: Arc::new(AtomicBool::new(false)),
        };
        let stop = Arc::clone(&watcher.stop);
        std::thread::Builder::new().name("spool-watcher".into()).spawn(move || {
            // Room for many events per read (each is 16 bytes and its name).
            let mut buffer = vec![0_u8; 64 * 1024];
            loop {
                let events = match inotify.read_events_blocking(&mut buffer) {
                    Ok(events) => events,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        // Nothing more will come: the periodic rescan is all that is left.
                        tracing::warn!(error = %e, "spool watcher stopped");
                        recheck_every.store(true, Ordering::SeqCst);
                        let _ = tx.send(Action::SpoolChanged { chain: true });
                        return;
                    }
                };
                if stop.load(Ordering::SeqCst) {
                    return;
                }
                let mut w = Wants::default();
                let mut names = Vec::new();
                for event in events {
                    let dir_name = watched.iter().find(|(wd, _)| *wd == event.wd).map(|(_, n)| n.as_os_str());
                    let Some(name) = event.name.or(dir_name) else {
                        // An event on no watch of ours (an overflow has none): ask for it all.
                        w.merge(wants(event.mask, OsStr::new(""), None));
                        continue;
                    };
                    let one = wants(event.mask, name, chain_name.as_deref());
                    if one.files {
                        names.extend(touched_name(name, chain_name.as_deref()));
                    }
                    w.merge(one);
                }
                if w.files {
                    match touched.lock() {
                        Ok(mut known) if known.len() + names.len() <= MAX_TOUCHED => known.extend(names),
                        _ => w.every = true,
                    }
                }
                if w.every {
                    recheck_every.store(true, Ordering::SeqCst);
                }
                if (w.files || w.chain) && tx.send(Action::SpoolChanged { chain: w.chain }).is_err() {
                    // The console is gone.
                    return;
                }
            }
        })?;
        Ok(watcher)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let name = OsStr::new;
        let listing = Wants { files: true, chain: false, every: false };
        let every = Wants { files: true, chain: false, every: true };
        assert_eq!(wants(EventMask::MOVED_TO, name("p-1.json"), chain), listing);
        assert_eq!(wants(EventMask::MOVED_FROM, name("p-1.json"), chain), listing);
        assert_eq!(wants(EventMask::CREATE, name(".p-1.tmp"), chain), Wants::default());
        assert_eq!(wants(EventMask::MOVED_FROM, name(".p-1.tmp"), chain), Wants::default());
        assert_eq!(wants(EventMask::DELETE, name("p-1.json"), chain), listing);
        assert_eq!(wants(EventMask::MODIFY, name(".p-1.tmp"), chain), Wants::default());
        assert_eq!(wants(EventMask::MODIFY, name("chain.jsonl"), chain), Wants { chain: true, ..Wants::default() });
        // A packet written in place keeps its inode: every file is checked.
        assert_eq!(wants(EventMask::MODIFY, name("p-1.json"), chain), every);
        assert_eq!(wants(EventMask::CLOSE_WRITE, name("p-1.json"), chain), every);
        assert_eq!(wants(EventMask::ATTRIB, name("p-1.json"), chain), every);
        // A watched directory deleted or moved: listed again (its name is the event's).
        assert_eq!(wants(EventMask::DELETE_SELF, name("packets"), chain), listing);
        assert_eq!(wants(EventMask::MOVE_SELF, name("receipts"), chain), listing);
        assert_eq!(wants(EventMask::CREATE | EventMask::ISDIR, name("packets"), chain), listing);
        // The watch's end asks for nothing by itself.
        assert_eq!(wants(EventMask::IGNORED, name("packets"), chain), Wants::default());
        // The names a scan must look at again, whatever inode the listing shows.
        assert_eq!(touched_name(name("p-1.json"), chain).as_deref(), Some("p-1.json"));
        assert_eq!(touched_name(name(".p-1.tmp"), chain), None);
        assert_eq!(touched_name(name("chain.jsonl"), chain), None);
        // The kernel's queue overflowed: everything, at once.
        assert_eq!(wants(EventMask::Q_OVERFLOW, name(""), None), Wants { files: true, chain: true, every: true });
    }

    /// The real kernel, the real files: a packet renamed into place and a file written in place
    /// reach the console as requests with the names touched; reading a file is no event at all;
    /// dropping the watcher ends its thread.
    #[test]
    fn the_kernel_reports_changes_not_reads_and_the_thread_ends_on_drop() {
        use std::time::Duration;
        let dir = tempfile::tempdir().expect("tempdir");
        let spool = Spool::new(dir.path());
        spool.ensure().expect("spool");
        std::fs::write(spool.packets_dir().join("old.json"), b"{}").expect("write");
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let every = Arc::new(AtomicBool::new(false));
        let touched = Arc::new(std::sync::Mutex::new(Vec::new()));
        let watcher = SpoolWatcher::start(&spool, tx, Arc::clone(&every), Arc::clone(&touched)).expect("watch");
        let next = |rx: &mut tokio::sync::mpsc::UnboundedReceiver<Action>| {
            let deadline = std::time::Instant::now() + Duration::from_secs(5);
            loop {
                match rx.try_recv() {
                    Ok(a) => return Some(a),
                    Err(tokio::sync::mpsc::error::TryRecvError::Disconnected) => return None,
                    Err(_) if std::time::Instant::now() > deadline => panic!("no event in 5 s"),
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        };
        // Reading is not a change.
        let _ = std::fs::read(spool.packets_dir().join("old.json")).expect("read");
        // A publication: written to a dot-file, renamed into place.
        let tmp = spool.packets_dir().join(".new.json.tmp");
        std::fs::write(&tmp, b"{}").expect("write");
        std::fs::rename(&tmp, spool.packets_dir().join("new.json")).expect("rename");
        let mut got = Vec::new();
        while !touched.lock().expect("lock").contains(&"new.json".to_owned()) {
            got.push(next(&mut rx).expect("an action"));
        }
        assert!(got.iter().all(|a| matches!(a, Action::SpoolChanged { chain: false })), "{got:?}");
        assert!(!touched.lock().expect("lock").contains(&"old.json".to_owned()), "a read is no event");
        assert!(!every.load(Ordering::SeqCst), "a rename into place is seen by listing");
        // A write in place: every file is checked.
        std::fs::write(spool.packets_dir().join("old.json"), b"{ }").expect("write in place");
        while !every.load(Ordering::SeqCst) {
            next(&mut rx).expect("an action");
        }
        // The chain.
        std::fs::write(spool.chain_path(), b"").expect("chain");
        while !matches!(next(&mut rx), Some(Action::SpoolChanged { chain: true })) {}
        // Dropped: the thread ends and drops the sender.
        drop(watcher);
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        loop {
            match rx.try_recv() {
                Err(tokio::sync::mpsc::error::TryRecvError::Disconnected) => break,
                _ if std::time::Instant::now() > deadline => panic!("the watcher's thread did not end"),
                _ => std::thread::sleep(Duration::from_millis(5)),
            }
        }
    }
}
