//! Checking statements: blocks and their scopes, `let`, assignments,
//! loops and their patterns, `if`, `return`, and what only the top level
//! may hold.

use super::*;

impl Checker {
    pub(super) fn block(&mut self, stmts: &[Stmt], end: u32) {
        self.scopes.push(Scope::until(end));
        for s in stmts {
            self.stmt(s, false);
        }
        self.scopes.pop();
    }

    pub(super) fn stmt(&mut self, stmt: &Stmt, top: bool) {
        let top_only = |c: &mut Checker, what: &str| {
            if !top {
                c.err(Diagnostic::error(
                    Code::Misplaced,
                    stmt.span,
                    format!("{what} must be at the top level of the file"),
                    "inside a block",
                ));
            }
        };
        match &stmt.kind {
            StmtKind::Param(p) => {
                let ParamDecl {
                    name,
                    ty,
                    values,
                    default,
                } = &**p;
                top_only(self, "a `param`");
                let t = self.resolve(ty);
                let settable = vocab::PARAM_TYPES
                    .iter()
                    .any(|p| Type::from_name(p).as_ref() == Some(&t));
                if !settable && t != Type::Any {
                    self.err(
                        Diagnostic::error(
                            Code::Misplaced,
                            ty.span(),
                            format!("a param cannot have type `{t}`"),
                            "not settable from the command line",
                        )
                        .with_note(format!(
                            "params have one of the types: {}",
                            vocab::PARAM_TYPES.join(", ")
                        )),
                    );
                }
                let got = self.expr(default);
                self.expect(
                    &got,
                    &t,
                    default.span,
                    &format!("the default of param `{}`", name.name),
                );
                if let Some(values) = values {
                    self.param_values(&name.name, &t, values);
                }
                if let Some(first) = self.params.insert(name.name.clone(), name.span) {
                    self.err(
                        Diagnostic::error(
                            Code::Misplaced,
                            name.span,
                            format!("param `{}` declared twice", name.name),
                            "second declaration",
                        )
                        .with_secondary(first, "first declaration")
                        .with_note("help: `-D` sets a param by its name: remove one, or rename it"),
                    );
                }
                self.bind(name, t, DefKind::Param);
            }
            StmtKind::Import { .. } => top_only(self, "an `import`"),
            StmtKind::Fn(_) => top_only(self, "a `fn`"),
            StmtKind::Program { name, options } => {
                top_only(self, "the `program` block");
                let t = self.expr(name);
                self.expect(&t, &Type::Str, name.span, "the program name");
                let mut seen: Vec<&str> = Vec::new();
                for opt in options {
                    let got = self.expr(&opt.value);
                    let key = opt.key.name.as_str();
                    match vocab::program_option(key) {
                        Some(option) => self.expect(
                            &got,
                            &option.ty,
                            opt.value.span,
                            &format!("option `{key}`"),
                        ),
                        None => {
                            let names: Vec<&str> =
                                vocab::PROGRAM_OPTIONS.iter().map(|o| o.name).collect();
                            let d = Diagnostic::error(
                                Code::Program,
                                opt.key.span,
                                format!("unknown program option `{key}`"),
                                "not an option",
                            )
                            .with_note(format!("the options are: {}", names.join(", ")));
                            let nearest = names
                                .iter()
                                .filter_map(|n| Some((crate::diag::spelling::near(key, n)?, *n)))
                                .min();
                            self.err(match nearest {
                                Some((_, n)) => d.with_note(format!("help: did you mean `{n}`?")),
                                None => d,
                            });
                        }
                    }
                    if seen.contains(&key) {
                        self.err(Diagnostic::error(
                            Code::Program,
                            opt.key.span,
                            format!("option `{key}` set twice"),
                            "already set above",
                        ));
                    }
                    seen.push(key);
                }
            }
            StmtKind::Let { pattern, value } => {
                let t = self.expr(value);
                self.bind_pattern(pattern, t, DefKind::Let);
            }
            StmtKind::Assign { target, value } => {
                let got = self.expr(value);
                if let Some(b) = self.binding(&target.name) {
                    self.refer(target.span, Target::Def(b.def));
                }
                match self.lookup(&target.name) {
                    Some(t) if self.binding(&target.name).is_some() => self.expect(
                        &got,
                        &t,
                        value.span,
                        &format!("the new value of `{}`", target.name),
                    ),
                    _ => {
                        self.err(
                            Diagnostic::error(
                                Code::UnknownName,
                                target.span,
                                format!("`{}` is not defined", target.name),
                                "assigned before `let`",
                            )
                            .with_note(format!(
                                "help: write `let {} = ...` to define it",
                                target.name
                            )),
                        );
                    }
                }
            }
            StmtKind::For { loops, body } => {
                self.scopes.push(Scope::until(stmt.span.end));
                self.loops(loops);
                self.block(body, stmt.span.end);
                self.scopes.pop();
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => {
                let t = self.expr(cond);
                self.expect(&t, &Type::Bool, cond.span, "the condition");
                self.block(then, stmt.span.end);
                self.block(otherwise, stmt.span.end);
            }
            StmtKind::Return(value) => {
                let got = value.as_ref().map_or(Type::Unit, |e| self.expr(e));
                match self.returns.clone() {
                    None => {
                        self.err(Diagnostic::error(
                            Code::Misplaced,
                            stmt.span,
                            "`return` outside a function",
                            "not in a `fn`",
                        ));
                    }
                    Some(want) if value.is_none() && want != Type::Unit => {
                        self.err(
                            Diagnostic::error(
                                Code::TypeMismatch,
                                stmt.span,
                                format!(
                                    "`return` without a value in a function that returns `{want}`"
                                ),
                                "returns no value",
                            )
                            .with_note(format!("help: give the `return` a value of type `{want}`")),
                        );
                    }
                    Some(want) => {
                        let span = value.as_ref().map_or(stmt.span, |e| e.span);
                        if want == Type::Unit && got != Type::Unit {
                            self.err(
                                Diagnostic::error(
                                    Code::Misplaced,
                                    span,
                                    "this function declares no result",
                                    "returns a value",
                                )
                                .with_note(format!(
                                    "help: add `-> {got}` after the parameter list"
                                )),
                            );
                        } else {
                            self.expect(&got, &want, span, "the returned value");
                        }
                    }
                }
            }
            StmtKind::Pipeline { args, body } => {
                match vocab::match_args(
                    "pipeline",
                    &vocab::PIPELINE_SETTINGS.map(|s| s.name),
                    &[true, true],
                    args,
                    stmt.span,
                ) {
                    Ok(slots) => {
                        for i in slots.into_iter().flatten() {
                            let t = self.expr(&args[i].value);
                            self.expect(&t, &Type::Int, args[i].value.span, "a pipeline setting");
                        }
                    }
                    Err(d) => {
                        self.err(d);
                    }
                }
                self.block(body, stmt.span.end);
            }
            StmtKind::Expr(e) => {
                let t = self.expr(e);
                // A name, field or index alone (`a`, `l[0]`) computes a
                // value and drops it: most often a call whose `(..)` was
                // left out. (One of no type had its error.)
                if !matches!(e.kind, ExprKind::Call(..)) && t != Type::Any {
                    self.err(
                        Diagnostic::error(
                            Code::Misplaced,
                            e.span,
                            "this statement does nothing",
                            "a value, not used",
                        )
                        .with_note("help: a statement is a call (`ch.put(..)`, `f(x)`), a `let` or an assignment: call what you meant to, keep the value with `let`, or delete the line"),
                    );
                }
            }
        }
    }

    /// A param's values (`in [1, 2, 4]`), what `msclc tune` tries: a list
    /// of literals of its type.
    fn param_values(&mut self, name: &str, t: &Type, values: &Expr) {
        let example = "a list of literals: `param tbg: int in [1, 2, 4] = 1`";
        let items = match &values.kind {
            ExprKind::List(items) if !items.is_empty() => items,
            _ => {
                self.err(Diagnostic::error(
                    Code::ParamValues,
                    values.span,
                    format!("the values of param `{name}` are {example}"),
                    "not a list of literals",
                ));
                return;
            }
        };
        for item in items {
            let got = self.expr(item);
            self.expect(&got, t, item.span, &format!("a value of param `{name}`"));
            // (An item of no type had its error: an unknown name is no
            // literal either, and one message says so.)
            if !matches!(got, Type::Any) && vocab::Literal::of(item).is_none() {
                self.err(Diagnostic::error(
                    Code::ParamValues,
                    item.span,
                    format!("the values of param `{name}` are {example}"),
                    "not a literal",
                ));
            }
        }
    }

    pub(super) fn bind_pattern(&mut self, p: &Pattern, t: Type, kind: DefKind) {
        match p {
            Pattern::Name(id) => self.bind(id, t, kind),
            Pattern::Wildcard(_) => {}
            Pattern::Tuple(items, span) => match t {
                Type::Tuple(ts) if ts.len() == items.len() => {
                    for (p, t) in items.iter().zip(ts) {
                        self.bind_pattern(p, t, kind);
                    }
                }
                Type::Any => items
                    .iter()
                    .for_each(|p| self.bind_pattern(p, Type::Any, kind)),
                other => {
                    self.err(Diagnostic::error(
                        Code::TypeMismatch,
                        *span,
                        format!("cannot unpack a `{other}` into {} names", items.len()),
                        "pattern does not fit",
                    ));
                    items
                        .iter()
                        .for_each(|p| self.bind_pattern(p, Type::Any, kind));
                }
            },
        }
    }

    /// Binds the loop variables of `loops` in the current scope and checks its filter.
    pub(super) fn loops(&mut self, loops: &Loops) {
        for clause in &loops.clauses {
            let t = self.expr(&clause.iter);
            let items: Vec<Type> = match (&t, clause.patterns.len()) {
                (Type::Range, 1) => vec![Type::Int],
                (Type::List(e), 1) => vec![(**e).clone()],
                (Type::Map(k, _), 1) => vec![(**k).clone()],
                (Type::Map(k, v), 2) => vec![(**k).clone(), (**v).clone()],
                (Type::Any, n) => vec![Type::Any; n],
                (other, n) => {
                    let what = if n == 2 {
                        "a map (two loop variables walk keys and values)"
                    } else {
                        "a list, range or map"
                    };
                    self.err(Diagnostic::error(
                        Code::TypeMismatch,
                        clause.iter.span,
                        format!("cannot loop over a `{other}` with {n} variable(s)"),
                        format!("expected {what}"),
                    ));
                    vec![Type::Any; n]
                }
            };
            for (p, t) in clause.patterns.iter().zip(items) {
                self.bind_pattern(p, t, DefKind::LoopVariable);
            }
        }
        if let Some(f) = &loops.filter {
            let t = self.expr(f);
            self.expect(&t, &Type::Bool, f.span, "the `where` filter");
        }
    }
}

/// Whether running `stmts` always ends in a `return` or a stop: one of
/// them is a `return`, an `assert(false, ..)`, a `pipeline` whose body
/// always returns (it runs once), or an `if` both of whose branches
/// always return. A loop may run no time, so none counts.
pub(super) fn always_return(stmts: &[Stmt]) -> bool {
    stmts.iter().any(|s| match &s.kind {
        StmtKind::Return(_) => true,
        StmtKind::If {
            then, otherwise, ..
        } => always_return(then) && always_return(otherwise),
        StmtKind::Pipeline { body, .. } => always_return(body),
        StmtKind::Expr(e) => stops(e),
        _ => false,
    })
}

/// Whether `e` is `assert(false, ...)`, which stops the program.
fn stops(e: &Expr) -> bool {
    let ExprKind::Call(callee, args) = &e.kind else {
        return false;
    };
    matches!(&callee.kind, ExprKind::Name(n) if n == "assert")
        && matches!(args.first(), Some(a) if a.name.is_none() && a.value.kind == ExprKind::Bool(false))
}
