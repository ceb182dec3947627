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

use common::{Example, Needs};
use msclc::back::cuda::{self, report::GaveUp, SyncLayout};
use msclc::ir::{Dtype, OpName, Plan};
use msclc::measure::workload::{Found, Workload};
use msclc::sim::Verdict;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

const DRIVER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cuda_host/driver.cpp");

/// Threads per host block: more than one, so that a missing `nop` between
/// two ops of a block is a race between threads.
const WIDTH: u64 = 2;

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
            fuzzed_programs_compute_on_cpu_threads_as_the_simulator_says,
        ),
        common::test(
            "verified_fuzzed_programs_are_race_free_under_thread_sanitizer",
            Needs::CxxTsan,
            verified_fuzzed_programs_are_race_free_under_thread_sanitizer,
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
            "user_text_in_the_generated_source_stays_text",
            Needs::Cxx,
            user_text_in_the_generated_source_stays_text,
        ),
    ]);
}

/// The C++ compiler, found (`Needs::Cxx`).
fn plain_compiler() -> String {
    common::cxx_compiler(false).expect("a C++ compiler")
}

/// A plan's kernel built as a host program.
struct HostKernel<'p> {
    plan: &'p Plan,
    exe: PathBuf,
    dir: PathBuf,
}

/// What one run of a host kernel did.
struct Outcome {
    /// Wrong elements per rank after the last launch.
    wrong: Vec<u64>,
    /// The spin that gave up, if one did.
    gave_up: Option<GaveUp>,
    /// ThreadSanitizer's reports (empty without it).
    races: String,
}

impl<'p> HostKernel<'p> {
    fn build(cxx: &str, plan: &'p Plan, dir: &Path, sanitize: bool) -> HostKernel<'p> {
        HostKernel::build_for(cxx, plan, dir, sanitize, Dtype::Float32)
    }

    /// Built for `dtype` (the define NVRTC gets).
    fn build_for(
        cxx: &str,
        plan: &'p Plan,
        dir: &Path,
        sanitize: bool,
        dtype: Dtype,
    ) -> HostKernel<'p> {
        std::fs::create_dir_all(dir).unwrap();
        let source = dir.join("kernel.cu");
        std::fs::write(&source, cuda::generate(plan).expect("generates")).unwrap();
        let exe = dir.join("driver");
        let mut cmd = Command::new(cxx);
        cmd.args(["-std=c++17", "-O1", "-pthread", "-w"]);
        if sanitize {
            cmd.args(["-fsanitize=thread", "-g"]);
        }
        let out = cmd
            .args(["-x", "c++", "-include"])
            .arg(&source)
            .arg(cuda::dtype_define(dtype))
            .arg(DRIVER)
            .arg("-o")
            .arg(&exe)
            .output()
            .expect("runs the C++ compiler");
        assert!(
            out.status.success(),
            "{cxx} rejects the generated source of {}:\n{}",
            plan.name,
            String::from_utf8_lossy(&out.stderr)
        );
        HostKernel {
            plan,
            exe,
            dir: dir.to_path_buf(),
        }
    }

    /// `launches` launches at `size` bytes with `budget_ns` per spin.
    fn run(&self, size: u64, launches: u64, budget_ns: u64) -> Outcome {
        let plan = self.plan;
        let senders = msclc::measure::workload::sendrecv_senders(plan);
        let w = Workload::new(plan, Dtype::Float32, size, senders.as_deref())
            .expect("size fits the plan");
        let layout = SyncLayout::new(plan);
        let mut input = driver_header(&w, &layout, launches, budget_ns);
        let put = |input: &mut Vec<u8>, v: u64| input.extend_from_slice(&v.to_le_bytes());
        let seed = 7;
        for (r, b) in w.ranks.iter().enumerate() {
            for v in [b.user_bytes, b.input_offset, b.output_offset, w.input_bytes] {
                put(&mut input, v);
            }
            input.extend_from_slice(&w.input(r as u32, seed));
        }
        put(&mut input, 0); // inputs given, no check on the "GPU"
        let (fin, fout) = (self.dir.join("in.bin"), self.dir.join("out.bin"));
        std::fs::write(&fin, &input).unwrap();
        let out = Command::new(&self.exe)
            .arg(&fin)
            .arg(&fout)
            .env("TSAN_OPTIONS", "exitcode=0 report_signal_unsafe=0")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(
            out.status.success(),
            "{}: driver failed: {stderr}",
            plan.name
        );
        let result = std::fs::read(&fout).unwrap_or_else(|e| {
            panic!("{}: the driver wrote no output ({e}): {stderr}", plan.name)
        });
        let (wrong, rest) = wrong_per_rank(&w, &result, seed);
        let wrong = wrong.into_iter().map(|n| n.unwrap_or(0)).collect();
        let sync = words_of(rest);
        Outcome {
            wrong,
            gave_up: cuda::report::read(plan, &layout, &sync, budget_ns / 1_000_000),
            races: stderr
                .split("==================")
                .filter(|r| r.contains("ThreadSanitizer"))
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }
}

impl HostKernel<'_> {
    /// Two launches at `size` with inputs made and outputs checked by the
    /// prelude's fill and check (`msclc run`'s kernels), after spoiling
    /// one output element where asked: what the check found, and what the
    /// runner's host check (`Workload::wrong_elements`) finds per rank in
    /// the same outputs.
    fn run_checked(&self, size: u64, dtype: Dtype, spoil: Option<(u32, u64)>) -> (Found, Vec<u64>) {
        let plan = self.plan;
        let w = Workload::new(plan, dtype, size, None).expect("size fits the plan");
        let layout = SyncLayout::new(plan);
        let mut input = driver_header(&w, &layout, 2, BUDGET_NS);
        let put = |input: &mut Vec<u8>, v: u64| input.extend_from_slice(&v.to_le_bytes());
        for b in &w.ranks {
            for v in [b.user_bytes, b.input_offset, b.output_offset, 0] {
                put(&mut input, v);
            }
        }
        let seed = 7;
        let entries = w.check_entries().expect("a collective with a result");
        for v in [
            u64::from(seed),
            w.chunk_elements(),
            w.input_elements(),
            entries.len() as u64 / 4,
        ] {
            put(&mut input, v);
        }
        entries.iter().for_each(|&e| put(&mut input, u64::from(e)));
        let (rank, element) = spoil.map_or((u64::MAX, 0), |(r, e)| (u64::from(r), e));
        put(&mut input, rank);
        put(&mut input, element);
        let (fin, fout) = (self.dir.join("in.bin"), self.dir.join("out.bin"));
        std::fs::write(&fin, &input).unwrap();
        let out = Command::new(&self.exe)
            .arg(&fin)
            .arg(&fout)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}: driver failed: {}",
            plan.name,
            String::from_utf8_lossy(&out.stderr)
        );
        let result = std::fs::read(&fout).unwrap();
        let (host_check, rest) = wrong_per_rank(&w, &result, seed);
        let host_check = host_check
            .into_iter()
            .map(|n| n.expect("a result"))
            .collect();
        let found = words_of(&rest[8 * layout.initial_words().len()..]);
        assert_eq!(found.len(), Found::words(plan.ranks.len()));
        (Found::read(&found, plan.ranks.len()), host_check)
    }
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
            let dir = std::env::temp_dir().join(format!(
                "msclc-checks-{}-{}-{}",
                std::process::id(),
                plan.name,
                dtype.nccl_name()
            ));
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
            std::fs::remove_dir_all(&dir).ok();
        }
    }
}

/// The driver's input up to the ranks (tests/cuda_host/driver.cpp): the
/// workload's sizes, `launches` and the spin budget, the sync words.
fn driver_header(w: &Workload, layout: &SyncLayout, launches: u64, budget_ns: u64) -> Vec<u8> {
    let words = layout.initial_words();
    let mut input = Vec::new();
    let header = [
        w.ranks.len() as u64,
        w.chunk,
        w.scratch_bytes,
        w.scratch_half,
        launches,
        WIDTH,
        budget_ns,
        words.len() as u64,
    ];
    for v in header.iter().chain(&words) {
        input.extend_from_slice(&v.to_le_bytes());
    }
    input
}

/// The wrong elements of each rank's user allocation at the start of the
/// driver's output (the runner's host check), and the output after them.
fn wrong_per_rank<'a>(w: &Workload, result: &'a [u8], seed: u32) -> (Vec<Option<u64>>, &'a [u8]) {
    let mut at = 0;
    let wrong = w
        .ranks
        .iter()
        .enumerate()
        .map(|(r, b)| {
            let user = &result[at..at + b.user_bytes as usize];
            at += b.user_bytes as usize;
            w.wrong_elements(r as u32, user, seed)
        })
        .collect();
    (wrong, &result[at..])
}

/// Little-endian u64 words.
fn words_of(bytes: &[u8]) -> Vec<u64> {
    bytes
        .chunks_exact(8)
        .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
        .collect()
}

/// Small enough for CPU threads: two chunks' worth of 16-byte units.
fn small_size(plan: &Plan) -> u64 {
    let chunks = plan.ranks[0].input_chunks.max(plan.ranks[0].output_chunks) as u64;
    (chunks * 64).max(plan.options.min_message_size.next_multiple_of(chunks * 16))
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

fn temp_dir(what: &str) -> PathBuf {
    std::env::temp_dir().join(format!("msclc-cuda-host-{what}-{}", std::process::id()))
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
    let size = small_size(plan);
    let outcome = kernel.run(size, 2, budget);
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
    let senders = msclc::measure::workload::sendrecv_senders(plan);
    let w = Workload::new(plan, Dtype::Float32, size, senders.as_deref()).expect("runs");
    let at_size = msclc::sim::simulate_with(
        plan,
        &msclc::sim::SimOptions {
            executions: 2,
            inplace: None,
            progress: false,
            pipeline_chunk: Some(w.chunk),
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
    let _ = std::fs::remove_dir_all(&tmp);
    let ran = ran.into_inner();
    eprintln!("ran {ran} examples");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(ran >= 35, "only {ran} examples ran");
}

/// Programs the fuzzer made (tests/fuzz) and `benches/gpu_fuzz.py
/// prepare` kept, where `msclc sim` verifies them or finds them wrong or
/// deadlocked, run as the examples are: their generated CUDA computes on
/// CPU threads as the simulator says. The fuzzer reaches ops, sizes and
/// shapes no example has. tests/cuda_host/fuzzed holds a few, listed in its
/// `cases.json`; `MSCLC_HOST_FUZZ=DIR` runs those of a folder that
/// `gpu_fuzz.py prepare DIR CASES SEED` made instead, thousands at a time.
fn fuzzed_programs_compute_on_cpu_threads_as_the_simulator_says() {
    let cxx = plain_compiler();
    let tmp = temp_dir("fuzzed");
    Fuzzed::load().run(|example| disagreement(&cxx, example, &tmp.join(&example.name)));
    let _ = std::fs::remove_dir_all(&tmp);
}

/// What the simulator verifies of the fuzzed programs, ThreadSanitizer
/// finds free of races in their generated code, as for the examples.
fn verified_fuzzed_programs_are_race_free_under_thread_sanitizer() {
    let cxx = common::cxx_compiler(true).expect("a C++ compiler with ThreadSanitizer");
    let tmp = temp_dir("fuzzed-tsan");
    Fuzzed::load().run(|example| {
        if !matches!(example.verdict, Verdict::Verified) {
            return None;
        }
        let kernel = HostKernel::build(&cxx, &example.plan, &tmp.join(&example.name), true);
        let outcome = kernel.run(small_size(&example.plan), 2, BUDGET_NS);
        let name = &example.name;
        match (&outcome.gave_up, outcome.wrong.iter().any(|w| *w > 0)) {
            (Some(g), _) => Some(format!("{name}: gave up: {g}")),
            (None, true) => Some(format!(
                "{name}: wrong elements per rank {:?}",
                outcome.wrong
            )),
            (None, false) if !outcome.races.is_empty() => Some(format!(
                "{name}: ThreadSanitizer reports a race:\n{}",
                outcome.races
            )),
            (None, false) => None,
        }
    });
    let _ = std::fs::remove_dir_all(&tmp);
}

/// The fuzzed programs: those kept in tests/cuda_host/fuzzed, or those of
/// the folder `MSCLC_HOST_FUZZ` names (its `cases.json` lists each file
/// and its `-D` settings).
struct Fuzzed {
    cases: Vec<(PathBuf, Vec<(String, String)>)>,
    /// The kept ones, each chosen to run.
    kept: bool,
}

impl Fuzzed {
    fn load() -> Fuzzed {
        let chosen = std::env::var_os("MSCLC_HOST_FUZZ").map(PathBuf::from);
        let kept = chosen.is_none();
        let folder = chosen.unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cuda_host/fuzzed")
        });
        let manifest = folder.join("cases.json");
        let text = std::fs::read_to_string(&manifest)
            .unwrap_or_else(|e| panic!("{}: {e}", manifest.display()));
        let cases: Vec<serde_json::Value> = serde_json::from_str(&text).expect("a list of cases");
        let cases = cases
            .iter()
            .map(|case| {
                let defines = case["defines"]
                    .as_array()
                    .expect("defines")
                    .iter()
                    .filter_map(|d| d.as_str()?.split_once('='))
                    .map(|(name, value)| (name.to_string(), value.to_string()))
                    .collect();
                (folder.join(case["file"].as_str().expect("a file")), defines)
            })
            .collect();
        Fuzzed { cases, kept }
    }

    /// Runs `check` on every program that runs on CPU threads, two at a
    /// time; fails with what it found wrong (and where a kept one does
    /// not run).
    fn run(&self, check: impl Fn(&Example) -> Option<String> + Sync) {
        // A program may declare message sizes the small one is outside,
        // or more ranks or blocks than CPU threads run in good time (a
        // block's threads for every block of every rank; ThreadSanitizer
        // runs out of memory at thousands), or have no CUDA form.
        // One with no result to check still runs: to the end where the
        // simulator verifies it, to a stop where it deadlocks.
        let runs_small = |e: &Example| {
            let senders = msclc::measure::workload::sendrecv_senders(&e.plan);
            let size = small_size(&e.plan);
            let blocks: usize = e.plan.ranks.iter().map(|r| r.threadblocks.len()).sum();
            e.plan.ranks.len() <= 16
                && blocks <= 256
                && Workload::new(&e.plan, Dtype::Float32, size, senders.as_deref()).is_ok()
        };
        let skipped = Mutex::new(Vec::new());
        let failures = on_two_threads(&self.cases, |(file, defines)| {
            let Some(example) = Example::load_with(file, defines).filter(runs_small) else {
                skipped.lock().unwrap().push(file.display().to_string());
                return vec![];
            };
            let found = check(&example);
            found
                .map(|d| format!("{d} ({})", file.display()))
                .into_iter()
                .collect()
        });
        let skipped = skipped.into_inner().unwrap();
        let ran = self.cases.len() - skipped.len();
        eprintln!("ran {ran} of {} fuzzed programs", self.cases.len());
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        assert!(
            !self.kept || skipped.is_empty(),
            "these do not run: {skipped:?}"
        );
    }
}

fn verified_examples_are_race_free_under_thread_sanitizer_but_the_known_plan_races() {
    let cxx = common::cxx_compiler(true).expect("a C++ compiler with ThreadSanitizer");
    let tmp = temp_dir("tsan");
    let failures = on_two_threads(&common::example_files(), |path| {
        let Some(example) = Example::load(path).filter(|e| e.checkable && e.for_thread_sanitizer())
        else {
            return vec![];
        };
        let (name, plan) = (&example.name, &example.plan);
        let kernel = HostKernel::build(&cxx, plan, &tmp.join(name), true);
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
    });
    let _ = std::fs::remove_dir_all(&tmp);
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
    let _ = std::fs::remove_dir_all(&tmp);
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
    let _ = std::fs::remove_dir_all(&tmp);
    let gave_up = outcome.gave_up.expect("the third launch stops");
    assert_eq!(gave_up.launch, 3, "{gave_up}");
    assert!(
        gave_up.what.starts_with("sem_acquire on semaphore 0"),
        "{gave_up}"
    );
    let explained = msclc::runner::explain_stuck(&plan, Some(&compiled.sources), gave_up.launch);
    assert!(
        explained.starts_with(
            "msclc sim, run for 3 launches back to back, finds the plan at fault: deadlock"
        ),
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
        warned.starts_with("msclc sim verifies the first 64 launches back to back")
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
    let _ = std::fs::remove_dir_all(&tmp);
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
    let _ = std::fs::remove_dir_all(&tmp);
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

/// A plan name is user text: it must not reach the generated source as
/// code (here a line that would stop every compilation).
fn user_text_in_the_generated_source_stays_text() {
    let cxx = plain_compiler();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/simple_allgather.mscl");
    let (mut plan, _) = compile(&path);
    plan.name = "a\n#error boom\\\n#error boom2 \u{2028} */".into();
    let tmp = temp_dir("escape");
    let outcome = HostKernel::build(&cxx, &plan, &tmp, false).run(small_size(&plan), 1, BUDGET_NS);
    let _ = std::fs::remove_dir_all(&tmp);
    assert!(outcome.gave_up.is_none() && outcome.wrong.iter().all(|w| *w == 0));
}
