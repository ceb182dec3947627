//! What the type checker learns about a program's names and expressions,
//! kept for the editor (`msclc lsp`): where each name is defined and used,
//! the static type of each expression, and the calls with their parameter
//! lists. A plain compile does not keep it (`check::check` records nothing).

use crate::diag::Span;
use crate::vocab::{Receiver, Type};

/// Everything the checker recorded about one program.
#[derive(Debug, Default, Clone)]
pub struct Index {
    /// Every name the program defines, in the order the checker met them.
    pub defs: Vec<Def>,
    /// Every use of a name, function, builtin or constant.
    pub refs: Vec<Ref>,
    /// The static type of every expression the checker typed.
    pub types: Vec<(Span, Type)>,
    /// Every call: its whole span, what it calls and its parameters' names
    /// (for the keyword arguments an editor offers inside the parentheses).
    pub calls: Vec<Call>,
}

/// A defined name.
#[derive(Debug, Clone)]
pub struct Def {
    pub name: String,
    /// Where the name is written in its definition.
    pub span: Span,
    pub kind: DefKind,
    pub ty: Type,
    /// The bytes of the file where the name can be used: from its
    /// definition to the end of the block, loop or function that holds it.
    pub visible: (u32, u32),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefKind {
    Param,
    Let,
    LoopVariable,
    Function,
    FunctionParam,
}

/// A use of a name, at `span`.
#[derive(Debug, Clone)]
pub struct Ref {
    pub span: Span,
    pub to: Target,
}

/// What a use refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// One of `Index::defs`.
    Def(usize),
    /// A builtin function (`Receiver::Free`) or method.
    Builtin(Receiver, &'static str),
    /// A named constant (`sum`, `after`, `Simple`, ...).
    Constant(&'static str),
}

/// A call and the names of its parameters.
#[derive(Debug, Clone)]
pub struct Call {
    pub span: Span,
    pub callee: String,
    pub params: Vec<String>,
}

impl Index {
    /// The innermost recorded use at byte `offset` of `file`.
    pub fn ref_at(&self, file: u32, offset: u32) -> Option<&Ref> {
        self.refs
            .iter()
            .filter(|r| contains(r.span, file, offset))
            .min_by_key(|r| r.span.end - r.span.start)
    }

    /// The definition whose name is at byte `offset` of `file`.
    pub fn def_at(&self, file: u32, offset: u32) -> Option<usize> {
        self.defs
            .iter()
            .position(|d| contains(d.span, file, offset))
    }

    /// The definition at `offset`, or the one a use there refers to.
    pub fn def_of(&self, file: u32, offset: u32) -> Option<usize> {
        self.def_at(file, offset)
            .or_else(|| match self.ref_at(file, offset)?.to {
                Target::Def(d) => Some(d),
                _ => None,
            })
    }

    /// The innermost expression at `offset` and its type.
    pub fn type_at(&self, file: u32, offset: u32) -> Option<&(Span, Type)> {
        self.types
            .iter()
            .filter(|(s, _)| contains(*s, file, offset))
            .min_by_key(|(s, _)| s.end - s.start)
    }

    /// The innermost call whose span holds `offset`.
    pub fn call_at(&self, file: u32, offset: u32) -> Option<&Call> {
        self.calls
            .iter()
            .filter(|c| c.span.file == file && c.span.start < offset && offset < c.span.end)
            .min_by_key(|c| c.span.end - c.span.start)
    }

    /// The names usable at `offset` of `file`, innermost last.
    pub fn visible_at(&self, file: u32, offset: u32) -> impl Iterator<Item = &Def> {
        self.defs
            .iter()
            .filter(move |d| d.span.file == file && d.visible.0 <= offset && offset <= d.visible.1)
    }

    /// Every use of definition `def`.
    pub fn uses_of(&self, def: usize) -> impl Iterator<Item = Span> + '_ {
        self.refs
            .iter()
            .filter(move |r| r.to == Target::Def(def))
            .map(|r| r.span)
    }
}

fn contains(span: Span, file: u32, offset: u32) -> bool {
    span.file == file && span.start <= offset && offset <= span.end
}
