//! The plan IR: what the evaluator records and the passes rewrite.
//!
//! A plan is a list of ranks; each rank owns input, output and scratch
//! buffers measured in *chunks*, a table of channels (memory and port
//! channels to one peer each, switch channels over a group of ranks), a table
//! of the remote buffers it touches, device semaphores, and thread blocks.
//! A thread block runs its op list in order with all of its threads; only
//! `nop`, `barrier` and the synchronising ops order the effects of one op
//! against the next (see SEMANTICS.md §5). Ops name channels and remote
//! buffers by *thread-block-local* indices into the thread block's own
//! tables, exactly as the MSCCL++ executor reads them; the tables map those
//! to rank-level ids.
//!
//! Every op keeps the source span of the call that produced it (the first
//! one, for a fused op), so that a pass that rejects ops can point at the
//! program text.

use crate::diag::Span;

mod channels;
mod kinds;
mod op;
pub use channels::{ChannelNumbers, ChannelPairs};
pub use kinds::*;
pub use op::*;

/// A thread block's tables and ops.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ThreadBlock {
    /// Per channel type, in order of first use: the rank-level channel ids
    /// this block uses; an op's channel id is a position in its type's list.
    pub channels: Table,
    /// Per access channel type, in order of first use: rank-level remote buffer ids.
    pub remote_refs: Table,
    pub ops: Vec<Op>,
}

impl ThreadBlock {
    /// Every op the block runs, each pipeline followed by its body, with
    /// whether the op is inside a pipeline (the executor counts them all).
    pub fn ops_with_bodies(&self) -> impl Iterator<Item = (&Op, bool)> {
        self.ops.iter().flat_map(|op| {
            std::iter::once((op, false)).chain(op.body().iter().map(|inner| (inner, true)))
        })
    }

    /// The rank-level ids of the `kind` channels this block uses, by local id.
    pub fn channel_ids(&self, kind: ChannelKind) -> &[u32] {
        table_list(&self.channels, kind)
    }

    /// The rank-level remote buffer ids this block reaches over `kind`
    /// channels, by local id.
    pub fn remote_buffer_ids(&self, kind: ChannelKind) -> &[u32] {
        table_list(&self.remote_refs, kind)
    }
}

/// A thread block's per-channel-type list of rank-level ids: most blocks
/// use one type and a few ids, kept inline (a plan may hold millions of
/// blocks).
pub type Table = smallvec::SmallVec<[(ChannelKind, Ids); 1]>;

fn table_list(table: &[(ChannelKind, Ids)], kind: ChannelKind) -> &[u32] {
    table
        .iter()
        .find(|(k, _)| *k == kind)
        .map_or(&[], |(_, ids)| ids.as_slice())
}

/// A rank-level remote buffer: a peer's buffer this rank accesses.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteBuffer {
    pub rank: u32,
    pub kind: BufferKind,
    pub access: Vec<ChannelKind>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SwitchChannelDecl {
    pub buffer: BufferKind,
    pub ranks: std::sync::Arc<[u32]>,
}

/// Thread block ids a rank may use. GPUs run a few hundred blocks at once
/// and the executor keeps every block resident, so a larger id is a mistake.
pub const MAX_THREAD_BLOCKS: u32 = 4096;

/// The barrier counters the MSCCL++ executor has per GPU: a barrier id
/// indexes them, unchecked.
pub const EXECUTOR_BARRIERS: usize = 16;

/// Where a plan element was made: the call, and the loop values then (an
/// frame of `Plan::loops`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Origin {
    pub span: Span,
    pub context: u32,
}

/// Everything one rank runs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RankPlan {
    pub input_chunks: u32,
    pub output_chunks: u32,
    pub scratch_chunks: u32,
    /// Peer of each memory channel, by rank-level memory channel id.
    pub memory_peers: Vec<u32>,
    /// Peer of each port channel, by rank-level port channel id.
    pub port_peers: Vec<u32>,
    /// The program line (and loop values) that made each memory and port
    /// channel, parallel to `memory_peers` and `port_peers`; empty for
    /// plans read from JSON.
    pub memory_origins: Vec<Origin>,
    pub port_origins: Vec<Origin>,
    pub switch_channels: Vec<SwitchChannelDecl>,
    pub remote_buffers: Vec<RemoteBuffer>,
    /// Initial value of each device semaphore.
    pub semaphores: Vec<i64>,
    /// The program line (and loop values) that made each semaphore,
    /// parallel to `semaphores`; empty for plans read from JSON.
    pub semaphore_origins: Vec<Origin>,
    pub threadblocks: Vec<ThreadBlock>,
}

impl RankPlan {
    /// The peer of each of the rank's `kind` channels (memory or port),
    /// by rank-level id.
    pub fn channel_peers(&self, kind: ChannelKind) -> &[u32] {
        match kind {
            ChannelKind::Port => &self.port_peers,
            _ => &self.memory_peers,
        }
    }

    /// For each of the rank's `kind` channels, by rank-level id, its
    /// number among the rank's channels of that kind to the same peer,
    /// and how many those are: the number the executor pairs channels by
    /// (a rank's k-th channel of a kind to a peer pairs with the peer's
    /// k-th back), and the one `--emit ops` and the pairing diagnostics
    /// name a channel by (`1#2`, "channel #2 to rank 1").
    pub fn peer_ordinals(&self, kind: ChannelKind) -> Vec<(u32, u32)> {
        let peers = self.channel_peers(kind);
        let mut seen: rustc_hash::FxHashMap<u32, u32> = Default::default();
        let ordinals: Vec<u32> = peers
            .iter()
            .map(|p| {
                let k = seen.entry(*p).or_default();
                *k += 1;
                *k - 1
            })
            .collect();
        peers
            .iter()
            .zip(ordinals)
            .map(|(p, k)| (k, seen[p]))
            .collect()
    }

    /// The peer's buffer block `tb` reaches through its remote buffer `id`
    /// of `kind` channels.
    pub fn remote_buffer(&self, tb: u32, kind: ChannelKind, id: u32) -> Option<&RemoteBuffer> {
        let tb = self.threadblocks.get(tb as usize)?;
        let global = *tb.remote_buffer_ids(kind).get(id as usize)?;
        self.remote_buffers.get(global as usize)
    }

    /// Block `tb`'s switch channel `id`.
    pub fn switch_channel(&self, tb: u32, id: u32) -> Option<&SwitchChannelDecl> {
        let tb = self.threadblocks.get(tb as usize)?;
        let global = *tb.channel_ids(ChannelKind::Switch).get(id as usize)?;
        self.switch_channels.get(global as usize)
    }

    /// Gives each op, channel and semaphore the loop frame `renumber`
    /// makes of its own: the rank's frames have moved
    /// (`LoopValues::append`).
    pub fn renumber_contexts(&mut self, renumber: &impl Fn(u32) -> u32) {
        let channels = self.memory_origins.iter_mut().chain(&mut self.port_origins);
        for origin in channels.chain(&mut self.semaphore_origins) {
            origin.context = renumber(origin.context);
        }
        for tb in &mut self.threadblocks {
            for op in &mut tb.ops {
                op.context = renumber(op.context);
                for inner in op.body_mut() {
                    inner.context = renumber(inner.context);
                }
            }
        }
    }
}

/// The collective a plan implements, as the plan names it. Its chunk
/// counts are each rank's buffers as the plan divides them: the program's
/// until instance replication, which multiplies them (the result is
/// defined on the executor's chunks, as it is for a plan read from JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Collective {
    pub name: &'static str,
    pub num_ranks: u32,
    pub chunk_factor: u32,
    pub inplace: bool,
    pub input_chunks: u32,
    pub output_chunks: u32,
}

/// Program-wide settings (the DSL's CollectiveProgram arguments).
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    pub instances: u32,
    pub protocol: Protocol,
    pub instr_fusion: bool,
    pub auto_sync: bool,
    pub replication_policy: ReplicationPolicy,
    pub reuse_resources: bool,
    pub num_threads_per_block: u32,
    pub use_double_scratch_buffer: bool,
    pub buffer_alignment: u32,
    /// The message sizes (bytes) the plan is for, as the program set them:
    /// Python ints, written to the plan whole, a negative one too, as the
    /// reference writes it. What the executor makes of them is
    /// `passes::executor_limits::min_message_size_as_read` and its pair.
    pub min_message_size: i128,
    pub max_message_size: i128,
}

impl Options {
    /// The message sizes (bytes) the plan runs at, from the first to the
    /// second: as the program set them, a negative one as the executor
    /// reads it, its 64-bit pattern (-1 is every size as a maximum, none as
    /// a minimum).
    pub fn message_sizes(&self) -> (u64, u64) {
        let read = |size: i128| u64::try_from(size).unwrap_or(size as u64);
        (read(self.min_message_size), read(self.max_message_size))
    }
}

impl Default for Options {
    fn default() -> Options {
        Options {
            instances: 1,
            protocol: Protocol::Simple,
            instr_fusion: true,
            auto_sync: true,
            replication_policy: ReplicationPolicy::Interleaved,
            reuse_resources: false,
            num_threads_per_block: 1024,
            use_double_scratch_buffer: false,
            buffer_alignment: 16,
            min_message_size: 0,
            max_message_size: u64::MAX as i128,
        }
    }
}

/// A whole execution plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub name: String,
    pub collective: Collective,
    pub options: Options,
    pub ranks: Vec<RankPlan>,
    /// The loop values ops and channels were made in, for reports
    /// ("i = 2, peer = 3"); empty for plans read from JSON.
    pub loops: LoopValues,
    /// Whether the plan holds its `options.instances` copies of every
    /// thread block, channel and semaphore: once the replication pass ran,
    /// and for a plan read from JSON. A plan compiled only to be written
    /// as JSON leaves them to the writer, which makes a rank's copies as
    /// it writes that rank (`passes::Instances::AsWritten`): until then its
    /// collective, ranks and scratch are one instance's.
    pub instances_made: bool,
    /// Where the program sets `min_message_size`, for the warning when the
    /// executor would read it as another number; `None` where the default
    /// stands and for plans read from JSON.
    pub min_message_size_at: Option<crate::diag::Span>,
    /// Where the program sets `max_message_size`, likewise.
    pub max_message_size_at: Option<crate::diag::Span>,
    /// Where the program sets its collective, for the warnings about its
    /// buffers; `None` for plans read from JSON.
    pub collective_at: Option<crate::diag::Span>,
}

/// The loop values ops and channels were made in, kept as cheaply as the
/// evaluator can: a tree of frames, each one loop variable's value and
/// the frame of the loops around it; an op keeps the id of the innermost
/// (its `context`). Frame 0 is outside any loop. The text ("i = 2, peer =
/// 3") is made only for the few reports that show it. A frame is 16
/// bytes: one is kept per loop iteration that records an op or a channel
/// the plan keeps (an op fused into the one before keeps none).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoopValues {
    /// The loop variables' names.
    pub names: Vec<String>,
    frames: Vec<LoopFrame>,
    /// The values that are not ints, as the evaluator writes them.
    texts: Vec<String>,
}

/// One loop variable's value, within the frame `parent`: an int, or with
/// `TEXT` in `name`, the index of its text.
#[derive(Debug, Clone, Copy, PartialEq)]
struct LoopFrame {
    parent: u32,
    name: u32,
    value: i64,
}

/// Marks a frame whose value is a text.
const TEXT: u32 = 1 << 31;

/// The name of the frames that hold where a function was called (its
/// `call_site_value`) rather than a loop variable's value: the ops a call
/// records say where it was called from. No loop variable is named so.
pub const CALL_FRAME: &str = "(call)";

/// A call's place as the value of its frame: its file and first byte.
pub fn call_site_value(call: Span) -> i64 {
    (i64::from(call.file) << 32) | i64::from(call.start)
}

/// A loop variable's value: nearly always an int; anything else as the
/// evaluator writes it briefly.
#[derive(Debug, Clone, PartialEq)]
pub enum LoopValue {
    Int(i64),
    Text(Box<str>),
}

impl LoopValues {
    /// No frames but frame 0, outside any loop.
    pub fn new() -> LoopValues {
        LoopValues {
            names: Vec::new(),
            frames: vec![LoopFrame {
                parent: 0,
                name: 0,
                value: 0,
            }],
            texts: Vec::new(),
        }
    }

    /// A new frame, `names[name] = value` within `parent`; its id.
    pub fn push(&mut self, parent: u32, name: u32, value: LoopValue) -> u32 {
        let (name, value) = match value {
            LoopValue::Int(v) => (name, v),
            LoopValue::Text(t) => {
                self.texts.push(t.into());
                (name | TEXT, self.texts.len() as i64 - 1)
            }
        };
        self.frames.push(LoopFrame {
            parent,
            name,
            value,
        });
        self.frames.len() as u32 - 1
    }

    /// The id of the newest frame (0 when there is none but the root).
    pub fn newest(&self) -> u32 {
        self.frames.len() as u32 - 1
    }

    /// Drops the newest frame, which nothing may refer to any more (the
    /// root stays).
    pub fn drop_newest(&mut self) {
        if self.frames.len() > 1 {
            if let Some(frame) = self.frames.pop() {
                if frame.name & TEXT != 0 {
                    self.texts.pop();
                }
            }
        }
    }

    /// Adds `other`'s frames (with their names and texts) after these;
    /// gives the id each of `other`'s frames has here.
    pub fn append(&mut self, other: &LoopValues) -> impl Fn(u32) -> u32 {
        let names: Vec<u32> = other
            .names
            .iter()
            .map(|name| match self.names.iter().position(|n| n == name) {
                Some(at) => at as u32,
                None => {
                    self.names.push(name.clone());
                    self.names.len() as u32 - 1
                }
            })
            .collect();
        // Frame 0, outside any loop, is each list's own: it stays 0.
        let offset = (self.frames.len() as u32).saturating_sub(1);
        let renumber = move |frame: u32| if frame == 0 { 0 } else { frame + offset };
        let texts = self.texts.len() as i64;
        for frame in other.frames.iter().skip(1) {
            let (name, value) = match frame.name & TEXT {
                0 => (names[frame.name as usize], frame.value),
                _ => (
                    names[(frame.name & !TEXT) as usize] | TEXT,
                    frame.value + texts,
                ),
            };
            self.frames.push(LoopFrame {
                parent: renumber(frame.parent),
                name,
                value,
            });
        }
        self.texts.extend(other.texts.iter().cloned());
        renumber
    }

    /// The values of frame `context` and the frames around it: "i = 2,
    /// peer = 3"; `None` outside any loop.
    pub fn text(&self, context: u32) -> Option<String> {
        let mut parts = Vec::new();
        let mut at = context;
        while at != 0 {
            let frame = self.frames.get(at as usize)?;
            let name = self
                .names
                .get((frame.name & !TEXT) as usize)
                .map_or("?", String::as_str);
            if name == CALL_FRAME {
                at = frame.parent;
                continue;
            }
            parts.push(match frame.name & TEXT {
                0 => format!("{name} = {}", frame.value),
                _ => format!("{name} = {}", self.texts[frame.value as usize]),
            });
            at = frame.parent;
        }
        parts.reverse();
        (!parts.is_empty()).then(|| parts.join(", "))
    }

    /// Where the calls around frame `context` were made, the innermost
    /// first (each a span of its call's first byte).
    pub fn call_sites(&self, context: u32) -> Vec<Span> {
        let mut calls = Vec::new();
        let mut at = context;
        while let Some(frame) = self.frames.get(at as usize).filter(|_| at != 0) {
            let name = self.names.get((frame.name & !TEXT) as usize);
            if frame.name & TEXT == 0 && name.is_some_and(|n| n == CALL_FRAME) {
                let (file, start) = ((frame.value >> 32) as u32, frame.value as u32);
                calls.push(Span::new(file, start as usize, start as usize));
            }
            at = frame.parent;
        }
        calls
    }
}

/// One end of a memory or port channel: (rank, channel type, the rank's
/// global channel index of that type).
pub type Endpoint = (u32, ChannelKind, u32);

/// The size (`Plan::size`) of the smallest plan that the passes and the
/// writer work on with several threads: a smaller one takes about a
/// millisecond, less than starting them.
pub const PARALLEL_SIZE: usize = 100_000;

impl Plan {
    /// The size of the plan, in ops (those of pipelines' bodies too) and
    /// their buffer and channel references: what the passes and the
    /// writer take time over.
    pub fn size(&self) -> usize {
        let ops = self
            .ranks
            .iter()
            .flat_map(|r| &r.threadblocks)
            .flat_map(|tb| tb.ops_with_bodies());
        ops.map(|(op, _)| 1 + op.src.len() + op.dst.len() + op.channel_ids.len())
            .sum()
    }

    /// Whether the plan's input or output has chunks: a plan of
    /// synchronization only moves no data, and is the same at every size.
    pub fn moves_data(&self) -> bool {
        self.ranks
            .first()
            .is_some_and(|r| r.input_chunks.max(r.output_chunks) > 0)
    }

    /// Where `rank`'s channel `channel` of `kind` was made, if known.
    pub fn channel_origin(&self, rank: u32, kind: ChannelKind, channel: u32) -> Option<Origin> {
        let r = self.ranks.get(rank as usize)?;
        let origins = match kind {
            ChannelKind::Port => &r.port_origins,
            _ => &r.memory_origins,
        };
        origins.get(channel as usize).copied()
    }

    /// The loop values of context `context` ("i = 2, peer = 3"), if any.
    pub fn loop_values(&self, context: u32) -> Option<String> {
        self.loops.text(context)
    }

    /// `d`, about what was made in loop frame `context`: marked at the
    /// call that reached it in each file (an op the standard library made
    /// points at the program's call too, for the reader and the editor),
    /// with the loop values then as a `when` note.
    pub fn in_context(&self, d: crate::diag::Diagnostic, context: u32) -> crate::diag::Diagnostic {
        let d = d.called_at_each(self.loops.call_sites(context));
        match self.loop_values(context) {
            Some(values) => d.with_note(format!("when {values}")),
            None => d,
        }
    }
}

/// Where a result chunk's data comes from: one rank's input chunk (the
/// collectives that only move data), or one input chunk of every rank
/// reduced (by the plan's [`Plan::reduce_op`]; kept as that, not as a list: a list per chunk is cubic in
/// the ranks for an AllReduce).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChunkSources {
    One { rank: u32, chunk: u32 },
    EveryRank { chunk: u32 },
}

impl ChunkSources {
    /// The (rank, input chunk) pairs reduced, in rank order, of `ranks` ranks.
    pub fn pairs(self, ranks: u32) -> impl Iterator<Item = (u32, u32)> {
        let (range, fixed) = match self {
            ChunkSources::One { rank, chunk } => (rank..rank + 1, chunk),
            ChunkSources::EveryRank { chunk } => (0..ranks, chunk),
        };
        range.map(move |r| (r, fixed))
    }

    pub fn is_reduction(self) -> bool {
        matches!(self, ChunkSources::EveryRank { .. })
    }
}

impl Plan {
    /// The reduction the collective's result is held to: that of the
    /// plan's first reducing op (a sum where none reduces). A plan that
    /// mixes reductions is wrong whichever is chosen.
    pub fn reduce_op(&self) -> ReduceOp {
        fn find(ops: &[Op]) -> Option<ReduceOp> {
            ops.iter()
                .find_map(|op| op.reduce_op.or_else(|| find(op.body())))
        }
        self.ranks
            .iter()
            .flat_map(|r| &r.threadblocks)
            .find_map(|tb| find(&tb.ops))
            .unwrap_or(ReduceOp::Sum)
    }

    /// The collective's definition for `rank`: for each of its output chunks,
    /// the input chunks it must hold afterwards. `None` for the test and
    /// custom collectives, which define nothing.
    pub fn expected_result(&self, rank: u32) -> Option<Vec<(u32, ChunkSources)>> {
        let c = &self.collective;
        let n = self.ranks.len() as u32;
        let outputs = self.ranks[rank as usize].output_chunks;
        let each = |f: &dyn Fn(u32) -> ChunkSources| (0..outputs).map(|k| (k, f(k))).collect();
        match c.name {
            "allgather" => {
                let per = c.input_chunks;
                Some(each(&|k| ChunkSources::One {
                    rank: k / per,
                    chunk: k % per,
                }))
            }
            "allreduce" => Some(each(&|k| ChunkSources::EveryRank { chunk: k })),
            "reducescatter" => Some(each(&|k| ChunkSources::EveryRank {
                chunk: rank * outputs + k,
            })),
            "alltoall" => {
                let per = c.input_chunks / n.max(1);
                Some(each(&|k| ChunkSources::One {
                    rank: k / per,
                    chunk: rank * per + k % per,
                }))
            }
            // Any pairing is a SendRecv; without one found in the plan
            // (`sendrecv_result`), each rank from the one before.
            "sendrecv" => Some(self.sendrecv_result(rank, (rank + n - 1) % n)),
            _ => None,
        }
    }

    /// A SendRecv's result at `rank` when it receives from rank `from`:
    /// each of its output chunks is `from`'s input chunk of that number.
    pub fn sendrecv_result(&self, rank: u32, from: u32) -> Vec<(u32, ChunkSources)> {
        (0..self.ranks[rank as usize].output_chunks)
            .map(|chunk| (chunk, ChunkSources::One { rank: from, chunk }))
            .collect()
    }
}

/// The element types a collective's data can have at run time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dtype {
    Float32,
    Float16,
    Bfloat16,
}

impl Dtype {
    pub fn bytes(self) -> u64 {
        match self {
            Dtype::Float32 => 4,
            Dtype::Float16 | Dtype::Bfloat16 => 2,
        }
    }

    /// The name nccl-tests prints in its `type` column.
    pub fn nccl_name(self) -> &'static str {
        match self {
            Dtype::Float32 => "float",
            Dtype::Float16 => "half",
            Dtype::Bfloat16 => "bfloat16",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pipeline's body is work for the passes and the writer as much as
    /// the ops beside it: a plan's size counts it.
    #[test]
    fn a_plans_size_counts_its_pipelines_bodies() {
        let copy = || {
            let mut op = Op::new(OpName::Copy, Default::default());
            op.src = smallvec::smallvec![BufRef::local(BufferKind::Input, 0, 1)];
            op.dst = smallvec::smallvec![BufRef::local(BufferKind::Output, 0, 1)];
            op
        };
        let mut pipeline = Op::new(OpName::Pipeline, Default::default());
        pipeline.extra_mut().body = vec![copy(), copy()];
        let rank = RankPlan {
            input_chunks: 1,
            output_chunks: 1,
            threadblocks: vec![ThreadBlock {
                ops: vec![copy(), pipeline],
                ..ThreadBlock::default()
            }],
            ..RankPlan::default()
        };
        let plan = Plan {
            name: "p".into(),
            collective: Collective {
                name: "allgather",
                num_ranks: 1,
                chunk_factor: 1,
                inplace: false,
                input_chunks: 1,
                output_chunks: 1,
            },
            options: Options::default(),
            loops: Default::default(),
            instances_made: true,
            min_message_size_at: None,
            collective_at: None,
            max_message_size_at: None,
            ranks: vec![rank],
        };
        // Three copies of a source and a destination each, and the pipeline.
        assert_eq!(plan.size(), 3 * 3 + 1);
    }
}
