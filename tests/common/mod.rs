//! Helpers shared by the integration tests.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Every `.mscl` file under examples/, sorted.
#[allow(dead_code)]
pub fn example_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("examples dir").flatten() {
            let p = entry.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|e| e == "mscl") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("examples"),
        &mut files,
    );
    files.sort();
    files
}

/// Whether this machine has the NVIDIA driver library.
#[allow(dead_code)] // not every test file that shares this module needs it
pub fn has_cuda_driver() -> bool {
    ["libcuda.so", "libcuda.so.1"].iter().any(|lib| {
        // SAFETY: only opens and closes the library.
        unsafe { libloading::Library::new(*lib) }.is_ok()
    })
}

/// ../shared and the reference's PYTHONPATH, or `None` (said) when the
/// reference cannot run here; CI must be able to run it.
#[allow(dead_code)]
pub fn reference_setup() -> Option<(PathBuf, String)> {
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared");
    let mut pythonpath = shared.join("reference-dsl").display().to_string();
    if let Ok(extra) = std::env::var("MSCLC_PYTHONPATH") {
        pythonpath = format!("{pythonpath}:{extra}");
    }
    let python_ready = Command::new("python3")
        .args(["-c", "import sortedcontainers"])
        .env("PYTHONPATH", &pythonpath)
        .status()
        .is_ok_and(|s| s.success());
    if !shared.join("reference-dsl").exists() || !python_ready {
        let in_ci = std::env::var("CI").is_ok_and(|v| v == "true");
        assert!(
            !in_ci || !shared.exists(),
            "CI must run the reference (.ci/run installs sortedcontainers)"
        );
        eprintln!(
            "skipped: ../shared/reference-dsl or python3 with sortedcontainers not available"
        );
        return None;
    }
    Some((shared, pythonpath))
}

/// Where two plans (ours, the reference's) first differ: the JSON path
/// and both values.
#[allow(dead_code)]
pub fn first_difference(
    a: &serde_json::Value,
    b: &serde_json::Value,
    path: &str,
) -> Option<String> {
    use serde_json::Value::{Array, Object};
    match (a, b) {
        (Object(x), Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter().find_map(|k| match (x.get(k), y.get(k)) {
                (Some(u), Some(v)) => first_difference(u, v, &format!("{path}.{k}")),
                (u, v) => Some(format!(
                    "{path}.{k}: ours {}, reference {}",
                    u.map_or("absent".into(), |u| u.to_string()),
                    v.map_or("absent".into(), |v| v.to_string())
                )),
            })
        }
        (Array(x), Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (u, v))| first_difference(u, v, &format!("{path}[{i}]"))),
        _ if a == b => None,
        _ => Some(format!("{path}: ours {a}, reference {b}")),
    }
}
