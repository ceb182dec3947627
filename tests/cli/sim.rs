//! `msclc sim`: a correct port verified, a race shown at its program line, a malformed plan refused.

use super::*;

#[test]
fn sim_verifies_a_correct_port() {
    let out = msclc(&[
        "sim",
        "examples/mscclpp/single_node/allreduce.mscl",
        "-D",
        "num_gpus=4",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("verified: allreduce on 4 ranks, 2 executions"),
        "{text}"
    );
}

#[test]
fn sim_reports_a_race_at_the_program_line() {
    // The ring allgather's closing handshake is relaxed: it publishes no data.
    let out = msclc(&[
        "sim",
        "examples/mscclpp/single_node/allgather_ring.mscl",
        "-D",
        "num_gpus=4",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("data race on rank 2 output chunk 0:"),
        "{text}"
    );
    assert!(
        text.contains("the user's read of rank 2's result after execution 1"),
        "{text}"
    );
    assert!(text.contains("allgather_ring.mscl:32:9"), "{text}");
}

#[test]
fn sim_rejects_a_malformed_plan_with_exit_1() {
    let dir = common::scratch("cli");
    let path = dir.join("bad.json");
    std::fs::write(&path, r#"{"collective": "allreduce"}"#).expect("write");
    let out = msclc(&["sim", path.to_str().expect("utf-8 path")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing field `protocol`"));
}

/// No plan runs on 0 ranks: `--nranks 0` is a usage error for every
/// command that takes it, before anything is compiled.
#[test]
fn no_command_takes_zero_ranks() {
    for command in ["sim", "run", "tune"] {
        let out = msclc(&[command, "examples/simple_allgather.mscl", "--nranks", "0"]);
        assert_eq!(out.status.code(), Some(2), "{command}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("`0` is not a number of ranks from 1 to 4,294,967,295"),
            "{command}: {err}"
        );
    }
}

/// The JSON report has no timing: a timing option beside --json is
/// refused, not left unused.
#[test]
fn json_takes_no_timing_option() {
    for option in [
        &["--size", "1K"][..],
        &["--dtype", "float16"],
        &["--explain", "1K"],
    ] {
        let out = msclc(
            &[
                &["sim", "examples/simple_allgather.mscl", "--json"][..],
                option,
            ]
            .concat(),
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{option:?}: {err}");
        assert!(
            err.contains("the argument '--json' cannot be used with"),
            "{option:?}: {err}"
        );
    }
}

/// A negative number given to a numeric option is judged by its range, as
/// any other out of range: not taken for an unknown option with a tip
/// that does not work.
#[test]
fn a_negative_number_is_out_of_range() {
    let file = "examples/simple_allgather.mscl";
    for (args, said) in [
        (
            &["sim", file, "--executions", "-1"][..],
            "`-1` is not a number of executions from 1 to 1,024",
        ),
        (
            &["sim", file, "--nranks", "-3"],
            "`-3` is not a number of ranks from 1 to 4,294,967,295",
        ),
        // Not a number at all, or none of ops: said as such, not in the
        // words of Rust's integer parser ("invalid digit found in string").
        (
            &["run", file, "--nranks", "abc"],
            "`abc` is not a number of ranks from 1 to",
        ),
        (
            &["check", file, "--max-ops", "0"],
            "`0` is not a number of ops from 1 to",
        ),
        (
            &[file, "--threads", "2.0"],
            "`2.0` is not a number of threads from 1 to 1,024",
        ),
        (
            &["run", file, "--timeout", "-1"],
            "is not a number of seconds",
        ),
        (
            &[
                "tune",
                file,
                "--timing",
                "h100-nvlink",
                "--size",
                "1K:2K",
                "--within",
                "-5",
            ],
            "-5 is not a percentage from 0 to 100",
        ),
    ] {
        let out = msclc(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(said) && !err.contains("tip: to pass"),
            "{args:?}: {err}"
        );
    }
}

/// A program whose collective has a buffer of no chunks is warned at its
/// `collective =` (today's executor divides by the chunk counts).
#[test]
fn a_buffer_of_no_chunks_is_warned_at_the_collective() {
    let dir = common::scratch("nochunks");
    let path = dir.join("empty.mscl");
    std::fs::write(
        &path,
        "program \"t\" { collective = test_collective(2, input_size: 0, output_size: 1) }\n\
         let r = rank(0)\n\
         r.copy(r.output[0], r.output[0], tb: 0)\n",
    )
    .unwrap();
    let out = msclc(&["sim", path.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("warning[W0503]: the plan's input or output has no chunks")
            && err.contains("empty.mscl:1:28")
            && err.contains("a buffer of no chunks"),
        "{err}"
    );
}

/// `--dtype` takes the names the `type` column prints (nccl-tests'):
/// `half` is float16, `float` float32.
#[test]
fn dtype_takes_the_names_the_table_prints() {
    let table = |dtype: &str| {
        let out = msclc(&[
            "sim",
            "examples/mscclpp/single_node/allreduce.mscl",
            "--timing",
            "h100-nvlink",
            "--size",
            "1M",
            "--dtype",
            dtype,
        ]);
        assert_eq!(out.status.code(), Some(0), "{dtype}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    for (alias, name, printed) in [("half", "float16", "half"), ("float", "float32", "float")] {
        let by_alias = table(alias);
        assert_eq!(by_alias, table(name));
        assert!(by_alias.contains(&format!("type {printed}")), "{by_alias}");
    }
}

/// A deadlock whose cause is a signal on a channel the peer does not wait
/// on comes with the warning `check` gives (W0501), which names the
/// channel and where it was made; on a plan read back from JSON too.
#[test]
fn a_deadlock_comes_with_the_unpaired_signals_that_cause_it() {
    let program = "examples/mscclpp/unit_tests/signal_wait/signal_wait_fuse_test.mscl";
    let out = msclc(&["sim", program]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stdout.starts_with("deadlock:"), "{stdout}");
    assert!(
        stderr.contains("warning[W0501]: signal/wait mismatch on memory channels: rank 0's memory channel #0 to rank 1 signals 1 time"),
        "{stderr}"
    );
    assert!(stderr.contains(&format!("┌─ {program}:")), "{stderr}");
    let dir = common::scratch("unpaired");
    let plan = dir.join("unpaired.json");
    let written = msclc(&[program, "-q", "-o", plan.to_str().unwrap()]);
    assert!(written.status.success());
    let out = msclc(&["sim", plan.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("warning[W0501]"), "{stderr}");
}

/// The compile's warnings that a simulation does not find again of the
/// plan come with its verdict, in text and in JSON, each once: a `//`
/// that cut a division short (W0108), a port channel's packets that never
/// come (W0510, the deadlock's cause).
#[test]
fn sim_gives_the_compiles_own_warnings_too() {
    let dir = common::scratch("sim_compile_warnings");
    let program = dir.join("w.mscl");
    std::fs::write(
        &program,
        "program \"w\" {\n    collective = allgather(2, chunk_factor: 1, inplace: true)\n    protocol = LL\n}\n\
         let half = 6 // 2\n\
         let s = [scratch(r, 1) for r in 0..2]\n\
         for r in 0..2 {\n\
             port_channel(1 - r, r).put_packets(s[1 - r][0], rank(r).output[r], tb: 0)\n\
             rank(r).unpack_packets(rank(r).output[1 - r], s[r][0], tb: 0)\n\
         }\n",
    )
    .unwrap();
    let path = program.to_str().unwrap();
    let out = msclc(&["sim", path]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stdout.starts_with("deadlock:"), "{stdout}");
    assert_eq!(stderr.matches("warning[W0108]").count(), 1, "{stderr}");
    assert!(stderr.contains("w.mscl:5:14"), "{stderr}");
    assert_eq!(stderr.matches("warning[W0510]").count(), 1, "{stderr}");
    let out = msclc(&["sim", path, "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    let codes: Vec<&str> = report["runs"][0]["warnings"]
        .as_array()
        .expect("warnings")
        .iter()
        .filter_map(|w| w["code"].as_str())
        .collect();
    assert_eq!(codes, ["W0108", "W0510"], "{report}");
}

/// Without `--target`, `--timing` checks residency on its topology's GPU,
/// as `msclc tune` does when it drops a candidate for it (W0504), and the
/// warning names that GPU and its SMs.
#[test]
fn timing_checks_residency_on_the_topologys_gpu() {
    let dir = common::scratch("sim_topology_sms");
    let topology = dir.join("sms1.json");
    std::fs::write(&topology, r#"{"base": "h100-ib", "sms": 1}"#).unwrap();
    let program = "examples/mscclpp/default_algos/allreduce_multi_nodes.mscl";
    let timed = |timing: &str| {
        let out = msclc(&["sim", program, "--timing", timing, "--size", "1K"]);
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let err = timed(topology.to_str().unwrap());
    assert!(
        err.contains("warning[W0504]: rank")
            && err.contains(
                "the timing topology's GPU holds 1 of the executor's blocks at once (1 SM;"
            ),
        "{err}"
    );
    assert!(!timed("h100-ib").contains("W0504"));
}

/// The predicted table says how many nodes the ranks fill, and where a
/// multi-node program's port channels all stay within one node of the
/// topology, that they are timed so.
#[test]
fn the_timing_header_says_the_nodes_and_ports_that_stay_within_one() {
    let program = "examples/mscclpp/multi_node/allgather.mscl";
    let one_node = msclc(&[
        "sim",
        program,
        "-D",
        "gpus_per_node=4",
        "--timing",
        "h100-ib",
        "--size",
        "1K",
    ]);
    let text = String::from_utf8_lossy(&one_node.stdout);
    assert!(
        text.contains("# predicted on h100-ib (8 GPUs per node, 1 node)"),
        "{text}"
    );
    assert!(
        text.contains("# every port channel joins two GPUs of one node of h100-ib"),
        "{text}"
    );
    let two_nodes = msclc(&["sim", program, "--timing", "h100-ib", "--size", "1K"]);
    let text = String::from_utf8_lossy(&two_nodes.stdout);
    assert!(text.contains("(8 GPUs per node, 2 nodes)"), "{text}");
    assert!(!text.contains("every port channel"), "{text}");
    // Port channels alone, on one node on purpose: no note.
    let ports_only = "examples/mscclpp/unit_tests/flush/flush_test.mscl";
    let out = msclc(&["sim", ports_only, "--timing", "h100-nvlink", "--size", "1K"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("(8 GPUs per node, 1 node)"), "{text}");
    assert!(!text.contains("every port channel"), "{text}");
}

/// A plan that verifies but crosses a limit the executor refuses it for
/// says so in the verdict line, the line `--quiet` keeps.
#[test]
fn a_verified_plan_the_executor_refuses_says_so_in_its_verdict() {
    let out = msclc(&[
        "sim",
        "examples/simple_allgather.mscl",
        "-D",
        "num_gpus=16",
        "-q",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        text.trim_end(),
        "verified: allgather on 16 ranks, 2 executions, 4352 ops run; but the MSCCL++ executor will not run it as simulated (W0502)"
    );
    let fits = msclc(&["sim", "examples/simple_allgather.mscl", "-q"]);
    assert!(!String::from_utf8_lossy(&fits.stdout).contains("executor"));
}

/// So does a plan that meets a bug of today's executor (W0503: it sums
/// where the plan takes the max) or runs a semaphore down (W0506: a later
/// launch hangs): `sim -q && deploy` must not pass either silently.
#[test]
fn a_verified_plan_the_executor_runs_otherwise_says_so_in_its_verdict() {
    let max = "program \"m\" { collective = allreduce(2, chunk_factor: 1, inplace: true) }
for r in 0..2 {
    let peer = 1 - r
    let ch = memory_channel(peer, r)
    ch.signal(tb: 0, relaxed: true)
    ch.wait(tb: 0, relaxed: true, data_sync: after)
    let mine = rank(r).input[r]
    ch.reduce(mine, [rank(peer).input[r]], tb: 0, reduce_op: max)
    ch.put(rank(peer).input[r], mine, tb: 0)
    ch.signal(tb: 0, data_sync: before)
    ch.wait(tb: 0)
}
";
    let run_down =
        "program \"s\" { collective = test_collective(1, input_size: 1, output_size: 1) }
semaphore(0, initial_value: 2).acquire(tb: 0)
";
    for (program, code) in [(max, "W0503"), (run_down, "W0506")] {
        let out = piped(&["sim", "-", "-q"], program);
        assert_eq!(out.status.code(), Some(0), "{code}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.starts_with("verified: "), "{text}");
        assert!(
            text.trim_end().ends_with(&format!(
                "; but the MSCCL++ executor will not run it as simulated ({code})"
            )),
            "{text}"
        );
    }
}

/// E0808 says the `--size` range as it can be typed again (`2G:4G`, not
/// its count of bytes).
#[test]
fn no_size_that_runs_says_the_range_as_typed() {
    let program = "examples/mscclpp/single_node/allreduce_pkt.mscl";
    let out = msclc(&["sim", program, "--timing", "h100-nvlink", "--size", "2G:4G"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("error[E0808]: no size of --size 2G:4G runs this plan"),
        "{err}"
    );
    let out = msclc(&[
        "sim",
        program,
        "--timing",
        "h100-nvlink",
        "--size",
        "1024G:2048G",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no size of --size 1024G:2048G runs"), "{err}");
}

/// Blocks stuck at one program line are one mistake: one diagnostic there,
/// with how many more blocks wait at it (the verdict lists each).
#[test]
fn blocks_stuck_at_one_line_are_one_diagnostic() {
    let out = msclc(&["sim", "tests/cli/waits_in_a_cycle.mscl"]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let listed = stdout
        .lines()
        .filter(|l| l.starts_with("  rank ") && l.contains(" is stuck at op 1 (wait)"));
    assert_eq!(listed.count(), 4, "{stdout}");
    // The diagnostics follow the verdict on standard output.
    assert_eq!(
        stdout.matches("error[E0602]: deadlock").count(),
        1,
        "{stdout}"
    );
    assert!(
        stdout.contains("= and 3 more thread block(s) stuck at this op, on ranks [1, 2, 3]"),
        "{stdout}"
    );
}

/// In place, the user's write of the input is a write of the output the
/// race is reported on: the report says the two are one.
#[test]
fn a_race_in_place_says_the_input_is_the_output() {
    let dir = common::scratch("cli-in-place-race");
    let path = dir.join("port_pws.mscl");
    // A port put with signal and no flush: its proxy still reads the
    // output when the next execution's input is written.
    std::fs::write(
        &path,
        "program \"p\" {\n    collective = allgather(2, chunk_factor: 1, inplace: true)\n}\n\
         for r in 0..2 {\n    let ch = port_channel(1 - r, r)\n    ch.signal(tb: 0)\n    ch.wait(tb: 0)\n    \
         ch.put_with_signal(rank(1 - r).output[r], rank(r).output[r], tb: 0)\n    ch.wait(tb: 0)\n}\n",
    )
    .unwrap();
    let out = msclc(&["sim", path.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.starts_with("data race on rank 0 output chunk 0:"),
        "{text}"
    );
    assert!(
        text.contains(
            "the user's write of rank 0's input (in place, its output) before execution 2"
        ),
        "{text}"
    );
}

/// A semaphore run down over executions hangs a later one: the deadlock
/// says the executions before ran, and how to see the drift.
#[test]
fn a_deadlock_on_a_run_down_semaphore_points_at_the_drift() {
    let dir = common::scratch("cli-semaphore-drift");
    let path = dir.join("semdown.mscl");
    std::fs::write(
        &path,
        "program \"s\" {\n    collective = test_collective(1, input_size: 1, output_size: 1)\n}\n\
         let r = rank(0)\nlet sm = semaphore(0, initial_value: 3)\nsm.acquire(tb: 0)\n\
         r.copy(r.output[0], r.input[0], tb: 0)\n",
    )
    .unwrap();
    let out = msclc(&["sim", "--executions", "5", path.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("(execution 4) is stuck at op 1 (sem_acquire)"),
        "{text}"
    );
    assert!(
        text.contains("hint: executions 1 to 3 ran before this one")
            && text.contains("--executions 3` shows the drift as W0506"),
        "{text}"
    );
}
