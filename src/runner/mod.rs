//! `msclc run`: compiles a plan's CUDA source with NVRTC, runs every rank
//! on one GPU, checks the results against the collective's definition and
//! times the kernel per message size, printing an nccl-tests table.
//!
//! `crate::measure` sizes buffers and checks results; here `nvrtc` finds and calls
//! NVRTC, `cache` keeps the cubins it makes on disk, `gpu` drives the
//! device through cudarc, `table` prints.

pub mod cache;
pub mod gpu;
pub mod nvrtc;
pub mod table;

use crate::diag::Code;
use crate::ir::Dtype;
use std::path::PathBuf;

/// What `msclc run` was asked for.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub dtype: Dtype,
    /// Sizes double from `min_size` up to `max_size` bytes.
    pub min_size: u64,
    pub max_size: u64,
    pub iters: u32,
    pub warmup: u32,
    /// The cubin cache folder (`cache::default_dir()`); None: no cache.
    pub cache: Option<PathBuf>,
    /// How long any one wait of the kernel may spin before it gives up.
    pub timeout: std::time::Duration,
    /// Capture the timed launches of a size in one CUDA graph.
    pub graph: bool,
}

/// Why `msclc run` could not finish.
#[derive(Debug)]
pub enum RunError {
    /// No GPU, NVRTC, memory, ... (`Code::Device`), or a plan with no
    /// CUDA form (`Code::NoCudaForm`).
    Problem(crate::diag::Diagnostic),
    /// A wait of the kernel gave up: the plan deadlocks (or is starved).
    Stuck(Box<crate::back::cuda::report::GaveUp>),
}

impl From<crate::diag::Diagnostic> for RunError {
    fn from(d: crate::diag::Diagnostic) -> RunError {
        RunError::Problem(d)
    }
}

impl From<String> for RunError {
    fn from(message: String) -> RunError {
        RunError::Problem(crate::diag::Diagnostic::plain(
            crate::diag::Code::Device,
            message,
        ))
    }
}

impl From<&str> for RunError {
    fn from(message: &str) -> RunError {
        RunError::from(message.to_string())
    }
}

/// What to tell the user after a run computed a wrong result: what the
/// simulator finds in the very plan that ran, at its program lines where
/// `sources` has them; or, where the simulator verifies the plan, that the
/// wrong result is a defect of msclc (the CUDA back end or the runner)
/// and not of the plan.
pub fn explain_wrong_result(
    plan: &crate::ir::Plan,
    sources: Option<&crate::diag::SourceMap>,
) -> String {
    let report = match simulate_within_memory(plan, 2) {
        Ok(report) => report,
        Err(too_large) => return too_large,
    };
    if report.verdict == crate::sim::Verdict::Verified {
        return format!(
            "msclc sim verifies this plan ({}), so the wrong result is a defect of msclc, not of the plan: please report it with the program, its -D settings and this output\n",
            crate::sim::output::verdict_line(plan, &report)
        );
    }
    at_fault(plan, &report, sources, "")
}

/// The most launches [`explain_stuck`] simulates: a run makes hundreds
/// (1 + warm-up + timed, per size), and a plan that hangs after more than
/// this many is explained by the simulator's warnings instead.
const STUCK_LAUNCHES_SIMULATED: u64 = 64;

/// The most work [`explain_stuck`] gives the simulator, in launches times
/// [`Plan::size`](crate::ir::Plan::size): about 10 s of a plan the
/// simulator is slow on (a 256-rank ring AllReduce runs about 0.4 million
/// a second), and never fewer than the two launches `msclc sim` runs.
const STUCK_SIMULATION_WORK: u64 = 4_000_000;

/// What to tell the user after the kernel stopped waiting in `launch`
/// (1, 2, ...) of a run: what the simulator finds when it runs the plan
/// for as many launches back to back. Semaphores and unconsumed signals
/// carry over from one launch to the next, so a plan that verifies over
/// two launches may hang in the third; the simulator, run as long, hangs
/// there too, or its warnings say which semaphore runs out.
pub fn explain_stuck(
    plan: &crate::ir::Plan,
    sources: Option<&crate::diag::SourceMap>,
    launch: u64,
) -> String {
    use crate::sim::Verdict;
    let affordable = STUCK_SIMULATION_WORK / (plan.size() as u64).max(1);
    let launches = launch.clamp(2, affordable.clamp(2, STUCK_LAUNCHES_SIMULATED)) as u32;
    let report = match simulate_within_memory(plan, launches) {
        Ok(report) => report,
        Err(too_large) => return too_large,
    };
    let line = crate::sim::output::verdict_line(plan, &report);
    let slow_or_defect = "a wait that outlasts --timeout is slow (give it a longer --timeout) or a defect of msclc: please report it with the program, its -D settings and this output";
    match &report.verdict {
        Verdict::Deadlock(_) | Verdict::WrongResult(_) | Verdict::Race(_) => at_fault(
            plan,
            &report,
            sources,
            &format!(" --executions {launches}"),
        ),
        // The launch that stopped is past those simulated: what carries
        // over from launch to launch is all the simulator can point at.
        Verdict::Verified if u64::from(launches) < launch => {
            let carried: Vec<String> = report
                .warnings
                .iter()
                .filter(|w| matches!(w.code, Code::SemaphoreBalance | Code::ChannelPair))
                .map(|w| format!("warning[{}]: {}", w.code.id(), w.message))
                .collect();
            let head = format!(
                "msclc sim --executions {launches} verifies the first {launches} launches back to back ({line}); the kernel stopped in launch {launch}, past those"
            );
            if carried.is_empty() {
                format!("{head}, and nothing carries over from one launch to the next: {slow_or_defect}\n")
            } else {
                format!("{head}, and it warns:\n  {}\n", carried.join("\n  "))
            }
        }
        Verdict::Verified => format!(
            "msclc sim --executions {launches} verifies this plan over {launches} launches back to back ({line}) and finds no deadlock: {slow_or_defect}\n"
        ),
    }
}

/// The simulator's report of `executions` of `plan`, or, when that would
/// take more memory than the simulator's default limit, why there is none.
fn simulate_within_memory(
    plan: &crate::ir::Plan,
    executions: u32,
) -> Result<crate::sim::Report, String> {
    let limit = crate::sim::default_memory_limit();
    if crate::sim::memory_estimate(plan) > limit {
        return Err(format!(
            "the plan is too large for msclc sim to explain what happened within {} MB: run `msclc sim` on it with a larger --max-memory, or on fewer ranks\n",
            limit >> 20
        ));
    }
    Ok(crate::sim::simulate(plan, executions))
}

/// The simulator's problem with the plan, at its program lines; `how`
/// says how long it ran, where that is not the usual two executions.
fn at_fault(
    plan: &crate::ir::Plan,
    report: &crate::sim::Report,
    sources: Option<&crate::diag::SourceMap>,
    how: &str,
) -> String {
    use crate::sim::output::{details, verdict_heading, verdict_line};
    let details = details(report, sources);
    let line = verdict_heading(&verdict_line(plan, report), &details);
    format!("msclc sim{how} finds the plan at fault: {line}\n{details}")
}

/// Parses a byte count: `1024`, `1K`, `4M`, `1G` (powers of 1024).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (digits, scale) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let scale = match c.to_ascii_uppercase() {
                'K' => 1u64 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                // A number with a letter after it: the letter is the
                // problem. Anything else is no size at all.
                _ if !t[..i].is_empty() && t[..i].bytes().all(|b| b.is_ascii_digit()) => {
                    // (Terabytes are written in G: `2T` is `2048G`.)
                    let in_g = t[..i].parse::<u64>().ok().map(|n| n.saturating_mul(1024));
                    let larger = match (c.to_ascii_uppercase(), in_g) {
                        ('T', Some(g)) => format!(": write {t} as {g}G"),
                        _ => String::new(),
                    };
                    return Err(format!("`{text}`: size suffixes are K, M and G{larger}"));
                }
                _ => return Err(format!("`{text}` is not a byte count (like 1024, 64K, 1M)")),
            };
            (&t[..i], scale)
        }
        _ => (t, 1),
    };
    let too_large = || {
        format!(
            "`{text}` is more bytes than msclc counts (at most {} B, 16 EiB)",
            u64::MAX
        )
    };
    match digits.parse::<u64>() {
        Ok(n) => n.checked_mul(scale).ok_or_else(too_large),
        Err(e) if *e.kind() == std::num::IntErrorKind::PosOverflow => Err(too_large()),
        Err(_) => Err(format!("`{text}` is not a byte count (like 1024, 64K, 1M)")),
    }
}

/// Parses `MIN:MAX` (or one size for both).
pub fn parse_size_range(text: &str) -> Result<(u64, u64), String> {
    let (lo, hi) = match text.split_once(':') {
        Some((_, hi)) if hi.contains(':') => {
            return Err(format!(
                "`{text}`: a range is MIN:MAX, two sizes (like 1K:1G), or one size"
            ))
        }
        // (A side left empty is named: "`` is not a byte count" is no help.)
        Some((lo, hi)) if lo.trim().is_empty() || hi.trim().is_empty() => {
            let side = if lo.trim().is_empty() { "MIN" } else { "MAX" };
            return Err(format!(
                "`{text}`: no {side}; a range is MIN:MAX, two sizes (like 1K:1G), or one size"
            ));
        }
        Some((lo, hi)) => (parse_size(lo)?, parse_size(hi)?),
        None => {
            let s = parse_size(text)?;
            (s, s)
        }
    };
    if lo == 0 {
        return Err(format!(
            "`{text}`: a message has at least 1 byte (sizes double from the smallest)"
        ));
    }
    if lo > hi {
        return Err(format!(
            "`{text}`: the smallest size is larger than the largest"
        ));
    }
    Ok((lo, hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_suffixes() {
        assert_eq!(parse_size("1024"), Ok(1024));
        assert_eq!(parse_size("64K"), Ok(65536));
        assert_eq!(parse_size("1m"), Ok(1 << 20));
        assert_eq!(parse_size_range("1K:1G"), Ok((1024, 1 << 30)));
        assert_eq!(parse_size_range("8M"), Ok((8 << 20, 8 << 20)));
        assert!(parse_size("12Q").is_err());
        assert!(parse_size_range("2M:1M").is_err());
        assert!(parse_size_range("0:1K").is_err());
        assert!(parse_size_range("0").is_err());
        assert_eq!(
            parse_size_range("1K:"),
            Err("`1K:`: no MAX; a range is MIN:MAX, two sizes (like 1K:1G), or one size".into())
        );
        assert!(parse_size_range(":1K").is_err_and(|e| e.contains("no MIN")));
        // A third size is said as such, not as a size that is no count.
        let three = parse_size_range("1K:1K:1K").unwrap_err();
        assert!(three.contains("a range is MIN:MAX"), "{three}");
        // Past u64::MAX bytes, said as such (not as a malformed count).
        for past in [
            "99999999999G",
            "99999999999999999999",
            "18446744073709551616",
        ] {
            let why = parse_size(past).unwrap_err();
            assert!(why.contains("is more bytes than msclc counts"), "{why}");
        }
        assert_eq!(parse_size("18446744073709551615"), Ok(u64::MAX));
        assert!(parse_size("1.5K")
            .unwrap_err()
            .contains("is not a byte count"));
        // A word is no size; a number with another letter, a suffix wrong.
        assert!(parse_size("abc")
            .unwrap_err()
            .contains("is not a byte count"));
        assert_eq!(
            parse_size("4T").unwrap_err(),
            "`4T`: size suffixes are K, M and G: write 4T as 4096G"
        );
    }

    /// A two-rank AllGather; with `wrong`, rank 0 then overwrites what
    /// rank 1 sent it with its own chunk.
    fn allgather(wrong: bool) -> (crate::ir::Plan, crate::diag::SourceMap) {
        let overwrite = if wrong {
            "rank(0).copy(rank(0).output[1], rank(0).output[0], tb: 0)"
        } else {
            ""
        };
        let text = format!(
            r#"
program "ag" {{ collective = allgather(2, chunk_factor: 1, inplace: true) }}
for src in 0..2 {{
    let dst = 1 - src
    let channel = memory_channel(dst, src)
    channel.signal(tb: 0, relaxed: true)
    channel.wait(tb: 0, data_sync: after, relaxed: true)
    channel.put(rank(dst).output[src], rank(src).output[src], tb: 0)
    channel.signal(tb: 0, data_sync: before)
    channel.wait(tb: 0, data_sync: after)
}}
{overwrite}
"#
        );
        let c = crate::driver::compile_source(std::path::Path::new("ag.mscl"), text, &[]);
        (c.result.expect("compiles"), c.sources)
    }

    #[test]
    fn a_wrong_result_is_explained_by_the_simulator_at_the_program_line() {
        let (plan, sources) = allgather(true);
        let text = explain_wrong_result(&plan, Some(&sources));
        assert!(
            text.starts_with("msclc sim finds the plan at fault: wrong result: execution 1: rank 0 output chunk 1"),
            "{text}"
        );
        assert!(text.contains("lacks rank 1's input chunk 0"), "{text}");
        assert!(text.contains("ag.mscl:12:1"), "{text}");
        assert!(text.contains("the chunk was last written here"), "{text}");
    }

    #[test]
    fn a_wrong_result_of_a_verified_plan_is_a_defect_of_msclc() {
        let (plan, sources) = allgather(false);
        let text = explain_wrong_result(&plan, Some(&sources));
        assert!(
            text.starts_with("msclc sim verifies this plan (verified: allgather on 2 ranks"),
            "{text}"
        );
        assert!(text.contains("a defect of msclc"), "{text}");
    }
}
