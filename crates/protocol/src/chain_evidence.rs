//! The evidence rows of a chain, kept compactly for long chains (`docs/performance.md`).
//!
//! A chain of 1,000,000 receipts is 1,000,000 evidence rows, about 450 MB as
//! [`EvidenceRow`]s. The posteriors and the gate only sum rows per action class, so
//! [`ChainEvidence`] keeps each distinct row once with a count (rows that differ only in
//! `receipt_id` and `recorded_at` are equal for every sum), and the last [`RECENT_ROWS`] rows of
//! each class whole, in chain order, for the console's evidence list. A million generated
//! receipts over a dozen classes and 60 days are a few thousand distinct rows.

use crate::graduation::evidence::EvidenceRow;
use std::collections::{HashMap, VecDeque};

/// Rows of each class kept whole, in chain order, for display.
pub const RECENT_ROWS: usize = 200;

/// What makes two rows count the same: every field but `receipt_id` and `recorded_at` (weights
/// by their bits), hashed through references (no field is copied to look a row up).
fn hash_key(state: &foldhash::fast::RandomState, r: &EvidenceRow) -> u64 {
    std::hash::BuildHasher::hash_one(
        state,
        (
            &r.action_class,
            &r.label,
            &r.date,
            &r.source,
            r.source_type,
            [r.decision_weight.to_bits(), r.provenance_weight.to_bits(), r.evidence_weight.to_bits()],
            r.edit_distance.map(f64::to_bits),
            r.bucket,
            r.trust_violation,
        ),
    )
}

/// Whether `a` and `b` count the same (see [`hash_key`]).
fn same_key(a: &EvidenceRow, b: &EvidenceRow) -> bool {
    a.action_class == b.action_class
        && a.label == b.label
        && a.date == b.date
        && a.source == b.source
        && a.source_type == b.source_type
        && a.decision_weight.to_bits() == b.decision_weight.to_bits()
        && a.provenance_weight.to_bits() == b.provenance_weight.to_bits()
        && a.evidence_weight.to_bits() == b.evidence_weight.to_bits()
        && a.edit_distance.map(f64::to_bits) == b.edit_distance.map(f64::to_bits)
        && a.bucket == b.bucket
        && a.trust_violation == b.trust_violation
}

/// Evidence rows in chain order, stored as distinct rows with counts plus the most recent rows
/// of each class (see the module docs). Summing over [`ChainEvidence::rows`] gives what summing
/// over the rows one by one gives; the order of the repeated rows is that of their first
/// appearance.
#[derive(Debug, Clone, Default)]
pub struct ChainEvidence {
    /// Distinct rows with how many times each occurs (0 once removed).
    runs: Vec<(EvidenceRow, u64)>,
    /// Positions in `runs`, by [`hash_key`].
    at: hashbrown::HashTable<usize>,
    hasher: foldhash::fast::RandomState,
    /// The last [`RECENT_ROWS`] rows of each class, with their record index (`usize::MAX` when
    /// unknown).
    recent: HashMap<String, VecDeque<(usize, EvidenceRow)>, foldhash::fast::RandomState>,
    /// Rows per class.
    counts: HashMap<String, u64, foldhash::fast::RandomState>,
    /// Classes in order of first appearance.
    classes: Vec<String>,
    len: u64,
}

impl ChainEvidence {
    /// Adds a row (of record `index`, for [`ChainEvidence::remove`]); returns the position of
    /// its distinct row.
    pub fn push_at(&mut self, index: usize, row: EvidenceRow) -> usize {
        let pos = self.count_run(std::borrow::Cow::Borrowed(&row), 1);
        let recent = self.recent.entry(row.action_class.clone()).or_default();
        if recent.len() == RECENT_ROWS {
            recent.pop_front();
        }
        recent.push_back((index, row));
        pos
    }

    /// Adds `n` rows equal to `row` whose record indexes are not known (a run of a stored
    /// [`ChainEvidence::runs`]). The run joins no class's recent rows: those are the rows the
    /// chain's records were read for.
    pub fn push_run(&mut self, row: EvidenceRow, n: u64) {
        if n > 0 {
            self.count_run(std::borrow::Cow::Owned(row), n);
        }
    }

    /// Counts `n` rows equal to `row`, storing it (copied if borrowed) when it is new; returns
    /// the position of its distinct row.
    fn count_run(&mut self, row: std::borrow::Cow<'_, EvidenceRow>, n: u64) -> usize {
        let class = row.action_class.as_str();
        match self.counts.get_mut(class) {
            Some(count) => *count += n,
            None => {
                self.counts.insert(class.to_owned(), n);
                if !self.classes.iter().any(|c| c == class) {
                    self.classes.push(class.to_owned());
                }
            }
        }
        self.len += n;
        let hash = hash_key(&self.hasher, &row);
        let runs = &self.runs;
        if let Some(&p) = self.at.find(hash, |&p| same_key(&runs[p].0, &row)) {
            self.runs[p].1 += n;
            return p;
        }
        self.runs.push((row.into_owned(), n));
        let p = self.runs.len() - 1;
        let (runs, hasher) = (&self.runs, &self.hasher);
        self.at.insert_unique(hash, p, |&q| hash_key(hasher, &runs[q].0));
        p
    }

    /// The distinct rows with how many times each occurs (runs taken back to none left out), in
    /// order of first appearance: pushed again with [`ChainEvidence::push_run`], they give
    /// the same sums ([`ChainEvidence::same_rows`]).
    pub fn runs(&self) -> impl Iterator<Item = (&EvidenceRow, u64)> {
        self.runs.iter().filter(|(_, n)| *n > 0).map(|(r, n)| (r, *n))
    }

    /// Makes room for `additional` more distinct rows (before pushing a stored
    /// [`ChainEvidence::runs`] back, so the rows are not moved as they grow).
    pub fn reserve(&mut self, additional: usize) {
        self.runs.reserve(additional);
        let (runs, hasher) = (&self.runs, &self.hasher);
        self.at.reserve(additional, |&q| hash_key(hasher, &runs[q].0));
    }

    /// Adds a row whose record index is not known.
    pub fn push(&mut self, row: EvidenceRow) {
        self.push_at(usize::MAX, row);
    }

    /// Takes back a row added with [`ChainEvidence::push_at`] (`pos` as returned, `index` as
    /// given): the record turned out to fail a check. A removed row that was no longer among the
    /// recent ones leaves them as they are.
    pub fn remove(&mut self, pos: usize, index: usize) {
        let Some((row, n)) = self.runs.get_mut(pos) else { return };
        if *n == 0 {
            return;
        }
        *n -= 1;
        self.len -= 1;
        if let Some(c) = self.counts.get_mut(&row.action_class) {
            *c = c.saturating_sub(1);
        }
        if let Some(recent) = self.recent.get_mut(&row.action_class) {
            recent.retain(|(i, _)| *i != index);
        }
    }

    /// Number of rows.
    #[must_use]
    pub fn len(&self) -> usize {
        usize::try_from(self.len).unwrap_or(usize::MAX)
    }

    /// True when there is no row.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether `self` and `other` hold the same rows with the same counts, in the same order of
    /// first appearance: then every sum over them, so every posterior and gate decision, is the
    /// same. (Which rows are kept whole for display is not compared.) Costs one comparison per
    /// distinct row.
    #[must_use]
    pub fn same_rows(&self, other: &Self) -> bool {
        self.len == other.len && self.runs.iter().filter(|(_, n)| *n > 0).eq(other.runs.iter().filter(|(_, n)| *n > 0))
    }

    /// Every row, each distinct row repeated as often as it occurs.
    pub fn rows(&self) -> impl Iterator<Item = &EvidenceRow> + Clone {
        self.runs.iter().flat_map(|(r, n)| std::iter::repeat_n(r, usize::try_from(*n).unwrap_or(usize::MAX)))
    }

    /// The rows of one class (see [`ChainEvidence::rows`]).
    pub fn rows_of<'a>(&'a self, class: &'a str) -> impl Iterator<Item = &'a EvidenceRow> + Clone + 'a {
        self.runs
            .iter()
            .filter(move |(r, _)| r.action_class == class)
            .flat_map(|(r, n)| std::iter::repeat_n(r, usize::try_from(*n).unwrap_or(usize::MAX)))
    }

    /// The last [`RECENT_ROWS`] rows of a class, in chain order.
    pub fn recent(&self, class: &str) -> impl Iterator<Item = &EvidenceRow> {
        self.recent.get(class).into_iter().flat_map(|d| d.iter().map(|(_, r)| r))
    }

    /// How many rows a class has.
    #[must_use]
    pub fn count(&self, class: &str) -> usize {
        self.counts.get(class).map_or(0, |&n| usize::try_from(n).unwrap_or(usize::MAX))
    }

    /// The classes with rows, in order of first appearance.
    pub fn classes(&self) -> impl Iterator<Item = &str> {
        self.classes.iter().filter(|c| self.count(c) > 0).map(String::as_str)
    }
}

impl From<Vec<EvidenceRow>> for ChainEvidence {
    fn from(rows: Vec<EvidenceRow>) -> Self {
        rows.into_iter().collect()
    }
}

impl FromIterator<EvidenceRow> for ChainEvidence {
    fn from_iter<I: IntoIterator<Item = EvidenceRow>>(iter: I) -> Self {
        let mut e = Self::default();
        for (i, row) in iter.into_iter().enumerate() {
            e.push_at(i, row);
        }
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graduation::evidence::SourceType;

    fn row(class: &str, label: &str, date: &str) -> EvidenceRow {
        EvidenceRow::new(class, label, Some(SourceType::Principal), Some(date.into()))
    }

    /// Rows equal in every counted field share one run, whatever their receipt; a row differing
    /// in any of them (a weight by one bit, the date, the source) is a run of its own; runs keep
    /// the order of first appearance, and a removed row is taken from its own run.
    #[test]
    fn equal_rows_share_a_run_and_any_difference_makes_another() {
        let mut e = ChainEvidence::default();
        let a = row("email.send", "approved", "2026-11-01");
        let mut a_receipt = a.clone();
        a_receipt.receipt_id = Some("r-1".into());
        let mut a_weight = a.clone();
        a_weight.evidence_weight = f64::from_bits(a.evidence_weight.to_bits() + 1);
        let b = row("email.send", "approved", "2026-11-02");
        let c = row("git.push", "refused", "2026-11-01");
        let at = [e.push_at(0, a.clone()), e.push_at(1, a_receipt), e.push_at(2, b.clone())];
        e.push_run(c.clone(), 5);
        let w = e.push_at(9, a_weight.clone());
        e.push_run(a.clone(), 3);
        assert_eq!(at, [0, 0, 1]);
        assert_eq!(w, 3, "a weight one bit away is another run");
        let runs: Vec<(EvidenceRow, u64)> = e.runs().map(|(r, n)| (r.clone(), n)).collect();
        assert_eq!(runs, vec![(a.clone(), 5), (b, 1), (c, 5), (a_weight, 1)]);
        assert_eq!((e.len(), e.count("email.send"), e.count("git.push")), (12, 7, 5));
        assert_eq!(e.classes().collect::<Vec<_>>(), ["email.send", "git.push"]);
        e.remove(w, 9);
        assert_eq!(e.runs().count(), 3, "a run taken back to none is left out");
        assert_eq!(e.count("email.send"), 6);
    }
}
