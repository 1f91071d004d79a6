//! The Beta posterior of one action class (`trust-graduation.md` §5, `posterior.schema.json`).
//!
//! Prior Beta(2, 2). Each row with a non-zero evidence weight adds |w| to α (w > 0) or to β
//! (w < 0). The 95% credible interval is equal-tailed and exact: the 2.5% and 97.5% quantiles of
//! Beta(α, β), found by inverting the regularized incomplete beta function of statrs
//! (`inv_beta_reg`, then Newton steps safeguarded by bisection on `beta_reg` until the residual is
//! below 1e-15). Never a normal approximation.
//!
//! The posterior *recommends*; it never authorizes. The gate ([`super::gate`]) does not read it,
//! so no class, and in particular no external class, is promoted by the posterior alone (§3.1).

use super::evidence::{EvidenceRow, EvidenceSummary, Tier};
use super::policy::Threshold;
use serde_json::{Map, Value, json};
use statrs::function::beta::{beta_reg, inv_beta_reg, ln_beta};
use std::collections::BTreeMap;

/// Prior α and β.
pub const PRIOR: f64 = 2.0;
/// Days an in-window trust violation counts as recent (§5.3).
pub const TRUST_VIOLATION_DAYS: i64 = 30;
/// `needs_more_evidence` when samples are below this…
pub const NEEDS_SAMPLES: u32 = 10;
/// …or the interval is wider than this.
pub const NEEDS_WIDTH: f64 = 0.35;
/// Weight of one receipt-grade approval (`approved` × `receipt`), for [`Posterior::approvals_to_graduate`].
pub const RECEIPT_APPROVAL_WEIGHT: f64 = 0.85;

/// The `q` quantile of Beta(a, b): x with I_x(a, b) = q. `a`, `b` > 0; `q` in [0, 1].
///
/// ```
/// let x = warrant_protocol::graduation::posterior::beta_quantile(2.0, 2.0, 0.025);
/// assert!((x - 0.09429932405024609).abs() < 1e-12);
/// ```
#[must_use]
pub fn beta_quantile(a: f64, b: f64, q: f64) -> f64 {
    if q <= 0.0 {
        return 0.0;
    }
    if q >= 1.0 {
        return 1.0;
    }
    let ln_b = ln_beta(a, b);
    let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
    let mut x = inv_beta_reg(a, b, q).clamp(0.0, 1.0);
    if !(x > 0.0 && x < 1.0) {
        x = 0.5;
    }
    for _ in 0..200 {
        let f = beta_reg(a, b, x) - q;
        if f.abs() < 1e-15 {
            break;
        }
        if f < 0.0 {
            lo = x;
        } else {
            hi = x;
        }
        let pdf = ((a - 1.0) * x.ln() + (b - 1.0) * (1.0 - x).ln() - ln_b).exp();
        let newton = x - f / pdf;
        let next = if pdf.is_finite() && pdf > 0.0 && newton > lo && newton < hi { newton } else { 0.5 * (lo + hi) };
        if (next - x).abs() < 1e-17 || hi - lo < 1e-16 {
            x = next;
            break;
        }
        x = next;
    }
    x
}

/// Counts of rows by evidence quality (`posterior.schema.json` `evidence_quality`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct EvidenceQuality {
    /// sent, approved, rejected, dropped and other ±1.00 / 0.85 labels at full provenance.
    pub strong: u32,
    /// minor_edit, heavy_rewrite and other ±0.35 / ±0.55 labels at full provenance.
    pub partial: u32,
    /// edited (−0.15) and other weak labels at full provenance.
    pub ambiguous: u32,
    /// Rows whose provenance weight is below 0.5 (connector, model-inferred, unknown).
    pub weak: u32,
    /// Rows of weight 0.
    pub neutral: u32,
}

/// The posterior of one class (`posterior.schema.json`).
#[derive(Debug, Clone, PartialEq)]
pub struct Posterior {
    /// Canonical class.
    pub action_class: String,
    /// α, prior included.
    pub alpha: f64,
    /// β, prior included.
    pub beta: f64,
    /// Rows with non-zero weight.
    pub samples: u32,
    /// Rows with weight > 0.
    pub positive: u32,
    /// Rows with weight < 0.
    pub negative: u32,
    /// Rows with weight 0.
    pub neutral: u32,
    /// α / (α + β).
    pub mean: f64,
    /// 2.5% quantile.
    pub ci_low: f64,
    /// 97.5% quantile.
    pub ci_high: f64,
    /// Rows by quality.
    pub quality: EvidenceQuality,
    /// A trust violation within [`TRUST_VIOLATION_DAYS`] of `now` (an undated one counts).
    pub trust_violation_recent: bool,
    /// The tier: `review` after a recent trust violation, else the count-based tier of the
    /// same rows (the tier the gate uses).
    pub tier: Tier,
    /// The class's threshold.
    pub threshold: Threshold,
    /// Rows by `source` (default `ledger`).
    pub by_source: BTreeMap<String, u32>,
}

impl Posterior {
    /// The posterior of `action_class` (canonical) from the rows of that class among `rows`.
    /// `today` (`YYYY-MM-DD` as a [`time::Date`]) dates the trust-violation window.
    #[must_use]
    pub fn of<'a>(
        action_class: &str,
        rows: impl IntoIterator<Item = &'a EvidenceRow>,
        threshold: Threshold,
        today: time::Date,
    ) -> Self {
        let mut p = Posterior {
            action_class: action_class.to_owned(),
            alpha: PRIOR,
            beta: PRIOR,
            samples: 0,
            positive: 0,
            negative: 0,
            neutral: 0,
            mean: 0.5,
            ci_low: 0.0,
            ci_high: 1.0,
            quality: EvidenceQuality::default(),
            trust_violation_recent: false,
            tier: Tier::Gated,
            threshold,
            by_source: BTreeMap::new(),
        };
        let mut summary = EvidenceSummary::default();
        let format = time::macros::format_description!("[year]-[month]-[day]");
        for row in rows {
            if row.action_class != action_class {
                continue;
            }
            summary.add(row);
            let w = row.evidence_weight;
            if w > 0.0 {
                p.alpha += w;
                p.positive += 1;
            } else if w < 0.0 {
                p.beta += -w;
                p.negative += 1;
            } else {
                p.neutral += 1;
            }
            let d = row.decision_weight.abs();
            if w == 0.0 {
                p.quality.neutral += 1;
            } else if row.provenance_weight < 0.5 {
                p.quality.weak += 1;
            } else if d >= 0.85 {
                p.quality.strong += 1;
            } else if d >= 0.35 {
                p.quality.partial += 1;
            } else {
                p.quality.ambiguous += 1;
            }
            *p.by_source.entry(row.source.clone().unwrap_or_else(|| "ledger".into())).or_insert(0) += 1;
            if row.trust_violation {
                let recent = match row.date.as_deref().and_then(|d| time::Date::parse(d, format).ok()) {
                    Some(date) => (today - date).whole_days() <= TRUST_VIOLATION_DAYS,
                    None => true,
                };
                p.trust_violation_recent |= recent;
            }
        }
        p.samples = p.positive + p.negative;
        p.mean = p.alpha / (p.alpha + p.beta);
        p.ci_low = beta_quantile(p.alpha, p.beta, 0.025);
        p.ci_high = beta_quantile(p.alpha, p.beta, 0.975);
        p.tier = if p.trust_violation_recent { Tier::Review } else { summary.tier() };
        p
    }

    /// ci_high − ci_low.
    #[must_use]
    pub fn ci_width(&self) -> f64 {
        self.ci_high - self.ci_low
    }

    /// samples < 10 or a width above 0.35.
    #[must_use]
    pub fn needs_more_evidence(&self) -> bool {
        self.samples < NEEDS_SAMPLES || self.ci_width() > NEEDS_WIDTH
    }

    /// ci_low ≥ ci_low_min, samples ≥ samples_min, and no recent trust violation. A
    /// recommendation only (§5.3).
    #[must_use]
    pub fn graduation_ready(&self) -> bool {
        self.ci_low >= self.threshold.ci_low_min
            && self.samples >= self.threshold.samples_min
            && !self.trust_violation_recent
    }

    /// How many more receipt-grade approvals (weight 0.85 each) would make the class
    /// graduation-ready if nothing else changed: `Some(0)` when it already is, `None` when no
    /// number up to 100,000 would (a recent trust violation, or a threshold of 1.0).
    #[must_use]
    pub fn approvals_to_graduate(&self) -> Option<u32> {
        if self.graduation_ready() {
            return Some(0);
        }
        if self.trust_violation_recent {
            return None;
        }
        let t = self.threshold;
        let ready = |n: u32| {
            let a = self.alpha + RECEIPT_APPROVAL_WEIGHT * f64::from(n);
            self.samples + n >= t.samples_min && beta_quantile(a, self.beta, 0.025) >= t.ci_low_min
        };
        let (mut lo, mut hi) = (0_u32, 1_u32);
        while !ready(hi) {
            lo = hi;
            hi = hi.saturating_mul(2);
            if hi > 100_000 {
                return None;
            }
        }
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if ready(mid) { hi = mid } else { lo = mid }
        }
        Some(hi)
    }

    /// The posterior as a portable v0.1 object (`posterior.schema.json`).
    #[must_use]
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("protocol_version".into(), json!("0.1"));
        m.insert("action_class".into(), json!(self.action_class));
        m.insert("alpha".into(), json!(self.alpha));
        m.insert("beta".into(), json!(self.beta));
        m.insert("samples".into(), json!(self.samples));
        m.insert("positive".into(), json!(self.positive));
        m.insert("negative".into(), json!(self.negative));
        m.insert("neutral".into(), json!(self.neutral));
        m.insert("mean".into(), json!(self.mean));
        m.insert("ci_low".into(), json!(self.ci_low));
        m.insert("ci_high".into(), json!(self.ci_high));
        m.insert("ci_width".into(), json!(self.ci_width()));
        m.insert("evidence_quality".into(), serde_json::to_value(self.quality).unwrap_or(Value::Null));
        m.insert("needs_more_evidence".into(), json!(self.needs_more_evidence()));
        m.insert("trust_violation_recent".into(), json!(self.trust_violation_recent));
        m.insert("tier".into(), json!(self.tier.as_str()));
        m.insert("graduation_ready".into(), json!(self.graduation_ready()));
        m.insert("by_source".into(), json!(self.by_source));
        m.insert(
            "thresholds".into(),
            json!({"ci_low_min": self.threshold.ci_low_min, "samples_min": self.threshold.samples_min}),
        );
        m.insert("approvals_to_graduate".into(), json!(self.approvals_to_graduate()));
        Value::Object(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_invert_the_cdf() {
        for (a, b) in [(2.0, 2.0), (10.5, 2.0), (27.5, 3.0), (4.125, 2.0), (500.0, 3.0), (2.0, 800.0)] {
            for q in [0.025, 0.5, 0.975] {
                let x = beta_quantile(a, b, q);
                assert!((beta_reg(a, b, x) - q).abs() < 1e-13, "a={a} b={b} q={q} x={x}");
            }
        }
    }
}
