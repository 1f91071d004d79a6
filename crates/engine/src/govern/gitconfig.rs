//! What git's configuration makes a "safe" git command run (`docs/integrations.md`, Protected
//! files): `git status` runs `core.fsmonitor`, `git diff` runs `diff.external` and a driver's
//! `textconv`, both run a `filter.<driver>.clean` on modified files (Git LFS's own filter
//! aside). A pager runs only on a terminal, and a command that may start one interactively is
//! held as such (`protocol::interactive`). A git command the tool table calls `safe` is safe only while the configuration git
//! itself reads for it (every level, includes followed: `git config --list --show-origin` in the
//! call's working directory) names no such program, and its command line sets none (`-c`,
//! `--config-env`, `--exec-path`, another `--git-dir` or `-C`, `GIT_*` in its environment).

use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};
use warrant_protocol::calls::{CommandPart, command_line, is_assignment, split_command_line};

/// How long reading git's configuration may take before the call is held instead.
const READ_DEADLINE: Duration = Duration::from_secs(2);

/// Why the git commands in `command` (a tool's command field: a line, or an argv such as
/// `["bash", "-lc", LINE]`), run in `cwd`, could run a program git's configuration or their
/// own command line names, one sentence each (the origin and key); empty when `command` runs
/// no git or its git runs none.
#[must_use]
pub fn hazards(command: &Value, cwd: &Path) -> Vec<String> {
    let Some(line) = command_line(command) else { return Vec::new() };
    let parts: Vec<CommandPart> = split_command_line(&line);
    let gits: Vec<&CommandPart> =
        parts.iter().filter(|p| p.words.as_deref().is_some_and(|w| w == "git" || w.starts_with("git "))).collect();
    if gits.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for part in &gits {
        out.extend(command_line_hazards(&part.text));
    }
    // A directory that does not exist holds no repository: the command cannot run there, and
    // git's other levels are read from `/`.
    let cwd = if cwd.is_dir() { cwd } else { Path::new("/") };
    match read_config(cwd) {
        Ok(entries) => {
            for (origin, key, value) in entries {
                if let Some(why) = key_hazard(&key, value.as_deref()) {
                    let origin = warrant_protocol::text::inert(&origin, 200);
                    out.push(format!("git's configuration runs a program: {key} ({why}) in {origin}"));
                }
            }
        }
        Err(e) => out.push(format!("git's configuration could not be read to check what it runs: {e}")),
    }
    out
}

/// What a git command line sets that git's configuration files do not show.
fn command_line_hazards(text: &str) -> Vec<String> {
    let Some(words) = shlex::split(text) else {
        return vec!["a git command line that cannot be read".into()];
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() && is_assignment(&words[i]) {
        if words[i].starts_with("GIT_") {
            out.push(format!("sets {} for git", words[i].split('=').next().unwrap_or_default()));
        }
        i += 1;
    }
    // The global options before the subcommand.
    for w in words.iter().skip(i + 1).take_while(|w| w.starts_with('-')) {
        let name = w.split('=').next().unwrap_or_default();
        if matches!(name, "-c" | "--config-env" | "--exec-path" | "--git-dir" | "--work-tree" | "-C" | "--namespace")
            || (w.starts_with("-c") && w.len() > 2)
        {
            out.push(format!("git {name} sets what git reads or runs"));
        }
    }
    out
}

/// Why `key` (lower-cased by git for its section and name) with `value` makes git run a
/// program, or `None`.
fn key_hazard(key: &str, value: Option<&str>) -> Option<&'static str> {
    let key = key.to_ascii_lowercase();
    let boolean = |v: Option<&str>| {
        v.is_none_or(|v| {
            matches!(v.to_ascii_lowercase().as_str(), "" | "true" | "false" | "yes" | "no" | "on" | "off" | "0" | "1")
        })
    };
    let (section, rest) = key.split_once('.')?;
    let (sub, name) = match rest.rsplit_once('.') {
        Some((sub, name)) => (Some(sub), name),
        None => (None, rest),
    };
    match (section, sub, name) {
        // `true` is git's own daemon; anything else is a program git runs on `status`.
        ("core", None, "fsmonitor") if !boolean(value) => Some("run by status and diff"),
        ("diff", None, "external") => Some("run by diff"),
        ("diff", Some(_), "textconv" | "command") => Some("run by diff, log and show"),
        // Git LFS's own filter (`git lfs install` writes it) is git's extension, not a program
        // an agent chose.
        ("filter", Some(_), "clean" | "smudge" | "process")
            if !value.is_some_and(|v| {
                v == "git-lfs filter-process" || v.starts_with("git-lfs clean ") || v.starts_with("git-lfs smudge ")
            }) =>
        {
            Some("run on modified files")
        }
        ("gpg", _, "program") => Some("run to show signatures"),
        _ => None,
    }
}

/// `(origin, key, value)` of every setting git reads in `cwd`, as git lists them.
fn read_config(cwd: &Path) -> Result<Vec<(String, String, Option<String>)>, String> {
    let mut child = std::process::Command::new("git")
        .args(["--no-pager", "config", "--list", "--show-origin", "-z"])
        .current_dir(cwd)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env_remove("GIT_CONFIG_PARAMETERS")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("git: {e}"))?;
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if start.elapsed() < READ_DEADLINE => std::thread::sleep(Duration::from_millis(5)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("git config took over {}s", READ_DEADLINE.as_secs()));
            }
            Err(e) => return Err(format!("git: {e}")),
        }
    }
    let out = child.wait_with_output().map_err(|e| format!("git: {e}"))?;
    // Outside a repository git lists the other levels and exits 0; a failure (a configuration
    // git cannot read, say) is not knowing what it runs.
    if !out.status.success() {
        return Err(format!("git config exited with {}", out.status));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut tokens = text.split('\0');
    let mut entries = Vec::new();
    while let (Some(origin), Some(kv)) = (tokens.next(), tokens.next()) {
        let (key, value) = match kv.split_once('\n') {
            Some((k, v)) => (k.to_owned(), Some(v.to_owned())),
            None => (kv.to_owned(), None),
        };
        entries.push((origin.to_owned(), key, value));
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_that_run_programs_are_named_and_booleans_are_not() {
        assert!(key_hazard("core.fsmonitor", Some("touch /tmp/x")).is_some());
        assert!(key_hazard("core.fsmonitor", Some("true")).is_none());
        assert!(key_hazard("diff.external", Some("sh")).is_some());
        assert!(key_hazard("diff.pdf.textconv", Some("pdftotext")).is_some());
        assert!(key_hazard("filter.crypt.clean", Some("sh -c ./x")).is_some());
        assert!(key_hazard("filter.lfs.process", Some("git-lfs filter-process")).is_none());
        assert!(key_hazard("pager.log", Some("less")).is_none(), "a pager runs on a terminal only");
        assert!(key_hazard("user.name", Some("x")).is_none());
        assert!(key_hazard("core.bare", Some("false")).is_none());
    }

    #[test]
    fn a_command_line_that_sets_git_configuration_is_named() {
        assert!(!command_line_hazards("git -c core.fsmonitor=evil status").is_empty());
        assert!(!command_line_hazards("GIT_CONFIG_GLOBAL=/tmp/x git status").is_empty());
        assert!(!command_line_hazards("git --git-dir=/elsewhere/.git status").is_empty());
        assert!(command_line_hazards("git status --short").is_empty());
        assert!(command_line_hazards("git diff -c").is_empty(), "an option of the subcommand");
    }

    #[test]
    fn git_reads_a_repositorys_fsmonitor_and_the_call_is_told_where() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ok = |args: &[&str]| {
            std::process::Command::new("git")
                .args(args)
                .current_dir(dir.path())
                .output()
                .is_ok_and(|o| o.status.success())
        };
        if !ok(&["init", "-q"]) {
            return;
        }
        assert!(hazards(&Value::String("git status".into()), dir.path()).iter().all(|h| !h.contains("fsmonitor")));
        assert!(ok(&["config", "core.fsmonitor", "touch pwned"]));
        let found = hazards(&Value::String("ls && git status".into()), dir.path());
        assert!(found.iter().any(|h| h.contains("core.fsmonitor") && h.contains(".git/config")), "{found:?}");
        assert!(hazards(&Value::String("ls -la".into()), dir.path()).is_empty(), "no git, nothing read");
    }
}
