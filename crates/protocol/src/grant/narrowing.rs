//! Class grants' constraints: a `class:` grant narrowed by amount and recipient domains, and
//! reading a call's amount and recipients' domains from its input.

use super::{CallFacts, NarrowingError};
use serde_json::{Map, Value, json};

/// The constraints of a class grant (`--scope class:max_amount=500;domain=example.com`), in
/// Trust Graduation's vocabulary: they only narrow what a call may do. Checked on the call's
/// input through the fields the principal's tool table declares (`[tools."<key>"] amount =
/// "amount"`, `recipients = ["to", "cc"]`); a call whose fields are missing or unreadable is not
/// covered. Signed as `"constraints": {"max_amount": 500, "domain_allowlist": ["example.com"]}`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Narrowing {
    /// The largest amount a covered call may move (a whole number, in the tool's own unit).
    pub max_amount: Option<u64>,
    /// The domains every recipient of a covered call must be at (lower case, exact), sorted.
    pub domain_allowlist: Vec<String>,
}

impl Narrowing {
    /// Parses `max_amount=500`, `domain=example.com,example.org`, or both joined by `;`.
    ///
    /// # Errors
    /// [`NarrowingError`], whose text says what is accepted.
    pub fn parse(text: &str) -> Result<Self, NarrowingError> {
        let mut n = Narrowing::default();
        for part in text.split(';').map(str::trim).filter(|p| !p.is_empty()) {
            match part.split_once('=').map(|(k, v)| (k.trim(), v.trim())) {
                Some(("max_amount", v)) if n.max_amount.is_none() => {
                    let amount = v.parse::<u64>().ok().filter(|a| *a <= MAX_SAFE_INTEGER);
                    n.max_amount = Some(amount.ok_or_else(|| NarrowingError::Amount(v.to_owned()))?);
                }
                Some(("domain", v)) if n.domain_allowlist.is_empty() => {
                    for d in v.split(',').map(str::trim) {
                        if !is_domain(d) {
                            return Err(NarrowingError::Domain(d.to_owned()));
                        }
                        n.domain_allowlist.push(d.to_ascii_lowercase());
                    }
                    n.domain_allowlist.sort_unstable();
                    n.domain_allowlist.dedup();
                }
                _ => {
                    return Err(NarrowingError::Term(part.to_owned()));
                }
            }
        }
        if n.max_amount.is_none() && n.domain_allowlist.is_empty() {
            return Err(NarrowingError::Empty);
        }
        Ok(n)
    }

    /// The signed form: `{"max_amount": N, "domain_allowlist": [...]}`, each when set.
    #[must_use]
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        if let Some(a) = self.max_amount {
            m.insert("max_amount".into(), json!(a));
        }
        if !self.domain_allowlist.is_empty() {
            m.insert("domain_allowlist".into(), json!(self.domain_allowlist));
        }
        Value::Object(m)
    }

    /// Reads the signed form back; `None` unless it is exactly what [`Narrowing::to_json`]
    /// writes for valid constraints.
    #[must_use]
    pub fn from_json(v: &Value) -> Option<Self> {
        let m = v.as_object()?;
        if m.keys().any(|k| k != "max_amount" && k != "domain_allowlist") {
            return None;
        }
        let max_amount = match m.get("max_amount") {
            None => None,
            Some(a) => Some(a.as_u64().filter(|a| *a <= MAX_SAFE_INTEGER)?),
        };
        let domain_allowlist: Vec<String> = match m.get("domain_allowlist") {
            None => Vec::new(),
            Some(d) => d
                .as_array()?
                .iter()
                .map(|x| x.as_str().filter(|s| is_domain(s)).map(str::to_owned))
                .collect::<Option<_>>()?,
        };
        let sorted = domain_allowlist.windows(2).all(|w| w[0] < w[1])
            && domain_allowlist.iter().all(|d| *d == d.to_ascii_lowercase());
        let n = Narrowing { max_amount, domain_allowlist };
        (sorted && (n.max_amount.is_some() || !n.domain_allowlist.is_empty())).then_some(n)
    }

    /// Whether a call with these facts is within the constraints.
    #[must_use]
    pub fn admits(&self, facts: &CallFacts) -> bool {
        let amount_ok = self.max_amount.is_none_or(|max| facts.amount.is_some_and(|a| a <= max as f64));
        let domains_ok = self.domain_allowlist.is_empty()
            || facts
                .recipient_domains
                .as_ref()
                .is_some_and(|ds| !ds.is_empty() && ds.iter().all(|d| self.domain_allowlist.binary_search(d).is_ok()));
        amount_ok && domains_ok
    }

    /// `amount at most 500 and every recipient at example.com`.
    #[must_use]
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(a) = self.max_amount {
            parts.push(format!("amount at most {a}"));
        }
        if !self.domain_allowlist.is_empty() {
            parts.push(format!("every recipient at {}", self.domain_allowlist.join(" or ")));
        }
        parts.join(" and ")
    }
}

impl std::fmt::Display for Narrowing {
    /// The form [`Narrowing::parse`] reads: `max_amount=500;domain=example.com`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = Vec::new();
        if let Some(a) = self.max_amount {
            parts.push(format!("max_amount={a}"));
        }
        if !self.domain_allowlist.is_empty() {
            parts.push(format!("domain={}", self.domain_allowlist.join(",")));
        }
        f.write_str(&parts.join(";"))
    }
}

/// The largest whole number JSON carries exactly (2^53 − 1): a larger amount is refused.
const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// A DNS domain as written in an address: labels of ASCII letters, digits and `-` (not at either
/// end), joined by dots, at least two labels, at most 253 bytes.
fn is_domain(d: &str) -> bool {
    let labels: Vec<&str> = d.split('.').collect();
    d.len() <= 253
        && labels.len() >= 2
        && labels.iter().all(|l| {
            (1..=63).contains(&l.len())
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        })
}

/// The domains of the recipients in a call's `input`, read from the `fields` the tool table
/// declares: each a string (one address, or several separated by commas) or an array of such
/// strings; an address is `local@domain`, or `Name <local@domain>`, with one `@`. `None` when a
/// value is of another type or an address cannot be read (the call is not covered), or no field
/// holds any recipient.
#[must_use]
pub fn recipient_domains(input: &Value, fields: &[String]) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut read = |s: &str| -> Option<()> {
        if s.chars().any(char::is_control) {
            return None;
        }
        for addr in s.split(',').map(str::trim).filter(|a| !a.is_empty()) {
            // `Name <local@domain>`: one pair of angle brackets closing the string, and a display
            // name with no address, quote or bracket of its own (mail parsers disagree on which
            // address `a@evil <b@ok>` names).
            let addr = match (addr.find('<'), addr.strip_suffix('>')) {
                (Some(open), Some(inner)) => {
                    let (name, inside) = (&inner[..open], &inner[open + 1..]);
                    if name.contains(['@', '"', '<', '>', '\\']) || inside.contains(['<', '>']) {
                        return None;
                    }
                    inside
                }
                (None, None) => addr,
                _ => return None,
            };
            let (local, domain) = addr.split_once('@')?;
            if local.is_empty()
                || domain.contains('@')
                || !is_domain(domain)
                || local.contains(['"', '<', '>', '(', ')', ',', ';', ':', '\\', '[', ']'])
                || local.chars().any(char::is_whitespace)
            {
                return None;
            }
            out.push(domain.to_ascii_lowercase());
        }
        Some(())
    };
    for f in fields {
        match input.get(f) {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) => read(s)?,
            Some(Value::Array(a)) => {
                for v in a {
                    read(v.as_str()?)?;
                }
            }
            Some(_) => return None,
        }
    }
    out.sort_unstable();
    out.dedup();
    (!out.is_empty()).then_some(out)
}

/// The amount in a call's `input` field `field`: a finite, non-negative JSON number.
#[must_use]
pub fn call_amount(input: &Value, field: &str) -> Option<f64> {
    input.get(field)?.as_f64().filter(|a| a.is_finite() && *a >= 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recipients_are_read_only_when_every_address_is_clear() {
        let fields = ["to".to_owned(), "cc".to_owned()];
        let got =
            recipient_domains(&json!({"to": "a@Example.com, Bo <b@x.example.org>", "cc": ["c@example.com"]}), &fields);
        assert_eq!(got, Some(vec!["example.com".to_owned(), "x.example.org".to_owned()]));
        for bad in [
            json!({"to": "a@evil.example <b@example.com>"}),
            json!({"to": "Name <a@evil.example> <b@example.com>"}),
            json!({"to": "<a@evil.example> <b@example.com>"}),
            json!({"to": "X\r\nBcc: x@evil.example <b@example.com>"}),
            json!({"to": "\"a@evil.example\" <b@example.com>"}),
            json!({"to": "\"a@evil.example\"@example.com"}),
            json!({"to": "a@b@example.com"}),
            json!({"to": "example.com"}),
            json!({"to": "a b@example.com"}),
            json!({"to": "<a@example.com"}),
            json!({"to": [1]}),
            json!({"to": {"address": "a@example.com"}}),
            json!({"subject": "none"}),
        ] {
            assert_eq!(recipient_domains(&bad, &fields), None, "{bad}");
        }
        assert_eq!(call_amount(&json!({"amount": 12.5}), "amount"), Some(12.5));
        for bad in [json!({"amount": "12"}), json!({"amount": -3}), json!({})] {
            assert_eq!(call_amount(&bad, "amount"), None, "{bad}");
        }
    }
}
