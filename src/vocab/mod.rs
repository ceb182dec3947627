//! The language's vocabulary, in one place: its types, its builtin functions
//! and methods with their parameters (`builtins.rs`), the fields of its
//! values, its named constants and the options of a `program` block. The
//! type checker checks programs against these, the lowering matches
//! arguments with them and the evaluator reads arguments by the names
//! declared here, so each is written down once.

use crate::ir::{BufferKind, DataSync, Protocol, ReduceOp, ReplicationPolicy};
use std::fmt;

mod builtins;
pub mod stdlib;

pub(crate) use builtins::builtin_table;
pub use builtins::{signature, signatures, Builtin, Signature};

/// A static type of the language.
#[derive(Debug, Clone, PartialEq)]
pub enum Type {
    /// Unknown (the element of an empty list literal): fits anything.
    Any,
    Unit,
    Int,
    Bool,
    Str,
    Range,
    List(Box<Type>),
    Tuple(Vec<Type>),
    Map(Box<Type>, Box<Type>),
    Rank,
    Buffer,
    Chunk,
    MemoryChannel,
    PortChannel,
    SwitchChannel,
    SwitchView,
    TbGroup,
    Semaphore,
    Collective,
    Protocol,
    SyncType,
    ReduceOp,
    BufferType,
    ReplicationPolicy,
    /// The constant `none`: both a data-sync setting and a replication policy.
    NoneConst,
}

impl Type {
    /// How many types `self` is written with, itself and those inside it
    /// (`map[(int, int), chunk]` has 5), counted up to `limit`.
    pub fn parts_up_to(&self, limit: usize) -> usize {
        let inner: Vec<&Type> = match self {
            Type::List(t) => vec![t],
            Type::Map(k, v) => vec![k, v],
            Type::Tuple(items) => items.iter().collect(),
            _ => return 1,
        };
        let mut count = 1;
        for t in inner {
            if count >= limit {
                break;
            }
            count += t.parts_up_to(limit - count);
        }
        count.min(limit)
    }

    /// Whether a value of type `self` may be used where `want` is expected.
    pub fn fits(&self, want: &Type) -> bool {
        match (self, want) {
            (Type::Any, _) | (_, Type::Any) => true,
            (Type::NoneConst, Type::SyncType | Type::ReplicationPolicy) => true,
            (Type::List(a), Type::List(b)) => a.fits(b),
            (Type::Map(ka, va), Type::Map(kb, vb)) => ka.fits(kb) && va.fits(vb),
            (Type::Tuple(a), Type::Tuple(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.fits(y))
            }
            (a, b) => a == b,
        }
    }

    /// The more precise of two types that fit each other (for list and map literals).
    pub fn join(&self, other: &Type) -> Option<Type> {
        match (self, other) {
            (Type::Any, t) | (t, Type::Any) => Some(t.clone()),
            // What a function without a value returns, and the empty
            // tuple `()`, are one value, written alike.
            (Type::Unit, Type::Tuple(t)) | (Type::Tuple(t), Type::Unit) if t.is_empty() => {
                Some(Type::Unit)
            }
            (Type::List(a), Type::List(b)) => a.join(b).map(|t| Type::List(Box::new(t))),
            (Type::Map(ka, va), Type::Map(kb, vb)) => {
                Some(Type::Map(Box::new(ka.join(kb)?), Box::new(va.join(vb)?)))
            }
            (Type::Tuple(a), Type::Tuple(b)) if a.len() == b.len() => a
                .iter()
                .zip(b)
                .map(|(x, y)| x.join(y))
                .collect::<Option<Vec<_>>>()
                .map(Type::Tuple),
            (a, b) if a == b => Some(a.clone()),
            _ => None,
        }
    }

    /// Parses a type name as written in a signature (`int`, `chunk`, ...), without arguments.
    pub fn from_name(name: &str) -> Option<Type> {
        TYPE_NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, t)| t.clone())
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Any => write!(f, "_"),
            Type::Unit => write!(f, "()"),
            Type::Int => write!(f, "int"),
            Type::Bool => write!(f, "bool"),
            Type::Str => write!(f, "str"),
            Type::Range => write!(f, "range"),
            Type::List(t) => write!(f, "list[{t}]"),
            Type::Tuple(ts) => {
                write!(f, "(")?;
                for (i, t) in ts.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{t}")?;
                }
                write!(f, ")")
            }
            Type::Map(k, v) => write!(f, "map[{k}, {v}]"),
            Type::Rank => write!(f, "rank"),
            Type::Buffer => write!(f, "buffer"),
            Type::Chunk => write!(f, "chunk"),
            Type::MemoryChannel => write!(f, "memory_channel"),
            Type::PortChannel => write!(f, "port_channel"),
            Type::SwitchChannel => write!(f, "switch_channel"),
            Type::SwitchView => write!(f, "switch_view"),
            Type::TbGroup => write!(f, "tb_group"),
            Type::Semaphore => write!(f, "semaphore"),
            Type::Collective => write!(f, "collective"),
            Type::Protocol => write!(f, "protocol"),
            Type::SyncType => write!(f, "sync_type"),
            Type::ReduceOp => write!(f, "reduce_op"),
            Type::BufferType => write!(f, "buffer_type"),
            Type::ReplicationPolicy => write!(f, "replication_policy"),
            Type::NoneConst => write!(f, "sync_type"),
        }
    }
}

/// Whether and how a parameter may be left out.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Default {
    Required,
    /// May be left out; the callee sees "absent" (`tb_group`, `dst_chunk`, ...).
    Absent,
    Int(i64),
    Bool(bool),
    Const(&'static str),
}

#[derive(Debug, Clone)]
pub struct Param {
    pub name: &'static str,
    pub ty: Type,
    pub default: Default,
}

impl Param {
    /// The parameter as a signature shows it: `tb: int = 0`, and one that
    /// may be left out `tb_group: tb_group (optional)` (no value stands
    /// for "left out" in a program).
    pub fn declared(&self) -> String {
        let (name, ty) = (self.name, &self.ty);
        match &self.default {
            Default::Required => format!("{name}: {ty}"),
            Default::Absent => format!("{name}: {ty} (optional)"),
            Default::Int(v) => format!("{name}: {ty} = {v}"),
            Default::Bool(v) => format!("{name}: {ty} = {v}"),
            Default::Const(c) => format!("{name}: {ty} = {c}"),
        }
    }
}

/// What a builtin is called on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Receiver {
    Free,
    Rank,
    MemoryChannel,
    PortChannel,
    SwitchChannel,
    SwitchView,
    Semaphore,
}

impl Receiver {
    pub fn of(ty: &Type) -> Option<Receiver> {
        Some(match ty {
            Type::Rank => Receiver::Rank,
            Type::MemoryChannel => Receiver::MemoryChannel,
            Type::PortChannel => Receiver::PortChannel,
            Type::SwitchChannel => Receiver::SwitchChannel,
            Type::SwitchView => Receiver::SwitchView,
            Type::Semaphore => Receiver::Semaphore,
            _ => return None,
        })
    }
}

/// A field of a builtin value, read with `.name`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Input,
    Output,
    Id,
    Size,
    Rank,
    Index,
    SrcRank,
    DstRank,
    TbList,
}

impl Field {
    /// Every field's name (what an editor offers after a `.`).
    pub const NAMES: &'static [&'static str] = &[
        "input", "output", "id", "size", "rank", "index", "src_rank", "dst_rank", "tb_list",
    ];

    /// The field of this name, on whatever value has it.
    pub fn of(name: &str) -> Option<Field> {
        Some(match name {
            "input" => Field::Input,
            "output" => Field::Output,
            "id" => Field::Id,
            "size" => Field::Size,
            "rank" => Field::Rank,
            "index" => Field::Index,
            "src_rank" => Field::SrcRank,
            "dst_rank" => Field::DstRank,
            "tb_list" => Field::TbList,
            _ => return None,
        })
    }

    /// The field's type on a value of type `on`, if that value has it.
    pub fn type_on(self, on: &Type) -> Option<Type> {
        use Field as F;
        Some(match (on, self) {
            (Type::Rank, F::Input | F::Output) => Type::Buffer,
            (Type::Rank, F::Id) => Type::Int,
            (Type::Buffer, F::Size | F::Rank) => Type::Int,
            (Type::Chunk, F::Rank | F::Index | F::Size) => Type::Int,
            (Type::MemoryChannel | Type::PortChannel, F::SrcRank | F::DstRank) => Type::Int,
            (Type::TbGroup, F::TbList) => Type::List(Box::new(Type::Int)),
            _ => return None,
        })
    }
}

/// The value of a named constant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Constant {
    Protocol(Protocol),
    Sync(DataSync),
    ReduceOp(ReduceOp),
    BufferType(BufferKind),
    Policy(ReplicationPolicy),
    /// `none`: a data-sync setting or a replication policy, as the context wants.
    None,
}

impl Constant {
    pub fn ty(self) -> Type {
        match self {
            Constant::Protocol(_) => Type::Protocol,
            Constant::Sync(_) => Type::SyncType,
            Constant::ReduceOp(_) => Type::ReduceOp,
            Constant::BufferType(_) => Type::BufferType,
            Constant::Policy(_) => Type::ReplicationPolicy,
            Constant::None => Type::NoneConst,
        }
    }

    /// The constant of this name.
    pub fn named(name: &str) -> Option<Constant> {
        CONSTANTS.iter().find(|(n, _)| *n == name).map(|(_, c)| *c)
    }
}

/// The named constants. Constants live in the value namespace and builtins
/// in the call namespace, so `min` the reduce op and `min(a, b)` do not
/// collide.
pub const CONSTANTS: &[(&str, Constant)] = &[
    ("Simple", Constant::Protocol(Protocol::Simple)),
    ("LL", Constant::Protocol(Protocol::LL)),
    ("none", Constant::None),
    ("before", Constant::Sync(DataSync::BEFORE)),
    ("after", Constant::Sync(DataSync::AFTER)),
    ("both", Constant::Sync(DataSync::BOTH)),
    ("sum", Constant::ReduceOp(ReduceOp::Sum)),
    ("min", Constant::ReduceOp(ReduceOp::Min)),
    ("max", Constant::ReduceOp(ReduceOp::Max)),
    ("input", Constant::BufferType(BufferKind::Input)),
    ("output", Constant::BufferType(BufferKind::Output)),
    ("scratch", Constant::BufferType(BufferKind::Scratch)),
    (
        "interleaved",
        Constant::Policy(ReplicationPolicy::Interleaved),
    ),
];

/// The types a program names by a word (`list[T]`, `map[K, V]` and
/// tuples are written with their element types).
pub const TYPE_NAMES: &[(&str, Type)] = &[
    ("int", Type::Int),
    ("bool", Type::Bool),
    ("str", Type::Str),
    ("range", Type::Range),
    ("rank", Type::Rank),
    ("buffer", Type::Buffer),
    ("chunk", Type::Chunk),
    ("memory_channel", Type::MemoryChannel),
    ("port_channel", Type::PortChannel),
    ("switch_channel", Type::SwitchChannel),
    ("switch_view", Type::SwitchView),
    ("tb_group", Type::TbGroup),
    ("semaphore", Type::Semaphore),
    ("collective", Type::Collective),
    ("protocol", Type::Protocol),
    ("sync_type", Type::SyncType),
    ("reduce_op", Type::ReduceOp),
    ("buffer_type", Type::BufferType),
    ("replication_policy", Type::ReplicationPolicy),
];

/// An option a `program` block may set: its name, type, and what it
/// does (an editor's hover), defaults as in the DSL's `CollectiveProgram`.
pub struct ProgramOption {
    pub name: &'static str,
    pub ty: Type,
    pub doc: &'static str,
}

/// The options a `program` block may set.
pub const PROGRAM_OPTIONS: &[ProgramOption] = &[
    ProgramOption {
        name: "collective",
        ty: Type::Collective,
        doc: "The collective the plan implements, and so every rank's input and output chunks: `allreduce(N, chunk_factor: c, inplace: b)`, `allgather`, `reducescatter`, `alltoall`, `sendrecv`, `test_collective`. Required.",
    },
    ProgramOption {
        name: "num_ranks",
        ty: Type::Int,
        doc: "The number of ranks: the collective's rank count, which is also the default.",
    },
    ProgramOption {
        name: "instances",
        ty: Type::Int,
        doc: "Copies of the program run side by side, each on thread blocks, channels, semaphores and chunks of its own; every buffer is that many times as large. Default 1.",
    },
    ProgramOption {
        name: "protocol",
        ty: Type::Protocol,
        doc: "`Simple` (default): data crosses between GPUs as it is, with signals to say it has; `LL`: as packets that carry their own flags, for small messages.",
    },
    ProgramOption {
        name: "instr_fusion",
        ty: Type::Bool,
        doc: "Whether adjacent ops of a thread block that the executor can run as one are fused into one op. Default true.",
    },
    ProgramOption {
        name: "auto_sync",
        ty: Type::Bool,
        doc: "Whether a thread-block sync (`nop`) is added before an op that touches local chunks an earlier op of its block touched since the block last synchronised. Default true.",
    },
    ProgramOption {
        name: "replication_policy",
        ty: Type::ReplicationPolicy,
        doc: "Where each instance's copy of a chunk goes: `interleaved` (default) or `none`.",
    },
    ProgramOption {
        name: "reuse_resources",
        ty: Type::Bool,
        doc: "Whether the executor keeps the setup of a plan's first call under its name alone, peers' buffer addresses included, for every later call (the plan should then reach only peers' scratch), and gives it a shared 64 MiB scratch buffer. Default false.",
    },
    ProgramOption {
        name: "num_threads_per_block",
        ty: Type::Int,
        doc: "Threads of each thread block the executor launches, 1 to 1024. Default 1024.",
    },
    ProgramOption {
        name: "use_double_scratch_buffer",
        ty: Type::Bool,
        doc: "Whether consecutive launches alternate between two halves of the scratch buffer, so that a launch's packets do not meet the last one's. Default false.",
    },
    ProgramOption {
        name: "buffer_alignment",
        ty: Type::Int,
        doc: "The alignment, in bytes, the executor gives each chunk. Default 16.",
    },
    ProgramOption {
        name: "min_message_size",
        ty: Type::Int,
        doc: "The smallest message, in bytes, the executor picks this plan for. Default 0.",
    },
    ProgramOption {
        name: "max_message_size",
        ty: Type::Int,
        doc: "The largest message, in bytes, the executor picks this plan for. Default 2^64 - 1.",
    },
];

/// A setting of the `pipeline(...)` statement (an int): its name and
/// what it does (an editor's hover).
pub struct PipelineSetting {
    pub name: &'static str,
    pub doc: &'static str,
}

/// The `pipeline(...)` statement: what it does, for an editor's hover.
pub const PIPELINE_DOC: &str = "The ops issued inside become the body of one `pipeline` op per thread block: the executor runs the body `ceil(num_chunks × chunk bytes / unit_size)` times, each time on the next `unit_size` bytes of every op's range. Pipelines do not nest.";

/// The settings of `pipeline(...)`, in order; both are required.
pub const PIPELINE_SETTINGS: [PipelineSetting; 2] = [
    PipelineSetting {
        name: "unit_size",
        doc: "Bytes of each op's range one iteration of the body moves: the plan's `unitSize`.",
    },
    PipelineSetting {
        name: "num_chunks",
        doc: "How many chunks each op of the body moves (per thread block of its group): the count of the iterations, with `unit_size`. A smaller count is warning W0509, a larger one W0511.",
    },
];

/// The program option called `name`, if there is one.
pub fn program_option(name: &str) -> Option<&'static ProgramOption> {
    PROGRAM_OPTIONS.iter().find(|o| o.name == name)
}

/// The types a `param` may have (settable from the command line: the
/// named constants' types take a constant's name, `-D protocol=Simple`).
pub const PARAM_TYPES: &[&str] = &[
    "int",
    "bool",
    "str",
    "protocol",
    "sync_type",
    "reduce_op",
    "buffer_type",
    "replication_policy",
];

/// Matches call arguments to parameters: positional ones in order, then
/// `name: value` ones by name. Returns, per parameter, the index of the
/// argument that supplies it. `required[i]` says whether parameter `i` must
/// be given. Used for builtins and user functions alike.
pub fn match_args(
    callee: &str,
    names: &[&str],
    required: &[bool],
    args: &[crate::syntax::ast::Arg],
    call_span: crate::diag::Span,
) -> Result<Vec<Option<usize>>, crate::diag::Diagnostic> {
    use crate::diag::Diagnostic;
    let mut slots: Vec<Option<usize>> = vec![None; names.len()];
    let mut seen_keyword = false;
    for (i, arg) in args.iter().enumerate() {
        match &arg.name {
            None => {
                if seen_keyword {
                    return Err(Diagnostic::error(
                        crate::diag::Code::Arguments,
                        arg.value.span,
                        "positional argument after a keyword argument",
                        "give this argument by name too",
                    ));
                }
                if i >= names.len() {
                    return Err(Diagnostic::error(
                        crate::diag::Code::Arguments,
                        arg.value.span,
                        format!("too many arguments to `{callee}`"),
                        format!(
                            "`{callee}` takes at most {} positional argument(s)",
                            names.len()
                        ),
                    )
                    .with_note(format!("its parameters are: {}", names.join(", "))));
                }
                slots[i] = Some(i);
            }
            Some(name) => {
                seen_keyword = true;
                let Some(pos) = names.iter().position(|n| *n == name.name) else {
                    let d = Diagnostic::error(
                        crate::diag::Code::Arguments,
                        name.span,
                        format!("`{callee}` has no parameter named `{}`", name.name),
                        "unknown keyword argument",
                    )
                    .with_note(format!("its parameters are: {}", names.join(", ")));
                    let near = names
                        .iter()
                        .filter_map(|n| Some((crate::diag::spelling::near(&name.name, n)?, *n)))
                        .min();
                    return Err(match near {
                        Some((_, meant)) => d.with_note(format!("help: did you mean `{meant}`?")),
                        None => d,
                    });
                };
                if slots[pos].is_some() {
                    return Err(Diagnostic::error(
                        crate::diag::Code::Arguments,
                        name.span,
                        format!("argument `{}` given twice", name.name),
                        "already given",
                    ));
                }
                slots[pos] = Some(i);
            }
        }
    }
    for (i, slot) in slots.iter().enumerate() {
        if slot.is_none() && required[i] {
            return Err(Diagnostic::error(
                crate::diag::Code::Arguments,
                call_span,
                format!("missing argument `{}` in call to `{callee}`", names[i]),
                format!("`{}` is required", names[i]),
            ));
        }
    }
    Ok(slots)
}

/// A value a param's list of values (`param tbg: int in [1, 2, 4] = 1`)
/// holds: a literal, as written, or a named constant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Literal {
    /// From -u64::MAX to u64::MAX: what a literal and its negation hold.
    Int(i128),
    Bool(bool),
    Str(String),
    Constant(String),
}

impl Literal {
    /// The literal `expr` is, if it is one (`-4` included).
    pub fn of(expr: &crate::syntax::ast::Expr) -> Option<Literal> {
        use crate::syntax::ast::{ExprKind, UnOp};
        match &expr.kind {
            ExprKind::Int(v) => Some(Literal::Int((*v).into())),
            ExprKind::Unary(UnOp::Neg, inner) => match inner.kind {
                ExprKind::Int(v) => Some(Literal::Int(-i128::from(v))),
                _ => None,
            },
            ExprKind::Bool(b) => Some(Literal::Bool(*b)),
            ExprKind::Str(s) => Some(Literal::Str(s.clone())),
            ExprKind::Name(n) if Constant::named(n).is_some() => Some(Literal::Constant(n.clone())),
            _ => None,
        }
    }

    /// The literals of a param's list of values, if it is a list of them.
    pub fn list(values: &crate::syntax::ast::Expr) -> Option<Vec<Literal>> {
        match &values.kind {
            crate::syntax::ast::ExprKind::List(items) => items.iter().map(Literal::of).collect(),
            _ => None,
        }
    }

    /// As `-D NAME=VALUE` gives it.
    pub fn define_text(&self) -> String {
        match self {
            Literal::Int(v) => v.to_string(),
            Literal::Bool(b) => b.to_string(),
            Literal::Str(s) | Literal::Constant(s) => s.clone(),
        }
    }
}

impl fmt::Display for Literal {
    /// As the program writes it.
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Literal::Str(s) => write!(f, "{s:?}"),
            other => f.write_str(&other.define_text()),
        }
    }
}
