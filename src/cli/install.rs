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
    /// index.json lists) instead of the default ones.
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
            "no --cache-dir given, and neither MSCCLPP_CACHE_DIR nor HOME is set",
        ));
    };
    let installed = match &args.from {
        None => msclc::install::install(&dir, args.force),
        Some(from) => match tuned_plans(from) {
            Ok(plans) => msclc::install::install_plans(&dir, &plans, args.force),
            Err(d) => return fail(d),
        },
    };
    match installed {
        Ok(done) => {
            sayln!("wrote, in {}:", done.dir.display());
            for f in &done.written {
                sayln!("  {}", f.display());
            }
            if !done.removed.is_empty() {
                sayln!("and removed what was there before:");
                for f in &done.removed {
                    sayln!("  {}", f.display());
                }
            }
            ExitCode::SUCCESS
        }
        Err(Refused::NotOurs { dir, entries }) => {
            // The names are the user's: escaped, as all input in messages.
            let list: Vec<String> = entries
                .iter()
                .map(|e| format!("  {}", msclc::diag::escaped(&e.display().to_string())))
                .collect();
            fail(Diagnostic::plain(
                Code::NotOurs,
                format!(
                    "{} holds files that are not plans, which `msclc install` would remove:\n{}\nmove them elsewhere, or give --force to remove them",
                    dir.display(),
                    list.join("\n")
                ),
            ))
        }
        Err(Refused::Failed(why)) => fail(Diagnostic::plain(Code::Unreadable, why)),
    }
}

/// The plans of a tuned set: each file `from/index.json` lists, whole and
/// a plan (read as `msclc sim` reads one).
fn tuned_plans(from: &Path) -> Result<Vec<(String, Vec<u8>)>, Diagnostic> {
    let index_path = from.join("index.json");
    let unusable = |why: String| Diagnostic::plain(Code::Unreadable, why);
    let text = std::fs::read_to_string(&index_path).map_err(|e| {
        unusable(format!(
            "cannot read {}: {e} (--from takes the folder `msclc tune -o DIR` wrote)",
            index_path.display()
        ))
    })?;
    let index: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| unusable(format!("{} is not JSON: {e}", index_path.display())))?;
    let files: Vec<&str> = index["plans"]
        .as_array()
        .map(|plans| plans.iter().filter_map(|p| p["file"].as_str()).collect())
        .unwrap_or_default();
    if files.is_empty() {
        return Err(unusable(format!(
            "{} lists no plans (`plans`, each with its `file`)",
            index_path.display()
        )));
    }
    let mut plans = Vec::new();
    for file in files {
        // A name, not a path: the index cannot reach out of its folder.
        if Path::new(file).file_name().and_then(|f| f.to_str()) != Some(file) {
            return Err(unusable(format!(
                "{}: `{}` is not a file name in {}",
                index_path.display(),
                msclc::diag::escaped(file),
                from.display()
            )));
        }
        let path = from.join(file);
        let limits = msclc::driver::Limits::command();
        super::input::load_plan(&path, &[], super::input::Compile::Plain, limits)
            .map_err(|_| unusable(format!("{} is not a plan msclc can read", path.display())))?;
        let contents = std::fs::read(&path)
            .map_err(|e| unusable(format!("cannot read {}: {e}", path.display())))?;
        plans.push((file.to_string(), contents));
    }
    Ok(plans)
}
