//! Turns `assets/host-tools.toml` (the built-in table of the hosts' own tools, written by hand as
//! TOML) into compact JSON in `OUT_DIR` once, at build time: every process that governs a call
//! (a hook lives a few milliseconds) reads the table with serde_json instead of parsing TOML,
//! which took about a tenth of a hook's time. The JSON holds the same values
//! (`policy::tool_table::tests::the_built_in_json_is_the_toml`).

use std::path::PathBuf;

const TABLE: &str = "../../assets/host-tools.toml";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo::rerun-if-changed={TABLE}");
    let text = std::fs::read_to_string(TABLE).map_err(|e| format!("{TABLE}: {e}"))?;
    let value: toml::Value = toml::from_str(&text).map_err(|e| format!("{TABLE}: {e}"))?;
    let json = serde_json::to_string(&value)?;
    let out = PathBuf::from(std::env::var("OUT_DIR")?).join("host-tools.json");
    std::fs::write(&out, json).map_err(|e| format!("{}: {e}", out.display()))?;
    Ok(())
}
