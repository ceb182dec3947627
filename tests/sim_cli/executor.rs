//! Where the MSCCL++ executor would refuse a plan or run it otherwise:
//! GPU residency, a switch reduce without its broadcast.

use super::{common, sim};

/// More thread blocks on one rank than an H100 holds at once: a warning on
/// stderr, the verdict alone on stdout; `--quiet` drops the warning.
#[test]
fn residency_on_a_target_gpu_is_a_warning_on_stderr() {
    let (out, stdout, stderr) = sim(&["tests/sim_cli/wide.mscl", "--target", "h100"]);
    assert!(out.status.success());
    assert_eq!(
        stdout,
        "verified: test on 1 rank, 2 executions, 400 ops run\n"
    );
    assert!(
        stderr.contains("rank 0 has 200 thread blocks of 1024 threads; the H100 holds 132"),
        "{stderr}"
    );
    // At the op of the first block left out, with its loop values.
    assert!(
        stderr.contains("wide.mscl:8:5")
            && stderr.contains("thread block 132 of rank 0, the first left out")
            && stderr.contains("= when b = 132"),
        "{stderr}"
    );
    // `-q` as for `msclc FILE` and `msclc check`.
    for quietly in ["--quiet", "-q"] {
        let (_, _, quiet) = sim(&["tests/sim_cli/wide.mscl", "--target", "h100", quietly]);
        assert_eq!(quiet, "", "{quietly}");
    }
    let (_, _, roomy) = sim(&["tests/sim_cli/wide.mscl", "--target", "b200"]);
    assert!(roomy.contains("the B200 holds 148"), "{roomy}");
    let (bad, _, err) = sim(&["tests/sim_cli/wide.mscl", "--target", "h300"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(err.contains("a100, h100, h200, b200"), "{err}");
}

/// The W0507 warnings `msclc sim --json` lists for `file`.
fn unknown_op_warnings(file: &str) -> Vec<serde_json::Value> {
    let (_, stdout, _) = sim(&[file, "--json"]);
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON object");
    let warnings = report["runs"][0]["warnings"].as_array().unwrap();
    warnings
        .iter()
        .filter(|w| w["code"] == "W0507")
        .cloned()
        .collect()
}

/// A switch reduce no broadcast follows is an op of its own (`glre`), as
/// the reference writes it, which the executor refuses: the simulator runs
/// it as meant and says so (W0507, at the reduce's line), as compiling it
/// does; from the JSON plan alone, without a line.
#[test]
fn a_switch_reduce_without_its_broadcast_is_flagged_as_refused_by_the_executor() {
    for file in [
        "examples/mscclpp/unit_tests/switch_reduce_test.mscl",
        "tests/plans/mscclpp/unit_tests/switch_reduce_test.json",
    ] {
        let refused = unknown_op_warnings(file);
        assert_eq!(refused.len(), 1, "{file}: {refused:?}");
        let message = refused[0]["message"].as_str().unwrap();
        assert!(
            message.contains("switch reduce that no broadcast follows (`glre` in the plan)")
                && message.contains("the MSCCL++ executor does not run"),
            "{message}"
        );
        assert_eq!(
            refused[0]["line"].is_u64(),
            file.ends_with(".mscl"),
            "{file}: {:?}",
            refused[0]
        );
    }
}

/// The simulator runs a `glre` as meant: it sums the members' window into
/// its `dst_chunk`, reading the peers' buffers as the race check sees.
#[test]
fn a_switch_reduce_without_its_broadcast_is_run_as_meant() {
    let file = "tests/sim_cli/switch_reduce_alone.mscl";
    let (out, stdout, stderr) = sim(&[file, "-q"]);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.starts_with("verified: allreduce on 2 ranks"),
        "{stdout}"
    );
    // Two blocks (one per rank) with two such ops each: W0507 counts the
    // blocks.
    let (_, _, stderr) = sim(&[file]);
    assert!(
        stderr.contains("warning[W0507]: rank 0 thread block 0 (and 1 more thread block(s)) has a switch reduce"),
        "{stderr}"
    );
    // Each rank sums chunk c into output chunk 1 - c: wrong.
    let text = std::fs::read_to_string(file).unwrap();
    let swapped = text.replace("rank(r).output[c]", "rank(r).output[1 - c]");
    assert_ne!(swapped, text, "the reduce's destination moved");
    let dir = common::scratch("glre");
    let swapped_file = dir.join("glre.mscl");
    std::fs::write(&swapped_file, swapped).unwrap();
    let (out, stdout, _) = sim(&[swapped_file.to_str().unwrap(), "-q"]);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.starts_with(
            "wrong result: execution 1: rank 0 output chunk 0 lacks rank 0's input chunk 0"
        ),
        "{stdout}"
    );
    // Without the opening handshake, the reduce reads a peer's input the
    // user may still be writing.
    let (out, stdout, _) = sim(&["examples/mscclpp/unit_tests/switch_reduce_test.mscl", "-q"]);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.starts_with("data race on rank 1 input chunk 0"),
        "{stdout}"
    );
}

/// With fusion off, a switch reduce stays `glre` even where its broadcast
/// follows: W0507 blames the option, not a missing broadcast.
#[test]
fn a_switch_reduce_left_unfused_by_the_option_is_blamed_on_the_option() {
    let source = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples/mscclpp/executor_tests/reduce_nvls.mscl"),
    )
    .unwrap();
    let unfused = source.replacen(
        "program name {",
        "program name {\n    instr_fusion = false",
        1,
    );
    assert_ne!(unfused, source, "the example's program block moved");
    let dir = common::scratch("unfused");
    let file = dir.join("unfused.mscl");
    std::fs::write(&file, unfused).unwrap();
    let refused = unknown_op_warnings(file.to_str().unwrap());
    assert_eq!(refused.len(), 1, "{refused:?}");
    let message = refused[0]["message"].as_str().unwrap();
    assert!(
        message.contains("has a switch reduce left unfused by `instr_fusion = false`"),
        "{message}"
    );
    // As fused by default, the example has no `glre`.
    let fused = unknown_op_warnings("examples/mscclpp/executor_tests/reduce_nvls.mscl");
    assert!(fused.is_empty(), "{fused:?}");
}
