//! A plan's generated CUDA built as a host program (the prelude's host
//! branch, every thread of every block a host thread) by the C++ compiler
//! with tests/cuda_host/driver.cpp, and run: the driver's input and output
//! formats live here.

use super::*;

const DRIVER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cuda_host/driver.cpp");

/// Threads per host block: more than one, so that a missing `nop` between
/// two ops of a block is a race between threads.
const WIDTH: u64 = 2;

/// A plan's kernel built as a host program.
pub(crate) struct HostKernel<'p> {
    plan: &'p Plan,
    exe: PathBuf,
    dir: PathBuf,
}

/// What one run of a host kernel did.
pub(crate) struct Outcome {
    /// Wrong elements per rank after the last launch.
    pub(crate) wrong: Vec<u64>,
    /// The spin that gave up, if one did.
    pub(crate) gave_up: Option<GaveUp>,
    /// ThreadSanitizer's reports (empty without it).
    pub(crate) races: String,
    /// The bytes of a chunk it ran at.
    pub(crate) chunk: u64,
}

impl<'p> HostKernel<'p> {
    pub(crate) fn build(cxx: &str, plan: &'p Plan, dir: &Path, sanitize: bool) -> HostKernel<'p> {
        HostKernel::build_for(cxx, plan, dir, sanitize, Dtype::Float32)
    }

    /// Built for `dtype` (the define NVRTC gets).
    pub(crate) fn build_for(
        cxx: &str,
        plan: &'p Plan,
        dir: &Path,
        sanitize: bool,
        dtype: Dtype,
    ) -> HostKernel<'p> {
        std::fs::create_dir_all(dir).unwrap();
        let source = dir.join("kernel.cu");
        std::fs::write(&source, cuda::generate(plan).expect("generates")).unwrap();
        let exe = dir.join("driver");
        let mut cmd = Command::new(cxx);
        cmd.args(["-std=c++17", "-O1", "-pthread", "-w"]);
        if sanitize {
            cmd.args(["-fsanitize=thread", "-g"]);
        }
        let out = cmd
            .args(["-x", "c++", "-include"])
            .arg(&source)
            .arg(cuda::dtype_define(dtype))
            .arg(DRIVER)
            .arg("-o")
            .arg(&exe)
            .output()
            .expect("runs the C++ compiler");
        assert!(
            out.status.success(),
            "{cxx} rejects the generated source of {}:\n{}",
            plan.name,
            String::from_utf8_lossy(&out.stderr)
        );
        HostKernel {
            plan,
            exe,
            dir: dir.to_path_buf(),
        }
    }

    /// `launches` launches at `size` bytes with `budget_ns` per spin.
    pub(crate) fn run(&self, size: u64, launches: u64, budget_ns: u64) -> Outcome {
        let plan = self.plan;
        let senders = msclc::measure::workload::sendrecv_senders(plan);
        let w = Workload::new(plan, Dtype::Float32, size, senders.as_deref())
            .expect("size fits the plan");
        let layout = SyncLayout::new(plan);
        let mut input = driver_header(&w, &layout, launches, budget_ns);
        let put = |input: &mut Vec<u8>, v: u64| input.extend_from_slice(&v.to_le_bytes());
        let seed = 7;
        for (r, b) in w.ranks.iter().enumerate() {
            for v in [b.user_bytes, b.input_offset, b.output_offset, w.input_bytes] {
                put(&mut input, v);
            }
            input.extend_from_slice(&w.input(r as u32, seed));
        }
        put(&mut input, 0); // inputs given, no check on the "GPU"
        let (fin, fout) = (self.dir.join("in.bin"), self.dir.join("out.bin"));
        std::fs::write(&fin, &input).unwrap();
        let out = Command::new(&self.exe)
            .arg(&fin)
            .arg(&fout)
            .env("TSAN_OPTIONS", "exitcode=0 report_signal_unsafe=0")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(
            out.status.success(),
            "{}: driver failed: {stderr}",
            plan.name
        );
        let result = std::fs::read(&fout).unwrap_or_else(|e| {
            panic!("{}: the driver wrote no output ({e}): {stderr}", plan.name)
        });
        let (wrong, rest) = wrong_per_rank(&w, &result, seed);
        let wrong = wrong.into_iter().map(|n| n.unwrap_or(0)).collect();
        let sync = words_of(rest);
        Outcome {
            wrong,
            chunk: w.chunk,
            gave_up: cuda::report::read(plan, &layout, &sync, budget_ns / 1_000_000),
            races: stderr
                .split("==================")
                .filter(|r| r.contains("ThreadSanitizer"))
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }
}

impl HostKernel<'_> {
    /// Two launches at `size` with inputs made and outputs checked by the
    /// prelude's fill and check (`msclc run`'s kernels), after spoiling
    /// one output element where asked: what the check found, and what the
    /// runner's host check (`Workload::wrong_elements`) finds per rank in
    /// the same outputs.
    pub(crate) fn run_checked(
        &self,
        size: u64,
        dtype: Dtype,
        spoil: Option<(u32, u64)>,
    ) -> (Found, Vec<u64>) {
        let plan = self.plan;
        let w = Workload::new(plan, dtype, size, None).expect("size fits the plan");
        let layout = SyncLayout::new(plan);
        let mut input = driver_header(&w, &layout, 2, BUDGET_NS);
        let put = |input: &mut Vec<u8>, v: u64| input.extend_from_slice(&v.to_le_bytes());
        for b in &w.ranks {
            for v in [b.user_bytes, b.input_offset, b.output_offset, 0] {
                put(&mut input, v);
            }
        }
        let seed = 7;
        let entries = w.check_entries().expect("a collective with a result");
        for v in [
            u64::from(seed),
            w.chunk_elements(),
            w.input_elements(),
            entries.len() as u64 / 4,
        ] {
            put(&mut input, v);
        }
        entries.iter().for_each(|&e| put(&mut input, u64::from(e)));
        let (rank, element) = spoil.map_or((u64::MAX, 0), |(r, e)| (u64::from(r), e));
        put(&mut input, rank);
        put(&mut input, element);
        let (fin, fout) = (self.dir.join("in.bin"), self.dir.join("out.bin"));
        std::fs::write(&fin, &input).unwrap();
        let out = Command::new(&self.exe)
            .arg(&fin)
            .arg(&fout)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}: driver failed: {}",
            plan.name,
            String::from_utf8_lossy(&out.stderr)
        );
        let result = std::fs::read(&fout).unwrap();
        let (host_check, rest) = wrong_per_rank(&w, &result, seed);
        let host_check = host_check
            .into_iter()
            .map(|n| n.expect("a result"))
            .collect();
        let found = words_of(&rest[8 * layout.initial_words().len()..]);
        assert_eq!(found.len(), Found::words(plan.ranks.len()));
        (Found::read(&found, plan.ranks.len()), host_check)
    }
}

/// The driver's input up to the ranks (tests/cuda_host/driver.cpp): the
/// workload's sizes, `launches` and the spin budget, the sync words.
fn driver_header(w: &Workload, layout: &SyncLayout, launches: u64, budget_ns: u64) -> Vec<u8> {
    let words = layout.initial_words();
    let mut input = Vec::new();
    let header = [
        w.ranks.len() as u64,
        w.chunk,
        w.scratch_bytes,
        w.scratch_half,
        launches,
        WIDTH,
        budget_ns,
        words.len() as u64,
    ];
    for v in header.iter().chain(&words) {
        input.extend_from_slice(&v.to_le_bytes());
    }
    input
}

/// The wrong elements of each rank's user allocation at the start of the
/// driver's output (the runner's host check), and the output after them.
fn wrong_per_rank<'a>(w: &Workload, result: &'a [u8], seed: u32) -> (Vec<Option<u64>>, &'a [u8]) {
    let mut at = 0;
    let wrong = w
        .ranks
        .iter()
        .enumerate()
        .map(|(r, b)| {
            let user = &result[at..at + b.user_bytes as usize];
            at += b.user_bytes as usize;
            w.wrong_elements(r as u32, user, seed)
        })
        .collect();
    (wrong, &result[at..])
}

/// Little-endian u64 words.
fn words_of(bytes: &[u8]) -> Vec<u64> {
    bytes
        .chunks_exact(8)
        .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
        .collect()
}

/// Small enough for CPU threads: two chunks' worth of 16-byte units.
pub(crate) fn small_size(plan: &Plan) -> u64 {
    let chunks = plan.ranks[0].input_chunks.max(plan.ranks[0].output_chunks) as u64;
    let min = u64::try_from(plan.options.min_message_size).unwrap_or(0);
    (chunks * 64).max(min.next_multiple_of(chunks * 16))
}
