//! A port channel's packet put from a buffer that holds no packets (W0510).
//!
//! Over a memory channel, `put_packets` makes the packets as it writes:
//! data and flags. Over a port channel the host proxy copies the source's
//! bytes as they are, so the source must already hold packets, which only
//! scratch can (`copy_packets`, a reduce with `packet: true`). From an
//! input or output buffer the peer reads plain data as packets whose flags
//! never match, and waits for ever (`msclc sim` finds the deadlock). The
//! reference compiler takes any source.

use crate::diag::{Code, Diagnostic};
use crate::ir::{BufferKind, ChannelKind, Op, OpName, Plan, RefTarget};

/// A W0510 warning at the first such put, with how many more there are.
pub fn plain_sources(plan: &Plan) -> Option<Diagnostic> {
    let mut puts = plan.ranks.iter().enumerate().flat_map(|(r, rank)| {
        rank.threadblocks
            .iter()
            .enumerate()
            .flat_map(move |(t, tb)| {
                tb.ops
                    .iter()
                    .flat_map(|op| std::iter::once(op).chain(op.body()))
                    .filter_map(move |op| Some((r, t, op, plain_source(op)?)))
            })
    });
    let (rank, tb, op, kind) = puts.next()?;
    let more = match puts.count() {
        0 => String::new(),
        n => format!(" (and {n} more)"),
    };
    let message = format!(
        "rank {rank} thread block {tb}: a port channel's put_packets{more} sends its source as packets already made, but the source is in the {} buffer, which holds plain data: the peer waits for packets that never arrive",
        kind.name()
    );
    let mut warning = Diagnostic::warning(
        Code::PortPacketSource,
        op.span,
        message,
        format!("the source is in the {} buffer", kind.name()),
    );
    warning = plan.in_context(warning, op.context);
    Some(warning.with_note(
        "help: make the packets in scratch first (`copy_packets`, or a reduce with `packet: true`) and put those, or put over a memory channel, which makes them",
    ))
}

/// The buffer of a port packet put's source that holds no packets.
fn plain_source(op: &Op) -> Option<BufferKind> {
    if op.name != OpName::PutPackets || op.channel != Some(ChannelKind::Port) {
        return None;
    }
    op.src.iter().find_map(|r| match r.target {
        RefTarget::Local(kind) if kind != BufferKind::Scratch => Some(kind),
        _ => None,
    })
}
