//! The protected files, matched on the file a call's path resolves to, never on its spelling
//! (`docs/integrations.md`, Protected files).
//!
//! Pure: which strings of a call may name a file ([`path_words`]) and whether a resolved,
//! absolute path is protected ([`ProtectedPaths::hit`]). Resolving a spelling to the file it names
//! (the call's working directory, `~`, `.`/`..`, symlinks, a glob's matches) needs the file
//! system and is the surface's (`govern::paths`).
//!
//! The set: warrant's own configuration and spool (added by the surface, which knows where they
//! are), every agent host's hook and MCP configuration, credentials, shell start-up files, git's
//! configuration at every level with `.git/hooks` and `.git/info`, per-directory environment
//! files, and what runs at login (autostart entries, systemd user units). `policy.toml`'s
//! `[protected] paths` adds to it; nothing removes from it.

use serde_json::Value;

/// Files and directories under the home directory that are protected (a trailing `/`: the
/// directory and everything in it).
pub const HOME_RULES: [&str; 52] = [
    // Credentials.
    ".ssh/",
    ".gnupg/",
    ".aws/",
    ".azure/",
    ".kube/",
    ".docker/",
    ".config/gcloud/",
    ".config/gh/",
    ".config/hub",
    ".git-credentials",
    ".netrc",
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    ".pypirc",
    ".pip/",
    ".config/pip/",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".cargo/config",
    ".cargo/config.toml",
    ".gem/credentials",
    ".m2/settings.xml",
    ".terraform.d/",
    // Shell and session start-up files.
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".zlogout",
    ".inputrc",
    ".pam_environment",
    ".xprofile",
    ".xinitrc",
    ".xsessionrc",
    ".config/fish/",
    ".config/environment.d/",
    ".config/autostart/",
    ".config/systemd/",
    ".local/share/systemd/",
    // Git's user configuration.
    ".gitconfig",
    ".config/git/",
    // The agent hosts' settings (hooks, permissions, MCP servers).
    ".claude/",
    ".claude.json",
    ".codex/",
    ".config/Claude/",
    ".cursor/",
    ".config/Code/User/",
];

/// Paths protected wherever they are (in any project): a trailing `/` is a directory and
/// everything in it; a leading `/` matches from the root only.
pub const ANYWHERE_RULES: [&str; 14] = [
    ".git/config",
    ".git/hooks/",
    ".git/info/",
    ".git/modules/",
    ".envrc",
    ".env",
    ".claude/",
    ".codex/",
    ".mcp.json",
    ".cursor/",
    ".vscode/mcp.json",
    ".vscode/settings.json",
    "/etc/gitconfig",
    "/etc/profile.d/",
];

/// The protected set over resolved absolute paths ([`ProtectedPaths::hit`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProtectedPaths {
    /// The home directory, resolved (no trailing `/`), when known.
    home: Option<String>,
    /// Absolute files and directories the surface adds, resolved: `(path, why)`.
    extra: Vec<(String, String)>,
}

impl ProtectedPaths {
    /// The built-in set ([`HOME_RULES`] under `home`, [`ANYWHERE_RULES`]); `home` is the
    /// resolved home directory, `None` when unknown (only the rules that need none apply).
    #[must_use]
    pub fn new(home: Option<&str>) -> Self {
        ProtectedPaths { home: home.map(|h| trim_slash(h).to_owned()), extra: Vec::new() }
    }

    /// The home directory the set was made with (resolved), when known: what `~` stands for.
    #[must_use]
    pub fn home(&self) -> Option<&str> {
        self.home.as_deref()
    }

    /// Adds an absolute, resolved file or directory (everything in it), with the words that say
    /// what it is (`warrant's configuration`). A relative path is ignored: the surface resolves.
    pub fn add(&mut self, path: &str, why: &str) {
        if path.starts_with('/') {
            self.extra.push((trim_slash(path).to_owned(), why.to_owned()));
        }
    }

    /// Whether the resolved, absolute `path` (no `.`/`..` components) is protected, and by what
    /// rule: `Some("~/.ssh/")`. A directory that holds a protected one is not itself
    /// protected (listing `~` is not reading `~/.ssh`).
    #[must_use]
    pub fn hit(&self, path: &str) -> Option<String> {
        let path = trim_slash(path);
        for (p, why) in &self.extra {
            if within(path, p) {
                return Some(format!("{p} ({why})"));
            }
        }
        if let Some(home) = &self.home
            && let Some(rest) = path.strip_prefix(home.as_str()).and_then(|r| r.strip_prefix('/'))
        {
            for rule in HOME_RULES {
                if matches_rule(rest, rule) {
                    return Some(format!("~/{rule}"));
                }
            }
        }
        for rule in ANYWHERE_RULES {
            let hit = if let Some(abs) = rule.strip_prefix('/') {
                matches_rule(path.trim_start_matches('/'), abs)
            } else {
                // The rule's components anywhere in the path.
                let mut found = false;
                let mut at = path;
                while let Some(i) = at.find('/') {
                    at = &at[i + 1..];
                    if matches_rule(at, rule) {
                        found = true;
                        break;
                    }
                }
                found
            };
            if hit {
                return Some(rule.to_owned());
            }
        }
        None
    }
}

/// `path` without a trailing `/` (but `/` stays `/`).
fn trim_slash(path: &str) -> &str {
    let t = path.trim_end_matches('/');
    if t.is_empty() && path.starts_with('/') { "/" } else { t }
}

/// Whether `path` is `dir` or inside it.
fn within(path: &str, dir: &str) -> bool {
    path == dir || dir == "/" || path.strip_prefix(dir).is_some_and(|r| r.starts_with('/'))
}

/// Whether the relative `path` is the rule's file, or (a rule ending in `/`) its directory or
/// inside it.
fn matches_rule(path: &str, rule: &str) -> bool {
    match rule.strip_suffix('/') {
        Some(dir) => within(path, dir),
        None => path == rule,
    }
}

/// The strings of a call that may name a file ([`path_words`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PathWords {
    /// Spellings to resolve against the call's working directory (a glob among them is
    /// expanded by the surface).
    pub words: Vec<String>,
    /// Words that can name a file but cannot be resolved before the call runs (a variable, a
    /// command substitution, unbalanced quotes): each holds the call.
    pub unresolvable: Vec<String>,
}

/// The longest string treated as a possible path (a longer one is content).
pub const MAX_PATH_WORD: usize = 4096;

/// Keys whose string values name files (whatever they look like).
const PATH_KEYS: [&str; 16] = [
    "path",
    "paths",
    "file",
    "file_path",
    "filepath",
    "filePath",
    "notebook_path",
    "filename",
    "source",
    "destination",
    "target",
    "dir",
    "directory",
    "cwd",
    "workdir",
    "repo_path",
];

/// The strings of a call's `input` that may name a file. For a command tool (`command` is the
/// input's command line: a string, or an argv such as `["bash", "-lc", LINE]`), every word of
/// every simple command but the options, with a `--opt=VALUE`'s value, a `VAR=VALUE`'s value and
/// a redirection's target; a word with `$` or `` ` `` is [`PathWords::unresolvable`]. For any
/// other tool, every string (at any depth) under a key that names files (`PATH_KEYS`) and
/// every other string that looks like a path (starts with `/`, `~` or `.`, or has a `/`), of at
/// most [`MAX_PATH_WORD`] bytes and no line break; and in a string of several lines, the file of
/// each patch header (Codex's `apply_patch` grammar, [`patch_files`]).
#[must_use]
pub fn path_words(input: &Value, command: Option<&Value>) -> PathWords {
    let mut out = PathWords::default();
    match command {
        Some(cmd) => command_words(cmd, &mut out),
        None => value_words(input, false, &mut out),
    }
    out.words.sort_unstable();
    out.words.dedup();
    out
}

fn value_words(v: &Value, under_path_key: bool, out: &mut PathWords) {
    match v {
        Value::String(s)
            if s.len() <= MAX_PATH_WORD
                && !s.contains('\n')
                && !s.is_empty()
                && (under_path_key || looks_like_path(s)) =>
        {
            out.words.push(s.clone());
        }
        Value::String(s) if s.contains('\n') => out.words.extend(patch_files(s).map(str::to_owned)),
        Value::Array(a) => a.iter().for_each(|x| value_words(x, under_path_key, out)),
        Value::Object(m) => {
            for (k, x) in m {
                value_words(x, under_path_key || PATH_KEYS.contains(&k.as_str()), out);
            }
        }
        _ => {}
    }
}

/// The files a patch in Codex's `apply_patch` grammar names: the path after each
/// `*** Add File: `, `*** Update File: `, `*** Delete File: ` and `*** Move to: ` line, trimmed.
/// Codex sends the patch as the tool's whole input (`tool_input.command`), so without this a
/// patch to a protected file named no file at all. Paths are relative to the call's working
/// directory, as Codex applies them.
pub fn patch_files(text: &str) -> impl Iterator<Item = &str> {
    const HEADERS: [&str; 4] = ["*** Add File:", "*** Update File:", "*** Delete File:", "*** Move to:"];
    text.lines().filter_map(|line| {
        let line = line.trim_start();
        HEADERS
            .iter()
            .find_map(|h| line.strip_prefix(h))
            .map(str::trim)
            .filter(|p| !p.is_empty() && p.len() <= MAX_PATH_WORD)
    })
}

fn looks_like_path(s: &str) -> bool {
    s.starts_with('/') || s.starts_with('~') || s.starts_with('.') || s.contains('/')
}

fn command_words(cmd: &Value, out: &mut PathWords) {
    let line = match cmd {
        Value::String(s) => s.clone(),
        Value::Array(a) if a.iter().all(Value::is_string) => {
            let words: Vec<&str> = a.iter().filter_map(Value::as_str).collect();
            match crate::calls::shell_line(&words) {
                Some(line) => line.to_owned(),
                None => {
                    // An argv runs as it is: each word is a word.
                    for w in words.iter().skip(1) {
                        word(w, out);
                    }
                    if words.first().is_some_and(|p| p.contains('/')) {
                        out.words.push(words[0].to_owned());
                    }
                    return;
                }
            }
        }
        _ => return,
    };
    for part in crate::calls::split_command_line(&line) {
        // A subshell's or a group's brackets stay in its part's words: they are not the path.
        let Some(words) = shlex::split(&part.text) else {
            out.unresolvable.push(part.text.trim().to_owned());
            continue;
        };
        let words: Vec<&str> =
            words.iter().map(|w| w.trim_start_matches(['(', '{']).trim_end_matches([')', '}'])).collect();
        let mut program_seen = false;
        let mut target_next = false;
        for w in words.into_iter().filter(|w| !w.is_empty()) {
            // A redirection, wherever it stands (`&>` also ends a part where the line splits at
            // `&`): its target is a path, joined (`>f`) or the next word (`> f`).
            let op = w.trim_start_matches(|c: char| c.is_ascii_digit() || c == '&');
            if target_next || op.starts_with(['<', '>']) {
                target_next = !target_next && op.chars().all(|c| matches!(c, '<' | '>' | '&' | '|'));
                word(w, out);
                continue;
            }
            if !program_seen && crate::calls::is_assignment(w) {
                if let Some((_, v)) = w.split_once('=') {
                    word(v, out);
                }
                continue;
            }
            if !program_seen {
                program_seen = true;
                // A program named by a path runs that file.
                if w.contains('/') || w.contains('$') || w.contains('`') {
                    word(w, out);
                }
                continue;
            }
            word(w, out);
        }
    }
}

/// One shell word that may name a file.
fn word(w: &str, out: &mut PathWords) {
    if w.contains('$') || w.contains('`') {
        out.unresolvable.push(w.to_owned());
        return;
    }
    // A redirection's target (`>f`, `2>>f`, `&>f`, `<f`): the rest of the word.
    let redirect = w.trim_start_matches(|c: char| c.is_ascii_digit() || c == '&');
    let w = if redirect.starts_with('<') || redirect.starts_with('>') {
        redirect.trim_start_matches(['<', '>', '&', '|'])
    } else if let Some(opt) = w.strip_prefix('-') {
        // `--opt=VALUE`, `-oVALUE` aside: an option names no file on its own.
        match opt.split_once('=') {
            Some((_, v)) => v,
            None => return,
        }
    } else {
        w
    };
    if !w.is_empty() && w.len() <= MAX_PATH_WORD {
        out.words.push(w.to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_resolved_path_is_matched_by_what_it_is() {
        let mut p = ProtectedPaths::new(Some("/home/u"));
        p.add("/home/u/.config/warrant", "warrant's configuration");
        assert!(p.hit("/home/u/.config/warrant/policy.toml").is_some());
        assert!(p.hit("/home/u/.config/warrant").is_some());
        assert!(p.hit("/home/u/.config/warranty").is_none());
        assert!(p.hit("/home/u/.ssh/id_ed25519").is_some());
        assert!(p.hit("/home/u/.ssh").is_some());
        assert!(p.hit("/home/u").is_none());
        assert!(p.hit("/home/u/.zshenv").is_some());
        assert!(p.hit("/home/u/.config/git/config").is_some());
        assert!(p.hit("/srv/p/.git/config").is_some());
        assert!(p.hit("/srv/p/.git/info/attributes").is_some());
        assert!(p.hit("/srv/p/.git/hooks/pre-commit").is_some());
        assert!(p.hit("/srv/p/.git/HEAD").is_none());
        assert!(p.hit("/srv/p/sub/.envrc").is_some());
        assert!(p.hit("/srv/p/.claude/settings.json").is_some());
        assert!(p.hit("/etc/gitconfig").is_some());
        assert!(p.hit("/srv/etc/gitconfig").is_none());
        assert!(p.hit("/srv/p/notes.md").is_none());
    }

    #[test]
    fn a_patch_names_the_files_of_its_headers() {
        let patch = "*** Begin Patch\n*** Update File: ../config/policy.toml\n*** Move to: b.txt\n@@\n-a\n+*** Add File: not/a/header\n*** Delete File:  /x/y \n*** Add File: \n*** End Patch\n";
        let w = path_words(&json!({"command": patch}), None);
        assert_eq!(w.words, ["../config/policy.toml", "/x/y", "b.txt"], "a `+` line is content, not a header");
    }

    #[test]
    fn the_words_of_a_command_that_can_name_files() {
        let w = path_words(&json!({}), Some(&json!("cat ./a.txt > out && FOO=/x ls -l --color=auto ~/b; echo $HOME")));
        assert_eq!(w.words, ["./a.txt", "/x", "auto", "out", "~/b"]);
        assert_eq!(w.unresolvable, ["$HOME"]);
        let w = path_words(&json!({}), Some(&json!(["bash", "-lc", "cat `which x` 2>err"])));
        assert_eq!(w.words, ["err"]);
        assert_eq!(w.unresolvable, ["`which", "x`"]);
        let w = path_words(&json!({}), Some(&json!("cat x &>.zshenv; (cd sub && cat y) 2> ../e; ls &> z")));
        assert_eq!(w.words, ["../e", ".zshenv", "sub", "x", "y", "z"]);
        let w = path_words(&json!({}), Some(&json!("echo 'unbalanced")));
        assert_eq!(w.unresolvable.len(), 1);
    }

    #[test]
    fn the_strings_of_a_tool_input_that_can_name_files() {
        let w = path_words(
            &json!({"file_path": "notes.md", "content": "see ~/.ssh/id\nand more", "edits": [{"path": "a"}], "q": "x/y"}),
            None,
        );
        assert_eq!(w.words, ["a", "notes.md", "x/y"]);
    }
}
