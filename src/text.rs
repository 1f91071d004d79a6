//! Untrusted text on a terminal: everything agents write (summaries, bodies, recipients,
//! reasons, file names) passes through [`inert`] before the console or the command line prints
//! it, so it can never drive the terminal.

/// Makes untrusted text safe to print: C0 controls become their Unicode control pictures
/// (`␛` for ESC), DEL becomes `␡`, C1 controls and bidi/invisible formatting characters become
/// `⟨U+XXXX⟩`, and the result is cut to `max` characters with `…`.
#[must_use]
pub fn inert(s: &str, max: usize) -> String {
    let mut out = String::with_capacity(s.len().min(max.saturating_mul(4)));
    for (n, c) in s.chars().enumerate() {
        if n >= max {
            out.push('…');
            break;
        }
        let cp = c as u32;
        match cp {
            0x00..=0x1f => out.push(char::from_u32(0x2400 + cp).unwrap_or('?')),
            0x7f => out.push('␡'),
            0x80..=0x9f | 0x200b..=0x200f | 0x202a..=0x202e | 0x2060..=0x2069 | 0xfeff | 0xfff9..=0xfffb => {
                out.push_str(&format!("⟨U+{cp:04X}⟩"));
            }
            _ => out.push(c),
        }
    }
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
}
