//! Generating `.mscl` programs from the language's grammar and vocabulary,
//! and running them.

mod expressions;
mod program;
mod statements;

use super::*;

/// The types of generated expressions: enough of the language's to call
/// every builtin and method with arguments of the right type.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Ty {
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
    pub(crate) fn list(t: Ty) -> Ty {
        Ty::List(Box::new(t))
    }

    pub(crate) fn map(k: Ty, v: Ty) -> Ty {
        Ty::Map(Box::new(k), Box::new(v))
    }

    /// As written in a `fn` signature.
    pub(crate) fn syntax(&self) -> String {
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
    pub(crate) fn needs_program(&self) -> bool {
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
pub(crate) const ITERATION_BUDGET: u64 = 600;

/// Elements a list, map or string may have, times the iterations of the
/// loops around the expression that makes or reads it.
pub(crate) const WORK_BUDGET: u64 = 4000;

/// Loop iterations one call of a generated (non-recursive) function may run.
pub(crate) const FN_ITERATIONS: u64 = 8;

/// Calls of a recursive function: it ends at its base case or at the
/// compiler's limit of 256 nested calls.
pub(crate) const RECURSION_COST: u64 = 260;

/// A variable in scope.
#[derive(Clone)]
pub(crate) struct Var {
    pub(crate) name: String,
    pub(crate) ty: Ty,
    /// Upper bound on the elements (or bytes) of a list, map, string or
    /// range value; `u64::MAX` when unknown.
    pub(crate) len: u64,
    /// Loops around its declaration: assigning a bigger value to it from a
    /// deeper loop could grow it once per iteration.
    pub(crate) loop_depth: usize,
}

/// A function the program can call.
#[derive(Clone)]
pub(crate) struct UserFn {
    pub(crate) name: String,
    /// Name, type, and whether it has a default.
    pub(crate) params: Vec<(String, Ty, bool)>,
    pub(crate) ret: Option<Ty>,
    /// Bound on the length of a returned list or string.
    pub(crate) ret_len: u64,
    /// Loop iterations (or calls) one call may take.
    pub(crate) cost: u64,
    /// Whether its body uses ranks or channels (callable only after the
    /// program block).
    pub(crate) needs_program: bool,
}

/// A program, its `-D` settings, and files it imports next to it.
pub(crate) struct Program {
    pub(crate) text: String,
    pub(crate) defines: Vec<String>,
    pub(crate) helper: Option<Vec<u8>>,
    /// Huge rank counts or instances: cheap to check, slow to write out
    /// (a debug build writes a million-rank plan in seconds).
    pub(crate) heavy: bool,
}

pub(crate) struct Gen {
    pub(crate) rng: Rng,
    /// Per mille chance of a deliberate mistake at each choice point.
    pub(crate) sloppy: u64,
    /// Per mille chance, at each choice of a rank, chunk or thread block,
    /// of one that is likely out of range (a runtime error, not a type
    /// error): programs with none get furthest into the compiler.
    pub(crate) wildness: u64,
    pub(crate) vars: Vec<Var>,
    pub(crate) fns: Vec<UserFn>,
    /// The collective's rank count and a chunk count that fits its buffers,
    /// for rank numbers and indices that are mostly in range.
    pub(crate) ranks: u64,
    pub(crate) chunks: u64,
    /// Iterations of the loops around the code being generated.
    pub(crate) mult: u64,
    pub(crate) loop_depth: usize,
    /// Levels of expression nesting still allowed.
    pub(crate) depth: u32,
    pub(crate) fresh: usize,
    /// Inside a function body (no calls of user functions there, so that
    /// costs do not compound).
    pub(crate) in_fn: bool,
    pub(crate) in_pipeline: bool,
    pub(crate) after_program: bool,
    pub(crate) heavy: bool,
    pub(crate) sync_lib: bool,
    pub(crate) peers_lib: bool,
    /// Declared params: name and type.
    pub(crate) params: Vec<(String, Ty)>,
    /// The rank count the collective is given.
    pub(crate) planned_ranks: i64,
    /// Whether this program may have a loop that runs until `--max-ops`
    /// stops it (and so ends in that error).
    pub(crate) runaway: bool,
}

pub(crate) const INT_OPS: &[&str] = &["+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^"];
pub(crate) const CMP_OPS: &[&str] = &["==", "!=", "<", "<=", ">", ">="];
pub(crate) const EXTREME_INTS: &[&str] = &[
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
pub(crate) const EDGE_INTS: &[&str] = &[
    "0", "1", "1023", "1024", "4095", "4096", "65535", "1048576", "1048577", "16777216",
    "16777217", "33554432",
];
/// Pieces of string literals: escapes, unicode that is wide, combining,
/// right-to-left or invisible, and raw control characters.
pub(crate) const STRING_PIECES: &[&str] = &[
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
    pub(crate) fn new(rng: Rng) -> Gen {
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
        }
    }

    pub(crate) fn wild(&mut self) -> bool {
        self.wildness > 0 && self.rng.below(1000) < self.wildness
    }

    pub(crate) fn mistake(&mut self) -> bool {
        self.sloppy > 0 && self.rng.below(1000) < self.sloppy
    }

    pub(crate) fn fresh(&mut self, prefix: &str) -> String {
        self.fresh += 1;
        format!("{prefix}{}", self.fresh)
    }

    /// Elements a value made or read here may have.
    pub(crate) fn cap(&self) -> u64 {
        (WORK_BUDGET / self.mult).max(1)
    }

    /// Iterations a loop here may run.
    pub(crate) fn iterations_left(&self) -> u64 {
        ITERATION_BUDGET / self.mult
    }

    pub(crate) fn declare(&mut self, name: &str, ty: Ty, len: u64) {
        self.vars.push(Var {
            name: name.to_string(),
            ty,
            len,
            loop_depth: self.loop_depth,
        });
    }

    /// Variables in scope: the last binding of each name.
    pub(crate) fn visible(&self) -> Vec<Var> {
        let mut out: Vec<Var> = Vec::new();
        for v in self.vars.iter().rev() {
            if !out.iter().any(|o| o.name == v.name) {
                out.push(v.clone());
            }
        }
        out
    }

    /// A variable of type `ty` whose value has at most `cap` elements.
    pub(crate) fn var_of(&mut self, ty: &Ty, cap: u64) -> Option<(String, u64)> {
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
}

/// Line-level damage to a generated program: deleting, duplicating,
/// swapping lines, or cutting the file short. Unlike tests/no_panic.rs's
/// byte edits of the examples, this keeps tokens whole.
pub(crate) fn damage(rng: &mut Rng, text: &str) -> String {
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
pub(crate) fn run_program(h: &mut Harness, rng: &mut Rng, case: &str, p: &Program) {
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
pub(crate) fn round_trip(
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
pub(crate) fn generated_programs() {
    let (seed, cases) = config("generated_programs", 1);
    let mut h = Harness::new("programs");
    for k in 0..cases {
        let mut rng = Rng::new(seed, 1, k as u64);
        let gen = Gen::new(rng.clone());
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
