//! The evidence rows of a chain, kept compactly for long chains (`docs/performance.md`).
//!
//! A chain of 1,000,000 receipts is 1,000,000 evidence rows, about 450 MB as
//! [`EvidenceRow`]s. The posteriors and the gate only sum rows per action class, so
//! [`ChainEvidence`] keeps each distinct row once with a count (rows that differ only in
//! `receipt_id` and `recorded_at` are equal for every sum), and the last [`RECENT_ROWS`] rows of
//! each class whole, in chain order, for the console's evidence list. A million generated
//! receipts over a dozen classes and 60 days are a few thousand distinct rows.

use crate::graduation::evidence::{Bucket, EvidenceRow, SourceType};
use std::collections::{HashMap, VecDeque};

/// Rows of each class kept whole, in chain order, for display.
pub const RECENT_ROWS: usize = 200;

/// What makes two rows count the same: every field but `receipt_id` and `recorded_at` (weights
/// by their bits).
type RowKey = (String, String, Option<String>, Option<String>, Option<SourceType>, [u64; 3], Option<u64>, Bucket, bool);

fn key_of(r: &EvidenceRow) -> RowKey {
    (
        r.action_class.clone(),
        r.label.clone(),
        r.date.clone(),
        r.source.clone(),
        r.source_type,
        [r.decision_weight.to_bits(), r.provenance_weight.to_bits(), r.evidence_weight.to_bits()],
        r.edit_distance.map(f64::to_bits),
        r.bucket,
        r.trust_violation,
    )
}

/// Evidence rows in chain order, stored as distinct rows with counts plus the most recent rows
/// of each class (see the module docs). Summing over [`ChainEvidence::rows`] gives what summing
/// over the rows one by one gives; the order of the repeated rows is that of their first
/// appearance.
#[derive(Debug, Clone, Default)]
pub struct ChainEvidence {
    /// Distinct rows with how many times each occurs (0 once removed).
    runs: Vec<(EvidenceRow, u64)>,
    at: HashMap<RowKey, usize, foldhash::fast::RandomState>,
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
        let pos = self.count_run(key_of(&row), &row.action_class, 1, || row.clone());
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
            let class = row.action_class.clone();
            self.count_run(key_of(&row), &class, n, move || row);
        }
    }

    /// Counts `n` rows of the distinct row `key` (of `class`), storing the row `make` gives when
    /// it is new; returns its position.
    fn count_run(&mut self, key: RowKey, class: &str, n: u64, make: impl FnOnce() -> EvidenceRow) -> usize {
        let count = self.counts.entry(class.to_owned()).or_insert(0);
        if *count == 0 && !self.classes.iter().any(|c| c == class) {
            self.classes.push(class.to_owned());
        }
        *count += n;
        self.len += n;
        match self.at.get(&key) {
            Some(&p) => {
                self.runs[p].1 += n;
                p
            }
            None => {
                self.runs.push((make(), n));
                self.at.insert(key, self.runs.len() - 1);
                self.runs.len() - 1
            }
        }
    }

    /// The distinct rows with how many times each occurs (runs taken back to none left out), in
    /// order of first appearance: pushed again with [`ChainEvidence::push_run`], they give
    /// the same sums ([`ChainEvidence::same_rows`]).
    pub fn runs(&self) -> impl Iterator<Item = (&EvidenceRow, u64)> {
        self.runs.iter().filter(|(_, n)| *n > 0).map(|(r, n)| (r, *n))
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
