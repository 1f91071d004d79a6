//! The console: its update and render functions with snapshots at several sizes, grants,
//! notifications, scale and tamper properties, and the real binary under tmux.
//!
//! One test binary per concern: each file of `tests/` is a module here (Cargo's `autotests` are
//! off), so a change relinks one binary, not one per file.

#[path = "../console.rs"]
mod console;
#[path = "../console_grants.rs"]
mod console_grants;
#[path = "../console_notify.rs"]
mod console_notify;
#[path = "../console_scale.rs"]
mod console_scale;
#[path = "../console_tamper.rs"]
mod console_tamper;
#[path = "../e2e_tmux.rs"]
mod e2e_tmux;

// The helpers the tests share, each compiled once for this binary (not every suite uses all of
// each).
#[allow(dead_code)]
#[path = "../support/lines.rs"]
mod lines;
#[allow(dead_code)]
#[path = "../support/nats.rs"]
mod nats;
#[allow(dead_code)]
#[path = "../support/screen.rs"]
mod screen;
#[allow(dead_code)]
#[path = "../support/tmux.rs"]
mod tmux;
