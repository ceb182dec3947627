//! What a kernel says when it stops waiting: every spin of the prelude has
//! a time budget, and the first to run out writes which grid block, op and
//! lane waited, for what, and what it saw, into the report words of the
//! sync array (`SyncLayout::report`); every other spin then gives up too, so
//! the launch ends instead of hanging. This module reads those words back
//! into the plan's terms.

use crate::diag::Span;
use crate::ir::{ChannelKind, Op, Plan};

/// Report words: what, block, op, lane, seen, wanted, the claim word, and
/// the launch (its packet flag: 1, 2, ... in a run).
pub const WORDS: usize = 8;

/// A spin that ran out of time, in the plan's terms.
#[derive(Debug, Clone, PartialEq)]
pub struct GaveUp {
    pub rank: u32,
    pub tb: u32,
    /// The op's index in its block, and in its pipeline's body.
    pub op: usize,
    pub body: Option<usize>,
    /// What it waited for, in words.
    pub what: String,
    /// The op's source span, when the plan was compiled here.
    pub span: Option<Span>,
    /// Which launch of the run it was (1, 2, ...): semaphores and signals
    /// carry over from launch to launch, so a plan that runs one launch
    /// can hang in the next.
    pub launch: u64,
    /// Whether it waited (false: packets off their slots, a fault of the
    /// plan's layout that no wait or launch explains).
    pub waited: bool,
}

impl std::fmt::Display for GaveUp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "rank {} thread block {} op {}",
            self.rank, self.tb, self.op
        )?;
        if let Some(b) = self.body {
            write!(f, " (pipeline body op {b})")?;
        }
        write!(f, ": {}", self.what)
    }
}

/// The report in `words` (the whole sync array after a launch), if a spin
/// gave up; `budget_ms` is the budget it had.
pub fn read(
    plan: &Plan,
    layout: &super::SyncLayout,
    words: &[u64],
    budget_ms: u64,
) -> Option<GaveUp> {
    let r = words.get(layout.report..layout.report + WORDS)?;
    let (what, block, at, lane, seen, wanted) = (r[0], r[1], r[2], r[3], r[4], r[5]);
    if what == 0 {
        return None;
    }
    let (rank, tb) = block_of(plan, block)?;
    let block_ops = &plan.ranks[rank as usize].threadblocks[tb as usize].ops;
    let (top, body) = ((at >> 32) as usize, (at & 0xffff_ffff) as usize);
    let top_op = block_ops.get(top)?;
    let op = match body {
        0 => top_op,
        b => top_op.body().get(b - 1)?,
    };
    let waited = format!("no progress in {budget_ms} ms");
    let what = match what {
        1 => {
            let peer = peer_of(plan, rank, tb, op, lane as usize);
            format!(
                "{} on the op's channel {lane}{peer} waits for signal number {wanted}, and {seen} arrived: {waited}",
                op.name.json()
            )
        }
        2 => format!(
            "barrier {} waits for {} block(s) to arrive (counter {seen}, waits for {wanted}): {waited}",
            op.barrier.map_or(0, |(id, _)| id),
            wanted.saturating_sub(seen)
        ),
        3 => format!(
            "sem_acquire on semaphore {} (value {}): {waited}",
            op.semaphore_ids().get(lane as usize).copied().unwrap_or(0),
            seen as i64
        ),
        4 => format!(
            "{} waits for packet {lane} of this launch (flag {wanted}, the slot holds flag {seen}): {waited}",
            op.name.json()
        ),
        5 => format!(
            "{} addresses packets off their 16-byte slots (offset {} mod 16, data offset {} mod 8): the plan's buffer alignment or thread block group splits packets",
            op.name.json(),
            seen & 0xff,
            seen >> 8
        ),
        other => format!("unknown report {other}"),
    };
    let span = (op.span != Span::default()).then_some(op.span);
    Some(GaveUp {
        rank,
        tb,
        op: top,
        body: (body > 0).then(|| body - 1),
        what,
        span,
        launch: r[7],
        waited: r[0] != 5, // MSCL_GAVE_UP_MISALIGNED
    })
}

/// The (rank, thread block) grid block `block` runs.
fn block_of(plan: &Plan, block: u64) -> Option<(u32, u32)> {
    let mut first = 0u64;
    for (r, rank) in plan.ranks.iter().enumerate() {
        let n = rank.threadblocks.len() as u64;
        if block < first + n {
            return Some((r as u32, (block - first) as u32));
        }
        first += n;
    }
    None
}

/// " (to rank P)" for the op's channel `lane`.
fn peer_of(plan: &Plan, rank: u32, tb: u32, op: &Op, lane: usize) -> String {
    let rank_plan = &plan.ranks[rank as usize];
    let kind = op.channel.unwrap_or(ChannelKind::Memory);
    let peers = match kind {
        ChannelKind::Port => &rank_plan.port_peers,
        _ => &rank_plan.memory_peers,
    };
    op.channel_ids
        .get(lane)
        .and_then(|local| {
            rank_plan.threadblocks[tb as usize]
                .channel_ids(kind)
                .get(*local as usize)
        })
        .and_then(|c| peers.get(*c as usize))
        .map_or(String::new(), |p| {
            format!(" ({} channel from rank {p})", kind.name())
        })
}
