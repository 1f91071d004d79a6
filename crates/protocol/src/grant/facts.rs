//! A call's facts: what a grant is checked against (agent, notebook, class, tool, session, the
//! one argument a pattern may match, tier, amount, recipients).

use super::{call_amount, recipient_domains};
use crate::tiers::ToolTier;
use serde_json::Value;

/// Longest argument a pattern is matched against, in bytes: a longer one has no argument.
pub const MAX_ARGUMENT: usize = 4096;

/// The argument of a call that a pattern is matched against, or `None` when it has none a
/// pattern may cover:
/// - for a command tool (`command_field` is the input field holding the command line, a string
///   or an argv such as `["bash", "-lc", LINE]`, [`crate::calls::shell_line`]): the line, with
///   ASCII spaces and tabs trimmed, when it is one simple command with no substitution,
///   redirection or subshell ([`crate::calls::split_command_line`]), and has no `$`, `` ` ``, `~`
///   or `..` (what the shell expands, or a parent directory) and no other white space than ASCII
///   spaces and tabs;
/// - for another tool: its `file_path` or `path` argument (not both), when it is an absolute path
///   with no `.` or `..` component;
///
/// and at most [`MAX_ARGUMENT`] bytes.
#[must_use]
pub fn call_argument(input: &Value, command_field: Option<&str>) -> Option<String> {
    let arg = if let Some(field) = command_field {
        let line = match input.get(field)? {
            Value::String(s) => s.clone(),
            Value::Array(a) => {
                let words: Option<Vec<&str>> = a.iter().map(Value::as_str).collect();
                crate::calls::shell_line(&words?)?.to_owned()
            }
            _ => return None,
        };
        let line = line.trim_matches([' ', '\t']);
        let odd_space = line.chars().any(|c| c.is_whitespace() && c != ' ' && c != '\t');
        if odd_space || line.contains(['$', '`', '~']) || line.contains("..") {
            return None;
        }
        let parts = crate::calls::split_command_line(line);
        match parts.as_slice() {
            [one] if !one.complex && one.words.is_some() => line.to_owned(),
            _ => return None,
        }
    } else {
        let paths: Vec<&str> = ["file_path", "path"].iter().filter_map(|k| input.get(*k)?.as_str()).collect();
        let [path] = paths.as_slice() else { return None };
        let clean = path.starts_with('/') && !path.split('/').any(|c| c == "." || c == "..");
        if !clean {
            return None;
        }
        (*path).to_owned()
    };
    (arg.len() <= MAX_ARGUMENT).then_some(arg)
}

/// What a grant is matched against: one call packet's facts.
#[derive(Debug, Clone, PartialEq)]
pub struct CallFacts {
    /// The agent.
    pub agent: String,
    /// The notebook (workspace) id.
    pub notebook: String,
    /// The canonical action class.
    pub action_class: String,
    /// The tool key.
    pub tool: String,
    /// The host's session id (the gateway's connection), if any.
    pub session: Option<String>,
    /// The argument a pattern is matched against ([`call_argument`]).
    pub argument: Option<String>,
    /// The call's tool tier (`None`: unregistered, treated as destructive).
    pub tier: Option<ToolTier>,
    /// The amount the call moves, from the field the tool table declares ([`call_amount`]).
    pub amount: Option<f64>,
    /// The domains of the call's recipients, from the fields the tool table declares
    /// ([`recipient_domains`]).
    pub recipient_domains: Option<Vec<String>>,
    /// For a command tool: the directory the call runs in (`proposed_action.workdir`, else
    /// `cwd`), when the host names one; `None` for other tools.
    pub workdir: Option<String>,
}

impl CallFacts {
    /// The facts of a call packet ([`crate::calls::call_packet`]'s form), classified with
    /// `policies` as a hook or the gateway would classify the call now; `None` for a packet that
    /// is not a tool call, or names no notebook.
    #[must_use]
    pub fn of_packet(p: &crate::packet::Packet, policies: &crate::graduation::PolicySet) -> Option<Self> {
        let g = crate::verdict::Governance::of_packet(p)?;
        let tool = g.tool.clone()?;
        let (input, annotations) = crate::calls::call_of_packet(p.proposed_action(), &tool)?;
        let entry = policies.tool(&tool);
        let command_field = policies.command_field(&tool);
        Some(Self {
            amount: entry.and_then(|t| t.amount.as_deref()).and_then(|f| call_amount(input, f)),
            recipient_domains: entry
                .filter(|t| !t.recipients.is_empty())
                .and_then(|t| recipient_domains(input, &t.recipients)),
            workdir: command_field.and_then(|_| {
                let at = |k: &str| p.proposed_action().get(k).and_then(Value::as_str);
                at("workdir").or_else(|| at("cwd")).map(str::to_owned)
            }),
            agent: p.agent.clone(),
            notebook: g.notebook.clone()?,
            action_class: policies.normalize(&p.action_class),
            argument: call_argument(input, command_field),
            tier: crate::calls::classify_proposed(policies, p.proposed_action(), &tool)
                .map_or_else(|| crate::calls::classify(policies, &tool, input, annotations).tier, |c| c.tier),
            session: p.proposed_action().get("session").and_then(Value::as_str).map(str::to_owned),
            tool,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_one_simple_command_or_a_clean_absolute_path_is_an_argument() {
        let cmd = |c: &str| call_argument(&json!({"command": c}), Some("command"));
        assert_eq!(cmd("  git push origin feature/x "), Some("git push origin feature/x".into()));
        assert_eq!(cmd("git push origin feature/x; rm -rf ~"), None);
        assert_eq!(cmd("git push origin $(whoami)"), None);
        assert_eq!(cmd("git push origin x > /tmp/out"), None);
        assert_eq!(cmd("git push origin x\nrm -rf ~"), None);
        assert_eq!(cmd("git push && rm -rf ~"), None);
        assert_eq!(cmd("rm -rf ~"), None, "the shell expands ~");
        assert_eq!(cmd("rm -rf $HOME"), None);
        assert_eq!(cmd("git checkout -- src/.."), None);
        assert_eq!(cmd("\u{a0}make deploy"), None, "bash does not split on a no-break space");
        assert_eq!(cmd(&format!("echo {}", "a".repeat(MAX_ARGUMENT))), None, "too long");
        let argv = |v: Value| call_argument(&json!({"command": v}), Some("command"));
        assert_eq!(argv(json!(["bash", "-lc", "git push origin feature/x"])), Some("git push origin feature/x".into()));
        assert_eq!(
            argv(json!(["/bin/sh", "-c", "git push origin feature/x"])),
            Some("git push origin feature/x".into())
        );
        assert_eq!(argv(json!(["./bash", "-c", "git push origin feature/x"])), None, "the agent's own bash");
        assert_eq!(argv(json!(["bash", "--norc", "git push origin feature/x"])), None, "a script file");
        let path = |p: &str| call_argument(&json!({"file_path": p}), None);
        assert_eq!(path("/work/notes/a.md"), Some("/work/notes/a.md".into()));
        assert_eq!(path("/work/notes/../secrets"), None);
        assert_eq!(path("notes/a.md"), None);
        assert_eq!(call_argument(&json!({"content": "x"}), None), None);
        let both = json!({"path": "/etc/cron.d/x", "file_path": "/work/notes/a.md"});
        assert_eq!(call_argument(&both, None), None, "two paths: which one the tool writes only it knows");
    }
}
