//! How far a program may go: the bounds that turn a runaway program (deep
//! recursion, a list doubled in a loop, a loop over 2^40 ops) into a
//! diagnostic at its line instead of a crash or hours of work, and the
//! checks of values too large for what they set.

use super::value::Value;
use super::{Evaluator, Res};
use crate::diag::{Code, Diagnostic, Span};

/// How deep user functions may call each other before we call it runaway recursion.
pub(super) const MAX_CALL_DEPTH: usize = 256;
/// Elements a list may hold, entries a map, and bytes a string: far above what a
/// collective's program builds (a list per rank of a few thousand), low
/// enough that doubling a list in a loop ends in a diagnostic, not in
/// running out of memory.
pub const MAX_ELEMENTS: usize = 1 << 24;
/// Ops a program may emit unless `--max-ops` says otherwise: as many as
/// the steps a program may take ([`MAX_ITERATIONS`]), so that a runaway
/// loop of one op ends no later than a loop of none, and enough for the
/// plans of clusters (allreduce at 1,024 ranks issues 50.3 million; the
/// largest example at 256 ranks, allreduce_pkt, 16.9 million). What the
/// ops take while compiling (about 170 bytes each before fusion) is
/// bounded by `Limits::max_memory`, not by this.
pub const MAX_OPS: u64 = 1 << 26;
/// Steps a program may take in all, by default: a loop iteration and a
/// call are a step each, and work on a large value a step per
/// `ELEMENTS_PER_STEP` elements or `BYTES_PER_STEP` bytes. Far above
/// what any collective needs (about twice the largest example at 256
/// ranks: allreduce_pkt runs 33.7 million iterations), low enough that a
/// runaway loop ends in a diagnostic within seconds instead of hanging.
pub const MAX_ITERATIONS: u64 = 1 << 26;
/// List elements (or map entries) copied or scanned in about the time of
/// one loop iteration.
pub(super) const ELEMENTS_PER_STEP: usize = 16;
/// String bytes copied in about the time of one loop iteration.
pub(super) const BYTES_PER_STEP: usize = 256;

/// How far evaluation may go.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Steps the program may take: loop iterations, calls, and work on
    /// large values ([`MAX_ITERATIONS`]).
    pub max_iterations: u64,
    /// Ops the program may emit (`--max-ops`).
    pub max_ops: u64,
    /// Live heap bytes ([`crate::memory::live_bytes`]) past which the
    /// program is stopped, at its line, with E0810.
    pub max_memory: u64,
    /// The most threads evaluation runs on (`--threads`), each recording
    /// a share of the ranks' ops (`shard.rs`); `None`: one per core.
    pub threads: Option<usize>,
    /// Whether these are the editor's budgets ([`Limits::editor`]): a
    /// program past them may well compile, so running out of one is said
    /// as where checking stopped, not as an error of the program.
    pub in_editor: bool,
}

impl Limits {
    /// What a language server analyses within on each edit: a sixteenth
    /// of the command line's loop and op budgets (about a quarter of a
    /// second of a runaway loop). The examples at their defaults stay far
    /// inside.
    pub fn editor() -> Limits {
        Limits {
            max_iterations: MAX_ITERATIONS / 16,
            max_ops: MAX_OPS / 16,
            max_memory: crate::memory::budget(0.25),
            threads: None,
            in_editor: true,
        }
    }
}

impl Limits {
    /// What a command compiles within: the defaults, and half of the
    /// memory the process may still allocate ([`crate::memory::budget`]:
    /// the other half leaves room for a vector's last doubling and the
    /// passes after evaluation).
    pub fn command() -> Limits {
        Limits {
            max_memory: crate::memory::budget(0.5),
            ..Limits::default()
        }
    }
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_iterations: MAX_ITERATIONS,
            max_ops: MAX_OPS,
            max_memory: u64::MAX,
            threads: None,
            in_editor: false,
        }
    }
}

impl Evaluator<'_> {
    /// Takes `steps` from the program's budget; false once it is spent.
    pub(super) fn spend(&mut self, steps: u64) -> bool {
        self.steps = self.steps.saturating_add(steps);
        self.steps <= self.limits.max_iterations && !self.cancelled()
    }

    /// Spends a step for every [`ELEMENTS_PER_STEP`] of `elements` the
    /// expression at `span` copies or scans (or every [`BYTES_PER_STEP`]
    /// of a string's bytes: `bytes` true): a loop that copies a large value
    /// runs out of budget as a long loop does, not for hours.
    pub(super) fn work(&mut self, span: Span, size: usize, bytes: bool) -> Res<()> {
        let per_step = if bytes {
            BYTES_PER_STEP
        } else {
            ELEMENTS_PER_STEP
        };
        if self.spend((size / per_step) as u64) {
            return Ok(());
        }
        Err(self.too_long(span, "stopped here"))
    }

    /// Spends the steps that comparing or hashing `v`, at `span`, walks
    /// (a step per [`ELEMENTS_PER_STEP`] of its parts, counted only as far
    /// as the steps left reach): a value of lists sharing lists, doubled
    /// in a loop, has more parts than any loop could walk.
    #[inline]
    pub(super) fn walk_parts(&mut self, span: Span, v: &Value) -> Res<()> {
        if !matches!(v, Value::List(_) | Value::Tuple(_) | Value::Map(_)) {
            return Ok(());
        }
        self.walk_composite(span, v)
    }

    /// [`Self::walk_parts`] of a list, tuple or map: apart, so that the
    /// keys most maps have (ints, pairs of ints) cost a test of their kind.
    fn walk_composite(&mut self, span: Span, v: &Value) -> Res<()> {
        let left = self.limits.max_iterations.saturating_sub(self.steps);
        let most = left.saturating_mul(ELEMENTS_PER_STEP as u64);
        let parts = v.parts_up_to(most);
        if parts < most {
            return self.work(span, parts as usize, false);
        }
        self.steps = self.limits.max_iterations.saturating_add(1);
        Err(self.over_budget(
            self.error(
                Code::Limit,
                span,
                format!("this value is too large to compare or hash: more than the {} parts the program's steps left allow", crate::units::grouped(most)),
                "stopped here",
            )
            .with_note("help: a list, tuple or map that holds one value several times counts its parts each time it holds it (a list of a list twice, nested 60 times, has 2^61): compare or key by something smaller, such as an index"),
        ))
    }

    /// "this program runs too long", at `span`.
    pub(super) fn too_long(&self, span: Span, label: &str) -> Diagnostic {
        self.over_budget(self.error(Code::Limit, span, "this program runs too long", label)
            .with_note(format!(
                "help: the program took {} steps (loop iterations, function calls, and a step per {ELEMENTS_PER_STEP} elements or {BYTES_PER_STEP} bytes of large values copied or compared); check its loops' bounds and its recursion (a program this large on purpose: --max-ops N raises the steps to N too)",
                self.limits.max_iterations
            )))
    }

    /// `d`, a budget run out, as the editor shows it where its analysis
    /// ran within [`Limits::editor`]: a warning that checking stopped
    /// there, since `msclc check` may well get through.
    fn over_budget(&self, mut d: Diagnostic) -> Diagnostic {
        if !self.limits.in_editor {
            return d;
        }
        d.message = format!("the editor stopped checking here: {}", d.message);
        // The command line's help (`--max-ops`) has no place here; the
        // loop values do.
        d.notes.retain(|note| !note.starts_with("help:"));
        d.as_warning().with_note(
            "help: the editor checks a program within smaller budgets than `msclc check` (a sixteenth of its steps and ops, half its memory), to keep up with typing; `msclc check FILE` checks it in full",
        )
    }

    /// Stops the program at `span` once it holds more than
    /// `Limits::max_memory`.
    #[inline]
    pub(super) fn within_memory(&self, span: Span) -> Res<()> {
        if crate::memory::live_bytes() <= self.limits.max_memory {
            return Ok(());
        }
        Err(self.out_of_memory(span))
    }

    /// The error of a program that holds more than `Limits::max_memory`
    /// at `span`: apart, so that the check above is a load and a
    /// comparison where it runs, at every loop iteration and op.
    #[cold]
    #[inline(never)]
    fn out_of_memory(&self, span: Span) -> Diagnostic {
        let live = crate::memory::live_bytes();
        use crate::units::human_bytes;
        self.over_budget(self
            .error(
                Code::OutOfMemory,
                span,
                format!(
                    "compiling this program takes more memory than msclc may have here: {} held, the most being {}",
                    human_bytes(live),
                    human_bytes(self.limits.max_memory)
                ),
                "memory ran out here",
            )
            .with_note("help: compile less: fewer ranks (a param, `-D`), fewer ops or a shorter program; or compile where more memory is free; msclc takes at most half of what it may still allocate when it starts (the address-space limit, `ulimit -v`, and the memory available)"))
    }

    /// Refuses the op that takes the program past `Limits::max_ops`.
    #[inline]
    pub(super) fn within_op_budget(&self, span: Span) -> Res<()> {
        self.within_memory(span)?;
        let recorded = self
            .recorder
            .as_ref()
            .map_or(0, super::record::Recorder::ops_recorded);
        if recorded <= self.limits.max_ops {
            return Ok(());
        }
        Err(self.too_many_ops(span, recorded))
    }

    /// The error of op `recorded`, one past `Limits::max_ops`, at `span`.
    #[cold]
    #[inline(never)]
    fn too_many_ops(&self, span: Span, recorded: u64) -> Diagnostic {
        let max = self.limits.max_ops;
        self.over_budget(self
            .error(Code::Limit, span, format!("too many ops: this call emits op {recorded}, and the maximum is {max}"), "this op is one too many")
            .with_note("help: look for a loop that runs longer than meant, or compile for fewer ranks; `--max-ops N` raises the limit (each op takes about 170 bytes while compiling, before fusion)"))
    }

    /// Refuses a value of `size` `unit` above [`MAX_ELEMENTS`].
    #[inline]
    pub(super) fn within_size(&self, span: Span, size: usize, what: &str, unit: &str) -> Res<()> {
        if size <= MAX_ELEMENTS {
            return Ok(());
        }
        Err(self.too_many(span, size, what, unit))
    }

    /// The error of a `what` of `size` `unit`, past [`MAX_ELEMENTS`].
    #[cold]
    #[inline(never)]
    fn too_many(&self, span: Span, size: usize, what: &str, unit: &str) -> Diagnostic {
        self.too_large(span, &format!("{what} too large: {size} {unit}"), unit)
    }

    /// "`what` too large", the maximum being [`MAX_ELEMENTS`] `unit`.
    pub(super) fn too_large(&self, span: Span, what: &str, unit: &str) -> Diagnostic {
        self.error(Code::Limit, span, what, format!("the maximum is {MAX_ELEMENTS} {unit}"))
            .with_note("help: a collective's program builds lists, maps and strings of ranks and chunks: look for one that grows in a loop, or one over pairs of ranks (it grows as their square) at more ranks than meant (a param, `-D`)")
    }

    /// `v` as a count of `what` between 1 and `max`: "must be a positive
    /// integer" below, "too large" with the maximum above.
    pub(super) fn count(&self, span: Span, what: &str, v: &Value, max: u64) -> Res<u32> {
        let max = max.min(u32::MAX as u64);
        match v.wide_int() {
            Some(i) if i > 0 && i <= max.into() => Ok(i as u32),
            Some(i) if i > 0 => Err(self.error(
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
