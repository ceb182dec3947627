//! `msclc install`: the runtime's default plans, written where it loads
//! them, equal to what `python3 -m mscclpp --install` writes.

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

use common::Needs;

fn main() {
    common::run(vec![
        common::test(
            "install_clears_the_folder_and_writes_the_four_default_plans",
            Needs::Nothing,
            install_clears_the_folder_and_writes_the_four_default_plans,
        ),
        common::test(
            "installed_plans_equal_the_reference_installs",
            Needs::Reference,
            installed_plans_equal_the_reference_installs,
        ),
    ]);
}

const PLANS: [&str; 4] = [
    "allreduce_2nodes_1K_64K",
    "allreduce_2nodes_128K_2M",
    "allreduce_4nodes_1K_64K",
    "allreduce_4nodes_128K_2M",
];

fn temp(what: &str) -> PathBuf {
    std::env::temp_dir().join(format!("msclc-install-{what}-{}", std::process::id()))
}

fn install(dir: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_msclc"))
        .args(["install", "--cache-dir"])
        .arg(dir)
        .output()
        .expect("msclc runs")
}

fn read(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("the plan file")).expect("JSON")
}

fn install_clears_the_folder_and_writes_the_four_default_plans() {
    let dir = temp("ours").join("default");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("stale.json"), "{}").unwrap();
    let out = install(&dir);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{stdout}");
    assert!(
        !dir.join("stale.json").exists(),
        "the folder is cleared first"
    );
    assert!(stdout.starts_with(&format!("cleared {} and wrote:", dir.display())));
    for name in PLANS {
        let file = dir.join(format!("{name}.json"));
        assert!(stdout.contains(&file.display().to_string()), "{stdout}");
        let plan = read(&file);
        assert_eq!(plan["name"], name);
        assert_eq!(plan["collective"], "allreduce");
        assert_eq!(plan["protocol"], "LL");
        let ranks = if name.contains("4nodes") { 32 } else { 16 };
        assert_eq!(plan["gpus"].as_array().map(Vec::len), Some(ranks));
    }
    let _ = std::fs::remove_dir_all(dir.parent().unwrap());
}

/// Against the reference itself, when ../shared and Python with
/// `sortedcontainers` are here (CI installs it: there the test must run).
fn installed_plans_equal_the_reference_installs() {
    let (_, pythonpath) = common::reference_setup().expect("the reference");
    let theirs = temp("reference");
    let ran = Command::new("python3")
        .args(["-m", "mscclpp", "--install"])
        .env("PYTHONPATH", &pythonpath)
        .env("MSCCLPP_CACHE_DIR", &theirs)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ran, "python3 -m mscclpp --install failed");
    let ours = temp("ours-vs-reference");
    assert!(install(&ours).status.success());
    for name in PLANS {
        let file = format!("{name}.json");
        assert!(
            read(&ours.join(&file)) == read(&theirs.join("default").join(&file)),
            "{name}: our plan differs from the reference's"
        );
    }
    let _ = std::fs::remove_dir_all(&ours);
    let _ = std::fs::remove_dir_all(&theirs);
}
