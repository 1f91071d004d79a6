//! The `warrant` command line (`docs/cli.md`). `src/main.rs` calls [`main`].
//!
//! Exit codes: 0 success; 1 a verification failed or a request was refused by warrant (already
//! decided, broken chain, unknown packet); 2 usage or I/O errors. `propose --wait` exits 0 when
//! approved, 3 when refused and 4 on timeout.

use crate::govern::Waited;
use crate::protocol::chain::{self, ChainHead, VerifyOptions, VerifyReport};
use crate::protocol::control::{ControlInput, ControlKind};
use crate::protocol::decision::{self, Verdict};
use crate::protocol::graduation::{PolicySet, SourceType, receipt::ReceiptOutcome};
use crate::protocol::keys::{self, PinnedKeys, Principal};
use crate::protocol::packet::{self, DecisionState};
use crate::protocol::tiers::NotebookTrust;
use crate::store::StoreLocation;
use crate::store::chain_file;
use crate::store::config::{self, Config};
use crate::store::key_files;
use crate::store::spool::{self, Scanner, Spool};
use clap::{Parser, Subcommand};
use serde_json::{Value, json};
use std::io::{self, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

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

/// warrant: decide what AI agents may do.
#[derive(Debug, Parser)]
#[command(name = "warrant", version, about, long_about = None)]
pub struct Cli {
    /// The spool directory shared with agents [default: <data dir>/warrant/spool].
    #[arg(long, global = true, env = spool::SPOOL_ENV, value_name = "DIR")]
    pub spool: Option<PathBuf>,
    /// Where the spool lives: a directory, or nats://HOST:PORT[,HOST:PORT...]/NAME (tls:// for
    /// TLS) for NATS JetStream; credentials from NATS_CREDS, NATS_NKEY, NATS_CA, NATS_CERT and
    /// NATS_KEY. It wins over --spool [default: `store` in config.toml, else the spool directory].
    #[arg(long, global = true, env = "WARRANT_STORE", value_name = "STORE")]
    pub store: Option<String>,
    /// This host's replica of a JetStream store: the directory the principal's commands and the
    /// console work on, kept equal to the store [default: <data dir>/warrant/replicas/NAME].
    #[arg(long, global = true, env = "WARRANT_REPLICA", value_name = "DIR")]
    pub replica: Option<PathBuf>,
    /// What to do (default: `console`).
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Open the console on the spool (the default).
    Console {
        /// Observe only: nothing can be signed.
        #[arg(long)]
        read_only: bool,
        /// Theme name (`default`, `mono`) or a file in <config>/themes/.
        #[arg(long)]
        theme: Option<String>,
    },
    /// Open the console on a temporary spool with simulated agents publishing live.
    Demo {
        /// Observe only: nothing can be signed.
        #[arg(long)]
        read_only: bool,
        /// Theme name.
        #[arg(long)]
        theme: Option<String>,
        /// Seconds between the simulated agents' actions.
        #[arg(long, default_value_t = 2.0)]
        interval: f64,
    },
    /// Publish a portable v0.1 approval packet, and optionally wait for the decision.
    Propose {
        /// The action class, e.g. email.send.external.
        #[arg(long = "class")]
        class: String,
        /// The proposing agent's id.
        #[arg(long)]
        agent: String,
        /// One line for the principal.
        #[arg(long)]
        summary: String,
        /// A JSON file with the exact proposed action (`-` for stdin); text is wrapped as {"text": …}.
        #[arg(long, value_name = "FILE")]
        payload: Option<PathBuf>,
        /// The packet id [default: generated].
        #[arg(long)]
        id: Option<String>,
        /// Wait up to SECONDS for the signed decision: exit 0 approved, 3 refused, 4 timed out,
        /// 6 expired undecided, 7 the agent was killed.
        #[arg(long, value_name = "SECONDS")]
        wait: Option<f64>,
        /// When the packet expires undecided: a duration (`30m`, `2h`, `1d`) or an RFC 3339 time
        /// [default: the class's `[expiry]` in policy.toml, else never]. An expired packet can only
        /// be refused.
        #[arg(long, value_name = "DURATION|TIME")]
        expires: Option<String>,
    },
    /// Sign an approval of a pending packet and append it to the chain. On a terminal, shows the
    /// whole packet and asks for confirmation; otherwise needs --hash or --yes.
    Approve {
        /// The packet id; several ids sign a batch: one signed record per packet, appended under
        /// one lock with one sync, all or nothing (`docs/spool.md`, Batch decisions).
        #[arg(required = true, num_args = 1..)]
        ids: Vec<String>,
        /// Why.
        #[arg(long)]
        reason: Option<String>,
        #[allow(missing_docs)]
        #[command(flatten)]
        review: Review,
        #[allow(missing_docs)]
        #[command(flatten)]
        grant: GrantArgs,
    },
    /// Sign a refusal of a pending packet and append it to the chain. On a terminal, shows the
    /// whole packet and asks for confirmation; otherwise needs --hash or --yes.
    Refuse {
        /// The packet id; several ids refuse a batch with the one reason, all or nothing.
        #[arg(required = true, num_args = 1..)]
        ids: Vec<String>,
        /// Why (required).
        #[arg(long)]
        reason: String,
        #[allow(missing_docs)]
        #[command(flatten)]
        review: Review,
    },
    /// List the spool's pending, decided and invalid packets.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Verify a spool, a chain.jsonl, or an opentrustgraph-chain/v0 export.
    Verify {
        /// The spool directory, chain file or export [default: the spool].
        path: Option<PathBuf>,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        /// Check an exported audit (`warrant audit --json` lines) against the spool's verified
        /// chain: every line that claims a record must match it (exit 1 otherwise).
        #[arg(long, value_name = "FILE")]
        audit: Option<PathBuf>,
    },
    /// Print the audit: every decision, control, key event, grant and allowed call in chain
    /// order, with how it was allowed and who signed
    ///
    /// Each entry gives the record's number (as `verify` numbers records) and entry_hash; calls
    /// that left no chain record (receipt files) are interleaved by time and marked as not in
    /// the chain.
    Audit {
        /// Print JSON lines, one entry a line (`warrant verify --audit FILE` checks them).
        #[arg(long)]
        json: bool,
        /// Only entries at or after this time (RFC 3339, e.g. 2026-11-21T00:00:00Z).
        #[arg(long, value_name = "TIME")]
        since: Option<String>,
        /// Only entries about this agent.
        #[arg(long, value_name = "AGENT")]
        agent: Option<String>,
    },
    /// Print the chain as an opentrustgraph-chain/v0 export.
    Export,
    /// Copy a spool's chain to another store (a directory or JetStream) and verify the copy
    /// chain-for-chain: the same records, the same root hash, both valid
    ///
    /// The source must verify against the pinned keys. A destination that already holds a prefix
    /// of the source's chain is continued (a migration can be run again after an interruption);
    /// one that holds anything else is refused. Each record is appended with compare-and-set on
    /// the destination's head and keeps its entry_hash. Between a directory and JetStream, the
    /// packets, receipts and decision files are copied too.
    Migrate {
        /// The store to copy from: a spool directory or nats://HOST:PORT/NAME.
        #[arg(long, value_name = "STORE")]
        from: String,
        /// The store to copy to (created if missing): a spool directory or nats://HOST:PORT/NAME.
        #[arg(long, value_name = "STORE")]
        to: String,
        /// Copies of each JetStream stream when the destination is created (1, or 3 on a
        /// three-node cluster).
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=5))]
        replicas: u8,
    },
    /// Serve the gates as JSON lines: one request per line on stdin, one response per line on
    /// stdout (docs/eval.md).
    Eval,
    /// Record a Trust Graduation receipt: in the chain when you own the spool (the principal),
    /// else published into receipts/ as the agent's own word.
    Receipt {
        /// The action class, e.g. email.send.external.
        #[arg(long = "class")]
        class: String,
        /// What happened.
        #[arg(long, value_parser = ["approve", "refuse", "correct", "execute"])]
        outcome: String,
        /// The agent the receipt is about.
        #[arg(long)]
        agent: String,
        /// The packet it concerns.
        #[arg(long)]
        packet: Option<String>,
        /// Where the evidence comes from (weights 1.0, 1.0, 0.3, 0.1).
        #[arg(long, value_parser = ["receipt", "principal", "connector", "model_inferred"])]
        source_type: Option<String>,
        /// A note kept in the receipt.
        #[arg(long)]
        note: Option<String>,
    },
    /// Print this host's /.well-known/trust-graduation discovery document.
    WellKnown,
    /// Re-check an approved packet's preconditions against the world now (two-phase
    /// execution): exit 0 when all still hold, 1 with `precondition_failed` when one changed,
    /// 3 when the packet was refused.
    CheckPreconditions {
        /// The packet id.
        packet: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show or set a notebook's trust level (tool tiers × notebook trust); each change is a
    /// signed chain record.
    Trust {
        /// What to do (default: show).
        #[command(subcommand)]
        action: Option<TrustAction>,
    },
    /// Quarantine, release, kill or elevate an agent; each is a signed chain record.
    Agent {
        /// What to do.
        #[command(subcommand)]
        action: AgentAction,
    },
    /// Run an MCP server behind warrant: forward everything between the agent (stdio) and
    /// COMMAND, the real server, governing each tools/call first (docs/integrations.md).
    McpGateway {
        /// The agent id its packets name [default: mcp-gateway].
        #[arg(long, value_name = "ID")]
        agent: Option<String>,
        /// The notebook whose trust applies [default: derived from the working directory].
        #[arg(long, value_name = "NAME")]
        notebook: Option<String>,
        /// The server's name in tool keys (`<name>/<tool>`) [default: from COMMAND, e.g.
        /// mcp-server-filesystem → filesystem].
        #[arg(long, value_name = "NAME")]
        name: Option<String>,
        /// How long a held call waits for the principal before it is refused.
        #[arg(long, value_name = "SECS", default_value_t = 300.0)]
        wait: f64,
        /// Listen on a Unix socket at PATH (created mode 0660, removed on exit) instead of stdio:
        /// each connection is one MCP session with its own COMMAND; SIGINT/SIGTERM stop it. For a
        /// gateway run under its own Unix user; agents connect with `--connect PATH`.
        #[arg(long, value_name = "PATH", conflicts_with = "connect")]
        listen: Option<PathBuf>,
        /// Relay stdin/stdout to the gateway listening at PATH, byte for byte (what the agent's
        /// MCP client runs); exits non-zero when it cannot be reached.
        #[arg(long, value_name = "PATH", conflicts_with_all = ["agent", "notebook", "name", "sign_receipts"])]
        connect: Option<PathBuf>,
        /// Sign every receipt with this user's own key (`principal.key` in its WARRANT_CONFIG, as
        /// `warrant keys init` makes it); refuses to start when the key cannot be loaded. Only
        /// with --listen. Receipts count as observed outcomes once the principal pins the key with
        /// `warrant keys pin --gateway`.
        #[arg(long, requires = "listen")]
        sign_receipts: bool,
        /// The real MCP server's command line (none with --connect).
        #[arg(last = true, required_unless_present = "connect", value_name = "COMMAND")]
        command: Vec<std::ffi::OsString>,
    },
    /// Generate a spool for the scale runs: a chain of N records (mostly receipts, one signed
    /// decision every K) and M pending packets (docs/performance.md). The spool must have no
    /// chain yet; decisions are signed with the principal's key.
    GenerateSpool {
        /// Chain records to write.
        #[arg(long, default_value_t = 10_000)]
        records: u64,
        /// Pending packets to publish.
        #[arg(long, default_value_t = 100)]
        pending: u64,
        /// One signed decision every K records (0: none).
        #[arg(long, value_name = "K", default_value_t = 50)]
        decision_every: u64,
        /// Agents the records and packets are spread over.
        #[arg(long, default_value_t = 16)]
        agents: u64,
    },
    /// Show, export, pin and unpin public keys; rotate the key, rename the principal.
    Keys {
        /// What to do (default: show).
        #[command(subcommand)]
        action: Option<KeysAction>,
    },
    /// Create (or repair) a spool shared with the agents' Unix group: `packets/`, `receipts/` and
    /// `uses/` writable by the group and sticky, everything else writable only by the principal.
    Init {
        /// The agents' Unix group.
        #[arg(long, value_name = "GROUP")]
        agents_group: String,
        /// The spool directory (default: the configured one).
        dir: Option<PathBuf>,
    },
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) to stdout.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff) to stdout: `warrant man | man -l -`.
    Man,
    /// Answer an agent host's hook: one JSON event on stdin (PreToolUse, PermissionRequest,
    /// PostToolUse), the host's documented answer on stdout. Every failure is a deny.
    Hook {
        /// The host whose hook this is.
        host: crate::hook::Host,
        /// The agent id packets name [default: the host's name].
        #[arg(long, value_name = "ID")]
        agent: Option<String>,
        /// The notebook whose trust applies [default: derived from the event's cwd].
        #[arg(long, value_name = "NAME")]
        notebook: Option<String>,
        /// Seconds to wait for the principal; keep it under the host's hook timeout (600 s by
        /// default).
        #[arg(long, value_name = "SECS", default_value_t = crate::hook::DEFAULT_WAIT_SECS)]
        wait: f64,
    },
    /// Write the hook configuration that puts warrant in front of an agent host's tools.
    Setup {
        /// The host.
        host: crate::hook::Host,
        /// Claude Code: the project's `.claude/settings.json` (the default); Codex: the project's
        /// `.codex/hooks.json`.
        #[arg(long, conflicts_with = "user")]
        project: bool,
        /// The user's settings (`~/.claude/settings.json`, `~/.codex/hooks.json`).
        #[arg(long)]
        user: bool,
        /// Print the configuration instead of writing it.
        #[arg(long)]
        print: bool,
        /// The project directory [default: the current directory].
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        /// Seconds the hook waits for the principal (the host's timeout is set 60 s longer).
        #[arg(long, value_name = "SECS", default_value_t = crate::hook::DEFAULT_WAIT_SECS)]
        wait: f64,
    },
    /// The principal's signed checkpoints of a spool's chain (they detect records cut off).
    Checkpoint {
        /// What to do.
        #[command(subcommand)]
        action: CheckpointAction,
    },
    /// The principal's grants: list the live ones, revoke one.
    Grants {
        /// What to do.
        #[command(subcommand)]
        action: GrantsAction,
    },
}

/// `warrant grants` subcommands.
#[derive(Debug, Subcommand)]
pub enum GrantsAction {
    /// List the grants in the spool's chain that are live (issued, not revoked, not expired,
    /// uses left): id, what it covers in words, uses so far, end, signer and record.
    List {
        /// Print JSON (an array).
        #[arg(long)]
        json: bool,
        /// Also the revoked, expired and used-up grants.
        #[arg(long)]
        all: bool,
    },
    /// Sign a revocation of a grant and append it to the chain: the next call it would have
    /// covered waits for the principal again.
    Revoke {
        /// The grant id (`warrant grants list` prints it).
        id: String,
        /// Why (required).
        #[arg(long)]
        reason: String,
    },
}

/// How far an approval reaches (`warrant approve --scope`), see `docs/cli.md` "Grants".
#[derive(Debug, Clone, Default, clap::Args)]
pub struct GrantArgs {
    /// `once` (this packet only), `session` (the agent's calls of this tool and class in this
    /// session), `until:TIME` (RFC 3339, or 30m/8h/2d from now), `pattern:GLOB`
    /// (`Bash(git push origin feature/*)`) or `class:max_amount=N;domain=D` (the class's calls
    /// within these constraints).
    #[arg(long, value_name = "SCOPE", default_value = "once")]
    pub scope: String,
    /// End a session or pattern grant at TIME (RFC 3339, or 30m/8h/2d from now) [session
    /// default: 24h].
    #[arg(long, value_name = "TIME")]
    pub until: Option<String>,
    /// Allow at most N calls under the grant (each use is claimed atomically).
    #[arg(long, value_name = "N")]
    pub uses: Option<u64>,
    /// The pattern (or a class grant's constraints) typed again: needed for a grant that covers
    /// destructive calls.
    #[arg(long, value_name = "PATTERN")]
    pub confirm_pattern: Option<String>,
}

/// `warrant checkpoint` subcommands.
#[derive(Debug, Subcommand)]
pub enum CheckpointAction {
    /// Forget the checkpoints that pin a spool's chain (its `checkpoint.json` and the principal's
    /// own copy), after re-creating the spool at the same path on purpose. Shows what each one
    /// pinned and asks first.
    Forget {
        /// The spool (default: the configured one).
        spool: Option<PathBuf>,
        /// Forget without asking (no terminal).
        #[arg(long)]
        yes: bool,
    },
}

/// How `approve` and `refuse` know the principal reviewed what is signed (issue 15 §3): on a
/// terminal, the whole packet is shown and confirmed; `--hash` pins the content hash `list`
/// printed; without a terminal one of `--hash` or `--yes` is required.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Review {
    /// Sign only if the packet's content hash is still HASH (`sha256:…`, as `warrant list` prints
    /// it): a packet rewritten since it was reviewed is refused.
    #[arg(long, value_name = "HASH")]
    pub hash: Option<String>,
    /// Sign without showing the packet and asking (for scripts that reviewed it some other way).
    #[arg(long)]
    pub yes: bool,
}

/// `warrant trust` subcommands.
#[derive(Debug, Subcommand)]
pub enum TrustAction {
    /// Show each notebook's level and the tool tiers from policy.toml.
    Show {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Set a notebook's level: cautious, trusted or autonomous. Raising to autonomous needs the
    /// notebook's name typed again (`--confirm NOTEBOOK`, or at the prompt on a terminal).
    Set {
        /// The notebook id.
        notebook: String,
        /// cautious | trusted | autonomous.
        level: String,
        /// Why.
        #[arg(long)]
        reason: Option<String>,
        /// The notebook's name again: the typed confirmation that raising to autonomous needs.
        #[arg(long, value_name = "NOTEBOOK")]
        confirm: Option<String>,
    },
}

/// `warrant agent` subcommands.
#[derive(Debug, Subcommand)]
pub enum AgentAction {
    /// Quarantine an agent: demoted to Ring 3, and every packet it sends is blocked until released.
    Quarantine {
        /// The agent id.
        agent: String,
        /// Why (required).
        #[arg(long)]
        reason: String,
    },
    /// Release a quarantined or killed agent.
    Release {
        /// The agent id.
        agent: String,
        /// Why.
        #[arg(long)]
        reason: Option<String>,
    },
    /// Kill an agent: signal it to stop (spool/signals/<agent>.json), record the kill switch's
    /// result, and block every packet it sends until released.
    Kill {
        /// The agent id.
        agent: String,
        /// Why (required).
        #[arg(long)]
        reason: String,
    },
    /// Elevate an agent to Ring 2 or Ring 1 for a bounded time (Ring 0 is never granted).
    Elevate {
        /// The agent id.
        agent: String,
        /// The target ring: 1 or 2.
        #[arg(long)]
        ring: u8,
        /// Seconds (default 300, at most 3600).
        #[arg(long, default_value_t = 0)]
        ttl: i64,
        /// Why.
        #[arg(long)]
        reason: Option<String>,
    },
}

/// `warrant keys` subcommands.
#[derive(Debug, Subcommand)]
pub enum KeysAction {
    /// Create the principal's key, protected by a passphrase (asked twice on the terminal, or the
    /// first line of WARRANT_PASSPHRASE_FILE), and pin it. Never overwrites a key.
    Init {
        /// Store the key unprotected (as `ssh-keygen -N ''`): for tests and throwaway set-ups.
        #[arg(long)]
        no_passphrase: bool,
    },
    /// Show the principal's key fingerprint, whether it is protected, and the pinned keys.
    Show,
    /// Print the principal's public key (SPKI PEM).
    Export,
    /// Pin a public key (SPKI PEM or base64 of the raw 32 bytes) for a principal, or with
    /// --gateway as a gateway's receipt-signing key (`role = "gateway"`: it verifies only the
    /// receipts that gateway signs, never a decision).
    Pin {
        /// The principal the key speaks for.
        #[arg(long, required_unless_present = "gateway", conflicts_with = "gateway")]
        principal: Option<String>,
        /// The gateway the key is (`warrant mcp-gateway --listen … --sign-receipts`, run under
        /// its own Unix user): its signed receipts count as observed outcomes.
        #[arg(long, value_name = "NAME")]
        gateway: Option<String>,
        /// The key file (`-` for stdin).
        file: PathBuf,
    },
    /// Remove a pinned key.
    Unpin {
        /// Its fingerprint (SHA256:…).
        fingerprint: String,
    },
    /// Replace the principal's key: a new key (protected like `keys init`), announced in the
    /// spool's chain by a record signed with the old key and the new one; the new key is pinned
    /// beside the old one and the old key file is kept as `principal.key.<fingerprint>.retired`.
    Rotate {
        /// Store the new key unprotected: for tests and throwaway set-ups.
        #[arg(long)]
        no_passphrase: bool,
    },
    /// Rename the principal: a record signed by the key under its current pinned name announces
    /// the new one; the pin then names NEW_NAME and keeps the old name, so earlier records verify.
    Rename {
        /// The principal's new name.
        new_name: String,
    },
}

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
    fn usage(message: impl Into<String>) -> Self {
        Self { code: EXIT_USAGE, message: message.into(), closed_pipe: false }
    }
    fn invalid(message: impl Into<String>) -> Self {
        Self { code: EXIT_INVALID, message: message.into(), closed_pipe: false }
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
    let _log = if matches!(cli.command, Some(Command::Hook { .. })) { None } else { init_logging() };
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(f) if f.closed_pipe => ExitCode::SUCCESS,
        Err(f) => {
            // Messages can quote agent-written text: never let it drive the terminal.
            eprintln!("warrant: {}", crate::protocol::text::inert(&f.message, 4000));
            ExitCode::from(f.code)
        }
    }
}

/// Logs go to `<data dir>/warrant/warrant.log` (filter with `WARRANT_LOG`), never to the
/// terminal.
fn init_logging() -> Option<tracing_appender::non_blocking::WorkerGuard> {
    let dir = directories::BaseDirs::new()?.data_dir().join("warrant");
    std::fs::create_dir_all(&dir).ok()?;
    let appender = tracing_appender::rolling::never(&dir, "warrant.log");
    let (writer, guard) = tracing_appender::non_blocking(appender);
    let filter = tracing_subscriber::EnvFilter::try_from_env("WARRANT_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,rmcp=warn"));
    tracing_subscriber::fmt().with_writer(writer).with_ansi(false).with_env_filter(filter).try_init().ok()?;
    Some(guard)
}

/// The resolved spool: `--spool`/`WARRANT_SPOOL`, else `spool` in config.toml, else the default.
/// The spool at `root`, with the principal's copies of its checkpoints in
/// `<config dir>/checkpoints`.
fn spool_at(root: PathBuf) -> Spool {
    Spool::new(root).with_checkpoint_copies(config::config_dir().join("checkpoints"))
}

/// Moves a torn final line of the spool's chain to a side file (an append interrupted by a
/// crash), telling the principal where it went.
///
/// # Errors
/// The chain's lock or I/O errors.
fn set_aside_torn_tail(spool: &Spool) -> Result<(), Failure> {
    if spool.chain_path().symlink_metadata().is_err() {
        return Ok(());
    }
    if let Some(aside) = chain_file::recover_torn_tail(&spool.chain_path())? {
        eprintln!("warrant: {}", aside.message());
    }
    Ok(())
}

fn resolve_spool(arg: Option<PathBuf>, config: &Config) -> Result<Spool, Failure> {
    if arg.is_none()
        && let Some(text) = &config.store
    {
        return match text.parse::<StoreLocation>().map_err(Failure::usage)? {
            StoreLocation::Directory(root) => Ok(spool_at(root)),
            #[cfg(feature = "jetstream")]
            at @ StoreLocation::JetStream(_) => Err(jetstream_not_yet(&at)),
        };
    }
    arg.or_else(|| config.spool.clone())
        .or_else(Spool::default_root)
        .map(spool_at)
        .ok_or_else(|| Failure::usage("no spool directory: pass --spool or set WARRANT_SPOOL"))
}

/// Loads (creating on first use) the principal's key, telling the user when it was created, and
/// the pinned keys, which must pin that key for the principal's name.
///
/// # Errors
/// Key errors, and a key that is not pinned for this principal, as usage errors.
pub fn load_principal(config: &Config) -> Result<(Principal, PinnedKeys), Failure> {
    load_principal_from(&config::config_dir(), &config.principal_name())
}

/// [`load_principal`] from the configuration directory `dir`: the key file is opened (asking its
/// passphrase from `WARRANT_PASSPHRASE_FILE` or the terminal when it is protected; issue 15 §6),
/// never created (`warrant keys init` does that), and must be pinned for `name`.
///
/// # Errors
/// A usage failure (exit 2): no key, no passphrase to be had, a wrong passphrase, an unpinned key.
fn load_principal_from(dir: &Path, name: &str) -> Result<(Principal, PinnedKeys), Failure> {
    let path = dir.join(key_files::PRIVATE_KEY_FILE);
    if matches!(std::fs::symlink_metadata(&path), Err(e) if e.kind() == io::ErrorKind::NotFound) {
        return Err(key_files::KeyError::NoKey { dir: dir.to_owned() }.into());
    }
    let source = key_files::passphrase_source();
    let prompt = format!("passphrase for {}: ", path.display());
    let principal = Principal::load_with(&path, name, || key_files::read_passphrase(&source, &prompt, &path))?;
    // A signature verifies only under a key pinned for the signing principal; catch a renamed
    // principal or an unpinned own key here rather than at the first signature.
    let pinned = PinnedKeys::load(dir)?;
    match pinned.get(&principal.fingerprint()) {
        Some(pin) if pin.principal == principal.name => Ok((principal, pinned)),
        Some(pin) if pin.speaks_for(&principal.name) => Err(Failure::usage(format!(
            "the principal {:?} was renamed {:?} (`warrant keys rename`); set WARRANT_PRINCIPAL={:?} (or `principal` in config.toml)",
            principal.name, pin.principal, pin.principal
        ))),
        // Re-pinning the key by hand would make every record signed under the old name fail;
        // a rename recorded in the chain keeps them valid.
        Some(pin) => Err(Failure::usage(format!(
            "the key {} is pinned for principal {:?}, not {:?}: if {:?} is your new name, record the rename with `warrant keys rename {:?}` (records signed as {:?} stay valid); otherwise set WARRANT_PRINCIPAL={:?} (or `principal` in config.toml)",
            principal.fingerprint(),
            pin.principal,
            principal.name,
            principal.name,
            principal.name,
            pin.principal,
            pin.principal
        ))),
        None => Err(Failure::usage(format!(
            "the principal key {} is not pinned, so its signatures would not verify; pin it with `warrant keys export | warrant keys pin --principal {:?} -`",
            principal.fingerprint(),
            principal.name
        ))),
    }
}

fn load_pinned() -> Result<PinnedKeys, Failure> {
    Ok(PinnedKeys::load(&config::config_dir())?)
}

/// Runs a parsed command line.
///
/// # Errors
/// A [`Failure`] with its exit code.
pub fn run(cli: Cli) -> Result<u8, Failure> {
    if let Some(Command::Hook { host, agent, notebook, wait }) = cli.command {
        // Before anything that could fail with a code the host reads as "proceed".
        let spool = if cli.store.is_some() { None } else { cli.spool };
        return Ok(hook_cmd(spool, cli.store, cli.replica, host, agent, notebook, wait));
    }
    if let Some(Command::McpGateway { agent, notebook, name, wait, listen, connect, sign_receipts, command }) =
        cli.command
    {
        if let Some(path) = connect {
            if !command.is_empty() {
                return Err(Failure::usage("--connect takes no COMMAND: the gateway at PATH runs the server"));
            }
            return mcp_connect(&path);
        }
        // A configuration or spool it cannot use does not stop the gateway: every call is refused
        // with the reason, which the agent reads. A signing key it cannot load does.
        let config = Config::load().map(|c| c.with_store(cli.store.clone()));
        let signer = if sign_receipts { Some(gateway_key(config.as_ref().ok())?) } else { None };
        let spool_arg = if cli.store.is_some() { None } else { cli.spool };
        // On a JetStream store, the gateway works on this host's replica, kept live while it runs.
        let governed = config.and_then(|c| governed_spool(spool_arg, cli.replica, &c));
        let (spool, _follower) = match governed {
            Ok((spool, follower)) => (Ok(spool), follower),
            Err(e) => (Err(e), None),
        };
        return mcp_gateway(spool, McpGatewayArgs { agent, notebook, name, wait, listen, signer, command });
    }
    let config = Config::load().map_err(Failure::usage)?.with_store(cli.store.clone());
    // `--store` (or WARRANT_STORE) wins over `--spool` (or WARRANT_SPOOL).
    let spool_arg = if cli.store.is_some() { None } else { cli.spool.clone() };
    let command = cli.command.unwrap_or(Command::Console { read_only: false, theme: None });
    // On JetStream, the principal's commands run on this host's replica of the store
    // (`store::replica`), pulled first; the console keeps it live with a follower.
    #[cfg(feature = "jetstream")]
    let mut _follower = None;
    #[cfg(feature = "jetstream")]
    let (spool_arg, config) = match jetstream_store(spool_arg.as_ref(), &config)? {
        None => (spool_arg, config),
        Some(at) => match (command, at) {
            (Command::Verify { path: None, json, audit: None }, at) => return verify_store(&at, json),
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
            ) => return run_command(c, spool_arg, config),
            (
                Command::Demo { .. } | Command::GenerateSpool { .. } | Command::Setup { .. } | Command::Init { .. },
                at,
            ) => {
                return Err(Failure::usage(format!(
                    "the spool is on JetStream ({at}): `demo`, `generate-spool`, `setup` and `init` run on a directory \
                     spool only (docs/distributed.md)"
                )));
            }
            (command, StoreLocation::JetStream(url)) => {
                let dir = cli
                    .replica
                    .clone()
                    .or_else(|| crate::store::replica::default_dir(&url))
                    .ok_or_else(|| Failure::usage("no directory for the store's replica: pass --replica DIR"))?;
                let (spool, pulled) =
                    crate::store::replica::open(&url, &dir).map_err(|e| Failure::usage(format!("{url}: {e}")))?;
                tracing::info!(store = %url, replica = %dir.display(), records = pulled.records, messages = pulled.messages, "pulled");
                if matches!(command, Command::Console { .. }) {
                    let follower = crate::store::replica::follow(&spool, |e| tracing::warn!("{e}"))
                        .map_err(|e| Failure::usage(format!("{url}: {e}")))?;
                    _follower = Some(follower);
                }
                let mut config = config;
                config.store = None;
                let code = run_command(command, Some(dir), config);
                return code;
            }
            (_, at) => return Err(jetstream_not_yet(&at)),
        },
    };
    run_command(command, spool_arg, config)
}

/// Runs `command` on the spool `spool_arg` names (or the configured one).
///
/// # Errors
/// A [`Failure`] with its exit code.
fn run_command(command: Command, spool_arg: Option<PathBuf>, config: Config) -> Result<u8, Failure> {
    match command {
        Command::Console { read_only, theme } => {
            let spool = resolve_spool(spool_arg, &config)?;
            run_console(spool, &config, read_only, theme, None)
        }
        Command::Demo { read_only, theme, interval } => {
            // A temporary spool unless one is named explicitly.
            let dir = tempfile::Builder::new().prefix("warrant-demo-").tempdir()?;
            let demo_config = dir.path().join(".config");
            let spool = Spool::new(spool_arg.unwrap_or_else(|| dir.path().to_owned()))
                .with_checkpoint_copies(demo_config.join("checkpoints"));
            let demo = DemoRun { interval: interval.max(0.05), config_dir: demo_config };
            let code = run_console(spool, &config, read_only, theme, Some(demo))?;
            drop(dir);
            Ok(code)
        }
        Command::Propose { class, agent, summary, payload, id, wait, expires } => {
            let spool = resolve_spool(spool_arg, &config)?;
            let opts = ProposeOptions { payload: payload.as_deref(), id, wait, expires: expires.as_deref() };
            propose(ProposeTo::Directory(&spool), &class, &agent, &summary, &opts)
        }
        Command::Approve { ids, reason, review, grant } => {
            let spool = resolve_spool(spool_arg, &config)?;
            set_aside_torn_tail(&spool)?;
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
            match (ids.as_slice(), grant) {
                ([id], grant) => {
                    decide_cli(&spool, &config, id, Verdict::Approve, reason.as_deref(), &review, grant.as_ref())
                }
                (_, Some(_)) => Err(Failure::usage(
                    "--scope grants with one packet's approval: approve the others without it, or one at a time",
                )),
                (_, None) => decide_batch_cli(&spool, &config, &ids, Verdict::Approve, reason.as_deref(), &review),
            }
        }
        Command::Refuse { ids, reason, review } => {
            let spool = resolve_spool(spool_arg, &config)?;
            set_aside_torn_tail(&spool)?;
            match ids.as_slice() {
                [id] => decide_cli(&spool, &config, id, Verdict::Refuse, Some(&reason), &review, None),
                _ => decide_batch_cli(&spool, &config, &ids, Verdict::Refuse, Some(&reason), &review),
            }
        }
        Command::List { json } => {
            let spool = resolve_spool(spool_arg, &config)?;
            list(&spool, json)
        }
        Command::Verify { path, json, audit: Some(file) } => {
            let spool = match path {
                Some(p) => Spool::new(p),
                None => resolve_spool(spool_arg, &config)?,
            };
            verify_audit(&spool, &file, json)
        }
        Command::Verify { path, json, audit: None } => {
            let path = match path {
                Some(p) => p,
                None => resolve_spool(spool_arg, &config)?.root().to_owned(),
            };
            verify(&path, json)
        }
        Command::Audit { json, since, agent } => {
            let spool = resolve_spool(spool_arg, &config)?;
            audit_cmd(&spool, json, since.as_deref(), agent)
        }
        Command::Migrate { from, to, replicas } => migrate(&from, &to, replicas),
        Command::Export => {
            let spool = resolve_spool(spool_arg, &config)?;
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
        Command::GenerateSpool { records, pending, decision_every, agents } => {
            let spool = resolve_spool(spool_arg, &config)?;
            let (principal, _) = load_principal(&config)?;
            let spec = crate::scale::GenerateSpec { records, pending, decision_every, agents };
            let started = Instant::now();
            let made = crate::scale::generate(&spool, &principal, &spec, time::OffsetDateTime::now_utc())
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
        Command::Keys { action } => keys_cmd(&config, spool_arg, action.unwrap_or(KeysAction::Show)),
        Command::Completions { shell } => {
            use clap::CommandFactory as _;
            let mut out = io::stdout().lock();
            clap_complete::generate(shell, &mut Cli::command(), "warrant", &mut out);
            out.flush()?;
            Ok(0)
        }
        Command::Man => {
            use clap::CommandFactory as _;
            let mut out = io::stdout().lock();
            clap_mangen::Man::new(Cli::command()).render(&mut out)?;
            out.flush()?;
            Ok(0)
        }
        Command::Hook { .. } => Err(Failure::usage("internal error: hook handled above")),
        Command::Setup { host, project: _, user, print, dir, wait } => {
            let spool = resolve_spool(spool_arg, &config)?;
            crate::setup::setup(
                host,
                &crate::setup::SetupOptions { user, print, dir, wait, spool: spool.root().to_owned() },
            )
            .map_err(Failure::usage)
        }
        Command::Init { agents_group, dir } => {
            let spool = resolve_spool(dir.or(spool_arg), &config)?;
            init_shared_spool(&spool, &agents_group)
        }
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
            let policies = load_policies(spool.as_ref())?;
            // The gates read the evidence of the spool's verified chain, as the console does
            // (docs/eval.md, "Evidence from the spool"); unreadable pinned keys fail it closed.
            let evaluator = match spool {
                Some(spool) => crate::eval::Evaluator::new(policies)
                    .with_spool(spool, PinnedKeys::load(&config::config_dir()).map_err(|e| e.to_string()))
                    .with_gateway_keys(
                        crate::protocol::keys::GatewayKeys::load(&config::config_dir()).unwrap_or_default(),
                    ),
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
        Command::Receipt { class, outcome, agent, packet, source_type, note } => {
            let spool = resolve_spool(spool_arg, &config)?;
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
            if spool.root().exists() && !spool::owned_by_me(&spool) {
                let (receipt, path) =
                    spool::publish_receipt(&spool, &req, &crate::protocol::clock::now_rfc3339()).map_err(bad)?;
                print_json(&serde_json::json!({"receipt": receipt, "published": path}))?;
                return Ok(0);
            }
            let (receipt, appended) =
                spool::record_receipt(&spool, &req, &crate::protocol::clock::now_rfc3339()).map_err(bad)?;
            print_json(&serde_json::json!({
                "receipt": receipt,
                "chain": {"chain_index": appended.chain_index, "entry_hash": appended.entry_hash},
            }))?;
            Ok(0)
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

/// `warrant mcp-gateway`'s arguments (read only by the gateway, which needs the `console`
/// feature's tokio).
#[cfg_attr(not(feature = "console"), allow(dead_code))]
struct McpGatewayArgs {
    agent: Option<String>,
    notebook: Option<String>,
    name: Option<String>,
    wait: f64,
    listen: Option<PathBuf>,
    signer: Option<Principal>,
    command: Vec<std::ffi::OsString>,
}

/// `--sign-receipts`: the gateway user's own key from its configuration directory, loaded as the
/// principal's is (`WARRANT_PASSPHRASE_FILE` or the terminal for a protected key; an unprotected
/// key is fine for a service user). Its name is that configuration's principal name
/// (informational: a gateway's pin is matched by its key).
///
/// # Errors
/// A usage failure naming why the key cannot be loaded: the gateway does not start unsigned.
fn gateway_key(config: Option<&Config>) -> Result<Principal, Failure> {
    let dir = config::config_dir();
    let path = dir.join(key_files::PRIVATE_KEY_FILE);
    let why = |e: String| Failure::usage(format!("--sign-receipts: {e}; the gateway does not start without its key"));
    if matches!(std::fs::symlink_metadata(&path), Err(e) if e.kind() == io::ErrorKind::NotFound) {
        return Err(why(key_files::KeyError::NoKey { dir }.to_string()));
    }
    let name = config.map_or_else(|| "mcp-gateway".to_owned(), Config::principal_name);
    let source = key_files::passphrase_source();
    let prompt = format!("passphrase for {}: ", path.display());
    Principal::load_with(&path, &name, || key_files::read_passphrase(&source, &prompt, &path))
        .map_err(|e| why(e.to_string()))
}

/// `warrant mcp-gateway --connect PATH` (`crate::gateway::connect`).
#[cfg(feature = "console")]
fn mcp_connect(path: &Path) -> Result<u8, Failure> {
    crate::gateway::connect(path).map_err(|e| Failure { code: 1, message: e, closed_pipe: false })
}

#[cfg(not(feature = "console"))]
fn mcp_connect(_path: &Path) -> Result<u8, Failure> {
    Err(Failure::usage("this build has no MCP gateway (built without the `console` feature)"))
}

/// `warrant mcp-gateway` (`crate::gateway`). A spool that cannot be resolved does not stop it:
/// every call is refused with the reason.
#[cfg(feature = "console")]
fn mcp_gateway(spool: Result<Spool, String>, a: McpGatewayArgs) -> Result<u8, Failure> {
    let check = |what: &str, id: String| {
        if packet::is_safe_id(&id) {
            Ok(id)
        } else {
            Err(Failure::usage(format!("{what} {id:?} is not a safe id (A-Z a-z 0-9 . _ : -)")))
        }
    };
    if !(a.wait.is_finite() && a.wait >= 0.0) {
        return Err(Failure::usage("--wait must be a number of seconds"));
    }
    let cwd = std::env::current_dir().ok().map(|d| d.to_string_lossy().into_owned());
    let notebook = match a.notebook {
        Some(n) => check("--notebook", n)?,
        None => crate::protocol::calls::notebook_for_dir(cwd.as_deref().unwrap_or("/")),
    };
    let opts = crate::gateway::Options {
        spool,
        config_dir: config::config_dir(),
        agent: check("--agent", a.agent.unwrap_or_else(|| "mcp-gateway".into()))?,
        notebook,
        cwd,
        name: check("--name", a.name.unwrap_or_else(|| crate::gateway::default_name(&a.command)))?,
        wait: Duration::from_secs_f64(a.wait.min(1e9)),
        command: a.command,
        listen: a.listen,
        signer: a.signer.map(std::sync::Arc::new),
    };
    crate::gateway::run(opts).map_err(Failure::usage)
}

#[cfg(not(feature = "console"))]
fn mcp_gateway(_spool: Result<Spool, String>, _a: McpGatewayArgs) -> Result<u8, Failure> {
    Err(Failure::usage("this build has no MCP gateway (built without the `console` feature)"))
}

/// The policy set: built-in classes plus `<config>/policy.toml` and the spool's `policy.toml`.
///
/// # Errors
/// A usage failure naming the file and what is wrong with it.
pub fn load_policies(spool: Option<&Spool>) -> Result<PolicySet, Failure> {
    PolicySet::load(&config::config_dir(), spool.map(Spool::root)).map_err(|e| Failure::usage(e.to_string()))
}

/// What `warrant demo` runs with instead of the principal's configuration: a throwaway,
/// unprotected key in its own temporary configuration directory (with its pinned keys and
/// checkpoint copies), so the demo never prompts and leaves nothing in the real configuration.
#[cfg_attr(not(feature = "console"), allow(dead_code))]
struct DemoRun {
    interval: f64,
    config_dir: PathBuf,
}

#[cfg(feature = "console")]
fn run_console(
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
        (Some(d), false) => Some(Principal::load_or_create(&d.config_dir, &config.principal_name())?.0),
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
fn run_console(
    _spool: Spool,
    _config: &Config,
    _read_only: bool,
    _theme: Option<String>,
    _demo: Option<DemoRun>,
) -> Result<u8, Failure> {
    Err(Failure::usage("this build has no console (built without the `console` feature)"))
}

/// Prints `v` as pretty JSON in which every [`crate::protocol::text::is_unsafe`] character inside a
/// string (C1 controls, bidi overrides, zero-width characters, …) is written as a `\uXXXX`
/// escape, like the C0 controls serde_json already escapes: the same JSON value for programs,
/// inert text on a terminal.
fn print_json(v: &Value) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    write_json_inert(&mut out, v)?;
    writeln!(out)?;
    out.flush()?;
    Ok(())
}

/// Writes `v` as pretty JSON with every [`crate::protocol::text::is_unsafe`] character escaped (see
/// [`print_json`]); the text parses back to exactly `v`.
///
/// # Errors
/// The writer's errors.
///
/// ```
/// let v = serde_json::json!({"agent": "a\u{202e}b\u{9b}c\u{1b}"});
/// let mut out = Vec::new();
/// warrant::cli::write_json_inert(&mut out, &v).unwrap();
/// let text = String::from_utf8(out).unwrap();
/// assert!(text.contains(r"a\u202eb\u009bc\u001b"), "{text}");
/// assert_eq!(serde_json::from_str::<serde_json::Value>(&text).unwrap(), v);
/// ```
pub fn write_json_inert<W: io::Write>(out: &mut W, v: &Value) -> io::Result<()> {
    struct Inert<'a>(serde_json::ser::PrettyFormatter<'a>);
    impl serde_json::ser::Formatter for Inert<'_> {
        fn write_string_fragment<W: ?Sized + io::Write>(&mut self, w: &mut W, fragment: &str) -> io::Result<()> {
            let mut start = 0;
            for (i, c) in fragment.char_indices() {
                if crate::protocol::text::is_unsafe(c) {
                    w.write_all(&fragment.as_bytes()[start..i])?;
                    let mut units = [0u16; 2];
                    for unit in c.encode_utf16(&mut units) {
                        write!(w, "\\u{unit:04x}")?;
                    }
                    start = i + c.len_utf8();
                }
            }
            w.write_all(&fragment.as_bytes()[start..])
        }
        fn begin_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
            self.0.begin_array(w)
        }
        fn end_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
            self.0.end_array(w)
        }
        fn begin_array_value<W: ?Sized + io::Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
            self.0.begin_array_value(w, first)
        }
        fn end_array_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
            self.0.end_array_value(w)
        }
        fn begin_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
            self.0.begin_object(w)
        }
        fn end_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
            self.0.end_object(w)
        }
        fn begin_object_key<W: ?Sized + io::Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
            self.0.begin_object_key(w, first)
        }
        fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
            self.0.begin_object_value(w)
        }
        fn end_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
            self.0.end_object_value(w)
        }
    }
    let mut ser = serde_json::Serializer::with_formatter(out, Inert(serde_json::ser::PrettyFormatter::new()));
    // An I/O error keeps its kind (a closed pipe is not a failure: `Failure::closed_pipe`).
    serde::Serialize::serialize(v, &mut ser).map_err(io::Error::from)
}

/// `propose`'s optional flags.
struct ProposeOptions<'a> {
    payload: Option<&'a Path>,
    id: Option<String>,
    wait: Option<f64>,
    expires: Option<&'a str>,
}

/// When a packet proposed `now` expires: `--expires` (a duration such as `30m`, or an RFC 3339
/// time in the future), else the class's `[expiry]` default in policy.toml, else never.
fn expiry_of(
    expires: Option<&str>,
    policies: &PolicySet,
    class: &str,
    now: time::OffsetDateTime,
) -> Result<Option<time::OffsetDateTime>, Failure> {
    let after = |d: std::time::Duration| {
        time::Duration::try_from(d)
            .ok()
            .and_then(|d| now.checked_add(d))
            .ok_or_else(|| Failure::usage("--expires is too far away"))
    };
    match expires {
        None => policies.default_expiry(class).map(after).transpose(),
        Some(s) => match crate::protocol::clock::parse_rfc3339(s) {
            Some(t) if t > now => Ok(Some(t)),
            Some(_) => Err(Failure::usage(format!("--expires {s} is not in the future"))),
            None => {
                let d = humantime::parse_duration(s).map_err(|e| {
                    Failure::usage(format!("--expires {s:?}: give a duration (30m, 2h, 1d) or an RFC 3339 time ({e})"))
                })?;
                if d.is_zero() {
                    return Err(Failure::usage("--expires must be later than now"));
                }
                after(d).map(Some)
            }
        },
    }
}

/// Where `warrant propose` publishes: a directory spool, or a JetStream store (the agent's side
/// of `docs/distributed.md`: the packet to the spool stream, the decision from the bucket).
enum ProposeTo<'a> {
    Directory(&'a Spool),
    #[cfg(feature = "jetstream")]
    Store(&'a crate::store::jetstream::StoreUrl),
}

fn propose(
    to: ProposeTo<'_>,
    class: &str,
    agent: &str,
    summary: &str,
    opts: &ProposeOptions<'_>,
) -> Result<u8, Failure> {
    let spool = match to {
        ProposeTo::Directory(spool) => Some(spool),
        #[cfg(feature = "jetstream")]
        ProposeTo::Store(_) => None,
    };
    let (payload, id, wait) = (opts.payload, opts.id.clone(), opts.wait);
    let wait_for = match wait {
        Some(s) => Some(
            Duration::try_from_secs_f64(s)
                .ok()
                .filter(|d| *d <= Duration::from_secs(366 * 86_400))
                .ok_or_else(|| Failure::usage(format!("--wait {s}: give a number of seconds from 0 to a year")))?,
        ),
        None => None,
    };
    let class = crate::protocol::registry::normalize(class);
    if !packet::is_class_id(&class) {
        return Err(Failure::usage(format!("{class:?} is not an action class (like email.send.external)")));
    }
    if !packet::is_safe_id(agent) {
        return Err(Failure::usage(format!(
            "agent id {:?} is not a safe id: use only A-Z a-z 0-9 . _ : -",
            crate::protocol::text::inert(agent, 60)
        )));
    }
    let proposed = match payload {
        None => json!({"summary": summary}),
        Some(path) => {
            let mut text = String::new();
            if path == Path::new("-") {
                std::io::stdin().read_to_string(&mut text)?;
            } else {
                text = std::fs::read_to_string(path).map_err(|e| Failure::usage(format!("{}: {e}", path.display())))?;
            }
            serde_json::from_str(&text).unwrap_or_else(|_| json!({"text": text}))
        }
    };
    let id = id.unwrap_or_else(|| format!("wp-{}", uuid::Uuid::now_v7().simple()));
    if !packet::is_safe_id(&id) {
        return Err(Failure::usage(format!("unsafe packet id {id:?}")));
    }
    if summary.trim().is_empty() {
        return Err(Failure::usage("--summary must not be blank: it is what the principal reads first"));
    }
    let now = time::OffsetDateTime::now_utc();
    let policies = load_policies(spool)?;
    let expires_at = expiry_of(opts.expires, &policies, &class, now)?;
    let mut doc =
        packet::portable_packet(&id, &class, agent, summary, proposed, &crate::protocol::clock::format_rfc3339(now));
    if let Some(t) = expires_at {
        doc["expires_at"] = json!(crate::protocol::clock::format_rfc3339(t));
    }
    let content_hash = crate::protocol::canonical::canonical_hash(&doc);
    #[cfg(feature = "jetstream")]
    let remote = match to {
        ProposeTo::Store(url) => Some(publish_to_store(url, agent, &id, &doc, &content_hash)?),
        ProposeTo::Directory(_) => None,
    };
    if let Some(spool) = spool {
        spool.ensure()?;
        // A packet is never replaced, pending or decided (a decision file in `decisions/` is not
        // consulted: only the chain decides, and an agent-planted file must not block a new packet).
        let path = spool.publish_new(&spool.packets_dir(), &id, &doc).map_err(|e| match e.kind() {
            io::ErrorKind::AlreadyExists => Failure::usage(format!(
                "packet {id:?} already exists in {}; choose another --id",
                spool.packets_dir().display()
            )),
            _ => e.into(),
        })?;
        tracing::info!(packet = %id, path = %path.display(), "published packet");
    }
    println!("{id}");
    let (Some(seconds), Some(wait_for)) = (wait, wait_for) else { return Ok(0) };
    let pinned = load_pinned()?;
    let quorum = policies.cosign(&class);
    let waited = match spool {
        Some(spool) => crate::govern::wait_for_decision(
            spool,
            &id,
            &content_hash,
            &pinned,
            agent,
            now,
            expires_at,
            wait_for,
            quorum,
        ),
        #[cfg(feature = "jetstream")]
        None => {
            let remote = remote.ok_or_else(|| Failure::usage("internal error: no store to wait on"))?;
            crate::govern::wait_for_store_decision(
                &remote,
                &id,
                &content_hash,
                &pinned,
                agent,
                expires_at,
                wait_for,
                quorum,
            )
            .map_err(|e| Failure::usage(format!("{}: {e}; {id} is not approved", remote.inner().url())))?
        }
        #[cfg(not(feature = "jetstream"))]
        None => return Err(Failure::usage("internal error: no spool to wait on")),
    };
    Ok(match waited {
        // A system decision: the principal's console refused it when its class's wait ran out.
        Waited::Decided(d) if d.system.is_some() => {
            eprintln!("warrant: {id} was not decided in time (refused as a system decision, not by a person)");
            EXIT_TIMEOUT
        }
        Waited::Decided(d) => {
            let reason = d.reason.map(|r| format!(": {}", crate::protocol::text::inert(&r, 2000))).unwrap_or_default();
            let by = if d.cosigners.is_empty() { d.principal } else { d.cosigners.join(" + ") };
            eprintln!("{} by {}{reason}", d.verdict.as_str(), crate::protocol::text::inert(&by, 400));
            if d.verdict == Verdict::Approve { 0 } else { EXIT_REFUSED }
        }
        Waited::Expired => {
            eprintln!("warrant: {id} expired undecided at {}; it can no longer be approved", doc["expires_at"]);
            EXIT_EXPIRED
        }
        Waited::Stopped(why) => {
            eprintln!("warrant: {agent} was killed by the principal{why}; {id} will not be approved");
            EXIT_STOPPED
        }
        Waited::Quarantined(why) => {
            eprintln!(
                "warrant: {agent} is quarantined by the principal{why}; {id} is blocked until the principal releases it"
            );
            EXIT_QUARANTINED
        }
        Waited::Timeout => {
            eprintln!("warrant: no decision on {id} within {seconds}s");
            EXIT_TIMEOUT
        }
        Waited::Unverified(why) => {
            eprintln!("warrant: the decision on {id} does not verify ({why}); {id} is not approved");
            EXIT_INVALID
        }
    })
}

/// Publishes the packet `doc` of `agent` to the store `url`'s spool stream (its subject is
/// `agent`'s, which the server's permissions bind to the agent's credentials), refusing an id
/// published before. Returns the connection, for the wait.
///
/// # Errors
/// The connection's and the server's errors; an agent id that is no subject token.
#[cfg(feature = "jetstream")]
fn publish_to_store(
    url: &crate::store::jetstream::StoreUrl,
    agent: &str,
    id: &str,
    doc: &Value,
    content_hash: &str,
) -> Result<crate::store::jetstream::JetStreamSpool, Failure> {
    use crate::store::jetstream::{ConnectOptions, JetStreamSpool};
    let fail = |e: crate::store::jetstream::JsError| Failure::usage(format!("{url}: {e}"));
    for (what, value) in [("agent", agent), ("packet", id)] {
        if !crate::store::jetstream::is_token(value) {
            return Err(Failure::usage(format!(
                "{what} id {:?}: on a JetStream store, agent and packet ids use only A-Z a-z 0-9 _ - (they are subject tokens)",
                crate::protocol::text::inert(value, 60)
            )));
        }
    }
    let opts = ConnectOptions::from_env().map_err(Failure::usage)?;
    let remote = JetStreamSpool::connect(url, &opts).map_err(fail)?;
    let mut bytes = serde_json::to_vec_pretty(doc).map_err(io::Error::other)?;
    bytes.push(b'\n');
    let ack = remote.publish_packet(agent, &bytes, content_hash).map_err(fail)?;
    if ack.duplicate {
        return Err(Failure::usage(format!("packet {id:?} was published before (same content); choose another --id")));
    }
    tracing::info!(packet = %id, seq = ack.seq, store = %url, "published packet");
    Ok(remote)
}

/// A fresh scan of `spool` and its packet `id`, or why there is none.
fn scanned_packet(spool: &Spool, id: &str) -> Result<(spool::Snapshot, spool::PacketEntry), Failure> {
    let snap = Scanner::new().scan(spool)?;
    let entry = scanned_in(spool, &snap, id)?;
    Ok((snap, entry))
}

/// What `approve` or `refuse` shows on a terminal before asking: the packet's id, agent,
/// publisher, class and content hash, then the whole packet as JSON, every field, never cut, its
/// text inert (issue 15 §3).
fn show_for_review(entry: &spool::PacketEntry, verdict: Verdict) -> Result<(), Failure> {
    let p = &entry.packet;
    let t = |s: &str| crate::protocol::text::inert(s, usize::MAX);
    let mut out = std::io::stdout().lock();
    writeln!(out, "Sign {} of this packet?", if verdict == Verdict::Approve { "an APPROVAL" } else { "a REFUSAL" })?;
    writeln!(out, "     packet  {}", t(&p.id))?;
    writeln!(out, "      agent  {}", t(&p.agent))?;
    writeln!(out, "  publisher  {}", spool::publisher_label(entry.owner))?;
    writeln!(out, "      class  {}", t(&p.action_class))?;
    writeln!(out, "    summary  {}", t(&p.summary))?;
    writeln!(out, "       hash  {}", p.content_hash)?;
    writeln!(out, "the whole packet:")?;
    write_json_inert(&mut out, &p.raw)?;
    writeln!(out)?;
    out.flush()?;
    Ok(())
}

/// Asks `question` on the terminal; true only for `y` or `yes`.
fn confirmed(question: &str) -> Result<bool, Failure> {
    eprint!("{question} [y/N] ");
    std::io::stderr().flush()?;
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer)?;
    Ok(matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes"))
}

/// `warrant init --agents-group GROUP [DIR]`: the set-up `docs/spool.md` recommends (Trust
/// boundary), made and checked in one command, idempotently; prints one line per path.
///
/// | path | owner:group | mode |
/// | --- | --- | --- |
/// | spool, `decisions/` | principal:GROUP | `0755` |
/// | `packets/`, `receipts/`, `uses/` | principal:GROUP | `3770` (setgid, sticky: the group writes, no one removes another's files) |
/// | `chain.jsonl` | principal:GROUP | `0644` |
/// | `.chain.lock` | principal | `0600` |
fn init_shared_spool(spool: &Spool, group: &str) -> Result<u8, Failure> {
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
    let gid = uzers::get_group_by_name(group).map(|g| g.gid()).ok_or_else(|| {
        Failure::usage(format!(
            "no Unix group {:?} (create it with `groupadd`)",
            crate::protocol::text::inert(group, 60)
        ))
    })?;
    spool.ensure()?;
    let lock = spool.root().join(".chain.lock");
    for path in [spool.chain_path(), lock.clone()] {
        std::fs::OpenOptions::new().create(true).append(true).open(&path)?;
    }
    let me = rustix::process::geteuid().as_raw();
    let entries = [
        (spool.root().to_owned(), Some(gid), 0o755),
        (spool.decisions_dir(), Some(gid), 0o755),
        (spool.packets_dir(), Some(gid), 0o3770),
        (spool.receipts_dir(), Some(gid), 0o3770),
        (spool.uses_dir(), Some(gid), 0o3770),
        (spool.chain_path(), Some(gid), 0o644),
        (lock, None, 0o600),
    ];
    for (path, group_of, mode) in entries {
        let meta = std::fs::symlink_metadata(&path)?;
        if meta.file_type().is_symlink() {
            return Err(Failure::usage(format!("{} is a symlink: refusing to set it up", path.display())));
        }
        if meta.uid() != me {
            return Err(Failure::usage(format!(
                "{} is owned by uid {}, not by you ({me}): the principal must own the spool",
                path.display(),
                meta.uid()
            )));
        }
        let mut did = Vec::new();
        if let Some(gid) = group_of
            && meta.gid() != gid
        {
            std::os::unix::fs::chown(&path, None, Some(gid)).map_err(|e| {
                Failure::usage(format!(
                    "{}: cannot give it to group {group}: {e} (are you in the group?)",
                    path.display()
                ))
            })?;
            did.push(format!("group {group}"));
        }
        if meta.permissions().mode() & 0o7777 != mode {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))?;
            did.push(format!("mode {mode:04o}"));
        }
        let what = if did.is_empty() { "already right".to_owned() } else { format!("set {}", did.join(", ")) };
        println!("{:<40} {:04o} {}  {what}", path.display(), mode, if group_of.is_some() { group } else { "-" });
    }
    println!(
        "agents in {group} can now publish into packets/ and receipts/, claim uses in uses/ and read decisions; only you can sign and append"
    );
    Ok(0)
}

/// `warrant checkpoint forget`: shows each checkpoint pinning the spool's chain and what the chain
/// holds now, asks (or takes `--yes`), and moves them aside.
fn checkpoint_forget(spool: &Spool, yes: bool) -> Result<u8, Failure> {
    use std::io::IsTerminal as _;
    let found = crate::store::checkpoint_files::held_for(spool, &load_pinned()?);
    if found.is_empty() {
        println!("no checkpoint pins {}", spool.root().display());
        return Ok(0);
    }
    let chain = spool.chain_path();
    let now = match std::fs::symlink_metadata(&chain) {
        Ok(m) => format!("{} bytes", m.len()),
        Err(_) => "no chain.jsonl".into(),
    };
    println!("{} now holds {now}.", spool.root().display());
    for (path, cp) in &found {
        match cp {
            Ok(cp) => println!(
                "{}: pins {} records, {} bytes, head {}, signed by {} at {}",
                path.display(),
                cp.records,
                cp.bytes,
                cp.head_hash,
                crate::protocol::text::inert(&cp.principal, 60),
                crate::protocol::text::inert(&cp.signed_at, 40)
            ),
            Err(e) => println!("{}: does not verify ({})", path.display(), crate::protocol::text::inert(e, 200)),
        }
    }
    if !yes {
        if !std::io::stdin().is_terminal() {
            return Err(Failure::usage("forgetting a checkpoint without a terminal needs --yes"));
        }
        if !confirmed("forget these checkpoints (the chain will no longer be held to them)?")? {
            eprintln!("warrant: nothing was forgotten");
            return Ok(EXIT_INVALID);
        }
    }
    for (path, _) in &found {
        let to = crate::store::checkpoint_files::forget(path)
            .map_err(|e| Failure::usage(format!("{}: {e}", path.display())))?;
        println!("forgot {} (kept as {})", path.display(), to.display());
    }
    Ok(0)
}

/// What an approval of `id` stands in for, or why the composed verdict of assessment `a` forbids
/// approving it.
fn approvable(a: &crate::monitor::Assessment, id: &str) -> Result<Vec<String>, String> {
    let Some(v) = a.verdicts.get(id) else { return Ok(Vec::new()) };
    match v.why_not_approvable() {
        None => Ok(v.stands_in_for()),
        Some((why, remedy)) => Err(format!(
            "packet {id:?} is {} by {} ({}); it can only be refused. To change that: {}",
            v.state,
            v.decisive.as_str(),
            crate::protocol::text::inert(&why, 300),
            crate::protocol::text::inert(&remedy, 300)
        )),
    }
}

/// `warrant approve ID ID …` / `warrant refuse ID ID … --reason`: one confirmation for the
/// batch (on a terminal, every packet shown whole first; otherwise `--yes`), then
/// [`spool::decide_many`]: one signed record per packet under one lock and one sync, all or
/// nothing. Prints one line per packet signed.
fn decide_batch_cli(
    spool: &Spool,
    config: &Config,
    ids: &[String],
    verdict: Verdict,
    reason: Option<&str>,
    review: &Review,
) -> Result<u8, Failure> {
    use std::io::IsTerminal as _;
    if review.hash.is_some() {
        return Err(Failure::usage(
            "--hash names one packet's content; a batch is confirmed on a terminal or with --yes",
        ));
    }
    let interactive = std::io::stdin().is_terminal() && !review.yes;
    if !interactive && !review.yes {
        return Err(Failure::usage(format!("{} of several packets without a terminal needs --yes", verdict.as_str())));
    }
    let (principal, pinned) = load_principal(config)?;
    let mut snap = Scanner::new().scan(spool)?;
    let mut entries = Vec::with_capacity(ids.len());
    for id in ids {
        entries.push(scanned_in(spool, &snap, id)?);
    }
    if interactive {
        for e in &entries {
            show_for_review(e, verdict)?;
        }
        if !confirmed(&format!("sign {} of these {} packets?", verdict.as_str(), entries.len()))? {
            eprintln!("warrant: nothing was signed");
            return Ok(EXIT_INVALID);
        }
        // What is signed is what was shown.
        snap = Scanner::new().scan(spool)?;
        for e in &entries {
            let now = scanned_in(spool, &snap, &e.packet.id)?;
            if now.packet.content_hash != e.packet.content_hash {
                return Err(Failure::invalid(format!(
                    "packet {:?} changed while you were reviewing it; nothing was signed: review it again",
                    e.packet.id
                )));
            }
        }
    }
    let policies = load_policies(Some(spool))?;
    if verdict == Verdict::Approve
        && let Some((e, q)) = entries.iter().find_map(|e| Some((e, policies.cosign(&e.packet.action_class)?)))
    {
        return Err(Failure::invalid(format!(
            "{} needs the approval of {} (policy.toml [cosign]): approve it on its own (`warrant approve {}`); nothing was signed",
            e.packet.id,
            q.describe(),
            e.packet.id
        )));
    }
    let observer = crate::preconditions::Observer::for_policies(&policies, Some(&config::config_dir()));
    let mut revalidations = crate::monitor::Revalidations::default();
    if verdict == Verdict::Approve {
        for e in &entries {
            if let Some(pre) = crate::monitor::revalidated_preconditions(&e.packet) {
                revalidations.insert(e.packet.id.clone(), std::sync::Arc::new(observer.recheck_pending(&pre)));
            }
        }
    }
    // The composed verdict, assessed once on the chain verified under the lock.
    let mut assessed: Option<crate::monitor::Assessment> = None;
    let admit = |view: &spool::ChainView, p: &crate::protocol::packet::Packet| -> Result<Vec<String>, String> {
        if verdict == Verdict::Refuse {
            return Ok(Vec::new());
        }
        if let Some(q) = policies.cosign(&p.action_class) {
            return Err(format!("{} needs the approval of {}: approve it on its own", p.id, q.describe()));
        }
        let a = assessed
            .get_or_insert_with(|| crate::assess::assess_view(&policies, &snap, view, &revalidations, &principal.name));
        approvable(a, &p.id)
    };
    let items: Vec<spool::BatchItem<'_>> =
        entries.iter().map(|e| spool::BatchItem { packet: &e.packet, publisher: Some(e.owner) }).collect();
    let decided = spool::decide_many(
        spool,
        &principal,
        &pinned,
        &items,
        verdict,
        reason,
        &crate::protocol::clock::now_rfc3339(),
        &observer,
        admit,
    )
    .map_err(|e| match e {
        spool::BatchError::Decide(spool::DecideError::Io(_) | spool::DecideError::Chain(_)) => {
            Failure::usage(e.to_string())
        }
        _ => Failure::invalid(e.to_string()),
    })?;
    let mut code = 0;
    for (e, d) in entries.iter().zip(&decided) {
        println!(
            "{} {}: record {} {} signed by {} ({})",
            if verdict == Verdict::Approve { "approved" } else { "refused" },
            e.packet.id,
            d.appended.chain_index,
            d.appended.entry_hash,
            principal.name,
            principal.fingerprint()
        );
        if let Some(err) = &d.file_error {
            eprintln!(
                "warrant: {}: the decision is recorded in the chain, but its decision file was not written: {err}",
                e.packet.id
            );
            code = EXIT_USAGE;
        }
    }
    Ok(code)
}

/// The packet `id` of a scan, or why it is not there.
fn scanned_in(spool: &Spool, snap: &spool::Snapshot, id: &str) -> Result<spool::PacketEntry, Failure> {
    if let Some(entry) = snap.packet(id).cloned() {
        return Ok(entry);
    }
    if let Some(bad) = snap.invalid.iter().find(|f| f.name.strip_suffix(".json") == Some(id)) {
        return Err(Failure::invalid(format!("packet {id:?} is invalid: {}", bad.reason)));
    }
    Err(Failure::invalid(format!("no valid packet {id:?} in {}", spool.root().display())))
}

fn decide_cli(
    spool: &Spool,
    config: &Config,
    id: &str,
    verdict: Verdict,
    reason: Option<&str>,
    review: &Review,
    grant: Option<&(crate::protocol::grant::ScopeRequest, crate::protocol::grant::GrantOptions)>,
) -> Result<u8, Failure> {
    use std::io::IsTerminal as _;
    let interactive = std::io::stdin().is_terminal() && !review.yes;
    if !interactive && review.hash.is_none() && !review.yes {
        return Err(Failure::usage(format!(
            "{} without a terminal needs --hash sha256:… (the content hash `warrant list` prints for {id}) or --yes",
            verdict.as_str()
        )));
    }
    let (principal, pinned) = load_principal(config)?;
    let (mut snap, mut entry) = scanned_packet(spool, id)?;
    if let Some(want) = &review.hash
        && *want != entry.packet.content_hash
    {
        return Err(Failure::invalid(format!(
            "packet {id:?} changed since it was reviewed: its content hash is {}, not {}; nothing was signed",
            entry.packet.content_hash,
            crate::protocol::text::inert(want, 80)
        )));
    }
    // A grant asked for is checked before anything is signed, and shown with the packet.
    let policies = load_policies(Some(spool))?;
    let decided_at = crate::protocol::clock::now_rfc3339();
    let grant_input = match grant {
        Some((scope, options)) => {
            crate::protocol::grant::prepare(&entry.packet, &policies, scope, options, &decided_at)
                .map_err(|e| Failure::invalid(format!("{e}; nothing was signed")))?
        }
        None => None,
    };
    if interactive {
        show_for_review(&entry, verdict)?;
        if let Some(g) = &grant_input {
            show_grant_preview(g, &snap, &policies, &principal)?;
        }
        if !confirmed(&format!("sign {} {id}?", verdict.as_str()))? {
            eprintln!("warrant: nothing was signed");
            return Ok(EXIT_INVALID);
        }
        // What is signed is what was shown: a packet rewritten while the principal read it is
        // refused, not signed in its new form.
        let (now_snap, now) = scanned_packet(spool, id)?;
        if now.packet.content_hash != entry.packet.content_hash {
            return Err(Failure::invalid(format!(
                "packet {id:?} changed while you were reviewing it; nothing was signed: review it again"
            )));
        }
        (snap, entry) = (now_snap, now);
    }
    // An approval must pass the composed verdict, checked on the chain verified under the lock.
    // Its preconditions are observed here, before the lock is taken, never under it.
    let observer = crate::preconditions::Observer::for_policies(&policies, Some(&config::config_dir()));
    let mut revalidations = crate::monitor::Revalidations::default();
    if verdict == Verdict::Approve
        && let Some(pre) = crate::monitor::revalidated_preconditions(&entry.packet)
    {
        revalidations.insert(id.to_owned(), std::sync::Arc::new(observer.recheck_pending(&pre)));
    }
    let admit = |view: &spool::ChainView| -> Result<Vec<String>, String> {
        if verdict == Verdict::Refuse {
            return Ok(Vec::new());
        }
        let a = crate::assess::assess_view(&policies, &snap, view, &revalidations, &principal.name);
        approvable(&a, id)
    };
    let decided = spool::decide_with(
        spool,
        &principal,
        &pinned,
        &entry.packet,
        Some(entry.owner),
        verdict,
        reason,
        &decided_at,
        &observer,
        policies.cosign(&entry.packet.action_class),
        admit,
    )
    .map_err(|e| match e {
        spool::DecideError::Io(_) | spool::DecideError::Chain(_) => Failure::usage(e.to_string()),
        _ => Failure::invalid(e.to_string()),
    })?;
    println!(
        "{} {id}{}: record {} {} signed by {} ({})",
        if verdict == Verdict::Approve { "approved" } else { "refused" },
        decided.cosigned.as_ref().map(|c| format!(" ({})", c.describe())).unwrap_or_default(),
        decided.appended.chain_index,
        decided.appended.entry_hash,
        principal.name,
        principal.fingerprint()
    );
    if let Some(Value::Array(stands)) = decided.signed.document.get("stands_in_for") {
        for s in stands.iter().filter_map(Value::as_str) {
            println!("  this approval stands in for {s}");
        }
    }
    if let Some(g) = &grant_input {
        match spool::append_grant(spool, &principal, &pinned, g) {
            Ok((g, a)) => {
                println!("granted {}: record {} {}", g.grant_id, a.chain_index, a.entry_hash);
                println!("  covers {}", crate::protocol::text::inert(&g.describe(), usize::MAX));
            }
            Err(e) => {
                eprintln!("warrant: {id} is approved (once), but the grant was not recorded: {e}");
                return Ok(EXIT_USAGE);
            }
        }
    }
    if let Some(e) = &decided.file_error {
        // The agent waiting on the decision file has not got it: not a success.
        eprintln!(
            "warrant: the decision is recorded in the chain, but its decision file was not written: {e}; \
             the next decision or `warrant list` writes it again from the chain"
        );
        return Ok(EXIT_USAGE);
    }
    Ok(0)
}

/// What `approve --scope` shows before asking: the grant in words, and the calls in the spool it
/// would have covered (`grant::Grant::covers`, time aside).
fn show_grant_preview(
    input: &crate::protocol::grant::GrantInput,
    snap: &spool::Snapshot,
    policies: &PolicySet,
    principal: &Principal,
) -> Result<(), Failure> {
    let g = grant_preview(input, principal)?;
    let past = crate::protocol::grant::past_calls(&g, snap.packets.iter().map(|e| &*e.packet), policies);
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "and a GRANT ({}) for {}",
        g.scope.as_str(),
        crate::protocol::text::inert(&g.describe(), usize::MAX)
    )?;
    writeln!(
        out,
        "it would have covered {} earlier call{} in this spool:",
        past.len(),
        if past.len() == 1 { "" } else { "s" }
    )?;
    for p in &past {
        writeln!(
            out,
            "  {}  {}",
            crate::protocol::text::inert(&p.id, 120),
            crate::protocol::text::inert(&p.summary, 200)
        )?;
    }
    out.flush()?;
    Ok(())
}

/// The grant `input` would be once signed by `principal` (for previews).
fn grant_preview(
    input: &crate::protocol::grant::GrantInput,
    principal: &Principal,
) -> Result<crate::protocol::grant::Grant, Failure> {
    crate::protocol::grant::Grant::from_document(&crate::protocol::grant::grant_document(
        input,
        &principal.name,
        &principal.fingerprint(),
    ))
    .map_err(Failure::invalid)
}

/// `warrant grants list|revoke`.
fn grants_cmd(spool: &Spool, config: &Config, action: GrantsAction) -> Result<u8, Failure> {
    match action {
        GrantsAction::List { json, all } => {
            if !spool.root().is_dir() {
                return Err(Failure::usage(format!("{}: no such spool directory", spool.root().display())));
            }
            let view = spool::verify_chain(spool, &load_pinned()?)?;
            if let Some(first) = view.report.first() {
                return Err(Failure::invalid(format!(
                    "the chain does not verify ({first}); its grants are not listed (`warrant verify`)"
                )));
            }
            let uses = spool::read_uses(spool, &mut std::collections::HashMap::new()).by_grant;
            let now =
                crate::protocol::clock::unix_seconds(&crate::protocol::clock::now_rfc3339()).unwrap_or(f64::INFINITY);
            let mut rows: Vec<(
                std::sync::Arc<crate::protocol::grant::Grant>,
                &'static str,
                Option<&crate::protocol::grant::Revocation>,
            )> = Vec::new();
            for g in view.grants.issued() {
                let used = uses.get(&g.grant_id).copied().unwrap_or(0);
                let status = if g.expires_unix.is_some_and(|t| t <= now) {
                    "expired"
                } else if g.max_uses.is_some_and(|m| used >= m) {
                    "used up"
                } else {
                    "live"
                };
                if all || status == "live" {
                    rows.push((g.clone(), status, None));
                }
            }
            if all {
                for (g, r) in view.grants.revoked_all() {
                    rows.push((g.clone(), "revoked", Some(r)));
                }
                rows.sort_by_key(|(g, ..)| g.chain_index);
            }
            if json {
                let list: Vec<Value> = rows
                    .iter()
                    .map(|(g, status, revoked)| {
                        let mut v = grant_json(g, uses.get(&g.grant_id).copied().unwrap_or(0));
                        v["status"] = json!(status);
                        if let Some(r) = revoked {
                            v["revoked"] = json!({"by": r.principal, "at": r.decided_at, "reason": r.reason});
                        }
                        v
                    })
                    .collect();
                write_json_inert(&mut std::io::stdout().lock(), &Value::Array(list))?;
                println!();
                return Ok(0);
            }
            if rows.is_empty() {
                println!("no {}grants in {}", if all { "" } else { "live " }, spool.root().display());
                return Ok(0);
            }
            for (g, status, revoked) in &rows {
                let used = uses.get(&g.grant_id).copied().unwrap_or(0);
                let t = |s: &str| crate::protocol::text::inert(s, usize::MAX);
                let uses = match g.max_uses {
                    Some(m) => format!("{used}/{m} uses"),
                    None => format!("{used} use{}", if used == 1 { "" } else { "s" }),
                };
                println!("{}  {status}  {}  {uses}", g.grant_id, g.scope.as_str());
                println!("  covers {}", t(&g.describe()));
                println!(
                    "  signed by {} ({}) at {}, record {}",
                    t(&g.principal),
                    t(&g.key),
                    t(&g.decided_at),
                    g.chain_index
                );
                if let Some(r) = revoked {
                    println!("  revoked by {} at {}: {}", t(&r.principal), t(&r.decided_at), t(&r.reason));
                }
            }
            Ok(0)
        }
        GrantsAction::Revoke { id, reason } => {
            let (principal, pinned) = load_principal(config)?;
            let a =
                spool::revoke_grant(spool, &principal, &pinned, &id, &reason, &crate::protocol::clock::now_rfc3339())
                    .map_err(|e| match e {
                    spool::DecideError::Io(_) | spool::DecideError::Chain(_) => Failure::usage(e.to_string()),
                    _ => Failure::invalid(e.to_string()),
                })?;
            println!(
                "revoked {id}: record {} {} signed by {} ({})",
                a.chain_index,
                a.entry_hash,
                principal.name,
                principal.fingerprint()
            );
            Ok(0)
        }
    }
}

/// A grant as `warrant grants list --json` prints it.
fn grant_json(g: &crate::protocol::grant::Grant, uses: u64) -> Value {
    json!({
        "grant_id": g.grant_id, "scope": g.scope.as_str(), "covers": g.describe(), "agent": g.agent,
        "notebook": g.notebook, "action_class": g.action_class, "tool": g.tool,
        "session": match &g.scope { crate::protocol::grant::Scope::Session(s) => Some(s.clone()), _ => None },
        "pattern": match &g.scope { crate::protocol::grant::Scope::Pattern(p) => Some(p.to_string()), _ => None },
        "constraints": match &g.scope { crate::protocol::grant::Scope::Class(n) => Some(n.to_json()), _ => None },
        "workdir": g.workdir,
        "expires_at": g.expires_at, "max_uses": g.max_uses, "uses": uses,
        "covers_destructive": g.covers_destructive, "packet_id": g.packet_id, "principal": g.principal,
        "key": g.key, "decided_at": g.decided_at, "reason": g.reason, "record": g.chain_index,
    })
}

fn list(spool: &Spool, as_json: bool) -> Result<u8, Failure> {
    // A mistyped spool is an error, not an empty listing (as `verify` does).
    if !spool.root().is_dir() {
        return Err(Failure::usage(format!("{}: no such spool directory", spool.root().display())));
    }
    let snap = Scanner::for_config(&config::config_dir()).scan(spool)?;
    // A listing also writes again decision files a full disk cost (`docs/spool.md`).
    let missing = spool::ids_without_decision_files(spool);
    let (view, restored) = spool::verify_chain_restoring(spool, &load_pinned()?, &missing)?;
    if restored > 0 {
        eprintln!("warrant: wrote {restored} decision file(s) again from the chain");
    }
    if let Some(first) = view.report.first() {
        eprintln!(
            "warrant: the chain does not verify ({}); decisions from failing records are not shown",
            crate::protocol::text::inert(&first.to_string(), 400)
        );
    }
    let decided = &view.decisions;
    if as_json {
        // warrant's own verdict and the class's risk, not what the packet declares about itself.
        let policies = load_policies(Some(spool))?;
        let principal = Config::load().ok().and_then(|c| c.principal).unwrap_or_else(|| "local".into());
        let now = time::OffsetDateTime::now_utc();
        let a = crate::assess::assess_now(&policies, &config::config_dir(), &snap, &view, &principal);
        let packets: Vec<Value> = snap
            .packets
            .iter()
            .map(|e| {
                let p = &e.packet;
                let risk = policies.class_risk(&p.action_class).as_str();
                let verdict = a.verdicts.get(&p.id);
                json!({
                    "packet_id": p.id, "agent": p.agent, "action_class": p.action_class,
                    "risk": risk,
                    "declared_risk": p.risk.as_deref().filter(|r| *r != risk),
                    "state": verdict.map(|v| v.state.as_str()),
                    "decisive_model": verdict.map(|v| v.decisive.as_str()),
                    "declared_state": p.state.map(DecisionState::as_str),
                    "publisher": {"uid": e.owner, "user": spool::user_name(e.owner).as_deref()},
                    "impersonation": a.monitor.impersonations.get(&p.id),
                    "summary": p.summary, "content_hash": p.content_hash,
                    "decision": decided.get(&p.id).map(|d| d.verdict.as_str()),
                    "expired": !decided.contains_key(&p.id) && is_expired(p, now),
                    "changed_since_decision": decided.get(&p.id).is_some_and(|d| d.packet_hash != p.content_hash),
                    "cosigners": decided.get(&p.id).map(|d| &d.cosigners).filter(|c| !c.is_empty()),
                    "cosigning": view.cosigning.get(&p.id).filter(|c| c.packet_hash == p.content_hash).map(|c| json!({
                        "signed": c.signers(), "required": c.quorum.required, "principals": c.quorum.principals,
                    })),
                })
            })
            .collect();
        let invalid: Vec<Value> = snap
            .invalid
            .iter()
            .map(|f| json!({"file": f.name, "kind": f.kind, "reason": f.reason.to_string()}))
            .collect();
        print_json(&json!({"packets": packets, "invalid": invalid}))?;
        return Ok(0);
    }
    let mut out = std::io::stdout().lock();
    let now = time::OffsetDateTime::now_utc();
    for e in &snap.packets {
        let p = &e.packet;
        // A packet rewritten after its decision: the decision binds the content that was signed.
        let status = match decided.get(&p.id) {
            None if is_expired(p, now) => "expired",
            None => "pending",
            Some(d) if d.packet_hash != p.content_hash => "changed",
            Some(d) => d.verdict.as_str(),
        };
        let t = |s: &str, n: usize| crate::protocol::text::inert(s, n);
        writeln!(
            out,
            "{status:8} {:40} {} {:20} {:22} {}",
            p.id,
            p.content_hash,
            t(&p.agent, 40),
            t(&p.action_class, 60),
            t(&p.summary, 200)
        )?;
        if let Some(c) = view.cosigning.get(&p.id).filter(|c| c.packet_hash == p.content_hash && status == "pending") {
            writeln!(out, "         co-signing: {}; needs {}", t(&c.describe(), 400), t(&c.quorum.describe(), 400))?;
        }
    }
    for f in &snap.invalid {
        writeln!(
            out,
            "invalid  {:40} {}",
            crate::protocol::text::inert(&f.name, 200),
            crate::protocol::text::inert(&f.reason.to_string(), 400)
        )?;
    }
    Ok(0)
}

/// `warrant hook HOST`: the answer printed, its code (0 or 2) returned; a configuration that
/// cannot be read denies every event in the host's format.
/// The spool a hook or the gateway governs calls on: the directory spool as every command
/// resolves it, or on a JetStream store this host's replica, pulled, with a [`Follower`] that
/// keeps it live while it is held (`docs/distributed.md`, "Agents' hosts").
///
/// [`Follower`]: crate::store::replica::Follower
///
/// # Errors
/// The reason, for the hook's deny or the gateway's refusals.
#[cfg(feature = "jetstream")]
fn governed_spool(
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
            Ok((spool_at(dir), Some(follower)))
        }
        _ => Ok((resolve_spool(spool_arg, config).map_err(|f| f.message)?, None)),
    }
}

/// [`governed_spool`] without JetStream: the directory spool.
#[cfg(not(feature = "jetstream"))]
fn governed_spool(
    spool_arg: Option<PathBuf>,
    _replica: Option<PathBuf>,
    config: &Config,
) -> Result<(Spool, Option<()>), String> {
    Ok((resolve_spool(spool_arg, config).map_err(|f| f.message)?, None))
}

fn hook_cmd(
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
        let config = Config::load()?.with_store(store);
        let (spool, kept) = governed_spool(spool_arg, replica, &config)?;
        follower = kept;
        let wait = Duration::try_from_secs_f64(wait)
            .ok()
            .filter(|d| *d <= Duration::from_secs(86_400))
            .ok_or_else(|| format!("--wait {wait}: give a number of seconds from 0 to 86400"))?;
        for (flag, id) in [("--agent", &agent), ("--notebook", &notebook)] {
            if let Some(id) = id.as_deref().filter(|id| !packet::is_safe_id(id)) {
                return Err(format!(
                    "{flag} {:?} is not a safe id (A-Z a-z 0-9 . _ : -)",
                    crate::protocol::text::inert(id, 60)
                ));
            }
        }
        Ok(crate::hook::HookOptions { host, spool, config_dir: config::config_dir(), agent, notebook, wait })
    })();
    if let Ok(o) = &opts {
        // The host kills a hook at its timeout and then runs the call: whatever is slow (a large
        // chain, a slow disk, a stdin left open), the hook ends first, with exit 2.
        let deadline = o.wait + Duration::from_secs(crate::hook::WATCHDOG_GRACE_SECS);
        std::thread::spawn(move || {
            std::thread::sleep(deadline);
            let _ = writeln!(io::stderr(), "warrant: no answer within the hook's time; the call is denied");
            std::process::exit(i32::from(EXIT_USAGE));
        });
    }
    let answer = crate::hook::run_stdin(host, opts.as_ref().map_err(String::as_str));
    // The follower stops before the answer is written.
    #[cfg(feature = "jetstream")]
    drop(follower);
    #[cfg(not(feature = "jetstream"))]
    let _ = follower;
    let mut out = io::stdout().lock();
    if out.write_all(answer.stdout.as_bytes()).and_then(|()| out.flush()).is_err() {
        // The host did not read the answer: make sure it cannot read "proceed". (`writeln!`, not
        // `eprintln!`, which panics on a closed stderr.)
        let _ = writeln!(io::stderr(), "warrant: could not write the answer; the call is denied");
        return EXIT_USAGE;
    }
    if !answer.stderr.is_empty() {
        let _ = writeln!(io::stderr(), "{}", answer.stderr);
    }
    answer.code
}

/// Whether the packet's `expires_at` has passed at `now` (an undecided packet then can only be
/// refused).
fn is_expired(p: &packet::Packet, now: time::OffsetDateTime) -> bool {
    p.expires_at.as_deref().and_then(crate::protocol::clock::parse_rfc3339).is_some_and(|t| t <= now)
}

/// Reads PATH as a spool directory, a JSON-lines chain, or an export envelope, and verifies it.
///
/// A spool's chain and a `.jsonl` chain are warrant's own, so every approval signature in them
/// must be a warrant signature under a pinned key; an export from another producer keeps its
/// foreign signatures opaque (OpenTrustGraph). A directory that is neither a spool (no
/// `chain.jsonl`, `packets/` or `decisions/`) nor readable is a usage error.
///
/// # Errors
/// I/O errors and non-spool directories (exit 2).
pub fn verify_path(path: &Path, pinned: &PinnedKeys) -> Result<VerifyReport, Failure> {
    let own = VerifyOptions { pinned: Some(pinned), strict_signatures: true };
    let meta = std::fs::metadata(path).map_err(|e| Failure::usage(format!("{}: {e}", path.display())))?;
    if meta.is_dir() {
        let spool = spool_at(path.to_owned());
        let looks_like_spool =
            [spool.chain_path(), spool.packets_dir(), spool.decisions_dir()].iter().any(|p| p.exists());
        if !looks_like_spool {
            return Err(Failure::usage(format!(
                "{}: not a spool (no chain.jsonl, packets/ or decisions/)",
                path.display()
            )));
        }
        // The checkpoint first, then the chain: a decision signed between the two reads must
        // not make the chain look cut off (the chain only grows).
        let (checkpoint, notes) = crate::store::checkpoint_files::latest(&spool, pinned);
        // A spool without chain.jsonl has an empty chain, which is valid (as `export` says).
        let chain_path = spool.chain_path();
        let mut report = match chain_file::open_regular(&chain_path, true) {
            Ok(file) => chain::verify_reader(file, own, &std::sync::atomic::AtomicU64::new(0))
                .map_err(|source| chain_file::ChainError::Io { path: chain_path.clone(), source })?,
            Err(chain_file::ChainError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                VerifyReport::default()
            }
            Err(e) => return Err(e.into()),
        };
        for note in notes {
            eprintln!("warrant: {}", crate::protocol::text::inert(&note, 4000));
        }
        if let Some(f) =
            checkpoint.and_then(|cp| crate::store::checkpoint_files::check(&spool.chain_path(), &cp, &report))
        {
            report.findings.push(f);
        }
        return Ok(report);
    }
    // A JSON-lines chain starts with a record line; anything else is read as an export envelope.
    let file = chain_file::open_regular(path, false)?;
    let mut first = Vec::new();
    std::io::BufRead::read_until(
        &mut std::io::BufReader::new(&file).take(chain::MAX_LINE_BYTES as u64),
        b'\n',
        &mut first,
    )
    .map_err(|e| Failure::usage(format!("{}: {e}", path.display())))?;
    let first_is_record = crate::protocol::canonical::parse_strict(first.trim_ascii())
        .ok()
        .and_then(|v| v.get("schema").and_then(Value::as_str).map(|s| s.starts_with("opentrustgraph/")))
        .unwrap_or(false);
    if first_is_record {
        return Ok(chain_file::verify_file(path, own)?);
    }
    let bytes = std::fs::read(path).map_err(|e| Failure::usage(format!("{}: {e}", path.display())))?;
    match crate::protocol::canonical::parse_strict(&bytes) {
        Ok(v @ Value::Object(_)) => {
            let foreign = VerifyOptions { pinned: Some(pinned), strict_signatures: false };
            Ok(chain::verify_export(&v, foreign))
        }
        // Neither an export nor a chain that starts well: verify as JSON lines, which reports
        // the first bad line.
        _ => Ok(chain_file::verify_file(path, own)?),
    }
}

/// Findings `warrant verify` prints before summarising the rest (a tampered million-record chain
/// can have a million findings; `--json` lists every one).
const SHOWN_FINDINGS: usize = 50;

/// The audit of a spool: the entries of its verified chain and the calls of its receipt files,
/// and the verification report.
fn spool_audit(spool: &Spool) -> Result<(VerifyReport, Vec<crate::audit::AuditEntry>), Failure> {
    // A mistyped spool is an error, not an empty audit.
    if !spool.root().is_dir() {
        return Err(Failure::usage(format!("{}: no such spool directory", spool.root().display())));
    }
    let pinned = load_pinned()?;
    Ok(crate::audit::audit_chain(spool, &pinned)?)
}

/// One JSON line with every [`crate::protocol::text::is_unsafe`] character escaped as `\uXXXX` (outside
/// strings a JSON text has none, so escaping the whole line changes no value).
fn json_line_inert(v: &Value) -> String {
    let mut out = String::new();
    for c in v.to_string().chars() {
        if crate::protocol::text::is_unsafe(c) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// `warrant audit`: exit 0, or 1 when the chain does not verify (the records that failed are
/// left out and the first finding is on stderr).
fn audit_cmd(spool: &Spool, as_json: bool, since: Option<&str>, agent: Option<String>) -> Result<u8, Failure> {
    let since = match since {
        Some(t) => Some(crate::protocol::clock::unix_seconds(t).ok_or_else(|| {
            Failure::usage(format!("--since {}: not an RFC 3339 time", crate::protocol::text::inert(t, 80)))
        })?),
        None => None,
    };
    let (report, chain_entries) = spool_audit(spool)?;
    let snap = Scanner::for_config(&config::config_dir()).scan(spool)?;
    let entries = crate::audit::build(
        chain_entries,
        &snap.receipts,
        &snap.uses.granted,
        &crate::audit::AuditFilter { since, agent },
    );
    let mut out = std::io::stdout().lock();
    for e in &entries {
        if as_json {
            writeln!(out, "{}", json_line_inert(&e.to_json()))?;
        } else {
            writeln!(out, "{}", audit_text_line(e))?;
        }
    }
    out.flush()?;
    if let Some(first) = report.first() {
        eprintln!(
            "warrant: the chain does not verify ({}); records that fail a check are left out",
            crate::protocol::text::inert(&first.to_string(), 400)
        );
        return Ok(1);
    }
    Ok(0)
}

/// One audit entry as a line of text (everything from the spool made inert).
fn audit_text_line(e: &crate::audit::AuditEntry) -> String {
    use crate::protocol::text::inert;
    let place = e.record.map_or_else(|| "not in the chain".to_owned(), |r| format!("record {r}"));
    let mut line = format!(
        "{place:<16} {}  {:<10} {:<8} {}  agent {}  {}",
        inert(&e.at, 40),
        e.kind.word(),
        inert(&e.decision, 40),
        inert(&e.action, 80),
        inert(&e.agent, 80),
        e.how.words()
    );
    if let Some(s) = &e.signer {
        line.push_str(&format!("  signer {} {}", inert(&s.name, 64), inert(&s.key, 80)));
    }
    if let Some(p) = &e.packet_id {
        line.push_str(&format!("  packet {}", inert(p, 128)));
    }
    if let Some(t) = &e.tool {
        line.push_str(&format!("  tool {}", inert(t, 80)));
        if e.calls > 1 {
            line.push_str(&format!(" ×{}", e.calls));
        }
    }
    if let Some(r) = &e.receipt_id {
        line.push_str(&format!("  receipt {}", inert(r, 128)));
    }
    if let Some(g) = &e.observed_by {
        line.push_str(&format!("  observed by gateway {}", inert(g, 64)));
    }
    if let Some(r) = &e.reason {
        line.push_str(&format!("  reason \"{}\"", inert(r, 200)));
    }
    if let Some(h) = &e.entry_hash {
        line.push_str(&format!("  {}", inert(h, 80)));
    }
    line
}

/// `warrant verify --audit FILE`: every line of an exported audit that claims a chain record
/// checked against the spool's verified chain. Exit 0 when the chain verifies and every such
/// line matches, 1 otherwise.
fn verify_audit(spool: &Spool, file: &Path, as_json: bool) -> Result<u8, Failure> {
    let text = crate::store::config::read_text_file(file, 1 << 30)
        .map_err(|e| Failure::usage(format!("{}: {e}", file.display())))?;
    let (report, entries) = spool_audit(spool)?;
    let check = crate::audit::check_lines(&text, &entries);
    let ok = report.is_valid() && check.mismatches.is_empty();
    if as_json {
        print_json(&json!({
            "valid": ok,
            "chain_valid": report.is_valid(),
            "checked": check.checked,
            "off_chain": check.off_chain,
            "mismatches": check.mismatches.iter().map(|m| json!({"line": m.line, "message": m.message})).collect::<Vec<_>>(),
        }))?;
    } else {
        let mut err = std::io::stderr().lock();
        if let Some(first) = report.first() {
            writeln!(err, "invalid chain: {}", crate::protocol::text::inert(&first.to_string(), 4000))?;
        }
        for m in &check.mismatches {
            writeln!(err, "audit line {}: {}", m.line, crate::protocol::text::inert(&m.message, 4000))?;
        }
        if ok {
            println!(
                "audit matches the chain: {} lines checked against {} records, {} not in the chain (receipt files, not checkable)",
                check.checked, report.total, check.off_chain
            );
        } else {
            writeln!(
                err,
                "audit does not match the chain: {} mismatches, {} lines matched, {} not in the chain",
                check.mismatches.len(),
                check.checked,
                check.off_chain
            )?;
        }
    }
    Ok(if ok { 0 } else { 1 })
}

/// The JetStream store the command line or `config.toml` names, if any (`--spool` wins).
///
/// # Errors
/// A `store` that is neither a directory nor a valid JetStream URL.
#[cfg(feature = "jetstream")]
fn jetstream_store(spool_arg: Option<&PathBuf>, config: &Config) -> Result<Option<StoreLocation>, Failure> {
    match (spool_arg, &config.store) {
        (None, Some(text)) => match text.parse::<StoreLocation>().map_err(Failure::usage)? {
            at @ StoreLocation::JetStream(_) => Ok(Some(at)),
            StoreLocation::Directory(_) => Ok(None),
        },
        _ => Ok(None),
    }
}

/// What a command that does not run over JetStream yet answers (fail closed: the hooks deny, the
/// gateway refuses every call, with this reason).
#[cfg(feature = "jetstream")]
fn jetstream_not_yet(at: &StoreLocation) -> Failure {
    Failure::usage(format!(
        "the spool is on JetStream ({at}): the hooks and the MCP gateway need a directory spool in this version; \
         on JetStream, agents publish with `warrant propose --wait` and the principal works on a replica \
         (docs/distributed.md)"
    ))
}

/// Reads the record lines of `log` ([`crate::store::ChainLog::lines`]).
///
/// # Errors
/// The store's errors, naming the store.
fn log_lines(log: &dyn crate::store::ChainLog) -> Result<Vec<Vec<u8>>, Failure> {
    log.lines().map_err(|e| Failure::usage(format!("{}: {e}", log.location())))
}

/// Verifies a chain's record `lines` as `warrant verify` verifies a spool's own chain (every
/// warrant signature against the pinned keys), with the byte-level verifier.
///
/// # Errors
/// I/O errors of the verifier.
fn verify_lines(lines: &[Vec<u8>], pinned: &PinnedKeys) -> Result<VerifyReport, Failure> {
    let mut bytes = Vec::with_capacity(lines.iter().map(|l| l.len() + 1).sum());
    for line in lines {
        bytes.extend_from_slice(line);
        bytes.push(b'\n');
    }
    let progress = std::sync::atomic::AtomicU64::new(0);
    let opts = VerifyOptions { pinned: Some(pinned), strict_signatures: true };
    Ok(chain::verify_reader(bytes.as_slice(), opts, &progress)?)
}

/// `warrant verify` of a spool on JetStream: its chain, with the same checks and the same
/// report as for the directory with the same history.
///
/// # Errors
/// Connecting, a missing spool, pinned keys that cannot be read.
#[cfg(feature = "jetstream")]
fn verify_store(at: &StoreLocation, as_json: bool) -> Result<u8, Failure> {
    let pinned = load_pinned()?;
    let StoreLocation::JetStream(url) = at else {
        return Err(Failure::usage(format!("{at} is not a JetStream store")));
    };
    let opts = crate::store::jetstream::ConnectOptions::from_env().map_err(Failure::usage)?;
    let fail = |e: crate::store::jetstream::JsError| Failure::usage(format!("{at}: {e}"));
    let store = crate::store::jetstream::JetStreamSpool::connect(url, &opts).map_err(fail)?;
    store.check_exists().map_err(fail)?;
    // Read in parts as the verifier asks for them: one part in memory at a time.
    let progress = std::sync::atomic::AtomicU64::new(0);
    let opts = VerifyOptions { pinned: Some(&pinned), strict_signatures: true };
    let report = chain::verify_reader(store.chain_reader(), opts, &progress)
        .map_err(|e| Failure::usage(format!("{at}: {e}")))?;
    print_report(&report, as_json)
}

/// `warrant export` of a spool on JetStream: the same envelope as for the directory.
///
/// # Errors
/// As [`verify_store`].
#[cfg(feature = "jetstream")]
fn export_store(at: &StoreLocation) -> Result<u8, Failure> {
    let pinned = load_pinned()?;
    let log = crate::store::open_chain(at, false, 1).map_err(|e| Failure::usage(format!("{at}: {e}")))?;
    let records = log
        .lines()
        .map_err(|e| Failure::usage(format!("{at}: {e}")))?
        .iter()
        .map(|l| serde_json::from_slice(l).unwrap_or(Value::Null))
        .collect();
    let envelope = chain::export(
        records,
        VerifyOptions { pinned: Some(&pinned), strict_signatures: true },
        &crate::protocol::clock::now_rfc3339(),
    );
    print_json(&envelope)?;
    Ok(0)
}

/// Records `warrant migrate` appends at a time.
const MIGRATE_GROUP: usize = 1024;

/// `warrant migrate --from A --to B`: the source verified, its records copied after the
/// destination's head (which must be a prefix of the source), each with compare-and-set and its
/// own entry_hash, then both verified and compared: the same number of records and root hash.
///
/// # Errors
/// Either store's errors; a source that does not verify (exit 1); a destination that holds
/// another chain.
fn migrate(from: &str, to: &str, replicas: u8) -> Result<u8, Failure> {
    let pinned = load_pinned()?;
    let parse = |t: &str| t.parse::<StoreLocation>().map_err(Failure::usage);
    let (from_at, to_at) = (parse(from)?, parse(to)?);
    if from_at == to_at {
        return Err(Failure::usage("--from and --to name the same store"));
    }
    fn store_err(at: &StoreLocation) -> impl Fn(crate::store::StoreError) -> Failure + '_ {
        move |e| Failure::usage(format!("{at}: {e}"))
    }
    let source = crate::store::open_chain(&from_at, false, 1).map_err(store_err(&from_at))?;
    let lines = source.lines().map_err(store_err(&from_at))?;
    let before = verify_lines(&lines, &pinned)?;
    if !before.is_valid() {
        let first = before.first().map(|f| f.to_string()).unwrap_or_default();
        eprintln!(
            "warrant: {from_at} does not verify ({}); nothing was copied",
            crate::protocol::text::inert(&first, 400)
        );
        return Ok(EXIT_INVALID);
    }
    let dest = crate::store::open_chain(&to_at, true, usize::from(replicas)).map_err(store_err(&to_at))?;
    let there = dest.lines().map_err(store_err(&to_at))?;
    if there.len() > lines.len() || there.iter().zip(&lines).any(|(a, b)| a != b) {
        return Err(Failure::usage(format!(
            "{to_at} holds {} records that are not the start of {from_at}'s chain; refusing to copy onto another chain",
            there.len()
        )));
    }
    let mut head = dest.head().map_err(store_err(&to_at))?;
    // Groups of records: the directory appends a group with one write and one sync under its
    // lock (a sync per record would take hours for a million records); JetStream appends each
    // record of a group with compare-and-set on the one before it.
    for group in lines[there.len()..].chunks(MIGRATE_GROUP) {
        let records = group
            .iter()
            .map(|line| crate::protocol::canonical::parse_strict(line).ok().and_then(|v| v.as_object().cloned()))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| Failure::usage(format!("{from_at}: a record that verified no longer parses")))?;
        let appended = dest.append_after(&head, records).map_err(store_err(&to_at))?;
        let last = appended.last().ok_or_else(|| Failure::usage(format!("{to_at}: nothing was appended")))?;
        head = ChainHead { last_index: last.chain_index, last_hash: Some(last.entry_hash.clone()) };
    }
    let after = verify_lines(&log_lines(dest.as_ref())?, &pinned)?;
    let same = after.is_valid() && after.total == before.total && after.root_hash == before.root_hash;
    if same {
        println!(
            "migrated {from_at} → {to_at}: {} records ({} copied, {} already there), root {}; both verify, chain for chain",
            after.total,
            lines.len() - there.len(),
            there.len(),
            after.root_hash.as_deref().unwrap_or("null")
        );
        migrate_spool(&from_at, &to_at, &pinned)
    } else {
        eprintln!(
            "warrant: the copy at {to_at} does not match: {} records, root {}, valid {} (the source: {} records, root {})",
            after.total,
            after.root_hash.as_deref().unwrap_or("null"),
            after.is_valid(),
            before.total,
            before.root_hash.as_deref().unwrap_or("null")
        );
        Ok(EXIT_INVALID)
    }
}

/// After the chain, `warrant migrate` copies the packets, receipts and decision files between a
/// directory and a JetStream store ([`crate::store::replica::copy_spool_to_store`],
/// [`crate::store::replica::copy_store_to_spool`]); between two directories, only the chain.
/// Prints what was copied; [`EXIT_INVALID`] when a file could not be (each named, with why).
///
/// # Errors
/// The stores' errors.
fn migrate_spool(from: &StoreLocation, to: &StoreLocation, pinned: &PinnedKeys) -> Result<u8, Failure> {
    #[cfg(feature = "jetstream")]
    {
        use crate::store::jetstream::{ConnectOptions, JetStreamSpool};
        let connect = |url| {
            let opts = ConnectOptions::from_env().map_err(Failure::usage)?;
            JetStreamSpool::connect(url, &opts).map_err(|e| Failure::usage(format!("{url}: {e}")))
        };
        let copied = match (from, to) {
            (StoreLocation::Directory(dir), StoreLocation::JetStream(url)) => {
                crate::store::replica::copy_spool_to_store(&Spool::new(dir), &connect(url)?)
                    .map_err(|e| Failure::usage(format!("{url}: {e}")))?
            }
            (StoreLocation::JetStream(url), StoreLocation::Directory(dir)) => {
                crate::store::replica::copy_store_to_spool(&connect(url)?, &Spool::new(dir), pinned)
                    .map_err(|e| Failure::usage(format!("{}: {e}", dir.display())))?
            }
            _ => return Ok(0),
        };
        println!(
            "and {} packets, {} receipts, {} decision files ({} already there)",
            copied.packets, copied.receipts, copied.decisions, copied.already
        );
        for why in &copied.not_copied {
            eprintln!("warrant: not copied: {}", crate::protocol::text::inert(why, 400));
        }
        Ok(if copied.not_copied.is_empty() { 0 } else { EXIT_INVALID })
    }
    #[cfg(not(feature = "jetstream"))]
    {
        let _ = (from, to, pinned);
        Ok(0)
    }
}

fn verify(path: &Path, as_json: bool) -> Result<u8, Failure> {
    let pinned = load_pinned()?;
    let mut report = verify_path(path, &pinned)?;
    if path.is_dir() && report.is_valid() {
        let spool = spool_at(path.to_owned());
        report.findings.extend(quorum_findings(&spool, &pinned, &load_policies(Some(&spool))?)?);
    }
    print_report(&report, as_json)
}

/// Prints a verification report as `warrant verify` does (JSON with `--json`), and gives its
/// exit code: 0 when valid, [`EXIT_INVALID`] otherwise.
///
/// # Errors
/// Writing to stdout or stderr.
fn print_report(report: &VerifyReport, as_json: bool) -> Result<u8, Failure> {
    let valid = report.is_valid();
    if as_json {
        print_json(&json!({
            "valid": valid,
            "total": report.total,
            "root_hash": report.root_hash,
            "signatures_verified": report.signatures_verified,
            "first": report.first(),
            "findings": report.findings,
            "torn_tail_bytes": report.torn_tail,
        }))?;
    } else if valid {
        println!(
            "valid: {} records, root {}, {} signatures verified against pinned keys",
            report.total,
            report.root_hash.as_deref().unwrap_or("null"),
            report.signatures_verified
        );
    } else {
        let mut err = std::io::stderr().lock();
        if let Some(first) = report.first() {
            writeln!(err, "invalid: {}", crate::protocol::text::inert(&first.to_string(), 4000))?;
        }
        for f in report.findings.iter().skip(1).take(SHOWN_FINDINGS - 1) {
            writeln!(err, "  {}", crate::protocol::text::inert(&f.to_string(), 4000))?;
        }
        if let Some(more) = report.findings.len().checked_sub(SHOWN_FINDINGS).filter(|&n| n > 0) {
            writeln!(err, "  … and {more} more findings ({} in all; `--json` lists every one)", report.findings.len())?;
        }
        if report.findings.iter().all(|f| f.check == chain::Check::UnpinnedKey) {
            writeln!(
                err,
                "note: every finding is a signature by a key you have not pinned: unverifiable, but none was shown to be forged; pin the signer's key (`warrant keys pin`) to verify them"
            )?;
        }
    }
    if let Some(bytes) = report.torn_tail.filter(|_| !as_json) {
        eprintln!(
            "note: the chain ends in a torn line of {bytes} bytes (an append interrupted before it finished, which never \
             reported success); it is not a record, and the next append or the console moves it to a side file"
        );
    }
    Ok(if valid { 0 } else { EXIT_INVALID })
}

/// The approvals in a spool's chain of classes its policy says need several principals
/// (`[cosign]`) that do not meet the quorum (`chain::Check::Quorum`), in chain order.
///
/// # Errors
/// Reading the chain.
fn quorum_findings(spool: &Spool, pinned: &PinnedKeys, policies: &PolicySet) -> Result<Vec<chain::Finding>, Failure> {
    if !policies.any_cosign() {
        return Ok(Vec::new());
    }
    let view = spool::verify_chain(spool, pinned)?;
    let mut findings: Vec<chain::Finding> = view
        .decisions
        .iter()
        .filter(|(_, d)| d.verdict == Verdict::Approve)
        .filter_map(|(id, d)| {
            let q = policies.cosign(&d.action_class)?;
            (!d.meets(q)).then(|| chain::Finding {
                index: usize::try_from(d.chain_index.saturating_sub(1)).ok(),
                check: chain::Check::Quorum,
                message: format!(
                    "the approval of {} ({}) is signed by {}: policy.toml [cosign] asks the approval of {}",
                    crate::protocol::text::inert(id, 200),
                    crate::protocol::text::inert(&d.action_class, 200),
                    crate::protocol::text::inert(&d.signed_by(), 400),
                    q.describe()
                ),
            })
        })
        .collect();
    findings.sort_by_key(|f| f.index);
    Ok(findings)
}

/// The passphrase for a new key (`keys init`, `keys rotate`): none with `--no-passphrase`, else
/// the first line of `WARRANT_PASSPHRASE_FILE`, else asked twice on the terminal.
fn new_passphrase(
    command: &str,
    no_passphrase: bool,
    key_file: &Path,
) -> Result<Option<age::secrecy::SecretString>, Failure> {
    if no_passphrase {
        return Ok(None);
    }
    let source = key_files::passphrase_source();
    let first =
        key_files::read_passphrase(&source, "new passphrase for the principal's key: ", key_file).map_err(|e| match e {
            key_files::KeyError::NoPassphrase { .. } => Failure::usage(format!(
                "`{command}` needs a passphrase: run it on a terminal or set WARRANT_PASSPHRASE_FILE (or pass --no-passphrase for an unprotected key)"
            )),
            other => other.into(),
        })?;
    if source == key_files::PassphraseSource::Terminal {
        use age::secrecy::ExposeSecret as _;
        let again = key_files::read_passphrase(&source, "the same passphrase again: ", key_file)?;
        if again.expose_secret() != first.expose_secret() {
            return Err(Failure::usage("the two passphrases differ; no key was created"));
        }
    }
    Ok(Some(first))
}

/// The file a key retired by `keys rotate` is kept in: `principal.key.<fingerprint>.retired`,
/// the fingerprint's base64 made file-name safe (`/` → `_`, `+` → `-`).
fn retired_key_file(dir: &Path, fingerprint: &str) -> PathBuf {
    let safe: String = fingerprint
        .trim_start_matches("SHA256:")
        .chars()
        .map(|c| match c {
            '/' => '_',
            '+' => '-',
            c => c,
        })
        .collect();
    dir.join(format!("{}.{safe}.retired", key_files::PRIVATE_KEY_FILE))
}

fn key_event_failure(e: spool::DecideError) -> Failure {
    match e {
        spool::DecideError::Io(_) | spool::DecideError::Chain(_) => Failure::usage(e.to_string()),
        _ => Failure::invalid(e.to_string()),
    }
}

/// `warrant keys rotate`: see [`KeysAction::Rotate`]. The new key is written first (as
/// `principal.key.next`), then announced in the chain; only then is the old key moved aside
/// (hard-linked to its `.retired` file, then replaced by a rename) and the new one pinned.
fn keys_rotate(config: &Config, spool: &Spool, no_passphrase: bool) -> Result<u8, Failure> {
    let dir = config::config_dir();
    let key_file = dir.join(key_files::PRIVATE_KEY_FILE);
    let (old, mut pinned) = load_principal(config)?;
    let passphrase = new_passphrase("keys rotate", no_passphrase, &key_file)?;
    let next = dir.join(format!("{}.next", key_files::PRIVATE_KEY_FILE));
    let new = Principal::generate(&old.name, &next)?;
    new.write_private(&next, passphrase.as_ref()).map_err(|e| match e {
        key_files::KeyError::Exists { .. } => Failure::invalid(format!(
            "{} exists: an earlier `keys rotate` was interrupted; see whether the chain announces its key (`warrant verify`), then move it away",
            next.display()
        )),
        other => other.into(),
    })?;
    let event = crate::protocol::key_event::KeyEvent::Rotate {
        principal: old.name.clone(),
        old: old.fingerprint(),
        new_key: new.verifying_key(),
    };
    let appended =
        match spool::append_key_event(spool, &old, Some(&new), &pinned, &event, &crate::protocol::clock::now_rfc3339())
        {
            Ok(a) => a,
            Err(e) => {
                // Nothing was announced: the new key is not needed.
                let _ = std::fs::remove_file(&next);
                return Err(key_event_failure(e));
            }
        };
    let retired = retired_key_file(&dir, &old.fingerprint());
    let swapped = std::fs::hard_link(&key_file, &retired)
        .and_then(|()| std::fs::rename(&next, &key_file))
        .and_then(|()| std::fs::File::open(&dir)?.sync_all());
    if let Err(e) = swapped {
        return Err(Failure::usage(format!(
            "the chain announces the new key {} (chain_index {}), but it could not be put in place ({e}): move {} to {} and keep the old key as {}",
            new.fingerprint(),
            appended.chain_index,
            next.display(),
            key_file.display(),
            retired.display()
        )));
    }
    key_files::write_atomic(&dir.join(key_files::PUBLIC_KEY_FILE), new.public_pem().as_bytes(), 0o644)?;
    pinned.pin(&new.name, new.verifying_key());
    pinned.save(&dir)?;
    println!(
        "rotated the principal key of {} at chain_index {} of {}",
        new.name,
        appended.chain_index,
        spool.chain_path().display()
    );
    println!("old key    {} (kept as {}, still pinned)", old.fingerprint(), retired.display());
    println!("new key    {}", new.fingerprint());
    println!("protected  {}", if passphrase.is_some() { "yes (passphrase)" } else { "no" });
    println!("pinned     for {}", new.name);
    Ok(0)
}

/// `warrant keys rename NEW_NAME`: see [`KeysAction::Rename`]. The old name is the one the key
/// is pinned for, so the rename also works after the configured name was changed first.
fn keys_rename(config: &Config, spool: &Spool, new_name: &str) -> Result<u8, Failure> {
    let dir = config::config_dir();
    let path = dir.join(key_files::PRIVATE_KEY_FILE);
    if new_name.trim().is_empty() || new_name.trim() != new_name {
        return Err(Failure::usage("the new name must not be blank or start or end with spaces"));
    }
    if matches!(std::fs::symlink_metadata(&path), Err(e) if e.kind() == io::ErrorKind::NotFound) {
        return Err(key_files::KeyError::NoKey { dir: dir.clone() }.into());
    }
    let source = key_files::passphrase_source();
    let prompt = format!("passphrase for {}: ", path.display());
    let mut principal = Principal::load_with(&path, "", || key_files::read_passphrase(&source, &prompt, &path))?;
    let mut pinned = PinnedKeys::load(&dir)?;
    let fp = principal.fingerprint();
    let Some(pin) = pinned.get(&fp) else {
        return Err(Failure::usage(format!(
            "the principal key {fp} is not pinned, so there is no name to rename; pin it first with `warrant keys export | warrant keys pin --principal NAME -`"
        )));
    };
    if pin.principal == new_name {
        return Err(Failure::invalid(format!("the key {fp} is already pinned for {new_name:?}")));
    }
    if let Some(other) = pinned.name_taken(&fp, new_name) {
        return Err(Failure::invalid(format!(
            "{new_name:?} is the name of another key ({}): a rename never takes another principal's name",
            other.fingerprint
        )));
    }
    principal.name = pin.principal.clone();
    let event = crate::protocol::key_event::KeyEvent::Rename {
        principal: principal.name.clone(),
        new_principal: new_name.to_owned(),
        key: fp.clone(),
    };
    let appended =
        spool::append_key_event(spool, &principal, None, &pinned, &event, &crate::protocol::clock::now_rfc3339())
            .map_err(key_event_failure)?;
    pinned.rename(&fp, new_name);
    pinned.save(&dir)?;
    println!(
        "renamed {:?} to {new_name:?} at chain_index {} of {}",
        principal.name,
        appended.chain_index,
        spool.chain_path().display()
    );
    println!("key        {fp}");
    println!("pinned     for {new_name:?} (and {:?}, so earlier records still verify)", principal.name);
    if config.principal_name() != new_name {
        println!(
            "now set WARRANT_PRINCIPAL={new_name:?} (or `principal` in config.toml): signing uses the configured name"
        );
    }
    Ok(0)
}

fn keys_cmd(config: &Config, spool_arg: Option<PathBuf>, action: KeysAction) -> Result<u8, Failure> {
    let dir = config::config_dir();
    let key_file = dir.join(key_files::PRIVATE_KEY_FILE);
    match action {
        KeysAction::Rotate { no_passphrase } => {
            let spool = resolve_spool(spool_arg, config)?;
            set_aside_torn_tail(&spool)?;
            return keys_rotate(config, &spool, no_passphrase);
        }
        KeysAction::Rename { new_name } => {
            let spool = resolve_spool(spool_arg, config)?;
            set_aside_torn_tail(&spool)?;
            return keys_rename(config, &spool, &new_name);
        }
        KeysAction::Init { no_passphrase } => {
            let passphrase = new_passphrase("keys init", no_passphrase, &key_file)?;
            let principal =
                Principal::init(&dir, &config.principal_name(), passphrase.as_ref()).map_err(|e| match e {
                    key_files::KeyError::Exists { .. } => Failure::invalid(e.to_string()),
                    other => other.into(),
                })?;
            println!("created the principal key for {} in {}", principal.name, key_file.display());
            println!("key        {}", principal.fingerprint());
            println!("protected  {}", if passphrase.is_some() { "yes (passphrase)" } else { "no" });
            println!("pinned     for {}", principal.name);
        }
        KeysAction::Show => {
            let name = config.principal_name();
            let pinned = load_pinned()?;
            println!("principal  {name}");
            match public_key(&dir) {
                Some(key) => println!("key        {}", keys::fingerprint(&key)),
                None => println!("key        none: create one with `warrant keys init`"),
            }
            println!("key file   {}", key_file.display());
            // A key others can read is refused here too, as ssh refuses it.
            let protection = match key_files::protection(&key_file) {
                Ok(key_files::Protection::Passphrase) => "yes (passphrase)",
                Ok(key_files::Protection::None) => "no: anyone who can read the file can sign as you",
                Err(key_files::KeyError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => "no key",
                Err(e) => return Err(e.into()),
            };
            println!("protected  {protection}");
            let gateways = keys::GatewayKeys::load(&dir)?;
            println!("pinned keys ({}):", pinned.len() + gateways.len());
            for k in pinned.iter() {
                if k.aliases.is_empty() {
                    println!("  {}  principal  {}", k.fingerprint, crate::protocol::text::inert(&k.principal, 200));
                } else {
                    let was = crate::protocol::text::inert(&k.aliases.join(", "), 400);
                    println!(
                        "  {}  principal  {} (formerly {was})",
                        k.fingerprint,
                        crate::protocol::text::inert(&k.principal, 200)
                    );
                }
            }
            for k in gateways.iter() {
                println!("  {}  gateway    {}", k.fingerprint, crate::protocol::text::inert(&k.principal, 200));
            }
        }
        KeysAction::Export => {
            // The private key must exist and be private; its public half is read from
            // `principal.pub` (no passphrase), else from the key itself.
            key_files::protection(&key_file)?;
            match public_key(&dir) {
                Some(key) => print!("{}", keys::public_pem(&key)),
                None => {
                    let (principal, _) = load_principal(config)?;
                    print!("{}", principal.public_pem());
                }
            }
        }
        KeysAction::Pin { principal, gateway, file } => {
            let mut text = String::new();
            if file == Path::new("-") {
                std::io::stdin().read_to_string(&mut text)?;
            } else {
                text =
                    std::fs::read_to_string(&file).map_err(|e| Failure::usage(format!("{}: {e}", file.display())))?;
            }
            let key = keys::parse_public_key(&text).map_err(|e| Failure::usage(format!("{}: {e}", file.display())))?;
            let fp = keys::fingerprint(&key);
            let pinned = load_pinned()?;
            let mut gateways = keys::GatewayKeys::load(&dir)?;
            std::fs::create_dir_all(&dir)?;
            match (principal, gateway) {
                (_, Some(gateway)) => {
                    // One role per key: a principal's key pinned as a gateway's would sign both.
                    if let Some(pin) = pinned.get(&fp) {
                        return Err(Failure::usage(format!(
                            "{fp} is pinned as the principal {:?}'s key: a gateway needs a key of its own",
                            pin.principal
                        )));
                    }
                    if !packet::is_safe_id(&gateway) {
                        return Err(Failure::usage(format!("gateway name {gateway:?} is not a safe id")));
                    }
                    gateways.pin(&gateway, key);
                    gateways.save(&dir)?;
                    println!(
                        "pinned {fp} for gateway {gateway} (role gateway: its signed receipts are observed outcomes)"
                    );
                }
                (Some(principal), None) => {
                    if let Some(pin) = gateways.get(&fp) {
                        return Err(Failure::usage(format!(
                            "{fp} is pinned as the gateway {:?}'s key: unpin it first",
                            pin.principal
                        )));
                    }
                    let mut pinned = pinned;
                    pinned.pin(&principal, key);
                    pinned.save(&dir)?;
                    println!("pinned {fp} for {principal}");
                }
                (None, None) => return Err(Failure::usage("--principal NAME or --gateway NAME")),
            }
        }
        KeysAction::Unpin { fingerprint } => {
            let mut pinned = load_pinned()?;
            if pinned.unpin(&fingerprint) {
                pinned.save(&dir)?;
            } else {
                let mut gateways = keys::GatewayKeys::load(&dir)?;
                if !gateways.unpin(&fingerprint) {
                    return Err(Failure::invalid(format!("no pinned key {fingerprint}")));
                }
                gateways.save(&dir)?;
            }
            println!("unpinned {fingerprint}");
        }
    }
    Ok(0)
}

/// The principal's public key from `principal.pub` in `dir` (no passphrase needed), if readable.
fn public_key(dir: &Path) -> Option<ed25519_dalek::VerifyingKey> {
    let text = crate::store::config::read_text_file(&dir.join(key_files::PUBLIC_KEY_FILE), 64 << 10).ok()?;
    keys::parse_public_key(&text).ok()
}

/// Appends a signed control (checked against the chain under its lock) and prints what was
/// recorded.
fn control_cli(spool: &Spool, config: &Config, input: ControlInput) -> Result<u8, Failure> {
    let (principal, pinned) = load_principal(config)?;
    let policies = load_policies(Some(spool))?;
    let (input, appended) =
        spool::append_control(spool, &principal, &pinned, &policies, &crate::monitor::Scores, input).map_err(|e| {
            match e {
                spool::DecideError::Io(_) | spool::DecideError::Chain(_) => Failure::usage(e.to_string()),
                _ => Failure::invalid(e.to_string()),
            }
        })?;
    println!(
        "{} {}: record {} {} signed by {} ({})",
        input.kind.as_str(),
        input.subject,
        appended.chain_index,
        appended.entry_hash,
        principal.name,
        principal.fingerprint()
    );
    if input.kind == ControlKind::Kill {
        // What the kill switch reports as compensated is refused, signed, in the same command.
        let reason = format!("killed: {}", input.reason.as_deref().unwrap_or("the principal killed the agent"));
        let refused = spool::refuse_pending_of(spool, &principal, &pinned, &input.subject, &reason, &input.decided_at)
            .map_err(|e| {
                Failure::invalid(format!("the kill is recorded, but refusing its pending packets failed: {e}"))
            })?;
        println!("refused {} pending packet(s) of {}: {}", refused.len(), input.subject, refused.join(", "));
    }
    Ok(0)
}

fn control_input(kind: ControlKind, subject: &str, reason: Option<String>) -> Result<ControlInput, Failure> {
    if !packet::is_safe_id(subject) {
        return Err(Failure::usage(format!("{subject:?} is not a safe id (letters, digits, . _ - :)")));
    }
    Ok(ControlInput {
        kind,
        subject: subject.to_owned(),
        fields: serde_json::Map::new(),
        reason: reason.map(|r| r.trim().to_owned()).filter(|r| !r.is_empty()),
        decided_at: crate::protocol::clock::now_rfc3339(),
    })
}

fn trust_cmd(spool: &Spool, config: &Config, action: TrustAction) -> Result<u8, Failure> {
    let view = spool::verify_chain(spool, &load_pinned()?)?;
    if let Some(first) = view.report.first() {
        eprintln!(
            "warrant: the chain does not verify ({}); levels from failing records are not used",
            crate::protocol::text::inert(&first.to_string(), 400)
        );
    }
    match action {
        TrustAction::Show { json: as_json } => {
            let policies = load_policies(Some(spool))?;
            let notebooks: serde_json::Map<String, Value> = view
                .controls
                .notebooks
                .iter()
                .map(|(id, n)| {
                    (id.clone(), json!({"level": n.level.as_str(), "set_by": n.principal, "set_at": n.set_at}))
                })
                .collect();
            let tools: serde_json::Map<String, Value> =
                policies.tools().map(|(id, t)| (id.to_owned(), json!(t.tier.as_str()))).collect();
            if as_json {
                print_json(
                    &json!({"default_level": NotebookTrust::default().as_str(), "notebooks": notebooks, "tools": tools}),
                )?;
            } else {
                println!("notebooks (any other notebook is {}):", NotebookTrust::default().as_str());
                for (id, n) in &view.controls.notebooks {
                    println!(
                        "  {:<24} {:<10} set by {} at {}",
                        crate::protocol::text::inert(id, 64),
                        n.level.as_str(),
                        crate::protocol::text::inert(&n.principal, 64),
                        crate::protocol::text::inert(&n.set_at, 40)
                    );
                }
                println!("tools (tier from policy.toml; any other tool is unknown and gates to confirm):");
                for (id, t) in policies.tools() {
                    println!("  {:<24} {}", crate::protocol::text::inert(id, 64), t.tier.as_str());
                }
            }
            Ok(0)
        }
        TrustAction::Set { notebook, level, reason, confirm } => {
            let to = NotebookTrust::parse(&level).ok_or_else(|| {
                Failure::usage(format!("{level:?} is not a trust level: cautious, trusted or autonomous"))
            })?;
            let from = view.controls.notebook_trust(&notebook);
            if from == to {
                println!("{notebook} is already {}; nothing recorded", to.as_str());
                return Ok(0);
            }
            if NotebookTrust::requires_typed_confirmation(from, to) {
                let typed = match confirm {
                    Some(c) => c,
                    None if io::IsTerminal::is_terminal(&io::stdin()) => {
                        eprint!(
                            "Raising {notebook} to autonomous lets destructive tools run without confirmation.\nType the notebook name to confirm: "
                        );
                        let mut line = String::new();
                        io::stdin().read_line(&mut line)?;
                        line.trim().to_owned()
                    }
                    None => String::new(),
                };
                if typed != notebook {
                    return Err(Failure::invalid(format!(
                        "raising {notebook} to autonomous needs the typed confirmation `--confirm {notebook}`; nothing recorded"
                    )));
                }
            }
            let mut input = control_input(ControlKind::TrustSet, &notebook, reason)?;
            input.fields.insert("level".into(), json!(to.as_str()));
            input.fields.insert("previous".into(), json!(from.as_str()));
            control_cli(spool, config, input)
        }
    }
}

fn agent_cmd(spool: &Spool, config: &Config, action: AgentAction) -> Result<u8, Failure> {
    match action {
        AgentAction::Quarantine { agent, reason } => {
            control_cli(spool, config, control_input(ControlKind::Quarantine, &agent, Some(reason))?)
        }
        AgentAction::Release { agent, reason } => {
            control_cli(spool, config, control_input(ControlKind::Release, &agent, reason)?)
        }
        AgentAction::Kill { agent, reason } => {
            control_cli(spool, config, control_input(ControlKind::Kill, &agent, Some(reason))?)
        }
        AgentAction::Elevate { agent, ring, ttl, reason } => {
            let mut input = control_input(ControlKind::Elevate, &agent, reason)?;
            input.fields.insert("ring".into(), json!(ring));
            input.fields.insert("ttl_seconds".into(), json!(ttl));
            control_cli(spool, config, input)
        }
    }
}

fn check_preconditions(spool: &Spool, id: &str, as_json: bool) -> Result<u8, Failure> {
    use crate::protocol::ladder::ActionPrecondition;
    if !packet::is_safe_id(id) {
        return Err(Failure::usage(format!("{id:?} is not a packet id")));
    }
    let pinned = load_pinned()?;
    let snap = Scanner::new().scan(spool)?;
    let entry = snap.packet(id);
    let decision_path = spool.decision_path(id);
    let read = match std::fs::symlink_metadata(&decision_path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(e),
        _ => Ok(spool::read_limited(&decision_path)
            .map_err(|e| Failure::invalid(format!("{}: {e}", decision_path.display())))?),
    };
    let (phase, preconditions): (&str, Vec<ActionPrecondition>) = match read {
        Ok(bytes) => {
            let file: Value = crate::protocol::canonical::parse_untrusted(&bytes)
                .map_err(|e| Failure::invalid(format!("{}: not JSON: {e}", decision_path.display())))?;
            let hash = entry.map(|e| e.packet.content_hash.as_str());
            // A class that needs several principals: only an approval with its quorum counts.
            let class = entry.map_or_else(
                || file["document"]["action_class"].as_str().unwrap_or_default().to_owned(),
                |e| e.packet.action_class.clone(),
            );
            let policies = load_policies(Some(spool))?;
            let d = decision::verify_decision_file_under(&file, id, hash, &pinned, policies.cosign(&class))
                .map_err(|e| Failure::invalid(e.to_string()))?;
            if d.verdict == Verdict::Refuse {
                println!("{id} was refused by {}; nothing may execute", d.principal);
                return Ok(EXIT_REFUSED);
            }
            let recorded = d
                .preconditions
                .iter()
                .map(|p| {
                    Ok(ActionPrecondition {
                        check_id: p.get("check_id").and_then(Value::as_str).ok_or("no check_id")?.to_owned(),
                        parameters: p.get("parameters").cloned().unwrap_or(Value::Null),
                        expected_at_approval: p.get("expected_at_approval").cloned().unwrap_or(Value::Null),
                        must_revalidate_at_execution: true,
                    })
                })
                .collect::<Result<Vec<_>, &str>>()
                .map_err(|e| Failure::invalid(format!("recorded precondition: {e}")))?;
            ("approved", recorded)
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let entry = entry.ok_or_else(|| Failure::invalid(format!("no packet or decision {id:?} in the spool")))?;
            let contract =
                crate::protocol::verdict::Governance::of_packet(&entry.packet).and_then(|g| g.contract.clone());
            let preconditions = match contract {
                Some(Ok(c)) => c.preconditions,
                Some(Err(e)) => return Err(Failure::invalid(format!("{id}: invalid action contract: {e}"))),
                None => Vec::new(),
            };
            ("pending", preconditions)
        }
        Err(e) => return Err(e.into()),
    };
    let policies = load_policies(Some(spool))?;
    let observer = crate::preconditions::Observer::for_policies(&policies, Some(&config::config_dir()));
    let rv =
        if phase == "pending" { observer.recheck_pending(&preconditions) } else { observer.recheck(&preconditions) };
    if as_json {
        print_json(&json!({"packet_id": id, "phase": phase, "revalidation": rv}))?;
    } else {
        println!("{id} ({phase}): {} precondition(s) to re-check", rv.checks.len());
        for c in &rv.checks {
            let now = c.observed.as_ref().map_or_else(|| c.error.clone().unwrap_or_default(), Value::to_string);
            println!(
                "  {} {:<22} expected {}  now {}",
                if c.holds { "✓" } else { "✗" },
                crate::protocol::text::inert(&c.check_id, 64),
                crate::protocol::text::inert(&c.expected.to_string(), 120),
                crate::protocol::text::inert(&now, 120)
            );
        }
        if let Some(f) = &rv.failure {
            println!("precondition_failed: {}", crate::protocol::text::inert(&f.detail, 400));
        }
    }
    // 0 only for a packet approved by a verified decision whose preconditions all hold: an
    // agent written as `check-preconditions X && run` never runs a pending packet.
    Ok(match (phase, rv.ok) {
        ("pending", _) => EXIT_PENDING,
        (_, true) => 0,
        (_, false) => EXIT_INVALID,
    })
}
