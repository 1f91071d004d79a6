//! Tool patterns (`Bash(git push origin feature/*)`) and the glob they match arguments with.

use super::PatternError;
#[cfg(doc)]
use super::call_argument;

/// A tool pattern: `Tool` (every call of the tool) or `Tool(GLOB)`, the glob over the call's
/// argument ([`call_argument`], [`glob_matches`]): `*` is any run of characters but `/`, `:` and
/// white space that does not begin a word with `-`, `?` one such character, `**` any run at all;
/// everything else is literal. This is warrant's one glob dialect ([`crate::glob`]) narrowed for
/// command lines and paths, which globset cannot express (it has one separator and no options).
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
    /// [`PatternError`]: an empty or unbalanced pattern, or a tool that is not a tool key.
    pub fn parse(text: &str) -> Result<Self, PatternError> {
        let text = text.trim();
        let (tool, argument) = match text.find('(') {
            None => (text, None),
            Some(open) => {
                let Some(inner) = text[open + 1..].strip_suffix(')') else {
                    return Err(PatternError::Unbalanced(text.to_owned()));
                };
                if inner.is_empty() {
                    return Err(PatternError::EmptyArgument {
                        pattern: text.to_owned(),
                        tool: text[..open].to_owned(),
                    });
                }
                (&text[..open], Some(inner.to_owned()))
            }
        };
        if !crate::calls::is_tool_key(tool) {
            return Err(PatternError::NotATool(tool.to_owned()));
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
