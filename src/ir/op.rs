//! One op of a thread block: its buffer references, its channels, its
//! thread block group and pipeline context, and where in the program it
//! was made.

use super::*;

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

impl IterContext {
    /// The iterations the executor runs the pipeline for at chunks of
    /// `chunk` bytes: `ceil(num_chunks * chunk / unit_size)` (a unit of 0
    /// counts as 1), `u64::MAX` past it.
    pub fn iterations(&self, chunk: u64) -> u64 {
        let bytes = u128::from(self.num_chunks) * u128::from(chunk);
        let n = bytes.div_ceil(u128::from(self.unit_size.max(1)));
        u64::try_from(n).unwrap_or(u64::MAX)
    }
}

/// An op's buffer references: almost always one, kept inline. (Two would
/// spare a read-reduce its allocation, 3% of its instructions, but make
/// every op 48 bytes larger: alltoall_ring at 512 ranks checked in 880
/// MB, not 730.)
pub type BufRefs = smallvec::SmallVec<[BufRef; 1]>;

/// An op's thread-block-local channel (or semaphore) indices: a few,
/// kept inline.
pub type Ids = smallvec::SmallVec<[u32; 4]>;

/// Adds `id` to `ids`. Lists that outgrow their inline room are those
/// that keep growing (a signal fused over every peer of an all-pairs
/// barrier, a block's table of channels), so the first spill makes room
/// for 16 at once: one allocation where doubling would take two (50
/// instructions a signal, in an all-pairs barrier at 16 ranks).
#[inline]
pub fn push_id(ids: &mut Ids, id: u32) {
    if !ids.spilled() && ids.len() == ids.inline_size() {
        ids.reserve_exact(16 - ids.len());
    }
    ids.push(id);
}

/// One executor op.
///
/// A plan at a thousand ranks holds millions of ops, so an op keeps what
/// most ops have inline and the fields few ops use in a box ([`OpExtra`]).
#[derive(Debug)]
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
    /// Whether fusion merged several of the program's ops into this one
    /// (whose `span` and `context` are then the first's).
    pub fused: bool,
    /// The source call this op came from (the first one, for a fused op).
    pub span: Span,
    /// The loop values when it was made: the frame of `Plan::loops` it was
    /// made in (0: outside any loop, or unknown).
    pub context: u32,
}

/// The fields of an op that only semaphore, switch and pipeline ops use.
#[derive(Debug, Default, PartialEq)]
pub struct OpExtra {
    pub semaphore_ids: Vec<u32>,
    pub group_reduce: Option<GroupReduce>,
    pub iter: Option<IterContext>,
    /// The ops of a `pipeline`.
    pub body: Vec<Op>,
}

/// Written out, not derived: a derived `clone_from` clones and drops,
/// where the writer copies a semaphore's op into one alike for each
/// instance (`Op::clone_from`) and its lists can be reused.
impl Clone for OpExtra {
    fn clone(&self) -> OpExtra {
        OpExtra {
            semaphore_ids: self.semaphore_ids.clone(),
            body: self.body.clone(),
            ..*self
        }
    }

    fn clone_from(&mut self, source: &OpExtra) {
        self.semaphore_ids.clone_from(&source.semaphore_ids);
        self.body.clone_from(&source.body);
        (self.group_reduce, self.iter) = (source.group_reduce, source.iter);
    }
}

/// Written out, not derived: a derived clone copies each list's items one
/// by one, and replicating instances clones every op of the plan.
impl Clone for Op {
    fn clone(&self) -> Op {
        Op {
            channel_ids: Ids::from_slice(&self.channel_ids),
            src: BufRefs::from_slice(&self.src),
            dst: BufRefs::from_slice(&self.dst),
            extra: self.extra.clone(),
            ..*self
        }
    }

    /// Into this op's own lists: the writer copies every op of a plan's
    /// instances into one op, in turn, and allocates nothing for it.
    fn clone_from(&mut self, source: &Op) {
        let Op {
            name,
            channel,
            channel_ids,
            src,
            dst,
            tbg,
            reduce_op,
            data_sync,
            barrier,
            extra,
            fused,
            span,
            context,
        } = source;
        refill(&mut self.channel_ids, channel_ids);
        refill(&mut self.src, src);
        refill(&mut self.dst, dst);
        self.extra.clone_from(extra);
        (self.name, self.channel, self.tbg, self.reduce_op) = (*name, *channel, *tbg, *reduce_op);
        (
            self.data_sync,
            self.barrier,
            self.fused,
            self.span,
            self.context,
        ) = (*data_sync, *barrier, *fused, *span, *context);
    }
}

/// `list` made a copy of `items`, in place: a list the length of the one
/// copied before (ops much alike follow one another) is overwritten.
fn refill<A: smallvec::Array>(list: &mut smallvec::SmallVec<A>, items: &[A::Item])
where
    A::Item: Copy,
{
    if list.len() == items.len() {
        list.copy_from_slice(items);
    } else {
        list.clear();
        list.extend_from_slice(items);
    }
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
            && self.fused == other.fused
            && self.span == other.span
            && self.context == other.context
    }
}

impl Op {
    /// The sources the op reads as packets (SEMANTICS.md §3.6: a packet
    /// region takes twice its data's bytes): an unpack's, a packet
    /// forward's and a switch packet store's; a packet reduce's after the
    /// first (its own data); over a port channel a packet put's, whose
    /// proxy copies the bytes as they are.
    pub fn packet_sources(&self) -> &[BufRef] {
        use OpName::*;
        match self.name {
            UnpackPackets | ReadPutPackets | GroupStorePackets => &self.src,
            PutPackets if self.channel == Some(ChannelKind::Port) => &self.src,
            ReducePackets | ReduceSendPackets | ReduceCopyPackets | ReduceCopySendPackets => {
                self.src.get(1..).unwrap_or(&[])
            }
            _ => &[],
        }
    }

    /// The destinations the op writes as packets: a packet put's, copy's
    /// and switch store's; a reduce-and-send's after the first (its raw
    /// result).
    pub fn packet_destinations(&self) -> &[BufRef] {
        use OpName::*;
        match self.name {
            PutPackets | ReadPutPackets | CopyPackets | GroupStorePackets => &self.dst,
            ReduceSendPackets | ReduceCopyPackets | ReduceCopySendPackets => {
                self.dst.get(1..).unwrap_or(&[])
            }
            _ => &[],
        }
    }

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
            fused: false,
            span,
            context: 0,
        }
    }

    pub fn nop(span: Span) -> Op {
        Op::new(OpName::Nop, span)
    }

    /// A `nop` that syncs the thread block around `op`, for it: placed in
    /// the program (reports, `--emit ops`) where `op` is, loop values too.
    pub fn nop_for(op: &Op) -> Op {
        Op {
            context: op.context,
            ..Op::nop(op.span)
        }
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

    /// Whether the op combines values: a reducing kind, or one that names
    /// a reduce op.
    pub fn reduces(&self) -> bool {
        self.reduce_op.is_some() || self.name.is_reduction()
    }

    /// The ops of a `pipeline` (none for any other op).
    pub fn body(&self) -> &[Op] {
        &self.extra().body
    }

    /// The rarely used fields, where the op has them.
    pub fn extra_if_any(&self) -> Option<&OpExtra> {
        self.extra.as_deref()
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
