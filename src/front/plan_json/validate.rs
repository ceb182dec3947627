//! What reading cannot see field by field, since a rank is read before the
//! plan's rank count is known: every peer a rank names (by a channel or a
//! remote buffer) is in the plan, the ranks agree on their buffers'
//! chunks, and every buffer reference lies within the buffer it names.

use super::{PlanError, Res};
use crate::ir::*;

/// Every peer of a channel or a remote buffer is a rank of the plan, a
/// switch channel's group holds its own rank once and every member once,
/// and every rank has the first one's input and output chunks (the
/// collective's buffers: the executor sizes every rank's chunks from one
/// message size).
pub(super) fn check_ranks(plan: &Plan) -> Res<()> {
    let n = plan.ranks.len();
    let (ins, outs) = (plan.collective.input_chunks, plan.collective.output_chunks);
    for (g, rank) in plan.ranks.iter().enumerate() {
        let fail = |field: &str, message: String| {
            Err(PlanError {
                path: format!("gpus[{g}].{field}"),
                message,
            })
        };
        for (kind, peers) in [("memory", &rank.memory_peers), ("port", &rank.port_peers)] {
            if let Some(p) = peers.iter().find(|p| **p as usize >= n) {
                return fail(
                    "channels",
                    format!("a {kind} channel connected to rank {p}, but the plan has {n} ranks"),
                );
            }
        }
        if let Some((b, buffer)) =
            (rank.remote_buffers.iter().enumerate()).find(|(_, buffer)| buffer.rank as usize >= n)
        {
            return fail(
                &format!("remote_buffers[{b}].rank"),
                format!(
                    "a remote buffer of rank {}, but the plan has {n} ranks",
                    buffer.rank
                ),
            );
        }
        for (c, decl) in rank.switch_channels.iter().enumerate() {
            let mut members = decl.ranks.to_vec();
            members.sort_unstable();
            let twice = members.windows(2).find(|w| w[0] == w[1]).map(|w| w[0]);
            let problem = if let Some(m) = members.iter().find(|m| **m as usize >= n) {
                format!("rank {m} is not in the plan, which has {n} ranks")
            } else if let Some(m) = twice {
                format!("rank {m} is in the group twice")
            } else if members.binary_search(&(g as u32)).is_err() {
                format!("the group leaves out rank {g}, whose channel it is")
            } else {
                continue;
            };
            return fail("channels", format!("switch channel {c}: {problem}"));
        }
        if (rank.input_chunks, rank.output_chunks) != (ins, outs) {
            return fail(
                "input_chunks",
                format!(
                    "{} input and {} output chunks, but rank 0 has {ins} and {outs}: every rank's buffers are the collective's",
                    rank.input_chunks, rank.output_chunks
                ),
            );
        }
    }
    Ok(())
}

/// Every buffer reference lies within the buffer it names (the executor
/// does not check; SEMANTICS.md §5.7), on this rank, a peer or every member
/// of a switch channel.
pub(super) fn check_ranges(plan: &Plan) -> Res<()> {
    // What is wrong with chunks `index..index + size` of rank `owner`'s
    // `kind` buffer, if anything.
    let outside = |owner: u32, kind: BufferKind, index: u32, size: u32| -> Option<String> {
        let Some(r) = plan.ranks.get(owner as usize) else {
            return Some(format!("rank {owner} is not in the plan"));
        };
        let have = match kind {
            BufferKind::Input => r.input_chunks,
            BufferKind::Output => r.output_chunks,
            BufferKind::Scratch => r.scratch_chunks,
        };
        let end = u64::from(index) + u64::from(size);
        (end > u64::from(have)).then(|| {
            format!(
                "chunks {index}..{end} of rank {owner}'s {} buffer, which has {have}",
                kind.name()
            )
        })
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
                if let Some(problem) = group_reduce_problem(rank, tb, op, &outside) {
                    let (field, message) = problem;
                    return Err(PlanError {
                        path: format!("{}.{field}", path()),
                        message,
                    });
                }
                for (key, refs) in [("src_buff", &op.src), ("dst_buff", &op.dst)] {
                    if let Some((j, message)) = misplaced(op, key, refs) {
                        return Err(PlanError {
                            path: format!("{}.{key}[{j}]", path()),
                            message,
                        });
                    }
                    for (j, r) in refs.iter().enumerate() {
                        // Each buffer the reference lands in.
                        let check = |owner: u32, kind: BufferKind| -> Res<()> {
                            match outside(owner, kind, r.index, r.size) {
                                Some(message) => Err(PlanError {
                                    path: format!("{}.{key}[{j}]", path()),
                                    message,
                                }),
                                None => Ok(()),
                            }
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

/// What is wrong with a switch reduce's window over the members' buffers
/// or its destination (`glre`, which names them outside `src_buff` and
/// `dst_buff`), if anything: the field, and the problem.
fn group_reduce_problem(
    rank: &RankPlan,
    tb: &ThreadBlock,
    op: &Op,
    outside: &impl Fn(u32, BufferKind, u32, u32) -> Option<String>,
) -> Option<(&'static str, String)> {
    let g = op.group_reduce()?;
    // (Read with the one switch channel id below the block's count.)
    let c = tb.channel_ids(ChannelKind::Switch)[op.channel_ids[0] as usize];
    let decl = &rank.switch_channels[c as usize];
    if g.buffer != decl.buffer {
        return Some((
            "buffer_type",
            format!(
                "the {} buffer, but switch channel {c} joins the members' {} buffers",
                g.buffer.name(),
                decl.buffer.name()
            ),
        ));
    }
    let window = decl
        .ranks
        .iter()
        .find_map(|m| outside(*m, decl.buffer, g.buffer_offset, g.size));
    if let Some(message) = window {
        return Some(("buffer_offset", message));
    }
    if !decl.ranks.contains(&g.dst_rank) {
        return Some((
            "dst_chunk.rank",
            format!(
                "rank {}, outside switch channel {c}'s group {}",
                g.dst_rank,
                crate::diag::short_list(&decl.ranks, "ranks")
            ),
        ));
    }
    outside(g.dst_rank, g.dst_kind, g.dst_index, g.size).map(|m| ("dst_chunk", m))
}

/// Whose buffer an op's reference names: the rank's own (`type`), a
/// peer's (`buffer_id`) or a switch channel's (`switch_channel_id`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Owner {
    Own,
    Peer,
    Switch,
}

impl Owner {
    fn of(target: RefTarget) -> Owner {
        match target {
            RefTarget::Local(_) => Owner::Own,
            RefTarget::Remote { .. } => Owner::Peer,
            RefTarget::Switch { .. } => Owner::Switch,
        }
    }

    /// Whose buffer, and the field that names it.
    fn name(self) -> &'static str {
        match self {
            Owner::Own => "the rank's own buffer (`type`)",
            Owner::Peer => "a peer's buffer (`buffer_id`)",
            Owner::Switch => "a switch channel's buffer (`switch_channel_id`)",
        }
    }

    /// Whose buffers, of several.
    fn plural(self) -> &'static str {
        match self {
            Owner::Own => "the rank's own",
            Owner::Peer => "peers'",
            Owner::Switch => "switch channels'",
        }
    }
}

/// Where the executor takes an op's sources or destinations (`key`): the
/// first `own` of them in the rank's own buffers and the rest in `rest`'s
/// (the table in docs/executor.md, "Whose buffers an op reads and
/// writes"). `None` for an op with no such list.
fn layout(name: OpName, key: &str) -> Option<(usize, Owner)> {
    use OpName::*;
    use Owner::*;
    let src = key == "src_buff";
    Some(match name {
        Put | PutWithSignal | PutWithSignalAndFlush | PutPackets | ReadPutPackets => {
            if src {
                (usize::MAX, Own)
            } else {
                (0, Peer)
            }
        }
        Get => (if src { 0 } else { usize::MAX }, Peer),
        Copy | CopyPackets | UnpackPackets | Reduce | ReducePackets | ReduceCopyPackets => {
            (usize::MAX, Own)
        }
        ReduceSend | ReduceSendPackets => (if src { usize::MAX } else { 1 }, Peer),
        ReadReduce => (if src { 1 } else { usize::MAX }, Peer),
        ReadReduceSend => (1, Peer),
        ReduceCopySendPackets => (if src { usize::MAX } else { 2 }, Peer),
        GroupLoadReduceStore => (0, Switch),
        GroupStore | GroupStorePackets => (if src { usize::MAX } else { 0 }, Switch),
        _ => return None,
    })
}

/// Which of `refs`, `op`'s sources or destinations (`key`), is not where
/// the executor takes it, and why (a peer's buffer where it reads the
/// rank's own names another buffer than the plan means, or none at all).
fn misplaced(op: &Op, key: &str, refs: &[BufRef]) -> Option<(usize, String)> {
    let (own, rest) = layout(op.name, key)?;
    let wanted = |j: usize| if j < own { Owner::Own } else { rest };
    let (j, r) = (refs.iter().enumerate()).find(|(j, r)| Owner::of(r.target) != wanted(*j))?;
    let (one, all) = match key {
        "src_buff" => ("source", "sources"),
        _ => ("destination", "destinations"),
    };
    let lay = match own {
        usize::MAX => format!("all its {all} are {}", Owner::Own.plural()),
        0 => format!("all its {all} are {}", rest.plural()),
        1 => format!(
            "its first {one} is the rank's own, the others {}",
            rest.plural()
        ),
        n => format!(
            "its first {n} {all} are the rank's own, the others {}",
            rest.plural()
        ),
    };
    Some((
        j,
        format!(
            "{} names {}, where {} takes {}: {lay}",
            key,
            Owner::of(r.target).name(),
            op.name.json(),
            wanted(j).name(),
        ),
    ))
}
