//! `msclc install`: the default plans the MSCCL++ runtime loads, written
//! into its cache as `python3 -m mscclpp --install` does; or, `--from`, a
//! plan set `msclc tune` wrote.

use super::outcome::fail;
use clap::Args;
use msclc::diag::{Code, Diagnostic};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Debug, Args)]
pub(crate) struct InstallArgs {
    /// The MSCCL++ cache folder, as MSCCLPP_CACHE_DIR names it (default:
    /// $MSCCLPP_CACHE_DIR, else ~/.cache/mscclpp); the plans go to its
    /// `default/`, where the runtime loads them, replacing the plans there.
    #[arg(long, value_name = "DIR")]
    pub(crate) cache_dir: Option<PathBuf>,
    /// Clear `default/` even where it holds files that are not plans.
    #[arg(long)]
    pub(crate) force: bool,
    /// Install the plans of a folder `msclc tune -o DIR` wrote (those its
    /// index.json lists, each as tune wrote it and passing `msclc check`)
    /// instead of the default ones.
    #[arg(long, value_name = "DIR")]
    pub(crate) from: Option<PathBuf>,
}

/// `msclc install`: the runtime's default plans.
pub(crate) fn exec(args: &InstallArgs) -> ExitCode {
    use msclc::install::Refused;
    let Some(dir) = args
        .cache_dir
        .clone()
        .or_else(msclc::install::default_cache_dir)
    else {
        return fail(Diagnostic::plain(
            Code::Options,
            "no --cache-dir given, and neither MSCCLPP_CACHE_DIR nor HOME is set (or they are empty): name the MSCCL++ cache folder with --cache-dir",
        ));
    };
    // The folder written is emptied of all else: a set read from inside it
    // would be removed by its own install.
    if let Some(from) = &args.from {
        let inside = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
            (Ok(a), Ok(b)) => a.starts_with(b),
            _ => false,
        };
        let target = dir.join("default");
        if inside(from, &target) {
            return fail(Diagnostic::plain(
                Code::Options,
                format!(
                    "--from {}: that is in the folder install writes, {}, whose other files it removes: copy the tuned set elsewhere first",
                    from.display(),
                    target.display()
                ),
            ));
        }
    }
    let installed = match &args.from {
        None => msclc::install::install(&dir, args.force),
        Some(from) => match tuned_plans(from) {
            Ok(plans) => msclc::install::install_plans(&dir, &plans, args.force),
            Err(code) => return code,
        },
    };
    match installed {
        Ok(done) => {
            // The paths are the user's: escaped, as in messages, and whole.
            let shown = |p: &Path| msclc::diag::escaped_whole(&p.display().to_string());
            sayln!("wrote, in {}:", shown(&done.dir));
            for f in &done.written {
                sayln!("  {}", shown(f));
            }
            if !done.removed.is_empty() {
                sayln!("and removed what was there before:");
                for f in &done.removed {
                    sayln!("  {}", shown(f));
                }
            }
            ExitCode::SUCCESS
        }
        Err(Refused::NotOurs { dir, entries, link }) => {
            // The names are the user's: escaped, as all input in messages;
            // a folder is said to be one, with all it holds.
            let list: Vec<String> = entries
                .iter()
                .map(|e| {
                    let name = msclc::diag::escaped(&e.display().to_string());
                    if e.is_dir() && !e.is_symlink() {
                        format!("  {name}/ (a folder: --force removes everything in it)")
                    } else {
                        format!("  {name}")
                    }
                })
                .collect();
            let what = match &link {
                Some(target) => format!(
                    "{} is a link to {}, a folder not the runtime's alone; `msclc install` would remove what it holds:",
                    dir.display(),
                    msclc::diag::escaped(&target.display().to_string())
                ),
                None => format!(
                    "{} holds files that are not plans, which `msclc install` would remove:",
                    dir.display()
                ),
            };
            fail(Diagnostic::plain(
                Code::NotOurs,
                format!(
                    "{what}\n{}\nmove them elsewhere, or give --force to remove them",
                    list.join("\n")
                ),
            ))
        }
        Err(Refused::Failed(why)) => fail(Diagnostic::plain(Code::Unreadable, why)),
    }
}

/// `path` opened, where it is a file (through links): not a device or a
/// pipe that never ends.
fn regular_file(path: &Path) -> std::io::Result<std::fs::File> {
    let file = std::fs::File::open(path)?;
    if file.metadata()?.is_file() {
        Ok(file)
    } else {
        Err(std::io::Error::other("it is not a file"))
    }
}

/// The plans of a tuned set: each file `from/index.json` lists, whole,
/// with the bytes tune wrote (where its entry keeps their `sha256`), and a
/// plan `msclc check` passes (its errors printed, and the exit code).
fn tuned_plans(from: &Path) -> Result<Vec<(String, Vec<u8>)>, ExitCode> {
    let index_path = from.join("index.json");
    let unusable = |why: String| fail(Diagnostic::plain(Code::Unreadable, why));
    // An index is small: a file of more is none (and `/dev/zero` ends).
    const MOST_INDEX_BYTES: u64 = 64 << 20;
    let text = regular_file(&index_path)
        .and_then(|file| msclc::files::read_text(file, Some(MOST_INDEX_BYTES)))
        .map_err(|e| {
            unusable(format!(
                "cannot read {}: {e} (--from takes the folder `msclc tune -o DIR` wrote)",
                index_path.display()
            ))
        })?;
    let index: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| unusable(format!("{} is not JSON: {e}", index_path.display())))?;
    let listed = index["plans"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    if listed.is_empty() {
        return Err(unusable(format!(
            "{} lists no plans (`plans`, each with its `file`)",
            index_path.display()
        )));
    }
    let mut plans: Vec<(String, Vec<u8>)> = Vec::new();
    for (k, entry) in listed.iter().enumerate() {
        // Each entry a plan file of its own: one left out or listed twice
        // would leave part of the tuned sizes without a plan.
        let Some(file) = entry["file"].as_str() else {
            return Err(unusable(format!(
                "{}: plans[{k}] has no `file` naming its plan",
                index_path.display()
            )));
        };
        // A name, not a path: the index cannot reach out of its folder.
        if Path::new(file).file_name().and_then(|f| f.to_str()) != Some(file)
            || !file.ends_with(".json")
        {
            return Err(unusable(format!(
                "{}: `{}` is not the name of a .json plan in {}",
                index_path.display(),
                msclc::diag::escaped(file),
                from.display()
            )));
        }
        if plans.iter().any(|(seen, _)| seen == file) {
            return Err(unusable(format!(
                "{}: `{}` is listed twice",
                index_path.display(),
                msclc::diag::escaped(file)
            )));
        }
        let path = from.join(file);
        let text = regular_file(&path)
            .and_then(|f| msclc::files::read_text(f, None))
            .map_err(|e| unusable(format!("cannot read {}: {e}", path.display())))?;
        if let Some(listed) = entry["sha256"].as_str() {
            let found = msclc::tune::report::write_fingerprinted(&mut std::io::sink(), |out| {
                out.write_all(text.as_bytes())
            })
            .map_err(|e| unusable(format!("cannot read {}: {e}", path.display())))?;
            if found != listed {
                return Err(unusable(format!(
                    "{} is not the plan `msclc tune` wrote there: its sha256 is not the one {} lists (edited or replaced since); tune again, or install it by hand",
                    path.display(),
                    index_path.display()
                )));
            }
        }
        let quiet = super::options::WarningArgs {
            quiet: true,
            ..Default::default()
        };
        // The bytes installed are the ones checked, not the file read again.
        let plan = super::input::plan_of_text(&path, &text)?;
        super::input::checked_plan(plan, &path, &quiet)?;
        plans.push((file.to_string(), text.into_bytes()));
    }
    Ok(plans)
}
