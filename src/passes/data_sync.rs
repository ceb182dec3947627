//! Data-sync insertion: a `nop` (a `__syncthreads()`) before and/or after
//! every op whose `data_sync` asks for it. Fusion has already dropped what
//! a neighbour syncs anyway (`fuse::settle_seam`); without fusion every
//! op gets what it asks for, two `nop`s in a row included, as the reference
//! compiler gives it.

use crate::ir::Op;

pub fn insert(ops: Vec<Op>) -> Vec<Op> {
    // Counted first, so that the list is allocated once at its size (or
    // not at all): new memory costs a page fault a page, and a list grown
    // past its first guess cost allreduce at 16 ranks 37 of its faults.
    let nops: usize = ops
        .iter()
        .map(|op| usize::from(op.data_sync.before) + usize::from(op.data_sync.after))
        .sum();
    if nops == 0 {
        return ops;
    }
    let mut out: Vec<Op> = Vec::with_capacity(ops.len() + nops);
    for op in ops {
        let sync = op.data_sync;
        if sync.before {
            out.push(Op::nop_for(&op));
        }
        let after = sync.after.then(|| Op::nop_for(&op));
        out.push(op);
        out.extend(after);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::Span;
    use crate::ir::{DataSync, OpName};

    fn op(name: OpName, sync: DataSync) -> Op {
        let mut op = Op::new(name, Span::default());
        op.data_sync = sync;
        op
    }

    fn names(ops: &[Op]) -> Vec<&'static str> {
        ops.iter().map(|o| o.name.json()).collect()
    }

    #[test]
    fn before_and_after_only_where_asked() {
        let ops = vec![
            op(OpName::Signal, DataSync::BEFORE),
            op(OpName::Wait, DataSync::AFTER),
        ];
        assert_eq!(names(&insert(ops)), ["nop", "signal", "wait", "nop"]);
    }

    #[test]
    fn every_op_gets_what_it_asks_for() {
        // Fusion, when on, has settled the seam first (fuse.rs); without it
        // the reference compiler emits both nops too.
        let ops = vec![
            op(OpName::Signal, DataSync::AFTER),
            op(OpName::Wait, DataSync::BEFORE),
        ];
        assert_eq!(names(&insert(ops)), ["signal", "nop", "nop", "wait"]);
    }
}
