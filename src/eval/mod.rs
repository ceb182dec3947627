//! Evaluation: runs the checked program as a generator, recording every
//! operation it issues into the plan IR. Loops and conditionals unroll here;
//! nothing of the source language reaches the GPU.

mod calls;
pub use calls::constant;
mod fnv;
mod limits;
use limits::MAX_CALL_DEPTH;
pub use limits::{Limits, MAX_ELEMENTS, MAX_ITERATIONS, MAX_OPS};
mod ops;
mod program;
mod record;
pub mod value;

use crate::diag::{Diagnostic, Span};
use crate::ir::Plan;
use crate::syntax::ast::*;
use crate::vocab::{self, Receiver, Signature};
use fnv::FnvMap;
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

pub struct Evaluator {
    scopes: Vec<FnvMap<String, Value>>,
    functions: HashMap<String, Rc<FnDef>>,
    signatures: HashMap<(Receiver, &'static str), Rc<Signature>>,
    overrides: HashMap<String, Value>,
    recorder: Option<Recorder>,
    /// The loop variables in scope, outermost first, for error notes.
    loop_vars: Vec<(String, Value)>,
    /// Whether `loop_vars` changed since the recorder last heard of them.
    loop_values_changed: bool,
    /// Whether the recorder keeps loop values at all (`Limits::loop_values`).
    track_loop_values: bool,
    depth: usize,
    iterations: u64,
    limits: Limits,
}

/// Runs `stmts` (the main file, with imported functions in `functions`) and
/// returns the recorded plan. `overrides` are the `-D` values of params.
pub fn evaluate(
    stmts: &[Stmt],
    functions: &[Rc<FnDef>],
    overrides: HashMap<String, Value>,
    limits: Limits,
) -> Res<Plan> {
    let mut ev = Evaluator {
        scopes: vec![FnvMap::default()],
        functions: functions
            .iter()
            .map(|f| (f.name.name.clone(), f.clone()))
            .collect(),
        signatures: vocab::signatures()
            .into_iter()
            .map(|s| ((s.receiver, s.name), Rc::new(s)))
            .collect(),
        overrides,
        recorder: None,
        loop_vars: Vec::new(),
        loop_values_changed: false,
        track_loop_values: limits.loop_values,
        depth: 0,
        iterations: 0,
        limits,
    };
    for stmt in stmts {
        if let StmtKind::Fn(f) = &stmt.kind {
            ev.functions.insert(f.name.name.clone(), f.clone());
        }
    }
    ev.block(stmts)?;
    match ev.recorder {
        Some(rec) => Ok(rec.plan),
        None => {
            let span = Span::new(stmts.first().map_or(0, |s| s.span.file), 0, 0);
            Err(Diagnostic::error(span, "the file declares no program", "expected a `program` block")
                .with_note("help: add `program \"name\" { collective = allreduce(8) }` before the first operation"))
        }
    }
}

impl Evaluator {
    /// An error at `span`, noting the loop variables' current values.
    fn error(
        &self,
        span: Span,
        message: impl Into<String>,
        label: impl Into<String>,
    ) -> Diagnostic {
        let d = Diagnostic::error(span, message, label);
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
            .map(|(n, v)| format!("{n} = {v}"))
            .collect();
        vars.join(", ")
    }

    fn lookup(&self, name: &str) -> Option<Value> {
        for scope in self.scopes.iter().rev() {
            if let Some(v) = scope.get(name) {
                return Some(v.clone());
            }
        }
        calls::constant(name)
    }

    fn bind(&mut self, name: &str, value: Value) {
        if let Some(scope) = self.scopes.last_mut() {
            scope.insert(name.to_string(), value);
        }
    }

    fn block(&mut self, stmts: &[Stmt]) -> Res<Flow> {
        for stmt in stmts {
            if let Flow::Return(v) = self.stmt(stmt)? {
                return Ok(Flow::Return(v));
            }
        }
        Ok(Flow::Next)
    }

    fn scoped_block(&mut self, stmts: &[Stmt]) -> Res<Flow> {
        self.scopes.push(FnvMap::default());
        let flow = self.block(stmts);
        self.scopes.pop();
        flow
    }

    fn stmt(&mut self, stmt: &Stmt) -> Res<Flow> {
        match &stmt.kind {
            StmtKind::Param { name, default, .. } => {
                let value = match self.overrides.get(&name.name) {
                    Some(v) => v.clone(),
                    None => self.expr(default)?,
                };
                self.bind(&name.name, value);
            }
            StmtKind::Import { .. } | StmtKind::Fn(_) => {}
            StmtKind::Program { name, options } => self.program(stmt.span, name, options)?,
            StmtKind::Let { pattern, value } => {
                let v = self.expr(value)?;
                self.bind_pattern(pattern, v)?;
            }
            StmtKind::Assign { target, value } => {
                let v = self.expr(value)?;
                let slot = self
                    .scopes
                    .iter_mut()
                    .rev()
                    .find_map(|s| s.get_mut(&target.name));
                match slot {
                    Some(slot) => *slot = v,
                    None => {
                        return Err(self.error(
                            target.span,
                            format!("`{}` is not defined", target.name),
                            "assigned before `let`",
                        ))
                    }
                }
            }
            StmtKind::For { loops, body } => {
                let mut flow = Flow::Next;
                self.for_each(loops, 0, &mut |ev| {
                    if let Flow::Return(v) = ev.scoped_block(body)? {
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
                    self.scoped_block(then)
                } else {
                    self.scoped_block(otherwise)
                };
            }
            StmtKind::Return(value) => {
                let v = match value {
                    Some(e) => self.expr(e)?,
                    None => Value::Unit,
                };
                return Ok(Flow::Return(v));
            }
            StmtKind::Pipeline { args, body } => return self.pipeline(stmt.span, args, body),
            StmtKind::Expr(e) => {
                self.expr(e)?;
            }
        }
        Ok(Flow::Next)
    }

    fn bind_pattern(&mut self, pattern: &Pattern, value: Value) -> Res<()> {
        match pattern {
            Pattern::Name(id) => self.bind(&id.name, value),
            Pattern::Wildcard(_) => {}
            Pattern::Tuple(items, span) => {
                let Value::Tuple(vals) = &value else {
                    return Err(self.error(
                        *span,
                        format!("cannot unpack `{value}` into a tuple pattern"),
                        "not a tuple",
                    ));
                };
                if vals.len() != items.len() {
                    return Err(self.error(
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
            (Pattern::Name(id), v) => self.loop_vars.push((id.name.clone(), v.clone())),
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
        loops: &Loops,
        i: usize,
        body: &mut dyn FnMut(&mut Evaluator) -> Res<bool>,
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
        let items = self.items_of(&iterable, clause)?;
        for item in items {
            self.iterations += 1;
            if self.iterations > self.limits.max_iterations {
                return Err(self
                    .error(
                        clause.iter.span,
                        "this program loops too long",
                        "loop stopped here",
                    )
                    .with_note(format!(
                        "help: the program ran {} loop iterations; check this loop's bounds",
                        self.limits.max_iterations
                    )));
            }
            let marks = self.loop_vars.len();
            self.scopes.push(FnvMap::default());
            let result = (|| {
                for (p, v) in clause.patterns.iter().zip(item) {
                    self.record_loop_var(p, &v);
                    self.bind_pattern(p, v)?;
                }
                self.loop_values_changed = true;
                self.for_each(loops, i + 1, body)
            })();
            self.scopes.pop();
            self.loop_vars.truncate(marks);
            self.loop_values_changed = true;
            if !result? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The items a `for` clause walks, lazily (a range may be huge): list
    /// elements, range integers, map keys (one pattern) or key-value pairs
    /// (two patterns).
    fn items_of(
        &self,
        iterable: &Value,
        clause: &ForClause,
    ) -> Res<Box<dyn Iterator<Item = Vec<Value>>>> {
        let span = clause.iter.span;
        let two = clause.patterns.len() == 2;
        Ok(match iterable.clone() {
            Value::Range(a, b) if !two => Box::new((a..b).map(|v| vec![Value::Int(v)])),
            Value::List(items) if !two => {
                Box::new((0..items.len()).map(move |i| vec![items[i].clone()]))
            }
            Value::Map(m) if two => Box::new((0..m.entries.len()).map(move |i| {
                let (k, v) = &m.entries[i];
                vec![k.clone(), v.clone()]
            })),
            Value::Map(m) => {
                Box::new((0..m.entries.len()).map(move |i| vec![m.entries[i].0.clone()]))
            }
            other => {
                return Err(self.error(
                    span,
                    format!("cannot loop over `{other}`"),
                    "not a list, range or map",
                ))
            }
        })
    }

    fn program(&mut self, span: Span, name: &Expr, options: &[ProgramOption]) -> Res<()> {
        if self.recorder.is_some() {
            return Err(self
                .error(
                    span,
                    "a second `program` block",
                    "the file already declared its program",
                )
                .with_note("help: a file describes one plan; split the programs into two files"));
        }
        let name_value = self.expr(name)?;
        let Value::Str(name_str) = name_value else {
            return Err(self.error(
                name.span,
                "the program name must be a string",
                "not a string",
            ));
        };
        let mut values = Vec::new();
        for opt in options {
            values.push((opt, self.expr(&opt.value)?));
        }
        let plan = program::build_plan(self, span, name_str.to_string(), &values)?;
        self.recorder = Some(Recorder::new(plan));
        Ok(())
    }

    fn pipeline(&mut self, span: Span, args: &[Arg], body: &[Stmt]) -> Res<Flow> {
        let names = ["unit_size", "num_chunks"];
        let slots = vocab::match_args("pipeline", &names, &[true, true], args, span)?;
        let mut vals = Vec::new();
        for slot in slots.into_iter().flatten() {
            vals.push((self.expr(&args[slot].value)?, args[slot].value.span));
        }
        let (unit, unit_span) = &vals[0];
        let (chunks, chunks_span) = &vals[1];
        if unit.as_int() <= 0 {
            return Err(self.error(
                *unit_span,
                "pipeline unit size must be a positive integer",
                format!("this is {unit}"),
            ));
        }
        let iter = crate::ir::IterContext {
            unit_size: unit.as_int() as u64,
            num_chunks: self.count(*chunks_span, "pipeline num_chunks", chunks, u32::MAX.into())?,
        };
        let rec = self.recorder_mut(span)?;
        if !rec.open_pipeline(iter, span) {
            return Err(self
                .error(
                    span,
                    "pipelines do not nest",
                    "inside another `pipeline` block",
                )
                .with_note("the MSCCL++ executor runs one level of pipeline only"));
        }
        let flow = self.scoped_block(body);
        if let Some(rec) = self.recorder.as_mut() {
            rec.close_pipeline();
        }
        flow
    }

    fn recorder_mut(&mut self, span: Span) -> Res<&mut Recorder> {
        if self.recorder.is_none() {
            return Err(Diagnostic::error(span, "operation before the `program` block", "no program declared yet")
                .with_note("help: declare the program (its collective fixes the ranks and buffers) before using ranks or channels"));
        }
        Ok(self.recorder.as_mut().expect("checked above"))
    }

    pub(crate) fn expr(&mut self, e: &Expr) -> Res<Value> {
        match &e.kind {
            ExprKind::Int(v) => Ok(Value::Int(*v)),
            ExprKind::Str(s) => Ok(Value::Str(Rc::from(s.as_str()))),
            ExprKind::Bool(b) => Ok(Value::Bool(*b)),
            ExprKind::Name(n) => self.lookup(n).ok_or_else(|| {
                if self.functions.contains_key(n) || calls::is_builtin_function(n) {
                    self.error(
                        e.span,
                        format!("`{n}` is a function"),
                        "call it with `(..)`",
                    )
                } else {
                    self.error(e.span, format!("`{n}` is not defined"), "unknown name")
                }
            }),
            ExprKind::Unary(op, inner) => {
                let v = self.expr(inner)?;
                match (op, v) {
                    (UnOp::Neg, Value::Int(i)) => {
                        i.checked_neg().map(Value::Int).ok_or_else(|| {
                            self.error(e.span, "integer overflow", "negation overflows")
                        })
                    }
                    (UnOp::Not, Value::Bool(b)) => Ok(Value::Bool(!b)),
                    (_, v) => Err(self.error(
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
                    _ => Err(self.error(e.span, "range bounds must be integers", "not integers")),
                }
            }
            ExprKind::Call(callee, args) => self.call(e.span, callee, args),
            ExprKind::Field(target, field) => {
                let v = self.expr(target)?;
                calls::field(self, &v, field)
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

    fn exprs(&mut self, items: &[Expr]) -> Res<Vec<Value>> {
        items.iter().map(|e| self.expr(e)).collect()
    }

    fn binary(&mut self, span: Span, op: BinOp, a: &Expr, b: &Expr) -> Res<Value> {
        // `&&` and `||` short-circuit.
        if matches!(op, BinOp::And | BinOp::Or) {
            let left = self.expr(a)?.as_bool();
            if (op == BinOp::And) != left {
                return Ok(Value::Bool(left));
            }
            return Ok(Value::Bool(self.expr(b)?.as_bool()));
        }
        let (x, y) = (self.expr(a)?, self.expr(b)?);
        let overflow = || {
            self.error(
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
                        span,
                        format!("cannot test membership in `{y}`"),
                        "not a list, range or map",
                    ))
                }
            }),
            (Add, Value::Str(s), Value::Str(t)) => {
                self.within_size(span, s.len() + t.len(), "a string", "bytes")?;
                Value::Str(Rc::from(format!("{s}{t}").as_str()))
            }
            (Add, Value::List(s), Value::List(t)) => {
                self.within_size(span, s.len() + t.len(), "a list", "elements")?;
                Value::List(Rc::new(s.iter().chain(t.iter()).cloned().collect()))
            }
            (_, Value::Int(x), Value::Int(y)) => {
                let (x, y) = (*x, *y);
                match op {
                    Add => Value::Int(x.checked_add(y).ok_or_else(overflow)?),
                    Sub => Value::Int(x.checked_sub(y).ok_or_else(overflow)?),
                    Mul => Value::Int(x.checked_mul(y).ok_or_else(overflow)?),
                    Div | Rem if y == 0 => {
                        return Err(self.error(span, "division by zero", "the right side is 0"))
                    }
                    // Floor division and modulo, as in the Python DSL programs we port.
                    Div => Value::Int(x.checked_div_euclid(y).ok_or_else(overflow)?),
                    Rem => Value::Int(x.checked_rem_euclid(y).ok_or_else(overflow)?),
                    Shl | Shr if !(0..64).contains(&y) => {
                        return Err(self.error(
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
                    span,
                    format!("cannot apply `{}` to `{x}` and `{y}`", op.symbol()),
                    "wrong operands",
                ))
            }
        })
    }

    fn call(&mut self, span: Span, callee: &Expr, args: &[Arg]) -> Res<Value> {
        match &callee.kind {
            ExprKind::Name(name) => {
                if let Some(f) = self.functions.get(name).cloned() {
                    return self.call_user(span, &f, args);
                }
                let Some(sig) = self
                    .signatures
                    .get(&(Receiver::Free, name.as_str()))
                    .cloned()
                else {
                    return Err(self.error(
                        callee.span,
                        format!("no function named `{name}`"),
                        "unknown function",
                    ));
                };
                let values = self.bind_builtin(span, &sig, args)?;
                calls::call_builtin(self, span, &sig, None, values)
            }
            ExprKind::Field(target, method) => {
                let recv = self.expr(target)?;
                let Some(kind) = calls::receiver_of(&recv) else {
                    return Err(self.error(
                        method.span,
                        format!("`{recv}` has no methods"),
                        "no such method",
                    ));
                };
                let Some(sig) = self.signatures.get(&(kind, method.name.as_str())).cloned() else {
                    return Err(self.error(
                        method.span,
                        format!("`{recv}` has no method `{}`", method.name),
                        "no such method",
                    ));
                };
                let values = self.bind_builtin(span, &sig, args)?;
                let value = calls::call_builtin(self, span, &sig, Some(recv), values)?;
                self.within_op_budget(span)?;
                Ok(value)
            }
            _ => Err(self.error(callee.span, "this cannot be called", "not a function")),
        }
    }

    /// Evaluates the arguments of a builtin call in parameter order, with
    /// defaults filled in (absent optional arguments are `Unit`).
    fn bind_builtin(
        &mut self,
        span: Span,
        sig: &Signature,
        args: &[Arg],
    ) -> Res<Vec<(Value, Span)>> {
        let names: Vec<&str> = sig.params.iter().map(|p| p.name).collect();
        let required: Vec<bool> = sig
            .params
            .iter()
            .map(|p| p.default == vocab::Default::Required)
            .collect();
        let slots = vocab::match_args(sig.name, &names, &required, args, span)?;
        let mut out = Vec::with_capacity(slots.len());
        for (param, slot) in sig.params.iter().zip(slots) {
            out.push(match slot {
                Some(i) => (self.expr(&args[i].value)?, args[i].value.span),
                None => (calls::default_value(param.default), span),
            });
        }
        Ok(out)
    }

    fn call_user(&mut self, span: Span, f: &FnDef, args: &[Arg]) -> Res<Value> {
        // Counted from the start: a default argument may call the function
        // again (`fn f(n: int = f())`).
        if self.depth >= MAX_CALL_DEPTH {
            return Err(self.error(
                span,
                "recursion too deep",
                format!("more than {MAX_CALL_DEPTH} nested calls"),
            ));
        }
        self.depth += 1;
        let result = self.call_user_counted(span, f, args);
        self.depth -= 1;
        result
    }

    fn call_user_counted(&mut self, span: Span, f: &FnDef, args: &[Arg]) -> Res<Value> {
        let names: Vec<&str> = f.params.iter().map(|p| p.name.name.as_str()).collect();
        let required: Vec<bool> = f.params.iter().map(|p| p.default.is_none()).collect();
        let slots = vocab::match_args(&f.name.name, &names, &required, args, span)?;
        let mut frame = FnvMap::default();
        for (param, slot) in f.params.iter().zip(slots) {
            let value = match (slot, &param.default) {
                (Some(i), _) => self.expr(&args[i].value)?,
                (None, Some(default)) => self.expr(default)?,
                (None, None) => Value::Unit,
            };
            frame.insert(param.name.name.clone(), value);
        }
        // A function sees the globals and its own parameters, not its caller's locals.
        let saved: Vec<FnvMap<String, Value>> = self.scopes.drain(1..).collect();
        self.scopes.push(frame);
        let flow = self.block(&f.body);
        self.scopes.truncate(1);
        self.scopes.extend(saved);
        Ok(match flow? {
            Flow::Return(v) => v,
            Flow::Next => Value::Unit,
        })
    }
}
