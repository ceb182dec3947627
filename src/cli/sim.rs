//! `msclc sim`: a program or plan executed on the CPU, its verdict, and
//! with `--timing` its predicted time.

use super::input::{load_plan, Compile};
use super::options::{count, parse_define, DtypeArg, LimitArgs};
use super::outcome::{fail, rendered, wrong};
use clap::Args;
use msclc::diag::{Code, Diagnostic};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Debug, Args)]
pub(crate) struct SimArgs {
    /// The .mscl program (`-`: read from standard input) or a .json
    /// execution plan.
    pub(crate) input: PathBuf,
    /// Sets a `param` the program declares (repeatable).
    #[arg(short = 'D', value_name = "NAME=VALUE", value_parser = parse_define)]
    pub(crate) define: Vec<(String, String)>,
    /// Number of ranks: sets the program's param that decides it, as
    /// `msclc run --nranks` does.
    #[arg(long, value_name = "N", value_parser = count::<u32>("a number of ranks", 1, u32::MAX as u64))]
    pub(crate) nranks: Option<u32>,
    /// The buffers to run with: as the plan declares, in-place (output
    /// aliasing input, as the MSCCL++ test harness lays them out),
    /// out-of-place, or both (a plan that works in one mode only says so).
    #[arg(long, value_enum, default_value = "declared")]
    pub(crate) buffers: BuffersArg,
    /// Warn when a rank's thread blocks cannot all be resident at once on
    /// this GPU (a known cause of hangs in the executor).
    #[arg(long, value_name = "GPU", value_parser = parse_target)]
    pub(crate) target: Option<&'static msclc::sim::Target>,
    /// Refuse (exit code 2) a plan whose simulation is estimated to take
    /// more memory than this (K, M, G suffixes); by default 8G, or three
    /// quarters of the memory this process may have, whichever is less.
    /// More than the process may have is refused whatever this says.
    #[arg(long, allow_hyphen_values = true, value_name = "BYTES", value_parser = msclc::runner::parse_size)]
    pub(crate) max_memory: Option<u64>,
    /// Executions to run back to back: semaphores and unconsumed signals
    /// carry over from one to the next, as on the executor, so a plan
    /// right twice may hang or go wrong later (`msclc run` names the
    /// launch where it stopped)
    #[arg(long, value_name = "N", default_value_t = 2, conflicts_with = "timing",
          value_parser = count::<u32>("a number of executions", 1, msclc::sim::MAX_EXECUTIONS as u64))]
    pub(crate) executions: u32,
    /// Print the verdict line only (no details, no warnings), and with
    /// --timing its table.
    #[arg(short, long)]
    pub(crate) quiet: bool,
    /// Print one JSON object: the verdict, each problem with its locations,
    /// the warnings (not with --timing and its options).
    // (Each named: clap leaves the timing options' `requires` unchecked
    // once --json conflicts with --timing, and they went unused.)
    #[arg(long, conflicts_with_all = ["quiet", "timing", "size", "dtype", "trace", "svg", "explain"])]
    pub(crate) json: bool,
    #[command(flatten)]
    pub(crate) timing: TimingArgs,
    #[command(flatten)]
    pub(crate) limits: LimitArgs,
}

/// `msclc sim --timing`: the predicted time.
#[derive(Debug, Args)]
pub(crate) struct TimingArgs {
    /// Predict how long the plan takes on this topology: a built-in
    /// (h100-nvlink, h100-nvls, h100-ib, emulated-h100) or a JSON file
    /// (docs/timing.md). Prints a table in the nccl-tests form (--explain
    /// adds where one size's time goes)
    #[arg(long, value_name = "TOPOLOGY")]
    pub(crate) timing: Option<String>,
    /// Message sizes to predict, doubling from MIN to MAX (K, M, G suffixes)
    #[arg(long, allow_hyphen_values = true, value_name = "MIN:MAX", default_value = "1K:1G", requires = "timing", value_parser = msclc::runner::parse_size_range)]
    pub(crate) size: (u64, u64),
    /// Element type of the data (`float` and `half`, as nccl-tests names them, are float32 and float16)
    #[arg(long, value_enum, default_value = "float32", requires = "timing")]
    pub(crate) dtype: DtypeArg,
    /// Write the largest size's predicted timeline in Chrome trace-event
    /// JSON (opens in Perfetto and chrome://tracing)
    #[arg(long, value_name = "FILE", requires = "timing")]
    pub(crate) trace: Option<PathBuf>,
    /// Write the largest size's predicted timeline as an SVG picture
    #[arg(long, value_name = "FILE", requires = "timing")]
    pub(crate) svg: Option<PathBuf>,
    /// Print where the time of one size goes: its critical path, the
    /// largest size of the table at or below SIZE (K, M, G suffixes)
    #[arg(long, allow_hyphen_values = true, value_name = "SIZE", requires = "timing", value_parser = msclc::runner::parse_size)]
    pub(crate) explain: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum BuffersArg {
    Declared,
    InPlace,
    OutOfPlace,
    Both,
}

pub(crate) fn parse_target(s: &str) -> Result<&'static msclc::sim::Target, String> {
    msclc::sim::TARGETS
        .iter()
        .find(|t| t.name == s.to_ascii_lowercase())
        .ok_or_else(|| {
            let names: Vec<&str> = msclc::sim::TARGETS.iter().map(|t| t.name).collect();
            format!("`{s}` is not a GPU msclc knows: {}", names.join(", "))
        })
}

/// `msclc sim`: simulate a .mscl program or a JSON plan.
pub(crate) fn exec(args: &SimArgs) -> ExitCode {
    use msclc::sim::output::{details, json_report, verdict_heading, verdict_line, Run};
    let t = &args.timing;
    let outputs: Vec<super::input::Output> = [
        ("--trace", &t.trace, "trace.json"),
        ("--svg", &t.svg, "timeline.svg"),
    ]
    .into_iter()
    .filter_map(|(flag, path, example)| Some((flag, path.as_deref()?, example)))
    .collect();
    // `-` is standard output elsewhere (`-o -`); here that carries the
    // verdict and the table, and a file named `-` is no one's intent.
    if let Some((flag, ..)) = outputs.iter().find(|(_, p, _)| p.as_os_str() == "-") {
        return fail(Diagnostic::plain(
            Code::Options,
            format!("{flag} -: the timeline goes to a file (standard output has the verdict and the table); name one"),
        ));
    }
    let topology_file = t.timing.as_deref().map(Path::new);
    let inputs: Vec<&Path> = std::iter::once(args.input.as_path())
        .chain(topology_file)
        .collect();
    if let Err(d) = super::input::distinct_outputs(&outputs, &inputs) {
        return fail(d);
    }
    let loaded = match load_plan(
        &args.input,
        (&args.define, &args.limits),
        Compile::ForReports(args.nranks),
    ) {
        Ok(loaded) => loaded,
        Err(code) => return code,
    };
    let (plan, sources, compiled_warnings) = (loaded.plan, loaded.sources, loaded.warnings);
    let sources = sources.as_ref();
    if let Err(d) = super::input::outputs_spare_imports(&outputs, sources) {
        return fail(d);
    }
    let needs = msclc::sim::memory_estimate(&plan);
    let max_memory = args
        .max_memory
        .unwrap_or_else(msclc::sim::default_memory_limit);
    // A --max-memory above what the machine has now is no promise it can
    // keep: the process would be killed for memory part way through. And
    // past what the machine has, raising --max-memory is no advice.
    if let Some(have) = msclc::memory::available().filter(|have| needs > *have) {
        let size = msclc::units::human_bytes;
        return fail(Diagnostic::plain(Code::Memory, format!(
            "simulating this plan ({} ranks) would take about {}, more than this machine lets msclc have now ({}), whatever --max-memory says: simulate the program at fewer ranks, or on a machine with more memory",
            plan.ranks.len(),
            size(needs),
            size(have)
        )));
    }
    if needs > max_memory {
        let size = msclc::units::human_bytes;
        let bound = match args.max_memory {
            Some(_) => format!("--max-memory {}", size(max_memory)),
            None => format!(
                "the {} msclc takes by default (at most 8 GiB, and three quarters of what it may allocate; --max-memory sets it)",
                size(max_memory)
            ),
        };
        return fail(Diagnostic::plain(Code::Memory, format!(
            "simulating this plan ({} ranks, {} thread blocks) would take about {}, more than {bound}: raise --max-memory, or simulate the program at fewer ranks",
            plan.ranks.len(),
            plan.ranks.iter().map(|r| r.threadblocks.len()).sum::<usize>(),
            size(needs),
        )));
    }
    let declared = plan.collective.inplace;
    // A simulation of the executions asked, in one buffer mode.
    let options_in = |inplace: bool, progress: bool| msclc::sim::SimOptions {
        executions: args.executions,
        inplace: Some(inplace),
        progress,
        pipeline_chunk: None,
    };
    let modes = match args.buffers {
        BuffersArg::Declared => vec![declared],
        BuffersArg::InPlace => vec![true],
        BuffersArg::OutOfPlace => vec![false],
        BuffersArg::Both => vec![declared, !declared],
    };
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
    // Warnings about the plan on the machine asked for: the GPU's resident
    // blocks (`--target`, else the timing topology's GPU, as `tune` asks),
    // memory channels across the topology's nodes.
    let gpu = match (args.target, &topology) {
        (Some(target), _) => Some(*target),
        (None, Some(t)) => Some(msclc::sim::Target::hopper_with(t.sms)),
        (None, None) => None,
    };
    let mut on_machine: Vec<Diagnostic> = gpu
        .and_then(|gpu| msclc::sim::residency(&plan, &gpu))
        .into_iter()
        .collect();
    if let Some(t) = &topology {
        on_machine.extend(msclc::timing::node_memory_channels(&plan, t));
    }
    // The timing model times the first buffer mode's execution.
    let mut recorded: Option<(msclc::sim::record::Run, msclc::sim::SimOptions)> = None;
    let runs: Vec<Run> = modes
        .into_iter()
        .map(|inplace| {
            let options = options_in(inplace, !args.quiet && !args.json);
            let before = msclc::memory::start_peak();
            let mut report = if topology.is_some() && recorded.is_none() {
                let (report, run) = msclc::sim::simulate_recorded(&plan, &options);
                recorded = Some((run, options));
                report
            } else {
                msclc::sim::simulate_with(&plan, &options)
            };
            let peak_bytes = msclc::memory::peak_bytes().saturating_sub(before);
            report.warnings.extend(on_machine.iter().cloned());
            // The compile's warnings the simulation does not find again
            // of the plan (those of the program's text: W0108), first.
            let found_again = |w: &Diagnostic| {
                let at = |d: &Diagnostic| d.primary.as_ref().map(|l| l.span);
                report
                    .warnings
                    .iter()
                    .any(|r| r.code == w.code && at(r) == at(w))
            };
            let compile_only: Vec<Diagnostic> = compiled_warnings
                .iter()
                .filter(|w| !found_again(w))
                .cloned()
                .collect();
            report.warnings.splice(0..0, compile_only);
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
        let details = match args.quiet {
            true => String::new(),
            false => details(&run.report, sources),
        };
        let line = verdict_heading(&verdict_line(&plan, &run.report), &details);
        if several {
            let declared = if run.declared { " (declared)" } else { "" };
            sayln!("{}{declared}: {line}", run.buffers);
        } else {
            sayln!("{line}");
        }
        say!("{details}");
    }
    // A problem in the mode declared (a wrong result, a race), where the
    // other mode works: the collective's `inplace` is what is wrong. (A
    // detail: not under -q.)
    if let ([run], false) = (&runs[..], args.quiet) {
        if !verified(run) && run.declared {
            let other = msclc::sim::simulate_with(&plan, &options_in(!declared, false));
            if other.verdict == msclc::sim::Verdict::Verified {
                let (works, declares) = match declared {
                    true => ("out-of-place", "in-place"),
                    false => ("in-place", "out-of-place"),
                };
                sayln!(
                    "note: the plan works {works}, but declares {declares}: declare the collective `inplace: {}` (--buffers both runs both)",
                    !declared
                );
            }
        }
    }
    if let [first, second] = &runs[..] {
        if verified(first) != verified(second) && !args.quiet {
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
    if let (Some(topology), Some((run, simulated))) = (&topology, &recorded) {
        let t = &args.timing;
        let title = msclc::driver::source_name(&args.input);
        let request = msclc::timing::Request {
            topology,
            dtype: t.dtype.into(),
            sizes: t.size,
            simulated: *simulated,
            trace: t.trace.as_deref(),
            svg: t.svg.as_deref(),
            explain: t.explain,
            title: &title,
        };
        // A plan that hangs only in a later launch (a semaphore run
        // down) still has the time of its first, which is what is timed.
        let later_deadlock = run.stuck.is_empty()
            && matches!(runs[0].report.verdict, msclc::sim::Verdict::Deadlock(_));
        if later_deadlock {
            sayln!(
                "# the plan deadlocks in a later execution: the times below are those of its first"
            );
        }
        match msclc::timing::predict_report(&plan, run, &request) {
            Ok(prediction) => {
                say!("{}", prediction.text);
                if prediction.unverified {
                    return wrong();
                }
            }
            Err(d) => return fail(d),
        }
    }
    code
}
