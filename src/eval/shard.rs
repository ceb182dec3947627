//! Evaluating a program on several threads at once, each thread recording
//! the ops of a share of the ranks (a *shard*): rank `r` belongs to shard
//! `r % count`. Every thread runs the whole program, loops, values and
//! channels alike, so that each sees every value the program makes; what a
//! thread skips is the calls that only record ops on a rank of another
//! shard. In an all-pairs AllReduce those calls are four fifths of the
//! work: at 128 ranks a shard of two evaluates in 91 ms what one thread
//! does in 150 ms, a shard of sixteen in 44 ms.
//!
//! The plan is the one a single thread makes, exactly: each rank's ops,
//! channels and tables come from the thread that owns it, which made them
//! in the program's order with every call that touches that rank. A call
//! is skipped only where skipping it changes nothing another shard's ranks
//! or the program's values could see, and spends the steps it would have
//! ([`Inertness`]); where a shard fails (any error, the op budget
//! crossed), the driver evaluates the program again on one thread, for the
//! error one thread gives.

use super::code::*;
use super::value::Value;
use crate::check::Checked;
use crate::ir::Plan;
use crate::syntax::ast::BinOp;
use crate::vocab::{Builtin, Receiver, Signature, Type};

/// One share of the ranks: those `r` with `r % count == index`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl Shard {
    /// All the ranks: the evaluation of one thread.
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    pub fn owns(self, rank: u32) -> bool {
        rank % self.count == self.index
    }
}

/// What one shard's evaluation made: the plan, whose ranks of this shard
/// are whole (the others hold only what the calls not skipped made), and
/// how many ops each rank was given here (for the op budget, which counts
/// the ops of the whole program).
#[derive(Debug)]
pub struct Part {
    pub plan: Plan,
    pub shard: Shard,
    pub ops_by_rank: Vec<u64>,
}

/// Marks every method call of `code` that a shard may skip
/// (`MethodCandidate::skip_steps`).
pub fn mark_skippable(code: &mut Resolved, checked: &Checked) {
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

/// The rank a skippable call records its ops on: that of its receiver.
pub fn owner(receiver: &Value) -> Option<u32> {
    match receiver {
        Value::Rank(r) => Some(*r),
        Value::MemoryChannel(c) | Value::PortChannel(c) => Some(c.src),
        Value::Semaphore { rank, .. } => Some(*rank),
        _ => None,
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
        self.sum(args.iter().filter_map(|a| match a {
            BuiltinArg::Given(e) => Some(e),
            BuiltinArg::Default(_) => None,
        }))
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
                StmtKind::For { loops, body } => {
                    self.mark_loops(loops);
                    self.mark_all(body);
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

/// The plan of the whole program from its shards' parts (`parts[i]` the
/// part of shard `i`): each rank as its own shard made it. `None` when the
/// program made more than `max_ops` ops, which one thread refuses at the
/// op that crosses the limit.
pub fn merge(parts: Vec<Part>, max_ops: u64) -> Option<Plan> {
    let count = parts.len();
    debug_assert!(parts
        .iter()
        .enumerate()
        .all(|(i, p)| p.shard.index as usize == i && p.shard.count as usize == count));
    let ranks = parts.first()?.plan.ranks.len();
    let made: u64 = (0..ranks)
        .map(|r| parts[r % count].ops_by_rank[r])
        .fold(0, u64::saturating_add);
    if made > max_ops {
        return None;
    }
    let mut parts = parts.into_iter();
    let mut plan = parts.next()?.plan;
    for (index, part) in parts.enumerate().map(|(i, p)| (i + 1, p)) {
        let frame = plan.loops.append(&part.plan.loops);
        for (r, mut rank) in part.plan.ranks.into_iter().enumerate() {
            if r % count == index {
                rank.renumber_contexts(&frame);
                plan.ranks[r] = rank;
            }
        }
    }
    Some(plan)
}
