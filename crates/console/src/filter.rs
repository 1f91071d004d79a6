//! The list filter's language, parsed by a pure function ([`Filter::parse`]) and matched without
//! I/O: terms separated by spaces, all of which must hold.
//!
//! - a bare word or a `"quoted phrase"` matches case-insensitively anywhere in the row's shown
//!   text (for a packet: its id, agent, action class and summary);
//! - `field:value` matches one field: `agent`, `class`, `risk`, `state`, `tool`, `notebook`, `id`
//!   (the value may be quoted: `agent:"agent scribe"`). Without `*`, `?`, `[` or `{` the value
//!   matches anywhere in the field, case-insensitively; with them it is a glob over the whole
//!   field, case-insensitively, in warrant's one dialect ([`warrant_protocol::glob`]:
//!   `class:email.*`, `agent:?gent-scribe`, `class:email.{send,draft}`);
//! - `-term` negates a term;
//! - an unknown field (`colour:red`) or a value that is not a glob (`class:[email`) is an error:
//!   the filter line says so and nothing matches.
//!   A word with a colon that is not a field (`https://…`) is searched for when quoted.
//!
//! A field with no value yet (`agent:` while typing) is not a term. A list whose rows have no
//! such field (the invalid files have no agent) ignores the term.

use std::borrow::Cow;
use warrant_protocol::glob::{Glob, GlobError, is_glob};

/// A field a term can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Field {
    /// The agent id.
    Agent,
    /// The action class, as the packet names it.
    Class,
    /// The class's risk as warrant's policies define it (`low` … `critical`).
    Risk,
    /// The state shown: the composed verdict (`review_required`, shown `review`, …).
    State,
    /// `governance.tool`.
    Tool,
    /// `governance.notebook`.
    Notebook,
    /// The packet id.
    Id,
}

impl Field {
    /// Every field, in the order the documentation lists them.
    pub const ALL: [Field; 7] =
        [Field::Agent, Field::Class, Field::Risk, Field::State, Field::Tool, Field::Notebook, Field::Id];

    /// The name typed before the colon.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Field::Agent => "agent",
            Field::Class => "class",
            Field::Risk => "risk",
            Field::State => "state",
            Field::Tool => "tool",
            Field::Notebook => "notebook",
            Field::Id => "id",
        }
    }

    fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.as_str().eq_ignore_ascii_case(name))
    }
}

/// What one term looks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Matcher {
    /// Anywhere in the row's text (lowered).
    Text(String),
    /// In one field: a substring (lowered) without wildcards, else a glob over the whole field.
    Field(Field, Pattern),
}

/// A field's value pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pattern {
    /// Anywhere in the field (lowered).
    Contains(String),
    /// The whole field, case-insensitively ([`warrant_protocol::glob`]).
    Glob(Box<Glob>),
}

impl Pattern {
    fn new(value: &str) -> Result<Self, GlobError> {
        if is_glob(value) {
            Ok(Pattern::Glob(Box::new(Glob::case_insensitive(value)?)))
        } else {
            Ok(Pattern::Contains(value.to_lowercase()))
        }
    }

    /// Whether `value` matches, case-insensitively.
    #[must_use]
    pub fn matches(&self, value: &str) -> bool {
        match self {
            Pattern::Contains(n) => super::app::contains_folded(value, n),
            Pattern::Glob(g) => g.is_match(value),
        }
    }
}

/// One term: what it matches, and whether it is negated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Term {
    /// `-term`.
    pub negated: bool,
    /// What it looks for.
    pub matcher: Matcher,
}

/// A parsed filter: its terms (all must hold), or the errors that make it match nothing.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Filter {
    /// The terms, in the order typed.
    pub terms: Vec<Term>,
    /// What is wrong with the text (unknown fields); when there is anything, nothing matches.
    pub errors: Vec<String>,
}

impl Filter {
    /// Parses filter text. Never fails and never panics: what cannot be a term is an error.
    #[must_use]
    pub fn parse(text: &str) -> Self {
        let mut out = Filter::default();
        for (raw, quoted_from) in tokens(text) {
            let (negated, body) = match raw.strip_prefix('-') {
                // `"-x"` is the text `-x`, `-"x"` the negated text `x`.
                Some(rest) if !rest.is_empty() && quoted_from != Some(0) => (true, rest),
                _ => (false, raw.as_str()),
            };
            // A field's name is letters before a colon that is outside quotes.
            let colon = body.find(':').filter(|&i| quoted_from.is_none_or(|q| i + usize::from(negated) < q));
            let matcher = match colon {
                Some(i) if i > 0 && body[..i].chars().all(|c| c.is_ascii_alphabetic()) => {
                    let (name, value) = (&body[..i], &body[i + 1..]);
                    let Some(field) = Field::parse(name) else {
                        out.errors.push(format!(
                            "unknown field {name}: (fields: {})",
                            Field::ALL.map(Field::as_str).join(" ")
                        ));
                        continue;
                    };
                    if value.is_empty() {
                        // Still being typed.
                        continue;
                    }
                    match Pattern::new(value) {
                        Ok(p) => Matcher::Field(field, p),
                        Err(e) => {
                            out.errors.push(e.to_string());
                            continue;
                        }
                    }
                }
                _ => Matcher::Text(body.to_lowercase()),
            };
            out.terms.push(Term { negated, matcher });
        }
        out
    }

    /// No terms and no errors: everything matches.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty() && self.errors.is_empty()
    }

    /// The first error, for the filter line.
    #[must_use]
    pub fn error(&self) -> Option<&str> {
        self.errors.first().map(String::as_str)
    }

    /// Whether any term names `field`.
    #[must_use]
    pub fn uses(&self, field: Field) -> bool {
        self.terms.iter().any(|t| matches!(t.matcher, Matcher::Field(f, _) if f == field))
    }

    /// The filter without the terms naming `field`, and those terms alone (errors go with the
    /// first). A packet's state comes from the assessment, which changes without the packet: its
    /// terms are matched afresh while the others' answers are kept.
    #[must_use]
    pub fn split_off(&self, field: Field) -> (Filter, Filter) {
        let (with, without): (Vec<Term>, Vec<Term>) =
            self.terms.iter().cloned().partition(|t| matches!(t.matcher, Matcher::Field(f, _) if f == field));
        (Filter { terms: without, errors: self.errors.clone() }, Filter { terms: with, errors: Vec::new() })
    }

    /// Whether a row matches: every term holds. `text` is the row's shown text; `field` gives a
    /// field's value, `None` when the row has no such field (the term is ignored) and an empty
    /// value when it has the field but it is unset.
    pub fn matches<'a>(&self, text: &[&str], field: impl Fn(Field) -> Option<Cow<'a, str>>) -> bool {
        if !self.errors.is_empty() {
            return false;
        }
        self.terms.iter().all(|t| {
            let hit = match &t.matcher {
                Matcher::Text(n) => text.iter().any(|h| super::app::contains_folded(h, n)),
                Matcher::Field(f, p) => match field(*f) {
                    Some(v) if *f == Field::State => p.matches(&v) || shown_state(&v).is_some_and(|s| p.matches(s)),
                    Some(v) => p.matches(&v),
                    None => return true,
                },
            };
            hit != t.negated
        })
    }
}

/// The word the pending list shows for a state (`review` for `review_required`), which a
/// `state:` term also matches.
fn shown_state(canonical: &str) -> Option<&'static str> {
    Some(match canonical {
        "allowed" => "gate: allow",
        "allowed_with_constraints" => "gate: limits",
        "review_required" => "review",
        "human_only" => "human only",
        _ => return None,
    })
}

/// Splits on whitespace outside double quotes; quotes group and are removed. Each token comes
/// with the byte offset in it where its first quoted part starts, if any (a colon after it is
/// text, not a field separator). An unclosed quote runs to the end.
fn tokens(text: &str) -> Vec<(String, Option<usize>)> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted_from = None;
    let mut in_quotes = false;
    let mut started = false;
    for c in text.chars() {
        match c {
            '"' => {
                in_quotes = !in_quotes;
                started = true;
                quoted_from.get_or_insert(cur.len());
            }
            c if c.is_whitespace() && !in_quotes => {
                if started {
                    out.push((std::mem::take(&mut cur), quoted_from.take()));
                    started = false;
                }
            }
            c => {
                cur.push(c);
                started = true;
            }
        }
    }
    if started {
        out.push((cur, quoted_from));
    }
    // `""` alone is no term.
    out.retain(|(t, _)| !t.is_empty());
    out
}

/// How the pending list is ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortKey {
    /// Newest first, as scanned.
    #[default]
    Age,
    /// Highest risk first (the class's risk in warrant's policies), then newest first.
    Risk,
    /// By action class, A to Z, then newest first.
    Class,
    /// By agent, A to Z, then newest first.
    Agent,
}

impl SortKey {
    /// The next key in the cycle age → risk → class → agent → age.
    #[must_use]
    pub fn next(self) -> Self {
        match self {
            SortKey::Age => SortKey::Risk,
            SortKey::Risk => SortKey::Class,
            SortKey::Class => SortKey::Agent,
            SortKey::Agent => SortKey::Age,
        }
    }

    /// Its name in the header.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            SortKey::Age => "age",
            SortKey::Risk => "risk",
            SortKey::Class => "class",
            SortKey::Agent => "agent",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> Term {
        Term { negated: false, matcher: Matcher::Text(s.into()) }
    }

    fn field(f: Field, v: &str) -> Term {
        Term { negated: false, matcher: Matcher::Field(f, Pattern::new(v).expect("a glob")) }
    }

    #[test]
    fn parses_words_phrases_fields_and_negations() {
        let f = Filter::parse(r#"agent:scribe  class:email.* risk:HIGH state:review "Northwind Office" -draft"#);
        assert_eq!(f.errors, Vec::<String>::new());
        assert_eq!(
            f.terms,
            vec![
                field(Field::Agent, "scribe"),
                field(Field::Class, "email.*"),
                field(Field::Risk, "high"),
                field(Field::State, "review"),
                text("northwind office"),
                Term { negated: true, matcher: Matcher::Text("draft".into()) },
            ]
        );
        assert_eq!(Filter::parse("Agent:x").terms, vec![field(Field::Agent, "x")]);
        assert_eq!(Filter::parse(r#"agent:"a b""#).terms, vec![field(Field::Agent, "a b")]);
        assert!(Filter::parse("-tool:shell").terms[0].negated);
        assert!(Filter::parse("").is_empty() && Filter::parse("  \"\"  ").is_empty());
    }

    #[test]
    fn colons_that_name_no_field() {
        // Quoted: searched for as text.
        assert_eq!(Filter::parse(r#""https://x.example""#).terms, vec![text("https://x.example")]);
        // Not letters before the colon: text.
        assert_eq!(Filter::parse("12:30").terms, vec![text("12:30")]);
        assert_eq!(Filter::parse(":x").terms, vec![text(":x")]);
        // Quoted, `-` is text; before the quote, a negation.
        assert_eq!(Filter::parse(r#""-x y""#).terms, vec![text("-x y")]);
        assert_eq!(
            Filter::parse(r#"-"x:y""#).terms,
            vec![Term { negated: true, matcher: Matcher::Text("x:y".into()) }]
        );
        // A bare `-` is a word.
        assert_eq!(Filter::parse("-").terms, vec![text("-")]);
        // Still being typed: no term, no error.
        assert!(Filter::parse("agent:").is_empty());
    }

    #[test]
    fn an_unknown_field_is_an_error_and_matches_nothing() {
        let f = Filter::parse("colour:red scribe");
        assert_eq!(f.error(), Some("unknown field colour: (fields: agent class risk state tool notebook id)"));
        assert!(!f.matches(&["scribe"], |_| Some("red".into())));
        assert!(!Filter::parse("-colour:red").matches(&["anything"], |_| None));
        assert!(!Filter::parse("https://x").matches(&["https://x"], |_| None));
    }

    #[test]
    fn matching() {
        let row = |f: Field| -> Option<Cow<'static, str>> {
            match f {
                Field::Agent => Some("agent-scribe".into()),
                Field::Class => Some("email.send.external".into()),
                Field::Risk => Some("high".into()),
                Field::State => Some("review_required".into()),
                Field::Tool | Field::Notebook => Some("".into()),
                Field::Id => None,
            }
        };
        let text = ["p-quote", "agent-scribe", "email.send.external", "Quote to Northwind"];
        let m = |q: &str| Filter::parse(q).matches(&text, row);
        assert!(m(""));
        assert!(m(r#"agent:scribe class:email.* risk:high state:review "northwind""#));
        assert!(m("class:EMAIL.send.*") && m("class:*.external") && m("class:email"));
        assert!(!m("class:send.*"), "a glob matches the whole field");
        assert!(m("agent:?gent-scribe") && !m("agent:?scribe"));
        assert!(!m("risk:low") && m("-risk:low") && !m("-risk:high"));
        assert!(!m("quote northwind-no"));
        assert!(!m("tool:x") && m("-tool:x") && m("tool:*"), "an unset field is empty");
        assert!(m("id:zzz"), "a field the row lacks is ignored");
        assert!(m("state:review") && m("state:review_*") && m("state:REVIEW") && !m("state:blocked"));
        assert!(!m("state:human"));
        assert!(m("\"quote to\"") && !m("\"quote northwind\""));
    }

    #[test]
    fn field_globs_are_the_one_dialect_case_insensitively() {
        let class = |q: &str, v: &str| Filter::parse(q).matches(&[], |_| Some(Cow::Owned(v.to_owned())));
        assert!(class("class:EMAIL.{send,draft}.*", "email.draft.internal"));
        assert!(!class("class:email.{send,draft}.*", "email.delete.internal"));
        assert!(class("class:[ef]mail.*", "Email.send") && !class("class:[!e]mail.*", "email.send"));
        assert!(class("agent:é*", "ÉTÉ") && !class("agent:?", ""));
        let bad = Filter::parse("class:[email scribe");
        assert!(bad.error().is_some_and(|e| e.contains("not a glob")), "{:?}", bad.error());
        assert!(!bad.matches(&["scribe"], |_| Some("[email".into())), "a bad glob matches nothing");
    }

    #[test]
    fn splitting_off_the_state_terms() {
        let f = Filter::parse("agent:a state:review -state:blocked word");
        let (rest, state) = f.split_off(Field::State);
        assert_eq!(rest.terms.len(), 2);
        assert_eq!(state.terms.len(), 2);
        assert!(f.uses(Field::State) && !rest.uses(Field::State));
        let bad = Filter::parse("nope:x state:review").split_off(Field::State);
        assert!(!bad.0.errors.is_empty() && bad.1.errors.is_empty());
    }

    #[test]
    fn sort_keys_cycle() {
        let mut k = SortKey::default();
        let mut seen = vec![];
        for _ in 0..4 {
            seen.push(k.as_str());
            k = k.next();
        }
        assert_eq!(seen, ["age", "risk", "class", "agent"]);
        assert_eq!(k, SortKey::Age);
    }

    proptest::proptest! {
        // Any text parses without panicking, and matching it against any row does not panic.
        #[test]
        fn parsing_and_matching_never_panic(q in "\\PC{0,40}", v in "\\PC{0,12}") {
            let f = Filter::parse(&q);
            let _ = f.matches(&[v.as_str()], |_| Some(Cow::Borrowed(v.as_str())));
            let _ = f.split_off(Field::State);
        }

        // The same with the language's own characters, densely.
        #[test]
        fn dense_syntax_never_panics(q in "[-\"*?: a-zé\u{130}\u{212a}]{0,30}", v in "[a-z*?é ]{0,8}") {
            let f = Filter::parse(&q);
            let _ = f.matches(&[v.as_str()], |_| Some(Cow::Borrowed(v.as_str())));
            // A filter with an error matches nothing.
            if f.error().is_some() {
                proptest::prop_assert!(!f.matches(&[v.as_str()], |_| Some(Cow::Borrowed(v.as_str()))));
            }
        }

        // A field glob matches the whole field: `x*` is "starts with", `*` everything.
        #[test]
        fn a_field_glob_is_whole_field(a in "[a-c]{1,6}", b in "[a-c]{0,6}") {
            let m = |q: &str| Filter::parse(q).matches(&[], |_| Some(Cow::Borrowed(b.as_str())));
            proptest::prop_assert_eq!(m(&format!("agent:{a}*")), b.starts_with(&a));
            proptest::prop_assert!(m("agent:*"));
        }
    }
}
