//! The evidence rows of a chain, kept compactly for long chains (`docs/performance.md`).
//!
//! A chain of 1,000,000 receipts is 1,000,000 evidence rows, about 450 MB as
//! [`EvidenceRow`]s. The posteriors and the gate only sum rows per action class, so
//! [`ChainEvidence`] keeps each distinct row once with a count (rows that differ only in
//! `receipt_id` and `recorded_at` are equal for every sum), and the last [`RECENT_ROWS`] rows of
//! each class whole, in chain order, for the console's evidence list, each as a [`PackedRow`]
//! (its texts in one allocation). A verifier's workers pack each receipt's row
//! ([`ChainEvidence::push_packed`]), so a row moves to the folding thread as one allocation and
//! becomes an [`EvidenceRow`] only when it is the first of its run. A million generated
//! receipts over a dozen classes and 60 days are a few thousand distinct rows.

use crate::graduation::evidence::{Bucket, EvidenceRow, RowRead, SourceType};
use std::collections::{HashMap, VecDeque};

/// Rows of each class kept whole, in chain order, for display.
pub const RECENT_ROWS: usize = 200;

/// What makes two rows count the same: every field but `receipt_id` and `recorded_at`, weights
/// by their bits, borrowed from an [`EvidenceRow`] or a [`PackedRow`] (so a row is looked up
/// without copying a field).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct RowKey<'a> {
    action_class: &'a str,
    label: &'a str,
    date: Option<&'a str>,
    source: Option<&'a str>,
    source_type: Option<SourceType>,
    /// Decision, provenance and evidence weights' bits.
    weights: [u64; 3],
    edit_distance: Option<u64>,
    bucket: Bucket,
    trust_violation: bool,
}

impl<'a> RowRead<'a> {
    /// `row`'s fields, borrowed.
    fn of_row(row: &'a EvidenceRow) -> Self {
        RowRead {
            action_class: std::borrow::Cow::Borrowed(&row.action_class),
            label: std::borrow::Cow::Borrowed(&row.label),
            date: row.date.as_deref(),
            source: row.source.as_deref(),
            source_type: row.source_type,
            decision_weight: row.decision_weight,
            provenance_weight: row.provenance_weight,
            evidence_weight: row.evidence_weight,
            edit_distance: row.edit_distance,
            bucket: row.bucket,
            trust_violation: row.trust_violation,
            receipt_id: row.receipt_id.as_deref(),
            recorded_at: row.recorded_at.as_deref(),
        }
    }

    /// What the row counts as (its fields but the receipt id and time, borrowed).
    fn key(&'a self) -> RowKey<'a> {
        RowKey {
            action_class: &self.action_class,
            label: &self.label,
            date: self.date,
            source: self.source,
            source_type: self.source_type,
            weights: [self.decision_weight.to_bits(), self.provenance_weight.to_bits(), self.evidence_weight.to_bits()],
            edit_distance: self.edit_distance.map(f64::to_bits),
            bucket: self.bucket,
            trust_violation: self.trust_violation,
        }
    }
}

/// The texts a [`PackedRow`] holds, in the order they are packed.
const CLASS: usize = 0;
const LABEL: usize = 1;
const DATE: usize = 2;
const SOURCE: usize = 3;
const RECEIPT_ID: usize = 4;
const RECORDED_AT: usize = 5;
const EXTRA: usize = 6;

/// An evidence row with its texts in one allocation: what a verifier's worker makes of a
/// receipt and hands to the thread that folds the chain (an [`EvidenceRow`] is six strings, each
/// allocated on the worker and freed on the other thread), and what [`ChainEvidence`] keeps of
/// each recent row. [`PackedRow::to_row`] is the row; [`PackedRow::extra`] is one more text the
/// packer kept beside it (a receipt's `content_hash`:
/// [`crate::graduation::receipt::receipt_evidence_packed`]).
#[derive(Debug, Clone, PartialEq)]
pub struct PackedRow {
    /// The class, label, date, source, receipt id, recorded-at and extra texts, one after another.
    text: Box<str>,
    /// Where each text ends in `text` (it starts where the one before ends).
    ends: [u32; 7],
    /// Bit `k` set: text `k` is present (the class and label always are).
    present: u8,
    source_type: Option<SourceType>,
    decision_weight: f64,
    provenance_weight: f64,
    evidence_weight: f64,
    edit_distance: Option<f64>,
    bucket: Bucket,
    trust_violation: bool,
}

impl PackedRow {
    /// Packs a row read ([`RowRead`]) and an `extra` text. `None` when the texts are longer than
    /// 4 GiB together (no chain line is).
    pub(crate) fn of_read(row: &RowRead<'_>, extra: Option<&str>) -> Option<Self> {
        let texts =
            [Some(&*row.action_class), Some(&*row.label), row.date, row.source, row.receipt_id, row.recorded_at, extra];
        let mut text = String::with_capacity(texts.iter().flatten().map(|t| t.len()).sum());
        let (mut ends, mut present) = ([0u32; 7], 0u8);
        for (k, t) in texts.iter().enumerate() {
            if let Some(t) = t {
                text.push_str(t);
                present |= 1 << k;
            }
            ends[k] = u32::try_from(text.len()).ok()?;
        }
        Some(Self {
            text: text.into_boxed_str(),
            ends,
            present,
            source_type: row.source_type,
            decision_weight: row.decision_weight,
            provenance_weight: row.provenance_weight,
            evidence_weight: row.evidence_weight,
            edit_distance: row.edit_distance,
            bucket: row.bucket,
            trust_violation: row.trust_violation,
        })
    }

    /// Packs `row` (no extra text). `None` when its texts are longer than 4 GiB together.
    #[must_use]
    pub fn of_row(row: &EvidenceRow) -> Option<Self> {
        Self::of_read(&RowRead::of_row(row), None)
    }

    /// Text `k`, when present.
    fn text(&self, k: usize) -> Option<&str> {
        let start = if k == 0 { 0 } else { self.ends[k - 1] as usize };
        (self.present & (1 << k) != 0).then(|| self.text.get(start..self.ends[k] as usize)).flatten()
    }

    /// The action class (normalized, as the row was read).
    #[must_use]
    pub fn action_class(&self) -> &str {
        self.text(CLASS).unwrap_or_default()
    }

    /// The extra text packed beside the row.
    #[must_use]
    pub fn extra(&self) -> Option<&str> {
        self.text(EXTRA)
    }

    /// The row's fields, its texts borrowed.
    fn read(&self) -> RowRead<'_> {
        RowRead {
            action_class: std::borrow::Cow::Borrowed(self.action_class()),
            label: std::borrow::Cow::Borrowed(self.text(LABEL).unwrap_or_default()),
            date: self.text(DATE),
            source: self.text(SOURCE),
            source_type: self.source_type,
            decision_weight: self.decision_weight,
            provenance_weight: self.provenance_weight,
            evidence_weight: self.evidence_weight,
            edit_distance: self.edit_distance,
            bucket: self.bucket,
            trust_violation: self.trust_violation,
            receipt_id: self.text(RECEIPT_ID),
            recorded_at: self.text(RECORDED_AT),
        }
    }

    /// The row, owning its texts.
    #[must_use]
    pub fn to_row(&self) -> EvidenceRow {
        self.read().into_row()
    }
}

/// Evidence rows in chain order, stored as distinct rows with counts plus the most recent rows
/// of each class (see the module docs). Summing over [`ChainEvidence::rows`] gives what summing
/// over the rows one by one gives; the order of the repeated rows is that of their first
/// appearance.
#[derive(Debug, Clone, Default)]
pub struct ChainEvidence {
    /// Distinct rows with how many times each occurs (0 once removed).
    runs: Vec<(EvidenceRow, u64)>,
    /// Positions in `runs`, by the hash of their [`RowKey`].
    at: hashbrown::HashTable<usize>,
    hasher: foldhash::fast::RandomState,
    /// The last [`RECENT_ROWS`] rows of each class, with their record index (`usize::MAX` when
    /// unknown).
    recent: HashMap<String, VecDeque<(usize, PackedRow)>, foldhash::fast::RandomState>,
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
        let pos = self.count_run(RowRead::of_row(&row).key(), 1, || row.clone());
        if let Some(packed) = PackedRow::of_row(&row) {
            self.keep_recent(index, packed);
        }
        pos
    }

    /// [`ChainEvidence::push_at`] of a packed row: the row is copied into an [`EvidenceRow`]
    /// only when it is the first of its run.
    pub fn push_packed(&mut self, index: usize, row: PackedRow) -> usize {
        let pos = self.count_run(row.read().key(), 1, || row.to_row());
        self.keep_recent(index, row);
        pos
    }

    /// Keeps `row` among its class's recent rows, the oldest dropped beyond [`RECENT_ROWS`].
    fn keep_recent(&mut self, index: usize, row: PackedRow) {
        let recent = match self.recent.get_mut(row.action_class()) {
            Some(recent) => recent,
            None => self.recent.entry(row.action_class().to_owned()).or_default(),
        };
        if recent.len() == RECENT_ROWS {
            recent.pop_front();
        }
        recent.push_back((index, row));
    }

    /// Adds `n` rows equal to `row` whose record indexes are not known (a run of a stored
    /// [`ChainEvidence::runs`]). The run joins no class's recent rows: those are the rows the
    /// chain's records were read for.
    pub fn push_run(&mut self, row: EvidenceRow, n: u64) {
        if n > 0 {
            self.count_run(RowRead::of_row(&row).key(), n, || row.clone());
        }
    }

    /// Counts `n` rows whose key is `key`, storing the row (`owned`) when it is new; returns the
    /// position of its distinct row.
    fn count_run(&mut self, key: RowKey<'_>, n: u64, owned: impl FnOnce() -> EvidenceRow) -> usize {
        let class = key.action_class;
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
        let hash = std::hash::BuildHasher::hash_one(&self.hasher, key);
        let runs = &self.runs;
        if let Some(&p) = self.at.find(hash, |&p| RowRead::of_row(&runs[p].0).key() == key) {
            self.runs[p].1 += n;
            return p;
        }
        self.runs.push((owned(), n));
        let p = self.runs.len() - 1;
        let (runs, hasher) = (&self.runs, &self.hasher);
        self.at
            .insert_unique(hash, p, |&q| std::hash::BuildHasher::hash_one(hasher, RowRead::of_row(&runs[q].0).key()));
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
        self.at.reserve(additional, |&q| std::hash::BuildHasher::hash_one(hasher, RowRead::of_row(&runs[q].0).key()));
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

    /// The last [`RECENT_ROWS`] rows of a class, in chain order (each copied out of its packed
    /// form: a few hundred rows, for display).
    pub fn recent(&self, class: &str) -> impl Iterator<Item = EvidenceRow> + '_ {
        self.recent.get(class).into_iter().flat_map(|d| d.iter().map(|(_, r)| r.to_row()))
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

    /// Any row: texts present or not (empty, non-ASCII), any source type, weights of any bits.
    fn any_row() -> impl proptest::strategy::Strategy<Value = EvidenceRow> {
        use proptest::prelude::*;
        let text =
            || proptest::option::of(proptest::sample::select(vec!["", "a", "2026-11-01", "é🙂", "chain", "r-1"]));
        let weight = || prop_oneof![Just(1.0), Just(-0.5), Just(0.0), Just(-0.0), any::<f64>()];
        (
            (
                proptest::sample::select(vec!["email.send", "git.push", "draft.compose"]),
                text(),
                text(),
                text(),
                text(),
                text(),
            ),
            (
                proptest::option::of(proptest::sample::select(vec![
                    SourceType::Principal,
                    SourceType::Receipt,
                    SourceType::ModelInferred,
                ])),
                weight(),
                weight(),
                weight(),
                proptest::option::of(weight()),
                proptest::sample::select(vec![Bucket::Approval, Bucket::Edit, Bucket::Rejection]),
                any::<bool>(),
            ),
        )
            .prop_map(
                |((class, label, date, source, receipt_id, recorded_at), (st, d, p, e, ed, bucket, tv))| {
                    let mut row = EvidenceRow::new(class, label.unwrap_or("approved"), st, date.map(str::to_owned));
                    row.source = source.map(str::to_owned);
                    row.receipt_id = receipt_id.map(str::to_owned);
                    row.recorded_at = recorded_at.map(str::to_owned);
                    (row.decision_weight, row.provenance_weight, row.evidence_weight, row.edit_distance) =
                        (d, p, e, ed);
                    (row.bucket, row.trust_violation) = (bucket, tv);
                    row
                },
            )
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        // A packed row is the row it was packed from, field for field (weights by their bits),
        // and pushing rows packed gives the evidence pushing them whole gives: the same runs,
        // counts and recent rows (the last RECENT_ROWS of a class, past which the oldest go), and
        // the same run positions to take a row back by.
        #[test]
        fn packed_rows_are_the_rows_and_count_as_them(rows in proptest::collection::vec(any_row(), 0..700)) {
            let (mut whole, mut packed) = (ChainEvidence::default(), ChainEvidence::default());
            for (i, row) in rows.iter().enumerate() {
                let p = PackedRow::of_row(row).expect("a short row packs");
                proptest::prop_assert_eq!(format!("{:?}", p.to_row()), format!("{row:?}"));
                proptest::prop_assert_eq!(p.action_class(), row.action_class.as_str());
                proptest::prop_assert_eq!(p.extra(), None);
                proptest::prop_assert_eq!(whole.push_at(i, row.clone()), packed.push_packed(i, p));
            }
            proptest::prop_assert!(whole.same_rows(&packed));
            let runs = |e: &ChainEvidence| format!("{:?}", e.runs().collect::<Vec<_>>());
            proptest::prop_assert_eq!(runs(&whole), runs(&packed));
            for class in ["email.send", "git.push", "draft.compose"] {
                let recent = |e: &ChainEvidence| format!("{:?}", e.recent(class).collect::<Vec<_>>());
                proptest::prop_assert_eq!(recent(&whole), recent(&packed));
                let expected: Vec<&EvidenceRow> = rows.iter().filter(|r| r.action_class == class).collect();
                let skip = expected.len().saturating_sub(RECENT_ROWS);
                proptest::prop_assert_eq!(recent(&whole), format!("{:?}", expected[skip..].iter().map(|r| (*r).clone()).collect::<Vec<_>>()));
                proptest::prop_assert_eq!(whole.count(class), expected.len());
            }
        }
    }
}
