//! `warrant console` and `warrant demo`: the terminal console (feature `console`).

use super::Failure;
#[cfg(feature = "console")]
use super::common::load_principal_from;
#[cfg(feature = "console")]
use crate::protocol::keys::Principal;
#[cfg(feature = "console")]
use crate::store::config;
use crate::store::config::Config;
#[cfg(feature = "console")]
use crate::store::prelude::*;
use crate::store::spool::Spool;
use std::path::PathBuf;
#[cfg(feature = "console")]
use std::time::Duration;

/// What `warrant demo` runs with instead of the principal's configuration: a throwaway,
/// unprotected key in its own temporary configuration directory (with its pinned keys and
/// checkpoint copies), so the demo never prompts and leaves nothing in the real configuration.
#[cfg_attr(not(feature = "console"), allow(dead_code))]
pub(super) struct DemoRun {
    pub(super) interval: f64,
    pub(super) config_dir: PathBuf,
}

#[cfg_attr(not(feature = "console"), allow(dead_code))]
impl DemoRun {
    /// The demo's principal: a fixed name, never the principal's own (`WARRANT_PRINCIPAL`).
    pub(super) const PRINCIPAL: &'static str = "principal";
}

#[cfg(feature = "console")]
pub(super) fn run_console(
    spool: Spool,
    config: &Config,
    read_only: bool,
    theme: Option<String>,
    demo: Option<DemoRun>,
) -> Result<u8, Failure> {
    let config_dir = demo.as_ref().map_or_else(config::config_dir, |d| d.config_dir.clone());
    // The key is opened (and its passphrase asked) before the console takes the terminal; it
    // stays in memory for the console's life and is wiped when the console ends.
    let principal = match (&demo, read_only) {
        (_, true) => None,
        (Some(d), false) => Some(Principal::load_or_create(&d.config_dir, DemoRun::PRINCIPAL)?.0),
        (None, false) => Some(load_principal_from(&config_dir, &config.principal_name())?.0),
    };
    let options = crate::console::Options {
        spool,
        principal,
        read_only,
        theme: theme.or_else(|| config.theme.clone()),
        rescan: Duration::from_secs(config.rescan_seconds.unwrap_or(5).max(1)),
        // The demo's simulated agents ring and count in the title, but never run the
        // principal's notify command (their packets would reach a phone).
        notify: crate::store::config::Notify {
            command: if demo.is_some() { None } else { config.notify.command.clone() },
            ..config.notify.clone()
        },
        demo_interval: demo.map(|d| d.interval),
        config_dir,
        mouse: config.console.mouse,
    };
    crate::console::run(options).map_err(|e| Failure::usage(format!("{e:#}")))?;
    Ok(0)
}

#[cfg(not(feature = "console"))]
pub(super) fn run_console(
    _spool: Spool,
    _config: &Config,
    _read_only: bool,
    _theme: Option<String>,
    _demo: Option<DemoRun>,
) -> Result<u8, Failure> {
    Err(Failure::usage("this build has no console (built without the `console` feature)"))
}
