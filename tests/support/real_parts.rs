//! Whether the real parts the MCP gateway's tests drive are installed: the registries' MCP
//! servers and the Python `mcp` SDK. In CI their absence fails the test (`.ci/run` installs
//! them); elsewhere the test is skipped with the reason.

use std::process::{Command, Stdio};

/// Whether `program` is a file in a directory of `PATH`.
pub fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
}

/// Whether `servers` and the Python `mcp` SDK are here; under `CI=true` a missing one panics.
pub fn have(servers: &[&str]) -> bool {
    let mut missing: Vec<String> = servers.iter().filter(|s| !on_path(s)).map(|s| (*s).to_owned()).collect();
    let sdk = Command::new("python3")
        .args(["-c", "import mcp.client.stdio"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !sdk {
        missing.push("the Python `mcp` SDK (python3 -c 'import mcp')".into());
    }
    if missing.is_empty() {
        return true;
    }
    let why = format!("missing {}: `.ci/run` installs them", missing.join(", "));
    assert!(std::env::var("CI").as_deref() != Ok("true"), "{why}");
    eprintln!("skipped: {why}");
    false
}
