//! Lowering a checked program to its resolved form (`code.rs`): names to
//! places, calls to functions and builtins with matched arguments, literals
//! and constants to values. It runs once, after the type checker accepted
//! the program, and relies on what the checker proved: a name it cannot
//! resolve, or a call that does not match, is reported but never expected.

use super::calls::{constant, default_value};
use super::code::*;
use crate::check::Checked;
use crate::diag::{Code, Diagnostic, Span};
use crate::syntax::ast;
use crate::vocab::{self, Receiver, Signature};
use std::collections::HashMap;
use std::rc::Rc;

type Res<T> = Result<T, Diagnostic>;

/// Resolves `stmts` (the main file) and the functions it may call:
/// `imported` ones and those it defines.
pub fn lower(stmts: &[ast::Stmt], imported: &[Rc<ast::FnDef>], checked: &Checked) -> Res<Resolved> {
    let defined = stmts.iter().filter_map(|s| match &s.kind {
        ast::StmtKind::Fn(f) => Some(f.clone()),
        _ => None,
    });
    let defs: Vec<Rc<ast::FnDef>> = imported.iter().cloned().chain(defined).collect();
    let mut free = HashMap::new();
    let mut methods: HashMap<&'static str, Vec<Rc<Signature>>> = HashMap::new();
    for sig in vocab::signatures() {
        let sig = Rc::new(sig);
        if sig.receiver == Receiver::Free {
            free.insert(sig.name, sig);
        } else {
            methods.entry(sig.name).or_default().push(sig);
        }
    }
    let mut l = Lowerer {
        globals: HashMap::new(),
        global_names: Vec::new(),
        scopes: Vec::new(),
        next: 0,
        frame: 0,
        // A later definition of a name wins, as the checker reports twice-defined ones.
        functions: defs
            .iter()
            .enumerate()
            .map(|(i, f)| (f.name.name.clone(), i as u32))
            .collect(),
        defs: defs.clone(),
        free,
        methods,
        for_statements: 0,
    };
    // The file's own statements bind globals: no scope of their own.
    let main = stmts
        .iter()
        .filter_map(|s| l.stmt(s).transpose())
        .collect::<Res<_>>()?;
    let main_frame = l.frame;
    // Function bodies see every global the file declares (as the checker
    // saw them), so they are lowered after the top level.
    let mut functions = Vec::with_capacity(defs.len());
    for f in &defs {
        functions.push(l.function(f)?);
    }
    let mut code = Resolved {
        main,
        main_frame,
        globals: l.global_names,
        functions,
        for_statements: l.for_statements,
    };
    super::inert::mark(&mut code, checked);
    Ok(code)
}

struct Lowerer {
    /// The file's top-level names and their global slots.
    globals: HashMap<String, u32>,
    global_names: Vec<Rc<str>>,
    /// The open scopes of the frame being lowered, innermost last; empty at
    /// the top level of the file (where names are globals).
    scopes: Vec<HashMap<String, u32>>,
    /// The frame's first free slot, and how many slots it needs at most.
    next: u32,
    frame: u32,
    functions: HashMap<String, u32>,
    /// The functions, by id.
    defs: Vec<Rc<ast::FnDef>>,
    free: HashMap<&'static str, Rc<Signature>>,
    methods: HashMap<&'static str, Vec<Rc<Signature>>>,
    /// `for` statements numbered so far.
    for_statements: u32,
}

impl Lowerer {
    fn function(&mut self, f: &ast::FnDef) -> Res<Function> {
        let n = f.params.len() as u32;
        (self.next, self.frame) = (n, n);
        // Defaults run in the callee's frame, above its parameters, and see
        // only globals.
        let mut defaults = Vec::with_capacity(f.params.len());
        for p in &f.params {
            defaults.push(p.default.as_ref().map(|d| self.expr(d)).transpose()?);
        }
        self.scopes.push(
            f.params
                .iter()
                .enumerate()
                .map(|(i, p)| (p.name.name.clone(), i as u32))
                .collect(),
        );
        let body = self.block(&f.body);
        self.scopes.clear();
        Ok(Function {
            defaults,
            body: body?,
            frame: self.frame,
        })
    }

    /// Lowers `stmts` in a scope of their own.
    fn block(&mut self, stmts: &[ast::Stmt]) -> Res<Vec<Stmt>> {
        self.scoped(|l| stmts.iter().filter_map(|s| l.stmt(s).transpose()).collect())
    }

    /// Runs `f` in a new scope whose slots are freed after it.
    fn scoped<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        let next = self.next;
        self.scopes.push(HashMap::new());
        let out = f(self);
        self.scopes.pop();
        self.next = next;
        out
    }

    /// The place of a new binding of `name` in the innermost scope (the
    /// same place when that scope already binds it, as a rebinding `let`
    /// replaces the value).
    fn bind(&mut self, name: &str) -> Place {
        let Some(scope) = self.scopes.last_mut() else {
            let next = self.global_names.len() as u32;
            let slot = *self.globals.entry(name.to_string()).or_insert(next);
            if slot == next {
                self.global_names.push(Rc::from(name));
            }
            return Place::Global(slot);
        };
        if let Some(&slot) = scope.get(name) {
            return Place::Local(slot);
        }
        let slot = self.next;
        scope.insert(name.to_string(), slot);
        self.next += 1;
        self.frame = self.frame.max(self.next);
        Place::Local(slot)
    }

    fn lookup(&self, name: &str) -> Option<Place> {
        self.scopes
            .iter()
            .rev()
            .find_map(|s| s.get(name).map(|&slot| Place::Local(slot)))
            .or_else(|| self.globals.get(name).map(|&slot| Place::Global(slot)))
    }

    fn stmt(&mut self, stmt: &ast::Stmt) -> Res<Option<Stmt>> {
        use ast::StmtKind as S;
        let kind = match &stmt.kind {
            S::Import { .. } | S::Fn(_) => return Ok(None),
            S::Param(p) => {
                let default = self.expr(&p.default)?;
                let Place::Global(slot) = self.bind(&p.name.name) else {
                    return Err(unexpected(stmt.span, "a `param` inside a block"));
                };
                StmtKind::Param {
                    slot,
                    name: p.name.clone(),
                    default,
                }
            }
            S::Program { name, options } => StmtKind::Program {
                name: self.expr(name)?,
                options: options
                    .iter()
                    .map(|o| Ok((o.key.clone(), self.expr(&o.value)?)))
                    .collect::<Res<_>>()?,
            },
            S::Let { pattern, value } => {
                // The value first: `let x = x + 1` reads the outer `x`.
                let value = self.expr(value)?;
                StmtKind::Let {
                    pattern: self.pattern(pattern),
                    value,
                }
            }
            S::Assign { target, value } => StmtKind::Assign {
                place: self
                    .lookup(&target.name)
                    .ok_or_else(|| unresolved(target.span, &target.name))?,
                target: target.clone(),
                value: self.expr(value)?,
            },
            S::For { loops, body } => self.scoped(|l| {
                l.for_statements += 1;
                Ok(StmtKind::For {
                    loops: l.loops(loops)?,
                    body: l.block(body)?,
                    id: l.for_statements - 1,
                    bound_once: false,
                })
            })?,
            S::If {
                cond,
                then,
                otherwise,
            } => StmtKind::If {
                cond: self.expr(cond)?,
                then: self.block(then)?,
                otherwise: self.block(otherwise)?,
            },
            S::Return(value) => StmtKind::Return(value.as_ref().map(|e| self.expr(e)).transpose()?),
            S::Pipeline { args, body } => {
                let slots = vocab::match_args(
                    "pipeline",
                    &["unit_size", "num_chunks"],
                    &[true, true],
                    args,
                    stmt.span,
                )?;
                let mut given = slots.into_iter().flatten().map(|i| &args[i].value);
                let (Some(unit_size), Some(num_chunks)) = (given.next(), given.next()) else {
                    return Err(unexpected(stmt.span, "a pipeline without its settings"));
                };
                StmtKind::Pipeline {
                    unit_size: self.expr(unit_size)?,
                    num_chunks: self.expr(num_chunks)?,
                    body: self.block(body)?,
                }
            }
            S::Expr(e) => StmtKind::Expr(self.expr(e)?),
        };
        Ok(Some(Stmt {
            kind,
            span: stmt.span,
        }))
    }

    fn pattern(&mut self, p: &ast::Pattern) -> Pattern {
        match p {
            ast::Pattern::Name(id) => {
                Pattern::Bind(self.bind(&id.name), Rc::from(id.name.as_str()))
            }
            ast::Pattern::Wildcard(_) => Pattern::Wildcard,
            ast::Pattern::Tuple(items, span) => {
                Pattern::Tuple(items.iter().map(|p| self.pattern(p)).collect(), *span)
            }
        }
    }

    /// The clauses of a loop, each iterable lowered before its variables
    /// are bound (in the scope the caller opened).
    fn loops(&mut self, loops: &ast::Loops) -> Res<Loops> {
        let mut clauses = Vec::with_capacity(loops.clauses.len());
        for c in &loops.clauses {
            let iter = self.expr(&c.iter)?;
            let patterns = c.patterns.iter().map(|p| self.pattern(p)).collect();
            clauses.push(ForClause { patterns, iter });
        }
        let filter = loops.filter.as_ref().map(|f| self.expr(f)).transpose()?;
        Ok(Loops { clauses, filter })
    }

    fn exprs(&mut self, items: &[ast::Expr]) -> Res<Vec<Expr>> {
        items.iter().map(|e| self.expr(e)).collect()
    }

    fn boxed(&mut self, e: &ast::Expr) -> Res<Box<Expr>> {
        Ok(Box::new(self.expr(e)?))
    }

    fn expr(&mut self, e: &ast::Expr) -> Res<Expr> {
        use ast::ExprKind as E;
        let kind = match &e.kind {
            E::Int(v) => {
                ExprKind::Const(super::Value::int((*v).into()).expect("a literal is an int"))
            }
            E::Str(s) => ExprKind::Const(super::Value::Str(Rc::from(s.as_str()))),
            E::Bool(b) => ExprKind::Const(super::Value::Bool(*b)),
            E::Name(n) => match self.lookup(n) {
                Some(place) => ExprKind::Read(place),
                None => ExprKind::Const(constant(n).ok_or_else(|| unresolved(e.span, n))?),
            },
            E::Unary(op, inner) => ExprKind::Unary(*op, self.boxed(inner)?),
            E::Binary(op, a, b) => ExprKind::Binary(*op, self.boxed(a)?, self.boxed(b)?),
            E::Range(a, b) => ExprKind::Range(self.boxed(a)?, self.boxed(b)?),
            E::Call(callee, args) => self.call(e.span, callee, args)?,
            E::Field(target, field) => {
                let which =
                    Field::of(&field.name).ok_or_else(|| unresolved(field.span, &field.name))?;
                ExprKind::Field(self.boxed(target)?, which, field.clone())
            }
            E::Index(target, index) => ExprKind::Index(self.boxed(target)?, self.boxed(index)?),
            E::Tuple(items) => ExprKind::Tuple(self.exprs(items)?),
            E::List(items) => ExprKind::List(self.exprs(items)?),
            E::ListComp(item, loops) => self.scoped(|l| {
                let loops = l.loops(loops)?;
                Ok(ExprKind::ListComp(l.boxed(item)?, Box::new(loops)))
            })?,
            E::Map(entries) => ExprKind::Map(
                entries
                    .iter()
                    .map(|(k, v)| Ok((self.expr(k)?, self.expr(v)?)))
                    .collect::<Res<_>>()?,
            ),
            E::If(cond, then, otherwise) => {
                ExprKind::If(self.boxed(cond)?, self.boxed(then)?, self.boxed(otherwise)?)
            }
            E::MapComp(k, v, loops) => self.scoped(|l| {
                let loops = l.loops(loops)?;
                Ok(ExprKind::MapComp(l.boxed(k)?, l.boxed(v)?, Box::new(loops)))
            })?,
        };
        Ok(Expr { kind, span: e.span })
    }

    fn call(&mut self, span: Span, callee: &ast::Expr, args: &[ast::Arg]) -> Res<ExprKind> {
        match &callee.kind {
            ast::ExprKind::Name(name) => {
                if let Some(&id) = self.functions.get(name) {
                    return self.user_call(span, id, name, args);
                }
                let sig = self
                    .free
                    .get(name.as_str())
                    .cloned()
                    .ok_or_else(|| unresolved(callee.span, name))?;
                let args = self.builtin_args(span, &sig, args)?;
                Ok(ExprKind::Builtin(sig, args))
            }
            ast::ExprKind::Field(target, method) => {
                let recv = self.boxed(target)?;
                let sigs = self
                    .methods
                    .get(method.name.as_str())
                    .cloned()
                    .unwrap_or_default();
                let mut candidates = Vec::with_capacity(sigs.len());
                for sig in sigs {
                    candidates.push(MethodCandidate {
                        receiver: sig.receiver,
                        args: self.builtin_args(span, &sig, args),
                        sig,
                        skip_steps: None,
                        varying: 0,
                    });
                }
                Ok(ExprKind::Method(recv, method.clone(), candidates))
            }
            _ => Err(unexpected(
                callee.span,
                "a call of something not a function",
            )),
        }
    }

    fn user_call(&mut self, span: Span, id: u32, name: &str, args: &[ast::Arg]) -> Res<ExprKind> {
        let def = self.defs[id as usize].clone();
        let names: Vec<&str> = def.params.iter().map(|p| p.name.name.as_str()).collect();
        let required: Vec<bool> = def.params.iter().map(|p| p.default.is_none()).collect();
        let slots = vocab::match_args(name, &names, &required, args, span)?;
        let mut out = Vec::with_capacity(slots.len());
        for slot in slots {
            out.push(match slot {
                Some(i) => UserArg::Given(self.expr(&args[i].value)?),
                None => UserArg::Default,
            });
        }
        Ok(ExprKind::Call(id, out))
    }

    /// The arguments of a call of builtin `sig`, in parameter order.
    fn builtin_args(
        &mut self,
        span: Span,
        sig: &Signature,
        args: &[ast::Arg],
    ) -> Res<Vec<BuiltinArg>> {
        let names: Vec<&str> = sig.params.iter().map(|p| p.name).collect();
        let required: Vec<bool> = sig
            .params
            .iter()
            .map(|p| p.default == vocab::Default::Required)
            .collect();
        let slots = vocab::match_args(sig.name, &names, &required, args, span)?;
        let mut out = Vec::with_capacity(slots.len());
        for (param, slot) in sig.params.iter().zip(slots) {
            out.push(match slot {
                Some(i) => BuiltinArg::Given(self.expr(&args[i].value)?),
                None => BuiltinArg::Default(default_value(param.default)),
            });
        }
        Ok(out)
    }
}

/// A name the checker would have rejected.
fn unresolved(span: Span, name: &str) -> Diagnostic {
    Diagnostic::error(
        Code::UnknownName,
        span,
        format!("`{name}` is not defined"),
        "unknown name",
    )
}

/// A construct the checker would have rejected.
fn unexpected(span: Span, what: &str) -> Diagnostic {
    Diagnostic::error(
        Code::Misplaced,
        span,
        format!("{what} is not allowed here"),
        "not allowed",
    )
}
