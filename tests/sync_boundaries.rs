//! Differential test against the reference compiler at thread-block
//! boundaries: programs whose blocks start and end with synchronization
//! (semaphore acquire and release, memory, relaxed and port signal and wait,
//! flush, each with every `data_sync`) next to data ops, drawn at random
//! (seeded) and written twice, as a Python DSL script and as a `.mscl`
//! program. Where the `nop`s go at a block's edges is easy to get wrong
//! and invisible to every other test: the plans must be equal as JSON
//! values.
//!
//! Needs the reference compiler (../shared/reference-dsl and Python with
//! `sortedcontainers`, as CI has them); elsewhere it is reported ignored,
//! with the reason. `MSCLC_REFERENCE_SEED=S` draws with seed S (default
//! 2026), `MSCLC_SYNC_CASES=N` draws N programs (default 96), and
//! `MSCLC_SYNC_DIR=DIR` keeps them in DIR.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::sync::Mutex;

mod common;

use common::{Draw, Needs};

fn main() {
    common::run(vec![common::test(
        "sync_ops_at_thread_block_edges_match_the_reference",
        Needs::Reference,
        sync_ops_at_thread_block_edges_match_the_reference,
    )]);
}

#[derive(Clone, Copy, Debug)]
enum Sync {
    None,
    Before,
    After,
    Both,
}

const SYNCS: [Sync; 4] = [Sync::None, Sync::Before, Sync::After, Sync::Both];

impl Sync {
    fn mscl(self) -> &'static str {
        match self {
            Sync::None => "none",
            Sync::Before => "before",
            Sync::After => "after",
            Sync::Both => "both",
        }
    }
}

/// The channel a signal or wait goes over.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Over {
    Memory,
    Relaxed,
    Port,
}

const OVERS: [Over; 3] = [Over::Memory, Over::Relaxed, Over::Port];

#[derive(Clone, Debug)]
enum Op {
    /// A local copy of chunk k.
    Copy(u32),
    /// A memory-channel put of chunk k into the peer's output.
    Put(u32),
    Acquire(Sync),
    Release(Sync),
    /// Over memory channel 0 or 1 (or the port channel).
    Signal(Over, u32, Sync),
    Wait(Over, u32, Sync),
    Flush(Sync),
    /// A barrier of these blocks (one block: a `nop`).
    Barrier(Vec<usize>),
    /// A pipeline around these ops.
    Pipeline(Vec<Op>),
}

impl Op {
    fn is_sync(&self) -> bool {
        !matches!(self, Op::Copy(_) | Op::Put(_) | Op::Pipeline(_))
    }

    fn tb_list(tbs: &[usize]) -> String {
        let list: Vec<String> = tbs.iter().map(usize::to_string).collect();
        format!("[{}]", list.join(", "))
    }

    /// The op as lines of the Python DSL, on thread block `tb`, indented.
    fn python(&self, tb: usize, indent: &str, out: &mut String) {
        let ds = |s: &Sync| format!("data_sync=SyncType.{}", s.mscl());
        let relaxed = |over: &Over| {
            if *over == Over::Relaxed {
                "True"
            } else {
                "False"
            }
        };
        let line = match self {
            Op::Copy(k) => format!("rk.copy(out[{k}:{}], inp[{k}:{}], tb={tb})", k + 1, k + 1),
            Op::Put(k) => format!("mc[0].put(dst[{k}:{}], inp[{k}:{}], tb={tb})", k + 1, k + 1),
            Op::Acquire(s) => format!("sem.acquire(tb={tb}, {})", ds(s)),
            Op::Release(s) => format!("sem.release(tb={tb}, {})", ds(s)),
            Op::Signal(Over::Port, _, s) => format!("pc.signal(tb={tb}, {})", ds(s)),
            Op::Wait(Over::Port, _, s) => format!("pc.wait(tb={tb}, {})", ds(s)),
            Op::Signal(over, c, s) => {
                format!(
                    "mc[{c}].signal(tb={tb}, {}, relaxed={})",
                    ds(s),
                    relaxed(over)
                )
            }
            Op::Wait(over, c, s) => {
                format!(
                    "mc[{c}].wait(tb={tb}, {}, relaxed={})",
                    ds(s),
                    relaxed(over)
                )
            }
            Op::Flush(s) => format!("pc.flush(tb={tb}, {})", ds(s)),
            Op::Barrier(tbs) => format!("rk.barrier(tb_list={})", Op::tb_list(tbs)),
            Op::Pipeline(ops) => {
                let _ = writeln!(
                    out,
                    "{indent}with LoopIterationContext(unit=2**10, num_chunks=2):"
                );
                let inner = format!("{indent}    ");
                for op in ops {
                    op.python(tb, &inner, out);
                }
                return;
            }
        };
        let _ = writeln!(out, "{indent}{line}");
    }

    /// The op as `.mscl` statements, on thread block `tb`, indented.
    fn mscl(&self, tb: usize, indent: &str, out: &mut String) {
        let ds = |s: &Sync| format!("data_sync: {}", s.mscl());
        let relaxed = |over: &Over| {
            if *over == Over::Relaxed {
                ", relaxed: true"
            } else {
                ""
            }
        };
        let line = match self {
            Op::Copy(k) => format!("me.copy(me.output[{k}], me.input[{k}], tb: {tb})"),
            Op::Put(k) => format!("mc[0].put(rank(peer).output[{k}], me.input[{k}], tb: {tb})"),
            Op::Acquire(s) => format!("sem.acquire(tb: {tb}, {})", ds(s)),
            Op::Release(s) => format!("sem.release(tb: {tb}, {})", ds(s)),
            Op::Signal(Over::Port, _, s) => format!("pc.signal(tb: {tb}, {})", ds(s)),
            Op::Wait(Over::Port, _, s) => format!("pc.wait(tb: {tb}, {})", ds(s)),
            Op::Signal(over, c, s) => {
                format!("mc[{c}].signal(tb: {tb}, {}{})", ds(s), relaxed(over))
            }
            Op::Wait(over, c, s) => format!("mc[{c}].wait(tb: {tb}, {}{})", ds(s), relaxed(over)),
            Op::Flush(s) => format!("pc.flush(tb: {tb}, {})", ds(s)),
            Op::Barrier(tbs) => format!("me.barrier(tb_list: {})", Op::tb_list(tbs)),
            Op::Pipeline(ops) => {
                let _ = writeln!(
                    out,
                    "{indent}pipeline(unit_size: 1 << 10, num_chunks: 2) {{"
                );
                let inner = format!("{indent}    ");
                for op in ops {
                    op.mscl(tb, &inner, out);
                }
                let _ = writeln!(out, "{indent}}}");
                return;
            }
        };
        let _ = writeln!(out, "{indent}{line}");
    }
}

/// The draws of this test's programs.
trait DrawOps {
    fn sync(&mut self) -> Sync;
    fn sync_op(&mut self) -> Op;
    fn any_op(&mut self) -> Op;
    fn data_op(&mut self) -> Op;
}

impl DrawOps for Draw {
    fn sync(&mut self) -> Sync {
        SYNCS[self.below(SYNCS.len())]
    }

    fn sync_op(&mut self) -> Op {
        match self.below(5) {
            0 => Op::Acquire(self.sync()),
            1 => Op::Release(self.sync()),
            2 => Op::Signal(OVERS[self.below(3)], self.below(2) as u32, self.sync()),
            3 => Op::Wait(OVERS[self.below(3)], self.below(2) as u32, self.sync()),
            _ => Op::Flush(self.sync()),
        }
    }

    /// A sync or data op (no barrier or pipeline: a pipeline's body has
    /// neither).
    fn any_op(&mut self) -> Op {
        if self.below(2) == 0 {
            self.sync_op()
        } else {
            self.data_op()
        }
    }

    fn data_op(&mut self) -> Op {
        let k = self.below(4) as u32;
        if self.below(2) == 0 {
            Op::Copy(k)
        } else {
            Op::Put(k)
        }
    }
}

/// One program: each rank runs the same blocks, each a list of ops.
struct Case {
    instances: u32,
    fusion: bool,
    blocks: Vec<Vec<Op>>,
}

impl Case {
    /// Blocks that mostly start and end with a sync op, with data ops and
    /// more sync ops between; then every signal gets its wait (both ranks
    /// run the same ops, so a rank's signals are its peer's waits), added
    /// at the ends of blocks.
    fn draw(draw: &mut Draw) -> Case {
        let count = 1 + draw.below(3);
        let mut blocks: Vec<Vec<Op>> = (0..count)
            .map(|_| {
                let mut ops = Vec::new();
                for i in 0..1 + draw.below(4) {
                    let edge = i == 0;
                    ops.push(match draw.below(12) {
                        // A sync op or a barrier (of this block alone, a nop,
                        // or with the next), a pipeline of a few ops.
                        0 => Op::Barrier(vec![0]),
                        1 => Op::Pipeline((0..1 + draw.below(3)).map(|_| draw.any_op()).collect()),
                        _ if (edge && draw.below(5) > 0) || draw.below(2) == 0 => draw.sync_op(),
                        _ => draw.data_op(),
                    });
                }
                if draw.below(5) > 0 {
                    ops.push(draw.sync_op());
                }
                ops
            })
            .collect();
        // Barriers name real blocks: this one alone, or it and another.
        for (tb, ops) in blocks.iter_mut().enumerate() {
            for op in ops.iter_mut() {
                if let Op::Barrier(tbs) = op {
                    *tbs = vec![tb];
                    if count > 1 && draw.below(2) == 0 {
                        tbs.push((tb + 1) % count);
                        tbs.sort_unstable();
                    }
                }
            }
        }
        for port in [false, true] {
            let on = |over: &Over| (*over == Over::Port) == port;
            fn flat(ops: &[Op]) -> Vec<&Op> {
                ops.iter()
                    .flat_map(|op| match op {
                        Op::Pipeline(inner) => flat(inner),
                        op => vec![op],
                    })
                    .collect()
            }
            // Memory channels are counted each: a rank's channel k pairs
            // with the peer's channel k.
            for channel in 0..if port { 1 } else { 2 } {
                let count = |signals: bool| {
                    blocks
                        .iter()
                        .flat_map(|ops| flat(ops))
                        .filter(|op| match op {
                            Op::Signal(o, c, _) => signals && on(o) && (port || *c == channel),
                            Op::Wait(o, c, _) => !signals && on(o) && (port || *c == channel),
                            _ => false,
                        })
                        .count()
                };
                let (signals, waits) = (count(true), count(false));
                let over = if port {
                    Over::Port
                } else {
                    OVERS[draw.below(2)]
                };
                for _ in waits..signals {
                    let b = draw.below(blocks.len());
                    blocks[b].push(Op::Wait(over, channel, draw.sync()));
                }
                for _ in signals..waits {
                    let b = draw.below(blocks.len());
                    blocks[b].push(Op::Signal(over, channel, draw.sync()));
                }
            }
        }
        Case {
            instances: 1 + draw.below(2) as u32,
            fusion: draw.below(4) > 0,
            blocks,
        }
    }

    fn python(&self) -> String {
        let mut s = String::from(
            "from mscclpp.language.channel import *\n\
             from mscclpp.language.rank import *\n\
             from mscclpp.language.general import *\n\
             from mscclpp.language.program import *\n\
             from mscclpp.language.collectives import *\n\
             from mscclpp.language.loop import *\n",
        );
        let _ = writeln!(
            s,
            "with CollectiveProgram(\"sync_case\", TestCollective(2, 4, 4), 2, protocol=\"Simple\", instances={}, instr_fusion={}):",
            self.instances,
            if self.fusion { "True" } else { "False" }
        );
        s.push_str(
            "    for r in range(2):\n        peer = 1 - r\n        rk = Rank(r)\n        \
             inp = rk.get_input_buffer()\n        out = rk.get_output_buffer()\n        \
             dst = Rank(peer).get_output_buffer()\n        \
             mc = [MemoryChannel(peer, r), MemoryChannel(peer, r)]\n        \
             pc = PortChannel(peer, r)\n        sem = Semaphore(r, 0)\n",
        );
        for (tb, ops) in self.blocks.iter().enumerate() {
            for op in ops {
                op.python(tb, "        ", &mut s);
            }
        }
        s.push_str("    print(JSON())\n");
        s
    }

    fn mscl(&self) -> String {
        let mut s = format!(
            "program \"sync_case\" {{\n    collective = test_collective(2, input_size: 4, output_size: 4)\n    protocol = Simple\n    instances = {}\n    instr_fusion = {}\n}}\n",
            self.instances, self.fusion
        );
        s.push_str(
            "for r in 0..2 {\n    let peer = 1 - r\n    let me = rank(r)\n    \
             let mc = [memory_channel(peer, r), memory_channel(peer, r)]\n    let pc = port_channel(peer, r)\n    \
             let sem = semaphore(r, initial_value: 0)\n",
        );
        for (tb, ops) in self.blocks.iter().enumerate() {
            for op in ops {
                op.mscl(tb, "    ", &mut s);
            }
        }
        s.push_str("}\n");
        s
    }

    /// Whether some block starts or ends with a sync op (what this test is
    /// about).
    fn has_sync_edge(&self) -> bool {
        self.blocks.iter().any(|ops| {
            ops.first().is_some_and(|op| op.is_sync()) || ops.last().is_some_and(|op| op.is_sync())
        })
    }
}

/// The plan of `text` by `program` run in `dir` (as `name`), or why not.
fn plan_of(
    dir: &Path,
    name: &str,
    text: &str,
    run: impl FnOnce(&Path) -> std::process::Output,
) -> Result<serde_json::Value, String> {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("writes the case");
    let out = run(&path);
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("not JSON: {e}"))
}

fn sync_ops_at_thread_block_edges_match_the_reference() {
    let (_, pythonpath) = common::reference_setup().expect("the reference");
    let seed: u64 = common::env_number("MSCLC_REFERENCE_SEED", 2026);
    let count: usize = common::env_number("MSCLC_SYNC_CASES", 96);
    eprintln!("seed {seed} (MSCLC_REFERENCE_SEED={seed} repeats this run), {count} programs");
    let mut draw = Draw(seed);
    let cases: Vec<Case> = (0..count).map(|_| Case::draw(&mut draw)).collect();
    let edges = cases.iter().filter(|c| c.has_sync_edge()).count();
    assert!(
        edges * 4 >= count * 3,
        "only {edges} of {count} programs have a sync op at a block's edge"
    );
    // MSCLC_SYNC_DIR keeps the programs there, to look at.
    let keep = std::env::var_os("MSCLC_SYNC_DIR").map(std::path::PathBuf::from);
    let scratch = common::scratch("sync-boundaries");
    let dir = keep.unwrap_or_else(|| scratch.to_path_buf());
    std::fs::create_dir_all(&dir).unwrap();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    let both = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(case) = cases.get(i) else { break };
                let mscl = case.mscl();
                let theirs = plan_of(&dir, &format!("case{i}.py"), &case.python(), |p| {
                    Command::new("python3")
                        .arg(p)
                        .env("PYTHONPATH", &pythonpath)
                        .output()
                        .expect("python3 runs")
                });
                let ours = plan_of(&dir, &format!("case{i}.mscl"), &mscl, |p| {
                    Command::new(env!("CARGO_BIN_EXE_msclc"))
                        .arg(p)
                        .output()
                        .expect("msclc runs")
                });
                let problem = match (&ours, &theirs) {
                    (Ok(m), Ok(t)) => {
                        both.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        common::first_difference(m, t, "plan")
                    }
                    (Err(_), Err(_)) => None,
                    (Err(e), Ok(_)) => {
                        Some(format!("msclc rejects what the reference accepts:\n{e}"))
                    }
                    (Ok(_), Err(e)) => {
                        Some(format!("the reference rejects what msclc accepts:\n{e}"))
                    }
                };
                if let Some(p) = problem {
                    failures
                        .lock()
                        .unwrap()
                        .push(format!("program {i}: {p}\n{mscl}"));
                }
            });
        }
    });
    let mut failures = failures.into_inner().unwrap();
    failures.sort();
    let both = both.into_inner();
    eprintln!("{both} of {count} programs compiled by both, {edges} with sync ops at block edges");
    assert!(
        both * 2 >= count,
        "only {both} of {count} programs compiled by both"
    );
    assert!(
        failures.is_empty(),
        "seed {seed}: {} of {count} differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
