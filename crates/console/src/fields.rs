//! JSON values as indented key/value lines, wrapped to a width: what the packet detail and the
//! sign dialog show of a proposed action, a `governance` block or a contract.
//!
//! Pure: no theme and no state, so the dialog's layout (how many lines it has) is computed by
//! the same function in `update` and in rendering. Every key and value is made inert
//! ([`warrant_protocol::text::inert`]) before it is measured; values are never cut, only wrapped, with
//! continuation lines indented under the value, never at column 0. The fields that say where an
//! action goes ([`is_where_key`]) come first at every level of nesting.

use serde_json::Value;
use unicode_width::UnicodeWidthChar;
use warrant_protocol::text::inert;

/// One display line of a rendered value: `indent` spaces, then `key` (a `name: ` or `- ` prefix,
/// or nothing on a continuation line), then `text`. `indent` plus the widths of `key` and `text`
/// never exceed the width the lines were made for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldLine {
    /// Columns of indentation.
    pub indent: usize,
    /// The key prefix (`to: `, `- `), inert; empty on continuation lines.
    pub key: String,
    /// The value (or a piece of it), inert.
    pub text: String,
    /// The line belongs to a field that says where the action goes.
    pub important: bool,
}

impl FieldLine {
    /// The line as plain text (indentation included).
    #[must_use]
    pub fn plain(&self) -> String {
        format!("{}{}{}", " ".repeat(self.indent), self.key, self.text)
    }
}

/// The tokens of a key that say where an action goes: recipients, addresses, amounts, accounts,
/// repositories, commands.
const WHERE: [&str; 30] = [
    "recipient",
    "recipients",
    "to",
    "cc",
    "bcc",
    "url",
    "urls",
    "uri",
    "href",
    "host",
    "hostname",
    "path",
    "paths",
    "amount",
    "currency",
    "account",
    "iban",
    "repository",
    "repo",
    "branch",
    "command",
    "cmd",
    "argv",
    "payee",
    "destination",
    "dest",
    "address",
    "endpoint",
    "domain",
    "email",
];

/// Whether a key says where an action goes, case-insensitively and by its words: `to`, `To`,
/// `recipientEmail`, `amount_usd`, `target-url`, `git.branch` all do.
#[must_use]
pub fn is_where_key(key: &str) -> bool {
    let mut words: Vec<String> = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for ch in key.chars() {
        if !ch.is_alphanumeric() {
            words.push(std::mem::take(&mut cur));
            prev_lower = false;
            continue;
        }
        if ch.is_uppercase() && prev_lower {
            words.push(std::mem::take(&mut cur));
        }
        prev_lower = ch.is_lowercase() || ch.is_ascii_digit();
        cur.extend(ch.to_lowercase());
    }
    words.push(cur);
    words.iter().any(|w| WHERE.contains(&w.as_str()))
}

/// Whether a value holds a field that says where the action goes, at any depth.
fn holds_where(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.iter().any(|(k, v)| is_where_key(k) || holds_where(v)),
        Value::Array(a) => a.iter().any(holds_where),
        _ => false,
    }
}

/// An object's entries, the fields that say where the action goes first, then objects holding
/// such fields, then the rest, each group in key order.
fn ordered(m: &serde_json::Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut entries: Vec<(&String, &Value)> = m.iter().collect();
    entries.sort_by_key(|(k, v)| {
        if is_where_key(k) {
            0
        } else if holds_where(v) {
            1
        } else {
            2
        }
    });
    entries
}

/// Display width of inert text.
fn width_of(s: &str) -> usize {
    s.chars().map(|c| c.width().unwrap_or(0)).sum()
}

/// Splits inert text into pieces at most `width` columns wide (at least one character each),
/// breaking after a space when one is in the second half of the piece. Nothing is dropped:
/// the pieces concatenate to `s`.
#[must_use]
pub fn wrap(s: &str, width: usize) -> Vec<String> {
    let width = width.max(2);
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut cur_w = 0;
    for ch in s.chars() {
        let w = ch.width().unwrap_or(0);
        if cur_w + w > width && !cur.is_empty() {
            // Break after the last space if it leaves at least half a line.
            let cut = cur.rfind(' ').map(|i| i + 1).filter(|&i| width_of(&cur[..i]) * 2 >= width && i < cur.len());
            match cut {
                Some(i) => {
                    let rest = cur.split_off(i);
                    out.push(std::mem::replace(&mut cur, rest));
                    cur_w = width_of(&cur);
                }
                None => {
                    out.push(std::mem::take(&mut cur));
                    cur_w = 0;
                }
            }
        }
        cur.push(ch);
        cur_w += w;
    }
    if !cur.is_empty() || out.is_empty() {
        out.push(cur);
    }
    out
}

/// Renders values into lines.
struct Writer {
    width: usize,
    where_first: bool,
    budget: usize,
    out: Vec<FieldLine>,
    cut: bool,
}

impl Writer {
    /// An object's entries, where it goes first if asked, else in key order.
    fn ordered<'v>(&self, m: &'v serde_json::Map<String, Value>) -> Vec<(&'v String, &'v Value)> {
        if self.where_first { ordered(m) } else { m.iter().collect() }
    }

    fn full(&mut self) -> bool {
        if self.out.len() >= self.budget {
            self.cut = true;
        }
        self.cut
    }

    fn push(&mut self, indent: usize, key: String, text: String, important: bool) {
        if !self.full() {
            self.out.push(FieldLine { indent, key, text, important });
        }
    }

    /// Text after a prefix at `indent`, wrapped; continuation lines indented under the text
    /// (or two columns in, when the prefix is too wide to leave room).
    fn text(&mut self, indent: usize, key: String, text: &str, important: bool) {
        let kw = width_of(&key);
        let mut key = key;
        let mut indent = indent;
        if indent + kw + 8 > self.width {
            // A key too long to put its value beside: the key on its own lines.
            for piece in wrap(key.trim_end(), self.width.saturating_sub(indent)) {
                self.push(indent, piece, String::new(), important);
            }
            key = String::new();
            indent = (indent + 2).min(self.width / 2);
        }
        let cont = indent + width_of(&key);
        let avail = self.width.saturating_sub(cont).max(2);
        let mut first = true;
        // Multi-line strings: each line on its own, under the first; stop at the budget so a
        // body of a million short lines costs no more than it shows.
        for line in text.split('\n') {
            if self.full() {
                return;
            }
            // Within a budget, only what can be shown is made inert and wrapped.
            let room = self.budget.saturating_sub(self.out.len()).saturating_mul(avail).saturating_add(1);
            for piece in wrap(&inert(line, room), avail) {
                if first {
                    self.push(indent, std::mem::take(&mut key), piece, important);
                    first = false;
                } else {
                    self.push(cont, String::new(), piece, important);
                }
            }
        }
    }

    fn value(&mut self, indent: usize, key: String, v: &Value, important: bool) {
        if self.full() {
            return;
        }
        let indent = indent.min(self.width / 2);
        match v {
            Value::Object(m) if !m.is_empty() => {
                let bullet = key == "- ";
                let child = indent + 2;
                if !bullet {
                    self.text(indent, String::new(), &format!("{}:", key.trim_end().trim_end_matches(':')), important);
                }
                let first = self.out.len();
                for (k, v) in self.ordered(m) {
                    let imp = important || (self.where_first && is_where_key(k));
                    self.value(child, format!("{}: ", inert(k, usize::MAX)), v, imp);
                }
                // A list item that is an object: its first field on the bullet's line.
                if bullet && let Some(l) = self.out.get_mut(first) {
                    l.indent = indent;
                    l.key = format!("- {}", l.key);
                }
            }
            Value::Array(a) if !a.is_empty() => {
                if key.is_empty() || key == "- " {
                    self.text(indent, key, "", important);
                } else {
                    self.text(indent, String::new(), &format!("{}:", key.trim_end().trim_end_matches(':')), important);
                }
                for e in a {
                    self.value(indent + 2, "- ".into(), e, important);
                }
            }
            Value::Object(_) => self.text(indent, key, "{}", important),
            Value::Array(_) => self.text(indent, key, "[]", important),
            Value::String(s) if s.is_empty() => self.text(indent, key, "\"\"", important),
            Value::String(s) => self.text(indent, key, s, important),
            other => self.text(indent, key, &other.to_string(), important),
        }
    }
}

/// A value as indented, wrapped, inert lines at most `width` columns wide: an object's fields as
/// `key: value` (where it goes first), nested objects and lists indented under their key, long
/// and multi-line values continued under the value. At most `budget` lines, then a last line
/// `…` (pass `usize::MAX` for everything). With `where_first` (a proposed action), the fields
/// that say where the action goes come first at every depth and are marked important; without
/// it, keys are in order.
#[must_use]
pub fn field_lines(v: &Value, width: usize, budget: usize, where_first: bool) -> Vec<FieldLine> {
    let mut w = Writer { width: width.max(12), where_first, budget, out: Vec::new(), cut: false };
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, v) in w.ordered(m) {
                let important = where_first && is_where_key(k);
                w.value(0, format!("{}: ", inert(k, usize::MAX)), v, important);
            }
        }
        other => w.value(0, String::new(), other, false),
    }
    let mut out = w.out;
    if w.cut {
        out.push(FieldLine { indent: 0, key: String::new(), text: "…".into(), important: false });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn plain(v: &Value, width: usize) -> Vec<String> {
        field_lines(v, width, usize::MAX, true).iter().map(FieldLine::plain).collect()
    }

    #[test]
    fn where_keys_match_by_word_and_case() {
        for k in ["to", "To", "CC", "recipientEmail", "amount_usd", "target-url", "git.branch", "Repository"] {
            assert!(is_where_key(k), "{k}");
        }
        for k in ["subject", "body", "total", "topic", "title", "pathological_not"] {
            assert!(!is_where_key(k), "{k}");
        }
    }

    #[test]
    fn where_fields_come_first_and_nested_objects_indent() {
        let v = json!({"a": 1, "body": "x", "message": {"z": 1, "cc": "c@x"}, "to": "d@x"});
        assert_eq!(plain(&v, 80), ["to: d@x", "message:", "  cc: c@x", "  z: 1", "a: 1", "body: x"]);
    }

    #[test]
    fn long_values_wrap_under_their_key_and_nothing_is_lost() {
        let long = "word ".repeat(30);
        let v = json!({"subject": long, "list": ["one", {"k": "v", "to": "t"}]});
        let lines = field_lines(&v, 40, usize::MAX, true);
        for l in &lines {
            assert!(width_of(&l.plain()) <= 40, "{l:?}");
        }
        let text: Vec<String> = lines.iter().map(FieldLine::plain).collect();
        assert_eq!(text[0..4], ["list:", "  - one", "  - to: t", "    k: v"]);
        assert!(text[4].starts_with("subject: word"));
        assert!(text[5].starts_with("         word"), "{text:?}");
        let joined: String = lines[4..].iter().map(|l| l.text.clone()).collect();
        assert_eq!(joined, long);
    }

    #[test]
    fn values_stay_inert() {
        let v = json!({"to": "a\u{1b}]52;c;x\u{7}b\u{202e}", "body": "l1\nl2"});
        let text = plain(&v, 80);
        assert!(text.iter().all(|l| !l.chars().any(|c| c.is_control())), "{text:?}");
        assert_eq!(text[1..], ["body: l1", "      l2"]);
    }

    #[test]
    fn budget_stops_with_an_ellipsis() {
        let v = json!({"body": "x\n".repeat(1000)});
        let lines: Vec<String> = field_lines(&v, 80, 10, true).iter().map(FieldLine::plain).collect();
        assert_eq!(lines.len(), 11);
        assert_eq!(lines[10], "…");
    }
}
