//! What `msclc tune` writes over: its own earlier results, never a
//! user's file.

use super::*;

/// Tune replaces its own earlier results in `-o DIR`, never a user's file
/// of a name it writes: that is refused before anything is written.
#[test]
fn tune_replaces_its_own_results_but_no_users_file() {
    let dir = scratch("strangers");
    let args = [
        "examples/mscclpp/single_node/allreduce.mscl",
        "--timing",
        "h100-nvlink",
        "--size",
        "1M:2M",
        "--vary",
        "num_threads_per_block=512,1024",
    ];
    tune(&args, &dir);
    let (_, index) = tune(&args, &dir);
    let plan_file = index["plans"][0]["file"].as_str().unwrap().to_string();
    for (file, mine) in [
        ("index.json", "{\"mine\": 1}\n"),
        ("busbw.svg", "<svg/>\n"),
        (plan_file.as_str(), "{\"collective\": \"mine\"}\n"),
    ] {
        let path = dir.join(file);
        let before = std::fs::read(&path).unwrap();
        std::fs::write(&path, mine).unwrap();
        let out = msclc(&[&["tune"], &args[..], &["-o", dir.to_str().unwrap()]].concat());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.starts_with("error[E0809]: "), "{err}");
        assert!(
            err.contains("holds files that `msclc tune` did not write"),
            "{err}"
        );
        assert!(err.contains(&format!("/{file}\n")), "{err}");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            mine,
            "{file} replaced"
        );
        std::fs::write(&path, before).unwrap();
    }
    // A plan of tune's that the user has since replaced with a plan of
    // their own is theirs: its bytes are not those the index vouches for.
    let path = dir.join(&plan_file);
    let before = std::fs::read(&path).unwrap();
    let mine = msclc(&[args[0], "-D", "name=mine", "-o", path.to_str().unwrap()]);
    assert!(mine.status.success());
    let theirs = std::fs::read(&path).unwrap();
    let out = msclc(&[&["tune"], &args[..], &["-o", dir.to_str().unwrap()]].concat());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.code() == Some(2) && err.starts_with("error[E0809]: "),
        "{err}"
    );
    assert_eq!(
        std::fs::read(&path).unwrap(),
        theirs,
        "the user's plan replaced"
    );
    std::fs::write(&path, before).unwrap();
    // A plan of the user's, of the name tune gives its plan, where no
    // index of tune's lists it, is the user's too.
    let fresh = scratch("strangers-plan");
    let users = fresh.join(&plan_file);
    let compiled = msclc(&[args[0], "-o", users.to_str().unwrap()]);
    assert!(compiled.status.success());
    let before = std::fs::read(&users).unwrap();
    let out = msclc(&[&["tune"], &args[..], &["-o", fresh.to_str().unwrap()]].concat());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.code() == Some(2) && err.starts_with("error[E0809]: "),
        "{err}"
    );
    assert_eq!(std::fs::read(&users).unwrap(), before);
    // Tuning again, for other sizes, leaves none of the earlier plans.
    let other = [&args[..4], &["1M:1M"], &args[5..]].concat();
    let (_, index) = tune(&other, &dir);
    let mut plans: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|f| f != "index.json" && f.ends_with(".json"))
        .collect();
    plans.sort();
    let mut listed: Vec<&str> = index["plans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["file"].as_str().unwrap())
        .collect();
    listed.sort();
    assert_eq!(
        plans, listed,
        "the folder holds the plans of the last index only"
    );
    assert!(!dir.join(&plan_file).exists() || listed.contains(&plan_file.as_str()));
    // A link to tune's own index elsewhere is not written through.
    let elsewhere = scratch("strangers-elsewhere");
    std::fs::rename(dir.join("index.json"), elsewhere.join("index.json")).unwrap();
    std::os::unix::fs::symlink(elsewhere.join("index.json"), dir.join("index.json")).unwrap();
    let before = std::fs::read(elsewhere.join("index.json")).unwrap();
    let out = msclc(&[&["tune"], &args[..], &["-o", dir.to_str().unwrap()]].concat());
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(std::fs::read(elsewhere.join("index.json")).unwrap(), before);
}

/// An earlier plan of tune's that the user edited, or made read-only,
/// since is theirs: tuning again for other sizes leaves it where it is
/// (and lists it no more), while an untouched one is removed.
#[test]
#[cfg(unix)]
fn an_earlier_plan_edited_or_kept_read_only_is_left() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch("edited");
    let args = |size: &'static str| {
        [
            "examples/mscclpp/single_node/allreduce.mscl",
            "--timing",
            "h100-nvlink",
            "--size",
            size,
            "--vary",
            "num_threads_per_block=512,1024",
        ]
    };
    let plans_of = |index: &Value| -> Vec<String> {
        let plans = index["plans"].as_array().unwrap().iter();
        plans
            .map(|p| p["file"].as_str().unwrap().to_string())
            .collect()
    };
    for touch in ["edit", "read-only", "none"] {
        let _ = std::fs::remove_dir_all(&dir);
        let (_, index) = tune(&args("1M:2M"), &dir);
        let earlier = dir.join(&plans_of(&index)[0]);
        match touch {
            "edit" => {
                let text = std::fs::read_to_string(&earlier).unwrap();
                std::fs::write(
                    &earlier,
                    text.replacen("\"allreduce\"", "\"tuned_by_hand\"", 1),
                )
                .unwrap();
            }
            "read-only" => {
                std::fs::set_permissions(&earlier, std::fs::Permissions::from_mode(0o444)).unwrap()
            }
            _ => {}
        }
        let kept = std::fs::read(&earlier).unwrap();
        let (_, index) = tune(&args("4M:4M"), &dir);
        assert!(!plans_of(&index)
            .contains(&earlier.file_name().unwrap().to_string_lossy().into_owned()));
        if touch == "none" {
            assert!(!earlier.exists(), "tune's own earlier plan is removed");
        } else {
            assert_eq!(
                std::fs::read(&earlier).unwrap(),
                kept,
                "{touch}: the user's plan removed"
            );
        }
    }
}

/// A plan's name of any length makes a file name that can be written: cut
/// to its first 100 characters (a file name holds 255 bytes), with `_`
/// for what a file name should not hold.
#[test]
fn a_long_or_odd_plan_name_makes_a_file_it_can_write() {
    let dir = scratch("long_name");
    let name = format!("name=a/b {}", "x".repeat(300));
    let (_, index) = tune(
        &[
            "examples/mscclpp/single_node/allreduce.mscl",
            "--timing",
            "h100-nvlink",
            "--size",
            "1M:1M",
            "--vary",
            "num_threads_per_block=512,1024",
            "-D",
            &name,
        ],
        &dir,
    );
    let file = index["plans"][0]["file"].as_str().unwrap();
    assert_eq!(file, format!("a_b_{}_1M_1M.json", "x".repeat(96)));
    assert!(dir.join(file).is_file());
}
