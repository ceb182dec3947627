//! The passes over the plan IR, in the reference compiler's order:
//! signal/wait pairing check, instruction fusion, data-sync insertion,
//! auto-sync (data-dependency) insertion, instance replication and scratch
//! sizing. The program options switch fusion and auto-sync on and off as
//! they do in the Python DSL.

pub mod auto_sync;
pub mod data_sync;
pub mod executor_limits;
pub mod fuse;
pub mod pairing;
pub mod replicate;
pub mod scratch;
pub mod set_order;

use crate::diag::Diagnostic;
use crate::ir::{Op, Plan};

/// Runs every pass on a freshly evaluated plan, whose ops the evaluator
/// fused as it made them (`fuse::Fuser`) when the program fuses.
pub fn run(plan: &mut Plan) -> Result<(), Diagnostic> {
    pairing::check(plan)?;
    for_each_op_list(plan, &mut data_sync::insert);
    if plan.options.auto_sync {
        for_each_op_list(plan, &mut auto_sync::insert);
    }
    let scratch = scratch::allocated(plan);
    replicate::run(plan);
    scratch::size(plan, &scratch);
    Ok(())
}

/// What a plan that passed the passes (or was read from JSON) will not
/// run as meant: signals the executor will not pair with their waits, then
/// the executor's limits crossed.
pub fn warnings(plan: &Plan) -> Vec<Diagnostic> {
    let mut warnings = pairing::warnings(plan);
    warnings.extend(
        executor_limits::check(plan)
            .iter()
            .map(|c| c.diagnostic(plan)),
    );
    warnings
}

/// Applies `f` to every thread block's op list and, inside it, to every
/// pipeline body (the body first, so the outer list sees the final body).
pub fn for_each_op_list(plan: &mut Plan, f: &mut dyn FnMut(Vec<Op>) -> Vec<Op>) {
    fn walk(mut ops: Vec<Op>, f: &mut dyn FnMut(Vec<Op>) -> Vec<Op>) -> Vec<Op> {
        for op in &mut ops {
            if let Some(extra) = op.extra_if_any_mut() {
                extra.body = walk(std::mem::take(&mut extra.body), f);
            }
        }
        f(ops)
    }
    for rank in &mut plan.ranks {
        for tb in &mut rank.threadblocks {
            tb.ops = walk(std::mem::take(&mut tb.ops), f);
        }
    }
}
