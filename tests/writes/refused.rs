//! Outputs refused before any work: one naming a folder, a missing
//! folder, an input, an imported file, another output, or a file its user
//! may not write.

use super::*;

/// `msclc sim --trace` and `--svg` write files too: neither may name the
/// program, the topology file or the other one; nothing is written then.
#[test]
fn sim_outputs_naming_an_input_or_each_other_are_refused() {
    let dir = scratch("sim_same");
    let program = copy_of_the_quick_start(&dir);
    let topology = dir.join("topo.json");
    let written = msclc()
        .args([
            "sim",
            "--timing",
            "h100-nvlink",
            "--size",
            "1K:4K",
            "--trace",
        ])
        .arg(&topology)
        .arg(&program)
        .output()
        .unwrap();
    assert_eq!(written.status.code(), Some(0), "{written:?}");
    let before = std::fs::read(&program).unwrap();
    let timeline = dir.join("timeline");
    let cases: [(&str, &[&Path], &str); 3] = [
        ("h100-nvlink", &[&program, &timeline], "--trace"),
        ("h100-nvlink", &[&timeline, &timeline], "--trace and --svg"),
        ("TOPOLOGY", &[&timeline, &topology], "--svg"),
    ];
    for (timing, [trace, svg], says) in
        cases.map(|(t, paths, says)| (t, [paths[0], paths[1]], says))
    {
        let timing = if timing == "TOPOLOGY" {
            topology.to_str().unwrap()
        } else {
            timing
        };
        let out = msclc()
            .args(["sim", "--timing", timing, "--size", "1K:4K", "--trace"])
            .arg(trace)
            .arg("--svg")
            .arg(svg)
            .arg(&program)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("error[E0803]: ") && err.contains(says),
            "{err}"
        );
        assert!(!timeline.exists(), "nothing is written");
    }
    assert_eq!(std::fs::read(&program).unwrap(), before);
}

/// An output that names a folder (one there, or a name ending in `/`) is
/// refused before any work, with the file to name instead: the folder is
/// left as it was.
#[test]
fn an_output_naming_a_folder_is_refused_before_the_work() {
    let dir = scratch("folder_out");
    let program = copy_of_the_quick_start(&dir);
    let folder = dir.join("out");
    std::fs::create_dir(&folder).unwrap();
    let there = folder.to_str().unwrap().to_string();
    let slashed = format!("{}/", dir.join("new").display());
    let sim = ["sim", "--timing", "h100-nvlink", "--size", "1K:4K"];
    for (args, option, file) in [
        (vec!["-o", &there], "-o", "plan.json"),
        (vec!["-o", &slashed], "-o", "plan.json"),
        (vec!["--emit", "cuda", "-o", &there], "-o", "plan.cu"),
        (
            [&sim[..], &["--svg", &there]].concat(),
            "--svg",
            "timeline.svg",
        ),
        (
            [&sim[..], &["--trace", &slashed]].concat(),
            "--trace",
            "trace.json",
        ),
    ] {
        let out = msclc().args(&args).arg(&program).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(&format!("error[E0801]: {option} "))
                && err.contains("a folder, not a file: name the file to write (as ")
                && err.contains(file),
            "{args:?}: {err}"
        );
    }
    assert_eq!(std::fs::read_dir(&folder).unwrap().count(), 0);
    assert!(!dir.join("new").exists());
}

/// An output in a folder that is not there is refused before the work,
/// and before another output is written: `sim --trace` with an `--svg`
/// it cannot write leaves the trace file as it was.
#[test]
fn an_output_in_a_missing_folder_is_refused_before_the_work() {
    let dir = scratch("missing_folder");
    let program = copy_of_the_quick_start(&dir);
    let missing = dir.join("nodir/x.out");
    let missing = missing.to_str().unwrap();
    let trace = dir.join("trace.json");
    std::fs::write(&trace, "precious").unwrap();
    let sim = ["sim", "--timing", "h100-nvlink", "--size", "1K:4K"];
    let trace_args = ["--trace", trace.to_str().unwrap()];
    for (args, option) in [
        (vec!["-o", missing], "-o"),
        (
            [&sim[..], &trace_args, &["--svg", missing]].concat(),
            "--svg",
        ),
    ] {
        let out = msclc().args(&args).arg(&program).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.starts_with(&format!(
                "error[E0801]: {option} {missing}: there is no folder {}",
                dir.join("nodir").display()
            )),
            "{args:?}: {err}"
        );
        assert!(out.stdout.is_empty(), "refused before the work");
    }
    assert_eq!(std::fs::read_to_string(&trace).unwrap(), "precious");
    // A file where the folder should be is said to be one.
    let in_a_file = trace.join("x.out");
    let out = msclc()
        .arg(&program)
        .arg("-o")
        .arg(&in_a_file)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("{} is a file, not a folder", trace.display())),
        "{err}"
    );
    // A folder of the system's that takes no files is not said missing.
    if std::path::Path::new("/proc/self").is_dir() {
        let out = msclc()
            .arg(&program)
            .args(["-o", "/proc/plan.json"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("the folder /proc takes no new files"), "{err}");
    }
}

/// Two outputs that name one file, though it is not there yet and the
/// names differ (`./t.json`, `t.json`), are refused before the work; two
/// that name a device are not.
#[test]
fn two_outputs_naming_one_new_file_are_refused() {
    let dir = scratch("one_file");
    let program = copy_of_the_quick_start(&dir);
    let out = msclc()
        .current_dir(&dir)
        .args(["sim", "--timing", "h100-nvlink", "--size", "1K:4K"])
        .args(["--trace", "./t.json", "--svg", "t.json"])
        .arg(&program)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("error[E0803]: --trace and --svg both name t.json"),
        "{err}"
    );
    assert!(!dir.join("t.json").exists());
    // A device takes both, one after the other: nothing is overwritten.
    let out = msclc()
        .current_dir(&dir)
        .args(["sim", "--timing", "h100-nvlink", "--size", "1K:4K"])
        .args(["--trace", "/dev/null", "--svg", "/dev/null"])
        .arg(&program)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A file its user may not write is not replaced by `-o` or `fmt` (a
/// rename asks only the folder's leave, and would have): exit 2, the file
/// as it was. Root may write any file, so as root the commands run as
/// `nobody`, through `setpriv`.
#[test]
fn a_file_its_user_may_not_write_is_not_replaced() {
    use std::os::unix::fs::PermissionsExt;
    let as_root = unsafe { libc::geteuid() } == 0;
    let command = || {
        let bin = env!("CARGO_BIN_EXE_msclc");
        let mut cmd = if as_root {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups", bin]);
            c
        } else {
            Command::new(bin)
        };
        cmd.current_dir(env!("CARGO_MANIFEST_DIR"));
        cmd
    };
    if as_root && Command::new("setpriv").arg("--version").output().is_err() {
        eprintln!("skipped: running as root, and no setpriv to run msclc as another user");
        return;
    }
    let dir = scratch("read_only");
    // Anyone may make files in the folder, as in /tmp.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let (plan, program) = (dir.join("plan.json"), dir.join("prog.mscl"));
    std::fs::write(&plan, "mine").unwrap();
    std::fs::write(&program, "let  x = 1\n").unwrap();
    for file in [&plan, &program] {
        std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o444)).unwrap();
    }
    let compiled = command()
        .args(["examples/simple_allgather.mscl", "-o"])
        .arg(&plan)
        .output()
        .unwrap();
    let formatted = command().arg("fmt").arg(&program).output().unwrap();
    for out in [compiled, formatted] {
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("error[E0801]") && err.contains("ermission denied"),
            "{err}"
        );
    }
    assert_eq!(std::fs::read_to_string(&plan).unwrap(), "mine");
    assert_eq!(std::fs::read_to_string(&program).unwrap(), "let  x = 1\n");
}

#[test]
fn output_naming_the_input_is_refused() {
    let dir = scratch("same");
    let program = copy_of_the_quick_start(&dir);
    let before = std::fs::read(&program).unwrap();
    let link = dir.join("link.json");
    std::os::unix::fs::symlink(&program, &link).unwrap();
    for output in [&program, &link] {
        let out = msclc()
            .arg(&program)
            .arg("-o")
            .arg(output)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("is an input file"), "{err}");
    }
    assert_eq!(std::fs::read(&program).unwrap(), before);
}

/// A file the program imports is the user's as much as the program: no
/// output of `msclc` or `msclc sim` replaces it, by its own name or another.
#[test]
fn output_naming_an_imported_file_is_refused() {
    let dir = scratch("imported");
    let helpers = dir.join("helpers.mscl");
    let helper_text = "fn first(r: int) -> chunk {\n    return rank(r).input[0]\n}\n";
    std::fs::write(&helpers, helper_text).unwrap();
    let program = dir.join("main.mscl");
    std::fs::write(
        &program,
        r#"import "helpers.mscl"
program "copy" { collective = allgather(1, chunk_factor: 1, inplace: false) }
rank(0).copy(rank(0).output[0], first(0), tb: 0)
"#,
    )
    .unwrap();
    let link = dir.join("link.mscl");
    std::os::unix::fs::symlink(&helpers, &link).unwrap();
    for output in [&helpers, &link] {
        let compiled = msclc()
            .arg(&program)
            .arg("-o")
            .arg(output)
            .output()
            .unwrap();
        let simulated = msclc()
            .args(["sim", "--timing", "h100-nvlink", "--size", "1K", "--svg"])
            .arg(output)
            .arg(&program)
            .output()
            .unwrap();
        for out in [compiled, simulated] {
            assert_eq!(out.status.code(), Some(2), "{out:?}");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains("is a file the program imports"), "{err}");
        }
    }
    assert_eq!(std::fs::read_to_string(&helpers).unwrap(), helper_text);
    // Beside it, the same commands write.
    let out = msclc()
        .arg(&program)
        .arg("-o")
        .arg(dir.join("plan.json"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
}
