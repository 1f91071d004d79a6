//! The grant book: the live grants folded from the chain's grant records, indexed for the gate's
//! lookup, and the revocations.

use super::{CallFacts, GRANT_DOMAIN, Grant, Scope};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// A verified grant record, as the fold sees it.
#[derive(Debug, Clone, PartialEq)]
pub enum GrantEvent {
    /// A grant issued.
    Issue(Box<Grant>),
    /// A grant revoked.
    Revoke {
        /// The grant.
        grant_id: String,
        /// Who revoked it.
        principal: String,
        /// When.
        decided_at: String,
        /// Why.
        reason: String,
    },
}

impl GrantEvent {
    /// Reads a grant or revocation document.
    ///
    /// # Errors
    /// A sentence naming what is malformed.
    pub fn from_document(doc: &Value) -> Result<Self, crate::decision::DocumentError> {
        if doc.get("domain").and_then(Value::as_str) != Some(GRANT_DOMAIN) {
            return Err(format!("warrant_grant has an unknown domain {:?}", doc.get("domain")).into());
        }
        match doc.get("grant").and_then(Value::as_str) {
            Some("issue") => Grant::from_document(doc).map(|g| GrantEvent::Issue(Box::new(g))),
            Some("revoke") => {
                let s = |k: &str| {
                    doc.get(k)
                        .and_then(Value::as_str)
                        .filter(|v| !v.is_empty())
                        .map(str::to_owned)
                        .ok_or_else(|| format!("the revocation has no `{k}`"))
                };
                Ok(GrantEvent::Revoke {
                    grant_id: s("grant_id")?,
                    principal: s("principal")?,
                    decided_at: s("decided_at")?,
                    reason: s("reason")?,
                })
            }
            other => Err(format!("warrant_grant is neither an issue nor a revocation ({other:?})").into()),
        }
    }

    /// The grant event of a chain record, if it carries a well-formed one (call only on records
    /// that verified), with the record's `chain_index` on an issued grant.
    #[must_use]
    pub fn of_record(rec: &Map<String, Value>) -> Option<Self> {
        let mut e = Self::from_document(rec.get("metadata")?.get("warrant_grant")?).ok()?;
        if let GrantEvent::Issue(g) = &mut e {
            g.chain_index = rec.get("chain_index").and_then(Value::as_u64).unwrap_or(0);
        }
        Some(e)
    }
}

/// A revocation as the book keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revocation {
    /// Who revoked it.
    pub principal: String,
    /// When.
    pub decided_at: String,
    /// Why.
    pub reason: String,
}

/// The key grants are indexed by: agent, notebook, canonical class, tool.
type BookKey = (String, String, String, String);

/// The grants that may cover calls of one key: by session, and the rest.
#[derive(Debug, Clone, Default)]
struct Bucket {
    by_session: HashMap<String, Vec<Arc<Grant>>>,
    other: Vec<Arc<Grant>>,
}

/// The live grants, folded in chain order over the verified grant records: issued and not
/// revoked (expiry and uses are judged at the time of a call). Looking up the grants that may
/// cover a call is a `BTreeMap` lookup on (agent, notebook, class, tool), O(log n) in the number
/// of grants, then a hash lookup of the call's session.
#[derive(Debug, Clone, Default)]
pub struct GrantBook {
    by_key: BTreeMap<BookKey, Bucket>,
    by_id: HashMap<String, Arc<Grant>>,
    revoked: HashMap<String, (Arc<Grant>, Revocation)>,
}

impl GrantBook {
    /// Applies one verified grant event. A grant id issued twice keeps the first; a revocation
    /// of an unknown id is ignored.
    pub fn apply(&mut self, e: &GrantEvent) {
        match e {
            GrantEvent::Issue(g) => {
                if self.by_id.contains_key(&g.grant_id) || self.revoked.contains_key(&g.grant_id) {
                    return;
                }
                let g = Arc::new(Grant::clone(g));
                let bucket = self
                    .by_key
                    .entry((g.agent.clone(), g.notebook.clone(), g.action_class.clone(), g.tool.clone()))
                    .or_default();
                match &g.scope {
                    Scope::Session(s) => bucket.by_session.entry(s.clone()).or_default().push(g.clone()),
                    _ => bucket.other.push(g.clone()),
                }
                self.by_id.insert(g.grant_id.clone(), g);
            }
            GrantEvent::Revoke { grant_id, principal, decided_at, reason } => {
                let Some(g) = self.by_id.remove(grant_id) else { return };
                let key = (g.agent.clone(), g.notebook.clone(), g.action_class.clone(), g.tool.clone());
                if let Some(bucket) = self.by_key.get_mut(&key) {
                    let list = match &g.scope {
                        Scope::Session(s) => bucket.by_session.get_mut(s),
                        _ => Some(&mut bucket.other),
                    };
                    if let Some(list) = list {
                        list.retain(|x| x.grant_id != *grant_id);
                    }
                }
                let r =
                    Revocation { principal: principal.clone(), decided_at: decided_at.clone(), reason: reason.clone() };
                self.revoked.insert(grant_id.clone(), (g, r));
            }
        }
    }

    /// The grants that cover a call with `facts` at `now` (unix seconds), sessions first, then
    /// in the order they were issued.
    pub fn covering<'a>(&'a self, facts: &'a CallFacts, now: f64) -> impl Iterator<Item = &'a Arc<Grant>> + 'a {
        let key = (facts.agent.clone(), facts.notebook.clone(), facts.action_class.clone(), facts.tool.clone());
        let bucket = self.by_key.get(&key);
        let session = bucket.zip(facts.session.as_ref()).and_then(|(b, s)| b.by_session.get(s)).into_iter().flatten();
        let other = bucket.into_iter().flat_map(|b| b.other.iter());
        session.chain(other).filter(move |g| g.covers(facts, now))
    }

    /// A grant issued and not revoked, by id.
    #[must_use]
    pub fn get(&self, grant_id: &str) -> Option<&Arc<Grant>> {
        self.by_id.get(grant_id)
    }

    /// A revoked grant and its revocation, by id.
    #[must_use]
    pub fn revoked(&self, grant_id: &str) -> Option<&(Arc<Grant>, Revocation)> {
        self.revoked.get(grant_id)
    }

    /// Every grant issued and not revoked (expired ones included), in id order.
    #[must_use]
    pub fn issued(&self) -> Vec<&Arc<Grant>> {
        let mut v: Vec<&Arc<Grant>> = self.by_id.values().collect();
        v.sort_by(|a, b| a.chain_index.cmp(&b.chain_index).then_with(|| a.grant_id.cmp(&b.grant_id)));
        v
    }

    /// Every revoked grant with its revocation, in the order they were issued.
    #[must_use]
    pub fn revoked_all(&self) -> Vec<(&Arc<Grant>, &Revocation)> {
        let mut v: Vec<(&Arc<Grant>, &Revocation)> = self.revoked.values().map(|(g, r)| (g, r)).collect();
        v.sort_by(|a, b| a.0.chain_index.cmp(&b.0.chain_index).then_with(|| a.0.grant_id.cmp(&b.0.grant_id)));
        v
    }

    /// How many grants are issued and not revoked.
    #[must_use]
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Whether no grant is issued and unrevoked.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }
}
