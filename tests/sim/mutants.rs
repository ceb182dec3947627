//! Mutants of correct reference plans (a transfer dropped or moved, a
//! wait, a signal or a reduction's operand dropped): the simulator must
//! find every one wrong, deadlocked or racing.

use super::*;

/// Ways to break a plan, each applied at every op where it applies.
#[derive(Clone, Copy, Debug)]
enum Mutation {
    DropTransfer,
    MoveTransfer,
    DropWait,
    DropSignal,
    DropReduceOperand,
}

fn is_transfer(n: OpName) -> bool {
    use OpName::*;
    matches!(
        n,
        Put | PutWithSignal
            | PutWithSignalAndFlush
            | PutPackets
            | ReadPutPackets
            | Copy
            | CopyPackets
            | UnpackPackets
            | Get
    )
}

/// The mutants of `plan` for `m`: one per op it applies to.
fn mutants(plan: &Plan, m: Mutation) -> Vec<(String, Plan)> {
    let mut out = Vec::new();
    for (r, rank) in plan.ranks.iter().enumerate() {
        for (t, tb) in rank.threadblocks.iter().enumerate() {
            for (i, op) in tb.ops.iter().enumerate() {
                let applies = match m {
                    Mutation::DropTransfer | Mutation::MoveTransfer => {
                        is_transfer(op.name) && op.tbg.is_none()
                    }
                    Mutation::DropWait => op.name == OpName::Wait,
                    Mutation::DropSignal => op.name == OpName::Signal,
                    Mutation::DropReduceOperand => {
                        matches!(
                            op.name,
                            OpName::Reduce
                                | OpName::ReadReduce
                                | OpName::ReduceSend
                                | OpName::ReadReduceSend
                                | OpName::ReducePackets
                                | OpName::ReduceSendPackets
                        ) && op.src.len() > 2
                    }
                };
                if !applies {
                    continue;
                }
                let mut p = plan.clone();
                let ops = &mut p.ranks[r].threadblocks[t].ops;
                match m {
                    Mutation::DropTransfer | Mutation::DropWait | Mutation::DropSignal => {
                        ops.remove(i);
                    }
                    Mutation::MoveTransfer => {
                        let d = &mut ops[i].dst[0];
                        let limit = match d.target {
                            msclc::ir::RefTarget::Local(k)
                            | msclc::ir::RefTarget::Remote { kind: k, .. } => match k {
                                msclc::ir::BufferKind::Input => rank.input_chunks,
                                msclc::ir::BufferKind::Output => rank.output_chunks,
                                msclc::ir::BufferKind::Scratch => rank.scratch_chunks,
                            },
                            _ => continue,
                        };
                        if limit <= d.size {
                            continue;
                        }
                        d.index = (d.index + d.size) % (limit - d.size + 1);
                    }
                    Mutation::DropReduceOperand => {
                        ops[i].src.pop();
                    }
                }
                out.push((format!("{m:?} at rank {r} tb {t} op {i}"), p));
            }
        }
    }
    out
}

/// Simulates sampled mutants (every `step`-th, at most `take` per kind) of
/// the named plans; returns how many ran and the ones not caught.
fn sweep(all: &[(String, Plan)], names: &[&str], step: usize, take: usize) -> (usize, Vec<String>) {
    let mut tried = 0;
    let mut missed = Vec::new();
    for name in names {
        let (_, plan) = all.iter().find(|(n, _)| n == name).expect("plan present");
        assert_eq!(simulate(plan, 2).verdict, Verdict::Verified, "{name}");
        for m in [
            Mutation::DropTransfer,
            Mutation::MoveTransfer,
            Mutation::DropWait,
            Mutation::DropSignal,
            Mutation::DropReduceOperand,
        ] {
            for (what, mutant) in mutants(plan, m).into_iter().step_by(step).take(take) {
                tried += 1;
                if simulate(&mutant, 2).verdict == Verdict::Verified {
                    missed.push(format!("{name}: {what}"));
                }
            }
        }
    }
    (tried, missed)
}

pub(super) fn mutants_of_correct_plans_are_caught() {
    let dir = conformance();
    let sources = [
        "single_node/allreduce.n4.json",
        "single_node/allreduce_pkt.n4.json",
        "single_node/alltoall.n4.json",
        "single_node/allgather_pkt.n4.json",
        "multi_node/allgather.g8.json",
        "executor/reduce_pack.json",
        "single_node/allreduce_pipeline.json",
    ];
    let (tried, missed) = sweep(&plans(&dir), &sources, 3, 6);
    assert!(tried >= 60, "only {tried} mutants");
    assert!(
        missed.is_empty(),
        "{} of {tried} mutants not caught:\n{}",
        missed.len(),
        missed.join("\n")
    );
}

/// Every verified non-unit reference plan, more mutants each (about a
/// minute in a release build): `cargo test --release --test sim -- --ignored`.
pub(super) fn mutants_of_every_correct_plan_are_caught() {
    let dir = conformance();
    let all = plans(&dir);
    let names: Vec<&str> = all
        .iter()
        .filter(|(n, p)| !n.starts_with("unit/") && simulate(p, 2).verdict == Verdict::Verified)
        .map(|(n, _)| n.as_str())
        .collect();
    let (tried, missed) = sweep(&all, &names, 5, 8);
    // executor/reduce's rank 0 copies input chunks 2..4 into scratch that
    // nothing reads: dropping or moving that copy changes nothing.
    let equivalent =
        |m: &String| m.starts_with("executor/reduce.json") && m.ends_with("at rank 0 tb 0 op 0");
    let real: Vec<&String> = missed.iter().filter(|m| !equivalent(m)).collect();
    eprintln!(
        "caught {} of {tried} mutants of {} plans",
        tried - missed.len(),
        names.len()
    );
    assert!(tried >= 600, "only {tried} mutants");
    assert!(
        real.is_empty(),
        "{} of {tried} mutants not caught: {real:?}",
        real.len()
    );
}
