//! Data-sync insertion: a `nop` (a `__syncthreads()`) before and/or after
//! every op whose `data_sync` asks for it, never two in a row, and none next
//! to a barrier, which syncs the thread block anyway.

use crate::ir::{Op, OpName};

pub fn insert(ops: Vec<Op>) -> Vec<Op> {
    let mut out: Vec<Op> = Vec::with_capacity(ops.len());
    for op in ops {
        let sync = op.data_sync;
        if op.name == OpName::Barrier && out.last().is_some_and(|o| o.name == OpName::Nop) {
            out.pop();
        }
        let synced = out
            .last()
            .is_some_and(|o| matches!(o.name, OpName::Nop | OpName::Barrier));
        if sync.before && !synced {
            out.push(Op::nop(op.span()));
        }
        let span = op.span();
        out.push(op);
        if sync.after {
            out.push(Op::nop(span));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::Span;
    use crate::ir::DataSync;

    fn op(name: OpName, sync: DataSync) -> Op {
        let mut op = Op::new(name, Span::default());
        op.data_sync = sync;
        op
    }

    fn names(ops: &[Op]) -> Vec<&'static str> {
        ops.iter().map(|o| o.name.json()).collect()
    }

    #[test]
    fn one_nop_between_adjacent_syncs() {
        let ops = vec![
            op(OpName::Signal, DataSync::BOTH),
            op(OpName::Wait, DataSync::BOTH),
            op(OpName::Copy, DataSync::NONE),
        ];
        assert_eq!(
            names(&insert(ops)),
            ["nop", "signal", "nop", "wait", "nop", "copy"]
        );
    }

    #[test]
    fn no_nop_next_to_a_barrier() {
        let ops = vec![
            op(OpName::Wait, DataSync::AFTER),
            op(OpName::Barrier, DataSync::NONE),
            op(OpName::Put, DataSync::NONE),
            op(OpName::Barrier, DataSync::NONE),
            op(OpName::Signal, DataSync::BEFORE),
        ];
        assert_eq!(
            names(&insert(ops)),
            ["wait", "barrier", "put", "barrier", "signal"]
        );
    }

    #[test]
    fn before_and_after_only_where_asked() {
        let ops = vec![
            op(OpName::Signal, DataSync::BEFORE),
            op(OpName::Wait, DataSync::AFTER),
        ];
        assert_eq!(names(&insert(ops)), ["nop", "signal", "wait", "nop"]);
    }
}
