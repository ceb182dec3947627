//! `msclc sim --timing`: the predicted table, in the form nccl-tests prints
//! (its columns and bus-bandwidth factors, as `msclc run` prints measured
//! ones), and under it each size's critical path in a few lines.

use super::critical::{critical_path, CriticalPath};
use super::engine::{time, Prepared, Times};
use super::topology::Topology;
use crate::ir::{Dtype, Plan};
use crate::measure::columns as table;
use crate::measure::workload::Workload;
use crate::units::float_str;
use std::fmt::Write;

/// One message size's prediction.
pub struct Predicted<'p> {
    /// The size, count and chunk size it is for.
    pub workload: Workload<'p>,
    pub algbw: f64,
    pub busbw: f64,
    pub critical: CriticalPath,
    /// Its time per launch: the last block's end, microseconds from the
    /// launch, or the launch interval where the host issues no faster.
    pub end_us: f64,
    /// The last block's end, where the launch interval is longer.
    issue_bound: Option<f64>,
    /// Which of the timed executions it is from (`super::Executions`).
    pub execution: usize,
    /// The critical path's runs of ops on one block. (The times of every
    /// op are not kept: a size's take 40 bytes an op, and the sizes are
    /// many.)
    segments: Vec<Segment>,
}

/// A size the plan cannot run at, and why.
pub struct Skipped {
    pub size: u64,
    pub why: String,
}

/// Predicts each of `sizes` on the execution `prep`, the `execution`-th
/// of those timed.
pub fn predict<'p>(
    plan: &'p Plan,
    prep: &Prepared,
    execution: usize,
    top: &Topology,
    dtype: Dtype,
    sizes: &[u64],
) -> Vec<Result<Predicted<'p>, Skipped>> {
    // Sizes are timed apart from each other: on as many threads as there
    // are cores, each taking the next size left.
    crate::parallel::map(sizes, crate::parallel::cores(), |&size| {
        predict_size(plan, prep, top, dtype, size).map(|mut p| {
            p.execution = execution;
            p
        })
    })
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
    let segments = segments(prep, &times, &critical.events);
    // Launches issued one by one come no closer than the host issues them.
    let end_us = times.end_us.max(top.latency.launch_interval);
    let seconds = end_us * 1e-6;
    let algbw = w.size() as f64 / 1e9 / seconds;
    Ok(Predicted {
        algbw,
        busbw: algbw * w.bus_factor(),
        critical,
        end_us,
        issue_bound: (end_us > times.end_us).then_some(times.end_us),
        execution: 0,
        segments,
        workload: w,
    })
}

/// The table and the critical paths, as `msclc sim --timing` prints them.
pub fn render(
    plan: &Plan,
    preps: &[Prepared],
    top: &Topology,
    dtype: Dtype,
    rows: &[Result<Predicted, Skipped>],
    explain: Option<u64>,
) -> String {
    let mut out = String::new();
    let c = &plan.collective;
    let _ = writeln!(
        out,
        "# predicted on {} ({}): plan {} ({}, {}), type {}",
        top.name,
        describe(top, plan.ranks.len() as u32),
        plan.name,
        c.name,
        crate::units::count(plan.ranks.len() as u64, "rank"),
        dtype.nccl_name()
    );
    if let Some(note) = ports_within_a_node(plan, top) {
        let _ = writeln!(out, "# {note}");
    }
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
                let line = table::columns(w, table::redop(plan), p.end_us, p.algbw, p.busbw);
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
    let _ = writeln!(
        out,
        "# {:<20} : {}",
        "Avg bus bandwidth",
        crate::units::g_str(avg)
    );
    let _ = writeln!(out, "#");
    match explain {
        None => {
            let _ = writeln!(out, "# where a size's time goes: --explain SIZE");
        }
        Some(size) => match rows
            .iter()
            .flatten()
            .filter(|p| p.workload.size() <= size)
            .max_by_key(|p| p.workload.size())
        {
            Some(p) => out.push_str(&critical_lines(&preps[p.execution], p)),
            None => {
                let smallest = rows.iter().flatten().map(|p| p.workload.size()).min();
                let _ = match smallest {
                    Some(least) => writeln!(
                        out,
                        "# --explain {size}: no row of the table at or below {size} B; the smallest is {least} B (--explain {least})"
                    ),
                    None => writeln!(out, "# --explain {size}: the table has no row to explain"),
                };
            }
        },
    }
    out
}

/// Characters a line of a critical path takes at most: a terminal's.
const LINE: usize = 120;

/// `line` cut to [`LINE`] characters, an ellipsis saying where.
fn fit(line: String) -> String {
    if line.chars().count() <= LINE {
        return line;
    }
    let mut cut: String = line.chars().take(LINE - 1).collect();
    cut.push('…');
    cut
}

/// The machine `ranks` ranks run on, for the header: how many GPUs a node
/// has, and how many nodes the ranks fill (`8 GPUs per node, NVLS, 1 node`).
fn describe(top: &Topology, ranks: u32) -> String {
    if top.one_gpu {
        return "every rank on one GPU".to_string();
    }
    let nvls = if top.nvls { ", NVLS" } else { "" };
    let nodes = ranks.div_ceil(top.gpus_per_node.max(1)).max(1);
    format!(
        "{} GPUs per node{nvls}, {}",
        top.gpus_per_node,
        crate::units::count(nodes.into(), "node")
    )
}

/// A note where a program written for several nodes is timed on one: its
/// port channels reach the peers its memory channels do not (the mark of
/// a hierarchical program: NVLink within a node, the network across), and
/// every one joins ranks of one node of the topology, so it is timed over
/// NVLink (a topology's `gpus_per_node` says where the nodes divide). A
/// program of port channels alone, or over the same pairs as its memory
/// channels, uses them on purpose.
fn ports_within_a_node(plan: &Plan, top: &Topology) -> Option<String> {
    let pairs = |peers: fn(&crate::ir::RankPlan) -> &Vec<u32>| {
        let mut pairs: Vec<(u32, u32)> = (plan.ranks.iter().enumerate())
            .flat_map(|(rank, r)| peers(r).iter().map(move |&peer| (rank as u32, peer)))
            .collect();
        pairs.sort_unstable();
        pairs.dedup();
        pairs
    };
    let (ports, memory) = (pairs(|r| &r.port_peers), pairs(|r| &r.memory_peers));
    let within = |&(from, to): &(u32, u32)| top.link(from, to) != super::topology::Link::Network;
    let hierarchical =
        !memory.is_empty() && ports.iter().all(|pair| memory.binary_search(pair).is_err());
    let timed_within = !top.one_gpu && !ports.is_empty() && ports.iter().all(within);
    (hierarchical && timed_within).then(|| {
        format!(
            "every port channel joins two GPUs of one node of {} ({} per node), timed within it: a topology file with \"gpus_per_node\" places the nodes otherwise (docs/timing.md)",
            top.name, top.gpus_per_node
        )
    })
}

/// Segments of the path shown at most, the longest.
const SEGMENTS_SHOWN: usize = 3;

/// One size's critical path: where its time goes, and the blocks whose
/// runs of ops take the most of it.
fn critical_lines(prep: &Prepared, p: &Predicted) -> String {
    let c = &p.critical;
    let mut out = String::new();
    if let Some(ran_us) = p.issue_bound {
        let _ = writeln!(
            out,
            "# at {}: {} us a launch, the launch interval (latency_us.launch_interval): launches issued one by one come no closer; the kernel ends {} us after its launch",
            crate::units::human_bytes(p.workload.size()),
            us(p.end_us),
            us(ran_us)
        );
    }
    // Every part to the hundredth, as the whole: they visibly add up
    // (the table's widths would give 25807.4 = 1.85 + 25802.1 + ...).
    let _ = writeln!(
        out,
        "# critical path at {}: {:.2} us = launch {:.2} + data {:.2} ({}) + sync {:.2} ({}) + in flight {:.2}; blocks waited {:.0}% of their time",
        crate::units::human_bytes(p.workload.size()),
        p.issue_bound.unwrap_or(p.end_us),
        c.launch_us,
        c.data_us,
        crate::units::count(c.data_ops as u64, "op"),
        c.sync_us,
        crate::units::count(c.sync_ops as u64, "op"),
        c.in_flight_us,
        100.0 * c.waiting_share
    );
    let segments = &p.segments;
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
        // The times first: a long list of names is what gets cut.
        let line = format!(
            "#   rank {rank} tb {tb} {ops} ({}-{} us): {}",
            us(s.start),
            us(s.end),
            s.names
        );
        let _ = writeln!(out, "{}", fit(line));
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

/// `put x2, signal`: runs of the same name counted. Past
/// [`RUNS_SHOWN`] runs, each name once with its count, in the order the
/// names first come (`1999999 ops: copy x1000000, nop x999999`): a line
/// per segment, however long the segment.
fn counted(names: &[&str]) -> String {
    let mut runs: Vec<(&str, usize)> = Vec::new();
    for &name in names {
        match runs.last_mut() {
            Some((last, n)) if *last == name => *n += 1,
            _ => runs.push((name, 1)),
        }
    }
    let show = |(name, n): &(&str, usize)| {
        if *n > 1 {
            format!("{name} x{n}")
        } else {
            name.to_string()
        }
    };
    if runs.len() <= RUNS_SHOWN {
        return runs.iter().map(show).collect::<Vec<_>>().join(", ");
    }
    let mut totals: Vec<(&str, usize)> = Vec::new();
    for (name, n) in runs {
        match totals.iter_mut().find(|(t, _)| *t == name) {
            Some((_, total)) => *total += n,
            None => totals.push((name, n)),
        }
    }
    let listed: Vec<String> = totals.iter().map(show).collect();
    format!("{} ops: {}", names.len(), listed.join(", "))
}

/// Runs of names a critical-path line lists one by one.
const RUNS_SHOWN: usize = 12;

fn us(x: f64) -> String {
    float_str(x, 7)
}
