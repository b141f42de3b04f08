//! Helpers that turn what cuekit knows into words for a person: ages, tails of text, terminal
//! text made safe to print, a result as text.

pub mod age;
pub mod result_text;
pub mod tail;
pub mod terminal_text;
