//! Topology files: the model follows the machine they describe.

use super::*;

pub(crate) fn write_topology(dir: &Path, name: &str, json: &str) -> String {
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, json).unwrap();
    path.display().to_string()
}

/// The model answers as the machine it describes would.
pub(crate) fn the_model_follows_the_machine() {
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
    // A file some editor began with a byte-order mark is the same machine.
    let marked = write_topology(
        &dir,
        "marked",
        "\u{feff}{\"base\": \"h100-nvlink\", \"bandwidth_gbps\": {\"nvlink\": 187.5}}",
    );
    assert_eq!(at(ALLREDUCE, &marked, "256M"), slow);
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
    // Faster packet blocks never predict a packet plan slower: past the
    // L2 too, where packets go at `packet_block_past_l2`.
    let pkt = "examples/mscclpp/single_node/allreduce_pkt.mscl";
    let quick_packets = write_topology(
        &dir,
        "quick_packets",
        r#"{"base": "emulated-h100", "bandwidth_gbps": {"packet_block": 160}}"#,
    );
    for size in ["1M", "16M", "64M"] {
        let (before, after) = (
            at(pkt, "emulated-h100", size),
            at(pkt, &quick_packets, size),
        );
        assert!(after <= before, "{size}: {before} us -> {after} us");
    }
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
    // A barrier lets its blocks go its latency after the last arrives:
    // one the blocks begin and end with costs it once, two twice.
    let barrier_of = |name: &str, us: u32| {
        let json = format!(
            r#"{{"base": "h100-ib", "latency_us": {{"barrier": {us}, "launch_interval": 0}}}}"#
        );
        write_topology(&dir, name, &json)
    };
    let (no_barrier, slow_barrier) = (barrier_of("no_barrier", 0), barrier_of("slow_barrier", 100));
    let once = "examples/mscclpp/unit_tests/barrier_test.mscl";
    let twice = dir.join("barrier_twice.mscl");
    let text = std::fs::read_to_string(root().join(once)).unwrap();
    std::fs::write(&twice, format!("{text}rank(0).barrier(tb_list: [0, 1])\n")).unwrap();
    let twice = twice.to_str().unwrap();
    for (program, barriers) in [(once, 1.0), (twice, 2.0)] {
        let (fast, slow) = (
            at(program, &no_barrier, "1K"),
            at(program, &slow_barrier, "1K"),
        );
        assert!(
            (slow - fast - 100.0 * barriers).abs() < 0.01,
            "{program}: {fast} us -> {slow} us"
        );
    }
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
    // Launches issued one by one come no closer than the launch interval:
    // a 1 KiB allreduce takes it, a 1 GiB one does not notice it.
    let slow_host = write_topology(
        &dir,
        "slow_host",
        r#"{"base": "h100-nvlink", "latency_us": {"launch_interval": 50}}"#,
    );
    assert_eq!(at(ALLREDUCE, &slow_host, "1K"), 50.0);
    let explained = msclc(&[
        "sim",
        ALLREDUCE,
        "--timing",
        &slow_host,
        "--size",
        "1K",
        "--explain",
        "1K",
    ]);
    let explained = String::from_utf8_lossy(&explained.stdout);
    assert!(
        explained.contains("# at 1 KiB: 50.00 us a launch, the launch interval"),
        "{explained}"
    );
    assert_eq!(
        at(ALLREDUCE, &slow_host, "1G"),
        at(ALLREDUCE, "h100-nvlink", "1G")
    );
    // Every data op waits for memory once more: at least 1 us more, as a
    // data op is on the critical path.
    let slow_memory = write_topology(
        &dir,
        "slow_memory",
        r#"{"base": "h100-nvlink", "latency_us": {"memory": 1}}"#,
    );
    let (fast, slow) = (
        at(ALLREDUCE, "h100-nvlink", "1K"),
        at(ALLREDUCE, &slow_memory, "1K"),
    );
    assert!(slow >= fast + 1.0, "{fast} us -> {slow} us");
    // A file written before those two were added, every other field given
    // and no base, still reads: they are 0, as on h100-nvlink.
    let complete = write_topology(
        &dir,
        "complete",
        r#"{"gpus_per_node": 8, "one_gpu": false, "nvls": false, "sms": 132, "l2_mb": 50,
            "bandwidth_gbps": {"memory": 2400, "block": 73.4, "reduce_block": 73.4,
              "packet_block": 80, "packet_block_past_l2": 60, "nvlink": 375, "nic": 47},
            "latency_us": {"launch": 2.0, "op": 0.1, "nvlink": 0.6, "local": 0.3,
              "proxy": 7.5, "nic": 2.7, "barrier": 0.6, "multimem": 0.6}}"#,
    );
    assert_eq!(
        at(ALLREDUCE, &complete, "1K"),
        at(ALLREDUCE, "h100-nvlink", "1K")
    );
}

pub(crate) fn bad_topologies_are_diagnostics() {
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
            "`latency_us.proxy` cannot be negative",
        ),
        // Values a time cannot be computed from: an op of a bandwidth of
        // 1e-310 took no time, a plan of latency 0 no time at all.
        (
            r#"{"base": "h100-nvlink", "bandwidth_gbps": {"block": 1e-310}}"#,
            "`bandwidth_gbps.block` is 1e-310; the model takes 1e-6 to 1e9",
        ),
        (
            r#"{"base": "h100-nvlink", "latency_us": {"op": 1e308}}"#,
            "`latency_us.op` is 1e308; the model takes at most 1e9",
        ),
        (
            r#"{"base": "h100-nvlink", "latency_us": {"launch": 0}}"#,
            "`latency_us.launch` must be at least 0.000001",
        ),
        // (Less, and the table's bandwidths come out as NaN.)
        (
            r#"{"base": "h100-nvlink", "latency_us": {"launch": 5e-324, "op": 0}}"#,
            "`latency_us.launch` must be at least 0.000001",
        ),
        (
            r#"{"base": "h100-nvlink", "name": "a\nb\u001b[31m"}"#,
            "holds a control character or one a terminal does not show (a bidirectional override, a zero-width space): give a `name` of printable text",
        ),
        (
            r#"{"base": "h100-nvlink", "name": "a\u202eb"}"#,
            "the name `a\\u{202e}b` holds a control character or one a terminal does not show",
        ),
        (r#"{"base": "h100-nvlink", "name": " "}"#, "`name` is empty"),
        (
            r#"{"base": "h100-nvlink", "bandwidth_gbps": {"nvlnk": 300}}"#,
            "unknown field `bandwidth_gbps.nvlnk`",
        ),
        ("{", "not JSON"),
        ("", "not JSON"),
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
    let out = msclc(&["sim", ALLREDUCE, "--timing", "/dev/zero"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot read it: it is not a file"), "{err}");
    // A folder is refused; a pipe is read (its writer here a thread).
    let out = msclc(&["sim", ALLREDUCE, "--timing", dir.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot read it: it is not a file"), "{err}");
    let fifo = dir.join("topology.fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if made.is_ok_and(|s| s.success()) {
        let writer = {
            let fifo = fifo.clone();
            std::thread::spawn(move || {
                std::fs::write(fifo, r#"{"base": "h100-ib", "name": "piped"}"#)
            })
        };
        let out = msclc(&[
            "sim",
            ALLREDUCE,
            "--timing",
            fifo.to_str().unwrap(),
            "--size",
            "1K",
        ]);
        writer.join().unwrap().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{text}");
        assert!(text.contains("# predicted on piped"), "{text}");
    } else {
        eprintln!("skipped the pipe: mkfifo is not at hand");
    }
    let out = msclc(&["sim", ALLREDUCE, "--timing", "h200-nvlink"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("error[E0807]")
            && err.contains("h100-nvlink, h100-nvls, h100-ib, emulated-h100"),
        "{err}"
    );
}
