//! The command line as a user runs it.

use std::process::Command;

mod compile;
mod cuda;
mod diagnostics;
mod sim;
mod streams;

fn msclc(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_msclc"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("msclc runs")
}
