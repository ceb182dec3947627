//! The generated CUDA, executed: examples are turned into CUDA source,
//! compiled as plain C++ (the prelude's host branch: every thread of every
//! block a host thread) and launched twice back to back on the CPU; every
//! rank's result must match the collective's definition. This runs the
//! very code `msclc run` hands to NVRTC, on machines with no GPU: plainly,
//! and under ThreadSanitizer, which sees every unsynchronized pair of
//! accesses the plan leaves, between blocks and ranks and between the
//! threads of one block. Needs a C++17 compiler (`c++`, with
//! `-fsanitize=thread` for the race test); without one the tests are
//! reported ignored, with the reason.

mod common;
#[path = "cuda_host/fuzzing.rs"]
mod fuzzing;
#[path = "cuda_host/kernel.rs"]
mod kernel;

use common::{Example, Needs};
use kernel::*;
use msclc::back::cuda::{self, report::GaveUp, SyncLayout};
use msclc::ir::{Dtype, OpName, Plan};
use msclc::measure::workload::{Found, Workload};
use msclc::sim::Verdict;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// Generous: a correct plan never waits this long on the CPU, even under
/// ThreadSanitizer on a loaded machine (20 s was seen to run out there); the
/// deadlock test sets its own.
const BUDGET_NS: u64 = 120_000_000_000;

fn main() {
    common::run(vec![
        common::test(
            "examples_compute_on_cpu_threads_as_the_simulator_says",
            Needs::Cxx,
            examples_compute_on_cpu_threads_as_the_simulator_says,
        ),
        common::test(
            "fuzzed_programs_compute_on_cpu_threads_as_the_simulator_says",
            Needs::Cxx,
            fuzzing::fuzzed_programs_compute_on_cpu_threads_as_the_simulator_says,
        ),
        common::test(
            "verified_fuzzed_programs_are_race_free_under_thread_sanitizer",
            Needs::CxxTsan,
            fuzzing::verified_fuzzed_programs_are_race_free_under_thread_sanitizer,
        ),
        common::test(
            "verified_examples_are_race_free_under_thread_sanitizer_but_the_known_plan_races",
            Needs::CxxTsan,
            verified_examples_are_race_free_under_thread_sanitizer_but_the_known_plan_races,
        ),
        common::test(
            "a_deadlocking_plan_stops_with_a_report_not_a_hang",
            Needs::Cxx,
            a_deadlocking_plan_stops_with_a_report_not_a_hang,
        ),
        common::test(
            "a_plan_that_hangs_in_a_later_launch_is_explained_by_the_simulator_run_as_long",
            Needs::Cxx,
            a_plan_that_hangs_in_a_later_launch_is_explained_by_the_simulator_run_as_long,
        ),
        common::test(
            "parameters_past_16_bits_compute_right",
            Needs::Cxx,
            parameters_past_16_bits_compute_right,
        ),
        common::test(
            "odd_alignments_and_unit_sizes_compute_right",
            Needs::Cxx,
            odd_alignments_and_unit_sizes_compute_right,
        ),
        common::test(
            "a_sendrecv_is_checked_with_the_pairing_of_its_plan",
            Needs::Cxx,
            a_sendrecv_is_checked_with_the_pairing_of_its_plan,
        ),
        common::test(
            "inputs_and_checks_run_as_kernels",
            Needs::Cxx,
            inputs_and_checks_run_as_kernels,
        ),
        common::test(
            "reductions_by_min_and_max_compute_as_their_ops_say",
            Needs::Cxx,
            reductions_by_min_and_max_compute_as_their_ops_say,
        ),
        common::test(
            "a_pipeline_moves_what_its_num_chunks_covers_as_the_simulator_says",
            Needs::Cxx,
            a_pipeline_moves_what_its_num_chunks_covers_as_the_simulator_says,
        ),
        common::test(
            "user_text_in_the_generated_source_stays_text",
            Needs::Cxx,
            user_text_in_the_generated_source_stays_text,
        ),
        common::test(
            "the_host_branch_compiles_without_warnings",
            Needs::Cxx,
            the_host_branch_compiles_without_warnings,
        ),
    ]);
}

/// The C++ compiler, found (`Needs::Cxx`).
fn plain_compiler() -> String {
    common::cxx_compiler(false).expect("a C++ compiler")
}

/// `msclc run` makes inputs and checks outputs with kernels of the prelude
/// (only counts come back from the GPU). Here they run on CPU threads, for
/// every element type, on an in-place AllReduce and an out-of-place
/// AllGather: the outputs of the plan are right by the check kernel and by
/// the runner's host check of the same bytes (so the kernel made the
/// inputs the host expects), and one element spoilt after the run is found
/// by both, at its rank and position.
fn inputs_and_checks_run_as_kernels() {
    let cxx = plain_compiler();
    for example in [
        "examples/mscclpp/single_node/allreduce_pkt.mscl",
        "examples/mscclpp/multi_node/allgather_tbg.mscl",
    ] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(example);
        let plan = msclc::driver::compile(&path, &[]).result.expect("compiles");
        let ranks = plan.ranks.len();
        for dtype in [Dtype::Float32, Dtype::Float16, Dtype::Bfloat16] {
            let dir = common::scratch(&format!("checks-{}-{}", plan.name, dtype.nccl_name()));
            let kernel = HostKernel::build_for(&cxx, &plan, &dir, false, dtype);
            let size = small_size(&plan);
            let (found, host) = kernel.run_checked(size, dtype, None);
            assert_eq!(found.total(), 0, "{example} {dtype:?}: {found:?}");
            assert_eq!(host, vec![0; ranks], "{example} {dtype:?}");
            let spoilt = (1, 3);
            let (found, host) = kernel.run_checked(size, dtype, Some(spoilt));
            let mut one = vec![0; ranks];
            one[1] = 1;
            assert_eq!(found.per_rank, one, "{example} {dtype:?}");
            assert_eq!(found.first, vec![spoilt], "{example} {dtype:?}");
            assert_eq!(host, one, "{example} {dtype:?}: the host check disagrees");
        }
    }
}

/// An op's `reduce_op` decides what its kernel computes, as the simulator
/// takes it (today's executor always sums: W0503): the AllReduces of two
/// examples, reading peers' buffers and reducing packets, with every
/// reduction made a min, then a max, compute that in every element type,
/// by the check kernel and by the runner's host check, and `msclc sim`
/// verifies the same plans. (The kernels once summed whatever an op said:
/// a fuzzed plan on an H200 came out wrong where the simulator verified.)
fn reductions_by_min_and_max_compute_as_their_ops_say() {
    use msclc::ir::ReduceOp;
    let cxx = plain_compiler();
    for example in [
        "examples/mscclpp/single_node/allreduce.mscl",
        "examples/mscclpp/single_node/allreduce_pkt.mscl",
    ] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(example);
        for reduce_op in [ReduceOp::Min, ReduceOp::Max] {
            let defines = [("num_gpus".to_string(), "4".to_string())];
            let mut plan = msclc::driver::compile(&path, &defines)
                .result
                .expect("compiles");
            let mut reductions = 0;
            for tb in plan.ranks.iter_mut().flat_map(|r| &mut r.threadblocks) {
                for op in tb.ops.iter_mut().filter(|op| op.reduce_op.is_some()) {
                    op.reduce_op = Some(reduce_op);
                    reductions += 1;
                }
            }
            assert!(reductions > 0, "{example} reduces");
            let verdict = msclc::sim::simulate(&plan, 2).verdict;
            assert_eq!(verdict, Verdict::Verified, "{example} by {reduce_op:?}");
            for dtype in [Dtype::Float32, Dtype::Float16, Dtype::Bfloat16] {
                let dir = common::scratch(&format!(
                    "reduce-op-{}-{}-{}",
                    plan.name,
                    reduce_op.name(),
                    dtype.nccl_name()
                ));
                let kernel = HostKernel::build_for(&cxx, &plan, &dir, false, dtype);
                let (found, host) = kernel.run_checked(small_size(&plan), dtype, None);
                let what = format!("{example} by {reduce_op:?} in {dtype:?}");
                assert_eq!(found.total(), 0, "{what}: {found:?}");
                assert_eq!(host, vec![0; plan.ranks.len()], "{what}: the host check");
            }
        }
    }
}

fn compile(path: &Path) -> (Plan, msclc::diag::SourceMap) {
    let compiled = msclc::driver::compile(path, &[]);
    match compiled.result {
        Ok(plan) => (plan, compiled.sources),
        Err(_) => panic!("{} does not compile", path.display()),
    }
}

/// Runs `each` over `items` on two threads (this machine's cores); the
/// failures it returns, together. (Plans are not `Sync`: each is made
/// inside its thread.)
fn on_two_threads<T: Sync>(items: &[T], each: impl Fn(&T) -> Vec<String> + Sync) -> Vec<String> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                while let Some(item) =
                    items.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
                {
                    let found = each(item);
                    failures.lock().unwrap().extend(found);
                }
            });
        }
    });
    failures.into_inner().unwrap()
}

fn temp_dir(what: &str) -> common::Scratch {
    common::scratch(&format!("cuda-host-{what}"))
}

/// A deadlocked plan's spins give up after this long (no correct plan
/// waits near it on the CPU, see `BUDGET_NS`; a deadlock waits forever).
const DEADLOCK_BUDGET_NS: u64 = 2_000_000_000;

/// `example` built and run twice on CPU threads: how it disagrees with
/// what the simulator says of it, if it does. What the simulator verifies
/// must compute right; a wrong result or deadlock it reports must happen
/// there too.
fn disagreement(cxx: &str, example: &Example, dir: &Path) -> Option<String> {
    let plan = &example.plan;
    let kernel = HostKernel::build(cxx, plan, dir, false);
    let budget = match example.verdict {
        Verdict::Deadlock(_) => DEADLOCK_BUDGET_NS,
        _ => BUDGET_NS,
    };
    let outcome = kernel.run(small_size(plan), 2, budget);
    let wrong = outcome.wrong.iter().any(|w| *w > 0);
    let stopped = outcome.gave_up.is_some();
    let right = !stopped && !wrong;
    let agrees = |verdict: &Verdict| match verdict {
        Verdict::Verified => right,
        // The simulator stops at the first execution it finds wrong; a
        // plan may also hang in the launch after it (a semaphore run down).
        Verdict::WrongResult(_) => {
            (!stopped && wrong) || outcome.gave_up.as_ref().is_some_and(|g| g.launch >= 2)
        }
        Verdict::Deadlock(_) => stopped,
        // The races the simulator finds in the examples are against the
        // user's accesses around the kernel, which the host driver
        // orders by joining the kernel's threads: the result is right.
        // A race between blocks depends on timing.
        Verdict::Race(_) => right || example.races_between_blocks(),
    };
    if agrees(&example.verdict) {
        return None;
    }
    // The simulator runs every pipeline twice, whatever the size; the
    // executor as often as its chunks take units, once at this small
    // size: a semaphore a pipeline's every iteration acquires may run out
    // in the simulator's second launch and not here.
    let at_size = msclc::sim::simulate_with(
        plan,
        &msclc::sim::SimOptions {
            executions: 2,
            inplace: None,
            progress: false,
            pipeline_chunk: Some(outcome.chunk),
        },
    );
    if agrees(&at_size.verdict) {
        return None;
    }
    let host = match (&outcome.gave_up, wrong) {
        (Some(g), _) => format!("stopped: {g}"),
        (None, true) => format!("wrong elements per rank {:?}", outcome.wrong),
        (None, false) => "right".to_string(),
    };
    Some(format!(
        "{}: {host} on CPU threads, but msclc sim says {}",
        example.name, example.sim
    ))
}

/// The simulator and the generated CUDA agree on every example that
/// defines a result: what the simulator verifies computes right on CPU
/// threads; what computes wrong (or stops) there, the simulator reports;
/// a wrong result or deadlock it reports happens there too.
fn examples_compute_on_cpu_threads_as_the_simulator_says() {
    let cxx = plain_compiler();
    let tmp = temp_dir("plain");
    let ran = std::sync::atomic::AtomicUsize::new(0);
    let failures = on_two_threads(&common::example_files(), |path| {
        let Some(example) = Example::load(path).filter(|e| e.checkable) else {
            return vec![];
        };
        ran.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        disagreement(&cxx, &example, &tmp.join(&example.name))
            .into_iter()
            .collect()
    });
    let ran = ran.into_inner();
    eprintln!("ran {ran} examples");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(ran >= 35, "only {ran} examples ran");
}

/// `example` built with ThreadSanitizer and run twice: what is wrong with
/// that run. A race is wrong unless `PLAN_RACES` expects it (and then its
/// absence is); so are a stop and, without a race, a wrong result.
fn thread_sanitizer_findings(cxx: &str, example: &Example, dir: &Path) -> Vec<String> {
    let (name, plan) = (&example.name, &example.plan);
    let kernel = HostKernel::build(cxx, plan, dir, true);
    let outcome = kernel.run(small_size(plan), 2, BUDGET_NS);
    let expected = common::PLAN_RACES.iter().find(|(n, _)| n == name);
    let mut failures = Vec::new();
    if let Some(g) = &outcome.gave_up {
        failures.push(format!("{name}: gave up: {g}"));
    }
    match (expected, outcome.races.is_empty()) {
        (None, false) => failures.push(format!(
            "{name}: ThreadSanitizer reports a race:\n{}",
            outcome.races
        )),
        (Some((_, why)), true) => failures.push(format!(
            "{name}: ThreadSanitizer no longer reports the plan's race ({why})"
        )),
        (Some((_, why)), false) => eprintln!("{name}: races, as expected: {why}"),
        (None, true) if outcome.wrong.iter().any(|w| *w > 0) => failures.push(format!(
            "{name}: wrong elements per rank {:?}",
            outcome.wrong
        )),
        (None, true) => {}
    }
    failures
}

fn verified_examples_are_race_free_under_thread_sanitizer_but_the_known_plan_races() {
    let cxx = common::cxx_compiler(true).expect("a C++ compiler with ThreadSanitizer");
    let tmp = temp_dir("tsan");
    let failures = on_two_threads(&common::example_files(), |path| {
        let Some(example) = Example::load(path).filter(|e| e.checkable && e.for_thread_sanitizer())
        else {
            return vec![];
        };
        thread_sanitizer_findings(&cxx, &example, &tmp.join(&example.name))
    });
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A plan that waits for a signal nobody sends ends with the report of
/// who waited for what, at the program line, instead of hanging.
fn a_deadlocking_plan_stops_with_a_report_not_a_hang() {
    let cxx = plain_compiler();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/simple_allgather.mscl");
    let (mut plan, sources) = compile(&path);
    // Rank 1 never signals: rank 0's waits starve.
    for tb in &mut plan.ranks[1].threadblocks {
        tb.ops
            .retain(|op| !matches!(op.name, OpName::Signal | OpName::RelaxedSignal));
    }
    let tmp = temp_dir("deadlock");
    let kernel = HostKernel::build(&cxx, &plan, &tmp, false);
    let started = std::time::Instant::now();
    let outcome = kernel.run(small_size(&plan), 2, 200_000_000);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "took {:?}",
        started.elapsed()
    );
    let gave_up = outcome.gave_up.expect("a spin gave up and said so");
    // Rank 0 starves first; rank 1's second wait, for the signal rank 0
    // sends after its own wait, starves too: whichever spin runs out first
    // reports.
    let op = &plan.ranks[gave_up.rank as usize].threadblocks[gave_up.tb as usize].ops[gave_up.op];
    assert!(
        matches!(op.name, OpName::Wait | OpName::RelaxedWait),
        "{gave_up}"
    );
    let text = gave_up.to_string();
    let peer = 1 - gave_up.rank;
    assert!(
        text.contains(&format!("memory channel from rank {peer}"))
            && text.contains("no progress in 200 ms"),
        "{text}"
    );
    // The program line of the wait.
    let span = gave_up.span.expect("the op has its program line");
    let rendered = sources.render(&[msclc::diag::Diagnostic::error(
        msclc::diag::Code::KernelStuck,
        span,
        "waited",
        "here",
    )]);
    assert!(rendered.contains(".wait("), "{rendered}");
}

/// Semaphores carry over from launch to launch: one acquired and never
/// released, from initial value 2, lets two launches through and stops the
/// third. The report says which launch stopped, and the simulator run for
/// that many launches deadlocks there too (`msclc run` prints what it says);
/// past the launches it simulates, it warns that the semaphore runs out.
fn a_plan_that_hangs_in_a_later_launch_is_explained_by_the_simulator_run_as_long() {
    let cxx = plain_compiler();
    // The quick start's AllGather, and a semaphore on rank 0.
    let quick_start = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/simple_allgather.mscl");
    let text = std::fs::read_to_string(quick_start).expect("the quick start")
        + "semaphore(0, initial_value: 2).acquire(tb: 0)\n";
    let line = text.lines().count();
    let compiled = msclc::driver::compile_source(Path::new("sem.mscl"), text.clone(), &[]);
    let plan = compiled.result.expect("compiles");
    let tmp = temp_dir("later-launch");
    let kernel = HostKernel::build(&cxx, &plan, &tmp, false);
    let outcome = kernel.run(small_size(&plan), 3, 200_000_000);
    let gave_up = outcome.gave_up.expect("the third launch stops");
    assert_eq!(gave_up.launch, 3, "{gave_up}");
    assert!(
        gave_up.what.starts_with("sem_acquire on semaphore 0"),
        "{gave_up}"
    );
    let explained = msclc::runner::explain_stuck(&plan, Some(&compiled.sources), gave_up.launch);
    assert!(
        explained.starts_with("msclc sim --executions 3 finds the plan at fault: deadlock"),
        "{explained}"
    );
    assert!(
        explained.contains(&format!("sem.mscl:{line}:1")),
        "{explained}"
    );
    // One that lasts 100 launches stops in the 101st, past the 64 the
    // simulator runs: it verifies those, and warns that the semaphore runs out.
    let lasting = text.replace("initial_value: 2", "initial_value: 100");
    let compiled = msclc::driver::compile_source(Path::new("sem.mscl"), lasting, &[]);
    let plan = compiled.result.expect("compiles");
    let warned = msclc::runner::explain_stuck(&plan, Some(&compiled.sources), 101);
    assert!(
        warned.starts_with("msclc sim --executions 64 verifies the first 64 launches back to back")
            && warned.contains("the kernel stopped in launch 101, past those, and it warns:")
            && warned.contains(
                "warning[W0506]: rank 0's semaphore 0 is acquired 1 more time(s) than released in each launch"
            )
            && warned.contains("runs out after about 100 launch(es)"),
        "{warned}"
    );
}

/// A SendRecv in which each rank receives from rank - 4 (two groups of
/// four): checked with that pairing, the one the simulator finds, not with
/// rank - 1.
fn a_sendrecv_is_checked_with_the_pairing_of_its_plan() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/mscclpp/multi_node/send_recv.mscl");
    let defines = [("split_mask".to_string(), "3".to_string())];
    let plan = msclc::driver::compile(&path, &defines)
        .result
        .expect("send_recv compiles with split_mask 3");
    let senders = msclc::measure::workload::sendrecv_senders(&plan);
    let want: Vec<u32> = (0..8).map(|r| (r + 4) % 8).collect();
    assert_eq!(senders, Some(want));
    let tmp = temp_dir("sendrecv");
    let kernel = HostKernel::build(&plain_compiler(), &plan, &tmp, false);
    let outcome = kernel.run(small_size(&plan), 2, BUDGET_NS);
    assert!(outcome.gave_up.is_none(), "{:?}", outcome.gave_up);
    assert_eq!(outcome.wrong, vec![0; 8]);
}

/// Every alignment the plan allows: thread block group parts at 4-byte
/// boundaries, pipeline units that are not multiples of 16.
fn odd_alignments_and_unit_sizes_compute_right() {
    let cxx = plain_compiler();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/mscclpp");
    // (what, file, buffer alignment, pipeline unit, chunk bytes)
    let cases = [
        (
            "allgather_tbg",
            "single_node/allgather_tbg.mscl",
            4,
            None,
            48,
        ),
        (
            "tbg_reduce_test",
            "unit_tests/tbg/tbg_reduce_test.mscl",
            4,
            None,
            48,
        ),
        (
            "allreduce_pipeline_20",
            "single_node/allreduce_pipeline.mscl",
            16,
            Some(20),
            112,
        ),
        (
            "allreduce_pipeline_24",
            "single_node/allreduce_pipeline.mscl",
            16,
            Some(24),
            112,
        ),
        (
            "allreduce_pipeline_40",
            "single_node/allreduce_pipeline.mscl",
            16,
            Some(40),
            112,
        ),
    ];
    let tmp = temp_dir("align");
    let failures = on_two_threads(&cases, |(what, file, alignment, unit, chunk)| {
        let (mut plan, _) = compile(&root.join(file));
        // With 48-byte chunks a two-block group's second part starts at +24.
        plan.options.buffer_alignment = *alignment;
        if let Some(unit) = unit {
            set_unit_size(&mut plan, *unit);
        }
        let chunks = plan.ranks[0].input_chunks.max(plan.ranks[0].output_chunks) as u64;
        let kernel = HostKernel::build(&cxx, &plan, &tmp.join(what), false);
        let outcome = kernel.run(chunk * chunks, 2, BUDGET_NS);
        match (&outcome.gave_up, outcome.wrong.iter().any(|w| *w > 0)) {
            (Some(g), _) => vec![format!("{what}: gave up: {g}")],
            (None, true) => vec![format!("{what}: wrong elements {:?}", outcome.wrong)],
            _ => vec![],
        }
    });
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn set_unit_size(plan: &mut Plan, unit: u64) {
    let mut found = false;
    for rank in &mut plan.ranks {
        for tb in &mut rank.threadblocks {
            for op in &mut tb.ops {
                if let Some(iter) = op.extra_if_any_mut().and_then(|e| e.iter.as_mut()) {
                    iter.unit_size = unit;
                    found = true;
                }
            }
        }
    }
    assert!(found, "the plan has a pipeline");
}

/// The parameter table is stored in the narrowest type that holds its
/// entries: a plan whose puts move 70,000 chunks has a table of 4-byte
/// entries, read back whole (no 2-byte entry holds 70,000).
fn parameters_past_16_bits_compute_right() {
    let cxx = plain_compiler();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cuda_host/wide_params.mscl");
    let (plan, _) = compile(&path);
    let source = cuda::generate(&plan).expect("a CUDA form");
    assert!(source.contains("#define MSCL_PARAM u32\n"), "{source}");
    let tmp = temp_dir("wide");
    let outcome = HostKernel::build(&cxx, &plan, &tmp, false).run(small_size(&plan), 2, BUDGET_NS);
    assert!(outcome.gave_up.is_none(), "{:?}", outcome.gave_up);
    assert!(
        outcome.wrong.iter().all(|w| *w == 0),
        "wrong elements {:?}",
        outcome.wrong
    );
}

/// A pipeline's iterations cover its `num_chunks` chunks of each op's
/// range, rounded up to whole units: under `num_chunks: 1` and units
/// smaller than a chunk, a copy of two chunks leaves the second unmoved
/// on CPU threads, as the simulator says at any size and at this one
/// (under `num_chunks: 2`, both are moved).
fn a_pipeline_moves_what_its_num_chunks_covers_as_the_simulator_says() {
    let cxx = plain_compiler();
    let tmp = temp_dir("pipeline_cover");
    for (num_chunks, verified) in [(1, false), (2, true)] {
        let path = tmp.join(format!("cover{num_chunks}.mscl"));
        let program = format!(
            "program \"p\" {{ collective = allgather(1, chunk_factor: 2, inplace: false) }}\n\
             let r = rank(0)\n\
             pipeline(unit_size: 16, num_chunks: {num_chunks}) {{\n\
             r.copy(r.output[0..2], r.input[0..2], tb: 0)\n\
             }}\n"
        );
        std::fs::write(&path, program).unwrap();
        let plan = msclc::driver::compile(&path, &[]).result.expect("compiles");
        let kernel = HostKernel::build(&cxx, &plan, &tmp.join(format!("k{num_chunks}")), false);
        let outcome = kernel.run(small_size(&plan), 2, BUDGET_NS);
        assert!(outcome.gave_up.is_none(), "{:?}", outcome.gave_up);
        assert_eq!(
            outcome.wrong.iter().all(|w| *w == 0),
            verified,
            "{:?}",
            outcome.wrong
        );
        for chunk in [None, Some(outcome.chunk)] {
            let options = msclc::sim::SimOptions {
                executions: 2,
                inplace: None,
                progress: false,
                pipeline_chunk: chunk,
            };
            let verdict = msclc::sim::simulate_with(&plan, &options).verdict;
            assert_eq!(
                verdict == Verdict::Verified,
                verified,
                "{verdict:?} at {chunk:?}"
            );
        }
    }
}

/// A plan name is user text: it must not reach the generated source as
/// code (here a line that would stop every compilation).
fn user_text_in_the_generated_source_stays_text() {
    let cxx = plain_compiler();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/simple_allgather.mscl");
    let (mut plan, _) = compile(&path);
    plan.name = "a\n#error boom\\\n#error boom2 \u{2028} */".into();
    let tmp = temp_dir("escape");
    let outcome = HostKernel::build(&cxx, &plan, &tmp, false).run(small_size(&plan), 1, BUDGET_NS);
    assert!(outcome.gave_up.is_none() && outcome.wrong.iter().all(|w| *w == 0));
}

/// Whoever builds the generated source as C++ (the host branch) with the
/// compiler's warnings on, and as errors, gets none: not of the prelude
/// (a barrier the compiler cannot prove set, CUDA's unroll pragma), nor of
/// the plan's code, for a plan of each kind of op.
fn the_host_branch_compiles_without_warnings() {
    let cxx = plain_compiler();
    let tmp = temp_dir("warnings");
    for (example, defines) in [
        ("examples/simple_allgather.mscl", &[("num_gpus", "16")][..]),
        ("examples/mscclpp/single_node/allreduce_pkt.mscl", &[]),
        (
            "examples/mscclpp/single_node/alltoall/alltoall_ring.mscl",
            &[],
        ),
        ("examples/mscclpp/multi_node/allgather_tbg.mscl", &[]),
        ("examples/allreduce_nvls.mscl", &[]),
    ] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(example);
        let defines: Vec<(String, String)> = defines
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let plan = msclc::driver::compile(&path, &defines)
            .result
            .expect("compiles");
        let source = tmp.join("kernel.cu");
        std::fs::write(
            &source,
            msclc::back::cuda::generate(&plan).expect("generates"),
        )
        .unwrap();
        let out = std::process::Command::new(&cxx)
            .args([
                "-std=c++17",
                "-Wall",
                "-Wextra",
                "-Werror",
                "-fsyntax-only",
                "-x",
                "c++",
            ])
            .arg(&source)
            .output()
            .expect("runs the C++ compiler");
        assert!(
            out.status.success(),
            "{example}:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
