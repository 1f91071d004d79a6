//! The layers are crates, and the crate graph guards them (`docs/architecture.md`, Layers): each
//! workspace crate depends only on the layers below its own, and the protocol's whole dependency
//! tree holds no async runtime, terminal, filesystem helper or command-line parser. Read from
//! `cargo tree`, the graph Cargo itself resolves, with every feature on.

use std::collections::{BTreeMap, BTreeSet};

/// The workspace's crates and their layer: a crate may depend on crates of lower layers only.
const LAYERS: &[(&str, u8)] = &[
    ("warrant-protocol", 0),
    ("warrant-store", 1),
    ("warrant-engine", 2),
    ("warrant-console", 3),
    ("warrant-gateway", 3),
    ("warrant", 4),
];

/// Crates the protocol never reaches, directly or through another crate: runtimes, terminals,
/// the network, files and processes, key files at rest, the command line. The protocol is pure
/// functions over values.
const NOT_IN_THE_PROTOCOL: &[&str] = &[
    "tokio",
    "mio",
    "async-nats",
    "ratatui",
    "crossterm",
    "notify",
    "rmcp",
    "clap",
    "color-eyre",
    "tempfile",
    "directories",
    "rustix",
    "age",
    "rpassword",
    "uzers",
    "mimalloc",
    "tracing-subscriber",
];

/// The packages `package` depends on (normal dependencies, every feature on, for this host):
/// its direct ones with `depth = Some(1)`, its whole tree with `None`. Names only, without
/// `package` itself. From `cargo tree`, the graph Cargo itself resolves.
fn dependencies(package: &str, depth: Option<u32>) -> BTreeSet<String> {
    let mut cmd = std::process::Command::new(env!("CARGO"));
    cmd.args(["tree", "--offline", "--all-features", "-e", "normal", "--prefix", "none", "-f", "{p}", "-p", package])
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    if let Some(d) = depth {
        cmd.args(["--depth", &d.to_string()]);
    }
    let out = cmd.output().expect("run cargo tree");
    assert!(out.status.success(), "cargo tree -p {package}: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).expect("cargo tree prints UTF-8");
    // Each line is `name vX.Y.Z [(path)] [(*)]`; the first is the package itself.
    text.lines().skip(1).filter_map(|l| l.split_whitespace().next()).map(str::to_owned).collect()
}

#[test]
fn each_crate_depends_only_on_the_layers_below_it() {
    let layer: BTreeMap<&str, u8> = LAYERS.iter().copied().collect();
    let mut edges = 0;
    for (from, from_layer) in LAYERS {
        for to in dependencies(from, Some(1)) {
            if let Some(&to_layer) = layer.get(to.as_str()) {
                edges += 1;
                assert!(to_layer < *from_layer, "{from} (layer {from_layer}) depends on {to} (layer {to_layer})");
            }
        }
    }
    assert!(edges >= 9, "the workspace crates depend on each other ({edges} edges)");
}

#[test]
fn every_workspace_crate_has_a_layer() {
    let manifest = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml")).expect("Cargo.toml");
    let members: BTreeSet<String> = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/crates"))
        .expect("crates/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.join("Cargo.toml").exists())
        .map(|p| format!("crates/{}", p.file_name().expect("name").to_string_lossy()))
        .collect();
    for member in &members {
        assert!(manifest.contains(&format!("\"{member}\"")), "{member} is a workspace member");
        let own =
            std::fs::read_to_string(format!("{}/{member}/Cargo.toml", env!("CARGO_MANIFEST_DIR"))).expect("manifest");
        let name = own
            .lines()
            .find_map(|l| l.strip_prefix("name = \"").and_then(|n| n.strip_suffix('"')))
            .expect("package name");
        assert!(LAYERS.iter().any(|(n, _)| *n == name), "{name} ({member}) has a layer in LAYERS");
    }
    assert_eq!(members.len() + 1, LAYERS.len(), "LAYERS names each crate of crates/ and warrant");
}

#[test]
fn the_protocol_reaches_no_runtime_terminal_or_filesystem_crate() {
    let reached = dependencies("warrant-protocol", None);
    assert!(reached.contains("serde_json") && reached.contains("ed25519-dalek"), "the walk follows the graph");
    let found: Vec<&&str> = NOT_IN_THE_PROTOCOL.iter().filter(|c| reached.contains(**c)).collect();
    assert!(found.is_empty(), "the protocol depends, directly or not, on {found:?}");
    for layer in LAYERS.iter().map(|(n, _)| *n).filter(|n| *n != "warrant-protocol") {
        assert!(!reached.contains(layer), "the protocol depends on {layer}");
    }
}

/// The crates of `package`'s tree (normal dependencies, every feature on) that come in more than
/// one version, by name.
fn duplicated(package: &str) -> BTreeSet<String> {
    let out = std::process::Command::new(env!("CARGO"))
        .args(["tree", "--offline", "--all-features", "-e", "normal", "-p", package])
        .args(["--duplicates", "--depth", "0", "--prefix", "none", "-f", "{p}"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run cargo tree");
    assert!(out.status.success(), "cargo tree: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    text.lines().filter_map(|l| l.split_whitespace().next()).map(str::to_owned).collect()
}

/// The protocol's cryptography is one RustCrypto generation: none of the hash, signature,
/// key-encoding and randomness crates of its tree comes in two versions (two `digest`s, say,
/// whose digest types do not meet). The whole build holds two, through `age`, `nkeys` and
/// `rmcp` above the protocol, as `docs/conformance.md` ("Cryptography crates") says.
#[test]
fn the_protocol_uses_one_generation_of_the_rustcrypto_crates() {
    const CRYPTO: [&str; 14] = [
        "sha2",
        "digest",
        "ed25519",
        "ed25519-dalek",
        "curve25519-dalek",
        "signature",
        "pkcs8",
        "spki",
        "der",
        "rand_core",
        "crypto-common",
        "block-buffer",
        "base64ct",
        "subtle",
    ];
    let twice: Vec<String> =
        duplicated("warrant-protocol").into_iter().filter(|c| CRYPTO.contains(&c.as_str())).collect();
    assert!(twice.is_empty(), "the protocol's tree holds two versions of {twice:?}");
    let whole = duplicated("warrant");
    assert!(whole.contains("sha2") && whole.contains("ed25519-dalek"), "the docs say the build holds two: {whole:?}");
}
