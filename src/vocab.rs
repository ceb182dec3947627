//! The language's vocabulary, in one place: its types, its builtin functions
//! and methods with their parameters, its named constants and the options of
//! a `program` block. The type checker checks calls against these
//! signatures and the evaluator binds arguments with them, so a builtin's
//! arity, keywords and defaults are written down once.

use std::fmt;

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
        Some(match name {
            "int" => Type::Int,
            "bool" => Type::Bool,
            "str" => Type::Str,
            "range" => Type::Range,
            "rank" => Type::Rank,
            "buffer" => Type::Buffer,
            "chunk" => Type::Chunk,
            "memory_channel" => Type::MemoryChannel,
            "port_channel" => Type::PortChannel,
            "switch_channel" => Type::SwitchChannel,
            "switch_view" => Type::SwitchView,
            "tb_group" => Type::TbGroup,
            "semaphore" => Type::Semaphore,
            "collective" => Type::Collective,
            "protocol" => Type::Protocol,
            "sync_type" => Type::SyncType,
            "reduce_op" => Type::ReduceOp,
            "buffer_type" => Type::BufferType,
            "replication_policy" => Type::ReplicationPolicy,
            _ => return None,
        })
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

/// Every builtin function and method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Builtin {
    Rank,
    Scratch,
    MemoryChannel,
    PortChannel,
    SwitchChannel,
    TbGroup,
    Semaphore,
    AllGather,
    AllReduce,
    ReduceScatter,
    AllToAll,
    SendRecv,
    TestCollective,
    Len,
    Assert,
    Min,
    Max,
    Str,
    RankCopy,
    RankCopyPackets,
    RankUnpackPackets,
    RankReduce,
    RankBarrier,
    MemSignal,
    MemWait,
    MemGet,
    MemPut,
    MemPutPackets,
    MemReadPutPackets,
    MemReduce,
    PortSignal,
    PortWait,
    PortFlush,
    PortPut,
    PortPutWithSignal,
    PortPutWithSignalAndFlush,
    PortPutPackets,
    PortReadPutPackets,
    SwitchAtRank,
    SwitchReduce,
    SwitchBroadcast,
    SwitchBroadcastPackets,
    ViewReduce,
    ViewBroadcast,
    ViewBroadcastPackets,
    SemAcquire,
    SemRelease,
}

/// A builtin's name, receiver, parameters and result.
#[derive(Debug)]
pub struct Signature {
    pub builtin: Builtin,
    pub receiver: Receiver,
    pub name: &'static str,
    pub params: Vec<Param>,
    pub ret: Type,
}

fn p(name: &'static str, ty: Type, default: Default) -> Param {
    Param { name, ty, default }
}

fn req(name: &'static str, ty: Type) -> Param {
    p(name, ty, Default::Required)
}

fn list(t: Type) -> Type {
    Type::List(Box::new(t))
}

/// `tb` and `tb_group`: exactly one must be given (checked when evaluating).
fn tb_or_group() -> [Param; 2] {
    [
        p("tb", Type::Int, Default::Absent),
        p("tb_group", Type::TbGroup, Default::Absent),
    ]
}

fn transfer(tbg: bool) -> Vec<Param> {
    let mut v = vec![req("dst_chunk", Type::Chunk), req("src_chunk", Type::Chunk)];
    if tbg {
        v.extend(tb_or_group());
    } else {
        v.push(req("tb", Type::Int));
    }
    v
}

fn sync_params(default_sync: &'static str, relaxed: bool) -> Vec<Param> {
    let mut v = vec![
        req("tb", Type::Int),
        p("data_sync", Type::SyncType, Default::Const(default_sync)),
    ];
    if relaxed {
        v.push(p("relaxed", Type::Bool, Default::Bool(false)));
    }
    v
}

fn collective_params() -> Vec<Param> {
    vec![
        req("num_ranks", Type::Int),
        p("chunk_factor", Type::Int, Default::Int(1)),
        p("inplace", Type::Bool, Default::Bool(false)),
    ]
}

fn switch_reduce(with_rank: bool) -> Vec<Param> {
    let mut v = Vec::new();
    if with_rank {
        v.push(req("rank", Type::Int));
    }
    v.extend([
        req("buffer_offset", Type::Int),
        req("size", Type::Int),
        req("dst_chunk", Type::Chunk),
        req("tb", Type::Int),
        p("reduce_op", Type::ReduceOp, Default::Const("sum")),
    ]);
    v
}

fn switch_broadcast(with_rank: bool) -> Vec<Param> {
    let mut v = Vec::new();
    if with_rank {
        v.push(req("rank", Type::Int));
    }
    v.extend([
        req("src_chunk", Type::Chunk),
        req("buffer_offset", Type::Int),
        req("size", Type::Int),
        req("tb", Type::Int),
    ]);
    v
}

/// The table of all builtins.
pub fn signatures() -> Vec<Signature> {
    use Builtin as B;
    use Receiver as R;
    let sig = |builtin, receiver, name, params, ret| Signature {
        builtin,
        receiver,
        name,
        params,
        ret,
    };
    let mut rank_reduce = vec![
        req("src_chunk", Type::Chunk),
        req("other_chunks", list(Type::Chunk)),
    ];
    rank_reduce.extend(tb_or_group());
    rank_reduce.extend([
        p("dst_chunk", Type::Chunk, Default::Absent),
        p("reduce_op", Type::ReduceOp, Default::Const("sum")),
        p("packet", Type::Bool, Default::Bool(false)),
    ]);
    let mut mem_reduce = vec![
        req("local_src_chunk", Type::Chunk),
        req("remote_src_chunks", list(Type::Chunk)),
    ];
    mem_reduce.extend(tb_or_group());
    mem_reduce.extend([
        p("local_dst_chunk", Type::Chunk, Default::Absent),
        p("reduce_op", Type::ReduceOp, Default::Const("sum")),
    ]);
    let unit = || Type::Unit;
    vec![
        sig(
            B::Rank,
            R::Free,
            "rank",
            vec![req("rank", Type::Int)],
            Type::Rank,
        ),
        sig(
            B::Scratch,
            R::Free,
            "scratch",
            vec![req("rank", Type::Int), req("size", Type::Int)],
            Type::Buffer,
        ),
        sig(
            B::MemoryChannel,
            R::Free,
            "memory_channel",
            vec![req("dst_rank", Type::Int), req("src_rank", Type::Int)],
            Type::MemoryChannel,
        ),
        sig(
            B::PortChannel,
            R::Free,
            "port_channel",
            vec![req("dst_rank", Type::Int), req("src_rank", Type::Int)],
            Type::PortChannel,
        ),
        sig(
            B::SwitchChannel,
            R::Free,
            "switch_channel",
            vec![
                req("rank_list", list(Type::Int)),
                req("buffer_type", Type::BufferType),
            ],
            Type::SwitchChannel,
        ),
        sig(
            B::TbGroup,
            R::Free,
            "tb_group",
            vec![req("tb_list", list(Type::Int))],
            Type::TbGroup,
        ),
        sig(
            B::Semaphore,
            R::Free,
            "semaphore",
            vec![
                req("rank", Type::Int),
                p("initial_value", Type::Int, Default::Int(0)),
            ],
            Type::Semaphore,
        ),
        sig(
            B::AllGather,
            R::Free,
            "allgather",
            collective_params(),
            Type::Collective,
        ),
        sig(
            B::AllReduce,
            R::Free,
            "allreduce",
            collective_params(),
            Type::Collective,
        ),
        sig(
            B::ReduceScatter,
            R::Free,
            "reducescatter",
            collective_params(),
            Type::Collective,
        ),
        sig(
            B::AllToAll,
            R::Free,
            "alltoall",
            collective_params(),
            Type::Collective,
        ),
        sig(
            B::SendRecv,
            R::Free,
            "sendrecv",
            collective_params(),
            Type::Collective,
        ),
        sig(
            B::TestCollective,
            R::Free,
            "test_collective",
            vec![
                req("num_ranks", Type::Int),
                req("input_size", Type::Int),
                req("output_size", Type::Int),
            ],
            Type::Collective,
        ),
        sig(
            B::Len,
            R::Free,
            "len",
            vec![req("value", Type::Any)],
            Type::Int,
        ),
        sig(
            B::Min,
            R::Free,
            "min",
            vec![req("a", Type::Int), req("b", Type::Int)],
            Type::Int,
        ),
        // Stops compilation with `message` at the call when `condition` is
        // false: a program's own checks of its params, as a Python DSL
        // program raises (for example, a message size too small for the
        // number of instances).
        sig(
            B::Assert,
            R::Free,
            "assert",
            vec![req("condition", Type::Bool), req("message", Type::Str)],
            unit(),
        ),
        sig(
            B::Max,
            R::Free,
            "max",
            vec![req("a", Type::Int), req("b", Type::Int)],
            Type::Int,
        ),
        sig(
            B::Str,
            R::Free,
            "str",
            vec![req("value", Type::Any)],
            Type::Str,
        ),
        sig(B::RankCopy, R::Rank, "copy", transfer(true), unit()),
        sig(
            B::RankCopyPackets,
            R::Rank,
            "copy_packets",
            transfer(true),
            unit(),
        ),
        sig(
            B::RankUnpackPackets,
            R::Rank,
            "unpack_packets",
            transfer(true),
            unit(),
        ),
        sig(B::RankReduce, R::Rank, "reduce", rank_reduce, unit()),
        sig(
            B::RankBarrier,
            R::Rank,
            "barrier",
            vec![req("tb_list", list(Type::Int))],
            unit(),
        ),
        sig(
            B::MemSignal,
            R::MemoryChannel,
            "signal",
            sync_params("both", true),
            unit(),
        ),
        sig(
            B::MemWait,
            R::MemoryChannel,
            "wait",
            sync_params("both", true),
            unit(),
        ),
        sig(B::MemGet, R::MemoryChannel, "get", transfer(true), unit()),
        sig(B::MemPut, R::MemoryChannel, "put", transfer(true), unit()),
        sig(
            B::MemPutPackets,
            R::MemoryChannel,
            "put_packets",
            transfer(true),
            unit(),
        ),
        sig(
            B::MemReadPutPackets,
            R::MemoryChannel,
            "read_put_packets",
            transfer(true),
            unit(),
        ),
        sig(B::MemReduce, R::MemoryChannel, "reduce", mem_reduce, unit()),
        sig(
            B::PortSignal,
            R::PortChannel,
            "signal",
            sync_params("both", false),
            unit(),
        ),
        sig(
            B::PortWait,
            R::PortChannel,
            "wait",
            sync_params("both", false),
            unit(),
        ),
        sig(
            B::PortFlush,
            R::PortChannel,
            "flush",
            sync_params("both", false),
            unit(),
        ),
        sig(B::PortPut, R::PortChannel, "put", transfer(false), unit()),
        sig(
            B::PortPutWithSignal,
            R::PortChannel,
            "put_with_signal",
            transfer(false),
            unit(),
        ),
        sig(
            B::PortPutWithSignalAndFlush,
            R::PortChannel,
            "put_with_signal_and_flush",
            transfer(false),
            unit(),
        ),
        sig(
            B::PortPutPackets,
            R::PortChannel,
            "put_packets",
            transfer(false),
            unit(),
        ),
        // The one port transfer the DSL also splits over a thread block group.
        sig(
            B::PortReadPutPackets,
            R::PortChannel,
            "read_put_packets",
            transfer(true),
            unit(),
        ),
        sig(
            B::SwitchAtRank,
            R::SwitchChannel,
            "at_rank",
            vec![req("rank", Type::Int)],
            Type::SwitchView,
        ),
        sig(
            B::SwitchReduce,
            R::SwitchChannel,
            "reduce",
            switch_reduce(true),
            unit(),
        ),
        sig(
            B::SwitchBroadcast,
            R::SwitchChannel,
            "broadcast",
            switch_broadcast(true),
            unit(),
        ),
        sig(
            B::SwitchBroadcastPackets,
            R::SwitchChannel,
            "broadcast_packets",
            switch_broadcast(true),
            unit(),
        ),
        sig(
            B::ViewReduce,
            R::SwitchView,
            "reduce",
            switch_reduce(false),
            unit(),
        ),
        sig(
            B::ViewBroadcast,
            R::SwitchView,
            "broadcast",
            switch_broadcast(false),
            unit(),
        ),
        sig(
            B::ViewBroadcastPackets,
            R::SwitchView,
            "broadcast_packets",
            switch_broadcast(false),
            unit(),
        ),
        // As in the reference DSL, a semaphore's acquire and release sync
        // the thread block on both sides by default.
        sig(
            B::SemAcquire,
            R::Semaphore,
            "acquire",
            sync_params("both", false),
            unit(),
        ),
        sig(
            B::SemRelease,
            R::Semaphore,
            "release",
            sync_params("both", false),
            unit(),
        ),
    ]
}

/// Fields readable with `.name`, by receiver type.
pub fn field_type(on: &Type, field: &str) -> Option<Type> {
    Some(match (on, field) {
        (Type::Rank, "input" | "output") => Type::Buffer,
        (Type::Rank, "id") => Type::Int,
        (Type::Buffer, "size" | "rank") => Type::Int,
        (Type::Chunk, "rank" | "index" | "size") => Type::Int,
        (Type::MemoryChannel | Type::PortChannel, "src_rank" | "dst_rank") => Type::Int,
        (Type::TbGroup, "tb_list") => Type::List(Box::new(Type::Int)),
        _ => return None,
    })
}

/// The named constants: (name, type). Constants live in the value namespace
/// and builtins in the call namespace, so `min` the reduce op and `min(a, b)`
/// do not collide.
pub const CONSTANTS: &[(&str, Type)] = &[
    ("Simple", Type::Protocol),
    ("LL", Type::Protocol),
    ("none", Type::NoneConst),
    ("before", Type::SyncType),
    ("after", Type::SyncType),
    ("both", Type::SyncType),
    ("sum", Type::ReduceOp),
    ("min", Type::ReduceOp),
    ("max", Type::ReduceOp),
    ("input", Type::BufferType),
    ("output", Type::BufferType),
    ("scratch", Type::BufferType),
    ("interleaved", Type::ReplicationPolicy),
];

/// The options a `program` block may set, with their types.
pub const PROGRAM_OPTIONS: &[(&str, Type)] = &[
    ("collective", Type::Collective),
    ("num_ranks", Type::Int),
    ("instances", Type::Int),
    ("protocol", Type::Protocol),
    ("instr_fusion", Type::Bool),
    ("auto_sync", Type::Bool),
    ("replication_policy", Type::ReplicationPolicy),
    ("reuse_resources", Type::Bool),
    ("num_threads_per_block", Type::Int),
    ("use_double_scratch_buffer", Type::Bool),
    ("buffer_alignment", Type::Int),
    ("min_message_size", Type::Int),
    ("max_message_size", Type::Int),
];

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
                        arg.value.span,
                        "positional argument after a keyword argument",
                        "give this argument by name too",
                    ));
                }
                if i >= names.len() {
                    return Err(Diagnostic::error(
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
                    return Err(Diagnostic::error(
                        name.span,
                        format!("`{callee}` has no parameter named `{}`", name.name),
                        "unknown keyword argument",
                    )
                    .with_note(format!("its parameters are: {}", names.join(", "))));
                };
                if slots[pos].is_some() {
                    return Err(Diagnostic::error(
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
                call_span,
                format!("missing argument `{}` in call to `{callee}`", names[i]),
                format!("`{}` is required", names[i]),
            ));
        }
    }
    Ok(slots)
}
