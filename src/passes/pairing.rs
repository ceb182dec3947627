//! Signal/wait pairing: over each channel type, every signal one rank sends
//! to a peer must be matched by a wait of that peer for it. An unmatched
//! signal lets a later execution's wait pass early; a missing one hangs.

use crate::diag::{Diagnostic, Span};
use crate::ir::{ChannelKind, Op, OpName, Plan};
use std::collections::BTreeMap;

/// The signals and waits between one ordered pair of ranks over one channel type.
#[derive(Default)]
struct Tally {
    signals: Vec<Span>,
    waits: Vec<Span>,
}

fn signals(name: OpName) -> bool {
    name.is_signal() || matches!(name, OpName::PutWithSignal | OpName::PutWithSignalAndFlush)
}

pub fn check(plan: &Plan) -> Result<(), Diagnostic> {
    // (kind, signalling rank, waiting rank) -> tally
    let mut tallies: BTreeMap<(ChannelKind, u32, u32), Tally> = BTreeMap::new();
    for (r, rank) in plan.ranks.iter().enumerate() {
        for tb in &rank.threadblocks {
            let mut visit = |op: &Op| {
                let Some(kind) = op.channel else { return };
                let is_signal = signals(op.name);
                if !is_signal && !op.name.is_wait() {
                    return;
                }
                let peers = match kind {
                    ChannelKind::Memory => &rank.memory_peers,
                    ChannelKind::Port => &rank.port_peers,
                    ChannelKind::Switch => return,
                };
                let table = tb.channel_ids(kind);
                for &local in &op.channel_ids {
                    let Some(peer) = table
                        .get(local as usize)
                        .and_then(|id| peers.get(*id as usize))
                    else {
                        continue;
                    };
                    if is_signal {
                        tallies
                            .entry((kind, r as u32, *peer))
                            .or_default()
                            .signals
                            .push(op.span());
                    } else {
                        tallies
                            .entry((kind, *peer, r as u32))
                            .or_default()
                            .waits
                            .push(op.span());
                    }
                }
            };
            for op in &tb.ops {
                visit(op);
                op.body().iter().for_each(&mut visit);
            }
        }
    }
    for ((kind, from, to), t) in &tallies {
        if t.signals.len() == t.waits.len() {
            continue;
        }
        let (ns, nw) = (t.signals.len(), t.waits.len());
        let message = format!(
            "signal/wait mismatch on {} channels: rank {from} issues {ns} signal(s) to rank {to}, but rank {to} performs {nw} wait(s) for rank {from}",
            kind.name()
        );
        let (primary, label) = if ns > nw {
            (
                t.signals[nw],
                format!("signal {} of {ns} has no matching wait", nw + 1),
            )
        } else {
            (
                t.waits[ns],
                format!("wait {} of {nw} has no matching signal", ns + 1),
            )
        };
        let mut d = Diagnostic::error(primary, message, label);
        for (i, s) in t.signals.iter().enumerate() {
            if *s != primary {
                d = d.with_secondary(
                    *s,
                    format!("signal {} of {ns}, rank {from} to rank {to}", i + 1),
                );
            }
        }
        for (i, w) in t.waits.iter().enumerate() {
            if *w != primary {
                d = d.with_secondary(*w, format!("wait {} of {nw}, on rank {to}", i + 1));
            }
        }
        return Err(d.with_note(
            "every signal must be matched by a wait on the peer over a channel of the same type; put_with_signal counts as a signal",
        ));
    }
    Ok(())
}
