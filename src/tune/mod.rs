//! `msclc tune`: the compiler chooses a program's parallelism for every
//! message size. Each candidate (a value for each param that varies,
//! `space`) is compiled, proved by the simulator and timed by the model;
//! a candidate that does not compile, crosses an executor limit or has an
//! op the executor does not know, does not fit the topology's machine,
//! races, deadlocks or computes a wrong result is dropped with its reason,
//! never chosen. Of the rest, `choose` takes at each size one of the fastest,
//! in the fewest plans, whose message-size ranges tile the span; `report`
//! writes the table, the index and the picture.

pub mod choose;
pub mod report;
pub mod space;

use crate::diag::{Code, Diagnostic, Severity, SourceMap};
use crate::driver::{self, Compilation};
use crate::eval::Limits;
use crate::ir::{Dtype, Plan};
use crate::passes::executor_limits;
use crate::sim::{self, SimOptions, Verdict};
use crate::timing::{self, topology::Topology};
use space::{Candidate, Search, Space};
use std::path::Path;

/// What `msclc tune` asks.
pub struct Request<'a> {
    pub path: &'a Path,
    /// `-D`: params set, not varied.
    pub fixed: &'a [(String, String)],
    /// `--vary NAME=V1,V2`: params varied over these values.
    pub vary: &'a [(String, Vec<String>)],
    /// `--nranks`: the rank count, set through the param that gives it.
    pub nranks: Option<u32>,
    pub topology: &'a Topology,
    pub dtype: Dtype,
    /// The span of message sizes, bytes: sizes double from the first.
    pub span: (u64, u64),
    pub max_candidates: usize,
    /// A candidate within this fraction of the fastest counts as fastest.
    pub within: f64,
    pub limits: Limits,
    /// Called as each candidate is done, with how many there are (a
    /// progress bar).
    pub progress: &'a (dyn Fn(usize) + Sync),
}

/// What one candidate came to.
#[derive(Debug, Clone)]
pub struct Tried {
    pub candidate: Candidate,
    /// Its prediction at each size (or why it cannot run there), or why
    /// it was dropped.
    pub outcome: Result<Vec<Result<timing::Predicted, String>>, String>,
    /// The most thread blocks a rank of its plan has (0 where it has
    /// none): of equally fast candidates, the fewest blocks serve
    /// (`choose::TieBreak`).
    pub blocks: u32,
    /// What the simulator warned of a candidate it verified ("W0503: ...":
    /// an executor bug the plan meets, simulated as intended), which the
    /// table says of the plans chosen.
    pub warnings: Vec<String>,
}

impl Tried {
    /// Its prediction at the `s`-th size, if it has one.
    pub fn at(&self, s: usize) -> Option<timing::Predicted> {
        self.outcome.as_ref().ok()?.get(s)?.as_ref().ok().copied()
    }

    /// Why it has no time at the `s`-th size: dropped, or skipped there.
    pub fn why_not(&self, s: usize) -> Option<&str> {
        match &self.outcome {
            Err(why) => Some(why),
            Ok(rows) => match rows.get(s) {
                Some(Err(why)) => Some(why),
                Some(Ok(_)) => None,
                None => Some("no prediction"),
            },
        }
    }
}

/// The time of prediction `p` taken to size `asked`, at the bandwidth it
/// reached: what candidates are compared by. A plan runs a size in whole
/// chunks of its alignment, so each candidate is timed at the asked size
/// rounded down to its own chunks (1000 B: 512 for one, 896 for another);
/// compared as they are, the one that rounds further down would look
/// faster for moving less.
pub fn time_at(p: &timing::Predicted, asked: u64) -> f64 {
    p.time_us * asked as f64 / p.size.max(1) as f64
}

/// The outcome of a tuning.
pub struct Tuned {
    pub space: Space,
    pub search: Search,
    pub sizes: Vec<u64>,
    /// Every candidate tried, the program's defaults first.
    pub tried: Vec<Tried>,
    /// The plan set: which candidate serves which sizes, and the message
    /// sizes it takes.
    pub segments: Vec<choose::Segment>,
    pub ranges: Vec<(u64, u64)>,
}

impl Tuned {
    /// The `-D` settings of the plan of `segment`: the fixed ones, then
    /// the candidate's.
    pub fn defines(
        &self,
        fixed: &[(String, String)],
        segment: &choose::Segment,
    ) -> Vec<(String, String)> {
        let mut all = fixed.to_vec();
        all.extend(self.space.defines(&self.tried[segment.candidate].candidate));
        all
    }
}

/// Tunes the program of `req`. Errors are diagnostics, with the sources
/// to render them against: the program does not parse, `--vary` names no
/// param, nothing to vary, or no candidate verifies at some size (each
/// dropped one's reason in the notes).
pub fn tune(req: &Request) -> Result<Tuned, (SourceMap, Vec<Diagnostic>)> {
    let (sources, program) = driver::parse_file(req.path);
    let program = match program {
        Ok(p) => p,
        Err(d) => return Err((sources, d)),
    };
    // A -D every candidate shares is judged once, before any is tried;
    // and so is what the checker finds, which no param value changes.
    if let Err(d) = driver::params::parse_defines(&sources, &program.stmts, req.fixed, false) {
        return Err((sources, d));
    }
    if let Err(d) = crate::check::check(&program) {
        return Err((sources, d));
    }
    let fail = |d: Diagnostic| (SourceMap::default(), vec![d]);
    let declared = driver::params::declared(&program.stmts);
    let space = Space::new(
        &declared,
        |p| p.default_text(&sources).to_string(),
        req.vary,
        req.fixed,
    )
    .map_err(|why| fail(Diagnostic::plain(Code::Define, why)))?;
    if space.axes.is_empty() {
        let listed: Vec<&str> = declared
            .iter()
            .filter(|p| p.literals().is_some())
            .map(|p| p.name)
            .collect();
        let why = match listed.is_empty() {
            true => "nothing to tune: no param lists its values (`param tbg: int in [1, 2, 4] = 1`) and no --vary NAME=V1,V2 names one".to_string(),
            false => format!(
                "nothing to tune: the params that list their values ({}) are all set with -D; leave one out, or --vary NAME=V1,V2 another",
                listed.join(", ")
            ),
        };
        return Err(fail(Diagnostic::plain(Code::Define, why)));
    }
    let (candidates, search) = space.candidates(req.max_candidates);
    values_keep_what_a_set_shares(req, &space, &candidates).map_err(fail)?;
    let tried = try_all(req, &space, &candidates);
    let sizes: Vec<u64> = std::iter::successors(Some(req.span.0.max(1)), |s| s.checked_mul(2))
        .take_while(|&s| s <= req.span.1)
        .collect();
    let times: Vec<Vec<Option<f64>>> = tried
        .iter()
        .map(|t| {
            (0..sizes.len())
                .map(|s| t.at(s).map(|p| time_at(&p, sizes[s])))
                .collect()
        })
        .collect();
    let ties: Vec<choose::TieBreak> = tried
        .iter()
        .map(|t| choose::TieBreak {
            warned: !t.warnings.is_empty(),
            blocks: t.blocks,
        })
        .collect();
    let segments = choose::segments(&times, sizes.len(), req.within, &ties)
        .map_err(|s| no_candidate(req, &space, &tried, &sizes, s))?;
    let ranges = choose::ranges(&segments, &sizes, req.span);
    Ok(Tuned {
        space,
        search,
        sizes,
        tried,
        segments,
        ranges,
    })
}

/// The E0606 error where no candidate verifies and runs at the `s`-th
/// size (the size named only where some candidate runs at another), with
/// each candidate's reason. Where the defaults do not compile,
/// their own diagnostics follow, at their program lines: the program's
/// error, most often every candidate's.
fn no_candidate(
    req: &Request,
    space: &Space,
    tried: &[Tried],
    sizes: &[u64],
    s: usize,
) -> (SourceMap, Vec<Diagnostic>) {
    // Leaving the size out helps only where some candidate runs elsewhere;
    // where none does, the size is not what failed them.
    let runs_somewhere = tried
        .iter()
        .any(|t| (0..sizes.len()).any(|i| t.at(i).is_some()));
    let at_size = match runs_somewhere {
        true => format!(" and runs at {} B", sizes[s]),
        false => String::new(),
    };
    let mut d = Diagnostic::plain(
        Code::NoCandidate,
        format!(
            "no candidate of the {} tried verifies{at_size}",
            tried.len()
        ),
    );
    const SHOWN: usize = 8;
    for t in tried.iter().take(SHOWN) {
        let why = t.why_not(s).unwrap_or("");
        d = d.with_note(format!("{}: {why}", space.describe(&t.candidate)));
    }
    if tried.len() > SHOWN {
        d = d.with_note(format!(
            "and {} more candidates, not shown (sim one with -D to see why)",
            tried.len() - SHOWN
        ));
    }
    d = d.with_note(match runs_somewhere {
        true => format!(
            "help: fix the program for one candidate (msclc sim -D ...), vary other values, or leave {} B out of --size",
            sizes[s]
        ),
        false => "help: no candidate runs at any size: fix the program for one candidate (msclc sim -D ...), or vary other values".to_string(),
    });
    let defaults = tried.first().map(|t| space.defines(&t.candidate));
    let compiled = defaults.map(|varied| {
        let mut defines = req.fixed.to_vec();
        defines.extend(varied);
        match req.nranks {
            Some(n) => driver::compile_for_ranks(req.path, &defines, n, req.limits),
            None => driver::compile_with(req.path, &defines, req.limits),
        }
    });
    match compiled {
        Some(Compilation {
            sources,
            result: Err(errors),
            ..
        }) => {
            let d = d.with_note(format!(
                "the defaults ({}) do not compile: their error follows",
                space.describe(&tried[0].candidate)
            ));
            (sources, std::iter::once(d).chain(errors).collect())
        }
        _ => (SourceMap::default(), vec![d]),
    }
}

/// Every candidate, on as many threads as there are cores, each taking
/// the next left.
fn try_all(req: &Request, space: &Space, candidates: &[Candidate]) -> Vec<Tried> {
    // The candidates have the cores, one each: a candidate is evaluated on
    // one thread unless `--threads` says otherwise.
    let limits = Limits {
        threads: Some(req.limits.threads.unwrap_or(1)),
        ..req.limits
    };
    let req = &Request { limits, ..*req };
    crate::parallel::map(candidates, crate::parallel::cores(), |candidate| {
        let (outcome, blocks, warnings) = match evaluate(req, &space.defines(candidate)) {
            Ok(Evaluated {
                predicted,
                blocks,
                warnings,
            }) => (Ok(predicted), blocks, warnings),
            Err(why) => (Err(why), 0, Vec::new()),
        };
        (req.progress)(candidates.len());
        Tried {
            candidate: candidate.clone(),
            outcome,
            blocks,
            warnings,
        }
    })
}

/// How a candidate is proved: as `msclc sim` proves a plan, two executions
/// back to back in the buffer mode it declares.
const VERIFY: SimOptions = SimOptions {
    executions: 2,
    inplace: None,
    progress: false,
    pipeline_chunk: None,
};

/// A candidate verified: its prediction at each size (or why it cannot
/// run there), the most thread blocks a rank of its plan has, and what the
/// simulator warned of it.
struct Evaluated {
    predicted: Vec<Result<timing::Predicted, String>>,
    blocks: u32,
    warnings: Vec<String>,
}

/// Compiles the program with `varied` (and the fixed settings), proves
/// it and predicts each size; or says why it is dropped.
fn evaluate(req: &Request, varied: &[(String, String)]) -> Result<Evaluated, String> {
    let mut defines = req.fixed.to_vec();
    defines.extend_from_slice(varied);
    let plan = compiled(req, &defines)?;
    let (report, run) = sim::simulate_recorded(&plan, &VERIFY);
    if report.verdict != Verdict::Verified {
        return Err(sim::output::verdict_line(&plan, &report));
    }
    // The executor cannot make a memory channel between nodes; nor run
    // blocks that wait for blocks the GPU has no room to start.
    let gpu = sim::Target::hopper_with(req.topology.sms);
    let on_machine =
        timing::node_memory_channels(&plan, req.topology).or_else(|| sim::residency(&plan, &gpu));
    if let Some(w) = on_machine {
        return Err(format!("{}: {}", w.code.id(), w.message));
    }
    let request = timing::Request {
        topology: req.topology,
        dtype: req.dtype,
        sizes: req.span,
        simulated: VERIFY,
        trace: None,
        svg: None,
        explain: None,
        title: "",
    };
    let predicted = timing::predicted_times(&plan, &run, &request)
        .into_iter()
        .map(|row| row.map_err(|skipped| skipped.why))
        .collect();
    let blocks = plan.ranks.iter().map(|r| r.threadblocks.len() as u32).max();
    let warnings = report
        .warnings
        .iter()
        .map(|w| format!("{}: {}", w.code.id(), w.message))
        .collect();
    Ok(Evaluated {
        predicted,
        blocks: blocks.unwrap_or(0),
        warnings,
    })
}

/// An E0803 error, before any tuning, where the values tuned would not
/// make one plan set: where `--nranks` contradicts a `-D` or a value tuned
/// of the param that decides the rank count (which `--nranks` sets), or a
/// value tuned changes what the plans of a set share: the number of ranks
/// (the runtime picks among a set's plans by message size alone, and
/// candidates on other counts are not compared alike), or the message
/// sizes the program declares (tune sets each plan's range itself).
/// Otherwise every candidate would fail alike, or be compared unlike. One
/// compile of the defaults and of each value the `candidates` try: not of
/// every value listed, which a param of thousands would make thousands of
/// compiles, past what `--max-candidates` bounds.
fn values_keep_what_a_set_shares(
    req: &Request,
    space: &Space,
    candidates: &[Candidate],
) -> Result<(), Diagnostic> {
    // The plan's ranks and declared sizes; or the error that --nranks and
    // these settings disagree; or nothing, where they compile no plan
    // (each candidate's to say).
    let shape = |defines: &[(String, String)]| -> Result<Option<_>, Diagnostic> {
        let c = match req.nranks {
            Some(n) => driver::compile_for_ranks(req.path, defines, n, req.limits),
            None => driver::compile_quietly(req.path, defines, req.limits),
        };
        match c.result {
            Ok(plan) => {
                let o = &plan.options;
                Ok(Some((
                    plan.ranks.len(),
                    (o.min_message_size, o.max_message_size),
                )))
            }
            Err(errors) => match errors.into_iter().find(|d| d.code == Code::Options) {
                Some(d) if req.nranks.is_some() => Err(d),
                _ => Ok(None),
            },
        }
    };
    let base = shape(req.fixed)?;
    for (k, axis) in space.axes.iter().enumerate() {
        let tried: std::collections::BTreeSet<usize> =
            candidates.iter().filter_map(|c| c[k]).collect();
        for value in tried.into_iter().map(|i| &axis.values[i]) {
            let mut defines = req.fixed.to_vec();
            defines.push((axis.name.clone(), value.clone()));
            let name = &axis.name;
            let (ranks, sizes) = match shape(&defines) {
                Ok(Some(shape)) => shape,
                Ok(None) => continue,
                Err(_) => {
                    let n = req.nranks.unwrap_or_default();
                    return Err(Diagnostic::plain(
                        Code::Options,
                        format!(
                            "--nranks {n} and the value {value} tuned of `{name}` (of {}) disagree: that param decides the rank count, which --nranks sets; leave out one of the two",
                            axis.values.join(", ")
                        ),
                    ));
                }
            };
            // Defaults that do not compile have nothing to compare with.
            let Some((base_ranks, base_sizes)) = base else {
                continue;
            };
            let why = if ranks != base_ranks {
                format!("`{name}` = {value} runs the program on {ranks} ranks, and the defaults on {base_ranks}: the plans of a set serve one rank count; vary other params, and set this one with -D (or the rank count with --nranks)")
            } else if sizes != base_sizes {
                format!("`{name}` = {value} changes the message sizes the program declares: tune gives each plan its range of sizes itself; set `{name}` with -D (to bound the plans' sizes), and leave --size to say which to tune")
            } else {
                continue;
            };
            return Err(Diagnostic::plain(Code::Options, why));
        }
    }
    Ok(())
}

/// The plan of `defines`, or why not: an error, or an executor limit
/// crossed or an op it does not know (W0502, W0507: the executor refuses
/// the plan or corrupts memory). Other warnings (a signal never waited
/// for, an executor bug met) leave a plan that runs and verifies: it stays
/// a candidate.
pub fn compiled(req: &Request, defines: &[(String, String)]) -> Result<Plan, String> {
    let c: Compilation = match req.nranks {
        Some(n) => driver::compile_for_ranks(req.path, defines, n, req.limits),
        None => driver::compile_with(req.path, defines, req.limits),
    };
    let first = |d: &[Diagnostic]| {
        d.iter()
            .find(|d| d.severity == Severity::Error)
            .or(d.first())
            .map_or("does not compile".to_string(), |d| {
                format!("{}: {}", d.code.id(), d.message)
            })
    };
    let plan = match c.result {
        Ok(plan) => plan,
        Err(diags) => return Err(first(&diags)),
    };
    // The plans written carry tune's ranges, not the program's: what the
    // executor makes of the program's `min_message_size` is no reason to
    // drop a candidate (tune says so of a range it writes).
    let misread_range = executor_limits::misread_min_message_size(&plan);
    let limits: Vec<Diagnostic> = c
        .warnings
        .into_iter()
        .filter(|w| w.code.executor_refuses() && Some(w) != misread_range.as_ref())
        .collect();
    if limits.is_empty() {
        Ok(plan)
    } else {
        Err(first(&limits))
    }
}
