//! Evaluating a program on several threads at once, each thread recording
//! the ops of a share of the ranks (a *shard*): rank `r` belongs to shard
//! `r % count`. Every thread runs the whole program, values and channels
//! alike, so that each sees every value the program makes; what a thread
//! skips is what only records on a rank of another shard: a call whose
//! receiver is such a rank ([`Inertness`]), and a whole iteration, for
//! another shard's rank, of a loop over ranks ([`RankLoop`]). In an
//! all-pairs AllReduce at 128 ranks, two threads evaluate in 82 ms what one
//! does in 145.
//!
//! The plan is the one a single thread makes, exactly: each rank's ops,
//! channels and tables come from the thread that owns it, which made them
//! in the program's order with everything that touches that rank. What is
//! skipped changes nothing another shard's ranks or the program's values
//! could see, and the steps it would have spent are counted; where a shard
//! fails (any error, a budget crossed, a loop that touched more than its
//! rank), the driver evaluates the program again on one thread, for the
//! error one thread gives.

use super::code::*;
use super::value::Value;
use super::{Evaluator, Flow, Limits, Res, Stop};
use crate::check::Checked;
use crate::diag::{Code, Diagnostic, Span};
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
/// are whole (the others hold only what the calls and iterations not
/// skipped made), how many ops each rank was given here (for the op
/// budget, which counts the ops of the whole program), and the steps
/// spent (for the step budget, likewise).
#[derive(Debug)]
pub struct Part {
    pub plan: Plan,
    pub shard: Shard,
    pub ops_by_rank: Vec<u64>,
    pub steps: u64,
    pub watched_steps: WatchedSteps,
}

/// The steps a shard spent in watched loop iterations: those of its own
/// ranks, and those of other ranks' it ran while learning a loop.
#[derive(Debug, Default, Clone, Copy)]
pub struct WatchedSteps {
    pub own: u64,
    pub others: u64,
}

/// What a shard knows of a `for` statement over ranks: a loop each of
/// whose iterations, for rank `v`, touches rank `v` only (its ops,
/// channels, scratch, semaphores and barriers; no switch channel or
/// pipeline, no variable from outside the loop, no early `return`) may be
/// skipped for other shards' ranks. Every shard runs a loop's first
/// [`PROBE`] iterations over ranks whole, watching each; if all touched
/// their own rank only, a shard runs only its own ranks' iterations from
/// then on, still watching them: one that touches more is a failure (the
/// other shards skipped it), and one thread evaluates the program again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RankLoop {
    /// Not run yet, or fewer than `PROBE` iterations so far.
    Unknown,
    /// The iterations watched touched their own rank only: skipped for
    /// other shards' ranks.
    Apart,
    /// Some iteration touched more: run whole, as any loop.
    Mixed,
}

/// The iterations of a loop over ranks every shard runs, watching, before
/// it skips other shards' ranks'.
const PROBE: u32 = 4;

/// What an iteration being watched may write: the variables made inside
/// the loop (in the watched loop's frame, slots from the loop variable's
/// on) or in the functions it calls. Writing another is leaving a trace
/// another shard's skipping would not leave.
#[derive(Debug)]
pub struct Watch {
    base: usize,
    first_slot: u32,
    wrote_outside: bool,
}

impl Watch {
    pub fn note_write(&mut self, place: Place, base: usize) {
        let outside = match place {
            Place::Global(_) => true,
            Place::Local(slot) => base == self.base && slot < self.first_slot,
        };
        self.wrote_outside |= outside;
    }
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
                StmtKind::For { loops, body, .. } => {
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
/// program made more ops or took more steps than `limits` allow, which
/// one thread refuses where it crosses the limit.
pub fn merge(parts: Vec<Part>, limits: &Limits) -> Option<Plan> {
    let count = parts.len();
    debug_assert!(parts
        .iter()
        .enumerate()
        .all(|(i, p)| p.shard.index as usize == i && p.shard.count as usize == count));
    let first = parts.first()?;
    let ranks = first.plan.ranks.len();
    let made: u64 = (0..ranks)
        .map(|r| parts[r % count].ops_by_rank[r])
        .fold(0, u64::saturating_add);
    // The steps outside watched iterations are every shard's; each watched
    // iteration's, its owner's.
    let shared = first.steps - first.watched_steps.own - first.watched_steps.others;
    let steps = parts
        .iter()
        .map(|p| p.watched_steps.own)
        .fold(shared, u64::saturating_add);
    if made > limits.max_ops || steps > limits.max_iterations {
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

impl<'c> Evaluator<'c> {
    /// Runs `for` statement `id` as a loop over ranks, where this shard
    /// may skip other shards' ranks' iterations; `None` where it is run
    /// as any loop (one thread, one shard, a loop of several variables,
    /// one inside a watched iteration, or one that touched more).
    pub(super) fn rank_loop(
        &mut self,
        id: u32,
        loops: &'c Loops,
        body: &'c [Stmt],
    ) -> Res<Option<Flow>> {
        let learnt = self.rank_loops[id as usize];
        let ranks = match &self.recorder {
            Some(rec)
                if self.shard.count > 1 && self.watch.is_none() && learnt != RankLoop::Mixed =>
            {
                rec.num_ranks()
            }
            _ => return Ok(None),
        };
        let [clause] = &loops.clauses[..] else {
            return Ok(None);
        };
        let [Pattern::Bind(Place::Local(first_slot), name)] = &clause.patterns[..] else {
            return Ok(None);
        };
        // Walked as `for_each` walks them: a range's ints, a list's items,
        // a map's keys.
        let values: Box<dyn Iterator<Item = Value>> = match self.expr(&clause.iter)? {
            Value::Range(lo, hi) => Box::new((lo..hi).map(Value::Int)),
            Value::List(items) => Box::new((0..items.len()).map(move |i| items[i].clone())),
            Value::Map(m) => Box::new((0..m.entries.len()).map(move |i| m.entries[i].0.clone())),
            other => return Err(self.not_iterable(&other, clause.iter.span)),
        };
        let (mut learnt, mut probed, mut flow) = (learnt, 0, Flow::Next);
        // The variable's entry in `loop_vars`, rewritten by each iteration
        // (`bound_iteration`), and gone once the loop ends or fails.
        let at = self.loop_vars.len();
        let walk = || -> Res<()> {
            for value in values {
                let rank = match value {
                    Value::Int(v) if (0..i64::from(ranks)).contains(&v) => Some(v as u32),
                    _ => None,
                };
                let own = rank.is_none_or(|r| self.shard.owns(r));
                if learnt == RankLoop::Apart && !own {
                    // One thread spends a step on it at least: past the
                    // budget with them, one thread stops (and this shard's
                    // plan is not needed when another fails).
                    self.skipped_iterations += 1;
                    if self.steps + self.skipped_iterations > self.limits.max_iterations
                        || self.cancelled()
                    {
                        self.loop_vars.truncate(at);
                        return Err(self.too_long(clause.iter.span, "loop stopped here"));
                    }
                    continue;
                }
                let watched = rank.filter(|_| learnt != RankLoop::Mixed).map(|r| {
                    if let Some(rec) = self.recorder.as_mut() {
                        rec.watch(r);
                    }
                    self.watch = Some(Watch {
                        base: self.base,
                        first_slot: *first_slot,
                        wrote_outside: false,
                    });
                    self.steps
                });
                let mut returned = false;
                let variable = (Place::Local(*first_slot), name);
                let result =
                    self.bound_iteration(loops, 0, at, variable, || value.clone(), &mut |ev| {
                        if let Flow::Return(v) = ev.block(body)? {
                            flow = Flow::Return(v);
                            returned = true;
                            return Ok(false);
                        }
                        Ok(true)
                    });
                if let Some(before) = watched {
                    let wrote_outside = self.watch.take().is_some_and(|w| w.wrote_outside);
                    let touched_rank_only = self.recorder.as_mut().is_none_or(|rec| rec.unwatch());
                    let spent = self.steps - before;
                    if own {
                        self.watched_steps.own += spent;
                    } else {
                        self.watched_steps.others += spent;
                    }
                    let apart = !wrote_outside && !returned && touched_rank_only;
                    match (learnt, apart) {
                        (RankLoop::Apart, false) => return Err(self.breach(clause.iter.span)),
                        (_, false) => learnt = RankLoop::Mixed,
                        (RankLoop::Unknown, true) => {
                            probed += 1;
                            if probed == PROBE {
                                learnt = RankLoop::Apart;
                            }
                        }
                        _ => {}
                    }
                }
                match result {
                    Ok(()) => {}
                    Err(Stop::Early) => break,
                    Err(Stop::Failed(d)) => return Err(d),
                }
            }
            Ok(())
        };
        let walked = walk();
        self.loop_vars.truncate(at);
        self.loop_values_changed = true;
        walked?;
        if learnt == RankLoop::Unknown && probed > 0 {
            learnt = RankLoop::Apart;
        }
        self.rank_loops[id as usize] = learnt;
        Ok(Some(flow))
    }

    /// The failure of a shard whose own iteration of a loop the others
    /// skip touched more than its rank: never shown, for one thread then
    /// evaluates the program again.
    fn breach(&self, span: Span) -> Diagnostic {
        Diagnostic::error(
            Code::Internal,
            span,
            "a loop over ranks touched more than one rank after its first iterations",
            "the shards that skipped it are wrong",
        )
    }
}
