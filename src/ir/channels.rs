//! Every memory and port channel end of a plan, numbered densely, and which
//! end observes each one's signals (SEMANTICS.md §2.3): A's k-th channel of
//! a type to B pairs with B's k-th channel of that type to A; channels left
//! over on one side have no pair.
//!
//! A dense plan has a channel from every rank to every other (eight million
//! ends for an all-pairs AllReduce on 1,024 ranks), so the table is flat
//! arrays, not maps: the simulator keeps its signals in flight in an array
//! numbered the same way.

use super::{ChannelKind, Endpoint, Plan};
use rustc_hash::FxHashMap;
use std::cell::RefCell;

/// A rank's channels: the peer of each memory channel, of each port channel.
type Peers<'a> = (&'a [u32], &'a [u32]);

const NO_PAIR: u32 = u32::MAX;

pub struct ChannelPairs {
    /// Per rank: the number of its first memory end; its port ends follow
    /// its memory ends. One more entry: the total.
    first: Vec<usize>,
    /// Per rank: its number of memory channels.
    memory: Vec<u32>,
    /// Per end: the number of its pair, or `NO_PAIR`.
    pair: Vec<u32>,
}

impl ChannelPairs {
    pub fn new(plan: &Plan) -> ChannelPairs {
        let peers: Vec<Peers> = plan
            .ranks
            .iter()
            .map(|r| (&r.memory_peers[..], &r.port_peers[..]))
            .collect();
        ChannelPairs::from_peers(&peers)
    }

    fn from_peers(ranks: &[Peers]) -> ChannelPairs {
        let mut first = Vec::with_capacity(ranks.len() + 1);
        let mut memory = Vec::with_capacity(ranks.len());
        let mut next = 0usize;
        for (memory_peers, port_peers) in ranks {
            first.push(next);
            memory.push(memory_peers.len() as u32);
            next += memory_peers.len() + port_peers.len();
        }
        first.push(next);
        let mut table = ChannelPairs {
            first,
            memory,
            pair: vec![NO_PAIR; next],
        };
        for kind in [ChannelKind::Memory, ChannelKind::Port] {
            table.pair_up(ranks, kind);
        }
        table
    }

    /// Pairs the channels of `kind`: per rank, its channels sorted by peer
    /// (then by index) put the k-th channel to each peer at a known offset
    /// from where that peer's run starts, found by binary search.
    fn pair_up(&mut self, ranks: &[Peers], kind: ChannelKind) {
        let sorted: Vec<Vec<(u32, u32)>> = ranks
            .iter()
            .map(|(memory_peers, port_peers)| {
                let peers = match kind {
                    ChannelKind::Port => port_peers,
                    _ => memory_peers,
                };
                let mut by_peer: Vec<(u32, u32)> = peers
                    .iter()
                    .enumerate()
                    .map(|(c, peer)| (*peer, c as u32))
                    .collect();
                // A stable sort by peer leaves each peer's channels in
                // index order, as sorting by (peer, index) would, and
                // merges the ascending runs most ranks' channels come in
                // (a loop over peers, once per thread block) rather than
                // sorting from scratch.
                by_peer.sort_by_key(|&(peer, _)| peer);
                by_peer
            })
            .collect();
        for (a, ours) in sorted.iter().enumerate() {
            let a = a as u32;
            let mut run_start = 0;
            for (i, &(b, c)) in ours.iter().enumerate() {
                if i > 0 && ours[i - 1].0 != b {
                    run_start = i;
                }
                let k = i - run_start;
                let Some(theirs) = sorted.get(b as usize) else {
                    continue;
                };
                let start = theirs.partition_point(|&(peer, _)| peer < a);
                if let Some(&(peer, peer_c)) = theirs.get(start + k) {
                    if peer == a {
                        let (Some(mine), Some(other)) =
                            (self.index((a, kind, c)), self.index((b, kind, peer_c)))
                        else {
                            continue;
                        };
                        self.pair[mine] = other as u32;
                    }
                }
            }
        }
    }

    /// The number of channel ends.
    pub fn len(&self) -> usize {
        self.pair.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pair.is_empty()
    }

    /// The number of end `e`, if the plan has it.
    pub fn index(&self, e: Endpoint) -> Option<usize> {
        let (rank, kind, channel) = e;
        let r = rank as usize;
        let (first, end) = (*self.first.get(r)?, *self.first.get(r + 1)?);
        let at = match kind {
            ChannelKind::Memory => first + channel as usize,
            ChannelKind::Port => first + self.memory[r] as usize + channel as usize,
            ChannelKind::Switch => return None,
        };
        let own_kind_end = match kind {
            ChannelKind::Memory => first + self.memory[r] as usize,
            _ => end,
        };
        (at < own_kind_end).then_some(at)
    }

    /// The numbers of `rank`'s ends.
    pub fn ends_of(&self, rank: u32) -> std::ops::Range<usize> {
        let r = rank as usize;
        match (self.first.get(r), self.first.get(r + 1)) {
            (Some(&a), Some(&b)) => a..b,
            _ => 0..0,
        }
    }

    /// The end numbered `i`.
    pub fn endpoint(&self, i: usize) -> Endpoint {
        let rank = self.first.partition_point(|&f| f <= i) - 1;
        let offset = (i - self.first[rank]) as u32;
        let memory = self.memory[rank];
        if offset < memory {
            (rank as u32, ChannelKind::Memory, offset)
        } else {
            (rank as u32, ChannelKind::Port, offset - memory)
        }
    }

    /// The end that observes `e`'s signals, if it has a pair.
    pub fn pair(&self, e: Endpoint) -> Option<Endpoint> {
        let p = self.pair_of(self.index(e)?)?;
        Some(self.endpoint(p))
    }

    /// The number of the end that observes end `i`'s signals, if it has a
    /// pair: `pair` by number, for a walk over every end.
    pub fn pair_of(&self, i: usize) -> Option<usize> {
        let p = *self.pair.get(i)?;
        (p != NO_PAIR).then_some(p as usize)
    }
}

/// Each channel's number among its rank's channels of the kind to its
/// peer, and how many those are, by rank-level id.
type Numbers = Vec<(u32, u32)>;

/// Channels named as the executor pairs them: by their number among their
/// rank's channels of the kind to the same peer (`RankPlan::peer_ordinals`),
/// the number `--emit ops` shows (`1#2`), rather than by their rank-level
/// id. Worked out per rank when a name first needs it: reports name a few
/// channels of a plan that may have millions.
pub struct ChannelNumbers<'p> {
    plan: &'p Plan,
    /// Per rank and kind, `RankPlan::peer_ordinals`.
    ranks: RefCell<FxHashMap<(u32, ChannelKind), Numbers>>,
}

impl<'p> ChannelNumbers<'p> {
    pub fn new(plan: &'p Plan) -> ChannelNumbers<'p> {
        ChannelNumbers {
            plan,
            ranks: RefCell::default(),
        }
    }

    /// End `e`'s number among its rank's channels of its kind to its peer,
    /// and how many those are.
    pub fn number(&self, (rank, kind, channel): Endpoint) -> (u32, u32) {
        let mut ranks = self.ranks.borrow_mut();
        let numbers = ranks
            .entry((rank, kind))
            .or_insert_with(|| self.plan.ranks[rank as usize].peer_ordinals(kind));
        // An end the plan lacks has no number to give: (its id, alone).
        numbers
            .get(channel as usize)
            .copied()
            .unwrap_or((channel, 1))
    }

    /// The peer of end `e` (`u32::MAX` for an end the plan lacks).
    pub fn peer(&self, (rank, kind, channel): Endpoint) -> u32 {
        let peers = self.plan.ranks[rank as usize].channel_peers(kind);
        peers.get(channel as usize).copied().unwrap_or(u32::MAX)
    }

    /// "memory channel #2", or "memory channel" where it is the rank's
    /// only one of the kind to its peer.
    pub fn kind_and_number(&self, e: Endpoint) -> String {
        match self.number(e) {
            (k, of) if of > 1 => format!("{} channel #{k}", e.1.name()),
            _ => format!("{} channel", e.1.name()),
        }
    }

    /// "rank 0's memory channel #2 to rank 1", or "rank 0's memory channel
    /// to rank 1" where it is the only one.
    pub fn name(&self, e: Endpoint) -> String {
        format!(
            "rank {}'s {} to rank {}",
            e.0,
            self.kind_and_number(e),
            self.peer(e)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kth_channel_to_a_peer_pairs_with_the_peers_kth_channel_back() {
        // Rank 0: memory channels to 1, 2, 1; port channel to 1.
        // Rank 1: memory channels to 0, 0; port channel to 0.
        // Rank 2: no channels back to 0.
        let pairs = ChannelPairs::from_peers(&[(&[1, 2, 1], &[1]), (&[0, 0], &[0]), (&[], &[])]);
        use ChannelKind::*;
        assert_eq!(pairs.len(), 7);
        assert_eq!(pairs.pair((0, Memory, 0)), Some((1, Memory, 0)));
        assert_eq!(pairs.pair((0, Memory, 2)), Some((1, Memory, 1)));
        assert_eq!(pairs.pair((1, Memory, 1)), Some((0, Memory, 2)));
        assert_eq!(pairs.pair((0, Memory, 1)), None);
        assert_eq!(pairs.pair((0, Port, 0)), Some((1, Port, 0)));
        assert_eq!(pairs.pair((1, Port, 0)), Some((0, Port, 0)));
        // Out of range, and switch channels, are no ends.
        assert_eq!(pairs.index((0, Memory, 3)), None);
        assert_eq!(pairs.index((1, Port, 1)), None);
        assert_eq!(pairs.index((0, Switch, 0)), None);
        for i in 0..pairs.len() {
            assert_eq!(pairs.index(pairs.endpoint(i)), Some(i));
        }
    }

    #[test]
    fn a_channel_is_numbered_among_its_ranks_channels_to_its_peer() {
        use super::super::RankPlan;
        // Memory channels to 1, 2, 1; a port channel to 1.
        let rank = RankPlan {
            memory_peers: vec![1, 2, 1],
            port_peers: vec![1],
            ..RankPlan::default()
        };
        assert_eq!(
            rank.peer_ordinals(ChannelKind::Memory),
            [(0, 2), (0, 1), (1, 2)]
        );
        assert_eq!(rank.peer_ordinals(ChannelKind::Port), [(0, 1)]);
    }
}
