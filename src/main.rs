//! The `msclc` command: parses arguments, runs the driver, prints results
//! and diagnostics, and maps the outcome to an exit code, the same way for
//! every command: 0 done, 1 the program or plan is wrong, 2 msclc could
//! not do what was asked.

use clap::{Args, Parser, Subcommand};
use msclc::diag::{Code, Diagnostic, SourceMap};
use msclc::driver;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Standard output and error as every command writes them. A write that
/// fails (a full disk behind a redirection, a terminal gone) does not stop
/// the command halfway with a panic, as `print!` would: it is remembered,
/// and the command then ends with E0801 and exit code 2 (`command`).
mod streams {
    use std::io::Write;
    use std::sync::Mutex;

    /// The first write error, and the stream it hit.
    static FAILED: Mutex<Option<(&'static str, String)>> = Mutex::new(None);

    pub fn remember_error<T>(stream: &'static str, result: &std::io::Result<T>) {
        if let Err(e) = result {
            let mut failed = FAILED.lock().unwrap_or_else(|p| p.into_inner());
            failed.get_or_insert((stream, e.to_string()));
        }
    }

    pub fn out(text: std::fmt::Arguments) {
        // `Stdout` remembers what fails.
        let _ = Stdout.write_fmt(text).and_then(|()| Stdout.flush());
    }

    pub fn err(text: std::fmt::Arguments) {
        remember_error("standard error", &std::io::stderr().lock().write_fmt(text));
    }

    /// Standard output for code that writes to a `Write`: its errors are
    /// remembered as `out`'s are.
    pub struct Stdout;

    impl Write for Stdout {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let written = std::io::stdout().lock().write(buf);
            remember_error("standard output", &written);
            written
        }

        fn flush(&mut self) -> std::io::Result<()> {
            let flushed = std::io::stdout().lock().flush();
            remember_error("standard output", &flushed);
            flushed
        }
    }

    /// The first write that failed: the stream and why.
    pub fn failure() -> Option<(&'static str, String)> {
        FAILED.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// `print!` to standard output, its failure remembered (`streams`).
macro_rules! say {
    ($($arg:tt)*) => { streams::out(format_args!($($arg)*)) };
}

/// `println!` to standard output, its failure remembered (`streams`).
macro_rules! sayln {
    ($($arg:tt)*) => { streams::out(format_args!("{}\n", format_args!($($arg)*))) };
}

/// `eprint!` to standard error, its failure remembered (`streams`).
macro_rules! tell {
    ($($arg:tt)*) => { streams::err(format_args!($($arg)*)) };
}

/// The exit code for a program or plan that is wrong: an error, a warning
/// under `--deny-warnings`, a simulation or a run that finds a wrong
/// result, a race or a deadlock.
fn wrong() -> ExitCode {
    ExitCode::from(1)
}

/// Prints `diags` against `sources`; the exit code they give: 2 when one
/// is a problem msclc could not do (a file it cannot read or write, a `-D`
/// the program has no param for, no GPU, a memory bound: the E08xx codes;
/// clap exits 2 for its usage errors too), else 1.
fn report(sources: &SourceMap, diags: &[Diagnostic]) -> ExitCode {
    tell!("{}", sources.render(diags));
    let status = diags.iter().map(|d| d.exit_status()).max().unwrap_or(1);
    ExitCode::from(status)
}

/// Prints a problem that has no place in a program; its exit code.
fn fail(d: Diagnostic) -> ExitCode {
    report(&SourceMap::default(), &[d])
}

/// `diags` about `input`, rendered against its sources when it is a
/// program compiled here; about a JSON plan (no sources), without labels
/// and naming the file where they had a place.
fn rendered(sources: Option<&SourceMap>, input: &std::path::Path, diags: &[Diagnostic]) -> String {
    match sources {
        Some(sources) => sources.render(diags),
        None => {
            let about_plan: Vec<Diagnostic> = diags
                .iter()
                .map(|d| match d.span() {
                    Some(_) => d.clone().in_plan(input),
                    None => d.clone(),
                })
                .collect();
            SourceMap::default().render(&about_plan)
        }
    }
}

/// Prints `d`, a problem with `input` (see `rendered`); its exit code.
fn fail_in(sources: Option<&SourceMap>, input: &std::path::Path, d: Diagnostic) -> ExitCode {
    tell!("{}", rendered(sources, input, std::slice::from_ref(&d)));
    ExitCode::from(d.exit_status())
}

const EXIT_CODES: &str = "Exit codes (every command): 0 done, nothing wrong; 1 the program or plan is wrong (an error, a warning with --deny-warnings, a wrong result, race or deadlock); 2 msclc could not do what was asked (usage, unreadable input, unwritable output, no GPU, a memory bound).";

/// Compiler for .mscl collective-communication algorithms.
#[derive(Debug, Parser)]
#[command(
    name = "msclc",
    version,
    about,
    after_help = EXIT_CODES,
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    compile: CompileArgs,
}

#[derive(Debug, Args)]
struct CompileArgs {
    /// The .mscl program (or a .json execution plan, for `--emit cuda`).
    #[arg(required = true, value_hint = clap::ValueHint::FilePath)]
    input: Option<PathBuf>,
    /// Sets a `param` the program declares (repeatable).
    #[arg(short = 'D', value_name = "NAME=VALUE", value_parser = parse_define)]
    define: Vec<(String, String)>,
    /// Where to write the plan (standard output when omitted).
    #[arg(short, long, value_name = "OUT")]
    output: Option<PathBuf>,
    /// Indent the JSON for reading (plans are compact by default: large ones
    /// write twice as fast and take half the space). JSON only.
    #[arg(long)]
    pretty: bool,
    /// What to write: the MSCCL++ JSON execution plan, or CUDA source
    /// specialized for the plan (all ranks on one GPU).
    #[arg(long, value_enum, default_value = "json")]
    emit: Emit,
    #[command(flatten)]
    limits: LimitArgs,
    #[command(flatten)]
    warnings: WarningArgs,
    /// Print how long each stage took (read, parse, check, evaluate,
    /// passes, write) on standard error.
    #[arg(long)]
    timings: bool,
}

/// What becomes of warnings.
#[derive(Debug, Default, Args)]
struct WarningArgs {
    /// Treat warnings as errors: print them, write nothing, exit 1.
    #[arg(long)]
    deny_warnings: bool,
    /// Print no warnings (errors are still printed).
    #[arg(short, long, conflicts_with = "deny_warnings")]
    quiet: bool,
}

impl WarningArgs {
    /// Prints the warnings of `c` (the program `input` compiled as
    /// `defines` and `limits` say) on standard error, unless quiet; whether
    /// they stop the command.
    fn report(
        &self,
        c: &driver::Compilation,
        input: &std::path::Path,
        defines: &[(String, String)],
        limits: driver::Limits,
    ) -> bool {
        if !self.quiet && !c.warnings.is_empty() {
            print_warnings(c, input, defines, limits, self);
        }
        self.denied(&c.warnings)
    }

    /// Whether `warnings` stop the command.
    fn denied(&self, warnings: &[Diagnostic]) -> bool {
        self.deny_warnings && !warnings.is_empty()
    }

    /// `warnings` as they are shown: as errors under `--deny-warnings`.
    fn shown(&self, warnings: &[Diagnostic]) -> Vec<Diagnostic> {
        warnings
            .iter()
            .map(|w| match self.deny_warnings {
                true => w
                    .clone()
                    .as_error()
                    .with_note("--deny-warnings makes this warning an error"),
                false => w.clone(),
            })
            .collect()
    }
}

/// Prints `c`'s warnings with the loop values at their lines: when the
/// compilation did not keep them (it costs time in every loop, so a plain
/// compile does without), the program is compiled again keeping them.
fn print_warnings(
    c: &driver::Compilation,
    input: &std::path::Path,
    defines: &[(String, String)],
    limits: driver::Limits,
    how: &WarningArgs,
) {
    if !limits.loop_values {
        let with_values = driver::Limits {
            loop_values: true,
            ..limits
        };
        let again = driver::compile_with(input, defines, with_values);
        if again.result.is_ok() && again.warnings.len() == c.warnings.len() {
            tell!("{}", again.sources.render(&how.shown(&again.warnings)));
            return;
        }
    }
    tell!("{}", c.sources.render(&how.shown(&c.warnings)));
}

/// Bounds on what compiling a program may do.
#[derive(Debug, Args)]
struct LimitArgs {
    /// Stop with an error when the program emits more ops than this (a
    /// runaway loop ends soon, not after GBs). The default admits every
    /// example at 256 ranks twice over.
    #[arg(long, value_name = "N", default_value_t = msclc::eval::MAX_OPS)]
    max_ops: u64,
}

impl LimitArgs {
    fn limits(&self) -> driver::Limits {
        driver::Limits {
            max_ops: self.max_ops,
            ..driver::Limits::command()
        }
    }
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
    /// Lay .mscl files out canonically, in place: indentation, spaces and
    /// blank lines are made canonical, comments and line breaks are kept.
    Fmt(FmtArgs),
    /// Execute a program or a JSON plan on the CPU, two executions back to
    /// back, and say whether it is correct, deadlocks or races. Exit code 0:
    /// verified; 1: a problem found; 2: unusable input.
    Sim(SimArgs),
    /// Compile FILE (or take PLAN.json) to CUDA, build it with NVRTC, run
    /// every rank on this machine's GPU, check each result against the
    /// collective and print an nccl-tests table. Exit code 1 when a result
    /// is wrong or no GPU can run it.
    Run(RunArgs),
    /// Write the default plans the MSCCL++ runtime loads (four multi-node
    /// AllReduce plans), as `python3 -m mscclpp --install` does, with no
    /// Python. The folder is CLEARED first, as the reference does.
    Install(InstallArgs),
    /// Serve the editor: a language server on standard input and output
    /// (diagnostics, hover, go to definition, references, completion,
    /// outline, formatting).
    Lsp,
}

#[derive(Debug, Args)]
struct InstallArgs {
    /// The MSCCL++ cache folder, as MSCCLPP_CACHE_DIR names it (default:
    /// $MSCCLPP_CACHE_DIR, else ~/.cache/mscclpp); the plans go to its
    /// `default/`, where the runtime loads them, replacing the plans there.
    #[arg(long, value_name = "DIR")]
    cache_dir: Option<PathBuf>,
    /// Clear `default/` even where it holds files that are not plans.
    #[arg(long)]
    force: bool,
}

#[derive(Debug, Args)]
struct RunArgs {
    /// The .mscl program or a .json execution plan.
    input: PathBuf,
    /// Sets a `param` the program declares (repeatable).
    #[arg(short = 'D', value_name = "NAME=VALUE", value_parser = parse_define)]
    define: Vec<(String, String)>,
    /// Number of ranks: sets the program's param that decides it.
    #[arg(long, value_name = "N")]
    nranks: Option<u32>,
    /// Message sizes in bytes, doubling from MIN to MAX (K, M, G suffixes).
    #[arg(long, value_name = "MIN:MAX", default_value = "1K:256M", value_parser = msclc::runner::parse_size_range)]
    size: (u64, u64),
    /// Element type of the data.
    #[arg(long, value_enum, default_value = "float32")]
    dtype: DtypeArg,
    /// Timed launches per size.
    #[arg(long, default_value_t = 20)]
    iters: u32,
    /// Untimed launches before them.
    #[arg(long, default_value_t = 5)]
    warmup: u32,
    /// Compile the kernel afresh and keep no copy: skip the cubin cache
    /// ($MSCLC_CACHE_DIR, else $XDG_CACHE_HOME/msclc, else ~/.cache/msclc).
    #[arg(long)]
    no_cache: bool,
    /// Seconds any one wait of the kernel (signal, barrier, semaphore,
    /// packet) may spin: then the kernel stops, and msclc says which rank,
    /// thread block and op waited for what, and exits 1.
    #[arg(long, value_name = "SECONDS", default_value = "5", value_parser = parse_seconds)]
    timeout: std::time::Duration,
    #[command(flatten)]
    limits: LimitArgs,
}

fn parse_seconds(s: &str) -> Result<std::time::Duration, String> {
    s.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v > 0.0 && *v < 1e9)
        .map(std::time::Duration::from_secs_f64)
        .ok_or_else(|| format!("`{s}` is not a positive number of seconds"))
}

#[derive(Debug, Args)]
struct SimArgs {
    /// The .mscl program or a .json execution plan.
    input: PathBuf,
    /// Sets a `param` the program declares (repeatable).
    #[arg(short = 'D', value_name = "NAME=VALUE", value_parser = parse_define)]
    define: Vec<(String, String)>,
    /// The buffers to run with: as the plan declares, in-place (output
    /// aliasing input, as the MSCCL++ test harness lays them out),
    /// out-of-place, or both (a plan that works in one mode only says so).
    #[arg(long, value_enum, default_value = "declared")]
    buffers: BuffersArg,
    /// Warn when a rank's thread blocks cannot all be resident at once on
    /// this GPU (a known cause of hangs in the executor).
    #[arg(long, value_name = "GPU", value_parser = parse_target)]
    target: Option<&'static msclc::sim::Target>,
    /// Refuse (exit code 2) a plan whose simulation is estimated to take
    /// more memory than this (K, M, G suffixes); by default 8G, or three
    /// quarters of the memory this process may have, whichever is less.
    #[arg(long, value_name = "BYTES", value_parser = msclc::runner::parse_size)]
    max_memory: Option<u64>,
    /// Print the verdict line only (no details, no warnings).
    #[arg(long)]
    quiet: bool,
    /// Print one JSON object: the verdict, each problem with its locations,
    /// the warnings.
    #[arg(long, conflicts_with_all = ["quiet", "timing"])]
    json: bool,
    #[command(flatten)]
    timing: TimingArgs,
    #[command(flatten)]
    limits: LimitArgs,
}

/// `msclc sim --timing`: the predicted time.
#[derive(Debug, Args)]
struct TimingArgs {
    /// Predict how long the plan takes on this topology: a built-in
    /// (h100-nvlink, h100-nvls, h100-ib, emulated-h100) or a JSON file
    /// (docs/timing.md). Prints a table in the nccl-tests form and each
    /// size's critical path
    #[arg(long, value_name = "TOPOLOGY")]
    timing: Option<String>,
    /// Message sizes to predict, doubling from MIN to MAX (K, M, G suffixes)
    #[arg(long, value_name = "MIN:MAX", default_value = "1K:1G", requires = "timing", value_parser = msclc::runner::parse_size_range)]
    size: (u64, u64),
    /// Element type of the data
    #[arg(long, value_enum, default_value = "float32", requires = "timing")]
    dtype: DtypeArg,
    /// Write the largest size's predicted timeline in Chrome trace-event
    /// JSON (opens in Perfetto and chrome://tracing)
    #[arg(long, value_name = "FILE", requires = "timing")]
    trace: Option<PathBuf>,
    /// Write the largest size's predicted timeline as an SVG picture
    #[arg(long, value_name = "FILE", requires = "timing")]
    svg: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum BuffersArg {
    Declared,
    InPlace,
    OutOfPlace,
    Both,
}

fn parse_target(s: &str) -> Result<&'static msclc::sim::Target, String> {
    msclc::sim::TARGETS
        .iter()
        .find(|t| t.name == s.to_ascii_lowercase())
        .ok_or_else(|| {
            let names: Vec<&str> = msclc::sim::TARGETS.iter().map(|t| t.name).collect();
            format!("`{s}` is not a GPU msclc knows: {}", names.join(", "))
        })
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum DtypeArg {
    Float32,
    Float16,
    Bfloat16,
}

impl From<DtypeArg> for msclc::ir::Dtype {
    fn from(d: DtypeArg) -> msclc::ir::Dtype {
        match d {
            DtypeArg::Float32 => msclc::ir::Dtype::Float32,
            DtypeArg::Float16 => msclc::ir::Dtype::Float16,
            DtypeArg::Bfloat16 => msclc::ir::Dtype::Bfloat16,
        }
    }
}

#[derive(Debug, Args)]
struct CheckArgs {
    /// The .mscl program, or a .json execution plan to check.
    input: PathBuf,
    /// Sets a `param` the program declares (repeatable).
    #[arg(short = 'D', value_name = "NAME=VALUE", value_parser = parse_define)]
    define: Vec<(String, String)>,
    #[command(flatten)]
    limits: LimitArgs,
    #[command(flatten)]
    warnings: WarningArgs,
}

#[derive(Debug, Args)]
struct FmtArgs {
    /// The .mscl files to rewrite; `-` formats standard input to standard
    /// output.
    #[arg(required = true, value_hint = clap::ValueHint::FilePath)]
    files: Vec<PathBuf>,
    /// Write nothing: print each file that is not formatted, one path a
    /// line, and exit 1 if there is one (for CI).
    #[arg(long)]
    check: bool,
}

fn parse_define(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((name, value)) if !name.is_empty() => Ok((name.to_string(), value.to_string())),
        _ => Err(format!("`{s}` is not NAME=VALUE")),
    }
}

fn compile(args: &CompileArgs) -> ExitCode {
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

/// Whether `input` is a JSON execution plan rather than a program.
fn is_plan(input: &std::path::Path) -> bool {
    input.extension().is_some_and(|e| e == "json")
}

/// A JSON plan given where a program may be (`check`, `compile --emit
/// cuda`): read, then checked as a compiled program is, for signals
/// without waits and for the executor's limits (warnings, as `warnings`
/// says). `-D` has nothing to set in a plan.
fn read_checked_plan(
    input: &std::path::Path,
    defines: &[(String, String)],
    warnings: &WarningArgs,
) -> Result<msclc::ir::Plan, ExitCode> {
    if let Some((name, _)) = defines.first() {
        return Err(fail(Diagnostic::plain(
            Code::Define,
            format!(
                "-D {name}: {} is a JSON plan, which has no params (-D sets a program's params)",
                input.display()
            ),
        )));
    }
    let limits = driver::Limits::command();
    let (plan, _) = load_plan(input, defines, Compile::Plain, limits)?;
    if let Err(d) = msclc::passes::pairing::check(&plan) {
        return Err(fail_in(None, input, d));
    }
    let found = msclc::passes::warnings(&plan);
    if !warnings.quiet {
        tell!("{}", rendered(None, input, &warnings.shown(&found)));
    }
    if warnings.denied(&found) {
        return Err(wrong());
    }
    Ok(plan)
}

fn write_plan_to(plan: &msclc::ir::Plan, pretty: bool, out: impl Write) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::new(out);
    msclc::back::json::write_plan(plan, pretty, &mut out)?;
    out.write_all(b"\n")?;
    out.flush()
}

/// `msclc fmt`: every file is formatted (or checked), whatever becomes of
/// the others; the exit code is the worst any of them gets.
fn fmt(args: &FmtArgs) -> ExitCode {
    let worst = args
        .files
        .iter()
        .map(|path| format_file(path, args.check))
        .max()
        .unwrap_or(0);
    ExitCode::from(worst)
}

/// Formats the file at `path` in place, if that changes it (`-`: standard
/// input, written formatted to standard output), or with `check` only
/// prints its path if it would change. Prints what went wrong; the exit
/// status: 0, 1 when it does not parse or is not formatted under `check`,
/// 2 when it cannot be read or written.
fn format_file(path: &std::path::Path, check: bool) -> u8 {
    let stdin = path.as_os_str() == "-";
    let (name, read) = if stdin {
        (
            "<stdin>".to_string(),
            std::io::read_to_string(std::io::stdin()),
        )
    } else {
        (path.display().to_string(), driver::read_source(path))
    };
    let unusable = |what: String| {
        let d = Diagnostic::plain(Code::Unreadable, what);
        tell!("{}", SourceMap::default().render(std::slice::from_ref(&d)));
        d.exit_status()
    };
    let text = match read {
        Ok(text) => text,
        Err(e) if stdin => return unusable(format!("cannot read standard input: {e}")),
        Err(e) => return unusable(format!("cannot read {name}: {e}")),
    };
    let mut sources = SourceMap::default();
    let file = sources.add(name.clone(), text);
    let text = sources.source(file);
    let formatted = match msclc::format::format_source(file, text) {
        Ok(formatted) => formatted,
        Err(d) => {
            tell!("{}", sources.render(std::slice::from_ref(&d)));
            return d.exit_status();
        }
    };
    let changed = formatted != text;
    if check {
        if changed {
            sayln!("{name}");
        }
        return u8::from(changed);
    }
    if stdin {
        let mut out = std::io::stdout().lock();
        if let Err(e) = out
            .write_all(formatted.as_bytes())
            .and_then(|()| out.flush())
        {
            return unusable(format!("cannot write standard output: {e}"));
        }
    } else if changed {
        if let Err(e) = msclc::files::write(path, formatted.as_bytes()) {
            return unusable(format!("cannot write {name}: {e}"));
        }
    }
    0
}

/// `msclc sim`: simulate a .mscl program or a JSON plan.
fn sim(args: &SimArgs) -> ExitCode {
    use msclc::sim::output::{details, json_report, verdict_line, Run};
    let compiled;
    let (plan, sources) = match load_plan(
        &args.input,
        &args.define,
        Compile::ForReports,
        args.limits.limits(),
    ) {
        Ok((plan, c)) => {
            compiled = c;
            (plan, compiled.as_ref().map(|c| &c.sources))
        }
        Err(code) => return code,
    };
    let needs = msclc::sim::memory_estimate(&plan);
    let max_memory = args
        .max_memory
        .unwrap_or_else(msclc::sim::default_memory_limit);
    if needs > max_memory {
        let size = msclc::memory::size_text;
        return fail(Diagnostic::plain(Code::Memory, format!(
            "simulating this plan ({} ranks, {} thread blocks) would take about {}, more than --max-memory {}: raise --max-memory, or simulate the program at fewer ranks",
            plan.ranks.len(),
            plan.ranks.iter().map(|r| r.threadblocks.len()).sum::<usize>(),
            size(needs),
            size(max_memory)
        )));
    }
    let declared = plan.collective.inplace;
    let modes = match args.buffers {
        BuffersArg::Declared => vec![declared],
        BuffersArg::InPlace => vec![true],
        BuffersArg::OutOfPlace => vec![false],
        BuffersArg::Both => vec![declared, !declared],
    };
    let residency = args
        .target
        .and_then(|target| msclc::sim::residency(&plan, target));
    let topology = match args
        .timing
        .timing
        .as_deref()
        .map(msclc::timing::load_topology)
    {
        Some(Err(d)) => return fail(d),
        Some(Ok(t)) => Some(t),
        None => None,
    };
    // The timing model times the first buffer mode's execution.
    let mut recorded = None;
    let runs: Vec<Run> = modes
        .into_iter()
        .map(|inplace| {
            let options = msclc::sim::SimOptions {
                executions: 2,
                inplace: Some(inplace),
                progress: !args.quiet && !args.json,
            };
            let before = msclc::memory::start_peak();
            let mut report = if topology.is_some() && recorded.is_none() {
                let (report, run) = msclc::sim::simulate_recorded(&plan, &options);
                recorded = Some(run);
                report
            } else {
                msclc::sim::simulate_with(&plan, &options)
            };
            let peak_bytes = msclc::memory::peak_bytes().saturating_sub(before);
            report.warnings.extend(residency.clone());
            Run {
                buffers: if inplace { "in-place" } else { "out-of-place" },
                declared: inplace == declared,
                report,
                peak_bytes,
            }
        })
        .collect();
    let verified = |run: &Run| run.report.verdict == msclc::sim::Verdict::Verified;
    let code = if runs.iter().all(verified) {
        ExitCode::SUCCESS
    } else {
        wrong()
    };
    if args.json {
        sayln!("{}", json_report(&plan, &runs, sources));
        return code;
    }
    let several = runs.len() > 1;
    for run in &runs {
        let line = verdict_line(&plan, &run.report);
        if several {
            let declared = if run.declared { " (declared)" } else { "" };
            sayln!("{}{declared}: {line}", run.buffers);
        } else {
            sayln!("{line}");
        }
        if !args.quiet {
            say!("{}", details(&run.report, sources));
        }
    }
    if let [first, second] = &runs[..] {
        if verified(first) != verified(second) {
            let (works, fails) = if verified(first) {
                (first, second)
            } else {
                (second, first)
            };
            sayln!(
                "note: the plan works {} only, not {}; it declares {}",
                works.buffers,
                fails.buffers,
                if declared { "in-place" } else { "out-of-place" }
            );
        }
    }
    if !args.quiet {
        // Each warning once, though both buffer modes found it.
        let mut warnings: Vec<Diagnostic> = Vec::new();
        for w in runs.iter().flat_map(|r| &r.report.warnings) {
            if !warnings.contains(w) {
                warnings.push(w.clone());
            }
        }
        tell!("{}", rendered(sources, &args.input, &warnings));
    }
    if let (Some(topology), Some(run)) = (&topology, &recorded) {
        let t = &args.timing;
        let title = args.input.display().to_string();
        let request = msclc::timing::Request {
            topology,
            dtype: t.dtype.into(),
            sizes: t.size,
            trace: t.trace.as_deref(),
            svg: t.svg.as_deref(),
            title: &title,
        };
        match msclc::timing::predict_report(&plan, run, &request) {
            Ok(text) => say!("{text}"),
            Err(d) => return fail(d),
        }
    }
    code
}

/// How `load_plan` compiles a program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Compile {
    /// As it is.
    Plain,
    /// For this many ranks (`--nranks`).
    ForRanks(u32),
    /// Keeping loop values for reports (`msclc sim`).
    ForReports,
}

/// A program compiled as `how` says, or a JSON plan read; problems are
/// reported here, and give the exit code.
fn load_plan(
    input: &std::path::Path,
    defines: &[(String, String)],
    how: Compile,
    limits: driver::Limits,
) -> Result<(msclc::ir::Plan, Option<driver::Compilation>), ExitCode> {
    let nranks = match how {
        Compile::ForRanks(n) => Some(n),
        _ => None,
    };
    if is_plan(input) {
        let text = std::fs::File::open(input)
            .and_then(|file| msclc::files::read_text(file, None))
            .map_err(|e| {
                fail(Diagnostic::plain(
                    Code::Unreadable,
                    format!("cannot read {}: {e}", input.display()),
                ))
            })?;
        let plan = msclc::front::plan_json::read_plan(&text)
            .map_err(|e| fail(e.diagnostic().in_plan(input)))?;
        if let Some(n) = nranks.filter(|n| *n as usize != plan.ranks.len()) {
            return Err(fail(Diagnostic::plain(Code::Ranks, format!(
                "--nranks {n}: {} is a plan for {} ranks; a JSON plan's rank count is fixed (compile the program for {n} ranks instead)",
                input.display(),
                plan.ranks.len()
            ))));
        }
        return Ok((plan, None));
    }
    let compiled = match how {
        Compile::ForRanks(n) => driver::compile_for_ranks(input, defines, n, limits),
        Compile::ForReports => driver::compile_with(
            input,
            defines,
            driver::Limits {
                loop_values: true,
                ..limits
            },
        ),
        Compile::Plain => driver::compile_with(input, defines, limits),
    };
    match &compiled.result {
        Ok(plan) => {
            // `sim` lists the executor's limits with its verdict.
            match how {
                Compile::Plain if !compiled.warnings.is_empty() => {
                    print_warnings(&compiled, input, defines, limits, &WarningArgs::default())
                }
                // (With the param `--nranks` set: the warnings as they are.)
                Compile::ForRanks(_) => tell!("{}", compiled.sources.render(&compiled.warnings)),
                _ => {}
            }
            Ok((plan.clone(), Some(compiled)))
        }
        Err(diags) => Err(report(&compiled.sources, diags)),
    }
}

/// `msclc run`: the plan on this machine's GPU.
fn run(args: &RunArgs) -> ExitCode {
    let how = args.nranks.map_or(Compile::Plain, Compile::ForRanks);
    let (plan, compiled) = match load_plan(&args.input, &args.define, how, args.limits.limits()) {
        Ok(loaded) => loaded,
        Err(code) => return code,
    };
    let opts = msclc::runner::RunOptions {
        dtype: args.dtype.into(),
        min_size: args.size.0,
        max_size: args.size.1,
        iters: args.iters,
        warmup: args.warmup,
        cache: if args.no_cache {
            None
        } else {
            msclc::runner::cache::default_dir()
        },
        timeout: args.timeout,
    };
    let mut out = streams::Stdout;
    let result = msclc::runner::gpu::run(&plan, &opts, &mut out);
    let _ = out.flush();
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            let sources = compiled.as_ref().map(|c| &c.sources);
            tell!("{}", msclc::runner::explain_wrong_result(&plan, sources));
            wrong()
        }
        Err(msclc::runner::RunError::Problem(d)) => {
            fail_in(compiled.as_ref().map(|c| &c.sources), &args.input, d)
        }
        Err(msclc::runner::RunError::Stuck(gave_up)) => {
            let message = format!("the kernel stopped waiting: {gave_up}");
            let help =
                "`msclc sim` shows why a plan deadlocks; `--timeout` gives slow waits longer";
            // Point at the op in the program, where it was compiled here.
            match (&compiled, gave_up.span) {
                (Some(c), Some(span)) => {
                    let d = Diagnostic::error(Code::KernelStuck, span, message, "this op waited");
                    report(&c.sources, &[d.with_note(help)])
                }
                _ => fail(Diagnostic::plain(Code::KernelStuck, message).with_note(help)),
            }
        }
    }
}

/// `msclc install`: the runtime's default plans.
fn install(args: &InstallArgs) -> ExitCode {
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

/// Stack for the command's thread. The checker and the evaluator recurse
/// over the syntax tree (up to `syntax::nesting::MAX_NESTING` levels), and
/// a deep tree that the parser refuses is still dropped recursively: the
/// main thread's 8 MB is too little for that in a debug build. The memory
/// is reserved, not used, until a deep program needs it.
const STACK_BYTES: usize = 1 << 30;

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
    match std::thread::Builder::new()
        .stack_size(STACK_BYTES)
        .spawn(command)
    {
        // A panic has printed its message; exit as Rust does after one.
        Ok(thread) => thread.join().unwrap_or(ExitCode::from(101)),
        Err(_) => command(),
    }
}

fn command() -> ExitCode {
    // Past nine tenths of what the process may allocate, the allocator
    // itself stops it with E0810 (memory.rs): later than any stage's own
    // budget, and before the system refuses an allocation.
    msclc::memory::set_ceiling(msclc::memory::budget(0.9));
    let code = match Cli::try_parse() {
        Ok(cli) => run_command(cli),
        // Help, the version, or a usage error, said as clap says them.
        Err(e) => {
            let printed = e.print();
            streams::remember_error(
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
    match streams::failure() {
        None => code,
        Some((stream, why)) => {
            // Said where it still can be; the exit code says it anyway.
            let d = Diagnostic::plain(Code::Unreadable, format!("cannot write {stream}: {why}"));
            let _ = std::io::stderr().write_all(SourceMap::default().render(&[d]).as_bytes());
            ExitCode::from(2)
        }
    }
}

fn run_command(cli: Cli) -> ExitCode {
    match cli.command {
        None => compile(&cli.compile),
        Some(Command::Compile(args)) => compile(&args),
        Some(Command::Sim(args)) => sim(&args),
        Some(Command::Run(args)) => run(&args),
        Some(Command::Install(args)) => install(&args),
        Some(Command::Fmt(args)) => fmt(&args),
        // Standard input or output failed: the editor went away.
        Some(Command::Lsp) => match msclc::lsp::serve() {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => fail(Diagnostic::plain(
                Code::Unreadable,
                format!("the language server stopped: {e}"),
            )),
        },
        Some(Command::Check(args)) if is_plan(&args.input) => {
            match read_checked_plan(&args.input, &args.define, &args.warnings) {
                Ok(_) => ExitCode::SUCCESS,
                Err(code) => code,
            }
        }
        Some(Command::Check(args)) => {
            let c = driver::compile_with(&args.input, &args.define, args.limits.limits());
            match &c.result {
                Ok(_)
                    if args.warnings.report(
                        &c,
                        &args.input,
                        &args.define,
                        args.limits.limits(),
                    ) =>
                {
                    wrong()
                }
                Ok(_) => ExitCode::SUCCESS,
                Err(diags) => report(&c.sources, diags),
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
