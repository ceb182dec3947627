//! The type checker: before anything runs, every name must be defined, every
//! call must match its function's parameters, and every expression must have
//! a static type that fits where it is used. Errors are collected, not
//! stopped at; a wrong expression gets the type `_` so that one mistake is
//! reported once.

use crate::diag::{Code, Diagnostic, Span};
use crate::syntax::ast::Program;
use crate::syntax::ast::*;
use crate::vocab::{self, Receiver, Signature, Type};
use index::{Def, DefKind, Index, Target};
use std::collections::HashMap;
use std::rc::Rc;

pub mod index;

struct FnSig {
    def: Rc<FnDef>,
    params: Vec<Type>,
    ret: Type,
    /// Its entry in the index, when one is kept.
    id: usize,
}

/// A name's type, and its entry in the index when one is kept.
#[derive(Clone)]
struct Binding {
    ty: Type,
    def: usize,
}

/// The names of one block, loop, comprehension or function, and the byte
/// where it ends (how far its names are visible, for the index).
#[derive(Default)]
struct Scope {
    names: HashMap<String, Binding>,
    end: u32,
}

impl Scope {
    fn until(end: u32) -> Scope {
        Scope {
            names: HashMap::new(),
            end,
        }
    }
}

struct Checker {
    scopes: Vec<Scope>,
    /// What an editor wants to know, kept only on request (`check_indexed`).
    index: Option<Index>,
    functions: HashMap<String, FnSig>,
    builtins: HashMap<(Receiver, &'static str), Signature>,
    /// The declared return type of the function being checked.
    returns: Option<Type>,
    errors: Vec<Diagnostic>,
}

pub fn check(program: &Program) -> Result<(), Vec<Diagnostic>> {
    run(program, None).0
}

/// `check`, keeping what it learns of names and expressions (`Index`).
pub fn check_indexed(program: &Program) -> (Result<(), Vec<Diagnostic>>, Index) {
    let (result, index) = run(program, Some(Index::default()));
    (result, index.unwrap_or_default())
}

fn run(program: &Program, index: Option<Index>) -> (Result<(), Vec<Diagnostic>>, Option<Index>) {
    let mut c = Checker {
        scopes: vec![Scope::until(u32::MAX)],
        index,
        functions: HashMap::new(),
        builtins: vocab::signatures()
            .into_iter()
            .map(|s| ((s.receiver, s.name), s))
            .collect(),
        returns: None,
        errors: Vec::new(),
    };
    for f in program.functions() {
        c.declare_fn(f);
    }
    let fns: Vec<Rc<FnDef>> = c.functions.values().map(|f| f.def.clone()).collect();
    for stmt in &program.stmts {
        c.stmt(stmt, true);
    }
    for f in fns {
        c.fn_body(&f);
    }
    let result = if c.errors.is_empty() {
        Ok(())
    } else {
        c.errors
            .sort_by_key(|d| d.span().map(|s| (s.file, s.start)));
        Err(c.errors)
    };
    (result, c.index)
}

impl Checker {
    fn err(&mut self, d: Diagnostic) -> Type {
        self.errors.push(d);
        Type::Any
    }

    fn expect(&mut self, got: &Type, want: &Type, span: Span, what: &str) {
        if !got.fits(want) {
            self.err(Diagnostic::error(
                Code::TypeMismatch,
                span,
                format!("{what} has type `{got}`, expected `{want}`"),
                format!("this is a `{got}`"),
            ));
        }
    }

    fn resolve(&mut self, t: &TypeExpr) -> Type {
        match t {
            TypeExpr::Tuple(items, _) => {
                Type::Tuple(items.iter().map(|i| self.resolve(i)).collect())
            }
            TypeExpr::Named { name, args } => {
                let args: Vec<Type> = args.iter().map(|a| self.resolve(a)).collect();
                match (name.name.as_str(), args.len()) {
                    ("list", 1) => Type::List(Box::new(args[0].clone())),
                    ("map", 2) => Type::Map(Box::new(args[0].clone()), Box::new(args[1].clone())),
                    (n, 0) => match Type::from_name(n) {
                        Some(t) => t,
                        None => self.err(Diagnostic::error(Code::UnknownName, name.span, format!("unknown type `{n}`"), "not a type").with_note(
                            "the types are int, bool, str, range, list[T], map[K, V], (T, U), rank, buffer, chunk, \
                             memory_channel, port_channel, switch_channel, switch_view, tb_group, semaphore, collective, \
                             protocol, sync_type, reduce_op, buffer_type, replication_policy",
                        )),
                    },
                    (n, k) => self.err(Diagnostic::error(Code::Misplaced, name.span, format!("`{n}` does not take {k} type argument(s)"), "wrong type arguments")
                        .with_note("write list[T] or map[K, V]")),
                }
            }
        }
    }

    fn declare_fn(&mut self, f: Rc<FnDef>) {
        if let Some(prev) = self.functions.get(&f.name.name) {
            let prev_span = prev.def.name.span;
            self.err(
                Diagnostic::error(
                    Code::Misplaced,
                    f.name.span,
                    format!("function `{}` defined twice", f.name.name),
                    "second definition",
                )
                .with_secondary(prev_span, "first definition"),
            );
            return;
        }
        if self
            .builtins
            .contains_key(&(Receiver::Free, f.name.name.as_str()))
        {
            self.err(
                Diagnostic::error(
                    Code::Misplaced,
                    f.name.span,
                    format!("`{}` is a builtin function", f.name.name),
                    "this name is taken",
                )
                .with_note("help: choose another name"),
            );
            return;
        }
        let params: Vec<Type> = f.params.iter().map(|p| self.resolve(&p.ty)).collect();
        let ret = f.ret.as_ref().map_or(Type::Unit, |t| self.resolve(t));
        let id = self.define(
            &f.name,
            DefKind::Function,
            ret.clone(),
            (f.span.start, u32::MAX),
        );
        self.functions.insert(
            f.name.name.clone(),
            FnSig {
                def: f,
                params,
                ret,
                id,
            },
        );
    }

    fn fn_body(&mut self, f: &FnDef) {
        let Some(sig) = self.functions.get(&f.name.name) else {
            return;
        };
        let (params, ret) = (sig.params.clone(), sig.ret.clone());
        // Defaults are evaluated in the caller's global scope.
        for (p, t) in f.params.iter().zip(&params) {
            if let Some(d) = &p.default {
                let got = self.expr(d);
                self.expect(
                    &got,
                    t,
                    d.span,
                    &format!("the default of `{}`", p.name.name),
                );
            }
        }
        let saved: Vec<Scope> = self.scopes.drain(1..).collect();
        self.scopes.push(Scope::until(f.span.end));
        for (p, t) in f.params.iter().zip(params) {
            self.bind(&p.name, t, DefKind::FunctionParam);
        }
        let outer = self.returns.replace(ret);
        self.block(&f.body, f.span.end);
        self.returns = outer;
        self.scopes.truncate(1);
        self.scopes.extend(saved);
    }

    /// Records a definition in the index, if one is kept: its entry.
    fn define(&mut self, name: &Ident, kind: DefKind, ty: Type, visible: (u32, u32)) -> usize {
        let Some(index) = &mut self.index else {
            return usize::MAX;
        };
        index.defs.push(Def {
            name: name.name.clone(),
            span: name.span,
            kind,
            ty,
            visible,
        });
        index.defs.len() - 1
    }

    /// Records a use in the index, if one is kept.
    fn refer(&mut self, span: Span, to: Target) {
        if let Some(index) = &mut self.index {
            index.refs.push(index::Ref { span, to });
        }
    }

    fn bind(&mut self, name: &Ident, ty: Type, kind: DefKind) {
        let end = self.scopes.last().map_or(u32::MAX, |s| s.end);
        let def = self.define(name, kind, ty.clone(), (name.span.start, end));
        if let Some(s) = self.scopes.last_mut() {
            s.names.insert(name.name.clone(), Binding { ty, def });
        }
    }

    fn lookup(&self, name: &str) -> Option<Type> {
        self.binding(name)
            .map(|b| b.ty.clone())
            .or_else(|| vocab::Constant::named(name).map(vocab::Constant::ty))
    }

    fn binding(&self, name: &str) -> Option<&Binding> {
        self.scopes.iter().rev().find_map(|s| s.names.get(name))
    }

    fn block(&mut self, stmts: &[Stmt], end: u32) {
        self.scopes.push(Scope::until(end));
        for s in stmts {
            self.stmt(s, false);
        }
        self.scopes.pop();
    }

    fn stmt(&mut self, stmt: &Stmt, top: bool) {
        let top_only = |c: &mut Checker, what: &str| {
            if !top {
                c.err(Diagnostic::error(
                    Code::Misplaced,
                    stmt.span,
                    format!("{what} must be at the top level of the file"),
                    "inside a block",
                ));
            }
        };
        match &stmt.kind {
            StmtKind::Param { name, ty, default } => {
                top_only(self, "a `param`");
                let t = self.resolve(ty);
                let settable = vocab::PARAM_TYPES
                    .iter()
                    .any(|p| Type::from_name(p).as_ref() == Some(&t));
                if !settable && t != Type::Any {
                    self.err(
                        Diagnostic::error(
                            Code::Misplaced,
                            ty.span(),
                            format!("a param cannot have type `{t}`"),
                            "not settable from the command line",
                        )
                        .with_note(format!(
                            "params have one of the types: {}",
                            vocab::PARAM_TYPES.join(", ")
                        )),
                    );
                }
                let got = self.expr(default);
                self.expect(
                    &got,
                    &t,
                    default.span,
                    &format!("the default of param `{}`", name.name),
                );
                self.bind(name, t, DefKind::Param);
            }
            StmtKind::Import { .. } => top_only(self, "an `import`"),
            StmtKind::Fn(_) => top_only(self, "a `fn`"),
            StmtKind::Program { name, options } => {
                top_only(self, "the `program` block");
                let t = self.expr(name);
                self.expect(&t, &Type::Str, name.span, "the program name");
                let mut seen: Vec<&str> = Vec::new();
                for opt in options {
                    let got = self.expr(&opt.value);
                    let key = opt.key.name.as_str();
                    match vocab::PROGRAM_OPTIONS.iter().find(|(n, _)| *n == key) {
                        Some((_, want)) => {
                            self.expect(&got, want, opt.value.span, &format!("option `{key}`"))
                        }
                        None => {
                            let names: Vec<&str> =
                                vocab::PROGRAM_OPTIONS.iter().map(|(n, _)| *n).collect();
                            self.err(
                                Diagnostic::error(
                                    Code::Program,
                                    opt.key.span,
                                    format!("unknown program option `{key}`"),
                                    "not an option",
                                )
                                .with_note(format!("the options are: {}", names.join(", "))),
                            );
                        }
                    }
                    if seen.contains(&key) {
                        self.err(Diagnostic::error(
                            Code::Program,
                            opt.key.span,
                            format!("option `{key}` set twice"),
                            "already set above",
                        ));
                    }
                    seen.push(key);
                }
            }
            StmtKind::Let { pattern, value } => {
                let t = self.expr(value);
                self.bind_pattern(pattern, t, DefKind::Let);
            }
            StmtKind::Assign { target, value } => {
                let got = self.expr(value);
                if let Some(b) = self.binding(&target.name) {
                    self.refer(target.span, Target::Def(b.def));
                }
                match self.lookup(&target.name) {
                    Some(t) if self.binding(&target.name).is_some() => self.expect(
                        &got,
                        &t,
                        value.span,
                        &format!("the new value of `{}`", target.name),
                    ),
                    _ => {
                        self.err(
                            Diagnostic::error(
                                Code::UnknownName,
                                target.span,
                                format!("`{}` is not defined", target.name),
                                "assigned before `let`",
                            )
                            .with_note(format!(
                                "help: write `let {} = ...` to define it",
                                target.name
                            )),
                        );
                    }
                }
            }
            StmtKind::For { loops, body } => {
                self.scopes.push(Scope::until(stmt.span.end));
                self.loops(loops);
                self.block(body, stmt.span.end);
                self.scopes.pop();
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => {
                let t = self.expr(cond);
                self.expect(&t, &Type::Bool, cond.span, "the condition");
                self.block(then, stmt.span.end);
                self.block(otherwise, stmt.span.end);
            }
            StmtKind::Return(value) => {
                let got = value.as_ref().map_or(Type::Unit, |e| self.expr(e));
                match self.returns.clone() {
                    None => {
                        self.err(Diagnostic::error(
                            Code::Misplaced,
                            stmt.span,
                            "`return` outside a function",
                            "not in a `fn`",
                        ));
                    }
                    Some(want) => {
                        let span = value.as_ref().map_or(stmt.span, |e| e.span);
                        if want == Type::Unit && got != Type::Unit {
                            self.err(
                                Diagnostic::error(
                                    Code::Misplaced,
                                    span,
                                    "this function declares no result",
                                    "returns a value",
                                )
                                .with_note(format!(
                                    "help: add `-> {got}` after the parameter list"
                                )),
                            );
                        } else {
                            self.expect(&got, &want, span, "the returned value");
                        }
                    }
                }
            }
            StmtKind::Pipeline { args, body } => {
                match vocab::match_args(
                    "pipeline",
                    &["unit_size", "num_chunks"],
                    &[true, true],
                    args,
                    stmt.span,
                ) {
                    Ok(slots) => {
                        for i in slots.into_iter().flatten() {
                            let t = self.expr(&args[i].value);
                            self.expect(&t, &Type::Int, args[i].value.span, "a pipeline setting");
                        }
                    }
                    Err(d) => {
                        self.err(d);
                    }
                }
                self.block(body, stmt.span.end);
            }
            StmtKind::Expr(e) => {
                self.expr(e);
            }
        }
    }

    fn bind_pattern(&mut self, p: &Pattern, t: Type, kind: DefKind) {
        match p {
            Pattern::Name(id) => self.bind(id, t, kind),
            Pattern::Wildcard(_) => {}
            Pattern::Tuple(items, span) => match t {
                Type::Tuple(ts) if ts.len() == items.len() => {
                    for (p, t) in items.iter().zip(ts) {
                        self.bind_pattern(p, t, kind);
                    }
                }
                Type::Any => items
                    .iter()
                    .for_each(|p| self.bind_pattern(p, Type::Any, kind)),
                other => {
                    self.err(Diagnostic::error(
                        Code::TypeMismatch,
                        *span,
                        format!("cannot unpack a `{other}` into {} names", items.len()),
                        "pattern does not fit",
                    ));
                    items
                        .iter()
                        .for_each(|p| self.bind_pattern(p, Type::Any, kind));
                }
            },
        }
    }

    /// Binds the loop variables of `loops` in the current scope and checks its filter.
    fn loops(&mut self, loops: &Loops) {
        for clause in &loops.clauses {
            let t = self.expr(&clause.iter);
            let items: Vec<Type> = match (&t, clause.patterns.len()) {
                (Type::Range, 1) => vec![Type::Int],
                (Type::List(e), 1) => vec![(**e).clone()],
                (Type::Map(k, _), 1) => vec![(**k).clone()],
                (Type::Map(k, v), 2) => vec![(**k).clone(), (**v).clone()],
                (Type::Any, n) => vec![Type::Any; n],
                (other, n) => {
                    let what = if n == 2 {
                        "a map (two loop variables walk keys and values)"
                    } else {
                        "a list, range or map"
                    };
                    self.err(Diagnostic::error(
                        Code::TypeMismatch,
                        clause.iter.span,
                        format!("cannot loop over a `{other}` with {n} variable(s)"),
                        format!("expected {what}"),
                    ));
                    vec![Type::Any; n]
                }
            };
            for (p, t) in clause.patterns.iter().zip(items) {
                self.bind_pattern(p, t, DefKind::LoopVariable);
            }
        }
        if let Some(f) = &loops.filter {
            let t = self.expr(f);
            self.expect(&t, &Type::Bool, f.span, "the `where` filter");
        }
    }

    fn expr(&mut self, e: &Expr) -> Type {
        let t = self.expr_type(e);
        if let Some(index) = &mut self.index {
            index.types.push((e.span, t.clone()));
        }
        t
    }

    fn expr_type(&mut self, e: &Expr) -> Type {
        match &e.kind {
            ExprKind::Int(_) => Type::Int,
            ExprKind::Str(_) => Type::Str,
            ExprKind::Bool(_) => Type::Bool,
            ExprKind::Name(n) => match self.lookup(n) {
                Some(t) => {
                    let to = match self.binding(n) {
                        Some(b) => Target::Def(b.def),
                        None => match vocab::CONSTANTS.iter().find(|(c, _)| c == n) {
                            Some((c, _)) => Target::Constant(c),
                            None => return t,
                        },
                    };
                    self.refer(e.span, to);
                    t
                }
                None if self.functions.contains_key(n)
                    || self.builtins.contains_key(&(Receiver::Free, n.as_str())) =>
                {
                    self.err(Diagnostic::error(
                        Code::TypeMismatch,
                        e.span,
                        format!("`{n}` is a function, not a value"),
                        "call it with `(..)`",
                    ))
                }
                None => {
                    let mut d = Diagnostic::error(
                        Code::UnknownName,
                        e.span,
                        format!("`{n}` is not defined"),
                        "unknown name",
                    );
                    if let Some(s) = self.similar_name(n) {
                        d = d.with_note(format!("help: did you mean `{s}`?"));
                    }
                    self.err(d)
                }
            },
            ExprKind::Unary(op, inner) => {
                let t = self.expr(inner);
                let (want, what) = if *op == UnOp::Neg {
                    (Type::Int, "`-`")
                } else {
                    (Type::Bool, "`!`")
                };
                self.expect(&t, &want, inner.span, &format!("the operand of {what}"));
                want
            }
            ExprKind::Binary(op, a, b) => self.binary(e.span, *op, a, b),
            ExprKind::Range(a, b) => {
                for x in [a, b] {
                    let t = self.expr(x);
                    self.expect(&t, &Type::Int, x.span, "a range bound");
                }
                Type::Range
            }
            ExprKind::Call(callee, args) => self.call(e.span, callee, args),
            ExprKind::Field(target, field) => {
                let t = self.expr(target);
                if t == Type::Any {
                    return Type::Any;
                }
                match vocab::Field::of(&field.name).and_then(|f| f.type_on(&t)) {
                    Some(ft) => ft,
                    None => {
                        let hint = if Receiver::of(&t)
                            .is_some_and(|r| self.builtins.contains_key(&(r, field.name.as_str())))
                        {
                            format!("`{}` is a method: call it with `(..)`", field.name)
                        } else {
                            format!("a `{t}` has no field `{}`", field.name)
                        };
                        self.err(Diagnostic::error(
                            Code::NoSuchMember,
                            field.span,
                            format!("no field `{}` on `{t}`", field.name),
                            hint,
                        ))
                    }
                }
            }
            ExprKind::Index(target, index) => {
                let t = self.expr(target);
                let i = self.expr(index);
                match (&t, &i) {
                    (Type::Any, _) => Type::Any,
                    (Type::List(elem), _) => {
                        self.expect(&i, &Type::Int, index.span, "a list index");
                        (**elem).clone()
                    }
                    (Type::Map(k, v), _) => {
                        self.expect(&i, k, index.span, "a map key");
                        (**v).clone()
                    }
                    (Type::Buffer, Type::Int | Type::Range | Type::Any) => Type::Chunk,
                    (Type::Tuple(items), Type::Int) => match &index.kind {
                        ExprKind::Int(k) if (*k as usize) < items.len() && *k >= 0 => {
                            items[*k as usize].clone()
                        }
                        _ => self.err(Diagnostic::error(
                            Code::Index,
                            index.span,
                            "a tuple index must be an integer literal within the tuple",
                            "not a valid tuple index",
                        )),
                    },
                    _ => self.err(
                        Diagnostic::error(
                            Code::TypeMismatch,
                            e.span,
                            format!("cannot index a `{t}` with a `{i}`"),
                            "not indexable this way",
                        )
                        .with_note(
                            "lists and tuples take an int, maps a key, buffers an int or a range",
                        ),
                    ),
                }
            }
            ExprKind::Tuple(items) => Type::Tuple(items.iter().map(|i| self.expr(i)).collect()),
            ExprKind::List(items) => {
                let mut elem = Type::Any;
                for item in items {
                    let t = self.expr(item);
                    elem = match elem.join(&t) {
                        Some(j) => j,
                        None => self.err(Diagnostic::error(
                            Code::TypeMismatch,
                            item.span,
                            format!("list elements differ in type: `{elem}` and `{t}`"),
                            format!("this is a `{t}`"),
                        )),
                    };
                }
                Type::List(Box::new(elem))
            }
            ExprKind::ListComp(item, loops) => {
                self.scopes.push(Scope::until(e.span.end));
                self.loops(loops);
                let t = self.expr(item);
                self.scopes.pop();
                Type::List(Box::new(t))
            }
            ExprKind::Map(entries) => {
                let (mut kt, mut vt) = (Type::Any, Type::Any);
                for (k, v) in entries {
                    let (a, b) = (self.expr(k), self.expr(v));
                    kt = kt.join(&a).unwrap_or_else(|| {
                        self.err(Diagnostic::error(
                            Code::TypeMismatch,
                            k.span,
                            "map keys differ in type",
                            format!("this is a `{a}`"),
                        ))
                    });
                    vt = vt.join(&b).unwrap_or_else(|| {
                        self.err(Diagnostic::error(
                            Code::TypeMismatch,
                            v.span,
                            "map values differ in type",
                            format!("this is a `{b}`"),
                        ))
                    });
                }
                Type::Map(Box::new(kt), Box::new(vt))
            }
            ExprKind::MapComp(k, v, loops) => {
                self.scopes.push(Scope::until(e.span.end));
                self.loops(loops);
                let (kt, vt) = (self.expr(k), self.expr(v));
                self.scopes.pop();
                Type::Map(Box::new(kt), Box::new(vt))
            }
            ExprKind::If(cond, then, otherwise) => {
                let t = self.expr(cond);
                self.expect(&t, &Type::Bool, cond.span, "the condition");
                let (a, b) = (self.expr(then), self.expr(otherwise));
                a.join(&b).unwrap_or_else(|| {
                    self.err(
                        Diagnostic::error(
                            Code::TypeMismatch,
                            otherwise.span,
                            format!("the branches of this `if` differ in type: `{a}` and `{b}`"),
                            format!("of type `{b}`"),
                        )
                        .with_secondary(then.span, format!("of type `{a}`"))
                        .with_note("both branches of an `if` expression must have the same type"),
                    )
                })
            }
        }
    }

    fn similar_name(&self, n: &str) -> Option<String> {
        // The distance is quadratic in the names' lengths: no hint for a
        // name longer than any a person would misspell.
        if n.len() > 64 {
            return None;
        }
        let names = self
            .scopes
            .iter()
            .flat_map(|s| s.names.keys().cloned())
            .chain(vocab::CONSTANTS.iter().map(|(c, _)| c.to_string()));
        names
            .filter(|c| c.len().abs_diff(n.len()) <= 2 && c != n && edit_distance(c, n) <= 2)
            .min_by_key(|c| edit_distance(c, n))
    }

    /// Both operands of `op` must fit `want`.
    fn operands(&mut self, op: BinOp, left: (&Type, Span), right: (&Type, Span), want: &Type) {
        self.expect(
            left.0,
            want,
            left.1,
            &format!("the left side of `{}`", op.symbol()),
        );
        self.expect(
            right.0,
            want,
            right.1,
            &format!("the right side of `{}`", op.symbol()),
        );
    }

    fn binary(&mut self, span: Span, op: BinOp, a: &Expr, b: &Expr) -> Type {
        let (x, y) = (self.expr(a), self.expr(b));
        use BinOp::*;
        match op {
            Eq | Ne => {
                if !x.fits(&y) && !y.fits(&x) {
                    self.err(Diagnostic::error(
                        Code::TypeMismatch,
                        span,
                        format!("cannot compare a `{x}` with a `{y}`"),
                        "different types",
                    ));
                }
                Type::Bool
            }
            And | Or => {
                self.operands(op, (&x, a.span), (&y, b.span), &Type::Bool);
                Type::Bool
            }
            In => {
                match &y {
                    Type::List(e) => self.expect(&x, e, a.span, "the tested value"),
                    Type::Map(k, _) => self.expect(&x, k, a.span, "the tested key"),
                    Type::Range => self.expect(&x, &Type::Int, a.span, "the tested value"),
                    Type::Any | Type::Tuple(_) => {}
                    other => {
                        self.err(Diagnostic::error(
                            Code::TypeMismatch,
                            b.span,
                            format!("cannot test membership in a `{other}`"),
                            "expected a list, map or range",
                        ));
                    }
                }
                Type::Bool
            }
            Add if matches!((&x, &y), (Type::Str, Type::Str)) => Type::Str,
            Add if matches!((&x, &y), (Type::List(_), Type::List(_))) => match x.join(&y) {
                Some(t) => t,
                None => self.err(Diagnostic::error(
                    Code::TypeMismatch,
                    span,
                    format!("cannot join a `{x}` and a `{y}`"),
                    "element types differ",
                )),
            },
            Lt | Le | Gt | Ge => {
                self.operands(op, (&x, a.span), (&y, b.span), &Type::Int);
                Type::Bool
            }
            _ => {
                self.operands(op, (&x, a.span), (&y, b.span), &Type::Int);
                Type::Int
            }
        }
    }

    fn call(&mut self, span: Span, callee: &Expr, args: &[Arg]) -> Type {
        let (name, params, ret): (String, Vec<(String, Type, bool)>, Type) = match &callee.kind {
            ExprKind::Name(n) => {
                if let Some(f) = self.functions.get(n) {
                    let params = f
                        .def
                        .params
                        .iter()
                        .zip(&f.params)
                        .map(|(p, t)| (p.name.name.clone(), t.clone(), p.default.is_none()))
                        .collect();
                    let (ret, id) = (f.ret.clone(), f.id);
                    self.refer(callee.span, Target::Def(id));
                    (n.clone(), params, ret)
                } else if let Some(sig) = self.builtins.get(&(Receiver::Free, n.as_str())) {
                    let (params, ret, name) = (sig_params(sig), sig.ret.clone(), sig.name);
                    self.refer(callee.span, Target::Builtin(Receiver::Free, name));
                    (n.clone(), params, ret)
                } else {
                    for a in args {
                        self.expr(&a.value);
                    }
                    return self.err(Diagnostic::error(
                        Code::UnknownName,
                        callee.span,
                        format!("no function named `{n}`"),
                        "unknown function",
                    ));
                }
            }
            ExprKind::Field(target, method) => {
                let t = self.expr(target);
                if t == Type::Any {
                    args.iter().for_each(|a| {
                        self.expr(&a.value);
                    });
                    return Type::Any;
                }
                match Receiver::of(&t).and_then(|r| self.builtins.get(&(r, method.name.as_str()))) {
                    Some(sig) => {
                        let (params, ret) = (sig_params(sig), sig.ret.clone());
                        let to = Target::Builtin(sig.receiver, sig.name);
                        self.refer(method.span, to);
                        (method.name.clone(), params, ret)
                    }
                    None => {
                        let methods: Vec<&str> = match Receiver::of(&t) {
                            Some(r) => {
                                let mut m: Vec<&str> = self
                                    .builtins
                                    .keys()
                                    .filter(|(rr, _)| *rr == r)
                                    .map(|(_, n)| *n)
                                    .collect();
                                m.sort();
                                m
                            }
                            None => Vec::new(),
                        };
                        let mut d = Diagnostic::error(
                            Code::NoSuchMember,
                            method.span,
                            format!("a `{t}` has no method `{}`", method.name),
                            "no such method",
                        );
                        if !methods.is_empty() {
                            d = d.with_note(format!("its methods are: {}", methods.join(", ")));
                        }
                        return self.err(d);
                    }
                }
            }
            _ => {
                return self.err(Diagnostic::error(
                    Code::TypeMismatch,
                    callee.span,
                    "only named functions and methods can be called",
                    "not callable",
                ))
            }
        };
        let names: Vec<&str> = params.iter().map(|(n, _, _)| n.as_str()).collect();
        if let Some(index) = &mut self.index {
            index.calls.push(index::Call {
                span,
                callee: name.clone(),
                params: names.iter().map(|n| n.to_string()).collect(),
            });
        }
        let required: Vec<bool> = params.iter().map(|(_, _, r)| *r).collect();
        match vocab::match_args(&name, &names, &required, args, span) {
            Err(d) => {
                self.err(d);
                args.iter().for_each(|a| {
                    self.expr(&a.value);
                });
            }
            Ok(slots) => {
                for ((pname, want, _), slot) in params.iter().zip(slots) {
                    if let Some(i) = slot {
                        let got = self.expr(&args[i].value);
                        self.expect(
                            &got,
                            want,
                            args[i].value.span,
                            &format!("argument `{pname}` of `{name}`"),
                        );
                    }
                }
            }
        }
        ret
    }
}

fn sig_params(sig: &Signature) -> Vec<(String, Type, bool)> {
    sig.params
        .iter()
        .map(|p| {
            (
                p.name.to_string(),
                p.ty.clone(),
                p.default == vocab::Default::Required,
            )
        })
        .collect()
}

/// Levenshtein distance, for "did you mean" hints.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            cur.push(
                (prev[j] + usize::from(ca != *cb))
                    .min(prev[j + 1] + 1)
                    .min(cur[j] + 1),
            );
        }
        prev = cur;
    }
    prev[b.len()]
}
