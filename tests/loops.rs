//! What a loop's body sees: each iteration's values. A loop whose body is
//! one method call binds that call's arguments once where no iteration
//! can change them (src/eval/inert.rs, `binds_once`). These programs
//! change them as an iteration may (through the loop variable, or a
//! global the loop's filter assigns), or leave them alone, and the plan
//! must show every iteration's values, on one thread as on several.

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
            if op["name"] == "signal" {
                let peers = op["channel_ids"].as_array().unwrap().len();
                blocks.push((tb["id"].as_u64().unwrap(), peers));
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
