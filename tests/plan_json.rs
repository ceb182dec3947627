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
