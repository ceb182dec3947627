//! Deadlocks, races and wrong results: each reported at the ops
//! involved, with a hint where the cause is clear.

use super::{common, sim};
use std::process::Command;

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
    let dir = common::scratch("sim-many");
    let wrong = dir.join("many.mscl");
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
}

/// A deadlock inside a pipeline names the op as `--emit ops` numbers it
/// (`0.1`) and the iteration it stopped in, of how
/// many the simulator ran (twice where no size is given): what a pipeline
/// does at sizes with fewer iterations differs.
#[test]
fn a_deadlock_in_a_pipeline_names_its_iteration() {
    let (out, stdout, _) = sim(&["tests/sim_cli/pipeline_semaphore.mscl"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout.contains(
            "rank 0 thread block 0 (execution 1) is stuck at op 0.1 (sem_acquire, iteration 2 of the pipeline's 2): semaphore 0 is at 0, and nothing is left to release it"
        ),
        "{stdout}"
    );
}

/// A wait that names one channel twice takes two signals from it, as the
/// executor's two lanes do: with one sent for it, a deadlock that says so.
#[test]
fn a_wait_naming_a_channel_twice_needs_two_signals() {
    let dir = common::scratch("sim-twice");
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
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("stuck at op 8 (wait): ")
            && stdout
                .contains("signal(s) from rank 1 on memory channel, which it waits on 2 times"),
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
            "hint: a port channel's proxy does its copies after the block goes on, and nothing waits for them before rank 6's kernel of execution 1 ends: make the channel's last put before the kernel ends a `put_with_signal_and_flush` (a `flush` waits for them too, but does nothing on today's executor: W0503)",
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

/// A race on a JSON plan names both ops by their JSON paths.
#[test]
fn a_race_in_a_json_plan_names_the_ops_json_paths() {
    let dir = common::scratch("sim-cli");
    let plan = dir.join("reduce_tbg.json");
    let compiled = Command::new(env!("CARGO_BIN_EXE_msclc"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["examples/mscclpp/executor_tests/reduce_tbg.mscl", "-o"])
        .arg(&plan)
        .status()
        .unwrap();
    assert!(compiled.success());
    let (out, stdout, _) = sim(&[plan.to_str().unwrap()]);
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
    let dir = common::scratch("sim-unpack");
    let fixed = dir.join("unpack.mscl");
    std::fs::write(
        &fixed,
        text.replacen("me.copy(me.output[r]", "me.unpack_packets(me.output[r]", 1),
    )
    .unwrap();
    let (out, stdout, _) = sim(&[fixed.to_str().unwrap()]);
    assert!(
        out.status.success() && stdout.starts_with("verified:"),
        "{stdout}"
    );
}

/// The user's input of the next launch is plain data, whatever packets a
/// kernel left in the input buffer (a JSON plan may put them there): a
/// packet op reading it then reads data, where the simulator took the
/// user for the packets' writer and stopped on an index out of bounds.
#[test]
fn the_users_input_replaces_packets_a_kernel_left_in_it() {
    let dir = common::scratch("sim-input-packets");
    let plan = dir.join("input_packets.json");
    std::fs::write(
        &plan,
        r#"{"name": "p", "collective": "test", "protocol": "LL", "inplace": false,
 "gpus": [{"id": 0, "input_chunks": 1, "output_chunks": 1, "scratch_chunks": 1,
   "channels": [], "remote_buffers": [], "semaphores": [],
   "threadblocks": [{"id": 0, "channels": [], "remote_buffer_refs": [],
     "ops": [{"name": "cpkt", "src_buff": [{"type": "i", "index": 0, "size": 1}],
                              "dst_buff": [{"type": "i", "index": 0, "size": 1}]}]}]}]}"#,
    )
    .unwrap();
    let (out, stdout, stderr) = sim(&[plan.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        stdout.starts_with("verified: test on 1 rank, 2 executions"),
        "{stdout}"
    );
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
