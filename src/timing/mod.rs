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
    let text =
        std::fs::read_to_string(path).map_err(|e| unusable(format!("cannot read it: {e}")))?;
    let name = path
        .file_stem()
        .map_or(spec.to_string(), |s| s.to_string_lossy().into_owned());
    topology::from_json(&name, &text).map_err(unusable)
}

/// What `msclc sim --timing` asks.
pub struct Request<'a> {
    pub topology: &'a topology::Topology,
    pub dtype: crate::ir::Dtype,
    /// Sizes double from the first to the second.
    pub sizes: (u64, u64),
    /// Where to write the largest size's timeline as a trace, as a picture.
    pub trace: Option<&'a Path>,
    pub svg: Option<&'a Path>,
    /// The size whose critical path to print (the largest row at or
    /// below it), if any.
    pub explain: Option<u64>,
    /// The program or plan, for titles.
    pub title: &'a str,
}

/// Predicts `run`'s time at each size, writes the timeline files asked
/// for, and returns the table and critical paths to print. A deadlocked
/// run has no time: its timeline shows where the blocks stopped.
pub fn predict_report(
    plan: &crate::ir::Plan,
    run: &crate::sim::record::Run,
    req: &Request,
) -> Result<String, Diagnostic> {
    let prep = engine::Prepared::new(plan, req.topology, run);
    let rows = report::predict(plan, &prep, req.topology, req.dtype, req.sizes);
    let deadlocked = !run.stuck.is_empty();
    let mut text = if deadlocked {
        "# no predicted time: the plan deadlocks (the timeline shows where its blocks stopped)\n"
            .to_string()
    } else {
        report::render(plan, &prep, req.topology, req.dtype, &rows, req.explain)
    };
    if req.trace.is_none() && req.svg.is_none() {
        return Ok(text);
    }
    let Some(largest) = rows.iter().rev().find_map(|r| r.as_ref().ok()) else {
        return Err(Diagnostic::plain(
            Code::Options,
            "no size in --size runs this plan, so there is no timeline to write; choose larger sizes",
        ));
    };
    // Its op times again: the rows keep only what the table needs.
    let times = engine::time(&prep, req.topology, largest.workload.chunk as f64);
    let timeline = build::timeline(
        plan,
        &prep,
        &times,
        &largest.critical,
        &build::Labels {
            title: req.title,
            topology: &req.topology.name,
            size_bytes: largest.workload.size(),
            chunk_bytes: largest.workload.chunk as f64,
        },
    );
    let write = |path: &Path, contents: String| {
        crate::files::write(path, contents.as_bytes()).map_err(|e| {
            Diagnostic::plain(
                Code::Unreadable,
                format!("cannot write {}: {e}", path.display()),
            )
        })
    };
    let size = crate::units::human_bytes(largest.workload.size());
    if let Some(path) = req.trace {
        write(path, trace::chrome_trace(&timeline))?;
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
    Ok(text)
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
        "a memory channel between rank {rank} and rank {peer}, on different nodes of {} ({} GPUs per node): a memory channel reaches its peer over NVLink, and nodes are joined by their NICs only",
        top.name, top.gpus_per_node
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
