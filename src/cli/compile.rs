//! `msclc FILE` and `msclc compile FILE`: a program (or a JSON plan) to
//! an MSCCL++ JSON execution plan or CUDA source.

use super::input::{is_plan, read_checked_plan};
use super::options::{parse_define, LimitArgs, WarningArgs};
use super::outcome::{fail, fail_in, report, wrong};
use clap::Args;
use msclc::diag::{Code, Diagnostic};
use msclc::driver;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub(crate) struct CompileArgs {
    /// The .mscl program (or a .json execution plan, for `--emit cuda`).
    #[arg(required = true, value_hint = clap::ValueHint::FilePath)]
    pub(crate) input: Option<PathBuf>,
    /// Sets a `param` the program declares (repeatable).
    #[arg(short = 'D', value_name = "NAME=VALUE", value_parser = parse_define)]
    pub(crate) define: Vec<(String, String)>,
    /// Where to write the plan (standard output when omitted).
    #[arg(short, long, value_name = "OUT")]
    pub(crate) output: Option<PathBuf>,
    /// Indent the JSON for reading (plans are compact by default: large ones
    /// write twice as fast and take half the space). JSON only.
    #[arg(long)]
    pub(crate) pretty: bool,
    /// What to write: the MSCCL++ JSON execution plan, or CUDA source
    /// specialized for the plan (all ranks on one GPU).
    #[arg(long, value_enum, default_value = "json")]
    pub(crate) emit: Emit,
    #[command(flatten)]
    pub(crate) limits: LimitArgs,
    #[command(flatten)]
    pub(crate) warnings: WarningArgs,
    /// Print how long each stage took (read, parse, check, evaluate,
    /// passes, write) on standard error.
    #[arg(long)]
    pub(crate) timings: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Emit {
    Json,
    Cuda,
}

pub(crate) fn exec(args: &CompileArgs) -> ExitCode {
    let Some(input) = &args.input else {
        return fail(Diagnostic::plain(Code::Options, "no input file given"));
    };
    if args.pretty && args.emit == Emit::Cuda {
        return fail(Diagnostic::plain(
            Code::Options,
            "--pretty indents JSON plans; CUDA source is written as it is (leave out --pretty)",
        ));
    }
    if let Some(output) = args
        .output
        .as_deref()
        .filter(|o| msclc::files::same_file(o, input))
    {
        return fail(Diagnostic::plain(
            Code::Options,
            format!(
                "-o {} is the input file: writing there would overwrite it; name another output file",
                output.display()
            ),
        ));
    }
    let (plan, mut timings, sources) = if is_plan(input) {
        match read_checked_plan(input, &args.define, &args.warnings) {
            Ok(plan) => (plan, driver::Timings::default(), None),
            Err(code) => return code,
        }
    } else {
        let c = driver::compile_with(input, &args.define, args.limits.limits());
        match c.result {
            Ok(_)
                if args
                    .warnings
                    .report(&c, input, &args.define, args.limits.limits()) =>
            {
                return wrong()
            }
            Ok(plan) => (plan, c.timings, Some(c.sources)),
            Err(diags) => return report(&c.sources, &diags),
        }
    };
    let cuda = match args.emit {
        Emit::Json => None,
        Emit::Cuda => match timings.time("cuda", || msclc::back::cuda::generate(&plan)) {
            Ok(source) => Some(source),
            Err(e) => return fail_in(sources.as_ref(), input, e),
        },
    };
    let write = |out: &mut dyn Write| match &cuda {
        Some(source) => out.write_all(source.as_bytes()).and_then(|()| out.flush()),
        None => write_plan_to(&plan, args.pretty, out),
    };
    let written = timings.time("write", || match &args.output {
        Some(path) => msclc::files::write_with(path, write),
        None => write(&mut std::io::stdout().lock()),
    });
    if args.timings {
        tell!("{}", timings.report());
    }
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let target = args
                .output
                .as_ref()
                .map_or("standard output".into(), |p| p.display().to_string());
            fail(Diagnostic::plain(
                Code::Unreadable,
                format!("cannot write {target}: {e}"),
            ))
        }
    }
}

pub(crate) fn write_plan_to(
    plan: &msclc::ir::Plan,
    pretty: bool,
    out: impl Write,
) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::new(out);
    msclc::back::json::write_plan(plan, pretty, &mut out)?;
    out.write_all(b"\n")?;
    out.flush()
}
