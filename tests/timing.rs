//! `msclc sim --timing`: the predicted table, the critical paths, the
//! trace and picture of the timeline, topology files, and the model
//! against GPU measurements where benches/results has them.

mod common;

use common::{test, Needs};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn main() {
    common::run(vec![
        test(
            "table_has_the_nccl_tests_columns",
            Needs::Nothing,
            table_has_the_nccl_tests_columns,
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

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("msclc-timing-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
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
}

/// `# critical path at 1 KiB: 4.70 us = launch 2.00 + data 0.70 (1 ops) +
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
            assert!(
                (parts - total).abs() <= 0.05 + 0.001 * total,
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
    std::fs::remove_dir_all(&dir).ok();
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

/// A memory channel between ranks 0 and 8 of a topology of eight GPUs a
/// node crosses nodes, where only port channels connect: W0505 at the
/// line that made it, still timed, exit code 0. Four GPUs a node (a file)
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
    let path = scratch("pipeline").join("unpipelined.mscl");
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
    std::fs::remove_dir_all(&dir).ok();
}

fn trace_events(path: &Path) -> (Vec<Value>, Value) {
    let trace: Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).expect("the trace is JSON");
    let events = trace["traceEvents"]
        .as_array()
        .expect("traceEvents")
        .clone();
    (events, trace["otherData"].clone())
}

fn traces_are_valid_and_flows_join_real_ops() {
    let dir = scratch("trace");
    for example in [
        ALLREDUCE,
        "examples/mscclpp/single_node/allgather_pkt.mscl",
        "examples/mscclpp/multi_node/allgather.mscl",
        "examples/mscclpp/single_node/allgather_tbg.mscl",
    ] {
        let trace = dir.join("t.json");
        let text = stdout_of(&[
            "sim",
            example,
            "--timing",
            "h100-ib",
            "--size",
            "64K",
            "--trace",
            trace.to_str().unwrap(),
        ]);
        // Every op of the first execution is a slice.
        let ops_run: usize = text
            .split(", ")
            .find_map(|p| {
                p.strip_suffix(" ops run")
                    .and_then(|n| n.rsplit(' ').next()?.parse().ok())
            })
            .or_else(|| {
                text.lines()
                    .next()?
                    .split_whitespace()
                    .rev()
                    .nth(2)?
                    .parse()
                    .ok()
            })
            .expect("ops run");
        let (events, other) = trace_events(&trace);
        let slices: Vec<&Value> = events.iter().filter(|e| e["ph"] == "X").collect();
        assert_eq!(
            slices.len() * 2,
            ops_run,
            "{example}: one slice per op of the first of 2 executions"
        );
        assert_eq!(other["deadlock"], false);
        assert_eq!(other["size_bytes"], 65536);
        let inside = |e: &Value| {
            let ts = e["ts"].as_f64().unwrap();
            slices.iter().any(|s| {
                s["pid"] == e["pid"] && s["tid"] == e["tid"] && {
                    let start = s["ts"].as_f64().unwrap();
                    start <= ts && ts <= start + s["dur"].as_f64().unwrap()
                }
            })
        };
        let starts: Vec<&Value> = events.iter().filter(|e| e["ph"] == "s").collect();
        let ends: Vec<&Value> = events.iter().filter(|e| e["ph"] == "f").collect();
        assert!(!starts.is_empty(), "{example}: flows");
        assert_eq!(starts.len(), ends.len());
        for s in &starts {
            let f = ends
                .iter()
                .find(|f| f["id"] == s["id"])
                .expect("each flow ends");
            assert!(
                inside(s) && inside(f),
                "{example}: flow {s} -> {f} joins two ops"
            );
            let (from, to) = (s["ts"].as_f64().unwrap(), f["ts"].as_f64().unwrap());
            assert!(from <= to, "{example}: flow {s} -> {f} goes back in time");
        }
        // Each wait that ran was released by a signal flow.
        let waits = slices.iter().filter(|s| s["name"] == "wait").count();
        let signal_flows = starts.iter().filter(|s| s["cat"] == "signal").count();
        assert!(
            signal_flows >= waits,
            "{example}: {waits} waits, {signal_flows} signal flows"
        );
    }
}

fn a_deadlock_has_a_timeline_up_to_where_it_stopped() {
    let dir = scratch("deadlock");
    let program = dir.join("deadlock.mscl");
    std::fs::write(
        &program,
        "program \"e\" {\n    collective = allgather(2, chunk_factor: 1, inplace: false)\n}\nfor r in 0..2 {\n    let ch = memory_channel(1 - r, r)\n    rank(r).copy(rank(r).output[r], rank(r).input[0], tb: 0)\n    ch.wait(tb: 0)\n    ch.put(rank(1 - r).output[r], rank(r).input[0], tb: 0)\n    ch.signal(tb: 0)\n}\n",
    )
    .unwrap();
    let trace = dir.join("t.json");
    let out = msclc(&[
        "sim",
        program.to_str().unwrap(),
        "--timing",
        "h100-nvlink",
        "--size",
        "1M",
        "--trace",
        trace.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a deadlock is a problem found\n{text}"
    );
    assert!(
        text.contains("no predicted time: the plan deadlocks"),
        "{text}"
    );
    let (events, other) = trace_events(&trace);
    assert_eq!(other["deadlock"], true);
    let copies = events
        .iter()
        .filter(|e| e["ph"] == "X" && e["name"] == "copy")
        .count();
    assert_eq!(copies, 2, "each rank's copy ran before its wait");
    let stuck: Vec<&Value> = events.iter().filter(|e| e["ph"] == "i").collect();
    assert_eq!(stuck.len(), 2, "both blocks stopped");
    assert!(stuck
        .iter()
        .all(|e| e["name"].as_str().unwrap().contains("wait")));
}

fn the_picture_has_a_bar_per_op() {
    let dir = scratch("svg");
    let svg = dir.join("t.svg");
    let trace = dir.join("t.json");
    stdout_of(&[
        "sim",
        "examples/mscclpp/single_node/allgather.mscl",
        "--timing",
        "h100-nvlink",
        "--size",
        "1M",
        "--svg",
        svg.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
    ]);
    let text = std::fs::read_to_string(&svg).unwrap();
    let doc = roxmltree::Document::parse(&text).expect("the SVG is XML");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    let (events, _) = trace_events(&trace);
    let ops = events.iter().filter(|e| e["ph"] == "X").count();
    let tooltips = doc
        .descendants()
        .filter(|n| n.has_tag_name("title") && n.parent().is_some_and(|p| p.has_tag_name("rect")))
        .count();
    assert_eq!(tooltips, ops, "a bar with a tooltip per op");
    assert!(
        text.contains("h100-nvlink") && text.contains("1 MiB"),
        "the title says the topology and size"
    );
}

fn write_topology(dir: &Path, name: &str, json: &str) -> String {
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, json).unwrap();
    path.display().to_string()
}

/// The model answers as the machine it describes would.
fn the_model_follows_the_machine() {
    let dir = scratch("machine");
    let at = |example: &str, topology: &str, size: &str| {
        predicted_us(&["sim", example, "--timing", topology, "--size", size])
    };
    // Half the NVLink bandwidth: a large allreduce (NVLink-bound) takes
    // near twice as long.
    let half = write_topology(
        &dir,
        "half",
        r#"{"base": "h100-nvlink", "bandwidth_gbps": {"nvlink": 187.5}}"#,
    );
    let (quick, slow) = (
        at(ALLREDUCE, "h100-nvlink", "256M"),
        at(ALLREDUCE, &half, "256M"),
    );
    assert!(
        slow > 1.9 * quick && slow < 2.1 * quick,
        "{quick} us -> {slow} us"
    );
    // One block's copy and reduce rates bound what a block moves: with
    // the links four times as fast, twice as fast blocks make a large
    // allreduce faster again.
    let links = write_topology(
        &dir,
        "links",
        r#"{"base": "h100-nvlink", "bandwidth_gbps": {"nvlink": 1500}}"#,
    );
    let blocks = write_topology(
        &dir,
        "blocks",
        r#"{"base": "h100-nvlink", "bandwidth_gbps": {"nvlink": 1500, "block": 146.8, "reduce_block": 146.8}}"#,
    );
    assert!(at(ALLREDUCE, &blocks, "256M") < 0.8 * at(ALLREDUCE, &links, "256M"));
    // NVLS: a multimem store goes out once for every member, and the
    // multicast allgather gets faster.
    let nvls = "examples/mscclpp/single_node/allgather_nvls_zero_copy_pkt.mscl";
    let args = |top: &'static str| -> Vec<&'static str> {
        vec!["sim", nvls, "--timing", top, "--size", "1M"]
    };
    let time = |args: Vec<&str>| rows(&String::from_utf8_lossy(&msclc(&args).stdout))[0].time;
    assert!(time(args("h100-nvls")) < 0.7 * time(args("h100-nvlink")));
    // A slower proxy slows a port channel plan by its extra latency, at
    // least once per step it waits for.
    let port = "examples/mscclpp/multi_node/allgather.mscl";
    let lazy = write_topology(
        &dir,
        "lazy",
        r#"{"base": "h100-ib", "latency_us": {"proxy": 57.5}}"#,
    );
    let (before, after) = (at(port, "h100-ib", "1K"), at(port, &lazy, "1K"));
    assert!(after - before >= 50.0, "{before} us -> {after} us");
    // Small messages cost latency, large ones bandwidth: 1 KiB and 2 KiB
    // take about the same; 512 MiB and 1 GiB, twice.
    let (a, b) = (
        at(ALLREDUCE, "h100-nvlink", "1K"),
        at(ALLREDUCE, "h100-nvlink", "2K"),
    );
    assert!(b < 1.1 * a);
    let (c, d) = (
        at(ALLREDUCE, "h100-nvlink", "512M"),
        at(ALLREDUCE, "h100-nvlink", "1G"),
    );
    assert!(d > 1.9 * c && d < 2.1 * c);
    // All ranks on one GPU share its memory: no NVLink, not the same time.
    assert_ne!(
        at(ALLREDUCE, "emulated-h100", "64M"),
        at(ALLREDUCE, "h100-nvlink", "64M")
    );
}

fn bad_topologies_are_diagnostics() {
    let dir = scratch("bad");
    for (json, says) in [
        (
            r#"{"base": "h100-nvlink", "bandwith_gbps": {}}"#,
            "unknown field `bandwith_gbps`",
        ),
        (
            r#"{"gpus_per_node": 8}"#,
            "missing `one_gpu`, `nvls`, `sms`, `l2_mb`, `bandwidth_gbps.memory`",
        ),
        (r#"{"base": "a100"}"#, "`a100` is not a built-in topology"),
        (
            r#"{"base": "h100-ib", "latency_us": {"proxy": -1}}"#,
            "`proxy` cannot be negative",
        ),
        ("{", "not JSON"),
    ] {
        let path = write_topology(&dir, "bad", json);
        let out = msclc(&["sim", ALLREDUCE, "--timing", &path]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{json}: {err}");
        assert!(
            err.contains("error[E0807]") && err.contains(says),
            "{json}: {err}"
        );
    }
    let out = msclc(&["sim", ALLREDUCE, "--timing", "h200-nvlink"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("error[E0807]")
            && err.contains("h100-nvlink, h100-nvls, h100-ib, emulated-h100"),
        "{err}"
    );
}

/// The share of measured sizes `emulated-h100` predicts within 20%, over
/// every table of benches/results (`msclc run` on an H100, under the
/// command that made it). The issue's goal is 90%; this is where the
/// model stands, so that a change that makes it worse fails here.
const WITHIN_20_PERCENT: f64 = 0.78;

/// `msclc sim --timing emulated-h100`, with the options of the `msclc run`
/// command of each table of benches/results that shape the plan, against
/// the times measured: at least [`WITHIN_20_PERCENT`] of the sizes within
/// 20%. Each table's share is printed.
///
/// The same pairs are docs/timing-vs-measured.svg, which must be current:
/// `MSCLC_BLESS=1 cargo test --test timing` rewrites it.
fn emulated_h100_predicts_the_measurements() {
    let (mut checked, mut close) = (0, 0);
    let mut points: Vec<Point> = Vec::new();
    for file in common::gpu_results() {
        let text = std::fs::read_to_string(&file).unwrap();
        let command = text
            .lines()
            .find_map(|l| l.strip_prefix("$ msclc run "))
            .unwrap_or_else(|| panic!("{}: no `$ msclc run` line", file.display()));
        let mut args: Vec<&str> = vec!["sim"];
        let mut words = command.split_whitespace().peekable();
        while let Some(w) = words.next() {
            match w {
                // Options of `run` only: how it measures, not what.
                "--iters" | "--warmup" | "--timeout" => {
                    words.next();
                }
                "--no-cache" => {}
                _ => args.push(w),
            }
        }
        args.extend(["--timing", "emulated-h100"]);
        let predicted = rows(&stdout_of(&args));
        // A table's rows: the size first, the time sixth (a warning's
        // source lines above the table start with digits too).
        let measured: Vec<(u64, f64)> = text
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (f.len() >= 9).then_some(())?;
                Some((f[0].parse().ok()?, f[5].parse().ok()?))
            })
            .collect();
        let mut here = 0;
        for &(size, us) in &measured {
            let p = predicted
                .iter()
                .find(|r| r.size == size)
                .unwrap_or_else(|| panic!("{}: no prediction at {size} B", file.display()));
            here += usize::from(((p.time - us) / us).abs() <= 0.20);
            points.push(Point {
                unit_test: file
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("u_"),
                measured: us,
                predicted: p.time,
            });
        }
        println!(
            "    {}: {here} of {} sizes within 20%",
            file.file_name().unwrap().to_string_lossy(),
            measured.len()
        );
        checked += measured.len();
        close += here;
    }
    assert!(checked > 0, "benches/results has tables but no rows");
    let share = close as f64 / checked as f64;
    println!("    in all: {close} of {checked} ({:.0}%)", 100.0 * share);
    let picture = scatter(&points, close, checked);
    let committed = root().join("docs/timing-vs-measured.svg");
    if std::env::var_os("MSCLC_BLESS").is_some() {
        std::fs::write(&committed, &picture).unwrap();
    } else {
        assert!(
            std::fs::read_to_string(&committed).ok().as_deref() == Some(picture.as_str()),
            "{} is not the model's of today: refresh it with `MSCLC_BLESS=1 cargo test --test timing` and review it",
            committed.display()
        );
    }
    assert!(
        share >= WITHIN_20_PERCENT,
        "{close} of {checked} measured sizes predicted within 20% ({:.0}%), below {:.0}%",
        100.0 * share,
        100.0 * WITHIN_20_PERCENT
    );
}

/// One measured size: its table's kind, the time measured and predicted.
struct Point {
    unit_test: bool,
    measured: f64,
    predicted: f64,
}

/// Predicted against measured, both axes logarithmic in microseconds: the
/// diagonal is a perfect model, the band around it 20% either way.
fn scatter(points: &[Point], close: usize, checked: usize) -> String {
    let (lo, hi) = (1.0f64, 1e5f64);
    let (left, top, side) = (70.0, 40.0, 480.0);
    let at = |us: f64| (us.clamp(lo, hi).log10() - lo.log10()) / (hi.log10() - lo.log10()) * side;
    let x = |us: f64| left + at(us);
    let y = |us: f64| top + side - at(us);
    let mut out = String::new();
    let w = |out: &mut String, line: String| {
        out.push_str(&line);
        out.push('\n');
    };
    w(&mut out, format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" font-size=\"12\">",
        left + side + 190.0,
        top + side + 50.0
    ));
    w(
        &mut out,
        "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>".into(),
    );
    w(&mut out, format!(
        "<text x=\"{left}\" y=\"20\" font-size=\"14\">emulated-h100 against an H100: {close} of {checked} sizes within 20%</text>"
    ));
    // The band within 20%, and the diagonal.
    w(
        &mut out,
        format!(
        "<polygon points=\"{:.1},{:.1} {:.1},{:.1} {:.1},{:.1} {:.1},{:.1}\" fill=\"#e6f2e6\"/>",
        x(lo), y(lo * 1.2), x(hi / 1.2), y(hi), x(hi), y(hi * 0.8), x(lo / 0.8), y(lo)
    ),
    );
    w(
        &mut out,
        format!(
            "<line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"#7a7\"/>",
            x(lo),
            y(lo),
            x(hi),
            y(hi)
        ),
    );
    for decade in 0..=5 {
        let us = 10f64.powi(decade);
        let label = ["1", "10", "100", "1k", "10k", "100k"][decade as usize];
        w(&mut out, format!(
            "<line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"#ddd\"/><line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"#ddd\"/>",
            x(us), y(lo), x(us), y(hi), x(lo), y(us), x(hi), y(us)
        ));
        w(&mut out, format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{label}</text><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{label}</text>",
            x(us), y(lo) + 16.0, x(lo) - 6.0, y(us) + 4.0
        ));
    }
    w(
        &mut out,
        format!(
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">measured by msclc run (us)</text>",
        left + side / 2.0, top + side + 40.0
    ),
    );
    w(&mut out, format!(
        "<text transform=\"translate(20,{:.1}) rotate(-90)\" text-anchor=\"middle\">predicted by msclc sim --timing (us)</text>",
        top + side / 2.0
    ));
    for p in points {
        let colour = if p.unit_test { "#1f77b4" } else { "#d62728" };
        w(
            &mut out,
            format!(
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{colour}\" fill-opacity=\"0.7\"/>",
            x(p.measured), y(p.predicted)
        ),
        );
    }
    let legend = left + side + 20.0;
    for (k, (colour, text)) in [
        ("#1f77b4", "unit-test plans (u_*)"),
        ("#d62728", "collectives"),
        ("#e6f2e6", "within 20%"),
    ]
    .iter()
    .enumerate()
    {
        let row = top + 20.0 + 20.0 * k as f64;
        w(&mut out, format!(
            "<rect x=\"{legend}\" y=\"{:.1}\" width=\"10\" height=\"10\" fill=\"{colour}\"/><text x=\"{:.1}\" y=\"{:.1}\">{text}</text>",
            row - 9.0, legend + 16.0, row
        ));
    }
    out.push_str("</svg>\n");
    out
}
