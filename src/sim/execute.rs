//! One op of a thread block: whether it can run now, and what it does.
//! Data ops are data.rs's; here are the synchronizing ones (signals,
//! waits, barriers, semaphores, port completions) and the clocks they
//! carry between blocks.

use super::*;

impl<'p> Sim<'p> {
    /// Runs `op` for thread `t`; `Ok(false)` if it must wait.
    pub(super) fn execute(&mut self, t: usize, op: &Op) -> Result<bool, Verdict> {
        use OpName::*;
        if !self.ready(t, op) {
            return Ok(false);
        }
        match op.name {
            Nop => self.sync_epoch(t),
            Barrier => return Ok(self.barrier(t, op)),
            Signal | RelaxedSignal => self.signal(t, op, op.name == Signal),
            Wait | RelaxedWait => self.wait(t, op, op.name == Wait),
            Flush => self.learn_port_completion(t, op),
            SemRelease => {
                let clock = self.published(t);
                let rank = self.threads[t].rank;
                let event = self.recording_id(t);
                for s in op.semaphore_ids() {
                    if let Some((v, q)) = self.semaphores.get_mut(&(rank, *s)) {
                        *v += 1;
                        q.push_back((clock.clone(), event));
                    }
                }
            }
            SemAcquire => {
                let rank = self.threads[t].rank;
                for s in op.semaphore_ids() {
                    if let Some((v, q)) = self.semaphores.get_mut(&(rank, *s)) {
                        *v -= 1;
                        if let Some((clock, event)) = q.pop_front() {
                            self.threads[t].pending.push(clock);
                            self.recorded_needs(t, event, record::Release::Semaphore);
                        }
                    }
                }
            }
            Pipeline => {}
            _ => {
                // A port transfer is done by the channel's proxy, after the
                // channel's earlier transfers.
                let proxy = self.proxies_of(t, op).first().map(|key| {
                    let entry = self.proxies.get_mut(key).expect("port channel has a proxy");
                    entry.1 += 1;
                    *entry
                });
                self.port_transfer = proxy;
                let moved = self.transfer(t, op);
                self.port_transfer = None;
                moved?;
                if op.name == PutWithSignalAndFlush {
                    self.learn_port_completion(t, op);
                }
                if matches!(op.name, PutWithSignal | PutWithSignalAndFlush) {
                    // The proxy delivers the data before the signal: the
                    // signal publishes this thread's put too.
                    let before = self.threads[t].clock.clone();
                    let epoch = self.threads[t].epoch;
                    self.threads[t].clock.set(t, epoch + 1);
                    self.signal(t, op, true);
                    self.threads[t].clock = before;
                }
            }
        }
        Ok(true)
    }

    /// Whether `op` can run now (signals, semaphores and packets it needs).
    pub(super) fn ready(&self, t: usize, op: &Op) -> bool {
        let th = &self.threads[t];
        match op.name {
            // A channel named k times is waited on k times, one lane
            // each (as the executor's threads do): it needs k signals.
            OpName::Wait | OpName::RelaxedWait => {
                let ends = self.endpoints(th, op);
                ends.iter().all(|e| {
                    let times = ends.iter().filter(|x| *x == e).count();
                    self.signals.waiting_at(*e) >= times
                })
            }
            // A semaphore named k times (fused acquires) is taken k times,
            // one lane each: it needs k passes.
            OpName::SemAcquire => {
                let ids = op.semaphore_ids();
                ids.iter().all(|s| {
                    let times = ids.iter().filter(|x| *x == s).count() as i64;
                    self.semaphores
                        .get(&(th.rank, *s))
                        .is_some_and(|(v, _)| *v >= times)
                })
            }
            _ => self.packet_sources(t, op).iter().all(|loc| {
                self.memory
                    .get(loc)
                    .and_then(|c| c.packet.as_ref().map(|p| p.execution))
                    .is_some_and(|e| e == th.execution)
            }),
        }
    }

    /// The rank-level endpoints of a signal/wait/put-with-signal op.
    pub(super) fn endpoints(&self, th: &Thread, op: &Op) -> Vec<Endpoint> {
        let kind = op.channel.unwrap_or(ChannelKind::Memory);
        let tb = &self.plan.ranks[th.rank as usize].threadblocks[th.tb as usize];
        let table = tb.channel_ids(kind);
        op.channel_ids
            .iter()
            .filter_map(|local| table.get(*local as usize))
            .map(|global| (th.rank, kind, *global))
            .collect()
    }

    /// What a signal or release from thread `t` publishes: the epochs its
    /// block finished (not the current one, whose other threads may still run).
    pub(super) fn published(&self, t: usize) -> Clocks {
        self.threads[t].clock.clone()
    }

    /// The proxies of the port channels a port op uses.
    pub(super) fn proxies_of(&self, t: usize, op: &Op) -> Vec<(u32, u32)> {
        if op.channel != Some(ChannelKind::Port) {
            return Vec::new();
        }
        self.endpoints(&self.threads[t], op)
            .into_iter()
            .map(|(rank, _, c)| (rank, c))
            .filter(|key| self.proxies.contains_key(key))
            .collect()
    }

    /// After a flush (or put-with-signal-and-flush) the block knows its
    /// channels' transfers so far are complete, sources read included.
    pub(super) fn learn_port_completion(&mut self, t: usize, op: &Op) {
        for key in self.proxies_of(t, op) {
            let (proxy, epoch) = self.proxies[&key];
            self.threads[t].clock.set(proxy, epoch + 1);
            let ordinal = proxy - self.users - self.plan.ranks.len();
            if let Some(recorder) = &self.record {
                let last = recorder.proxy_last[ordinal];
                self.recorded_needs(t, last, record::Release::Proxy);
            }
        }
    }

    pub(super) fn signal(&mut self, t: usize, op: &Op, carries_data: bool) {
        let mut published = self.published(t);
        // A port signal is delivered after the channel's earlier transfers.
        for key in self.proxies_of(t, op) {
            let (proxy, epoch) = self.proxies[&key];
            published.set(proxy, epoch + 1);
        }
        let clock = if carries_data {
            published
        } else {
            published.relaxed()
        };
        let event = self.recording_id(t);
        for e in self.endpoints(&self.threads[t], op) {
            if let Some(peer) = self.signals.pair(e) {
                self.signals.deliver(peer, clock.clone(), event);
            }
        }
    }

    pub(super) fn wait(&mut self, t: usize, op: &Op, carries_data: bool) {
        for e in self.endpoints(&self.threads[t], op) {
            if let Some(sent) = self.signals.take(e) {
                self.recorded_needs(t, sent.event, record::Release::Signal);
                // A relaxed wait learns only the execution order.
                let clock = sent.clock;
                let learnt = if carries_data { clock } else { clock.relaxed() };
                self.threads[t].pending.push(learnt);
            }
        }
    }

    /// Arrives at a barrier; true once every participant has arrived.
    pub(super) fn barrier(&mut self, t: usize, op: &Op) -> bool {
        let (id, n) = op.barrier.unwrap_or((0, 1));
        let rank = self.threads[t].rank;
        let generation = *self.threads[t].barrier_count.get(&id).unwrap_or(&0);
        let key = (rank, id, generation);
        let barrier = self.barriers.entry(key).or_default();
        if !barrier.arrived.contains(&t) {
            // A barrier syncs the block first: its epoch ends, and what it
            // learnt from waits is part of what it brings.
            let th = &mut self.threads[t];
            th.epoch += 1;
            th.clock.set(t, th.epoch);
            th.clock.join_all(&std::mem::take(&mut th.pending));
            barrier.arrived.push(t);
            barrier.clocks.push(th.clock.clone());
            if let Some(recorder) = &self.record {
                barrier.last_events.push(recorder.last_of(t));
            }
        }
        if (barrier.arrived.len() as u32) < n {
            return false;
        }
        // All there: what they bring, joined once for all of them.
        if !barrier.clocks.is_empty() {
            let clocks = std::mem::take(&mut barrier.clocks);
            barrier.joined.join_all(&clocks);
        }
        let joined = barrier.joined.clone();
        let others: Vec<u32> = barrier
            .arrived
            .iter()
            .zip(&barrier.last_events)
            .filter(|(who, _)| **who != t)
            .map(|(_, event)| *event)
            .collect();
        for event in others {
            self.recorded_needs(t, event, record::Release::Barrier);
        }
        self.threads[t].pending.push(joined);
        self.sync_epoch(t);
        *self.threads[t].barrier_count.entry(id).or_insert(0) += 1;
        true
    }
}
