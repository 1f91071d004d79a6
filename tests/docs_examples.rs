//! Every command example in `README.md` and `docs/*.md` runs against the real binary, so the
//! documentation cannot drift from the program; and `docs/cli.md`'s `--help` capture is the
//! binary's `--help`.
//!
//! The convention, for fenced blocks tagged `sh`, `bash`, `shell` or `console`:
//!
//! - A block runs unless the line before its fence is `<!-- not run: REASON -->` (a reason is
//!   required). Every block that runs must call `warrant` at least once.
//! - In `sh`/`bash`/`shell` blocks every line is a command (`\` continues it; blank lines and
//!   whole-line comments are skipped). In `console` blocks the commands are the lines after
//!   `$ `; the other lines are output, except that `$ echo $?` followed by a number states the
//!   exit code of the command before it. Every output line shown must be printed by the command,
//!   once what differs from run to run is masked (hashes, fingerprints, paths, times, generated
//!   ids, numbers) and runs of spaces are read as one.
//! - A trailing `# …` comment is stripped. When it starts with `exit N`, N is the exit code the
//!   command must give; otherwise it must give 0. A comment `# meanwhile the principal approves
//!   it` (or `refuses it`) signs that decision while the command runs: the test reads the packet
//!   id from the command's first line of output and runs `warrant approve|refuse ID --yes`.
//! - The commands of one file run in order, through `sh -c`, in one prepared environment: a
//!   fresh `WARRANT_CONFIG` with no key (the documents create it with `warrant keys init`; the
//!   passphrase comes from `WARRANT_PASSPHRASE_FILE`), an empty `WARRANT_SPOOL`, `HOME`, and a
//!   working directory holding `payload.json`, `requests.jsonl`, `bob.pub` and a
//!   `tests/fixtures/conformance` link to the repository's conformance fixtures (so the examples
//!   read as if run from the checkout).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_warrant");
const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// bob's public key, pinned and unpinned by the key examples (fingerprint
/// `SHA256:0St7oItwrQV9vdlR61kIk1WLDdS8YpUsF7CuT5I/wh8`).
const BOB_PUB: &str = "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEASQ/EnGJEaRjPV88+KpNOxPUYKXkHdcKoUiZtNP6tcb0=\n-----END PUBLIC KEY-----\n";

#[derive(Debug)]
struct Block {
    file: String,
    line: usize,
    lang: String,
    body: Vec<String>,
    not_run: Option<String>,
}

/// The fenced blocks of a markdown file.
fn blocks(file: &str, text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut prev = "";
    let mut lines = text.lines().enumerate();
    while let Some((n, line)) = lines.next() {
        if let Some(info) = line.strip_prefix("```") {
            let lang = info.trim().to_string();
            let mut body = Vec::new();
            for (_, l) in lines.by_ref() {
                if l.starts_with("```") {
                    break;
                }
                body.push(l.to_string());
            }
            let marker = prev.trim();
            let not_run =
                marker.strip_prefix("<!-- not run:").and_then(|r| r.strip_suffix("-->")).map(|r| r.trim().to_string());
            if let Some(r) = &not_run {
                assert!(!r.is_empty(), "{file}:{}: a not-run block needs a reason", n + 1);
            }
            out.push(Block { file: file.to_string(), line: n + 1, lang, body, not_run });
            prev = "";
            continue;
        }
        if !line.trim().is_empty() {
            prev = line;
        }
    }
    out
}

/// What a command must do.
#[derive(Debug, Clone, PartialEq)]
enum Meanwhile {
    Nothing,
    /// Approve, with this reason.
    Approve(String),
    /// Refuse, with this reason.
    Refuse(String),
}

#[derive(Debug, Clone)]
struct Cmd {
    text: String,
    exit: i32,
    meanwhile: Meanwhile,
    /// The output a `console` transcript shows for it.
    output: Vec<String>,
}

/// Splits a command line into the command and its trailing comment (a `#` outside quotes, at
/// the start or after whitespace).
fn split_comment(line: &str) -> (String, Option<String>) {
    let (mut single, mut double) = (false, false);
    let mut prev = ' ';
    for (i, c) in line.char_indices() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single && prev != '\\' => double = !double,
            '#' if !single && !double && prev.is_whitespace() => {
                return (line[..i].trim_end().to_string(), Some(line[i + 1..].trim().to_string()));
            }
            _ => {}
        }
        prev = c;
    }
    (line.trim_end().to_string(), None)
}

fn command(line: &str) -> Cmd {
    let (text, comment) = split_comment(line);
    let comment = comment.unwrap_or_default();
    let exit = comment
        .strip_prefix("exit ")
        .map(|r| r.split(|c: char| !c.is_ascii_digit()).next().unwrap_or_default())
        .map(|n| n.parse().expect("`# exit N` names a number"))
        .unwrap_or(0);
    // `# meanwhile the principal approves it ("reason")`: the reason in quotes, if any.
    let reason = |default: &str| comment.split('"').nth(1).unwrap_or(default).to_string();
    let meanwhile = if comment.starts_with("meanwhile the principal approves") {
        Meanwhile::Approve(reason("checked"))
    } else if comment.starts_with("meanwhile the principal refuses") {
        Meanwhile::Refuse(reason("not now"))
    } else {
        Meanwhile::Nothing
    };
    Cmd { text, exit, meanwhile, output: Vec::new() }
}

/// Joins `\` continuations.
fn logical_lines<'a>(lines: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut cont = false;
    for l in lines {
        let piece = l.trim_end();
        if cont {
            let last = out.last_mut().expect("continued line");
            last.pop();
            let kept = last.trim_end().len();
            last.truncate(kept);
            last.push(' ');
            last.push_str(piece.trim_start());
        } else {
            out.push(piece.to_string());
        }
        cont = piece.ends_with('\\');
    }
    out
}

/// The commands of a runnable block.
fn commands(b: &Block) -> Vec<Cmd> {
    let at = format!("{}:{}", b.file, b.line);
    if b.lang == "console" {
        let mut cmds: Vec<Cmd> = Vec::new();
        let mut i = 0;
        let body = &b.body;
        while i < body.len() {
            let Some(first) = body[i].strip_prefix("$ ") else {
                i += 1;
                continue;
            };
            let mut raw = vec![first];
            while raw.last().is_some_and(|l| l.trim_end().ends_with('\\')) {
                i += 1;
                raw.push(body.get(i).map(String::as_str).unwrap_or_else(|| panic!("{at}: dangling `\\`")));
            }
            i += 1;
            let line = logical_lines(raw.into_iter()).remove(0);
            if line.trim() == "echo $?" {
                let code = body.get(i).and_then(|l| l.trim().parse().ok());
                let code = code.unwrap_or_else(|| panic!("{at}: `echo $?` is followed by the exit code"));
                cmds.last_mut().unwrap_or_else(|| panic!("{at}: `echo $?` with no command before it")).exit = code;
                i += 1;
                continue;
            }
            let mut cmd = command(&line);
            while i < body.len() && !body[i].starts_with("$ ") {
                cmd.output.push(body[i].clone());
                i += 1;
            }
            cmds.push(cmd);
        }
        cmds
    } else {
        logical_lines(b.body.iter().map(String::as_str))
            .iter()
            .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
            .map(|l| command(l))
            .collect()
    }
}

/// One document's environment.
struct DocEnv {
    dir: tempfile::TempDir,
}

impl DocEnv {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path();
        for d in ["config", "spool", "home", "work", "data"] {
            std::fs::create_dir_all(p.join(d)).expect("mkdir");
        }
        std::fs::write(p.join("passphrase"), "correct horse battery staple\n").expect("passphrase");
        let w = p.join("work");
        std::fs::create_dir_all(w.join("tests/fixtures")).expect("mkdir");
        std::os::unix::fs::symlink(
            Path::new(ROOT).join("tests/fixtures/conformance"),
            w.join("tests/fixtures/conformance"),
        )
        .expect("symlink");
        std::fs::write(w.join("payload.json"), r#"{"to": "dana@northwind.example", "subject": "Quote", "units": 40}"#)
            .expect("payload");
        std::fs::write(
            w.join("requests.jsonl"),
            "{\"op\":\"ops\",\"id\":1}\n{\"op\":\"tg.can_execute\",\"id\":2,\"action_class\":\"draft.response\"}\n",
        )
        .expect("requests");
        std::fs::write(w.join("bob.pub"), BOB_PUB).expect("bob.pub");
        Self { dir }
    }

    fn sh(&self, text: &str) -> Command {
        let p = self.dir.path();
        let bin_dir = Path::new(BIN).parent().expect("bin dir");
        let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
        let mut c = Command::new("sh");
        c.arg("-c")
            .arg(text)
            .current_dir(p.join("work"))
            .env_clear()
            .env("PATH", path)
            .env("HOME", p.join("home"))
            .env("TMPDIR", std::env::temp_dir())
            .env("WARRANT_CONFIG", p.join("config"))
            .env("WARRANT_SPOOL", p.join("spool"))
            .env("WARRANT_PRINCIPAL", "alice")
            .env("WARRANT_PASSPHRASE_FILE", p.join("passphrase"))
            .env("XDG_DATA_HOME", p.join("data"))
            .stdin(Stdio::null());
        c
    }

    /// Runs a command to completion (at most a minute) and returns its exit code and output.
    fn run(&mut self, cmd: &Cmd, at: &str) -> (i32, String) {
        let mut child = self.sh(&cmd.text).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("sh");
        let stdout = child.stdout.take().expect("stdout");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        let out_thread = std::thread::spawn(move || {
            let mut all = String::new();
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line.clone());
                all.push_str(&line);
                all.push('\n');
            }
            all
        });
        let err_thread = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap_or_default());
        if cmd.meanwhile != Meanwhile::Nothing {
            let id = rx.recv_timeout(Duration::from_secs(30)).unwrap_or_else(|_| panic!("{at}: no packet id printed"));
            let decide = match &cmd.meanwhile {
                Meanwhile::Approve(r) => format!("warrant approve {id} --yes --reason '{r}'"),
                Meanwhile::Refuse(r) => format!("warrant refuse {id} --yes --reason '{r}'"),
                Meanwhile::Nothing => unreachable!(),
            };
            let o = self.sh(&decide).output().expect("decide");
            assert_eq!(o.status.code(), Some(0), "{at}: {decide}: {}", String::from_utf8_lossy(&o.stderr));
        }
        let start = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().expect("wait") {
                break s;
            }
            if start.elapsed() > Duration::from_secs(60) {
                let _ = child.kill();
                panic!("{at}: `{}` still running after a minute", cmd.text);
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let out = out_thread.join().expect("stdout thread");
        let err = err_thread.join().expect("stderr thread");
        (status.code().unwrap_or(-1), format!("{out}{err}"))
    }
}

fn documents() -> Vec<(String, String)> {
    let mut files = vec![PathBuf::from(ROOT).join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(Path::new(ROOT).join("docs"))
        .expect("docs/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
        .into_iter()
        .map(|p| {
            let name = p.strip_prefix(ROOT).expect("under the root").display().to_string();
            (name, std::fs::read_to_string(&p).expect("read doc"))
        })
        .collect()
}

/// A line of output with what differs from run to run masked: hashes and fingerprints, paths,
/// timestamps, generated ids, key material and numbers; runs of spaces are one.
fn masked(line: &str) -> String {
    line.split_whitespace()
        .map(|tok| {
            let core = tok.trim_matches(|c: char| "\"',:;()[]{}".contains(c));
            let volatile = core.contains("sha256:")
                || core.contains("SHA256:")
                || core.starts_with('/')
                || core.starts_with("wp-")
                || core.starts_with("grant-")
                || (core.len() >= 40 && core.chars().all(|c| c.is_ascii_alphanumeric() || "+/=".contains(c)))
                || (core.len() >= 10 && core.as_bytes()[4] == b'-' && core.contains('T'))
                || (!core.is_empty() && core.chars().all(|c| c.is_ascii_digit() || c == '.'))
                // An age (`45s`, `3m`, `2h`, `1d`) and a short content hash (`list`'s 8 or 12
                // hex digits).
                || core
                    .strip_suffix(['s', 'm', 'h', 'd'])
                    .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
                || ([8, 12].contains(&core.len())
                    && core.chars().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
                    && core.chars().any(|c| c.is_ascii_digit()));
            if volatile { tok.replace(core, "…") } else { tok.to_string() }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// What `keys init` asks on the terminal (not on its output; the test gives the passphrase in
/// `WARRANT_PASSPHRASE_FILE`).
const TERMINAL_PROMPTS: [&str; 2] = ["new passphrase for the principal's key:", "the same passphrase again:"];

const SHELL_LANGS: [&str; 4] = ["sh", "bash", "shell", "console"];

#[test]
fn every_command_example_in_the_docs_runs_as_documented() {
    let mut ran_blocks = 0;
    let mut ran_commands = 0;
    for (file, text) in documents() {
        let mut env = DocEnv::new();
        for b in blocks(&file, &text).into_iter().filter(|b| SHELL_LANGS.contains(&b.lang.as_str())) {
            if b.not_run.is_some() {
                continue;
            }
            let at = format!("{}:{}", b.file, b.line);
            let cmds = commands(&b);
            assert!(
                cmds.iter().any(|c| c.text.contains("warrant")),
                "{at}: a block that runs must call warrant (or be marked `<!-- not run: reason -->`)"
            );
            for c in &cmds {
                let (code, output) = env.run(c, &at);
                assert_eq!(code, c.exit, "{at}: `{}` exited {code}, the doc says {}:\n{output}", c.text, c.exit);
                let got: Vec<String> = output.lines().map(masked).collect();
                for shown in c.output.iter().filter(|l| !l.trim().is_empty() && !TERMINAL_PROMPTS.contains(&l.as_str()))
                {
                    assert!(
                        got.contains(&masked(shown)),
                        "{at}: `{}` does not print the line the doc shows (ids, hashes, paths, times and numbers aside):\n  {shown}\nit printed:\n{output}",
                        c.text
                    );
                }
                ran_commands += 1;
            }
            ran_blocks += 1;
        }
    }
    assert!(ran_blocks >= 15, "only {ran_blocks} blocks ran");
    assert!(ran_commands >= 50, "only {ran_commands} commands ran");
}

/// Every `sh`/`console` block is either run or marked, and the markers are only used on such
/// blocks (a marker on a `text` block would hide nothing and mislead).
#[test]
fn every_shell_block_is_run_or_marked_with_a_reason() {
    let mut marked = 0;
    for (file, text) in documents() {
        for b in blocks(&file, &text) {
            let shell = SHELL_LANGS.contains(&b.lang.as_str());
            if b.not_run.is_some() {
                assert!(shell, "{}:{}: a run marker on a ```{} block", b.file, b.line, b.lang);
            }
            if let Some(reason) = &b.not_run {
                assert!(reason.len() >= 10, "{}:{}: say why the block is not run", b.file, b.line);
                marked += 1;
            }
            // `$ warrant …` transcripts belong in `console` blocks, where they run (except the
            // `--help` captures, checked below).
            if b.lang == "text" && !b.body.first().is_some_and(|l| l.ends_with("--help")) {
                assert!(
                    !b.body.iter().any(|l| l.starts_with("$ ")),
                    "{}:{}: a `$ ` transcript in a ```text block; make it ```console",
                    b.file,
                    b.line
                );
            }
        }
    }
    assert!(marked > 0);
}

/// `docs/cli.md`'s `--help` captures are exactly what the binary prints.
#[test]
fn cli_md_help_captures_match_the_binary() {
    let text = std::fs::read_to_string(Path::new(ROOT).join("docs/cli.md")).expect("cli.md");
    let mut checked = Vec::new();
    for b in blocks("docs/cli.md", &text).into_iter().filter(|b| b.lang == "text") {
        let Some(first) = b.body.first() else { continue };
        let Some(args) = first.strip_prefix("$ warrant ") else { continue };
        if !args.ends_with("--help") {
            continue;
        }
        let o = Command::new(BIN).args(args.split_whitespace()).env_remove("COLUMNS").output().expect("run --help");
        assert_eq!(o.status.code(), Some(0));
        let got = String::from_utf8(o.stdout).expect("utf-8");
        let documented = b.body[1..].join("\n");
        assert_eq!(
            documented.trim_end(),
            got.trim_end(),
            "docs/cli.md:{}: `warrant {args}` differs from the capture; paste the output above into the doc",
            b.line
        );
        checked.push(args.to_string());
    }
    assert!(checked.iter().any(|a| a == "--help"), "docs/cli.md captures `warrant --help`");
}

#[test]
fn the_parser_reads_the_conventions() {
    let b = blocks(
        "t.md",
        "x\n<!-- not run: needs a terminal -->\n```sh\nwarrant demo\n```\n```console\n$ warrant a \\\n  --b # c\nout\n$ echo $?\n3\n$ warrant c   # meanwhile the principal approves it\n```\n```sh\nwarrant x '#1' # exit 5 when pending\n```\n",
    );
    assert_eq!(b.len(), 3);
    assert_eq!(b[0].not_run.as_deref(), Some("needs a terminal"));
    let c = commands(&b[1]);
    assert_eq!(c.len(), 2);
    assert_eq!((c[0].text.as_str(), c[0].exit), ("warrant a --b", 3));
    assert_eq!(c[0].output, vec!["out".to_string()]);
    assert_eq!((c[1].text.as_str(), c[1].meanwhile.clone()), ("warrant c", Meanwhile::Approve("checked".into())));
    assert_eq!(
        masked("approved q-1: record 12 sha256:ab signed at 2026-11-21T11:39:06.004Z in /tmp/x"),
        "approved q-1: record … … signed at … in …"
    );
    let c = commands(&b[2]);
    assert_eq!((c[0].text.as_str(), c[0].exit), ("warrant x '#1'", 5));
}

// The README's key tables are checked against the keymap by
// `tests/console.rs::readme_key_tables_follow_the_keymap`.

/// Whether `doc` is a part of `got`: every member the doc shows has the same value (objects may
/// have more members; arrays have the same length; a string with `…` in the doc matches any).
fn shown_in(doc: &serde_json::Value, got: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (doc, got) {
        (Value::Object(d), Value::Object(g)) => {
            d.iter().all(|(k, v)| k == "…" || g.get(k).is_some_and(|gv| shown_in(v, gv)))
        }
        (Value::Array(d), Value::Array(g)) => d.len() == g.len() && d.iter().zip(g).all(|(a, b)| shown_in(a, b)),
        (Value::String(d), _) if d.contains('…') => true,
        (Value::Number(d), Value::Number(g)) => d.as_f64() == g.as_f64(),
        _ => doc == got,
    }
}

/// `docs/eval.md`: every request example without an elided part (`…`) is answered by `warrant eval`
/// without an error, and the response example after it, where there is one, is part of the answer.
#[test]
fn eval_md_requests_are_answered_as_documented() {
    use serde_json::Value;
    let text = std::fs::read_to_string(Path::new(ROOT).join("docs/eval.md")).expect("eval.md");
    let values: Vec<(usize, Value)> = blocks("docs/eval.md", &text)
        .into_iter()
        .filter(|b| b.lang == "json")
        .map(|b| {
            let v = serde_json::from_str(&b.body.join("\n"))
                .unwrap_or_else(|e| panic!("docs/eval.md:{}: not JSON: {e}", b.line));
            (b.line, v)
        })
        .collect();
    let mut checked = (0, 0);
    for (i, (line, req)) in values.iter().enumerate() {
        if req.get("op").is_none() || req.to_string().contains('…') {
            continue;
        }
        let o = Command::new(BIN)
            .arg("eval")
            .env("WARRANT_CONFIG", "/nonexistent/warrant-docs-test")
            // No spool chain: the examples' answers do not depend on this machine's evidence.
            .env("WARRANT_SPOOL", "/nonexistent/warrant-docs-test/spool")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write;
                let mut stdin = c.stdin.take().expect("stdin");
                writeln!(stdin, "{req}")?;
                drop(stdin);
                c.wait_with_output()
            })
            .expect("warrant eval");
        let got: Value = serde_json::from_slice(&o.stdout).expect("one JSON response");
        assert!(got.get("error").is_none(), "docs/eval.md:{line}: the example request fails: {got}");
        checked.0 += 1;
        if let Some((rline, resp)) = values.get(i + 1).filter(|(_, v)| v.get("op").is_none()) {
            assert!(
                shown_in(resp, &got),
                "docs/eval.md:{rline}: the response shown is not what warrant answers:\n{got:#}"
            );
            checked.1 += 1;
        }
    }
    assert!(checked.0 >= 3 && checked.1 >= 2, "requests and responses checked: {checked:?}");
}

/// Every ```` ```toml ```` example in `README.md` and `docs/*.md` is a file warrant accepts, in the
/// place it belongs: `config.toml`, `pinned_keys.toml`, `policy.toml` or `keymap.toml`.
#[test]
fn toml_examples_are_accepted_by_warrant() {
    let mut seen = Vec::new();
    for (file, text) in documents() {
        for b in blocks(&file, &text).into_iter().filter(|b| b.lang == "toml") {
            let at = format!("{}:{}", b.file, b.line);
            let body = b.body.join("\n") + "\n";
            let dir = tempfile::tempdir().expect("tempdir");
            let config = dir.path().join("config");
            std::fs::create_dir_all(&config).expect("config dir");
            if body.contains("[mcp_servers.") {
                // Codex's config.toml with its servers behind warrant: `setup codex --mcp --check`
                // reads it as Codex keeps it and finds every server wrapped (by this binary, put
                // where the example names the user's install).
                let codex = dir.path().join("project").join(".codex");
                std::fs::create_dir_all(&codex).expect(".codex");
                assert!(body.contains("/home/me/.cargo/bin/warrant"), "{at}: the example names warrant's install");
                std::fs::write(codex.join("config.toml"), body.replace("/home/me/.cargo/bin/warrant", BIN))
                    .expect("write the example");
                std::fs::create_dir_all(dir.path().join("spool")).expect("spool");
                let project = dir.path().join("project").display().to_string();
                let o = Command::new(BIN)
                    .args(["setup", "codex", "--mcp", "--check", "--dir", &project])
                    .env("WARRANT_CONFIG", &config)
                    .env("WARRANT_SPOOL", dir.path().join("spool"))
                    .output()
                    .expect("run warrant");
                assert_eq!(
                    o.status.code(),
                    Some(0),
                    "{at}: {}{}",
                    String::from_utf8_lossy(&o.stdout),
                    String::from_utf8_lossy(&o.stderr)
                );
                seen.push("codex config.toml");
                continue;
            }
            let (name, args, expect): (&str, &[&str], String) = if body.contains("[[key]]") {
                let fp = body.split("fingerprint = \"").nth(1).and_then(|r| r.split('"').next()).expect("fingerprint");
                ("pinned_keys.toml", &["keys", "show"], fp.to_string())
            } else if body.contains("[normal]") {
                if !cfg!(feature = "console") {
                    continue;
                }
                // Read, and found good, before the console asks for a terminal.
                ("keymap.toml", &["console", "--read-only"], "enabling raw mode".to_string())
            } else if body.trim_start().starts_with("principal =") {
                ("config.toml", &["keys", "show"], "principal  alice".to_string())
            } else if body.trim_start().starts_with("[notify]") || body.trim_start().starts_with("[console]") {
                // Parsed (an unknown key or an empty command is exit 2) before the key is read.
                ("config.toml", &["keys", "show"], "principal".to_string())
            } else if body.trim_start().starts_with("[timeouts.")
                || body.trim_start().starts_with("[cosign.")
                || body.trim_start().starts_with("[protected]")
            {
                ("policy.toml", &["well-known"], "email.send.external".to_string())
            } else if body.contains("[[class]]") {
                ("policy.toml", &["well-known"], "crm.record.update".to_string())
            } else {
                // The first tool the example registers.
                let tool = body.split("[tools.\"").nth(1).and_then(|r| r.split('"').next()).expect("a [tools] entry");
                ("policy.toml", &["trust", "show"], tool.to_string())
            };
            std::fs::write(config.join(name), &body).expect("write the example");
            std::fs::create_dir_all(dir.path().join("spool")).expect("the spool, as `warrant init` makes it");
            let o = Command::new(BIN)
                .args(args)
                .env("WARRANT_CONFIG", &config)
                .env("WARRANT_SPOOL", dir.path().join("spool"))
                .env_remove("WARRANT_PRINCIPAL")
                .env("XDG_DATA_HOME", dir.path().join("data"))
                .stdin(Stdio::null())
                .output()
                .expect("run warrant");
            let all = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
            if name != "keymap.toml" {
                assert_eq!(o.status.code(), Some(0), "{at}: warrant {args:?} with this {name}:\n{all}");
            }
            assert!(all.contains(&expect), "{at}: warrant {args:?} with this {name} does not show {expect:?}:\n{all}");
            seen.push(name);
        }
    }
    for name in ["config.toml", "pinned_keys.toml", "policy.toml"] {
        assert!(seen.contains(&name), "no {name} example checked");
    }
}
