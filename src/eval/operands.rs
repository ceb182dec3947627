//! The arguments of ops and calls, read and checked: ranks, thread blocks
//! (`tb` or `tb_group`), the chunks an op pairs, the members of a switch
//! channel. Both the builtin calls (calls.rs) and the ops (ops.rs) use
//! them.

use super::args::{Arg, Items};
use super::value::*;
use super::{Evaluator, Res};
use crate::diag::{Code, Diagnostic, Span};
use crate::ir::*;
use std::rc::Rc;

/// The thread block arguments of an op: `tb` alone, or `tb` or `tb_group`
/// (exactly one of them).
pub(super) enum Blocks<'a> {
    One(&'a Arg<i64>),
    OneOrGroup(&'a Arg<Option<i64>>, &'a Arg<Option<Rc<Vec<u32>>>>),
}

/// An end of a channel: the rank that owns it (and runs its ops), or its
/// peer.
#[derive(Debug, Clone, Copy)]
pub(super) enum End {
    Source,
    Peer,
}

impl Evaluator<'_> {
    /// An integer argument in `0..limit` (`u32::MAX`: any that is not negative).
    #[inline]
    pub(super) fn int_in(&self, arg: &Arg<i64>, what: &str, limit: u32) -> Res<u32> {
        let v = arg.value;
        if v < 0 || v >= limit as i64 {
            return Err(self.out_of_range(arg, what, limit));
        }
        Ok(v as u32)
    }

    /// The error of `arg`, a `what` outside `0..limit`: apart from the
    /// check, which every op makes of its thread block.
    #[cold]
    #[inline(never)]
    fn out_of_range(&self, arg: &Arg<i64>, what: &str, limit: u32) -> Diagnostic {
        let v = arg.value;
        // Said of the side the value is out on.
        let bound = if v < 0 {
            String::from("must not be negative")
        } else {
            format!("must be below {limit}")
        };
        self.error(
            Code::OutOfRange,
            arg.span,
            format!("{what} {v} out of range"),
            format!("{what} {bound}"),
        )
    }

    /// A rank of the program.
    pub(super) fn rank_in(&mut self, call: Span, arg: &Arg<i64>, what: &str) -> Res<u32> {
        let n = self.recorder_mut(call)?.num_ranks();
        self.int_in(arg, what, n)
    }

    /// A thread block id.
    pub(super) fn tb_in(&self, arg: &Arg<i64>) -> Res<u32> {
        self.int_in(arg, "thread block", MAX_THREAD_BLOCKS)
    }

    /// A list of thread block ids (of a group or a barrier), each in range
    /// and once, at least one; `twice` says why once (a help note).
    pub(super) fn tb_ids(&self, arg: &Arg<Items<i64>>, what: &str, twice: &str) -> Res<Vec<u32>> {
        if arg.value.is_empty() {
            return Err(self.error(
                Code::ThreadBlock,
                arg.span,
                format!("{what} needs at least one thread block"),
                "empty list",
            ));
        }
        let mut out = Vec::with_capacity(arg.value.len());
        for &t in &arg.value {
            if t < 0 || t >= MAX_THREAD_BLOCKS as i64 {
                let bound = match t < 0 {
                    true => String::from("must not be negative"),
                    false => format!("must be below {MAX_THREAD_BLOCKS}"),
                };
                return Err(self.error(
                    Code::OutOfRange,
                    arg.span,
                    format!("thread block {t} out of range"),
                    format!("thread block {bound}"),
                ));
            }
            out.push(t as u32);
        }
        let mut seen = std::collections::HashSet::with_capacity(out.len());
        if let Some(again) = out.iter().find(|t| !seen.insert(**t)) {
            return Err(self
                .error(
                    Code::ThreadBlock,
                    arg.span,
                    format!("thread block {again} listed twice in {what}"),
                    "each thread block once",
                )
                .with_note(format!("help: list each thread block once: {twice}")));
        }
        Ok(out)
    }

    /// The thread blocks an op runs on, each with its group info.
    pub(super) fn blocks(&self, call: Span, blocks: Blocks<'_>) -> Res<OpBlocks> {
        let (tb, group) = match blocks {
            Blocks::One(tb) => return Ok(smallvec::smallvec![(self.tb_in(tb)?, None)]),
            Blocks::OneOrGroup(tb, group) => (tb, group),
        };
        match (tb.value, &group.value) {
            (None, Some(tbs)) => Ok(tbs
                .iter()
                .enumerate()
                .map(|(k, t)| {
                    let info = TbgInfo {
                        tb_id: k as u32,
                        size: tbs.len() as u32,
                    };
                    (*t, Some(info))
                })
                .collect()),
            (None, None) => Err(self.error(
                Code::ThreadBlock,
                call,
                "no thread block given",
                "give `tb: N` or `tb_group: G`",
            )),
            (Some(t), None) => {
                let one = Arg {
                    value: t,
                    span: tb.span,
                };
                Ok(smallvec::smallvec![(self.tb_in(&one)?, None)])
            }
            (Some(_), Some(_)) => Err(self
                .error(
                    Code::ThreadBlock,
                    group.span,
                    "both `tb` and `tb_group` given",
                    "give only one of them",
                )
                .with_secondary(tb.span, "`tb` given here")),
        }
    }

    /// `chunk` (given at `at`) must be on `rank`.
    #[inline]
    pub(super) fn expect_rank(&self, at: Span, chunk: Chunk, rank: u32, role: &str) -> Res<()> {
        if chunk.rank != rank {
            return Err(self.wrong_rank(at, chunk, rank, role));
        }
        Ok(())
    }

    /// The error of `chunk`, given at `at` as `role`, which is not on `rank`.
    #[cold]
    #[inline(never)]
    fn wrong_rank(&self, at: Span, chunk: Chunk, rank: u32, role: &str) -> Diagnostic {
        self.error(
            Code::WrongPlace,
            at,
            format!(
                "{role} is on rank {}, but must be on rank {rank}",
                chunk.rank
            ),
            format!("a chunk of rank {}", chunk.rank),
        )
    }

    /// `chunk` (given at `at`) must be on `end` of channel `c`, a channel
    /// of `kind`. Where it is on the other end, the channel most likely
    /// runs the other way from the one meant: the constructors take the
    /// destination first (`memory_channel(dst, src)`, as the DSL's
    /// `MemoryChannel(dst_rank, src_rank)`), and the note says so.
    #[inline]
    pub(super) fn expect_end(
        &self,
        at: Span,
        chunk: Chunk,
        (c, kind): (ChannelVal, ChannelKind),
        end: End,
        role: &str,
    ) -> Res<()> {
        let (rank, other) = match end {
            End::Source => (c.src, c.dst),
            End::Peer => (c.dst, c.src),
        };
        if chunk.rank == rank {
            return Ok(());
        }
        let wrong = self.wrong_rank(at, chunk, rank, role);
        if chunk.rank != other {
            return Err(wrong);
        }
        let make = format!("{}_channel", kind.name());
        Err(wrong.with_note(format!(
            "this channel runs from rank {src} to rank {dst} (`{make}(dst, src)` takes the destination first): for one from rank {dst} to rank {src}, write `{make}({src}, {dst})`",
            src = c.src,
            dst = c.dst,
        )))
    }

    /// `b` (given at `at`) must be as large as `a`.
    #[inline]
    pub(super) fn expect_same_size(&self, at: Span, a: Chunk, b: Chunk) -> Res<()> {
        if a.size != b.size {
            return Err(self.sizes_differ(at, a, b));
        }
        Ok(())
    }

    /// The error of `b` (given at `at`), whose size is not `a`'s.
    #[cold]
    #[inline(never)]
    fn sizes_differ(&self, at: Span, a: Chunk, b: Chunk) -> Diagnostic {
        self.error(
            Code::ChunkSizes,
            at,
            format!("chunk sizes differ: {} and {}", a.size, b.size),
            format!("this chunk has {} chunk(s)", b.size),
        )
        .with_note("both sides of a transfer or reduction must have the same size")
    }

    /// `c` (given at `at`) must be in a scratch buffer.
    pub(super) fn expect_scratch(&self, at: Span, c: Chunk, what: &str) -> Res<()> {
        if c.kind != BufferKind::Scratch {
            return Err(self
                .error(
                    Code::WrongPlace,
                    at,
                    format!("{what} must be in a scratch buffer"),
                    format!("this chunk is in the {} buffer", c.kind.name()),
                )
                .with_note(
                    "packets (LL) carry flags next to the data and only fit in scratch buffers",
                ));
        }
        Ok(())
    }

    /// The rank `arg`, which must belong to switch channel `s`.
    pub(super) fn switch_member(&self, arg: &Arg<i64>, s: &SwitchVal) -> Res<u32> {
        let r = arg.value;
        match u32::try_from(r).ok().filter(|r| s.id_on(*r).is_some()) {
            Some(r) => Ok(r),
            None => Err(self.error(
                Code::WrongPlace,
                arg.span,
                format!("rank {r} is not in this switch channel"),
                format!(
                    "its ranks are {}",
                    crate::diag::short_list(&s.ranks, "ranks")
                ),
            )),
        }
    }

    /// The recorder, told the loop values first if they changed since it
    /// last recorded (ops and channels keep them for reports): a frame for
    /// each loop variable that has none yet, within the frame of the one
    /// around it. One small push per loop iteration that records, no text.
    pub(super) fn rec(&mut self) -> &mut super::record::Recorder {
        let changed = std::mem::take(&mut self.loop_values_changed);
        let rec = self
            .recorder
            .as_mut()
            .expect("builtins that record run after the program block");
        if changed {
            let mut parent = 0;
            for (name, value, frame) in &mut self.loop_vars {
                if *frame == NO_FRAME {
                    *frame = rec.loop_frame(parent, name, value);
                }
                parent = *frame;
            }
            rec.set_loop_context(parent);
        }
        rec
    }

    /// Records `op` on block `tb` of `rank`: fused into the op before it
    /// where the two fuse (most ops of a loop over peers), with no loop
    /// values made for it (it keeps that op's), else added with them.
    pub(super) fn record_op(&mut self, rank: u32, tb: u32, op: Op) {
        if !self.rec_no_frame().fuse_op(rank, tb, &op) {
            self.rec().add_op(rank, tb, op);
        }
    }

    /// The recorder, not told the loop values: for what keeps none, a
    /// channel's or remote buffer's place in a block's table, and an op
    /// fused into the one before it, which keeps that op's. Of the frames
    /// `rec` would make for them, the next iteration's would take the
    /// innermost's place, and the loops' and calls' around it would stay
    /// in the plan, kept for nothing.
    pub(super) fn rec_no_frame(&mut self) -> &mut super::record::Recorder {
        self.recorder
            .as_mut()
            .expect("builtins that record run after the program block")
    }
}

/// The thread blocks of one op, each with its group info: most ops have one.
pub(super) type OpBlocks = smallvec::SmallVec<[(u32, Option<TbgInfo>); 1]>;

/// A loop variable not given a frame yet.
pub(super) const NO_FRAME: u32 = u32::MAX;
