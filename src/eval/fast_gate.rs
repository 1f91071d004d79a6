//! The fast path of `tg.can_execute`: a request in the usual shape read into typed fields and its
//! decision written straight out, with the same bytes as the general path.

use super::Evaluator;
use super::evidence::{ChainSnapshot, combined_index};
use crate::protocol::graduation::evidence::{EvidenceIndex, WireRows};
use crate::protocol::graduation::gate::{AgentStanding, GateRequest, can_execute};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::rc::Rc;
use time::OffsetDateTime;

impl Evaluator {
    /// The fast path of `tg.can_execute`: false (and nothing written) unless the line is a
    /// strict JSON object whose op is `tg.can_execute` and every member the gate reads has the
    /// shape it accepts without error, with no custom policies and no strictness to add.
    ///
    /// When the line holds the last inline evidence's text (found with a SIMD substring search),
    /// the line is read with that text replaced by `null`: if the `evidence` member is then
    /// exactly that `null`, the original line's `evidence` is exactly that text (a JSON value
    /// put in the place of another), and its index is the one kept; otherwise the line is read
    /// whole. Either way the answer is the same bytes.
    pub(super) fn fast_can_execute(&self, line: &[u8], out: &mut Vec<u8>) -> bool {
        let found = self.inline.borrow().as_ref().and_then(|c| {
            // Where the text's first bytes are (a short SIMD search), the whole text compared.
            let at = c.finder.as_ref()?.find_iter(line).find(|&at| line[at..].starts_with(c.text.as_bytes()))?;
            Some((at, c.text.len()))
        });
        if let Some((at, len)) = found {
            let mut spliced = Vec::with_capacity(line.len() + 4 - len);
            spliced.extend_from_slice(&line[..at]);
            spliced.extend_from_slice(b"null");
            spliced.extend_from_slice(&line[at + len..]);
            if let Some(answered) = self.fast_gate(&spliced, Some(at), out) {
                return answered;
            }
        }
        self.fast_gate(line, None, out).unwrap_or(false)
    }

    /// [`Evaluator::fast_can_execute`] on `line`, or on a line whose inline evidence was
    /// replaced by `null` at `spliced_at`: `None` when that `null` is not the `evidence` member
    /// (or that line is refused: the original is then read whole).
    fn fast_gate(&self, line: &[u8], spliced_at: Option<usize>, out: &mut Vec<u8>) -> Option<bool> {
        use serde::Deserializer as _;
        let refuse = if spliced_at.is_some() { None } else { Some(false) };
        let mut de = serde_json::Deserializer::from_slice(line);
        let Ok(g) = (&mut de).deserialize_map(FastGateVisitor) else { return refuse };
        if de.end().is_err() || !g.op {
            return refuse;
        }
        // The inline evidence's text and where it starts (a slice of `line`: its offset).
        let evidence =
            g.evidence.map(|raw| (raw.get(), (raw.get().as_ptr() as usize).wrapping_sub(line.as_ptr() as usize)));
        if let Some(at) = spliced_at
            && evidence != Some(("null", at))
        {
            return None;
        }
        // An integer outside 64 bits is refused by `parse_untrusted` on the general path; the
        // inline evidence's text is checked when it is read (below), the rest of the line here.
        let rest_ok = match evidence {
            None => crate::protocol::canonical::check_integer_literals(line).is_ok(),
            Some((text, start)) => {
                line.get(..start).zip(line.get(start + text.len()..)).is_some_and(|(before, after)| {
                    crate::protocol::canonical::check_integer_literals(before).is_ok()
                        && crate::protocol::canonical::check_integer_literals(after).is_ok()
                })
            }
        };
        if !rest_ok {
            return refuse;
        }
        let Some(class) = g.action_class.as_deref().or(g.action_class_camel.as_deref()) else { return refuse };
        if !request_class_ok(class) || g.policies || (g.strict == Some(true) && !self.policies.strict) {
            return refuse;
        }
        let chain = self.chain_evidence();
        let inline;
        let read = match evidence {
            // No rows: the chain's alone, borrowed.
            Some(("null" | "[]", _)) if spliced_at.is_none() => None,
            None => None,
            Some(_) if spliced_at.is_some() => Some(self.kept_inline_index(chain.as_ref())),
            Some((text, _)) => Some(self.inline_index(text, chain.as_ref())),
        };
        let index = match read {
            None => combined_index(chain.as_deref(), None),
            Some(Some(i)) => {
                inline = i;
                Cow::Borrowed(&*inline)
            }
            Some(None) => return refuse,
        };
        let empty = Value::Object(Map::new());
        let context = match &g.context {
            None | Some(Value::Null) => &empty,
            Some(c @ Value::Object(_)) => c,
            Some(_) => return refuse,
        };
        let approval = match &g.approval {
            None | Some(Value::Null) => None,
            Some(a @ Value::Object(_)) => Some(a),
            Some(_) => return refuse,
        };
        let agent = match g.agent_status.as_deref().map(AgentStanding::parse) {
            None => AgentStanding::Active,
            Some(Some(a)) => a,
            Some(None) => return refuse,
        };
        let now = match &g.now {
            None | Some(None) => OffsetDateTime::now_utc(),
            Some(Some(s)) => match crate::protocol::clock::parse_rfc3339(s) {
                Some(t) => t,
                None => return refuse,
            },
        };
        let req = GateRequest {
            action_class: class,
            context,
            approval,
            evidence: &index,
            workspace: g.workspace.as_deref().unwrap_or("local"),
            now,
            agent,
            chain_intact: g.chain_intact.unwrap_or(true) && chain.as_ref().is_none_or(|c| c.broken.is_none()),
        };
        Some(can_execute(&self.policies, &req).write_json(g.id.as_ref(), out).is_ok())
    }

    /// The index of a request's inline evidence `text` (its JSON text: `null` or an array of
    /// rows) added to the chain's: the last one again when `text` is byte for byte the last
    /// text read against the same chain snapshot (the same rows, read and checked the same way),
    /// else read strictly ([`WireRows`]: any row the general path would refuse, a duplicate key
    /// or an integer outside 64 bits gives `None`, and the general path answers) and kept.
    fn inline_index(&self, text: &str, chain: Option<&Rc<ChainSnapshot>>) -> Option<Rc<EvidenceIndex>> {
        let mut cache = self.inline.borrow_mut();
        if let Some(c) = cache.as_mut()
            && c.text == text
            && same_snapshot(c.chain.as_ref(), chain)
        {
            // The text came twice: it is searched for in the next lines from now on (short
            // texts are read quickly anyway, and could be found where they are not the
            // evidence, a `[]` in the context).
            if c.finder.is_none() && c.text.len() >= SEARCHED_TEXT {
                c.finder = Some(memchr::memmem::Finder::new(&c.text.as_bytes()[..SEARCHED_TEXT]).into_owned());
            }
            return Some(Rc::clone(&c.index));
        }
        crate::protocol::canonical::check_integer_literals(text.as_bytes()).ok()?;
        let WireRows(rows) = serde_json::from_str(text).ok()?;
        let index = Rc::new(combined_index(chain.map(Rc::as_ref), Some(&rows)).into_owned());
        *cache = Some(InlineEvidence {
            text: text.to_owned(),
            finder: None,
            chain: chain.cloned(),
            index: Rc::clone(&index),
        });
        Some(index)
    }

    /// The kept inline evidence's index against `chain` (its text read again when the chain
    /// snapshot changed since).
    fn kept_inline_index(&self, chain: Option<&Rc<ChainSnapshot>>) -> Option<Rc<EvidenceIndex>> {
        let text = {
            let cache = self.inline.borrow();
            let kept = cache.as_ref()?;
            if same_snapshot(kept.chain.as_ref(), chain) {
                return Some(Rc::clone(&kept.index));
            }
            kept.text.clone()
        };
        self.inline_index(&text, chain)
    }
}

/// The last inline evidence an [`Evaluator`] read: its JSON text, the chain snapshot it was
/// added to, and the index of both.
pub(super) struct InlineEvidence {
    text: String,
    /// A search for the first [`SEARCHED_TEXT`] bytes of `text`, made once the text came twice
    /// (when it is at least that long).
    finder: Option<memchr::memmem::Finder<'static>>,
    chain: Option<Rc<ChainSnapshot>>,
    index: Rc<EvidenceIndex>,
}

/// Whether two chain snapshots are the same one (or both absent).
fn same_snapshot(a: Option<&Rc<ChainSnapshot>>, b: Option<&Rc<ChainSnapshot>>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => Rc::ptr_eq(a, b),
        _ => false,
    }
}

/// The shortest inline evidence text searched for in the next lines, and how much of it is
/// searched for before the rest is compared (bytes).
const SEARCHED_TEXT: usize = 64;

/// True when `class` normalizes to a class id (the check `gate` makes first), without
/// allocating for an id already made of `[a-z0-9.]`.
fn request_class_ok(class: &str) -> bool {
    if class.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.') {
        crate::protocol::packet::is_class_id(class)
            || crate::protocol::registry::ALIASES.iter().any(|(alias, _)| *alias == class)
    } else {
        crate::protocol::packet::is_class_id(&crate::protocol::registry::normalize(class))
    }
}

/// The members of a `tg.can_execute` request, read strictly (duplicate keys anywhere are an
/// error, as in [`crate::protocol::canonical::parse_strict`]); strings are borrowed from the line when
/// they have no escapes.
#[derive(Default)]
struct FastGate<'de> {
    op: bool,
    id: Option<Value>,
    action_class: Option<Cow<'de, str>>,
    action_class_camel: Option<Cow<'de, str>>,
    context: Option<Value>,
    approval: Option<Value>,
    /// The inline evidence's JSON text, read into rows by [`Evaluator::inline_index`].
    evidence: Option<&'de RawValue>,
    agent_status: Option<Cow<'de, str>>,
    chain_intact: Option<bool>,
    workspace: Option<Cow<'de, str>>,
    now: Option<Option<Cow<'de, str>>>,
    policies: bool,
    strict: Option<bool>,
}

struct FastGateVisitor;

impl<'de> serde::de::Visitor<'de> for FastGateVisitor {
    type Value = FastGate<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a tg.can_execute request")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<FastGate<'de>, A::Error> {
        use crate::protocol::canonical::{StrictValue, Text};
        use serde::de::Error as _;
        let mut g = FastGate::default();
        let mut seen = 0u32;
        let mut others: Vec<Cow<'de, str>> = Vec::new();
        while let Some(Text(key)) = map.next_key::<Text<'de>>()? {
            let bit = match key.as_ref() {
                "op" => 1,
                "id" => 1 << 1,
                "action_class" => 1 << 2,
                "actionClass" => 1 << 3,
                "context" => 1 << 4,
                "approval" => 1 << 5,
                "evidence" => 1 << 6,
                "agent_status" => 1 << 7,
                "chain_intact" => 1 << 8,
                "workspace" => 1 << 9,
                "now" => 1 << 10,
                "policies" => 1 << 11,
                "strict" => 1 << 12,
                _ => 0,
            };
            if bit == 0 {
                if others.contains(&key) {
                    return Err(A::Error::custom("duplicate key"));
                }
                let StrictValue(_) = map.next_value()?;
                others.push(key);
                continue;
            }
            if seen & bit != 0 {
                return Err(A::Error::custom("duplicate key"));
            }
            seen |= bit;
            match key.as_ref() {
                "op" => {
                    let Text(op) = map.next_value()?;
                    if op != "tg.can_execute" {
                        return Err(A::Error::custom("another op"));
                    }
                    g.op = true;
                }
                "id" => g.id = Some(map.next_value::<StrictValue>()?.0),
                "action_class" => g.action_class = Some(map.next_value::<Text<'de>>()?.0),
                "actionClass" => g.action_class_camel = Some(map.next_value::<Text<'de>>()?.0),
                "context" => g.context = Some(map.next_value::<StrictValue>()?.0),
                "approval" => g.approval = Some(map.next_value::<StrictValue>()?.0),
                "evidence" => g.evidence = Some(map.next_value::<&'de RawValue>()?),
                "agent_status" => g.agent_status = Some(map.next_value::<Text<'de>>()?.0),
                "chain_intact" => g.chain_intact = Some(map.next_value()?),
                "workspace" => g.workspace = Some(map.next_value::<Text<'de>>()?.0),
                "now" => g.now = Some(map.next_value::<Option<Text<'de>>>()?.map(|t| t.0)),
                "policies" => {
                    g.policies = match map.next_value::<StrictValue>()?.0 {
                        Value::Null => false,
                        Value::Array(p) => !p.is_empty(),
                        _ => true,
                    }
                }
                _ => g.strict = Some(map.next_value()?),
            }
        }
        Ok(g)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::graduation::policy::PolicySet;

    /// The inline evidence is read once while its text repeats against the same chain
    /// snapshot, read again when the text or the snapshot changes, and a text the strict reader
    /// refuses (a duplicate key, an integer outside 64 bits) is never kept.
    #[test]
    fn inline_evidence_is_read_once_while_its_text_repeats() {
        let e = Evaluator::default();
        let a = r#"[{"action_class":"draft.response","label":"approved","source_type":"receipt"}]"#;
        let b = r#"[{"action_class":"draft.response","label":"rejected","source_type":"receipt"}]"#;
        let first = e.inline_index(a, None).expect("rows");
        assert!(Rc::ptr_eq(&first, &e.inline_index(a, None).expect("rows")), "read again");
        let other = e.inline_index(b, None).expect("rows");
        assert!(!Rc::ptr_eq(&first, &other));
        assert_eq!((other.summary("draft.response").rejections, first.summary("draft.response").approvals), (1, 1));
        // Another chain snapshot (the chain changed): the rows are added to it anew.
        let chain = Rc::new(ChainSnapshot::default());
        let on_chain = e.inline_index(b, Some(&chain)).expect("rows");
        assert!(!Rc::ptr_eq(&other, &on_chain));
        assert!(Rc::ptr_eq(&on_chain, &e.inline_index(b, Some(&chain)).expect("rows")));
        assert!(!Rc::ptr_eq(&on_chain, &e.inline_index(b, Some(&Rc::new(ChainSnapshot::default()))).expect("rows")));
        for refused in [
            r#"[{"action_class":"draft.response","label":"x","label":"y"}]"#,
            r#"[{"action_class":"draft.response","label":"approved","n":123456789012345678901234}]"#,
            r#"{"action_class":"draft.response","label":"approved"}"#,
        ] {
            assert!(e.inline_index(refused, None).is_none(), "{refused}");
            assert!(e.inline_index(refused, None).is_none(), "{refused}, again");
        }
    }

    /// `respond` (typed fast path for `tg.can_execute`) gives the same bytes as serializing
    /// `handle_line` (the general path) for well-formed, unusual and malformed requests alike.
    #[test]
    fn respond_matches_the_general_path_byte_for_byte() {
        let strict = Evaluator::new(PolicySet::from_toml("strict = true").expect("policy"));
        let rows =
            r#"[{"action_class":"draft.response","label":"approved","source_type":"receipt","date":"2026-11-01"},
            {"actionClass":"draft.response","type":"minor edit","sourceType":"connector","editDistance":0.1},
            {"action_class":"email.send.external","label":"rejected","source_type":"principal"},
            {"action_class":"draft.response","label":"Sent","source":"tr\u0061cker","receipt_id":null,"flag":true,
             "meta":{"a":[1,{"b":2}]},"decision_weight":1,"provenance_weight":0.5,"recordedAt":"2026-11-02T10:00:00Z"},
            {"action_class":"draft_response","event_type":"trust_issue","evidence_weight":-3,"sourceType":"model_inferred"}]"#
                .replace('\n', "");
        let lines = [
            r#"{"op":"tg.can_execute","id":1,"action_class":"draft.response","now":"2026-11-21T09:00:00Z"}"#.to_owned(),
            format!(r#"{{"op":"tg.can_execute","id":"x","action_class":"draft.response","now":"2026-11-21T09:00:00Z","evidence":{rows}}}"#),
            format!(r#"{{"id":[1,{{"a":null}}],"evidence":{rows},"actionClass":"email.send.external","op":"tg.can_execute","now":"2026-11-21T09:00:00.5Z","context":{{"requestedBy":"sc\u0072ibe","target":"a@b.c","nonce":"n-1"}}}}"#),
            r#"{"op":"tg.can_execute","action_class":"email.send.internal","context":{"constraints":{"max_amount":5,"domain_allowlist":["x.com"]}},"now":"2026-11-21T09:00:00Z","workspace":"w","agent_status":"active","chain_intact":true,"strict":false,"policies":[],"summary":"ignored"}"#.to_owned(),
            r#"{"op":"tg.can_execute","id":null,"action_class":"Draft_Response","now":"2026-11-21T09:00:00Z","approval":null,"context":null}"#.to_owned(),
            r#"{"op":"tg.can_execute","id":2,"action_class":"widget.thing","now":"2026-11-21T09:00:00Z","agent_status":"quarantined","chain_intact":false}"#.to_owned(),
            r#"{"op":"tg.can_execute","id":3,"action_class":"payment.spend","now":"2026-11-21T09:00:00Z","approval":{"state":"approved"}}"#.to_owned(),
            r#"{"op":"tg.can_execute","id":4,"action_class":"calendar.create","now":"2026-11-21T09:00:00Z","context":{"approvalState":"approved","asynchronousApproval":1}}"#.to_owned(),
            // Requests the fast path leaves to the general one (errors, other ops, oddities).
            r#"{"op":"tg.can_execute","now":"2026-11-21T09:00:00Z","id":5,"action_class":"draft.response","action_class":"x.y"}"#.to_owned(),
            r#"{"op":"tg.can_execute","now":"2026-11-21T09:00:00Z","id":6,"action_class":"draft.response","context":{"a":1,"a":2}}"#.to_owned(),
            r#"{"op":"tg.can_execute","now":"2026-11-21T09:00:00Z","id":7,"action_class":"draft.response","extra":{"b":1,"b":1}}"#.to_owned(),
            r#"{"op":"tg.can_execute","now":"2026-11-21T09:00:00Z","id":8,"action_class":"draft.response","x":1,"x":1}"#.to_owned(),
            r#"{"op":"tg.can_execute","now":"2026-11-21T09:00:00Z","id":9,"action_class":7}"#.to_owned(),
            r#"{"op":"tg.can_execute","now":"2026-11-21T09:00:00Z","id":10,"action_class":"nope"}"#.to_owned(),
            r#"{"op":"tg.can_execute","id":11,"action_class":"draft.response","now":"yesterday"}"#.to_owned(),
            r#"{"op":"tg.can_execute","now":"2026-11-21T09:00:00Z","id":12,"action_class":"draft.response","chain_intact":null}"#.to_owned(),
            r#"{"op":"tg.can_execute","now":"2026-11-21T09:00:00Z","id":13,"action_class":"draft.response","agent_status":"asleep"}"#.to_owned(),
            r#"{"op":"tg.can_execute","now":"2026-11-21T09:00:00Z","id":14,"action_class":"draft.response","evidence":[{"label":"approved"}]}"#.to_owned(),
            r#"{"op":"tg.can_execute","now":"2026-11-21T09:00:00Z","id":21,"action_class":"a.b","evidence":[{"action_class":"a.b","label":"x","label":"y"}]}"#.to_owned(),
            r#"{"op":"tg.can_execute","now":"2026-11-21T09:00:00Z","id":22,"action_class":"a.b","evidence":[{"action_class":"a.b","label":"x","m":{"c":1,"c":2}}]}"#.to_owned(),
            r#"{"op":"tg.can_execute","now":"2026-11-21T09:00:00Z","id":23,"action_class":"a.b","evidence":[{"action_class":"a.b","label":"x","evidence_weight":"1"}]}"#.to_owned(),
            r#"{"op":"tg.can_execute","now":"2026-11-21T09:00:00Z","id":24,"action_class":"a.b","evidence":[{"action_class":"a.b","label":"x","date":"2026-02-30"}]}"#.to_owned(),
            r#"{"op":"tg.can_execute","now":"2026-11-21T09:00:00Z","id":25,"action_class":"a.b","evidence":{"action_class":"a.b"}}"#.to_owned(),
            r#"{"op":"tg.can_execute","now":"2026-11-21T09:00:00Z","id":26,"action_class":"a.b","evidence":[7]}"#.to_owned(),
            r#"{"op":"tg.can_execute","now":"2026-11-21T09:00:00Z","id":15,"action_class":"draft.response","context":[1]}"#.to_owned(),
            r#"{"op":"tg.can_execute","now":"2026-11-21T09:00:00Z","id":16,"action_class":"widget.thing","strict":true}"#.to_owned(),
            r#"{"op":"tg.can_execute","id":17,"action_class":"draft.response","policies":[{"actionClass":"draft.response","riskClass":"high"}],"now":"2026-11-21T09:00:00Z"}"#.to_owned(),
            r#"{"op":"tg.can_execute","now":"2026-11-21T09:00:00Z","id":18,"action_class":"draft.response"} trailing"#.to_owned(),
            r#"{"op":"tg.posterior","id":19,"action_class":"draft.response","now":"2026-11-21T09:00:00Z"}"#.to_owned(),
            r#"{"id":20,"action_class":"draft.response"}"#.to_owned(),
            r#"[1,2]"#.to_owned(),
            "{nope".to_owned(),
            // The last inline evidence's text again, where it is not (only) the evidence: the
            // line with it replaced by `null` is not read as that evidence.
            format!(r#"{{"op":"tg.can_execute","id":30,"action_class":"draft.response","now":"2026-11-21T09:00:00Z","evidence":{rows}}}"#),
            format!(r#"{{"op":"tg.can_execute","id":31,"action_class":"draft.response","context":{{"x":{rows}}},"now":"2026-11-21T09:00:00Z","evidence":[]}}"#),
            format!(r#"{{"op":"tg.can_execute","id":32,"action_class":"draft.response","context":{{"x":{rows}}},"now":"2026-11-21T09:00:00Z","evidence":{rows}}}"#),
            format!(r#"{{"op":"tg.can_execute","id":33,"evidence":{rows},"action_class":"draft.response","context":{{"x":{rows}}},"now":"2026-11-21T09:00:00Z"}}"#),
            format!(r#"{{"op":"tg.can_execute","id":34,"evidence":{rows},"action_class":"draft.response","now":"2026-11-21T09:00:00Z","evidence":{rows}}}"#),
        ];
        for e in [Evaluator::default(), strict] {
            for line in &lines {
                let mut got = Vec::new();
                e.respond(line.as_bytes(), &mut got);
                let mut want = serde_json::to_vec(&e.handle_line(line.as_bytes())).expect("json");
                want.push(b'\n');
                assert_eq!(String::from_utf8_lossy(&got), String::from_utf8_lossy(&want), "{line}");
            }
        }
        // The fast path answered the well-formed requests (it is not vacuous)…
        let mut out = Vec::new();
        assert!(Evaluator::default().fast_can_execute(lines[1].as_bytes(), &mut out));
        assert!(Evaluator::default().fast_can_execute(lines[2].as_bytes(), &mut out));
        // Lines that hold the kept evidence's text, answered on the fast path: as evidence
        // (read through the line with it replaced by `null`), elsewhere, or both.
        let e = Evaluator::default();
        let n = lines.len();
        for line in &lines[n - 5..n - 1] {
            assert!(e.fast_can_execute(line.as_bytes(), &mut out), "{line}");
        }
        // A duplicate `evidence` member is refused even when it is the kept text.
        assert!(!e.fast_can_execute(lines[n - 1].as_bytes(), &mut out));
        // …and declined every request with a duplicate key, which only the general path reports.
        for line in lines.iter().filter(|l| l.contains("\"action_class\":\"a.b\"")).chain(&lines[8..12]) {
            assert!(!Evaluator::default().fast_can_execute(line.as_bytes(), &mut out), "{line}");
        }
    }
}
