//! Scoped grants: the principal's signed permission for more than one call.
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

mod book;
mod document;
mod errors;
mod facts;
mod issuing;
mod narrowing;
mod pattern;

pub use book::{GrantBook, GrantEvent, Revocation};
pub(crate) use document::check_record;
pub use document::{grant_document, new_grant_id, record_body, revocation_document, sign};
pub use errors::{GrantRefused, NarrowingError, PatternError, ScopeError, UntilError};
pub use facts::{CallFacts, MAX_ARGUMENT, call_argument};
pub use issuing::{GrantInput, GrantOptions, ScopeRequest, parse_until, past_calls, prepare};
pub use narrowing::{Narrowing, call_amount, recipient_domains};
pub use pattern::{ToolPattern, glob_matches};

use crate::tiers::ToolTier;
use serde_json::Value;

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

    /// Reads a grant document (its signature is checked by [`crate::decision::check_record_signature`]).
    ///
    /// # Errors
    /// A sentence naming the field that is missing or malformed.
    pub fn from_document(doc: &Value) -> Result<Self, crate::decision::DocumentError> {
        let s = |k: &str| doc.get(k).and_then(Value::as_str).map(str::to_owned);
        let need = |k: &str| s(k).filter(|v| !v.is_empty()).ok_or_else(|| format!("warrant_grant has no `{k}`"));
        if doc.get("grant").and_then(Value::as_str) != Some("issue") {
            return Err("warrant_grant is not an issue".into());
        }
        let grant_id = need("grant_id")?;
        if !crate::packet::is_safe_id(&grant_id) {
            return Err(format!("grant id {grant_id:?} is not a safe id").into());
        }
        let tool = need("tool")?;
        let scope = match need("scope")?.as_str() {
            "session" => Scope::Session(need("session")?),
            "until" => Scope::Until,
            "pattern" => {
                let p =
                    ToolPattern::parse(&need("pattern")?).map_err(|e| crate::decision::DocumentError(e.to_string()))?;
                if p.tool != tool {
                    return Err(format!("the pattern's tool {:?} is not the grant's {tool:?}", p.tool).into());
                }
                Scope::Pattern(p)
            }
            "class" => Scope::Class(
                doc.get("constraints")
                    .and_then(Narrowing::from_json)
                    .ok_or("a grant of scope `class` has no valid `constraints`")?,
            ),
            other => return Err(format!("unknown grant scope {other:?}").into()),
        };
        let expires_at = s("expires_at");
        let expires_unix = match &expires_at {
            Some(t) => Some(crate::clock::unix_seconds(t).ok_or_else(|| format!("expires_at {t:?} is not a time"))?),
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
        for (bad, why) in [
            ("", NarrowingError::Empty),
            ("max_amount=-1", NarrowingError::Amount("-1".into())),
            ("max_amount=1.5", NarrowingError::Amount("1.5".into())),
            ("max_amount=1;max_amount=2", NarrowingError::Term("max_amount=2".into())),
            ("domain=localhost", NarrowingError::Domain("localhost".into())),
            ("domain=*.com", NarrowingError::Domain("*.com".into())),
            ("rate=1", NarrowingError::Term("rate=1".into())),
        ] {
            assert_eq!(Narrowing::parse(bad), Err(why), "{bad:?}");
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
}
