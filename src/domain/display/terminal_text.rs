//! Text from outside cuekit made safe for a terminal: a record a cloned repository planted, a
//! child's report, a model's answer, a patch of a child's files. Control characters in them
//! would act on the terminal (retitle the window, clear the screen, write the clipboard), so
//! every text face shows them escaped. What is stored is never altered.

use std::borrow::Cow;

/// `text` with every control character but newline and tab shown as a Rust-style escape:
/// ESC as `\u{1b}`, BEL as `\u{7}`, CR as `\u{d}`, DEL and the C1 range (whose `\u{9b}` is
/// a CSI to many terminals) alike.
pub fn visible(text: &str) -> Cow<'_, str> {
    let acts = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.contains(acts) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if acts(c) {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_shown_not_sent() {
        assert_eq!(
            visible("\x1b]0;pwned\x07a\x1b[2J\rb\u{9b}c\u{7f}"),
            r"\u{1b}]0;pwned\u{7}a\u{1b}[2J\u{d}b\u{9b}c\u{7f}"
        );
        assert_eq!(visible("two\n\tlines ✓"), "two\n\tlines ✓");
        assert!(matches!(visible("plain"), Cow::Borrowed("plain")));
    }
}
