//! Completion. While a name is typed the text seldom parses (`ch.` or
//! `copy(` alone do not), so the place is read from the text before the
//! cursor: after a `.`, the receiver's type gives its methods and fields;
//! inside a call's parentheses, the callee gives its keyword arguments;
//! anywhere, the names in scope (from the last analysis that parsed), the
//! functions, builtins, constants and keywords.

use super::features::builtin_signature;
use super::position::Lines;
use super::Document;
use crate::check::index::DefKind;
use crate::driver::Analysis;
use crate::vocab::{self, Receiver, Type};
use lsp_types::*;

/// The completions at `position`.
pub fn items(doc: &Document, position: Position) -> Vec<CompletionItem> {
    let before = &doc.text[..Lines::new(&doc.text).offset(position)];
    if in_comment_or_string(before) {
        return Vec::new();
    }
    let read = doc.readable();
    let analysis = read.analysis;
    // Scope where the analysis had this place (at the edit's start, for
    // what is being typed).
    let offset = read.offset_near(position);
    // The part of a name already typed is the client's to filter by.
    let start = before.trim_end_matches(is_name_char);
    if let Some(receiver) = start.strip_suffix('.') {
        return match type_of(receiver, analysis, offset) {
            Some(ty) => members(&ty),
            None => Vec::new(),
        };
    }
    let mut out = Vec::new();
    if let Some(callee) = open_call(start) {
        for name in params_of(callee, analysis, offset) {
            out.push(item(
                format!("{name}:"),
                CompletionItemKind::PROPERTY,
                Some(format!("keyword argument of `{}`", callee_name(callee))),
                Some(format!("{name}: ")),
            ));
        }
    }
    let index = &analysis.index;
    let mut seen = std::collections::HashSet::new();
    // Innermost first: a name shadows the same name further out.
    let visible: Vec<_> = index.visible_at(0, offset).collect();
    for def in visible.into_iter().rev() {
        if !seen.insert(def.name.clone()) {
            continue;
        }
        let (kind, detail) = match def.kind {
            DefKind::Function => (CompletionItemKind::FUNCTION, function(doc, analysis, def)),
            DefKind::Param => (CompletionItemKind::CONSTANT, def.ty.to_string()),
            _ => (CompletionItemKind::VARIABLE, def.ty.to_string()),
        };
        out.push(item(def.name.clone(), kind, Some(detail), None));
    }
    // The functions of the files it imports (the standard library's
    // too), usable anywhere after the import.
    let imported = index
        .defs
        .iter()
        .filter(|d| d.kind == DefKind::Function && d.span.file != 0);
    for def in imported {
        if seen.insert(def.name.clone()) {
            let detail = function(doc, analysis, def);
            out.push(item(
                def.name.clone(),
                CompletionItemKind::FUNCTION,
                Some(detail),
                None,
            ));
        }
    }
    for sig in vocab::signatures()
        .into_iter()
        .filter(|s| s.receiver == Receiver::Free)
    {
        out.push(builtin_item(&sig, CompletionItemKind::FUNCTION));
    }
    for (name, constant) in vocab::CONSTANTS {
        out.push(item(
            name.to_string(),
            CompletionItemKind::CONSTANT,
            Some(constant.ty().to_string()),
            None,
        ));
    }
    for keyword in keywords_at(start) {
        out.push(item(
            keyword.to_string(),
            CompletionItemKind::KEYWORD,
            None,
            None,
        ));
    }
    out
}

/// The keywords that may come where a name is being typed after `before`
/// (the text before it): those that begin a statement at a line's start,
/// `else` after a block's `}`, and elsewhere those of an expression (a
/// comprehension's `for ... in ... where`, `true`, `false`).
fn keywords_at(before: &str) -> &'static [&'static str] {
    let line = before.rsplit(['\n', '\r']).next().unwrap_or("").trim();
    if line.is_empty() || line.ends_with('{') {
        &[
            "param", "program", "import", "fn", "let", "return", "for", "if", "pipeline",
        ]
    } else if line.ends_with('}') {
        &["else"]
    } else {
        &["true", "false", "for", "in", "where"]
    }
}

/// A builtin as completion offers it: its signature beside its name, its
/// line of documentation below.
fn builtin_item(sig: &vocab::Signature, kind: CompletionItemKind) -> CompletionItem {
    CompletionItem {
        documentation: Some(Documentation::String(sig.doc.to_string())),
        ..item(
            sig.name.to_string(),
            kind,
            Some(builtin_signature(sig)),
            None,
        )
    }
}

fn item(
    label: String,
    kind: CompletionItemKind,
    detail: Option<String>,
    insert: Option<String>,
) -> CompletionItem {
    CompletionItem {
        label,
        kind: Some(kind),
        detail,
        insert_text: insert,
        ..CompletionItem::default()
    }
}

/// Whether the end of `before` (the text before the cursor) is inside a
/// comment or a string of its line, where nothing is completed.
fn in_comment_or_string(before: &str) -> bool {
    let line = before.rsplit(['\n', '\r']).next().unwrap_or("");
    let (code, in_string) = crate::syntax::lexer::code_of_line(line);
    in_string || code.len() < line.len()
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The methods and fields of a value of type `ty`.
fn members(ty: &Type) -> Vec<CompletionItem> {
    let mut out = Vec::new();
    if let Some(receiver) = Receiver::of(ty) {
        for sig in vocab::signatures()
            .into_iter()
            .filter(|s| s.receiver == receiver)
        {
            out.push(builtin_item(&sig, CompletionItemKind::METHOD));
        }
    }
    for name in vocab::Field::NAMES {
        if let Some(field_ty) = vocab::Field::of(name).and_then(|f| f.type_on(ty)) {
            out.push(item(
                name.to_string(),
                CompletionItemKind::FIELD,
                Some(field_ty.to_string()),
                None,
            ));
        }
    }
    out
}

/// The static type of the expression that `text` ends with, as far as the
/// text and the last analysis tell: a name, a call, an index, a field.
fn type_of(text: &str, analysis: &Analysis, at: u32) -> Option<Type> {
    let text = text.trim_end();
    if let Some(inner) = text.strip_suffix(')') {
        let open = unclosed(inner, '(', ')')?;
        return return_type(&inner[..open], analysis, at);
    }
    if let Some(inner) = text.strip_suffix(']') {
        let open = unclosed(inner, '[', ']')?;
        return match type_of(&inner[..open], analysis, at)? {
            Type::List(elem) => Some(*elem),
            Type::Map(_, value) => Some(*value),
            Type::Buffer => Some(Type::Chunk),
            _ => None,
        };
    }
    let name_start = text.trim_end_matches(is_name_char).len();
    let name = &text[name_start..];
    if name.is_empty() {
        return None;
    }
    let before = &text[..name_start];
    if let Some(receiver) = before.strip_suffix('.') {
        let on = type_of(receiver, analysis, at)?;
        return vocab::Field::of(name)?.type_on(&on);
    }
    // The innermost definition of the name in sight of the cursor, at
    // `at` in the text analysed (not in the text now, which may differ).
    let index = &analysis.index;
    index
        .visible_at(0, at)
        .filter(|d| d.name == name)
        .last()
        .or_else(|| index.defs.iter().rev().find(|d| d.name == name))
        .map(|d| d.ty.clone())
}

/// What `callee` (text ending with the callee's name) calls: a builtin or
/// method, or else a function of the program (a name with no receiver).
enum Callee {
    Builtin(vocab::Signature),
    Function(String),
}

fn callee(callee: &str, analysis: &Analysis, at: u32) -> Option<Callee> {
    let name = callee_name(callee);
    let receiver = match callee[..callee.len() - name.len()].strip_suffix('.') {
        Some(on) => Receiver::of(&type_of(on, analysis, at)?)?,
        None => Receiver::Free,
    };
    match vocab::signature(receiver, name) {
        Some(sig) => Some(Callee::Builtin(sig)),
        None => (receiver == Receiver::Free).then(|| Callee::Function(name.to_string())),
    }
}

/// The result type of calling what `callee` names.
fn return_type(text: &str, analysis: &Analysis, at: u32) -> Option<Type> {
    match callee(text, analysis, at)? {
        Callee::Builtin(sig) => Some(sig.ret),
        Callee::Function(name) => analysis
            .index
            .defs
            .iter()
            .find(|d| d.kind == DefKind::Function && d.name == name)
            .map(|d| d.ty.clone()),
    }
}

/// The parameter names of what `callee` calls.
fn params_of(text: &str, analysis: &Analysis, at: u32) -> Vec<String> {
    match callee(text, analysis, at) {
        Some(Callee::Builtin(sig)) => sig.params.iter().map(|p| p.name.to_string()).collect(),
        // A function of the program: the parameters of its definition.
        Some(Callee::Function(name)) => analysis
            .program
            .iter()
            .flat_map(|p| p.functions())
            .find(|f| f.name.name == name)
            .map(|f| f.params.iter().map(|p| p.name.name.clone()).collect())
            .unwrap_or_default(),
        None => Vec::new(),
    }
}

/// The keyword argument whose name is at byte `offset` of `text` (the
/// text analysed, `name: value` inside a call): its parameter as the
/// callee declares it, and the name's byte range.
pub(super) fn keyword_argument(
    text: &str,
    offset: usize,
    analysis: &Analysis,
) -> Option<(String, std::ops::Range<usize>)> {
    let start = text[..offset].trim_end_matches(is_name_char).len();
    let end = offset + text[offset..].len() - text[offset..].trim_start_matches(is_name_char).len();
    let name = &text[start..end];
    if name.is_empty() || !text[end..].trim_start().starts_with(':') {
        return None;
    }
    let call = open_call(&text[..start])?;
    let at = offset as u32;
    let of = callee_name(call);
    let declared = match callee(call, analysis, at)? {
        Callee::Builtin(sig) => sig.params.iter().find(|p| p.name == name)?.declared(),
        Callee::Function(f) => {
            let def = analysis
                .program
                .iter()
                .flat_map(|p| p.functions())
                .find(|d| d.name.name == f)?;
            def.params.iter().find(|p| p.name.name == name)?;
            let ty = analysis
                .index
                .defs
                .iter()
                .find(|d| {
                    d.kind == DefKind::FunctionParam
                        && d.name == name
                        && d.span.start >= def.span.start
                        && d.span.end <= def.span.end
                })
                .map_or(String::new(), |d| format!(": {}", d.ty));
            format!("{name}{ty}")
        }
    };
    Some((
        format!("```mscl\n{declared}\n```\na keyword argument of `{of}`"),
        start..end,
    ))
}

fn callee_name(callee: &str) -> &str {
    &callee[callee.trim_end_matches(is_name_char).len()..]
}

/// The callee text before the innermost `(` still open at the end of
/// `text`, if that `(` follows a name (a call, not a tuple).
fn open_call(text: &str) -> Option<&str> {
    let open = unclosed(text, '(', ')')?;
    let callee = text[..open].trim_end();
    (!callee_name(callee).is_empty()).then_some(callee)
}

/// The byte of the innermost `open` left unclosed at the end of `text`.
fn unclosed(text: &str, open: char, close: char) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in text.char_indices().rev() {
        if c == close {
            depth += 1;
        } else if c == open {
            if depth == 0 {
                return Some(i);
            }
            depth -= 1;
        }
    }
    None
}

/// A function's signature on one line, and the file it comes from where
/// that is another (named from `doc`'s folder, or as the standard
/// library's module).
fn function(doc: &Document, analysis: &Analysis, def: &crate::check::index::Def) -> String {
    let signature = super::features::signature(analysis, def);
    let signature = signature.split_whitespace().collect::<Vec<_>>().join(" ");
    match analysis.sources.names().nth(def.span.file as usize) {
        Some(file) if def.span.file != 0 => {
            let folder = doc.path.parent().unwrap_or(std::path::Path::new(""));
            let file = std::path::Path::new(file);
            let shown = file.strip_prefix(folder).unwrap_or(file);
            format!("{signature} (from {})", shown.display())
        }
        _ => signature,
    }
}

#[cfg(test)]
mod tests {
    use super::keywords_at;
    use crate::syntax::lexer::KEYWORDS;

    /// Each keyword is offered somewhere, and only where it may stand.
    #[test]
    fn keywords_are_offered_where_they_may_stand() {
        let mut offered: Vec<&str> = ["", "for x in 0..2 {\n    ", "}\n", "} ", "let x = "]
            .iter()
            .flat_map(|before| keywords_at(before).iter().copied())
            .collect();
        offered.sort_unstable();
        offered.dedup();
        let mut all = KEYWORDS.to_vec();
        all.sort_unstable();
        assert_eq!(offered, all);
        assert!(keywords_at("let x = ").contains(&"true"));
        assert!(!keywords_at("let x = ").contains(&"let"));
        assert_eq!(keywords_at("if a {\n    x = 1\n} "), &["else"]);
        assert!(keywords_at("    ").contains(&"let"));
    }
}
