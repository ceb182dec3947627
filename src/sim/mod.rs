//! The CPU simulator: runs every thread block of every rank of a plan, two
//! executions back to back, and reports whether the collective's result is
//! right, where it deadlocks, or which two accesses race.
//!
//! Model (SEMANTICS.md §5, §11):
//! - a chunk is cut into parts so that thread block groups split it; each
//!   part holds the contributions summed into it (`value.rs`);
//! - a thread block is a coroutine over its ops; it blocks on `wait`,
//!   `sem_acquire`, `barrier` and on packets that have not arrived yet;
//! - races are judged by happens-before, not by the schedule: the ops of a
//!   block between two `nop`s/`barrier`s are unordered (they run on
//!   different threads); a non-relaxed `signal` publishes what its block
//!   finished before its last `nop`, and a `wait` makes it visible from the
//!   waiter's next `nop` on; semaphores likewise; barriers join all
//!   participants. Relaxed signal/wait order execution only.
//! - the user writes each rank's input before the rank's kernel starts and
//!   reads its result after the kernel ends; a second execution starts on a
//!   rank when all its blocks finished the first.
//!
//! - pipelines run two iterations, each over its share of the chunks the
//!   pipeline covers of each op's range (`pipeline_cover`);
//!   port transfers are done later by a proxy per port channel (`data.rs`);
//!   results are checked for the plan's reduce operation (`value.rs`).
//!
//! Simplification, said where it matters: packet slots are not checked for
//! races (their flags order them; a packet overwritten before it was read
//! shows as a deadlock).
//!
//! Files: `schedule.rs` (which block runs next, kernel ends, deadlocks),
//! `execute.rs` (one op: when it can run, and the synchronizing ops),
//! `data.rs` (buffer references, data ops), `user.rs` (inputs, results,
//! expectations), `race.rs` (happens-before checks and reports),
//! `clock.rs`, `value.rs`, `limits.rs` (executor-limit warnings).

mod budget;
mod clock;
mod data;
mod execute;
mod hash;
mod limits;
mod memory;
pub mod output;
mod race;
pub mod record;
mod report;
mod schedule;
mod signals;
mod user;
pub use report::{OpAt, Stuck, WrongResult};
pub use user::describe_sendrecv;
mod value;

use crate::ir::*;
pub use budget::{default_memory_limit, memory_estimate};
use clock::{Clocks, VClock};
use hash::HashMap;
use limits::check_limits;
pub use limits::{residency, Target, TARGETS};
use signals::Signals;
use std::collections::VecDeque;
use value::Contents;

/// What the simulator found.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// The result is right on every rank, in every execution.
    Verified,
    /// (Boxed, as `Race`: a verdict is passed up through every op run.)
    WrongResult(Box<WrongResult>),
    /// Every thread block that cannot go on, and why.
    Deadlock(Vec<Stuck>),
    Race(Box<Race>),
}

/// Two accesses to one memory location, at least one a write, unordered.
#[derive(Debug, Clone, PartialEq)]
pub struct Race {
    pub location: String,
    pub first: String,
    pub second: String,
    /// The two accesses' ops (none for the user's accesses around a kernel).
    pub ops: [Option<OpAt>; 2],
    /// What most likely lets the two race, where the simulator can tell.
    pub hint: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub verdict: Verdict,
    /// Dependencies on executor bugs and broken executor limits.
    pub warnings: Vec<crate::diag::Diagnostic>,
    pub ops_run: u64,
    pub executions: u32,
    /// For a verified SendRecv: the rank each rank receives from.
    pub sendrecv_sources: Option<Vec<u32>>,
}

/// How to simulate a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SimOptions {
    /// Back-to-back executions.
    pub executions: u32,
    /// Run with in-place (true) or out-of-place (false) buffers; `None`:
    /// the mode the plan declares.
    pub inplace: Option<bool>,
    /// Show the ops run so far on standard error (when it is a terminal
    /// and the run is long enough to need it).
    pub progress: bool,
    /// The bytes of a chunk the pipelines are run for: each runs as many
    /// iterations as the executor runs at that size
    /// ([`pipeline_iterations`]). `None`: [`PIPELINE_ITERATIONS`], which
    /// is what verifying a plan needs, whatever the size.
    pub pipeline_chunk: Option<u64>,
}

/// Runs shorter than this many ops show no progress bar.
const PROGRESS_FROM_OPS: u64 = 1 << 18;

/// Simulates `executions` back-to-back executions of `plan`, in the buffer
/// mode it declares.
pub fn simulate(plan: &Plan, executions: u32) -> Report {
    simulate_with(
        plan,
        &SimOptions {
            executions,
            inplace: None,
            progress: false,
            pipeline_chunk: None,
        },
    )
}

/// Simulates `plan` as `options` say.
pub fn simulate_with(plan: &Plan, options: &SimOptions) -> Report {
    simulate_run(plan, options, false).0
}

/// Simulates `plan` as `options` say, and keeps what its first execution
/// did for the timing model.
pub fn simulate_recorded<'p>(plan: &'p Plan, options: &SimOptions) -> (Report, record::Run<'p>) {
    let (report, run) = simulate_run(plan, options, true);
    (report, run.expect("a recorded simulation keeps its run"))
}

fn simulate_run<'p>(
    plan: &'p Plan,
    options: &SimOptions,
    record: bool,
) -> (Report, Option<record::Run<'p>>) {
    debug_assert!(plan.instances_made, "only the JSON writer makes instances");
    let executions = options.executions;
    let mut warnings = check_limits(plan);
    let mut sim = Sim::new(plan, executions, options.pipeline_chunk);
    if record {
        sim.start_recording();
    }
    sim.inplace = options.inplace.unwrap_or(plan.collective.inplace);
    let total: u64 =
        sim.threads.iter().map(|t| t.ops.len() as u64).sum::<u64>() * u64::from(executions);
    if options.progress
        && total >= PROGRESS_FROM_OPS
        && std::io::IsTerminal::is_terminal(&std::io::stderr())
    {
        let bar = indicatif::ProgressBar::new(total).with_style(
            indicatif::ProgressStyle::with_template(
                "simulating {bar:30} {pos}/{len} ops, {eta} left",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        sim.progress = Some(bar);
    }
    let mut verdict = sim.run();
    if let Some(bar) = sim.progress.take() {
        bar.finish_and_clear();
    }
    let mut run = sim.record.take().map(|mut recorder| {
        if matches!(verdict, Verdict::Deadlock(_)) {
            recorder.run.stuck = sim.stuck_in_first_execution();
        }
        recorder.run
    });
    let mut sendrecv_sources = None;
    if verdict == Verdict::Verified {
        warnings.extend(sim.unconsumed_signals());
        warnings.extend(sim.unbalanced_semaphores());
        match sim.sendrecv_permutation() {
            Ok(sources) => sendrecv_sources = sources,
            Err(wrong) => verdict = wrong,
        }
    }
    if let Some(run) = &mut run {
        run.verified = verdict == Verdict::Verified;
    }
    let report = Report {
        verdict,
        warnings,
        ops_run: sim.ops_run,
        executions,
        sendrecv_sources,
    };
    (report, run)
}

// ---------------------------------------------------------------------------
// Plan facts the simulator looks up.

/// Iterations the simulator runs of every pipeline: enough to check that
/// each iteration is handed from one block to the next, whatever the size.
pub const PIPELINE_ITERATIONS: u32 = 2;

/// The most back-to-back executions `msclc sim --executions` runs: each
/// takes as long again, and a semaphore a launch runs down runs out
/// within as many launches as its initial value.
pub const MAX_EXECUTIONS: u32 = 1024;

/// The most iterations of a pipeline a timed run of a large plan
/// simulates: past it, the pipeline's bytes are cut in this many pieces
/// (docs/timing.md).
pub const MAX_TIMED_ITERATIONS: u32 = 1024;

/// Ops a timed run's pipelines may unroll to in all before they are cut
/// to [`MAX_TIMED_ITERATIONS`]: within it every iteration is simulated, up
/// to [`MAX_PARTS`] (a chunk's parts, which the iterations' pieces are cut
/// in), so pipelines that hand units to each other in other counts are
/// found to hang or race as they would (in a fraction of a second).
const EXACT_TIMED_OPS: u64 = 1 << 18;

/// The most parts a chunk is cut in (`parts_per_chunk`).
const MAX_PARTS: u64 = 4096;

/// The most iterations the simulator runs of any pipeline of `plan` at
/// chunks of `chunk` bytes: every one the executor runs up to
/// [`MAX_PARTS`] where the pipelines then unroll to at most
/// [`EXACT_TIMED_OPS`] ops, else [`MAX_TIMED_ITERATIONS`].
pub fn iteration_cap(plan: &Plan, chunk: Option<u64>) -> u32 {
    let Some(chunk) = chunk else {
        return PIPELINE_ITERATIONS;
    };
    let unrolled = plan
        .ranks
        .iter()
        .flat_map(|r| &r.threadblocks)
        .flat_map(|tb| &tb.ops)
        .filter_map(|op| Some((op.body().len() as u64, op.iter_context()?)))
        .map(|(body, context)| body.saturating_mul(context.iterations(chunk).min(MAX_PARTS)))
        .fold(0u64, u64::saturating_add);
    match unrolled <= EXACT_TIMED_OPS {
        true => MAX_PARTS as u32,
        false => MAX_TIMED_ITERATIONS,
    }
}

/// The iterations `pipeline` runs: at chunks of `chunk` bytes, what the
/// executor runs, `ceil(num_chunks * chunk / unit_size)`, at most `cap`
/// ([`iteration_cap`]); with no size, [`PIPELINE_ITERATIONS`].
pub fn pipeline_iterations(pipeline: &Op, chunk: Option<u64>, cap: u32) -> u32 {
    match (chunk, pipeline.iter_context()) {
        (Some(chunk), Some(context)) => context.iterations(chunk).clamp(1, u64::from(cap)) as u32,
        _ => PIPELINE_ITERATIONS,
    }
}

/// A thread block's ops in the order it runs them: the plan's own list,
/// or, where it has a pipeline, a flattened list with the pipeline's body
/// repeated once per iteration, each op with its iteration and the
/// pipeline's count of them. (Most blocks have none, and a plan can have
/// millions of blocks: they borrow.)
enum OpList<'p> {
    Plan(&'p [Op]),
    Unrolled(Vec<(&'p Op, Option<Iteration>)>),
}

/// Iteration `index` of a pipeline that runs `of` of them, which together
/// cover `covers.0 / covers.1` chunks of each op's range.
#[derive(Debug, Clone, Copy)]
struct Iteration {
    index: u32,
    of: u32,
    covers: (u64, u64),
}

/// What a pipeline's iterations cover of each op's range, in chunks as a
/// fraction: the executor's `n = ceil(num_chunks * chunk / unit_size)`
/// iterations cover `n` units, so at chunks of `chunk` bytes `n * unit /
/// chunk` chunks; with no size, `num_chunks` chunks (where a unit is much
/// smaller than a chunk: at sizes where one unit holds more, more is
/// covered).
fn pipeline_cover(pipeline: &Op, chunk: Option<u64>) -> (u64, u64) {
    let Some(context) = pipeline.iter_context() else {
        return (0, 1);
    };
    match chunk {
        Some(chunk) if chunk > 0 => {
            let units = context.iterations(chunk);
            (units.saturating_mul(context.unit_size.max(1)), chunk)
        }
        _ => (u64::from(context.num_chunks), 1),
    }
}

impl<'p> OpList<'p> {
    /// `ops`, pipelines run as at chunks of `chunk` bytes
    /// ([`pipeline_iterations`]).
    fn new(ops: &'p [Op], chunk: Option<u64>, cap: u32) -> OpList<'p> {
        if !ops.iter().any(|op| op.name == OpName::Pipeline) {
            return OpList::Plan(ops);
        }
        let mut out = Vec::new();
        for op in ops {
            if op.name == OpName::Pipeline {
                let of = pipeline_iterations(op, chunk, cap);
                let covers = pipeline_cover(op, chunk);
                for index in 0..of {
                    let it = Some(Iteration { index, of, covers });
                    out.extend(op.body().iter().map(|inner| (inner, it)));
                }
            } else {
                out.push((op, None));
            }
        }
        OpList::Unrolled(out)
    }

    fn len(&self) -> usize {
        match self {
            OpList::Plan(ops) => ops.len(),
            OpList::Unrolled(ops) => ops.len(),
        }
    }

    /// The `i`-th op run.
    fn op(&self, i: usize) -> &'p Op {
        match self {
            OpList::Plan(ops) => &ops[i],
            OpList::Unrolled(ops) => ops[i].0,
        }
    }

    /// The pipeline iteration of the `i`-th op run, if it is in a pipeline.
    fn iteration(&self, i: usize) -> Option<Iteration> {
        match self {
            OpList::Plan(_) => None,
            OpList::Unrolled(ops) => ops.get(i).and_then(|o| o.1),
        }
    }
}

/// Where a rank's buffer chunk physically lives, with the in-place aliasing
/// the MSCCL++ test harness uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Place {
    rank: u32,
    kind: BufferKind,
    chunk: u32,
}

/// A memory location: a part of a chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Loc {
    place: Place,
    part: u32,
}

/// An access for race checks: who, in which of its epochs, by which op.
/// Indices are u32 (a plan has fewer threads and ops than that; the
/// reader's limits see to it): one is kept per cell, and cells are many.
#[derive(Debug, Clone, Copy)]
struct Access {
    /// The thread that accessed: a block, a user, or a port channel's proxy.
    thread: u32,
    epoch: u32,
    /// The block thread whose op it was, and the op (`u32::MAX` for the
    /// user's accesses around a kernel).
    by: u32,
    op: u32,
    execution: u32,
    write: bool,
}

impl Access {
    fn thread(&self) -> usize {
        self.thread as usize
    }
}

#[derive(Default)]
struct Cell {
    value: Option<Contents>,
    /// The last packet that landed here (LL protocols), if the last write
    /// was one; few cells of a plan are packet slots.
    packet: Option<Box<Packet>>,
    last_write: Option<Access>,
    /// The reads since the last write; usually one.
    reads: smallvec::SmallVec<[Access; 1]>,
}

/// A packet as its reader finds it: the execution whose packet it is, and
/// what its writer had done when it wrote it (execution order only), the
/// writer and its epoch: a reader that sees the packet's flag is after all
/// of that.
struct Packet {
    execution: u32,
    clock: VClock,
    writer: usize,
    epoch: u32,
    /// The writer's recorded event (`record::NONE` when not recorded).
    event: u32,
}

struct Thread<'p> {
    rank: u32,
    tb: u32,
    /// The block's ops, pipelines unrolled.
    ops: OpList<'p>,
    pc: usize,
    execution: u32,
    epoch: u32,
    clock: Clocks,
    /// Clocks learnt by a wait or acquire, visible from the next sync on.
    pending: Vec<Clocks>,
    /// Barrier arrivals per barrier id (the generation of the next one).
    barrier_count: HashMap<u32, u32>,
    done: bool,
    /// Waiting for the rest of the rank to finish this execution.
    at_kernel_end: bool,
}

struct Sim<'p> {
    plan: &'p Plan,
    executions: u32,
    parts: u32,
    threads: Vec<Thread<'p>>,
    /// One user thread per rank, after the block threads.
    users: usize,
    /// Each rank's block threads: `rank_threads[r]..rank_threads[r + 1]`.
    rank_threads: Vec<usize>,
    /// Per rank: its blocks at the end of the current execution.
    at_end: Vec<usize>,
    memory: memory::Memory,
    /// Signals in flight to each channel end: the signallers' clocks.
    signals: Signals,
    /// Per (rank, semaphore): its value, and the releases not yet taken
    /// (their clocks and recorded events).
    semaphores: HashMap<(u32, u32), (i64, Releases)>,
    /// (rank, barrier id, generation) -> arrivals and their clocks.
    barriers: HashMap<(u32, u32, u32), Barrier>,
    ops_run: u64,
    /// Per rank: what its user knows (the clock of its last kernel's end).
    user_clocks: Vec<Clocks>,
    /// Per (rank, port channel): its proxy's thread index and the number of
    /// transfers issued on it so far (the proxy's epoch).
    proxies: HashMap<(u32, u32), (usize, u32)>,
    /// While a port transfer runs: its proxy thread and epoch.
    port_transfer: Option<(usize, u32)>,
    /// The reduction the plan's results are checked for (its first one).
    reduce_op: ReduceOp,
    /// What the check of a shared sum against an expected result found
    /// (see `user.rs`), with the sum, kept alive.
    checked: HashMap<CheckedKey, (Contents, Option<String>)>,
    /// SendRecv: the rank each rank's result came from.
    sendrecv_sources: Vec<Option<u32>>,
    /// Whether input and output alias, as the test harness lays them out.
    inplace: bool,
    /// The progress bar of a long run on a terminal.
    progress: Option<indicatif::ProgressBar>,
    /// The first execution's events, when the timing model asked for them.
    record: Option<Box<record::Recorder<'p>>>,
    /// The first wrong result a user read, and its execution, held while
    /// the run goes on: a deadlock found later among the executions begun
    /// is what the executor shows of such a plan (it hangs, and no result
    /// comes back), so it is the verdict. No execution starts after the
    /// wrong one, so blocks stuck only in later ones (waiting for peers
    /// never launched, or for each other) leave the wrong result the
    /// verdict.
    wrong: Option<(u32, Verdict)>,
}

impl<'p> Sim<'p> {
    fn new(plan: &'p Plan, executions: u32, pipeline_chunk: Option<u64>) -> Sim<'p> {
        let cap = iteration_cap(plan, pipeline_chunk);
        let mut threads = Vec::new();
        let mut rank_threads = vec![0];
        for (r, rank) in plan.ranks.iter().enumerate() {
            rank_threads.push(rank_threads[r] + rank.threadblocks.len());
            for (t, tb) in rank.threadblocks.iter().enumerate() {
                threads.push(Thread {
                    rank: r as u32,
                    tb: t as u32,
                    ops: OpList::new(&tb.ops, pipeline_chunk, cap),
                    pc: 0,
                    execution: 1,
                    epoch: 0,
                    clock: Clocks::zero(),
                    pending: Vec::new(),
                    barrier_count: HashMap::default(),
                    done: false,
                    at_kernel_end: false,
                });
            }
        }
        let users = threads.len();
        // Port transfers run on a host proxy, one per port channel, which
        // reads the source some time after the block pushed the request.
        let mut proxies = HashMap::default();
        for (r, rank) in plan.ranks.iter().enumerate() {
            for c in 0..rank.port_peers.len() {
                let index = users + plan.ranks.len() + proxies.len();
                proxies.insert((r as u32, c as u32), (index, 0));
            }
        }
        let parts = parts_per_chunk(plan, pipeline_chunk, cap);
        let mut sim = Sim {
            plan,
            executions,
            parts,
            threads,
            users,
            rank_threads,
            at_end: vec![0; plan.ranks.len()],
            memory: memory::Memory::new(plan, parts),
            signals: Signals::new(plan),
            semaphores: HashMap::default(),
            barriers: HashMap::default(),
            ops_run: 0,
            user_clocks: vec![Clocks::zero(); plan.ranks.len()],
            reduce_op: plan.reduce_op(),
            proxies,
            port_transfer: None,
            checked: HashMap::default(),
            sendrecv_sources: vec![None; plan.ranks.len()],
            inplace: plan.collective.inplace,
            progress: None,
            wrong: None,
            record: None,
        };
        for (r, rank) in plan.ranks.iter().enumerate() {
            for (s, init) in rank.semaphores.iter().enumerate() {
                sim.semaphores
                    .insert((r as u32, s as u32), (*init, VecDeque::new()));
            }
        }
        sim
    }

    fn is_user(&self, thread: usize) -> bool {
        (self.users..self.users + self.plan.ranks.len()).contains(&thread)
    }

    /// The physical place of `rank`'s chunk `chunk` of buffer `kind`.
    fn place(&self, rank: u32, kind: BufferKind, chunk: u32) -> Place {
        let c = &self.plan.collective;
        let per_rank = c.input_chunks;
        let aliased = self.inplace && c.name != "test";
        match (kind, c.name) {
            (BufferKind::Input, "allgather") if aliased => Place {
                rank,
                kind: BufferKind::Output,
                chunk: rank * per_rank + chunk,
            },
            (BufferKind::Output, "allreduce" | "alltoall") if aliased => Place {
                rank,
                kind: BufferKind::Input,
                chunk,
            },
            (BufferKind::Output, "reducescatter") if aliased => Place {
                rank,
                kind: BufferKind::Input,
                chunk: rank * c.output_chunks + chunk,
            },
            _ => Place { rank, kind, chunk },
        }
    }

    /// With a double scratch buffer, even executions use the second half
    /// (the intent; today's executor skips some ops, SEMANTICS.md §9.6).
    fn scratch_half(&self, execution: u32, place: Place) -> Place {
        if place.kind == BufferKind::Scratch
            && self.plan.options.use_double_scratch_buffer
            && execution.is_multiple_of(2)
        {
            let size = self.plan.ranks[place.rank as usize].scratch_chunks;
            return Place {
                chunk: place.chunk + size,
                ..place
            };
        }
        place
    }

    // -- the run ------------------------------------------------------------
}

impl Drop for Sim<'_> {
    fn drop(&mut self) {
        clock::forget_folds();
    }
}

/// A barrier's arrivals in one generation: who came, the clocks of those
/// not yet joined, and the join of the others.
#[derive(Default)]
struct Barrier {
    arrived: Vec<usize>,
    clocks: Vec<Clocks>,
    joined: Clocks,
    /// Of each arrival, its last recorded event before it (when recorded).
    last_events: Vec<u32>,
}

/// A semaphore's releases not yet acquired: each one's clock and recorded
/// event.
type Releases = VecDeque<(Clocks, u32)>;

/// A check of a shared sum: its identity and reduction, what it was checked
/// against, in which execution.
type CheckedKey = ((usize, u8), ChunkSources, u32);

enum Step {
    Ran,
    Blocked,
    Problem(Verdict),
}

/// Parts per chunk: enough for every share of every op (its thread block
/// group's part of its range, and of that each pipeline iteration's) to be
/// whole parts, within reason: past 4,096 parts a share's ends round to
/// parts. Pipelines run as at chunks of `chunk` bytes.
pub(super) fn parts_per_chunk(plan: &Plan, chunk: Option<u64>, cap: u32) -> u32 {
    fn gcd(a: u64, b: u64) -> u64 {
        if b == 0 {
            a
        } else {
            gcd(b, a % b)
        }
    }
    /// Makes `parts` a multiple of what cutting `chunks` chunks in
    /// `pieces` whole pieces needs, within reason.
    fn cut(parts: &mut u64, chunks: u64, pieces: u64) {
        let need = pieces / gcd(pieces, chunks.max(1));
        let lcm = *parts / gcd(*parts, need) * need;
        if lcm <= MAX_PARTS {
            *parts = lcm;
        }
    }
    // `pipeline`: the iterations of the pipeline the ops are in and the
    // chunks it covers.
    fn walk(ops: &[Op], pipeline: Option<(u64, u64)>, at: (Option<u64>, u32), parts: &mut u64) {
        for op in ops {
            if op.name == OpName::Pipeline {
                let chunks = op.iter_context().map_or(0, |c| c.num_chunks);
                let iterations = pipeline_iterations(op, at.0, at.1);
                let within = Some((u64::from(iterations), u64::from(chunks)));
                walk(op.body(), within, at, parts);
                continue;
            }
            // The range (size chunks of `parts` parts) must divide into
            // the group's shares, and what a pipeline covers of each into
            // its iterations' pieces.
            let size = op.src.first().or(op.dst.first()).map_or(1, |r| r.size);
            cut(
                parts,
                u64::from(size),
                u64::from(op.tbg.map_or(1, |g| g.size.max(1))),
            );
            if let Some((iterations, chunks)) = pipeline {
                cut(parts, chunks, iterations);
            }
        }
    }
    let mut parts = 1;
    for r in &plan.ranks {
        for tb in &r.threadblocks {
            walk(&tb.ops, None, (chunk, cap), &mut parts);
        }
    }
    parts as u32
}
