//! The tool table: `[tools]` and `[commands]` of `policy.toml` and the built-in table of the
//! hosts' own tools (`assets/host-tools.toml`), their globs, and the lookups on a policy set.

use super::{PolicyError, PolicySet, UNREGISTERED_TOOL_FLOOR};
use crate::glob::{Glob, is_glob, specificity};
use crate::packet::is_class_id;
use crate::registry;
use crate::tiers::ToolTier;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ToolDef {
    tier: String,
    #[serde(default)]
    required_trust_level: Option<u8>,
    /// The action class of a call of this tool.
    #[serde(default)]
    class: Option<String>,
    /// The ladder rung of a call of this tool, 0..=5.
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
/// before the gateway forwards it (`lodestar-and-tiers.md` §A3; [`crate::calls::action_preconditions`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolPrecondition {
    /// The check: one of [`crate::ladder::PRECONDITION_CHECKS`] (`file.sha256`, `file.exists`,
    /// `git.head_unchanged`, `git.head`).
    pub check: String,
    /// The name of the call's input field holding the path (a string, or an array of strings:
    /// one check each); a relative path is resolved against the call's working directory.
    pub argument: String,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CommandDef {
    tier: String,
    #[serde(default)]
    class: Option<String>,
    #[serde(default)]
    level: Option<u8>,
}

/// A tool registered in `policy.toml` (`[tools."<key>"]`): its workbench tier and its Lodestar
/// floor (`lodestar-and-tiers.md` §B2, §A1), and for tool calls governed by a hook or the
/// gateway the action class and ladder rung of a call and, for a command-running
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
    /// grant's `max_amount` is checked against ([`crate::grant::CallFacts`]).
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

/// A rule on the command of a command-running tool (`[commands."<glob>"]`): the glob
/// is matched against each simple command of the command line, its words re-joined by single
/// spaces; a pattern ending in ` *` also matches the command with no further words.
#[derive(Debug, Clone)]
pub struct CommandRule {
    /// The pattern as written.
    pub pattern: String,
    /// Its compiled form.
    pub(crate) glob: Glob,
    /// What a command it matches is.
    pub policy: ToolPolicy,
}

impl CommandRule {
    /// Whether the rule matches a command's normalised words (`calls::CommandPart::words`).
    #[must_use]
    pub fn matches(&self, words: &str) -> bool {
        self.glob.is_match(words)
            // `git push *` also matches a bare `git push`.
            || self.glob.as_str().strip_suffix(" *").is_some_and(|head| head == words)
    }
}

/// A tool key that is a glob (`filesystem/read_*`), compiled.
#[derive(Debug, Clone)]
pub(crate) struct ToolGlob {
    pub(crate) pattern: String,
    pub(crate) glob: Glob,
    pub(crate) policy: ToolPolicy,
}

/// The tools of Claude Code and Codex and the command rules warrant applies when `policy.toml`
/// does not name them (`assets/host-tools.toml`), as written: the processes read
/// [`HOST_TOOLS_JSON`], made from it at build time.
#[cfg(any(test, doc))]
pub(super) const HOST_TOOLS: &str = include_str!("../../../../../assets/host-tools.toml");

/// [`HOST_TOOLS`] as compact JSON, made from it at build time (`build.rs`): what the processes
/// read (serde_json reads it in a fraction of the time a TOML parse takes).
const HOST_TOOLS_JSON: &str = include_str!(concat!(env!("OUT_DIR"), "/host-tools.json"));

/// The built-in table's file, read from [`HOST_TOOLS_JSON`].
#[cfg(test)]
fn host_tools_file() -> HostToolsFile {
    // The file is part of the binary and checked by a test: a failure here is a build defect.
    serde_json::from_str(HOST_TOOLS_JSON).unwrap_or_else(|e| panic!("assets/host-tools.toml (as JSON): {e}"))
}

impl PolicySet {
    /// Registers (or replaces) a tool from JSON `{"tier", "required_trust_level"?}` (the
    /// `warrant eval` form of `[tools."<key>"]`).
    ///
    /// # Errors
    /// [`PolicyError::Class`] (id `tools.<key>`) for an unknown tier or a level outside 0..=5.
    pub fn add_tool(&mut self, key: &str, def: &Value) -> Result<(), PolicyError> {
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
            .or_else(|| self.host.tool(key))
            .or_else(|| best_glob(&self.host.rules().globs, key))
    }

    /// The input field holding the command of `key` in the built-in table of the hosts' tools,
    /// if it is a command-running tool there (`Bash` → `command`): a `policy.toml` entry or glob
    /// that names the tool without `command` keeps it, so its command rules still apply.
    #[must_use]
    pub fn host_command_field(&self, key: &str) -> Option<&str> {
        self.host.tool(key).and_then(|p| p.command.as_deref())
    }

    /// The field of `tool`'s input that holds its command line, when it is a command-running
    /// tool: its table entry's `command` (a `policy.toml` entry or glob for a host's own tool
    /// keeps the host's field, [`PolicySet::host_command_field`]).
    #[must_use]
    pub fn command_field(&self, tool: &str) -> Option<&str> {
        self.tool(tool).and_then(|p| p.command.as_deref().or_else(|| self.host_command_field(tool)))
    }

    /// The `[commands]` rules: `policy.toml`'s, then the built-in ones.
    pub fn command_rules(&self) -> impl Iterator<Item = &CommandRule> {
        self.commands.iter().chain(self.host.rules().commands.iter())
    }

    /// Whether `policy.toml` has its own `[commands]` rules (the built-in ones then still apply,
    /// after them).
    #[must_use]
    pub fn has_command_rules(&self) -> bool {
        !self.commands.is_empty()
    }

    /// Tightens the tool `key` with a request's definition (`{"tier", "required_trust_level"?}`,
    /// the `warrant eval` form of `[tools."<key>"]`): for a tool this set registers, the tier the
    /// more dangerous (safe < mutating < destructive) and the floor the higher; a tool it does not
    /// register stays unregistered (no tier: the tiers gate answers `confirm` whatever the
    /// notebook), and its floor is the higher of the request's and Lodestar's conservative L3.
    /// `docs/eval.md`, "Request policies only tighten".
    ///
    /// # Errors
    /// As [`PolicySet::add_tool`].
    pub fn tighten_tool(&mut self, key: &str, def: &Value) -> Result<(), PolicyError> {
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
}

/// A tool from JSON `{"tier", "required_trust_level"?}` (the `warrant eval` form of
/// `[tools."<key>"]`).
fn tool_from_json(key: &str, def: &Value) -> Result<ToolPolicy, PolicyError> {
    let bad = |message: &str| PolicyError::Class { id: format!("tools.{key}"), message: message.to_owned() };
    let tier = def
        .get("tier")
        .and_then(Value::as_str)
        .and_then(ToolTier::parse)
        .ok_or_else(|| bad("tier must be safe, mutating or destructive"))?;
    let level = match def.get("required_trust_level") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_u64().filter(|l| *l <= 5).ok_or_else(|| bad("required_trust_level must be 0..=5"))? as u8),
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

/// A tool table: `[tools]` and `[commands]` of one file, parsed.
#[derive(Debug, Default)]
pub(crate) struct HostTable {
    pub(super) tools: BTreeMap<String, ToolPolicy>,
    pub(super) globs: Vec<ToolGlob>,
    pub(super) commands: Vec<CommandRule>,
}

/// `assets/host-tools.toml` as written, read whole (by the tests; the processes read it as
/// used, [`BuiltinTable`]).
#[cfg(test)]
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct HostToolsFile {
    tools: BTreeMap<String, ToolDef>,
    commands: BTreeMap<String, CommandDef>,
    /// Read for its shape (the processes read it with [`host_offers`]).
    #[allow(dead_code)]
    hosts: BTreeMap<String, HostOffers>,
}

/// What one host version offers its model and how each tool is governed
/// (`[hosts.<host>]` of `assets/host-tools.toml`).
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostOffers {
    /// The host version the lists were read from (`2.1.197`).
    pub version: String,
    /// The name the model calls → the tool name the host's hook events carry.
    pub hooked: BTreeMap<String, String>,
    /// Tools the host sends no hook event for → why that is acceptable, or what holds them.
    pub unhooked: BTreeMap<String, String>,
}

/// The tools each host (`claude-code`, `codex`) offers its model, by host
/// (`assets/host-tools.toml`, `[hosts]`). The real-host tests compare them with what the host
/// really sends its model service.
#[must_use]
pub fn host_offers() -> BTreeMap<String, HostOffers> {
    /// The file's `[hosts]`, the rest skipped.
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Hosts {
        #[allow(dead_code)]
        tools: serde::de::IgnoredAny,
        #[allow(dead_code)]
        commands: serde::de::IgnoredAny,
        hosts: BTreeMap<String, HostOffers>,
    }
    // The file is part of the binary and checked by a test: a failure here is a build defect.
    let file: Hosts =
        serde_json::from_str(HOST_TOOLS_JSON).unwrap_or_else(|e| panic!("assets/host-tools.toml (as JSON): {e}"));
    file.hosts
}

// `HOST_TOOL_ENTRIES` and `HOST_COMMAND_ENTRIES`: the table's entries as JSON, sorted by key
// (made by `build.rs`).
include!(concat!(env!("OUT_DIR"), "/host-tools-entries.rs"));

/// The built-in table of the hosts' tools (`assets/host-tools.toml`), read as it is used: a
/// tool named exactly is read from its entry's JSON text ([`HOST_TOOL_ENTRIES`], made at build
/// time) the first time it is looked up, and the glob keys and `[commands]` rules together the
/// first time either is needed. A hook that governs one `Read` reads one entry. The same
/// policies as [`parse_tool_table`] of the whole file (test
/// `the_built_in_table_read_as_used_is_the_whole_table`).
#[derive(Debug)]
pub(crate) struct BuiltinTable {
    /// The policy of each [`HOST_TOOL_ENTRIES`] entry (by position), once read.
    tools: Box<[std::sync::OnceLock<ToolPolicy>]>,
    /// The glob keys and the command rules, once read (`tools` is empty).
    rules: std::sync::OnceLock<HostTable>,
}

impl BuiltinTable {
    /// The policy of the tool named exactly `key` (never a glob key), if the table has it.
    pub(super) fn tool(&self, key: &str) -> Option<&ToolPolicy> {
        if is_glob(key) {
            return None;
        }
        let at = HOST_TOOL_ENTRIES.binary_search_by(|(k, _)| (*k).cmp(key)).ok()?;
        Some(self.tools[at].get_or_init(|| {
            let def = built_in_entry::<ToolDef>(key, HOST_TOOL_ENTRIES[at].1);
            let mut one = parse_tool_table(BTreeMap::from([(key.to_owned(), def)]), BTreeMap::new(), Globs::Deferred)
                .unwrap_or_else(|e| panic!("assets/host-tools.toml: {e}"));
            one.tools.remove(key).unwrap_or_else(|| panic!("assets/host-tools.toml: tools.{key} is not read"))
        }))
    }

    /// The glob keys and the command rules, read on first use.
    pub(super) fn rules(&self) -> &HostTable {
        self.rules.get_or_init(|| {
            let tools = HOST_TOOL_ENTRIES
                .iter()
                .filter(|(k, _)| is_glob(k))
                .map(|(k, t)| ((*k).to_owned(), built_in_entry::<ToolDef>(k, t)))
                .collect();
            let commands = HOST_COMMAND_ENTRIES
                .iter()
                .map(|(k, t)| ((*k).to_owned(), built_in_entry::<CommandDef>(k, t)))
                .collect();
            // Their globs are read by globset when first matched (test `the_built_in_globs_are_globs`).
            parse_tool_table(tools, commands, Globs::Deferred).unwrap_or_else(|e| panic!("assets/host-tools.toml: {e}"))
        })
    }
}

/// One entry of the built-in table read (the file is part of the binary and every entry is read
/// by a test: a failure here is a build defect).
fn built_in_entry<T: serde::de::DeserializeOwned>(key: &str, text: &str) -> T {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("assets/host-tools.toml, {key}: {e}"))
}

/// The built-in table ([`BuiltinTable`]), nothing of it read yet.
pub(super) fn host_table() -> Arc<BuiltinTable> {
    static TABLE: std::sync::OnceLock<Arc<BuiltinTable>> = std::sync::OnceLock::new();
    Arc::clone(TABLE.get_or_init(|| {
        Arc::new(BuiltinTable {
            tools: HOST_TOOL_ENTRIES.iter().map(|_| std::sync::OnceLock::new()).collect(),
            rules: std::sync::OnceLock::new(),
        })
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
/// How [`parse_tool_table`] reads its globs.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Globs {
    /// Each pattern is read now, and one globset refuses is an error (`policy.toml`).
    Checked,
    /// Each pattern is read when a name first gets past its literal prefix ([`Glob::deferred`]):
    /// the built-in table, whose every pattern a test reads.
    Deferred,
}

pub(super) fn parse_tool_table(
    tools: BTreeMap<String, ToolDef>,
    commands: BTreeMap<String, CommandDef>,
    globs: Globs,
) -> Result<HostTable, PolicyError> {
    let read = |id: &str, pattern: &str| match globs {
        Globs::Checked => {
            Glob::new(pattern).map_err(|e| PolicyError::Class { id: id.to_owned(), message: e.to_string() })
        }
        Globs::Deferred => Ok(Glob::deferred(pattern)),
    };
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
            if !crate::ladder::PRECONDITION_CHECKS.contains(&pre.check.as_str()) {
                return Err(bad(format!(
                    "check {:?} is not one warrant can observe ({})",
                    pre.check,
                    crate::ladder::PRECONDITION_CHECKS.join(", ")
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
            let glob = read(&id, &key)?;
            table.globs.push(ToolGlob { pattern: key, glob, policy: p });
        } else {
            table.tools.insert(key, p);
        }
    }
    for (pattern, def) in commands {
        let id = format!("commands.{pattern}");
        let normal = crate::calls::normalize_command_pattern(&pattern)
            .ok_or_else(|| PolicyError::Class { id: id.clone(), message: "an empty command pattern".into() })?;
        let p = policy(id.clone(), &def.tier, None, def.class, def.level, None)?;
        let glob = read(&id, &normal)?;
        table.commands.push(CommandRule { pattern, glob, policy: p });
    }
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The entries the processes read one by one are the JSON's, sorted by key (a binary search
    /// finds every one).
    #[test]
    fn the_built_in_entries_are_the_json() {
        let json: Value = serde_json::from_str(HOST_TOOLS_JSON).expect("the JSON");
        for (table, entries) in [("tools", HOST_TOOL_ENTRIES), ("commands", HOST_COMMAND_ENTRIES)] {
            let members = json[table].as_object().expect("a table");
            assert_eq!(entries.len(), members.len(), "{table}");
            assert!(entries.windows(2).all(|w| w[0].0 < w[1].0), "{table} sorted");
            for (key, text) in entries {
                let entry: Value = serde_json::from_str(text).expect("an entry");
                assert_eq!(Some(&entry), members.get(*key), "{table}.{key}");
            }
        }
    }

    /// The JSON the processes read holds exactly the values of `assets/host-tools.toml`.
    #[test]
    fn the_built_in_json_is_the_toml() {
        let toml: toml::Value = toml::from_str(HOST_TOOLS).expect("assets/host-tools.toml");
        let json: Value = serde_json::from_str(HOST_TOOLS_JSON).expect("the JSON");
        assert_eq!(serde_json::to_value(&toml).expect("as JSON"), json);
        assert!(json["tools"].as_object().is_some_and(|t| t.len() > 10), "{json}");
        let _: HostToolsFile = toml::from_str(HOST_TOOLS).expect("the file's shape");
    }

    /// The built-in table's globs are read only when first matched ([`Globs::Deferred`]): every
    /// one must be a glob, or it would silently match nothing.
    #[test]
    fn the_built_in_globs_are_globs() {
        let file = host_tools_file();
        let checked = parse_tool_table(file.tools, file.commands, Globs::Checked).expect("every pattern reads");
        let table = host_table();
        let deferred = table.rules();
        assert!(!checked.globs.is_empty() && !checked.commands.is_empty());
        assert_eq!(checked.globs.len(), deferred.globs.len());
        assert_eq!(checked.commands.len(), deferred.commands.len());
        for (c, d) in checked.globs.iter().zip(&deferred.globs) {
            assert!(c.glob == d.glob && d.glob.globset().is_some(), "{}", c.pattern);
        }
        for (c, d) in checked.commands.iter().zip(&deferred.commands) {
            assert!(c.glob == d.glob && d.glob.globset().is_some(), "{}", c.pattern);
        }
    }

    /// Read entry by entry as it is used, the built-in table gives the policies the whole file
    /// read at once gives: every tool named exactly, every glob key, every command rule.
    #[test]
    fn the_built_in_table_read_as_used_is_the_whole_table() {
        let file = host_tools_file();
        let whole = parse_tool_table(file.tools, file.commands, Globs::Checked).expect("the file reads");
        let table = host_table();
        assert!(whole.tools.len() > 10, "{}", whole.tools.len());
        assert_eq!(table.tools.len(), whole.tools.len() + whole.globs.len());
        for (name, policy) in &whole.tools {
            assert_eq!(table.tool(name), Some(policy), "{name}");
        }
        assert_eq!(table.tool("no-such-tool"), None);
        for g in &whole.globs {
            assert_eq!(table.tool(&g.pattern), None, "a glob key is no tool's name: {}", g.pattern);
        }
        let rules = table.rules();
        assert!(rules.tools.is_empty());
        let pairs = |g: &[ToolGlob]| g.iter().map(|g| (g.pattern.clone(), g.policy.clone())).collect::<Vec<_>>();
        assert_eq!(pairs(&rules.globs), pairs(&whole.globs));
        let rules_of = |c: &[CommandRule]| c.iter().map(|c| (c.pattern.clone(), c.policy.clone())).collect::<Vec<_>>();
        assert_eq!(rules_of(&rules.commands), rules_of(&whole.commands));
    }

    #[test]
    fn every_tool_of_todays_hosts_has_an_entry_and_none_reaching_the_network_is_safe() {
        let p = PolicySet::builtin();
        let hosts = host_offers();
        assert_eq!(hosts.keys().collect::<Vec<_>>(), ["claude-code", "codex"]);
        for (host, offers) in &hosts {
            for (offered, hooked) in &offers.hooked {
                assert!(
                    p.tool(hooked).is_some(),
                    "{host} {}: {offered} ({hooked}) has no [tools] entry",
                    offers.version
                );
                assert!(!offers.unhooked.contains_key(offered), "{host}: {offered} is both hooked and not");
            }
            for (tool, why) in &offers.unhooked {
                assert!(!why.trim().is_empty(), "{host}: {tool} needs its reason");
            }
        }
        for tool in ["WebSearch", "WebFetch"] {
            let t = p.tool(tool).expect("entry");
            assert_ne!(t.tier, crate::tiers::ToolTier::Safe, "{tool} leaves the machine");
            assert!(t.class.as_deref().is_some_and(|c| c.starts_with("web.")), "{tool}: {:?}", t.class);
        }
    }

    // The hosted servers' presets: reads run on their own, what others see or what changes code
    // on the forge is held, under the class the principal decides by; a tool no preset names
    // stays unregistered (the conservative default).
    #[test]
    fn hosted_servers_presets_read_freely_and_hold_posts_and_pushes() {
        let p = PolicySet::builtin();
        let t = |k: &str| p.tool(k).unwrap_or_else(|| panic!("{k}: no entry"));
        for read in ["github/get_file_contents", "github/search_code", "linear/list_issues", "sentry/get_issue_details"]
        {
            assert_eq!(t(read).tier, crate::tiers::ToolTier::Safe, "{read}");
        }
        assert_eq!(t("github/add_issue_comment").class.as_deref(), Some("social.post.public"));
        assert_eq!(t("github/push_files").class.as_deref(), Some("code.push"));
        assert_eq!(t("github/merge_pull_request").tier, crate::tiers::ToolTier::Destructive);
        assert_eq!(t("linear/create_issue").tier, crate::tiers::ToolTier::Mutating);
        assert!(p.tool("github/fork_repository").is_none(), "not named: held as unknown");
        assert_eq!(crate::calls::hosted_preset("https://API.githubcopilot.com/mcp/"), Some("github"));
        assert_eq!(crate::calls::hosted_preset("https://evil.example/api.githubcopilot.com"), None);
    }
}
