//! Instruction fusion: adjacent ops of one thread block that the executor
//! can run as one, and the synchronization at the seam of two ops that do
//! not fuse. Each rule names the pair it merges:
//!
//! - signals and waits (relaxed or not) over disjoint channels merge into
//!   one multi-channel op; flushes of one channel type merge whatever their
//!   channels; semaphore acquires merge, and releases, whatever their
//!   semaphores (a semaphore named twice is taken twice);
//! - puts (any flavour) and gets of equal size and group merge their lists;
//! - a reduction whose source is the previous reduction's result, into the
//!   same destination, adds its operands to it (`re`, `rre`, `repkt`);
//! - a reduction followed by a memory put of its result becomes a
//!   reduce-and-send (`res`, `rres`); packet reductions likewise with
//!   `ppkt` (`respkt`), `cpkt` (`recpkt`) and both (`recspkt`);
//! - a switch reduce followed by a broadcast of its result becomes `glres`.
//!
//! Where two ops do not fuse, one block-wide sync between them is enough
//! (`settle_seam`): a sync op loses the sync it asked for after itself when
//! the next op syncs first (asks for one before, is a `nop` or a barrier,
//! or a pipeline that starts so), and loses the one before itself after a
//! barrier, a `nop` or a pipeline that ends so; a `nop` next to a `nop` or
//! a barrier is dropped. These are the reference compiler's rules, seam by
//! seam in its order: the plan is the reference's to the last `nop`.

use super::set_order::FusedSet;
use crate::ir::{BufRef, BufRefs, ChannelKind, DataSync, Op, OpName, RefTarget, TbgInfo};

/// Fuses a thread block's ops; a pipeline's body is fused when the
/// pipeline's turn comes to be fused with what follows it.
pub fn fuse(ops: Vec<Op>) -> Vec<Op> {
    let mut fuser = Fuser::default();
    for op in ops {
        fuser.push(op);
    }
    fuser.finish()
}

/// Fusion one op at a time, as a block's ops are made: each new op fuses
/// with the last one kept, or settles the seam with it. The evaluator
/// fuses so as it records, and never holds a block's unfused ops (at
/// 1,024 ranks an AllReduce makes 25 million of them, and keeps a few
/// thousand).
#[derive(Debug, Default)]
pub struct Fuser {
    out: Vec<Op>,
    /// The reference's set of the last op's channels, once it fused some.
    channels: Option<FusedSet>,
}

impl Fuser {
    /// Adds the block's next op; whether it stands in the block as itself
    /// (false: it fused into the op before, or was dropped, and its span and
    /// loop values with it).
    pub fn push(&mut self, mut op: Op) -> bool {
        if self.fuse_into_last(&op) {
            return false;
        }
        if let Some(prev) = self.out.last_mut() {
            match settle_seam(prev, &mut op) {
                Seam::Both => {}
                Seam::KeepFirst => return false,
                // The next op stands in for both, as it is: a pipeline taken
                // in this way keeps its body unfused, as the reference's does.
                Seam::KeepSecond => {
                    *prev = op;
                    self.channels = None;
                    return true;
                }
            }
        }
        list_channels(self.out.last_mut(), self.channels.take());
        if let Some(extra) = op.extra_if_any_mut() {
            extra.body = fuse(std::mem::take(&mut extra.body));
        }
        self.out.push(op);
        true
    }

    /// Fuses `op` into the block's last op, where the two fuse; whether
    /// they did. (Read where it is: moved in and given back, an op was
    /// copied twice, 3% of a reduce's or put's instructions.)
    pub fn fuse_into_last(&mut self, op: &Op) -> bool {
        let Some(prev) = self.out.last_mut() else {
            return false;
        };
        if let Some(fused) = fuse_group(prev, op) {
            *prev = fused;
        } else if let Some(fusion) = plan_fusion(prev, self.channels.as_ref(), op) {
            fusion.apply(prev, op, &mut self.channels);
        } else {
            return false;
        }
        prev.fused = true;
        true
    }

    /// Fuses a signal, wait or flush (`name`) of the block's channel `id`
    /// of `kind` into the last op, as `push` fuses that op, without the op
    /// being made: the usual op of a barrier, fused into the one before.
    /// False where it does not fuse: the caller then makes it and pushes it.
    pub fn fuse_sync(&mut self, name: OpName, kind: ChannelKind, id: u32, sync: DataSync) -> bool {
        let Some(prev) = self.out.last_mut() else {
            return false;
        };
        if !syncs_fuse(
            prev,
            self.channels.as_ref(),
            (name, Some(kind), None),
            &[id],
        ) {
            return false;
        }
        merge_channel_set(prev, &mut self.channels, &[id]);
        prev.data_sync = prev.data_sync.union(sync);
        prev.fused = true;
        true
    }

    /// The block's ops, fused.
    pub fn finish(mut self) -> Vec<Op> {
        list_channels(self.out.last_mut(), self.channels.take());
        self.out
    }
}

/// A fused op's channels in the order the reference lists them, once its
/// run of fusions has ended.
fn list_channels(op: Option<&mut Op>, channels: Option<FusedSet>) {
    if let (Some(op), Some(set)) = (op, channels) {
        set.list(&mut op.channel_ids);
    }
}

/// What remains of two adjacent ops that do not fuse.
enum Seam {
    Both,
    /// The second is a `nop` the first already does.
    KeepFirst,
    /// The first is a `nop` the second already does.
    KeepSecond,
}

/// The ops that take a `data_sync`.
fn takes_data_sync(name: OpName) -> bool {
    use OpName::*;
    matches!(
        name,
        SemAcquire | SemRelease | Signal | Wait | RelaxedSignal | RelaxedWait | Flush
    )
}

/// Whether `op` syncs the block as it starts and as it ends: its own
/// `data_sync`, a `nop` or barrier, or for a pipeline its body's first and
/// last op. (A pipeline whose body ends with a `nop` or barrier counts as
/// syncing as it starts, not as it ends: the reference compiler's reading.)
fn edge_sync(op: &Op) -> DataSync {
    let own = |op: &Op| match op.name {
        OpName::Nop | OpName::Barrier => Some(DataSync::BEFORE),
        name if takes_data_sync(name) => None,
        _ => Some(DataSync::NONE),
    };
    match op.name {
        OpName::Pipeline => {
            let body = op.body();
            let first = body.first().map_or(DataSync::NONE, |f| {
                own(f).unwrap_or(DataSync {
                    before: f.data_sync.before,
                    after: false,
                })
            });
            let last = body.last().map_or(DataSync::NONE, |l| {
                own(l).unwrap_or(DataSync {
                    before: false,
                    after: l.data_sync.after,
                })
            });
            first.union(last)
        }
        _ => op.data_sync,
    }
}

/// Settles the seam between `a` and the next op `b`, which do not fuse.
fn settle_seam(a: &mut Op, b: &mut Op) -> Seam {
    use OpName::*;
    let b_syncs_first = (takes_data_sync(b.name) && b.data_sync.before)
        || (b.name == Pipeline && edge_sync(b).before)
        || matches!(b.name, Nop | Barrier);
    match a.name {
        Nop => match b.name {
            Nop => return Seam::KeepFirst,
            Barrier => return Seam::KeepSecond,
            Pipeline if edge_sync(b).before => return Seam::KeepSecond,
            name if takes_data_sync(name) => b.data_sync.before = false,
            _ => {}
        },
        name if takes_data_sync(name) && b_syncs_first => a.data_sync.after = false,
        Barrier => match b.name {
            Nop => return Seam::KeepFirst,
            name if takes_data_sync(name) => b.data_sync.before = false,
            _ => {}
        },
        Pipeline if edge_sync(a).after => match b.name {
            Nop => return Seam::KeepFirst,
            name if takes_data_sync(name) => b.data_sync.before = false,
            _ => {}
        },
        _ => {}
    }
    Seam::Both
}

/// How `b` merges into the op `a` before it. Fusion extends `a` in place, so
/// that an op absorbing k others costs k, not k².
struct Fusion {
    name: OpName,
    src: Merge,
    dst: Merge,
    /// The fused op is a memory-channel op (reduce-and-send).
    memory: bool,
    /// The channels are a set, listed as the reference lists it
    /// (`set_order`); else the second op's follow the first's.
    channel_set: bool,
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
        let from = match self {
            Merge::Keep => return,
            Merge::Append => from,
            Merge::AppendTail => from.get(1..).unwrap_or(&[]),
        };
        // Pushed one by one: an op fused in brings a ref or two, and
        // `extend_from_slice` (an insert at the end, which copies through
        // `memcpy`) costs more than the pushes.
        for r in from {
            into.push(*r);
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
            channel_set: false,
        }
    }

    fn channel_set(mut self) -> Fusion {
        self.channel_set = true;
        self
    }

    fn on_memory(mut self) -> Fusion {
        self.memory = true;
        self
    }

    /// Merges `b` into `a`; `channels` is the reference's set of `a`'s
    /// channels where `a` is itself fused.
    fn apply(&self, a: &mut Op, b: &Op, channels: &mut Option<FusedSet>) {
        a.name = self.name;
        self.src.apply(&mut a.src, &b.src);
        self.dst.apply(&mut a.dst, &b.dst);
        if self.memory {
            a.channel = Some(ChannelKind::Memory);
        }
        if self.channel_set {
            merge_channel_set(a, channels, &b.channel_ids);
        } else {
            // One by one, as the refs above.
            for &id in &b.channel_ids {
                crate::ir::push_id(&mut a.channel_ids, id);
            }
        }
        if !b.semaphore_ids().is_empty() {
            a.extra_mut().semaphore_ids.extend(b.semaphore_ids());
        }
        a.data_sync = a.data_sync.union(b.data_sync);
    }
}

/// Adds channels `ids` to `a`'s, which the reference keeps as a set
/// (`channels`, made from `a`'s on the first fusion). The set orders the
/// channels once the run of fusions ends (`list_channels`); until then
/// they are kept in the order met.
fn merge_channel_set(a: &mut Op, channels: &mut Option<FusedSet>, ids: &[u32]) {
    let set = channels.get_or_insert_with(|| FusedSet::from_list(&a.channel_ids));
    set.union_with_list(ids, &mut a.channel_ids);
}

/// Whether a signal, wait or flush (its name, channel kind and group)
/// on channels `ids` fuses into `a` (with `a_set`, the set of `a`'s
/// channels where `a` is itself fused): the same op on the same kind of
/// channel, signals and waits on channels `a` has not, a flush on any
/// (flushing one twice is flushing it once).
fn syncs_fuse(
    a: &Op,
    a_set: Option<&FusedSet>,
    (name, channel, tbg): (OpName, Option<ChannelKind>, Option<TbgInfo>),
    ids: &[u32],
) -> bool {
    use OpName::*;
    if (a.name, a.channel, a.tbg) != (name, channel, tbg) {
        return false;
    }
    match name {
        Signal | Wait | RelaxedSignal | RelaxedWait => disjoint(&a.channel_ids, a_set, ids),
        Flush => true,
        _ => false,
    }
}

/// Whether `b`'s channels are none of `a`'s, asked of `a`'s set where it
/// has one: an op that fused a thousand signals has a thousand channels.
fn disjoint(a: &[u32], a_set: Option<&FusedSet>, b: &[u32]) -> bool {
    match a_set {
        Some(set) => b.iter().all(|&x| !set.contains(x)),
        None => b.iter().all(|x| !a.contains(x)),
    }
}

/// Every ref of `b` has the size of `a`'s (all of `a`'s refs share one size:
/// transfers are checked for it, and fused ones were checked here).
fn same_size(a: &Op, b: &Op) -> bool {
    let size = a.src.first().map(|r| r.size);
    a.dst.first().map(|r| r.size) == size
        && b.src.iter().chain(&b.dst).all(|r| Some(r.size) == size)
}

/// How `b` fuses into `a` (with `a_set`, the set of `a`'s channels where
/// `a` is itself fused), or `None` when they do not.
fn plan_fusion(a: &Op, a_set: Option<&FusedSet>, b: &Op) -> Option<Fusion> {
    use Merge::*;
    use OpName::*;
    let reads_result = |i: usize| b.src.len() == 1 && a.dst.get(i).is_some_and(|d| *d == b.src[0]);
    let with_dst = |name: OpName| Some(Fusion::new(name, Keep, Append));
    if a.tbg != b.tbg {
        return None;
    }
    match (a.name, b.name) {
        (Signal | Wait | RelaxedSignal | RelaxedWait | Flush, _)
            if syncs_fuse(a, a_set, (b.name, b.channel, b.tbg), &b.channel_ids) =>
        {
            Some(Fusion::new(a.name, Keep, Keep).channel_set())
        }
        (SemAcquire | SemRelease, _) if a.name == b.name => Some(Fusion::new(a.name, Keep, Keep)),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::Span;
    use crate::passes::data_sync;

    fn op(name: OpName, sync: DataSync) -> Op {
        let mut op = Op::new(name, Span::default());
        op.data_sync = sync;
        op
    }

    fn on(mut op: Op, channel: ChannelKind, ids: &[u32]) -> Op {
        op.channel = Some(channel);
        op.channel_ids = ids.iter().copied().collect();
        op
    }

    fn semaphore(name: OpName, sync: DataSync, id: u32) -> Op {
        let mut op = op(name, sync);
        op.extra_mut().semaphore_ids = vec![id];
        op
    }

    /// Fusion, then the nops the ops ask for: what the plan holds.
    fn synced(ops: Vec<Op>) -> Vec<&'static str> {
        data_sync::insert(fuse(ops))
            .iter()
            .map(|o| o.name.json())
            .collect()
    }

    #[test]
    fn one_nop_between_two_sync_ops() {
        let ops = vec![
            on(
                op(OpName::Signal, DataSync::BOTH),
                ChannelKind::Memory,
                &[0],
            ),
            on(op(OpName::Wait, DataSync::BOTH), ChannelKind::Memory, &[0]),
            op(OpName::Copy, DataSync::NONE),
        ];
        assert_eq!(synced(ops), ["nop", "signal", "nop", "wait", "nop", "copy"]);
    }

    #[test]
    fn no_nop_next_to_a_barrier() {
        let ops = vec![
            on(op(OpName::Wait, DataSync::AFTER), ChannelKind::Memory, &[0]),
            op(OpName::Barrier, DataSync::NONE),
            op(OpName::Copy, DataSync::NONE),
            op(OpName::Barrier, DataSync::NONE),
            on(
                op(OpName::Signal, DataSync::BEFORE),
                ChannelKind::Memory,
                &[0],
            ),
        ];
        assert_eq!(
            synced(ops),
            ["wait", "barrier", "copy", "barrier", "signal"]
        );
    }

    #[test]
    fn a_nop_next_to_a_nop_or_a_barrier_goes() {
        let ops = vec![
            op(OpName::Nop, DataSync::NONE),
            op(OpName::Nop, DataSync::NONE),
            op(OpName::Barrier, DataSync::NONE),
            op(OpName::Nop, DataSync::NONE),
        ];
        assert_eq!(synced(ops), ["barrier"]);
    }

    #[test]
    fn releases_of_one_semaphore_fuse_and_take_it_twice() {
        let ops = vec![
            semaphore(OpName::SemRelease, DataSync::NONE, 0),
            semaphore(OpName::SemRelease, DataSync::BOTH, 0),
        ];
        let fused = fuse(ops);
        assert_eq!(fused.len(), 1);
        assert_eq!(fused[0].semaphore_ids(), [0, 0]);
        assert_eq!(fused[0].data_sync, DataSync::BOTH);
    }

    #[test]
    fn flushes_of_one_channel_fuse_into_one() {
        let ops = vec![
            on(op(OpName::Flush, DataSync::NONE), ChannelKind::Port, &[1]),
            on(op(OpName::Flush, DataSync::BEFORE), ChannelKind::Port, &[0]),
            on(op(OpName::Flush, DataSync::NONE), ChannelKind::Port, &[1]),
        ];
        let fused = fuse(ops);
        assert_eq!(fused.len(), 1);
        assert_eq!(fused[0].channel_ids.as_slice(), [0, 1]);
    }

    #[test]
    fn a_sync_op_before_one_that_syncs_first_drops_its_after() {
        // release(after), flush(none), flush(before): the release keeps its
        // `after` (its neighbour asked for nothing before), and the flushes,
        // fused, keep their `before`: two nops in a row, as the reference
        // compiler emits them.
        let ops = vec![
            semaphore(OpName::SemRelease, DataSync::AFTER, 0),
            on(op(OpName::Flush, DataSync::NONE), ChannelKind::Port, &[0]),
            on(op(OpName::Flush, DataSync::BEFORE), ChannelKind::Port, &[0]),
        ];
        assert_eq!(synced(ops), ["sem_release", "nop", "nop", "flush"]);
        // release(after), wait(before): one nop.
        let ops = vec![
            semaphore(OpName::SemRelease, DataSync::AFTER, 0),
            on(
                op(OpName::Wait, DataSync::BEFORE),
                ChannelKind::Memory,
                &[0],
            ),
        ];
        assert_eq!(synced(ops), ["sem_release", "nop", "wait"]);
    }

    /// A signal, wait or flush fused without being made (`fuse_sync`, as
    /// the evaluator records a barrier's) leaves the block as pushing the
    /// op would: over runs of such ops of both kinds of channel, with
    /// repeated channels, other ops between and every data sync.
    #[test]
    fn a_sync_fused_unmade_is_the_sync_pushed() {
        use OpName::*;
        let names = [Signal, Wait, RelaxedSignal, RelaxedWait, Flush, Copy];
        let syncs = [
            DataSync::NONE,
            DataSync::BEFORE,
            DataSync::AFTER,
            DataSync::BOTH,
        ];
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |n: usize| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) as usize % n
        };
        for _ in 0..200 {
            let (mut pushed, mut unmade) = (Fuser::default(), Fuser::default());
            for _ in 0..40 {
                let name = names[next(names.len())];
                let sync = syncs[next(syncs.len())];
                let kind = [ChannelKind::Memory, ChannelKind::Port][next(2)];
                let id = next(24) as u32;
                let made = || match name {
                    Copy => op(Copy, DataSync::NONE),
                    _ => on(op(name, sync), kind, &[id]),
                };
                pushed.push(made());
                if name == Copy || !unmade.fuse_sync(name, kind, id, sync) {
                    unmade.push(made());
                }
            }
            assert_eq!(pushed.finish(), unmade.finish());
        }
    }
}
