//! The user around each kernel: writes every rank's input before the
//! rank's kernel starts, reads its result after the kernel ends, and checks
//! it against the collective's definition.

use super::value::{Contents, Contribution};
use super::*;

impl Sim<'_> {
    pub(super) fn user_writes_input(&mut self, rank: u32, execution: u32) -> Option<Verdict> {
        let user = self.users + rank as usize;
        let chunks = self.plan.ranks[rank as usize].input_chunks;
        let mut clock = self.user_clocks[rank as usize].clone();
        clock.set(user, 2 * execution - 1);
        for chunk in 0..chunks {
            let place = self.place(rank, BufferKind::Input, chunk);
            let value = Contents::one(Contribution {
                execution,
                rank,
                chunk,
            });
            for part in 0..self.parts {
                let loc = Loc { place, part };
                let access = Access {
                    by: user as u32,
                    thread: user as u32,
                    epoch: 2 * execution - 1,
                    op: u32::MAX,
                    execution,
                    write: true,
                };
                if let Some(v) = self.check(loc, access, &clock) {
                    return Some(v);
                }
                let cell = self.memory.entry(loc).or_default();
                cell.value = Some(value.clone());
                // Plain data, whatever packets a kernel left there.
                cell.packet = None;
                cell.last_write = Some(access);
                cell.reads.clear();
            }
        }
        // The kernel starts after the user's writes.
        let blocks = self.rank_threads[rank as usize]..self.rank_threads[rank as usize + 1];
        for th in &mut self.threads[blocks] {
            th.clock.set(user, 2 * execution);
        }
        None
    }

    pub(super) fn user_reads_result(
        &mut self,
        rank: u32,
        execution: u32,
        clock: &Clocks,
    ) -> Option<Verdict> {
        let user = self.users + rank as usize;
        let expected = self.expected(rank, execution);
        for (kind, chunk, want) in expected {
            let place = self.place(rank, kind, chunk);
            for part in 0..self.parts {
                let loc = Loc { place, part };
                let access = Access {
                    by: user as u32,
                    thread: user as u32,
                    epoch: 2 * execution,
                    op: u32::MAX,
                    execution,
                    write: false,
                };
                if let Some(v) = self.check(loc, access, clock) {
                    return Some(v);
                }
                let cell = self.memory.entry(loc).or_default();
                cell.reads.push(access);
                let value = cell.value.clone();
                let written = cell.last_write.is_some_and(|w| !self.is_user(w.thread()));
                let problem = match (value, want) {
                    (_, None) => None,
                    // Written, but with what nothing wrote (a chunk of
                    // scratch no op filled, say).
                    (None, Some(_)) if written => Some(
                        "holds no rank's data: it was written from a chunk nothing had written"
                            .to_string(),
                    ),
                    (None, Some(want)) => Some(format!(
                        "was never written: it should hold {}",
                        what_it_holds(want, self.plan.ranks.len() as u32)
                    )),
                    (Some(v), Some(want)) => self.difference(&v, want, execution),
                };
                if let Some(p) = problem {
                    let part_note = if self.parts > 1 {
                        format!(" (part {} of {})", part + 1, self.parts)
                    } else {
                        String::new()
                    };
                    let last_write = self
                        .memory
                        .get(&loc)
                        .and_then(|cell| cell.last_write)
                        .filter(|w| !self.is_user(w.thread()))
                        .and_then(|w| self.op_at(w.by as usize, w.op as usize));
                    return Some(Verdict::WrongResult(Box::new(WrongResult {
                        text: format!(
                            "execution {execution}: rank {rank} {} chunk {chunk}{part_note} {p}",
                            kind.name()
                        ),
                        last_write,
                        read_as_plain: None,
                    })));
                }
            }
        }
        None
    }

    /// What the user expects in each result chunk of `rank` (`None`:
    /// anything, for the test collective).
    pub(super) fn expected(
        &mut self,
        rank: u32,
        execution: u32,
    ) -> Vec<(BufferKind, u32, Option<ChunkSources>)> {
        if self.plan.collective.name == "sendrecv" {
            return self.expected_sendrecv(rank, execution);
        }
        let Some(result) = self.plan.expected_result(rank) else {
            return Vec::new();
        };
        result
            .into_iter()
            .map(|(k, sources)| (BufferKind::Output, k, Some(sources)))
            .collect()
    }

    /// How `value` differs from the contributions of `want` in
    /// `execution`, if it does. A sum is copied to many cells and shares
    /// its list with them: it is compared once (the first time costs the
    /// rank count), and what was found is remembered while it lives.
    fn difference(
        &mut self,
        value: &Contents,
        want: ChunkSources,
        execution: u32,
    ) -> Option<String> {
        let key = value.shared_id().map(|id| (id, want, execution));
        if let Some(found) = key.and_then(|k| self.checked.get(&k)) {
            return found.1.clone();
        }
        let ranks = self.plan.ranks.len() as u32;
        let contributions: Vec<Contribution> = want
            .pairs(ranks)
            .map(|(rank, chunk)| Contribution {
                execution,
                rank,
                chunk,
            })
            .collect();
        let found = value.difference(&contributions, self.reduce_op);
        if let Some(k) = key {
            // The value is kept with the verdict so that its list, and so
            // the identity, cannot be reused by another.
            self.checked.insert(k, (value.clone(), found.clone()));
        }
        found
    }
}

/// What a result chunk holds at the end, in words: one rank's input
/// chunk, or the sum (reduction) of every rank's.
fn what_it_holds(want: ChunkSources, ranks: u32) -> String {
    match want {
        ChunkSources::One { rank, chunk } => format!("rank {rank}'s input chunk {chunk}"),
        ChunkSources::EveryRank { chunk } => {
            format!("input chunk {chunk} of all {ranks} ranks, reduced")
        }
    }
}

impl Sim<'_> {
    /// SendRecv does not say who sends to whom: a rank's output must be
    /// one other rank's whole input, the one whose input chunk 0 landed in
    /// its output chunk 0 (the rank before it when nothing did). The
    /// source found is kept for the permutation check at the end.
    fn expected_sendrecv(
        &mut self,
        rank: u32,
        execution: u32,
    ) -> Vec<(BufferKind, u32, Option<ChunkSources>)> {
        let n = self.plan.ranks.len() as u32;
        let first = Loc {
            place: self.place(rank, BufferKind::Output, 0),
            part: 0,
        };
        let landed = self
            .memory
            .get(&first)
            .and_then(|cell| cell.value.as_ref())
            .and_then(|v| v.single())
            .filter(|c| c.chunk == 0 && c.execution == execution && c.rank != rank);
        let source = landed.map_or((rank + n - 1) % n, |c| c.rank);
        self.sendrecv_sources[rank as usize] = Some(source);
        self.plan
            .sendrecv_result(rank, source)
            .into_iter()
            .map(|(k, want)| (BufferKind::Output, k, Some(want)))
            .collect()
    }

    /// After a SendRecv: every rank's source, when no rank is the source of
    /// two (each rank's input goes to one rank), else the wrong result.
    pub(super) fn sendrecv_permutation(&self) -> Result<Option<Vec<u32>>, Verdict> {
        if self.plan.collective.name != "sendrecv" {
            return Ok(None);
        }
        let sources: Vec<u32> = self.sendrecv_sources.iter().flatten().copied().collect();
        let mut receiver = vec![None; self.plan.ranks.len()];
        for (rank, source) in sources.iter().enumerate() {
            if let Some(other) = receiver[*source as usize].replace(rank) {
                return Err(Verdict::WrongResult(Box::new(WrongResult {
                    text: format!(
                        "ranks {other} and {rank} both receive rank {source}'s input: a SendRecv sends each rank's input to one rank"
                    ),
                    last_write: None,
                    read_as_plain: None,
                })));
            }
        }
        Ok(Some(sources))
    }
}

/// How a SendRecv's ranks pair up, in words: one shift for all
/// ("each rank r receives rank r - 4's input"), else each rank's source.
pub fn describe_sendrecv(sources: &[u32]) -> String {
    let n = sources.len() as u32;
    let shift = |r: usize| (r as u32 + n - sources[r]) % n;
    if n > 0 && (0..sources.len()).all(|r| shift(r) == shift(0)) {
        return format!(
            "each rank r receives rank (r - {}) mod {n}'s input",
            shift(0)
        );
    }
    let pairs: Vec<String> = sources
        .iter()
        .enumerate()
        .map(|(r, s)| format!("{r} <- {s}"))
        .collect();
    format!("rank <- source: {}", pairs.join(", "))
}

#[cfg(test)]
mod tests {
    use super::describe_sendrecv;

    #[test]
    fn sendrecv_pairings_read_as_a_shift_or_a_list() {
        assert_eq!(
            describe_sendrecv(&[12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]),
            "each rank r receives rank (r - 4) mod 16's input"
        );
        assert_eq!(
            describe_sendrecv(&[1, 2, 0, 3]),
            "rank <- source: 0 <- 1, 1 <- 2, 2 <- 0, 3 <- 3"
        );
    }
}
