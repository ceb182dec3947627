//! Every program under examples/ compiles (the rejected conformance case aside).

use msclc::driver;
use std::path::{Path, PathBuf};

fn mscl_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("examples dir").flatten() {
        let p = entry.path();
        if p.is_dir() {
            mscl_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "mscl") {
            out.push(p);
        }
    }
}

#[test]
fn every_example_compiles() {
    let mut files = Vec::new();
    mscl_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("examples"),
        &mut files,
    );
    assert!(files.len() >= 39, "found only {} examples", files.len());
    for f in files {
        let expect_failure = f.ends_with("put/put_with_signal_fuse_test.mscl");
        let c = driver::compile(&f, &[]);
        assert_eq!(c.result.is_err(), expect_failure, "{}", f.display());
    }
}
