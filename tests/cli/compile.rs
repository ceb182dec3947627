//! Compiling from the command line: the plan written, `-D` settings, `--timings`, `check --params`, and what the language means as a user sees it in the plan.

use super::*;

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

/// `-o -` is standard output, as in most tools: the plan is printed, and
/// no file named `-` appears where msclc ran.
#[test]
fn dash_output_is_standard_output() {
    let dir = common::scratch("dash");
    let example =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/simple_allgather.mscl");
    let out = Command::new(env!("CARGO_BIN_EXE_msclc"))
        .arg(&example)
        .args(["-o", "-"])
        .current_dir(&dir)
        .output()
        .expect("msclc runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a plan on stdout");
    assert_eq!(plan["gpus"].as_array().map(Vec::len), Some(2));
    assert!(!dir.join("-").exists(), "a file named - was written");
}

/// A file is imported once, whatever path names it (`lib/x.mscl` and
/// `./lib/x.mscl`), and the main file imported back (by itself, or by a
/// file it imports) is the main file: none is read twice, where each
/// read defined its functions again (E0106) or, for the main file, met
/// its program block (E0004).
#[test]
fn a_file_imported_by_two_paths_or_back_into_the_main_file_is_read_once() {
    let dir = common::scratch("imported-once");
    std::fs::create_dir_all(dir.join("lib")).unwrap();
    std::fs::write(dir.join("lib/x.mscl"), "fn x() -> int { return 1 }\n").unwrap();
    std::fs::write(
        dir.join("lib/y.mscl"),
        "import \"x.mscl\"\nimport \"../main.mscl\"\nfn y() -> int { return x() + 1 }\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("main.mscl"),
        "import \"./lib/x.mscl\"\nimport \"lib/y.mscl\"\nimport \"main.mscl\"\nprogram \"p\" { collective = allgather(2) }\nassert(x() + y() == 3, \"one x\")\n",
    )
    .unwrap();
    let checks = |main: &std::path::Path| {
        let out = msclc(&["check", main.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
    };
    checks(&dir.join("main.mscl"));
    // Thirty files, each importing the next by two paths: read once each,
    // where each path was a file of its own (2^30 of them), and a file
    // importing itself by ever longer paths read once, not until the
    // path grew too long to open.
    std::fs::create_dir_all(dir.join("chain/a")).unwrap();
    for i in 0..30 {
        std::fs::write(
            dir.join(format!("chain/d{i}.mscl")),
            format!("import \"a/../d{next}.mscl\"\nimport \"d{next}.mscl\"\nimport \"../chain/d{i}.mscl\"\nfn f{i}() {{ }}\n", next = i + 1),
        )
        .unwrap();
    }
    std::fs::write(dir.join("chain/d30.mscl"), "fn f30() { }\n").unwrap();
    let chain = dir.join("chain/main.mscl");
    std::fs::write(
        &chain,
        "import \"d0.mscl\"\nprogram \"p\" { collective = allgather(2) }\nf0()\nf30()\n",
    )
    .unwrap();
    checks(&chain);
}

/// `-` as the input is standard input: the plan is the file's, once for
/// every command that reads it; imports are found from the working
/// directory, and diagnostics call the program `<stdin>`.
#[test]
fn dash_input_is_standard_input() {
    let example = "examples/mscclpp/single_node/allreduce.mscl";
    let text = std::fs::read_to_string(example).unwrap();
    let from_file = msclc(&[example, "-D", "num_gpus=4"]);
    let from_stdin = piped(&["-", "-D", "num_gpus=4"], &text);
    assert!(
        from_stdin.status.success(),
        "{}",
        String::from_utf8_lossy(&from_stdin.stderr)
    );
    assert_eq!(from_stdin.stdout, from_file.stdout);
    let sim = piped(&["sim", "-", "-q"], &text);
    assert_eq!(sim.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&sim.stdout).starts_with("verified: allreduce on 8 ranks"));
    // Evaluated on several threads (32 ranks), each shard parses the one
    // text read.
    let sharded = piped(&["-", "-D", "num_gpus=32", "--threads", "2"], &text);
    let whole = msclc(&[example, "-D", "num_gpus=32", "--threads", "1"]);
    assert!(sharded.status.success() && sharded.stdout == whole.stdout);
    let params = piped(&["check", "-", "--params"], &text);
    assert!(String::from_utf8_lossy(&params.stdout).contains("\"name\":\"num_gpus\""));
    // An import of "-" is the file of that name, stdin or not.
    let dir = common::scratch("dash-import");
    std::fs::write(dir.join("-"), "fn two() -> int { return 2 }\n").unwrap();
    std::fs::write(
        dir.join("main.mscl"),
        "import \"-\"\nassert(two() == 2, \"the file's\")\n",
    )
    .unwrap();
    let main = dir.join("main.mscl");
    let out = piped(
        &["check", main.to_str().unwrap()],
        "fn two() -> int { return 3 }\n",
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("declares no program"));
    let broken = piped(&["check", "-"], "import \"examples/nowhere.mscl\"\n");
    assert_eq!(broken.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&broken.stderr);
    assert!(
        stderr.contains("cannot read `examples/nowhere.mscl`"),
        "{stderr}"
    );
    assert!(stderr.contains("<stdin>:1:8"), "{stderr}");
    // A JSON plan piped in is read as a program: the error says what it
    // is and how msclc reads one.
    let plan = piped(&["sim", "-"], &String::from_utf8_lossy(&from_file.stdout));
    let stderr = String::from_utf8_lossy(&plan.stderr);
    assert_eq!(plan.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "error[E0001]: this is not a program: it opens as a JSON execution plan does"
        ) && stderr.contains("whose name ends in `.json`"),
        "{stderr}"
    );
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
    let dir = common::scratch("scopes");
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
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A bare `return` leaves a function that gives no value early: the plan
/// is the one the same function with its rest under an `if` makes.
#[test]
fn a_bare_return_leaves_a_function_early() {
    let dir = common::scratch("return");
    let program = |body: &str| {
        format!(
            "param n: int = 4\nprogram \"gather\" {{\n    collective = allgather(n, chunk_factor: 1, inplace: false)\n}}\n\
             fn send(src: int, dst: int) {{\n{body}\n}}\n\
             for src in 0..n {{ for dst in 0..n {{ send(src, dst) }} }}\n"
        )
    };
    let op = "memory_channel(dst, src).put(rank(dst).output[src], rank(src).input[0], tb: 0)";
    let early = dir.join("early.mscl");
    let nested = dir.join("nested.mscl");
    std::fs::write(
        &early,
        program(&format!(
            "    if src == dst {{ return }}\n    {op}\n    return;"
        )),
    )
    .unwrap();
    std::fs::write(&nested, program(&format!("    if src != dst {{ {op} }}"))).unwrap();
    let a = msclc(&[early.to_str().unwrap()]);
    let b = msclc(&[nested.to_str().unwrap()]);
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    assert_eq!(
        a.stdout, b.stdout,
        "the early return skips the op to itself"
    );
    let plan = String::from_utf8_lossy(&a.stdout);
    // Fused, each rank's puts are one, to its three peers.
    assert_eq!(plan.matches("\"buffer_id\"").count(), 12, "{plan}");
}

/// `if` is also an expression: the channel to the previous rank is the one
/// to the next when there are only two ranks.
#[test]
fn if_expressions_choose_a_value() {
    let dir = common::scratch("if");
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
    let dir = common::scratch("params");
    let bad = dir.join("bad.mscl");
    std::fs::write(&bad, "param x int\n").unwrap();
    let out = msclc(&["check", bad.to_str().unwrap(), "--params"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad.mscl:1:9"));
    // Values as written; params the checker refuses are its errors, not a
    // listing; another statement's error leaves the listing.
    let program =
        "\nprogram \"p\" {\n    collective = allgather(2, chunk_factor: 1, inplace: false)\n}\n";
    for (params, said) in [
        (
            "param a: int in [-1, 0x10, 1_000] = 0x10",
            Ok(r#"[{"default":"0x10","name":"a","type":"int","values":["-1","0x10","1_000"]}]"#),
        ),
        (
            "param a: int = 1\nlet x = nothere",
            Ok(r#"[{"default":"1","name":"a","type":"int"}]"#),
        ),
        ("param a: int in [1 + 1, 2] = 1", Err("E0107")),
        ("param a: int = 1\nparam a: int = 2", Err("E0106")),
        // A param in a block is refused there, not left out of the list.
        ("if true {\n    param a: int = 1\n}", Err("E0106")),
        ("param a: foo = 1", Err("E0101")),
    ] {
        let out = piped(&["check", "-", "--params"], &format!("{params}{program}"));
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        match said {
            Ok(json) => assert_eq!(
                (out.status.code(), stdout.trim()),
                (Some(0), json),
                "{stderr}"
            ),
            Err(code) => {
                assert_eq!(out.status.code(), Some(1), "{params}: {stdout}");
                assert!(stderr.contains(&format!("error[{code}]")), "{stderr}");
            }
        }
    }
    // What would set, bound or judge a compile has nothing to act on.
    for option in [
        &["-D", "x=1"][..],
        &["--max-ops", "3"],
        &["--threads", "2"],
        &["--deny-warnings"],
        &["-q"],
    ] {
        let both = msclc(
            &[
                &["check", "examples/allreduce_nvls.mscl", "--params"][..],
                option,
            ]
            .concat(),
        );
        assert_eq!(both.status.code(), Some(2), "{option:?}");
        assert!(
            String::from_utf8_lossy(&both.stderr).contains("cannot be used with"),
            "{option:?}"
        );
    }
}

/// A command after options or the input is said to come first (clap took
/// it for the input: "the subcommand 'p.mscl' cannot be used with").
#[test]
fn a_command_out_of_place_is_said_to_come_first() {
    let example = "examples/simple_allgather.mscl";
    for args in [
        vec!["--pretty", "check", example],
        vec!["-D", "x=1", "sim", example],
        vec![example, "check"],
    ] {
        let out = msclc(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        let command = args.iter().find(|a| ["check", "sim"].contains(a)).unwrap();
        assert!(
            err.starts_with(&format!("error: `{command}` is a command, and comes first")),
            "{args:?}: {err}"
        );
    }
    // An option's value that names a command is no command; a flag given
    // twice is said to be.
    let out = msclc(&["-o", "check", example, "--pretty", "--pretty"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("'--pretty' cannot be used multiple times"),
        "{err}"
    );
    // A file name that is not UTF-8 is no trouble.
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let out = Command::new(env!("CARGO_BIN_EXE_msclc"))
            .arg(std::ffi::OsStr::from_bytes(b"\xff.mscl"))
            .arg("sim")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).starts_with("error: `sim` is a command"));
    }
}
