//! The agent hosts' commands: `warrant hook` (Claude Code, Codex) and `warrant mcp-gateway`, and
//! the spool they govern calls on.

use super::Failure;
use super::common::resolve_spool;
#[cfg(feature = "jetstream")]
use super::common::{jetstream_store, with_principal_copies};
use crate::protocol::keys::Principal;
#[cfg(feature = "jetstream")]
use crate::store::StoreLocation;
use crate::store::config::{self, Config};
use crate::store::key_files;
use crate::store::prelude::*;
use crate::store::spool::Spool;
use std::io;
use std::path::{Path, PathBuf};

/// `warrant mcp-gateway`'s arguments (read only by the gateway, which needs the `console`
/// feature's tokio).
#[cfg_attr(not(feature = "console"), allow(dead_code))]
pub(super) struct McpGatewayArgs {
    pub(super) agent: Option<String>,
    pub(super) notebook: Option<String>,
    pub(super) name: Option<String>,
    pub(super) wait: f64,
    pub(super) handshake_timeout: f64,
    pub(super) listen: Option<PathBuf>,
    pub(super) token_file: Option<PathBuf>,
    pub(super) signer: Option<Principal>,
    pub(super) command: Vec<std::ffi::OsString>,
    pub(super) http: Option<RemoteServer>,
}

/// `--url` with its headers (`--header 'NAME: VALUE'`, `--header-from-env NAME=VAR`,
/// `--bearer-from-env VAR`).
#[cfg_attr(not(feature = "console"), allow(dead_code))]
pub(super) struct RemoteServer {
    pub(super) url: String,
    pub(super) headers: Vec<(String, String)>,
}

/// Reads `--url` and its headers.
///
/// # Errors
/// A usage failure: a header that is not `NAME: VALUE` or `NAME=VAR`, or a variable that is not
/// set (the gateway does not start without the credentials it was told to send). No value is
/// ever shown.
pub(super) fn http_server(
    url: String,
    header: &[String],
    from_env: &[String],
    bearer: Option<&str>,
) -> Result<RemoteServer, Failure> {
    let mut headers = Vec::new();
    if let Some(var) = bearer {
        let token = std::env::var(var)
            .map_err(|_| Failure::usage(format!("--bearer-from-env {var}: {var} is not set (or not UTF-8)")))?;
        headers.push(("Authorization".to_owned(), format!("Bearer {}", token.trim())));
    }
    for h in header {
        let Some((name, value)) = h.split_once(':') else {
            return Err(Failure::usage("--header takes 'NAME: VALUE'"));
        };
        headers.push((name.trim().to_owned(), value.trim().to_owned()));
    }
    for h in from_env {
        let Some((name, var)) = h.split_once('=') else {
            return Err(Failure::usage(format!("--header-from-env takes NAME=VAR, not {h:?}")));
        };
        let value = std::env::var(var)
            .map_err(|_| Failure::usage(format!("--header-from-env {name}={var}: {var} is not set (or not UTF-8)")))?;
        headers.push((name.trim().to_owned(), value));
    }
    Ok(RemoteServer { url, headers })
}

/// `--sign-receipts`: the gateway user's own key from its configuration directory, loaded as the
/// principal's is (`WARRANT_PASSPHRASE_FILE` or the terminal for a protected key; an unprotected
/// key is fine for a service user). Its name is that configuration's principal name
/// (informational: a gateway's pin is matched by its key).
///
/// # Errors
/// A usage failure naming why the key cannot be loaded: the gateway does not start unsigned.
pub(super) fn gateway_key(config: Option<&Config>) -> Result<Principal, Failure> {
    let dir = config::config_dir();
    let path = dir.join(key_files::PRIVATE_KEY_FILE);
    let why = |e: String| Failure::usage(format!("--sign-receipts: {e}; the gateway does not start without its key"));
    if matches!(std::fs::symlink_metadata(&path), Err(e) if e.kind() == io::ErrorKind::NotFound) {
        return Err(why(key_files::KeyError::NoKey { dir }.to_string()));
    }
    let name = config.map_or_else(|| "mcp-gateway".to_owned(), Config::principal_name);
    let source = super::passphrase::passphrase_source();
    let prompt = format!("passphrase for {}: ", path.display());
    Principal::load_with(&path, &name, || super::passphrase::read_passphrase(&source, &prompt, &path))
        .map_err(|e| why(e.to_string()))
}

/// `warrant mcp-gateway --connect PATH` (`crate::gateway::connect`).
#[cfg(feature = "console")]
pub(super) fn mcp_connect(path: &Path) -> Result<u8, Failure> {
    crate::gateway::connect(path).map_err(|e| Failure { code: 1, message: e, closed_pipe: false })
}

#[cfg(not(feature = "console"))]
pub(super) fn mcp_connect(_path: &Path) -> Result<u8, Failure> {
    Err(Failure::usage("this build has no MCP gateway (built without the `console` feature)"))
}

/// `warrant mcp-gateway` (`crate::gateway`). A spool that cannot be resolved does not stop it:
/// every call is refused with the reason.
#[cfg(feature = "console")]
pub(super) fn mcp_gateway(spool: Result<Spool, String>, a: McpGatewayArgs) -> Result<u8, Failure> {
    let check = |what: &str, id: String| {
        if crate::protocol::packet::is_safe_id(&id) {
            Ok(id)
        } else {
            Err(Failure::usage(format!("{what} {id:?} is not a safe id (A-Z a-z 0-9 . _ : -)")))
        }
    };
    if !(a.wait.is_finite() && a.wait >= 0.0) {
        return Err(Failure::usage("--wait must be a number of seconds"));
    }
    if !(a.handshake_timeout.is_finite() && a.handshake_timeout > 0.0) {
        return Err(Failure::usage("--handshake-timeout must be a positive number of seconds"));
    }
    let cwd = std::env::current_dir().ok().map(|d| d.to_string_lossy().into_owned());
    let notebook = match a.notebook {
        Some(n) => check("--notebook", n)?,
        None => crate::protocol::calls::notebook_for_dir(cwd.as_deref().unwrap_or("/")),
    };
    // `--listen http://…` serves Streamable HTTP; any other value is a Unix socket's path.
    let listen_url = a.listen.as_ref().and_then(|l| l.to_str()).filter(|l| l.starts_with("http://")).map(str::to_owned);
    let token = match &a.token_file {
        Some(f) => {
            let text =
                std::fs::read_to_string(f).map_err(|e| Failure::usage(format!("--token-file {}: {e}", f.display())))?;
            let token = text.lines().next().unwrap_or("").trim().to_owned();
            if token.len() < 16 {
                return Err(Failure::usage(format!(
                    "--token-file {}: the token must be at least 16 characters",
                    f.display()
                )));
            }
            Some(token)
        }
        None => None,
    };
    let listen_http = match listen_url {
        Some(url) => Some(crate::gateway::HttpListen::parse(&url, token).map_err(Failure::usage)?),
        None if token.is_some() => return Err(Failure::usage("--token-file is for --listen http://…")),
        None => None,
    };
    let opts = crate::gateway::Options {
        spool,
        config_dir: config::config_dir(),
        agent: check("--agent", a.agent.unwrap_or_else(|| "mcp-gateway".into()))?,
        notebook,
        cwd,
        name: check(
            "--name",
            a.name.unwrap_or_else(|| match &a.http {
                Some(h) => crate::gateway::default_name_for_url(&h.url),
                None => crate::gateway::default_name(&a.command),
            }),
        )?,
        wait: std::time::Duration::from_secs_f64(a.wait.min(1e9)),
        handshake: std::time::Duration::from_secs_f64(a.handshake_timeout.min(1e9)),
        command: a.command,
        http: a.http.map(|h| crate::gateway::HttpServer { url: h.url, headers: h.headers }),
        listen: a.listen.filter(|_| listen_http.is_none()),
        listen_http,
        signer: a.signer.map(std::sync::Arc::new),
    };
    crate::gateway::run(opts).map_err(Failure::usage)
}

#[cfg(not(feature = "console"))]
pub(super) fn mcp_gateway(_spool: Result<Spool, String>, _a: McpGatewayArgs) -> Result<u8, Failure> {
    Err(Failure::usage("this build has no MCP gateway (built without the `console` feature)"))
}

/// The spool a hook or the gateway governs calls on: the directory spool as every command
/// resolves it, or on a JetStream store this host's replica, pulled, with a [`Follower`] that
/// keeps it live while it is held (`docs/distributed.md`, "Agents' hosts").
///
/// [`Follower`]: crate::store::replica::Follower
///
/// # Errors
/// The reason, for the hook's deny or the gateway's refusals.
#[cfg(feature = "jetstream")]
pub(super) fn governed_spool(
    spool_arg: Option<PathBuf>,
    replica: Option<PathBuf>,
    config: &Config,
) -> Result<(Spool, Option<crate::store::replica::Follower>), String> {
    match jetstream_store(spool_arg.as_ref(), config).map_err(|f| f.message)? {
        Some(StoreLocation::JetStream(url)) => {
            let dir = replica
                .or_else(|| crate::store::replica::default_dir(&url))
                .ok_or("no directory for the store's replica: pass --replica DIR")?;
            let (spool, _) = crate::store::replica::open(&url, &dir).map_err(|e| format!("{url}: {e}"))?;
            let follower =
                crate::store::replica::follow(&spool, |e| tracing::warn!("{e}")).map_err(|e| format!("{url}: {e}"))?;
            Ok((with_principal_copies(spool), Some(follower)))
        }
        _ => Ok((resolve_spool(spool_arg, config).map_err(|f| f.message)?, None)),
    }
}

/// [`governed_spool`] without JetStream: the directory spool.
#[cfg(not(feature = "jetstream"))]
pub(super) fn governed_spool(
    spool_arg: Option<PathBuf>,
    _replica: Option<PathBuf>,
    config: &Config,
) -> Result<(Spool, Option<()>), String> {
    Ok((resolve_spool(spool_arg, config).map_err(|f| f.message)?, None))
}

/// `warrant hook HOST`: the answer printed, its code (0 or 2) returned; a configuration that
/// cannot be read denies every event in the host's format.
pub(super) fn hook_cmd(
    spool_arg: Option<PathBuf>,
    store: Option<String>,
    replica: Option<PathBuf>,
    host: crate::hook::Host,
    agent: Option<String>,
    notebook: Option<String>,
    wait: f64,
) -> u8 {
    let mut follower = None;
    let opts = (|| -> Result<crate::hook::HookOptions, String> {
        let config = Config::load().map_err(|e| e.to_string())?.with_store(store);
        let (spool, kept) = governed_spool(spool_arg, replica, &config)?;
        follower = kept;
        crate::hook::HookOptions::new(host, spool, agent, notebook, wait)
    })();
    if let Ok(o) = &opts {
        crate::hook::start_watchdog(o.wait);
    }
    let answer = crate::hook::run_stdin(host, opts.as_ref().map_err(String::as_str));
    // The follower stops before the answer is written.
    #[cfg(feature = "jetstream")]
    drop(follower);
    #[cfg(not(feature = "jetstream"))]
    let _ = follower;
    crate::hook::write_answer(&answer)
}

/// `warrant-hook`, the hooks' own binary (`docs/integrations.md`, The hooks' binary): the command
/// line of `warrant`, of which it runs only `hook HOST` on a directory spool, in a process whose
/// code reaches neither the console, the gateway, the other commands nor the store's JetStream
/// client (the spool is opened with [`Spool::open_directory`], so nothing here reaches a
/// replica's store: `warrant_store::upstream`), so it starts like a small program. Anything
/// else — another command, `--help`, `--version`, a command line clap refuses, a JetStream
/// store or a replica's directory (which need the store's client) — is handed to the `warrant`
/// beside it, with the same arguments and stdin (`exec`).
/// When that cannot run, the call is denied: exit 2, the reason on stderr.
#[must_use]
pub fn hook_main() -> std::process::ExitCode {
    use clap::Parser as _;
    let Ok(super::HookCli { globals, command: super::HookCommand::Hook(args) }) = super::HookCli::try_parse() else {
        return exec_warrant();
    };
    let super::HookArgs { host, agent, notebook, wait } = args;
    let super::GlobalArgs { spool, store, replica: _ } = globals;
    let spool_arg = if store.is_some() { None } else { spool };
    let opts = (|| -> Result<Option<crate::hook::HookOptions>, String> {
        let config = Config::load().map_err(|e| e.to_string())?.with_store(store);
        #[cfg(feature = "jetstream")]
        if let Some(StoreLocation::JetStream(_)) =
            super::common::jetstream_store(spool_arg.as_ref(), &config).map_err(|f| f.message)?
        {
            return Ok(None);
        }
        // Opened as a directory only: a replica (whose store's client this binary does not link)
        // is handed to `warrant`.
        let mut replica = false;
        let spool = super::common::resolve_spool_with(spool_arg, &config, |root| {
            Spool::open_directory(root).inspect_err(|e| replica = matches!(e, crate::store::StoreError::Replica { .. }))
        });
        if replica {
            return Ok(None);
        }
        let spool = spool.map_err(|f| f.message)?;
        crate::hook::HookOptions::new(host, spool, agent, notebook, wait).map(Some)
    })();
    let Some(opts) = opts.transpose() else { return exec_warrant() };
    if let Ok(o) = &opts {
        crate::hook::start_watchdog(o.wait);
    }
    let answer = crate::hook::run_stdin(host, opts.as_ref().map_err(String::as_str));
    std::process::ExitCode::from(crate::hook::write_answer(&answer))
}

/// Replaces this process with the `warrant` beside it, given this process's arguments; returns
/// (exit 2, the reason on stderr) only when that cannot be done.
fn exec_warrant() -> std::process::ExitCode {
    use std::os::unix::process::CommandExt as _;
    let error = match std::env::current_exe() {
        Ok(exe) => {
            let full = exe.with_file_name("warrant");
            let e = std::process::Command::new(&full).args(std::env::args_os().skip(1)).exec();
            format!("{}: {e}", full.display())
        }
        Err(e) => format!("this program's path: {e}"),
    };
    let answer = crate::hook::Answer::block(format!(
        "warrant-hook could not hand this to warrant ({error}); the call is denied"
    ));
    std::process::ExitCode::from(crate::hook::write_answer(&answer))
}
