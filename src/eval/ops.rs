//! The methods that record operations: on ranks (local copies, reductions,
//! packets, barriers), on memory and port channels (signals, waits, puts,
//! gets, remote reductions), on switch channels and on semaphores.

use super::calls::{sync_of, Args};
use super::value::*;
use super::{Evaluator, Res};
use crate::diag::Diagnostic;
use crate::ir::*;
use crate::vocab::Builtin;

fn local(c: Chunk) -> BufRef {
    BufRef::local(c.kind, c.index, c.size)
}

/// The methods of ranks, channels and semaphores: each records ops.
pub(super) fn method(
    ev: &mut Evaluator<'_>,
    which: Builtin,
    recv: Value,
    args: &Args,
) -> Res<Value> {
    use Builtin as B;
    let span = args.call;
    match (which, &recv) {
        (B::RankCopy | B::RankCopyPackets | B::RankUnpackPackets, Value::Rank(r)) => {
            let (dst, src) = (args.chunk(0), args.chunk(1));
            ev.expect_rank(args, 0, dst, *r, "the destination chunk")?;
            ev.expect_rank(args, 1, src, *r, "the source chunk")?;
            ev.expect_same_size(args, 1, dst, src)?;
            let name = match which {
                B::RankCopy => OpName::Copy,
                B::RankCopyPackets => {
                    ev.expect_scratch(args, 0, dst, "the destination of copy_packets")?;
                    OpName::CopyPackets
                }
                _ => {
                    ev.expect_scratch(args, 1, src, "the source of unpack_packets")?;
                    OpName::UnpackPackets
                }
            };
            for (tb, tbg) in ev.tb_list(args, 2)? {
                let mut op = Op::new(name, span);
                op.src = smallvec::smallvec![local(src)];
                op.dst = smallvec::smallvec![local(dst)];
                op.tbg = tbg;
                ev.rec().add_op(*r, tb, op);
            }
            Ok(Value::Unit)
        }
        (B::RankReduce, Value::Rank(r)) => {
            let src = args.chunk(0);
            let others = args.chunks(1);
            let dst = args.chunk_or(4, src);
            let packet = args.v(6).as_bool();
            ev.expect_rank(args, 0, src, *r, "the source chunk")?;
            ev.expect_rank(args, 4, dst, *r, "the destination chunk")?;
            ev.expect_same_size(args, 4, src, dst)?;
            if others.is_empty() {
                return Err(ev.error(
                    args.span(1),
                    "a reduce needs at least one other chunk",
                    "this list is empty",
                ));
            }
            for o in &others {
                ev.expect_rank(args, 1, *o, *r, "every other chunk")?;
                ev.expect_same_size(args, 1, src, *o)?;
                if packet {
                    ev.expect_scratch(args, 1, *o, "the packet chunks of a packet reduce")?;
                }
            }
            let Value::ReduceOp(reduce_op) = args.v(5) else {
                return Ok(Value::Unit);
            };
            for (tb, tbg) in ev.tb_list(args, 2)? {
                let mut op = Op::new(
                    if packet {
                        OpName::ReducePackets
                    } else {
                        OpName::Reduce
                    },
                    span,
                );
                op.src = std::iter::once(src)
                    .chain(others.iter().copied())
                    .map(local)
                    .collect();
                op.dst = smallvec::smallvec![local(dst)];
                op.tbg = tbg;
                op.reduce_op = Some(*reduce_op);
                ev.rec().add_op(*r, tb, op);
            }
            Ok(Value::Unit)
        }
        (B::RankBarrier, Value::Rank(r)) => {
            let tbs = ev.tb_ids(args, 0)?;
            if tbs.is_empty() {
                return Err(ev.error(
                    args.span(0),
                    "a barrier needs at least one thread block",
                    "empty list",
                ));
            }
            if tbs.len() == 1 {
                // One block: a barrier is just a block-wide sync.
                ev.rec().add_op(*r, tbs[0], Op::nop(span));
                return Ok(Value::Unit);
            }
            let id = ev.rec().barrier_id(*r, &tbs);
            for &tb in &tbs {
                let mut op = Op::new(OpName::Barrier, span);
                op.barrier = Some((id, tbs.len() as u32));
                ev.rec().add_op(*r, tb, op);
            }
            Ok(Value::Unit)
        }
        (
            B::MemSignal | B::MemWait | B::PortSignal | B::PortWait | B::PortFlush,
            Value::MemoryChannel(c) | Value::PortChannel(c),
        ) => {
            let kind = channel_kind(&recv);
            let tb = ev.tb_arg(args, 0)?;
            let relaxed = kind == ChannelKind::Memory && args.v(2).as_bool();
            let name = match (which, relaxed) {
                (B::MemSignal | B::PortSignal, false) => OpName::Signal,
                (B::MemSignal, true) => OpName::RelaxedSignal,
                (B::MemWait | B::PortWait, false) => OpName::Wait,
                (B::MemWait, true) => OpName::RelaxedWait,
                _ => OpName::Flush,
            };
            let cid = ev.rec().setup_channel(c.src, tb, kind, c.id);
            let mut op = Op::new(name, span);
            op.channel = Some(kind);
            op.channel_ids = smallvec::smallvec![cid];
            op.data_sync = sync_of(args.v(1));
            ev.rec().add_op(c.src, tb, op);
            Ok(Value::Unit)
        }
        (B::MemGet, Value::MemoryChannel(c)) => {
            let (dst, src) = (args.chunk(0), args.chunk(1));
            ev.expect_rank(
                args,
                0,
                dst,
                c.src,
                "the destination of a get (on the channel's source rank)",
            )?;
            ev.expect_rank(
                args,
                1,
                src,
                c.dst,
                "the source of a get (on the channel's peer)",
            )?;
            ev.expect_same_size(args, 1, dst, src)?;
            for (tb, tbg) in ev.tb_list(args, 2)? {
                let rb = ev.rec().setup_remote_buffer(
                    c.src,
                    tb,
                    src.rank,
                    src.kind,
                    ChannelKind::Memory,
                );
                let cid = ev.rec().setup_channel(c.src, tb, ChannelKind::Memory, c.id);
                let mut op = Op::new(OpName::Get, span);
                op.channel = Some(ChannelKind::Memory);
                op.channel_ids = smallvec::smallvec![cid];
                op.src = smallvec::smallvec![BufRef {
                    target: RefTarget::Remote {
                        id: rb,
                        kind: src.kind,
                    },
                    index: src.index,
                    size: src.size,
                    rank: None,
                }];
                op.dst = smallvec::smallvec![local(dst)];
                op.tbg = tbg;
                ev.rec().add_op(c.src, tb, op);
            }
            Ok(Value::Unit)
        }
        (
            B::MemPut
            | B::MemPutPackets
            | B::MemReadPutPackets
            | B::PortPut
            | B::PortPutWithSignal
            | B::PortPutWithSignalAndFlush
            | B::PortPutPackets
            | B::PortReadPutPackets,
            Value::MemoryChannel(c) | Value::PortChannel(c),
        ) => {
            let kind = channel_kind(&recv);
            let (dst, src) = (args.chunk(0), args.chunk(1));
            ev.expect_rank(
                args,
                1,
                src,
                c.src,
                "the source chunk (on the channel's source rank)",
            )?;
            ev.expect_rank(
                args,
                0,
                dst,
                c.dst,
                "the destination chunk (on the channel's peer)",
            )?;
            let name = match which {
                B::MemPut | B::PortPut => OpName::Put,
                B::PortPutWithSignal => OpName::PutWithSignal,
                B::PortPutWithSignalAndFlush => OpName::PutWithSignalAndFlush,
                B::MemPutPackets | B::PortPutPackets => OpName::PutPackets,
                _ => OpName::ReadPutPackets,
            };
            if name == OpName::ReadPutPackets {
                ev.expect_scratch(args, 1, src, "the source of read_put_packets")?;
            }
            if matches!(name, OpName::PutPackets | OpName::ReadPutPackets) {
                ev.expect_scratch(args, 0, dst, "the destination of a packet put")?;
            }
            ev.expect_same_size(args, 1, dst, src)?;
            // Memory transfers and the port `read_put_packets` may name a
            // thread block group (the vocabulary says which).
            let tbs = if kind == ChannelKind::Memory || which == B::PortReadPutPackets {
                ev.tb_list(args, 2)?
            } else {
                vec![(ev.tb_arg(args, 2)?, None)]
            };
            for (tb, tbg) in tbs {
                let rb = ev
                    .rec()
                    .setup_remote_buffer(c.src, tb, dst.rank, dst.kind, kind);
                let cid = ev.rec().setup_channel(c.src, tb, kind, c.id);
                let mut op = Op::new(name, span);
                op.channel = Some(kind);
                op.channel_ids = smallvec::smallvec![cid];
                op.src = smallvec::smallvec![local(src)];
                op.dst = smallvec::smallvec![BufRef {
                    target: RefTarget::Remote {
                        id: rb,
                        kind: dst.kind,
                    },
                    index: dst.index,
                    size: dst.size,
                    rank: None,
                }];
                op.tbg = tbg;
                ev.rec().add_op(c.src, tb, op);
            }
            Ok(Value::Unit)
        }
        (B::MemReduce, Value::MemoryChannel(c)) => {
            let src = args.chunk(0);
            let remotes = args.chunks(1);
            let dst = args.chunk_or(4, src);
            ev.expect_rank(
                args,
                0,
                src,
                c.src,
                "the local source chunk (on the channel's source rank)",
            )?;
            ev.expect_rank(
                args,
                4,
                dst,
                c.src,
                "the local destination chunk (on the channel's source rank)",
            )?;
            ev.expect_same_size(args, 4, src, dst)?;
            for r in &remotes {
                ev.expect_rank(
                    args,
                    1,
                    *r,
                    c.dst,
                    "every remote chunk (on the channel's peer)",
                )?;
                ev.expect_same_size(args, 1, src, *r)?;
            }
            let Value::ReduceOp(reduce_op) = args.v(5) else {
                return Ok(Value::Unit);
            };
            for (tb, tbg) in ev.tb_list(args, 2)? {
                let mut srcs = vec![local(src)];
                for r in &remotes {
                    let rb = ev.rec().setup_remote_buffer(
                        c.src,
                        tb,
                        r.rank,
                        r.kind,
                        ChannelKind::Memory,
                    );
                    srcs.push(BufRef {
                        target: RefTarget::Remote {
                            id: rb,
                            kind: r.kind,
                        },
                        index: r.index,
                        size: r.size,
                        rank: None,
                    });
                }
                let cid = ev.rec().setup_channel(c.src, tb, ChannelKind::Memory, c.id);
                let mut op = Op::new(OpName::ReadReduce, span);
                op.channel = Some(ChannelKind::Memory);
                op.channel_ids = smallvec::smallvec![cid];
                op.src = srcs.into();
                op.dst = smallvec::smallvec![local(dst)];
                op.tbg = tbg;
                op.reduce_op = Some(*reduce_op);
                ev.rec().add_op(c.src, tb, op);
            }
            Ok(Value::Unit)
        }
        (B::SwitchAtRank, Value::SwitchChannel(s)) => {
            let r = ev.switch_member(args, s)?;
            Ok(Value::SwitchView(s.clone(), r))
        }
        (
            B::SwitchReduce | B::SwitchBroadcast | B::SwitchBroadcastPackets,
            Value::SwitchChannel(s),
        ) => {
            let r = ev.switch_member(args, s)?;
            let rest = Args {
                values: args.values[1..].to_vec(),
                call: args.call,
            };
            switch_op(ev, which, s, r, &rest)
        }
        (B::ViewReduce | B::ViewBroadcast | B::ViewBroadcastPackets, Value::SwitchView(s, r)) => {
            switch_op(ev, which, s, *r, args)
        }
        (B::SemAcquire | B::SemRelease, Value::Semaphore { rank, id }) => {
            let tb = ev.tb_arg(args, 0)?;
            let mut op = Op::new(
                if which == B::SemAcquire {
                    OpName::SemAcquire
                } else {
                    OpName::SemRelease
                },
                span,
            );
            op.extra_mut().semaphore_ids = vec![*id];
            op.data_sync = sync_of(args.v(1));
            ev.rec().add_op(*rank, tb, op);
            Ok(Value::Unit)
        }
        _ => Err(Diagnostic::error(
            span,
            format!("`{recv}` does not support this call"),
            "unsupported call",
        )),
    }
}

/// Switch-channel reduce and broadcast, run by `rank`; `args` start at `buffer_offset` or `src_chunk`.
fn switch_op(
    ev: &mut Evaluator<'_>,
    which: Builtin,
    s: &SwitchVal,
    rank: u32,
    args: &Args,
) -> Res<Value> {
    use Builtin as B;
    let reduce = matches!(which, B::SwitchReduce | B::ViewReduce);
    // reduce(buffer_offset, size, dst_chunk, tb, reduce_op) / broadcast(src_chunk, buffer_offset, size, tb)
    let (chunk_i, offset_i, size_i, tb_i) = if reduce { (2, 0, 1, 3) } else { (0, 1, 2, 3) };
    let chunk = args.chunk(chunk_i);
    let offset = ev.int_arg(args, offset_i, "buffer offset", u32::MAX)?;
    let size = ev.int_arg(args, size_i, "size", u32::MAX)?;
    let tb = ev.tb_arg(args, tb_i)?;
    if s.id_on(chunk.rank).is_none() {
        return Err(ev.error(
            args.span(chunk_i),
            format!(
                "the chunk is on rank {}, outside the switch channel's ranks {}",
                chunk.rank,
                rank_list(&s.ranks)
            ),
            "wrong rank",
        ));
    }
    if chunk.size != size {
        return Err(ev.error(
            args.span(chunk_i),
            format!("the chunk has {} chunk(s) but size is {size}", chunk.size),
            "size mismatch",
        ));
    }
    let end = offset as u64 + size as u64;
    for &r in if end <= s.checked_end.get() {
        &[][..]
    } else {
        &s.ranks[..]
    } {
        let limit = ev.rec().buffer_chunks(r, s.buffer);
        if end > limit as u64 {
            return Err(ev.error(
                args.span(offset_i),
                format!(
                    "[{offset}..{end}] is past the end of rank {r}'s {} buffer",
                    s.buffer.name()
                ),
                format!("it has {limit} chunk(s)"),
            ));
        }
    }
    s.checked_end.set(s.checked_end.get().max(end));
    if which == B::SwitchBroadcastPackets || which == B::ViewBroadcastPackets {
        ev.expect_scratch(args, chunk_i, chunk, "the source of broadcast_packets")?;
    }
    let cid = ev
        .rec()
        .setup_channel(rank, tb, ChannelKind::Switch, s.id_on(rank).unwrap_or(0));
    let mut op;
    if reduce {
        let Value::ReduceOp(reduce_op) = args.v(4) else {
            return Ok(Value::Unit);
        };
        op = Op::new(OpName::GroupLoadReduce, args.call);
        op.reduce_op = Some(*reduce_op);
        op.extra_mut().group_reduce = Some(GroupReduce {
            buffer: s.buffer,
            buffer_offset: offset,
            size,
            dst_rank: chunk.rank,
            dst_kind: chunk.kind,
            dst_index: chunk.index,
        });
        op.channel_ids = smallvec::smallvec![cid];
    } else {
        op = Op::new(
            if which == B::SwitchBroadcast || which == B::ViewBroadcast {
                OpName::GroupStore
            } else {
                OpName::GroupStorePackets
            },
            args.call,
        );
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
        op.channel_ids = smallvec::smallvec![cid];
    }
    op.channel = Some(ChannelKind::Switch);
    ev.rec().add_op(rank, tb, op);
    Ok(Value::Unit)
}

/// A rank list for a message, shortened when long.
pub(super) fn rank_list(ranks: &[u32]) -> String {
    if ranks.len() <= 16 {
        return format!("{ranks:?}");
    }
    let head: Vec<String> = ranks[..8].iter().map(|r| r.to_string()).collect();
    format!("[{}, ... ({} ranks)]", head.join(", "), ranks.len())
}

/// Whether a channel value is a memory or a port channel.
fn channel_kind(channel: &Value) -> ChannelKind {
    if matches!(channel, Value::MemoryChannel(_)) {
        ChannelKind::Memory
    } else {
        ChannelKind::Port
    }
}
