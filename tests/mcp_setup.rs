//! `warrant setup HOST --mcp` (issue 33, §4): every local MCP server a host has configured is put
//! behind `warrant mcp-gateway`, its command, arguments and environment kept; idempotent, with a
//! backup, `--undo` and `--check`; and the wrapped launch works: the Python SDK's client runs it
//! as the host would, and with no policy.toml (the built-in presets for the filesystem server) a
//! read runs at once while a write is held as a packet.

use crate::cli_env;
use crate::real_parts;
use cli_env::{Env, text};
use real_parts::have;
use serde_json::{Value, json};
use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};

const CLIENT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/mcp_client.py");

/// `warrant setup ARGS` in `dir`, with this environment's spool.
fn setup(e: &Env, dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    let mut all = vec!["setup"];
    all.extend_from_slice(args);
    let d = dir.display().to_string();
    all.extend(["--dir", &d]);
    e.run(&all)
}

#[test]
fn claude_codes_servers_go_behind_the_gateway_and_come_back_with_undo() {
    let e = Env::new();
    // No policy.toml: the built-in presets for the filesystem server govern it.
    let project = e.dir.path().join("project");
    std::fs::create_dir_all(&project).expect("project");
    let root = e.dir.path().join("files");
    std::fs::create_dir_all(&root).expect("root");
    std::fs::write(root.join("notes.txt"), "hello\n").expect("a file");
    let original = json!({"mcpServers": {
        "files": {"command": "mcp-server-filesystem", "args": [root.display().to_string()], "env": {"NODE_NO_WARNINGS": "1"}},
        "docs": {"type": "http", "url": "https://docs.example.com/mcp", "headers": {"X-Api-Key": "k-123"}},
    }});
    let config = project.join(".mcp.json");
    std::fs::write(&config, serde_json::to_vec_pretty(&original).expect("json")).expect(".mcp.json");

    let o = setup(&e, &project, &["claude-code", "--mcp", "--check"]);
    assert_eq!(o.status.code(), Some(1), "a server not behind warrant: {}", text(&o));
    assert!(text(&o).contains("files"), "{}", text(&o));
    let o = setup(&e, &project, &["claude-code", "--mcp"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = text(&o);
    assert!(out.contains("mcp-gateway --name filesystem -- mcp-server-filesystem"), "the change is shown: {out}");
    assert!(
        out.contains("--url https://docs.example.com/mcp --header-from-env X-Api-Key=WARRANT_MCP_HEADER_1"),
        "{out}"
    );
    assert!(!out.contains("k-123"), "a header's value is not shown: {out}");
    let backup = project.join(".mcp.json.warrant-backup");
    assert_eq!(
        serde_json::from_slice::<Value>(&std::fs::read(&backup).expect("backup")).expect("json"),
        original,
        "the backup is the old file"
    );
    let wrapped: Value = serde_json::from_slice(&std::fs::read(&config).expect("config")).expect("json");
    let files = &wrapped["mcpServers"]["files"];
    assert!(files["command"].as_str().is_some_and(|c| c.ends_with("/warrant")), "{files}");
    assert_eq!(files["env"], original["mcpServers"]["files"]["env"], "the environment is kept");
    // The URL server runs behind the gateway's --url, its header's value in its environment.
    let docs = &wrapped["mcpServers"]["docs"];
    assert_eq!(docs["type"], json!("stdio"), "{docs}");
    assert!(docs.get("url").is_none() && docs.get("headers").is_none(), "{docs}");
    assert_eq!(docs["env"], json!({"WARRANT_MCP_HEADER_1": "k-123"}), "{docs}");
    // Idempotent; and --check is content.
    let o = setup(&e, &project, &["claude-code", "--mcp"]);
    assert!(text(&o).contains("unchanged"), "{}", text(&o));
    assert_eq!(setup(&e, &project, &["claude-code", "--mcp", "--check"]).status.code(), Some(0));

    // The wrapped launch, run as Claude Code would run it (command, args, env), by the real
    // client: a read runs, a write is held for the principal (a packet).
    if have(&["mcp-server-filesystem"]) {
        let args: Vec<String> =
            files["args"].as_array().expect("args").iter().map(|a| a.as_str().expect("str").to_owned()).collect();
        let target = root.join("new.txt");
        let steps = json!([
            {"call": "read_text_file", "args": {"path": root.join("notes.txt")}},
            {"call": "write_file", "args": {"path": target, "content": "x"}, "progress": true},
        ]);
        let mut client = Command::new("python3");
        client
            .arg(CLIENT)
            .arg(steps.to_string())
            .arg("--")
            .arg(files["command"].as_str().expect("command"))
            .args(&args);
        client
            .env("WARRANT_CONFIG", e.config())
            .env("WARRANT_PRINCIPAL", "alice")
            .env("XDG_DATA_HOME", e.dir.path().join("data"))
            .env_remove("WARRANT_SPOOL")
            .env("NODE_NO_WARNINGS", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = client.spawn().expect("python3 mcp_client.py");
        let out = child.stdout.take().expect("stdout");
        let mut answers =
            BufReader::new(out).lines().map_while(Result::ok).filter_map(|l| serde_json::from_str::<Value>(&l).ok());
        let read = answers.find(|v| v["call"] == "read_text_file").expect("the read's answer");
        assert!(read.to_string().contains("hello"), "the read ran through the gateway: {read}");
        // The write is held: its packet waits in the spool the wrapped launch names.
        let start = std::time::Instant::now();
        let held = loop {
            let o = e.run(&["list", "--json"]);
            let v: Value = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
            if let Some(p) = v["packets"].as_array().and_then(|ps| {
                ps.iter().find(|p| p["summary"].as_str().is_some_and(|s| s.starts_with("filesystem/write_file")))
            }) {
                break p["packet_id"].as_str().expect("id").to_owned();
            }
            assert!(start.elapsed() < std::time::Duration::from_secs(30), "the write was never held");
            std::thread::sleep(std::time::Duration::from_millis(100));
        };
        assert!(!target.exists(), "held, not run");
        assert_eq!(e.run(&["refuse", "--yes", &held, "--reason", "test"]).status.code(), Some(0));
        let write = answers.find(|v| v["call"] == "write_file").expect("the write's answer");
        assert_eq!(write["result"]["isError"], json!(true), "{write}");
        let _ = child.wait();
        assert!(!target.exists());
    }

    // A server added since is reported by --check; --undo gives every server its own launch back.
    let mut added = wrapped.clone();
    added["mcpServers"]["git"] = json!({"command": "mcp-server-git", "args": ["--repository", "/r"]});
    std::fs::write(&config, serde_json::to_vec_pretty(&added).expect("json")).expect("write");
    let o = setup(&e, &project, &["claude-code", "--mcp", "--check"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("git (mcp-server-git --repository /r)"), "{}", text(&o));
    let o = setup(&e, &project, &["claude-code", "--mcp", "--undo"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let undone: Value = serde_json::from_slice(&std::fs::read(&config).expect("config")).expect("json");
    assert_eq!(undone["mcpServers"]["files"], original["mcpServers"]["files"], "its own launch back");
    assert_eq!(undone["mcpServers"]["docs"], original["mcpServers"]["docs"], "its URL and headers back");
    assert_eq!(undone["mcpServers"]["git"], added["mcpServers"]["git"]);
}

#[test]
fn codex_cursor_vscode_and_claude_desktop_configurations_are_wrapped_where_they_live() {
    let e = Env::new();
    let project = e.dir.path().join("project");
    std::fs::create_dir_all(project.join(".codex")).expect("project");
    let toml = "# my Codex servers\n[mcp_servers.git]\ncommand = \"mcp-server-git\"\nargs = [\"--repository\", \"/r\"]\nenv = { GIT_AUTHOR_NAME = \"me\" }\n\n[mcp_servers.linear]\nurl = \"https://mcp.linear.app/mcp\"\nbearer_token_env_var = \"LINEAR_TOKEN\"\n";
    std::fs::write(project.join(".codex/config.toml"), toml).expect("config.toml");
    let o = setup(&e, &project, &["codex", "--mcp"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let after = std::fs::read_to_string(project.join(".codex/config.toml")).expect("config.toml");
    assert!(after.starts_with("# my Codex servers\n"), "comments kept: {after}");
    assert!(
        after.contains("\"mcp-gateway\", \"--name\", \"git\", \"--\", \"mcp-server-git\", \"--repository\", \"/r\"]"),
        "{after}"
    );
    assert!(after.contains("env = { GIT_AUTHOR_NAME = \"me\" }"), "{after}");
    // The real Codex reads the wrapped URL server as a stdio server that gets the bearer's
    // variable (Codex passes a stdio server only the variables it lists in env_vars).
    if have(&["codex"]) {
        let o = Command::new("codex")
            .args(["mcp", "get", "linear", "--json"])
            .env("CODEX_HOME", project.join(".codex"))
            .output()
            .expect("codex");
        assert!(o.status.success(), "{}", text(&o));
        let got: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
        let t = &got["transport"];
        assert_eq!(t["type"], json!("stdio"), "{got}");
        assert!(t["command"].as_str().is_some_and(|c| c.ends_with("warrant")), "{got}");
        assert_eq!(t["env_vars"], json!(["LINEAR_TOKEN"]), "{got}");
        let args: Vec<&str> = t["args"].as_array().expect("args").iter().filter_map(Value::as_str).collect();
        assert!(args.windows(2).any(|w| w == ["--bearer-from-env", "LINEAR_TOKEN"]), "{got}");
        assert!(args.windows(2).any(|w| w == ["--name", "linear"]), "{got}");
    }
    for (host, file, key) in [("cursor", ".cursor/mcp.json", "mcpServers"), ("vscode", ".vscode/mcp.json", "servers")] {
        let path = project.join(file);
        std::fs::create_dir_all(path.parent().expect("dir")).expect("dir");
        std::fs::write(&path, json!({key: {"time": {"command": "uvx", "args": ["mcp-server-time"]}}}).to_string())
            .expect("config");
        let o = setup(&e, &project, &[host, "--mcp"]);
        assert_eq!(o.status.code(), Some(0), "{host}: {}", text(&o));
        let v: Value = serde_json::from_slice(&std::fs::read(&path).expect("config")).expect("json");
        assert_eq!(v[key]["time"]["args"][2], json!("mcp-gateway"), "{host}: {v}");
    }
    // Claude Desktop has only a user configuration; and no hooks.
    let o = setup(&e, &project, &["claude-desktop", "--mcp"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--user"), "{}", text(&o));
    let o = setup(&e, &project, &["cursor"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("cursor --mcp"), "{}", text(&o));
}
