//! `msclc run` on a real GPU: examples at 8 ranks (or as they are) over a
//! few sizes must come out right. Where this machine has no CUDA driver or
//! GPU (CI has none), these tests are reported ignored, with the reason,
//! and the test of `msclc run` without a driver runs instead.

mod common;

use common::Needs;
use std::process::Command;

fn main() {
    common::run(vec![
        common::test(
            "examples_run_right_on_the_gpu",
            Needs::Gpu,
            examples_run_right_on_the_gpu,
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
    ]);
}

fn examples_run_right_on_the_gpu() {
    let examples = [
        ("examples/simple_allgather.mscl", None),
        ("examples/mscclpp/single_node/allreduce.mscl", Some("8")),
        ("examples/mscclpp/single_node/allreduce_pkt.mscl", Some("8")),
        ("examples/mscclpp/single_node/allgather.mscl", Some("8")),
        (
            "examples/mscclpp/single_node/alltoall/alltoall.mscl",
            Some("8"),
        ),
    ];
    for (file, nranks) in examples {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_msclc"));
        cmd.current_dir(env!("CARGO_MANIFEST_DIR")).args([
            "run", file, "--size", "4K:1M", "--iters", "3", "--warmup", "1",
        ]);
        if let Some(n) = nranks {
            cmd.args(["--nranks", n]);
        }
        let out = cmd.output().expect("msclc runs");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{file}:\n{text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            text.contains("Out of bounds values : 0 OK"),
            "{file}:\n{text}"
        );
    }
}

/// A plan that waits for a signal nobody sends: `msclc run` stops it after
/// `--timeout` and says who waited for what, exit code 1.
fn a_deadlocking_plan_stops_with_a_report_on_the_gpu() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/simple_allgather.mscl");
    let Ok(mut plan) = msclc::driver::compile(&path, &[]).result else {
        panic!("the quick start compiles");
    };
    // Rank 1 never signals: rank 0's waits starve.
    for tb in &mut plan.ranks[1].threadblocks {
        tb.ops.retain(|op| {
            !matches!(
                op.name,
                msclc::ir::OpName::Signal | msclc::ir::OpName::RelaxedSignal
            )
        });
    }
    let file = std::env::temp_dir().join(format!("msclc-gpu-deadlock-{}.json", std::process::id()));
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
    let _ = std::fs::remove_file(&file);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("the kernel stopped waiting: rank 0 thread block 0"),
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
