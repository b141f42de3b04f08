//! The readable view of a raw pane transcript. The raw file keeps every byte (escapes,
//! `\r\n`, redraw frames); this renders what a person would have seen scroll by.
//!
//! It is a tiny terminal: text is written at a cursor on a screen of `height` rows, cursor
//! movement and erase sequences act on that screen, and a row is emitted once it scrolls off
//! the top. So a TUI that redraws its status lines in place shows them once, not once per
//! frame, and memory stays bounded by the screen whatever the transcript's size.

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

pub struct Renderer<W: Write> {
    out: W,
    height: usize,
    screen: VecDeque<Vec<char>>,
    row: usize,
    col: usize,
    parse: Parse,
    utf8: Vec<u8>,
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
            .is_some_and(|row| row.iter().all(|c| *c == ' '))
        {
            self.screen.pop_back();
        }
        while let Some(row) = self.screen.pop_front() {
            emit(&mut self.out, &row)?;
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
        let row = &mut self.screen[self.row];
        if row.len() <= self.col {
            row.resize(self.col, ' ');
            row.push(ch);
        } else {
            row[self.col] = ch;
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
            emit(&mut self.out, &row)?;
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
                    1 => row.iter_mut().take(self.col + 1).for_each(|c| *c = ' '),
                    _ => row.clear(),
                }
            }
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

fn emit<W: Write>(out: &mut W, row: &[char]) -> io::Result<()> {
    let line: String = row.iter().collect();
    writeln!(out, "{}", line.trim_end())
}

/// Renders a whole raw transcript to text.
pub fn render(raw: &[u8], height: usize) -> String {
    let mut renderer = Renderer::new(Vec::new(), height);
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
