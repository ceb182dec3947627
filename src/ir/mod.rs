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
pub use channels::ChannelPairs;

/// Which of a rank's buffers a chunk lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BufferKind {
    Input,
    Output,
    Scratch,
}

impl BufferKind {
    /// The one-letter code the executor reads.
    pub fn code(self) -> &'static str {
        match self {
            BufferKind::Input => "i",
            BufferKind::Output => "o",
            BufferKind::Scratch => "s",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            BufferKind::Input => "input",
            BufferKind::Output => "output",
            BufferKind::Scratch => "scratch",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ChannelKind {
    Memory,
    Port,
    Switch,
}

impl ChannelKind {
    pub fn name(self) -> &'static str {
        match self {
            ChannelKind::Memory => "memory",
            ChannelKind::Port => "port",
            ChannelKind::Switch => "switch",
        }
    }
}

/// Where a thread block synchronises its own threads around an op.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct DataSync {
    pub before: bool,
    pub after: bool,
}

impl DataSync {
    pub const NONE: DataSync = DataSync {
        before: false,
        after: false,
    };
    pub const BOTH: DataSync = DataSync {
        before: true,
        after: true,
    };
    pub const BEFORE: DataSync = DataSync {
        before: true,
        after: false,
    };
    pub const AFTER: DataSync = DataSync {
        before: false,
        after: true,
    };

    pub fn union(self, other: DataSync) -> DataSync {
        DataSync {
            before: self.before || other.before,
            after: self.after || other.after,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    Sum,
    Min,
    Max,
}

impl ReduceOp {
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Min => "min",
            ReduceOp::Max => "max",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Protocol {
    Simple,
    LL,
}

impl Protocol {
    /// The name as plans and programs spell it.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Simple => "Simple",
            Protocol::LL => "LL",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReplicationPolicy {
    Interleaved,
    None,
}

/// Declares `OpName` from one table of variants and JSON spellings, so the
/// enum, its spelling and the reverse lookup cannot drift apart.
macro_rules! op_names {
    ($($variant:ident => $json:literal,)*) => {
        /// The op names of the MSCCL++ executor (SEMANTICS.md §2.7).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum OpName {
            $($variant,)*
        }

        impl OpName {
            /// Every op with its JSON spelling.
            pub const NAMES: &'static [(&'static str, OpName)] = &[$(($json, OpName::$variant),)*];

            /// The name as the JSON plan spells it.
            pub fn json(self) -> &'static str {
                match self {
                    $(OpName::$variant => $json,)*
                }
            }
        }
    };
}

op_names! {
    Nop => "nop",
    Barrier => "barrier",
    Signal => "signal",
    Wait => "wait",
    RelaxedSignal => "rlxsignal",
    RelaxedWait => "rlxwait",
    Flush => "flush",
    Put => "put",
    PutWithSignal => "pws",
    PutWithSignalAndFlush => "pwsf",
    PutPackets => "ppkt",
    ReadPutPackets => "rppkt",
    Get => "get",
    Copy => "copy",
    CopyPackets => "cpkt",
    UnpackPackets => "upkt",
    Reduce => "re",
    ReduceSend => "res",
    ReadReduce => "rre",
    ReadReduceSend => "rres",
    ReducePackets => "repkt",
    ReduceSendPackets => "respkt",
    ReduceCopyPackets => "recpkt",
    ReduceCopySendPackets => "recspkt",
    GroupLoadReduce => "glre",
    GroupLoadReduceStore => "glres",
    GroupStore => "gstore",
    GroupStorePackets => "gstorepkt",
    SemAcquire => "sem_acquire",
    SemRelease => "sem_release",
    Pipeline => "pipeline",
}

impl OpName {
    pub fn is_signal(self) -> bool {
        matches!(self, OpName::Signal | OpName::RelaxedSignal)
    }

    pub fn is_wait(self) -> bool {
        matches!(self, OpName::Wait | OpName::RelaxedWait)
    }

    /// Whether the op moves no data of its own: synchronization, and the
    /// pipeline that holds other ops.
    pub fn moves_no_data(self) -> bool {
        use OpName::*;
        matches!(
            self,
            Nop | Barrier
                | Signal
                | Wait
                | RelaxedSignal
                | RelaxedWait
                | Flush
                | SemAcquire
                | SemRelease
                | Pipeline
        )
    }

    /// Whether the op takes data from its `src_buff` to its `dst_buff`, and
    /// so needs at least one of each. (A switch reduce that no broadcast
    /// follows, `glre`, names its chunks otherwise.)
    pub fn needs_buffers(self) -> bool {
        !self.moves_no_data() && self != OpName::GroupLoadReduce
    }

    /// Whether the op combines its sources with a reduce operation.
    pub fn is_reduction(self) -> bool {
        use OpName::*;
        matches!(
            self,
            Reduce
                | ReduceSend
                | ReadReduce
                | ReadReduceSend
                | ReducePackets
                | ReduceSendPackets
                | ReduceCopyPackets
                | ReduceCopySendPackets
                | GroupLoadReduce
                | GroupLoadReduceStore
        )
    }
}

/// What a buffer reference points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefTarget {
    /// This rank's own buffer.
    Local(BufferKind),
    /// A peer's buffer, through the thread block's remote-buffer table entry
    /// `id` (of the op's channel type); `kind` is that buffer's kind.
    Remote { id: u32, kind: BufferKind },
    /// The multicast buffer of the thread block's switch channel `id`.
    Switch { id: u32 },
}

/// A run of chunks an op reads or writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BufRef {
    pub target: RefTarget,
    pub index: u32,
    pub size: u32,
    /// Written out as `rank` (the DSL does so for switch-store sources only).
    pub rank: Option<u32>,
}

impl BufRef {
    pub fn local(kind: BufferKind, index: u32, size: u32) -> BufRef {
        BufRef {
            target: RefTarget::Local(kind),
            index,
            size,
            rank: None,
        }
    }

    /// The local buffer this reference names, if it is local.
    pub fn local_kind(&self) -> Option<BufferKind> {
        match self.target {
            RefTarget::Local(kind) => Some(kind),
            _ => None,
        }
    }
}

/// Thread-block-group membership of an op: this block is part `tb_id` of `size`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TbgInfo {
    pub tb_id: u32,
    pub size: u32,
}

/// The extra fields of an unfused switch reduce (`glre`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupReduce {
    pub buffer: BufferKind,
    pub buffer_offset: u32,
    pub size: u32,
    pub dst_rank: u32,
    pub dst_kind: BufferKind,
    pub dst_index: u32,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IterContext {
    pub unit_size: u64,
    pub num_chunks: u32,
}

/// An op's buffer references: almost always one, kept inline.
pub type BufRefs = smallvec::SmallVec<[BufRef; 1]>;

/// An op's thread-block-local channel (or semaphore) indices: a few,
/// kept inline.
pub type Ids = smallvec::SmallVec<[u32; 4]>;

/// One executor op.
///
/// A plan at a thousand ranks holds millions of ops, so an op keeps what
/// most ops have inline and the fields few ops use in a box ([`OpExtra`]).
#[derive(Debug, Clone)]
pub struct Op {
    pub name: OpName,
    pub channel: Option<ChannelKind>,
    /// Thread-block-local channel indices.
    pub channel_ids: Ids,
    pub src: BufRefs,
    pub dst: BufRefs,
    pub tbg: Option<TbgInfo>,
    pub reduce_op: Option<ReduceOp>,
    pub data_sync: DataSync,
    pub barrier: Option<(u32, u32)>,
    extra: Option<Box<OpExtra>>,
    /// The source call this op came from (the first one, for a fused op).
    pub span: Span,
    /// The loop values when it was made: an index into
    /// `Plan::loop_contexts` (0: outside any loop, or unknown).
    pub context: u32,
}

/// The fields of an op that only semaphore, switch and pipeline ops use.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OpExtra {
    pub semaphore_ids: Vec<u32>,
    pub group_reduce: Option<GroupReduce>,
    pub iter: Option<IterContext>,
    /// The ops of a `pipeline`.
    pub body: Vec<Op>,
}

static NO_EXTRA: OpExtra = OpExtra {
    semaphore_ids: Vec::new(),
    group_reduce: None,
    iter: None,
    body: Vec::new(),
};

impl PartialEq for Op {
    fn eq(&self, other: &Op) -> bool {
        self.name == other.name
            && self.channel == other.channel
            && self.channel_ids == other.channel_ids
            && self.src == other.src
            && self.dst == other.dst
            && self.tbg == other.tbg
            && self.reduce_op == other.reduce_op
            && self.data_sync == other.data_sync
            && self.barrier == other.barrier
            && self.extra() == other.extra()
            && self.span == other.span
            && self.context == other.context
    }
}

impl Op {
    pub fn new(name: OpName, span: Span) -> Op {
        Op {
            name,
            channel: None,
            channel_ids: Ids::new(),
            src: BufRefs::new(),
            dst: BufRefs::new(),
            tbg: None,
            reduce_op: None,
            data_sync: DataSync::NONE,
            barrier: None,
            extra: None,
            span,
            context: 0,
        }
    }

    pub fn nop(span: Span) -> Op {
        Op::new(OpName::Nop, span)
    }

    pub fn span(&self) -> Span {
        self.span
    }

    /// The rarely used fields (empty ones where the op has none).
    pub fn extra(&self) -> &OpExtra {
        self.extra.as_deref().unwrap_or(&NO_EXTRA)
    }

    /// The rarely used fields, to set them.
    pub fn extra_mut(&mut self) -> &mut OpExtra {
        self.extra.get_or_insert_with(Box::default)
    }

    /// Whether the plan gives the executor this op's `channel_ids`, as the
    /// reference compiler writes them: for synchronisation ops, gets and
    /// group reduces always, for data ops only on port channels
    /// (memory-channel data ops address peers by remote buffer).
    pub fn writes_channel_ids(&self) -> bool {
        use OpName::*;
        matches!(
            self.name,
            Signal | Wait | RelaxedSignal | RelaxedWait | Flush | Get | GroupLoadReduce
        ) || (self.channel == Some(ChannelKind::Port) && !self.channel_ids.is_empty())
    }

    pub fn semaphore_ids(&self) -> &[u32] {
        &self.extra().semaphore_ids
    }

    pub fn group_reduce(&self) -> Option<GroupReduce> {
        self.extra().group_reduce
    }

    pub fn iter_context(&self) -> Option<IterContext> {
        self.extra().iter
    }

    /// The ops of a `pipeline` (none for any other op).
    pub fn body(&self) -> &[Op] {
        &self.extra().body
    }

    /// The rarely used fields, to change them where the op has any.
    pub fn extra_if_any_mut(&mut self) -> Option<&mut OpExtra> {
        self.extra.as_deref_mut()
    }

    /// The ops of a `pipeline`, to change them in place.
    pub fn body_mut(&mut self) -> &mut [Op] {
        match &mut self.extra {
            Some(extra) => &mut extra.body,
            None => &mut [],
        }
    }
}

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

/// Where a plan element was made: the call, and the loop values then (an
/// index into `Plan::loop_contexts`).
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
    pub threadblocks: Vec<ThreadBlock>,
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
    pub min_message_size: u64,
    pub max_message_size: u64,
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
            max_message_size: u64::MAX,
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
    /// ("i = 2, peer = 3"); entry 0 is outside any loop. Empty for plans
    /// read from JSON.
    pub loop_contexts: Vec<String>,
}

/// One end of a memory or port channel: (rank, channel type, the rank's
/// global channel index of that type).
pub type Endpoint = (u32, ChannelKind, u32);

impl Plan {
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
    pub fn loop_values(&self, context: u32) -> Option<&str> {
        (context > 0)
            .then(|| self.loop_contexts.get(context as usize))
            .flatten()
            .map(String::as_str)
    }
}

/// Where a result chunk's data comes from: one rank's input chunk (the
/// collectives that only move data), or the sum of one input chunk over
/// every rank (kept as that, not as a list: a list per chunk is cubic in
/// the ranks for an AllReduce).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChunkSources {
    One { rank: u32, chunk: u32 },
    EveryRank { chunk: u32 },
}

impl ChunkSources {
    /// The (rank, input chunk) pairs summed, in rank order, of `ranks` ranks.
    pub fn pairs(self, ranks: u32) -> impl Iterator<Item = (u32, u32)> {
        let (range, fixed) = match self {
            ChunkSources::One { rank, chunk } => (rank..rank + 1, chunk),
            ChunkSources::EveryRank { chunk } => (0..ranks, chunk),
        };
        range.map(move |r| (r, fixed))
    }

    pub fn is_sum(self) -> bool {
        matches!(self, ChunkSources::EveryRank { .. })
    }
}

impl Plan {
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
