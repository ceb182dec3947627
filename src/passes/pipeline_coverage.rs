//! Pipelines that cover fewer chunks than their ops move (W0509), or more
//! (W0511).
//!
//! The executor runs a pipeline's body `ceil(num_chunks * chunk / unit)`
//! times, iteration `i` at byte offset `i * unit` into each op's range (a
//! thread block group's share of it): the iterations cover `num_chunks`
//! chunks from the range's start, whatever the op moves. Of a longer range
//! the rest is never moved (at sizes where whole units do not reach it),
//! which `msclc sim` finds as a wrong result where it matters; past a
//! shorter one the executor's unsigned size wraps and each iteration moves
//! a whole unit beyond the op's range, which the simulator and msclc's
//! kernel do not (they stop at the range).
//! The reference compiler takes `num_chunks` as written either way.

use crate::diag::{Code, Diagnostic};
use crate::ir::{Op, Plan};
use crate::units::count;

/// A warning at the first op whose range a pipeline covers less of than
/// all (W0509), and one at the first it runs past (W0511), each with how
/// many more there are.
pub fn uncovered_ops(plan: &Plan) -> Vec<Diagnostic> {
    let ops = plan.ranks.iter().enumerate().flat_map(|(r, rank)| {
        rank.threadblocks
            .iter()
            .enumerate()
            .flat_map(move |(t, tb)| {
                tb.ops.iter().flat_map(move |pipeline| {
                    let covers = pipeline.iter_context().map(|c| c.num_chunks);
                    let body = pipeline.body().iter();
                    body.filter_map(move |op| {
                        Some(Uncovered {
                            rank: r,
                            tb: t,
                            op,
                            covers: covers?,
                            moves: moves(op)?,
                        })
                    })
                })
            })
    });
    let (mut short, mut past) = ((None, 0), (None, 0));
    for u in ops {
        let (covered, moved) = (
            u64::from(u.covers) * u64::from(u.moves.1),
            u64::from(u.moves.0),
        );
        let tally = match covered.cmp(&moved) {
            std::cmp::Ordering::Less => &mut short,
            std::cmp::Ordering::Greater => &mut past,
            std::cmp::Ordering::Equal => continue,
        };
        tally.0.get_or_insert(u);
        tally.1 += 1;
    }
    [short, past]
        .into_iter()
        .filter_map(|(first, n)| Some(warning(plan, first?, n - 1)))
        .collect()
}

/// An op of a pipeline's body and what the pipeline covers of it.
struct Uncovered<'p> {
    rank: usize,
    tb: usize,
    op: &'p Op,
    /// The pipeline's `num_chunks`.
    covers: u32,
    /// The chunks the op moves, and the thread blocks of its group.
    moves: (u32, u32),
}

/// The warning at `u`, of `more` other ops alike.
fn warning(plan: &Plan, u: Uncovered, more: usize) -> Diagnostic {
    let Uncovered {
        rank,
        tb,
        op,
        covers,
        moves: (chunks, group),
    } = u;
    let more = match more {
        0 => String::new(),
        n => format!(" (and {n} more op(s))"),
    };
    let chunk_count = |n: u32| count(u64::from(n), "chunk");
    let moves = match group {
        1 => format!("moves {}", chunk_count(chunks)),
        g => format!(
            "moves {} over a group of {g} thread blocks, {chunks}/{g} each",
            chunk_count(chunks)
        ),
    };
    let (code, fate) = if u64::from(covers) * u64::from(group) < u64::from(chunks) {
        (Code::PipelineCoverage, "the executor's iterations end there (rounded up to a whole unit), and at sizes where that is short of the op's range, the rest is never moved")
    } else {
        (Code::PipelineOverrun, "past the op's range, today's executor's unsigned size wraps and each iteration moves a whole unit beyond it, over whatever lies there (`msclc sim` and `msclc run` stop at the range)")
    };
    let message = format!(
        "rank {rank} thread block {tb}: this op{more} {moves}, in a pipeline that covers {} of each op (`num_chunks: {covers}`): {fate}",
        chunk_count(covers)
    );
    let label = format!("{moves}; the pipeline covers {}", chunk_count(covers));
    let mut warning = Diagnostic::warning(code, op.span, message, label);
    warning = plan.in_context(warning, op.context);
    warning.with_note(match chunks % group {
        0 => "help: give the pipeline the chunks each of its ops moves per thread block as `num_chunks`, or make each op move that many",
        // No whole num_chunks matches a fraction of a chunk.
        _ => "help: let each op move a multiple of its group's thread blocks in chunks, and give the pipeline the chunks each thread block then moves as `num_chunks`",
    })
}

/// The chunks `op` moves and the thread blocks of its group, for an op
/// that honours the pipeline's offsets (packet ops run the same every
/// iteration, W0503).
fn moves(op: &Op) -> Option<(u32, u32)> {
    if !op.name.honours_pipeline_offsets() {
        return None;
    }
    let data = op.src.first().or(op.dst.first())?;
    Some((data.size, op.tbg.map_or(1, |g| g.size.max(1))))
}
