//! Running statements: blocks, `let` and assignments with their patterns,
//! `if`, `return`, loops (each iteration a step of the budget) and
//! pipelines.

use super::exprs::BoundCall;
use super::*;

impl<'c> Evaluator<'c> {
    pub(super) fn block(&mut self, stmts: &'c [Stmt]) -> Res<Flow> {
        for stmt in stmts {
            if let Flow::Return(v) = self.stmt(stmt)? {
                return Ok(Flow::Return(v));
            }
        }
        Ok(Flow::Next)
    }

    pub(super) fn stmt(&mut self, stmt: &'c Stmt) -> Res<Flow> {
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
                let v = self.operand(value)?;
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
                        )
                        .with_note("help: a function that reads or assigns a top-level variable runs after that variable's `let` (or `param`): call it later, or pass the value as an argument"));
                    }
                }
                self.write(*place, v);
            }
            StmtKind::For {
                loops,
                body,
                id,
                bound_once,
            } => {
                if let Some(flow) = self.rank_loop(*id, loops, body, *bound_once)? {
                    return Ok(flow);
                }
                if *bound_once {
                    return self.loop_bound_once(loops, body);
                }
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
                return if self.cond(cond)? {
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

    /// The loop of `loops` over `body`, one method call it binds once
    /// (`bound_once`): each iteration binds again only the arguments that
    /// vary.
    fn loop_bound_once(&mut self, loops: &'c Loops, body: &'c [Stmt]) -> Res<Flow> {
        let mut bound = None;
        self.for_each(loops, 0, &mut |ev| {
            ev.loop_body(body, Some(&mut bound))?;
            Ok(true)
        })?;
        Ok(Flow::Next)
    }

    /// A loop's body, run once: where the loop binds its one call once
    /// (`bound_once`), that call, its arguments kept in `bound`.
    #[inline(always)]
    pub(super) fn loop_body(
        &mut self,
        body: &'c [Stmt],
        bound: Option<&mut BoundCall>,
    ) -> Res<Flow> {
        if let (
            Some(bound),
            [Stmt {
                kind: StmtKind::Expr(e),
                ..
            }],
        ) = (bound, body)
        {
            if let ExprKind::Method(target, method, candidates) = &e.kind {
                self.method(e, (target, method, candidates), Some(bound))?;
                return Ok(Flow::Next);
            }
        }
        self.block(body)
    }

    /// Binds `value` to `pattern`: most often one name, written in place.
    /// (Inlined always: `bind_tuple` calls it back, and the compiler then
    /// leaves the call of a mere hint in place, 26 instructions a `let`.)
    #[inline(always)]
    pub(super) fn bind_pattern(&mut self, pattern: &Pattern, value: Value) -> Res<()> {
        match pattern {
            Pattern::Bind(place, _) => self.write(*place, value),
            Pattern::Wildcard => {}
            Pattern::Tuple(items, span) => return self.bind_tuple(items, *span, value),
        }
        Ok(())
    }

    /// Binds `value`, which must be a tuple of as many values, to the
    /// tuple pattern of `items` at `span`.
    fn bind_tuple(&mut self, items: &[Pattern], span: Span, value: Value) -> Res<()> {
        let Some(vals) = value.tuple_items() else {
            return Err(self.error(
                Code::TypeMismatch,
                span,
                format!("cannot unpack `{value}` into a tuple pattern"),
                "not a tuple",
            ));
        };
        if vals.len() != items.len() {
            return Err(self.error(
                Code::TypeMismatch,
                span,
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
        Ok(())
    }

    pub(super) fn record_loop_var(&mut self, pattern: &Pattern, value: &Value) {
        match (pattern, value) {
            (Pattern::Bind(_, name), v) => {
                self.loop_vars
                    .push((name.clone(), v.clone(), super::operands::NO_FRAME))
            }
            (Pattern::Tuple(ps, _), v) => {
                if let Some(vs) = v.tuple_items() {
                    for (p, v) in ps.iter().zip(vs.iter()) {
                        self.record_loop_var(p, v);
                    }
                }
            }
            _ => {}
        }
    }

    /// Runs `body` once per combination of the loop clauses from `i` on,
    /// where the filter holds. `body` returns false to stop early.
    pub(super) fn for_each(
        &mut self,
        loops: &'c Loops,
        i: usize,
        body: &mut dyn FnMut(&mut Evaluator<'c>) -> Res<bool>,
    ) -> Res<bool> {
        if i == loops.clauses.len() {
            return self.filtered_body(loops, body);
        }
        let clause = &loops.clauses[i];
        let iterable = self.expr(&clause.iter)?;
        // One pattern walks a list's elements, a range's integers or a
        // map's keys; two walk a map's keys and values.
        let go_on = match (&iterable, &clause.patterns[..]) {
            (Value::Range(lo, hi), [Pattern::Bind(place, name)]) => {
                let at = self.loop_vars.len();
                let result = self.range_loop(loops, i, at, (*lo, *hi), (*place, name), body);
                self.loop_vars.truncate(at);
                self.loop_values_changed = true;
                return result;
            }
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
            (other, _) => return Err(self.not_iterable(other, clause.iter.span)),
        };
        match go_on {
            Ok(()) => Ok(true),
            Err(Stop::Early) => Ok(false),
            Err(Stop::Failed(d)) => Err(d),
        }
    }

    /// `body`, where the loops' filter holds (true, as if it ran, where
    /// it does not).
    #[inline]
    fn filtered_body(
        &mut self,
        loops: &'c Loops,
        body: &mut dyn FnMut(&mut Evaluator<'c>) -> Res<bool>,
    ) -> Res<bool> {
        if let Some(filter) = &loops.filter {
            if !self.cond(filter)? {
                return Ok(true);
            }
        }
        body(self)
    }

    /// Clause `i` of the common loop, one variable (`place`, `name`) over
    /// the range `lo..hi`, run as `iteration` runs any clause but in one
    /// frame: its entry in `loop_vars`, at `at`, is made once and
    /// rewritten each iteration (the caller truncates `loop_vars` to `at`
    /// after the last), and each iteration is a few tests before the
    /// clauses after it run, where the general path's closures cost a
    /// twentieth of an iteration's instructions. False where `body`
    /// stopped early.
    fn range_loop(
        &mut self,
        loops: &'c Loops,
        i: usize,
        at: usize,
        (lo, hi): (i64, i64),
        (place, name): (Place, &Rc<str>),
        body: &mut dyn FnMut(&mut Evaluator<'c>) -> Res<bool>,
    ) -> Res<bool> {
        let span = loops.clauses[i].iter.span;
        let innermost = i + 1 == loops.clauses.len();
        for v in lo..hi {
            self.next_iteration(span, at)?;
            self.set_loop_var(at, (place, name), || Value::Int(v));
            self.loop_values_changed = true;
            let go_on = if innermost {
                self.filtered_body(loops, body)?
            } else {
                self.for_each(loops, i + 1, body)?
            };
            if !go_on {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The error of a loop over `value`, which is no list, range or map.
    pub(super) fn not_iterable(&self, value: &Value, span: Span) -> Diagnostic {
        self.error(
            Code::TypeMismatch,
            span,
            format!("cannot loop over `{value}`"),
            "not a list, range or map",
        )
    }

    /// One iteration of clause `i`: binds `value` to `pattern`, then runs
    /// the clauses after it.
    pub(super) fn iteration(
        &mut self,
        loops: &'c Loops,
        i: usize,
        pattern: &Pattern,
        value: Value,
        body: &mut dyn FnMut(&mut Evaluator<'c>) -> Res<bool>,
    ) -> Result<(), Stop> {
        let marks = self.loop_vars.len();
        let result = self.step(loops, i, marks, body, |ev| {
            ev.record_loop_var(pattern, &value);
            ev.bind_pattern(pattern, value)
        });
        self.loop_vars.truncate(marks);
        self.loop_values_changed = true;
        result
    }

    /// One iteration of clause `i`, whose one variable (`place`, `name`)
    /// takes the value `value` makes (twice: for the variable, and for
    /// its entry in `loop_vars`, at `at`, which the first iteration makes
    /// and the next rewrite; the caller truncates `loop_vars` to `at`
    /// after the last), where `iteration` makes an entry each time.
    pub(super) fn bound_iteration(
        &mut self,
        loops: &'c Loops,
        i: usize,
        at: usize,
        (place, name): (Place, &Rc<str>),
        value: impl Fn() -> Value,
        body: &mut dyn FnMut(&mut Evaluator<'c>) -> Res<bool>,
    ) -> Result<(), Stop> {
        self.step(loops, i, at, body, |ev| {
            ev.set_loop_var(at, (place, name), value);
            Ok(())
        })
    }

    /// Gives the loop variable (`place`, `name`) the value `value` makes
    /// (twice: for the variable, and for its entry in `loop_vars`, at
    /// `at`, which the first iteration makes and the next rewrite).
    /// Inlined always, as `next_iteration`: a loop iteration spends 15
    /// instructions more where the compiler calls them.
    #[inline(always)]
    fn set_loop_var(
        &mut self,
        at: usize,
        (place, name): (Place, &Rc<str>),
        value: impl Fn() -> Value,
    ) {
        let fresh = (value(), super::operands::NO_FRAME);
        match self.loop_vars.get_mut(at) {
            Some((_, value, frame)) => (*value, *frame) = fresh,
            None => self.loop_vars.push((name.clone(), fresh.0, fresh.1)),
        }
        self.write(place, value());
    }

    /// Takes an iteration of the clause whose iterable is at `span` from
    /// the budget, within the memory; where either is spent, `loop_vars`
    /// goes back to the `outer` loops', those the message shows.
    #[inline(always)]
    fn next_iteration(&mut self, span: Span, outer: usize) -> Res<()> {
        if !self.spend(1) {
            self.loop_vars.truncate(outer);
            return Err(self.too_long(span, "loop stopped here"));
        }
        self.within_memory(span)
            .inspect_err(|_| self.loop_vars.truncate(outer))
    }

    /// One iteration of clause `i`, once the budget allows it: `enter`
    /// binds the clause's variables (and notes them in `loop_vars`), then
    /// the clauses after it run. `outer` loop variables are those around
    /// the clause, the ones a message shows if the budget ends here.
    fn step(
        &mut self,
        loops: &'c Loops,
        i: usize,
        outer: usize,
        body: &mut dyn FnMut(&mut Evaluator<'c>) -> Res<bool>,
        enter: impl FnOnce(&mut Evaluator<'c>) -> Res<()>,
    ) -> Result<(), Stop> {
        self.next_iteration(loops.clauses[i].iter.span, outer)
            .map_err(Stop::Failed)?;
        let result = enter(self).and_then(|()| {
            self.loop_values_changed = true;
            self.for_each(loops, i + 1, body)
        });
        match result {
            Ok(true) => Ok(()),
            Ok(false) => Err(Stop::Early),
            Err(d) => Err(Stop::Failed(d)),
        }
    }

    pub(super) fn pipeline(
        &mut self,
        span: Span,
        unit_size: &'c Expr,
        num_chunks: &'c Expr,
        body: &'c [Stmt],
    ) -> Res<Flow> {
        let unit = self.expr(unit_size)?;
        let chunks = self.expr(num_chunks)?;
        // Up to u64::MAX: the executor keeps the unit in 64 bits.
        let Some(unit_bytes) = unit.wide_int().filter(|u| *u > 0) else {
            return Err(self.error(
                Code::Pipeline,
                unit_size.span,
                "pipeline unit size must be a positive integer",
                format!("this is {unit}"),
            )
            .with_note("help: unit_size is the bytes each iteration moves: give a positive number, such as 1 << 20"));
        };
        let iter = crate::ir::IterContext {
            unit_size: unit_bytes as u64,
            num_chunks: self.count(
                num_chunks.span,
                "pipeline num_chunks",
                &chunks,
                u32::MAX.into(),
            )?,
        };
        self.recorder_mut(span)?;
        // Told the loop values: the pipeline's op is placed in the loops
        // around this statement.
        if !self.rec().open_pipeline(iter, span) {
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
}
