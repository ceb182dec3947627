//! What a parse error most likely means, where the grammar's "expected
//! one of" would mislead: a mistake people make often enough, told by the
//! token the parser stopped at and the text before it.

use super::lexer::Token;
use crate::diag::{Code, Diagnostic, Span};

/// A diagnostic for the parser stopping at `tok` (at byte `at` of `src`,
/// wanting one of `expected`), where the mistake is a known one.
pub(super) fn likely_meaning(
    file: u32,
    src: &str,
    at: usize,
    tok: &Token<'_>,
    expected: &[String],
) -> Option<Diagnostic> {
    let before = &src[..at];
    let wants = |what: &str| expected.iter().any(|e| e.trim_matches('"') == what);
    let line = before.rsplit(['\n', '\r']).next().unwrap_or("");
    let last_word = before
        .trim_end()
        .rsplit(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .next();
    // `param n: int` and then the next line: the default left out.
    if wants("=") && wants("in") {
        let declared = before.trim_end();
        let statement = declared.rsplit(['\n', '\r']).next().unwrap_or("");
        if statement.trim_start().starts_with("param ") {
            let end = declared.len();
            return Some(
                Diagnostic::error(
                    Code::Syntax,
                    Span::new(file, end, end),
                    "a param needs a default value",
                    "add ` = VALUE` here",
                )
                .with_note("help: `param n: int = 8`: the default is what a compile without `-D n=...` uses"),
            );
        }
    }
    // `program {`: the block is read as a map, and fails at its first `=`.
    if matches!(tok, Token::Assign) {
        let opened = before.rfind("program").filter(|&p| {
            let rest = &before[p + "program".len()..];
            rest.trim_start().starts_with('{') && !rest.contains('}')
        });
        if let Some(p) = opened {
            let brace = p + before[p..].find('{').unwrap_or(0);
            return Some(
                Diagnostic::error(
                    Code::Syntax,
                    Span::new(file, brace, brace + 1),
                    "the program block needs a name",
                    "no name before this brace",
                )
                .with_note("help: `program \"allreduce_8\" { collective = ... }`: the name (any string expression, a param most often) is the plan's"),
            );
        }
    }
    if last_word == Some("while") {
        let end = before.trim_end().len();
        return Some(
            Diagnostic::error(
                Code::Syntax,
                Span::new(file, end - "while".len(), end),
                "there is no `while` loop",
                "not a word of .mscl",
            )
            .with_note("help: loop over a range or a list with `for x in 0..n { ... }` (a loop's length is known before it runs)"),
        );
    }
    let comparison = |t: &Token<'_>| {
        matches!(
            t,
            Token::Lt | Token::Le | Token::Gt | Token::Ge | Token::EqEq | Token::NotEq
        )
    };
    if comparison(tok) && ["<", ">", "==", "!="].iter().any(|c| line.contains(c)) {
        return Some(
            Diagnostic::error(
                Code::Syntax,
                Span::new(file, at, at + 1),
                "comparisons do not chain",
                "a second comparison",
            )
            .with_note("help: join them with `&&`: `a < b && b < c`"),
        );
    }
    if matches!(tok, Token::Slash) && src[at..].starts_with("/*") {
        return Some(
            Diagnostic::error(
                Code::Syntax,
                Span::new(file, at, at + 2),
                "there are no `/* */` comments",
                "not a comment",
            )
            .with_note("help: a comment starts with `//` and runs to the end of its line"),
        );
    }
    None
}
