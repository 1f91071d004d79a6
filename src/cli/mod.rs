//! The `warrant` command line (`docs/cli.md`). `src/main.rs` calls [`main`].
//!
//! Exit codes: 0 success; 1 a verification failed or a request was refused by warrant (already
//! decided, broken chain, unknown packet); 2 usage or I/O errors. `propose --wait` exits 0 when
//! approved, 3 when refused and 4 on timeout.
//!
//! The clap definitions are in `args.rs` and the helpers many commands share in `common.rs`;
//! each group of commands has its own file (`docs/architecture.md`).

use crate::store::prelude::*;
mod args;
mod common;
mod console;
mod controls;
mod decide;
mod grants;
mod hosts;
mod keys;
mod passphrase;
mod propose;
mod store;
mod verify;

pub use args::{
    AgentAction, CheckpointAction, Cli, Command, GlobalArgs, GrantArgs, GrantsAction, HookArgs, HookCli, HookCommand,
    KeysAction, Review, TrustAction,
};
pub use common::{load_policies, load_principal, write_json_inert};
pub use hosts::hook_main;
pub use verify::verify_path;

#[cfg(feature = "jetstream")]
use self::common::{jetstream_not_yet, jetstream_store};
use self::common::{load_pinned, print_json, resolve_new_spool, resolve_spool, set_aside_torn_tail};
use self::console::{DemoRun, run_console};
use self::controls::{agent_cmd, trust_cmd};
use self::decide::{decide_batch_cli, decide_cli, list};
use self::grants::grants_cmd;
use self::hosts::{McpGatewayArgs, gateway_key, governed_spool, hook_cmd, http_server, mcp_connect, mcp_gateway};
use self::keys::keys_cmd;
use self::propose::{ProposeOptions, ProposeTo, check_preconditions, propose};
#[cfg(feature = "jetstream")]
use self::store::init_store;
use self::store::{checkpoint_forget, init_shared_spool, init_single_spool, migrate};
use self::verify::{audit_cmd, verify, verify_audit, verify_since_checkpoint};
#[cfg(feature = "jetstream")]
use self::verify::{export_store, verify_store};
use crate::protocol::chain::{self, VerifyOptions};
use crate::protocol::decision::Verdict;
use crate::protocol::graduation::{SourceType, receipt::ReceiptOutcome};
use crate::protocol::keys::PinnedKeys;
#[cfg(feature = "jetstream")]
use crate::store::StoreLocation;
use crate::store::chain_file;
use crate::store::config::{self, Config};
use crate::store::spool::{self, Spool};
use clap::Parser;
use std::io::{self, Write as _};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// Exit code: verification failed, or warrant refused the request.
pub const EXIT_INVALID: u8 = 1;
/// Exit code: usage or I/O error.
pub const EXIT_USAGE: u8 = 2;
/// Exit code of `propose --wait` when the principal refused.
pub const EXIT_REFUSED: u8 = 3;
/// Exit code of `propose --wait` when no decision came in time.
pub const EXIT_TIMEOUT: u8 = 4;
/// `check-preconditions`: the packet is still pending (no decision yet), so nothing may run.
pub const EXIT_PENDING: u8 = 5;
/// `propose --wait`: the packet expired undecided.
pub const EXIT_EXPIRED: u8 = 6;
/// `propose --wait`: the principal killed the agent (its stop signal), so nothing will be approved.
pub const EXIT_STOPPED: u8 = 7;
/// `propose --wait`: the agent is quarantined (`agent quarantine`); its packets are blocked until
/// it is released.
pub const EXIT_QUARANTINED: u8 = 8;
/// `propose --wait`: approved as corrected: the corrected action is printed on stdout (one line
/// of JSON), and that is what may run, not what was proposed.
pub const EXIT_CORRECTED: u8 = 9;
/// Standard output was closed before the command wrote everything (`warrant export | head`): the
/// command ends quietly with the code a shell gives a process ended by `SIGPIPE` (128 + 13),
/// never 0: a reader that stopped early did not see the answer, and `check-preconditions` that
/// could not say "no" must not be read as "yes".
pub const EXIT_CLOSED_PIPE: u8 = 141;

/// An error with the exit code it maps to.
#[derive(Debug)]
pub struct Failure {
    /// The exit code.
    pub code: u8,
    /// The message for stderr.
    pub message: String,
    /// The failure is a closed standard output (`warrant export | head`): the reader has what
    /// it wanted, so the command ends quietly with 0, as Unix tools do.
    pub closed_pipe: bool,
}

impl Failure {
    /// A usage failure (exit 2): `message` is a sentence or a typed error shown as one.
    fn usage(message: impl std::fmt::Display) -> Self {
        Self { code: EXIT_USAGE, message: message.to_string(), closed_pipe: false }
    }
    /// An invalid-input failure (exit 3).
    fn invalid(message: impl std::fmt::Display) -> Self {
        Self { code: EXIT_INVALID, message: message.to_string(), closed_pipe: false }
    }
}

impl<E: std::error::Error + 'static> From<E> for Failure {
    fn from(e: E) -> Self {
        let closed = (&e as &(dyn std::error::Error + 'static))
            .downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe);
        Self { code: EXIT_USAGE, message: e.to_string(), closed_pipe: closed }
    }
}

/// Runs the command line and returns the process exit code.
#[must_use]
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    // A hook answers one call while the agent waits: no log file and no writer thread to start
    // and join (the packet it publishes is its record).
    let hook = matches!(cli.command, Some(Command::Hook(_)));
    let _log = if hook { None } else { init_logging() };
    // A hook keeps its own rule: every panic, a closed stdout's included, is caught and denies
    // with exit 2 (`crate::hook`), never 141, which the hosts would read as "proceed".
    if !hook {
        quiet_on_a_closed_pipe();
    }
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(f) if f.closed_pipe => ExitCode::from(EXIT_CLOSED_PIPE),
        Err(f) => {
            // Messages can quote agent-written text: never let it drive the terminal.
            eprintln!("warrant: {}", error_lines(&f.message));
            ExitCode::from(f.code)
        }
    }
}

/// `println!` panics when standard output is a closed pipe (Rust ignores `SIGPIPE`, and this
/// crate has no `unsafe` to restore it): such a panic ends the process quietly with
/// [`EXIT_CLOSED_PIPE`] instead of a backtrace and 101. Every other panic is reported as before.
fn quiet_on_a_closed_pipe() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(i32::from(EXIT_CLOSED_PIPE));
        }
        report(info);
    }));
}

/// An error message as printed after `warrant: `: each of its lines made inert (messages quote
/// agent-written text, which must never drive the terminal), the lines kept (a TOML diagnostic
/// points at its column on the line below), the lines after the first indented so none can pass
/// for a message of its own; at most 60 lines of 4,000 characters.
fn error_lines(message: &str) -> String {
    let mut lines =
        message.trim_end().split('\n').map(|l| crate::protocol::text::inert(l.trim_end_matches('\r'), 4000));
    let mut out = lines.next().unwrap_or_default();
    for (n, l) in lines.enumerate() {
        if n == 59 {
            out.push_str("\n  …");
            break;
        }
        out.push_str("\n  ");
        out.push_str(&l);
    }
    out
}

/// Lines of log waiting for the logging thread at most (the console and the gateway log more
/// than a command, but never a burst this long between two writes of the thread).
const LOG_LINES: usize = 1024;

/// Logs go to `<data dir>/warrant/warrant.log` (filter with `WARRANT_LOG`), never to the
/// terminal.
fn init_logging() -> Option<tracing_appender::non_blocking::WorkerGuard> {
    let dir = directories::BaseDirs::new()?.data_dir().join("warrant");
    std::fs::create_dir_all(&dir).ok()?;
    let appender = tracing_appender::rolling::never(&dir, "warrant.log");
    // A command logs a few lines at most: the default buffer of 128,000 lines is a channel of
    // 128,000 slots allocated and touched at every start (about 4 MB, 1.5 ms of a `refuse`).
    // A full buffer drops lines (lossy), never blocks the command.
    let (writer, guard) =
        tracing_appender::non_blocking::NonBlockingBuilder::default().buffered_lines_limit(LOG_LINES).finish(appender);
    let filter = tracing_subscriber::EnvFilter::try_from_env("WARRANT_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,rmcp=warn"));
    tracing_subscriber::fmt().with_writer(writer).with_ansi(false).with_env_filter(filter).try_init().ok()?;
    Some(guard)
}

/// Runs a parsed command line.
///
/// # Errors
/// A [`Failure`] with its exit code.
pub fn run(cli: Cli) -> Result<u8, Failure> {
    let GlobalArgs { spool: spool_flag, store, replica } = cli.globals;
    if let Some(Command::Hook(HookArgs { host, agent, notebook, wait })) = cli.command {
        // Before anything that could fail with a code the host reads as "proceed".
        let spool = if store.is_some() { None } else { spool_flag };
        return Ok(hook_cmd(spool, store, replica, host, agent, notebook, wait));
    }
    if let Some(Command::McpGateway {
        agent,
        notebook,
        name,
        wait,
        handshake_timeout,
        listen,
        token_file,
        connect,
        sign_receipts,
        url,
        header,
        header_from_env,
        bearer_from_env,
        command,
    }) = cli.command
    {
        let http = match url {
            Some(url) if command.is_empty() => {
                Some(http_server(url, &header, &header_from_env, bearer_from_env.as_deref())?)
            }
            Some(_) => return Err(Failure::usage("--url takes no COMMAND: the server is the one at URL")),
            None => None,
        };
        if let Some(path) = connect {
            if !command.is_empty() {
                return Err(Failure::usage("--connect takes no COMMAND: the gateway at PATH runs the server"));
            }
            return mcp_connect(&path);
        }
        // A configuration or spool it cannot use does not stop the gateway: every call is refused
        // with the reason, which the agent reads. A signing key it cannot load does.
        let config = Config::load().map(|c| c.with_store(store.clone())).map_err(|e| e.to_string());
        let signer = if sign_receipts { Some(gateway_key(config.as_ref().ok())?) } else { None };
        let spool_arg = if store.is_some() { None } else { spool_flag };
        // On a JetStream store, the gateway works on this host's replica, kept live while it runs.
        let governed = config.and_then(|c| governed_spool(spool_arg, replica, &c));
        let (spool, _follower) = match governed {
            Ok((spool, follower)) => (Ok(spool), follower),
            Err(e) => (Err(e), None),
        };
        return mcp_gateway(
            spool,
            McpGatewayArgs {
                agent,
                notebook,
                name,
                wait,
                handshake_timeout,
                listen,
                token_file,
                signer,
                command,
                http,
            },
        );
    }
    if let Some(Command::Demo { read_only, theme, interval }) = cli.command {
        // The demo reads none of the principal's spool, store or configuration (not
        // WARRANT_SPOOL, WARRANT_STORE, WARRANT_CONFIG, WARRANT_PRINCIPAL): its spool, key and
        // configuration are its own, in a temporary directory removed when it ends.
        return demo_cmd(read_only, theme, interval);
    }
    let config = Config::load().map_err(Failure::usage)?.with_store(store.clone());
    // `--store` (or WARRANT_STORE) wins over `--spool` (or WARRANT_SPOOL).
    let spool_arg = if store.is_some() { None } else { spool_flag.clone() };
    let command = cli.command.unwrap_or(Command::Console { read_only: false, theme: None });
    // On JetStream, the principal's commands run on this host's replica of the store
    // (`store::replica`), pulled first; the console keeps it live with a follower.
    #[cfg(feature = "jetstream")]
    let mut _follower = None;
    #[cfg(feature = "jetstream")]
    let (spool_arg, config) = match jetstream_store(spool_arg.as_ref(), &config)? {
        None => (spool_arg, config),
        Some(at) => match (command, at) {
            (Command::Verify { path: None, json, audit: None, since_checkpoint: false }, at) => {
                return verify_store(&at, json);
            }
            (Command::Export, at) => return export_store(&at),
            (Command::Migrate { from, to, replicas }, _) => return migrate(&from, &to, replicas),
            (Command::Propose { class, agent, summary, payload, id, wait, expires }, StoreLocation::JetStream(url)) => {
                let opts = ProposeOptions { payload: payload.as_deref(), id, wait, expires: expires.as_deref() };
                return propose(ProposeTo::Store(&url), &class, &agent, &summary, &opts);
            }
            // What needs no spool runs without the store: the agent's host pins the principal's
            // key before it can read anything, and a key is made before the store exists.
            (
                c @ (Command::Completions { .. }
                | Command::Man
                | Command::Eval
                | Command::Keys {
                    action:
                        None
                        | Some(
                            KeysAction::Init { .. }
                            | KeysAction::Show
                            | KeysAction::Export
                            | KeysAction::Pin { .. }
                            | KeysAction::Unpin { .. },
                        ),
                }),
                _,
            ) => return run_command(c, spool_arg, None, config),
            (Command::Init { agents_group: None, dir: None, replicas }, at) => {
                return init_store(&at, replicas.unwrap_or(1));
            }
            (Command::GenerateSpool { .. } | Command::Setup { .. } | Command::Init { .. }, at) => {
                return Err(Failure::usage(format!(
                    "the spool is on JetStream ({at}): `demo`, `generate-spool`, `setup` and `init --agents-group` run \
                     on a directory spool only (`init` alone creates the store; docs/distributed.md)"
                )));
            }
            (command, StoreLocation::JetStream(url)) => {
                let dir = replica
                    .clone()
                    .or_else(|| crate::store::replica::default_dir(&url))
                    .ok_or_else(|| Failure::usage("no directory for the store's replica: pass --replica DIR"))?;
                let (spool, pulled) =
                    crate::store::replica::open(&url, &dir).map_err(|e| Failure::usage(format!("{url}: {e}")))?;
                tracing::info!(store = %url, replica = %dir.display(), records = pulled.records, messages = pulled.messages, "pulled");
                // A host with the principal's key writes the decisions rebuilt from the chain to
                // the bucket (their signer may have died before it did): those the pull rebuilt,
                // and those the command rebuilds. An agent's host, whose permissions refuse
                // writing decisions, leaves them.
                let principals =
                    crate::store::config::config_dir().join(crate::store::key_files::PRIVATE_KEY_FILE).is_file();
                let publish_rebuilt = |spool: &Spool| {
                    if !principals {
                        return;
                    }
                    if let Err(e) = crate::store::replica::publish_rebuilt(spool) {
                        eprintln!(
                            "warrant: {url}: decisions rebuilt from the chain are not in the bucket yet ({e}); the next command writes them"
                        );
                    }
                };
                publish_rebuilt(&spool);
                if matches!(command, Command::Console { .. }) {
                    let follower = crate::store::replica::follow(&spool, |e| tracing::warn!("{e}"))
                        .map_err(|e| Failure::usage(format!("{url}: {e}")))?;
                    _follower = Some(follower);
                }
                let mut config = config;
                config.store = None;
                let spool = self::common::with_principal_copies(spool);
                let after = spool.clone();
                let code = run_command(command, Some(dir), Some(spool), config);
                publish_rebuilt(&after);
                return code;
            }
            (_, at) => return Err(jetstream_not_yet(&at)),
        },
    };
    run_command(command, spool_arg, None, config)
}

/// Runs `command` on the spool `spool_arg` names (or the configured one), or on `opened`, the
/// replica already opened for it.
///
/// # Errors
/// A [`Failure`] with its exit code.
fn run_command(
    command: Command,
    spool_arg: Option<PathBuf>,
    opened: Option<Spool>,
    config: Config,
) -> Result<u8, Failure> {
    // `opened`: the replica a JetStream store's command was pulled into. The command's spool is
    // that one, with its connection, not opened (and connected) again.
    let resolve_spool = |arg: Option<PathBuf>, config: &Config| match &opened {
        Some(spool) if arg.as_deref() == Some(spool.root()) => Ok(spool.clone()),
        _ => resolve_spool(arg, config),
    };
    match command {
        Command::Console { read_only, theme } => {
            let spool = resolve_spool(spool_arg, &config)?;
            run_console(spool, &config, read_only, theme, None)
        }
        Command::Demo { .. } => unreachable!("the demo runs before the configuration is read"),
        Command::Propose { class, agent, summary, payload, id, wait, expires } => {
            let spool = resolve_spool(spool_arg, &config)?;
            let opts = ProposeOptions { payload: payload.as_deref(), id, wait, expires: expires.as_deref() };
            propose(ProposeTo::Directory(&spool), &class, &agent, &summary, &opts)
        }
        Command::Approve { ids, reason, correct, review, grant } => {
            // The correction is read (and must be JSON) before anything else.
            let correction = correct.as_deref().map(decide::read_correction).transpose()?;
            let spool = resolve_spool(spool_arg, &config)?;
            set_aside_torn_tail(&spool)?;
            approve_cmd(&spool, &config, ids, reason, correction, review, grant)
        }
        Command::Refuse { ids, reason, review } => {
            let spool = resolve_spool(spool_arg, &config)?;
            set_aside_torn_tail(&spool)?;
            match ids.as_slice() {
                [id] => decide_cli(&spool, &config, id, Verdict::Refuse, Some(&reason), &review, decide::With::Nothing),
                _ => decide_batch_cli(&spool, &config, &ids, Verdict::Refuse, Some(&reason), &review),
            }
        }
        Command::List { json, wide } => {
            let spool = resolve_spool(spool_arg, &config)?;
            list(&spool, json, wide)
        }
        Command::Verify { path, json, audit: Some(file), .. } => {
            let spool = match path {
                Some(p) => Spool::new(p),
                None => resolve_spool(spool_arg, &config)?,
            };
            verify_audit(&spool, &file, json)
        }
        Command::Verify { path, json, audit: None, since_checkpoint } => {
            let path = match path {
                Some(p) if std::fs::symlink_metadata(&p).is_err() => {
                    return Err(Failure::usage(format!(
                        "no spool or chain file at {}: check the path (a spool's directory, or a chain.jsonl)",
                        p.display()
                    )));
                }
                Some(p) => p,
                None => resolve_spool(spool_arg, &config)?.root().to_owned(),
            };
            if since_checkpoint { verify_since_checkpoint(&path, json) } else { verify(&path, json) }
        }
        Command::Audit { json, since, agent } => {
            let spool = resolve_spool(spool_arg, &config)?;
            audit_cmd(&spool, json, since.as_deref(), agent)
        }
        Command::Migrate { from, to, replicas } => migrate(&from, &to, replicas),
        Command::Export => {
            let spool = resolve_spool(spool_arg, &config)?;
            export_cmd(&spool)
        }
        Command::GenerateSpool { records, pending, decision_every, agents } => {
            // A generator of test spools makes the spool it fills.
            let spool = resolve_new_spool(spool_arg, &config)?;
            generate_spool_cmd(&spool, &config, records, pending, decision_every, agents)
        }
        Command::Keys { action } => keys_cmd(&config, spool_arg, action.unwrap_or(KeysAction::Show)),
        Command::Completions { shell } => completions_cmd(shell),
        Command::Man => man_cmd(),
        Command::Hook(_) => Err(Failure::usage("internal error: hook handled above")),
        Command::Setup { host, mcp: true, undo, check, project: _, user, print, dir, wait: _ } => {
            use crate::mcp_setup::McpAction;
            let spool = resolve_new_spool(spool_arg, &config)?;
            let action = match (undo, check) {
                (true, _) => McpAction::Undo,
                (_, true) => McpAction::Check,
                _ => McpAction::Wrap,
            };
            crate::mcp_setup::setup_mcp(host, user, dir.as_deref(), print, action, spool.root()).map_err(Failure::usage)
        }
        Command::Setup { host, mcp: false, undo: _, check: _, project: _, user, print, dir, wait } => {
            use crate::mcp_setup::McpHost;
            let host = match host {
                McpHost::ClaudeCode => crate::hook::Host::ClaudeCode,
                McpHost::Codex => crate::hook::Host::Codex,
                other => {
                    return Err(Failure::usage(format!(
                        "{} has no hooks: `warrant setup {0} --mcp` puts its MCP servers behind warrant",
                        clap::ValueEnum::to_possible_value(&other)
                            .map_or_else(String::new, |v| v.get_name().to_owned())
                    )));
                }
            };
            // The hooks name the spool; they refuse every call until it exists.
            let spool = resolve_new_spool(spool_arg, &config)?;
            crate::setup::setup(
                host,
                &crate::setup::SetupOptions { user, print, dir, wait, spool: spool.root().to_owned() },
            )
            .map_err(Failure::usage)
        }
        Command::Init { agents_group: Some(group), dir, replicas: None } => {
            let spool = resolve_new_spool(dir.or(spool_arg), &config)?;
            init_shared_spool(&spool, &group)
        }
        Command::Init { agents_group: None, dir, replicas: None } => {
            let spool = resolve_new_spool(dir.or(spool_arg), &config)?;
            init_single_spool(&spool)
        }
        Command::Init { replicas: Some(_), .. } => Err(Failure::usage(
            "`init --replicas N` creates a JetStream store: give it with --store nats://HOST:PORT/NAME (or WARRANT_STORE)",
        )),
        Command::Grants { action } => {
            let spool = resolve_spool(spool_arg, &config)?;
            set_aside_torn_tail(&spool)?;
            grants_cmd(&spool, &config, action)
        }
        Command::Checkpoint { action: CheckpointAction::Forget { spool, yes } } => {
            let spool = resolve_spool(spool.or(spool_arg), &config)?;
            checkpoint_forget(&spool, yes)
        }
        Command::Trust { action } => {
            let spool = resolve_spool(spool_arg, &config)?;
            trust_cmd(&spool, &config, action.unwrap_or(TrustAction::Show { json: false }))
        }
        Command::Agent { action } => {
            let spool = resolve_spool(spool_arg, &config)?;
            set_aside_torn_tail(&spool)?;
            agent_cmd(&spool, &config, action)
        }
        Command::McpGateway { .. } => Err(Failure::usage("internal error: mcp-gateway handled above")),
        Command::Eval => {
            let spool = resolve_spool(spool_arg, &config).ok();
            eval_cmd(spool)
        }
        Command::Receipt { class, outcome, agent, packet, source_type, note } => {
            let spool = resolve_spool(spool_arg, &config)?;
            receipt_cmd(&spool, class, outcome, agent, packet, source_type, note)
        }
        Command::CheckPreconditions { packet, json } => {
            let spool = resolve_spool(spool_arg, &config)?;
            check_preconditions(&spool, &packet, json)
        }
        Command::WellKnown => {
            let policies = load_policies(resolve_spool(spool_arg, &config).ok().as_ref())?;
            print_json(&crate::protocol::graduation::discovery_document(&policies))?;
            Ok(0)
        }
    }
}

/// `warrant demo`: the console on a temporary spool with simulated agents publishing every
/// `interval` seconds, signing with a throwaway key made in the same temporary directory. Nothing
/// of the principal's (spool, store, configuration, key, environment variables) is read or
/// written; the directory is removed when the console ends.
fn demo_cmd(read_only: bool, theme: Option<String>, interval: f64) -> Result<u8, Failure> {
    let dir = tempfile::Builder::new().prefix("warrant-demo-").tempdir()?;
    let demo_config = dir.path().join(".config");
    let spool = Spool::new(dir.path().to_owned()).with_checkpoint_copies(demo_config.join("checkpoints"));
    let demo = DemoRun { interval: interval.max(0.05), config_dir: demo_config };
    let code = run_console(spool, &Config::default(), read_only, theme, Some(demo))?;
    drop(dir);
    Ok(code)
}

/// `warrant approve`: signs the approval of one packet (with the grant `--scope` asks for) or of a
/// batch.
fn approve_cmd(
    spool: &Spool,
    config: &Config,
    ids: Vec<String>,
    reason: Option<String>,
    correction: Option<serde_json::Value>,
    review: Review,
    grant: GrantArgs,
) -> Result<u8, Failure> {
    let now = time::OffsetDateTime::now_utc();
    let scope = crate::protocol::grant::ScopeRequest::parse(&grant.scope, now).map_err(Failure::usage)?;
    let options = crate::protocol::grant::GrantOptions {
        until: grant
            .until
            .as_deref()
            .map(|t| crate::protocol::grant::parse_until(t, now))
            .transpose()
            .map_err(Failure::usage)?,
        max_uses: grant.uses,
        confirm_pattern: grant.confirm_pattern.clone(),
        reason: reason.clone(),
    };
    let grant = (scope != crate::protocol::grant::ScopeRequest::Once).then_some((scope, options));
    if let Some(corrected) = correction {
        return match (ids.as_slice(), grant) {
            ([id], None) => {
                let with = decide::With::Correction(corrected);
                decide_cli(spool, config, id, Verdict::Approve, reason.as_deref(), &review, with)
            }
            ([_], Some(_)) => Err(Failure::usage(
                "--correct approves the corrected call once: a grant (--scope) covers calls as proposed; nothing was signed",
            )),
            _ => Err(Failure::usage("--correct approves one packet: give one id; nothing was signed")),
        };
    }
    match (ids.as_slice(), grant) {
        ([id], grant) => {
            let with = grant.as_ref().map_or(decide::With::Nothing, decide::With::Grant);
            decide_cli(spool, config, id, Verdict::Approve, reason.as_deref(), &review, with)
        }
        (_, Some(_)) => Err(Failure::usage(
            "--scope grants with one packet's approval: approve the others without it, or one at a time",
        )),
        (_, None) => decide_batch_cli(spool, config, &ids, Verdict::Approve, reason.as_deref(), &review),
    }
}

/// `warrant export`: the chain as an export envelope, on stdout.
fn export_cmd(spool: &Spool) -> Result<u8, Failure> {
    let file = chain_file::read_chain(&spool.chain_path())?;
    let pinned = load_pinned()?;
    let envelope = chain::export(
        file.records,
        VerifyOptions { pinned: Some(&pinned), strict_signatures: true },
        &crate::protocol::clock::now_rfc3339(),
    );
    print_json(&envelope)?;
    Ok(0)
}

/// `warrant generate-spool`: fills `spool` with signed records and pending packets, for scale tests.
fn generate_spool_cmd(
    spool: &Spool,
    config: &Config,
    records: u64,
    pending: u64,
    decision_every: u64,
    agents: u64,
) -> Result<u8, Failure> {
    let (principal, _) = load_principal(config)?;
    let spec = crate::scale::GenerateSpec { records, pending, decision_every, agents };
    let started = Instant::now();
    let made = crate::scale::generate(spool, &principal, &spec, time::OffsetDateTime::now_utc())
        .map_err(|e| Failure::usage(format!("{}: {e}", spool.root().display())))?;
    println!(
        "{}: {} records ({} signed decisions, {} bytes), {} pending packets, head {} in {:.1} s",
        spool.root().display(),
        made.records,
        made.decisions,
        made.bytes,
        made.pending,
        made.head.as_deref().unwrap_or("null"),
        started.elapsed().as_secs_f64()
    );
    Ok(0)
}

/// `warrant completions`: the shell's completion script, on stdout.
fn completions_cmd(shell: clap_complete::Shell) -> Result<u8, Failure> {
    use clap::CommandFactory as _;
    // Made in memory first: `clap_complete::generate` panics when its writer fails, and a
    // reader that closes the pipe early (`warrant completions bash | head -1`) is no failure.
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "warrant", &mut script);
    let mut out = io::stdout().lock();
    out.write_all(&script)?;
    out.flush()?;
    Ok(0)
}

/// `warrant man`: the manual page, on stdout.
fn man_cmd() -> Result<u8, Failure> {
    use clap::CommandFactory as _;
    let mut out = io::stdout().lock();
    clap_mangen::Man::new(Cli::command()).render(&mut out)?;
    out.flush()?;
    Ok(0)
}

/// `warrant eval`: answers the gate requests on stdin, one answer a line on stdout, with the
/// evidence of `spool`'s verified chain.
fn eval_cmd(spool: Option<Spool>) -> Result<u8, Failure> {
    let policies = load_policies(spool.as_ref())?;
    // The gates read the evidence of the spool's verified chain, as the console does
    // (docs/eval.md, "Evidence from the spool"); unreadable pinned keys fail it closed.
    let evaluator = match spool {
        Some(spool) => crate::eval::Evaluator::new(policies)
            .with_spool(spool, PinnedKeys::load(&config::config_dir()).map_err(|e| e.to_string()))
            .with_gateway_keys(crate::protocol::keys::GatewayKeys::load(&config::config_dir()).unwrap_or_default()),
        None => crate::eval::Evaluator::new(policies),
    };
    let stdout = io::stdout().lock();
    // Answers go out in chunks of up to 256 KiB: a pipe of the default 64 KiB is full after
    // each, and the two sides take turns. A 1 MiB pipe (what Linux allows anyone) lets
    // them run at once; where stdout cannot be resized, nothing changes.
    let _ = rustix::pipe::fcntl_setpipe_size(&stdout, 1 << 20);
    let failed = |e: &crate::eval::Evaluator| if e.internal_errors() > 0 { EXIT_INVALID } else { 0 };
    match crate::eval::run(&evaluator, io::stdin().lock(), stdout) {
        Ok(()) => Ok(failed(&evaluator)),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(failed(&evaluator)),
        Err(e) => Err(e.into()),
    }
}

/// `warrant receipt`: publishes the receipt into `receipts/` (an agent that does not own the spool)
/// or records it in the chain (the principal).
fn receipt_cmd(
    spool: &Spool,
    class: String,
    outcome: String,
    agent: String,
    packet: Option<String>,
    source_type: Option<String>,
    note: Option<String>,
) -> Result<u8, Failure> {
    let req = spool::ReceiptRequest {
        action_class: &class,
        outcome: ReceiptOutcome::parse(&outcome).ok_or_else(|| Failure::usage("unknown outcome"))?,
        agent: &agent,
        packet_id: packet.as_deref(),
        source_type: source_type.as_deref().and_then(SourceType::parse),
        note: note.as_deref(),
        tool_call: None,
    };
    let bad = |e: spool::ReceiptError| match e {
        spool::ReceiptError::Invalid(m) => Failure::usage(m),
        other => Failure::from(other),
    };
    // An agent that does not own the spool publishes its receipt into receipts/ (its own
    // word); the principal records one in the chain.
    if spool.root().exists() && !spool::owned_by_me(spool) {
        let (receipt, path) =
            spool::publish_receipt(spool, &req, &crate::protocol::clock::now_rfc3339()).map_err(bad)?;
        print_json(&serde_json::json!({"receipt": receipt, "published": path}))?;
        return Ok(0);
    }
    let (receipt, appended) =
        spool::record_receipt(spool, &req, &crate::protocol::clock::now_rfc3339()).map_err(bad)?;
    print_json(&serde_json::json!({
        "receipt": receipt,
        "chain": {"chain_index": appended.chain_index, "entry_hash": appended.entry_hash},
    }))?;
    Ok(0)
}
