//! One diagnostic type for every user-facing stage, rendered with
//! codespan-reporting only at the edge (the driver).

use codespan_reporting::diagnostic::{Diagnostic as CsDiagnostic, Label as CsLabel};
use codespan_reporting::files::SimpleFiles;
use codespan_reporting::term::{self, Config};

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
    pub message: String,
    pub primary: Label,
    pub secondary: Vec<Label>,
    pub notes: Vec<String>,
}

impl Diagnostic {
    pub fn error(span: Span, message: impl Into<String>, label: impl Into<String>) -> Diagnostic {
        Diagnostic(Box::new(Details {
            severity: Severity::Error,
            message: message.into(),
            primary: Label {
                span,
                message: label.into(),
            },
            secondary: Vec::new(),
            notes: Vec::new(),
        }))
    }

    /// A warning: the program compiles, but something in it will not work
    /// as meant (`--deny-warnings` makes it an error).
    pub fn warning(span: Span, message: impl Into<String>, label: impl Into<String>) -> Diagnostic {
        let mut d = Diagnostic::error(span, message, label);
        d.severity = Severity::Warning;
        d
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
    files: SimpleFiles<String, String>,
}

impl SourceMap {
    pub fn add(&mut self, name: String, source: String) -> u32 {
        self.files.add(name, source) as u32
    }

    pub fn source(&self, file: u32) -> &str {
        self.files
            .get(file as usize)
            .map(|f| f.source().as_str())
            .unwrap_or("")
    }

    /// The file name, line and column (1-based) where `span` starts.
    pub fn location(&self, span: Span) -> Option<(String, usize, usize)> {
        use codespan_reporting::files::Files;
        let file = span.file as usize;
        let name = self.files.name(file).ok()?;
        let at = self.files.location(file, span.start as usize).ok()?;
        Some((name, at.line_number, at.column_number))
    }

    /// Renders diagnostics as text, the way the terminal shows them (without colour).
    pub fn render(&self, diags: &[Diagnostic]) -> String {
        let mut out = String::new();
        for d in diags {
            out.push_str(&self.render_one(d));
        }
        out
    }

    fn render_one(&self, d: &Diagnostic) -> String {
        let base = match d.severity {
            Severity::Error => CsDiagnostic::error(),
            Severity::Warning => CsDiagnostic::warning(),
        };
        let label = |l: &Label, primary: bool| {
            let range = l.span.start as usize..l.span.end as usize;
            let lab = if primary {
                CsLabel::primary(l.span.file as usize, range)
            } else {
                CsLabel::secondary(l.span.file as usize, range)
            };
            lab.with_message(l.message.clone())
        };
        let mut cs = base
            .with_message(d.message.clone())
            .with_label(label(&d.primary, true));
        for s in &d.secondary {
            cs = cs.with_label(label(s, false));
        }
        cs = cs.with_notes(d.notes.clone());
        term::emit_into_string(&Config::default(), &self.files, &cs)
            .unwrap_or_else(|_| format!("error: {}\n", d.message))
    }
}
