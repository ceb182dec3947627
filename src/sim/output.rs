//! How `msclc sim` tells its findings: a verdict line, then the problem
//! with the ops involved at their program lines (for a plan compiled here)
//! or JSON paths (for a JSON plan); or all of it as one JSON object for CI
//! pipelines.

use super::{describe_sendrecv, OpAt, Report, Verdict};
use crate::diag::{Code, Diagnostic, SourceMap, Span};
use crate::ir::Plan;
use crate::units::count;
use serde_json::{json, Value};

/// One simulation of a plan, in one buffer mode.
pub struct Run {
    /// "in-place" or "out-of-place".
    pub buffers: &'static str,
    /// Whether that is the mode the plan declares.
    pub declared: bool,
    pub report: Report,
    /// The most heap the simulation held at once on top of what was live
    /// before it ([`crate::memory::peak_bytes`]; 0 without the binary's
    /// counting allocator).
    pub peak_bytes: u64,
}

/// Rendered program lines shown per deadlock: enough to see the pattern.
const STUCK_SHOWN: usize = 4;
/// Blocks stuck at an op listed per deadlock, in text; the JSON report
/// (`--json`) lists every one.
const STUCK_LISTED: usize = 16;

/// The verdict in one line.
pub fn verdict_line(plan: &Plan, report: &Report) -> String {
    let summary = format!(
        "{} on {}, {}, {} run",
        plan.collective.name,
        count(plan.ranks.len() as u64, "rank"),
        count(u64::from(report.executions), "execution"),
        count(report.ops_run, "op")
    );
    match &report.verdict {
        Verdict::Verified => {
            let mut line = format!("verified: {summary}");
            if let Some(sources) = &report.sendrecv_sources {
                line = format!("{line}; {}", describe_sendrecv(sources));
            }
            // Right as simulated, and not what the executor will run: said
            // in the line `--quiet` keeps, the warning's code to look for.
            if let Some(w) = report
                .warnings
                .iter()
                .find(|w| w.code.executor_runs_otherwise())
            {
                line = format!(
                    "{line}; but the MSCCL++ executor will not run it as simulated ({})",
                    w.code.id()
                );
            }
            line
        }
        Verdict::WrongResult(w) => format!("wrong result: {}", w.text),
        Verdict::Deadlock(_) => format!("deadlock: no thread block can go on ({summary})"),
        Verdict::Race(race) => format!("data race on {}", race.location),
    }
}

/// The verdict line, with a colon where `details` follow it.
pub fn verdict_heading(line: &str, details: &str) -> String {
    if details.is_empty() {
        line.to_string()
    } else {
        format!("{line}:")
    }
}

/// What follows the verdict line: each stuck block or the two racing
/// accesses, hints, and the ops at their program lines.
pub fn details(report: &Report, sources: Option<&SourceMap>) -> String {
    let mut out = String::new();
    let mut diagnostics = Vec::new();
    match &report.verdict {
        Verdict::Verified => {}
        Verdict::WrongResult(w) if w.read_as_plain.is_some() => {
            let (reader, writer) = (w.read_as_plain.as_ref(), w.last_write.as_ref());
            for (op, what) in [
                (reader, "read as plain data by"),
                (writer, "written as packets by"),
            ] {
                if let Some(op) = op {
                    out.push_str(&format!("  {what} the op at {}\n", op.path));
                }
            }
            if let Some((op, span)) = reader.and_then(|op| Some((op, op.span?))) {
                let mut d = Diagnostic::error(
                    Code::WrongResult,
                    span,
                    "wrong result",
                    "reads packets as plain data",
                )
                .with_note(w.text.clone());
                if let Some(made) = writer.and_then(|op| op.span) {
                    d = d.with_secondary(made, "the packets are written here");
                }
                diagnostics.push(when(d, op));
            }
        }
        Verdict::WrongResult(w) => {
            if let Some(op) = &w.last_write {
                out.push_str(&format!("  last written by the op at {}\n", op.path));
                diagnostics.extend(op.span.map(|span| {
                    when(
                        Diagnostic::error(
                            Code::WrongResult,
                            span,
                            "wrong result",
                            "the chunk was last written here",
                        )
                        .with_note(w.text.clone()),
                        op,
                    )
                }));
            }
        }
        Verdict::Deadlock(stuck) => {
            // The blocks stuck at an op, then in one line those that ran
            // all theirs and wait for them: in a large plan, hundreds.
            let (at_op, finished): (Vec<&super::Stuck>, Vec<&super::Stuck>) =
                stuck.iter().partition(|s| s.op.is_some());
            // A hint is said once for the blocks in a row it is the same for.
            let mut last_hint = None;
            for s in at_op.iter().take(STUCK_LISTED) {
                out.push_str(&format!("  {s}\n"));
                if let Some(hint) = s.hint.as_ref().filter(|h| last_hint != Some(*h)) {
                    out.push_str(&format!("    hint: {hint}\n"));
                }
                last_hint = s.hint.as_ref();
            }
            if at_op.len() > STUCK_LISTED {
                out.push_str(&format!(
                    "  and {} more thread block(s) stuck at an op (--json lists every one)\n",
                    at_op.len() - STUCK_LISTED
                ));
            }
            match finished[..] {
                [] => {}
                [one] => out.push_str(&format!("  {one}\n")),
                _ => {
                    let mut ranks: Vec<u32> = finished.iter().map(|s| s.rank).collect();
                    ranks.dedup();
                    out.push_str(&format!(
                        "  {} thread block(s), of {}, ran all their ops and wait for the other thread blocks of their rank to finish\n",
                        finished.len(),
                        crate::units::count(ranks.len() as u64, "rank")
                    ));
                }
            }
            // One diagnostic per program line: a loop's blocks stuck at one
            // op are one mistake, told once with how many more there are.
            let mut lines: Vec<(Span, Vec<&super::Stuck>)> = Vec::new();
            for (s, span) in stuck.iter().filter_map(|s| Some((s, s.op.as_ref()?.span?))) {
                match lines.iter_mut().find(|(at, _)| *at == span) {
                    Some((_, blocks)) => blocks.push(s),
                    None => lines.push((span, vec![s])),
                }
            }
            for (span, blocks) in lines.iter().take(STUCK_SHOWN) {
                let s = blocks[0];
                let mut d =
                    Diagnostic::error(Code::Deadlock, *span, "deadlock", "this op waits forever")
                        .with_note(s.text.clone());
                if let Some(op) = &s.op {
                    d = when(d, op);
                }
                let others = &blocks[1..];
                if !others.is_empty() {
                    let mut ranks: Vec<u32> = others.iter().map(|o| o.rank).collect();
                    ranks.sort_unstable();
                    ranks.dedup();
                    d = d.with_note(format!(
                        "and {} more thread block(s) stuck at this op, on ranks {}",
                        others.len(),
                        crate::diag::short_list(&ranks, "ranks")
                    ));
                }
                for (made, what) in &s.channels {
                    d = d.with_secondary(*made, what.clone());
                }
                if let Some(hint) = &s.hint {
                    d = d.with_note(format!("hint: {hint}"));
                }
                diagnostics.push(d);
            }
        }
        Verdict::Race(race) => {
            out.push_str(&format!("  {}\n  {}\n", race.first, race.second));
            out.push_str("  and no synchronisation orders the two\n");
            if let Some(hint) = &race.hint {
                out.push_str(&format!("    hint: {hint}\n"));
            }
            for op in race.ops.iter().flatten() {
                out.push_str(&format!("  op at {}\n", op.path));
            }
            let message = format!("data race on {}", race.location);
            let located = race
                .ops
                .clone()
                .map(|op| op.and_then(|o| Some((o.span?, o))));
            diagnostics.extend(match located {
                [Some((a, first)), Some((b, second))] => {
                    let mut d = Diagnostic::error(Code::DataRace, b, message, "this access")
                        .with_secondary(a, "races with this one");
                    for (op, which) in [(&second, "this access"), (&first, "the other")] {
                        if let Some(v) = &op.when {
                            d = d.with_note(format!("{which} when {v}{}", fused_note(op)));
                        }
                    }
                    Some(d)
                }
                [Some((one, op)), None] | [None, Some((one, op))] => {
                    let d = Diagnostic::error(Code::DataRace, one, message, "this access")
                        .with_note("races with the user's access to the buffer around the kernel");
                    let d = when(d, &op);
                    Some(match &race.hint {
                        Some(hint) => d.with_note(format!("hint: {hint}")),
                        None => d,
                    })
                }
                [None, None] => None,
            });
        }
    }
    if let Some(sources) = sources {
        out.push_str(&sources.render(&diagnostics));
    }
    out
}

/// `d` with the loop values `op` was made in, and marked at the calls that
/// reached it, as compile diagnostics are (`Plan::in_context`).
fn when(d: Diagnostic, op: &OpAt) -> Diagnostic {
    let d = d.called_at_each(op.calls.iter().copied());
    match &op.when {
        Some(v) => d.with_note(format!("when {v}{}", fused_note(op))),
        None => d,
    }
}

/// What a fused op's loop values are, after them: the first part's.
fn fused_note(op: &OpAt) -> &'static str {
    match op.fused {
        true => " (those of the first op fused into it, which may not be the one that did this: `instr_fusion = false` names each)",
        false => "",
    }
}

fn kind(verdict: &Verdict) -> &'static str {
    match verdict {
        Verdict::Verified => "verified",
        Verdict::WrongResult(_) => "wrong result",
        Verdict::Deadlock(_) => "deadlock",
        Verdict::Race(_) => "race",
    }
}

fn location(op: &OpAt, sources: Option<&SourceMap>) -> Value {
    let mut at = json!({
        "rank": op.rank,
        "thread_block": op.tb,
        "json_path": op.path,
        "fused": op.fused,
        "when": op.when,
    });
    if let Some((file, line, column)) = op.span.zip(sources).and_then(|(s, m)| m.location(s)) {
        at["file"] = json!(file);
        at["line"] = json!(line);
        at["column"] = json!(column);
    }
    at
}

fn problems(report: &Report, sources: Option<&SourceMap>) -> Vec<Value> {
    let at = |op: &OpAt| location(op, sources);
    match &report.verdict {
        Verdict::Verified => Vec::new(),
        // Every problem has the same fields: `hint` null and `related`
        // empty where there is nothing more to say.
        Verdict::WrongResult(w) => vec![json!({
            "kind": "wrong result",
            "code": Code::WrongResult.id(),
            "message": w.text,
            "hint": null,
            "locations": w.read_as_plain.iter().chain(&w.last_write).map(at).collect::<Vec<_>>(),
            "related": [],
        })],
        Verdict::Deadlock(stuck) => stuck
            .iter()
            .map(|s| {
                let related: Vec<Value> = s
                    .channels
                    .iter()
                    .filter_map(|(span, what)| {
                        let (file, line, column) = sources?.location(*span)?;
                        Some(json!({"message": what, "file": file, "line": line, "column": column}))
                    })
                    .collect();
                json!({
                    "kind": "deadlock",
                    "code": Code::Deadlock.id(),
                    "message": s.text,
                    "hint": s.hint,
                    "locations": s.op.iter().map(at).collect::<Vec<_>>(),
                    "related": related,
                })
            })
            .collect(),
        Verdict::Race(race) => vec![json!({
            "kind": "race",
            "code": Code::DataRace.id(),
            "message": format!("data race on {}: {}; {}", race.location, race.first, race.second),
            "hint": race.hint,
            "locations": race.ops.iter().flatten().map(at).collect::<Vec<_>>(),
            "related": [],
        })],
    }
}

/// A warning as JSON: its code and message, and its place in the program
/// when it has one.
fn warning(w: &Diagnostic, sources: Option<&SourceMap>) -> Value {
    let mut out = json!({"code": w.code.id(), "message": w.message});
    if let Some((file, line, column)) = w.span().zip(sources).and_then(|(s, m)| m.location(s)) {
        out["file"] = json!(file);
        out["line"] = json!(line);
        out["column"] = json!(column);
    }
    out
}

/// The machine-readable report: the plan, and per buffer mode simulated
/// the verdict, each problem with its locations, and the warnings.
pub fn json_report(plan: &Plan, runs: &[Run], sources: Option<&SourceMap>) -> Value {
    let runs: Vec<Value> = runs
        .iter()
        .map(|run| {
            json!({
                "buffers": run.buffers,
                "declared": run.declared,
                "verdict": kind(&run.report.verdict),
                "summary": verdict_line(plan, &run.report),
                "executions": run.report.executions,
                "ops_run": run.report.ops_run,
                "sendrecv_sources": run.report.sendrecv_sources,
                "memory_peak": run.peak_bytes,
                "problems": problems(&run.report, sources),
                "warnings": run.report.warnings.iter().map(|w| warning(w, sources)).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({
        "plan": plan.name,
        "collective": plan.collective.name,
        "ranks": plan.ranks.len(),
        "memory_estimate": crate::sim::memory_estimate(plan),
        "verified": runs.iter().all(|r| r["verdict"] == "verified"),
        "runs": runs,
    })
}
