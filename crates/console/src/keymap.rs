//! The keymap: `assets/keymap.toml` (embedded), patched per action by `<config>/keymap.toml`.
//! Each mode maps keys to named commands; a key bound twice in one mode is a startup error.
//! The `?` help overlay and the hint bar are generated from this table.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::collections::{BTreeMap, HashMap};

/// The embedded default keymap.
pub const DEFAULT_KEYMAP: &str = include_str!("../../../assets/keymap.toml");

/// The modes that have key tables.
pub const MODES: [&str; 4] = ["normal", "confirm", "input", "help"];

/// A key with modifiers, normalised (shifted letters are plain upper-case characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key {
    /// The code.
    pub code: KeyCode,
    /// Ctrl/Alt (Shift is folded into characters).
    pub mods: KeyModifiers,
}

impl Key {
    /// Normalises a terminal key event.
    #[must_use]
    pub fn from_event(ev: &KeyEvent) -> Self {
        let mut mods = ev.modifiers & (KeyModifiers::CONTROL | KeyModifiers::ALT);
        let code = match ev.code {
            KeyCode::BackTab => {
                mods.remove(KeyModifiers::SHIFT);
                KeyCode::BackTab
            }
            c => c,
        };
        Self { code, mods }
    }

    /// Parses `j`, `G`, `?`, `enter`, `ctrl-c`, `f1`, ….
    ///
    /// # Errors
    /// A message for an unknown key name.
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut mods = KeyModifiers::NONE;
        let mut rest = s;
        loop {
            if let Some(r) = rest.strip_prefix("ctrl-") {
                mods |= KeyModifiers::CONTROL;
                rest = r;
            } else if let Some(r) = rest.strip_prefix("alt-") {
                mods |= KeyModifiers::ALT;
                rest = r;
            } else {
                break;
            }
        }
        let code = match rest {
            "up" => KeyCode::Up,
            "down" => KeyCode::Down,
            "left" => KeyCode::Left,
            "right" => KeyCode::Right,
            "enter" => KeyCode::Enter,
            "esc" => KeyCode::Esc,
            "tab" => KeyCode::Tab,
            "backtab" => KeyCode::BackTab,
            "home" => KeyCode::Home,
            "end" => KeyCode::End,
            "pageup" => KeyCode::PageUp,
            "pagedown" => KeyCode::PageDown,
            "backspace" => KeyCode::Backspace,
            "space" => KeyCode::Char(' '),
            f if f.starts_with('f') && f.len() > 1 && f[1..].parse::<u8>().is_ok_and(|n| (1..=12).contains(&n)) => {
                KeyCode::F(f[1..].parse().unwrap_or(1))
            }
            c if c.chars().count() == 1 => KeyCode::Char(c.chars().next().unwrap_or(' ')),
            other => return Err(format!("unknown key {other:?}")),
        };
        Ok(Self { code, mods })
    }

    /// The display form used in help and hints.
    #[must_use]
    pub fn label(&self) -> String {
        let mut s = String::new();
        if self.mods.contains(KeyModifiers::CONTROL) {
            s.push_str("ctrl-");
        }
        if self.mods.contains(KeyModifiers::ALT) {
            s.push_str("alt-");
        }
        match self.code {
            KeyCode::Up => s.push('↑'),
            KeyCode::Down => s.push('↓'),
            KeyCode::Left => s.push('←'),
            KeyCode::Right => s.push('→'),
            KeyCode::Enter => s.push_str("enter"),
            KeyCode::Esc => s.push_str("esc"),
            KeyCode::Tab => s.push_str("tab"),
            KeyCode::BackTab => s.push_str("shift-tab"),
            KeyCode::Home => s.push_str("home"),
            KeyCode::End => s.push_str("end"),
            KeyCode::PageUp => s.push_str("pgup"),
            KeyCode::PageDown => s.push_str("pgdn"),
            KeyCode::Backspace => s.push_str("backspace"),
            KeyCode::F(n) => s.push_str(&format!("F{n}")),
            KeyCode::Char(' ') => s.push_str("space"),
            KeyCode::Char(c) => s.push(c),
            _ => s.push('?'),
        }
        s
    }
}

/// One binding: a command name, its keys and its description.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    /// Command name (e.g. `approve`).
    pub command: String,
    /// Its keys, in the order given.
    pub keys: Vec<Key>,
    /// What it does.
    pub desc: String,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Spec {
    keys: Vec<String>,
    #[serde(default)]
    desc: Option<String>,
}

/// The whole keymap: per mode, the bindings in file order and a lookup table.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Keymap {
    modes: BTreeMap<String, (Vec<Binding>, HashMap<Key, String>)>,
}

/// The command names each mode understands.
pub fn known_commands(mode: &str) -> &'static [&'static str] {
    match mode {
        "normal" => &[
            "down",
            "up",
            "top",
            "bottom",
            "page_down",
            "page_up",
            "open",
            "back",
            "next_pane",
            "prev_pane",
            "pending",
            "decided",
            "invalid",
            "posteriors",
            "matrices",
            "agents",
            "grants",
            "audit",
            "approve",
            "correct",
            "refuse",
            "raise",
            "lower",
            "quarantine",
            "release",
            "kill",
            "elevate",
            "revoke",
            "filter",
            "command",
            "sort",
            "sort_reverse",
            "copy_id",
            "copy_hash",
            "pager",
            "mark",
            "mark_all",
            "unmark_all",
            "chain",
            "help",
            "log",
            "quit",
        ],
        "confirm" => {
            &["confirm", "cancel", "toggle", "activate", "down", "up", "page_down", "page_up", "top", "zoom", "scope"]
        }
        "input" => &["submit", "cancel", "erase", "clear"],
        "help" => &["close", "down", "up"],
        _ => &[],
    }
}

impl Keymap {
    /// The embedded default keymap.
    ///
    /// # Panics
    /// Never in a release: a test checks that the embedded file parses.
    #[must_use]
    pub fn default_map() -> Self {
        Self::parse(DEFAULT_KEYMAP, None).unwrap_or_default()
    }

    /// Parses a keymap file; with `base`, the file replaces the keys of the commands it names
    /// and keeps the rest.
    ///
    /// # Errors
    /// Unknown modes, commands or keys, and a key bound to two commands in one mode.
    pub fn parse(text: &str, base: Option<&Keymap>) -> Result<Self, String> {
        let file: BTreeMap<String, BTreeMap<String, Spec>> = toml::from_str(text).map_err(|e| e.to_string())?;
        let mut bindings: BTreeMap<String, Vec<Binding>> =
            base.map(|b| b.modes.iter().map(|(m, (list, _))| (m.clone(), list.clone())).collect()).unwrap_or_default();
        // Keep the default file's order for display.
        let order =
            |mode: &str, command: &str| known_commands(mode).iter().position(|c| *c == command).unwrap_or(usize::MAX);
        for (mode, table) in file {
            if !MODES.contains(&mode.as_str()) {
                return Err(format!("unknown keymap mode [{mode}]"));
            }
            let list = bindings.entry(mode.clone()).or_default();
            for (command, spec) in table {
                if !known_commands(&mode).contains(&command.as_str()) {
                    return Err(format!("[{mode}] unknown command {command:?}"));
                }
                let keys = spec
                    .keys
                    .iter()
                    .map(|k| Key::parse(k).map_err(|e| format!("[{mode}] {command}: {e}")))
                    .collect::<Result<Vec<_>, _>>()?;
                let desc = spec.desc.clone();
                match list.iter_mut().find(|b| b.command == command) {
                    Some(b) => {
                        b.keys = keys;
                        if let Some(d) = desc {
                            b.desc = d;
                        }
                    }
                    None => {
                        list.push(Binding { desc: desc.unwrap_or_else(|| command.replace('_', " ")), command, keys })
                    }
                }
            }
            list.sort_by_key(|b| order(&mode, &b.command));
        }
        let mut modes = BTreeMap::new();
        for (mode, list) in bindings {
            let mut table = HashMap::new();
            for b in &list {
                for k in &b.keys {
                    if let Some(prev) = table.insert(*k, b.command.clone())
                        && prev != b.command
                    {
                        return Err(format!(
                            "[{mode}] key {} is bound to both {prev:?} and {:?}",
                            k.label(),
                            b.command
                        ));
                    }
                }
            }
            modes.insert(mode, (list, table));
        }
        Ok(Self { modes })
    }

    /// The default keymap patched by `<config>/keymap.toml` if it exists.
    ///
    /// # Errors
    /// As [`Keymap::parse`], naming the file.
    pub fn load() -> Result<Self, String> {
        let base = Self::parse(DEFAULT_KEYMAP, None)?;
        let path = warrant_store::config::config_dir().join("keymap.toml");
        match warrant_store::config::read_text_file(&path, warrant_store::config::MAX_CONFIG_BYTES) {
            Ok(text) => Self::parse(&text, Some(&base)).map_err(|e| format!("{}: {e}", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(base),
            Err(e) => Err(format!("{}: {e}", path.display())),
        }
    }

    /// The command bound to `key` in `mode`.
    #[must_use]
    pub fn command(&self, mode: &str, key: &Key) -> Option<&str> {
        self.modes.get(mode).and_then(|(_, t)| t.get(key)).map(String::as_str)
    }

    /// The bindings of `mode`, in display order.
    #[must_use]
    pub fn bindings(&self, mode: &str) -> &[Binding] {
        self.modes.get(mode).map_or(&[], |(l, _)| l.as_slice())
    }

    /// The first key of `command` in `mode`, for hints.
    #[must_use]
    pub fn first_key(&self, mode: &str, command: &str) -> Option<String> {
        self.bindings(mode).iter().find(|b| b.command == command).and_then(|b| b.keys.first()).map(Key::label)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_keymap_parses_and_binds_the_issue_keys() {
        let km = Keymap::parse(DEFAULT_KEYMAP, None).expect("default keymap");
        let k = |s: &str| Key::parse(s).expect("key");
        assert_eq!(km.command("normal", &k("j")), Some("down"));
        assert_eq!(km.command("normal", &k("down")), Some("down"));
        assert_eq!(km.command("normal", &k("a")), Some("approve"));
        assert_eq!(km.command("normal", &k("r")), Some("refuse"));
        assert_eq!(km.command("normal", &k("/")), Some("filter"));
        assert_eq!(km.command("normal", &k("?")), Some("help"));
        assert_eq!(km.command("normal", &k("q")), Some("quit"));
        assert_eq!(km.command("confirm", &k("y")), Some("confirm"));
        assert_eq!(km.command("confirm", &k("esc")), Some("cancel"));
        assert_eq!(km.command("normal", &k("ctrl-c")), Some("quit"));
        assert_eq!(km.command("normal", &k("5")), Some("matrices"));
        assert_eq!(km.command("normal", &k("6")), Some("agents"));
        assert_eq!(km.command("normal", &k("+")), Some("raise"));
        assert_eq!(km.command("normal", &k("-")), Some("lower"));
        for (key, command) in [("Q", "quarantine"), ("R", "release"), ("K", "kill"), ("E", "elevate")] {
            assert_eq!(km.command("normal", &k(key)), Some(command));
        }
    }

    #[test]
    fn conflicts_and_unknowns_are_errors() {
        let base = Keymap::parse(DEFAULT_KEYMAP, None).expect("default");
        let err = Keymap::parse("[normal]\napprove = { keys = [\"j\"] }", Some(&base)).expect_err("conflict");
        assert!(err.contains("bound to both"), "{err}");
        assert!(Keymap::parse("[normal]\nlaunch = { keys = [\"x\"] }", Some(&base)).is_err());
        assert!(Keymap::parse("[normal]\napprove = { keys = [\"hyper-x\"] }", Some(&base)).is_err());
        assert!(Keymap::parse("[visual]\n", Some(&base)).is_err());
        let patched = Keymap::parse("[normal]\napprove = { keys = [\"A\"] }", Some(&base)).expect("patch");
        assert_eq!(patched.command("normal", &Key::parse("A").expect("A")), Some("approve"));
        assert_eq!(patched.command("normal", &Key::parse("a").expect("a")), None);
    }
}
