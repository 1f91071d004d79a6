//! Single uses of grants and approvals, and the gate's own runs, claimed in `uses/`.

use super::{Spool, read_limited};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::fs;
use std::io;
use std::path::Path;
use warrant_protocol::packet;

/// The suffix of the files that claim one use of a grant or of an approval, in `uses/`.
pub const USE_SUFFIX: &str = ".use";

/// Claims one use of `grant` for the call packet `packet_id`, atomically across processes: a
/// file `uses/grant+<grant_id>+<n>.use` created with `O_EXCL` for the first free `n` ≤
/// `max_uses` (synced, with its directory, before this returns), or, for a grant with no bound,
/// `uses/grant+<grant_id>+<packet_id>.use`. The file names the grant, the packet and the time:
/// the record of which grant allowed which call. `Ok(None)` when every use is taken: of racing
/// callers, exactly `max_uses` succeed.
///
/// Where agents run as their own users, the files are theirs: an agent that deletes its claims
/// could use a bounded grant again (`docs/spool.md`, "Trust boundary"); the audit counts them.
///
/// # Errors
/// I/O errors other than a taken use (each is a refusal for the caller).
pub fn claim_grant_use(
    spool: &Spool,
    grant: &warrant_protocol::grant::Grant,
    packet_id: &str,
) -> io::Result<Option<u64>> {
    if !packet::is_safe_id(packet_id) || !packet::is_safe_id(&grant.grant_id) {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "unsafe grant or packet id"));
    }
    let dir = spool.uses_dir();
    fs::create_dir_all(&dir)?;
    let body = |n: Option<u64>| {
        serde_json::json!({
            "type": "warrant_grant_use", "grant_id": grant.grant_id, "packet_id": packet_id,
            "use": n, "at": warrant_protocol::clock::now_rfc3339(),
        })
    };
    match grant.max_uses {
        None => {
            let path = dir.join(format!("grant+{}+{packet_id}{USE_SUFFIX}", grant.grant_id));
            match create_claim(spool, &path, &body(None)) {
                Ok(()) => Ok(Some(0)),
                // The same packet judged again (a retried hook): still this grant's one use.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(Some(0)),
                Err(e) => Err(e),
            }
        }
        Some(max) => {
            for n in 1..=max {
                let path = dir.join(format!("grant+{}+{n}{USE_SUFFIX}", grant.grant_id));
                match create_claim(spool, &path, &body(Some(n))) {
                    Ok(()) => return Ok(Some(n)),
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(e),
                }
            }
            Ok(None)
        }
    }
}

/// Claims the one use of the principal's approval of `packet_id` for this process's user, the
/// packet's publisher: an approval answers one call, so of several processes waiting on one
/// packet (a retried hook, a replayed call) exactly one runs it. `Ok(false)` when it was used.
///
/// A use is a file this user owns (`O_EXCL`, synced), so another user in the agents' group
/// cannot take it by planting a file under the claim's name (`uses/` is shared, and its names
/// are predictable): the claim is `uses/approval+<id>.use`, or, when a file of another owner
/// holds that name, `uses/approval+<id>+u<uid>.use`. A process that makes one of the two names
/// then looks for the other: if this user owns both, a racing process made the other, and the
/// later answer is `Ok(false)` (two racers can both lose; never both win). The two names are
/// checked in the same order by every claimer.
///
/// # Errors
/// An unsafe id; both names held by other owners (the call must not run, and the principal is
/// told who planted them); other I/O errors.
pub fn claim_approval(spool: &Spool, packet_id: &str) -> io::Result<bool> {
    claim_once(spool, "approval", packet_id)
}

/// Claims the one run of the corrected call of the principal's approval-as-corrected of
/// `packet_id`, for a host that could not run the correction in place of the agent's call (the
/// call was refused with the corrected input, and the agent's next call with exactly that input
/// runs once): as [`claim_approval`], under `uses/correction+<id>.use`. `Ok(false)` when it ran.
///
/// # Errors
/// As [`claim_approval`].
pub fn claim_corrected_run(spool: &Spool, packet_id: &str) -> io::Result<bool> {
    claim_once(spool, "correction", packet_id)
}

/// Where a hook that refused a call approved as corrected (its host cannot change a call's
/// input) leaves the packet id for the agent's next call with exactly the corrected input:
/// `uses/corrected+<key>.json`, `key` being [`warrant_protocol::calls::call_key`] of the
/// corrected call. What it says is never trusted: the call runs only when the principal's
/// verified decision on that packet names exactly that call ([`claim_corrected_run`] once).
#[must_use]
fn corrected_call_path(spool: &Spool, key: &str) -> std::path::PathBuf {
    spool.uses_dir().join(format!("corrected+{key}.json"))
}

/// Records that the call whose [`warrant_protocol::calls::call_key`] is `key` is the correction
/// the principal approved for `packet_id` (`uses/corrected+<key>.json`), synced.
///
/// # Errors
/// An unsafe id or key; I/O errors.
pub fn record_corrected_call(spool: &Spool, key: &str, packet_id: &str) -> io::Result<()> {
    if !packet::is_safe_id(packet_id) || !packet::is_safe_id(key) {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "unsafe packet id or call key"));
    }
    fs::create_dir_all(spool.uses_dir())?;
    let body = serde_json::json!({"type": "warrant_corrected_call", "packet_id": packet_id,
        "at": warrant_protocol::clock::now_rfc3339()});
    crate::atomic::write_atomic(&corrected_call_path(spool, key), &serde_json::to_vec(&body)?, 0o644)
}

/// The packet id [`record_corrected_call`] left for the call `key`, if any (an agent may write
/// it: the caller checks it against the principal's signed decision).
#[must_use]
pub fn corrected_call_of(spool: &Spool, key: &str) -> Option<String> {
    let bytes = read_limited(&corrected_call_path(spool, key)).ok()?;
    let v: Value = serde_json::from_slice(&bytes).ok()?;
    v.get("packet_id").and_then(Value::as_str).filter(|id| packet::is_safe_id(id)).map(str::to_owned)
}

/// One use named `<kind>+<id>` for this process's user ([`claim_approval`]'s rules).
fn claim_once(spool: &Spool, kind: &str, packet_id: &str) -> io::Result<bool> {
    if !packet::is_safe_id(packet_id) {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "unsafe packet id"));
    }
    let dir = spool.uses_dir();
    fs::create_dir_all(&dir)?;
    let me = rustix::process::geteuid().as_raw();
    let primary = dir.join(format!("{kind}+{packet_id}{USE_SUFFIX}"));
    let own = dir.join(format!("{kind}+{packet_id}+u{me}{USE_SUFFIX}"));
    let body = serde_json::json!({
        "type": format!("warrant_{kind}_use"), "packet_id": packet_id, "uid": me,
        "at": warrant_protocol::clock::now_rfc3339(),
    });
    // Who holds a claim's name: `Some(uid)`, `None` when no file has it here (in a replica, the
    // store may still hold it: `create_claim` says so).
    let holder = |p: &Path| match fs::symlink_metadata(p) {
        Ok(m) => Ok(Some(std::os::unix::fs::MetadataExt::uid(&m))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    };
    let planted = |p: &Path, uid: u32| {
        io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("{} was made by {}, not by this packet's publisher", p.display(), super::publisher_label(uid)),
        )
    };
    match create_claim(spool, &primary, &body) {
        Ok(()) => return Ok(holder(&own)? != Some(me)),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    match holder(&primary)? {
        // Taken by this user (or, in a replica, on another host): used.
        Some(uid) if uid == me => return Ok(false),
        None => return Ok(false),
        Some(_) => {}
    }
    match create_claim(spool, &own, &body) {
        // The planted file stays; the primary name was another owner's when this looked.
        Ok(()) => Ok(holder(&primary)? != Some(me)),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => match holder(&own)? {
            Some(uid) if uid != me => Err(planted(&own, uid)),
            _ => Ok(false),
        },
        Err(e) => Err(e),
    }
}

/// Why a call packet can no longer run, whoever approves it now ([`withdrawn`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Withdrawn {
    /// What the hook or gateway answered (`timeout`, `refused`, `cancelled`, …); `"expired"`
    /// when its wait ran out with no answer recorded; `"abandoned"` when no process waits for it
    /// any more (a killed hook, an interrupted host, a gateway that died).
    pub status: String,
    /// When (RFC 3339): the answer's time, or the end of the wait.
    pub at: String,
}

/// The status [`record_answer`] records for a call a hook or gateway let run.
pub const ALLOWED: &str = "allowed";

impl Withdrawn {
    /// Whether a hook or gateway answered the call (not only stopped waiting for it).
    #[must_use]
    pub fn answered(&self) -> bool {
        !matches!(self.status.as_str(), "expired" | "abandoned")
    }

    /// Whether the answer let the call run ([`ALLOWED`]): it is no longer the principal's to
    /// decide, and a retry of the same call gets the same answer.
    #[must_use]
    pub fn ran(&self) -> bool {
        self.status == ALLOWED
    }
}

impl std::fmt::Display for Withdrawn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.status.as_str() {
            ALLOWED => write!(f, "it ran: the hook or gateway let it run at {}", self.at),
            "expired" => write!(f, "the hook or gateway holding it stopped waiting at {}", self.at),
            "abandoned" => write!(f, "no hook or gateway waits for it any more (seen at {})", self.at),
            status => write!(f, "the hook or gateway answered it ({status}) at {}", self.at),
        }
    }
}

/// How long before the end of a hook's wait an approval is no longer taken
/// ([`withdrawn`]): the hook looks for a decision once more at the end, so a decision written
/// this long before it is seen.
pub const WITHDRAW_MARGIN: std::time::Duration = std::time::Duration::from_secs(1);

/// A hook's or gateway's hold on a call it waits for ([`record_wait`]): a shared lock on the
/// wait's record, kept while this value lives. When no process holds one, the call is
/// withdrawn at once ([`withdrawn`]): a hook its host killed, an interrupted host, a gateway
/// that died waiting.
#[derive(Debug)]
pub struct WaitHold {
    _locked: Option<fs::File>,
}

/// This machine's boot id and the spool's canonical path: a wait's record names them, so a
/// reader knows whether the process that made it could hold its lock here (not a record a
/// replica copied from a store, made on another machine or spool).
fn wait_place(spool: &Spool) -> (String, String) {
    static BOOT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let boot = BOOT.get_or_init(|| {
        fs::read_to_string("/proc/sys/kernel/random/boot_id").map(|s| s.trim().to_owned()).unwrap_or_default()
    });
    let root = fs::canonicalize(spool.root()).map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
    (boot.clone(), root)
}

/// Records, before a hook or gateway waits for the principal's decision on the call packet
/// `packet_id`, when it stops waiting (`uses/until+<id>.use`, synced), and holds a shared lock
/// on it while the returned [`WaitHold`] lives: after `until` (less [`WITHDRAW_MARGIN`]), or
/// as soon as no process holds the lock, no approval can run the call, whatever the packet's own
/// `expires_at` says (an agent can rewrite its own file; this record is the hook's). The first
/// record stands: a retried hook joins its wait (its lock counts) and does not extend it.
///
/// # Errors
/// An unsafe id; I/O errors (the call must then not wait).
pub fn record_wait(spool: &Spool, packet_id: &str, until: time::OffsetDateTime) -> io::Result<WaitHold> {
    use std::os::unix::fs::OpenOptionsExt as _;
    if !packet::is_safe_id(packet_id) {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "unsafe packet id"));
    }
    let dir = spool.uses_dir();
    fs::create_dir_all(&dir)?;
    let path = dir.join(format!("until+{packet_id}{USE_SUFFIX}"));
    let (host, root) = wait_place(spool);
    let body = serde_json::json!({
        "type": "warrant_wait", "packet_id": packet_id,
        "until": warrant_protocol::clock::format_rfc3339(until), "host": host, "spool": root,
    });
    let mut bytes = serde_json::to_vec(&body).map_err(io::Error::other)?;
    bytes.push(b'\n');
    if let Some(store) = spool.chain_upstream() {
        match store.claim(&path, &bytes) {
            Ok(()) => {}
            // Another host waits for it: its record stands.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Ok(WaitHold { _locked: None }),
            Err(e) => return Err(e),
        }
    }
    // Made under a private name, locked, written and synced, then linked into place: no reader
    // ever sees the record unlocked while its maker lives.
    let open_flags = rustix::fs::OFlags::NOFOLLOW.bits() as i32;
    let (tmp, mut f) = private_twin(&path)?;
    let made = (|| {
        f.lock_shared()?;
        io::Write::write_all(&mut f, &bytes)?;
        f.sync_all()?;
        fs::hard_link(&tmp, &path)
    })();
    let _ = fs::remove_file(&tmp);
    match made {
        Ok(()) => {
            fs::File::open(&dir)?.sync_all()?;
            Ok(WaitHold { _locked: Some(f) })
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            // A retried hook: it holds the call too while it waits.
            let existing = fs::OpenOptions::new().read(true).custom_flags(open_flags).open(&path)?;
            existing.lock_shared()?;
            Ok(WaitHold { _locked: Some(existing) })
        }
        Err(e) => Err(e),
    }
}

/// Whether the wait recorded at `path` (its body `v`) was made on this machine for this spool
/// and no process holds it any more (its maker died or stopped waiting without an answer).
fn wait_abandoned(spool: &Spool, path: &Path, v: Option<&Value>) -> bool {
    use std::os::unix::fs::OpenOptionsExt as _;
    let Some(v) = v else { return false };
    let (host, root) = wait_place(spool);
    let made_here = !host.is_empty()
        && v.get("host").and_then(Value::as_str) == Some(host.as_str())
        && v.get("spool").and_then(Value::as_str) == Some(root.as_str());
    if !made_here {
        return false;
    }
    let flags = rustix::fs::OFlags::NOFOLLOW.bits() as i32;
    let Ok(f) = fs::OpenOptions::new().read(true).custom_flags(flags).open(path) else { return false };
    // Taken and let go at once: only whether someone holds it matters.
    f.try_lock().is_ok()
}

/// Records that a hook or gateway answered the call packet `packet_id` without running it
/// (`uses/answered+<id>.use` with `status`: `timeout`, `cancelled`, `refused`, …): once a call
/// is answered, no later decision runs it ([`withdrawn`]). The first answer stands.
///
/// # Errors
/// An unsafe id; I/O errors other than an existing record.
pub fn record_answer(spool: &Spool, packet_id: &str, status: &str) -> io::Result<()> {
    let body = serde_json::json!({
        "type": "warrant_answer", "packet_id": packet_id, "status": status,
        "at": warrant_protocol::clock::now_rfc3339(),
    });
    record_once(spool, "answered", packet_id, &body)
}

/// Whether the call packet `packet_id` was withdrawn at `now`: a hook or gateway answered it
/// ([`record_answer`]), or the wait it recorded ([`record_wait`]) ends within
/// [`WITHDRAW_MARGIN`] of `now`. Only records owned by `publisher` count (the packet file's
/// owner; `None`: any owner), so another user cannot withdraw an agent's call. A record that
/// cannot be read or parsed withdraws the call (it holds; it never runs more).
#[must_use]
pub fn withdrawn(
    spool: &Spool,
    packet_id: &str,
    publisher: Option<u32>,
    now: time::OffsetDateTime,
) -> Option<Withdrawn> {
    use std::os::unix::fs::MetadataExt as _;
    if !packet::is_safe_id(packet_id) {
        return None;
    }
    let record = |kind: &str| -> Option<Option<Value>> {
        let path = spool.uses_dir().join(format!("{kind}+{packet_id}{USE_SUFFIX}"));
        let meta = fs::symlink_metadata(&path).ok()?;
        if publisher.is_some_and(|uid| uid != meta.uid()) {
            return None;
        }
        Some(read_limited(&path).ok().and_then(|b| serde_json::from_slice(&b).ok()))
    };
    let text = |v: &Option<Value>, key: &str| v.as_ref().and_then(|v| v.get(key)?.as_str().map(str::to_owned));
    if let Some(v) = record("answered") {
        let status = text(&v, "status").filter(|s| packet::is_safe_id(s)).unwrap_or_else(|| "unreadable".into());
        return Some(Withdrawn { status, at: text(&v, "at").unwrap_or_default() });
    }
    let v = record("until")?;
    let until = text(&v, "until");
    let end = until.as_deref().and_then(warrant_protocol::clock::parse_rfc3339);
    let margin = time::Duration::try_from(WITHDRAW_MARGIN).unwrap_or(time::Duration::ZERO);
    match end {
        Some(t) if now < t - margin => {
            let path = spool.uses_dir().join(format!("until+{packet_id}{USE_SUFFIX}"));
            wait_abandoned(spool, &path, v.as_ref())
                .then(|| Withdrawn { status: "abandoned".into(), at: warrant_protocol::clock::format_rfc3339(now) })
        }
        _ => Some(Withdrawn { status: "expired".into(), at: until.unwrap_or_default() }),
    }
}

/// How long after a PreToolUse answer the host's PermissionRequest for the same call is
/// answered by it ([`permission_answered_by`]).
pub const PERMISSION_AFTER: std::time::Duration = std::time::Duration::from_secs(120);

/// Records that the call `key` (a digest of its session, tool and input:
/// [`warrant_protocol::calls::call_key`]) was let run on its PreToolUse as packet `packet_id`,
/// `by_principal` or by the gate alone (`uses/call+<key>.use`): the PermissionRequest the host
/// may send for the same call next is answered by it ([`permission_answered_by`]), not made a
/// second packet.
///
/// # Errors
/// An unsafe key or id; I/O errors other than an existing record.
pub fn record_call(spool: &Spool, key: &str, packet_id: &str, by_principal: bool) -> io::Result<()> {
    let body = serde_json::json!({
        "type": "warrant_call", "packet_id": packet_id, "by_principal": by_principal,
        "at": warrant_protocol::clock::now_rfc3339(),
    });
    record_once(spool, "call", key, &body)
}

/// The PreToolUse answer a PermissionRequest for the call `key` takes, once: the packet id and
/// whether the principal approved it, when this user recorded that call as let run within
/// [`PERMISSION_AFTER`] of `now` ([`record_call`]) and no other PermissionRequest took it
/// (`uses/permission+<key>.use`, `O_EXCL`). `None` otherwise: the request is its own packet.
///
/// # Errors
/// I/O errors taking the answer.
pub fn permission_answered_by(
    spool: &Spool,
    key: &str,
    now: time::OffsetDateTime,
) -> io::Result<Option<(String, bool)>> {
    use std::os::unix::fs::MetadataExt as _;
    if !packet::is_safe_id(key) {
        return Ok(None);
    }
    let path = spool.uses_dir().join(format!("call+{key}{USE_SUFFIX}"));
    let Ok(meta) = fs::symlink_metadata(&path) else { return Ok(None) };
    if meta.uid() != rustix::process::geteuid().as_raw() {
        return Ok(None);
    }
    let Some(v) = read_limited(&path).ok().and_then(|b| serde_json::from_slice::<Value>(&b).ok()) else {
        return Ok(None);
    };
    let at = v.get("at").and_then(Value::as_str).and_then(warrant_protocol::clock::parse_rfc3339);
    let recent = at.is_some_and(|t| now - t <= time::Duration::try_from(PERMISSION_AFTER).unwrap_or_default());
    let (Some(id), Some(by_principal)) =
        (v.get("packet_id").and_then(Value::as_str), v.get("by_principal").and_then(Value::as_bool))
    else {
        return Ok(None);
    };
    if !recent || !packet::is_safe_id(id) {
        return Ok(None);
    }
    let taken = serde_json::json!({"type": "warrant_permission", "packet_id": id, "at": warrant_protocol::clock::format_rfc3339(now)});
    match create_record(spool, "permission", key, &taken) {
        Ok(()) => Ok(Some((id.to_owned(), by_principal))),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(None),
        Err(e) => Err(e),
    }
}

/// [`create_record`], where a record already there is the same fact recorded before: `Ok`.
fn record_once(spool: &Spool, kind: &str, id: &str, body: &Value) -> io::Result<()> {
    match create_record(spool, kind, id, body) {
        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => Err(e),
        _ => Ok(()),
    }
}

/// Creates the record `uses/<kind>+<id>.use` ([`create_claim`]).
fn create_record(spool: &Spool, kind: &str, packet_id: &str, body: &Value) -> io::Result<()> {
    if !packet::is_safe_id(packet_id) {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "unsafe packet id"));
    }
    let dir = spool.uses_dir();
    fs::create_dir_all(&dir)?;
    create_claim(spool, &dir.join(format!("{kind}+{packet_id}{USE_SUFFIX}")), body)
}

/// Records, before the call runs, that the gate let the call packet `packet_id` run on its own
/// within its class's `rate_limit` (`uses/gate+<id>.use`, `O_EXCL`, synced with its directory
/// before this returns): the call then counts against the limit for the whole window
/// ([`gate_runs`]), also after its packet expired with the hook's wait and whether or not a
/// receipt ever names it. The same packet judged again (a retried hook) finds its record.
///
/// # Errors
/// An unsafe id; I/O errors other than an existing record (the call must then not run).
pub fn record_gate_run(spool: &Spool, packet_id: &str) -> io::Result<()> {
    if !packet::is_safe_id(packet_id) {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "unsafe packet id"));
    }
    let body = serde_json::json!({"type": "warrant_gate_run", "packet_id": packet_id, "at": warrant_protocol::clock::now_rfc3339()});
    record_once(spool, "gate", packet_id, &body)
}

/// The call packets the gate let run on its own within a rate limit ([`record_gate_run`]), from
/// the names of their records in `uses/` (`+` is in no safe id). A record someone else wrote can
/// only make a count larger.
///
/// # Errors
/// I/O errors reading `uses/` (a missing one is empty): the count is then not known.
pub fn gate_runs(spool: &Spool) -> io::Result<HashSet<String>> {
    let entries = match fs::read_dir(spool.uses_dir()) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(HashSet::new()),
        Err(e) => return Err(e),
    };
    let mut runs = HashSet::new();
    for e in entries {
        let name = e?.file_name();
        let id = name.to_str().and_then(|n| n.strip_prefix("gate+")).and_then(|n| n.strip_suffix(USE_SUFFIX));
        if let Some(id) = id.filter(|id| packet::is_safe_id(id)) {
            runs.insert(id.to_owned());
        }
    }
    Ok(runs)
}

/// Creates `path` whole, once: `body` written and synced under a private name in its directory
/// (never following a symlink), then hard-linked into place — `AlreadyExists`, as `O_EXCL`,
/// when the record exists, and a reader never sees it empty or half written — and the directory
/// synced. In a replica of a JetStream store, the claim is first created in the store's uses
/// bucket ([`crate::upstream::Upstream::claim`]): `AlreadyExists` when another host made it.
fn create_claim(spool: &Spool, path: &Path, body: &Value) -> io::Result<()> {
    let mut bytes = serde_json::to_vec(body).map_err(io::Error::other)?;
    bytes.push(b'\n');
    // In a replica, the claim is the store's (one use across every host), then this file's
    // (which a follower may have written from the store already).
    let made_in_store = match spool.chain_upstream() {
        Some(store) => store.claim(path, &bytes).map(|()| true)?,
        None => false,
    };
    // Written and synced under a private name, then linked into place (which fails, as
    // `O_EXCL` would, when the record exists): a reader never sees it empty or half written.
    let (tmp, mut f) = private_twin(path)?;
    let made =
        io::Write::write_all(&mut f, &bytes).and_then(|()| f.sync_all()).and_then(|()| fs::hard_link(&tmp, path));
    let _ = fs::remove_file(&tmp);
    match made {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && made_in_store => return Ok(()),
        other => other?,
    }
    if let Some(dir) = path.parent() {
        fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

/// A new file beside `path` under a private name (`.<name>.<pid>.<uuid>.tmp`: no scan of
/// `uses/` reads it), created with `O_EXCL` and mode 0644, never following a symlink, in which a
/// record is written whole before it is hard-linked into place as `path`.
///
/// # Errors
/// `path` names no file in a directory; I/O errors creating it.
fn private_twin(path: &Path) -> io::Result<(std::path::PathBuf, fs::File)> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "a record path names a file in a directory"));
    };
    let tmp =
        dir.join(format!(".{}.{}.{}.tmp", name.to_string_lossy(), std::process::id(), uuid::Uuid::now_v7().simple()));
    let f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(&tmp)?;
    Ok((tmp, f))
}

/// The claims in `uses/` ([`claim_grant_use`], [`claim_approval`]): how many uses of each grant
/// are claimed, and which grant each call packet ran on. `+` is in no safe id, so a claim's name
/// says what it claims: `approval+<packet>.use`, `grant+<grant>+<n or packet>.use`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Uses {
    /// Claimed uses by grant id.
    pub by_grant: HashMap<String, u64>,
    /// The grant each call packet ran on, by packet id.
    pub granted: HashMap<String, String>,
    /// The records that withdraw call packets ([`record_answer`], [`record_wait`]), by packet
    /// id: each record's owner uid, and from when it withdraws the call (unix seconds;
    /// `NEG_INFINITY` for an answer, or a record that cannot be read).
    pub withdrawals: HashMap<String, Vec<(u32, f64)>>,
}

impl Uses {
    /// Whether the call packet `packet_id`, published by `publisher`, is withdrawn at `now`
    /// (unix seconds): as [`withdrawn`] says, from what [`read_uses`] read.
    #[must_use]
    pub fn withdrawn(&self, packet_id: &str, publisher: u32, now: f64) -> bool {
        self.withdrawals
            .get(packet_id)
            .is_some_and(|v| v.iter().any(|&(owner, from)| owner == publisher && now >= from))
    }

    /// The grant the call packet `p` ran on: the grant its claim in `uses/` names, live or
    /// revoked since, when that grant covers the call (its class, tool, limits and pattern, read
    /// from `p` under `policies`; its times are not looked at, the use being done). `None` for a
    /// packet that did not run on a grant, or whose claim names a grant that does not cover it
    /// (an agent's claim file alone never takes a packet out of the principal's sight).
    #[must_use]
    pub fn ran_on_grant<'a>(
        &self,
        grants: &'a warrant_protocol::grant::GrantBook,
        policies: &warrant_protocol::graduation::PolicySet,
        p: &warrant_protocol::packet::Packet,
    ) -> Option<&'a std::sync::Arc<warrant_protocol::grant::Grant>> {
        let id = self.granted.get(&p.id)?;
        let g = grants.get(id).or_else(|| grants.revoked(id).map(|(g, _)| g))?;
        let facts = warrant_protocol::grant::CallFacts::of_packet(p, policies)?;
        g.covers(&facts, f64::NEG_INFINITY).then_some(g)
    }
}

/// Reads `uses/` ([`Uses`]). `known` keeps what each claim file said (they never change once
/// made) across calls, so a long-lived reader reads each file once. Empty when the directory
/// cannot be read; a file that cannot be read or parsed counts as a use of its grant and names
/// no packet.
#[must_use]
pub fn read_uses(spool: &Spool, known: &mut HashMap<String, Option<String>>) -> Uses {
    let mut uses = Uses::default();
    let Ok(entries) = fs::read_dir(spool.uses_dir()) else { return uses };
    let mut live = HashSet::new();
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some((kind, id)) = name.strip_suffix(USE_SUFFIX).and_then(|n| n.split_once('+'))
            && (kind == "answered" || kind == "until")
            && packet::is_safe_id(id)
        {
            let Ok(meta) = e.metadata() else { continue };
            live.insert(name.to_owned());
            // A wait's record is read once (it never changes); whether its maker still holds it
            // is asked each time, while its time has not run out.
            let body = if kind == "until" {
                known
                    .entry(name.to_owned())
                    .or_insert_with(|| String::from_utf8(read_limited(&e.path()).ok()?).ok())
                    .as_deref()
                    .and_then(|b| serde_json::from_str::<Value>(b).ok())
            } else {
                None
            };
            let until =
                body.as_ref().and_then(|v| v.get("until")?.as_str()).and_then(warrant_protocol::clock::unix_seconds);
            let mut from = until.map_or(f64::NEG_INFINITY, |t| t - WITHDRAW_MARGIN.as_secs_f64());
            let now = warrant_protocol::clock::unix_seconds(&warrant_protocol::clock::now_rfc3339()).unwrap_or(0.0);
            if from > now && wait_abandoned(spool, &e.path(), body.as_ref()) {
                from = f64::NEG_INFINITY;
            }
            let owner = std::os::unix::fs::MetadataExt::uid(&meta);
            uses.withdrawals.entry(id.to_owned()).or_default().push((owner, from));
            continue;
        }
        let Some(rest) = name.strip_suffix(USE_SUFFIX).and_then(|n| n.strip_prefix("grant+")) else { continue };
        let Some((grant, _)) = rest.split_once('+') else { continue };
        *uses.by_grant.entry(grant.to_owned()).or_insert(0) += 1;
        live.insert(name.to_owned());
        let packet = known.entry(name.to_owned()).or_insert_with(|| {
            let bytes = read_limited(&e.path()).ok()?;
            let v: Value = serde_json::from_slice(&bytes).ok()?;
            v.get("packet_id").and_then(Value::as_str).filter(|p| packet::is_safe_id(p)).map(str::to_owned)
        });
        if let Some(p) = packet {
            uses.granted.insert(p.clone(), grant.to_owned());
        }
    }
    known.retain(|n, _| live.contains(n.as_str()));
    uses
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record is never seen empty or half written: readers racing its writers find no record
    /// or the whole one (an empty `answered` record read as "unreadable" withdrew calls with a
    /// reason that named no answer).
    #[test]
    fn a_record_is_seen_whole_or_not_at_all() {
        let dir = tempfile::tempdir().expect("tempdir");
        let spool = Spool::new(dir.path());
        let now = time::OffsetDateTime::now_utc();
        for round in 0..40 {
            let id = format!("race-{round}");
            std::thread::scope(|s| {
                for _ in 0..4 {
                    s.spawn(|| record_answer(&spool, &id, "consumed").expect("record"));
                }
                for _ in 0..4 {
                    s.spawn(|| {
                        for _ in 0..200 {
                            if let Some(w) = withdrawn(&spool, &id, None, now) {
                                assert_eq!(w.status, "consumed", "seen half written: {w:?}");
                            }
                        }
                    });
                }
            });
            assert_eq!(withdrawn(&spool, &id, None, now).map(|w| w.status).as_deref(), Some("consumed"));
        }
        let left: Vec<_> = fs::read_dir(spool.uses_dir())
            .expect("uses/")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| !n.ends_with(USE_SUFFIX))
            .collect();
        assert!(left.is_empty(), "no private file is left behind: {left:?}");
    }
}
