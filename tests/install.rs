//! `msclc install`: the runtime's default plans, written where it loads
//! them, equal to what `python3 -m mscclpp --install` writes, touching
//! nothing else a user has there.

use std::path::Path;
use std::process::Command;

mod common;

use common::Needs;

fn main() {
    common::run(vec![
        common::test(
            "install_writes_the_four_default_plans_into_default",
            Needs::Nothing,
            install_writes_the_four_default_plans_into_default,
        ),
        common::test(
            "files_that_are_not_plans_are_never_removed_without_force",
            Needs::Nothing,
            files_that_are_not_plans_are_never_removed_without_force,
        ),
        #[cfg(unix)]
        common::test(
            "a_linked_default_folder_stays_a_link",
            Needs::Nothing,
            a_linked_default_folder_stays_a_link,
        ),
        common::test(
            "a_tuned_set_installs_in_place_of_the_plans_there",
            Needs::Nothing,
            a_tuned_set_installs_in_place_of_the_plans_there,
        ),
        common::test(
            "an_empty_home_is_no_home",
            Needs::Nothing,
            an_empty_home_is_no_home,
        ),
        common::test(
            "odd_cache_folders_are_said_as_they_are",
            Needs::Nothing,
            odd_cache_folders_are_said_as_they_are,
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

fn temp(what: &str) -> common::Scratch {
    common::scratch(&format!("install-{what}"))
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

/// `--cache-dir` is the MSCCL++ cache folder: the plans go to its
/// `default/`, replacing the plans there; nothing else in it is touched.
fn install_writes_the_four_default_plans_into_default() {
    let cache = temp("ours");
    let dir = cache.join("default");
    std::fs::create_dir_all(&dir).unwrap();
    let stale = r#"{"name": "stale", "collective": "allreduce", "gpus": []}"#;
    std::fs::write(dir.join("stale.json"), stale).unwrap();
    let other = cache.join("mine/plan.json");
    std::fs::create_dir_all(other.parent().unwrap()).unwrap();
    std::fs::write(&other, "a plan of my own").unwrap();
    // What an install killed while it wrote left: its own to remove.
    let mut child = Command::new("true").spawn().unwrap();
    let ended = child.id();
    child.wait().unwrap();
    let left = dir.join(format!(".stale.json.msclc-{ended}-0.tmp"));
    std::fs::write(&left, "{\"name\": ").unwrap();
    let out = install(&cache);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.starts_with(&format!("wrote, in {}:", dir.display())),
        "{stdout}"
    );
    assert!(
        !dir.join("stale.json").exists(),
        "the old plans are removed"
    );
    let removed = stdout
        .split_once("and removed what was there before:\n")
        .map_or("", |(_, r)| r);
    for gone in [&left, &dir.join("stale.json")] {
        assert!(
            removed.contains(&format!("  {}\n", gone.display())),
            "{stdout}"
        );
    }
    assert_eq!(std::fs::read_to_string(&other).unwrap(), "a plan of my own");
    assert!(!left.exists(), "{stdout}");
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
}

/// A `default/` holding anything but plans (a thesis, a folder of notes)
/// is left as it is, with the list and exit code 2, unless `--force`.
fn files_that_are_not_plans_are_never_removed_without_force() {
    let cache = temp("mine");
    let dir = cache.join("default");
    std::fs::create_dir_all(dir.join("notes")).unwrap();
    std::fs::write(dir.join("thesis.tex"), "chapter 1").unwrap();
    std::fs::write(dir.join("notes/day1.txt"), "ideas").unwrap();
    std::fs::write(dir.join("old.json"), "{}").unwrap();
    // A .json file that is no plan is the user's too.
    std::fs::write(dir.join("config.json"), r#"{"a": 1}"#).unwrap();
    let out = install(&cache);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("error[E0809]"), "{err}");
    assert!(
        err.contains(&dir.join("thesis.tex").display().to_string()),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "{}/ (a folder: --force removes everything in it)",
            dir.join("notes").display()
        )),
        "{err}"
    );
    assert!(
        err.contains(&dir.join("config.json").display().to_string()),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("thesis.tex")).unwrap(),
        "chapter 1"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("notes/day1.txt")).unwrap(),
        "ideas"
    );
    assert!(dir.join("old.json").exists(), "nothing is touched");
    assert!(dir.join("config.json").exists(), "nothing is touched");
    assert!(!dir.join(format!("{}.json", PLANS[0])).exists());
    let forced = Command::new(env!("CARGO_BIN_EXE_msclc"))
        .args(["install", "--force", "--cache-dir"])
        .arg(&cache)
        .output()
        .expect("msclc runs");
    assert!(forced.status.success());
    assert!(!dir.join("thesis.tex").exists() && !dir.join("notes").exists());
    assert!(dir.join(format!("{}.json", PLANS[0])).exists());
}

/// A `default` that links to a folder elsewhere stays a link; the plans go
/// where it points. That folder is not the runtime's alone: a plan there
/// (one tuned by hand, say) is removed only with `--force`, and the
/// refusal names the folder. A `default` that is a file, or a link to
/// nothing, is said to be one.
#[cfg(unix)]
fn a_linked_default_folder_stays_a_link() {
    let cache = temp("link");
    let elsewhere = temp("link-target");
    std::os::unix::fs::symlink(&elsewhere, cache.join("default")).unwrap();
    assert!(install(&cache).status.success());
    let link = std::fs::symlink_metadata(cache.join("default")).unwrap();
    assert!(link.file_type().is_symlink());
    assert!(elsewhere.join(format!("{}.json", PLANS[0])).exists());
    let mine = elsewhere.join("tuned_by_hand.json");
    std::fs::copy(elsewhere.join(format!("{}.json", PLANS[0])), &mine).unwrap();
    let out = install(&cache);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with(&format!(
            "error[E0809]: {} is a link to {}",
            cache.join("default").display(),
            elsewhere.display()
        )),
        "{err}"
    );
    assert!(err.contains("tuned_by_hand.json"), "{err}");
    assert!(mine.exists(), "nothing is removed without --force");

    std::fs::remove_file(cache.join("default")).unwrap();
    std::os::unix::fs::symlink(cache.join("nowhere"), cache.join("default")).unwrap();
    let err = String::from_utf8_lossy(&install(&cache).stderr).to_string();
    assert!(err.contains("which does not exist"), "{err}");
    std::fs::remove_file(cache.join("default")).unwrap();
    std::fs::write(cache.join("default"), "notes").unwrap();
    let err = String::from_utf8_lossy(&install(&cache).stderr).to_string();
    assert!(err.contains("is a file, not a folder"), "{err}");
    assert_eq!(
        std::fs::read_to_string(cache.join("default")).unwrap(),
        "notes"
    );
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
            read(&ours.join("default").join(&file)) == read(&theirs.join("default").join(&file)),
            "{name}: our plan differs from the reference's"
        );
    }
}

fn install_from(cache: &Path, tuned: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_msclc"))
        .args(["install", "--cache-dir"])
        .arg(cache)
        .arg("--from")
        .arg(tuned)
        .output()
        .expect("msclc runs")
}

/// `msclc install --from DIR`: the plans `msclc tune -o DIR` wrote (those
/// its index lists, byte for byte) replace the default plans; an index
/// that names a file outside its folder is refused.
fn a_tuned_set_installs_in_place_of_the_plans_there() {
    let cache = temp("from");
    let tuned = cache.join("tuned");
    let out = Command::new(env!("CARGO_BIN_EXE_msclc"))
        .args([
            "tune",
            "examples/mscclpp/default_algos/allreduce_multi_nodes.mscl",
            "--timing",
            "h100-ib",
            "--size",
            "1K:2M",
            "--quiet",
            "-o",
        ])
        .arg(&tuned)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(install(&cache).status.success());
    let out = install_from(&cache, &tuned);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let index = read(&tuned.join("index.json"));
    let mut listed: Vec<String> = index["plans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["file"].as_str().unwrap().to_string())
        .collect();
    listed.sort();
    let mut there: Vec<String> = std::fs::read_dir(cache.join("default"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    there.sort();
    assert_eq!(there, listed, "the tuned set, and the default plans gone");
    for file in &listed {
        assert_eq!(
            std::fs::read(cache.join("default").join(file)).unwrap(),
            std::fs::read(tuned.join(file)).unwrap()
        );
    }
    // A listed plan replaced since tune wrote it (its sha256 is not the
    // index's), and, where the index lists no sha256, one `msclc check`
    // refuses (a wait left out: signals unpaired): refused, the set
    // installed before left in place.
    let original_index = std::fs::read(tuned.join("index.json")).unwrap();
    let installed = std::fs::read(cache.join("default").join(&listed[0])).unwrap();
    let compiled = Command::new(env!("CARGO_BIN_EXE_msclc"))
        .args(["examples/simple_allgather.mscl", "-o", "-"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let mut unpaired: serde_json::Value = serde_json::from_slice(&compiled.stdout).unwrap();
    let ops = unpaired["gpus"][0]["threadblocks"][0]["ops"]
        .as_array_mut()
        .unwrap();
    let wait = ops.iter().position(|op| op["name"] == "wait").unwrap();
    ops.remove(wait);
    std::fs::write(tuned.join(&listed[0]), unpaired.to_string()).unwrap();
    let out = install_from(&cache, &tuned);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("is not the plan `msclc tune` wrote there"),
        "{err}"
    );
    let mut unfingerprinted = read(&tuned.join("index.json"));
    for plan in unfingerprinted["plans"].as_array_mut().unwrap() {
        plan.as_object_mut().unwrap().remove("sha256");
    }
    std::fs::write(tuned.join("index.json"), unfingerprinted.to_string()).unwrap();
    let out = install_from(&cache, &tuned);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("error[E0308]"), "{err}");
    assert_eq!(
        std::fs::read(cache.join("default").join(&listed[0])).unwrap(),
        installed,
        "the set installed before is left"
    );
    // A plan that is not text at all: said as unreadable, not as JSON.
    std::fs::write(tuned.join(&listed[0]), b"{\"name\": \"\xff\"}").unwrap();
    let out = install_from(&cache, &tuned);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("it is not UTF-8: byte 10"), "{err}");
    std::fs::write(tuned.join("index.json"), original_index).unwrap();
    std::fs::write(tuned.join(&listed[0]), &installed).unwrap();
    // An index naming a file outside its folder.
    std::fs::write(
        tuned.join("index.json"),
        r#"{"plans": [{"file": "../escape.json"}]}"#,
    )
    .unwrap();
    let out = install_from(&cache, &tuned);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not the name of a .json plan in"));
    // A program listed (it compiles, but is no plan), an entry with no
    // file, a file listed twice, an index that is no file: each refused,
    // nothing installed.
    let first = listed[0].clone();
    std::fs::copy("examples/simple_allgather.mscl", tuned.join("prog.mscl")).unwrap();
    for (index, says) in [
        (
            r#"{"plans": [{"file": "prog.mscl"}]}"#.to_string(),
            "is not the name of a .json plan",
        ),
        (
            format!(r#"{{"plans": [{{"file": "{first}"}}, {{"params": {{}}}}]}}"#),
            "plans[1] has no `file`",
        ),
        (
            format!(r#"{{"plans": [{{"file": "{first}"}}, {{"file": "{first}"}}]}}"#),
            "is listed twice",
        ),
    ] {
        std::fs::write(tuned.join("index.json"), &index).unwrap();
        let out = install_from(&cache, &tuned);
        assert_eq!(out.status.code(), Some(2), "{index}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{index}: {err}");
    }
    std::fs::remove_file(tuned.join("index.json")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", tuned.join("index.json")).unwrap();
    let out = install_from(&cache, &tuned);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("it is not a file"));
    assert!(!cache.join("default/prog.mscl").exists());
    // A set inside the folder install writes would be removed by its own
    // install: refused, with --force too, and left as it was.
    let inside = cache.join("default");
    for force in [&[][..], &["--force"]] {
        let out = Command::new(env!("CARGO_BIN_EXE_msclc"))
            .args(["install", "--cache-dir"])
            .arg(&cache)
            .arg("--from")
            .arg(&inside)
            .args(force)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains("that is in the folder install writes"),
            "{err}"
        );
    }
    assert_eq!(std::fs::read_dir(&inside).unwrap().count(), listed.len());
}

/// An empty HOME names no home: without MSCCLPP_CACHE_DIR or
/// --cache-dir, install says where it found no cache folder, and writes
/// nothing in the current folder.
fn an_empty_home_is_no_home() {
    let dir = temp("emptyhome");
    let out = Command::new(env!("CARGO_BIN_EXE_msclc"))
        .arg("install")
        .env("HOME", "")
        .env("MSCCLPP_CACHE_DIR", "")
        .current_dir(&dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("neither MSCCLPP_CACHE_DIR nor HOME is set (or they are empty)"),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
}

/// A cache folder's name with a control character is said escaped where
/// install lists what it wrote, as in its messages; a cache folder that is
/// a file says to give a folder.
fn odd_cache_folders_are_said_as_they_are() {
    let dir = temp("odd");
    let out = install(&dir.join("esc\u{1b}[31mred"));
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(said.contains("esc\\u{1b}[31mred/default/"), "{said}");
    assert!(!said.contains('\u{1b}'), "{said}");
    let file = dir.join("a_file");
    std::fs::write(&file, "").unwrap();
    let out = install(&file);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("part of that path is a file, not a folder: give --cache-dir a folder"),
        "{err}"
    );
}
