//! The analysis's diagnostics as the editor shows them: per file (the
//! document and the files it imports), each with its place, code, notes
//! and related places, and the notification that publishes a file's list.

use super::{file_uri, range_of};
use crate::diag::{Diagnostic, Severity};
use crate::driver::Analysis;
use lsp_server::Notification;
use lsp_types::notification::{self as notif, Notification as _};
use lsp_types::*;

pub(super) fn publish(uri: Uri, diagnostics: Vec<lsp_types::Diagnostic>) -> Notification {
    Notification::new(
        notif::PublishDiagnostics::METHOD.to_string(),
        PublishDiagnosticsParams {
            uri,
            diagnostics,
            version: None,
        },
    )
}

/// The analysis's diagnostics as LSP diagnostics, per file: the document
/// itself always (an empty list clears it), and each import with some (a
/// problem met there through a call in the document marked at both).
/// Diagnostics with no place (a bad param setting) go at the document's
/// start.
pub(super) fn diagnostics_by_file(
    analysis: &Analysis,
    uri: &Uri,
) -> Vec<(Uri, Vec<lsp_types::Diagnostic>)> {
    let mut by_file: Vec<(Uri, Vec<lsp_types::Diagnostic>)> = vec![(uri.clone(), Vec::new())];
    for d in &analysis.diagnostics {
        // A place in the standard library, which the editor cannot open,
        // gives way to the first label in a file it can (the call that
        // met it, `Diagnostic::called_at`); none goes at the document's
        // start, as no place does.
        let labels = d.primary.iter().chain(&d.secondary);
        let place = labels
            .filter_map(|label| {
                Some((
                    file_uri(analysis, label.span.file, uri)?,
                    range_of(analysis, label.span),
                ))
            })
            .next();
        let (place_uri, range) = place.unwrap_or((uri.clone(), Range::default()));
        let mut converted = convert(analysis, d, range, uri);
        // Its own place in a module of the standard library, which the
        // editor cannot show, is said (the signals and the waits of one
        // std call are two problems, marked at the one call).
        let in_std = d
            .primary
            .as_ref()
            .filter(|l| file_uri(analysis, l.span.file, uri).is_none())
            .and_then(|l| analysis.sources.location(l.span));
        if let Some((module, line, _)) = in_std {
            converted.message = format!("in {module}:{line}: {}", converted.message);
        }
        // Met in a file the document imports: marked in the document too,
        // at its call there (file 0), since the document is what fails,
        // with the place in the import to go to.
        let call = d.secondary.iter().find(|label| label.span.file == 0);
        if let Some(call) = call.filter(|_| place_uri != *uri) {
            let mut here = convert(analysis, d, range_of(analysis, call.span), uri);
            let name = d
                .primary
                .as_ref()
                .and_then(|l| analysis.sources.name(l.span.file));
            here.message = format!("in {}: {}", name.unwrap_or_default(), here.message);
            let there = DiagnosticRelatedInformation {
                location: Location::new(place_uri.clone(), range),
                message: "the problem is here".into(),
            };
            here.related_information
                .get_or_insert_with(Vec::new)
                .insert(0, there);
            by_file[0].1.push(here);
        }
        match by_file.iter_mut().find(|(u, _)| *u == place_uri) {
            Some((_, list)) => list.push(converted),
            None => by_file.push((place_uri, vec![converted])),
        }
    }
    by_file
}

fn convert(analysis: &Analysis, d: &Diagnostic, range: Range, uri: &Uri) -> lsp_types::Diagnostic {
    let mut message = d.message.clone();
    if let Some(label) = d
        .primary
        .as_ref()
        .filter(|l| says_more(&d.message, &l.message))
    {
        message.push_str(&format!(" ({})", label.message));
    }
    for note in &d.notes {
        message.push('\n');
        message.push_str(note);
    }
    let related: Vec<DiagnosticRelatedInformation> = d
        .secondary
        .iter()
        .filter_map(|l| {
            Some(DiagnosticRelatedInformation {
                location: Location::new(
                    file_uri(analysis, l.span.file, uri)?,
                    range_of(analysis, l.span),
                ),
                message: l.message.clone(),
            })
        })
        .collect();
    lsp_types::Diagnostic {
        range,
        severity: Some(match d.severity {
            Severity::Error => DiagnosticSeverity::ERROR,
            Severity::Warning => DiagnosticSeverity::WARNING,
        }),
        code: Some(NumberOrString::String(d.code.id().to_string())),
        source: Some("msclc".into()),
        message,
        related_information: (!related.is_empty()).then_some(related),
        ..lsp_types::Diagnostic::default()
    }
}

/// Whether the primary `label` adds to `message` in the editor, which
/// shows the two as one line: not when empty, nor when every `code` it
/// quotes the message quotes too ("... has type `int`, expected `chunk`"
/// needs no "(of type `int`)").
fn says_more(message: &str, label: &str) -> bool {
    let mut quoted = label.split('`').skip(1).step_by(2).peekable();
    !label.is_empty()
        && (quoted.peek().is_none() || quoted.any(|q| !message.contains(&format!("`{q}`"))))
}

#[cfg(test)]
mod tests {
    use super::says_more;

    #[test]
    fn a_label_that_repeats_the_message_is_left_out() {
        let message = "argument `src_chunk` of `put` has type `int`, expected `chunk`";
        assert!(!says_more(message, "of type `int`"));
        assert!(!says_more(message, ""));
        assert!(says_more("unexpected `}`", "expected `]` or `,`"));
        assert!(says_more("too many ops", "this op is one too many"));
    }
}
