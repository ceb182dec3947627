//! The results table, in the form nccl-tests prints (its `writeResultHeader`
//! and row formats), with two columns more: the time of a device-to-device
//! copy of the same bytes and how close the kernel comes to it.

use super::RunOptions;
use crate::ir::Plan;
use crate::measure::columns::{column_names, column_units, columns, redop};
use crate::measure::workload::Workload;
use crate::units::{float_str, g_str};
use std::io::Write;

/// What one size measured.
pub struct Row {
    pub seconds: f64,
    pub copy_seconds: f64,
    /// Wrong elements over all ranks; `None` when nothing defines the result.
    pub wrong: Option<u64>,
    /// The first few wrong elements: rank, and element of its output.
    pub first_wrong: Vec<(u32, u64)>,
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
                "# msclc run: plan {} ({}, {}), type {}, warmup iters: {} iters: {}",
                crate::diag::escaped(&plan.name),
                c.name,
                crate::units::count(plan.ranks.len() as u64, "rank"),
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
            redop: redop(plan),
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
        if !row.first_wrong.is_empty() {
            let at: Vec<String> = row
                .first_wrong
                .iter()
                .map(|(rank, e)| format!("rank {rank} output element {e}"))
                .collect();
            let _ = writeln!(out, "#   wrong: {}", at.join(", "));
        }
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
