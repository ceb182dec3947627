//! Mistakes as the command line reports them: located, labelled, on standard error, with the exit code docs/errors.md gives, and never forged by the input's text.

use super::*;

#[test]
fn a_bad_program_exits_1_with_a_located_diagnostic() {
    let out = msclc(&["examples/mscclpp/unit_tests/put/put_with_signal_fuse_test.mscl"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("error[E0308]: signal/wait mismatch on port channels: rank 0's port channel to rank 1 signals 3 times, but its paired channel back, rank 1's port channel to rank 0, waits 2 times"),
        "{err}"
    );
    assert!(err.contains("put_with_signal_fuse_test.mscl:21:5"), "{err}");
}

/// A `//` comment that reads as a division (Python's floor division,
/// ported as it stands) is warning W0108 at the comment, shown beside the
/// error it caused; with `/` the program compiles without a word.
#[test]
fn a_comment_read_as_a_division_is_named_beside_the_error_it_caused() {
    let program = "tests/cli/comment_division.mscl";
    for args in [&[program][..], &["check", program]] {
        let out = msclc(args);
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("error[E0203]: nodes is 16"), "{err}");
        assert!(
            err.contains("warning[W0108]: `//` starts a comment: the line ends before `gpus_per_node`, which reads as a divisor"),
            "{err}"
        );
        assert!(err.contains("comment_division.mscl:6:22"), "{err}");
    }
    let text =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(program))
            .unwrap();
    let fixed = text.replace("num_gpus // gpus_per_node", "num_gpus / gpus_per_node");
    assert_ne!(fixed, text);
    let dir = common::scratch("division");
    let file = dir.join("division.mscl");
    std::fs::write(&file, fixed).unwrap();
    let said = warned(&["check", file.to_str().unwrap()]);
    assert_eq!(said, "");
}

/// A keyword argument a builtin does not take gets a "did you mean" for
/// the parameter a few edits away, and none where no parameter is near.
#[test]
fn a_misspelt_keyword_argument_gets_a_did_you_mean() {
    let dir = common::scratch("misspelt");
    let program = dir.join("misspelt.mscl");
    let check = |call: &str| {
        let text = format!(
            "program \"p\" {{\n    collective = allgather(2, chunk_factor: 1, inplace: true)\n}}\n{call}\n"
        );
        std::fs::write(&program, text).unwrap();
        let out = msclc(&["check", program.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let err = check("rank(0).copy(rank(0).output[0], rank(0).input[0], tb_grup: tb_group([0]))");
    assert!(
        err.starts_with("error[E0104]: `copy` has no parameter named `tb_grup`")
            && err.contains("= help: did you mean `tb_group`?"),
        "{err}"
    );
    let err = check("rank(0).copy(rank(0).output[0], rank(0).input[0], tb: 0, speed: 2)");
    assert!(!err.contains("did you mean"), "{err}");
    assert!(err.contains("its parameters are: "), "{err}");
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
    let err = warned(&["check", program]);
    assert_eq!(err.matches("warning[").count(), 1, "one warning:\n{err}");
    assert!(
        err.contains("warning[W0501]: signal/wait mismatch on memory channels: rank 0's memory channel #0 to rank 1 signals 1 time, but its paired channel back, rank 1's memory channel #0 to rank 0, waits 0 times"),
        "{err}"
    );
    assert!(err.contains("wait_on_the_wrong_channel.mscl:13:9"), "{err}");
    let labels = [
        "rank 0's memory channel #0 to rank 1 and its paired channel back are made here",
        "1 signal more than rank 1 waits for on the paired channel",
        "rank 1 waits on its memory channel #1 to rank 0 here, which pairs with rank 0's channel #1 to rank 1",
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

/// A mismatch that instances repeat on thousands of channels is one
/// warning, whose label at the waits names the channels as a run, instead
/// of a line naming every one.
#[test]
fn a_mismatch_on_a_thousand_instances_names_its_channels_as_a_run() {
    let out = msclc(&["check", "tests/cli/waits_on_many_instances.mscl"]);
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("warning[W0501]").count(), 1, "{err}");
    let label = err
        .lines()
        .find(|l| l.contains("rank 3 waits on its memory channel"))
        .unwrap_or_else(|| panic!("no label at the waits in:\n{err}"));
    // The 1,024 copies of the channel, one run.
    assert!(
        label.ends_with(
            "rank 3 waits on its memory channels #16384 to #17407 to rank 1 here, which have no pair on rank 1"
        ),
        "{label}"
    );
}

/// A diagnostic shows a window of a megabyte-long line around its label,
/// with the label's real column, and no terminal control characters.
#[test]
fn diagnostics_cut_long_lines_and_show_control_characters_as_question_marks() {
    let dir = common::scratch("shown");
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

/// A plan whose data op lacks its sources or destinations (`rppkt` or
/// `repkt` with no `src_buff`, `upkt` with no `dst_buff`, ...) is refused by
/// every command that reads it, at the op's JSON path; the CUDA back end,
/// handed such a plan by other means, says so instead of panicking.
#[test]
fn a_data_op_without_its_buffers_is_refused_at_its_path() {
    let dir = common::scratch("cli-nobuf");
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
    let dir = common::scratch("cli-forge");
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
}

/// A misspelt program option is named, the options listed, and the one
/// meant suggested.
#[test]
fn an_unknown_program_option_suggests_the_one_meant() {
    let dir = common::scratch("option");
    let path = dir.join("p.mscl");
    let text = "program \"p\" {\n    collective = allgather(2)\n    protocl = Simple\n}\n";
    std::fs::write(&path, text).unwrap();
    let out = msclc(&["check", path.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("error[E0301]: unknown program option `protocl`"),
        "{err}"
    );
    assert!(err.contains("p.mscl:3:5"), "{err}");
    assert!(
        err.contains("the options are: collective, num_ranks,"),
        "{err}"
    );
    assert!(err.contains("help: did you mean `protocol`?"), "{err}");
}

/// Each error says how to fix it, and its label fits the case: a help
/// note where the message and label alone leave the fix to guesswork.
#[test]
fn errors_say_how_to_fix_them() {
    let dir = common::scratch("help");
    let header = "program \"p\" { collective = allgather(2, chunk_factor: 2, inplace: false) }\n";
    let cases: &[(&str, &str, &str)] = &[
        ("let y = nrank\n", "error[E0101]", "help: define it with `let` or `param`"),
        ("fn f() -> int { return g }\nlet a = f()\nlet g = 1\n", "error[E0102]", "help: a function that reads or assigns a top-level variable"),
        ("let l = [1, 2]\nlet y = l[5]\n", "error[E0201]", "help: a list of 2 is indexed 0 to 1"),
        ("let m = {1: 2}\nlet y = m[5]\n", "error[E0201]", "help: the map holds 1 entry, such as `1`"),
        ("let y = 4 / 0\n", "error[E0202]", "help: guard the division with an `if`"),
        ("let c = rank(0).input[2]\n", "error[E0303]: index 2 out of bounds of rank 0's input buffer", "help: its chunks are 0 to 1"),
        ("let b = rank(0).input\nlet c = b[-1]\n", "error[E0303]", "a negative one does not count from the end, as in Python): the last chunk is [1]"),
        ("let c = allgathr(2)\n", "error[E0101]", "help: did you mean `allgather`?"),
        ("let p = ring_peer(1, 2)\n", "error[E0101]", "help: did you mean `ring_peers`? it is a function of the standard library: `import \"std/peers\"`"),
        ("let m = map(1)\n", "error[E0101]", "help: write it with a comprehension or a loop"),
        ("let c = rank(0).input[9223372036854775808]\n", "error[E0303]: index 9223372036854775808 out of bounds of rank 0's input buffer", "help: its chunks are 0 to 1"),
        ("let c = rank(0).input[1..0]\n", "it ends where it starts, or before", "help: a slice `[lo..hi]` holds chunks lo to hi - 1"),
        ("let s = scratch(0, -1)\n", "scratch size must not be negative", ""),
        // One limit on a rank's scratch, alone or with what it had (a
        // scratch of 2^24 chunks is the largest, not past the bound).
        ("let s = scratch(0, 1 << 24)\nlet t = scratch(0, 1)\n", "error[E0401]: scratch buffer too large", ".mscl:3:9"),
        ("let s = scratch(0, 1 << 30)\n", "error[E0401]: scratch buffer too large", "more than 2^24 chunks"),
        ("let g = tb_group([0, -1])\n", "thread block must not be negative", ""),
        ("for i in 0..2 { if i { } }\n", "^ of type `int`", ""),
        ("let x = 1\u{7}\n", "help: a control character", ""),
        ("let l = [1]\nl[0]\n", "error[E0106]: this statement does nothing", "help: a statement is a call"),
        // A bare `return` ends its block, and gives no value.
        ("fn f() { return; let x = 1 }\n", "a `return` without a value ends its block", "help: nothing after the `return` would run"),
        ("fn f() -> int { if true { return } return 1 }\n", "error[E0103]: `return` without a value in a function that returns `int`", "help: give the `return` a value of type `int`"),
        ("let r = rank(0)\npipeline(unit_size: 0, num_chunks: 1) { r.copy(r.output[0], r.input[0], tb: 0) }\n", "error[E0307]", "help: unit_size is the bytes each iteration moves"),
    ];
    for (i, (body, first, second)) in cases.iter().enumerate() {
        let path = dir.join(format!("case{i}.mscl"));
        std::fs::write(&path, format!("{header}{body}")).unwrap();
        let out = msclc(&["check", path.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{body}: {err}");
        assert!(err.contains(first) && err.contains(second), "{body}: {err}");
    }
    // An unknown name among a param's values is one error, not also "not
    // a literal".
    let path = dir.join("values.mscl");
    std::fs::write(&path, "param p: protocol in [LL, Foo] = LL\n").unwrap();
    let err =
        String::from_utf8_lossy(&msclc(&["check", path.to_str().unwrap()]).stderr).into_owned();
    assert!(
        err.contains("error[E0101]") && !err.contains("E0107"),
        "{err}"
    );
}

/// A program in a file named `.json` is read as a plan, which it is not:
/// the error says how to name it.
#[test]
fn a_program_named_as_a_plan_is_told_its_name() {
    let dir = common::scratch("program");
    let path = dir.join("program.json");
    std::fs::copy(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/examples/simple_allgather.mscl"
        ),
        &path,
    )
    .unwrap();
    let out = msclc(&["sim", path.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("error[E0309]"), "{err}");
    assert!(err.contains("a program's file is named `.mscl`"), "{err}");
    assert!(
        err.contains(&format!("as {}", path.with_extension("mscl").display())),
        "{err}"
    );
}

/// A warning about an op the standard library made points at the
/// program's call that reached it too, as an error met there does.
#[test]
fn a_warning_met_in_the_standard_library_marks_the_programs_call() {
    let err = warned(&[
        "check",
        "examples/mscclpp/single_node/allreduce.mscl",
        "-D",
        "num_gpus=16",
    ]);
    let first = err.split("\n\n").next().unwrap();
    assert!(first.contains("has 15 channels in one op"), "{err}");
    assert!(first.contains("┌─ std/sync:14:54"), "{err}");
    assert!(
        first.contains("┌─ examples/mscclpp/single_node/allreduce.mscl:25:5"),
        "{err}"
    );
    assert!(first.contains("- met in this call"), "{err}");
}

/// What `msclc check PATH` says on standard error, where it finds an
/// error in the program (exit code 1).
fn check_fails(path: &std::path::Path) -> String {
    let out = msclc(&["check", path.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{err}");
    err
}

/// A switch op whose `size` differs from its chunk's is labelled at the
/// `size` it gives, the chunk beside it, with the size to give.
#[test]
fn a_switch_ops_size_mismatch_is_at_its_size() {
    let dir = common::scratch("switch-size");
    let example = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/mscclpp/unit_tests/switch_broadcast_test.mscl");
    let text = std::fs::read_to_string(example).unwrap();
    assert!(text.contains("size: 1, tb: 0)"), "the example changed");
    let path = dir.join("sb.mscl");
    std::fs::write(&path, text.replace("size: 1, tb: 0)", "size: 0, tb: 0)")).unwrap();
    let err = check_fails(&path);
    assert!(err.contains("sb.mscl:19:55"), "{err}");
    assert!(err.contains("^ size mismatch"), "{err}");
    assert!(
        err.contains("help: `size` counts the chunks the op moves"),
        "{err}"
    );
    assert!(err.contains("make it 1"), "{err}");
}

/// A function an imported file defines as the standard library does is
/// shown at both, with how to resolve it; one file's two is told apart.
#[test]
fn a_function_defined_by_two_imports_says_how_to_resolve_it() {
    let dir = common::scratch("clash");
    std::fs::write(
        dir.join("mine.mscl"),
        "fn peer_slot(a: int) -> int { return a }\n",
    )
    .unwrap();
    let main = dir.join("main.mscl");
    std::fs::write(
        &main,
        "import \"std/peers\"\nimport \"mine.mscl\"\nprogram \"e\" {\n    collective = allgather(2, chunk_factor: 1, inplace: false)\n}\n",
    )
    .unwrap();
    let err = check_fails(&main);
    assert!(err.contains("mine.mscl:1:4"), "{err}");
    assert!(err.contains("┌─ std/peers:"), "{err}");
    assert!(
        err.contains("help: two of the files this program reads define `peer_slot`"),
        "{err}"
    );
    std::fs::write(
        &main,
        "fn f() -> int { return 1 }\nfn f() -> int { return 2 }\nprogram \"e\" {\n    collective = allgather(2, chunk_factor: 1, inplace: false)\n}\n",
    )
    .unwrap();
    let err = check_fails(&main);
    assert!(
        err.contains("help: functions are not overloaded: rename one of them"),
        "{err}"
    );
}
