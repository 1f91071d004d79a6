//! The default `--name` of a server: what its command line says the server is called.

use std::ffi::OsString;

/// Launchers whose first non-option argument names the server (`npx -y PACKAGE`).
const RUNNERS: &[&str] = &["npx", "bunx", "pnpx", "uvx"];
/// Launchers with a subcommand before the package (`npm exec PACKAGE`, `pipx run PACKAGE`).
const SUB_RUNNERS: &[(&str, &str)] = &[("npm", "exec"), ("pnpm", "dlx"), ("yarn", "dlx"), ("pipx", "run")];
/// Runner options that take a value in the next argument.
const VALUE_OPTIONS: &[&str] = &["-p", "--package", "--from", "--with", "--python", "--spec"];

/// The default `--name` for a server command line:
///
/// 1. the program is COMMAND's base name; for a package runner (`npx`, `bunx`, `pnpx`, `uvx`,
///    `npm exec`, `pnpm dlx`, `yarn dlx`, `pipx run`) it is the runner's first argument that is
///    not an option (skipping the value of `-p`/`--package`/`--from`/…), and for
///    `python[3] -m MODULE` it is MODULE;
/// 2. its last `/` segment, without a version (`@1.2.3`, `==1.2.3`) or a script extension
///    (`.js`, `.mjs`, `.cjs`, `.ts`, `.py`);
/// 3. without a leading `mcp-server-` (or `mcp_server_`), else without a leading `server-`;
/// 4. every character other than a letter, a digit, `.`, `_` and `-` becomes `-` (leading dots
///    are dropped), and an empty result is `server`.
///
/// So `mcp-server-filesystem` → `filesystem`, `npx -y @modelcontextprotocol/server-filesystem DIR`
/// → `filesystem`, `uvx mcp-server-git==2026.10.19` → `git`, `python -m mcp_server_git` → `git`.
#[must_use]
pub fn default_name(command: &[OsString]) -> String {
    let words: Vec<String> = command.iter().map(|w| w.to_string_lossy().into_owned()).collect();
    let base = |w: &str| w.rsplit('/').next().unwrap_or(w).to_owned();
    let program = words.first().map(|w| base(w)).unwrap_or_default();
    let first_operand = |rest: &[String]| -> Option<String> {
        let mut it = rest.iter();
        while let Some(w) = it.next() {
            if VALUE_OPTIONS.contains(&w.as_str()) {
                it.next();
            } else if !w.starts_with('-') {
                return Some(w.clone());
            }
        }
        None
    };
    let target = if RUNNERS.contains(&program.as_str()) {
        first_operand(&words[1..])
    } else if SUB_RUNNERS.iter().any(|(p, s)| *p == program && words.get(1).map(String::as_str) == Some(*s)) {
        first_operand(&words[2..])
    } else if program.starts_with("python") {
        words.iter().position(|w| w == "-m").and_then(|i| words.get(i + 1).cloned())
    } else {
        None
    };
    let mut name = base(&target.unwrap_or(program));
    // A version: `@scope/pkg@1.2` (its scope's `@` is gone with the segment), `pkg==1.2`.
    if let Some(i) = name.char_indices().skip(1).find(|&(_, c)| c == '@').map(|(i, _)| i) {
        name.truncate(i);
    }
    for sep in ["==", ">=", "<=", "~="] {
        if let Some(i) = name.find(sep) {
            name.truncate(i);
        }
    }
    for ext in [".js", ".mjs", ".cjs", ".ts", ".py"] {
        if let Some(stem) = name.strip_suffix(ext) {
            name = stem.to_owned();
            break;
        }
    }
    let name = ["mcp-server-", "mcp_server_", "server-"]
        .iter()
        .find_map(|p| name.strip_prefix(p).filter(|rest| !rest.is_empty()))
        .unwrap_or(&name)
        .to_owned();
    sanitized(&name)
}

/// The default `--name` for a remote server (`--url`): the presets' name for a host they know
/// ([`warrant_protocol::calls::hosted_preset`]: `api.githubcopilot.com` → `github`), else its host without a leading `mcp.`, `api.` or
/// `www.`, up to the next dot (`https://mcp.notion.com/mcp` → `notion`), sanitized as
/// [`default_name`]'s; an IP address or `localhost` is `server`.
#[must_use]
pub fn default_name_for_url(url: &str) -> String {
    if let Some(name) = warrant_protocol::calls::hosted_preset(url) {
        return name.to_owned();
    }
    let host = url.split_once("://").map_or(url, |(_, rest)| rest);
    let host = host.split(['/', '?', '#']).next().unwrap_or("");
    let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
    let host = host.split(':').next().unwrap_or("").to_ascii_lowercase();
    if host == "localhost" || host.starts_with('[') || host.parse::<std::net::Ipv4Addr>().is_ok() {
        return "server".to_owned();
    }
    let host = ["mcp.", "api.", "www."].iter().find_map(|p| host.strip_prefix(p)).unwrap_or(&host);
    sanitized(host.split('.').next().unwrap_or(""))
}

/// Every character other than a letter, a digit, `.`, `_` and `-` becomes `-`, leading dots are
/// dropped, 64 characters at most; `server` when nothing is left.
fn sanitized(name: &str) -> String {
    let name: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '-' })
        .collect::<String>()
        .trim_start_matches('.')
        .replace("..", ".")
        .chars()
        .take(64)
        .collect();
    if name.is_empty() { "server".to_owned() } else { name }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(words: &[&str]) -> String {
        default_name(&words.iter().map(OsString::from).collect::<Vec<_>>())
    }

    #[test]
    fn default_names_follow_the_documented_rule() {
        assert_eq!(name(&["mcp-server-filesystem", "/tmp"]), "filesystem");
        assert_eq!(name(&["/usr/local/bin/mcp-server-git", "--repository", "."]), "git");
        assert_eq!(name(&["npx", "-y", "@modelcontextprotocol/server-filesystem", "/tmp"]), "filesystem");
        assert_eq!(name(&["npx", "-y", "@modelcontextprotocol/server-filesystem@2026.8.31", "/tmp"]), "filesystem");
        assert_eq!(name(&["uvx", "mcp-server-git==2026.10.19"]), "git");
        assert_eq!(name(&["uvx", "--from", "mcp-server-git", "mcp-server-git"]), "git");
        assert_eq!(name(&["python3", "-m", "mcp_server_git"]), "git");
        assert_eq!(name(&["npm", "exec", "--yes", "server-memory"]), "memory");
        assert_eq!(name(&["node", "build/index.js"]), "node");
        assert_eq!(name(&["my server"]), "my-server");
        assert_eq!(name(&["npx"]), "npx");
        assert_eq!(name(&["..."]), "server");
        assert_eq!(name(&["mcp-server-"]), "mcp-server-");
        assert_eq!(default_name_for_url("https://mcp.linear.app/mcp"), "linear");
        assert_eq!(default_name_for_url("https://api.githubcopilot.com/mcp/"), "github", "a preset's host");
        assert_eq!(default_name_for_url("https://mcp.notion.com/mcp"), "notion");
        assert_eq!(default_name_for_url("https://user:pw@mcp.example.com:8443/mcp?x=1"), "example");
        assert_eq!(default_name_for_url("http://127.0.0.1:3001/mcp"), "server");
        assert_eq!(default_name_for_url("http://localhost/mcp"), "server");
        for n in ["filesystem", "git", "my-server", "server"] {
            assert!(warrant_protocol::calls::is_tool_key(&format!("{n}/read_file")));
        }
    }
}
