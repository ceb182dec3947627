//! The timing model: how long a plan takes on a topology, predicted from
//! the simulator's execution, before any GPU.
//!
//! Along the pipeline: the simulator keeps what one execution did
//! (`sim::record`); `cost` says what each op costs on a `topology`;
//! `engine` puts times on the execution at one message size; `critical`
//! finds the chain of ops the time goes to; `report` prints the table;
//! `build` makes the `timeline`, which `trace` and `svg` write.

pub mod build;
pub mod cost;
pub mod critical;
pub mod engine;
pub mod report;
pub mod svg;
pub mod timeline;
pub mod topology;
pub mod trace;

pub use timeline::*;

use crate::diag::{Code, Diagnostic};
use crate::sim::Verdict;
use std::path::Path;

/// The topology `--timing` names: a built-in, or a JSON file.
pub fn load_topology(spec: &str) -> Result<topology::Topology, Diagnostic> {
    if let Some(t) = topology::built_in(spec) {
        return Ok(t);
    }
    let path = Path::new(spec);
    let unusable =
        |why: String| Diagnostic::plain(Code::Topology, format!("--timing {spec}: {why}"));
    if !path.exists() {
        return Err(unusable(format!(
            "no such built-in topology or file (built-ins: {}; a file is JSON, as docs/timing.md shows)",
            topology::BUILT_IN.join(", ")
        )));
    }
    // A topology is a few hundred bytes: a file of more is none, and a
    // device (`/dev/zero`) or a folder is no file. A pipe is read, as a
    // program's is (`--timing <(jq ... topology.json)`). What it is is
    // asked of the path before it is opened: opening a pipe waits for
    // its writer.
    const MOST_TOPOLOGY_BYTES: u64 = 1 << 20;
    let text = std::fs::metadata(path)
        .and_then(|meta| match meta.is_file() || is_pipe(&meta) {
            true => std::fs::File::open(path),
            false => Err(std::io::Error::other("it is not a file")),
        })
        .and_then(|file| crate::files::read_text(file, Some(MOST_TOPOLOGY_BYTES)))
        .map_err(|e| unusable(format!("cannot read it: {e}")))?;
    let name = path
        .file_stem()
        .map_or(spec.to_string(), |s| s.to_string_lossy().into_owned());
    topology::from_json(&name, &text).map_err(unusable)
}

/// Whether `meta` is a pipe's (a FIFO, or `<(...)` of a shell).
fn is_pipe(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::FileTypeExt;
    meta.file_type().is_fifo()
}

/// What `msclc sim --timing` asks.
pub struct Request<'a> {
    pub topology: &'a topology::Topology,
    pub dtype: crate::ir::Dtype,
    /// Sizes double from the first to the second.
    pub sizes: (u64, u64),
    /// How the execution given was simulated: a plan with pipelines is
    /// simulated again so, for the iterations each size runs.
    pub simulated: crate::sim::SimOptions,
    /// Where to write the largest size's timeline as a trace, as a picture.
    pub trace: Option<&'a Path>,
    pub svg: Option<&'a Path>,
    /// The size whose critical path to print (the largest row at or
    /// below it), if any.
    pub explain: Option<u64>,
    /// The program or plan, for titles.
    pub title: &'a str,
}

/// The executions a plan's sizes are timed on. A pipeline runs more
/// iterations the larger the message (the executor's count,
/// `sim::pipeline_iterations`), and its time depends on how many: each
/// set of counts the sizes need is simulated once. A plan without
/// pipelines, or one that deadlocks, is timed on the execution verified.
struct Executions<'p> {
    /// The executions simulated for the timing, when the verified one
    /// does not serve.
    runs: Vec<crate::sim::record::Run<'p>>,
    /// For each of `runs`, why its sizes have no time: it deadlocks, or,
    /// where two iterations verified the plan, races or computes a wrong
    /// result (more iterations may find what two do not).
    problems: Vec<Option<String>>,
    /// Each set of sizes: the execution it is timed on (an index into
    /// `runs`, or `None` for the verified one), and the sizes.
    groups: Vec<(Option<usize>, Vec<u64>)>,
    /// The smallest size whose pipelines run more iterations than are
    /// timed (`sim::iteration_cap`), how many its longest runs, and how
    /// many are timed: past it, the time is under-counted.
    capped: Option<Capped>,
}

/// A size whose pipelines' iterations the timing caps.
struct Capped {
    size: u64,
    iterations: u64,
    timed: u32,
}

impl<'p> Executions<'p> {
    fn new(plan: &'p crate::ir::Plan, verified: &crate::sim::record::Run, req: &Request) -> Self {
        use crate::ir::OpName;
        let sizes: Vec<u64> = crate::measure::sizes(plan, req.sizes.0, req.sizes.1).collect();
        let pipelines: Vec<&crate::ir::Op> = plan
            .ranks
            .iter()
            .flat_map(|r| &r.threadblocks)
            .flat_map(|tb| &tb.ops)
            .filter(|op| op.name == OpName::Pipeline)
            .collect();
        if pipelines.is_empty() || !verified.stuck.is_empty() {
            return Executions {
                runs: Vec::new(),
                problems: Vec::new(),
                groups: vec![(None, sizes)],
                capped: None,
            };
        }
        // Sizes by the iterations each pipeline runs at their chunk size.
        let mut groups: Vec<(Vec<u32>, u64, Vec<u64>)> = Vec::new();
        let mut unrunnable = Vec::new();
        let mut capped = None;
        for size in sizes {
            let Ok(w) = crate::measure::workload::Workload::new(plan, req.dtype, size, None) else {
                unrunnable.push(size);
                continue;
            };
            let cap = crate::sim::iteration_cap(plan, Some(w.chunk));
            let longest = pipelines
                .iter()
                .filter_map(|p| p.iter_context())
                .map(|c| c.iterations(w.chunk))
                .max();
            if let Some(iterations) = longest.filter(|n| *n > u64::from(cap)) {
                capped.get_or_insert(Capped {
                    size,
                    iterations,
                    timed: cap,
                });
            }
            let counts: Vec<u32> = pipelines
                .iter()
                .map(|p| crate::sim::pipeline_iterations(p, Some(w.chunk), cap))
                .collect();
            match groups.iter_mut().find(|g| g.0 == counts) {
                Some(g) => g.2.push(size),
                None => groups.push((counts, w.chunk, vec![size])),
            }
        }
        let (mut runs, mut problems) = (Vec::new(), Vec::new());
        let mut out = vec![(None, unrunnable)];
        for (_, chunk, sizes) in groups {
            let options = crate::sim::SimOptions {
                executions: 1,
                progress: false,
                pipeline_chunk: Some(chunk),
                ..req.simulated
            };
            let (report, run) = crate::sim::simulate_recorded(plan, &options);
            let iterations =
                "its pipelines run as many iterations as at this size (msclc sim verifies two)";
            problems.push(match report.verdict {
                _ if !run.stuck.is_empty() => Some(format!("the plan deadlocks when {iterations}")),
                // (A plan the simulator found wrong is timed as it runs.)
                Verdict::WrongResult(_) | Verdict::Race(_) if verified.verified => Some(format!(
                    "with {iterations}, {}",
                    crate::sim::output::verdict_line(plan, &report)
                )),
                _ => None,
            });
            runs.push(run);
            out.push((Some(runs.len() - 1), sizes));
        }
        Executions {
            runs,
            problems,
            groups: out,
            capped,
        }
    }

    /// How many sizes have a problem of their own run, and the smallest.
    fn sizes_with_problems(&self) -> (usize, Option<u64>) {
        let sizes = self
            .groups
            .iter()
            .filter(|(which, _)| which.is_some_and(|k| self.problems[k].is_some()));
        let sizes: Vec<u64> = sizes.flat_map(|(_, sizes)| sizes.iter().copied()).collect();
        (sizes.len(), sizes.iter().copied().min())
    }
}

/// One size's predicted time, for a program that chooses among plans
/// (`msclc tune`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Predicted {
    pub size: u64,
    pub time_us: f64,
    pub busbw_gbps: f64,
}

/// Each size of `req` predicted, in order, or why the plan cannot run
/// there. A deadlocked run has none.
pub fn predicted_times(
    plan: &crate::ir::Plan,
    run: &crate::sim::record::Run,
    req: &Request,
) -> Vec<Result<Predicted, report::Skipped>> {
    let executions = Executions::new(plan, run, req);
    let (_, rows) = predict_rows(plan, run, &executions, req);
    let deadlocked = !run.stuck.is_empty();
    rows.into_iter()
        .map(|row| {
            let row = match row {
                Ok(p) if deadlocked => Err(report::Skipped {
                    size: p.workload.size(),
                    why: "the plan deadlocks".to_string(),
                }),
                row => row,
            };
            row.map(|p| Predicted {
                size: p.workload.size(),
                time_us: p.end_us,
                busbw_gbps: p.busbw,
            })
        })
        .collect()
}

/// The rows of every size, in order, each timed on its execution; with
/// the prepared executions they came from (`Predicted::execution` is an
/// index into them).
fn predict_rows<'r, 'p>(
    plan: &'p crate::ir::Plan,
    run: &'r crate::sim::record::Run<'p>,
    executions: &'r Executions<'p>,
    req: &Request,
) -> (
    Vec<engine::Prepared<'r, 'p>>,
    Vec<Result<report::Predicted<'p>, report::Skipped>>,
) {
    let mut preps = Vec::new();
    let mut rows = Vec::new();
    for (which, sizes) in executions.groups.iter().filter(|g| !g.1.is_empty()) {
        let timed = which.map_or(run, |k| &executions.runs[k]);
        preps.push(engine::Prepared::new(plan, req.topology, timed));
        let prep = preps.last().expect("just pushed");
        // (A deadlock of the run verified is timed up to where it stopped,
        // for its timeline; the table says it has no time.)
        if let Some(why) = which.and_then(|k| executions.problems[k].as_ref()) {
            rows.extend(sizes.iter().map(|&size| {
                Err(report::Skipped {
                    size,
                    why: why.clone(),
                })
            }));
            continue;
        }
        rows.extend(report::predict(
            plan,
            prep,
            preps.len() - 1,
            req.topology,
            req.dtype,
            sizes,
        ));
    }
    rows.sort_by_key(|r| match r {
        Ok(p) => p.workload.size(),
        Err(s) => s.size,
    });
    (preps, rows)
}

/// What `msclc sim --timing` prints after its verdict.
pub struct Prediction {
    /// The table and critical paths, and where the timeline files went.
    pub text: String,
    /// Whether some size's own run found a problem that the two
    /// iterations verified did not (a deadlock, a race or a wrong result
    /// at the iterations that size's pipelines run): the plan is not
    /// right at every size, and `msclc sim` exits 1.
    pub unverified: bool,
}

/// Predicts `run`'s time at each size, writes the timeline files asked
/// for, and returns the table and critical paths to print. A deadlocked
/// run has no time: its timeline shows where the blocks stopped.
pub fn predict_report(
    plan: &crate::ir::Plan,
    run: &crate::sim::record::Run,
    req: &Request,
) -> Result<Prediction, Diagnostic> {
    let executions = Executions::new(plan, run, req);
    let (unverified, smallest) = executions.sizes_with_problems();
    let (preps, rows) = predict_rows(plan, run, &executions, req);
    let deadlocked = !run.stuck.is_empty();
    // Said as `msclc run` says it: a table of skipped sizes alone is no
    // prediction (unless they are skipped for what their runs found,
    // which is the plan's problem and is reported as one).
    if let Some(Err(last)) = rows
        .last()
        .filter(|_| !deadlocked && unverified == 0 && rows.iter().all(|r| r.is_err()))
    {
        let (min, max) = req.sizes;
        return Err(crate::measure::no_size_runs(min, max, last.size, &last.why));
    }
    let mut text = if deadlocked {
        "# no predicted time: the plan deadlocks (the timeline shows where its blocks stopped)\n"
            .to_string()
    } else {
        report::render(plan, &preps, req.topology, req.dtype, &rows, req.explain)
    };
    if let Some(smallest) = smallest {
        text.push_str(&format!(
            "problem: the plan is not right at {unverified} of the {} sizes, the smallest {smallest} B \
             (the skipped rows say why): msclc sim verifies two iterations of each pipeline, and these \
             sizes run other counts\n",
            rows.len()
        ));
    }
    if let Some(c) = executions.capped.as_ref().filter(|_| !deadlocked) {
        text.push_str(&format!(
            "# from {} B on, pipelines run more iterations than are timed ({} at {} B, timed as {}, \
             each of a {}th of the bytes): their times leave out per-iteration latency (docs/timing.md, \"What the model covers\")\n",
            c.size, c.iterations, c.size, c.timed, c.timed
        ));
    }
    let unverified = unverified > 0;
    if req.trace.is_none() && req.svg.is_none() {
        return Ok(Prediction { text, unverified });
    }
    let Some(largest) = rows.iter().rev().find_map(|r| r.as_ref().ok()) else {
        // (No size has a time because the plan is wrong at each: that is
        // the finding, said above.)
        if unverified {
            text.push_str("# no timeline written: no size has a time\n");
            return Ok(Prediction { text, unverified });
        }
        return Err(Diagnostic::plain(
            Code::Options,
            "no size in --size runs this plan, so there is no timeline to write; choose larger sizes",
        ));
    };
    // Its op times again: the rows keep only what the table needs.
    let prep = &preps[largest.execution];
    let times = engine::time(prep, req.topology, largest.workload.chunk as f64);
    let timeline = build::timeline(
        plan,
        prep,
        &times,
        &largest.critical,
        &build::Labels {
            title: req.title,
            topology: &req.topology.name,
            size_bytes: largest.workload.size(),
            chunk_bytes: largest.workload.chunk as f64,
        },
    );
    let cannot_write = |path: &Path, e: std::io::Error| {
        Diagnostic::plain(
            Code::Unreadable,
            format!("cannot write {}: {e}", path.display()),
        )
    };
    let write = |path: &Path, contents: String| {
        crate::files::write(path, contents.as_bytes()).map_err(|e| cannot_write(path, e))
    };
    let size = crate::units::human_bytes(largest.workload.size());
    if let Some(path) = req.trace {
        crate::files::write_with(path, |out| trace::write_chrome_trace(&timeline, out))
            .map_err(|e| cannot_write(path, e))?;
        text.push_str(&format!(
            "# timeline at {size}: {} (trace events)\n",
            path.display()
        ));
    }
    if let Some(path) = req.svg {
        write(path, svg::svg(&timeline))?;
        text.push_str(&format!(
            "# timeline at {size}: {} (picture)\n",
            path.display()
        ));
    }
    Ok(Prediction { text, unverified })
}

/// A memory channel between ranks on different nodes of `top`: the
/// executor maps a memory channel's peer buffer into the GPU, which takes
/// NVLink (one node, `gpus_per_node`); between nodes only a port channel
/// connects. Warned once, at the first such channel the program made, with
/// how many there are in all; the model times it as the network would.
pub fn node_memory_channels(
    plan: &crate::ir::Plan,
    top: &topology::Topology,
) -> Option<Diagnostic> {
    let mut crossing = Vec::new();
    for (rank, r) in plan.ranks.iter().enumerate() {
        for (i, &peer) in r.memory_peers.iter().enumerate() {
            if top.link(rank as u32, peer) == topology::Link::Network {
                crossing.push((rank as u32, peer, r.memory_origins.get(i).map(|o| o.span)));
            }
        }
    }
    let &(rank, peer, span) = crossing.first()?;
    let message = format!(
        "a memory channel between rank {rank} and rank {peer}, on different nodes of {} ({} GPU{} per node): a memory channel reaches its peer over NVLink, and nodes are joined by their NICs only",
        top.name,
        top.gpus_per_node,
        if top.gpus_per_node == 1 { "" } else { "s" }
    );
    let help = format!(
        "help: use a port channel between nodes; {} memory channel end(s) of this plan cross nodes",
        crossing.len()
    );
    let d = match span {
        Some(span) => Diagnostic::warning(
            Code::NodeMemoryChannel,
            span,
            message,
            "this memory channel",
        ),
        None => Diagnostic::plain(Code::NodeMemoryChannel, message).as_warning(),
    };
    Some(d.with_note(help))
}
