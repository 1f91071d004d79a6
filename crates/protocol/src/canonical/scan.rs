//! Recognising canonical JSON without parsing it: the fast path of chain verification.
//!
//! warrant writes every chain line in canonical form ([`super::write_canonical`]), so for those
//! lines the `entry_hash` preimage (§4.1 step 1: the canonical record without its top-level
//! `entry_hash`) is the line itself with that one member cut out. [`scan_object`] checks, in one
//! pass over the bytes and without allocating per value, that a line is exactly what
//! [`super::write_canonical`] would print for the value it denotes; then [`Scan::digest_without`]
//! hashes the line minus one member. A line that is valid JSON but not canonical (a foreign
//! producer's spacing, a float spelled differently, an escaped key, nesting deeper than
//! [`MAX_DEPTH`]) is not an error here: the caller falls back to parsing and re-serialising.
//!
//! "Canonical" is decided conservatively: [`scan_object`] accepts only texts for which
//! `to_canonical_vec(parse(text)) == text` (property-tested in `tests/properties.rs`).

use sha2::{Digest, Sha256};
use std::ops::Range;

/// Deepest nesting the scanner follows; deeper texts go to the parser, whose own limit (128)
/// then decides.
pub const MAX_DEPTH: usize = 100;

/// One member of a scanned object: byte ranges of its key (without quotes, never containing an
/// escape) and of its value (the value's whole JSON text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// The key's bytes, without the quotes.
    pub key: Range<usize>,
    /// The value's JSON text.
    pub value: Range<usize>,
}

/// The members of a scanned canonical object: the top level, and one level below for members
/// whose value is itself an object (as `(parent index, member)`).
#[derive(Debug, Clone, Default)]
pub struct Scan {
    /// Top-level members in text (= sorted) order.
    pub members: Vec<Member>,
    /// Members of top-level members' object values: `(index into members, member)`.
    pub nested: Vec<(usize, Member)>,
    /// Some string in the text (a key or a value, at any depth) holds an escape. When false,
    /// every string value's text is its quotes around its content, which readers take as is.
    pub escapes: bool,
    /// Where the text's `"` and `\\` are: bit `k % 64` of word `k / 64` for byte `k`
    /// ([`mark_quotes`]), kept to reuse its allocation from line to line.
    marks: Vec<u64>,
}

impl Scan {
    /// The top-level member named `key` in `text`.
    #[must_use]
    pub fn member<'t>(&self, text: &'t [u8], key: &str) -> Option<(usize, &'t [u8])> {
        self.members
            .iter()
            .position(|m| &text[m.key.clone()] == key.as_bytes())
            .map(|i| (i, &text[self.members[i].value.clone()]))
    }

    /// The members of the object that is top-level member `parent`'s value.
    pub fn children(&self, parent: usize) -> impl Iterator<Item = &Member> {
        self.nested.iter().filter(move |(p, _)| *p == parent).map(|(_, m)| m)
    }

    /// SHA-256 of `text` with top-level member `index` (and the comma that joins it) cut out:
    /// the canonical bytes of the object without that key.
    #[must_use]
    pub fn digest_without(&self, text: &[u8], index: usize) -> [u8; 32] {
        let m = &self.members[index];
        let start = m.key.start - 1; // the key's opening quote
        let (cut_start, cut_end) = if index > 0 {
            (self.members[index - 1].value.end, m.value.end) // the comma before it, and it
        } else if self.members.len() > 1 {
            (start, m.value.end + 1) // it, and the comma after it
        } else {
            (start, m.value.end)
        };
        let mut h = Sha256::new();
        h.update(&text[..cut_start]);
        h.update(&text[cut_end..]);
        h.finalize().into()
    }
}

/// Scans `text` and fills `out` if it is exactly the canonical form of a JSON object (keys
/// without escapes, strictly increasing by bytes; no whitespace; strings with serde_json's
/// escapes only; integers within `i64`/`u64` without a sign on zero; floats as serde_json prints
/// them; nesting at most [`MAX_DEPTH`]; valid UTF-8). Returns false otherwise, which means only
/// "not recognised as canonical": the text may still be valid JSON.
pub fn scan_object(text: &[u8], out: &mut Scan) -> bool {
    match std::str::from_utf8(text) {
        Ok(text) => scan_object_str(text, out),
        Err(_) => {
            out.members.clear();
            out.nested.clear();
            false
        }
    }
}

/// [`scan_object`] over text already known to be UTF-8 (the member ranges then fall on
/// character boundaries of `text`).
pub fn scan_object_str(text: &str, out: &mut Scan) -> bool {
    out.members.clear();
    out.nested.clear();
    out.escapes = false;
    let text = text.as_bytes();
    // Canonical text has no raw control byte anywhere (no whitespace between tokens, controls
    // escaped inside strings): the pass that marks the quotes rules them out too.
    let mut marks = std::mem::take(&mut out.marks);
    let controls = mark_quotes(text, &mut marks);
    let whole = text.first() == Some(&b'{') && !controls && {
        let mut s = Scanner { b: text, marks: &marks, i: 0, escapes: false };
        let whole = s.object(1, Some(out), None) == Some(()) && s.i == text.len();
        out.escapes = s.escapes;
        whole
    };
    out.marks = marks;
    whole
}

/// Fills `marks` with where `text`'s `"` and `\\` bytes are (bit `k % 64` of word `k / 64` set
/// for byte `k`, no bit past the text's end) and returns whether `text` holds a raw control byte
/// (below 0x20). One pass, sixteen bytes a step where SSE2 is there.
fn mark_quotes(text: &[u8], marks: &mut Vec<u64>) -> bool {
    marks.clear();
    let mut controls = false;
    let mut chunks = text.chunks_exact(64);
    for chunk in &mut chunks {
        let (m, c) = chunk_marks(chunk.try_into().unwrap_or(&[b' '; 64]));
        marks.push(m);
        controls |= c;
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        // Padded with spaces: neither marked nor a control.
        let mut last = [b' '; 64];
        last[..rest.len()].copy_from_slice(rest);
        let (m, c) = chunk_marks(&last);
        marks.push(m);
        controls |= c;
    }
    controls
}

/// The `"`/`\\` bitmap of 64 bytes, and whether one of them is a raw control byte.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
fn chunk_marks(chunk: &[u8; 64]) -> (u64, bool) {
    use safe_arch::{bitor_m128i, cmp_eq_mask_i8_m128i, m128i, min_u8_m128i, move_mask_i8_m128i, set_splat_i8_m128i};
    let (quote, backslash, space) =
        (set_splat_i8_m128i(b'"' as i8), set_splat_i8_m128i(b'\\' as i8), set_splat_i8_m128i(0x1f));
    let (mut marks, mut controls) = (0u64, 0i32);
    for (k, lane) in chunk.chunks_exact(16).enumerate() {
        let v = m128i::from(<[u8; 16]>::try_from(lane).unwrap_or([b' '; 16]));
        let hits = bitor_m128i(cmp_eq_mask_i8_m128i(v, quote), cmp_eq_mask_i8_m128i(v, backslash));
        // min(v, 0x1f) == v exactly where v <= 0x1f (unsigned).
        controls |= move_mask_i8_m128i(cmp_eq_mask_i8_m128i(min_u8_m128i(v, space), v));
        marks |= u64::from(move_mask_i8_m128i(hits) as u16) << (16 * k);
    }
    (marks, controls != 0)
}

/// The `"`/`\\` bitmap of 64 bytes, and whether one of them is a raw control byte.
#[cfg(any(test, not(all(target_arch = "x86_64", target_feature = "sse2"))))]
#[cfg_attr(all(target_arch = "x86_64", target_feature = "sse2"), allow(dead_code))]
fn chunk_marks_portable(chunk: &[u8; 64]) -> (u64, bool) {
    let mut marks = 0u64;
    for (k, &c) in chunk.iter().enumerate() {
        marks |= u64::from(c == b'"' || c == b'\\') << k;
    }
    (marks, chunk.iter().any(|&c| c < 0x20))
}

#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
use chunk_marks_portable as chunk_marks;

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The word `w` (eight bytes, little-endian) with the high bit set of its bytes below `n`
/// (`n` ≤ 0x80): non-zero exactly when some byte is, and its lowest set bit is the first such
/// byte's (a borrow only runs upwards, past that byte).
#[inline(always)]
pub(crate) fn bytes_below(w: u64, n: u8) -> u64 {
    w.wrapping_sub(ONES * u64::from(n)) & !w & HIGHS
}

/// [`bytes_below`] for the bytes of `w` equal to `"` or `\\`.
#[inline(always)]
pub(crate) fn quotes_or_backslashes(w: u64) -> u64 {
    bytes_below(w ^ (ONES * u64::from(b'"')), 1) | bytes_below(w ^ (ONES * u64::from(b'\\')), 1)
}

/// The position of the first `"` or `\\` in `b` at or after `from`. Most strings in a record
/// are short (keys, ids, hashes, timestamps), so the first 32 bytes are searched eight at a time
/// inline (a word with a zero byte where `"` or `\\` is: exact for the lowest such byte, which
/// is the one taken), and only longer strings go to `memchr2`.
#[inline(always)]
pub(crate) fn find_quote_or_backslash(b: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    for _ in 0..4 {
        let Some(chunk) = b.get(i..i + 8) else { break };
        let w = u64::from_le_bytes(chunk.try_into().ok()?);
        let hits = quotes_or_backslashes(w);
        if hits != 0 {
            return Some(i + (hits.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    memchr::memchr2(b'"', b'\\', &b[i..]).map(|k| i + k)
}

struct Scanner<'a> {
    b: &'a [u8],
    /// [`mark_quotes`]'s bitmap of `b`.
    marks: &'a [u64],
    i: usize,
    /// A string so far held an escape.
    escapes: bool,
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.i += 1)
    }

    /// The position of the first `"` or `\\` at or after `from`, read off the bitmap.
    #[inline(always)]
    fn next_mark(&self, from: usize) -> Option<usize> {
        let mut word = from / 64;
        let mut bits = self.marks.get(word)? & (u64::MAX << (from % 64));
        while bits == 0 {
            word += 1;
            bits = *self.marks.get(word)?;
        }
        Some(word * 64 + bits.trailing_zeros() as usize)
    }

    fn value(&mut self, depth: usize) -> Option<()> {
        match self.peek()? {
            b'{' => self.object(depth + 1, None, None),
            b'[' => self.array(depth + 1),
            b'"' => self.string().map(|_| ()),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    /// An object at `depth`. With `record`, its members are recorded: as top-level members when
    /// `parent` is `None` (and then the members of each object value too, one level down), else
    /// as nested members of top-level member `parent`.
    fn object(&mut self, depth: usize, mut record: Option<&mut Scan>, parent: Option<usize>) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.eat(b'{')?;
        if self.eat(b'}').is_some() {
            return Some(());
        }
        let mut prev: Option<Range<usize>> = None;
        loop {
            let (key, escaped) = self.string()?;
            if escaped {
                return None; // escaped keys are left to the parser
            }
            if let Some(p) = &prev
                && !self.key_below(p, &key)
            {
                return None; // not strictly increasing: unsorted or duplicate
            }
            self.eat(b':')?;
            let start = self.i;
            match (&mut record, parent) {
                (Some(scan), None) if self.peek() == Some(b'{') => {
                    let index = scan.members.len();
                    self.object(depth + 1, Some(scan), Some(index))?;
                }
                _ => self.value(depth)?,
            }
            if let Some(scan) = &mut record {
                let m = Member { key: key.clone(), value: start..self.i };
                match parent {
                    None => scan.members.push(m),
                    Some(p) => scan.nested.push((p, m)),
                }
            }
            prev = Some(key);
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    fn array(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.eat(b'[')?;
        if self.eat(b']').is_some() {
            return Some(());
        }
        loop {
            self.value(depth)?;
            match self.peek()? {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// Whether key `a` sorts strictly before key `b` (by bytes). Both are unescaped key ranges,
    /// so neither holds a NUL (raw controls were ruled out): the first eight bytes, read as one
    /// big-endian word with the bytes past the key zeroed, order them unless they tie.
    fn key_below(&self, a: &Range<usize>, b: &Range<usize>) -> bool {
        let word = |r: &Range<usize>| {
            // Every key is followed by at least `":` and a value, so most have eight bytes to read.
            let bytes = self.b.get(r.start..r.start + 8)?;
            let w = u64::from_be_bytes(bytes.try_into().ok()?);
            let len = r.len();
            Some(if len >= 8 { w } else { w & !(u64::MAX >> (8 * len)) })
        };
        match (word(a), word(b)) {
            (Some(x), Some(y)) if x != y => x < y,
            (Some(_), Some(_)) if a.len() <= 8 && b.len() <= 8 => false, // equal keys
            _ => self.b[a.clone()] < self.b[b.clone()],
        }
    }

    /// A string with serde_json's escapes only; returns the range inside the quotes and whether
    /// it holds an escape.
    fn string(&mut self) -> Option<(Range<usize>, bool)> {
        self.eat(b'"')?;
        let start = self.i;
        let mut escaped = false;
        loop {
            // Skip plain bytes (raw controls were ruled out for the whole text).
            self.i = self.next_mark(self.i)?;
            match self.b[self.i] {
                b'"' => {
                    self.i += 1;
                    return Some((start..self.i - 1, escaped));
                }
                b'\\' => {
                    escaped = true;
                    self.escapes = true;
                    let esc = *self.b.get(self.i + 1)?;
                    match esc {
                        b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't' => self.i += 2,
                        b'u' => {
                            let hex = self.b.get(self.i + 2..self.i + 6)?;
                            let lower = |c: &u8| c.is_ascii_digit() || (b'a'..=b'f').contains(c);
                            if &hex[..2] != b"00" || !hex[2..].iter().all(lower) {
                                return None;
                            }
                            let v = u8::from_str_radix(std::str::from_utf8(&hex[2..]).ok()?, 16).ok()?;
                            // serde_json writes \b \t \n \f \r in their short forms.
                            if v >= 0x20 || matches!(v, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d) {
                                return None;
                            }
                            self.i += 6;
                        }
                        _ => return None,
                    }
                }
                _ => return None,
            }
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        (self.b.get(self.i..self.i + word.len())? == word).then(|| self.i += word.len())
    }

    fn number(&mut self) -> Option<()> {
        let start = self.i;
        let end = start
            + self.b[start..].iter().position(|c| !matches!(c, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))?;
        self.i = end;
        let text = &self.b[start..end];
        let (negative, digits) = match text.split_first() {
            Some((b'-', rest)) => (true, rest),
            _ => (false, text),
        };
        if !digits.is_empty() && digits.iter().all(u8::is_ascii_digit) {
            // serde_json prints integers within i64/u64 as written; "-0", leading zeros and
            // anything larger are not what it prints.
            let minimal = digits == b"0" && !negative || digits[0] != b'0';
            let magnitude =
                digits.iter().try_fold(0u64, |acc, &d| acc.checked_mul(10)?.checked_add(u64::from(d - b'0')));
            let fits = magnitude.is_some_and(|m| !negative || m <= 1 << 63);
            return (minimal && fits).then_some(());
        }
        // A float: canonical when it prints back as the same text (the bytes are ASCII).
        let text = std::str::from_utf8(text).ok()?;
        let f: f64 = text.parse().ok()?;
        let n = serde_json::Number::from_f64(f)?;
        (n.to_string() == text).then_some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn scanned(v: &Value) -> (Vec<u8>, Scan) {
        let text = super::super::to_canonical_vec(v);
        let mut scan = Scan::default();
        assert!(scan_object(&text, &mut scan), "{}", String::from_utf8_lossy(&text));
        (text, scan)
    }

    #[test]
    fn digest_without_matches_the_canonical_digest() {
        for v in [
            json!({"a": 1, "entry_hash": "x", "z": [1, {"q": null}]}),
            json!({"entry_hash": "x", "z": 2}),
            json!({"a": "é\n\u{1}", "entry_hash": "x"}),
            json!({"entry_hash": "x"}),
        ] {
            let (text, scan) = scanned(&v);
            let (i, _) = scan.member(&text, "entry_hash").expect("member");
            let Value::Object(map) = &v else { unreachable!() };
            assert_eq!(scan.digest_without(&text, i), super::super::canonical_digest_without(map, "entry_hash"));
        }
    }

    #[test]
    fn accepts_keys_in_byte_order_across_the_eight_byte_word() {
        for text in [
            &br#"{"a":1,"ab":2}"#[..],
            br#"{"abcdefgh":1,"abcdefghi":2}"#,
            br#"{"abcdefghi":1,"abcdefghj":2}"#,
            br#"{"abcdefg":1,"abcdefgh":2,"abcdefgi":3}"#,
            br#"{"Z":1,"a":2}"#,
            "{\"z\":1,\"é\":2}".as_bytes(),
            br#"{"x":{"abcdefghij":1,"abcdefghik":2}}"#,
        ] {
            assert!(scan_object(text, &mut Scan::default()), "{}", String::from_utf8_lossy(text));
        }
    }

    #[test]
    fn finds_the_first_quote_or_backslash_wherever_it_is() {
        for len in 0..80 {
            for at in 0..len {
                for c in [b'"', b'\\'] {
                    let mut text = vec![b'x'; len];
                    text[at] = c;
                    if at + 1 < len {
                        text[at + 1] = b'"'; // a later hit must not win
                    }
                    for from in 0..=at {
                        assert_eq!(find_quote_or_backslash(&text, from), Some(at), "len {len} at {at} from {from}");
                    }
                }
            }
            // Bytes that differ from `"` and `\\` by one bit, or have the high bit set, are no hits.
            let near: Vec<u8> = (0..len).map(|k| [b'#', b'!', b']', b'|', 0xa2, 0xdc, 0x7f][k % 7]).collect();
            assert_eq!(find_quote_or_backslash(&near, 0), None, "len {len}");
        }
    }

    /// The SSE2 bitmap and the portable one agree on every byte value at every lane position,
    /// and [`mark_quotes`] marks exactly the quotes and backslashes of texts of every length.
    #[test]
    fn the_quote_bitmap_marks_exactly_the_quotes_and_backslashes() {
        for c in 0..=255u8 {
            for at in [0, 7, 15, 16, 31, 47, 63] {
                let mut chunk = [b'a'; 64];
                chunk[at] = c;
                assert_eq!(chunk_marks(&chunk), chunk_marks_portable(&chunk), "byte {c:#04x} at {at}");
            }
        }
        let mut marks = Vec::new();
        for len in 0..200 {
            let text: Vec<u8> = (0..len).map(|k| [b'x', b'"', b'\\', 0xc3, b'#', b']'][(k * 7 + len) % 6]).collect();
            assert!(!mark_quotes(&text, &mut marks));
            for (k, &c) in text.iter().enumerate() {
                assert_eq!(marks[k / 64] >> (k % 64) & 1 == 1, c == b'"' || c == b'\\', "len {len} at {k}");
            }
            assert_eq!(marks.len(), len.div_ceil(64));
            if len % 64 != 0 {
                assert_eq!(marks[len / 64] >> (len % 64), 0, "len {len}: no mark past the end");
            }
            let mut with_control = text.clone();
            with_control.push(0x1f);
            assert!(mark_quotes(&with_control, &mut marks), "len {len}");
        }
    }

    #[test]
    fn records_top_level_and_nested_members() {
        let (text, scan) = scanned(&json!({"a": 1, "metadata": {"tg_receipt": {"x": [1]}, "b": "c"}, "z": null}));
        let keys: Vec<&[u8]> = scan.members.iter().map(|m| &text[m.key.clone()]).collect();
        assert_eq!(keys, [&b"a"[..], b"metadata", b"z"]);
        let (meta, _) = scan.member(&text, "metadata").expect("metadata");
        let nested: Vec<(&[u8], &[u8])> =
            scan.children(meta).map(|m| (&text[m.key.clone()], &text[m.value.clone()])).collect();
        assert_eq!(nested, [(&b"b"[..], &b"\"c\""[..]), (b"tg_receipt", br#"{"x":[1]}"#)]);
    }

    #[test]
    fn refuses_what_is_not_canonical() {
        for text in [
            &br#"{"b":1,"a":2}"#[..],
            br#"{"a":1,"a":2}"#,
            br#"{ "a":1}"#,
            br#"{"a":01}"#,
            br#"{"a":-0}"#,
            br#"{"a":1e2}"#,
            br#"{"a":1.50}"#,
            br#"{"a":18446744073709551616}"#,
            br#"{"a":"\/"}"#,
            br#"{"a":"\u0041"}"#,
            br#"{"a":"\u000A"}"#,
            br#"{"a":"\u000a"}"#,
            br#"{"\u0061":1}"#,
            b"{\"a\":\"\x01\"}",
            br#"{"a":1}x"#,
            // Keys that share their first eight bytes, or are prefixes of one another.
            br#"{"abcdefghij":1,"abcdefghi":2}"#,
            br#"{"abcdefghijk":1,"abcdefghijk":2}"#,
            br#"{"abcdefgh":1,"abcdefgh":2}"#,
            br#"{"ab":1,"a":2}"#,
            br#"{"b":1,"ab":2}"#,
            br#"[1]"#,
            br#"{"a":tru}"#,
            b"{\"a\":\"\xff\"}",
        ] {
            assert!(!scan_object(text, &mut Scan::default()), "{}", String::from_utf8_lossy(text));
        }
        for (text, escapes) in [
            (&br#"{"a":1.5,"b":-3,"c":"\u0001\n","d":[],"e":{}}"#[..], true),
            (br#"{}"#, false),
            (br#"{"a":{"b":["x\"y"]},"c":"z"}"#, true),
            (br#"{"a":{"b":["x"]},"c":"z"}"#, false),
        ] {
            let mut scan = Scan::default();
            assert!(scan_object(text, &mut scan), "{}", String::from_utf8_lossy(text));
            assert_eq!(scan.escapes, escapes, "{}", String::from_utf8_lossy(text));
        }
        let deep = format!("{{\"a\":{}1{}}}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(!scan_object(deep.as_bytes(), &mut Scan::default()));
    }
}
