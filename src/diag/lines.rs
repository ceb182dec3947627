//! Where the lines of a text start. A line ends at `\n`, at `\r\n` or at
//! a lone `\r`, as the lexer ends a comment and as LSP counts lines: one
//! table for diagnostics' line:column, the lines they show and the
//! editor's positions, so that none of them takes a file of lone carriage
//! returns (an old Mac's) for one long line.

/// The byte where each line of a text starts, the first at 0.
#[derive(Debug, Clone)]
pub struct LineStarts(Vec<usize>);

impl LineStarts {
    pub fn new(text: &str) -> LineStarts {
        let bytes = text.as_bytes();
        let breaks = bytes.iter().enumerate().filter_map(|(i, &b)| match b {
            b'\n' => Some(i + 1),
            b'\r' if bytes.get(i + 1) != Some(&b'\n') => Some(i + 1),
            _ => None,
        });
        LineStarts(std::iter::once(0).chain(breaks).collect())
    }

    /// Where line `line` (from 0) starts, if there is one.
    pub fn start(&self, line: usize) -> Option<usize> {
        self.0.get(line).copied()
    }

    /// The line (from 0) of byte `offset`, and the byte where it starts.
    pub fn line_of(&self, offset: usize) -> (usize, usize) {
        let line = self.0.partition_point(|s| *s <= offset).saturating_sub(1);
        (line, self.0[line])
    }

    /// Where line `line` of `text` ends: before its line break.
    pub fn end(&self, text: &str, line: usize) -> usize {
        let start = self.0.get(line).copied().unwrap_or(text.len());
        let next = self.0.get(line + 1).copied().unwrap_or(text.len());
        let content = &text[start..next];
        let content = content.strip_suffix('\n').unwrap_or(content);
        let content = content.strip_suffix('\r').unwrap_or(content);
        start + content.len()
    }
}

/// The line (from 0) of byte `offset` of `text`, whose lines `lines` are,
/// and its column: the characters before it on its line (from 0), a
/// byte-order mark that starts the text not counted (it is the file's
/// encoding, which editors do not show).
pub fn line_and_column(text: &str, lines: &LineStarts, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let (line, mut start) = lines.line_of(offset);
    if start == 0 && text.starts_with('\u{FEFF}') {
        start = '\u{FEFF}'.len_utf8().min(offset);
    }
    (line, text[start..offset].chars().count())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `\n`, `\r\n` and a lone `\r` each end a line; the line's end is
    /// before its break.
    #[test]
    fn every_kind_of_line_break_ends_a_line() {
        let text = "ab\ncd\r\nef\rgh";
        let lines = LineStarts::new(text);
        assert_eq!(lines.start(4), None, "four lines");
        assert_eq!(
            (0..4).map(|l| lines.start(l).unwrap()).collect::<Vec<_>>(),
            [0, 3, 7, 10]
        );
        assert_eq!(
            (0..4).map(|l| lines.end(text, l)).collect::<Vec<_>>(),
            [2, 5, 9, 12]
        );
        assert_eq!(lines.line_of(8), (2, 7));
        assert_eq!(line_and_column(text, &lines, 11), (3, 1));
        assert_eq!(line_and_column("é\rx", &LineStarts::new("é\rx"), 3), (1, 0));
        // A byte-order mark that starts the text takes no column.
        let marked = "\u{FEFF}let x";
        let lines = LineStarts::new(marked);
        assert_eq!(line_and_column(marked, &lines, 3), (0, 0));
        assert_eq!(line_and_column(marked, &lines, 7), (0, 4));
        assert_eq!(line_and_column(marked, &lines, 0), (0, 0));
    }
}
