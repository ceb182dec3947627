//! What an output's name names is written as such: a replaced file keeps
//! its owner, a pipe or a device is written into, a hard-linked file is
//! rewritten under every name.

use super::*;

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
}
