//! The plan of every example at its default parameters, kept under
//! tests/plans/ (the example's path, `.json` for `.mscl`): a change to a
//! plan shows as a diff in review. Plans are written one op to a line, so
//! that the diff names the ops that changed.
//!
//! After a change that is meant to change plans, refresh them with
//!
//!     MSCLC_BLESS=1 cargo test --test pinned
//!
//! and review the diff of tests/plans/ like any other.

use std::path::{Path, PathBuf};

mod common;

/// Values whose one-line form is at most this long stay on one line.
const LINE: usize = 120;

/// `value` as JSON: on one line where that line is short, otherwise one
/// member to a line, indented by two spaces a level; an op list (`ops`)
/// has one op to a line, however long.
fn render(value: &serde_json::Value, indent: usize, op_list: bool, out: &mut String) {
    use serde_json::Value::{Array, Object};
    let flat = value.to_string();
    let fits = flat.len() + indent <= LINE && !op_list;
    if fits || !matches!(value, Array(_) | Object(_)) {
        out.push_str(&flat);
        return;
    }
    let pad = " ".repeat(indent + 2);
    let (open, close) = if value.is_array() {
        ('[', ']')
    } else {
        ('{', '}')
    };
    out.push(open);
    out.push('\n');
    let mut first = true;
    let mut member = |key: Option<&str>, v: &serde_json::Value, out: &mut String| {
        if !first {
            out.push_str(",\n");
        }
        first = false;
        out.push_str(&pad);
        if let Some(k) = key {
            out.push_str(&serde_json::Value::from(k).to_string());
            out.push_str(": ");
        }
        if op_list {
            out.push_str(&v.to_string());
        } else {
            render(v, indent + 2, key == Some("ops"), out);
        }
    };
    match value {
        Array(items) => items.iter().for_each(|v| member(None, v, out)),
        Object(fields) => fields.iter().for_each(|(k, v)| member(Some(k), v, out)),
        _ => unreachable!("only lists and objects span lines"),
    }
    out.push('\n');
    out.push_str(&" ".repeat(indent));
    out.push(close);
}

fn render_plan(plan: &serde_json::Value) -> String {
    let mut out = String::new();
    render(plan, 0, false, &mut out);
    out.push('\n');
    out
}

fn pinned_path(example: &Path) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let relative = example
        .strip_prefix(root.join("examples"))
        .expect("under examples/");
    root.join("tests/plans")
        .join(relative)
        .with_extension("json")
}

#[test]
fn example_plans_are_pinned() {
    let bless = std::env::var_os("MSCLC_BLESS").is_some();
    let mut stale = Vec::new();
    let mut pinned = Vec::new();
    for example in common::example_files() {
        let compiled = msclc::driver::compile(&example, &[]);
        let Ok(plan) = compiled.result else {
            // The one example that is meant not to compile (tests/examples.rs).
            continue;
        };
        let text = render_plan(&msclc::back::json::plan_to_json(&plan));
        // The rendering is JSON, and the same plan.
        let reread: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
        assert_eq!(reread, msclc::back::json::plan_to_json(&plan));
        let path = pinned_path(&example);
        pinned.push(path.clone());
        let old = std::fs::read_to_string(&path).unwrap_or_default();
        if old == text {
            continue;
        }
        if bless {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &text).unwrap();
            eprintln!("wrote {}", path.display());
            continue;
        }
        let line = old
            .lines()
            .zip(text.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| old.lines().count().min(text.lines().count()));
        stale.push(format!(
            "{}: differs from line {} ({})",
            path.display(),
            line + 1,
            text.lines().nth(line).unwrap_or("<end of plan>")
        ));
    }
    // A pinned plan whose example is gone is stale too.
    let mut on_disk = Vec::new();
    collect_json(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/plans"),
        &mut on_disk,
    );
    for orphan in on_disk.iter().filter(|p| !pinned.contains(p)) {
        if bless {
            std::fs::remove_file(orphan).unwrap();
            eprintln!("removed {}", orphan.display());
        } else {
            stale.push(format!("{}: no example makes this plan", orphan.display()));
        }
    }
    assert!(pinned.len() >= 70, "only {} plans", pinned.len());
    assert!(
        stale.is_empty(),
        "{}\nIf the change is meant, refresh with `MSCLC_BLESS=1 cargo test --test pinned` and review the diff.",
        stale.join("\n")
    );
}

fn collect_json(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = entry.path();
        if p.is_dir() {
            collect_json(&p, out);
        } else if p.extension().is_some_and(|e| e == "json") {
            out.push(p);
        }
    }
}
