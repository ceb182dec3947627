//! A rank's barriers as a plan is read: one id gathers one number of
//! blocks, and ids stay within what a compiler numbers (the executor
//! indexes its 16 barrier counters by id, unchecked).

use super::{At, PlanError, Res};
use crate::ir::{RankPlan, EXECUTOR_BARRIERS};

/// What a rank's barriers have said so far: the blocks each id gathers
/// (one number per id: the executor's counter waits for that many), and
/// the first id past the executor's 16 with where it is.
#[derive(Default)]
pub(super) struct Barriers {
    blocks: std::collections::HashMap<u32, u32>,
    count: usize,
    first_past: Option<(u32, String)>,
}

impl Barriers {
    /// The id and block count of the barrier op at `at`, checked against
    /// the rank's blocks and its other barriers of that id.
    pub(super) fn read(&mut self, at: &At, rank: &RankPlan) -> Res<(u32, u32)> {
        let id_at = at.key("barrier_id")?;
        let id = id_at.u32()?;
        let blocks_at = at.key("num_threadblocks")?;
        let have = rank.threadblocks.len() as u32;
        let blocks = blocks_at.u32_in(
            1..=have.max(1),
            "thread blocks to meet at a barrier, of the rank's",
        )?;
        match self.blocks.insert(id, blocks) {
            Some(before) if before != blocks => {
                return blocks_at.fail(format!(
                    "barrier {id} gathers {before} thread blocks elsewhere on this rank: one barrier id counts one number of blocks"
                ))
            }
            _ => {}
        }
        self.count += 1;
        if id as usize >= EXECUTOR_BARRIERS && self.first_past.is_none() {
            self.first_past = Some((id, id_at.path()));
        }
        Ok((id, blocks))
    }

    /// Ids past the executor's 16 are a warning (W0502) where a compiler
    /// numbered that many sets of blocks, the rank's barriers in order;
    /// past the number of the rank's barriers, an id is no such number.
    pub(super) fn check_ids(self) -> Res<()> {
        match self.first_past {
            Some((id, path)) if id as usize >= self.count => Err(PlanError {
                path,
                message: format!(
                    "barrier id {id} is past the executor's 16 barrier counters (ids 0 to 15), and the rank has only {} barrier(s), which a compiler numbers from 0: give an id from 0 to 15",
                    self.count
                ),
            }),
            _ => Ok(()),
        }
    }
}
