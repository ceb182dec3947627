//! The passes over the plan IR, in the reference compiler's order:
//! signal/wait pairing check, instruction fusion (run by the evaluator as
//! it records each op, `fuse::Fuser`), data-sync insertion, auto-sync
//! (data-dependency) insertion, instance replication (scratch sized for
//! every instance); then `warnings`, what the executor will not run as
//! meant. The program options switch fusion and auto-sync on and off as
//! they do in the Python DSL. A plan read from JSON gets the pairing check
//! and the warnings only: it is already what a compiler made.

pub mod auto_sync;
pub mod data_sync;
pub mod executor_limits;
pub mod fuse;
pub mod pairing;
pub mod pipeline_coverage;
pub mod port_packets;
pub mod replicate;
pub mod set_order;

use crate::diag::Diagnostic;
use crate::ir::{Op, Plan, RankPlan, PARALLEL_SIZE};

/// When a compiled plan's instances are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Instances {
    /// By the replication pass: the plan every back end and the simulator take.
    Now,
    /// By the JSON writer, a rank at a time: a plan compiled only to be
    /// written holds one instance, a sixteenth of an AllToAll ring's memory.
    AsWritten,
}

/// Runs every pass on a freshly evaluated plan, whose ops the evaluator
/// fused as it made them (`fuse::Fuser`) when the program fuses, making its
/// instances now or leaving them to the writer; says how its signals and
/// waits balance, for `warnings`.
pub fn run(plan: &mut Plan, instances: Instances) -> Result<pairing::Balance, Diagnostic> {
    let balance = pairing::check(plan)?;
    // Whether the passes below take every core (the syncs they add leave
    // it about the same).
    let size = plan.size();
    for_each_op_list(plan, size, &data_sync::insert);
    if plan.options.auto_sync {
        for_each_op_list(plan, size, &auto_sync::insert);
    }
    if instances == Instances::Now || plan.options.instances <= 1 {
        replicate::run(plan, size);
    }
    Ok(balance)
}

/// What a plan that passed the passes (or a plan read from JSON that
/// passed `pairing::check`) will not run as meant: signals the executor
/// will not pair with their waits, then the executor's limits crossed,
/// then values the executor reads as other numbers (`misread_values`).
/// `balance` is what the pairing check found.
///
/// A plan whose instances the writer is to make warns as the plan with
/// them would: every copy of a thread block has the block's ops and
/// tables, so a limit crossed in one is crossed in each, and named in the
/// first copy; signals and waits that pair only per pair of ranks (rare)
/// are counted on the instances, made for it.
pub fn warnings(plan: &Plan, balance: pairing::Balance) -> Vec<Diagnostic> {
    let mut warnings = match (balance, plan.instances_made) {
        (pairing::Balance::RankPairs, false) => {
            let mut made = plan.clone();
            replicate::run(&mut made, plan.size());
            pairing::warnings(&made, balance)
        }
        _ => pairing::warnings(plan, balance),
    };
    let mut crossings = executor_limits::check(plan);
    if !plan.instances_made {
        for c in &mut crossings {
            c.tb = replicate::first_copy(plan, c.tb);
            c.blocks *= plan.options.instances as usize;
        }
    }
    warnings.extend(crossings.iter().map(|c| c.diagnostic(plan)));
    warnings.extend(executor_limits::misread_values(plan));
    warnings.extend(pipeline_coverage::uncovered_ops(plan));
    warnings.extend(port_packets::plain_sources(plan));
    warnings
}

/// Applies `f` to every thread block's op list and, inside it, to every
/// pipeline body (the body first, so the outer list sees the final body);
/// the ranks of a plan of `size` (`Plan::size`) on every core if large.
pub fn for_each_op_list(plan: &mut Plan, size: usize, f: &(dyn Fn(Vec<Op>) -> Vec<Op> + Sync)) {
    fn walk(mut ops: Vec<Op>, f: &(dyn Fn(Vec<Op>) -> Vec<Op> + Sync)) -> Vec<Op> {
        for op in &mut ops {
            if let Some(extra) = op.extra_if_any_mut() {
                extra.body = walk(std::mem::take(&mut extra.body), f);
            }
        }
        f(ops)
    }
    each_rank(&mut plan.ranks, size, &|rank| {
        for tb in &mut rank.threadblocks {
            tb.ops = walk(std::mem::take(&mut tb.ops), f);
        }
    });
}

/// Runs `f` on every rank: on every core when the plan's size
/// (`Plan::size`) is [`PARALLEL_SIZE`] or more.
pub(crate) fn each_rank(ranks: &mut [RankPlan], size: usize, f: &(dyn Fn(&mut RankPlan) + Sync)) {
    let threads = match size {
        0..PARALLEL_SIZE => 1,
        _ => crate::parallel::cores(),
    };
    crate::parallel::for_each_mut(ranks, threads, f);
}
