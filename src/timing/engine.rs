//! Puts times on a recorded execution: a discrete-event simulation in
//! which each thread block runs its ops in order, an op starts when its
//! block is free and what it needs from other blocks has arrived, and the
//! bytes of the ops running at once share each resource equally.
//!
//! An op's transfer is fluid. A resource is shared in proportion to what
//! each transfer on it has to move, so that the transfers on it progress
//! at one pace (as the symmetric steps of a collective do); a transfer
//! moves at the pace of its slowest resource, and never faster than one
//! block copies. Each start or end of a transfer changes the pace of the
//! others on its resources, which are then settled and rescheduled.
//! (Capacity a transfer slowed elsewhere leaves unused is not handed to
//! the others: the model errs slow where transfers of unequal pace meet.)
//!
//! Port channel ops have two parts: the block pushes a request and goes
//! on; the channel's proxy runs the requests in order, each after the
//! proxy's latency, and delivers its signal when its transfer is done.

use super::cost::{Cost, Resource, RESOURCE_KINDS};
use super::topology::Topology;
use crate::sim::record::{Release, Run};
use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

/// No event.
pub const NONE: u32 = u32::MAX;

/// What made an op start when it did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Why {
    /// The launch: its block's first op, needing nothing else.
    Launch,
    /// Its block's previous op ended.
    Block,
    /// Another block's op, for this reason.
    Needed(u32, Release),
}

/// A recorded execution made ready to time at any size.
pub struct Prepared<'r, 'p> {
    pub run: &'r Run<'p>,
    pub costs: Vec<Cost>,
    /// Each event's rank.
    pub ranks: Vec<u32>,
    /// The next event of the same block, and the one before.
    next_on_track: Vec<u32>,
    previous_on_track: Vec<u32>,
    /// Who needs each event, and why (data flows left out: not waits).
    needed_by: Vec<Vec<(u32, Release)>>,
    /// Dependencies each event waits for, its block's previous op included.
    needs: Vec<u32>,
    first_on_track: Vec<u32>,
    resources: usize,
    /// Chunks of buffer on the GPU that holds the most: every rank's input,
    /// output (once, in place) and scratch there.
    chunks_on_a_gpu: f64,
}

impl<'r, 'p> Prepared<'r, 'p> {
    pub fn new(plan: &crate::ir::Plan, top: &Topology, run: &'r Run<'p>) -> Prepared<'r, 'p> {
        let n = run.events.len();
        let mut next_on_track = vec![NONE; n];
        let mut previous_on_track = vec![NONE; n];
        let mut first_on_track = vec![NONE; run.threads.len()];
        let mut last_on_track = vec![NONE; run.threads.len()];
        let mut needed_by = vec![Vec::new(); n];
        let mut needs = vec![0u32; n];
        let mut costs = Vec::with_capacity(n);
        let mut ranks = Vec::with_capacity(n);
        for (i, e) in run.events.iter().enumerate() {
            let t = e.thread as usize;
            let (rank, tb) = run.threads[t];
            ranks.push(rank);
            costs.push(super::cost::cost(plan, top, e, rank, tb));
            match last_on_track[t] {
                NONE => first_on_track[t] = i as u32,
                prev => {
                    next_on_track[prev as usize] = i as u32;
                    previous_on_track[i] = prev;
                    needs[i] += 1;
                }
            }
            last_on_track[t] = i as u32;
            for &(d, why) in &e.after {
                if why != Release::Data {
                    needed_by[d as usize].push((i as u32, why));
                    needs[i] += 1;
                }
            }
        }
        let gpus = super::cost::gpu_count(plan, top) as usize;
        let mut chunks = vec![0u64; gpus];
        for (rank, r) in plan.ranks.iter().enumerate() {
            let (input, output) = (u64::from(r.input_chunks), u64::from(r.output_chunks));
            let io = if plan.collective.inplace {
                input.max(output)
            } else {
                input + output
            };
            chunks[top.gpu(rank as u32) as usize % gpus] += io + u64::from(r.scratch_chunks);
        }
        Prepared {
            chunks_on_a_gpu: chunks.into_iter().max().unwrap_or(0) as f64,
            run,
            costs,
            ranks,
            next_on_track,
            previous_on_track,
            needed_by,
            needs,
            first_on_track,
            resources: gpus * RESOURCE_KINDS,
        }
    }
}

impl Prepared<'_, '_> {
    /// The op its block ran before `e`.
    pub fn previous_on_track(&self, e: u32) -> u32 {
        self.previous_on_track[e as usize]
    }
}

/// When each op ran, at one size.
pub struct Times {
    /// When the block got to the op.
    pub arrived: Vec<f64>,
    /// When it could start: what it needed had arrived.
    pub started: Vec<f64>,
    /// When the block was done with it.
    pub ended: Vec<f64>,
    /// When its effect was complete (a port transfer's proxy end).
    pub done: Vec<f64>,
    pub why: Vec<Why>,
    /// When every block starts.
    pub launch_us: f64,
    /// The last block's end, microseconds from the launch.
    pub end_us: f64,
}

#[derive(Clone, Copy, PartialEq)]
enum Happening {
    Start(u32),
    TransferStart(u32, Phase),
    TransferDone(u32, u64),
    BlockEnd(u32),
    ProxyStart(u32),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Block,
    Proxy,
}

struct At {
    time: f64,
    seq: u64,
    what: Happening,
}

impl PartialEq for At {
    fn eq(&self, other: &At) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for At {}
impl PartialOrd for At {
    fn partial_cmp(&self, other: &At) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for At {
    /// Earliest first (the heap is a max-heap), then first scheduled.
    fn cmp(&self, other: &At) -> Ordering {
        other
            .time
            .total_cmp(&self.time)
            .then(other.seq.cmp(&self.seq))
    }
}

/// A transfer in flight.
struct Transfer {
    event: u32,
    phase: Phase,
    /// Bytes on each resource, and through its block.
    demands: Vec<(u32, f64)>,
    block: f64,
    /// Of the whole transfer, what is left (1 to 0).
    left: f64,
    /// Fraction per microsecond.
    rate: f64,
    since: f64,
    version: u64,
    /// The last reshare that gave it a pace.
    reshared: u64,
}

struct Engine<'a, 'r, 'p> {
    prep: &'a Prepared<'r, 'p>,
    top: &'a Topology,
    chunk: f64,
    /// How many times slower packets move at this size than in the L2:
    /// through their block, and through the GPU's memory.
    packet_pace: (f64, f64),
    heap: BinaryHeap<At>,
    seq: u64,
    times: Times,
    needs: Vec<u32>,
    /// Bytes per microsecond of each resource.
    capacity: Vec<f64>,
    /// The transfers on each resource, and the bytes they have in all.
    /// (`on` keeps finished transfers until the next reshare.)
    on: Vec<Vec<u32>>,
    active_on: Vec<u32>,
    load: Vec<f64>,
    /// Resources changed since the last reshare.
    changed: Vec<u32>,
    is_changed: Vec<bool>,
    /// Reshares so far.
    round: u64,
    transfers: Vec<Transfer>,
    /// Per proxy: requests waiting, and whether it is busy.
    proxy_queue: Vec<VecDeque<u32>>,
    proxy_busy: Vec<bool>,
    proxy_ready: Vec<f64>,
}

/// Times `prep` on `top` with chunks of `chunk_bytes`.
pub fn time(prep: &Prepared, top: &Topology, chunk_bytes: f64) -> Times {
    let n = prep.run.events.len();
    let gpus = prep.resources / RESOURCE_KINDS;
    let bw = &top.bandwidth;
    // GB/s is 10^3 bytes per microsecond.
    let per_kind = [
        bw.memory,
        bw.nvlink,
        bw.nvlink,
        bw.nic,
        bw.nic,
        bw.block * f64::from(top.sms.max(1)),
    ];
    let capacity = per_kind
        .iter()
        .flat_map(|gbps| std::iter::repeat_n(gbps * 1e3, gpus))
        .collect();
    let past_l2 = prep.chunks_on_a_gpu * chunk_bytes > top.l2_mb * 1e6;
    let mut engine = Engine {
        prep,
        top,
        chunk: chunk_bytes,
        // Past the L2 a block moves packets at `packet_block_past_l2`; the
        // memory's share costs more by what an H100 block loses there
        // (80/60: packet stores are 16 bytes with two flags), less where
        // a topology's block loses less, never below its bandwidth. Tied
        // to the block's in-L2 pace instead, a faster block would make
        // memory slower.
        packet_pace: if past_l2 {
            (
                bw.packet_block / bw.packet_block_past_l2,
                (super::topology::H100_PACKET_BLOCK / bw.packet_block_past_l2).max(1.0),
            )
        } else {
            (1.0, 1.0)
        },
        heap: BinaryHeap::new(),
        seq: 0,
        times: Times {
            arrived: vec![f64::NAN; n],
            started: vec![f64::NAN; n],
            ended: vec![f64::NAN; n],
            done: vec![f64::NAN; n],
            why: vec![Why::Launch; n],
            launch_us: top.latency.launch,
            end_us: top.latency.launch,
        },
        needs: prep.needs.clone(),
        capacity,
        on: vec![Vec::new(); prep.resources],
        load: vec![0.0; prep.resources],
        active_on: vec![0; prep.resources],
        changed: Vec::new(),
        is_changed: vec![false; prep.resources],
        round: 0,
        transfers: Vec::new(),
        proxy_queue: vec![VecDeque::new(); prep.run.proxies.len()],
        proxy_busy: vec![false; prep.run.proxies.len()],
        proxy_ready: vec![0.0; n],
    };
    for &first in &prep.first_on_track {
        if first != NONE {
            engine.times.arrived[first as usize] = top.latency.launch;
            engine.times.started[first as usize] = top.latency.launch;
            if engine.needs[first as usize] == 0 {
                engine.schedule(top.latency.launch, Happening::Start(first));
            }
        }
    }
    engine.run();
    let mut times = engine.times;
    times.end_us = times
        .ended
        .iter()
        .copied()
        .filter(|t| t.is_finite())
        .fold(top.latency.launch, f64::max);
    times
}

/// Stands for the SMs of any GPU in `Engine::pace`.
const SMS: u32 = u32::MAX;

impl Engine<'_, '_, '_> {
    /// How much slower than its cost says `cost` goes through resource `r`
    /// at this size (`SMS`: its block): a packet op past the L2.
    fn pace(&self, cost: &Cost, r: u32) -> f64 {
        let gpus = (self.prep.resources / RESOURCE_KINDS) as u32;
        let sms = r == SMS || r / gpus.max(1) == Resource::Sms as u32;
        let memory = r != SMS && r / gpus.max(1) == Resource::Memory as u32;
        match (cost.packets, sms, memory) {
            (true, true, _) => self.packet_pace.0,
            (true, _, true) => self.packet_pace.1,
            _ => 1.0,
        }
    }

    fn schedule(&mut self, time: f64, what: Happening) {
        self.seq += 1;
        self.heap.push(At {
            time,
            seq: self.seq,
            what,
        });
    }

    /// Runs every happening in time order. What happens at one instant
    /// (the symmetric steps of a collective start and end together) is
    /// run as one batch, and the transfers whose resources it changed get
    /// their new pace once, after it.
    fn run(&mut self) {
        while let Some(first) = self.heap.peek() {
            let now = first.time;
            let instant = now + 1e-9 * now.abs().max(1.0);
            while self.heap.peek().is_some_and(|at| at.time <= instant) {
                let Some(At { what, .. }) = self.heap.pop() else {
                    break;
                };
                match what {
                    Happening::Start(e) => self.start(e, now),
                    Happening::TransferStart(e, phase) => self.transfer_start(e, phase, now),
                    Happening::TransferDone(i, version) => {
                        if self.transfers[i as usize].version == version {
                            self.transfer_done(i, now);
                        }
                    }
                    Happening::BlockEnd(e) => self.block_end(e, now),
                    Happening::ProxyStart(e) => self.transfer_start(e, Phase::Proxy, now),
                }
            }
            self.reshare(now);
        }
    }

    fn start(&mut self, e: u32, now: f64) {
        let i = e as usize;
        self.times.started[i] = now;
        let cost = &self.prep.costs[i];
        let after_fixed = now + cost.fixed_us;
        if cost.on_proxy {
            self.schedule(after_fixed, Happening::BlockEnd(e));
            let proxy = self.prep.run.events[i].proxy.unwrap_or(0) as usize;
            self.proxy_ready[i] = after_fixed + self.top.latency.proxy;
            self.proxy_queue[proxy].push_back(e);
            self.next_on_proxy(proxy, now);
        } else if cost.data {
            self.schedule(after_fixed, Happening::TransferStart(e, Phase::Block));
        } else {
            self.schedule(after_fixed, Happening::BlockEnd(e));
        }
    }

    /// Starts the proxy's next request if it is free.
    fn next_on_proxy(&mut self, proxy: usize, now: f64) {
        if self.proxy_busy[proxy] {
            return;
        }
        if let Some(e) = self.proxy_queue[proxy].pop_front() {
            self.proxy_busy[proxy] = true;
            let at = self.proxy_ready[e as usize].max(now);
            self.schedule(at, Happening::ProxyStart(e));
        }
    }

    fn transfer_start(&mut self, e: u32, phase: Phase, now: f64) {
        let cost = &self.prep.costs[e as usize];
        let bytes: f64 = cost.demands.iter().map(|(_, b)| b).sum::<f64>() + cost.block;
        if bytes * self.chunk <= 0.0 {
            self.transfer_finished(e, phase, now);
            return;
        }
        let index = self.transfers.len() as u32;
        let demands: Vec<(u32, f64)> = cost
            .demands
            .iter()
            .map(|&(r, b)| (r, b * self.chunk * self.pace(cost, r)))
            .collect();
        let resources: Vec<u32> = demands.iter().map(|(r, _)| *r).collect();
        for &(r, bytes) in &demands {
            self.on[r as usize].push(index);
            self.active_on[r as usize] += 1;
            self.load[r as usize] += bytes;
        }
        self.transfers.push(Transfer {
            event: e,
            phase,
            demands,
            block: cost.block * self.chunk * self.pace(cost, SMS),
            left: 1.0,
            rate: 0.0,
            since: now,
            version: 0,
            reshared: 0,
        });
        self.changed(&resources);
    }

    fn transfer_done(&mut self, index: u32, now: f64) {
        let t = &mut self.transfers[index as usize];
        t.left = 0.0;
        t.version += 1;
        let (e, phase) = (t.event, t.phase);
        let demands = std::mem::take(&mut t.demands);
        // Its entries in `on` go at the next reshare.
        for &(r, bytes) in &demands {
            let r = r as usize;
            self.active_on[r] -= 1;
            // (Exactly nothing once none is left: no rounding drift.)
            self.load[r] = if self.active_on[r] == 0 {
                0.0
            } else {
                self.load[r] - bytes
            };
        }
        let resources: Vec<u32> = demands.iter().map(|(r, _)| *r).collect();
        self.changed(&resources);
        self.transfer_finished(e, phase, now);
    }

    fn transfer_finished(&mut self, e: u32, phase: Phase, now: f64) {
        match phase {
            Phase::Block => self.block_end(e, now),
            Phase::Proxy => {
                self.times.done[e as usize] = now;
                self.release(e, now, |why| why != Release::Barrier);
                let proxy = self.prep.run.events[e as usize].proxy.unwrap_or(0) as usize;
                self.proxy_busy[proxy] = false;
                self.next_on_proxy(proxy, now);
            }
        }
    }

    /// Notes resources whose transfers need a new pace.
    fn changed(&mut self, resources: &[u32]) {
        for &r in resources {
            if !self.is_changed[r as usize] {
                self.is_changed[r as usize] = true;
                self.changed.push(r);
            }
        }
    }

    /// Settles the transfers on the changed resources at `now` and gives
    /// each its new pace.
    fn reshare(&mut self, now: f64) {
        self.round += 1;
        let mut touched = Vec::new();
        for r in std::mem::take(&mut self.changed) {
            let r = r as usize;
            self.is_changed[r] = false;
            let transfers = &self.transfers;
            self.on[r].retain(|&t| transfers[t as usize].left > 0.0);
            for &t in &self.on[r] {
                let transfer = &mut self.transfers[t as usize];
                if transfer.reshared != self.round {
                    transfer.reshared = self.round;
                    touched.push(t);
                }
            }
        }
        let block_cap = self.top.bandwidth.block * 1e3;
        for index in touched {
            let rate = {
                let t = &self.transfers[index as usize];
                let mut rate = if t.block > 0.0 {
                    block_cap / t.block
                } else {
                    f64::INFINITY
                };
                for (r, _) in &t.demands {
                    rate = rate.min(self.capacity[*r as usize] / self.load[*r as usize]);
                }
                rate
            };
            let t = &mut self.transfers[index as usize];
            t.left = (t.left - t.rate * (now - t.since)).max(0.0);
            t.since = now;
            t.rate = rate;
            t.version += 1;
            let finish = now + t.left / rate;
            let version = t.version;
            self.schedule(finish, Happening::TransferDone(index, version));
        }
    }

    fn block_end(&mut self, e: u32, now: f64) {
        let i = e as usize;
        self.times.ended[i] = now;
        let on_proxy = self.prep.costs[i].on_proxy;
        if !on_proxy {
            self.times.done[i] = now;
        }
        // A port op's block part is over: a barrier after it may go on;
        // what waits for its transfer waits for the proxy.
        if on_proxy {
            self.release(e, now, |why| why == Release::Barrier);
        } else {
            self.release(e, now, |_| true);
        }
        let next = self.prep.next_on_track[i];
        if next != NONE {
            self.times.arrived[next as usize] = now;
            self.resolve(next, now, Why::Block);
        }
    }

    /// `e` is done, or the part of it that the needs `which` accepts
    /// wait for: those may go on once they have seen so.
    fn release(&mut self, e: u32, now: f64, which: impl Fn(Release) -> bool) {
        let from = self.prep.ranks[e as usize];
        for k in 0..self.prep.needed_by[e as usize].len() {
            let (who, why) = self.prep.needed_by[e as usize][k];
            if !which(why) {
                continue;
            }
            let to = self.prep.ranks[who as usize];
            let lat = &self.top.latency;
            let delay = match why {
                Release::Signal | Release::Packet => self.top.latency(from, to),
                Release::Semaphore => lat.local,
                // The barrier's latency is its own time (`cost`), from
                // the last arrival on.
                Release::Barrier => 0.0,
                // On one GPU the block did the port transfer itself.
                Release::Proxy if self.top.one_gpu => lat.local,
                Release::Proxy => lat.proxy,
                Release::Data => 0.0,
            };
            self.resolve(who, now + delay, Why::Needed(e, why));
        }
    }

    /// One of `e`'s needs arrived at `at`.
    fn resolve(&mut self, e: u32, at: f64, why: Why) {
        let i = e as usize;
        let started = &mut self.times.started[i];
        if started.is_nan() || at > *started {
            *started = at;
            self.times.why[i] = why;
        }
        self.needs[i] -= 1;
        if self.needs[i] == 0 {
            let at = self.times.started[i];
            self.schedule(at, Happening::Start(e));
        }
    }
}
