//! Nothing a user owns is lost: a file msclc writes is the old one or the
//! new one whenever msclc is killed, and when the disk fills (a file-size
//! limit) it is the old one, with a diagnostic. Unix only (signals and
//! resource limits).
#![cfg(unix)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

fn msclc() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_msclc"));
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"));
    cmd
}

fn scratch(what: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("msclc-writes-{what}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A copy of the quick-start program in `dir`, for a command to be given.
fn copy_of_the_quick_start(dir: &Path) -> PathBuf {
    let program = dir.join("prog.mscl");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/simple_allgather.mscl"),
        &program,
    )
    .unwrap();
    program
}

/// A plan of a few megabytes: the all-pairs AllReduce at 64 ranks.
fn big_plan(out: &Path) -> Command {
    let mut cmd = msclc();
    cmd.args([
        "examples/mscclpp/single_node/allreduce.mscl",
        "-D",
        "num_gpus=64",
        "-o",
    ])
    .arg(out);
    cmd
}

/// A program of a few megabytes that `msclc fmt` rewrites (every line
/// loses its extra spaces).
fn big_program(path: &Path) {
    let mut text = String::from(
        "program \"p\" { collective = allreduce(2, chunk_factor: 1, inplace: true) }\n",
    );
    for i in 0..120_000 {
        text.push_str(&format!("let   value_{i}   =   {i}\n"));
    }
    std::fs::write(path, text).unwrap();
}

/// Runs `cmd` `times` times, killing it at moments spread over a run and
/// past its end, and after each kill finds at `path` the old contents or
/// the new. Where every kill came before the rename (runs slower than the
/// one measured: a loaded machine), the kills are spread over twice the
/// time and tried again, so that both sides of the rename are seen.
fn kill_while_writing(
    mut cmd: impl FnMut() -> Command,
    path: &Path,
    old: &[u8],
    new: &[u8],
    times: u32,
) {
    // How long one run from the old file to the new takes here (a debug
    // build is slower).
    std::fs::write(path, old).unwrap();
    let started = Instant::now();
    assert!(cmd().output().unwrap().status.success());
    let mut whole = started.elapsed();
    assert_eq!(
        std::fs::read(path).unwrap(),
        new,
        "the run writes the new file"
    );
    for _ in 0..4 {
        let mut seen_old = 0;
        for i in 0..times {
            std::fs::write(path, old).unwrap();
            let mut child = cmd()
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            // From a fifth into a run (writing comes last) to past its end.
            let at = whole.mul_f64(0.2 + 1.3 * f64::from(i) / f64::from(times));
            std::thread::sleep(at);
            let _ = child.kill();
            let _ = child.wait();
            let now = std::fs::read(path).unwrap();
            assert!(
                now == old || now == new,
                "kill {i} of {times} ({at:?} in): {} bytes, neither the old file ({} bytes) nor the new ({} bytes)",
                now.len(),
                old.len(),
                new.len()
            );
            seen_old += u32::from(now == old);
        }
        // The kills landed before and after the rename both.
        assert!(
            seen_old > 0,
            "the new file after every one of {times} kills"
        );
        if seen_old < times {
            return;
        }
        whole *= 2;
    }
    panic!("the old file after every kill, up to {whole:?} into a run");
}

#[test]
fn a_killed_compile_leaves_the_old_plan_or_the_new() {
    let dir = scratch("kill-plan");
    let path = dir.join("plan.json");
    big_plan(&path).output().unwrap();
    let new = std::fs::read(&path).unwrap();
    assert!(new.len() > 1 << 20, "{} bytes", new.len());
    kill_while_writing(
        || big_plan(&path),
        &path,
        b"{\"the old\": \"plan\"}",
        &new,
        24,
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Ctrl-C, a kill or a closed terminal (SIGINT, SIGTERM, SIGHUP) while a
/// plan is written ends msclc as the signal does, and takes the temporary
/// file it was writing with it: a stopped compile of gigabytes leaves no
/// hidden copy. (SIGKILL cannot be caught; the test above.)
#[test]
fn a_compile_stopped_by_a_signal_leaves_no_temporary_file() {
    use std::os::unix::process::ExitStatusExt;
    let dir = scratch("signal");
    let path = dir.join("plan.json");
    let files = || -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let mut caught = 0;
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP].repeat(3) {
        std::fs::write(&path, "the old plan").unwrap();
        // Tens of megabytes: long enough a write to be stopped in.
        let mut child = msclc()
            .args([
                "examples/mscclpp/single_node/allreduce.mscl",
                "-D",
                "num_gpus=256",
            ])
            .args(["--pretty", "-o"])
            .arg(&path)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while files().len() < 2
            && child.try_wait().unwrap().is_none()
            && started.elapsed().as_secs() < 120
        {
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
        // SAFETY: a signal to the child, which has not been waited for.
        unsafe { libc::kill(child.id() as libc::pid_t, signal) };
        let status = child.wait().unwrap();
        assert_eq!(files(), ["plan.json"], "{status:?}");
        if status.signal() == Some(signal) {
            caught += 1;
            let plan = std::fs::read(&path).unwrap();
            assert!(
                plan == b"the old plan" || plan.ends_with(b"}"),
                "a whole plan"
            );
        }
    }
    assert!(caught > 0, "no signal reached a compile while it wrote");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_killed_fmt_leaves_the_old_program_or_the_new() {
    let dir = scratch("kill-fmt");
    let path = dir.join("big.mscl");
    big_program(&path);
    let old = std::fs::read(&path).unwrap();
    let fmt = || {
        let mut cmd = msclc();
        cmd.arg("fmt").arg(&path);
        cmd
    };
    assert!(fmt().output().unwrap().status.success());
    let new = std::fs::read(&path).unwrap();
    assert_ne!(old, new);
    kill_while_writing(fmt, &path, &old, &new, 40);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Runs `cmd` with files limited to 64 KiB, as a full disk would stop it.
fn on_a_full_disk(mut cmd: Command) -> Output {
    common::with_limit(&mut cmd, common::Limit::FileSize, 64 << 10);
    cmd.output().unwrap()
}

#[test]
fn a_full_disk_leaves_the_old_file_and_says_so() {
    let dir = scratch("full");
    let plan = dir.join("plan.json");
    std::fs::write(&plan, "the old plan").unwrap();
    let out = on_a_full_disk(big_plan(&plan));
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("error[E0801]: cannot write") && err.contains("plan.json"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&plan).unwrap(), "the old plan");

    let program = dir.join("big.mscl");
    big_program(&program);
    let old = std::fs::read(&program).unwrap();
    let mut fmt = msclc();
    fmt.arg("fmt").arg(&program);
    let out = on_a_full_disk(fmt);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert_eq!(std::fs::read(&program).unwrap(), old);
    // Nothing is left behind but the two files.
    let mut left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["big.mscl", "plan.json"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

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
    std::fs::remove_dir_all(&dir).unwrap();
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
    std::fs::remove_dir_all(&dir).unwrap();
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
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A file msclc replaces keeps its owner and group where msclc may give
/// them (as root: a plan of another user's, rewritten, stays theirs).
#[test]
fn a_replaced_file_keeps_its_owner() {
    use std::os::unix::fs::MetadataExt;
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: only root may give a file to another user");
        return;
    }
    let dir = scratch("owner");
    let (plan, program) = (dir.join("plan.json"), dir.join("prog.mscl"));
    std::fs::write(&plan, "theirs").unwrap();
    std::fs::write(&program, "let  x = 1\n").unwrap();
    for file in [&plan, &program] {
        std::os::unix::fs::chown(file, Some(65534), Some(65534)).unwrap();
    }
    let compiled = msclc()
        .args(["examples/simple_allgather.mscl", "-o"])
        .arg(&plan)
        .output()
        .unwrap();
    let formatted = msclc().arg("fmt").arg(&program).output().unwrap();
    assert!(compiled.status.success() && formatted.status.success());
    assert_eq!(std::fs::read_to_string(&program).unwrap(), "let x = 1\n");
    for file in [&plan, &program] {
        let meta = std::fs::metadata(file).unwrap();
        assert_eq!(
            (meta.uid(), meta.gid()),
            (65534, 65534),
            "{}",
            file.display()
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Two outputs that name one file, though it is not there yet and the
/// names differ (`./t.json`, `t.json`), are refused before the work.
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
    std::fs::remove_dir_all(&dir).unwrap();
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
    std::fs::remove_dir_all(&dir).unwrap();
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
    std::fs::remove_dir_all(&dir).unwrap();
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
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `-o` naming a pipe or a device writes into it, as a shell's `>` does:
/// `-o /dev/null` discards the plan, `-o /dev/stdout` hands it on, and
/// neither is replaced by a file (renamed over `/dev/null`, a plan took
/// its place for every program on the machine).
#[test]
fn output_to_a_pipe_or_a_device_goes_into_it() {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let dir = scratch("special");
    let pipe = dir.join("plan.pipe");
    let made = Command::new("mkfifo").arg(&pipe).status().unwrap();
    assert!(made.success(), "mkfifo failed");
    // A second name for the pipe, to reach it if msclc takes the first.
    let kept = dir.join("kept.pipe");
    std::fs::hard_link(&pipe, &kept).unwrap();
    let reader = std::thread::spawn({
        let pipe = pipe.clone();
        move || std::fs::read(pipe).unwrap()
    });
    let out = msclc()
        .args(["examples/simple_allgather.mscl", "-o"])
        .arg(&pipe)
        .output()
        .unwrap();
    // A reader still waiting for a writer gets one, and the end of the
    // pipe; with no reader left, this open fails at once.
    let _ = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&kept);
    let sent = reader.join().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let kind = std::fs::symlink_metadata(&pipe).unwrap().file_type();
    assert!(kind.is_fifo(), "the pipe became {kind:?}");
    let plan: serde_json::Value =
        serde_json::from_slice(&sent).expect("the plan came through the pipe");
    assert_eq!(plan["name"], "simple_allgather_2gpus");

    // The null device, made here: only root may make one.
    let null = dir.join("null");
    let made = Command::new("mknod")
        .arg(&null)
        .args(["c", "1", "3"])
        .stderr(std::process::Stdio::null())
        .status();
    if made.is_ok_and(|s| s.success()) {
        let out = msclc()
            .args(["examples/simple_allgather.mscl", "-o"])
            .arg(&null)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let kind = std::fs::symlink_metadata(&null).unwrap().file_type();
        assert!(kind.is_char_device(), "the device became {kind:?}");
    } else {
        eprintln!("skipped the null device: mknod needs root here");
    }
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(
        left.iter().all(|n| !n.to_string_lossy().ends_with(".tmp")),
        "{left:?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A file of several names (hard links) is rewritten under all of them:
/// `fmt` in place and `-o` over a plan leave no name with the old text,
/// and nothing beside them.
#[test]
fn a_hard_linked_file_is_rewritten_under_every_name() {
    let dir = scratch("linked");
    let program = copy_of_the_quick_start(&dir);
    let text = std::fs::read_to_string(&program).unwrap();
    std::fs::write(&program, text.replacen("let ", "let   ", 1)).unwrap();
    let other = dir.join("other-name.mscl");
    std::fs::hard_link(&program, &other).unwrap();
    let out = msclc().arg("fmt").arg(&program).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(std::fs::read_to_string(&other).unwrap(), text);
    let plan = dir.join("plan.json");
    std::fs::write(&plan, "old").unwrap();
    std::fs::hard_link(&plan, dir.join("plan-too.json")).unwrap();
    let out = msclc().arg(&program).arg("-o").arg(&plan).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let written = std::fs::read(dir.join("plan-too.json")).unwrap();
    assert!(written.starts_with(b"{\"buffer_alignment\""));
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["other-name.mscl", "plan-too.json", "plan.json", "prog.mscl"]
    );
    let _ = std::fs::remove_dir_all(&dir);
}
