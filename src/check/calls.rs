//! Checking calls: of builtins against their signatures, of methods
//! against their receivers, of the program's own functions against their
//! parameters.

use super::*;

impl Checker {
    /// The function closest to `n` by spelling, the program's own or a
    /// builtin one, for a "did you mean": the nearest, then the first in
    /// alphabetical order, so that a program gets the same hint each run.
    fn similar_function(&self, n: &str) -> Option<String> {
        let own = self.functions.keys().map(String::as_str);
        let builtin = self
            .builtins
            .keys()
            .filter(|(receiver, _)| *receiver == Receiver::Free)
            .map(|(_, name)| *name);
        own.chain(builtin)
            .filter_map(|f| Some((crate::diag::spelling::near(n, f)?, f)))
            .min()
            .map(|(_, f)| f.to_string())
    }

    pub(super) fn call(&mut self, span: Span, callee: &Expr, args: &[Arg]) -> Type {
        let (name, params, ret): (String, Vec<(String, Type, bool)>, Type) = match &callee.kind {
            ExprKind::Name(n) => {
                if let Some(f) = self.functions.get(n) {
                    let params = f
                        .def
                        .params
                        .iter()
                        .zip(&f.params)
                        .map(|(p, t)| (p.name.name.clone(), t.clone(), p.default.is_none()))
                        .collect();
                    let (ret, id) = (f.ret.clone(), f.id);
                    self.refer(callee.span, Target::Def(id));
                    (n.clone(), params, ret)
                } else if let Some(sig) = self.builtins.get(&(Receiver::Free, n.as_str())) {
                    let (params, ret, name) = (sig_params(sig), sig.ret.clone(), sig.name);
                    self.refer(callee.span, Target::Builtin(Receiver::Free, name));
                    (n.clone(), params, ret)
                } else {
                    for a in args {
                        self.expr(&a.value);
                    }
                    let d = Diagnostic::error(
                        Code::UnknownName,
                        callee.span,
                        format!("no function named `{n}`"),
                        "unknown function",
                    );
                    // Python's builtins that .mscl spells otherwise.
                    let instead = match n.as_str() {
                        "range" => Some("a range is `a..b` (`for i in 0..n`); a stepped one is a loop over its count, `a + i * step`"),
                        "enumerate" => Some("loop over the indices, `for i in 0..len(l) { let x = l[i] }`"),
                        "print" => Some("a program prints nothing; `assert(condition, message)` stops it with a message"),
                        "abs" | "sum" | "sorted" | "reversed" | "map" | "filter" | "any" | "all" => Some("write it with a comprehension or a loop: the builtins are `len`, `min`, `max`, `str` and `assert`"),
                        _ => None,
                    };
                    let help = instead
                        .map(String::from)
                        .or_else(|| import_to_call(n))
                        .or_else(|| {
                            self.similar_function(n)
                                .map(|f| format!("did you mean `{f}`?"))
                        })
                        .or_else(|| import_of_nearest(n));
                    return self.err(match help {
                        Some(help) => d.with_note(format!("help: {help}")),
                        None => d,
                    });
                }
            }
            ExprKind::Field(target, method) => {
                let t = self.expr(target);
                if t == Type::Any {
                    args.iter().for_each(|a| {
                        self.expr(&a.value);
                    });
                    return Type::Any;
                }
                match Receiver::of(&t).and_then(|r| self.builtins.get(&(r, method.name.as_str()))) {
                    Some(sig) => {
                        let (params, ret) = (sig_params(sig), sig.ret.clone());
                        let to = Target::Builtin(sig.receiver, sig.name);
                        self.refer(method.span, to);
                        (method.name.clone(), params, ret)
                    }
                    None => {
                        let methods: Vec<&str> = match Receiver::of(&t) {
                            Some(r) => {
                                let mut m: Vec<&str> = self
                                    .builtins
                                    .keys()
                                    .filter(|(rr, _)| *rr == r)
                                    .map(|(_, n)| *n)
                                    .collect();
                                m.sort();
                                m
                            }
                            None => Vec::new(),
                        };
                        let mut d = Diagnostic::error(
                            Code::NoSuchMember,
                            method.span,
                            format!("a `{t}` has no method `{}`", method.name),
                            "no such method",
                        );
                        if !methods.is_empty() {
                            d = d.with_note(format!("its methods are: {}", methods.join(", ")));
                        } else {
                            d = d.with_note(format!("a `{t}` has no methods"));
                        }
                        // Functions of a value that Python spells as methods.
                        if matches!(method.name.as_str(), "len" | "__len__") {
                            d = d.with_note("help: the length of a list, tuple, map, range or string is `len(x)`");
                        }
                        return self.err(d);
                    }
                }
            }
            _ => {
                return self.err(Diagnostic::error(
                    Code::TypeMismatch,
                    callee.span,
                    "only named functions and methods can be called",
                    "not callable",
                ))
            }
        };
        let names: Vec<&str> = params.iter().map(|(n, _, _)| n.as_str()).collect();
        if let Some(index) = &mut self.index {
            index.calls.push(index::Call {
                span,
                callee: name.clone(),
                params: names.iter().map(|n| n.to_string()).collect(),
            });
        }
        let required: Vec<bool> = params.iter().map(|(_, _, r)| *r).collect();
        match vocab::match_args(&name, &names, &required, args, span) {
            Err(d) => {
                self.err(d);
                args.iter().for_each(|a| {
                    self.expr(&a.value);
                });
            }
            Ok(slots) => {
                for ((pname, want, _), slot) in params.iter().zip(slots) {
                    if let Some(i) = slot {
                        let got = self.expr(&args[i].value);
                        self.expect(
                            &got,
                            want,
                            args[i].value.span,
                            &format!("argument `{pname}` of `{name}`"),
                        );
                    }
                }
            }
        }
        ret
    }
}

/// Where a function of the standard library is spelt nearly as `name`,
/// it and the import that defines it, as a help for a name defined
/// nowhere.
pub(super) fn import_of_nearest(name: &str) -> Option<String> {
    let (module, function) = vocab::stdlib::nearest(name)?;
    Some(format!(
        "did you mean `{function}`? it is a function of the standard library: `import \"{module}\"`"
    ))
}

/// Where `name` is a function of the standard library, the import that
/// defines it, as a help for a program that uses it without.
pub(super) fn import_to_call(name: &str) -> Option<String> {
    let module = vocab::stdlib::defining(name)?;
    Some(format!(
        "`{name}` is a function of the standard library: `import \"{module}\"`"
    ))
}
