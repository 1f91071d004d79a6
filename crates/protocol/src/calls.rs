//! Tool calls as approval packets: what a call of an agent host's tool or of an MCP
//! server's tool is — its action class, tier and ladder rung — and the packet that asks for it.
//!
//! Pure: the hooks and the gateway (surfaces) read the call and the spool; this module only maps
//! values. The classification comes from the principal's tool table (`policy.toml`'s `[tools]`
//! and `[commands]`, then the built-in `assets/host-tools.toml`), never from the packet, so the
//! composed verdict ([`crate::verdict::evaluate`]) classifies a tool-call packet again from its
//! `proposed_action` rather than trusting what it declares.
//!
//! A tool nobody registers gets Lodestar's conservative defaults (`lodestar-and-tiers.md` §A1:
//! L3 floor, irreversible, external) and no tier, so the tiers gate answers `confirm`: it is never
//! allowed on its own. MCP tool annotations (`readOnlyHint`, `destructiveHint`) come from the
//! server: `destructiveHint: true` raises the tier to destructive; nothing lowers one.

use crate::graduation::policy::{PolicySet, ToolPolicy, ToolPrecondition};
use crate::ladder::ActionPrecondition;
use crate::tiers::ToolTier;
use serde_json::{Value, json};

/// The class of a call whose tool no table names (Lodestar's conservative defaults: external).
pub const UNREGISTERED_CLASS: &str = "tool.call.external";

/// What a tool call is, as the principal's tool table says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classification {
    /// The action class (canonical id).
    pub class: String,
    /// The tool tier; `None` for a tool no table registers (the tiers gate then asks).
    pub tier: Option<ToolTier>,
    /// The ladder rung of the call (0..=5).
    pub level: u8,
    /// Which entry decided, in words (`tools."Bash"`, `commands."git push *"`, `unregistered`).
    pub rule: String,
    /// Hints the MCP server declared about the tool (`readOnlyHint`, `destructiveHint`, …),
    /// shown to the principal; only `destructiveHint: true` has an effect (it tightens).
    pub annotations: Value,
    /// The preconditions the tool's own table entry declares (a `[commands]` rule adds none);
    /// [`action_preconditions`] turns them into the contract's checks for one call.
    pub preconditions: Vec<ToolPrecondition>,
    /// The protected files the call names, as the surface resolved them (the resolved file and
    /// how the call spelled it, or why a path could not be resolved safely;
    /// [`Classification::protect`]), and the programs its configuration would make it run
    /// ([`Classification::unsafe_by_configuration`]): recorded in the packet as
    /// `proposed_action.protected`.
    pub protected: Vec<String>,
    /// Why the call was made to wait for the principal whatever its table entry says, one phrase
    /// per reason (`names a protected file (…)`, `may start an interactive program (…)`): told
    /// to the agent with the hold.
    pub raised: Vec<String>,
}

impl Classification {
    /// The contract's reversibility for this call: `irreversible` for destructive and
    /// unregistered tools, `reversible` otherwise.
    #[must_use]
    pub fn reversibility(&self) -> &'static str {
        match self.tier {
            Some(ToolTier::Safe | ToolTier::Mutating) => "reversible",
            _ => "irreversible",
        }
    }

    /// The contract's blast radius: `self` for safe tools, `project` for mutating ones,
    /// `external` for destructive and unregistered ones.
    #[must_use]
    pub fn blast_radius(&self) -> &'static str {
        match self.tier {
            Some(ToolTier::Safe) => "self",
            Some(ToolTier::Mutating) => "project",
            _ => "external",
        }
    }

    /// Raises the call to [`PROTECTED_LEVEL`] (and a registered tier to destructive) for each
    /// protected file it names, resolved by the surface ([`crate::protected::ProtectedPaths::hit`]; a path that
    /// could not be resolved safely counts as one): such a call waits for the principal,
    /// whatever the tool table says, and no notebook trust, graduation or ceiling runs it alone.
    pub fn protect(&mut self, hits: &[String]) {
        self.raise(hits, "names a protected file");
    }

    /// Raises a call that would run a program its configuration names (`reasons`, found by the
    /// surface: a git setting such as `core.fsmonitor`, or `git -c …`) as [`Self::protect`]
    /// does: it may run anything, so it waits for the principal; the reasons are shown.
    pub fn unsafe_by_configuration(&mut self, reasons: &[String]) {
        self.raise(reasons, "runs what its configuration names");
    }

    /// Raises the call to [`PROTECTED_LEVEL`] (a registered tier to destructive) for
    /// `reasons`, shown after `what` in the rule and recorded in [`Self::protected`].
    pub(crate) fn raise(&mut self, reasons: &[String], what: &str) {
        if reasons.is_empty() {
            return;
        }
        self.level = self.level.max(PROTECTED_LEVEL);
        if self.tier.is_some() {
            self.tier = Some(ToolTier::Destructive);
        }
        let shown: Vec<&str> = reasons.iter().take(3).map(String::as_str).collect();
        let more = if reasons.len() > 3 { format!(" and {} more", reasons.len() - 3) } else { String::new() };
        let phrase = format!("{what} ({}{more})", shown.join("; "));
        self.rule.push_str(&format!(", {phrase}"));
        self.raised.push(phrase);
        for h in reasons {
            if !self.protected.contains(h) {
                self.protected.push(h.clone());
            }
        }
    }

    /// Stricter of two: the higher rung, then the more dangerous tier (`None`, unregistered,
    /// is the most dangerous).
    fn strictness(&self) -> (u8, u8) {
        (self.level, self.tier.map_or(3, |t| t as u8))
    }
}

fn from_policy(p: &ToolPolicy, rule: String, default_class: &str) -> Classification {
    Classification {
        class: p.class.clone().unwrap_or_else(|| default_class.to_owned()),
        tier: Some(p.tier),
        level: p.floor(),
        rule,
        annotations: Value::Null,
        preconditions: Vec::new(),
        protected: Vec::new(),
        raised: Vec::new(),
    }
}

/// Classifies a call of `tool` with `input` (the tool's arguments) and the server's
/// `annotations` (`null` when none).
///
/// `tool` is the host's name (`Bash`, `mcp__github__create_issue`) or a gateway's
/// `<name>/<tool>`. For a command-running tool (`command = "<field>"` in its table entry) whose
/// input has that field, each simple command of the command line is matched against the
/// `[commands]` rules ([`classify_command`]).
#[must_use]
pub fn classify(policies: &PolicySet, tool: &str, input: &Value, annotations: &Value) -> Classification {
    let mut c = match policies.tool(tool) {
        None => Classification {
            class: UNREGISTERED_CLASS.to_owned(),
            tier: None,
            level: crate::graduation::policy::UNREGISTERED_TOOL_FLOOR,
            rule: "unregistered (Lodestar's conservative defaults)".to_owned(),
            annotations: Value::Null,
            preconditions: Vec::new(),
            protected: Vec::new(),
            raised: Vec::new(),
        },
        Some(p) => {
            let base = from_policy(p, format!("tools.{tool:?}"), "tool.call.local");
            // A `policy.toml` entry (or glob) for a host's command tool keeps its command field.
            let field = policies.command_field(tool);
            let mut c = match field.map(|f| input.get(f)) {
                Some(Some(command)) => {
                    let mut c = classify_command(policies, &base, command);
                    // What is typed into an editor, a pager or a shell it starts reaches no hook.
                    if let Some(line) = command_line(command) {
                        c.raise(&crate::interactive::interactive_parts(&line), "may start an interactive program");
                    }
                    c
                }
                // A command tool without its command field: as the tool itself.
                _ => base,
            };
            c.preconditions.clone_from(&p.preconditions);
            c
        }
    };
    if let Some(hit) = protected_path(input) {
        // The principal's keys and policies, the spool, the hosts' hook settings and the shell's
        // start-up files: a call that names one waits for the principal, whatever the table says.
        c.level = c.level.max(PROTECTED_LEVEL);
        if c.tier.is_some() {
            c.tier = Some(ToolTier::Destructive);
        }
        c.rule.push_str(&format!(", names a protected path ({hit})"));
    }
    if annotations.get("destructiveHint").and_then(Value::as_bool) == Some(true)
        && c.tier.is_some_and(|t| t < ToolTier::Destructive)
    {
        c.tier = Some(ToolTier::Destructive);
        c.rule.push_str(", destructiveHint");
    }
    if annotations.is_object() {
        c.annotations = annotations.clone();
    }
    c
}

/// The rung of a call that names a [`PROTECTED`] path: above every auto-approve ceiling.
pub const PROTECTED_LEVEL: u8 = 4;

/// Parts of paths a call may not touch without the principal, whatever the tool table says:
/// warrant's configuration and spool (the key, the pinned keys, `policy.toml`, the passphrase
/// file), the hosts' settings that hold the hooks (`.claude/`, `.codex/`), and files that run
/// code at the next login or commit (shell start-up files, `.ssh/`, git's config and hooks).
/// An agent that could rewrite them could reclassify its own calls or turn its gate off.
pub const PROTECTED: [&str; 17] = [
    ".config/warrant",
    "/warrant/spool",
    "principal.key",
    "pinned_keys.toml",
    "passphrase",
    ".claude/",
    ".claude.json",
    ".codex/",
    ".bashrc",
    ".bash_profile",
    ".zshrc",
    ".zprofile",
    ".profile",
    ".ssh/",
    ".gitconfig",
    ".git/config",
    ".git/hooks",
];

/// The first [`PROTECTED`] part any string of `input` contains (keys included), if any.
#[must_use]
pub fn protected_path(input: &Value) -> Option<&'static str> {
    match input {
        Value::String(s) => PROTECTED.iter().find(|p| s.contains(*p)).copied(),
        Value::Array(a) => a.iter().find_map(protected_path),
        Value::Object(m) => {
            m.iter().find_map(|(k, v)| PROTECTED.iter().find(|p| k.contains(*p)).copied().or_else(|| protected_path(v)))
        }
        _ => None,
    }
}

/// The shell line a command tool's command field holds: a string as it is, or an argv array
/// (`["bash", "-lc", LINE]` is `LINE`: what runs; any other argv is quoted and joined). `None`
/// for anything else.
#[must_use]
pub fn command_line(command: &Value) -> Option<String> {
    match command {
        Value::String(s) => Some(s.clone()),
        Value::Array(a) if a.iter().all(Value::is_string) => {
            let words: Vec<&str> = a.iter().filter_map(Value::as_str).collect();
            Some(match shell_line(&words) {
                Some(line) => line.to_owned(),
                None => shlex::try_join(words).unwrap_or_default(),
            })
        }
        _ => None,
    }
}

/// Classifies a command line (a string, or an argv array such as Codex's
/// `["bash", "-lc", "<line>"]`) against the `[commands]` rules, with `base` (the tool's own
/// entry) for every part no rule matches. The strictest part decides; a part with a
/// substitution, a redirection or a subshell is never made less strict than `base`.
#[must_use]
pub fn classify_command(policies: &PolicySet, base: &Classification, command: &Value) -> Classification {
    let Some(line) = command_line(command) else { return base.clone() };
    let parts = split_command_line(&line);
    if parts.is_empty() {
        return base.clone();
    }
    let mut strictest: Option<Classification> = None;
    for part in parts {
        let matched = part.words.as_deref().and_then(|w| best_rule(policies, w));
        let c = match (matched, part.complex) {
            (None, _) => base.clone(),
            (Some((pattern, p)), false) => from_policy(p, format!("commands.{pattern:?}"), &base.class),
            (Some((pattern, p)), true) => {
                let c = from_policy(p, format!("commands.{pattern:?}"), &base.class);
                if c.strictness() >= base.strictness() { c } else { base.clone() }
            }
        };
        if strictest.as_ref().is_none_or(|s| c.strictness() > s.strictness()) {
            strictest = Some(c);
        }
    }
    strictest.unwrap_or_else(|| base.clone())
}

/// The line an argv runs through a shell (`["bash", "-lc", LINE]`), when it is exactly that: a
/// shell named bare or from `/bin` or `/usr/bin` (never `./bash`, which the agent may have
/// written), and one short-option word ending in `c` (`-c`, `-lc`; never a long option such as
/// `--norc`, after which `LINE` would be a script file to run).
#[must_use]
pub fn shell_line<'a>(words: &[&'a str]) -> Option<&'a str> {
    let [sh, flag, line] = words else { return None };
    let name = sh.strip_prefix("/usr/bin/").or_else(|| sh.strip_prefix("/bin/")).unwrap_or(sh);
    let shell = matches!(name, "bash" | "sh" | "zsh" | "dash");
    let short = flag
        .strip_prefix('-')
        .is_some_and(|f| !f.is_empty() && f.ends_with('c') && f.chars().all(|c| c.is_ascii_alphabetic()));
    (shell && short).then_some(*line)
}

/// The most specific `[commands]` rule matching `words` (ties: the stricter; then
/// `policy.toml`'s before the built-in ones).
fn best_rule<'a>(policies: &'a PolicySet, words: &str) -> Option<(&'a str, &'a ToolPolicy)> {
    let mut best: Option<(usize, (u8, ToolTier), &crate::graduation::policy::CommandRule)> = None;
    for rule in policies.command_rules() {
        if !rule.matches(words) {
            continue;
        }
        let key = (crate::glob::specificity(&rule.pattern), (rule.policy.floor(), rule.policy.tier));
        if best.as_ref().is_none_or(|(s, k, _)| (key.0, key.1) > (*s, *k)) {
            best = Some((key.0, key.1, rule));
        }
    }
    best.map(|(_, _, r)| (r.pattern.as_str(), &r.policy))
}

/// A `[commands]` pattern with its words re-joined by single spaces (as commands are before
/// matching); `None` for an empty one.
#[must_use]
pub fn normalize_command_pattern(pattern: &str) -> Option<String> {
    let words: Vec<&str> = pattern.split_whitespace().collect();
    (!words.is_empty()).then(|| words.join(" "))
}

/// One simple command of a command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandPart {
    /// Its words (quotes removed) re-joined by single spaces, leading `VAR=value` words dropped
    /// and the program's directory removed; `None` when the words cannot be parsed (unbalanced
    /// quotes): no rule then applies to it.
    pub words: Option<String>,
    /// It has a command substitution, a process substitution, a redirection or a subshell.
    pub complex: bool,
    /// The part as written (quotes kept, a comment dropped): what
    /// [`crate::protected::path_words`] reads the words that may name files from.
    pub text: String,
}

/// Splits a shell command line into its simple commands at unquoted `;`, `&&`, `||`, `|`, `&`
/// and newlines, noting in each part whatever a rule on its words cannot see (substitutions,
/// redirections, subshells). Quoting follows POSIX: `'…'` is literal, `"…"` and unquoted text
/// honour backslashes; `$(`, `` ` `` and `<(`/`>(` count inside double quotes too.
#[must_use]
pub fn split_command_line(line: &str) -> Vec<CommandPart> {
    let mut parts = Vec::new();
    let (mut cur, mut complex) = (String::new(), false);
    let (mut single, mut double) = (false, false);
    let mut chars = line.chars().peekable();
    let mut finish = |cur: &mut String, complex: &mut bool| {
        if !cur.trim().is_empty() || *complex {
            let (words, hidden) = simple_words(cur).map_or((None, true), |(w, h)| (Some(w), h));
            parts.push(CommandPart { words, complex: *complex || hidden, text: cur.clone() });
        }
        cur.clear();
        *complex = false;
    };
    while let Some(c) = chars.next() {
        if single {
            cur.push(c);
            single = c != '\'';
            continue;
        }
        // An unquoted `#` that starts a word starts a comment, to the end of the line: quotes in
        // it quote nothing (they must not hide the newline that ends it), and what the comment
        // says is not matched. The part is complex: shlex drops the comment from its words.
        if c == '#' && !double && cur.chars().last().is_none_or(char::is_whitespace) {
            complex = true;
            while chars.peek().is_some_and(|n| *n != '\n') {
                chars.next();
            }
            continue;
        }
        match c {
            '\\' => {
                cur.push(c);
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            '\'' if !double => {
                single = true;
                cur.push(c);
            }
            '"' => {
                double = !double;
                cur.push(c);
            }
            '`' => {
                complex = true;
                cur.push(c);
            }
            '$' if chars.peek() == Some(&'(') => {
                complex = true;
                cur.push(c);
            }
            '<' | '>' if !double => {
                complex = true;
                cur.push(c);
            }
            '(' | ')' | '{' | '}' if !double => {
                complex = true;
                cur.push(c);
            }
            ';' | '\n' | '&' | '|' if !double => finish(&mut cur, &mut complex),
            _ => cur.push(c),
        }
    }
    if single || double {
        // Unbalanced quotes: the last part cannot be read.
        complex = true;
    }
    finish(&mut cur, &mut complex);
    parts
}

/// Options that make a read-only command run a program or write a file (`rg --pre`, `git diff
/// --ext-diff`, `git log --output`, `git -c`, `find -exec`, `sort -o`): a part with one is
/// complex, so a rule that calls the command safe cannot cover it.
const RUNS_OR_WRITES: [&str; 14] = [
    "--output",
    "--ext-diff",
    "--pre",
    "--exec",
    "-exec",
    "-execdir",
    "--upload-pack",
    "--receive-pack",
    "--config",
    "-c",
    "--textconv",
    "-o",
    "--open-files-in-pager",
    "-O",
];

/// The words of one simple command, normalised for matching ([`CommandPart::words`]), and
/// whether something a rule on those words cannot see changes what runs: leading `VAR=value`
/// words (`GIT_EXTERNAL_DIFF=…`, `LD_PRELOAD=…`, `PATH=…`), a program named by a path (`./cat`
/// is not `cat`), or an option in [`RUNS_OR_WRITES`]. `None` when the words cannot be read.
fn simple_words(part: &str) -> Option<(String, bool)> {
    let words = shlex::split(part)?;
    let assignments = words.iter().take_while(|w| is_assignment(w)).count();
    let mut words = words.into_iter().skip(assignments);
    let program = words.next()?;
    let pathed = program.contains('/');
    let program = program.rsplit('/').next().unwrap_or(&program).to_owned();
    let rest: Vec<String> = words.collect();
    let runs = rest.iter().any(|w| {
        RUNS_OR_WRITES.iter().any(|o| w == o || (o.starts_with("--") && w.starts_with(&format!("{o}="))))
            || w.starts_with("--output")
            || w.starts_with("--pre")
    });
    let hidden = assignments > 0 || pathed || runs;
    Some((std::iter::once(program).chain(rest).collect::<Vec<_>>().join(" "), hidden))
}

/// Whether `word` is a shell assignment (`NAME=value`, `NAME` a shell variable name).
pub fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            && !name.as_bytes()[0].is_ascii_digit()
    })
}

/// Whether `s` may be a tool key in a packet's `governance.tool`: a safe id
/// ([`crate::packet::is_safe_id`]) that may also contain `/` (a gateway's `<name>/<tool>`), with
/// no empty segment.
#[must_use]
pub fn is_tool_key(s: &str) -> bool {
    !s.starts_with('/')
        && !s.ends_with('/')
        && !s.contains("//")
        && s.split('/').all(crate::packet::is_safe_id)
        && s.len() <= 200
}

/// The contract's preconditions for one call of a tool whose table entry declares `declared`
/// (`preconditions = [{ check, argument }]`), read from the call's `input`: one
/// `{check_id, parameters, expected_at_approval: null, must_revalidate_at_execution: true}` per
/// path the argument names (a string, or each string of an array), in the order declared.
/// `file.*` checks take `parameters: {"path": …}`, `git.*` checks `{"repo": …}`.
///
/// A relative path is resolved against `cwd` (the hook event's `cwd`; the gateway's working
/// directory, which is also its server's), and `.` components and repeated `/` are dropped. A
/// path that cannot be resolved — no `cwd`, or one starting with `~`, which servers expand but
/// warrant does not — is kept as written, and `..` is kept: the observer refuses such paths, so
/// the precondition fails closed. An argument that is missing or not a string (or array of
/// strings) gives `{"path": null}` (or `{"repo": null}`), which cannot be observed either.
///
/// The values are observed outside this module (`warrant_engine::govern::Governor::submit` fills
/// `expected_at_approval` when the call is proposed; the approval records them again).
#[must_use]
pub fn action_preconditions(
    declared: &[ToolPrecondition],
    input: &Value,
    cwd: Option<&str>,
) -> Vec<ActionPrecondition> {
    let mut out = Vec::new();
    for d in declared {
        let key = if d.check.starts_with("git.") { "repo" } else { "path" };
        let paths: Vec<Value> = match input.get(&d.argument) {
            Some(Value::String(p)) => vec![json!(resolve_path(p, cwd))],
            Some(Value::Array(a)) if !a.is_empty() && a.iter().all(Value::is_string) => {
                a.iter().filter_map(Value::as_str).map(|p| json!(resolve_path(p, cwd))).collect()
            }
            _ => vec![Value::Null],
        };
        for path in paths {
            out.push(ActionPrecondition {
                check_id: d.check.clone(),
                parameters: json!({ key: path }),
                expected_at_approval: Value::Null,
                must_revalidate_at_execution: true,
            });
        }
    }
    out
}

/// `path` made absolute against `cwd` when it is relative, without `.` components or repeated
/// separators; as written when it cannot be resolved (see [`action_preconditions`]).
fn resolve_path(path: &str, cwd: Option<&str>) -> String {
    use std::path::Path;
    let p = Path::new(path);
    let joined = if p.is_absolute() {
        p.to_path_buf()
    } else {
        match cwd.filter(|d| Path::new(d).is_absolute()) {
            Some(d) if !path.starts_with('~') && !path.is_empty() => Path::new(d).join(p),
            _ => return path.to_owned(),
        }
    };
    joined.components().collect::<std::path::PathBuf>().to_string_lossy().into_owned()
}

/// One tool call, as a host or the gateway reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The host: `claude-code`, `codex`, or `mcp-gateway`.
    pub host: String,
    /// The agent id the packet names (the host, or `--agent`).
    pub agent: String,
    /// The host's session id (the gateway's connection), if any.
    pub session: Option<String>,
    /// The tool key (`Bash`, `mcp__github__create_issue`, `filesystem/write_file`).
    pub tool: String,
    /// The tool's arguments, exactly as the host will run them.
    pub input: Value,
    /// The notebook (workspace) whose trust applies.
    pub notebook: String,
    /// The workspace directory, when known (shown; the notebook id is derived from it).
    pub cwd: Option<String>,
    /// The directory the call runs in, when the host says (Claude Code's and Codex's event
    /// `cwd`, which follows the agent's `cd`; the project may be elsewhere): recorded in the packet
    /// as `proposed_action.workdir`, and a grant on a command tool covers calls in it only.
    pub workdir: Option<String>,
    /// The server's annotations of the tool (`null` when none).
    pub annotations: Value,
}

/// The packet id of a call with the host's call id `call_id` (`tool_use_id`): the same for a
/// retried hook, so it finds the packet it made. Ids that are already safe are kept (prefixed by
/// the host); others are hashed. Without a call id, the id is derived from the agent, session,
/// tool and exact input (the hooks give a PermissionRequest, which has none, a nonce as its call
/// id instead, so that one approval never answers a later identical request).
#[must_use]
pub fn packet_id(call: &ToolCall, call_id: Option<&str>) -> String {
    let prefix = match call.host.as_str() {
        "claude-code" => "cc",
        "codex" => "cx",
        _ => "gw",
    };
    match call_id {
        Some(id) if crate::packet::is_safe_id(id) && id.len() <= 100 => format!("{prefix}-{id}"),
        Some(id) => format!("{prefix}-{}", &crate::canonical::sha256_hex(id.as_bytes())[..32]),
        None => format!("{prefix}-req-{}", call_key(call)),
    }
}

/// The key of a call by what it is (its agent, session, tool and exact input: 32 hex digits),
/// whatever event carries it: a PreToolUse and the PermissionRequest the host sends for the same
/// call next have one key (`warrant_store::spool::permission_answered_by`).
#[must_use]
pub fn call_key(call: &ToolCall) -> String {
    let basis = json!({"session": call.session, "tool": call.tool, "input": call.input, "agent": call.agent});
    crate::canonical::canonical_hash(&basis).trim_start_matches("sha256:")[..32].to_owned()
}

/// Hosted MCP servers the built-in tool table has presets for (`assets/host-tools.toml`), by the
/// host of their URL, with the server name the presets use.
const PRESET_HOSTS: [(&str, &str); 3] =
    [("api.githubcopilot.com", "github"), ("mcp.linear.app", "linear"), ("mcp.sentry.dev", "sentry")];

/// The presets' server name for a remote MCP server's `url` (`https://api.githubcopilot.com/mcp/`
/// → `github`), `None` for a host they do not know. The host is compared whole, lowercased.
#[must_use]
pub fn hosted_preset(url: &str) -> Option<&'static str> {
    let host = url.split_once("://").map_or(url, |(_, rest)| rest);
    let host = host.split(['/', '?', '#']).next().unwrap_or("");
    let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
    let host = host.split(':').next().unwrap_or("").to_ascii_lowercase();
    PRESET_HOSTS.iter().find(|(h, _)| *h == host).map(|(_, name)| *name)
}

/// A notebook id for a workspace directory: its base name (made a safe id) and six hex digits of
/// the whole path's digest, so two projects with one name do not share their trust
/// (`warrant-1a2b3c`).
#[must_use]
pub fn notebook_for_dir(dir: &str) -> String {
    let base: String = std::path::Path::new(dir)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '_' | '-') { c } else { '-' })
        .take(48)
        .collect();
    let base = base.trim_matches('-');
    let base = if base.is_empty() { "workspace" } else { base };
    format!("{base}-{}", &crate::canonical::sha256_hex(dir.as_bytes())[..6])
}

/// A one-line summary of a call for lists, at most 160 characters: the tool and, for a command
/// tool, the command's first line; else every argument, by name (`a: 1, b: 2`;
/// strings by their first line, other values as JSON). Whatever is left out is marked `…`, never
/// dropped silently (numbers were: `get-sum {a:1,b:2}` read `everything/get-sum:`). The packet's
/// `proposed_action` carries the whole input; this is only what the principal reads first.
#[must_use]
pub fn summary(call: &ToolCall, policies: &PolicySet) -> String {
    let input = &call.input;
    let field = policies
        .tool(&call.tool)
        .and_then(|p| p.command.clone())
        .or_else(|| policies.host_command_field(&call.tool).map(str::to_owned));
    let first_line = |s: &str| {
        let first = s.lines().next().unwrap_or("");
        if s.lines().nth(1).is_some() { format!("{first} …") } else { first.to_owned() }
    };
    let text = match field.and_then(|f| input.get(f)) {
        Some(Value::String(s)) => first_line(s),
        Some(other) => other.to_string(),
        None => input.as_object().map_or_else(String::new, |m| {
            m.iter()
                .map(|(k, v)| match v {
                    Value::String(s) => format!("{k}: {}", first_line(s)),
                    other => format!("{k}: {other}"),
                })
                .collect::<Vec<_>>()
                .join(", ")
        }),
    };
    let mut s = format!("{}: {text}", call.tool);
    if s.chars().count() > 160 {
        s = s.chars().take(159).collect::<String>() + "…";
    }
    s
}

/// The portable approval packet asking for `call` (`approval-packet.schema.json` plus warrant's
/// `governance` object), with `id` and `created_at` (RFC 3339). `proposed_action` is
/// `{"tool", "input", "host", "session", "cwd", "workdir", "annotations"}` with the exact input
/// (`workdir` only when the call runs elsewhere than `cwd`);
/// `governance` names the tool, the notebook and the session, and carries the ladder contract
/// built from the classification, with the preconditions the tool's entry declares
/// ([`action_preconditions`]; their `expected_at_approval` is `null` here: this module does no
/// I/O).
#[must_use]
pub fn call_packet(call: &ToolCall, c: &Classification, policies: &PolicySet, id: &str, created_at: &str) -> Value {
    let mut proposed = json!({"tool": call.tool, "input": call.input, "host": call.host});
    if let Some(s) = &call.session {
        proposed["session"] = json!(s);
    }
    if let Some(d) = &call.cwd {
        proposed["cwd"] = json!(d);
    }
    if let Some(d) = call.workdir.as_ref().filter(|w| call.cwd.as_ref() != Some(*w)) {
        proposed["workdir"] = json!(d);
    }
    if c.annotations.is_object() {
        proposed["annotations"] = c.annotations.clone();
    }
    if !c.protected.is_empty() {
        proposed["protected"] = json!(c.protected);
    }
    let mut doc =
        crate::packet::portable_packet(id, &c.class, &call.agent, &summary(call, policies), proposed, created_at);
    let mut governance = json!({
        "tool": call.tool,
        "notebook": call.notebook,
        "contract": {
            "required_level": c.level,
            "blast_radius": c.blast_radius(),
            "reversibility": c.reversibility(),
            "scope": {"level": "repo", "identifier": call.notebook},
            "data_sensitivity": "private",
            "preconditions": action_preconditions(&c.preconditions, &call.input, call.cwd.as_deref()),
        },
    });
    if let Some(s) = call.session.as_deref().filter(|s| crate::packet::is_safe_id(s)) {
        governance["session_id"] = json!(s);
    }
    doc["governance"] = governance;
    doc
}

/// The tool call a packet asks for, when it is one ([`call_packet`]'s `proposed_action` with a
/// `tool` equal to `governance.tool`): the tool key, its input and the server's annotations.
#[must_use]
pub fn call_of_packet<'a>(proposed: &'a Value, governance_tool: &str) -> Option<(&'a Value, &'a Value)> {
    let m = proposed.as_object()?;
    (m.get("tool")?.as_str()? == governance_tool && m.contains_key("host"))
        .then(|| (m.get("input").unwrap_or(&Value::Null), m.get("annotations").unwrap_or(&Value::Null)))
}

/// Classifies the tool call a packet asks for ([`call_of_packet`]) as [`classify`] does, raised
/// for the protected files the surface that published it resolved (`proposed_action.protected`,
/// [`Classification::protect`]). `None` when the packet is not a tool call.
#[must_use]
pub fn classify_proposed(policies: &PolicySet, proposed: &Value, governance_tool: &str) -> Option<Classification> {
    let (input, hints) = call_of_packet(proposed, governance_tool)?;
    let mut c = classify(policies, governance_tool, input, hints);
    let hits: Vec<String> = match proposed.get("protected") {
        None => Vec::new(),
        Some(Value::Array(a)) => a.iter().map(|h| h.as_str().map_or_else(|| h.to_string(), str::to_owned)).collect(),
        // Anything else is not what a surface writes: treated as naming a protected file.
        Some(other) => {
            vec![format!("an unreadable `protected` list ({})", crate::text::inert(&other.to_string(), 80))]
        }
    };
    c.protect(&hits);
    Some(c)
}

/// Whether `p` asks for a tool call a hook or the gateway governs ([`call_packet`]'s form).
#[must_use]
pub fn is_call_packet(p: &crate::packet::Packet) -> bool {
    crate::verdict::Governance::of_packet(p)
        .and_then(|g| g.tool.clone())
        .is_some_and(|t| call_of_packet(p.proposed_action(), &t).is_some())
}

/// Why the constraints of a call the gate allows `allowed_with_constraints` do not hold, or
/// cannot be checked on a tool call; empty when they all hold (`trust-graduation.md` §2
/// `constraints`, the ten keys of [`crate::graduation::gate::CONSTRAINT_VOCABULARY`]). A hook or
/// the gateway sees only the tool's input, so:
///
/// - `domain_allowlist` / `recipient_allowlist`: an empty list restricts nothing (the
///   reference's default for `email.send.internal`; a context's list narrows it,
///   [`crate::graduation::gate`]); any other cannot be checked, since which arguments name
///   recipients, and in what form, only the tool knows.
/// - `rate_limit` (`count` per `window`, an ISO 8601 duration): `recent` is how many calls of
///   the class the agent made in the window before this one; `None` skips the check (the caller
///   cannot count).
/// - `expires_at`: holds until that time (`now`, unix seconds).
/// - `internal_only`, `staging_only`, `dry_run_only`, `requires_witness`: hold when `false`;
///   `true` cannot be checked. `max_amount` and a non-empty `redaction_rules` cannot be checked.
///
/// Keys outside the vocabulary are not constraints and are ignored, as the gate ignores them.
#[must_use]
pub fn constraint_failures(constraints: &serde_json::Map<String, Value>, now: f64, recent: Option<u64>) -> Vec<String> {
    let mut out = Vec::new();
    let unchecked = |k: &str| format!("`{k}` cannot be checked on a tool call");
    for (k, v) in constraints {
        match k.as_str() {
            "internal_only" | "staging_only" | "dry_run_only" | "requires_witness" if v != &Value::Bool(false) => {
                out.push(unchecked(k));
            }
            "max_amount" => out.push(unchecked(k)),
            "redaction_rules" if !v.as_array().is_some_and(Vec::is_empty) => out.push(unchecked(k)),
            "domain_allowlist" | "recipient_allowlist" => {
                // Which of a tool's arguments name recipients, and in what form (an address, a
                // contact, an id, a MIME message), only the tool knows: a list that restricts
                // anything cannot be checked on the input, so the principal decides.
                if !v.as_array().is_some_and(|a| a.iter().all(Value::is_string)) {
                    out.push(format!("`{k}` is not a list of strings"));
                } else if !v.as_array().is_some_and(Vec::is_empty) {
                    out.push(unchecked(k));
                }
            }
            "rate_limit" => {
                let count = v.get("count").and_then(Value::as_u64).filter(|c| *c >= 1);
                let window = v.get("window").and_then(Value::as_str);
                match (count, rate_window(constraints), recent) {
                    (Some(c), Some(_), Some(n)) if n >= c => out.push(format!(
                        "`rate_limit`: {n} call(s) of this class in the last {} (at most {c})",
                        window.unwrap_or_default()
                    )),
                    (Some(_), Some(_), _) => {}
                    _ => out.push("`rate_limit` is not a count and an ISO 8601 window".to_owned()),
                }
            }
            "expires_at" => match v.as_str().and_then(crate::clock::unix_seconds) {
                Some(t) if now < t => {}
                Some(_) => out.push(format!("the constraints expired at {}", v.as_str().unwrap_or_default())),
                None => out.push("`expires_at` is not a date-time".to_owned()),
            },
            _ => {}
        }
    }
    out
}

/// The `window` of a `rate_limit` constraint, in seconds (`None` when there is none, or it is
/// not a duration longer than zero, [`crate::clock::parse_duration`]: `PT1H` or `1h`).
#[must_use]
pub fn rate_window(constraints: &serde_json::Map<String, Value>) -> Option<u64> {
    let w = constraints.get("rate_limit")?.get("window")?.as_str()?;
    Some(crate::clock::parse_duration(w).ok()?.as_secs()).filter(|s| *s > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_system_shell_with_a_short_c_option_runs_its_line() {
        assert_eq!(shell_line(&["bash", "-lc", "git status"]), Some("git status"));
        assert_eq!(shell_line(&["/usr/bin/zsh", "-c", "ls"]), Some("ls"));
        assert_eq!(shell_line(&["./bash", "-c", "git status"]), None, "the agent's own program");
        assert_eq!(shell_line(&["/tmp/x/sh", "-c", "git status"]), None);
        assert_eq!(shell_line(&["bash", "--norc", "git status"]), None, "a script file, not a line");
        assert_eq!(shell_line(&["bash", "-", "git status"]), None);
        assert_eq!(shell_line(&["bash", "-c"]), None);
        // The classifier reads `./bash -c LINE` as the program `./bash`, not as LINE.
        let p = policies("");
        let base = classify(&p, "Bash", &serde_json::json!({"command": "ls"}), &Value::Null);
        let own = classify_command(&p, &base, &serde_json::json!(["./bash", "-c", "git status"]));
        let real = classify_command(&p, &base, &serde_json::json!(["bash", "-c", "git status"]));
        assert_ne!(own.rule, real.rule, "{own:?} / {real:?}");
    }

    fn policies(extra: &str) -> PolicySet {
        PolicySet::from_toml(extra).expect("policy")
    }

    // Issue 33: a summary names every argument, numbers too (`get-sum {a:1,b:2}` read
    // `everything/get-sum:`), a string by its first line, and what is cut is marked `…`.
    #[test]
    fn a_summary_names_every_argument_and_marks_what_it_cuts() {
        let p = policies("");
        let call = |tool: &str, input: Value| ToolCall {
            host: "mcp-gateway".into(),
            agent: "a".into(),
            session: None,
            tool: tool.into(),
            input,
            notebook: "nb".into(),
            cwd: None,
            workdir: None,
            annotations: Value::Null,
        };
        assert_eq!(
            summary(&call("everything/get-sum", json!({"a": 1, "b": 2.5})), &p),
            "everything/get-sum: a: 1, b: 2.5"
        );
        assert_eq!(
            summary(&call("mail/send", json!({"to": "dana@example.com", "body": "Hi\nthe quote", "urgent": true})), &p),
            "mail/send: body: Hi …, to: dana@example.com, urgent: true"
        );
        assert_eq!(summary(&call("x/list", json!({})), &p), "x/list: ");
        let long = summary(&call("x/y", json!({"items": (0..100).collect::<Vec<_>>()})), &p);
        assert_eq!(long.chars().count(), 160);
        assert!(long.starts_with("x/y: items: [0,1,2,") && long.ends_with('…'), "{long}");
        // A command tool still shows its command line.
        assert_eq!(summary(&call("Bash", json!({"command": "git push\ngit tag"})), &p), "Bash: git push …");
    }

    fn bash(p: &PolicySet, line: &str) -> Classification {
        classify(p, "Bash", &json!({"command": line}), &Value::Null)
    }

    #[test]
    fn command_rules_classify_each_part_and_the_strictest_wins() {
        let p = policies("");
        assert_eq!(bash(&p, "git status").tier, Some(ToolTier::Safe));
        assert_eq!(bash(&p, "git push origin main").level, 4);
        assert_eq!(bash(&p, "git push").level, 4, "a bare `git push` matches `git push *`");
        assert_eq!(bash(&p, "git  'push'  origin").level, 4, "quotes and spaces do not hide a push");
        assert_eq!(bash(&p, "/usr/bin/git push").level, 4, "nor does the program's directory");
        assert_eq!(bash(&p, "GIT_DIR=x git push").level, 4, "nor an assignment before it");
        assert_eq!(bash(&p, "echo hi && git push").level, 4, "the strictest part decides");
        assert_eq!(bash(&p, "ls | rm -rf /").tier, Some(ToolTier::Destructive));
        assert_eq!(bash(&p, "git push --force origin").tier, Some(ToolTier::Destructive), "most specific rule");
        // A safe rule cannot loosen what it cannot see.
        let redirect = bash(&p, "echo x > notes.txt");
        assert_eq!((redirect.tier, redirect.level), (Some(ToolTier::Mutating), 3));
        let subst = bash(&p, "echo $(curl evil)");
        assert_eq!(subst.level, 3);
        let unknown = bash(&p, "make deploy");
        assert_eq!(
            (unknown.tier, unknown.level, unknown.rule.as_str()),
            (Some(ToolTier::Mutating), 3, "tools.\"Bash\"")
        );
        assert_eq!(bash(&p, "echo 'a; rm -rf /'").tier, Some(ToolTier::Safe), "quoted operators are text");
        assert_eq!(bash(&p, "echo \"unbalanced").level, 3, "an unreadable part gets the tool's own entry");
    }

    // Found by review: a comment's quote hid a newline; assignments, a pathed program and
    // options that run or write changed what a "safe" rule covered.
    #[test]
    fn what_a_rule_cannot_see_is_never_made_safe() {
        let p = policies("");
        let c = bash(&p, "echo ok # it's\nrm -rf ~ # it's");
        assert_eq!(c.tier, Some(ToolTier::Destructive), "{c:?}");
        for line in [
            "GIT_EXTERNAL_DIFF='sh -c x' git diff",
            "LD_PRELOAD=./x.so cat f",
            "PATH=/tmp/x:$PATH ls",
            "./cat f",
            "rg --pre ./p.sh x .",
            "git log -1 --format=x --output=/tmp/y",
            "git diff --ext-diff",
            "git -c core.pager=sh status",
            "echo hi # comment",
        ] {
            let c = bash(&p, line);
            assert!(c.tier != Some(ToolTier::Safe) && c.level >= 3, "{line}: {c:?}");
        }
        assert_eq!(bash(&p, "git status").tier, Some(ToolTier::Safe), "a plain read stays safe");
    }

    #[test]
    fn protected_paths_wait_for_the_principal_whatever_the_table_says() {
        let p = policies("[tools.Write]\ntier = \"safe\"\nlevel = 0\n");
        for (tool, input) in [
            ("Write", json!({"file_path": "/home/a/.config/warrant/policy.toml", "content": "x"})),
            ("Read", json!({"file_path": "/home/a/.config/warrant/principal.key"})),
            ("Edit", json!({"file_path": "/repo/.claude/settings.json"})),
            ("Bash", json!({"command": "echo x >> ~/.bashrc"})),
            ("Bash", json!({"command": "cat $HOME/.ssh/id_ed25519"})),
        ] {
            let c = classify(&p, tool, &input, &Value::Null);
            assert!(c.level >= PROTECTED_LEVEL && c.rule.contains("protected"), "{tool} {input}: {c:?}");
        }
        assert_eq!(classify(&p, "Write", &json!({"file_path": "/repo/src/lib.rs"}), &Value::Null).level, 0);
    }

    #[test]
    fn codex_argv_commands_are_the_line_bash_runs() {
        let p = policies("");
        let c = classify(&p, "Bash", &json!({"command": ["bash", "-lc", "git push"]}), &Value::Null);
        assert_eq!(c.level, 4);
        let c = classify(&p, "Bash", &json!({"command": ["git", "status"]}), &Value::Null);
        assert_eq!(c.tier, Some(ToolTier::Safe));
    }

    #[test]
    fn policy_toml_globs_and_rules_come_before_the_builtin_table() {
        let p = policies(
            r#"
            [tools."filesystem/read_*"]
            tier = "safe"
            class = "read.context"
            level = 1
            [tools."filesystem/*"]
            tier = "destructive"
            level = 3
            [tools.Read]
            tier = "mutating"
            level = 3
            [commands."git push origin feature/*"]
            tier = "mutating"
            class = "code.push"
            level = 2
            "#,
        );
        let read = classify(&p, "filesystem/read_file", &json!({}), &Value::Null);
        assert_eq!((read.tier, read.level, read.class.as_str()), (Some(ToolTier::Safe), 1, "read.context"));
        let write = classify(&p, "filesystem/write_file", &json!({}), &Value::Null);
        assert_eq!((write.tier, write.level), (Some(ToolTier::Destructive), 3));
        assert_eq!(classify(&p, "Read", &json!({}), &Value::Null).level, 3, "policy.toml replaces the built-in");
        // A catch-all glob for every tool does not switch the command rules off for Bash.
        let all = policies("[tools.\"*\"]\ntier = \"mutating\"\nlevel = 2\n");
        assert_eq!(bash(&all, "git push origin main").level, 4);
        assert_eq!(bash(&all, "rm -rf /").tier, Some(ToolTier::Destructive));
        assert_eq!(bash(&p, "git push origin feature/x").level, 2);
        assert_eq!(bash(&p, "git push origin main").level, 4);
    }

    #[test]
    fn unregistered_tools_get_the_conservative_defaults_and_hints_only_tighten() {
        let p = policies("");
        let c = classify(&p, "mcp__github__create_issue", &json!({}), &Value::Null);
        assert_eq!((c.tier, c.level, c.reversibility(), c.blast_radius()), (None, 3, "irreversible", "external"));
        let hinted = classify(&p, "Edit", &json!({}), &json!({"destructiveHint": true}));
        assert_eq!(hinted.tier, Some(ToolTier::Destructive));
        let read_only = classify(&p, "Bash", &json!({"command": "make"}), &json!({"readOnlyHint": true}));
        assert_eq!(read_only.tier, Some(ToolTier::Mutating), "readOnlyHint never loosens");
        assert_eq!(read_only.annotations["readOnlyHint"], json!(true), "but it is shown");
    }

    #[test]
    fn declared_preconditions_become_the_contracts_checks_for_each_call() {
        let p = policies(
            r#"
            [tools."filesystem/write_file"]
            tier = "mutating"
            level = 3
            preconditions = [{ check = "file.exists", argument = "path" }, { check = "file.sha256", argument = "path" }]
            [tools."filesystem/read_multiple_files"]
            tier = "safe"
            preconditions = [{ check = "file.sha256", argument = "paths" }]
            [tools."git/git_commit"]
            tier = "mutating"
            preconditions = [{ check = "git.head_unchanged", argument = "repo_path" }]
            [tools.Bash]
            tier = "mutating"
            level = 3
            command = "command"
            preconditions = [{ check = "git.head", argument = "cwd" }]
            "#,
        );
        let pre = |tool: &str, input: Value, cwd: Option<&str>| {
            let c = classify(&p, tool, &input, &Value::Null);
            action_preconditions(&c.preconditions, &input, cwd)
        };
        let w = pre("filesystem/write_file", json!({"path": "notes/./a.txt", "content": "x"}), Some("/work/p"));
        assert_eq!(w.len(), 2);
        assert_eq!(
            (w[0].check_id.as_str(), &w[0].parameters),
            ("file.exists", &json!({"path": "/work/p/notes/a.txt"}))
        );
        assert_eq!(w[1].parameters, json!({"path": "/work/p/notes/a.txt"}), "relative to the cwd, `.` dropped");
        assert!(w.iter().all(|x| x.must_revalidate_at_execution && x.expected_at_approval.is_null()));
        let abs = pre("filesystem/write_file", json!({"path": "//work//p/../q"}), Some("/elsewhere"));
        assert_eq!(abs[0].parameters, json!({"path": "/work/p/../q"}), "`..` is kept: the observer refuses it");
        for (path, cwd) in [("~/x", Some("/work/p")), ("rel", None), ("rel", Some("also-relative"))] {
            let kept = pre("filesystem/write_file", json!({"path": path}), cwd);
            assert_eq!(kept[0].parameters, json!({"path": path}), "unresolvable {path:?} {cwd:?} stays as written");
        }
        let missing = pre("filesystem/write_file", json!({"content": "x"}), Some("/w"));
        assert_eq!(missing[0].parameters, json!({"path": null}), "a missing argument cannot be observed");
        let many = pre("filesystem/read_multiple_files", json!({"paths": ["/a", "b"]}), Some("/w"));
        assert_eq!(many.iter().map(|x| x.parameters["path"].clone()).collect::<Vec<_>>(), [json!("/a"), json!("/w/b")]);
        let git = pre("git/git_commit", json!({"repo_path": "/r", "message": "m"}), None);
        assert_eq!((git[0].check_id.as_str(), &git[0].parameters), ("git.head_unchanged", &json!({"repo": "/r"})));
        // A command rule decides the class and rung, never which checks the tool's calls carry.
        let push = classify(&p, "Bash", &json!({"command": "git push", "cwd": "/r"}), &Value::Null);
        assert_eq!((push.level, push.preconditions.len()), (4, 1));
        assert!(pre("Read", json!({"file_path": "/a"}), None).is_empty(), "the built-in table declares none");
        // The packet carries them and still parses as a contract.
        let call = ToolCall {
            host: "mcp-gateway".into(),
            agent: "mcp-gateway".into(),
            session: None,
            tool: "filesystem/write_file".into(),
            input: json!({"path": "a.txt", "content": "x"}),
            notebook: "nb".into(),
            cwd: Some("/work/p".into()),
            workdir: None,
            annotations: Value::Null,
        };
        let c = classify(&p, &call.tool, &call.input, &Value::Null);
        let doc = call_packet(&call, &c, &p, "gw-1", "2026-11-25T00:00:00Z");
        let g = crate::verdict::Governance::from_json(&doc["governance"]);
        match g.contract {
            Some(Ok(contract)) => {
                assert_eq!(contract.preconditions, action_preconditions(&c.preconditions, &call.input, Some("/work/p")))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn precondition_declarations_are_checked_and_errors_name_the_key() {
        for (entry, says) in [
            (r#"preconditions = [{ check = "shell.exec", argument = "path" }]"#, "shell.exec"),
            (r#"preconditions = [{ check = "file.sha256", argument = " " }]"#, "argument"),
            (r#"preconditions = [{ check = "file.sha256" }]"#, "argument"),
            (r#"preconditions = [{ check = "file.sha256", argument = "path", expected = "x" }]"#, "expected"),
        ] {
            let text = format!("[tools.\"filesystem/write_file\"]\ntier = \"mutating\"\n{entry}\n");
            let e = PolicySet::from_toml(&text).expect_err(entry).to_string();
            assert!(e.contains(says), "{entry}: {e}");
            assert!(e.contains("policy.toml") || e.contains("tools.filesystem/write_file"), "{entry}: {e}");
        }
    }

    #[test]
    fn tool_keys_allow_a_gateway_segment_and_nothing_else() {
        assert!(is_tool_key("filesystem/write_file"));
        assert!(is_tool_key("mcp__github__create_issue"));
        for bad in ["/x", "x/", "a//b", "../x", "a/../b", "a b", ""] {
            assert!(!is_tool_key(bad), "{bad:?}");
        }
    }

    #[test]
    fn packet_ids_are_stable_per_call_and_safe() {
        let call = ToolCall {
            host: "claude-code".into(),
            agent: "claude-code".into(),
            session: Some("s1".into()),
            tool: "Bash".into(),
            input: json!({"command": "ls"}),
            notebook: "nb".into(),
            cwd: None,
            workdir: None,
            annotations: Value::Null,
        };
        assert_eq!(packet_id(&call, Some("toolu_01")), "cc-toolu_01");
        let odd = packet_id(&call, Some("a/b c"));
        assert!(crate::packet::is_safe_id(&odd) && odd.starts_with("cc-"));
        let a = packet_id(&call, None);
        assert_eq!(a, packet_id(&call, None));
        // The packet's governance block is one the composed verdict accepts, for every tier.
        let p = policies("");
        for tool in ["Read", "Edit", "Bash", "mcp__x__y"] {
            let c = classify(&p, tool, &call.input, &Value::Null);
            let doc =
                call_packet(&ToolCall { tool: tool.into(), ..call.clone() }, &c, &p, "cc-1", "2026-11-25T00:00:00Z");
            let g = crate::verdict::Governance::from_json(&doc["governance"]);
            assert!(g.error.is_none() && matches!(g.contract, Some(Ok(_))), "{tool}: {g:?}");
        }
        let other = ToolCall { input: json!({"command": "ls -l"}), ..call };
        assert_ne!(a, packet_id(&other, None), "another input is another request");
        assert_eq!(
            notebook_for_dir("/home/a/my app"),
            format!("my-app-{}", &crate::canonical::sha256_hex(b"/home/a/my app")[..6])
        );
    }

    #[test]
    fn constraints_hold_only_when_the_call_can_be_checked_against_them() {
        let c = |v: Value| v.as_object().cloned().expect("object");
        let now = 1_799_000_000.0;
        // An allowlist that restricts anything cannot be checked on a tool's input: a quoted
        // local part, an address as an object key, a contact name or a MIME message would slip
        // past any extraction.
        let domains = c(json!({"domain_allowlist": ["acme.example"], "scope": "once"}));
        assert_eq!(
            constraint_failures(&domains, now, None),
            vec!["`domain_allowlist` cannot be checked on a tool call".to_owned()]
        );
        assert!(constraint_failures(&c(json!({"domain_allowlist": []})), now, None).is_empty());
        assert!(constraint_failures(&c(json!({"recipient_allowlist": [], "scope": "once"})), now, None).is_empty());
        assert_eq!(constraint_failures(&c(json!({"recipient_allowlist": ["bob@acme.example"]})), now, None).len(), 1);
        assert_eq!(constraint_failures(&c(json!({"domain_allowlist": "acme"})), now, None).len(), 1);

        let rate = c(json!({"rate_limit": {"count": 2, "window": "PT1H"}}));
        assert_eq!(rate_window(&rate), Some(3600));
        assert!(constraint_failures(&rate, now, Some(1)).is_empty());
        assert_eq!(
            constraint_failures(&rate, now, Some(2)),
            vec!["`rate_limit`: 2 call(s) of this class in the last PT1H (at most 2)".to_owned()]
        );
        for bad in [json!({"count": 0, "window": "PT1H"}), json!({"count": 2, "window": "soon"}), json!(5)] {
            assert_eq!(constraint_failures(&c(json!({"rate_limit": bad})), now, Some(0)).len(), 1);
        }

        for flag in ["internal_only", "staging_only", "dry_run_only", "requires_witness"] {
            assert!(constraint_failures(&c(json!({flag: false})), now, None).is_empty());
            assert_eq!(constraint_failures(&c(json!({flag: true})), now, None).len(), 1, "{flag}");
        }
        assert_eq!(constraint_failures(&c(json!({"max_amount": 10})), now, None).len(), 1);
        assert_eq!(constraint_failures(&c(json!({"redaction_rules": ["ssn"]})), now, None).len(), 1);
        assert!(constraint_failures(&c(json!({"redaction_rules": []})), now, None).is_empty());
        let expiring = c(json!({"expires_at": "2027-01-15T08:00:00Z"}));
        assert!(constraint_failures(&expiring, now, None).is_empty());
        assert_eq!(constraint_failures(&expiring, 1_900_000_000.0, None).len(), 1);
    }
}
