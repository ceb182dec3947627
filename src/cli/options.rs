//! The options several commands share: `-D` params, what becomes of
//! warnings, the bounds on compiling, the element type.

use clap::Args;
use msclc::diag::Diagnostic;
use msclc::driver;
use msclc::units::grouped;

pub(crate) fn parse_define(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((name, value)) if !name.is_empty() => Ok((name.to_string(), value.to_string())),
        _ => Err(format!("`{s}` is not NAME=VALUE")),
    }
}

/// What becomes of warnings.
#[derive(Debug, Default, Args)]
pub(crate) struct WarningArgs {
    /// Treat warnings as errors: print them, write nothing, exit 1.
    #[arg(long)]
    pub(crate) deny_warnings: bool,
    /// Print no warnings (errors are still printed).
    #[arg(short, long, conflicts_with = "deny_warnings")]
    pub(crate) quiet: bool,
}

impl WarningArgs {
    /// Compiles `input`, looking for the plan's warnings unless they would
    /// not be shown.
    pub(crate) fn compile(
        &self,
        input: &std::path::Path,
        defines: &[(String, String)],
        limits: msclc::eval::Limits,
    ) -> driver::Compilation {
        match self.quiet {
            true => driver::compile_quietly(input, defines, limits),
            false => driver::compile_with(input, defines, limits),
        }
    }

    /// `compile` for a plan that is only checked or written as JSON (its
    /// instances made as it is written).
    pub(crate) fn compile_leaving_instances(
        &self,
        input: &std::path::Path,
        defines: &[(String, String)],
        limits: msclc::eval::Limits,
    ) -> driver::Compilation {
        driver::compile_leaving_instances(input, defines, limits, !self.quiet)
    }

    /// Prints the warnings of `c` on standard error, unless quiet; whether
    /// they stop the command.
    pub(crate) fn report(&self, c: &driver::Compilation) -> bool {
        if !self.quiet && !c.warnings.is_empty() {
            print_warnings(c, self);
        }
        self.denied(&c.warnings)
    }

    /// Whether `warnings` stop the command.
    pub(crate) fn denied(&self, warnings: &[Diagnostic]) -> bool {
        self.deny_warnings && !warnings.is_empty()
    }

    /// `warnings` as they are shown: as errors under `--deny-warnings`.
    pub(crate) fn shown(&self, warnings: &[Diagnostic]) -> Vec<Diagnostic> {
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

/// A parser of a whole number from `least` to `most` that says, when the
/// text is none, what the number counts (`` `abc` is not a number of ranks
/// from 1 to 4,294,967,295 ``): clap's own says "invalid digit found in
/// string", and past the type's range "too large to fit".
pub(crate) fn count<T: TryFrom<u64>>(
    what: &'static str,
    least: u64,
    most: u64,
) -> impl Fn(&str) -> Result<T, String> + Clone {
    move |s| {
        s.parse::<u64>()
            .ok()
            .filter(|n| (least..=most).contains(n))
            .and_then(|n| T::try_from(n).ok())
            .ok_or_else(|| {
                format!(
                    "`{s}` is not {what} from {} to {}",
                    grouped(least),
                    grouped(most)
                )
            })
    }
}

/// Prints `c`'s warnings, with the loop values at their lines.
pub(crate) fn print_warnings(c: &driver::Compilation, how: &WarningArgs) {
    tell!("{}", c.sources.render(&how.shown(&c.warnings)));
}

/// Bounds on what compiling a program may do.
#[derive(Debug, Default, Args)]
pub(crate) struct LimitArgs {
    /// Stop with an error when the program emits more ops than this (a
    /// runaway loop ends soon). The default, 67108864 (2^26), admits every
    /// example at 256 ranks four times over, and allreduce at 1,024 ranks.
    /// A larger N lets the program take as many steps (loop iterations,
    /// calls) too.
    #[arg(long, value_name = "N", value_parser = count::<u64>("a number of ops", 1, u64::MAX))]
    pub(crate) max_ops: Option<u64>,
    /// Evaluate the program on N threads, each recording the ops of a
    /// share of the ranks (the plan is the same on any number). The
    /// default takes one per core, up to 8, where the plan has 24 ranks
    /// or more; under an address-space limit (`ulimit -v`), one thread.
    #[arg(long, value_name = "N", value_parser = count::<u32>("a number of threads", 1, 1024))]
    pub(crate) threads: Option<u32>,
}

impl LimitArgs {
    pub(crate) fn limits(&self) -> driver::Limits {
        let max_ops = self.max_ops.unwrap_or(msclc::eval::MAX_OPS);
        driver::Limits {
            max_ops,
            // A program let emit more ops may take as many steps: its
            // loops are what emit them.
            max_iterations: max_ops.max(msclc::eval::MAX_ITERATIONS),
            threads: self.threads.map(|n| n as usize),
            ..driver::Limits::command()
        }
    }

    /// An E0803 error where one of these bounds on evaluating a program is
    /// given with `plan`, a JSON plan: nothing is evaluated, and a bound
    /// quietly ignored would let the user believe it held.
    pub(crate) fn refuse_for_plan(&self, plan: &std::path::Path) -> Result<(), Diagnostic> {
        let given = match (self.max_ops, self.threads) {
            (Some(_), _) => "--max-ops",
            (None, Some(_)) => "--threads",
            (None, None) => return Ok(()),
        };
        Err(Diagnostic::plain(
            msclc::diag::Code::Options,
            format!(
                "{given}: {} is a JSON plan, read as written ({given} bounds the evaluation of a .mscl program: leave it out)",
                plan.display()
            ),
        ))
    }
}

/// An element type, as msclc names it or as nccl-tests does (`-d float`,
/// `half`: the names its tables, and msclc's, print in the `type` column).
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum DtypeArg {
    #[value(alias = "float")]
    Float32,
    #[value(alias = "half")]
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

#[cfg(test)]
mod tests {
    use super::LimitArgs;
    use msclc::eval::{MAX_ITERATIONS, MAX_OPS};

    /// `--max-ops N` past the default lets the program take N steps too
    /// (allreduce at 2,048 ranks needs more of both); below it, the step
    /// budget stays the default.
    #[test]
    fn max_ops_raises_the_step_budget_with_it() {
        let limits = |max_ops| {
            LimitArgs {
                max_ops: Some(max_ops),
                threads: None,
            }
            .limits()
        };
        assert_eq!(limits(MAX_OPS).max_iterations, MAX_ITERATIONS);
        assert_eq!(limits(1 << 28).max_iterations, 1 << 28);
        assert_eq!(limits(1000).max_iterations, MAX_ITERATIONS);
        assert_eq!(limits(1000).max_ops, 1000);
        let default = LimitArgs {
            max_ops: None,
            threads: None,
        };
        assert_eq!(default.limits().max_ops, MAX_OPS);
    }

    /// The help states the default op budget as the constant has it.
    #[test]
    fn the_help_states_the_default_op_budget() {
        use clap::CommandFactory;
        let mut cli = crate::Cli::command();
        let help = cli
            .find_subcommand_mut("sim")
            .unwrap()
            .render_help()
            .to_string();
        assert!(
            help.contains(&format!("The default, {MAX_OPS} (2^{})", MAX_OPS.ilog2())),
            "{help}"
        );
    }
}
