//! The builtins: what each function and method does when the generator
//! runs, including the checks the DSL makes (a chunk on the wrong rank for
//! a channel, sizes that differ, packets outside scratch, ...).

use super::value::*;
use super::{Evaluator, Res};
use crate::diag::{Diagnostic, Span};
use crate::ir::*;
use crate::syntax::ast::{Ident, ProgramOption};
use crate::vocab::{self, Builtin, Receiver, Signature};
use std::rc::Rc;

/// The value of a named constant.
pub fn constant(name: &str) -> Option<Value> {
    Some(match name {
        "Simple" => Value::Protocol(Protocol::Simple),
        "LL" => Value::Protocol(Protocol::LL),
        "none" => Value::NoneConst,
        "before" => Value::Sync(DataSync::BEFORE),
        "after" => Value::Sync(DataSync::AFTER),
        "both" => Value::Sync(DataSync::BOTH),
        "sum" => Value::ReduceOp(ReduceOp::Sum),
        "min" => Value::ReduceOp(ReduceOp::Min),
        "max" => Value::ReduceOp(ReduceOp::Max),
        "input" => Value::BufferType(BufferKind::Input),
        "output" => Value::BufferType(BufferKind::Output),
        "scratch" => Value::BufferType(BufferKind::Scratch),
        "interleaved" => Value::Policy(ReplicationPolicy::Interleaved),
        _ => return None,
    })
}

pub fn is_builtin_function(name: &str) -> bool {
    vocab::signatures()
        .iter()
        .any(|s| s.receiver == Receiver::Free && s.name == name)
}

pub fn default_value(default: vocab::Default) -> Value {
    match default {
        vocab::Default::Required | vocab::Default::Absent => Value::Unit,
        vocab::Default::Int(v) => Value::Int(v),
        vocab::Default::Bool(b) => Value::Bool(b),
        vocab::Default::Const(name) => constant(name).unwrap_or(Value::Unit),
    }
}

pub fn receiver_of(v: &Value) -> Option<Receiver> {
    Some(match v {
        Value::Rank(_) => Receiver::Rank,
        Value::MemoryChannel(_) => Receiver::MemoryChannel,
        Value::PortChannel(_) => Receiver::PortChannel,
        Value::SwitchChannel(_) => Receiver::SwitchChannel,
        Value::SwitchView(..) => Receiver::SwitchView,
        Value::Semaphore { .. } => Receiver::Semaphore,
        _ => return None,
    })
}

fn sync_of(v: &Value) -> DataSync {
    match v {
        Value::Sync(s) => *s,
        _ => DataSync::NONE,
    }
}

pub fn field(ev: &mut Evaluator, v: &Value, field: &Ident) -> Res<Value> {
    let int = |x: u32| Ok(Value::Int(x as i64));
    match (v, field.name.as_str()) {
        (Value::Rank(r), "input") => Ok(Value::Buffer(whole_buffer(
            ev,
            field.span,
            *r,
            BufferKind::Input,
        )?)),
        (Value::Rank(r), "output") => Ok(Value::Buffer(whole_buffer(
            ev,
            field.span,
            *r,
            BufferKind::Output,
        )?)),
        (Value::Rank(r), "id") => int(*r),
        (Value::Buffer(b), "size") => int(b.size),
        (Value::Buffer(b), "rank") => int(b.rank),
        (Value::Chunk(c), "rank") => int(c.rank),
        (Value::Chunk(c), "index") => int(c.index),
        (Value::Chunk(c), "size") => int(c.size),
        (Value::MemoryChannel(c) | Value::PortChannel(c), "src_rank") => int(c.src),
        (Value::MemoryChannel(c) | Value::PortChannel(c), "dst_rank") => int(c.dst),
        (Value::TbGroup(tbs), "tb_list") => Ok(Value::List(Rc::new(
            tbs.iter().map(|t| Value::Int(*t as i64)).collect(),
        ))),
        _ => Err(ev.error(
            field.span,
            format!("`{v}` has no field `{}`", field.name),
            "no such field",
        )),
    }
}

fn whole_buffer(ev: &mut Evaluator, span: Span, rank: u32, kind: BufferKind) -> Res<BufferVal> {
    let rec = ev.recorder_mut(span)?;
    Ok(BufferVal {
        rank,
        kind,
        offset: 0,
        size: rec.buffer_chunks(rank, kind),
    })
}

pub fn index(
    ev: &mut Evaluator,
    span: Span,
    target: &Value,
    idx: &Value,
    idx_span: Span,
) -> Res<Value> {
    match (target, idx) {
        (Value::List(items) | Value::Tuple(items), Value::Int(i)) => {
            let n = items.len() as i64;
            let pos = if *i < 0 { i + n } else { *i };
            if !(0..n).contains(&pos) {
                return Err(ev.error(
                    idx_span,
                    format!("index {i} out of bounds"),
                    format!("the list has {n} element(s)"),
                ));
            }
            Ok(items[pos as usize].clone())
        }
        (Value::Map(m), key) => m
            .get(key)
            .cloned()
            .ok_or_else(|| ev.error(idx_span, format!("no entry for key `{key}`"), "missing key")),
        (Value::Buffer(b), Value::Int(i)) => slice(ev, b, *i, i.saturating_add(1), idx_span),
        (Value::Buffer(b), Value::Range(lo, hi)) => slice(ev, b, *lo, *hi, idx_span),
        _ => Err(ev.error(
            span,
            format!("cannot index `{target}` with `{idx}`"),
            "wrong index",
        )),
    }
}

/// `buffer[lo..hi]`: a chunk, with the bounds checked against the buffer.
fn slice(ev: &Evaluator, b: &BufferVal, lo: i64, hi: i64, span: Span) -> Res<Value> {
    if lo < 0 || hi > b.size as i64 || lo >= hi {
        let what = if lo >= hi {
            "an empty slice"
        } else {
            "slice out of bounds"
        };
        return Err(ev.error(
            span,
            format!(
                "{what}: [{lo}..{hi}] of rank {}'s {} buffer",
                b.rank,
                b.kind.name()
            ),
            format!("the buffer has {} chunk(s)", b.size),
        ));
    }
    Ok(Value::Chunk(Chunk {
        rank: b.rank,
        kind: b.kind,
        index: b.offset + lo as u32,
        size: (hi - lo) as u32,
    }))
}

/// Builds the empty plan from the `program` header.
pub fn build_plan(
    ev: &Evaluator,
    span: Span,
    name: String,
    values: &[(&ProgramOption, Value)],
) -> Res<Plan> {
    let mut options = Options::default();
    let mut collective: Option<CollectiveVal> = None;
    let mut num_ranks: Option<(u32, Span)> = None;
    for (opt, v) in values {
        let vspan = opt.value.span;
        let positive = |what: &str| -> Res<u32> {
            match v {
                Value::Int(i) if *i > 0 && *i <= u32::MAX as i64 => Ok(*i as u32),
                _ => Err(ev.error(
                    vspan,
                    format!("`{what}` must be a positive integer"),
                    format!("this is {v}"),
                )),
            }
        };
        match (opt.key.name.as_str(), v) {
            ("collective", Value::Collective(c)) => collective = Some(*c),
            ("num_ranks", _) => num_ranks = Some((positive("num_ranks")?, vspan)),
            ("instances", _) => {
                options.instances = positive("instances")?;
                if options.instances > 1024 {
                    return Err(ev.error(vspan, "at most 1024 instances", format!("this is {v}")));
                }
            }
            ("protocol", Value::Protocol(p)) => options.protocol = *p,
            ("instr_fusion", Value::Bool(b)) => options.instr_fusion = *b,
            ("auto_sync", Value::Bool(b)) => options.auto_sync = *b,
            ("replication_policy", Value::Policy(p)) => options.replication_policy = *p,
            ("replication_policy", Value::NoneConst) => {
                options.replication_policy = ReplicationPolicy::None
            }
            ("reuse_resources", Value::Bool(b)) => options.reuse_resources = *b,
            ("num_threads_per_block", _) => {
                let n = positive("num_threads_per_block")?;
                if n > 1024 {
                    return Err(ev
                        .error(
                            vspan,
                            "at most 1024 threads per block",
                            format!("this is {n}"),
                        )
                        .with_note("the MSCCL++ kernel is compiled with __launch_bounds__(1024)"));
                }
                options.num_threads_per_block = n;
            }
            ("use_double_scratch_buffer", Value::Bool(b)) => options.use_double_scratch_buffer = *b,
            ("buffer_alignment", _) => options.buffer_alignment = positive("buffer_alignment")?,
            ("min_message_size", Value::Int(i)) => options.min_message_size = *i as u64,
            ("max_message_size", Value::Int(i)) => options.max_message_size = *i as u64,
            (key, _) => {
                let known: Vec<&str> = vocab::PROGRAM_OPTIONS.iter().map(|(n, _)| *n).collect();
                return Err(ev
                    .error(
                        opt.key.span,
                        format!("unknown or mistyped program option `{key}`"),
                        "not a program option of this type",
                    )
                    .with_note(format!("the options are: {}", known.join(", "))));
            }
        }
    }
    let Some(c) = collective else {
        return Err(ev
            .error(
                span,
                "the program block sets no collective",
                "missing `collective = ...`",
            )
            .with_note(
                "help: add e.g. `collective = allreduce(8, chunk_factor: 1, inplace: true)`",
            ));
    };
    let n = match num_ranks {
        Some((n, nspan)) if n != c.num_ranks => {
            return Err(ev.error(
                nspan,
                "num_ranks differs from the collective's rank count",
                format!("the collective has {} ranks", c.num_ranks),
            ))
        }
        _ => c.num_ranks,
    };
    let rank = RankPlan {
        input_chunks: c.input_chunks,
        output_chunks: c.output_chunks,
        ..RankPlan::default()
    };
    Ok(Plan {
        name,
        collective: Collective { num_ranks: n, ..c },
        options,
        ranks: vec![rank; n as usize],
    })
}

/// Arguments of a builtin call, in parameter order, with their spans.
struct Args {
    values: Vec<(Value, Span)>,
    call: Span,
}

impl Args {
    fn v(&self, i: usize) -> &Value {
        &self.values[i].0
    }
    fn span(&self, i: usize) -> Span {
        self.values[i].1
    }
    fn chunk(&self, i: usize) -> Chunk {
        match self.v(i) {
            Value::Chunk(c) => *c,
            _ => Chunk {
                rank: 0,
                kind: BufferKind::Input,
                index: 0,
                size: 0,
            },
        }
    }
    /// The chunk at `i`, or `default` when that optional argument was left out.
    fn chunk_or(&self, i: usize, default: Chunk) -> Chunk {
        if self.v(i).is_unit() {
            default
        } else {
            self.chunk(i)
        }
    }
    fn chunks(&self, i: usize) -> Vec<Chunk> {
        match self.v(i) {
            Value::List(items) => items
                .iter()
                .filter_map(|v| {
                    if let Value::Chunk(c) = v {
                        Some(*c)
                    } else {
                        None
                    }
                })
                .collect(),
            _ => Vec::new(),
        }
    }
}

impl Evaluator {
    fn int_arg(&self, args: &Args, i: usize, what: &str, limit: u32) -> Res<u32> {
        let v = args.v(i).as_int();
        if v < 0 || v >= limit as i64 {
            let bound = if limit == u32::MAX {
                String::from("must not be negative")
            } else {
                format!("must be below {limit}")
            };
            return Err(self.error(
                args.span(i),
                format!("{what} {v} out of range"),
                format!("{what} {bound}"),
            ));
        }
        Ok(v as u32)
    }

    fn rank_arg(&mut self, args: &Args, i: usize, what: &str) -> Res<u32> {
        let n = self.recorder_mut(args.call)?.num_ranks();
        self.int_arg(args, i, what, n)
    }

    /// A list of thread block ids (of a group or a barrier), each in range.
    fn tb_ids(&self, args: &Args, i: usize) -> Res<Vec<u32>> {
        let Value::List(items) = args.v(i) else {
            return Ok(Vec::new());
        };
        let mut out = Vec::with_capacity(items.len());
        for v in items.iter() {
            let t = v.as_int();
            if t < 0 || t >= MAX_THREAD_BLOCKS as i64 {
                return Err(self.error(
                    args.span(i),
                    format!("thread block {t} out of range"),
                    format!("thread block must be below {MAX_THREAD_BLOCKS}"),
                ));
            }
            out.push(t as u32);
        }
        Ok(out)
    }

    fn tb_arg(&self, args: &Args, i: usize) -> Res<u32> {
        self.int_arg(args, i, "thread block", MAX_THREAD_BLOCKS)
    }

    /// The thread blocks an op runs on, from its `tb` and `tb_group`
    /// arguments at `i` and `i + 1`, with each block's group info.
    fn tb_list(&self, args: &Args, i: usize) -> Res<Vec<(u32, Option<TbgInfo>)>> {
        match (args.v(i), args.v(i + 1)) {
            (Value::Unit, Value::TbGroup(tbs)) => Ok(tbs
                .iter()
                .enumerate()
                .map(|(k, t)| {
                    (
                        *t,
                        Some(TbgInfo {
                            tb_id: k as u32,
                            size: tbs.len() as u32,
                        }),
                    )
                })
                .collect()),
            (Value::Unit, _) => Err(self.error(
                args.call,
                "no thread block given",
                "give `tb: N` or `tb_group: G`",
            )),
            (_, Value::Unit) => Ok(vec![(self.tb_arg(args, i)?, None)]),
            _ => Err(self
                .error(
                    args.span(i + 1),
                    "both `tb` and `tb_group` given",
                    "give only one of them",
                )
                .with_secondary(args.span(i), "`tb` given here")),
        }
    }

    fn expect_rank(&self, args: &Args, i: usize, chunk: Chunk, rank: u32, role: &str) -> Res<()> {
        if chunk.rank != rank {
            return Err(self.error(
                args.span(i),
                format!(
                    "{role} is on rank {}, but must be on rank {rank}",
                    chunk.rank
                ),
                format!("a chunk of rank {}", chunk.rank),
            ));
        }
        Ok(())
    }

    fn expect_same_size(&self, args: &Args, i: usize, a: Chunk, b: Chunk) -> Res<()> {
        if a.size != b.size {
            return Err(self
                .error(
                    args.span(i),
                    format!("chunk sizes differ: {} and {}", a.size, b.size),
                    format!("this chunk has {} chunk(s)", b.size),
                )
                .with_note("both sides of a transfer or reduction must have the same size"));
        }
        Ok(())
    }

    fn expect_scratch(&self, args: &Args, i: usize, c: Chunk, what: &str) -> Res<()> {
        if c.kind != BufferKind::Scratch {
            return Err(self
                .error(
                    args.span(i),
                    format!("{what} must be in a scratch buffer"),
                    format!("this chunk is in the {} buffer", c.kind.name()),
                )
                .with_note(
                    "packets (LL) carry flags next to the data and only fit in scratch buffers",
                ));
        }
        Ok(())
    }

    /// The rank at argument 0, which must belong to switch channel `s`.
    fn switch_member(&self, args: &Args, s: &SwitchVal) -> Res<u32> {
        let r = args.v(0).as_int();
        match u32::try_from(r).ok().filter(|r| s.id_on(*r).is_some()) {
            Some(r) => Ok(r),
            None => Err(self.error(
                args.span(0),
                format!("rank {r} is not in this switch channel"),
                format!("its ranks are {}", rank_list(&s.ranks)),
            )),
        }
    }

    fn rec(&mut self) -> &mut super::record::Recorder {
        self.recorder
            .as_mut()
            .expect("builtins that record run after the program block")
    }
}

pub fn call_builtin(
    ev: &mut Evaluator,
    span: Span,
    sig: &Signature,
    recv: Option<Value>,
    values: Vec<(Value, Span)>,
) -> Res<Value> {
    let args = Args { values, call: span };
    use Builtin as B;
    match sig.builtin {
        B::Len => {
            let n = match args.v(0) {
                Value::List(v) | Value::Tuple(v) => v.len() as i64,
                Value::Map(m) => m.entries.len() as i64,
                Value::Range(a, b) => (b - a).max(0),
                Value::Str(s) => s.len() as i64,
                other => {
                    return Err(ev.error(
                        args.span(0),
                        format!("`{other}` has no length"),
                        "not a list, map, range or string",
                    ))
                }
            };
            Ok(Value::Int(n))
        }
        B::Min => Ok(Value::Int(args.v(0).as_int().min(args.v(1).as_int()))),
        B::Max => Ok(Value::Int(args.v(0).as_int().max(args.v(1).as_int()))),
        B::Str => Ok(Value::Str(Rc::from(args.v(0).to_string().as_str()))),
        B::AllGather
        | B::AllReduce
        | B::ReduceScatter
        | B::AllToAll
        | B::SendRecv
        | B::TestCollective => collective(ev, sig.builtin, &args),
        B::TbGroup => {
            let tbs = ev.tb_ids(&args, 0)?;
            if tbs.is_empty() {
                return Err(ev.error(
                    args.span(0),
                    "a thread block group needs at least one thread block",
                    "empty list",
                ));
            }
            Ok(Value::TbGroup(Rc::new(tbs)))
        }
        B::Rank => Ok(Value::Rank(ev.rank_arg(&args, 0, "rank")?)),
        B::Scratch => {
            let rank = ev.rank_arg(&args, 0, "rank")?;
            let size = ev.int_arg(&args, 1, "scratch size", 1 << 24)?;
            let Some(offset) = ev.rec().allocate_scratch(rank, size) else {
                return Err(ev.error(
                    span,
                    "scratch buffer too large",
                    "more than 2^24 chunks on this rank",
                ));
            };
            Ok(Value::Buffer(BufferVal {
                rank,
                kind: BufferKind::Scratch,
                offset,
                size,
            }))
        }
        B::MemoryChannel | B::PortChannel => {
            let dst = ev.rank_arg(&args, 0, "destination rank")?;
            let src = ev.rank_arg(&args, 1, "source rank")?;
            if sig.builtin == B::MemoryChannel {
                Ok(Value::MemoryChannel(ev.rec().new_channel(
                    ChannelKind::Memory,
                    dst,
                    src,
                )))
            } else {
                Ok(Value::PortChannel(ev.rec().new_channel(
                    ChannelKind::Port,
                    dst,
                    src,
                )))
            }
        }
        B::SwitchChannel => {
            let n = ev.recorder_mut(span)?.num_ranks();
            let mut ranks = Vec::new();
            let mut seen = std::collections::HashSet::new();
            if let Value::List(items) = args.v(0) {
                for v in items.iter() {
                    let r = v.as_int();
                    if r < 0 || r >= n as i64 {
                        return Err(ev.error(
                            args.span(0),
                            format!("rank {r} out of range"),
                            format!("the program has {n} ranks"),
                        ));
                    }
                    if !seen.insert(r) {
                        return Err(ev.error(
                            args.span(0),
                            format!("rank {r} listed twice"),
                            "each rank joins a switch channel once",
                        ));
                    }
                    ranks.push(r as u32);
                }
            }
            let Value::BufferType(kind) = args.v(1) else {
                return Ok(Value::Unit);
            };
            Ok(Value::SwitchChannel(Rc::new(
                ev.rec().new_switch_channel(ranks, *kind),
            )))
        }
        B::Semaphore => {
            let rank = ev.rank_arg(&args, 0, "rank")?;
            let init = args.v(1).as_int();
            Ok(Value::Semaphore {
                rank,
                id: ev.rec().new_semaphore(rank, init),
            })
        }
        _ => super::calls::method(ev, sig.builtin, recv.unwrap_or(Value::Unit), &args),
    }
}

fn collective(ev: &Evaluator, which: Builtin, args: &Args) -> Res<Value> {
    let positive = |i: usize, what: &str| -> Res<u32> {
        let v = args.v(i).as_int();
        if v <= 0 || v > 1 << 20 {
            return Err(ev.error(
                args.span(i),
                format!("{what} must be a positive integer"),
                format!("this is {v}"),
            ));
        }
        Ok(v as u32)
    };
    let n = positive(0, "the number of ranks")?;
    if which == Builtin::TestCollective {
        let size = |i: usize, what: &str| -> Res<u32> {
            let v = args.v(i).as_int();
            if v < 0 || v > u32::MAX as i64 {
                return Err(ev.error(
                    args.span(i),
                    format!("{what} must not be negative"),
                    format!("this is {v}"),
                ));
            }
            Ok(v as u32)
        };
        let (input, output) = (size(1, "input size")?, size(2, "output size")?);
        return Ok(Value::Collective(CollectiveVal {
            name: "test",
            num_ranks: n,
            chunk_factor: 1,
            inplace: false,
            input_chunks: input,
            output_chunks: output,
        }));
    }
    let c = positive(1, "chunk_factor")?;
    if n as u64 * c as u64 > 1 << 24 {
        return Err(ev.error(
            args.span(1),
            "too many chunks",
            format!("{n} ranks x chunk_factor {c} exceeds 2^24 chunks"),
        ));
    }
    let (name, input, output) = match which {
        Builtin::AllGather => ("allgather", c, n * c),
        Builtin::AllReduce => ("allreduce", n * c, n * c),
        Builtin::ReduceScatter => ("reducescatter", n * c, c),
        Builtin::AllToAll => ("alltoall", n * c, n * c),
        _ => ("sendrecv", c, c),
    };
    Ok(Value::Collective(CollectiveVal {
        name,
        num_ranks: n,
        chunk_factor: c,
        inplace: args.v(2).as_bool(),
        input_chunks: input,
        output_chunks: output,
    }))
}

fn local(c: Chunk) -> BufRef {
    BufRef::local(c.kind, c.index, c.size)
}

/// The methods of ranks, channels and semaphores: each records ops.
fn method(ev: &mut Evaluator, which: Builtin, recv: Value, args: &Args) -> Res<Value> {
    use Builtin as B;
    let span = args.call;
    match (which, &recv) {
        (B::RankCopy | B::RankCopyPackets | B::RankUnpackPackets, Value::Rank(r)) => {
            let (dst, src) = (args.chunk(0), args.chunk(1));
            ev.expect_rank(args, 0, dst, *r, "the destination chunk")?;
            ev.expect_rank(args, 1, src, *r, "the source chunk")?;
            ev.expect_same_size(args, 1, dst, src)?;
            let name = match which {
                B::RankCopy => OpName::Copy,
                B::RankCopyPackets => {
                    ev.expect_scratch(args, 0, dst, "the destination of copy_packets")?;
                    OpName::CopyPackets
                }
                _ => {
                    ev.expect_scratch(args, 1, src, "the source of unpack_packets")?;
                    OpName::UnpackPackets
                }
            };
            for (tb, tbg) in ev.tb_list(args, 2)? {
                let mut op = Op::new(name, span);
                op.src = vec![local(src)];
                op.dst = vec![local(dst)];
                op.tbg = tbg;
                ev.rec().add_op(*r, tb, op);
            }
            Ok(Value::Unit)
        }
        (B::RankReduce, Value::Rank(r)) => {
            let src = args.chunk(0);
            let others = args.chunks(1);
            let dst = args.chunk_or(4, src);
            let packet = args.v(6).as_bool();
            ev.expect_rank(args, 0, src, *r, "the source chunk")?;
            ev.expect_rank(args, 4, dst, *r, "the destination chunk")?;
            ev.expect_same_size(args, 4, src, dst)?;
            for o in &others {
                ev.expect_rank(args, 1, *o, *r, "every other chunk")?;
                ev.expect_same_size(args, 1, src, *o)?;
                if packet {
                    ev.expect_scratch(args, 1, *o, "the packet chunks of a packet reduce")?;
                }
            }
            let Value::ReduceOp(reduce_op) = args.v(5) else {
                return Ok(Value::Unit);
            };
            for (tb, tbg) in ev.tb_list(args, 2)? {
                let mut op = Op::new(
                    if packet {
                        OpName::ReducePackets
                    } else {
                        OpName::Reduce
                    },
                    span,
                );
                op.src = std::iter::once(src)
                    .chain(others.iter().copied())
                    .map(local)
                    .collect();
                op.dst = vec![local(dst)];
                op.tbg = tbg;
                op.reduce_op = Some(*reduce_op);
                ev.rec().add_op(*r, tb, op);
            }
            Ok(Value::Unit)
        }
        (B::RankBarrier, Value::Rank(r)) => {
            let tbs = ev.tb_ids(args, 0)?;
            if tbs.is_empty() {
                return Err(ev.error(
                    args.span(0),
                    "a barrier needs at least one thread block",
                    "empty list",
                ));
            }
            if tbs.len() == 1 {
                // One block: a barrier is just a block-wide sync.
                ev.rec().add_op(*r, tbs[0], Op::nop(span));
                return Ok(Value::Unit);
            }
            let id = ev.rec().barrier_id(*r, &tbs);
            for &tb in &tbs {
                let mut op = Op::new(OpName::Barrier, span);
                op.barrier = Some((id, tbs.len() as u32));
                ev.rec().add_op(*r, tb, op);
            }
            Ok(Value::Unit)
        }
        (
            B::MemSignal | B::MemWait | B::PortSignal | B::PortWait | B::PortFlush,
            Value::MemoryChannel(c) | Value::PortChannel(c),
        ) => {
            let kind = if matches!(recv, Value::MemoryChannel(_)) {
                ChannelKind::Memory
            } else {
                ChannelKind::Port
            };
            let tb = ev.tb_arg(args, 0)?;
            let relaxed = kind == ChannelKind::Memory && args.v(2).as_bool();
            let name = match (which, relaxed) {
                (B::MemSignal | B::PortSignal, false) => OpName::Signal,
                (B::MemSignal, true) => OpName::RelaxedSignal,
                (B::MemWait | B::PortWait, false) => OpName::Wait,
                (B::MemWait, true) => OpName::RelaxedWait,
                _ => OpName::Flush,
            };
            let cid = ev.rec().setup_channel(c.src, tb, kind, c.id);
            let mut op = Op::new(name, span);
            op.channel = Some(kind);
            op.channel_ids = vec![cid];
            op.data_sync = sync_of(args.v(1));
            ev.rec().add_op(c.src, tb, op);
            Ok(Value::Unit)
        }
        (B::MemGet, Value::MemoryChannel(c)) => {
            let (dst, src) = (args.chunk(0), args.chunk(1));
            ev.expect_rank(
                args,
                0,
                dst,
                c.src,
                "the destination of a get (on the channel's source rank)",
            )?;
            ev.expect_rank(
                args,
                1,
                src,
                c.dst,
                "the source of a get (on the channel's peer)",
            )?;
            ev.expect_same_size(args, 1, dst, src)?;
            for (tb, tbg) in ev.tb_list(args, 2)? {
                let rb = ev.rec().setup_remote_buffer(
                    c.src,
                    tb,
                    src.rank,
                    src.kind,
                    ChannelKind::Memory,
                );
                let cid = ev.rec().setup_channel(c.src, tb, ChannelKind::Memory, c.id);
                let mut op = Op::new(OpName::Get, span);
                op.channel = Some(ChannelKind::Memory);
                op.channel_ids = vec![cid];
                op.src = vec![BufRef {
                    target: RefTarget::Remote {
                        id: rb,
                        kind: src.kind,
                    },
                    index: src.index,
                    size: src.size,
                    rank: None,
                }];
                op.dst = vec![local(dst)];
                op.tbg = tbg;
                ev.rec().add_op(c.src, tb, op);
            }
            Ok(Value::Unit)
        }
        (
            B::MemPut
            | B::MemPutPackets
            | B::MemReadPutPackets
            | B::PortPut
            | B::PortPutWithSignal
            | B::PortPutWithSignalAndFlush
            | B::PortPutPackets
            | B::PortReadPutPackets,
            Value::MemoryChannel(c) | Value::PortChannel(c),
        ) => {
            let kind = if matches!(recv, Value::MemoryChannel(_)) {
                ChannelKind::Memory
            } else {
                ChannelKind::Port
            };
            let (dst, src) = (args.chunk(0), args.chunk(1));
            ev.expect_rank(
                args,
                1,
                src,
                c.src,
                "the source chunk (on the channel's source rank)",
            )?;
            ev.expect_rank(
                args,
                0,
                dst,
                c.dst,
                "the destination chunk (on the channel's peer)",
            )?;
            let name = match which {
                B::MemPut | B::PortPut => OpName::Put,
                B::PortPutWithSignal => OpName::PutWithSignal,
                B::PortPutWithSignalAndFlush => OpName::PutWithSignalAndFlush,
                B::MemPutPackets | B::PortPutPackets => OpName::PutPackets,
                _ => OpName::ReadPutPackets,
            };
            if name == OpName::ReadPutPackets {
                ev.expect_scratch(args, 1, src, "the source of read_put_packets")?;
            }
            if matches!(name, OpName::PutPackets | OpName::ReadPutPackets) {
                ev.expect_scratch(args, 0, dst, "the destination of a packet put")?;
            }
            ev.expect_same_size(args, 1, dst, src)?;
            let tbs = if kind == ChannelKind::Memory {
                ev.tb_list(args, 2)?
            } else {
                vec![(ev.tb_arg(args, 2)?, None)]
            };
            for (tb, tbg) in tbs {
                let rb = ev
                    .rec()
                    .setup_remote_buffer(c.src, tb, dst.rank, dst.kind, kind);
                let cid = ev.rec().setup_channel(c.src, tb, kind, c.id);
                let mut op = Op::new(name, span);
                op.channel = Some(kind);
                op.channel_ids = vec![cid];
                op.src = vec![local(src)];
                op.dst = vec![BufRef {
                    target: RefTarget::Remote {
                        id: rb,
                        kind: dst.kind,
                    },
                    index: dst.index,
                    size: dst.size,
                    rank: None,
                }];
                op.tbg = tbg;
                ev.rec().add_op(c.src, tb, op);
            }
            Ok(Value::Unit)
        }
        (B::MemReduce, Value::MemoryChannel(c)) => {
            let src = args.chunk(0);
            let remotes = args.chunks(1);
            let dst = args.chunk_or(4, src);
            ev.expect_rank(
                args,
                0,
                src,
                c.src,
                "the local source chunk (on the channel's source rank)",
            )?;
            ev.expect_rank(
                args,
                4,
                dst,
                c.src,
                "the local destination chunk (on the channel's source rank)",
            )?;
            ev.expect_same_size(args, 4, src, dst)?;
            for r in &remotes {
                ev.expect_rank(
                    args,
                    1,
                    *r,
                    c.dst,
                    "every remote chunk (on the channel's peer)",
                )?;
                ev.expect_same_size(args, 1, src, *r)?;
            }
            let Value::ReduceOp(reduce_op) = args.v(5) else {
                return Ok(Value::Unit);
            };
            for (tb, tbg) in ev.tb_list(args, 2)? {
                let mut srcs = vec![local(src)];
                for r in &remotes {
                    let rb = ev.rec().setup_remote_buffer(
                        c.src,
                        tb,
                        r.rank,
                        r.kind,
                        ChannelKind::Memory,
                    );
                    srcs.push(BufRef {
                        target: RefTarget::Remote {
                            id: rb,
                            kind: r.kind,
                        },
                        index: r.index,
                        size: r.size,
                        rank: None,
                    });
                }
                let cid = ev.rec().setup_channel(c.src, tb, ChannelKind::Memory, c.id);
                let mut op = Op::new(OpName::ReadReduce, span);
                op.channel = Some(ChannelKind::Memory);
                op.channel_ids = vec![cid];
                op.src = srcs;
                op.dst = vec![local(dst)];
                op.tbg = tbg;
                op.reduce_op = Some(*reduce_op);
                ev.rec().add_op(c.src, tb, op);
            }
            Ok(Value::Unit)
        }
        (B::SwitchAtRank, Value::SwitchChannel(s)) => {
            let r = ev.switch_member(args, s)?;
            Ok(Value::SwitchView(s.clone(), r))
        }
        (
            B::SwitchReduce | B::SwitchBroadcast | B::SwitchBroadcastPackets,
            Value::SwitchChannel(s),
        ) => {
            let r = ev.switch_member(args, s)?;
            let rest = Args {
                values: args.values[1..].to_vec(),
                call: args.call,
            };
            switch_op(ev, which, s, r, &rest)
        }
        (B::ViewReduce | B::ViewBroadcast | B::ViewBroadcastPackets, Value::SwitchView(s, r)) => {
            switch_op(ev, which, s, *r, args)
        }
        (B::SemAcquire | B::SemRelease, Value::Semaphore { rank, id }) => {
            let tb = ev.tb_arg(args, 0)?;
            let mut op = Op::new(
                if which == B::SemAcquire {
                    OpName::SemAcquire
                } else {
                    OpName::SemRelease
                },
                span,
            );
            op.semaphore_ids = vec![*id];
            op.data_sync = sync_of(args.v(1));
            ev.rec().add_op(*rank, tb, op);
            Ok(Value::Unit)
        }
        _ => Err(Diagnostic::error(
            span,
            format!("`{recv}` does not support this call"),
            "unsupported call",
        )),
    }
}

/// Switch-channel reduce and broadcast, run by `rank`; `args` start at `buffer_offset` or `src_chunk`.
fn switch_op(
    ev: &mut Evaluator,
    which: Builtin,
    s: &SwitchVal,
    rank: u32,
    args: &Args,
) -> Res<Value> {
    use Builtin as B;
    let reduce = matches!(which, B::SwitchReduce | B::ViewReduce);
    // reduce(buffer_offset, size, dst_chunk, tb, reduce_op) / broadcast(src_chunk, buffer_offset, size, tb)
    let (chunk_i, offset_i, size_i, tb_i) = if reduce { (2, 0, 1, 3) } else { (0, 1, 2, 3) };
    let chunk = args.chunk(chunk_i);
    let offset = ev.int_arg(args, offset_i, "buffer offset", u32::MAX)?;
    let size = ev.int_arg(args, size_i, "size", u32::MAX)?;
    let tb = ev.tb_arg(args, tb_i)?;
    if s.id_on(chunk.rank).is_none() {
        return Err(ev.error(
            args.span(chunk_i),
            format!(
                "the chunk is on rank {}, outside the switch channel's ranks {}",
                chunk.rank,
                rank_list(&s.ranks)
            ),
            "wrong rank",
        ));
    }
    if chunk.size != size {
        return Err(ev.error(
            args.span(chunk_i),
            format!("the chunk has {} chunk(s) but size is {size}", chunk.size),
            "size mismatch",
        ));
    }
    let end = offset as u64 + size as u64;
    for &r in if end <= s.checked_end.get() {
        &[][..]
    } else {
        &s.ranks[..]
    } {
        let limit = ev.rec().buffer_chunks(r, s.buffer);
        if end > limit as u64 {
            return Err(ev.error(
                args.span(offset_i),
                format!(
                    "[{offset}..{end}] is past the end of rank {r}'s {} buffer",
                    s.buffer.name()
                ),
                format!("it has {limit} chunk(s)"),
            ));
        }
    }
    s.checked_end.set(s.checked_end.get().max(end));
    if which == B::SwitchBroadcastPackets || which == B::ViewBroadcastPackets {
        ev.expect_scratch(args, chunk_i, chunk, "the source of broadcast_packets")?;
    }
    let cid = ev
        .rec()
        .setup_channel(rank, tb, ChannelKind::Switch, s.id_on(rank).unwrap_or(0));
    let mut op;
    if reduce {
        let Value::ReduceOp(reduce_op) = args.v(4) else {
            return Ok(Value::Unit);
        };
        op = Op::new(OpName::GroupLoadReduce, args.call);
        op.reduce_op = Some(*reduce_op);
        op.group_reduce = Some(GroupReduce {
            buffer: s.buffer,
            buffer_offset: offset,
            size,
            dst_rank: chunk.rank,
            dst_kind: chunk.kind,
            dst_index: chunk.index,
        });
        op.channel_ids = vec![cid];
    } else {
        op = Op::new(
            if which == B::SwitchBroadcast || which == B::ViewBroadcast {
                OpName::GroupStore
            } else {
                OpName::GroupStorePackets
            },
            args.call,
        );
        op.src = vec![BufRef {
            target: RefTarget::Local(chunk.kind),
            index: chunk.index,
            size: chunk.size,
            rank: Some(chunk.rank),
        }];
        op.dst = vec![BufRef {
            target: RefTarget::Switch { id: cid },
            index: offset,
            size,
            rank: None,
        }];
        op.channel_ids = vec![cid];
    }
    op.channel = Some(ChannelKind::Switch);
    ev.rec().add_op(rank, tb, op);
    Ok(Value::Unit)
}

/// A rank list for a message, shortened when long.
fn rank_list(ranks: &[u32]) -> String {
    if ranks.len() <= 16 {
        return format!("{ranks:?}");
    }
    let head: Vec<String> = ranks[..8].iter().map(|r| r.to_string()).collect();
    format!("[{}, ... ({} ranks)]", head.join(", "), ranks.len())
}
