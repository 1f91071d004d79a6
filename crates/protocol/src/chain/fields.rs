//! A record's top-level fields as the checks read them: from a parsed `Map`, straight from a
//! canonical line's bytes ([`RawFields`]), or the three ids the sequential checks read ([`IdFields`]).

use super::RECORD_KEYS;
use crate::canonical;
use serde_json::{Map, Value};

/// A top-level field of a record as the shape checks read it.
pub(super) enum FieldRef<'a> {
    /// A JSON string.
    Str(std::borrow::Cow<'a, str>),
    /// `null`.
    Null,
    /// A non-negative integer within `u64`.
    U64(u64),
    /// Any other number.
    Number(f64),
    /// An object.
    Object,
    /// Anything else (boolean, array, unparsable text).
    Other,
}

impl FieldRef<'_> {
    pub(super) fn as_u64(&self) -> Option<u64> {
        match self {
            FieldRef::U64(n) => Some(*n),
            _ => None,
        }
    }
}

/// A record's top-level fields as the checks read them, in [`RECORD_KEYS`] order (`None` when
/// missing).
pub(super) type FieldRefs<'a> = [Option<FieldRef<'a>>; 14];

/// The top-level fields of a record as the checks read them: parsed (a `Map`), or the three
/// the sequential checks read of a canonical line ([`IdFields`]). A canonical line's fields come
/// straight from its bytes ([`RawFields::field_refs`]).
pub(super) trait Fields {
    /// The field `key`, or `None` when it is missing.
    fn field(&self, key: &str) -> Option<FieldRef<'_>>;
    /// The top-level keys that are not among [`RECORD_KEYS`], in order.
    fn unknown_keys(&self) -> Vec<String>;

    /// Every one of [`RECORD_KEYS`], each read once.
    fn field_refs(&self) -> FieldRefs<'_> {
        std::array::from_fn(|k| self.field(RECORD_KEYS[k]))
    }

    fn str_field(&self, key: &str) -> Option<std::borrow::Cow<'_, str>> {
        match self.field(key)? {
            FieldRef::Str(s) => Some(s),
            _ => None,
        }
    }
}

impl Fields for Map<String, Value> {
    fn field(&self, key: &str) -> Option<FieldRef<'_>> {
        Some(match self.get(key)? {
            Value::String(s) => FieldRef::Str(std::borrow::Cow::Borrowed(s)),
            Value::Null => FieldRef::Null,
            Value::Number(n) => {
                n.as_u64().map_or_else(|| FieldRef::Number(n.as_f64().unwrap_or(f64::NAN)), FieldRef::U64)
            }
            Value::Object(_) => FieldRef::Object,
            _ => FieldRef::Other,
        })
    }

    fn unknown_keys(&self) -> Vec<String> {
        self.keys().filter(|k| !RECORD_KEYS.contains(&k.as_str())).cloned().collect()
    }
}

/// The top-level fields of a canonical line, read from its bytes without building a `Map`:
/// the value range of each of the [`RECORD_KEYS`] present.
pub(super) struct RawFields<'a> {
    line: &'a str,
    /// Value ranges of the [`RECORD_KEYS`], by position in that list.
    at: [Option<std::ops::Range<usize>>; 14],
    /// Member index (in the scan) of `entry_hash` and of `metadata`.
    pub(super) entry_hash: Option<usize>,
    pub(super) metadata: Option<usize>,
    pub(super) unknown: Vec<String>,
    /// The line holds an escape somewhere ([`canonical::scan::Scan::escapes`]): only then are
    /// string values searched for one.
    escapes: bool,
}

/// Positions in [`RECORD_KEYS`].
pub(super) const KEY_SCHEMA: usize = 0;
pub(super) const KEY_RECORD_ID: usize = 1;
pub(super) const KEY_AGENT: usize = 2;
pub(super) const KEY_ACTION: usize = 3;
pub(super) const KEY_APPROVER: usize = 4;
pub(super) const KEY_OUTCOME: usize = 5;
pub(super) const KEY_TRACE_ID: usize = 6;
pub(super) const KEY_AUTONOMY_TIER: usize = 7;
pub(super) const KEY_TIMESTAMP: usize = 8;
pub(super) const KEY_COST_USD: usize = 9;
pub(super) const KEY_CHAIN_INDEX: usize = 10;
pub(super) const KEY_PREVIOUS_HASH: usize = 11;
pub(super) const KEY_ENTRY_HASH: usize = 12;
pub(super) const KEY_METADATA: usize = 13;

/// The position of `key` in [`RECORD_KEYS`] (one comparison by length and bytes, not fourteen).
fn record_key_index(key: &[u8]) -> Option<usize> {
    Some(match key {
        b"schema" => 0,
        b"record_id" => 1,
        b"agent" => 2,
        b"action" => 3,
        b"approver" => 4,
        b"outcome" => 5,
        b"trace_id" => 6,
        b"autonomy_tier" => 7,
        b"timestamp" => 8,
        b"cost_usd" => 9,
        b"chain_index" => 10,
        b"previous_hash" => 11,
        b"entry_hash" => 12,
        b"metadata" => 13,
        _ => return None,
    })
}

impl<'a> RawFields<'a> {
    /// The fields of `line` (valid UTF-8 that [`canonical::scan::scan_object`] accepted).
    pub(super) fn new(line: &'a str, scan: &canonical::scan::Scan) -> Self {
        let mut at: [Option<std::ops::Range<usize>>; 14] = Default::default();
        let (mut entry_hash, mut metadata, mut unknown) = (None, None, Vec::new());
        for (n, m) in scan.members.iter().enumerate() {
            let key = &line.as_bytes()[m.key.clone()];
            match record_key_index(key) {
                Some(k) => {
                    at[k] = Some(m.value.clone());
                    match k {
                        KEY_ENTRY_HASH => entry_hash = Some(n),
                        KEY_METADATA => metadata = Some(n),
                        _ => {}
                    }
                }
                None => unknown.push(String::from_utf8_lossy(key).into_owned()),
            }
        }
        Self { line, at, entry_hash, metadata, unknown, escapes: scan.escapes }
    }

    /// Every one of [`RECORD_KEYS`], each read once from its value's text.
    pub(super) fn field_refs(&self) -> FieldRefs<'a> {
        let (line, escapes) = (self.line, self.escapes);
        std::array::from_fn(|k| self.at[k].clone().map(|r| raw_field(&line[r], escapes)))
    }
}

/// A field's value from its canonical JSON text; `escapes` says whether the line it is part of
/// holds any escape (when not, a string's content is what its quotes enclose).
fn raw_field(text: &str, escapes: bool) -> FieldRef<'_> {
    let bytes = text.as_bytes();
    match bytes.first() {
        // The delimiters are ASCII, so the slice is on character boundaries.
        // No escape in the line, or the first `"` or `\\` after the opening quote is the
        // closing one: the content is what the quotes enclose.
        Some(b'"') if !escapes || canonical::scan::find_quote_or_backslash(bytes, 1) == Some(bytes.len() - 1) => {
            FieldRef::Str(std::borrow::Cow::Borrowed(&text[1..text.len() - 1]))
        }
        Some(b'"') => match canonical::parse_strict(bytes) {
            Ok(Value::String(s)) => FieldRef::Str(std::borrow::Cow::Owned(s)),
            _ => FieldRef::Other,
        },
        Some(b'n') => FieldRef::Null,
        Some(b'{') => FieldRef::Object,
        Some(b'0'..=b'9') if bytes.iter().all(u8::is_ascii_digit) => {
            text.parse().map_or(FieldRef::Other, FieldRef::U64)
        }
        Some(b'-' | b'0'..=b'9') => text.parse::<f64>().map_or(FieldRef::Other, FieldRef::Number),
        _ => FieldRef::Other,
    }
}

/// The three fields the sequential checks read of a canonical record, by the ranges of their
/// string values in a block's id text: `previous_hash`, `entry_hash`, `record_id` (`None` when
/// missing or not a string, which the sequential checks treat alike).
pub(super) struct IdFields<'a> {
    pub(super) text: &'a str,
    pub(super) ids: [Option<std::ops::Range<usize>>; 3],
}

impl Fields for IdFields<'_> {
    fn field(&self, key: &str) -> Option<FieldRef<'_>> {
        let k = ["previous_hash", "entry_hash", "record_id"].iter().position(|n| *n == key)?;
        self.ids[k].clone().map(|r| FieldRef::Str(std::borrow::Cow::Borrowed(&self.text[r])))
    }

    fn unknown_keys(&self) -> Vec<String> {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_key_index_follows_record_keys() {
        for (i, key) in RECORD_KEYS.iter().enumerate() {
            assert_eq!(record_key_index(key.as_bytes()), Some(i), "{key}");
        }
        for (k, key) in
            [(KEY_RECORD_ID, "record_id"), (KEY_PREVIOUS_HASH, "previous_hash"), (KEY_ENTRY_HASH, "entry_hash")]
        {
            assert_eq!(RECORD_KEYS[k], key);
        }
        assert_eq!(RECORD_KEYS[KEY_METADATA], "metadata");
        for other in [&b""[..], b"Schema", b"metadata ", b"entry_hash\0", b"chain"] {
            assert_eq!(record_key_index(other), None, "{}", String::from_utf8_lossy(other));
        }
    }
}
