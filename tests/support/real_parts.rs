//! Whether the real parts some tests drive are installed: the registries' MCP servers and the
//! Python `mcp` SDK for the MCP gateway's, other programs (`openssl`, GNU time) for others. In CI their absence fails the test (`.ci/run` installs
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
    present_or_skip(&missing)
}

/// Whether `programs` (names found on `PATH`, or absolute paths) are all here; under `CI=true` a
/// missing one panics.
pub fn have_programs(programs: &[&str]) -> bool {
    let found = |p: &str| if p.starts_with('/') { std::path::Path::new(p).is_file() } else { on_path(p) };
    let missing: Vec<String> = programs.iter().filter(|p| !found(p)).map(|p| (*p).to_owned()).collect();
    present_or_skip(&missing)
}

/// True when nothing is `missing`; else, under `CI=true`, a panic naming it, and elsewhere false
/// with the reason on stderr (the caller skips).
fn present_or_skip(missing: &[String]) -> bool {
    if missing.is_empty() {
        return true;
    }
    let why = format!("missing {}: `.ci/run` installs them", missing.join(", "));
    assert!(std::env::var("CI").as_deref() != Ok("true"), "{why}");
    eprintln!("skipped: {why}");
    false
}
