//! A plan as text to read (`msclc FILE --emit ops`): each rank's thread
//! blocks and their ops in the order they run, an op to a line, with what
//! it reads and writes, the peers it signals or waits for, and the program
//! line and loop values that made it.
//!
//! Chunks are written as the language writes them (`input[2]`,
//! `rank(3).scratch[0..4]`) and ops by the names the JSON plan gives them,
//! so that a line reads against the program and against the plan both.
//! A plan read from JSON lists the same, without the program's lines.

use crate::diag::SourceMap;
use crate::ir::*;
use crate::units::{count, human_bytes};
use std::fmt::Write as _;
use std::io::{self, Write};

/// The widest an op's text is padded to, so that the program lines after
/// it line up: wider ops push theirs along.
const PADDED_WIDTH: usize = 64;

/// Writes the listing of `plan`; `sources` places each op in the program
/// (none for a plan read from JSON).
pub fn write_listing(plan: &Plan, sources: Option<&SourceMap>, out: impl Write) -> io::Result<()> {
    let mut out = io::BufWriter::new(out);
    writeln!(out, "{}", header(plan, sources.is_some()))?;
    let mut namer = OpNamer::new(plan);
    for (id, rank) in plan.ranks.iter().enumerate() {
        let mut text = String::new();
        rank_text(&mut namer, sources, id as u32, rank, &mut text);
        out.write_all(text.as_bytes())?;
    }
    out.flush()
}

/// The plan's name, collective and the settings the executor reads; the
/// program's instances after `//` (a JSON plan holds its copies, not
/// their number).
fn header(plan: &Plan, from_program: bool) -> String {
    let c = &plan.collective;
    let o = &plan.options;
    let (min, max) = o.message_sizes();
    let mut text = format!(
        "{}: {} on {}, {}, protocol {}, {} threads per block",
        plan.name,
        c.name,
        count(c.num_ranks.into(), "rank"),
        if c.inplace {
            "in place"
        } else {
            "out of place"
        },
        o.protocol.name(),
        o.num_threads_per_block,
    );
    let _ = match (min, max) {
        (0, u64::MAX) => write!(text, ", every message size"),
        (0, max) => write!(text, ", messages up to {}", human_bytes(max)),
        (min, u64::MAX) => write!(text, ", messages from {}", human_bytes(min)),
        (min, max) => write!(
            text,
            ", messages from {} to {}",
            human_bytes(min),
            human_bytes(max)
        ),
    };
    if o.use_double_scratch_buffer {
        text.push_str(", use_double_scratch_buffer");
    }
    if o.reuse_resources {
        text.push_str(", reuse_resources");
    }
    if o.buffer_alignment != Options::default().buffer_alignment {
        let _ = write!(text, ", buffer_alignment {}", o.buffer_alignment);
    }
    if from_program && o.instances > 1 {
        let i = o.instances;
        let _ = write!(
            text,
            "  // {i} instances: the program's thread block t is blocks {i}t to {i}t + {}",
            i - 1
        );
    }
    text
}

/// Rank `id`'s buffers, semaphores and thread blocks.
fn rank_text(
    namer: &mut OpNamer,
    sources: Option<&SourceMap>,
    id: u32,
    rank: &RankPlan,
    text: &mut String,
) {
    let _ = write!(
        text,
        "\nrank {id}: chunks input {}, output {}, scratch {}",
        rank.input_chunks, rank.output_chunks, rank.scratch_chunks
    );
    match &rank.semaphores[..] {
        [] => {}
        [first, rest @ ..] if rest.iter().all(|v| v == first) => {
            let n = count(rank.semaphores.len() as u64, "semaphore");
            let _ = write!(text, "; {n} starting at {first}");
        }
        values => {
            let each: Vec<String> = values
                .iter()
                .enumerate()
                .map(|(s, v)| format!("{s} = {v}"))
                .collect();
            let _ = write!(text, "; semaphores starting at {}", each.join(", "));
        }
    }
    text.push('\n');
    for (tb, block) in rank.threadblocks.iter().enumerate() {
        let tb = tb as u32;
        let _ = write!(text, "  thread block {tb}");
        let mut sep = ':';
        for (kind, ids) in &block.channels {
            let local: Vec<u32> = (0..ids.len() as u32).collect();
            let ends = namer.channel_ends(id, tb, *kind, &local);
            let _ = write!(text, "{sep} {} channels {ends}", kind.name());
            sep = ';';
        }
        text.push('\n');
        let mut lines: Vec<(String, String)> = Vec::with_capacity(block.ops.len());
        for (i, op) in block.ops.iter().enumerate() {
            let plan = namer.plan;
            lines.push((
                format!("{i:>5}  {}", namer.op_text(id, tb, op)),
                origin(plan, sources, op),
            ));
            for (j, inner) in op.body().iter().enumerate() {
                let line = format!("{:7}{i}.{j}  {}", "", namer.op_text(id, tb, inner));
                lines.push((line, origin(plan, sources, inner)));
            }
        }
        let width = lines
            .iter()
            .map(|(op, _)| op.chars().count())
            .filter(|w| *w <= PADDED_WIDTH)
            .max()
            .unwrap_or(0);
        for (op, origin) in lines {
            text.push_str(&op);
            if !origin.is_empty() {
                let pad = width.saturating_sub(op.chars().count());
                let _ = write!(text, "{:pad$}  // {origin}", "");
            }
            text.push('\n');
        }
    }
}

/// `allreduce.mscl:28:9, gpu = 0, peer = 1`: where in the program `op`
/// was made, and `fused` for an op that fusion made of several (whose
/// line is its first's); empty for a plan read from JSON.
fn origin(plan: &Plan, sources: Option<&SourceMap>, op: &Op) -> String {
    let Some((file, line, column)) = sources.and_then(|s| s.location(op.span)) else {
        return String::new();
    };
    let mut text = format!("{file}:{line}:{column}");
    for call in plan.loops.call_sites(op.context) {
        if let Some((file, line, column)) = sources.and_then(|s| s.location(call)) {
            let _ = write!(text, " called from {file}:{line}:{column}");
        }
    }
    if let Some(values) = plan.loops.text(op.context).filter(|v| !v.is_empty()) {
        let _ = write!(text, ", {values}");
    }
    if op.fused {
        text.push_str(", fused");
    }
    text
}

/// Writes ops as lines of a plan (`OpNamer::op_text`), naming each rank's
/// channels by their peers and, where a rank has several of a kind to one
/// peer, which of them (`1#2`, the third): channels pair by that number.
pub struct OpNamer<'p> {
    plan: &'p Plan,
    channels: ChannelNumbers<'p>,
}

impl<'p> OpNamer<'p> {
    pub fn new(plan: &'p Plan) -> OpNamer<'p> {
        OpNamer {
            plan,
            channels: ChannelNumbers::new(plan),
        }
    }

    /// What an op of block `tb` of rank `rank` does, in a line: its name,
    /// what it reads and writes (`input[0..2] -> rank(3).scratch[4..6]`),
    /// the peers of its channels, and the settings it has beyond the
    /// usual. (An op's `data_sync` is not among them: the plan holds it
    /// as the `nop`s around the op.)
    pub fn op_text(&mut self, rank: u32, tb: u32, op: &Op) -> String {
        let r = &self.plan.ranks[rank as usize];
        let mut text = op.name.json().to_string();
        let refs = |list: &[BufRef]| -> String {
            let names: Vec<Ref> = list.iter().map(|b| buffer_ref(r, tb, op, b)).collect();
            ref_list(&names)
        };
        if !op.src.is_empty() {
            let _ = write!(text, " {}", refs(&op.src));
        }
        if !op.dst.is_empty() {
            let _ = write!(text, " -> {}", refs(&op.dst));
        }
        if let Some(g) = op.group_reduce() {
            // Read through the switch channel, into a chunk of the rank.
            let switch = op
                .channel_ids
                .first()
                .and_then(|id| r.switch_channel(tb, *id));
            let members = switch.map_or("?".to_string(), |s| rank_list(&s.ranks));
            let dst = chunks(g.dst_kind, g.dst_index, g.size);
            let _ = write!(
                text,
                " switch({members}).{} -> ",
                chunks(g.buffer, g.buffer_offset, g.size)
            );
            let _ = match g.dst_rank == rank {
                true => write!(text, "{dst}"),
                false => write!(text, "rank({}).{dst}", g.dst_rank),
            };
        }
        // A switch op's references name its switch channel already.
        let kind = op.channel.filter(|k| *k != ChannelKind::Switch);
        if let (Some(kind), true) = (kind, op.writes_channel_ids()) {
            let ends = self.channel_ends(rank, tb, kind, &op.channel_ids);
            let _ = write!(text, " over {} {ends}", kind.name());
        }
        if let Some(reduce) = op.reduce_op.filter(|r| *r != ReduceOp::Sum) {
            let _ = write!(text, ", reduce_op {}", reduce.name());
        }
        if let Some((id, blocks)) = op.barrier {
            let _ = write!(text, " id {id} of {blocks} thread blocks");
        }
        let semaphores = op.semaphore_ids();
        if !semaphores.is_empty() {
            let noun = if semaphores.len() == 1 {
                "semaphore"
            } else {
                "semaphores"
            };
            let _ = write!(text, " {noun} {}", rank_list(semaphores));
        }
        if let Some(t) = op.tbg {
            let _ = write!(text, ", part {} of a tb_group of {}", t.tb_id, t.size);
        }
        if let Some(it) = op.iter_context() {
            let unit = human_bytes(it.unit_size);
            let _ = write!(text, " unit_size {unit}, num_chunks {}", it.num_chunks);
        }
        text
    }

    /// The far ends of rank `rank`'s block `tb`'s channels `ids` of
    /// `kind`: `to 1 2..5` (their peers; `1#2`, the third channel to rank
    /// 1, where there are several), or the switch channels
    /// (`switch(0..8).input`).
    fn channel_ends(&mut self, rank: u32, tb: u32, kind: ChannelKind, ids: &[u32]) -> String {
        let r = &self.plan.ranks[rank as usize];
        if kind == ChannelKind::Switch {
            let switches: Vec<String> = ids
                .iter()
                .map(|&id| match r.switch_channel(tb, id) {
                    Some(s) => format!("switch({}).{}", rank_list(&s.ranks), s.buffer.name()),
                    None => "switch(?)".to_string(),
                })
                .collect();
            return switches.join(" ");
        }
        let table = r
            .threadblocks
            .get(tb as usize)
            .map_or(&[][..], |b| b.channel_ids(kind));
        let ends: Vec<(u32, Option<u32>)> = ids
            .iter()
            .map(|&id| match table.get(id as usize) {
                Some(&global) => {
                    let end = (rank, kind, global);
                    let (k, of) = self.channels.number(end);
                    (self.channels.peer(end), (of > 1).then_some(k))
                }
                None => (u32::MAX, None),
            })
            .collect();
        format!("to {}", peer_list(&ends))
    }
}

/// One chunk reference of an op, named: where (`rank(3).` or nothing for
/// the rank's own, `switch(0..8).`) and what (`scratch[0..4]`).
#[derive(Clone, PartialEq)]
enum Ref {
    Local(String),
    Remote(u32, String),
    Other(String),
}

/// A buffer reference as the language writes a chunk: `input[2]`,
/// `rank(3).scratch[0..4]`, `switch(0..8).input[1]`.
fn buffer_ref(rank: &RankPlan, tb: u32, op: &Op, r: &BufRef) -> Ref {
    match r.target {
        RefTarget::Local(kind) => Ref::Local(chunks(kind, r.index, r.size)),
        RefTarget::Remote { id, kind } => {
            let channel = op.channel.unwrap_or(ChannelKind::Memory);
            match rank.remote_buffer(tb, channel, id) {
                Some(b) => Ref::Remote(b.rank, chunks(kind, r.index, r.size)),
                None => Ref::Other(format!("rank(?).{}", chunks(kind, r.index, r.size))),
            }
        }
        RefTarget::Switch { id } => Ref::Other(match rank.switch_channel(tb, id) {
            Some(s) => format!(
                "switch({}).{}",
                rank_list(&s.ranks),
                chunks(s.buffer, r.index, r.size)
            ),
            None => format!("switch(?)[{}]", r.index),
        }),
    }
}

/// A list of references, as short as it reads: the same chunk of ranks in
/// a row as one (`rank(1..8).output[0]`), a reference repeated as one with
/// its count (`output[0] ×7`: a fused put sends it to each peer).
fn ref_list(refs: &[Ref]) -> String {
    let mut parts = Vec::new();
    let mut at = 0;
    while at < refs.len() {
        let mut end = at + 1;
        while end < refs.len() && refs[end] == refs[at] {
            end += 1;
        }
        if end - at > 1 {
            parts.push(format!("{} ×{}", ref_text(&refs[at]), end - at));
            at = end;
            continue;
        }
        if let Ref::Remote(first, what) = &refs[at] {
            let mut ranks = vec![*first];
            while let Some(Ref::Remote(q, same)) = refs.get(at + ranks.len()) {
                if same != what || u64::from(*q) != u64::from(*first) + ranks.len() as u64 {
                    break;
                }
                ranks.push(*q);
            }
            if ranks.len() >= 3 {
                parts.push(format!("rank({}).{what}", rank_list(&ranks)));
                at += ranks.len();
                continue;
            }
        }
        parts.push(ref_text(&refs[at]));
        at += 1;
    }
    parts.join(", ")
}

fn ref_text(r: &Ref) -> String {
    match r {
        Ref::Local(what) | Ref::Other(what) => what.clone(),
        Ref::Remote(rank, what) => format!("rank({rank}).{what}"),
    }
}

/// Channel ends as a list to read: peers in a row with the same channel
/// number as ranges (`1..8`, `1..8#1`).
fn peer_list(ends: &[(u32, Option<u32>)]) -> String {
    let mut parts = Vec::new();
    let mut at = 0;
    while at < ends.len() {
        let (first, k) = ends[at];
        let mut end = at + 1;
        while end < ends.len()
            && ends[end].1 == k
            && u64::from(ends[end].0) == u64::from(first) + (end - at) as u64
        {
            end += 1;
        }
        let suffix = k.map_or(String::new(), |k| format!("#{k}"));
        if end - at >= 3 {
            parts.push(format!(
                "{first}..{}{suffix}",
                u64::from(ends[end - 1].0) + 1
            ));
        } else {
            for (p, _) in &ends[at..end] {
                parts.push(if *p == u32::MAX {
                    "?".to_string()
                } else {
                    format!("{p}{suffix}")
                });
            }
        }
        at = end;
    }
    parts.join(" ")
}

/// Ranks (or ids) as a list to read: runs of three or more in a row as
/// ranges, as the language writes them (`0 2..8` for 0, 2, 3, 4, 5, 6, 7).
pub fn rank_list(ranks: &[u32]) -> String {
    let ends: Vec<(u32, Option<u32>)> = ranks.iter().map(|r| (*r, None)).collect();
    peer_list(&ends)
}

/// `input[2]` for one chunk, `input[2..6]` for four.
fn chunks(kind: BufferKind, index: u32, size: u32) -> String {
    match size {
        1 => format!("{}[{index}]", kind.name()),
        _ => format!(
            "{}[{index}..{}]",
            kind.name(),
            u64::from(index) + u64::from(size)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::rank_list;

    #[test]
    fn runs_of_three_ranks_or_more_are_ranges() {
        assert_eq!(rank_list(&[0, 2, 3, 4, 5, 6, 7]), "0 2..8");
        assert_eq!(rank_list(&[1, 2, 5, 6, 7, 9]), "1 2 5..8 9");
        assert_eq!(rank_list(&[3, 3, 3]), "3 3 3");
        assert_eq!(rank_list(&[7, 6, 5]), "7 6 5");
        assert_eq!(rank_list(&[]), "");
    }
}
