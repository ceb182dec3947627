//! What a parse error most likely means, where the grammar's "expected
//! one of" would mislead: a mistake people make often enough, told by the
//! token the parser stopped at and the code (not the comments) of the
//! lines before it. Each rule is narrow: a hint that fires on another
//! mistake misleads more than the grammar's list.

use super::lexer::Token;
use crate::diag::{Code, Diagnostic, Span};

/// A diagnostic for the parser stopping at `tok` (bytes `at..end` of
/// `src`, wanting one of `expected`), where the mistake is a known one.
pub(super) fn likely_meaning(
    file: u32,
    src: &str,
    (at, end): (usize, usize),
    tok: &Token<'_>,
    expected: &[String],
) -> Option<Diagnostic> {
    let wants = |what: &str| expected.iter().any(|e| e.trim_matches('"') == what);
    let error = |(start, end): (usize, usize), message: &str, label: &str, help: &str| {
        Diagnostic::error(Code::Syntax, Span::new(file, start, end), message, label).with_note(help)
    };
    // A JSON execution plan handed over as a program: it opens with `{`.
    if matches!(tok, Token::LBrace) && src[..at].trim().is_empty() {
        return Some(error(
            (at, end),
            "this is not a program: it opens as a JSON execution plan does",
            "a program starts with its statements",
            "help: msclc reads a plan from a file whose name ends in `.json` (as `msclc sim plan.json`); name the file so, rather than piping it or naming it otherwise",
        ));
    }
    // The code of the token's line before it, and where that line starts.
    let line_start = src[..at].rfind(['\n', '\r']).map_or(0, |i| i + 1);
    let line = code_of(&src[line_start..at]);
    // `param n: int` and then the next line: the default left out.
    if wants("=") && wants("in") {
        if let Some((start, declared)) = last_code_line(&src[..at]) {
            if declared.trim_start().starts_with("param ") {
                let end = start + declared.trim_end().len();
                return Some(error(
                    (end, end),
                    "a param needs a default value",
                    "add ` = VALUE` here",
                    "help: `param n: int = 8`: the default is what a compile without `-D n=...` uses",
                ));
            }
        }
    }
    // `program {`: the block is read as a map, and fails at its first `=`.
    if matches!(tok, Token::Assign) {
        if let Some(brace) = unnamed_program(src, at) {
            return Some(error(
                (brace, brace + 1),
                "the program block needs a name",
                "no name before this brace",
                "help: `program \"allreduce_8\" { collective = ... }`: the name (any string expression, a param most often) is the plan's",
            ));
        }
    }
    // `while cond {`: the word, then an expression, read as two statements.
    let opening = line.trim_start();
    if opening.starts_with("while") && opening["while".len()..].starts_with([' ', '(', '\t']) {
        let start = line_start + (line.len() - opening.len());
        return Some(error(
            (start, start + "while".len()),
            "there is no `while` loop",
            "not a word of .mscl",
            "help: loop over a range or a list with `for x in 0..n { ... }` (a loop's length is known before it runs)",
        ));
    }
    if is_comparison(tok) && compares_just_before(line) {
        return Some(error(
            (at, end),
            "comparisons do not chain",
            "a second comparison",
            "help: join them with `&&`: `a < b && b < c`",
        ));
    }
    // Python's spellings, at the token they leave the parser stuck on.
    let open = |opening: char, closing: char| {
        let depth = line.chars().fold(0i32, |d, c| match c {
            c if c == opening => d + 1,
            c if c == closing => d - 1,
            _ => d,
        });
        depth > 0
    };
    let ends_with_name = line
        .trim_end()
        .ends_with(|c: char| c.is_alphanumeric() || c == '_');
    // `copy(a, b, tb=0)`: a keyword argument with `=`.
    if matches!(tok, Token::Assign) && open('(', ')') && ends_with_name {
        return Some(error(
            (at, end),
            "a keyword argument is written `name: value`",
            "`:` here, not `=`",
            "help: `tb: 0`, where Python writes `tb=0`",
        ));
    }
    // `b[0:2]`: a Python slice.
    if matches!(tok, Token::Colon) && open('[', ']') {
        return Some(error(
            (at, end),
            "a slice is written `[start..end]`",
            "`..` here, not `:`",
            "help: `b[0..2]` is chunks 0 and 1, where Python writes `b[0:2]`; a whole buffer `b` is `b[0..b.size]`",
        ));
    }
    // `not x`, `a and b`, `a or b`: Python's words for `!`, `&&`, `||`.
    let last_word = line
        .trim_end()
        .rsplit(|c: char| !(c.is_alphanumeric() || c == '_'))
        .next()
        .unwrap_or("");
    if line.ends_with(char::is_whitespace) {
        let instead = match last_word {
            "not" => Some("!"),
            "and" => Some("&&"),
            "or" => Some("||"),
            _ => None,
        };
        if let Some(instead) = instead {
            let start = line_start + line.trim_end().len() - last_word.len();
            return Some(error(
                (start, start + last_word.len()),
                &format!("`{last_word}` is Python's: write `{instead}`"),
                "not an operator of .mscl",
                &format!("help: the logical operators are `!`, `&&` and `||` (`{instead}` for `{last_word}`)"),
            ));
        }
    }
    // `a if c else b`: Python's conditional value.
    if matches!(tok, Token::Else) {
        if let Some(i) = line.rfind(" if ") {
            let (before, cond) = (line[..i].trim_end(), &line[i..]);
            // A value ends in a name, a number, a bracket or a string.
            let value_before = before
                .ends_with(|c: char| c.is_alphanumeric() || matches!(c, '_' | ')' | ']' | '"'));
            if value_before && before.contains('=') && !cond.contains('{') {
                return Some(error(
                    (at, end),
                    "a conditional value is written `if c { a } else { b }`",
                    "Python's `a if c else b`",
                    "help: `let x = if c { a } else { b }`: the condition first, each value in braces",
                ));
            }
        }
    }
    // `a ** b`: no power operator.
    if matches!(tok, Token::Star) && line.trim_end().ends_with('*') {
        return Some(error(
            (at - 1, end),
            "there is no `**`",
            "not an operator of .mscl",
            "help: a power of two is a shift, `1 << k`; other powers, multiply",
        ));
    }
    // `x += 1`, `x++`: an assignment spelt as in C or Python.
    let operator = match tok {
        Token::Plus => Some("+"),
        Token::Minus => Some("-"),
        Token::Star => Some("*"),
        Token::Slash => Some("/"),
        Token::Percent => Some("%"),
        Token::Shl => Some("<<"),
        Token::Shr => Some(">>"),
        _ => None,
    };
    let name = line.trim();
    let plain_name = !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_');
    if let (Some(op), true) = (operator, plain_name) {
        let after = &src[end..];
        let doubled = matches!(op, "+" | "-") && after.starts_with(op);
        if (after.starts_with('=') && !after.starts_with("==")) || doubled {
            let (spelt, value) = match doubled {
                true => (format!("{op}{op}"), "1".to_string()),
                false => {
                    let rest = &after[1..];
                    let rest =
                        code_of(&rest[..rest.find(['\n', '\r']).unwrap_or(rest.len())]).trim();
                    let value = if rest.is_empty() { "..." } else { rest };
                    (format!("{op}="), format!("({value})"))
                }
            };
            return Some(error(
                (at, end + 1),
                &format!("there is no `{spelt}`"),
                "not an operator of .mscl",
                &format!("help: assign the new value whole: `{name} = {name} {op} {value}`"),
            ));
        }
    }
    // `let x: int = 1`: a type written on a `let`.
    if matches!(tok, Token::Colon) && wants("=") && line.trim_start().starts_with("let ") {
        return Some(error(
            (at, end),
            "a `let` is written without a type",
            "no type here",
            "help: `let x = 1`: a variable has its value's type (types are written on params and functions only)",
        ));
    }
    // The code before the token: on its line, or on the last line that has
    // code where the token opens its line.
    let code_before = match line.trim().is_empty() {
        true => last_code_line(&src[..line_start]).map(|(_, code)| code),
        false => Some(line),
    };
    // `fn f() -> int { x }`: a value left at the end of a function.
    if wants("return") && !matches!(tok, Token::RBrace) {
        if let Some(before) = code_before {
            let before = before.trim();
            if before.starts_with("fn ") && before.contains("->") && before.ends_with('{') {
                return Some(error(
                    (at, end),
                    "a function gives its value with `return`",
                    "a value where a statement goes",
                    "help: `return x`: a block's last value is not the function's, as it is in Rust",
                ));
            }
        }
    }
    // `return; let x = 1`: a statement after a `return` without a value,
    // which the grammar lets end its block only.
    if wants("}") && !matches!(tok, Token::RBrace) {
        let before = code_before.map(|b| b.trim_end().trim_end_matches(';').trim_end());
        let bare_return = before
            .and_then(|b| b.strip_suffix("return"))
            .is_some_and(|b| !b.ends_with(|c: char| c.is_alphanumeric() || c == '_'));
        if bare_return {
            return Some(error(
                (at, end),
                "a `return` without a value ends its block",
                "a statement after `return`",
                "help: nothing after the `return` would run: move this before it, or put the `return` in an `if`",
            ));
        }
    }
    // `let x = 1;;`: an empty statement.
    if matches!(tok, Token::Semi) && line.trim_end().ends_with(';') {
        return Some(error(
            (at, end),
            "an empty statement",
            "a second `;`",
            "help: a `;` ends one statement (a line break does too): delete this one",
        ));
    }
    if matches!(tok, Token::Slash) && src[at..].starts_with("/*") {
        return Some(error(
            (at, at + 2),
            "there are no `/* */` comments",
            "not a comment",
            "help: a comment starts with `//` and runs to the end of its line",
        ));
    }
    None
}

/// `line` without its `//` comment.
fn code_of(line: &str) -> &str {
    super::lexer::code_of_line(line).0
}

/// The last line of `text` with code on it (its comment cut), and where
/// it starts.
fn last_code_line(text: &str) -> Option<(usize, &str)> {
    let mut end = text.len();
    loop {
        let start = text[..end].rfind(['\n', '\r']).map_or(0, |i| i + 1);
        let code = code_of(&text[start..end]);
        if !code.trim().is_empty() {
            return Some((start, code));
        }
        end = start.checked_sub(1)?;
    }
}

/// The `{` of a `program {` with no name, still open at byte `at`: the
/// line it is on starts with `program`.
fn unnamed_program(src: &str, at: usize) -> Option<usize> {
    let mut end = at;
    loop {
        let start = src[..end].rfind(['\n', '\r']).map_or(0, |i| i + 1);
        let code = code_of(&src[start..end]);
        let opening = code.trim_start();
        if let Some(rest) = opening.strip_prefix("program") {
            let brace = rest.trim_start();
            if !brace.starts_with('{') || src[start..at].contains('}') {
                return None;
            }
            return Some(start + (code.len() - brace.len()));
        }
        end = start.checked_sub(1)?;
    }
}

fn is_comparison(t: &Token<'_>) -> bool {
    matches!(
        t,
        Token::Lt | Token::Le | Token::Gt | Token::Ge | Token::EqEq | Token::NotEq
    )
}

/// Whether `line` (the code before the token) ends with a comparison and
/// one plain operand: `a < b` then another comparison, not `-> bool {`
/// or `where i != 1 { let y`.
fn compares_just_before(line: &str) -> bool {
    let bytes = line.as_bytes();
    let mut i = line.len();
    while i > 0 {
        i -= 1;
        let c = bytes[i];
        let plain = c.is_ascii_alphanumeric() || b" _.()[]+*%".contains(&c);
        let operator = match c {
            b'<' | b'>' => !(c == b'>' && i > 0 && bytes[i - 1] == b'-'),
            b'=' => i > 0 && b"=!<>".contains(&bytes[i - 1]),
            _ => false,
        };
        if operator {
            return line[i + 1..]
                .trim()
                .chars()
                .any(|c| c.is_ascii_alphanumeric());
        }
        if !plain {
            return false;
        }
    }
    false
}

/// The innermost `(`, `[` or `{` that `src` leaves open (where it is,
/// itself, and the bracket that closes it): a file that ends in the
/// middle of a statement most often does so because of one.
pub(super) fn unclosed_bracket(src: &str) -> Option<((usize, usize), &'static str, &'static str)> {
    let mut open = Vec::new();
    for (start, tok, end) in super::lexer::lex(src).map_while(Result::ok) {
        match tok {
            Token::LParen => open.push(((start, end), "(", ")")),
            Token::LBracket => open.push(((start, end), "[", "]")),
            Token::LBrace => open.push(((start, end), "{", "}")),
            Token::RParen | Token::RBracket | Token::RBrace => {
                open.pop();
            }
            _ => {}
        }
    }
    open.pop()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_comparison_chain_is_told_from_other_slips() {
        for (line, chained) in [
            ("let b = 1 < 2 ", true),
            ("let b = x == y ", true),
            ("if (a + 1) <= b[2] ", true),
            ("if x < 2 { x ", false),
            ("fn f(x: int) -> bool { return ", false),
            ("for i in 0..n where i != 1 { let y ", false),
            ("let b = 1 < ", false),
        ] {
            assert_eq!(compares_just_before(line), chained, "{line}");
        }
        assert_eq!(code_of("param n: int // ranks"), "param n: int ");
        assert_eq!(code_of("let s = \"a//b\" // c"), "let s = \"a//b\" ");
    }
}
