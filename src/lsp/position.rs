//! Byte offsets to LSP positions and back. LSP counts a line's characters
//! in UTF-16 code units (the protocol's default encoding); the compiler's
//! spans are byte offsets.

use crate::diag::lines::LineStarts;
use lsp_types::{Position, Range};

/// Where each line of a text starts (`\n`, `\r\n` and a lone `\r` end
/// one, as LSP counts them).
pub struct Lines<'a> {
    text: &'a str,
    starts: LineStarts,
}

impl<'a> Lines<'a> {
    pub fn new(text: &'a str) -> Lines<'a> {
        Lines {
            text,
            starts: LineStarts::new(text),
        }
    }

    /// The position of byte `offset` (clamped to the text).
    pub fn position(&self, offset: usize) -> Position {
        let offset = offset.min(self.text.len());
        position_on_line(self.text, self.starts.line_of(offset), offset)
    }

    /// The byte offset of `position` (clamped to its line and the text).
    pub fn offset(&self, position: Position) -> usize {
        let line = position.line as usize;
        let Some(start) = self.starts.start(line) else {
            return self.text.len();
        };
        let end = self.starts.end(self.text, line);
        let mut units = 0;
        for (i, c) in self.text[start..end].char_indices() {
            if units >= position.character as usize {
                return start + i;
            }
            units += c.len_utf16();
        }
        end
    }

    pub fn range(&self, start: usize, end: usize) -> Range {
        Range::new(self.position(start), self.position(end))
    }
}

/// The position of byte `offset` of `text`, on `line`, which starts at
/// byte `start`: the line's UTF-16 units before it are its character.
pub fn position_on_line(text: &str, (line, start): (usize, usize), offset: usize) -> Position {
    let before = text.get(start..offset).unwrap_or("");
    Position::new(line as u32, before.encode_utf16().count() as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_count_utf16_units() {
        let text = "ab\n😀x\n";
        let lines = Lines::new(text);
        assert_eq!(lines.position(0), Position::new(0, 0));
        assert_eq!(lines.position(3), Position::new(1, 0));
        // The emoji is 4 bytes and 2 UTF-16 units.
        assert_eq!(lines.position(7), Position::new(1, 2));
        assert_eq!(lines.offset(Position::new(1, 2)), 7);
        assert_eq!(lines.offset(Position::new(1, 99)), 8);
        assert_eq!(lines.offset(Position::new(9, 0)), text.len());
    }

    /// A lone `\r` ends a line, as `\n` and `\r\n` do; a line's
    /// characters stop before its break.
    #[test]
    fn every_line_break_counts() {
        let text = "ab\rcd\r\nef";
        let lines = Lines::new(text);
        assert_eq!(lines.position(3), Position::new(1, 0));
        assert_eq!(lines.position(7), Position::new(2, 0));
        assert_eq!(lines.offset(Position::new(1, 99)), 5);
        assert_eq!(lines.range(0, text.len()).end, Position::new(2, 2));
    }
}
