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
use crate::units::human_bytes;
use std::fmt::Write as _;
use std::io::{self, Write};

/// The widest an op's text is padded to, so that the program lines after
/// it line up: wider ops push theirs along.
const PADDED_WIDTH: usize = 64;

/// Writes the listing of `plan`; `sources` places each op in the program
/// (none for a plan read from JSON).
pub fn write_listing(plan: &Plan, sources: Option<&SourceMap>, out: impl Write) -> io::Result<()> {
    let mut out = io::BufWriter::new(out);
    writeln!(out, "{}", header(plan))?;
    for (id, rank) in plan.ranks.iter().enumerate() {
        let mut text = String::new();
        rank_text(plan, sources, id as u32, rank, &mut text);
        out.write_all(text.as_bytes())?;
    }
    out.flush()
}

/// The plan's name, collective and the settings the executor reads.
fn header(plan: &Plan) -> String {
    let c = &plan.collective;
    let o = &plan.options;
    let (min, max) = o.message_sizes();
    let sizes = match (min, max) {
        (0, u64::MAX) => "every message size".to_string(),
        (0, max) => format!("messages up to {}", human_bytes(max)),
        (min, u64::MAX) => format!("messages from {}", human_bytes(min)),
        (min, max) => format!("messages from {} to {}", human_bytes(min), human_bytes(max)),
    };
    let place = if c.inplace {
        "in place"
    } else {
        "out of place"
    };
    format!(
        "{}: {} on {} ranks, {place}, protocol {}, {} threads per block, {sizes}",
        plan.name,
        c.name,
        c.num_ranks,
        o.protocol.name(),
        o.num_threads_per_block,
    )
}

/// Rank `id`'s buffers, semaphores and thread blocks.
fn rank_text(
    plan: &Plan,
    sources: Option<&SourceMap>,
    id: u32,
    rank: &RankPlan,
    text: &mut String,
) {
    let _ = write!(
        text,
        "\nrank {id}: input {}, output {}, scratch {} chunks",
        rank.input_chunks, rank.output_chunks, rank.scratch_chunks
    );
    if !rank.semaphores.is_empty() {
        let initial: Vec<String> = rank.semaphores.iter().map(i64::to_string).collect();
        let _ = write!(text, "; semaphores starting at {}", initial.join(", "));
    }
    text.push('\n');
    for (tb, block) in rank.threadblocks.iter().enumerate() {
        let tb = tb as u32;
        let _ = write!(text, "  thread block {tb}");
        let mut sep = ':';
        for (kind, ids) in &block.channels {
            let local: Vec<u32> = (0..ids.len() as u32).collect();
            let ends = channel_ends(rank, tb, *kind, &local);
            let _ = write!(text, "{sep} {} channels {ends}", kind.name());
            sep = ';';
        }
        text.push('\n');
        let lines: Vec<(String, String)> = block
            .ops
            .iter()
            .enumerate()
            .flat_map(|(i, op)| {
                let inner = op.body().iter().enumerate();
                std::iter::once((i.to_string(), op))
                    .chain(inner.map(move |(j, inner)| (format!("{i}.{j}"), inner)))
            })
            .map(|(number, op)| {
                (
                    format!("{number:>5}  {}", op_text(plan, id, tb, op)),
                    origin(plan, sources, op),
                )
            })
            .collect();
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
    if let Some(values) = plan.loops.text(op.context).filter(|v| !v.is_empty()) {
        let _ = write!(text, ", {values}");
    }
    if op.fused {
        text.push_str(", fused");
    }
    text
}

/// What an op does, in a line: its name, what it reads and writes
/// (`input[0..2] -> rank(3).scratch[4..6]`), the peers of its channels,
/// and the settings it has beyond the usual. (An op's `data_sync` is not
/// among them: the plan holds it as the `nop`s around the op.)
pub fn op_text(plan: &Plan, rank: u32, tb: u32, op: &Op) -> String {
    let r = &plan.ranks[rank as usize];
    let mut text = op.name.json().to_string();
    let refs = |list: &[BufRef]| -> String {
        let parts: Vec<String> = list.iter().map(|b| buffer_ref(r, tb, op, b)).collect();
        parts.join(", ")
    };
    if !op.src.is_empty() {
        let _ = write!(text, " {}", refs(&op.src));
    }
    if !op.dst.is_empty() {
        let _ = write!(text, " -> {}", refs(&op.dst));
    }
    if let Some(g) = op.group_reduce() {
        let _ = write!(
            text,
            " {} -> rank({}).{}",
            chunks(g.buffer, g.buffer_offset, g.size),
            g.dst_rank,
            chunks(g.dst_kind, g.dst_index, g.size)
        );
    }
    if let (Some(kind), true) = (op.channel, op.writes_channel_ids()) {
        let ends = channel_ends(r, tb, kind, &op.channel_ids);
        let _ = write!(text, " over {} {ends}", kind.name());
    }
    if let Some(reduce) = op.reduce_op.filter(|r| *r != ReduceOp::Sum) {
        let _ = write!(text, ", reduce_op {}", reduce.name());
    }
    if let Some((id, blocks)) = op.barrier {
        let _ = write!(text, " id {id} of {blocks} thread blocks");
    }
    if !op.semaphore_ids().is_empty() {
        let ids = op.semaphore_ids();
        let noun = if ids.len() == 1 {
            "semaphore"
        } else {
            "semaphores"
        };
        let _ = write!(text, " {noun} {}", rank_list(ids));
    }
    if let Some(t) = op.tbg {
        let _ = write!(text, ", part {} of a tb_group of {}", t.tb_id, t.size);
    }
    if let Some(it) = op.iter_context() {
        let unit = human_bytes(it.unit_size);
        let _ = write!(text, " num_chunks {}, unit_size {unit}", it.num_chunks);
    }
    text
}

/// The far ends of block `tb`'s channels `ids` of `kind`: `to 1 2..5`
/// (their peers), or `of switch(0..8)` (a switch channel's ranks).
fn channel_ends(rank: &RankPlan, tb: u32, kind: ChannelKind, ids: &[u32]) -> String {
    if kind == ChannelKind::Switch {
        let switches: Vec<String> = ids
            .iter()
            .map(|&id| match rank.switch_channel(tb, id) {
                Some(s) => switch_name(&s.ranks),
                None => "switch(?)".to_string(),
            })
            .collect();
        return format!("of {}", switches.join(" "));
    }
    let peers: Vec<u32> = ids
        .iter()
        .map(|&id| rank.channel_peer(tb, kind, id).unwrap_or(u32::MAX))
        .collect();
    format!("to {}", rank_list(&peers))
}

/// `switch(0..8)`: the multicast of those ranks' buffers.
fn switch_name(ranks: &[u32]) -> String {
    format!("switch({})", rank_list(ranks))
}

/// Ranks as a list to read: runs of three or more in a row as ranges, as
/// the language writes them (`0 2..8` for 0, 2, 3, 4, 5, 6, 7).
pub fn rank_list(ranks: &[u32]) -> String {
    let mut parts = Vec::new();
    let mut at = 0;
    while at < ranks.len() {
        let first = ranks[at];
        let mut end = at + 1;
        while end < ranks.len() && u64::from(ranks[end]) == u64::from(first) + (end - at) as u64 {
            end += 1;
        }
        if end - at >= 3 {
            parts.push(format!("{first}..{}", u64::from(ranks[end - 1]) + 1));
        } else {
            parts.extend(ranks[at..end].iter().map(u32::to_string));
        }
        at = end;
    }
    parts.join(" ")
}

/// A buffer reference as the language writes a chunk: `input[2]`,
/// `rank(3).scratch[0..4]`, `switch(0 1 2 3).input[1]`.
fn buffer_ref(rank: &RankPlan, tb: u32, op: &Op, r: &BufRef) -> String {
    match r.target {
        RefTarget::Local(kind) => chunks(kind, r.index, r.size),
        RefTarget::Remote { id, kind } => {
            let channel = op.channel.unwrap_or(ChannelKind::Memory);
            let owner = rank.remote_buffer(tb, channel, id);
            let owner = owner.map_or("?".to_string(), |b| b.rank.to_string());
            format!("rank({owner}).{}", chunks(kind, r.index, r.size))
        }
        RefTarget::Switch { id } => match rank.switch_channel(tb, id) {
            Some(s) => format!(
                "{}.{}",
                switch_name(&s.ranks),
                chunks(s.buffer, r.index, r.size)
            ),
            None => format!("switch(?)[{}]", r.index),
        },
    }
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
