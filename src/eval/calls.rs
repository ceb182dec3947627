//! Builtin values and calls: constants, fields, indexing and slicing, the
//! dispatch of builtin functions and methods, and the argument checks shared
//! by the recording methods (`ops.rs`) and the program block (`program.rs`):
//! ranks, thread blocks, chunks on the right rank, sizes, packets in scratch.

use super::args::{self, Call};
use super::limits::MAX_ELEMENTS;
use super::value::*;
use super::{Evaluator, Res};
use crate::diag::{Code, Diagnostic, Span};
use crate::ir::*;
use crate::syntax::ast::Ident;
use crate::vocab::{self, Builtin, Field, Receiver};
use std::rc::Rc;

/// The value of a named constant.
pub fn constant(name: &str) -> Option<Value> {
    vocab::Constant::named(name).map(Value::from)
}

/// The value a parameter left out takes (`Unit` when it is absent).
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
        (Value::TbGroup(tbs), Field::TbList) => Ok(Value::List(
            tbs.iter().map(|t| Value::Int(*t as i64)).collect(),
        )),
        _ => Err(ev.error(
            Code::NoSuchMember,
            name.span,
            format!("`{v}` has no field `{}`", name.name),
            "no such field",
        )),
    }
}

/// `rank(r).input[i]` (or `.output[i]`), the chunk most ops name, made
/// at once: the rank checked as `rank()` checks it (`call` is that call's
/// span), the buffer as the field makes it, the index as `[i]` checks it.
pub(super) fn rank_chunk(
    ev: &mut Evaluator<'_>,
    call: Span,
    rank: &args::Arg<i64>,
    (kind, field): (BufferKind, Span),
    (index, index_span): (i64, Span),
) -> Res<Value> {
    let rank = ev.rank_in(call, rank, "rank")?;
    let buffer = whole_buffer(ev, field, rank, kind)?;
    chunk_at(ev, &buffer, index, index_span)
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
    let tuple = target.tuple_items();
    match (target, idx) {
        (Value::List(_) | Value::Tuple(_) | Value::Pair(..), Value::Int(_) | Value::Big(_)) => {
            let items: &[Value] = match (target, &tuple) {
                (Value::List(items), _) => items,
                (_, Some(items)) => items,
                _ => &[],
            };
            let n = items.len() as i64;
            let pos = match idx {
                Value::Int(i) if *i < 0 => i + n,
                Value::Int(i) => *i,
                // Past i64::MAX: past the end of any list.
                _ => n,
            };
            if !(0..n).contains(&pos) {
                return Err(ev.error(
                    Code::Index,
                    idx_span,
                    format!("index {idx} out of bounds"),
                    format!("the list has {n} element(s)"),
                )
                .with_note(match n {
                    0 => "help: the list is empty: check what makes it (a loop or comprehension that ran no time?)".to_string(),
                    n => format!("help: a list of {n} is indexed 0 to {} (or -1 to -{n} from its end): check the index and the loop that makes it", n - 1),
                }));
            }
            Ok(items[pos as usize].clone())
        }
        (Value::Map(m), key) => {
            ev.walk_parts(idx_span, key)?;
            m.get(key).cloned().ok_or_else(|| {
                ev.error(
                    Code::Index,
                    idx_span,
                    format!("no entry for key `{}`", key.brief()),
                    "missing key",
                )
                .with_note(match m.entries.first() {
                    Some((k, _)) => format!(
                        "help: the map holds {}, such as `{}`: index it with a key it holds",
                        match m.entries.len() {
                            1 => "1 entry".to_string(),
                            n => format!("{n} entries"),
                        },
                        k.brief()
                    ),
                    None => "help: the map is empty: check what makes it".to_string(),
                })
            })
        }
        (Value::Buffer(b), Value::Int(i)) => chunk_at(ev, b, *i, idx_span),
        // Past i64::MAX: past the end of any buffer.
        (Value::Buffer(b), Value::Big(_)) => Err(index_out_of_bounds(ev, b, idx, idx_span)),
        (Value::Buffer(b), Value::Range(lo, hi)) => slice(ev, b, *lo, *hi, idx_span),
        _ => Err(ev.error(
            Code::TypeMismatch,
            span,
            format!("cannot index `{}` with `{}`", target.brief(), idx.brief()),
            "wrong index",
        )),
    }
}

/// `buffer[i]`: its chunk `i`, where it has one.
fn chunk_at(ev: &Evaluator<'_>, b: &BufferVal, i: i64, span: Span) -> Res<Value> {
    match i >= 0 && i < i64::from(b.size) {
        true => slice(ev, b, i, i + 1, span),
        false => Err(index_out_of_bounds(ev, b, &Value::Int(i), span)),
    }
}

/// `buffer[i]` where the int `i` is not one of its chunks.
#[cold]
fn index_out_of_bounds(ev: &Evaluator<'_>, b: &BufferVal, i: &Value, span: Span) -> Diagnostic {
    let negative = i.wide_int().is_some_and(|i| i < 0);
    let help = match (negative, b.size) {
        (true, 0) => "help: indices count from 0, and this buffer has no chunks".to_string(),
        (true, n) => format!(
            "help: indices count from 0 (a negative one does not count from the end, as in Python): the last chunk is [{}]",
            n - 1
        ),
        (false, _) => chunks_help(b.size),
    };
    ev.error(
        Code::ChunkBounds,
        span,
        format!(
            "index {i} out of bounds of rank {}'s {} buffer",
            b.rank,
            b.kind.name()
        ),
        format!("the buffer has {} chunk(s)", b.size),
    )
    .with_note(help)
}

/// Which chunks a buffer of `size` has, and what sets how many.
fn chunks_help(size: u32) -> String {
    match size {
        0 => "help: the buffer has no chunks: the collective's sizes (or the scratch buffer's size) set how many there are".to_string(),
        n => format!(
            "help: its chunks are 0 to {}: the collective's `chunk_factor` (or the scratch buffer's size) sets how many there are",
            n - 1
        ),
    }
}

/// `buffer[lo..hi]`: a chunk, with the bounds checked against the buffer.
fn slice(ev: &Evaluator<'_>, b: &BufferVal, lo: i64, hi: i64, span: Span) -> Res<Value> {
    if lo < 0 || hi > b.size as i64 || lo >= hi {
        let (what, label, help) = if lo >= hi {
            (
                "an empty slice",
                "it ends where it starts, or before".to_string(),
                "help: a slice `[lo..hi]` holds chunks lo to hi - 1: make hi larger than lo"
                    .to_string(),
            )
        } else {
            (
                "slice out of bounds",
                format!("the buffer has {} chunk(s)", b.size),
                chunks_help(b.size),
            )
        };
        return Err(ev
            .error(
                Code::ChunkBounds,
                span,
                format!(
                    "{what}: [{lo}..{hi}] of rank {}'s {} buffer",
                    b.rank,
                    b.kind.name()
                ),
                label,
            )
            .with_note(help));
    }
    Ok(Value::Chunk(Chunk {
        rank: b.rank,
        kind: b.kind,
        index: b.offset + lo as u32,
        size: (hi - lo) as u32,
    }))
}

/// Runs a builtin call; `recv` is a method's receiver.
pub fn call_builtin(
    ev: &mut Evaluator<'_>,
    span: Span,
    call: &Call,
    recv: Option<Value>,
) -> Res<Value> {
    match call {
        Call::Len(a) => {
            let n = match &a.value.value {
                Value::List(v) | Value::Tuple(v) => v.len() as i64,
                Value::Pair(..) => 2,
                Value::Map(m) => m.entries.len() as i64,
                Value::Range(a, b) => b.saturating_sub(*a).max(0),
                Value::Str(s) => s.len() as i64,
                other => {
                    return Err(ev.error(
                        Code::TypeMismatch,
                        a.value.span,
                        format!("`{other}` has no length"),
                        "not a list, tuple, map, range or string",
                    ))
                }
            };
            Ok(Value::Int(n))
        }
        Call::Min(a) => Ok(Value::int(a.a.value.min(a.b.value)).expect("one of two ints")),
        Call::Max(a) => Ok(Value::int(a.a.value.max(a.b.value)).expect("one of two ints")),
        Call::Str(a) => {
            let Some(text) = a.value.value.text_within(MAX_ELEMENTS) else {
                return Err(ev.too_large(span, "a string too large", "bytes"));
            };
            ev.work(span, text.len(), true)?;
            Ok(Value::Str(Rc::from(text.as_str())))
        }
        Call::Assert(a) if a.condition.value => Ok(Value::Unit),
        Call::Assert(a) => Err(ev.error(
            Code::Assertion,
            span,
            crate::diag::escaped(&a.message.value),
            "the program's assertion fails here",
        )),
        Call::AllGather(a) => super::program::collective(ev, Builtin::AllGather, a),
        Call::AllReduce(a) => super::program::collective(ev, Builtin::AllReduce, a),
        Call::ReduceScatter(a) => super::program::collective(ev, Builtin::ReduceScatter, a),
        Call::AllToAll(a) => super::program::collective(ev, Builtin::AllToAll, a),
        Call::SendRecv(a) => super::program::collective(ev, Builtin::SendRecv, a),
        Call::TestCollective(a) => super::program::test_collective(ev, a),
        Call::TbGroup(a) => Ok(Value::TbGroup(Rc::new(
            ev.tb_ids(
                &a.tb_list,
                "a thread block group",
                "a group splits each op's range among its thread blocks, one share each (the MSCCL++ DSL refuses a thread block twice too)",
            )?,
        ))),
        Call::Rank(a) => Ok(Value::Rank(ev.rank_in(span, &a.rank, "rank")?)),
        Call::Scratch(a) => {
            let rank = ev.rank_in(span, &a.rank, "rank")?;
            // Past 2^24 chunks, alone or with the rank's scratch before
            // it, is one limit, as the docs say.
            let too_large = |ev: &Evaluator<'_>| {
                ev.error(
                    Code::Limit,
                    span,
                    "scratch buffer too large",
                    "more than 2^24 chunks on this rank",
                )
            };
            if a.size.value > 1 << 24 {
                return Err(too_large(ev));
            }
            let size = ev.int_in(&a.size, "scratch size", u32::MAX)?;
            let Some(offset) = ev.rec().allocate_scratch(rank, size) else {
                return Err(too_large(ev));
            };
            Ok(Value::Buffer(BufferVal {
                rank,
                kind: BufferKind::Scratch,
                offset,
                size,
            }))
        }
        Call::MemoryChannel(a) => {
            let (dst, src) = channel_ends(ev, span, a)?;
            let c = ev.rec().new_channel(ChannelKind::Memory, dst, src, span);
            Ok(Value::MemoryChannel(c))
        }
        Call::PortChannel(a) => {
            let (dst, src) = channel_ends(ev, span, a)?;
            let c = ev.rec().new_channel(ChannelKind::Port, dst, src, span);
            Ok(Value::PortChannel(c))
        }
        Call::SwitchChannel(a) => {
            let n = ev.recorder_mut(span)?.num_ranks();
            let mut ranks = Vec::with_capacity(a.rank_list.value.len());
            let mut seen = std::collections::HashSet::new();
            for &r in &a.rank_list.value {
                if r < 0 || r >= n as i64 {
                    return Err(ev.error(
                        Code::OutOfRange,
                        a.rank_list.span,
                        format!("rank {r} out of range"),
                        format!(
                            "the program has {}",
                            crate::units::count(u64::from(n), "rank")
                        ),
                    ));
                }
                if !seen.insert(r) {
                    return Err(ev.error(
                        Code::WrongPlace,
                        a.rank_list.span,
                        format!("rank {r} listed twice"),
                        "each rank joins a switch channel once",
                    ));
                }
                ranks.push(r as u32);
            }
            let channel = ev.rec().new_switch_channel(ranks, a.buffer_type.value);
            Ok(Value::SwitchChannel(Rc::new(channel)))
        }
        Call::Semaphore(a) => {
            let rank = ev.rank_in(span, &a.rank, "rank")?;
            let initial = &a.initial_value;
            let id = ev.rec().new_semaphore(rank, initial.value, initial.span);
            Ok(Value::Semaphore { rank, id })
        }
        method => super::ops::method(ev, span, method, recv.unwrap_or(Value::Unit)),
    }
}

/// A channel's destination and source ranks.
fn channel_ends(ev: &mut Evaluator<'_>, span: Span, a: &args::Channel) -> Res<(u32, u32)> {
    let dst = ev.rank_in(span, &a.dst_rank, "destination rank")?;
    let src = ev.rank_in(span, &a.src_rank, "source rank")?;
    Ok((dst, src))
}
