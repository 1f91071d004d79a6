//! What the sequential checks remember of earlier records: the keys of their `record_id`s and
//! their lineage facts, and the v0.1 lineage checks (§5.2).

use super::{Check, VerifyReport};
use crate::canonical;
use serde_json::{Map, Value};
use std::collections::HashMap;

/// What a child needs of its parent for the v0.1 checks: its `effects_grant` and `actor_chain`.
type ParentFacts = (Vec<Value>, Option<Value>);

/// The 128-bit key of a `record_id`, for duplicates and parent lookups. A canonical UUID (36
/// characters, lower-case hex, as warrant writes them) is its own 128 bits, so that warrant's
/// UUIDv7 ids arrive in ascending key order (see [`SeenIds`]); any other id is two SipHash-1-3
/// digests with per-process random keys, so no input can be crafted to collide with another id
/// (a UUID's text and its value are one-to-one; a digest meets one only by chance, 2⁻¹²⁸).
#[derive(Clone, Default)]
pub(super) struct IdKeys(std::collections::hash_map::RandomState, std::collections::hash_map::RandomState);

impl IdKeys {
    pub(super) fn key(&self, id: &str) -> u128 {
        use std::hash::BuildHasher as _;
        uuid_value(id.as_bytes())
            .unwrap_or_else(|| (u128::from(self.0.hash_one(id)) << 64) | u128::from(self.1.hash_one(id)))
    }

    /// The key of a parsed record's `record_id`, `None` when that is missing or not a string.
    pub(super) fn of(&self, rec: &Map<String, Value>) -> Option<u128> {
        rec.get("record_id").and_then(Value::as_str).map(|id| self.key(id))
    }
}

/// The value of a UUID in canonical text form (`8-4-4-4-12` lower-case hex digits), else `None`.
fn uuid_value(text: &[u8]) -> Option<u128> {
    /// Where the 32 digits are.
    const DIGITS: [usize; 32] = [
        0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 14, 15, 16, 17, 19, 20, 21, 22, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33,
        34, 35,
    ];
    /// Each byte's digit value, 16 when it is not a lower-case hex digit.
    const HEX: [u8; 256] = {
        let mut table = [16u8; 256];
        let mut c = 0;
        while c < 10 {
            table[b'0' as usize + c] = c as u8;
            c += 1;
        }
        let mut c = 0;
        while c < 6 {
            table[b'a' as usize + c] = 10 + c as u8;
            c += 1;
        }
        table
    };
    let text: &[u8; 36] = text.try_into().ok()?;
    if text[8] != b'-' || text[13] != b'-' || text[18] != b'-' || text[23] != b'-' {
        return None;
    }
    // Two halves, so the shifts do not form one chain of 32.
    let (mut high, mut low, mut bad) = (0u64, 0u64, 0u8);
    for k in 0..16 {
        let (h, l) = (HEX[usize::from(text[DIGITS[k]])], HEX[usize::from(text[DIGITS[k + 16]])]);
        bad |= h | l;
        high = (high << 4) | u64::from(h & 15);
        low = (low << 4) | u64::from(l & 15);
    }
    (bad < 16).then_some((u128::from(high) << 64) | u128::from(low))
}

/// The keys of the record ids seen so far. Keys that arrive above every earlier key (warrant's
/// UUIDv7 ids, nearly always) are appended to a sorted vector, 16 bytes each and no random
/// memory access; the others go to a hash set. A key above the vector's last is new: every key
/// in the set was below the vector's last when it arrived.
#[derive(Default)]
pub(super) struct SeenIds {
    ascending: Vec<u128>,
    others: std::collections::HashSet<u128, foldhash::fast::RandomState>,
}

impl SeenIds {
    /// Adds `key`; false when it was already there.
    pub(super) fn insert(&mut self, key: u128) -> bool {
        if self.ascending.last().is_none_or(|&last| key > last) {
            self.ascending.push(key);
            return true;
        }
        self.ascending.binary_search(&key).is_err() && self.others.insert(key)
    }

    fn contains(&self, key: u128) -> bool {
        self.ascending.binary_search(&key).is_ok() || self.others.contains(&key)
    }
}

/// What the sequential checks remember of the records seen so far: the key of each `record_id`
/// ([`IdKeys`], [`SeenIds`]) and the lineage facts of the few records that carry any (§5.2).
/// 1,000,000 records of warrant's cost about 17 MB.
#[derive(Default)]
pub(super) struct Lineage {
    pub(super) keys: IdKeys,
    pub(super) seen: SeenIds,
    pub(super) facts: HashMap<u128, ParentFacts, foldhash::fast::RandomState>,
}

impl Lineage {
    /// `Some(facts)` when a record with this id was seen (facts empty when it had none).
    fn parent(&self, id: &str) -> Option<(&[Value], Option<&Value>)> {
        let key = self.keys.key(id);
        if !self.seen.contains(key) {
            return None;
        }
        Some(self.facts.get(&key).map_or((&[][..], None), |(g, a)| (g.as_slice(), a.as_ref())))
    }
}

/// The v0.1 lineage checks (§5.2), as Harn implements them: a parent must appear earlier;
/// malformed effect lists count as empty; only actor subjects are compared.
pub(super) fn check_lineage(i: usize, rec: &Map<String, Value>, lineage: &Lineage, report: &mut VerifyReport) {
    let Some(meta) = rec.get("metadata").and_then(Value::as_object) else { return };
    let Some(parent_id) = meta.get("parent_record_id").and_then(Value::as_str) else { return };
    let used = effects(meta.get("effects_used"));
    let actor = meta.get("actor_chain");
    let Some((grant, parent_actor)) = lineage.parent(parent_id) else {
        if !used.is_empty() || actor.is_some() {
            report.push(Some(i), Check::Lineage, format!("parent_record_id {parent_id:?} not found in chain"));
        }
        return;
    };
    for effect in &used {
        if !grant.iter().any(|g| g == effect) {
            report.push(
                Some(i),
                Check::Lineage,
                format!(
                    "effects_used escaped grant: {} not in parent {parent_id:?}",
                    canonical::to_canonical_string(effect)
                ),
            );
        }
    }
    if let Some(actor) = actor {
        let Some(child) = actor_subjects(actor) else {
            report.push(Some(i), Check::Lineage, "actor_chain invalid: `sub` must be a string");
            return;
        };
        let Some(parent_actor) = parent_actor else {
            report.push(Some(i), Check::Lineage, format!("actor_chain parent {parent_id:?} missing actor_chain"));
            return;
        };
        let Some(par) = actor_subjects(parent_actor) else {
            report.push(Some(i), Check::Lineage, "actor_chain invalid in parent record");
            return;
        };
        let extends = child.0 == par.0 && child.1.len() == par.1.len() + 1 && child.1[1..] == par.1[..];
        if !extends {
            report.push(
                Some(i),
                Check::Lineage,
                format!(
                    "actor_chain escaped parentage: {} acting as {:?} does not extend parent {:?}",
                    child.0, child.1, par.1
                ),
            );
        }
    }
}

/// Decodes an effect list into canonical values; anything malformed counts as empty (Harn).
pub(super) fn effects(v: Option<&Value>) -> Vec<Value> {
    let Some(Value::Array(items)) = v else { return Vec::new() };
    let valid = items.iter().all(|e| {
        e.get("kind").and_then(|k| k.get("kind")).and_then(Value::as_str).is_some()
            && e.get("scope").and_then(Value::as_str).is_some()
    });
    if valid { items.clone() } else { Vec::new() }
}

/// `(origin sub, [current actor, earlier actors…])` of an actor chain.
fn actor_subjects(v: &Value) -> Option<(String, Vec<String>)> {
    let sub = v.get("sub")?.as_str()?.to_owned();
    let mut acts = Vec::new();
    let mut cur = v.get("act");
    while let Some(a) = cur {
        acts.push(a.get("sub")?.as_str()?.to_owned());
        cur = a.get("act");
    }
    Some((sub, acts))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn uuid_value_reads_exactly_the_canonical_lower_case_form() {
        for _ in 0..100 {
            let id = uuid::Uuid::now_v7();
            assert_eq!(uuid_value(id.to_string().as_bytes()), Some(id.as_u128()));
            let id = uuid::Uuid::new_v4();
            assert_eq!(uuid_value(id.to_string().as_bytes()), Some(id.as_u128()));
        }
        let text = "01a1fe9e-0e46-75d4-8ada-5dadc4c5d31e";
        assert_eq!(uuid_value(text.as_bytes()), Some(0x01a1_fe9e_0e46_75d4_8ada_5dad_c4c5_d31e));
        for other in [
            "01A1FE9E-0E46-75D4-8ADA-5DADC4C5D31E", // another string, so another id
            "01a1fe9e-0e46-75d4-8ada-5dadc4c5d31",
            "01a1fe9e-0e46-75d4-8ada-5dadc4c5d31e0",
            "01a1fe9e00e46-75d4-8ada-5dadc4c5d31e",
            "01a1fe9e-0e46-75d4-8ada-5dadc4c5d3-e",
            "01a1fe9e-0e46-75d4-8ada-5dadc4c5d3g1",
            "{1a1fe9e-0e46-75d4-8ada-5dadc4c5d31e",
            "01a1fe9e0e4675d48ada5dadc4c5d31e",
        ] {
            assert_eq!(uuid_value(other.as_bytes()), None, "{other}");
        }
        // Other ids are keyed by digest, and different strings get different keys.
        let keys = IdKeys::default();
        assert_ne!(keys.key(text), keys.key(&text.to_uppercase()));
        assert_ne!(keys.key("rcpt-1"), keys.key("rcpt-2"));
        assert_eq!(keys.key("rcpt-1"), keys.key("rcpt-1"));
    }

    proptest! {
        /// SeenIds answers as a hash set does, whatever the order keys arrive in: ascending runs
        /// (warrant's UUIDv7 ids), repeats, and keys below the last.
        #[test]
        fn seen_ids_is_a_set(ops in proptest::collection::vec((0u8..4, 0u128..64), 0..200)) {
            let (mut seen, mut model) = (SeenIds::default(), std::collections::HashSet::new());
            let (mut next, mut earlier) = (100u128, Vec::new());
            for (kind, x) in ops {
                let key = match kind {
                    // The next of an ascending run, as warrant's ids arrive.
                    0 => {
                        next += 1 + x;
                        next
                    }
                    // The run's last key again, or an earlier one.
                    1 => next,
                    2 => earlier.get(x as usize % earlier.len().max(1)).copied().unwrap_or(x),
                    // A key below the run, or between its keys.
                    _ => 90 + x * 3,
                };
                earlier.push(key);
                prop_assert_eq!(seen.contains(key), model.contains(&key));
                prop_assert_eq!(seen.insert(key), model.insert(key), "insert {}", key);
                prop_assert!(seen.contains(key));
            }
        }
    }
}
