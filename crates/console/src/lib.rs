//! The terminal console (feature `console`).
//!
//! One tokio `current_thread` loop with one `select!` over the terminal's event stream, the spool
//! watcher, a one-second tick, a periodic rescan, effect results and Unix signals. Each input
//! becomes an [`app::Action`]; [`app::update`] changes the state and returns effects; the loop
//! runs the effects (signing, scanning and verifying on blocking threads) and redraws only when
//! something changed, at most once per 16 ms.

use warrant_store::prelude::*;
pub mod app;
pub mod command;
pub mod dialog;
pub mod fields;
pub mod filter;
pub mod grants;
pub mod keymap;
pub mod notify;
pub mod theme;
pub mod ui;
mod watcher;

use app::{Action, ControlSummary, Effect, SignedSummary, State};
use color_eyre::eyre::{Result, WrapErr, eyre};
use futures_util::StreamExt as _;
use ratatui::crossterm::event::{Event, EventStream, KeyEventKind};
use ratatui::crossterm::{execute, terminal};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use warrant_protocol::keys::{PinnedKeys, Principal};
use warrant_store::spool::{self, Scanner, Spool};

/// How the console was asked to run.
pub struct Options {
    /// The spool to watch.
    pub spool: Spool,
    /// The signing principal (`None` when read-only).
    pub principal: Option<Principal>,
    /// Observe only.
    pub read_only: bool,
    /// Theme name.
    pub theme: Option<String>,
    /// Period of the full rescan.
    pub rescan: Duration,
    /// `[notify]` from `config.toml`: bell, title and command for packets that need the principal.
    pub notify: warrant_store::config::Notify,
    /// For `warrant demo`: run simulated agents at this interval (seconds).
    pub demo_interval: Option<f64>,
    /// The configuration directory whose pinned keys, `policy.toml` and key the console uses (the
    /// demo's own temporary one for `warrant demo`, else the principal's).
    pub config_dir: std::path::PathBuf,
    /// Capture the mouse (`[console] mouse`, default true): clicks select rows and switch views,
    /// the wheel scrolls lists.
    pub mouse: bool,
}

fn now_secs() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

/// The console's mouse action for a terminal mouse event: a left click or the wheel; anything
/// else (moves, drags, other buttons) is dropped.
fn mouse_action(m: &ratatui::crossterm::event::MouseEvent) -> Option<Action> {
    use ratatui::crossterm::event::{MouseButton, MouseEventKind};
    let kind = match m.kind {
        MouseEventKind::Down(MouseButton::Left) => app::MouseKind::Click,
        MouseEventKind::ScrollUp => app::MouseKind::ScrollUp,
        MouseEventKind::ScrollDown => app::MouseKind::ScrollDown,
        _ => return None,
    };
    Some(Action::Mouse(app::MouseInput { kind, column: m.column, row: m.row }))
}

/// Restores the terminal when dropped (early return, error or panic unwinding).
struct TerminalGuard;

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore_terminal();
    }
}

/// Whether the console captures the mouse (`[console] mouse`), to take it again after a pager.
static MOUSE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn restore_terminal() {
    let _ = terminal::disable_raw_mode();
    let _ = execute!(
        std::io::stdout(),
        ratatui::crossterm::event::DisableMouseCapture,
        ratatui::crossterm::event::DisableBracketedPaste,
        terminal::LeaveAlternateScreen,
        ratatui::crossterm::cursor::Show
    );
}

/// Runs the console until the principal quits.
///
/// # Errors
/// Terminal set-up failures, an unusable theme or keymap, or a spool that cannot be created.
pub fn run(opts: Options) -> Result<()> {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let theme = theme::Theme::resolve(opts.theme.as_deref(), no_color).map_err(|e| eyre!(e))?;
    if no_color {
        // crossterm 0.29 turns colour codes into bare SGR resets under NO_COLOR, which cancels
        // bold and reversed; the mono theme uses no colours, so force normal output.
        ratatui::crossterm::style::force_color_output(true);
    }
    let keymap = keymap::Keymap::load().map_err(|e| eyre!(e))?;
    opts.spool.ensure().wrap_err_with(|| format!("creating the spool at {}", opts.spool.root().display()))?;
    let pinned = PinnedKeys::load(&opts.config_dir)?;
    // The gateways' keys: receipts they sign are observed outcomes (docs/integrations.md).
    let gateways = warrant_protocol::keys::GatewayKeys::load(&opts.config_dir)?;
    // An append interrupted by a crash leaves a torn final line: set it aside on open (not in
    // observe-only mode, which writes nothing) and tell the principal where it went.
    let set_aside = if opts.read_only {
        None
    } else {
        warrant_store::chain_file::recover_torn_tail(&opts.spool.chain_path())
            .wrap_err("checking the chain's last line")?
    };
    // The demo writes its policy.toml before the policies are loaded.
    let demo =
        opts.demo_interval.map(|i| warrant_engine::demo::Demo::start(opts.spool.clone(), Duration::from_secs_f64(i)));
    let state = State::new(
        opts.spool.root().display().to_string(),
        opts.principal.as_ref().map(|p| p.name.clone()),
        opts.principal.as_ref().map(Principal::fingerprint),
        opts.read_only,
        keymap,
        now_secs(),
    )
    .with_policies(Arc::new(
        warrant_protocol::graduation::PolicySet::load(&opts.config_dir, Some(opts.spool.root()))
            .map_err(|e| eyre!("{e}"))?,
    ));
    let observer =
        Arc::new(warrant_engine::preconditions::Observer::for_policies(&state.policies, Some(&opts.config_dir)));
    let state = state.with_observer(Arc::clone(&observer));
    let mut state = state;
    if let Some(aside) = set_aside {
        state.flash = Some(app::Flash { text: aside.message(), error: true });
    }

    // Restore the terminal before any panic message is printed.
    // A panic on the UI thread gives the terminal back before the message is printed; one in a
    // background job is logged (printing would garble the screen) and reported by `spawn_job`.
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if std::thread::current().name() == Some("main") {
            restore_terminal();
            previous(info);
        } else {
            tracing::error!(panic = %info, "background job panicked");
        }
    }));
    terminal::enable_raw_mode().wrap_err("enabling raw mode (is this a terminal?)")?;
    let _guard = TerminalGuard;
    execute!(std::io::stdout(), terminal::EnterAlternateScreen, ratatui::crossterm::event::EnableBracketedPaste)?;
    if opts.mouse {
        // Disabled again by `restore_terminal` on every exit path (guard, panic hook, quit),
        // and while a pager has the terminal.
        MOUSE.store(true, std::sync::atomic::Ordering::Relaxed);
        execute!(std::io::stdout(), ratatui::crossterm::event::EnableMouseCapture)?;
    }
    execute!(std::io::stdout(), terminal::SetTitle(format!("warrant — {}", opts.spool.root().display())))?;
    let backend = ratatui::backend::CrosstermBackend::new(std::io::stdout());
    let mut terminal = ratatui::Terminal::new(backend)?;
    terminal.clear()?;
    // The sign dialog's layout is worked out in `update`, which needs the terminal's size.
    let size = terminal.size()?;
    app::update(&mut state, app::Action::Resize { width: size.width, height: size.height });

    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    state.themes = theme::names(&warrant_store::config::config_dir());
    let result = rt.block_on(event_loop(
        &mut terminal,
        state,
        theme,
        opts.spool,
        opts.principal,
        pinned,
        gateways,
        opts.rescan,
        opts.notify,
    ));
    // Give the terminal back first: a blocking job (a signature waiting for the chain's lock)
    // must not keep the principal's terminal in raw mode.
    restore_terminal();
    rt.shutdown_timeout(Duration::from_millis(500));
    drop(demo);
    result
}

/// Runs `job` on the blocking pool and sends its action; a panic in the job sends `on_panic`
/// instead (and is logged), so the console never waits forever for a job that died.
fn spawn_job(tx: mpsc::UnboundedSender<Action>, on_panic: Action, job: impl FnOnce() -> Action + Send + 'static) {
    tokio::task::spawn_blocking(move || {
        let action = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job)).unwrap_or(on_panic);
        let _ = tx.send(action);
    });
}

/// The thread that runs the models' assessments ([`app::AssessJob`]), one at a time, at a lower
/// priority (nice [`ASSESS_NICE`]; Linux's nice value is per thread): under load the scheduler
/// gives the cores to listing and drawing new packets first, and the assessment, which follows
/// a moment later anyway, takes the time left. Dropping it ends the thread after its current job.
struct Assessor {
    jobs: Option<std::sync::mpsc::Sender<app::AssessJob>>,
}

/// How much lower the assessment thread's priority is than the console's (`nice` steps).
const ASSESS_NICE: i32 = 10;

impl Assessor {
    fn start(tx: mpsc::UnboundedSender<Action>) -> Self {
        let (jobs, rx) = std::sync::mpsc::channel::<app::AssessJob>();
        let spawned = std::thread::Builder::new().name("warrant-assess".into()).spawn(move || {
            if let Err(e) = rustix::process::setpriority_process(None, ASSESS_NICE) {
                tracing::debug!(error = %e, "assessments run at the console's priority");
            }
            for job in rx {
                let action = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job.run())).map_or_else(
                    |_| Action::AssessFailed("internal error while assessing (see the log)".into()),
                    |a| Action::Assessed(Box::new(a)),
                );
                if tx.send(action).is_err() {
                    return;
                }
            }
        });
        if let Err(e) = &spawned {
            tracing::warn!(error = %e, "no assessment thread; assessing on the blocking pool");
        }
        Self { jobs: spawned.is_ok().then_some(jobs) }
    }

    /// Hands `job` to the thread (or, without it, to the blocking pool); its result comes back
    /// as [`Action::Assessed`] or [`Action::AssessFailed`].
    fn assess(&self, job: app::AssessJob, tx: &mpsc::UnboundedSender<Action>) {
        let job = match &self.jobs {
            Some(jobs) => match jobs.send(job) {
                Ok(()) => return,
                Err(std::sync::mpsc::SendError(job)) => job,
            },
            None => job,
        };
        spawn_job(tx.clone(), Action::AssessFailed("internal error while assessing (see the log)".into()), move || {
            Action::Assessed(Box::new(job.run()))
        });
    }
}

/// Signs and appends one of the principal's controls, as the console's [`Effect::Control`] asks:
/// stamps `decided_at` now and hands it to [`spool::append_control`], which checks it against the
/// chain verified under its lock (a trust change still starts from the level the principal saw,
/// a kill runs the kill switch, an elevation passes the hypervisor's rules) and appends the signed
/// record. Blocking: the console runs it on a background thread.
///
/// # Errors
/// A sentence for the status line; nothing was appended.
pub fn execute_control(
    spool: &Spool,
    principal: &Principal,
    pinned: &PinnedKeys,
    policies: &warrant_protocol::graduation::PolicySet,
    mut input: warrant_protocol::control::ControlInput,
) -> std::result::Result<ControlSummary, String> {
    input.decided_at = warrant_protocol::clock::now_rfc3339();
    let (input, appended) =
        spool::append_control(spool, principal, pinned, policies, &warrant_engine::monitor::Scores, input)
            .map_err(|e| e.to_string())?;
    let refused = if input.kind == warrant_protocol::control::ControlKind::Kill {
        spool::refuse_pending_of(spool, principal, pinned, &input).map_err(|e| e.to_string())?.len()
    } else {
        0
    };
    Ok(ControlSummary {
        kind: input.kind,
        subject: input.subject,
        chain_index: appended.chain_index,
        entry_hash: appended.entry_hash,
        refused,
    })
}

struct Runner {
    spool: Spool,
    principal: Option<Arc<Principal>>,
    pinned: Arc<PinnedKeys>,
    policies: Arc<warrant_protocol::graduation::PolicySet>,
    observer: Arc<warrant_engine::preconditions::Observer>,
    scanner: Arc<Mutex<Scanner>>,
    tx: mpsc::UnboundedSender<Action>,
    scanning: bool,
    /// A scan was asked for while one ran or within [`SCAN_EVERY`] of the last one's start.
    scan_again: bool,
    /// When the last scan started.
    last_scan: Instant,
    verifying: bool,
    verify_again: bool,
    /// `chain.jsonl`'s metadata when its last verification started.
    verified_stamp: Option<ChainStamp>,
    /// An audit is being built; another was asked for meanwhile; `chain.jsonl`'s metadata when
    /// the last one started (an unchanged chain is not audited again).
    auditing: bool,
    audit_again: bool,
    audited_stamp: Option<ChainStamp>,
    /// Set (by the watcher) when the next scan must `lstat` every file.
    recheck_every: Arc<std::sync::atomic::AtomicBool>,
    /// Names the watcher saw touched since the last scan started: that scan `lstat`s them.
    touched: Arc<Mutex<Vec<String>>>,
    /// The watcher runs: without it every scan checks every file.
    watching: bool,
    /// When a scan last checked every file.
    last_recheck: Instant,
    /// The last verification: the view and the prefix it covers, extended by the next one
    /// ([`spool::verify_chain_from`]).
    cache: Arc<Mutex<Option<spool::VerifiedView>>>,
    /// `[notify]` from `config.toml`.
    notify: warrant_store::config::Notify,
    /// Notify commands still running ([`notify::MAX_COMMANDS`] at most).
    notifying: Arc<std::sync::atomic::AtomicUsize>,
}

/// Counts a running notify command down when its reaper ends (however it ends).
struct Running(Arc<std::sync::atomic::AtomicUsize>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Sets a flag when dropped (a finished or panicked background verification).
struct DoneOnDrop(Arc<std::sync::atomic::AtomicBool>);

impl Drop for DoneOnDrop {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// How long a notify command may run before the console ends it.
const NOTIFY_DEADLINE: Duration = Duration::from_secs(30);

/// However quiet the watcher, a scan checks every file at least this often.
const RECHECK_EVERY: Duration = Duration::from_secs(60);

/// The shortest time between two frames: bursts of changes are drawn at most about 60 times a
/// second.
const FRAME_EVERY: Duration = Duration::from_millis(16);

/// The shortest time between the starts of two scans. Under a stream of publications, a scan
/// then picks up a frame's worth of packets, instead of one scan (and one update of every list)
/// per packet; the first change after a quiet spell is scanned at once.
const SCAN_EVERY: Duration = FRAME_EVERY;

/// Length, modification time, change time and inode of `chain.jsonl`.
type ChainStamp = (u64, std::time::SystemTime, i64, i64, u64);

fn chain_stamp(spool: &Spool) -> Option<ChainStamp> {
    use std::os::unix::fs::MetadataExt as _;
    let m = std::fs::symlink_metadata(spool.chain_path()).ok()?;
    Some((m.len(), m.modified().ok()?, m.ctime(), m.ctime_nsec(), m.ino()))
}

impl Runner {
    fn run(&mut self, effect: Effect) {
        match effect {
            Effect::Audit => self.start_audit(),
            // Handled by the event loop, which owns the theme.
            Effect::Theme(_) => {}
            Effect::Scan => self.start_scan(),
            Effect::VerifyChain { force } => self.start_verification(force),
            Effect::Sign { packet, publisher, verdict, reason, stands_in_for, grant, correction } => {
                self.start_signing(packet, publisher, verdict, reason, stands_in_for, grant, correction)
            }
            Effect::RefuseTimedOut { packet, after, reason } => self.start_timeout_refusal(packet, after, reason),
            Effect::RevokeGrant { grant_id, reason } => self.start_revocation(grant_id, reason),
            Effect::SignBatch { items, verdict, reason } => self.start_batch_signing(items, verdict, reason),
            Effect::Control(input) => self.start_control(input),
            Effect::Notify { packets, pending } => self.notify(&packets, pending),
            Effect::Title { pending } => {
                if self.notify.title {
                    let _ = execute!(std::io::stdout(), terminal::SetTitle(notify::title(pending)));
                }
            }
            Effect::Copy(text) => {
                let _ = execute!(
                    std::io::stdout(),
                    ratatui::crossterm::clipboard::CopyToClipboard::to_clipboard_from(text)
                );
            }
            // Handled by the event loop, which owns the terminal.
            Effect::Pager(_) | Effect::Edit { .. } | Effect::Quit => {}
        }
    }

    /// Starts the audit of the chain on a blocking thread, unless one is running (it runs again
    /// after) or the chain is as it was at the last audit.
    fn start_audit(&mut self) {
        if self.auditing {
            self.audit_again = true;
            return;
        }
        let stamp = chain_stamp(&self.spool);
        if stamp.is_some() && stamp == self.audited_stamp {
            return;
        }
        self.auditing = true;
        self.audited_stamp = stamp;
        let (spool, pinned, tx) = (self.spool.clone(), Arc::clone(&self.pinned), self.tx.clone());
        spawn_job(
            tx,
            Action::Audited(Err("internal error while building the audit (see the log)".into())),
            move || {
                Action::Audited(
                    warrant_engine::audit::audit_chain(&spool, &pinned)
                        .map(|(_, entries)| Arc::new(entries))
                        .map_err(|e| e.to_string()),
                )
            },
        );
    }

    /// Starts a scan of the spool on a blocking thread, unless one is running or started less than
    /// [`SCAN_EVERY`] ago (it runs again when due).
    fn start_scan(&mut self) {
        if self.scanning || self.last_scan.elapsed() < SCAN_EVERY {
            self.scan_again = true;
            return;
        }
        self.scanning = true;
        self.last_scan = Instant::now();
        // The watcher names every file an event touched: a scan for those alone looks
        // at them alone, however large the spool. A scan with no names (the periodic
        // rescan, a change of the chain) or after an event on `packets/` or `receipts/`
        // themselves lists the directories, whose inodes show renames into place; a
        // write in place, lost events or a minute's silence check every file.
        let touched = self.touched.lock().map(|mut names| std::mem::take(&mut *names)).unwrap_or_default();
        let every = self.recheck_every.swap(false, std::sync::atomic::Ordering::SeqCst)
            || !self.watching
            || self.last_recheck.elapsed() >= RECHECK_EVERY;
        let recheck = if every {
            self.last_recheck = Instant::now();
            spool::Recheck::Every
        } else {
            watcher::recheck_for(&self.spool, &touched)
        };
        let (spool, scanner, tx) = (self.spool.clone(), Arc::clone(&self.scanner), self.tx.clone());
        spawn_job(tx.clone(), Action::ScanFailed("internal error while scanning (see the log)".into()), move || {
            let result = scanner.lock().map_err(|_| "scanner poisoned".to_owned()).and_then(|mut s| {
                s.recheck_names(touched);
                s.scan_if_changed(&spool, recheck).map_err(|e| e.to_string())
            });
            match result {
                Ok(Some(snap)) => Action::Scanned(snap),
                Ok(None) => Action::ScanUnchanged,
                Err(e) => Action::ScanFailed(format!("scanning the spool: {e}")),
            }
        });
    }

    /// Starts the verification of the chain on a blocking thread, with its progress reported
    /// every 250 ms, unless the chain is unchanged (and `force` is false) or one is running (it
    /// runs again after).
    fn start_verification(&mut self, force: bool) {
        // A rescan asks every few seconds; verify again only when the file changed.
        let stamp = chain_stamp(&self.spool);
        if !force && stamp.is_some() && stamp == self.verified_stamp {
            return;
        }
        if self.verifying {
            self.verify_again = true;
            return;
        }
        self.verifying = true;
        self.verified_stamp = stamp;
        let (spool, pinned, tx) = (self.spool.clone(), Arc::clone(&self.pinned), self.tx.clone());
        let cache = Arc::clone(&self.cache);
        // The cached prefix is verified already: progress counts the bytes after it.
        let cached = self.cache.lock().ok().and_then(|c| c.as_ref().and_then(|c| c.verified.clone()));
        let total = stamp.map_or(0, |s| s.0).saturating_sub(cached.map_or(0, |v| v.bytes));
        let progress = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        {
            let (tx, progress, done) = (tx.clone(), Arc::clone(&progress), Arc::clone(&done));
            tokio::spawn(async move {
                let mut every = tokio::time::interval(Duration::from_millis(250));
                every.tick().await;
                loop {
                    every.tick().await;
                    if done.load(std::sync::atomic::Ordering::Relaxed) {
                        break;
                    }
                    let read = progress.load(std::sync::atomic::Ordering::Relaxed);
                    let _ = tx.send(Action::ChainProgress { read, total: total.max(read) });
                }
            });
        }
        let job_tx = tx.clone();
        spawn_job(tx, Action::VerifyFailed("internal error while verifying (see the log)".into()), move || {
            let _done = DoneOnDrop(done);
            let previous = cache.lock().ok().and_then(|c| c.clone());
            // At start: the records after the principal's checkpoint first (quick), so
            // the console can sign while the whole chain is verified.
            if previous.is_none()
                && let Some(view) = spool::checkpointed_chain_view(&spool, &pinned)
            {
                let _ = job_tx.send(Action::ChainCheckpointed(Box::new(view)));
            }
            let started = Instant::now();
            match spool::verify_chain_from(&spool, &pinned, previous.as_ref(), &progress) {
                Ok(verified) => {
                    let view = verified.view.clone();
                    tracing::info!(
                        records = view.report.total,
                        findings = view.report.findings.len(),
                        ms = started.elapsed().as_millis(),
                        "chain verified"
                    );
                    if let Ok(mut c) = cache.lock() {
                        *c = Some(verified);
                    }
                    Action::ChainVerified(Box::new(view))
                }
                Err(e) => Action::VerifyFailed(format!("reading the chain: {e}")),
            }
        });
    }

    /// Signs the principal's decision on `packet` (and records the grant after an approval) on a
    /// blocking thread.
    #[allow(clippy::too_many_arguments)]
    fn start_signing(
        &self,
        packet: Arc<warrant_protocol::packet::Packet>,
        publisher: Option<u32>,
        verdict: warrant_protocol::decision::Verdict,
        reason: Option<String>,
        stands_in_for: Vec<String>,
        grant: Option<Box<warrant_protocol::grant::GrantInput>>,
        correction: Option<Box<warrant_protocol::correction::Correction>>,
    ) {
        let Some(principal) = self.principal.clone() else {
            let _ = self.tx.send(Action::Signed(Err("read-only: no key".into())));
            return;
        };
        let (spool, pinned, tx) = (self.spool.clone(), Arc::clone(&self.pinned), self.tx.clone());
        let observer = Arc::clone(&self.observer);
        let quorum = self.policies.cosign(&packet.action_class).cloned();
        let corrected_preconditions = correction.as_ref().and_then(|c| c.preconditions(&packet, &self.policies));
        spawn_job(tx, Action::Signed(Err("internal error while signing (see the log)".into())), move || {
            let at = warrant_protocol::clock::now_rfc3339();
            let corrected = correction
                .as_deref()
                .map(|c| spool::Corrected { correction: c, preconditions: corrected_preconditions.as_deref() });
            let decided = spool::decide_with(
                &spool,
                &principal,
                &pinned,
                &packet,
                publisher,
                verdict,
                reason.as_deref(),
                corrected,
                &at,
                &*observer,
                quorum.as_ref(),
                |_| Ok(stands_in_for),
            );
            let result = decided
                .map(|d| SignedSummary {
                    corrected: correction.as_ref().map(|c| c.size),
                    cosigned: d.cosigned,
                    packet_id: packet.id.clone(),
                    verdict,
                    chain_index: d.appended.chain_index,
                    entry_hash: d.appended.entry_hash,
                    // The approval stands even if the grant after it cannot be recorded.
                    grant: grant.map(|g| {
                        spool::append_grant(&spool, &principal, &pinned, &g)
                            .map(|(g, _)| g.grant_id)
                            .map_err(|e| e.to_string())
                    }),
                })
                .map_err(|e| e.to_string());
            match &result {
                Ok(s) => {
                    tracing::info!(packet = %s.packet_id, verdict = verdict.as_str(), index = s.chain_index, "signed")
                }
                Err(e) => tracing::warn!(packet = %packet.id, error = %e, "signing failed"),
            }
            Action::Signed(result)
        });
    }

    /// Signs the system refusal of the timed-out `packet` on a blocking thread.
    fn start_timeout_refusal(&self, packet: Arc<warrant_protocol::packet::Packet>, after: Duration, reason: String) {
        let packet_id = packet.id.clone();
        let Some(principal) = self.principal.clone() else {
            let result = Err("read-only: no key".into());
            let _ = self.tx.send(Action::TimeoutRefused { packet_id, after, result });
            return;
        };
        let (spool, pinned, tx) = (self.spool.clone(), Arc::clone(&self.pinned), self.tx.clone());
        let result = Err("internal error while signing (see the log)".into());
        let on_panic = Action::TimeoutRefused { packet_id: packet_id.clone(), after, result };
        spawn_job(tx, on_panic, move || {
            let at = warrant_protocol::clock::now_rfc3339();
            let cause = warrant_protocol::decision::SystemCause::Timeout;
            let result = match spool::decide_system(&spool, &principal, &pinned, &packet, cause, &reason, &at) {
                Ok(d) => Ok(Some(SignedSummary {
                    corrected: None,
                    packet_id: packet_id.clone(),
                    verdict: warrant_protocol::decision::Verdict::Refuse,
                    chain_index: d.appended.chain_index,
                    entry_hash: d.appended.entry_hash,
                    grant: None,
                    cosigned: None,
                })),
                // Another console, or the command line, decided it first.
                Err(spool::DecideError::AlreadyDecided { .. }) => Ok(None),
                Err(e) => Err(e.to_string()),
            };
            match &result {
                Ok(Some(s)) => {
                    tracing::info!(packet = %packet_id, index = s.chain_index, "timed out: system refusal signed")
                }
                Ok(None) => tracing::info!(packet = %packet_id, "timed out, but already decided"),
                Err(e) => tracing::warn!(packet = %packet_id, error = %e, "timed out: system refusal failed"),
            }
            Action::TimeoutRefused { packet_id, after, result }
        });
    }

    /// Signs the revocation of the grant `grant_id` on a blocking thread.
    fn start_revocation(&self, grant_id: String, reason: String) {
        let Some(principal) = self.principal.clone() else {
            let _ = self.tx.send(Action::GrantRevoked(Err("read-only: no key".into())));
            return;
        };
        let (spool, pinned) = (self.spool.clone(), Arc::clone(&self.pinned));
        let on_panic = Action::GrantRevoked(Err("internal error while signing (see the log)".into()));
        spawn_job(self.tx.clone(), on_panic, move || {
            let at = warrant_protocol::clock::now_rfc3339();
            let result = spool::revoke_grant(&spool, &principal, &pinned, &grant_id, &reason, &at)
                .map(|a| (grant_id.clone(), a.chain_index, a.entry_hash))
                .map_err(|e| e.to_string());
            match &result {
                Ok((_, index, _)) => tracing::info!(grant = %grant_id, index, "grant revoked"),
                Err(e) => tracing::warn!(grant = %grant_id, error = %e, "revocation failed"),
            }
            Action::GrantRevoked(result)
        });
    }

    /// Signs one decision on each of `items`, all or nothing, on a blocking thread.
    fn start_batch_signing(
        &self,
        items: Vec<app::BatchSign>,
        verdict: warrant_protocol::decision::Verdict,
        reason: Option<String>,
    ) {
        let Some(principal) = self.principal.clone() else {
            let _ = self.tx.send(Action::SignedBatch(Err("read-only: no key".into())));
            return;
        };
        let (spool, pinned, tx) = (self.spool.clone(), Arc::clone(&self.pinned), self.tx.clone());
        let observer = Arc::clone(&self.observer);
        let policies = Arc::clone(&self.policies);
        let on_panic = Action::SignedBatch(Err("internal error while signing (see the log)".into()));
        spawn_job(tx, on_panic, move || {
            let at = warrant_protocol::clock::now_rfc3339();
            let batch: Vec<spool::BatchItem<'_>> =
                items.iter().map(|i| spool::BatchItem { packet: &i.packet, publisher: i.publisher }).collect();
            // What each approval stands in for is what the principal saw in the dialog.
            let stands = |_: &spool::ChainView, p: &warrant_protocol::packet::Packet| {
                // A co-signed class is approved one packet at a time (checked again here,
                // under the chain's lock, with the policy as loaded).
                if verdict == warrant_protocol::decision::Verdict::Approve
                    && let Some(q) = policies.cosign(&p.action_class)
                {
                    return Err(format!("{} needs the approval of {}: approve it on its own", p.id, q.describe()));
                }
                Ok(items.iter().find(|i| i.packet.id == p.id).map(|i| i.stands_in_for.clone()).unwrap_or_default())
            };
            let result = spool::decide_many(
                &spool,
                &principal,
                &pinned,
                &batch,
                verdict,
                reason.as_deref(),
                &at,
                &*observer,
                stands,
            )
            .map(|done| {
                items
                    .iter()
                    .zip(done)
                    .map(|(i, d)| SignedSummary {
                        corrected: None,
                        packet_id: i.packet.id.clone(),
                        verdict,
                        chain_index: d.appended.chain_index,
                        entry_hash: d.appended.entry_hash,
                        grant: None,
                        cosigned: None,
                    })
                    .collect::<Vec<_>>()
            })
            .map_err(|e| e.to_string());
            match &result {
                Ok(s) => tracing::info!(packets = s.len(), verdict = verdict.as_str(), "batch signed"),
                Err(e) => tracing::warn!(error = %e, "batch signing failed"),
            }
            Action::SignedBatch(result)
        });
    }

    /// Signs the control `input` on a blocking thread.
    fn start_control(&self, input: warrant_protocol::control::ControlInput) {
        let Some(principal) = self.principal.clone() else {
            let _ = self.tx.send(Action::ControlSigned(Err("read-only: no key".into())));
            return;
        };
        let (spool, pinned, policies) = (self.spool.clone(), Arc::clone(&self.pinned), Arc::clone(&self.policies));
        let on_panic = Action::ControlSigned(Err("internal error while signing (see the log)".into()));
        spawn_job(self.tx.clone(), on_panic, move || {
            let (kind, subject) = (input.kind, input.subject.clone());
            let result = execute_control(&spool, &principal, &pinned, &policies, input);
            match &result {
                Ok(s) => {
                    tracing::info!(control = kind.as_str(), %subject, index = s.chain_index, "control signed")
                }
                Err(e) => tracing::warn!(control = kind.as_str(), %subject, error = %e, "control failed"),
            }
            Action::ControlSigned(result)
        });
    }

    /// Rings the bell and starts the notify command for each new packet (at most
    /// [`notify::MAX_COMMANDS`] at once), never waiting for it: a blocking thread reaps each
    /// child, ending it after [`NOTIFY_DEADLINE`], and a failure reaches the status line.
    fn notify(&self, packets: &[notify::Notice], pending: usize) {
        if self.notify.bell {
            use std::io::Write as _;
            let mut out = std::io::stdout();
            let _ = out.write_all(b"\x07").and_then(|()| out.flush());
        }
        let Some(command) = self.notify.command.as_ref().filter(|c| !c.is_empty()) else { return };
        for notice in packets.iter().take(notify::MAX_COMMANDS) {
            // At most MAX_COMMANDS run at once, whatever the rate of new packets: a burst an
            // agent publishes cannot start processes (or hold threads) without bound.
            if self.notifying.load(std::sync::atomic::Ordering::SeqCst) >= notify::MAX_COMMANDS {
                tracing::info!("notify command not run: {} still running", notify::MAX_COMMANDS);
                break;
            }
            let tx = self.tx.clone();
            match notify::spawn(command, notice, pending) {
                Ok(mut child) => {
                    let program = command[0].clone();
                    let running = Arc::clone(&self.notifying);
                    running.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    tokio::task::spawn_blocking(move || {
                        let _done = Running(running);
                        let started = Instant::now();
                        let status = loop {
                            match child.try_wait() {
                                Ok(Some(status)) => break Ok(status),
                                Ok(None) if started.elapsed() < NOTIFY_DEADLINE => {
                                    std::thread::sleep(Duration::from_millis(50));
                                }
                                Ok(None) => {
                                    let _ = child.kill();
                                    let _ = child.wait();
                                    break Err(format!("still running after {}s: ended", NOTIFY_DEADLINE.as_secs()));
                                }
                                Err(e) => break Err(e.to_string()),
                            }
                        };
                        let failed = match status {
                            Ok(s) if s.success() => return,
                            Ok(s) => s.to_string(),
                            Err(e) => e,
                        };
                        let _ = tx.send(Action::Error(format!(
                            "notify command {} failed ({failed})",
                            warrant_protocol::text::inert(&program, 80)
                        )));
                    });
                }
                Err(e) => {
                    let _ = tx.send(Action::Error(format!(
                        "notify command {} could not start: {e}",
                        warrant_protocol::text::inert(&command[0], 80)
                    )));
                }
            }
        }
        if packets.len() > notify::MAX_COMMANDS {
            tracing::info!(
                skipped = packets.len() - notify::MAX_COMMANDS,
                "notify command not run for every new packet"
            );
        }
    }

    /// When a scan asked for meanwhile may start: [`SCAN_EVERY`] after the last one started,
    /// once it has finished.
    fn next_scan_at(&self) -> Option<Instant> {
        (self.scan_again && !self.scanning).then(|| self.last_scan + SCAN_EVERY)
    }

    /// Starts the scan asked for meanwhile, if it is due.
    fn scan_if_due(&mut self) {
        if self.next_scan_at().is_some_and(|at| at <= Instant::now()) {
            self.scan_again = false;
            self.run(Effect::Scan);
        }
    }

    /// Marks a finished background job and re-runs it if more changes came in meanwhile (a scan
    /// once it is due).
    fn finished(&mut self, action: &Action) {
        match action {
            Action::Scanned(_) | Action::ScanUnchanged => {
                self.scanning = false;
                self.scan_if_due();
            }
            Action::ChainVerified(..) => {
                self.verifying = false;
                if std::mem::take(&mut self.verify_again) {
                    self.run(Effect::VerifyChain { force: true });
                }
            }
            Action::ScanFailed(_) => self.scanning = false,
            Action::Audited(result) => {
                self.auditing = false;
                if result.is_err() {
                    self.audited_stamp = None;
                }
                if std::mem::take(&mut self.audit_again) {
                    self.run(Effect::Audit);
                }
            }
            Action::VerifyFailed(_) => {
                self.verifying = false;
                self.verified_stamp = None;
            }
            _ => {}
        }
    }
}

/// The console's action for an event of the terminal (`None` for events it ignores); the end of
/// the terminal's events quits.
fn terminal_action(ev: Option<std::io::Result<Event>>) -> Option<Action> {
    match ev {
        Some(Ok(Event::Key(k))) if k.kind == KeyEventKind::Press => Some(Action::Key(keymap::Key::from_event(&k))),
        Some(Ok(Event::Paste(s))) => Some(Action::Paste(s)),
        Some(Ok(Event::Resize(width, height))) => Some(Action::Resize { width, height }),
        Some(Ok(Event::Mouse(m))) => mouse_action(&m),
        Some(Ok(_)) => None,
        Some(Err(e)) => Some(Action::Error(format!("terminal: {e}"))),
        None => Some(Action::Quit),
    }
}

/// Switches to the theme `name` (unless `NO_COLOR` is set); a problem goes to the status line.
fn switch_theme(theme: &mut theme::Theme, name: &str, tx: &mpsc::UnboundedSender<Action>) {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let problem = match theme::Theme::resolve(Some(name), no_color) {
        Ok(t) => {
            *theme = t;
            no_color.then(|| "NO_COLOR is set: the mono theme stays".to_owned())
        }
        Err(e) => Some(format!("theme not changed: {}", warrant_protocol::text::inert(&e, 300))),
    };
    if let Some(text) = problem {
        let _ = tx.send(Action::Error(text));
    }
}

/// The runner of the event loop's effects, and the spool's watcher when it starts (else the
/// status line says so, and every scan checks every file).
#[allow(clippy::too_many_arguments)]
fn start_runner(
    state: &mut State,
    spool: Spool,
    principal: Option<Principal>,
    pinned: PinnedKeys,
    gateways: warrant_protocol::keys::GatewayKeys,
    rescan: Duration,
    notify: warrant_store::config::Notify,
    tx: &mpsc::UnboundedSender<Action>,
) -> (Option<watcher::SpoolWatcher>, Runner) {
    let recheck_every = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let touched = Arc::new(Mutex::new(Vec::new()));
    let _watcher =
        match watcher::SpoolWatcher::start(&spool, tx.clone(), Arc::clone(&recheck_every), Arc::clone(&touched)) {
            Ok(w) => Some(w),
            Err(e) => {
                state.flash = Some(app::Flash {
                    text: format!("file watcher unavailable ({e}); rescanning every {}s", rescan.as_secs()),
                    error: true,
                });
                None
            }
        };
    let runner = Runner {
        spool,
        principal: principal.map(Arc::new),
        pinned: Arc::new(pinned),
        policies: Arc::clone(&state.policies),
        observer: Arc::clone(&state.observer),
        scanner: Arc::new(Mutex::new(Scanner::new().with_gateway_keys(gateways))),
        tx: tx.clone(),
        scanning: false,
        scan_again: false,
        last_scan: Instant::now() - SCAN_EVERY,
        verifying: false,
        verify_again: false,
        verified_stamp: None,
        auditing: false,
        audit_again: false,
        audited_stamp: None,
        recheck_every,
        touched,
        watching: _watcher.is_some(),
        last_recheck: Instant::now(),
        cache: Arc::new(Mutex::new(None)),
        notify,
        notifying: Arc::new(std::sync::atomic::AtomicUsize::new(0)),
    };
    (_watcher, runner)
}

/// Runs the principal's editor on `text` with the terminal handed over ([`Effect::Edit`]):
/// `$VISUAL`, else `$EDITOR`, else `vi`, run by `sh` on a file in a directory of the principal's
/// own (0700; the file 0600; both removed after). Returns the file's text when the editor exits
/// (whatever its status: the correction is checked before anything is signed).
///
/// # Errors
/// The directory or file cannot be made or read back, the editor cannot be started, or the
/// terminal cannot be given back or taken again.
fn edit<B: ratatui::backend::Backend>(terminal: &mut ratatui::Terminal<B>, text: &str) -> Result<String>
where
    B::Error: Send + Sync + 'static,
{
    let editor = ["VISUAL", "EDITOR"]
        .iter()
        .find_map(|k| std::env::var(k).ok().filter(|e| !e.trim().is_empty()))
        .unwrap_or_else(|| "vi".into());
    let dir =
        tempfile::Builder::new().prefix("warrant-correct-").tempdir().wrap_err("making the editor's directory")?;
    let path = dir.path().join("action.json");
    {
        use std::io::Write as _;
        use std::os::unix::fs::OpenOptionsExt as _;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .wrap_err("writing the proposed action for the editor")?;
        f.write_all(text.as_bytes()).wrap_err("writing the proposed action for the editor")?;
    }
    take_terminal(terminal, || {
        let status = std::process::Command::new("sh")
            .args(["-c", &format!("{editor} \"$1\""), "sh"])
            .arg(&path)
            .status()
            .wrap_err_with(|| format!("starting {editor:?}"))?;
        tracing::info!(editor = %editor, status = %status, "the editor of a correction exited");
        std::fs::read_to_string(&path).wrap_err("reading the correction back")
    })
}

/// Gives the terminal to `run` (a pager, an editor) and takes it again after, whatever `run`
/// returned; the next frame is drawn whole.
fn take_terminal<B: ratatui::backend::Backend, T>(
    terminal: &mut ratatui::Terminal<B>,
    run: impl FnOnce() -> Result<T>,
) -> Result<T>
where
    B::Error: Send + Sync + 'static,
{
    restore_terminal();
    let done = run();
    terminal::enable_raw_mode().wrap_err("enabling raw mode again")?;
    execute!(std::io::stdout(), terminal::EnterAlternateScreen, ratatui::crossterm::event::EnableBracketedPaste)?;
    if MOUSE.load(std::sync::atomic::Ordering::Relaxed) {
        execute!(std::io::stdout(), ratatui::crossterm::event::EnableMouseCapture)?;
    }
    // The alternate screen blank, and both of ratatui's buffers with it, so the next frame is
    // drawn whole. (`Terminal::clear` would read the cursor's position, which times out while
    // the event stream is being started again.)
    execute!(std::io::stdout(), terminal::Clear(terminal::ClearType::All))?;
    terminal.swap_buffers();
    terminal.swap_buffers();
    done
}

/// Shows `text` in `$PAGER` (`less` when unset or empty), run by `sh -c` as git and man run it,
/// with the text on its standard input: the terminal is given back (raw mode off, the main
/// screen) until the pager exits, then taken again and redrawn whole.
///
/// # Errors
/// The pager cannot be started, or the terminal cannot be given back or taken again.
fn page<B: ratatui::backend::Backend>(terminal: &mut ratatui::Terminal<B>, text: &str) -> Result<()>
where
    B::Error: Send + Sync + 'static,
{
    use std::io::Write as _;
    let pager = std::env::var("PAGER").ok().filter(|p| !p.trim().is_empty()).unwrap_or_else(|| "less".into());
    take_terminal(terminal, || {
        let mut child = std::process::Command::new("sh")
            .args(["-c", &pager])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .wrap_err_with(|| format!("starting {pager:?}"))?;
        if let Some(mut stdin) = child.stdin.take() {
            // A pager that quits early closes its end: not an error.
            let _ = stdin.write_all(text.as_bytes());
        }
        child.wait().wrap_err_with(|| format!("waiting for {pager:?}"))?;
        Ok(())
    })
}

/// Where the console is on its way to the chain's first verification ([`event_loop`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FirstVerify {
    /// The first scan is not in.
    AfterScan,
    /// The first scan is in; the verification starts once no frame is waiting to be drawn.
    AfterDraw,
    /// Started (later verifications are asked for by the spool's changes).
    Started,
}

#[allow(clippy::too_many_arguments)]
async fn event_loop<B: ratatui::backend::Backend>(
    terminal: &mut ratatui::Terminal<B>,
    mut state: State,
    mut theme: theme::Theme,
    spool: Spool,
    principal: Option<Principal>,
    pinned: PinnedKeys,
    gateways: warrant_protocol::keys::GatewayKeys,
    rescan: Duration,
    notify: warrant_store::config::Notify,
) -> Result<()>
where
    B::Error: Send + Sync + 'static,
{
    let (tx, mut rx) = mpsc::unbounded_channel::<Action>();
    let (_watcher, mut runner) = start_runner(&mut state, spool, principal, pinned, gateways, rescan, notify, &tx);
    runner.run(Effect::Scan);
    // The chain is verified once the first scan is in and drawn: the first frame with the
    // packet list does not wait behind a long chain's verification for the cores (its threads
    // would take both while the scan's result is folded in and drawn).
    let mut first_verify = FirstVerify::AfterScan;

    let mut events = EventStream::new();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    // The first rescan is one period away (an interval's first tick is at once, which would
    // start the chain's verification before the first scan, and then again after it).
    let mut rescan_timer = tokio::time::interval_at(tokio::time::Instant::now() + rescan, rescan);
    rescan_timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let mut sighup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;

    let assessor = Assessor::start(tx.clone());
    let mut dirty = true;
    let mut last_draw = Instant::now() - Duration::from_secs(1);
    let mut last_assess = Instant::now() - app::ASSESS_EVERY;
    // An assessment runs off the UI thread, one at a time.
    let mut assessing = false;
    loop {
        // Timed work runs here whenever it is due; the timers below only wake the loop. (Under
        // a stream of actions a timer's wake-up lags: tokio fires timers when the runtime turns
        // its driver, and a ready channel is taken first.)
        let now = Instant::now();
        // Bursts are coalesced into at most one frame per FRAME_EVERY. Actions keep being
        // handled while a frame waits, so it shows the newest state (a sleep before drawing
        // would hold a scan's result back by a whole frame, and draw the one before it).
        if dirty && now >= last_draw + FRAME_EVERY {
            let area = terminal.draw(|f| ui::render(&state, &theme, f))?.area;
            last_draw = Instant::now();
            // What the frame showed counts as seen: the sign dialog unlocks once its end has
            // been drawn, which the next frame shows.
            let before = state.mode.clone();
            app::update(&mut state, Action::Drawn { width: area.width, height: area.height });
            dirty = state.mode != before;
        }
        if first_verify == FirstVerify::AfterDraw && !dirty {
            first_verify = FirstVerify::Started;
            // Not forced: a verification of this same chain already under way is not queued
            // again.
            runner.run(Effect::VerifyChain { force: false });
        }
        runner.scan_if_due();
        // A scan's packets are drawn first; the models' assessment follows off the UI thread, at
        // once when the console is quiet, at most every ASSESS_EVERY while scans keep landing.
        if !assessing
            && state.assessment_due()
            && now >= last_assess + app::ASSESS_EVERY
            && let Some(job) = state.assess_job()
        {
            assessing = true;
            assessor.assess(job, &tx);
        }
        let at = |i: Instant| tokio::time::Instant::from_std(i);
        let draw_at = dirty.then(|| at(last_draw + FRAME_EVERY));
        let scan_at = runner.next_scan_at().map(at);
        let assess_at = (!assessing && state.assessment_due()).then(|| at(last_assess + app::ASSESS_EVERY));
        let wake = |t: Option<tokio::time::Instant>| async move {
            match t {
                Some(t) => tokio::time::sleep_until(t).await,
                None => std::future::pending().await,
            }
        };
        let first = tokio::select! {
            biased;
            () = wake(draw_at) => None,
            () = wake(scan_at) => None,
            () = wake(assess_at) => None,
            ev = events.next() => terminal_action(ev),
            Some(a) = rx.recv() => Some(a),
            _ = tick.tick() => Some(Action::Tick(now_secs())),
            _ = rescan_timer.tick() => Some(Action::SpoolChanged { chain: true }),
            _ = sigterm.recv() => Some(Action::Quit),
            _ = sighup.recv() => Some(Action::Quit),
        };
        // Drain whatever else is already queued before drawing once.
        let mut batch: Vec<Action> = first.into_iter().collect();
        while let Ok(a) = rx.try_recv() {
            batch.push(a);
        }
        for action in batch {
            runner.finished(&action);
            if first_verify == FirstVerify::AfterScan && matches!(action, Action::Scanned(_) | Action::ScanFailed(_)) {
                first_verify = FirstVerify::AfterDraw;
            }
            let assessed = matches!(action, Action::Assessed(_) | Action::AssessFailed(_));
            let is_tick = matches!(action, Action::Tick(_));
            // A change in the spool only asks for a scan; the scan's result is what is drawn.
            let quiet = matches!(action, Action::SpoolChanged { .. } | Action::ScanUnchanged);
            let effects = app::update(&mut state, action);
            if assessed {
                assessing = false;
                last_assess = Instant::now();
            }
            // A tick changes only ages and countdowns: redraw when any is shown.
            dirty |= !quiet && (!is_tick || state.tick_changes_screen());
            for effect in effects {
                if effect == Effect::Quit {
                    state.quit = true;
                }
                if let Effect::Theme(name) = &effect {
                    switch_theme(&mut theme, name, &tx);
                    dirty = true;
                }
                if let Effect::Edit { packet, text } = &effect {
                    // The event stream stops reading the terminal while the editor has it.
                    drop(events);
                    let text = edit(terminal, text).map_err(|e| format!("{e:#}"));
                    events = EventStream::new();
                    dirty = true;
                    let edited = Action::Edited {
                        packet_id: packet.id.clone(),
                        content_hash: packet.content_hash.clone(),
                        text,
                    };
                    for effect in app::update(&mut state, edited) {
                        runner.run(effect);
                    }
                }
                if let Effect::Pager(text) = &effect {
                    // The event stream stops reading the terminal while the pager has it.
                    drop(events);
                    if let Err(e) = page(terminal, text) {
                        app::update(&mut state, Action::Error(format!("pager: {e}")));
                    }
                    events = EventStream::new();
                    dirty = true;
                }
                runner.run(effect);
            }
        }
        if state.quit {
            break;
        }
    }
    Ok(())
}
