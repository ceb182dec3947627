//! Auto-sync: inserts a `nop` between two ops of one thread block that touch
//! overlapping local chunks, at least one writing, with no `nop` or
//! `barrier` between them. Packet transfers (copy, put, read-put, unpack)
//! are not tracked: the reference compiler leaves them out, and the single
//! node packet plans depend on it. Packet reductions are tracked as the
//! reference tracks them: by their packet operands and their result, not by
//! their raw first source.

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
        | GroupStore => (&op.src, &op.dst),
        ReducePackets | ReduceSendPackets | ReduceCopyPackets | ReduceCopySendPackets => (
            op.src.get(1..).unwrap_or(&[]),
            op.dst.get(..1).unwrap_or(&[]),
        ),
        Pipeline => {
            op.body.iter().for_each(|inner| accesses(inner, out));
            return;
        }
        _ => (&[], &[]),
    };
    reads.iter().for_each(|r| push(out, r, false));
    writes.iter().for_each(|r| push(out, r, true));
}

pub fn insert(ops: Vec<Op>) -> Vec<Op> {
    let mut out: Vec<Op> = Vec::with_capacity(ops.len());
    let mut pending: Vec<Access> = Vec::new();
    let mut current: Vec<Access> = Vec::new();
    for op in ops {
        if matches!(op.name, OpName::Nop | OpName::Barrier) {
            pending.clear();
            out.push(op);
            continue;
        }
        current.clear();
        accesses(&op, &mut current);
        if current
            .iter()
            .any(|a| pending.iter().any(|p| a.conflicts(p)))
        {
            out.push(Op::nop(op.span()));
            pending.clear();
        }
        pending.extend_from_slice(&current);
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
        op.src = vec![BufRef::local(BufferKind::Input, src, 1)];
        op.dst = vec![BufRef::local(BufferKind::Output, dst, 1)];
        op
    }

    fn names(ops: &[Op]) -> Vec<&'static str> {
        ops.iter().map(|o| o.name.json()).collect()
    }

    #[test]
    fn read_after_write_gets_a_nop() {
        let mut second = copy(0, 1);
        second.src = vec![BufRef::local(BufferKind::Output, 0, 1)];
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
        cpkt.src = vec![BufRef::local(BufferKind::Input, 0, 1)];
        cpkt.dst = vec![BufRef::local(BufferKind::Scratch, 0, 1)];
        let mut upkt = Op::new(OpName::UnpackPackets, Span::default());
        upkt.src = vec![BufRef::local(BufferKind::Scratch, 0, 1)];
        upkt.dst = vec![BufRef::local(BufferKind::Output, 0, 1)];
        assert_eq!(names(&insert(vec![cpkt, upkt])), ["cpkt", "upkt"]);
    }
}
