//! Evaluating a program on several threads at once, each thread recording
//! the ops of a share of the ranks (a *shard*): rank `r` belongs to shard
//! `r % count`. Every thread runs the whole program, values and channels
//! alike, so that each sees every value the program makes; what a thread
//! skips is what only records on a rank of another shard: a call whose
//! receiver is such a rank (its arguments inert: `inert.rs`), and a
//! whole iteration, for another shard's rank, of a loop over ranks
//! ([`RankLoop`]). In an all-pairs AllReduce at 128 ranks, two threads
//! evaluate in 82 ms what one does in 145.
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
use crate::diag::{Code, Diagnostic, Span};
use crate::ir::Plan;

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

/// The rank a skippable call records its ops on: that of its receiver.
pub fn owner(receiver: &Value) -> Option<u32> {
    match receiver {
        Value::Rank(r) => Some(*r),
        Value::MemoryChannel(c) | Value::PortChannel(c) => Some(c.src),
        Value::Semaphore { rank, .. } => Some(*rank),
        _ => None,
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
        bound_once: bool,
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
        let mut bound = None;
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
                        if let Flow::Return(v) =
                            ev.loop_body(body, bound_once.then_some(&mut bound))?
                        {
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
