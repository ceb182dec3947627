//! `msclc sim --timing`: the predicted table, the critical paths, the
//! trace and picture of the timeline, topology files, and the model
//! against GPU measurements where benches/results has them.

#[path = "../common/mod.rs"]
mod common;
mod measured;
mod topology;
mod traces;

use common::{test, Needs};
use measured::*;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};
use topology::*;
use traces::*;

fn main() {
    common::run(vec![
        test(
            "table_has_the_nccl_tests_columns",
            Needs::Nothing,
            table_has_the_nccl_tests_columns,
        ),
        test(
            "a_pipeline_is_timed_on_what_it_covers_and_checked_at_each_size",
            Needs::Nothing,
            a_pipeline_is_timed_on_what_it_covers_and_checked_at_each_size,
        ),
        test(
            "critical_paths_add_up_to_the_time",
            Needs::Nothing,
            critical_paths_add_up_to_the_time,
        ),
        test(
            "a_long_block_is_one_short_line_of_the_path",
            Needs::Nothing,
            a_long_block_is_one_short_line_of_the_path,
        ),
        test(
            "a_plan_of_synchronization_only_gets_one_row",
            Needs::Nothing,
            a_plan_of_synchronization_only_gets_one_row,
        ),
        test(
            "no_size_of_the_range_is_an_error",
            Needs::Nothing,
            no_size_of_the_range_is_an_error,
        ),
        test(
            "a_pipeline_runs_the_iterations_of_its_size",
            Needs::Nothing,
            a_pipeline_runs_the_iterations_of_its_size,
        ),
        test(
            "a_memory_channel_between_nodes_is_a_warning",
            Needs::Nothing,
            a_memory_channel_between_nodes_is_a_warning,
        ),
        test(
            "traces_are_valid_and_flows_join_real_ops",
            Needs::Nothing,
            traces_are_valid_and_flows_join_real_ops,
        ),
        test(
            "a_deadlock_has_a_timeline_up_to_where_it_stopped",
            Needs::Nothing,
            a_deadlock_has_a_timeline_up_to_where_it_stopped,
        ),
        test(
            "the_picture_has_a_bar_per_op",
            Needs::Nothing,
            the_picture_has_a_bar_per_op,
        ),
        test(
            "the_model_follows_the_machine",
            Needs::Nothing,
            the_model_follows_the_machine,
        ),
        test(
            "bad_topologies_are_diagnostics",
            Needs::Nothing,
            bad_topologies_are_diagnostics,
        ),
        test(
            "emulated_h100_predicts_the_measurements",
            Needs::GpuResults,
            emulated_h100_predicts_the_measurements,
        ),
    ]);
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn msclc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_msclc"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("msclc runs")
}

fn stdout_of(args: &[&str]) -> String {
    let out = msclc(args);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.code() == Some(0),
        "msclc {args:?} exited {:?}\n{text}\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// The standard output of a timing whose plan is wrong at some sizes
/// only: exit code 1, and a line that says at how many.
fn stdout_of_unverified(args: &[&str], sizes: &str) -> String {
    let out = msclc(args);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(1), "msclc {args:?}\n{text}");
    let problem = format!("problem: the plan is not right at {sizes} sizes");
    assert!(text.contains(&problem), "{problem}\n{text}");
    text
}

fn scratch(name: &str) -> common::Scratch {
    common::scratch(&format!("timing-{name}"))
}

/// A table row: size, count, type, redop, root, time, algbw, busbw.
struct Row {
    size: u64,
    time: f64,
    algbw: f64,
    busbw: f64,
}

fn rows(text: &str) -> Vec<Row> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let number = |i: usize| f.get(i)?.parse::<f64>().ok();
            (f.len() == 8).then_some(())?;
            Some(Row {
                size: f[0].parse().ok()?,
                time: number(5)?,
                algbw: number(6)?,
                busbw: number(7)?,
            })
        })
        .collect()
}

/// The time of a one-size prediction.
fn predicted_us(args: &[&str]) -> f64 {
    let r = rows(&stdout_of(args));
    assert_eq!(r.len(), 1, "{args:?}");
    r[0].time
}

const ALLREDUCE: &str = "examples/mscclpp/single_node/allreduce.mscl";

fn table_has_the_nccl_tests_columns() {
    let text = stdout_of(&[
        "sim",
        ALLREDUCE,
        "--timing",
        "h100-nvlink",
        "--size",
        "1K:1M",
    ]);
    assert!(text.starts_with("verified:"), "{text}");
    assert!(
        text.contains(
            "#       size         count      type   redop    root     time   algbw   busbw"
        ),
        "{text}"
    );
    let r = rows(&text);
    let sizes: Vec<u64> = r.iter().map(|r| r.size).collect();
    assert_eq!(sizes, (10..=20).map(|k| 1u64 << k).collect::<Vec<_>>());
    for pair in r.windows(2) {
        assert!(
            pair[1].time >= pair[0].time,
            "more bytes never take less time"
        );
    }
    for row in &r {
        // algbw = size / time; busbw = algbw * 2(n-1)/n at 8 ranks.
        let algbw = row.size as f64 / 1e3 / row.time;
        assert!(
            (row.algbw - algbw).abs() <= 0.01 + algbw * 0.005,
            "algbw {} vs {algbw}",
            row.algbw
        );
        assert!((row.busbw - row.algbw * 1.75).abs() <= 0.02 + row.busbw * 0.005);
    }
    assert!(text.contains("# Avg bus bandwidth    : "), "{text}");
    let redops = |text: &str| -> Vec<String> {
        let data = text.lines().filter(|l| !l.starts_with('#'));
        data.filter_map(|l| Some(l.split_whitespace().nth(3)?.to_string()))
            .filter(|f| f.chars().all(|c| c.is_ascii_lowercase()))
            .collect()
    };
    assert_eq!(redops(&text), vec!["sum"; r.len()]);
    // The redop column is the plan's reduction, as nccl-tests prints it.
    let dir = scratch("redop");
    let max = dir.join("allreduce_max.mscl");
    let program = std::fs::read_to_string(ALLREDUCE).unwrap();
    let reduce = "[rank(peer).input[index]], tb: tb)";
    assert!(program.contains(reduce));
    let by_max = program.replace(reduce, "[rank(peer).input[index]], tb: tb, reduce_op: max)");
    std::fs::write(&max, by_max).unwrap();
    let max = max.to_str().unwrap();
    let args = ["sim", max, "--timing", "h100-nvlink", "--size", "1K:2K"];
    assert_eq!(redops(&stdout_of(&args)), vec!["max"; 2]);
}

/// `# critical path at 1 KiB: 4.70 us = launch 2.00 + data 0.70 (1 op) +
/// sync 0.80 (8 ops) + in flight 1.20; ...`: the parts add up, and each
/// size's critical path names blocks and ops.
fn critical_paths_add_up_to_the_time() {
    for example in [
        ALLREDUCE,
        "examples/mscclpp/single_node/allreduce_pkt.mscl",
        "examples/mscclpp/multi_node/allgather.mscl",
        "examples/mscclpp/single_node/allgather_tbg.mscl",
        "examples/mscclpp/single_node/allgather_pkt_rppkt.mscl",
        "examples/mscclpp/single_node/allreduce_pipeline.mscl",
    ] {
        let table = stdout_of(&["sim", example, "--timing", "h100-ib", "--size", "4K:4M"]);
        assert!(
            !table.contains("# critical path at"),
            "{example}: the table alone by default\n{table}"
        );
        let times: Vec<(u64, f64)> = rows(&table).iter().map(|r| (r.size, r.time)).collect();
        for &(size, time) in [times[0], times[times.len() / 2], times[times.len() - 1]].iter() {
            let text = stdout_of(&[
                "sim",
                example,
                "--timing",
                "h100-ib",
                "--size",
                "4K:4M",
                "--explain",
                &size.to_string(),
            ]);
            let paths: Vec<&str> = text
                .lines()
                .filter(|l| l.starts_with("# critical path at"))
                .collect();
            assert_eq!(paths.len(), 1, "{example}: --explain {size}\n{text}");
            let line = paths[0];
            let number = |after: &str| -> f64 {
                let rest = &line[line
                    .find(after)
                    .unwrap_or_else(|| panic!("{after} in {line}"))
                    + after.len()..];
                rest.split_whitespace()
                    .next()
                    .unwrap()
                    .trim_end_matches(';')
                    .parse()
                    .unwrap()
            };
            let total = number(": ");
            let parts =
                number("launch ") + number("data ") + number("sync ") + number("in flight ");
            assert!(
                (total - time).abs() <= 0.01 * time.max(1.0),
                "{example}: {line} vs {time}"
            );
            // Each part to the hundredth: visibly the total.
            assert!(
                (parts - total).abs() <= 0.025,
                "{example}: the parts of {line} add up to {parts}"
            );
            assert!(
                text.contains("#   rank "),
                "{example}: the path names its blocks\n{text}"
            );
            assert!(
                text.lines()
                    .all(|l| !l.starts_with("#   ") || l.chars().count() <= 120),
                "{example}: a path's lines fit a terminal\n{text}"
            );
        }
    }
}

/// A block of 20,000 copies (a nop between each two) is the critical path:
/// its line counts the ops by name instead of listing 40,000 runs (a
/// 1M-op block once printed 230 MB), and every size still gets its row.
fn a_long_block_is_one_short_line_of_the_path() {
    let dir = scratch("long-block");
    let program = dir.join("long.mscl");
    std::fs::write(
        &program,
        "program \"long\" {\n    collective = test_collective(1, input_size: 1, output_size: 1)\n}\nfor i in 0..20000 {\n    rank(0).copy(rank(0).output[0], rank(0).input[0], tb: 0)\n}\n",
    )
    .unwrap();
    let text = stdout_of(&[
        "sim",
        program.to_str().unwrap(),
        "--timing",
        "h100-nvlink",
        "--size",
        "1K:1M",
        "--explain",
        "1M",
    ]);
    assert_eq!(rows(&text).len(), 11, "{text}");
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("#   rank 0 tb 0"))
        .collect();
    assert_eq!(lines.len(), 1, "one path line:\n{text}");
    assert!(
        lines[0].ends_with(" us): 39999 ops: copy x20000, nop x19999"),
        "{}",
        lines[0]
    );
    // A size below the table's says which to ask for.
    let args = [
        "sim",
        program.to_str().unwrap(),
        "--timing",
        "h100-nvlink",
        "--size",
        "1K:4K",
        "--explain",
        "100",
    ];
    let text = stdout_of(&args);
    assert!(text.contains("# --explain 100: no row of the table at or below 100 B; the smallest is 1024 B (--explain 1024)"), "{text}");
}

/// A plan whose buffers have no chunks (signals and waits only) is the
/// same at every size: one row at 0 bytes, its time a launch's, as `msclc
/// run` prints it; not a row per size, nor none.
fn a_plan_of_synchronization_only_gets_one_row() {
    let text = stdout_of(&[
        "sim",
        "examples/mscclpp/unit_tests/signal_wait/signal_wait_test.mscl",
        "--timing",
        "h100-nvlink",
        "--size",
        "1K:1M",
    ]);
    let r = rows(&text);
    assert_eq!(r.len(), 1, "{text}");
    assert_eq!(r[0].size, 0, "{text}");
    assert!(r[0].time > 0.0 && r[0].algbw == 0.0, "{text}");
}

/// A `--size` range of which no size runs the plan is an error, E0808 as
/// `msclc run` gives it (exit code 2), after the verdict: not a table of
/// skipped sizes and an average bandwidth of 0.
fn no_size_of_the_range_is_an_error() {
    let out = msclc(&[
        "sim",
        "examples/simple_allgather.mscl",
        "--timing",
        "h100-nvlink",
        "--size",
        "8:16",
    ]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    assert!(stdout.starts_with("verified:"), "{stdout}");
    assert!(!stdout.contains("Avg bus bandwidth"), "{stdout}");
    assert!(
        stderr.contains("error[E0808]: no size of --size 8:16 runs this plan: at 16 B, 16 B is below the smallest size this plan runs at, 32 B"),
        "{stderr}"
    );
}

/// A pipeline runs as many iterations as the executor runs at each size,
/// `ceil(num_chunks * chunk / unit_size)`: the pipelined AllReduce (1 MiB
/// units, two chunks per buffer) takes the same time as the same program
/// unpipelined while a chunk fits in one unit, and overlaps its three
/// blocks past it, nearly halving the time at 64 MiB.
fn a_pipeline_runs_the_iterations_of_its_size() {
    let piped = "examples/mscclpp/single_node/allreduce_pipeline.mscl";
    let source = std::fs::read_to_string(root().join(piped)).unwrap();
    let opening = "pipeline(unit_size: 1 << 20, num_chunks: 1) {\n";
    assert!(source.contains(opening), "{piped} has changed: {opening}");
    let unpiped = source.replacen(opening, "", 1);
    let unpiped = &unpiped[..unpiped.trim_end().rfind('}').unwrap()];
    let dir = scratch("pipeline");
    let path = dir.join("unpipelined.mscl");
    std::fs::write(&path, unpiped).unwrap();
    let times = |program: &str| -> Vec<(u64, f64)> {
        let args = [
            "sim",
            program,
            "--timing",
            "h100-nvls",
            "--size",
            "4K:64M",
            "--quiet",
        ];
        rows(&stdout_of(&args))
            .iter()
            .map(|r| (r.size, r.time))
            .collect()
    };
    let (p, u) = (times(piped), times(path.to_str().unwrap()));
    assert_eq!(p.len(), u.len());
    for (&(size, piped), &(_, unpiped)) in p.iter().zip(&u) {
        if size <= 2 << 20 {
            // One chunk of at most 1 MiB: one iteration, the same ops.
            assert!(
                (piped - unpiped).abs() <= 0.01 * unpiped,
                "{size} B: {piped} vs {unpiped} us"
            );
        } else if size == 64 << 20 {
            // 32 iterations of 1 MiB.
            assert!(piped < 0.6 * unpiped, "{size} B: {piped} vs {unpiped} us");
        }
    }
    // The critical path at 64 MiB goes through the ops of every iteration.
    let text = stdout_of(&[
        "sim",
        piped,
        "--timing",
        "h100-nvls",
        "--size",
        "4K:64M",
        "--explain",
        "64M",
    ]);
    let line = text
        .lines()
        .find(|l| l.starts_with("# critical path at 64 MiB"))
        .unwrap_or_else(|| panic!("{text}"));
    let ops: u32 = line
        .split("data ")
        .nth(1)
        .and_then(|r| r.split('(').nth(1))
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    assert!(
        ops >= 32,
        "32 iterations, yet {ops} data ops on the path: {line}"
    );
}

/// What a pipeline covers is what is timed: an op of eight chunks under
/// `num_chunks: 1` moves one of them (a wrong plan, W0509, timed as it
/// would run), in about an eighth of the time it takes under 8. And a
/// size whose iterations the simulator finds wrong, though its two
/// verify, is skipped with what it found: here a block copies 1 MiB out
/// of scratch after the first 512 KiB of it were released (units of
/// 512 KiB against 1 MiB), a race from 1 MiB up; and a hang found at the
/// executor's own count past 1,024 iterations. Sizes whose iterations are
/// capped are said to be.
fn a_pipeline_is_timed_on_what_it_covers_and_checked_at_each_size() {
    let dir = scratch("cover");
    let covered = |num_chunks: u32| {
        let path = dir.join(format!("cover{num_chunks}.mscl"));
        let program = format!(
            "program \"p\" {{ collective = allgather(1, chunk_factor: 8, inplace: false) }}\n\
             let r = rank(0)\n\
             pipeline(unit_size: 1 << 20, num_chunks: {num_chunks}) {{\n\
             r.copy(r.output[0..8], r.input[0..8], tb: 0)\n\
             }}\n"
        );
        std::fs::write(&path, program).unwrap();
        let args = [
            "sim",
            path.to_str().unwrap(),
            "--timing",
            "h100-nvlink",
            "--size",
            "64M:64M",
        ];
        let out = msclc(&args);
        rows(&String::from_utf8_lossy(&out.stdout))[0].time
    };
    let (one, eight) = (covered(1), covered(8));
    assert!(one < 0.2 * eight, "{one} vs {eight} us");
    let handoff = dir.join("handoff.mscl");
    std::fs::write(
        &handoff,
        "program \"t\" { collective = allgather(1, chunk_factor: 1, inplace: false) }\n\
         let r = rank(0)\n\
         let s = scratch(0, 1)\n\
         let sem = semaphore(0, initial_value: 0)\n\
         pipeline(unit_size: 1 << 19, num_chunks: 1) { r.copy(s[0], r.input[0], tb: 0)  sem.release(tb: 0) }\n\
         pipeline(unit_size: 1 << 20, num_chunks: 1) { sem.acquire(tb: 1)  r.copy(r.output[0], s[0], tb: 1) }\n",
    )
    .unwrap();
    let args = [
        "sim",
        handoff.to_str().unwrap(),
        "--timing",
        "h100-nvlink",
        "--size",
        "256K:2M",
    ];
    let text = stdout_of_unverified(&args, "2 of the 4");
    let sizes: Vec<u64> = rows(&text).iter().map(|r| r.size).collect();
    assert_eq!(sizes, [256 << 10, 512 << 10], "{text}");
    assert!(
        text.contains("# size 1048576 B skipped: with its pipelines run as many iterations as at this size (msclc sim verifies two), data race on rank 0 scratch chunk 0"),
        "{text}"
    );
    // n releases and 2n acquires hang from 2 KiB (chunks of 1 KiB in
    // units of 1 KiB), and are found to at every size up to 4 MiB, where
    // the pipelines run 2,048 and 4,096 iterations (past 1,024 too).
    let counts = dir.join("counts.mscl");
    std::fs::write(
        &counts,
        "program \"t\" { collective = test_collective(1, input_size: 2, output_size: 2) }\n\
         let r = rank(0)\n\
         let s = scratch(0, 2)\n\
         let sem = semaphore(0, initial_value: 0)\n\
         pipeline(unit_size: 1 << 10, num_chunks: 1) { r.copy(s[0], r.input[0], tb: 0)  sem.release(tb: 0) }\n\
         pipeline(unit_size: 1 << 10, num_chunks: 2) { sem.acquire(tb: 1)  r.copy(r.output[0..2], r.input[0..2], tb: 1) }\n",
    )
    .unwrap();
    let args = [
        "sim",
        counts.to_str().unwrap(),
        "--timing",
        "h100-nvlink",
        "--size",
        "1K:4M",
    ];
    let text = stdout_of_unverified(&args, "12 of the 13");
    assert_eq!(rows(&text).len(), 1, "{text}");
    assert!(
        text.contains("# size 4194304 B skipped: the plan deadlocks when its pipelines run as many iterations as at this size"),
        "{text}"
    );
    // Where the plan is wrong at every size, that is the finding (exit
    // code 1), not a range of sizes none of which runs it (E0808).
    // (And a timeline asked for is not written, not refused.)
    let svg = dir.join("counts.svg");
    let every = [
        "sim",
        counts.to_str().unwrap(),
        "--timing",
        "h100-nvlink",
        "--size",
        "2K:8K",
        "--svg",
        svg.to_str().unwrap(),
    ];
    let text = stdout_of_unverified(&every, "3 of the 3");
    assert!(rows(&text).is_empty(), "{text}");
    assert!(
        text.contains("# no timeline written: no size has a time") && !svg.exists(),
        "{text}"
    );
    // Thousands of iterations each move their unit: a two-stage pipeline
    // of 64 KiB units goes no slower per byte as the message grows (no
    // iteration takes the whole range while the others take none).
    let stages = dir.join("stages.mscl");
    std::fs::write(
        &stages,
        "program \"p\" { collective = allgather(1, chunk_factor: 1, inplace: false) }\n\
         let r = rank(0)\n\
         let s = scratch(0, 1)\n\
         let sem = semaphore(0, initial_value: 0)\n\
         pipeline(unit_size: 1 << 16, num_chunks: 1) {\n\
         r.copy(s[0], r.input[0], tb: 0)  sem.release(tb: 0)\n\
         sem.acquire(tb: 1)  r.copy(r.output[0], s[0], tb: 1)\n\
         }\n",
    )
    .unwrap();
    let args = [
        "sim",
        stages.to_str().unwrap(),
        "--timing",
        "h100-nvlink",
        "--size",
        "64M:1G",
    ];
    let text = stdout_of(&args);
    let algbw: Vec<f64> = rows(&text).iter().map(|r| r.algbw).collect();
    assert_eq!(algbw.len(), 5);
    assert!(algbw.windows(2).all(|w| w[1] >= 0.99 * w[0]), "{algbw:?}");
    // Past 4,096 iterations they are timed as 4,096, and the table says
    // from which size.
    assert!(
        text.contains("# from 536870912 B on, pipelines run more iterations than are timed (8192 at 536870912 B, timed as 4096,"),
        "{text}"
    );
}

/// A memory channel between ranks 0 and 8 of a topology of eight GPUs a
/// node crosses nodes, where only port channels connect: W0505 at the
/// line that made it, still timed, exit code 0. Four GPUs a node (a file)
/// warns about ranks 0 and 5 too; sixteen a node, nothing.
fn a_memory_channel_between_nodes_is_a_warning() {
    let dir = scratch("node-channel");
    let program = dir.join("cross.mscl");
    let text = |peer: u32| {
        format!(
            "program \"e\" {{\n    collective = test_collective(16, input_size: 1, output_size: 1)\n}}\nlet ch = memory_channel({peer}, 0)\nch.put(rank({peer}).output[0], rank(0).input[0], tb: 0)\nch.signal(tb: 0, data_sync: before)\nmemory_channel(0, {peer}).wait(tb: 0, data_sync: after)\n"
        )
    };
    let warned = |topology: &str, peer: u32| {
        std::fs::write(&program, text(peer)).unwrap();
        let out = msclc(&[
            "sim",
            program.to_str().unwrap(),
            "--timing",
            topology,
            "--size",
            "1K",
        ]);
        assert_eq!(out.status.code(), Some(0), "{topology}");
        assert_eq!(
            rows(&String::from_utf8_lossy(&out.stdout)).len(),
            1,
            "{topology}: still timed"
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let err = warned("h100-ib", 8);
    assert!(
        err.contains("warning[W0505]: a memory channel between rank 0 and rank 8, on different nodes of h100-ib")
            && err.contains("cross.mscl:4:10"),
        "{err}"
    );
    assert!(
        !warned("h100-ib", 5).contains("W0505"),
        "ranks 0 and 5 share a node of eight"
    );
    let four = write_topology(&dir, "four", r#"{"base": "h100-ib", "gpus_per_node": 4}"#);
    assert!(
        warned(&four, 5).contains("W0505"),
        "ranks 0 and 5 on nodes of four"
    );
    let sixteen = write_topology(
        &dir,
        "sixteen",
        r#"{"base": "h100-ib", "gpus_per_node": 16}"#,
    );
    assert!(
        !warned(&sixteen, 8).contains("W0505"),
        "one node of sixteen"
    );
}
