//! The fast path of `tg.can_execute`: a request in the usual shape read into typed fields and its
//! decision written straight out, with the same bytes as the general path.

use super::Evaluator;
use super::evidence::{ChainSnapshot, combined_index};
use crate::protocol::graduation::evidence::{EvidenceIndex, WireIndex};
use crate::protocol::graduation::gate::{AgentStanding, GateRequest, can_execute};
use serde::de::DeserializeSeed as _;
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
    ///
    /// The line is read once: its inline evidence rows are counted into (a copy of) the chain's
    /// index as they are read ([`WireIndex`]), and the evidence's text is found from where the
    /// members around it are ([`evidence_span`]), to be kept for the next lines.
    fn fast_gate(&self, line: &[u8], spliced_at: Option<usize>, out: &mut Vec<u8>) -> Option<bool> {
        use serde::Deserializer as _;
        let refuse = if spliced_at.is_some() { None } else { Some(false) };
        let chain = self.chain_evidence();
        let base = chain.as_ref().map(|c| &c.index);
        // UTF-8 checked once for the line, not string by string as the reader of bytes does.
        let Ok(text) = std::str::from_utf8(line) else { return refuse };
        let mut de = serde_json::Deserializer::from_str(text);
        let Ok(g) = (&mut de).deserialize_map(FastGateVisitor { base }) else { return refuse };
        if de.end().is_err() || !g.op {
            return refuse;
        }
        // The inline evidence's text and where it starts in `line`, when the members around it
        // say where it is.
        let span = g.evidence.as_ref().and_then(|e| evidence_span(line, e.after_key, e.next_key));
        if let Some(at) = spliced_at
            && span.map(|(start, text)| (text, start)) != Some((&b"null"[..], at))
        {
            return None;
        }
        // An integer outside 64 bits is refused by `parse_untrusted` on the general path; the
        // kept evidence's text (spliced out) was checked when it was first read.
        if crate::protocol::canonical::check_integer_literals(line).is_err() {
            return refuse;
        }
        let Some(class) = g.action_class.as_deref().or(g.action_class_camel.as_deref()) else { return refuse };
        if !request_class_ok(class) || g.policies || (g.strict == Some(true) && !self.policies.strict) {
            return refuse;
        }
        let kept;
        let index = match (spliced_at, g.evidence) {
            (Some(_), _) => {
                kept = self.kept_inline_index(chain.as_ref())?;
                Cow::Borrowed(&*kept)
            }
            (None, Some(InlineRead { index: Some(index), .. })) if index.len() > base.map_or(0, EvidenceIndex::len) => {
                let index = Rc::new(index);
                if let Some((_, text)) = span {
                    self.keep_inline(text, chain.as_ref(), &index);
                }
                kept = index;
                Cow::Borrowed(&*kept)
            }
            // No rows: the chain's alone, borrowed.
            (None, _) => combined_index(chain.as_deref(), None),
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

    /// Keeps `index`, the index of the inline evidence `text` (JSON, read strictly and checked)
    /// added to `chain`'s, for the next lines: when `text` is the one kept already, it came
    /// twice and is searched for in the next lines from now on (short texts are read quickly
    /// anyway, and could be found where they are not the evidence, a `[]` in the context).
    fn keep_inline(&self, text: &[u8], chain: Option<&Rc<ChainSnapshot>>, index: &Rc<EvidenceIndex>) {
        let mut cache = self.inline.borrow_mut();
        if let Some(c) = cache.as_mut()
            && c.text.as_bytes() == text
            && same_snapshot(c.chain.as_ref(), chain)
        {
            if c.finder.is_none() && c.text.len() >= SEARCHED_TEXT {
                c.finder = Some(memchr::memmem::Finder::new(&c.text.as_bytes()[..SEARCHED_TEXT]).into_owned());
            }
            return;
        }
        // The text is a slice of a line read as UTF-8 JSON (serde_json checked every byte).
        let Ok(text) = std::str::from_utf8(text) else { return };
        *cache = Some(InlineEvidence {
            text: text.to_owned(),
            finder: None,
            chain: chain.cloned(),
            index: Rc::clone(index),
        });
    }

    /// The index of a request's inline evidence `text` (its JSON text: `null` or an array of
    /// rows) added to the chain's: the last one again when `text` is byte for byte the last
    /// text kept against the same chain snapshot, else read strictly ([`WireIndex`]: any row the
    /// general path would refuse, a duplicate key or an integer outside 64 bits gives `None`)
    /// and kept.
    fn inline_index(&self, text: &str, chain: Option<&Rc<ChainSnapshot>>) -> Option<Rc<EvidenceIndex>> {
        {
            let cache = self.inline.borrow();
            if let Some(c) = cache.as_ref()
                && c.text == text
                && same_snapshot(c.chain.as_ref(), chain)
            {
                return Some(Rc::clone(&c.index));
            }
        }
        crate::protocol::canonical::check_integer_literals(text.as_bytes()).ok()?;
        // The rows are counted into (a copy of) the chain's index as they are read.
        let mut index = None;
        let mut de = serde_json::Deserializer::from_str(text);
        WireIndex { base: chain.map(|c| &c.index), index: &mut index }.deserialize(&mut de).ok()?;
        de.end().ok()?;
        let index = Rc::new(index.unwrap_or_else(|| combined_index(chain.map(Rc::as_ref), None).into_owned()));
        self.keep_inline(text.as_bytes(), chain, &index);
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

/// Where the `evidence` member's value is in `line`, and its text: found from the address just
/// past the member's key (its closing quote) and the address of the next member's key (its
/// opening quote), or `None` for the next when it is the last member. JSON puts only
/// whitespace and a `:` between a key and its value, and only whitespace and a `,` (or the
/// object's closing `}`, the line's last byte but whitespace) after it, so the value is what is
/// left between them. `None` when an address is not in `line`.
fn evidence_span(line: &[u8], after_key: usize, next_key: Option<usize>) -> Option<(usize, &[u8])> {
    let base = line.as_ptr() as usize;
    let is_ws = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r');
    let mut start = after_key.checked_sub(base).filter(|&s| s <= line.len())?;
    let mut end = match next_key {
        Some(at) => at.checked_sub(base).filter(|&e| e <= line.len() && e >= start)?,
        None => line.iter().rposition(|b| !is_ws(b)).filter(|&e| line[e] == b'}' && e >= start)?,
    };
    while start < end && is_ws(&line[start]) {
        start += 1;
    }
    if line.get(start) != Some(&b':') {
        return None;
    }
    start += 1;
    while start < end && is_ws(&line[start]) {
        start += 1;
    }
    while end > start && is_ws(&line[end - 1]) {
        end -= 1;
    }
    if next_key.is_some() {
        if end == start || line[end - 1] != b',' {
            return None;
        }
        end -= 1;
        while end > start && is_ws(&line[end - 1]) {
            end -= 1;
        }
    }
    (end > start).then(|| (start, &line[start..end]))
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
    evidence: Option<InlineRead>,
    agent_status: Option<Cow<'de, str>>,
    chain_intact: Option<bool>,
    workspace: Option<Cow<'de, str>>,
    now: Option<Option<Cow<'de, str>>>,
    policies: bool,
    strict: Option<bool>,
}

/// The `evidence` member as read: its rows counted into a copy of the chain's index (`None`
/// for `null`), and the addresses that say where its text is ([`evidence_span`]).
struct InlineRead {
    index: Option<EvidenceIndex>,
    /// The address just past the member's key (its closing quote); 0 when the key had escapes
    /// (a copy, not in the line).
    after_key: usize,
    /// The address of the next member's key (its opening quote), `None` when this is the last
    /// member; `Some(0)` when that key had escapes.
    next_key: Option<usize>,
}

/// Reads a [`FastGate`]; the `evidence` rows are counted into a copy of `base` (the chain's
/// index, or none).
struct FastGateVisitor<'b> {
    base: Option<&'b EvidenceIndex>,
}

/// The address just past a key borrowed from the line (its closing quote), or of its opening
/// quote; 0 for a key with escapes, which was copied out of the line.
#[expect(clippy::ptr_arg, reason = "whether the key was borrowed from the line is what is asked")]
fn key_address(key: &Cow<'_, str>, past: bool) -> usize {
    match key {
        Cow::Borrowed(k) if past => k.as_ptr() as usize + k.len() + 1,
        Cow::Borrowed(k) => (k.as_ptr() as usize).wrapping_sub(1),
        Cow::Owned(_) => 0,
    }
}

impl<'de> serde::de::Visitor<'de> for FastGateVisitor<'_> {
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
        // The member after `evidence` says where its text ends.
        let mut evidence_just_read = false;
        while let Some(Text(key)) = map.next_key::<Text<'de>>()? {
            if evidence_just_read && let Some(e) = g.evidence.as_mut() {
                e.next_key = Some(key_address(&key, false));
            }
            evidence_just_read = false;
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
                "evidence" => {
                    // Rows the general path would refuse make this an error: it answers them.
                    let mut index = None;
                    map.next_value_seed(WireIndex { base: self.base, index: &mut index })?;
                    g.evidence = Some(InlineRead { index, after_key: key_address(&key, true), next_key: None });
                    evidence_just_read = true;
                }
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
            // Whitespace around the evidence, escaped keys around it, and the evidence last.
            format!("{{ \"op\" : \"tg.can_execute\" ,\t\"evidence\" :\r\n {rows} \n, \"id\":35, \"action_class\":\"draft.response\",\"now\":\"2026-11-21T09:00:00Z\"}}"),
            format!(r#"{{"op":"tg.can_execute","id":36,"evid\u0065nce":{rows},"action_class":"draft.response","now":"2026-11-21T09:00:00Z"}}"#),
            format!(r#"{{"op":"tg.can_execute","id":37,"evidence":{rows},"acti\u006fn_class":"draft.response","now":"2026-11-21T09:00:00Z"}}"#),
            format!("{{\"op\":\"tg.can_execute\",\"id\":38,\"action_class\":\"draft.response\",\"now\":\"2026-11-21T09:00:00Z\",\"evidence\": {rows} }}  "),
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
        for line in &lines[n - 9..n - 5] {
            assert!(e.fast_can_execute(line.as_bytes(), &mut out), "{line}");
        }
        // A duplicate `evidence` member is refused even when it is the kept text.
        let n = n - 4;
        assert!(!e.fast_can_execute(lines[n - 1].as_bytes(), &mut out));
        // …and declined every request with a duplicate key, which only the general path reports.
        for line in lines.iter().filter(|l| l.contains("\"action_class\":\"a.b\"")).chain(&lines[8..12]) {
            assert!(!Evaluator::default().fast_can_execute(line.as_bytes(), &mut out), "{line}");
        }
    }

    /// The evidence's text is found exactly, wherever the member is and whatever whitespace is
    /// around it, and not at all when a key next to it had escapes (it was copied out of the
    /// line): that line is read, its evidence not kept.
    #[test]
    fn the_evidence_text_is_found_between_its_neighbours() {
        use serde::Deserializer as _;
        let rows = r#"[{"action_class":"draft.response","label":"approved"}, {"action_class":"a.b","label":"sent"}]"#;
        let span_of = |line: &str| {
            let mut de = serde_json::Deserializer::from_slice(line.as_bytes());
            let g = (&mut de).deserialize_map(FastGateVisitor { base: None }).expect("a request");
            de.end().expect("one object");
            let e = g.evidence.expect("evidence");
            assert_eq!(e.index.map(|i| i.len()), (!line.contains("null")).then_some(2), "{line}");
            evidence_span(line.as_bytes(), e.after_key, e.next_key).map(|(at, text)| {
                assert_eq!(&line.as_bytes()[at..at + text.len()], text);
                String::from_utf8(text.to_vec()).expect("UTF-8")
            })
        };
        for line in [
            format!(r#"{{"evidence":{rows}}}"#),
            format!("{{\"evidence\"\t:\n{rows}\r\n}} \n"),
            format!(r#"{{"op":"tg.can_execute","evidence" : {rows} , "id":1}}"#),
            format!(r#"{{"evidence":{rows},"x":{{"evidence":[]}}}}"#),
            format!(r#"{{"a":"b","evidence":{rows}  }}"#),
        ] {
            assert_eq!(span_of(&line).as_deref(), Some(rows), "{line}");
        }
        assert_eq!(span_of(r#"{"evidence":null,"a":1}"#).as_deref(), Some("null"));
        for line in [format!(r#"{{"evid\u0065nce":{rows},"a":1}}"#), format!(r#"{{"evidence":{rows},"\u0061":1}}"#)] {
            assert_eq!(span_of(&line), None, "{line}");
        }
        // A line whose evidence has whitespace around it keeps the evidence's text alone; the
        // second line carrying it makes it searched for, and the third is answered from what was
        // kept (through the line with the text replaced by `null`).
        let e = Evaluator::default();
        let mut out = Vec::new();
        // Long enough to be searched for (`SEARCHED_TEXT`).
        let rows = format!("[{}]", [r#"{"action_class":"draft.response","label":"approved"}"#; 4].join(","));
        let line = |id: u32| {
            format!(
                r#"{{"op":"tg.can_execute","id":{id},"evidence" :  {rows}  ,"action_class":"draft.response","now":"2026-11-21T09:00:00Z"}}"#
            )
        };
        assert!(e.fast_can_execute(line(1).as_bytes(), &mut out));
        assert_eq!(e.inline.borrow().as_ref().map(|c| c.text.clone()), Some(rows.clone()));
        let kept = Rc::clone(&e.inline.borrow().as_ref().expect("kept").index);
        assert_eq!(kept.len(), 4);
        assert!(e.fast_can_execute(line(2).as_bytes(), &mut out));
        assert!(e.inline.borrow().as_ref().is_some_and(|c| c.finder.is_some()), "not searched for");
        let spliced = line(3).replace(&rows, "null");
        assert_eq!(e.fast_gate(spliced.as_bytes(), spliced.find("null"), &mut out), Some(true));
        assert!(Rc::ptr_eq(&kept, &e.inline.borrow().as_ref().expect("kept").index));
    }
}
