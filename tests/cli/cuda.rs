//! `--emit cuda` and `msclc run` as far as a machine without a GPU goes: the source, and the usage errors.

use super::*;

#[test]
fn emit_cuda_writes_one_function_per_block_shape_and_a_table_row_per_block() {
    let out = msclc(&["examples/simple_allgather.mscl", "--emit", "cuda"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).expect("utf-8");
    assert!(text.contains("#define MSCL_NRANKS 2"));
    // The two ranks' blocks differ only in their numbers: one shape.
    assert!(text.contains("void mscl_shape0(const MsclArgs& a, mscl_row P)"));
    // Its parameters (buffer and chunk numbers, sync words) are small: the
    // table is of 2-byte entries.
    assert!(text.contains("#define MSCL_PARAM u16\n"), "{text}");
    assert!(text.contains("MSCL_TABLE mscl_param mscl_params[] = {"));
    assert!(!text.contains("void mscl_shape1("));
    assert!(
        text.contains("mscl_block_shape[] = {\n  0, 0,\n};"),
        "{text}"
    );
    assert!(text.contains("extern \"C\" __global__"));
    assert!(!text.contains("#include <cuda"), "needs no CUDA header");
}

/// A plan with no thread block: its CUDA is still a source that compiles
/// (tests/nvrtc.rs compiles it), with a placeholder row in each table, as
/// C++ has no empty arrays; `msclc run` has no kernel to launch and says so
/// before it looks for a GPU.
#[test]
fn a_plan_without_blocks_has_cuda_but_nothing_to_run() {
    let out = msclc(&["tests/cli/no_blocks.mscl", "--emit", "cuda"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).expect("utf-8");
    for table in ["mscl_block_shape", "mscl_block_params", "mscl_params"] {
        assert!(
            text.contains(&format!("{table}[] = {{\n  0,\n}};")),
            "{table}: {text}"
        );
    }
    let out = msclc(&["run", "tests/cli/no_blocks.mscl"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("E0605") && err.contains("no thread block on any rank"),
        "{err}"
    );
    assert!(!err.contains("--nranks 2"), "{err}");
    // A collective of one rank: the same, and how to have a kernel.
    let out = msclc(&["run", "examples/simple_allgather.mscl", "--nranks", "1"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("E0605"), "{err}");
    assert!(err.contains("give --nranks 2 or more"), "{err}");
}

/// The executor counts a pipeline's iterations in 16 bits: a size at which
/// one would run more is one the plan cannot run at (E0808 when no size
/// of the range can), said before a GPU is looked for, where the kernel
/// would otherwise loop for hours at a unit of a byte (found by running
/// fuzzed programs on a GPU). A size below the count is left to the GPU.
#[test]
fn sizes_past_a_pipelines_iteration_count_cannot_run() {
    let out = msclc(&["run", "tests/cli/long_pipeline.mscl", "--size", "4K:8K"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("E0808") && err.contains("a pipeline runs 409600 iterations at this size"),
        "{err}"
    );
    let out = msclc(&["run", "tests/cli/long_pipeline.mscl", "--size", "1K:1K"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("E0808"), "{err}");
}

/// The executor keeps an op's byte offsets and sizes in 32 bits: a size
/// where one passes 4 GiB is refused with the byte it reaches, and 4 GiB
/// itself, whose last chunk ends at the 4 GiB boundary, is not.
#[test]
fn sizes_past_32_bit_offsets_cannot_run() {
    let program = "examples/mscclpp/single_node/allreduce.mscl";
    let out = msclc(&["run", program, "--size", "8G:8G"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    // 8 ranks, 64 chunks of 128 MiB: the last starts at 63 * 128 MiB.
    assert!(
        err.contains("E0808")
            && err.contains("an op's byte offset or size reaches 8455716864, past the 32 bits"),
        "{err}"
    );
    let out = msclc(&["run", program, "--size", "4G:4G"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("E0808"), "{err}");
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
    let dir = common::scratch("nranks");
    let plan = dir.join("plan.json");
    let made = msclc(&[
        "examples/simple_allgather.mscl",
        "-o",
        plan.to_str().unwrap(),
    ]);
    assert!(made.status.success());
    let out = msclc(&["run", plan.to_str().unwrap(), "--nranks", "8"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("a plan for 2 ranks"), "{err}");
    // -D setting the param --nranks would set: the two disagree.
    let allreduce = "examples/mscclpp/single_node/allreduce.mscl";
    let out = msclc(&["sim", allreduce, "-D", "num_gpus=4", "--nranks", "8"]);
    assert_eq!(out.status.code(), Some(2), "a usage error");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--nranks 8 and -D num_gpus=4 disagree"),
        "{err}"
    );
    // A param whose default follows the one -D sets fits, and is used.
    let follows = dir.join("follows.mscl");
    std::fs::write(&follows, "param num_gpus: int = 2\nparam world_size: int = num_gpus\nprogram \"x\" {\n    collective = allgather(world_size, chunk_factor: 1, inplace: true)\n}\nfor r in 0..world_size {\n    rank(r).copy(rank(r).output[r], rank(r).input[0], tb: 0)\n}\n").unwrap();
    let out = msclc(&[
        "sim",
        follows.to_str().unwrap(),
        "-D",
        "num_gpus=2",
        "--nranks",
        "4",
        "--json",
    ]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(report["ranks"], 4, "{report}");
    // A param that fails at N but does not decide the rank count (a peer
    // index) is not blamed: no single param gives N.
    let peer = dir.join("peer.mscl");
    std::fs::write(&peer, "param nodes: int = 1\nparam peer: int = 1\nprogram \"x\" {\n    collective = allgather(2 * nodes, chunk_factor: 1, inplace: true)\n}\nlet channel = memory_channel(peer, 0)\nchannel.signal(tb: 0, relaxed: true)\nmemory_channel(0, peer).wait(tb: 0, relaxed: true)\n").unwrap();
    let out = msclc(&["sim", peer.to_str().unwrap(), "--nranks", "4"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("E0804") && !err.contains("with peer = 4"),
        "{err}"
    );
    // What stops the program at that many ranks is said, not hidden.
    let out = msclc(&["sim", allreduce, "--nranks", "300", "--max-ops", "100000"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("error[E0401]: too many ops")
            && err.contains("with num_gpus = 300, for --nranks 300"),
        "{err}"
    );
}

/// What a plan cannot run as anywhere is said before a GPU is looked for:
/// a JSON plan whose signals and waits do not pair is refused by `run` as
/// `check` refuses it (E0308), and a switch reduce with no CUDA form is
/// E0605 under `run` as under `--emit cuda`, not "no GPU".
#[test]
fn run_refuses_what_no_gpu_could_run_before_looking_for_one() {
    let dir = common::scratch("run-checks");
    let plan = dir.join("unpaired.json");
    assert!(msclc(&[
        "examples/simple_allgather.mscl",
        "-o",
        plan.to_str().unwrap()
    ])
    .status
    .success());
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&plan).unwrap()).unwrap();
    // Rank 1 no longer signals: rank 0 would wait for ever.
    let ops = json["gpus"][1]["threadblocks"][0]["ops"]
        .as_array_mut()
        .unwrap();
    let signal = ops.iter().position(|op| op["name"] == "signal").unwrap();
    ops.remove(signal);
    std::fs::write(&plan, json.to_string()).unwrap();
    for command in [&["check"][..], &["run", "--size", "1K:1K"]] {
        let out = msclc(&[command, &[plan.to_str().unwrap()]].concat());
        assert_eq!(out.status.code(), Some(1), "{command:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("error[E0308]"), "{command:?}: {err}");
    }
    let switch_reduce = "examples/mscclpp/unit_tests/switch_reduce_test.mscl";
    let out = msclc(&["run", switch_reduce, "--size", "1K:1K"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("error[E0605]"), "{err}");
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
    let dir = common::scratch("plan");
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
    // -D has nothing to set in a plan, for any command that reads one.
    for command in [&["check"][..], &["sim"], &["run", "--size", "1K:2K"], &[]] {
        let defined = msclc(&[command, &[plan, "-D", "num_gpus=4"]].concat());
        assert_eq!(defined.status.code(), Some(2), "{command:?}");
        assert!(
            String::from_utf8_lossy(&defined.stderr)
                .contains("is a JSON plan, which has no params"),
            "{command:?}"
        );
    }
    // Nor anything to evaluate: a bound on evaluation is refused, not
    // silently ignored.
    for bound in [&["--max-ops", "5"][..], &["--threads", "2"]] {
        for command in [&["check"][..], &["sim"], &["run", "--size", "1K:2K"], &[]] {
            let bounded = msclc(&[command, &[plan], bound].concat());
            assert_eq!(bounded.status.code(), Some(2), "{command:?} {bound:?}");
            let said = String::from_utf8_lossy(&bounded.stderr);
            assert!(
                said.contains(&format!("error[E0803]: {}: ", bound[0]))
                    && said.contains("is a JSON plan, read as written"),
                "{command:?} {bound:?}: {said}"
            );
        }
    }
    // Nor to list or vary (the plan is not read as a program's text).
    let tune = ["tune", "--timing", "h100-nvlink", "--size", "1K:1M"];
    for command in [&["check", "--params"][..], &tune] {
        let defined = msclc(&[command, &[plan]].concat());
        assert_eq!(defined.status.code(), Some(2), "{command:?}");
        assert!(
            String::from_utf8_lossy(&defined.stderr)
                .contains("is a JSON plan, which has no params"),
            "{command:?}"
        );
    }
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
    // Near 2^64 bytes: the size the executor checks is worked out without
    // overflow (a debug build stopped there), and is past the plan's.
    let size = "17179869183G:17179869183G";
    let out = msclc(&["run", "examples/simple_allgather.mscl", "--size", size]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("18446744072635809792 B is outside the plan's message sizes"),
        "{err}"
    );
}

/// Options that could only be ignored or misread are usage errors: no
/// timed launch, a wait budget under a millisecond (the kernel would give
/// up at once), an element type for CUDA source or a JSON plan (only a
/// cubin is compiled for one), an architecture the kernels cannot use.
#[test]
fn options_that_would_be_ignored_or_misread_are_usage_errors() {
    let ag = "examples/simple_allgather.mscl";
    for (args, why) in [
        (
            vec!["run", ag, "--iters", "0"],
            "`0` is not a count of launches from 1 to 1,000,000",
        ),
        (
            vec!["run", ag, "--warmup", "2000000"],
            "`2000000` is not a count of launches from 0 to 1,000,000",
        ),
        // Past what any integer type holds: said the same way.
        (
            vec!["run", ag, "--iters", "99999999999999999999"],
            "is not a count of launches from 1 to 1,000,000",
        ),
        (vec!["run", ag, "--timeout", "1e-12"], "from 0.001 to 1e9"),
        (
            vec![ag, "--dtype", "float16"],
            "--dtype and --no-cache are for --emit cubin",
        ),
        (
            vec![ag, "--emit", "cuda", "--dtype", "bfloat16"],
            "are for --emit cubin",
        ),
        // What the kernels cannot be built for, before NVRTC is looked for.
        (
            vec![ag, "--emit", "cubin", "--arch", "sm_60", "-o", "k.cubin"],
            "they need sm_70 or later",
        ),
        (
            vec![
                ag, "--emit", "cubin", "--arch", "sm_75", "--dtype", "bfloat16", "-o", "k.cubin",
            ],
            "bfloat16 kernels need sm_80 or later",
        ),
    ] {
        let out = msclc(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(why), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

/// A reduction adds whole elements: one split over a thread-block group
/// at a `buffer_alignment` that cuts the run's elements cannot run (the GPU
/// traps on the misaligned access), and `run` says so before a GPU is
/// looked for; the same plan runs in an element type the alignment fits.
#[test]
fn reductions_that_would_cut_elements_cannot_run() {
    let program = "tests/cli/reduce_parts_cut_elements.mscl";
    let dir = common::scratch("cut");
    for dtype in ["float32", "float16"] {
        let out = msclc(&["run", program, "--size", "64:128", "--dtype", dtype]);
        let err = String::from_utf8_lossy(&out.stderr);
        let why = "starts its parts at multiples of the buffer_alignment, 2 B";
        let fits = dtype == "float16";
        assert_eq!(!err.contains(why), fits, "{dtype}: {err}");
        if !fits {
            assert_eq!(out.status.code(), Some(2), "{dtype}: {err}");
        }
        // The cubin `run` would load is refused as `run` refuses it, and
        // before NVRTC is looked for.
        let cubin = dir.join("cut.cubin");
        let to = cubin.to_str().unwrap();
        let out = msclc(&[
            program,
            "--emit",
            "cubin",
            "--arch",
            "sm_90",
            "--no-cache",
            "--dtype",
            dtype,
            "-o",
            to,
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(!err.contains(why), fits, "{dtype}: {err}");
        if !fits {
            assert!(
                err.contains("error[E0803]: no cubin for float data"),
                "{err}"
            );
            assert_eq!(out.status.code(), Some(2), "{dtype}: {err}");
            assert!(!cubin.exists());
        }
        std::fs::remove_file(&cubin).ok();
    }
    // The same reduction in a pipeline's body: its parts are cut alike.
    let plan = dir.join("cut.json");
    assert!(msclc(&[program, "-o", plan.to_str().unwrap()])
        .status
        .success());
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&plan).unwrap()).unwrap();
    let mut wrapped = 0;
    for tb in json["gpus"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .flat_map(|g| g["threadblocks"].as_array_mut().unwrap().iter_mut())
    {
        let ops = tb["ops"].as_array_mut().unwrap();
        if let Some(at) = ops.iter().position(|op| op.get("tbg_info").is_some()) {
            let body: Vec<serde_json::Value> = ops.drain(at..at + 1).collect();
            let pipeline = serde_json::json!({"name": "pipeline", "iter_context": {"unit_size": 1 << 20, "num_chunks": 1}, "ops": body});
            ops.insert(at, pipeline);
            wrapped += 1;
        }
    }
    assert!(wrapped > 0);
    std::fs::write(&plan, json.to_string()).unwrap();
    let out = msclc(&["run", plan.to_str().unwrap(), "--size", "64:128"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("starts its parts at multiples of the buffer_alignment, 2 B"),
        "{err}"
    );
}

/// An NVRTC the loader refuses is said so with the loader's reason.
#[test]
fn an_nvrtc_that_does_not_load_says_why() {
    let dir = common::scratch("not-nvrtc");
    let text = dir.join("libnvrtc.so.12");
    std::fs::write(&text, "not a library, only text\n".repeat(20)).unwrap();
    for (library, reason) in [
        (text, "invalid ELF header"),
        (dir.join("nowhere.so"), "No such file"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_msclc"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("MSCLC_NVRTC", &library)
            .args([
                "examples/simple_allgather.mscl",
                "--emit",
                "cubin",
                "--arch",
                "sm_90",
            ])
            .arg("--no-cache")
            .arg("-o")
            .arg(dir.join("k.cubin"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains("cannot load NVRTC from") && err.contains(reason),
            "{err}"
        );
    }
}

/// `msclc run --help` gives the exit codes docs/errors.md gives: 2, not 1,
/// when there is no GPU to run on; and offers the CUDA-graph timing
/// docs/cuda.md describes.
#[test]
fn run_help_gives_the_documented_exit_codes() {
    let out = msclc(&["run", "--help"]);
    let help = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(help.contains("Exit code 1 when a result is wrong or a kernel stops waiting; 2 when there is no GPU, NVRTC or size to run at"), "{help}");
    assert!(
        help.contains("--graph Capture each size's timed launches in one CUDA graph"),
        "{help}"
    );
}
