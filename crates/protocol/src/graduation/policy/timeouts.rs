//! Class timeouts (`[timeouts]` in `policy.toml`): how long a held packet of a class waits for
//! the principal.

use super::{PolicyError, PolicySet};
use crate::glob::{Glob, is_glob, specificity};
use crate::packet::is_class_id;

/// `[timeouts."<class or glob>"]` as written.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct TimeoutDef {
    /// An ISO 8601 duration (`PT10M`).
    #[serde(default)]
    refuse_after: Option<String>,
    /// `"forever"`: the host's own wait stands.
    #[serde(default)]
    wait: Option<String>,
    /// With `refuse_after`: the principal's console signs the refusal as a system decision
    /// (`"system": "timeout"`, never evidence); an error with `wait = "forever"`.
    #[serde(default)]
    sign_refusal: bool,
}

/// How long a held packet of a class waits for the principal (`[timeouts]` in `policy.toml`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClassTimeout {
    /// Refused after this long undecided (`refuse_after`): the agent is told `timeout`; nothing
    /// is signed unless `sign`.
    RefuseAfter {
        /// The wait, from when the packet arrived.
        after: std::time::Duration,
        /// `sign_refusal = true`: the principal's running console signs the refusal as a system
        /// decision (`decision::SystemCause::Timeout`), which decides the packet but is never the
        /// principal's evidence for the class (`docs/conformance.md`, class timeouts).
        sign: bool,
    },
    /// `wait = "forever"`: as long as the host waits (`--wait`).
    Forever,
}

impl ClassTimeout {
    /// The wait of a hook or gateway whose own wait is `host`: capped by `refuse_after`.
    #[must_use]
    pub fn cap(self, host: std::time::Duration) -> std::time::Duration {
        match self {
            ClassTimeout::RefuseAfter { after, .. } => host.min(after),
            ClassTimeout::Forever => host,
        }
    }

    /// `refuse_after`, if set.
    #[must_use]
    pub fn refuse_after(self) -> Option<std::time::Duration> {
        match self {
            ClassTimeout::RefuseAfter { after, .. } => Some(after),
            ClassTimeout::Forever => None,
        }
    }

    /// True when the refusal at `refuse_after` is signed as a system decision
    /// (`sign_refusal = true`).
    #[must_use]
    pub fn signs_refusal(self) -> bool {
        matches!(self, ClassTimeout::RefuseAfter { sign: true, .. })
    }
}

/// One `[timeouts]` entry, its key compiled when it is a glob.
#[derive(Debug, Clone)]
pub(super) struct TimeoutRule {
    pub(super) key: String,
    glob: Option<Glob>,
    timeout: ClassTimeout,
}

/// Reads one `[timeouts."<key>"]` entry.
pub(super) fn timeout_rule(key: String, def: TimeoutDef) -> Result<TimeoutRule, PolicyError> {
    let bad = |message: String| PolicyError::Class { id: format!("timeouts.{key}"), message };
    let timeout = match (def.refuse_after.as_deref(), def.wait.as_deref()) {
        (Some(text), None) => {
            let d = crate::clock::parse_duration(text).map_err(|e| bad(format!("refuse_after: {e}")))?;
            if d.is_zero() {
                return Err(bad("refuse_after must be longer than zero".into()));
            }
            ClassTimeout::RefuseAfter { after: d, sign: def.sign_refusal }
        }
        // A refusal is signed when the wait ends: a wait that never ends has nothing to sign.
        (None, Some("forever")) if def.sign_refusal => {
            return Err(bad("sign_refusal needs refuse_after: wait = \"forever\" never refuses".into()));
        }
        (None, Some("forever")) => ClassTimeout::Forever,
        (None, Some(other)) => return Err(bad(format!("wait = {other:?}: the only wait is \"forever\""))),
        (Some(_), Some(_)) => return Err(bad("give refuse_after or wait = \"forever\", not both".into())),
        (None, None) => return Err(bad("give refuse_after = \"PT10M\" or wait = \"forever\"".into())),
    };
    let glob = if is_glob(&key) {
        Some(Glob::new(&key).map_err(|e| bad(e.to_string()))?)
    } else if is_class_id(&key) {
        None
    } else {
        return Err(bad("not a class id or a glob of class ids".into()));
    };
    Ok(TimeoutRule { key, glob, timeout })
}

impl PolicySet {
    /// True when some `[timeouts]` entry has `sign_refusal = true` (the console looks for
    /// timed-out packets to refuse only then).
    #[must_use]
    pub fn signs_timeouts(&self) -> bool {
        self.timeouts.iter().any(|r| r.timeout.signs_refusal())
    }

    /// How long a held packet of `class` waits for the principal (`[timeouts]`): the entry for
    /// its canonical id, else the most specific glob that matches it (ties: the shorter wait),
    /// else `None` (the host's wait stands).
    #[must_use]
    pub fn class_timeout(&self, class: &str) -> Option<ClassTimeout> {
        let canonical = self.normalize(class);
        let raw = class.trim().to_lowercase();
        // An exact key names the class by its id or an alias.
        if let Some(r) = self.timeouts.iter().find(|r| r.glob.is_none() && self.normalize(&r.key) == canonical) {
            return Some(r.timeout);
        }
        let wait = |t: ClassTimeout| t.refuse_after().unwrap_or(std::time::Duration::MAX);
        self.timeouts
            .iter()
            .filter(|r| r.glob.as_ref().is_some_and(|g| g.is_match(&canonical) || g.is_match(&raw)))
            .max_by(|a, b| specificity(&a.key).cmp(&specificity(&b.key)).then(wait(b.timeout).cmp(&wait(a.timeout))))
            .map(|r| r.timeout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_timeouts_from_toml() {
        let set = PolicySet::from_toml(
            r#"
            [timeouts."email.*"]
            refuse_after = "PT10M"
            [timeouts."email.send.external"]
            refuse_after = "PT30S"
            sign_refusal = true
            [timeouts."payment.spend"]
            refuse_after = "PT5M"
            sign_refusal = false
            [timeouts."*"]
            wait = "forever"
            "#,
        )
        .expect("parses");
        let ten = std::time::Duration::from_secs(600);
        let after =
            |secs: u64, sign: bool| ClassTimeout::RefuseAfter { after: std::time::Duration::from_secs(secs), sign };
        assert_eq!(set.class_timeout("email.send.external"), Some(after(30, true)));
        assert!(set.class_timeout("email.send.external").is_some_and(ClassTimeout::signs_refusal));
        assert_eq!(set.class_timeout("email.draft"), Some(after(600, false)));
        // A key may name a class by an alias; a glob matches the class as the packet names it too.
        assert_eq!(set.class_timeout("payment.initiate"), Some(after(300, false)));
        assert_eq!(set.class_timeout("email.draft.external"), Some(after(600, false)));
        assert_eq!(set.class_timeout("file.write"), Some(ClassTimeout::Forever));
        assert!(!ClassTimeout::Forever.signs_refusal());
        assert!(set.signs_timeouts());
        assert_eq!(after(600, false).cap(std::time::Duration::from_secs(60)).as_secs(), 60);
        assert_eq!(after(600, true).refuse_after(), Some(ten));
        assert_eq!(ClassTimeout::Forever.cap(std::time::Duration::from_secs(60)).as_secs(), 60);
        assert_eq!(PolicySet::builtin().class_timeout("email.draft"), None);
        assert!(!PolicySet::builtin().signs_timeouts());
        let unsigned = PolicySet::from_toml("[timeouts.\"x.y\"]\nrefuse_after = \"PT1M\"").expect("parses");
        assert!(!unsigned.signs_timeouts());
        // The one duration syntax: ISO 8601 or humantime's, alike.
        let short = PolicySet::from_toml("[timeouts.\"x.y\"]\nrefuse_after = \"1m\"").expect("parses");
        assert_eq!(short.class_timeout("x.y"), unsigned.class_timeout("x.y"));
        for bad in [
            "[timeouts.\"x.y\"]\nrefuse_after = \"ten minutes\"",
            "[timeouts.\"x.y\"]\nwait = \"long\"",
            // A wait that never ends refuses nothing, so there is no refusal to sign.
            "[timeouts.\"x.y\"]\nwait = \"forever\"\nsign_refusal = true",
            "[timeouts.\"x.y\"]\nsign_refusal = true",
            "[timeouts.\"x.y\"]\nrefuse_after = \"PT1M\"\nsign_refusal = \"yes\"",
            "[timeouts.\"x.y\"]\nrefuse_after = \"PT1M\"\nwait = \"forever\"",
            "[timeouts.\"x.y\"]\nrefuse_after = \"PT0S\"",
            "[timeouts.\"x.y\"]\n",
            "[timeouts.\"Not A Class\"]\nwait = \"forever\"",
        ] {
            assert!(PolicySet::from_toml(bad).is_err(), "{bad}");
        }
        let err = PolicySet::from_toml("[timeouts.\"x.y\"]\nwait = \"forever\"\nsign_refusal = true")
            .expect_err("forever and sign_refusal")
            .to_string();
        assert!(err.contains("sign_refusal needs refuse_after"), "{err}");
    }
}
