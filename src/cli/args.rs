//! The command line's clap definitions: [`Cli`], its subcommands ([`Command`]) and their
//! actions and shared arguments.

use crate::store::spool;
use clap::{Parser, Subcommand};
use std::path::PathBuf;

/// warrant: decide what AI agents may do.
#[derive(Debug, Parser)]
#[command(name = "warrant", version, about, long_about = None)]
pub struct Cli {
    /// Where the spool is: `--spool`, `--store`, `--replica`.
    #[command(flatten)]
    pub globals: GlobalArgs,
    /// What to do (default: `console`).
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// The options every command takes: where the spool is.
#[derive(Debug, Clone, clap::Args)]
pub struct GlobalArgs {
    /// The spool directory shared with agents (default: `<data dir>/warrant/spool`).
    #[arg(
        long,
        global = true,
        env = spool::SPOOL_ENV,
        value_name = "DIR",
        help = "The spool directory shared with agents [default: <data dir>/warrant/spool]"
    )]
    pub spool: Option<PathBuf>,
    /// Where the spool lives: a directory, or nats://HOST:PORT[,HOST:PORT...]/NAME (tls:// for
    /// TLS) for NATS JetStream; credentials from NATS_CREDS, NATS_NKEY, NATS_CA, NATS_CERT and
    /// NATS_KEY. It wins over --spool [default: `store` in config.toml, else the spool directory].
    #[arg(long, global = true, env = "WARRANT_STORE", value_name = "STORE")]
    pub store: Option<String>,
    /// This host's replica of a JetStream store: the directory the principal's commands and the
    /// console work on, kept equal to the store (default: `<data dir>/warrant/replicas/NAME`).
    #[arg(
        long,
        global = true,
        env = "WARRANT_REPLICA",
        value_name = "DIR",
        help = "This host's replica of a JetStream store: the directory the principal's commands and the console work on, kept equal to the store [default: <data dir>/warrant/replicas/NAME]"
    )]
    pub replica: Option<PathBuf>,
}

/// `warrant hook HOST [--agent ID] [--notebook NAME] [--wait SECS]`.
#[derive(Debug, Clone, clap::Args)]
pub struct HookArgs {
    /// The host whose hook this is.
    pub host: crate::hook::Host,
    /// The agent id packets name [default: the host's name].
    #[arg(long, value_name = "ID")]
    pub agent: Option<String>,
    /// The notebook whose trust applies [default: derived from the event's cwd].
    #[arg(long, value_name = "NAME")]
    pub notebook: Option<String>,
    /// Seconds to wait for the principal; keep it under the host's hook timeout (600 s by
    /// default).
    #[arg(long, value_name = "SECS", default_value_t = crate::hook::DEFAULT_WAIT_SECS)]
    pub wait: f64,
}

/// The command line `warrant-hook` reads itself: `warrant`'s options and its `hook` command, and
/// nothing else (anything else is handed to `warrant`: [`super::hook_main`]).
#[derive(Debug, Parser)]
#[command(name = "warrant", version, about, long_about = None)]
pub struct HookCli {
    /// Where the spool is.
    #[command(flatten)]
    pub globals: GlobalArgs,
    /// `hook`.
    #[command(subcommand)]
    pub command: HookCommand,
}

/// The one command of [`HookCli`].
#[derive(Debug, Subcommand)]
pub enum HookCommand {
    /// Answer an agent host's hook (as `warrant hook`).
    Hook(HookArgs),
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Open the console on the spool (the default).
    Console {
        /// Observe only: nothing can be signed.
        #[arg(long)]
        read_only: bool,
        /// Theme name (`default`, `mono`) or a file in CONFIG/themes/.
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
        /// Approve as corrected: the corrected proposed action, as JSON, in FILE (`-`: standard
        /// input). For a tool call only its `input` may change. The difference is printed before
        /// anything is signed; the agent runs the corrected action (`docs/cli.md`, Approve as
        /// corrected).
        #[arg(long, value_name = "FILE|-")]
        correct: Option<std::path::PathBuf>,
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
        /// Every column whole (the full content hash, ids, agents, classes and summaries uncut),
        /// however wide the terminal.
        #[arg(long, conflicts_with = "json")]
        wide: bool,
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
        /// Verify a spool from the principal's latest checkpoint: its signature against the
        /// pinned keys, the agents' snapshot it binds, the record it names, and every record
        /// after it, not the records before (the whole chain when no checkpoint holds).
        #[arg(long, conflicts_with = "audit")]
        since_checkpoint: bool,
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
    /// COMMAND (or the server at --url), governing each tools/call first (docs/integrations.md).
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
        /// How long the server has to answer initialize; past it the agent gets an error naming
        /// the server, and the server is stopped.
        #[arg(long, value_name = "SECS", default_value_t = 30.0)]
        handshake_timeout: f64,
        /// Listen on a Unix socket at PATH (created mode 0660, removed on exit) instead of stdio:
        /// each connection is one MCP session with its own COMMAND; SIGINT/SIGTERM stop it (a
        /// gateway under its own Unix user; agents connect with `--connect PATH`). Or, with
        /// http://127.0.0.1:PORT/mcp, serve MCP clients over Streamable HTTP, each client session
        /// its own (loopback only unless --token-file is given).
        #[arg(long, value_name = "PATH|URL", conflicts_with = "connect")]
        listen: Option<PathBuf>,
        /// With --listen http://…: the bearer token every client must present, read from FILE
        /// (its first line).
        #[arg(long, value_name = "FILE", requires = "listen")]
        token_file: Option<PathBuf>,
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
        /// A remote MCP server over Streamable HTTP (`https://HOST/mcp`) instead of COMMAND.
        #[arg(long, value_name = "URL", conflicts_with = "connect")]
        url: Option<String>,
        /// A header every request to the --url server carries ('Authorization: Bearer …');
        /// repeatable. Seen by anyone who can list processes: prefer --header-from-env.
        #[arg(long, value_name = "'NAME: VALUE'", requires = "url")]
        header: Vec<String>,
        /// A header whose value is read from an environment variable (Authorization=GITHUB_AUTH);
        /// repeatable; the gateway does not start when the variable is not set.
        #[arg(long, value_name = "NAME=VAR", requires = "url")]
        header_from_env: Vec<String>,
        /// An `Authorization: Bearer …` header whose token is read from an environment variable
        /// (Codex's bearer_token_env_var); the gateway does not start when it is not set.
        #[arg(long, value_name = "VAR", requires = "url")]
        bearer_from_env: Option<String>,
        /// The real MCP server's command line (none with --connect or --url).
        #[arg(last = true, required_unless_present_any = ["connect", "url"], value_name = "COMMAND")]
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
    ///
    /// With --store nats://HOST:PORT/NAME: create the JetStream store's streams and buckets.
    Init {
        /// The agents' Unix group (a directory spool).
        #[arg(long, value_name = "GROUP")]
        agents_group: Option<String>,
        /// Copies of each JetStream stream (1, or 3 on a three-node cluster): a JetStream store.
        #[arg(long, conflicts_with_all = ["agents_group", "dir"], value_parser = clap::value_parser!(u8).range(1..=5))]
        replicas: Option<u8>,
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
    Hook(HookArgs),
    /// Write the hook configuration that puts warrant in front of an agent host's tools; with
    /// --mcp, put the host's MCP servers behind warrant's gateway.
    Setup {
        /// The host (claude-desktop, cursor and vscode only with --mcp).
        host: crate::mcp_setup::McpHost,
        /// Put every local MCP server the host has configured behind `warrant mcp-gateway`
        /// (keeping its command, arguments and environment), instead of writing hooks.
        #[arg(long)]
        mcp: bool,
        /// With --mcp: give every wrapped server its own command back.
        #[arg(long, requires = "mcp", conflicts_with = "check")]
        undo: bool,
        /// With --mcp: write nothing; list the servers not behind warrant (exit 1 when there is
        /// one, such as a server added since).
        #[arg(long, requires = "mcp")]
        check: bool,
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

/// How `approve` and `refuse` know the principal reviewed what is signed (`docs/conformance.md`,
/// "The CLI signs what the principal reviewed"): on a terminal, the whole packet is shown and
/// confirmed; `--hash` pins the content hash `list` printed; without a terminal one of `--hash`
/// or `--yes` is required.
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
    /// Kill an agent: signal it to stop (spool/signals/AGENT.json), record the kill switch's
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
