//! Source text to syntax tree: the logos lexer feeds the LALRPOP parser
//! generated from `grammar/mscl.lalrpop`.

pub mod ast;
pub mod comment_division;
mod hints;
pub mod lexer;
pub mod nesting;

use crate::diag::{Code, Diagnostic, Span};
use ast::{BinOp, Expr, ExprKind, Stmt};
use lalrpop_util::ParseError;
use lexer::{LexError, LexErrorKind, Token};

lalrpop_util::lalrpop_mod!(
    #[allow(clippy::all, unused_parens, dead_code)]
    grammar,
    "/mscl.rs"
);

/// Builds a binary expression node; used by the grammar's actions.
pub(crate) fn bin(file: u32, l: usize, r: usize, op: BinOp, a: Expr, b: Expr) -> Expr {
    Expr {
        kind: ExprKind::Binary(op, Box::new(a), Box::new(b)),
        span: Span::new(file, l, r),
    }
}

/// The largest source file msclc reads: far above any program (the
/// largest example is 5 KB), low enough that `import "/dev/zero"` ends.
/// What `msclc fmt` writes is held to it too.
pub const MAX_SOURCE_BYTES: u64 = 16 << 20;

/// Parses one file. `file` is the id its spans carry. A program nested
/// too deeply for the later stages' recursion is refused here.
pub fn parse(file: u32, src: &str) -> Result<Vec<Stmt>, Diagnostic> {
    let stmts = grammar::FileParser::new()
        .parse(file, lexer::lex(src))
        .map_err(|e| parse_error_to_diagnostic(file, src, e))?;
    nesting::check(&stmts)?;
    Ok(stmts)
}

/// What the grammar expected, as a user reads it: tokens quoted (`` `)` ``,
/// `` `,` `` would be lost among the commas), classes of token named.
fn describe_expected(expected: &[String]) -> String {
    let names: Vec<String> = expected
        .iter()
        .map(|e| match e.trim_matches('"') {
            "ident" => "a name".to_string(),
            "int" => "an integer".to_string(),
            "string" => "a string".to_string(),
            token => format!("`{token}`"),
        })
        .collect();
    match &names[..] {
        [] => String::new(),
        [one] => format!("expected {one}"),
        [a, b] => format!("expected {a} or {b}"),
        _ if names.len() <= 8 => format!("expected one of {}", names.join(", ")),
        _ => format!("expected one of {}, ...", names[..8].join(", ")),
    }
}

fn parse_error_to_diagnostic(
    file: u32,
    src: &str,
    err: ParseError<usize, Token<'_>, LexError>,
) -> Diagnostic {
    let mut d = describe_parse_error(file, src, &err);
    // Only an `if` used as a value can want nothing but `else`.
    let wants_else = match &err {
        ParseError::UnrecognizedEof { expected, .. }
        | ParseError::UnrecognizedToken { expected, .. } => {
            expected.len() == 1 && expected[0].trim_matches('"') == "else"
        }
        _ => false,
    };
    if wants_else {
        d.notes.clear();
        return d.with_note(
            "help: an `if` used as a value needs an `else` branch: `if c { a } else { b }`",
        );
    }
    if let ParseError::UnrecognizedToken {
        token: (l, tok, r),
        expected,
    } = &err
    {
        if let Some(better) = hints::likely_meaning(file, src, (*l, *r), tok, expected) {
            return better;
        }
    }
    d
}

fn describe_parse_error(
    file: u32,
    src: &str,
    err: &ParseError<usize, Token<'_>, LexError>,
) -> Diagnostic {
    match err.clone() {
        ParseError::InvalidToken { location } => Diagnostic::error(
            Code::Syntax,
            Span::new(file, location, location + 1),
            "invalid token",
            "not understood here",
        ),
        ParseError::UnrecognizedEof { expected, .. } => {
            // Right after the last thing written, not on the empty line
            // after the file's last line break.
            let end = src.trim_end().len();
            let d = Diagnostic::error(
                Code::Syntax,
                Span::new(file, end, end),
                "unexpected end of file",
                describe_expected(&expected),
            );
            match hints::unclosed_bracket(src) {
                Some(((start, open_end), open, close)) => d
                    .with_secondary(Span::new(file, start, open_end), format!("this `{open}` is never closed"))
                    .with_note(format!("help: close it with `{close}` where what it holds ends")),
                None => d.with_note("help: the program stops in the middle of a statement: finish the statement, or remove it"),
            }
        }
        ParseError::UnrecognizedToken {
            token: (l, tok, r),
            expected,
        } => {
            let mut d = Diagnostic::error(
                Code::Syntax,
                Span::new(file, l, r),
                format!("unexpected {tok}"),
                describe_expected(&expected),
            );
            if let Token::Ident(name) = tok {
                if lexer::KEYWORDS.contains(&name) {
                    d = d.with_note(format!("`{name}` is a keyword"));
                }
            }
            if matches!(tok, Token::Assign) {
                // Right after `let`, the name is what is missing.
                let before = src[..l].trim_end();
                let after_let = before.strip_suffix("let").is_some_and(|rest| {
                    !rest.ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
                });
                d = d.with_note(match after_let {
                    true => "help: `let` binds a name to a value: `let x = 3`",
                    false => {
                        "help: only a plain variable can be assigned; use `let` to bind a new name"
                    }
                });
            }
            d
        }
        ParseError::ExtraToken { token: (l, tok, r) } => Diagnostic::error(
            Code::Syntax,
            Span::new(file, l, r),
            format!("unexpected {tok}"),
            "extra token",
        ),
        ParseError::User { error } => {
            let span = Span::new(file, error.start, error.end);
            match error.kind {
                LexErrorKind::UnexpectedChar => {
                    unexpected_char(src.get(error.start..error.end).unwrap_or("?"), span)
                }
                LexErrorKind::IntegerTooLarge => Diagnostic::error(
                    Code::Literal,
                    span,
                    "integer literal too large",
                    "does not fit in 64 bits",
                ),
                LexErrorKind::BadInt(why) => {
                    let text = src.get(error.start..error.end).unwrap_or("?");
                    Diagnostic::error(
                        Code::Literal,
                        span,
                        format!("malformed integer literal `{text}`"),
                        why,
                    )
                }
                LexErrorKind::Fraction => Diagnostic::error(
                    Code::Literal,
                    span,
                    "a number with a fractional part",
                    "not an integer",
                )
                .with_note("help: .mscl has integers only: count sizes, indices and ranges in whole chunks, elements or bytes"),
                LexErrorKind::UnclosedString => Diagnostic::error(
                    Code::Literal,
                    span,
                    "unterminated string",
                    "no closing `\"` on this line",
                )
                .with_note("help: close the string with `\"` before the end of its line (`\\n` writes a line break into it)"),
                LexErrorKind::BadString => Diagnostic::error(
                    Code::Literal,
                    span,
                    "malformed string literal",
                    "bad escape",
                )
                .with_note("help: the escapes are \\n, \\t, \\\\ and \\\""),
                LexErrorKind::TooDeep => nesting::too_deep(span),
            }
        }
    }
}

/// A character that starts no token, named so that an invisible one can
/// be found: `é` (U+00E9).
fn unexpected_char(ch: &str, span: Span) -> Diagnostic {
    let c = ch.chars().next().unwrap_or('?');
    let invisible = c.is_whitespace()
        || c.is_control()
        || matches!(c, '\u{200b}'..='\u{200d}' | '\u{2060}' | '\u{feff}');
    let named = if c.is_ascii_graphic() {
        format!("`{c}`")
    } else if invisible {
        format!("U+{:04X}", c as u32)
    } else {
        format!("`{c}` (U+{:04X})", c as u32)
    };
    let help = if c.is_control() && !c.is_whitespace() {
        "help: a control character, which a program has no use for: delete it"
    } else if invisible {
        "help: an invisible or non-breaking space: delete it, or type a plain space"
    } else if !c.is_ascii() {
        "help: names are ASCII letters, digits and `_`; other text goes in a string (\"...\") or a comment (//)"
    } else {
        "help: comments start with `//`; strings use double quotes"
    };
    Diagnostic::error(
        Code::Syntax,
        span,
        format!("unexpected character {named}"),
        "no token starts with this character",
    )
    .with_note(help)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_sketch_shapes() {
        let src = r#"
            param n: int = 2
            program "x" { collective = allgather(n, chunk_factor: 1, inplace: true) protocol = Simple }
            let ch = { (a, b): memory_channel(a, b) for a in 0..n, b in 0..n where a != b }
            for (a, b), c in ch { c.signal(tb: 0, relaxed: true) }
            fn f(x: int, y: list[int] = [1, 2]) -> int { return x + y[0] }
            if n > 1 { x = 1 } else if n == 1 { x = 2 } else { x = 3 }
            pipeline(unit_size: 1 << 20, num_chunks: 1) { rank(0).copy(rank(0).output[0..1], rank(0).input[0], tb: 0) }
        "#;
        let stmts = parse(0, src).unwrap();
        assert_eq!(stmts.len(), 7);
    }

    #[test]
    fn program_options_end_with_a_line_a_comma_or_a_semicolon() {
        for options in ["a = 1\nb = 2\n", "a = 1, b = 2", "a = 1; b = 2;"] {
            let src = format!("program \"x\" {{ {options} }}");
            let stmts = parse(0, &src).unwrap_or_else(|d| panic!("{src}: {}", d.message));
            let ast::StmtKind::Program { options, .. } = &stmts[0].kind else {
                panic!("{src}: no program block");
            };
            assert_eq!(options.len(), 2, "{src}");
        }
    }

    #[test]
    fn reports_position_of_bad_token() {
        let err = parse(0, "let x = (1 + ]").unwrap_err();
        assert_eq!(err.message, "unexpected `]`");
        let span = err.span().unwrap();
        assert_eq!((span.start, span.end), (13, 14));
    }
}
