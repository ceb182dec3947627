//! The MSCCL++ JSON execution plan, field for field as the reference
//! compiler writes it (SEMANTICS.md §2).
//!
//! The text is written here byte by byte (its pieces by `text.rs`) rather
//! than through serde: a plan is millions of small objects of a few
//! integer fields under known keys, and writing the keys' bytes and the
//! integers (`itoa`) straight into a buffer is several times faster than
//! serde_json's serializer, which escapes every key and passes every
//! piece through a `Write` (the compile of a plan of gigabytes,
//! alltoall_ring's at 512 ranks, was nearly all writing). The text is
//! serde_json's to the byte all the same: keys in sorted order, as its
//! maps and the reference keep them; compact, or indented as its
//! `PrettyFormatter` indents with one space. tests/plan_json.rs holds
//! every example's plan to serde_json's rendering of it.

use crate::ir::*;
use crate::passes::replicate::Copies;
use serde_json::Value;
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use text::{quote, Json, Quoted};

/// A key of the plan, written as its bytes are in a compact plan after an
/// earlier entry: `key!("index")` is `,"index":`. The keys need no escapes,
/// and a key's bytes go in at once, not a byte and a piece at a time.
macro_rules! key {
    ($name:literal) => {
        concat!(",\"", $name, "\":").as_bytes()
    };
}

mod text;

/// Every op's name, quoted, in the order of `OpName`'s variants.
static OP_NAMES: [Quoted; OpName::NAMES.len()] = {
    const EMPTY: Quoted = quote("");
    let mut quoted = [EMPTY; OpName::NAMES.len()];
    let mut i = 0;
    while i < quoted.len() {
        let (name, op) = OpName::NAMES[i];
        assert!(
            op as usize == i,
            "OpName::NAMES lists the variants in order"
        );
        quoted[i] = quote(name);
        i += 1;
    }
    quoted
};

fn quoted_op_name(name: OpName) -> &'static Quoted {
    &OP_NAMES[name as usize]
}

/// The word of `$kind`'s variant `$value`, as `$spell` spells it, from a
/// table of its variants' words quoted in advance (the variants listed in
/// their order, which the build checks).
macro_rules! quoted_word {
    ($value:expr, $kind:ident::$spell:ident: $($variant:ident),+) => {{
        const VARIANTS: [$kind; [$($kind::$variant),+].len()] = [$($kind::$variant),+];
        static QUOTED: [Quoted; VARIANTS.len()] = {
            const EMPTY: Quoted = quote("");
            let mut quoted = [EMPTY; VARIANTS.len()];
            let mut i = 0;
            while i < quoted.len() {
                assert!(VARIANTS[i] as usize == i, "the variants in their order");
                quoted[i] = quote(VARIANTS[i].$spell());
                i += 1;
            }
            quoted
        };
        &QUOTED[$value as usize]
    }};
}

fn quoted_channel_kind(kind: ChannelKind) -> &'static Quoted {
    quoted_word!(kind, ChannelKind::name: Memory, Port, Switch)
}

fn quoted_buffer_code(kind: BufferKind) -> &'static Quoted {
    quoted_word!(kind, BufferKind::code: Input, Output, Scratch)
}

/// Keys every plan has at its top level, which tell a plan from a user's
/// other JSON files (`files::holds_json_keys`).
pub const PLAN_KEYS: &[&str] = &["collective", "gpus"];

/// The whole plan as a JSON value (for tests and small plans).
pub fn plan_to_json(plan: &Plan) -> Value {
    let mut text = Vec::new();
    match write_plan(plan, false, &mut text) {
        Ok(()) => serde_json::from_slice(&text).unwrap_or(Value::Null),
        Err(_) => Value::Null,
    }
}

/// Writes the plan as JSON, compact or indented by one space as the
/// reference plans are, a rank at a time: memory stays flat however large
/// the plan. `out` needs no buffer of its own: what is written between
/// ranks is gathered here, and a rank's text goes out whole, uncopied. A
/// large plan's ranks are made into text on every core the machine has,
/// a few at a time each (the bytes are those of one thread: each rank's
/// text does not depend on another's). A plan whose instances were left
/// to the writer gets them here, a rank at a time
/// (`passes::Instances::AsWritten`).
pub fn write_plan(plan: &Plan, pretty: bool, out: impl Write) -> std::io::Result<()> {
    match pretty {
        true => write_plan_as::<true>(plan, out),
        false => write_plan_as::<false>(plan, out),
    }
}

fn write_plan_as<const PRETTY: bool>(plan: &Plan, mut out: impl Write) -> std::io::Result<()> {
    let o = &plan.options;
    let mut j = Json::<PRETTY>::new(0);
    j.open(b'{');
    j.int_entry(key!("buffer_alignment"), o.buffer_alignment);
    j.word_entry(key!("collective"), plan.collective.name);
    j.key(key!("gpus"));
    j.open(b'[');
    write_ranks(plan, &mut j, &mut out)?;
    j.close(b']');
    j.bool_entry(key!("inplace"), plan.collective.inplace);
    j.int_entry(key!("max_message_size"), o.max_message_size);
    j.int_entry(key!("min_message_size"), o.min_message_size);
    j.string_entry(key!("name"), &plan.name);
    j.int_entry(key!("num_threads_per_block"), o.num_threads_per_block);
    j.word_entry(key!("protocol"), o.protocol.name());
    j.bool_entry(key!("reuse_resources"), o.reuse_resources);
    j.bool_entry(
        key!("use_double_scratch_buffer"),
        o.use_double_scratch_buffer,
    );
    j.close(b'}');
    out.write_all(&j.text)
}

/// The plan's ranks, each an element of the `gpus` list open in `j`; the
/// text gathered in `j` goes to `out` as it grows.
fn write_ranks<const PRETTY: bool>(
    plan: &Plan,
    j: &mut Json<PRETTY>,
    out: &mut impl Write,
) -> std::io::Result<()> {
    let threads = match plan.size() * copies_to_make(plan) {
        0..PARALLEL_SIZE => 1,
        _ => crate::parallel::cores(),
    };
    if threads == 1 {
        // Each rank's text is made where the text is gathered, whose
        // memory serves every rank in turn: new memory costs a page fault
        // per page, and a fresh buffer per rank (grown by doubling) cost
        // allreduce at 16 ranks 104 of its 490 faults.
        j.text.reserve(GATHERED_BYTES);
        for id in 0..plan.ranks.len() {
            j.element();
            j.text = rank_text::<PRETTY>(plan, id, std::mem::take(&mut j.text));
            if j.text.len() >= GATHERED_BYTES {
                out.write_all(&j.text)?;
                j.text.clear();
            }
        }
        return Ok(());
    }
    let ids: Vec<usize> = (0..plan.ranks.len()).collect();
    // The most bytes a rank's text took per item of the rank so far: each
    // next rank's text starts with room for its own items at that rate,
    // rather than a copy at each doubling (and a small rank after a large
    // one asks for little).
    let bytes_per_item = AtomicUsize::new(0);
    for batch in ids.chunks(threads * RANKS_PER_THREAD) {
        let texts = crate::parallel::map(batch, threads, |&id| {
            let items = items(plan, id);
            let room = items * bytes_per_item.load(Relaxed);
            let text = rank_text::<PRETTY>(plan, id, Vec::with_capacity(room));
            // (A small rank's text is mostly its few fixed keys.)
            if items >= 1024 {
                let rate = text.len().div_ceil(items);
                bytes_per_item.fetch_max(rate.min(MOST_BYTES_PER_ITEM), Relaxed);
            }
            text
        });
        for text in texts {
            j.element();
            if text.len() < GATHERED_BYTES {
                j.text.extend_from_slice(&text);
            } else {
                out.write_all(&j.text)?;
                j.text.clear();
                out.write_all(&text)?;
            }
            if j.text.len() >= GATHERED_BYTES {
                out.write_all(&j.text)?;
                j.text.clear();
            }
        }
    }
    Ok(())
}

/// Ranks a thread makes into text at a time: enough for a thread's turn to
/// be worth taking, few enough that a batch's text stays small (a rank of
/// allreduce at 1,024 ranks is a megabyte).
const RANKS_PER_THREAD: usize = 4;

/// The most room a rank's text starts with for each of its items: more
/// than any item takes (an op's own keys take about 60 bytes).
const MOST_BYTES_PER_ITEM: usize = 256;

/// What a rank's text grows with: its ops and their buffers and channels,
/// its thread blocks, channels, remote buffers and semaphores, times the
/// copies the writer makes of them.
fn items(plan: &Plan, id: usize) -> usize {
    let rank = &plan.ranks[id];
    let ops = rank.threadblocks.iter().flat_map(|tb| tb.ops_with_bodies());
    let of_ops: usize = ops
        .map(|(op, _)| 1 + op.src.len() + op.dst.len() + op.channel_ids.len())
        .sum();
    let lists = rank.memory_peers.len()
        + rank.port_peers.len()
        + rank.remote_buffers.len()
        + rank.semaphores.len()
        + rank.threadblocks.len();
    (of_ops + lists) * copies_to_make(plan)
}

/// Text is gathered up to this much before it is written: small ranks go
/// out together, a large one on its own.
const GATHERED_BYTES: usize = 64 << 10;

/// How many copies of each thread block the writer makes: the plan's
/// instances when it was left to make them, else one.
fn copies_to_make(plan: &Plan) -> usize {
    match plan.instances_made {
        true => 1,
        false => plan.options.instances as usize,
    }
}

/// `text` followed by the text of rank `id` of `plan`, as an element of
/// the plan's `gpus`: with its instances made, a thread block at a time,
/// where the writer is to make them.
fn rank_text<const PRETTY: bool>(plan: &Plan, id: usize, text: Vec<u8>) -> Vec<u8> {
    let rank = &plan.ranks[id];
    // The plan's object, then its `gpus` list: two levels in.
    let mut j = Json::<PRETTY>::new(2);
    j.text = text;
    if copies_to_make(plan) == 1 {
        j.rank(id, rank, |j| {
            for (i, tb) in rank.threadblocks.iter().enumerate() {
                j.threadblock(i, &tb.channels, &tb.remote_refs, |j| {
                    tb.ops.iter().for_each(|op| j.op_element(op))
                });
            }
        });
        return j.text;
    }
    let copies = Copies::of(rank, &plan.options);
    // The copies of a thread block's ops are made once, at its first
    // instance, and each instance remakes only what moves
    // (`Copies::shift`): a fresh copy of each op at each instance was
    // two fifths of the writer's work (alltoall_ring at 32 ranks).
    let mut made: Vec<Op> = Vec::new();
    let mut made_of = None;
    j.rank(id, &copies.rank(rank), |j| {
        for at in 0..copies.threadblocks() {
            let (t, inst) = copies.threadblock_at(at);
            let tb = &rank.threadblocks[t];
            if made_of != Some(t) {
                made.truncate(tb.ops.len());
                for (copy, op) in made.iter_mut().zip(&tb.ops) {
                    copy.clone_from(op);
                }
                made.extend(tb.ops[made.len()..].iter().cloned());
                made_of = Some(t);
            }
            let channels = copies.channels(&tb.channels, inst);
            j.threadblock(at as usize, &channels, &tb.remote_refs, |j| {
                for (copy, op) in made.iter_mut().zip(&tb.ops) {
                    copies.shift(op, copy, tb, inst);
                    j.op_element(copy);
                }
            });
        }
    });
    j.text
}

/// The plan's layout: its objects, lists and keys, in the order the
/// reference writes them.
impl<const PRETTY: bool> Json<PRETTY> {
    /// A rank, whose `threadblocks` writes its thread blocks.
    fn rank(&mut self, id: usize, r: &RankPlan, threadblocks: impl FnOnce(&mut Self)) {
        self.open(b'{');
        self.key(key!("channels"));
        self.open(b'[');
        for (kind, peers) in [
            (ChannelKind::Memory, &r.memory_peers),
            (ChannelKind::Port, &r.port_peers),
        ] {
            if !peers.is_empty() {
                self.element();
                self.open(b'{');
                self.quoted_entry(key!("channel_type"), quoted_channel_kind(kind));
                self.ints_entry(key!("connected_to"), peers);
                self.close(b'}');
            }
        }
        for sw in &r.switch_channels {
            self.element();
            self.open(b'{');
            self.quoted_entry(key!("buffer_type"), quoted_buffer_code(sw.buffer));
            self.quoted_entry(
                key!("channel_type"),
                quoted_channel_kind(ChannelKind::Switch),
            );
            self.objects_entry(key!("rank_groups"), &[&sw.ranks], |j, ranks| {
                j.ints_entry(key!("ranks"), &ranks[..]);
                j.int_entry(key!("size"), ranks.len());
            });
            self.close(b'}');
        }
        self.close(b']');
        self.int_entry(key!("id"), id);
        self.int_entry(key!("input_chunks"), r.input_chunks);
        self.int_entry(key!("output_chunks"), r.output_chunks);
        self.objects_entry(key!("remote_buffers"), &r.remote_buffers, |j, b| {
            j.key(key!("access_channel_types"));
            j.open(b'[');
            for kind in &b.access {
                j.element();
                j.quoted(quoted_channel_kind(*kind));
            }
            j.close(b']');
            j.int_entry(key!("rank"), b.rank);
            j.quoted_entry(key!("type"), quoted_buffer_code(b.kind));
        });
        self.int_entry(key!("scratch_chunks"), r.scratch_chunks);
        self.objects_entry(key!("semaphores"), &r.semaphores, |j, &v| {
            j.int_entry(key!("init_value"), v)
        });
        self.key(key!("threadblocks"));
        self.open(b'[');
        threadblocks(self);
        self.close(b']');
        self.close(b'}');
    }

    /// A thread block (an element of its rank's), whose `ops` writes its
    /// ops.
    fn threadblock(
        &mut self,
        id: usize,
        channels: &Table,
        remote_refs: &Table,
        ops: impl FnOnce(&mut Self),
    ) {
        self.element();
        self.open(b'{');
        self.objects_entry(key!("channels"), channels, |j, (kind, ids)| {
            j.ints_entry(key!("channel_ids"), &ids[..]);
            j.quoted_entry(key!("channel_type"), quoted_channel_kind(*kind));
        });
        self.int_entry(key!("id"), id);
        self.key(key!("ops"));
        self.open(b'[');
        ops(self);
        self.close(b']');
        self.objects_entry(key!("remote_buffer_refs"), remote_refs, |j, (kind, ids)| {
            j.quoted_entry(key!("access_channel_type"), quoted_channel_kind(*kind));
            j.ints_entry(key!("remote_buffer_ids"), &ids[..]);
        });
        self.close(b'}');
    }

    /// An op, as an element of its list.
    fn op_element(&mut self, op: &Op) {
        self.element();
        self.open(b'{');
        self.op(op);
        self.close(b'}');
    }

    fn ops_entry(&mut self, key: &'static [u8], ops: &[Op]) {
        self.objects_entry(key, ops, Self::op);
    }

    /// One op's entries, in sorted order as the reference writes them.
    fn op(&mut self, op: &Op) {
        if let Some((id, _)) = op.barrier {
            self.int_entry(key!("barrier_id"), id);
        }
        let group = op.group_reduce();
        if let Some(g) = group {
            self.int_entry(key!("buffer_offset"), g.buffer_offset);
            self.quoted_entry(key!("buffer_type"), quoted_buffer_code(g.buffer));
        }
        if op.writes_channel_ids() {
            self.ints_entry(key!("channel_ids"), &op.channel_ids[..]);
        }
        if let Some(kind) = op.channel {
            self.quoted_entry(key!("channel_type"), quoted_channel_kind(kind));
        }
        let has_buffers = !op.src.is_empty() || !op.dst.is_empty();
        if has_buffers {
            self.objects_entry(key!("dst_buff"), &op.dst, Self::buffer_ref);
        }
        if let Some(g) = group {
            self.key(key!("dst_chunk"));
            self.open(b'{');
            self.int_entry(key!("index"), g.dst_index);
            self.int_entry(key!("rank"), g.dst_rank);
            self.int_entry(key!("size"), g.size);
            self.quoted_entry(key!("type"), quoted_buffer_code(g.dst_kind));
            self.close(b'}');
        }
        let iter = op.iter_context();
        if let Some(it) = iter {
            self.key(key!("iter_context"));
            self.open(b'{');
            self.int_entry(key!("num_chunks"), it.num_chunks);
            self.int_entry(key!("unit_size"), it.unit_size);
            self.close(b'}');
        }
        self.quoted_entry(key!("name"), quoted_op_name(op.name));
        if let Some((_, n)) = op.barrier {
            self.int_entry(key!("num_threadblocks"), n);
        }
        if iter.is_some() {
            self.ops_entry(key!("ops"), op.body());
        }
        if let Some(r) = op.reduce_op {
            self.word_entry(key!("reduce_op"), r.name());
        }
        if !op.semaphore_ids().is_empty() {
            self.ints_entry(key!("semaphore_ids"), op.semaphore_ids());
        }
        if let Some(g) = group {
            self.int_entry(key!("size"), g.size);
        }
        if has_buffers {
            self.objects_entry(key!("src_buff"), &op.src, Self::buffer_ref);
        }
        if let Some(t) = op.tbg {
            self.key(key!("tbg_info"));
            self.open(b'{');
            self.int_entry(key!("tb_id"), t.tb_id);
            self.int_entry(key!("tbg_size"), t.size);
            self.close(b'}');
        }
    }

    #[inline(always)]
    fn buffer_ref(&mut self, r: &BufRef) {
        if let RefTarget::Remote { id, .. } = r.target {
            self.int_entry(key!("buffer_id"), id);
        }
        self.int_entry(key!("index"), r.index);
        if let Some(rank) = r.rank {
            self.int_entry(key!("rank"), rank);
        }
        self.int_entry(key!("size"), r.size);
        if let RefTarget::Switch { id } = r.target {
            self.int_entry(key!("switch_channel_id"), id);
        }
        if let RefTarget::Local(kind) = r.target {
            self.quoted_entry(key!("type"), quoted_buffer_code(kind));
        }
    }
}
