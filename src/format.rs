//! The canonical layout of `.mscl` source (`msclc fmt`).
//!
//! The formatter works on tokens, not on the syntax tree: newlines are not
//! significant in the grammar, and the lexer skips only whitespace and `//`
//! comments, so re-emitting every token's own text in the same order, with
//! nothing but whitespace changed between them, keeps the program's meaning
//! by construction. What lies between two tokens (the gap) is whitespace,
//! newlines and comments; the comments are kept, the whitespace is made
//! canonical:
//!
//! - Line breaks are the author's: none is added or removed between tokens.
//!   A run of blank lines becomes one; the file starts with no blank line,
//!   ends with exactly one newline, and no line ends in whitespace. Lines
//!   end as the file's first line ends: in LF, or in CRLF.
//! - Indentation is 4 spaces a level: a line is indented one level for
//!   each earlier line that holds a bracket (`(`, `[`, `{`) still open,
//!   however many it holds (the inner lines of `foo(a, [` are indented
//!   once). A line that starts with a closing bracket is indented as the
//!   lines around its bracket, so that in `], b)` the `]` lines up with
//!   `foo(a, [`. A line that continues an expression, because the line
//!   before ends in an operator or it starts with one (a binary operator,
//!   `=`, `->`, `.`, `..`, `in`, `where`) or with a `(` or `[` that calls
//!   or indexes what ends the line before, or because the line before ends
//!   a loop of a `for` header with `,`, is one level deeper, and so are
//!   the lines inside the brackets it opens, but for a block's braces: a
//!   block's statements are one level deeper than the line of the word
//!   that heads it (`if a &&` / `b {`, `let x =` / `if c {`), and its `}`
//!   lines up with that line.
//! - Within a line, tokens are one space apart, except:
//!   - none before `,` `:` `;` `)` `]`, nor around `.` and `..`;
//!   - none after `(` and `[`, nor after a unary `-` or `!` (but for one
//!     `-` after another: `- -1`);
//!   - none before a `(` or `[` that calls or indexes what precedes it (a
//!     name, a literal, or a closing bracket: `f(x)`, `a[i]`, `list[int]`,
//!     `rank(0).input[0..2]`), nor between `pipeline` and its `(`; one
//!     space before any other (`for (a, b) in`, `= [1, 2]`, `, (x, y)`);
//!   - braces hold their contents with a space inside, `{ x }`, and an
//!     empty pair is `{}`.
//! - A `-` is unary when what precedes it cannot end an operand. A `}` can
//!   (a map literal or an `if` expression), and no statement starts with
//!   `-`, `(` or `[`, so a `-` after `}` is binary and a `(` or `[` after it
//!   calls or indexes.
//! - A comment keeps its text, less trailing whitespace. After code it is
//!   one space from it, but for comments the author lined up: on lines
//!   one after another whose comments after code start in the same column
//!   of the source, they start in one column again, one space past the
//!   longest code among those lines. On a line of its own a comment is
//!   indented as a token there would be.
//!
//! The layout of a file depends only on its tokens, its comments, where
//! its lines break and which comments after code line up, all of which the
//! layout keeps: so formatting twice gives what formatting once gives.

use crate::diag::{Code, Diagnostic, Span};
use crate::syntax::{self, lexer, lexer::Token, MAX_SOURCE_BYTES};

/// `text` laid out canonically. Text that does not parse is refused with
/// the parser's diagnostic, whose span carries `file`: the layout of text
/// the compiler cannot read is anyone's guess.
pub fn format_source(file: u32, text: &str) -> Result<String, Diagnostic> {
    syntax::parse(file, text)?;
    // A file that starts with a byte-order mark keeps it, as its encoding.
    let (mark, body) = match text.strip_prefix('\u{FEFF}') {
        Some(body) => ("\u{FEFF}", body),
        None => ("", text),
    };
    // A file whose lines end in CRLF (judged by its first) keeps them.
    let crlf = text.find('\n').is_some_and(|i| text[..i].ends_with('\r'));
    let laid_out = format!(
        "{mark}{}",
        layout(body, crlf).map_err(|at| too_large(file, mark.len() + at))?
    );
    Ok(if crlf {
        laid_out.replace('\n', "\r\n")
    } else {
        laid_out
    })
}

/// `text`, which parses, laid out canonically in one pass over its tokens;
/// or where the layout (with its lines ending in CRLF, if `crlf`) passes
/// [`MAX_SOURCE_BYTES`]: indentation grows a file, and a file msclc would
/// no longer read is no layout of it.
fn layout(text: &str, crlf: bool) -> Result<String, usize> {
    let mut writer = Writer::with_capacity(text.len());
    let mut end_of_previous = 0;
    // The `\r`s the line ends will gain.
    let mut returns = 0;
    // The text parsed, so every token lexes; `flatten` skips nothing.
    for (start, token, end) in lexer::lex(text).flatten() {
        let class = Class::of(&token);
        let gap = &text[end_of_previous..start];
        returns += gap.matches('\n').count() * usize::from(crlf);
        writer.gap(text, end_of_previous, start, Some(class));
        // The words whose block's braces follow them (`if c {`, `} else {`).
        let header = matches!(
            token,
            Token::If | Token::Else | Token::For | Token::Fn | Token::Program | Token::Pipeline
        );
        writer.token(class, &text[start..end], header);
        end_of_previous = end;
        if (writer.out.len() + returns) as u64 > MAX_SOURCE_BYTES {
            return Err(start);
        }
    }
    writer.gap(text, end_of_previous, text.len(), None);
    let out = writer.finish();
    match (out.len() + out.matches('\n').count() * usize::from(crlf)) as u64 {
        bytes if bytes > MAX_SOURCE_BYTES => Err(text.len()),
        _ => Ok(out),
    }
}

/// The column (in characters) of byte `at` of `text`: the characters from
/// the start of its line. Asked only of comments after code, one a line at
/// most, so that all the counts together read the text once.
fn column(text: &str, at: usize) -> usize {
    let line_start = text[..at].rfind(['\n', '\r']).map_or(0, |i| i + 1);
    text[line_start..at].chars().count()
}

/// The error of a file whose layout passes [`MAX_SOURCE_BYTES`] at byte
/// `at` of its text.
fn too_large(file: u32, at: usize) -> Diagnostic {
    Diagnostic::error(
        Code::Limit,
        Span::new(file, at, at),
        format!(
            "laid out, this file would be larger than {} bytes, the most msclc reads",
            MAX_SOURCE_BYTES
        ),
        "its layout passes the limit here",
    )
    .with_note("help: each line is indented four spaces for every bracket open around it: close some of them, or split the file with `import`")
}

/// What a token is, as far as the spaces around it go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    /// A name or a literal (`true` and `false` included).
    Operand,
    /// A keyword, which a space separates from what it introduces.
    Keyword,
    /// `else`, after which a brace opens a block (after another keyword,
    /// `return {`, it may open a map).
    Else,
    /// `pipeline`, whose arguments follow it like a call's.
    CallLikeKeyword,
    /// `(` or `[`.
    Open,
    /// `)` or `]`.
    Close,
    OpenBrace,
    CloseBrace,
    /// `,` `:` `;`, which end what precedes them.
    Separator,
    /// `.` `..`, which bind what they join.
    Joiner,
    /// A binary operator, `=`, `->`, `in` or `where`.
    Operator,
    /// `-`, binary or unary by what precedes it (see `Writer::in_context`).
    Minus,
    /// A unary `!`.
    Prefix,
    /// A unary `-`: as `!`, but apart from another (`- -1`, not `--1`,
    /// which reads as a decrement).
    Negate,
}

impl Class {
    fn of(token: &Token<'_>) -> Class {
        use Token::*;
        match token {
            // (A fraction or an unclosed string is never a token.)
            Ident(_) | Int(_) | Str(_) | True | False | Fraction | UnclosedString => Class::Operand,
            Param | Program | Import | Fn | Let | Return | For | If => Class::Keyword,
            Else => Class::Else,
            // Between two operands, as a binary operator is (`x in list`,
            // `for i in 0..n where i > 0`): a line may break on either side.
            In | Where => Class::Operator,
            Pipeline => Class::CallLikeKeyword,
            LParen | LBracket => Class::Open,
            RParen | RBracket => Class::Close,
            LBrace => Class::OpenBrace,
            RBrace => Class::CloseBrace,
            Comma | Colon | Semi => Class::Separator,
            Dot | DotDot => Class::Joiner,
            Minus => Class::Minus,
            Bang => Class::Prefix,
            Arrow | Assign | EqEq | NotEq | Lt | Le | Gt | Ge | Plus | Star | Slash | Percent
            | Shl | Shr | Amp | Pipe | Caret | AndAnd | OrOr => Class::Operator,
        }
    }

    /// Whether a token of this class can be the last of an operand, so that
    /// a `-` after it subtracts and a `(` or `[` after it calls or indexes.
    fn ends_operand(self) -> bool {
        matches!(self, Class::Operand | Class::Close | Class::CloseBrace)
    }

    fn opens(self) -> bool {
        matches!(self, Class::Open | Class::OpenBrace)
    }

    fn closes(self) -> bool {
        matches!(self, Class::Close | Class::CloseBrace)
    }
}

/// Whether one space separates a token of class `before` from the next, of
/// class `after`, on the same line (see the module documentation).
fn space_between(before: Class, after: Class) -> bool {
    use Class::*;
    match (before, after) {
        (OpenBrace, CloseBrace) => false,
        (OpenBrace, _) | (_, CloseBrace) => true,
        (Negate, Negate) => true,
        (Open | Joiner | Prefix | Negate, _) => false,
        (_, Close | Separator | Joiner) => false,
        (before, Open) => !(before.ends_operand() || before == CallLikeKeyword),
        _ => true,
    }
}

const INDENT: &str = "    ";

/// Builds the formatted text line by line, from the tokens, comments and
/// newlines of the source in order.
struct Writer {
    out: String,
    /// Source lines seen so far: names the line a bracket was opened on.
    line_number: usize,
    /// Whether the current line has had a token or comment yet.
    line_started: bool,
    /// Whether the current line continues an expression from the line
    /// before (see `Writer::continues`).
    line_continues: bool,
    /// The current line's indentation, in levels.
    line_indent: usize,
    /// Brackets open, all lines together.
    depth: usize,
    /// The words that head a block (`if`, `for`, `else`, ...) whose brace
    /// has not come yet: the brackets open at each and the indentation of
    /// its line, which the block's statements are one level under. (A
    /// comprehension's `for` is deeper than any brace it could head.)
    headers: Vec<(usize, usize)>,
    /// Whether a blank line separates the last line written from the next:
    /// set by an empty source line, kept only between two written lines.
    blank_line_pending: bool,
    /// The lines holding brackets still open, outermost first.
    open_lines: Vec<OpenLine>,
    /// The class of the last token, wherever it was (a `-` at the start of
    /// a line is unary or not by what ended the line before).
    previous: Option<Class>,
    /// Lines written so far, and where the current one starts in `out`.
    out_lines: usize,
    out_line_start: usize,
    /// The comments after code written, in order: lined up at the end.
    after_code: Vec<CommentAfterCode>,
}

/// A comment after code on a line written: the line, where it and its
/// code end in `out`, and the comment's column in the source.
struct CommentAfterCode {
    line: usize,
    line_start: usize,
    code_end: usize,
    source_column: usize,
}

/// A line that holds brackets still open, and the indentation of the
/// lines inside them.
struct OpenLine {
    line_number: usize,
    open_brackets: usize,
    inner_indent: usize,
}

impl Writer {
    fn with_capacity(bytes: usize) -> Writer {
        Writer {
            out: String::with_capacity(bytes + bytes / 8),
            line_number: 0,
            line_started: false,
            line_continues: false,
            line_indent: 0,
            depth: 0,
            headers: Vec::new(),
            blank_line_pending: false,
            open_lines: Vec::new(),
            previous: None,
            out_lines: 0,
            out_line_start: 0,
            after_code: Vec::new(),
        }
    }

    /// The whitespace and comments of `text` from `from` to `to`, before
    /// the next token, of class `next` (`None` at the end of the text):
    /// only its newlines and comments matter.
    fn gap(&mut self, text: &str, from: usize, to: usize, next: Option<Class>) {
        let mut rest = &text[from..to];
        while let Some(at) = rest.find(['\n', '\r', '/']) {
            match rest.as_bytes()[at] {
                // A line ends in \n, \r\n or a lone \r (as the lexer ends a
                // comment there).
                b'\n' => self.newline(),
                b'\r' if rest.as_bytes().get(at + 1) != Some(&b'\n') => self.newline(),
                b'\r' => {}
                _ => {
                    // A `/` in a gap starts a `//` comment, which runs to
                    // the end of its line.
                    let end = rest[at..].find(['\n', '\r']).map_or(rest.len(), |n| at + n);
                    let source_column = || column(text, to - rest.len() + at);
                    self.comment(&rest[at..end], source_column, next);
                    rest = &rest[end..];
                    continue;
                }
            }
            rest = &rest[at + 1..];
        }
    }

    fn newline(&mut self) {
        if self.line_started {
            self.out.push('\n');
            self.out_lines += 1;
            self.line_started = false;
        } else if !self.out.is_empty() {
            self.blank_line_pending = true;
        }
        self.line_number += 1;
    }

    /// A comment, before a token of class `next`: on a line of its own, it
    /// is indented as that token would be if it started the line, or, if
    /// that token closes a bracket, as the lines inside (the comment is
    /// about them).
    fn comment(
        &mut self,
        comment: &str,
        source_column: impl FnOnce() -> usize,
        next: Option<Class>,
    ) {
        if self.line_started {
            self.after_code.push(CommentAfterCode {
                line: self.out_lines,
                line_start: self.out_line_start,
                code_end: self.out.len(),
                source_column: source_column(),
            });
            self.out.push(' ');
        } else {
            let next = next.map(|class| self.in_context(class));
            let continues = self.continues(next);
            self.start_line(self.inner_indent() + usize::from(continues), continues);
        }
        self.out.push_str(comment.trim_end());
    }

    /// A token of `class`, its `text`; `header`: a word that heads a block.
    fn token(&mut self, class: Class, text: &str, header: bool) {
        let class = self.in_context(class);
        if !self.line_started {
            if class.closes() {
                // A closing bracket first on its line is indented as the
                // lines around its bracket: as the line that opened it,
                // unless that line started by closing others.
                self.start_line(self.inner_indent().saturating_sub(1), false);
            } else {
                let continues = self.continues(Some(class));
                self.start_line(self.inner_indent() + usize::from(continues), continues);
            }
        } else if self
            .previous
            .is_some_and(|before| space_between(before, class))
        {
            self.out.push(' ');
        }
        self.out.push_str(text);
        if header {
            self.headers.push((self.depth, self.line_indent));
        }
        if class.opens() {
            // A brace after an operand or `else` opens a block (`n < 5 {`,
            // `-> int {`, `} else {`); elsewhere a map.
            let block = class == Class::OpenBrace
                && self
                    .previous
                    .is_some_and(|before| before.ends_operand() || before == Class::Else);
            let heading = if block { self.block_header() } else { None };
            self.open_bracket(heading);
        } else if class.closes() {
            self.close_bracket();
        }
        self.previous = Some(class);
    }

    /// `class` as the token after the previous one: a `-` after an operand
    /// subtracts, any other is unary.
    fn in_context(&self, class: Class) -> Class {
        match class {
            Class::Minus if self.previous.is_some_and(Class::ends_operand) => Class::Operator,
            Class::Minus => Class::Negate,
            _ => class,
        }
    }

    /// The indentation of a line inside the innermost open bracket.
    fn inner_indent(&self) -> usize {
        self.open_lines.last().map_or(0, |line| line.inner_indent)
    }

    /// Whether a line that starts with a token of class `first` continues
    /// the line before: that line ends in an operator that wants its right
    /// operand, or in a `,` between the loops of a `for` header (no other
    /// `,` outside brackets is in a header), or this one starts with an
    /// operator that takes the left from there, or with a `(` or `[` that
    /// calls or indexes it (no statement starts with one). Such a line is
    /// indented one more level.
    fn continues(&self, first: Option<Class>) -> bool {
        let wants_more = |class| {
            matches!(
                class,
                Class::Operator | Class::Prefix | Class::Negate | Class::Joiner
            )
        };
        let in_header = self
            .headers
            .last()
            .is_some_and(|&(depth, _)| depth == self.depth);
        let ends_a_loop = |class| class == Class::Separator && in_header;
        let takes_left = |class| match class {
            Class::Operator | Class::Joiner => true,
            Class::Open => self.previous.is_some_and(Class::ends_operand),
            _ => false,
        };
        self.previous
            .is_some_and(|class| wants_more(class) || ends_a_loop(class))
            || first.is_some_and(takes_left)
    }

    /// The indentation of the line of the word that heads the block whose
    /// brace opens now, at this bracket depth (the words inside brackets
    /// closed since, which headed none, are gone: `close_bracket`).
    fn block_header(&mut self) -> Option<usize> {
        match self.headers.last() {
            Some(&(depth, indent)) if depth == self.depth => {
                self.headers.pop();
                Some(indent)
            }
            _ => None,
        }
    }

    fn start_line(&mut self, indent: usize, continues: bool) {
        if std::mem::take(&mut self.blank_line_pending) {
            self.out.push('\n');
            self.out_lines += 1;
        }
        self.out_line_start = self.out.len();
        for _ in 0..indent {
            self.out.push_str(INDENT);
        }
        self.line_started = true;
        self.line_continues = continues;
        self.line_indent = indent;
    }

    /// A bracket opened; `heading`: for a brace that opens a block, the
    /// indentation of the line of the word that heads it.
    fn open_bracket(&mut self, heading: Option<usize>) {
        self.depth += 1;
        match self.open_lines.last_mut() {
            Some(line) if line.line_number == self.line_number => line.open_brackets += 1,
            // The lines inside are one level deeper than those around the
            // bracket, or two on a continuation line: the brackets closed
            // earlier on this line (`b) {`) do not count. A block's
            // statements are one level deeper than the line of the word
            // that heads it, whose header may have run over lines (`if a
            // &&` / `b {`), and its `}` lines up with that line.
            _ => self.open_lines.push(OpenLine {
                line_number: self.line_number,
                open_brackets: 1,
                inner_indent: match heading {
                    Some(indent) => indent + 1,
                    None => self.inner_indent() + 1 + usize::from(self.line_continues),
                },
            }),
        }
    }

    fn close_bracket(&mut self) {
        self.depth = self.depth.saturating_sub(1);
        // A word inside the brackets closed headed no block (`[y for y in
        // z]`): the block's brace comes at its own depth or not at all.
        while self
            .headers
            .last()
            .is_some_and(|&(depth, _)| depth > self.depth)
        {
            self.headers.pop();
        }
        if let Some(line) = self.open_lines.last_mut() {
            line.open_brackets -= 1;
            if line.open_brackets == 0 {
                self.open_lines.pop();
            }
        }
    }

    fn finish(mut self) -> String {
        if self.line_started {
            self.out.push('\n');
        }
        line_up_comments(self.out, &self.after_code)
    }
}

/// `out` with the comments after code that the author lined up in one
/// column put in one column again: a run of them on lines one after
/// another, each at the same column of the source, starts one space past
/// the run's longest code. (Lined up so, the run is such a run again when
/// formatted again, and comes out the same.)
fn line_up_comments(out: String, comments: &[CommentAfterCode]) -> String {
    let in_a_run = |w: &[CommentAfterCode]| {
        w[1].line == w[0].line + 1 && w[1].source_column == w[0].source_column
    };
    // Most files have no such run: their layout is done.
    if !comments.windows(2).any(in_a_run) {
        return out;
    }
    let mut lined_up = String::with_capacity(out.len());
    let mut copied = 0;
    let mut rest = comments;
    while !rest.is_empty() {
        let run = 1 + rest.windows(2).take_while(|w| in_a_run(w)).count();
        let width = |c: &CommentAfterCode| out[c.line_start..c.code_end].chars().count();
        let widest = rest[..run].iter().map(width).max().unwrap_or(0);
        for c in &rest[..run] {
            lined_up.push_str(&out[copied..c.code_end]);
            lined_up.extend(std::iter::repeat_n(' ', widest - width(c)));
            copied = c.code_end;
        }
        rest = &rest[run..];
    }
    lined_up.push_str(&out[copied..]);
    lined_up
}

#[cfg(test)]
mod tests;
