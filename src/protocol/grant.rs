//! Scoped grants (issue 18): the principal's signed permission for more than one call.
//!
//! Approving a packet answers that one call (`once`). A grant answers later calls too: the same
//! agent's calls of the same tool and action class in the same notebook (workspace), **for this
//! session** (the host's session id, or the gateway's connection), **until** a time, or **for a
//! pattern** of the tool's argument (`Bash(git push origin feature/*)`). A grant is a canonical
//! document signed with the principal's Ed25519 key by the rule of decisions and controls
//! (Lodestar §A7.4), carried in an OpenTrustGraph record as `metadata.warrant_grant`; a
//! revocation is another such record. The live grants are a pure fold ([`GrantBook::apply`]) over
//! the grant records that passed every check, so the chain is the only source of truth.
//!
//! Never broader than asked:
//! - a grant covers only its agent, notebook, action class and tool;
//! - it never covers a call the composed verdict blocks or keeps for a person alone
//!   (`blocked`, `human_only`): the caller consults grants only for `review_required`,
//!   `deferred` and constrained holds (`govern`);
//! - it covers a `destructive`-tier call only when the principal typed its pattern a second time
//!   (`covers_destructive`); session and time grants never do;
//! - a pattern's `*` never crosses a `/`, a `:` or white space, nor begins a word with `-` (`**`
//!   matches anything), and a command line is covered only when it is one simple command with no
//!   substitution, redirection or subshell, and nothing the shell expands (`$`, `` ` ``, `~`) or
//!   `..`; a path argument only when it is the call's one absolute path with no `.` or `..`.
//!
//! Document shape (`domain` `warrant.grant/v1`):
//!
//! ```json
//! {"domain": "warrant.grant/v1", "grant": "issue", "grant_id": "grant-0193…", "scope": "pattern",
//!  "agent": "claude-code", "notebook": "shop-1a2b3c", "action_class": "code.push", "tool": "Bash",
//!  "pattern": "Bash(git push origin feature/*)", "expires_at": "2026-11-26T09:00:00Z",
//!  "max_uses": 5, "covers_destructive": false, "packet_id": "cc-toolu_01",
//!  "principal": "alice", "key": "SHA256:…", "decided_at": "2026-11-25T09:00:00Z", "reason": "…"}
//! ```
//!
//! `session` is present for `scope` `session`; `pattern` for `pattern`; `expires_at` and
//! `max_uses` when set. A revocation is `{"domain", "grant": "revoke", "grant_id", "agent",
//! "principal", "key", "decided_at", "reason"}`.

use crate::protocol::chain;
use crate::protocol::decision::{SignedDecision, sign_document};
use crate::protocol::keys::{PinnedKeys, Principal};
use crate::protocol::tiers::ToolTier;
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// The domain string of a signed grant or revocation document.
pub const GRANT_DOMAIN: &str = "warrant.grant/v1";
/// The chain record `action` of a grant.
pub const GRANT_ACTION: &str = "warrant.grant";
/// The chain record `action` of a revocation.
pub const REVOKE_ACTION: &str = "warrant.grant.revoke";
/// The most uses a bounded grant may have: each use is claimed by trying the uses in turn.
pub const MAX_USES: u64 = 1000;
/// How long a session grant lasts when the principal names no end: hosts do not announce the
/// end of a session, so a session grant ends on its own after a working day.
pub const SESSION_DEFAULT_SECONDS: i64 = 24 * 3600;

/// What a grant covers beyond its agent, notebook, class and tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Calls in one session of the host (or one gateway connection).
    Session(String),
    /// Every call until `expires_at` (which a grant of this scope always has).
    Until,
    /// Calls whose argument matches a pattern ([`ToolPattern`]).
    Pattern(ToolPattern),
    /// Calls within constraints that narrow the class ([`Narrowing`]: a maximum amount, the
    /// domains every recipient must be at).
    Class(Narrowing),
}

impl Scope {
    /// The wire spelling: `session`, `until`, `pattern`, `class`.
    #[must_use]
    pub fn as_str(&self) -> &'static str {
        match self {
            Scope::Session(_) => "session",
            Scope::Until => "until",
            Scope::Pattern(_) => "pattern",
            Scope::Class(_) => "class",
        }
    }
}

/// The constraints of a class grant (`--scope class:max_amount=500;domain=example.com`), in
/// Trust Graduation's vocabulary: they only narrow what a call may do. Checked on the call's
/// input through the fields the principal's tool table declares (`[tools."<key>"] amount =
/// "amount"`, `recipients = ["to", "cc"]`); a call whose fields are missing or unreadable is not
/// covered. Signed as `"constraints": {"max_amount": 500, "domain_allowlist": ["example.com"]}`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Narrowing {
    /// The largest amount a covered call may move (a whole number, in the tool's own unit).
    pub max_amount: Option<u64>,
    /// The domains every recipient of a covered call must be at (lower case, exact), sorted.
    pub domain_allowlist: Vec<String>,
}

impl Narrowing {
    /// Parses `max_amount=500`, `domain=example.com,example.org`, or both joined by `;`.
    ///
    /// # Errors
    /// A sentence saying what is accepted.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut n = Narrowing::default();
        for part in text.split(';').map(str::trim).filter(|p| !p.is_empty()) {
            match part.split_once('=').map(|(k, v)| (k.trim(), v.trim())) {
                Some(("max_amount", v)) if n.max_amount.is_none() => {
                    let amount = v.parse::<u64>().ok().filter(|a| *a <= MAX_SAFE_INTEGER);
                    n.max_amount = Some(amount.ok_or_else(|| format!("max_amount {v:?} is not a whole number"))?);
                }
                Some(("domain", v)) if n.domain_allowlist.is_empty() => {
                    for d in v.split(',').map(str::trim) {
                        if !is_domain(d) {
                            return Err(format!("{d:?} is not a domain (like example.com)"));
                        }
                        n.domain_allowlist.push(d.to_ascii_lowercase());
                    }
                    n.domain_allowlist.sort_unstable();
                    n.domain_allowlist.dedup();
                }
                _ => {
                    return Err(format!(
                        "{part:?}: a class grant's constraints are max_amount=N and domain=D[,D…], each once, joined by `;`"
                    ));
                }
            }
        }
        if n.max_amount.is_none() && n.domain_allowlist.is_empty() {
            return Err("a class grant needs a constraint: max_amount=N or domain=D (or both)".into());
        }
        Ok(n)
    }

    /// The signed form: `{"max_amount": N, "domain_allowlist": [...]}`, each when set.
    #[must_use]
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        if let Some(a) = self.max_amount {
            m.insert("max_amount".into(), json!(a));
        }
        if !self.domain_allowlist.is_empty() {
            m.insert("domain_allowlist".into(), json!(self.domain_allowlist));
        }
        Value::Object(m)
    }

    /// Reads the signed form back; `None` unless it is exactly what [`Narrowing::to_json`]
    /// writes for valid constraints.
    #[must_use]
    pub fn from_json(v: &Value) -> Option<Self> {
        let m = v.as_object()?;
        if m.keys().any(|k| k != "max_amount" && k != "domain_allowlist") {
            return None;
        }
        let max_amount = match m.get("max_amount") {
            None => None,
            Some(a) => Some(a.as_u64().filter(|a| *a <= MAX_SAFE_INTEGER)?),
        };
        let domain_allowlist: Vec<String> = match m.get("domain_allowlist") {
            None => Vec::new(),
            Some(d) => d
                .as_array()?
                .iter()
                .map(|x| x.as_str().filter(|s| is_domain(s)).map(str::to_owned))
                .collect::<Option<_>>()?,
        };
        let sorted = domain_allowlist.windows(2).all(|w| w[0] < w[1])
            && domain_allowlist.iter().all(|d| *d == d.to_ascii_lowercase());
        let n = Narrowing { max_amount, domain_allowlist };
        (sorted && (n.max_amount.is_some() || !n.domain_allowlist.is_empty())).then_some(n)
    }

    /// Whether a call with these facts is within the constraints.
    #[must_use]
    pub fn admits(&self, facts: &CallFacts) -> bool {
        let amount_ok = self.max_amount.is_none_or(|max| facts.amount.is_some_and(|a| a <= max as f64));
        let domains_ok = self.domain_allowlist.is_empty()
            || facts
                .recipient_domains
                .as_ref()
                .is_some_and(|ds| !ds.is_empty() && ds.iter().all(|d| self.domain_allowlist.binary_search(d).is_ok()));
        amount_ok && domains_ok
    }

    /// `amount at most 500 and every recipient at example.com`.
    #[must_use]
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(a) = self.max_amount {
            parts.push(format!("amount at most {a}"));
        }
        if !self.domain_allowlist.is_empty() {
            parts.push(format!("every recipient at {}", self.domain_allowlist.join(" or ")));
        }
        parts.join(" and ")
    }
}

impl std::fmt::Display for Narrowing {
    /// The form [`Narrowing::parse`] reads: `max_amount=500;domain=example.com`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = Vec::new();
        if let Some(a) = self.max_amount {
            parts.push(format!("max_amount={a}"));
        }
        if !self.domain_allowlist.is_empty() {
            parts.push(format!("domain={}", self.domain_allowlist.join(",")));
        }
        f.write_str(&parts.join(";"))
    }
}

/// The largest whole number JSON carries exactly (2^53 − 1): a larger amount is refused.
const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// A DNS domain as written in an address: labels of ASCII letters, digits and `-` (not at either
/// end), joined by dots, at least two labels, at most 253 bytes.
fn is_domain(d: &str) -> bool {
    let labels: Vec<&str> = d.split('.').collect();
    d.len() <= 253
        && labels.len() >= 2
        && labels.iter().all(|l| {
            (1..=63).contains(&l.len())
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        })
}

/// The domains of the recipients in a call's `input`, read from the `fields` the tool table
/// declares: each a string (one address, or several separated by commas) or an array of such
/// strings; an address is `local@domain`, or `Name <local@domain>`, with one `@`. `None` when a
/// value is of another type or an address cannot be read (the call is not covered), or no field
/// holds any recipient.
#[must_use]
pub fn recipient_domains(input: &Value, fields: &[String]) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut read = |s: &str| -> Option<()> {
        if s.chars().any(char::is_control) {
            return None;
        }
        for addr in s.split(',').map(str::trim).filter(|a| !a.is_empty()) {
            // `Name <local@domain>`: one pair of angle brackets closing the string, and a display
            // name with no address, quote or bracket of its own (mail parsers disagree on which
            // address `a@evil <b@ok>` names).
            let addr = match (addr.find('<'), addr.strip_suffix('>')) {
                (Some(open), Some(inner)) => {
                    let (name, inside) = (&inner[..open], &inner[open + 1..]);
                    if name.contains(['@', '"', '<', '>', '\\']) || inside.contains(['<', '>']) {
                        return None;
                    }
                    inside
                }
                (None, None) => addr,
                _ => return None,
            };
            let (local, domain) = addr.split_once('@')?;
            if local.is_empty()
                || domain.contains('@')
                || !is_domain(domain)
                || local.contains(['"', '<', '>', '(', ')', ',', ';', ':', '\\', '[', ']'])
                || local.chars().any(char::is_whitespace)
            {
                return None;
            }
            out.push(domain.to_ascii_lowercase());
        }
        Some(())
    };
    for f in fields {
        match input.get(f) {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) => read(s)?,
            Some(Value::Array(a)) => {
                for v in a {
                    read(v.as_str()?)?;
                }
            }
            Some(_) => return None,
        }
    }
    out.sort_unstable();
    out.dedup();
    (!out.is_empty()).then_some(out)
}

/// The amount in a call's `input` field `field`: a finite, non-negative JSON number.
#[must_use]
pub fn call_amount(input: &Value, field: &str) -> Option<f64> {
    input.get(field)?.as_f64().filter(|a| a.is_finite() && *a >= 0.0)
}

/// A tool pattern: `Tool` (every call of the tool) or `Tool(GLOB)`, the glob over the call's
/// argument ([`call_argument`], [`glob_matches`]): `*` is any run of characters but `/`, `:` and
/// white space that does not begin a word with `-`, `?` one such character, `**` any run at all;
/// everything else is literal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolPattern {
    /// The tool key, exactly.
    pub tool: String,
    /// The argument glob, if any.
    pub argument: Option<String>,
}

impl ToolPattern {
    /// Parses `Tool` or `Tool(GLOB)`.
    ///
    /// # Errors
    /// A sentence: an empty or unbalanced pattern, or a tool that is not a tool key.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let (tool, argument) = match text.find('(') {
            None => (text, None),
            Some(open) => {
                let Some(inner) = text[open + 1..].strip_suffix(')') else {
                    return Err(format!("pattern {text:?} opens `(` but does not end with `)`"));
                };
                if inner.is_empty() {
                    return Err(format!("pattern {text:?} has an empty argument: write `{}` alone", &text[..open]));
                }
                (&text[..open], Some(inner.to_owned()))
            }
        };
        if !crate::protocol::calls::is_tool_key(tool) {
            return Err(format!("{tool:?} is not a tool name (write `Tool` or `Tool(argument glob)`)"));
        }
        Ok(Self { tool: tool.to_owned(), argument })
    }

    /// Whether a call of `tool` whose argument is `argument` matches.
    #[must_use]
    pub fn matches(&self, tool: &str, argument: Option<&str>) -> bool {
        if tool != self.tool {
            return false;
        }
        match (&self.argument, argument) {
            (None, _) => true,
            (Some(glob), Some(arg)) => glob_matches(glob, arg),
            (Some(_), None) => false,
        }
    }
}

impl std::fmt::Display for ToolPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.argument {
            Some(a) => write!(f, "{}({a})", self.tool),
            None => f.write_str(&self.tool),
        }
    }
}

/// Matches `text` against `glob` ([`ToolPattern`]'s rules): `*` is any run of characters but
/// `/`, `:` and white space, `?` one such character, and neither begins a word with `-` (an
/// option); `**` is any run at all. Dynamic programming over (pattern, text) positions: O(m·n)
/// time and O(n) space whatever the pattern, so no argument can make a hook outlast its host's
/// timeout.
#[must_use]
pub fn glob_matches(glob: &str, text: &str) -> bool {
    let p: Vec<char> = glob.chars().collect();
    let t: Vec<char> = text.chars().collect();
    // A `*` or `?` may take `t[j]`: not `/`, `:` or white space, and not a `-` that begins a word.
    let narrow = |j: usize| {
        let c = t[j];
        let word_start = j == 0 || t[j - 1].is_whitespace();
        c != '/' && c != ':' && !c.is_whitespace() && !(c == '-' && word_start)
    };
    // `row[j]`: the pattern so far matches `t[..j]`.
    let mut row = vec![false; t.len() + 1];
    row[0] = true;
    let mut i = 0;
    while i < p.len() {
        let mut next = vec![false; t.len() + 1];
        match p[i] {
            '*' if p.get(i + 1) == Some(&'*') => {
                let mut any = false;
                for j in 0..=t.len() {
                    any |= row[j];
                    next[j] = any;
                }
                i += 2;
            }
            '*' => {
                for j in 0..=t.len() {
                    next[j] = row[j] || (j > 0 && next[j - 1] && narrow(j - 1));
                }
                i += 1;
            }
            '?' => {
                for j in 1..=t.len() {
                    next[j] = row[j - 1] && narrow(j - 1);
                }
                i += 1;
            }
            c => {
                for j in 1..=t.len() {
                    next[j] = row[j - 1] && t[j - 1] == c;
                }
                i += 1;
            }
        }
        row = next;
    }
    row[t.len()]
}

/// Longest argument a pattern is matched against, in bytes: a longer one has no argument.
pub const MAX_ARGUMENT: usize = 4096;

/// The argument of a call that a pattern is matched against, or `None` when it has none a
/// pattern may cover:
/// - for a command tool (`command_field` is the input field holding the command line, a string
///   or an argv such as `["bash", "-lc", LINE]`, [`crate::protocol::calls::shell_line`]): the line, with
///   ASCII spaces and tabs trimmed, when it is one simple command with no substitution,
///   redirection or subshell ([`crate::protocol::calls::split_command_line`]), and has no `$`, `` ` ``, `~`
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
                crate::protocol::calls::shell_line(&words?)?.to_owned()
            }
            _ => return None,
        };
        let line = line.trim_matches([' ', '\t']);
        let odd_space = line.chars().any(|c| c.is_whitespace() && c != ' ' && c != '\t');
        if odd_space || line.contains(['$', '`', '~']) || line.contains("..") {
            return None;
        }
        let parts = crate::protocol::calls::split_command_line(line);
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
    /// The facts of a call packet ([`crate::protocol::calls::call_packet`]'s form), classified with
    /// `policies` as a hook or the gateway would classify the call now; `None` for a packet that
    /// is not a tool call, or names no notebook.
    #[must_use]
    pub fn of_packet(
        p: &crate::protocol::packet::Packet,
        policies: &crate::protocol::graduation::PolicySet,
    ) -> Option<Self> {
        let g = crate::protocol::verdict::Governance::of_packet(p)?;
        let tool = g.tool.clone()?;
        let (input, annotations) = crate::protocol::calls::call_of_packet(&p.proposed_action, &tool)?;
        let entry = policies.tool(&tool);
        let command_field = entry.and_then(|t| t.command.as_deref()).or_else(|| policies.host_command_field(&tool));
        Some(Self {
            amount: entry.and_then(|t| t.amount.as_deref()).and_then(|f| call_amount(input, f)),
            recipient_domains: entry
                .filter(|t| !t.recipients.is_empty())
                .and_then(|t| recipient_domains(input, &t.recipients)),
            workdir: command_field.and_then(|_| {
                let at = |k: &str| p.proposed_action.get(k).and_then(Value::as_str);
                at("workdir").or_else(|| at("cwd")).map(str::to_owned)
            }),
            agent: p.agent.clone(),
            notebook: g.notebook.clone()?,
            action_class: policies.normalize(&p.action_class),
            argument: call_argument(input, command_field),
            tier: crate::protocol::calls::classify(policies, &tool, input, annotations).tier,
            session: p.proposed_action.get("session").and_then(Value::as_str).map(str::to_owned),
            tool,
        })
    }
}

/// One live grant: the signed document's fields.
#[derive(Debug, Clone, PartialEq)]
pub struct Grant {
    /// Its id (a safe id, `grant-<uuid v7>`).
    pub grant_id: String,
    /// What it covers.
    pub scope: Scope,
    /// The agent it is for.
    pub agent: String,
    /// The notebook it is for.
    pub notebook: String,
    /// The canonical action class.
    pub action_class: String,
    /// The tool key.
    pub tool: String,
    /// When it ends (RFC 3339), if it does.
    pub expires_at: Option<String>,
    /// `expires_at` in unix seconds (`None`: no end).
    pub expires_unix: Option<f64>,
    /// How many calls it may allow in all, if bounded (each use is claimed atomically).
    pub max_uses: Option<u64>,
    /// The principal typed the pattern twice: it may cover `destructive`-tier calls.
    pub covers_destructive: bool,
    /// For a command tool: the directory the approved call ran in, the only one whose calls it
    /// covers (`None`: any, for a tool that is not a command tool or a host that names none).
    pub workdir: Option<String>,
    /// The packet approved with it.
    pub packet_id: String,
    /// Who signed it.
    pub principal: String,
    /// The signing key's fingerprint.
    pub key: String,
    /// When it was signed (RFC 3339).
    pub decided_at: String,
    /// Why, if given.
    pub reason: Option<String>,
    /// The record's 1-based `chain_index` (0 when not known).
    pub chain_index: u64,
}

impl Grant {
    /// Whether it covers a call with `facts` at `now` (unix seconds): same agent, notebook,
    /// class and tool; in its session, before its end, matching its pattern; a destructive (or
    /// unregistered) tier only when `covers_destructive`. Uses are counted by the store, not here.
    #[must_use]
    pub fn covers(&self, facts: &CallFacts, now: f64) -> bool {
        let same = facts.agent == self.agent
            && facts.notebook == self.notebook
            && facts.action_class == self.action_class
            && facts.tool == self.tool;
        let live = self.expires_unix.is_none_or(|t| now < t);
        let tier_ok = self.covers_destructive || facts.tier.is_some_and(|t| t < ToolTier::Destructive);
        let here = self.workdir.is_none() || self.workdir == facts.workdir;
        let scoped = match &self.scope {
            Scope::Session(s) => facts.session.as_deref() == Some(s.as_str()),
            Scope::Until => true,
            Scope::Pattern(p) => p.matches(&facts.tool, facts.argument.as_deref()),
            Scope::Class(n) => n.admits(facts),
        };
        same && live && tier_ok && scoped && here
    }

    /// What it covers, in words (the console's dialog and Grants view, `warrant grants list`).
    #[must_use]
    pub fn describe(&self) -> String {
        let whom = format!("{}'s `{}` calls ({}) in {}", self.agent, self.tool, self.action_class, self.notebook);
        let what = match &self.scope {
            Scope::Session(s) => format!("{whom}, in session {s}"),
            Scope::Until => whom,
            Scope::Pattern(p) => match &p.argument {
                Some(a) => format!("{whom} whose argument matches `{a}`"),
                None => format!("every one of {whom}"),
            },
            Scope::Class(n) => format!("{whom} with {}", n.describe()),
        };
        let until = self.expires_at.as_deref().map_or_else(|| ", until revoked".to_owned(), |t| format!(", until {t}"));
        let uses =
            self.max_uses.map(|n| format!(", at most {n} call{}", if n == 1 { "" } else { "s" })).unwrap_or_default();
        let destructive = if self.covers_destructive { ", destructive ones included" } else { "" };
        let here = self.workdir.as_deref().map(|d| format!(", run in {d}")).unwrap_or_default();
        format!("{what}{here}{until}{uses}{destructive}")
    }

    /// Reads a grant document (its signature is checked by [`check_record_signature`]).
    ///
    /// # Errors
    /// A sentence naming the field that is missing or malformed.
    pub fn from_document(doc: &Value) -> Result<Self, String> {
        let s = |k: &str| doc.get(k).and_then(Value::as_str).map(str::to_owned);
        let need = |k: &str| s(k).filter(|v| !v.is_empty()).ok_or_else(|| format!("warrant_grant has no `{k}`"));
        if doc.get("grant").and_then(Value::as_str) != Some("issue") {
            return Err("warrant_grant is not an issue".into());
        }
        let grant_id = need("grant_id")?;
        if !crate::protocol::packet::is_safe_id(&grant_id) {
            return Err(format!("grant id {grant_id:?} is not a safe id"));
        }
        let tool = need("tool")?;
        let scope = match need("scope")?.as_str() {
            "session" => Scope::Session(need("session")?),
            "until" => Scope::Until,
            "pattern" => {
                let p = ToolPattern::parse(&need("pattern")?)?;
                if p.tool != tool {
                    return Err(format!("the pattern's tool {:?} is not the grant's {tool:?}", p.tool));
                }
                Scope::Pattern(p)
            }
            "class" => Scope::Class(
                doc.get("constraints")
                    .and_then(Narrowing::from_json)
                    .ok_or("a grant of scope `class` has no valid `constraints`")?,
            ),
            other => return Err(format!("unknown grant scope {other:?}")),
        };
        let expires_at = s("expires_at");
        let expires_unix = match &expires_at {
            Some(t) => {
                Some(crate::protocol::clock::unix_seconds(t).ok_or_else(|| format!("expires_at {t:?} is not a time"))?)
            }
            None => None,
        };
        if matches!(scope, Scope::Until) && expires_at.is_none() {
            return Err("a grant of scope `until` has no `expires_at`".into());
        }
        let max_uses = match doc.get("max_uses") {
            None => None,
            Some(v) => Some(v.as_u64().filter(|n| *n >= 1).ok_or("max_uses must be a whole number ≥ 1")?),
        };
        Ok(Self {
            grant_id,
            scope,
            agent: need("agent")?,
            notebook: need("notebook")?,
            action_class: need("action_class")?,
            tool,
            expires_at,
            expires_unix,
            max_uses,
            covers_destructive: doc.get("covers_destructive").and_then(Value::as_bool).unwrap_or(false),
            workdir: match doc.get("workdir") {
                None => None,
                Some(w) => {
                    Some(w.as_str().filter(|w| w.starts_with('/')).ok_or("workdir is not an absolute path")?.to_owned())
                }
            },
            packet_id: need("packet_id")?,
            principal: need("principal")?,
            key: need("key")?,
            decided_at: need("decided_at")?,
            reason: s("reason"),
            chain_index: 0,
        })
    }
}

/// The call packets among `packets` that `grant` would have covered, its end and uses aside
/// (the preview before signing a grant).
pub fn past_calls<'a>(
    grant: &Grant,
    packets: impl Iterator<Item = &'a crate::protocol::packet::Packet>,
    policies: &crate::protocol::graduation::PolicySet,
) -> Vec<&'a crate::protocol::packet::Packet> {
    packets
        .filter(|p| p.id != grant.packet_id)
        .filter(|p| CallFacts::of_packet(p, policies).is_some_and(|f| grant.covers(&f, f64::NEG_INFINITY)))
        .collect()
}

/// A grant before signing: what the principal asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct GrantInput {
    /// Its id (a safe id; [`new_grant_id`]).
    pub grant_id: String,
    /// What it covers.
    pub scope: Scope,
    /// The agent, notebook, canonical class and tool of the approved packet.
    pub agent: String,
    /// The notebook.
    pub notebook: String,
    /// The canonical action class.
    pub action_class: String,
    /// The tool key.
    pub tool: String,
    /// When it ends (RFC 3339), if it does.
    pub expires_at: Option<String>,
    /// At most this many calls, if bounded.
    pub max_uses: Option<u64>,
    /// The principal typed the pattern twice.
    pub covers_destructive: bool,
    /// For a command tool: the directory the approved call ran in ([`Grant::workdir`]).
    pub workdir: Option<String>,
    /// The packet approved with it.
    pub packet_id: String,
    /// Why, if given.
    pub reason: Option<String>,
    /// When (RFC 3339 UTC).
    pub decided_at: String,
}

/// What the principal asked for, beyond the scope: an end, a bound on uses, the pattern typed a
/// second time (to cover destructive calls), a reason.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GrantOptions {
    /// `--until` for a session or pattern grant (RFC 3339 UTC; [`parse_until`]).
    pub until: Option<String>,
    /// `--uses N`: at most N calls.
    pub max_uses: Option<u64>,
    /// `--confirm-pattern`: the pattern typed again.
    pub confirm_pattern: Option<String>,
    /// Why.
    pub reason: Option<String>,
}

/// The grant a principal asks for when approving `packet` with `scope`, checked against the
/// rules that keep a grant no broader than asked (module docs): `None` for [`ScopeRequest::Once`].
/// `decided_at` is RFC 3339 UTC; a session grant with no `until` ends
/// [`SESSION_DEFAULT_SECONDS`] after it.
///
/// # Errors
/// A sentence the principal can act on: the packet is not a tool call, its class is human-only
/// or its verdict `blocked`/`human_only`, the call is destructive and the pattern was not typed
/// again (or the scope is not a pattern), the pattern does not cover the approved call itself,
/// the call has no session, `--uses 0`.
pub fn prepare(
    packet: &crate::protocol::packet::Packet,
    policies: &crate::protocol::graduation::PolicySet,
    scope: &ScopeRequest,
    options: &GrantOptions,
    decided_at: &str,
) -> Result<Option<GrantInput>, String> {
    use crate::protocol::packet::DecisionState;
    if *scope == ScopeRequest::Once {
        return Ok(None);
    }
    let id = &packet.id;
    let facts = CallFacts::of_packet(packet, policies)
        .ok_or_else(|| format!("{id} is not a tool call from a hook or the gateway: only `once` applies to it"))?;
    if policies.policy(&facts.action_class).is_human_only() {
        return Err(format!("`{}` is human-only: no grant ever covers it (approve once)", facts.action_class));
    }
    if let Some(q) = policies.cosign(&facts.action_class) {
        return Err(format!(
            "`{}` needs the approval of {} (policy.toml [cosign]): no grant covers it",
            facts.action_class,
            q.describe()
        ));
    }
    if let Some(state @ (DecisionState::Blocked | DecisionState::HumanOnly)) = packet.state {
        return Err(format!("{id} is {}: no grant covers it", state.as_str()));
    }
    if options.max_uses.is_some_and(|n| n == 0 || n > MAX_USES) {
        return Err(format!("--uses must be from 1 to {MAX_USES} (a grant for more calls needs no bound)"));
    }
    let destructive = facts.tier.is_none_or(|t| t >= ToolTier::Destructive);
    let (scope, expires_at) = match scope {
        ScopeRequest::Once => return Ok(None),
        ScopeRequest::Session => {
            let s =
                facts.session.clone().ok_or_else(|| format!("{id} names no session: grant `until:` or `pattern:`"))?;
            let end = match &options.until {
                Some(t) => t.clone(),
                None => crate::protocol::clock::parse_rfc3339(decided_at)
                    .and_then(|t| t.checked_add(time::Duration::seconds(SESSION_DEFAULT_SECONDS)))
                    .map(crate::protocol::clock::format_rfc3339)
                    .ok_or_else(|| format!("{decided_at:?} is not a time: a session grant needs an end"))?,
            };
            (Scope::Session(s), Some(end))
        }
        ScopeRequest::Until(t) => (Scope::Until, Some(t.clone())),
        ScopeRequest::Pattern(p) => {
            if p.tool != facts.tool {
                return Err(format!("the pattern names `{}`, but {id} calls `{}`", p.tool, facts.tool));
            }
            if !p.matches(&facts.tool, facts.argument.as_deref()) {
                return Err(format!(
                    "the pattern `{p}` does not cover {id} itself (its argument: {})",
                    facts
                        .argument
                        .as_deref()
                        .map_or_else(|| "none a pattern can match".to_owned(), |a| format!("`{a}`"))
                ));
            }
            (Scope::Pattern(p.clone()), options.until.clone())
        }
        ScopeRequest::Class(n) => {
            let entry = policies.tool(&facts.tool);
            if n.max_amount.is_some() && entry.and_then(|t| t.amount.as_ref()).is_none() {
                return Err(format!(
                    "`{}` declares no `amount` field in policy.toml [tools]: a max_amount cannot be checked on its calls",
                    facts.tool
                ));
            }
            if !n.domain_allowlist.is_empty() && entry.is_none_or(|t| t.recipients.is_empty()) {
                return Err(format!(
                    "`{}` declares no `recipients` fields in policy.toml [tools]: a domain cannot be checked on its calls",
                    facts.tool
                ));
            }
            if !n.admits(&facts) {
                return Err(format!("the constraints `{n}` do not cover {id} itself: {}", facts_in_words(&facts)));
            }
            (Scope::Class(n.clone()), options.until.clone())
        }
    };
    let covers_destructive = match (&scope, destructive) {
        (_, false) => false,
        (Scope::Pattern(p), true) => {
            if options.confirm_pattern.as_deref().map(str::trim) != Some(p.to_string().as_str()) {
                return Err(format!(
                    "{id} is a destructive call: a grant covers such calls only for a pattern typed twice (--confirm-pattern '{p}')"
                ));
            }
            true
        }
        (Scope::Class(n), true) => {
            if options.confirm_pattern.as_deref().map(str::trim) != Some(n.to_string().as_str()) {
                return Err(format!(
                    "{id} is a destructive call: a grant covers such calls only for constraints typed twice (--confirm-pattern '{n}')"
                ));
            }
            true
        }
        (_, true) => {
            return Err(format!(
                "{id} is a destructive call: session and time grants never cover such calls; grant a pattern and type it twice"
            ));
        }
    };
    Ok(Some(GrantInput {
        grant_id: new_grant_id(),
        scope,
        agent: facts.agent,
        notebook: facts.notebook,
        action_class: facts.action_class,
        tool: facts.tool,
        expires_at,
        max_uses: options.max_uses,
        covers_destructive,
        workdir: facts.workdir,
        packet_id: id.clone(),
        reason: options.reason.clone(),
        decided_at: decided_at.to_owned(),
    }))
}

/// A call's amount and recipients' domains in words (why constraints do not cover it).
fn facts_in_words(facts: &CallFacts) -> String {
    let amount = facts.amount.map_or_else(|| "no amount warrant can read".to_owned(), |a| format!("amount {a}"));
    let domains = facts
        .recipient_domains
        .as_ref()
        .map_or_else(|| "no recipients warrant can read".to_owned(), |d| format!("recipients at {}", d.join(", ")));
    format!("{amount}, {domains}")
}

/// A fresh grant id: `grant-<uuid v7>`.
#[must_use]
pub fn new_grant_id() -> String {
    format!("grant-{}", uuid::Uuid::now_v7().simple())
}

/// The canonical document signed for a grant.
#[must_use]
pub fn grant_document(input: &GrantInput, principal: &str, key_fingerprint: &str) -> Value {
    let mut doc = json!({
        "domain": GRANT_DOMAIN,
        "grant": "issue",
        "grant_id": input.grant_id,
        "scope": input.scope.as_str(),
        "agent": input.agent,
        "notebook": input.notebook,
        "action_class": input.action_class,
        "tool": input.tool,
        "covers_destructive": input.covers_destructive,
        "packet_id": input.packet_id,
        "principal": principal,
        "key": key_fingerprint,
        "decided_at": input.decided_at,
    });
    match &input.scope {
        Scope::Session(s) => doc["session"] = json!(s),
        Scope::Pattern(p) => doc["pattern"] = json!(p.to_string()),
        Scope::Class(n) => doc["constraints"] = n.to_json(),
        Scope::Until => {}
    }
    if let Some(t) = &input.expires_at {
        doc["expires_at"] = json!(t);
    }
    if let Some(w) = &input.workdir {
        doc["workdir"] = json!(w);
    }
    if let Some(n) = input.max_uses {
        doc["max_uses"] = json!(n);
    }
    if let Some(r) = &input.reason {
        doc["reason"] = json!(r);
    }
    doc
}

/// The canonical document signed for a revocation of `grant_id` (of `agent`'s grant).
#[must_use]
pub fn revocation_document(
    grant_id: &str,
    agent: &str,
    reason: &str,
    decided_at: &str,
    principal: &str,
    key_fingerprint: &str,
) -> Value {
    json!({
        "domain": GRANT_DOMAIN,
        "grant": "revoke",
        "grant_id": grant_id,
        "agent": agent,
        "principal": principal,
        "key": key_fingerprint,
        "decided_at": decided_at,
        "reason": reason,
    })
}

/// Signs a grant or revocation document with the principal's key.
#[must_use]
pub fn sign(principal: &Principal, document: Value) -> SignedDecision {
    let signature = sign_document(principal, &document);
    SignedDecision { document, signature }
}

/// The chain record body of a signed grant or revocation: `agent` the grant's agent, `action`
/// [`GRANT_ACTION`] or [`REVOKE_ACTION`], `approver` the principal, `outcome` `success`,
/// `autonomy_tier` `act_with_approval`, `metadata.approval` with the signature and
/// `metadata.warrant_grant` with the document.
#[must_use]
pub fn record_body(signed: &SignedDecision) -> Map<String, Value> {
    let doc = &signed.document;
    let s = |k: &str| doc.get(k).and_then(Value::as_str).unwrap_or_default();
    let revoke = s("grant") == "revoke";
    let mut meta =
        crate::protocol::decision::approval_metadata(signed, s("decided_at"), if revoke { "revoke" } else { "grant" });
    meta.insert("warrant_grant".into(), doc.clone());
    chain::new_record_body(
        s("agent"),
        if revoke { REVOKE_ACTION } else { GRANT_ACTION },
        Some(s("principal")),
        "success",
        &format!("warrant:grant:{}", s("grant_id")),
        "act_with_approval",
        s("decided_at"),
        meta,
    )
}

/// Checks a chain record carrying `metadata.warrant_grant`: the document verifies under a pinned
/// key of its principal, is a well-formed grant or revocation, and the record agrees with it
/// (action, agent, approver, outcome, timestamp, reviewer, signed_at). `Ok(false)` when the
/// record carries no grant.
///
/// # Errors
/// A sentence naming what failed.
pub fn check_record_signature(rec: &Map<String, Value>, pinned: &PinnedKeys) -> Result<bool, String> {
    let Some(meta) = rec.get("metadata").and_then(Value::as_object) else { return Ok(false) };
    let Some(doc) = meta.get("warrant_grant") else { return Ok(false) };
    if doc.get("domain").and_then(Value::as_str) != Some(GRANT_DOMAIN) {
        return Err(format!("warrant_grant has an unknown domain {:?}", doc.get("domain")));
    }
    if ["warrant_decision", "warrant_control", "warrant_key"].iter().any(|k| meta.contains_key(*k)) {
        return Err("a record cannot carry a grant and another signed document".into());
    }
    let sig = crate::protocol::decision::verified_signature(meta, "warrant_grant", pinned)?;
    let event = GrantEvent::from_document(doc)?;
    let d = |k: &str| doc.get(k).and_then(Value::as_str);
    let r = |k: &str| rec.get(k).and_then(Value::as_str);
    let (action, decision) = match event {
        GrantEvent::Issue(_) => (GRANT_ACTION, "grant"),
        GrantEvent::Revoke { .. } => (REVOKE_ACTION, "revoke"),
    };
    let checks = [
        ("action", r("action") == Some(action)),
        ("agent", r("agent") == d("agent")),
        ("approver", r("approver") == d("principal")),
        ("outcome", r("outcome") == Some("success")),
        ("timestamp", r("timestamp") == d("decided_at")),
        ("reviewer", sig.get("reviewer").and_then(Value::as_str) == d("principal")),
        ("signed_at", sig.get("signed_at").and_then(Value::as_str) == d("decided_at")),
        (
            "metadata.approval.decision",
            meta.get("approval").and_then(|a| a.get("decision")).and_then(Value::as_str) == Some(decision),
        ),
    ];
    if let Some((field, _)) = checks.iter().find(|(_, ok)| !ok) {
        return Err(format!("record field `{field}` disagrees with the signed grant"));
    }
    Ok(true)
}

/// A verified grant record, as the fold sees it.
#[derive(Debug, Clone, PartialEq)]
pub enum GrantEvent {
    /// A grant issued.
    Issue(Box<Grant>),
    /// A grant revoked.
    Revoke {
        /// The grant.
        grant_id: String,
        /// Who revoked it.
        principal: String,
        /// When.
        decided_at: String,
        /// Why.
        reason: String,
    },
}

impl GrantEvent {
    /// Reads a grant or revocation document.
    ///
    /// # Errors
    /// A sentence naming what is malformed.
    pub fn from_document(doc: &Value) -> Result<Self, String> {
        if doc.get("domain").and_then(Value::as_str) != Some(GRANT_DOMAIN) {
            return Err(format!("warrant_grant has an unknown domain {:?}", doc.get("domain")));
        }
        match doc.get("grant").and_then(Value::as_str) {
            Some("issue") => Grant::from_document(doc).map(|g| GrantEvent::Issue(Box::new(g))),
            Some("revoke") => {
                let s = |k: &str| {
                    doc.get(k)
                        .and_then(Value::as_str)
                        .filter(|v| !v.is_empty())
                        .map(str::to_owned)
                        .ok_or_else(|| format!("the revocation has no `{k}`"))
                };
                Ok(GrantEvent::Revoke {
                    grant_id: s("grant_id")?,
                    principal: s("principal")?,
                    decided_at: s("decided_at")?,
                    reason: s("reason")?,
                })
            }
            other => Err(format!("warrant_grant is neither an issue nor a revocation ({other:?})")),
        }
    }

    /// The grant event of a chain record, if it carries a well-formed one (call only on records
    /// that verified), with the record's `chain_index` on an issued grant.
    #[must_use]
    pub fn of_record(rec: &Map<String, Value>) -> Option<Self> {
        let mut e = Self::from_document(rec.get("metadata")?.get("warrant_grant")?).ok()?;
        if let GrantEvent::Issue(g) = &mut e {
            g.chain_index = rec.get("chain_index").and_then(Value::as_u64).unwrap_or(0);
        }
        Some(e)
    }
}

/// A revocation as the book keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revocation {
    /// Who revoked it.
    pub principal: String,
    /// When.
    pub decided_at: String,
    /// Why.
    pub reason: String,
}

/// The key grants are indexed by: agent, notebook, canonical class, tool.
type BookKey = (String, String, String, String);

/// The grants that may cover calls of one key: by session, and the rest.
#[derive(Debug, Clone, Default)]
struct Bucket {
    by_session: HashMap<String, Vec<Arc<Grant>>>,
    other: Vec<Arc<Grant>>,
}

/// The live grants, folded in chain order over the verified grant records: issued and not
/// revoked (expiry and uses are judged at the time of a call). Looking up the grants that may
/// cover a call is a `BTreeMap` lookup on (agent, notebook, class, tool), O(log n) in the number
/// of grants, then a hash lookup of the call's session.
#[derive(Debug, Clone, Default)]
pub struct GrantBook {
    by_key: BTreeMap<BookKey, Bucket>,
    by_id: HashMap<String, Arc<Grant>>,
    revoked: HashMap<String, (Arc<Grant>, Revocation)>,
}

impl GrantBook {
    /// Applies one verified grant event. A grant id issued twice keeps the first; a revocation
    /// of an unknown id is ignored.
    pub fn apply(&mut self, e: &GrantEvent) {
        match e {
            GrantEvent::Issue(g) => {
                if self.by_id.contains_key(&g.grant_id) || self.revoked.contains_key(&g.grant_id) {
                    return;
                }
                let g = Arc::new(Grant::clone(g));
                let bucket = self
                    .by_key
                    .entry((g.agent.clone(), g.notebook.clone(), g.action_class.clone(), g.tool.clone()))
                    .or_default();
                match &g.scope {
                    Scope::Session(s) => bucket.by_session.entry(s.clone()).or_default().push(g.clone()),
                    _ => bucket.other.push(g.clone()),
                }
                self.by_id.insert(g.grant_id.clone(), g);
            }
            GrantEvent::Revoke { grant_id, principal, decided_at, reason } => {
                let Some(g) = self.by_id.remove(grant_id) else { return };
                let key = (g.agent.clone(), g.notebook.clone(), g.action_class.clone(), g.tool.clone());
                if let Some(bucket) = self.by_key.get_mut(&key) {
                    let list = match &g.scope {
                        Scope::Session(s) => bucket.by_session.get_mut(s),
                        _ => Some(&mut bucket.other),
                    };
                    if let Some(list) = list {
                        list.retain(|x| x.grant_id != *grant_id);
                    }
                }
                let r =
                    Revocation { principal: principal.clone(), decided_at: decided_at.clone(), reason: reason.clone() };
                self.revoked.insert(grant_id.clone(), (g, r));
            }
        }
    }

    /// The grants that cover a call with `facts` at `now` (unix seconds), sessions first, then
    /// in the order they were issued.
    pub fn covering<'a>(&'a self, facts: &'a CallFacts, now: f64) -> impl Iterator<Item = &'a Arc<Grant>> + 'a {
        let key = (facts.agent.clone(), facts.notebook.clone(), facts.action_class.clone(), facts.tool.clone());
        let bucket = self.by_key.get(&key);
        let session = bucket.zip(facts.session.as_ref()).and_then(|(b, s)| b.by_session.get(s)).into_iter().flatten();
        let other = bucket.into_iter().flat_map(|b| b.other.iter());
        session.chain(other).filter(move |g| g.covers(facts, now))
    }

    /// A grant issued and not revoked, by id.
    #[must_use]
    pub fn get(&self, grant_id: &str) -> Option<&Arc<Grant>> {
        self.by_id.get(grant_id)
    }

    /// A revoked grant and its revocation, by id.
    #[must_use]
    pub fn revoked(&self, grant_id: &str) -> Option<&(Arc<Grant>, Revocation)> {
        self.revoked.get(grant_id)
    }

    /// Every grant issued and not revoked (expired ones included), in id order.
    #[must_use]
    pub fn issued(&self) -> Vec<&Arc<Grant>> {
        let mut v: Vec<&Arc<Grant>> = self.by_id.values().collect();
        v.sort_by(|a, b| a.chain_index.cmp(&b.chain_index).then_with(|| a.grant_id.cmp(&b.grant_id)));
        v
    }

    /// Every revoked grant with its revocation, in the order they were issued.
    #[must_use]
    pub fn revoked_all(&self) -> Vec<(&Arc<Grant>, &Revocation)> {
        let mut v: Vec<(&Arc<Grant>, &Revocation)> = self.revoked.values().map(|(g, r)| (g, r)).collect();
        v.sort_by(|a, b| a.0.chain_index.cmp(&b.0.chain_index).then_with(|| a.0.grant_id.cmp(&b.0.grant_id)));
        v
    }

    /// How many grants are issued and not revoked.
    #[must_use]
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Whether no grant is issued and unrevoked.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }
}

/// What a principal asks for when approving (`warrant approve --scope`): `once` (the default:
/// this packet only), `session`, `until:TIME` (RFC 3339, or a duration from now such as `30m`,
/// `8h`, `2d`), `pattern:GLOB` ([`ToolPattern`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScopeRequest {
    /// This packet only.
    Once,
    /// The packet's session.
    Session,
    /// Until a time (RFC 3339 UTC).
    Until(String),
    /// A tool pattern.
    Pattern(ToolPattern),
    /// The class, within constraints that narrow it.
    Class(Narrowing),
}

impl ScopeRequest {
    /// Parses a scope as `--scope` takes it; `now` is when it is asked (for `until:30m`).
    ///
    /// # Errors
    /// A sentence saying what is accepted.
    pub fn parse(text: &str, now: time::OffsetDateTime) -> Result<Self, String> {
        let text = text.trim();
        match text.split_once(':') {
            None if text == "once" => Ok(Self::Once),
            None if text == "session" => Ok(Self::Session),
            Some(("until", t)) => Ok(Self::Until(parse_until(t, now)?)),
            Some(("pattern", p)) => Ok(Self::Pattern(ToolPattern::parse(p)?)),
            Some(("class", c)) => Ok(Self::Class(Narrowing::parse(c)?)),
            _ => Err(format!(
                "scope {text:?} is not one of once, session, until:TIME (RFC 3339 or 30m/8h/2d), pattern:GLOB, class:max_amount=N;domain=D"
            )),
        }
    }
}

/// An end time: RFC 3339, or a duration from `now` (`45s`, `30m`, `8h`, `2d`), as canonical RFC
/// 3339 UTC. It must be in the future.
///
/// # Errors
/// A sentence saying what is accepted.
pub fn parse_until(text: &str, now: time::OffsetDateTime) -> Result<String, String> {
    let text = text.trim();
    let at = if let Some(t) = crate::protocol::clock::parse_rfc3339(text) {
        t
    } else {
        let (n, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len()));
        let n: i64 = n.parse().map_err(|_| format!("{text:?} is neither an RFC 3339 time nor a duration like 30m"))?;
        let secs = match unit {
            "s" => n,
            "m" => n.saturating_mul(60),
            "h" => n.saturating_mul(3600),
            "d" => n.saturating_mul(86_400),
            _ => return Err(format!("{text:?}: a duration ends with s, m, h or d")),
        };
        now.checked_add(time::Duration::seconds(secs)).ok_or_else(|| format!("{text:?} is too far"))?
    };
    if at <= now {
        return Err(format!("{text:?} is not in the future"));
    }
    Ok(crate::protocol::clock::format_rfc3339(at))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(tool: &str, argument: Option<&str>, session: Option<&str>, tier: ToolTier) -> CallFacts {
        CallFacts {
            agent: "claude-code".into(),
            notebook: "shop-1a2b3c".into(),
            action_class: "code.push".into(),
            tool: tool.into(),
            session: session.map(str::to_owned),
            argument: argument.map(str::to_owned),
            tier: Some(tier),
            amount: None,
            recipient_domains: None,
            workdir: None,
        }
    }

    fn grant(scope: Scope, expires: Option<f64>) -> Grant {
        Grant {
            grant_id: "grant-1".into(),
            scope,
            agent: "claude-code".into(),
            notebook: "shop-1a2b3c".into(),
            action_class: "code.push".into(),
            tool: "Bash".into(),
            expires_at: expires.map(|_| "2026-11-26T00:00:00Z".into()),
            expires_unix: expires,
            max_uses: None,
            covers_destructive: false,
            workdir: None,
            packet_id: "cc-1".into(),
            principal: "alice".into(),
            key: "SHA256:x".into(),
            decided_at: "2026-11-25T00:00:00Z".into(),
            reason: None,
            chain_index: 1,
        }
    }

    #[test]
    fn class_constraints_parse_sign_and_narrow() {
        let n = Narrowing::parse("domain=Example.com, b.example.org ; max_amount=500").expect("valid");
        assert_eq!(n.max_amount, Some(500));
        assert_eq!(n.domain_allowlist, ["b.example.org", "example.com"]);
        assert_eq!(n.to_string(), "max_amount=500;domain=b.example.org,example.com");
        assert_eq!(Narrowing::parse(&n.to_string()), Ok(n.clone()), "Display is what parse reads");
        assert_eq!(Narrowing::from_json(&n.to_json()), Some(n.clone()));
        for bad in [
            "",
            "max_amount=-1",
            "max_amount=1.5",
            "max_amount=1;max_amount=2",
            "domain=localhost",
            "domain=*.com",
            "rate=1",
        ] {
            assert!(Narrowing::parse(bad).is_err(), "{bad:?}");
        }
        // The signed form is read back only as written: sorted lower-case domains, known keys.
        for bad in [
            json!({}),
            json!({"max_amount": 1.5}),
            json!({"domain_allowlist": ["b.com", "a.com"]}),
            json!({"domain_allowlist": ["A.com"]}),
            json!({"max_amount": 1, "other": true}),
        ] {
            assert_eq!(Narrowing::from_json(&bad), None, "{bad}");
        }
        let mut f = facts("mcp__bank__pay", None, None, ToolTier::Mutating);
        let n = Narrowing::parse("max_amount=500;domain=example.com").expect("valid");
        assert!(!n.admits(&f), "nothing readable: not covered");
        f.amount = Some(500.0);
        f.recipient_domains = Some(vec!["example.com".into()]);
        assert!(n.admits(&f));
        f.amount = Some(500.5);
        assert!(!n.admits(&f));
        f.amount = Some(10.0);
        f.recipient_domains = Some(vec!["evil.example".into(), "example.com".into()]);
        assert!(!n.admits(&f), "every recipient must be at an allowed domain");
    }

    #[test]
    fn recipients_are_read_only_when_every_address_is_clear() {
        let fields = ["to".to_owned(), "cc".to_owned()];
        let got =
            recipient_domains(&json!({"to": "a@Example.com, Bo <b@x.example.org>", "cc": ["c@example.com"]}), &fields);
        assert_eq!(got, Some(vec!["example.com".to_owned(), "x.example.org".to_owned()]));
        for bad in [
            json!({"to": "a@evil.example <b@example.com>"}),
            json!({"to": "Name <a@evil.example> <b@example.com>"}),
            json!({"to": "<a@evil.example> <b@example.com>"}),
            json!({"to": "X\r\nBcc: x@evil.example <b@example.com>"}),
            json!({"to": "\"a@evil.example\" <b@example.com>"}),
            json!({"to": "\"a@evil.example\"@example.com"}),
            json!({"to": "a@b@example.com"}),
            json!({"to": "example.com"}),
            json!({"to": "a b@example.com"}),
            json!({"to": "<a@example.com"}),
            json!({"to": [1]}),
            json!({"to": {"address": "a@example.com"}}),
            json!({"subject": "none"}),
        ] {
            assert_eq!(recipient_domains(&bad, &fields), None, "{bad}");
        }
        assert_eq!(call_amount(&json!({"amount": 12.5}), "amount"), Some(12.5));
        for bad in [json!({"amount": "12"}), json!({"amount": -3}), json!({})] {
            assert_eq!(call_amount(&bad, "amount"), None, "{bad}");
        }
    }

    #[test]
    fn a_star_stays_within_one_word_and_one_path_segment() {
        assert!(glob_matches("git push origin feature/*", "git push origin feature/login"));
        assert!(!glob_matches("git push origin feature/*", "git push origin feature/a/b"));
        assert!(!glob_matches("git push origin feature/*", "git push origin feature/x --force"));
        assert!(!glob_matches("git push origin *", "git push origin main --force"));
        assert!(glob_matches("git push origin **", "git push origin main --force"));
        assert!(glob_matches("/work/notes/**", "/work/notes/a/b.md"));
        assert!(!glob_matches("/work/notes/*", "/work/notes/a/b.md"));
        assert!(glob_matches("ls -?", "ls -l"));
        assert!(!glob_matches("ls -?", "ls -la"));
        assert!(!glob_matches("ls", "ls -la"), "no implicit prefix");
        assert!(!glob_matches("git push origin *", "git push origin --force"), "a star never begins an option");
        assert!(!glob_matches("git push origin feature/*", "git push origin feature/x:main"), "nor takes a `:`");
        assert!(glob_matches("git push origin feature/*", "git push origin feature/x-y"));
        // Many stars and a long text: quick (the matcher is O(m·n)).
        let long = format!("git tag v{}/", ".".repeat(20_000));
        assert!(!glob_matches("git tag v*.*.*.*.*", &long));
    }

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

    #[test]
    fn a_grant_covers_only_its_agent_notebook_class_tool_and_scope() {
        let p = ToolPattern::parse("Bash(git push origin feature/*)").expect("pattern");
        let g = grant(Scope::Pattern(p), None);
        let ok = facts("Bash", Some("git push origin feature/x"), None, ToolTier::Mutating);
        assert!(g.covers(&ok, 0.0));
        assert!(!g.covers(&facts("Bash", Some("git push origin main"), None, ToolTier::Mutating), 0.0));
        assert!(!g.covers(&facts("Bash", None, None, ToolTier::Mutating), 0.0), "a complex line has no argument");
        assert!(!g.covers(&CallFacts { agent: "codex".into(), ..ok.clone() }, 0.0));
        assert!(!g.covers(&CallFacts { notebook: "other-000000".into(), ..ok.clone() }, 0.0));
        assert!(!g.covers(&CallFacts { action_class: "code.merge".into(), ..ok.clone() }, 0.0));
        assert!(!g.covers(&facts("Bash", Some("git push origin feature/x"), None, ToolTier::Destructive), 0.0));
        assert!(!g.covers(&CallFacts { tier: None, ..ok.clone() }, 0.0), "unregistered counts as destructive");
        let typed_twice = Grant { covers_destructive: true, ..g.clone() };
        assert!(
            typed_twice.covers(&facts("Bash", Some("git push origin feature/x"), None, ToolTier::Destructive), 0.0)
        );
        let s = grant(Scope::Session("s1".into()), Some(100.0));
        assert!(s.covers(&facts("Bash", None, Some("s1"), ToolTier::Mutating), 99.0));
        assert!(!s.covers(&facts("Bash", None, Some("s1"), ToolTier::Mutating), 100.0), "ends at its time");
        assert!(!s.covers(&facts("Bash", None, Some("s2"), ToolTier::Mutating), 0.0));
        assert!(!s.covers(&facts("Bash", None, None, ToolTier::Mutating), 0.0));
    }

    #[test]
    fn the_book_finds_covering_grants_and_forgets_revoked_ones() {
        let mut book = GrantBook::default();
        let mut a = grant(Scope::Session("s1".into()), None);
        a.grant_id = "grant-a".into();
        let mut b = grant(Scope::Until, Some(1e12));
        b.grant_id = "grant-b".into();
        book.apply(&GrantEvent::Issue(Box::new(a)));
        book.apply(&GrantEvent::Issue(Box::new(b)));
        let f = facts("Bash", None, Some("s1"), ToolTier::Mutating);
        let ids: Vec<&str> = book.covering(&f, 0.0).map(|g| g.grant_id.as_str()).collect();
        assert_eq!(ids, ["grant-a", "grant-b"], "the session's grant first");
        book.apply(&GrantEvent::Revoke {
            grant_id: "grant-a".into(),
            principal: "alice".into(),
            decided_at: "2026-11-25T01:00:00Z".into(),
            reason: "done".into(),
        });
        let ids: Vec<&str> = book.covering(&f, 0.0).map(|g| g.grant_id.as_str()).collect();
        assert_eq!(ids, ["grant-b"]);
        assert!(book.revoked("grant-a").is_some());
        // A revoked id issued again stays revoked.
        let mut again = grant(Scope::Session("s1".into()), None);
        again.grant_id = "grant-a".into();
        book.apply(&GrantEvent::Issue(Box::new(again)));
        assert_eq!(book.covering(&f, 0.0).count(), 1);
    }

    #[test]
    fn scopes_parse_as_the_cli_takes_them() {
        let now = time::macros::datetime!(2026-11-25 12:00 UTC);
        assert_eq!(ScopeRequest::parse("once", now), Ok(ScopeRequest::Once));
        assert_eq!(ScopeRequest::parse("session", now), Ok(ScopeRequest::Session));
        assert_eq!(ScopeRequest::parse("until:8h", now), Ok(ScopeRequest::Until("2026-11-25T20:00:00Z".into())));
        assert_eq!(
            ScopeRequest::parse("until:2026-11-26T00:00:00Z", now),
            Ok(ScopeRequest::Until("2026-11-26T00:00:00Z".into()))
        );
        assert!(ScopeRequest::parse("until:2026-11-24T00:00:00Z", now).is_err(), "the past");
        assert!(ScopeRequest::parse("until:8y", now).is_err());
        assert!(ScopeRequest::parse("forever", now).is_err());
        assert!(ScopeRequest::parse("pattern:Bash(git push", now).is_err());
        assert!(matches!(ScopeRequest::parse("pattern:Bash(git push *)", now), Ok(ScopeRequest::Pattern(_))));
    }

    #[test]
    fn a_signed_grant_and_its_revocation_verify_and_an_edit_does_not() {
        let key = Principal::from_seed("alice", &[7; 32]);
        let mut pinned = PinnedKeys::default();
        pinned.pin("alice", key.verifying_key());
        let input = GrantInput {
            grant_id: new_grant_id(),
            scope: Scope::Pattern(ToolPattern::parse("Bash(git push origin feature/*)").expect("p")),
            agent: "claude-code".into(),
            notebook: "shop-1a2b3c".into(),
            action_class: "code.push".into(),
            tool: "Bash".into(),
            expires_at: None,
            max_uses: Some(3),
            covers_destructive: false,
            workdir: None,
            packet_id: "cc-1".into(),
            reason: None,
            decided_at: "2026-11-25T12:00:00Z".into(),
        };
        let signed = sign(&key, grant_document(&input, &key.name, &key.fingerprint()));
        let rec = record_body(&signed);
        assert_eq!(check_record_signature(&rec, &pinned), Ok(true));
        let Some(GrantEvent::Issue(g)) = GrantEvent::of_record(&rec) else { panic!("an issue") };
        assert_eq!((g.max_uses, g.tool.as_str()), (Some(3), "Bash"));
        let mut edited = rec.clone();
        edited["metadata"]["warrant_grant"]["pattern"] = json!("Bash(**)");
        assert!(check_record_signature(&edited, &pinned).is_err());
        let mut moved = rec.clone();
        moved.insert("agent".into(), json!("codex"));
        assert!(matches!(check_record_signature(&moved, &pinned), Err(e) if e.contains("agent")));
        let revoke = sign(
            &key,
            revocation_document(
                &g.grant_id,
                "claude-code",
                "done",
                "2026-11-25T13:00:00Z",
                &key.name,
                &key.fingerprint(),
            ),
        );
        let rec = record_body(&revoke);
        assert_eq!(check_record_signature(&rec, &pinned), Ok(true));
        assert!(matches!(GrantEvent::of_record(&rec), Some(GrantEvent::Revoke { .. })));
    }
}
