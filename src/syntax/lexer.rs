//! The lexer: source text to tokens, with logos.
//!
//! Keywords are listed once, in [`KEYWORDS`]; the editor grammars are tested
//! against that list so that a new keyword cannot go uncoloured.

use logos::Logos;
use std::fmt;

/// Every reserved word of the language, in the order the token enum lists them.
pub const KEYWORDS: &[&str] = &[
    "param", "program", "import", "fn", "let", "return", "for", "in", "where", "if", "else",
    "pipeline", "true", "false",
];

/// What went wrong while cutting the text into tokens.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum LexErrorKind {
    /// A character that starts no token.
    #[default]
    UnexpectedChar,
    /// An integer literal too large for 64 bits.
    IntegerTooLarge,
    /// Digits that are no integer literal (`0x`, `12abc`, `0b101`): why.
    BadInt(&'static str),
    /// A number with a fractional part: the language has none.
    Fraction,
    /// A string literal with a bad escape.
    BadString,
    /// A string literal with no closing quote on its line.
    UnclosedString,
    /// A bracket opened inside more than `nesting::MAX_NESTING` others:
    /// parentheses make no node of the tree to count, but the formatter
    /// indents a line per bracket open.
    TooDeep,
}

/// A lexer error with its byte span.
#[derive(Debug, Clone, PartialEq)]
pub struct LexError {
    pub kind: LexErrorKind,
    pub start: usize,
    pub end: usize,
}

/// An integer literal: the token takes every letter and digit after the
/// first digit, so that `12abc` or `0x` is one malformed literal, not a
/// number and then a name.
fn parse_int<'s>(lex: &mut logos::Lexer<'s, Token<'s>>) -> Result<u64, LexErrorKind> {
    int_literal(lex.slice())
}

/// The value of an integer literal's text (`1_024`, `0x10`), or why it is
/// none: the lexer's reading, and `-D`'s.
pub fn int_literal(text: &str) -> Result<u64, LexErrorKind> {
    // The prefix is read before the separators go: `0_x1F` is no hex.
    let hex = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X"));
    let digits_of = |text: &str| -> String { text.chars().filter(|c| *c != '_').collect() };
    let (hex, text) = (hex.map(digits_of), digits_of(text));
    let (digits, radix) = match hex.as_deref() {
        Some("") => return Err(LexErrorKind::BadInt("hex digits must follow `0x`")),
        Some(hex) if !hex.chars().all(|c| c.is_ascii_hexdigit()) => {
            return Err(LexErrorKind::BadInt(
                "after `0x` come hex digits only: 0-9 and a-f",
            ))
        }
        Some(hex) => (hex, 16),
        None if ["0b", "0B", "0o", "0O"].iter().any(|p| text.starts_with(p)) => {
            return Err(LexErrorKind::BadInt(
                "no binary or octal literals: write the number in decimal, or in hex after `0x`",
            ))
        }
        None if !text.chars().all(|c| c.is_ascii_digit()) => {
            let word = text.trim_start_matches(|c: char| c.is_ascii_digit());
            return Err(LexErrorKind::BadInt(if KEYWORDS.contains(&word) {
                "a number runs into a keyword: put a space between them (`0..4 where`)"
            } else {
                "a number runs into letters: a name cannot start with a digit; put a space or an operator between them"
            }));
        }
        None => (text.as_str(), 10),
    };
    // Up to u64::MAX, the largest int (max_message_size defaults to it).
    u64::from_str_radix(digits, radix).map_err(|_| LexErrorKind::IntegerTooLarge)
}

fn parse_string<'s>(lex: &mut logos::Lexer<'s, Token<'s>>) -> Result<String, LexErrorKind> {
    let raw = lex.slice();
    let body = &raw[1..raw.len() - 1];
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('\\') => out.push('\\'),
            Some('"') => out.push('"'),
            _ => return Err(LexErrorKind::BadString),
        }
    }
    Ok(out)
}

/// One line of source text read as the lexer reads it: its code before
/// any `//` comment (a `//` inside a string is no comment), and whether
/// the line ends inside a string. For what reads text that may not lex
/// yet (the parse hints, an editor's completion).
pub fn code_of_line(line: &str) -> (&str, bool) {
    let mut in_string = false;
    let mut chars = line.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' if in_string => {
                chars.next();
            }
            '"' => in_string = !in_string,
            '/' if !in_string && chars.peek().is_some_and(|(_, n)| *n == '/') => {
                return (&line[..i], false)
            }
            _ => {}
        }
    }
    (line, in_string)
}

/// The callback of a pattern that is always an error.
fn refuse(kind: LexErrorKind) -> Result<(), LexErrorKind> {
    Err(kind)
}

/// A token of .mscl source.
#[derive(Logos, Debug, Clone, PartialEq)]
#[logos(skip r"[ \t\r\n\f]+")]
// A comment ends at a line break: \n, \r\n or a lone \r.
#[logos(skip(r"//[^\r\n]*", allow_greedy = true))]
#[logos(error = LexErrorKind)]
pub enum Token<'src> {
    #[token("param")]
    Param,
    #[token("program")]
    Program,
    #[token("import")]
    Import,
    #[token("fn")]
    Fn,
    #[token("let")]
    Let,
    #[token("return")]
    Return,
    #[token("for")]
    For,
    #[token("in")]
    In,
    #[token("where")]
    Where,
    #[token("if")]
    If,
    #[token("else")]
    Else,
    #[token("pipeline")]
    Pipeline,
    #[token("true")]
    True,
    #[token("false")]
    False,

    #[regex(r"[A-Za-z_][A-Za-z0-9_]*", |lex| lex.slice())]
    Ident(&'src str),
    #[regex(r"[0-9][0-9A-Za-z_]*", parse_int)]
    Int(u64),
    /// `2.5`: never a token, always an error (`Fraction`).
    #[regex(r"[0-9][0-9_]*\.[0-9][0-9A-Za-z_]*", |_| refuse(LexErrorKind::Fraction))]
    Fraction,
    // A string may hold a carriage return (only `\n` ends it unclosed);
    // an unclosed one is cut at the first line break of any kind.
    #[regex(r#""([^"\\\n]|\\.)*""#, parse_string)]
    Str(String),
    /// A string cut by the end of its line: never a token, always an
    /// error (`UnclosedString`); a closed string is the longer match.
    #[regex(r#""([^"\\\r\n]|\\.)*"#, |_| refuse(LexErrorKind::UnclosedString))]
    UnclosedString,

    #[token("(")]
    LParen,
    #[token(")")]
    RParen,
    #[token("[")]
    LBracket,
    #[token("]")]
    RBracket,
    #[token("{")]
    LBrace,
    #[token("}")]
    RBrace,
    #[token(",")]
    Comma,
    #[token(":")]
    Colon,
    #[token(";")]
    Semi,
    #[token(".")]
    Dot,
    #[token("..")]
    DotDot,
    #[token("->")]
    Arrow,
    #[token("=")]
    Assign,
    #[token("==")]
    EqEq,
    #[token("!=")]
    NotEq,
    #[token("<")]
    Lt,
    #[token("<=")]
    Le,
    #[token(">")]
    Gt,
    #[token(">=")]
    Ge,
    #[token("+")]
    Plus,
    #[token("-")]
    Minus,
    #[token("*")]
    Star,
    #[token("/")]
    Slash,
    #[token("%")]
    Percent,
    #[token("<<")]
    Shl,
    #[token(">>")]
    Shr,
    #[token("&")]
    Amp,
    #[token("|")]
    Pipe,
    #[token("^")]
    Caret,
    #[token("&&")]
    AndAnd,
    #[token("||")]
    OrOr,
    #[token("!")]
    Bang,
}

impl fmt::Display for Token<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Token::Ident(name) => write!(f, "identifier `{name}`"),
            Token::Int(v) => write!(f, "integer `{v}`"),
            Token::Str(s) => write!(f, "string {s:?}"),
            other => write!(f, "`{}`", token_text(other)),
        }
    }
}

/// The fixed spelling of a keyword or punctuation token.
fn token_text(token: &Token<'_>) -> &'static str {
    use Token::*;
    match token {
        Param => "param",
        Program => "program",
        Import => "import",
        Fn => "fn",
        Let => "let",
        Return => "return",
        For => "for",
        In => "in",
        Where => "where",
        If => "if",
        Else => "else",
        Pipeline => "pipeline",
        True => "true",
        False => "false",
        LParen => "(",
        RParen => ")",
        LBracket => "[",
        RBracket => "]",
        LBrace => "{",
        RBrace => "}",
        Comma => ",",
        Colon => ":",
        Semi => ";",
        Dot => ".",
        DotDot => "..",
        Arrow => "->",
        Assign => "=",
        EqEq => "==",
        NotEq => "!=",
        Lt => "<",
        Le => "<=",
        Gt => ">",
        Ge => ">=",
        Plus => "+",
        Minus => "-",
        Star => "*",
        Slash => "/",
        Percent => "%",
        Shl => "<<",
        Shr => ">>",
        Amp => "&",
        Pipe => "|",
        Caret => "^",
        AndAnd => "&&",
        OrOr => "||",
        Bang => "!",
        Ident(_) | Int(_) | Str(_) | Fraction | UnclosedString => "",
    }
}

/// Cuts `src` into the (start, token, end) triples LALRPOP expects. A
/// byte-order mark that starts the text (some Windows editors write one)
/// is passed over, as the file's encoding and not its text.
pub fn lex(src: &str) -> impl Iterator<Item = Result<(usize, Token<'_>, usize), LexError>> + '_ {
    let skipped = if src.starts_with('\u{FEFF}') {
        '\u{FEFF}'.len_utf8()
    } else {
        0
    };
    let mut open = 0usize;
    Token::lexer(&src[skipped..])
        .spanned()
        .map(move |(tok, span)| match tok {
            Ok(t) => {
                match t {
                    Token::LParen | Token::LBracket | Token::LBrace => open += 1,
                    Token::RParen | Token::RBracket | Token::RBrace => {
                        open = open.saturating_sub(1)
                    }
                    _ => {}
                }
                if open > super::nesting::MAX_NESTING {
                    return Err(LexError {
                        kind: LexErrorKind::TooDeep,
                        start: skipped + span.start,
                        end: skipped + span.end,
                    });
                }
                Ok((skipped + span.start, t, skipped + span.end))
            }
            Err(kind) => Err(LexError {
                kind,
                start: skipped + span.start,
                end: skipped + span.end,
            }),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<Token<'_>> {
        lex(src).map(|t| t.unwrap().1).collect()
    }

    #[test]
    fn keywords_and_operators() {
        assert_eq!(
            kinds("for x in 0..n where x != 1 // hi"),
            vec![
                Token::For,
                Token::Ident("x"),
                Token::In,
                Token::Int(0),
                Token::DotDot,
                Token::Ident("n"),
                Token::Where,
                Token::Ident("x"),
                Token::NotEq,
                Token::Int(1)
            ]
        );
    }

    #[test]
    fn every_keyword_lexes_as_itself() {
        for kw in KEYWORDS {
            let toks = kinds(kw);
            assert_eq!(toks.len(), 1);
            assert!(
                !matches!(toks[0], Token::Ident(_)),
                "{kw} lexed as an identifier"
            );
            assert_eq!(toks[0].to_string(), format!("`{kw}`"));
        }
    }

    #[test]
    fn literals() {
        assert_eq!(
            kinds("1_024 0x10 \"a\\\"b\""),
            vec![Token::Int(1024), Token::Int(16), Token::Str("a\"b".into())]
        );
        assert_eq!(kinds("18446744073709551615"), vec![Token::Int(u64::MAX)]);
        let err = lex("99999999999999999999").next().unwrap().unwrap_err();
        assert_eq!(err.kind, LexErrorKind::IntegerTooLarge);
        let err = lex("@").next().unwrap().unwrap_err();
        assert_eq!(
            (err.kind, err.start, err.end),
            (LexErrorKind::UnexpectedChar, 0, 1)
        );
    }

    /// A literal that is no integer is one error over all of it: `0x` was
    /// the integer 0 and then the name `x` (`let x = 0x` compiled), `12abc`
    /// the integer 12 and then an unknown name `abc`.
    #[test]
    fn malformed_numbers_are_one_error_each() {
        let first_error = |src: &str| {
            let e = lex(src).find_map(Result::err).expect("an error");
            (e.kind, e.start, e.end)
        };
        for (src, len) in [
            ("0x", 2),
            ("0xZZ", 4),
            ("12abc", 5),
            ("0b101", 5),
            ("1e5", 3),
            // A separator before the prefix: no hex (it was 31).
            ("0_x1F", 5),
        ] {
            let (kind, start, end) = first_error(src);
            assert!(matches!(kind, LexErrorKind::BadInt(_)), "{src}: {kind:?}");
            assert_eq!((start, end), (0, len), "{src}");
        }
        assert_eq!(first_error("0..2.5"), (LexErrorKind::Fraction, 3, 6));
        assert_eq!(
            first_error("x = \"ab\ny"),
            (LexErrorKind::UnclosedString, 4, 7)
        );
        // Ranges, hex with underscores and names with digits still lex.
        assert_eq!(
            kinds("0..2 0x1_F a1"),
            vec![
                Token::Int(0),
                Token::DotDot,
                Token::Int(2),
                Token::Int(31),
                Token::Ident("a1")
            ]
        );
    }
}
