//! A private tmux server running the real `warrant` binary in a real terminal, for the
//! end-to-end tests (`tests/e2e_tmux.rs`, `tests/gateway.rs`). Requires tmux (`.ci/run`
//! installs it).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The binary under test.
const BIN: &str = env!("CARGO_BIN_EXE_warrant");

/// A private tmux server and session running one command; killed on drop.
pub struct Tmux {
    socket: String,
}

impl Tmux {
    /// Starts `warrant ARGS` in a 110×32 session with `env`, on a socket named after `name`, this
    /// process and a count of the sessions it started.
    pub fn start(name: &str, env: &[(&str, String)], args: &[&str]) -> Self {
        Self::start_sized(name, env, args, 110, 32)
    }

    /// [`Tmux::start`] on a terminal `width`×`height`.
    pub fn start_sized(name: &str, env: &[(&str, String)], args: &[&str], width: u16, height: u16) -> Self {
        let version = Command::new("tmux").arg("-V").output();
        assert!(
            version.is_ok_and(|o| o.status.success()),
            "tmux is required for the end-to-end tests (apt-get install -y tmux)"
        );
        // Unique in this process too: tests run in parallel threads of one test binary, and a
        // test's variants (a directory spool, a JetStream store) share its name.
        static STARTED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = STARTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let socket = format!("warrant-e2e-{name}-{}-{n}", std::process::id());
        let mut cmd = Command::new("tmux");
        let (w, h) = (width.to_string(), height.to_string());
        cmd.args(["-L", &socket, "-f", "/dev/null", "new-session", "-d", "-s", "t", "-x", &w, "-y", &h]);
        for (k, v) in env {
            cmd.args(["-e", &format!("{k}={v}")]);
        }
        cmd.arg(BIN).args(args);
        let status = cmd.status().expect("run tmux");
        assert!(status.success(), "tmux new-session failed");
        Self { socket }
    }

    /// Sends keys (tmux key names), one at a time.
    pub fn send(&self, keys: &[&str]) {
        for k in keys {
            let status =
                Command::new("tmux").args(["-L", &self.socket, "send-keys", "-t", "t", k]).status().expect("send-keys");
            assert!(status.success());
            std::thread::sleep(Duration::from_millis(40));
        }
    }

    /// Types literal text.
    pub fn type_text(&self, text: &str) {
        let status = Command::new("tmux")
            .args(["-L", &self.socket, "send-keys", "-t", "t", "-l", text])
            .status()
            .expect("send-keys");
        assert!(status.success());
    }

    /// The screen as text.
    pub fn screen(&self) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "capture-pane", "-p", "-t", "t"])
            .output()
            .expect("capture-pane");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Lets the program set tmux's paste buffer with OSC 52 (`set-clipboard on`; tmux's default,
    /// `external`, only passes it on to the terminal outside).
    pub fn accept_clipboard(&self) {
        let status = Command::new("tmux")
            .args(["-L", &self.socket, "set-option", "-s", "set-clipboard", "on"])
            .status()
            .expect("set-option");
        assert!(status.success());
    }

    /// tmux's newest paste buffer: what the program copied with OSC 52 (empty when nothing).
    pub fn clipboard(&self) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "show-buffer"])
            .stderr(Stdio::null())
            .output()
            .expect("show-buffer");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The pane's title, as the program set it (OSC 0/2).
    pub fn title(&self) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "display-message", "-p", "-t", "t", "#{pane_title}"])
            .output()
            .expect("display-message");
        String::from_utf8_lossy(&out.stdout).trim_end().to_owned()
    }

    /// Whether the session (the command in it) is still running.
    pub fn alive(&self) -> bool {
        Command::new("tmux")
            .args(["-L", &self.socket, "has-session", "-t", "t"])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    /// Waits until the screen satisfies `pred`; returns the screen and the time it took.
    pub fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> (String, Duration) {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if pred(&s) {
                return (s, start.elapsed());
            }
            if start.elapsed() >= Duration::from_secs(20) {
                let state = if self.alive() { "still running" } else { "no longer running" };
                panic!("timed out waiting for {what} (the program is {state}); screen:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux").args(["-L", &self.socket, "kill-server"]).stderr(Stdio::null()).status();
    }
}
