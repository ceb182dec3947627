//! `--emit ops`: a plan's ops listed to read, each with the program line
//! and loop values that made it.

use super::{common, msclc};

fn listing(args: &[&str]) -> String {
    let out = msclc(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "msclc {args:?} failed: {stderr}");
    String::from_utf8(out.stdout).expect("the listing is text")
}

/// The listing without its `// file:line` notes.
fn ops_only(text: &str) -> String {
    let lines = text
        .lines()
        .map(|l| l.split(" //").next().unwrap_or(l).trim_end());
    lines.collect::<Vec<_>>().join("\n")
}

#[test]
fn each_rank_block_and_op_on_a_line_of_its_own_with_the_program_line_that_made_it() {
    let text = listing(&["examples/simple_allgather.mscl", "--emit", "ops"]);
    let rank_0 = "\
simple_allgather_2gpus: allgather on 2 ranks, in place, protocol Simple, 1024 threads per block, messages up to 1 GiB

rank 0: chunks input 1, output 2, scratch 0
  thread block 0: memory channels to 1
    0  nop                                 // examples/simple_allgather.mscl:19:9, src = 0, dst = 1
    1  rlxsignal over memory to 1          // examples/simple_allgather.mscl:19:9, src = 0, dst = 1
    2  nop                                 // examples/simple_allgather.mscl:19:9, src = 0, dst = 1
    3  rlxwait over memory to 1            // examples/simple_allgather.mscl:20:9, src = 0, dst = 1
    4  nop                                 // examples/simple_allgather.mscl:20:9, src = 0, dst = 1
    5  put output[0] -> rank(1).output[0]  // examples/simple_allgather.mscl:21:9, src = 0, dst = 1
    6  nop                                 // examples/simple_allgather.mscl:23:9, src = 0, dst = 1
    7  signal over memory to 1             // examples/simple_allgather.mscl:23:9, src = 0, dst = 1
    8  wait over memory to 1               // examples/simple_allgather.mscl:24:9, src = 0, dst = 1
    9  nop                                 // examples/simple_allgather.mscl:24:9, src = 0, dst = 1
";
    assert!(text.starts_with(rank_0), "{text}");
    let docs = std::fs::read_to_string("docs/executor.md").unwrap();
    assert!(
        docs.contains(&format!("```\n{rank_0}```\n")),
        "docs/executor.md shows the listing as it is"
    );
    assert!(
        text.contains("    5  put output[1] -> rank(0).output[1]  // examples/simple_allgather.mscl:21:9, src = 1, dst = 0\n"),
        "{text}"
    );
    assert_eq!(text.matches("thread block").count(), 2, "{text}");
}

/// Fused ops say so and keep their first call's line; an op made in a
/// function says where the function was called; peers in a row are a
/// range; a pipeline's ops are numbered under it, and the pipeline is
/// placed in the loops around its statement (none here).
#[test]
fn fused_ops_ranges_of_ranks_and_pipeline_bodies() {
    let text = listing(&[
        "examples/mscclpp/executor_tests/reduce_nvls_pipeline.mscl",
        "--emit",
        "ops",
    ]);
    let ops = ops_only(&text);
    assert!(
        ops.contains(
            "  thread block 0: memory channels to 1..8; switch channels switch(0..8).input\n"
        ),
        "{ops}"
    );
    assert!(
        ops.contains("    5  pipeline unit_size 1 MiB, num_chunks 1\n       5.0  glres switch(0..8).input[0] -> switch(0..8).input[0]\n"),
        "{ops}"
    );
    let pipeline = text.lines().find(|l| l.contains("  pipeline ")).unwrap();
    assert!(
        pipeline.ends_with("  // examples/mscclpp/executor_tests/reduce_nvls_pipeline.mscl:28:1"),
        "{pipeline}"
    );
    let signal = text
        .lines()
        .find(|l| l.contains("rlxsignal over memory to 0 2..8"))
        .expect("rank 1 signals its seven peers in one op");
    assert!(
        signal.ends_with("// std/sync:14:54 called from examples/mscclpp/executor_tests/reduce_nvls_pipeline.mscl:27:1, gpu = 1, peer = 0, fused"),
        "{signal}"
    );
    // The barrier after the pipeline: another call of the same function.
    let second = text
        .lines()
        .filter(|l| l.contains("rlxsignal over memory to 0 2..8"))
        .nth(1)
        .unwrap();
    assert!(second.contains("// std/sync:14:54 called from examples/mscclpp/executor_tests/reduce_nvls_pipeline.mscl:35:1,"), "{second}");
}

/// Where a rank has several channels of a kind to one peer, which of them
/// an op uses tells whether its signals meet their waits: the k-th to the
/// peer pairs with the peer's k-th back.
#[test]
fn channels_to_one_peer_are_told_apart_by_their_number() {
    let text = listing(&[
        "examples/mscclpp/unit_tests/signal_wait/signal_wait_fuse_test.mscl",
        "-q",
        "--emit",
        "ops",
    ]);
    let ops = ops_only(&text);
    for line in [
        "  thread block 0: memory channels to 1#0 1#1 1#2 1#3",
        "    1  signal over memory to 1#0 1#1",
        "    3  wait over memory to 1#2 1#3",
    ] {
        assert!(ops.contains(line), "{line}\n{ops}");
    }
}

/// A fused put of one chunk to seven peers: its sources counted, its
/// destinations one range; the program's instances are said once, in the
/// header, and each copy's channel is numbered.
#[test]
fn repeated_chunks_are_counted_and_peers_are_ranges() {
    let text = listing(&[
        "examples/mscclpp/multi_node/allgather.mscl",
        "-q",
        "--emit",
        "ops",
    ]);
    assert!(
        ops_only(&text).contains("    5  put output[0] ×7 -> rank(1..8).output[0]\n"),
        "{text}"
    );
    let text = listing(&["examples/allreduce_nvls.mscl", "-q", "--emit", "ops"]);
    let header = text.lines().next().unwrap();
    assert!(
        header.ends_with("// 8 instances: the program's thread block t is blocks 8t to 8t + 7"),
        "{header}"
    );
    assert!(
        text.contains(
            "  thread block 1: memory channels to 1..8#1; switch channels switch(0..8).input\n"
        ),
        "{text}"
    );
}

/// The ops of a plan read from JSON are listed as the program's are: the
/// listing reads the plan, not the program (which it only places).
#[test]
fn a_json_plan_lists_as_the_program_that_made_it() {
    let dir = common::scratch("listing");
    for example in [
        "examples/simple_allgather.mscl",
        "examples/mscclpp/executor_tests/reduce_nvls_pipeline.mscl",
        "examples/mscclpp/executor_tests/reduce_tbg.mscl",
        "examples/mscclpp/unit_tests/semaphore.mscl",
        "examples/mscclpp/unit_tests/put/put_with_signal_and_flush_test.mscl",
        "examples/mscclpp/single_node/allgather_ring.mscl",
        "examples/mscclpp/single_node/alltoall/alltoall_pkt.mscl",
        "examples/mscclpp/multi_node/allgather_tbg.mscl",
    ] {
        let plan = dir.join("plan.json");
        let plan = plan.to_str().unwrap();
        let out = msclc(&[example, "-q", "-o", plan]);
        assert!(
            out.status.success(),
            "{example}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let from_program = listing(&[example, "-q", "--emit", "ops"]);
        let from_plan = listing(&[plan, "--emit", "ops"]);
        assert!(from_program.contains(" // "), "{example}: {from_program}");
        assert!(!from_plan.contains("//"), "{example}: {from_plan}");
        assert_eq!(ops_only(&from_program), ops_only(&from_plan), "{example}");
    }
}

#[test]
fn a_listing_is_not_indented_as_json_is() {
    let out = msclc(&[
        "examples/simple_allgather.mscl",
        "--emit",
        "ops",
        "--pretty",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--pretty indents JSON plans; listings"),
        "{stderr}"
    );
}
