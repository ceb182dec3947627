//! Nothing a user owns is lost: a file msclc writes is the old one or the
//! new one whenever msclc is killed, and when the disk fills (a file-size
//! limit) it is the old one, with a diagnostic. Unix only (signals and
//! resource limits).
#![cfg(unix)]

#[path = "../common/mod.rs"]
mod common;

mod refused;
mod targets;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

fn msclc() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_msclc"));
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"));
    cmd
}

fn scratch(what: &str) -> common::Scratch {
    common::scratch(&format!("writes-{what}"))
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
}
