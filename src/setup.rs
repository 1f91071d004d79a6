//! `warrant setup claude-code|codex`: writes the hook configuration that puts warrant
//! in front of an agent host's tools, idempotently, saying what changed.
//!
//! Both hosts run a hook that fails to start, or outlives its timeout, as a non-blocking error —
//! the call proceeds — so the configuration names this binary by its absolute path and the spool
//! explicitly, and sets the host's timeout 60 s above the hook's own wait.
//!
//! Claude Code reads `hooks` from `settings.json` (the project's `.claude/settings.json`, or the
//! user's `~/.claude/settings.json`); Codex from `hooks.json` beside a configuration layer (the
//! project's `.codex/hooks.json`, or `~/.codex/hooks.json`), in the same shape. Entries whose
//! command runs `warrant hook <host>` are replaced; everything else in the file is kept (its keys
//! re-sorted: the file is rewritten by a JSON library).

use crate::hook::Host;
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};

/// The events warrant answers on every host.
pub const EVENTS: [&str; 3] = ["PreToolUse", "PermissionRequest", "PostToolUse"];

/// The events `host` sends that warrant registers for: [`EVENTS`], and Claude Code's
/// `PostToolUseFailure` (a call that ran and failed: without it, no receipt records the call).
#[must_use]
pub fn events(host: Host) -> &'static [&'static str] {
    match host {
        Host::ClaudeCode => &["PreToolUse", "PermissionRequest", "PostToolUse", "PostToolUseFailure"],
        Host::Codex => &EVENTS,
    }
}

/// What `warrant setup` was asked.
#[derive(Debug, Clone)]
pub struct SetupOptions {
    /// The user's settings instead of the project's.
    pub user: bool,
    /// Print instead of writing.
    pub print: bool,
    /// The project directory (default: the current directory).
    pub dir: Option<PathBuf>,
    /// Seconds the hook waits for the principal.
    pub wait: f64,
    /// The spool the hook governs against (absolute).
    pub spool: PathBuf,
}

/// The file `setup` writes for `host`.
///
/// # Errors
/// No home directory for `--user`; no current directory.
pub fn settings_path(host: Host, opts: &SetupOptions) -> Result<PathBuf, String> {
    let (dir, file) = match host {
        Host::ClaudeCode => (".claude", "settings.json"),
        Host::Codex => (".codex", "hooks.json"),
    };
    let base = if opts.user {
        directories::BaseDirs::new().ok_or("no home directory")?.home_dir().to_owned()
    } else {
        match &opts.dir {
            Some(d) => d.clone(),
            None => std::env::current_dir().map_err(|e| format!("the current directory: {e}"))?,
        }
    };
    Ok(base.join(dir).join(file))
}

/// The command line a hook entry runs (the hosts run it with a shell). It ends in `|| exit 2`:
/// a command that cannot start (the binary moved or removed: the shell's 126 or 127) or that
/// fails any other way blocks the call, where both hosts would read any exit code but 0 and 2 as
/// a non-blocking error and run it (`docs/integrations.md`).
#[must_use]
pub fn hook_command(exe: &Path, host: Host, spool: &Path, wait: f64) -> String {
    let quote = |s: &str| shlex::try_quote(s).map_or_else(|_| format!("'{s}'"), |q| q.into_owned());
    format!(
        "{} --spool {} hook {} --wait {wait} || exit 2",
        quote(&exe.to_string_lossy()),
        quote(&spool.to_string_lossy()),
        host.as_str()
    )
}

/// The program a hook entry runs: `warrant-hook` beside `exe` (the hooks' own binary, which
/// answers an allowed call about 1.5 ms sooner: `docs/performance.md`, Hooks) when it is there,
/// else `exe` itself (`warrant hook` answers the same).
#[must_use]
pub fn hook_binary(exe: &Path) -> std::path::PathBuf {
    let lean = exe.with_file_name("warrant-hook");
    if lean.is_file() { lean } else { exe.to_owned() }
}

/// `settings` with warrant's hook entries for `host` in place of any earlier ones (entries whose
/// command runs `warrant … hook <host>`), everything else kept.
///
/// # Errors
/// A file whose `hooks` (or an event's list) is not the shape the host documents.
pub fn with_hooks(settings: &Value, host: Host, command: &str, timeout: u64) -> Result<Value, String> {
    let mut root = match settings {
        Value::Object(m) => m.clone(),
        Value::Null => Map::new(),
        _ => return Err("the settings file is not a JSON object".into()),
    };
    let hooks = root.entry("hooks").or_insert_with(|| json!({}));
    let Value::Object(hooks) = hooks else { return Err("`hooks` is not an object".into()) };
    let ours = |h: &Value| {
        h.get("command").and_then(Value::as_str).is_some_and(|c| c.contains(&format!(" hook {}", host.as_str())))
    };
    for event in events(host) {
        let list = hooks.entry(*event).or_insert_with(|| json!([]));
        let Value::Array(groups) = list else { return Err(format!("`hooks.{event}` is not a list")) };
        // Drop warrant's earlier entries, and groups left empty by that.
        for g in groups.iter_mut() {
            if let Some(Value::Array(inner)) = g.get_mut("hooks") {
                inner.retain(|h| !ours(h));
            }
        }
        groups.retain(|g| g.get("hooks").and_then(Value::as_array).is_none_or(|a| !a.is_empty()));
        groups.push(json!({
            "matcher": "*",
            "hooks": [{"type": "command", "command": command, "timeout": timeout}],
        }));
    }
    Ok(Value::Object(root))
}

/// Runs `warrant setup`: prints what it wrote (or would write) and returns the exit code.
///
/// # Errors
/// A sentence: unreadable or malformed settings, an unwritable directory.
pub fn setup(host: Host, opts: &SetupOptions) -> Result<u8, String> {
    if !(opts.wait.is_finite() && (1.0..=86_400.0).contains(&opts.wait)) {
        return Err(format!("--wait {}: give a number of seconds from 1 to 86400", opts.wait));
    }
    let exe = hook_binary(&std::env::current_exe().map_err(|e| format!("this program's path: {e}"))?);
    let spool = std::path::absolute(&opts.spool).map_err(|e| format!("{}: {e}", opts.spool.display()))?;
    let command = hook_command(&exe, host, &spool, opts.wait);
    // The host kills a hook at its timeout and then runs the call: the hook's own wait ends first.
    let timeout = opts.wait.ceil() as u64 + 60;
    let path = settings_path(host, opts)?;
    let before = match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| format!("{}: not JSON: {e}", path.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Value::Null,
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let after = with_hooks(&before, host, &command, timeout)?;
    let text = serde_json::to_string_pretty(&after).map_err(|e| e.to_string())? + "\n";
    let trust = "Codex runs a hook only once you have trusted it: open /hooks in Codex and trust warrant's. \
                 An untrusted hook is skipped silently, and a skipped hook looks like an allow.\n\
                 Codex's web_search tool is run by the model provider, where no hook sees it: set \
                 web_search = \"disabled\" in Codex's config.toml to turn it off.";
    if opts.print {
        // stdout is the file alone; the reminder goes beside it.
        print!("{text}");
        if host == Host::Codex {
            eprintln!("{trust}");
        }
        return Ok(0);
    }
    if after == before {
        println!("{}: unchanged (warrant's hooks are already there)", path.display());
    } else {
        let dir = path.parent().ok_or("no parent directory")?;
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        // The file keeps its mode; a new one is the usual 0644.
        let mode = std::fs::metadata(&path)
            .map_or(0o644, |m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o777);
        crate::store::atomic::write_atomic(&path, text.as_bytes(), mode)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        println!("{}: {}", path.display(), if before.is_null() { "created" } else { "updated" });
        for event in events(host) {
            println!("  {event}: {command} (timeout {timeout} s)");
        }
    }
    if host == Host::Codex {
        println!("{trust}");
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hooks_are_added_once_and_other_entries_are_kept() {
        let theirs = json!({
            "model": "x",
            "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "lint"}]}]},
        });
        let once = with_hooks(&theirs, Host::ClaudeCode, "/bin/warrant --spool /s hook claude-code --wait 5", 65)
            .expect("hooks");
        let twice = with_hooks(&once, Host::ClaudeCode, "/bin/warrant --spool /s hook claude-code --wait 5", 65)
            .expect("hooks");
        assert_eq!(once, twice, "idempotent");
        assert_eq!(once["model"], json!("x"));
        let pre = once["hooks"]["PreToolUse"].as_array().expect("list");
        assert_eq!(pre.len(), 2, "theirs kept, ours added: {once}");
        assert_eq!(pre[0]["hooks"][0]["command"], json!("lint"));
        assert_eq!(pre[1]["hooks"][0]["timeout"], json!(65));
        for event in events(Host::ClaudeCode) {
            assert!(once["hooks"][*event].as_array().map(Vec::len).unwrap_or(0) >= 1, "{event}");
        }
        // A new wait replaces the old entry rather than adding a second.
        let changed = with_hooks(&once, Host::ClaudeCode, "/bin/warrant --spool /s hook claude-code --wait 9", 69)
            .expect("hooks");
        assert_eq!(changed["hooks"]["PreToolUse"].as_array().map(Vec::len), Some(2));
        assert!(with_hooks(&json!([1]), Host::Codex, "c", 1).is_err());
        assert!(with_hooks(&json!({"hooks": {"PreToolUse": {}}}), Host::Codex, "c", 1).is_err());
    }
}
