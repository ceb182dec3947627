//! The executor's limits and misreadings: warnings of compile and
//! `check`, each at the program line that crosses one, with what the
//! executor makes of it.

use super::*;

/// The executor's limits are warnings of compile and `check`, on standard
/// error, at the program line of the op that crosses one, with the loop
/// values then; the plan is still written.
#[test]
fn an_executor_limit_is_a_located_warning() {
    let program = "tests/cli/ring_one_block.mscl";
    let out = msclc(&[program, "-D", "n=16"]);
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with(
            "warning[W0502]: rank 0 thread block 0 (and 15 more thread block(s)) has 90 ops; the MSCCL++ executor allows at most 64"
        ),
        "{err}"
    );
    assert!(err.contains("ring_one_block.mscl:16:9"), "{err}");
    assert!(err.contains("op 65 of rank 0's thread block 0"), "{err}");
    assert!(err.contains("= when r = 0, step = 10"), "{err}");
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a plan");
    assert_eq!(plan["gpus"].as_array().map(Vec::len), Some(16));
    // The plan checked as a file: no program line to show, so the op's
    // place in the plan, and help in the program that made it.
    let dir = common::scratch("limit-in-plan");
    let written = dir.join("ring.json");
    std::fs::write(&written, &out.stdout).unwrap();
    let err = warned(&["check", written.to_str().unwrap()]);
    assert!(
        err.contains("has 90 ops; the MSCCL++ executor allows at most 64"),
        "{err}"
    );
    assert!(
        err.contains("= at gpus[0].threadblocks[0].ops[64]"),
        "{err}"
    );
    // Under the limit: nothing to say.
    checks_quietly(program, "n=8");
}

/// The executor reads `min_message_size` into a 32-bit int: a plan for
/// messages of 2 GiB and up is written as the reference writes it, with a
/// warning that says what the executor makes of it.
#[test]
fn a_min_message_size_past_2_gib_is_a_warning_with_what_the_executor_reads() {
    let program = "tests/cli/large_messages_only.mscl";
    let out = msclc(&[program]);
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("warning[W0502]: min_message_size is 4294967296, more than the MSCCL++ executor reads: it keeps the option in a 32-bit int, which makes it 0, so the executor runs the plan for messages from 0 bytes"),
        "{err}"
    );
    assert!(err.contains("large_messages_only.mscl:8:24"), "{err}");
    assert!(err.contains("the executor reads this as 0"), "{err}");
    assert!(
        err.contains("help: keep min_message_size between 0 and 2147483647"),
        "{err}"
    );
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a plan");
    assert_eq!(plan["min_message_size"].as_u64(), Some(4294967296));
    // 3e9 reads as a negative int, widened to nearly 2^64.
    let out = msclc(&["check", program, "-D", "min_size=3000000000"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("which makes it 18446744072414584320, so the executor refuses messages below 18446744072414584320 bytes"),
        "{err}"
    );
    let denied = msclc(&["check", program, "--deny-warnings"]);
    assert_eq!(denied.status.code(), Some(1));
    // The largest the executor reads as written, and 2^64 - 1 (-1 as an
    // int), which it reads as the same: nothing to say.
    for fine in ["min_size=2147483647", "min_size=18446744073709551615"] {
        checks_quietly(program, fine);
    }
}

/// A negative message size is written as the reference writes it, -5, not
/// as its 64-bit pattern, and read back from a plan the same; the warning
/// says what the executor makes of each.
#[test]
fn negative_message_sizes_are_written_whole_and_warned_of() {
    let program = "tests/cli/large_messages_only.mscl";
    let sizes = ["-D", "min_size=-5", "-D", "max_size=-7"];
    let out = msclc(&[&[program][..], &sizes].concat());
    assert_eq!(out.status.code(), Some(0));
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a plan");
    assert_eq!(plan["min_message_size"].as_i64(), Some(-5));
    assert_eq!(plan["max_message_size"].as_i64(), Some(-7));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("warning[W0502]: min_message_size is -5, which the MSCCL++ executor compares sizes with as the unsigned 64-bit 18446744073709551611, above max_message_size (18446744073709551609): the executor refuses the plan at every size"),
        "{err}"
    );
    assert!(
        err.contains("warning[W0502]: max_message_size is -7, which the MSCCL++ executor reads as the unsigned 64-bit 18446744073709551609"),
        "{err}"
    );
    assert!(err.contains("large_messages_only.mscl:9:24"), "{err}");
    // The plan read back keeps them, and says the same of them.
    let dir = common::scratch("negative-sizes");
    let written = dir.join("negative.json");
    std::fs::write(&written, &out.stdout).unwrap();
    let again = msclc(&["check", written.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(0), "{err}");
    assert!(err.contains("min_message_size is -5"), "{err}");
    assert!(err.contains("max_message_size is -7"), "{err}");
}

/// A pipeline unit of 4 GiB or more: the executor keeps `unit_size` in 32
/// bits, so it is a bound crossed, at the pipeline.
#[test]
fn a_pipeline_unit_past_32_bits_is_a_located_warning() {
    let program = "tests/cli/pipeline_unit_4gib.mscl";
    let err = warned(&["check", program]);
    assert!(
        err.starts_with("warning[W0502]: rank 0 thread block 0 has 4294967296 bytes in a pipeline's unit; the MSCCL++ executor allows at most 4294967295"),
        "{err}"
    );
    assert!(err.contains("pipeline_unit_4gib.mscl:8:1"), "{err}");
    assert!(err.contains("help: use a unit_size below 4 GiB"), "{err}");
    checks_quietly(program, "unit=4294967295");
}

/// The executor has 16 barrier counters per GPU: a rank whose blocks meet
/// in a 17th set has crossed a bound, said at the barrier that takes id 16.
#[test]
fn a_seventeenth_barrier_set_on_a_rank_is_a_located_warning() {
    let program = "tests/cli/many_barriers.mscl";
    let err = warned(&["check", program]);
    assert!(
        err.starts_with("warning[W0502]: rank 0 has 17 barrier ids, one per set of thread blocks that meet at a barrier; the MSCCL++ executor has 16 barrier counters per GPU"),
        "{err}"
    );
    assert!(err.contains("many_barriers.mscl:11:5"), "{err}");
    assert!(
        err.contains("barrier id 16 of rank 0, on its thread block 16"),
        "{err}"
    );
    assert!(err.contains("= when i = 16"), "{err}");
    checks_quietly(program, "pairs=16");
}

/// Packets in a Simple plan's upper half of scratch run past the buffer's
/// end on the executor, which doubles scratch for LL plans only: a
/// warning at the first op that moves them, with the loop values; none
/// for the same program with `protocol = LL`.
#[test]
fn packets_past_a_simple_plans_scratch_are_a_located_warning() {
    let program = "tests/cli/packets_in_simple.mscl";
    let out = msclc(&["check", program]);
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("warning[W0502]: the packets of rank 0's scratch chunks 1..2 lie at its chunks 2..4, past the end of its scratch buffer: 2 chunk(s), a Simple plan's scratch not doubled for packets (and 1 more op(s))"),
        "{err}"
    );
    assert!(err.contains("packets_in_simple.mscl:15:5"), "{err}");
    assert!(err.contains("= when r = 0"), "{err}");
    assert!(
        err.contains("give a program of packet ops `protocol = LL`"),
        "{err}"
    );
    let ll = msclc(&["check", program, "-D", "protocol_ll=true"]);
    assert!(ll.status.success() && ll.stderr.is_empty(), "{ll:?}");
}

/// The executor keeps a semaphore's initial value in a 32-bit int, and
/// below 0 its semaphore does not count: a semaphore started there is a
/// warning at the value, with what the executor makes of it. The plan
/// keeps the value as the reference writes it, and reads back.
#[test]
fn a_semaphore_started_where_the_executor_does_not_count_is_a_located_warning() {
    let program = "tests/cli/semaphore_start.mscl";
    let out = msclc(&[program]);
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("warning[W0502]: semaphore 0 of rank 1 starts at 4294967297, which the MSCCL++ executor reads as 1: it keeps a semaphore's init_value in a 32-bit int"),
        "{err}"
    );
    assert!(err.contains("semaphore_start.mscl:10:45"), "{err}");
    assert!(
        err.contains("the executor starts this semaphore at 1"),
        "{err}"
    );
    assert!(err.contains("= when r = 1"), "{err}");
    assert!(
        err.contains("help: start semaphores between 0 and 2147483647"),
        "{err}"
    );
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a plan");
    assert_eq!(
        plan["gpus"][1]["semaphores"][0]["init_value"].as_i64(),
        Some(4294967297)
    );
    // Below 0: read as written, but not counted.
    let dir = common::scratch("semaphore");
    let below = dir.join("below.json");
    let below_arg = below.to_str().expect("a UTF-8 path");
    let out = msclc(&[program, "-D", "start=-3", "-o", below_arg]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("warning[W0502]: semaphore 0 of rank 1 starts at -3, below 0, where the MSCCL++ executor's semaphore does not count"),
        "{err}"
    );
    assert!(
        err.contains("on the executor, an acquire of this passes at the next release"),
        "{err}"
    );
    // The plan reads back, and says so again, unlocated.
    let sim = msclc(&["sim", below_arg]);
    let said = String::from_utf8_lossy(&sim.stderr);
    assert!(!said.contains("E0309"), "{said}");
    assert!(
        said.contains("warning[W0502]: semaphore 0 of rank 1 starts at -3, below 0"),
        "{said}"
    );
    std::fs::remove_file(&below).expect("the plan was written");
    // From 0 to the largest int the executor counts as msclc does.
    for fine in ["start=0", "start=2147483647"] {
        checks_quietly(program, fine);
    }
}

/// The two ways the executor miscounts a semaphore's start are two
/// warnings, each at its first semaphore: one warning for both named the
/// first alone, and its account fitted only that one.
#[test]
fn semaphores_cut_to_32_bits_and_below_0_are_each_their_own_warning() {
    let program = "program \"s\" { collective = test_collective(2, input_size: 1, output_size: 1) }
let cut = semaphore(1, initial_value: 4294967297)
let below = semaphore(1, initial_value: -1)
let below_too = semaphore(0, initial_value: -2)
";
    let out = piped(&["check", "-"], program);
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    let heads: Vec<&str> = err.lines().filter(|l| l.starts_with("warning")).collect();
    assert_eq!(
        heads,
        [
            "warning[W0502]: semaphore 0 of rank 1 starts at 4294967297, which the MSCCL++ executor reads as 1: it keeps a semaphore's init_value in a 32-bit int",
            "warning[W0502]: semaphore 0 of rank 0 (and 1 more semaphore(s)) starts at -2, below 0, where the MSCCL++ executor's semaphore does not count: an acquire that finds the value at or below 0 waits for it to come back to what it found, which is one release however far below 0 it is",
        ],
        "{err}"
    );
    assert!(err.contains("<stdin>:2:"), "{err}");
    assert!(err.contains("<stdin>:4:"), "{err}");
}
