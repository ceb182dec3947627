//! What a loop's body sees: each iteration's values. A loop whose body is
//! one method call binds that call once, and each iteration binds again
//! only the arguments it may change (src/eval/inert.rs, `binds_once`).
//! These programs change them as an iteration may (through the loop
//! variable, or a global the loop's filter assigns), change some and not
//! others, or leave them alone, and the plan must show every iteration's
//! values, on one thread as on several.

use msclc::driver::{self, Limits};
use serde_json::Value;
use std::path::Path;

/// Rank 0 signals peers 1, 2 and 3 in a loop whose `where` is `filter`,
/// `args` the signal's arguments; `next_tb()` moves the global `tb_now`
/// on.
fn signalling_loop(filter: &str, args: &str) -> String {
    format!(
        r#"program "bound" {{
    collective = allgather(4, chunk_factor: 1, inplace: true)
    protocol = Simple
}}
let tb_now = 0
fn next_tb() -> bool {{
    tb_now = tb_now + 1
    return true
}}
let to = {{ peer: memory_channel(peer, 0) for peer in 1..4 }}
let back = {{ peer: memory_channel(0, peer) for peer in 1..4 }}
for peer in 1..4 where {filter} {{ to[peer].signal({args}) }}
for peer in 1..4 {{ back[peer].wait(tb: 0) }}
"#
    )
}

/// The thread blocks of rank 0 that signal, and to how many peers each.
fn signalling_blocks(text: &str, threads: usize) -> Vec<(u64, usize)> {
    signals(text, threads)
        .into_iter()
        .filter(|(_, name, _)| name == "signal")
        .map(|(tb, _, peers)| (tb, peers))
        .collect()
}

/// Rank 0's signals (relaxed or not): each one's thread block, name and
/// number of peers.
fn signals(text: &str, threads: usize) -> Vec<(u64, String, usize)> {
    let limits = Limits {
        threads: Some(threads),
        ..Limits::default()
    };
    let c = driver::compile_source_with(Path::new("bound.mscl"), text.to_string(), &[], limits);
    let plan = match &c.result {
        Ok(plan) => plan,
        Err(errors) => panic!("{}\n{}", text, c.sources.render(errors)),
    };
    let mut json = Vec::new();
    msclc::back::json::write_plan(plan, false, &mut json).unwrap();
    let json: Value = serde_json::from_slice(&json).unwrap();
    let mut blocks = Vec::new();
    for tb in json["gpus"][0]["threadblocks"].as_array().unwrap() {
        for op in tb["ops"].as_array().unwrap() {
            let name = op["name"].as_str().unwrap();
            if name.ends_with("signal") {
                let peers = op["channel_ids"].as_array().unwrap().len();
                blocks.push((tb["id"].as_u64().unwrap(), name.to_string(), peers));
            }
        }
    }
    blocks
}

#[test]
fn a_call_sees_a_global_the_loop_filter_changes() {
    // `next_tb()` moves `tb_now` on before each call: three thread blocks
    // (`relaxed`, an argument of a memory channel's signal but not of a
    // port channel's, leaves a method a candidate that does not match).
    for args in ["tb: tb_now", "tb: tb_now, relaxed: false"] {
        let text = signalling_loop("next_tb()", args);
        for threads in [1, 2] {
            assert_eq!(
                signalling_blocks(&text, threads),
                [(1, 1), (2, 1), (3, 1)],
                "{args} on {threads} threads"
            );
        }
    }
}

#[test]
fn a_call_sees_the_loop_variable() {
    let text = signalling_loop("peer > 0", "tb: peer - 1");
    assert_eq!(signalling_blocks(&text, 1), [(0, 1), (1, 1), (2, 1)]);
}

#[test]
fn a_call_whose_arguments_no_iteration_changes_fuses_as_before() {
    // Nothing moves `tb_now`: one thread block, one signal fused over
    // the three peers' channels.
    let text = signalling_loop("peer > 0", "tb: tb_now");
    for threads in [1, 2] {
        assert_eq!(
            signalling_blocks(&text, threads),
            [(0, 3)],
            "on {threads} threads"
        );
    }
}

#[test]
fn a_call_binds_again_only_the_arguments_an_iteration_changes() {
    // One argument reads the loop variable, the other does not: the first
    // changes at each iteration, the second keeps its value, whichever
    // comes first among the signal's parameters (`tb`, `data_sync`,
    // `relaxed`).
    let relaxed_at_2 = [(0, "signal"), (0, "rlxsignal"), (0, "signal")];
    let tb_by_peer = [(0, "rlxsignal"), (1, "rlxsignal"), (2, "rlxsignal")];
    for (args, expected) in [
        ("tb: tb_now, relaxed: peer == 2", relaxed_at_2),
        ("tb: peer - 1, relaxed: tb_now == 0", tb_by_peer),
    ] {
        let text = signalling_loop("peer > 0", args);
        let expected: Vec<_> = expected
            .iter()
            .map(|&(tb, name)| (tb, name.to_string(), 1))
            .collect();
        for threads in [1, 2] {
            assert_eq!(
                signals(&text, threads),
                expected,
                "{args} on {threads} threads"
            );
        }
    }
}
