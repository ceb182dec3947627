//! `msclc run` on a real GPU: every example at its defaults over a few
//! sizes must do what the simulator says of it. Where this machine has no CUDA driver or
//! GPU (CI has none), these tests are reported ignored, with the reason,
//! and the test of `msclc run` without a driver runs instead.

mod common;

use common::{Example, Needs};
use msclc::sim::Verdict;
use std::process::Command;

fn main() {
    common::run(vec![
        common::test(
            "examples_run_on_the_gpu_as_the_simulator_says",
            Needs::Gpu,
            examples_run_on_the_gpu_as_the_simulator_says,
        ),
        common::test(
            "a_deadlocking_plan_stops_with_a_report_on_the_gpu",
            Needs::Gpu,
            a_deadlocking_plan_stops_with_a_report_on_the_gpu,
        ),
        common::test(
            "run_without_a_gpu_says_so_in_one_line",
            Needs::NoCudaDriver,
            run_without_a_gpu_says_so_in_one_line,
        ),
        common::test(
            "a_driver_library_that_falls_short_is_an_error_not_a_crash",
            Needs::Cxx,
            a_driver_library_that_falls_short_is_an_error_not_a_crash,
        ),
    ]);
}

/// Every example at its defaults on the GPU, held to what `msclc sim`
/// says of its plan, as tests/cuda_host.rs holds the host path: verified
/// means right (or, for a collective with no result, finished); a wrong
/// result means the simulator reports a problem, and `msclc run` prints it;
/// a deadlock the simulator reports stops the kernel with a report.
fn examples_run_on_the_gpu_as_the_simulator_says() {
    let mut failures = Vec::new();
    let mut ran = 0;
    for path in common::example_files() {
        let Some(example) = Example::load(&path) else {
            continue;
        };
        ran += 1;
        let out = Command::new(env!("CARGO_BIN_EXE_msclc"))
            .args(["run", path.to_str().unwrap(), "--size", "4K:1M"])
            .args(["--iters", "3", "--warmup", "1", "--timeout", "2"])
            .output()
            .expect("msclc runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let finished = out.status.code() == Some(0);
        let stopped = stderr.contains("the kernel stopped waiting");
        let wrong = stdout.contains("FAILED");
        let right =
            finished && (!example.checkable || stdout.contains("Out of bounds values : 0 OK"));
        // A plan of synchronization only moves no data: one row, size 0,
        // when it runs to the end.
        let one_row = example.plan.moves_data()
            || !finished
            || stdout.lines().filter(|l| !l.starts_with('#')).count() == 1;
        let agree = one_row
            && match example.verdict {
                Verdict::Verified => right,
                // Or a later launch than the first stops before the check
                // is printed (a semaphore the plan runs down): the
                // simulator, run as long, finds the plan at fault.
                Verdict::WrongResult(_) => {
                    let later = stderr.contains("of this run: the kernel, like the executor");
                    (wrong || (stopped && later)) && stderr.contains("finds the plan at fault")
                }
                Verdict::Deadlock(_) => {
                    stopped || (finished && example.deadlocks_only_on_packets_of_no_data())
                }
                // Against the user's accesses around the kernel, which the
                // kernel's end orders; a race between blocks depends on timing.
                Verdict::Race(_) => right || example.races_between_blocks(),
            };
        let verdict = if stopped {
            "stopped".to_string()
        } else if wrong {
            "wrong".to_string()
        } else {
            format!("exit {:?}", out.status.code())
        };
        eprintln!("{}: {verdict}; msclc sim: {}", example.name, example.sim);
        if !agree {
            failures.push(format!(
                "{}: msclc sim says {}, but on the GPU:\n{stdout}\n{stderr}",
                path.display(),
                example.sim
            ));
        }
    }
    assert!(ran >= 70, "only {ran} examples ran");
    assert!(
        failures.is_empty(),
        "{} of {ran}:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// A plan that waits for a signal nobody sends: `msclc run` stops it after
/// `--timeout` and says who waited for what, exit code 1.
fn a_deadlocking_plan_stops_with_a_report_on_the_gpu() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/simple_allgather.mscl");
    let Ok(mut plan) = msclc::driver::compile(&path, &[]).result else {
        panic!("the quick start compiles");
    };
    // Each rank waits for the other's first signal before it sends its
    // own: signals and waits still pair (`run` refuses a plan whose do
    // not, E0308), and both ranks starve.
    for tb in plan.ranks.iter_mut().flat_map(|r| &mut r.threadblocks) {
        let is = |name| move |op: &msclc::ir::Op| op.name == name;
        let signal = tb
            .ops
            .iter()
            .position(is(msclc::ir::OpName::RelaxedSignal))
            .expect("a handshake");
        let signal = tb.ops.remove(signal);
        let wait = tb
            .ops
            .iter()
            .position(is(msclc::ir::OpName::RelaxedWait))
            .expect("a handshake");
        tb.ops.insert(wait + 1, signal);
    }
    let verdict = msclc::sim::simulate(&plan, 2).verdict;
    assert!(matches!(verdict, Verdict::Deadlock(_)), "{verdict:?}");
    let dir = common::scratch("gpu-deadlock");
    let file = dir.join("deadlock.json");
    let mut json = Vec::new();
    msclc::back::json::write_plan(&plan, false, &mut json).expect("writes");
    std::fs::write(&file, json).unwrap();
    let started = std::time::Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_msclc"))
        .args([
            "run",
            file.to_str().unwrap(),
            "--size",
            "4K",
            "--timeout",
            "0.5",
            "--no-cache",
        ])
        .output()
        .expect("msclc runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("the kernel stopped waiting: rank 0 thread block 0")
            || stderr.contains("the kernel stopped waiting: rank 1 thread block 0"),
        "{stderr}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
}

/// Without a CUDA driver, `msclc run` says so in one line, exit code 2.
fn run_without_a_gpu_says_so_in_one_line() {
    let out = Command::new(env!("CARGO_BIN_EXE_msclc"))
        .args(["run", "examples/simple_allgather.mscl", "--nranks", "2"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("msclc runs");
    assert_eq!(out.status.code(), Some(2), "msclc could not do it");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("error[E0806]: no NVIDIA driver found"),
        "{err}"
    );
}

/// A `libcuda.so` that lacks a function msclc calls (an old driver, or a
/// library of that name that is not NVIDIA's), or whose driver sees no
/// GPU: one line that says so and what to do, exit code 2, never a
/// crash. The libraries are stand-ins, built here, found first through
/// LD_LIBRARY_PATH.
fn a_driver_library_that_falls_short_is_an_error_not_a_crash() {
    let cxx = common::cxx_compiler(false).expect("a C++ compiler");
    let dir = common::scratch("libcuda");
    let cases = [
        ("empty", "", "has no `cuInit`, which `msclc run` calls: the driver is too old"),
        (
            "no_device",
            "static const char *said = \"no CUDA-capable device is detected\";\n\
             int cuInit(unsigned) { return 0; }\n\
             int cuDeviceGetCount(int *) { return 100; }\n\
             int cuGetErrorString(int, const char **s) { *s = said; return 0; }\n",
            "cannot query CUDA devices: no CUDA-capable device is detected (CUDA_ERROR_NO_DEVICE): the driver sees no GPU",
        ),
    ];
    for (name, body, says) in cases {
        let lib = dir.join(name);
        std::fs::create_dir_all(&lib).unwrap();
        let source = lib.join("cuda.cpp");
        std::fs::write(
            &source,
            format!("extern \"C\" {{\nint msclc_stand_in;\n{body}}}\n"),
        )
        .unwrap();
        let built = Command::new(&cxx)
            .args(["-shared", "-fPIC", "-o"])
            .arg(lib.join("libcuda.so"))
            .arg(&source)
            .output()
            .expect("the C++ compiler runs");
        assert!(
            built.status.success(),
            "{}",
            String::from_utf8_lossy(&built.stderr)
        );
        std::fs::copy(lib.join("libcuda.so"), lib.join("libcuda.so.1")).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_msclc"))
            .args(["run", "examples/simple_allgather.mscl", "--nranks", "2"])
            .env("LD_LIBRARY_PATH", &lib)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .expect("msclc runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert_eq!(err.lines().count(), 1, "{name}: {err}");
        assert!(err.starts_with("error[E0806]: "), "{name}: {err}");
        assert!(err.contains(says), "{name}: {err}");
    }
}
