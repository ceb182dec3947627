//! One diagnostic type for every user-facing stage, rendered with
//! codespan-reporting only at the edge (the driver).

use codespan_reporting::diagnostic::{Diagnostic as CsDiagnostic, Label as CsLabel};
use codespan_reporting::term::{self, Config};

mod codes;
pub mod lines;
pub mod shown;
pub mod spelling;

/// Text taken from the input (a plan's strings, a `-D` value, an assertion's
/// message), fit to stand inside a message: control characters escaped
/// (`\n`, `\u{1b}`), so that it cannot start a line of its own (a forged
/// `error[...]`) or drive the terminal, and at most 200 characters.
pub fn escaped(text: &str) -> String {
    const MOST: usize = 200;
    match text.char_indices().nth(MOST) {
        Some((cut, _)) => escaped_whole(&text[..cut]) + "...",
        None => escaped_whole(text),
    }
}

/// `escaped`, however long: a path msclc says it wrote, which its user
/// may copy.
pub fn escaped_whole(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() {
            out.extend(c.escape_debug());
        } else if shown::hidden(c) {
            // (A bidirectional override, say: it would reorder the line.)
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

/// Items (ranks, semaphores, a param's values) for a message: all of them
/// up to 16, else the first 8 and how many `things` there are in all.
pub fn short_list<T: std::fmt::Display>(items: &[T], things: &str) -> String {
    let whole = items.len() <= 16;
    let shown = if whole { items } else { &items[..8] };
    let text: Vec<String> = shown.iter().map(|item| item.to_string()).collect();
    match whole {
        true => format!("[{}]", text.join(", ")),
        false => format!("[{}, ... ({} {things})]", text.join(", "), items.len()),
    }
}

pub use codes::Code;

/// A byte range in one source file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Span {
    pub file: u32,
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn new(file: u32, start: usize, end: usize) -> Span {
        Span {
            file,
            start: start as u32,
            end: end as u32,
        }
    }

    /// The span from the start of `self` to the end of `other` (same file).
    pub fn to(self, other: Span) -> Span {
        Span {
            file: self.file,
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
}

/// A labelled place in the source.
#[derive(Debug, Clone, PartialEq)]
pub struct Label {
    pub span: Span,
    pub message: String,
}

/// A message for the user about their program. Its contents live behind
/// a box: every stage returns `Result<T, Diagnostic>` on its hot paths, and
/// a one-word error keeps those results as small as their values.
#[derive(Debug, Clone, PartialEq)]
pub struct Diagnostic(Box<Details>);

/// What a diagnostic says (read through `Diagnostic`'s `Deref`).
#[derive(Debug, Clone, PartialEq)]
pub struct Details {
    pub severity: Severity,
    /// The kind of problem (docs/errors.md explains each).
    pub code: Code,
    pub message: String,
    /// Where in the program, when the problem has a place there: problems
    /// with a JSON plan, a command line or the machine have none.
    pub primary: Option<Label>,
    pub secondary: Vec<Label>,
    pub notes: Vec<String>,
}

impl Diagnostic {
    pub fn error(
        code: Code,
        span: Span,
        message: impl Into<String>,
        label: impl Into<String>,
    ) -> Diagnostic {
        Diagnostic(Box::new(Details {
            severity: Severity::Error,
            code,
            message: message.into(),
            primary: Some(Label {
                span,
                message: label.into(),
            }),
            secondary: Vec::new(),
            notes: Vec::new(),
        }))
    }

    /// An error with no place in a program: a file msclc cannot read, a
    /// command line that asks the impossible, a JSON plan, the machine.
    pub fn plain(code: Code, message: impl Into<String>) -> Diagnostic {
        Diagnostic(Box::new(Details {
            severity: Severity::Error,
            code,
            message: message.into(),
            primary: None,
            secondary: Vec::new(),
            notes: Vec::new(),
        }))
    }

    /// A warning: the program compiles, but something in it will not work
    /// as meant (`--deny-warnings` makes it an error).
    pub fn warning(
        code: Code,
        span: Span,
        message: impl Into<String>,
        label: impl Into<String>,
    ) -> Diagnostic {
        Diagnostic::error(code, span, message, label).as_warning()
    }

    /// The same problem, as an error (`--deny-warnings`).
    pub fn as_error(mut self) -> Diagnostic {
        self.severity = Severity::Error;
        self
    }

    /// The same problem, as a warning.
    pub fn as_warning(mut self) -> Diagnostic {
        self.severity = Severity::Warning;
        self
    }

    /// The same problem about a JSON plan, which has no program lines to
    /// point at: the labels go, and the message names the file.
    pub fn in_plan(mut self, file: &std::path::Path) -> Diagnostic {
        self.primary = None;
        self.secondary.clear();
        self.message = format!("{}: {}", file.display(), self.message);
        self
    }

    /// Where in the program the problem is, if it is in one.
    pub fn span(&self) -> Option<Span> {
        self.primary.as_ref().map(|l| l.span)
    }

    /// The exit status for this problem: 2 when msclc could not do what was
    /// asked (the E08xx codes), 1 when the program or plan is wrong.
    pub fn exit_status(&self) -> u8 {
        self.code.exit_status()
    }

    pub fn with_secondary(mut self, span: Span, message: impl Into<String>) -> Diagnostic {
        self.secondary.push(Label {
            span,
            message: message.into(),
        });
        self
    }

    pub fn with_note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(note.into());
        self
    }

    /// The problem, met inside a function called at `call`: where it has
    /// no label in `call`'s file yet, one there says so, so that a problem
    /// met in an imported file or the standard library points into the
    /// file that called it too (once, at the call nearest the problem).
    pub fn called_at(self, call: Span) -> Diagnostic {
        let labels = self.primary.iter().chain(&self.secondary);
        if labels.map(|l| l.span.file).any(|file| file == call.file) {
            return self;
        }
        self.with_secondary(call, "met in this call")
    }

    /// [`called_at`](Self::called_at) for each of `calls`, the innermost
    /// first: the calls that reached an op a function made.
    pub fn called_at_each(self, calls: impl IntoIterator<Item = Span>) -> Diagnostic {
        calls.into_iter().fold(self, Diagnostic::called_at)
    }
}

impl std::ops::Deref for Diagnostic {
    type Target = Details;
    fn deref(&self) -> &Details {
        &self.0
    }
}

impl std::ops::DerefMut for Diagnostic {
    fn deref_mut(&mut self) -> &mut Details {
        &mut self.0
    }
}

/// The sources a compilation read: the main file and everything it imported.
#[derive(Default)]
pub struct SourceMap {
    files: Vec<SourceFile>,
}

/// A file of a `SourceMap`, with the table of where its lines start.
struct SourceFile {
    name: String,
    source: String,
    lines: lines::LineStarts,
}

impl SourceMap {
    pub fn add(&mut self, name: String, source: String) -> u32 {
        let lines = lines::LineStarts::new(&source);
        self.files.push(SourceFile {
            name,
            source,
            lines,
        });
        self.files.len() as u32 - 1
    }

    pub fn source(&self, file: u32) -> &str {
        self.files
            .get(file as usize)
            .map_or("", |f| f.source.as_str())
    }

    /// Every file's name and text, in the order they were added.
    pub fn texts(&self) -> Vec<(String, String)> {
        self.files
            .iter()
            .map(|f| (f.name.clone(), f.source.clone()))
            .collect()
    }

    /// The names of every file, in the order they were added: the paths of
    /// the program and of the files it imports, and the names of standard
    /// library modules (`std/sync`).
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.files.iter().map(|f| f.name.as_str())
    }

    /// The name `file` was added under (its path), if there is one.
    pub fn name(&self, file: u32) -> Option<String> {
        self.files.get(file as usize).map(|f| f.name.clone())
    }

    /// The line (from 0) of byte `offset` of `file`, and the byte where
    /// that line starts: looked up in the table of line starts the map
    /// made once, not found by reading the text again (an editor asks it
    /// of every name of a file).
    pub fn line_of(&self, file: u32, offset: usize) -> (usize, usize) {
        self.files
            .get(file as usize)
            .map_or((0, 0), |f| f.lines.line_of(offset))
    }

    /// The file name, line and column (1-based) where `span` starts: the
    /// column counts characters.
    pub fn location(&self, span: Span) -> Option<(String, usize, usize)> {
        let f = self.files.get(span.file as usize)?;
        let (line, column) = lines::line_and_column(&f.source, &f.lines, span.start as usize);
        Some((f.name.clone(), line + 1, column + 1))
    }

    /// Renders diagnostics as text, the way the terminal shows them (without colour).
    pub fn render(&self, diags: &[Diagnostic]) -> String {
        let mut out = String::new();
        for d in diags {
            out.push_str(&self.render_one(d));
        }
        out
    }

    /// One diagnostic, against the sources as `shown` shows them: long
    /// lines cut around the labels, terminal controls made visible.
    fn render_one(&self, d: &Diagnostic) -> String {
        let base = match d.severity {
            Severity::Error => CsDiagnostic::error(),
            Severity::Warning => CsDiagnostic::warning(),
        };
        let labels: Vec<(&Label, bool)> = d
            .primary
            .iter()
            .map(|l| (l, true))
            .chain(d.secondary.iter().map(|l| (l, false)))
            .collect();
        // Only the files the labels point into are shown; the others stay
        // empty (their names are kept: ids index the list).
        let mut files = shown::ShownFiles::default();
        for (id, file) in self.files.iter().enumerate() {
            let ranges: Vec<std::ops::Range<usize>> = labels
                .iter()
                .filter(|(l, _)| l.span.file as usize == id)
                .map(|(l, _)| l.span.start as usize..l.span.end as usize)
                .collect();
            if ranges.is_empty() {
                files.add(&file.name, "", None, &ranges);
            } else {
                files.add(&file.name, &file.source, Some(&file.lines), &ranges);
            }
        }
        let mut cs = base
            .with_code(d.code.id())
            .with_message(shown::text(&d.message));
        for (l, primary) in labels {
            let file = l.span.file as usize;
            let range =
                files.offset(file, l.span.start as usize)..files.offset(file, l.span.end as usize);
            let label = if primary {
                CsLabel::primary(file, range)
            } else {
                CsLabel::secondary(file, range)
            };
            cs = cs.with_label(label.with_message(shown::text(&l.message)));
        }
        cs = cs.with_notes(d.notes.iter().map(|n| shown::text(n)).collect());
        let text = term::emit_into_string(&Config::default(), &files, &cs).unwrap_or_else(|_| {
            let severity = match d.severity {
                Severity::Error => "error",
                Severity::Warning => "warning",
            };
            format!("{severity}[{}]: {}\n", d.code.id(), shown::text(&d.message))
        });
        // A bare message is one line: no blank line to set it apart.
        match d.primary.is_none() && d.secondary.is_empty() && d.notes.is_empty() {
            true => text.trim_end().to_string() + "\n",
            false => text,
        }
    }
}
