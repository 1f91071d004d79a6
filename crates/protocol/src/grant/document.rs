//! The signed documents: a grant's and a revocation's canonical documents, their signature and
//! chain record body, and the check of a grant record's signature.

use super::{GRANT_ACTION, GRANT_DOMAIN, GrantEvent, GrantInput, REVOKE_ACTION, Scope};
use crate::chain;
use crate::decision::{SignedDecision, sign_document};
use crate::keys::{PinnedKeys, Principal};
use serde_json::{Map, Value, json};

/// A fresh grant id: `grant-<uuid v7>`.
#[must_use]
pub fn new_grant_id() -> String {
    format!("grant-{}", uuid::Uuid::now_v7().simple())
}

/// The canonical document signed for a grant.
#[must_use]
pub fn grant_document(input: &GrantInput, principal: &str, key_fingerprint: &str) -> Value {
    let mut doc = json!({
        "domain": GRANT_DOMAIN,
        "grant": "issue",
        "grant_id": input.grant_id,
        "scope": input.scope.as_str(),
        "agent": input.agent,
        "notebook": input.notebook,
        "action_class": input.action_class,
        "tool": input.tool,
        "covers_destructive": input.covers_destructive,
        "packet_id": input.packet_id,
        "principal": principal,
        "key": key_fingerprint,
        "decided_at": input.decided_at,
    });
    match &input.scope {
        Scope::Session(s) => doc["session"] = json!(s),
        Scope::Pattern(p) => doc["pattern"] = json!(p.to_string()),
        Scope::Class(n) => doc["constraints"] = n.to_json(),
        Scope::Until => {}
    }
    if let Some(t) = &input.expires_at {
        doc["expires_at"] = json!(t);
    }
    if let Some(w) = &input.workdir {
        doc["workdir"] = json!(w);
    }
    if let Some(n) = input.max_uses {
        doc["max_uses"] = json!(n);
    }
    if let Some(r) = &input.reason {
        doc["reason"] = json!(r);
    }
    doc
}

/// The canonical document signed for a revocation of `grant_id` (of `agent`'s grant).
#[must_use]
pub fn revocation_document(
    grant_id: &str,
    agent: &str,
    reason: &str,
    decided_at: &str,
    principal: &str,
    key_fingerprint: &str,
) -> Value {
    json!({
        "domain": GRANT_DOMAIN,
        "grant": "revoke",
        "grant_id": grant_id,
        "agent": agent,
        "principal": principal,
        "key": key_fingerprint,
        "decided_at": decided_at,
        "reason": reason,
    })
}

/// Signs a grant or revocation document with the principal's key.
#[must_use]
pub fn sign(principal: &Principal, document: Value) -> SignedDecision {
    let signature = sign_document(principal, &document);
    SignedDecision { document, signature }
}

/// The chain record body of a signed grant or revocation: `agent` the grant's agent, `action`
/// [`GRANT_ACTION`] or [`REVOKE_ACTION`], `approver` the principal, `outcome` `success`,
/// `autonomy_tier` `act_with_approval`, `metadata.approval` with the signature and
/// `metadata.warrant_grant` with the document.
#[must_use]
pub fn record_body(signed: &SignedDecision) -> Map<String, Value> {
    let doc = &signed.document;
    let s = |k: &str| doc.get(k).and_then(Value::as_str).unwrap_or_default();
    let revoke = s("grant") == "revoke";
    let mut meta = crate::decision::approval_metadata(signed, s("decided_at"), if revoke { "revoke" } else { "grant" });
    meta.insert("warrant_grant".into(), doc.clone());
    chain::new_record_body(
        s("agent"),
        if revoke { REVOKE_ACTION } else { GRANT_ACTION },
        Some(s("principal")),
        "success",
        &format!("warrant:grant:{}", s("grant_id")),
        "act_with_approval",
        s("decided_at"),
        meta,
    )
}

/// Checks a chain record carrying `metadata.warrant_grant` (`doc`, its only signed document:
/// [`crate::decision::check_record_signature`]): the document verifies under a pinned key of its
/// principal, is a well-formed grant or revocation, and the record agrees with it (action,
/// agent, approver, outcome, timestamp, reviewer, signed_at).
///
/// # Errors
/// A [`crate::decision::RecordError`] naming what failed.
pub(crate) fn check_record(
    rec: &Map<String, Value>,
    meta: &Map<String, Value>,
    doc: &Value,
    pinned: &PinnedKeys,
) -> Result<(), crate::decision::RecordError> {
    crate::decision::check_domain(doc, "warrant_grant", GRANT_DOMAIN)?;
    let sig = crate::decision::verified_signature(meta, "warrant_grant", pinned)?;
    let (action, decision) = match GrantEvent::from_document(doc)? {
        GrantEvent::Issue(_) => (GRANT_ACTION, "grant"),
        GrantEvent::Revoke { .. } => (REVOKE_ACTION, "revoke"),
    };
    let expected = crate::decision::SignedAction {
        action,
        agent: doc.get("agent").and_then(Value::as_str),
        decision: Some(decision),
    };
    crate::decision::signed_action_agrees(rec, meta, sig, doc, &expected, "grant")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grant::ToolPattern;

    #[test]
    fn a_signed_grant_and_its_revocation_verify_and_an_edit_does_not() {
        let key = Principal::from_seed("alice", &[7; 32]);
        let mut pinned = PinnedKeys::default();
        pinned.pin("alice", key.verifying_key());
        let input = GrantInput {
            grant_id: new_grant_id(),
            scope: Scope::Pattern(ToolPattern::parse("Bash(git push origin feature/*)").expect("p")),
            agent: "claude-code".into(),
            notebook: "shop-1a2b3c".into(),
            action_class: "code.push".into(),
            tool: "Bash".into(),
            expires_at: None,
            max_uses: Some(3),
            covers_destructive: false,
            workdir: None,
            packet_id: "cc-1".into(),
            reason: None,
            decided_at: "2026-11-25T12:00:00Z".into(),
        };
        let signed = sign(&key, grant_document(&input, &key.name, &key.fingerprint()));
        let rec = record_body(&signed);
        assert_eq!(crate::decision::check_record_signature(&rec, &pinned), Ok(true));
        let Some(GrantEvent::Issue(g)) = GrantEvent::of_record(&rec) else { panic!("an issue") };
        assert_eq!((g.max_uses, g.tool.as_str()), (Some(3), "Bash"));
        let mut edited = rec.clone();
        edited["metadata"]["warrant_grant"]["pattern"] = json!("Bash(**)");
        assert!(crate::decision::check_record_signature(&edited, &pinned).is_err());
        let mut moved = rec.clone();
        moved.insert("agent".into(), json!("codex"));
        assert!(matches!(
            crate::decision::check_record_signature(&moved, &pinned),
            Err(crate::decision::RecordError::Disagrees { field: "agent", what: "grant" })
        ));
        let revoke = sign(
            &key,
            revocation_document(
                &g.grant_id,
                "claude-code",
                "done",
                "2026-11-25T13:00:00Z",
                &key.name,
                &key.fingerprint(),
            ),
        );
        let rec = record_body(&revoke);
        assert_eq!(crate::decision::check_record_signature(&rec, &pinned), Ok(true));
        assert!(matches!(GrantEvent::of_record(&rec), Some(GrantEvent::Revoke { .. })));
    }
}
