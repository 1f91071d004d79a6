//! The console's screen as text, rendered through ratatui's `TestBackend` (shared by the console
//! test files).

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use warrant::console::app::State;
use warrant::console::theme::Theme;
use warrant::console::ui;

/// `s` rendered at `w`×`h` with the default theme: one line per row, trailing spaces trimmed.
pub fn screen(s: &State, w: u16, h: u16) -> String {
    let theme = Theme::builtin("default").expect("theme");
    let mut term = Terminal::new(TestBackend::new(w, h)).expect("terminal");
    term.draw(|f| ui::render(s, &theme, f)).expect("draw");
    let buf = term.backend().buffer();
    let mut out = String::new();
    for y in 0..h {
        let line: String = (0..w).map(|x| buf[(x, y)].symbol().to_owned()).collect();
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}
