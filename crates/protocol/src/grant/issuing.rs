//! Issuing a grant: the scope a principal asks for, its options, the past calls it would have
//! covered, and `prepare`, the rules that keep a grant no broader than asked.

use super::{
    CallFacts, Grant, GrantRefused, MAX_USES, Narrowing, SESSION_DEFAULT_SECONDS, Scope, ScopeError, ToolPattern,
    UntilError, new_grant_id,
};
use crate::tiers::ToolTier;

/// The call packets among `packets` that `grant` would have covered, its end and uses aside
/// (the preview before signing a grant).
pub fn past_calls<'a>(
    grant: &Grant,
    packets: impl Iterator<Item = &'a crate::packet::Packet>,
    policies: &crate::graduation::PolicySet,
) -> Vec<&'a crate::packet::Packet> {
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
    packet: &crate::packet::Packet,
    policies: &crate::graduation::PolicySet,
    scope: &ScopeRequest,
    options: &GrantOptions,
    decided_at: &str,
) -> Result<Option<GrantInput>, GrantRefused> {
    use crate::packet::DecisionState;
    if *scope == ScopeRequest::Once {
        return Ok(None);
    }
    let id = &packet.id;
    let facts = CallFacts::of_packet(packet, policies)
        .ok_or_else(|| format!("{id} is not a tool call from a hook or the gateway: only `once` applies to it"))?;
    if policies.policy(&facts.action_class).is_human_only() {
        return Err(format!("`{}` is human-only: no grant ever covers it (approve once)", facts.action_class).into());
    }
    if let Some(q) = policies.cosign(&facts.action_class) {
        return Err(format!(
            "`{}` needs the approval of {} (policy.toml [cosign]): no grant covers it",
            facts.action_class,
            q.describe()
        )
        .into());
    }
    if let Some(state @ (DecisionState::Blocked | DecisionState::HumanOnly)) = packet.state {
        return Err(format!("{id} is {}: no grant covers it", state.as_str()).into());
    }
    if options.max_uses.is_some_and(|n| n == 0 || n > MAX_USES) {
        return Err(format!("--uses must be from 1 to {MAX_USES} (a grant for more calls needs no bound)").into());
    }
    let destructive = facts.tier.is_none_or(|t| t >= ToolTier::Destructive);
    let (scope, expires_at) = match scope {
        ScopeRequest::Once => return Ok(None),
        ScopeRequest::Session => {
            let s =
                facts.session.clone().ok_or_else(|| format!("{id} names no session: grant `until:` or `pattern:`"))?;
            let end = match &options.until {
                Some(t) => t.clone(),
                None => crate::clock::parse_rfc3339(decided_at)
                    .and_then(|t| t.checked_add(time::Duration::seconds(SESSION_DEFAULT_SECONDS)))
                    .map(crate::clock::format_rfc3339)
                    .ok_or_else(|| format!("{decided_at:?} is not a time: a session grant needs an end"))?,
            };
            (Scope::Session(s), Some(end))
        }
        ScopeRequest::Until(t) => (Scope::Until, Some(t.clone())),
        ScopeRequest::Pattern(p) => {
            if p.tool != facts.tool {
                return Err(format!("the pattern names `{}`, but {id} calls `{}`", p.tool, facts.tool).into());
            }
            if !p.matches(&facts.tool, facts.argument.as_deref()) {
                return Err(format!(
                    "the pattern `{p}` does not cover {id} itself (its argument: {})",
                    facts
                        .argument
                        .as_deref()
                        .map_or_else(|| "none a pattern can match".to_owned(), |a| format!("`{a}`"))
                )
                .into());
            }
            (Scope::Pattern(p.clone()), options.until.clone())
        }
        ScopeRequest::Class(n) => {
            let entry = policies.tool(&facts.tool);
            if n.max_amount.is_some() && entry.and_then(|t| t.amount.as_ref()).is_none() {
                return Err(format!(
                    "`{}` declares no `amount` field in policy.toml [tools]: a max_amount cannot be checked on its calls",
                    facts.tool
                ).into());
            }
            if !n.domain_allowlist.is_empty() && entry.is_none_or(|t| t.recipients.is_empty()) {
                return Err(format!(
                    "`{}` declares no `recipients` fields in policy.toml [tools]: a domain cannot be checked on its calls",
                    facts.tool
                ).into());
            }
            if !n.admits(&facts) {
                return Err(
                    format!("the constraints `{n}` do not cover {id} itself: {}", facts_in_words(&facts)).into()
                );
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
                ).into());
            }
            true
        }
        (Scope::Class(n), true) => {
            if options.confirm_pattern.as_deref().map(str::trim) != Some(n.to_string().as_str()) {
                return Err(format!(
                    "{id} is a destructive call: a grant covers such calls only for constraints typed twice (--confirm-pattern '{n}')"
                ).into());
            }
            true
        }
        (_, true) => {
            return Err(format!(
                "{id} is a destructive call: session and time grants never cover such calls; grant a pattern and type it twice"
            ).into());
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
    /// [`ScopeError`], whose text says what is accepted.
    pub fn parse(text: &str, now: time::OffsetDateTime) -> Result<Self, ScopeError> {
        let text = text.trim();
        match text.split_once(':') {
            None if text == "once" => Ok(Self::Once),
            None if text == "session" => Ok(Self::Session),
            Some(("until", t)) => Ok(Self::Until(parse_until(t, now)?)),
            Some(("pattern", p)) => Ok(Self::Pattern(ToolPattern::parse(p)?)),
            Some(("class", c)) => Ok(Self::Class(Narrowing::parse(c)?)),
            _ => Err(ScopeError::Unknown(text.to_owned())),
        }
    }
}

/// An end time: RFC 3339, or a duration from `now` (`45s`, `30m`, `8h`, `2d`), as canonical RFC
/// 3339 UTC. It must be in the future.
///
/// # Errors
/// [`UntilError`], whose text says what is accepted.
pub fn parse_until(text: &str, now: time::OffsetDateTime) -> Result<String, UntilError> {
    let text = text.trim();
    let at = if let Some(t) = crate::clock::parse_rfc3339(text) {
        t
    } else {
        let d = crate::clock::parse_duration(text)?;
        time::Duration::try_from(d)
            .ok()
            .and_then(|d| now.checked_add(d))
            .ok_or_else(|| UntilError::TooFar(text.to_owned()))?
    };
    if at <= now {
        return Err(UntilError::Past(text.to_owned()));
    }
    Ok(crate::clock::format_rfc3339(at))
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(
            ScopeRequest::parse("until:2026-11-24T00:00:00Z", now),
            Err(ScopeError::Until(UntilError::Past("2026-11-24T00:00:00Z".into()))),
            "the past"
        );
        assert!(matches!(
            ScopeRequest::parse("until:8 parsecs", now),
            Err(ScopeError::Until(UntilError::Unreadable(_)))
        ));
        assert!(matches!(
            ScopeRequest::parse("until:99999999999d", now),
            Err(ScopeError::Until(UntilError::TooFar(_)))
        ));
        assert_eq!(ScopeRequest::parse("until:PT8H", now), ScopeRequest::parse("until:8h", now), "one duration syntax");
        assert_eq!(ScopeRequest::parse("forever", now), Err(ScopeError::Unknown("forever".into())));
        assert_eq!(
            ScopeRequest::parse("pattern:Bash(git push", now),
            Err(ScopeError::Pattern(super::super::PatternError::Unbalanced("Bash(git push".into())))
        );
        assert!(matches!(
            ScopeRequest::parse("pattern:Bash()", now),
            Err(ScopeError::Pattern(super::super::PatternError::EmptyArgument { .. }))
        ));
        assert!(matches!(
            ScopeRequest::parse("pattern:../x", now),
            Err(ScopeError::Pattern(super::super::PatternError::NotATool(_)))
        ));
        assert_eq!(ScopeRequest::parse("class:", now), Err(ScopeError::Narrowing(super::super::NarrowingError::Empty)));
        assert!(matches!(ScopeRequest::parse("pattern:Bash(git push *)", now), Ok(ScopeRequest::Pattern(_))));
    }
}
