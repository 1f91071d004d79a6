//! `policy.toml` as written, and merging one file into a policy set.

use super::class::{ClassDef, Threshold, class_from_def};
use super::timeouts::{TimeoutDef, timeout_rule};
use super::tool_table::{CommandDef, Globs, ToolDef, parse_tool_table};
use super::{PolicyError, PolicySet, length_bit};
use crate::packet::is_class_id;
use std::collections::BTreeMap;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

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
    /// Files and directories added to the protected set (`[protected] paths = ["~/secrets"]`):
    /// a call naming one waits for the principal. Only adds: nothing removes a built-in one.
    #[serde(default)]
    protected: Option<ProtectedDef>,
}

/// `[protected]` as written.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ProtectedDef {
    paths: Vec<String>,
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

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct PreconditionsDef {
    roots: Vec<PathBuf>,
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

impl PolicySet {
    /// Parses one `policy.toml` text (read from `path`, named in every error) on top of this set,
    /// as the directory store reads them (`PolicySet::load`, in `warrant_store::config`).
    /// `uid_of` resolves a user name of `[agents."<id>"] users` to its uid (the store looks it up
    /// in the user database; a numeric entry is a uid as is, and a name it cannot resolve is left
    /// out of [`PolicySet::agent_uids`]).
    ///
    /// # Errors
    /// [`PolicyError::Parse`] naming `path`, or the errors of an invalid class or tool.
    pub fn merge_toml(
        &mut self,
        text: &str,
        path: &Path,
        uid_of: &dyn Fn(&str) -> Option<u32>,
    ) -> Result<(), PolicyError> {
        let file: PolicyFile =
            toml::from_str(text).map_err(|e| PolicyError::Parse { path: path.to_owned(), message: e.to_string() })?;
        // Name the file in every error, not only in parse errors.
        self.merge_file(file, uid_of).map_err(|e| match e {
            PolicyError::Class { .. } => PolicyError::Parse { path: path.to_owned(), message: e.to_string() },
            other => other,
        })
    }

    /// Parses one `policy.toml` text on top of the built-in set (for tests and tools). Only numeric
    /// uids in `[agents."<id>"] users` resolve (no user database is read).
    ///
    /// # Errors
    /// As `PolicySet::load` (`warrant_store::prelude::PolicyFiles`).
    pub fn from_toml(text: &str) -> Result<Self, PolicyError> {
        let file: PolicyFile = toml::from_str(text)
            .map_err(|e| PolicyError::Parse { path: PathBuf::from("policy.toml"), message: e.to_string() })?;
        let mut set = Self::builtin();
        set.merge_file(file, &|_| None)?;
        Ok(set)
    }

    fn merge_file(&mut self, file: PolicyFile, uid_of: &dyn Fn(&str) -> Option<u32>) -> Result<(), PolicyError> {
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
        let table = parse_tool_table(file.tools, file.commands, Globs::Checked)?;
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
            if !crate::packet::is_safe_id(&agent) {
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
                // A user is a name or a numeric uid; a name is resolved by `uid_of`.
                let uids: Vec<u32> = users.iter().filter_map(|u| u.parse::<u32>().ok().or_else(|| uid_of(u))).collect();
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
            let d = crate::clock::parse_duration(&text).map_err(|e| bad(e.to_string()))?;
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
        if let Some(p) = file.protected {
            if let Some(bad) = p.paths.iter().find(|p| !(p.starts_with('/') || p == &"~" || p.starts_with("~/"))) {
                return Err(PolicyError::Class {
                    id: "protected.paths".into(),
                    message: format!("{bad:?} is neither absolute nor under ~/"),
                });
            }
            self.protected.extend(p.paths);
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
            let quorum = crate::decision::Quorum::new(def.required, def.principals).map_err(|e| bad(e.to_string()))?;
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
}
