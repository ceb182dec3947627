//! The `msclc` command: parses the command line and hands it to the
//! command's module in src/cli/, which does the work and says how it went
//! with the exit code every command shares: 0 done, 1 the program or plan
//! is wrong, 2 msclc could not do what was asked.

mod cli;

use clap::{Parser, Subcommand};
use msclc::diag::{Code, Diagnostic, SourceMap};
use std::io::Write;
use std::process::ExitCode;

const EXIT_CODES: &str = "Exit codes (every command): 0 done, nothing wrong; 1 the program or plan is wrong (an error, a warning with --deny-warnings, a wrong result, race or deadlock); 2 msclc could not do what was asked (usage, unreadable input, unwritable output, no GPU, a memory bound).";

/// Compiler for .mscl collective-communication algorithms.
#[derive(Debug, Parser)]
#[command(
    name = "msclc",
    version,
    about,
    after_help = EXIT_CODES,
    args_conflicts_with_subcommands = true,
    allow_negative_numbers = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    compile: cli::compile::CompileArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Compile FILE to an MSCCL++ JSON execution plan (the default command).
    #[command(allow_negative_numbers = true)]
    Compile(cli::compile::CompileArgs),
    /// Run every stage but the back end and report problems.
    #[command(allow_negative_numbers = true)]
    Check(cli::check::CheckArgs),
    /// Lay .mscl files out canonically, in place: indentation, spaces and
    /// blank lines are made canonical, comments and line breaks are kept.
    Fmt(cli::fmt::FmtArgs),
    /// Execute a program or a JSON plan on the CPU, two executions back to
    /// back, and say whether it is correct, deadlocks or races. Exit code 0:
    /// verified; 1: a problem found; 2: unusable input.
    #[command(allow_negative_numbers = true)]
    Sim(cli::sim::SimArgs),
    /// Compile FILE (or take PLAN.json) to CUDA, build it with NVRTC, run
    /// every rank on this machine's GPU, check each result against the
    /// collective and print an nccl-tests table. Exit code 1 when a result
    /// is wrong or a kernel stops waiting; 2 when there is no GPU, NVRTC or
    /// size to run at.
    #[command(allow_negative_numbers = true)]
    Run(cli::run::RunArgs),
    /// Choose the program's parallelism for every message size: compile
    /// each combination of the params that list their values (or that
    /// --vary names), prove each with the simulator, time each with the
    /// model on --timing's topology, and write the fewest plans that are
    /// fastest across --size, with an index. Exit code 1 when no candidate
    /// verifies at some size.
    #[command(allow_negative_numbers = true)]
    Tune(cli::tune::TuneArgs),
    /// Write the default plans the MSCCL++ runtime loads (four multi-node
    /// AllReduce plans), as `python3 -m mscclpp --install` does, with no
    /// Python. The plans in the cache's `default/` are replaced, as the
    /// reference does; anything else there stops it (`--force`).
    Install(cli::install::InstallArgs),
    /// Serve the editor: a language server on standard input and output
    /// (diagnostics, hover, go to definition, references, completion,
    /// outline, formatting).
    Lsp,
}

fn run_command(cli: Cli) -> ExitCode {
    match cli.command {
        None => cli::compile::exec(&cli.compile),
        Some(Command::Compile(args)) => cli::compile::exec(&args),
        Some(Command::Check(args)) => cli::check::exec(&args),
        Some(Command::Fmt(args)) => cli::fmt::exec(&args),
        Some(Command::Sim(args)) => cli::sim::exec(&args),
        Some(Command::Run(args)) => cli::run::exec(&args),
        Some(Command::Tune(args)) => cli::tune::exec(&args),
        Some(Command::Install(args)) => cli::install::exec(&args),
        Some(Command::Lsp) => cli::lsp::exec(),
    }
}

/// Counts live heap bytes, for the memory budgets (memory.rs).
#[global_allocator]
static ALLOCATOR: msclc::memory::Counting = msclc::memory::Counting;

fn main() -> ExitCode {
    // A closed pipe ends the process quietly, as it does `cat` or `grep`.
    // A file grown past the size limit (`ulimit -f`) is a write error, said
    // as one, not a kill: the file written is left as it was (files.rs).
    #[cfg(unix)]
    // SAFETY: sets the actions of two signals before any thread starts;
    // nothing in msclc handles either.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
    #[cfg(unix)]
    msclc::files::remove_temporaries_on_signals();
    // Before the command line is parsed: the compile thread's heap is
    // made as it starts. `lsp` can only come first.
    if std::env::args_os().nth(1).is_none_or(|a| a != "lsp") {
        msclc::memory::tune_for_a_short_command();
    }
    match msclc::stack::run_on_a_deep_stack(command) {
        Some(Ok(code)) => code,
        // A panic has printed its message; exit as Rust does after one.
        Some(Err(_)) => ExitCode::from(101),
        None => {
            let message = format!(
                "error[E0810]: msclc needs more memory than this machine lets it have: no thread with a stack of {} MB can start (the address-space limit, `ulimit -v`, leaves too little room)\n  = help: raise the limit\n",
                msclc::stack::SMALLEST >> 20
            );
            let _ = std::io::stderr().write_all(message.as_bytes());
            ExitCode::from(2)
        }
    }
}

fn command() -> ExitCode {
    // Past nine tenths of what the process may allocate, the allocator
    // itself stops it with E0810 (memory.rs): later than any stage's own
    // budget, and before the system refuses an allocation.
    msclc::memory::set_ceiling(msclc::memory::budget(0.9));
    let code = match Cli::try_parse().map_err(|e| (misplaced_command(&e), e)) {
        Ok(cli) => run_command(cli),
        // A command named after options or the input: clap's message
        // would take the command for the input; say what is meant.
        Err((Some(command), _)) => {
            let message = format!("error: `{command}` is a command, and comes first: `msclc {command} [OPTIONS] ...` (options before a command are the compile's)\n\nFor more information, try '--help'.\n");
            let _ = std::io::stderr().write_all(message.as_bytes());
            ExitCode::from(2)
        }
        // Help, the version, or a usage error, said as clap says them.
        Err((None, e)) => {
            let printed = e.print();
            cli::streams::remember_error(
                if e.use_stderr() {
                    "standard error"
                } else {
                    "standard output"
                },
                &printed,
            );
            ExitCode::from(e.exit_code().clamp(0, 255) as u8)
        }
    };
    match cli::streams::failure() {
        None => code,
        Some((stream, why)) => {
            // Said where it still can be; the exit code says it anyway.
            let d = Diagnostic::plain(Code::Unreadable, format!("cannot write {stream}: {why}"));
            let _ = std::io::stderr().write_all(SourceMap::default().render(&[d]).as_bytes());
            ExitCode::from(2)
        }
    }
}

/// The command the command line names past its first argument, where
/// that made the usage error `e` (`msclc --pretty check p.mscl`, `msclc
/// p.mscl sim`).
fn misplaced_command(e: &clap::Error) -> Option<String> {
    use clap::CommandFactory;
    // (clap's conflicts of a subcommand with the default command's
    // arguments; a flag given twice is another conflict.)
    if e.kind() != clap::error::ErrorKind::ArgumentConflict
        || !e.to_string().contains("the subcommand")
    {
        return None;
    }
    let commands: Vec<String> = Cli::command()
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .collect();
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let is_command =
        |a: &std::ffi::OsString| a.to_str().is_some_and(|a| commands.iter().any(|c| c == a));
    if args.first().is_some_and(is_command) {
        return None;
    }
    let named = args.iter().skip(1).find(|a| is_command(a))?;
    named.to_str().map(str::to_string)
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
