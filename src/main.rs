//! The `msclc` command: parses arguments, runs the driver, prints results
//! and diagnostics, and maps failures to exit code 1.

use clap::{Args, Parser, Subcommand};
use msclc::driver::{self, Failure};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Compiler for .mscl collective-communication algorithms.
#[derive(Debug, Parser)]
#[command(name = "msclc", version, about, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    compile: CompileArgs,
}

#[derive(Debug, Args)]
struct CompileArgs {
    /// The .mscl program.
    #[arg(required = true, value_hint = clap::ValueHint::FilePath)]
    input: Option<PathBuf>,
    /// Sets a `param` the program declares (repeatable).
    #[arg(short = 'D', value_name = "NAME=VALUE", value_parser = parse_define)]
    define: Vec<(String, String)>,
    /// Where to write the plan (standard output when omitted).
    #[arg(short, long, value_name = "OUT")]
    output: Option<PathBuf>,
    /// Indent the JSON for reading (plans are compact by default: large ones
    /// write twice as fast and take half the space).
    #[arg(long)]
    pretty: bool,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Compile FILE to an MSCCL++ JSON execution plan (the default command).
    Compile(CompileArgs),
    /// Run every stage but the back end and report problems.
    Check(CheckArgs),
}

#[derive(Debug, Args)]
struct CheckArgs {
    /// The .mscl program.
    input: PathBuf,
    /// Sets a `param` the program declares (repeatable).
    #[arg(short = 'D', value_name = "NAME=VALUE", value_parser = parse_define)]
    define: Vec<(String, String)>,
}

fn parse_define(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((name, value)) if !name.is_empty() => Ok((name.to_string(), value.to_string())),
        _ => Err(format!("`{s}` is not NAME=VALUE")),
    }
}

fn report(sources: &msclc::diag::SourceMap, failure: &Failure) {
    let mut err = std::io::stderr().lock();
    match failure {
        Failure::Diagnostics(diags) => {
            let _ = write!(err, "{}", sources.render(diags));
        }
        Failure::Plain(message, notes) => {
            let _ = writeln!(err, "error: {message}");
            for n in notes {
                let _ = writeln!(err, "  {n}");
            }
        }
    }
}

fn compile(args: &CompileArgs) -> ExitCode {
    let Some(input) = &args.input else {
        return ExitCode::FAILURE;
    };
    let c = driver::compile(input, &args.define);
    let plan = match &c.result {
        Ok(plan) => plan,
        Err(f) => {
            report(&c.sources, f);
            return ExitCode::FAILURE;
        }
    };
    let written = match &args.output {
        Some(path) => std::fs::File::create(path).and_then(|f| write_plan_to(plan, args.pretty, f)),
        None => write_plan_to(plan, args.pretty, std::io::stdout().lock()),
    };
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let target = args
                .output
                .as_ref()
                .map_or("standard output".into(), |p| p.display().to_string());
            eprintln!("error: cannot write {target}: {e}");
            ExitCode::FAILURE
        }
    }
}

fn write_plan_to(plan: &msclc::ir::Plan, pretty: bool, out: impl Write) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::new(out);
    msclc::back::json::write_plan(plan, pretty, &mut out)?;
    out.write_all(b"\n")?;
    out.flush()
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        None => compile(&cli.compile),
        Some(Command::Compile(args)) => compile(&args),
        Some(Command::Check(args)) => {
            let c = driver::compile(&args.input, &args.define);
            match &c.result {
                Ok(_) => ExitCode::SUCCESS,
                Err(f) => {
                    report(&c.sources, f);
                    ExitCode::FAILURE
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }
}
