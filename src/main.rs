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
    /// What to write: the MSCCL++ JSON execution plan, or CUDA source
    /// specialized for the plan (all ranks on one GPU).
    #[arg(long, value_enum, default_value = "json")]
    emit: Emit,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Emit {
    Json,
    Cuda,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Compile FILE to an MSCCL++ JSON execution plan (the default command).
    Compile(CompileArgs),
    /// Run every stage but the back end and report problems.
    Check(CheckArgs),
    /// Execute a program or a JSON plan on the CPU, two executions back to
    /// back, and say whether it is correct, deadlocks or races. Exit code 0:
    /// verified; 1: a problem found; 2: unusable input.
    Sim(CheckArgs),
}

#[derive(Debug, Args)]
struct CheckArgs {
    /// The .mscl program (or, for `sim`, a .json execution plan).
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
    let cuda = match args.emit {
        Emit::Json => None,
        Emit::Cuda => match msclc::back::cuda::generate(plan) {
            Ok(source) => Some(source),
            Err(e) => {
                eprintln!("error: {}: {e}", input.display());
                return ExitCode::FAILURE;
            }
        },
    };
    let write = |out: &mut dyn Write| match &cuda {
        Some(source) => out.write_all(source.as_bytes()).and_then(|()| out.flush()),
        None => write_plan_to(plan, args.pretty, out),
    };
    let written = match &args.output {
        Some(path) => std::fs::File::create(path).and_then(|mut f| write(&mut f)),
        None => write(&mut std::io::stdout().lock()),
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

/// `msclc sim`: simulate a .mscl program or a JSON plan.
fn sim(args: &CheckArgs) -> ExitCode {
    let unusable = ExitCode::from(2);
    let is_json = args.input.extension().is_some_and(|e| e == "json");
    let compiled;
    let (plan, sources) = if is_json {
        let text = match std::fs::read_to_string(&args.input) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("error: cannot read {}: {e}", args.input.display());
                return unusable;
            }
        };
        match msclc::front::plan_json::read_plan(&text) {
            Ok(plan) => (plan, None),
            Err(e) => {
                eprintln!("error: {}: {e}", args.input.display());
                return unusable;
            }
        }
    } else {
        compiled = driver::compile(&args.input, &args.define);
        match &compiled.result {
            Ok(plan) => (plan.clone(), Some(&compiled.sources)),
            Err(f) => {
                report(&compiled.sources, f);
                return unusable;
            }
        }
    };
    let report = msclc::sim::simulate(&plan, 2);
    for w in &report.warnings {
        println!("warning: {w}");
    }
    let summary = format!(
        "{} on {} ranks, {} executions, {} ops run",
        plan.collective.name,
        plan.ranks.len(),
        report.executions,
        report.ops_run
    );
    match &report.verdict {
        msclc::sim::Verdict::Verified => {
            println!("verified: {summary}");
            ExitCode::SUCCESS
        }
        msclc::sim::Verdict::WrongResult(what) => {
            println!("wrong result: {what}");
            ExitCode::FAILURE
        }
        msclc::sim::Verdict::Deadlock(blocked) => {
            println!("deadlock: no thread block can go on ({summary}):");
            for b in blocked {
                println!("  {b}");
            }
            ExitCode::FAILURE
        }
        msclc::sim::Verdict::Race(race) => {
            println!("data race on {}:", race.location);
            println!("  {}", race.first);
            println!("  {}", race.second);
            println!("  and no synchronisation orders the two");
            // Point at the ops in the program, where it was compiled here.
            let message = format!("data race on {}", race.location);
            let d = match race.spans {
                [Some(a), Some(b)] => Some(
                    msclc::diag::Diagnostic::error(b, message, "this access")
                        .with_secondary(a, "races with this one"),
                ),
                [Some(one), None] | [None, Some(one)] => Some(
                    msclc::diag::Diagnostic::error(one, message, "this access")
                        .with_note("races with the user's access to the buffer around the kernel"),
                ),
                [None, None] => None,
            };
            if let (Some(sources), Some(d)) = (sources, d) {
                print!("{}", sources.render(&[d]));
            }
            ExitCode::FAILURE
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        None => compile(&cli.compile),
        Some(Command::Compile(args)) => compile(&args),
        Some(Command::Sim(args)) => sim(&args),
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
