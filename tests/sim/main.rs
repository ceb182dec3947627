//! The simulator on every reference plan, and on broken variants of the
//! correct ones (mutants), each of which it must catch.

#[path = "../common/mod.rs"]
mod common;
mod mutants;

use common::Needs;
use msclc::diag::Code;
use msclc::front::plan_json::read_plan;
use msclc::ir::{OpName, Plan};
use msclc::sim::{simulate, SimOptions, Verdict};
use mutants::*;
use std::path::{Path, PathBuf};

fn main() {
    common::run(vec![
        common::test(
            "every_reference_plan_simulates_as_expected",
            Needs::Conformance,
            every_reference_plan_simulates_as_expected,
        ),
        common::test(
            "mutants_of_correct_plans_are_caught",
            Needs::Conformance,
            mutants_of_correct_plans_are_caught,
        ),
        common::test(
            "mutants_of_every_correct_plan_are_caught",
            Needs::Conformance,
            mutants_of_every_correct_plan_are_caught,
        )
        .ignored("about a minute: cargo test --release --test sim -- --ignored"),
        common::test(
            "reductions_are_checked_for_the_plans_operation",
            Needs::Nothing,
            reductions_are_checked_for_the_plans_operation,
        ),
        common::test(
            "a_missing_nop_after_a_wait_is_a_race",
            Needs::Nothing,
            a_missing_nop_after_a_wait_is_a_race,
        ),
        common::test(
            "plans_relying_on_executor_bugs_get_warnings",
            Needs::Conformance,
            plans_relying_on_executor_bugs_get_warnings,
        ),
        common::test(
            "every_example_simulates_alike_from_its_program_and_its_json_plan",
            Needs::Nothing,
            every_example_simulates_alike_from_its_program_and_its_json_plan,
        ),
        common::test(
            "every_port_simulates_alike_from_its_program_and_the_reference_plan",
            Needs::Conformance,
            every_port_simulates_alike_from_its_program_and_the_reference_plan,
        ),
        common::test(
            "a_fused_acquire_takes_its_semaphore_as_often_as_it_names_it",
            Needs::Nothing,
            a_fused_acquire_takes_its_semaphore_as_often_as_it_names_it,
        ),
        common::test(
            "a_fused_put_of_two_buffers_gets_a_warning",
            Needs::Nothing,
            a_fused_put_of_two_buffers_gets_a_warning,
        ),
        common::test(
            "a_group_op_is_split_over_its_whole_range",
            Needs::Nothing,
            a_group_op_is_split_over_its_whole_range,
        ),
        common::test(
            "a_semaphore_a_launch_runs_down_is_reported",
            Needs::Nothing,
            a_semaphore_a_launch_runs_down_is_reported,
        ),
        common::test(
            "a_wrong_result_says_what_the_chunk_holds_and_hides_behind_no_stopped_execution",
            Needs::Nothing,
            a_wrong_result_says_what_the_chunk_holds_and_hides_behind_no_stopped_execution,
        ),
        common::test(
            "a_pipeline_moves_the_chunks_its_num_chunks_covers",
            Needs::Nothing,
            a_pipeline_moves_the_chunks_its_num_chunks_covers,
        ),
        common::test(
            "a_port_put_packets_sends_packets_already_made",
            Needs::Nothing,
            a_port_put_packets_sends_packets_already_made,
        ),
    ]);
}

fn conformance() -> PathBuf {
    common::shared_dir().join("conformance")
}

fn plans(dir: &Path) -> Vec<(String, Plan)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "json")
                && p.file_name().is_some_and(|n| n != "manifest.json")
            {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(dir, &mut files);
    files.sort();
    files
        .into_iter()
        .map(|f| {
            let name = f.strip_prefix(dir).unwrap_or(&f).display().to_string();
            let text = std::fs::read_to_string(&f).expect("readable");
            let plan = read_plan(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
            (name, plan)
        })
        .collect()
}

/// Reference plans the simulator finds a problem in, and what it finds.
/// Each is described in docs/simulator.md; they are upstream findings, not
/// simulator errors, as far as SEMANTICS.md tells.
const FINDINGS: &[(&str, &str)] = &[
    // Relaxed final handshakes publish no data: the user may read a result
    // the peers' puts or switch stores have not made visible yet.
    ("executor/reduce_nvls.n8.json", "race"),
    ("executor/reduce_nvls_pipeline.n8.json", "race"),
    ("single_node/allgather_nvls_zero_copy.n4.json", "race"),
    ("single_node/allgather_nvls_zero_copy.n8.json", "race"),
    ("single_node/allgather_ring.n4.json", "race"),
    ("single_node/allgather_ring.n8.json", "race"),
    ("single_node/allreduce_nvls_zero_copy.n4.json", "race"),
    ("single_node/allreduce_nvls_zero_copy.n8.json", "race"),
    // A put-with-signal over a port channel reads its source on the host
    // proxy, later; nothing tells the sender when (no flush, no reply), so
    // the user may overwrite the input for the next execution first.
    ("multi_node/reducescatter.g8.json", "race"),
    ("multi_node/send_recv.n2g8.json", "race"),
    ("unit/put_with_signal_test.json", "race"),
    // A group copy of two chunks gives block 0 all of chunk 0 and block 1
    // all of chunk 1 (the executor splits a group op over its whole range),
    // while the one-chunk group ops after it give block j half j of one
    // chunk; the handshakes pair block j with block j only.
    ("executor/reduce_tbg.json", "race"),
    // Unit tests that are not algorithms: both ranks read and write each
    // other's chunks at once, or a switch store or reduce with no
    // handshake at all.
    ("unit/put_fuse_test.json", "race"),
    ("unit/switch_broadcast_test.json", "race"),
    ("unit/switch_reduce_test.json", "race"),
    // Unit tests reading packets nobody writes.
    ("unit/read_put_packet_test.json", "deadlock"),
    ("unit/reduce_copy_packet_test.json", "deadlock"),
    ("unit/reduce_copy_send_packet_test.json", "deadlock"),
    ("unit/reduce_packets_fuse_test.json", "deadlock"),
    ("unit/reduce_packets_test.json", "deadlock"),
    ("unit/reduce_send_packet_test.json", "deadlock"),
    // Fused waits on channels whose paired channels never signal (the
    // signals go out on channels 0 and 1, the waits are on 2 and 3).
    ("unit/relaxed_signal_wait_fuse_test.json", "deadlock"),
    ("unit/signal_wait_fuse_test.json", "deadlock"),
];

fn kind(v: &Verdict) -> &'static str {
    match v {
        Verdict::Verified => "verified",
        Verdict::WrongResult(_) => "wrong result",
        Verdict::Deadlock(_) => "deadlock",
        Verdict::Race(_) => "race",
    }
}

fn every_reference_plan_simulates_as_expected() {
    let dir = conformance();
    let mut wrong = Vec::new();
    let all = plans(&dir);
    assert!(all.len() >= 80);
    for (name, plan) in &all {
        let want = FINDINGS
            .iter()
            .find(|(n, _)| n == name)
            .map_or("verified", |(_, k)| *k);
        let got = simulate(plan, 2);
        if kind(&got.verdict) != want {
            wrong.push(format!("{name}: expected {want}, got {:?}", got.verdict));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// `msclc sim`'s verdict line for `plan`: the verdict and what it names
/// (the chunk, the racing location, the collective and counts).
fn verdict_line(plan: &Plan) -> String {
    msclc::sim::output::verdict_line(plan, &simulate(plan, 2))
}

/// One plan, one meaning: the plan as compiled (with the program's
/// instances, loop values and spans) and as read back from the JSON msclc
/// writes for it get the same verdict.
fn every_example_simulates_alike_from_its_program_and_its_json_plan() {
    let mut differ = Vec::new();
    let mut compared = 0;
    for path in common::example_files() {
        let Ok(plan) = msclc::driver::compile(&path, &[]).result else {
            continue;
        };
        let json = msclc::back::json::plan_to_json(&plan).to_string();
        let read = read_plan(&json).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let (program, plan_json) = (verdict_line(&plan), verdict_line(&read));
        compared += 1;
        if program != plan_json {
            differ.push(format!(
                "{}:\n  program: {program}\n  JSON:    {plan_json}",
                path.display()
            ));
        }
    }
    assert!(compared >= 70, "only {compared} examples compiled");
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

/// The same for every port of a reference plan, at the manifest's params:
/// the program's verdict is the reference plan's.
fn every_port_simulates_alike_from_its_program_and_the_reference_plan() {
    let dir = conformance();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/mscclpp");
    let mut differ = Vec::new();
    let mut compared = 0;
    for case in common::conformance_manifest() {
        let (Some(port), Some(plan_file)) = (case["port"].as_str(), case["plan"].as_str()) else {
            continue;
        };
        let compiled = msclc::driver::compile(&root.join(port), &common::manifest_params(&case));
        let Ok(plan) = compiled.result else {
            continue; // a program the reference rejects too (tests/conformance.rs)
        };
        let text = std::fs::read_to_string(dir.join(plan_file)).expect("plan file");
        let reference = read_plan(&text).unwrap_or_else(|e| panic!("{plan_file}: {e}"));
        let (program, plan_json) = (verdict_line(&plan), verdict_line(&reference));
        compared += 1;
        if program != plan_json {
            differ.push(format!(
                "{plan_file} ({port}):\n  program:   {program}\n  reference: {plan_json}"
            ));
        }
    }
    assert!(compared >= 80, "only {compared} cases compared");
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

/// Two acquires of one semaphore fuse into one op naming it twice, which
/// the executor runs as two lanes each taking it once: one release lets
/// one through, and the other waits.
fn a_fused_acquire_takes_its_semaphore_as_often_as_it_names_it() {
    let program = |releases: usize| {
        let release = "sem.release(tb: 0)\n".repeat(releases);
        compile(&format!(
            r#"
program "s" {{ collective = allreduce(1, chunk_factor: 1, inplace: false) }}
let r = rank(0)
let sem = semaphore(0, initial_value: 0)
{release}sem.acquire(tb: 1)
sem.acquire(tb: 1)
r.copy(r.output[0], r.input[0], tb: 1)
"#
        ))
    };
    let once = program(1);
    let acquire = &once.ranks[0].threadblocks[1].ops[1];
    assert_eq!(
        (acquire.name, acquire.semaphore_ids()),
        (OpName::SemAcquire, &[0, 0][..])
    );
    assert!(matches!(simulate(&once, 1).verdict, Verdict::Deadlock(_)));
    assert_eq!(simulate(&program(2), 1).verdict, Verdict::Verified);
}

fn compile(text: &str) -> Plan {
    let c = msclc::driver::compile_source(Path::new("test.mscl"), text.to_string(), &[]);
    match c.result {
        Ok(plan) => plan,
        Err(d) => panic!("{}", c.sources.render(&d)),
    }
}

/// A two-rank allreduce where each rank reads its peer's chunk with `op`.
fn two_rank_allreduce(first: &str, second: &str) -> String {
    format!(
        r#"
program "ar" {{ collective = allreduce(2, chunk_factor: 1, inplace: true) }}
let ops = [{first}, {second}]
for r in 0..2 {{
    let peer = 1 - r
    let ch = memory_channel(peer, r)
    ch.signal(tb: 0, relaxed: true)
    ch.wait(tb: 0, relaxed: true, data_sync: after)
    let mine = rank(r).input[r]
    ch.reduce(mine, [rank(peer).input[r]], tb: 0, reduce_op: ops[r])
    ch.put(rank(peer).input[r], mine, tb: 0)
    ch.signal(tb: 0, data_sync: before)
    ch.wait(tb: 0, data_sync: after)
}}
"#
    )
}

fn reductions_are_checked_for_the_plans_operation() {
    let max = simulate(&compile(&two_rank_allreduce("max", "max")), 2);
    assert_eq!(max.verdict, Verdict::Verified);
    // Once, at the first op that reduces by max.
    let bugs: Vec<_> = max
        .warnings
        .iter()
        .filter(|w| w.code == Code::ExecutorBug && w.message.contains("always sums"))
        .collect();
    assert_eq!(bugs.len(), 1, "{:?}", max.warnings);
    assert!(
        bugs[0].span().is_some(),
        "at its program line: {:?}",
        bugs[0]
    );
    let mixed = simulate(&compile(&two_rank_allreduce("max", "sum")), 2);
    match mixed.verdict {
        Verdict::WrongResult(what) => {
            assert!(
                what.text.contains("was reduced with sum, not max"),
                "{what:?}"
            )
        }
        other => panic!("{other:?}"),
    }
}

/// Rank 1 never copies its own chunk into its output. Rank 0 ends its
/// first execution first and begins the second, whose handshake waits for
/// rank 1; rank 1's result is wrong, and the simulator starts no execution
/// after it. Rank 0 then waits for a peer that is never launched: no hang
/// of the plan's (the executor would launch it), and the verdict is the
/// wrong result, as with one execution.
fn a_wrong_result_says_what_the_chunk_holds_and_hides_behind_no_stopped_execution() {
    let plan = compile(
        r#"
program "ag" { collective = allgather(2, chunk_factor: 1, inplace: false) }
let c01 = memory_channel(1, 0)
let c10 = memory_channel(0, 1)
rank(0).copy(rank(0).output[0], rank(0).input[0], tb: 0)
c01.signal(tb: 0, relaxed: true)
c10.signal(tb: 0, relaxed: true)
c01.wait(tb: 0, relaxed: true, data_sync: after)
c10.wait(tb: 0, relaxed: true, data_sync: after)
c01.put(rank(1).output[0], rank(0).input[0], tb: 0)
c10.put(rank(0).output[1], rank(1).input[0], tb: 0)
c01.signal(tb: 0, data_sync: before)
c10.signal(tb: 0, data_sync: before)
c01.wait(tb: 0, data_sync: after)
c10.wait(tb: 0, data_sync: after)
"#,
    );
    for executions in [1, 2, 3] {
        match simulate(&plan, executions).verdict {
            Verdict::WrongResult(what) => assert!(
                what.text
                    .contains("rank 1 output chunk 1 was never written"),
                "{executions} executions: {what:?}"
            ),
            other => panic!("{executions} executions: {other:?}"),
        }
    }
    // A chunk written from scratch nothing filled was written: it holds
    // nothing, and the op that wrote it is named.
    let plan = compile(
        r#"
program "ag" { collective = allgather(1, chunk_factor: 1, inplace: false) }
let s = scratch(0, 1)
rank(0).copy(rank(0).output[0], s[0], tb: 0)
"#,
    );
    match simulate(&plan, 2).verdict {
        Verdict::WrongResult(what) => {
            let holds = "output chunk 0 holds no rank's data: it was written from a chunk nothing had written";
            assert!(what.text.contains(holds), "{what:?}");
            assert!(what.last_write.is_some(), "{what:?}");
        }
        other => panic!("{other:?}"),
    }
}

fn a_missing_nop_after_a_wait_is_a_race() {
    // Without `data_sync: after` the block's other threads may read the
    // peer's chunk before the wait has returned.
    let racy = two_rank_allreduce("sum", "sum").replace(
        "ch.wait(tb: 0, relaxed: true, data_sync: after)",
        "ch.wait(tb: 0, relaxed: true, data_sync: none)",
    );
    let report = simulate(&compile(&racy), 2);
    assert!(
        matches!(report.verdict, Verdict::Race(_)),
        "{:?}",
        report.verdict
    );
}

fn plans_relying_on_executor_bugs_get_warnings() {
    let dir = conformance();
    let all = plans(&dir);
    let warnings = |name: &str| {
        let (_, plan) = all.iter().find(|(n, _)| n == name).expect("plan present");
        simulate(plan, 2).warnings
    };
    // Port packets into a peer's scratch under a double scratch buffer.
    let w = warnings("default/allreduce_multi_nodes.n16g8.json");
    assert!(
        w.iter().any(|w| w.code == Code::ExecutorBug
            && w.message.starts_with("with a double scratch buffer")),
        "{w:?}"
    );
    // flush does nothing on today's executor.
    let w = warnings("unit/flush_test.json");
    assert!(
        w.iter()
            .any(|w| w.code == Code::ExecutorBug && w.message.contains("`flush`")),
        "{w:?}"
    );
    // No output chunks: the executor's size check divides by zero.
    let w = warnings("unit/put_test.json");
    assert!(
        w.iter().any(|w| w.code == Code::ExecutorBug
            && w.message
                .starts_with("the plan's input or output has no chunks")
            && w.message.contains("division by zero")),
        "{w:?}"
    );
    // A correct single-node plan relies on nothing.
    assert_eq!(warnings("single_node/allreduce.n8.json"), Vec::new());
}

/// Two puts fused whose sources lie in the input and the output: today's
/// executor reads both from the input's base (W0503); fused puts of one
/// buffer are fine.
fn a_fused_put_of_two_buffers_gets_a_warning() {
    for (second_source, warned) in [("r0.output[0]", true), ("r0.input[1]", false)] {
        let text = format!(
            "program \"f\" {{\n    collective = test_collective(2, input_size: 2, output_size: 2)\n}}\n\
             let r0 = rank(0)\nlet c = memory_channel(1, 0)\nlet b = memory_channel(0, 1)\n\
             r0.copy(r0.output[0], r0.input[0], tb: 0)\nb.signal(tb: 0, relaxed: true)\n\
             c.wait(tb: 0, relaxed: true)\nc.put(rank(1).output[0], r0.input[0], tb: 0)\n\
             c.put(rank(1).output[1], {second_source}, tb: 0)\nc.signal(tb: 0)\nb.wait(tb: 0)\n"
        );
        let w = simulate(&compile(&text), 2).warnings;
        let found = w.iter().any(|w| {
            w.code == Code::ExecutorBug
                && w.message
                    .starts_with("a fused put whose sources lie in different buffers")
        });
        assert_eq!(found, warned, "{second_source}: {w:?}");
    }
}

/// A thread block group splits an op's whole range, as the executor does:
/// in reduce_tbg, block 1 of a two-block group copies all of chunk 1 of a
/// two-chunk range, which the peer's block 0 then reads with nothing
/// ordering the two. Both accesses are named, at their program lines.
fn a_group_op_is_split_over_its_whole_range() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/mscclpp/executor_tests/reduce_tbg.mscl");
    let Ok(plan) = msclc::driver::compile(&path, &[]).result else {
        panic!("reduce_tbg compiles");
    };
    let Verdict::Race(race) = simulate(&plan, 2).verdict else {
        panic!("reduce_tbg races");
    };
    assert!(race.location.contains("scratch chunk"), "{race:?}");
    assert!(
        race.first.contains("write by copy") && race.first.contains("thread block 1"),
        "{race:?}"
    );
    assert!(
        race.second.contains("read by get") && race.second.contains("thread block 0"),
        "{race:?}"
    );
    assert!(
        race.ops
            .iter()
            .all(|o| o.as_ref().is_some_and(|o| o.span.is_some())),
        "{race:?}"
    );
}

/// The executor never resets a semaphore: a launch that acquires one more
/// often than it releases it verifies over two executions but hangs a few
/// launches later (the GPU stopped such a fuzzed plan at its fifth), and
/// one released more often lets later acquires pass early. A balanced
/// hand-off between two blocks gets no warning.
fn a_semaphore_a_launch_runs_down_is_reported() {
    let program = |ops: &str| {
        format!(
            "program \"p\" {{ collective = test_collective(1, input_size: 1, output_size: 1) }}\n\
             let s = semaphore(0, initial_value: 4)\n{ops}\n"
        )
    };
    let balance = |ops: &str| -> Vec<String> {
        let report = simulate(&compile(&program(ops)), 2);
        assert_eq!(report.verdict, Verdict::Verified, "{ops}");
        report
            .warnings
            .iter()
            .filter(|w| w.code == Code::SemaphoreBalance)
            .map(|w| w.message.clone())
            .collect()
    };
    let down = balance("s.acquire(tb: 0)\ns.acquire(tb: 1)");
    assert_eq!(down.len(), 1, "{down:?}");
    assert!(
        down[0].contains("semaphore 0 is acquired 2 more time(s) than released")
            && down[0].contains("from its initial value 4 it runs out after about 2 launch(es)"),
        "{down:?}"
    );
    let up = balance("s.release(tb: 0)");
    assert!(
        up.len() == 1 && up[0].contains("released 1 more time(s) than acquired"),
        "{up:?}"
    );
    assert_eq!(
        balance("s.release(tb: 0)\ns.acquire(tb: 1)"),
        Vec::<String>::new()
    );
}

/// Over a port channel, `put_packets` sends its source's bytes as they are
/// (the proxy copies them; a memory channel makes the packets): from
/// packets a `copy_packets` made it delivers, from the raw input it is a
/// deadlock at that op, with the hint, as the GPU stopped such a fuzzed
/// plan there while the simulator had called the plan merely wrong.
fn a_port_put_packets_sends_packets_already_made() {
    let program = |source: &str| {
        format!(
            r#"program "p" {{
    collective = test_collective(2, input_size: 1, output_size: 1)
    use_double_scratch_buffer = true
}}
let inbox = scratch(1, 1)
let staged = scratch(0, 1)
rank(0).copy_packets(staged[0], rank(0).input[0], tb: 0)
port_channel(1, 0).put_packets(inbox[0], {source}, tb: 0)
rank(1).unpack_packets(rank(1).output[0], inbox[0], tb: 0)
"#
        )
    };
    let made = simulate(&compile(&program("staged[0]")), 2);
    assert_eq!(made.verdict, Verdict::Verified);
    let raw = simulate(&compile(&program("rank(0).input[0]")), 2);
    let Verdict::Deadlock(stuck) = &raw.verdict else {
        panic!("{:?}", raw.verdict);
    };
    let text = format!("{stuck:?}");
    assert!(
        text.contains("ppkt") && text.contains("sends its source as packets already made"),
        "{text}"
    );
}

/// A pipeline's iterations cover `num_chunks` chunks of each op's range,
/// rounded up to whole units (the executor's offsets `i * unit_size`), so
/// an op of two chunks under `num_chunks: 1` leaves its second chunk
/// unmoved at sizes where a chunk holds a unit or more (and at no size
/// given), and the plan warns (W0509) before it runs; a
/// `num_chunks` past the op's range warns (W0511) and moves the range (as
/// msclc's kernel does; the executor overruns it).
fn a_pipeline_moves_the_chunks_its_num_chunks_covers() {
    let program = |num_chunks: u32, tbg: &str| {
        format!(
            r#"
program "p" {{ collective = allgather(1, chunk_factor: 2, inplace: false) }}
let r = rank(0)
pipeline(unit_size: 1024, num_chunks: {num_chunks}) {{
    r.copy(r.output[0..2], r.input[0..2], {tbg})
}}
"#
        )
    };
    let (one, group) = ("tb: 0", "tb_group: tb_group([0, 1])");
    // A packet op runs as meant, on each iteration's share of its whole
    // range (today's executor runs all of it every time: W0503), whatever
    // `num_chunks` says.
    let packets = "program \"p\" { collective = allgather(1, chunk_factor: 2, inplace: false)  protocol = LL }\n\
        let r = rank(0)\n\
        let s = scratch(0, 2)\n\
        pipeline(unit_size: 1024, num_chunks: 1) {\n\
        r.copy_packets(s[0..2], r.input[0..2], tb: 0)\n\
        r.unpack_packets(r.output[0..2], s[0..2], tb: 0)\n\
        }\n";
    let plan = compile(packets);
    let report = simulate(&plan, 2);
    assert_eq!(kind(&report.verdict), "verified", "{report:?}");
    let coverage = |w: &&msclc::diag::Diagnostic| {
        matches!(w.code, Code::PipelineCoverage | Code::PipelineOverrun)
    };
    assert!(!report.warnings.iter().any(|w| coverage(&w)));
    for (num_chunks, tbg, verified, warned) in [
        (2, one, true, None),
        (1, one, false, Some(Code::PipelineCoverage)),
        (4, one, true, Some(Code::PipelineOverrun)),
        (1, group, true, None),
        (2, group, true, Some(Code::PipelineOverrun)),
    ] {
        let text = program(num_chunks, tbg);
        let plan = compile(&text);
        let warnings =
            msclc::passes::warnings(&plan, msclc::passes::pairing::check(&plan).unwrap());
        let found: Vec<Code> = warnings.iter().filter(coverage).map(|w| w.code).collect();
        assert_eq!(
            found,
            Vec::from_iter(warned),
            "num_chunks {num_chunks}{tbg}: {warnings:?}"
        );
        // At chunks of 512 bytes, the one 1,024-byte unit the pipeline
        // runs covers both chunks.
        for (chunk, verified) in [
            (None, verified),
            (Some(1 << 20), verified),
            (Some(4096), verified),
            (Some(512), true),
        ] {
            let options = SimOptions {
                executions: 2,
                inplace: None,
                progress: false,
                pipeline_chunk: chunk,
            };
            let report = msclc::sim::simulate_with(&plan, &options);
            match (&report.verdict, verified) {
                (Verdict::Verified, true) => {}
                (Verdict::WrongResult(w), false) => {
                    assert!(
                        w.text.contains("output chunk 1") && w.text.contains("never written"),
                        "{}",
                        w.text
                    )
                }
                (v, _) => panic!("num_chunks {num_chunks}{tbg} at {chunk:?}: {}", kind(v)),
            }
            let found: Vec<Code> = report
                .warnings
                .iter()
                .filter(coverage)
                .map(|w| w.code)
                .collect();
            assert_eq!(found, Vec::from_iter(warned));
        }
    }
}
