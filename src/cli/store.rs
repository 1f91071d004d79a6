//! Commands on the spool and its store: `warrant init` (a shared spool's set-up), `checkpoint
//! forget` and `migrate` between stores.

use super::common::{confirmed, load_pinned};
use super::{EXIT_INVALID, Failure};
use crate::protocol::chain::{self, ChainHead, VerifyOptions, VerifyReport};
use crate::protocol::keys::PinnedKeys;
use crate::store::StoreLocation;
use crate::store::spool::Spool;

/// `warrant init --agents-group GROUP [DIR]`: the set-up `docs/spool.md` recommends (Trust
/// boundary), made and checked in one command, idempotently; prints one line per path.
///
/// | path | owner:group | mode |
/// | --- | --- | --- |
/// | spool, `decisions/` | principal:GROUP | `0755` |
/// | `packets/`, `receipts/`, `uses/` | principal:GROUP | `3770` (setgid, sticky: the group writes, no one removes another's files) |
/// | `chain.jsonl` | principal:GROUP | `0644` |
/// | `.chain.lock` | principal | `0600` |
pub(super) fn init_shared_spool(spool: &Spool, group: &str) -> Result<u8, Failure> {
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
    let gid = uzers::get_group_by_name(group).map(|g| g.gid()).ok_or_else(|| {
        Failure::usage(format!(
            "no Unix group {:?} (create it with `groupadd`)",
            crate::protocol::text::inert(group, 60)
        ))
    })?;
    spool.ensure()?;
    let lock = spool.root().join(".chain.lock");
    for path in [spool.chain_path(), lock.clone()] {
        std::fs::OpenOptions::new().create(true).append(true).open(&path)?;
    }
    let me = rustix::process::geteuid().as_raw();
    let entries = [
        (spool.root().to_owned(), Some(gid), 0o755),
        (spool.decisions_dir(), Some(gid), 0o755),
        (spool.packets_dir(), Some(gid), 0o3770),
        (spool.receipts_dir(), Some(gid), 0o3770),
        (spool.uses_dir(), Some(gid), 0o3770),
        (spool.chain_path(), Some(gid), 0o644),
        (lock, None, 0o600),
    ];
    for (path, group_of, mode) in entries {
        let meta = std::fs::symlink_metadata(&path)?;
        if meta.file_type().is_symlink() {
            return Err(Failure::usage(format!("{} is a symlink: refusing to set it up", path.display())));
        }
        if meta.uid() != me {
            return Err(Failure::usage(format!(
                "{} is owned by uid {}, not by you ({me}): the principal must own the spool",
                path.display(),
                meta.uid()
            )));
        }
        let mut did = Vec::new();
        if let Some(gid) = group_of
            && meta.gid() != gid
        {
            std::os::unix::fs::chown(&path, None, Some(gid)).map_err(|e| {
                Failure::usage(format!(
                    "{}: cannot give it to group {group}: {e} (are you in the group?)",
                    path.display()
                ))
            })?;
            did.push(format!("group {group}"));
        }
        if meta.permissions().mode() & 0o7777 != mode {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))?;
            did.push(format!("mode {mode:04o}"));
        }
        let what = if did.is_empty() { "already right".to_owned() } else { format!("set {}", did.join(", ")) };
        println!("{:<40} {:04o} {}  {what}", path.display(), mode, if group_of.is_some() { group } else { "-" });
    }
    println!(
        "agents in {group} can now publish into packets/ and receipts/, claim uses in uses/ and read decisions; only you can sign and append"
    );
    Ok(0)
}

/// `warrant init [DIR]`: a spool for one user (the agents run as the principal's own user),
/// made idempotently: the directory (`0755`, as [`Spool::ensure`] makes it), `decisions/`,
/// `packets/`, `receipts/`, `uses/`, an empty `chain.jsonl` and `.chain.lock` (`0600`). Nothing
/// else creates a spool, so a mistyped path elsewhere is an error, never a new empty spool.
///
/// # Errors
/// A path that is not a directory, a directory that holds other things than a spool's (a home
/// directory given by mistake), and I/O errors, each naming the path.
pub(super) fn init_single_spool(spool: &Spool) -> Result<u8, Failure> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let root = spool.root();
    let at = |e: std::io::Error| Failure::usage(format!("{}: {e}", root.display()));
    let existed = match std::fs::symlink_metadata(root) {
        Ok(m) if m.is_dir() => true,
        Ok(_) => {
            return Err(Failure::usage(format!(
                "{} exists and is not a directory: give a new or empty directory for the spool",
                root.display()
            )));
        }
        Err(_) => false,
    };
    if existed {
        const SPOOL_NAMES: [&str; 8] =
            ["chain.jsonl", ".chain.lock", "packets", "receipts", "decisions", "uses", "policy.toml", "checkpoints"];
        let others: Vec<String> = std::fs::read_dir(root)
            .map_err(at)?
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| !SPOOL_NAMES.contains(&n.as_str()) && !n.starts_with("chain.jsonl."))
            .collect();
        if !others.is_empty() {
            return Err(Failure::usage(format!(
                "{} holds other things than a spool ({}): give a new or empty directory for the spool",
                root.display(),
                crate::protocol::text::inert(&others.iter().take(3).cloned().collect::<Vec<_>>().join(", "), 200)
            )));
        }
    }
    spool.ensure().map_err(at)?;
    let made_chain = !spool.chain_path().exists();
    std::fs::OpenOptions::new().create(true).append(true).mode(0o644).open(spool.chain_path()).map_err(at)?;
    std::fs::OpenOptions::new().create(true).append(true).mode(0o600).open(root.join(".chain.lock")).map_err(at)?;
    if existed && !made_chain {
        println!("{} is a spool already: nothing to do", root.display());
    } else {
        println!(
            "made a spool at {}: packets/, receipts/, uses/, decisions/ and an empty chain.jsonl; agents running as you \
             publish into it, you decide with `warrant --spool {} console`",
            root.display(),
            root.display()
        );
    }
    Ok(0)
}

/// `warrant checkpoint forget`: shows each checkpoint pinning the spool's chain and what the chain
/// holds now, asks (or takes `--yes`), and moves them aside.
pub(super) fn checkpoint_forget(spool: &Spool, yes: bool) -> Result<u8, Failure> {
    use std::io::IsTerminal as _;
    let found = crate::store::checkpoint_files::held_for(spool, &load_pinned()?);
    if found.is_empty() {
        println!("no checkpoint pins {}", spool.root().display());
        return Ok(0);
    }
    let chain = spool.chain_path();
    let now = match std::fs::symlink_metadata(&chain) {
        Ok(m) => format!("{} bytes", m.len()),
        Err(_) => "no chain.jsonl".into(),
    };
    println!("{} now holds {now}.", spool.root().display());
    for (path, cp) in &found {
        match cp {
            Ok(cp) => println!(
                "{}: pins {} records, {} bytes, head {}, signed by {} at {}",
                path.display(),
                cp.records,
                cp.bytes,
                cp.head_hash,
                crate::protocol::text::inert(&cp.principal, 60),
                crate::protocol::text::inert(&cp.signed_at, 40)
            ),
            Err(e) => {
                println!("{}: does not verify ({})", path.display(), crate::protocol::text::inert(&e.to_string(), 200))
            }
        }
    }
    if !yes {
        if !std::io::stdin().is_terminal() {
            return Err(Failure::usage("forgetting a checkpoint without a terminal needs --yes"));
        }
        if !confirmed("forget these checkpoints (the chain will no longer be held to them)?")? {
            eprintln!("warrant: nothing was forgotten");
            return Ok(EXIT_INVALID);
        }
    }
    for (path, _) in &found {
        let to = crate::store::checkpoint_files::forget(path)
            .map_err(|e| Failure::usage(format!("{}: {e}", path.display())))?;
        println!("forgot {} (kept as {})", path.display(), to.display());
    }
    Ok(0)
}

/// Reads the record lines of `log` ([`crate::store::ChainLog::lines`]).
///
/// # Errors
/// The store's errors, naming the store.
fn log_lines(log: &dyn crate::store::ChainLog) -> Result<Vec<Vec<u8>>, Failure> {
    log.lines().map_err(|e| Failure::usage(format!("{}: {e}", log.location())))
}

/// Verifies a chain's record `lines` as `warrant verify` verifies a spool's own chain (every
/// warrant signature against the pinned keys), with the byte-level verifier.
///
/// # Errors
/// I/O errors of the verifier.
fn verify_lines(lines: &[Vec<u8>], pinned: &PinnedKeys) -> Result<VerifyReport, Failure> {
    let mut bytes = Vec::with_capacity(lines.iter().map(|l| l.len() + 1).sum());
    for line in lines {
        bytes.extend_from_slice(line);
        bytes.push(b'\n');
    }
    let progress = std::sync::atomic::AtomicU64::new(0);
    let opts = VerifyOptions { pinned: Some(pinned), strict_signatures: true };
    Ok(chain::verify_reader(bytes.as_slice(), opts, &progress)?)
}

/// Records `warrant migrate` appends at a time.
const MIGRATE_GROUP: usize = 1024;

/// `warrant init --store nats://HOST:PORT/NAME [--replicas N]`: creates the store's chain and
/// spool streams and its decisions and uses buckets with `replicas` copies, or checks that the
/// ones there are as strong (idempotent). Prints what it made.
///
/// # Errors
/// The store's errors (unreachable, refused, an existing stream weaker than asked), exit 2; a
/// directory spool is made by `init --agents-group`.
#[cfg(feature = "jetstream")]
pub(super) fn init_store(at: &StoreLocation, replicas: u8) -> Result<u8, Failure> {
    if let StoreLocation::Directory(dir) = at {
        return Err(Failure::usage(format!(
            "{}: a directory spool is made by `init --agents-group GROUP` (or by its first command)",
            dir.display()
        )));
    }
    let chain =
        crate::store::open_chain(at, true, usize::from(replicas)).map_err(|e| Failure::usage(format!("{at}: {e}")))?;
    let records = chain.lines().map_err(|e| Failure::usage(format!("{at}: {e}")))?.len();
    println!(
        "store {at} ready: chain and spool streams, decisions and uses buckets, {replicas} cop{} each; {records} chain record{}",
        if replicas == 1 { "y" } else { "ies" },
        if records == 1 { "" } else { "s" }
    );
    Ok(0)
}

/// `warrant migrate --from A --to B`: the source verified, its records copied after the
/// destination's head (which must be a prefix of the source), each with compare-and-set and its
/// own entry_hash, then both verified and compared: the same number of records and root hash.
///
/// # Errors
/// Either store's errors; a source that does not verify (exit 1); a destination that holds
/// another chain.
pub(super) fn migrate(from: &str, to: &str, replicas: u8) -> Result<u8, Failure> {
    let pinned = load_pinned()?;
    let parse = |t: &str| t.parse::<StoreLocation>().map_err(Failure::usage);
    let (from_at, to_at) = (parse(from)?, parse(to)?);
    if from_at == to_at {
        return Err(Failure::usage("--from and --to name the same store"));
    }
    fn store_err(at: &StoreLocation) -> impl Fn(crate::store::StoreError) -> Failure + '_ {
        move |e| Failure::usage(format!("{at}: {e}"))
    }
    let source = crate::store::open_chain(&from_at, false, 1).map_err(store_err(&from_at))?;
    let lines = source.lines().map_err(store_err(&from_at))?;
    let before = verify_lines(&lines, &pinned)?;
    if !before.is_valid() {
        let first = before.first().map(|f| f.to_string()).unwrap_or_default();
        eprintln!(
            "warrant: {from_at} does not verify ({}); nothing was copied",
            crate::protocol::text::inert(&first, 400)
        );
        return Ok(EXIT_INVALID);
    }
    let dest = crate::store::open_chain(&to_at, true, usize::from(replicas)).map_err(store_err(&to_at))?;
    let there = dest.lines().map_err(store_err(&to_at))?;
    if there.len() > lines.len() || there.iter().zip(&lines).any(|(a, b)| a != b) {
        return Err(Failure::usage(format!(
            "{to_at} holds {} records that are not the start of {from_at}'s chain; refusing to copy onto another chain",
            there.len()
        )));
    }
    let mut head = dest.head().map_err(store_err(&to_at))?;
    // Groups of records: the directory appends a group with one write and one sync under its
    // lock (a sync per record would take hours for a million records); JetStream appends a
    // group as atomic batches, compare-and-set on the head it was sealed onto.
    for group in lines[there.len()..].chunks(MIGRATE_GROUP) {
        let records = group
            .iter()
            .map(|line| crate::protocol::canonical::parse_strict(line).ok().and_then(|v| v.as_object().cloned()))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| Failure::usage(format!("{from_at}: a record that verified no longer parses")))?;
        let appended = dest.append_after(&head, records).map_err(store_err(&to_at))?;
        let last = appended.last().ok_or_else(|| Failure::usage(format!("{to_at}: nothing was appended")))?;
        head = ChainHead { last_index: last.chain_index, last_hash: Some(last.entry_hash.clone()) };
    }
    let after = verify_lines(&log_lines(dest.as_ref())?, &pinned)?;
    let same = after.is_valid() && after.total == before.total && after.root_hash == before.root_hash;
    if same {
        println!(
            "migrated {from_at} → {to_at}: {} records ({} copied, {} already there), root {}; both verify, chain for chain",
            after.total,
            lines.len() - there.len(),
            there.len(),
            after.root_hash.as_deref().unwrap_or("null")
        );
        migrate_spool(&from_at, &to_at, &pinned)
    } else {
        eprintln!(
            "warrant: the copy at {to_at} does not match: {} records, root {}, valid {} (the source: {} records, root {})",
            after.total,
            after.root_hash.as_deref().unwrap_or("null"),
            after.is_valid(),
            before.total,
            before.root_hash.as_deref().unwrap_or("null")
        );
        Ok(EXIT_INVALID)
    }
}

/// After the chain, `warrant migrate` copies the packets, receipts and decision files between a
/// directory and a JetStream store ([`crate::store::replica::copy_spool_to_store`],
/// [`crate::store::replica::copy_store_to_spool`]); between two directories, only the chain.
/// Prints what was copied; [`EXIT_INVALID`] when a file could not be (each named, with why).
///
/// # Errors
/// The stores' errors.
fn migrate_spool(from: &StoreLocation, to: &StoreLocation, pinned: &PinnedKeys) -> Result<u8, Failure> {
    #[cfg(feature = "jetstream")]
    {
        use crate::store::jetstream::{ConnectOptions, JetStreamSpool};
        let connect = |url| {
            let opts = ConnectOptions::from_env().map_err(Failure::usage)?;
            JetStreamSpool::connect(url, &opts).map_err(|e| Failure::usage(format!("{url}: {e}")))
        };
        let copied = match (from, to) {
            (StoreLocation::Directory(dir), StoreLocation::JetStream(url)) => {
                crate::store::replica::copy_spool_to_store(&Spool::new(dir), &connect(url)?)
                    .map_err(|e| Failure::usage(format!("{url}: {e}")))?
            }
            (StoreLocation::JetStream(url), StoreLocation::Directory(dir)) => {
                crate::store::replica::copy_store_to_spool(&connect(url)?, &Spool::new(dir), pinned)
                    .map_err(|e| Failure::usage(format!("{}: {e}", dir.display())))?
            }
            _ => return Ok(0),
        };
        println!(
            "and {} packets, {} receipts, {} decision files ({} already there)",
            copied.packets, copied.receipts, copied.decisions, copied.already
        );
        for why in &copied.not_copied {
            eprintln!("warrant: not copied: {}", crate::protocol::text::inert(why, 400));
        }
        Ok(if copied.not_copied.is_empty() { 0 } else { EXIT_INVALID })
    }
    #[cfg(not(feature = "jetstream"))]
    {
        let _ = (from, to, pinned);
        Ok(0)
    }
}
