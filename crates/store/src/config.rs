//! Where warrant keeps its configuration and who the principal is.
//!
//! The config directory is `$WARRANT_CONFIG`, else `$XDG_CONFIG_HOME/warrant`, else
//! `~/.config/warrant` (on Linux and macOS alike, as gitui, television and serie do), else the
//! platform's config directory from `directories`. The principal's name is
//! `$WARRANT_PRINCIPAL`, else `principal` in `config.toml`, else `$USER`, else `principal`.

use std::io::{self, Read as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

/// Environment variable naming the config directory.
pub const CONFIG_ENV: &str = "WARRANT_CONFIG";
/// Environment variable naming the principal.
pub const PRINCIPAL_ENV: &str = "WARRANT_PRINCIPAL";

/// The config directory (see the module docs for the order).
#[must_use]
pub fn config_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os(CONFIG_ENV).filter(|v| !v.is_empty()) {
        return PathBuf::from(dir);
    }
    if let Some(xdg) = std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(xdg).join("warrant");
    }
    if let Some(base) = directories::BaseDirs::new() {
        if cfg!(unix) {
            return base.home_dir().join(".config").join("warrant");
        }
        return base.config_dir().join("warrant");
    }
    PathBuf::from(".warrant")
}

/// Largest configuration file warrant reads (`config.toml`, `policy.toml`, `pinned_keys.toml`,
/// `keymap.toml`, a theme): 1 MiB.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Reads a configuration file as text without ever blocking or reading without bound: the file
/// is opened non-blocking (a FIFO cannot hang warrant), must then be a regular file (a symlink
/// to one is fine: dotfile managers use them), at most `max` bytes, and UTF-8.
///
/// # Errors
/// `NotFound` when the file does not exist (callers treat it as absent); `InvalidInput` for a
/// directory, FIFO or device; `InvalidData` for a file over `max` bytes or not UTF-8; other I/O
/// errors as they come. Messages say what is wrong, not where: callers add the path.
pub fn read_text_file(path: &Path, max: u64) -> io::Result<String> {
    read_text_file_owned(path, max, None).map(Option::unwrap_or_default)
}

/// [`read_text_file`], only when the file is owned by `owner` (`None`: any file): `Ok(None)`
/// when another user owns it, or it has another name too (a hard link). With an owner, a
/// symbolic link is not followed (an error), and the checks are on the file as opened, so it
/// cannot be swapped between the check and the read.
///
/// # Errors
/// As [`read_text_file`]; with an owner, a symbolic link (`ELOOP`).
pub fn read_text_file_owned(path: &Path, max: u64, owner: Option<u32>) -> io::Result<Option<String>> {
    use std::os::unix::fs::MetadataExt as _;
    let flags = crate::open_flags::NONBLOCK | if owner.is_some() { crate::open_flags::NOFOLLOW } else { 0 };
    let file = std::fs::OpenOptions::new().read(true).custom_flags(flags).open(path)?;
    let meta = file.metadata()?;
    if owner.is_some_and(|uid| meta.uid() != uid || meta.nlink() != 1) {
        return Ok(None);
    }
    if !meta.is_file() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a regular file"));
    }
    if meta.len() > max {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} bytes, over the {max} byte limit", meta.len()),
        ));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("over the {max} byte limit")));
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("not UTF-8: {}", e.utf8_error())))
}

/// The user's `config.toml`, every key optional.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// The principal's name, bound into every signature.
    pub principal: Option<String>,
    /// The spool directory.
    pub spool: Option<PathBuf>,
    /// Where the spool lives, when not the directory `spool` names: a directory, or
    /// `nats://HOST:PORT[,HOST:PORT…]/NAME` for JetStream (`--store` and `WARRANT_STORE` win).
    pub store: Option<String>,
    /// The console theme (`default`, `mono`, or a file in `<config>/themes/`).
    pub theme: Option<String>,
    /// Seconds between full rescans of the spool (default 5).
    pub rescan_seconds: Option<u64>,
    /// How the console tells the principal that a packet needs them (`[notify]`).
    pub notify: Notify,
    /// The console's own settings (`[console]`).
    pub console: ConsoleConfig,
}

/// `[console]` in `config.toml`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ConsoleConfig {
    /// Capture the mouse: clicks select rows and switch views, the wheel scrolls lists (default
    /// true). `false` leaves the mouse to the terminal (its own text selection).
    pub mouse: bool,
}

impl Default for ConsoleConfig {
    fn default() -> Self {
        Self { mouse: true }
    }
}

/// `[notify]` in `config.toml`: how the console tells the principal that a new packet needs
/// them. The bell and the command are off by default; the title is on (it is warrant's own text:
/// `warrant — 3 pending`, never an agent's).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Notify {
    /// Ring the terminal bell (BEL) when new packets need the principal.
    pub bell: bool,
    /// Show the pending count in the terminal's title.
    pub title: bool,
    /// A program and its arguments, run once per new packet (no shell unless it is one), with
    /// `WARRANT_PACKET_ID`, `WARRANT_CLASS`, `WARRANT_AGENT`, `WARRANT_SUMMARY` (made inert) and
    /// `WARRANT_PENDING` in its environment.
    pub command: Option<Vec<String>>,
}

impl Default for Notify {
    fn default() -> Self {
        Self { bell: false, title: true, command: None }
    }
}

/// Why `config.toml` was not read ([`Config::load`], [`Config::parse`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The file exists but could not be read (the operating system's reason).
    #[error("{0}")]
    Read(String),
    /// Not TOML, or a key or value the configuration does not have (the parser's message).
    #[error("{0}")]
    Toml(String),
    /// `[notify] command` names no program.
    #[error("[notify] command must name a program: command = [\"notify-send\", \"warrant\"]")]
    NotifyCommand,
    /// One of the above, in the file named.
    #[error("{}: {reason}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: Box<ConfigError>,
    },
}

impl Config {
    /// This configuration with `store` from the command line or `WARRANT_STORE`, when given
    /// (it wins over `store` in `config.toml`).
    #[must_use]
    pub fn with_store(mut self, store: Option<String>) -> Self {
        if store.is_some() {
            self.store = store;
        }
        self
    }

    /// Loads `<config dir>/config.toml`; a missing file is the default configuration.
    ///
    /// # Errors
    /// [`ConfigError::File`] naming the file and why it could not be read or parsed.
    pub fn load() -> Result<Self, ConfigError> {
        let path = config_dir().join("config.toml");
        let in_file = |reason: ConfigError| ConfigError::File { path: path.clone(), reason: Box::new(reason) };
        match read_text_file(&path, MAX_CONFIG_BYTES) {
            Ok(text) => Self::parse(&text).map_err(in_file),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(e) => Err(in_file(ConfigError::Read(e.to_string()))),
        }
    }

    /// Parses the text of a `config.toml` (every key optional, unknown keys refused).
    ///
    /// # Errors
    /// [`ConfigError::Toml`] with the TOML parser's message, or [`ConfigError::NotifyCommand`].
    ///
    /// ```
    /// let c = warrant_store::config::Config::parse("principal = \"alice\"\nrescan_seconds = 2").unwrap();
    /// assert_eq!(c.principal.as_deref(), Some("alice"));
    /// use warrant_store::config::ConfigError;
    /// assert!(matches!(warrant_store::config::Config::parse("colour = \"red\""), Err(ConfigError::Toml(_))));
    /// let n = warrant_store::config::Config::parse("[notify]\nbell = true\ncommand = [\"notify-send\", \"warrant\"]").unwrap();
    /// assert!(n.notify.bell && n.notify.title && n.notify.command.is_some());
    /// assert_eq!(warrant_store::config::Config::parse("[notify]\ncommand = []").unwrap_err(), ConfigError::NotifyCommand);
    /// assert!(!warrant_store::config::Config::parse("[console]\nmouse = false").unwrap().console.mouse);
    /// assert!(warrant_store::config::Config::parse("").unwrap().console.mouse);
    /// ```
    pub fn parse(text: &str) -> Result<Self, ConfigError> {
        let config: Self = toml::from_str(text).map_err(|e| ConfigError::Toml(e.to_string()))?;
        if config.notify.command.as_ref().is_some_and(|c| c.first().is_none_or(|p| p.trim().is_empty())) {
            return Err(ConfigError::NotifyCommand);
        }
        Ok(config)
    }

    /// The principal's name (see the module docs for the order).
    #[must_use]
    pub fn principal_name(&self) -> String {
        std::env::var(PRINCIPAL_ENV)
            .ok()
            .filter(|s| !s.trim().is_empty())
            .or_else(|| self.principal.clone())
            .or_else(|| std::env::var("USER").ok().filter(|s| !s.trim().is_empty()))
            .unwrap_or_else(|| "principal".to_owned())
    }
}

/// Reading the policy files: the built-in set, then the principal's and the spool's
/// `policy.toml` (`warrant_protocol::graduation::policy`, module docs, for how they combine).
pub trait PolicyFiles: Sized {
    /// The built-in set plus `<config_dir>/policy.toml` and `<spool_root>/policy.toml` when they
    /// exist (see the module docs for how the two combine).
    ///
    /// # Errors
    /// [`warrant_protocol::graduation::policy::PolicyError`] for an unreadable or invalid file, or an invalid class.
    fn load(
        config_dir: &Path,
        spool_root: Option<&Path>,
    ) -> Result<Self, warrant_protocol::graduation::policy::PolicyError>;

    /// [`warrant_protocol::graduation::policy::PolicySet::load`] for a process that runs as an agent's user (the MCP gateway, the
    /// hooks) in a spool `owner` owns: with `owner` (the principal), only the spool's
    /// `policy.toml` counts — the agent's own configuration directory is the agent's to change,
    /// even a file the principal put there can be deleted — and it must be `owner`'s, not a
    /// symbolic link and not a hard link, or the set is an error (fail closed: every call is
    /// refused with the reason). `owner: None` is [`warrant_protocol::graduation::policy::PolicySet::load`].
    ///
    /// # Errors
    /// As [`warrant_protocol::graduation::policy::PolicySet::load`]; the spool's file belonging to another user.
    fn load_owned(
        config_dir: &Path,
        spool_root: Option<&Path>,
        owner: Option<u32>,
    ) -> Result<Self, warrant_protocol::graduation::policy::PolicyError>;
}

impl PolicyFiles for warrant_protocol::graduation::policy::PolicySet {
    fn load(
        config_dir: &Path,
        spool_root: Option<&Path>,
    ) -> Result<Self, warrant_protocol::graduation::policy::PolicyError> {
        Self::load_owned(config_dir, spool_root, None)
    }

    fn load_owned(
        config_dir: &Path,
        spool_root: Option<&Path>,
        owner: Option<u32>,
    ) -> Result<Self, warrant_protocol::graduation::policy::PolicyError> {
        let mut set = Self::builtin();
        set.set_spool_owner(spool_root.and_then(|r| std::fs::metadata(r).ok()).map(|m| {
            use std::os::unix::fs::MetadataExt as _;
            m.uid()
        }));
        let mut files = if owner.is_some() { Vec::new() } else { vec![config_dir.join("policy.toml")] };
        files.extend(spool_root.map(|r| r.join("policy.toml")));
        for path in files {
            let text = match read_text_file_owned(&path, MAX_CONFIG_BYTES, owner) {
                Ok(Some(t)) => t,
                Ok(None) => {
                    return Err(warrant_protocol::graduation::policy::PolicyError::Io {
                        source: std::io::Error::new(
                            std::io::ErrorKind::PermissionDenied,
                            "not the spool owner's own file (another owner, or a hard link): the tool table of a shared spool is the principal's",
                        ),
                        path,
                    });
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(source) => return Err(warrant_protocol::graduation::policy::PolicyError::Io { path, source }),
            };
            set.merge_toml(&text, &path, &|name| uzers::get_user_by_name(name).map(|u| u.uid()))?;
        }
        Ok(set)
    }
}
