//! The `opentrustgraph-chain/v0` export envelope (§3): building one ([`export`]) and verifying
//! one ([`verify_export`]).

use super::{CHAIN_SCHEMA, Check, Finding, TOPIC, VerifyOptions, VerifyReport, show_opt, show_u64, verify_records};
use crate::canonical;
use serde_json::{Map, Value, json};

fn nonempty_str(rec: &Map<String, Value>, key: &str) -> bool {
    rec.get(key).and_then(Value::as_str).is_some_and(|s| !s.trim().is_empty())
}

/// Verifies an `opentrustgraph-chain/v0` export envelope: its shape, `total`, `root_hash`,
/// the declared `verified` flag, and every record by [`verify_records`].
#[must_use]
pub fn verify_export(envelope: &Value, opts: VerifyOptions<'_>) -> VerifyReport {
    let empty = Vec::new();
    let records = envelope.get("records").and_then(Value::as_array);
    let mut report = verify_records(records.unwrap_or(&empty), opts);
    let mut env = Vec::new();
    let mut bad = |m: String| env.push(Finding { index: None, check: Check::Envelope, message: m });
    if envelope.get("schema").and_then(Value::as_str) != Some(CHAIN_SCHEMA) {
        bad(format!("unsupported chain schema: {}", show_val(envelope.get("schema"))));
    }
    if records.is_none() {
        bad("`records` must be an array".into());
    }
    if let Some(map) = envelope.as_object() {
        for key in map.keys().filter(|k| !["schema", "chain", "records"].contains(&k.as_str())) {
            bad(format!("unknown envelope field `{key}`"));
        }
    }
    let chain = envelope.get("chain").and_then(Value::as_object);
    match chain {
        None => bad("`chain` must be an object".into()),
        Some(c) => {
            for key in c.keys() {
                if !["topic", "total", "root_hash", "verified", "generated_at", "producer"].contains(&key.as_str()) {
                    bad(format!("unknown chain field `{key}`"));
                }
            }
            if !nonempty_str(c, "topic") {
                bad("`chain.topic` must be a non-empty string".into());
            }
            if c.get("generated_at").and_then(Value::as_str).is_none_or(|s| crate::clock::parse_rfc3339(s).is_none()) {
                bad("`chain.generated_at` must be an RFC 3339 date-time".into());
            }
            let producer_ok = c
                .get("producer")
                .and_then(Value::as_object)
                .is_some_and(|p| nonempty_str(p, "name") && nonempty_str(p, "version") && p.len() == 2);
            if !producer_ok {
                bad("`chain.producer` must be {name, version}, both non-empty".into());
            }
            let n = records.map_or(0, Vec::len) as u64;
            match c.get("total").and_then(Value::as_u64) {
                Some(t) if t == n => {}
                t => env.push(Finding {
                    index: None,
                    check: Check::Totals,
                    message: format!("chain.total mismatch: declared {}, found {n}", show_u64(t)),
                }),
            }
            let declared_root = c.get("root_hash");
            let ok = match (declared_root, &report.root_hash) {
                (Some(Value::Null), None) => true,
                (Some(Value::String(d)), Some(r)) => d == r,
                _ => false,
            };
            if !ok {
                env.push(Finding {
                    index: None,
                    check: Check::Totals,
                    message: format!(
                        "chain.root_hash mismatch: declared {}, computed {}",
                        show_val(declared_root),
                        show_opt(report.root_hash.as_deref())
                    ),
                });
            }
            match c.get("verified").and_then(Value::as_bool) {
                None => env.push(Finding {
                    index: None,
                    check: Check::Envelope,
                    message: "`chain.verified` must be a boolean".into(),
                }),
                Some(true) if !(report.is_valid() && env.is_empty()) => env.push(Finding {
                    index: None,
                    check: Check::Envelope,
                    message: "chain.verified is true but verification failed".into(),
                }),
                Some(_) => {}
            }
        }
    }
    report.findings.extend(env);
    report
}

fn show_val(v: Option<&Value>) -> String {
    v.map_or_else(|| "missing".to_owned(), canonical::to_canonical_string)
}

/// Builds an `opentrustgraph-chain/v0` envelope over `records`, with `verified` set from a full
/// verification (including the approval rule and, with `opts.pinned`, signatures).
#[must_use]
pub fn export(records: Vec<Value>, opts: VerifyOptions<'_>, generated_at: &str) -> Value {
    let report = verify_records(&records, opts);
    json!({
        "schema": CHAIN_SCHEMA,
        "chain": {
            "topic": TOPIC,
            "total": records.len(),
            "root_hash": report.root_hash,
            "verified": report.is_valid(),
            "generated_at": generated_at,
            "producer": {"name": "warrant", "version": env!("CARGO_PKG_VERSION")},
        },
        "records": records,
    })
}
