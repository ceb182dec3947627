//! `msclc install`: the default plans the MSCCL++ runtime loads, written
//! into its cache as `python3 -m mscclpp --install` does.

use super::outcome::fail;
use clap::Args;
use msclc::diag::{Code, Diagnostic};
use std::path::PathBuf;
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
    match msclc::install::install(&dir, args.force) {
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
        Err(Refused::NotPlans { dir, entries }) => {
            // The names are the user's: escaped, as all input in messages.
            let list: Vec<String> = entries
                .iter()
                .map(|e| format!("  {}", msclc::diag::escaped(&e.display().to_string())))
                .collect();
            fail(Diagnostic::plain(
                Code::NotPlans,
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
