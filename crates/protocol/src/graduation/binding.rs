//! Exact-action authority (A2A extension v1, `trust-graduation.md` §1.4, §3.5, §3.6): the
//! `ActionBinding` that commits to one exact action with SHA-256 digests, the single-use
//! `ApprovalGrant` made from it, and grant validation with the reference's reason codes.
//!
//! Digests are `sha256:` + lower-case hex of the SHA-256 of canonical JSON ([`crate::canonical`]),
//! the repository's convention. All functions are pure: time is an input.

use crate::canonical;
use serde_json::{Map, Value, json};
use time::OffsetDateTime;

/// `protocol` of a binding.
pub const BINDING_PROTOCOL: &str = "trust-graduation-action-binding";
/// `protocol` of a grant.
pub const GRANT_PROTOCOL: &str = "trust-graduation-authorization";
/// `version` of both.
pub const VERSION: &str = "1.0";
/// Default lifetime of a binding without an explicit expiry (10 minutes, §3.5).
pub const DEFAULT_TTL: time::Duration = time::Duration::minutes(10);

/// A timestamp as JavaScript's `Date.toISOString` writes it: UTC, always three fraction digits,
/// e.g. `2026-05-30T12:00:00.000Z`.
#[must_use]
pub fn js_iso(t: OffsetDateTime) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    if let Ok(year) = u16::try_from(t.year())
        && year <= 9999
    {
        // Four-digit years: write the digits directly (what the format below gives).
        let mut b = *b"0000-00-00T00:00:00.000Z";
        let mut put = |at: usize, width: usize, mut n: u32| {
            for i in (at..at + width).rev() {
                b[i] = b'0' + (n % 10) as u8;
                n /= 10;
            }
        };
        put(0, 4, u32::from(year));
        put(5, 2, u32::from(u8::from(t.month())));
        put(8, 2, u32::from(t.day()));
        put(11, 2, u32::from(t.hour()));
        put(14, 2, u32::from(t.minute()));
        put(17, 2, u32::from(t.second()));
        put(20, 3, u32::from(t.millisecond()));
        // ASCII digits and punctuation: the check cannot fail.
        return String::from_utf8(b.to_vec()).unwrap_or_default();
    }
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.millisecond()
    )
}

/// `sha256:<hex>` of a value's canonical JSON.
#[must_use]
pub fn digest(v: &Value) -> String {
    canonical::canonical_hash(v)
}

/// What a binding commits to (§3.5). Strings may be empty; `expires_at` and `nonce` are omitted
/// from the binding when empty, as the reference does.
#[derive(Debug, Clone, PartialEq)]
pub struct BindingInput<'a> {
    /// Canonical action class.
    pub action_class: &'a str,
    /// Workspace.
    pub workspace: &'a str,
    /// Principal on whose behalf the action runs.
    pub principal: &'a str,
    /// The requesting agent.
    pub requested_by: &'a str,
    /// Tenant.
    pub tenant: &'a str,
    /// Target (recipient, destination).
    pub target: &'a str,
    /// The exact provider input; its digest is `inputHash`.
    pub input: &'a Value,
    /// Constraints (an object).
    pub constraints: &'a Map<String, Value>,
    /// Expiry (JS ISO form), or empty.
    pub expires_at: &'a str,
    /// Nonce, or empty.
    pub nonce: &'a str,
}

/// Builds an `ActionBinding` with its `inputHash` and `actionHash`.
#[must_use]
pub fn bind_action(b: &BindingInput<'_>) -> Value {
    let input_hash = digest(b.input);
    let action_hash = action_hash(b, &input_hash);
    binding_object(b, input_hash, action_hash)
}

/// `actionHash` of a binding (§3.5): `sha256:` + hex of the SHA-256 of the binding's canonical
/// JSON without `actionHash`, written member by member without building the object.
pub(crate) fn action_hash(b: &BindingInput<'_>, input_hash: &str) -> String {
    canonical::prefixed(&canonical::digest_written(|w| write_binding(b, input_hash, None, w)))
}

/// The `ActionBinding` object with its digests already computed ([`digest`] of the input and
/// [`action_hash`]).
pub(crate) fn binding_object(b: &BindingInput<'_>, input_hash: String, action_hash: String) -> Value {
    let mut m = Map::new();
    m.insert("protocol".into(), json!(BINDING_PROTOCOL));
    m.insert("version".into(), json!(VERSION));
    m.insert("actionClass".into(), json!(b.action_class));
    m.insert("workspace".into(), json!(b.workspace));
    m.insert("principal".into(), json!(b.principal));
    m.insert("requestedBy".into(), json!(b.requested_by));
    m.insert("tenant".into(), json!(b.tenant));
    m.insert("target".into(), json!(b.target));
    m.insert("inputHash".into(), Value::String(input_hash));
    m.insert("constraints".into(), Value::Object(b.constraints.clone()));
    if !b.expires_at.is_empty() {
        m.insert("expiresAt".into(), json!(b.expires_at));
    }
    if !b.nonce.is_empty() {
        m.insert("nonce".into(), json!(b.nonce));
    }
    m.insert("actionHash".into(), json!(action_hash));
    Value::Object(m)
}

/// Writes a binding as canonical JSON: its members in sorted (byte) order, `actionHash` among
/// them when given. Without it these are the bytes `actionHash` is the digest of; with it, the
/// canonical (and compact `BTreeMap`-ordered) serialization of [`binding_object`].
pub(crate) fn write_binding<W: std::io::Write + ?Sized>(
    b: &BindingInput<'_>,
    input_hash: &str,
    action_hash: Option<&str>,
    w: &mut W,
) -> std::io::Result<()> {
    w.write_all(b"{\"actionClass\":")?;
    canonical::write_str(b.action_class, w)?;
    if let Some(hash) = action_hash {
        w.write_all(b",\"actionHash\":")?;
        canonical::write_str(hash, w)?;
    }
    w.write_all(b",\"constraints\":")?;
    canonical::write_canonical_object(b.constraints, w)?;
    if !b.expires_at.is_empty() {
        w.write_all(b",\"expiresAt\":")?;
        canonical::write_str(b.expires_at, w)?;
    }
    w.write_all(b",\"inputHash\":")?;
    canonical::write_str(input_hash, w)?;
    if !b.nonce.is_empty() {
        w.write_all(b",\"nonce\":")?;
        canonical::write_str(b.nonce, w)?;
    }
    for (key, text) in [
        (&b",\"principal\":"[..], b.principal),
        (b",\"protocol\":", BINDING_PROTOCOL),
        (b",\"requestedBy\":", b.requested_by),
        (b",\"target\":", b.target),
        (b",\"tenant\":", b.tenant),
        (b",\"version\":", VERSION),
        (b",\"workspace\":", b.workspace),
    ] {
        w.write_all(key)?;
        canonical::write_str(text, w)?;
    }
    w.write_all(b"}")
}

/// Why a binding cannot be granted ([`create_grant`]); the texts are the reference's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BindingError {
    /// The binding has no nonce.
    #[error("binding.nonce is required")]
    NoNonce,
    /// The binding has no expiry.
    #[error("binding.expiresAt is required")]
    NoExpiry,
}

/// Builds the single-use grant for a binding (`approval-grant.schema.json`): state `approved`,
/// scope `once`, `maxExecutions` 1, `executionCount` 0, revocable, expiring with the binding.
///
/// # Errors
/// [`BindingError::NoNonce`] (`binding.nonce is required`, the reference's message) when the
/// binding has no nonce, [`BindingError::NoExpiry`] when it has no expiry.
pub fn create_grant(binding: &Value, grant_id: &str, issuer: &str, issued_at: &str) -> Result<Value, BindingError> {
    let s = |k: &str| binding.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
    if s("nonce").is_empty() {
        return Err(BindingError::NoNonce);
    }
    if s("expiresAt").is_empty() {
        return Err(BindingError::NoExpiry);
    }
    Ok(json!({
        "protocol": GRANT_PROTOCOL,
        "version": VERSION,
        "state": "approved",
        "grantId": grant_id,
        "issuer": issuer,
        "principal": s("principal"),
        "requestedBy": s("requestedBy"),
        "workspace": s("workspace"),
        "tenant": s("tenant"),
        "actionClass": s("actionClass"),
        "target": s("target"),
        "inputHash": s("inputHash"),
        "actionHash": s("actionHash"),
        "nonce": s("nonce"),
        "scope": "once",
        "maxExecutions": 1,
        "executionCount": 0,
        "issuedAt": issued_at,
        "expiresAt": s("expiresAt"),
        "revocable": true,
    }))
}

/// The success code of [`validate_grant`].
pub const GRANT_ELIGIBLE: &str = "eligible_exact_action_pending_atomic_consumption";

/// Validates a presented approval against a binding at `now`, in the reference's order (§3.6);
/// the first failure wins.
///
/// # Errors
/// The reference's reason code, e.g. `approval_missing_action_hash`, `action_hash_mismatch`,
/// `grant_expired`.
pub fn validate_grant(
    binding: &Value,
    approval: Option<&Value>,
    now: OffsetDateTime,
) -> Result<&'static str, &'static str> {
    let Some(b) = binding.as_object() else { return Err("missing_action_binding") };
    let bs = |k: &str| b.get(k).and_then(Value::as_str);
    if bs("protocol") != Some(BINDING_PROTOCOL) || bs("version") != Some(VERSION) {
        return Err("action_binding_protocol_invalid");
    }
    if bs("actionHash") != Some(canonical::prefixed(&canonical::canonical_digest_without(b, "actionHash")).as_str()) {
        return Err("action_binding_integrity_failed");
    }
    if bs("nonce").is_none_or(str::is_empty) {
        return Err("action_binding_nonce_missing");
    }
    if bs("expiresAt").is_none_or(str::is_empty) {
        return Err("action_binding_expiry_missing");
    }
    let Some(a) =
        approval.and_then(Value::as_object).filter(|a| a.get("state").and_then(Value::as_str) == Some("approved"))
    else {
        return Err("approval_not_approved");
    };
    let gs = |k: &str| a.get(k).and_then(Value::as_str);
    if gs("actionHash").is_none_or(str::is_empty) {
        return Err("approval_missing_action_hash");
    }
    if gs("protocol") != Some(GRANT_PROTOCOL) || gs("version") != Some(VERSION) {
        return Err("approval_protocol_invalid");
    }
    for (key, code) in [
        ("actionHash", "action_hash_mismatch"),
        ("inputHash", "input_hash_mismatch"),
        ("actionClass", "action_class_mismatch"),
        ("principal", "principal_mismatch"),
        ("requestedBy", "requesting_agent_mismatch"),
        ("workspace", "workspace_mismatch"),
        ("tenant", "tenant_mismatch"),
        ("target", "target_mismatch"),
        ("nonce", "nonce_mismatch"),
    ] {
        if gs(key) != bs(key) {
            return Err(code);
        }
    }
    if gs("grantId").is_none_or(|s| s.trim().is_empty()) || gs("issuer").is_none_or(|s| s.trim().is_empty()) {
        return Err("grant_identity_missing");
    }
    let max = a.get("maxExecutions").and_then(Value::as_u64);
    if gs("scope") != Some("once") || max != Some(1) {
        return Err("grant_not_single_use");
    }
    let Some(count) = a.get("executionCount").and_then(Value::as_u64) else {
        return Err("grant_execution_count_invalid");
    };
    if count >= 1 {
        return Err("grant_already_consumed");
    }
    if a.get("revocable") != Some(&Value::Bool(true)) {
        return Err("grant_not_revocable");
    }
    if a.get("revokedAt").is_some_and(|v| !v.is_null()) {
        return Err("grant_revoked");
    }
    let Some(expires) = gs("expiresAt").filter(|s| !s.is_empty()) else { return Err("grant_missing_expiry") };
    if Some(expires) != bs("expiresAt") {
        return Err("grant_expiry_mismatch");
    }
    let (Some(issued), Some(expires)) =
        (gs("issuedAt").and_then(crate::clock::parse_rfc3339), crate::clock::parse_rfc3339(expires))
    else {
        return Err("invalid_grant_time");
    };
    if issued > now {
        return Err("grant_not_yet_valid");
    }
    if expires <= now {
        return Err("grant_expired");
    }
    Ok(GRANT_ELIGIBLE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    fn binding() -> Value {
        binding_of("Exact body")
    }

    fn binding_of(body: &str) -> Value {
        let input = json!({"to": "buyer@example.com", "subject": "Hello", "body": body});
        bind_action(&BindingInput {
            action_class: "email.send.external",
            workspace: "workspace-1",
            principal: "principal-1",
            requested_by: "mail-agent",
            tenant: "tenant-1",
            target: "buyer@example.com",
            input: &input,
            constraints: json!({"scope": "once"}).as_object().expect("an object"),
            expires_at: "2026-08-16T12:05:00.000Z",
            nonce: "nonce-1",
        })
    }

    fn grant(b: &Value) -> Value {
        create_grant(b, "grant-1", "principal:principal-1", "2026-08-16T12:00:00.000Z").expect("grant")
    }

    #[test]
    fn js_iso_writes_three_fraction_digits() {
        use time::macros::datetime;
        assert_eq!(js_iso(datetime!(2026-05-30 12:00 UTC)), "2026-05-30T12:00:00.000Z");
        assert_eq!(js_iso(datetime!(0007-01-02 03:04:05.0609 +02:00)), "0007-01-02T01:04:05.060Z");
        assert_eq!(js_iso(datetime!(9999-12-31 23:59:59.999 UTC)), "9999-12-31T23:59:59.999Z");
        assert_eq!(js_iso(datetime!(-0001-12-31 23:59:59.999 UTC)), "-001-12-31T23:59:59.999Z");
    }

    #[test]
    fn reference_grant_checks() {
        let b = binding();
        let at = |m: u8| datetime!(2026-08-16 12:00 UTC) + time::Duration::minutes(i64::from(m));
        assert_eq!(validate_grant(&b, Some(&grant(&b)), at(1)), Ok(GRANT_ELIGIBLE));
        assert_eq!(validate_grant(&b, Some(&grant(&b)), at(5)), Err("grant_expired"));
        let mut g = grant(&b);
        g["revokedAt"] = json!("2026-08-16T12:00:30.000Z");
        assert_eq!(validate_grant(&b, Some(&g), at(1)), Err("grant_revoked"));
        let mut g = grant(&b);
        g["executionCount"] = json!(1);
        assert_eq!(validate_grant(&b, Some(&g), at(1)), Err("grant_already_consumed"));
        g["executionCount"] = json!("0");
        assert_eq!(validate_grant(&b, Some(&g), at(1)), Err("grant_execution_count_invalid"));
        let mut g = grant(&b);
        g["expiresAt"] = json!("2026-08-16T13:05:00.000Z");
        assert_eq!(validate_grant(&b, Some(&g), at(1)), Err("grant_expiry_mismatch"));
        let mut g = grant(&b);
        g["issuedAt"] = json!("2026-08-16T12:02:00.000Z");
        assert_eq!(validate_grant(&b, Some(&g), at(1)), Err("grant_not_yet_valid"));
        let mut tampered = b.clone();
        tampered["target"] = json!("other@example.com");
        assert_eq!(validate_grant(&tampered, Some(&grant(&b)), at(1)), Err("action_binding_integrity_failed"));
        let mut g = grant(&b);
        g["protocol"] = json!("unknown");
        assert_eq!(validate_grant(&b, Some(&g), at(1)), Err("approval_protocol_invalid"));
        let plain = json!({"state": "approved", "scope": "once"});
        assert_eq!(validate_grant(&b, Some(&plain), at(1)), Err("approval_missing_action_hash"));
        assert_eq!(validate_grant(&b, None, at(1)), Err("approval_not_approved"));
        let mut no_nonce = b.clone();
        no_nonce.as_object_mut().map(|m| m.remove("nonce"));
        assert!(create_grant(&no_nonce, "g", "i", "t").is_err());
    }

    proptest::proptest! {
        // The member-by-member writer gives exactly the canonical JSON of the object the binding
        // builds, and `actionHash` is the digest of that object without it, whatever the text
        // (quotes, backslashes, controls, non-ASCII) and constraints.
        #[test]
        fn the_streamed_binding_is_the_canonical_object(
            fields in proptest::collection::vec("(?s).{0,12}", 8),
            keys in proptest::collection::vec("(?s).{0,6}", 0..4),
            numbers in proptest::collection::vec(proptest::num::f64::NORMAL, 4),
        ) {
            let constraints: Map<String, Value> =
                keys.iter().zip(numbers).map(|(k, n)| (k.clone(), json!([n, k, {"z": null, "a": n}]))).collect();
            let input = json!({"body": fields[6], "to": fields[5]});
            let b = BindingInput {
                action_class: &fields[0],
                workspace: &fields[1],
                principal: &fields[2],
                requested_by: &fields[3],
                tenant: &fields[4],
                target: &fields[5],
                input: &input,
                constraints: &constraints,
                expires_at: &fields[6],
                nonce: &fields[7],
            };
            let object = bind_action(&b);
            let map = object.as_object().expect("an object");
            let hash = map["actionHash"].as_str().expect("a string");
            proptest::prop_assert_eq!(
                hash,
                canonical::prefixed(&canonical::canonical_digest_without(map, "actionHash"))
            );
            let mut streamed = Vec::new();
            write_binding(&b, &digest(&input), Some(hash), &mut streamed).expect("write into a Vec");
            proptest::prop_assert_eq!(String::from_utf8(streamed).expect("UTF-8"), canonical::to_canonical_string(&object));
            proptest::prop_assert_eq!(canonical::to_canonical_string(&object), serde_json::to_string(&object).expect("JSON"));
        }
    }

    #[test]
    fn a_mutated_input_is_a_different_action() {
        let b = binding();
        let other = binding_of("Mutated body");
        assert_eq!(
            validate_grant(&other, Some(&grant(&b)), datetime!(2026-08-16 12:01 UTC)),
            Err("action_hash_mismatch")
        );
    }
}
