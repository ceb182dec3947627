//! Byte offsets to LSP positions and back. LSP counts a line's characters
//! in UTF-16 code units (the protocol's default encoding); the compiler's
//! spans are byte offsets.

use lsp_types::{Position, Range};

/// Where each line of a text starts.
pub struct Lines<'a> {
    text: &'a str,
    starts: Vec<usize>,
}

impl<'a> Lines<'a> {
    pub fn new(text: &'a str) -> Lines<'a> {
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Lines { text, starts }
    }

    /// The position of byte `offset` (clamped to the text).
    pub fn position(&self, offset: usize) -> Position {
        let offset = offset.min(self.text.len());
        let line = self.starts.partition_point(|s| *s <= offset) - 1;
        position_on_line(self.text, (line, self.starts[line]), offset)
    }

    /// The byte offset of `position` (clamped to its line and the text).
    pub fn offset(&self, position: Position) -> usize {
        let Some(start) = self.starts.get(position.line as usize).copied() else {
            return self.text.len();
        };
        let end = self
            .starts
            .get(position.line as usize + 1)
            .map_or(self.text.len(), |next| next - 1);
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
}
