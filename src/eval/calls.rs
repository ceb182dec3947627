//! Builtin values and calls: constants, fields, indexing and slicing, the
//! dispatch of builtin functions and methods, and the argument checks shared
//! by the recording methods (`ops.rs`) and the program block (`program.rs`):
//! ranks, thread blocks, chunks on the right rank, sizes, packets in scratch.

use super::code::Field;
use super::value::*;
use super::{Evaluator, Res};
use crate::diag::Span;
use crate::ir::*;
use crate::syntax::ast::Ident;
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

pub(super) fn sync_of(v: &Value) -> DataSync {
    match v {
        Value::Sync(s) => *s,
        _ => DataSync::NONE,
    }
}

/// Field `which` of `v`; `name` is how the program wrote it.
pub(super) fn field(ev: &mut Evaluator<'_>, v: &Value, which: Field, name: &Ident) -> Res<Value> {
    let int = |x: u32| Ok(Value::Int(x as i64));
    match (v, which) {
        (Value::Rank(r), Field::Input) => Ok(Value::Buffer(whole_buffer(
            ev,
            name.span,
            *r,
            BufferKind::Input,
        )?)),
        (Value::Rank(r), Field::Output) => Ok(Value::Buffer(whole_buffer(
            ev,
            name.span,
            *r,
            BufferKind::Output,
        )?)),
        (Value::Rank(r), Field::Id) => int(*r),
        (Value::Buffer(b), Field::Size) => int(b.size),
        (Value::Buffer(b), Field::Rank) => int(b.rank),
        (Value::Chunk(c), Field::Rank) => int(c.rank),
        (Value::Chunk(c), Field::Index) => int(c.index),
        (Value::Chunk(c), Field::Size) => int(c.size),
        (Value::MemoryChannel(c) | Value::PortChannel(c), Field::SrcRank) => int(c.src),
        (Value::MemoryChannel(c) | Value::PortChannel(c), Field::DstRank) => int(c.dst),
        (Value::TbGroup(tbs), Field::TbList) => Ok(Value::List(Rc::new(
            tbs.iter().map(|t| Value::Int(*t as i64)).collect(),
        ))),
        _ => Err(ev.error(
            name.span,
            format!("`{v}` has no field `{}`", name.name),
            "no such field",
        )),
    }
}

fn whole_buffer(ev: &mut Evaluator<'_>, span: Span, rank: u32, kind: BufferKind) -> Res<BufferVal> {
    let rec = ev.recorder_mut(span)?;
    Ok(BufferVal {
        rank,
        kind,
        offset: 0,
        size: rec.buffer_chunks(rank, kind),
    })
}

pub fn index(
    ev: &mut Evaluator<'_>,
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
fn slice(ev: &Evaluator<'_>, b: &BufferVal, lo: i64, hi: i64, span: Span) -> Res<Value> {
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

/// Arguments of a builtin call, in parameter order, with their spans.
pub(super) struct Args {
    pub(super) values: Vec<(Value, Span)>,
    pub(super) call: Span,
}

impl Args {
    pub(super) fn v(&self, i: usize) -> &Value {
        &self.values[i].0
    }
    pub(super) fn span(&self, i: usize) -> Span {
        self.values[i].1
    }
    pub(super) fn chunk(&self, i: usize) -> Chunk {
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
    pub(super) fn chunk_or(&self, i: usize, default: Chunk) -> Chunk {
        if self.v(i).is_unit() {
            default
        } else {
            self.chunk(i)
        }
    }
    pub(super) fn chunks(&self, i: usize) -> Vec<Chunk> {
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

impl Evaluator<'_> {
    pub(super) fn int_arg(&self, args: &Args, i: usize, what: &str, limit: u32) -> Res<u32> {
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

    pub(super) fn rank_arg(&mut self, args: &Args, i: usize, what: &str) -> Res<u32> {
        let n = self.recorder_mut(args.call)?.num_ranks();
        self.int_arg(args, i, what, n)
    }

    /// A list of thread block ids (of a group or a barrier), each in range.
    pub(super) fn tb_ids(&self, args: &Args, i: usize) -> Res<Vec<u32>> {
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

    pub(super) fn tb_arg(&self, args: &Args, i: usize) -> Res<u32> {
        self.int_arg(args, i, "thread block", MAX_THREAD_BLOCKS)
    }

    /// The thread blocks an op runs on, from its `tb` and `tb_group`
    /// arguments at `i` and `i + 1`, with each block's group info.
    pub(super) fn tb_list(&self, args: &Args, i: usize) -> Res<Vec<(u32, Option<TbgInfo>)>> {
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

    pub(super) fn expect_rank(
        &self,
        args: &Args,
        i: usize,
        chunk: Chunk,
        rank: u32,
        role: &str,
    ) -> Res<()> {
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

    pub(super) fn expect_same_size(&self, args: &Args, i: usize, a: Chunk, b: Chunk) -> Res<()> {
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

    pub(super) fn expect_scratch(&self, args: &Args, i: usize, c: Chunk, what: &str) -> Res<()> {
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
    pub(super) fn switch_member(&self, args: &Args, s: &SwitchVal) -> Res<u32> {
        let r = args.v(0).as_int();
        match u32::try_from(r).ok().filter(|r| s.id_on(*r).is_some()) {
            Some(r) => Ok(r),
            None => Err(self.error(
                args.span(0),
                format!("rank {r} is not in this switch channel"),
                format!("its ranks are {}", super::ops::rank_list(&s.ranks)),
            )),
        }
    }

    /// The recorder, told the loop values first if they changed since it
    /// last recorded (ops and channels keep them for reports).
    pub(super) fn rec(&mut self) -> &mut super::record::Recorder {
        let changed = std::mem::take(&mut self.loop_values_changed);
        let values = (changed && self.track_loop_values).then(|| self.loop_values());
        let rec = self
            .recorder
            .as_mut()
            .expect("builtins that record run after the program block");
        match values {
            Some(v) if v.is_empty() => rec.leave_loops(),
            Some(v) => rec.enter_loop_context(v),
            None => {}
        }
        rec
    }
}

pub fn call_builtin(
    ev: &mut Evaluator<'_>,
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
                Value::Range(a, b) => b.saturating_sub(*a).max(0),
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
        B::Assert if args.v(0).as_bool() => Ok(Value::Unit),
        B::Assert => {
            let message = match args.v(1) {
                Value::Str(text) => text.to_string(),
                other => other.to_string(),
            };
            Err(ev.error(args.call, message, "the program's assertion fails here"))
        }
        B::AllGather
        | B::AllReduce
        | B::ReduceScatter
        | B::AllToAll
        | B::SendRecv
        | B::TestCollective => super::program::collective(ev, sig.builtin, &args),
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
                    span,
                )))
            } else {
                Ok(Value::PortChannel(ev.rec().new_channel(
                    ChannelKind::Port,
                    dst,
                    src,
                    span,
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
        _ => super::ops::method(ev, sig.builtin, recv.unwrap_or(Value::Unit), &args),
    }
}
