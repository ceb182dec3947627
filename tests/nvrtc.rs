//! NVRTC compiles the CUDA emitted for every example to sm_90 (Hopper)
//! cubins, and the cubin cache hits, misses and mends itself as it should.
//! NVRTC needs no GPU: CI installs it from PyPI (.ci/run) and there these
//! tests must run (under CI=true they fail without it); elsewhere,
//! without NVRTC, they are reported ignored, with the reason.

mod common;

use common::Needs;
use msclc::runner::nvrtc;

fn main() {
    common::run(vec![
        common::test(
            "every_example_compiles_to_sm_90_with_nvrtc",
            Needs::Nvrtc,
            every_example_compiles_to_sm_90_with_nvrtc,
        ),
        common::test(
            "cubin_cache_hits_misses_and_mends",
            Needs::Nvrtc,
            cubin_cache_hits_misses_and_mends,
        ),
        common::test(
            "emit_cubin_builds_with_nvrtc_12_and_13_without_a_gpu",
            Needs::Nvrtc,
            emit_cubin_builds_with_nvrtc_12_and_13_without_a_gpu,
        ),
        common::test(
            "bad_sources_are_errors",
            Needs::Nvrtc,
            bad_sources_are_errors,
        ),
        common::test(
            "a_library_of_nvrtcs_name_that_will_not_do_is_named",
            Needs::Nothing,
            a_library_of_nvrtcs_name_that_will_not_do_is_named,
        ),
    ]);
}

/// A file of NVRTC's name that the loader finds first but that is not
/// NVRTC is said to be there and why it will not do, not taken for no
/// NVRTC at all. (Where a real NVRTC is found after it, in a toolkit or a
/// wheel, the cubin is built.)
fn a_library_of_nvrtcs_name_that_will_not_do_is_named() {
    let dir = common::scratch("not-nvrtc");
    for major in [12, 13] {
        std::fs::write(dir.join(format!("libnvrtc.so.{major}")), "not a library\n").unwrap();
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_msclc"))
        .args([
            "examples/simple_allgather.mscl",
            "--emit",
            "cubin",
            "--arch",
            "sm_90",
        ])
        .args(["--no-cache", "-o"])
        .arg(dir.join("k.cubin"))
        .env_remove("MSCLC_NVRTC")
        .env("LD_LIBRARY_PATH", &dir)
        .env("CUDA_HOME", dir.join("no-toolkit"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("msclc runs");
    let err = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.starts_with("error[E0806]: no NVRTC 12 or 13 that msclc can use: "),
            "{err}"
        );
        assert!(
            err.contains("cannot load NVRTC from libnvrtc.so.13"),
            "{err}"
        );
        assert!(err.contains("install the CUDA toolkit"), "{err}");
    }
}

fn is_cubin(bytes: &[u8]) -> bool {
    bytes.starts_with(b"\x7fELF")
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// The kernel's cubin, checked to be one and to hold the kernel.
fn kernel_cubin(compiled: Result<nvrtc::Compiled, String>) -> Result<Vec<u8>, String> {
    let cubin = compiled?.cubin;
    if !is_cubin(&cubin) {
        return Err("NVRTC's output is not a cubin (no ELF magic)".into());
    }
    // The plan's kernel, and the runner's input maker and check.
    for name in [msclc::back::cuda::KERNEL, "mscl_fill", "mscl_check"] {
        if !contains(&cubin, name.as_bytes()) {
            return Err(format!("no {name} in the cubin"));
        }
    }
    Ok(cubin)
}

fn every_example_compiles_to_sm_90_with_nvrtc() {
    let sources: Vec<(String, String)> = common::example_files()
        .into_iter()
        .filter_map(|path| {
            let plan = msclc::driver::compile(&path, &[]).result.ok()?;
            let source = msclc::back::cuda::generate(&plan).ok()?;
            Some((path.display().to_string(), source))
        })
        .collect();
    assert!(
        sources.len() >= 70,
        "only {} examples generate CUDA",
        sources.len()
    );
    // And a plan with no thread block, whose tables would be empty arrays
    // (NVRTC rejected them, found by running fuzzed programs on a GPU).
    let mut sources = sources;
    let no_blocks =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli/no_blocks.mscl");
    let plan = msclc::driver::compile(&no_blocks, &[])
        .result
        .expect("it compiles");
    sources.push((
        no_blocks.display().to_string(),
        msclc::back::cuda::generate(&plan).expect("it has CUDA"),
    ));
    // Each element type once on a small example; then every example.
    let small = &sources
        .iter()
        .find(|(p, _)| p.ends_with("allreduce_pkt.mscl"))
        .unwrap()
        .1;
    for dtype in [msclc::ir::Dtype::Float16, msclc::ir::Dtype::Bfloat16] {
        let define = msclc::back::cuda::dtype_define(dtype);
        if let Err(e) = kernel_cubin(nvrtc::compile(
            small,
            "sm_90",
            std::slice::from_ref(&define),
            None,
        )) {
            panic!("allreduce_pkt with {define}: {e}");
        }
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failures = std::sync::Mutex::new(Vec::new());
    let define = msclc::back::cuda::dtype_define(msclc::ir::Dtype::Float32);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((path, source)) = sources.get(i) else {
                    break;
                };
                let compiled = nvrtc::compile(source, "sm_90", std::slice::from_ref(&define), None);
                if let Err(e) = kernel_cubin(compiled) {
                    failures.lock().unwrap().push(format!("{path}: {e}"));
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    eprintln!("NVRTC compiled {} examples to sm_90", sources.len());
}

/// The cache entries in the folder `dir`.
fn cubins(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cubin"))
        .collect();
    files.sort();
    files
}

fn cubin_cache_hits_misses_and_mends() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/simple_allgather.mscl");
    let Ok(plan) = msclc::driver::compile(&path, &[]).result else {
        panic!("{} does not compile", path.display());
    };
    let source = msclc::back::cuda::generate(&plan).unwrap();
    let cache = common::scratch("nvrtc-cache");
    let f32 = [msclc::back::cuda::dtype_define(msclc::ir::Dtype::Float32)];
    let compile = |extra: &[String]| {
        let start = std::time::Instant::now();
        let compiled = nvrtc::compile(&source, "sm_90", extra, Some(&*cache)).unwrap();
        eprintln!(
            "{extra:?}: {} in {:?}",
            if compiled.from_cache { "hit" } else { "miss" },
            start.elapsed()
        );
        compiled
    };

    let first = compile(&f32);
    assert!(!first.from_cache, "an empty cache cannot hit");
    assert!(is_cubin(&first.cubin));
    let entries = cubins(&cache);
    assert_eq!(
        entries.len(),
        1,
        "one entry after one compilation: {entries:?}"
    );
    let entry = std::fs::read(&entries[0]).unwrap();
    assert!(
        entry.starts_with(&first.cubin) && entry.len() == first.cubin.len() + 32,
        "an entry is the cubin and its SHA-256"
    );

    let second = compile(&f32);
    assert!(second.from_cache, "the same compilation again must hit");
    assert_eq!(second.cubin, first.cubin);

    let f16 = [msclc::back::cuda::dtype_define(msclc::ir::Dtype::Float16)];
    let other = compile(&f16);
    assert!(!other.from_cache, "another define must miss");
    assert_eq!(cubins(&cache).len(), 2);

    // A corrupted entry is compiled again and replaced.
    std::fs::write(&entries[0], b"not a cubin at all").unwrap();
    let mended = compile(&f32);
    assert!(!mended.from_cache, "a corrupted entry must not be used");
    assert!(is_cubin(&mended.cubin));
    assert_eq!(std::fs::read(&entries[0]).unwrap(), entry);
    assert!(compile(&f32).from_cache);

    // So is an entry that still looks like a cubin but has a byte changed
    // in its code: loaded, it would run a damaged kernel.
    let mut damaged = entry.clone();
    let middle = first.cubin.len() / 2;
    damaged[middle] ^= 0x40;
    std::fs::write(&entries[0], &damaged).unwrap();
    let mended = compile(&f32);
    assert!(!mended.from_cache, "a damaged entry must not be used");
    assert_eq!(mended.cubin, first.cubin);
    assert_eq!(std::fs::read(&entries[0]).unwrap(), entry);

    // No temporary files are left behind.
    let all = std::fs::read_dir(&cache).unwrap().count();
    assert_eq!(all, 2, "only the two entries are left");
}

fn bad_sources_are_errors() {
    let e = nvrtc::compile("int x;\0", "sm_90", &[], None)
        .err()
        .expect("a NUL byte must be rejected");
    assert!(e.contains("NUL"), "{e}");
    let e = nvrtc::compile("this is not C++", "sm_90", &[], None)
        .err()
        .expect("NVRTC must reject it");
    assert!(
        e.starts_with("NVRTC rejected the generated source:\n") && e.contains("error"),
        "{e}"
    );
}

/// `msclc FILE --emit cubin --arch sm_90 -o kernel.cubin` writes the cubin
/// `msclc run` would load, with no GPU, with each NVRTC given: the one in
/// use here and, from `MSCLC_NVRTC_13`, an NVRTC 13 (CI installs both
/// wheels; elsewhere a missing 13 is said and skipped).
fn emit_cubin_builds_with_nvrtc_12_and_13_without_a_gpu() {
    let mut libraries = vec![nvrtc::library().expect("NVRTC is loaded")];
    match std::env::var("MSCLC_NVRTC_13") {
        Ok(path) => libraries.push(path.into()),
        Err(_) if std::env::var_os("CI").is_some() => {
            panic!("CI must test NVRTC 13: .ci/run sets MSCLC_NVRTC_13")
        }
        Err(_) => println!("    (no MSCLC_NVRTC_13: NVRTC 13 not tried)"),
    }
    let dir = common::scratch("cubin");
    for (k, library) in libraries.iter().enumerate() {
        let out = dir.join(format!("kernel{k}.cubin"));
        let run = std::process::Command::new(env!("CARGO_BIN_EXE_msclc"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("MSCLC_NVRTC", library)
            .args([
                "examples/mscclpp/single_node/allreduce_pkt.mscl",
                "--emit",
                "cubin",
                "--arch",
                "sm_90",
                "--dtype",
                "float16",
                "--no-cache",
                "-o",
            ])
            .arg(&out)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&run.stderr);
        assert!(run.status.success(), "{}: {err}", library.display());
        let cubin = std::fs::read(&out).unwrap();
        assert!(is_cubin(&cubin), "{}: not a cubin", library.display());
        assert!(
            contains(&cubin, msclc::back::cuda::KERNEL.as_bytes()),
            "{}: no kernel",
            library.display()
        );
    }
    // Without -o a cubin is refused (it is binary), as is --arch without it.
    let refused = std::process::Command::new(env!("CARGO_BIN_EXE_msclc"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "examples/simple_allgather.mscl",
            "--emit",
            "cubin",
            "--arch",
            "sm_90",
        ])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr)
        .contains("a cubin is binary: name the file to write with -o"));
    // A cubin of the quick start for `arch`, with the NVRTC at `library`
    // (the one found, where none), which must fail: what msclc says.
    let refused = |library: Option<&std::path::Path>, arch: &str, out: &str| {
        let mut msclc = std::process::Command::new(env!("CARGO_BIN_EXE_msclc"));
        if let Some(library) = library {
            msclc.env("MSCLC_NVRTC", library);
        }
        let run = msclc
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(["examples/simple_allgather.mscl", "--emit", "cubin"])
            .args(["--arch", arch, "--no-cache", "-o"])
            .arg(dir.join(out))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&run.stderr).to_string();
        assert_eq!(run.status.code(), Some(2), "{err}");
        err
    };
    // An architecture past what this NVRTC knows is said so, not blamed
    // on the generated source.
    let err = refused(None, "sm_990", "unknown.cubin");
    assert!(
        err.contains("does not know the architecture sm_990"),
        "{err}"
    );
    // An NVRTC without its builtins library beside it: said so, not
    // blamed on the generated source either.
    let alone = dir.join("alone");
    std::fs::create_dir_all(&alone).unwrap();
    let library = &libraries[0];
    let copy = alone.join(library.file_name().unwrap());
    std::fs::copy(library, &copy).unwrap();
    let err = refused(Some(&copy), "sm_90", "alone.cubin");
    assert!(
        err.contains("NVRTC cannot find its builtins library") && !err.contains("rejected"),
        "{err}"
    );
}
