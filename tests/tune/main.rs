//! `msclc tune` as a user runs it: the plan set it writes tiles the span,
//! every plan in it verifies, its index says what the plans are, a
//! candidate that deadlocks is dropped with its reason, and the tuned
//! multi-node AllReduce is at least as fast as MSCCL++'s four hand-made
//! default plans at every size.

#[path = "../common/mod.rs"]
mod common;
mod files;
mod refusals;

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

const MULTI_NODE: &str = "examples/mscclpp/default_algos/allreduce_multi_nodes.mscl";

fn msclc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_msclc"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("msclc runs")
}

fn scratch(name: &str) -> common::Scratch {
    common::scratch(&format!("tune-{name}"))
}

fn tune(args: &[&str], dir: &Path) -> (String, Value) {
    let mut all = vec!["tune"];
    all.extend_from_slice(args);
    all.extend(["-o", dir.to_str().unwrap()]);
    let out = msclc(&all);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let index = std::fs::read_to_string(dir.join("index.json")).expect("index.json");
    (text, serde_json::from_str(&index).expect("JSON"))
}

/// Predicted time of `program` with `defines` at each size of MIN:MAX.
fn predicted(program: &str, defines: &[String], span: &str) -> Vec<(u64, f64)> {
    let mut args = vec![
        "sim", program, "--timing", "h100-ib", "--size", span, "--quiet",
    ];
    for d in defines {
        args.extend(["-D", d.as_str()]);
    }
    let out = msclc(&args);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 8).then_some(())?;
            Some((f[0].parse().ok()?, f[5].parse().ok()?))
        })
        .collect()
}

#[test]
fn the_plan_set_tiles_the_span_verifies_and_matches_its_index() {
    let dir = scratch("tiles");
    // tbg and instances vary (the program lists them); protocol too, from
    // the command line; 48 ranks is 6 nodes.
    let (text, index) = tune(
        &[
            MULTI_NODE,
            "--timing",
            "h100-ib",
            "--size",
            "1000:3M",
            "-D",
            "num_gpus=24",
            "--vary",
            "tbg=1,4",
        ],
        &dir,
    );
    assert!(
        text.contains("# varied: tbg [1, 4], instances [1, 2]"),
        "{text}"
    );
    let plans = index["plans"].as_array().unwrap();
    assert!(!plans.is_empty());
    // Tiled: from MIN to MAX, each range starting one byte after the last.
    let mut next = 1000u64;
    for plan in plans {
        let (min, max) = (
            plan["min_message_size"].as_u64().unwrap(),
            plan["max_message_size"].as_u64().unwrap(),
        );
        assert_eq!(min, next, "{index}");
        assert!(max >= min);
        next = max + 1;
        // The file is the plan the index says: its sizes, its params.
        let file = dir.join(plan["file"].as_str().unwrap());
        let json: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(json["min_message_size"].as_u64(), Some(min));
        assert_eq!(json["max_message_size"].as_u64(), Some(max));
        assert_eq!(json["gpus"].as_array().unwrap().len(), 24);
        let tbg = plan["params"]["tbg"].as_str().unwrap();
        let defines = vec![
            "num_gpus=24".to_string(),
            format!("tbg={tbg}"),
            format!(
                "instances={}",
                plan["params"]["instances"].as_str().unwrap()
            ),
            format!("min_message_size={min}"),
            format!("max_message_size={max}"),
        ];
        let again = {
            let mut args = vec![MULTI_NODE];
            for d in &defines {
                args.extend(["-D", d.as_str()]);
            }
            msclc(&args)
        };
        assert!(
            again.stdout == std::fs::read(&file).unwrap(),
            "{}: not the plan its params compile to",
            file.display()
        );
        // Every written plan verifies.
        let sim = msclc(&["sim", file.to_str().unwrap(), "--quiet"]);
        assert_eq!(sim.status.code(), Some(0), "{}", file.display());
    }
    assert_eq!(next, 3 << 20 | 1, "the last range ends at MAX");
    // What the plans won against: every candidate that verified, with its
    // predictions, in the index and (as a line named by its params) in
    // the picture.
    let verified = index["verified"].as_array().unwrap();
    let dropped = index["dropped"].as_array().unwrap();
    assert_eq!(
        verified.len() + dropped.len(),
        index["tried"].as_u64().unwrap() as usize
    );
    let svg = std::fs::read_to_string(dir.join("busbw.svg")).unwrap();
    for candidate in verified {
        let params = candidate["params"].as_str().unwrap();
        assert!(
            !candidate["predicted"].as_array().unwrap().is_empty(),
            "{candidate}"
        );
        assert!(
            svg.contains(&format!("<title>{params}</title>")),
            "{params}"
        );
    }
}

/// MSCCL++'s default AllReduce for 2 and 4 nodes is four hand-made plans
/// of this program: tbg 1 from 1K to 64K, tbg 4 from 128K to 2M
/// (`msclc install` writes them). Tuned over the values the program
/// lists, the plan set is predicted at most as slow at every size.
#[test]
fn tuned_is_at_least_as_fast_as_the_default_plans() {
    for gpus in ["16", "32"] {
        let dir = scratch(&format!("defaults-{gpus}"));
        let define = format!("num_gpus={gpus}");
        let (_, index) = tune(
            &[
                MULTI_NODE, "--timing", "h100-ib", "--size", "1K:2M", "-D", &define,
            ],
            &dir,
        );
        let mut tuned = Vec::new();
        for plan in index["plans"].as_array().unwrap() {
            for p in plan["predicted"].as_array().unwrap() {
                tuned.push((p["size"].as_u64().unwrap(), p["time_us"].as_f64().unwrap()));
            }
        }
        let small = predicted(MULTI_NODE, &[define.clone(), "tbg=1".into()], "1K:64K");
        let large = predicted(MULTI_NODE, &[define.clone(), "tbg=4".into()], "128K:2M");
        let defaults: Vec<(u64, f64)> = small.into_iter().chain(large).collect();
        assert_eq!(defaults.len(), 12);
        assert_eq!(tuned.len(), 12, "{index}");
        for ((size, t), (dsize, d)) in tuned.iter().zip(&defaults) {
            assert_eq!(size, dsize);
            // The tables print two decimals.
            assert!(
                *t <= d + 0.005,
                "{gpus} ranks, {size} B: tuned {t} us, default {d} us"
            );
        }
    }
}

/// A range that starts at 2 GiB or more is written as asked, with the
/// warning that the executor reads its start as another number (it keeps
/// `min_message_size` in a 32-bit int: 2 GiB is negative there, widened to
/// nearly 2^64), naming the plan's file.
#[test]
fn a_range_from_2_gib_is_written_with_the_executors_reading_of_it() {
    let dir = scratch("large");
    let program = "examples/mscclpp/single_node/allreduce.mscl";
    let mut args = vec![
        "tune",
        program,
        "--timing",
        "h100-nvlink",
        "--size",
        "2G:4G",
    ];
    args.extend([
        "--vary",
        "num_threads_per_block=512,1024",
        "-o",
        dir.to_str().unwrap(),
    ]);
    let out = msclc(&args);
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("warning[W0502]: ")
            && err.contains("_2G_4G.json: min_message_size is 2147483648")
            && err.contains("which makes it 18446744071562067968, above max_message_size (4294967296): the executor refuses the plan at every size"),
        "{err}"
    );
    let index: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("index.json")).unwrap()).unwrap();
    assert_eq!(
        index["plans"][0]["min_message_size"].as_u64(),
        Some(2 << 30)
    );
}

/// The plans tune writes carry its ranges, not the program's: a program
/// whose own `min_message_size` the executor would misread (3 GB, read as
/// nearly 2^64) is tuned like any other, and only the ranges written are
/// warned of.
#[test]
fn the_programs_own_misread_min_message_size_drops_no_candidate() {
    let program = "examples/mscclpp/single_node/allreduce.mscl";
    let out = msclc(&[
        "tune",
        program,
        "--timing",
        "h100-nvlink",
        "--size",
        "3G:4G",
        "-D",
        "min_message_size=3000000000",
        "--vary",
        "num_threads_per_block=512,1024",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("2 verified, 0 dropped"), "{said}");
    assert!(
        err.contains(".json: min_message_size is 3221225472"),
        "{err}"
    );
    assert!(!err.contains("3000000000"), "{err}");
}

/// Candidates are compared at the size asked, though each is timed at it
/// rounded down to its own chunks (1000 B: 512 for one, 896 for another):
/// the gain over the defaults is what the two bus bandwidths say.
#[test]
fn candidates_are_compared_at_the_size_asked() {
    let out = msclc(&[
        "tune",
        "tests/tune/allgather_two_ways.mscl",
        "--timing",
        "h100-nvlink",
        "--size",
        "1000:4000",
        "-q",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let rows: Vec<Vec<&str>> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split_whitespace().collect())
        .filter(|f: &Vec<&str>| f.len() >= 7)
        .collect();
    assert_eq!(rows.len(), 3, "{text}");
    for f in rows {
        let n = f.len();
        let busbw: f64 = f[n - 3].parse().unwrap();
        let defaults: f64 = f[n - 2].parse().unwrap();
        let gain: f64 = f[n - 1].trim_end_matches('%').parse().unwrap();
        // Both printed to 0.01 GB/s: the gain they allow, and 1% more.
        let low = 100.0 * ((busbw - 0.005) / (defaults + 0.005) - 1.0) - 1.0;
        let high = 100.0 * ((busbw + 0.005) / (defaults - 0.005) - 1.0) + 1.0;
        assert!((low..=high).contains(&gain), "{f:?}: {text}");
    }
    // The rows' figures are of the sizes the plans run, and say so.
    assert!(
        text.contains("# time and busbw of a size the plan's chunks do not divide are those of the size rounded down to them, as it runs it: 1000 at "),
        "{text}"
    );
}

/// The index says the rank count `--nranks` asked for: the chosen params
/// alone compile to the program's default count.
#[test]
fn the_index_keeps_the_rank_count_asked() {
    let dir = scratch("nranks");
    let program = "tests/tune/allgather_two_ways.mscl";
    let common = [program, "--timing", "h100-nvlink", "--size", "1K:2K"];
    let (_, index) = tune(&[&common[..], &["--nranks", "4"]].concat(), &dir);
    assert_eq!(index["nranks"], 4, "{index}");
    let file = index["plans"][0]["file"].as_str().unwrap();
    let plan: Value = serde_json::from_slice(&std::fs::read(dir.join(file)).unwrap()).unwrap();
    assert_eq!(plan["gpus"].as_array().map(Vec::len), Some(4));
    let (_, index) = tune(&common, &dir);
    assert_eq!(index["nranks"], Value::Null, "{index}");
}

/// A plan's range stays within the program's own message sizes, though
/// the span asked runs past them (simple_allgather declares at most 1 GiB),
/// and the sizes no plan serves are said.
#[test]
fn a_plan_range_stays_within_the_programs_own_sizes() {
    let dir = scratch("own-sizes");
    let args = [
        "examples/simple_allgather.mscl",
        "--timing",
        "h100-nvlink",
        "--size",
        "1G:2147483647",
        "--vary",
        "name=first,second",
    ];
    let (text, index) = tune(&args, &dir);
    let last = index["plans"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["max_message_size"], 1u64 << 30, "{index}");
    assert!(
        text.contains("# no plan serves 1073741825 to 2147483647 B: the program's sizes stop at 1073741824 B (its max_message_size)"),
        "{text}"
    );
    let plan = std::fs::read_to_string(dir.join(last["file"].as_str().unwrap())).unwrap();
    let plan: Value = serde_json::from_str(&plan).unwrap();
    assert_eq!(plan["max_message_size"], 1u64 << 30);
}

/// A value given twice to `--vary` (or twice over, as 512 and 0x200) is
/// one candidate.
#[test]
fn a_value_varied_twice_is_one_candidate() {
    let vary = |values: &str| {
        let out = msclc(&[
            "tune",
            "examples/mscclpp/single_node/allreduce.mscl",
            "--timing",
            "h100-nvlink",
            "--size",
            "1M:1M",
            "--vary",
            &format!("num_threads_per_block={values}"),
        ]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{text}");
        text
    };
    let text = vary("512,512,0x200,1024");
    assert!(
        text.contains("# varied: num_threads_per_block [512, 1024]"),
        "{text}"
    );
    assert!(text.contains("2 candidates; 2 verified"), "{text}");
    // The program's default (1024) written otherwise is still the default.
    let text = vary("512,0x400");
    assert!(text.contains("2 candidates; 2 verified"), "{text}");
}

/// A string is written one way throughout, as `-D` and `--vary` take it:
/// the program's default (`"allreduce"` in its text) as the other values,
/// whether it is one of them or not.
#[test]
fn a_string_default_is_written_as_the_other_values() {
    for (case, varied) in [("among", "allreduce,other"), ("apart", "other,third")] {
        let dir = scratch(&format!("string-{case}"));
        let (text, index) = tune(
            &[
                "examples/mscclpp/single_node/allreduce.mscl",
                "--timing",
                "h100-nvlink",
                "--size",
                "1M:1M",
                "--vary",
                &format!("name={varied}"),
            ],
            &dir,
        );
        assert!(
            text.contains(&format!("# varied: name [{}]", varied.replace(',', ", "))),
            "{text}"
        );
        assert!(text.contains("defaults (name=allreduce)"), "{text}");
        assert!(!text.contains('"'), "{text}");
        for plan in index["plans"].as_array().unwrap() {
            let name = plan["params"]["name"].as_str().unwrap();
            assert!(!name.contains('"'), "{index}");
        }
    }
}

/// A long list of values (its repeats dropped through a set, not a scan
/// of the values so far) is shown by its first values and its count.
#[test]
fn a_long_list_of_values_is_listed_short() {
    let values: Vec<String> = (0..20_000).map(|v| (v % 10_000 + 1).to_string()).collect();
    let out = msclc(&[
        "tune",
        "examples/mscclpp/single_node/allreduce.mscl",
        "--timing",
        "h100-nvlink",
        "--size",
        "1M:1M",
        "--max-candidates",
        "1",
        "--vary",
        &format!("num_threads_per_block={}", values.join(",")),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains(
            "# varied: num_threads_per_block [1, 2, 3, 4, 5, 6, 7, 8, ... (10000 values)]\n"
        ),
        "{}",
        &text[..text.len().min(2000)]
    );
}

/// What the simulator warns of a plan (W0503: an executor bug it meets,
/// simulated as intended) is said of a chosen plan, in the table and the
/// index; and of two equally fast candidates, the one it does not warn of
/// serves.
#[test]
fn a_chosen_plans_warnings_are_said_and_an_unwarned_twin_wins() {
    let common = [
        MULTI_NODE,
        "--timing",
        "h100-ib",
        "--size",
        "1K:2K",
        "-D",
        "num_gpus=32",
        "-D",
        "instances=1",
    ];
    let dir = scratch("warned");
    let warned = [
        &common[..],
        &["-D", "use_double_scratch_buffer=true", "--vary", "tbg=8"],
    ]
    .concat();
    let (text, index) = tune(&warned, &dir);
    assert!(
        text.contains(
            "# plan 1: W0503: with a double scratch buffer, today's executor does not move"
        ),
        "{text}"
    );
    let said = index["plans"][0]["warnings"][0].as_str().unwrap_or("");
    assert!(said.starts_with("W0503: "), "{index}");

    let twins = [
        &common[..],
        &[
            "-D",
            "tbg=8",
            "--vary",
            "use_double_scratch_buffer=true,false",
        ],
    ]
    .concat();
    let (text, index) = tune(&twins, &dir);
    assert!(!text.contains("W0503"), "{text}");
    assert_eq!(
        index["plans"][0]["params"]["use_double_scratch_buffer"], "false",
        "{index}"
    );
}

/// A table whose params are long keeps its numbers in their columns:
/// every row's time ends where the header's `time` does.
#[test]
fn long_params_keep_the_columns() {
    let dir = scratch("long-params");
    let program = dir.join("long.mscl");
    std::fs::write(
        &program,
        "param a_rather_long_parameter_name: int in [1, 2] = 1\n\
         param another_quite_long_param: int in [1, 2] = 1\n\
         program \"p\" {\n    collective = allgather(2, chunk_factor: 1, inplace: true)\n}\n\
         for src in 0..2 {\n    let ch = memory_channel(1 - src, src)\n    \
         ch.signal(tb: 0, relaxed: true)\n    ch.wait(tb: 0, data_sync: after, relaxed: true)\n    \
         ch.put(rank(1 - src).output[src], rank(src).output[src], tb: 0)\n    \
         ch.signal(tb: 0, data_sync: before)\n    ch.wait(tb: 0, data_sync: after)\n}\n",
    )
    .unwrap();
    let out = dir.join("set");
    let (text, _) = tune(
        &[
            program.to_str().unwrap(),
            "--timing",
            "h100-nvlink",
            "--size",
            "1K:4K",
        ],
        &out,
    );
    let header = text.lines().find(|l| l.contains("  params  ")).unwrap();
    let time_end = header.find("time").unwrap() + "time".len();
    let rows: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(rows.len(), 3, "{text}");
    for row in rows {
        assert!(row.contains("a_rather_long_parameter_name="), "{row}");
        // The time, right-aligned, ends at the header's `time`.
        let bytes = row.as_bytes();
        assert!(
            bytes[time_end - 1].is_ascii_digit() && bytes[time_end] == b' ',
            "{text}"
        );
        assert!(
            row[..time_end].trim_end().ends_with(char::is_numeric),
            "{text}"
        );
    }
    assert!(text.contains("themselves a candidate"), "{text}");
}
