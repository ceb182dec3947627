//! Every default of the vocabulary equals the reference's: tiny programs
//! that leave the optional arguments out (a program's options, `data_sync`,
//! `relaxed`, `reduce_op`, a reduction's destination, `packet`), written
//! both in .mscl and in the reference's Python, must compile to the same
//! plan, op by op.
//!
//! Needs ../shared and Python with `sortedcontainers` (CI installs it);
//! elsewhere it is reported ignored, with the reason.

use std::process::Command;

mod common;

use common::Needs;

fn main() {
    common::run(vec![common::test(
        "vocabulary_defaults_match_the_reference",
        Needs::Reference,
        vocabulary_defaults_match_the_reference,
    )]);
}

/// A tiny program: the test collective's ranks and buffer sizes, and the
/// same body in both languages.
struct Case {
    name: &'static str,
    ranks: u32,
    input: u32,
    output: u32,
    python: &'static str,
    mscl: &'static str,
}

const CASES: &[Case] = &[
    Case {
        name: "program options and copy",
        ranks: 1,
        input: 1,
        output: 1,
        python: "Rank(0).copy(Rank(0).get_output_buffer()[0:1], Rank(0).get_input_buffer()[0:1], tb=0)",
        mscl: "rank(0).copy(rank(0).output[0], rank(0).input[0], tb: 0)",
    },
    Case {
        name: "memory channel signal and wait",
        ranks: 2,
        input: 0,
        output: 0,
        python: "for r in range(2):\n    ch = MemoryChannel(1 - r, r)\n    ch.signal(tb=0)\n    ch.wait(tb=0)",
        mscl: "for r in 0..2 {\n    let ch = memory_channel(1 - r, r)\n    ch.signal(tb: 0)\n    ch.wait(tb: 0)\n}",
    },
    Case {
        name: "port channel signal, wait and flush",
        ranks: 2,
        input: 0,
        output: 0,
        python: "for r in range(2):\n    ch = PortChannel(1 - r, r)\n    ch.signal(tb=0)\n    ch.wait(tb=0)\n    ch.flush(tb=1)",
        mscl: "for r in 0..2 {\n    let ch = port_channel(1 - r, r)\n    ch.signal(tb: 0)\n    ch.wait(tb: 0)\n    ch.flush(tb: 1)\n}",
    },
    Case {
        name: "semaphore acquire and release",
        ranks: 1,
        input: 0,
        output: 0,
        python: "sm = Semaphore(rank=0, initial_value=0)\nsm.acquire(tb=0)\nsm.release(tb=1)",
        mscl: "let sem = semaphore(0, initial_value: 0)\nsem.acquire(tb: 0)\nsem.release(tb: 1)",
    },
    Case {
        name: "local reduce: destination, operation, packets",
        ranks: 1,
        input: 2,
        output: 0,
        python: "r = Rank(0)\nr.reduce(r.get_input_buffer()[0:1], [r.get_input_buffer()[1:2]], tb=0)",
        mscl: "let r = rank(0)\nr.reduce(r.input[0], [r.input[1]], tb: 0)",
    },
    Case {
        name: "memory channel put, get and reduce",
        ranks: 2,
        input: 3,
        output: 0,
        python: "for r in range(2):\n    ch = MemoryChannel(1 - r, r)\n    ch.put(Rank(1 - r).get_input_buffer()[1:2], Rank(r).get_input_buffer()[0:1], tb=0)\n    ch.get(Rank(r).get_input_buffer()[2:3], Rank(1 - r).get_input_buffer()[0:1], tb=0)\n    ch.reduce(Rank(r).get_input_buffer()[0:1], [Rank(1 - r).get_input_buffer()[0:1]], tb=0)",
        mscl: "for r in 0..2 {\n    let ch = memory_channel(1 - r, r)\n    ch.put(rank(1 - r).input[1], rank(r).input[0], tb: 0)\n    ch.get(rank(r).input[2], rank(1 - r).input[0], tb: 0)\n    ch.reduce(rank(r).input[0], [rank(1 - r).input[0]], tb: 0)\n}",
    },
    Case {
        name: "switch channel reduce",
        ranks: 2,
        input: 1,
        output: 1,
        python: "s = Buffer(0, 1)\nch = SwitchChannel(rank_list=[0, 1], buffer_type=BufferType.input)\nch.at_rank(0).reduce(buffer_offset=0, size=1, tb=0, dst_chunk=s[0:1])",
        mscl: "let s = scratch(0, 1)\nlet sw = switch_channel([0, 1], input)\nsw.at_rank(0).reduce(buffer_offset: 0, size: 1, dst_chunk: s[0], tb: 0)",
    },
];

fn python_program(case: &Case) -> String {
    let body: String = case
        .python
        .lines()
        .map(|line| format!("    {line}\n"))
        .collect();
    format!(
        "from mscclpp.language.channel import *\n\
         from mscclpp.language.rank import *\n\
         from mscclpp.language.general import *\n\
         from mscclpp.language.program import *\n\
         from mscclpp.language.collectives import *\n\
         with CollectiveProgram(\"t\", TestCollective({n}, {i}, {o}), {n}):\n\
         {body}    print(JSON())\n",
        n = case.ranks,
        i = case.input,
        o = case.output,
    )
}

fn mscl_program(case: &Case) -> String {
    format!(
        "program \"t\" {{\n    collective = test_collective({}, input_size: {}, output_size: {})\n}}\n\n{}\n",
        case.ranks, case.input, case.output, case.mscl
    )
}

/// Runs a compiler; its plan, or the failure with what it printed.
fn plan_of(cmd: &mut Command) -> Result<serde_json::Value, String> {
    let out = cmd.output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("not JSON: {e}"))
}

fn vocabulary_defaults_match_the_reference() {
    let (_, pythonpath) = common::reference_setup().expect("the reference");
    let dir = common::scratch("vocabulary");
    let mut failures = Vec::new();
    for (k, case) in CASES.iter().enumerate() {
        let source = dir.join(format!("case{k}.mscl"));
        std::fs::write(&source, mscl_program(case)).unwrap();
        let ours = plan_of(Command::new(env!("CARGO_BIN_EXE_msclc")).arg(&source));
        let theirs = plan_of(
            Command::new("python3")
                .args(["-c", &python_program(case)])
                .env("PYTHONPATH", &pythonpath),
        );
        match (ours, theirs) {
            (Ok(ours), Ok(theirs)) => {
                if let Some(d) = common::first_difference(&ours, &theirs, "plan") {
                    failures.push(format!("{}: {d}", case.name));
                }
            }
            (ours, theirs) => failures.push(format!(
                "{}: ours {:?}, reference {:?}",
                case.name,
                ours.err(),
                theirs.err()
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
