//! Helpers shared by the integration tests.

use std::path::{Path, PathBuf};

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
