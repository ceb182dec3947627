//! The MSCCL++ executor's fixed limits, checked on the finished plan.
//!
//! The executor copies each thread block's ops and channel tables into
//! fixed-size arrays: it refuses a block of more than 64 ops at load time
//! and silently corrupts memory past the other bounds. It also refuses an
//! op it does not know: a switch reduce that no broadcast follows (`glre`),
//! which the reference compiler emits all the same. A plan that crosses
//! one compiles fine and fails on the cluster, so compile and `check`
//! report each crossing as a warning at the program line that made the op
//! or channel, with the loop values then, and `msclc sim` lists them too.
//! One warning per limit and program line: at 128 ranks the same line
//! crosses a limit on every rank. One more bound is the plan's: the
//! executor reads `min_message_size` into a 32-bit int, and a negative
//! `max_message_size` as a number near 2^64.

use crate::diag::{Code, Diagnostic, Span};
use crate::ir::{BufferKind, ChannelKind, Op, OpName, Origin, Plan, Protocol, RefTarget};
use std::collections::HashMap;

/// Ops a thread block may run, pipeline bodies included (`MAX_OPERATION`).
pub const MAX_OPS_PER_BLOCK: usize = 64;
/// Channels of one kind a thread block may use (`MAX_CHANNEL`).
pub const MAX_CHANNELS_PER_BLOCK: usize = 16;
/// Peers' buffers one thread block may reach through one kind of channel.
pub const MAX_REMOTE_BUFFERS_PER_BLOCK: usize = 16;
/// Channels one op may name (`MAX_CHANNEL_PER_OPERATION`).
pub const MAX_CHANNELS_PER_OP: usize = 8;
/// Source or destination buffers one op may name
/// (`MAX_LOCAL_BUFFER_PER_OPERATION + MAX_CHANNEL_PER_OPERATION`).
pub const MAX_BUFFERS_PER_OP: usize = 10;
/// Semaphores one op may name (`MAX_DEVICE_SEMAPHORES`).
pub const MAX_SEMAPHORES_PER_OP: usize = 16;
/// Barrier ids a rank may use: the executor has this many barrier
/// counters per GPU (`MAX_DEVICE_SYNCERS`), and indexes them unchecked.
pub const MAX_BARRIERS_PER_RANK: usize = crate::ir::EXECUTOR_BARRIERS;
/// Bytes in a pipeline's unit: the executor keeps `unit_size` in 32 bits.
pub const MAX_PIPELINE_UNIT_BYTES: usize = u32::MAX as usize;

/// Which limit a plan crosses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Limit {
    OpsPerBlock,
    ChannelsPerBlock(ChannelKind),
    RemoteBuffersPerBlock(ChannelKind),
    ChannelsPerOp,
    SourcesPerOp,
    DestinationsPerOp,
    SemaphoresPerOp,
    PipelineUnitBytes,
    /// A rank's, not a block's: its distinct sets of blocks that meet at a
    /// barrier, each with an id.
    BarriersPerRank,
    /// Not a bound: an op the executor does not know (`glre`): a switch
    /// reduce no broadcast follows, or, with fusion off, any.
    UnfusedSwitchReduce {
        fusion_off: bool,
    },
}

/// One limit crossed at one program line, on every block where it is.
#[derive(Debug, Clone)]
pub struct Crossing {
    pub limit: Limit,
    /// The op or channel that crosses it, where it was made (the first
    /// block's, when several do).
    pub origin: Origin,
    /// The first block where it is crossed, and how far.
    pub rank: u32,
    pub tb: u32,
    pub count: usize,
    /// How many thread blocks cross it at this line.
    pub blocks: usize,
    /// The first block's op that crosses it, by its place among the
    /// block's ops with their pipelines' bodies (as the executor counts
    /// them): what a plan read from JSON, with no program line to show,
    /// points at. `None` for a channel the program made.
    pub op: Option<usize>,
}

impl Crossing {
    /// What was crossed, in one sentence that stands without a source.
    pub fn text(&self) -> String {
        if self.limit == Limit::BarriersPerRank {
            let others = match self.blocks {
                1 => String::new(),
                n => format!(" (and {} more rank(s))", n - 1),
            };
            return format!(
                "rank {}{others} has {} barrier ids, one per set of thread blocks that meet at a barrier; the MSCCL++ executor has {MAX_BARRIERS_PER_RANK} barrier counters per GPU",
                self.rank, self.count
            );
        }
        let place = format!("rank {} thread block {}", self.rank, self.tb);
        let others = match self.blocks {
            1 => String::new(),
            n => format!(" (and {} more thread block(s))", n - 1),
        };
        match self.bound() {
            Some((what, max)) => format!(
                "{place}{others} has {} {what}; the MSCCL++ executor allows at most {max}",
                self.count
            ),
            None => {
                let why = match self.limit {
                    Limit::UnfusedSwitchReduce { fusion_off: true } => {
                        "left unfused by `instr_fusion = false`"
                    }
                    _ => "that no broadcast follows",
                };
                format!(
                    "{place}{others} has a switch reduce {why} (`glre` in the plan), an op the MSCCL++ executor does not run: it refuses the plan"
                )
            }
        }
    }

    /// What the limit counts, and the most the executor holds; `None` for
    /// an op it does not know at all.
    fn bound(&self) -> Option<(String, usize)> {
        Some(match self.limit {
            Limit::OpsPerBlock => ("ops".into(), MAX_OPS_PER_BLOCK),
            Limit::ChannelsPerBlock(kind) => {
                (format!("{} channels", kind.name()), MAX_CHANNELS_PER_BLOCK)
            }
            Limit::RemoteBuffersPerBlock(kind) => (
                format!("peer buffers reached through {} channels", kind.name()),
                MAX_REMOTE_BUFFERS_PER_BLOCK,
            ),
            Limit::ChannelsPerOp => ("channels in one op".into(), MAX_CHANNELS_PER_OP),
            Limit::SourcesPerOp => ("sources in one op".into(), MAX_BUFFERS_PER_OP),
            Limit::DestinationsPerOp => ("destinations in one op".into(), MAX_BUFFERS_PER_OP),
            Limit::SemaphoresPerOp => ("semaphores in one op".into(), MAX_SEMAPHORES_PER_OP),
            Limit::PipelineUnitBytes => {
                ("bytes in a pipeline's unit".into(), MAX_PIPELINE_UNIT_BYTES)
            }
            Limit::BarriersPerRank => ("barrier ids on a rank".into(), MAX_BARRIERS_PER_RANK),
            Limit::UnfusedSwitchReduce { .. } => return None,
        })
    }

    /// The warning's code: a bound crossed, or an op the executor does not
    /// know. Either way the executor does not run the plan as meant.
    pub fn code(&self) -> Code {
        match self.limit {
            Limit::UnfusedSwitchReduce { .. } => Code::UnknownOp,
            _ => Code::ExecutorLimit,
        }
    }

    /// The warning at the program line, with the loop values then.
    pub fn diagnostic(&self, plan: &Plan) -> Diagnostic {
        let label = match self.limit {
            Limit::OpsPerBlock => format!(
                "op {} of rank {}'s thread block {}",
                MAX_OPS_PER_BLOCK + 1,
                self.rank,
                self.tb
            ),
            Limit::ChannelsPerBlock(kind) => format!(
                "{} channel {} of rank {}'s thread block {}",
                kind.name(),
                MAX_CHANNELS_PER_BLOCK + 1,
                self.rank,
                self.tb
            ),
            Limit::BarriersPerRank => format!(
                "barrier id {} of rank {}, on its thread block {}",
                MAX_BARRIERS_PER_RANK, self.rank, self.tb
            ),
            Limit::PipelineUnitBytes => {
                format!(
                    "this pipeline, on rank {} thread block {}",
                    self.rank, self.tb
                )
            }
            _ => format!("this op, on rank {} thread block {}", self.rank, self.tb),
        };
        // A plan read from JSON has no program lines: its place in the plan.
        let from_json = plan.collective_at.is_none();
        let mut d = match from_json {
            false => Diagnostic::warning(self.code(), self.origin.span, self.text(), label),
            true => Diagnostic::plain(self.code(), self.text()).as_warning(),
        };
        if let Some(path) = self
            .op
            .filter(|_| from_json)
            .and_then(|k| self.json_path(plan, k))
        {
            d = d.with_note(format!("at {path}"));
        }
        d = plan.in_context(d, self.origin.context);
        if let Some((what, max)) = self.bound() {
            d = d.with_note(format!("the limit is {max} {what}"));
        }
        let help = match self.limit {
            Limit::OpsPerBlock => {
                "help: spread the ops over more thread blocks (`tb:`); the executor refuses the plan when it loads it"
            }
            Limit::ChannelsPerBlock(_) | Limit::RemoteBuffersPerBlock(_) => {
                "help: let fewer peers share a thread block; the executor's channel table holds 16 per kind, and one more overwrites memory"
            }
            Limit::BarriersPerRank => {
                "help: let fewer distinct sets of thread blocks meet at barriers on a rank (a barrier of the same blocks again keeps its id); past the 16th, the executor counts arrivals in memory that is not a barrier counter"
            }
            Limit::PipelineUnitBytes => {
                "help: use a unit_size below 4 GiB: the executor keeps only its low 32 bits, so the pipeline runs in other units than the plan says, and a multiple of 4 GiB becomes 0, which the executor divides the message by"
            }
            Limit::UnfusedSwitchReduce { fusion_off: true } => {
                "help: let the program fuse ops (`instr_fusion = true`): a switch reduce followed in the same thread block by a `broadcast` of its `dst_chunk` to the same range of the same switch channel becomes one op (`glres`), which the executor runs"
            }
            Limit::UnfusedSwitchReduce { fusion_off: false } => {
                "help: follow the reduce in the same thread block by a `broadcast` of its `dst_chunk` to the same range of the same switch channel: the two fuse into one op (`glres`), which the executor runs"
            }
            _ if from_json => "help: split the op in the program that made the plan (where fusion merged ops into it, the program's `instr_fusion = false` keeps them apart)",
            _ => "help: split the op (fusion merged these ops: `instr_fusion = false` keeps them apart)",
        };
        d.with_note(help)
    }

    /// The JSON path of the first block's `flat`-th op (pipeline bodies
    /// counted after their pipeline, as the executor counts them).
    fn json_path(&self, plan: &Plan, flat: usize) -> Option<String> {
        let tb = plan
            .ranks
            .get(self.rank as usize)?
            .threadblocks
            .get(self.tb as usize)?;
        let mut places = tb.ops.iter().enumerate().flat_map(|(k, op)| {
            std::iter::once(format!("ops[{k}]"))
                .chain((0..op.body().len()).map(move |j| format!("ops[{k}].ops[{j}]")))
        });
        let place = places.nth(flat)?;
        Some(format!(
            "gpus[{}].threadblocks[{}].{place}",
            self.rank, self.tb
        ))
    }
}

/// Every limit `plan` crosses, one per limit and program line, in plan order.
pub fn check(plan: &Plan) -> Vec<Crossing> {
    let mut found: Vec<Crossing> = Vec::new();
    // Each crossing's index in `found`, and the last block counted in it
    // (a block's ops come together: several there count the block once).
    let mut at: HashMap<(Limit, Span), (usize, (u32, u32))> = HashMap::new();
    let mut cross = |limit, (origin, op): (Origin, Option<usize>), rank, tb, count| {
        let key = (limit, origin.span);
        match at.get_mut(&key) {
            Some((i, last)) => {
                if *last != (rank, tb) {
                    *last = (rank, tb);
                    found[*i].blocks += 1;
                }
            }
            None => {
                at.insert(key, (found.len(), (rank, tb)));
                found.push(Crossing {
                    limit,
                    origin,
                    rank,
                    tb,
                    count,
                    blocks: 1,
                    op,
                });
            }
        }
    };
    // The op's origin, and its place in its block.
    let origin_of = |op: &Op, flat: usize| {
        let origin = Origin {
            span: op.span,
            context: op.context,
        };
        (origin, Some(flat))
    };
    for (r, rank) in plan.ranks.iter().enumerate() {
        let r = r as u32;
        // The rank's barrier ids, numbered from 0 in the order their sets
        // first meet, and the first op with the id one past the
        // executor's counters, where the rank crosses the bound.
        let mut barrier_ids = 0;
        let mut first_past: Option<(u32, (Origin, Option<usize>))> = None;
        for (t, tb) in rank.threadblocks.iter().enumerate() {
            let t = t as u32;
            let ops: Vec<&Op> = tb.ops_with_bodies().map(|(op, _)| op).collect();
            if ops.len() > MAX_OPS_PER_BLOCK {
                let first_over = origin_of(ops[MAX_OPS_PER_BLOCK], MAX_OPS_PER_BLOCK);
                cross(Limit::OpsPerBlock, first_over, r, t, ops.len());
            }
            for (kind, ids) in &tb.channels {
                if ids.len() > MAX_CHANNELS_PER_BLOCK {
                    let channel = ids[MAX_CHANNELS_PER_BLOCK];
                    // The channel's `memory_channel(..)` call; for a
                    // switch channel (or a plan read from JSON), the first
                    // op that uses it.
                    let origin = plan
                        .channel_origin(r, *kind, channel)
                        .filter(|_| *kind != ChannelKind::Switch)
                        .map(|origin| (origin, None))
                        .or_else(|| {
                            ops.iter()
                                .position(|op| {
                                    op.channel == Some(*kind)
                                        && op.channel_ids.contains(&(MAX_CHANNELS_PER_BLOCK as u32))
                                })
                                .map(|k| origin_of(ops[k], k))
                        })
                        .unwrap_or_default();
                    cross(Limit::ChannelsPerBlock(*kind), origin, r, t, ids.len());
                }
            }
            for (kind, ids) in &tb.remote_refs {
                if ids.len() > MAX_REMOTE_BUFFERS_PER_BLOCK {
                    let over = MAX_REMOTE_BUFFERS_PER_BLOCK as u32;
                    let origin = ops
                        .iter()
                        .position(|op| {
                            op.channel == Some(*kind)
                                && op.src.iter().chain(&op.dst).any(|b| {
                                    matches!(b.target, RefTarget::Remote { id, .. } if id == over)
                                })
                        })
                        .map(|k| origin_of(ops[k], k))
                        .unwrap_or_default();
                    cross(Limit::RemoteBuffersPerBlock(*kind), origin, r, t, ids.len());
                }
            }
            for (k, &op) in ops.iter().enumerate() {
                if let Some((id, _)) = op.barrier {
                    barrier_ids = barrier_ids.max(id as usize + 1);
                    if id as usize >= MAX_BARRIERS_PER_RANK && first_past.is_none() {
                        first_past = Some((t, origin_of(op, k)));
                    }
                }
                let unit = op.iter_context().map_or(0, |it| it.unit_size);
                if unit > MAX_PIPELINE_UNIT_BYTES as u64 {
                    let count = usize::try_from(unit).unwrap_or(usize::MAX);
                    cross(Limit::PipelineUnitBytes, origin_of(op, k), r, t, count);
                }
                if op.name == OpName::GroupLoadReduce {
                    let fusion_off = !plan.options.instr_fusion;
                    cross(
                        Limit::UnfusedSwitchReduce { fusion_off },
                        origin_of(op, k),
                        r,
                        t,
                        1,
                    );
                }
                let per_op = [
                    (
                        Limit::ChannelsPerOp,
                        executor_channels(op),
                        MAX_CHANNELS_PER_OP,
                    ),
                    (Limit::SourcesPerOp, op.src.len(), MAX_BUFFERS_PER_OP),
                    (Limit::DestinationsPerOp, op.dst.len(), MAX_BUFFERS_PER_OP),
                    (
                        Limit::SemaphoresPerOp,
                        op.semaphore_ids().len(),
                        MAX_SEMAPHORES_PER_OP,
                    ),
                ];
                for (limit, count, max) in per_op {
                    if count > max {
                        cross(limit, origin_of(op, k), r, t, count);
                    }
                }
            }
        }
        if let Some((t, origin)) = first_past {
            cross(Limit::BarriersPerRank, origin, r, t, barrier_ids);
        }
    }
    found
}

/// The largest `min_message_size` the executor reads as written. It reads
/// the option with `obj.value("min_message_size", 0)`, whose default is a
/// C++ `int`, so the value becomes an `int` (its low 32 bits, signed)
/// before it is widened to the `size_t` it checks sizes against.
pub const MAX_MIN_MESSAGE_SIZE: u64 = i32::MAX as u64;

/// What the executor takes a written `min_message_size` to be
/// ([`MAX_MIN_MESSAGE_SIZE`]): a negative one too becomes a `size_t`.
pub fn min_message_size_as_read(written: i128) -> u64 {
    written as u32 as i32 as i64 as u64
}

/// What the executor takes a written `max_message_size` to be: it reads a
/// `uint64_t`, which keeps a negative number's 64-bit pattern.
pub fn max_message_size_as_read(written: i128) -> u64 {
    written as u64
}

/// A warning when the executor reads the plan's `min_message_size` as
/// another number than the plan says: it then runs the plan at sizes the
/// plan is not for, or at none.
pub fn misread_min_message_size(plan: &Plan) -> Option<Diagnostic> {
    let written = plan.options.min_message_size;
    let read = min_message_size_as_read(written);
    let max = max_message_size_as_read(plan.options.max_message_size);
    if i128::from(read) == written {
        return None;
    }
    let effect = if read > max {
        format!("above max_message_size ({max}): the executor refuses the plan at every size")
    } else if i128::from(read) > written {
        format!("so the executor refuses messages below {read} bytes, not below {written}")
    } else {
        format!("so the executor runs the plan for messages from {read} bytes, not {written}")
    };
    let message = if written < 0 {
        format!(
            "min_message_size is {written}, which the MSCCL++ executor compares sizes with as the unsigned 64-bit {read}, {effect}"
        )
    } else {
        format!(
            "min_message_size is {written}, more than the MSCCL++ executor reads: it keeps the option in a 32-bit int, which makes it {read}, {effect}"
        )
    };
    let label = format!("the executor reads this as {read}");
    let warning = warning_at(plan.min_message_size_at, message, label);
    Some(warning.with_note(format!(
        "help: keep min_message_size between 0 and {MAX_MIN_MESSAGE_SIZE} (2 GiB less a byte); max_message_size is read whole"
    )))
}

/// A warning when `max_message_size` is negative: the executor reads its
/// 64-bit pattern, a size near 2^64, so the plan has no upper bound.
pub fn misread_max_message_size(plan: &Plan) -> Option<Diagnostic> {
    let written = plan.options.max_message_size;
    if written >= 0 {
        return None;
    }
    let read = max_message_size_as_read(written);
    let message = format!(
        "max_message_size is {written}, which the MSCCL++ executor reads as the unsigned 64-bit {read}: the plan runs at every size from min_message_size up"
    );
    let label = format!("the executor reads this as {read}");
    Some(
        warning_at(plan.max_message_size_at, message, label)
            .with_note("help: give the largest message size the plan is for, in bytes (the default, 18446744073709551615, is every size)"),
    )
}

/// The initial values at which the executor's semaphores count as
/// msclc's do: it keeps each semaphore's `init_value` in a C++ `int`
/// (the low 32 bits of a larger number, signed), and its acquire, finding
/// the value at or below 0, waits for it to come back to what it found,
/// which is one release however far below 0 it is: below 0 its semaphore
/// does not count.
pub const SEMAPHORE_VALUES: std::ops::RangeInclusive<i64> = 0..=i32::MAX as i64;

/// Warnings for semaphores that start outside [`SEMAPHORE_VALUES`]: the
/// executor then lets acquires pass after other numbers of releases than
/// the plan says, and the plan hangs or runs ahead of its data. It
/// miscounts them two ways, a value past 32 bits cut to another and a
/// value below 0 that does not count: each said once, at the first such
/// semaphore, with how many more there are.
pub fn miscounted_semaphores(plan: &Plan) -> Vec<Diagnostic> {
    let outside = || {
        plan.ranks.iter().enumerate().flat_map(|(r, rank)| {
            let values = rank.semaphores.iter().enumerate();
            values
                .filter(|(_, v)| !SEMAPHORE_VALUES.contains(v))
                .map(move |(id, v)| (r, id, *v))
        })
    };
    let cut = |written: i64| i64::from(written as i32) != written;
    [true, false]
        .into_iter()
        .filter_map(|cut_ones| {
            let mut these = outside().filter(|&(_, _, written)| cut(written) == cut_ones);
            let (rank, id, written) = these.next()?;
            Some(miscounted_semaphore(
                plan,
                (rank, id, written),
                these.count(),
            ))
        })
        .collect()
}

/// The warning for semaphore `id` of `rank`, which starts at `written`
/// outside [`SEMAPHORE_VALUES`], and `more` semaphores like it.
fn miscounted_semaphore(
    plan: &Plan,
    (rank, id, written): (usize, usize, i64),
    more: usize,
) -> Diagnostic {
    let more = match more {
        0 => String::new(),
        n => format!(" (and {n} more semaphore(s))"),
    };
    // Before replication, ids are one instance's: the plan numbers the
    // first copy so.
    let plan_id = if plan.instances_made {
        id as u32
    } else {
        super::replicate::first_copy(plan, id as u32)
    };
    let read = written as i32;
    let (why, label) = if i64::from(read) != written {
        (
            format!("which the MSCCL++ executor reads as {read}: it keeps a semaphore's init_value in a 32-bit int"),
            format!("the executor starts this semaphore at {read}"),
        )
    } else {
        (
            "below 0, where the MSCCL++ executor's semaphore does not count: an acquire that finds the value at or below 0 waits for it to come back to what it found, which is one release however far below 0 it is".to_string(),
            "on the executor, an acquire of this passes at the next release".to_string(),
        )
    };
    let message = format!("semaphore {plan_id} of rank {rank}{more} starts at {written}, {why}");
    let origin = plan.ranks[rank].semaphore_origins.get(id);
    let mut warning = warning_at(origin.map(|o| o.span), message, label);
    if let Some(o) = origin {
        warning = plan.in_context(warning, o.context);
    }
    warning.with_note(format!(
        "help: start semaphores between {} and {}, where the executor's count as msclc simulates them: an acquire passes once the initial value and the releases before it exceed the acquires before it",
        SEMAPHORE_VALUES.start(),
        SEMAPHORE_VALUES.end()
    ))
}

/// The values of a plan the executor reads as other numbers than the
/// plan's (`min_message_size`, semaphores' initial values), and a scratch
/// buffer it allocates too small for the plan's packets, as warnings:
/// what compiling and `msclc sim` both say after the limits crossed.
pub fn misread_values(plan: &Plan) -> impl Iterator<Item = Diagnostic> {
    misread_min_message_size(plan)
        .into_iter()
        .chain(misread_max_message_size(plan))
        .chain(empty_size_range(plan))
        .chain(miscounted_semaphores(plan))
        .chain(packets_past_scratch(plan))
}

/// A W0502 warning when a `Simple` plan's packets run past the end of a
/// scratch buffer: packets take twice their data's bytes (the data of
/// chunk `c` at chunk `2c`), and the executor doubles a plan's scratch
/// for `protocol = LL` only. Said once, at the first op whose packets do,
/// with how many more there are.
pub fn packets_past_scratch(plan: &Plan) -> Option<Diagnostic> {
    if plan.options.protocol == Protocol::LL {
        return None;
    }
    let mut past = plan.ranks.iter().enumerate().flat_map(|(r, rank)| {
        rank.threadblocks.iter().flat_map(move |tb| {
            tb.ops_with_bodies().filter_map(move |(op, _)| {
                let mut packets = op.packet_sources().iter().chain(op.packet_destinations());
                packets.find_map(|at| {
                    let (owner, chunks) = scratch_of(plan, r, tb, op, at)?;
                    let end = 2 * (u64::from(at.index) + u64::from(at.size));
                    (end > u64::from(chunks)).then_some((op, owner, chunks, at, end))
                })
            })
        })
    });
    let (op, owner, chunks, at, end) = past.next()?;
    let more = match past.count() {
        0 => String::new(),
        n => format!(" (and {n} more op(s))"),
    };
    let message = format!(
        "the packets of rank {owner}'s scratch chunks {}..{} lie at its chunks {}..{end}, past the end of its scratch buffer: {chunks} chunk(s), a Simple plan's scratch not doubled for packets{more}",
        at.index,
        at.index + at.size,
        2 * at.index
    );
    let label = format!("packets past the end of rank {owner}'s scratch");
    let warning = plan.in_context(warning_at(Some(op.span), message, label), op.context);
    Some(warning.with_note("help: a packet takes twice its data's bytes, and the MSCCL++ executor doubles the scratch buffer for `protocol = LL` only: give a program of packet ops `protocol = LL`"))
}

/// The rank whose scratch buffer `at`, a ref of `op` on rank `r`'s block
/// `tb`, names, and that buffer's chunks; `None` where it names another
/// buffer.
fn scratch_of(
    plan: &Plan,
    r: usize,
    tb: &crate::ir::ThreadBlock,
    op: &Op,
    at: &crate::ir::BufRef,
) -> Option<(usize, u32)> {
    let owner = match at.target {
        RefTarget::Local(BufferKind::Scratch) => r,
        RefTarget::Remote {
            id,
            kind: BufferKind::Scratch,
        } => {
            let (_, ids) = tb
                .remote_refs
                .iter()
                .find(|(k, _)| Some(*k) == op.channel)?;
            let buffer = plan.ranks[r]
                .remote_buffers
                .get(*ids.get(id as usize)? as usize)?;
            buffer.rank as usize
        }
        _ => return None,
    };
    Some((owner, plan.ranks.get(owner)?.scratch_chunks))
}

/// A W0508 warning when the executor would pick the plan for no message
/// size: the `min_message_size` it reads above the `max_message_size` it
/// reads (the two swapped, most often).
pub fn empty_size_range(plan: &Plan) -> Option<Diagnostic> {
    let (min, max) = (plan.options.min_message_size, plan.options.max_message_size);
    // Values the executor reads as others have their own warning (W0502).
    let read_as_written = min_message_size_as_read(min) as i128 == min
        && max_message_size_as_read(max) as i128 == max;
    if !read_as_written || min <= max {
        return None;
    }
    let message = format!(
        "min_message_size {min} is above max_message_size {max}: the MSCCL++ executor picks this plan for no message size"
    );
    let label = format!("above max_message_size, {max}");
    let warning = match plan.min_message_size_at {
        Some(span) => Diagnostic::warning(Code::EmptySizeRange, span, message, label),
        None => Diagnostic::plain(Code::EmptySizeRange, message).as_warning(),
    };
    Some(warning.with_note("help: the plan runs at sizes from min_message_size to max_message_size: make min the smaller (swapped?)"))
}

/// A W0502 warning at `span` with `label`, or, for a plan read from JSON
/// (no span), one that stands without a place.
fn warning_at(span: Option<Span>, message: String, label: String) -> Diagnostic {
    match span {
        Some(span) => Diagnostic::warning(Code::ExecutorLimit, span, message, label),
        None => Diagnostic::plain(Code::ExecutorLimit, message).as_warning(),
    }
}

/// The channel ids the executor reads for `op` (memory-channel data ops
/// reach peers by remote buffer: their channels are not listed).
fn executor_channels(op: &Op) -> usize {
    if op.writes_channel_ids() {
        op.channel_ids.len()
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The executor's reading of `min_message_size`: an `int` widened to
    /// a `size_t`.
    #[test]
    fn min_message_size_is_read_as_a_signed_32_bit_int() {
        for (written, read) in [
            (0, 0),
            (MAX_MIN_MESSAGE_SIZE.into(), MAX_MIN_MESSAGE_SIZE),
            (1 << 31, 0xffff_ffff_8000_0000),
            (1 << 32, 0),
            ((1 << 32) + 5, 5),
            (u64::MAX.into(), u64::MAX),
            (-5, u64::MAX - 4),
        ] {
            assert_eq!(min_message_size_as_read(written), read, "{written}");
        }
    }
}
