//! How deeply a program nests: expressions in expressions, blocks in
//! blocks. The checker and the evaluator walk the tree recursively, so a
//! tree deeper than [`MAX_NESTING`] is refused here, with a diagnostic at
//! the first node too deep, before anything else walks it.

use super::ast::*;
use crate::diag::{Code, Diagnostic, Span};

/// Levels of nesting a program may have. Real programs nest a few levels;
/// a sum of a thousand terms written out is a thousand levels deep.
pub const MAX_NESTING: usize = 1000;

/// Refuses a program nested more than [`MAX_NESTING`] levels deep.
pub fn check(stmts: &[Stmt]) -> Result<(), Diagnostic> {
    block(stmts, 0)
}

pub(super) fn too_deep(span: Span) -> Diagnostic {
    Diagnostic::error(
        Code::Nesting,
        span,
        format!("nested more than {MAX_NESTING} levels deep"),
        "too deep",
    )
    .with_note(
        "split the expression or block: bind parts with `let`, or move them into a function"
            .to_string(),
    )
}

fn block(stmts: &[Stmt], depth: usize) -> Result<(), Diagnostic> {
    stmts.iter().try_for_each(|s| stmt(s, depth + 1))
}

fn stmt(s: &Stmt, depth: usize) -> Result<(), Diagnostic> {
    if depth > MAX_NESTING {
        return Err(too_deep(s.span));
    }
    match &s.kind {
        StmtKind::Param(p) => {
            type_expr(&p.ty, depth + 1)?;
            if let Some(values) = &p.values {
                expr(values, depth + 1)?;
            }
            expr(&p.default, depth + 1)
        }
        StmtKind::Import { .. } => Ok(()),
        StmtKind::Program { name, options } => {
            expr(name, depth + 1)?;
            options.iter().try_for_each(|o| expr(&o.value, depth + 1))
        }
        StmtKind::Fn(f) => {
            for p in &f.params {
                type_expr(&p.ty, depth + 1)?;
                p.default.iter().try_for_each(|d| expr(d, depth + 1))?;
            }
            f.ret.iter().try_for_each(|t| type_expr(t, depth + 1))?;
            block(&f.body, depth)
        }
        StmtKind::Let { pattern: p, value } => {
            pattern(p, depth + 1)?;
            expr(value, depth + 1)
        }
        StmtKind::Assign { value, .. } => expr(value, depth + 1),
        StmtKind::For { loops: l, body } => {
            loops(l, depth + 1)?;
            block(body, depth)
        }
        StmtKind::If {
            cond,
            then,
            otherwise,
        } => {
            expr(cond, depth + 1)?;
            block(then, depth)?;
            block(otherwise, depth)
        }
        StmtKind::Return(value) => value.iter().try_for_each(|v| expr(v, depth + 1)),
        StmtKind::Pipeline { args, body } => {
            args.iter().try_for_each(|a| expr(&a.value, depth + 1))?;
            block(body, depth)
        }
        StmtKind::Expr(e) => expr(e, depth + 1),
    }
}

fn type_expr(t: &TypeExpr, depth: usize) -> Result<(), Diagnostic> {
    if depth > MAX_NESTING {
        return Err(too_deep(t.span()));
    }
    match t {
        TypeExpr::Named { args, .. } | TypeExpr::Tuple(args, _) => {
            args.iter().try_for_each(|a| type_expr(a, depth + 1))
        }
    }
}

fn pattern(p: &Pattern, depth: usize) -> Result<(), Diagnostic> {
    if depth > MAX_NESTING {
        return Err(too_deep(p.span()));
    }
    match p {
        Pattern::Name(_) | Pattern::Wildcard(_) => Ok(()),
        Pattern::Tuple(items, _) => items.iter().try_for_each(|i| pattern(i, depth + 1)),
    }
}

fn loops(l: &Loops, depth: usize) -> Result<(), Diagnostic> {
    for c in &l.clauses {
        c.patterns.iter().try_for_each(|p| pattern(p, depth + 1))?;
        expr(&c.iter, depth + 1)?;
    }
    l.filter.iter().try_for_each(|f| expr(f, depth + 1))
}

fn expr(e: &Expr, depth: usize) -> Result<(), Diagnostic> {
    if depth > MAX_NESTING {
        return Err(too_deep(e.span));
    }
    let next = depth + 1;
    match &e.kind {
        ExprKind::Int(_) | ExprKind::Str(_) | ExprKind::Bool(_) | ExprKind::Name(_) => Ok(()),
        ExprKind::Unary(_, a) | ExprKind::Field(a, _) => expr(a, next),
        ExprKind::Binary(_, a, b) | ExprKind::Range(a, b) | ExprKind::Index(a, b) => {
            expr(a, next)?;
            expr(b, next)
        }
        ExprKind::Call(callee, args) => {
            expr(callee, next)?;
            args.iter().try_for_each(|a| expr(&a.value, next))
        }
        ExprKind::Tuple(items) | ExprKind::List(items) => {
            items.iter().try_for_each(|i| expr(i, next))
        }
        ExprKind::ListComp(item, l) => {
            expr(item, next)?;
            loops(l, next)
        }
        ExprKind::Map(pairs) => pairs.iter().try_for_each(|(k, v)| {
            expr(k, next)?;
            expr(v, next)
        }),
        ExprKind::MapComp(k, v, l) => {
            expr(k, next)?;
            expr(v, next)?;
            loops(l, next)
        }
        ExprKind::If(cond, then, otherwise) => {
            expr(cond, next)?;
            expr(then, next)?;
            expr(otherwise, next)
        }
    }
}

#[cfg(test)]
mod tests {
    fn nesting_error(src: &str) -> Option<String> {
        let diagnostic = crate::syntax::parse(0, src).err()?;
        Some(diagnostic.message.clone())
    }

    #[test]
    fn deep_programs_are_refused_and_shallow_ones_pass() {
        // Room for a debug build's frames, as the msclc binary gives them.
        std::thread::Builder::new()
            .stack_size(256 << 20)
            .spawn(deep_and_shallow)
            .unwrap()
            .join()
            .unwrap();
    }

    fn deep_and_shallow() {
        let deep_sum = format!("let x = {}\n", vec!["1"; 2000].join(" + "));
        let deep_ifs = format!("{}{}", "if true {\n".repeat(1500), "}\n".repeat(1500));
        let deep_type = format!(
            "fn f(x: {}int{}) {{}}\n",
            "(".repeat(1500),
            ",)".repeat(1500)
        );
        let deep_pattern = format!("let {}a{} = 1\n", "(".repeat(1500), ",)".repeat(1500));
        // Parentheses make no node, but the formatter indents per bracket.
        let deep_parens = format!("let x = {}1{}\n", "(".repeat(1500), ")".repeat(1500));
        for src in [deep_sum, deep_ifs, deep_type, deep_pattern, deep_parens] {
            let message = nesting_error(&src).expect("refused");
            assert!(
                message.contains("nested more than 1000 levels"),
                "{message}"
            );
        }
        let fine = format!("let x = {}\n", vec!["1"; 500].join(" + "));
        assert!(crate::syntax::parse(0, &fine).is_ok());
        let parens = format!("let x = {}1{}\n", "(".repeat(1000), ")".repeat(1000));
        assert!(crate::syntax::parse(0, &parens).is_ok());
    }
}
