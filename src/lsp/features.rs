//! The answers that read a document's analysis: hover, go to definition,
//! find references, the outline (document symbols) and formatting.

use super::position::Lines;
use super::std_files::std_file;
use super::uri::uri_of;
use super::{file_uri, Document};
use crate::check::index::{Def, DefKind, Target};
use crate::diag::Span;
use crate::driver::Analysis;
use crate::syntax::ast::{Pattern, Stmt, StmtKind};
use crate::vocab::{self, Receiver};
use lsp_types::*;

/// Where the body of the function written in `text` opens: its first `{`
/// outside parentheses and brackets.
fn body_brace(text: &str) -> Option<usize> {
    use crate::syntax::lexer::{lex, Token};
    let mut open = 0usize;
    for (start, token, _) in lex(text).map_while(Result::ok) {
        match token {
            Token::LParen | Token::LBracket => open += 1,
            Token::RParen | Token::RBracket => open = open.saturating_sub(1),
            Token::LBrace if open == 0 => return Some(start),
            _ => {}
        }
    }
    None
}

/// The text of `span` in its file.
fn text_of(analysis: &Analysis, span: Span) -> &str {
    analysis
        .sources
        .source(span.file)
        .get(span.start as usize..span.end as usize)
        .unwrap_or("")
}

/// What the name or expression under the cursor is: its definition, type,
/// or, for a builtin, its signature and documentation.
pub fn hover(doc: &Document, position: Position) -> Option<Hover> {
    let read = doc.readable();
    let (offset, analysis) = (read.offset(position)?, read.analysis);
    let index = &analysis.index;
    let (text, span) = if let Some(d) = index.def_of(0, offset) {
        let def = &index.defs[d];
        let span = index.ref_at(0, offset).map_or(def.span, |r| r.span);
        (describe_def(doc, analysis, def), span)
    } else if let Some(r) = index.ref_at(0, offset) {
        let text = match r.to {
            Target::Builtin(receiver, name) => describe_builtin(receiver, name)?,
            Target::Constant(name) => {
                // The type the checker gave it where it stands: `none` is a
                // sync setting or a replication policy, as its place wants.
                let checked = index
                    .type_at(0, offset)
                    .filter(|(span, _)| *span == r.span)
                    .map(|(_, ty)| ty.to_string());
                let ty = match checked {
                    Some(ty) => ty,
                    None => vocab::Constant::named(name)
                        .map(vocab::Constant::ty)?
                        .to_string(),
                };
                format!("```mscl\n{name}: {ty}\n```\na named constant")
            }
            Target::Def(_) => return None,
        };
        (text, r.span)
    } else if let Some((text, span)) = program_option_at(analysis, offset) {
        (text, span)
    } else if let Some((text, span)) =
        (analysis.program.as_ref()).and_then(|program| pipeline_word_at(&program.stmts, offset))
    {
        (text, span)
    } else if let Some((text, at)) =
        super::complete::keyword_argument(analysis.sources.source(0), offset as usize, analysis)
    {
        (text, Span::new(0, at.start, at.end))
    } else {
        let (span, ty) = index.type_at(0, offset)?;
        (format!("```mscl\n{ty}\n```"), *span)
    };
    Some(Hover {
        contents: HoverContents::Markup(MarkupContent {
            kind: MarkupKind::Markdown,
            value: text,
        }),
        range: Some(read.range(span)?),
    })
}

/// The program option whose name is at `offset` of the document (in its
/// `program` block): its type and what it does.
fn program_option_at(analysis: &Analysis, offset: u32) -> Option<(String, Span)> {
    let key = analysis
        .program
        .as_ref()?
        .stmts
        .iter()
        .find_map(|s| match &s.kind {
            StmtKind::Program { options, .. } => options
                .iter()
                .map(|o| &o.key)
                .find(|k| k.span.file == 0 && k.span.start <= offset && offset <= k.span.end),
            _ => None,
        })?;
    let option = vocab::program_option(&key.name)?;
    Some((
        format!(
            "```mscl\n{}: {}\n```\n{}",
            option.name, option.ty, option.doc
        ),
        key.span,
    ))
}

/// The `pipeline` keyword or one of its settings' names at `offset` of
/// the document, in a statement among `stmts` or in their blocks: what it
/// does, and its span.
fn pipeline_word_at(stmts: &[Stmt], offset: u32) -> Option<(String, Span)> {
    let stmt = stmts
        .iter()
        .find(|s| s.span.file == 0 && s.span.start <= offset && offset <= s.span.end)?;
    match &stmt.kind {
        StmtKind::Pipeline { args, body } => {
            let keyword = Span {
                end: stmt.span.start + "pipeline".len() as u32,
                ..stmt.span
            };
            if offset <= keyword.end {
                let settings = vocab::PIPELINE_SETTINGS.map(|s| format!("{}: int", s.name));
                let text = format!(
                    "```mscl\npipeline({}) {{ .. }}\n```\n{}",
                    settings.join(", "),
                    vocab::PIPELINE_DOC
                );
                return Some((text, keyword));
            }
            let named = args.iter().filter_map(|a| a.name.as_ref());
            if let Some(name) = named
                .into_iter()
                .find(|n| n.span.start <= offset && offset <= n.span.end)
            {
                let setting = vocab::PIPELINE_SETTINGS
                    .iter()
                    .find(|s| s.name == name.name)?;
                let text = format!("```mscl\n{}: int\n```\n{}", setting.name, setting.doc);
                return Some((text, name.span));
            }
            pipeline_word_at(body, offset)
        }
        StmtKind::For { body, .. } => pipeline_word_at(body, offset),
        StmtKind::If {
            then, otherwise, ..
        } => pipeline_word_at(then, offset).or_else(|| pipeline_word_at(otherwise, offset)),
        StmtKind::Fn(f) => pipeline_word_at(&f.body, offset),
        _ => None,
    }
}

/// The comment lines right above the line where `span` starts, without
/// their `//`, one paragraph: what the author wrote of a function, param
/// or `let` there (the standard library's functions are so described).
fn comment_above(analysis: &Analysis, span: Span) -> Option<String> {
    let text = analysis.sources.source(span.file);
    let line_start = text
        .get(..span.start as usize)?
        .rfind('\n')
        .map_or(0, |i| i + 1);
    let mut lines: Vec<&str> = text[..line_start]
        .lines()
        .rev()
        .map(str::trim)
        .take_while(|line| line.starts_with("//"))
        .map(|line| line.trim_start_matches('/').trim())
        .collect();
    lines.reverse();
    let paragraph = lines.join(" ").trim().to_string();
    (!paragraph.is_empty()).then_some(paragraph)
}

fn describe_def(doc: &Document, analysis: &Analysis, def: &Def) -> String {
    let described = describe_kind(doc, analysis, def);
    match def.kind {
        DefKind::Function | DefKind::Param | DefKind::Let => {
            match comment_above(analysis, def.span) {
                Some(comment) => format!("{described}\n{comment}"),
                None => described,
            }
        }
        DefKind::LoopVariable | DefKind::FunctionParam => described,
    }
}

fn describe_kind(doc: &Document, analysis: &Analysis, def: &Def) -> String {
    let (name, ty) = (&def.name, &def.ty);
    match def.kind {
        DefKind::Param => {
            let declared = analysis
                .program
                .as_ref()
                .map(|p| crate::driver::params::declared(&p.stmts))
                .unwrap_or_default();
            let param = declared.iter().find(|p| p.name == name);
            let default = param
                .map(|p| text_of(analysis, p.default.span).to_string())
                .unwrap_or_default();
            // `in [1, 2, 4]`: the values it may take, `msclc tune` tries.
            let values = param
                .and_then(|p| p.values)
                .map(|v| format!(" in {}", text_of(analysis, v.span)))
                .unwrap_or_default();
            let set = doc
                .defines
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone());
            let value = match set {
                Some(v) => format!("set to `{v}` by the editor's params (default `{default}`)"),
                None => format!("`{default}` (its default; the editor's params can set it)"),
            };
            format!("```mscl\nparam {name}: {ty}{values} = {default}\n```\nvalue: {value}")
        }
        DefKind::Let => format!("```mscl\nlet {name}: {ty}\n```"),
        DefKind::LoopVariable => format!("```mscl\n{name}: {ty}\n```\na loop variable"),
        DefKind::FunctionParam => format!("```mscl\n{name}: {ty}\n```\na function parameter"),
        DefKind::Function => format!("```mscl\n{}\n```", signature(analysis, def)),
    }
}

/// The signature of the function `def` names, as written: from `fn` to
/// the body's brace, the first outside the parameters' brackets (a
/// default may be a map, a string may hold a brace).
pub(crate) fn signature(analysis: &Analysis, def: &Def) -> String {
    let whole = function_span(analysis, def).map(|s| text_of(analysis, s));
    whole
        .and_then(|w| Some(&w[..body_brace(w)?]))
        .map_or(format!("fn {}(..) -> {}", def.name, def.ty), |s| {
            s.trim().to_string()
        })
}

/// The whole definition of the function `def` names.
fn function_span(analysis: &Analysis, def: &Def) -> Option<Span> {
    analysis
        .program
        .as_ref()?
        .functions()
        .find(|f| f.name.span == def.span)
        .map(|f| f.span)
}

/// A builtin's signature and its line of documentation.
pub(crate) fn describe_builtin(receiver: Receiver, name: &str) -> Option<String> {
    let sig = vocab::signature(receiver, name)?;
    Some(format!(
        "```mscl\n{}\n```\n{}",
        builtin_signature(&sig),
        sig.doc
    ))
}

/// A builtin's signature: `memory_channel.put(dst_chunk: chunk, ...) -> ()`.
pub(crate) fn builtin_signature(sig: &vocab::Signature) -> String {
    let params: Vec<String> = sig.params.iter().map(vocab::Param::declared).collect();
    let on = match sig.receiver {
        Receiver::Free => String::new(),
        other => format!("{}.", receiver_name(other)),
    };
    format!("{on}{}({}) -> {}", sig.name, params.join(", "), sig.ret)
}

fn receiver_name(receiver: Receiver) -> &'static str {
    match receiver {
        Receiver::Free => "",
        Receiver::Rank => "rank",
        Receiver::MemoryChannel => "memory_channel",
        Receiver::PortChannel => "port_channel",
        Receiver::SwitchChannel => "switch_channel",
        Receiver::SwitchView => "switch_view",
        Receiver::Semaphore => "semaphore",
    }
}

/// Where the name under the cursor is defined: a variable, param or
/// function, or the file an `import` names (a standard module, built in,
/// is written out to be read: `std_files.rs`).
pub fn definition(doc: &Document, position: Position) -> Option<Location> {
    let read = doc.readable();
    let (offset, analysis) = (read.offset(position)?, read.analysis);
    if let Some(d) = analysis.index.def_of(0, offset) {
        let span = analysis.index.defs[d].span;
        let uri = match file_uri(analysis, span.file, &doc.uri) {
            Some(uri) => uri,
            // The one file `file_uri` has no URI for, a standard module
            // (`std_file` gives no file for any other name).
            None => uri_of(&std_file(&analysis.sources.name(span.file)?)?)?,
        };
        return Some(Location::new(uri, read.range(span)?));
    }
    // An import's path: the start of the file it names.
    let program = analysis.program.as_ref()?;
    program.stmts.iter().find_map(|s| match &s.kind {
        StmtKind::Import { path, path_span }
            if path_span.start <= offset && offset <= path_span.end =>
        {
            let target = if crate::vocab::stdlib::is_module(path) {
                uri_of(&std_file(path)?)?
            } else {
                uri_of(&doc.path.parent()?.join(path))?
            };
            Some(Location::new(target, Range::default()))
        }
        _ => None,
    })
}

/// Every use of the name under the cursor (and its definition, if asked).
pub fn references(
    doc: &Document,
    position: Position,
    declaration: bool,
    others: &[&Document],
) -> Option<Vec<Location>> {
    let read = doc.readable();
    let (offset, analysis) = (read.offset(position)?, read.analysis);
    let d = analysis.index.def_of(0, offset)?;
    let def = &analysis.index.defs[d];
    let spans = declaration
        .then_some(def.span)
        .into_iter()
        .chain(analysis.index.uses_of(d));
    let mut found: Vec<Location> = spans
        .filter_map(|span| {
            Some(Location::new(
                file_uri(analysis, span.file, &doc.uri)?,
                read.range(span)?,
            ))
        })
        .collect();
    // A definition of this file is used by the open files that import it
    // too: each has it, at the same place of this file, in its analysis.
    if def.span.file == 0 {
        for other in others {
            let read = other.readable();
            let index = &read.analysis.index;
            let here = |file| file_uri(read.analysis, file, &other.uri).as_ref() == Some(&doc.uri);
            let same = index.defs.iter().position(|o| {
                o.name == def.name && o.span.start == def.span.start && here(o.span.file)
            });
            let uses = same.into_iter().flat_map(|d| index.uses_of(d));
            found.extend(uses.filter_map(|span| {
                Some(Location::new(
                    file_uri(read.analysis, span.file, &other.uri)?,
                    read.range(span)?,
                ))
            }));
        }
    }
    // In the order of the files and of their lines, as an editor lists
    // them, each place once.
    let place = |l: &Location| {
        let (start, end) = (l.range.start, l.range.end);
        (
            l.uri.as_str().to_owned(),
            start.line,
            start.character,
            end.line,
            end.character,
        )
    };
    found.sort_by_cached_key(place);
    found.dedup();
    Some(found)
}

/// The outline: the program block, params, functions and top-level lets.
pub fn symbols(doc: &Document) -> Vec<DocumentSymbol> {
    let read = doc.readable();
    let analysis = read.analysis;
    let Some(program) = &analysis.program else {
        return Vec::new();
    };
    // A symbol the edit since the analysis reaches into is left out.
    let symbol = |name: String, detail: Option<String>, kind, whole: Span, at: Span| {
        #[allow(deprecated)] // `deprecated` is a required field of the type
        Some(DocumentSymbol {
            name,
            detail,
            kind,
            tags: None,
            deprecated: None,
            range: read.range(whole)?,
            selection_range: read.range(at)?,
            children: None,
        })
    };
    let mut out = Vec::new();
    for stmt in &program.stmts {
        match &stmt.kind {
            StmtKind::Param(p) => out.push(symbol(
                p.name.name.clone(),
                Some(text_of(analysis, p.ty.span()).to_string()),
                SymbolKind::CONSTANT,
                stmt.span,
                p.name.span,
            )),
            StmtKind::Fn(f) => out.push(symbol(
                f.name.name.clone(),
                None,
                SymbolKind::FUNCTION,
                f.span,
                f.name.span,
            )),
            StmtKind::Program { name, .. } => out.push(symbol(
                format!("program {}", text_of(analysis, name.span)),
                None,
                SymbolKind::NAMESPACE,
                stmt.span,
                name.span,
            )),
            StmtKind::Let { pattern, .. } => {
                for id in pattern_names(pattern) {
                    out.push(symbol(
                        id.name.clone(),
                        None,
                        SymbolKind::VARIABLE,
                        stmt.span,
                        id.span,
                    ));
                }
            }
            _ => {}
        }
    }
    out.into_iter().flatten().collect()
}

fn pattern_names(p: &Pattern) -> Vec<&crate::syntax::ast::Ident> {
    match p {
        Pattern::Name(id) => vec![id],
        Pattern::Wildcard(_) => Vec::new(),
        Pattern::Tuple(items, _) => items.iter().flat_map(pattern_names).collect(),
    }
}

/// The document as `msclc fmt` writes it: one edit of the whole text, or
/// none when it does not parse (the diagnostics say why).
pub fn formatting(doc: &Document) -> Option<Vec<TextEdit>> {
    let formatted = crate::format::format_source(0, &doc.text).ok()?;
    if formatted == doc.text {
        return Some(Vec::new());
    }
    let whole = Lines::new(&doc.text).range(0, doc.text.len());
    Some(vec![TextEdit::new(whole, formatted)])
}

#[cfg(test)]
mod tests {
    use super::body_brace;

    /// A function's signature ends at its body's brace, not at a brace of
    /// a default argument or in a string.
    #[test]
    fn the_body_brace_is_the_first_outside_the_parameters() {
        for (text, signature) in [
            ("fn f() {}", "fn f() "),
            (
                "fn lookup(k: int, m: map[int, int] = {0: 1}) -> int { return m[k] }",
                "fn lookup(k: int, m: map[int, int] = {0: 1}) -> int ",
            ),
            (
                "fn tag(s: str = \"{x}\", n: int = 0) -> str {\n}",
                "fn tag(s: str = \"{x}\", n: int = 0) -> str ",
            ),
        ] {
            assert_eq!(body_brace(text).map(|at| &text[..at]), Some(signature));
        }
    }
}
