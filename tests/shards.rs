//! Evaluation on several threads (`--threads`, src/eval/shard.rs) makes the
//! plan one thread makes, byte for byte, and fails as one thread fails:
//! with the same diagnostic, whichever shard meets the error first.

use msclc::driver::{self, Compilation, Limits};
use std::path::{Path, PathBuf};

mod common;

fn limits(threads: usize) -> Limits {
    Limits {
        threads: Some(threads),
        ..Limits::default()
    }
}

/// What a user sees of a compile: the plan as written, or the errors as
/// shown; then the warnings as shown.
fn seen(c: &Compilation) -> String {
    let mut out = match &c.result {
        Ok(plan) => {
            let mut text = Vec::new();
            msclc::back::json::write_plan(plan, false, &mut text).unwrap();
            String::from_utf8(text).unwrap()
        }
        Err(errors) => c.sources.render(errors),
    };
    out.push_str(&c.sources.render(&c.warnings));
    out
}

/// `path` compiled on one thread and on 2, 3 and 8: the same each time.
fn same_on_any_number_of_threads(
    path: &Path,
    defines: &[(String, String)],
    limits_of: impl Fn(usize) -> Limits,
) -> String {
    let one = seen(&driver::compile_with(path, defines, limits_of(1)));
    for threads in [2, 3, 8] {
        let many = seen(&driver::compile_with(path, defines, limits_of(threads)));
        assert!(
            one == many,
            "{} {defines:?} on {threads} threads differs from one thread:\n--- one\n{}\n--- {threads}\n{}",
            path.display(),
            &one[..one.len().min(2000)],
            &many[..many.len().min(2000)]
        );
    }
    one
}

/// Every example (pipelines, semaphores, switch and port channels, thread
/// block groups, warnings with loop values), and a few at 16 and 32 ranks.
#[test]
fn every_example_is_the_same_plan_on_any_number_of_threads() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut cases = common::example_cases();
    for (port, ranks) in [
        ("single_node/allreduce.mscl", 32),
        ("single_node/allreduce_pkt.mscl", 16),
        ("single_node/alltoall/alltoall_ring.mscl", 16),
    ] {
        let num_gpus = vec![("num_gpus".to_string(), ranks.to_string())];
        cases.push((root.join("examples/mscclpp").join(port), num_gpus));
    }
    cases.push((
        root.join("tests/cli/wait_on_the_wrong_channel.mscl"),
        Vec::new(),
    ));
    let dir = common::scratch("shards-threads");
    cases.push((
        written(&dir, "warns_on_rank_5", WARNS_ON_RANK_5),
        Vec::new(),
    ));
    cases.push((
        written(&dir, "records_in_an_argument", RECORDS_IN_AN_ARGUMENT),
        Vec::new(),
    ));
    for (name, text) in LOOPS_THAT_TOUCH_MORE {
        cases.push((
            written(&dir, name, &format!("{HEADER_2}{text}")),
            Vec::new(),
        ));
    }
    for (path, defines) in &cases {
        let text = same_on_any_number_of_threads(path, defines, limits);
        // The loops are there for their plans: a case that fails fails the
        // same way on any number of threads, and shows nothing.
        let loops = LOOPS_THAT_TOUCH_MORE
            .iter()
            .any(|(name, _)| path.ends_with(format!("{name}.mscl")));
        assert!(
            !(loops && text.contains("error")),
            "{}:\n{text}",
            path.display()
        );
        if path.ends_with("warns_on_rank_5.mscl") {
            for values in [
                "when r = 5, i = 32",
                "when r = 5, k = 16",
                "when r = 5, c = memory_channel(6, 5)",
            ] {
                assert!(
                    text.contains(values),
                    "no warning notes `{values}`:\n{text}"
                );
            }
        }
    }
}

/// Warnings of ops, channels and loop values of every kind on rank 5, of
/// no shard 0 (of 2, 3 or 8): their notes read the frames of another
/// thread's evaluation.
const WARNS_ON_RANK_5: &str = r#"program "p" {
    collective = test_collective(8, input_size: 2, output_size: 0)
}

for r in 0..8 {
    if r == 5 {
        for i in 0..70 { rank(r).copy(rank(r).input[1], rank(r).input[0], tb: 0) }
        let out = [memory_channel(6, 5) for k in 0..20]
        for c in out { c.signal(tb: 1) }
    }
    if r == 6 {
        let back = [memory_channel(5, 6) for k in 0..20]
        for c in back { c.wait(tb: 1) }
    }
}
"#;

/// A call whose argument records an op on another rank than the call's:
/// no shard may skip it.
const RECORDS_IN_AN_ARGUMENT: &str = r#"program "p" {
    collective = test_collective(8, input_size: 2, output_size: 0)
}

fn copied(r: int, on: int) -> chunk {
    rank(on).copy(rank(on).input[1], rank(on).input[0], tb: 0)
    return rank(r).input[0]
}

for r in 0..8 { rank(r).copy(rank(r).input[1], copied(r, (r + 1) % 8), tb: 1) }
"#;

const HEADER_2: &str =
    "program \"p\" {\n    collective = test_collective(8, input_size: 2, output_size: 0)\n}\n";

/// Loops over ranks whose iterations touch more than the rank of each: a
/// switch channel all its members list; or whose first iterations touch
/// only their rank, and later ones more (past the iterations every shard
/// watches, or on a later run): another rank, a variable from outside, an
/// early return. A shard that skipped other ranks' iterations then has it
/// wrong.
const LOOPS_THAT_TOUCH_MORE: [(&str, &str); 5] = [
    (
        // Each iteration makes a switch channel over its rank and the next:
        // every member rank lists it.
        "makes_a_switch_channel_of_two_ranks",
        "for r in 0..8 {\n    let sw = switch_channel([r, (r + 1) % 8], input)\n    sw.at_rank(r).reduce(buffer_offset: 0, size: 1, dst_chunk: rank(r).input[1], tb: 0)\n}\n",
    ),
    (
        "touches_another_rank_past_the_probe",
        "for r in 0..8 {\n    rank(r).copy(rank(r).input[1], rank(r).input[0], tb: 0)\n    if r == 6 { rank(1).copy(rank(1).input[1], rank(1).input[0], tb: 1) }\n}\n",
    ),
    (
        "touches_another_rank_later",
        "fn copies(k: int) {\n    for r in 0..8 {\n        rank(r).copy(rank(r).input[1], rank(r).input[0], tb: k)\n        if k == 1 && r == 3 { rank(5).copy(rank(5).input[1], rank(5).input[0], tb: 7) }\n    }\n}\ncopies(0)\ncopies(1)\n",
    ),
    (
        "counts_outside",
        "fn count(k: int) -> int {\n    let total = 0\n    for r in 0..8 {\n        total = total + 1\n        rank(r).copy(rank(r).input[1], rank(r).input[0], tb: k)\n    }\n    return total\n}\nlet a = count(0)\nlet b = count(1)\nrank(b - 1).copy(rank(b - 1).input[1], rank(b - 1).input[0], tb: 5)\n",
    ),
    (
        "returns_early_later",
        "fn first(k: int) -> int {\n    for r in 0..8 {\n        rank(r).copy(rank(r).input[1], rank(r).input[0], tb: k)\n        if r == 2 && k == 1 { return r }\n    }\n    return 7\n}\nlet a = first(0)\nlet b = first(1)\nrank(b).copy(rank(b).input[1], rank(b).input[0], tb: 5)\n",
    ),
];

const HEADER: &str =
    "program \"p\" {\n    collective = allreduce(8, chunk_factor: 8, inplace: true)\n}\n";

/// `text`, written to a file of its own in `dir`.
fn written(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(format!("{name}.mscl"));
    std::fs::write(&path, text).unwrap();
    path
}

/// Every example with one number of its program changed (to 0, 2 or 7,
/// up to six places each): programs that now fail here or there, record
/// other ops on other ranks, loop more or less. On one thread and on
/// three, the same plan or the same errors, and the same warnings.
#[test]
fn changed_examples_are_the_same_on_one_thread_and_on_three() {
    let small = |threads| Limits {
        max_ops: 20_000,
        max_iterations: 200_000,
        ..limits(threads)
    };
    let mut failed = 0;
    for path in common::example_files() {
        let text = std::fs::read_to_string(&path).unwrap();
        let numbers = numbers_after_params(&text);
        let step = numbers.len() / 6 + 1;
        for (k, at) in numbers.iter().step_by(step).enumerate() {
            let value = ["0", "2", "7"][k % 3];
            let changed = format!("{}{value}{}", &text[..at.start], &text[at.end..]);
            let seen_on = |threads| {
                let c = driver::compile_source_with(&path, changed.clone(), &[], small(threads));
                (c.result.is_err(), seen(&c))
            };
            let (fails, one) = seen_on(1);
            let (_, three) = seen_on(3);
            assert!(
                one == three,
                "{} with {value} at byte {}: three threads differ from one:\n--- one\n{}\n--- three\n{}",
                path.display(),
                at.start,
                &one[..one.len().min(2000)],
                &three[..three.len().min(2000)]
            );
            failed += usize::from(fails);
        }
    }
    // The changes reach the evaluator's errors, not only plans.
    assert!(failed >= 20, "only {failed} changed examples fail");
}

/// Where the integer literals of `text` are, past its `param` lines (a
/// param's default is a setting, not the algorithm).
fn numbers_after_params(text: &str) -> Vec<std::ops::Range<usize>> {
    let start = text
        .match_indices("\nparam ")
        .last()
        .map_or(0, |(i, _)| i + 1 + text[i + 1..].find('\n').unwrap_or(0));
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut i = start;
    while i < bytes.len() {
        let word_before = i > 0 && (bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
        if bytes[i].is_ascii_digit() && !word_before {
            let end = (i..bytes.len())
                .find(|&j| !bytes[j].is_ascii_alphanumeric())
                .unwrap_or(bytes.len());
            if text[i..end].bytes().all(|b| b.is_ascii_digit()) {
                found.push(i..end);
            }
            i = end;
        } else {
            i += 1;
        }
    }
    found
}

/// Errors in calls that one shard records and the others skip, the first
/// of them on a rank of shard 1 or later; an error in a skipped call's
/// arguments; the op and step limits crossed: each the error one thread
/// gives, at the same line with the same loop values.
#[test]
fn errors_are_those_of_one_thread() {
    let cases = [
        (
            "chunk_on_another_rank",
            // Rank 3 (shard 1 of 2, shard 3 of 8) fails first, rank 6 later.
            "for r in [3, 6] { rank(r).copy(rank(r).input[0], rank((r + 1) % 8).input[1], tb: 0) }\n",
        ),
        (
            "index_out_of_bounds",
            "for r in 0..8 { rank(r).copy(rank(r).input[0], rank(r).input[70 - r], tb: 0) }\n",
        ),
        (
            "thread_block_too_large",
            "let chs = { r: memory_channel((r + 1) % 8, r) for r in 0..8 }\nfor r in 0..8 { chs[r].signal(tb: 4093 + r) }\n",
        ),
        (
            "unpaired_signal",
            "let chs = { r: memory_channel((r + 1) % 8, r) for r in 0..8 }\nfor r in 1..8 { chs[r].signal(tb: 0) }\nfor r in 0..8 { chs[(r + 7) % 8].wait(tb: 0) }\n",
        ),
        (
            "too_many_ops",
            "for i in 0..200 { for r in 0..8 { rank(r).copy(rank(r).input[0], rank(r).input[1], tb: i) } }\n",
        ),
        (
            "too_many_steps",
            "for i in 0..1000 { for r in 0..8 { if i == 999 { rank(r).copy(rank(r).input[0], rank(r).input[1], tb: 0) } } }\n",
        ),
        (
            // Each call copies two lists of 63 chunks (7 steps), on every
            // rank: one thread runs out of steps, and so must every shard,
            // though each records a share of the calls.
            "copies_in_an_argument",
            "let others = [[rank(r).input[i] for i in 1..64] for r in 0..8]\nfor j in 0..80 { for r in 0..8 { rank(r).reduce(rank(r).input[0], others[r] + others[r], tb: 0) } }\n",
        ),
        (
            // Each call's arguments call a function eight times (a step
            // each): the shards that skip the call spend them too.
            "calls_in_an_argument",
            "fn at(i: int) -> int {\n    if i < 0 { return 0 }\n    return i\n}\nfor j in 0..70 { for r in 0..8 { rank(r).reduce(rank(r).input[0], [rank(r).input[at(1)], rank(r).input[at(2)], rank(r).input[at(3)], rank(r).input[at(4)], rank(r).input[at(5)], rank(r).input[at(6)], rank(r).input[at(7)], rank(r).input[at(8)]], tb: 0) } }\n",
        ),
        (
            // A loop over ranks, learnt and then skipped for other ranks,
            // near the step limit: one thread runs out of steps, and so
            // must the shards, though each runs its own ranks' iterations.
            "steps_in_skipped_iterations",
            "fn spin(k: int) {\n    for r in 0..8 { for i in 0..50 { if i == 49 { rank(r).copy(rank(r).input[0], rank(r).input[1], tb: 0) } } }\n}\nfor j in 0..20 { spin(j) }\n",
        ),
    ];
    let dir = common::scratch("shards-errors");
    for (name, body) in cases {
        let path = written(&dir, name, &format!("{HEADER}{body}"));
        let small = |threads| Limits {
            max_ops: 1_000,
            max_iterations: 5_000,
            ..limits(threads)
        };
        let shown = same_on_any_number_of_threads(&path, &[], small);
        assert!(shown.contains("error"), "{name} did not fail:\n{shown}");
    }
}

/// `msclc --threads N` writes the plan one thread writes.
#[test]
fn the_threads_option_keeps_the_plan() {
    let example =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/mscclpp/single_node/allreduce.mscl");
    let compile = |threads: &str| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_msclc"))
            .arg(&example)
            .args(["-D", "num_gpus=16", "-q", "--threads", threads])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    assert!(
        compile("1") == compile("5"),
        "--threads 5 wrote another plan"
    );
}
