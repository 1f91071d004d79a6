//! Approve as corrected: the principal's edit of a packet's proposed action, signed into the
//! approval as the decision document's `correction` member, and the evidence it is.
//!
//! Trust Graduation counts a correction as evidence between an approval and a refusal
//! (`trust-graduation.md` §4.1: `minor_edit` +0.35, `heavy_rewrite` −0.55) but gives no rule for
//! telling them apart. warrant's rule (`docs/conformance.md`, "Corrections"): the part the
//! principal may change (a tool call's `input`, else the whole proposed action) is written as
//! sorted, indented JSON before and after; the share of its characters that changed
//! (`1 − similarity`, `similar`'s ratio of a character diff, or of a line diff past
//! [`CHAR_DIFF_BYTES`]) in thousandths is `changed_permille`; up to
//! [`MINOR_EDIT_MAX_PERMILLE`] (a quarter) it is a `minor_edit`, beyond it a `heavy_rewrite`.
//!
//! A correction keeps what makes the action what it is: for a tool call (`proposed_action` of
//! [`crate::calls::call_packet`]) every member but `input` (the tool, host, session, working
//! directory, annotations, protected files), and the action class its input classifies to; for
//! any other packet the JSON type of the action. An empty correction is refused, and one equal to
//! the proposed action is no correction (an ordinary approval).

use crate::canonical;
use crate::graduation::policy::PolicySet;
use crate::packet::Packet;
use serde_json::{Value, json};

/// The largest edit, in thousandths of the corrected part's text, that is a `minor_edit`.
pub const MINOR_EDIT_MAX_PERMILLE: u32 = 250;

/// Texts (before and after, together) up to this many bytes are compared character by
/// character; longer ones line by line (a character diff is quadratic at worst).
pub const CHAR_DIFF_BYTES: usize = 16 * 1024;

/// How large an edit is: the evidence label a correction records (§4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EditSize {
    /// Changed at most [`MINOR_EDIT_MAX_PERMILLE`]: `minor_edit`, weight +0.35.
    MinorEdit,
    /// Changed more: `heavy_rewrite`, weight −0.55.
    HeavyRewrite,
}

impl EditSize {
    /// The evidence label.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            EditSize::MinorEdit => "minor_edit",
            EditSize::HeavyRewrite => "heavy_rewrite",
        }
    }

    /// Parses the evidence label.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        [EditSize::MinorEdit, EditSize::HeavyRewrite].into_iter().find(|e| e.label() == s)
    }

    /// The size of an edit that changed `permille` thousandths.
    #[must_use]
    pub fn of_permille(permille: u32) -> Self {
        if permille <= MINOR_EDIT_MAX_PERMILLE { EditSize::MinorEdit } else { EditSize::HeavyRewrite }
    }
}

/// The principal's correction of a packet's proposed action, as signed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Correction {
    /// The corrected proposed action, whole: what the principal approves.
    pub action: Value,
    /// Thousandths of the corrected part's text that changed (0–1000).
    pub changed_permille: u32,
    /// `minor_edit` or `heavy_rewrite`, from [`Correction::changed_permille`].
    pub size: EditSize,
}

/// Why a correction is refused before anything is signed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CorrectionError {
    /// Null, `{}`, `[]` or `""`.
    #[error("the correction is empty")]
    Empty,
    /// Not the JSON type of the proposed action.
    #[error("the correction is {found}, the proposed action is {expected}")]
    Shape {
        /// The proposed action's JSON type.
        expected: &'static str,
        /// The correction's.
        found: &'static str,
    },
    /// A tool call's member other than `input` changed.
    #[error("a correction changes the call's input only, not its `{0}`")]
    Fixed(String),
    /// The corrected input classifies to another action class.
    #[error("the correction changes the action's class from `{from}` to `{to}`")]
    Class {
        /// The class of the proposed call.
        from: String,
        /// The class of the corrected call.
        to: String,
    },
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.trim().is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty(),
        _ => false,
    }
}

/// The tool a call packet names (`governance.tool`), when the packet is one.
fn call_tool(packet: &Packet) -> Option<String> {
    let tool = crate::verdict::Governance::of_packet(packet).and_then(|g| g.tool.clone())?;
    crate::calls::call_of_packet(packet.proposed_action(), &tool).map(|_| tool)
}

impl Correction {
    /// The principal's correction of `packet` to `corrected` (the whole proposed action), checked
    /// and sized; `Ok(None)` when it equals the proposed action (an ordinary approval).
    ///
    /// # Errors
    /// [`CorrectionError`]: empty, another JSON type, a tool call's member other than `input`
    /// changed, or its input classified (by `policies`) to another action class.
    pub fn new(packet: &Packet, policies: &PolicySet, corrected: Value) -> Result<Option<Self>, CorrectionError> {
        let proposed = packet.proposed_action();
        if is_empty(&corrected) {
            return Err(CorrectionError::Empty);
        }
        if std::mem::discriminant(proposed) != std::mem::discriminant(&corrected) {
            return Err(CorrectionError::Shape { expected: type_name(proposed), found: type_name(&corrected) });
        }
        if canonical::canonical_digest(proposed) == canonical::canonical_digest(&corrected) {
            return Ok(None);
        }
        let (before, after) = match call_tool(packet) {
            Some(tool) => {
                let (p, c) = (proposed.as_object(), corrected.as_object());
                let keys = p.into_iter().chain(c).flat_map(|m| m.keys()).filter(|k| *k != "input");
                for k in keys {
                    if p.and_then(|m| m.get(k)) != c.and_then(|m| m.get(k)) {
                        return Err(CorrectionError::Fixed(crate::text::inert(k, 60)));
                    }
                }
                let input = &corrected["input"];
                if is_empty(input) && !is_empty(&proposed["input"]) {
                    return Err(CorrectionError::Empty);
                }
                // A call's input is what the host runs with: of the type it was (an object).
                if std::mem::discriminant(input) != std::mem::discriminant(&proposed["input"]) {
                    return Err(CorrectionError::Shape {
                        expected: type_name(&proposed["input"]),
                        found: type_name(input),
                    });
                }
                let class = |action: &Value| {
                    crate::calls::classify_proposed(policies, action, &tool)
                        .map(|c| crate::registry::normalize(&c.class))
                };
                let (from, to) = (class(proposed), class(&corrected));
                if from != to {
                    return Err(CorrectionError::Class {
                        from: from.unwrap_or_else(|| "none".into()),
                        to: to.unwrap_or_else(|| "none".into()),
                    });
                }
                (&proposed["input"], input)
            }
            None => (proposed, &corrected),
        };
        let changed_permille = changed_permille(before, after);
        Ok(Some(Correction { changed_permille, size: EditSize::of_permille(changed_permille), action: corrected }))
    }

    /// The signed form: `{"action": …, "changed_permille": n, "label": "minor_edit"|"heavy_rewrite"}`.
    #[must_use]
    pub fn to_json(&self) -> Value {
        json!({"action": self.action, "changed_permille": self.changed_permille, "label": self.size.label()})
    }

    /// Reads the signed form ([`Correction::to_json`]).
    ///
    /// # Errors
    /// A sentence naming what is missing or malformed: no `action` (or an empty one), a
    /// `changed_permille` outside 0–1000, a `label` that is not the one it implies, another member.
    pub fn from_json(v: &Value) -> Result<Self, String> {
        let m = v.as_object().ok_or("`correction` is not an object")?;
        if let Some(k) = m.keys().find(|k| !matches!(k.as_str(), "action" | "changed_permille" | "label")) {
            return Err(format!("`correction` has an unknown member {:?}", crate::text::inert(k, 60)));
        }
        let action = m.get("action").filter(|a| !is_empty(a)).ok_or("`correction` has no `action`")?;
        let changed_permille = m
            .get("changed_permille")
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| *n <= 1000)
            .ok_or("`correction.changed_permille` is not an integer from 0 to 1000")?;
        let size = m
            .get("label")
            .and_then(Value::as_str)
            .and_then(EditSize::parse)
            .ok_or("`correction.label` is neither minor_edit nor heavy_rewrite")?;
        if size != EditSize::of_permille(changed_permille) {
            return Err(format!(
                "`correction.label` {} does not fit changed_permille {changed_permille}",
                size.label()
            ));
        }
        Ok(Correction { action: action.clone(), changed_permille, size })
    }

    /// The preconditions an approval of this correction of `packet` records and the agent's
    /// side re-checks before the call runs (lodestar-and-tiers.md §A3): for a tool call, the
    /// tool's declared preconditions over the corrected input, in the call's working directory,
    /// exactly as [`crate::calls::call_packet`] derives them for a proposed call (a corrected
    /// path is the file checked); `None` for any other packet, whose contract stands.
    #[must_use]
    pub fn preconditions(
        &self,
        packet: &Packet,
        policies: &PolicySet,
    ) -> Option<Vec<crate::ladder::ActionPrecondition>> {
        let tool = call_tool(packet)?;
        let c = crate::calls::classify_proposed(policies, &self.action, &tool)?;
        let cwd = self.action.get("cwd").and_then(Value::as_str);
        Some(crate::calls::action_preconditions(
            &c.preconditions,
            self.action.get("input").unwrap_or(&Value::Null),
            cwd,
        ))
    }
}

/// `v` as indented JSON with its object members sorted: the text corrections are sized and
/// shown in (key order is not an edit).
#[must_use]
pub fn sorted_pretty(v: &Value) -> String {
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                Value::Object(keys.into_iter().map(|k| (k.clone(), sorted(&m[k]))).collect())
            }
            Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    serde_json::to_string_pretty(&sorted(v)).unwrap_or_default()
}

/// Thousandths of the text of `before` ([`sorted_pretty`]) that `after` changed:
/// `round((1 − ratio) × 1000)` for `similar`'s similarity ratio of a character diff (a line
/// diff past [`CHAR_DIFF_BYTES`]).
#[must_use]
pub fn changed_permille(before: &Value, after: &Value) -> u32 {
    let (a, b) = (sorted_pretty(before), sorted_pretty(after));
    let mut config = similar::TextDiff::configure();
    config.algorithm(similar::Algorithm::Myers);
    let ratio = if a.len() + b.len() <= CHAR_DIFF_BYTES {
        config.diff_chars(&a, &b).ratio()
    } else {
        config.diff_lines(&a, &b).ratio()
    };
    // The ratio is in [0, 1]: the product rounds to 0..=1000.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let permille = ((1.0 - f64::from(ratio)) * 1000.0).round().clamp(0.0, 1000.0) as u32;
    permille
}

/// One line of the difference between a proposed action and its correction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiffLine {
    /// In both.
    Same(String),
    /// Only in the proposed action.
    Removed(String),
    /// Only in the correction.
    Added(String),
}

impl DiffLine {
    /// The mark a difference is shown with: ` ` in both, `-` proposed only, `+` corrected only.
    #[must_use]
    pub fn mark(&self) -> char {
        match self {
            DiffLine::Same(_) => ' ',
            DiffLine::Removed(_) => '-',
            DiffLine::Added(_) => '+',
        }
    }

    /// The line's text (as [`sorted_pretty`] wrote it, not made inert).
    #[must_use]
    pub fn text(&self) -> &str {
        match self {
            DiffLine::Same(t) | DiffLine::Removed(t) | DiffLine::Added(t) => t,
        }
    }
}

/// The whole difference between `before` and `after` as lines of [`sorted_pretty`], every line
/// of both (nothing cut: what the principal signs is what the principal saw).
#[must_use]
pub fn diff_lines(before: &Value, after: &Value) -> Vec<DiffLine> {
    let (a, b) = (sorted_pretty(before), sorted_pretty(after));
    let diff = similar::TextDiff::from_lines(&a, &b);
    diff.iter_all_changes()
        .map(|c| {
            let line = c.value().trim_end_matches('\n').to_owned();
            match c.tag() {
                similar::ChangeTag::Equal => DiffLine::Same(line),
                similar::ChangeTag::Delete => DiffLine::Removed(line),
                similar::ChangeTag::Insert => DiffLine::Added(line),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(proposed: Value, governance: Option<Value>) -> Packet {
        let mut doc = crate::packet::portable_packet(
            "p-1",
            "email.send.external",
            "scribe",
            "send",
            proposed,
            "2026-11-29T00:00:00Z",
        );
        if let Some(g) = governance {
            doc["governance"] = g;
        }
        crate::packet::parse_packet(&canonical::to_canonical_vec(&doc), "p-1").expect("packet")
    }

    #[test]
    fn an_unchanged_correction_is_an_approval_and_an_empty_or_other_shaped_one_is_refused() {
        let p = packet(json!({"to": "bob@example.com", "body": "hi"}), None);
        let policies = PolicySet::builtin();
        let same = json!({"body": "hi", "to": "bob@example.com"});
        assert_eq!(Correction::new(&p, &policies, same), Ok(None), "key order is no edit");
        for empty in [json!(null), json!({}), json!(""), json!([])] {
            assert_eq!(Correction::new(&p, &policies, empty), Err(CorrectionError::Empty));
        }
        assert!(matches!(Correction::new(&p, &policies, json!(["x"])), Err(CorrectionError::Shape { .. })));
    }

    #[test]
    fn one_recipient_is_a_minor_edit_and_a_new_text_a_heavy_rewrite() {
        let body = "Thanks for the quote; we accept the terms and will sign on Monday. ".repeat(4);
        let p = packet(json!({"to": "bob@example.com", "subject": "Quote", "body": body}), None);
        let policies = PolicySet::builtin();
        let fixed = json!({"to": "rob@example.com", "subject": "Quote", "body": body});
        let c = Correction::new(&p, &policies, fixed).expect("ok").expect("a correction");
        assert_eq!(c.size, EditSize::MinorEdit, "{c:?}");
        assert!(c.changed_permille > 0 && c.changed_permille < 50, "{c:?}");
        let rewritten = json!({"to": "bob@example.com", "subject": "No", "body": "We decline, sorry."});
        let c = Correction::new(&p, &policies, rewritten).expect("ok").expect("a correction");
        assert_eq!(c.size, EditSize::HeavyRewrite, "{c:?}");
        assert_eq!(Correction::from_json(&c.to_json()), Ok(c.clone()), "round trip");
        let mut forged = c.to_json();
        forged["label"] = json!("minor_edit");
        assert!(Correction::from_json(&forged).is_err(), "the label must fit the size");
    }

    #[test]
    fn a_tool_calls_correction_changes_its_input_only_and_keeps_its_class() {
        let call = |input: Value| json!({"tool": "Bash", "host": "claude-code", "input": input, "cwd": "/w"});
        let governance = json!({"tool": "Bash", "notebook": "nb"});
        let p = packet(call(json!({"command": "git push origin feature"})), Some(governance));
        let policies = PolicySet::builtin();
        let c = Correction::new(&p, &policies, call(json!({"command": "git push origin fix"})))
            .expect("ok")
            .expect("a correction");
        assert_eq!(c.action["input"], json!({"command": "git push origin fix"}));
        let mut moved = call(json!({"command": "git push origin feature"}));
        moved["cwd"] = json!("/elsewhere");
        assert_eq!(Correction::new(&p, &policies, moved), Err(CorrectionError::Fixed("cwd".into())));
        let mut other_tool = call(json!({"command": "git push origin feature"}));
        other_tool["tool"] = json!("Write");
        assert_eq!(Correction::new(&p, &policies, other_tool), Err(CorrectionError::Fixed("tool".into())));
        assert_eq!(Correction::new(&p, &policies, call(json!({}))), Err(CorrectionError::Empty));
        let class = Correction::new(&p, &policies, call(json!({"command": "ls"})));
        assert!(matches!(class, Err(CorrectionError::Class { .. })), "{class:?}");
    }

    #[test]
    fn the_difference_holds_every_line_of_both() {
        let before = json!({"to": "bob@example.com", "body": "a\nb"});
        let after = json!({"to": "rob@example.com", "body": "a\nb"});
        let lines = diff_lines(&before, &after);
        assert!(lines.contains(&DiffLine::Removed("  \"to\": \"bob@example.com\"".into())), "{lines:?}");
        assert!(lines.contains(&DiffLine::Added("  \"to\": \"rob@example.com\"".into())), "{lines:?}");
        let same = lines.iter().filter(|l| matches!(l, DiffLine::Same(_))).count();
        assert_eq!(same, 3, "{{, body and }}: {lines:?}");
    }

    // A refusal is never signed with a correction, and one that carries it is malformed.
    #[test]
    fn only_an_approval_carries_a_correction() {
        use crate::decision::{DecisionInput, Verdict, correction_of, sign_decision_with};
        let principal = crate::keys::Principal::from_seed("alice", &[7; 32]);
        let input = DecisionInput {
            packet_id: "p-1",
            packet_hash: "sha256:00",
            action_class: "email.send.external",
            agent: "scribe",
            trace_id: "t",
            verdict: Verdict::Approve,
            reason: None,
            decided_at: "2026-11-29T00:00:00Z",
            stands_in_for: &[],
        };
        let c = Correction::from_json(&json!({"action": {"to": "x"}, "changed_permille": 10, "label": "minor_edit"}))
            .expect("a correction");
        let approve = sign_decision_with(&principal, &input, None, None, Some(&c));
        assert_eq!(correction_of(&approve.document), Ok(Some(c.clone())));
        let refusal = DecisionInput { verdict: Verdict::Refuse, ..input.clone() };
        let refuse = sign_decision_with(&principal, &refusal, None, None, Some(&c));
        assert_eq!(refuse.document.get("correction"), None);
        let mut forged = refuse.document.clone();
        forged["correction"] = c.to_json();
        assert!(correction_of(&forged).is_err());
        let mut unknown = approve.document.clone();
        unknown["correction"]["extra"] = json!(1);
        assert!(correction_of(&unknown).is_err());
    }
}
