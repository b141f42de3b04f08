//! The readable view of a raw pane transcript. The raw file keeps every byte (escapes,
//! `\r\n`, redraw frames); this renders what a person would have seen scroll by.
//!
//! It is a tiny terminal: text is written at a cursor on a screen of `height` rows, cursor
//! movement and erase sequences act on that screen, and a row is emitted once it scrolls off
//! the top. So a TUI that redraws its status lines in place shows them once, not once per
//! frame, and memory stays bounded by the screen whatever the transcript's size.
//!
//! A styled renderer ([`Renderer::styled`]) also keeps each cell's colours and attributes (SGR)
//! and writes them back as one normalized sequence per change (`ESC [ 0 ; … m`, nothing else):
//! whatever a child printed, the only escapes in its output are ones built here.

use std::collections::VecDeque;
use std::io::{self, Write};

enum Parse {
    Ground,
    Escape,
    Csi(Vec<u8>),
    /// OSC/DCS/APC strings: skipped up to BEL or ESC \.
    Text {
        after_escape: bool,
    },
    /// ESC ( B and friends: one more byte to skip.
    Charset,
}

/// The widest row the renderer keeps: wider than any terminal a pane gets (tmux panes are
/// capped at 1000 columns), small enough that a screen of rows stays a few megabytes.
pub const MAX_COLUMNS: usize = 4096;

/// A colour as a terminal takes it: its default, one of the 256 indexed colours (0–15 the
/// named ones), or 24-bit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Colour {
    #[default]
    Default,
    Indexed(u8),
    Rgb(u8, u8, u8),
}

/// The look of a cell: colours and attributes ([`Style::BOLD`] and friends).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Style {
    pub fg: Colour,
    pub bg: Colour,
    pub attrs: u8,
}

impl Style {
    pub const BOLD: u8 = 1;
    pub const DIM: u8 = 2;
    pub const ITALIC: u8 = 4;
    pub const UNDERLINE: u8 = 8;
    pub const INVERSE: u8 = 16;
    const ATTRS: [(u8, u8); 5] = [
        (1, Self::BOLD),
        (2, Self::DIM),
        (3, Self::ITALIC),
        (4, Self::UNDERLINE),
        (7, Self::INVERSE),
    ];

    /// The style after an SGR sequence's parameters (`31;1`, `38;5;208`, `48:2::1:2:3`).
    fn apply(mut self, params: &[u8]) -> Style {
        let text = std::str::from_utf8(params).unwrap_or("");
        let codes: Vec<u32> = text
            .split([';', ':'])
            .map(|n| n.parse().unwrap_or(0))
            .collect();
        let mut i = 0;
        while i < codes.len() {
            let code = codes[i];
            i += 1;
            match code {
                0 => self = Style::default(),
                22 => self.attrs &= !(Self::BOLD | Self::DIM),
                23 => self.attrs &= !Self::ITALIC,
                24 => self.attrs &= !Self::UNDERLINE,
                27 => self.attrs &= !Self::INVERSE,
                30..=37 => self.fg = Colour::Indexed((code - 30) as u8),
                40..=47 => self.bg = Colour::Indexed((code - 40) as u8),
                90..=97 => self.fg = Colour::Indexed((code - 90 + 8) as u8),
                100..=107 => self.bg = Colour::Indexed((code - 100 + 8) as u8),
                39 => self.fg = Colour::Default,
                49 => self.bg = Colour::Default,
                38 | 48 => {
                    let (colour, used) = extended(&codes[i..], text.contains(':'));
                    i += used;
                    if code == 38 {
                        self.fg = colour;
                    } else {
                        self.bg = colour;
                    }
                }
                _ => {
                    if let Some((_, bit)) = Self::ATTRS.iter().find(|(c, _)| u32::from(*c) == code)
                    {
                        self.attrs |= bit;
                    }
                }
            }
        }
        self
    }

    /// This style as the one normalized sequence the styled renderer writes.
    pub fn sgr(&self) -> String {
        let mut out = String::from("\x1b[0");
        for (code, bit) in Self::ATTRS {
            if self.attrs & bit != 0 {
                out.push_str(&format!(";{code}"));
            }
        }
        for (colour, base) in [(self.fg, 30), (self.bg, 40)] {
            match colour {
                Colour::Default => {}
                Colour::Indexed(n) if n < 8 => out.push_str(&format!(";{}", base + u32::from(n))),
                Colour::Indexed(n) if n < 16 => {
                    out.push_str(&format!(";{}", base + 60 + u32::from(n) - 8));
                }
                Colour::Indexed(n) => out.push_str(&format!(";{};5;{n}", base + 8)),
                Colour::Rgb(r, g, b) => out.push_str(&format!(";{};2;{r};{g};{b}", base + 8)),
            }
        }
        out.push('m');
        out
    }
}

impl Colour {
    /// The nearest of the 256 indexed colours (24-bit ones go to the 6×6×6 cube or the grey
    /// ramp, whichever is closer), or `None` for the default.
    pub fn indexed(self) -> Option<u8> {
        match self {
            Colour::Default => None,
            Colour::Indexed(n) => Some(n),
            Colour::Rgb(r, g, b) => Some(nearest_indexed(r, g, b)),
        }
    }
}

/// The levels of the 6×6×6 cube of the 256-colour palette (indices 16–231).
pub const CUBE_LEVELS: [u8; 6] = [0, 95, 135, 175, 215, 255];

fn nearest_indexed(r: u8, g: u8, b: u8) -> u8 {
    let level = |v: u8| {
        (0..6u8)
            .min_by_key(|i| CUBE_LEVELS[usize::from(*i)].abs_diff(v))
            .expect("six levels")
    };
    let (lr, lg, lb) = (level(r), level(g), level(b));
    let cube = (
        16 + 36 * lr + 6 * lg + lb,
        [lr, lg, lb].map(|l| CUBE_LEVELS[usize::from(l)]),
    );
    // The grey ramp (232–255): 8, 18, … 238.
    let mean = ((u16::from(r) + u16::from(g) + u16::from(b)) / 3) as u8;
    let step = (mean.saturating_sub(3) / 10).min(23);
    let grey = (232 + step, [8 + 10 * step; 3]);
    let distance = |rgb: [u8; 3]| -> u32 {
        [(r, rgb[0]), (g, rgb[1]), (b, rgb[2])]
            .iter()
            .map(|(a, b)| u32::from(a.abs_diff(*b)).pow(2))
            .sum()
    };
    if distance(grey.1) < distance(cube.1) {
        grey.0
    } else {
        cube.0
    }
}

/// A styled line's runs: each piece of text with its style. Only the normalized sequences a
/// styled renderer writes are read as styles; the text between them is returned as it is.
pub fn runs(line: &str) -> Vec<(Style, &str)> {
    let mut out = Vec::new();
    let mut style = Style::default();
    let mut rest = line;
    while let Some(start) = rest.find('\x1b') {
        if start > 0 {
            out.push((style, &rest[..start]));
        }
        let sequence = &rest[start + 1..];
        let Some(end) = sequence.find('m').filter(|_| sequence.starts_with('[')) else {
            rest = sequence;
            continue;
        };
        style = Style::default().apply(&sequence.as_bytes()[1..end]);
        rest = &sequence[end + 1..];
    }
    if !rest.is_empty() {
        out.push((style, rest));
    }
    out
}

/// An extended colour after `38`/`48`: `5;N` or `2;R;G;B` (with colons, `2::R:G:B` may carry
/// an empty colour-space id). Returns the colour and how many codes it took.
fn extended(codes: &[u32], colons: bool) -> (Colour, usize) {
    let byte = |i: usize| codes.get(i).map(|n| (*n).min(255) as u8);
    match codes.first() {
        Some(5) => (byte(1).map_or(Colour::Default, Colour::Indexed), 2),
        Some(2) => {
            // `38:2::R:G:B`: a colour-space id before the components.
            let skip = usize::from(colons && codes.len() >= 5);
            match (byte(1 + skip), byte(2 + skip), byte(3 + skip)) {
                (Some(r), Some(g), Some(b)) => (Colour::Rgb(r, g, b), 4 + skip),
                _ => (Colour::Default, codes.len()),
            }
        }
        _ => (Colour::Default, codes.len().min(1)),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
struct Cell {
    ch: char,
    style: Style,
}

const BLANK: Cell = Cell {
    ch: ' ',
    style: Style {
        fg: Colour::Default,
        bg: Colour::Default,
        attrs: 0,
    },
};

pub struct Renderer<W: Write> {
    out: W,
    height: usize,
    screen: VecDeque<Vec<Cell>>,
    row: usize,
    col: usize,
    parse: Parse,
    utf8: Vec<u8>,
    /// The style of the next cell written (`None`: colours are not kept).
    pen: Option<Style>,
}

impl<W: Write> Renderer<W> {
    pub fn new(out: W, height: usize) -> Self {
        Renderer {
            out,
            height: height.max(1),
            screen: VecDeque::from([Vec::new()]),
            row: 0,
            col: 0,
            parse: Parse::Ground,
            utf8: Vec::new(),
            pen: None,
        }
    }

    /// A renderer that keeps colours and attributes (see the module's doc).
    pub fn styled(out: W, height: usize) -> Self {
        Renderer {
            pen: Some(Style::default()),
            ..Renderer::new(out, height)
        }
    }

    pub fn feed(&mut self, bytes: &[u8]) -> io::Result<()> {
        for &byte in bytes {
            self.byte(byte)?;
        }
        Ok(())
    }

    /// Emits the rows still on screen, without trailing blank rows.
    pub fn finish(mut self) -> io::Result<W> {
        while self
            .screen
            .back()
            .is_some_and(|row| row.iter().all(|c| *c == BLANK))
        {
            self.screen.pop_back();
        }
        while let Some(row) = self.screen.pop_front() {
            emit(&mut self.out, &row, self.pen.is_some())?;
        }
        Ok(self.out)
    }

    fn byte(&mut self, byte: u8) -> io::Result<()> {
        match std::mem::replace(&mut self.parse, Parse::Ground) {
            Parse::Ground => self.ground(byte)?,
            Parse::Escape => {
                self.parse = match byte {
                    b'[' => Parse::Csi(Vec::new()),
                    b']' | b'P' | b'_' | b'^' | b'X' => Parse::Text {
                        after_escape: false,
                    },
                    b'(' | b')' | b'*' | b'+' | b'#' | b'%' => Parse::Charset,
                    b'M' => {
                        self.row = self.row.saturating_sub(1);
                        Parse::Ground
                    }
                    _ => Parse::Ground,
                }
            }
            Parse::Csi(mut params) => {
                if (0x40..=0x7e).contains(&byte) {
                    self.csi(&params, byte);
                } else if params.len() < 64 {
                    params.push(byte);
                    self.parse = Parse::Csi(params);
                } else {
                    self.parse = Parse::Csi(params);
                }
            }
            Parse::Text { after_escape } => {
                if byte == 0x07 || (after_escape && byte == b'\\') {
                    self.parse = Parse::Ground;
                } else {
                    self.parse = Parse::Text {
                        after_escape: byte == 0x1b,
                    };
                }
            }
            Parse::Charset => {}
        }
        Ok(())
    }

    fn ground(&mut self, byte: u8) -> io::Result<()> {
        match byte {
            0x1b => {
                self.utf8.clear();
                self.parse = Parse::Escape;
            }
            b'\n' => self.line_feed()?,
            b'\r' => self.col = 0,
            b'\t' => {
                let next = (self.col / 8 + 1) * 8;
                while self.col < next {
                    self.put(' ');
                }
            }
            0x08 => self.col = self.col.saturating_sub(1),
            0x00..=0x1f | 0x7f => {}
            _ => {
                self.utf8.push(byte);
                match std::str::from_utf8(&self.utf8) {
                    Ok(text) => {
                        let ch = text.chars().next().expect("non-empty");
                        self.utf8.clear();
                        // A C1 control (U+0080–U+009F) takes no cell on a terminal, and
                        // printed back it would act (U+009B is a CSI to many terminals).
                        if !ch.is_control() {
                            self.put(ch);
                        }
                    }
                    Err(err) if err.error_len().is_some() => {
                        self.utf8.clear();
                        self.put(char::REPLACEMENT_CHARACTER);
                    }
                    Err(_) => {}
                }
            }
        }
        Ok(())
    }

    /// Writes a cell; past [`MAX_COLUMNS`] the row wraps, as a terminal's would at its width,
    /// so one endless line (or a cursor sent far right) never grows a row without bound.
    fn put(&mut self, ch: char) {
        if self.col >= MAX_COLUMNS {
            // A line feed only fails when emitting a row: that is the writer's error, and the
            // next emit reports it again.
            let _ = self.line_feed();
            self.col = 0;
        }
        let cell = Cell {
            ch,
            style: self.pen.unwrap_or_default(),
        };
        let row = &mut self.screen[self.row];
        if row.len() <= self.col {
            row.resize(self.col, BLANK);
            row.push(cell);
        } else {
            row[self.col] = cell;
        }
        self.col += 1;
    }

    fn line_feed(&mut self) -> io::Result<()> {
        self.row += 1;
        if self.row == self.screen.len() {
            self.screen.push_back(Vec::new());
        }
        if self.screen.len() > self.height {
            let row = self.screen.pop_front().expect("screen is not empty");
            emit(&mut self.out, &row, self.pen.is_some())?;
            self.row -= 1;
        }
        Ok(())
    }

    fn csi(&mut self, params: &[u8], command: u8) {
        // Private sequences (`?25l`, `>4;2m`) only change modes.
        if params
            .first()
            .is_some_and(|b| matches!(b, b'?' | b'>' | b'<' | b'='))
        {
            return;
        }
        let numbers: Vec<usize> = std::str::from_utf8(params)
            .unwrap_or("")
            .split(';')
            .map(|n| n.parse().unwrap_or(0))
            .collect();
        let first = numbers.first().copied().unwrap_or(0);
        let count = first.max(1);
        match command {
            b'A' => self.row = self.row.saturating_sub(count),
            b'B' | b'e' => self.row = (self.row + count).min(self.screen.len() - 1),
            b'C' | b'a' => self.col += count,
            b'D' => self.col = self.col.saturating_sub(count),
            b'E' => {
                self.row = (self.row + count).min(self.screen.len() - 1);
                self.col = 0;
            }
            b'F' => {
                self.row = self.row.saturating_sub(count);
                self.col = 0;
            }
            b'G' | b'`' => self.col = count - 1,
            b'H' | b'f' => {
                let row = count - 1;
                while self.screen.len() <= row.min(self.height - 1) {
                    self.screen.push_back(Vec::new());
                }
                self.row = row.min(self.screen.len() - 1);
                self.col = numbers.get(1).copied().unwrap_or(1).max(1) - 1;
            }
            b'd' => self.row = (count - 1).min(self.screen.len() - 1),
            b'K' => {
                let row = &mut self.screen[self.row];
                match first {
                    0 => row.truncate(self.col),
                    1 => row.iter_mut().take(self.col + 1).for_each(|c| *c = BLANK),
                    _ => row.clear(),
                }
            }
            b'm' => self.pen = self.pen.map(|pen| pen.apply(params)),
            b'J' => match first {
                0 => {
                    self.screen[self.row].truncate(self.col);
                    self.screen.truncate(self.row + 1);
                }
                1 => {
                    for row in self.screen.iter_mut().take(self.row) {
                        row.clear();
                    }
                }
                _ => {
                    for row in self.screen.iter_mut() {
                        row.clear();
                    }
                }
            },
            _ => {}
        }
    }
}

/// Writes a row without its trailing blank cells; styled, with a normalized sequence at each
/// change of style and a reset at the end.
fn emit<W: Write>(out: &mut W, row: &[Cell], styled: bool) -> io::Result<()> {
    let end = row.iter().rposition(|c| *c != BLANK).map_or(0, |i| i + 1);
    let mut line = String::new();
    let mut style = Style::default();
    for cell in &row[..end] {
        if styled && cell.style != style {
            style = cell.style;
            line.push_str(&style.sgr());
        }
        line.push(cell.ch);
    }
    if style != Style::default() {
        line.push_str("\x1b[0m");
    }
    writeln!(out, "{}", line.trim_end())
}

/// Renders a whole raw transcript to text.
pub fn render(raw: &[u8], height: usize) -> String {
    render_with(Renderer::new(Vec::new(), height), raw)
}

/// Renders a whole raw transcript to text with its colours (see [`Renderer::styled`]).
pub fn render_styled(raw: &[u8], height: usize) -> String {
    render_with(Renderer::styled(Vec::new(), height), raw)
}

fn render_with(mut renderer: Renderer<Vec<u8>>, raw: &[u8]) -> String {
    renderer.feed(raw).expect("writing to a Vec cannot fail");
    String::from_utf8(renderer.finish().expect("writing to a Vec cannot fail"))
        .expect("rendered from chars")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_colors_and_crlf() {
        assert_eq!(
            render(b"\x1b[31mred\x1b[0m text\r\nnext\r\n", 50),
            "red text\nnext\n"
        );
    }

    #[test]
    fn styled_keeps_colours_as_one_normalized_sequence_per_change() {
        assert_eq!(
            render_styled(b"\x1b[31mred\x1b[0m text\r\nplain\r\n", 50),
            "\x1b[0;31mred\x1b[0m text\nplain\n"
        );
        assert_eq!(
            render_styled(b"\x1b[1;38;5;208mA\x1b[48;2;1;2;3mB\x1b[22;39;49mC\n", 50),
            "\x1b[0;1;38;5;208mA\x1b[0;1;38;5;208;48;2;1;2;3mB\x1b[0mC\n"
        );
        assert_eq!(
            render_styled(b"\x1b[38:2::10:20:30mX\x1b[92;104mY\x1b[m\n", 50),
            "\x1b[0;38;2;10;20;30mX\x1b[0;92;104mY\x1b[0m\n"
        );
        // A coloured status bar's trailing spaces are part of it; plain ones are trimmed.
        assert_eq!(
            render_styled(b"\x1b[7mbar  \x1b[0m   \n", 50),
            "\x1b[0;7mbar  \x1b[0m\n"
        );
    }

    #[test]
    fn runs_split_a_styled_line_back_into_styles_and_text() {
        let line = render_styled(b"a\x1b[1;31mb<c\x1b[0m d\n", 5);
        let runs = runs(line.trim_end());
        let bold_red = Style {
            fg: Colour::Indexed(1),
            attrs: Style::BOLD,
            ..Style::default()
        };
        assert_eq!(
            runs,
            [
                (Style::default(), "a"),
                (bold_red, "b<c"),
                (Style::default(), " d")
            ]
        );
    }

    #[test]
    fn true_colour_goes_to_the_nearest_of_256() {
        assert_eq!(Colour::Rgb(255, 0, 0).indexed(), Some(196));
        assert_eq!(Colour::Rgb(0, 0, 0).indexed(), Some(16));
        assert_eq!(Colour::Rgb(128, 128, 128).indexed(), Some(244));
        assert_eq!(Colour::Rgb(95, 135, 175).indexed(), Some(67));
        assert_eq!(Colour::Indexed(9).indexed(), Some(9));
        assert_eq!(Colour::Default.indexed(), None);
    }

    #[test]
    fn unstyled_output_never_holds_an_escape() {
        assert_eq!(render(b"\x1b[1;38;5;208mA\x1b[7m \x1b[0m\n", 50), "A\n");
    }

    proptest::proptest! {
        /// Whatever a child prints, the styled output's only escapes are normalized SGR.
        #[test]
        fn styled_output_holds_only_normalized_sgr(raw in proptest::collection::vec(
            proptest::prop_oneof![
                proptest::prelude::Just(0x1bu8),
                proptest::prelude::Just(b'['),
                proptest::prelude::Just(b';'),
                proptest::prelude::Just(b'm'),
                proptest::prelude::any::<u8>(),
            ],
            0..400,
        )) {
            let out = render_styled(&raw, 10);
            for piece in out.split('\x1b').skip(1) {
                let end = piece.find('m').expect("a sequence ends with m");
                proptest::prop_assert!(piece.starts_with("[0"), "{piece:?}");
                proptest::prop_assert!(
                    piece[1..end].chars().all(|c| c.is_ascii_digit() || c == ';'),
                    "{piece:?}"
                );
            }
            proptest::prop_assert!(!out.chars().any(|c| c.is_control() && c != '\n' && c != '\x1b'));
        }
    }

    #[test]
    fn carriage_return_overwrites_a_progress_line() {
        assert_eq!(render(b"10%\r50%\r100%\r\n", 50), "100%\n");
    }

    #[test]
    fn in_place_redraws_show_once() {
        // Ink-style frame: draw two lines, move up two, erase and redraw.
        let raw = b"answer\r\nThinking 1s\r\n> input\r\n\x1b[2A\r\x1b[2KThinking 2s\r\n\x1b[2K> input\r\n";
        assert_eq!(render(raw, 50), "answer\nThinking 2s\n> input\n");
    }

    #[test]
    fn osc_titles_and_private_modes_vanish() {
        assert_eq!(
            render(b"\x1b]0;title\x07\x1b[?2004hok\x1b[?25l\n", 50),
            "ok\n"
        );
        assert_eq!(
            render(b"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\\n", 50),
            "link\n"
        );
    }

    #[test]
    fn c1_controls_take_no_cell() {
        assert_eq!(render("a\u{9b}2Jb\u{85}c\n".as_bytes(), 50), "a2Jbc\n");
    }

    #[test]
    fn long_output_streams_with_a_bounded_screen() {
        let mut raw = Vec::new();
        for i in 0..10_000 {
            raw.extend_from_slice(format!("line {i}\r\n").as_bytes());
        }
        let text = render(&raw, 5);
        assert_eq!(text.lines().count(), 10_000);
        assert_eq!(text.lines().last(), Some("line 9999"));
    }

    #[test]
    fn utf8_split_across_feeds_survives() {
        let bytes = "héllo ✓\n".as_bytes();
        let mut renderer = Renderer::new(Vec::new(), 5);
        for byte in bytes {
            renderer.feed(std::slice::from_ref(byte)).unwrap();
        }
        assert_eq!(
            String::from_utf8(renderer.finish().unwrap()).unwrap(),
            "héllo ✓\n"
        );
    }

    #[test]
    fn an_endless_line_or_a_far_cursor_wraps_instead_of_growing() {
        let mut renderer = Renderer::new(Vec::new(), 5);
        renderer.feed(&vec![b'A'; MAX_COLUMNS * 3 + 10]).unwrap();
        renderer.feed(b"\x1b[999999999Gz\n").unwrap();
        assert!(renderer.screen.iter().all(|row| row.len() <= MAX_COLUMNS));
        let out = String::from_utf8(renderer.finish().unwrap()).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0].len(), MAX_COLUMNS);
        assert_eq!(lines[3], "A".repeat(10));
        assert_eq!(lines[4], "z");
    }
}
