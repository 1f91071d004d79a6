//! The ten canonical Trust Graduation action classes (`trust-graduation.md` §2) with their spec
//! type, the reference runtime's risk class, and the alias table.

/// One canonical action class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActionClass {
    /// Canonical id, e.g. `email.send.external`.
    pub id: &'static str,
    /// Spec type: `internal`, `external controlled`, `external` or `human-only`.
    pub kind: &'static str,
    /// The reference runtime's risk class: `low`, `medium`, `high` or `critical`.
    pub risk: &'static str,
    /// Description for humans.
    pub description: &'static str,
}

/// The ten canonical classes, in the spec's order.
pub const CANONICAL: [ActionClass; 10] = [
    ActionClass { id: "read.context", kind: "internal", risk: "low", description: "Read local context." },
    ActionClass { id: "draft.compose", kind: "internal", risk: "low", description: "Compose a local draft." },
    ActionClass { id: "draft.response", kind: "internal", risk: "medium", description: "Draft a response for review." },
    ActionClass { id: "tool.call.local", kind: "internal", risk: "low", description: "Call a local tool." },
    ActionClass {
        id: "email.send.internal",
        kind: "external controlled",
        risk: "medium",
        description: "Send an email inside the workspace.",
    },
    ActionClass {
        id: "email.send.external",
        kind: "external",
        risk: "high",
        description: "Send an email or message outside the local workspace.",
    },
    ActionClass {
        id: "calendar.create",
        kind: "external controlled",
        risk: "high",
        description: "Create a calendar event or invite.",
    },
    ActionClass { id: "social.post.public", kind: "external", risk: "high", description: "Post publicly." },
    ActionClass { id: "payment.initiate", kind: "human-only", risk: "critical", description: "Move money." },
    ActionClass {
        id: "proposal.submit",
        kind: "external",
        risk: "high",
        description: "Submit a proposal to an outside party.",
    },
];

/// Legacy ids and their canonical class (the reference runtime's fifteen, a superset of the
/// spec's seven).
pub const ALIASES: [(&str, &str); 15] = [
    ("relationship_followup_drafting", "draft.response"),
    ("draft_response_drafting", "draft.response"),
    ("referral_ask_drafting", "draft.compose"),
    ("workspace_trust_boundary", "draft.response"),
    ("social.post.external", "social.post.public"),
    ("calendar.create.external", "calendar.create"),
    ("payment.spend", "payment.initiate"),
    ("local.read", "read.context"),
    ("local.memory.write", "draft.compose"),
    ("email.draft.external", "draft.compose"),
    ("calendar.invite.external", "calendar.create"),
    ("relationship.followup.drafting", "draft.response"),
    ("draft.response.drafting", "draft.response"),
    ("referral.ask.drafting", "draft.compose"),
    ("workspace.trust.boundary", "draft.response"),
];

/// Normalizes a class id as the reference runtime does: trim, lower-case, `_` → `.`, then the
/// alias table on the raw string and on the dotted form.
#[must_use]
pub fn normalize(id: &str) -> String {
    normalize_cow(id).into_owned()
}

/// [`normalize`], borrowing `id` when it is already its own normal form (made of `[a-z0-9.]`
/// and not an alias) or the alias table's canonical spelling: no allocation on that path, the
/// one a row read off the wire takes.
#[must_use]
pub fn normalize_cow(id: &str) -> std::borrow::Cow<'_, str> {
    use std::borrow::Cow;
    if id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.') {
        // Already trimmed, lower-case and dotted: only the alias table can change it, and only
        // an id as long as some alias is looked up.
        if ALIAS_LENGTHS & (1 << id.len().min(63)) == 0 {
            return Cow::Borrowed(id);
        }
        return Cow::Borrowed(ALIASES.iter().find(|(alias, _)| *alias == id).map_or(id, |(_, canonical)| canonical));
    }
    let raw = id.trim().to_lowercase();
    let dotted = raw.replace('_', ".");
    Cow::Owned(
        ALIASES
            .iter()
            .find(|(alias, _)| *alias == raw || *alias == dotted)
            .map_or(dotted, |(_, canonical)| (*canonical).to_owned()),
    )
}

/// Bit `n` set when some alias in [`ALIASES`] is `n` bytes long (every alias is shorter than 63).
const ALIAS_LENGTHS: u64 = {
    let mut bits = 0u64;
    let mut i = 0;
    while i < ALIASES.len() {
        assert!(ALIASES[i].0.len() < 63);
        bits |= 1 << ALIASES[i].0.len();
        i += 1;
    }
    bits
};

/// The canonical class for `id` (after normalization), if it is one of the ten.
#[must_use]
pub fn lookup(id: &str) -> Option<&'static ActionClass> {
    let n = normalize(id);
    CANONICAL.iter().find(|c| c.id == n)
}

/// The risk class of `id`: the registry's for canonical classes, else the reference runtime's
/// inference from the name (§2, "Unknown classes").
#[must_use]
pub fn risk_of(id: &str) -> Option<&'static str> {
    if let Some(c) = lookup(id) {
        return Some(c.risk);
    }
    let n = normalize(id);
    let has = |words: &[&str]| words.iter().any(|w| n.contains(w));
    Some(
        if has(&[
            "payment",
            "spend",
            "legal",
            "contract",
            "policy",
            "permission",
            "authority",
            "delete",
            "irreversible",
        ]) {
            "critical"
        } else if has(&["send", "external", "post", "publish", "submit", "invite", "dm", "comment", "public"]) {
            "high"
        } else if has(&["draft", "stage", "preview", "recommend", "rank", "route", "local"]) {
            "medium"
        } else if has(&["read", "observe", "summarize", "score"]) {
            "low"
        } else {
            "medium"
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_normalize_like_the_reference() {
        assert_eq!(normalize("payment.spend"), "payment.initiate");
        assert_eq!(normalize("calendar.create.external"), "calendar.create");
        assert_eq!(normalize("relationship_followup_drafting"), "draft.response");
        assert_eq!(normalize(" Email_Send_External "), "email.send.external");
        // Every alias, whatever its length, and ids of an alias's length that are none.
        for (alias, canonical) in ALIASES {
            assert_eq!(normalize_cow(alias), canonical, "{alias}");
            assert_eq!(normalize_cow(&alias.to_uppercase()), canonical, "{alias}");
            let other = format!("x{}", &alias[1..]).replace('_', ".");
            assert_eq!(normalize_cow(&other), other);
        }
        assert!(matches!(normalize_cow("draft.response"), std::borrow::Cow::Borrowed("draft.response")));
        assert_eq!(normalize_cow(&"a.".repeat(40)), "a.".repeat(40));
    }

    #[test]
    fn risk_inference_for_unknown_classes() {
        assert_eq!(risk_of("crm.record.delete"), Some("critical"));
        assert_eq!(risk_of("widget.thing"), Some("medium"));
        assert_eq!(risk_of("notes.read"), Some("low"));
        assert_eq!(risk_of("email.send.external"), Some("high"));
        assert_eq!(risk_of("draft.response"), Some("medium"));
    }
}
