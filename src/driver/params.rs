//! A program's `param`s: what it declares, the `-D NAME=VALUE` settings
//! that set them, and the listing tools read (`msclc check --params`).

use crate::diag::{Code, Diagnostic, SourceMap, Span};
use crate::eval::value::Value;
use crate::syntax::ast::{Expr, ExprKind, ParamDecl, Stmt, StmtKind, TypeExpr};
use crate::vocab::{self, Literal, Type};
use std::collections::HashMap;
use std::path::Path;
use std::rc::Rc;

/// One `param` of a program, as it is written.
#[derive(Debug, Clone)]
pub struct Declared<'a> {
    pub name: &'a str,
    /// Its type, as written (`int`, `protocol`).
    pub ty: &'a str,
    pub default: &'a Expr,
    /// The values it may take (`in [..]`), when it lists them.
    pub values: Option<&'a Expr>,
}

impl Declared<'_> {
    /// The values it lists, once the checker has found them literals.
    pub fn literals(&self) -> Option<Vec<Literal>> {
        Literal::list(self.values?)
    }

    /// Its default as the program writes it.
    pub fn default_text<'s>(&self, sources: &'s SourceMap) -> &'s str {
        text(sources, self.default.span)
    }

    /// The values it lists, each as the program writes it.
    pub fn values_text<'s>(&self, sources: &'s SourceMap) -> Option<Vec<&'s str>> {
        match &self.values?.kind {
            ExprKind::List(items) => Some(items.iter().map(|v| text(sources, v.span)).collect()),
            _ => None,
        }
    }
}

fn text(sources: &SourceMap, span: Span) -> &str {
    sources
        .source(span.file)
        .get(span.start as usize..span.end as usize)
        .unwrap_or("?")
}

/// The `param`s a program declares, in order.
pub fn declared(stmts: &[Stmt]) -> Vec<Declared<'_>> {
    stmts
        .iter()
        .filter_map(|s| match &s.kind {
            StmtKind::Param(p) => match &**p {
                ParamDecl {
                    name,
                    ty: TypeExpr::Named { name: ty, .. },
                    values,
                    default,
                } => Some(Declared {
                    name: &name.name,
                    ty: &ty.name,
                    default,
                    values: values.as_ref(),
                }),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// The params of the program at `path` as JSON, for tools (`msclc check
/// --params`): `[{"name", "type", "default", "values"?}]`, the default and
/// the values as written. Parsed, and the params checked (a type that does
/// not exist, a name declared twice, values that are no literals of the
/// type are errors, not a listing): a program whose other statements fail
/// still lists them.
pub fn listing_json(path: &Path) -> Result<String, (SourceMap, Vec<Diagnostic>)> {
    let (sources, program) = super::parse_file(path);
    let program = match program {
        Ok(p) => p,
        Err(d) => return Err((sources, d)),
    };
    // Every param statement, at the top level or (refused) in a block.
    let mut params: Vec<Span> = Vec::new();
    param_spans(&program.stmts, &mut params);
    if let Err(errors) = crate::check::check(&program) {
        let at_a_param = |d: &Diagnostic| {
            d.primary.as_ref().is_some_and(|l| {
                params.iter().any(|p| {
                    p.file == l.span.file && p.start <= l.span.start && l.span.end <= p.end
                })
            })
        };
        let theirs: Vec<Diagnostic> = errors.into_iter().filter(at_a_param).collect();
        if !theirs.is_empty() {
            return Err((sources, theirs));
        }
    }
    let listed: Vec<serde_json::Value> = declared(&program.stmts)
        .iter()
        .map(|p| {
            let mut entry = serde_json::json!({
                "name": p.name,
                "type": p.ty,
                "default": p.default_text(&sources),
            });
            if let Some(values) = p.values_text(&sources) {
                entry["values"] = values.into_iter().collect();
            }
            entry
        })
        .collect();
    Ok(serde_json::Value::Array(listed).to_string())
}

/// Turns `-D NAME=VALUE` settings into values of the declared params'
/// types. (A param's list of values is what `msclc tune` tries: `-D` may
/// set any value of its type, as the reference's command line may.)
/// `in_editor`: the settings are the editor's `params`, and said so.
pub fn parse_defines(
    sources: &SourceMap,
    stmts: &[Stmt],
    defines: &[(String, String)],
    in_editor: bool,
) -> Result<HashMap<String, Value>, Vec<Diagnostic>> {
    let params = declared(stmts);
    // A setting as the user gave it.
    let given = |name: &str, raw: &str| {
        let (name, raw) = (crate::diag::escaped(name), crate::diag::escaped(raw));
        match in_editor {
            true => format!("the editor's setting params.{name} = {raw}"),
            false => format!("-D {name}={raw}"),
        }
    };
    let listing = || -> String {
        if params.is_empty() {
            return "this program declares no params".to_string();
        }
        let mut text = "the program's params are:".to_string();
        for p in &params {
            // As the program declares it, with the values it lists.
            let values = p.values_text(sources).map_or(String::new(), |v| {
                format!(" in {}", crate::diag::short_list(&v, "values"))
            });
            text.push_str(&format!(
                "\n  {}: {}{values} = {}",
                p.name,
                p.ty,
                p.default_text(sources)
            ));
        }
        text
    };
    let mut out = HashMap::new();
    // Each name's first text, for a second that sets another value.
    let mut first: HashMap<&str, &str> = HashMap::new();
    for (name, raw) in defines {
        let Some(param) = params.iter().find(|p| p.name == name) else {
            return Err(vec![Diagnostic::plain(
                Code::Define,
                format!(
                    "{}: the program declares no param `{}`",
                    given(name, raw),
                    crate::diag::escaped(name)
                ),
            )
            .with_note(listing())]);
        };
        let ty = param.ty;
        let Some(value) = value_of(ty, raw) else {
            let mut d = Diagnostic::error(
                Code::Define,
                param.default.span,
                format!(
                    "{}: `{}` is not a valid {ty}",
                    given(name, raw),
                    crate::diag::escaped(raw)
                ),
                format!("`{name}` is a param of type `{ty}`, with this default"),
            );
            d.notes.extend(constants_note(ty));
            return Err(vec![d.with_note(listing())]);
        };
        let earlier = *first.entry(name).or_insert(raw);
        // Given twice, which value holds is a guess: the user says.
        if out.get(name).is_some_and(|v| *v != value) {
            return Err(vec![Diagnostic::plain(
                Code::Define,
                format!(
                    "-D {}: given twice, as {} and then {}: give it once",
                    crate::diag::escaped(name),
                    crate::diag::escaped(earlier),
                    crate::diag::escaped(raw)
                ),
            )]);
        }
        out.insert(name.clone(), value);
    }
    Ok(out)
}

/// `raw` as a value of a param of type `ty`, if it is one.
pub(crate) fn value_of(ty: &str, raw: &str) -> Option<Value> {
    match ty {
        "int" => parse_int(raw).and_then(Value::int),
        "bool" => match raw {
            "true" => Some(Value::Bool(true)),
            "false" => Some(Value::Bool(false)),
            _ => None,
        },
        "str" => Some(Value::Str(Rc::from(
            string_literal(raw).as_deref().unwrap_or(raw),
        ))),
        // A named constant of the param's type (`Simple`, `after`, ...).
        _ => constants_of(ty)
            .into_iter()
            .find(|name| *name == raw)
            .and_then(crate::eval::constant),
    }
}

/// The text of `raw` where it is a string literal as a program writes it
/// (`"ring"`, as `msclc check --params` lists a default): a tool that
/// sets a param to what the listing gave sets the text, not the quotes.
fn string_literal(raw: &str) -> Option<String> {
    if !raw.starts_with('"') {
        return None;
    }
    let mut tokens = crate::syntax::lexer::lex(raw);
    match (tokens.next(), tokens.next()) {
        (Some(Ok((_, crate::syntax::lexer::Token::Str(text), _))), None) => Some(text),
        _ => None,
    }
}

/// An int as a literal reads (up to u64::MAX:
/// `-D max_message_size=18446744073709551615`), or a negative one.
fn parse_int(raw: &str) -> Option<i128> {
    let (negative, literal) = match raw.strip_prefix('-') {
        Some(literal) => (true, literal),
        None => (false, raw),
    };
    if !literal.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let v = i128::from(crate::syntax::lexer::int_literal(literal).ok()?);
    match negative {
        true => (-v >= i128::from(i64::MIN)).then_some(-v),
        false => Some(v),
    }
}

/// The named constants a param of type `ty` may be set to (none for
/// `int`, `bool` and `str`).
fn constants_of(ty: &str) -> Vec<&'static str> {
    let Some(t) = Type::from_name(ty) else {
        return Vec::new();
    };
    vocab::CONSTANTS
        .iter()
        .filter(|(_, c)| c.ty().fits(&t))
        .map(|(name, _)| *name)
        .collect()
}

/// For a param of a named constant's type: the names it may take, as a
/// note line.
fn constants_note(ty: &str) -> Option<String> {
    let names = constants_of(ty);
    (!names.is_empty()).then(|| format!("a {ty} is one of: {}", names.join(", ")))
}

/// The spans of the param statements of `stmts`, and of the blocks in them.
fn param_spans(stmts: &[crate::syntax::ast::Stmt], out: &mut Vec<Span>) {
    for s in stmts {
        match &s.kind {
            StmtKind::Param(_) => out.push(s.span),
            StmtKind::For { body, .. } | StmtKind::Pipeline { body, .. } => param_spans(body, out),
            StmtKind::If {
                then, otherwise, ..
            } => {
                param_spans(then, out);
                param_spans(otherwise, out);
            }
            StmtKind::Fn(f) => param_spans(&f.body, out),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{parse_int, value_of};
    use crate::eval::value::Value;

    /// `-D` reads an int as the language reads a literal (`1_024`, `0x10`),
    /// with a sign where negative; anything else is no int.
    #[test]
    fn a_define_reads_an_int_as_a_literal() {
        for (raw, value) in [
            ("1_024", 1024),
            ("0x10", 16),
            ("-3", -3),
            ("-0x10", -16),
            ("18446744073709551615", i128::from(u64::MAX)),
            ("-9223372036854775808", i128::from(i64::MIN)),
        ] {
            assert_eq!(parse_int(raw), Some(value), "{raw}");
        }
        for raw in [
            "abc",
            "1e3",
            "0x",
            " 4",
            "+4",
            "_1",
            "-9223372036854775809",
            "--1",
        ] {
            assert_eq!(parse_int(raw), None, "{raw}");
        }
    }

    /// A str is its text, or the text of the literal a program writes
    /// (`check --params` lists a default so): the quotes are not the name.
    #[test]
    fn a_define_reads_a_str_as_text_or_as_its_literal() {
        for (raw, text) in [
            ("ring", "ring"),
            ("\"ring\"", "ring"),
            ("\"a \\\"b\\\"\"", "a \"b\""),
            ("\"\"", ""),
            ("\"open", "\"open"),
            ("\"a\" \"b\"", "\"a\" \"b\""),
            ("say \"hi\"", "say \"hi\""),
        ] {
            match value_of("str", raw) {
                Some(Value::Str(s)) => assert_eq!(&*s, text, "{raw}"),
                other => panic!("{raw}: {other:?}"),
            }
        }
    }
}
