//! What reading cannot see field by field: every buffer reference of a
//! plan read lies within the buffer it names.

use super::{PlanError, Res};
use crate::ir::*;

/// Every buffer reference lies within the buffer it names (the executor
/// does not check; SEMANTICS.md §5.7), on this rank, a peer or every member
/// of a switch channel.
pub(super) fn check_ranges(plan: &Plan) -> Res<()> {
    let chunks = |rank: u32, kind: BufferKind| -> u64 {
        let r = &plan.ranks[rank as usize];
        match kind {
            BufferKind::Input => r.input_chunks,
            BufferKind::Output => r.output_chunks,
            BufferKind::Scratch => r.scratch_chunks,
        }
        .into()
    };
    // An op's place: (parent op's node or NONE, its index in its list);
    // its path is written out only for a problem.
    const NONE: usize = usize::MAX;
    let mut nodes: Vec<(usize, usize)> = Vec::new();
    let mut stack: Vec<(usize, &Op)> = Vec::new();
    for (g, rank) in plan.ranks.iter().enumerate() {
        for (t, tb) in rank.threadblocks.iter().enumerate() {
            nodes.clear();
            for (i, op) in tb.ops.iter().enumerate() {
                nodes.push((NONE, i));
                stack.push((nodes.len() - 1, op));
            }
            while let Some((node, op)) = stack.pop() {
                for (i, inner) in op.body().iter().enumerate() {
                    nodes.push((node, i));
                    stack.push((nodes.len() - 1, inner));
                }
                let path = || {
                    let mut indices = Vec::new();
                    let mut n = node;
                    while n != NONE {
                        indices.push(nodes[n].1);
                        n = nodes[n].0;
                    }
                    let mut path = format!("gpus[{g}].threadblocks[{t}]");
                    for i in indices.iter().rev() {
                        path.push_str(&format!(".ops[{i}]"));
                    }
                    path
                };
                for (key, refs) in [("src_buff", &op.src), ("dst_buff", &op.dst)] {
                    for (j, r) in refs.iter().enumerate() {
                        // Each buffer the reference lands in.
                        let check = |owner: u32, kind: BufferKind| -> Res<()> {
                            if owner as usize >= plan.ranks.len() {
                                return Err(PlanError {
                                    path: format!("{}.{key}[{j}]", path()),
                                    message: format!("rank {owner} is not in the plan"),
                                });
                            }
                            let end = u64::from(r.index) + u64::from(r.size);
                            let have = chunks(owner, kind);
                            if end > have {
                                return Err(PlanError {
                                    path: format!("{}.{key}[{j}]", path()),
                                    message: format!(
                                        "chunks {}..{end} of rank {owner}'s {} buffer, which has {have}",
                                        r.index,
                                        kind.name()
                                    ),
                                });
                            }
                            Ok(())
                        };
                        match r.target {
                            RefTarget::Local(kind) => check(g as u32, kind)?,
                            RefTarget::Remote { id, kind } => {
                                let channel = op.channel.unwrap_or(ChannelKind::Memory);
                                let global = tb.remote_buffer_ids(channel)[id as usize];
                                check(rank.remote_buffers[global as usize].rank, kind)?;
                            }
                            RefTarget::Switch { id } => {
                                match tb.channel_ids(ChannelKind::Switch).get(id as usize) {
                                    Some(&c) => {
                                        let decl = &rank.switch_channels[c as usize];
                                        for m in decl.ranks.iter() {
                                            check(*m, decl.buffer)?;
                                        }
                                    }
                                    None => {
                                        return Err(PlanError {
                                            path: format!(
                                                "{}.{key}[{j}].switch_channel_id",
                                                path()
                                            ),
                                            message: format!(
                                                "the thread block has no switch channel {id}"
                                            ),
                                        })
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    Ok(())
}
