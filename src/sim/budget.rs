//! What simulating a plan will take: an estimate, in bytes, of the memory
//! the simulator allocates on top of the plan itself (which it only
//! borrows), for two executions, computed in one pass over the plan.
//!
//! The terms, each an upper bound for its part of the simulator's state:
//!
//! - **blocks**: a `Thread` per thread block, with its unrolled op list
//!   where it has a pipeline (other blocks borrow the plan's);
//! - **cells**: every chunk part of every buffer of every rank (scratch
//!   twice with a double scratch buffer), a `Cell` each, its value inline
//!   (one contribution, or a sum shared by reference);
//! - **reads**: the reads logged since each cell's last write, at most one
//!   per element an execution's ops read;
//! - **reduced values**: each reduction keeps a node over its operands;
//! - **clocks**: per block two clocks (data, exec), each with its own
//!   entries (at most [`super::clock`]'s own limit: the block's epoch, its
//!   user's, and the blocks it hears from directly: channels and packet
//!   sources) and a few shared parts; per publishing op and execution one
//!   retained snapshot of that size (a signal in flight, a packet's clock),
//!   and a shared copy of its own entries where they are many;
//! - **folds**: per rank and execution a few folded clocks (the kernel's
//!   end, the peers' clocks its blocks learn together), each of at most
//!   the rank's knowledge: its blocks, the blocks they hear from and those
//!   blocks' ranks' knowledge, never more than one entry per thread;
//! - **channels**: the channel pairing and signal queue, per endpoint.
//!
//! What it does not bound: a plan whose blocks each learn a different
//! large set of clocks (nothing shared) holds a fold per block; the clock
//! term assumes blocks that hear from the same peers share their folds,
//! as every plan this compiler makes does. `notes`: estimate vs. measured
//! peak is in docs/simulator.md ("Speed").

use super::*;
use std::mem::size_of;

/// Own entries a clock keeps before they become a part (`clock::OWN_MAX`).
const OWN_MAX: u64 = 256;
/// Own entries past which a learnt clock's are shared (`clock::SHARE_OWN`).
const SHARE_OWN: u64 = 32;
/// Parts a clock keeps before folding (`clock::PARTS_MAX`).
const PARTS_MAX: u64 = 32;
/// Part ids a fold remembers covering (`clock::COVERS_MAX`).
const COVERS_MAX: u64 = 256;
/// Folded clocks kept alive for reuse (`clock::RECENT_FOLD_BYTES`).
const RECENT_FOLDS: u64 = 64 << 20;
/// Allocator overhead per allocation, and a clock's header (Rc counts,
/// part and own lists) without its entries.
const ALLOC: u64 = 16;
const CLOCK_HEADER: u64 = 16 + 24 + 24 + 16 + ALLOC;

/// The most memory a simulation may take unless `--max-memory` says
/// otherwise: 8 GiB, or three quarters of what this process may still
/// allocate ([`crate::memory::available`]: its address-space limit,
/// `ulimit -v`, and the memory the machine has available now), whichever
/// is less; a plan estimated above it is refused
/// with E0805 instead of running out of memory.
pub fn default_memory_limit() -> u64 {
    const MOST: u64 = 8 << 30;
    crate::memory::available().map_or(MOST, |free| MOST.min(free / 4 * 3))
}

/// An upper-bound estimate of the bytes `simulate(plan, 2)` allocates
/// besides the plan: see the module documentation for the terms. Linear
/// in the plan (one walk over its ops).
pub fn memory_estimate(plan: &Plan) -> u64 {
    const EXECUTIONS: u64 = 2;
    let ranks = plan.ranks.len() as u64;
    let parts = u64::from(parts_per_chunk(plan, None, PIPELINE_ITERATIONS));
    let threads: u64 = plan.ranks.iter().map(|r| r.threadblocks.len() as u64).sum();
    let proxies: u64 = plan.ranks.iter().map(|r| r.port_peers.len() as u64).sum();
    let width = threads + ranks + proxies;

    let mut total = 0u64;
    // Per rank: the threads its blocks hear from directly.
    let mut heard: Vec<u64> = Vec::with_capacity(plan.ranks.len());
    for rank in &plan.ranks {
        let mut rank_heard = rank.threadblocks.len() as u64 + 1 + proxies.min(64);
        for tb in &rank.threadblocks {
            let mut ops = 0u64;
            let pipelined = tb.ops.iter().any(|op| op.name == OpName::Pipeline);
            let mut fan_in = 0u64;
            let mut publishing = 0u64;
            let mut read_elements = 0u64;
            let mut reduce_operands = 0u64;
            let mut reduced = 0u64;
            let mut signals = 0u64;
            let mut barrier = 0u64;
            walk(&tb.ops, 1, &mut |op, times| {
                ops += times;
                let elements = |r: &BufRef| u64::from(r.size) * parts;
                let sources: u64 = op.src.iter().map(elements).sum();
                let switch_members: u64 = op
                    .src
                    .iter()
                    .chain(&op.dst)
                    .map(|r| match r.target {
                        RefTarget::Switch { .. } => ranks,
                        _ => 1,
                    })
                    .max()
                    .unwrap_or(1);
                read_elements += times * sources * switch_members;
                let channels = op.channel_ids.len() as u64;
                barrier = barrier.max(op.barrier.map_or(0, |(_, n)| u64::from(n)));
                let packets = if is_packet_read(op.name) { sources } else { 0 };
                fan_in += times * packets;
                if op.reduces() {
                    reduce_operands += times * sources * switch_members;
                    let results: u64 = op.dst.iter().map(elements).sum();
                    reduced += times * results.max(1);
                }
                if publishes(op.name) {
                    publishing += times;
                }
                if matches!(
                    op.name,
                    OpName::Signal
                        | OpName::RelaxedSignal
                        | OpName::PutWithSignal
                        | OpName::PutWithSignalAndFlush
                ) {
                    signals += times * channels.max(1);
                }
            });
            // A clock holds an entry per thread heard from, however often:
            // the block's channels, its barrier's blocks, its rank's
            // semaphores, and its packet sources (counted per read).
            let channels: u64 = tb.channels.iter().map(|(_, ids)| ids.len() as u64).sum();
            fan_in += channels + barrier + rank.semaphores.len() as u64;
            rank_heard += fan_in;
            // The block: its Thread, unrolled ops.
            total += size_of::<Thread>() as u64;
            if pipelined {
                total += ops * size_of::<(&Op, Option<u32>)>() as u64 + ALLOC;
            }
            // Its clocks: two, each with its own entries and a few parts;
            // a retained snapshot per publishing op and execution, with a
            // shared copy of its own entries where they are many.
            let own = OWN_MAX.min(4 + 2 * fan_in);
            let clock = CLOCK_HEADER + 8 * own + 8 * PARTS_MAX;
            let shared_own = if own > SHARE_OWN { 8 * own + 64 } else { 0 };
            total += 2 * clock;
            total += EXECUTIONS * publishing * 2 * (clock + shared_own);
            // Signals in flight: a clock handle and a queue slot each.
            total += EXECUTIONS * signals * (size_of::<Clocks>() as u64 + 8);
            // Reads logged, and reduced values.
            total += read_elements * 2 * size_of::<Access>() as u64;
            // A reduction's value is a node over its operands, alive as
            // long as a cell (or a later sum over it) holds it: each
            // execution makes its own nodes.
            total += reduce_operands * (size_of::<Contents>() as u64 + 8);
            total += EXECUTIONS * reduced * (super::value::NODE_BYTES + ALLOC);
        }
        heard.push(rank_heard.min(width));
        // Cells, one value each.
        let copies = if plan.options.use_double_scratch_buffer {
            2
        } else {
            1
        };
        let chunks = u64::from(rank.input_chunks)
            + u64::from(rank.output_chunks)
            + copies * u64::from(rank.scratch_chunks);
        total += chunks * parts * size_of::<Cell>() as u64;
        // Channel pairing and signal queues.
        let endpoints = (rank.memory_peers.len() + rank.port_peers.len()) as u64;
        total += endpoints * (4 + size_of::<Clocks>() as u64 + 8);
    }
    // Folds: per rank and execution the kernel's end and the joins of the
    // peers' clocks, data and exec each; a rank's knowledge is what its
    // blocks hear directly and, from the second execution on, what those
    // ranks knew (at most every thread).
    let mut folds = 0u64;
    for &h in &heard {
        let knowledge = width.min(2 * h);
        // Entries (sparse or dense), and the ids of the parts it covers:
        // at most `COVERS_MAX`, and no more than the threads it knows of.
        let fold = CLOCK_HEADER + (8 * knowledge).min(4 * width) + 8 * knowledge.min(COVERS_MAX);
        folds += EXECUTIONS * 2 * 3 * fold;
    }
    total += folds + folds.min(RECENT_FOLDS);
    total
}

/// Calls `f` with each op of `ops` and how many times a block runs it per
/// execution (pipelines run [`PIPELINE_ITERATIONS`] times).
fn walk(ops: &[Op], times: u64, f: &mut dyn FnMut(&Op, u64)) {
    for op in ops {
        if op.name == OpName::Pipeline {
            walk(op.body(), times * u64::from(PIPELINE_ITERATIONS), f);
        } else {
            f(op, times);
        }
    }
}

fn is_packet_read(name: OpName) -> bool {
    use OpName::*;
    matches!(
        name,
        UnpackPackets
            | ReadPutPackets
            | GroupStorePackets
            | ReducePackets
            | ReduceSendPackets
            | ReduceCopyPackets
            | ReduceCopySendPackets
    )
}

/// Ops that leave a clock behind them: signals, releases, packet writes,
/// barriers (the thread's clock at that point, held by a queue or cell).
fn publishes(name: OpName) -> bool {
    use OpName::*;
    matches!(
        name,
        Signal
            | RelaxedSignal
            | PutWithSignal
            | PutWithSignalAndFlush
            | SemRelease
            | Barrier
            | PutPackets
            | ReadPutPackets
            | CopyPackets
            | GroupStorePackets
            | ReduceSendPackets
            | ReduceCopyPackets
            | ReduceCopySendPackets
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(ranks: u32, blocks: u32, ops: u32) -> Plan {
        let op = |i: u32| {
            let mut op = Op::new(OpName::Copy, Default::default());
            op.src = smallvec::smallvec![BufRef::local(BufferKind::Input, i % 4, 1)];
            op.dst = smallvec::smallvec![BufRef::local(BufferKind::Output, i % 4, 1)];
            op
        };
        let rank = RankPlan {
            input_chunks: 4,
            output_chunks: 4,
            scratch_chunks: 8,
            threadblocks: (0..blocks)
                .map(|_| ThreadBlock {
                    ops: (0..ops).map(op).collect(),
                    ..ThreadBlock::default()
                })
                .collect(),
            ..RankPlan::default()
        };
        Plan {
            name: "t".into(),
            collective: Collective {
                name: "allgather",
                num_ranks: ranks,
                chunk_factor: 1,
                inplace: false,
                input_chunks: 4,
                output_chunks: 4,
            },
            options: Options::default(),
            loops: Default::default(),
            instances_made: true,
            min_message_size_at: None,
            collective_at: None,
            max_message_size_at: None,
            ranks: vec![rank; ranks as usize],
        }
    }

    #[test]
    fn grows_with_ranks_blocks_and_ops() {
        let base = memory_estimate(&plan(2, 2, 2));
        assert!(base > 0);
        assert!(memory_estimate(&plan(4, 2, 2)) > base);
        assert!(memory_estimate(&plan(2, 4, 2)) > base);
        assert!(memory_estimate(&plan(2, 2, 8)) > base);
        // Roughly linear: eight times the ranks, at most some sixty times
        // the bytes (folds grow with ranks times width).
        let big = memory_estimate(&plan(16, 2, 2));
        assert!(big < 64 * base, "{big} vs {base}");
    }
}
