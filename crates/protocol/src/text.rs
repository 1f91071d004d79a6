//! Untrusted text on a terminal: everything agents write (summaries, bodies, recipients,
//! reasons, file names) passes through [`inert`] before the console or the command line prints
//! it, so it can never drive the terminal, hide part of itself, or disguise what is approved.

use unicode_width::UnicodeWidthChar as _;

/// How many zero-width characters (combining marks and the like) may follow one visible
/// character; the rest of a longer run is collapsed into one `⟨+N marks⟩`.
pub const MAX_MARKS: usize = 3;

/// The most characters [`inert`] writes for one character of input (`⟨U+XXXXX⟩`); the whole
/// output is at most `MAX_EXPANSION * max + 1` characters (see [`inert`]).
pub const MAX_EXPANSION: usize = 16;

/// True for a character that must never reach a terminal as itself: C0 and C1 controls, DEL,
/// every format character (Unicode category Cf: bidirectional embeddings, overrides, isolates
/// and marks, zero-width spaces and joiners, the BOM, tag characters, interlinear annotation),
/// the line and paragraph separators (U+2028, U+2029), and the remaining default-ignorable code
/// points (soft hyphen, variation selectors, Hangul fillers, combining grapheme joiner), which
/// render as nothing and can carry hidden text.
///
/// ```
/// use warrant_protocol::text::is_unsafe;
/// assert!(is_unsafe('\u{1b}') && is_unsafe('\u{9b}') && is_unsafe('\u{202e}') && is_unsafe('\u{2066}'));
/// assert!(is_unsafe('\u{200b}') && is_unsafe('\u{e0041}') && is_unsafe('\u{fe0f}'));
/// assert!(!is_unsafe('a') && !is_unsafe('é') && !is_unsafe('\u{301}') && !is_unsafe('漢'));
/// ```
#[must_use]
pub fn is_unsafe(c: char) -> bool {
    matches!(
        c as u32,
        0x00..=0x1f
            | 0x7f..=0x9f
            | 0xad
            | 0x34f
            | 0x600..=0x605
            | 0x61c
            | 0x6dd
            | 0x70f
            | 0x890..=0x891
            | 0x8e2
            | 0x115f..=0x1160
            | 0x17b4..=0x17b5
            | 0x180b..=0x180f
            | 0x200b..=0x200f
            | 0x2028..=0x202e
            | 0x2060..=0x206f
            | 0x3164
            | 0xfe00..=0xfe0f
            | 0xfeff
            | 0xffa0
            | 0xfff0..=0xfffb
            | 0x110bd
            | 0x110cd
            | 0x13430..=0x1343f
            | 0x1bca0..=0x1bca3
            | 0x1d173..=0x1d17a
            | 0xe0000..=0xe0fff
    )
}

/// Makes untrusted text safe to print, cut to `max` characters of input.
///
/// - C0 controls become their Unicode control pictures (`␛` for ESC, `␊` for a newline, `␉`
///   for TAB) and DEL becomes `␡`, so an escape sequence shows as text (`␛[31m`, `␛]52;c;…␇`);
/// - every other [`is_unsafe`] character (C1 controls such as U+009B CSI, bidi overrides and
///   isolates, zero-width and invisible characters, tag characters) becomes a visible
///   `⟨U+XXXX⟩`;
/// - at most [`MAX_MARKS`] zero-width characters (combining marks) follow one visible character;
///   the rest of a longer run (a "zalgo" flood), or zero-width characters with nothing before
///   them, are replaced by one `⟨+N marks⟩`;
/// - after `max` characters of input the text is cut and `…` appended.
///
/// The result contains no [`is_unsafe`] character and at most `MAX_EXPANSION * max + 1`
/// characters, whatever the input (a 1 MB line costs only what `max` allows).
///
/// ```
/// use warrant_protocol::text::inert;
/// assert_eq!(inert("a\u{1b}[2Jb\u{202e}c", 100), "a␛[2Jb⟨U+202E⟩c");
/// assert_eq!(inert("abcdef", 3), "abc…");
/// assert_eq!(inert(&format!("e{}", "\u{301}".repeat(10)), 100), format!("e{}⟨+7 marks⟩", "\u{301}".repeat(3)));
/// ```
#[must_use]
pub fn inert(s: &str, max: usize) -> String {
    let mut out = String::with_capacity(s.len().min(max.saturating_mul(4)));
    // Zero-width characters since the last visible one; `None` before any visible character.
    let mut run: Option<usize> = None;
    let mut hidden = 0_usize;
    let flush = |out: &mut String, hidden: &mut usize| {
        if *hidden > 0 {
            out.push_str(&format!("⟨+{hidden} marks⟩"));
            *hidden = 0;
        }
    };
    for (n, c) in s.chars().enumerate() {
        if n >= max {
            flush(&mut out, &mut hidden);
            out.push('…');
            return out;
        }
        let cp = c as u32;
        if is_unsafe(c) {
            flush(&mut out, &mut hidden);
            match cp {
                0x00..=0x1f => out.push(char::from_u32(0x2400 + cp).unwrap_or('?')),
                0x7f => out.push('␡'),
                _ => out.push_str(&format!("⟨U+{cp:04X}⟩")),
            }
            run = Some(0);
        } else if c.width() == Some(0) {
            match run {
                Some(k) if k < MAX_MARKS && hidden == 0 => {
                    out.push(c);
                    run = Some(k + 1);
                }
                _ => hidden += 1,
            }
        } else {
            flush(&mut out, &mut hidden);
            out.push(c);
            run = Some(0);
        }
    }
    flush(&mut out, &mut hidden);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inert_neutralises_escapes_controls_and_bidi() {
        let s = inert("a\u{1b}[31mred\u{7}\u{202e}evil\u{9b}\tz", 100);
        assert!(!s.chars().any(|c| c.is_control()), "{s:?}");
        assert!(s.contains("␛[31m") && s.contains("⟨U+202E⟩") && s.contains("⟨U+009B⟩") && s.contains('␉'));
        assert_eq!(inert("abcdef", 3), "abc…");
    }

    #[test]
    fn combining_floods_are_collapsed_and_leading_marks_shown() {
        assert_eq!(inert("\u{301}\u{301}x", 10), "⟨+2 marks⟩x");
        let flood = format!("a{}b", "\u{36f}".repeat(100_000));
        let s = inert(&flood, usize::MAX);
        assert_eq!(s, format!("a{}⟨+99997 marks⟩b", "\u{36f}".repeat(3)));
        // Cut inside the flood: the hidden marks are still counted.
        assert_eq!(inert(&flood, 10), format!("a{}⟨+6 marks⟩…", "\u{36f}".repeat(3)));
        // Ordinary accents and scripts pass unchanged.
        for ok in ["Dana Müller", "Tiếng Việt", "日本語のテキスト", "मानक हिन्दी", "שָׁלוֹם"]
        {
            assert_eq!(inert(ok, 100), ok);
        }
    }

    #[test]
    fn invisible_and_separator_characters_are_visible() {
        assert_eq!(inert("a\u{2028}b\u{ad}c\u{e0041}", 100), "a⟨U+2028⟩b⟨U+00AD⟩c⟨U+E0041⟩");
        assert_eq!(inert("\u{3164}", 100), "⟨U+3164⟩");
        assert_eq!(inert("\u{61c}\u{2066}\u{2069}", 100), "⟨U+061C⟩⟨U+2066⟩⟨U+2069⟩");
    }
}

/// Agent ids that look alike on screen: each id of `ids` whose UTS #39 confusable skeleton
/// (`unicode-security`, [`unicode_security::confusable_detection::skeleton`]), lowered, equals another id's,
/// mapped to the first such other id (by sort order). `agent-r0gue` and `agent-rogue`, or
/// `agent-1` and `agent-l`, look alike; ids with different skeletons never match.
#[must_use]
pub fn confusable_ids<'a>(ids: impl IntoIterator<Item = &'a str>) -> std::collections::HashMap<String, String> {
    let mut by_skeleton: std::collections::BTreeMap<String, Vec<&str>> = std::collections::BTreeMap::new();
    for id in ids {
        // UTS #39 maps `0` to `O` and `1` to `l`; lowering the skeleton also pairs ids that
        // differ only in case.
        let skeleton = unicode_security::confusable_detection::skeleton(id).collect::<String>().to_lowercase();
        by_skeleton.entry(skeleton).or_default().push(id);
    }
    let mut out = std::collections::HashMap::new();
    for mut group in by_skeleton.into_values().filter(|g| g.len() > 1) {
        group.sort_unstable();
        group.dedup();
        for id in &group {
            if let Some(other) = group.iter().find(|o| *o != id) {
                out.insert((*id).to_owned(), (*other).to_owned());
            }
        }
    }
    out
}

#[cfg(test)]
mod confusable_tests {
    #[test]
    fn look_alike_agent_ids_are_found_and_different_ones_are_not() {
        let found =
            super::confusable_ids(["agent-rogue", "agent-r0gue", "agent-scribe", "agent-1", "agent-l", "agent-x"]);
        assert_eq!(found.get("agent-r0gue").map(String::as_str), Some("agent-rogue"));
        assert_eq!(found.get("agent-rogue").map(String::as_str), Some("agent-r0gue"));
        assert_eq!(found.get("agent-1").map(String::as_str), Some("agent-l"));
        assert!(!found.contains_key("agent-scribe") && !found.contains_key("agent-x"), "{found:?}");
    }
}
