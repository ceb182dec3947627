//! `msclc run`: a program or plan compiled to CUDA, built with NVRTC and
//! run on this machine's GPU, each result checked, an nccl-tests table.

use super::input::{is_plan, load_plan, read_checked_plan, Compile};
use super::options::{count, parse_define, DtypeArg, LimitArgs, WarningArgs};
use super::outcome::{fail, fail_in, report, wrong};
use super::streams;
use clap::Args;
use msclc::diag::{Code, Diagnostic};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// The .mscl program (`-`: read from standard input) or a .json
    /// execution plan.
    pub(crate) input: PathBuf,
    /// Sets a `param` the program declares (repeatable).
    #[arg(short = 'D', value_name = "NAME=VALUE", value_parser = parse_define)]
    pub(crate) define: Vec<(String, String)>,
    /// Number of ranks: sets the program's param that decides it.
    #[arg(long, value_name = "N", value_parser = count::<u32>("a number of ranks", 1, u32::MAX as u64))]
    pub(crate) nranks: Option<u32>,
    /// Message sizes in bytes, doubling from MIN to MAX (K, M, G suffixes).
    #[arg(long, allow_hyphen_values = true, value_name = "MIN:MAX", default_value = "1K:256M", value_parser = msclc::runner::parse_size_range)]
    pub(crate) size: (u64, u64),
    /// Element type of the data (`float` and `half`, as nccl-tests names them, are float32 and float16).
    #[arg(long, value_enum, default_value = "float32")]
    pub(crate) dtype: DtypeArg,
    /// Timed launches per size, 1 to 1,000,000.
    #[arg(long, default_value_t = 20, value_parser = launches(1))]
    pub(crate) iters: u32,
    /// Untimed launches before them, 0 to 1,000,000.
    #[arg(long, default_value_t = 5, value_parser = launches(0))]
    pub(crate) warmup: u32,
    /// Capture each size's timed launches in one CUDA graph and time its
    /// launch: the time per launch without the host's cost of issuing it
    /// (as nccl-tests' -G). The d2d copy is timed the same way.
    #[arg(long)]
    pub(crate) graph: bool,
    /// Compile the kernel afresh and keep no copy: skip the cubin cache
    /// ($MSCLC_CACHE_DIR, else $XDG_CACHE_HOME/msclc, else ~/.cache/msclc).
    #[arg(long)]
    pub(crate) no_cache: bool,
    /// Seconds any one wait of the kernel (signal, barrier, semaphore,
    /// packet) may spin, 0.001 to 1e9: then the kernel stops, and msclc
    /// says which rank, thread block and op waited for what, and exits 1.
    #[arg(long, value_name = "SECONDS", default_value = "5", value_parser = parse_seconds)]
    pub(crate) timeout: std::time::Duration,
    #[command(flatten)]
    pub(crate) limits: LimitArgs,
}

/// A count of launches from `least` to a million.
fn launches(least: u64) -> impl Fn(&str) -> Result<u32, String> + Clone {
    count("a count of launches", least, 1_000_000)
}

/// A wait's budget: from a millisecond (the kernel counts it in
/// nanoseconds, and a budget of none gives up at once) to 1e9 seconds.
pub(crate) fn parse_seconds(s: &str) -> Result<std::time::Duration, String> {
    s.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && (0.001..=1e9).contains(v))
        .map(std::time::Duration::from_secs_f64)
        .ok_or_else(|| format!("`{s}` is not a number of seconds from 0.001 to 1e9"))
}

/// `msclc run`: the plan on this machine's GPU.
pub(crate) fn exec(args: &RunArgs) -> ExitCode {
    let how = args.nranks.map_or(Compile::Plain, Compile::ForRanks);
    // A plan is checked as `check` checks it: what it will not pair is
    // refused before a GPU spins on it.
    let loaded = if is_plan(&args.input) {
        read_checked_plan(
            &args.input,
            (&args.define, &args.limits),
            how,
            &WarningArgs::default(),
        )
        .map(|plan| (plan, None))
    } else {
        load_plan(&args.input, (&args.define, &args.limits), how).map(|l| (l.plan, l.sources))
    };
    let (plan, sources) = match loaded {
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
        graph: args.graph,
    };
    let mut out = streams::Stdout;
    let result = msclc::runner::gpu::run(&plan, &opts, &mut out);
    let _ = out.flush();
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            let sources = sources.as_ref();
            tell!("{}", msclc::runner::explain_wrong_result(&plan, sources));
            wrong()
        }
        Err(msclc::runner::RunError::Problem(d)) => fail_in(sources.as_ref(), &args.input, d),
        Err(msclc::runner::RunError::Stuck(gave_up)) => {
            let message = format!("the kernel stopped waiting: {gave_up}");
            let mut notes = Vec::new();
            // What carries over matters from the second launch on.
            if gave_up.waited && gave_up.launch > 1 {
                notes.push(format!(
                    "in launch {} of this run: the kernel, like the executor, carries semaphores and signals over from launch to launch, and `msclc run` launches each size 1 + --warmup + --iters times",
                    gave_up.launch
                ));
            }
            notes.push("`--timeout` gives slow waits longer".to_string());
            let with_notes = |d: Diagnostic| notes.iter().fold(d, |d, n| d.with_note(n.clone()));
            let sources = sources.as_ref();
            // Point at the op in the program, where it was compiled here.
            let code = match (sources, gave_up.span) {
                (Some(sources), Some(span)) => {
                    let d = Diagnostic::error(Code::KernelStuck, span, message, "this op waited");
                    report(sources, &[with_notes(d)])
                }
                _ => fail(with_notes(Diagnostic::plain(Code::KernelStuck, message))),
            };
            // A wait: the simulator, run as long, says why; packets off
            // their slots are a layout fault it does not model.
            if gave_up.waited {
                tell!(
                    "{}",
                    msclc::runner::explain_stuck(&plan, sources, gave_up.launch)
                );
            }
            code
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_seconds;

    /// `--timeout` takes the range its message states, both ends included.
    #[test]
    fn a_timeout_is_taken_from_a_millisecond_to_1e9_seconds() {
        for taken in ["0.001", "5", "1e9", "1000000000"] {
            assert!(parse_seconds(taken).is_ok(), "{taken}");
        }
        for refused in ["0.0009", "0", "-1", "1000000001", "inf", "nan", "five"] {
            let why = parse_seconds(refused).unwrap_err();
            assert!(
                why.ends_with("is not a number of seconds from 0.001 to 1e9"),
                "{why}"
            );
        }
    }
}
