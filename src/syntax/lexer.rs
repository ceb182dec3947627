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
    /// A string literal with no closing quote, or a bad escape.
    BadString,
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

fn parse_int<'s>(lex: &mut logos::Lexer<'s, Token<'s>>) -> Result<u64, LexErrorKind> {
    let text: String = lex.slice().chars().filter(|c| *c != '_').collect();
    let value = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => text.parse::<u64>(),
    };
    // Up to u64::MAX, the largest int (max_message_size defaults to it).
    value.map_err(|_| LexErrorKind::IntegerTooLarge)
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
    #[regex(r"[0-9][0-9_]*|0[xX][0-9a-fA-F_]+", parse_int)]
    Int(u64),
    #[regex(r#""([^"\\\n]|\\.)*""#, parse_string)]
    Str(String),

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
        Ident(_) | Int(_) | Str(_) => "",
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
}
