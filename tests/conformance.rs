//! Every port of an MSCCL++ program listed in ../shared/conformance must
//! compile to a plan equal, as a JSON value, to the reference compiler's.
//! Cases whose reference compiler rejects the program must be rejected too.

mod common;

use common::Needs;
use msclc::driver;
use serde_json::Value;
use std::path::Path;

fn main() {
    common::run(vec![common::test(
        "ports_match_reference_plans",
        Needs::Conformance,
        ports_match_reference_plans,
    )]);
}

fn ports_match_reference_plans() {
    let dir = common::shared_dir().join("conformance");
    let manifest = common::conformance_manifest();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/mscclpp");
    let (mut checked, mut failures, mut missing) = (0, Vec::new(), Vec::new());
    for case in &manifest {
        let name = case["case"].as_str().unwrap_or("?");
        let port = root.join(case["port"].as_str().unwrap_or(""));
        if !port.exists() {
            missing.push(name.to_string());
            continue;
        }
        checked += 1;
        let c = driver::compile(&port, &common::manifest_params(case));
        match (&c.result, case.get("error")) {
            (Err(d), Some(_)) if d[0].message.contains("signal/wait mismatch") => {}
            (Ok(_), Some(_)) => failures.push(format!(
                "{name}: compiled, but the reference compiler rejects it"
            )),
            (Err(_), Some(_)) => failures.push(format!("{name}: rejected for another reason")),
            (Err(d), None) => {
                let text = c.sources.render(d);
                failures.push(format!("{name}: does not compile:\n{text}"));
            }
            (Ok(plan), None) => {
                let want: Value = serde_json::from_str(
                    &std::fs::read_to_string(dir.join(case["plan"].as_str().unwrap_or("")))
                        .expect("plan file"),
                )
                .expect("plan is JSON");
                if msclc::back::json::plan_to_json(plan) != want {
                    failures.push(format!("{name}: plan differs from the reference"));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} ports fail:\n{}",
        failures.len(),
        failures.join("\n")
    );
    if !missing.is_empty() {
        eprintln!("not ported yet: {}", missing.join(", "));
    }
    // Every program of the manifest is ported.
    let required = manifest.len();
    assert!(
        checked >= required,
        "only {checked} ports present, {required} required; missing: {}",
        missing.join(", ")
    );
}
