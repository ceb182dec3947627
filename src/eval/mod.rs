//! Evaluation: runs the checked program as a generator, recording every
//! operation it issues into the plan IR. Loops and conditionals unroll here;
//! nothing of the source language reaches the GPU.
//!
//! The program is first lowered to its resolved form (`code.rs`): the
//! evaluator reads and writes variables by slot, calls functions and
//! builtins by reference with their arguments already matched, and keeps
//! runtime checks only for what depends on values (bounds, sizes, ranks).

mod args;
mod calls;
pub use calls::constant;
mod code;
mod exprs;
mod inert;
mod limits;
mod lower;
use limits::MAX_CALL_DEPTH;
pub use limits::{Limits, MAX_ELEMENTS, MAX_ITERATIONS, MAX_OPS};
mod map;
mod operands;
mod operators;
mod ops;
mod program;
mod record;
mod shard;
pub use shard::{merge, Part, Shard};
mod stmts;
pub mod value;

use crate::check::Checked;
use crate::diag::{Code, Diagnostic, Span};
use crate::ir::Plan;
use crate::syntax::ast::{self, BinOp, Program, UnOp};
use crate::vocab::Builtin;
use args::Call;
use code::*;
use record::Recorder;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use value::{MapBuilder, Value};

/// How a statement ended.
enum Flow {
    Next,
    Return(Value),
}

type Res<T> = Result<T, Diagnostic>;

pub struct Evaluator<'c> {
    code: &'c Resolved,
    /// The file's top-level variables, `None` until their `let` or `param` ran.
    globals: Vec<Option<Value>>,
    /// The frames of the running calls, the main program's first.
    stack: Vec<Value>,
    /// Where the running function's frame starts in `stack`.
    base: usize,
    overrides: HashMap<String, Value>,
    recorder: Option<Recorder>,
    /// The loop variables in scope, outermost first, for error notes; each
    /// with its frame in the plan's `loops` once an op or channel made in
    /// it needed one (`NO_FRAME` until then).
    loop_vars: Vec<(Rc<str>, Value, u32)>,
    /// Whether `loop_vars` changed since the recorder last heard of them.
    loop_values_changed: bool,
    /// The name of the entries of `loop_vars` that are calls, not loops
    /// (`ir::CALL_FRAME`): each holds where its call was made.
    call_frame: Rc<str>,
    depth: usize,
    /// Steps taken so far (`Limits::max_iterations`).
    steps: u64,
    limits: Limits,
    fusing: Fusing,
    /// The ranks whose ops this evaluation records (shard.rs), once the
    /// program block fixed how many ranks there are.
    shard: Shard,
    /// What starts the other shards, for the first of them (`Sharding::Lead`).
    start_shards: Option<Box<dyn FnOnce(u32) -> u32>>,
    /// Set when another shard failed: this one's plan is not needed.
    cancelled: Option<Arc<AtomicBool>>,
    /// What this shard learnt of each `for` statement (`shard.rs`).
    rank_loops: Vec<shard::RankLoop>,
    /// The loop iteration being watched, if any (`shard.rs`).
    watch: Option<shard::Watch>,
    /// Steps spent in watched iterations.
    watched_steps: shard::WatchedSteps,
    /// Iterations of loops over ranks skipped for other shards' ranks.
    skipped_iterations: u64,
}

/// How the ranks' ops are shared among evaluations on several threads
/// (shard.rs).
pub enum Sharding {
    /// This evaluation records every rank's ops.
    Whole,
    /// This evaluation records the ops of one shard's ranks; it stops, as
    /// if out of steps, once the flag is set.
    Part(Shard, Arc<AtomicBool>),
    /// This evaluation is shard 0 of however many the function starts once
    /// the program block gives the number of ranks: it starts the others
    /// and gives how many shards there are in all.
    Lead(Box<dyn FnOnce(u32) -> u32>, Arc<AtomicBool>),
}

/// Whether the recorder fuses ops as it makes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fusing {
    /// As the program asks (`instr_fusion`): the plan the passes take.
    AsRecorded,
    /// Not at all: every op as the program made it, for the reports that
    /// name ops one by one.
    Never,
}

/// Runs `program`, of which the checker proved `checked`, and returns the
/// recorded plan. `overrides` are the `-D` values of params.
pub fn evaluate(
    program: &Program,
    checked: &Checked,
    overrides: HashMap<String, Value>,
    limits: Limits,
    fusing: Fusing,
) -> Res<Plan> {
    let whole = Sharding::Whole;
    evaluate_part(program, checked, overrides, limits, fusing, whole).map(|p| p.plan)
}

/// `evaluate`, recording the ops of the ranks `sharding` gives this
/// evaluation.
pub fn evaluate_part(
    program: &Program,
    checked: &Checked,
    overrides: HashMap<String, Value>,
    limits: Limits,
    fusing: Fusing,
    sharding: Sharding,
) -> Res<Part> {
    let stmts = &program.stmts;
    let code = lower::lower(stmts, &program.imported, checked)?;
    let (shard, start_shards, cancelled) = match sharding {
        Sharding::Whole => (Shard::WHOLE, None, None),
        Sharding::Part(shard, cancelled) => (shard, None, Some(cancelled)),
        Sharding::Lead(start, cancelled) => (Shard::WHOLE, Some(start), Some(cancelled)),
    };
    let mut ev = Evaluator {
        code: &code,
        globals: vec![None; code.globals.len()],
        stack: vec![Value::Unit; code.main_frame as usize],
        base: 0,
        overrides,
        recorder: None,
        loop_vars: Vec::new(),
        loop_values_changed: false,
        call_frame: Rc::from(crate::ir::CALL_FRAME),
        depth: 0,
        steps: 0,
        limits,
        fusing,
        shard,
        start_shards,
        cancelled,
        rank_loops: vec![shard::RankLoop::Unknown; code.for_statements as usize],
        watch: None,
        watched_steps: shard::WatchedSteps::default(),
        skipped_iterations: 0,
    };
    ev.block(&code.main)?;
    match ev.recorder {
        Some(rec) => Ok(rec.into_part(ev.steps, ev.watched_steps)),
        None => {
            let span = Span::new(stmts.first().map_or(0, |s| s.span.file), 0, 0);
            Err(Diagnostic::error(Code::Program, span, "the file declares no program", "expected a `program` block")
                .with_note("help: add `program \"name\" { collective = allreduce(8) }` before the first operation"))
        }
    }
}

impl<'c> Evaluator<'c> {
    /// An error at `span`, noting the loop variables' current values.
    fn error(
        &self,
        code: Code,
        span: Span,
        message: impl Into<String>,
        label: impl Into<String>,
    ) -> Diagnostic {
        let d = Diagnostic::error(code, span, message, label);
        match self.loop_values() {
            Some(values) => d.with_note(format!("when {values}")),
            None => d,
        }
    }

    /// The loop variables' current values: "i = 2, peer = 3"; `None`
    /// outside any loop.
    fn loop_values(&self) -> Option<String> {
        let vars: Vec<String> = self
            .loop_vars
            .iter()
            .filter(|(n, _, _)| !Rc::ptr_eq(n, &self.call_frame))
            .map(|(n, v, _)| format!("{n} = {}", v.brief()))
            .collect();
        // Deep recursion through a loop holds a loop per call: the
        // outermost and innermost tell where it started and where it is.
        const SHOWN: usize = 8;
        if vars.len() > SHOWN {
            let (outer, inner) = (&vars[..SHOWN / 2], &vars[vars.len() - SHOWN / 2..]);
            let between = vars.len() - SHOWN;
            return Some(format!(
                "{}, … {between} more loops …, {}",
                outer.join(", "),
                inner.join(", ")
            ));
        }
        (!vars.is_empty()).then(|| vars.join(", "))
    }

    fn read(&self, place: Place, span: Span) -> Res<Value> {
        match place {
            Place::Local(slot) => Ok(self.stack[self.base + slot as usize].clone()),
            Place::Global(slot) => self.globals[slot as usize].clone().ok_or_else(|| {
                self.error(
                    Code::UseBeforeLet,
                    span,
                    format!("`{}` is not defined yet", self.code.globals[slot as usize]),
                    "read before its `let` ran",
                )
                .with_note("help: a function that reads or assigns a top-level variable runs after that variable's `let` (or `param`): call it later, or pass the value as an argument")
            }),
        }
    }

    #[inline]
    fn write(&mut self, place: Place, value: Value) {
        if let Some(watch) = &mut self.watch {
            watch.note_write(place, self.base);
        }
        match place {
            Place::Local(slot) => self.stack[self.base + slot as usize] = value,
            Place::Global(slot) => self.globals[slot as usize] = Some(value),
        }
    }

    fn program(
        &mut self,
        span: Span,
        name: &'c Expr,
        options: &'c [(ast::Ident, Expr)],
    ) -> Res<()> {
        if self.recorder.is_some() {
            return Err(self
                .error(
                    Code::Program,
                    span,
                    "a second `program` block",
                    "the file already declared its program",
                )
                .with_note("help: a file describes one plan; split the programs into two files"));
        }
        let name_value = self.expr(name)?;
        let Value::Str(name_str) = name_value else {
            return Err(self.error(
                Code::Program,
                name.span,
                "the program name must be a string",
                "not a string",
            ));
        };
        let mut values = Vec::with_capacity(options.len());
        for (key, value) in options {
            values.push((key, value.span, self.expr(value)?));
        }
        let plan = program::build_plan(self, span, name_str.to_string(), &values)?;
        let fuse = self.fusing == Fusing::AsRecorded && plan.options.instr_fusion;
        if let Some(start) = self.start_shards.take() {
            let count = start(plan.ranks.len() as u32).max(1);
            self.shard = Shard { index: 0, count };
        }
        self.recorder = Some(Recorder::new(plan, fuse, self.shard));
        Ok(())
    }

    /// Whether another shard failed, so that this one's plan is not
    /// needed.
    fn cancelled(&self) -> bool {
        self.cancelled
            .as_ref()
            .is_some_and(|c| c.load(Ordering::Relaxed))
    }

    fn recorder_mut(&mut self, span: Span) -> Res<&mut Recorder> {
        if self.recorder.is_none() {
            return Err(Diagnostic::error(Code::Program, span, "operation before the `program` block", "no program declared yet")
                .with_note("help: declare the program (its collective fixes the ranks and buffers) before using ranks or channels"));
        }
        Ok(self.recorder.as_mut().expect("checked above"))
    }
}

/// Why walking a loop's items stopped before the end.
enum Stop {
    /// The body asked to (a `return` inside the loop).
    Early,
    Failed(Diagnostic),
}
