//! The columns every nccl-tests table has, as `msclc run` (measured) and
//! `msclc sim --timing` (predicted) print them.

use super::workload::Workload;
use crate::units::float_str;

/// The columns every nccl-tests table has, for one size: size, count,
/// type, redop, root, time, algbw, busbw.
pub fn columns(w: &Workload, redop: &str, time_us: f64, algbw: f64, busbw: f64) -> String {
    format!(
        "{:>12}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}",
        w.size(),
        w.count(),
        w.dtype.nccl_name(),
        redop,
        -1,
        float_str(time_us, 7),
        float_str(algbw, 6),
        float_str(busbw, 6)
    )
}

/// The names of `columns`, aligned to them (after a `# `).
pub fn column_names() -> String {
    format!(
        "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}",
        "size", "count", "type", "redop", "root", "time", "algbw", "busbw"
    )
}

/// The units of `columns`, aligned to them.
pub fn column_units() -> String {
    format!(
        "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}",
        "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)"
    )
}

/// The redop column of a plan: its reduction (sum, min, max) for the
/// collectives that reduce, as nccl-tests prints it; `none` for the rest.
pub fn redop(plan: &crate::ir::Plan) -> &'static str {
    if matches!(plan.collective.name, "allreduce" | "reducescatter") {
        plan.reduce_op().name()
    } else {
        "none"
    }
}
