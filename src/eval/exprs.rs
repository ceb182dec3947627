//! Evaluating expressions: constants, reads, lists, maps and
//! comprehensions, and calls of builtins and of the program's own
//! functions (the operators are `operators.rs`).

use super::*;

impl<'c> Evaluator<'c> {
    /// `expr`, with a variable or a constant ([`Self::leaf`]) copied where
    /// it is used rather than through another call's return slot.
    #[inline(always)]
    pub(super) fn operand(&mut self, e: &'c Expr) -> Res<Value> {
        match self.leaf(e) {
            Some(v) => Ok(v.clone()),
            None => self.expr(e),
        }
    }

    /// The value a variable or a constant holds, where it is held: read
    /// in place, no value is made or copied (and none handed back through
    /// a return slot, which on x86 stalls the read after it). `None` for
    /// any other expression, and for a global not yet defined: those take
    /// the general way.
    #[inline(always)]
    fn leaf<'a>(&'a self, e: &'a Expr) -> Option<&'a Value> {
        match &e.kind {
            ExprKind::Read(Place::Local(slot)) => Some(&self.stack[self.base + *slot as usize]),
            ExprKind::Read(Place::Global(slot)) => self.globals[*slot as usize].as_ref(),
            ExprKind::Const(v) => Some(v),
            _ => None,
        }
    }

    /// The int a leaf holds: the operands of most arithmetic and
    /// comparisons (`peer != gpu`) and the items of most map keys.
    #[inline(always)]
    pub(super) fn int_leaf(&self, e: &Expr) -> Option<i64> {
        match self.leaf(e)? {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }

    /// `m[(a, b)]` where `m` is a map and `a`, `b` ints, all leaves, and the
    /// map has the entry: the hot path of programs over channel maps (the
    /// pair is looked up, never built; the map is not cloned). `None`
    /// sends anything else, and a missing key, the general way.
    #[inline(always)]
    fn pair_entry<'a>(&'a self, target: &'a Expr, index: &'a Expr) -> Option<&'a Value> {
        let (Value::Map(m), ExprKind::Tuple(items)) = (self.leaf(target)?, &index.kind) else {
            return None;
        };
        let [a, b] = &items[..] else {
            return None;
        };
        let key = Value::Pair(self.int_leaf(a)?, self.int_leaf(b)?);
        m.lookup(value::Key::Value(&key))
    }

    /// `rank(r).input[i]` or `.output[i]`, `r` and `i` ints held in
    /// variables or constants: the operand of most ops, made without the
    /// rank and buffer values between. `None` for any other expression.
    #[inline(never)]
    fn rank_chunk(&mut self, target: &'c Expr, index: &'c Expr) -> Option<Res<Value>> {
        let ExprKind::Field(inner, field, name) = &target.kind else {
            return None;
        };
        let kind = match field {
            Field::Input => crate::ir::BufferKind::Input,
            Field::Output => crate::ir::BufferKind::Output,
            _ => return None,
        };
        let ExprKind::Builtin(sig, args) = &inner.kind else {
            return None;
        };
        let (Builtin::Rank, [BuiltinArg::Given(r)]) = (sig.builtin, &args[..]) else {
            return None;
        };
        let rank = args::Arg {
            value: self.int_leaf(r)?,
            span: r.span,
        };
        let at = (self.int_leaf(index)?, index.span);
        Some(calls::rank_chunk(
            self,
            inner.span,
            &rank,
            (kind, name.span),
            at,
        ))
    }

    pub(crate) fn expr(&mut self, e: &'c Expr) -> Res<Value> {
        // The cheap kinds here; the others in functions of their own, so
        // that this one, entered for every node, keeps a small frame.
        match &e.kind {
            ExprKind::Const(v) => Ok(v.clone()),
            ExprKind::Read(place) => self.read(*place, e.span),
            ExprKind::Binary(op, a, b) => self.binary(e.span, *op, a, b),
            _ => self.compound(e),
        }
    }

    #[inline(never)]
    fn compound(&mut self, e: &'c Expr) -> Res<Value> {
        match &e.kind {
            ExprKind::Const(_) | ExprKind::Read(_) | ExprKind::Binary(..) => self.expr(e),
            ExprKind::Unary(op, inner) => {
                let v = self.expr(inner)?;
                match (op, v) {
                    // `-9223372036854775808` negates a `Big`; `-i64::MIN`
                    // is one.
                    (UnOp::Neg, v) if v.wide_int().is_some() => {
                        let negated = v.wide_int().and_then(|i| Value::int(-i));
                        negated.ok_or_else(|| {
                            self.error(
                                Code::Arithmetic,
                                e.span,
                                "integer overflow",
                                format!("-{v} is below the smallest int, {}", i64::MIN),
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
            ExprKind::Range(a, b) => {
                let (a, b) = (self.expr(a)?, self.expr(b)?);
                match (a, b) {
                    (Value::Int(a), Value::Int(b)) => Ok(Value::Range(a, b)),
                    (a, b) if a.wide_int().is_some() && b.wide_int().is_some() => Err(self.error(
                        Code::Limit,
                        e.span,
                        format!("the range {a}..{b} ends past {}", i64::MAX),
                        "a range's bounds are at most 9223372036854775807",
                    )),
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
                // Read where it was bound: a call's record is a few
                // hundred bytes, and `?` would copy it.
                let bound = self.bind(e.span, sig.builtin, args);
                let Ok(call) = &bound else {
                    return bound.map(|_| Value::Unit);
                };
                calls::call_builtin(self, e.span, call, None)
            }
            ExprKind::Method(target, method, candidates) => {
                self.method(e, (target, method, candidates), None)
            }
            ExprKind::Field(target, field, name) => {
                let v = self.expr(target)?;
                calls::field(self, &v, *field, name)
            }
            ExprKind::Index(target, index) => {
                if let Some(v) = self.pair_entry(target, index) {
                    return Ok(v.clone());
                }
                if let Some(chunk) = self.rank_chunk(target, index) {
                    return chunk;
                }
                let t = self.expr(target)?;
                if let (Value::Map(m), ExprKind::Tuple(items)) = (&t, &index.kind) {
                    // A key of values yet to be built is looked up as it
                    // is, without building the tuple.
                    let mut key = smallvec::SmallVec::<[Value; 4]>::new();
                    for item in items {
                        let part = self.operand(item)?;
                        self.walk_parts(item.span, &part)?;
                        key.push(part);
                    }
                    if let Some(v) = m.lookup(value::Key::Tuple(&key)) {
                        return Ok(v.clone());
                    }
                    let key = Value::tuple(&key);
                    return calls::index(self, e.span, &t, &key, index.span);
                }
                if let Some(i) = self.int_leaf(index) {
                    return calls::index(self, e.span, &t, &Value::Int(i), index.span);
                }
                let i = self.expr(index)?;
                calls::index(self, e.span, &t, &i, index.span)
            }
            ExprKind::Tuple(items) => {
                if let [x, y] = &items[..] {
                    if let (Some(x), Some(y)) = (self.int_leaf(x), self.int_leaf(y)) {
                        return Ok(Value::Pair(x, y));
                    }
                }
                let mut values = smallvec::SmallVec::<[Value; 4]>::new();
                for item in items {
                    values.push(self.expr(item)?);
                }
                Ok(Value::tuple(&values))
            }
            ExprKind::List(items) => Ok(Value::List(self.exprs(items)?)),
            ExprKind::ListComp(item, loops) => {
                let mut out = Vec::new();
                self.for_each(loops, 0, &mut |ev| {
                    ev.within_size(e.span, out.len() + 1, "a list", "elements")?;
                    out.push(ev.expr(item)?);
                    Ok(true)
                })?;
                Ok(Value::List(out.into()))
            }
            ExprKind::Map(entries) => {
                let mut m = MapBuilder::new();
                for (key, v) in entries {
                    let (k, v) = (self.expr(key)?, self.expr(v)?);
                    self.walk_parts(key.span, &k)?;
                    m.insert(k, v);
                }
                Ok(Value::Map(Rc::new(m.finish())))
            }
            ExprKind::If(cond, then, otherwise) => {
                if self.cond(cond)? {
                    self.expr(then)
                } else {
                    self.expr(otherwise)
                }
            }
            ExprKind::MapComp(k, v, loops) => {
                let mut m = MapBuilder::new();
                self.for_each(loops, 0, &mut |ev| {
                    let (key, val) = (ev.expr(k)?, ev.expr(v)?);
                    ev.walk_parts(k.span, &key)?;
                    m.insert(key, val);
                    ev.within_size(e.span, m.len(), "a map", "entries")?;
                    Ok(true)
                })?;
                Ok(Value::Map(Rc::new(m.finish())))
            }
        }
    }

    /// The method call `e`, of `method` on `target`, its signature the
    /// one among `candidates` for the receiver's kind. `bound` holds the
    /// call's arguments where a loop binds the call once (`bound_once`):
    /// bound into it at the first call, read there by the next, which bind
    /// again only the arguments an iteration changes
    /// (`MethodCandidate::varying`).
    #[inline(always)]
    pub(super) fn method(
        &mut self,
        e: &'c Expr,
        (target, method, candidates): (&'c Expr, &ast::Ident, &'c [MethodCandidate]),
        bound: Option<&mut BoundCall>,
    ) -> Res<Value> {
        let recv = match &target.kind {
            ExprKind::Index(map, key) => match self.pair_entry(map, key) {
                Some(v) => v.clone(),
                None => self.expr(target)?,
            },
            _ => self.expr(target)?,
        };
        let kind = calls::receiver_of(&recv);
        let mut picked = candidates.iter().enumerate();
        let Some((which, candidate)) = picked.find(|(_, c)| Some(c.receiver) == kind) else {
            return Err(self.error(
                Code::NoSuchMember,
                method.span,
                format!("`{recv}` has no method `{}`", method.name),
                "no such method",
            ));
        };
        let shard = self.shard;
        if let Some(steps) = candidate.skip_steps {
            let owner = (shard.count > 1)
                .then(|| shard::owner(&recv))
                .flatten()
                .filter(|r| !shard.owns(*r));
            if let Some(owner) = owner {
                // Another shard records it (shard.rs): this one
                // spends the steps its arguments would, and notes
                // the rank it would touch.
                if let Some(rec) = self.recorder.as_mut() {
                    rec.touch(owner);
                }
                if !self.spend(steps) {
                    return Err(self.too_long(e.span, "stopped at this call"));
                }
                return Ok(Value::Unit);
            }
        }
        let args = candidate.args.as_ref().map_err(|d| d.clone())?;
        let value = match bound {
            Some(bound) => {
                let call = match bound {
                    Some((was, call)) if *was == which => {
                        if candidate.varying != 0 {
                            let args = &mut CallArgs {
                                ev: self,
                                args: args.iter(),
                                span: e.span,
                            };
                            call.rebind(args, candidate.varying)?;
                        }
                        call
                    }
                    _ => {
                        &bound
                            .insert((which, self.bind(e.span, candidate.sig.builtin, args)?))
                            .1
                    }
                };
                calls::call_builtin(self, e.span, call, Some(recv))?
            }
            None => {
                // Read where it was bound: a call's record is a few
                // hundred bytes, and `?` would copy it.
                let bound = self.bind(e.span, candidate.sig.builtin, args);
                let Ok(call) = &bound else {
                    return bound.map(|_| Value::Unit);
                };
                calls::call_builtin(self, e.span, call, Some(recv))?
            }
        };
        self.within_op_budget(e.span)?;
        Ok(value)
    }

    /// The values of a list literal's items, in one allocation.
    pub(super) fn exprs(&mut self, items: &'c [Expr]) -> Res<Rc<[Value]>> {
        Ok(shared(self.list_items(items)?))
    }

    /// The values of a list literal's items, a few of them kept inline:
    /// a builtin's list argument is bound from them without a list made.
    fn list_items(&mut self, items: &'c [Expr]) -> Res<ListItems> {
        let mut values = ListItems::new();
        for item in items {
            values.push(self.expr(item)?);
        }
        Ok(values)
    }

    /// Evaluates a call of `builtin`'s arguments (`span` is the call's:
    /// where a default comes from) into its typed record.
    pub(super) fn bind(
        &mut self,
        span: Span,
        builtin: Builtin,
        args: &'c [BuiltinArg],
    ) -> Res<Call> {
        Call::bind(
            builtin,
            &mut CallArgs {
                ev: self,
                args: args.iter(),
                span,
            },
        )
    }

    pub(super) fn call_user(&mut self, span: Span, id: u32, args: &'c [UserArg]) -> Res<Value> {
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
            )
            .with_note("help: a function that calls itself (directly or through others) needs a case that returns without calling again: check the condition that should end it, or loop instead"));
        }
        if crate::stack::too_deep() {
            let d = self.error(
                Code::Limit,
                span,
                "recursion too deep",
                format!("{} nested calls fill msclc's stack here", self.depth),
            );
            let bytes = crate::stack::size().unwrap_or(crate::STACK_BYTES);
            return Err(match bytes < crate::STACK_BYTES {
                true => d.with_note(format!(
                    "help: msclc has a stack of {} MB here, not its usual 1 GB: the address-space limit (`ulimit -v`) leaves no room for more; raise it, or nest calls less deeply",
                    bytes >> 20
                )),
                false => d.with_note("help: nest calls less deeply, or blocks within them"),
            });
        }
        let f = &self.code.functions[id as usize];
        // The callee's frame goes on top of the caller's before the
        // arguments are evaluated: given ones in the caller's frame,
        // defaults in the callee's (they see only globals, but their
        // comprehensions need slots).
        let (caller, callee) = (self.base, self.stack.len());
        self.stack.resize(callee + f.frame as usize, Value::Unit);
        self.depth += 1;
        // What the call records keeps where it was called, among its loop
        // values (`LoopValues::call_sites`).
        let loops = self.loop_vars.len();
        let site = Value::Int(crate::ir::call_site_value(span));
        let name = self.call_frame.clone();
        self.loop_vars.push((name, site, super::operands::NO_FRAME));
        self.loop_values_changed = true;
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
        self.loop_vars.truncate(loops);
        self.loop_values_changed = true;
        Ok(match result.map_err(|d| d.called_at(span))? {
            Flow::Return(v) => v,
            Flow::Next => Value::Unit,
        })
    }
}

/// A method call's arguments bound for a loop's iterations
/// (`StmtKind::For::bound_once`; those that vary bound again at each),
/// with the candidate they were bound for.
pub(super) type BoundCall = Option<(usize, Call)>;

/// A list literal's values, before they are a list.
type ListItems = smallvec::SmallVec<[Value; 8]>;

/// `values` as a list's shared items, in one allocation.
fn shared(values: ListItems) -> Rc<[Value]> {
    if values.spilled() {
        values.into_vec().into()
    } else {
        Rc::from(&values[..])
    }
}

/// A builtin call's arguments as its record asks for them: each evaluated
/// then, and read where it is held when it is a variable or a constant.
struct CallArgs<'e, 'c> {
    ev: &'e mut Evaluator<'c>,
    args: std::slice::Iter<'c, BuiltinArg>,
    /// The call's: where a default comes from.
    span: Span,
}

impl args::Arguments for CallArgs<'_, '_> {
    #[inline(always)]
    fn next<T: args::FromValue>(&mut self, name: &str) -> Res<args::Arg<T>> {
        let evaluated;
        let (v, span) = match self.args.next() {
            Some(BuiltinArg::Given(e)) => match (self.ev.leaf(e), &e.kind) {
                (Some(v), _) => (v, e.span),
                // A list literal (`[rank(peer).input[i]]`) given to a list
                // parameter: bound from its items, no list allocated; one
                // item, the most common (a reduce's peer chunk), from its
                // value alone.
                (None, ExprKind::List(items)) if T::LIST => {
                    let (one, many);
                    let values: &[Value] = match &items[..] {
                        [item] => {
                            one = self.ev.operand(item)?;
                            std::slice::from_ref(&one)
                        }
                        _ => {
                            many = self.ev.list_items(items)?;
                            &many
                        }
                    };
                    if let Some(value) = T::from_items(values) {
                        return Ok(args::Arg {
                            value,
                            span: e.span,
                        });
                    }
                    evaluated = Value::List(values.into());
                    (&evaluated, e.span)
                }
                (None, _) => {
                    evaluated = self.ev.expr(e)?;
                    (&evaluated, e.span)
                }
            },
            Some(BuiltinArg::Default(v)) => (v, self.span),
            None => {
                return Err(Diagnostic::error(
                    Code::Internal,
                    self.span,
                    "internal error: a builtin call has fewer arguments than its signature",
                    "here",
                ))
            }
        };
        match T::from_value(v) {
            Some(value) => Ok(args::Arg { value, span }),
            None if v.holds_big() => Err(args::too_large(name, v, span)),
            None => Err(args::wrong_type::<T>(name, v, span)),
        }
    }

    #[inline(always)]
    fn skip(&mut self) {
        self.args.next();
    }
}
