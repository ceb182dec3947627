//! The trace and picture of a timeline.

use super::*;

pub(crate) fn trace_events(path: &Path) -> (Vec<Value>, Value) {
    let trace: Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).expect("the trace is JSON");
    let events = trace["traceEvents"]
        .as_array()
        .expect("traceEvents")
        .clone();
    (events, trace["otherData"].clone())
}

pub(crate) fn traces_are_valid_and_flows_join_real_ops() {
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

pub(crate) fn a_deadlock_has_a_timeline_up_to_where_it_stopped() {
    let dir = scratch("deadlock");
    let program = dir.join("deadlock.mscl");
    std::fs::write(
        &program,
        "program \"e\" {\n    collective = allgather(2, chunk_factor: 1, inplace: false)\n}\nfor r in 0..2 {\n    let ch = memory_channel(1 - r, r)\n    rank(r).copy(rank(r).output[r], rank(r).input[0], tb: 0)\n    ch.wait(tb: 0)\n    ch.put(rank(1 - r).output[r], rank(r).input[0], tb: 0)\n    ch.signal(tb: 0)\n}\n",
    )
    .unwrap();
    let (trace, svg) = (dir.join("t.json"), dir.join("t.svg"));
    let out = msclc(&[
        "sim",
        program.to_str().unwrap(),
        "--timing",
        "h100-nvlink",
        "--size",
        "1M",
        "--trace",
        trace.to_str().unwrap(),
        "--svg",
        svg.to_str().unwrap(),
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
    // A kernel that never ends has no critical path, and its picture
    // claims no predicted time.
    assert!(
        events.iter().all(|e| e["args"]["critical"] != true),
        "no op on a critical path"
    );
    let picture = std::fs::read_to_string(&svg).unwrap();
    assert!(picture.contains("deadlock: 2 blocks stuck, the last op ending at"));
    assert!(!picture.contains("predicted") && !picture.contains("critical path"));
    // `-` names no file here: standard output has the verdict and table.
    for flag in ["--trace", "--svg"] {
        let out = msclc(&[
            "sim",
            program.to_str().unwrap(),
            "--timing",
            "h100-nvlink",
            flag,
            "-",
        ]);
        assert_eq!(out.status.code(), Some(2), "{flag}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("the timeline goes to a file"), "{err}");
    }
    assert!(!std::path::Path::new("-").exists(), "no file named -");
    // A plan that hangs only in a later launch (a semaphore each launch
    // runs down) is timed on its first, and the table says so.
    let later = dir.join("later.mscl");
    std::fs::write(
        &later,
        "program \"sem\" {\n    collective = test_collective(1, input_size: 1, output_size: 1)\n}\nsemaphore(0, initial_value: 1).acquire(tb: 0)\nrank(0).copy(rank(0).output[0], rank(0).input[0], tb: 0)\n",
    )
    .unwrap();
    let out = msclc(&[
        "sim",
        later.to_str().unwrap(),
        "--timing",
        "h100-nvlink",
        "--size",
        "1M",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains(
            "# the plan deadlocks in a later execution: the times below are those of its first"
        ),
        "{text}"
    );
    assert!(text.contains("\n     1048576 "), "a row for 1 MiB: {text}");
}

pub(crate) fn the_picture_has_a_bar_per_op() {
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
