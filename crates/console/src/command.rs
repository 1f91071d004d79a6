//! The `:` command line, as k9s and vim have it: parsing and completion, pure.
//! `update` dispatches a parsed [`Command`] to the same work the keys do (approve and refuse open
//! the same confirmation dialog; nothing is signed without it).

use super::app::Pane;
use super::filter::SortKey;

/// A command typed after `:`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `:approve [ID]`: the approval dialog for the packet under the cursor (as `a`), or for the
    /// pending packet `ID` (selected first).
    Approve(Option<String>),
    /// `:correct [ID]`: the proposed action of the packet under the cursor (as `e`), or of the
    /// pending packet `ID`, in the principal's editor, then the approval as corrected.
    Correct(Option<String>),
    /// `:refuse [REASON]`: with a reason, the refusal dialog at once; without, the reason line
    /// (as `r`).
    Refuse(Option<String>),
    /// `:filter TEXT` sets the list filter (`:filter` alone clears it).
    Filter(String),
    /// `:sort risk|age|class|agent`.
    Sort(SortKey),
    /// `:theme NAME`: a built-in theme or `<config>/themes/NAME.toml`.
    Theme(String),
    /// `:grant session|until TIME|pattern GLOB`: a scoped grant (the scope as typed).
    Grant(String),
    /// `:q`, `:quit`.
    Quit,
    /// `:help`.
    Help,
    /// `:pending`, `:decided`, … `:audit`: switch view.
    View(Pane),
}

/// The view names the command line knows, with their panes.
pub const VIEWS: [(&str, Pane); 8] = [
    ("pending", Pane::Pending),
    ("decided", Pane::Decided),
    ("invalid", Pane::Invalid),
    ("posteriors", Pane::Posteriors),
    ("matrices", Pane::Matrices),
    ("agents", Pane::Agents),
    ("grants", Pane::Grants),
    ("audit", Pane::Audit),
];

/// Every command name, for completion (`q` is `quit`'s short form), every view's included.
pub const NAMES: [&str; 18] = [
    "approve",
    "correct",
    "refuse",
    "filter",
    "sort",
    "theme",
    "grant",
    "quit",
    "q",
    "help",
    "pending",
    "decided",
    "invalid",
    "posteriors",
    "matrices",
    "agents",
    "grants",
    "audit",
];

/// The commands as `?` lists them: how each is typed, and what it does (with the usage, at most
/// 36 characters: one help column).
pub const HELP: [(&str, &str); 9] = [
    (":approve [ID]", "approve (this or ID)"),
    (":correct [ID]", "edit, approve as corrected"),
    (":refuse [WHY]", "refuse, with reason"),
    (":grant SCOPE", "approve with a grant"),
    (":filter [TEXT]", "filter (alone: clear)"),
    (":sort KEY", "age risk class agent"),
    (":theme NAME", "default, mono, file"),
    (":pending…:audit", "switch view"),
    (":help  :q", "help, quit"),
];

/// The sort keys `:sort` takes.
pub const SORT_KEYS: [&str; 4] = ["age", "risk", "class", "agent"];

/// The grant scopes `:grant` takes.
pub const GRANT_SCOPES: [&str; 4] = ["session", "until", "pattern", "class"];

fn sort_key(word: &str) -> Option<SortKey> {
    match word {
        "age" => Some(SortKey::Age),
        "risk" => Some(SortKey::Risk),
        "class" => Some(SortKey::Class),
        "agent" => Some(SortKey::Agent),
        _ => None,
    }
}

/// Parses a command line (without the `:`).
///
/// # Errors
/// A message for the status line: an unknown command, a missing or bad argument.
pub fn parse(line: &str) -> Result<Command, String> {
    let line = line.trim();
    let (name, rest) = line.split_once(char::is_whitespace).map_or((line, ""), |(n, r)| (n, r.trim()));
    let shown = warrant_protocol::text::inert(name, 40);
    let no_args = |c: Command| if rest.is_empty() { Ok(c) } else { Err(format!(":{shown} takes no argument")) };
    match name {
        "" => Err("empty command (:help lists them)".into()),
        "approve" if rest.contains(char::is_whitespace) => Err(":approve takes one packet id".into()),
        "approve" => Ok(Command::Approve((!rest.is_empty()).then(|| rest.to_owned()))),
        "correct" if rest.contains(char::is_whitespace) => Err(":correct takes one packet id".into()),
        "correct" => Ok(Command::Correct((!rest.is_empty()).then(|| rest.to_owned()))),
        "refuse" => Ok(Command::Refuse((!rest.is_empty()).then(|| rest.to_owned()))),
        "filter" => Ok(Command::Filter(rest.to_owned())),
        "sort" => sort_key(rest).map(Command::Sort).ok_or_else(|| {
            format!(":sort takes one of {} (not {:?})", SORT_KEYS.join(", "), warrant_protocol::text::inert(rest, 40))
        }),
        "theme" if rest.is_empty() || rest.contains(char::is_whitespace) => {
            Err(":theme takes a theme name (default, mono, or a file in <config>/themes/)".into())
        }
        "theme" => Ok(Command::Theme(rest.to_owned())),
        "grant" => {
            let scope = rest.split_whitespace().next().unwrap_or_default();
            let arg = rest.split_once(char::is_whitespace).map(|(_, a)| a.trim());
            match (scope, arg) {
                ("session", None) | ("until" | "pattern" | "class", Some(_)) => Ok(Command::Grant(rest.to_owned())),
                _ => Err(":grant takes session, until TIME, pattern GLOB or class max_amount=N;domain=D".into()),
            }
        }
        "q" | "quit" => no_args(Command::Quit),
        "help" => no_args(Command::Help),
        _ => match VIEWS.iter().find(|(v, _)| *v == name) {
            Some((_, pane)) => no_args(Command::View(*pane)),
            None => Err(format!("unknown command :{shown} (Tab completes, :help lists them)")),
        },
    }
}

/// Tab completion of `line`: the command name while the first word is typed, then the argument
/// of `:sort` (its keys), `:theme` (`themes`) and `:grant` (its scopes). Returns the completed
/// line when exactly one candidate fits, else the longest common prefix of the candidates (the
/// line unchanged when there is none), and the candidates.
#[must_use]
pub fn complete(line: &str, themes: &[String]) -> (String, Vec<String>) {
    let (head, word, options): (String, &str, Vec<String>) = match line.split_once(' ') {
        None => (String::new(), line, NAMES.iter().map(|s| (*s).to_owned()).collect()),
        Some((name, arg)) if !arg.contains(' ') => {
            let options = match name {
                "sort" => SORT_KEYS.iter().map(|s| (*s).to_owned()).collect(),
                "theme" => themes.to_vec(),
                "grant" => GRANT_SCOPES.iter().map(|s| (*s).to_owned()).collect(),
                _ => Vec::new(),
            };
            (format!("{name} "), arg, options)
        }
        Some(_) => return (line.to_owned(), Vec::new()),
    };
    let fits: Vec<String> = options.into_iter().filter(|o| o.starts_with(word)).collect();
    match fits.as_slice() {
        [] => (line.to_owned(), fits),
        [one] => {
            let space = if head.is_empty()
                && !matches!(one.as_str(), "approve" | "correct" | "q" | "quit" | "help")
                && !VIEWS.iter().any(|(v, _)| v == one)
            {
                " "
            } else {
                ""
            };
            (format!("{head}{one}{space}"), fits)
        }
        many => {
            let mut prefix = many[0].clone();
            for m in &many[1..] {
                while !m.starts_with(&prefix) {
                    prefix.pop();
                }
            }
            (format!("{head}{}", if prefix.len() > word.len() { &prefix } else { word }), fits)
        }
    }
}

/// The command-line history: the commands run, oldest first (at most [`HISTORY_LEN`]), and
/// where Up/Down have moved to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct History {
    /// The commands, oldest first; a command equal to the last one is not added again.
    pub entries: Vec<String>,
    /// The entry shown, counted from the newest (`None`: the line being typed).
    pub at: Option<usize>,
    /// The line being typed before Up was pressed, given back by Down past the newest.
    pub draft: String,
}

/// How many commands the history keeps.
pub const HISTORY_LEN: usize = 100;

impl History {
    /// Adds a command that was run.
    pub fn push(&mut self, line: &str) {
        let line = line.trim();
        if !line.is_empty() && self.entries.last().is_none_or(|l| l != line) {
            self.entries.push(line.to_owned());
            if self.entries.len() > HISTORY_LEN {
                self.entries.remove(0);
            }
        }
        self.at = None;
        self.draft.clear();
    }

    /// Up: the previous (older) command, replacing `line`; `None` at the oldest.
    pub fn older(&mut self, line: &str) -> Option<String> {
        let next = self.at.map_or(0, |a| a + 1);
        if next >= self.entries.len() {
            return None;
        }
        if self.at.is_none() {
            line.clone_into(&mut self.draft);
        }
        self.at = Some(next);
        self.entries.get(self.entries.len() - 1 - next).cloned()
    }

    /// Down: the next (newer) command, or the draft past the newest; `None` when not in the
    /// history.
    pub fn newer(&mut self) -> Option<String> {
        match self.at? {
            0 => {
                self.at = None;
                Some(std::mem::take(&mut self.draft))
            }
            a => {
                self.at = Some(a - 1);
                self.entries.get(self.entries.len() - a).cloned()
            }
        }
    }
}
