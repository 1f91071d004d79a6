//! Evidence rows with provenance (`trust-graduation.md` §4): label normalization, decision
//! weights (§4.1), provenance weights (§4.2), their composition (§4.3) and the reference
//! runtime's count-based evidence summary and tier (§4.4).
//!
//! Where the reference runtime mis-weights evidence, warrant follows the spec
//! (`docs/conformance.md`, "Evidence weights"):
//! - `dropped` weighs −1.00 (the spec table), not 0;
//! - `refused` and `outcome_negative` are negative, not +1 (the reference's `used` and `outcome`
//!   regexes match them first); negative patterns are tried before positive ones for any label
//!   outside the table;
//! - a missing or unknown `source_type` weighs 0.10 (as `model_inferred`), not 1.0, and a
//!   model-inferred row is never upgraded by explicit weights;
//! - a row must name its action class; class-less rows are refused, not counted for every class;
//! - the receipt outcomes approve, refuse, correct and execute are normalized to the labels
//!   `approved`, `rejected`, `edited` and `sent` before weighting.

use serde_json::{Map, Value, json};
use std::fmt;

/// Where a row of evidence comes from (§4.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceType {
    /// A system receipt (weight 1.00).
    Receipt,
    /// The principal, directly (1.00).
    Principal,
    /// A connector or integration (0.30).
    Connector,
    /// Inferred by a model (0.10; never upgraded).
    ModelInferred,
}

impl SourceType {
    /// All four, in the spec's order.
    pub const ALL: [SourceType; 4] =
        [SourceType::Receipt, SourceType::Principal, SourceType::Connector, SourceType::ModelInferred];

    /// The wire spelling.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            SourceType::Receipt => "receipt",
            SourceType::Principal => "principal",
            SourceType::Connector => "connector",
            SourceType::ModelInferred => "model_inferred",
        }
    }

    /// Parses the wire spelling.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == s)
    }

    /// The provenance weight of the spec table (§4.2), in [0, 1].
    #[must_use]
    pub fn weight(self) -> f64 {
        match self {
            SourceType::Receipt | SourceType::Principal => 1.0,
            SourceType::Connector => 0.3,
            SourceType::ModelInferred => 0.1,
        }
    }
}

impl fmt::Display for SourceType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Provenance weight of a row with no (or an unknown) `source_type`: the weight of
/// `model_inferred`, so that evidence of unknown origin can never count for more than evidence a
/// model inferred. (The reference runtime uses 1.0.)
pub const UNKNOWN_PROVENANCE_WEIGHT: f64 = 0.1;

/// How the reference runtime's summary counts a row (§4.4), with warrant's fixes for labels the
/// reference misfiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bucket {
    /// approvals + positive + decisions.
    Approval,
    /// edits + positive + decisions.
    Edit,
    /// rejections + negative + decisions.
    Rejection,
    /// held + decisions.
    Held,
    /// trust issues + negative.
    TrustIssue,
    /// rollbacks + negative.
    Rollback,
    /// receipts + positive.
    Receipt,
    /// outcomes + positive.
    Outcome,
    /// outcomes + negative (warrant: `outcome_negative`, which the reference counts positive).
    NegativeOutcome,
    /// Not counted (weights still apply).
    Uncounted,
}

/// A label after normalization: the canonical spelling, its decision weight (§4.1), its summary
/// bucket, and whether it is a trust violation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LabelInfo {
    /// The decision weight in [−1, 1].
    pub weight: f64,
    /// The summary bucket.
    pub bucket: Bucket,
    /// True when the label names a trust violation (forces review; §5.3 `trust_violation_recent`).
    pub trust_violation: bool,
}

/// Labels with fixed weights: the spec's eight, the reference runtime's extras, and the labels
/// warrant normalizes (receipt outcomes and the misfiled negatives).
const LABELS: [(&str, &str, f64, Bucket); 33] = [
    // (label, canonical label, weight, bucket)
    ("sent", "sent", 1.0, Bucket::Approval),
    ("approved", "approved", 0.85, Bucket::Approval),
    ("minor_edit", "minor_edit", 0.35, Bucket::Edit),
    ("edited", "edited", -0.15, Bucket::Edit),
    ("heavy_rewrite", "heavy_rewrite", -0.55, Bucket::Uncounted),
    ("held", "held", 0.0, Bucket::Held),
    ("rejected", "rejected", -1.0, Bucket::Rejection),
    ("dropped", "dropped", -1.0, Bucket::Rejection),
    ("executed", "executed", 1.0, Bucket::Uncounted),
    ("sent_with_receipt", "sent_with_receipt", 1.0, Bucket::Approval),
    ("used", "used", 0.85, Bucket::Approval),
    ("edited_and_accepted", "edited_and_accepted", 0.35, Bucket::Edit),
    ("overrode", "overrode", -1.0, Bucket::Rejection),
    ("rollback", "rollback", -1.0, Bucket::Rollback),
    ("trust_issue", "trust_issue", -1.0, Bucket::TrustIssue),
    ("hallucination", "hallucination", -1.0, Bucket::TrustIssue),
    ("receipt_logged", "receipt_logged", 1.0, Bucket::Receipt),
    ("outcome_positive", "outcome_positive", 1.0, Bucket::Outcome),
    ("outcome_negative", "outcome_negative", -1.0, Bucket::NegativeOutcome),
    ("policy_exception", "policy_exception", 0.0, Bucket::Uncounted),
    ("refused", "rejected", -1.0, Bucket::Rejection),
    // Receipt outcomes (§4.1 "proposed mapping") and their nouns.
    ("approve", "approved", 0.85, Bucket::Approval),
    ("approval", "approved", 0.85, Bucket::Approval),
    ("refuse", "rejected", -1.0, Bucket::Rejection),
    ("refusal", "rejected", -1.0, Bucket::Rejection),
    ("correct", "edited", -0.15, Bucket::Edit),
    ("correction", "edited", -0.15, Bucket::Edit),
    ("corrected", "edited", -0.15, Bucket::Edit),
    ("execute", "sent", 1.0, Bucket::Approval),
    ("execution", "sent", 1.0, Bucket::Approval),
    ("hold", "held", 0.0, Bucket::Held),
    ("reject", "rejected", -1.0, Bucket::Rejection),
    ("rejection", "rejected", -1.0, Bucket::Rejection),
];

/// Substrings that make a label a trust violation (the unpublished "§6.1 regex", warrant's
/// choice): trust issues and violations, safety incidents, leaks, exposed private data and
/// hallucinations.
const TRUST_VIOLATION: [&str; 7] =
    ["trust_issue", "trust_violation", "safety_incident", "leak", "exposed", "private_data", "hallucination"];

/// Normalizes a label: trimmed, lower-case, spaces, dots and hyphens as `_`; receipt outcomes and
/// misfiled negatives mapped to the canonical label (`refused` → `rejected`, `execute` → `sent`).
#[must_use]
pub fn normalize_label(label: &str) -> String {
    normalized_label(label).0.into_owned()
}

/// [`normalize_label`] and [`label_info`] of the result in one step, borrowing the label (from
/// `label` or the table) when no character changes: what a row read off the wire costs no
/// allocation for.
fn normalized_label(label: &str) -> (std::borrow::Cow<'_, str>, LabelInfo) {
    use std::borrow::Cow;
    // A label already made of `[a-z0-9_]` is its own normal form: skip the per-character pass.
    let lower: Cow<'_, str> = if label.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_') {
        Cow::Borrowed(label)
    } else {
        label.trim().chars().map(|c| if matches!(c, ' ' | '-' | '.') { '_' } else { c.to_ascii_lowercase() }).collect()
    };
    match LABELS.iter().find(|(l, ..)| *l == lower) {
        // A table label's canonical spelling is in the table too, and the only ones holding a
        // trust-violation word are the trust issues (`table_labels_are_trust_violations_exactly_when_trust_issues`).
        Some((_, canonical, weight, bucket)) => (
            Cow::Borrowed(*canonical),
            LabelInfo { weight: *weight, bucket: *bucket, trust_violation: *bucket == Bucket::TrustIssue },
        ),
        None => {
            let info = label_info(&lower);
            (lower, info)
        }
    }
}

/// Weight, bucket and trust-violation flag of a normalized label. Labels outside the table are
/// matched by pattern as the reference runtime does, **negative patterns first**: reject,
/// refus, overrode, override, rollback, trust, complaint, hallucination, repair, drop, negative,
/// fail, leak → −1; then edit → −0.15; hold → 0; approve, sent, used, outcome, advanced, success,
/// receipt → +1; anything else → 0.
#[must_use]
pub fn label_info(label: &str) -> LabelInfo {
    let trust_violation = TRUST_VIOLATION.iter().any(|t| label.contains(t));
    if let Some((_, _, weight, bucket)) = LABELS.iter().find(|(l, ..)| *l == label) {
        return LabelInfo { weight: *weight, bucket: *bucket, trust_violation };
    }
    let has = |words: &[&str]| words.iter().any(|w| label.contains(w));
    let (weight, bucket) = if trust_violation || has(&["trust", "complaint", "hallucination"]) {
        (-1.0, Bucket::TrustIssue)
    } else if has(&["rollback", "repair"]) {
        (-1.0, Bucket::Rollback)
    } else if has(&["reject", "refus", "overrode", "override", "drop", "negative", "fail"]) {
        (-1.0, Bucket::Rejection)
    } else if label.contains("edit") {
        (-0.15, Bucket::Edit)
    } else if label.contains("hold") {
        (0.0, Bucket::Held)
    } else if has(&["approve", "sent", "used"]) {
        (1.0, Bucket::Approval)
    } else if label.contains("receipt") {
        (1.0, Bucket::Receipt)
    } else if has(&["outcome", "advanced", "success"]) {
        (1.0, Bucket::Outcome)
    } else {
        (0.0, Bucket::Uncounted)
    };
    LabelInfo { weight, bucket, trust_violation: trust_violation || bucket == Bucket::TrustIssue }
}

/// Rounds to 4 decimals, as the reference's `toFixed(4)` does for the product.
fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

/// One evidence row, normalized and weighted (`evidence-row.schema.json`). Serialized with
/// serde under its field names (the weights exactly: JSON numbers round-trip an `f64`), as the
/// agents' snapshot of a checkpointed prefix stores it; rows read from trackers go through
/// [`EvidenceRow::from_json`]'s checks instead.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct EvidenceRow {
    /// The canonical action class (aliases resolved with [`crate::registry::normalize`]).
    pub action_class: String,
    /// The normalized label ([`normalize_label`]).
    pub label: String,
    /// The event date, `YYYY-MM-DD`, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
    /// The tracker or system that produced the row (`source`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The provenance type; `None` when missing or unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_type: Option<SourceType>,
    /// Decision weight in [−1, 1].
    pub decision_weight: f64,
    /// Provenance weight in [0, 1].
    pub provenance_weight: f64,
    /// Evidence weight in [−1, 1]: decision × provenance rounded to 4 decimals, or the row's own
    /// (clamped, and capped for model-inferred rows).
    pub evidence_weight: f64,
    /// Edit distance (0 = unchanged), when the row gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edit_distance: Option<f64>,
    /// The summary bucket of the label.
    pub bucket: Bucket,
    /// True when the label is a trust violation.
    pub trust_violation: bool,
    /// The receipt the row comes from, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt_id: Option<String>,
    /// When the row was recorded (RFC 3339), if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded_at: Option<String>,
}

/// Why a JSON evidence row was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvidenceError {
    /// Not an object.
    #[error("an evidence row must be a JSON object")]
    NotObject,
    /// A required field is missing.
    #[error("evidence row has no `{0}`")]
    Missing(&'static str),
    /// A field has the wrong type or an invalid value.
    #[error("evidence row `{field}`: {message}")]
    Invalid {
        /// The field.
        field: &'static str,
        /// What is wrong.
        message: String,
    },
}

/// A member of a row as the parser sees it: a string, a number (as `f64`), or anything else.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Field<'v> {
    /// A string.
    Str(&'v str),
    /// A number, as `Value::as_f64` reads it.
    Num(f64),
    /// A boolean, array or object.
    Other,
}

/// Where a row's members come from: a parsed JSON object, or members read straight off the
/// wire (`warrant eval`). Members are named by their slot in [`ROW_KEY_NAMES`]; `slot` is `None`
/// for a missing or `null` member.
pub(crate) trait RowSource {
    /// The member named `ROW_KEY_NAMES[i]`, unless missing or `null`.
    fn slot(&self, i: usize) -> Option<Field<'_>>;
}

impl RowSource for Map<String, Value> {
    fn slot(&self, i: usize) -> Option<Field<'_>> {
        self.get(ROW_KEY_NAMES[i]).and_then(|v| match v {
            Value::Null => None,
            Value::String(s) => Some(Field::Str(s)),
            Value::Number(n) => Some(Field::Num(n.as_f64().unwrap_or(f64::NAN))),
            _ => Some(Field::Other),
        })
    }
}

/// The first of the members in `slots` present with a non-null value.
fn first<S: RowSource + ?Sized>(m: &S, slots: std::ops::Range<usize>) -> Option<Field<'_>> {
    slots.into_iter().find_map(|i| m.slot(i))
}

fn str_field<'a, S: RowSource + ?Sized>(
    m: &'a S,
    slots: std::ops::Range<usize>,
    field: &'static str,
) -> Result<Option<&'a str>, EvidenceError> {
    match first(m, slots) {
        None => Ok(None),
        Some(Field::Str(s)) => Ok(Some(s)),
        Some(_) => Err(EvidenceError::Invalid { field, message: "must be a string".into() }),
    }
}

fn num_field<S: RowSource + ?Sized>(
    m: &S,
    slots: std::ops::Range<usize>,
    field: &'static str,
) -> Result<Option<f64>, EvidenceError> {
    match first(m, slots) {
        None => Ok(None),
        Some(Field::Num(x)) if x.is_finite() => Ok(Some(x)),
        Some(_) => Err(EvidenceError::Invalid { field, message: "must be a finite number".into() }),
    }
}

/// True for a valid `YYYY-MM-DD` calendar date.
pub fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter().enumerate().all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
        && {
            // Four, two and two ASCII digits: a real calendar date (what `[year]-[month]-[day]`
            // parses), checked without a format description.
            let n = |r: std::ops::Range<usize>| b[r].iter().fold(0u16, |a, d| a * 10 + u16::from(d - b'0'));
            let (year, month, day) = (n(0..4), n(5..7), n(8..10));
            u8::try_from(month).ok().and_then(|m| time::Month::try_from(m).ok()).is_some_and(|m| {
                u8::try_from(day).is_ok_and(|d| time::Date::from_calendar_date(i32::from(year), m, d).is_ok())
            })
        }
}

/// A row read and weighted ([`read_row`]), its strings borrowed from where they were read (or
/// from the tables) whenever no character of them changes: [`RowRead::into_row`] owns them as
/// an [`EvidenceRow`], [`EvidenceIndex::add_read`] counts it without.
pub(crate) struct RowRead<'a> {
    pub(crate) action_class: std::borrow::Cow<'a, str>,
    pub(crate) label: std::borrow::Cow<'a, str>,
    pub(crate) date: Option<&'a str>,
    pub(crate) source: Option<&'a str>,
    pub(crate) source_type: Option<SourceType>,
    pub(crate) decision_weight: f64,
    pub(crate) provenance_weight: f64,
    pub(crate) evidence_weight: f64,
    pub(crate) edit_distance: Option<f64>,
    pub(crate) bucket: Bucket,
    pub(crate) trust_violation: bool,
    pub(crate) receipt_id: Option<&'a str>,
    pub(crate) recorded_at: Option<&'a str>,
}

impl<'a> RowRead<'a> {
    /// A row of a label and a source type, weighted by the tables, of a class already
    /// normalized (what [`EvidenceRow::new`] makes, borrowing).
    pub(crate) fn new(
        action_class: std::borrow::Cow<'a, str>,
        label: &'a str,
        source_type: Option<SourceType>,
        date: Option<&'a str>,
    ) -> Self {
        let (label, info) = normalized_label(label);
        let provenance = source_type.map_or(UNKNOWN_PROVENANCE_WEIGHT, SourceType::weight);
        RowRead {
            action_class,
            label,
            date,
            source: None,
            source_type,
            decision_weight: info.weight,
            provenance_weight: provenance,
            evidence_weight: round4(info.weight * provenance),
            edit_distance: None,
            bucket: info.bucket,
            trust_violation: info.trust_violation,
            receipt_id: None,
            recorded_at: None,
        }
    }

    /// The row, owning its strings.
    pub(crate) fn into_row(self) -> EvidenceRow {
        EvidenceRow {
            action_class: self.action_class.into_owned(),
            label: self.label.into_owned(),
            date: self.date.map(str::to_owned),
            source: self.source.map(str::to_owned),
            source_type: self.source_type,
            decision_weight: self.decision_weight,
            provenance_weight: self.provenance_weight,
            evidence_weight: self.evidence_weight,
            edit_distance: self.edit_distance,
            bucket: self.bucket,
            trust_violation: self.trust_violation,
            receipt_id: self.receipt_id.map(str::to_owned),
            recorded_at: self.recorded_at.map(str::to_owned),
        }
    }
}

/// Reads and weights one row ([`EvidenceRow::from_json`] says how): the one definition of it,
/// whether the row is a parsed object or members read off the wire.
fn read_row<S: RowSource + ?Sized>(m: &S) -> Result<RowRead<'_>, EvidenceError> {
    use slots::*;
    let class = str_field(m, ACTION_CLASS, "action_class")?.ok_or(EvidenceError::Missing("action_class"))?;
    let action_class = crate::registry::normalize_cow(class);
    if !crate::packet::is_class_id(&action_class) {
        return Err(EvidenceError::Invalid {
            field: "action_class",
            message: format!("{class:?} is not an action class"),
        });
    }
    let label = str_field(m, LABEL, "label")?.ok_or(EvidenceError::Missing("label"))?;
    let source_type = str_field(m, SOURCE_TYPE, "source_type")?.and_then(|s| SourceType::parse(s.trim()));
    let date = match str_field(m, DATE, "date")? {
        Some(d) if is_date(d) => Some(d),
        Some(d) => return Err(EvidenceError::Invalid { field: "date", message: format!("{d:?} is not YYYY-MM-DD") }),
        None => None,
    };
    let recorded_at = str_field(m, RECORDED_AT, "recorded_at")?;
    if let Some(r) = recorded_at
        && crate::clock::parse_rfc3339(r).is_none()
    {
        return Err(EvidenceError::Invalid {
            field: "recorded_at",
            message: format!("{r:?} is not an RFC 3339 date-time"),
        });
    }
    let edit_distance = num_field(m, EDIT_DISTANCE, "edit_distance")?;
    if let Some(e) = edit_distance
        && e < 0.0
    {
        return Err(EvidenceError::Invalid { field: "edit_distance", message: "must be >= 0".into() });
    }
    let (label, info) = normalized_label(label);
    let cap = match source_type {
        None | Some(SourceType::ModelInferred) => UNKNOWN_PROVENANCE_WEIGHT,
        Some(_) => 1.0,
    };
    let decision_weight = num_field(m, DECISION_WEIGHT, "decision_weight")?.map_or(info.weight, |d| d.clamp(-1.0, 1.0));
    let provenance_weight = num_field(m, PROVENANCE_WEIGHT, "provenance_weight")?
        .map_or(source_type.map_or(UNKNOWN_PROVENANCE_WEIGHT, SourceType::weight), |p| p.clamp(0.0, cap));
    let evidence_weight = match num_field(m, EVIDENCE_WEIGHT, "evidence_weight")? {
        Some(e) => e.clamp(-cap, cap),
        None => round4(decision_weight * provenance_weight),
    };
    Ok(RowRead {
        action_class,
        label,
        date: date.or_else(|| recorded_at.and_then(|r| r.get(..10)).filter(|d| is_date(d))),
        source: str_field(m, SOURCE, "source")?,
        source_type,
        decision_weight,
        provenance_weight,
        evidence_weight,
        edit_distance,
        bucket: info.bucket,
        trust_violation: info.trust_violation,
        receipt_id: str_field(m, RECEIPT_ID, "receipt_id")?,
        recorded_at,
    })
}

impl EvidenceRow {
    /// Builds a row from a label and a source type, with the weights of the tables.
    #[must_use]
    pub fn new(action_class: &str, label: &str, source_type: Option<SourceType>, date: Option<String>) -> Self {
        let mut row = RowRead::new(crate::registry::normalize_cow(action_class), label, source_type, None).into_row();
        row.date = date;
        row
    }

    /// Parses a row in the portable snake_case form or the reference runtime's camelCase form
    /// (`actionClass`, `type`/`eventType`, `sourceType`/`provenanceType`, `decisionWeight`, …),
    /// and weights it (§4.3): explicit weights are clamped (decision and evidence to [−1, 1],
    /// provenance to [0, 1]); a missing evidence weight is decision × provenance rounded to 4
    /// decimals. For rows whose provenance is `model_inferred` or unknown, explicit provenance
    /// and evidence weights are capped at 0.10 in magnitude (never upgraded).
    ///
    /// # Errors
    /// [`EvidenceError`] when the row is not an object, has no action class or label, or has a
    /// field of the wrong type (non-finite numbers, a malformed `date`).
    pub fn from_json(v: &Value) -> Result<Self, EvidenceError> {
        let Value::Object(m) = v else { return Err(EvidenceError::NotObject) };
        Self::from_source(m)
    }

    /// [`EvidenceRow::from_json`] over any source of members (the one definition of how a row
    /// is read and weighted).
    pub(crate) fn from_source<S: RowSource + ?Sized>(m: &S) -> Result<Self, EvidenceError> {
        read_row(m).map(RowRead::into_row)
    }

    /// The row as a portable v0.1 evidence row (`evidence-row.schema.json`). `date` is required
    /// by the schema: `default_date` (`YYYY-MM-DD`) is used when the row has none.
    #[must_use]
    pub fn to_json(&self, default_date: &str) -> Value {
        let mut m = Map::new();
        m.insert("action_class".into(), json!(self.action_class));
        m.insert("label".into(), json!(self.label));
        m.insert("date".into(), json!(self.date.as_deref().unwrap_or(default_date)));
        if let Some(s) = &self.source {
            m.insert("source".into(), json!(s));
        }
        if let Some(t) = self.source_type {
            m.insert("source_type".into(), json!(t.as_str()));
        }
        m.insert("decision_weight".into(), json!(self.decision_weight));
        m.insert("provenance_weight".into(), json!(self.provenance_weight));
        m.insert("evidence_weight".into(), json!(self.evidence_weight));
        if let Some(r) = &self.receipt_id {
            m.insert("receipt_id".into(), json!(r));
        }
        if let Some(r) = &self.recorded_at {
            m.insert("recorded_at".into(), json!(r));
        }
        if let Some(e) = self.edit_distance {
            m.insert("metadata".into(), json!({"edit_distance": e}));
        }
        Value::Object(m)
    }
}

/// Parses a JSON array of rows.
///
/// # Errors
/// The first row that fails, with its index.
pub fn rows_from_json(v: &Value) -> Result<Vec<EvidenceRow>, (usize, EvidenceError)> {
    match v {
        Value::Null => Ok(Vec::new()),
        Value::Array(items) => {
            items.iter().enumerate().map(|(i, r)| EvidenceRow::from_json(r).map_err(|e| (i, e))).collect()
        }
        _ => Err((0, EvidenceError::Invalid { field: "evidence", message: "must be an array of rows".into() })),
    }
}

/// The members [`EvidenceRow::from_json`] reads, each with its own slot (its index here; the
/// aliases of one field are neighbours, in the order they are tried: [`slots`]).
const ROW_KEY_NAMES: [&str; 29] = [
    "action_class",
    "actionClass",
    "label",
    "type",
    "eventType",
    "event_type",
    "decision",
    "source_type",
    "sourceType",
    "provenance_type",
    "provenanceType",
    "date",
    "recorded_at",
    "recordedAt",
    "createdAt",
    "created_at",
    "edit_distance",
    "editDistance",
    "decision_weight",
    "decisionWeight",
    "provenance_weight",
    "provenanceWeight",
    "evidence_weight",
    "evidenceWeight",
    "source",
    "evidenceSource",
    "evidence_source",
    "receipt_id",
    "receiptId",
];

/// How many members a row is read from ([`ROW_KEY_NAMES`]).
const ROW_KEYS: usize = ROW_KEY_NAMES.len();

/// Each field's slots in [`ROW_KEY_NAMES`], its aliases in the order they are tried.
mod slots {
    use std::ops::Range;
    pub(super) const ACTION_CLASS: Range<usize> = 0..2;
    pub(super) const LABEL: Range<usize> = 2..7;
    pub(super) const SOURCE_TYPE: Range<usize> = 7..11;
    pub(super) const DATE: Range<usize> = 11..12;
    pub(super) const RECORDED_AT: Range<usize> = 12..16;
    pub(super) const EDIT_DISTANCE: Range<usize> = 16..18;
    pub(super) const DECISION_WEIGHT: Range<usize> = 18..20;
    pub(super) const PROVENANCE_WEIGHT: Range<usize> = 20..22;
    pub(super) const EVIDENCE_WEIGHT: Range<usize> = 22..24;
    pub(super) const SOURCE: Range<usize> = 24..27;
    pub(super) const RECEIPT_ID: Range<usize> = 27..29;
}

/// The slot of a member's name in [`ROW_KEY_NAMES`], if a row reads it.
fn row_key(key: &str) -> Option<usize> {
    Some(match key {
        "action_class" => 0,
        "actionClass" => 1,
        "label" => 2,
        "type" => 3,
        "eventType" => 4,
        "event_type" => 5,
        "decision" => 6,
        "source_type" => 7,
        "sourceType" => 8,
        "provenance_type" => 9,
        "provenanceType" => 10,
        "date" => 11,
        "recorded_at" => 12,
        "recordedAt" => 13,
        "createdAt" => 14,
        "created_at" => 15,
        "edit_distance" => 16,
        "editDistance" => 17,
        "decision_weight" => 18,
        "decisionWeight" => 19,
        "provenance_weight" => 20,
        "provenanceWeight" => 21,
        "evidence_weight" => 22,
        "evidenceWeight" => 23,
        "source" => 24,
        "evidenceSource" => 25,
        "evidence_source" => 26,
        "receipt_id" => 27,
        "receiptId" => 28,
        _ => return None,
    })
}

/// One member of a row read off the wire (plain data: a row of them costs no drop).
#[derive(Clone, Copy, Default)]
enum Slot<'de> {
    /// Missing or `null`.
    #[default]
    Missing,
    /// A string without escapes, borrowed from the text.
    Str(&'de str),
    /// A string with escapes: its index in [`WireRow::escaped`].
    Escaped(usize),
    Num(f64),
    Other,
}

/// A row's members read straight from JSON text, strictly (a duplicate key anywhere is an
/// error, as in [`crate::canonical::parse_strict`]), without building a `Value`.
#[derive(Default)]
struct WireRow<'de> {
    slots: [Slot<'de>; ROW_KEYS],
    /// The strings that had escapes, unescaped (most rows have none: no allocation).
    escaped: Vec<String>,
}

impl RowSource for WireRow<'_> {
    fn slot(&self, i: usize) -> Option<Field<'_>> {
        match self.slots[i] {
            Slot::Missing => None,
            Slot::Str(s) => Some(Field::Str(s)),
            Slot::Escaped(k) => Some(Field::Str(&self.escaped[k])),
            Slot::Num(x) => Some(Field::Num(x)),
            Slot::Other => Some(Field::Other),
        }
    }
}

/// A member's value as read: a string (borrowed when it has no escapes), a number, or anything
/// else.
enum ReadValue<'de> {
    Str(std::borrow::Cow<'de, str>),
    Num(f64),
    Other,
}

/// A slot's value: strings and numbers kept, `null` dropped, anything else read strictly and
/// kept as [`ReadValue::Other`].
struct SlotValue<'de>(Option<ReadValue<'de>>);

impl<'de> serde::Deserialize<'de> for SlotValue<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = SlotValue<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_unit<E>(self) -> Result<SlotValue<'de>, E> {
                Ok(SlotValue(None))
            }
            fn visit_bool<E>(self, _: bool) -> Result<SlotValue<'de>, E> {
                Ok(SlotValue(Some(ReadValue::Other)))
            }
            fn visit_i64<E>(self, v: i64) -> Result<SlotValue<'de>, E> {
                Ok(SlotValue(Some(ReadValue::Num(v as f64))))
            }
            fn visit_u64<E>(self, v: u64) -> Result<SlotValue<'de>, E> {
                Ok(SlotValue(Some(ReadValue::Num(v as f64))))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<SlotValue<'de>, E> {
                crate::canonical::StrictVisitor.visit_f64(v).map(|_| SlotValue(Some(ReadValue::Num(v))))
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<SlotValue<'de>, E> {
                Ok(SlotValue(Some(ReadValue::Str(std::borrow::Cow::Borrowed(v)))))
            }
            fn visit_str<E>(self, v: &str) -> Result<SlotValue<'de>, E> {
                Ok(SlotValue(Some(ReadValue::Str(std::borrow::Cow::Owned(v.to_owned())))))
            }
            fn visit_string<E>(self, v: String) -> Result<SlotValue<'de>, E> {
                Ok(SlotValue(Some(ReadValue::Str(std::borrow::Cow::Owned(v)))))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<SlotValue<'de>, A::Error> {
                crate::canonical::StrictVisitor.visit_seq(seq).map(|_| SlotValue(Some(ReadValue::Other)))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<SlotValue<'de>, A::Error> {
                crate::canonical::StrictVisitor.visit_map(map).map(|_| SlotValue(Some(ReadValue::Other)))
            }
        }
        d.deserialize_any(V)
    }
}

/// One row read off the wire, weighted ([`read_row`]) and counted into an index
/// ([`EvidenceIndex::add_read`]) without being kept; a row that is not an object or that
/// [`EvidenceRow::from_json`] would refuse is a deserialization error.
struct WireRowInto<'i>(&'i mut EvidenceIndex);

impl<'de> serde::de::DeserializeSeed<'de> for WireRowInto<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for WireRowInto<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an evidence row object")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        use serde::de::Error as _;
        let mut row = WireRow::default();
        let mut seen = 0u32;
        let mut others: Vec<std::borrow::Cow<'de, str>> = Vec::new();
        while let Some(crate::canonical::Text(key)) = map.next_key()? {
            match row_key(&key) {
                Some(i) => {
                    if seen & (1 << i) != 0 {
                        return Err(A::Error::custom("duplicate key"));
                    }
                    seen |= 1 << i;
                    row.slots[i] = match map.next_value::<SlotValue<'de>>()?.0 {
                        None => Slot::Missing,
                        Some(ReadValue::Str(std::borrow::Cow::Borrowed(s))) => Slot::Str(s),
                        Some(ReadValue::Str(std::borrow::Cow::Owned(s))) => {
                            row.escaped.push(s);
                            Slot::Escaped(row.escaped.len() - 1)
                        }
                        Some(ReadValue::Num(x)) => Slot::Num(x),
                        Some(ReadValue::Other) => Slot::Other,
                    };
                }
                None => {
                    if others.contains(&key) {
                        return Err(A::Error::custom("duplicate key"));
                    }
                    let crate::canonical::StrictValue(_) = map.next_value()?;
                    others.push(key);
                }
            }
        }
        let read = read_row(&row).map_err(A::Error::custom)?;
        self.0.add_read(&read);
        Ok(())
    }
}

/// The `evidence` member of a request read straight from JSON text into an index: `null` leaves
/// `index` as it is (`None` when nothing was read); an array makes it a copy of `base` (the
/// chain's index, or empty), made only then, with each row read and weighted as
/// [`rows_from_json`] does counted after what `base` holds, in order (the index is then the
/// [`EvidenceIndex::new`] of `base`'s rows and these, sums included). No row is kept. Any row
/// [`rows_from_json`] would refuse, and any duplicate key, is a deserialization error, after
/// which the index holds some of the rows: callers drop it (and take the general path, which
/// reports the error).
///
/// ```
/// use serde::de::DeserializeSeed as _;
/// use warrant_protocol::graduation::evidence::{EvidenceIndex, WireIndex, rows_from_json};
/// let text = r#"[{"action_class":"draft.response","label":"approved","source_type":"receipt"}]"#;
/// let mut index = None;
/// let seed = WireIndex { base: None, index: &mut index };
/// seed.deserialize(&mut serde_json::Deserializer::from_str(text)).unwrap();
/// let rows = rows_from_json(&serde_json::from_str(text).unwrap()).unwrap();
/// assert_eq!(index, Some(EvidenceIndex::new(&rows)));
/// ```
pub struct WireIndex<'b, 'i> {
    /// The index the rows count after (a copy of it is made for them).
    pub base: Option<&'b EvidenceIndex>,
    /// Where the copy of `base` with the rows goes.
    pub index: &'i mut Option<EvidenceIndex>,
}

impl<'de> serde::de::DeserializeSeed<'de> for WireIndex<'_, '_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for WireIndex<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("null or an array of evidence rows")
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let index = self.index.insert(self.base.cloned().unwrap_or_default());
        while seq.next_element_seed(WireRowInto(&mut *index))?.is_some() {}
        Ok(())
    }
}

/// The reference runtime's evidence summary for one class (§4.4), over rows already filtered to
/// that class.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct EvidenceSummary {
    /// Rows counted positive.
    pub positive: u32,
    /// Rows counted negative.
    pub negative: u32,
    /// Approvals (approve, sent, used).
    pub approvals: u32,
    /// Edits.
    pub edits: u32,
    /// Rejections (including `refused` and `dropped`).
    pub rejections: u32,
    /// Held rows.
    pub held: u32,
    /// Trust issues.
    pub trust_issues: u32,
    /// Rollbacks.
    pub rollbacks: u32,
    /// Receipt rows.
    pub receipts: u32,
    /// Outcome rows.
    pub outcomes: u32,
    /// Rows that are decisions (approvals, edits, rejections, held).
    pub decisions: u32,
    /// Σ of positive evidence weights.
    pub weighted_positive: f64,
    /// Σ of |negative evidence weights|.
    pub weighted_negative: f64,
    /// Positive rows with a non-zero weight (what the tier uses).
    pub graduation_positive: u32,
    /// Approval rows with a non-zero weight (what the tier uses).
    pub graduation_approvals: u32,
    /// The largest edit distance of any row (the reference calls it an average).
    pub max_edit_distance: f64,
}

impl EvidenceSummary {
    /// Adds one row.
    pub fn add(&mut self, row: &EvidenceRow) {
        self.add_n(row, 1);
    }

    /// Adds `n` rows equal to `row` (a run of [`crate::chain_evidence::ChainEvidence::runs`]):
    /// the counts grow by `n` and the weighted sums by `n` × the weight, so a long chain's
    /// evidence is summed in one step a distinct row. With `n` = 1 it is [`EvidenceSummary::add`]
    /// exactly; with more, the weighted sums may differ from `n` additions in the last bits.
    pub fn add_n(&mut self, row: &EvidenceRow, n: u32) {
        self.count(row.evidence_weight, row.bucket, row.edit_distance, n);
    }

    /// Counts `n` rows of evidence weight `w`, summary bucket `bucket` and edit distance
    /// `edit_distance` (what [`EvidenceSummary::add_n`] reads of a row).
    fn count(&mut self, w: f64, bucket: Bucket, edit_distance: Option<f64>, n: u32) {
        let times = f64::from(n);
        if w > 0.0 {
            self.weighted_positive += w * times;
        } else if w < 0.0 {
            self.weighted_negative += -w * times;
        }
        let counts = w != 0.0;
        let mut positive = || {
            self.positive += n;
            if counts {
                self.graduation_positive += n;
            }
        };
        match bucket {
            Bucket::Approval => {
                positive();
                self.approvals += n;
                self.decisions += n;
                if counts {
                    self.graduation_approvals += n;
                }
            }
            Bucket::Edit => {
                positive();
                self.edits += n;
                self.decisions += n;
            }
            Bucket::Receipt => {
                positive();
                self.receipts += n;
            }
            Bucket::Outcome => {
                positive();
                self.outcomes += n;
            }
            Bucket::Rejection => {
                self.negative += n;
                self.rejections += n;
                self.decisions += n;
            }
            Bucket::Held => {
                self.held += n;
                self.decisions += n;
            }
            Bucket::TrustIssue => {
                self.negative += n;
                self.trust_issues += n;
            }
            Bucket::Rollback => {
                self.negative += n;
                self.rollbacks += n;
            }
            Bucket::NegativeOutcome => {
                self.negative += n;
                self.outcomes += n;
            }
            Bucket::Uncounted => {}
        }
        if let Some(e) = edit_distance
            && e > self.max_edit_distance
        {
            self.max_edit_distance = e;
        }
    }

    /// Summarizes the rows of `action_class` (canonical) among `rows`.
    #[must_use]
    pub fn of<'a>(action_class: &str, rows: impl IntoIterator<Item = &'a EvidenceRow>) -> Self {
        let mut s = Self::default();
        for r in rows {
            if r.action_class == action_class {
                s.add(r);
            }
        }
        s
    }

    /// negative / (positive + negative), 0 without rows.
    #[must_use]
    pub fn rejection_rate(&self) -> f64 {
        let total = self.positive + self.negative;
        if total == 0 { 0.0 } else { f64::from(self.negative) / f64::from(total) }
    }

    /// The count-based tier (§4.4): review, then auto_capped, supervised, else gated.
    #[must_use]
    pub fn tier(&self) -> Tier {
        if self.trust_issues > 0 || self.rejections >= 3 || self.rejection_rate() >= 0.34 {
            Tier::Review
        } else if self.graduation_positive >= 10
            && self.graduation_approvals >= 6
            && self.negative == 0
            && self.max_edit_distance <= 0.15
        {
            Tier::AutoCapped
        } else if self.graduation_positive >= 5
            && self.graduation_approvals >= 3
            && self.negative == 0
            && self.max_edit_distance <= 0.25
        {
            Tier::Supervised
        } else {
            Tier::Gated
        }
    }

    /// How many more approvals (each a positive, non-zero-weight approval row, as the principal's
    /// signed approvals are) bring the count-based tier ([`EvidenceSummary::tier`], §4.4) to
    /// autonomy level `level` (gated 1, supervised 2, auto_capped 3): `Some(0)` when it is there
    /// already, `None` when approvals alone cannot get it there (a negative row, a trust issue,
    /// three rejections, edits too heavy, or a level above 3).
    #[must_use]
    pub fn approvals_to_reach(&self, level: u8) -> Option<u32> {
        let now = self.tier();
        if now.autonomy_level() >= level {
            return Some(0);
        }
        if now == Tier::Review || self.negative > 0 {
            return None;
        }
        let (positive, approvals, edits): (u32, u32, f64) = match level {
            0 | 1 => return Some(0),
            2 => (5, 3, 0.25),
            3 => (10, 6, 0.15),
            _ => return None,
        };
        (self.max_edit_distance <= edits).then(|| {
            positive.saturating_sub(self.graduation_positive).max(approvals.saturating_sub(self.graduation_approvals))
        })
    }

    /// The summary as JSON (snake_case), for a decision's `observed.evidence`.
    #[must_use]
    pub fn to_json(&self) -> Value {
        let mut v = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Value::Object(m) = &mut v {
            m.insert("rejection_rate".into(), json!((self.rejection_rate() * 1000.0).round() / 1000.0));
        }
        v
    }

    /// Appends [`EvidenceSummary::to_json`]'s compact serialization to `out` without building
    /// it: the same bytes (members in sorted order, `rejection_rate` rounded to 3 decimals).
    ///
    /// # Errors
    /// Only those of serde_json writing a float into `out` (none for a `Vec`).
    pub fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        use crate::graduation::gate::write_u32;
        let x = self;
        let counts = |out: &mut Vec<u8>, fields: &[(&[u8], u32)]| {
            for (key, n) in fields {
                out.extend_from_slice(key);
                write_u32(*n, out);
            }
        };
        counts(
            out,
            &[
                (b"{\"approvals\":", x.approvals),
                (b",\"decisions\":", x.decisions),
                (b",\"edits\":", x.edits),
                (b",\"graduation_approvals\":", x.graduation_approvals),
                (b",\"graduation_positive\":", x.graduation_positive),
                (b",\"held\":", x.held),
            ],
        );
        out.extend_from_slice(b",\"max_edit_distance\":");
        serde_json::to_writer(&mut *out, &x.max_edit_distance)?;
        counts(
            out,
            &[
                (b",\"negative\":", x.negative),
                (b",\"outcomes\":", x.outcomes),
                (b",\"positive\":", x.positive),
                (b",\"receipts\":", x.receipts),
            ],
        );
        out.extend_from_slice(b",\"rejection_rate\":");
        serde_json::to_writer(&mut *out, &((x.rejection_rate() * 1000.0).round() / 1000.0))?;
        counts(
            out,
            &[
                (b",\"rejections\":", x.rejections),
                (b",\"rollbacks\":", x.rollbacks),
                (b",\"trust_issues\":", x.trust_issues),
            ],
        );
        out.extend_from_slice(b",\"weighted_negative\":");
        serde_json::to_writer(&mut *out, &x.weighted_negative)?;
        out.extend_from_slice(b",\"weighted_positive\":");
        serde_json::to_writer(&mut *out, &x.weighted_positive)?;
        out.push(b'}');
        Ok(())
    }
}

/// Evidence rows prepared once for many gate decisions (§4.4): the count-based summary of every
/// canonical class among the rows, so that a decision looks its class up (one hash lookup)
/// instead of scanning and comparing every row.
///
/// Each class's summary is accumulated in row order, so it is bit for bit the
/// [`EvidenceSummary::of`] of the same rows (floating-point sums included). Building the index is
/// O(rows); a class without rows has the empty summary (tier `gated`). Pure: no I/O.
///
/// ```
/// use warrant_protocol::graduation::evidence::{EvidenceIndex, EvidenceRow, EvidenceSummary, SourceType};
/// let rows: Vec<EvidenceRow> =
///     (0..40).map(|_| EvidenceRow::new("draft.response", "approved", Some(SourceType::Receipt), None)).collect();
/// let index = EvidenceIndex::new(&rows);
/// assert_eq!(index.summary("draft.response"), EvidenceSummary::of("draft.response", &rows));
/// assert_eq!(index.summary("email.send.external").positive, 0);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EvidenceIndex {
    /// Each class with its summary, in order of first appearance.
    classes: Vec<(String, EvidenceSummary)>,
    /// Position of each class in `classes`.
    positions: std::collections::HashMap<String, usize>,
    rows: usize,
}

impl EvidenceIndex {
    /// Indexes `rows` (any classes; each row counts for its own canonical `action_class`).
    #[must_use]
    pub fn new<'a>(rows: impl IntoIterator<Item = &'a EvidenceRow>) -> Self {
        let mut index = Self::default();
        for row in rows {
            index.add(row);
        }
        index
    }

    /// Indexes runs of equal rows (`(row, how many)`, as
    /// [`crate::chain_evidence::ChainEvidence::runs`] gives them), each in one step
    /// ([`EvidenceSummary::add_n`]).
    #[must_use]
    pub fn of_runs<'a>(runs: impl IntoIterator<Item = (&'a EvidenceRow, u64)>) -> Self {
        let mut index = Self::default();
        for (row, n) in runs {
            index.add_n(row, u32::try_from(n).unwrap_or(u32::MAX));
        }
        index
    }

    /// Adds one row to its class's summary (rows of one class in a run cost no hash lookup).
    pub fn add(&mut self, row: &EvidenceRow) {
        self.add_n(row, 1);
    }

    /// Adds `n` rows equal to `row` to its class's summary ([`EvidenceSummary::add_n`]).
    pub fn add_n(&mut self, row: &EvidenceRow, n: u32) {
        self.rows += n as usize;
        self.summary_mut(&row.action_class).add_n(row, n);
    }

    /// Adds a row as read ([`read_row`]), without making it an [`EvidenceRow`]: the same counts
    /// as [`EvidenceIndex::add`] of [`RowRead::into_row`].
    pub(crate) fn add_read(&mut self, row: &RowRead<'_>) {
        self.rows += 1;
        self.summary_mut(&row.action_class).count(row.evidence_weight, row.bucket, row.edit_distance, 1);
    }

    /// The summary of `action_class`, added (empty) when the index has none yet; the last class
    /// added is found without a hash lookup (rows of one class come in runs).
    fn summary_mut(&mut self, action_class: &str) -> &mut EvidenceSummary {
        let at = match self.classes.last() {
            Some((class, _)) if class == action_class => self.classes.len() - 1,
            _ => match self.positions.get(action_class) {
                Some(&i) => i,
                None => {
                    self.positions.insert(action_class.to_owned(), self.classes.len());
                    self.classes.push((action_class.to_owned(), EvidenceSummary::default()));
                    self.classes.len() - 1
                }
            },
        };
        &mut self.classes[at].1
    }

    /// The summary of a canonical class: all zero when no row names it.
    #[must_use]
    pub fn summary(&self, action_class: &str) -> EvidenceSummary {
        if self.classes.len() <= 8 {
            // A few classes: comparing them beats hashing the key.
            return self.classes.iter().find(|(c, _)| c == action_class).map(|(_, s)| *s).unwrap_or_default();
        }
        self.positions.get(action_class).map(|&i| self.classes[i].1).unwrap_or_default()
    }

    /// The classes with at least one row, with their summaries, in order of first appearance.
    pub fn classes(&self) -> impl Iterator<Item = (&str, &EvidenceSummary)> {
        self.classes.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// How many rows were indexed (all classes).
    #[must_use]
    pub fn len(&self) -> usize {
        self.rows
    }

    /// True when no row was indexed.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }
}

/// The four trust tiers (`posterior.schema.json` `tier`; the reference's `tier`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    /// Negative evidence or a trust issue: review before expanding autonomy (level 0).
    Review,
    /// Default (level 1).
    Gated,
    /// Enough clean approvals for supervision (level 2).
    Supervised,
    /// Enough clean approvals for capped autonomy (level 3).
    AutoCapped,
}

impl Tier {
    /// The wire spelling.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Review => "review",
            Tier::Gated => "gated",
            Tier::Supervised => "supervised",
            Tier::AutoCapped => "auto_capped",
        }
    }

    /// The autonomy level the tier supports: review 0, gated 1, supervised 2, auto_capped 3.
    #[must_use]
    pub fn autonomy_level(self) -> u8 {
        match self {
            Tier::Review => 0,
            Tier::Gated => 1,
            Tier::Supervised => 2,
            Tier::AutoCapped => 3,
        }
    }
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Indexing runs counts what indexing each row counts, and a stored run read back (serde)
    /// indexes the same: the agents' snapshot keeps the evidence so.
    #[test]
    fn runs_index_as_their_rows_and_survive_a_round_trip() {
        let row = |label: &str, source: &str, date: &str| {
            EvidenceRow::from_json(&json!({"action_class": "a.b", "label": label, "source_type": source, "date": date}))
                .expect("row")
        };
        let rows = [
            row("approved", "principal", "2026-11-01"),
            row("approved", "principal", "2026-11-01"),
            row("rejected", "connector", "2026-11-02"),
            row("approved", "principal", "2026-11-01"),
            row("sent", "model_inferred", "2026-11-03"),
        ];
        let chain: crate::chain_evidence::ChainEvidence = rows.to_vec().into();
        let runs: Vec<(EvidenceRow, u64)> = chain.runs().map(|(r, n)| (r.clone(), n)).collect();
        assert_eq!(runs.iter().map(|(_, n)| *n).collect::<Vec<_>>(), vec![3, 1, 1]);
        let back: Vec<(EvidenceRow, u64)> =
            serde_json::from_value(serde_json::to_value(&runs).expect("json")).expect("rows");
        assert_eq!(back, runs);
        let by_rows = EvidenceIndex::new(&rows);
        let by_runs = EvidenceIndex::of_runs(back.iter().map(|(r, n)| (r, *n)));
        assert_eq!(by_runs.len(), by_rows.len());
        let (a, b) = (by_runs.summary("a.b"), by_rows.summary("a.b"));
        assert_eq!(
            (a.positive, a.negative, a.approvals, a.rejections),
            (b.positive, b.negative, b.approvals, b.rejections)
        );
        assert!((a.weighted_positive - b.weighted_positive).abs() < 1e-12);
        let mut again = crate::chain_evidence::ChainEvidence::default();
        for (r, n) in back {
            again.push_run(r, n);
        }
        assert!(again.same_rows(&chain));
        assert_eq!(again.count("a.b"), 5);
    }

    #[test]
    fn reference_test_vectors_11() {
        let a = EvidenceRow::from_json(
            &json!({"actionClass": "draft.response", "type": "approved", "sourceType": "connector"}),
        );
        let r = EvidenceRow::from_json(
            &json!({"action_class": "draft.response", "label": "rejected", "source_type": "model_inferred"}),
        );
        let (a, r) = (a.expect("row"), r.expect("row"));
        assert_eq!((a.evidence_weight, r.evidence_weight), (0.255, -0.1));
        let s = EvidenceSummary::of("draft.response", [&a, &r]);
        assert_eq!((s.weighted_positive, s.weighted_negative), (0.255, 0.1));
    }

    #[test]
    fn model_inferred_is_never_upgraded() {
        let row = EvidenceRow::from_json(&json!({
            "action_class": "a.b", "label": "sent", "source_type": "model_inferred",
            "provenance_weight": 1.0, "evidence_weight": 1.0
        }))
        .expect("row");
        assert_eq!((row.provenance_weight, row.evidence_weight), (0.1, 0.1));
        let missing = EvidenceRow::from_json(&json!({"action_class": "a.b", "label": "sent"})).expect("row");
        assert_eq!(missing.evidence_weight, 0.1);
    }

    #[test]
    fn misfiled_negatives_are_negative() {
        for label in ["refused", "outcome_negative", "dropped", "unsuccessful_send_failed"] {
            let row = EvidenceRow::new("a.b", label, Some(SourceType::Receipt), None);
            assert!(row.evidence_weight < 0.0, "{label}");
            let s = EvidenceSummary::of("a.b", [&row]);
            assert_eq!((s.positive, s.negative), (0, 1), "{label}");
        }
    }

    #[test]
    fn dates_are_real_calendar_dates() {
        let format = time::macros::format_description!("[year]-[month]-[day]");
        for d in [
            "2024-02-29",
            "2023-02-29",
            "0000-01-01",
            "9999-12-31",
            "2026-00-10",
            "2026-13-01",
            "2026-04-31",
            "2026-04-30",
            "2026-1-011",
            "2026/01/01",
            "+026-01-01",
            "2026-01-00",
            "2026-12-32",
            "1900-02-29",
            "2000-02-29",
        ] {
            assert_eq!(is_date(d), time::Date::parse(d, format).is_ok(), "{d}");
        }
        assert!(is_date("2024-02-29") && !is_date("2023-02-29") && !is_date("2026-04-31"));
    }

    #[test]
    fn class_less_and_malformed_rows_are_refused() {
        assert_eq!(EvidenceRow::from_json(&json!({"label": "approved"})), Err(EvidenceError::Missing("action_class")));
        assert!(EvidenceRow::from_json(&json!({"action_class": "a.b", "label": "x", "date": "2026-13-01"})).is_err());
        assert!(EvidenceRow::from_json(&json!({"action_class": "a.b"})).is_err());
        assert!(EvidenceRow::from_json(&json!([])).is_err());
    }

    /// Each member a row is read from has one slot, named by its place in the table, and the
    /// fields' alias ranges cover every slot once, in order.
    #[test]
    fn row_slots_name_each_member_once() {
        for (i, name) in ROW_KEY_NAMES.iter().enumerate() {
            assert_eq!(row_key(name), Some(i), "{name}");
        }
        let ranges = [
            slots::ACTION_CLASS,
            slots::LABEL,
            slots::SOURCE_TYPE,
            slots::DATE,
            slots::RECORDED_AT,
            slots::EDIT_DISTANCE,
            slots::DECISION_WEIGHT,
            slots::PROVENANCE_WEIGHT,
            slots::EVIDENCE_WEIGHT,
            slots::SOURCE,
            slots::RECEIPT_ID,
        ];
        assert_eq!(ranges.iter().flat_map(Clone::clone).collect::<Vec<_>>(), (0..ROW_KEYS).collect::<Vec<_>>());
    }

    /// A label is weighted as its normal form is ([`label_info`] of [`normalize_label`]),
    /// whether or not the table renames it, and a table label is a trust violation exactly
    /// when it is a trust issue (what [`normalized_label`] relies on).
    #[test]
    fn table_labels_are_trust_violations_exactly_when_trust_issues() {
        let odd =
            ["Approved", " minor-edit ", "trust.issue", "customer_complaint", "data_leak", "Refused", "HOLD", "x y"];
        for label in LABELS.iter().map(|(l, ..)| *l).chain(odd) {
            let (normal, info) = normalized_label(label);
            assert_eq!(info, label_info(&normal), "{label}");
            assert_eq!(normal, normalize_label(label), "{label}");
            if LABELS.iter().any(|(l, ..)| *l == normal) {
                assert_eq!(info.trust_violation, info.bucket == Bucket::TrustIssue, "{label}");
            }
        }
        assert_eq!(normalized_label("Refused").0, "rejected");
        assert_eq!(normalized_label("execute").0, "sent");
    }

    /// A member's value for the generated rows: strings of the shapes the fields take (classes,
    /// aliases, labels, dates, date-times, provenance types, nonsense), numbers, and others.
    fn member_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        prop_oneof![
            proptest::sample::select(vec![
                "draft.response",
                "email.send.external",
                "Draft_Response",
                "draft_email",
                "nope",
                "approved",
                "Sent",
                "minor edit",
                "trust_issue",
                "receipt",
                "connector",
                "model_inferred",
                " principal ",
                "2026-11-01",
                "2026-02-30",
                "2026-11-02T10:00:00Z",
                "2026-11-02T10:00:00",
                "",
            ])
            .prop_map(Value::from),
            (-2.0f64..2.0).prop_map(Value::from),
            Just(Value::Null),
            Just(json!(true)),
            Just(json!({"edit_distance": 1})),
        ]
    }

    proptest::proptest! {
        // Rows read off the wire into an index count exactly what the rows read as `Value`s
        // count, and are refused exactly when those are: any members, any values, any order.
        #[test]
        fn rows_read_off_the_wire_index_as_rows_read_as_values(
            rows in proptest::collection::vec(
                proptest::collection::vec(
                    (proptest::sample::select(ROW_KEY_NAMES.iter().copied().chain(["other", "metadata"]).collect::<Vec<_>>()),
                     member_value()),
                    0..8,
                ),
                0..6,
            ),
            base_rows in 0usize..3,
        ) {
            use serde::de::DeserializeSeed as _;
            let rows: Vec<Value> = rows
                .into_iter()
                .map(|members| {
                    let mut m: Map<String, Value> = members.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
                    // Most rows get a class and a label, so that most are read, not refused.
                    m.entry("action_class").or_insert_with(|| json!("draft.response"));
                    m.entry("label").or_insert_with(|| json!("approved"));
                    Value::Object(m)
                })
                .collect();
            let text = serde_json::to_string(&rows).expect("JSON");
            let base: Vec<EvidenceRow> =
                (0..base_rows).map(|_| EvidenceRow::new("draft.response", "rejected", Some(SourceType::Principal), None)).collect();
            let base_index = EvidenceIndex::new(&base);
            let mut index = None;
            let mut de = serde_json::Deserializer::from_str(&text);
            let wire = WireIndex { base: Some(&base_index), index: &mut index }.deserialize(&mut de).and_then(|()| de.end());
            match rows_from_json(&Value::Array(rows)) {
                Ok(read) => {
                    proptest::prop_assert!(wire.is_ok(), "{text}: {wire:?}");
                    proptest::prop_assert_eq!(index, Some(EvidenceIndex::new(base.iter().chain(&read))));
                }
                Err(e) => proptest::prop_assert!(wire.is_err(), "{text}: read off the wire, refused as values ({e:?})"),
            }
        }
    }
}
