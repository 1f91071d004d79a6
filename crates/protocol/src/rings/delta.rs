//! The DeltaEngine audit hash chain, byte for byte as the reference computes it
//! (agent-hypervisor.md §2.13; §5 item 1): SHA-256 over Python's
//! `json.dumps(obj, sort_keys=True)` of a fixed set of keys, parent `null` hashed as `""`.

use super::{UnixSeconds, iso_utc};
use serde::Serialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::fmt::Write as _;

/// One file change in a delta.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VfsChange {
    /// The path changed.
    pub path: String,
    /// E.g. `write`, `delete`.
    pub operation: String,
    /// Hash of the new content.
    pub content_hash: Option<String>,
    /// Hash of the old content.
    pub previous_hash: Option<String>,
    /// Who changed it.
    pub agent_did: Option<String>,
}

impl VfsChange {
    /// A change with the optional fields null.
    #[must_use]
    pub fn new(path: &str, operation: &str) -> Self {
        Self {
            path: path.into(),
            operation: operation.into(),
            content_hash: None,
            previous_hash: None,
            agent_did: None,
        }
    }
}

/// One captured turn.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Delta {
    /// Defaults to `delta:{turn}`.
    pub delta_id: String,
    /// 1-based turn counter.
    pub turn_id: u64,
    /// The session.
    pub session_id: String,
    /// The agent.
    pub agent_did: String,
    /// Capture time (hashed as a Python ISO string, microseconds).
    pub timestamp: UnixSeconds,
    /// Changes in capture order.
    pub changes: Vec<VfsChange>,
    /// The previous delta's hash; `None` for the first.
    pub parent_hash: Option<String>,
    /// SHA-256 (lowercase hex) of [`hash_input`].
    pub delta_hash: String,
}

/// The exact text hashed for a delta: `json.dumps` (sorted keys, `", "` / `": "` separators,
/// ASCII-only escapes) of `{agent_did, changes, delta_id, parent_hash ("" when null), session_id,
/// timestamp (Python ISO string), turn_id}`.
#[must_use]
pub fn hash_input(d: &Delta) -> String {
    let doc = json!({
        "agent_did": d.agent_did,
        "changes": d.changes,
        "delta_id": d.delta_id,
        "parent_hash": d.parent_hash.as_deref().unwrap_or(""),
        "session_id": d.session_id,
        "timestamp": iso_utc(d.timestamp).unwrap_or_default(),
        "turn_id": d.turn_id,
    });
    py_json_dumps(&doc)
}

/// The delta hash: lowercase hex SHA-256 of [`hash_input`].
#[must_use]
pub fn compute_hash(d: &Delta) -> String {
    let digest = Sha256::digest(hash_input(d).as_bytes());
    digest.iter().fold(String::with_capacity(64), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// Python's `json.dumps(value, sort_keys=True)` with the default `ensure_ascii=True`: `", "`
/// between items, `": "` after keys, keys sorted by code point, `\"`, `\\`, `\b \f \n \r \t`,
/// `\u00XX` for other characters outside 0x20–0x7E, `\uXXXX` (lowercase, surrogate pairs for
/// astral characters) for non-ASCII; `/` unescaped. Integers are written in full; floats in
/// serde_json's shortest form (which equals Python's `repr` for the usual range).
#[must_use]
pub fn py_json_dumps(v: &Value) -> String {
    let mut out = String::new();
    write_py(v, &mut out);
    out
}

fn write_py(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => write_py_str(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_py(item, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            // Python sorts str keys by code point; UTF-16 order would differ for astral keys.
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort_by(|a, b| a.chars().cmp(b.chars()));
            out.push('{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_py_str(k, out);
                out.push_str(": ");
                write_py(&m[k.as_str()], out);
            }
            out.push('}');
        }
    }
}

fn write_py_str(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{u:04x}");
                }
            }
        }
    }
    out.push('"');
}

/// Where a chain stopped verifying: `"Entry i hash mismatch"` or `"Entry i chain broken"`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChainError {
    /// The recomputed hash differs from `delta_hash` (a changed field, or a forged parent).
    #[error("Entry {0} hash mismatch")]
    HashMismatch(usize),
    /// `parent_hash` is not the previous entry's `delta_hash` (null for the first).
    #[error("Entry {0} chain broken")]
    ChainBroken(usize),
}

/// Verifies a chain (§2.13): for each entry in order, recompute the hash, then check the parent
/// link; stop at the first failure. An empty chain verifies. A truncated tail or a wholly
/// replaced chain is not detectable.
///
/// # Errors
/// The first [`ChainError`].
pub fn verify_chain(deltas: &[Delta]) -> Result<(), ChainError> {
    let mut previous: Option<&str> = None;
    for (i, d) in deltas.iter().enumerate() {
        if compute_hash(d) != d.delta_hash {
            return Err(ChainError::HashMismatch(i));
        }
        if d.parent_hash.as_deref() != previous {
            return Err(ChainError::ChainBroken(i));
        }
        previous = Some(&d.delta_hash);
    }
    Ok(())
}

/// The reference's `DeltaEngine` for one session.
#[derive(Debug, Clone, Default)]
pub struct DeltaEngine {
    session_id: String,
    turn: u64,
    deltas: Vec<Delta>,
}

impl DeltaEngine {
    /// An empty chain for `session_id`.
    #[must_use]
    pub fn new(session_id: &str) -> Self {
        Self { session_id: session_id.into(), turn: 0, deltas: Vec::new() }
    }

    /// Captures a turn at `now`: the turn counter goes up (from 1), the id defaults to
    /// `delta:{turn}`, the parent is the last delta's hash, the hash is computed and the delta
    /// appended.
    pub fn capture(
        &mut self,
        agent_did: &str,
        changes: Vec<VfsChange>,
        delta_id: Option<&str>,
        now: UnixSeconds,
    ) -> &Delta {
        self.turn += 1;
        let mut d = Delta {
            delta_id: delta_id.map_or_else(|| format!("delta:{}", self.turn), str::to_owned),
            turn_id: self.turn,
            session_id: self.session_id.clone(),
            agent_did: agent_did.into(),
            timestamp: now,
            changes,
            parent_hash: self.deltas.last().map(|p| p.delta_hash.clone()),
            delta_hash: String::new(),
        };
        d.delta_hash = compute_hash(&d);
        self.deltas.push(d);
        &self.deltas[self.deltas.len() - 1]
    }

    /// The captured deltas, in order.
    #[must_use]
    pub fn deltas(&self) -> &[Delta] {
        &self.deltas
    }

    /// The last hash, or `None` when empty.
    #[must_use]
    pub fn chain_root(&self) -> Option<&str> {
        self.deltas.last().map(|d| d.delta_hash.as_str())
    }

    /// [`verify_chain`] over this engine's deltas.
    ///
    /// # Errors
    /// The first [`ChainError`].
    pub fn verify(&self) -> Result<(), ChainError> {
        verify_chain(&self.deltas)
    }
}
