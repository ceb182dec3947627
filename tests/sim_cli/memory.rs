//! The simulator's memory budget: a plan too large is refused before it
//! runs, and the estimate bounds what a run takes.

use super::common;
use super::sim;
use std::process::Command;

/// A plan whose simulation would take more memory than `--max-memory` is
/// refused up front with the estimate (exit code 2), never killed.
#[test]
fn a_plan_too_large_for_the_memory_budget_is_refused_up_front() {
    let (out, stdout, stderr) = sim(&[
        "examples/mscclpp/single_node/allreduce.mscl",
        "--max-memory",
        "64K",
    ]);
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        stderr.contains("would take about") && stderr.contains("raise --max-memory"),
        "{stderr}"
    );
    let (fits, _, _) = sim(&["examples/mscclpp/single_node/allreduce.mscl"]);
    assert!(fits.status.success());
}

/// A `--max-memory` above what the machine lets msclc have is no promise:
/// the plan is refused up front, not killed for memory part way through.
/// (The machine here: an address-space limit of 2 GB.)
#[test]
fn max_memory_past_the_machine_is_refused_up_front() {
    let dir = common::scratch("sim-machine");
    // An allgather of 8,192 ranks and no ops: its output cells, the ranks
    // squared, are about 6 GiB to simulate.
    let ranks = 8192;
    let gpus: Vec<serde_json::Value> = (0..ranks)
        .map(|id| serde_json::json!({"id": id, "input_chunks": 1, "output_chunks": ranks, "scratch_chunks": 0, "channels": [], "remote_buffers": [], "semaphores": [], "threadblocks": []}))
        .collect();
    let plan = serde_json::json!({"name": "wide", "collective": "allgather", "protocol": "Simple", "inplace": true, "gpus": gpus});
    let path = dir.join("wide.json");
    std::fs::write(&path, plan.to_string()).unwrap();
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v 2000000; exec {} sim {} --max-memory 100G",
            env!("CARGO_BIN_EXE_msclc"),
            path.display()
        ))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("more than this machine lets msclc have now"),
        "{stderr}"
    );
}

/// The estimate `--max-memory` is held against bounds what the simulation
/// takes, measured (`memory_peak` of `--json`: the most heap it held at
/// once), for every example at its defaults and for shapes that grow
/// faster than their ops: every example with `num_gpus` at 16 ranks (64
/// in a release build), a chunk reduced into itself 20 times, an in-place
/// allgather plan with no ops, whose output cells grow as the ranks
/// squared, and 16,384 chunks reduced 20 times each.
#[test]
fn the_memory_estimate_bounds_the_measured_peak() {
    let dir = common::scratch("sim-peak");
    let reduce = dir.join("reduce.mscl");
    std::fs::write(&reduce, "program \"p\" {\n    collective = allreduce(1)\n}\nfor i in 0..20 {\n    rank(0).reduce(rank(0).input[0], [rank(0).output[0], rank(0).output[0]], tb: 0, dst_chunk: rank(0).output[0])\n}\n").unwrap();
    let ranks = 512;
    let gpus: Vec<serde_json::Value> = (0..ranks)
        .map(|id| serde_json::json!({"id": id, "input_chunks": 1, "output_chunks": ranks, "scratch_chunks": 0, "channels": [], "remote_buffers": [], "semaphores": [], "threadblocks": []}))
        .collect();
    let mut plan: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/plans/simple_allgather.json"),
        )
        .unwrap(),
    )
    .unwrap();
    plan["gpus"] = gpus.into();
    let allgather = dir.join("allgather.json");
    std::fs::write(&allgather, plan.to_string()).unwrap();
    // 16,384 chunks of output, each reduced with the input 20 times: a
    // node per value reduced (the estimate once counted their operands
    // alone, and fell short by a third).
    let chunks = 16384;
    let whole = |kind: &str| serde_json::json!({"type": kind, "index": 0, "size": chunks});
    let reduce_op = serde_json::json!({"name": "re", "reduce_op": "sum", "dst_buff": [whole("o")], "src_buff": [whole("o"), whole("i")]});
    let ops: Vec<serde_json::Value> = (0..20)
        .flat_map(|_| [reduce_op.clone(), serde_json::json!({"name": "nop"})])
        .collect();
    plan["collective"] = "test".into();
    plan["gpus"] = serde_json::json!([{"id": 0, "input_chunks": chunks, "output_chunks": chunks, "scratch_chunks": 0, "channels": [], "remote_buffers": [], "semaphores": [], "threadblocks": [{"id": 0, "channels": [], "remote_buffer_refs": [], "ops": ops}]}]);
    let reduced = dir.join("reduced.json");
    std::fs::write(&reduced, plan.to_string()).unwrap();

    let mut cases: Vec<Vec<String>> = vec![
        vec![reduce.display().to_string()],
        vec![allgather.display().to_string()],
        vec![reduced.display().to_string()],
    ];
    let scales: &[&str] = if cfg!(debug_assertions) {
        &["16"]
    } else {
        &["64"]
    };
    for file in common::example_files() {
        let path = file.display().to_string();
        cases.push(vec![path.clone()]);
        let text = std::fs::read_to_string(&file).unwrap();
        if text.contains("param num_gpus: int") {
            for n in scales {
                cases.push(vec![path.clone(), "-D".into(), format!("num_gpus={n}")]);
            }
        }
    }
    for (k, case) in cases.iter().enumerate() {
        let mut args: Vec<&str> = case.iter().map(String::as_str).collect();
        args.push("--json");
        let (_, stdout, stderr) = sim(&args);
        // An example refused (one that shows an error on purpose, or a
        // scale it does not fit) has nothing to measure; the shapes made
        // here must run.
        if stdout.is_empty() {
            assert!(k >= 3, "{case:?}: {stderr}");
            continue;
        }
        let report: serde_json::Value = serde_json::from_str(&stdout)
            .unwrap_or_else(|e| panic!("{case:?}: {e}: {stdout}{stderr}"));
        let estimate = report["memory_estimate"].as_u64().expect("an estimate");
        for run in report["runs"].as_array().unwrap() {
            let peak = run["memory_peak"].as_u64().expect("a peak");
            assert!(peak > 0, "{case:?}: nothing measured");
            assert!(
                peak <= estimate,
                "{case:?}: the simulation held {peak} bytes at once, above its estimate {estimate}"
            );
        }
    }
}
