//! Why a grant's scope cannot be read or a grant cannot be made: typed, one variant per rule, each
//! with the sentence the principal reads.

/// A tool pattern that cannot be read ([`super::ToolPattern::parse`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatternError {
    /// `(` without a closing `)` at the end.
    #[error("pattern {0:?} opens `(` but does not end with `)`")]
    Unbalanced(String),
    /// `Tool()`.
    #[error("pattern {pattern:?} has an empty argument: write `{tool}` alone")]
    EmptyArgument {
        /// The pattern as written.
        pattern: String,
        /// The tool it names.
        tool: String,
    },
    /// The part before `(` is not a tool key.
    #[error("{0:?} is not a tool name (write `Tool` or `Tool(argument glob)`)")]
    NotATool(String),
}

/// Class-grant constraints that cannot be read ([`super::Narrowing::parse`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NarrowingError {
    /// `max_amount=` is not a whole number up to 2^53 − 1.
    #[error("max_amount {0:?} is not a whole number")]
    Amount(String),
    /// A `domain=` entry is not a domain.
    #[error("{0:?} is not a domain (like example.com)")]
    Domain(String),
    /// A term other than `max_amount=N` or `domain=D[,D…]`, or one given twice.
    #[error("{0:?}: a class grant's constraints are max_amount=N and domain=D[,D…], each once, joined by `;`")]
    Term(String),
    /// No constraint at all.
    #[error("a class grant needs a constraint: max_amount=N or domain=D (or both)")]
    Empty,
}

/// An end time that cannot be read or is not ahead ([`super::parse_until`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UntilError {
    /// Neither RFC 3339 nor a duration.
    #[error("neither an RFC 3339 time nor a duration: {0}")]
    Unreadable(#[from] crate::clock::DurationError),
    /// A duration too long to add to now.
    #[error("{0:?} is too far")]
    TooFar(String),
    /// Not after now.
    #[error("{0:?} is not in the future")]
    Past(String),
}

/// A `--scope` that cannot be read ([`super::ScopeRequest::parse`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScopeError {
    /// Not one of the scope forms.
    #[error(
        "scope {0:?} is not one of once, session, until:TIME (RFC 3339 or 30m/8h/2d), pattern:GLOB, class:max_amount=N;domain=D"
    )]
    Unknown(String),
    /// `until:` with a bad time.
    #[error(transparent)]
    Until(#[from] UntilError),
    /// `pattern:` with a bad pattern.
    #[error(transparent)]
    Pattern(#[from] PatternError),
    /// `class:` with bad constraints.
    #[error(transparent)]
    Narrowing(#[from] NarrowingError),
}

/// Why no grant is made for an approval ([`super::prepare`]): a sentence the principal can act
/// on (the packet is not a tool call, its class is human-only, the pattern does not cover the
/// call itself, …). The approval itself is not refused by it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct GrantRefused(pub String);

impl From<String> for GrantRefused {
    fn from(sentence: String) -> Self {
        GrantRefused(sentence)
    }
}
