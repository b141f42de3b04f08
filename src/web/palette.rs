//! The screen's 256 colours as classes (`f<n>` a foreground, `g<n>` a background), appended
//! to the stylesheet once: the page's CSP allows no inline style, so a colour is a class.

use std::fmt::Write;

use crate::domain::transcript::CUBE_LEVELS;

/// The 16 named colours, as a dark terminal shows them (the screen's background is dark).
const NAMED: [&str; 16] = [
    "#000000", "#cd3131", "#0dbc79", "#e5e510", "#2472c8", "#bc3fbc", "#11a8cd", "#e5e5e5",
    "#666666", "#f14c4c", "#23d18b", "#f5f543", "#3b8eea", "#d670d6", "#29b8db", "#ffffff",
];

/// `base` followed by the attribute classes and the 256 colours.
pub fn stylesheet(base: &str) -> String {
    let mut css = String::from(base);
    css.push_str(
        ".screen .b{font-weight:bold}.screen .d{opacity:.7}.screen .i{font-style:italic}\
         .screen .u{text-decoration:underline}.screen .rv{color:#0f131a;background:#dfe5ee}\n",
    );
    for n in 0..=255u8 {
        let rgb = rgb_of(n);
        let _ = writeln!(
            css,
            ".screen .f{n}{{color:{rgb}}}.screen .g{n}{{background:{rgb}}}"
        );
    }
    css
}

/// The colour of index `n` in the 256-colour palette: the named 16, the 6×6×6 cube, the greys.
fn rgb_of(n: u8) -> String {
    match n {
        0..=15 => NAMED[usize::from(n)].to_string(),
        16..=231 => {
            let i = usize::from(n - 16);
            let [r, g, b] = [i / 36, (i / 6) % 6, i % 6].map(|l| CUBE_LEVELS[l]);
            format!("#{r:02x}{g:02x}{b:02x}")
        }
        _ => {
            let v = 8 + 10 * (n - 232);
            format!("#{v:02x}{v:02x}{v:02x}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_index_has_its_colour() {
        assert_eq!(rgb_of(1), "#cd3131");
        assert_eq!(rgb_of(16), "#000000");
        assert_eq!(rgb_of(67), "#5f87af");
        assert_eq!(rgb_of(231), "#ffffff");
        assert_eq!(rgb_of(232), "#080808");
        assert_eq!(rgb_of(255), "#eeeeee");
        let css = stylesheet("");
        assert!(css.contains(".screen .f208{color:#ff8700}"), "{css}");
        assert!(css.contains(".screen .g255{background:#eeeeee}"));
    }
}
