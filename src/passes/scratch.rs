//! Scratch sizing: each rank's scratch buffer holds every `scratch(..)`
//! allocation of the program once per instance.

use crate::ir::Plan;

/// The scratch chunks the program allocated on each rank (one instance).
pub fn allocated(plan: &Plan) -> Vec<u32> {
    plan.ranks.iter().map(|r| r.scratch_chunks).collect()
}

/// Sets each rank's scratch size for all instances.
pub fn size(plan: &mut Plan, allocated: &[u32]) {
    let instances = plan.options.instances;
    for (rank, chunks) in plan.ranks.iter_mut().zip(allocated) {
        rank.scratch_chunks = chunks * instances;
    }
}
