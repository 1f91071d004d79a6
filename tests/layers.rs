//! The layers point one way (issue 19, `docs/architecture.md`): the protocol (`src/protocol/`,
//! pure functions over values) names only itself; the store (`src/store/`) names only the
//! protocol and itself; the surfaces above may name both. This test reads the layers' source
//! files and fails on any `crate::<module>` path (in code, not in comments) that names a module
//! above the file's layer, except the known crossings listed below, each with the reason it
//! still exists. The list is a ratchet: a listed crossing that no longer occurs fails the test
//! too, so it shrinks, and a new crossing cannot slip in.

use std::collections::BTreeSet;
use std::path::Path;

/// The layers, as folders under `src/`, and the top-level modules each may name in code: the
/// protocol only itself; the store the protocol and itself. Everything else at the top level is a
/// surface or shared by surfaces, and may name anything below it.
const LAYERS: &[(&str, &[&str])] = &[("protocol", &["protocol"]), ("store", &["protocol", "store"])];

/// The crossings that still exist: (file under `src/`, module named, why). The list is a
/// ratchet: a crossing not listed fails the test, and so does a listed one that is gone.
const KNOWN: &[(&str, &str, &str)] = &[];

/// The `crate::<module>` paths of `code` (comment lines skipped), including each name of a
/// `crate::{a, b::c}` group.
fn crate_paths(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
        let mut rest = line;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            if let Some(group) = rest.strip_prefix('{') {
                let end = group.find('}').unwrap_or(group.len());
                for item in group[..end].split(',') {
                    let name: String =
                        item.trim().chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                    if !name.is_empty() {
                        out.insert(name);
                    }
                }
            } else {
                let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                if !name.is_empty() {
                    out.insert(name);
                }
            }
        }
    }
    out
}

/// Every `.rs` file under `dir`, relative to `src`, sorted.
fn rust_files(src: &Path, dir: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![src.join(dir)];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path.strip_prefix(src).expect("under src").display().to_string());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn the_protocol_names_only_itself_and_the_store_only_the_protocol() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found: BTreeSet<(String, String)> = BTreeSet::new();
    for (layer, allowed) in LAYERS {
        let files = rust_files(&src, layer);
        assert!(files.len() > 3, "src/{layer} holds the layer's modules");
        for file in files {
            let code = std::fs::read_to_string(src.join(&file)).unwrap_or_else(|e| panic!("src/{file}: {e}"));
            for module in crate_paths(&code) {
                if !allowed.contains(&module.as_str()) {
                    found.insert((file.clone(), module));
                }
            }
        }
    }
    let known: BTreeSet<(String, String)> = KNOWN.iter().map(|(f, m, _)| ((*f).to_owned(), (*m).to_owned())).collect();
    let new: Vec<_> = found.difference(&known).collect();
    assert!(new.is_empty(), "modules that now name a layer above their own (src/<file>, module): {new:?}");
    let gone: Vec<_> = known.difference(&found).collect();
    assert!(gone.is_empty(), "these crossings are gone: take them off KNOWN in tests/layers.rs: {gone:?}");
    assert!(
        KNOWN.iter().all(|(f, _, _)| !f.starts_with("protocol/")),
        "the protocol has no known crossings left, and none may come back"
    );
}

#[test]
fn the_top_level_holds_the_layers_and_the_surfaces_only() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("lib.rs");
    let modules: BTreeSet<String> = lib
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub mod ").and_then(|m| m.strip_suffix(';')).map(str::to_owned))
        .collect();
    for layer in ["protocol", "store"] {
        assert!(modules.contains(layer), "lib.rs declares {layer}");
    }
    // The protocol's modules are not declared at the top level too.
    for m in ["canonical", "chain", "decision", "keys", "spool", "chain_file"] {
        assert!(!modules.contains(m), "{m} belongs to a layer folder, not the top level");
    }
}

#[test]
fn crate_paths_reads_paths_and_groups_but_not_comments() {
    let code = "use crate::store::spool::Spool;\n// crate::cli in a comment\n/// [`crate::govern`]\nuse crate::{protocol::keys::Principal, text};\nlet x = crate::eval::ops();";
    let got: Vec<String> = crate_paths(code).into_iter().collect();
    assert_eq!(got, ["eval", "protocol", "store", "text"]);
}
