//! The checks of one record that need no other record: its shape, `chain_index`, `entry_hash`,
//! the approval rule and its signature.

use super::fields::{
    FieldRef, FieldRefs, KEY_ACTION, KEY_AGENT, KEY_APPROVER, KEY_AUTONOMY_TIER, KEY_CHAIN_INDEX, KEY_COST_USD,
    KEY_ENTRY_HASH, KEY_METADATA, KEY_OUTCOME, KEY_PREVIOUS_HASH, KEY_RECORD_ID, KEY_SCHEMA, KEY_TIMESTAMP,
    KEY_TRACE_ID,
};
use super::{
    ACCEPTED_RECORD_SCHEMAS, Check, Finding, OUTCOMES, RECORD_KEYS, TIERS, VerifyOptions, VerifyReport, show_opt,
    show_u64,
};
use crate::canonical::{self, is_sha256_string};
use crate::keys::PinnedKeys;
use serde_json::{Map, Value};

/// The findings of one record that need no other record, in the order reports list them
/// around the sequential checks (previous_hash, lineage, duplicates): `findings` holds the
/// groups one after another, and `ends` where the first three end. Kept small (40 bytes), since
/// one per record crosses from a worker to the sequencer.
#[derive(Default)]
pub(super) struct Local {
    /// Shape and chain_index; entry_hash and the approval rule; the strict-signature rule; the
    /// Ed25519 signature.
    pub(super) findings: Vec<Finding>,
    /// The end of each of the first three groups in `findings`.
    pub(super) ends: [u32; 3],
    /// The signature was checked and verified.
    pub(super) signed_ok: bool,
    /// The signature was checked against the verifier's pins and failed: the last finding says
    /// why. The sequencer checks it again against the pins the chain's key events added
    /// ([`crate::key_event::ChainKeys`]).
    pub(super) signed_failed: bool,
}

impl Local {
    /// Ends the current group.
    fn end_group(&mut self, group: usize) {
        self.ends[group] = u32::try_from(self.findings.len()).unwrap_or(u32::MAX);
    }
}

/// Every check of record `i` that needs no other record. `computed` is its recomputed
/// `entry_hash` digest (from the canonical bytes or from the parsed value); `full` is the whole
/// parsed record, needed when its metadata has a member the checks read (`None` means it has
/// none: no approval rule, no signature).
pub(super) fn check_local(
    i: usize,
    fields: &FieldRefs<'_>,
    unknown: Vec<String>,
    full: Option<&Map<String, Value>>,
    computed: &[u8; 32],
    opts: VerifyOptions<'_>,
) -> Local {
    let mut report = VerifyReport::default();
    check_record_shape(i, fields, unknown, &mut report);
    let expected_index = i as u64 + 1;
    match fields[KEY_CHAIN_INDEX].as_ref().and_then(FieldRef::as_u64) {
        Some(n) if n == expected_index => {}
        found => report.push(
            Some(i),
            Check::ChainIndex,
            format!("expected chain_index {expected_index}, found {}", show_u64(found)),
        ),
    }
    let mut local = Local { findings: std::mem::take(&mut report.findings), ..Local::default() };
    local.end_group(0);
    let recorded = match &fields[KEY_ENTRY_HASH] {
        Some(FieldRef::Str(s)) => Some(&**s),
        _ => None,
    };
    if recorded.map(str::as_bytes) != Some(&canonical::prefixed_bytes(computed)[..]) {
        local.findings.push(Finding {
            index: Some(i),
            check: Check::EntryHash,
            message: format!(
                "entry_hash mismatch; recomputed {}, stored {}",
                canonical::prefixed(computed),
                show_opt(recorded)
            ),
        });
    }
    let Some(full) = full else {
        local.end_group(1);
        local.end_group(2);
        return local;
    };
    report.findings = std::mem::take(&mut local.findings);
    check_approval(i, full, &mut report);
    local.findings = report.findings;
    local.end_group(1);
    let meta = full.get("metadata");
    let warrant_signed = crate::decision::is_warrant_signed(meta);
    let has_signatures = meta
        .and_then(|m| m.get("approval"))
        .and_then(|a| a.get("signatures"))
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    if opts.strict_signatures && has_signatures && !warrant_signed {
        local.findings.push(Finding {
            index: Some(i),
            check: Check::Signature,
            message: "approval signatures that are not warrant decisions cannot be verified against pinned keys".into(),
        });
    }
    local.end_group(2);
    if let Some(pinned) = opts.pinned.filter(|_| warrant_signed) {
        match crate::decision::check_record_signature(full, pinned) {
            Ok(ok) => local.signed_ok = ok,
            Err(message) => {
                local.findings.push(Finding {
                    index: Some(i),
                    check: signature_check(full, pinned),
                    message: message.to_string(),
                });
                local.signed_failed = true;
            }
        }
    }
    local
}

/// The check a failed warrant signature of `rec` counts against: [`Check::UnpinnedKey`] when its
/// first signature names a key `pinned` does not hold, else [`Check::Signature`].
pub(super) fn signature_check(rec: &Map<String, Value>, pinned: &PinnedKeys) -> Check {
    match crate::key_event::first_signer(rec) {
        Some((fp, _)) if pinned.get(fp).is_none() => Check::UnpinnedKey,
        _ => Check::Signature,
    }
}

/// The v0.1 record schema as explicit checks (§2.1), so reports name the field. `f` holds the
/// record's [`RECORD_KEYS`] fields; `unknown` its other top-level keys.
pub(super) fn check_record_shape(i: usize, f: &FieldRefs<'_>, unknown: Vec<String>, report: &mut VerifyReport) {
    let mut bad = |msg: String| report.push(Some(i), Check::RecordSchema, msg);
    let str_at = |k: usize| match &f[k] {
        Some(FieldRef::Str(s)) => Some(&**s),
        _ => None,
    };
    match str_at(KEY_SCHEMA) {
        Some(s) if ACCEPTED_RECORD_SCHEMAS.contains(&s) => {}
        Some(s) => bad(format!("unsupported record schema {s:?}")),
        None => bad("missing string field `schema`".into()),
    }
    for k in [KEY_RECORD_ID, KEY_AGENT, KEY_ACTION, KEY_TRACE_ID] {
        if str_at(k).is_none_or(|s| s.trim().is_empty()) {
            bad(format!("`{}` must be a non-empty string", RECORD_KEYS[k]));
        }
    }
    match &f[KEY_APPROVER] {
        None | Some(FieldRef::Null) => {}
        Some(FieldRef::Str(s)) if !s.is_empty() => {}
        Some(_) => bad("`approver` must be null or a non-empty string".into()),
    }
    if !str_at(KEY_OUTCOME).is_some_and(|s| OUTCOMES.contains(&s)) {
        bad(format!("`outcome` must be one of {OUTCOMES:?}"));
    }
    if !str_at(KEY_AUTONOMY_TIER).is_some_and(|s| TIERS.contains(&s)) {
        bad(format!("`autonomy_tier` must be one of {TIERS:?}"));
    }
    if str_at(KEY_TIMESTAMP).is_none_or(|s| crate::clock::parse_rfc3339(s).is_none()) {
        bad("`timestamp` must be an RFC 3339 date-time".into());
    }
    match &f[KEY_COST_USD] {
        None | Some(FieldRef::Null | FieldRef::U64(_)) => {}
        Some(FieldRef::Number(x)) if *x >= 0.0 => {}
        Some(_) => bad("`cost_usd` must be null or a number >= 0".into()),
    }
    if f[KEY_CHAIN_INDEX].as_ref().and_then(FieldRef::as_u64).is_none_or(|n| n < 1) {
        bad("`chain_index` must be an integer >= 1".into());
    }
    match &f[KEY_PREVIOUS_HASH] {
        Some(FieldRef::Null) => {}
        Some(FieldRef::Str(s)) if is_sha256_string(s) => {}
        Some(_) => bad("`previous_hash` must be null or sha256:<64 hex>".into()),
        None => bad("missing field `previous_hash`".into()),
    }
    if !str_at(KEY_ENTRY_HASH).is_some_and(is_sha256_string) {
        bad("`entry_hash` must be sha256:<64 lower-case hex>".into());
    }
    if !matches!(f[KEY_METADATA], Some(FieldRef::Object)) {
        bad("`metadata` must be an object".into());
    }
    for key in unknown {
        bad(format!("unknown top-level field `{key}`"));
    }
}

/// The approval-evidence rule (§2.4): fires when `outcome` is `success`, `autonomy_tier` is
/// `act_with_approval` and `metadata.approval.required` is the JSON literal `true`.
pub(super) fn check_approval(i: usize, rec: &Map<String, Value>, report: &mut VerifyReport) {
    let approval = rec.get("metadata").and_then(|m| m.get("approval"));
    let fires = rec.get("outcome").and_then(Value::as_str) == Some("success")
        && rec.get("autonomy_tier").and_then(Value::as_str) == Some("act_with_approval")
        && approval.and_then(|a| a.get("required")) == Some(&Value::Bool(true));
    if !fires {
        return;
    }
    if rec.get("approver").and_then(Value::as_str).is_none_or(|s| s.trim().is_empty()) {
        report.push(Some(i), Check::Approval, "approval required but approver is empty");
    }
    let approval = approval.unwrap_or(&Value::Null);
    if approval.get("quorum").and_then(Value::as_u64).is_none_or(|q| q < 1) {
        report.push(Some(i), Check::Approval, "approval required but quorum is missing or < 1");
    }
    let sigs = approval.get("signatures").and_then(Value::as_array);
    match sigs {
        Some(list) if !list.is_empty() => {
            for (k, sig) in list.iter().enumerate() {
                let ok = ["reviewer", "signature"]
                    .iter()
                    .all(|key| sig.get(key).and_then(Value::as_str).is_some_and(|s| !s.is_empty()))
                    && sig
                        .get("signed_at")
                        .and_then(Value::as_str)
                        .is_some_and(|s| crate::clock::parse_rfc3339(s).is_some());
                if !ok {
                    report.push(
                        Some(i),
                        Check::Approval,
                        format!("approval signature {k} lacks reviewer, signed_at (RFC 3339) or signature"),
                    );
                }
            }
        }
        _ => report.push(Some(i), Check::Approval, "approval required but signatures are empty"),
    }
}
