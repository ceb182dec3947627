//! The MSCCL++ JSON execution plan, field for field as the reference
//! compiler writes it (SEMANTICS.md §2).

use crate::ir::*;
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{json, Value};
use std::borrow::Cow;

/// The whole plan as a JSON value (for tests and small plans).
pub fn plan_to_json(plan: &Plan) -> Value {
    serde_json::to_value(PlanJson(plan, 1)).unwrap_or(Value::Null)
}

/// Writes the plan as JSON, compact or indented by one space as the
/// reference plans are, streaming: memory stays flat however large the plan
/// (keys sorted, as the reference writes them). A compact plan's ranks are
/// written on every core the machine has, a few at a time each (the bytes
/// are those of one thread: each rank's text does not depend on another's).
/// A plan whose instances were left to the writer gets them here, a rank
/// at a time (`passes::Instances::AsWritten`).
pub fn write_plan(plan: &Plan, pretty: bool, out: impl std::io::Write) -> std::io::Result<()> {
    let written = if pretty {
        let formatter = serde_json::ser::PrettyFormatter::with_indent(b" ");
        PlanJson(plan, 1).serialize(&mut serde_json::Serializer::with_formatter(out, formatter))
    } else {
        let threads = match plan.size() * copies_to_make(plan) {
            0..PARALLEL_SIZE => 1,
            _ => crate::parallel::cores(),
        };
        PlanJson(plan, threads).serialize(&mut serde_json::Serializer::new(out))
    };
    written.map_err(std::io::Error::other)
}

/// How many copies of each thread block the writer makes: the plan's
/// instances when it was left to make them, else one.
fn copies_to_make(plan: &Plan) -> usize {
    match plan.instances_made {
        true => 1,
        false => plan.options.instances as usize,
    }
}

/// Rank `id` of `plan` as written: with its instances made, where the
/// writer is to make them.
fn rank_json(plan: &Plan, id: usize) -> RankJson<'_> {
    let rank = &plan.ranks[id];
    let rank = match copies_to_make(plan) {
        1 => Cow::Borrowed(rank),
        _ => Cow::Owned(crate::passes::replicate::written_rank(rank, &plan.options)),
    };
    RankJson(id, rank)
}

/// A plan, and the threads that write its ranks.
struct PlanJson<'a>(&'a Plan, usize);
struct RankJson<'a>(usize, Cow<'a, RankPlan>);
struct TbJson<'a>(usize, &'a ThreadBlock);

/// A sequence serialized item by item from an iterator made on demand.
struct Seq<F>(F);

impl<F, I> Serialize for Seq<F>
where
    F: Fn() -> I,
    I: ExactSizeIterator,
    I::Item: Serialize,
{
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let items = (self.0)();
        let mut seq = s.serialize_seq(Some(items.len()))?;
        for item in items {
            seq.serialize_element(&item)?;
        }
        seq.end()
    }
}

impl Serialize for PlanJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (plan, threads) = (self.0, self.1);
        let o = &plan.options;
        let protocol = o.protocol.name();
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("buffer_alignment", &o.buffer_alignment)?;
        m.serialize_entry("collective", plan.collective.name)?;
        if threads > 1 && plan.ranks.len() > 1 {
            m.serialize_entry("gpus", &ParallelRanks { plan, threads })?;
        } else {
            let gpus = || (0..plan.ranks.len()).map(|id| rank_json(plan, id));
            m.serialize_entry("gpus", &Seq(gpus))?;
        }
        m.serialize_entry("inplace", &plan.collective.inplace)?;
        m.serialize_entry("max_message_size", &o.max_message_size)?;
        m.serialize_entry("min_message_size", &o.min_message_size)?;
        m.serialize_entry("name", &plan.name)?;
        m.serialize_entry("num_threads_per_block", &o.num_threads_per_block)?;
        m.serialize_entry("protocol", protocol)?;
        m.serialize_entry("reuse_resources", &o.reuse_resources)?;
        m.serialize_entry("use_double_scratch_buffer", &o.use_double_scratch_buffer)?;
        m.end()
    }
}

/// The ranks of a compact plan, made into text by `threads` threads,
/// `RANKS_PER_THREAD` ranks each, while this thread writes out the batch
/// of ranks before, in order.
struct ParallelRanks<'a> {
    plan: &'a Plan,
    threads: usize,
}

/// Enough ranks for a thread's start to be worth it, few enough that the
/// text of a batch stays small (a rank of allreduce at 1,024 ranks is a
/// megabyte).
const RANKS_PER_THREAD: usize = 4;

/// The JSON text of some ranks, in order.
type RankTexts = serde_json::Result<Vec<Box<serde_json::value::RawValue>>>;

/// The text of `count` of `plan`'s ranks, the first of them rank `first`.
fn rank_texts(plan: &Plan, first: usize, count: usize) -> RankTexts {
    (first..first + count)
        .map(|id| serde_json::value::to_raw_value(&rank_json(plan, id)))
        .collect()
}

/// Some ranks' text: being made on a thread, or made here when no thread
/// could be started.
enum Texts<'s> {
    Making(std::thread::ScopedJoinHandle<'s, RankTexts>),
    Made(RankTexts),
}

impl Serialize for ParallelRanks<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::Error;
        let ranks = &self.plan.ranks;
        let (per_thread, threads) = (RANKS_PER_THREAD, self.threads);
        let mut seq = s.serialize_seq(Some(ranks.len()))?;
        let mut batches = ranks.chunks(per_thread * threads).enumerate();
        std::thread::scope(|scope| {
            // The threads of a batch, each making the text of its ranks.
            let mut start_next = || -> Vec<Texts<'_>> {
                let Some((b, batch)) = batches.next() else {
                    return Vec::new();
                };
                let first = b * per_thread * threads;
                let parts = batch.chunks(per_thread).enumerate();
                let plan = self.plan;
                parts
                    .map(|(k, part)| {
                        let first = first + k * per_thread;
                        let count = part.len();
                        let thread = std::thread::Builder::new();
                        match thread.spawn_scoped(scope, move || rank_texts(plan, first, count)) {
                            Ok(making) => Texts::Making(making),
                            Err(_) => Texts::Made(rank_texts(plan, first, count)),
                        }
                    })
                    .collect()
            };
            let mut running = start_next();
            while !running.is_empty() {
                let next = start_next();
                for texts in running {
                    let texts = match texts {
                        // A panic there is a bug: it goes on here, as it
                        // would have on one thread.
                        Texts::Making(thread) => thread
                            .join()
                            .unwrap_or_else(|p| std::panic::resume_unwind(p)),
                        Texts::Made(texts) => texts,
                    };
                    for text in &texts.map_err(S::Error::custom)? {
                        seq.serialize_element(text)?;
                    }
                }
                running = next;
            }
            Ok(())
        })?;
        seq.end()
    }
}

impl Serialize for RankJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (id, r) = (self.0, &*self.1);
        let mut channels = Vec::new();
        for (kind, peers) in [
            (ChannelKind::Memory, &r.memory_peers),
            (ChannelKind::Port, &r.port_peers),
        ] {
            if !peers.is_empty() {
                channels.push(json!({ "channel_type": kind.name(), "connected_to": peers }));
            }
        }
        for sw in &r.switch_channels {
            channels.push(json!({
                "channel_type": "switch",
                "buffer_type": sw.buffer.code(),
                "rank_groups": [{ "size": sw.ranks.len(), "ranks": &sw.ranks[..] }],
            }));
        }
        let remote_buffers = || {
            r.remote_buffers.iter().map(|b| {
                json!({
                    "rank": b.rank,
                    "type": b.kind.code(),
                    "access_channel_types": b.access.iter().map(|k| k.name()).collect::<Vec<_>>(),
                })
            })
        };
        let semaphores = || r.semaphores.iter().map(|v| json!({ "init_value": v }));
        let threadblocks = || {
            r.threadblocks
                .iter()
                .enumerate()
                .map(|(i, tb)| TbJson(i, tb))
        };
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("channels", &channels)?;
        m.serialize_entry("id", &id)?;
        m.serialize_entry("input_chunks", &r.input_chunks)?;
        m.serialize_entry("output_chunks", &r.output_chunks)?;
        m.serialize_entry("remote_buffers", &Seq(remote_buffers))?;
        m.serialize_entry("scratch_chunks", &r.scratch_chunks)?;
        m.serialize_entry("semaphores", &Seq(semaphores))?;
        m.serialize_entry("threadblocks", &Seq(threadblocks))?;
        m.end()
    }
}

impl Serialize for TbJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (id, tb) = (self.0, self.1);
        let channels = || {
            tb.channels
                .iter()
                .map(|(k, ids)| json!({ "channel_type": k.name(), "channel_ids": &ids[..] }))
        };
        let refs = || {
            tb.remote_refs.iter().map(
                |(k, ids)| json!({ "access_channel_type": k.name(), "remote_buffer_ids": &ids[..] }),
            )
        };
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("channels", &Seq(channels))?;
        m.serialize_entry("id", &id)?;
        m.serialize_entry("ops", &Seq(|| tb.ops.iter().map(OpJson)))?;
        m.serialize_entry("remote_buffer_refs", &Seq(refs))?;
        m.end()
    }
}

struct BufJson<'a>(&'a BufRef);

impl Serialize for BufJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let r = self.0;
        let mut m = s.serialize_map(None)?;
        if let RefTarget::Remote { id, .. } = r.target {
            m.serialize_entry("buffer_id", &id)?;
        }
        m.serialize_entry("index", &r.index)?;
        if let Some(rank) = r.rank {
            m.serialize_entry("rank", &rank)?;
        }
        m.serialize_entry("size", &r.size)?;
        if let RefTarget::Switch { id } = r.target {
            m.serialize_entry("switch_channel_id", &id)?;
        }
        if let RefTarget::Local(kind) = r.target {
            m.serialize_entry("type", kind.code())?;
        }
        m.end()
    }
}

/// One op, its keys in sorted order as the reference writes them.
struct OpJson<'a>(&'a Op);

impl Serialize for OpJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let op = self.0;
        let mut m = s.serialize_map(None)?;
        if let Some((id, _)) = op.barrier {
            m.serialize_entry("barrier_id", &id)?;
        }
        if let Some(g) = op.group_reduce() {
            m.serialize_entry("buffer_offset", &g.buffer_offset)?;
            m.serialize_entry("buffer_type", g.buffer.code())?;
        }
        if op.writes_channel_ids() {
            m.serialize_entry("channel_ids", &op.channel_ids[..])?;
        }
        if let Some(kind) = op.channel {
            m.serialize_entry("channel_type", kind.name())?;
        }
        let has_buffers = !op.src.is_empty() || !op.dst.is_empty();
        if has_buffers {
            m.serialize_entry("dst_buff", &Seq(|| op.dst.iter().map(BufJson)))?;
        }
        if let Some(g) = op.group_reduce() {
            let chunk = json!({ "rank": g.dst_rank, "type": g.dst_kind.code(), "index": g.dst_index, "size": g.size });
            m.serialize_entry("dst_chunk", &chunk)?;
        }
        if let Some(it) = op.iter_context() {
            let context = json!({ "unit_size": it.unit_size, "num_chunks": it.num_chunks });
            m.serialize_entry("iter_context", &context)?;
        }
        m.serialize_entry("name", op.name.json())?;
        if let Some((_, n)) = op.barrier {
            m.serialize_entry("num_threadblocks", &n)?;
        }
        if op.iter_context().is_some() {
            m.serialize_entry("ops", &Seq(|| op.body().iter().map(OpJson)))?;
        }
        if let Some(r) = op.reduce_op {
            m.serialize_entry("reduce_op", r.name())?;
        }
        if !op.semaphore_ids().is_empty() {
            m.serialize_entry("semaphore_ids", &op.semaphore_ids())?;
        }
        if let Some(g) = op.group_reduce() {
            m.serialize_entry("size", &g.size)?;
        }
        if has_buffers {
            m.serialize_entry("src_buff", &Seq(|| op.src.iter().map(BufJson)))?;
        }
        if let Some(t) = op.tbg {
            m.serialize_entry("tbg_info", &json!({ "tb_id": t.tb_id, "tbg_size": t.size }))?;
        }
        m.end()
    }
}
