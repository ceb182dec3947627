//! NVRTC compiles the CUDA emitted for every example to sm_90 (Hopper)
//! code. NVRTC needs no GPU: CI installs it from PyPI (.ci/run) and there
//! this test must run; elsewhere, without NVRTC, it says so and passes.

mod common;

#[test]
fn every_example_compiles_to_sm_90_with_nvrtc() {
    if let Err(why) = msclc::runner::nvrtc::load() {
        let in_ci = std::env::var("CI").is_ok_and(|v| v == "true");
        assert!(!in_ci, "CI must have NVRTC (.ci/run installs it): {why}");
        eprintln!("skipped: {why}");
        return;
    }
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
    // Each element type once on a small example; then every example.
    let small = &sources
        .iter()
        .find(|(p, _)| p.ends_with("allreduce_pkt.mscl"))
        .unwrap()
        .1;
    for dtype in [msclc::ir::Dtype::Float16, msclc::ir::Dtype::Bfloat16] {
        let define = msclc::back::cuda::dtype_define(dtype);
        if let Err(e) = msclc::runner::nvrtc::compile(small, "sm_90", &define) {
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
                match msclc::runner::nvrtc::compile(source, "sm_90", &define) {
                    Ok(ptx) if ptx.contains(".entry msclc_kernel") => {}
                    Ok(_) => failures
                        .lock()
                        .unwrap()
                        .push(format!("{path}: no kernel in the PTX")),
                    Err(e) => failures.lock().unwrap().push(format!("{path}: {e}")),
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    eprintln!("NVRTC compiled {} examples to sm_90", sources.len());
}
