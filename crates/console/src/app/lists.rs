//! The lists the panes show, derived from the last scan, the chain and the filter: taking a scan,
//! `refresh` (filtering, sorting, keeping the selection on its item), the filter's memo and
//! case-folded search, moving the selection.

use super::{DecidedRow, Pane, State};
use crate::filter::{Field, Filter, SortKey};
use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use warrant_protocol::graduation::policy::PolicySet;
use warrant_protocol::packet::Packet;
use warrant_protocol::verdict::Governance;
use warrant_store::spool::{InvalidFile, PacketEntry, Snapshot};

impl State {
    /// Takes a new scan: notes packets whose content changed under the same id, counts receipts
    /// per class, and refreshes the lists.
    pub(super) fn take_snapshot(&mut self, snapshot: Snapshot) {
        // The Grants view's rows change with the claimed uses (the scanner shares them while
        // they are the same), not with every scan.
        let uses_changed = !Arc::ptr_eq(&self.snapshot.uses, &snapshot.uses);
        // The scanner hands back the same `Arc` for a file it did not parse again: those packets
        // are unchanged, found by address (the previous snapshot holds them, so no address is
        // reused meanwhile), and only the new or re-parsed ones are looked up by id.
        let before: HashSet<*const Packet, foldhash::fast::RandomState> =
            self.snapshot.packets.iter().map(|e| Arc::as_ptr(&e.packet)).collect();
        for e in &snapshot.packets {
            let p = &e.packet;
            if before.contains(&Arc::as_ptr(p)) {
                continue;
            }
            // Allocates only for a packet that is new or changed, not for every packet per scan.
            match self.last_hash.get(&p.id) {
                Some(old) if *old == p.content_hash => {}
                Some(_) => {
                    self.last_hash.insert(p.id.clone(), p.content_hash.clone());
                    self.changed_at.insert(p.id.clone(), self.now);
                }
                None => {
                    self.last_hash.insert(p.id.clone(), p.content_hash.clone());
                }
            }
        }
        drop(before);
        self.snapshot = snapshot;
        self.receipts_by_class.clear();
        for r in &self.snapshot.receipts {
            *self.receipts_by_class.entry(r.action_class.clone()).or_default() += 1;
        }
        // The lists show the scan at once; the models' assessment follows.
        self.refresh();
        if uses_changed {
            self.recompute_grants();
        }
        self.snapshot_generation += 1;
    }

    /// Recomputes the Grants view's rows from the chain's grants and the claimed uses, keeping
    /// the selected grant under the cursor.
    pub(super) fn recompute_grants(&mut self) {
        let selected = self.grant_rows.get(self.selection(Pane::Grants)).map(|r| r.grant.grant_id.clone());
        self.grant_rows = crate::grants::rows(&self.grants, &self.snapshot.uses, self.now);
        if let Some(i) = selected.and_then(|id| self.grant_rows.iter().position(|r| r.grant.grant_id == id)) {
            self.selected[Pane::Grants as usize] = i;
        }
    }

    /// Recomputes the filtered lists, keeping the selection on the same item where possible.
    pub(super) fn refresh(&mut self) {
        let keep: Vec<Option<String>> = Pane::ALL.iter().map(|p| self.selected_id(*p)).collect();
        // Parsed once per refresh; words are lowered once here.
        let filter = Filter::parse(&self.filter);
        self.filter_error = filter.error().map(str::to_owned);
        let policies = Arc::clone(&self.policies);
        // A packet's state comes from the assessment, which changes without the packet: its
        // terms are matched afresh each time, the others' answers are kept per packet.
        let (kept, live) = filter.split_off(Field::State);
        // One pass over the packets: the undecided ones that match, and the decided ones'
        // packets (few) for the decided rows.
        let mut pending: Vec<PacketEntry> = Vec::with_capacity(self.snapshot.packets.len());
        let mut decided_packets: HashMap<&str, &Arc<Packet>> = HashMap::new();
        let memo = &mut self.filter_memo;
        let policies_at = Arc::as_ptr(&policies) as usize;
        if memo.needle != self.filter
            || memo.policies != policies_at
            || memo.hits.len() > 2 * self.snapshot.packets.len() + 1024
        {
            // A new filter or policy (a class's risk), or packets gone from the spool piling up:
            // start again.
            memo.hits.clear();
            memo.needle.clone_from(&self.filter);
            memo.policies = policies_at;
        }
        let mut marked = BTreeSet::new();
        let mut pending_total = 0;
        for e in &self.snapshot.packets {
            let p = &e.packet;
            if self.decisions.contains_key(&p.id) {
                decided_packets.insert(&p.id, p);
                continue;
            }
            // A tool call the gate let run on its own waits for nobody (the Agents view counts it),
            // nor one that ran on a grant (its use is claimed in `uses/`).
            // Nor one its hook or gateway answered, or stopped waiting for: it can no longer run.
            if warrant_engine::monitor::ran_on_its_own(&self.assessment, p)
                || self.snapshot.uses.ran_on_grant(&self.grants, &self.policies, p).is_some()
                || self.snapshot.uses.withdrawn(&p.id, e.owner, self.now)
            {
                continue;
            }
            pending_total += 1;
            if !self.marked.is_empty() && self.marked.contains(&p.id) {
                marked.insert(p.id.clone());
            }
            if filter.is_empty()
                || memo
                    .hits
                    .entry(Arc::as_ptr(p) as usize)
                    .or_insert_with(|| {
                        let hit = kept.matches(&[&p.id, &p.agent, &p.action_class, &p.summary], |f| {
                            packet_field(&policies, p, f)
                        });
                        (Arc::clone(p), hit)
                    })
                    .1
                    && (live.is_empty() || {
                        let shown = self.assessment.verdicts.get(&p.id).map(|v| v.state).or(p.state);
                        live.matches(&[], |_| Some(Cow::Borrowed(shown.map_or("unknown", |s| s.as_str()))))
                    })
            {
                pending.push(e.clone());
            }
        }
        self.marked = marked;
        self.pending_total = pending_total;
        // Stable sorts: ties stay in the scan's order (newest first, then by id).
        match self.sort {
            SortKey::Age => {}
            SortKey::Risk => {
                pending.sort_by_cached_key(|e| std::cmp::Reverse(policies.class_risk(&e.packet.action_class)));
            }
            SortKey::Class => pending.sort_by(|a, b| a.packet.action_class.cmp(&b.packet.action_class)),
            SortKey::Agent => pending.sort_by(|a, b| a.packet.agent.cmp(&b.packet.agent)),
        }
        if self.sort_reverse {
            pending.reverse();
        }
        // Expired packets (which can only be refused) apart, after the live ones, each group in
        // the chosen order (a stable sort; each packet's expiry is read once, not per comparison).
        let now = self.now;
        pending.sort_by_cached_key(|e| super::state::seconds_to_expiry(&e.packet, now).is_some_and(|s| s <= 0.0));
        let decided = self.decided_rows(&filter, &policies, &decided_packets);
        let invalid: Vec<InvalidFile> = self
            .snapshot
            .invalid
            .iter()
            .filter(|f| {
                let reason = f.reason.to_string();
                filter.matches(&[&f.name, &reason], |_| None)
            })
            .cloned()
            .collect();
        self.filter_views(&filter, &policies);
        self.pending = pending;
        self.decided = decided;
        self.invalid = invalid;
        for (pane, id) in Pane::ALL.iter().zip(keep) {
            if let Some(id) = id
                && let Some(pos) = self.position_of(*pane, &id)
            {
                self.selected[*pane as usize] = pos;
            }
            self.selected[*pane as usize] = self.selection(*pane);
        }
    }

    /// The decided rows that match `filter`, the newest record first, with their packets where
    /// the spool still has them (`decided_packets`).
    fn decided_rows(
        &self,
        filter: &Filter,
        policies: &PolicySet,
        decided_packets: &HashMap<&str, &Arc<Packet>>,
    ) -> Vec<DecidedRow> {
        let mut decided: Vec<DecidedRow> = self
            .decisions
            .iter()
            .map(|(id, d)| DecidedRow {
                id: id.clone(),
                decision: d.clone(),
                packet: decided_packets.get(id.as_str()).map(|p| Arc::clone(p)),
            })
            .filter(|r| {
                let p = r.packet.as_deref();
                filter.matches(
                    &[
                        &r.id,
                        p.map_or("", |p| &p.agent),
                        p.map_or("", |p| &p.action_class),
                        p.map_or("", |p| &p.summary),
                    ],
                    |f| match (f, p) {
                        (Field::Id, _) => Some(Cow::Borrowed(r.id.as_str())),
                        // A decided packet has a decision, not a state.
                        (Field::State, _) => None,
                        (_, Some(p)) => packet_field(policies, p, f),
                        // The packet's file is gone: its fields are unknown.
                        (_, None) => Some(Cow::Borrowed("")),
                    },
                )
            })
            .collect();
        decided.sort_by_key(|r| std::cmp::Reverse(r.decision.chain_index));
        decided
    }

    /// Filters the posteriors, notebooks, agents and audit entries the views show (the audit is
    /// built only once its view has been opened).
    fn filter_views(&mut self, filter: &Filter, policies: &PolicySet) {
        self.posteriors = self
            .all_posteriors
            .iter()
            .filter(|p| {
                filter.matches(&[&p.action_class, p.tier.as_str()], |f| match f {
                    Field::Class => Some(Cow::Borrowed(p.action_class.as_str())),
                    Field::Risk => Some(Cow::Borrowed(policies.class_risk(&p.action_class).as_str())),
                    _ => None,
                })
            })
            .cloned()
            .collect();
        self.notebooks = self
            .all_notebooks
            .iter()
            .filter(|n| {
                filter.matches(&[&n.id, n.level.as_str()], |f| {
                    (f == Field::Notebook).then_some(Cow::Borrowed(n.id.as_str()))
                })
            })
            .cloned()
            .collect();
        self.agents = self
            .assessment
            .monitor
            .agents
            .values()
            .filter(|a| {
                filter.matches(&[&a.agent, a.standing.as_str()], |f| {
                    (f == Field::Agent).then_some(Cow::Borrowed(a.agent.as_str()))
                })
            })
            .cloned()
            .collect();
        // Built only once the Audit view has been opened (its chain part comes from a job).
        self.audit = if self.audit_wanted {
            warrant_engine::audit::build(
                self.audit_chain.as_ref().clone(),
                &self.snapshot.receipts,
                &self.snapshot.uses.granted,
                &warrant_engine::audit::AuditFilter::default(),
            )
        } else {
            Vec::new()
        };
        self.audit.retain(|e| {
            let record = e.record.map(|r| r.to_string()).unwrap_or_default();
            filter.matches(&[&e.agent, &e.action, e.kind.word(), &e.decision, e.how.word(), &record], |f| match f {
                Field::Agent => Some(Cow::Borrowed(e.agent.as_str())),
                Field::Class => Some(Cow::Borrowed(e.action.as_str())),
                Field::Id => Some(Cow::Borrowed(e.packet_id.as_deref().unwrap_or_default())),
                _ => None,
            })
        });
    }

    fn selected_id(&self, pane: Pane) -> Option<String> {
        let i = self.selected[pane as usize];
        match pane {
            Pane::Pending => self.pending.get(i).map(|e| e.packet.id.clone()),
            Pane::Decided => self.decided.get(i).map(|r| r.id.clone()),
            Pane::Invalid => self.invalid.get(i).map(|f| f.name.clone()),
            Pane::Posteriors => self.posteriors.get(i).map(|p| p.action_class.clone()),
            Pane::Matrices => self.notebooks.get(i).map(|n| n.id.clone()),
            Pane::Agents => self.agents.get(i).map(|a| a.agent.clone()),
            Pane::Grants => self.grant_rows.get(i).map(|r| r.grant.grant_id.clone()),
            Pane::Audit => self.audit.get(i).map(audit_key),
        }
    }

    fn position_of(&self, pane: Pane, id: &str) -> Option<usize> {
        match pane {
            Pane::Pending => self.pending.iter().position(|e| e.packet.id == id),
            Pane::Decided => self.decided.iter().position(|r| r.id == id),
            Pane::Invalid => self.invalid.iter().position(|f| f.name == id),
            Pane::Posteriors => self.posteriors.iter().position(|p| p.action_class == id),
            Pane::Matrices => self.notebooks.iter().position(|n| n.id == id),
            Pane::Agents => self.agents.iter().position(|a| a.agent == id),
            Pane::Grants => self.grant_rows.iter().position(|r| r.grant.grant_id == id),
            Pane::Audit => self.audit.iter().position(|e| audit_key(e) == id),
        }
    }

    pub(super) fn move_selection(&mut self, delta: isize) {
        let len = self.len(self.pane);
        if len == 0 {
            return;
        }
        let cur = self.selection(self.pane) as isize;
        let next = (cur + delta).clamp(0, len as isize - 1);
        self.selected[self.pane as usize] = next as usize;
    }
}

/// What keeps the Audit view's selection on its entry across rebuilds: the record number, or
/// the receipt's id off the chain.
fn audit_key(e: &warrant_engine::audit::AuditEntry) -> String {
    e.record.map_or_else(|| format!("r:{}", e.receipt_id.as_deref().unwrap_or_default()), |r| format!("#{r}"))
}

/// The filter's answer for each packet it was asked about under `needle`. A packet is immutable
/// and shared (`Arc`) from its parse on, so a scan that adds a few packets to many matches only
/// those. Keyed by the packet's address, and holding the packet so that the address is not
/// reused while the answer is kept.
#[derive(Debug, Clone, Default)]
pub(super) struct FilterMemo {
    needle: String,
    /// The policies the answers were made with (a `risk:` term reads them), by address.
    policies: usize,
    hits: HashMap<usize, (Arc<Packet>, bool), foldhash::fast::RandomState>,
}

/// Whether `hay`, lowered as [`str::to_lowercase`] lowers it, contains `needle` (already
/// lowered). The filter runs over every packet per scan, so for an ASCII needle (ids, agents and
/// classes are ASCII) `hay` is neither lowered nor checked for ASCII: its bytes are searched,
/// ignoring ASCII case. That is exact: a window that matches an ASCII needle is itself ASCII,
/// and no character outside ASCII lowers to anything with ASCII in it but `İ` (U+0130, to
/// `i` + U+0307) and the Kelvin sign (U+212A, to `k`). Their first bytes (0xC4, 0xE2) send `hay`
/// to the full lowering when the needle has an `i` or a `k`.
pub(crate) fn contains_folded(hay: &str, needle: &str) -> bool {
    if !needle.is_ascii() {
        return hay.to_lowercase().contains(needle);
    }
    let (h, n) = (hay.as_bytes(), needle.as_bytes());
    let Some((&first, rest)) = n.split_first() else { return true };
    // Only where the first letter is (in either case) is the rest compared.
    let found = memchr::memchr2_iter(first, first.to_ascii_uppercase(), h)
        .any(|at| h.len() - at > rest.len() && h[at + 1..at + 1 + rest.len()].eq_ignore_ascii_case(rest));
    if found {
        return true;
    }
    n.iter().any(|b| matches!(b, b'i' | b'k'))
        && memchr::memchr2(0xC4, 0xE2, h).is_some()
        && hay.to_lowercase().contains(needle)
}

/// A packet's field as a filter term reads it ([`Field::State`] is matched apart: it comes from
/// the assessment). An unset tool or notebook is empty.
fn packet_field<'a>(policies: &PolicySet, p: &'a Packet, f: Field) -> Option<Cow<'a, str>> {
    let governance = |get: fn(&Governance) -> Option<&String>| {
        Cow::Owned(Governance::of_packet(p).and_then(|g| get(&g).cloned()).unwrap_or_default())
    };
    Some(match f {
        Field::Agent => Cow::Borrowed(p.agent.as_str()),
        Field::Class => Cow::Borrowed(p.action_class.as_str()),
        Field::Risk => Cow::Borrowed(policies.class_risk(&p.action_class).as_str()),
        Field::Tool => governance(|g| g.tool.as_ref()),
        Field::Notebook => governance(|g| g.notebook.as_ref()),
        Field::Id => Cow::Borrowed(p.id.as_str()),
        Field::State => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::contains_folded;

    proptest::proptest! {
        // The filter's search finds exactly what lowering both sides and searching finds (the
        // needle comes lowered), ASCII or not, with the two characters that lower to ASCII
        // (U+0130 and the Kelvin sign U+212A) and others that share their first bytes.
        #[test]
        fn folded_search_is_lowered_contains(
            hay in "[a-ckiIKA-C\u{e9}\u{c9}\u{130}\u{131}\u{212a}\u{2122}\u{307} ]{0,24}",
            needle in "[a-ckiIKA-C\u{e9}\u{307}]{0,4}",
        ) {
            let needle = needle.to_lowercase();
            proptest::prop_assert_eq!(contains_folded(&hay, &needle), hay.to_lowercase().contains(&needle));
        }
    }
}
