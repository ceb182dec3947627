//! The untyped syntax tree the parser builds. Every node keeps its span.

use crate::diag::Span;
use std::rc::Rc;

/// A name with where it was written.
#[derive(Debug, Clone, PartialEq)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

/// A type as written in a `param` or `fn` signature.
#[derive(Debug, Clone, PartialEq)]
pub enum TypeExpr {
    /// `int`, `chunk`, `list[int]`, `map[int, chunk]`.
    Named { name: Ident, args: Vec<TypeExpr> },
    /// `(int, int)`.
    Tuple(Vec<TypeExpr>, Span),
}

impl TypeExpr {
    pub fn span(&self) -> Span {
        match self {
            TypeExpr::Named { name, args } => {
                args.last().map_or(name.span, |a| name.span.to(a.span()))
            }
            TypeExpr::Tuple(_, span) => *span,
        }
    }
}

/// A binding pattern: `x`, `_`, `(a, (b, c))`.
#[derive(Debug, Clone, PartialEq)]
pub enum Pattern {
    Name(Ident),
    Wildcard(Span),
    Tuple(Vec<Pattern>, Span),
}

impl Pattern {
    pub fn span(&self) -> Span {
        match self {
            Pattern::Name(id) => id.span,
            Pattern::Wildcard(span) | Pattern::Tuple(_, span) => *span,
        }
    }
}

/// One `PATTERN in ITERABLE` of a `for` or a comprehension. Two patterns
/// (`k, v in m`) walk a map's keys and values.
#[derive(Debug, Clone, PartialEq)]
pub struct ForClause {
    pub patterns: Vec<Pattern>,
    pub iter: Expr,
}

/// The loop head shared by `for` statements and comprehensions.
#[derive(Debug, Clone, PartialEq)]
pub struct Loops {
    pub clauses: Vec<ForClause>,
    pub filter: Option<Expr>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnOp {
    Neg,
    Not,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Shl,
    Shr,
    BitAnd,
    BitOr,
    BitXor,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
    In,
}

impl BinOp {
    pub fn symbol(self) -> &'static str {
        use BinOp::*;
        match self {
            Add => "+",
            Sub => "-",
            Mul => "*",
            Div => "/",
            Rem => "%",
            Shl => "<<",
            Shr => ">>",
            BitAnd => "&",
            BitOr => "|",
            BitXor => "^",
            Eq => "==",
            Ne => "!=",
            Lt => "<",
            Le => "<=",
            Gt => ">",
            Ge => ">=",
            And => "&&",
            Or => "||",
            In => "in",
        }
    }
}

/// A call argument, positional or `name: value`.
#[derive(Debug, Clone, PartialEq)]
pub struct Arg {
    pub name: Option<Ident>,
    pub value: Expr,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ExprKind {
    /// A literal: never negative (`-4` is a negation), at most u64::MAX.
    Int(u64),
    Str(String),
    Bool(bool),
    Name(String),
    Unary(UnOp, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `a..b`, half open.
    Range(Box<Expr>, Box<Expr>),
    /// `f(args)` or, with a `Field` callee, a method call `x.m(args)`.
    Call(Box<Expr>, Vec<Arg>),
    Field(Box<Expr>, Ident),
    Index(Box<Expr>, Box<Expr>),
    Tuple(Vec<Expr>),
    List(Vec<Expr>),
    ListComp(Box<Expr>, Box<Loops>),
    Map(Vec<(Expr, Expr)>),
    MapComp(Box<Expr>, Box<Expr>, Box<Loops>),
    /// `if cond { then } else { otherwise }`.
    If(Box<Expr>, Box<Expr>, Box<Expr>),
}

/// A `fn` parameter: `name: type` or `name: type = default`.
#[derive(Debug, Clone, PartialEq)]
pub struct FnParam {
    pub name: Ident,
    pub ty: TypeExpr,
    pub default: Option<Expr>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FnDef {
    pub name: Ident,
    pub params: Vec<FnParam>,
    pub ret: Option<TypeExpr>,
    pub body: Vec<Stmt>,
    pub span: Span,
}

/// One `key = value` line of a `program` block.
#[derive(Debug, Clone, PartialEq)]
pub struct ProgramOption {
    pub key: Ident,
    pub value: Expr,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

/// `param name: type = default`, or `param name: type in [v1, v2, ..]
/// = default`: the values it may take (`msclc tune` tries them).
#[derive(Debug, Clone, PartialEq)]
pub struct ParamDecl {
    pub name: Ident,
    pub ty: TypeExpr,
    pub values: Option<Expr>,
    pub default: Expr,
}

#[derive(Debug, Clone, PartialEq)]
pub enum StmtKind {
    /// Boxed: the largest statement, twice the size of the next, and a
    /// statement's size is what each one holds and what the parser moves
    /// at each step.
    Param(Box<ParamDecl>),
    Import {
        path: String,
        path_span: Span,
    },
    Program {
        name: Expr,
        options: Vec<ProgramOption>,
    },
    Fn(std::rc::Rc<FnDef>),
    Let {
        pattern: Pattern,
        value: Expr,
    },
    Assign {
        target: Ident,
        value: Expr,
    },
    For {
        loops: Loops,
        body: Vec<Stmt>,
    },
    If {
        cond: Expr,
        then: Vec<Stmt>,
        otherwise: Vec<Stmt>,
    },
    Return(Option<Expr>),
    /// `pipeline(unit_size: .., num_chunks: ..) { .. }`: the DSL's LoopIterationContext.
    Pipeline {
        args: Vec<Arg>,
        body: Vec<Stmt>,
    },
    Expr(Expr),
}

/// A parsed main file and the functions it imported.
pub struct Program {
    pub stmts: Vec<Stmt>,
    pub imported: Vec<Rc<FnDef>>,
}

impl Program {
    /// Every function the program can call: the imported ones, then its own.
    pub fn functions(&self) -> impl Iterator<Item = Rc<FnDef>> + '_ {
        let own = self.stmts.iter().filter_map(|s| match &s.kind {
            StmtKind::Fn(f) => Some(f.clone()),
            _ => None,
        });
        self.imported.iter().cloned().chain(own)
    }
}
