//! The critical path: the chain of ops, each the one that let the next
//! start, from the launch to the last block's end. Its time is all of the
//! collective's: shortening anything off it changes nothing.

use super::engine::{Prepared, Times, Why, NONE};
use crate::sim::record::Release;

/// The critical path of one timed execution, and where its time goes.
#[derive(Debug, Clone, PartialEq)]
pub struct CriticalPath {
    /// Its ops, from the first to the last.
    pub events: Vec<u32>,
    pub launch_us: f64,
    /// Time in data ops (moving bytes, and their fixed cost).
    pub data_us: f64,
    pub data_ops: usize,
    /// Time in synchronisation ops themselves.
    pub sync_us: f64,
    pub sync_ops: usize,
    /// Time between an op's end and the start of the op of another block
    /// it let go: a signal, packet or proxy request in flight.
    pub in_flight_us: f64,
    /// Of all blocks' time from the launch to their end, the share spent
    /// waiting for another block.
    pub waiting_share: f64,
}

/// Follows what made each op start, back from the last to end.
pub fn critical_path(prep: &Prepared, times: &Times) -> CriticalPath {
    let mut path = Vec::new();
    let last = (0..times.ended.len())
        .filter(|&i| times.ended[i].is_finite())
        .max_by(|&a, &b| times.ended[a].total_cmp(&times.ended[b]));
    let mut cur = last.map_or(NONE, |i| i as u32);
    while cur != NONE {
        path.push(cur);
        cur = match times.why[cur as usize] {
            Why::Launch => NONE,
            Why::Block => prep.previous_on_track(cur),
            Why::Needed(d, _) => d,
        };
    }
    path.reverse();
    let mut c = CriticalPath {
        events: Vec::new(),
        launch_us: times.launch_us,
        data_us: 0.0,
        data_ops: 0,
        sync_us: 0.0,
        sync_ops: 0,
        in_flight_us: 0.0,
        waiting_share: waiting_share(times),
    };
    for (k, &e) in path.iter().enumerate() {
        let i = e as usize;
        // A port op's effect is its proxy's end: what it let go waited for
        // that, not for the block's push.
        let busy = times.ended[i] - times.started[i];
        if prep.costs[i].data {
            c.data_us += busy;
            c.data_ops += 1;
        } else {
            c.sync_us += busy;
            c.sync_ops += 1;
        }
        if let Some(&next) = path.get(k + 1) {
            if let Why::Needed(_, why) = times.why[next as usize] {
                let from = if why == Release::Barrier {
                    times.ended[i]
                } else {
                    times.done[i]
                };
                // The proxy's own transfer counts as data.
                if times.done[i] > times.ended[i] && why != Release::Barrier {
                    c.data_us += times.done[i] - times.ended[i];
                }
                c.in_flight_us += (times.started[next as usize] - from).max(0.0);
            }
        }
    }
    c.events = path;
    c
}

/// Of the blocks' time, the share spent waiting for other blocks.
fn waiting_share(times: &Times) -> f64 {
    let mut waiting = 0.0;
    let mut total = 0.0;
    for i in 0..times.ended.len() {
        if !times.ended[i].is_finite() {
            continue;
        }
        waiting += (times.started[i] - times.arrived[i]).max(0.0);
        total += times.ended[i] - times.arrived[i];
    }
    if total > 0.0 {
        waiting / total
    } else {
        0.0
    }
}
