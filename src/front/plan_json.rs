//! Reads an MSCCL++ JSON execution plan into the plan IR. Every problem is
//! reported with the JSON path of the value that is wrong
//! (`gpus[1].threadblocks[0].ops[3].src_buff[0].type`), since a plan has no
//! source lines to point at.

use crate::ir::*;
use serde_json::Value;

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

type Res<T> = Result<T, PlanError>;

/// Parses `text` as a plan.
pub fn read_plan(text: &str) -> Res<Plan> {
    let doc: Value = serde_json::from_str(text).map_err(|e| PlanError {
        path: String::new(),
        message: format!("not JSON: {e}"),
    })?;
    let plan = plan(&At::root(&doc))?;
    check_ranges(&plan)?;
    Ok(plan)
}

/// Every buffer reference lies within the buffer it names (the executor
/// does not check; SEMANTICS.md §5.7), on this rank, a peer or every member
/// of a switch channel.
fn check_ranges(plan: &Plan) -> Res<()> {
    let chunks = |rank: u32, kind: BufferKind| -> u64 {
        let r = &plan.ranks[rank as usize];
        match kind {
            BufferKind::Input => r.input_chunks,
            BufferKind::Output => r.output_chunks,
            BufferKind::Scratch => r.scratch_chunks,
        }
        .into()
    };
    for (g, rank) in plan.ranks.iter().enumerate() {
        for (t, tb) in rank.threadblocks.iter().enumerate() {
            let mut stack: Vec<(String, &Op)> = tb
                .ops
                .iter()
                .enumerate()
                .map(|(i, op)| (format!("gpus[{g}].threadblocks[{t}].ops[{i}]"), op))
                .collect();
            while let Some((path, op)) = stack.pop() {
                for (i, inner) in op.body.iter().enumerate() {
                    stack.push((format!("{path}.ops[{i}]"), inner));
                }
                for (key, refs) in [("src_buff", &op.src), ("dst_buff", &op.dst)] {
                    for (j, r) in refs.iter().enumerate() {
                        // The buffers the reference lands in: (rank, kind) each.
                        let targets: Vec<(u32, BufferKind)> = match r.target {
                            RefTarget::Local(kind) => vec![(g as u32, kind)],
                            RefTarget::Remote { id, kind } => {
                                let channel = op.channel.unwrap_or(ChannelKind::Memory);
                                let global = tb.remote_buffer_ids(channel)[id as usize];
                                vec![(rank.remote_buffers[global as usize].rank, kind)]
                            }
                            RefTarget::Switch { id } => {
                                match tb.channel_ids(ChannelKind::Switch).get(id as usize) {
                                    Some(&c) => {
                                        let decl = &rank.switch_channels[c as usize];
                                        decl.ranks.iter().map(|m| (*m, decl.buffer)).collect()
                                    }
                                    None => {
                                        return Err(PlanError {
                                            path: format!("{path}.{key}[{j}].switch_channel_id"),
                                            message: format!(
                                                "the thread block has no switch channel {id}"
                                            ),
                                        })
                                    }
                                }
                            }
                        };
                        for (owner, kind) in targets {
                            if owner as usize >= plan.ranks.len() {
                                return Err(PlanError {
                                    path: format!("{path}.{key}[{j}]"),
                                    message: format!("rank {owner} is not in the plan"),
                                });
                            }
                            let end = u64::from(r.index) + u64::from(r.size);
                            let have = chunks(owner, kind);
                            if end > have {
                                return Err(PlanError {
                                    path: format!("{path}.{key}[{j}]"),
                                    message: format!(
                                        "chunks {}..{end} of rank {owner}'s {} buffer, which has {have}",
                                        r.index,
                                        kind.name()
                                    ),
                                });
                            }
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

/// A value and its path in the document.
struct At<'a> {
    value: &'a Value,
    path: String,
}

impl<'a> At<'a> {
    fn root(value: &'a Value) -> At<'a> {
        At {
            value,
            path: String::new(),
        }
    }

    fn fail<T>(&self, message: impl Into<String>) -> Res<T> {
        Err(PlanError {
            path: self.path.clone(),
            message: message.into(),
        })
    }

    fn key(&self, key: &str) -> Res<At<'a>> {
        match self.value.get(key) {
            Some(value) => Ok(self.child_key(key, value)),
            None if self.value.is_object() => self.fail(format!("missing field `{key}`")),
            None => self.fail("expected an object"),
        }
    }

    fn opt(&self, key: &str) -> Option<At<'a>> {
        self.value.get(key).map(|value| self.child_key(key, value))
    }

    fn child_key(&self, key: &str, value: &'a Value) -> At<'a> {
        let path = if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        };
        At { value, path }
    }

    fn items(&self) -> Res<Vec<At<'a>>> {
        let Some(list) = self.value.as_array() else {
            return self.fail("expected a list");
        };
        Ok(list
            .iter()
            .enumerate()
            .map(|(i, value)| At {
                value,
                path: format!("{}[{i}]", self.path),
            })
            .collect())
    }

    fn u64(&self) -> Res<u64> {
        match self.value.as_u64() {
            Some(v) => Ok(v),
            None => self.fail(format!(
                "expected a non-negative integer, found {}",
                self.value
            )),
        }
    }

    fn u32(&self) -> Res<u32> {
        let v = self.u64()?;
        u32::try_from(v).or_else(|_| self.fail(format!("{v} is too large")))
    }

    fn bool(&self) -> Res<bool> {
        match self.value.as_bool() {
            Some(v) => Ok(v),
            None => self.fail(format!("expected true or false, found {}", self.value)),
        }
    }

    fn str(&self) -> Res<&'a str> {
        match self.value.as_str() {
            Some(v) => Ok(v),
            None => self.fail(format!("expected a string, found {}", self.value)),
        }
    }

    fn u32s(&self) -> Res<Vec<u32>> {
        self.items()?.iter().map(At::u32).collect()
    }

    /// A list of ids of `what`, each below `count`.
    fn ids_below(&self, count: usize, what: &str) -> Res<Vec<u32>> {
        let values = self.u32s()?;
        match values.iter().find(|v| **v as usize >= count) {
            Some(bad) => self.fail(format!("{what} {bad} but the rank has {count}")),
            None => Ok(values),
        }
    }

    /// One of `choices`, by name.
    fn one_of<T: Copy>(&self, what: &str, choices: &[(&str, T)]) -> Res<T> {
        let s = self.str()?;
        match choices.iter().find(|(name, _)| *name == s) {
            Some((_, v)) => Ok(*v),
            None => {
                let names: Vec<&str> = choices.iter().map(|(n, _)| *n).collect();
                self.fail(format!(
                    "unknown {what} \"{s}\" (expected one of: {})",
                    names.join(", ")
                ))
            }
        }
    }
}

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

fn plan(doc: &At) -> Res<Plan> {
    let collective_at = doc.key("collective")?;
    let name = collective_at.str()?;
    let Some(collective_name) = COLLECTIVES.iter().find(|c| **c == name) else {
        return collective_at.fail(format!(
            "unknown collective \"{name}\" (expected one of: {})",
            COLLECTIVES.join(", ")
        ));
    };
    let protocol = doc.key("protocol")?.one_of(
        "protocol",
        &[("Simple", Protocol::Simple), ("LL", Protocol::LL)],
    )?;
    let options = Options {
        protocol,
        reuse_resources: doc.key("reuse_resources")?.bool()?,
        use_double_scratch_buffer: doc.key("use_double_scratch_buffer")?.bool()?,
        num_threads_per_block: doc.key("num_threads_per_block")?.u32()?,
        buffer_alignment: match doc.opt("buffer_alignment") {
            Some(a) => a.u32()?,
            None => Options::default().buffer_alignment,
        },
        min_message_size: doc.key("min_message_size")?.u64()?,
        max_message_size: doc.key("max_message_size")?.u64()?,
        ..Options::default()
    };
    let gpus = doc.key("gpus")?.items()?;
    let mut ranks = Vec::with_capacity(gpus.len());
    for (i, gpu) in gpus.iter().enumerate() {
        let id = gpu.key("id")?;
        if id.u64()? != i as u64 {
            return id.fail(format!(
                "gpu ids must be 0, 1, 2, ... in order; this one should be {i}"
            ));
        }
        ranks.push(rank(gpu)?);
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
    Ok(Plan {
        name: doc.key("name")?.str()?.to_string(),
        collective,
        options,
        ranks,
        loop_contexts: Vec::new(),
    })
}

/// Chunks a buffer may have: as many as the compiler allows scratch.
const MAX_CHUNKS: u32 = 1 << 24;

fn chunk_count(at: &At) -> Res<u32> {
    let n = at.u32()?;
    if n > MAX_CHUNKS {
        return at.fail(format!("{n} chunks; at most {MAX_CHUNKS} are supported"));
    }
    Ok(n)
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
            ChannelKind::Memory => r.memory_peers.extend(ch.key("connected_to")?.u32s()?),
            ChannelKind::Port => r.port_peers.extend(ch.key("connected_to")?.u32s()?),
            ChannelKind::Switch => {
                let groups = ch.key("rank_groups")?.items()?;
                let [group] = groups.as_slice() else {
                    return ch
                        .key("rank_groups")?
                        .fail("expected exactly one rank group");
                };
                let ranks = group.key("ranks")?.u32s()?;
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
        let access = b.key("access_channel_types")?.items()?;
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
            r.semaphores.push(s.key("init_value")?.u64()? as i64);
        }
    }
    let tbs = gpu.key("threadblocks")?.items()?;
    r.threadblocks = vec![ThreadBlock::default(); tbs.len()];
    for tb in &tbs {
        let id = tb.key("id")?;
        let index = id.u32()? as usize;
        if index >= tbs.len() {
            return id.fail(format!(
                "thread block id {index} but the rank has {} thread blocks",
                tbs.len()
            ));
        }
        r.threadblocks[index] = threadblock(tb, &r)?;
    }
    Ok(r)
}

fn threadblock(tb: &At, rank: &RankPlan) -> Res<ThreadBlock> {
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
        let values = ch.key("channel_ids")?.ids_below(count, &what)?;
        block.channels.push((kind, values));
    }
    for refs in tb.key("remote_buffer_refs")?.items()? {
        let kind = refs
            .key("access_channel_type")?
            .one_of("channel type", &CHANNEL_KINDS)?;
        let values = refs
            .key("remote_buffer_ids")?
            .ids_below(rank.remote_buffers.len(), "remote buffer")?;
        block.remote_refs.push((kind, values));
    }
    block.ops = tb
        .key("ops")?
        .items()?
        .iter()
        .map(|op| read_op(op, rank, &block))
        .collect::<Res<_>>()?;
    Ok(block)
}

fn read_op(at: &At, rank: &RankPlan, tb: &ThreadBlock) -> Res<Op> {
    let mut op = Op::new(
        at.key("name")?.one_of("operation", OpName::NAMES)?,
        Default::default(),
    );
    if let Some(c) = at.opt("channel_type") {
        op.channel = Some(c.one_of("channel type", &CHANNEL_KINDS)?);
    }
    if let Some(ids) = at.opt("channel_ids") {
        op.channel_ids = ids.u32s()?;
    }
    let channel = op.channel;
    for (key, list) in [("src_buff", &mut op.src), ("dst_buff", &mut op.dst)] {
        if let Some(refs) = at.opt(key) {
            for r in refs.items()? {
                list.push(buf_ref(&r, channel, rank, tb)?);
            }
        }
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
    if let Some(id) = at.opt("barrier_id") {
        op.barrier = Some((id.u32()?, at.key("num_threadblocks")?.u32()?));
    }
    if let Some(ids) = at.opt("semaphore_ids") {
        op.semaphore_ids = ids.u32s()?;
    }
    if let Some(offset) = at.opt("buffer_offset") {
        let chunk = at.key("dst_chunk")?;
        op.group_reduce = Some(GroupReduce {
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
        op.iter = Some(IterContext {
            unit_size: context.key("unit_size")?.u64()?,
            num_chunks: context.key("num_chunks")?.u32()?,
        });
        op.body = at
            .key("ops")?
            .items()?
            .iter()
            .map(|inner| read_op(inner, rank, tb))
            .collect::<Res<_>>()?;
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
                "the thread block has {} remote buffer(s) for this op's channel type",
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
