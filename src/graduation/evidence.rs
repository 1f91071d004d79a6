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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
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
    let lower: String =
        label.trim().chars().map(|c| if matches!(c, ' ' | '-' | '.') { '_' } else { c.to_ascii_lowercase() }).collect();
    LABELS.iter().find(|(l, ..)| *l == lower).map_or(lower, |(_, canonical, ..)| (*canonical).to_owned())
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

/// One evidence row, normalized and weighted (`evidence-row.schema.json`).
#[derive(Debug, Clone, PartialEq)]
pub struct EvidenceRow {
    /// The canonical action class (aliases resolved with [`crate::registry::normalize`]).
    pub action_class: String,
    /// The normalized label ([`normalize_label`]).
    pub label: String,
    /// The event date, `YYYY-MM-DD`, when known.
    pub date: Option<String>,
    /// The tracker or system that produced the row (`source`).
    pub source: Option<String>,
    /// The provenance type; `None` when missing or unknown.
    pub source_type: Option<SourceType>,
    /// Decision weight in [−1, 1].
    pub decision_weight: f64,
    /// Provenance weight in [0, 1].
    pub provenance_weight: f64,
    /// Evidence weight in [−1, 1]: decision × provenance rounded to 4 decimals, or the row's own
    /// (clamped, and capped for model-inferred rows).
    pub evidence_weight: f64,
    /// Edit distance (0 = unchanged), when the row gives one.
    pub edit_distance: Option<f64>,
    /// The summary bucket of the label.
    pub bucket: Bucket,
    /// True when the label is a trust violation.
    pub trust_violation: bool,
    /// The receipt the row comes from, if any.
    pub receipt_id: Option<String>,
    /// When the row was recorded (RFC 3339), if known.
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

fn first<'a>(m: &'a Map<String, Value>, keys: &[&str]) -> Option<(&'a Value, String)> {
    keys.iter().find_map(|k| m.get(*k).filter(|v| !v.is_null()).map(|v| (v, (*k).to_owned())))
}

fn str_field<'a>(
    m: &'a Map<String, Value>,
    keys: &[&str],
    field: &'static str,
) -> Result<Option<&'a str>, EvidenceError> {
    match first(m, keys) {
        None => Ok(None),
        Some((Value::String(s), _)) => Ok(Some(s)),
        Some(_) => Err(EvidenceError::Invalid { field, message: "must be a string".into() }),
    }
}

fn num_field(m: &Map<String, Value>, keys: &[&str], field: &'static str) -> Result<Option<f64>, EvidenceError> {
    match first(m, keys) {
        None => Ok(None),
        Some((v, _)) => match v.as_f64() {
            Some(x) if x.is_finite() => Ok(Some(x)),
            _ => Err(EvidenceError::Invalid { field, message: "must be a finite number".into() }),
        },
    }
}

/// True for a valid `YYYY-MM-DD` calendar date.
pub(crate) fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter().enumerate().all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
        && time::Date::parse(s, time::macros::format_description!("[year]-[month]-[day]")).is_ok()
}

impl EvidenceRow {
    /// Builds a row from a label and a source type, with the weights of the tables.
    #[must_use]
    pub fn new(action_class: &str, label: &str, source_type: Option<SourceType>, date: Option<String>) -> Self {
        let label = normalize_label(label);
        let info = label_info(&label);
        let provenance = source_type.map_or(UNKNOWN_PROVENANCE_WEIGHT, SourceType::weight);
        EvidenceRow {
            action_class: crate::registry::normalize(action_class),
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
        let class = str_field(m, &["action_class", "actionClass"], "action_class")?
            .ok_or(EvidenceError::Missing("action_class"))?;
        let normalized = crate::registry::normalize(class);
        if !crate::packet::is_class_id(&normalized) {
            return Err(EvidenceError::Invalid {
                field: "action_class",
                message: format!("{class:?} is not an action class"),
            });
        }
        let label = str_field(m, &["label", "type", "eventType", "event_type", "decision"], "label")?
            .ok_or(EvidenceError::Missing("label"))?;
        let source_type =
            match str_field(m, &["source_type", "sourceType", "provenance_type", "provenanceType"], "source_type")? {
                None => None,
                Some(s) => SourceType::parse(s.trim()),
            };
        let date = match str_field(m, &["date"], "date")? {
            Some(d) if is_date(d) => Some(d.to_owned()),
            Some(d) => {
                return Err(EvidenceError::Invalid { field: "date", message: format!("{d:?} is not YYYY-MM-DD") });
            }
            None => None,
        };
        let recorded_at = str_field(m, &["recorded_at", "recordedAt", "createdAt", "created_at"], "recorded_at")?;
        if let Some(r) = recorded_at
            && crate::clock::parse_rfc3339(r).is_none()
        {
            return Err(EvidenceError::Invalid {
                field: "recorded_at",
                message: format!("{r:?} is not an RFC 3339 date-time"),
            });
        }
        let edit_distance = num_field(m, &["edit_distance", "editDistance"], "edit_distance")?;
        if let Some(e) = edit_distance
            && e < 0.0
        {
            return Err(EvidenceError::Invalid { field: "edit_distance", message: "must be >= 0".into() });
        }
        let mut row = EvidenceRow::new(&normalized, label, source_type, date);
        let cap = match source_type {
            None | Some(SourceType::ModelInferred) => UNKNOWN_PROVENANCE_WEIGHT,
            Some(_) => 1.0,
        };
        if let Some(d) = num_field(m, &["decision_weight", "decisionWeight"], "decision_weight")? {
            row.decision_weight = d.clamp(-1.0, 1.0);
        }
        if let Some(p) = num_field(m, &["provenance_weight", "provenanceWeight"], "provenance_weight")? {
            row.provenance_weight = p.clamp(0.0, cap);
        }
        row.evidence_weight = match num_field(m, &["evidence_weight", "evidenceWeight"], "evidence_weight")? {
            Some(e) => e.clamp(-cap, cap),
            None => round4(row.decision_weight * row.provenance_weight),
        };
        if row.date.is_none() {
            row.date = recorded_at.and_then(|r| r.get(..10)).filter(|d| is_date(d)).map(str::to_owned);
        }
        row.recorded_at = recorded_at.map(str::to_owned);
        row.edit_distance = edit_distance;
        row.source = str_field(m, &["source", "evidenceSource", "evidence_source"], "source")?.map(str::to_owned);
        row.receipt_id = str_field(m, &["receipt_id", "receiptId"], "receipt_id")?.map(str::to_owned);
        Ok(row)
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
        let w = row.evidence_weight;
        if w > 0.0 {
            self.weighted_positive += w;
        } else if w < 0.0 {
            self.weighted_negative += -w;
        }
        let counts = w != 0.0;
        let mut positive = || {
            self.positive += 1;
            if counts {
                self.graduation_positive += 1;
            }
        };
        match row.bucket {
            Bucket::Approval => {
                positive();
                self.approvals += 1;
                self.decisions += 1;
                if counts {
                    self.graduation_approvals += 1;
                }
            }
            Bucket::Edit => {
                positive();
                self.edits += 1;
                self.decisions += 1;
            }
            Bucket::Receipt => {
                positive();
                self.receipts += 1;
            }
            Bucket::Outcome => {
                positive();
                self.outcomes += 1;
            }
            Bucket::Rejection => {
                self.negative += 1;
                self.rejections += 1;
                self.decisions += 1;
            }
            Bucket::Held => {
                self.held += 1;
                self.decisions += 1;
            }
            Bucket::TrustIssue => {
                self.negative += 1;
                self.trust_issues += 1;
            }
            Bucket::Rollback => {
                self.negative += 1;
                self.rollbacks += 1;
            }
            Bucket::NegativeOutcome => {
                self.negative += 1;
                self.outcomes += 1;
            }
            Bucket::Uncounted => {}
        }
        if let Some(e) = row.edit_distance
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

    /// The summary as JSON (snake_case), for a decision's `observed.evidence`.
    #[must_use]
    pub fn to_json(&self) -> Value {
        let mut v = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Value::Object(m) = &mut v {
            m.insert("rejection_rate".into(), json!((self.rejection_rate() * 1000.0).round() / 1000.0));
        }
        v
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
    fn class_less_and_malformed_rows_are_refused() {
        assert_eq!(EvidenceRow::from_json(&json!({"label": "approved"})), Err(EvidenceError::Missing("action_class")));
        assert!(EvidenceRow::from_json(&json!({"action_class": "a.b", "label": "x", "date": "2026-13-01"})).is_err());
        assert!(EvidenceRow::from_json(&json!({"action_class": "a.b"})).is_err());
        assert!(EvidenceRow::from_json(&json!([])).is_err());
    }
}
