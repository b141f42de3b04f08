//! The last lines of a rendered transcript, kept while it streams past: memory stays bounded
//! by the number of lines asked for, whatever the transcript's size.

use std::collections::VecDeque;
use std::io::Write;

/// The longest line kept (its first bytes); the rest of a longer one is dropped.
const PARTIAL_LIMIT: usize = 64 * 1024;

/// A `Write` sink that keeps the last `limit` lines. Blank lines at the very end (the rest of
/// an emptied screen) are dropped; blank lines between text are kept.
pub struct Tail {
    limit: usize,
    lines: VecDeque<String>,
    /// Blank lines seen since the last line with text.
    pending_blank: usize,
    partial: Vec<u8>,
}

impl Tail {
    pub fn new(limit: usize) -> Tail {
        Tail {
            limit,
            lines: VecDeque::new(),
            pending_blank: 0,
            partial: Vec::new(),
        }
    }

    fn push_line(&mut self, bytes: &[u8]) {
        let line = String::from_utf8_lossy(bytes);
        let line = line.trim_end();
        if line.is_empty() {
            self.pending_blank += 1;
            return;
        }
        let blanks = std::mem::take(&mut self.pending_blank).min(self.limit);
        for _ in 0..blanks {
            self.push(String::new());
        }
        self.push(line.to_string());
    }

    fn push(&mut self, line: String) {
        if self.limit == 0 {
            return;
        }
        if self.lines.len() == self.limit {
            self.lines.pop_front();
        }
        self.lines.push_back(line);
    }

    /// The kept lines, oldest first.
    pub fn finish(mut self) -> Vec<String> {
        let partial = std::mem::take(&mut self.partial);
        self.push_line(&partial);
        self.lines.into()
    }
}

impl Write for Tail {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut rest = buf;
        while let Some(end) = rest.iter().position(|&b| b == b'\n') {
            if self.partial.is_empty() {
                self.push_line(&rest[..end]);
            } else {
                let mut line = std::mem::take(&mut self.partial);
                line.extend_from_slice(&rest[..end]);
                self.push_line(&line);
            }
            rest = &rest[end + 1..];
        }
        // A line without an end (a child printing megabytes without a newline) is kept to
        // its first `PARTIAL_LIMIT` bytes: memory stays bounded.
        let room = PARTIAL_LIMIT.saturating_sub(self.partial.len());
        self.partial
            .extend_from_slice(&rest[..rest.len().min(room)]);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tail(limit: usize, chunks: &[&str]) -> Vec<String> {
        let mut tail = Tail::new(limit);
        for chunk in chunks {
            tail.write_all(chunk.as_bytes()).unwrap();
        }
        tail.finish()
    }

    #[test]
    fn keeps_the_last_lines_across_chunk_boundaries() {
        assert_eq!(
            tail(2, &["one\ntw", "o\nthr", "ee\nfour"]),
            ["three", "four"]
        );
        assert_eq!(tail(5, &["a\nb\n"]), ["a", "b"]);
        assert!(tail(0, &["a\nb\n"]).is_empty());
    }

    #[test]
    fn drops_trailing_blank_lines_but_keeps_inner_ones() {
        assert_eq!(tail(3, &["a\n\nb   \n\n\n\n"]), ["a", "", "b"]);
        assert_eq!(tail(2, &["a\n\n\n\nb\n"]), ["", "b"]);
    }

    #[test]
    fn splits_multibyte_text_only_at_line_ends() {
        let text = "é€😀\n";
        let mut tail = Tail::new(1);
        for byte in text.as_bytes() {
            tail.write_all(&[*byte]).unwrap();
        }
        assert_eq!(tail.finish(), ["é€😀"]);
    }
}
