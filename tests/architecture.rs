//! The source tree as docs/architecture.md describes it: every module of
//! src/ has a layer there, no module uses one of its own layer or below
//! (dependencies go one way, down the pipeline), and no file passes 800
//! lines.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The layer of each module, from the table of docs/architecture.md.
fn layers() -> BTreeMap<String, u32> {
    let doc = std::fs::read_to_string(root().join("docs/architecture.md")).unwrap();
    let mut layers = BTreeMap::new();
    for line in doc.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let Some(layer) = cells.get(1).and_then(|c| c.parse::<u32>().ok()) else {
            continue;
        };
        for module in cells[2].split(',') {
            let module = module.trim().trim_matches('`');
            assert!(
                layers.insert(module.to_string(), layer).is_none(),
                "{module} twice in the table"
            );
        }
    }
    layers
}

/// Every .rs file under `dir`.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// The library module a file of src/ belongs to; `None` for the binary
/// (main.rs, cli/) and lib.rs.
fn module_of(file: &Path) -> Option<String> {
    let rel = file.strip_prefix(root().join("src")).unwrap();
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (!matches!(name, "main" | "lib" | "cli")).then(|| name.to_string())
}

#[test]
fn every_module_has_a_layer_and_the_table_names_no_other() {
    let layers = layers();
    let mut modules: Vec<String> = rust_files(&root().join("src"))
        .iter()
        .filter_map(|f| module_of(f))
        .collect();
    modules.dedup();
    let in_table: Vec<String> = layers.keys().cloned().collect();
    let mut sorted = modules.clone();
    sorted.sort();
    assert_eq!(
        sorted, in_table,
        "the modules of src/ vs the layers of docs/architecture.md"
    );
}

#[test]
fn dependencies_go_down_the_layers() {
    let layers = layers();
    let mut wrong = Vec::new();
    for file in rust_files(&root().join("src")) {
        let Some(module) = module_of(&file) else {
            continue;
        };
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            // Comments may name any module.
            let code = line.split("//").next().unwrap_or("");
            for (at, _) in code.match_indices("crate::") {
                let rest = &code[at + "crate::".len()..];
                let used: Vec<&str> = if let Some(list) = rest.strip_prefix('{') {
                    list.split('}').next().unwrap_or("").split(',').collect()
                } else {
                    vec![rest]
                };
                for used in used {
                    let name: String = used
                        .trim()
                        .chars()
                        .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                        .collect();
                    if name.is_empty() || name == module {
                        continue;
                    }
                    let (Some(&mine), Some(&theirs)) = (layers.get(&module), layers.get(&name))
                    else {
                        continue;
                    };
                    if theirs >= mine {
                        wrong.push(format!(
                            "{}:{}: {module} (layer {mine}) uses {name} (layer {theirs})",
                            file.display(),
                            n + 1
                        ));
                    }
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "uses against the layers:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn no_file_passes_800_lines() {
    let long: Vec<String> = rust_files(&root().join("src"))
        .iter()
        .filter_map(|f| {
            let lines = std::fs::read_to_string(f).unwrap().lines().count();
            (lines > 800).then(|| format!("{}: {lines} lines", f.display()))
        })
        .collect();
    assert!(
        long.is_empty(),
        "split these along a seam (docs/architecture.md):\n{}",
        long.join("\n")
    );
}
