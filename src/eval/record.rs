//! Records operations into the plan being built, with the bookkeeping the
//! DSL's CollectiveProgram does: channel ids per source rank, thread-block
//! channel and remote-buffer tables, barrier ids, semaphores and pipelines.

use super::shard::{Part, Shard, WatchedSteps};
use super::value::{ChannelVal, SwitchVal, Value};
use crate::diag::Span;
use crate::ir::*;
use std::collections::HashMap;
use std::rc::Rc;

/// A `pipeline` block being evaluated.
#[derive(Clone, Copy)]
struct OpenPipeline {
    /// Which of the program's pipelines it is, in the order they opened.
    serial: u32,
    iter: IterContext,
    span: Span,
    /// The loop frame of the pipeline statement.
    context: u32,
}

/// The plan under construction.
pub struct Recorder {
    pub plan: Plan,
    /// Per rank: barrier id of each thread-block set already used.
    barrier_ids: Vec<HashMap<Vec<u32>, u32>>,
    /// The `pipeline` block being evaluated, if any.
    pipeline: Option<OpenPipeline>,
    pipelines_opened: u32,
    /// Per (rank, tb): the serial number of the pipeline its last op belongs to.
    last_pipeline: HashMap<(u32, u32), u32>,
    /// The loop frame what is made now is made in (`Plan::loops`).
    context: u32,
    /// Whether an op, a channel or a frame refers to the newest frame of
    /// `Plan::loops`. One that nothing refers to gives its place to the
    /// next: most ops of a large plan fuse into the op before them, and
    /// their frames (one per iteration of the innermost loop) would be
    /// most of the plan's memory.
    newest_frame_kept: bool,
    /// The names of `Plan::loops`, as the evaluator holds them.
    loop_names: Vec<Rc<str>>,
    /// Ops recorded so far.
    ops: u64,
    /// Per rank, by owner and kind (`owner * 3 + kind`): the index of the
    /// rank's remote buffer of that owner's buffer, `NO_REMOTE` if none yet.
    /// A table per rank that reaches a peer at all: every op through a
    /// channel asks it.
    remote_buffer_ids: Vec<Vec<u32>>,
    /// Per rank, per thread block: its ops as they are made (moved into
    /// the plan by `into_plan`).
    blocks: Vec<Vec<BlockOps>>,
    /// Whether ops are fused as they are made.
    fuse: bool,
    /// The ranks this evaluation records (`shard.rs`); of the others it
    /// keeps only what later calls ask of them (channel numbers).
    shard: Shard,
    /// Per rank: ops recorded on it.
    ops_by_rank: Vec<u64>,
    /// The rank the loop iteration being watched is for (`shard.rs`), and
    /// whether it touched another rank or what all ranks share.
    watched: Option<u32>,
    touched_elsewhere: bool,
}

const NO_REMOTE: u32 = u32::MAX;

/// Ids a block table's list holds before `table_position` indexes them:
/// allreduce at 64 ranks (63 channels a block) spent 9.7% of its compile
/// scanning lists of up to 64, 5.6% indexing past 16; at 16 ranks, the
/// same either way.
const SCANNED: usize = 16;

/// A thread block's ops as they are made: fused as they come when the
/// program fuses (`instr_fusion`), so that its unfused ops are never all
/// held; the pipeline still being recorded is held apart until an op
/// after it closes it.
#[derive(Debug, Default)]
struct BlockOps {
    fused: crate::passes::fuse::Fuser,
    unfused: Vec<Op>,
    open_pipeline: Option<Op>,
    /// Per block table and channel kind (`table * 3 + kind`), once its
    /// list outgrew a scan: one past each id's position, by id (0: not in
    /// the list). Ids are a rank's channel or buffer numbers, dense from 0.
    positions: [Vec<u32>; 6],
}

impl BlockOps {
    /// Adds `op`; whether it stands in the block as itself (not fused into
    /// the op before it).
    fn push(&mut self, op: Op, fusing: bool) -> bool {
        if fusing {
            self.fused.push(op)
        } else {
            self.unfused.push(op);
            true
        }
    }

    fn close_pipeline(&mut self, fusing: bool) {
        if let Some(p) = self.open_pipeline.take() {
            // Whether it fuses or not, its frame stays: it was kept when
            // the pipeline opened.
            self.push(p, fusing);
        }
    }

    fn finish(mut self, fusing: bool) -> Vec<Op> {
        self.close_pipeline(fusing);
        if fusing {
            self.fused.finish()
        } else {
            self.unfused
        }
    }
}

/// The tables of a thread block the recorder fills.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum BlockTable {
    Channels,
    RemoteRefs,
}

/// What block `tb` of `rank` has made so far.
#[inline]
fn block_ops(blocks: &mut [Vec<BlockOps>], rank: u32, tb: u32) -> &mut BlockOps {
    let blocks = &mut blocks[rank as usize];
    if blocks.len() <= tb as usize {
        grow_to(blocks, tb);
    }
    &mut blocks[tb as usize]
}

/// Makes `blocks` hold block `tb`: once per block, apart from the lookup
/// every op makes.
#[cold]
#[inline(never)]
fn grow_to<T: Default>(blocks: &mut Vec<T>, tb: u32) {
    blocks.resize_with(tb as usize + 1, T::default);
}

impl Recorder {
    /// The recorder of `plan`, fusing ops as they are made if `fuse`, for
    /// the ranks of `shard`.
    pub fn new(plan: Plan, fuse: bool, shard: Shard) -> Recorder {
        let n = plan.ranks.len();
        Recorder {
            plan,
            barrier_ids: vec![HashMap::new(); n],
            pipeline: None,
            pipelines_opened: 0,
            last_pipeline: HashMap::new(),
            context: 0,
            newest_frame_kept: true,
            loop_names: Vec::new(),
            ops: 0,
            remote_buffer_ids: vec![Vec::new(); n],
            blocks: (0..n).map(|_| Vec::new()).collect(),
            fuse,
            shard,
            ops_by_rank: vec![0; n],
            watched: None,
            touched_elsewhere: false,
        }
    }

    /// From now on, notes whether what is made touches anything but `rank`.
    pub fn watch(&mut self, rank: u32) {
        self.watched = Some(rank);
        self.touched_elsewhere = false;
    }

    /// Stops watching; whether all that was made since `watch` touched its
    /// rank only.
    pub fn unwatch(&mut self) -> bool {
        self.watched = None;
        !std::mem::take(&mut self.touched_elsewhere)
    }

    /// Notes that `rank` is touched (also by a call skipped for it).
    pub fn touch(&mut self, rank: u32) {
        if self.watched.is_some_and(|w| w != rank) {
            self.touched_elsewhere = true;
        }
    }

    /// Notes that what all ranks share is touched (a switch channel's
    /// members, the pipeline being recorded).
    pub fn touch_shared(&mut self) {
        if self.watched.is_some() {
            self.touched_elsewhere = true;
        }
    }

    /// The plan made: every thread block with its ops (fused, when the
    /// program fuses), with the steps the evaluation spent.
    pub fn into_part(mut self, steps: u64, watched_steps: WatchedSteps) -> Part {
        let fusing = self.fuse;
        for (rank, blocks) in self.plan.ranks.iter_mut().zip(self.blocks) {
            for (tb, ops) in rank.threadblocks.iter_mut().zip(blocks) {
                tb.ops = ops.finish(fusing);
            }
        }
        Part {
            plan: self.plan,
            shard: self.shard,
            ops_by_rank: self.ops_by_rank,
            steps,
            watched_steps,
        }
    }

    pub fn num_ranks(&self) -> u32 {
        self.plan.ranks.len() as u32
    }

    pub fn buffer_chunks(&self, rank: u32, kind: BufferKind) -> u32 {
        let r = &self.plan.ranks[rank as usize];
        match kind {
            BufferKind::Input => r.input_chunks,
            BufferKind::Output => r.output_chunks,
            BufferKind::Scratch => r.scratch_chunks,
        }
    }

    /// Reserves `size` more scratch chunks on `rank`; returns the first, or
    /// `None` if the rank's scratch would exceed 2^24 chunks.
    pub fn allocate_scratch(&mut self, rank: u32, size: u32) -> Option<u32> {
        self.touch(rank);
        let r = &mut self.plan.ranks[rank as usize];
        let offset = r.scratch_chunks;
        let end = offset.checked_add(size).filter(|e| *e <= 1 << 24)?;
        r.scratch_chunks = end;
        Some(offset)
    }

    pub fn new_channel(&mut self, kind: ChannelKind, dst: u32, src: u32, span: Span) -> ChannelVal {
        let origin = self.origin_on(src, span);
        let r = &mut self.plan.ranks[src as usize];
        let (peers, origins) = if kind == ChannelKind::Memory {
            (&mut r.memory_peers, &mut r.memory_origins)
        } else {
            (&mut r.port_peers, &mut r.port_origins)
        };
        peers.push(dst);
        origins.extend(origin);
        ChannelVal {
            id: peers.len() as u32 - 1,
            src,
            dst,
        }
    }

    pub fn new_switch_channel(&mut self, ranks: Vec<u32>, buffer: BufferKind) -> SwitchVal {
        self.touch_shared();
        // One shared rank list for all members: a switch over N ranks must not cost N².
        let shared: std::sync::Arc<[u32]> = ranks.clone().into();
        let ids = ranks
            .iter()
            .map(|&r| {
                let list = &mut self.plan.ranks[r as usize].switch_channels;
                list.push(SwitchChannelDecl {
                    buffer,
                    ranks: shared.clone(),
                });
                (r, list.len() as u32 - 1)
            })
            .collect();
        SwitchVal {
            ranks,
            ids,
            buffer,
            checked_end: std::cell::Cell::new(0),
        }
    }

    /// A semaphore of `rank` starting at `initial_value`, made at `span`.
    pub fn new_semaphore(&mut self, rank: u32, initial_value: i64, span: Span) -> u32 {
        let origin = self.origin_on(rank, span);
        let r = &mut self.plan.ranks[rank as usize];
        r.semaphores.push(initial_value);
        r.semaphore_origins.extend(origin);
        r.semaphores.len() as u32 - 1
    }

    /// Where a channel or semaphore of `rank` is made (at `span`, in the
    /// loop values now), for the plan to keep; `None` where another shard
    /// owns the rank: its channels and semaphores are counted here, for
    /// their numbers, and their origins left to the shard that keeps them.
    fn origin_on(&mut self, rank: u32, span: Span) -> Option<Origin> {
        self.touch(rank);
        if !self.shard.owns(rank) {
            return None;
        }
        self.keep_context();
        Some(Origin {
            span,
            context: self.context,
        })
    }

    #[inline]
    fn threadblock(&mut self, rank: u32, tb: u32) -> &mut ThreadBlock {
        let tbs = &mut self.plan.ranks[rank as usize].threadblocks;
        if tbs.len() <= tb as usize {
            grow_to(tbs, tb);
        }
        &mut tbs[tb as usize]
    }

    /// The thread-block-local index of rank-level channel `id` of type `kind`.
    pub fn setup_channel(&mut self, rank: u32, tb: u32, kind: ChannelKind, id: u32) -> u32 {
        self.table_position(rank, tb, BlockTable::Channels, kind, id)
    }

    /// The position of `id` in the `kind` list of thread block `tb`'s
    /// `table`, added there if new. A short list is scanned (most hold a
    /// few ids, and a scan beats hashing them); past `SCANNED` ids (an
    /// all-pairs block past 16 ranks), the list gets a table of
    /// positions by id, so that a block of 2,000 channels costs no more
    /// per op than one of 20.
    fn table_position(
        &mut self,
        rank: u32,
        tb: u32,
        table: BlockTable,
        kind: ChannelKind,
        id: u32,
    ) -> u32 {
        self.threadblock(rank, tb);
        let block = &mut self.plan.ranks[rank as usize].threadblocks[tb as usize];
        let lists = match table {
            BlockTable::Channels => &mut block.channels,
            BlockTable::RemoteRefs => &mut block.remote_refs,
        };
        // A table has a list per channel kind: at most three.
        let ids = match lists.iter().position(|(k, _)| *k == kind) {
            Some(i) => &mut lists[i].1,
            None => {
                lists.push((kind, Ids::new()));
                &mut lists.last_mut().expect("just pushed").1
            }
        };
        if ids.len() < SCANNED {
            if let Some(pos) = ids.iter().position(|x| *x == id) {
                return pos as u32;
            }
            crate::ir::push_id(ids, id);
            return ids.len() as u32 - 1;
        }
        let made = block_ops(&mut self.blocks, rank, tb);
        let by_id = &mut made.positions[table as usize * 3 + kind as usize];
        if by_id.is_empty() {
            for (pos, &id) in ids.iter().enumerate() {
                if by_id.len() <= id as usize {
                    by_id.resize(id as usize + 1, 0);
                }
                by_id[id as usize] = pos as u32 + 1;
            }
        }
        if by_id.len() <= id as usize {
            by_id.resize(id as usize + 1, 0);
        }
        if by_id[id as usize] == 0 {
            crate::ir::push_id(ids, id);
            by_id[id as usize] = ids.len() as u32;
        }
        by_id[id as usize] - 1
    }

    /// The thread-block-local index, among the buffers reached through
    /// `access`, of `owner`'s buffer of `kind`; registers the rank-level
    /// remote buffer on first use.
    pub fn setup_remote_buffer(
        &mut self,
        rank: u32,
        tb: u32,
        owner: u32,
        kind: BufferKind,
        access: ChannelKind,
    ) -> u32 {
        let ranks = self.plan.ranks.len();
        let remotes = &mut self.plan.ranks[rank as usize].remote_buffers;
        let next = remotes.len() as u32;
        let ids = &mut self.remote_buffer_ids[rank as usize];
        if ids.is_empty() {
            *ids = vec![NO_REMOTE; ranks * 3];
        }
        let slot = &mut ids[owner as usize * 3 + kind as usize];
        if *slot == NO_REMOTE {
            *slot = next;
        }
        let id = *slot;
        if id == next {
            remotes.push(RemoteBuffer {
                rank: owner,
                kind,
                access: vec![access],
            });
        } else if !remotes[id as usize].access.contains(&access) {
            remotes[id as usize].access.push(access);
        }
        self.table_position(rank, tb, BlockTable::RemoteRefs, access, id)
    }

    /// The barrier id of the thread-block set `tbs` on `rank`.
    pub fn barrier_id(&mut self, rank: u32, tbs: &[u32]) -> u32 {
        self.touch(rank);
        let ids = &mut self.barrier_ids[rank as usize];
        let next = ids.len() as u32;
        *ids.entry(tbs.to_vec()).or_insert(next)
    }

    /// A frame of the plan's loop values: `name = value` within the frame
    /// `parent`. It takes the place of the newest frame when nothing refers
    /// to that one: not an op or a channel, and not `parent` (the frames of
    /// the loop variables around the new one are `parent` and its
    /// ancestors, all older; a newer frame is a finished loop's).
    pub fn loop_frame(&mut self, parent: u32, name: &Rc<str>, value: &Value) -> u32 {
        let loops = &mut self.plan.loops;
        if !self.newest_frame_kept && loops.newest() != parent {
            loops.drop_newest();
        }
        self.newest_frame_kept = false;
        let names = &mut self.loop_names;
        let at = match names
            .iter()
            .position(|n| Rc::ptr_eq(n, name) || **n == **name)
        {
            Some(at) => at,
            None => {
                names.push(name.clone());
                self.plan.loops.names.push(name.to_string());
                names.len() - 1
            }
        };
        let value = match value {
            Value::Int(v) => LoopValue::Int(*v),
            other => LoopValue::Text(other.brief().into()),
        };
        self.plan.loops.push(parent, at as u32, value)
    }

    /// From now on, ops and channels are made in loop frame `frame` (0:
    /// outside any loop).
    pub fn set_loop_context(&mut self, frame: u32) {
        self.context = frame;
    }

    /// Notes that something kept refers to the current frame.
    fn keep_context(&mut self) {
        if self.context == self.plan.loops.newest() {
            self.newest_frame_kept = true;
        }
    }

    /// Ops recorded so far.
    pub fn ops_recorded(&self) -> u64 {
        self.ops
    }

    /// Records a signal, wait or flush (`name`) of block `tb` of `rank` on
    /// the block's channel `id` of `kind` by fusing it into the op before
    /// it, as `add_op` would, without the op being made (most of a
    /// barrier's ops); false where it would not fuse that way, and nothing
    /// is recorded.
    pub fn fuse_sync(
        &mut self,
        (rank, tb): (u32, u32),
        name: OpName,
        (kind, id): (ChannelKind, u32),
        sync: DataSync,
    ) -> bool {
        let fused = self
            .fusing_block(rank, tb)
            .is_some_and(|block| block.fuse_sync(name, kind, id, sync));
        if fused {
            self.count_op(rank);
        }
        fused
    }

    /// Records `op` on block `tb` of `rank` by fusing it into the op
    /// before it, as `add_op` would (the op then keeps no loop values of
    /// its own); whether it did (where not, nothing is recorded).
    pub fn fuse_op(&mut self, rank: u32, tb: u32, op: &Op) -> bool {
        let Some(block) = self.fusing_block(rank, tb) else {
            return false;
        };
        let fused = block.fuse_into_last(op);
        if fused {
            self.count_op(rank);
        }
        fused
    }

    /// The ops of block `tb` of `rank`, where `add_op` would fuse an op
    /// made now into the one before it: the program fuses, and no pipeline
    /// is being recorded or waits in the block to be closed.
    fn fusing_block(&mut self, rank: u32, tb: u32) -> Option<&mut crate::passes::fuse::Fuser> {
        if !self.fuse || self.pipeline.is_some() {
            return None;
        }
        let block = block_ops(&mut self.blocks, rank, tb);
        block.open_pipeline.is_none().then_some(&mut block.fused)
    }

    /// Counts an op recorded on `rank`.
    fn count_op(&mut self, rank: u32) {
        self.touch(rank);
        self.ops += 1;
        self.ops_by_rank[rank as usize] += 1;
    }

    /// Appends `op` to thread block `tb` of `rank`, inside the open pipeline if any.
    pub fn add_op(&mut self, rank: u32, tb: u32, mut op: Op) {
        self.count_op(rank);
        op.context = self.context;
        let pipeline = self.pipeline;
        let fusing = self.fuse;
        // Only ops in a pipeline ask which pipeline their block had last.
        let last = pipeline.and_then(|_| self.last_pipeline.get(&(rank, tb)).copied());
        self.threadblock(rank, tb);
        let block = block_ops(&mut self.blocks, rank, tb);
        let kept = match pipeline {
            None => {
                block.close_pipeline(fusing);
                block.push(op, fusing)
            }
            Some(open) => match &mut block.open_pipeline {
                Some(p) if last == Some(open.serial) => {
                    p.extra_mut().body.push(op);
                    true
                }
                _ => {
                    block.close_pipeline(fusing);
                    let mut p = Op::new(OpName::Pipeline, open.span);
                    // The loops around the pipeline statement: its frame
                    // is the body's or an older one the body's keeps.
                    p.context = open.context;
                    p.extra_mut().iter = Some(open.iter);
                    p.extra_mut().body.push(op);
                    block.open_pipeline = Some(p);
                    self.last_pipeline.insert((rank, tb), open.serial);
                    true
                }
            },
        };
        if kept {
            self.keep_context();
        }
    }

    /// Opens a pipeline block; false if one is already open (they do not nest).
    pub fn open_pipeline(&mut self, iter: IterContext, span: Span) -> bool {
        self.touch_shared();
        if self.pipeline.is_some() {
            return false;
        }
        self.pipelines_opened += 1;
        self.pipeline = Some(OpenPipeline {
            serial: self.pipelines_opened,
            iter,
            span,
            context: self.context,
        });
        true
    }

    pub fn close_pipeline(&mut self) {
        self.pipeline = None;
    }
}
