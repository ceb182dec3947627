//! Reading MSCCL++ JSON plans: every reference plan reads back into the IR
//! and writes out as the same JSON value; a malformed plan is an error that
//! names the JSON path of the wrong value.

mod common;

use common::Needs;
use msclc::back::json::plan_to_json;
use msclc::front::plan_json::read_plan;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn json_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = entry.path();
        if p.is_dir() {
            json_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "json")
            && p.file_name().is_some_and(|n| n != "manifest.json")
        {
            out.push(p);
        }
    }
}

fn main() {
    common::run(vec![
        common::test(
            "reference_plans_round_trip",
            Needs::Conformance,
            reference_plans_round_trip,
        ),
        common::test(
            "errors_name_the_json_path",
            Needs::Nothing,
            errors_name_the_json_path,
        ),
        common::test(
            "mutated_plans_never_panic",
            Needs::Conformance,
            mutated_plans_never_panic,
        ),
        common::test(
            "plans_that_name_what_is_not_there_are_errors_at_the_field",
            Needs::Nothing,
            plans_that_name_what_is_not_there_are_errors_at_the_field,
        ),
        common::test(
            "plans_are_written_as_serde_json_writes_them",
            Needs::Nothing,
            plans_are_written_as_serde_json_writes_them,
        ),
    ]);
}

/// `write_plan` writes each plan, compact and indented, as serde_json
/// writes the JSON value it holds (keys sorted; one space a level),
/// byte for byte: every example, and a plan large enough for its ranks to
/// be written on several threads.
fn plans_are_written_as_serde_json_writes_them() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut cases = common::example_cases();
    cases.push((
        root.join("examples/mscclpp/single_node/allreduce.mscl"),
        vec![("num_gpus".into(), "64".into())],
    ));
    for (path, defines) in &cases {
        let c = msclc::driver::compile(path, defines);
        let Ok(plan) = &c.result else {
            continue;
        };
        let written = |pretty| {
            let mut text = Vec::new();
            msclc::back::json::write_plan(plan, pretty, &mut text).expect("written");
            text
        };
        let compact = written(false);
        let value: Value = serde_json::from_slice(&compact).expect("JSON");
        let want = serde_json::to_vec(&value).expect("JSON");
        assert!(
            compact == want,
            "{} {defines:?}: compact text differs",
            path.display()
        );
        let mut want = Vec::new();
        let indented = serde_json::ser::PrettyFormatter::with_indent(b" ");
        let mut serializer = serde_json::Serializer::with_formatter(&mut want, indented);
        serde::Serialize::serialize(&value, &mut serializer).expect("JSON");
        assert!(
            written(true) == want,
            "{} {defines:?}: indented text differs",
            path.display()
        );
        if !defines.is_empty() {
            // Three megabytes: past the size written on one thread.
            assert!(compact.len() > 3 << 20, "{} bytes", compact.len());
        }
    }
}

fn reference_plans_round_trip() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance");
    let mut files = Vec::new();
    json_files(&dir, &mut files);
    assert!(files.len() >= 80, "found only {} plans", files.len());
    for f in files {
        let text = std::fs::read_to_string(&f).expect("readable");
        let plan = read_plan(&text).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let want: Value = serde_json::from_str(&text).expect("JSON");
        assert_eq!(plan_to_json(&plan), want, "{}", f.display());
    }
}

fn error_of(text: &str) -> String {
    match read_plan(text) {
        Ok(_) => panic!("accepted: {text}"),
        Err(e) => e.to_string(),
    }
}

fn small_plan() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/simple_allgather.mscl");
    let c = msclc::driver::compile(&path, &[]);
    plan_to_json(c.result.as_ref().expect("compiles"))
}

fn errors_name_the_json_path() {
    let mut plan = small_plan();
    plan["gpus"][1]["threadblocks"][0]["ops"][5]["src_buff"][0]["type"] = "x".into();
    let e = error_of(&plan.to_string());
    assert!(
        e.starts_with(
            "at gpus[1].threadblocks[0].ops[5].src_buff[0].type: unknown buffer type \"x\""
        ),
        "{e}"
    );

    let mut plan = small_plan();
    plan["gpus"][0]["threadblocks"][0]["channels"][0]["channel_ids"] = serde_json::json!([7]);
    let e = error_of(&plan.to_string());
    assert!(
        e.contains(
            "gpus[0].threadblocks[0].channels[0].channel_ids: memory channel 7 but the rank has 1"
        ),
        "{e}"
    );

    let mut plan = small_plan();
    plan.as_object_mut().expect("object").remove("gpus");
    assert_eq!(error_of(&plan.to_string()), "missing field `gpus`");

    assert!(error_of("{").starts_with("not JSON"));
}

/// Numbers in a plan replaced by extreme values: reading and simulating must
/// give a verdict or an error, never a panic.
fn mutated_plans_never_panic() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance");
    let plan_text = std::fs::read_to_string(dir.join("single_node/allreduce_pkt.n4.json"))
        .expect("the reference's allreduce_pkt.n4 plan");
    let base: Value = serde_json::from_str(&plan_text).expect("JSON");
    let mut numbers = Vec::new();
    fn paths(v: &Value, path: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
        match v {
            Value::Number(_) => out.push(path.clone()),
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    path.push(i.to_string());
                    paths(item, path, out);
                    path.pop();
                }
            }
            Value::Object(map) => {
                for (k, item) in map {
                    path.push(k.clone());
                    paths(item, path, out);
                    path.pop();
                }
            }
            _ => {}
        }
    }
    paths(&base, &mut Vec::new(), &mut numbers);
    for (i, path) in numbers.iter().enumerate().step_by(7) {
        for extreme in [0u64, 1, 7, 4096, u32::MAX as u64] {
            let mut plan = base.clone();
            let mut at = &mut plan;
            for key in path {
                at = match at {
                    Value::Array(items) => &mut items[key.parse::<usize>().expect("index")],
                    Value::Object(map) => map.get_mut(key).expect("key"),
                    _ => unreachable!(),
                };
            }
            *at = Value::from(extreme);
            let text = plan.to_string();
            let outcome = std::panic::catch_unwind(|| {
                if let Ok(p) = read_plan(&text) {
                    let _ = msclc::sim::simulate(&p, 2);
                }
            });
            assert!(
                outcome.is_ok(),
                "panicked with {} = {extreme} (number {i})",
                path.join(".")
            );
        }
    }
}

/// The plan an example compiles to, as JSON.
fn example_plan(path: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    let text = std::fs::read_to_string(&path).unwrap();
    let c = msclc::driver::compile_source(&path, text, &[]);
    let plan = c
        .result
        .unwrap_or_else(|d| panic!("{}: {}", path.display(), c.sources.render(&d)));
    plan_to_json(&plan)
}

/// The first op (in rank, block, op order, pipelines' bodies after them)
/// that has `key`.
fn first_op_with<'v>(plan: &'v mut Value, key: &str) -> &'v mut Value {
    fn find<'v>(ops: &'v mut Value, key: &str) -> Option<&'v mut Value> {
        for op in ops.as_array_mut()? {
            if op.get(key).is_some() {
                return Some(op);
            }
            if op.get("ops").is_some() {
                if let Some(inner) = find(&mut op["ops"], key) {
                    return Some(inner);
                }
            }
        }
        None
    }
    let mut found = None;
    for gpu in plan["gpus"].as_array_mut().unwrap() {
        for tb in gpu["threadblocks"].as_array_mut().unwrap() {
            if let Some(op) = find(&mut tb["ops"], key) {
                found = Some(op);
                break;
            }
        }
        if found.is_some() {
            break;
        }
    }
    found.unwrap_or_else(|| panic!("no op with {key}"))
}

/// A plan from elsewhere (hand-written, another tool's) whose ids point
/// past their tables, or whose shape no collective has, is an error with
/// its place, not a plan that deadlocks in the simulator or writes past
/// an array on the GPU; and the fields the executor reads with defaults
/// may be left out.
fn plans_that_name_what_is_not_there_are_errors_at_the_field() {
    const SEMAPHORES: &str = "examples/mscclpp/unit_tests/semaphore.mscl";
    const PIPELINE: &str = "examples/mscclpp/unit_tests/pipeline_test.mscl";
    const BARRIERS: &str = "examples/mscclpp/unit_tests/barrier_test.mscl";
    const SWITCH: &str = "examples/mscclpp/executor_tests/reduce_nvls.mscl";
    const SWITCH_REDUCE: &str = "examples/mscclpp/unit_tests/switch_reduce_test.mscl";
    const ALLGATHER: &str = "examples/simple_allgather.mscl";
    type Mutation = fn(&mut Value);
    let cases: &[(&str, Mutation, &str, &str)] = &[
        (
            SEMAPHORES,
            |p| first_op_with(p, "semaphore_ids")["semaphore_ids"] = serde_json::json!([99]),
            "semaphore 99 but the rank has",
            ".semaphore_ids",
        ),
        (
            SEMAPHORES,
            |p| {
                p["gpus"][0].as_object_mut().unwrap().remove("semaphores");
            },
            "semaphore 0 but the rank has 0",
            ".semaphore_ids",
        ),
        (
            ALLGATHER,
            |p| first_op_with(p, "channel_ids")["channel_ids"] = serde_json::json!([9]),
            "channel 9 but the thread block has 1",
            ".channel_ids",
        ),
        (
            ALLGATHER,
            |p| p["gpus"][0]["channels"][0]["connected_to"] = serde_json::json!([9999]),
            "connected to rank 9999, but the plan has 2 ranks",
            "gpus[0].channels",
        ),
        (
            ALLGATHER,
            |p| p["gpus"][0]["remote_buffers"][0]["rank"] = serde_json::json!(99),
            "a remote buffer of rank 99, but the plan has 2 ranks",
            "gpus[0].remote_buffers[0].rank",
        ),
        (
            BARRIERS,
            |p| {
                first_op_with(p, "barrier_id")
                    .as_object_mut()
                    .unwrap()
                    .remove("barrier_id");
            },
            "missing field `barrier_id`",
            ".ops[",
        ),
        (
            BARRIERS,
            |p| first_op_with(p, "barrier_id")["barrier_id"] = serde_json::json!(100),
            "barrier id 100 is past the executor's 16 barrier counters (ids 0 to 15), and the rank has only",
            ".barrier_id",
        ),
        (
            BARRIERS,
            |p| first_op_with(p, "barrier_id")["num_threadblocks"] = serde_json::json!(0),
            "0 thread blocks to meet at a barrier",
            ".num_threadblocks",
        ),
        (
            ALLGATHER,
            |p| {
                let put = first_op_with(p, "dst_buff");
                put["dst_buff"][0] = put["src_buff"][0].clone();
            },
            "dst_buff names the rank's own buffer (`type`), where put takes a peer's buffer (`buffer_id`): all its destinations are peers'",
            ".dst_buff[0]",
        ),
        (
            // The simulator indexed past a block's ops on this one.
            "examples/mscclpp/single_node/allreduce_pkt.mscl",
            |p| {
                let respkt = first_op_with(p, "reduce_op");
                let own = respkt["dst_buff"][0].clone();
                respkt["dst_buff"].as_array_mut().unwrap().push(own);
            },
            "where respkt takes a peer's buffer (`buffer_id`): its first destination is the rank's own, the others peers'",
            ".dst_buff[",
        ),
        (
            ALLGATHER,
            |p| p["gpus"][0]["threadblocks"][0]["id"] = serde_json::json!(1),
            "thread block ids must be 0, 1, 2, ... in order",
            "gpus[0].threadblocks[0].id",
        ),
        (
            ALLGATHER,
            |p| {
                first_op_with(p, "channel_ids")
                    .as_object_mut()
                    .unwrap()
                    .remove("channel_type");
            },
            "op names the memory or port channels it uses",
            "ops[",
        ),
        (
            ALLGATHER,
            |p| {
                first_op_with(p, "channel_ids")
                    .as_object_mut()
                    .unwrap()
                    .remove("channel_ids");
            },
            "op names the memory or port channels it uses (channel_type and channel_ids)",
            "ops[",
        ),
        (
            SEMAPHORES,
            |p| {
                first_op_with(p, "semaphore_ids")
                    .as_object_mut()
                    .unwrap()
                    .remove("semaphore_ids");
            },
            "op needs its semaphore_ids",
            "ops[",
        ),
        (
            PIPELINE,
            |p| {
                first_op_with(p, "iter_context")
                    .as_object_mut()
                    .unwrap()
                    .remove("iter_context");
            },
            "a `pipeline` op needs its iter_context",
            "ops[",
        ),
        (
            ALLGATHER,
            |p| p["gpus"] = serde_json::json!([]),
            "at least one gpu",
            "gpus",
        ),
        (
            ALLGATHER,
            |p| p["num_threads_per_block"] = serde_json::json!(1025),
            "1025 threads per block",
            "num_threads_per_block",
        ),
        (
            ALLGATHER,
            |p| p["num_threads_per_block"] = serde_json::json!(1u64 << 40),
            "1099511627776 threads per block (the kernel is compiled for at most 1024); expected 1 to 1024",
            "num_threads_per_block",
        ),
        (
            ALLGATHER,
            |p| p["gpus"][0]["input_chunks"] = serde_json::json!(1u64 << 40),
            "1099511627776 chunks; expected 0 to 16777216",
            "gpus[0].input_chunks",
        ),
        (
            ALLGATHER,
            |p| first_op_with(p, "dst_buff")["dst_buff"][0]["buffer_id"] = serde_json::json!(99),
            "remote buffer 99, but the thread block has 1 remote buffer(s)",
            ".buffer_id",
        ),
        (
            ALLGATHER,
            |p| p["buffer_alignment"] = serde_json::json!(0),
            "0 bytes of alignment",
            "buffer_alignment",
        ),
        (
            PIPELINE,
            |p| {
                first_op_with(p, "iter_context")["iter_context"]["unit_size"] = serde_json::json!(0)
            },
            "a pipeline's unit is at least a byte",
            ".unit_size",
        ),
        (
            PIPELINE,
            |p| {
                let pipeline = first_op_with(p, "iter_context");
                let inner = pipeline.clone();
                pipeline["ops"] = serde_json::json!([inner]);
            },
            "a pipeline inside a pipeline",
            ".ops[0]",
        ),
        (
            ALLGATHER,
            |p| p["gpus"][1]["output_chunks"] = serde_json::json!(4),
            "but rank 0 has 1 and 2",
            "gpus[1].input_chunks",
        ),
        (
            ALLGATHER,
            |p| {
                for g in p["gpus"].as_array_mut().unwrap() {
                    g["output_chunks"] = serde_json::json!(3)
                }
            },
            "the ranks times as many output chunks",
            "gpus",
        ),
        (
            ALLGATHER,
            |p| first_op_with(p, "dst_buff")["dst_buff"][0]["size"] = serde_json::json!(2),
            "buffer references are 1 and 2 chunks",
            "ops[",
        ),
        (
            SWITCH,
            |p| {
                let ch = p["gpus"][0]["channels"]
                    .as_array_mut()
                    .unwrap()
                    .iter_mut()
                    .find(|c| c["channel_type"] == "switch")
                    .unwrap();
                ch["rank_groups"][0]["ranks"][0] = ch["rank_groups"][0]["ranks"][1].clone();
            },
            "switch channel 0: rank",
            "gpus[0].channels",
        ),
        // A switch reduce no broadcast follows (`glre`) names its window
        // and its destination in fields of its own.
        (
            SWITCH_REDUCE,
            |p| first_op_with(p, "dst_chunk")["buffer_offset"] = serde_json::json!(1),
            "chunks 1..2 of rank 0's input buffer, which has 1",
            ".buffer_offset",
        ),
        (
            SWITCH_REDUCE,
            |p| first_op_with(p, "dst_chunk")["dst_chunk"]["index"] = serde_json::json!(5),
            "chunks 5..6 of rank 0's scratch buffer, which has 1",
            ".dst_chunk",
        ),
        (
            SWITCH_REDUCE,
            |p| first_op_with(p, "dst_chunk")["dst_chunk"]["rank"] = serde_json::json!(2),
            "rank 2, outside switch channel 0's group [0, 1]",
            ".dst_chunk.rank",
        ),
        (
            SWITCH_REDUCE,
            |p| first_op_with(p, "dst_chunk")["buffer_type"] = serde_json::json!("o"),
            "the output buffer, but switch channel 0 joins the members' input buffers",
            ".buffer_type",
        ),
        (
            SWITCH_REDUCE,
            |p| {
                first_op_with(p, "dst_chunk")
                    .as_object_mut()
                    .unwrap()
                    .remove("buffer_offset");
            },
            "a `glre` op names the window it reduces",
            "ops[",
        ),
        (
            SWITCH_REDUCE,
            |p| first_op_with(p, "dst_chunk")["channel_ids"] = serde_json::json!([]),
            "a `glre` op names the one switch channel it reduces over",
            "ops[",
        ),
    ];
    for (example, mutate, message, path) in cases {
        let mut plan = example_plan(example);
        mutate(&mut plan);
        let text = plan.to_string();
        let error = read_plan(&text).expect_err(message);
        assert!(
            error.message.contains(message),
            "{example}: {error}, not {message}"
        );
        assert!(
            error.path.contains(path),
            "{example}: {error} at {}, not {path}",
            error.path
        );
    }
    // What the executor reads with defaults may be left out; a channel
    // type "none" is none.
    let mut plan = example_plan(ALLGATHER);
    let top = plan.as_object_mut().unwrap();
    for optional in [
        "num_threads_per_block",
        "reuse_resources",
        "use_double_scratch_buffer",
        "buffer_alignment",
        "min_message_size",
        "max_message_size",
    ] {
        top.remove(optional);
    }
    first_op_with(&mut plan, "name")["channel_type"] = serde_json::json!("none");
    let read = read_plan(&plan.to_string()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(read.options.num_threads_per_block, 1024);
    assert_eq!(read.options.max_message_size, u64::MAX.into());
}
