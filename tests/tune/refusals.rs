//! Candidates dropped with their reasons, and tunings refused before
//! they start.

use super::*;

#[test]
fn a_candidate_that_deadlocks_is_dropped_with_its_reason() {
    let dir = scratch("dropped");
    let (text, index) = tune(
        &[
            MULTI_NODE, "--timing", "h100-ib", "--size", "1K:4K", "--vary", "tbg=1",
        ],
        &dir,
    );
    // instances=2 deadlocks (the second instance's put to the other
    // nodes waits for packets its reduction staged in the first's slot):
    // never chosen, in the table and the index.
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
}

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
}

/// `--max-candidates 0` asks for nothing to be tried: refused as a bad
/// option (exit code 2) before anything is compiled, not taken as one.
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
    assert!(
        stderr.contains("`0` is not a number of candidates from 1 to"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "nothing written"
    );
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
        // Tune sets each plan's message sizes: a value tuned that sets
        // them would change nothing it compares.
        (
            &["--vary", "max_message_size=4096,2097152"],
            "`max_message_size` = 4096 changes the message sizes the program declares",
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

/// What a set shares is checked of the values tune tries, not of every
/// value listed: with `--max-candidates 1` only the defaults are tried,
/// and a value of `num_gpus` that would change the rank count is never
/// compiled (a param listing thousands of values compiled each before
/// any candidate, past what `--max-candidates` bounds).
#[test]
fn only_the_values_tried_are_checked_for_what_a_set_shares() {
    let common = [
        "tune",
        MULTI_NODE,
        "--timing",
        "h100-ib",
        "--size",
        "1K:4K",
        "-q",
        "--vary",
        "num_gpus=16,32",
    ];
    let out = msclc(&common);
    assert_eq!(out.status.code(), Some(2));
    let dir = scratch("tried-only");
    let out = msclc(
        &[
            &common[..],
            &["--max-candidates", "1", "-o", dir.to_str().unwrap()],
        ]
        .concat(),
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let index: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("index.json")).unwrap()).unwrap();
    for plan in index["plans"].as_array().unwrap() {
        assert_eq!(plan["params"]["num_gpus"], "16", "{index}");
    }
}

/// A program's own mistake is shown as `msclc FILE` shows it, at its
/// line: one the checker finds before any candidate is tried; one every
/// candidate meets (an assertion) after the reasons of E0606, whose help
/// does not ask to leave sizes out where no size would do. A folder
/// `-o` made for the results goes again when there are none.
#[test]
fn the_programs_own_mistake_is_shown_at_its_line() {
    let base = scratch("mistake");
    let dir = base.join("made/for/it");
    let run = |program: &str| {
        msclc(&[
            "tune",
            program,
            "--timing",
            "h100-ib",
            "--size",
            "1K:4K",
            "-o",
            dir.to_str().unwrap(),
        ])
    };
    let unknown = run("tests/tune/unknown_name.mscl");
    assert_eq!(unknown.status.code(), Some(1));
    let err = String::from_utf8_lossy(&unknown.stderr);
    assert!(
        err.starts_with("error[E0101]: `undefined_thing` is not defined")
            && err.contains("tests/tune/unknown_name.mscl:7:9"),
        "{err}"
    );
    assert!(!err.contains("E0606"), "{err}");

    let wrong = run("tests/tune/wrong_program.mscl");
    assert_eq!(wrong.status.code(), Some(1));
    let err = String::from_utf8_lossy(&wrong.stderr);
    // No size would do: the error names none.
    assert!(
        err.starts_with("error[E0606]: no candidate of the 2 tried verifies\n"),
        "{err}"
    );
    assert!(
        err.contains("tbg=2: E0203: this program needs 4 ranks"),
        "{err}"
    );
    assert!(
        err.contains("help: no candidate runs at any size") && !err.contains("out of --size"),
        "{err}"
    );
    assert!(
        err.contains("error[E0203]: this program needs 4 ranks")
            && err.contains("tests/tune/wrong_program.mscl:9:1"),
        "{err}"
    );
    assert!(
        !base.join("made").exists() && base.exists(),
        "the folders made for the results are gone, and only they"
    );
}

/// An `-o` folder that cannot be made is said before the tuning, which
/// may take minutes, not after it.
#[test]
fn an_output_folder_that_cannot_be_made_is_refused_first() {
    let dir = scratch("unmakeable");
    let file = dir.join("a_file");
    std::fs::write(&file, "mine").unwrap();
    let below = file.join("results");
    let start = std::time::Instant::now();
    let out = msclc(&[
        "tune",
        MULTI_NODE,
        "--timing",
        "h100-ib",
        "--size",
        "1K:1G",
        "-o",
        below.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("error[E0801]: -o ") && err.contains("cannot make the folder"),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "no table: nothing was tuned");
    assert!(start.elapsed() < std::time::Duration::from_secs(5));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine");
}
