//! The one glob dialect warrant reads from its users, implemented by `globset` (`docs/cli.md`,
//! "Globs").
//!
//! A [`Glob`] is globset's syntax over a whole name: `*` any run of characters (none included,
//! `/` and `.` too), `?` one character, `[abc]`/`[!abc]`/`[a-z]` one character of (or not of) a
//! set, `{a,b}` either alternative, `\` before a character makes it literal; everything else is
//! literal, and the glob matches the whole name, never a part. It serves the `policy.toml` tool
//! table and `[commands]` rules, `[timeouts]` keys, and the console's `field:value` filters
//! ([`Glob::case_insensitive`]). The Lodestar ladder's rule `tool` (§A4: "`*` is the only
//! wildcard") is the same engine with every other character escaped ([`Glob::star_only`]).
//!
//! A grant's argument glob (`Bash(git push origin feature/*)`) keeps the same `*`, `?` and `**`
//! but stops `*` and `?` at `/`, `:` and white space and never lets them begin an option with
//! `-` ([`crate::grant::glob_matches`]): globset has one separator, `/`, and no way to say "not an
//! option", and without those a grant for `git push origin *` would allow `git push origin
//! --force`.

use std::sync::OnceLock;

/// A compiled glob ([the module's dialect](self)) and the pattern it was read from.
///
/// The matcher (a regex) is compiled the first time a name with the glob's literal prefix is
/// matched: a hook process answers one call, and compiling every rule of the tables up front
/// cost it milliseconds. Two globs are equal when they read the same text the same way.
#[derive(Debug, Clone)]
pub struct Glob {
    source: String,
    /// The text globset reads (escaped or lowered from `source`).
    pattern: String,
    /// The literal text every match starts with (compared without compiling).
    prefix: String,
    /// Names are lowered before they are matched ([`Glob::case_insensitive`]).
    lower: bool,
    /// `pattern` as globset read it: when the glob is made, or for [`Glob::deferred`] when a
    /// name first gets past the prefix (`None`: globset refused it, and the glob matches nothing).
    glob: OnceLock<Option<globset::Glob>>,
    matcher: OnceLock<Option<globset::GlobMatcher>>,
}

/// A pattern that is not a glob: globset's reason (an unclosed `[` or `{`, a dangling `\`, …).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{pattern:?} is not a glob: {reason}")]
pub struct GlobError {
    /// The pattern as written.
    pub pattern: String,
    /// globset's account of what is wrong.
    pub reason: String,
}

impl Glob {
    /// Reads `pattern` in the module's dialect, case-sensitively.
    ///
    /// # Errors
    /// [`GlobError`] when globset cannot read it.
    pub fn new(pattern: &str) -> Result<Self, GlobError> {
        Self::build(pattern, pattern, false)
    }

    /// [`Glob::new`], matching case-insensitively: the pattern and each name are lowered
    /// (Unicode `to_lowercase`, as `É` to `é`; globset's own case folding is ASCII only).
    ///
    /// # Errors
    /// [`GlobError`] when globset cannot read it.
    pub fn case_insensitive(pattern: &str) -> Result<Self, GlobError> {
        Self::build(pattern, &pattern.to_lowercase(), true)
    }

    /// `pattern` with `*` its only wildcard (Lodestar §A4): `?`, `[`, `{`, `\` and every other
    /// character match themselves. Never fails.
    #[must_use]
    pub fn star_only(pattern: &str) -> Self {
        let mut escaped = String::with_capacity(pattern.len() * 2);
        for c in pattern.chars() {
            if c != '*' {
                escaped.push('\\');
            }
            escaped.push(c);
        }
        Self::build(pattern, &escaped, false).expect("an escaped pattern is a glob")
    }

    /// [`Glob::new`] of a pattern known to be a glob (the built-in table of the hosts' tools,
    /// every pattern of which a test reads): globset reads it only once a name gets past its
    /// literal prefix, so a process that matches one tool reads one tool's globs. A pattern
    /// globset refuses after all matches nothing.
    #[must_use]
    pub(crate) fn deferred(pattern: &str) -> Self {
        Self::unread(pattern, pattern, false)
    }

    fn unread(source: &str, pattern: &str, lower: bool) -> Self {
        Self {
            source: source.to_owned(),
            pattern: pattern.to_owned(),
            prefix: literal_prefix(pattern),
            lower,
            glob: OnceLock::new(),
            matcher: OnceLock::new(),
        }
    }

    fn build(source: &str, pattern: &str, lower: bool) -> Result<Self, GlobError> {
        let glob = Self::unread(source, pattern, lower);
        let read =
            read_glob(pattern).map_err(|e| GlobError { pattern: source.to_owned(), reason: e.kind().to_string() })?;
        let _ = glob.glob.set(Some(read));
        Ok(glob)
    }

    /// globset's reading of the pattern (`None` when it refuses it).
    pub(crate) fn globset(&self) -> Option<&globset::Glob> {
        self.glob.get_or_init(|| read_glob(&self.pattern).ok()).as_ref()
    }

    /// Whether the whole of `name` matches.
    #[must_use]
    pub fn is_match(&self, name: &str) -> bool {
        let lowered;
        let name = if self.lower {
            lowered = name.to_lowercase();
            lowered.as_str()
        } else {
            name
        };
        name.starts_with(&self.prefix)
            && self
                .matcher
                .get_or_init(|| self.globset().map(globset::Glob::compile_matcher))
                .as_ref()
                .is_some_and(|m| m.is_match(name))
    }

    /// The pattern as written.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.source
    }
}

/// `pattern` read by globset in the module's dialect.
fn read_glob(pattern: &str) -> Result<globset::Glob, globset::Error> {
    globset::GlobBuilder::new(pattern).literal_separator(false).backslash_escape(true).build()
}

/// The literal text before `pattern`'s first wildcard, escapes undone.
fn literal_prefix(pattern: &str) -> String {
    let mut out = String::new();
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '*' | '?' | '[' | '{' => break,
            '\\' => match chars.next() {
                Some(next) => out.push(next),
                None => break,
            },
            c => out.push(c),
        }
    }
    out
}

impl PartialEq for Glob {
    fn eq(&self, other: &Self) -> bool {
        // The text globset reads too: `star_only("a?")` and `new("a?")` read one text two ways.
        self.source == other.source && self.lower == other.lower && self.pattern == other.pattern
    }
}

impl Eq for Glob {}

impl std::fmt::Display for Glob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.source)
    }
}

impl serde::Serialize for Glob {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.source)
    }
}

/// Whether `key` is written as a glob (has `*`, `?`, `[` or `{`) rather than as a literal name.
#[must_use]
pub fn is_glob(key: &str) -> bool {
    key.contains(['*', '?', '[', '{'])
}

/// How specific a glob is, to rank several that match one name: the number of its characters
/// that are not wildcard syntax.
#[must_use]
pub fn specificity(pattern: &str) -> usize {
    pattern.chars().filter(|c| !matches!(c, '*' | '?' | '[' | ']' | '{' | '}')).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(glob: &str, name: &str) -> bool {
        Glob::new(glob).expect("glob").is_match(name)
    }

    #[test]
    fn the_dialect() {
        assert!(m("filesystem/read_*", "filesystem/read_file"));
        assert!(m("*", "a/b.c") && m("*", ""), "`*` crosses `/` and `.`, and may be empty");
        assert!(!m("filesystem/read_*", "filesystem/write_file"));
        assert!(m("git.?ush", "git.push") && !m("git.?ush", "git.ush"));
        assert!(m("email.{send,draft}", "email.draft") && !m("email.{send,draft}", "email.delete"));
        assert!(m("[ab]x", "bx") && !m("[!ab]x", "bx"));
        assert!(m(r"a\*b", "a*b") && !m(r"a\*b", "axb"), "`\\` makes a wildcard literal");
        assert!(!m("read", "read_file") && !m("file", "read_file"), "the whole name, never a part");
        assert!(!m("Read*", "read_file"), "case matters");
        assert!(Glob::case_insensitive("READ*").expect("glob").is_match("read_file"));
    }

    #[test]
    fn star_only_takes_every_other_character_literally() {
        let g = |p: &str, t: &str| Glob::star_only(p).is_match(t);
        assert!(g("git.*", "git.push") && g("git.*", "git.") && !g("git.*", "git") && !g("git.*", "gitx.push"));
        assert!(g("a?b", "a?b") && !g("a?b", "axb"), "`?` is literal");
        assert!(g("[x]*{y}", "[x]z{y}") && !g("[x]*", "x"), "so are `[` and `{{`");
        assert!(g(r"a\b*", r"a\bc"), "and `\\`");
        assert!(g("*.*.*", "a.b.c") && g("**", "") && g("", "") && !g("", "a"));
    }

    #[test]
    fn a_bad_pattern_is_a_typed_error_and_equality_is_by_pattern() {
        let e = Glob::new("a[b").expect_err("unclosed class");
        assert_eq!(e.pattern, "a[b");
        assert!(matches!(Glob::new("{a,b"), Err(GlobError { .. })));
        assert_eq!(Glob::new("x*").expect("glob"), Glob::new("x*").expect("glob"));
        assert_ne!(Glob::new("x*").expect("glob"), Glob::case_insensitive("x*").expect("glob"));
        assert_ne!(Glob::new("a?").expect("glob"), Glob::star_only("a?"), "one text read two ways");
        assert_eq!(serde_json::to_string(&Glob::star_only("a?*")).expect("json"), r#""a?*""#);
    }

    #[test]
    fn the_prefix_shortcut_never_changes_an_answer() {
        for (p, t) in [(r"a\*b*", "a*bc"), (r"a\*b*", "axbc"), ("ab*", "ab"), ("ab*", "a"), (r"\\x*", r"\xy")] {
            let g = Glob::new(p).expect("glob");
            assert_eq!(g.is_match(t), read_glob(&g.pattern).expect("a glob").compile_matcher().is_match(t), "{p} {t}");
        }
    }

    proptest::proptest! {
        /// A `star_only` glob agrees with the obvious reading of "`*` any run, the rest literal".
        #[test]
        fn star_only_agrees_with_a_plain_reading(p in "[a.*?]{0,6}", t in "[a.?]{0,6}") {
            fn plain(p: &[char], t: &[char]) -> bool {
                match p.split_first() {
                    None => t.is_empty(),
                    Some(('*', rest)) => (0..=t.len()).any(|i| plain(rest, &t[i..])),
                    Some((c, rest)) => t.first() == Some(c) && plain(rest, &t[1..]),
                }
            }
            let (pc, tc): (Vec<char>, Vec<char>) = (p.chars().collect(), t.chars().collect());
            proptest::prop_assert_eq!(Glob::star_only(&p).is_match(&t), plain(&pc, &tc));
        }
    }
}
