//! Programs the fuzzer made, on CPU threads: the examples' agreement with
//! the simulator (`disagreement`) and their freedom from races, for ops,
//! sizes and shapes no example has.

use super::*;

/// Programs the fuzzer made (tests/fuzz) and `benches/gpu_fuzz.py
/// prepare` kept, where `msclc sim` verifies them or finds them wrong or
/// deadlocked, run as the examples are: their generated CUDA computes on
/// CPU threads as the simulator says. The fuzzer reaches ops, sizes and
/// shapes no example has. tests/cuda_host/fuzzed holds a few, listed in its
/// `cases.json`; `MSCLC_HOST_FUZZ=DIR` runs those of a folder that
/// `gpu_fuzz.py prepare DIR CASES SEED` made instead, thousands at a time.
pub(crate) fn fuzzed_programs_compute_on_cpu_threads_as_the_simulator_says() {
    let cxx = plain_compiler();
    let tmp = temp_dir("fuzzed");
    Fuzzed::load().run(|example| {
        disagreement(&cxx, example, &tmp.join(&example.name))
            .into_iter()
            .collect()
    });
}

/// What the simulator verifies of the fuzzed programs, ThreadSanitizer
/// finds free of races in their generated code, as for the examples.
pub(crate) fn verified_fuzzed_programs_are_race_free_under_thread_sanitizer() {
    let cxx = common::cxx_compiler(true).expect("a C++ compiler with ThreadSanitizer");
    let tmp = temp_dir("fuzzed-tsan");
    Fuzzed::load().run(|example| {
        // What the simulator verifies: none of the fuzzed programs is one
        // of the examples' known races.
        if !example.for_thread_sanitizer() {
            return vec![];
        }
        thread_sanitizer_findings(&cxx, example, &tmp.join(&example.name))
    });
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
    fn run(&self, check: impl Fn(&Example) -> Vec<String> + Sync) {
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
            check(&example)
                .into_iter()
                .map(|d| format!("{d} ({})", file.display()))
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
