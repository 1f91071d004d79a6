//! RFC 3339 timestamps in the canonical form of the OpenTrustGraph producer profile
//! (`opentrustgraph.md` §4.5): `YYYY-MM-DDTHH:MM:SS`, then `.` and the fraction with trailing zeros
//! removed only when it is non-zero, then `Z`. warrant writes UTC at millisecond precision.

use time::format_description::well_known::Rfc3339;
use time::{OffsetDateTime, UtcOffset};

/// Formats `t` (converted to UTC, truncated to milliseconds) in the canonical form, e.g.
/// `2026-11-21T09:00:00Z` or `2026-11-21T09:00:00.12Z`.
#[must_use]
pub fn format_rfc3339(t: OffsetDateTime) -> String {
    let t = t.to_offset(UtcOffset::UTC);
    let mut s = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    );
    let millis = t.millisecond();
    if millis != 0 {
        let frac = format!("{millis:03}");
        s.push('.');
        s.push_str(frac.trim_end_matches('0'));
    }
    s.push('Z');
    s
}

/// The current time in the canonical form.
#[must_use]
pub fn now_rfc3339() -> String {
    format_rfc3339(OffsetDateTime::now_utc())
}

/// Parses an RFC 3339 timestamp (any offset, any fraction), returned in UTC. `None` when it is
/// not RFC 3339, or when the instant it names is outside the years 0000 to 9999 in UTC
/// (`9999-12-31T23:59:59-01:00` is in the year 10000 there): every later conversion to UTC, and
/// every formatting of it, is then safe.
#[must_use]
pub fn parse_rfc3339(s: &str) -> Option<OffsetDateTime> {
    // RFC 3339 (and JSON Schema `date-time`) allow only `T` or `t` between date and time; the
    // time crate accepts any byte there.
    if !matches!(s.as_bytes().get(10), Some(b'T' | b't')) {
        return None;
    }
    let utc = OffsetDateTime::parse(s, &Rfc3339).ok()?.checked_to_offset(UtcOffset::UTC)?;
    (0..=9999).contains(&utc.year()).then_some(utc)
}

/// Seconds since the Unix epoch of an RFC 3339 timestamp, with millisecond resolution.
#[must_use]
pub fn unix_seconds(s: &str) -> Option<f64> {
    parse_rfc3339(s).map(|t| t.unix_timestamp_nanos() as f64 / 1e9)
}

/// A short human age such as `12s`, `5m`, `3h`, `2d` for `seconds` (negative ages read `0s`).
#[must_use]
pub fn human_age(seconds: f64) -> String {
    let s = seconds.max(0.0) as u64;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m", s / 60),
        3600..86_400 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86_400),
    }
}

/// A duration a person or a policy file wrote: one syntax for every duration warrant reads
/// (`[expiry]`, `[timeouts] refuse_after`, a `rate_limit` window, `propose --expires`, a grant's
/// `until:`). `humantime`'s (`30s`, `30m`, `2h 30m`, `1d`, `2weeks`), or an ISO 8601 duration
/// (`PT10M`, `P1D`; the Lodestar and Trust Graduation documents write those; months are 30 days,
/// years 365). Callers refuse a zero duration where one means nothing.
///
/// # Errors
/// [`DurationError`] naming the text and both forms.
pub fn parse_duration(text: &str) -> Result<std::time::Duration, DurationError> {
    let text = text.trim();
    let parsed = if text.starts_with('P') {
        iso8601::duration(text).map(std::time::Duration::from).map_err(|e| e.to_string())
    } else {
        humantime::parse_duration(text).map_err(|e| e.to_string())
    };
    parsed.map_err(|reason| DurationError { text: text.to_owned(), reason })
}

/// A text that is not a duration ([`parse_duration`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not a duration: write one like 30m, 2h 30m or 1d (or ISO 8601, PT30M): {reason}")]
pub struct DurationError {
    /// The text, trimmed.
    pub text: String,
    /// Why the parser refused it.
    pub reason: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_duration_syntax_reads_humantime_and_iso_8601_alike() {
        use std::time::Duration;
        for (text, secs) in
            [("30m", 1800), ("2h 30m", 9000), ("1d", 86_400), (" 4s ", 4), ("PT10M", 600), ("P1D", 86_400)]
        {
            assert_eq!(parse_duration(text), Ok(Duration::from_secs(secs)), "{text}");
        }
        for text in ["", "forever", "10", "P1X", "30 parsecs", "-5m"] {
            let err = parse_duration(text).expect_err(text);
            assert_eq!(err.text, text.trim(), "{text}");
        }
    }
    use time::macros::datetime;

    #[test]
    fn trims_the_fraction_and_writes_z() {
        assert_eq!(format_rfc3339(datetime!(2026-04-19 18:42:11 UTC)), "2026-04-19T18:42:11Z");
        assert_eq!(format_rfc3339(datetime!(2026-04-19 18:42:11.120 UTC)), "2026-04-19T18:42:11.12Z");
        assert_eq!(format_rfc3339(datetime!(2026-04-19 20:42:11.5 +02:00)), "2026-04-19T18:42:11.5Z");
    }

    #[test]
    fn parses_and_ages() {
        let a = unix_seconds("2026-04-19T18:42:11Z").unwrap_or_default();
        let b = unix_seconds("2026-04-19T18:43:11.000+00:00").unwrap_or_default();
        assert!((b - a - 60.0).abs() < 1e-9);
        assert!(parse_rfc3339("yesterday").is_none());
        assert!(parse_rfc3339("2026-04-19 18:42:11Z").is_none());
        assert!(parse_rfc3339("2026-04-19x18:42:11Z").is_none());
        assert!(parse_rfc3339("2026-04-19t18:42:11z").is_some());
        assert_eq!(human_age(59.9), "59s");
        assert_eq!(human_age(3600.0), "1h");
        assert_eq!(human_age(-5.0), "0s");
    }
}
