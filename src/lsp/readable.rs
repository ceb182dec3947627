//! The analysis requests read, and how its places map to the text the
//! editor has now. While the text does not parse, requests read the last
//! analysis that did, of an older text: a place is carried from one text
//! to the other across the edit between them. The bytes before the first
//! difference and after the last stay where they were, shifted by the
//! edit's change of length; a place within the edit has no counterpart.

use super::position::Lines;
use crate::diag::Span;
use crate::driver::Analysis;
use lsp_types::{Position, Range};

pub(crate) struct Readable<'d> {
    pub(crate) analysis: &'d Analysis,
    /// The text the editor has now, and its lines: made once for all the
    /// places a request reads (an outline of 60,000 names took a minute
    /// when each made them again).
    now: &'d str,
    lines: Lines<'d>,
    /// The length of the text analysed.
    then_len: usize,
    /// Bytes the two texts share at their start and at their end.
    same_start: usize,
    same_end: usize,
}

impl<'d> Readable<'d> {
    /// `analysis` of the text `then`, read for the text `now`.
    pub(crate) fn new(analysis: &'d Analysis, then: &str, now: &'d str) -> Readable<'d> {
        let shared = |a: &mut dyn Iterator<Item = (u8, u8)>| a.take_while(|(x, y)| x == y).count();
        let mut same_start = shared(&mut then.bytes().zip(now.bytes()));
        while !now.is_char_boundary(same_start) {
            same_start -= 1;
        }
        let most = then.len().min(now.len()) - same_start;
        let mut same_end = shared(&mut then.bytes().rev().zip(now.bytes().rev())).min(most);
        while !now.is_char_boundary(now.len() - same_end) {
            same_end -= 1;
        }
        Readable {
            analysis,
            now,
            lines: Lines::new(now),
            then_len: then.len(),
            same_start,
            same_end,
        }
    }

    /// The offset in the analysed text of `position` in the text now;
    /// `None` within the edit.
    pub(crate) fn offset(&self, position: Position) -> Option<u32> {
        let now = self.lines.offset(position);
        let then = if now < self.same_start {
            now
        } else if now >= self.now.len() - self.same_end {
            now + self.then_len - self.now.len()
        } else {
            return None;
        };
        Some(then as u32)
    }

    /// As `offset`, but a place within the edit is taken to be at its
    /// start: what was in scope there is what is being typed against.
    pub(crate) fn offset_near(&self, position: Position) -> u32 {
        self.offset(position).unwrap_or(self.same_start as u32)
    }

    /// The range in the text now of `span`, a place of the analysis: in
    /// the document, carried across the edit (`None` within it); in an
    /// imported file, as it is.
    pub(crate) fn range(&self, span: Span) -> Option<Range> {
        if span.file != 0 {
            return Some(super::range_of(self.analysis, span));
        }
        // A span's end is exclusive: one that ends where the edit starts
        // stays before it (a name just typed after, `x.`, is not its).
        let carried = |then: u32, end: bool| {
            let then = then as usize;
            if then < self.same_start || (end && then == self.same_start) {
                Some(then)
            } else if then >= self.then_len - self.same_end {
                Some(then + self.now.len() - self.then_len)
            } else {
                None
            }
        };
        let (start, end) = (carried(span.start, false)?, carried(span.end, true)?);
        Some(self.lines.range(start, end))
    }
}

/// For a text that does not parse and has no older version that did (a
/// file opened half typed, `c.` on a line of its own): the text with the
/// line of its first error blanked, or the line before where the error
/// opens its line (the line left unfinished), and the analysis `analyse`
/// makes of it, where that parses, for requests to read (what is in scope
/// there, a receiver's type). Blanked with spaces, the text keeps its
/// length: the rest of it is where it was.
pub(crate) fn repaired(
    text: &str,
    analysis: &Analysis,
    analyse: impl Fn(String) -> Analysis,
) -> Option<(String, Analysis)> {
    let first = analysis
        .diagnostics
        .iter()
        .find(|d| d.severity == crate::diag::Severity::Error)?;
    let span = first.primary.as_ref()?.span;
    // The program's own file is the first the analysis read.
    if span.file != 0 {
        return None;
    }
    let at = span.start as usize;
    let line_of = |at: usize| {
        let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
        let end = text[at..].find('\n').map_or(text.len(), |i| at + i);
        start..end
    };
    if !text.is_char_boundary(at) {
        return None;
    }
    let line = line_of(at);
    let mut lines = vec![line.clone()];
    if line.start > 0 && text[line.start..at].trim().is_empty() {
        lines.insert(0, line_of(line.start - 1));
    }
    lines.into_iter().find_map(|line| {
        let mut blanked = text.to_string();
        blanked.replace_range(line.clone(), &" ".repeat(line.len()));
        let again = analyse(blanked.clone());
        again.program.as_ref()?;
        Some((blanked, again))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Places before and after an edit are carried across it, places in
    /// it are not, in both directions.
    #[test]
    fn places_are_carried_across_the_edit() {
        let then = "let a = 1\nlet b = a\n";
        let analysis = crate::driver::analyze(
            std::path::Path::new("a.mscl"),
            then.to_string(),
            &[],
            crate::driver::Limits::command(),
        );
        let now = "let a = 1\nlet é = \nlet b = a\n";
        let read = Readable::new(&analysis, then, now);
        // `a` on the first line, and `b` on the line after the edit.
        assert_eq!(read.offset(Position::new(0, 4)), Some(4));
        assert_eq!(read.offset(Position::new(2, 4)), Some(14));
        assert_eq!(read.offset(Position::new(1, 5)), None);
        assert_eq!(read.offset_near(Position::new(1, 5)), 14);
        let b = Span::new(0, 14, 15);
        assert_eq!(
            read.range(b),
            Some(Range::new(Position::new(2, 4), Position::new(2, 5)))
        );
        assert_eq!(read.range(Span::new(0, 4, 5)).unwrap().start.line, 0);
        // Unchanged: everything is where it was.
        let same = Readable::new(&analysis, then, then);
        assert_eq!(same.offset(Position::new(1, 8)), Some(18));
        assert_eq!(
            same.range(Span::new(0, 18, 19)),
            Some(Range::new(Position::new(1, 8), Position::new(1, 9)))
        );
    }
}
