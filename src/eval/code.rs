//! The resolved program the evaluator runs: the syntax tree after the type
//! checker accepted it, with every name turned into the place its value
//! lives (a slot of the running function's frame, or a global), every call
//! bound to its function or builtin with its arguments matched to the
//! parameters (defaults filled in), and literals and named constants made
//! values. Built once by `lower.rs`; nothing here is looked up by string
//! while the program runs.

use super::value::Value;
use crate::diag::{Diagnostic, Span};
use crate::syntax::ast::{BinOp, Ident, UnOp};
pub use crate::vocab::Field;
use crate::vocab::{Receiver, Signature};
use std::rc::Rc;

/// Where a variable's value lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// A slot of the running function's frame (of the main program, outside
    /// any function).
    Local(u32),
    /// A variable of the file's top level: params and top-level `let`s.
    Global(u32),
}

/// A whole program: its top-level statements and the functions they may call.
#[derive(Debug)]
pub struct Resolved {
    pub main: Vec<Stmt>,
    /// Slots the top level's blocks and loops need.
    pub main_frame: u32,
    /// The top-level names, by global slot (for "not defined yet" errors).
    pub globals: Vec<Rc<str>>,
    pub functions: Vec<Function>,
    /// How many `for` statements the program has.
    pub for_statements: u32,
}

#[derive(Debug)]
pub struct Function {
    /// Each parameter's default, if it has one: evaluated in the callee's
    /// frame, seeing only globals. Slots `0..defaults.len()` hold the
    /// arguments.
    pub defaults: Vec<Option<Expr>>,
    pub body: Vec<Stmt>,
    /// Slots a call needs: parameters, locals and loop variables, and what
    /// the default arguments' comprehensions use.
    pub frame: u32,
}

#[derive(Debug)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

#[derive(Debug)]
pub enum StmtKind {
    Param {
        slot: u32,
        name: Ident,
        default: Expr,
    },
    Program {
        name: Expr,
        options: Vec<(Ident, Expr)>,
    },
    Let {
        pattern: Pattern,
        value: Expr,
    },
    Assign {
        place: Place,
        target: Ident,
        value: Expr,
    },
    For {
        loops: Loops,
        body: Vec<Stmt>,
        /// The statement's number among the program's `for`s, for what the
        /// shards learn of it (`shard.rs`).
        id: u32,
        /// Whether the body is one method call bound once (`inert.rs`):
        /// its arguments bound at the first iteration that makes the
        /// call, and read again by the others, which bind again only those
        /// that change (`MethodCandidate::varying`).
        bound_once: bool,
    },
    If {
        cond: Expr,
        then: Vec<Stmt>,
        otherwise: Vec<Stmt>,
    },
    Return(Option<Expr>),
    Pipeline {
        unit_size: Expr,
        num_chunks: Expr,
        body: Vec<Stmt>,
    },
    Expr(Expr),
}

/// A binding pattern with its names' places.
#[derive(Debug)]
pub enum Pattern {
    Bind(Place, Rc<str>),
    Wildcard,
    Tuple(Vec<Pattern>, Span),
}

#[derive(Debug)]
pub struct Loops {
    pub clauses: Vec<ForClause>,
    pub filter: Option<Expr>,
}

/// `PATTERN in ITERABLE`; two patterns walk a map's keys and values.
#[derive(Debug)]
pub struct ForClause {
    pub patterns: Vec<Pattern>,
    pub iter: Expr,
}

#[derive(Debug)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Debug)]
pub enum ExprKind {
    /// A literal or a named constant.
    Const(Value),
    Read(Place),
    Unary(UnOp, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    Range(Box<Expr>, Box<Expr>),
    /// A user function, its arguments in parameter order.
    Call(u32, Vec<UserArg>),
    /// A builtin function, its arguments in parameter order.
    Builtin(Rc<Signature>, Vec<BuiltinArg>),
    /// A method: the receiver's kind, known once it is evaluated, picks the
    /// signature among those of this name.
    Method(Box<Expr>, Ident, Vec<MethodCandidate>),
    /// The field's name is kept for the error when the value lacks it.
    Field(Box<Expr>, Field, Ident),
    Index(Box<Expr>, Box<Expr>),
    Tuple(Vec<Expr>),
    List(Vec<Expr>),
    ListComp(Box<Expr>, Box<Loops>),
    Map(Vec<(Expr, Expr)>),
    MapComp(Box<Expr>, Box<Expr>, Box<Loops>),
    If(Box<Expr>, Box<Expr>, Box<Expr>),
}

#[derive(Debug)]
pub enum UserArg {
    Given(Expr),
    /// The parameter's default.
    Default,
}

#[derive(Debug)]
pub enum BuiltinArg {
    Given(Expr),
    /// The parameter's default value (`Unit` for an absent optional one).
    Default(Value),
}

impl BuiltinArg {
    /// The expression the call gives, `None` for a default.
    pub fn given(&self) -> Option<&Expr> {
        match self {
            BuiltinArg::Given(e) => Some(e),
            BuiltinArg::Default(_) => None,
        }
    }
}

/// A signature a method call may bind to, with its arguments matched to
/// that signature's parameters, or why they do not match it.
#[derive(Debug)]
pub struct MethodCandidate {
    pub receiver: Receiver,
    pub sig: Rc<Signature>,
    pub args: Result<Vec<BuiltinArg>, Diagnostic>,
    /// The steps the call's arguments spend, where a shard that does not
    /// own the receiver's rank may skip the call (`shard.rs`); `None`
    /// where none may.
    pub skip_steps: Option<u64>,
    /// Where a loop binds the call once (`StmtKind::For::bound_once`):
    /// the arguments it binds again at every iteration, a bit per
    /// parameter (the first's is bit 0). The others are constants,
    /// defaults and variables no iteration changes.
    pub varying: u64,
}
