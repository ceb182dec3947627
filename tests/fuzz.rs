//! Generator-based fuzzing of the msclc binary, run as a user runs it.
//!
//! tests/no_panic.rs and tests/plan_json.rs mutate the examples and plans
//! in process, byte by byte and number by number. This file *builds* its
//! inputs instead:
//!
//! - `.mscl` programs from the language's grammar and vocabulary
//!   (docs/language.md, grammar/mscl.lalrpop, src/vocab.rs). Most are well
//!   typed, so that they get past the checker into the evaluator, the passes,
//!   the back ends and the simulator; some carry deliberate mistakes (wrong
//!   types, missing or unknown arguments, undefined names);
//! - pathological shapes: nesting thousands of levels deep, long operator
//!   chains, huge literals, control characters and unicode, long lines;
//! - JSON plans that the compiler emitted for the examples, structurally
//!   mutated (fields dropped, duplicated, retyped; huge and negative numbers;
//!   deep arrays; enormous declared counts).
//!
//! Every input runs through the real binary (`check`, `compile`, `compile
//! --emit cuda`, `sim`; some pathological ones through `fmt` too) under a wall-clock limit and an address-space cap,
//! and must end on its own with exit code 0, 1 or 2: no panic, no signal
//! (stack overflow, out of memory), no hang. A program that fails to compile
//! must say where (`NAME.mscl:LINE:COL`); a plan the compiler wrote must
//! read back and simulate to the same verdict as the program.
//!
//! By default (and in CI) the tests run 600 programs, 600 plans and 120
//! pathological programs: about 20 s in a debug build on two cores. Run
//! longer with, for example,
//! `MSCLC_FUZZ_CASES=20000 MSCLC_FUZZ_SEED=7 cargo test --release --test fuzz -- --nocapture`.
//! `MSCLC_FUZZ_CASES` is the number of programs and of plans; the
//! pathological shapes get a fifth as many. Each case draws from its own
//! generator, seeded by the seed, the test and the case number, so a longer
//! run begins with the inputs of a shorter one; a failing input is kept on
//! disk and its path is in the failure message.
//!
//! `MSCLC_FUZZ_SHOW=1` prints every input and how its run ended.
//!
//! Inputs that reproduce the crashes listed in [`KNOWN`] are generated only
//! with `MSCLC_FUZZ_KNOWN=1` (the ignored tests at the end reproduce them),
//! so that CI stays green until they are fixed.

#![cfg(unix)]

use serde_json::Value;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

// ------------------------------------------------------------------ settings

/// The seed when `MSCLC_FUZZ_SEED` is not set: fixed, so that CI runs the
/// same inputs every time.
const DEFAULT_SEED: u64 = 0x6d73_636c_6675_7a7a;

/// Programs (and plans) per test when `MSCLC_FUZZ_CASES` is not set: sized
/// so that the whole file takes well under a minute in a debug build on two
/// cores.
const DEFAULT_CASES: usize = if cfg!(debug_assertions) { 600 } else { 2000 };

/// A run still going after this long is a hang. Every generated program is
/// built to finish in well under a second (see [`ITERATION_BUDGET`]).
const TIME_LIMIT: Duration = Duration::from_secs(20);

/// Address space of one run, in KiB (`ulimit -v`): 4 GB. The binary reserves
/// a 1 GB stack for its command thread; anything that needs more than the
/// rest is a runaway allocation.
const MEMORY_LIMIT_KB: u64 = 4_000_000;

/// `--max-ops` for every run: a loop that emits ops ends soon.
const MAX_OPS: &str = "2000";

/// `--max-memory` for `sim`: the simulator refuses plans it estimates above
/// this, so anything it accepts must run within [`MEMORY_LIMIT_KB`] (a
/// fourfold margin over its estimate).
const SIM_MAX_MEMORY: &str = "1G";

/// Shapes that reproduce known crashes (reported, not yet fixed) are made
/// only when this variable is `1`. See [`KNOWN`].
const KNOWN_ENV: &str = "MSCLC_FUZZ_KNOWN";

/// The crashes, hangs and slow inputs this fuzzer found (each has an
/// ignored test below). The generators leave their shapes out unless
/// `MSCLC_FUZZ_KNOWN=1`; the last two they never make, as they cannot tell
/// a hang from slowness there.
const KNOWN: &[&str] = &[
    "a recursive function whose body nests ~500 levels (each under the limit of 1000) overflows the 1 GB stack of a debug build at 256 calls deep",
    "sim keeps sums as lists of terms: a chunk reduced into itself a few dozen times takes gigabytes (the memory estimate admits it)",
    "a function calling itself twice runs 2^n calls; calls now count with loop iterations, and it ends in E0401, in 6 s in a release build but 26 s in a debug one (past this fuzzer's 20 s)",
    "the iteration limit counts iterations, not the work in each: a loop over a large string or list runs for hours",
];

fn known_enabled() -> bool {
    std::env::var(KNOWN_ENV).is_ok_and(|v| v == "1")
}

/// The seed and the number of cases, from the environment, said on stderr
/// so that a failure can be reproduced.
fn config(test: &str, per_program: usize) -> (u64, usize) {
    let seed = match std::env::var("MSCLC_FUZZ_SEED") {
        Ok(s) => {
            let s = s.trim();
            let parsed = match s.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16),
                None => s.parse(),
            };
            parsed.unwrap_or_else(|_| panic!("MSCLC_FUZZ_SEED={s} is not a number"))
        }
        Err(_) => DEFAULT_SEED,
    };
    let programs = match std::env::var("MSCLC_FUZZ_CASES") {
        Ok(n) => n
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("MSCLC_FUZZ_CASES={n} is not a number")),
        Err(_) => DEFAULT_CASES,
    };
    let cases = (programs / per_program).max(1);
    if known_enabled() {
        eprintln!("known problems, included:\n  {}", KNOWN.join("\n  "));
    }
    eprintln!(
        "fuzz {test}: MSCLC_FUZZ_SEED={seed} MSCLC_FUZZ_CASES={programs}: {cases} cases{}",
        if known_enabled() {
            " (known crashes included)"
        } else {
            ""
        }
    );
    (seed, cases)
}

// ----------------------------------------------------------------- the RNG

/// A small deterministic generator (xorshift64, as in tests/no_panic.rs),
/// seeded through splitmix64 so that neighbouring seeds give unrelated
/// streams.
#[derive(Clone)]
struct Rng(u64);

impl Rng {
    fn new(seed: u64, stream: u64, case: u64) -> Rng {
        let mut z = seed ^ stream.rotate_left(32) ^ case.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        Rng((z ^ (z >> 31)) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform in `0..n` (0 when `n` is 0).
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }
}

// ------------------------------------------------------- running the binary

/// What the input of a run is, for judging its exit.
#[derive(Clone, Copy, PartialEq)]
enum Input {
    /// A `.mscl` program: a failed compilation must point into it.
    Source,
    /// A JSON plan: read by `sim` only.
    Plan,
}

/// What one run of the binary did.
struct Outcome {
    /// `None`: killed after [`TIME_LIMIT`].
    status: Option<ExitStatus>,
    elapsed: Duration,
    stdout: String,
    stderr: String,
}

impl Outcome {
    fn code(&self) -> Option<i32> {
        self.status.and_then(|s| s.code())
    }
}

/// Runs the binary on files in a scratch directory, judges every exit, and
/// keeps what failed.
struct Harness {
    test: String,
    dir: PathBuf,
    failures: Vec<String>,
    /// The slowest runs, to show inputs that are slow without hanging.
    slowest: Vec<(Duration, String)>,
    runs: usize,
    started: Instant,
    /// `MSCLC_FUZZ_SHOW=1`: print every input and how its run ended.
    show: bool,
    /// How runs ended, by command and exit code: how deep the inputs get.
    tally: std::collections::BTreeMap<String, usize>,
}

impl Harness {
    fn new(test: &str) -> Harness {
        let dir = std::env::temp_dir().join(format!("msclc-fuzz-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        Harness {
            test: test.to_string(),
            dir,
            failures: Vec::new(),
            slowest: Vec::new(),
            runs: 0,
            started: Instant::now(),
            show: std::env::var("MSCLC_FUZZ_SHOW").is_ok_and(|v| v == "1"),
            tally: Default::default(),
        }
    }

    fn write(&self, name: &str, bytes: impl AsRef<[u8]>) {
        std::fs::write(self.dir.join(name), bytes).expect("writable scratch directory");
    }

    /// Runs `msclc ARGS` in the scratch directory under the time limit and
    /// the memory cap. Output goes to files, not pipes: a diagnostic that
    /// quotes a megabyte-long line must not block the child while we wait.
    fn exec(&mut self, args: &[String]) -> Outcome {
        let file = |name: &str| std::fs::File::create(self.dir.join(name)).expect("output file");
        let start = Instant::now();
        // `ulimit -v` in a shell that then execs the binary: the cap needs no
        // crate, and the child we kill on a timeout is msclc itself.
        let mut child = Command::new("/bin/sh")
            .arg("-c")
            .arg(format!("ulimit -v {MEMORY_LIMIT_KB} && exec \"$0\" \"$@\""))
            .arg(env!("CARGO_BIN_EXE_msclc"))
            .args(args)
            .current_dir(&self.dir)
            .env("RUST_BACKTRACE", "0")
            .stdin(Stdio::null())
            .stdout(file("stdout.txt"))
            .stderr(file("stderr.txt"))
            .spawn()
            .expect("/bin/sh runs");
        // Most runs take milliseconds: poll often at first, then less.
        let mut pause = Duration::from_micros(250);
        let status = loop {
            if let Some(status) = child.try_wait().expect("waitable child") {
                break Some(status);
            }
            if start.elapsed() > TIME_LIMIT {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(20));
        };
        let elapsed = start.elapsed();
        let read = |name: &str| {
            let bytes = std::fs::read(self.dir.join(name)).unwrap_or_default();
            String::from_utf8_lossy(&bytes).into_owned()
        };
        self.runs += 1;
        Outcome {
            status,
            elapsed,
            stdout: read("stdout.txt"),
            stderr: read("stderr.txt"),
        }
    }

    /// Runs `args` (which name `input`, a file in the scratch directory),
    /// judges the exit, and records a failure if it is wrong.
    fn run(&mut self, case: &str, input: &str, kind: Input, args: &[String]) -> Outcome {
        let outcome = self.exec(args);
        let command = match args.iter().position(|a| a == "--emit") {
            Some(_) => "compile --emit cuda",
            None => args[0].as_str(),
        };
        let ended = match outcome.code() {
            Some(code) => format!(
                "{command} {input_kind} exit {code}",
                input_kind = if kind == Input::Plan {
                    "plan"
                } else {
                    "program"
                }
            ),
            None => format!("{command} crashed or hung"),
        };
        *self.tally.entry(ended).or_default() += 1;
        if self.show {
            let text = std::fs::read(self.dir.join(input)).unwrap_or_default();
            eprintln!(
                "==== {case}: msclc {} -> {:?} in {:.3} s\n{}\n---- stderr\n{}",
                args.join(" "),
                outcome.code(),
                outcome.elapsed.as_secs_f64(),
                clip(&String::from_utf8_lossy(&text), 3000),
                clip(&outcome.stderr, 600)
            );
        }
        self.note_time(case, args, outcome.elapsed);
        if let Some(problem) = judge(kind, args, &outcome) {
            self.fail(case, input, args, &problem, &outcome);
        }
        outcome
    }

    fn note_time(&mut self, case: &str, args: &[String], elapsed: Duration) {
        self.slowest
            .push((elapsed, format!("{case}: msclc {}", args.join(" "))));
        self.slowest.sort_by_key(|s| std::cmp::Reverse(s.0));
        self.slowest.truncate(3);
    }

    /// Keeps the input under a name of its own and describes the failure.
    fn fail(&mut self, case: &str, input: &str, args: &[String], problem: &str, o: &Outcome) {
        let ext = Path::new(input)
            .extension()
            .map_or(String::new(), |e| format!(".{}", e.to_string_lossy()));
        let kept = self
            .dir
            .join(format!("failure-{}{ext}", self.failures.len() + 1));
        let _ = std::fs::copy(self.dir.join(input), &kept);
        let text = String::from_utf8_lossy(&std::fs::read(&kept).unwrap_or_default()).into_owned();
        let shown: String = text.chars().take(2000).collect();
        let command: Vec<String> = args
            .iter()
            .map(|a| {
                if a == input {
                    kept.display().to_string()
                } else {
                    format!("{a:?}")
                }
            })
            .collect();
        let stderr_tail: String = {
            let chars: Vec<char> = o.stderr.chars().collect();
            chars[chars.len().saturating_sub(800)..].iter().collect()
        };
        self.failures.push(format!(
            "{case}: {problem} after {:.1} s\n  command: msclc {}\n  input kept at {} ({} bytes)\n  stderr (end):\n{}\n  input (first 2000 chars):\n{shown}",
            o.elapsed.as_secs_f64(),
            command.join(" "),
            kept.display(),
            text.len(),
            indent(&stderr_tail),
        ));
    }

    /// Says what was run, how long it took and the slowest runs; fails the
    /// test with every failure, keeping the scratch directory for them.
    fn finish(self) {
        eprintln!(
            "fuzz {}: {} runs in {:.1} s; slowest:",
            self.test,
            self.runs,
            self.started.elapsed().as_secs_f64()
        );
        for (t, what) in &self.slowest {
            eprintln!("  {:.2} s  {}", t.as_secs_f64(), clip(what, 300));
        }
        let ends: Vec<String> = self
            .tally
            .iter()
            .map(|(k, n)| format!("{k}: {n}"))
            .collect();
        eprintln!("  how runs ended: {}", ends.join(", "));
        if self.failures.is_empty() {
            let _ = std::fs::remove_dir_all(&self.dir);
            return;
        }
        let shown: Vec<&String> = self.failures.iter().take(8).collect();
        panic!(
            "{} failing input(s) (kept in {}); the first {}:\n\n{}",
            self.failures.len(),
            self.dir.display(),
            shown.len(),
            shown
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join("\n\n")
        );
    }
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn clip(text: &str, n: usize) -> String {
    if text.chars().count() <= n {
        text.to_string()
    } else {
        text.chars().take(n).collect::<String>() + "..."
    }
}

/// What is wrong with a run, if anything.
fn judge(kind: Input, args: &[String], o: &Outcome) -> Option<String> {
    let Some(status) = o.status else {
        return Some(format!(
            "still running after {} s (killed)",
            TIME_LIMIT.as_secs()
        ));
    };
    if let Some(signal) = status.signal() {
        let name = match signal {
            6 => "SIGABRT: a stack overflow or a failed allocation",
            9 => "SIGKILL",
            11 => "SIGSEGV",
            _ => "",
        };
        return Some(format!("killed by signal {signal} {name}"));
    }
    if o.stderr.contains("panicked") {
        return Some("panicked".to_string());
    }
    let code = status.code().unwrap_or(-1);
    if !(0..=2).contains(&code) {
        return Some(format!("exit code {code}"));
    }
    let sim = args.first().is_some_and(|a| a == "sim");
    if code == 2 && o.stderr.contains("Usage:") {
        // clap's usage errors: the test built a bad command line.
        return Some("exit code 2, a usage error of the command line".to_string());
    }
    if code == 2 && !o.stderr.starts_with("error[E08") {
        // What msclc could not do (a bad `-D`, a memory bound): one error
        // of the E08xx codes.
        return Some("exit code 2 without `error[E08..]: ...`".to_string());
    }
    // Every command exits 1 on a wrong program or plan; `sim` prints its
    // verdict on stdout when it could run the input, and nothing when it
    // could not compile or read it (exit 1) or not afford it (exit 2).
    let refused = if sim {
        code != 0 && o.stdout.trim().is_empty()
    } else {
        code == 1
    };
    if refused && o.stderr.trim().is_empty() {
        return Some(format!("exit code {code} with nothing on stderr"));
    }
    if sim && code == 0 && o.stdout.trim().is_empty() {
        return Some("exit code 0 with no verdict on stdout".to_string());
    }
    if refused && kind == Input::Source && !located(&o.stderr) && !plain_error(&o.stderr) {
        return Some("a failed compilation without a NAME.mscl:LINE:COL location".to_string());
    }
    if refused && kind == Input::Plan && !o.stderr.starts_with("error[E") {
        return Some("a refused plan without `error[E....]: ...`".to_string());
    }
    None
}

/// Whether stderr has a rendered diagnostic with its location: a line
/// `┌─ PATH:LINE:COL`.
fn located(stderr: &str) -> bool {
    stderr.lines().any(|line| {
        let Some((_, at)) = line.split_once("┌─ ") else {
            return false;
        };
        let mut parts = at.trim_end().rsplitn(3, ':');
        let col = parts.next().unwrap_or("");
        let line = parts.next().unwrap_or("");
        let path = parts.next().unwrap_or("");
        !path.is_empty()
            && [line, col]
                .iter()
                .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// Errors that rightly have no location in the program.
fn plain_error(stderr: &str) -> bool {
    [
        // A `-D NAME=VALUE` for no param: the command line, not the program.
        "error[E0802]: -D ",
        // `sim`: the plan compiled, but would take too much memory.
        "error[E0805]: simulating this plan",
        // A file that is not UTF-8: the message says where, in bytes, line
        // and column, as the text has no lines the renderer can show.
        "error[E0801]: cannot read case.mscl: it is not UTF-8: byte ",
    ]
    .iter()
    .any(|p| stderr.starts_with(p))
}

fn args(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

// ------------------------------------------------------ generating programs

/// The types of generated expressions: enough of the language's to call
/// every builtin and method with arguments of the right type.
#[derive(Clone, Debug, PartialEq)]
enum Ty {
    Int,
    Bool,
    Str,
    Range,
    List(Box<Ty>),
    Tuple(Vec<Ty>),
    Map(Box<Ty>, Box<Ty>),
    Rank,
    Buffer,
    Chunk,
    MemCh,
    PortCh,
    SwitchCh,
    SwitchView,
    TbGroup,
    Sem,
    Protocol,
    SyncType,
    ReduceOp,
    BufferType,
    Policy,
}

impl Ty {
    fn list(t: Ty) -> Ty {
        Ty::List(Box::new(t))
    }

    fn map(k: Ty, v: Ty) -> Ty {
        Ty::Map(Box::new(k), Box::new(v))
    }

    /// As written in a `fn` signature.
    fn syntax(&self) -> String {
        match self {
            Ty::Int => "int".into(),
            Ty::Bool => "bool".into(),
            Ty::Str => "str".into(),
            Ty::Range => "range".into(),
            Ty::List(t) => format!("list[{}]", t.syntax()),
            Ty::Tuple(ts) => {
                let items: Vec<String> = ts.iter().map(Ty::syntax).collect();
                format!("({})", items.join(", "))
            }
            Ty::Map(k, v) => format!("map[{}, {}]", k.syntax(), v.syntax()),
            Ty::Rank => "rank".into(),
            Ty::Buffer => "buffer".into(),
            Ty::Chunk => "chunk".into(),
            Ty::MemCh => "memory_channel".into(),
            Ty::PortCh => "port_channel".into(),
            Ty::SwitchCh => "switch_channel".into(),
            Ty::SwitchView => "switch_view".into(),
            Ty::TbGroup => "tb_group".into(),
            Ty::Sem => "semaphore".into(),
            Ty::Protocol => "protocol".into(),
            Ty::SyncType => "sync_type".into(),
            Ty::ReduceOp => "reduce_op".into(),
            Ty::BufferType => "buffer_type".into(),
            Ty::Policy => "replication_policy".into(),
        }
    }

    /// Types whose values exist only after the `program` block.
    fn needs_program(&self) -> bool {
        match self {
            Ty::Rank
            | Ty::Buffer
            | Ty::Chunk
            | Ty::MemCh
            | Ty::PortCh
            | Ty::SwitchCh
            | Ty::SwitchView
            | Ty::TbGroup
            | Ty::Sem => true,
            Ty::List(t) => t.needs_program(),
            Ty::Tuple(ts) => ts.iter().any(Ty::needs_program),
            Ty::Map(k, v) => k.needs_program() || v.needs_program(),
            _ => false,
        }
    }
}

/// The cost model that keeps every generated program fast, so that a slow
/// run means a slow compiler. The product of the bounds of nested loops
/// (and comprehensions) stays within this many iterations.
const ITERATION_BUDGET: u64 = 600;

/// Elements a list, map or string may have, times the iterations of the
/// loops around the expression that makes or reads it.
const WORK_BUDGET: u64 = 4000;

/// Loop iterations one call of a generated (non-recursive) function may run.
const FN_ITERATIONS: u64 = 8;

/// Calls of a recursive function: it ends at its base case or at the
/// compiler's limit of 256 nested calls.
const RECURSION_COST: u64 = 260;

/// A variable in scope.
#[derive(Clone)]
struct Var {
    name: String,
    ty: Ty,
    /// Upper bound on the elements (or bytes) of a list, map, string or
    /// range value; `u64::MAX` when unknown.
    len: u64,
    /// Loops around its declaration: assigning a bigger value to it from a
    /// deeper loop could grow it once per iteration.
    loop_depth: usize,
}

/// A function the program can call.
#[derive(Clone)]
struct UserFn {
    name: String,
    /// Name, type, and whether it has a default.
    params: Vec<(String, Ty, bool)>,
    ret: Option<Ty>,
    /// Bound on the length of a returned list or string.
    ret_len: u64,
    /// Loop iterations (or calls) one call may take.
    cost: u64,
    /// Whether its body uses ranks or channels (callable only after the
    /// program block).
    needs_program: bool,
}

/// A program, its `-D` settings, and files it imports next to it.
struct Program {
    text: String,
    defines: Vec<String>,
    helper: Option<Vec<u8>>,
    /// Huge rank counts or instances: cheap to check, slow to write out
    /// (a debug build writes a million-rank plan in seconds).
    heavy: bool,
}

struct Gen {
    rng: Rng,
    /// Per mille chance of a deliberate mistake at each choice point.
    sloppy: u64,
    /// Per mille chance, at each choice of a rank, chunk or thread block,
    /// of one that is likely out of range (a runtime error, not a type
    /// error): programs with none get furthest into the compiler.
    wildness: u64,
    known: bool,
    vars: Vec<Var>,
    fns: Vec<UserFn>,
    /// The collective's rank count and a chunk count that fits its buffers,
    /// for rank numbers and indices that are mostly in range.
    ranks: u64,
    chunks: u64,
    /// Iterations of the loops around the code being generated.
    mult: u64,
    loop_depth: usize,
    /// Levels of expression nesting still allowed.
    depth: u32,
    fresh: usize,
    /// Inside a function body (no calls of user functions there, so that
    /// costs do not compound).
    in_fn: bool,
    in_pipeline: bool,
    after_program: bool,
    heavy: bool,
    sync_lib: bool,
    peers_lib: bool,
    /// Declared params: name and type.
    params: Vec<(String, Ty)>,
    /// The rank count the collective is given.
    planned_ranks: i64,
    /// Whether this program may have a loop that runs until `--max-ops`
    /// stops it (and so ends in that error).
    runaway: bool,
    /// Reduces the program may still have (see `reduce_ok`).
    reduces_left: u32,
}

const INT_OPS: &[&str] = &["+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^"];
const CMP_OPS: &[&str] = &["==", "!=", "<", "<=", ">", ">="];
const EXTREME_INTS: &[&str] = &[
    "9223372036854775807",
    "18446744073709551615",
    "0x7fffffffffffffff",
    "0xffffffffffffffff",
    "0x8000000000000000",
    "4294967295",
    "4294967296",
    "2147483648",
    "1_000_000_000_000",
];
const EDGE_INTS: &[&str] = &[
    "0", "1", "1023", "1024", "4095", "4096", "65535", "1048576", "1048577", "16777216",
    "16777217", "33554432",
];
/// Pieces of string literals: escapes, unicode that is wide, combining,
/// right-to-left or invisible, and raw control characters.
const STRING_PIECES: &[&str] = &[
    "a",
    "ring",
    " ",
    "\\n",
    "\\t",
    "\\\\",
    "\\\"",
    "é",
    "漢字",
    "🚀",
    "\u{202e}",
    "\u{200b}",
    "e\u{301}",
    "\t",
    "\r",
    "\u{0}",
    "\u{1b}[31m",
    "\u{2028}",
    "\u{feff}",
    "{}",
    "%s",
    "//",
];

impl Gen {
    fn new(rng: Rng, known: bool) -> Gen {
        let mut rng = rng;
        let sloppy = match rng.below(10) {
            0..=5 => 0,
            6..=8 => 5,
            _ => 40,
        };
        let wildness = match rng.below(10) {
            0..=3 => 0,
            4..=7 => 20,
            _ => 150,
        };
        Gen {
            rng,
            sloppy,
            wildness,
            known,
            vars: Vec::new(),
            fns: Vec::new(),
            ranks: 2,
            chunks: 1,
            mult: 1,
            loop_depth: 0,
            depth: 3,
            fresh: 0,
            in_fn: false,
            in_pipeline: false,
            after_program: false,
            heavy: false,
            sync_lib: false,
            peers_lib: false,
            params: Vec::new(),
            planned_ranks: 2,
            runaway: false,
            reduces_left: 4,
        }
    }

    fn wild(&mut self) -> bool {
        self.wildness > 0 && self.rng.below(1000) < self.wildness
    }

    fn mistake(&mut self) -> bool {
        self.sloppy > 0 && self.rng.below(1000) < self.sloppy
    }

    fn fresh(&mut self, prefix: &str) -> String {
        self.fresh += 1;
        format!("{prefix}{}", self.fresh)
    }

    /// Elements a value made or read here may have.
    fn cap(&self) -> u64 {
        (WORK_BUDGET / self.mult).max(1)
    }

    /// Iterations a loop here may run.
    fn iterations_left(&self) -> u64 {
        ITERATION_BUDGET / self.mult
    }

    fn declare(&mut self, name: &str, ty: Ty, len: u64) {
        self.vars.push(Var {
            name: name.to_string(),
            ty,
            len,
            loop_depth: self.loop_depth,
        });
    }

    /// Variables in scope: the last binding of each name.
    fn visible(&self) -> Vec<Var> {
        let mut out: Vec<Var> = Vec::new();
        for v in self.vars.iter().rev() {
            if !out.iter().any(|o| o.name == v.name) {
                out.push(v.clone());
            }
        }
        out
    }

    /// A variable of type `ty` whose value has at most `cap` elements.
    fn var_of(&mut self, ty: &Ty, cap: u64) -> Option<(String, u64)> {
        let fits: Vec<Var> = self
            .visible()
            .into_iter()
            .filter(|v| v.ty == *ty && v.len <= cap)
            .collect();
        if fits.is_empty() {
            return None;
        }
        let v = &fits[self.rng.below(fits.len() as u64) as usize];
        Some((v.name.clone(), v.len))
    }

    // ---------------------------------------------------------- expressions

    /// An expression of type `ty` with at most `cap` elements, and a bound
    /// on its elements.
    fn expr(&mut self, ty: &Ty, cap: u64) -> (String, u64) {
        if self.mistake() {
            return (self.wrong(), 0);
        }
        if self.rng.chance(30) {
            if let Some(v) = self.var_of(ty, cap) {
                return v;
            }
        }
        let plain = |s: String| (s, 0);
        match ty {
            Ty::Int => plain(self.int()),
            Ty::Bool => plain(self.boolean()),
            Ty::Str => self.string(cap),
            Ty::Range => self.range(cap),
            Ty::List(t) => self.list(t, cap),
            Ty::Tuple(ts) => {
                let items: Vec<String> = ts.iter().map(|t| self.expr(t, cap).0).collect();
                let comma = if items.len() == 1 { "," } else { "" };
                plain(format!("({}{comma})", items.join(", ")))
            }
            Ty::Map(k, v) => self.map(k, v, cap),
            Ty::Rank => plain(format!("rank({})", self.rank_no())),
            Ty::Buffer => plain(self.buffer()),
            Ty::Chunk => plain(self.chunk()),
            Ty::MemCh => plain(self.channel("memory_channel")),
            Ty::PortCh => plain(self.channel("port_channel")),
            Ty::SwitchCh => plain(self.switch_channel()),
            Ty::SwitchView => {
                let sw = self.expr(&Ty::SwitchCh, cap).0;
                plain(format!("{sw}.at_rank({})", self.rank_no()))
            }
            Ty::TbGroup => plain(format!("tb_group({})", self.tb_list())),
            Ty::Sem => plain(format!(
                "semaphore({}, initial_value: {})",
                self.rank_no(),
                self.small_int()
            )),
            Ty::Protocol => plain(self.rng.pick(&["Simple", "LL"]).into()),
            Ty::SyncType => plain(self.rng.pick(&["none", "before", "after", "both"]).into()),
            Ty::ReduceOp => plain(self.rng.pick(&["sum", "min", "max"]).into()),
            Ty::BufferType => plain(self.rng.pick(&["input", "output", "scratch"]).into()),
            Ty::Policy => plain(self.rng.pick(&["interleaved", "none"]).into()),
        }
    }

    /// A deliberate mistake where an expression belongs.
    fn wrong(&mut self) -> String {
        match self.rng.below(9) {
            0 => "undefined_name".into(),
            1 => format!("\"{}\"", self.rng.pick(&["x", "0", ""])),
            2 => "true".into(),
            3 => "[1, \"a\"]".into(),
            4 => "rank(0).nope".into(),
            5 => "()".into(),
            6 => "{1: 2, \"a\": 3}".into(),
            7 => "nosuch(1, x: 2)".into(),
            _ => format!("{}", self.rng.next() as i64),
        }
    }

    fn small_int(&mut self) -> String {
        self.rng.below(self.ranks + 2).to_string()
    }

    fn int_leaf(&mut self) -> String {
        match self.rng.below(20) {
            0..=8 => self.small_int(),
            9..=12 => match self.var_of(&Ty::Int, u64::MAX) {
                Some((v, _)) => v,
                None => self.small_int(),
            },
            13 => self.rng.below(1 << 20).to_string(),
            14 => (1u64 << self.rng.below(64)).to_string(),
            15 => {
                let shift = self.rng.below(64);
                format!("0x{:x}", self.rng.next() >> shift)
            }
            16 => self
                .rng
                .pick(&["1_024", "1_000_000", "0x_ff", "0X10", "00", "0_0"])
                .into(),
            17 => self.rng.pick(EXTREME_INTS).into(),
            18 => self.rng.pick(EDGE_INTS).into(),
            _ if self.mistake() => self
                .rng
                .pick(&[
                    "99999999999999999999",
                    "0x1_0000_0000_0000_0000",
                    "0x",
                    "0x_",
                ])
                .into(),
            _ => self.small_int(),
        }
    }

    fn int(&mut self) -> String {
        if self.depth == 0 || self.rng.chance(40) {
            return self.int_leaf();
        }
        self.depth -= 1;
        let cap = self.cap();
        let s = match self.rng.below(16) {
            0..=3 => {
                let op = self.rng.pick(INT_OPS);
                let right = if op.len() == 2 && self.rng.chance(80) {
                    // A shift by a small amount.
                    self.rng.below(64).to_string()
                } else {
                    self.int()
                };
                format!("({} {op} {right})", self.int())
            }
            4 => format!("-{}", self.int()),
            5 => {
                let ty = match self.rng.below(4) {
                    0 => Ty::Str,
                    1 => Ty::list(Ty::Int),
                    2 => Ty::map(Ty::Int, Ty::Int),
                    _ => Ty::Range,
                };
                let (e, _) = self.expr(&ty, cap);
                {
                    format!("len({e})")
                }
            }
            6 => {
                let f = self.rng.pick(&["min", "max"]);
                format!("{f}({}, {})", self.int(), self.int())
            }
            7 => {
                let (l, len) = self.list(&Ty::Int, cap);
                format!("{l}[{}]", self.index(len))
            }
            8 => {
                let t = self.expr(&Ty::Tuple(vec![Ty::Int, Ty::Int]), cap).0;
                format!("{t}[{}]", self.rng.pick(&["0", "1"]))
            }
            9 if self.after_program => {
                let c = self.chunk();
                format!("{c}.{}", self.rng.pick(&["size", "index", "rank"]))
            }
            10 if self.after_program => {
                let b = self.buffer();
                format!("{b}.{}", self.rng.pick(&["size", "rank"]))
            }
            11 if self.after_program => format!("rank({}).id", self.rank_no()),
            12 if self.after_program => {
                let kind = self.rng.pick(&["memory_channel", "port_channel"]);
                let c = self.channel(kind);
                format!("{c}.{}", self.rng.pick(&["src_rank", "dst_rank"]))
            }
            13 => {
                let (m, _) = self.map(&Ty::Int, &Ty::Int, cap);
                let key = if self.rng.chance(70) {
                    "0".to_string()
                } else {
                    self.small_int()
                };
                format!("{m}[{key}]")
            }
            14 => match self.call_of(&Ty::Int) {
                Some((call, _)) => call,
                None => self.int_leaf(),
            },
            15 if self.peers_lib => format!("peer_slot({}, {})", self.int(), self.int()),
            _ => self.int_leaf(),
        };
        self.depth += 1;
        s
    }

    fn boolean(&mut self) -> String {
        if self.depth == 0 || self.rng.chance(30) {
            return match self.var_of(&Ty::Bool, u64::MAX) {
                Some((v, _)) if self.rng.chance(50) => v,
                _ => self.rng.pick(&["true", "false"]).into(),
            };
        }
        self.depth -= 1;
        let cap = self.cap();
        let s = match self.rng.below(9) {
            0..=2 => {
                let op = self.rng.pick(CMP_OPS);
                format!("({} {op} {})", self.int(), self.int())
            }
            3 => format!("({} && {})", self.boolean(), self.boolean()),
            4 => format!("({} || {})", self.boolean(), self.boolean()),
            5 => format!("!{}", self.boolean()),
            6 => {
                let l = self.list(&Ty::Int, cap).0;
                format!("({} in {l})", self.int())
            }
            7 => {
                let (a, b) = (self.string(cap / 2).0, self.string(cap / 2).0);
                format!("({a} {} {b})", self.rng.pick(&["==", "!="]))
            }
            _ => match self.call_of(&Ty::Bool) {
                Some((call, _)) => call,
                None => format!("({} in {})", self.int(), self.range(cap).0),
            },
        };
        self.depth += 1;
        s
    }

    fn string_literal(&mut self) -> (String, u64) {
        let mut s = String::from("\"");
        for _ in 0..self.rng.below(6) {
            s.push_str(self.rng.pick(STRING_PIECES));
        }
        if self.mistake() {
            s.push_str(self.rng.pick(&["\\q", "\\", "\\u{41}", "\n"]));
        }
        s.push('"');
        let len = s.len() as u64;
        (s, len)
    }

    fn string(&mut self, cap: u64) -> (String, u64) {
        if self.depth == 0 || cap < 64 || self.rng.chance(40) {
            if let Some(v) = self.var_of(&Ty::Str, cap).filter(|_| self.rng.chance(40)) {
                return v;
            }
            return self.string_literal();
        }
        self.depth -= 1;
        let s = match self.rng.below(4) {
            0 => {
                // str(x) of a small value: its text is at most a few dozen
                // bytes per element.
                let ty = self.any_type();
                let (e, len) = self.expr(&ty, cap / 64);
                (
                    format!("str({e})"),
                    len.saturating_add(1).saturating_mul(64),
                )
            }
            1 => {
                let (a, la) = self.string(cap / 2);
                let (b, lb) = self.string(cap / 2);
                (format!("({a} + {b})"), la.saturating_add(lb))
            }
            2 => match self.call_of(&Ty::Str) {
                Some(call) => call,
                None => self.string_literal(),
            },
            _ => self.string_literal(),
        };
        self.depth += 1;
        s
    }

    /// `a..b` with at most `cap` elements, or any range (length unknown).
    fn range(&mut self, cap: u64) -> (String, u64) {
        match self.rng.below(6) {
            0..=2 => {
                let a = self.rng.below(4);
                let n = self.rng.below(cap.min(8) + 1);
                (format!("({a}..{})", a + n), n)
            }
            3 => {
                let n = self.rng.below(cap.min(8) + 1);
                (format!("(0..min({}, {n}))", self.int()), n)
            }
            4 => {
                // Empty, or reversed (and empty): any start, ending at 0.
                let end = self.rng.pick(&["0", "-1"]);
                let start = self.int_leaf();
                let len = if start.starts_with("0x") || start.contains('_') {
                    u64::MAX
                } else {
                    start.parse::<u64>().map_or(u64::MAX, |_| 0)
                };
                (format!("({start}..{end})"), len)
            }
            _ => (format!("({}..{})", self.int(), self.int()), u64::MAX),
        }
    }

    fn index(&mut self, len: u64) -> String {
        match self.rng.below(8) {
            0..=5 if len > 0 && len < u64::MAX => self.rng.below(len).to_string(),
            6 => format!("-{}", self.rng.range(1, 3)),
            _ => self.int(),
        }
    }

    fn list(&mut self, t: &Ty, cap: u64) -> (String, u64) {
        if let Some(v) = self
            .var_of(&Ty::list(t.clone()), cap)
            .filter(|_| self.rng.chance(30))
        {
            return v;
        }
        let shallow = self.depth == 0;
        if !shallow {
            self.depth -= 1;
        }
        let choice = if shallow { 0 } else { self.rng.below(6) };
        let s = match choice {
            1 if cap >= 2 && self.iterations_left() >= 2 => self.list_comprehension(t, cap),
            2 if cap >= 2 => {
                let (a, la) = self.list(t, cap / 2);
                let (b, lb) = self.list(t, cap / 2);
                (format!("({a} + {b})"), la.saturating_add(lb))
            }
            3 if *t == Ty::Int && self.peers_lib && cap >= 1 => {
                // The standard library's lists have as many elements as
                // their second argument.
                let f = self.rng.pick(&["ring_peers", "node_peers"]);
                let n = cap.min(8);
                (format!("{f}({}, min({}, {n}))", self.int(), self.int()), n)
            }
            4 if *t == Ty::Int && self.after_program => {
                (format!("tb_group({}).tb_list", self.tb_list()), 4)
            }
            5 => match self.call_of(&Ty::list(t.clone())) {
                Some(call) => call,
                None => self.list_literal(t, cap),
            },
            _ => self.list_literal(t, cap),
        };
        if !shallow {
            self.depth += 1;
        }
        if s.1 > cap {
            // A function's list may exceed what this context allows.
            return self.list_literal(t, cap);
        }
        s
    }

    fn list_literal(&mut self, t: &Ty, cap: u64) -> (String, u64) {
        // Mostly not empty: indexing an empty list ends the program.
        let n = if self.wild() || self.rng.chance(10) {
            self.rng.below(cap.min(4) + 1)
        } else {
            self.rng.range(1, cap.clamp(1, 4))
        };
        let inner = (cap / (n + 1)).max(1);
        let items: Vec<String> = (0..n).map(|_| self.expr(t, inner).0).collect();
        let trailing = if n > 0 && self.rng.chance(10) {
            ","
        } else {
            ""
        };
        (format!("[{}{trailing}]", items.join(", ")), n)
    }

    /// `[e for v in a..b where c]`: its loop counts against the budget.
    fn list_comprehension(&mut self, t: &Ty, cap: u64) -> (String, u64) {
        let n = self.rng.below(cap.min(self.iterations_left()).min(16) + 1);
        let a = self.rng.below(3);
        let v = self.fresh("i");
        let saved = self.vars.len();
        self.declare(&v, Ty::Int, 0);
        self.mult *= n.max(1);
        let e = self.expr(t, self.cap()).0;
        let filter = if self.rng.chance(30) {
            format!(" where {}", self.boolean())
        } else {
            String::new()
        };
        self.mult /= n.max(1);
        self.vars.truncate(saved);
        (format!("[{e} for {v} in {a}..{}{filter}]", a + n), n)
    }

    fn map(&mut self, k: &Ty, v: &Ty, cap: u64) -> (String, u64) {
        if let Some(var) = self.var_of(&Ty::map(k.clone(), v.clone()), cap) {
            if self.rng.chance(40) {
                return var;
            }
        }
        if self.rng.chance(30) && cap >= 2 && self.iterations_left() >= 2 {
            // `{k: v for i in 0..n}`: keys may repeat (the last one wins).
            let n = self.rng.below(cap.min(self.iterations_left()).min(9) + 1);
            let i = self.fresh("i");
            let saved = self.vars.len();
            self.declare(&i, Ty::Int, 0);
            self.mult *= n.max(1);
            let key = if *k == Ty::Int && !self.wild() {
                i.clone()
            } else {
                self.expr(k, 1).0
            };
            let value = self.expr(v, self.cap()).0;
            self.mult /= n.max(1);
            self.vars.truncate(saved);
            return (format!("{{{key}: {value} for {i} in 0..{n}}}"), n);
        }
        let n = if self.wild() || self.rng.chance(10) {
            self.rng.below(cap.min(3) + 1)
        } else {
            self.rng.range(1, cap.clamp(1, 3))
        };
        let inner = (cap / (n + 1)).max(1);
        let entries: Vec<String> = (0..n)
            .map(|e| {
                let key = if *k == Ty::Int && (e == 0 || self.rng.chance(80)) {
                    e.to_string()
                } else {
                    self.expr(k, 1).0
                };
                format!("{key}: {}", self.expr(v, inner).0)
            })
            .collect();
        (format!("{{{}}}", entries.join(", ")), n)
    }

    /// A rank number: mostly one of the collective's ranks.
    fn rank_no(&mut self) -> String {
        if self.wild() {
            return match self.rng.below(2) {
                0 => self.int(),
                _ => self.rng.below(self.ranks + 3).to_string(),
            };
        }
        match self.rng.below(4) {
            0..=2 => self.rng.below(self.ranks).to_string(),
            _ => match self.var_of(&Ty::Int, u64::MAX) {
                Some((v, _)) => format!("({v} % {})", self.ranks),
                None => self.rng.below(self.ranks).to_string(),
            },
        }
    }

    /// A chunk index: mostly within the buffers.
    fn chunk_index(&mut self) -> u64 {
        if self.wild() {
            self.rng.below(self.chunks + 3)
        } else {
            self.rng.below(self.chunks)
        }
    }

    fn buffer(&mut self) -> String {
        self.sized_buffer().0
    }

    /// A buffer, and how many chunks it (most likely) has.
    fn sized_buffer(&mut self) -> (String, u64) {
        match self.rng.below(7) {
            0..=3 => (
                format!(
                    "rank({}).{}",
                    self.rank_no(),
                    self.rng.pick(&["input", "output"])
                ),
                self.chunks,
            ),
            4 | 5 => {
                let (size, n) = if !self.wild() {
                    let n = self.rng.range(1, 8);
                    (n.to_string(), n)
                } else {
                    let size = self
                        .rng
                        .pick(&["0", "-1", "4000000000", "16777217", "65536"]);
                    (size.to_string(), 1)
                };
                (format!("scratch({}, {size})", self.rank_no()), n)
            }
            _ => match self.var_of(&Ty::Buffer, u64::MAX) {
                Some((v, _)) => (v, 1),
                None => (format!("rank({}).input", self.rank_no()), self.chunks),
            },
        }
    }

    fn chunk(&mut self) -> String {
        if let Some((v, _)) = self.var_of(&Ty::Chunk, u64::MAX) {
            if self.rng.chance(30) {
                return v;
            }
        }
        let (b, size) = self.sized_buffer();
        if self.wild() {
            return match self.rng.below(2) {
                0 => format!("{b}[{}]", self.int()),
                _ => format!("{b}[{}]", self.rng.below(size + 3)),
            };
        }
        let i = self.rng.below(size);
        match self.rng.below(5) {
            0..=3 => format!("{b}[{i}]"),
            _ => format!("{b}[{i}..{}]", (i + self.rng.range(1, 2)).min(size)),
        }
    }

    fn channel(&mut self, kind: &str) -> String {
        let map_ty = Ty::map(Ty::Tuple(vec![Ty::Int, Ty::Int]), Ty::MemCh);
        if kind == "memory_channel" && self.rng.chance(20) {
            if let Some((m, _)) = self.var_of(&map_ty, u64::MAX) {
                return format!("{m}[({}, {})]", self.rank_no(), self.rank_no());
            }
        }
        let d = self.rank_no();
        let mut s = self.rank_no();
        if s == d && self.rng.chance(90) {
            s = ((d.parse::<u64>().unwrap_or(0) + 1) % self.ranks.max(2)).to_string();
        }
        format!("{kind}({d}, {s})")
    }

    fn switch_channel(&mut self) -> String {
        let ranks = match self.rng.below(10) {
            0..=5 => format!("[g for g in 0..{}]", self.ranks),
            6..=8 => {
                let all: Vec<String> = (0..self.ranks).map(|r| r.to_string()).collect();
                format!("[{}]", all.join(", "))
            }
            _ => self.list(&Ty::Int, 8).0,
        };
        let buf = self.expr(&Ty::BufferType, 1).0;
        format!("switch_channel({ranks}, {buf})")
    }

    fn tb_no(&mut self) -> String {
        if self.wild() {
            return match self.rng.below(2) {
                0 => self.rng.pick(&["4095", "4096", "-1", "1023"]).into(),
                _ => self.int(),
            };
        }
        self.rng.below(4).to_string()
    }

    fn tb_list(&mut self) -> String {
        if self.mistake() {
            return self.rng.pick(&["[]", "[4096]", "[-1]", "[0, 0]"]).into();
        }
        let n = self.rng.range(1, 4);
        let first = self.rng.below(3);
        let items: Vec<String> = (first..first + n).map(|t| t.to_string()).collect();
        format!("[{}]", items.join(", "))
    }

    /// A type for a `let` or a parameter.
    fn any_type(&mut self) -> Ty {
        let mut choices = vec![
            Ty::Int,
            Ty::Int,
            Ty::Int,
            Ty::Bool,
            Ty::Str,
            Ty::Range,
            Ty::list(Ty::Int),
            Ty::list(Ty::Int),
            Ty::Tuple(vec![Ty::Int, Ty::Int]),
            Ty::map(Ty::Int, Ty::Int),
            Ty::SyncType,
            Ty::ReduceOp,
        ];
        if self.after_program {
            choices.extend([
                Ty::Rank,
                Ty::Buffer,
                Ty::Chunk,
                Ty::Chunk,
                Ty::MemCh,
                Ty::MemCh,
                Ty::PortCh,
                Ty::TbGroup,
                Ty::Sem,
                Ty::SwitchCh,
                Ty::SwitchView,
                Ty::list(Ty::Chunk),
                Ty::map(Ty::Tuple(vec![Ty::Int, Ty::Int]), Ty::MemCh),
            ]);
        }
        if self.rng.chance(5) {
            return Ty::list(Ty::list(Ty::Int));
        }
        choices[self.rng.below(choices.len() as u64) as usize].clone()
    }

    /// A call of a user function returning `ty`, if one is callable here,
    /// and a bound on the length of what it returns.
    fn call_of(&mut self, ty: &Ty) -> Option<(String, u64)> {
        if self.in_fn {
            return None;
        }
        let fits: Vec<UserFn> = self
            .fns
            .iter()
            .filter(|f| f.ret.as_ref() == Some(ty))
            .filter(|f| self.mult.saturating_mul(f.cost) <= ITERATION_BUDGET)
            .filter(|f| self.after_program || !f.needs_program)
            .cloned()
            .collect();
        if fits.is_empty() {
            return None;
        }
        let f = fits[self.rng.below(fits.len() as u64) as usize].clone();
        Some((self.call(&f), f.ret_len))
    }

    /// `f(a, b, name: c)`: positional arguments, then keyword ones; defaulted
    /// parameters sometimes left out.
    fn call(&mut self, f: &UserFn) -> String {
        let mut parts = Vec::new();
        let mut keyword = false;
        for (i, (name, ty, has_default)) in f.params.iter().enumerate() {
            if *has_default && self.rng.chance(40) {
                keyword = true;
                continue;
            }
            // The first parameter of a recursive function is its depth:
            // mostly small, sometimes past the recursion limit.
            let value = if i == 0 && f.cost >= RECURSION_COST && *ty == Ty::Int {
                self.rng
                    .pick(&["0", "1", "3", "10", "255", "256", "300", "100000"])
                    .to_string()
            } else {
                self.expr(ty, 8).0
            };
            keyword |= self.rng.chance(20);
            if keyword {
                parts.push(format!("{name}: {value}"));
            } else {
                parts.push(value);
            }
        }
        if self.mistake() {
            parts.push(self.rng.pick(&["nosuch: 1", "1", "tb: 0"]).to_string());
        }
        format!("{}({})", f.name, parts.join(", "))
    }

    // ----------------------------------------------------------- statements

    fn tb_spec(&mut self, group_allowed: bool) -> String {
        if self.mistake() {
            return self
                .rng
                .pick(&[
                    "",
                    "tb: 0, tb_group: tb_group([0])",
                    "tb: \"0\"",
                    "tb_group: 0",
                ])
                .into();
        }
        if group_allowed && self.rng.chance(10) {
            if let Some((g, _)) = self.var_of(&Ty::TbGroup, u64::MAX) {
                return format!("tb_group: {g}");
            }
            return format!("tb_group: tb_group({})", self.tb_list());
        }
        format!("tb: {}", self.tb_no())
    }

    /// `, name: value` for an optional keyword argument, half the time.
    fn opt(&mut self, name: &str, ty: &Ty) -> String {
        if self.rng.chance(50) {
            String::new()
        } else {
            format!(", {name}: {}", self.expr(ty, 4).0)
        }
    }

    /// An operation: a method of a rank, channel, switch or semaphore. With
    /// `emitting`, only ones that always emit an op (or fail).
    fn op(&mut self, emitting: bool) -> String {
        let ranks = self.ranks;
        let d = self.rng.below(ranks);
        let s = if ranks > 1 {
            (d + 1 + self.rng.below(ranks - 1)) % ranks
        } else {
            d
        };
        let (i, j) = (self.chunk_index(), self.chunk_index());
        let which = if emitting {
            self.rng.below(4)
        } else {
            self.rng.below(16)
        };
        match which {
            0 => {
                let tb = self.tb_spec(true);
                let m = self
                    .rng
                    .pick(&["copy", "copy", "copy_packets", "unpack_packets"]);
                let (dst, src) = if self.wild() {
                    (self.chunk(), self.chunk())
                } else {
                    // Packets go into scratch, and are unpacked out of it.
                    let (dst_buf, src_buf) = match m {
                        "copy_packets" => ("scratch", "input"),
                        "unpack_packets" => ("output", "scratch"),
                        _ => ("output", "input"),
                    };
                    (self.on_rank(d, dst_buf, i), self.on_rank(d, src_buf, j))
                };
                format!("rank({d}).{m}({dst}, {src}, {tb})")
            }
            1 => {
                let ch = self.mem_channel(d, s);
                let tb = self.tb_spec(true);
                let m = self
                    .rng
                    .pick(&["put", "put", "get", "put_packets", "read_put_packets"]);
                let (dst, src) = match m {
                    "get" => (self.on_rank(s, "input", i), self.on_rank(d, "output", j)),
                    "put_packets" => (self.on_rank(d, "scratch", i), self.on_rank(s, "input", j)),
                    "read_put_packets" => {
                        (self.on_rank(d, "scratch", i), self.on_rank(s, "scratch", j))
                    }
                    _ => (self.on_rank(d, "output", i), self.on_rank(s, "input", j)),
                };
                format!("{ch}.{m}({dst}, {src}, {tb})")
            }
            2 | 3 => {
                let ch = self.mem_channel(d, s);
                let m = if which == 2 { "signal" } else { "wait" };
                let tb = self.tb_no();
                let sync = self.opt("data_sync", &Ty::SyncType);
                let relaxed = self.opt("relaxed", &Ty::Bool);
                let op = format!("{ch}.{m}(tb: {tb}{sync}{relaxed})");
                if emitting || self.rng.chance(15) {
                    return op;
                }
                // Mostly as a pair: a signal of src to dst, the wait of dst
                // for src, so that the program gets past the matching check.
                let sync = self.opt("data_sync", &Ty::SyncType);
                format!("memory_channel({d}, {s}).signal(tb: {tb}{relaxed})\nmemory_channel({s}, {d}).wait(tb: {tb}{sync}{relaxed})")
            }
            4 if self.reduce_ok() => {
                let tb = self.tb_spec(true);
                let others = if !self.wild() {
                    let n = self.rng.range(1, 3);
                    let items: Vec<String> = (0..n)
                        .map(|_| {
                            let k = self.rng.below(self.chunks);
                            self.on_rank(d, "output", k)
                        })
                        .collect();
                    format!("[{}]", items.join(", "))
                } else {
                    self.list(&Ty::Chunk, 4).0
                };
                let dst = if self.wild() {
                    self.opt("dst_chunk", &Ty::Chunk)
                } else if self.rng.chance(50) {
                    format!(", dst_chunk: {}", self.on_rank(d, "output", i))
                } else {
                    String::new()
                };
                let op = self.opt("reduce_op", &Ty::ReduceOp);
                // Packet operands live in scratch: only the wild say so here.
                let packet = if self.wild() {
                    self.opt("packet", &Ty::Bool)
                } else {
                    String::new()
                };
                format!("rank({d}).reduce(rank({d}).input[{i}], {others}, {tb}{dst}{op}{packet})")
            }
            5 => format!("rank({d}).barrier(tb_list: {})", self.tb_list()),
            6 if self.reduce_ok() => {
                let ch = self.mem_channel(d, s);
                let tb = self.tb_spec(true);
                let dst = if self.wild() {
                    self.opt("local_dst_chunk", &Ty::Chunk)
                } else if self.rng.chance(50) {
                    format!(", local_dst_chunk: {}", self.on_rank(s, "output", i))
                } else {
                    String::new()
                };
                let op = self.opt("reduce_op", &Ty::ReduceOp);
                // The local chunks are on the channel's source rank.
                format!("{ch}.reduce(rank({s}).input[{i}], [rank({d}).input[{j}]], {tb}{dst}{op})")
            }
            7 | 8 => {
                let tb = self.tb_no();
                let sync = self.opt("data_sync", &Ty::SyncType);
                if self.rng.chance(60) {
                    // A signal and the peer's wait, as for memory channels.
                    return format!("port_channel({d}, {s}).signal(tb: {tb}{sync})\nport_channel({s}, {d}).wait(tb: {tb})");
                }
                let ch = self.expr(&Ty::PortCh, 1).0;
                let m = self.rng.pick(&["signal", "wait", "flush"]);
                format!("{ch}.{m}(tb: {tb}{sync})")
            }
            9 => {
                let ch = format!("port_channel({d}, {s})");
                let m = self.rng.pick(&[
                    "put",
                    "put_with_signal",
                    "put_with_signal_and_flush",
                    "put_packets",
                    "read_put_packets",
                ]);
                let tb = self.tb_spec(m == "read_put_packets");
                let (dst, src) = match m {
                    "put_packets" => (self.on_rank(d, "scratch", i), self.on_rank(s, "input", j)),
                    "read_put_packets" => {
                        (self.on_rank(d, "scratch", i), self.on_rank(s, "scratch", j))
                    }
                    _ => (self.on_rank(d, "output", i), self.on_rank(s, "input", j)),
                };
                format!("{ch}.{m}({dst}, {src}, {tb})")
            }
            10 if self.reduce_ok() => {
                let sw = self.expr(&Ty::SwitchCh, 1).0;
                let tb = self.tb_no();
                let op = self.opt("reduce_op", &Ty::ReduceOp);
                if self.rng.chance(50) {
                    format!("{sw}.at_rank({d}).reduce(buffer_offset: {i}, size: 1, dst_chunk: rank({d}).input[{i}], tb: {tb}{op})")
                } else {
                    format!("{sw}.reduce({d}, buffer_offset: {i}, size: 1, dst_chunk: rank({d}).input[{i}], tb: {tb}{op})")
                }
            }
            11 => {
                let sw = self.expr(&Ty::SwitchCh, 1).0;
                let tb = self.tb_no();
                let m = self.rng.pick(&["broadcast", "broadcast_packets"]);
                let size = if self.wild() {
                    self.rng.pick(&["2", "0", "-1"])
                } else {
                    "1"
                };
                format!("{sw}.at_rank({d}).{m}(rank({d}).input[{i}], buffer_offset: {j}, size: {size}, tb: {tb})")
            }
            12 => {
                let sem = self.expr(&Ty::Sem, 1).0;
                let m = self.rng.pick(&["acquire", "release"]);
                let tb = self.tb_no();
                let sync = self.opt("data_sync", &Ty::SyncType);
                format!("{sem}.{m}(tb: {tb}{sync})")
            }
            13 if self.sync_lib => {
                let n = self.ranks.min(4);
                let tb = self.tb_no();
                let relaxed = self.opt("relaxed", &Ty::Bool);
                format!("all_pairs_barrier(all_pairs_channels({n}), {n}, {tb}{relaxed})")
            }
            14 if self.mistake() => {
                // A method the receiver does not have, or a wrong arity.
                self.rng
                    .pick(&[
                        "rank(0).put(rank(0).input[0], rank(0).input[0], tb: 0)",
                        "memory_channel(0, 1).copy(tb: 0)",
                        "rank(0).copy(rank(0).input[0], tb: 0)",
                        "rank(0).copy(rank(0).input[0], rank(0).output[0], rank(0).output[0], tb: 0)",
                        "rank(0).copy(dst_chunk: rank(0).input[0], rank(0).output[0], tb: 0)",
                        "rank(0).copy(rank(0).input[0], rank(0).output[0], tb: 0, tb: 1)",
                    ])
                    .into()
            }
            15 if self.wild() => {
                // Any chunks at all.
                let tb = self.tb_spec(true);
                let (a, b) = (self.chunk(), self.chunk());
                format!("rank({}).copy({a}, {b}, {tb})", self.rank_no())
            }
            _ => {
                let tb = self.tb_spec(true);
                let (a, b) = (self.on_rank(d, "output", i), self.on_rank(d, "input", j));
                format!("rank({d}).copy({a}, {b}, {tb})")
            }
        }
    }

    /// A chunk of rank `r`'s `buffer` (input, output or scratch) at `i`.
    fn on_rank(&mut self, r: u64, buffer: &str, i: u64) -> String {
        match buffer {
            "scratch" => format!("scratch({r}, {})[{}]", self.chunks, i % self.chunks.max(1)),
            _ => format!("rank({r}).{buffer}[{i}]"),
        }
    }

    /// Whether a reduce may go here. Known crash: the simulator keeps a sum
    /// as the list of its terms, so a chunk reduced into itself (or two
    /// into each other) over and over doubles its list each time, and a
    /// few dozen such reduces take gigabytes. Unless known crashes are
    /// wanted, reduces stay out of loops and functions, a few per program.
    fn reduce_ok(&mut self) -> bool {
        if self.known {
            return true;
        }
        if self.mult > 1 || self.in_fn || self.reduces_left == 0 {
            return false;
        }
        self.reduces_left -= 1;
        true
    }

    fn mem_channel(&mut self, d: u64, s: u64) -> String {
        if self.rng.chance(85) {
            format!("memory_channel({d}, {s})")
        } else {
            self.channel("memory_channel")
        }
    }

    /// A block of `lo..=hi` statements, each on its own line.
    fn block(&mut self, nest: u32, lo: u64, hi: u64) -> String {
        let n = self.rng.range(lo, hi);
        let saved = self.vars.len();
        let body: Vec<String> = (0..n).map(|_| self.stmt(nest)).collect();
        self.vars.truncate(saved);
        indent(&body.join("\n"))
    }

    fn stmt(&mut self, nest: u32) -> String {
        self.depth = self.rng.range(1, 4) as u32;
        let s = loop {
            let s = match self.rng.below(100) {
                0..=19 => self.let_stmt(),
                20..=23 => self.let_tuple(),
                24..=31 => self.assign(),
                32..=56 if self.after_program => Some(self.op(false)),
                57..=68 if nest > 0 => self.for_stmt(nest),
                69 if nest > 0 && self.after_program && self.runaway => {
                    Some(self.runaway_loop(nest))
                }
                71..=78 if nest > 0 => Some(self.if_stmt(nest)),
                79..=81 => Some(format!(
                    "assert({}, {})",
                    self.boolean(),
                    self.string(self.cap()).0
                )),
                82..=86 => self.call_stmt(),
                87..=89 if nest > 0 && self.after_program => self.pipeline(nest),
                90 if self.mistake() => Some(format!("return {}", self.int())),
                91 if self.mistake() => Some(
                    self.rng
                        .pick(&[
                            "let = 1",
                            "for in 0..1 {}",
                            "x.",
                            "if {}",
                            "rank(0).input[0] = 1",
                            "f(",
                            "}",
                        ])
                        .into(),
                ),
                _ => None,
            };
            if let Some(s) = s {
                break s;
            }
        };
        let sep = if self.rng.chance(10) { ";" } else { "" };
        format!("{s}{sep}")
    }

    fn let_stmt(&mut self) -> Option<String> {
        let ty = self.any_type();
        let cap = self.cap();
        let (value, len) = self.expr(&ty, cap);
        // Sometimes shadow an existing name, with a value of another type.
        let name = match self.visible().first() {
            Some(v) if self.rng.chance(10) => v.name.clone(),
            _ => self.fresh("v"),
        };
        self.declare(&name, ty, len);
        Some(format!("let {name} = {value}"))
    }

    fn let_tuple(&mut self) -> Option<String> {
        let (a, b) = (self.fresh("a"), self.fresh("b"));
        let cap = self.cap();
        let value = self.expr(&Ty::Tuple(vec![Ty::Int, Ty::list(Ty::Int)]), cap);
        let pattern = match self.rng.below(4) {
            0 => format!("(_, {b})"),
            1 if self.mistake() => format!("({a}, {b}, c)"),
            _ => format!("({a}, {b})"),
        };
        if pattern.contains(&a) {
            self.declare(&a, Ty::Int, 0);
        }
        self.declare(&b, Ty::list(Ty::Int), value.1);
        Some(format!("let {pattern} = {}", value.0))
    }

    /// `x = value`. From inside a loop, a list, map or string declared
    /// outside it takes no value bigger than the one it has: `x = x + x`
    /// there would double it every iteration (tests/limits.rs has that).
    fn assign(&mut self) -> Option<String> {
        let vars = self.visible();
        if vars.is_empty() {
            return None;
        }
        let v = vars[self.rng.below(vars.len() as u64) as usize].clone();
        let outer = v.loop_depth < self.loop_depth;
        let cap = if outer {
            v.len.min(self.cap())
        } else {
            self.cap()
        };
        let (value, len) = self.expr(&v.ty, cap);
        if let Some(var) = self.vars.iter_mut().rev().find(|x| x.name == v.name) {
            var.len = var.len.max(len);
        }
        Some(format!("{} = {value}", v.name))
    }

    /// A `for` with one or two clauses, maybe a `where`, whose iterations
    /// stay within the budget.
    fn for_stmt(&mut self, nest: u32) -> Option<String> {
        let budget = self.iterations_left();
        if budget < 1 {
            return None;
        }
        let saved = self.vars.len();
        let mut clauses = Vec::new();
        let mut total = 1u64;
        for _ in 0..self.rng.range(1, 2) {
            let room = budget / total;
            let (text, n) = self.for_clause(room);
            clauses.push(text);
            total = total.saturating_mul(n.max(1));
        }
        let filter = if self.rng.chance(30) {
            format!(" where {}", self.boolean())
        } else {
            String::new()
        };
        self.mult = self.mult.saturating_mul(total);
        self.loop_depth += 1;
        let body = self.block(nest - 1, 1, 4);
        self.loop_depth -= 1;
        self.mult /= total;
        self.vars.truncate(saved);
        Some(format!("for {}{filter} {{\n{body}\n}}", clauses.join(", ")))
    }

    /// `PATTERN in ITERABLE` with at most `room` iterations; declares the
    /// loop variables.
    fn for_clause(&mut self, room: u64) -> (String, u64) {
        let v = self.fresh("i");
        let room = room.max(1);
        match self.rng.below(10) {
            0..=4 => {
                let (r, n) = self.range(room);
                let n = if n == u64::MAX {
                    // An unknown range: bound it.
                    let a = self.int();
                    let k = self.rng.below(room.min(16) + 1);
                    self.declare(&v, Ty::Int, 0);
                    return (format!("{v} in 0..min({a}, {k})"), k);
                } else {
                    n
                };
                self.declare(&v, Ty::Int, 0);
                (format!("{v} in {r}"), n)
            }
            5 | 6 => {
                let (l, n) = self.list(&Ty::Int, room.min(self.cap()));
                self.declare(&v, Ty::Int, 0);
                (format!("{v} in {l}"), n)
            }
            7 => {
                let w = self.fresh("j");
                let t = Ty::Tuple(vec![Ty::Int, Ty::Int]);
                let (l, n) = self.list(&t, room.min(self.cap()));
                self.declare(&v, Ty::Int, 0);
                self.declare(&w, Ty::Int, 0);
                (format!("({v}, {w}) in {l}"), n)
            }
            8 => {
                let w = self.fresh("j");
                let (m, n) = self.map(&Ty::Int, &Ty::Int, room.min(self.cap()));
                self.declare(&v, Ty::Int, 0);
                self.declare(&w, Ty::Int, 0);
                (format!("{v}, {w} in {m}"), n)
            }
            _ => {
                // A list variable (walking an unbounded one is left out).
                let (l, n) = match self.var_of(&Ty::list(Ty::Int), room) {
                    Some(x) => x,
                    None => (format!("0..{}", room.min(3)), room.min(3)),
                };
                if self.rng.chance(20) {
                    return (format!("_ in {l}"), n);
                }
                self.declare(&v, Ty::Int, 0);
                (format!("{v} in {l}"), n)
            }
        }
    }

    /// A loop with a huge (or empty) bound whose body first emits an op:
    /// `--max-ops` ends it after a few thousand iterations, or the op fails
    /// at once.
    fn runaway_loop(&mut self, nest: u32) -> String {
        let bound = self.rng.pick(&[
            "1000000000",
            "9223372036854775807",
            "(1 << 40)",
            "0x7fffffffffffffff",
            "18446744073709551615",
            "4294967296",
        ]);
        let v = self.fresh("i");
        let saved = self.vars.len();
        self.declare(&v, Ty::Int, 0);
        let mult = self.mult;
        // The rest of the body runs up to --max-ops times: nothing big in it.
        self.mult = ITERATION_BUDGET;
        self.loop_depth += 1;
        let first = self.op(true);
        let rest = if nest > 1 {
            self.block(1, 0, 1)
        } else {
            String::new()
        };
        self.loop_depth -= 1;
        self.mult = mult;
        self.vars.truncate(saved);
        format!("for {v} in 0..{bound} {{\n    {first}\n{rest}\n}}")
    }

    fn if_stmt(&mut self, nest: u32) -> String {
        let cond = self.boolean();
        let then = self.block(nest - 1, 1, 3);
        match self.rng.below(4) {
            0 => {
                let other = self.block(nest - 1, 1, 2);
                format!("if {cond} {{\n{then}\n}} else {{\n{other}\n}}")
            }
            1 => {
                let cond2 = self.boolean();
                let other = self.block(nest - 1, 1, 1);
                format!("if {cond} {{\n{then}\n}} else if {cond2} {{\n{other}\n}}")
            }
            _ => format!("if {cond} {{\n{then}\n}}"),
        }
    }

    fn call_stmt(&mut self) -> Option<String> {
        if self.in_fn {
            return None;
        }
        let fits: Vec<UserFn> = self
            .fns
            .iter()
            .filter(|f| self.mult.saturating_mul(f.cost) <= ITERATION_BUDGET)
            .filter(|f| self.after_program || !f.needs_program)
            .cloned()
            .collect();
        if fits.is_empty() {
            return None;
        }
        let f = fits[self.rng.below(fits.len() as u64) as usize].clone();
        Some(self.call(&f))
    }

    fn pipeline(&mut self, nest: u32) -> Option<String> {
        if self.in_pipeline && !self.mistake() {
            return None;
        }
        let unit = if self.rng.chance(90) {
            self.rng.pick(&["1 << 20", "1048576", "1"])
        } else {
            self.rng.pick(&["0", "-1", "18446744073709551615"])
        };
        let chunks = if self.rng.chance(90) {
            self.rng.pick(&["1", "2", "4"])
        } else {
            self.rng.pick(&["0", "1000000000"])
        };
        let args = if self.mistake() {
            format!("unit_size: {unit}")
        } else {
            format!("unit_size: {unit}, num_chunks: {chunks}")
        };
        let was = self.in_pipeline;
        self.in_pipeline = true;
        let body = self.block(nest - 1, 1, 3);
        self.in_pipeline = was;
        Some(format!("pipeline({args}) {{\n{body}\n}}"))
    }

    // ------------------------------------------------------------ functions

    /// A function definition, recorded so that later code can call it.
    fn function(&mut self) -> String {
        if self.rng.chance(35) {
            return self.recursive_function();
        }
        let name = self.fresh("f");
        let mut params = Vec::new();
        let mut text_params = Vec::new();
        for k in 0..self.rng.below(4) {
            let ty = self.any_type();
            let pname = format!("p{k}");
            let default = if self.rng.chance(30) && !ty.needs_program() {
                let saved = self.vars.clone();
                self.vars.clear();
                let d = self.expr(&ty, 8).0;
                self.vars = saved;
                Some(d)
            } else if self.mistake() {
                Some(format!("{name}()"))
            } else {
                None
            };
            text_params.push(match &default {
                Some(d) => format!("{pname}: {} = {d}", ty.syntax()),
                None => format!("{pname}: {}", ty.syntax()),
            });
            params.push((pname, ty, default.is_some()));
        }
        let ret = if self.rng.chance(60) {
            Some(self.any_type())
        } else {
            None
        };
        // The body sees its parameters and the program's params only, and
        // its loops stay within FN_ITERATIONS.
        let saved_vars = std::mem::take(&mut self.vars);
        let saved = (self.mult, self.loop_depth, self.in_fn);
        for (p, ty) in self.params.clone() {
            self.declare(&p, ty, 64);
        }
        for (p, ty, _) in &params {
            self.declare(p, ty.clone(), 8);
        }
        self.mult = ITERATION_BUDGET / FN_ITERATIONS;
        self.loop_depth = 0;
        self.in_fn = true;
        let mut body = self.block(2, 0, 3);
        let mut ret_len = 0;
        if let Some(t) = &ret {
            self.depth = 2;
            let (value, len) = self.expr(t, self.cap());
            ret_len = len;
            if self.rng.chance(20) {
                let cond = self.boolean();
                let early = self.expr(t, self.cap()).0;
                body = format!("    if {cond} {{ return {early} }}\n{body}");
            }
            body = format!("{body}\n    return {value}");
        }
        self.vars = saved_vars;
        (self.mult, self.loop_depth, self.in_fn) = saved;
        let arrow = ret
            .as_ref()
            .map_or(String::new(), |t| format!(" -> {}", t.syntax()));
        let needs_program = self.after_program;
        self.fns.push(UserFn {
            name: name.clone(),
            params,
            ret,
            ret_len: ret_len.min(u64::MAX / 2),
            cost: FN_ITERATIONS,
            needs_program,
        });
        format!(
            "fn {name}({}){arrow} {{\n{body}\n}}",
            text_params.join(", ")
        )
    }

    /// A function that calls itself once per call (never twice: that is
    /// exponential, and a known hang); its first parameter counts down, or,
    /// by mistake, up until the recursion limit stops it.
    fn recursive_function(&mut self) -> String {
        let name = self.fresh("r");
        let step = if self.mistake() { "n + 1" } else { "n - 1" };
        let (text, ret, ret_len) = match self.rng.below(4) {
            0 => (
                format!("fn {name}(n: int, acc: int = 0) -> int {{\n    if n <= 0 {{ return acc }}\n    return {name}({step}, acc + n * {})\n}}", self.small_int()),
                Some(Ty::Int),
                0,
            ),
            1 => (
                format!("fn {name}(n: int) -> list[int] {{\n    if n <= 0 {{ return [] }}\n    return {name}({step}) + [n]\n}}"),
                Some(Ty::list(Ty::Int)),
                RECURSION_COST,
            ),
            2 if self.after_program => {
                let ranks = self.ranks;
                (
                    format!("fn {name}(n: int) {{\n    if n > 0 {{\n        rank(n % {ranks}).copy(rank(n % {ranks}).output[0], rank(n % {ranks}).input[0], tb: n % 4)\n        {name}({step})\n    }}\n}}"),
                    None,
                    0,
                )
            }
            _ => (
                format!("fn {name}(n: int, s: str = \"\") -> str {{\n    if n <= 0 || len(s) > 64 {{ return s }}\n    return {name}({step}, s + str(n))\n}}"),
                Some(Ty::Str),
                RECURSION_COST * 8,
            ),
        };
        let mut params = vec![("n".to_string(), Ty::Int, false)];
        if text.contains("acc: int") {
            params.push(("acc".to_string(), Ty::Int, true));
        }
        if text.contains("s: str") {
            params.push(("s".to_string(), Ty::Str, true));
        }
        let needs_program = self.after_program;
        self.fns.push(UserFn {
            name,
            params,
            ret,
            ret_len,
            cost: RECURSION_COST,
            needs_program,
        });
        text
    }

    // -------------------------------------------------------------- program

    fn param_decl(&mut self) -> String {
        let (ty, default) = match self.rng.below(8) {
            0 | 1 => (Ty::Int, self.int_leaf()),
            2 => (Ty::Bool, self.rng.pick(&["true", "false"]).into()),
            3 => (Ty::Str, self.string_literal().0),
            4 => (Ty::Protocol, self.rng.pick(&["Simple", "LL"]).into()),
            5 => (Ty::SyncType, self.expr(&Ty::SyncType, 1).0),
            6 => (Ty::ReduceOp, self.expr(&Ty::ReduceOp, 1).0),
            _ => (Ty::Policy, self.expr(&Ty::Policy, 1).0),
        };
        let name = self.fresh("q");
        let ty_text = if self.mistake() {
            "list[int]".to_string()
        } else {
            ty.syntax()
        };
        self.params.push((name.clone(), ty.clone()));
        self.declare(&name, ty, 64);
        format!("param {name}: {ty_text} = {default}")
    }

    /// `-D NAME=VALUE` settings: mostly right for the param's type.
    fn defines(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        if self.params.is_empty() || !self.rng.chance(30) {
            return out;
        }
        for _ in 0..self.rng.range(1, 2) {
            let (name, ty) = self.params[self.rng.below(self.params.len() as u64) as usize].clone();
            let value: String = if self.rng.chance(75) {
                match ty {
                    Ty::Int => self
                        .rng
                        .pick(&[
                            "0",
                            "1",
                            "2",
                            "4",
                            "8",
                            "-1",
                            "0x10",
                            "18446744073709551615",
                            "9223372036854775807",
                        ])
                        .into(),
                    Ty::Bool => self.rng.pick(&["true", "false"]).into(),
                    Ty::Str => self
                        .rng
                        .pick(&["", "x", "é🚀", "a b", "\"q\"", "line\nbreak"])
                        .into(),
                    Ty::Protocol => self.rng.pick(&["Simple", "LL"]).into(),
                    Ty::SyncType => self.rng.pick(&["none", "before", "after", "both"]).into(),
                    Ty::ReduceOp => self.rng.pick(&["sum", "min", "max"]).into(),
                    _ => self.rng.pick(&["interleaved", "none"]).into(),
                }
            } else {
                self.rng
                    .pick(&[
                        "",
                        "abc",
                        "18446744073709551616",
                        "-9223372036854775808",
                        "--5",
                        "0x",
                        "1e3",
                        "TRUE",
                        "=",
                        "🚀",
                    ])
                    .into()
            };
            let name = if self.rng.chance(5) {
                "undeclared".to_string()
            } else {
                name
            };
            out.push("-D".to_string());
            out.push(format!("{name}={value}"));
        }
        out
    }

    /// The `program` block: a collective with small or extreme arguments,
    /// and some of the options.
    fn program_block(&mut self) -> String {
        let kind = self.rng.pick(&[
            "allreduce",
            "allgather",
            "alltoall",
            "reducescatter",
            "sendrecv",
            "test_collective",
        ]);
        let n = self.planned_ranks;
        let c: i64 = if self.rng.chance(92) {
            self.rng.range(1, 3) as i64
        } else {
            self.rng.pick(&[0, -1, 1024, 1048576, 1048577, 1 << 40])
        };
        let n_text = match self.params.iter().find(|(p, _)| p == "num_gpus") {
            Some((p, _)) => p.clone(),
            None => n.to_string(),
        };
        let collective = if kind == "test_collective" {
            let (i, o) = if self.wild() {
                (self.rng.range(0, 4), self.rng.range(0, 4))
            } else {
                (self.rng.range(1, 4), self.rng.range(1, 4))
            };
            self.chunks = i.min(o).max(1);
            format!("test_collective({n_text}, input_size: {i}, output_size: {o})")
        } else {
            // Chunks of the smaller of the input and output buffers.
            let per_rank = match kind {
                "allreduce" | "alltoall" => self.ranks,
                _ => 1,
            };
            let mut args = vec![n_text];
            if self.rng.chance(70) {
                args.push(format!("chunk_factor: {c}"));
                self.chunks = per_rank * c.clamp(1, 3) as u64;
            } else {
                self.chunks = per_rank;
            }
            if self.rng.chance(50) {
                args.push(format!("inplace: {}", self.rng.pick(&["true", "false"])));
            }
            if self.mistake() {
                args.push(self.rng.pick(&["nope: 1", "inplace: 1", "2"]).into());
            }
            format!("{kind}({})", args.join(", "))
        };
        let mut options = vec![format!("    collective = {collective}")];
        let pick_int =
            |rng: &mut Rng, usual: &[&'static str], extreme: &[&'static str]| -> String {
                if rng.chance(90) {
                    rng.pick(usual).into()
                } else {
                    rng.pick(extreme).into()
                }
            };
        if self.rng.chance(30) {
            let v = pick_int(
                &mut self.rng,
                &["1", "2"],
                &["0", "-1", "64", "1024", "1025"],
            );
            if v.parse::<i64>().unwrap_or(0) >= 64 {
                self.heavy = true;
            }
            options.push(format!("    instances = {v}"));
        }
        let flags = [
            "instr_fusion",
            "auto_sync",
            "reuse_resources",
            "use_double_scratch_buffer",
        ];
        for flag in flags {
            if self.rng.chance(20) {
                options.push(format!("    {flag} = {}", self.boolean()));
            }
        }
        if self.rng.chance(40) {
            options.push(format!("    protocol = {}", self.expr(&Ty::Protocol, 1).0));
        }
        if self.rng.chance(20) {
            options.push(format!(
                "    replication_policy = {}",
                self.expr(&Ty::Policy, 1).0
            ));
        }
        if self.rng.chance(20) {
            let v = pick_int(
                &mut self.rng,
                &["1024", "512"],
                &["0", "1025", "4096", "-1"],
            );
            options.push(format!("    num_threads_per_block = {v}"));
        }
        if self.rng.chance(15) {
            let v = pick_int(&mut self.rng, &["16"], &["0", "3", "18446744073709551615"]);
            options.push(format!("    buffer_alignment = {v}"));
        }
        if self.rng.chance(20) {
            let v = pick_int(
                &mut self.rng,
                &["0", "1024"],
                &["18446744073709551615", "-1"],
            );
            options.push(format!("    min_message_size = {v}"));
        }
        if self.rng.chance(20) {
            let v = pick_int(
                &mut self.rng,
                &["1 << 30", "18446744073709551615"],
                &["0", "-1"],
            );
            options.push(format!("    max_message_size = {v}"));
        }
        if self.rng.chance(10) {
            let v = if self.rng.chance(80) {
                n.to_string()
            } else {
                self.int()
            };
            options.push(format!("    num_ranks = {v}"));
        }
        if self.mistake() {
            options.push(
                self.rng
                    .pick(&[
                        "    nope = 1",
                        "    instances = true",
                        "    collective = 3",
                        "    protocol = LL\n    protocol = Simple",
                    ])
                    .into(),
            );
        }
        if self.mistake() {
            options.remove(0);
        }
        // Shuffle: the block's options may come in any order.
        for k in (1..options.len()).rev() {
            let j = self.rng.below(k as u64 + 1) as usize;
            options.swap(k, j);
        }
        let name = match self.rng.below(5) {
            0 => format!("\"ar\" + str({})", self.small_int()),
            1 => match self.params.iter().find(|(_, t)| *t == Ty::Str) {
                Some((p, _)) => p.clone(),
                None => self.string_literal().0,
            },
            _ => self.string_literal().0,
        };
        format!("program {name} {{\n{}\n}}", options.join("\n"))
    }

    /// A whole program: imports, params, functions, the program block, then
    /// statements.
    fn program(mut self) -> Program {
        let mut parts = Vec::new();
        let mut helper = None;
        // The rank count comes first: a param may hold it, and rank
        // numbers everywhere are drawn below it.
        let n: i64 = if self.rng.chance(94) {
            self.rng.pick(&[1, 2, 2, 3, 4, 4, 5, 6, 7, 8])
        } else {
            self.rng
                .pick(&[0, -1, 16, 64, 4096, 65536, 1048576, 1048577, i64::MAX])
        };
        self.heavy = n > 4096;
        self.runaway = self.rng.chance(20);
        self.planned_ranks = n;
        self.ranks = n.clamp(1, 8) as u64;
        if self.rng.chance(30) {
            self.sync_lib = true;
            parts.push("import \"std/sync\"".to_string());
        }
        if self.rng.chance(30) {
            self.peers_lib = true;
            parts.push("import \"std/peers\"".to_string());
        }
        if self.rng.chance(3) {
            let (line, file) = self.import_oddity();
            parts.push(line);
            helper = file;
        }
        if self.rng.chance(25) {
            parts.push(format!("param num_gpus: int = {n}"));
            self.params.push(("num_gpus".into(), Ty::Int));
            self.declare("num_gpus", Ty::Int, 0);
        }
        for _ in 0..self.rng.below(4) {
            parts.push(self.param_decl());
        }
        for _ in 0..self.rng.below(3) {
            parts.push(self.function());
        }
        let missing_block = self.mistake();
        if !missing_block {
            parts.push(self.program_block());
        }
        self.after_program = true;
        for _ in 0..self.rng.below(3) {
            parts.push(self.function());
        }
        for _ in 0..self.rng.range(2, 12) {
            parts.push(self.stmt(3));
        }
        if self.mistake() {
            parts.push(self.param_decl());
        }
        let defines = self.defines();
        let mut text = parts.join("\n");
        text.push('\n');
        Program {
            text,
            defines,
            helper,
            heavy: self.heavy,
        }
    }

    /// An import of something unusual, and the file it names (written next
    /// to the program) if any.
    fn import_oddity(&mut self) -> (String, Option<Vec<u8>>) {
        let (path, file): (&str, Option<&[u8]>) = match self.rng.below(9) {
            0 => (
                "helper.mscl",
                Some(b"fn helper_fn(x: int) -> int {\n    return x + 1\n}\n"),
            ),
            1 => (
                "helper.mscl",
                Some(b"fn helper_fn(x: int) -> int {\n    return x +\n}\n"),
            ),
            2 => ("helper.mscl", Some(b"let x = 1\n")),
            3 => ("helper.mscl", Some(b"import \"case.mscl\"\n")),
            4 => ("helper.mscl", Some(b"fn h() {}\n\xff\xfe\n")),
            5 => ("case.mscl", None),
            6 => ("std/nope", None),
            7 => ("/dev/null", None),
            _ => (".", None),
        };
        (format!("import \"{path}\""), file.map(|f| f.to_vec()))
    }
}

/// Line-level damage to a generated program: deleting, duplicating,
/// swapping lines, or cutting the file short. Unlike tests/no_panic.rs's
/// byte edits of the examples, this keeps tokens whole.
fn damage(rng: &mut Rng, text: &str) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    for _ in 0..rng.range(1, 3) {
        if lines.is_empty() {
            break;
        }
        let at = rng.below(lines.len() as u64) as usize;
        match rng.below(4) {
            0 => {
                lines.remove(at);
            }
            1 => {
                let line = lines[at].clone();
                lines.insert(at, line);
            }
            2 => {
                let other = rng.below(lines.len() as u64) as usize;
                lines.swap(at, other);
            }
            _ => {
                let line = &lines[at];
                let mut cut = rng.below(line.len() as u64 + 1) as usize;
                while !line.is_char_boundary(cut) {
                    cut -= 1;
                }
                lines[at] = line[..cut].to_string();
                lines.truncate(at + 1);
            }
        }
    }
    lines.join("\n") + "\n"
}

/// Runs one generated program the way a user would: `check`, `compile`
/// (then simulating the plan it wrote, which must give the program's
/// verdict), `compile --emit cuda`, or `sim`.
fn run_program(h: &mut Harness, rng: &mut Rng, case: &str, p: &Program) {
    h.write("case.mscl", &p.text);
    if let Some(helper) = &p.helper {
        h.write("helper.mscl", helper);
    }
    let mut common = p.defines.clone();
    common.extend(args(&["--max-ops", MAX_OPS]));
    let choice = if p.heavy {
        // Writing out a million-rank plan takes seconds in a debug build.
        rng.pick(&[0, 3])
    } else {
        rng.below(10)
    };
    match choice {
        0..=2 => {
            let mut a = args(&["check", "case.mscl"]);
            a.extend(common);
            h.run(case, "case.mscl", Input::Source, &a);
        }
        3..=4 => {
            let mut a = args(&["sim", "case.mscl", "--max-memory", SIM_MAX_MEMORY]);
            a.push(
                rng.pick(&[
                    "--quiet",
                    "--quiet",
                    "--json",
                    "--buffers=both",
                    "--target=h100",
                ])
                .into(),
            );
            a.extend(common);
            h.run(case, "case.mscl", Input::Source, &a);
        }
        5 => {
            let mut a = args(&["compile", "case.mscl", "--emit", "cuda", "-o", "case.cu"]);
            a.extend(common);
            h.run(case, "case.mscl", Input::Source, &a);
        }
        _ => {
            let _ = std::fs::remove_file(h.dir.join("case.json"));
            let mut a = args(&["compile", "case.mscl", "-o", "case.json"]);
            if rng.chance(20) {
                a.push("--pretty".into());
            }
            a.extend(common.clone());
            let compiled = h.run(case, "case.mscl", Input::Source, &a);
            if compiled.code() == Some(0) {
                round_trip(h, case, &a, &compiled, &common);
            }
        }
    }
}

/// A plan the compiler wrote is JSON, reads back, and simulates to the
/// same verdict as its program.
fn round_trip(
    h: &mut Harness,
    case: &str,
    compile: &[String],
    compiled: &Outcome,
    common: &[String],
) {
    let text = std::fs::read_to_string(h.dir.join("case.json")).unwrap_or_default();
    if let Err(e) = serde_json::from_str::<Value>(&text) {
        h.fail(
            case,
            "case.mscl",
            compile,
            &format!("wrote a plan that is not JSON: {e}"),
            compiled,
        );
        return;
    }
    let of_plan = h.run(
        case,
        "case.json",
        Input::Plan,
        &args(&[
            "sim",
            "case.json",
            "--quiet",
            "--max-memory",
            SIM_MAX_MEMORY,
        ]),
    );
    let mut a = args(&[
        "sim",
        "case.mscl",
        "--quiet",
        "--max-memory",
        SIM_MAX_MEMORY,
    ]);
    a.extend(common.iter().cloned());
    let of_program = h.run(case, "case.mscl", Input::Source, &a);
    let (p, q) = (of_plan.code(), of_program.code());
    // A plan msclc cannot read is a wrong plan (exit 1) without a verdict.
    let unread =
        p == Some(1) && of_plan.stdout.is_empty() && of_plan.stderr.contains("case.json: ");
    if unread {
        h.fail(
            case,
            "case.mscl",
            compile,
            &format!(
                "the plan it wrote does not read back: {}",
                clip(of_plan.stderr.trim(), 500)
            ),
            &of_plan,
        );
    } else if p.is_some() && q.is_some() && p != q {
        h.fail(
            case,
            "case.mscl",
            &a,
            &format!(
                "sim of the program exits {q:?} ({}), sim of its plan {p:?} ({})",
                clip(of_program.stdout.trim(), 200),
                clip(of_plan.stdout.trim(), 200)
            ),
            &of_program,
        );
    }
}

#[test]
fn generated_programs() {
    let (seed, cases) = config("generated_programs", 1);
    let known = known_enabled();
    let mut h = Harness::new("programs");
    for k in 0..cases {
        let mut rng = Rng::new(seed, 1, k as u64);
        let gen = Gen::new(rng.clone(), known);
        rng.next();
        let mut p = gen.program();
        if rng.chance(5) {
            p.text = damage(&mut rng, &p.text);
        }
        formats_for_good_in_process(&p.text);
        run_program(&mut h, &mut rng, &format!("program {k}"), &p);
    }
    h.finish();
}

// ---------------------------------------------------- pathological programs

const HEADER: &str = "program \"p\" {\n    collective = allreduce(2)\n}\n";

/// Nesting depths around the limit of 1000 and well past it.
const DEPTHS: &[usize] = &[1, 2, 10, 500, 999, 1000, 1001, 1500, 5000, 50_000];

/// One pathological program: a shape from the grammar repeated or nested
/// to an extreme.
fn pathological(rng: &mut Rng, known: bool) -> (String, String) {
    let d = rng.pick(DEPTHS);
    let n = rng.pick(&[1usize, 100, 10_000, 200_000]);
    let r = |s: &str, k: usize| s.repeat(k);
    let (what, body) = match rng.below(34) {
        0 => (
            "parentheses",
            format!("let x = {}1{}\n", r("(", d), r(")", d)),
        ),
        1 => ("a tuple", format!("let x = {}1{}\n", r("(", d), r(",)", d))),
        2 => ("a map", format!("let x = {}1{}\n", r("{1: ", d), r("}", d))),
        3 => (
            "an index chain",
            format!("let l = [0]\nlet x = l{}\n", r("[0]", d)),
        ),
        4 => (
            "a field chain",
            format!("let x = rank(0).input{}\n", r(".size", d)),
        ),
        5 => (
            "a call chain",
            format!("fn f() -> int {{ return 1 }}\nlet x = f(){}\n", r("()", d)),
        ),
        6 => ("nots", format!("let x = {}true\n", r("!", d))),
        7 => (
            "nested comprehensions",
            format!("let x = {}0{}\n", r("[", d), r(" for i in 0..1]", d)),
        ),
        8 => (
            "nested min",
            format!("let x = {}0{}\n", r("min(", d), r(", 1)", d)),
        ),
        9 => ("an && chain", format!("let x = true{}\n", r(" && true", d))),
        10 => ("a shift chain", format!("let x = 1{}\n", r(" << 1", d))),
        11 => (
            "a string join chain",
            format!("let x = \"a\"{}\n", r(" + \"a\"", d)),
        ),
        12 => (
            "a comparison chain",
            format!("let x = 1{}\n", r(" < 1", d.min(100))),
        ),
        13 => (
            "a range chain",
            format!("let x = 0{}\n", r("..1", d.min(100))),
        ),
        14 => (
            "else-if chain",
            format!("if false {{}}{} else {{}}\n", r(" else if false {}", d)),
        ),
        15 => (
            "nested pipelines",
            format!(
                "{}rank(0).copy(rank(0).output[0], rank(0).input[0], tb: 0){}\n",
                r("pipeline(unit_size: 1, num_chunks: 1) { ", d.min(2000)),
                r(" }", d.min(2000))
            ),
        ),
        16 => (
            "nested fors with where",
            format!(
                "{}let z = 0{}\n",
                r("for i in 0..1 where i == 0 { ", d),
                r(" }", d)
            ),
        ),
        17 => (
            "a deep default argument",
            format!(
                "fn f(x: int = {}1{}) -> int {{ return x }}\nlet y = f()\n",
                r("-", d),
                ""
            ),
        ),
        18 => ("many statements", r("let x = 1; ", n) + "\n"),
        19 => ("a long list", format!("let x = [{}]\n", r("0, ", n))),
        20 => (
            "a map with repeated keys",
            format!("let x = {{{}}}\n", r("1: 2, ", n)),
        ),
        21 => (
            "many parameters",
            format!(
                "fn f({}) {{}}\n",
                (0..n)
                    .map(|i| format!("p{i}: int"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ),
        22 => ("many arguments", format!("let x = min({})\n", r("1, ", n))),
        23 => (
            "a long tuple pattern",
            format!(
                "let ({}) = ({})\n",
                (0..n)
                    .map(|i| format!("a{i}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                r("1, ", n)
            ),
        ),
        24 => (
            "a long line with an error at its end",
            format!("{}let y = (\n", r("let x = 1; ", n)),
        ),
        25 => {
            // A misspelt long name (its "did you mean" hint was quadratic).
            (
                "a long identifier",
                format!("let {} = 1\nlet y = {}2\n", r("x", n), r("x", n)),
            )
        }
        26 => (
            "a long string",
            format!("let x = \"{}\"\nassert(false, x)\n", r("é\u{202e}🚀\t", n)),
        ),
        27 => (
            "a long comment",
            format!("//{}\nlet x = ?\n", r("\u{2028}x", n)),
        ),
        28 => ("huge literals", huge_literals(rng)),
        29 => ("odd characters", odd_characters(rng)),
        30 => (
            "many functions",
            (0..n.min(20_000))
                .map(|i| format!("fn f{i}(x: int) -> int {{ return x + {i} }}\n"))
                .collect(),
        ),
        31 => {
            // Nesting in types and patterns (once unlimited: a stack overflow).
            let deep = rng.pick(&[1000usize, 1001, 100_000]);
            if rng.chance(50) {
                (
                    "a deep tuple type",
                    format!("fn f(x: {}int{}) {{}}\n", r("(", deep), r(",)", deep)),
                )
            } else {
                (
                    "a deep pattern",
                    format!("let {}a{} = 1\n", r("(", deep), r(",)", deep)),
                )
            }
        }
        32 if known => {
            // Known crash (debug builds): deep expressions in a deep recursion.
            let deep = rng.pick(&[300usize, 500, 990]);
            (
                "a deep expression in a recursion",
                format!("fn f(n: int) -> int {{\n    if n <= 0 {{ return 0 }}\n    return {}f(n - 1)\n}}\nlet x = f(300)\n", r("-", deep)),
            )
        }
        33 => {
            // Once a quadratic path in the checker past a few thousand.
            let deep = d;
            (
                "a nested list type",
                format!("fn f(x: {}int{}) {{}}\n", r("list[", deep), r("]", deep)),
            )
        }
        _ => (
            "parentheses around a call",
            format!("let x = len({}[1]{})\n", r("(", d), r(")", d)),
        ),
    };
    let text = if rng.chance(90) {
        format!("{HEADER}{body}")
    } else {
        body
    };
    (format!("{what} ({d} deep or {n} long)"), text)
}

fn huge_literals(rng: &mut Rng) -> String {
    let lit = rng.pick(&[
        "99999999999999999999999999999",
        "18446744073709551616",
        "0x1_0000_0000_0000_0000",
        "0xffffffffffffffffffffffff",
        "1_____0",
        "0x",
        "-9223372036854775808",
        "9223372036854775808",
    ]);
    let expr = rng.pick(&[
        "9223372036854775807 + 1",
        "-9223372036854775807 - 2",
        "(-9223372036854775807 - 1) / -1",
        "(-9223372036854775807 - 1) % -1",
        "-(-9223372036854775807 - 1)",
        "1 << 64",
        "1 << -1",
        "-1 >> 64",
        "1 << 9223372036854775807",
        "3037000500 * 3037000500",
        "5 / 0",
        "5 % 0",
        "len(0..9223372036854775807)",
        "min(-9223372036854775807 - 1, 0) - 1",
        "[0][9223372036854775807]",
        "[0][-9223372036854775807 - 1]",
        "rank(0).input[9223372036854775807]",
        "rank(0).input[-1..9223372036854775807]",
        "rank(9223372036854775807)",
        "scratch(0, 9223372036854775807)",
        "scratch(0, 18446744073709551615)",
        "tb_group([9223372036854775807])",
        "semaphore(0, initial_value: 9223372036854775807)",
    ]);
    format!("let a = {lit}\nlet b = {expr}\n")
}

fn odd_characters(rng: &mut Rng) -> String {
    let c = rng.pick(&[
        "\u{0}", "\u{7}", "\u{1b}", "\u{7f}", "\u{a0}", "\u{2028}", "\u{202e}", "\u{feff}", "é",
        "漢", "🚀", "\u{301}", "\r", "\t", "\u{c}", "\u{b}", "ｘ", "·",
    ]);
    match rng.below(5) {
        0 => format!("let x = 1 {c} 2\n"),
        1 => format!("let x{c} = 1\n"),
        2 => format!("let x = \"{c}\" + {c}\n"),
        3 => format!("{c}{c}{c}\nlet x = (\n"),
        _ => "let x = 1\r\nlet y = \"a\r\nb\"\r\nlet z = ?\r\n".to_string(),
    }
}

#[test]
fn pathological_programs() {
    let (seed, cases) = config("pathological_programs", 5);
    let known = known_enabled();
    let mut h = Harness::new("pathological");
    for k in 0..cases {
        let mut rng = Rng::new(seed, 2, k as u64);
        let (what, text) = pathological(&mut rng, known);
        let case = format!("pathological {k}: {what}");
        let bytes: Vec<u8> = if rng.chance(3) {
            // Not UTF-8 at all.
            let mut b = text.into_bytes();
            let at = rng.below(b.len() as u64) as usize;
            b.insert(at, 0xff);
            b
        } else {
            text.into_bytes()
        };
        h.write("case.mscl", &bytes);
        let command = rng.pick(&["check", "check", "compile", "sim"]);
        let mut a = args(&[command, "case.mscl", "--max-ops", MAX_OPS]);
        if command == "compile" {
            a.extend(args(&["-o", "case.json"]));
        }
        if command == "sim" {
            a.extend(args(&["--quiet", "--max-memory", SIM_MAX_MEMORY]));
        }
        h.run(&case, "case.mscl", Input::Source, &a);
        // A quarter of them: a debug build parses these slowly.
        if rng.chance(25) {
            formats_for_good(&mut h, &case);
        }
    }
    h.finish();
}

/// `msclc fmt case.mscl` ends as any command does (it formats the file, or
/// says where it does not parse, or that it cannot read it), and what it
/// writes is formatted: `--check` finds nothing to change.
fn formats_for_good(h: &mut Harness, case: &str) {
    let fmt = args(&["fmt", "case.mscl"]);
    if h.run(case, "case.mscl", Input::Source, &fmt).code() != Some(0) {
        return;
    }
    let check = args(&["fmt", "--check", "case.mscl"]);
    let again = h.exec(&check);
    if again.code() != Some(0) {
        h.fail(
            case,
            "case.mscl",
            &check,
            "what `msclc fmt` wrote is not formatted",
            &again,
        );
    }
}

/// A generated program formats, if it parses, to text that formats to
/// itself (in process: a run of the binary per program costs seconds).
fn formats_for_good_in_process(text: &str) {
    if let Ok(once) = msclc::format::format_source(0, text) {
        let twice = msclc::format::format_source(0, &once);
        assert_eq!(
            twice.as_ref(),
            Ok(&once),
            "formatting twice differs:\n{text}"
        );
    }
}

// ---------------------------------------------------------- mutating plans

/// Examples whose plans are small enough to simulate many times over in a
/// debug build, with the params that keep them small.
const PLAN_SEEDS: &[(&str, &[&str])] = &[
    ("examples/simple_allgather.mscl", &[]),
    ("examples/allreduce_nvls.mscl", &["-D", "world_size=4"]),
    ("examples/mscclpp/unit_tests/semaphore.mscl", &[]),
    ("examples/mscclpp/unit_tests/pipeline_test.mscl", &[]),
    ("examples/mscclpp/unit_tests/put_packet_test.mscl", &[]),
    ("examples/mscclpp/unit_tests/switch_reduce_test.mscl", &[]),
    (
        "examples/mscclpp/unit_tests/tbg/tbg_reduce_send_test.mscl",
        &[],
    ),
    (
        "examples/mscclpp/unit_tests/read_reduce_send_test.mscl",
        &[],
    ),
    ("examples/mscclpp/unit_tests/get/get_test.mscl", &[]),
    (
        "examples/mscclpp/unit_tests/put/put_with_signal_and_flush_test.mscl",
        &[],
    ),
    ("examples/mscclpp/executor_tests/reduce_pack_tbg.mscl", &[]),
    (
        "examples/mscclpp/executor_tests/reduce_nvls_pipeline.mscl",
        &[],
    ),
    ("examples/mscclpp/single_node/allgather_pkt_rppkt.mscl", &[]),
    ("examples/mscclpp/single_node/allreduce_pipeline.mscl", &[]),
];

/// Plans of the examples, written by the binary.
fn seed_plans(h: &mut Harness) -> Vec<Value> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut plans = Vec::new();
    for (path, defines) in PLAN_SEEDS {
        let mut a = args(&[
            "compile",
            &root.join(path).display().to_string(),
            "-o",
            "seed.json",
        ]);
        a.extend(args(defines));
        let o = h.exec(&a);
        assert_eq!(o.code(), Some(0), "{path} compiles: {}", o.stderr);
        let text = std::fs::read_to_string(h.dir.join("seed.json")).expect("a plan");
        plans.push(serde_json::from_str(&text).expect("the plan is JSON"));
    }
    plans
}

/// Every value seen under each key, across the seed plans: mutations draw
/// plausible replacements from it (op names, buffer types, ids).
fn vocabulary(plans: &[Value]) -> Vec<(String, Vec<Value>)> {
    fn walk(v: &Value, key: &str, out: &mut Vec<(String, Vec<Value>)>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    walk(x, k, out);
                }
            }
            Value::Array(items) => {
                for x in items {
                    walk(x, key, out);
                }
            }
            scalar => match out.iter_mut().find(|(k, _)| k == key) {
                Some((_, seen)) => {
                    if !seen.contains(scalar) && seen.len() < 64 {
                        seen.push(scalar.clone());
                    }
                }
                None => out.push((key.to_string(), vec![scalar.clone()])),
            },
        }
    }
    let mut out = Vec::new();
    for p in plans {
        walk(p, "", &mut out);
    }
    out
}

/// A place in a JSON value: object keys and array indices.
#[derive(Clone, Debug)]
enum Step {
    Key(String),
    Index(usize),
}

fn all_paths(v: &Value, path: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
    out.push(path.clone());
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                path.push(Step::Key(k.clone()));
                all_paths(x, path, out);
                path.pop();
            }
        }
        Value::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                path.push(Step::Index(i));
                all_paths(x, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

fn at<'a>(v: &'a mut Value, path: &[Step]) -> &'a mut Value {
    path.iter().fold(v, |v, step| match (v, step) {
        (Value::Object(m), Step::Key(k)) => m.get_mut(k).expect("a path that exists"),
        (Value::Array(a), Step::Index(i)) => &mut a[*i],
        _ => unreachable!("a path that exists"),
    })
}

const COUNT_KEYS: &[&str] = &[
    "input_chunks",
    "output_chunks",
    "scratch_chunks",
    "num_chunks",
    "unit_size",
    "size",
    "index",
    "num_threadblocks",
    "tbg_size",
    "init_value",
    "buffer_offset",
];

fn extreme_number(rng: &mut Rng) -> Value {
    let n: serde_json::Number = match rng.below(12) {
        0 => (-1i64).into(),
        1 => i64::MIN.into(),
        2 => u64::MAX.into(),
        3 => (u32::MAX as u64).into(),
        4 => (1u64 << 32).into(),
        5 => (1u64 << 24).into(),
        6 => (1u64 << 31).into(),
        7 => (1u64 << 53).into(),
        8 => serde_json::Number::from_f64(0.5).expect("finite"),
        9 => serde_json::Number::from_f64(1e300).expect("finite"),
        10 => 4096u64.into(),
        _ => 0u64.into(),
    };
    Value::Number(n)
}

/// One structural mutation of a plan.
fn mutate(rng: &mut Rng, plan: &mut Value, vocab: &[(String, Vec<Value>)], donors: &[Value]) {
    let mut paths = Vec::new();
    all_paths(plan, &mut Vec::new(), &mut paths);
    let path = paths[rng.below(paths.len() as u64) as usize].clone();
    let key = path.iter().rev().find_map(|s| match s {
        Step::Key(k) => Some(k.clone()),
        Step::Index(_) => None,
    });
    let target = at(plan, &path);
    match rng.below(14) {
        // Plausible: a value seen under the same key elsewhere.
        0..=3 => {
            if let Some((_, seen)) = key
                .as_ref()
                .and_then(|k| vocab.iter().find(|(name, _)| name == k))
            {
                if target.is_number() || target.is_string() || target.is_boolean() {
                    *target = seen[rng.below(seen.len() as u64) as usize].clone();
                }
            }
        }
        // A number nudged by one, or made extreme.
        4 => {
            if let Some(n) = target.as_i64() {
                *target = Value::from(n + rng.pick(&[-1i64, 1, 2]));
            }
        }
        5 => *target = extreme_number(rng),
        // Enormous declared counts.
        6 => {
            let mut counts = Vec::new();
            all_paths(plan, &mut Vec::new(), &mut counts);
            counts.retain(
                |p| matches!(p.last(), Some(Step::Key(k)) if COUNT_KEYS.contains(&k.as_str())),
            );
            if !counts.is_empty() {
                let p = counts[rng.below(counts.len() as u64) as usize].clone();
                *at(plan, &p) = Value::from(rng.pick(&[
                    1u64 << 24,
                    1 << 31,
                    1 << 32,
                    1 << 40,
                    16_777_217,
                    100_000,
                ]));
            }
        }
        // Drop a field or an element.
        7 => {
            if let Some((last, parent)) = path.split_last() {
                match (at(plan, parent), last) {
                    (Value::Object(m), Step::Key(k)) => {
                        m.remove(k);
                    }
                    (Value::Array(a), Step::Index(i)) => {
                        a.remove(*i);
                    }
                    _ => {}
                }
            }
        }
        // Duplicate an element, a few times or many.
        8 => {
            if let Some((Step::Index(i), parent)) = path.split_last() {
                if let Value::Array(a) = at(plan, parent) {
                    let copies = rng.pick(&[1usize, 2, 64]);
                    let item = a[*i].clone();
                    for _ in 0..copies {
                        a.insert(*i, item.clone());
                    }
                }
            }
        }
        // Retype.
        9 => {
            *target = match rng.below(7) {
                0 => Value::Null,
                1 => Value::Bool(true),
                2 => Value::from("x"),
                3 => Value::from(""),
                4 => Value::Array(vec![]),
                5 => Value::Object(Default::default()),
                _ => Value::Array(vec![target.clone()]),
            }
        }
        // Deep arrays, around serde_json's recursion limit of 128 and past it.
        10 => {
            let depth = rng.pick(&[2usize, 127, 128, 129, 1000, 100_000]);
            let mut v = target.clone();
            if depth > 1000 {
                // Built as text: a Value this deep is not dropped safely here.
                *target = Value::from(format!("@@DEEP{depth}@@"));
            } else {
                for _ in 0..depth {
                    v = Value::Array(vec![v]);
                }
                *target = v;
            }
        }
        // Swap in a subtree of another plan at the same place, if it has one.
        11 => {
            let donor = &donors[rng.below(donors.len() as u64) as usize];
            let mut d = donor;
            let mut found = true;
            for step in &path {
                let next = match (d, step) {
                    (Value::Object(m), Step::Key(k)) => m.get(k),
                    (Value::Array(a), Step::Index(i)) => a.get(*i),
                    _ => None,
                };
                match next {
                    Some(n) => d = n,
                    None => {
                        found = false;
                        break;
                    }
                }
            }
            if found {
                *target = d.clone();
            }
        }
        // An unknown field.
        12 => {
            if let Value::Object(m) = target {
                m.insert("unexpected".into(), Value::from(1));
            }
        }
        // Swap two elements of an array.
        _ => {
            if let Value::Array(a) = target {
                if a.len() > 1 {
                    let (i, j) = (rng.below(a.len() as u64), rng.below(a.len() as u64));
                    a.swap(i as usize, j as usize);
                }
            }
        }
    }
}

/// The plan as text, with the text-level mutations a Value cannot hold:
/// very deep arrays, duplicate keys, a cut-off file.
fn plan_text(rng: &mut Rng, plan: &Value) -> String {
    let mut text = if rng.chance(20) {
        serde_json::to_string_pretty(plan).expect("serializable")
    } else {
        plan.to_string()
    };
    while let Some(start) = text.find("\"@@DEEP") {
        let end = start + text[start + 1..].find('"').expect("closing quote") + 2;
        let depth: usize = text[start + 7..end - 3].parse().expect("a depth");
        text.replace_range(
            start..end,
            &format!("{}0{}", "[".repeat(depth), "]".repeat(depth)),
        );
    }
    match rng.below(20) {
        0 => {
            // A duplicate key right after an object opens.
            if let Some(at) = text
                .match_indices('{')
                .map(|(i, _)| i)
                .nth(rng.below(8) as usize)
            {
                text.insert_str(at + 1, "\"id\": 99, ");
            }
        }
        1 => {
            let mut cut = rng.below(text.len() as u64) as usize;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
        }
        2 => text = text.replacen("\"name\":\"", "\"name\":\"\\ud800", 1),
        _ => {}
    }
    text
}

#[test]
fn mutated_plans() {
    let (seed, cases) = config("mutated_plans", 1);
    let mut h = Harness::new("plans");
    let plans = seed_plans(&mut h);
    let vocab = vocabulary(&plans);
    for k in 0..cases {
        let mut rng = Rng::new(seed, 3, k as u64);
        let which = rng.below(plans.len() as u64) as usize;
        let mut plan = plans[which].clone();
        for _ in 0..rng.range(1, 4) {
            mutate(&mut rng, &mut plan, &vocab, &plans);
        }
        h.write("case.json", plan_text(&mut rng, &plan));
        let mut a = args(&["sim", "case.json", "--max-memory", SIM_MAX_MEMORY]);
        a.push(
            rng.pick(&[
                "--quiet",
                "--quiet",
                "--quiet",
                "--json",
                "--buffers=both",
                "--target=a100",
            ])
            .into(),
        );
        h.run(
            &format!("plan {k} (from {})", PLAN_SEEDS[which].0),
            "case.json",
            Input::Plan,
            &a,
        );
    }
    h.finish();
}

// ------------------------------------------------------------ known crashes

/// Runs `msclc ARGS` on `files` (name, contents) in a scratch directory,
/// under the fuzzer's limits.
fn run_once(name: &str, files: &[(&str, &[u8])], command: &[&str]) -> Outcome {
    let mut h = Harness::new(name);
    for (file, bytes) in files {
        h.write(file, bytes);
    }
    let o = h.exec(&args(command));
    let _ = std::fs::remove_dir_all(&h.dir);
    o
}

/// The run ended on its own, in time, with an exit code the fuzzer
/// accepts (and, for a program, a located diagnostic when it failed).
fn assert_accepted(name: &str, kind: Input, command: &[&str], o: &Outcome) {
    if let Some(problem) = judge(kind, &args(command), o) {
        panic!(
            "{name}: {problem} after {:.1} s:\n{}",
            o.elapsed.as_secs_f64(),
            clip(&o.stderr, 2000)
        );
    }
}

fn check_program(name: &str, text: &str) {
    let command = ["check", "case.mscl"];
    let o = run_once(name, &[("case.mscl", text.as_bytes())], &command);
    assert_accepted(name, Input::Source, &command, &o);
}

/// A plan the binary wrote for `program`, with `edit` applied, simulated.
fn simulate_edited_plan(name: &str, program: &str, edit: impl Fn(&mut Value)) {
    let mut h = Harness::new(name);
    h.write("case.mscl", program);
    let o = h.exec(&args(&["compile", "case.mscl", "-o", "case.json"]));
    assert_eq!(o.code(), Some(0), "{name}: {}", o.stderr);
    let text = std::fs::read_to_string(h.dir.join("case.json")).expect("a plan");
    let mut plan: Value = serde_json::from_str(&text).expect("JSON");
    edit(&mut plan);
    h.write("case.json", plan.to_string());
    let command = ["sim", "case.json", "--quiet"];
    let o = h.exec(&args(&command));
    let _ = std::fs::remove_dir_all(&h.dir);
    assert_accepted(name, Input::Plan, &command, &o);
}

/// Found by this fuzzer, and fixed: a debug build panicked (`attempt to subtract with
/// overflow`, src/eval/calls.rs `B::Len`); a release build says 0.
#[test]
fn found_len_of_a_huge_range() {
    let text =
        format!("{HEADER}let n = len(-1..9223372036854775807)\nassert(n != 0, \"len is 0\")\n");
    check_program("known-len", &text);
}

/// Found by this fuzzer: types and patterns escape the nesting limit, and
/// a deep one overflows the stack (a 3 MB file; 1,000,000 levels crash a
/// debug build, 2,000,000 a release one).
#[test]
fn found_deep_tuple_type_and_pattern() {
    let n = 2_000_000;
    let ty = format!(
        "{HEADER}fn f(x: {}int{}) {{}}\n",
        "(".repeat(n),
        ",)".repeat(n)
    );
    check_program("known-type", &ty);
    let pattern = format!("{HEADER}let {}a{} = 1\n", "(".repeat(n), ",)".repeat(n));
    check_program("known-pattern", &pattern);
}

/// Found by this fuzzer: 256 nested calls, each 500 levels deep (half the
/// nesting limit), overflow the 1 GB stack of a debug build, whose frames
/// are several times a release build's; a release build ends in E0401
/// ("recursion too deep") in 0.1 s.
#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "overflows a debug build's stack only; run with --release"
)]
fn found_deep_expression_in_a_recursion() {
    let text = format!(
        "{HEADER}fn f(n: int) -> int {{\n    if n <= 0 {{ return 0 }}\n    return {}f(n - 1)\n}}\nlet x = f(300)\n",
        "-".repeat(500)
    );
    check_program("known-recursion", &text);
}

/// Found by this fuzzer: `msclc sim` panics (`attempt to divide by zero`
/// in `Plan::expected_result`, src/ir/mod.rs) on an AllGather plan whose
/// first rank has no input chunks, and on an AllToAll plan whose first
/// rank has fewer input chunks than there are ranks.
#[test]
fn found_plan_with_too_few_input_chunks() {
    let allgather = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/simple_allgather.mscl"),
    )
    .expect("the example");
    simulate_edited_plan("known-allgather", &allgather, |p| {
        p["gpus"][0]["input_chunks"] = 0.into()
    });
    let alltoall = "program \"p\" {\n    collective = alltoall(2)\n}\nrank(0).copy(rank(0).output[0], rank(0).input[0], tb: 0)\n";
    simulate_edited_plan("known-alltoall", alltoall, |p| {
        p["gpus"][0]["input_chunks"] = 1.into()
    });
}

/// Found by this fuzzer: the simulator listed a sum's terms to check it;
/// a chunk reduced with itself twice, 28 times over, made a list of 2^28
/// terms (aborting on a 3 GB allocation under a 4 GB cap). Lists now
/// count their terms: the run says at once that the chunk has rank 0's
/// input 2^28 - 1 times.
#[test]
fn found_repeated_reduce_into_itself() {
    let text = "program \"p\" {\n    collective = allreduce(1)\n}\nfor i in 0..28 {\n    rank(0).reduce(rank(0).input[0], [rank(0).output[0], rank(0).output[0]], tb: 0, dst_chunk: rank(0).output[0])\n}\n";
    let command = ["sim", "case.mscl", "--quiet"];
    let o = run_once("known-reduce", &[("case.mscl", text.as_bytes())], &command);
    assert_accepted("known-reduce", Input::Source, &command, &o);
}

/// Found while writing this fuzzer (which leaves the shape out): nothing
/// bounded the calls a program makes, only their nesting, so a function
/// that calls itself twice ran for 2^n calls (days for n = 40). Calls now
/// count with loop iterations: it ends in E0401 after 2^26 of them, 6 s in
/// a release build; ignored because a debug build takes 26 s, past the
/// fuzzer's time limit (tests/limits.rs checks the diagnostic at a small
/// budget).
#[test]
#[cfg_attr(debug_assertions, ignore = "26 s in a debug build; run with --release")]
fn found_exponential_recursion() {
    let text = format!("{HEADER}fn f(n: int) -> int {{\n    if n <= 0 {{ return 1 }}\n    return f(n - 1) + f(n - 1)\n}}\nlet x = f(40)\n");
    check_program("known-exponential", &text);
}

/// Found while writing this fuzzer (which keeps values small in loops):
/// the iteration limit counted iterations, not the work in them, so a
/// 100,000-iteration loop over a 16 MB string ran for hours. Copying a
/// large value now takes steps from the same budget (E0401 in about a
/// second of a release build).
#[test]
fn found_work_on_big_values_in_a_loop() {
    let text = format!("{HEADER}let s = \"a\"\nfor i in 0..23 {{\n    s = s + s\n}}\nlet n = 0\nfor i in 0..100000 {{\n    n = n + len(s + s)\n}}\n");
    check_program("known-big-values", &text);
}

/// Found by this fuzzer: "did you mean" compares a misspelt name with the
/// names in scope in quadratic time; a 100,000-character name takes
/// about a minute.
#[test]
fn found_long_misspelt_name() {
    let name = "x".repeat(100_000);
    check_program(
        "known-name",
        &format!("{HEADER}let {name} = 1\nlet y = {name}2\n"),
    );
}

/// Found while writing this fuzzer: resolving `list[list[...]]` clones
/// the inner type at each level (quadratic); 40,000 levels, a 240 KB
/// file, take about a minute.
#[test]
fn found_deep_list_type() {
    let n = 40_000;
    check_program(
        "known-list-type",
        &format!(
            "{HEADER}fn f(x: {}int{}) {{}}\n",
            "list[".repeat(n),
            "]".repeat(n)
        ),
    );
}
