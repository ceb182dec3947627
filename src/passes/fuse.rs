//! Instruction fusion: adjacent ops of one thread block that the executor
//! can run as one. Each rule names the pair it merges:
//!
//! - signals, waits (relaxed or not), flushes and semaphore ops over
//!   disjoint channels/semaphores merge into one multi-channel op;
//! - puts (any flavour) and gets of equal size and group merge their lists;
//! - a reduction whose source is the previous reduction's result, into the
//!   same destination, adds its operands to it (`re`, `rre`, `repkt`);
//! - a reduction followed by a memory put of its result becomes a
//!   reduce-and-send (`res`, `rres`); packet reductions likewise with
//!   `ppkt` (`respkt`), `cpkt` (`recpkt`) and both (`recspkt`);
//! - a switch reduce followed by a broadcast of its result becomes `glres`.

use crate::ir::{BufRef, BufRefs, ChannelKind, Op, OpName, RefTarget};

pub fn fuse(ops: Vec<Op>) -> Vec<Op> {
    let mut out: Vec<Op> = Vec::with_capacity(ops.len());
    for op in ops {
        if let Some(prev) = out.last_mut() {
            if let Some(fused) = fuse_group(prev, &op) {
                *prev = fused;
                continue;
            }
            if let Some(fusion) = plan_fusion(prev, &op) {
                fusion.apply(prev, op);
                continue;
            }
        }
        out.push(op);
    }
    out
}

/// How `b` merges into the op `a` before it. Fusion extends `a` in place, so
/// that an op absorbing k others costs k, not k².
struct Fusion {
    name: OpName,
    src: Merge,
    dst: Merge,
    /// The fused op is a memory-channel op (reduce-and-send).
    memory: bool,
}

/// What happens to a list of buffer refs.
enum Merge {
    Keep,
    Append,
    /// Append all but the first (the previous result, read again).
    AppendTail,
}

impl Merge {
    fn apply(&self, into: &mut BufRefs, from: &[BufRef]) {
        match self {
            Merge::Keep => {}
            Merge::Append => into.extend_from_slice(from),
            Merge::AppendTail => into.extend_from_slice(from.get(1..).unwrap_or(&[])),
        }
    }
}

impl Fusion {
    fn new(name: OpName, src: Merge, dst: Merge) -> Fusion {
        Fusion {
            name,
            src,
            dst,
            memory: false,
        }
    }

    fn on_memory(mut self) -> Fusion {
        self.memory = true;
        self
    }

    fn apply(&self, a: &mut Op, b: Op) {
        a.name = self.name;
        self.src.apply(&mut a.src, &b.src);
        self.dst.apply(&mut a.dst, &b.dst);
        if self.memory {
            a.channel = Some(ChannelKind::Memory);
        }
        a.channel_ids.extend_from_slice(&b.channel_ids);
        if !b.semaphore_ids().is_empty() {
            a.extra_mut().semaphore_ids.extend(b.semaphore_ids());
        }
        a.data_sync = a.data_sync.union(b.data_sync);
    }
}

fn disjoint(a: &[u32], b: &[u32]) -> bool {
    b.iter().all(|x| !a.contains(x))
}

/// Every ref of `b` has the size of `a`'s (all of `a`'s refs share one size:
/// transfers are checked for it, and fused ones were checked here).
fn same_size(a: &Op, b: &Op) -> bool {
    let size = a.src.first().map(|r| r.size);
    a.dst.first().map(|r| r.size) == size
        && b.src.iter().chain(&b.dst).all(|r| Some(r.size) == size)
}

/// How `b` fuses into `a`, or `None` when they do not.
fn plan_fusion(a: &Op, b: &Op) -> Option<Fusion> {
    use Merge::*;
    use OpName::*;
    let reads_result = |i: usize| b.src.len() == 1 && a.dst.get(i).is_some_and(|d| *d == b.src[0]);
    let with_dst = |name: OpName| Some(Fusion::new(name, Keep, Append));
    if a.tbg != b.tbg {
        return None;
    }
    match (a.name, b.name) {
        (Signal | Wait | RelaxedSignal | RelaxedWait | Flush, _)
            if a.name == b.name
                && a.channel == b.channel
                && disjoint(&a.channel_ids, &b.channel_ids) =>
        {
            Some(Fusion::new(a.name, Keep, Keep))
        }
        (SemAcquire | SemRelease, _)
            if a.name == b.name && disjoint(a.semaphore_ids(), b.semaphore_ids()) =>
        {
            Some(Fusion::new(a.name, Keep, Keep))
        }
        // Forwarding the same packets to several peers reads them once.
        (ReadPutPackets, ReadPutPackets)
            if a.channel == b.channel && same_size(a, b) && a.src == b.src =>
        {
            with_dst(a.name)
        }
        (Put | PutWithSignal | PutWithSignalAndFlush | PutPackets | Get, _)
            if a.name == b.name && a.channel == b.channel && same_size(a, b) =>
        {
            Some(Fusion::new(a.name, Append, Append))
        }
        (Reduce | ReadReduce | ReducePackets, _)
            if a.name == b.name
                && a.dst.len() == 1
                && a.reduce_op == b.reduce_op
                && b.src.first() == a.dst.first()
                && b.dst.first() == a.dst.first() =>
        {
            Some(Fusion::new(a.name, AppendTail, Keep))
        }
        (Reduce | ReduceSend, Put) if b.channel == Some(ChannelKind::Memory) && reads_result(0) => {
            Some(Fusion::new(ReduceSend, Keep, Append).on_memory())
        }
        (ReadReduce | ReadReduceSend, Put)
            if b.channel == Some(ChannelKind::Memory) && reads_result(0) =>
        {
            with_dst(ReadReduceSend)
        }
        (ReducePackets | ReduceSendPackets, PutPackets)
            if b.channel == Some(ChannelKind::Memory) && reads_result(0) =>
        {
            Some(Fusion::new(ReduceSendPackets, Keep, Append).on_memory())
        }
        (ReducePackets, CopyPackets) if reads_result(0) => with_dst(ReduceCopyPackets),
        (ReduceCopyPackets | ReduceCopySendPackets, PutPackets)
            if b.channel == Some(ChannelKind::Memory) && reads_result(0) =>
        {
            Some(Fusion::new(ReduceCopySendPackets, Keep, Append).on_memory())
        }
        (ReduceCopyPackets | ReduceCopySendPackets, ReadPutPackets)
            if b.channel == Some(ChannelKind::Memory) && reads_result(1) =>
        {
            Some(Fusion::new(ReduceCopySendPackets, Keep, Append).on_memory())
        }
        _ => None,
    }
}

/// `glre` then `gstore` of the reduced chunk over the same switch channel: `glres`.
fn fuse_group(a: &Op, b: &Op) -> Option<Op> {
    if (a.name, b.name) != (OpName::GroupLoadReduce, OpName::GroupStore) || a.tbg != b.tbg {
        return None;
    }
    let g = a.group_reduce()?;
    let src = b.src.first()?;
    let dst = b.dst.first()?;
    let stored_result = src.rank == Some(g.dst_rank)
        && src.target == RefTarget::Local(g.dst_kind)
        && src.index == g.dst_index
        && src.size == g.size;
    let RefTarget::Switch { id } = dst.target else {
        return None;
    };
    if !stored_result
        || a.channel_ids[..] != [id]
        || dst.index != g.buffer_offset
        || dst.size != g.size
    {
        return None;
    }
    let switch_ref = BufRef {
        target: RefTarget::Switch { id },
        index: g.buffer_offset,
        size: g.size,
        rank: None,
    };
    let mut op = a.clone();
    op.name = OpName::GroupLoadReduceStore;
    op.extra_mut().group_reduce = None;
    op.channel_ids.clear();
    op.src = smallvec::smallvec![switch_ref];
    op.dst = smallvec::smallvec![switch_ref];
    Some(op)
}
