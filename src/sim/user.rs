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
                    by: user,
                    thread: user,
                    epoch: 2 * execution - 1,
                    op: usize::MAX,
                    execution,
                    write: true,
                };
                if let Some(v) = self.check(loc, access, &clock) {
                    return Some(v);
                }
                let cell = self.memory.entry(loc).or_default();
                cell.value = Some(value.clone());
                cell.last_write = Some(access);
                cell.reads.clear();
            }
        }
        // The kernel starts after the user's writes.
        for th in self.threads.iter_mut().filter(|t| t.rank == rank) {
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
                    by: user,
                    thread: user,
                    epoch: 2 * execution,
                    op: usize::MAX,
                    execution,
                    write: false,
                };
                if let Some(v) = self.check(loc, access, clock) {
                    return Some(v);
                }
                let cell = self.memory.entry(loc).or_default();
                cell.reads.push(access);
                let problem = match (&cell.value, &want) {
                    (_, None) => None,
                    (None, Some(_)) => Some("was never written".to_string()),
                    (Some(v), Some(want)) => v.difference(want, self.reduce_op),
                };
                if let Some(p) = problem {
                    let part_note = if self.parts > 1 {
                        format!(" (part {} of {})", part + 1, self.parts)
                    } else {
                        String::new()
                    };
                    return Some(Verdict::WrongResult(format!(
                        "execution {execution}: rank {rank} {} chunk {chunk}{part_note} {p}",
                        kind.name()
                    )));
                }
            }
        }
        None
    }

    /// What the user expects in each result chunk of `rank` after
    /// `execution` (`None`: anything, for the test collective).
    pub(super) fn expected(
        &self,
        rank: u32,
        execution: u32,
    ) -> Vec<(BufferKind, u32, Option<Vec<Contribution>>)> {
        let Some(result) = self.plan.expected_result(rank) else {
            return Vec::new();
        };
        result
            .into_iter()
            .map(|(k, sources)| {
                let want = sources
                    .into_iter()
                    .map(|(rank, chunk)| Contribution {
                        execution,
                        rank,
                        chunk,
                    })
                    .collect();
                (BufferKind::Output, k, Some(want))
            })
            .collect()
    }
}
