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
mod limits;
mod lower;
pub use limits::{Limits, MAX_ELEMENTS, MAX_ITERATIONS, MAX_OPS};
use limits::{BYTES_PER_STEP, ELEMENTS_PER_STEP, MAX_CALL_DEPTH};
mod operands;
mod ops;
mod program;
mod record;
pub mod value;

use crate::diag::{Code, Diagnostic, Span};
use crate::ir::Plan;
use crate::syntax::ast::{self, BinOp, UnOp};
use crate::vocab::Builtin;
use args::Call;
use code::*;
use record::Recorder;
use std::collections::HashMap;
use std::rc::Rc;
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
    /// The loop variables in scope, outermost first, for error notes.
    loop_vars: Vec<(Rc<str>, Value)>,
    /// Whether `loop_vars` changed since the recorder last heard of them.
    loop_values_changed: bool,
    /// Whether the recorder keeps loop values at all (`Limits::loop_values`).
    track_loop_values: bool,
    depth: usize,
    /// Steps taken so far (`Limits::max_iterations`).
    steps: u64,
    limits: Limits,
}

/// Runs `stmts` (the main file, with imported functions in `functions`) and
/// returns the recorded plan. `overrides` are the `-D` values of params.
pub fn evaluate(
    stmts: &[ast::Stmt],
    functions: &[Rc<ast::FnDef>],
    overrides: HashMap<String, Value>,
    limits: Limits,
) -> Res<Plan> {
    let code = lower::lower(stmts, functions)?;
    let mut ev = Evaluator {
        code: &code,
        globals: vec![None; code.globals.len()],
        stack: vec![Value::Unit; code.main_frame as usize],
        base: 0,
        overrides,
        recorder: None,
        loop_vars: Vec::new(),
        loop_values_changed: false,
        track_loop_values: limits.loop_values,
        depth: 0,
        steps: 0,
        limits,
    };
    ev.block(&code.main)?;
    match ev.recorder {
        Some(rec) => Ok(rec.plan),
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
        if self.loop_vars.is_empty() {
            return d;
        }
        d.with_note(format!("when {}", self.loop_values()))
    }

    /// The loop variables' current values: "i = 2, peer = 3".
    fn loop_values(&self) -> String {
        let vars: Vec<String> = self
            .loop_vars
            .iter()
            .map(|(n, v)| format!("{n} = {}", v.brief()))
            .collect();
        vars.join(", ")
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
            }),
        }
    }

    fn write(&mut self, place: Place, value: Value) {
        match place {
            Place::Local(slot) => self.stack[self.base + slot as usize] = value,
            Place::Global(slot) => self.globals[slot as usize] = Some(value),
        }
    }

    fn block(&mut self, stmts: &'c [Stmt]) -> Res<Flow> {
        for stmt in stmts {
            if let Flow::Return(v) = self.stmt(stmt)? {
                return Ok(Flow::Return(v));
            }
        }
        Ok(Flow::Next)
    }

    fn stmt(&mut self, stmt: &'c Stmt) -> Res<Flow> {
        match &stmt.kind {
            StmtKind::Param {
                slot,
                name,
                default,
            } => {
                let value = match self.overrides.get(&name.name) {
                    Some(v) => v.clone(),
                    None => self.expr(default)?,
                };
                self.globals[*slot as usize] = Some(value);
            }
            StmtKind::Program { name, options } => self.program(stmt.span, name, options)?,
            StmtKind::Let { pattern, value } => {
                let v = self.expr(value)?;
                self.bind_pattern(pattern, v)?;
            }
            StmtKind::Assign {
                place,
                target,
                value,
            } => {
                let v = self.expr(value)?;
                if let Place::Global(slot) = place {
                    if self.globals[*slot as usize].is_none() {
                        return Err(self.error(
                            Code::UseBeforeLet,
                            target.span,
                            format!("`{}` is not defined yet", target.name),
                            "assigned before its `let` ran",
                        ));
                    }
                }
                self.write(*place, v);
            }
            StmtKind::For { loops, body } => {
                let mut flow = Flow::Next;
                self.for_each(loops, 0, &mut |ev| {
                    if let Flow::Return(v) = ev.block(body)? {
                        flow = Flow::Return(v);
                        return Ok(false);
                    }
                    Ok(true)
                })?;
                return Ok(flow);
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => {
                return if self.expr(cond)?.as_bool() {
                    self.block(then)
                } else {
                    self.block(otherwise)
                };
            }
            StmtKind::Return(value) => {
                let v = match value {
                    Some(e) => self.expr(e)?,
                    None => Value::Unit,
                };
                return Ok(Flow::Return(v));
            }
            StmtKind::Pipeline {
                unit_size,
                num_chunks,
                body,
            } => return self.pipeline(stmt.span, unit_size, num_chunks, body),
            StmtKind::Expr(e) => {
                self.expr(e)?;
            }
        }
        Ok(Flow::Next)
    }

    fn bind_pattern(&mut self, pattern: &Pattern, value: Value) -> Res<()> {
        match pattern {
            Pattern::Bind(place, _) => self.write(*place, value),
            Pattern::Wildcard => {}
            Pattern::Tuple(items, span) => {
                let Value::Tuple(vals) = &value else {
                    return Err(self.error(
                        Code::TypeMismatch,
                        *span,
                        format!("cannot unpack `{value}` into a tuple pattern"),
                        "not a tuple",
                    ));
                };
                if vals.len() != items.len() {
                    return Err(self.error(
                        Code::TypeMismatch,
                        *span,
                        format!(
                            "tuple of {} values unpacked into {} names",
                            vals.len(),
                            items.len()
                        ),
                        "wrong number of names",
                    ));
                }
                for (p, v) in items.iter().zip(vals.iter()) {
                    self.bind_pattern(p, v.clone())?;
                }
            }
        }
        Ok(())
    }

    fn record_loop_var(&mut self, pattern: &Pattern, value: &Value) {
        match (pattern, value) {
            (Pattern::Bind(_, name), v) => self.loop_vars.push((name.clone(), v.clone())),
            (Pattern::Tuple(ps, _), Value::Tuple(vs)) => {
                for (p, v) in ps.iter().zip(vs.iter()) {
                    self.record_loop_var(p, v);
                }
            }
            _ => {}
        }
    }

    /// Runs `body` once per combination of the loop clauses from `i` on,
    /// where the filter holds. `body` returns false to stop early.
    fn for_each(
        &mut self,
        loops: &'c Loops,
        i: usize,
        body: &mut dyn FnMut(&mut Evaluator<'c>) -> Res<bool>,
    ) -> Res<bool> {
        if i == loops.clauses.len() {
            if let Some(filter) = &loops.filter {
                if !self.expr(filter)?.as_bool() {
                    return Ok(true);
                }
            }
            return body(self);
        }
        let clause = &loops.clauses[i];
        let iterable = self.expr(&clause.iter)?;
        // One pattern walks a list's elements, a range's integers or a
        // map's keys; two walk a map's keys and values.
        let go_on = match (&iterable, &clause.patterns[..]) {
            (Value::Range(lo, hi), [p]) => {
                (*lo..*hi).try_for_each(|v| self.iteration(loops, i, p, Value::Int(v), body))
            }
            (Value::List(items), [p]) => items
                .iter()
                .try_for_each(|v| self.iteration(loops, i, p, v.clone(), body)),
            (Value::Map(m), [p]) => m
                .entries
                .iter()
                .try_for_each(|(k, _)| self.iteration(loops, i, p, k.clone(), body)),
            (Value::Map(m), [pk, pv]) => m.entries.iter().try_for_each(|(k, v)| {
                let marks = self.loop_vars.len();
                self.record_loop_var(pk, k);
                let result = self
                    .bind_pattern(pk, k.clone())
                    .map_err(Stop::Failed)
                    .and_then(|()| self.iteration(loops, i, pv, v.clone(), body));
                self.loop_vars.truncate(marks);
                result
            }),
            (other, _) => {
                return Err(self.error(
                    Code::TypeMismatch,
                    clause.iter.span,
                    format!("cannot loop over `{other}`"),
                    "not a list, range or map",
                ))
            }
        };
        match go_on {
            Ok(()) => Ok(true),
            Err(Stop::Early) => Ok(false),
            Err(Stop::Failed(d)) => Err(d),
        }
    }

    /// One iteration of clause `i`: binds `value` to `pattern`, then runs
    /// the clauses after it.
    fn iteration(
        &mut self,
        loops: &'c Loops,
        i: usize,
        pattern: &Pattern,
        value: Value,
        body: &mut dyn FnMut(&mut Evaluator<'c>) -> Res<bool>,
    ) -> Result<(), Stop> {
        let clause = &loops.clauses[i];
        if !self.spend(1) {
            return Err(Stop::Failed(
                self.too_long(clause.iter.span, "loop stopped here"),
            ));
        }
        self.within_memory(clause.iter.span).map_err(Stop::Failed)?;
        let marks = self.loop_vars.len();
        self.record_loop_var(pattern, &value);
        let result = self.bind_pattern(pattern, value).and_then(|()| {
            self.loop_values_changed = true;
            self.for_each(loops, i + 1, body)
        });
        self.loop_vars.truncate(marks);
        self.loop_values_changed = true;
        match result {
            Ok(true) => Ok(()),
            Ok(false) => Err(Stop::Early),
            Err(d) => Err(Stop::Failed(d)),
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
        self.recorder = Some(Recorder::new(plan));
        Ok(())
    }

    fn pipeline(
        &mut self,
        span: Span,
        unit_size: &'c Expr,
        num_chunks: &'c Expr,
        body: &'c [Stmt],
    ) -> Res<Flow> {
        let unit = self.expr(unit_size)?;
        let chunks = self.expr(num_chunks)?;
        if unit.as_int() <= 0 {
            return Err(self.error(
                Code::Pipeline,
                unit_size.span,
                "pipeline unit size must be a positive integer",
                format!("this is {unit}"),
            ));
        }
        let iter = crate::ir::IterContext {
            unit_size: unit.as_int() as u64,
            num_chunks: self.count(
                num_chunks.span,
                "pipeline num_chunks",
                &chunks,
                u32::MAX.into(),
            )?,
        };
        let rec = self.recorder_mut(span)?;
        if !rec.open_pipeline(iter, span) {
            return Err(self
                .error(
                    Code::Pipeline,
                    span,
                    "pipelines do not nest",
                    "inside another `pipeline` block",
                )
                .with_note("the MSCCL++ executor runs one level of pipeline only"));
        }
        let flow = self.block(body);
        if let Some(rec) = self.recorder.as_mut() {
            rec.close_pipeline();
        }
        flow
    }

    fn recorder_mut(&mut self, span: Span) -> Res<&mut Recorder> {
        if self.recorder.is_none() {
            return Err(Diagnostic::error(Code::Program, span, "operation before the `program` block", "no program declared yet")
                .with_note("help: declare the program (its collective fixes the ranks and buffers) before using ranks or channels"));
        }
        Ok(self.recorder.as_mut().expect("checked above"))
    }

    pub(crate) fn expr(&mut self, e: &'c Expr) -> Res<Value> {
        match &e.kind {
            ExprKind::Const(v) => Ok(v.clone()),
            ExprKind::Read(place) => self.read(*place, e.span),
            ExprKind::Unary(op, inner) => {
                let v = self.expr(inner)?;
                match (op, v) {
                    (UnOp::Neg, Value::Int(i)) => {
                        i.checked_neg().map(Value::Int).ok_or_else(|| {
                            self.error(
                                Code::Arithmetic,
                                e.span,
                                "integer overflow",
                                "negation overflows",
                            )
                        })
                    }
                    (UnOp::Not, Value::Bool(b)) => Ok(Value::Bool(!b)),
                    (_, v) => Err(self.error(
                        Code::TypeMismatch,
                        e.span,
                        format!(
                            "cannot apply `{}` to `{v}`",
                            if *op == UnOp::Neg { "-" } else { "!" }
                        ),
                        "wrong operand",
                    )),
                }
            }
            ExprKind::Binary(op, a, b) => self.binary(e.span, *op, a, b),
            ExprKind::Range(a, b) => {
                let (a, b) = (self.expr(a)?, self.expr(b)?);
                match (a, b) {
                    (Value::Int(a), Value::Int(b)) => Ok(Value::Range(a, b)),
                    _ => Err(self.error(
                        Code::TypeMismatch,
                        e.span,
                        "range bounds must be integers",
                        "not integers",
                    )),
                }
            }
            ExprKind::Call(f, args) => self.call_user(e.span, *f, args),
            ExprKind::Builtin(sig, args) => {
                let call = self.bind(e.span, sig.builtin, args)?;
                calls::call_builtin(self, e.span, call, None)
            }
            ExprKind::Method(target, method, candidates) => {
                let recv = self.expr(target)?;
                let kind = calls::receiver_of(&recv);
                let Some(candidate) = candidates.iter().find(|c| Some(c.receiver) == kind) else {
                    return Err(self.error(
                        Code::NoSuchMember,
                        method.span,
                        format!("`{recv}` has no method `{}`", method.name),
                        "no such method",
                    ));
                };
                let args = candidate.args.as_ref().map_err(|d| d.clone())?;
                let call = self.bind(e.span, candidate.sig.builtin, args)?;
                let value = calls::call_builtin(self, e.span, call, Some(recv))?;
                self.within_op_budget(e.span)?;
                Ok(value)
            }
            ExprKind::Field(target, field, name) => {
                let v = self.expr(target)?;
                calls::field(self, &v, *field, name)
            }
            ExprKind::Index(target, index) => {
                let t = self.expr(target)?;
                let i = self.expr(index)?;
                calls::index(self, e.span, &t, &i, index.span)
            }
            ExprKind::Tuple(items) => Ok(Value::Tuple(Rc::new(self.exprs(items)?))),
            ExprKind::List(items) => Ok(Value::List(Rc::new(self.exprs(items)?))),
            ExprKind::ListComp(item, loops) => {
                let mut out = Vec::new();
                self.for_each(loops, 0, &mut |ev| {
                    ev.within_size(e.span, out.len() + 1, "a list", "elements")?;
                    out.push(ev.expr(item)?);
                    Ok(true)
                })?;
                Ok(Value::List(Rc::new(out)))
            }
            ExprKind::Map(entries) => {
                let mut m = MapBuilder::new();
                for (k, v) in entries {
                    let (k, v) = (self.expr(k)?, self.expr(v)?);
                    m.insert(k, v);
                }
                Ok(Value::Map(Rc::new(m.finish())))
            }
            ExprKind::If(cond, then, otherwise) => {
                if self.expr(cond)?.as_bool() {
                    self.expr(then)
                } else {
                    self.expr(otherwise)
                }
            }
            ExprKind::MapComp(k, v, loops) => {
                let mut m = MapBuilder::new();
                self.for_each(loops, 0, &mut |ev| {
                    let (key, val) = (ev.expr(k)?, ev.expr(v)?);
                    m.insert(key, val);
                    ev.within_size(e.span, m.len(), "a map", "entries")?;
                    Ok(true)
                })?;
                Ok(Value::Map(Rc::new(m.finish())))
            }
        }
    }

    fn exprs(&mut self, items: &'c [Expr]) -> Res<Vec<Value>> {
        items.iter().map(|e| self.expr(e)).collect()
    }

    fn binary(&mut self, span: Span, op: BinOp, a: &'c Expr, b: &'c Expr) -> Res<Value> {
        // `&&` and `||` short-circuit.
        if matches!(op, BinOp::And | BinOp::Or) {
            let left = self.expr(a)?.as_bool();
            if (op == BinOp::And) != left {
                return Ok(Value::Bool(left));
            }
            return Ok(Value::Bool(self.expr(b)?.as_bool()));
        }
        let (x, y) = (self.expr(a)?, self.expr(b)?);
        // Comparing and searching scan the values: large ones cost steps.
        if matches!(op, BinOp::Eq | BinOp::Ne | BinOp::In) {
            let scanned = match (&x, &y) {
                (Value::Str(s), Value::Str(t)) => s.len().min(t.len()) / BYTES_PER_STEP,
                (_, Value::List(items) | Value::Tuple(items)) => items.len() / ELEMENTS_PER_STEP,
                _ => 0,
            };
            if !self.spend(scanned as u64) {
                return Err(self.too_long(span, "stopped here"));
            }
        }
        let overflow = || {
            self.error(
                Code::Arithmetic,
                span,
                "integer overflow",
                format!("`{x} {} {y}` does not fit in 64 bits", op.symbol()),
            )
        };
        use BinOp::*;
        Ok(match (op, &x, &y) {
            (Eq, _, _) => Value::Bool(x == y),
            (Ne, _, _) => Value::Bool(x != y),
            (In, _, _) => Value::Bool(match &y {
                Value::List(items) | Value::Tuple(items) => items.contains(&x),
                Value::Range(lo, hi) => matches!(x, Value::Int(v) if *lo <= v && v < *hi),
                Value::Map(m) => m.get(&x).is_some(),
                _ => {
                    return Err(self.error(
                        Code::TypeMismatch,
                        span,
                        format!("cannot test membership in `{y}`"),
                        "not a list, range or map",
                    ))
                }
            }),
            (Add, Value::Str(s), Value::Str(t)) => {
                self.within_size(span, s.len() + t.len(), "a string", "bytes")?;
                self.work(span, s.len() + t.len(), true)?;
                Value::Str(Rc::from(format!("{s}{t}").as_str()))
            }
            (Add, Value::List(s), Value::List(t)) => {
                self.within_size(span, s.len() + t.len(), "a list", "elements")?;
                self.work(span, s.len() + t.len(), false)?;
                Value::List(Rc::new(s.iter().chain(t.iter()).cloned().collect()))
            }
            (_, Value::Int(x), Value::Int(y)) => {
                let (x, y) = (*x, *y);
                match op {
                    Add => Value::Int(x.checked_add(y).ok_or_else(overflow)?),
                    Sub => Value::Int(x.checked_sub(y).ok_or_else(overflow)?),
                    Mul => Value::Int(x.checked_mul(y).ok_or_else(overflow)?),
                    Div | Rem if y == 0 => {
                        return Err(self.error(
                            Code::Arithmetic,
                            span,
                            "division by zero",
                            "the right side is 0",
                        ))
                    }
                    // Floor division and modulo, as in the Python DSL programs we port.
                    Div => Value::Int(x.checked_div_euclid(y).ok_or_else(overflow)?),
                    Rem => Value::Int(x.checked_rem_euclid(y).ok_or_else(overflow)?),
                    Shl | Shr if !(0..64).contains(&y) => {
                        return Err(self.error(
                            Code::Arithmetic,
                            span,
                            "shift amount out of range",
                            format!("shifting by {y}; use 0 to 63"),
                        ))
                    }
                    Shl => Value::Int(x.checked_shl(y as u32).ok_or_else(overflow)?),
                    Shr => Value::Int(x >> y),
                    BitAnd => Value::Int(x & y),
                    BitOr => Value::Int(x | y),
                    BitXor => Value::Int(x ^ y),
                    Lt => Value::Bool(x < y),
                    Le => Value::Bool(x <= y),
                    Gt => Value::Bool(x > y),
                    Ge => Value::Bool(x >= y),
                    // Handled before the integer cases.
                    Eq | Ne | In | And | Or => Value::Unit,
                }
            }
            _ => {
                return Err(self.error(
                    Code::TypeMismatch,
                    span,
                    format!("cannot apply `{}` to `{x}` and `{y}`", op.symbol()),
                    "wrong operands",
                ))
            }
        })
    }

    /// The values of a builtin call's arguments, in parameter order, each
    /// with its span (a default's is the call's).
    /// Evaluates a call of `builtin`'s arguments (`span` is the call's:
    /// where a default comes from) into its typed record.
    fn bind(&mut self, span: Span, builtin: Builtin, args: &'c [BuiltinArg]) -> Res<Call> {
        let mut args = args.iter();
        Call::bind(builtin, || match args.next() {
            Some(BuiltinArg::Given(e)) => Ok((self.expr(e)?, e.span)),
            Some(BuiltinArg::Default(v)) => Ok((v.clone(), span)),
            None => Err(Diagnostic::error(
                Code::Internal,
                span,
                "internal error: a builtin call has fewer arguments than its signature",
                "here",
            )),
        })
    }

    fn call_user(&mut self, span: Span, id: u32, args: &'c [UserArg]) -> Res<Value> {
        // Calls count with loop iterations: a double recursion (`f(n - 1) +
        // f(n - 2)`) runs as long as a loop and ends as one does.
        if !self.spend(1) {
            return Err(self.too_long(span, "stopped at this call"));
        }
        self.within_memory(span)?;
        // Counted from the start: a default argument may call the function
        // again (`fn f(n: int = f())`).
        if self.depth >= MAX_CALL_DEPTH {
            return Err(self.error(
                Code::Limit,
                span,
                "recursion too deep",
                format!("more than {MAX_CALL_DEPTH} nested calls"),
            ));
        }
        let f = &self.code.functions[id as usize];
        // The callee's frame goes on top of the caller's before the
        // arguments are evaluated: given ones in the caller's frame,
        // defaults in the callee's (they see only globals, but their
        // comprehensions need slots).
        let (caller, callee) = (self.base, self.stack.len());
        self.stack.resize(callee + f.frame as usize, Value::Unit);
        self.depth += 1;
        let result = (|| {
            for (slot, (default, arg)) in f.defaults.iter().zip(args).enumerate() {
                let value = match (arg, default) {
                    (UserArg::Given(e), _) => self.expr(e)?,
                    (UserArg::Default, Some(default)) => {
                        self.base = callee;
                        let v = self.expr(default);
                        self.base = caller;
                        v?
                    }
                    (UserArg::Default, None) => Value::Unit,
                };
                self.stack[callee + slot] = value;
            }
            self.base = callee;
            self.block(&f.body)
        })();
        self.base = caller;
        self.depth -= 1;
        self.stack.truncate(callee);
        Ok(match result? {
            Flow::Return(v) => v,
            Flow::Next => Value::Unit,
        })
    }
}

/// Why walking a loop's items stopped before the end.
enum Stop {
    /// The body asked to (a `return` inside the loop).
    Early,
    Failed(Diagnostic),
}
