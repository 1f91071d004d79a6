//! The principal's keys: `warrant keys` (init, show, export, pin, unpin, rotate, rename).

use super::common::{load_pinned, load_principal, resolve_spool, set_aside_torn_tail};
use super::{Failure, KeysAction};
use crate::protocol::keys::{self, PinnedKeys, Principal};
use crate::protocol::packet;
use crate::store::config::{self, Config};
use crate::store::key_files;
use crate::store::prelude::*;
use crate::store::spool::{self, Spool};
use std::io::{self, Read as _};
use std::path::{Path, PathBuf};

/// The passphrase for a new key (`keys init`, `keys rotate`): none with `--no-passphrase`, else
/// the first line of `WARRANT_PASSPHRASE_FILE`, else asked twice on the terminal.
fn new_passphrase(
    command: &str,
    no_passphrase: bool,
    key_file: &Path,
) -> Result<Option<age::secrecy::SecretString>, Failure> {
    if no_passphrase {
        return Ok(None);
    }
    let source = super::passphrase::passphrase_source();
    let first =
        super::passphrase::read_passphrase(&source, "new passphrase for the principal's key: ", key_file).map_err(|e| match e {
            key_files::KeyError::NoPassphrase { .. } => Failure::usage(format!(
                "`{command}` needs a passphrase: run it on a terminal or set WARRANT_PASSPHRASE_FILE (or pass --no-passphrase for an unprotected key)"
            )),
            other => other.into(),
        })?;
    if source == super::passphrase::PassphraseSource::Terminal {
        use age::secrecy::ExposeSecret as _;
        let again = super::passphrase::read_passphrase(&source, "the same passphrase again: ", key_file)?;
        if again.expose_secret() != first.expose_secret() {
            return Err(Failure::usage("the two passphrases differ; no key was created"));
        }
    }
    Ok(Some(first))
}

/// The file a key retired by `keys rotate` is kept in: `principal.key.<fingerprint>.retired`,
/// the fingerprint's base64 made file-name safe (`/` → `_`, `+` → `-`).
fn retired_key_file(dir: &Path, fingerprint: &str) -> PathBuf {
    let safe: String = fingerprint
        .trim_start_matches("SHA256:")
        .chars()
        .map(|c| match c {
            '/' => '_',
            '+' => '-',
            c => c,
        })
        .collect();
    dir.join(format!("{}.{safe}.retired", key_files::PRIVATE_KEY_FILE))
}

fn key_event_failure(e: spool::DecideError) -> Failure {
    match e {
        spool::DecideError::Io(_) | spool::DecideError::Chain(_) => Failure::usage(e.to_string()),
        _ => Failure::invalid(e.to_string()),
    }
}

/// `warrant keys rotate`: see [`KeysAction::Rotate`]. The new key is written first (as
/// `principal.key.next`), then announced in the chain; only then is the old key moved aside
/// (hard-linked to its `.retired` file, then replaced by a rename) and the new one pinned.
fn keys_rotate(config: &Config, spool: &Spool, no_passphrase: bool) -> Result<u8, Failure> {
    let dir = config::config_dir();
    let key_file = dir.join(key_files::PRIVATE_KEY_FILE);
    let (old, mut pinned) = load_principal(config)?;
    let passphrase = new_passphrase("keys rotate", no_passphrase, &key_file)?;
    let next = dir.join(format!("{}.next", key_files::PRIVATE_KEY_FILE));
    let new = Principal::generate(&old.name, &next)?;
    new.write_private(&next, passphrase.as_ref()).map_err(|e| match e {
        key_files::KeyError::Exists { .. } => Failure::invalid(format!(
            "{} exists: an earlier `keys rotate` was interrupted; see whether the chain announces its key (`warrant verify`), then move it away",
            next.display()
        )),
        other => other.into(),
    })?;
    let event = crate::protocol::key_event::KeyEvent::Rotate {
        principal: old.name.clone(),
        old: old.fingerprint(),
        new_key: new.verifying_key(),
    };
    let appended =
        match spool::append_key_event(spool, &old, Some(&new), &pinned, &event, &crate::protocol::clock::now_rfc3339())
        {
            Ok(a) => a,
            Err(e) => {
                // Nothing was announced: the new key is not needed.
                let _ = std::fs::remove_file(&next);
                return Err(key_event_failure(e));
            }
        };
    let retired = retired_key_file(&dir, &old.fingerprint());
    let swapped = std::fs::hard_link(&key_file, &retired)
        .and_then(|()| std::fs::rename(&next, &key_file))
        .and_then(|()| std::fs::File::open(&dir)?.sync_all());
    if let Err(e) = swapped {
        return Err(Failure::usage(format!(
            "the chain announces the new key {} (chain_index {}), but it could not be put in place ({e}): move {} to {} and keep the old key as {}",
            new.fingerprint(),
            appended.chain_index,
            next.display(),
            key_file.display(),
            retired.display()
        )));
    }
    key_files::write_atomic(&dir.join(key_files::PUBLIC_KEY_FILE), new.public_pem().as_bytes(), 0o644)?;
    pinned.pin(&new.name, new.verifying_key());
    pinned.save(&dir)?;
    println!(
        "rotated the principal key of {} at chain_index {} of {}",
        new.name,
        appended.chain_index,
        spool.chain_path().display()
    );
    println!("old key    {} (kept as {}, still pinned)", old.fingerprint(), retired.display());
    println!("new key    {}", new.fingerprint());
    println!("protected  {}", if passphrase.is_some() { "yes (passphrase)" } else { "no" });
    println!("pinned     for {}", new.name);
    Ok(0)
}

/// `warrant keys rename NEW_NAME`: see [`KeysAction::Rename`]. The old name is the one the key
/// is pinned for, so the rename also works after the configured name was changed first.
fn keys_rename(config: &Config, spool: &Spool, new_name: &str) -> Result<u8, Failure> {
    let dir = config::config_dir();
    let path = dir.join(key_files::PRIVATE_KEY_FILE);
    if new_name.trim().is_empty() || new_name.trim() != new_name {
        return Err(Failure::usage("the new name must not be blank or start or end with spaces"));
    }
    if matches!(std::fs::symlink_metadata(&path), Err(e) if e.kind() == io::ErrorKind::NotFound) {
        return Err(key_files::KeyError::NoKey { dir: dir.clone() }.into());
    }
    let source = super::passphrase::passphrase_source();
    let prompt = format!("passphrase for {}: ", path.display());
    let mut principal =
        Principal::load_with(&path, "", || super::passphrase::read_passphrase(&source, &prompt, &path))?;
    let mut pinned = PinnedKeys::load(&dir)?;
    let fp = principal.fingerprint();
    let Some(pin) = pinned.get(&fp) else {
        return Err(Failure::usage(format!(
            "the principal key {fp} is not pinned, so there is no name to rename; pin it first with `warrant keys export | warrant keys pin --principal NAME -`"
        )));
    };
    if pin.principal == new_name {
        return Err(Failure::invalid(format!("the key {fp} is already pinned for {new_name:?}")));
    }
    if let Some(other) = pinned.name_taken(&fp, new_name) {
        return Err(Failure::invalid(format!(
            "{new_name:?} is the name of another key ({}): a rename never takes another principal's name",
            other.fingerprint
        )));
    }
    principal.name = pin.principal.clone();
    let event = crate::protocol::key_event::KeyEvent::Rename {
        principal: principal.name.clone(),
        new_principal: new_name.to_owned(),
        key: fp.clone(),
    };
    let appended =
        spool::append_key_event(spool, &principal, None, &pinned, &event, &crate::protocol::clock::now_rfc3339())
            .map_err(key_event_failure)?;
    pinned.rename(&fp, new_name);
    pinned.save(&dir)?;
    println!(
        "renamed {:?} to {new_name:?} at chain_index {} of {}",
        principal.name,
        appended.chain_index,
        spool.chain_path().display()
    );
    println!("key        {fp}");
    println!("pinned     for {new_name:?} (and {:?}, so earlier records still verify)", principal.name);
    if config.principal_name() != new_name {
        println!(
            "now set WARRANT_PRINCIPAL={new_name:?} (or `principal` in config.toml): signing uses the configured name"
        );
    }
    Ok(0)
}

pub(super) fn keys_cmd(config: &Config, spool_arg: Option<PathBuf>, action: KeysAction) -> Result<u8, Failure> {
    let dir = config::config_dir();
    let key_file = dir.join(key_files::PRIVATE_KEY_FILE);
    match action {
        KeysAction::Rotate { no_passphrase } => {
            let spool = resolve_spool(spool_arg, config)?;
            set_aside_torn_tail(&spool)?;
            return keys_rotate(config, &spool, no_passphrase);
        }
        KeysAction::Rename { new_name } => {
            let spool = resolve_spool(spool_arg, config)?;
            set_aside_torn_tail(&spool)?;
            return keys_rename(config, &spool, &new_name);
        }
        KeysAction::Init { no_passphrase } => {
            let passphrase = new_passphrase("keys init", no_passphrase, &key_file)?;
            let principal =
                Principal::init(&dir, &config.principal_name(), passphrase.as_ref()).map_err(|e| match e {
                    key_files::KeyError::Exists { .. } => Failure::invalid(e.to_string()),
                    other => other.into(),
                })?;
            println!("created the principal key for {} in {}", principal.name, key_file.display());
            println!("key        {}", principal.fingerprint());
            println!("protected  {}", if passphrase.is_some() { "yes (passphrase)" } else { "no" });
            println!("pinned     for {}", principal.name);
        }
        KeysAction::Show => {
            let name = config.principal_name();
            let pinned = load_pinned()?;
            println!("principal  {name}");
            match public_key(&dir) {
                Some(key) => println!("key        {}", keys::fingerprint(&key)),
                None => println!("key        none: create one with `warrant keys init`"),
            }
            println!("key file   {}", key_file.display());
            // A key others can read is refused here too, as ssh refuses it.
            let protection = match key_files::protection(&key_file) {
                Ok(key_files::Protection::Passphrase) => "yes (passphrase)",
                Ok(key_files::Protection::None) => "no: anyone who can read the file can sign as you",
                Err(key_files::KeyError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => "no key",
                Err(e) => return Err(e.into()),
            };
            println!("protected  {protection}");
            let gateways = keys::GatewayKeys::load(&dir)?;
            println!("pinned keys ({}):", pinned.len() + gateways.len());
            for k in pinned.iter() {
                if k.aliases.is_empty() {
                    println!("  {}  principal  {}", k.fingerprint, crate::protocol::text::inert(&k.principal, 200));
                } else {
                    let was = crate::protocol::text::inert(&k.aliases.join(", "), 400);
                    println!(
                        "  {}  principal  {} (formerly {was})",
                        k.fingerprint,
                        crate::protocol::text::inert(&k.principal, 200)
                    );
                }
            }
            for k in gateways.iter() {
                println!("  {}  gateway    {}", k.fingerprint, crate::protocol::text::inert(&k.principal, 200));
            }
        }
        KeysAction::Export => {
            // The private key must exist and be private; its public half is read from
            // `principal.pub` (no passphrase), else from the key itself.
            key_files::protection(&key_file)?;
            match public_key(&dir) {
                Some(key) => print!("{}", keys::public_pem(&key)),
                None => {
                    let (principal, _) = load_principal(config)?;
                    print!("{}", principal.public_pem());
                }
            }
        }
        KeysAction::Pin { principal, gateway, file } => {
            let mut text = String::new();
            if file == Path::new("-") {
                std::io::stdin().read_to_string(&mut text)?;
            } else {
                text =
                    std::fs::read_to_string(&file).map_err(|e| Failure::usage(format!("{}: {e}", file.display())))?;
            }
            let key = keys::parse_public_key(&text).map_err(|e| Failure::usage(format!("{}: {e}", file.display())))?;
            let fp = keys::fingerprint(&key);
            let pinned = load_pinned()?;
            let mut gateways = keys::GatewayKeys::load(&dir)?;
            std::fs::create_dir_all(&dir)?;
            match (principal, gateway) {
                (_, Some(gateway)) => {
                    // One role per key: a principal's key pinned as a gateway's would sign both.
                    if let Some(pin) = pinned.get(&fp) {
                        return Err(Failure::usage(format!(
                            "{fp} is pinned as the principal {:?}'s key: a gateway needs a key of its own",
                            pin.principal
                        )));
                    }
                    if !packet::is_safe_id(&gateway) {
                        return Err(Failure::usage(format!("gateway name {gateway:?} is not a safe id")));
                    }
                    gateways.pin(&gateway, key);
                    gateways.save(&dir)?;
                    println!(
                        "pinned {fp} for gateway {gateway} (role gateway: its signed receipts are observed outcomes)"
                    );
                }
                (Some(principal), None) => {
                    if let Some(pin) = gateways.get(&fp) {
                        return Err(Failure::usage(format!(
                            "{fp} is pinned as the gateway {:?}'s key: unpin it first",
                            pin.principal
                        )));
                    }
                    if let Some(pin) = pinned.get(&fp) {
                        if pin.principal == principal {
                            println!("{fp} is already pinned for {principal}");
                            return Ok(0);
                        }
                        return Err(Failure::usage(rebind_refusal(
                            &fp,
                            &pin.principal,
                            &principal,
                            &file,
                            public_key(&dir) == Some(key),
                        )));
                    }
                    let mut pinned = pinned;
                    pinned.pin(&principal, key);
                    pinned.save(&dir)?;
                    println!("pinned {fp} for {principal}");
                }
                (None, None) => return Err(Failure::usage("--principal NAME or --gateway NAME")),
            }
        }
        KeysAction::Unpin { fingerprint } => {
            let mut pinned = load_pinned()?;
            if pinned.unpin(&fingerprint) {
                pinned.save(&dir)?;
            } else {
                let mut gateways = keys::GatewayKeys::load(&dir)?;
                if !gateways.unpin(&fingerprint) {
                    return Err(Failure::invalid(format!("no pinned key {fingerprint}")));
                }
                gateways.save(&dir)?;
            }
            println!("unpinned {fingerprint}");
        }
    }
    Ok(0)
}

/// Why `keys pin --principal NAME FILE` does not move the pin of a key already pinned for
/// `pinned_for`, and what works instead: a pin binds a key to one name, and every record signed
/// under the old name would stop verifying (read as forgery by `verify`).
fn rebind_refusal(fp: &str, pinned_for: &str, asked: &str, file: &Path, own: bool) -> String {
    let (pinned_for, asked) = (crate::protocol::text::inert(pinned_for, 200), crate::protocol::text::inert(asked, 200));
    if own {
        format!(
            "{fp} in {} is your own key, pinned for {pinned_for:?}: pinning it for {asked:?} would make every record \
             you signed as {pinned_for:?} fail to verify, and stop your signing. To sign as {asked:?} from now on, \
             announce the new name in the chain: `warrant keys rename {asked}` (then set WARRANT_PRINCIPAL or \
             `principal` in config.toml to it). To pin someone else's key, pin the file they exported, not yours \
             (`warrant keys export` on their side).",
            file.display()
        )
    } else {
        format!(
            "{fp} in {} is already pinned for {pinned_for:?}: a key is pinned for one name, and moving it would make \
             every record {pinned_for:?} signed with it fail to verify. If {pinned_for:?} was a mistake, unpin it \
             first: `warrant keys unpin {fp}`, then pin it again for {asked:?}.",
            file.display()
        )
    }
}

/// The principal's public key from `principal.pub` in `dir` (no passphrase needed), if readable.
fn public_key(dir: &Path) -> Option<ed25519_dalek::VerifyingKey> {
    let text = crate::store::config::read_text_file(&dir.join(key_files::PUBLIC_KEY_FILE), 64 << 10).ok()?;
    keys::parse_public_key(&text).ok()
}
