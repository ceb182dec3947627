//! Checking expressions: each gets its static type, names are looked up
//! (with a "did you mean" when one is misspelt), operators get operands of
//! the types they take.

use super::*;

impl Checker {
    pub(super) fn expr(&mut self, e: &Expr) -> Type {
        let t = self.expr_type(e);
        if let Some(index) = &mut self.index {
            index.types.push((e.span, t.clone()));
        }
        t
    }

    pub(super) fn expr_type(&mut self, e: &Expr) -> Type {
        match &e.kind {
            ExprKind::Int(_) => Type::Int,
            ExprKind::Str(_) => Type::Str,
            ExprKind::Bool(_) => Type::Bool,
            ExprKind::Name(n) => match self.lookup(n) {
                Some(t) => {
                    let to = match self.binding(n) {
                        Some(b) => Target::Def(b.def),
                        None => match vocab::CONSTANTS.iter().find(|(c, _)| c == n) {
                            Some((c, _)) => Target::Constant(c),
                            None => return t,
                        },
                    };
                    self.refer(e.span, to);
                    t
                }
                None if self.functions.contains_key(n)
                    || self.builtins.contains_key(&(Receiver::Free, n.as_str())) =>
                {
                    self.err(Diagnostic::error(
                        Code::TypeMismatch,
                        e.span,
                        format!("`{n}` is a function, not a value"),
                        "call it with `(..)`",
                    ))
                }
                None => {
                    let mut d = Diagnostic::error(
                        Code::UnknownName,
                        e.span,
                        format!("`{n}` is not defined"),
                        "unknown name",
                    );
                    // Python's `True` and `False` are words here, not names.
                    let literal = ["true", "false"]
                        .into_iter()
                        .find(|w| w.eq_ignore_ascii_case(n))
                        .map(String::from);
                    let hint = literal.or_else(|| {
                        (self.found() < super::MOST_ERRORS)
                            .then(|| self.similar_name(n))
                            .flatten()
                    });
                    // Python's loop words: a loop here runs its whole range.
                    let loop_word = matches!(n.as_str(), "break" | "continue");
                    d = d.with_note(match hint {
                        Some(s) => format!("help: did you mean `{s}`?"),
                        None if loop_word => format!("help: there is no `{n}`: a loop runs over its whole range or list; skip iterations with `where` (`for i in 0..n where i != r`) or `if`, and leave a function's loop with `return`"),
                        None => match super::calls::import_to_call(n) {
                            Some(import) => format!("help: {import}, and call it with `(..)`"),
                            None => "help: define it with `let` or `param` before this use".to_string(),
                        },
                    });
                    self.unseen.push((self.errors.len(), n.clone()));
                    self.err(d)
                }
            },
            ExprKind::Unary(op, inner) => {
                let t = self.expr(inner);
                let (want, what) = if *op == UnOp::Neg {
                    (Type::Int, "`-`")
                } else {
                    (Type::Bool, "`!`")
                };
                self.expect(&t, &want, inner.span, &format!("the operand of {what}"));
                want
            }
            ExprKind::Binary(op, a, b) => self.binary(e.span, *op, a, b),
            ExprKind::Range(a, b) => {
                for x in [a, b] {
                    let t = self.expr(x);
                    self.expect(&t, &Type::Int, x.span, "a range bound");
                }
                Type::Range
            }
            ExprKind::Call(callee, args) => self.call(e.span, callee, args),
            ExprKind::Field(target, field) => {
                let t = self.expr(target);
                if t == Type::Any {
                    return Type::Any;
                }
                match vocab::Field::of(&field.name).and_then(|f| f.type_on(&t)) {
                    Some(ft) => ft,
                    None => {
                        let hint = if Receiver::of(&t)
                            .is_some_and(|r| self.builtins.contains_key(&(r, field.name.as_str())))
                        {
                            format!("`{}` is a method: call it with `(..)`", field.name)
                        } else {
                            format!("a `{t}` has no field `{}`", field.name)
                        };
                        let d = Diagnostic::error(
                            Code::NoSuchMember,
                            field.span,
                            format!("no field `{}` on `{t}`", field.name),
                            hint,
                        );
                        self.err(with_fields_of(d, &t, &field.name))
                    }
                }
            }
            ExprKind::Index(target, index) => {
                let t = self.expr(target);
                let i = self.expr(index);
                match (&t, &i) {
                    (Type::Any, _) => Type::Any,
                    (Type::List(elem), _) => {
                        self.expect(&i, &Type::Int, index.span, "a list index");
                        (**elem).clone()
                    }
                    (Type::Map(k, v), _) => {
                        self.expect(&i, k, index.span, "a map key");
                        (**v).clone()
                    }
                    (Type::Buffer, Type::Int | Type::Range | Type::Any) => Type::Chunk,
                    (Type::Tuple(items), Type::Int) => match &index.kind {
                        ExprKind::Int(k) if (*k as usize) < items.len() => {
                            items[*k as usize].clone()
                        }
                        _ => self.err(Diagnostic::error(
                            Code::Index,
                            index.span,
                            "a tuple index must be an integer literal within the tuple",
                            "not a valid tuple index",
                        )),
                    },
                    _ => self.err(
                        Diagnostic::error(
                            Code::TypeMismatch,
                            e.span,
                            format!("cannot index a `{t}` with a `{i}`"),
                            "not indexable this way",
                        )
                        .with_note(
                            "lists and tuples take an int, maps a key, buffers an int or a range",
                        ),
                    ),
                }
            }
            ExprKind::Tuple(items) => {
                let t = Type::Tuple(items.iter().map(|i| self.expr(i)).collect());
                self.within_type_size(t, e.span)
            }
            ExprKind::List(items) => {
                let mut elem = Type::Any;
                for item in items {
                    let t = self.expr(item);
                    elem = match elem.join(&t) {
                        Some(j) => j,
                        None => self.err(Diagnostic::error(
                            Code::TypeMismatch,
                            item.span,
                            format!("list elements differ in type: `{elem}` and `{t}`"),
                            format!("of type `{t}`"),
                        )),
                    };
                }
                Type::List(Box::new(elem))
            }
            ExprKind::ListComp(item, loops) => {
                self.scopes.push(Scope::until(e.span.end));
                self.loops(loops);
                let t = self.expr(item);
                self.scopes.pop();
                Type::List(Box::new(t))
            }
            ExprKind::Map(entries) => {
                let (mut kt, mut vt) = (Type::Any, Type::Any);
                for (k, v) in entries {
                    let (a, b) = (self.expr(k), self.expr(v));
                    kt = kt.join(&a).unwrap_or_else(|| {
                        self.err(Diagnostic::error(
                            Code::TypeMismatch,
                            k.span,
                            "map keys differ in type",
                            format!("of type `{a}`"),
                        ))
                    });
                    vt = vt.join(&b).unwrap_or_else(|| {
                        self.err(Diagnostic::error(
                            Code::TypeMismatch,
                            v.span,
                            "map values differ in type",
                            format!("of type `{b}`"),
                        ))
                    });
                }
                self.within_type_size(Type::Map(Box::new(kt), Box::new(vt)), e.span)
            }
            ExprKind::MapComp(k, v, loops) => {
                self.scopes.push(Scope::until(e.span.end));
                self.loops(loops);
                let (kt, vt) = (self.expr(k), self.expr(v));
                self.scopes.pop();
                self.within_type_size(Type::Map(Box::new(kt), Box::new(vt)), e.span)
            }
            ExprKind::If(cond, then, otherwise) => {
                let t = self.expr(cond);
                self.expect(&t, &Type::Bool, cond.span, "the condition");
                let (a, b) = (self.expr(then), self.expr(otherwise));
                a.join(&b).unwrap_or_else(|| {
                    self.err(
                        Diagnostic::error(
                            Code::TypeMismatch,
                            otherwise.span,
                            format!("the branches of this `if` differ in type: `{a}` and `{b}`"),
                            format!("of type `{b}`"),
                        )
                        .with_secondary(then.span, format!("of type `{a}`"))
                        .with_note("both branches of an `if` expression must have the same type"),
                    )
                })
            }
        }
    }

    /// The defined name closest to `n`, for a "did you mean" hint: the
    /// fewest edits, then the innermost scope, then the first in
    /// alphabetical order, so that the same program gets the same hint on
    /// every run (a scope's names are a hash map, in no fixed order).
    pub(super) fn similar_name(&self, n: &str) -> Option<String> {
        let in_scope = self
            .scopes
            .iter()
            .rev()
            .enumerate()
            .flat_map(|(depth, s)| s.names.keys().map(move |name| (depth, name.as_str())));
        let constants = vocab::CONSTANTS
            .iter()
            .map(|(c, _)| (self.scopes.len(), *c));
        in_scope
            .chain(constants)
            .filter_map(|(depth, c)| Some((crate::diag::spelling::near(n, c)?, depth, c)))
            .min()
            .map(|(.., c)| c.to_string())
    }

    /// Both operands of `op` must fit `want`.
    pub(super) fn operands(
        &mut self,
        op: BinOp,
        left: (&Type, Span),
        right: (&Type, Span),
        want: &Type,
    ) {
        self.expect(
            left.0,
            want,
            left.1,
            &format!("the left side of `{}`", op.symbol()),
        );
        self.expect(
            right.0,
            want,
            right.1,
            &format!("the right side of `{}`", op.symbol()),
        );
    }

    pub(super) fn binary(&mut self, span: Span, op: BinOp, a: &Expr, b: &Expr) -> Type {
        let (x, y) = (self.expr(a), self.expr(b));
        use BinOp::*;
        let many = |t: &Type| matches!(t, Type::List(_) | Type::Tuple(_) | Type::Str | Type::Any);
        let cheap = match op {
            Add => !(many(&x) && many(&y)),
            Eq | Ne => !many(&y),
            _ => false,
        };
        if cheap {
            self.checked.cheap_operators.insert(span);
        }
        match op {
            Eq | Ne => {
                if !x.fits(&y) && !y.fits(&x) {
                    self.err(Diagnostic::error(
                        Code::TypeMismatch,
                        span,
                        format!("cannot compare values of type `{x}` and `{y}`"),
                        "different types",
                    ));
                }
                Type::Bool
            }
            And | Or => {
                self.operands(op, (&x, a.span), (&y, b.span), &Type::Bool);
                Type::Bool
            }
            In => {
                match &y {
                    Type::List(e) => self.expect(&x, e, a.span, "the tested value"),
                    Type::Map(k, _) => self.expect(&x, k, a.span, "the tested key"),
                    Type::Range => self.expect(&x, &Type::Int, a.span, "the tested value"),
                    Type::Any | Type::Tuple(_) => {}
                    other => {
                        self.err(Diagnostic::error(
                            Code::TypeMismatch,
                            b.span,
                            format!("cannot test membership in a `{other}`"),
                            "expected a list, map or range",
                        ));
                    }
                }
                Type::Bool
            }
            Add if matches!((&x, &y), (Type::Str, Type::Str)) => Type::Str,
            Add if matches!((&x, &y), (Type::List(_), Type::List(_))) => match x.join(&y) {
                Some(t) => t,
                None => self.err(Diagnostic::error(
                    Code::TypeMismatch,
                    span,
                    format!("cannot join lists of type `{x}` and `{y}`"),
                    "element types differ",
                )),
            },
            // A string or a list added to something else: neither side
            // alone is the mistake.
            Add if [&x, &y]
                .iter()
                .any(|t| matches!(t, Type::Str | Type::List(_)))
                && ![&x, &y].iter().any(|t| matches!(t, Type::Any)) =>
            {
                let text_and_int = [&x, &y].contains(&&Type::Str) && [&x, &y].contains(&&Type::Int);
                let d = Diagnostic::error(
                    Code::TypeMismatch,
                    a.span,
                    format!("cannot add values of type `{x}` and `{y}`"),
                    format!("of type `{x}`"),
                )
                .with_secondary(b.span, format!("of type `{y}`"))
                .with_note("`+` joins two strings or two lists, and adds two ints");
                self.err(match text_and_int {
                    true => d.with_note("help: `str(n)` writes an int as text: `\"tb\" + str(n)`"),
                    false => d,
                })
            }
            // The Python DSL joins its sync flags with `|`; here each
            // setting is one constant.
            BitOr | BitAnd
                if [&x, &y]
                    .iter()
                    .all(|t| *t != &Type::Any && t.fits(&Type::SyncType)) =>
            {
                self.err(
                    Diagnostic::error(
                        Code::TypeMismatch,
                        span,
                        format!("`{}` does not combine sync settings", op.symbol()),
                        "two sync settings",
                    )
                    .with_note("help: a data sync is one setting: `both` where the Python DSL writes `before | after`; `before`, `after` or `none` alone"),
                );
                Type::SyncType
            }
            Lt | Le | Gt | Ge => {
                self.operands(op, (&x, a.span), (&y, b.span), &Type::Int);
                Type::Bool
            }
            _ => {
                self.operands(op, (&x, a.span), (&y, b.span), &Type::Int);
                Type::Int
            }
        }
    }
}

/// `d`, a field `name` that a `t` lacks, with the fields a `t` has, and
/// the one `name` most likely meant.
fn with_fields_of(d: Diagnostic, t: &Type, name: &str) -> Diagnostic {
    let fields: Vec<&str> = vocab::Field::NAMES
        .iter()
        .copied()
        .filter(|f| vocab::Field::of(f).and_then(|f| f.type_on(t)).is_some())
        .collect();
    let d = match fields.is_empty() {
        true => d.with_note(format!("a `{t}` has no fields")),
        false => d.with_note(format!("its fields are: {}", fields.join(", "))),
    };
    let nearest = fields
        .iter()
        .filter_map(|f| Some((crate::diag::spelling::near(name, f)?, *f)))
        .min();
    match nearest {
        Some((_, f)) => d.with_note(format!("help: did you mean `{f}`?")),
        None => d,
    }
}
