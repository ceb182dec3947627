//! `msclc sim --timing`: the predicted table, in the form nccl-tests prints
//! (its columns and bus-bandwidth factors, as `msclc run` prints measured
//! ones), and under it each size's critical path in a few lines.

use super::critical::{critical_path, CriticalPath};
use super::engine::{time, Prepared, Times};
use super::topology::Topology;
use crate::ir::{Dtype, Plan};
use crate::runner::table::{self, float_str};
use crate::runner::workload::Workload;
use std::fmt::Write;

/// One message size's prediction.
pub struct Predicted<'p> {
    /// The size, count and chunk size it is for.
    pub workload: Workload<'p>,
    pub algbw: f64,
    pub busbw: f64,
    pub critical: CriticalPath,
    pub times: Times,
}

/// A size the plan cannot run at, and why.
pub struct Skipped {
    pub size: u64,
    pub why: String,
}

/// Predicts every size from `min` doubling to `max`.
pub fn predict<'p>(
    plan: &'p Plan,
    prep: &Prepared,
    top: &Topology,
    dtype: Dtype,
    (min, max): (u64, u64),
) -> Vec<Result<Predicted<'p>, Skipped>> {
    let mut out = Vec::new();
    let mut size = min.max(1);
    while size <= max {
        out.push(predict_size(plan, prep, top, dtype, size));
        size = match size.checked_mul(2) {
            Some(s) => s,
            None => break,
        };
    }
    out
}

fn predict_size<'p>(
    plan: &'p Plan,
    prep: &Prepared,
    top: &Topology,
    dtype: Dtype,
    size: u64,
) -> Result<Predicted<'p>, Skipped> {
    let w = Workload::new(plan, dtype, size, None).map_err(|why| Skipped { size, why })?;
    let times = time(prep, top, w.chunk as f64);
    let critical = critical_path(prep, &times);
    let seconds = times.end_us * 1e-6;
    let algbw = w.size() as f64 / 1e9 / seconds;
    Ok(Predicted {
        algbw,
        busbw: algbw * w.bus_factor(),
        critical,
        times,
        workload: w,
    })
}

/// The table and the critical paths, as `msclc sim --timing` prints them.
pub fn render(
    plan: &Plan,
    prep: &Prepared,
    top: &Topology,
    dtype: Dtype,
    rows: &[Result<Predicted, Skipped>],
) -> String {
    let mut out = String::new();
    let c = &plan.collective;
    let _ = writeln!(
        out,
        "# predicted on {} ({}): plan {} ({}, {} ranks), type {}",
        top.name,
        describe(top),
        plan.name,
        c.name,
        plan.ranks.len(),
        dtype.nccl_name()
    );
    let _ = writeln!(
        out,
        "# a model, not a measurement: docs/timing.md says what it covers and how close it comes"
    );
    let _ = writeln!(out, "#");
    let _ = writeln!(out, "{}", table::column_names());
    let _ = writeln!(out, "{}", table::column_units());
    let mut bus = Vec::new();
    for row in rows {
        match row {
            Ok(p) => {
                bus.push(p.busbw);
                let w = &p.workload;
                let line =
                    table::columns(w, table::redop(c.name), p.times.end_us, p.algbw, p.busbw);
                let _ = writeln!(out, "{line}");
            }
            Err(s) => {
                let _ = writeln!(out, "# size {} B skipped: {}", s.size, s.why);
            }
        }
    }
    let avg = if bus.is_empty() {
        0.0
    } else {
        bus.iter().sum::<f64>() / bus.len() as f64
    };
    let _ = writeln!(out, "# {:<20} : {}", "Avg bus bandwidth", table::g_str(avg));
    let _ = writeln!(out, "#");
    for p in rows.iter().flatten() {
        out.push_str(&critical_lines(prep, p));
    }
    out
}

/// `8 GPUs per node, NVLS`, for the header.
fn describe(top: &Topology) -> String {
    if top.one_gpu {
        return "every rank on one GPU".to_string();
    }
    let nvls = if top.nvls { ", NVLS" } else { "" };
    format!("{} GPUs per node{nvls}", top.gpus_per_node)
}

/// Segments of the path shown at most, the longest.
const SEGMENTS_SHOWN: usize = 3;

/// One size's critical path: where its time goes, and the blocks whose
/// runs of ops take the most of it.
fn critical_lines(prep: &Prepared, p: &Predicted) -> String {
    let c = &p.critical;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# critical path at {}: {} us = launch {} + data {} ({} ops) + sync {} ({} ops) + in flight {}; blocks waited {:.0}% of their time",
        super::svg::human_bytes(p.workload.size()),
        us(p.times.end_us),
        us(c.launch_us),
        us(c.data_us),
        c.data_ops,
        us(c.sync_us),
        c.sync_ops,
        us(c.in_flight_us),
        100.0 * c.waiting_share
    );
    let segments = segments(prep, &p.times, &c.events);
    let mut longest: Vec<usize> = (0..segments.len()).collect();
    longest.sort_by(|&a, &b| segments[b].span().total_cmp(&segments[a].span()));
    longest.truncate(SEGMENTS_SHOWN);
    longest.sort_unstable();
    for i in &longest {
        let s = &segments[*i];
        let (rank, tb) = prep.run.threads[s.thread as usize];
        let ops = if s.first == s.last {
            format!("op {}", s.first)
        } else {
            format!("ops {}-{}", s.first, s.last)
        };
        let _ = writeln!(
            out,
            "#   rank {rank} tb {tb} {ops}: {} ({}-{} us)",
            s.names,
            us(s.start),
            us(s.end)
        );
    }
    if segments.len() > longest.len() {
        let _ = writeln!(
            out,
            "#   and {} shorter runs on {} blocks",
            segments.len() - longest.len(),
            {
                let mut blocks: Vec<u32> = segments.iter().map(|s| s.thread).collect();
                blocks.sort_unstable();
                blocks.dedup();
                blocks.len()
            }
        );
    }
    out
}

/// Consecutive ops of the path on one block.
struct Segment {
    thread: u32,
    first: u32,
    last: u32,
    start: f64,
    end: f64,
    /// `put x2, signal`.
    names: String,
}

impl Segment {
    fn span(&self) -> f64 {
        self.end - self.start
    }
}

fn segments(prep: &Prepared, times: &Times, path: &[u32]) -> Vec<Segment> {
    let mut out: Vec<(Segment, Vec<&str>)> = Vec::new();
    for &e in path {
        let event = &prep.run.events[e as usize];
        let name = event.op.name.json();
        match out.last_mut() {
            Some((s, names)) if s.thread == event.thread => {
                s.last = event.position;
                s.end = times.ended[e as usize];
                names.push(name);
            }
            _ => out.push((
                Segment {
                    thread: event.thread,
                    first: event.position,
                    last: event.position,
                    start: times.started[e as usize],
                    end: times.ended[e as usize],
                    names: String::new(),
                },
                vec![name],
            )),
        }
    }
    out.into_iter()
        .map(|(mut s, names)| {
            s.names = counted(&names);
            s
        })
        .collect()
}

/// `put x2, signal`: runs of the same name counted.
fn counted(names: &[&str]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < names.len() {
        let mut j = i;
        while j < names.len() && names[j] == names[i] {
            j += 1;
        }
        parts.push(if j - i > 1 {
            format!("{} x{}", names[i], j - i)
        } else {
            names[i].to_string()
        });
        i = j;
    }
    parts.join(", ")
}

fn us(x: f64) -> String {
    float_str(x, 7)
}
