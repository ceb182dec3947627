//! How far a program may go: the bounds that turn a runaway program (deep
//! recursion, a list doubled in a loop, a loop over 2^40 ops) into a
//! diagnostic at its line instead of a crash or hours of work, and the
//! checks of values too large for what they set.

use super::value::Value;
use super::{Evaluator, Res};
use crate::diag::{Code, Span};

/// How deep user functions may call each other before we call it runaway recursion.
pub(super) const MAX_CALL_DEPTH: usize = 256;
/// Elements a list may hold, entries a map, and bytes a string: far above what a
/// collective's program builds (a list per rank of a few thousand), low
/// enough that doubling a list in a loop ends in a diagnostic, not in
/// running out of memory.
pub const MAX_ELEMENTS: usize = 1 << 24;
/// Ops a program may emit unless `--max-ops` says otherwise: twice the
/// largest example at 256 ranks (allreduce_pkt records 16.9 million), and
/// about 5 GB while compiling.
pub const MAX_OPS: u64 = 1 << 25;
/// Loop iterations a program may run in all, by default: far above what any
/// collective needs (about twice the largest example at 256 ranks:
/// allreduce_pkt runs 33.7 million),
/// low enough that a runaway loop ends in a diagnostic instead of hanging.
pub const MAX_ITERATIONS: u64 = 1 << 26;

/// How far evaluation may go, and what it keeps for reports.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Loop iterations the program may run.
    pub max_iterations: u64,
    /// Ops the program may emit (`--max-ops`).
    pub max_ops: u64,
    /// Keep with every op and channel the loop values it was made in.
    pub loop_values: bool,
}

impl Limits {
    /// What a language server analyses within on each edit: a sixteenth
    /// of the command line's loop and op budgets (about a quarter of a
    /// second of a runaway loop), with loop values for its reports. The
    /// examples at their defaults stay far inside.
    pub fn editor() -> Limits {
        Limits {
            max_iterations: MAX_ITERATIONS / 16,
            max_ops: MAX_OPS / 16,
            loop_values: true,
        }
    }
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_iterations: MAX_ITERATIONS,
            max_ops: MAX_OPS,
            loop_values: false,
        }
    }
}

impl Evaluator<'_> {
    /// Refuses the op that takes the program past `Limits::max_ops`.
    pub(super) fn within_op_budget(&self, span: Span) -> Res<()> {
        let recorded = self
            .recorder
            .as_ref()
            .map_or(0, super::record::Recorder::ops_recorded);
        let max = self.limits.max_ops;
        if recorded <= max {
            return Ok(());
        }
        Err(self
            .error(Code::Limit, span, format!("too many ops: this call emits op {recorded}, and the maximum is {max}"), "this op is one too many")
            .with_note("help: look for a loop that runs longer than meant, or compile for fewer ranks; `--max-ops N` raises the limit (each op takes about 150 bytes while compiling)"))
    }

    /// Refuses a value of `size` `unit` above [`MAX_ELEMENTS`].
    pub(super) fn within_size(&self, span: Span, size: usize, what: &str, unit: &str) -> Res<()> {
        if size <= MAX_ELEMENTS {
            return Ok(());
        }
        Err(self
            .error(Code::Limit,
                span,
                format!("{what} too large: {size} {unit}"),
                format!("the maximum is {MAX_ELEMENTS} {unit}"),
            )
            .with_note("a collective's program builds lists of ranks and chunks: look for a list or string that grows in a loop".to_string()))
    }

    /// `v` as a count of `what` between 1 and `max`: "must be a positive
    /// integer" below, "too large" with the maximum above.
    pub(super) fn count(&self, span: Span, what: &str, v: &Value, max: u64) -> Res<u32> {
        let max = max.min(u32::MAX as u64);
        match v {
            Value::Int(i) if *i > 0 && *i as u64 <= max => Ok(*i as u32),
            Value::Int(i) if *i > 0 => Err(self.error(
                Code::Limit,
                span,
                format!("{what} is too large: {i}"),
                format!("the maximum is {max}"),
            )),
            _ => Err(self.error(
                Code::OutOfRange,
                span,
                format!("{what} must be a positive integer"),
                format!("this is {v}"),
            )),
        }
    }
}
