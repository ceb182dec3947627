//! The methods that record operations: on ranks (local copies, reductions,
//! packets, barriers), on memory and port channels (signals, waits, puts,
//! gets, remote reductions), on switch channels and on semaphores.

use super::args::{Arg, Call};
use super::operands::{Blocks, End};
use super::value::*;
use super::{Evaluator, Res};
use crate::diag::{Code, Diagnostic, Span};
use crate::ir::*;
use crate::vocab::Builtin;

fn local(c: Chunk) -> BufRef {
    BufRef::local(c.kind, c.index, c.size)
}

/// A chunk of a peer's buffer, through remote buffer `id`.
fn remote(id: u32, c: Chunk) -> BufRef {
    BufRef {
        target: RefTarget::Remote { id, kind: c.kind },
        index: c.index,
        size: c.size,
        rank: None,
    }
}

/// The methods of ranks, channels and semaphores: each records ops.
pub(super) fn method(ev: &mut Evaluator<'_>, span: Span, call: &Call, recv: Value) -> Res<Value> {
    use Builtin as B;
    let which = call.builtin();
    match (call, &recv) {
        (
            Call::RankCopy(a) | Call::RankCopyPackets(a) | Call::RankUnpackPackets(a),
            Value::Rank(r),
        ) => {
            let (dst, src) = (a.dst_chunk.value, a.src_chunk.value);
            ev.expect_rank(a.dst_chunk.span, dst, *r, "the destination chunk")?;
            ev.expect_rank(a.src_chunk.span, src, *r, "the source chunk")?;
            ev.expect_same_size(a.src_chunk.span, dst, src)?;
            let name = match which {
                B::RankCopy => OpName::Copy,
                B::RankCopyPackets => {
                    ev.expect_scratch(a.dst_chunk.span, dst, "the destination of copy_packets")?;
                    OpName::CopyPackets
                }
                _ => {
                    ev.expect_scratch(a.src_chunk.span, src, "the source of unpack_packets")?;
                    OpName::UnpackPackets
                }
            };
            for (tb, tbg) in ev.blocks(span, Blocks::OneOrGroup(&a.tb, &a.tb_group))? {
                let mut op = Op::new(name, span);
                op.src = smallvec::smallvec![local(src)];
                op.dst = smallvec::smallvec![local(dst)];
                op.tbg = tbg;
                ev.record_op(*r, tb, op);
            }
            Ok(Value::Unit)
        }
        (Call::RankReduce(a), Value::Rank(r)) => {
            let src = a.src_chunk.value;
            let others = &a.other_chunks;
            let dst = a.dst_chunk.value.unwrap_or(src);
            let packet = a.packet.value;
            ev.expect_rank(a.src_chunk.span, src, *r, "the source chunk")?;
            ev.expect_rank(a.dst_chunk.span, dst, *r, "the destination chunk")?;
            ev.expect_same_size(a.dst_chunk.span, src, dst)?;
            if others.value.is_empty() {
                return Err(ev.error(
                    Code::ChunkSizes,
                    others.span,
                    "a reduce needs at least one other chunk",
                    "this list is empty",
                ));
            }
            for &o in &others.value {
                ev.expect_rank(others.span, o, *r, "every other chunk")?;
                ev.expect_same_size(others.span, src, o)?;
                if packet {
                    ev.expect_scratch(others.span, o, "the packet chunks of a packet reduce")?;
                }
            }
            let name = if packet {
                OpName::ReducePackets
            } else {
                OpName::Reduce
            };
            for (tb, tbg) in ev.blocks(span, Blocks::OneOrGroup(&a.tb, &a.tb_group))? {
                let mut op = Op::new(name, span);
                op.src = std::iter::once(src)
                    .chain(others.value.iter().copied())
                    .map(local)
                    .collect();
                op.dst = smallvec::smallvec![local(dst)];
                op.tbg = tbg;
                op.reduce_op = Some(a.reduce_op.value);
                ev.record_op(*r, tb, op);
            }
            Ok(Value::Unit)
        }
        (Call::RankBarrier(a), Value::Rank(r)) => {
            let tbs = ev.tb_ids(
                &a.tb_list,
                "a barrier",
                "the barrier waits for as many arrivals as the list is long, and a block arrives once",
            )?;
            if tbs.len() == 1 {
                // One block: a barrier is just a block-wide sync.
                ev.record_op(*r, tbs[0], Op::nop(span));
                return Ok(Value::Unit);
            }
            let id = ev.rec().barrier_id(*r, &tbs);
            for &tb in &tbs {
                let mut op = Op::new(OpName::Barrier, span);
                op.barrier = Some((id, tbs.len() as u32));
                ev.record_op(*r, tb, op);
            }
            Ok(Value::Unit)
        }
        (Call::MemSignal(a) | Call::MemWait(a), Value::MemoryChannel(c)) => {
            let name = match (which, a.relaxed.value) {
                (B::MemSignal, false) => OpName::Signal,
                (B::MemSignal, true) => OpName::RelaxedSignal,
                (_, false) => OpName::Wait,
                (_, true) => OpName::RelaxedWait,
            };
            let tb = ev.tb_in(&a.tb)?;
            channel_sync(
                ev,
                span,
                name,
                ChannelKind::Memory,
                *c,
                tb,
                a.data_sync.value,
            );
            Ok(Value::Unit)
        }
        (Call::PortSignal(a) | Call::PortWait(a) | Call::PortFlush(a), Value::PortChannel(c)) => {
            let name = match which {
                B::PortSignal => OpName::Signal,
                B::PortWait => OpName::Wait,
                _ => OpName::Flush,
            };
            let tb = ev.tb_in(&a.tb)?;
            channel_sync(ev, span, name, ChannelKind::Port, *c, tb, a.data_sync.value);
            Ok(Value::Unit)
        }
        (Call::MemGet(a), Value::MemoryChannel(c)) => {
            let (dst, src) = (a.dst_chunk.value, a.src_chunk.value);
            let channel = (*c, ChannelKind::Memory);
            ev.expect_end(
                a.dst_chunk.span,
                dst,
                channel,
                End::Source,
                "the destination of a get (on the channel's source rank)",
            )?;
            ev.expect_end(
                a.src_chunk.span,
                src,
                channel,
                End::Peer,
                "the source of a get (on the channel's peer)",
            )?;
            ev.expect_same_size(a.src_chunk.span, dst, src)?;
            for (tb, tbg) in ev.blocks(span, Blocks::OneOrGroup(&a.tb, &a.tb_group))? {
                let kind = ChannelKind::Memory;
                let rb = ev
                    .rec_no_frame()
                    .setup_remote_buffer(c.src, tb, src.rank, src.kind, kind);
                let cid = ev.rec_no_frame().setup_channel(c.src, tb, kind, c.id);
                let mut op = Op::new(OpName::Get, span);
                op.channel = Some(kind);
                op.channel_ids = smallvec::smallvec![cid];
                op.src = smallvec::smallvec![remote(rb, src)];
                op.dst = smallvec::smallvec![local(dst)];
                op.tbg = tbg;
                ev.record_op(c.src, tb, op);
            }
            Ok(Value::Unit)
        }
        (
            Call::MemPut(a)
            | Call::MemPutPackets(a)
            | Call::MemReadPutPackets(a)
            | Call::PortReadPutPackets(a),
            Value::MemoryChannel(c) | Value::PortChannel(c),
        ) => {
            let name = match which {
                B::MemPut => OpName::Put,
                B::MemPutPackets => OpName::PutPackets,
                _ => OpName::ReadPutPackets,
            };
            let kind = match recv {
                Value::PortChannel(_) => ChannelKind::Port,
                _ => ChannelKind::Memory,
            };
            let put = Put {
                name,
                kind,
                channel: *c,
            };
            let blocks = Blocks::OneOrGroup(&a.tb, &a.tb_group);
            put.record(ev, span, &a.dst_chunk, &a.src_chunk, blocks)
        }
        (
            Call::PortPut(a)
            | Call::PortPutWithSignal(a)
            | Call::PortPutWithSignalAndFlush(a)
            | Call::PortPutPackets(a),
            Value::PortChannel(c),
        ) => {
            let name = match which {
                B::PortPut => OpName::Put,
                B::PortPutWithSignal => OpName::PutWithSignal,
                B::PortPutWithSignalAndFlush => OpName::PutWithSignalAndFlush,
                _ => OpName::PutPackets,
            };
            let put = Put {
                name,
                kind: ChannelKind::Port,
                channel: *c,
            };
            put.record(ev, span, &a.dst_chunk, &a.src_chunk, Blocks::One(&a.tb))
        }
        (Call::MemReduce(a), Value::MemoryChannel(c)) => {
            let src = a.local_src_chunk.value;
            let remotes = &a.remote_src_chunks;
            let dst = a.local_dst_chunk.value.unwrap_or(src);
            let channel = (*c, ChannelKind::Memory);
            ev.expect_end(
                a.local_src_chunk.span,
                src,
                channel,
                End::Source,
                "the local source chunk (on the channel's source rank)",
            )?;
            ev.expect_end(
                a.local_dst_chunk.span,
                dst,
                channel,
                End::Source,
                "the local destination chunk (on the channel's source rank)",
            )?;
            ev.expect_same_size(a.local_dst_chunk.span, src, dst)?;
            for &r in &remotes.value {
                ev.expect_end(
                    remotes.span,
                    r,
                    channel,
                    End::Peer,
                    "every remote chunk (on the channel's peer)",
                )?;
                ev.expect_same_size(remotes.span, src, r)?;
            }
            for (tb, tbg) in ev.blocks(span, Blocks::OneOrGroup(&a.tb, &a.tb_group))? {
                let kind = ChannelKind::Memory;
                let mut srcs: BufRefs = smallvec::smallvec![local(src)];
                for &r in &remotes.value {
                    let rb = ev
                        .rec_no_frame()
                        .setup_remote_buffer(c.src, tb, r.rank, r.kind, kind);
                    srcs.push(remote(rb, r));
                }
                let cid = ev.rec_no_frame().setup_channel(c.src, tb, kind, c.id);
                let mut op = Op::new(OpName::ReadReduce, span);
                op.channel = Some(kind);
                op.channel_ids = smallvec::smallvec![cid];
                op.src = srcs;
                op.dst = smallvec::smallvec![local(dst)];
                op.tbg = tbg;
                op.reduce_op = Some(a.reduce_op.value);
                ev.record_op(c.src, tb, op);
            }
            Ok(Value::Unit)
        }
        (Call::SwitchAtRank(a), Value::SwitchChannel(s)) => {
            let r = ev.switch_member(&a.rank, s)?;
            Ok(Value::SwitchView(s.clone(), r))
        }
        (Call::SwitchReduce(a), Value::SwitchChannel(s)) => {
            let rank = ev.switch_member(&a.rank, s)?;
            let op = SwitchOp::Reduce(&a.dst_chunk, a.reduce_op.value);
            op.record(ev, span, s, rank, &a.buffer_offset, &a.size, &a.tb)
        }
        (Call::ViewReduce(a), Value::SwitchView(s, rank)) => {
            let op = SwitchOp::Reduce(&a.dst_chunk, a.reduce_op.value);
            op.record(ev, span, s, *rank, &a.buffer_offset, &a.size, &a.tb)
        }
        (Call::SwitchBroadcast(a) | Call::SwitchBroadcastPackets(a), Value::SwitchChannel(s)) => {
            let rank = ev.switch_member(&a.rank, s)?;
            let packets = which == B::SwitchBroadcastPackets;
            let op = SwitchOp::Broadcast(&a.src_chunk, packets);
            op.record(ev, span, s, rank, &a.buffer_offset, &a.size, &a.tb)
        }
        (Call::ViewBroadcast(a) | Call::ViewBroadcastPackets(a), Value::SwitchView(s, rank)) => {
            let packets = which == B::ViewBroadcastPackets;
            let op = SwitchOp::Broadcast(&a.src_chunk, packets);
            op.record(ev, span, s, *rank, &a.buffer_offset, &a.size, &a.tb)
        }
        (Call::SemAcquire(a) | Call::SemRelease(a), Value::Semaphore { rank, id }) => {
            let tb = ev.tb_in(&a.tb)?;
            let name = if which == B::SemAcquire {
                OpName::SemAcquire
            } else {
                OpName::SemRelease
            };
            let mut op = Op::new(name, span);
            op.extra_mut().semaphore_ids = vec![*id];
            op.data_sync = a.data_sync.value;
            ev.record_op(*rank, tb, op);
            Ok(Value::Unit)
        }
        _ => Err(Diagnostic::error(
            Code::NoSuchMember,
            span,
            format!("`{recv}` does not support this call"),
            "unsupported call",
        )),
    }
}

/// A signal, wait or flush on channel `c` of `kind`, run by thread block `tb`.
fn channel_sync(
    ev: &mut Evaluator<'_>,
    span: Span,
    name: OpName,
    kind: ChannelKind,
    c: ChannelVal,
    tb: u32,
    data_sync: DataSync,
) {
    let rec = ev.rec_no_frame();
    let cid = rec.setup_channel(c.src, tb, kind, c.id);
    if rec.fuse_sync((c.src, tb), name, (kind, cid), data_sync) {
        return;
    }
    let mut op = Op::new(name, span);
    op.channel = Some(kind);
    op.channel_ids = smallvec::smallvec![cid];
    op.data_sync = data_sync;
    ev.record_op(c.src, tb, op);
}

/// A put of some kind over a memory or port channel.
struct Put {
    name: OpName,
    kind: ChannelKind,
    channel: ChannelVal,
}

impl Put {
    fn record(
        &self,
        ev: &mut Evaluator<'_>,
        span: Span,
        dst: &Arg<Chunk>,
        src: &Arg<Chunk>,
        blocks: Blocks<'_>,
    ) -> Res<Value> {
        let c = self.channel;
        let channel = (c, self.kind);
        ev.expect_end(
            src.span,
            src.value,
            channel,
            End::Source,
            "the source chunk (on the channel's source rank)",
        )?;
        ev.expect_end(
            dst.span,
            dst.value,
            channel,
            End::Peer,
            "the destination chunk (on the channel's peer)",
        )?;
        if self.name == OpName::ReadPutPackets {
            ev.expect_scratch(src.span, src.value, "the source of read_put_packets")?;
        }
        if matches!(self.name, OpName::PutPackets | OpName::ReadPutPackets) {
            ev.expect_scratch(dst.span, dst.value, "the destination of a packet put")?;
        }
        ev.expect_same_size(src.span, dst.value, src.value)?;
        let (dst, src) = (dst.value, src.value);
        for (tb, tbg) in ev.blocks(span, blocks)? {
            let rb = ev
                .rec_no_frame()
                .setup_remote_buffer(c.src, tb, dst.rank, dst.kind, self.kind);
            let cid = ev.rec_no_frame().setup_channel(c.src, tb, self.kind, c.id);
            let mut op = Op::new(self.name, span);
            op.channel = Some(self.kind);
            op.channel_ids = smallvec::smallvec![cid];
            op.src = smallvec::smallvec![local(src)];
            op.dst = smallvec::smallvec![remote(rb, dst)];
            op.tbg = tbg;
            ev.record_op(c.src, tb, op);
        }
        Ok(Value::Unit)
    }
}

/// A switch-channel op: a reduce of the members' buffers into a chunk, or
/// a broadcast of a chunk (as packets or not) into the members' buffers.
enum SwitchOp<'a> {
    Reduce(&'a Arg<Chunk>, ReduceOp),
    Broadcast(&'a Arg<Chunk>, bool),
}

impl SwitchOp<'_> {
    /// Records the op, run by `rank` over window `[offset, offset + size)`
    /// of the members' buffers.
    #[allow(clippy::too_many_arguments)]
    fn record(
        &self,
        ev: &mut Evaluator<'_>,
        span: Span,
        s: &SwitchVal,
        rank: u32,
        offset: &Arg<i64>,
        size: &Arg<i64>,
        tb: &Arg<i64>,
    ) -> Res<Value> {
        let chunk = match self {
            SwitchOp::Reduce(c, _) | SwitchOp::Broadcast(c, _) => *c,
        };
        let (offset_span, size_span) = (offset.span, size.span);
        let offset = ev.int_in(offset, "buffer offset", u32::MAX)?;
        let size = ev.int_in(size, "size", u32::MAX)?;
        let tb = ev.tb_in(tb)?;
        let (chunk_span, chunk) = (chunk.span, chunk.value);
        if s.id_on(chunk.rank).is_none() {
            return Err(ev.error(
                Code::WrongPlace,
                chunk_span,
                format!(
                    "the chunk is on rank {}, outside the switch channel's ranks {}",
                    chunk.rank,
                    crate::diag::short_list(&s.ranks, "ranks")
                ),
                "wrong rank",
            ));
        }
        if chunk.size != size {
            return Err(ev
                .error(
                    Code::ChunkSizes,
                    size_span,
                    format!("the chunk has {} chunk(s) but size is {size}", chunk.size),
                    "size mismatch",
                )
                .with_secondary(chunk_span, format!("{} chunk(s)", chunk.size))
                .with_note(format!(
                    "help: `size` counts the chunks the op moves, the chunk's and the switch buffer's alike: make it {}",
                    chunk.size
                )));
        }
        let end = offset as u64 + size as u64;
        for &r in if end <= s.checked_end.get() {
            &[][..]
        } else {
            &s.ranks[..]
        } {
            let limit = ev.rec_no_frame().buffer_chunks(r, s.buffer);
            if end > limit as u64 {
                return Err(ev.error(
                    Code::ChunkBounds,
                    offset_span,
                    format!(
                        "[{offset}..{end}] is past the end of rank {r}'s {} buffer",
                        s.buffer.name()
                    ),
                    format!("it has {limit} chunk(s)"),
                ));
            }
        }
        // A value every rank's ops share.
        ev.rec_no_frame().touch_shared();
        s.checked_end.set(s.checked_end.get().max(end));
        if let SwitchOp::Broadcast(_, true) = self {
            ev.expect_scratch(chunk_span, chunk, "the source of broadcast_packets")?;
        }
        let cid = ev.rec_no_frame().setup_channel(
            rank,
            tb,
            ChannelKind::Switch,
            s.id_on(rank).unwrap_or(0),
        );
        let mut op;
        match self {
            SwitchOp::Reduce(_, reduce_op) => {
                op = Op::new(OpName::GroupLoadReduce, span);
                op.reduce_op = Some(*reduce_op);
                op.extra_mut().group_reduce = Some(GroupReduce {
                    buffer: s.buffer,
                    buffer_offset: offset,
                    size,
                    dst_rank: chunk.rank,
                    dst_kind: chunk.kind,
                    dst_index: chunk.index,
                });
            }
            SwitchOp::Broadcast(_, packets) => {
                let name = if *packets {
                    OpName::GroupStorePackets
                } else {
                    OpName::GroupStore
                };
                op = Op::new(name, span);
                op.src = smallvec::smallvec![BufRef {
                    target: RefTarget::Local(chunk.kind),
                    index: chunk.index,
                    size: chunk.size,
                    rank: Some(chunk.rank),
                }];
                op.dst = smallvec::smallvec![BufRef {
                    target: RefTarget::Switch { id: cid },
                    index: offset,
                    size,
                    rank: None,
                }];
            }
        }
        op.channel_ids = smallvec::smallvec![cid];
        op.channel = Some(ChannelKind::Switch);
        ev.record_op(rank, tb, op);
        Ok(Value::Unit)
    }
}
