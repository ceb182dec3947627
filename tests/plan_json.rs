//! Reading MSCCL++ JSON plans: every reference plan reads back into the IR
//! and writes out as the same JSON value; a malformed plan is an error that
//! names the JSON path of the wrong value.

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

#[test]
fn reference_plans_round_trip() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance");
    if !dir.exists() {
        eprintln!("skipped: {} not found", dir.display());
        return;
    }
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
    plan_to_json(c.result.as_ref().ok().expect("compiles"))
}

#[test]
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
