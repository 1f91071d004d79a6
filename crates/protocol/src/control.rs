//! The principal's signed controls: raising or lowering a notebook's trust level, and
//! quarantining, releasing, killing or elevating an agent.
//!
//! Each control is a canonical document signed with the principal's Ed25519 key by the same rule
//! as a decision (Lodestar §A7.4: Ed25519 over the 64 hex characters of the SHA-256 of the
//! canonical document), carried in an OpenTrustGraph record as `metadata.warrant_control` with
//! the signature in `metadata.approval.signatures`. The chain is the only source of truth: the
//! current notebook levels and agent standings are a pure fold ([`ControlState::apply`]) over the
//! control records that passed every check.
//!
//! Document shape (`domain` `warrant.control/v1`):
//!
//! ```json
//! {"domain": "warrant.control/v1", "control": "notebook.trust_set", "subject": "nb-sales",
//!  "level": "trusted", "previous": "cautious", "principal": "alice", "key": "SHA256:…",
//!  "decided_at": "2026-11-21T09:00:00Z", "reason": "…"}
//! ```
//!
//! `agent.elevate` carries `ring` (1 or 2), `ttl_seconds` and `expires_at`; `agent.kill` carries
//! the kill switch's result (`terminated`, `handoffs`, `compensation_triggered`, `details`).

use crate::chain;
use crate::decision::{DocumentError, RecordError, SignedDecision, sign_document};
use crate::graduation::gate::AgentStanding;
use crate::keys::{PinnedKeys, Principal};
use crate::tiers::NotebookTrust;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

/// The domain string of a signed control document.
pub const CONTROL_DOMAIN: &str = "warrant.control/v1";

/// What a control does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ControlKind {
    /// Set a notebook's trust level (tool tiers × notebook trust).
    TrustSet,
    /// Quarantine an agent: everything it asks is `blocked` until the principal releases it.
    Quarantine,
    /// Release a quarantined or killed agent.
    Release,
    /// Kill an agent (the kill switch): everything it asks is `blocked` until released.
    Kill,
    /// Elevate an agent to a more privileged ring for a bounded time.
    Elevate,
}

impl ControlKind {
    /// All five.
    pub const ALL: [ControlKind; 5] =
        [ControlKind::TrustSet, ControlKind::Quarantine, ControlKind::Release, ControlKind::Kill, ControlKind::Elevate];

    /// The wire spelling (`control` field): `notebook.trust_set`, `agent.quarantine`,
    /// `agent.release`, `agent.kill`, `agent.elevate`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            ControlKind::TrustSet => "notebook.trust_set",
            ControlKind::Quarantine => "agent.quarantine",
            ControlKind::Release => "agent.release",
            ControlKind::Kill => "agent.kill",
            ControlKind::Elevate => "agent.elevate",
        }
    }

    /// Parses the wire spelling.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// The chain record's `action`: `warrant.control.<control>`.
    #[must_use]
    pub fn record_action(self) -> String {
        format!("warrant.control.{}", self.as_str())
    }

    /// The chain record's `agent`: the agent itself, or `notebook:<id>` for a notebook.
    #[must_use]
    pub fn record_agent(self, subject: &str) -> String {
        match self {
            ControlKind::TrustSet => format!("notebook:{subject}"),
            _ => subject.to_owned(),
        }
    }
}

/// A control before signing.
#[derive(Debug, Clone, PartialEq)]
pub struct ControlInput {
    /// What it does.
    pub kind: ControlKind,
    /// The notebook or agent it applies to (a safe id, see [`crate::packet::is_safe_id`]).
    pub subject: String,
    /// Kind-specific fields, merged into the document (`level`/`previous`; `ring`,
    /// `ttl_seconds`, `expires_at`; the kill result).
    pub fields: Map<String, Value>,
    /// Why (required by the CLI and console for quarantine and kill).
    pub reason: Option<String>,
    /// When, RFC 3339 UTC as written by [`crate::clock::format_rfc3339`].
    pub decided_at: String,
}

/// The canonical document signed for a control.
#[must_use]
pub fn control_document(input: &ControlInput, principal: &str, key_fingerprint: &str) -> Value {
    let mut doc = input.fields.clone();
    for (k, v) in [
        ("domain", json!(CONTROL_DOMAIN)),
        ("control", json!(input.kind.as_str())),
        ("subject", json!(input.subject)),
        ("principal", json!(principal)),
        ("key", json!(key_fingerprint)),
        ("decided_at", json!(input.decided_at)),
    ] {
        doc.insert(k.into(), v);
    }
    if let Some(r) = &input.reason {
        doc.insert("reason".into(), json!(r));
    }
    Value::Object(doc)
}

/// Signs a control.
#[must_use]
pub fn sign_control(principal: &Principal, input: &ControlInput) -> SignedDecision {
    let document = control_document(input, &principal.name, &principal.fingerprint());
    let signature = sign_document(principal, &document);
    SignedDecision { document, signature }
}

/// The chain record body for a signed control: `agent` per [`ControlKind::record_agent`],
/// `action` `warrant.control.<control>`, `approver` the principal, `outcome` `success`,
/// `autonomy_tier` `act_with_approval`, `metadata.approval` with the signature and
/// `metadata.warrant_control` with the document.
#[must_use]
pub fn record_body(input: &ControlInput, signed: &SignedDecision) -> Map<String, Value> {
    let principal = signed.document["principal"].as_str().unwrap_or_default();
    let mut meta = crate::decision::approval_metadata(signed, &input.decided_at, input.kind.as_str());
    meta.insert("warrant_control".into(), signed.document.clone());
    chain::new_record_body(
        &input.kind.record_agent(&input.subject),
        &input.kind.record_action(),
        Some(principal),
        "success",
        &format!("warrant:control:{}", input.subject),
        "act_with_approval",
        &input.decided_at,
        meta,
    )
}

/// Checks a chain record carrying `metadata.warrant_control` (`doc`, its only signed document:
/// [`crate::decision::check_record_signature`]): the document verifies under a pinned key of its
/// principal and the record agrees with it (action, agent, approver, outcome, timestamp,
/// reviewer, signed_at).
///
/// # Errors
/// A [`RecordError`] naming what failed.
pub(crate) fn check_record(
    rec: &Map<String, Value>,
    meta: &Map<String, Value>,
    doc: &Value,
    pinned: &PinnedKeys,
) -> Result<(), RecordError> {
    crate::decision::check_domain(doc, "warrant_control", CONTROL_DOMAIN)?;
    let sig = crate::decision::verified_signature(meta, "warrant_control", pinned)?;
    let event = ControlEvent::from_document(doc)?;
    let (action, agent) = (event.kind.record_action(), event.kind.record_agent(&event.subject));
    let expected = crate::decision::SignedAction {
        action: &action,
        agent: Some(&agent),
        decision: doc.get("control").and_then(Value::as_str),
    };
    crate::decision::signed_action_agrees(rec, meta, sig, doc, &expected, "control")
}

/// A verified control, as the fold sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ControlEvent {
    /// What it did.
    pub kind: ControlKind,
    /// The notebook or agent.
    pub subject: String,
    /// Who signed it.
    pub principal: String,
    /// When (RFC 3339).
    pub decided_at: String,
    /// The reason, if any.
    pub reason: Option<String>,
    /// The new level, for [`ControlKind::TrustSet`].
    pub level: Option<NotebookTrust>,
    /// The elevated ring (1 or 2), for [`ControlKind::Elevate`].
    pub ring: Option<u8>,
    /// When the elevation ends (RFC 3339), for [`ControlKind::Elevate`].
    pub expires_at: Option<String>,
}

impl ControlEvent {
    /// Reads a control document (already signature-checked).
    ///
    /// # Errors
    /// A sentence for an unknown control, a subject that is not a safe id, a missing or invalid
    /// level, ring or expiry.
    pub fn from_document(doc: &Value) -> Result<Self, DocumentError> {
        let s = |k: &str| doc.get(k).and_then(Value::as_str);
        let kind = s("control")
            .and_then(ControlKind::parse)
            .ok_or_else(|| format!("unknown control {:?}", doc.get("control")))?;
        let subject =
            s("subject").filter(|x| crate::packet::is_safe_id(x)).ok_or("control subject is not a safe id")?;
        let mut event = ControlEvent {
            kind,
            subject: subject.to_owned(),
            principal: s("principal").unwrap_or_default().to_owned(),
            decided_at: s("decided_at").unwrap_or_default().to_owned(),
            reason: s("reason").map(str::to_owned),
            level: None,
            ring: None,
            expires_at: None,
        };
        match kind {
            ControlKind::TrustSet => {
                let level = s("level").and_then(NotebookTrust::parse).ok_or("trust_set without a valid `level`")?;
                event.level = Some(level);
            }
            ControlKind::Elevate => {
                let ring = doc.get("ring").and_then(Value::as_u64).filter(|r| (1..=2).contains(r));
                event.ring = Some(ring.ok_or("elevation without a ring of 1 or 2")? as u8);
                let expires = s("expires_at").filter(|e| crate::clock::unix_seconds(e).is_some());
                event.expires_at = Some(expires.ok_or("elevation without a valid `expires_at`")?.to_owned());
            }
            ControlKind::Quarantine | ControlKind::Release | ControlKind::Kill => {}
        }
        Ok(event)
    }

    /// The control a verified chain record carries, if any.
    #[must_use]
    pub fn of_record(rec: &Map<String, Value>) -> Option<Self> {
        Self::from_document(rec.get("metadata")?.get("warrant_control")?).ok()
    }
}

/// A ring elevation the principal granted.
#[derive(Debug, Clone, PartialEq)]
pub struct Elevation {
    /// The elevated ring (1 or 2).
    pub ring: u8,
    /// When it was granted (RFC 3339).
    pub granted_at: String,
    /// When it ends (RFC 3339).
    pub expires_at: String,
}

impl Elevation {
    /// Seconds left at `now` (unix seconds), 0 once expired (`remaining_seconds`,
    /// agent-hypervisor.md §2.7).
    #[must_use]
    pub fn remaining_seconds(&self, now: f64) -> f64 {
        crate::clock::unix_seconds(&self.expires_at).map_or(0.0, |e| (e - now).max(0.0))
    }
}

/// One agent's controls.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentControl {
    /// Quarantined, killed or active.
    pub standing: AgentStanding,
    /// Why it is quarantined or killed.
    pub reason: Option<String>,
    /// Since when (RFC 3339).
    pub since: Option<String>,
    /// The last elevation granted (it may have expired; see [`Elevation::remaining_seconds`]).
    pub elevation: Option<Elevation>,
}

/// A notebook's trust level and who set it.
#[derive(Debug, Clone, PartialEq)]
pub struct NotebookLevel {
    /// The level.
    pub level: NotebookTrust,
    /// Who set it.
    pub principal: String,
    /// When (RFC 3339).
    pub set_at: String,
}

/// Notebook levels and agent controls: the fold of every verified control record, in chain order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ControlState {
    /// Notebooks whose level the principal set; any other notebook is `cautious`.
    pub notebooks: BTreeMap<String, NotebookLevel>,
    /// Agents with a control.
    pub agents: BTreeMap<String, AgentControl>,
    /// Each agent id's publisher as the chain first recorded it: the uid that owned the file of
    /// the first packet of that agent the principal approved, or of its earliest packet when the
    /// principal quarantined or killed it first (`metadata.warrant_publisher` of the record,
    /// [`publisher_of`]). Without `[agents."<id>"] users` in `policy.toml`,
    /// only this uid may speak for the agent.
    pub publishers: BTreeMap<String, u32>,
}

/// The key of a decision record's metadata naming who published the packet decided.
pub const PUBLISHER_KEY: &str = "warrant_publisher";

/// The publisher a chain record names (`metadata.warrant_publisher`: `{"agent": "<safe id>",
/// "uid": <u32>}`), if any. Only a principal's decision or control record (`warrant_decision` or
/// `warrant_control` beside it: signed, and checked by the verifier) binds a publisher: an agent's
/// receipt that names one names none.
#[must_use]
pub fn publisher_of(rec: &Map<String, Value>) -> Option<(&str, u32)> {
    let meta = rec.get("metadata")?;
    if meta.get("warrant_decision").is_none() && meta.get("warrant_control").is_none() {
        return None;
    }
    let p = meta.get(PUBLISHER_KEY)?;
    let agent = p.get("agent")?.as_str().filter(|a| crate::packet::is_safe_id(a))?;
    let uid = u32::try_from(p.get("uid")?.as_u64()?).ok()?;
    Some((agent, uid))
}

/// A member of the `warrant eval` form of the principal's controls that is malformed
/// ([`ControlState::from_json`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{member}` must be {expected}")]
pub struct ControlsError {
    /// The member's path (`controls.notebooks.<id>`, …).
    pub member: String,
    /// What it must be.
    pub expected: &'static str,
}

impl ControlState {
    /// Records `uid` as `agent`'s publisher unless the chain named one before (the first wins).
    pub fn bind_publisher(&mut self, agent: &str, uid: u32) {
        if !self.publishers.contains_key(agent) {
            self.publishers.insert(agent.to_owned(), uid);
        }
    }

    /// Applies one control.
    pub fn apply(&mut self, e: &ControlEvent) {
        match e.kind {
            ControlKind::TrustSet => {
                if let Some(level) = e.level {
                    self.notebooks.insert(
                        e.subject.clone(),
                        NotebookLevel { level, principal: e.principal.clone(), set_at: e.decided_at.clone() },
                    );
                }
            }
            ControlKind::Quarantine | ControlKind::Kill | ControlKind::Release => {
                let a = self.agents.entry(e.subject.clone()).or_default();
                a.standing = match e.kind {
                    ControlKind::Quarantine => AgentStanding::Quarantined,
                    ControlKind::Kill => AgentStanding::Killed,
                    _ => AgentStanding::Active,
                };
                a.reason = e.reason.clone();
                a.since = Some(e.decided_at.clone());
                // A quarantined or killed agent loses any elevation (demoted to Ring 3).
                if a.standing != AgentStanding::Active {
                    a.elevation = None;
                }
            }
            ControlKind::Elevate => {
                if let (Some(ring), Some(expires_at)) = (e.ring, &e.expires_at) {
                    let a = self.agents.entry(e.subject.clone()).or_default();
                    a.elevation =
                        Some(Elevation { ring, granted_at: e.decided_at.clone(), expires_at: expires_at.clone() });
                }
            }
        }
    }

    /// Builds a state from JSON (the `warrant eval` form): `{"notebooks": {"<id>": "<level>"},
    /// "agents": {"<id>": {"standing": "active|quarantined|killed", "elevation": {"ring": 1|2,
    /// "expires_at": "<RFC 3339>"}}}}`; `null` is the empty state.
    ///
    /// # Errors
    /// [`ControlsError`] naming the malformed member.
    pub fn from_json(v: &Value) -> Result<Self, ControlsError> {
        let mut state = ControlState::default();
        let bad = |member: String, expected: &'static str| ControlsError { member, expected };
        let obj = |v: Option<&Value>, what: &str| -> Result<Map<String, Value>, ControlsError> {
            match v {
                None | Some(Value::Null) => Ok(Map::new()),
                Some(Value::Object(m)) => Ok(m.clone()),
                Some(_) => Err(bad(what.to_owned(), "an object")),
            }
        };
        if !(v.is_null() || v.is_object()) {
            return Err(bad("controls".to_owned(), "an object"));
        }
        for (id, level) in obj(v.get("notebooks"), "controls.notebooks")? {
            let level = level
                .as_str()
                .and_then(NotebookTrust::parse)
                .ok_or_else(|| bad(format!("controls.notebooks.{id}"), "cautious, trusted or autonomous"))?;
            state.notebooks.insert(id, NotebookLevel { level, principal: String::new(), set_at: String::new() });
        }
        for (id, a) in obj(v.get("agents"), "controls.agents")? {
            let mut control = AgentControl::default();
            if let Some(s) = a.get("standing") {
                control.standing = s
                    .as_str()
                    .and_then(AgentStanding::parse)
                    .ok_or_else(|| bad(format!("controls.agents.{id}.standing"), "active, quarantined or killed"))?;
            }
            if let Some(e) = a.get("elevation").filter(|e| !e.is_null()) {
                let ring = e.get("ring").and_then(Value::as_u64).filter(|r| (1..=2).contains(r));
                let expires =
                    e.get("expires_at").and_then(Value::as_str).filter(|x| crate::clock::unix_seconds(x).is_some());
                let (Some(ring), Some(expires)) = (ring, expires) else {
                    return Err(bad(
                        format!("controls.agents.{id}.elevation"),
                        "{ring: 1 or 2, expires_at: an RFC 3339 time}",
                    ));
                };
                control.elevation =
                    Some(Elevation { ring: ring as u8, granted_at: String::new(), expires_at: expires.to_owned() });
            }
            state.agents.insert(id, control);
        }
        Ok(state)
    }

    /// Whether `input` still changes something given these controls at `now` (unix seconds): the
    /// notebook is still at the level the principal saw as `previous`, the agent is not already
    /// in the standing asked for, an agent to elevate is active without an elevation in force.
    #[must_use]
    pub fn admits(&self, input: &ControlInput, now: f64) -> bool {
        let standing = self.standing(&input.subject);
        match input.kind {
            ControlKind::TrustSet => {
                input.fields.get("previous").and_then(Value::as_str)
                    == Some(self.notebook_trust(&input.subject).as_str())
            }
            ControlKind::Quarantine => standing != AgentStanding::Quarantined,
            ControlKind::Kill => standing != AgentStanding::Killed,
            ControlKind::Release => standing != AgentStanding::Active,
            ControlKind::Elevate => {
                standing == AgentStanding::Active && self.active_elevation(&input.subject, now).is_none()
            }
        }
    }

    /// A notebook's current level: `cautious` unless the principal set one.
    #[must_use]
    pub fn notebook_trust(&self, notebook: &str) -> NotebookTrust {
        self.notebooks.get(notebook).map_or(NotebookTrust::default(), |n| n.level)
    }

    /// An agent's standing: its own, or the strictest of every controlled agent whose id it is
    /// confusable with ([`agent_skeleton`]: the same id but for case and punctuation), so a
    /// quarantine of `ag1` holds `AG1`, `Ag1`, `ag1.` and `ag1_` too.
    #[must_use]
    pub fn standing(&self, agent: &str) -> AgentStanding {
        let own = self.agents.get(agent).map_or(AgentStanding::Active, |a| a.standing);
        // The skeleton is made only when some other agent is under a control (rarely).
        let mut skeleton: Option<String> = None;
        self.agents
            .iter()
            .filter(|(id, a)| a.standing != AgentStanding::Active && id.as_str() != agent)
            .filter(|(id, _)| *skeleton.get_or_insert_with(|| agent_skeleton(agent)) == agent_skeleton(id))
            .map(|(_, a)| a.standing)
            .fold(own, |worst, s| if s == AgentStanding::Killed || worst == AgentStanding::Active { s } else { worst })
    }

    /// The elevation in force for `agent` at `now` (unix seconds), if any.
    #[must_use]
    pub fn active_elevation(&self, agent: &str, now: f64) -> Option<&Elevation> {
        let a = self.agents.get(agent)?;
        if a.standing != AgentStanding::Active {
            return None;
        }
        a.elevation.as_ref().filter(|e| e.remaining_seconds(now) > 0.0)
    }
}

/// What an agent id is for telling agents apart: lower case, without the punctuation a safe id
/// may hold (`.`, `_`, `:`, `-`). Two ids with one skeleton are confusable: a control on one
/// holds the other ([`ControlState::standing`]).
#[must_use]
pub fn agent_skeleton(id: &str) -> String {
    id.chars().filter(|c| !matches!(c, '.' | '_' | ':' | '-')).flat_map(char::to_lowercase).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decision::SignatureError;
    use crate::keys::PinnedKeys;

    // The prefix fold (after a checkpoint) and the whole chain's view bind the same publishers:
    // those of the principal's records only, never of an agent's receipt.
    #[test]
    fn only_a_decision_or_a_control_binds_a_publisher() {
        let rec = |meta: serde_json::Value| -> Map<String, Value> {
            serde_json::from_value(serde_json::json!({"metadata": meta})).expect("record")
        };
        let named = serde_json::json!({"agent": "agent-a", "uid": 1234});
        assert_eq!(
            publisher_of(&rec(serde_json::json!({"warrant_decision": {}, PUBLISHER_KEY: named}))),
            Some(("agent-a", 1234))
        );
        assert_eq!(
            publisher_of(&rec(serde_json::json!({"warrant_control": {}, PUBLISHER_KEY: named}))),
            Some(("agent-a", 1234))
        );
        assert_eq!(publisher_of(&rec(serde_json::json!({"tg_receipt": {}, PUBLISHER_KEY: named}))), None);
        assert_eq!(publisher_of(&rec(serde_json::json!({PUBLISHER_KEY: named}))), None);
    }

    fn principal() -> (Principal, PinnedKeys) {
        let p = Principal::from_seed("alice", &[7; 32]);
        let mut pinned = PinnedKeys::default();
        pinned.pin("alice", p.verifying_key());
        (p, pinned)
    }

    fn sealed(input: &ControlInput, p: &Principal) -> Map<String, Value> {
        let signed = sign_control(p, input);
        let head = chain::ChainHead { last_index: 0, last_hash: None };
        match chain::seal(record_body(input, &signed), &head).record {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    fn trust_set(level: &str) -> ControlInput {
        let mut fields = Map::new();
        fields.insert("level".into(), json!(level));
        ControlInput {
            kind: ControlKind::TrustSet,
            subject: "nb-sales".into(),
            fields,
            reason: None,
            decided_at: "2026-11-21T09:00:00Z".into(),
        }
    }

    #[test]
    fn a_control_holds_every_id_confusable_with_the_agents() {
        let mut state = ControlState::default();
        state
            .agents
            .insert("ag1".into(), AgentControl { standing: AgentStanding::Quarantined, ..AgentControl::default() });
        for id in ["ag1", "AG1", "Ag1", "ag1.", "ag1_", "a-g:1"] {
            assert_eq!(state.standing(id), AgentStanding::Quarantined, "{id}");
        }
        assert_eq!(state.standing("ag12"), AgentStanding::Active);
        assert_eq!(state.standing("ag"), AgentStanding::Active);
    }

    #[test]
    fn a_signed_control_verifies_and_an_edited_one_does_not() {
        let (p, pinned) = principal();
        let rec = sealed(&trust_set("trusted"), &p);
        assert_eq!(crate::decision::check_record_signature(&rec, &pinned), Ok(true));
        assert!(chain::check_new_record(&rec, Some(&pinned)).is_empty());
        let mut edited = rec.clone();
        edited["metadata"]["warrant_control"]["level"] = json!("autonomous");
        assert!(
            crate::decision::check_record_signature(&edited, &pinned)
                .is_err_and(|e| matches!(e, RecordError::Signature(SignatureError::Edited { .. })))
        );
        let mut moved = rec.clone();
        moved.insert("agent".into(), json!("notebook:other"));
        assert!(
            crate::decision::check_record_signature(&moved, &pinned)
                .is_err_and(|e| e == RecordError::Disagrees { field: "agent", what: "control" })
        );
        let stranger = Principal::from_seed("alice", &[8; 32]);
        let forged = sealed(&trust_set("autonomous"), &stranger);
        assert!(
            crate::decision::check_record_signature(&forged, &pinned)
                .is_err_and(|e| matches!(e, RecordError::Signature(SignatureError::Unpinned(_))))
        );
    }

    #[test]
    fn the_fold_tracks_levels_standings_and_elevations() {
        let mut state = ControlState::default();
        assert_eq!(state.notebook_trust("nb-sales"), NotebookTrust::Cautious);
        let ev = |kind, subject: &str, extra: Value| {
            let mut doc = json!({"domain": CONTROL_DOMAIN, "control": ControlKind::as_str(kind), "subject": subject,
                "principal": "alice", "decided_at": "2026-11-21T09:00:00Z"});
            if let (Value::Object(d), Value::Object(x)) = (&mut doc, extra) {
                d.extend(x);
            }
            ControlEvent::from_document(&doc)
        };
        state.apply(&ev(ControlKind::TrustSet, "nb-sales", json!({"level": "autonomous"})).expect("valid"));
        assert_eq!(state.notebook_trust("nb-sales"), NotebookTrust::Autonomous);
        let now = crate::clock::unix_seconds("2026-11-21T09:00:00Z").expect("date");
        state.apply(
            &ev(ControlKind::Elevate, "agent-a", json!({"ring": 2, "expires_at": "2026-11-21T09:05:00Z"})).expect("ok"),
        );
        assert_eq!(state.active_elevation("agent-a", now + 299.0).map(|e| e.ring), Some(2));
        assert!(state.active_elevation("agent-a", now + 300.0).is_none(), "expired at expires_at");
        state.apply(&ev(ControlKind::Quarantine, "agent-a", json!({})).expect("valid"));
        assert_eq!(state.standing("agent-a"), AgentStanding::Quarantined);
        assert!(state.active_elevation("agent-a", now).is_none(), "quarantine drops the elevation");
        state.apply(&ev(ControlKind::Release, "agent-a", json!({})).expect("valid"));
        assert_eq!(state.standing("agent-a"), AgentStanding::Active);
        assert!(ev(ControlKind::Elevate, "agent-a", json!({"ring": 0, "expires_at": "2026-11-21T09:05:00Z"})).is_err());
        assert!(ev(ControlKind::TrustSet, "nb", json!({"level": "Autonomous"})).is_err());
        assert!(ev(ControlKind::Kill, "../x", json!({})).is_err());
    }
}
