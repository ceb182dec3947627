//! Auto-sync: inserts a `nop` before an op of a thread block that touches
//! a local chunk range some earlier op of the block touched since the block
//! last synced (a `nop`, a barrier, or a `nop` auto-sync inserted), one of
//! the two writing; as the reference compiler does, it remembers the last
//! access to each range. It is a convenience, not a race check; `msclc sim`
//! checks races. Packet reductions are tracked as the reference tracks
//! them: by their packet operands and their result, not by their raw first
//! source.

use crate::ir::{BufRef, BufferKind, Op, OpName};

/// A local chunk range an op reads or writes.
#[derive(Clone, Copy)]
struct Access {
    kind: BufferKind,
    start: u32,
    end: u32,
    write: bool,
}

fn push(out: &mut Vec<Access>, r: &BufRef, write: bool) {
    if let Some(kind) = r.local_kind() {
        out.push(Access {
            kind,
            start: r.index,
            end: r.index + r.size,
            write,
        });
    }
}

/// The local accesses auto-sync orders for `op`.
fn accesses(op: &Op, out: &mut Vec<Access>) {
    use OpName::*;
    let (reads, writes): (&[BufRef], &[BufRef]) = match op.name {
        Copy
        | Put
        | PutWithSignal
        | PutWithSignalAndFlush
        | Get
        | Reduce
        | ReduceSend
        | ReadReduce
        | ReadReduceSend
        | GroupStore
        | PutPackets => (&op.src, &op.dst),
        CopyPackets => (&op.src, &[]),
        UnpackPackets => (&[], &op.dst),
        ReducePackets | ReduceSendPackets | ReduceCopyPackets | ReduceCopySendPackets => (
            op.src.get(1..).unwrap_or(&[]),
            op.dst.get(..1).unwrap_or(&[]),
        ),
        Pipeline => {
            op.body().iter().for_each(|inner| accesses(inner, out));
            return;
        }
        _ => (&[], &[]),
    };
    reads.iter().for_each(|r| push(out, r, false));
    writes.iter().for_each(|r| push(out, r, true));
}

/// A range of one buffer's chunks and the last op (by position in the
/// block) that touched it since the block last synced.
#[derive(Clone, Copy)]
struct Touched {
    start: u32,
    end: u32,
    op: usize,
    write: bool,
}

/// Per buffer kind, the touched ranges in order, disjoint.
#[derive(Default)]
struct Touches {
    by_kind: [Vec<Touched>; 3],
}

impl Touches {
    fn list(&mut self, kind: BufferKind) -> &mut Vec<Touched> {
        let i = match kind {
            BufferKind::Input => 0,
            BufferKind::Output => 1,
            BufferKind::Scratch => 2,
        };
        &mut self.by_kind[i]
    }

    fn clear(&mut self) {
        self.by_kind.iter_mut().for_each(Vec::clear);
    }

    /// Records access `a` of op number `op`; whether it conflicts with the
    /// last access of another op to an overlapping range (then the block
    /// syncs first, and only `a` is remembered).
    fn touch(&mut self, a: &Access, op: usize) -> bool {
        let new = Touched {
            start: a.start,
            end: a.end,
            op,
            write: a.write,
        };
        let list = self.list(a.kind);
        let first = list.partition_point(|t| t.end <= a.start);
        let last = first + list[first..].iter().take_while(|t| t.start < a.end).count();
        let overlapped = &list[first..last];
        if overlapped
            .iter()
            .any(|t| t.op != op && (t.write || a.write))
        {
            self.clear();
            self.list(a.kind).push(new);
            return true;
        }
        // What the new access does not cover stays as it was.
        let mut kept: smallvec::SmallVec<[Touched; 3]> = smallvec::SmallVec::new();
        if let Some(t) = overlapped.first().filter(|t| t.start < a.start) {
            kept.push(Touched { end: a.start, ..*t });
        }
        kept.push(new);
        if let Some(t) = overlapped.last().filter(|t| t.end > a.end) {
            kept.push(Touched { start: a.end, ..*t });
        }
        list.splice(first..last, kept);
        false
    }
}

pub fn insert(ops: Vec<Op>) -> Vec<Op> {
    let mut out: Vec<Op> = Vec::with_capacity(ops.len());
    let mut touches = Touches::default();
    let mut accessed: Vec<Access> = Vec::new();
    for (i, op) in ops.into_iter().enumerate() {
        if matches!(op.name, OpName::Nop | OpName::Barrier) {
            touches.clear();
            out.push(op);
            continue;
        }
        accessed.clear();
        accesses(&op, &mut accessed);
        // Every access is recorded; one nop is enough.
        let conflicts = accessed
            .iter()
            .fold(false, |any, a| touches.touch(a, i) | any);
        if conflicts {
            out.push(Op::nop_for(&op));
        }
        out.push(op);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::Span;

    fn copy(src: u32, dst: u32) -> Op {
        let mut op = Op::new(OpName::Copy, Span::default());
        op.src = smallvec::smallvec![BufRef::local(BufferKind::Input, src, 1)];
        op.dst = smallvec::smallvec![BufRef::local(BufferKind::Output, dst, 1)];
        op
    }

    fn names(ops: &[Op]) -> Vec<&'static str> {
        ops.iter().map(|o| o.name.json()).collect()
    }

    #[test]
    fn read_after_write_gets_a_nop() {
        let mut second = copy(0, 1);
        second.src = smallvec::smallvec![BufRef::local(BufferKind::Output, 0, 1)];
        assert_eq!(
            names(&insert(vec![copy(0, 0), second])),
            ["copy", "nop", "copy"]
        );
    }

    #[test]
    fn disjoint_chunks_need_none() {
        assert_eq!(
            names(&insert(vec![copy(0, 0), copy(1, 1)])),
            ["copy", "copy"]
        );
    }

    #[test]
    fn packets_are_exempt() {
        let mut cpkt = Op::new(OpName::CopyPackets, Span::default());
        cpkt.src = smallvec::smallvec![BufRef::local(BufferKind::Input, 0, 1)];
        cpkt.dst = smallvec::smallvec![BufRef::local(BufferKind::Scratch, 0, 1)];
        let mut upkt = Op::new(OpName::UnpackPackets, Span::default());
        upkt.src = smallvec::smallvec![BufRef::local(BufferKind::Scratch, 0, 1)];
        upkt.dst = smallvec::smallvec![BufRef::local(BufferKind::Output, 0, 1)];
        assert_eq!(names(&insert(vec![cpkt, upkt])), ["cpkt", "upkt"]);
    }

    #[test]
    fn a_write_is_remembered_past_ops_elsewhere() {
        let mut third = copy(1, 2);
        third.src = smallvec::smallvec![BufRef::local(BufferKind::Output, 0, 1)];
        assert_eq!(
            names(&insert(vec![copy(0, 0), copy(1, 1), third])),
            ["copy", "copy", "nop", "copy"]
        );
    }

    #[test]
    fn a_sync_forgets_what_was_touched_before_it() {
        // copy in0 -> out0 writes out0; copy out0 -> out1 conflicts (a nop,
        // which forgets the first); copy out0 -> out2 only reads out0 again;
        // a write of out3 conflicts with nothing.
        let read_out0 = |dst: u32| {
            let mut c = copy(0, dst);
            c.src = smallvec::smallvec![BufRef::local(BufferKind::Output, 0, 1)];
            c
        };
        assert_eq!(
            names(&insert(vec![
                copy(0, 0),
                read_out0(1),
                read_out0(2),
                copy(3, 3)
            ])),
            ["copy", "nop", "copy", "copy", "copy"]
        );
    }

    #[test]
    fn part_of_a_range_stays_touched() {
        // A two-chunk write of out0..2, then a read of in0 only: the write
        // of out1 is still remembered.
        let mut wide = copy(0, 0);
        wide.src[0].size = 2;
        wide.dst[0].size = 2;
        let mut read_out1 = copy(0, 3);
        read_out1.src = smallvec::smallvec![BufRef::local(BufferKind::Output, 1, 1)];
        assert_eq!(
            names(&insert(vec![wide, copy(0, 2), read_out1])),
            ["copy", "copy", "nop", "copy"]
        );
    }
}
