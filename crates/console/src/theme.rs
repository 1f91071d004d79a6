//! Themes: TOML files keyed by meaning (`themes/*.toml`). The built-ins are compiled in; a user
//! theme in `<config>/themes/<name>.toml` patches the `default` theme role by role.

use ratatui::style::{Color, Modifier, Style};
use std::collections::BTreeMap;

/// Built-in themes, by name.
pub const BUILTIN: [(&str, &str); 2] =
    [("default", include_str!("../../../themes/default.toml")), ("mono", include_str!("../../../themes/mono.toml"))];

/// Every role a theme defines.
pub const ROLES: [&str; 22] = [
    "base",
    "muted",
    "border",
    "border_focus",
    "title",
    "header",
    "selection",
    "accent",
    "approve",
    "refuse",
    "pending",
    "warn",
    "error",
    "ok",
    "invalid",
    "risk_low",
    "risk_medium",
    "risk_high",
    "risk_critical",
    "key_hint",
    "button",
    "button_focus",
];

#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RoleSpec {
    fg: Option<String>,
    bg: Option<String>,
    #[serde(default)]
    bold: bool,
    #[serde(default)]
    italic: bool,
    #[serde(default)]
    underline: bool,
    #[serde(default)]
    reversed: bool,
    #[serde(default)]
    dim: bool,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ThemeFile {
    name: Option<String>,
    #[serde(default)]
    roles: BTreeMap<String, RoleSpec>,
}

/// A resolved theme: one style per role.
#[derive(Debug, Clone, PartialEq)]
pub struct Theme {
    /// The theme's name.
    pub name: String,
    styles: BTreeMap<&'static str, Style>,
}

fn parse_color(s: &str) -> Result<Color, String> {
    if let Some(hex) = s.strip_prefix('#') {
        if hex.len() == 6
            && let Ok(v) = u32::from_str_radix(hex, 16)
        {
            return Ok(Color::Rgb((v >> 16) as u8, (v >> 8) as u8, v as u8));
        }
        return Err(format!("bad colour {s:?}: use #rrggbb"));
    }
    Ok(match s.to_ascii_lowercase().as_str() {
        "reset" => Color::Reset,
        "black" => Color::Black,
        "red" => Color::Red,
        "green" => Color::Green,
        "yellow" => Color::Yellow,
        "blue" => Color::Blue,
        "magenta" => Color::Magenta,
        "cyan" => Color::Cyan,
        "gray" | "grey" => Color::Gray,
        "darkgray" | "darkgrey" => Color::DarkGray,
        "lightred" => Color::LightRed,
        "lightgreen" => Color::LightGreen,
        "lightyellow" => Color::LightYellow,
        "lightblue" => Color::LightBlue,
        "lightmagenta" => Color::LightMagenta,
        "lightcyan" => Color::LightCyan,
        "white" => Color::White,
        other => return Err(format!("unknown colour {other:?}")),
    })
}

impl RoleSpec {
    fn style(&self) -> Result<Style, String> {
        let mut st = Style::default();
        if let Some(fg) = &self.fg {
            st = st.fg(parse_color(fg)?);
        }
        if let Some(bg) = &self.bg {
            st = st.bg(parse_color(bg)?);
        }
        for (on, m) in [
            (self.bold, Modifier::BOLD),
            (self.italic, Modifier::ITALIC),
            (self.underline, Modifier::UNDERLINED),
            (self.reversed, Modifier::REVERSED),
            (self.dim, Modifier::DIM),
        ] {
            if on {
                st = st.add_modifier(m);
            }
        }
        Ok(st)
    }
}

/// The theme names `:theme` offers: the built-ins, then the files `<config_dir>/themes/*.toml`
/// whose names are safe ids, sorted.
#[must_use]
pub fn names(config_dir: &std::path::Path) -> Vec<String> {
    let mut own: Vec<String> = std::fs::read_dir(config_dir.join("themes"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_suffix(".toml").map(str::to_owned))
        .filter(|n| warrant_protocol::packet::is_safe_id(n) && !BUILTIN.iter().any(|(b, _)| b == n))
        .collect();
    own.sort();
    BUILTIN.iter().map(|(n, _)| (*n).to_owned()).chain(own).collect()
}

impl Theme {
    /// Parses a theme file over `base` (roles the file leaves out keep the base's style).
    ///
    /// # Errors
    /// A message naming the bad role, colour or key.
    pub fn parse(text: &str, base: Option<&Theme>) -> Result<Self, String> {
        let file: ThemeFile = toml::from_str(text).map_err(|e| e.to_string())?;
        let mut styles = base.map(|b| b.styles.clone()).unwrap_or_default();
        for (role, spec) in &file.roles {
            let Some(known) = ROLES.iter().find(|r| **r == role.as_str()) else {
                return Err(format!("unknown role {role:?}"));
            };
            styles.insert(known, spec.style().map_err(|e| format!("role {role}: {e}"))?);
        }
        if let Some(missing) = ROLES.iter().find(|r| !styles.contains_key(*r)) {
            return Err(format!("role {missing:?} is not defined"));
        }
        Ok(Self { name: file.name.unwrap_or_else(|| "custom".into()), styles })
    }

    /// A built-in theme by name.
    #[must_use]
    pub fn builtin(name: &str) -> Option<Self> {
        BUILTIN.iter().find(|(n, _)| *n == name).and_then(|(_, text)| Self::parse(text, None).ok())
    }

    /// Resolves a theme name: `NO_COLOR` (non-empty) forces `mono`; a built-in name; else
    /// `<config>/themes/<name>.toml` over `default`.
    ///
    /// # Errors
    /// An unknown name or a theme file that does not parse.
    pub fn resolve(name: Option<&str>, no_color: bool) -> Result<Self, String> {
        let default = Self::builtin("default").ok_or("built-in default theme is broken")?;
        if no_color {
            return Self::builtin("mono").ok_or_else(|| "built-in mono theme is broken".into());
        }
        let Some(name) = name else { return Ok(default) };
        if let Some(t) = Self::builtin(name) {
            return Ok(t);
        }
        let path = warrant_store::config::config_dir().join("themes").join(format!("{name}.toml"));
        let text = warrant_store::config::read_text_file(&path, warrant_store::config::MAX_CONFIG_BYTES)
            .map_err(|e| format!("theme {name:?}: {}: {e}", path.display()))?;
        Self::parse(&text, Some(&default)).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// The style of a role (the default style for an unknown role).
    #[must_use]
    pub fn get(&self, role: &str) -> Style {
        self.styles.get(role).copied().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_defines_every_role() {
        for (name, text) in BUILTIN {
            let t = Theme::parse(text, None).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(t.name, name);
            for role in ROLES {
                assert!(t.styles.contains_key(role), "{name} lacks {role}");
            }
        }
    }

    #[test]
    fn mono_has_no_colours() {
        let t = Theme::builtin("mono").expect("mono");
        for role in ROLES {
            let s = t.get(role);
            assert!(s.fg.is_none() && s.bg.is_none(), "{role} has a colour in mono");
        }
    }

    #[test]
    fn user_theme_patches_default_and_rejects_unknown_roles() {
        let base = Theme::builtin("default").expect("default");
        let t = Theme::parse("[roles]\napprove = { fg = \"#00ff00\" }", Some(&base)).expect("patch");
        assert_eq!(t.get("approve").fg, Some(Color::Rgb(0, 255, 0)));
        assert_eq!(t.get("refuse"), base.get("refuse"));
        assert!(Theme::parse("[roles]\nnope = {}", Some(&base)).is_err());
        assert!(Theme::parse("[roles]\napprove = { fg = \"chartreuse\" }", Some(&base)).is_err());
        assert!(Theme::resolve(Some("default"), true).expect("no_color").name == "mono");
    }
}
