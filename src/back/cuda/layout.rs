//! Where each synchronization word of a plan lives in the kernel's `sync`
//! array: per rank, an inbound and an expected counter for every memory and
//! port channel, a counter per barrier id, a word per semaphore, one word
//! that absorbs signals sent on channels with no pair, and the words of the
//! report a spin leaves when it gives up (see `report`). The generator
//! bakes these indices into the code; the runner sizes and initialises the
//! array from the same layout.

use crate::ir::{ChannelKind, Op, Plan, RankPlan};

/// The word indices of one rank.
#[derive(Debug, Clone)]
struct RankWords {
    memory: usize,
    port: usize,
    barriers: usize,
    semaphores: usize,
}

#[derive(Debug, Clone)]
pub struct SyncLayout {
    ranks: Vec<RankWords>,
    /// Signals on unpaired channels land here (nobody can wait for them).
    pub unpaired: usize,
    /// The first of the report's words.
    pub report: usize,
    /// Number of u64 words.
    pub words: usize,
    /// (word, initial value) of every semaphore.
    pub semaphores: Vec<(usize, i64)>,
}

impl SyncLayout {
    pub fn new(plan: &Plan) -> SyncLayout {
        let mut next = 0;
        let mut take = |n: usize| {
            let at = next;
            next += n;
            at
        };
        let mut ranks = Vec::with_capacity(plan.ranks.len());
        let mut semaphores = Vec::new();
        for rank in &plan.ranks {
            let memory = take(2 * rank.memory_peers.len());
            let port = take(2 * rank.port_peers.len());
            let barriers = take(barrier_ids(rank) as usize);
            let first_semaphore = take(rank.semaphores.len());
            semaphores.extend(
                rank.semaphores
                    .iter()
                    .enumerate()
                    .map(|(i, v)| (first_semaphore + i, *v)),
            );
            ranks.push(RankWords {
                memory,
                port,
                barriers,
                semaphores: first_semaphore,
            });
        }
        let unpaired = take(1);
        let report = take(super::report::WORDS);
        SyncLayout {
            ranks,
            unpaired,
            report,
            words: next,
            semaphores,
        }
    }

    fn channel_base(&self, rank: u32, kind: ChannelKind) -> usize {
        let words = &self.ranks[rank as usize];
        match kind {
            ChannelKind::Port => words.port,
            _ => words.memory,
        }
    }

    /// The counter `rank`'s channel `channel` of `kind` receives signals on.
    pub fn inbound(&self, rank: u32, kind: ChannelKind, channel: u32) -> usize {
        self.channel_base(rank, kind) + 2 * channel as usize
    }

    /// The count of signals that channel's waits have consumed.
    pub fn expected(&self, rank: u32, kind: ChannelKind, channel: u32) -> usize {
        self.inbound(rank, kind, channel) + 1
    }

    pub fn barrier(&self, rank: u32, id: u32) -> usize {
        self.ranks[rank as usize].barriers + id as usize
    }

    pub fn semaphore(&self, rank: u32, id: u32) -> usize {
        self.ranks[rank as usize].semaphores + id as usize
    }

    /// The array a first launch starts from; it is never reset afterwards,
    /// as the executor's counters are not.
    pub fn initial_words(&self) -> Vec<u64> {
        let mut words = vec![0u64; self.words];
        for &(at, value) in &self.semaphores {
            words[at] = value as u64;
        }
        words
    }
}

/// One more than the largest barrier id a rank's blocks use.
fn barrier_ids(rank: &RankPlan) -> u32 {
    fn walk(ops: &[Op], most: &mut u32) {
        for op in ops {
            if let Some((id, _)) = op.barrier {
                *most = (*most).max(id + 1);
            }
            walk(op.body(), most);
        }
    }
    let mut most = 0;
    for tb in &rank.threadblocks {
        walk(&tb.ops, &mut most);
    }
    most
}
