//! The results table, in the form nccl-tests prints (its `writeResultHeader`
//! and row formats), with two columns more: the time of a device-to-device
//! copy of the same bytes and how close the kernel comes to it.

use super::workload::Workload;
use super::RunOptions;
use crate::ir::Plan;
use std::io::Write;

/// What one size measured.
pub struct Row {
    pub seconds: f64,
    pub copy_seconds: f64,
    /// Wrong elements over all ranks; `None` when nothing defines the result.
    pub wrong: Option<u64>,
}

pub struct Table {
    intro: Vec<String>,
    placement: &'static str,
    redop: &'static str,
    bus_bandwidths: Vec<f64>,
    wrong: u64,
}

impl Table {
    pub fn new(plan: &Plan, opts: &RunOptions, mode: &str) -> Table {
        let c = &plan.collective;
        let intro = vec![
            format!(
                "# msclc run: plan {} ({}, {} ranks), type {}, warmup iters: {} iters: {}",
                crate::diag::escaped(&plan.name),
                c.name,
                plan.ranks.len(),
                opts.dtype.nccl_name(),
                opts.warmup,
                opts.iters
            ),
            format!("# mode: {mode}"),
        ];
        Table {
            intro,
            placement: if c.inplace {
                "in-place"
            } else {
                "out-of-place"
            },
            redop: redop(c.name),
            bus_bandwidths: Vec::new(),
            wrong: 0,
        }
    }

    pub fn header(&self, out: &mut dyn Write) {
        for line in &self.intro {
            let _ = writeln!(out, "{line}");
        }
        let _ = writeln!(out, "#");
        let _ = writeln!(
            out,
            "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>31}  {:>16}",
            "", "", "", "", "", self.placement, "d2d copy"
        );
        let _ = writeln!(
            out,
            "# {}  {:>6}  {:>7}  {:>7}",
            &column_names()[2..],
            "#wrong",
            "time",
            "of d2d"
        );
        let _ = writeln!(
            out,
            "# {}  {:>6}  {:>7}  {:>7}",
            &column_units()[2..],
            "",
            "(us)",
            "(%)"
        );
    }

    pub fn row(&mut self, out: &mut dyn Write, w: &Workload, row: &Row) {
        let algbw = w.size() as f64 / 1e9 / row.seconds;
        let busbw = algbw * w.bus_factor();
        self.bus_bandwidths.push(busbw);
        let wrong = match row.wrong {
            Some(n) => {
                self.wrong += n;
                n.to_string()
            }
            None => "N/A".to_string(),
        };
        let _ = writeln!(
            out,
            "{}  {:>6}  {:>7}  {:>7}",
            columns(w, self.redop, row.seconds * 1e6, algbw, busbw),
            wrong,
            float_str(row.copy_seconds * 1e6, 7),
            float_str(100.0 * row.copy_seconds / row.seconds, 7),
        );
    }

    pub fn skip(&self, out: &mut dyn Write, size: u64, why: &str) {
        let _ = writeln!(out, "# size {size} B skipped: {why}");
    }

    pub fn footer(&self, out: &mut dyn Write, all_right: bool) {
        let avg = if self.bus_bandwidths.is_empty() {
            0.0
        } else {
            self.bus_bandwidths.iter().sum::<f64>() / self.bus_bandwidths.len() as f64
        };
        let verdict = if all_right { "OK" } else { "FAILED" };
        let _ = writeln!(
            out,
            "# {:<20} : {} {verdict}",
            "Out of bounds values", self.wrong
        );
        let _ = writeln!(out, "# {:<20} : {}", "Avg bus bandwidth", g_str(avg));
        let _ = writeln!(out, "#");
    }
}

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

/// The redop column of a collective.
pub fn redop(collective: &str) -> &'static str {
    if matches!(collective, "allreduce" | "reducescatter") {
        "sum"
    } else {
        "none"
    }
}

/// C's `%g`, as nccl-tests prints its average: six significant digits,
/// no trailing zeros.
pub fn g_str(value: f64) -> String {
    if value == 0.0 || !value.is_finite() {
        return format!("{value}");
    }
    let magnitude = value.abs().log10().floor() as i32;
    let decimals = (5 - magnitude).max(0) as usize;
    let text = format!("{value:.decimals$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// nccl-tests' `getFloatStr`: the most decimals that fit `width`.
pub fn float_str(value: f64, width: usize) -> String {
    for s in [
        format!("{value:.2}"),
        format!("{value:.1}"),
        format!("{value:.0}"),
    ] {
        if s.len() <= width {
            return s;
        }
    }
    if width >= 7 {
        format!("{value:.1e}")
    } else {
        format!("{value:.0e}")
    }
}

#[cfg(test)]
mod tests {
    use super::float_str;

    #[test]
    fn numbers_take_the_most_decimals_that_fit() {
        assert_eq!(float_str(25.3149, 7), "25.31");
        assert_eq!(float_str(1024.5, 7), "1024.50");
        assert_eq!(float_str(131.006, 6), "131.01");
        assert_eq!(float_str(12345.6, 6), "12346");
        assert_eq!(float_str(0.0, 6), "0.00");
    }

    #[test]
    fn the_average_prints_as_percent_g() {
        assert_eq!(super::g_str(374.6512), "374.651");
        assert_eq!(super::g_str(62.5), "62.5");
        assert_eq!(super::g_str(0.123456789), "0.123457");
        assert_eq!(super::g_str(0.0), "0");
    }
}
