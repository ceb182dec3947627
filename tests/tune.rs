//! `msclc tune` as a user runs it: the plan set it writes tiles the span,
//! every plan in it verifies, its index says what the plans are, a
//! candidate that deadlocks is dropped with its reason, and the tuned
//! multi-node AllReduce is at least as fast as MSCCL++'s four hand-made
//! default plans at every size.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const MULTI_NODE: &str = "examples/mscclpp/default_algos/allreduce_multi_nodes.mscl";

fn msclc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_msclc"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("msclc runs")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("msclc-tune-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
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
    assert!(dir.join("busbw.svg").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_candidate_that_deadlocks_is_dropped_with_its_reason() {
    let dir = scratch("dropped");
    let (text, index) = tune(
        &[
            MULTI_NODE, "--timing", "h100-ib", "--size", "1K:4K", "--vary", "tbg=1",
        ],
        &dir,
    );
    // instances=2 deadlocks (its replicated barriers wait for blocks
    // that never come): never chosen, in the table and the index.
    assert!(
        text.contains("#   tbg=1 instances=2: deadlock: no thread block can go on"),
        "{text}"
    );
    let dropped = index["dropped"].as_array().unwrap();
    assert_eq!(dropped.len(), 1, "{index}");
    assert_eq!(dropped[0]["params"], "tbg=1 instances=2");
    for plan in index["plans"].as_array().unwrap() {
        assert_eq!(plan["params"]["instances"], "1");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A candidate with more thread blocks on a rank than the topology's GPU
/// holds at once may hang (W0504): dropped. Of candidates the model times
/// alike, the one with the fewest blocks serves, whatever the order the
/// values were listed in.
#[test]
fn blocks_the_gpu_cannot_hold_drop_a_candidate_and_fewer_blocks_win_ties() {
    let dir = scratch("blocks");
    // tbg=32: 1 + 7 x 32 = 225 blocks of 1024 threads, where an H100
    // holds 132; tbg=16 (113) and tbg=8 (57) take the same time.
    let (text, index) = tune(
        &[
            MULTI_NODE,
            "--timing",
            "h100-ib",
            "--size",
            "1K:8K",
            "--vary",
            "tbg=32,16,8",
            "--vary",
            "instances=1",
        ],
        &dir,
    );
    let dropped = index["dropped"].as_array().unwrap();
    assert_eq!(dropped.len(), 1, "{index}");
    assert_eq!(dropped[0]["params"], "tbg=32 instances=1");
    assert!(
        dropped[0]["why"]
            .as_str()
            .unwrap()
            .starts_with("W0504: rank ")
            && dropped[0]["why"]
                .as_str()
                .unwrap()
                .contains(" has 225 thread blocks"),
        "{index}"
    );
    for plan in index["plans"].as_array().unwrap() {
        assert_eq!(plan["params"]["tbg"], "8", "{text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn nothing_that_verifies_is_an_error_with_each_reason() {
    let dir = scratch("nothing");
    let out = msclc(&[
        "tune",
        MULTI_NODE,
        "--timing",
        "h100-ib",
        "--size",
        "1K:4K",
        "-D",
        "instances=2",
        "--vary",
        "tbg=1,2",
        "-o",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("error[E0606]"), "{err}");
    assert!(err.contains("tbg=2: deadlock"), "{err}");
    assert!(!dir.join("index.json").exists(), "nothing written");
    // Usage errors at once: a param the program does not declare, a value
    // not of its type (as with -D).
    let usage = |extra: &[&str]| {
        let tune = ["tune", MULTI_NODE, "--timing", "h100-ib", "--size", "1K:4K"];
        msclc(&[&tune[..], extra].concat())
    };
    let vary = |values| usage(&["--vary", values]);
    let unknown = vary("tgb=1,2");
    assert_eq!(unknown.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unknown.stderr)
        .contains("--vary tgb: the program declares no param `tgb`"));
    let mistyped = vary("tbg=1,abc");
    assert_eq!(mistyped.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&mistyped.stderr)
        .contains("--vary tbg=abc: `abc` is not a value of param `tbg`, of type `int`"));
    // The same param varied twice: which values would count is not clear.
    let twice = usage(&["--vary", "tbg=1", "--vary", "tbg=2,4"]);
    assert_eq!(twice.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&twice.stderr).contains("--vary tbg is given twice"));
    // More candidates than the notes show: how many more is said.
    let many = msclc(&[
        "tune",
        "tests/tune/allgather_two_ways.mscl",
        "--timing",
        "h100-nvlink",
        "--size",
        "1",
        "--vary",
        "tbs=1,2,3,4,5,6",
    ]);
    assert_eq!(many.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&many.stderr).contains("and 4 more candidates, not shown"));
    // -o naming a file: said before tuning.
    let file = dir.join("a-file");
    std::fs::write(&file, "mine").unwrap();
    let onto = usage(&["-o", file.to_str().unwrap()]);
    assert_eq!(onto.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&onto.stderr).contains("a file, not a folder"));
    // A program that does not parse: its diagnostic at its line.
    let bad = dir.join("bad.mscl");
    std::fs::write(&bad, "param x int\n").unwrap();
    let out = msclc(&[
        "tune",
        bad.to_str().unwrap(),
        "--timing",
        "h100-ib",
        "--size",
        "1K:4K",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("error[E0001]") && err.contains("bad.mscl:1:9"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
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
        let _ = std::fs::remove_dir_all(&dir);
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
    let _ = std::fs::remove_dir_all(&dir);
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

/// Tune replaces its own earlier results in `-o DIR`, never a user's file
/// of a name it writes: that is refused before anything is written.
#[test]
fn tune_replaces_its_own_results_but_no_users_file() {
    let dir = scratch("strangers");
    let args = [
        "examples/mscclpp/single_node/allreduce.mscl",
        "--timing",
        "h100-nvlink",
        "--size",
        "1M:2M",
        "--vary",
        "num_threads_per_block=512,1024",
    ];
    tune(&args, &dir);
    let (_, index) = tune(&args, &dir);
    let plan_file = index["plans"][0]["file"].as_str().unwrap().to_string();
    for (file, mine) in [
        ("index.json", "{\"mine\": 1}\n"),
        ("busbw.svg", "<svg/>\n"),
        (plan_file.as_str(), "{\"collective\": \"mine\"}\n"),
    ] {
        let path = dir.join(file);
        let before = std::fs::read(&path).unwrap();
        std::fs::write(&path, mine).unwrap();
        let out = msclc(&[&["tune"], &args[..], &["-o", dir.to_str().unwrap()]].concat());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.starts_with("error[E0809]: "), "{err}");
        assert!(
            err.contains("holds files that `msclc tune` did not write"),
            "{err}"
        );
        assert!(err.contains(&format!("/{file}\n")), "{err}");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            mine,
            "{file} replaced"
        );
        std::fs::write(&path, before).unwrap();
    }
    // A plan of tune's that the user has since replaced with a plan of
    // their own is theirs: its bytes are not those the index vouches for.
    let path = dir.join(&plan_file);
    let before = std::fs::read(&path).unwrap();
    let mine = msclc(&[args[0], "-D", "name=mine", "-o", path.to_str().unwrap()]);
    assert!(mine.status.success());
    let theirs = std::fs::read(&path).unwrap();
    let out = msclc(&[&["tune"], &args[..], &["-o", dir.to_str().unwrap()]].concat());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.code() == Some(2) && err.starts_with("error[E0809]: "),
        "{err}"
    );
    assert_eq!(
        std::fs::read(&path).unwrap(),
        theirs,
        "the user's plan replaced"
    );
    std::fs::write(&path, before).unwrap();
    // A plan of the user's, of the name tune gives its plan, where no
    // index of tune's lists it, is the user's too.
    let fresh = scratch("strangers-plan");
    let users = fresh.join(&plan_file);
    let compiled = msclc(&[args[0], "-o", users.to_str().unwrap()]);
    assert!(compiled.status.success());
    let before = std::fs::read(&users).unwrap();
    let out = msclc(&[&["tune"], &args[..], &["-o", fresh.to_str().unwrap()]].concat());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.code() == Some(2) && err.starts_with("error[E0809]: "),
        "{err}"
    );
    assert_eq!(std::fs::read(&users).unwrap(), before);
    let _ = std::fs::remove_dir_all(&fresh);
    // Tuning again, for other sizes, leaves none of the earlier plans.
    let other = [&args[..4], &["1M:1M"], &args[5..]].concat();
    let (_, index) = tune(&other, &dir);
    let mut plans: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|f| f != "index.json" && f.ends_with(".json"))
        .collect();
    plans.sort();
    let mut listed: Vec<&str> = index["plans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["file"].as_str().unwrap())
        .collect();
    listed.sort();
    assert_eq!(
        plans, listed,
        "the folder holds the plans of the last index only"
    );
    assert!(!dir.join(&plan_file).exists() || listed.contains(&plan_file.as_str()));
    // A link to tune's own index elsewhere is not written through.
    let elsewhere = scratch("strangers-elsewhere");
    std::fs::rename(dir.join("index.json"), elsewhere.join("index.json")).unwrap();
    std::os::unix::fs::symlink(elsewhere.join("index.json"), dir.join("index.json")).unwrap();
    let before = std::fs::read(elsewhere.join("index.json")).unwrap();
    let out = msclc(&[&["tune"], &args[..], &["-o", dir.to_str().unwrap()]].concat());
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(std::fs::read(elsewhere.join("index.json")).unwrap(), before);
    let _ = std::fs::remove_dir_all(&elsewhere);
    let _ = std::fs::remove_dir_all(&dir);
}

/// An earlier plan of tune's that the user edited, or made read-only,
/// since is theirs: tuning again for other sizes leaves it where it is
/// (and lists it no more), while an untouched one is removed.
#[test]
#[cfg(unix)]
fn an_earlier_plan_edited_or_kept_read_only_is_left() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch("edited");
    let args = |size: &'static str| {
        [
            "examples/mscclpp/single_node/allreduce.mscl",
            "--timing",
            "h100-nvlink",
            "--size",
            size,
            "--vary",
            "num_threads_per_block=512,1024",
        ]
    };
    let plans_of = |index: &Value| -> Vec<String> {
        let plans = index["plans"].as_array().unwrap().iter();
        plans
            .map(|p| p["file"].as_str().unwrap().to_string())
            .collect()
    };
    for touch in ["edit", "read-only", "none"] {
        let _ = std::fs::remove_dir_all(&dir);
        let (_, index) = tune(&args("1M:2M"), &dir);
        let earlier = dir.join(&plans_of(&index)[0]);
        match touch {
            "edit" => {
                let text = std::fs::read_to_string(&earlier).unwrap();
                std::fs::write(
                    &earlier,
                    text.replacen("\"allreduce\"", "\"tuned_by_hand\"", 1),
                )
                .unwrap();
            }
            "read-only" => {
                std::fs::set_permissions(&earlier, std::fs::Permissions::from_mode(0o444)).unwrap()
            }
            _ => {}
        }
        let kept = std::fs::read(&earlier).unwrap();
        let (_, index) = tune(&args("4M:4M"), &dir);
        assert!(!plans_of(&index)
            .contains(&earlier.file_name().unwrap().to_string_lossy().into_owned()));
        if touch == "none" {
            assert!(!earlier.exists(), "tune's own earlier plan is removed");
        } else {
            assert_eq!(
                std::fs::read(&earlier).unwrap(),
                kept,
                "{touch}: the user's plan removed"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
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
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--max-candidates 0` asks for nothing to be tried: refused as a bad
/// option (exit code 2) before anything is compiled, not taken as one.
/// Every param that lists its values set with -D: nothing varies, and the
/// error names them rather than saying none lists values.
#[test]
fn params_all_set_leave_nothing_to_tune() {
    let dir = scratch("all_set");
    let out = msclc(&[
        "tune",
        MULTI_NODE,
        "--timing",
        "h100-ib",
        "--size",
        "1K:2K",
        "-D",
        "tbg=4",
        "-D",
        "instances=1",
        "-o",
        dir.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("the params that list their values (tbg, instances) are all set with -D"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn no_candidates_at_all_is_refused() {
    let dir = scratch("none");
    let out = msclc(&[
        "tune",
        MULTI_NODE,
        "--timing",
        "h100-ib",
        "--size",
        "1K:4K",
        "--max-candidates",
        "0",
        "-o",
        dir.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--max-candidates"), "{stderr}");
    assert!(stderr.contains("0 is not in 1.."), "{stderr}");
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "nothing written"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--nranks` sets the param that decides the rank count: a `-D` or tuned
/// values of that param that say otherwise are refused (exit code 2)
/// before anything is tuned, as `sim` and `run` refuse them; and `-o -`,
/// standard output elsewhere, cannot hold tune's folder.
#[test]
fn options_that_contradict_each_other_are_refused_before_tuning() {
    let common = [
        "tune", MULTI_NODE, "--timing", "h100-ib", "--size", "1K:4K", "-q",
    ];
    for (extra, said) in [
        (
            &["-D", "num_gpus=32", "--nranks", "16"][..],
            "--nranks 16 and -D num_gpus=32 disagree",
        ),
        (
            &["--vary", "num_gpus=16,32", "--nranks", "16"],
            "--nranks 16 and the value 32 tuned of `num_gpus` (of 16, 32) disagree",
        ),
        // A plan set serves one rank count: a value tuned that changes it
        // is refused, with or without --nranks.
        (
            &["--vary", "num_gpus=16,32"],
            "`num_gpus` = 32 runs the program on 32 ranks, and the defaults on 16",
        ),
        (&["-o", "-"], "-o -: tune writes a folder"),
        (
            &["-D", "num_gpus=16", "-D", "num_gpus=32"],
            "-D num_gpus: given twice",
        ),
    ] {
        let out = msclc(&[&common[..], extra].concat());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {stderr}");
        assert!(
            stderr.contains(&format!("]: {said}")),
            "{extra:?}: {stderr}"
        );
    }
    assert!(!std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("-")
        .exists());
}

/// A plan's range stays within the program's own message sizes, though
/// the span asked runs past them (simple_allgather declares at most 1 GiB).
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
    let (_, index) = tune(&args, &dir);
    let last = index["plans"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["max_message_size"], 1u64 << 30, "{index}");
    let plan = std::fs::read_to_string(dir.join(last["file"].as_str().unwrap())).unwrap();
    let plan: Value = serde_json::from_str(&plan).unwrap();
    assert_eq!(plan["max_message_size"], 1u64 << 30);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A value given twice to `--vary` (or twice over, as 512 and 0x200) is
/// one candidate.
#[test]
fn a_value_varied_twice_is_one_candidate() {
    let out = msclc(&[
        "tune",
        "examples/mscclpp/single_node/allreduce.mscl",
        "--timing",
        "h100-nvlink",
        "--size",
        "1M:1M",
        "--vary",
        "num_threads_per_block=512,512,0x200,1024",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("# varied: num_threads_per_block [512, 1024]"),
        "{text}"
    );
    assert!(text.contains("2 candidates; 2 verified"), "{text}");
}
