//! `warrant setup HOST --mcp`: puts every stdio MCP server a host has configured behind
//! `warrant mcp-gateway`, keeping its command, arguments and environment (issue 33, §4).
//!
//! Where each host keeps its servers ([`config_path`]):
//!
//! | Host | Project | User | Key |
//! | --- | --- | --- | --- |
//! | Claude Code | `.mcp.json` | `~/.claude.json` | `mcpServers` |
//! | Codex | `.codex/config.toml` | `~/.codex/config.toml` | `[mcp_servers.NAME]` |
//! | Claude Desktop | — | `~/.config/Claude/claude_desktop_config.json` | `mcpServers` |
//! | Cursor | `.cursor/mcp.json` | `~/.cursor/mcp.json` | `mcpServers` |
//! | VS Code | `.vscode/mcp.json` | `~/.config/Code/User/mcp.json` | `servers` |
//!
//! A stdio server `{"command": C, "args": A}` becomes `{"command": WARRANT, "args": ["--spool",
//! SPOOL, "mcp-gateway", "--name", NAME, "--", C, A…]}` ([`wrap`]); its `env` (and every other
//! field) is kept, and reaches the server through the gateway, which passes its environment on.
//! A wrapped entry is recognised by its program being this binary ([`runs_this`]: the file it
//! resolves to) and its arguments, so wrapping is idempotent and `--undo` ([`unwrap`]) gives the
//! original back. A server reached by URL is left as it is and said so:
//! the gateway reaches local servers only. Before a file is rewritten its old bytes are kept
//! beside it (`NAME.warrant-backup`). JSON files are rewritten by a JSON library (their keys
//! re-sorted); Codex's TOML is edited in place (`toml_edit`), comments and order kept.

use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// A host whose MCP servers `setup --mcp` wraps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum McpHost {
    /// Claude Code.
    ClaudeCode,
    /// OpenAI Codex CLI.
    Codex,
    /// Claude Desktop.
    ClaudeDesktop,
    /// Cursor.
    Cursor,
    /// VS Code (`mcp.json`).
    Vscode,
}

impl McpHost {
    /// The key holding the servers in a JSON configuration (`mcpServers`, VS Code's `servers`).
    fn json_key(self) -> &'static str {
        if self == McpHost::Vscode { "servers" } else { "mcpServers" }
    }
}

/// What `setup --mcp` does to the servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum McpAction {
    /// Wrap every stdio server not wrapped yet.
    Wrap,
    /// Give every wrapped server its own command back.
    Undo,
    /// Write nothing: list the stdio servers not behind warrant (exit 1 when there is one).
    Check,
}

/// The configuration file holding `host`'s servers: the project's under `dir`, or (`user`) the
/// user's under `home`.
///
/// # Errors
/// Claude Desktop has no project configuration.
pub fn config_path(host: McpHost, user: bool, dir: &Path, home: &Path) -> Result<PathBuf, String> {
    Ok(match (host, user) {
        (McpHost::ClaudeCode, false) => dir.join(".mcp.json"),
        (McpHost::ClaudeCode, true) => home.join(".claude.json"),
        (McpHost::Codex, false) => dir.join(".codex").join("config.toml"),
        (McpHost::Codex, true) => home.join(".codex").join("config.toml"),
        (McpHost::ClaudeDesktop, false) => {
            return Err("Claude Desktop has no project configuration: add --user".into());
        }
        (McpHost::ClaudeDesktop, true) => home.join(".config").join("Claude").join("claude_desktop_config.json"),
        (McpHost::Cursor, false) => dir.join(".cursor").join("mcp.json"),
        (McpHost::Cursor, true) => home.join(".cursor").join("mcp.json"),
        (McpHost::Vscode, false) => dir.join(".vscode").join("mcp.json"),
        (McpHost::Vscode, true) => home.join(".config").join("Code").join("User").join("mcp.json"),
    })
}

/// A server name as a gateway `--name` (tool keys are `NAME/tool`): letters, digits, `_`, `-`
/// and `.` kept, anything else `-`.
#[must_use]
pub fn gateway_name(server: &str) -> String {
    let name: String = server
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') { c } else { '-' })
        .collect();
    if name.trim_matches('-').is_empty() { "server".into() } else { name }
}

/// The servers the built-in tool table has presets for (`assets/host-tools.toml`), by the base
/// name of their package or program, with the name their tool keys use there.
const PRESET_SERVERS: [(&str, &str); 12] = [
    ("github-mcp-server", "github"),
    ("server-github", "github"),
    ("server-filesystem", "filesystem"),
    ("mcp-server-filesystem", "filesystem"),
    ("mcp-server-git", "git"),
    ("mcp_server_git", "git"),
    ("mcp-server-fetch", "fetch"),
    ("mcp_server_fetch", "fetch"),
    ("server-memory", "memory"),
    ("mcp-server-memory", "memory"),
    ("mcp-server-time", "time"),
    ("mcp_server_time", "time"),
];

/// The name the built-in presets give the server (`command`, `args`) when it is one of theirs:
/// a word of its launch whose last `/` segment, without a version (`@1.2`, `==1.2`), is the
/// package (`npx -y @modelcontextprotocol/server-filesystem DIR`, `uvx mcp-server-git==2026.10.19`,
/// `python -m mcp_server_time`).
#[must_use]
pub fn preset_name(command: &str, args: &[String]) -> Option<&'static str> {
    std::iter::once(command).chain(args.iter().map(String::as_str)).find_map(|word| {
        let base = word.rsplit('/').next()?.split(['@', '=']).next()?;
        PRESET_SERVERS.iter().find(|(package, _)| *package == base).map(|(_, name)| *name)
    })
}

/// The launch of the stdio server `name` (`command`, `args`) behind the gateway: `exe` (this
/// binary, absolute) with `--spool SPOOL mcp-gateway --name NAME -- COMMAND ARGS…`, NAME being
/// the presets' name for a server they know ([`preset_name`]), else the configuration's
/// ([`gateway_name`]).
#[must_use]
pub fn wrap(name: &str, command: &str, args: &[String], exe: &Path, spool: &Path) -> (String, Vec<String>) {
    let name = preset_name(command, args).map_or_else(|| gateway_name(name), str::to_owned);
    let mut wrapped = vec![
        "--spool".to_owned(),
        spool.display().to_string(),
        "mcp-gateway".to_owned(),
        "--name".to_owned(),
        name,
        "--".to_owned(),
        command.to_owned(),
    ];
    wrapped.extend(args.iter().cloned());
    (exe.display().to_string(), wrapped)
}

/// The server's own launch when (`command`, `args`) has the shape of a wrapped one ([`wrap`]): a
/// program named `warrant` running `mcp-gateway` with a `--` after it; `None` otherwise. Whether
/// that program is this warrant is [`runs_this`]'s to say.
#[must_use]
pub fn unwrap(command: &str, args: &[String]) -> Option<(String, Vec<String>)> {
    if Path::new(command).file_name().and_then(|n| n.to_str()) != Some("warrant") {
        return None;
    }
    let gateway = args.iter().position(|a| a == "mcp-gateway")?;
    let dash = gateway + 1 + args[gateway + 1..].iter().position(|a| a == "--")?;
    let (server, rest) = args[dash + 1..].split_first()?;
    Some((server.clone(), rest.to_vec()))
}

/// Whether the program `command` of a launch is this binary `exe`: the same file once resolved
/// (a bare name through `PATH`, symlinks followed), or the very path `exe` names. A program
/// merely named `warrant` (another install, or anything called so) is not this warrant.
#[must_use]
pub fn runs_this(command: &str, exe: &Path) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    if Path::new(command) == exe {
        return true;
    }
    let resolved = if command.contains('/') {
        Some(PathBuf::from(command))
    } else {
        std::env::var_os("PATH").and_then(|p| std::env::split_paths(&p).map(|d| d.join(command)).find(|f| f.is_file()))
    };
    let id = |p: &Path| std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()));
    resolved.and_then(|r| id(&r)).is_some_and(|r| id(exe) == Some(r))
}

/// What happened to one server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The server's name in the configuration.
    pub name: String,
    /// Its launch before, as one line (or its URL).
    pub before: String,
    /// Its launch after, or why it is left as it is.
    pub after: Result<String, String>,
    /// A server the gateway can govern (a local one, or one reached by Streamable HTTP); `false`
    /// for one it cannot (the SSE transport, a Codex URL server).
    pub governable: bool,
}

fn line(command: &str, args: &[String]) -> String {
    std::iter::once(command).chain(args.iter().map(String::as_str)).collect::<Vec<_>>().join(" ")
}

/// What `action` makes of the stdio server `name` (`command`, `args`): its new launch, if it
/// changes, with the change (or, for `Check`, a server not behind this warrant) added to
/// `changes`. A launch counts as wrapped only when its program is this binary ([`runs_this`]);
/// one behind another program named `warrant` is wrapped again, around its own server, by
/// `Wrap`, and reported by `Check`.
fn decide(
    action: McpAction,
    name: &str,
    command: &str,
    args: &[String],
    exe: &Path,
    spool: &Path,
    changes: &mut Vec<Change>,
) -> Option<(String, Vec<String>)> {
    let wrapped = unwrap(command, args);
    let ours = wrapped.is_some() && runs_this(command, exe);
    let next = match (action, wrapped) {
        (McpAction::Wrap, _) if ours => return None,
        (McpAction::Wrap, Some((own, own_args))) => wrap(name, &own, &own_args, exe, spool),
        (McpAction::Wrap, None) => wrap(name, command, args, exe, spool),
        (McpAction::Undo, Some(own)) => own,
        (McpAction::Check, wrapped) if !ours => {
            let why = if wrapped.is_some() { "behind another program named warrant" } else { "not behind warrant" };
            changes.push(Change {
                name: name.to_owned(),
                before: line(command, args),
                after: Err(why.into()),
                governable: true,
            });
            return None;
        }
        _ => return None,
    };
    changes.push(Change {
        name: name.to_owned(),
        before: line(command, args),
        after: Ok(line(&next.0, &next.1)),
        governable: true,
    });
    Some(next)
}

/// A server warrant leaves as it is (`why`): one with no command and no Streamable HTTP URL, or
/// one in a configuration whose URL servers are not wrapped.
fn left(name: &str, url: Option<&str>, why: &str) -> Change {
    Change {
        name: name.to_owned(),
        before: url.unwrap_or("no command").to_owned(),
        after: Err(why.into()),
        governable: false,
    }
}

/// Why a URL server with no credentials in its configuration is left as it is.
const OAUTH: &str = "left as it is: no credentials in its configuration, so it may sign in with OAuth through the host, which the gateway does not do; wrap it by hand if it needs no sign-in";

/// Whether `action` wraps a URL server that is not behind warrant (`Wrap`); `Check` reports it,
/// `Undo` leaves it.
fn wraps_url(action: McpAction, name: &str, url: &str, changes: &mut Vec<Change>) -> bool {
    if action == McpAction::Check {
        changes.push(Change {
            name: name.to_owned(),
            before: url.to_owned(),
            after: Err("not behind warrant".into()),
            governable: true,
        });
    }
    action == McpAction::Wrap
}

/// The environment variable that carries header `i` (from 1) of a wrapped URL server.
fn header_var(i: usize) -> String {
    format!("WARRANT_MCP_HEADER_{i}")
}

/// The launch of the URL server `name` (`url`, its headers by variable: `--header-from-env
/// NAME=VAR`) behind the gateway: `exe --spool SPOOL mcp-gateway --name NAME --url URL
/// [--header-from-env HEADER=VAR]…`.
fn wrap_url(name: &str, url: &str, headers: &[(String, String)], exe: &Path, spool: &Path) -> (String, Vec<String>) {
    wrap_url_with(name, url, headers, None, exe, spool)
}

/// [`wrap_url`], with `--bearer-from-env VAR` when `bearer` names one (Codex's
/// `bearer_token_env_var`).
fn wrap_url_with(
    name: &str,
    url: &str,
    headers: &[(String, String)],
    bearer: Option<&str>,
    exe: &Path,
    spool: &Path,
) -> (String, Vec<String>) {
    let mut args = vec![
        "--spool".to_owned(),
        spool.display().to_string(),
        "mcp-gateway".to_owned(),
        "--name".to_owned(),
        // A hosted server the presets know is named as they name it (by its host).
        crate::protocol::calls::hosted_preset(url).map_or_else(|| gateway_name(name), str::to_owned),
        "--url".to_owned(),
        url.to_owned(),
    ];
    if let Some(var) = bearer {
        args.push("--bearer-from-env".to_owned());
        args.push(var.to_owned());
    }
    for (header, var) in headers {
        args.push("--header-from-env".to_owned());
        args.push(format!("{header}={var}"));
    }
    (exe.display().to_string(), args)
}

/// The URL and headers (header, variable) of a launch shaped as [`wrap_url`] makes it; `None`
/// otherwise.
fn unwrap_url(command: &str, args: &[String]) -> Option<(String, Vec<(String, String)>)> {
    unwrap_url_with(command, args).map(|(url, headers, _)| (url, headers))
}

/// A wrapped URL server's launch read back: its URL, its headers (header, variable) and its
/// `--bearer-from-env` variable.
type UrlLaunch = (String, Vec<(String, String)>, Option<String>);

/// [`unwrap_url`] with the `--bearer-from-env` variable, if any.
fn unwrap_url_with(command: &str, args: &[String]) -> Option<UrlLaunch> {
    if Path::new(command).file_name().and_then(|n| n.to_str()) != Some("warrant") || args.iter().any(|a| a == "--") {
        return None;
    }
    let gateway = args.iter().position(|a| a == "mcp-gateway")?;
    let rest = &args[gateway + 1..];
    let url = rest.windows(2).find(|w| w[0] == "--url").map(|w| w[1].clone())?;
    let headers = rest
        .windows(2)
        .filter(|w| w[0] == "--header-from-env")
        .filter_map(|w| w[1].split_once('=').map(|(h, v)| (h.to_owned(), v.to_owned())))
        .collect();
    let bearer = rest.windows(2).find(|w| w[0] == "--bearer-from-env").map(|w| w[1].clone());
    Some((url, headers, bearer))
}

/// What `action` makes of the JSON server `name` with no command: a Streamable HTTP one (`url`,
/// `type` absent or `http`) goes behind the gateway with `--url`, its headers moved into its
/// environment (`WARRANT_MCP_HEADER_n`, read with `--header-from-env`, so no value is on a
/// command line) and `type` set to `stdio` when it had one; anything else is left as it is.
fn decide_url(
    action: McpAction,
    name: &str,
    server: &mut serde_json::Map<String, Value>,
    exe: &Path,
    spool: &Path,
    changes: &mut Vec<Change>,
) -> Result<(), String> {
    let url = server.get("url").and_then(Value::as_str).map(str::to_owned);
    let kind = server.get("type").and_then(Value::as_str).map(str::to_owned);
    let (Some(url), None | Some("http" | "streamable-http" | "streamableHttp")) = (url.as_deref(), kind.as_deref())
    else {
        let why = if kind.as_deref() == Some("sse") {
            "left as it is: the gateway speaks Streamable HTTP, not the older SSE transport"
        } else {
            "left as it is: no command and no Streamable HTTP url"
        };
        changes.push(left(name, url.as_deref(), why));
        return Ok(());
    };
    if server.get("headers").and_then(Value::as_object).is_none_or(serde_json::Map::is_empty) {
        changes.push(left(name, Some(url), OAUTH));
        return Ok(());
    }
    if !wraps_url(action, name, url, changes) {
        return Ok(());
    }
    let mut env = match server.remove("env") {
        None | Some(Value::Null) => serde_json::Map::new(),
        Some(Value::Object(m)) => m,
        Some(_) => return Err(format!("`{name}.env` is not an object")),
    };
    let mut headers = Vec::new();
    match server.remove("headers") {
        None | Some(Value::Null) => {}
        Some(Value::Object(h)) => {
            for (i, (header, value)) in h.into_iter().enumerate() {
                let var = header_var(i + 1);
                env.insert(var.clone(), value);
                headers.push((header, var));
            }
        }
        Some(_) => return Err(format!("`{name}.headers` is not an object")),
    }
    let (command, args) = wrap_url(name, url, &headers, exe, spool);
    changes.push(Change {
        name: name.to_owned(),
        before: url.to_owned(),
        after: Ok(line(&command, &args)),
        governable: true,
    });
    server.remove("url");
    if kind.is_some() {
        server.insert("type".into(), json!("stdio"));
    }
    server.insert("command".into(), json!(command));
    server.insert("args".into(), json!(args));
    if !env.is_empty() {
        server.insert("env".into(), Value::Object(env));
    }
    Ok(())
}

/// `--undo` of a URL server [`decide_url`] wrapped: its `url` and `headers` back (the values from
/// its environment), `type` back to `http` when it had one.
fn undo_url(
    name: &str,
    server: &mut serde_json::Map<String, Value>,
    url: String,
    headers: &[(String, String)],
    changes: &mut Vec<Change>,
) {
    let before = server
        .get("args")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" "));
    let mut env = match server.remove("env") {
        Some(Value::Object(m)) => m,
        _ => serde_json::Map::new(),
    };
    let mut restored = serde_json::Map::new();
    for (header, var) in headers {
        if let Some(v) = env.remove(var) {
            restored.insert(header.clone(), v);
        }
    }
    server.remove("command");
    server.remove("args");
    if server.get("type").and_then(Value::as_str) == Some("stdio") {
        server.insert("type".into(), json!("http"));
    }
    server.insert("url".into(), json!(url.clone()));
    if !restored.is_empty() {
        server.insert("headers".into(), Value::Object(restored));
    }
    if !env.is_empty() {
        server.insert("env".into(), Value::Object(env));
    }
    changes.push(Change {
        name: name.to_owned(),
        before: before.unwrap_or_default(),
        after: Ok(url),
        governable: true,
    });
}

/// `action` on the servers of a JSON configuration `doc` (an object holding `key`): the new
/// document and what changed. `Check` changes nothing and lists the servers not behind warrant.
///
/// # Errors
/// `doc` is not an object, or `key` is not an object of objects.
pub fn apply_json(
    doc: &Value,
    key: &str,
    action: McpAction,
    exe: &Path,
    spool: &Path,
) -> Result<(Value, Vec<Change>), String> {
    let mut out = if doc.is_null() { json!({}) } else { doc.clone() };
    let root = out.as_object_mut().ok_or("the configuration is not a JSON object")?;
    let Some(servers) = root.get_mut(key) else { return Ok((out, Vec::new())) };
    let servers = servers.as_object_mut().ok_or_else(|| format!("`{key}` is not an object"))?;
    let mut changes = Vec::new();
    for (name, server) in servers.iter_mut() {
        let server = server.as_object_mut().ok_or_else(|| format!("`{key}.{name}` is not an object"))?;
        let Some(command) = server.get("command").and_then(Value::as_str).map(str::to_owned) else {
            decide_url(action, name, server, exe, spool, &mut changes)?;
            continue;
        };
        let args: Vec<String> = match server.get("args") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => a
                .iter()
                .map(|v| v.as_str().map(str::to_owned).ok_or_else(|| format!("`{key}.{name}.args` holds a non-string")))
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(format!("`{key}.{name}.args` is not a list")),
        };
        // A URL server this warrant wrapped: back with --undo, as it is otherwise.
        if let Some((url, headers)) =
            unwrap_url(&command, &args).filter(|_| action == McpAction::Undo || runs_this(&command, exe))
        {
            if action == McpAction::Undo {
                undo_url(name, server, url, &headers, &mut changes);
            }
            continue;
        }
        if let Some((c, a)) = decide(action, name, &command, &args, exe, spool, &mut changes) {
            server.insert("command".into(), json!(c));
            server.insert("args".into(), json!(a));
        }
    }
    Ok((out, changes))
}

/// [`apply_json`] on Codex's `config.toml` text: its `[mcp_servers.NAME]` tables, edited in place
/// (comments, order and every other key kept).
///
/// # Errors
/// Text that is not TOML, or a server whose `command` or `args` has the wrong type.
pub fn apply_toml(text: &str, action: McpAction, exe: &Path, spool: &Path) -> Result<(String, Vec<Change>), String> {
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| e.to_string())?;
    let mut changes = Vec::new();
    if let Some(servers) = doc.get_mut("mcp_servers").and_then(toml_edit::Item::as_table_like_mut) {
        for (name, server) in servers.iter_mut() {
            let name = name.get().to_owned();
            let Some(server) = server.as_table_like_mut() else { continue };
            let Some(command) = server.get("command").and_then(toml_edit::Item::as_str).map(str::to_owned) else {
                codex_url(action, &name, server, exe, spool, &mut changes)?;
                continue;
            };
            let args: Vec<String> = match server.get("args") {
                None => Vec::new(),
                Some(item) => item
                    .as_array()
                    .ok_or_else(|| format!("mcp_servers.{name}.args is not a list"))?
                    .iter()
                    .map(|v| {
                        v.as_str()
                            .map(str::to_owned)
                            .ok_or_else(|| format!("mcp_servers.{name}.args holds a non-string"))
                    })
                    .collect::<Result<_, _>>()?,
            };
            if let Some((url, headers, bearer)) =
                unwrap_url_with(&command, &args).filter(|_| action == McpAction::Undo || runs_this(&command, exe))
            {
                if action == McpAction::Undo {
                    codex_undo_url(&name, server, &url, &headers, bearer.as_deref(), &mut changes);
                }
                continue;
            }
            if let Some((c, a)) = decide(action, &name, &command, &args, exe, spool, &mut changes) {
                server.insert("command", toml_edit::value(c));
                server.insert("args", toml_edit::value(a.iter().map(String::as_str).collect::<toml_edit::Array>()));
            }
        }
    }
    Ok((doc.to_string(), changes))
}

/// The string values of a TOML table item (`http_headers`, `env_http_headers`), in order.
fn toml_strings(item: Option<&toml_edit::Item>) -> Vec<(String, String)> {
    item.and_then(toml_edit::Item::as_table_like)
        .map(|t| t.iter().filter_map(|(k, v)| Some((k.to_owned(), v.as_str()?.to_owned()))).collect())
        .unwrap_or_default()
}

/// What `action` makes of a Codex URL server (`url`, with `bearer_token_env_var`, `http_headers`
/// and `env_http_headers`): behind `mcp-gateway --url`, the bearer's variable read with
/// `--bearer-from-env`, each `env_http_headers` variable with `--header-from-env`, each literal
/// header moved into `env` (`WARRANT_MCP_HEADER_n`); the variables Codex must pass on listed in
/// `env_vars` (Codex gives a stdio server a short list of variables of its own). One with no
/// credentials is left as it is (it may sign in with `codex mcp login`).
fn codex_url(
    action: McpAction,
    name: &str,
    server: &mut dyn toml_edit::TableLike,
    exe: &Path,
    spool: &Path,
    changes: &mut Vec<Change>,
) -> Result<(), String> {
    let Some(url) = server.get("url").and_then(toml_edit::Item::as_str).map(str::to_owned) else {
        changes.push(left(name, None, "left as it is: no command and no url"));
        return Ok(());
    };
    let bearer = server.get("bearer_token_env_var").and_then(toml_edit::Item::as_str).map(str::to_owned);
    let literal = toml_strings(server.get("http_headers"));
    let from_env = toml_strings(server.get("env_http_headers"));
    if bearer.is_none() && literal.is_empty() && from_env.is_empty() {
        changes.push(left(name, Some(&url), OAUTH));
        return Ok(());
    }
    if !wraps_url(action, name, &url, changes) {
        return Ok(());
    }
    let mut env = toml_edit::InlineTable::new();
    let mut headers = Vec::new();
    for (i, (header, value)) in literal.iter().enumerate() {
        let var = header_var(i + 1);
        env.insert(&var, value.as_str().into());
        headers.push((header.clone(), var));
    }
    let mut pass: Vec<String> = bearer.iter().cloned().collect();
    for (header, var) in &from_env {
        headers.push((header.clone(), var.clone()));
        pass.push(var.clone());
    }
    let (command, args) = wrap_url_with(name, &url, &headers, bearer.as_deref(), exe, spool);
    changes.push(Change { name: name.to_owned(), before: url, after: Ok(line(&command, &args)), governable: true });
    for key in ["url", "bearer_token_env_var", "http_headers", "env_http_headers"] {
        server.remove(key);
    }
    server.insert("command", toml_edit::value(command));
    server.insert("args", toml_edit::value(args.iter().map(String::as_str).collect::<toml_edit::Array>()));
    if !env.is_empty() {
        server.insert("env", toml_edit::value(env));
    }
    if !pass.is_empty() {
        server.insert("env_vars", toml_edit::value(pass.iter().map(String::as_str).collect::<toml_edit::Array>()));
    }
    Ok(())
}

/// `--undo` of a Codex URL server [`codex_url`] wrapped: `url`, `bearer_token_env_var`,
/// `http_headers` (their values from `env`) and `env_http_headers` back; `command`, `args`, the
/// header variables in `env` and `env_vars` gone.
fn codex_undo_url(
    name: &str,
    server: &mut dyn toml_edit::TableLike,
    url: &str,
    headers: &[(String, String)],
    bearer: Option<&str>,
    changes: &mut Vec<Change>,
) {
    let env = toml_strings(server.get("env"));
    let mut literal = toml_edit::InlineTable::new();
    let mut from_env = toml_edit::InlineTable::new();
    for (header, var) in headers {
        match env.iter().find(|(k, _)| k == var).filter(|_| var.starts_with("WARRANT_MCP_HEADER_")) {
            Some((_, value)) => {
                literal.insert(header, value.as_str().into());
            }
            None => {
                from_env.insert(header, var.as_str().into());
            }
        }
    }
    for key in ["command", "args", "env", "env_vars"] {
        server.remove(key);
    }
    server.insert("url", toml_edit::value(url));
    if let Some(b) = bearer {
        server.insert("bearer_token_env_var", toml_edit::value(b));
    }
    if !literal.is_empty() {
        server.insert("http_headers", toml_edit::value(literal));
    }
    if !from_env.is_empty() {
        server.insert("env_http_headers", toml_edit::value(from_env));
    }
    changes.push(Change {
        name: name.to_owned(),
        before: "behind warrant".into(),
        after: Ok(url.to_owned()),
        governable: true,
    });
}

/// `warrant setup HOST --mcp [--undo|--check]`: reads `host`'s configuration, applies `action`,
/// shows every change, and (unless `print` or `Check`) writes the file, its old bytes kept as
/// `FILE.warrant-backup`. Returns the exit code: 0; 1 for a `Check` that found a server not
/// behind warrant.
///
/// # Errors
/// The file cannot be read, parsed or written; no home directory for `--user`.
pub fn setup_mcp(
    host: McpHost,
    user: bool,
    dir: Option<&Path>,
    print: bool,
    action: McpAction,
    spool: &Path,
) -> Result<u8, String> {
    let home = directories::BaseDirs::new().map(|b| b.home_dir().to_owned());
    let dir = match dir {
        Some(d) => d.to_owned(),
        None => std::env::current_dir().map_err(|e| format!("the current directory: {e}"))?,
    };
    let home = match (user, home) {
        (true, None) => return Err("no home directory for --user".into()),
        (_, h) => h.unwrap_or_default(),
    };
    let path = config_path(host, user, &dir, &home)?;
    let exe = std::env::current_exe().map_err(|e| format!("this program's path: {e}"))?;
    let spool = std::path::absolute(spool).map_err(|e| format!("{}: {e}", spool.display()))?;
    let old = match std::fs::read(&path) {
        Ok(bytes) => Some(bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let shown = path.display();
    let (text, changes) = match host {
        McpHost::Codex => {
            let text = old.as_deref().map(String::from_utf8_lossy).unwrap_or_default();
            let (new, changes) = apply_toml(&text, action, &exe, &spool).map_err(|e| format!("{shown}: {e}"))?;
            (new, changes)
        }
        _ => {
            let doc = match &old {
                Some(bytes) => serde_json::from_slice(bytes).map_err(|e| format!("{shown}: not JSON: {e}"))?,
                None => Value::Null,
            };
            let (new, changes) =
                apply_json(&doc, host.json_key(), action, &exe, &spool).map_err(|e| format!("{shown}: {e}"))?;
            (serde_json::to_string_pretty(&new).map_err(|e| e.to_string())? + "\n", changes)
        }
    };
    if action == McpAction::Check {
        let missing: Vec<&Change> = changes.iter().filter(|c| c.after.is_err()).collect();
        for c in &missing {
            let why = c.after.as_ref().err().map_or("", String::as_str);
            println!("{}: {} ({}) — {why}", shown, c.name, c.before);
        }
        let governable_missing = missing.iter().any(|c| c.governable);
        if !governable_missing {
            println!("{shown}: every MCP server warrant can govern runs behind it");
        }
        return Ok(u8::from(governable_missing));
    }
    if print {
        print!("{text}");
        return Ok(0);
    }
    let wrapped = changes.iter().filter(|c| c.after.is_ok()).count();
    for c in &changes {
        match &c.after {
            Ok(after) => println!("  {}: {}\n    → {after}", c.name, c.before),
            Err(why) => println!("  {} ({}): {why}", c.name, c.before),
        }
    }
    if wrapped == 0 {
        println!("{shown}: unchanged");
        return Ok(0);
    }
    if let Some(bytes) = &old {
        let backup = PathBuf::from(format!("{}.warrant-backup", path.display()));
        crate::store::atomic::write_atomic(&backup, bytes, 0o600).map_err(|e| format!("{}: {e}", backup.display()))?;
        println!("{shown}: the old file is kept as {}", backup.display());
    }
    let mode =
        std::fs::metadata(&path).map_or(0o644, |m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o777);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    crate::store::atomic::write_atomic(&path, text.as_bytes(), mode).map_err(|e| format!("{shown}: {e}"))?;
    let verb = if action == McpAction::Undo { "back to their own commands" } else { "behind warrant" };
    println!("{shown}: {wrapped} {} {verb}", if wrapped == 1 { "server" } else { "servers" });
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping_is_idempotent_and_undo_gives_the_original_back() {
        let exe = Path::new("/opt/bin/warrant");
        let spool = Path::new("/s");
        let doc = json!({
            "theme": "dark",
            "mcpServers": {
                "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/me"], "env": {"A": "1"}},
                "notion tools": {"command": "notion-mcp"},
                "docs": {"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer x"}},
                "notion": {"type": "http", "url": "https://mcp.notion.com/mcp"},
            }
        });
        let (once, changes) = apply_json(&doc, "mcpServers", McpAction::Wrap, exe, spool).expect("wrap");
        assert_eq!(changes.iter().filter(|c| c.after.is_ok()).count(), 3, "{changes:?}");
        let files = &once["mcpServers"]["files"];
        assert_eq!(files["command"], json!("/opt/bin/warrant"));
        assert_eq!(
            files["args"],
            json!([
                "--spool",
                "/s",
                "mcp-gateway",
                "--name",
                "filesystem",
                "--",
                "npx",
                "-y",
                "@modelcontextprotocol/server-filesystem",
                "/home/me"
            ]),
            "a server the presets know is named as they name it"
        );
        assert_eq!(files["env"], json!({"A": "1"}), "the environment is kept");
        assert_eq!(once["mcpServers"]["notion tools"]["args"][4], json!("notion-tools"), "a usable --name");
        assert_eq!(
            once["mcpServers"]["docs"],
            json!({"type": "stdio", "command": "/opt/bin/warrant",
                   "args": ["--spool", "/s", "mcp-gateway", "--name", "docs", "--url", "https://example.com/mcp",
                            "--header-from-env", "Authorization=WARRANT_MCP_HEADER_1"],
                   "env": {"WARRANT_MCP_HEADER_1": "Bearer x"}}),
            "a URL server goes behind the gateway, its header's value in its environment"
        );
        assert_eq!(once["mcpServers"]["notion"], doc["mcpServers"]["notion"], "no credentials: maybe OAuth, left");
        assert!(changes.iter().any(|c| c.name == "notion" && c.after.as_ref().is_err_and(|e| e.contains("OAuth"))));
        assert_eq!(once["theme"], json!("dark"));
        let (twice, changes) = apply_json(&once, "mcpServers", McpAction::Wrap, exe, spool).expect("again");
        assert_eq!(twice, once, "idempotent");
        assert!(changes.iter().all(|c| c.after.is_err()), "{changes:?}");
        let (check, _) = apply_json(&once, "mcpServers", McpAction::Check, exe, spool).expect("check");
        assert_eq!(check, once);
        let (undone, _) = apply_json(&once, "mcpServers", McpAction::Undo, exe, spool).expect("undo");
        assert_eq!(undone["mcpServers"]["files"]["args"], doc["mcpServers"]["files"]["args"]);
        assert_eq!(undone["mcpServers"]["notion tools"]["args"], json!([]));
        assert_eq!(undone["mcpServers"]["docs"], doc["mcpServers"]["docs"], "the URL server is back as it was");
        let sse = json!({"mcpServers": {"old": {"type": "sse", "url": "https://example.com/sse"}}});
        let (same, changes) = apply_json(&sse, "mcpServers", McpAction::Wrap, exe, spool).expect("sse");
        assert_eq!(same, sse, "an SSE server is left as it is");
        assert!(changes[0].after.as_ref().is_err_and(|e| e.contains("SSE")), "{changes:?}");
        assert!(apply_json(&json!([1]), "mcpServers", McpAction::Wrap, exe, spool).is_err());
    }

    // A launch is behind warrant when its program is this binary, not when it is named so: a
    // wrapper around another `warrant` is reported by --check and wrapped again by this one.
    #[test]
    fn only_this_binary_counts_as_behind_warrant() {
        let dir = tempfile::tempdir().expect("tempdir");
        let exe = dir.path().join("warrant");
        std::fs::write(&exe, "").expect("exe");
        let link = dir.path().join("bin");
        std::fs::create_dir(&link).expect("bin");
        std::os::unix::fs::symlink(&exe, link.join("warrant")).expect("symlink");
        assert!(runs_this(&link.join("warrant").display().to_string(), &exe), "the file a symlink resolves to");
        let other = dir.path().join("other");
        std::fs::create_dir(&other).expect("other");
        std::fs::write(other.join("warrant"), "").expect("another warrant");
        let other = other.join("warrant").display().to_string();
        assert!(!runs_this(&other, &exe), "another file named warrant");
        let args: Vec<String> = ["mcp-gateway", "--", "mcp-server-git"].iter().map(|s| (*s).to_owned()).collect();
        let doc = json!({"mcpServers": {"git": {"command": other, "args": args}}});
        let (_, changes) = apply_json(&doc, "mcpServers", McpAction::Check, &exe, Path::new("/s")).expect("check");
        assert_eq!(changes.len(), 1, "{changes:?}");
        assert_eq!(changes[0].after, Err("behind another program named warrant".to_owned()));
        let (wrapped, _) = apply_json(&doc, "mcpServers", McpAction::Wrap, &exe, Path::new("/s")).expect("wrap");
        assert_eq!(wrapped["mcpServers"]["git"]["command"], json!(exe.display().to_string()));
        assert_eq!(
            wrapped["mcpServers"]["git"]["args"][6],
            json!("mcp-server-git"),
            "around its own server: {wrapped}"
        );
        let (_, changes) = apply_json(&wrapped, "mcpServers", McpAction::Check, &exe, Path::new("/s")).expect("check");
        assert!(changes.is_empty(), "{changes:?}");
    }

    #[test]
    fn the_presets_servers_are_known_by_their_package() {
        let (_, args) = wrap_url("gh", "https://api.githubcopilot.com/mcp/", &[], Path::new("/w"), Path::new("/s"));
        assert_eq!(args[4], "github", "a hosted server the presets know: {args:?}");
        let (_, args) = wrap_url("docs", "https://docs.example.com/mcp", &[], Path::new("/w"), Path::new("/s"));
        assert_eq!(args[4], "docs");
        let w = |s: &[&str]| s.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
        let npx = w(&["-y", "@modelcontextprotocol/server-filesystem@2026.8.31", "/d"]);
        assert_eq!(preset_name("npx", &npx), Some("filesystem"));
        assert_eq!(preset_name("uvx", &w(&["mcp-server-git==2026.10.19"])), Some("git"));
        assert_eq!(preset_name("python3", &w(&["-m", "mcp_server_time"])), Some("time"));
        assert_eq!(preset_name("/usr/local/bin/mcp-server-fetch", &[]), Some("fetch"));
        assert_eq!(preset_name("node", &w(&["server.js"])), None);
    }

    #[test]
    fn codex_toml_is_edited_in_place() {
        let text = "# my servers\nmodel = \"o4\"\n\n[mcp_servers.git]\ncommand = \"uvx\"\nargs = [\"mcp-server-git\"]\nenv = { GIT_DIR = \"/r\" }\n";
        let (wrapped, changes) =
            apply_toml(text, McpAction::Wrap, Path::new("/opt/bin/warrant"), Path::new("/s")).expect("wrap");
        assert_eq!(changes.len(), 1);
        assert!(wrapped.starts_with("# my servers\nmodel = \"o4\""), "{wrapped}");
        assert!(wrapped.contains("command = \"/opt/bin/warrant\""), "{wrapped}");
        assert!(wrapped.contains("\"--\", \"uvx\", \"mcp-server-git\"]"), "{wrapped}");
        assert!(wrapped.contains("env = { GIT_DIR = \"/r\" }"), "{wrapped}");
        let (undone, _) = apply_toml(&wrapped, McpAction::Undo, Path::new("/x"), Path::new("/s")).expect("undo");
        assert!(undone.contains("command = \"uvx\"") && undone.contains("args = [\"mcp-server-git\"]"), "{undone}");
    }

    // A Codex URL server with its credentials goes behind `mcp-gateway --url` (the bearer's and
    // the headers' variables passed on by Codex with env_vars, a literal header's value in env),
    // and --undo gives it back; one with none is left (it may sign in with OAuth).
    #[test]
    fn codex_url_servers_are_wrapped_with_their_credentials_and_come_back() {
        let text = "[mcp_servers.linear]\nurl = \"https://mcp.linear.app/mcp\"\nbearer_token_env_var = \"LINEAR_TOKEN\"\nhttp_headers = { \"X-Team\" = \"eng\" }\nenv_http_headers = { \"X-Org\" = \"ORG_ID\" }\ntool_timeout_sec = 600\n\n[mcp_servers.figma]\nurl = \"https://mcp.figma.com/mcp\"\n";
        let exe = Path::new("/opt/bin/warrant");
        let (wrapped, changes) = apply_toml(text, McpAction::Wrap, exe, Path::new("/s")).expect("wrap");
        assert!(
            changes.iter().any(|c| c.name == "figma" && c.after.as_ref().is_err_and(|e| e.contains("OAuth"))),
            "{changes:?}"
        );
        let doc: toml::Value = toml::from_str(&wrapped).expect("toml");
        let linear = &doc["mcp_servers"]["linear"];
        let args: Vec<&str> = linear["args"].as_array().expect("args").iter().filter_map(|a| a.as_str()).collect();
        assert_eq!(
            args,
            [
                "--spool",
                "/s",
                "mcp-gateway",
                "--name",
                "linear",
                "--url",
                "https://mcp.linear.app/mcp",
                "--bearer-from-env",
                "LINEAR_TOKEN",
                "--header-from-env",
                "X-Team=WARRANT_MCP_HEADER_1",
                "--header-from-env",
                "X-Org=ORG_ID"
            ]
        );
        assert_eq!(linear["env"]["WARRANT_MCP_HEADER_1"].as_str(), Some("eng"));
        assert_eq!(linear["env_vars"].as_array().map(Vec::len), Some(2), "{linear}");
        assert!(linear.get("url").is_none() && linear.get("bearer_token_env_var").is_none(), "{linear}");
        assert_eq!(linear["tool_timeout_sec"].as_integer(), Some(600), "other keys kept");
        assert!(doc["mcp_servers"]["figma"].get("command").is_none(), "left as it is");
        let (undone, _) = apply_toml(&wrapped, McpAction::Undo, exe, Path::new("/s")).expect("undo");
        let back: toml::Value = toml::from_str(&undone).expect("toml");
        let before: toml::Value = toml::from_str(text).expect("toml");
        assert_eq!(back, before, "{undone}");
    }
}
