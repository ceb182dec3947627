//! What the evaluator may know of an expression before it runs it: that
//! it is *inert* (it gives a value or fails, and changes nothing else).
//! Two uses, marked on the resolved program once, before it runs: a call
//! a shard may skip, spending the steps its arguments would (`shard.rs`),
//! and a loop of one call bound once for all its iterations, which bind
//! again only the arguments that change (`StmtKind::For::bound_once`).

use super::code::*;
use crate::check::Checked;
use crate::syntax::ast::BinOp;
use crate::vocab::{Builtin, Receiver, Signature, Type};

/// Marks in `code` every method call that a shard may skip
/// (`MethodCandidate::skip_steps`), and every loop that binds its one
/// call once (`StmtKind::For::bound_once`, `MethodCandidate::varying`).
pub fn mark(code: &mut Resolved, checked: &Checked) {
    // A function's calls are inert when its body is: known before any
    // call of it is looked at.
    let bodies = Inertness {
        checked,
        calls: Vec::new(),
    };
    let calls = code
        .functions
        .iter()
        .map(|f| bodies.call_steps(f))
        .collect();
    let inertness = Inertness { checked, calls };
    inertness.mark_all(&mut code.main);
    for f in &mut code.functions {
        inertness.mark_all(&mut f.body);
    }
}

/// The places `pattern` binds, added to `out`.
fn places(pattern: &Pattern, out: &mut Vec<Place>) {
    match pattern {
        Pattern::Bind(place, _) => out.push(*place),
        Pattern::Wildcard => {}
        Pattern::Tuple(items, _) => items.iter().for_each(|p| places(p, out)),
    }
}

/// What makes an expression inert: evaluating it does nothing but give
/// its value or fail. It records nothing, makes no channel, scratch or
/// semaphore, assigns no global, and spends a number of steps known
/// before it runs: no loop, no operator that copies or scans a list or a
/// string (the checker says which `+`, `==` and `!=` do not), and only
/// calls of functions that are inert themselves and call none (a step
/// each). A shard that skips a call spends the steps of its arguments, so
/// that every shard spends the steps one thread does, and meets the step
/// limit where it does.
struct Inertness<'a> {
    checked: &'a Checked,
    /// By function: the steps a call of it spends besides its arguments',
    /// `None` when a call of it is not inert.
    calls: Vec<Option<u64>>,
}

impl Inertness<'_> {
    /// The steps `e` spends, `None` if it is not inert.
    fn steps(&self, e: &Expr) -> Option<u64> {
        let both = |a, b| Some(self.steps(a)? + self.steps(b)?);
        match &e.kind {
            ExprKind::Const(_) | ExprKind::Read(_) => Some(0),
            ExprKind::Unary(_, a) | ExprKind::Field(a, ..) => self.steps(a),
            ExprKind::Binary(op, a, b) => {
                let cheap = match op {
                    BinOp::Add | BinOp::Eq | BinOp::Ne => {
                        self.checked.cheap_operators.contains(&e.span)
                    }
                    BinOp::In => false,
                    _ => true,
                };
                both(a, b).filter(|_| cheap)
            }
            ExprKind::Range(a, b) | ExprKind::Index(a, b) => both(a, b),
            ExprKind::Tuple(items) | ExprKind::List(items) => self.sum(items.iter()),
            ExprKind::Map(entries) => self.sum(entries.iter().flat_map(|(k, v)| [k, v])),
            ExprKind::If(c, a, b) => {
                // Either way, the same steps.
                let (a, b) = (self.steps(a)?, self.steps(b)?);
                Some(self.steps(c)? + a).filter(|_| a == b)
            }
            ExprKind::Builtin(sig, args) => {
                let gives_a_value = matches!(
                    sig.builtin,
                    Builtin::Rank | Builtin::Len | Builtin::Min | Builtin::Max | Builtin::TbGroup
                );
                self.args(args).filter(|_| gives_a_value)
            }
            ExprKind::Call(f, args) => {
                let given = args.iter().filter_map(|a| match a {
                    UserArg::Given(e) => Some(e),
                    UserArg::Default => None,
                });
                Some(self.calls.get(*f as usize).copied().flatten()? + self.sum(given)?)
            }
            ExprKind::Method(..) | ExprKind::ListComp(..) | ExprKind::MapComp(..) => None,
        }
    }

    fn sum<'e>(&self, exprs: impl Iterator<Item = &'e Expr>) -> Option<u64> {
        exprs.map(|e| self.steps(e)).sum()
    }

    fn args(&self, args: &[BuiltinArg]) -> Option<u64> {
        self.sum(args.iter().filter_map(BuiltinArg::given))
    }

    /// The steps a call of `f` spends besides its arguments', if it is
    /// inert: one (the call), where its body and defaults are inert and
    /// call nothing (whichever way its `if`s go, it spends that one).
    fn call_steps(&self, f: &Function) -> Option<u64> {
        let defaults = f
            .defaults
            .iter()
            .flatten()
            .all(|d| self.steps(d) == Some(0));
        (defaults && self.straight(&f.body)).then_some(1)
    }

    /// Whether `stmts` are inert and call nothing: `let`, assignments of
    /// locals, `if`, `return` and expressions.
    fn straight(&self, stmts: &[Stmt]) -> bool {
        let free = |e: &Expr| self.steps(e) == Some(0);
        stmts.iter().all(|s| match &s.kind {
            StmtKind::Let { value, .. } => free(value),
            StmtKind::Assign { place, value, .. } => {
                matches!(place, Place::Local(_)) && free(value)
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => free(cond) && self.straight(then) && self.straight(otherwise),
            StmtKind::Return(value) => value.as_ref().is_none_or(free),
            StmtKind::Expr(e) => free(e),
            StmtKind::Param { .. }
            | StmtKind::Program { .. }
            | StmtKind::For { .. }
            | StmtKind::Pipeline { .. } => false,
        })
    }

    /// The steps a skipped call of `sig` with `args` spends, if a shard
    /// that does not own the receiver's rank may skip it: a method of a
    /// rank, a memory or port channel or a semaphore (each records ops on
    /// that one rank only, and gives nothing back) whose arguments are
    /// inert. Switch channels are left out: a switch op's checks read what
    /// earlier ops on other ranks recorded.
    fn skip_steps(&self, sig: &Signature, args: &[BuiltinArg]) -> Option<u64> {
        let on_one_rank = matches!(
            sig.receiver,
            Receiver::Rank | Receiver::MemoryChannel | Receiver::PortChannel | Receiver::Semaphore
        );
        self.args(args)
            .filter(|_| on_one_rank && sig.ret == Type::Unit)
    }

    fn mark_all(&self, stmts: &mut [Stmt]) {
        for s in stmts {
            match &mut s.kind {
                StmtKind::Param { default: e, .. }
                | StmtKind::Let { value: e, .. }
                | StmtKind::Assign { value: e, .. }
                | StmtKind::Return(Some(e))
                | StmtKind::Expr(e) => self.mark(e),
                StmtKind::Return(None) => {}
                StmtKind::Program { name, options } => {
                    self.mark(name);
                    options.iter_mut().for_each(|(_, e)| self.mark(e));
                }
                StmtKind::For {
                    loops,
                    body,
                    bound_once,
                    ..
                } => {
                    self.mark_loops(loops);
                    self.mark_all(body);
                    *bound_once = self.binds_once(loops, body);
                }
                StmtKind::If {
                    cond,
                    then,
                    otherwise,
                } => {
                    self.mark(cond);
                    self.mark_all(then);
                    self.mark_all(otherwise);
                }
                StmtKind::Pipeline {
                    unit_size,
                    num_chunks,
                    body,
                } => {
                    self.mark(unit_size);
                    self.mark(num_chunks);
                    self.mark_all(body);
                }
            }
        }
    }

    /// Whether `body`, run by `loops`, is one call of a method that the
    /// loop may bind once: its filter and receiver are inert, and each
    /// argument is a constant, a default, a variable the loop's one clause
    /// does not bind, or an inert expression. Where it is, marks the
    /// arguments of the last kind (`MethodCandidate::varying`): each
    /// iteration evaluates them again, and being inert they change no
    /// variable the others read.
    fn binds_once(&self, loops: &Loops, body: &mut [Stmt]) -> bool {
        let (
            [clause],
            [Stmt {
                kind: StmtKind::Expr(call),
                ..
            }],
        ) = (&loops.clauses[..], body)
        else {
            return false;
        };
        let ExprKind::Method(target, _, candidates) = &mut call.kind else {
            return false;
        };
        let inert = |e: &Expr| self.steps(e).is_some();
        // (A candidate whose arguments do not match binds none: its error
        // is returned where it is picked.)
        let bindable = loops.filter.as_ref().is_none_or(inert)
            && inert(target)
            && candidates
                .iter()
                .flat_map(|c| c.args.iter())
                .all(|args| args.len() <= 64 && args.iter().all(|a| a.given().is_none_or(inert)));
        if !bindable {
            return false;
        }
        let mut bound = Vec::new();
        clause.patterns.iter().for_each(|p| places(p, &mut bound));
        let varies = |e: &Expr| match &e.kind {
            ExprKind::Const(_) => false,
            ExprKind::Read(place) => bound.contains(place),
            _ => true,
        };
        for c in candidates {
            if let Ok(args) = &c.args {
                c.varying = (args.iter().enumerate())
                    .filter(|(_, a)| a.given().is_some_and(varies))
                    .fold(0, |mask, (i, _)| mask | 1 << i);
            }
        }
        true
    }

    fn mark_loops(&self, loops: &mut Loops) {
        for clause in &mut loops.clauses {
            self.mark(&mut clause.iter);
        }
        if let Some(filter) = &mut loops.filter {
            self.mark(filter);
        }
    }

    fn mark(&self, e: &mut Expr) {
        match &mut e.kind {
            ExprKind::Const(_) | ExprKind::Read(_) => {}
            ExprKind::Unary(_, a) | ExprKind::Field(a, ..) => self.mark(a),
            ExprKind::Binary(_, a, b) | ExprKind::Range(a, b) | ExprKind::Index(a, b) => {
                self.mark(a);
                self.mark(b);
            }
            ExprKind::If(c, a, b) => {
                self.mark(c);
                self.mark(a);
                self.mark(b);
            }
            ExprKind::Tuple(items) | ExprKind::List(items) => {
                items.iter_mut().for_each(|e| self.mark(e))
            }
            ExprKind::Map(entries) => entries.iter_mut().for_each(|(k, v)| {
                self.mark(k);
                self.mark(v);
            }),
            ExprKind::ListComp(item, loops) => {
                self.mark(item);
                self.mark_loops(loops);
            }
            ExprKind::MapComp(k, v, loops) => {
                self.mark(k);
                self.mark(v);
                self.mark_loops(loops);
            }
            ExprKind::Call(_, args) => args.iter_mut().for_each(|a| {
                if let UserArg::Given(e) = a {
                    self.mark(e);
                }
            }),
            ExprKind::Builtin(_, args) => self.mark_args(args),
            ExprKind::Method(receiver, _, candidates) => {
                self.mark(receiver);
                for c in candidates {
                    if let Ok(args) = &mut c.args {
                        c.skip_steps = self.skip_steps(&c.sig, args);
                        self.mark_args(args);
                    }
                }
            }
        }
    }

    fn mark_args(&self, args: &mut [BuiltinArg]) {
        for a in args {
            if let BuiltinArg::Given(e) = a {
                self.mark(e);
            }
        }
    }
}
