//! What the simulator tells a user about a problem: which ops of the plan
//! are involved (rank, thread block, the op's JSON path in the plan and,
//! for a plan compiled here, its program line), and, where it can, why.

use super::*;
use crate::diag::Span;

/// An op of the plan, located for a report.
#[derive(Debug, Clone, PartialEq)]
pub struct OpAt {
    pub rank: u32,
    pub tb: u32,
    /// `gpus[r].threadblocks[t].ops[i]` (`.ops[j]` inside a pipeline).
    pub path: String,
    /// The call that made it, when the plan was compiled here.
    pub span: Option<Span>,
    /// The loop values it was made in ("i = 2, peer = 3").
    pub when: Option<String>,
    /// The calls that reached it, the innermost first (where it was made
    /// in a function: one of the standard library, say).
    pub calls: Vec<Span>,
    /// Whether fusion made it of several of the program's ops: its line
    /// and loop values are the first's, which need not be the part that
    /// did what is reported.
    pub fused: bool,
}

/// A thread block that can go no further.
#[derive(Debug, Clone, PartialEq)]
pub struct Stuck {
    /// The block's rank.
    pub rank: u32,
    pub text: String,
    /// The op it is stuck at (none when it waits for its rank's other
    /// blocks to finish).
    pub op: Option<OpAt>,
    /// Why, where the simulator can tell more than what is missing.
    pub hint: Option<String>,
    /// Program lines that made the channels it waits on, and their pairs.
    pub channels: Vec<(Span, String)>,
}

/// A result chunk that is not what the collective defines.
#[derive(Debug, Clone, PartialEq)]
pub struct WrongResult {
    pub text: String,
    /// The op that last wrote the chunk, if an op did.
    pub last_write: Option<OpAt>,
    /// The op that read packets there as plain data, where that is what
    /// is wrong (on the GPU it reads data words and flags as data).
    pub read_as_plain: Option<OpAt>,
}

impl std::fmt::Display for Stuck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)?;
        if let Some(op) = &self.op {
            write!(f, " [{}]", op.path)?;
            if let Some(when) = &op.when {
                write!(f, " (when {when})")?;
            }
        }
        Ok(())
    }
}

/// Where the `flat`-th op of a block whose pipelines are run
/// `PIPELINE_ITERATIONS` times (the simulator's flattened op list) is in
/// the block's list: its index there, and inside a pipeline, its index in
/// the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct OpPlace {
    index: usize,
    in_body: Option<usize>,
}

impl OpPlace {
    /// As a JSON path within the block: `ops[1].ops[0]`.
    fn path(self) -> String {
        match self.in_body {
            None => format!("ops[{}]", self.index),
            Some(j) => format!("ops[{}].ops[{j}]", self.index),
        }
    }

    /// As `--emit ops` numbers it: `1.0`.
    fn number(self) -> String {
        match self.in_body {
            None => self.index.to_string(),
            Some(j) => format!("{}.{j}", self.index),
        }
    }
}

/// The place of the `flat`-th op of a block (see `OpPlace`), and the op.
fn op_place(ops: &[Op], flat: usize) -> Option<(OpPlace, &Op)> {
    let mut i = flat;
    for (k, op) in ops.iter().enumerate() {
        if op.name == OpName::Pipeline && !op.body().is_empty() {
            let n = op.body().len() * PIPELINE_ITERATIONS as usize;
            if i < n {
                let j = i % op.body().len();
                return Some((
                    OpPlace {
                        index: k,
                        in_body: Some(j),
                    },
                    &op.body()[j],
                ));
            }
            i -= n;
        } else if op.name != OpName::Pipeline {
            if i == 0 {
                return Some((
                    OpPlace {
                        index: k,
                        in_body: None,
                    },
                    op,
                ));
            }
            i -= 1;
        }
    }
    None
}

impl Sim<'_> {
    /// Thread `t`'s `flat`-th op as `--emit ops` numbers it (`0.1` inside
    /// a pipeline).
    pub(super) fn op_number(&self, t: usize, flat: usize) -> String {
        let th = &self.threads[t];
        let tb = &self.plan.ranks[th.rank as usize].threadblocks[th.tb as usize];
        op_place(&tb.ops, flat).map_or(flat.to_string(), |(p, _)| p.number())
    }

    /// Where thread `t`'s `flat`-th op is in the plan.
    pub(super) fn op_at(&self, t: usize, flat: usize) -> Option<OpAt> {
        let th = self.threads.get(t)?;
        let tb = &self.plan.ranks[th.rank as usize].threadblocks[th.tb as usize];
        let (place, op) = op_place(&tb.ops, flat)?;
        let path = place.path();
        Some(OpAt {
            rank: th.rank,
            tb: th.tb,
            path: format!("gpus[{}].threadblocks[{}].{path}", th.rank, th.tb),
            span: (op.span != Span::default()).then_some(op.span),
            when: self.plan.loop_values(op.context),
            calls: self.plan.loops.call_sites(op.context),
            fused: op.fused,
        })
    }

    pub(super) fn blocked_threads(&self) -> Vec<Stuck> {
        let names = ChannelNumbers::new(self.plan);
        let mut out = Vec::new();
        for (t, th) in self.threads.iter().enumerate() {
            if th.done {
                continue;
            }
            let at = format!(
                "rank {} thread block {} (execution {})",
                th.rank, th.tb, th.execution
            );
            if th.pc == th.ops.len() {
                out.push(Stuck {
                    rank: th.rank,
                    text: format!("{at} waits for the other thread blocks of its rank to finish"),
                    op: None,
                    hint: None,
                    channels: Vec::new(),
                });
                continue;
            }
            let op = th.ops.op(th.pc);
            let (why, hint) = self.why_blocked(t, op, &names);
            let number = self.op_number(t, th.pc);
            // A pipeline's body runs as often as the size asks (twice
            // where no size is given): which time it stopped in.
            let iteration = th.ops.iteration(th.pc).map_or(String::new(), |it| {
                format!(", iteration {} of the pipeline's {}", it.index + 1, it.of)
            });
            out.push(Stuck {
                rank: th.rank,
                text: format!(
                    "{at} is stuck at op {number} ({}{iteration}){why}",
                    op.name.json()
                ),
                op: self.op_at(t, th.pc),
                hint,
                channels: self.starving_channel_lines(t, op, &names),
            });
        }
        out
    }

    /// What `t`'s op waits for, and a hint where the cause is clear.
    fn why_blocked(&self, t: usize, op: &Op, names: &ChannelNumbers) -> (String, Option<String>) {
        let th = &self.threads[t];
        match op.name {
            OpName::Wait | OpName::RelaxedWait => {
                // The channels short of the signals the op takes (a channel
                // named k times, k).
                let ends = self.endpoints(th, op);
                let mut starving: Vec<Endpoint> = ends
                    .iter()
                    .copied()
                    .filter(|e| {
                        self.signals.waiting_at(*e) < ends.iter().filter(|x| *x == e).count()
                    })
                    .collect();
                starving.dedup();
                let text: Vec<String> = starving
                    .iter()
                    .map(|e| {
                        let peer = names.peer(*e);
                        let channel = names.kind_and_number(*e);
                        let (have, want) = (
                            self.signals.waiting_at(*e),
                            ends.iter().filter(|x| *x == e).count(),
                        );
                        match self.signals.pair(*e) {
                            Some(_) if want > 1 => format!(
                                "{have} signal(s) from rank {peer} on {channel}, which it waits on {want} times"
                            ),
                            Some(_) => format!("no signal from rank {peer} on {channel}"),
                            None => format!(
                                "{channel} to rank {peer} has no paired channel on that rank"
                            ),
                        }
                    })
                    .collect();
                (
                    format!(": {}", text.join("; ")),
                    self.signalled_elsewhere(&starving, names),
                )
            }
            OpName::SemAcquire => {
                // The semaphores short of what the op takes of them (a
                // semaphore named k times, k): nothing is left to release them.
                let ids = op.semaphore_ids();
                let short: Vec<String> = ids
                    .iter()
                    .enumerate()
                    .filter(|(i, s)| !ids[..*i].contains(s))
                    .filter_map(|(_, s)| {
                        let times = ids.iter().filter(|x| *x == s).count() as i64;
                        let (value, _) = self.semaphores.get(&(th.rank, *s))?;
                        (*value < times).then(|| format!("semaphore {s} is at {value}"))
                    })
                    .collect();
                let them = if short.len() == 1 { "it" } else { "them" };
                let text = format!(
                    ": {}, and nothing is left to release {them}",
                    short.join(", ")
                );
                // Past the first launch, the launches before may have run
                // the semaphore down: the executor never resets one.
                let hint = (th.execution > 1).then(|| {
                    format!(
                        "executions 1 to {} ran before this one, and the executor never resets a semaphore: one that an execution acquires more often than it releases runs down over executions (`msclc sim --executions {}` shows the drift as W0506)",
                        th.execution - 1,
                        th.execution - 1
                    )
                });
                (text, hint)
            }
            OpName::Barrier => {
                let (id, n) = op.barrier.unwrap_or((0, 0));
                (format!(": barrier {id} waits for {n} thread blocks"), None)
            }
            _ => {
                let overwritten = self.packet_sources(t, op).into_iter().find_map(|loc| {
                    let cell = self.memory.get(&loc)?;
                    cell.packet
                        .as_ref()
                        .map(|p| p.execution)
                        .filter(|e| *e > th.execution)
                });
                let hint = overwritten.map(|later| {
                    format!(
                        "the packets it reads were overwritten by execution {later} before execution {} read them: a faster rank started its next launch in the same scratch; `use_double_scratch_buffer = true` gives alternate launches their own half",
                        th.execution
                    )
                });
                let hint = hint.or_else(|| {
                    (op.name == OpName::PutPackets && op.channel == Some(ChannelKind::Port)).then(|| {
                        "a put_packets over a port channel sends its source as packets already made, as the proxy copies it: make them there first (copy_packets, or a reduce with packet: true), or put over a memory channel, which makes them".to_string()
                    })
                });
                (": its packets never arrive".to_string(), hint)
            }
        }
    }

    /// For a stuck wait: where its starving channels and their pairs on
    /// the peers were made (the first two channels).
    fn starving_channel_lines(
        &self,
        t: usize,
        op: &Op,
        names: &ChannelNumbers,
    ) -> Vec<(Span, String)> {
        if !matches!(op.name, OpName::Wait | OpName::RelaxedWait) {
            return Vec::new();
        }
        let th = &self.threads[t];
        let starving = self
            .endpoints(th, op)
            .into_iter()
            .filter(|e| self.signals.waiting_at(*e) == 0);
        let mut lines = Vec::new();
        for e in starving.take(2) {
            let (rank, kind, c) = e;
            let ours = names.name(e);
            if let Some(made) = self.plan.channel_origin(rank, kind, c) {
                lines.push((
                    made.span,
                    format!("{ours}, made here{}", self.when(made.context)),
                ));
            }
            if let Some(pair @ (p, kind, pc)) = self.signals.pair(e) {
                if let Some(made) = self.plan.channel_origin(p, kind, pc) {
                    lines.push((
                        made.span,
                        format!(
                            "{}, made here{}: the pair of {ours}, which must signal",
                            names.name(pair),
                            self.when(made.context)
                        ),
                    ));
                }
            }
        }
        lines
    }

    /// " (when i = 2)" for loop context `context`, or nothing.
    fn when(&self, context: u32) -> String {
        self.plan
            .loop_values(context)
            .map_or(String::new(), |v| format!(" (when {v})"))
    }

    /// When channels starve while their peer's signals sit unwaited on
    /// other channels of this rank to that peer: which, in the pairing's
    /// terms (one hint, for the first such peer).
    fn signalled_elsewhere(&self, starving: &[Endpoint], names: &ChannelNumbers) -> Option<String> {
        starving.iter().find_map(|e| {
            let (rank, kind, _) = *e;
            let peer = names.peer(*e);
            let to_peer = |o: &Endpoint| o.0 == rank && o.1 == kind && names.peer(*o) == peer;
            // Signals on a channel the op waits on too are not elsewhere.
            let mut signalled: Vec<u32> = self
                .signals
                .waiting_on(rank)
                .filter(|(o, _)| to_peer(o) && !starving.contains(o))
                .map(|(o, _)| names.number(o).0)
                .collect();
            if signalled.is_empty() {
                return None;
            }
            signalled.sort();
            let waited: Vec<u32> = starving
                .iter()
                .filter(|o| to_peer(o))
                .map(|o| names.number(*o).0)
                .collect();
            let list = |ids: &[u32]| {
                ids.iter()
                    .map(|c| format!("#{c}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            Some(format!(
                "rank {peer}'s signals arrive on rank {rank}'s {} channel(s) {} to rank {peer} (nobody waits there), but this op waits on channel(s) {}: a rank's k-th channel of a type to a peer pairs with the peer's k-th channel back, so signal and wait on channels of the same number",
                kind.name(),
                list(&signalled),
                list(&waited)
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flattened_pipeline_ops_map_back_to_their_json_paths() {
        let span = Span::default();
        let mut pipeline = Op::new(OpName::Pipeline, span);
        pipeline.extra_mut().body = vec![Op::new(OpName::Copy, span), Op::new(OpName::Nop, span)];
        let ops = vec![
            Op::new(OpName::Wait, span),
            pipeline,
            Op::new(OpName::Signal, span),
        ];
        let path = |flat| op_place(&ops, flat).map(|(p, op)| (p.path(), op.name));
        assert_eq!(path(0), Some(("ops[0]".into(), OpName::Wait)));
        assert_eq!(path(1), Some(("ops[1].ops[0]".into(), OpName::Copy)));
        assert_eq!(path(2), Some(("ops[1].ops[1]".into(), OpName::Nop)));
        // The second iteration repeats the body.
        assert_eq!(path(3), Some(("ops[1].ops[0]".into(), OpName::Copy)));
        assert_eq!(path(5), Some(("ops[2]".into(), OpName::Signal)));
        assert_eq!(path(6), None);
        // As the listing numbers them.
        let number = |flat| op_place(&ops, flat).map(|(p, _)| p.number());
        assert_eq!(number(2), Some("1.1".into()));
        assert_eq!(number(5), Some("2".into()));
    }
}
