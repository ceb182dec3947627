//! One thread block's code: each op one call of a prelude routine, every
//! number of the op a parameter of the block's row (`P[k]`), so that
//! blocks that differ only in numbers share their code.

use super::{Res, SyncLayout};
use crate::diag::{Code, Diagnostic};
use crate::ir::{
    BufRef, BufferKind, ChannelKind, ChannelPairs, Op, OpName, RankPlan, ReduceOp, RefTarget,
    ThreadBlock,
};

/// Why `op` has no CUDA form (`Code::NoCudaForm`), at its program line
/// (a JSON plan's ops have none: the caller drops the label).
fn no_cuda_form(op: &Op, message: impl Into<String>) -> Diagnostic {
    Diagnostic::error(Code::NoCudaForm, op.span, message, "this op")
}

/// The first of an op's sources or destinations (`what`): every op that
/// moves data has one, as the plan reader and the evaluator see to; a plan
/// built otherwise gets a diagnostic, not a panic.
fn first<'o>(op: &Op, refs: &'o [BufRef], what: &str) -> Res<&'o BufRef> {
    refs.first()
        .ok_or_else(|| no_cuda_form(op, format!("a `{}` op with no {what}", op.name.json())))
}

/// Writes one thread block: its code, with every number a parameter.
pub(super) struct BlockWriter<'p> {
    layout: &'p SyncLayout,
    pairs: &'p ChannelPairs,
    rank: u32,
    rank_plan: &'p RankPlan,
    tb: &'p ThreadBlock,
    code: String,
    params: Vec<u64>,
}

/// Where an op sits: its index in the block and, inside a pipeline, its
/// index in the body and the pipeline's unit size parameter.
#[derive(Clone, Copy)]
struct Place<'s> {
    op: usize,
    body: Option<(usize, &'s str)>,
}

impl Place<'_> {
    /// The prelude's MSCL_AT of this op, for spin reports.
    fn at(&self) -> String {
        format!(
            "MSCL_AT({}, {})",
            self.op,
            self.body.map_or(0, |(b, _)| b + 1)
        )
    }
}

/// A byte range of an op's buffer reference, as C expressions.
struct Range {
    /// Pointer bases: one per buffer; a switch reference has one per member.
    bases: Vec<String>,
    start: String,
    bytes: String,
}

impl Range {
    fn data(&self) -> Vec<String> {
        self.bases
            .iter()
            .map(|b| format!("{b} + {}", self.start))
            .collect()
    }

    /// Packets of data bytes [o, o+s) sit at [2o, 2o+2s) (SEMANTICS.md §3.6).
    fn packets(&self) -> Vec<String> {
        self.bases
            .iter()
            .map(|b| format!("{b} + 2 * ({})", self.start))
            .collect()
    }

    fn one_data(&self) -> String {
        self.data().swap_remove(0)
    }

    fn one_packets(&self) -> String {
        self.packets().swap_remove(0)
    }
}

/// `mscl_ptrs<N>{{a, b}}`: an op's pointer list, passed by value.
fn ptrs(kind: &str, list: &[String]) -> String {
    format!("{kind}<{}>{{{{{}}}}}", list.len(), list.join(", "))
}

impl<'p> BlockWriter<'p> {
    pub(super) fn new(
        layout: &'p SyncLayout,
        pairs: &'p ChannelPairs,
        rank: u32,
        rank_plan: &'p RankPlan,
        tb: &'p ThreadBlock,
    ) -> BlockWriter<'p> {
        BlockWriter {
            layout,
            pairs,
            rank,
            rank_plan,
            tb,
            code: String::new(),
            params: Vec::new(),
        }
    }

    /// The block's code and its parameters' values, `P[0]` first.
    pub(super) fn finish(self) -> (String, Vec<u64>) {
        (self.code, self.params)
    }

    /// `P[k]`, the block's next parameter, set to `value`.
    fn param(&mut self, value: u64) -> String {
        self.params.push(value);
        format!("P[{}]", self.params.len() - 1)
    }

    /// `P + k`, the first of consecutive parameters set to `values`.
    fn param_list(&mut self, values: impl IntoIterator<Item = u64>) -> String {
        let first = self.params.len();
        self.params.extend(values);
        format!("P + {first}")
    }

    fn line(&mut self, depth: usize, text: &str) {
        for _ in 0..depth {
            self.code.push_str("  ");
        }
        self.code.push_str(text);
        self.code.push('\n');
    }

    pub(super) fn op(
        &mut self,
        op: &Op,
        index: usize,
        body: Option<(usize, &str)>,
        depth: usize,
    ) -> Res<()> {
        self.line(depth, &format!("// {}", op.name.json()));
        let place = Place { op: index, body };
        let at = place.at();
        match op.name {
            OpName::Nop => self.line(depth, "MSCL_SYNC();"),
            OpName::Barrier => {
                let (id, k) = op.barrier.unwrap_or((0, 1));
                if k <= 1 {
                    self.line(depth, "MSCL_SYNC();");
                } else {
                    let w = self.param(self.layout.barrier(self.rank, id) as u64);
                    let k = self.param(k as u64);
                    self.line(depth, &format!("mscl_barrier(a, {w}, {k}, {at});"));
                }
            }
            OpName::Signal | OpName::RelaxedSignal => self.signals(op, depth)?,
            OpName::Wait | OpName::RelaxedWait => {
                let kind = channel_kind(op)?;
                let words: Vec<u64> = self
                    .channels(op, kind)?
                    .into_iter()
                    .map(|c| self.layout.inbound(self.rank, kind, c) as u64)
                    .collect();
                let n = words.len();
                let list = self.param_list(words);
                self.line(depth, &format!("mscl_wait<{n}>(a, {list}, {at});"));
            }
            OpName::Flush => {
                // The block did its port transfers itself: nothing is left
                // in flight, and later signals release what it wrote.
                self.line(depth, "// (nothing in flight)");
            }
            OpName::Put | OpName::PutWithSignal | OpName::PutWithSignalAndFlush | OpName::Get => {
                self.copies(op, place, depth)?;
                if is_port(op) || op.name != OpName::Put && op.name != OpName::Get {
                    // A port transfer is done when its thread's trigger
                    // would be: the whole block's copy precedes the signal.
                    self.line(depth, "MSCL_SYNC();");
                }
                if matches!(op.name, OpName::PutWithSignal | OpName::PutWithSignalAndFlush) {
                    self.signals(op, depth)?;
                }
            }
            OpName::Copy => self.copies(op, place, depth)?,
            OpName::CopyPackets => self.put_packets(op, place, depth)?,
            OpName::PutPackets if !is_port(op) => self.put_packets(op, place, depth)?,
            OpName::PutPackets | OpName::ReadPutPackets | OpName::GroupStorePackets => {
                // Packets already made, re-stamped: read_put_packets and
                // switch stores send one source everywhere; port put_packets
                // moves packets source i to destination i (SEMANTICS.md §4).
                let pairs: Vec<(&BufRef, &[BufRef])> = if op.name == OpName::PutPackets {
                    op.src.iter().zip(op.dst.chunks(1)).collect()
                } else {
                    vec![(first(op, &op.src, "source")?, &op.dst[..])]
                };
                for (src, dsts) in pairs {
                    let src = self.unpipelined_range(op, src)?;
                    let (dsts, _) = self.all(op, dsts, None, Range::packets)?;
                    self.line(
                        depth,
                        &format!(
                            "mscl_forward_packets<{}>(a, {}, {}, {}, {at});",
                            dsts.len(),
                            ptrs("mscl_ptrs", &dsts),
                            src.one_packets(),
                            src.bytes
                        ),
                    );
                }
                if is_port(op) {
                    self.line(depth, "MSCL_SYNC();");
                }
            }
            OpName::UnpackPackets => {
                let src = self.unpipelined_range(op, first(op, &op.src, "source")?)?;
                let dst = self.unpipelined_range(op, first(op, &op.dst, "destination")?)?;
                self.line(
                    depth,
                    &format!(
                        "mscl_unpack_packets(a, {}, {}, {}, {at});",
                        dst.one_data(),
                        src.one_packets(),
                        dst.bytes
                    ),
                );
            }
            OpName::Reduce
            | OpName::ReduceSend
            | OpName::ReadReduce
            | OpName::ReadReduceSend
            | OpName::GroupLoadReduceStore
            | OpName::GroupStore => {
                let (srcs, _) = self.all(op, &op.src, Some(place), Range::data)?;
                let (dsts, bytes) = self.all(op, &op.dst, Some(place), Range::data)?;
                self.line(
                    depth,
                    &format!(
                        "mscl_reduce<{}, {}, {}>({}, {}, {bytes});",
                        reduction(op),
                        srcs.len(),
                        dsts.len(),
                        ptrs("mscl_ptrs", &dsts),
                        ptrs("mscl_cptrs", &srcs)
                    ),
                );
            }
            OpName::ReducePackets
            | OpName::ReduceSendPackets
            | OpName::ReduceCopyPackets
            | OpName::ReduceCopySendPackets => {
                let raw = self.unpipelined_range(op, first(op, &op.src, "source")?)?;
                let (pkts, _) = self.all(op, &op.src[1..], None, Range::packets)?;
                let dst = self.unpipelined_range(op, first(op, &op.dst, "destination")?)?;
                let (outs, _) = self.all(op, &op.dst[1..], None, Range::packets)?;
                self.line(
                    depth,
                    &format!(
                        "mscl_reduce_packets<{}, {}, {}>(a, {}, {}, {}, {}, {}, {at});",
                        reduction(op),
                        pkts.len(),
                        outs.len(),
                        dst.one_data(),
                        ptrs("mscl_ptrs", &outs),
                        raw.one_data(),
                        ptrs("mscl_cptrs", &pkts),
                        dst.bytes
                    ),
                );
            }
            OpName::SemAcquire | OpName::SemRelease => {
                let words: Vec<u64> = op
                    .semaphore_ids()
                    .iter()
                    .map(|id| self.layout.semaphore(self.rank, *id) as u64)
                    .collect();
                let n = words.len();
                let list = self.param_list(words);
                self.line(
                    depth,
                    &if op.name == OpName::SemAcquire {
                        format!("mscl_sem_acquire<{n}>(a, {list}, {at});")
                    } else {
                        format!("mscl_release<{n}>(a, {list});")
                    },
                );
            }
            OpName::Pipeline if body.is_some() => {
                return Err(no_cuda_form(op,
                    "pipelines do not nest (the executor runs one level)",
                ))
            }
            OpName::Pipeline => self.pipeline(op, index, depth)?,
            OpName::GroupLoadReduce => {
                return Err(no_cuda_form(op,
                    "a switch reduce that no broadcast follows (glre) has no CUDA form: the MSCCL++ executor rejects it too; follow it by a broadcast of the same chunks",
                ))
            }
        }
        Ok(())
    }

    /// Source i to destination i, raw data (copy, put, get).
    fn copies(&mut self, op: &Op, place: Place, depth: usize) -> Res<()> {
        for (src, dst) in op.src.iter().zip(&op.dst) {
            let (src, dst) = (self.range(op, src, place)?, self.range(op, dst, place)?);
            self.line(
                depth,
                &format!(
                    "mscl_copy({}, {}, {});",
                    dst.one_data(),
                    src.one_data(),
                    dst.bytes
                ),
            );
        }
        Ok(())
    }

    /// Raw data to packets: copy_packets, and put_packets over memory
    /// channels; source i goes to destination i (SEMANTICS.md §4).
    fn put_packets(&mut self, op: &Op, place: Place, depth: usize) -> Res<()> {
        for (src, dst) in op.src.iter().zip(&op.dst) {
            let src = self.unpipelined_range(op, src)?;
            let dsts = self.unpipelined_range(op, dst)?.packets();
            self.line(
                depth,
                &format!(
                    "mscl_put_packets<{}>(a, {}, {}, {}, {});",
                    dsts.len(),
                    ptrs("mscl_ptrs", &dsts),
                    src.one_data(),
                    src.bytes,
                    place.at()
                ),
            );
        }
        Ok(())
    }

    fn pipeline(&mut self, op: &Op, index: usize, depth: usize) -> Res<()> {
        let (unit, num_chunks) = op
            .iter_context()
            .map_or((1, 1), |i| (i.unit_size.max(1), i.num_chunks));
        let (unit, num_chunks) = (self.param(unit), self.param(num_chunks as u64));
        self.line(
            depth,
            &format!(
                "for (u64 it = 0, n = ({num_chunks} * B + {unit} - 1) / {unit}; it < n; it++) {{"
            ),
        );
        self.line(depth + 1, &format!("const u64 off = it * {unit};"));
        for (b, body_op) in op.body().iter().enumerate() {
            self.op(body_op, index, Some((b, unit.as_str())), depth + 1)?;
        }
        self.line(depth, "}");
        Ok(())
    }

    /// (rank-level channel) for each channel id of the op.
    fn channels(&self, op: &Op, kind: ChannelKind) -> Res<Vec<u32>> {
        let table = self.tb.channel_ids(kind);
        op.channel_ids
            .iter()
            .map(|local| {
                table.get(*local as usize).copied().ok_or_else(|| {
                    no_cuda_form(
                        op,
                        format!(
                            "rank {} uses {} channel {local} that its thread block does not list",
                            self.rank,
                            kind.name()
                        ),
                    )
                })
            })
            .collect()
    }

    /// The op's signals: lane k adds one to the inbound counter of the
    /// channel paired with the op's k-th channel, on the peer.
    fn signals(&mut self, op: &Op, depth: usize) -> Res<()> {
        let kind = channel_kind(op)?;
        let words: Vec<u64> = self
            .channels(op, kind)?
            .into_iter()
            .map(
                |channel| match self.pairs.pair((self.rank, kind, channel)) {
                    Some((peer, kind, peer_channel)) => {
                        self.layout.inbound(peer, kind, peer_channel) as u64
                    }
                    None => self.layout.unpaired as u64,
                },
            )
            .collect();
        let n = words.len();
        let list = self.param_list(words);
        self.line(depth, &format!("mscl_release<{n}>(a, {list});"));
        Ok(())
    }

    /// Every reference's pointers (switch refs give one per member), and the
    /// first one's byte count.
    fn all(
        &mut self,
        op: &Op,
        refs: &[BufRef],
        place: Option<Place>,
        form: fn(&Range) -> Vec<String>,
    ) -> Res<(Vec<String>, String)> {
        let mut ptrs = Vec::new();
        let mut bytes = String::from("0");
        for (i, r) in refs.iter().enumerate() {
            let range = match place {
                Some(place) => self.range(op, r, place)?,
                None => self.unpipelined_range(op, r)?,
            };
            if i == 0 {
                bytes = range.bytes.clone();
            }
            ptrs.extend(form(&range));
        }
        Ok((ptrs, bytes))
    }

    /// The byte range of `r` for an op that honours the pipeline iteration
    /// (SEMANTICS.md §3.5): cut by the thread block group, then by the
    /// iteration when inside a pipeline.
    fn range(&mut self, op: &Op, r: &BufRef, place: Place) -> Res<Range> {
        let mut range = self.unpipelined_range(op, r)?;
        if let Some((_, unit)) = place.body {
            range.start = format!("{} + off", range.start);
            range.bytes = format!("mscl_unit({}, off, {unit})", range.bytes);
        }
        Ok(range)
    }

    /// The byte range of `r`: its chunks, cut by the op's thread block group.
    fn unpipelined_range(&mut self, op: &Op, r: &BufRef) -> Res<Range> {
        let bases = self.bases(op, r)?;
        let index = self.param(r.index as u64);
        let size = self.param(r.size as u64);
        let mut start = format!("{index} * B");
        let mut bytes = format!("{size} * B");
        if let Some(tbg) = op.tbg {
            let (j, g) = (self.param(tbg.tb_id as u64), self.param(tbg.size as u64));
            start = format!("{start} + mscl_tbg_start({bytes}, {j}, {g})");
            bytes = format!("mscl_tbg_size({bytes}, {j}, {g})");
        }
        Ok(Range {
            bases,
            start,
            bytes,
        })
    }

    /// The buffers `r` names.
    fn bases(&mut self, op: &Op, r: &BufRef) -> Res<Vec<String>> {
        let macro_of = |kind: BufferKind| match kind {
            BufferKind::Input => "MSCL_IN",
            BufferKind::Output => "MSCL_OUT",
            BufferKind::Scratch => "MSCL_SCR",
        };
        let owners: Vec<(u32, BufferKind)> = match r.target {
            RefTarget::Local(kind) => vec![(self.rank, kind)],
            RefTarget::Remote { id, kind } => {
                let via = channel_kind(op)?;
                let owner = self
                    .tb
                    .remote_buffer_ids(via)
                    .get(id as usize)
                    .and_then(|rid| self.rank_plan.remote_buffers.get(*rid as usize))
                    .ok_or_else(|| {
                        no_cuda_form(op, format!(
                            "rank {} refers to remote buffer {id} that its thread block does not list",
                            self.rank
                        ))
                    })?;
                vec![(owner.rank, kind)]
            }
            RefTarget::Switch { id } => {
                let switch = self
                    .tb
                    .channel_ids(ChannelKind::Switch)
                    .get(id as usize)
                    .and_then(|g| self.rank_plan.switch_channels.get(*g as usize))
                    .ok_or_else(|| {
                        no_cuda_form(
                            op,
                            format!(
                            "rank {} uses switch channel {id} that its thread block does not list",
                            self.rank
                        ),
                        )
                    })?;
                switch.ranks.iter().map(|m| (*m, switch.buffer)).collect()
            }
        };
        Ok(owners
            .into_iter()
            .map(|(rank, kind)| format!("{}({})", macro_of(kind), self.param(rank as u64)))
            .collect())
    }
}

fn is_port(op: &Op) -> bool {
    op.channel == Some(ChannelKind::Port)
}

/// The prelude's reduction for an op's `reduce_op` (a sum when it names
/// none), over the run's element type: the code follows the plan's intent,
/// where today's executor always sums (W0503).
fn reduction(op: &Op) -> &'static str {
    match op.reduce_op.unwrap_or(ReduceOp::Sum) {
        ReduceOp::Sum => "mscl_sum<mscl_T>",
        ReduceOp::Min => "mscl_min<mscl_T>",
        ReduceOp::Max => "mscl_max<mscl_T>",
    }
}

fn channel_kind(op: &Op) -> Res<ChannelKind> {
    match op.channel {
        Some(kind @ (ChannelKind::Memory | ChannelKind::Port)) => Ok(kind),
        _ => Err(no_cuda_form(
            op,
            format!("a {} op needs a memory or port channel", op.name.json()),
        )),
    }
}
