//! Warnings for plans that break the executor's limits or rely on its bugs.

use crate::diag::{Code, Diagnostic};
use crate::ir::*;

/// Signals the executor will not pair with their waits, executor limits
/// and reliance on executor bugs (SEMANTICS.md §9), as warnings.
pub fn check_limits(plan: &Plan) -> Vec<Diagnostic> {
    // Signals and waits that pair per pair of ranks only (W0501): the
    // cause, at its program lines, of the deadlock the run then reports.
    // (A plan they do not balance in has been refused before it got here.)
    let mut warnings = match crate::passes::pairing::check(plan) {
        Ok(balance) => crate::passes::pairing::warnings(plan, balance),
        Err(_) => Vec::new(),
    };
    // The executor's fixed limits, at their program lines.
    warnings.extend(
        crate::passes::executor_limits::check(plan)
            .iter()
            .map(|c| c.diagnostic(plan)),
    );
    warnings.extend(crate::passes::executor_limits::misread_values(plan));
    warnings.extend(crate::passes::pipeline_coverage::uncovered_ops(plan));
    // Each bug once, at the first op that meets it (a plan read from JSON
    // has no program lines: the warning is then plain).
    let mut flush = None;
    let mut reduce_op = None;
    let mut get_offsets = None;
    let mut packet_in_pipeline = None;
    let mut unhalved_scratch = None;
    let mut mixed_sources = None;
    for rank in &plan.ranks {
        for tb in &rank.threadblocks {
            for (op, in_pipeline) in tb.ops_with_bodies() {
                let get_offsets_swapped = op.name == OpName::Get
                    && op.src.iter().zip(&op.dst).any(|(s, d)| s.index != d.index);
                for (first, meets) in [
                    (
                        &mut unhalved_scratch,
                        plan.options.use_double_scratch_buffer && skips_double_scratch(op),
                    ),
                    (&mut packet_in_pipeline, in_pipeline && op.name.is_packet()),
                    (&mut flush, op.name == OpName::Flush),
                    (
                        &mut reduce_op,
                        op.reduce_op.is_some_and(|o| o != ReduceOp::Sum),
                    ),
                    (&mut get_offsets, get_offsets_swapped),
                    (
                        &mut mixed_sources,
                        fused_put_of_mixed_sources(op, plan.collective.inplace),
                    ),
                ] {
                    if meets {
                        first.get_or_insert(op);
                    }
                }
            }
        }
    }
    // SEMANTICS.md §3.1: the size check takes each size modulo its chunk
    // count, unguarded.
    if plan
        .ranks
        .iter()
        .any(|r| r.input_chunks == 0 || r.output_chunks == 0)
    {
        let message = "the plan's input or output has no chunks: today's executor divides by both chunk counts when it checks a call's sizes, and stops the process with a division by zero (SIGFPE) at every call; simulated as intended";
        warnings.push(match plan.collective_at {
            Some(span) => {
                Diagnostic::warning(Code::ExecutorBug, span, message, "a buffer of no chunks")
            }
            None => Diagnostic::plain(Code::ExecutorBug, message).as_warning(),
        });
    }
    for (first, message) in [
        (unhalved_scratch, "with a double scratch buffer, today's executor does not move Simple-protocol remote scratch, port transfers or switch ops to the second half; simulated as intended"),
        (packet_in_pipeline, "packet ops inside a pipeline ignore the iteration offset on today's executor; simulated as intended"),
        (flush, "the plan uses `flush`, which does nothing on today's executor; simulated as intended"),
        (reduce_op, "the plan reduces with min or max; today's executor always sums"),
        (get_offsets, "a `get` with different source and destination offsets; today's executor swaps them"),
        (mixed_sources, "a fused put whose sources lie in different buffers; today's executor reads every source from the first source's buffer (at each source's own offset); simulated as intended"),
    ] {
        if let Some(op) = first {
            warnings.push(
                Diagnostic::error(Code::ExecutorBug, op.span, message, "the first such op")
                    .as_warning(),
            );
        }
    }
    warnings
}

/// A put (or packet put) over a memory channel whose sources, which
/// fusion gathered, lie in more than one local buffer: the executor takes
/// every source's base pointer from the first's buffer (SEMANTICS.md §4).
/// In place, input and output are one buffer.
fn fused_put_of_mixed_sources(op: &Op, inplace: bool) -> bool {
    let kinds = || {
        op.src.iter().filter_map(|r| match r.target {
            RefTarget::Local(BufferKind::Output) if inplace => Some(BufferKind::Input),
            RefTarget::Local(kind) => Some(kind),
            _ => None,
        })
    };
    matches!(op.name, OpName::Put | OpName::PutPackets)
        && op.channel == Some(ChannelKind::Memory)
        && kinds().zip(kinds().skip(1)).any(|(a, b)| a != b)
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
    let packet = op.name.is_packet();
    match op.channel {
        Some(ChannelKind::Port) => touches_scratch(false),
        Some(ChannelKind::Switch) => op
            .group_reduce()
            .is_some_and(|g| g.buffer == BufferKind::Scratch),
        _ => !packet && touches_scratch(true),
    }
}

/// A GPU the executor may run on, for the residency check: per SM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    pub name: &'static str,
    pub sms: u32,
    pub threads_per_sm: u32,
    pub registers_per_sm: u32,
    pub shared_memory_per_sm: u32,
    pub blocks_per_sm: u32,
}

/// Hopper: the H100 and the H200 differ in memory, not in their SMs.
const HOPPER: Target = Target {
    name: "h100",
    sms: 132,
    threads_per_sm: 2048,
    registers_per_sm: 65536,
    shared_memory_per_sm: 228 * 1024,
    blocks_per_sm: 32,
};

/// The GPUs `--target` knows (NVIDIA's published figures per SM; shared
/// memory as usable by blocks).
pub const TARGETS: &[Target] = &[
    Target {
        name: "a100",
        sms: 108,
        shared_memory_per_sm: 164 * 1024,
        ..HOPPER
    },
    HOPPER,
    Target {
        name: "h200",
        ..HOPPER
    },
    Target {
        name: "b200",
        sms: 148,
        ..HOPPER
    },
];

impl Target {
    /// The GPU of a timing topology of `sms` SMs: the model's GPUs are
    /// Hoppers (docs/timing.md), whose SMs it does not describe further.
    pub fn hopper_with(sms: u32) -> Target {
        match sms == HOPPER.sms {
            true => HOPPER,
            false => Target {
                name: "timing topology's GPU",
                sms,
                ..HOPPER
            },
        }
    }

    /// The GPU as a message names it: `H100`, or what `name` says.
    fn title(&self) -> String {
        match TARGETS.iter().any(|t| t.name == self.name) {
            true => self.name.to_uppercase(),
            false => self.name.to_string(),
        }
    }
}

/// What the MSCCL++ executor's kernel takes per block: it is compiled with
/// `__launch_bounds__(1024, 1)`, which lets it use up to 64 registers a
/// thread, and each block copies its share of the plan (up to 64 ops of
/// about 200 bytes, plus channel tables: about 15 KB) into shared memory.
const EXECUTOR_REGISTERS_PER_THREAD: u32 = 64;
const EXECUTOR_SHARED_MEMORY_PER_BLOCK: u32 = 15 * 1024;

/// How many of a rank's blocks of `threads` threads one GPU holds at once.
pub fn resident_blocks(target: &Target, threads: u32) -> u32 {
    let threads = threads.clamp(1, 1024).next_multiple_of(32);
    let by_threads = target.threads_per_sm / threads;
    let by_registers = target.registers_per_sm / (EXECUTOR_REGISTERS_PER_THREAD * threads);
    let by_shared = target.shared_memory_per_sm / EXECUTOR_SHARED_MEMORY_PER_BLOCK;
    let per_sm = by_threads
        .min(by_registers)
        .min(by_shared)
        .min(target.blocks_per_sm);
    per_sm * target.sms
}

/// A warning when some rank's thread blocks cannot all be resident at once
/// on `target`: the executor launches them in one grid per GPU and they
/// wait for each other, so the blocks left out never start and the rest
/// hang.
pub fn residency(plan: &Plan, target: &Target) -> Option<Diagnostic> {
    let threads = plan.options.num_threads_per_block;
    let most = plan
        .ranks
        .iter()
        .enumerate()
        .max_by_key(|(_, r)| r.threadblocks.len())?;
    let (rank, blocks) = (most.0, most.1.threadblocks.len() as u32);
    let fits = resident_blocks(target, threads);
    (blocks > fits).then(|| {
        let message = format!(
            "rank {rank} has {blocks} thread blocks of {threads} threads; the {} holds {fits} of the executor's blocks at once ({} SM{}; at most 64 registers a thread and about 15 KB of shared memory a block), so blocks that wait for ones that never start can hang: use fewer thread blocks or fewer threads per block",
            target.title(),
            target.sms,
            if target.sms == 1 { "" } else { "s" }
        );
        // At the first op of the first block that does not fit, where the
        // program made one.
        let first_left_out = most.1.threadblocks[fits as usize].ops.first();
        match first_left_out {
            Some(op) => {
                let label = format!("thread block {fits} of rank {rank}, the first left out");
                let d = Diagnostic::warning(Code::Residency, op.span, message, label);
                plan.in_context(d, op.context)
            }
            None => Diagnostic::plain(Code::Residency, message).as_warning(),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_h100_holds_one_1024_thread_executor_block_per_sm() {
        let h100 = TARGETS.iter().find(|t| t.name == "h100").unwrap();
        assert_eq!(resident_blocks(h100, 1024), 132);
        // 512 threads: two by registers (64 x 512 = 32K each).
        assert_eq!(resident_blocks(h100, 512), 264);
        // 128 threads: eight by registers, fifteen by shared memory.
        assert_eq!(resident_blocks(h100, 128), 8 * 132);
    }
}
