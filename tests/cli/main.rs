//! The command line as a user runs it.

use std::process::Command;

#[path = "../common/mod.rs"]
mod common;
mod compile;
mod cuda;
mod diagnostics;
mod executor_limits;
mod listing;
mod sim;
mod streams;

fn msclc(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_msclc"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("msclc runs")
}

/// `msclc ARGS` with `text` on its standard input.
fn piped(args: &[&str], text: &str) -> std::process::Output {
    use std::io::Write as _;
    let mut child = Command::new(env!("CARGO_BIN_EXE_msclc"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("msclc runs");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(text.as_bytes()).unwrap();
    drop(stdin);
    child.wait_with_output().unwrap()
}

/// What `msclc ARGS` says on standard error, where it succeeds: a warning
/// does not fail a compile or a check.
fn warned(args: &[&str]) -> String {
    let out = msclc(args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{err}");
    err
}

/// `msclc check PROGRAM -D SETTING` passes without a word.
fn checks_quietly(program: &str, setting: &str) {
    assert_eq!(warned(&["check", program, "-D", setting]), "", "{setting}");
}
