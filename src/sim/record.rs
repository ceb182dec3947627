//! What one execution did, kept for the timing model: the ops each thread
//! block ran, in order, and for each the ops of other blocks that let it
//! go on (the signal a wait took, the packets a read found, ...). Times are
//! not the simulator's business; `crate::timing` puts them on this.
//!
//! Only the first execution is kept: it starts from nothing, as a timed
//! launch does, and the second repeats it.

use super::*;

/// One execution as the simulator ran it.
pub struct Run<'p> {
    /// Every op run, each block's in its order.
    pub events: Vec<Event<'p>>,
    /// The thread blocks, as `(rank, tb)`, by rank then block: an event's
    /// `thread` indexes this.
    pub threads: Vec<(u32, u32)>,
    /// Port channels' proxies, as `(rank, port channel)`: an event's
    /// `proxy` indexes this.
    pub proxies: Vec<(u32, u32)>,
    /// A deadlock: each block that could not finish, the position in its
    /// run of the op it stopped at, and the op (none when it waits at the
    /// kernel's end for its rank's other blocks).
    pub stuck: Vec<(u32, usize, Option<&'p Op>)>,
    /// Whether the simulation it was recorded in verified the plan.
    pub verified: bool,
}

/// One op run by one thread block.
pub struct Event<'p> {
    pub thread: u32,
    /// The op's position in its block's run (a pipeline's body counted
    /// once per iteration).
    pub position: u32,
    pub op: &'p Op,
    /// Of the op's range, the share this block handles: its thread block
    /// group's part, and of that one pipeline iteration's.
    pub share: f64,
    /// The port channel proxy that carries the op's transfer or signal.
    pub proxy: Option<u32>,
    /// The ops of other blocks this one needed, and what it needed them for.
    pub after: smallvec::SmallVec<[(u32, Release); 1]>,
}

/// Why an op waited for another block's op.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Release {
    /// A wait took this op's signal.
    Signal,
    /// An acquire took this op's release.
    Semaphore,
    /// A barrier: this op was the participant's last before arriving.
    Barrier,
    /// A packet read found this op's packets.
    Packet,
    /// A flush: this was the last transfer on the channel's proxy.
    Proxy,
    /// Not a wait: this op wrote data the op reads (for the picture only;
    /// a sync orders them, or the simulator would have found a race).
    Data,
}

/// No event: the user's writes, or an op of a later execution.
pub(super) const NONE: u32 = u32::MAX;

/// The events kept so far, and what is needed to link new ones.
pub(super) struct Recorder<'p> {
    pub run: Run<'p>,
    /// Of the op being run: what it needed.
    pub after: smallvec::SmallVec<[(u32, Release); 1]>,
    /// Per block thread, its events by position in its run.
    pub event_at: Vec<Vec<u32>>,
    /// Per proxy, its last transfer's event.
    pub proxy_last: Vec<u32>,
}

impl<'p> Recorder<'p> {
    pub fn new(threads: Vec<(u32, u32)>, proxies: Vec<(u32, u32)>) -> Recorder<'p> {
        Recorder {
            event_at: vec![Vec::new(); threads.len()],
            proxy_last: vec![NONE; proxies.len()],
            run: Run {
                events: Vec::new(),
                threads,
                proxies,
                stuck: Vec::new(),
                verified: false,
            },
            after: Default::default(),
        }
    }

    /// The id the op being run gets if it runs.
    pub fn next_id(&self) -> u32 {
        self.run.events.len() as u32
    }

    /// Notes that the op being run needed `event`, once.
    pub fn needs(&mut self, event: u32, why: Release) {
        if event != NONE && !self.after.contains(&(event, why)) {
            self.after.push((event, why));
        }
    }

    /// Thread `thread`'s last event, if it ran any.
    pub fn last_of(&self, thread: usize) -> u32 {
        self.event_at[thread].last().copied().unwrap_or(NONE)
    }

    /// Thread `thread`'s event at `position` in its run, if kept.
    pub fn at(&self, thread: usize, position: usize) -> u32 {
        self.event_at
            .get(thread)
            .and_then(|events| events.get(position))
            .copied()
            .unwrap_or(NONE)
    }
}

impl<'p> Sim<'p> {
    pub(super) fn start_recording(&mut self) {
        let threads = self.threads.iter().map(|th| (th.rank, th.tb)).collect();
        let mut proxies = vec![(0, 0); self.proxies.len()];
        let first = self.users + self.plan.ranks.len();
        for (key, (index, _)) in &self.proxies {
            proxies[index - first] = *key;
        }
        self.record = Some(Box::new(Recorder::new(threads, proxies)));
    }

    /// Whether thread `t`'s ops are being kept: recording, and in the
    /// first execution.
    fn recording(&self, t: usize) -> bool {
        self.record.is_some() && self.threads[t].execution == 1
    }

    /// The event id thread `t`'s op now running gets, if it is kept.
    pub(super) fn recording_id(&self, t: usize) -> u32 {
        match &self.record {
            Some(recorder) if self.recording(t) => recorder.next_id(),
            _ => NONE,
        }
    }

    /// Notes that thread `t`'s op now running needed `event`.
    pub(super) fn recorded_needs(&mut self, t: usize, event: u32, why: Release) {
        if self.recording(t) {
            if let Some(recorder) = &mut self.record {
                recorder.needs(event, why);
            }
        }
    }

    /// Notes where the data thread `t` reads at `loc` came from: another
    /// block's op in the first execution.
    pub(super) fn recorded_read(&mut self, t: usize, loc: Loc) {
        if !self.recording(t) {
            return;
        }
        let Some(write) = self.memory.get(&loc).and_then(|cell| cell.last_write) else {
            return;
        };
        if write.by as usize != t && write.execution == 1 {
            if let Some(recorder) = &mut self.record {
                let event = recorder.at(write.by as usize, write.op as usize);
                recorder.needs(event, Release::Data);
            }
        }
    }

    /// Keeps thread `t`'s op `op`, which just ran, with what it needed.
    pub(super) fn note_event(&mut self, t: usize, op: &'p Op) {
        if !self.recording(t) {
            return;
        }
        let th = &self.threads[t];
        let group = op.tbg.map_or(1, |g| g.size.max(1));
        let size = op.src.first().or(op.dst.first()).map_or(0, |r| r.size);
        let share = match th.ops.iteration(th.pc) {
            // What the iteration covers of the group's share of the range,
            // which the pipeline's `num_chunks` may leave short of it
            // (`share`): reckoned whole, not in the parts the data is cut
            // in, which thousands of iterations outnumber.
            Some(it) if size > 0 && op.name.honours_pipeline_offsets() => {
                let whole = f64::from(size) / f64::from(group);
                let covered = it.covers.0 as f64 / it.covers.1.max(1) as f64;
                let at = |i: u32| (covered * f64::from(i) / f64::from(it.of)).min(whole);
                (at(it.index + 1) - at(it.index)) / f64::from(size)
            }
            Some(it) => 1.0 / f64::from(group) / f64::from(it.of),
            None => 1.0 / f64::from(group),
        };
        let first = self.users + self.plan.ranks.len();
        let proxy = self
            .proxies_of(t, op)
            .first()
            .map(|key| (self.proxies[key].0 - first) as u32);
        let position = th.pc as u32;
        let Some(recorder) = &mut self.record else {
            return;
        };
        let id = recorder.next_id();
        if let Some(p) = proxy {
            recorder.proxy_last[p as usize] = id;
        }
        recorder.event_at[t].push(id);
        let after = std::mem::take(&mut recorder.after);
        recorder.run.events.push(Event {
            thread: t as u32,
            position,
            op,
            share,
            proxy,
            after,
        });
    }

    /// After a deadlock: the blocks that did not finish their first
    /// execution, and where they stopped.
    pub(super) fn stuck_in_first_execution(&self) -> Vec<(u32, usize, Option<&'p Op>)> {
        self.threads
            .iter()
            .enumerate()
            .filter(|(_, th)| !th.done && th.execution == 1)
            .map(|(t, th)| {
                let op = (th.pc < th.ops.len()).then(|| th.ops.op(th.pc));
                (t as u32, th.pc, op)
            })
            .collect()
    }
}
