//! `msclc sim` as a user runs it: verdicts, the ops at their program lines,
//! hints, buffer modes, GPU residency, `--quiet` and `--json`.

#[path = "../common/mod.rs"]
mod common;
mod executor;
mod memory;
mod problems;

use std::process::{Command, Output};

fn sim(args: &[&str]) -> (Output, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_msclc"))
        .arg("sim")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("msclc runs");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    (out, stdout, stderr)
}

/// A plan is a plan whatever the case of its `.json` and with the
/// byte-order mark some editors write (the executor's reader skips it).
#[test]
fn a_plan_named_in_capitals_or_with_a_byte_order_mark_is_read() {
    let dir = common::scratch("sim-bom");
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/plans/simple_allgather.json"),
    )
    .unwrap();
    let plan = dir.join("PLAN.JSON");
    std::fs::write(&plan, format!("\u{feff}{text}")).unwrap();
    let (out, stdout, stderr) = sim(&[plan.to_str().unwrap()]);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.starts_with("verified: allgather on 2 ranks"),
        "{stdout}"
    );
}

/// A SendRecv need not send to the next rank: any pairing where each rank
/// receives one other rank's whole input is right, and the pairing found
/// is reported.
#[test]
fn a_sendrecv_is_right_for_any_pairing_and_says_which() {
    let (out, stdout, _) = sim(&["tests/sim_cli/shift.mscl"]);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("verified: sendrecv on 16 ranks")
            && stdout.contains("each rank r receives rank (r - 4) mod 16's input"),
        "{stdout}"
    );
}

/// Checked in both buffer modes, an in-place plan says it works in-place
/// only, and the run fails.
#[test]
fn both_buffer_modes_say_which_one_a_plan_works_in() {
    let (out, stdout, _) = sim(&["examples/simple_allgather.mscl", "--buffers", "both"]);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("in-place (declared): verified:"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "out-of-place: wrong result: execution 1: rank 0 output chunk 0 was never written"
        ),
        "{stdout}"
    );
    assert!(
        stdout
            .contains("note: the plan works in-place only, not out-of-place; it declares in-place"),
        "{stdout}"
    );
    let (declared, _, _) = sim(&["examples/simple_allgather.mscl", "--buffers", "in-place"]);
    assert!(declared.status.success());
    // Declared out-of-place, the in-place AllGather is wrong as declared,
    // and the note says which `inplace` it works with; a plan right as
    // declared gets no note.
    let text = std::fs::read_to_string("examples/simple_allgather.mscl").unwrap();
    let dir = common::scratch("sim-oop");
    let oop = dir.join("oop.mscl");
    std::fs::write(&oop, text.replacen("inplace: true", "inplace: false", 1)).unwrap();
    let (out, stdout, _) = sim(&[oop.to_str().unwrap()]);
    let (_, quiet, _) = sim(&[oop.to_str().unwrap(), "-q"]);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.starts_with("wrong result: execution 1: rank 0 output chunk 0 was never written")
            && stdout.contains("note: the plan works in-place, but declares out-of-place: declare the collective `inplace: true` (--buffers both runs both)"),
        "{stdout}"
    );
    // -q: the verdict line alone.
    assert_eq!(quiet.lines().count(), 1, "{quiet}");
    let (_, right, _) = sim(&["examples/simple_allgather.mscl"]);
    assert!(!right.contains("note:"), "{right}");
}

/// `--json`: one object a CI pipeline can read, with each problem's
/// locations (file, line, JSON path) and the warnings.
#[test]
fn json_reports_carry_the_verdict_problems_and_locations() {
    let file = "examples/mscclpp/executor_tests/reduce_tbg.mscl";
    let (out, stdout, stderr) = sim(&[file, "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr, "");
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON object");
    assert_eq!(report["verified"], false);
    let run = &report["runs"][0];
    assert_eq!(run["verdict"], "race");
    assert_eq!(run["problems"][0]["code"], "E0603");
    // Every problem has every field, null or empty where there is nothing.
    let fields: Vec<&String> = run["problems"][0].as_object().unwrap().keys().collect();
    let every = ["code", "hint", "kind", "locations", "message", "related"];
    assert_eq!(fields, every, "{run}");
    let locations = run["problems"][0]["locations"].as_array().unwrap();
    assert_eq!(locations.len(), 2);
    assert_eq!(locations[0]["json_path"], "gpus[1].threadblocks[1].ops[0]");
    assert_eq!(locations[0]["line"], 45);
    assert_eq!(locations[0]["fused"], false);
    assert!(locations[0]["file"]
        .as_str()
        .unwrap()
        .ends_with("reduce_tbg.mscl"));
    let (ok, verified, _) = sim(&["examples/simple_allgather.mscl", "--json"]);
    assert!(ok.status.success());
    let report: serde_json::Value = serde_json::from_str(&verified).unwrap();
    assert_eq!(report["runs"][0]["verdict"], "verified");
    assert_eq!(report["runs"][0]["problems"], serde_json::json!([]));
    // Warnings carry their code and, for a program, their line.
    let (_, crossing, _) = sim(&["tests/cli/ring_one_block.mscl", "-D", "n=16", "--json"]);
    let report: serde_json::Value = serde_json::from_str(&crossing).unwrap();
    let warning = &report["runs"][0]["warnings"][0];
    assert_eq!(warning["code"], "W0502", "{warning}");
    assert_eq!(warning["line"], 16, "{warning}");
    assert!(warning["message"].as_str().unwrap().contains("has 90 ops"));
}

/// A program that moves nothing is not verified: a rank without thread
/// blocks runs an empty kernel, and its user still checks the result.
#[test]
fn a_program_without_ops_is_a_wrong_result() {
    let (out, stdout, _) = sim(&["tests/sim_cli/empty.mscl"]);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.starts_with("wrong result: execution 1: rank 0 output chunk 0 was never written: it should hold rank 0's input chunk 0"),
        "{stdout}"
    );
}

/// A fused op is reported with the loop values of its first part, which
/// need not be the part that raced: the report says so, and with fusion
/// off each part is named with its own.
#[test]
fn a_fused_op_is_named_by_its_first_part_and_says_so() {
    let file = "tests/sim_cli/fused_race.mscl";
    let (out, said, _) = sim(&[file]);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("= this access when step = 0, r = 1 (those of the first op fused into it, which may not be the one that did this: `instr_fusion = false` names each)"),
        "{said}"
    );
    let text = std::fs::read_to_string(file).unwrap();
    let unfused = text.replacen(
        "inplace: true)",
        "inplace: true)\n    instr_fusion = false",
        1,
    );
    assert_ne!(unfused, text, "the program block moved");
    let dir = common::scratch("unfused-race");
    let path = dir.join("unfused.mscl");
    std::fs::write(&path, unfused).unwrap();
    let (_, said, _) = sim(&[path.to_str().unwrap()]);
    assert!(
        said.contains("= this access when step = 1, r = 1\n"),
        "{said}"
    );
}

/// `--executions N` runs N launches back to back, semaphores carried over
/// as on the executor: a semaphore each launch runs down, which W0506
/// warns of at two, is seen to run out, and the warning names the count
/// that shows it.
#[test]
fn executions_run_back_to_back_until_a_semaphore_runs_out() {
    let file = "tests/sim_cli/semaphore_runs_down.mscl";
    let (out, stdout, stderr) = sim(&[file]);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.starts_with("verified: test on 1 rank, 2 executions"),
        "{stdout}"
    );
    assert!(
        stderr.contains("`msclc sim --executions 5` simulates that many launches"),
        "{stderr}"
    );
    // At the program line of the acquire that takes more than it gives.
    assert!(
        stderr.contains("semaphore_runs_down.mscl:6:1") && stderr.contains("acquired here first"),
        "{stderr}"
    );
    let (out, stdout, _) = sim(&[file, "--executions", "4"]);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.starts_with("verified: test on 1 rank, 4 executions"),
        "{stdout}"
    );
    let (out, stdout, _) = sim(&[file, "--executions", "5"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout.contains("rank 0 thread block 0 (execution 5) is stuck at op 1 (sem_acquire)"),
        "{stdout}"
    );
    let (out, _, stderr) = sim(&[file, "--executions", "0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr.contains("`0` is not a number of executions from 1 to 1,024"),
        "{stderr}"
    );
}
