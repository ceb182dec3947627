//! Source text and messages as a diagnostic shows them on a terminal.
//!
//! A diagnostic echoes the source line of each label, and messages quote
//! the user's names and strings. A generated program may have a line of
//! megabytes, and a string may hold terminal escapes or bidirectional
//! overrides that would rewrite what the user sees: lines are cut to a
//! window around their labels, and such characters are replaced by `?`,
//! byte for byte, so that the spans into the text still hold.

use super::lines::LineStarts;
use codespan_reporting::files::{self, SimpleFile};
use std::ops::Range;

/// The most bytes of one source line a diagnostic shows.
pub const MAX_SHOWN_LINE: usize = 240;

/// The most characters of a message, label or note shown.
pub const MAX_SHOWN_TEXT: usize = 2000;

/// How far before its first label a cut line starts.
const LEAD: usize = 60;

const ELLIPSIS: &str = "…";

/// Whether `c` would be acted on by a terminal, or reorder the text around
/// it, or take no room, rather than be shown: C0 and C1 controls but tab
/// and newline, the bidirectional embeddings, overrides and isolates, and
/// the zero-width space, word joiner and byte-order mark (a label on one
/// would have no caret).
pub fn hidden(c: char) -> bool {
    (c.is_control() && c != '\t' && c != '\n')
        || matches!(
            c,
            '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200B}' | '\u{2060}' | '\u{FEFF}'
        )
}

/// `text` with hidden characters as `?`s of the same byte length; a line
/// break's carriage return as a line break the terminal shows: a lone one
/// as `\n` (it ends a line), one before `\n` as a space.
/// `starts_file`: whether `text` is the start of its file.
fn visible(text: &str, starts_file: bool) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(hidden) {
        return text.into();
    }
    let mut chars = text.chars().peekable();
    let mut out = String::with_capacity(text.len());
    while let Some(c) = chars.next() {
        match c {
            '\r' if chars.peek() == Some(&'\n') => out.push(' '),
            '\r' => out.push('\n'),
            // A byte-order mark that starts the file is its encoding, not
            // a character of its first line.
            '\u{FEFF}' if starts_file && out.is_empty() => out.push(c),
            c if hidden(c) => out.push_str(&"?".repeat(c.len_utf8())),
            c => out.push(c),
        }
    }
    out.into()
}

/// A message, label or note as shown: hidden characters escaped, clipped
/// to `MAX_SHOWN_TEXT` characters.
pub fn text(message: &str) -> String {
    let shown: String = message
        .chars()
        .take(MAX_SHOWN_TEXT)
        .map(|c| {
            if hidden(c) {
                c.escape_unicode().to_string()
            } else {
                c.to_string()
            }
        })
        .collect();
    if message.chars().nth(MAX_SHOWN_TEXT).is_some() {
        format!("{shown}{ELLIPSIS}")
    } else {
        shown
    }
}

/// One line of a source file that is shown cut.
struct Cut {
    /// The line in the original text, without its newline.
    line: Range<usize>,
    /// The part of it shown.
    keep: Range<usize>,
    /// Where the line starts in the shown text.
    shown_start: usize,
    /// The bytes before `keep` in the shown line (an ellipsis, or none).
    lead: usize,
}

/// A source file as a diagnostic shows it, and how offsets into the
/// original map into it.
pub struct Source {
    /// Where the shown lines start in the original: only the lines from
    /// the first label's to the last label's are shown (codespan shows no
    /// others), so that a diagnostic costs what it shows, not its file
    /// (a file of a hundred errors was copied a hundred times).
    start: usize,
    pub text: String,
    /// The cut lines, in order.
    cuts: Vec<Cut>,
    /// Shown length less original length of all the cut lines before each
    /// cut (cumulative), parallel to `cuts`.
    shift_before: Vec<isize>,
}

impl Source {
    /// The lines of `original` (whose lines start at `line_starts`) that
    /// `labels` (byte ranges) are on, and those between, with their hidden
    /// characters replaced and every line longer than `MAX_SHOWN_LINE`
    /// that holds a label's start cut to a window after the first of them.
    pub fn new(original: &str, line_starts: &LineStarts, labels: &[Range<usize>]) -> Source {
        let clamp = |o: usize| floor_char(original, o.min(original.len()));
        let first = clamp(labels.iter().map(|l| l.start).min().unwrap_or(0));
        let last = clamp(labels.iter().map(|l| l.end.max(l.start)).max().unwrap_or(0));
        // Whole lines, with their breaks: a `\r\n` is one.
        let start = line_starts.line_of(first).1;
        let end = line_starts
            .start(line_starts.line_of(last).0 + 1)
            .unwrap_or(original.len());
        let mut anchors: Vec<usize> = labels.iter().map(|l| clamp(l.start) - start).collect();
        anchors.sort_unstable();
        let original = &original[start..end];
        let mut cuts = Vec::new();
        for &a in &anchors {
            let a = a.min(original.len());
            if cuts
                .last()
                .is_some_and(|c: &Cut| c.line.contains(&a) || c.line.end == a)
            {
                continue;
            }
            let start = original[..a].rfind(['\n', '\r']).map_or(0, |i| i + 1);
            let end = original[a..]
                .find(['\n', '\r'])
                .map_or(original.len(), |i| a + i);
            if end - start <= MAX_SHOWN_LINE {
                continue;
            }
            let from = floor_char(original, a.saturating_sub(LEAD).max(start));
            let to = floor_char(original, (from + MAX_SHOWN_LINE).min(end));
            cuts.push(Cut {
                line: start..end,
                keep: from..to,
                shown_start: 0,
                lead: if from > start { ELLIPSIS.len() } else { 0 },
            });
        }
        let mut text = String::with_capacity(original.len().min(1 << 20));
        let mut shift_before = Vec::with_capacity(cuts.len());
        let mut shift = 0isize;
        let mut at = 0;
        for cut in &mut cuts {
            text.push_str(&visible(&original[at..cut.line.start], start + at == 0));
            cut.shown_start = text.len();
            shift_before.push(shift);
            if cut.lead > 0 {
                text.push_str(ELLIPSIS);
            }
            text.push_str(&visible(
                &original[cut.keep.clone()],
                start + cut.keep.start == 0,
            ));
            if cut.keep.end < cut.line.end {
                text.push_str(ELLIPSIS);
            }
            shift += (text.len() - cut.shown_start) as isize - cut.line.len() as isize;
            at = cut.line.end;
        }
        text.push_str(&visible(&original[at..], start + at == 0));
        Source {
            start,
            text,
            cuts,
            shift_before,
        }
    }

    /// Where original offset `o` (on a shown line) is in the shown text.
    /// Offsets in the cut part of a line go to the nearest end of what is
    /// shown.
    pub fn offset(&self, o: usize) -> usize {
        let o = o.saturating_sub(self.start);
        let i = self.cuts.partition_point(|c| c.line.start <= o);
        let Some(cut) = i.checked_sub(1).map(|i| &self.cuts[i]) else {
            return o;
        };
        if o > cut.line.end {
            // After this cut line: shifted by every cut up to and including it.
            let after =
                self.shift_before[i - 1] + ((self.cut_len(cut)) as isize - cut.line.len() as isize);
            return (o as isize + after) as usize;
        }
        let inside = if o < cut.keep.start {
            0
        } else if o <= cut.keep.end {
            cut.lead + (o - cut.keep.start)
        } else {
            self.cut_len(cut)
        };
        cut.shown_start + inside
    }

    /// The original offset of shown offset `s` (in a cut line: of what is
    /// shown there, or the nearest end of it).
    fn original(&self, s: usize) -> usize {
        self.start + self.in_lines(s)
    }

    /// The offset in the shown lines of the original of shown offset `s`.
    fn in_lines(&self, s: usize) -> usize {
        let i = self.cuts.partition_point(|c| c.shown_start <= s);
        let Some(cut) = i.checked_sub(1).map(|i| &self.cuts[i]) else {
            return s;
        };
        let len = self.cut_len(cut);
        if s > cut.shown_start + len {
            let after = self.shift_before[i - 1] + (len as isize - cut.line.len() as isize);
            return (s as isize - after) as usize;
        }
        let inside = s - cut.shown_start;
        (cut.keep.start + inside.saturating_sub(cut.lead)).min(cut.keep.end)
    }

    /// The shown length of a cut line.
    fn cut_len(&self, cut: &Cut) -> usize {
        let tail = if cut.keep.end < cut.line.end {
            ELLIPSIS.len()
        } else {
            0
        };
        cut.lead + cut.keep.len() + tail
    }
}

/// The files of one diagnostic as shown, for codespan-reporting: the text
/// is the shown text, but a location (the `file:line:col` it prints) is
/// that of the original.
#[derive(Default)]
pub struct ShownFiles<'a> {
    files: Vec<ShownFile<'a>>,
}

struct ShownFile<'a> {
    shown: SimpleFile<String, String>,
    original: &'a str,
    /// Where the original's lines start (the source map's table).
    lines: std::borrow::Cow<'a, LineStarts>,
    source: Source,
}

impl<'a> ShownFiles<'a> {
    /// Adds a file (ids count from 0), shown from the line of the first
    /// of `labels` (byte ranges) to the line of the last, long lines cut
    /// (`Source`); `lines` is where the original's lines start, where
    /// known (made here if not).
    pub fn add(
        &mut self,
        name: &str,
        original: &'a str,
        lines: Option<&'a LineStarts>,
        labels: &[Range<usize>],
    ) {
        let lines = match lines {
            Some(lines) => std::borrow::Cow::Borrowed(lines),
            None => std::borrow::Cow::Owned(LineStarts::new(original)),
        };
        let source = Source::new(original, &lines, labels);
        self.files.push(ShownFile {
            shown: SimpleFile::new(text(name), source.text.clone()),
            original,
            lines,
            source,
        });
    }

    /// Original offset `o` of file `id` in the shown text.
    pub fn offset(&self, id: usize, o: usize) -> usize {
        self.files.get(id).map_or(0, |f| f.source.offset(o))
    }

    fn file(&self, id: usize) -> Result<&ShownFile<'a>, files::Error> {
        self.files.get(id).ok_or(files::Error::FileMissing)
    }
}

impl<'a> files::Files<'a> for ShownFiles<'_> {
    type FileId = usize;
    type Name = String;
    type Source = &'a str;

    fn name(&'a self, id: usize) -> Result<String, files::Error> {
        Ok(self.file(id)?.shown.name().clone())
    }

    fn source(&'a self, id: usize) -> Result<&'a str, files::Error> {
        Ok(self.file(id)?.shown.source().as_str())
    }

    fn line_index(&'a self, id: usize, byte_index: usize) -> Result<usize, files::Error> {
        self.file(id)?.shown.line_index((), byte_index)
    }

    fn line_range(&'a self, id: usize, line_index: usize) -> Result<Range<usize>, files::Error> {
        self.file(id)?.shown.line_range((), line_index)
    }

    /// The gutter's number of a shown line: the original's.
    fn line_number(&'a self, id: usize, line_index: usize) -> Result<usize, files::Error> {
        let f = self.file(id)?;
        Ok(f.lines.line_of(f.source.start).0 + line_index + 1)
    }

    fn location(&'a self, id: usize, byte_index: usize) -> Result<files::Location, files::Error> {
        let f = self.file(id)?;
        let o = f.source.original(byte_index).min(f.original.len());
        let (line, column) = super::lines::line_and_column(f.original, &f.lines, o);
        Ok(files::Location {
            line_number: line + 1,
            column_number: column + 1,
        })
    }
}

fn floor_char(text: &str, mut i: usize) -> usize {
    while i > 0 && !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(original: &str, labels: &[Range<usize>]) -> Source {
        Source::new(original, &LineStarts::new(original), labels)
    }

    fn shown_one(original: &str, label: Range<usize>) -> Source {
        shown(original, std::slice::from_ref(&label))
    }

    #[test]
    fn short_lines_are_shown_as_they_are() {
        let s = shown("let x = 1\nlet y = 2\n", &[4..5, 14..15]);
        assert_eq!(s.text, "let x = 1\nlet y = 2\n");
        assert_eq!(s.offset(14), 14);
    }

    #[test]
    fn hidden_characters_become_question_marks_of_the_same_length() {
        let original = "let s = \"\u{1b}[2J\u{202E}\"\nx";
        let s = shown_one(original, 0..original.len());
        assert_eq!(s.text.len(), original.len());
        assert_eq!(s.text, "let s = \"?[2J???\"\nx");
        assert_eq!(text("a\u{1b}b"), "a\\u{1b}b");
        // Characters that take no room: shown, so a label on one has a caret.
        let original = "let x = 1 +\u{FEFF} 2\u{200B}";
        let s = shown_one(original, 0..0);
        assert_eq!(s.text, "let x = 1 +??? 2???");
        let marked = "\u{FEFF}let x = 1 +\u{FEFF}";
        assert_eq!(shown_one(marked, 0..0).text, "\u{FEFF}let x = 1 +???");
    }

    #[test]
    fn a_cut_first_line_keeps_the_files_byte_order_mark() {
        let original = format!("\u{FEFF}let x = {}", "1 + ".repeat(1000));
        let s = shown_one(&original, 3..6);
        assert!(s.text.starts_with("\u{FEFF}let x"), "{}", &s.text[..20]);
        assert_eq!(&s.text[s.offset(3)..s.offset(6)], "let");
    }

    #[test]
    fn a_long_line_is_cut_around_its_label_and_offsets_follow() {
        let long = format!(
            "let x = {}bad{}",
            "1 + ".repeat(10_000),
            " + 1".repeat(10_000)
        );
        let original = format!("a\n{long}\nafter");
        let bad = original.find("bad").unwrap();
        let after = original.find("after").unwrap();
        let s = shown(&original, &[0..1, bad..bad + 3, after..after]);
        let shown_line = s.text.lines().nth(1).unwrap();
        assert!(shown_line.len() <= MAX_SHOWN_LINE + 2 * ELLIPSIS.len());
        assert!(shown_line.starts_with(ELLIPSIS) && shown_line.ends_with(ELLIPSIS));
        assert_eq!(&s.text[s.offset(bad)..s.offset(bad + 3)], "bad");
        assert_eq!(&s.text[s.offset(after)..], "after");
        assert_eq!(s.offset(0), 0);
        // Offsets in the cut parts go to the ellipses.
        assert_eq!(s.offset(5), s.text.find(ELLIPSIS).unwrap());
        for o in [0, 1, bad, bad + 2, after, after + 3] {
            assert_eq!(s.original(s.offset(o)), o);
        }
    }

    #[test]
    fn only_the_lines_from_the_first_label_to_the_last_are_shown() {
        let original = "\u{FEFF}one\r\ntwo \u{FEFF}\nthree\rfour\nfive";
        let two = original.find("two").unwrap();
        let four = original.find("four").unwrap();
        let s = shown(original, &[two..two + 3, four..four + 2]);
        // A byte-order mark not at the file's start is a hidden character.
        assert_eq!(s.text, "two ???\nthree\nfour\n");
        assert_eq!(s.offset(two), 0);
        assert_eq!(&s.text[s.offset(four)..], "four\n");
        for o in [two, two + 2, four, four + 4] {
            assert_eq!(s.original(s.offset(o)), o);
        }
        // A `\r\n` is one line break, where a label starts or ends on
        // either half of it.
        let crlf = "let s = \"abc\\\r\nx = 1\r\n";
        let (cr, lf) = (crlf.find('\r').unwrap(), crlf.find('\n').unwrap());
        assert_eq!(shown_one(crlf, 8..lf).text, "let s = \"abc\\ \n");
        assert_eq!(shown_one(crlf, lf..lf).text, "let s = \"abc\\ \n");
        assert_eq!(shown_one(crlf, cr..cr).text, "let s = \"abc\\ \n");
        let last = original.len();
        assert_eq!(shown_one(original, last..last).text, "five");
    }
}
