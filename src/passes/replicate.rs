//! Instance replication: `instances = I` runs I copies of the algorithm side
//! by side, each on its own thread blocks, channels, semaphores, barriers and
//! slice of every buffer. Copy `k` of thread block, channel, semaphore or
//! barrier `x` is `x * I + k` under either policy, as the reference places
//! them. Chunks follow the policy: interleaved, copy `k` of an op's chunks
//! at `index * I + k * size`; `none`, the copies one after another
//! (`k * count + index`, `count` the buffer's chunks per copy), msclc's
//! own: the reference compiler fails on such a plan. Remote buffers are
//! shared by all copies; each rank's scratch buffer holds every
//! `scratch(..)` allocation of the program once per copy.

use crate::ir::*;

/// Where copy `inst` of an item goes.
#[derive(Clone, Copy)]
struct Layout {
    instances: u32,
    interleaved_chunks: bool,
}

impl Layout {
    fn of(options: &Options) -> Layout {
        Layout {
            instances: options.instances,
            interleaved_chunks: options.replication_policy == ReplicationPolicy::Interleaved,
        }
    }

    /// Copy `inst` of thread block, channel, semaphore or barrier `id`.
    fn id(&self, id: u32, inst: u32) -> u32 {
        id * self.instances + inst
    }

    /// Which item and copy go at `at`: what `id` maps there.
    fn copy_at(&self, at: u32) -> (u32, u32) {
        (at / self.instances, at % self.instances)
    }

    /// Copy `inst` of `size` chunks at `index` of a buffer of `total`
    /// chunks a copy.
    fn chunk(&self, index: u32, size: u32, total: u32, inst: u32) -> u32 {
        if self.interleaved_chunks {
            index * self.instances + inst * size
        } else {
            inst * total + index
        }
    }
}

/// Replicates a plan of `size` (`Plan::size`) into its instances.
pub fn run(plan: &mut Plan, size: usize) {
    let instances = plan.options.instances;
    plan.instances_made = true;
    if instances <= 1 {
        return;
    }
    let options = &plan.options;
    super::each_rank(&mut plan.ranks, size * instances as usize, &|rank| {
        *rank = replicate_rank(std::mem::take(rank), options);
    });
    // The collective is now defined on the replicated buffers, as the
    // executor (and a plan read back from JSON) sees them: an AllToAll's
    // per-peer block, an AllGather's in-place slot, are counted in the
    // plan's chunks, not the program's.
    plan.collective.input_chunks *= instances;
    plan.collective.output_chunks *= instances;
}

/// The copies of a rank of a plan whose instances were left to the writer
/// (`passes::Instances::AsWritten`), made as `run` makes them but a
/// thread block at a time, as the writer writes them: a rank's copies
/// are never all held.
pub struct Copies {
    layout: Layout,
    counts: ChunkCounts,
    /// The rank's thread blocks (in one copy).
    tbs: u32,
    /// The buffer of each of the rank's switch channels: what a copy of a
    /// switch reference moves through.
    switch_buffers: Vec<BufferKind>,
}

impl Copies {
    pub fn of(rank: &RankPlan, options: &Options) -> Copies {
        Copies {
            layout: Layout::of(options),
            counts: ChunkCounts {
                input: rank.input_chunks,
                output: rank.output_chunks,
                scratch: rank.scratch_chunks,
            },
            tbs: rank.threadblocks.len() as u32,
            switch_buffers: rank.switch_channels.iter().map(|c| c.buffer).collect(),
        }
    }

    /// How many thread blocks the copies have.
    pub fn threadblocks(&self) -> u32 {
        self.tbs * self.layout.instances
    }

    /// Which of the rank's thread blocks, in which instance, is the
    /// copies' thread block `at`.
    pub fn threadblock_at(&self, at: u32) -> (usize, u32) {
        let (tb, inst) = self.layout.copy_at(at);
        (tb as usize, inst)
    }

    /// The rank as its copies have it, all but its thread blocks (none).
    pub fn rank(&self, rank: &RankPlan) -> RankPlan {
        let instances = self.layout.instances;
        let layout = self.layout;
        RankPlan {
            input_chunks: rank.input_chunks * instances,
            output_chunks: rank.output_chunks * instances,
            scratch_chunks: rank.scratch_chunks * instances,
            memory_peers: repeat(&rank.memory_peers, layout),
            port_peers: repeat(&rank.port_peers, layout),
            memory_origins: repeat(&rank.memory_origins, layout),
            port_origins: repeat(&rank.port_origins, layout),
            switch_channels: repeat(&rank.switch_channels, layout),
            remote_buffers: rank.remote_buffers.clone(),
            semaphores: repeat(&rank.semaphores, layout),
            semaphore_origins: repeat(&rank.semaphore_origins, layout),
            threadblocks: Vec::new(),
        }
    }

    /// A thread block's table of channels, as instance `inst` has it.
    pub fn channels(&self, channels: &Table, inst: u32) -> Table {
        let ids_of =
            |ids: &Ids| -> Ids { ids.iter().map(|id| self.layout.id(*id, inst)).collect() };
        channels
            .iter()
            .map(|(kind, ids)| (*kind, ids_of(ids)))
            .collect()
    }

    /// Makes `op`, a copy of `original` of thread block `tb` (or of
    /// another of its instances' copies), instance `inst`'s copy
    /// ([`shift_op`]).
    pub fn shift(&self, original: &Op, op: &mut Op, tb: &ThreadBlock, inst: u32) {
        let switch_ids = tb.channel_ids(ChannelKind::Switch);
        // A switch reference is into the buffer its channel was made over
        // (the evaluator made the channel before the reference).
        let switch_buffer = |id: u32| self.switch_buffers[switch_ids[id as usize] as usize];
        shift_op(
            original,
            op,
            self.layout,
            inst,
            &self.counts,
            &switch_buffer,
        );
    }
}

/// The number thread block `tb` (or a channel or semaphore numbered `tb`)
/// has in the first instance (on any rank).
pub fn first_copy(plan: &Plan, tb: u32) -> u32 {
    Layout::of(&plan.options).id(tb, 0)
}

fn repeat<T: Clone>(items: &[T], layout: Layout) -> Vec<T> {
    let mut out: Vec<Option<T>> = vec![None; items.len() * layout.instances as usize];
    for inst in 0..layout.instances {
        for (i, item) in items.iter().enumerate() {
            out[layout.id(i as u32, inst) as usize] = Some(item.clone());
        }
    }
    out.into_iter().flatten().collect()
}

/// The rank's copies, each made from a clone of the rank's ops.
fn replicate_rank(rank: RankPlan, options: &Options) -> RankPlan {
    let copies = Copies::of(&rank, options);
    let mut tbs = vec![ThreadBlock::default(); copies.threadblocks() as usize];
    let instances = copies.layout.instances;
    for inst in 0..instances {
        for (t, tb) in rank.threadblocks.iter().enumerate() {
            let mut ops = tb.ops.clone();
            for (op, original) in ops.iter_mut().zip(&tb.ops) {
                copies.shift(original, op, tb, inst);
            }
            tbs[copies.layout.id(t as u32, inst) as usize] = ThreadBlock {
                channels: copies.channels(&tb.channels, inst),
                remote_refs: tb.remote_refs.clone(),
                ops,
            };
        }
    }
    RankPlan {
        threadblocks: tbs,
        ..copies.rank(&rank)
    }
}

#[derive(Clone, Copy)]
struct ChunkCounts {
    input: u32,
    output: u32,
    scratch: u32,
}

impl ChunkCounts {
    fn of(&self, kind: BufferKind) -> u32 {
        match kind {
            BufferKind::Input => self.input,
            BufferKind::Output => self.output,
            BufferKind::Scratch => self.scratch,
        }
    }
}

/// Makes `op`, a copy of `original` (or of another of its instances'
/// copies), instance `inst`'s copy: every chunk, barrier and semaphore
/// that moves is set from where `original` has it, and what does not move
/// is left as the copy has it, as the original does. A copy made once
/// then serves every instance, remade at the cost of what moves.
fn shift_op(
    original: &Op,
    op: &mut Op,
    layout: Layout,
    inst: u32,
    counts: &ChunkCounts,
    switch_buffer: &dyn Fn(u32) -> BufferKind,
) {
    let moved = |r: &BufRef| {
        let total = match r.target {
            RefTarget::Local(kind) | RefTarget::Remote { kind, .. } => counts.of(kind),
            RefTarget::Switch { id } => counts.of(switch_buffer(id)),
        };
        layout.chunk(r.index, r.size, total, inst)
    };
    // The reference moves every chunk of an op but the packet copies a
    // fused reduce-and-copy (`recpkt`, `recspkt`) writes: local
    // destinations after the reduction's own. Its plans keep those where
    // they were for every instance, and so do ours (exact compatibility;
    // the instances then share those scratch chunks, which `msclc sim`
    // reports: docs/ports.md).
    let unmoved_packet_copies = match original.name {
        OpName::ReduceCopyPackets | OpName::ReduceCopySendPackets => original
            .dst
            .iter()
            .skip(1)
            .take_while(|r| matches!(r.target, RefTarget::Local(_)))
            .count(),
        _ => 0,
    };
    for (r, from) in op.src.iter_mut().zip(&original.src) {
        r.index = moved(from);
    }
    let packet_copies = 1..=unmoved_packet_copies;
    for (i, (r, from)) in op.dst.iter_mut().zip(&original.dst).enumerate() {
        if !packet_copies.contains(&i) {
            r.index = moved(from);
        }
    }
    op.barrier = original.barrier.map(|(id, n)| (layout.id(id, inst), n));
    let (Some(extra), Some(from)) = (op.extra_if_any_mut(), original.extra_if_any()) else {
        return;
    };
    if let (Some(g), Some(f)) = (&mut extra.group_reduce, &from.group_reduce) {
        g.buffer_offset = layout.chunk(f.buffer_offset, f.size, counts.of(f.buffer), inst);
        g.dst_index = layout.chunk(f.dst_index, f.size, counts.of(f.dst_kind), inst);
    }
    for (s, f) in extra.semaphore_ids.iter_mut().zip(&from.semaphore_ids) {
        *s = layout.id(*f, inst);
    }
    for (inner, f) in extra.body.iter_mut().zip(&from.body) {
        shift_op(f, inner, layout, inst, counts, switch_buffer);
    }
}
