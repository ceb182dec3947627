//! Auto-sync: inserts a `nop` between two *adjacent* ops of one thread
//! block that touch overlapping local chunks, at least one writing. Like the
//! reference compiler, it compares each op with the one just before it only
//! (the allreduce and alltoall packet plans depend on this: a put of chunk c
//! followed by an unpack into c gets a nop, but not with another op between
//! them). It is a convenience, not a race check; `msclc sim` checks races.
//! Packet reductions are tracked as the reference tracks them: by their
//! packet operands and their result, not by their raw first source.

use crate::ir::{BufRef, BufferKind, Op, OpName};

/// A local chunk range an op reads or writes.
#[derive(Clone, Copy)]
struct Access {
    kind: BufferKind,
    start: u32,
    end: u32,
    write: bool,
}

impl Access {
    fn conflicts(&self, other: &Access) -> bool {
        (self.write || other.write)
            && self.kind == other.kind
            && self.start < other.end
            && other.start < self.end
    }
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

pub fn insert(ops: Vec<Op>) -> Vec<Op> {
    let mut out: Vec<Op> = Vec::with_capacity(ops.len());
    // The accesses of the op just before, and of this one.
    let mut previous: Vec<Access> = Vec::new();
    let mut current: Vec<Access> = Vec::new();
    for op in ops {
        current.clear();
        accesses(&op, &mut current);
        if current
            .iter()
            .any(|a| previous.iter().any(|p| a.conflicts(p)))
        {
            out.push(Op::nop(op.span()));
        }
        std::mem::swap(&mut previous, &mut current);
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
    fn only_adjacent_ops_are_compared() {
        let mut third = copy(1, 2);
        third.src = smallvec::smallvec![BufRef::local(BufferKind::Output, 0, 1)];
        assert_eq!(
            names(&insert(vec![copy(0, 0), copy(1, 1), third])),
            ["copy", "copy", "copy"]
        );
    }
}
