//! The command line as a user runs it.

mod common;

use std::process::Command;

fn msclc(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_msclc"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("msclc runs")
}

#[test]
fn compact_and_pretty_plans_are_the_same_plan() {
    let compact = msclc(&["examples/simple_allgather.mscl"]);
    let pretty = msclc(&["examples/simple_allgather.mscl", "--pretty"]);
    assert!(compact.status.success() && pretty.status.success());
    let text = String::from_utf8(compact.stdout).expect("utf-8");
    assert_eq!(text.lines().count(), 1, "a compact plan is one line");
    let pretty_text = String::from_utf8(pretty.stdout).expect("utf-8");
    assert!(
        pretty_text.contains("\n \"gpus\": ["),
        "indented by one space"
    );
    let a: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let b: serde_json::Value = serde_json::from_str(&pretty_text).expect("JSON");
    assert_eq!(a, b);
    assert_eq!(a["gpus"].as_array().map(Vec::len), Some(2));
}

#[test]
fn a_bad_program_exits_1_with_a_located_diagnostic() {
    let out = msclc(&["examples/mscclpp/unit_tests/put/put_with_signal_fuse_test.mscl"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("error[E0308]: signal/wait mismatch on port channels: rank 0's port channel 0 (to rank 1) signals 3 times, but its paired channel back, rank 1's port channel 0 (to rank 0), waits 2 times"),
        "{err}"
    );
    assert!(err.contains("put_with_signal_fuse_test.mscl:21:5"), "{err}");
}

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
    let dir = std::env::temp_dir().join(format!("msclc-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("bad.json");
    std::fs::write(&path, r#"{"collective": "allreduce"}"#).expect("write");
    let out = msclc(&["sim", path.to_str().expect("utf-8 path")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing field `protocol`"));
}

#[test]
fn emit_cuda_writes_one_function_per_block_shape_and_a_table_row_per_block() {
    let out = msclc(&["examples/simple_allgather.mscl", "--emit", "cuda"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).expect("utf-8");
    assert!(text.contains("#define MSCL_NRANKS 2"));
    // The two ranks' blocks differ only in their numbers: one shape.
    assert!(text.contains("void mscl_shape0(const MsclArgs& a, const u64* P)"));
    assert!(!text.contains("void mscl_shape1("));
    assert!(
        text.contains("mscl_block_shape[] = {\n  0, 0,\n};"),
        "{text}"
    );
    assert!(text.contains("extern \"C\" __global__"));
    assert!(!text.contains("#include <cuda"), "needs no CUDA header");
}

#[test]
fn emit_cuda_of_a_plan_the_executor_rejects_is_an_error() {
    let out = msclc(&[
        "examples/mscclpp/unit_tests/switch_reduce_test.mscl",
        "--emit",
        "cuda",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("glre"), "{err}");
}

#[test]
fn run_says_when_no_param_sets_the_rank_count() {
    let out = msclc(&[
        "run",
        "examples/mscclpp/multi_node/allgather.mscl",
        "--nranks",
        "4",
    ]);
    assert_eq!(out.status.code(), Some(2), "a usage error");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no single param"), "{err}");
    let plan = std::env::temp_dir().join(format!("msclc-cli-{}.json", std::process::id()));
    let made = msclc(&[
        "examples/simple_allgather.mscl",
        "-o",
        plan.to_str().unwrap(),
    ]);
    assert!(made.status.success());
    let out = msclc(&["run", plan.to_str().unwrap(), "--nranks", "8"]);
    let _ = std::fs::remove_file(&plan);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("a plan for 2 ranks"), "{err}");
}

/// `-D` takes what a literal may be (the largest message size) and, for a
/// param of a named constant's type, the constant's name; a wrong name
/// lists the ones the type takes.
#[test]
fn defines_take_the_largest_message_size_and_constant_names() {
    let port = "examples/mscclpp/default_algos/allreduce_multi_nodes.mscl";
    let out = msclc(&[
        port,
        "-D",
        "max_message_size=18446744073709551615",
        "-D",
        "protocol=LL",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(plan["max_message_size"], 18446744073709551615u64);
    assert_eq!(plan["protocol"], "LL");

    let out = msclc(&[port, "-D", "protocol=ll"]);
    assert_eq!(out.status.code(), Some(2), "a usage error");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("`ll` is not a valid protocol"), "{err}");
    assert!(err.contains("a protocol is one of: Simple, LL"), "{err}");
}

#[test]
fn timings_name_every_stage_on_stderr_and_leave_the_plan_alone() {
    let plain = msclc(&["examples/simple_allgather.mscl"]);
    let timed = msclc(&["examples/simple_allgather.mscl", "--timings"]);
    assert!(timed.status.success());
    assert_eq!(plain.stdout, timed.stdout, "the plan is the same");
    let err = String::from_utf8_lossy(&timed.stderr);
    let stages: Vec<&str> = err
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(
        stages,
        ["read", "parse", "check", "evaluate", "passes", "warnings", "write", "total"],
        "{err}"
    );
    assert!(err.lines().all(|l| l.ends_with(" ms")), "{err}");
}

#[test]
fn a_let_inside_a_block_does_not_change_the_variable_outside() {
    let dir = std::env::temp_dir().join(format!("msclc-scopes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("shadow.mscl");
    std::fs::write(
        &path,
        "program \"p\" {\n    collective = test_collective(1, input_size: 1, output_size: 1)\n}\n\
         let x = 1\nif true {\n    let x = 2\n}\nassert(x == 1, \"x leaked from the if\")\n\
         for i in 0..2 {\n    let x = 3\n}\nassert(x == 1, \"x leaked from the for\")\n\
         fn f(x: int) -> int {\n    if true {\n        let x = 4\n    }\n    return x\n}\n\
         assert(f(5) == 5, \"x leaked inside a function\")\n",
    )
    .unwrap();
    let out = msclc(&["check", path.to_str().unwrap()]);
    std::fs::remove_dir_all(&dir).ok();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The executor's limits are warnings of compile and `check`, on standard
/// error, at the program line of the op that crosses one, with the loop
/// values then; the plan is still written.
#[test]
fn an_executor_limit_is_a_located_warning() {
    let program = "tests/cli/ring_one_block.mscl";
    let out = msclc(&[program, "-D", "n=16"]);
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with(
            "warning[W0502]: rank 0 thread block 0 (and 15 more thread block(s)) has 90 ops; the MSCCL++ executor allows at most 64"
        ),
        "{err}"
    );
    assert!(err.contains("ring_one_block.mscl:16:9"), "{err}");
    assert!(err.contains("op 65 of rank 0's thread block 0"), "{err}");
    assert!(err.contains("= when r = 0, step = 10"), "{err}");
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a plan");
    assert_eq!(plan["gpus"].as_array().map(Vec::len), Some(16));
    // Under the limit: nothing to say.
    let fine = msclc(&["check", program, "-D", "n=8"]);
    assert_eq!(fine.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&fine.stderr), "");
}

/// `--deny-warnings` makes warnings errors: exit 1, no plan; `--quiet`
/// keeps them off the terminal.
#[test]
fn warnings_can_be_denied_or_quietened() {
    let program = "tests/cli/ring_one_block.mscl";
    let denied = msclc(&[program, "-D", "n=16", "--deny-warnings"]);
    assert_eq!(denied.status.code(), Some(1));
    assert!(denied.stdout.is_empty(), "no plan is written");
    let err = String::from_utf8_lossy(&denied.stderr);
    assert!(err.contains("error[W0502]: rank 0 thread block 0"), "{err}");
    assert!(
        err.contains("--deny-warnings makes this warning an error"),
        "{err}"
    );
    let checked = msclc(&["check", program, "-D", "n=16", "--deny-warnings"]);
    assert_eq!(checked.status.code(), Some(1));
    let quiet = msclc(&["check", program, "-D", "n=16", "--quiet"]);
    assert_eq!(quiet.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&quiet.stderr), "");
}

/// `if` is also an expression: the channel to the previous rank is the one
/// to the next when there are only two ranks.
#[test]
fn if_expressions_choose_a_value() {
    let dir = std::env::temp_dir().join(format!("msclc-if-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let program = |prev: &str| {
        format!(
            "param n: int = 2\nprogram \"ring\" {{\n    collective = allgather(n, chunk_factor: 1, inplace: false)\n}}\n\
             for r in 0..n {{\n    let next = memory_channel((r + 1) % n, r)\n    let prev = {prev}\n\
             \x20   rank(r).copy(rank(r).output[r], rank(r).input[0], tb: 0)\n\
             \x20   prev.signal(tb: 0)\n    next.wait(tb: 0)\n\
             \x20   next.put(rank((r + 1) % n).output[r], rank(r).input[0], tb: 0)\n\
             \x20   next.signal(tb: 0)\n    prev.wait(tb: 0)\n}}\n"
        )
    };
    let with_if = dir.join("with_if.mscl");
    let plain = dir.join("plain.mscl");
    std::fs::write(
        &with_if,
        program("if n > 2 { memory_channel((r + n - 1) % n, r) } else { next }"),
    )
    .unwrap();
    std::fs::write(&plain, program("next")).unwrap();
    let a = msclc(&[with_if.to_str().unwrap()]);
    let b = msclc(&[plain.to_str().unwrap()]);
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    assert_eq!(a.stdout, b.stdout, "with two ranks, `prev` is `next`");
    let sim = msclc(&["sim", with_if.to_str().unwrap()]);
    assert!(
        String::from_utf8_lossy(&sim.stdout).starts_with("verified"),
        "{}",
        String::from_utf8_lossy(&sim.stdout)
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// A reader that stops early (`| head -c 10`) ends msclc quietly: no
/// "Broken pipe" error, no panic.
#[test]
fn a_closed_pipe_ends_quietly() {
    use std::io::Read;
    use std::process::Stdio;
    for args in [
        &[
            "examples/mscclpp/single_node/allreduce.mscl",
            "-D",
            "num_gpus=64",
            "-q",
        ][..],
        &[
            "sim",
            "--json",
            "examples/mscclpp/single_node/allreduce.mscl",
            "-D",
            "num_gpus=32",
        ][..],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_msclc"))
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("msclc runs");
        let mut head = [0u8; 10];
        child.stdout.take().unwrap().read_exact(&mut head).unwrap();
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        child.wait().unwrap();
        assert!(
            !err.contains("Broken pipe") && !err.contains("panicked"),
            "{args:?}: {err}"
        );
    }
}

/// `--pretty` indents JSON; with `--emit cuda` it is a usage error.
#[test]
fn pretty_cuda_is_a_usage_error() {
    let out = msclc(&[
        "examples/simple_allgather.mscl",
        "--emit",
        "cuda",
        "--pretty",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--pretty indents JSON plans"));
}

/// `check` and `--emit cuda` take a JSON plan as `sim` and `run` do: the
/// plan is read and checked (no parse error echoing the JSON), and a plan
/// has no params to set.
#[test]
fn check_and_emit_cuda_take_a_json_plan() {
    let dir = std::env::temp_dir().join(format!("msclc-plan-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let plan = dir.join("allgather.json");
    let plan = plan.to_str().unwrap();
    assert!(msclc(&["examples/simple_allgather.mscl", "-o", plan])
        .status
        .success());
    let checked = msclc(&["check", plan]);
    assert_eq!(
        checked.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&checked.stderr)
    );
    let from_plan = msclc(&[plan, "--emit", "cuda"]);
    let from_program = msclc(&["examples/simple_allgather.mscl", "--emit", "cuda"]);
    assert!(from_plan.status.success());
    assert_eq!(from_plan.stdout, from_program.stdout, "the same kernel");
    let defined = msclc(&["check", plan, "-D", "num_gpus=4"]);
    assert_eq!(defined.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&defined.stderr).contains("is a JSON plan, which has no params")
    );
    // A broken plan: one line that says what is wrong, not the JSON again.
    let broken = dir.join("broken.json");
    std::fs::write(
        &broken,
        format!("{{\"name\": \"x\", \"pad\": \"{}\"}}", "y".repeat(100_000)),
    )
    .unwrap();
    let out = msclc(&["check", broken.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("broken.json") && err.len() < 1_000, "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

/// A signal and a wait on channels that do not pair: the reference compiler
/// emits the plan (its counts per pair of ranks balance) and the executor
/// hangs on it, so it is a warning (an error with `--deny-warnings`) at the
/// signal that names both channels, where they are made, and where the peer
/// waits instead, in the order of the lines.
#[test]
fn a_wait_on_the_wrong_channel_points_at_the_channel_pair() {
    let program = "tests/cli/wait_on_the_wrong_channel.mscl";
    let denied = msclc(&["check", program, "--deny-warnings"]);
    assert_eq!(denied.status.code(), Some(1));
    let out = msclc(&["check", program]);
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("warning[").count(), 1, "one warning:\n{err}");
    assert!(
        err.contains("warning[W0501]: signal/wait mismatch on memory channels: rank 0's memory channel 0 (to rank 1) signals 1 time, but its paired channel back, rank 1's memory channel 0 (to rank 0), waits 0 times"),
        "{err}"
    );
    assert!(err.contains("wait_on_the_wrong_channel.mscl:13:9"), "{err}");
    let labels = [
        "rank 0's memory channel 0 (to rank 1) and its paired channel back are made here",
        "1 signal more than rank 1 waits for on the paired channel",
        "rank 1 waits on its memory channel 1 here, which pairs with rank 0's channel 1",
    ];
    let at: Vec<usize> = labels
        .iter()
        .map(|l| err.find(l).unwrap_or_else(|| panic!("no `{l}` in:\n{err}")))
        .collect();
    assert!(
        at.windows(2).all(|w| w[0] < w[1]),
        "labels out of order:\n{err}"
    );
    assert!(err.contains("= when r = 0"), "{err}");
    assert!(err.contains("the executor hangs on it"), "{err}");
}

/// Every command ends the same way: 0 done, 1 the program or plan is
/// wrong, 2 msclc could not do what was asked.
#[test]
fn exit_codes_are_the_same_for_every_command() {
    let dir = std::env::temp_dir().join(format!("msclc-exit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let wrong = dir.join("wrong.mscl");
    std::fs::write(
        &wrong,
        "program \"w\" {\n    collective = allgather(2, chunk_factor: 1, inplace: false)\n}\nlet x = nope\n",
    )
    .unwrap();
    let wrong = wrong.to_str().unwrap();
    let missing = "/nonexistent/dir/x.mscl";
    let fine = "examples/simple_allgather.mscl";
    for command in [&[][..], &["check"], &["sim"]] {
        let with = |args: &[&str]| {
            let mut all = command.to_vec();
            all.extend_from_slice(args);
            let out = msclc(&all);
            (
                out.status.code(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            )
        };
        let (code, err) = with(&[fine]);
        assert_eq!(code, Some(0), "{command:?} {fine}: {err}");
        let (code, err) = with(&[wrong]);
        assert_eq!(code, Some(1), "{command:?} on a wrong program: {err}");
        assert!(err.contains("`nope` is not defined"), "{err}");
        let (code, err) = with(&[missing]);
        assert_eq!(code, Some(2), "{command:?} on a missing file: {err}");
        assert!(err.contains("cannot read /nonexistent/dir/x.mscl"), "{err}");
        let (code, err) = with(&[fine, "-D", "no_such_param=1"]);
        assert_eq!(code, Some(2), "{command:?} with an unknown -D: {err}");
        let (code, _) = with(&[fine, "--no-such-option"]);
        assert_eq!(code, Some(2), "{command:?} with an unknown option");
    }
    let help = msclc(&["--help"]);
    assert!(String::from_utf8_lossy(&help.stdout).contains("Exit codes (every command): 0 done"));
}

/// A diagnostic shows a window of a megabyte-long line around its label,
/// with the label's real column, and no terminal control characters.
#[test]
fn diagnostics_cut_long_lines_and_show_control_characters_as_question_marks() {
    let dir = std::env::temp_dir().join(format!("msclc-shown-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let header =
        "program \"s\" {\n    collective = allgather(2, chunk_factor: 1, inplace: false)\n}\n";
    let long = dir.join("long.mscl");
    let items = "1, ".repeat(300_000);
    std::fs::write(&long, format!("{header}let y = [{items}nope, 1]\n")).unwrap();
    let out = msclc(&["check", long.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.len() < 2_000, "{} bytes of diagnostic", err.len());
    let column = "let y = [".len() + items.len() + 1;
    assert!(err.contains(&format!("long.mscl:4:{column}")), "{err}");
    assert!(err.contains("1, 1, nope, 1]") && err.contains('…'), "{err}");
    let controls = dir.join("controls.mscl");
    std::fs::write(
        &controls,
        format!("{header}let z = \"\u{1b}[2J\u{202e}\" + 1\n"),
    )
    .unwrap();
    let out = msclc(&["check", controls.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !err.contains('\u{1b}') && !err.contains('\u{202e}'),
        "{err:?}"
    );
    assert!(err.contains("let z = \"?[2J???\" + 1"), "{err}");
}

/// A full standard output or error (`> /dev/full`) ends any command with
/// E0801 and exit code 2, said on the other stream where it can be, never
/// with a panic.
#[cfg(target_os = "linux")]
#[test]
fn a_full_output_stream_is_error_e0801_not_a_panic() {
    let full = || {
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full")
    };
    let quick = "examples/simple_allgather.mscl";
    let race = "examples/mscclpp/single_node/allgather_ring.mscl";
    let cases: &[&[&str]] = &[
        &[quick],
        &["sim", quick],
        &["sim", quick, "--json"],
        &["sim", quick, "--timing", "h100-nvls", "--size", "1K:4K"],
        &["sim", race, "-D", "num_gpus=2"],
        &["fmt", "--check", quick],
        &["--help"],
    ];
    for args in cases {
        let out = Command::new(env!("CARGO_BIN_EXE_msclc"))
            .args(*args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdout(full())
            .output()
            .expect("msclc runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        // `fmt --check` of a formatted file prints nothing: nothing fails.
        let wrote = *args != ["fmt", "--check", quick];
        if wrote {
            assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
            assert!(
                err.contains("error[E0801]: cannot write standard output"),
                "{args:?}: {err}"
            );
        }
    }
    // Warnings and errors go to standard error: full, it is the exit code
    // that says so.
    let out = Command::new(env!("CARGO_BIN_EXE_msclc"))
        .args([
            "check",
            "examples/mscclpp/unit_tests/signal_wait/signal_wait_fuse_test.mscl",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stderr(full())
        .output()
        .expect("msclc runs");
    assert_eq!(out.status.code(), Some(2));
}

/// A plan whose data op lacks its sources or destinations (`rppkt` or
/// `repkt` with no `src_buff`, `upkt` with no `dst_buff`, ...) is refused by
/// every command that reads it, at the op's JSON path; the CUDA back end,
/// handed such a plan by other means, says so instead of panicking.
#[test]
fn a_data_op_without_its_buffers_is_refused_at_its_path() {
    let dir = std::env::temp_dir().join(format!("msclc-cli-nobuf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cases = [
        ("single_node/allgather_pkt_rppkt.mscl", "rppkt", "src_buff"),
        ("single_node/allgather_pkt_rppkt.mscl", "upkt", "dst_buff"),
        ("single_node/allreduce_pkt.mscl", "respkt", "src_buff"),
        ("single_node/allreduce_pkt.mscl", "ppkt", "dst_buff"),
    ];
    for (example, name, key) in cases {
        let path = format!("examples/mscclpp/{example}");
        let out = msclc(&[&path, "-D", "num_gpus=2"]);
        let mut plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let mut at = None;
        'find: for (t, tb) in plan["gpus"][0]["threadblocks"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .enumerate()
        {
            for (i, op) in tb["ops"].as_array_mut().unwrap().iter_mut().enumerate() {
                if op["name"] == name {
                    op.as_object_mut().unwrap().remove(key);
                    at = Some(format!("gpus[0].threadblocks[{t}].ops[{i}]"));
                    break 'find;
                }
            }
        }
        let at = at.expect("the plan has the op");
        let file = dir.join(format!("{name}.json"));
        std::fs::write(&file, plan.to_string()).unwrap();
        let file = file.to_str().unwrap();
        for args in [
            vec!["check", file],
            vec!["sim", file],
            vec![file, "--emit", "cuda"],
        ] {
            let out = msclc(&args);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
            assert!(err.contains(&format!("a `{name}` op moves data from its src_buff to its dst_buff, and this one has no {key} entry")), "{args:?}: {err}");
            assert!(err.contains(&format!("at {at}")), "{args:?}: {err}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
    // The back end, given such an op in a plan built in memory.
    let compiled = msclc::driver::compile(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples/mscclpp/single_node/allgather_pkt_rppkt.mscl"),
        &[("num_gpus".to_string(), "2".to_string())],
    );
    let mut plan = compiled.result.expect("compiles");
    let op = plan.ranks[0]
        .threadblocks
        .iter_mut()
        .flat_map(|tb| &mut tb.ops)
        .find(|op| op.name == msclc::ir::OpName::ReadPutPackets)
        .expect("an rppkt");
    op.src.clear();
    let d = msclc::back::cuda::generate(&plan).expect_err("no CUDA form");
    let text = compiled.sources.render(&[d]);
    assert!(
        text.contains("error[E0605]: a `rppkt` op with no source"),
        "{text}"
    );
    assert!(text.contains("= at gpus[0].threadblocks["), "{text}");
}

/// Text from the input cannot forge a line of msclc's output: a plan's
/// strings and a program's assertion message have their control
/// characters escaped in messages; text that is not UTF-8 is refused at
/// its byte.
#[test]
fn input_text_cannot_forge_a_message_line() {
    let dir = std::env::temp_dir().join(format!("msclc-cli-forge-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = msclc(&["examples/simple_allgather.mscl"]);
    let mut plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    plan["gpus"][0]["threadblocks"][0]["ops"][0]["name"] =
        "nop\nerror[E0000]: forged\u{1b}[2J".into();
    let forged_plan = dir.join("forged.json");
    std::fs::write(&forged_plan, plan.to_string()).unwrap();
    let program = dir.join("forged.mscl");
    std::fs::write(
        &program,
        "program \"p\" { collective = allreduce(1, chunk_factor: 1, inplace: true) }\nassert(false, \"no\\nerror[E0000]: forged\")\n",
    )
    .unwrap();
    for file in [&forged_plan, &program] {
        let out = msclc(&["check", file.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.lines().any(|l| l.starts_with("error[E0000]")), "{err}");
        assert!(err.contains("\\nerror[E0000]: forged"), "{err}");
        assert!(!err.contains('\u{1b}'), "{err}");
    }
    let mut bytes = plan.to_string().into_bytes();
    bytes.insert(30, 0xff);
    let not_utf8 = dir.join("not_utf8.json");
    std::fs::write(&not_utf8, bytes).unwrap();
    let out = msclc(&["check", not_utf8.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("it is not UTF-8: byte 30 (line 1, column 31)"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Sizes no message can have are usage errors, before anything is
/// compiled or a GPU looked for: exit 2 with the reason (an empty table
/// and exit 0 once).
#[test]
fn sizes_that_cannot_run_are_usage_errors() {
    for (size, why) in [
        ("0:0", "a message has at least 1 byte"),
        ("0:1K", "a message has at least 1 byte"),
        ("2M:1M", "the smallest size is larger than the largest"),
    ] {
        for command in [
            vec!["run", "examples/simple_allgather.mscl", "--size", size],
            vec![
                "sim",
                "examples/simple_allgather.mscl",
                "--timing",
                "h100-nvlink",
                "--size",
                size,
            ],
        ] {
            let out = msclc(&command);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{command:?}: {err}");
            assert!(err.contains(why), "{command:?}: {err}");
            assert!(out.stdout.is_empty(), "{command:?}");
        }
    }
}

/// `msclc run --help` gives the exit codes docs/errors.md gives: 2, not 1,
/// when there is no GPU to run on.
#[test]
fn run_help_gives_the_documented_exit_codes() {
    let out = msclc(&["run", "--help"]);
    let help = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(help.contains("Exit code 1 when a result is wrong or a kernel stops waiting; 2 when there is no GPU, NVRTC or size to run at"), "{help}");
}

/// `check --params`: the params a program declares, as JSON, for tools
/// that set them (Python's msclc.mscclpp); a program that does not parse
/// is its diagnostic, and `-D` alongside is a usage error.
#[test]
fn check_lists_the_declared_params() {
    let out = msclc(&["check", "examples/allreduce_nvls.mscl", "--params"]);
    assert_eq!(out.status.code(), Some(0));
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let names: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "name",
            "world_size",
            "instances",
            "protocol",
            "num_threads_per_block",
            "min_message_size",
            "max_message_size"
        ]
    );
    assert_eq!(listed[3]["type"], "protocol");
    assert_eq!(listed[3]["default"], "Simple");
    assert_eq!(listed[0]["default"], "\"allreduce_nvls\"");
    let dir = std::env::temp_dir().join(format!("msclc-params-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.mscl");
    std::fs::write(&bad, "param x int\n").unwrap();
    let out = msclc(&["check", bad.to_str().unwrap(), "--params"]);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad.mscl:1:9"));
    let both = msclc(&[
        "check",
        "examples/allreduce_nvls.mscl",
        "--params",
        "-D",
        "x=1",
    ]);
    assert_eq!(both.status.code(), Some(2));
}
