//! The spool watcher: inotify (through notify and notify-debouncer-full) as a *hint*. Any event
//! under `packets/`, `receipts/` or on `chain.jsonl` asks for a rescan; the scan of the directory
//! is the truth, so lost or merged events cost only latency until the periodic rescan.

use super::app::Action;
use crate::spool::Spool;
use notify::RecursiveMode;
use notify::event::EventKind;
use notify_debouncer_full::{DebounceEventResult, Debouncer, RecommendedCache, new_debouncer};
use std::time::Duration;
use tokio::sync::mpsc::UnboundedSender;

/// Debounce window: short, so a packet shows within a few tens of milliseconds of its rename.
const DEBOUNCE: Duration = Duration::from_millis(15);

/// Owns the debouncer; dropping it stops watching.
pub struct SpoolWatcher {
    _debouncer: Debouncer<notify::RecommendedWatcher, RecommendedCache>,
}

impl SpoolWatcher {
    /// Watches the spool root (for `chain.jsonl`), `packets/` and `receipts/`.
    ///
    /// # Errors
    /// The watcher could not be created (e.g. inotify limits).
    pub fn start(spool: &Spool, tx: UnboundedSender<Action>) -> notify::Result<Self> {
        let chain_name = spool.chain_path().file_name().map(std::ffi::OsStr::to_owned);
        let mut debouncer =
            new_debouncer(DEBOUNCE, Some(Duration::from_millis(5)), move |res: DebounceEventResult| {
                let (mut files, mut chain) = (false, false);
                match res {
                    Ok(events) => {
                        for ev in events {
                            if matches!(ev.kind, EventKind::Access(_)) {
                                continue;
                            }
                            if ev.need_rescan() {
                                files = true;
                                chain = true;
                            }
                            for p in &ev.paths {
                                if p.file_name().map(std::ffi::OsStr::to_owned) == chain_name {
                                    chain = true;
                                } else {
                                    files = true;
                                }
                            }
                        }
                    }
                    Err(_) => {
                        files = true;
                        chain = true;
                    }
                }
                if files || chain {
                    // The handler runs on notify's thread: a synchronous send, never an await.
                    let _ = tx.send(Action::SpoolChanged { chain });
                }
            })?;
        debouncer.watch(spool.root(), RecursiveMode::NonRecursive)?;
        debouncer.watch(spool.packets_dir(), RecursiveMode::NonRecursive)?;
        debouncer.watch(spool.receipts_dir(), RecursiveMode::NonRecursive)?;
        Ok(Self { _debouncer: debouncer })
    }
}
