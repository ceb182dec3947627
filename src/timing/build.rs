//! Turns one timed execution into a `Timeline` for the trace and the
//! picture: a slice per op with what it did, flows from each op to those
//! it let go, and where a deadlocked run's blocks stopped.

use super::critical::CriticalPath;
use super::engine::{Prepared, Times, Why};
use super::timeline::*;
use crate::back::listing::OpNamer;
use crate::ir::{Op, Plan};
use crate::sim::record::Release;
use crate::units::human_bytes;

/// What `timeline` draws, besides the times.
pub struct Labels<'a> {
    pub title: &'a str,
    pub topology: &'a str,
    pub size_bytes: u64,
    pub chunk_bytes: f64,
}

pub fn timeline(
    plan: &Plan,
    prep: &Prepared,
    times: &Times,
    critical: &CriticalPath,
    labels: &Labels,
) -> Timeline {
    let run = prep.run;
    let tracks = run
        .threads
        .iter()
        .map(|&(rank, tb)| Track { rank, tb })
        .collect();
    // Slices go track by track, each in its run order: events are recorded
    // in the simulator's order, which interleaves blocks.
    let mut order: Vec<u32> = (0..run.events.len() as u32)
        .filter(|&e| times.ended[e as usize].is_finite())
        .collect();
    order.sort_by_key(|&e| {
        (
            run.events[e as usize].thread,
            run.events[e as usize].position,
        )
    });
    let mut slice_of = vec![usize::MAX; run.events.len()];
    // A run that deadlocked has no end, and so no critical path to one.
    let mut on_path = vec![false; run.events.len()];
    if run.stuck.is_empty() {
        for &e in &critical.events {
            on_path[e as usize] = true;
        }
    }
    let mut slices = Vec::with_capacity(order.len());
    let mut namer = OpNamer::new(plan);
    for &e in &order {
        let i = e as usize;
        let event = &run.events[i];
        let (rank, tb) = run.threads[event.thread as usize];
        let cost = &prep.costs[i];
        let bytes = (cost.payload * labels.chunk_bytes).round() as u64;
        let mut detail = describe(&mut namer, rank, tb, event.op, bytes);
        if times.done[i] > times.ended[i] {
            detail.push_str(&format!(
                "; the proxy finished it at {:.2} us",
                times.done[i]
            ));
        }
        slice_of[i] = slices.len();
        slices.push(Slice {
            track: event.thread as usize,
            op: event.position as usize,
            name: event.op.name.json().to_string(),
            detail,
            kind: if cost.data {
                SliceKind::Data
            } else {
                SliceKind::Sync
            },
            start_us: times.arrived[i],
            end_us: times.ended[i],
            waited_us: (times.started[i] - times.arrived[i]).max(0.0),
            bytes,
            critical: on_path[i],
        });
    }
    let mut flows = Vec::new();
    for &e in &order {
        let i = e as usize;
        for &(d, why) in &run.events[i].after {
            let kind = match why {
                Release::Signal | Release::Proxy => FlowKind::Signal,
                Release::Semaphore => FlowKind::Semaphore,
                // Only the arrival the barrier waited for, not every one.
                Release::Barrier if times.why[i] == Why::Needed(d, why) => FlowKind::Barrier,
                Release::Barrier => continue,
                Release::Packet | Release::Data => FlowKind::Data,
            };
            let (from, to) = (slice_of[d as usize], slice_of[i]);
            if from != usize::MAX && to != usize::MAX {
                flows.push(Flow { from, to, kind });
            }
        }
    }
    let stuck = run
        .stuck
        .iter()
        .map(|&(thread, position, op)| {
            let last = order
                .iter()
                .rev()
                .find(|&&e| run.events[e as usize].thread == thread);
            StuckAt {
                track: thread as usize,
                op: position,
                name: op.map_or("the kernel's end".to_string(), |op| {
                    op.name.json().to_string()
                }),
                since_us: last.map_or(times.launch_us, |&e| times.ended[e as usize]),
            }
        })
        .collect();
    Timeline {
        title: labels.title.to_string(),
        topology: labels.topology.to_string(),
        size_bytes: labels.size_bytes,
        tracks,
        slices,
        flows,
        end_us: times.end_us,
        stuck,
    }
}

/// What an op does, in a line (`put input[0..2] -> rank(3).scratch[4..6]`,
/// as `msclc --emit ops` lists it), and the bytes it moves.
fn describe(namer: &mut OpNamer, rank: u32, tb: u32, op: &Op, bytes: u64) -> String {
    let mut text = namer.op_text(rank, tb, op);
    if bytes > 0 {
        text.push_str(&format!(", {}", human_bytes(bytes)));
    }
    text
}
