//! `msclc check`: every stage but the back end, for a program or a plan.

use super::input::{is_plan, read_checked_plan, refuse_plan, Compile};
use super::options::{parse_define, LimitArgs, WarningArgs};
use super::outcome::{report, wrong};
use clap::Args;
use msclc::driver;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub(crate) struct CheckArgs {
    /// The .mscl program (`-`: read from standard input), or a .json
    /// execution plan to check.
    pub(crate) input: PathBuf,
    /// Sets a `param` the program declares (repeatable).
    #[arg(short = 'D', value_name = "NAME=VALUE", value_parser = parse_define)]
    pub(crate) define: Vec<(String, String)>,
    /// Print the params the program declares, as JSON (name, type,
    /// default and any values listed, as written), and nothing else: for
    /// tools that set them.
    /// (The program is read, not compiled: nothing sets, bounds or warns.)
    #[arg(long, conflicts_with_all = ["define", "max_ops", "threads", "deny_warnings", "quiet"])]
    pub(crate) params: bool,
    #[command(flatten)]
    pub(crate) limits: LimitArgs,
    #[command(flatten)]
    pub(crate) warnings: WarningArgs,
}

pub(crate) fn exec(args: &CheckArgs) -> ExitCode {
    if args.params {
        if let Err(refused) = refuse_plan(&args.input, "check --params") {
            return refused;
        }
        return match driver::params::listing_json(&args.input) {
            Ok(json) => {
                sayln!("{json}");
                ExitCode::SUCCESS
            }
            Err((sources, diags)) => report(&sources, &diags),
        };
    }
    if is_plan(&args.input) {
        return match read_checked_plan(
            &args.input,
            (&args.define, &args.limits),
            Compile::Plain,
            &args.warnings,
        ) {
            Ok(_) => ExitCode::SUCCESS,
            Err(code) => code,
        };
    }
    let limits = args.limits.limits();
    // Its warnings need no instances made.
    let c = args
        .warnings
        .compile_leaving_instances(&args.input, &args.define, limits);
    match &c.result {
        Ok(_) if args.warnings.report(&c) => wrong(),
        Ok(_) => ExitCode::SUCCESS,
        Err(diags) => report(&c.sources, diags),
    }
}
