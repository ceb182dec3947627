//! `msclc sim` as a user runs it: verdicts, the ops at their program lines,
//! hints, buffer modes, GPU residency, `--quiet` and `--json`.

mod common;

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
    let dir = std::env::temp_dir().join(format!("msclc-sim-bom-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
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
    std::fs::remove_dir_all(&dir).ok();
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

/// A deadlock names each stuck op at its program line and JSON path, and
/// says why where it can: here the peer signals on channels of another
/// number than the ones waited on.
#[test]
fn a_deadlock_points_at_the_waits_and_the_channel_numbers() {
    let file = "examples/mscclpp/unit_tests/signal_wait/signal_wait_fuse_test.mscl";
    let (out, stdout, _) = sim(&[file]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout.starts_with("deadlock:"), "{stdout}");
    assert!(
        stdout.contains("[gpus[0].threadblocks[0].ops[3]]"),
        "{stdout}"
    );
    assert!(
        stdout.contains("rank 1's signals arrive on rank 0's memory channel(s) #0, #1 to rank 1 (nobody waits there), but this op waits on channel(s) #2, #3"),
        "{stdout}"
    );
    assert!(
        stdout.contains("signal_wait_fuse_test.mscl:23:5"),
        "{stdout}"
    );
    assert!(stdout.contains("this op waits forever"), "{stdout}");
    // Where the starving channel and its pair on the peer were made, with
    // the loop values then, as compile diagnostics give them.
    assert!(
        stdout.contains("[gpus[0].threadblocks[0].ops[3]] (when r = 0)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("rank 0's memory channel #2 to rank 1, made here (when r = 0)")
            && stdout.contains("rank 1's memory channel #2 to rank 0, made here (when r = 1): the pair of rank 0's memory channel #2 to rank 1, which must signal"),
        "{stdout}"
    );
}

/// A deadlock of many thread blocks lists the first 16 stuck at an op,
/// counts the others, and says in one line how many ran all their ops and
/// wait for their rank's others; `--json` lists every one. (The ring
/// AllToAll at 4 ranks waiting on the wrong channels of each pair.)
#[test]
fn a_deadlock_of_many_blocks_is_summed_up() {
    let ring = "examples/mscclpp/single_node/alltoall/alltoall_ring.mscl";
    let text = std::fs::read_to_string(ring).unwrap();
    assert!(
        text.contains("data[peer].wait(tb: 1)"),
        "the ring's wait moved"
    );
    let wrong = std::env::temp_dir().join(format!("msclc-sim-many-{}.mscl", std::process::id()));
    std::fs::write(
        &wrong,
        text.replacen("data[peer].wait(tb: 1)", "ready[peer].wait(tb: 1)", 1),
    )
    .unwrap();
    let file = wrong.to_str().unwrap();
    let (out, stdout, _) = sim(&[file, "-D", "num_gpus=4"]);
    assert_eq!(out.status.code(), Some(1));
    let listed = stdout
        .lines()
        .filter(|l| l.starts_with("  rank ") && l.contains(" is stuck at op "));
    assert_eq!(listed.count(), 16, "{stdout}");
    assert!(
        stdout
            .contains("\n  and 48 more thread block(s) stuck at an op (--json lists every one)\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("\n  64 thread block(s), of 4 ranks, ran all their ops and wait for the other thread blocks of their rank to finish\n"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("waits for the other thread blocks of its rank"),
        "{stdout}"
    );
    let (_, json, _) = sim(&[file, "-D", "num_gpus=4", "--json"]);
    let report: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    let problems = report["runs"][0]["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 128);
    let _ = std::fs::remove_file(&wrong);
}

/// Packets read back by a plain op are a wrong result, said of the op that
/// reads them (with the one that wrote them), as text and as JSON; with
/// `unpack_packets` in its place the plan verifies.
#[test]
fn packets_read_as_plain_data_are_a_wrong_result_at_the_reader() {
    let file = "tests/sim_cli/packets_read_plain.mscl";
    let (out, stdout, _) = sim(&[file]);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.starts_with("wrong result: execution 1: rank 0 scratch chunk 0 holds packets (cpkt wrote them), which copy reads as plain data"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  read as plain data by the op at gpus[0].threadblocks[0].ops[1]\n  written as packets by the op at gpus[0].threadblocks[0].ops[0]\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("packets_read_plain.mscl:14:5")
            && stdout.contains("reads packets as plain data")
            && stdout.contains("the packets are written here"),
        "{stdout}"
    );
    let (_, json, _) = sim(&[file, "--json"]);
    let report: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    let lines: Vec<i64> = report["runs"][0]["problems"][0]["locations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["line"].as_i64().unwrap())
        .collect();
    assert_eq!(lines, [14, 13]);
    let text = std::fs::read_to_string(file).unwrap();
    let fixed = std::env::temp_dir().join(format!("msclc-sim-unpack-{}.mscl", std::process::id()));
    std::fs::write(
        &fixed,
        text.replacen("me.copy(me.output[r]", "me.unpack_packets(me.output[r]", 1),
    )
    .unwrap();
    let (out, stdout, _) = sim(&[fixed.to_str().unwrap()]);
    let _ = std::fs::remove_file(&fixed);
    assert!(
        out.status.success() && stdout.starts_with("verified:"),
        "{stdout}"
    );
}

/// A race with the user's access around a kernel says what most likely
/// lets it happen: a relaxed closing handshake (the ring AllGather's), a
/// port put the kernel ends without flushing (the multi-node
/// ReduceScatter's), no opening handshake (a next execution's put while
/// the user reads), a tb_group's closing signal on one of its blocks
/// only; in text and as the JSON problem's hint.
#[test]
fn a_race_at_the_kernels_end_hints_at_the_handshake_or_the_flush() {
    for (file, hint) in [
        (
            "examples/mscclpp/single_node/allgather_ring.mscl",
            "hint: nothing orders rank 0's write to rank 6's buffer before rank 6's kernel of execution 1 ends: end with a handshake that does: rank 0 signals after the op on the thread block that did it, block 0 (not relaxed, `data_sync: before`), and rank 6 waits for that signal (`data_sync: after`) before its kernel ends",
        ),
        (
            "tests/sim_cli/group_signals_on_one_block.mscl",
            "hint: nothing orders rank 0's write to rank 6's buffer before rank 6's kernel of execution 1 ends: end with a handshake that does: rank 0 signals after the op on the thread block that did it, block 1 (not relaxed, `data_sync: before`), and rank 6 waits for that signal (`data_sync: after`) before its kernel ends; the op is part 1 of a tb_group of 4, each block doing its own part, so every block of the group signals after its part",
        ),
        (
            "examples/mscclpp/multi_node/reducescatter.mscl",
            "hint: a port channel's proxy does its copies after the block goes on, and nothing waits for them before rank 6's kernel of execution 1 ends: flush the channel after its puts",
        ),
        (
            "tests/sim_cli/no_opening_handshake.mscl",
            "hint: nothing orders rank 1's write to rank 0's buffer in execution 2 after rank 0's kernel of that execution starts: begin with a handshake that does: rank 0 signals at its kernel's start that it is ready, and rank 1 waits for that signal before the op",
        ),
    ] {
        let (out, stdout, _) = sim(&[file]);
        assert_eq!(out.status.code(), Some(1), "{stdout}");
        assert!(stdout.starts_with("data race on ") && stdout.contains(hint), "{stdout}");
        let (_, json, _) = sim(&[file, "--json"]);
        let report: serde_json::Value = serde_json::from_str(&json).expect("JSON");
        let said = report["runs"][0]["problems"][0]["hint"].as_str().unwrap_or("");
        assert!(said.starts_with(&hint["hint: ".len()..]), "{json}");
    }
}

/// Packets that a faster rank's next launch overwrote before they were
/// read: the report suggests the double scratch buffer.
#[test]
fn overwritten_packets_suggest_a_double_scratch_buffer() {
    let (out, stdout, _) = sim(&["tests/sim_cli/overwrite.mscl"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout.contains("overwritten by execution 2 before execution 1 read them")
            && stdout.contains("use_double_scratch_buffer = true"),
        "{stdout}"
    );
    assert!(stdout.contains("overwrite.mscl:9:1"), "{stdout}");
}

/// A race on a JSON plan names both ops by their JSON paths.
#[test]
fn a_race_in_a_json_plan_names_the_ops_json_paths() {
    let dir = std::env::temp_dir().join(format!("msclc-sim-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let plan = dir.join("reduce_tbg.json");
    let compiled = Command::new(env!("CARGO_BIN_EXE_msclc"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["examples/mscclpp/executor_tests/reduce_tbg.mscl", "-o"])
        .arg(&plan)
        .status()
        .unwrap();
    assert!(compiled.success());
    let (out, stdout, _) = sim(&[plan.to_str().unwrap()]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout.starts_with("data race on rank 1 scratch chunk 1"),
        "{stdout}"
    );
    assert!(
        stdout.contains("op at gpus[1].threadblocks[1].ops[0]")
            && stdout.contains("op at gpus[0].threadblocks[0].ops[7]"),
        "{stdout}"
    );
}

/// A wait that names one channel twice takes two signals from it, as the
/// executor's two lanes do: with one sent for it, a deadlock that says so.
#[test]
fn a_wait_naming_a_channel_twice_needs_two_signals() {
    let dir = std::env::temp_dir().join(format!("msclc-sim-twice-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let base =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/plans/simple_allgather.json");
    let mut plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(base).unwrap()).unwrap();
    let wait = &mut plan["gpus"][0]["threadblocks"][0]["ops"][8];
    assert_eq!(wait["name"], "wait");
    wait["channel_ids"] = serde_json::json!([0, 0]);
    let path = dir.join("wait_twice.json");
    std::fs::write(&path, plan.to_string()).unwrap();
    let (out, stdout, _) = sim(&[path.to_str().unwrap()]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("stuck at op 8 (wait): ")
            && stdout
                .contains("signal(s) from rank 1 on memory channel, which it waits on 2 times"),
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
    let oop = std::env::temp_dir().join(format!("msclc-sim-oop-{}.mscl", std::process::id()));
    std::fs::write(&oop, text.replacen("inplace: true", "inplace: false", 1)).unwrap();
    let (out, stdout, _) = sim(&[oop.to_str().unwrap()]);
    let (_, quiet, _) = sim(&[oop.to_str().unwrap(), "-q"]);
    let _ = std::fs::remove_file(&oop);
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
    let dir = std::env::temp_dir().join(format!("msclc-sim-machine-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
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
    let _ = std::fs::remove_dir_all(&dir);
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
    let dir = std::env::temp_dir().join(format!("msclc-sim-peak-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
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
    std::fs::remove_dir_all(&dir).ok();
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
    let path = std::env::temp_dir().join(format!("msclc-unfused-race-{}.mscl", std::process::id()));
    std::fs::write(&path, unfused).unwrap();
    let (_, said, _) = sim(&[path.to_str().unwrap()]);
    let _ = std::fs::remove_file(&path);
    assert!(
        said.contains("= this access when step = 1, r = 1\n"),
        "{said}"
    );
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
    let swapped_file = std::env::temp_dir().join(format!("msclc-glre-{}.mscl", std::process::id()));
    std::fs::write(&swapped_file, swapped).unwrap();
    let (out, stdout, _) = sim(&[swapped_file.to_str().unwrap(), "-q"]);
    let _ = std::fs::remove_file(&swapped_file);
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
    let file = std::env::temp_dir().join(format!("msclc-unfused-{}.mscl", std::process::id()));
    std::fs::write(&file, unfused).unwrap();
    let refused = unknown_op_warnings(file.to_str().unwrap());
    let _ = std::fs::remove_file(&file);
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

/// A deadlock inside a pipeline names the iteration it stopped in, of how
/// many the simulator ran (twice where no size is given): what a pipeline
/// does at sizes with fewer iterations differs.
#[test]
fn a_deadlock_in_a_pipeline_names_its_iteration() {
    let (out, stdout, _) = sim(&["tests/sim_cli/pipeline_semaphore.mscl"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout.contains(
            "rank 0 thread block 0 (execution 1) is stuck at op 4 (sem_acquire, iteration 2 of the pipeline's 2): semaphore 0 is at 0, and nothing is left to release it"
        ),
        "{stdout}"
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
    assert!(stderr.contains("0 is not in 1..=1024"), "{stderr}");
}
