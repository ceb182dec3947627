//! Signals in flight: for every channel end, the clocks of the signals
//! that arrived on it and no wait has taken yet, in order. Ends are
//! numbered as [`ChannelPairs`] numbers them, so a dense plan (a channel
//! between every two ranks) costs a slot per end, and a slot holds its one
//! signal in flight inline, which is the usual case.

use super::clock::Clocks;
use crate::ir::{ChannelPairs, Endpoint, Plan};
use std::collections::VecDeque;

/// A signal in flight: what its signaller had done, and the recorded
/// event that sent it (`record::NONE` when the run is not recorded).
pub(super) struct Sent {
    pub clock: Clocks,
    pub event: u32,
}

pub(super) struct Signals {
    pairs: ChannelPairs,
    queues: Vec<Queue>,
}

#[derive(Default)]
enum Queue {
    #[default]
    Empty,
    One(Sent),
    // Boxed: most queues hold one signal or none, and a queue per channel
    // end stays a word and a `Sent` wide.
    #[allow(clippy::box_collection)]
    Many(Box<VecDeque<Sent>>),
}

impl Signals {
    pub fn new(plan: &Plan) -> Signals {
        let pairs = ChannelPairs::new(plan);
        let queues = (0..pairs.len()).map(|_| Queue::Empty).collect();
        Signals { pairs, queues }
    }

    /// The end that observes `e`'s signals, if it has a pair.
    pub fn pair(&self, e: Endpoint) -> Option<Endpoint> {
        self.pairs.pair(e)
    }

    /// A signal (the signaller's clock, and its op's event when the run is
    /// recorded) arrives at end `to`.
    pub fn deliver(&mut self, to: Endpoint, clock: Clocks, event: u32) {
        let clock = Sent { clock, event };
        let Some(i) = self.pairs.index(to) else {
            return;
        };
        let queue = &mut self.queues[i];
        *queue = match std::mem::take(queue) {
            Queue::Empty => Queue::One(clock),
            Queue::One(first) => Queue::Many(Box::new(VecDeque::from([first, clock]))),
            Queue::Many(mut all) => {
                all.push_back(clock);
                Queue::Many(all)
            }
        };
    }

    /// Takes the oldest signal waiting at end `e`.
    pub fn take(&mut self, e: Endpoint) -> Option<Sent> {
        let queue = self.queues.get_mut(self.pairs.index(e)?)?;
        match std::mem::take(queue) {
            Queue::Empty => None,
            Queue::One(clock) => Some(clock),
            Queue::Many(mut all) => {
                let first = all.pop_front();
                if !all.is_empty() {
                    *queue = Queue::Many(all);
                }
                first
            }
        }
    }

    /// How many signals wait at end `e`.
    pub fn waiting_at(&self, e: Endpoint) -> usize {
        self.pairs
            .index(e)
            .map_or(0, |i| Self::queue_len(&self.queues[i]))
    }

    /// Every end with signals waiting, and how many.
    pub fn waiting(&self) -> impl Iterator<Item = (Endpoint, usize)> + '_ {
        self.waiting_among(0..self.queues.len())
    }

    /// `rank`'s ends with signals waiting, and how many.
    pub fn waiting_on(&self, rank: u32) -> impl Iterator<Item = (Endpoint, usize)> + '_ {
        self.waiting_among(self.pairs.ends_of(rank))
    }

    fn waiting_among(
        &self,
        ends: std::ops::Range<usize>,
    ) -> impl Iterator<Item = (Endpoint, usize)> + '_ {
        self.queues[ends.clone()]
            .iter()
            .zip(ends)
            .filter(|(q, _)| !matches!(q, Queue::Empty))
            .map(|(q, i)| (self.pairs.endpoint(i), Self::queue_len(q)))
    }

    fn queue_len(queue: &Queue) -> usize {
        match queue {
            Queue::Empty => 0,
            Queue::One(_) => 1,
            Queue::Many(all) => all.len(),
        }
    }
}
