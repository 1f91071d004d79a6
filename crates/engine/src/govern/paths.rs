//! The files a tool call names, resolved as the host will resolve them (`docs/integrations.md`,
//! Protected files): against the call's real working directory, `~` expanded, `.`, `..` and
//! `//` normalised, symlinks followed for every component that exists, a glob expanded in its
//! directory. What is matched against the protected set ([`ProtectedPaths`]) is the resolved
//! file, and the path as spelled (normalised) too; a path that cannot be resolved safely counts
//! as protected, so the call waits for the principal.

use std::path::{Component, Path, PathBuf};
use warrant_protocol::calls::ToolCall;
use warrant_protocol::graduation::policy::PolicySet;
use warrant_protocol::protected::{ProtectedPaths, path_words};

/// The most symlinks followed while resolving one path (as Linux's `MAXSYMLINKS`).
const MAX_SYMLINKS: usize = 40;

/// The most matches a glob is expanded to; a larger one cannot be checked and holds the call.
const MAX_GLOB_MATCHES: usize = 10_000;

/// The protected set for calls governed with `config_dir` and `spool`: the built-in rules under
/// the home directory, warrant's configuration directory and the spool (each resolved), and
/// `policy.toml`'s `[protected] paths`.
#[must_use]
pub fn protected_set(policies: &PolicySet, config_dir: &Path, spool: &Path) -> ProtectedPaths {
    let home = std::env::var_os("HOME").map(PathBuf::from).filter(|h| h.is_absolute());
    let home = home.map(|h| resolve(&h, Path::new("/")).unwrap_or(h));
    let mut set = ProtectedPaths::new(home.as_deref().and_then(Path::to_str));
    for (dir, why) in [(config_dir, "warrant's configuration"), (spool, "the spool")] {
        let abs = if dir.is_absolute() {
            dir.to_path_buf()
        } else {
            std::env::current_dir().map(|c| c.join(dir)).unwrap_or_else(|_| dir.to_path_buf())
        };
        for p in [lexical(&abs), resolve(&abs, Path::new("/")).unwrap_or_else(|| lexical(&abs))] {
            if let Some(s) = p.to_str() {
                set.add(s, why);
            }
        }
    }
    for extra in policies.protected_paths() {
        let expanded = expand_home(extra, home.as_deref());
        if let Some(p) = expanded.filter(|p| p.is_absolute()) {
            for q in [lexical(&p), resolve(&p, Path::new("/")).unwrap_or_else(|| lexical(&p))] {
                if let Some(s) = q.to_str() {
                    set.add(s, "policy.toml [protected]");
                }
            }
        }
    }
    set
}

/// The protected files `call` names, each as `<resolved> (spelled <word>)`, and the words that
/// cannot be resolved safely, each as `cannot be resolved before it runs: <word>`. For a command
/// tool (`command_field`), a working directory inside a protected directory is one too.
#[must_use]
pub fn protected_hits(set: &ProtectedPaths, call: &ToolCall, command_field: Option<&str>) -> Vec<String> {
    let cwd = call.workdir.as_deref().or(call.cwd.as_deref()).map(PathBuf::from).filter(|d| d.is_absolute());
    let cwd = cwd.or_else(|| std::env::current_dir().ok());
    let home = set.home().map(Path::new);
    let command = command_field.and_then(|f| call.input.get(f));
    let words = path_words(&call.input, command);
    let mut hits = Vec::new();
    let show = |w: &str| warrant_protocol::text::inert(w, 200);
    for w in &words.unresolvable {
        hits.push(format!("cannot be resolved before it runs: {}", show(w)));
    }
    let Some(cwd) = cwd else {
        if !words.words.is_empty() {
            hits.push("no working directory to resolve the call's paths in".into());
        }
        return hits;
    };
    let real_cwd = resolve(&cwd, Path::new("/")).unwrap_or_else(|| lexical(&cwd));
    if command.is_some()
        && let Some(rule) = real_cwd.to_str().and_then(|c| set.hit(c))
    {
        hits.push(format!("runs in {} ({rule})", show(&real_cwd.to_string_lossy())));
    }
    for w in &words.words {
        let Some(spelled) = expand_home(w, home) else {
            hits.push(format!("cannot be resolved before it runs: {}", show(w)));
            continue;
        };
        let joined = if spelled.is_absolute() { spelled } else { real_cwd.join(spelled) };
        let candidates = if has_glob(w) {
            match expand_glob(&joined) {
                Some(found) => found,
                None => {
                    hits.push(format!("a glob that cannot be expanded safely: {}", show(w)));
                    continue;
                }
            }
        } else {
            vec![joined]
        };
        for c in candidates {
            let as_spelled = lexical(&c);
            let Some(real) = resolve(&c, Path::new("/")) else {
                hits.push(format!("cannot be resolved safely: {}", show(w)));
                continue;
            };
            for p in [&real, &as_spelled] {
                if let Some(rule) = p.to_str().and_then(|s| set.hit(s)) {
                    hits.push(format!("{} ({rule}, spelled {})", show(&real.to_string_lossy()), show(w)));
                    break;
                }
            }
        }
    }
    hits.dedup();
    hits
}

/// `~` and `~/…` with the home directory; `None` for `~user` or without a home.
fn expand_home(word: &str, home: Option<&Path>) -> Option<PathBuf> {
    if word == "~" {
        return home.map(Path::to_path_buf);
    }
    match word.strip_prefix("~/") {
        Some(rest) => home.map(|h| h.join(rest)),
        None if word.starts_with('~') => None,
        None => Some(PathBuf::from(word)),
    }
}

fn has_glob(w: &str) -> bool {
    w.contains(['*', '?', '['])
}

/// The absolute `path` with `.` dropped, `..` taken lexically and repeated separators folded.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

/// The file `path` (absolute, or relative to `base`) names, as the kernel resolves it: each
/// component that exists is followed if it is a symlink (at most `MAX_SYMLINKS`, 40), `..` applies
/// to what the path resolved to so far, and the components after the first that does not exist
/// are appended as they are. `None` when it cannot be resolved (a symlink loop, a component
/// that cannot be read).
#[must_use]
pub fn resolve(path: &Path, base: &Path) -> Option<PathBuf> {
    let mut hops = 0;
    let start = if path.is_absolute() { path.to_path_buf() } else { base.join(path) };
    let mut pending: Vec<std::ffi::OsString> = start
        .components()
        .rev()
        .filter_map(|c| {
            if let Component::Normal(n) = c {
                Some(n.to_os_string())
            } else if matches!(c, Component::ParentDir) {
                Some("..".into())
            } else {
                None
            }
        })
        .collect();
    let mut out = PathBuf::from("/");
    let mut exists = true;
    while let Some(c) = pending.pop() {
        if c == ".." {
            out.pop();
            continue;
        }
        if c == "." {
            continue;
        }
        out.push(&c);
        if !exists {
            continue;
        }
        match std::fs::symlink_metadata(&out) {
            Ok(m) if m.file_type().is_symlink() => {
                hops += 1;
                if hops > MAX_SYMLINKS {
                    return None;
                }
                let target = std::fs::read_link(&out).ok()?;
                out.pop();
                if target.is_absolute() {
                    out = PathBuf::from("/");
                }
                for t in target.components().rev() {
                    match t {
                        Component::Normal(n) => pending.push(n.to_os_string()),
                        Component::ParentDir => pending.push("..".into()),
                        _ => {}
                    }
                }
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => exists = false,
            Err(_) => return None,
        }
    }
    Some(out)
}

/// The files a glob in the last component of `path` matches (its directory resolved, listed);
/// `None` when a directory component has a glob too, the directory cannot be listed, the pattern
/// is not a glob `globset` reads, or it matches more than [`MAX_GLOB_MATCHES`]. A glob that
/// matches nothing stands for itself (the shell runs it as written), so the directory's own
/// protection still applies.
fn expand_glob(path: &Path) -> Option<Vec<PathBuf>> {
    let name = path.file_name()?.to_str()?;
    let dir = path.parent()?;
    if dir.to_str().is_none_or(has_glob) {
        return None;
    }
    let matcher = globset::GlobBuilder::new(name).literal_separator(true).build().ok()?.compile_matcher();
    let real_dir = resolve(dir, Path::new("/"))?;
    let mut found = Vec::new();
    match std::fs::read_dir(&real_dir) {
        Ok(entries) => {
            for e in entries {
                let e = e.ok()?;
                if matcher.is_match(e.file_name()) {
                    found.push(dir.join(e.file_name()));
                    if found.len() > MAX_GLOB_MATCHES {
                        return None;
                    }
                }
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(_) => return None,
    }
    found.push(path.to_path_buf());
    Some(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symlinks_dot_dot_and_missing_tails_resolve_as_the_kernel_does() {
        let t = tempfile::tempdir().expect("tempdir");
        let root = resolve(t.path(), Path::new("/")).expect("resolves");
        std::fs::create_dir_all(root.join("real/sub")).expect("mkdir");
        std::os::unix::fs::symlink(root.join("real/sub"), root.join("link")).expect("symlink");
        assert_eq!(resolve(&root.join("link/../x"), Path::new("/")), Some(root.join("real/x")));
        assert_eq!(resolve(Path::new("./link//./f"), &root), Some(root.join("real/sub/f")));
        assert_eq!(resolve(&root.join("nope/../a"), Path::new("/")), Some(root.join("a")));
        std::os::unix::fs::symlink("loop", root.join("loop")).expect("symlink");
        assert_eq!(resolve(&root.join("loop/x"), Path::new("/")), None);
    }
}
