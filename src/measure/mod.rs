//! A collective measured as nccl-tests measures it: the workload at one
//! message size (bytes, elements, chunks, each rank's buffers and data),
//! and the table's columns. `msclc run` prints measurements in it, `msclc
//! sim --timing` predictions.

pub mod columns;
pub mod workload;

use crate::diag::{Code, Diagnostic};
use crate::ir::Plan;

/// E0808: no size of `--size MIN:MAX` runs the plan, the largest tried,
/// `size`, for the reason `why` (the smaller ones for the same or a like
/// one).
pub fn no_size_runs(min: u64, max: u64, size: u64, why: &str) -> Diagnostic {
    // One size given (`--size 1000`) is said as given.
    let message = if min == max {
        format!("--size {} does not run this plan: {why}", size_option(min))
    } else {
        format!(
            "no size of --size {}:{} runs this plan: at {size} B, {why}",
            size_option(min),
            size_option(max)
        )
    };
    Diagnostic::plain(Code::NoSize, message)
}

/// A byte count as `--size` takes it (`2G`): as `short_bytes` writes it,
/// but in G where that would be T, which `--size` does not read.
fn size_option(bytes: u64) -> String {
    match crate::units::short_bytes(bytes) {
        terabytes if terabytes.ends_with('T') => format!("{}G", bytes >> 30),
        short => short,
    }
}

/// The message sizes of a `--size MIN:MAX` range: from MIN (at least one
/// byte) doubling up to MAX, as nccl-tests' `-b MIN -e MAX -f 2`; the
/// first alone for a plan of synchronization only, which is the same at
/// every size.
pub fn sizes(plan: &Plan, min: u64, max: u64) -> impl Iterator<Item = u64> {
    let count = if plan.moves_data() { usize::MAX } else { 1 };
    std::iter::successors(Some(min.max(1)), |s| s.checked_mul(2))
        .take_while(move |&s| s <= max)
        .take(count)
}
