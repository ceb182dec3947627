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

use crate::ir::{BufRef, ChannelKind, Op, OpName, RefTarget};

pub fn fuse(ops: Vec<Op>) -> Vec<Op> {
    let mut out: Vec<Op> = Vec::with_capacity(ops.len());
    for op in ops {
        if let Some(prev) = out.last() {
            if let Some(fused) = try_fuse(prev, &op) {
                *out.last_mut().expect("non-empty") = fused;
                continue;
            }
        }
        out.push(op);
    }
    out
}

fn disjoint(a: &[u32], b: &[u32]) -> bool {
    a.iter().all(|x| !b.contains(x))
}

fn same_size(a: &Op, b: &Op) -> bool {
    let size = a.src.first().map(|r| r.size);
    a.src
        .iter()
        .chain(&a.dst)
        .chain(&b.src)
        .chain(&b.dst)
        .all(|r| Some(r.size) == size)
}

/// `a` followed by `b` as one op, or `None` when they do not fuse.
fn try_fuse(a: &Op, b: &Op) -> Option<Op> {
    use OpName::*;
    let merged = |name: OpName, src: Vec<BufRef>, dst: Vec<BufRef>| {
        let mut op = a.clone();
        op.name = name;
        op.src = src;
        op.dst = dst;
        op.channel_ids.extend(&b.channel_ids);
        op.data_sync = a.data_sync.union(b.data_sync);
        op.spans.extend(&b.spans);
        op
    };
    let concat = |x: &[BufRef], y: &[BufRef]| x.iter().chain(y).copied().collect::<Vec<_>>();
    let with_dst = |name: OpName| merged(name, a.src.clone(), concat(&a.dst, &b.dst));
    let result = a.dst.first().copied();
    let reads_result = |i: usize| b.src.len() == 1 && a.dst.get(i).is_some_and(|d| *d == b.src[0]);
    if a.tbg != b.tbg {
        return None;
    }
    match (a.name, b.name) {
        (Signal | Wait | RelaxedSignal | RelaxedWait | Flush, _)
            if a.name == b.name
                && a.channel == b.channel
                && disjoint(&a.channel_ids, &b.channel_ids) =>
        {
            Some(merged(a.name, Vec::new(), Vec::new()))
        }
        (SemAcquire | SemRelease, _)
            if a.name == b.name && disjoint(&a.semaphore_ids, &b.semaphore_ids) =>
        {
            let mut op = merged(a.name, Vec::new(), Vec::new());
            op.semaphore_ids.extend(&b.semaphore_ids);
            Some(op)
        }
        // Forwarding the same packets to several peers reads them once.
        (ReadPutPackets, ReadPutPackets)
            if a.channel == b.channel && same_size(a, b) && a.src == b.src =>
        {
            Some(merged(a.name, a.src.clone(), concat(&a.dst, &b.dst)))
        }
        (Put | PutWithSignal | PutWithSignalAndFlush | PutPackets | Get, _)
            if a.name == b.name && a.channel == b.channel && same_size(a, b) =>
        {
            Some(merged(
                a.name,
                concat(&a.src, &b.src),
                concat(&a.dst, &b.dst),
            ))
        }
        (Reduce | ReadReduce | ReducePackets, _)
            if a.name == b.name
                && a.dst.len() == 1
                && a.reduce_op == b.reduce_op
                && b.src.first().copied() == result
                && b.dst.first().copied() == result =>
        {
            Some(merged(a.name, concat(&a.src, &b.src[1..]), a.dst.clone()))
        }
        (Reduce | ReduceSend, Put) if b.channel == Some(ChannelKind::Memory) && reads_result(0) => {
            let mut op = with_dst(ReduceSend);
            op.channel = Some(ChannelKind::Memory);
            Some(op)
        }
        (ReadReduce | ReadReduceSend, Put)
            if b.channel == Some(ChannelKind::Memory) && reads_result(0) =>
        {
            Some(with_dst(ReadReduceSend))
        }
        (ReducePackets | ReduceSendPackets, PutPackets)
            if b.channel == Some(ChannelKind::Memory) && reads_result(0) =>
        {
            let mut op = with_dst(ReduceSendPackets);
            op.channel = Some(ChannelKind::Memory);
            Some(op)
        }
        (ReducePackets, CopyPackets) if reads_result(0) => Some(with_dst(ReduceCopyPackets)),
        (ReduceCopyPackets | ReduceCopySendPackets, PutPackets)
            if b.channel == Some(ChannelKind::Memory) && reads_result(0) =>
        {
            let mut op = with_dst(ReduceCopySendPackets);
            op.channel = Some(ChannelKind::Memory);
            Some(op)
        }
        (ReduceCopyPackets | ReduceCopySendPackets, ReadPutPackets)
            if b.channel == Some(ChannelKind::Memory) && reads_result(1) =>
        {
            let mut op = with_dst(ReduceCopySendPackets);
            op.channel = Some(ChannelKind::Memory);
            Some(op)
        }
        (GroupLoadReduce, GroupStore) => fuse_group(a, b),
        _ => None,
    }
}

/// `glre` then `gstore` of the reduced chunk over the same switch channel: `glres`.
fn fuse_group(a: &Op, b: &Op) -> Option<Op> {
    let g = a.group_reduce?;
    let src = b.src.first()?;
    let dst = b.dst.first()?;
    let stored_result = src.rank == Some(g.dst_rank)
        && src.target == RefTarget::Local(g.dst_kind)
        && src.index == g.dst_index
        && src.size == g.size;
    let RefTarget::Switch { id } = dst.target else {
        return None;
    };
    if !stored_result || a.channel_ids != [id] || dst.index != g.buffer_offset || dst.size != g.size
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
    op.group_reduce = None;
    op.channel_ids.clear();
    op.src = vec![switch_ref];
    op.dst = vec![switch_ref];
    op.spans.extend(&b.spans);
    Some(op)
}
