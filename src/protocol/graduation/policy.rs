//! The action-class registry as a policy set (`trust-graduation.md` §2): the ten canonical
//! classes with the reference runtime's policies, local classes from `policy.toml`, the
//! per-class graduation thresholds (§5.3) and strict mode (unknown classes are `blocked`).
//!
//! `policy.toml` is read from the configuration directory (`<config>/policy.toml`) and from the
//! spool (`<spool>/policy.toml`). Both may add classes; a class defined in both keeps the
//! configuration's definition; `strict` is on when either turns it on; thresholds from the
//! configuration win over the spool's.
//!
//! ```toml
//! strict = true
//!
//! [[class]]
//! id = "crm.record.update"
//! type = "external controlled"     # internal | external controlled | external | human-only
//! risk = "medium"                  # low | medium | high | critical
//! minimum_level = 3                # 0..5: autonomy level needed to run without review
//! description = "Update a CRM record."
//! aliases = ["crm.update"]
//! constraints = { rate_limit = { count = 10, window = "PT1H" } }
//!
//! [thresholds."crm.record.update"]
//! ci_low_min = 0.85
//! samples_min = 15
//!
//! # Tools, the trust ladder and agents (issue 4's models)
//! [tools."corrections.merge"]
//! tier = "destructive"             # safe | mutating | destructive (tool tiers × notebook trust)
//! required_trust_level = 4         # the tool's Lodestar floor, 0..5 (optional)
//!
//! [ladder]
//! auto_approve_up_to = 2           # 0..3; default 2; two files: the lower wins
//!
//! [agents."agent-rogue"]
//! max_score = 0.5                  # cap on the eff_score its packets may claim
//! ```

use crate::protocol::packet::is_class_id;
use crate::protocol::registry::{self, CANONICAL};
use crate::protocol::tiers::ToolTier;
use serde_json::{Map, Value, json};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A class's spec type (`action-class.schema.json` `type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClassType {
    /// No effect outside the workspace.
    Internal,
    /// An external effect under structured controls (may graduate with constraints).
    ExternalControlled,
    /// An external effect: always approval-gated.
    External,
    /// Only the principal may execute.
    HumanOnly,
}

impl ClassType {
    /// The wire spelling (with its literal space and hyphen).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            ClassType::Internal => "internal",
            ClassType::ExternalControlled => "external controlled",
            ClassType::External => "external",
            ClassType::HumanOnly => "human-only",
        }
    }

    /// Parses the wire spelling.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        [ClassType::Internal, ClassType::ExternalControlled, ClassType::External, ClassType::HumanOnly]
            .into_iter()
            .find(|t| t.as_str() == s)
    }

    /// True for the types whose actions leave the workspace.
    #[must_use]
    pub fn is_external(self) -> bool {
        !matches!(self, ClassType::Internal)
    }
}

impl fmt::Display for ClassType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The four risk classes of the reference runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Risk {
    /// Low.
    Low,
    /// Medium.
    Medium,
    /// High.
    High,
    /// Critical.
    Critical,
}

impl Risk {
    /// The wire spelling.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Risk::Low => "low",
            Risk::Medium => "medium",
            Risk::High => "high",
            Risk::Critical => "critical",
        }
    }

    /// Parses the wire spelling.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        [Risk::Low, Risk::Medium, Risk::High, Risk::Critical].into_iter().find(|r| r.as_str() == s)
    }
}

/// The policy of one action class (the reference runtime's `ActionPolicy`, §1.3 and §2).
#[derive(Debug, Clone, PartialEq)]
pub struct ClassPolicy {
    /// Canonical class id.
    pub id: String,
    /// Spec type.
    pub kind: ClassType,
    /// Risk class.
    pub risk: Risk,
    /// Autonomy level (0–5) the evidence must support for the class to run without review.
    pub minimum_level: u8,
    /// Approval required by policy, whatever the evidence.
    pub requires_approval: bool,
    /// A receipt is expected after execution.
    pub receipt_required: bool,
    /// Only the principal may execute.
    pub human_only: bool,
    /// The reference's `externalSideEffects` (`none`, `email_send`, …).
    pub external_side_effects: String,
    /// Default constraints (the constraint vocabulary of `decision.schema.json`).
    pub constraints: Map<String, Value>,
    /// Description for humans.
    pub description: String,
    /// Legacy ids that canonicalize to this class.
    pub aliases: Vec<String>,
    /// True when the policy was inferred from the class name (an unknown class).
    pub inferred: bool,
    /// True for a local class added by configuration.
    pub local: bool,
}

impl ClassPolicy {
    /// True when the gate must require an exact approval: high or critical risk, approval by
    /// policy, or an `external` type (warrant: external classes never graduate, §3.1).
    #[must_use]
    pub fn approval_required(&self) -> bool {
        matches!(self.risk, Risk::High | Risk::Critical) || self.requires_approval || self.kind == ClassType::External
    }

    /// True when only the principal may execute.
    #[must_use]
    pub fn is_human_only(&self) -> bool {
        self.human_only || self.kind == ClassType::HumanOnly || self.id == "payment.initiate"
    }

    /// The registry row as a portable v0.1 action class (`action-class.schema.json`).
    #[must_use]
    pub fn to_json(&self) -> Value {
        let mut v = json!({"id": self.id, "type": self.kind.as_str(), "description": self.description});
        if !self.aliases.is_empty() {
            v["aliases"] = json!(self.aliases);
        }
        v
    }
}

/// Per-class graduation thresholds (§5.3): `graduation_ready` needs `ci_low ≥ ci_low_min` and
/// `samples ≥ samples_min`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Threshold {
    /// Lower bound of the 95% credible interval required, in [0, 1].
    pub ci_low_min: f64,
    /// Samples required.
    pub samples_min: u32,
}

/// The spec's default thresholds: 0.80/10 for every class, except email.send.external
/// (0.92/30) and calendar.create (0.88/20).
pub const DEFAULT_THRESHOLD: Threshold = Threshold { ci_low_min: 0.80, samples_min: 10 };

fn builtin_thresholds() -> HashMap<String, Threshold> {
    [
        ("draft.compose", Threshold { ci_low_min: 0.80, samples_min: 10 }),
        ("email.send.external", Threshold { ci_low_min: 0.92, samples_min: 30 }),
        ("calendar.create", Threshold { ci_low_min: 0.88, samples_min: 20 }),
    ]
    .into_iter()
    .map(|(k, t)| (k.to_owned(), t))
    .collect()
}

/// The reference runtime's policy for a canonical class (§2 table).
fn canonical_policy(c: &registry::ActionClass) -> ClassPolicy {
    let (min, requires, receipt, effects) = match c.id {
        "read.context" => (0, false, false, "none"),
        "draft.compose" | "draft.response" | "tool.call.local" => (1, false, false, "none"),
        "email.send.internal" => (3, false, true, "email_send"),
        "email.send.external" => (5, true, true, "email_send"),
        "calendar.create" => (5, true, true, "calendar_invite"),
        "social.post.public" => (5, true, true, "public_post"),
        "payment.initiate" => (5, true, true, "money_movement"),
        _ => (5, true, true, "external_write"),
    };
    let constraints = if c.id == "email.send.internal" {
        json!({"domain_allowlist": [], "rate_limit": {"count": 5, "window": "PT1H"}})
    } else {
        json!({})
    };
    ClassPolicy {
        id: c.id.to_owned(),
        kind: ClassType::parse(c.kind).unwrap_or(ClassType::External),
        risk: Risk::parse(c.risk).unwrap_or(Risk::Critical),
        minimum_level: min,
        requires_approval: requires,
        receipt_required: receipt,
        human_only: c.kind == "human-only",
        external_side_effects: effects.to_owned(),
        constraints: constraints.as_object().cloned().unwrap_or_default(),
        description: c.description.to_owned(),
        aliases: registry::ALIASES.iter().filter(|(_, to)| *to == c.id).map(|(a, _)| (*a).to_owned()).collect(),
        inferred: false,
        local: false,
    }
}

/// The policy the reference runtime infers for a class it does not know (§2 "Unknown classes").
fn inferred_policy(id: &str) -> ClassPolicy {
    let risk = registry::risk_of(id).and_then(Risk::parse).unwrap_or(Risk::Critical);
    let has = |words: &[&str]| words.iter().any(|w| id.contains(w));
    let effects = if has(&["payment", "spend"]) {
        "money_movement"
    } else if has(&["post", "publish", "public"]) {
        "public_post"
    } else if has(&["invite", "calendar"]) {
        "calendar_invite"
    } else if has(&["email", "mail", "send"]) {
        "email_send"
    } else if risk >= Risk::High {
        "external_write"
    } else {
        "none"
    };
    ClassPolicy {
        id: id.to_owned(),
        kind: if risk >= Risk::High { ClassType::External } else { ClassType::Internal },
        risk,
        minimum_level: 1,
        requires_approval: risk != Risk::Low,
        receipt_required: risk != Risk::Low,
        human_only: false,
        external_side_effects: effects.to_owned(),
        constraints: Map::new(),
        description: format!("Unknown class {id}, policy inferred from its name."),
        aliases: Vec::new(),
        inferred: true,
        local: false,
    }
}

/// Why a policy file or a custom policy was refused.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The file is not valid TOML for a policy.
    #[error("{path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A class definition is invalid.
    #[error("class {id:?}: {message}")]
    Class {
        /// The class id as written.
        id: String,
        /// What is wrong.
        message: String,
    },
}

/// `policy.toml` as written.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyFile {
    #[serde(default)]
    strict: bool,
    #[serde(default, rename = "class")]
    classes: Vec<ClassDef>,
    #[serde(default)]
    thresholds: HashMap<String, Threshold>,
    #[serde(default)]
    tools: BTreeMap<String, ToolDef>,
    /// Rules on the command of a command-running tool (`[commands."git push *"]`).
    #[serde(default)]
    commands: BTreeMap<String, CommandDef>,
    #[serde(default)]
    ladder: Option<LadderDef>,
    #[serde(default)]
    agents: BTreeMap<String, AgentDef>,
    #[serde(default)]
    preconditions: Option<PreconditionsDef>,
    /// How long a packet of a class waits for a decision (`"email.send.external" = "1h"`, or
    /// `default`), a `humantime` duration.
    #[serde(default)]
    expiry: BTreeMap<String, String>,
    /// How long a held packet of a class (or a glob of classes) waits for the principal
    /// (`[timeouts."email.*"] refuse_after = "PT10M"`, or `wait = "forever"`).
    #[serde(default)]
    timeouts: BTreeMap<String, TimeoutDef>,
    /// Classes that need several principals (`[cosign."payment.initiate"] required = 2,
    /// principals = ["alice", "bob", "carol"]`).
    #[serde(default)]
    cosign: BTreeMap<String, CosignDef>,
}

/// `[cosign."<class>"]` as written.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct CosignDef {
    /// `k`: how many distinct principals of `principals` must approve.
    required: usize,
    /// The `n` principals who may (by the names their pinned keys speak for).
    principals: Vec<String>,
}

/// `[timeouts."<class or glob>"]` as written.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TimeoutDef {
    /// An ISO 8601 duration (`PT10M`).
    #[serde(default)]
    refuse_after: Option<String>,
    /// `"forever"`: the host's own wait stands.
    #[serde(default)]
    wait: Option<String>,
    /// With `refuse_after`: the principal's console signs the refusal as a system decision
    /// (`"system": "timeout"`, never evidence); an error with `wait = "forever"`.
    #[serde(default)]
    sign_refusal: bool,
}

/// How long a held packet of a class waits for the principal (`[timeouts]` in `policy.toml`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClassTimeout {
    /// Refused after this long undecided (`refuse_after`): the agent is told `timeout`; nothing
    /// is signed unless `sign`.
    RefuseAfter {
        /// The wait, from when the packet arrived.
        after: std::time::Duration,
        /// `sign_refusal = true`: the principal's running console signs the refusal as a system
        /// decision (`decision::SystemCause::Timeout`), which decides the packet but is never the
        /// principal's evidence for the class (`docs/conformance.md`, class timeouts).
        sign: bool,
    },
    /// `wait = "forever"`: as long as the host waits (`--wait`).
    Forever,
}

impl ClassTimeout {
    /// The wait of a hook or gateway whose own wait is `host`: capped by `refuse_after`.
    #[must_use]
    pub fn cap(self, host: std::time::Duration) -> std::time::Duration {
        match self {
            ClassTimeout::RefuseAfter { after, .. } => host.min(after),
            ClassTimeout::Forever => host,
        }
    }

    /// `refuse_after`, if set.
    #[must_use]
    pub fn refuse_after(self) -> Option<std::time::Duration> {
        match self {
            ClassTimeout::RefuseAfter { after, .. } => Some(after),
            ClassTimeout::Forever => None,
        }
    }

    /// True when the refusal at `refuse_after` is signed as a system decision
    /// (`sign_refusal = true`).
    #[must_use]
    pub fn signs_refusal(self) -> bool {
        matches!(self, ClassTimeout::RefuseAfter { sign: true, .. })
    }
}

/// One `[timeouts]` entry, its key compiled when it is a glob.
#[derive(Debug, Clone)]
struct TimeoutRule {
    key: String,
    glob: Option<LazyGlob>,
    timeout: ClassTimeout,
}

/// Reads one `[timeouts."<key>"]` entry.
fn timeout_rule(key: String, def: TimeoutDef) -> Result<TimeoutRule, PolicyError> {
    let bad = |message: String| PolicyError::Class { id: format!("timeouts.{key}"), message };
    let timeout = match (def.refuse_after.as_deref(), def.wait.as_deref()) {
        (Some(text), None) => {
            let d = iso8601::duration(text)
                .map(std::time::Duration::from)
                .map_err(|e| bad(format!("refuse_after {text:?} is not an ISO 8601 duration (PT10M): {e}")))?;
            if d.is_zero() {
                return Err(bad("refuse_after must be longer than zero".into()));
            }
            ClassTimeout::RefuseAfter { after: d, sign: def.sign_refusal }
        }
        // A refusal is signed when the wait ends: a wait that never ends has nothing to sign.
        (None, Some("forever")) if def.sign_refusal => {
            return Err(bad("sign_refusal needs refuse_after: wait = \"forever\" never refuses".into()));
        }
        (None, Some("forever")) => ClassTimeout::Forever,
        (None, Some(other)) => return Err(bad(format!("wait = {other:?}: the only wait is \"forever\""))),
        (Some(_), Some(_)) => return Err(bad("give refuse_after or wait = \"forever\", not both".into())),
        (None, None) => return Err(bad("give refuse_after = \"PT10M\" or wait = \"forever\"".into())),
    };
    let glob = if is_glob(&key) {
        Some(LazyGlob::new(&key).map_err(|e| bad(format!("not a glob: {e}")))?)
    } else if is_class_id(&key) {
        None
    } else {
        return Err(bad("not a class id or a glob of class ids".into()));
    };
    Ok(TimeoutRule { key, glob, timeout })
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct PreconditionsDef {
    roots: Vec<PathBuf>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolDef {
    tier: String,
    #[serde(default)]
    required_trust_level: Option<u8>,
    /// The action class of a call of this tool (issue 17).
    #[serde(default)]
    class: Option<String>,
    /// The ladder rung of a call of this tool, 0..=5 (issue 17).
    #[serde(default)]
    level: Option<u8>,
    /// For a command-running tool: the input field that holds the command (`command` for
    /// Claude Code's `Bash`), which `[commands]` rules classify.
    #[serde(default)]
    command: Option<String>,
    /// The arguments a call depends on, observed when it is proposed and re-checked before it
    /// runs (two-phase execution): `[{ check = "file.sha256", argument = "path" }]`.
    #[serde(default)]
    preconditions: Vec<ToolPrecondition>,
    /// The input field holding the amount a call moves (a JSON number), which a grant's
    /// `max_amount` is checked against.
    #[serde(default)]
    amount: Option<String>,
    /// The input fields holding a call's recipients (addresses, a string, comma-separated, or an
    /// array of strings), whose domains a grant's `domain_allowlist` is checked against.
    #[serde(default)]
    recipients: Vec<String>,
}

/// One precondition a tool entry declares (`preconditions = [{ check, argument }]` of
/// `[tools."<key>"]`): the argument of a call that names a file or a repository, and the check
/// warrant observes on it when the call is proposed, when the principal approves it, and just
/// before the gateway forwards it (`lodestar-and-tiers.md` §A3; [`crate::protocol::calls::action_preconditions`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolPrecondition {
    /// The check: one of [`crate::protocol::ladder::PRECONDITION_CHECKS`] (`file.sha256`, `file.exists`,
    /// `git.head_unchanged`, `git.head`).
    pub check: String,
    /// The name of the call's input field holding the path (a string, or an array of strings:
    /// one check each); a relative path is resolved against the call's working directory.
    pub argument: String,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct CommandDef {
    tier: String,
    #[serde(default)]
    class: Option<String>,
    #[serde(default)]
    level: Option<u8>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct LadderDef {
    auto_approve_up_to: u8,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentDef {
    #[serde(default)]
    max_score: Option<f64>,
    /// The Unix users who may publish packets and receipts as this agent.
    #[serde(default)]
    users: Option<Vec<String>>,
}

/// A tool registered in `policy.toml` (`[tools."<key>"]`): its workbench tier and its Lodestar
/// floor (`lodestar-and-tiers.md` §B2, §A1), and for tool calls governed by a hook or the
/// gateway (issue 17) the action class and ladder rung of a call and, for a command-running
/// tool, the input field holding its command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolPolicy {
    /// The tool's tier; fixed by the principal, never by the packet.
    pub tier: ToolTier,
    /// The lowest `required_level` a contract for this tool may declare (0..=5), if set.
    pub required_trust_level: Option<u8>,
    /// The action class of a call (`class`), if set.
    pub class: Option<String>,
    /// The ladder rung of a call (`level`, 0..=5), if set.
    pub level: Option<u8>,
    /// The input field that holds the command of a command-running tool (`command`), if any.
    pub command: Option<String>,
    /// The preconditions a call of this tool carries (`preconditions`), in the order written.
    pub preconditions: Vec<ToolPrecondition>,
    /// The input field holding the amount a call moves (`amount`), if declared: what a class
    /// grant's `max_amount` is checked against ([`crate::protocol::grant::CallFacts`]).
    pub amount: Option<String>,
    /// The input fields holding a call's recipients (`recipients`): what a class grant's
    /// `domain_allowlist` is checked against.
    pub recipients: Vec<String>,
}

impl ToolPolicy {
    /// The ladder floor a call of this tool has: the higher of `required_trust_level` and
    /// `level` (0 when neither is set).
    #[must_use]
    pub fn floor(&self) -> u8 {
        self.required_trust_level.unwrap_or(0).max(self.level.unwrap_or(0))
    }
}

/// A rule on the command of a command-running tool (`[commands."<glob>"]`, issue 17): the glob
/// is matched against each simple command of the command line, its words re-joined by single
/// spaces; a pattern ending in ` *` also matches the command with no further words.
#[derive(Debug, Clone)]
pub struct CommandRule {
    /// The pattern as written.
    pub pattern: String,
    /// Its compiled form.
    pub(crate) glob: LazyGlob,
    /// What a command it matches is.
    pub policy: ToolPolicy,
}

impl CommandRule {
    /// Whether the rule matches a command's normalised words (`calls::CommandPart::words`).
    #[must_use]
    pub fn matches(&self, words: &str) -> bool {
        self.glob.is_match(words)
            // `git push *` also matches a bare `git push`.
            || self.glob.source.strip_suffix(" *").is_some_and(|head| head == words)
    }
}

/// A tool key that is a glob (`filesystem/read_*`), compiled.
#[derive(Debug, Clone)]
pub(crate) struct ToolGlob {
    pub(crate) pattern: String,
    pub(crate) glob: LazyGlob,
    pub(crate) policy: ToolPolicy,
}

/// A glob checked when parsed and compiled to its matcher (a regex) only when a name with its
/// literal prefix is first matched against it: a hook process answers one call, and compiling
/// every rule of the tables cost it milliseconds.
#[derive(Debug, Clone)]
pub(crate) struct LazyGlob {
    source: String,
    prefix: String,
    glob: globset::Glob,
    matcher: std::sync::OnceLock<globset::GlobMatcher>,
}

impl LazyGlob {
    /// Parses `pattern` (`*` matches any characters, `/` included).
    fn new(pattern: &str) -> Result<Self, String> {
        let glob = globset::GlobBuilder::new(pattern)
            .literal_separator(false)
            .backslash_escape(true)
            .build()
            .map_err(|e| e.to_string())?;
        let prefix = pattern.split(['*', '?', '[', '{', '\\']).next().unwrap_or("").to_owned();
        Ok(Self { source: pattern.to_owned(), prefix, glob, matcher: std::sync::OnceLock::new() })
    }

    /// Whether `s` matches.
    pub(crate) fn is_match(&self, s: &str) -> bool {
        s.starts_with(&self.prefix) && self.matcher.get_or_init(|| self.glob.compile_matcher()).is_match(s)
    }
}

/// Whether a `[tools]` key or `[commands]` pattern is a glob rather than a literal name.
fn is_glob(key: &str) -> bool {
    key.contains(['*', '?', '[', '{'])
}

/// How specific a glob is: the number of its characters that are not wildcards.
pub(crate) fn specificity(pattern: &str) -> usize {
    pattern.chars().filter(|c| !matches!(c, '*' | '?' | '[' | ']' | '{' | '}')).count()
}

/// The tools of Claude Code and Codex and the command rules warrant applies when `policy.toml`
/// does not name them (`assets/host-tools.toml`).
const HOST_TOOLS: &str = include_str!("../../../assets/host-tools.toml");

/// The Lodestar auto-approve ceiling when `policy.toml` sets none (the CLI and proxy default, §A4).
pub const DEFAULT_LADDER_CEILING: u8 = 2;

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ClassDef {
    id: String,
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    risk: Option<String>,
    #[serde(default)]
    minimum_level: Option<u8>,
    #[serde(default)]
    requires_approval: Option<bool>,
    #[serde(default)]
    receipt_required: Option<bool>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    aliases: Vec<String>,
    #[serde(default)]
    constraints: Option<toml::Table>,
}

/// The registry and policies the gate consults. Cheap to clone behind an `Arc`.
#[derive(Debug, Clone)]
pub struct PolicySet {
    classes: Vec<ClassPolicy>,
    aliases: HashMap<String, String>,
    /// Bit `n` set when some alias is `n` bytes long (`n` < 64; longer ones are always looked up).
    alias_lengths: u64,
    /// Unknown classes are `blocked` instead of inferred.
    pub strict: bool,
    thresholds: HashMap<String, Threshold>,
    tools: BTreeMap<String, ToolPolicy>,
    /// `[tools]` keys that are globs, from `policy.toml`.
    tool_globs: Vec<ToolGlob>,
    /// `[commands]` rules from `policy.toml`.
    commands: Vec<CommandRule>,
    /// The built-in table of the hosts' own tools and commands ([`HOST_TOOLS`]), consulted after
    /// `policy.toml`'s.
    host: Arc<HostTable>,
    /// `auto_approve_up_to` of the trust ladder's ceiling policy (0..=3).
    pub ladder_ceiling: u8,
    /// Caps on the effective score an agent's packets may claim (`[agents."<id>"] max_score`).
    agent_caps: BTreeMap<String, f64>,
    /// The Unix users who may speak for an agent (`[agents."<id>"] users`), as written and
    /// resolved to uids (a name no user has resolves to nothing: fail closed).
    agent_users: BTreeMap<String, (Vec<String>, Vec<u32>)>,
    /// The directories preconditions may observe (`[preconditions] roots`), absolute.
    precondition_roots: Vec<PathBuf>,
    /// Floors a `warrant eval` request raised for tools no policy registers
    /// ([`PolicySet::tighten_tool`]).
    unregistered_floors: BTreeMap<String, u8>,
    /// `[expiry]`: how long packets of a class (or `default`) wait for a decision.
    expiry: BTreeMap<String, std::time::Duration>,
    /// `[timeouts]`: the configuration's entries first (they win over the spool's for one key).
    timeouts: Vec<TimeoutRule>,
    /// `[cosign]`: the quorum each class needs, by class id or alias as written (normalised when
    /// looked up, once every file's aliases are known), the spool's file last (it wins).
    cosign: Vec<(String, crate::protocol::decision::Quorum)>,
}

/// Lodestar's conservative floor for a tool no policy registers (`lodestar-and-tiers.md`).
pub const UNREGISTERED_TOOL_FLOOR: u8 = 3;

impl Default for PolicySet {
    fn default() -> Self {
        Self::builtin()
    }
}

impl PolicySet {
    /// The ten canonical classes with the reference runtime's policies and the spec's thresholds.
    #[must_use]
    pub fn builtin() -> Self {
        PolicySet {
            classes: CANONICAL.iter().map(canonical_policy).collect(),
            aliases: registry::ALIASES.iter().map(|(a, c)| ((*a).to_owned(), (*c).to_owned())).collect(),
            alias_lengths: registry::ALIASES.iter().fold(0, |m, (a, _)| m | length_bit(a)),
            strict: false,
            thresholds: builtin_thresholds(),
            tools: BTreeMap::new(),
            tool_globs: Vec::new(),
            commands: Vec::new(),
            host: host_table(),
            ladder_ceiling: DEFAULT_LADDER_CEILING,
            agent_caps: BTreeMap::new(),
            agent_users: BTreeMap::new(),
            precondition_roots: Vec::new(),
            unregistered_floors: BTreeMap::new(),
            expiry: BTreeMap::new(),
            timeouts: Vec::new(),
            cosign: Vec::new(),
        }
    }

    /// Parses one `policy.toml` text (read from `path`, named in every error) on top of this set,
    /// as the directory store reads them ([`PolicySet::load`], in `crate::store::config`).
    ///
    /// # Errors
    /// [`PolicyError::Parse`] naming `path`, or the errors of an invalid class or tool.
    pub fn merge_toml(&mut self, text: &str, path: &Path) -> Result<(), PolicyError> {
        let file: PolicyFile =
            toml::from_str(text).map_err(|e| PolicyError::Parse { path: path.to_owned(), message: e.to_string() })?;
        // Name the file in every error, not only in parse errors.
        self.merge_file(file).map_err(|e| match e {
            PolicyError::Class { .. } => PolicyError::Parse { path: path.to_owned(), message: e.to_string() },
            other => other,
        })
    }

    /// Parses one `policy.toml` text on top of the built-in set (for tests and tools).
    ///
    /// # Errors
    /// As [`PolicySet::load`].
    pub fn from_toml(text: &str) -> Result<Self, PolicyError> {
        let file: PolicyFile = toml::from_str(text)
            .map_err(|e| PolicyError::Parse { path: PathBuf::from("policy.toml"), message: e.to_string() })?;
        let mut set = Self::builtin();
        set.merge_file(file)?;
        Ok(set)
    }

    fn merge_file(&mut self, file: PolicyFile) -> Result<(), PolicyError> {
        self.strict |= file.strict;
        for def in file.classes {
            let policy = class_from_def(def)?;
            if self.classes.iter().any(|c| c.id == policy.id) {
                continue;
            }
            for alias in &policy.aliases {
                self.alias_lengths |= length_bit(alias);
                self.aliases.entry(alias.clone()).or_insert_with(|| policy.id.clone());
            }
            self.classes.push(policy);
        }
        for (class, t) in file.thresholds {
            if !(0.0..=1.0).contains(&t.ci_low_min) {
                return Err(PolicyError::Class { id: class, message: "ci_low_min must be in [0, 1]".into() });
            }
            if class != "default" && !is_class_id(&class) {
                return Err(PolicyError::Class { id: class, message: "not a class id".into() });
            }
            self.thresholds.entry(class).or_insert(t);
        }
        let table = parse_tool_table(file.tools, file.commands)?;
        for (key, policy) in table.tools {
            self.tools.entry(key).or_insert(policy);
        }
        // Globs and command rules: the configuration's come first and win ties.
        self.tool_globs.extend(table.globs);
        self.commands.extend(table.commands);
        if let Some(ladder) = file.ladder {
            if ladder.auto_approve_up_to > 3 {
                return Err(PolicyError::Class {
                    id: "ladder".into(),
                    message: "auto_approve_up_to must be 0..=3 (L4 always needs approval)".into(),
                });
            }
            // Two files: the stricter ceiling wins.
            self.ladder_ceiling = self.ladder_ceiling.min(ladder.auto_approve_up_to);
        }
        for (agent, def) in file.agents {
            let bad = |message: &str| PolicyError::Class { id: format!("agents.{agent}"), message: message.into() };
            if !crate::protocol::packet::is_safe_id(&agent) {
                return Err(bad("an agent id must be a safe id (letters, digits, `.`, `_`, `-`)"));
            }
            if let Some(max_score) = def.max_score {
                if !(0.0..=1.0).contains(&max_score) {
                    return Err(bad("max_score must be in [0, 1]"));
                }
                let cap = self.agent_caps.entry(agent.clone()).or_insert(max_score);
                *cap = cap.min(max_score);
            }
            if let Some(users) = def.users {
                // A user is a name or a numeric uid; a name is looked up in the user database.
                let uids: Vec<u32> = users
                    .iter()
                    .filter_map(|u| u.parse::<u32>().ok().or_else(|| uzers::get_user_by_name(u).map(|x| x.uid())))
                    .collect();
                // Two files naming users for one agent: only users both name may speak for it.
                match self.agent_users.get_mut(&agent) {
                    Some((names, kept)) => {
                        names.retain(|u| users.contains(u));
                        kept.retain(|u| uids.contains(u));
                    }
                    None => {
                        self.agent_users.insert(agent, (users, uids));
                    }
                }
            }
        }
        for (class, text) in file.expiry {
            let bad = |message: String| PolicyError::Class { id: format!("expiry.{class}"), message };
            if class != "default" && !is_class_id(&class) {
                return Err(bad("not a class id (or `default`)".into()));
            }
            let d = humantime::parse_duration(&text).map_err(|e| bad(format!("{text:?} is not a duration: {e}")))?;
            if d.is_zero() {
                return Err(bad("must be longer than zero".into()));
            }
            // Two files: the shorter wait wins.
            let kept = self.expiry.entry(class).or_insert(d);
            *kept = (*kept).min(d);
        }
        for (key, def) in file.timeouts {
            let rule = timeout_rule(key, def)?;
            if !self.timeouts.iter().any(|r| r.key == rule.key) {
                self.timeouts.push(rule);
            }
        }
        for (key, def) in file.cosign {
            let bad = |message: String| PolicyError::Class { id: format!("cosign.{key}"), message };
            if !is_class_id(&key) {
                return Err(bad("not a class id (co-signing names one class, not a glob)".into()));
            }
            if let Some(name) = def.principals.iter().find(|p| p.len() > 128 || p.chars().any(char::is_control)) {
                return Err(bad(format!("{name:?} is not a principal's name")));
            }
            let distinct: std::collections::BTreeSet<&String> = def.principals.iter().collect();
            if distinct.len() != def.principals.len() {
                return Err(bad("a principal is listed twice".into()));
            }
            let quorum = crate::protocol::decision::Quorum::new(def.required, def.principals).map_err(bad)?;
            // A later file (the spool's) wins: it is the one the hooks and the gateway of a shared
            // spool read.
            self.cosign.push((key, quorum));
        }
        if let Some(pre) = file.preconditions {
            if let Some(bad) = pre.roots.iter().find(|r| !r.is_absolute()) {
                return Err(PolicyError::Class {
                    id: "preconditions.roots".into(),
                    message: format!("{} is not an absolute path", bad.display()),
                });
            }
            self.precondition_roots.extend(pre.roots);
        }
        Ok(())
    }

    /// Registers (or replaces) a tool from JSON `{"tier", "required_trust_level"?}` (the
    /// `warrant eval` form of `[tools."<key>"]`).
    ///
    /// # Errors
    /// A sentence for an unknown tier or a level outside 0..=5.
    pub fn add_tool(&mut self, key: &str, def: &Value) -> Result<(), String> {
        self.tools.insert(key.to_owned(), tool_from_json(key, def)?);
        Ok(())
    }

    /// The tools registered in `policy.toml`: by name, then the glob keys (not the built-in
    /// table of the hosts' tools).
    pub fn tools(&self) -> impl Iterator<Item = (&str, &ToolPolicy)> {
        self.tools
            .iter()
            .map(|(k, v)| (k.as_str(), v))
            .chain(self.tool_globs.iter().map(|g| (g.pattern.as_str(), &g.policy)))
    }

    /// The policy of the tool `key`: `policy.toml`'s entry of that name, else its most specific
    /// glob that matches (ties: the stricter), else the built-in table of the hosts' tools
    /// (`assets/host-tools.toml`) the same way; `None` for a tool nobody registers.
    #[must_use]
    pub fn tool(&self, key: &str) -> Option<&ToolPolicy> {
        self.tools
            .get(key)
            .or_else(|| best_glob(&self.tool_globs, key))
            .or_else(|| self.host.tools.get(key))
            .or_else(|| best_glob(&self.host.globs, key))
    }

    /// The input field holding the command of `key` in the built-in table of the hosts' tools,
    /// if it is a command-running tool there (`Bash` → `command`): a `policy.toml` entry or glob
    /// that names the tool without `command` keeps it, so its command rules still apply.
    #[must_use]
    pub fn host_command_field(&self, key: &str) -> Option<&str> {
        self.host.tools.get(key).and_then(|p| p.command.as_deref())
    }

    /// The `[commands]` rules: `policy.toml`'s, then the built-in ones.
    pub fn command_rules(&self) -> impl Iterator<Item = &CommandRule> {
        self.commands.iter().chain(self.host.commands.iter())
    }

    /// Whether `policy.toml` has its own `[commands]` rules (the built-in ones then still apply,
    /// after them).
    #[must_use]
    pub fn has_command_rules(&self) -> bool {
        !self.commands.is_empty()
    }

    /// The risk of `class` as warrant's policies define it (the registry's, a local class's, or
    /// inferred for an unknown class): what the principal sees, never the packet's own claim.
    #[must_use]
    pub fn class_risk(&self, class: &str) -> Risk {
        self.policy(&self.normalize(class)).risk
    }

    /// How long a packet of `class` waits for a decision by default (`[expiry]`: the class's,
    /// else `default`), if the policy says.
    #[must_use]
    pub fn default_expiry(&self, class: &str) -> Option<std::time::Duration> {
        let canonical = self.normalize(class);
        self.expiry.get(&canonical).or_else(|| self.expiry.get("default")).copied()
    }

    /// True when some `[timeouts]` entry has `sign_refusal = true` (the console looks for
    /// timed-out packets to refuse only then).
    #[must_use]
    pub fn signs_timeouts(&self) -> bool {
        self.timeouts.iter().any(|r| r.timeout.signs_refusal())
    }

    /// How long a held packet of `class` waits for the principal (`[timeouts]`): the entry for
    /// its canonical id, else the most specific glob that matches it (ties: the shorter wait),
    /// else `None` (the host's wait stands).
    #[must_use]
    pub fn class_timeout(&self, class: &str) -> Option<ClassTimeout> {
        let canonical = self.normalize(class);
        let raw = class.trim().to_lowercase();
        // An exact key names the class by its id or an alias.
        if let Some(r) = self.timeouts.iter().find(|r| r.glob.is_none() && self.normalize(&r.key) == canonical) {
            return Some(r.timeout);
        }
        let wait = |t: ClassTimeout| t.refuse_after().unwrap_or(std::time::Duration::MAX);
        self.timeouts
            .iter()
            .filter(|r| r.glob.as_ref().is_some_and(|g| g.is_match(&canonical) || g.is_match(&raw)))
            .max_by(|a, b| specificity(&a.key).cmp(&specificity(&b.key)).then(wait(b.timeout).cmp(&wait(a.timeout))))
            .map(|r| r.timeout)
    }

    /// The quorum an approval of `class` needs (`[cosign]`, issue 18): `None` when one
    /// principal's approval is enough.
    #[must_use]
    pub fn cosign(&self, class: &str) -> Option<&crate::protocol::decision::Quorum> {
        if self.cosign.is_empty() {
            return None;
        }
        let canonical = self.normalize_cow(class);
        self.cosign.iter().rev().find(|(k, _)| self.normalize_cow(k) == canonical).map(|(_, q)| q)
    }

    /// Whether any class needs several principals (`[cosign]`).
    #[must_use]
    pub fn any_cosign(&self) -> bool {
        !self.cosign.is_empty()
    }

    /// The directories preconditions may observe (`[preconditions] roots`): see
    /// [`crate::preconditions::Observer`].
    #[must_use]
    pub fn precondition_roots(&self) -> &[PathBuf] {
        &self.precondition_roots
    }

    /// The Unix users `policy.toml` lets speak for `agent` (`[agents."<id>"] users`), if it
    /// names any; otherwise the agent belongs to the first user the chain saw publishing it.
    #[must_use]
    pub fn agent_users(&self, agent: &str) -> Option<&[String]> {
        self.agent_users.get(agent).map(|(names, _)| names.as_slice())
    }

    /// [`PolicySet::agent_users`] resolved to uids (names no user has are left out).
    #[must_use]
    pub fn agent_uids(&self, agent: &str) -> Option<&[u32]> {
        self.agent_users.get(agent).map(|(_, uids)| uids.as_slice())
    }

    /// The effective score an agent may claim: its claim (NaN and values outside [0, 1] read as
    /// 0, fail closed) capped by `[agents."<id>"] max_score`.
    #[must_use]
    pub fn effective_score(&self, agent: &str, claimed: f64) -> f64 {
        let claimed = if (0.0..=1.0).contains(&claimed) { claimed } else { 0.0 };
        self.agent_caps.get(agent).map_or(claimed, |cap| claimed.min(*cap))
    }

    /// Adds custom policies in the reference runtime's camelCase form (`actionClass`,
    /// `riskClass`, `minimumLevel`, `requiresApproval`, `humanOnly`, `externalSideEffects`,
    /// `constraints`; snake_case spellings are accepted too). A custom policy replaces a built-in
    /// one for the same class, as `customPolicies` does in the reference.
    ///
    /// # Errors
    /// [`PolicyError::Class`] for a policy without a valid class id or with a wrongly typed field.
    pub fn with_custom(&self, policies: &[Value]) -> Result<Self, PolicyError> {
        let mut set = self.clone();
        for p in policies {
            let policy = class_from_json(p)?;
            set.classes.retain(|c| c.id != policy.id);
            set.classes.push(policy);
        }
        Ok(set)
    }

    /// This set with request-supplied class policies (the reference runtime's custom policy
    /// form, as [`PolicySet::with_custom`] reads it) that can only **tighten** it, field by
    /// field, against the class as this set defines it (registered, or inferred for an unknown
    /// class): `type` the stricter (internal < external controlled < external < human-only),
    /// `risk` and `minimumLevel` the higher, `requiresApproval`, `receiptRequired` and
    /// `humanOnly` OR-ed, `constraints` narrowed ([`crate::protocol::graduation::gate::merge_constraints`]),
    /// `externalSideEffects` the host's unless it has none. `docs/eval.md`, "Request policies only
    /// tighten"; issue 15 §4.
    ///
    /// # Errors
    /// As [`PolicySet::with_custom`].
    pub fn tightened_by(&self, policies: &[Value]) -> Result<Self, PolicyError> {
        let mut set = self.clone();
        for p in policies {
            let req = class_from_json(p)?;
            let base = set.policy(&req.id).into_owned();
            let rank = |k: ClassType| match k {
                ClassType::Internal => 0,
                ClassType::ExternalControlled => 1,
                ClassType::External => 2,
                ClassType::HumanOnly => 3,
            };
            let merged = ClassPolicy {
                kind: if rank(req.kind) > rank(base.kind) { req.kind } else { base.kind },
                risk: base.risk.max(req.risk),
                minimum_level: base.minimum_level.max(req.minimum_level),
                requires_approval: base.requires_approval || req.requires_approval,
                receipt_required: base.receipt_required || req.receipt_required,
                human_only: base.human_only || req.human_only,
                external_side_effects: if base.external_side_effects == "none" {
                    req.external_side_effects
                } else {
                    base.external_side_effects.clone()
                },
                constraints: crate::protocol::graduation::gate::merge_constraints(&base.constraints, &req.constraints),
                inferred: false,
                local: base.local || base.inferred,
                ..base
            };
            set.classes.retain(|c| c.id != merged.id);
            set.classes.push(merged);
        }
        Ok(set)
    }

    /// Tightens the tool `key` with a request's definition (`{"tier", "required_trust_level"?}`,
    /// the `warrant eval` form of `[tools."<key>"]`): for a tool this set registers, the tier the
    /// more dangerous (safe < mutating < destructive) and the floor the higher; a tool it does not
    /// register stays unregistered (no tier: the tiers gate answers `confirm` whatever the
    /// notebook), and its floor is the higher of the request's and Lodestar's conservative L3.
    /// `docs/eval.md`, "Request policies only tighten"; issue 15 §4.
    ///
    /// # Errors
    /// As [`PolicySet::add_tool`].
    pub fn tighten_tool(&mut self, key: &str, def: &Value) -> Result<(), String> {
        let req = tool_from_json(key, def)?;
        let rank = |t: ToolTier| match t {
            ToolTier::Safe => 0,
            ToolTier::Mutating => 1,
            ToolTier::Destructive => 2,
        };
        match self.tools.get_mut(key) {
            Some(host) => {
                if rank(req.tier) > rank(host.tier) {
                    host.tier = req.tier;
                }
                host.required_trust_level = match (host.required_trust_level, req.required_trust_level) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    (a, b) => a.or(b),
                };
            }
            None => {
                let floor = req.required_trust_level.unwrap_or(0).max(UNREGISTERED_TOOL_FLOOR);
                self.unregistered_floors.insert(key.to_owned(), floor);
            }
        }
        Ok(())
    }

    /// The ladder floor a request raised for a tool this set does not register (at least
    /// [`UNREGISTERED_TOOL_FLOOR`]), if any.
    #[must_use]
    pub fn unregistered_floor(&self, key: &str) -> Option<u8> {
        self.unregistered_floors.get(key).copied()
    }

    /// Normalizes an id as the reference does, using this set's alias table too.
    #[must_use]
    pub fn normalize(&self, id: &str) -> String {
        self.normalize_cow(id).into_owned()
    }

    /// [`PolicySet::normalize`] without allocating in the common case: an id already made only of
    /// `[a-z0-9.]` is borrowed (or its alias target, borrowed from this set); anything else is
    /// trimmed, lower-cased and dotted as `normalize` does.
    #[must_use]
    pub fn normalize_cow<'a>(&'a self, id: &'a str) -> Cow<'a, str> {
        if id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.') {
            // No alias has this length: no need to hash the id.
            if id.len() >= 64 || self.alias_lengths & (1 << id.len()) != 0 {
                return Cow::Borrowed(self.aliases.get(id).map_or(id, String::as_str));
            }
            return Cow::Borrowed(id);
        }
        Cow::Owned(self.normalize_slow(id))
    }

    fn normalize_slow(&self, id: &str) -> String {
        let raw = id.trim().to_lowercase();
        if let Some(c) = self.aliases.get(&raw) {
            return c.clone();
        }
        let dotted = raw.replace('_', ".");
        self.aliases.get(&dotted).cloned().unwrap_or(dotted)
    }

    /// The registered policy of a canonical id (canonical or local), if any.
    #[must_use]
    pub fn registered(&self, canonical: &str) -> Option<&ClassPolicy> {
        self.classes.iter().find(|c| c.id == canonical)
    }

    /// The policy of a canonical id: registered, else inferred from the name. A class that
    /// needs several principals (`[cosign]`) always requires approval: it never graduates (and
    /// no grant covers it: [`crate::protocol::grant::prepare`]), so no call of it runs on fewer
    /// signatures than its quorum.
    #[must_use]
    pub fn policy(&self, canonical: &str) -> Cow<'_, ClassPolicy> {
        let p = self.registered(canonical).map_or_else(|| Cow::Owned(inferred_policy(canonical)), Cow::Borrowed);
        if !p.requires_approval && self.cosign(canonical).is_some() {
            let mut owned = p.into_owned();
            owned.requires_approval = true;
            return Cow::Owned(owned);
        }
        p
    }

    /// Every registered class, canonical ones first.
    pub fn classes(&self) -> impl Iterator<Item = &ClassPolicy> {
        self.classes.iter()
    }

    /// The graduation threshold of a class: its own, else `default` from the policy file, else
    /// [`DEFAULT_THRESHOLD`].
    #[must_use]
    pub fn threshold(&self, canonical: &str) -> Threshold {
        self.thresholds.get(canonical).or_else(|| self.thresholds.get("default")).copied().unwrap_or(DEFAULT_THRESHOLD)
    }
}

/// The bit of [`PolicySet`]'s alias-length filter for `alias` (0 for 64 bytes and longer, which
/// are always looked up).
fn length_bit(alias: &str) -> u64 {
    if alias.len() < 64 { 1 << alias.len() } else { 0 }
}

/// A tool from JSON `{"tier", "required_trust_level"?}` (the `warrant eval` form of
/// `[tools."<key>"]`).
fn tool_from_json(key: &str, def: &Value) -> Result<ToolPolicy, String> {
    let tier = def
        .get("tier")
        .and_then(Value::as_str)
        .and_then(ToolTier::parse)
        .ok_or_else(|| format!("tools.{key}.tier must be safe, mutating or destructive"))?;
    let level = match def.get("required_trust_level") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_u64().filter(|l| *l <= 5).ok_or_else(|| format!("tools.{key}.required_trust_level must be 0..=5"))?
                as u8,
        ),
    };
    Ok(ToolPolicy {
        tier,
        required_trust_level: level,
        class: None,
        level: None,
        command: None,
        preconditions: Vec::new(),
        amount: None,
        recipients: Vec::new(),
    })
}

fn class_from_def(def: ClassDef) -> Result<ClassPolicy, PolicyError> {
    let err = |message: String| PolicyError::Class { id: def.id.clone(), message };
    if !is_class_id(&def.id) {
        return Err(err("does not match the class-id pattern ^[a-z][a-z0-9]*(\\.[a-z][a-z0-9]*)+$".into()));
    }
    let kind = ClassType::parse(&def.kind).ok_or_else(|| {
        err(format!("type {:?} is not internal, external controlled, external or human-only", def.kind))
    })?;
    let default_risk = match kind {
        ClassType::Internal => Risk::Low,
        ClassType::ExternalControlled => Risk::Medium,
        ClassType::External => Risk::High,
        ClassType::HumanOnly => Risk::Critical,
    };
    let risk = match &def.risk {
        Some(r) => Risk::parse(r).ok_or_else(|| err(format!("risk {r:?} is not low, medium, high or critical")))?,
        None => default_risk,
    };
    let minimum_level = def.minimum_level.unwrap_or(match kind {
        ClassType::Internal => 1,
        ClassType::ExternalControlled => 3,
        _ => 5,
    });
    if minimum_level > 5 {
        return Err(err("minimum_level must be 0 to 5".into()));
    }
    for alias in &def.aliases {
        if alias.trim().is_empty() {
            return Err(err("empty alias".into()));
        }
    }
    let constraints = match def.constraints {
        Some(t) => match serde_json::to_value(t) {
            Ok(Value::Object(m)) => m,
            _ => return Err(err("constraints must be a table".into())),
        },
        None => Map::new(),
    };
    Ok(ClassPolicy {
        requires_approval: def.requires_approval.unwrap_or(kind == ClassType::External),
        receipt_required: def.receipt_required.unwrap_or(kind.is_external()),
        human_only: kind == ClassType::HumanOnly,
        external_side_effects: if kind.is_external() { "external_write" } else { "none" }.to_owned(),
        description: def.description.unwrap_or_else(|| format!("Local class {}.", def.id)),
        aliases: def.aliases.iter().map(|a| a.trim().to_lowercase()).collect(),
        id: def.id,
        kind,
        risk,
        minimum_level,
        constraints,
        inferred: false,
        local: true,
    })
}

fn class_from_json(v: &Value) -> Result<ClassPolicy, PolicyError> {
    let get = |keys: &[&str]| keys.iter().find_map(|k| v.get(*k)).filter(|x| !x.is_null());
    let raw_id = get(&["actionClass", "action_class", "id"]).and_then(Value::as_str).unwrap_or_default();
    let err = |message: &str| PolicyError::Class { id: raw_id.to_owned(), message: message.to_owned() };
    let id = registry::normalize(raw_id);
    if !is_class_id(&id) {
        return Err(err("a custom policy needs an `actionClass` matching the class-id pattern"));
    }
    let bool_of = |keys: &[&str]| -> Result<Option<bool>, PolicyError> {
        match get(keys) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(err(&format!("`{}` must be a boolean", keys[0]))),
        }
    };
    let risk = match get(&["riskClass", "risk_class", "risk"]) {
        None => registry::risk_of(&id).and_then(Risk::parse).unwrap_or(Risk::Critical),
        Some(r) => {
            r.as_str().and_then(Risk::parse).ok_or_else(|| err("`riskClass` must be low, medium, high or critical"))?
        }
    };
    let minimum_level = match get(&["minimumLevel", "minimum_level"]) {
        None => 1,
        Some(n) => n.as_u64().filter(|n| *n <= 5).ok_or_else(|| err("`minimumLevel` must be an integer 0 to 5"))? as u8,
    };
    let human_only = bool_of(&["humanOnly", "human_only"])?.unwrap_or(false);
    let kind = match get(&["type", "kind"]) {
        Some(t) => t.as_str().and_then(ClassType::parse).ok_or_else(|| err("`type` is not a class type"))?,
        None if human_only => ClassType::HumanOnly,
        None if risk >= Risk::High => ClassType::External,
        None => ClassType::Internal,
    };
    let constraints = match get(&["constraints"]) {
        None => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => return Err(err("`constraints` must be an object")),
    };
    Ok(ClassPolicy {
        requires_approval: bool_of(&["requiresApproval", "requires_approval"])?.unwrap_or(risk != Risk::Low),
        receipt_required: bool_of(&["receiptRequired", "receipt_required"])?.unwrap_or(risk != Risk::Low),
        human_only,
        external_side_effects: get(&["externalSideEffects", "external_side_effects"])
            .and_then(Value::as_str)
            .unwrap_or("none")
            .to_owned(),
        description: get(&["description"]).and_then(Value::as_str).unwrap_or("Custom policy.").to_owned(),
        aliases: Vec::new(),
        id,
        kind,
        risk,
        minimum_level,
        constraints,
        inferred: false,
        local: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_timeouts_from_toml() {
        let set = PolicySet::from_toml(
            r#"
            [timeouts."email.*"]
            refuse_after = "PT10M"
            [timeouts."email.send.external"]
            refuse_after = "PT30S"
            sign_refusal = true
            [timeouts."payment.spend"]
            refuse_after = "PT5M"
            sign_refusal = false
            [timeouts."*"]
            wait = "forever"
            "#,
        )
        .expect("parses");
        let ten = std::time::Duration::from_secs(600);
        let after =
            |secs: u64, sign: bool| ClassTimeout::RefuseAfter { after: std::time::Duration::from_secs(secs), sign };
        assert_eq!(set.class_timeout("email.send.external"), Some(after(30, true)));
        assert!(set.class_timeout("email.send.external").is_some_and(ClassTimeout::signs_refusal));
        assert_eq!(set.class_timeout("email.draft"), Some(after(600, false)));
        // A key may name a class by an alias; a glob matches the class as the packet names it too.
        assert_eq!(set.class_timeout("payment.initiate"), Some(after(300, false)));
        assert_eq!(set.class_timeout("email.draft.external"), Some(after(600, false)));
        assert_eq!(set.class_timeout("file.write"), Some(ClassTimeout::Forever));
        assert!(!ClassTimeout::Forever.signs_refusal());
        assert!(set.signs_timeouts());
        assert_eq!(after(600, false).cap(std::time::Duration::from_secs(60)).as_secs(), 60);
        assert_eq!(after(600, true).refuse_after(), Some(ten));
        assert_eq!(ClassTimeout::Forever.cap(std::time::Duration::from_secs(60)).as_secs(), 60);
        assert_eq!(PolicySet::builtin().class_timeout("email.draft"), None);
        assert!(!PolicySet::builtin().signs_timeouts());
        let unsigned = PolicySet::from_toml("[timeouts.\"x.y\"]\nrefuse_after = \"PT1M\"").expect("parses");
        assert!(!unsigned.signs_timeouts());
        for bad in [
            "[timeouts.\"x.y\"]\nrefuse_after = \"10m\"",
            "[timeouts.\"x.y\"]\nwait = \"long\"",
            // A wait that never ends refuses nothing, so there is no refusal to sign.
            "[timeouts.\"x.y\"]\nwait = \"forever\"\nsign_refusal = true",
            "[timeouts.\"x.y\"]\nsign_refusal = true",
            "[timeouts.\"x.y\"]\nrefuse_after = \"PT1M\"\nsign_refusal = \"yes\"",
            "[timeouts.\"x.y\"]\nrefuse_after = \"PT1M\"\nwait = \"forever\"",
            "[timeouts.\"x.y\"]\nrefuse_after = \"PT0S\"",
            "[timeouts.\"x.y\"]\n",
            "[timeouts.\"Not A Class\"]\nwait = \"forever\"",
        ] {
            assert!(PolicySet::from_toml(bad).is_err(), "{bad}");
        }
        let err = PolicySet::from_toml("[timeouts.\"x.y\"]\nwait = \"forever\"\nsign_refusal = true")
            .expect_err("forever and sign_refusal")
            .to_string();
        assert!(err.contains("sign_refusal needs refuse_after"), "{err}");
    }

    #[test]
    fn local_classes_from_toml() {
        let set = PolicySet::from_toml(
            r#"
            strict = true
            [[class]]
            id = "crm.record.update"
            type = "external controlled"
            aliases = ["crm_update", "crm.upd"]
            constraints = { rate_limit = { count = 10, window = "PT1H" } }
            [thresholds."crm.record.update"]
            ci_low_min = 0.85
            samples_min = 15
            "#,
        )
        .expect("valid policy");
        assert!(set.strict);
        assert_eq!(set.normalize("crm_update"), "crm.record.update");
        assert_eq!(set.normalize("crm.upd"), "crm.record.update");
        // The allocation-free path agrees with the general one.
        let ids = registry::ALIASES.iter().flat_map(|(a, c)| [*a, *c]).chain([
            "crm.upd",
            "crm_upd",
            "crm.update",
            " Draft.Response ",
            "payment.spend",
            "widget.thing",
            "a",
            "",
        ]);
        for id in ids {
            assert_eq!(set.normalize_cow(id), set.normalize_slow(id), "{id:?}");
        }
        let p = set.registered("crm.record.update").expect("registered");
        assert_eq!((p.kind, p.risk, p.minimum_level), (ClassType::ExternalControlled, Risk::Medium, 3));
        assert_eq!(p.constraints["rate_limit"]["count"], 10);
        assert_eq!(set.threshold("crm.record.update").samples_min, 15);
        assert_eq!(set.threshold("email.send.external").ci_low_min, 0.92);
        assert_eq!(set.threshold("read.context"), DEFAULT_THRESHOLD);
    }

    #[test]
    fn invalid_local_classes_are_refused() {
        for bad in [
            "[[class]]\nid = \"Bad_Id\"\ntype = \"internal\"",
            "[[class]]\nid = \"a.b\"\ntype = \"sideways\"",
            "[[class]]\nid = \"a.b\"\ntype = \"internal\"\nminimum_level = 9",
            "[[class]]\nid = \"a.b\"\ntype = \"internal\"\nsurprise = 1",
            "[thresholds.\"a.b\"]\nci_low_min = 2.0\nsamples_min = 1",
        ] {
            assert!(PolicySet::from_toml(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_local_class_cannot_redefine_a_canonical_one() {
        let set = PolicySet::from_toml("[[class]]\nid = \"payment.initiate\"\ntype = \"internal\"").expect("parses");
        assert!(set.policy("payment.initiate").is_human_only());
    }
}

/// A tool table: `[tools]` and `[commands]` of one file, parsed.
#[derive(Debug, Default)]
pub(crate) struct HostTable {
    tools: BTreeMap<String, ToolPolicy>,
    globs: Vec<ToolGlob>,
    commands: Vec<CommandRule>,
}

/// The built-in table ([`HOST_TOOLS`]), parsed once.
fn host_table() -> Arc<HostTable> {
    static TABLE: std::sync::OnceLock<Arc<HostTable>> = std::sync::OnceLock::new();
    Arc::clone(TABLE.get_or_init(|| {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct File {
            tools: BTreeMap<String, ToolDef>,
            commands: BTreeMap<String, CommandDef>,
        }
        // The file is part of the binary and checked by a test: a failure here is a build defect.
        let file: File = toml::from_str(HOST_TOOLS).unwrap_or_else(|e| panic!("assets/host-tools.toml: {e}"));
        Arc::new(parse_tool_table(file.tools, file.commands).unwrap_or_else(|e| panic!("assets/host-tools.toml: {e}")))
    }))
}

/// The most specific glob of `globs` matching `key` (ties: the stricter tier, then the higher
/// floor; then the first).
fn best_glob<'a>(globs: &'a [ToolGlob], key: &str) -> Option<&'a ToolPolicy> {
    globs
        .iter()
        .filter(|g| g.glob.is_match(key))
        .max_by_key(|g| (specificity(&g.pattern), g.policy.tier, g.policy.floor()))
        .map(|g| &g.policy)
}

/// Parses `[tools]` and `[commands]`.
fn parse_tool_table(
    tools: BTreeMap<String, ToolDef>,
    commands: BTreeMap<String, CommandDef>,
) -> Result<HostTable, PolicyError> {
    let mut table = HostTable::default();
    let policy = |id: String, tier: &str, required: Option<u8>, class: Option<String>, level: Option<u8>, command| {
        let bad = |message: String| PolicyError::Class { id: id.clone(), message };
        let tier =
            ToolTier::parse(tier).ok_or_else(|| bad(format!("tier {tier:?} is not safe, mutating or destructive")))?;
        if required.is_some_and(|l| l > 5) {
            return Err(bad("required_trust_level must be 0..=5".into()));
        }
        if level.is_some_and(|l| l > 5) {
            return Err(bad("level must be 0..=5".into()));
        }
        let class = match class {
            None => None,
            Some(c) => {
                let n = registry::normalize(&c);
                if !is_class_id(&n) {
                    return Err(bad(format!("class {c:?} is not an action class id (like email.send.external)")));
                }
                Some(n)
            }
        };
        Ok(ToolPolicy {
            tier,
            required_trust_level: required,
            class,
            level,
            command,
            preconditions: Vec::new(),
            amount: None,
            recipients: Vec::new(),
        })
    };
    for (key, def) in tools {
        let id = format!("tools.{key}");
        if let Some(field) = def.command.as_deref().filter(|f| f.is_empty()) {
            return Err(PolicyError::Class { id, message: format!("command field {field:?} must not be empty") });
        }
        let mut p = policy(id.clone(), &def.tier, def.required_trust_level, def.class, def.level, def.command)?;
        for (i, pre) in def.preconditions.iter().enumerate() {
            let bad = |message: String| PolicyError::Class {
                id: id.clone(),
                message: format!("preconditions[{i}]: {message}"),
            };
            if !crate::protocol::ladder::PRECONDITION_CHECKS.contains(&pre.check.as_str()) {
                return Err(bad(format!(
                    "check {:?} is not one warrant can observe ({})",
                    pre.check,
                    crate::protocol::ladder::PRECONDITION_CHECKS.join(", ")
                )));
            }
            if pre.argument.trim().is_empty() {
                return Err(bad("argument must name an input field (a non-empty string)".into()));
            }
        }
        p.preconditions = def.preconditions;
        if def.amount.as_deref().is_some_and(|f| f.trim().is_empty())
            || def.recipients.iter().any(|f| f.trim().is_empty())
        {
            return Err(PolicyError::Class { id, message: "amount and recipients must name input fields".into() });
        }
        p.amount = def.amount;
        p.recipients = def.recipients;
        if is_glob(&key) {
            let glob = LazyGlob::new(&key).map_err(|message| PolicyError::Class { id, message })?;
            table.globs.push(ToolGlob { pattern: key, glob, policy: p });
        } else {
            table.tools.insert(key, p);
        }
    }
    for (pattern, def) in commands {
        let id = format!("commands.{pattern}");
        let normal = crate::protocol::calls::normalize_command_pattern(&pattern)
            .ok_or_else(|| PolicyError::Class { id: id.clone(), message: "an empty command pattern".into() })?;
        let p = policy(id.clone(), &def.tier, None, def.class, def.level, None)?;
        let glob = LazyGlob::new(&normal).map_err(|message| PolicyError::Class { id, message })?;
        table.commands.push(CommandRule { pattern, glob, policy: p });
    }
    Ok(table)
}
