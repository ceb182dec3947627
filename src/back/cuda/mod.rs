//! The CUDA back end: specialized source for one plan.
//!
//! Every thread block of the plan is written as straight-line code, each op
//! one call of a small device routine of the prelude (prelude.cu). The
//! numbers of the code (ranks, chunk offsets and counts, synchronization
//! words, group and pipeline parameters) are not written into it: each is
//! read from the block's row of a parameter table, `P[k]`. Blocks whose
//! code is then the same text share one function, a *shape*: a plan's
//! hundreds of blocks have a handful of shapes, so NVRTC compiles a few
//! functions instead of hundreds. Op kinds, arities and element types stay
//! compiled in; nothing of the plan is interpreted at run time.
//!
//! The kernels emulate all ranks on one GPU (SEMANTICS.md §12 lists what a
//! generator must keep): one grid holds the blocks of every rank; memory
//! channels are plain pointers into the peer's buffers, port channel
//! transfers are done by the block itself (so `flush` has nothing left to
//! wait for), a switch channel's multicast loads and stores visit every
//! member's buffer, and counters and semaphores are words of one device
//! array. Where the executor diverges from the intent (`[BUG]` in
//! SEMANTICS.md), the code follows the intent, as the simulator does: `get`
//! copies remote to local at their own offsets, fused puts read each source
//! from its own buffer, the double-scratch half applies to every scratch
//! access, and reductions use the op's `reduce_op` (min, max) where the
//! executor always sums.

mod block;
mod layout;
pub mod report;
mod target;

use block::BlockWriter;
pub use layout::SyncLayout;
pub use target::{arch_supports, dtype_define};

use crate::diag::Diagnostic;
use crate::ir::{ChannelPairs, Plan};
use std::collections::HashMap;
use std::fmt::Write;

/// The library every generated file starts with.
pub const PRELUDE: &str = include_str!("prelude.cu");

/// The kernel every generated file defines.
pub const KERNEL: &str = "msclc_kernel";

type Res<T> = Result<T, Diagnostic>;

/// The CUDA source of `plan`.
pub fn generate(plan: &Plan) -> Res<String> {
    debug_assert!(plan.instances_made, "only the JSON writer makes instances");
    let layout = SyncLayout::new(plan);
    let pairs = ChannelPairs::new(plan);
    let mut shapes = Shapes::default();
    let mut blocks = Vec::new();
    for (r, rank) in plan.ranks.iter().enumerate() {
        for (t, tb) in rank.threadblocks.iter().enumerate() {
            let mut w = BlockWriter::new(&layout, &pairs, r as u32, rank, tb);
            for (i, op) in tb.ops.iter().enumerate() {
                w.op(op, i, None, 1)
                    .map_err(|d| d.with_note(format!("at gpus[{r}].threadblocks[{t}].ops[{i}]")))?;
            }
            let (code, params) = w.finish();
            let shape = shapes.intern(code);
            blocks.push((shape, params));
        }
    }
    let mut out = String::with_capacity(PRELUDE.len() + 64 * 1024);
    let largest = blocks.iter().flat_map(|(_, p)| p).copied().max();
    header(
        &mut out,
        plan,
        &layout,
        shapes.code.len(),
        param_type(largest.unwrap_or(0)),
    );
    out.push_str(PRELUDE);
    for (i, code) in shapes.code.iter().enumerate() {
        let users = blocks.iter().filter(|(s, _)| *s == i).count();
        let _ = writeln!(
            out,
            "\n// shape {i}: {users} thread block(s)\nMSCL_SHAPE void mscl_shape{i}(const MsclArgs& a, mscl_row P) {{\n  const u64 B = a.chunk;\n  (void)B;\n  (void)P;\n{code}}}"
        );
    }
    tables(&mut out, &blocks);
    entry_point(&mut out, shapes.code.len());
    Ok(out)
}

/// The distinct block codes, in order of first use.
#[derive(Default)]
struct Shapes {
    code: Vec<String>,
    ids: HashMap<String, usize>,
}

impl Shapes {
    fn intern(&mut self, code: String) -> usize {
        if let Some(id) = self.ids.get(&code) {
            return *id;
        }
        let id = self.code.len();
        self.code.push(code.clone());
        self.ids.insert(code, id);
        id
    }
}

/// User text inside a `//` comment of the generated source: printable
/// ASCII only, everything else escaped, so that no name can end the
/// comment, continue it onto the next line or inject a directive.
fn comment_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            ' '..='~' => out.push(c),
            _ => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
        }
    }
    out
}

/// The narrowest unsigned type of the prelude that holds `largest`: the
/// parameter table's entries (`mscl_row` says why).
fn param_type(largest: u64) -> &'static str {
    if largest <= u64::from(u16::MAX) {
        "u16"
    } else if largest <= u64::from(u32::MAX) {
        "u32"
    } else {
        "u64"
    }
}

fn header(out: &mut String, p: &Plan, layout: &SyncLayout, shapes: usize, param: &str) {
    let blocks: usize = p.ranks.iter().map(|r| r.threadblocks.len()).sum();
    let _ = writeln!(
        out,
        "// Generated by msclc from plan \"{}\": {} over {} ranks, protocol {}, one GPU;\n\
         // {blocks} thread blocks of {shapes} shape(s).\n\
         // Do not edit: regenerate with `msclc FILE --emit cuda`.\n\
         #define MSCL_NRANKS {}\n#define MSCL_NBLOCKS {blocks}\n#define MSCL_NTHREADS {}\n\
         #define MSCL_SYNC_WORDS {}\n#define MSCL_REPORT {}\n#define MSCL_ALIGN {}ull\n#define MSCL_PARAM {param}\n",
        comment_text(&p.name),
        p.collective.name,
        p.ranks.len(),
        p.options.protocol.name(),
        p.ranks.len(),
        p.options.num_threads_per_block,
        layout.words,
        layout.report,
        p.options.buffer_alignment,
    );
}

/// Per grid block: its shape and where its parameters start, then all
/// parameters, row after row.
fn tables(out: &mut String, blocks: &[(usize, Vec<u64>)]) {
    let list = |out: &mut String, values: &mut dyn Iterator<Item = u64>| {
        let mut values = values.peekable();
        if values.peek().is_none() {
            // C++ has no empty arrays (a plan without blocks, or parameters).
            out.push_str("\n  0,\n};\n");
            return;
        }
        for (i, v) in values.enumerate() {
            out.push_str(if i % 16 == 0 { "\n  " } else { " " });
            let _ = write!(out, "{v},");
        }
        out.push_str("\n};\n");
    };
    out.push_str("\n// ---- per block: shape, first parameter; then the parameters ----\n");
    out.push_str("\nMSCL_TABLE u32 mscl_block_shape[] = {");
    list(out, &mut blocks.iter().map(|(s, _)| *s as u64));
    out.push_str("MSCL_TABLE u32 mscl_block_params[] = {");
    let mut start = 0;
    list(
        out,
        &mut blocks.iter().map(|(_, p)| {
            let at = start;
            start += p.len() as u64;
            at
        }),
    );
    out.push_str("MSCL_TABLE mscl_param mscl_params[] = {");
    list(out, &mut blocks.iter().flat_map(|(_, p)| p.iter().copied()));
}

fn entry_point(out: &mut String, shapes: usize) {
    out.push_str(
        "\n// ---- entry point: block b of the grid runs the b-th block of the plan ----\n\n\
         #ifndef MSCL_HOST\nstatic __device__\n#endif\nvoid mscl_run_block(const MsclArgs& a, u32 block) {\n  const mscl_row P = {mscl_params + mscl_block_params[block]};\n  switch (mscl_block_shape[block]) {\n",
    );
    for s in 0..shapes {
        let _ = writeln!(out, "    case {s}: mscl_shape{s}(a, P); break;");
    }
    let _ = write!(
        out,
        "  }}\n}}\n\n#ifndef MSCL_HOST\nextern \"C\" __global__ void __launch_bounds__(MSCL_NTHREADS) {KERNEL}(MsclArgs a) {{\n  mscl_run_block(a, blockIdx.x);\n}}\n#endif\n"
    );
}

#[cfg(test)]
mod tests {
    use super::comment_text;

    #[test]
    fn user_text_cannot_leave_its_comment() {
        assert_eq!(comment_text("allreduce_8"), "allreduce_8");
        assert_eq!(comment_text("a\n#error boom"), "a\\u{a}#error boom");
        assert_eq!(comment_text("end\\"), "end\\\\");
        assert_eq!(comment_text("\u{0}é"), "\\u{0}\\u{e9}");
    }
}
