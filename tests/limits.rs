//! Inputs that once crashed msclc (stack overflow, unbounded recursion,
//! running out of memory) end in a located diagnostic and exit code 1,
//! soon. Each runs the real
//! binary, as a user would.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const HEADER: &str =
    "program \"p\" {\n    collective = test_collective(1, input_size: 1, output_size: 1)\n}\n";

/// (what, program after the header, a part of the message)
fn cases() -> Vec<(&'static str, String, &'static str)> {
    vec![
        (
            "a billion copies",
            "for i in 0..1000000000 {\n    rank(0).copy(rank(0).output[0], rank(0).input[0], tb: 0)\n}\n"
                .to_string(),
            "too many ops: this call emits op 1001, and the maximum is 1000",
        ),
        (
            "10,000 unary minuses",
            format!("let x = {}1\n", "-".repeat(10_000)),
            "nested more than 1000 levels deep",
        ),
        (
            "a list 10,000 deep",
            format!("let x = {}{}\n", "[".repeat(10_000), "]".repeat(10_000)),
            "nested more than 1000 levels deep",
        ),
        (
            "a sum of 7,000 terms",
            format!("let x = {}\n", vec!["1"; 7000].join(" + ")),
            "nested more than 1000 levels deep",
        ),
        (
            "5,000 nested ifs",
            format!("{}{}", "if true {\n".repeat(5000), "}\n".repeat(5000)),
            "nested more than 1000 levels deep",
        ),
        (
            "10,000 nested fors",
            format!(
                "{}{}",
                (0..10_000)
                    .map(|i| format!("for i{i} in 0..1 {{\n"))
                    .collect::<String>(),
                "}\n".repeat(10_000)
            ),
            "nested more than 1000 levels deep",
        ),
        (
            "a list doubled 40 times",
            "let s = [1]\nfor i in 0..40 {\n    s = s + s\n}\n".to_string(),
            "a list too large: 33554432 elements",
        ),
        (
            "a string doubled 40 times",
            "let s = \"a\"\nfor i in 0..40 {\n    s = s + s\n}\n".to_string(),
            "a string too large",
        ),
        (
            "tuples doubled in 30 lets",
            (1..=30).fold("let t0 = (1, 1)\n".to_string(), |text, i| {
                text + &format!("let t{i} = (t{}, t{})\n", i - 1, i - 1)
            }),
            "this value's type is too large: more than 1024 types inside it",
        ),
        (
            // 2^61 parts in 61 small lists: comparing walked them all.
            "lists doubled in 60 lets, compared",
            (1..=60).fold("let t0 = [1]\n".to_string(), |text, i| {
                text + &format!("let t{i} = [t{}, t{}]\n", i - 1, i - 1)
            }) + "let same = t60 == t60\n",
            "this value is too large to compare or hash: more than",
        ),
        (
            "an import of an endless device",
            "import \"/dev/zero\"\n".to_string(),
            "it is not a regular file (a device, pipe or socket); only files are imported",
        ),
        (
            "recursion through a default argument",
            "fn f(n: int = f()) -> int {\n    return n\n}\nlet x = f()\n".to_string(),
            "recursion too deep",
        ),
    ]
}

#[test]
fn pathological_programs_end_in_a_diagnostic() {
    let dir = common::scratch("limits");
    for (k, (what, body, message)) in cases().into_iter().enumerate() {
        let path = dir.join(format!("case{k}.mscl"));
        std::fs::write(&path, format!("{HEADER}{body}")).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_msclc"))
            .arg("check")
            .args(["--max-ops", "1000"])
            .arg(&path)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let start = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if start.elapsed() > Duration::from_secs(60) {
                child.kill().ok();
                panic!("{what}: still running after 60 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut stderr = String::new();
        std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
        assert_eq!(status.code(), Some(1), "{what}: {stderr}");
        assert!(stderr.contains(message), "{what}: {stderr}");
        // Located: file:line:col of the offending node.
        assert!(
            stderr.contains(&format!("case{k}.mscl:")),
            "{what}: no location in {stderr}"
        );
    }
}

/// A `-D` value with two minus signs is not an int (it was read as 5).
#[test]
fn a_doubly_negative_define_is_refused() {
    let out = Command::new(env!("CARGO_BIN_EXE_msclc"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "check",
            "examples/simple_allgather.mscl",
            "-D",
            "num_gpus=--5",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "a usage error: {stderr}");
    assert!(stderr.contains("`--5` is not a valid int"), "{stderr}");
}

/// Function calls count with loop iterations: a double recursion, which no
/// loop bounds, ends in the same diagnostic as a runaway loop, at a call.
#[test]
fn a_double_recursion_ends_like_a_runaway_loop() {
    let text = format!(
        "{HEADER}fn f(n: int) -> int {{\n    if n < 2 {{ return n }}\n    return f(n - 1) + f(n - 2)\n}}\nlet x = f(40)\n"
    );
    let limits = msclc::driver::Limits {
        max_iterations: 100_000,
        ..msclc::driver::Limits::default()
    };
    let started = Instant::now();
    let c = msclc::driver::compile_source_with(std::path::Path::new("fib.mscl"), text, &[], limits);
    let diags = c.result.expect_err("stopped");
    let shown = c.sources.render(&diags);
    assert!(
        shown.contains("error[E0401]: this program runs too long"),
        "{shown}"
    );
    assert!(shown.contains("fib.mscl:6:12"), "{shown}");
    assert!(
        shown.contains("the program took 100000 steps (loop iterations, function calls"),
        "{shown}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
}

/// Recursion through a loop holds a loop per call: the report names the
/// outermost and innermost four, counts those between, and says how to
/// end the recursion.
#[test]
fn recursion_through_a_loop_reports_its_loops_in_brief() {
    let text = format!(
        "{HEADER}fn f(n: int) -> list[int] {{ return [f(n)[0] for i in 0..1] }}\nlet x = f(0)\n"
    );
    // The binary: 256 calls deep runs on its large stack, not a test's.
    let dir = common::scratch("deep-loops");
    let path = dir.join("deep.mscl");
    std::fs::write(&path, text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_msclc"))
        .arg("check")
        .arg(&path)
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{shown}");
    assert!(
        shown.contains("error[E0401]: recursion too deep"),
        "{shown}"
    );
    assert!(
        shown.contains(
            "= when i = 0, i = 0, i = 0, i = 0, … 248 more loops …, i = 0, i = 0, i = 0, i = 0\n"
        ),
        "{shown}"
    );
    assert!(
        shown.contains("help: a function that calls itself"),
        "{shown}"
    );
}

/// Looking a key up in a map hashes the key, not the map: `k in m` in a
/// loop over a large map stays a loop's worth of steps.
#[test]
fn a_key_looked_up_in_a_large_map_costs_the_key_only() {
    let text = format!(
        "{HEADER}let m = {{(i, i + 1): [i] for i in 0..100000}}\nlet found = [i for i in 0..100000 where (i, i + 1) in m && [i] == m[(i, i + 1)]]\nassert(len(found) == 100000, \"all found\")\n"
    );
    let limits = msclc::driver::Limits {
        max_iterations: 1_000_000,
        ..msclc::driver::Limits::default()
    };
    let c = msclc::driver::compile_source_with(std::path::Path::new("map.mscl"), text, &[], limits);
    if let Err(d) = &c.result {
        panic!("{}", c.sources.render(d));
    }
}

/// Copying a large value costs steps as loop iterations do: a loop that
/// copies a 4 MB string 100 times is stopped at a budget that 100 plain
/// iterations stay far inside, at the copy.
#[test]
fn copying_large_values_takes_steps() {
    let text = format!(
        "{HEADER}let s = \"a\"\nfor i in 0..22 {{\n    s = s + s\n}}\nfor i in 0..100 {{\n    let t = s + s\n}}\n"
    );
    let limits = msclc::driver::Limits {
        max_iterations: 100_000,
        ..msclc::driver::Limits::default()
    };
    let c =
        msclc::driver::compile_source_with(std::path::Path::new("copy.mscl"), text, &[], limits);
    let shown = c.sources.render(&c.result.expect_err("stopped"));
    assert!(
        shown.contains("error[E0401]: this program runs too long"),
        "{shown}"
    );
    assert!(shown.contains("copy.mscl:9:13"), "{shown}");
    assert!(shown.contains("when i = 2"), "{shown}");
}

/// Under an address-space limit (`ulimit -v`), `msclc sim`'s default
/// memory bound is three quarters of what the limit leaves (the binary and
/// its first allocations are mapped already): a plan estimated above is
/// refused with E0805, not aborted on allocation, and one above what the
/// limit leaves is said to be (no --max-memory would do).
#[cfg(unix)]
#[test]
fn the_default_memory_bound_follows_the_process_limit() {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_msclc"));
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"));
    cmd.args([
        "sim",
        "examples/mscclpp/single_node/alltoall/alltoall_ring.mscl",
        "-D",
        "num_gpus=64",
        "--quiet",
    ]);
    common::with_limit(&mut cmd, common::Limit::AddressSpace, 1 << 30);
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    // The bound said is the limit's: what msclc may have (the estimate is
    // above it, so raising --max-memory would not help), or the default
    // share of it.
    let bound: f64 = ["msclc have now (", "more than the "]
        .iter()
        .find_map(|before| err.split(before).nth(1))
        .and_then(|rest| rest.split(" MiB").next())
        .and_then(|mb| mb.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no bound in MiB: {err}"));
    assert!(
        err.contains("error[E0805]") && (256.0..=1024.0).contains(&bound),
        "{err}"
    );
    // At 32 ranks (573 MiB) the estimate fits the limit but not the
    // default share of it: that is said, and --max-memory would help.
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_msclc"));
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"));
    cmd.args([
        "sim",
        "examples/mscclpp/single_node/alltoall/alltoall_ring.mscl",
    ]);
    cmd.args(["-D", "num_gpus=32", "--quiet"]);
    common::with_limit(&mut cmd, common::Limit::AddressSpace, 1 << 30);
    let err = String::from_utf8_lossy(&cmd.output().unwrap().stderr).to_string();
    assert!(
        err.contains("error[E0805]")
            && err.contains("msclc takes by default")
            && err.contains("raise --max-memory"),
        "{err}"
    );
}

/// Programs that once aborted on allocation under a 4 GB address-space
/// limit (the op records of a billion-iteration loop, a map of 2^24
/// lists, an allgather of 2,000 ranks) stop at their line with E0810
/// and exit status 2, within 10 s of a release build.
#[cfg(unix)]
#[test]
fn programs_too_large_for_the_memory_stop_at_their_line() {
    let dir = common::scratch("memory");
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    // (name, program, arguments, the lines it may stop at: an op's or a
    // loop's, wherever the memory runs out)
    let cases: [(&str, String, &[&str], std::ops::RangeInclusive<usize>); 3] = [
        (
            "copies",
            format!("{HEADER}for i in 0..1000000000 {{\n    rank(0).copy(rank(0).output[0], rank(0).input[0], tb: 0)\n}}\n"),
            &["--max-ops", "1000000000"],
            4..=5,
        ),
        (
            "map",
            format!("{HEADER}let m = {{i: [i, i] for i in 0..16777216}}\n"),
            &[],
            4..=4,
        ),
        (
            "allgather",
            std::fs::read_to_string(examples.join("simple_allgather.mscl")).unwrap(),
            &["-D", "num_gpus=2000"],
            13..=24,
        ),
    ];
    for (name, text, args, at) in cases {
        let path = dir.join(format!("{name}.mscl"));
        std::fs::write(&path, text).unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_msclc"));
        cmd.arg("check").arg(&path).args(args);
        common::with_limit(&mut cmd, common::Limit::AddressSpace, 4 << 30);
        let started = Instant::now();
        let out = cmd.output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert!(
            err.contains(
                "error[E0810]: compiling this program takes more memory than msclc may have here"
            ),
            "{name}: {err}"
        );
        let line: usize = err
            .split(&format!("{name}.mscl:"))
            .nth(1)
            .and_then(|rest| rest.split(':').next())
            .and_then(|line| line.parse().ok())
            .unwrap_or_else(|| panic!("{name}: no location: {err}"));
        assert!(at.contains(&line), "{name}: at line {line}: {err}");
        if !cfg!(debug_assertions) {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "{name}: {:?}",
                started.elapsed()
            );
        }
    }
}

/// Under any address-space limit, however tight, a command either does
/// its work or ends with E0810 and exit status 2: an allocation the
/// system refuses (before msclc's own ceiling, which counts the bytes
/// asked for and not the space the allocator maps) is no abort.
#[cfg(unix)]
#[test]
fn a_refused_allocation_is_e0810_at_any_limit() {
    let dir = common::scratch("refused");
    let plan = dir.join("plan.json");
    let example =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/mscclpp/single_node/allreduce.mscl");
    let made = Command::new(env!("CARGO_BIN_EXE_msclc"))
        .arg(&example)
        .args(["-D", "num_gpus=128", "-q", "-o"])
        .arg(&plan)
        .status()
        .unwrap();
    assert!(made.success());
    // From where `msclc --version` first runs (below, the loader fails,
    // or no thread of the smallest stack msclc takes can start: E0810).
    let runs = |mb: u64| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_msclc"));
        cmd.arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        common::with_limit(&mut cmd, common::Limit::AddressSpace, mb << 20);
        cmd.status().unwrap().success()
    };
    let floor = (1..512)
        .step_by(2)
        .find(|mb| runs(*mb))
        .expect("msclc runs under 512 MB");
    let (mut refused, mut done) = (0, 0);
    for mb in (floor..=floor + 160).step_by(8) {
        for input in [&plan, &example] {
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_msclc"));
            cmd.arg("check").arg(input).arg("-q");
            common::with_limit(&mut cmd, common::Limit::AddressSpace, mb << 20);
            let out = cmd.output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            match out.status.code() {
                Some(0) => done += 1,
                Some(2) if err.contains("error[E0810]") => refused += 1,
                code => panic!("{} under {mb} MB: {code:?}\n{err}", input.display()),
            }
        }
    }
    // The sweep reaches both sides of the line.
    assert!(refused > 0 && done > 0, "refused {refused}, done {done}");
}

/// A program that recurses deeply within the limits, where an
/// address-space limit leaves no room for msclc's 1 GB stack: it runs on
/// what stack there is, and where that is too little, ends in E0401 at
/// the call, never in a stack overflow.
#[cfg(unix)]
#[test]
fn deep_recursion_on_a_small_stack_is_e0401() {
    let dir = common::scratch("stack");
    let path = dir.join("deep.mscl");
    // 200 nested `if`s in a function that calls itself 250 deep.
    let nested = format!(
        "{}return f(n - 1){}",
        "if true {\n".repeat(200),
        "\n}".repeat(200)
    );
    let program = format!(
        "{HEADER}fn f(n: int) -> int {{\nif n == 0 {{ return 0 }}\n{nested}\nreturn 0\n}}\nlet x = f(250)\n"
    );
    std::fs::write(&path, program).unwrap();
    let mut outcomes = Vec::new();
    for mb in [2048, 1000, 600, 300, 150, 80, 60, 40] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_msclc"));
        cmd.arg("check").arg(&path);
        common::with_limit(&mut cmd, common::Limit::AddressSpace, mb << 20);
        let out = cmd.output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        match out.status.code() {
            Some(0) => outcomes.push("ran"),
            Some(1) if err.contains("error[E0401]: recursion too deep") => {
                assert!(err.contains("help: msclc has a stack of"), "{err}");
                outcomes.push("E0401")
            }
            Some(2) if err.contains("error[E0810]") => outcomes.push("E0810"),
            code => panic!("under {mb} MB: {code:?}\n{err}"),
        }
    }
    // (Where the smaller stacks start to fall short depends on the build.)
    assert_eq!(outcomes[0], "ran", "{outcomes:?}");
    assert!(outcomes.contains(&"E0401"), "{outcomes:?}");
}

/// A test collective's buffers are in chunks, at most as many as any
/// collective's: a size past them is too large, with the maximum (it
/// once read as "must not be negative" from 2^32 on, and went far past
/// the maximum below).
#[test]
fn a_test_collective_larger_than_a_buffer_may_be_is_too_large() {
    let dir = common::scratch("test-size");
    for (size, said) in [
        ("1 << 32", "input size too large: 4294967296 chunks"),
        ("16777217", "input size too large: 16777217 chunks"),
        ("-1", "input size must not be negative"),
    ] {
        let path = dir.join("test_size.mscl");
        std::fs::write(
            &path,
            format!("program \"t\" {{\n    collective = test_collective(2, input_size: {size}, output_size: 1)\n}}\n"),
        )
        .unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_msclc"))
            .arg("check")
            .arg(&path)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{size}: {stderr}");
        assert!(stderr.contains(said), "{size}: {stderr}");
        assert!(stderr.contains("test_size.mscl:2:49"), "{size}: {stderr}");
    }
}
