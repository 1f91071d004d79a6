//! Commands that may start an interactive program (`docs/integrations.md`, "What a hook cannot
//! see"): an editor, a pager, a shell, a REPL, a database or remote shell. Once such a program
//! runs, what is typed into it reaches no hook: Codex's `write_stdin` sends no event, so after an
//! approved `git commit` opened vi, `:!touch pwned` ran ungoverned. A command that may start one
//! waits for the principal, with that reason, whatever the tool table or the notebook says.

use crate::calls::{is_assignment, split_command_line};

/// Why the command line `line` may start an interactive program, one sentence per part that
/// may; empty when none may. A part that cannot be read (unbalanced quotes) is not judged here
/// (the tool table's rules already hold it).
#[must_use]
pub fn interactive_parts(line: &str) -> Vec<String> {
    split_command_line(line)
        .iter()
        .filter_map(|part| {
            let words = shlex::split(&part.text)?;
            let words: Vec<&str> = words.iter().map(String::as_str).skip_while(|w| is_assignment(w)).collect();
            let (program, args) = words.split_first()?;
            let name = program.rsplit('/').next().unwrap_or(program);
            let what = starts(name, args)?;
            Some(format!("`{}` may start {what}: what is typed into it is not governed", crate::text::inert(name, 60)))
        })
        .collect()
}

/// What interactive program `name` run with `args` may start, if any.
fn starts(name: &str, args: &[&str]) -> Option<&'static str> {
    let operands: Vec<&str> = args.iter().copied().filter(|a| !a.starts_with('-')).collect();
    let has = |flags: &[&str]| args.iter().any(|a| flags.iter().any(|f| a == f || a.starts_with(&format!("{f}="))));
    match name {
        "vi" | "vim" | "nvim" | "view" | "vimdiff" | "nano" | "pico" | "emacs" | "ed" | "ex" | "micro" | "joe"
        | "mcedit" => Some("an editor"),
        "less" | "more" | "most" | "man" | "info" => Some("a pager"),
        "top" | "htop" | "watch" | "tmux" | "screen" | "tig" | "lazygit" => Some("a full-screen program"),
        "bash" | "sh" | "zsh" | "dash" | "fish" | "ksh" | "tcsh" | "csh" => {
            (!has(&["-c"]) && operands.is_empty()).then_some("a shell")
        }
        "python" | "python3" | "node" | "ruby" | "irb" | "ipython" | "lua" | "julia" | "R" | "ghci" | "perl"
        | "php" | "deno" | "bun" => {
            (operands.is_empty() && !has(&["-c", "-e", "--eval", "-m", "-p", "--print", "-r"])).then_some("a REPL")
        }
        "psql" | "mysql" | "sqlite3" | "redis-cli" | "mongo" | "mongosh" => {
            let command = has(&["-c", "--command", "-e", "--execute", "-f", "--file"]);
            let sqlite_sql = name == "sqlite3" && operands.len() >= 2;
            let redis_cmd = name == "redis-cli" && !operands.is_empty();
            (!command && !sqlite_sql && !redis_cmd).then_some("a database shell")
        }
        "ssh" => (operands.len() <= 1).then_some("a remote shell"),
        "git" => git_starts(args),
        _ => None,
    }
}

/// What a git subcommand with `args` may start: an editor for a message or a plan it is not
/// given, or an interactive selection.
fn git_starts(args: &[&str]) -> Option<&'static str> {
    // The subcommand: the first word that is not a global option (or its value).
    let mut i = 0;
    while i < args.len() && args[i].starts_with('-') {
        i += if matches!(args[i], "-C" | "-c" | "--git-dir" | "--work-tree" | "--namespace") { 2 } else { 1 };
    }
    let (sub, rest) = (args.get(i)?, args.get(i + 1..).unwrap_or_default());
    let has = |flags: &[&str]| {
        rest.iter().any(|a| {
            flags.iter().any(|f| a == f || (f.starts_with("--") && a.starts_with(&format!("{f}="))))
                || (a.starts_with('-')
                    && !a.starts_with("--")
                    && flags.iter().any(|f| f.len() == 2 && a[1..].contains(&f[1..])))
        })
    };
    match *sub {
        "commit" => (!has(&["-m", "--message", "-F", "--file", "-C", "--reuse-message", "--no-edit", "--fixup"]))
            .then_some("an editor for the commit message"),
        "tag" => (has(&["-a", "--annotate", "-s", "--sign"]) && !has(&["-m", "--message", "-F", "--file"]))
            .then_some("an editor for the tag message"),
        "merge" | "pull" | "revert" | "cherry-pick" => {
            (has(&["-e", "--edit"]) && !has(&["--no-edit"])).then_some("an editor for the message")
        }
        "rebase" => has(&["-i", "--interactive", "--edit-todo"]).then_some("an editor for the plan"),
        "add" | "checkout" | "reset" | "restore" | "stash" => {
            has(&["-p", "--patch", "-i", "--interactive"]).then_some("an interactive selection")
        }
        "config" => has(&["-e", "--edit"]).then_some("an editor"),
        "notes" | "difftool" | "mergetool" | "citool" | "gui" => Some("an editor or a tool"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn editors_pagers_shells_and_repls_are_named_and_their_scripted_forms_are_not() {
        for line in [
            "git commit --allow-empty",
            "git commit --amend",
            "vim notes.md",
            "cd x && less log.txt",
            "bash",
            "python3",
            "psql -d shop",
            "ssh build01",
            "git rebase -i main",
            "git add -p",
            "EDITOR=vi git tag -a v1",
        ] {
            assert!(!interactive_parts(line).is_empty(), "{line}");
        }
        for line in [
            "git commit -m 'fix'",
            "git commit -am fix",
            "git commit --no-edit --amend",
            "git status",
            "python3 script.py",
            "bash -c 'ls'",
            "psql -c 'select 1'",
            "ssh build01 uptime",
            "cat notes.md | grep x",
            "sqlite3 db.sqlite 'select 1'",
        ] {
            assert!(interactive_parts(line).is_empty(), "{line}: {:?}", interactive_parts(line));
        }
    }
}
