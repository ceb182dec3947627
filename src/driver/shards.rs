//! Evaluation on several threads: `eval/shard.rs` says how the ranks are
//! shared among them and why the plan is the one a single thread makes;
//! this side starts the threads, each with its own parse of the program
//! (a parsed program is not shared between threads), gathers their parts
//! and, where any failed, evaluates the program again on one thread for
//! the error that gives.

use super::{params, Accepted};
use crate::check::Checked;
use crate::diag::{Diagnostic, SourceMap};
use crate::eval::value::Value;
use crate::eval::{self, Fusing, Limits, Part, Shard, Sharding};
use crate::ir::Plan;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// The fewest ranks a shard is given: below, starting a thread and parsing
/// the program again costs more than the shard saves (allreduce at 16
/// ranks evaluates in 2.8 ms on one thread, 3.1-3.6 ms on two; at 24 ranks,
/// 6.0 and 4.6 ms).
const MIN_RANKS_PER_SHARD: u32 = 12;

/// The most shards msclc chooses: each runs the whole program's loops and
/// holds its values, so that past a few the time saved is small and the
/// memory not.
const MAX_SHARDS: usize = 8;

/// What a shard's thread needs to evaluate the program on its own.
struct Inputs {
    path: PathBuf,
    /// The main file's and every imported file's name and text.
    files: Vec<(String, String)>,
    /// What the checker proved of the program (of its parse here, whose
    /// spans a parse of the same text repeats).
    checked: Checked,
    defines: Vec<(String, String)>,
    limits: Limits,
}

/// The plan of the `accepted` program with the `-D` settings `defines`
/// (`overrides`, as values), evaluated by as many shards as
/// `limits.threads` and the ranks allow.
pub(super) fn evaluate(
    accepted: Accepted<'_>,
    defines: &[(String, String)],
    overrides: HashMap<String, Value>,
    limits: Limits,
) -> Result<Plan, Diagnostic> {
    let Accepted {
        sources,
        path,
        program,
        checked,
    } = accepted;
    let whole = |overrides| eval::evaluate(program, checked, overrides, limits, Fusing::AsRecorded);
    // Threads asked for are used, up to one per rank; else one per core,
    // within what pays (`MIN_RANKS_PER_SHARD`, `MAX_SHARDS`).
    let shards_for: Box<dyn Fn(u32) -> usize> = match limits.threads {
        Some(threads) => Box::new(move |ranks| threads.min(ranks as usize)),
        None => {
            let cores = crate::parallel::cores().min(MAX_SHARDS);
            Box::new(move |ranks| cores.min((ranks / MIN_RANKS_PER_SHARD) as usize))
        }
    };
    // Under an address-space limit a thread's stack (`STACK_BYTES`) would
    // come out of the memory the budgets were measured in.
    if shards_for(u32::MAX) <= 1 || crate::memory::address_space_limited() {
        return whole(overrides);
    }
    let inputs = Arc::new(Inputs {
        path: path.to_path_buf(),
        files: sources.texts(),
        checked: checked.clone(),
        defines: defines.to_vec(),
        limits,
    });
    let stops = Stops::default();
    let workers: Arc<Mutex<Vec<JoinHandle<Option<Part>>>>> = Arc::default();
    let start = {
        let (stops, workers) = (stops.clone(), workers.clone());
        Box::new(move |ranks: u32| {
            start_shards(&inputs, shards_for(ranks) as u32, &stops, &workers)
        })
    };
    let lead = eval::evaluate_part(
        program,
        checked,
        overrides.clone(),
        limits,
        Fusing::AsRecorded,
        Sharding::Lead(start, stops.lead.clone()),
    );
    if lead.is_err() {
        stops.others.store(true, Ordering::Relaxed);
    }
    let handles = std::mem::take(&mut *workers.lock().unwrap_or_else(|e| e.into_inner()));
    // Joined before anything is returned: no thread outlives the compile.
    let others: Vec<Option<Part>> = handles
        .into_iter()
        .map(|h| h.join().ok().flatten())
        .collect();
    match lead {
        Ok(part) if part.shard.count == 1 => return Ok(part.plan),
        Err(d) if others.is_empty() => return Err(d),
        Ok(part) if others.iter().all(Option::is_some) => {
            let parts = std::iter::once(part)
                .chain(others.into_iter().flatten())
                .collect();
            if let Some(plan) = eval::merge(parts, &limits) {
                return Ok(plan);
            }
        }
        _ => {}
    }
    // A shard failed, or the ops together are past the limit: the error is
    // the one a single thread meets first.
    whole(overrides)
}

/// What stops the shards' evaluations early: a shard that fails stops all
/// (their plans are not needed); shard 0 that fails, or finds it cannot
/// start them all, stops the others only.
#[derive(Clone, Default)]
struct Stops {
    lead: Arc<AtomicBool>,
    others: Arc<AtomicBool>,
}

impl Stops {
    fn all(&self) {
        self.lead.store(true, Ordering::Relaxed);
        self.others.store(true, Ordering::Relaxed);
    }
}

/// Starts shards `1..count` of `count` on threads of their own (their
/// handles into `workers`); gives the number of shards: `count`, or 1 when
/// there are not two or a thread cannot start (the shards started are
/// stopped, and shard 0 records every rank).
fn start_shards(
    inputs: &Arc<Inputs>,
    count: u32,
    stops: &Stops,
    workers: &Mutex<Vec<JoinHandle<Option<Part>>>>,
) -> u32 {
    if count < 2 {
        return 1;
    }
    let mut workers = workers.lock().unwrap_or_else(|e| e.into_inner());
    for index in 1..count {
        let shard = Shard { index, count };
        let (inputs, own_stops) = (inputs.clone(), stops.clone());
        let thread = std::thread::Builder::new()
            .stack_size(crate::STACK_BYTES)
            .spawn(move || {
                crate::stack::note(crate::STACK_BYTES);
                evaluate_shard(&inputs, shard, &own_stops)
            });
        match thread {
            Ok(handle) => workers.push(handle),
            Err(_) => {
                stops.others.store(true, Ordering::Relaxed);
                return 1;
            }
        }
    }
    count
}

/// One shard's part, evaluated from the program's text; `None` if it
/// failed (and then every shard is stopped).
fn evaluate_shard(inputs: &Inputs, shard: Shard, stops: &Stops) -> Option<Part> {
    let part = (|| {
        let mut sources = SourceMap::default();
        let (_, main) = inputs.files.first()?;
        // The imports as the first parse read them: the files on the disk
        // may have changed since.
        let read = |full: &Path| {
            let name = full.display().to_string();
            let found = inputs.files.iter().find(|(n, _)| *n == name);
            found
                .map(|(_, text)| text.clone())
                .ok_or_else(|| std::io::ErrorKind::NotFound.into())
        };
        let program = super::load_with(&mut sources, &inputs.path, main.clone(), &read).ok()?;
        let overrides = params::parse_defines(
            &sources,
            &program.stmts,
            &inputs.defines,
            inputs.limits.in_editor,
        )
        .ok()?;
        let sharding = Sharding::Part(shard, stops.others.clone());
        eval::evaluate_part(
            &program,
            &inputs.checked,
            overrides,
            inputs.limits,
            Fusing::AsRecorded,
            sharding,
        )
        .ok()
    })();
    if part.is_none() {
        stops.all();
    }
    part
}
