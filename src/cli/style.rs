//! Colour on a terminal, never in a pipe or in JSON: `--color auto|always|never`, and
//! `NO_COLOR` (no-color.org) switches `auto` off.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::domain::status::Status;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

static STDOUT_COLOR: AtomicBool = AtomicBool::new(false);

/// Decides once, from the flag, the environment and whether stdout is a terminal.
pub fn init(choice: ColorChoice) {
    let on = enabled(
        choice,
        std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()),
        std::io::stdout().is_terminal(),
    );
    STDOUT_COLOR.store(on, Ordering::Relaxed);
}

/// For a face that draws on the terminal itself (`top`): only the flag and `NO_COLOR` count.
pub fn enabled_for_terminal(choice: ColorChoice) -> bool {
    enabled(
        choice,
        std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()),
        true,
    )
}

fn enabled(choice: ColorChoice, no_color: bool, terminal: bool) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => terminal && !no_color,
    }
}

/// `text` (a status in words) coloured as `status` is when stdout takes colour; `width` pads it
/// (colour codes take no columns).
pub fn word(status: Status, text: &str, width: usize) -> String {
    let word = format!("{text:<width$}");
    if !STDOUT_COLOR.load(Ordering::Relaxed) {
        return word;
    }
    let code = match status {
        Status::InputRequired => "1;33",
        Status::Queued => "34",
        Status::Running => "36",
        Status::Completed => "32",
        Status::Failed | Status::TimedOut => "31",
        Status::Cancelled => "35",
        Status::Untrusted | Status::Unknown => "1;31",
    };
    format!("\x1b[{code}m{text}\x1b[0m{}", &word[text.len()..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_needs_a_terminal_and_no_no_color() {
        assert!(enabled(ColorChoice::Auto, false, true));
        assert!(!enabled(ColorChoice::Auto, true, true));
        assert!(!enabled(ColorChoice::Auto, false, false));
        assert!(enabled(ColorChoice::Always, true, false));
        assert!(!enabled(ColorChoice::Never, false, true));
    }
}
