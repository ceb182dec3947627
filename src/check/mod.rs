//! The type checker: before anything runs, every name must be defined, every
//! call must match its function's parameters, and every expression must have
//! a static type that fits where it is used. Errors are collected, not
//! stopped at; a wrong expression gets the type `_` so that one mistake is
//! reported once.

use crate::diag::{Code, Diagnostic, Span};
use crate::syntax::ast::Program;
use crate::syntax::ast::*;
use crate::vocab::{self, Receiver, Signature, Type};
use index::{Def, DefKind, Index, Target};
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

mod calls;
mod exprs;
pub mod index;
mod stmts;

/// What the checker proved that evaluation relies on.
#[derive(Debug, Default, Clone)]
pub struct Checked {
    /// The `+`, `==` and `!=` that copy and scan nothing: the checker
    /// proved that a `+` adds ints (not two strings or two lists) and that
    /// the right side of a comparison is no list, tuple or string. The
    /// evaluator charges steps for copying and scanning large values; these
    /// cost none, whatever values they meet (`eval/shard.rs` relies on it).
    pub cheap_operators: HashSet<Span>,
}

struct FnSig {
    def: Rc<FnDef>,
    params: Vec<Type>,
    ret: Type,
    /// Its entry in the index, when one is kept.
    id: usize,
}

/// A name's type, and its entry in the index when one is kept.
#[derive(Clone)]
struct Binding {
    ty: Type,
    def: usize,
}

/// The names of one block, loop, comprehension or function, and the byte
/// where it ends (how far its names are visible, for the index).
#[derive(Default)]
struct Scope {
    names: HashMap<String, Binding>,
    end: u32,
}

impl Scope {
    fn until(end: u32) -> Scope {
        Scope {
            names: HashMap::new(),
            end,
        }
    }
}

/// The most errors a check reports (the first, in the order of the
/// files): past a hundred they are noise, and a file of thousands of
/// mistakes is checked in linear time (each "did you mean" scans the names
/// in scope, so hints are looked for only while there are fewer).
const MOST_ERRORS: usize = 100;

/// How many errors are held before all but the first `MOST_ERRORS` are
/// dropped (`Checker::keep_first_errors`).
const KEEP_ERRORS_UNTIL: usize = 4 * MOST_ERRORS;

struct Checker {
    scopes: Vec<Scope>,
    /// What an editor wants to know, kept only on request (`check_indexed`).
    index: Option<Index>,
    functions: HashMap<String, FnSig>,
    builtins: HashMap<(Receiver, &'static str), Signature>,
    /// The declared return type of the function being checked.
    returns: Option<Type>,
    /// The errors that may still be among the first `MOST_ERRORS` (in
    /// the order of the files), and how many others were found: a file
    /// of millions of mistakes holds a few hundred, not millions.
    errors: Vec<Diagnostic>,
    dropped: usize,
    checked: Checked,
    /// Where each param was declared: `-D` sets a param by its name, so
    /// a name declares one.
    params: HashMap<String, Span>,
    /// Where each name a `let` or a loop binds was first bound, and the
    /// errors of names not in sight where used (by index): a name bound
    /// elsewhere (later, or in a block that ended) is said to be, not
    /// taken for a misspelling.
    bound: HashMap<String, Span>,
    unseen: Vec<(usize, String)>,
}

pub fn check(program: &Program) -> Result<Checked, Vec<Diagnostic>> {
    run(program, None).0
}

/// `check`, keeping what it learns of names and expressions (`Index`).
pub fn check_indexed(program: &Program) -> (Result<Checked, Vec<Diagnostic>>, Index) {
    let (result, index) = run(program, Some(Index::default()));
    (result, index.unwrap_or_default())
}

fn run(
    program: &Program,
    index: Option<Index>,
) -> (Result<Checked, Vec<Diagnostic>>, Option<Index>) {
    let mut c = Checker {
        scopes: vec![Scope::until(u32::MAX)],
        index,
        functions: HashMap::new(),
        builtins: vocab::signatures()
            .into_iter()
            .map(|s| ((s.receiver, s.name), s))
            .collect(),
        returns: None,
        errors: Vec::new(),
        dropped: 0,
        checked: Checked::default(),
        params: HashMap::new(),
        bound: HashMap::new(),
        unseen: Vec::new(),
    };
    for f in program.functions() {
        c.declare_fn(f);
    }
    let fns: Vec<Rc<FnDef>> = c.functions.values().map(|f| f.def.clone()).collect();
    for stmt in &program.stmts {
        c.stmt(stmt, true);
    }
    for f in fns {
        c.fn_body(&f);
    }
    c.point_at_names_out_of_sight();
    let result = if c.errors.is_empty() {
        Ok(std::mem::take(&mut c.checked))
    } else {
        let more = c.found().saturating_sub(MOST_ERRORS);
        c.keep_first_errors();
        if more > 0 {
            if let Some(last) = c.errors.pop() {
                let note = format!("{more} more errors follow, not shown: fix these first");
                c.errors.push(last.with_note(note));
            }
        }
        Err(c.errors)
    };
    (result, c.index)
}

/// The most types a value's type may be written with: far above any
/// collective's (`map[(int, int), memory_channel]` has 5), low enough that
/// tuples of tuples doubled in a row of `let`s end here, not in a type
/// checker that doubles its memory with each line.
const MAX_TYPE_PARTS: usize = 1024;

impl Checker {
    /// `t`, the type of the tuple or map at `span`, or an error where it
    /// is past [`MAX_TYPE_PARTS`].
    fn within_type_size(&mut self, t: Type, span: Span) -> Type {
        if t.parts_up_to(MAX_TYPE_PARTS + 1) <= MAX_TYPE_PARTS {
            return t;
        }
        self.err(
            Diagnostic::error(
                Code::Limit,
                span,
                format!("this value's type is too large: more than {MAX_TYPE_PARTS} types inside it"),
                "a value of this type",
            )
            .with_note("help: a tuple or map of tuples or maps doubles its type each time it is nested again: keep values a few levels deep (a map keyed by a tuple of ints, a list of such maps)"),
        )
    }

    fn err(&mut self, d: Diagnostic) -> Type {
        self.errors.push(d);
        if self.errors.len() == KEEP_ERRORS_UNTIL {
            self.keep_first_errors();
        }
        Type::Any
    }

    /// How many errors were found.
    fn found(&self) -> usize {
        self.errors.len() + self.dropped
    }

    /// Keeps the first `MOST_ERRORS` errors (in the order of the files,
    /// those at one place in the order found), in that order, and the
    /// names used out of sight among them: what a sort of every error
    /// found would keep, since a dropped one has as many before it.
    fn keep_first_errors(&mut self) {
        let mut found: Vec<(usize, Diagnostic)> = self.errors.drain(..).enumerate().collect();
        found.sort_by_key(|(_, d)| d.span().map(|s| (s.file, s.start)));
        let mut moved_to = vec![usize::MAX; found.len()];
        self.dropped += found.len().saturating_sub(MOST_ERRORS);
        for (new, (old, d)) in found.into_iter().take(MOST_ERRORS).enumerate() {
            moved_to[old] = new;
            self.errors.push(d);
        }
        self.unseen.retain_mut(|(i, _)| {
            *i = moved_to[*i];
            *i != usize::MAX
        });
    }

    fn expect(&mut self, got: &Type, want: &Type, span: Span, what: &str) {
        // `none` has the type its place wants (a sync setting, a policy):
        // the editor's hover says so. (Its entry is one of the last.)
        if *got == Type::NoneConst && got.fits(want) {
            if let Some(index) = &mut self.index {
                let recent = index.types.iter_mut().rev().take(4);
                if let Some(entry) = recent.into_iter().find(|(s, _)| *s == span) {
                    entry.1 = want.clone();
                }
            }
        }
        if !got.fits(want) {
            let mut d = Diagnostic::error(
                Code::TypeMismatch,
                span,
                format!("{what} has type `{got}`, expected `{want}`"),
                format!("of type `{got}`"),
            );
            // The DSL's `buffer[:]`: a whole buffer where its chunks are meant.
            if (got, want) == (&Type::Buffer, &Type::Chunk) {
                d = d.with_note("help: a buffer's chunks are a slice of it: all of `b` is `b[0..b.size]`, chunk i `b[i]`");
            }
            self.err(d);
        }
    }

    fn resolve(&mut self, t: &TypeExpr) -> Type {
        match t {
            TypeExpr::Tuple(items, _) => {
                Type::Tuple(items.iter().map(|i| self.resolve(i)).collect())
            }
            TypeExpr::Named { name, args } => {
                let args: Vec<Type> = args.iter().map(|a| self.resolve(a)).collect();
                match (name.name.as_str(), args.len()) {
                    ("list", 1) => Type::List(Box::new(args[0].clone())),
                    ("map", 2) => Type::Map(Box::new(args[0].clone()), Box::new(args[1].clone())),
                    (n, 0) => match Type::from_name(n) {
                        Some(t) => t,
                        None => self.err(Diagnostic::error(Code::UnknownName, name.span, format!("unknown type `{n}`"), "not a type").with_note(
                            "the types are int, bool, str, range, list[T], map[K, V], (T, U), rank, buffer, chunk, \
                             memory_channel, port_channel, switch_channel, switch_view, tb_group, semaphore, collective, \
                             protocol, sync_type, reduce_op, buffer_type, replication_policy",
                        )),
                    },
                    (n, k) => self.err(Diagnostic::error(Code::Misplaced, name.span, format!("`{n}` does not take {k} type argument(s)"), "wrong type arguments")
                        .with_note("write list[T] or map[K, V]")),
                }
            }
        }
    }

    fn declare_fn(&mut self, f: Rc<FnDef>) {
        if let Some(prev) = self.functions.get(&f.name.name) {
            let prev_span = prev.def.name.span;
            self.err(
                Diagnostic::error(
                    Code::Misplaced,
                    f.name.span,
                    format!("function `{}` defined twice", f.name.name),
                    "second definition",
                )
                .with_secondary(prev_span, "first definition")
                .with_note(match prev_span.file == f.name.span.file {
                    true => "help: functions are not overloaded: rename one of them".to_string(),
                    false => format!("help: two of the files this program reads define `{}` (a program sees every function of the files it imports, the standard library's too): rename yours, or import only one of them", f.name.name),
                }),
            );
            return;
        }
        if self
            .builtins
            .contains_key(&(Receiver::Free, f.name.name.as_str()))
        {
            self.err(
                Diagnostic::error(
                    Code::Misplaced,
                    f.name.span,
                    format!("`{}` is a builtin function", f.name.name),
                    "this name is taken",
                )
                .with_note("help: choose another name"),
            );
            return;
        }
        // By name, not pair by pair: a generated function may have
        // hundreds of thousands of parameters.
        let mut first_of: HashMap<&str, Span> = HashMap::with_capacity(f.params.len());
        for p in &f.params {
            if let Some(&first) = first_of.get(p.name.name.as_str()) {
                self.err(
                    Diagnostic::error(
                        Code::Misplaced,
                        p.name.span,
                        format!("parameter `{}` declared twice", p.name.name),
                        "second declaration",
                    )
                    .with_secondary(first, "first declaration")
                    .with_note("help: a call names its arguments by parameter: rename one"),
                );
            } else {
                first_of.insert(&p.name.name, p.name.span);
            }
        }
        let params: Vec<Type> = f.params.iter().map(|p| self.resolve(&p.ty)).collect();
        let ret = f.ret.as_ref().map_or(Type::Unit, |t| self.resolve(t));
        let id = self.define(
            &f.name,
            DefKind::Function,
            ret.clone(),
            (f.span.start, u32::MAX),
        );
        self.functions.insert(
            f.name.name.clone(),
            FnSig {
                def: f,
                params,
                ret,
                id,
            },
        );
    }

    fn fn_body(&mut self, f: &FnDef) {
        let Some(sig) = self.functions.get(&f.name.name) else {
            return;
        };
        let (params, ret) = (sig.params.clone(), sig.ret.clone());
        // Defaults are evaluated in the caller's global scope.
        for (p, t) in f.params.iter().zip(&params) {
            if let Some(d) = &p.default {
                let got = self.expr(d);
                self.expect(
                    &got,
                    t,
                    d.span,
                    &format!("the default of `{}`", p.name.name),
                );
            }
        }
        let saved: Vec<Scope> = self.scopes.drain(1..).collect();
        self.scopes.push(Scope::until(f.span.end));
        for (p, t) in f.params.iter().zip(params) {
            self.bind(&p.name, t, DefKind::FunctionParam);
        }
        let outer = self.returns.replace(ret.clone());
        self.block(&f.body, f.span.end);
        self.returns = outer;
        if ret != Type::Unit && !stmts::always_return(&f.body) {
            // At the closing brace, where the call would fall out.
            let end = Span::new(
                f.span.file,
                f.span.end.saturating_sub(1) as usize,
                f.span.end as usize,
            );
            self.err(
                Diagnostic::error(
                    Code::TypeMismatch,
                    end,
                    format!("`{}` can end without returning its `{ret}`", f.name.name),
                    "reached without a `return`",
                )
                .with_note(format!(
                    "help: `{}` declares `-> {ret}`: end every path with `return` (an `if` that returns needs an `else` that returns too; a loop may run no time)",
                    f.name.name
                )),
            );
        }
        self.scopes.truncate(1);
        self.scopes.extend(saved);
    }

    /// Records a definition in the index, if one is kept: its entry.
    fn define(&mut self, name: &Ident, kind: DefKind, ty: Type, visible: (u32, u32)) -> usize {
        let Some(index) = &mut self.index else {
            return usize::MAX;
        };
        index.defs.push(Def {
            name: name.name.clone(),
            span: name.span,
            kind,
            ty,
            visible,
        });
        index.defs.len() - 1
    }

    /// Records a use in the index, if one is kept.
    fn refer(&mut self, span: Span, to: Target) {
        if let Some(index) = &mut self.index {
            index.refs.push(index::Ref { span, to });
        }
    }

    fn bind(&mut self, name: &Ident, ty: Type, kind: DefKind) {
        if matches!(kind, DefKind::Let | DefKind::LoopVariable) {
            self.bound.entry(name.name.clone()).or_insert(name.span);
        }
        let end = self.scopes.last().map_or(u32::MAX, |s| s.end);
        let def = self.define(name, kind, ty.clone(), (name.span.start, end));
        if let Some(s) = self.scopes.last_mut() {
            s.names.insert(name.name.clone(), Binding { ty, def });
        }
    }

    fn lookup(&self, name: &str) -> Option<Type> {
        self.binding(name)
            .map(|b| b.ty.clone())
            .or_else(|| vocab::Constant::named(name).map(vocab::Constant::ty))
    }

    fn binding(&self, name: &str) -> Option<&Binding> {
        self.scopes.iter().rev().find_map(|s| s.names.get(name))
    }

    /// The errors of names used out of sight of their binding in the same
    /// file (a `let` further down, or in a block that ended), pointed at
    /// the binding instead of at a name spelt alike.
    fn point_at_names_out_of_sight(&mut self) {
        for (i, name) in std::mem::take(&mut self.unseen) {
            let Some(&at) = self.bound.get(&name) else {
                continue;
            };
            let d = &mut self.errors[i];
            if d.span().is_none_or(|used| used.file != at.file) {
                continue;
            }
            // The binding is the help: a name spelt alike, or a way to
            // define or import one, is not.
            d.notes.clear();
            d.message = format!("`{name}` is not in sight here");
            if let Some(label) = &mut d.primary {
                label.message = "used out of sight of its binding".into();
            }
            let d = std::mem::replace(d, Diagnostic::plain(Code::UnknownName, ""));
            self.errors[i] = d
                .with_secondary(at, format!("`{name}` is bound here, out of sight of the use"))
                .with_note("help: a name is seen after its `let`, in the block that holds it (a loop's variables, in its body): move the `let` before the use, or out of its block");
        }
    }
}

fn sig_params(sig: &Signature) -> Vec<(String, Type, bool)> {
    sig.params
        .iter()
        .map(|p| {
            (
                p.name.to_string(),
                p.ty.clone(),
                p.default == vocab::Default::Required,
            )
        })
        .collect()
}
