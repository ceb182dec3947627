//! Warnings for plans that break the executor's limits or rely on its bugs.

use crate::ir::*;

/// Executor limits and reliance on executor bugs (SEMANTICS.md §9), as warnings.
pub fn check_limits(plan: &Plan) -> Vec<String> {
    let mut warnings = Vec::new();
    let mut flush = false;
    let mut reduce_op = false;
    let mut get_offsets = false;
    let mut packet_in_pipeline = false;
    let mut unhalved_scratch = false;
    for (r, rank) in plan.ranks.iter().enumerate() {
        for (t, tb) in rank.threadblocks.iter().enumerate() {
            // A pipeline and its body all count toward the executor's limit.
            let ops: Vec<(&Op, bool)> = tb
                .ops
                .iter()
                .flat_map(|op| {
                    std::iter::once((op, false)).chain(op.body.iter().map(|inner| (inner, true)))
                })
                .collect();
            if ops.len() > 64 {
                warnings.push(format!(
                    "rank {r} thread block {t} has {} ops; the executor runs at most 64",
                    ops.len()
                ));
            }
            for (kind, ids) in &tb.channels {
                if ids.len() > 16 {
                    warnings.push(format!(
                        "rank {r} thread block {t} uses {} {} channels; the executor allows 16",
                        ids.len(),
                        kind.name()
                    ));
                }
            }
            for &(op, in_pipeline) in &ops {
                unhalved_scratch |=
                    plan.options.use_double_scratch_buffer && skips_double_scratch(op);
                packet_in_pipeline |= in_pipeline && op.name.json().contains("pkt");
                flush |= op.name == OpName::Flush;
                reduce_op |= op.reduce_op.is_some_and(|o| o != ReduceOp::Sum);
                get_offsets |= op.name == OpName::Get
                    && op.src.iter().zip(&op.dst).any(|(s, d)| s.index != d.index);
                if op.channel_ids.len() > 8 {
                    warnings.push(format!(
                        "rank {r} thread block {t}: a {} over {} channels; the executor allows 8",
                        op.name.json(),
                        op.channel_ids.len()
                    ));
                }
            }
        }
    }
    if unhalved_scratch {
        warnings.push("[BUG] with a double scratch buffer, today's executor does not move Simple-protocol remote scratch, port transfers or switch ops to the second half; simulated as intended".into());
    }
    if packet_in_pipeline {
        warnings.push("[BUG] packet ops inside a pipeline ignore the iteration offset on today's executor; simulated as intended".into());
    }
    if flush {
        warnings.push("[BUG] the plan uses `flush`, which does nothing on today's executor; simulated as intended".into());
    }
    if reduce_op {
        warnings
            .push("[BUG] the plan reduces with min or max; today's executor always sums".into());
    }
    if get_offsets {
        warnings.push("[BUG] a `get` with different source and destination offsets; today's executor swaps them".into());
    }
    warnings
}

/// Ops whose scratch accesses today's executor leaves in the first half
/// under a double scratch buffer (SEMANTICS.md §9.6): non-packet ops on a
/// peer's scratch, port transfers touching scratch, switch ops on scratch.
fn skips_double_scratch(op: &Op) -> bool {
    let touches_scratch = |remote_only: bool| {
        op.src.iter().chain(&op.dst).any(|r| match r.target {
            RefTarget::Remote { kind, .. } => kind == BufferKind::Scratch,
            RefTarget::Local(kind) => !remote_only && kind == BufferKind::Scratch,
            RefTarget::Switch { .. } => false,
        })
    };
    let packet = op.name.json().contains("pkt");
    match op.channel {
        Some(ChannelKind::Port) => touches_scratch(false),
        Some(ChannelKind::Switch) => op
            .group_reduce
            .is_some_and(|g| g.buffer == BufferKind::Scratch),
        _ => !packet && touches_scratch(true),
    }
}
