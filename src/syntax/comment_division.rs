//! Warning W0108: a `//` comment that reads as the rest of a division.
//!
//! Python's integer division is `//`, and the DSL's multi-node programs
//! use it everywhere (`rank // gpus_per_node`). Here `//` starts a
//! comment, so a line ported as it stands, `let nodes = num_gpus //
//! gpus_per_node`, means `let nodes = num_gpus` and nothing says so. A
//! comment reads as a division when the code before it on its line ends
//! with an operand, and its text starts with arithmetic on names the file
//! uses or numbers, which ends the comment or is followed only by a
//! bracket or comma (the rest of the line a division would leave). The
//! names are the values' names: not a method's or a field's (`ch.put(..)
//! // put` names the op), nor a keyword argument's (`tb: 0`).

use super::lexer::{lex, Token};
use crate::diag::{Code, Diagnostic, Span};
use logos::Logos;
use std::collections::HashSet;

/// The W0108 warnings of the file `file`, whose text is `src`: none where
/// the text does not lex (the parser says why).
pub fn comment_divisions(src: &str, file: u32) -> Vec<Diagnostic> {
    if !src.contains("//") {
        return Vec::new();
    }
    // Two passes over the tokens, none of them kept: a file of millions
    // of tokens holds no second copy of them.
    let mut names: HashSet<&str> = HashSet::new();
    let (mut before, mut tokens) = (None, lex(src).peekable());
    while let Some(token) = tokens.next() {
        let Ok((_, token, _)) = token else {
            return Vec::new();
        };
        if let Token::Ident(name) = token {
            let method = matches!(before, Some(Token::Dot));
            // `name:` names a parameter: of a call (`tb: 0`), unless
            // declared (`param n: int`; a function's are used in its body).
            let keyword = matches!(tokens.peek(), Some(Ok((_, Token::Colon, _))))
                && !matches!(before, Some(Token::Param));
            if !method && !keyword {
                names.insert(name);
            }
        }
        before = Some(token);
    }
    let mut found = Vec::new();
    let mut tokens = lex(src).flatten().peekable();
    while let Some((_, token, end)) = tokens.next() {
        if !ends_operand(&token) {
            continue;
        }
        let next = tokens.peek().map_or(src.len(), |(start, _, _)| *start);
        let gap = &src[end..next];
        // A comment on the operand's own line.
        let line = &gap[..gap.find(['\n', '\r']).unwrap_or(gap.len())];
        let Some(at) = line.find("//") else { continue };
        let text = &line[at + 2..];
        if let Some(length) = divisor(text, &names) {
            let divisor = text[..length].trim_start();
            let start = end + at;
            let span = Span::new(file, start, start + 2 + length);
            found.push(
                Diagnostic::warning(
                    Code::CommentDivision,
                    span,
                    format!(
                        "`//` starts a comment: the line ends before `{divisor}`, which reads as a divisor"
                    ),
                    "a comment, not a division",
                )
                .with_note(format!(
                    "help: integer division is `/` (it floors, as Python's `//` does): `/ {divisor}`; a comment meant as one goes on a line of its own"
                )),
            );
        }
    }
    found
}

/// Whether an expression can end with `token`, so that a division could
/// follow it.
fn ends_operand(token: &Token) -> bool {
    matches!(
        token,
        Token::Ident(_) | Token::Int(_) | Token::RParen | Token::RBracket
    )
}

/// Where the divisor a comment's `text` reads as ends, if it reads as
/// one: arithmetic on numbers and names the file uses, alone or before a
/// closing bracket, an opening brace or a comma.
fn divisor(text: &str, names: &HashSet<&str>) -> Option<usize> {
    let lexer = Token::lexer(text).spanned();
    let mut end = None;
    // Whether the next token must be an operand, and the parentheses open.
    let (mut operand_next, mut open) = (true, 0u32);
    for (token, span) in lexer {
        let token = token.ok()?;
        match token {
            Token::Ident(name) if operand_next && names.contains(name) => operand_next = false,
            Token::Int(_) if operand_next => operand_next = false,
            Token::LParen if operand_next => open += 1,
            Token::RParen if !operand_next && open > 0 => open -= 1,
            Token::Plus | Token::Minus | Token::Star | Token::Slash | Token::Percent
                if !operand_next =>
            {
                operand_next = true
            }
            // The rest of the line's code, after a whole divisor.
            Token::RParen | Token::RBracket | Token::LBrace | Token::Comma
                if !operand_next && open == 0 =>
            {
                break;
            }
            _ => return None,
        }
        end = Some(span.end);
    }
    match (operand_next, open) {
        (false, 0) => end,
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn warned(src: &str) -> Vec<String> {
        comment_divisions(src, 0)
            .into_iter()
            .map(|d| d.message.clone())
            .collect()
    }

    #[test]
    fn a_ported_floor_division_is_named() {
        let src = "param gpus_per_node: int = 8\nlet nodes = 16 // gpus_per_node\n";
        assert_eq!(
            warned(src),
            ["`//` starts a comment: the line ends before `gpus_per_node`, which reads as a divisor"]
        );
        assert_eq!(warned("let x = (a + 1) // 2\n").len(), 1);
        assert_eq!(warned("for i in 0..n // 2 {\n}\n").len(), 1);
        assert_eq!(warned("let h = n // (2 * n) + 1\n").len(), 1);
    }

    #[test]
    fn comments_that_say_something_are_left() {
        for src in [
            "let n = 8 // TODO\n",
            "let n = 8 // 8 GPUs per node\n",
            "let n = 8 // n: the ranks\n",
            "let n = 8\n// n\n",
            "let n = 8 //\n",
            "let n = f( // n\n)\n",
            "let n = 8 // n +\n",
            // An op's or a keyword argument's name, after a call.
            "let ch = f()\nch.put(tb: 0) // put\n",
            "let ch = f()\nch.put(tb: 0) // tb\n",
        ] {
            assert!(warned(src).is_empty(), "{src}");
        }
    }
}
