//! Output streams that close or fill, and the exit codes every command shares.

use super::*;

/// A reader that stops early (`| head -c 10`) ends msclc quietly: no
/// "Broken pipe" error, no panic.
#[test]
fn a_closed_pipe_ends_quietly() {
    use std::io::Read;
    use std::process::Stdio;
    for args in [
        &[
            "examples/mscclpp/single_node/allreduce.mscl",
            "-D",
            "num_gpus=64",
            "-q",
        ][..],
        &[
            "sim",
            "--json",
            "examples/mscclpp/single_node/allreduce.mscl",
            "-D",
            "num_gpus=32",
        ][..],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_msclc"))
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("msclc runs");
        let mut head = [0u8; 10];
        child.stdout.take().unwrap().read_exact(&mut head).unwrap();
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        child.wait().unwrap();
        assert!(
            !err.contains("Broken pipe") && !err.contains("panicked"),
            "{args:?}: {err}"
        );
    }
}

/// Every command ends the same way: 0 done, 1 the program or plan is
/// wrong, 2 msclc could not do what was asked.
#[test]
fn exit_codes_are_the_same_for_every_command() {
    let dir = common::scratch("exit");
    let wrong = dir.join("wrong.mscl");
    std::fs::write(
        &wrong,
        "program \"w\" {\n    collective = allgather(2, chunk_factor: 1, inplace: false)\n}\nlet x = nope\n",
    )
    .unwrap();
    let wrong = wrong.to_str().unwrap();
    let missing = "/nonexistent/dir/x.mscl";
    let fine = "examples/simple_allgather.mscl";
    for command in [&[][..], &["check"], &["sim"]] {
        let with = |args: &[&str]| {
            let mut all = command.to_vec();
            all.extend_from_slice(args);
            let out = msclc(&all);
            (
                out.status.code(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            )
        };
        let (code, err) = with(&[fine]);
        assert_eq!(code, Some(0), "{command:?} {fine}: {err}");
        let (code, err) = with(&[wrong]);
        assert_eq!(code, Some(1), "{command:?} on a wrong program: {err}");
        assert!(err.contains("`nope` is not defined"), "{err}");
        let (code, err) = with(&[missing]);
        assert_eq!(code, Some(2), "{command:?} on a missing file: {err}");
        assert!(err.contains("cannot read /nonexistent/dir/x.mscl"), "{err}");
        let (code, err) = with(&[fine, "-D", "no_such_param=1"]);
        assert_eq!(code, Some(2), "{command:?} with an unknown -D: {err}");
        let (code, _) = with(&[fine, "--no-such-option"]);
        assert_eq!(code, Some(2), "{command:?} with an unknown option");
    }
    let help = msclc(&["--help"]);
    assert!(String::from_utf8_lossy(&help.stdout).contains("Exit codes (every command): 0 done"));
}

/// A full standard output or error (`> /dev/full`) ends any command with
/// E0801 and exit code 2, said on the other stream where it can be, never
/// with a panic.
#[cfg(target_os = "linux")]
#[test]
fn a_full_output_stream_is_error_e0801_not_a_panic() {
    let full = || {
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full")
    };
    let quick = "examples/simple_allgather.mscl";
    let race = "examples/mscclpp/single_node/allgather_ring.mscl";
    let cases: &[&[&str]] = &[
        &[quick],
        &["sim", quick],
        &["sim", quick, "--json"],
        &["sim", quick, "--timing", "h100-nvls", "--size", "1K:4K"],
        &["sim", race, "-D", "num_gpus=2"],
        &["fmt", "--check", quick],
        &["--help"],
    ];
    for args in cases {
        let out = Command::new(env!("CARGO_BIN_EXE_msclc"))
            .args(*args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdout(full())
            .output()
            .expect("msclc runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        // `fmt --check` of a formatted file prints nothing: nothing fails.
        let wrote = *args != ["fmt", "--check", quick];
        if wrote {
            assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
            assert!(
                err.contains("error[E0801]: cannot write standard output"),
                "{args:?}: {err}"
            );
        }
    }
    // Warnings and errors go to standard error: full, it is the exit code
    // that says so.
    let out = Command::new(env!("CARGO_BIN_EXE_msclc"))
        .args([
            "check",
            "examples/mscclpp/unit_tests/signal_wait/signal_wait_fuse_test.mscl",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stderr(full())
        .output()
        .expect("msclc runs");
    assert_eq!(out.status.code(), Some(2));
}
