//! The program block and the collectives: what the plan starts from.

use super::args::{self, Arg};
use super::value::*;
use super::{Evaluator, Res};
use crate::diag::{Code, Span};
use crate::ir::*;
use crate::syntax::ast::Ident;
use crate::vocab::{self, Builtin};
use std::rc::Rc;

/// Ranks a collective may have, and chunks per rank it may take: far above
/// any cluster, low enough that every per-rank table fits in memory.
const MAX_RANKS: u64 = 1 << 20;

/// Builds the empty plan from the `program` header.
pub fn build_plan(
    ev: &Evaluator<'_>,
    span: Span,
    name: String,
    values: &[(&Ident, Span, Value)],
) -> Res<Plan> {
    let mut options = Options::default();
    let mut collective: Option<(CollectiveVal, Span)> = None;
    let mut num_ranks: Option<(u32, Span)> = None;
    let (mut min_message_size_at, mut max_message_size_at) = (None, None);
    for (key, vspan, v) in values {
        let vspan = *vspan;
        let positive = |what: &str, max: u64| ev.count(vspan, &format!("`{what}`"), v, max);
        match (key.name.as_str(), v) {
            ("collective", Value::Collective(c)) => collective = Some((**c, vspan)),
            ("num_ranks", _) => num_ranks = Some((positive("num_ranks", MAX_RANKS)?, vspan)),
            ("instances", _) => options.instances = positive("instances", 1024)?,
            ("protocol", Value::Protocol(p)) => options.protocol = *p,
            ("instr_fusion", Value::Bool(b)) => options.instr_fusion = *b,
            ("auto_sync", Value::Bool(b)) => options.auto_sync = *b,
            ("replication_policy", Value::Policy(p)) => options.replication_policy = *p,
            ("replication_policy", Value::NoneConst) => {
                options.replication_policy = ReplicationPolicy::None
            }
            ("reuse_resources", Value::Bool(b)) => options.reuse_resources = *b,
            ("num_threads_per_block", _) => {
                options.num_threads_per_block =
                    positive("num_threads_per_block", 1024).map_err(|d| {
                        d.with_note("the MSCCL++ kernel is compiled with __launch_bounds__(1024)")
                    })?;
            }
            ("use_double_scratch_buffer", Value::Bool(b)) => options.use_double_scratch_buffer = *b,
            ("buffer_alignment", _) => {
                options.buffer_alignment = positive("buffer_alignment", u32::MAX.into())?
            }
            ("min_message_size", Value::Int(_) | Value::Big(_)) => {
                options.min_message_size = message_size(v);
                min_message_size_at = Some(vspan);
            }
            ("max_message_size", Value::Int(_) | Value::Big(_)) => {
                options.max_message_size = message_size(v);
                max_message_size_at = Some(vspan);
            }
            (name, _) => {
                let known: Vec<&str> = vocab::PROGRAM_OPTIONS.iter().map(|o| o.name).collect();
                return Err(ev
                    .error(
                        Code::Program,
                        key.span,
                        format!("unknown or mistyped program option `{name}`"),
                        "not a program option of this type",
                    )
                    .with_note(format!("the options are: {}", known.join(", "))));
            }
        }
    }
    let Some((c, collective_at)) = collective else {
        return Err(ev
            .error(
                Code::Program,
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
                Code::Program,
                nspan,
                "num_ranks differs from the collective's rank count",
                format!(
                    "the collective has {}",
                    crate::units::count(u64::from(c.num_ranks), "rank")
                ),
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
        loops: crate::ir::LoopValues::new(),
        instances_made: false,
        min_message_size_at,
        max_message_size_at,
        collective_at: Some(collective_at),
    })
}

/// A collective of `which` kind.
pub(super) fn collective(ev: &Evaluator<'_>, which: Builtin, a: &args::Collective) -> Res<Value> {
    let n = ranks(ev, &a.num_ranks)?;
    let c = ev.count(
        a.chunk_factor.span,
        "chunk_factor",
        &Value::Int(a.chunk_factor.value),
        MAX_RANKS,
    )?;
    if n as u64 * c as u64 > 1 << 24 {
        return Err(ev.error(
            Code::Limit,
            a.chunk_factor.span,
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
    Ok(Value::Collective(Rc::new(CollectiveVal {
        name,
        num_ranks: n,
        chunk_factor: c,
        inplace: a.inplace.value,
        input_chunks: input,
        output_chunks: output,
    })))
}

/// `test_collective(..)`: any buffer sizes.
pub(super) fn test_collective(ev: &Evaluator<'_>, a: &args::TestCollective) -> Res<Value> {
    let n = ranks(ev, &a.num_ranks)?;
    // In chunks, at most as many as any collective's buffer holds.
    let size = |arg: &Arg<i64>, what: &str| -> Res<u32> {
        let v = arg.value;
        if v < 0 {
            return Err(ev.error(
                Code::OutOfRange,
                arg.span,
                format!("{what} must not be negative"),
                format!("this is {v}"),
            ));
        }
        let most = super::limits::MAX_ELEMENTS;
        if v as u64 > most as u64 {
            return Err(ev.error(
                Code::Limit,
                arg.span,
                format!("{what} too large: {v} chunks"),
                format!("the maximum is {most} chunks"),
            ));
        }
        Ok(v as u32)
    };
    let input = size(&a.input_size, "input size")?;
    let output = size(&a.output_size, "output size")?;
    Ok(Value::Collective(Rc::new(CollectiveVal {
        name: "test",
        num_ranks: n,
        chunk_factor: 1,
        inplace: false,
        input_chunks: input,
        output_chunks: output,
    })))
}

/// A collective's number of ranks.
fn ranks(ev: &Evaluator<'_>, arg: &Arg<i64>) -> Res<u32> {
    ev.count(
        arg.span,
        "the number of ranks",
        &Value::Int(arg.value),
        MAX_RANKS,
    )
}

/// A message size as the plan writes it: the int's 64 bits (a negative
/// one is written as its bit pattern, past 2^63).
fn message_size(v: &Value) -> i128 {
    v.wide_int().unwrap_or(0)
}
