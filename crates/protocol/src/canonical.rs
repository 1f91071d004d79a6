//! Canonical JSON and SHA-256 digests.
//!
//! Implements the OpenTrustGraph hash contract (`opentrustgraph.md` §4.1, §4.3): object keys sorted
//! recursively by UTF-8 byte order (equal to Unicode code-point order), array order kept, no
//! insignificant whitespace, raw UTF-8 for non-ASCII, `\u00xx` lower-case escapes for other control
//! characters, `null` values kept. The same bytes are used for everything warrant hashes or signs:
//! chain records, packet content hashes and signed decision documents.
//!
//! Keys are sorted explicitly here, so the result does not depend on whether some dependency turns
//! on serde_json's `preserve_order` feature.

pub mod scan;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::io::{self, Write};

/// The `sha256:` prefix of every digest string warrant writes (OpenTrustGraph §4.1 step 5).
pub const SHA256_PREFIX: &str = "sha256:";

/// Writes `value` as canonical JSON into `out`.
///
/// # Errors
/// Only the errors of `out` itself.
pub fn write_canonical<W: Write + ?Sized>(value: &Value, out: &mut W) -> io::Result<()> {
    match value {
        Value::Object(map) => write_object(map, None, out),
        Value::Array(items) => {
            out.write_all(b"[")?;
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.write_all(b",")?;
                }
                write_canonical(item, out)?;
            }
            out.write_all(b"]")
        }
        Value::String(text) => write_str(text, out),
        // Other scalars: serde_json writes numbers in their shortest round-trip form.
        scalar => serde_json::to_writer(&mut *out, scalar).map_err(io::Error::other),
    }
}

/// Writes a JSON string. Text without a quote, backslash or C0 control is written as it is;
/// anything else goes through serde_json, which writes exactly the escapes the contract requires
/// (`\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`, other C0 controls as lower-case `\u00xx`,
/// everything else raw).
pub(crate) fn write_str<W: Write + ?Sized>(text: &str, out: &mut W) -> io::Result<()> {
    if !needs_escape(text.as_bytes()) {
        out.write_all(b"\"")?;
        out.write_all(text.as_bytes())?;
        out.write_all(b"\"")
    } else {
        serde_json::to_writer(&mut *out, text).map_err(io::Error::other)
    }
}

/// True when `b` holds a byte JSON escapes in a string: a control byte (< 0x20), `"` or `\\`;
/// eight bytes at a time ([`scan::bytes_below`], [`scan::quotes_or_backslashes`]).
fn needs_escape(b: &[u8]) -> bool {
    let mut words = b.chunks_exact(8);
    for chunk in &mut words {
        let mut w = [0u8; 8];
        w.copy_from_slice(chunk);
        let v = u64::from_le_bytes(w);
        if scan::bytes_below(v, 0x20) | scan::quotes_or_backslashes(v) != 0 {
            return true;
        }
    }
    words.remainder().iter().any(|&c| c < 0x20 || c == b'"' || c == b'\\')
}

/// Writes an object as canonical JSON (what [`write_canonical`] writes for `Value::Object`).
///
/// # Errors
/// Only the errors of `out` itself.
pub(crate) fn write_canonical_object<W: Write + ?Sized>(map: &Map<String, Value>, out: &mut W) -> io::Result<()> {
    write_object(map, None, out)
}

/// Writes an object with its keys sorted, leaving out the top-level key `skip` if given.
fn write_object<W: Write + ?Sized>(map: &Map<String, Value>, skip: Option<&str>, out: &mut W) -> io::Result<()> {
    let entries = map.iter().filter(|(k, _)| Some(k.as_str()) != skip);
    // A BTreeMap-backed map (serde_json's default) iterates in byte order already; only an
    // insertion-ordered one (`preserve_order`) needs its keys sorted.
    if map.keys().map(String::as_bytes).is_sorted() {
        write_entries(entries, out)
    } else {
        let mut sorted: Vec<(&String, &Value)> = entries.collect();
        sorted.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        write_entries(sorted.into_iter(), out)
    }
}

/// Writes `{"key":value,…}` for entries already in canonical order.
fn write_entries<'v, W: Write + ?Sized>(
    entries: impl Iterator<Item = (&'v String, &'v Value)>,
    out: &mut W,
) -> io::Result<()> {
    out.write_all(b"{")?;
    for (i, (key, value)) in entries.enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        write_str(key, out)?;
        out.write_all(b":")?;
        write_canonical(value, out)?;
    }
    out.write_all(b"}")
}

/// The canonical bytes of `value`.
#[must_use]
pub fn to_canonical_vec(value: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    // Writing into a Vec cannot fail.
    let _ = write_canonical(value, &mut out);
    out
}

/// The canonical bytes of `value` as a `String` (canonical JSON is always valid UTF-8).
///
/// ```
/// let v = serde_json::json!({"z": [3, null, {"b": true, "a": "é"}], "a": 1});
/// assert_eq!(warrant_protocol::canonical::to_canonical_string(&v), r#"{"a":1,"z":[3,null,{"a":"é","b":true}]}"#);
/// ```
#[must_use]
pub fn to_canonical_string(value: &Value) -> String {
    String::from_utf8(to_canonical_vec(value)).unwrap_or_default()
}

/// An `io::Write` that feeds a SHA-256 hasher through a small stack buffer: canonical JSON
/// arrives in many pieces of a few bytes, and one `update` per piece costs more than copying it.
/// Values of any size are hashed without a heap buffer.
pub(crate) struct HashWriter {
    hasher: Sha256,
    buf: [u8; HASH_BUFFER],
    len: usize,
}

/// Bytes [`HashWriter`] gathers before it hashes them (a multiple of SHA-256's 64-byte block).
const HASH_BUFFER: usize = 1024;

impl HashWriter {
    fn new() -> Self {
        HashWriter { hasher: Sha256::new(), buf: [0; HASH_BUFFER], len: 0 }
    }

    fn finalize(mut self) -> [u8; 32] {
        self.hasher.update(&self.buf[..self.len]);
        self.hasher.finalize().into()
    }
}

impl Write for HashWriter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        if self.len + bytes.len() <= HASH_BUFFER {
            self.buf[self.len..self.len + bytes.len()].copy_from_slice(bytes);
            self.len += bytes.len();
        } else {
            self.hasher.update(&self.buf[..self.len]);
            self.len = 0;
            if bytes.len() < HASH_BUFFER {
                self.buf[..bytes.len()].copy_from_slice(bytes);
                self.len = bytes.len();
            } else {
                self.hasher.update(bytes);
            }
        }
        Ok(bytes.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// SHA-256 of the canonical bytes of `value`, as 32 raw bytes.
#[must_use]
pub fn canonical_digest(value: &Value) -> [u8; 32] {
    let mut w = HashWriter::new();
    let _ = write_canonical(value, &mut w);
    w.finalize()
}

/// SHA-256 of what `write` writes: canonical JSON written piece by piece (an object whose members
/// are known in advance), through the same buffered hasher as [`canonical_digest`].
pub(crate) fn digest_written(write: impl FnOnce(&mut HashWriter) -> io::Result<()>) -> [u8; 32] {
    let mut w = HashWriter::new();
    let _ = write(&mut w);
    w.finalize()
}

/// SHA-256 of the canonical bytes of an object without its top-level key `skip`.
///
/// This is the `entry_hash` preimage rule of OpenTrustGraph §4.1 step 1 (`skip = "entry_hash"`),
/// computed without cloning the record.
#[must_use]
pub fn canonical_digest_without(map: &Map<String, Value>, skip: &str) -> [u8; 32] {
    let mut w = HashWriter::new();
    let _ = write_object(map, Some(skip), &mut w);
    w.finalize()
}

const HEX_DIGITS: &[u8; 16] = b"0123456789abcdef";

/// Lower-case hex of `bytes`.
#[must_use]
pub fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(HEX_DIGITS[usize::from(b >> 4)] as char);
        s.push(HEX_DIGITS[usize::from(b & 0x0f)] as char);
    }
    s
}

/// `"sha256:" + lower-case hex` of a 32-byte digest as 71 ASCII bytes, without allocating (the
/// verifier compares every record's `entry_hash` with it).
#[must_use]
pub fn prefixed_bytes(digest: &[u8; 32]) -> [u8; 71] {
    let mut out = [0u8; 71];
    out[..SHA256_PREFIX.len()].copy_from_slice(SHA256_PREFIX.as_bytes());
    for (k, b) in digest.iter().enumerate() {
        out[7 + 2 * k] = HEX_DIGITS[usize::from(b >> 4)];
        out[8 + 2 * k] = HEX_DIGITS[usize::from(b & 0x0f)];
    }
    out
}

/// Parses JSON text like `serde_json::from_slice`, but rejects an object with a duplicate key
/// (which parsers resolve differently: first or last wins), so what warrant hashes, shows and
/// signs is the only reading of the text. serde_json's recursion limit applies: at most 127
/// nested arrays and objects.
///
/// # Errors
/// [`JsonError::Syntax`] (not JSON, or nested too deep) or [`JsonError::DuplicateKey`].
///
/// ```
/// use warrant_protocol::canonical::{JsonError, parse_strict};
/// assert!(parse_strict(br#"{"a":1,"b":[{"c":2}]}"#).is_ok());
/// assert!(matches!(parse_strict(br#"{"to":"a@x","to":"b@y"}"#), Err(JsonError::DuplicateKey(_))));
/// assert!(matches!(parse_strict(b"{"), Err(JsonError::Syntax(_))));
/// ```
pub fn parse_strict(bytes: &[u8]) -> Result<Value, JsonError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = serde::Deserialize::deserialize(&mut de).map(|StrictValue(v)| v).map_err(JsonError::of)?;
    de.end().map_err(JsonError::of)?;
    Ok(value)
}

/// Why JSON text was refused ([`parse_strict`], [`parse_untrusted`]). Its text is serde_json's
/// message (with line and column) or names the key or the integer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JsonError {
    /// Not JSON: a syntax error, trailing text, a non-finite number, or nesting of 128 levels
    /// or more.
    #[error("{0}")]
    Syntax(String),
    /// An object names one key twice (parsers disagree on which value wins).
    #[error("{0}")]
    DuplicateKey(String),
    /// An integer literal outside the 64-bit range, which serde_json would read as a nearby
    /// float; the literal (its first 40 characters, then `…`).
    #[error("integer {0} is outside the 64-bit range (it would be read as an approximate float)")]
    IntegerOutOfRange(String),
}

impl JsonError {
    fn of(e: serde_json::Error) -> Self {
        // The only data error the strict reader raises by name is a duplicate key.
        if e.is_data() && e.to_string().starts_with(DUPLICATE_KEY) {
            JsonError::DuplicateKey(e.to_string())
        } else {
            JsonError::Syntax(e.to_string())
        }
    }
}

const DUPLICATE_KEY: &str = "duplicate key ";

/// Parses JSON that agents wrote (packets, receipts, decision files, `warrant eval` requests):
/// [`parse_strict`], and also refuses an integer literal outside the 64-bit range (such as
/// `2^70`), which serde_json would silently turn into a nearby float, so two different texts
/// would hash, display and sign as the same value. `1e400`, `NaN`, `Infinity` and nesting
/// of 128 levels or more are refused by [`parse_strict`] already.
///
/// # Errors
/// [`parse_strict`]'s, and [`JsonError::IntegerOutOfRange`].
///
/// ```
/// use warrant_protocol::canonical::{JsonError, parse_untrusted};
/// assert!(parse_untrusted(br#"{"n":18446744073709551615,"m":-9223372036854775808,"f":1.5e300}"#).is_ok());
/// let err = parse_untrusted(br#"{"n":1180591620717411303424}"#).unwrap_err();
/// assert_eq!(err, JsonError::IntegerOutOfRange("1180591620717411303424".into()));
/// assert!(matches!(parse_untrusted(b"[1e400]"), Err(JsonError::Syntax(_))));
/// assert!(parse_untrusted(b"[NaN]").is_err());
/// ```
pub fn parse_untrusted(bytes: &[u8]) -> Result<Value, JsonError> {
    let value = parse_strict(bytes)?;
    check_integer_literals(bytes)?;
    Ok(value)
}

/// Checks every integer literal (a number without fraction or exponent) outside strings of a
/// JSON text that already parsed: it must fit `i64` or `u64`.
///
/// # Errors
/// [`JsonError::IntegerOutOfRange`] for the first that does not.
pub fn check_integer_literals(bytes: &[u8]) -> Result<(), JsonError> {
    // In JSON that parsed, an integer literal is an optional `-` and its digits, and one of 18
    // digits or fewer fits `i64`: a text without 19 digits in a row (strings included) has none
    // out of range, and most texts are known so eight bytes a step.
    if !has_digit_run(bytes, 19) {
        return Ok(());
    }
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                // Skip the string, honouring backslash escapes (eight bytes at a time).
                i += 1;
                loop {
                    match scan::find_quote_or_backslash(bytes, i) {
                        Some(k) if bytes[k] == b'\\' => i = k + 2,
                        Some(k) => {
                            i = k + 1;
                            break;
                        }
                        None => return Ok(()),
                    }
                    if i >= bytes.len() {
                        return Ok(());
                    }
                }
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i < bytes.len() && matches!(bytes[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') {
                    i += 1;
                }
                let token = &bytes[start..i];
                let integer = !token.iter().any(|b| matches!(b, b'.' | b'e' | b'E'));
                if integer {
                    let text = std::str::from_utf8(token).unwrap_or_default();
                    if text.parse::<i64>().is_err() && text.parse::<u64>().is_err() {
                        let shown: String = text.chars().take(40).collect();
                        let more = if text.len() > 40 { "…" } else { "" };
                        return Err(JsonError::IntegerOutOfRange(format!("{shown}{more}")));
                    }
                }
            }
            _ => i += 1,
        }
    }
    Ok(())
}

/// Whether `bytes` holds `n` (at least 9) ASCII digits in a row, read eight bytes a step: a run
/// that long spans a whole word, so only runs meeting at word edges are counted.
fn has_digit_run(bytes: &[u8], n: usize) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let mut run = 0;
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        let w = u64::from_le_bytes(word.try_into().unwrap_or([0; 8]));
        // Each byte minus `0`, below 10 exactly at a digit: the high bit of a byte of
        // `low + 0x76` is clear exactly when that byte of `low` is below 10 (no carry between
        // bytes, each below 0x80), and a byte with its own high bit set is no digit.
        let x = w ^ (ONES * u64::from(b'0'));
        let not_digits = (((x & !HIGHS) + ONES * 0x76) | x) & HIGHS;
        if not_digits == 0 {
            run += 8;
            if run >= n {
                return true;
            }
            continue;
        }
        // The digits before the word's first non-digit end the run so far; those after its
        // last begin the next.
        if run + (not_digits.trailing_zeros() / 8) as usize >= n {
            return true;
        }
        run = (not_digits.leading_zeros() / 8) as usize;
    }
    for &b in words.remainder() {
        run = if b.is_ascii_digit() { run + 1 } else { 0 };
        if run >= n {
            return true;
        }
    }
    false
}

/// A JSON string, borrowed from the input when it has no escapes (serde's own `Cow<str>`
/// always copies).
pub struct Text<'de>(pub std::borrow::Cow<'de, str>);

impl<'de> serde::Deserialize<'de> for Text<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(std::borrow::Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Text<'de>, E> {
                Ok(Text(std::borrow::Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Text<'de>, E> {
                Ok(Text(std::borrow::Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// A JSON value whose objects have no duplicate keys (what [`parse_strict`] reads), for
/// deserializers that read part of a document strictly.
pub struct StrictValue(pub Value);

impl<'de> serde::Deserialize<'de> for StrictValue {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StrictVisitor).map(StrictValue)
    }
}

pub(crate) struct StrictVisitor;

impl<'de> serde::de::Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Value, E> {
        serde_json::Number::from_f64(v).map(Value::Number).ok_or_else(|| E::custom("non-finite number"))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
        while let Some(StrictValue(v)) = seq.next_element()? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                return Err(serde::de::Error::custom(format!("{DUPLICATE_KEY}{key:?}")));
            }
            let StrictValue(v) = map.next_value()?;
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

/// `"sha256:" + lower-case hex` of a 32-byte digest.
#[must_use]
pub fn prefixed(digest: &[u8; 32]) -> String {
    // The prefix and hex digits are ASCII: the check cannot fail.
    String::from_utf8(prefixed_bytes(digest).to_vec()).unwrap_or_default()
}

/// `"sha256:" + hex(SHA-256(canonical(value)))`: the digest string used for content hashes.
#[must_use]
pub fn canonical_hash(value: &Value) -> String {
    prefixed(&canonical_digest(value))
}

/// Lower-case hex of SHA-256(bytes), without a prefix (the form Lodestar signs).
#[must_use]
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// `"sha256:" + hex(SHA-256(bytes))` of raw bytes.
///
/// ```
/// assert_eq!(
///     warrant_protocol::canonical::sha256_prefixed(b"abc"),
///     "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
/// );
/// ```
#[must_use]
pub fn sha256_prefixed(bytes: &[u8]) -> String {
    prefixed(&Sha256::digest(bytes).into())
}

/// True when `s` is `sha256:` followed by exactly 64 lower-case hex digits.
#[must_use]
pub fn is_sha256_string(s: &str) -> bool {
    s.strip_prefix(SHA256_PREFIX)
        // A fold without early exit, which the compiler vectorises.
        .is_some_and(|h| h.len() == 64 && h.bytes().fold(true, |ok, b| ok & matches!(b, b'0'..=b'9' | b'a'..=b'f')))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The word-at-a-time escape test agrees with the byte-by-byte one for every byte value at
    /// every position of texts of 0 to 24 bytes (whole words and the remainder alike).
    #[test]
    fn needs_escape_is_the_byte_test() {
        let plain = |b: &[u8]| b.iter().any(|&c| c < 0x20 || c == b'"' || c == b'\\');
        for len in 0..25 {
            for at in 0..len {
                for c in 0..=255u8 {
                    let mut text = vec![b'a'; len];
                    text[at] = c;
                    assert_eq!(needs_escape(&text), plain(&text), "{c:#x} at {at} of {len}");
                }
            }
        }
        assert!(!needs_escape("é€ x\u{7f}".as_bytes()));
    }

    /// Integer literals are found outside strings only, whatever the strings hold: escaped
    /// quotes and backslashes, digits, long runs (the skip goes eight bytes at a time).
    #[test]
    fn integer_literals_are_checked_outside_strings_only() {
        let big = "123456789012345678901234";
        let long = "x".repeat(40);
        for (text, ok) in [
            (format!(r#"{{"a":"{big}","b":1}}"#), true),
            (format!(r#"{{"a":"q\"{big}\"","b":-9223372036854775808}}"#), true),
            (format!(r#"{{"a":"\\","b":{big}}}"#), false),
            (format!(r#"{{"a":"{long}\\\"{long}","b":[1,{big}]}}"#), false),
            (format!(r#"{{"{long}{big}":"{long}\\"}}"#), true),
            (format!(r#"{{"a":18446744073709551615,"b":"{long}"}}"#), true),
            (format!(r#"{{"a":-{big}}}"#), false),
            (format!(r#"{{"a":1.5e300,"b":"{big}"}}"#), true),
            (r#"{"a":"unterminated \"#.to_owned(), true),
        ] {
            assert_eq!(check_integer_literals(text.as_bytes()).is_ok(), ok, "{text}");
        }
    }

    proptest::proptest! {
        // Eight bytes a step, a run of digits is found exactly where a byte-by-byte count finds
        // it: any bytes, any run lengths, at every offset in the word.
        #[test]
        fn digit_runs_are_found_as_counted_byte_by_byte(
            parts in proptest::collection::vec((0usize..24, proptest::num::u8::ANY), 0..12),
            n in 9usize..24,
        ) {
            let mut bytes = Vec::new();
            for (digits, other) in parts {
                bytes.extend(std::iter::repeat_n(b'7', digits));
                bytes.push(other);
            }
            for start in 0..8.min(bytes.len() + 1) {
                let b = &bytes[start..];
                let mut run = 0;
                let counted = b.iter().any(|c| {
                    run = if c.is_ascii_digit() { run + 1 } else { 0 };
                    run >= n
                });
                proptest::prop_assert_eq!(has_digit_run(b, n), counted);
            }
        }
    }

    #[test]
    fn sorts_keys_at_every_depth_and_keeps_array_order() {
        let v = json!({"z": [3, null, {"b": true, "a": "x"}], "a": 1});
        assert_eq!(to_canonical_string(&v), r#"{"a":1,"z":[3,null,{"a":"x","b":true}]}"#);
    }

    #[test]
    fn escapes_controls_lower_case_and_keeps_non_ascii_raw() {
        let v = json!({"s": "\u{1}\u{1f}\n\"\\/é😀\u{2028}\u{7f}"});
        assert_eq!(to_canonical_string(&v), "{\"s\":\"\\u0001\\u001f\\n\\\"\\\\/é😀\u{2028}\u{7f}\"}");
    }

    #[test]
    fn astral_keys_sort_by_code_point_not_utf16() {
        // U+FF61 sorts before U+1F600 by code point, after it in UTF-16 code units.
        let v = json!({"\u{1F600}": 1, "\u{FF61}": 2});
        assert_eq!(to_canonical_string(&v), "{\"\u{FF61}\":2,\"\u{1F600}\":1}");
    }

    #[test]
    fn digest_without_skips_only_the_top_level_key() {
        let v = json!({"entry_hash": "x", "metadata": {"entry_hash": "kept"}, "a": 1});
        let Value::Object(map) = &v else { unreachable!() };
        let expected = json!({"metadata": {"entry_hash": "kept"}, "a": 1});
        assert_eq!(canonical_digest_without(map, "entry_hash"), canonical_digest(&expected));
    }

    #[test]
    fn recognises_digest_strings() {
        assert!(is_sha256_string(&sha256_prefixed(b"abc")));
        assert!(!is_sha256_string("sha256:ABC"));
        assert!(!is_sha256_string(&sha256_prefixed(b"abc").to_uppercase()));
        assert_eq!(sha256_prefixed(b"abc"), "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }
}

#[cfg(test)]
mod float_tests {
    /// Every float warrant writes must read back as the same float, or a record's hash would
    /// change between writing and verifying (serde_json's `float_roundtrip`).
    #[test]
    fn floats_survive_a_write_and_read_back() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let f = f64::from_bits(x);
            if !f.is_finite() {
                continue;
            }
            let v = serde_json::json!({"t": f});
            let text = super::to_canonical_string(&v);
            let back: serde_json::Value = serde_json::from_str(&text).expect("parses");
            assert_eq!(back["t"].as_f64(), Some(f), "{text}");
            assert_eq!(super::to_canonical_string(&back), text);
        }
    }
}
