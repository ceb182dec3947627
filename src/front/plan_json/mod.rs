//! Reads an MSCCL++ JSON execution plan into the plan IR. Every problem is
//! reported with the JSON path of the value that is wrong
//! (`gpus[1].threadblocks[0].ops[3].src_buff[0].type`), since a plan has no
//! source lines to point at.

use crate::ir::*;

/// A problem with a plan: where in the document, and what.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanError {
    pub path: String,
    pub message: String,
}

impl std::fmt::Display for PlanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "at {}: {}", self.path, self.message)
        }
    }
}

impl PlanError {
    /// The problem as a diagnostic: the JSON path is its place.
    pub fn diagnostic(&self) -> crate::diag::Diagnostic {
        let d = crate::diag::Diagnostic::plain(crate::diag::Code::PlanFile, &self.message);
        match self.path.is_empty() {
            true => d,
            false => d.with_note(format!("at {}", self.path)),
        }
    }
}

type Res<T> = Result<T, PlanError>;

/// Parses `text` as a plan.
///
/// The document is read rank by rank: each element of `gpus` becomes a
/// JSON value, is read into the IR and dropped before the next is parsed,
/// so that a plan of a million thread blocks does not exist twice, once as
/// a tree of JSON values (ten times the text) and once as the IR. Problems
/// are reported as if the whole document had been parsed first: a syntax
/// error anywhere before any other problem, the top-level fields in order,
/// then the first rank's problem.
pub fn read_plan(text: &str) -> Res<Plan> {
    // A byte-order mark some editors write, which the executor's JSON
    // reader skips.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let not_json = |e: serde_json::Error| PlanError {
        path: String::new(),
        message: format!("not JSON: {e}"),
    };
    let mut de = serde_json::Deserializer::from_str(text);
    let doc = serde::Deserializer::deserialize_any(&mut de, stream::Top).map_err(not_json)?;
    de.end().map_err(not_json)?;
    let root = At::root(&doc.top);
    let plan = plan(&root, || match doc.gpus {
        stream::Gpus::Missing => root.key("gpus").map(|_| Vec::new()),
        stream::Gpus::NotList => At::top_level("gpus").fail("expected a list"),
        stream::Gpus::Ranks(ranks) => Ok(ranks),
        stream::Gpus::Failed(e) => Err(e),
    })?;
    check_ranks(&plan)?;
    check_ranges(&plan)?;
    Ok(plan)
}

/// Parses `text` as a plan the plain way, the whole document first: what
/// [`read_plan`] must agree with.
#[cfg(test)]
fn read_plan_whole(text: &str) -> Res<Plan> {
    let doc: json::Json = serde_json::from_str(text).map_err(|e| PlanError {
        path: String::new(),
        message: format!("not JSON: {e}"),
    })?;
    let root = At::root(&doc);
    let plan = plan(&root, || {
        let gpus_at = root.key("gpus")?;
        let gpus = gpus_at.items()?;
        let mut ranks = Vec::with_capacity(gpus.len());
        for (i, gpu) in gpus.iter().enumerate() {
            ranks.push(gpu_rank(gpu, i)?);
        }
        Ok(ranks)
    })?;
    check_ranks(&plan)?;
    check_ranges(&plan)?;
    Ok(plan)
}

mod json;

mod at;
mod barriers;
mod stream;
mod validate;

use at::{At, Step};
use barriers::Barriers;
use validate::{check_ranges, check_ranks};

const BUFFER_KINDS: [(&str, BufferKind); 3] = [
    ("i", BufferKind::Input),
    ("o", BufferKind::Output),
    ("s", BufferKind::Scratch),
];
const CHANNEL_KINDS: [(&str, ChannelKind); 3] = [
    ("memory", ChannelKind::Memory),
    ("port", ChannelKind::Port),
    ("switch", ChannelKind::Switch),
];
const REDUCE_OPS: [(&str, ReduceOp); 3] = [
    ("sum", ReduceOp::Sum),
    ("min", ReduceOp::Min),
    ("max", ReduceOp::Max),
];
const COLLECTIVES: [&str; 6] = [
    "allgather",
    "allreduce",
    "reducescatter",
    "alltoall",
    "sendrecv",
    "test",
];

/// A problem with the ranks as a whole (read as they stream by, `gpus` is
/// no longer in the document's top level to point at).
fn gpus_fail<T>(message: String) -> Res<T> {
    Err(PlanError {
        path: "gpus".into(),
        message,
    })
}

/// The plan, its ranks read by `gpus` where the top-level field `gpus` is
/// read (so that problems come in document order).
fn plan(doc: &At, gpus: impl FnOnce() -> Res<Vec<RankPlan>>) -> Res<Plan> {
    let collective_at = doc.key("collective")?;
    let name = collective_at.str()?;
    let Some(collective_name) = COLLECTIVES.iter().find(|c| **c == name) else {
        return collective_at.fail(format!(
            "unknown collective \"{}\" (expected one of: {})",
            crate::diag::escaped(name),
            COLLECTIVES.join(", ")
        ));
    };
    let protocol = doc.key("protocol")?.one_of(
        "protocol",
        &[("Simple", Protocol::Simple), ("LL", Protocol::LL)],
    )?;
    // The executor reads these with defaults (SEMANTICS.md §2.1).
    let default = Options::default();
    let options = Options {
        protocol,
        reuse_resources: doc.opt_or("reuse_resources", default.reuse_resources, |at| at.bool())?,
        use_double_scratch_buffer: doc.opt_or(
            "use_double_scratch_buffer",
            default.use_double_scratch_buffer,
            |at| at.bool(),
        )?,
        num_threads_per_block: doc.opt_or(
            "num_threads_per_block",
            default.num_threads_per_block,
            |at| {
                at.u32_in(
                    1..=1024,
                    "threads per block (the kernel is compiled for at most 1024)",
                )
            },
        )?,
        buffer_alignment: doc.opt_or("buffer_alignment", default.buffer_alignment, |at| {
            at.u32_in(1..=u32::MAX, "bytes of alignment")
        })?,
        min_message_size: doc.opt_or("min_message_size", default.min_message_size, |at| {
            at.wide_int()
        })?,
        max_message_size: doc.opt_or("max_message_size", default.max_message_size, |at| {
            at.wide_int()
        })?,
        ..default
    };
    let ranks = gpus()?;
    if ranks.is_empty() {
        return gpus_fail("a plan runs on at least one gpu; this list is empty".into());
    }
    let first = ranks.first();
    let collective = Collective {
        name: collective_name,
        num_ranks: ranks.len() as u32,
        chunk_factor: 1,
        inplace: doc.key("inplace")?.bool()?,
        input_chunks: first.map_or(0, |r| r.input_chunks),
        output_chunks: first.map_or(0, |r| r.output_chunks),
    };
    // What the collective's result is defined from (`Plan::expected_result`),
    // the buffers the reference's collectives make: an AllGather gathers
    // each rank's input, an AllToAll splits it in one part per rank.
    let (ins, outs, n) = (
        u64::from(collective.input_chunks),
        u64::from(collective.output_chunks),
        u64::from(collective.num_ranks),
    );
    let (fits, shape) = match *collective_name {
        "allgather" => (
            ins > 0 && outs == ins * n,
            "input chunks, and the ranks times as many output chunks",
        ),
        "reducescatter" => (
            outs > 0 && ins == outs * n,
            "output chunks, and the ranks times as many input chunks",
        ),
        "alltoall" => (
            ins > 0 && ins % n == 0 && outs == ins,
            "input chunks, a multiple of the ranks, and as many output chunks",
        ),
        "allreduce" | "sendrecv" => (outs == ins, "as many output chunks as input chunks"),
        _ => (true, ""),
    };
    if !fits {
        return gpus_fail(format!(
            "an {name} plan's ranks have {shape}: the first has {ins} input and {outs} output chunks, of {n} ranks"
        ));
    }
    Ok(Plan {
        name: doc.key("name")?.str()?.to_string(),
        collective,
        options,
        ranks,
        loops: Default::default(),
        instances_made: true,
        min_message_size_at: None,
        collective_at: None,
        max_message_size_at: None,
    })
}

/// Chunks a buffer may have: as many as the compiler allows scratch.
const MAX_CHUNKS: u32 = 1 << 24;

fn chunk_count(at: &At) -> Res<u32> {
    at.u32_in(0..=MAX_CHUNKS, "chunks")
}

/// Element `i` of `gpus`: its id must be `i`.
fn gpu_rank(gpu: &At, i: usize) -> Res<RankPlan> {
    let id = gpu.key("id")?;
    if id.u64()? != i as u64 {
        return id.fail(format!(
            "gpu ids must be 0, 1, 2, ... in order; this one should be {i}"
        ));
    }
    rank(gpu)
}

fn rank(gpu: &At) -> Res<RankPlan> {
    let mut r = RankPlan {
        input_chunks: chunk_count(&gpu.key("input_chunks")?)?,
        output_chunks: chunk_count(&gpu.key("output_chunks")?)?,
        scratch_chunks: chunk_count(&gpu.key("scratch_chunks")?)?,
        ..RankPlan::default()
    };
    for ch in gpu.key("channels")?.items()? {
        match ch
            .key("channel_type")?
            .one_of("channel type", &CHANNEL_KINDS)?
        {
            ChannelKind::Memory => r
                .memory_peers
                .extend(ch.key("connected_to")?.u32s::<Vec<u32>>()?),
            ChannelKind::Port => r
                .port_peers
                .extend(ch.key("connected_to")?.u32s::<Vec<u32>>()?),
            ChannelKind::Switch => {
                let groups_at = ch.key("rank_groups")?;
                let groups = groups_at.items()?;
                let [group] = groups.as_slice() else {
                    return ch
                        .key("rank_groups")?
                        .fail("expected exactly one rank group");
                };
                let ranks: Vec<u32> = group.key("ranks")?.u32s()?;
                r.switch_channels.push(SwitchChannelDecl {
                    buffer: ch
                        .key("buffer_type")?
                        .one_of("buffer type", &BUFFER_KINDS)?,
                    ranks: ranks.into(),
                });
            }
        }
    }
    for b in gpu.key("remote_buffers")?.items()? {
        let access_at = b.key("access_channel_types")?;
        let access = access_at.items()?;
        r.remote_buffers.push(RemoteBuffer {
            rank: b.key("rank")?.u32()?,
            kind: b.key("type")?.one_of("buffer type", &BUFFER_KINDS)?,
            access: access
                .iter()
                .map(|a| a.one_of("channel type", &CHANNEL_KINDS))
                .collect::<Res<_>>()?,
        });
    }
    if let Some(sems) = gpu.opt("semaphores") {
        for s in sems.items()? {
            r.semaphores.push(s.key("init_value")?.i64()?);
        }
    }
    let tbs_at = gpu.key("threadblocks")?;
    let tbs = tbs_at.items()?;
    r.threadblocks = vec![ThreadBlock::default(); tbs.len()];
    let mut barriers = Barriers::default();
    for (index, tb) in tbs.iter().enumerate() {
        // The executor launches the k-th block of the list as block k but
        // files its channels under its id: they must agree.
        let id = tb.key("id")?;
        if id.u64()? != index as u64 {
            return id.fail(format!(
                "thread block ids must be 0, 1, 2, ... in order; this one should be {index}"
            ));
        }
        r.threadblocks[index] = threadblock(tb, &r, &mut barriers)?;
    }
    barriers.check_ids()?;
    Ok(r)
}

fn threadblock(tb: &At, rank: &RankPlan, barriers: &mut Barriers) -> Res<ThreadBlock> {
    let mut block = ThreadBlock::default();
    for ch in tb.key("channels")?.items()? {
        let kind = ch
            .key("channel_type")?
            .one_of("channel type", &CHANNEL_KINDS)?;
        let count = match kind {
            ChannelKind::Memory => rank.memory_peers.len(),
            ChannelKind::Port => rank.port_peers.len(),
            ChannelKind::Switch => rank.switch_channels.len(),
        };
        let what = format!("{} channel", kind.name());
        let values = ch.key("channel_ids")?.ids_below(count, &what, "the rank")?;
        block.channels.push((kind, values));
    }
    for refs in tb.key("remote_buffer_refs")?.items()? {
        let kind = refs
            .key("access_channel_type")?
            .one_of("channel type", &CHANNEL_KINDS)?;
        let values = refs.key("remote_buffer_ids")?.ids_below(
            rank.remote_buffers.len(),
            "remote buffer",
            "the rank",
        )?;
        block.remote_refs.push((kind, values));
    }
    block.ops = tb
        .key("ops")?
        .items()?
        .iter()
        .map(|op| read_op(op, rank, &block, barriers))
        .collect::<Res<_>>()?;
    // Collected through a `Result`, the list grew by doubling: a plan of
    // millions of blocks keeps what it holds, not what it grew to.
    block.ops.shrink_to_fit();
    Ok(block)
}

fn read_op(at: &At, rank: &RankPlan, tb: &ThreadBlock, barriers: &mut Barriers) -> Res<Op> {
    let mut op = Op::new(
        at.key("name")?.one_of("operation", OpName::NAMES)?,
        Default::default(),
    );
    if let Some(c) = at.opt("channel_type") {
        // "none", which the executor reads as no channel, is no kind.
        if c.value.as_str() != Some("none") {
            op.channel = Some(c.one_of("channel type", &CHANNEL_KINDS)?);
        }
    }
    if let Some(ids) = at.opt("channel_ids") {
        op.channel_ids = match op.channel {
            Some(kind) => ids.ids_below(
                tb.channel_ids(kind).len(),
                &format!("{} channel", kind.name()),
                "the thread block",
            )?,
            None => ids.u32s()?,
        };
    }
    // A signal or wait without a channel the executor passes over, while
    // its peer waits for it: no compiler writes one.
    let syncs = op.name.is_signal() || op.name.is_wait() || op.name == OpName::Flush;
    let no_channel = op.channel.is_none() || op.channel == Some(ChannelKind::Switch);
    if syncs && (no_channel || op.channel_ids.is_empty()) {
        return at.fail(format!(
            "a `{}` op names the memory or port channels it uses (channel_type and channel_ids)",
            op.name.json()
        ));
    }
    let channel = op.channel;
    for (key, list) in [("src_buff", &mut op.src), ("dst_buff", &mut op.dst)] {
        if let Some(refs) = at.opt(key) {
            let refs = refs.items()?;
            list.reserve_exact(refs.len());
            for r in refs {
                list.push(buf_ref(&r, channel, rank, tb)?);
            }
        }
    }
    let mut sizes = op.src.iter().chain(&op.dst).map(|r| r.size);
    if let Some(size) = sizes.next() {
        if let Some(other) = sizes.find(|s| *s != size) {
            return at.fail(format!(
                "an op moves one size of data, and this one's buffer references are {size} and {other} chunks"
            ));
        }
    }
    if op.name.needs_buffers() && (op.src.is_empty() || op.dst.is_empty()) {
        let missing = if op.src.is_empty() {
            "src_buff"
        } else {
            "dst_buff"
        };
        return at.fail(format!(
            "a `{}` op moves data from its src_buff to its dst_buff, and this one has no {missing} entry",
            op.name.json()
        ));
    }
    if let Some(t) = at.opt("tbg_info") {
        let size_at = t.key("tbg_size")?;
        let size = size_at.u32()?;
        if size == 0 || size > MAX_THREAD_BLOCKS {
            return size_at.fail(format!(
                "a thread block group has 1 to {MAX_THREAD_BLOCKS} blocks"
            ));
        }
        let id_at = t.key("tb_id")?;
        let tb_id = id_at.u32()?;
        if tb_id >= size {
            return id_at.fail(format!("part {tb_id} of a group of {size}"));
        }
        op.tbg = Some(TbgInfo { tb_id, size });
    }
    if let Some(r) = at.opt("reduce_op") {
        op.reduce_op = Some(r.one_of("reduce op", &REDUCE_OPS)?);
    }
    // A `barrier` without its id and block count would meet no one: the
    // executor reads both.
    if op.name == OpName::Barrier || at.opt("barrier_id").is_some() {
        op.barrier = Some(barriers.read(at, rank)?);
    }
    if let Some(ids) = at.opt("semaphore_ids") {
        op.extra_mut().semaphore_ids = ids
            .ids_below(rank.semaphores.len(), "semaphore", "the rank")?
            .to_vec();
    }
    // Without them the executor would take and give nothing.
    if matches!(op.name, OpName::SemAcquire | OpName::SemRelease) && op.semaphore_ids().is_empty() {
        return at.fail(format!(
            "a `{}` op needs its semaphore_ids (the semaphores it takes or gives)",
            op.name.json()
        ));
    }
    if op.name == OpName::GroupLoadReduce {
        // Its window over the members' buffers, and where the sum goes.
        let Some(offset) = at.opt("buffer_offset") else {
            return at.fail(
                "a `glre` op names the window it reduces and where the sum goes (buffer_type, buffer_offset, size, dst_chunk)",
            );
        };
        if op.channel != Some(ChannelKind::Switch) || op.channel_ids.len() != 1 {
            return at.fail(
                "a `glre` op names the one switch channel it reduces over (channel_type \"switch\" and one channel_ids entry)",
            );
        }
        let chunk = at.key("dst_chunk")?;
        op.extra_mut().group_reduce = Some(GroupReduce {
            buffer: at
                .key("buffer_type")?
                .one_of("buffer type", &BUFFER_KINDS)?,
            buffer_offset: offset.u32()?,
            size: at.key("size")?.u32()?,
            dst_rank: chunk.key("rank")?.u32()?,
            dst_kind: chunk.key("type")?.one_of("buffer type", &BUFFER_KINDS)?,
            dst_index: chunk.key("index")?.u32()?,
        });
    }
    if let Some(context) = at.opt("iter_context") {
        let unit_at = context.key("unit_size")?;
        let unit_size = unit_at.u64()?;
        if unit_size == 0 {
            return unit_at.fail("a pipeline's unit is at least a byte");
        }
        op.extra_mut().iter = Some(IterContext {
            unit_size,
            num_chunks: context
                .key("num_chunks")?
                .u32_in(1..=u32::MAX, "chunks in a pipeline's body")?,
        });
        op.extra_mut().body = at
            .key("ops")?
            .items()?
            .iter()
            .map(|inner| {
                let inner_op = read_op(inner, rank, tb, barriers)?;
                if inner_op.name == OpName::Pipeline || inner_op.iter_context().is_some() {
                    return inner.fail(
                        "a pipeline inside a pipeline: the executor runs one level (give the inner pipeline's ops to the outer one, or put them after it)",
                    );
                }
                Ok(inner_op)
            })
            .collect::<Res<_>>()?;
    } else if op.name == OpName::Pipeline {
        // Without it the executor would run the body no time.
        return at.fail("a `pipeline` op needs its iter_context (its unit_size and num_chunks)");
    }
    Ok(op)
}

fn buf_ref(
    at: &At,
    channel: Option<ChannelKind>,
    rank: &RankPlan,
    tb: &ThreadBlock,
) -> Res<BufRef> {
    let target = if let Some(t) = at.opt("type") {
        RefTarget::Local(t.one_of("buffer type", &BUFFER_KINDS)?)
    } else if let Some(id) = at.opt("buffer_id") {
        let local = id.u32()?;
        let table = channel.map_or(&[][..], |kind| tb.remote_buffer_ids(kind));
        let Some(&global) = table.get(local as usize) else {
            return id.fail(format!(
                "remote buffer {local}, but the thread block has {} remote buffer(s) for this op's channel type",
                table.len()
            ));
        };
        RefTarget::Remote {
            id: local,
            kind: rank.remote_buffers[global as usize].kind,
        }
    } else if let Some(id) = at.opt("switch_channel_id") {
        RefTarget::Switch { id: id.u32()? }
    } else {
        return at.fail("a buffer reference needs `type`, `buffer_id` or `switch_channel_id`");
    };
    Ok(BufRef {
        target,
        index: at.key("index")?.u32()?,
        size: at.key("size")?.u32()?,
        rank: at.opt("rank").map(|r| r.u32()).transpose()?,
    })
}

#[cfg(test)]
mod tests;
