//! Turns `assets/host-tools.toml` (the built-in table of the hosts' own tools, written by hand as
//! TOML) into what the processes read, once, at build time, in `OUT_DIR`: the whole table as
//! compact JSON (`host-tools.json`), and each `[tools]` and `[commands]` entry's JSON text in
//! a Rust array (`host-tools-entries.rs`), so a process that governs one call (a hook lives a
//! few milliseconds) reads only the entries it uses, and parses no TOML (which took about a
//! tenth of a hook's time). Both hold the same values as the TOML
//! (`policy::tool_table::tests::the_built_in_json_is_the_toml`,
//! `the_built_in_entries_are_the_json`).

use std::fmt::Write as _;
use std::path::PathBuf;

const TABLE: &str = "../../assets/host-tools.toml";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo::rerun-if-changed={TABLE}");
    let text = std::fs::read_to_string(TABLE).map_err(|e| format!("{TABLE}: {e}"))?;
    let value: toml::Value = toml::from_str(&text).map_err(|e| format!("{TABLE}: {e}"))?;
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    let json = serde_json::to_value(&value)?;
    std::fs::write(out.join("host-tools.json"), serde_json::to_string(&json)?)?;
    let mut entries = String::new();
    for (table, constant) in [("tools", "HOST_TOOL_ENTRIES"), ("commands", "HOST_COMMAND_ENTRIES")] {
        let members = json.get(table).and_then(serde_json::Value::as_object).ok_or(format!("{TABLE}: no [{table}]"))?;
        writeln!(entries, "/// `[{table}]` of `assets/host-tools.toml`: each key and its entry as JSON, by key.")?;
        writeln!(entries, "pub(super) static {constant}: &[(&str, &str)] = &[")?;
        // Sorted by key: the processes look a key up by binary search.
        let mut sorted: Vec<_> = members.iter().collect();
        sorted.sort_by(|a, b| a.0.cmp(b.0));
        for (key, entry) in sorted {
            writeln!(entries, "    ({key:?}, {:?}),", serde_json::to_string(entry)?)?;
        }
        writeln!(entries, "];")?;
    }
    std::fs::write(out.join("host-tools-entries.rs"), entries)?;
    Ok(())
}
