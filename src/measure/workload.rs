//! One message size of a run: how big each rank's buffers are and where
//! input and output sit in them (the in-place layouts of SEMANTICS.md §7),
//! the input every rank starts from, and the check of every rank's result
//! against the collective's definition.

use crate::ir::{BufRef, BufferKind, Dtype, Op, Plan, ReduceOp, RefTarget};

/// The most iterations a pipeline may run: the executor counts them in 16
/// bits (SEMANTICS.md §3.5), so more wrap around and move the wrong bytes;
/// the CUDA back end would run them all, for hours at a unit of a byte.
const MAX_PIPELINE_ITERATIONS: u64 = u16::MAX as u64;

/// The iterations of the plan's longest pipeline with chunks of `chunk`
/// bytes: `ceil(num_chunks * chunk / unit_size)`; `None` without one.
fn most_pipeline_iterations(plan: &Plan, chunk: u64) -> Option<u64> {
    plan.ranks
        .iter()
        .flat_map(|r| &r.threadblocks)
        .flat_map(|tb| &tb.ops)
        .filter_map(|op| op.iter_context())
        .map(|i| i.iterations(chunk))
        .max()
}

/// The largest byte offset or size the executor would give an op of
/// `plan` with chunks of `chunk` bytes, where `ranks` places the buffers:
/// it keeps each op's offsets and sizes in 32 bits (SEMANTICS.md §3), so
/// past `u32::MAX` it moves the wrong bytes. An offset is the chunk's, plus
/// for a peer's buffer this rank's offset of that buffer in its allocation
/// (in-place layouts; buffers allocated apart start at 0), for a switch's
/// buffer the larger of the input's and the output's (counted high rather
/// than looked up through the block's switch table), plus the start of the
/// last part of a thread-block group; packet ops double theirs in 32 bits
/// as well.
fn widest_reference(plan: &Plan, chunk: u64, ranks: &[RankBuffers]) -> u64 {
    let align = u64::from(plan.options.buffer_alignment).max(1);
    let inplace = plan.collective.inplace;
    let mut widest = 0;
    for (rank, buffers) in plan.ranks.iter().zip(ranks) {
        let placed = |kind: BufferKind| match kind {
            BufferKind::Input if inplace => buffers.input_offset,
            BufferKind::Output if inplace => buffers.output_offset,
            _ => 0,
        };
        let widest_of = |op: &Op, r: &BufRef| {
            let start = u64::from(r.index) * chunk;
            let size = u64::from(r.size) * chunk;
            let placed = match r.target {
                RefTarget::Local(_) => 0,
                RefTarget::Remote { kind, .. } => placed(kind),
                RefTarget::Switch { .. } => {
                    placed(BufferKind::Input).max(placed(BufferKind::Output))
                }
            };
            let part = op.tbg.map_or(0, |g| {
                let (units, parts) = (size / align, u64::from(g.size.max(1)));
                let last = parts - 1;
                (last * (units / parts) + last.min(units % parts)) * align
            });
            let offset = start + placed + part;
            let doubled = if op.name.is_packet() { 2 } else { 1 };
            offset.max(size).saturating_mul(doubled)
        };
        for tb in &rank.threadblocks {
            for (op, _) in tb.ops_with_bodies() {
                for r in op.src.iter().chain(&op.dst) {
                    widest = widest.max(widest_of(op, r));
                }
            }
        }
    }
    widest
}

/// Why `plan`'s reductions would cut elements of `dtype`, if they would: a
/// reduction adds whole elements, and a thread-block group starts its
/// parts at multiples of the plan's `buffer_alignment`, a pipeline its
/// iterations at multiples of its `unit_size` (copies move bytes, and may
/// start anywhere). The GPU traps on such an access, and the executor
/// reads the elements misaligned too.
pub fn reductions_cut_elements(plan: &Plan, dtype: Dtype) -> Option<String> {
    let element = dtype.bytes();
    let align = u64::from(plan.options.buffer_alignment);
    let (name, bytes) = (dtype.nccl_name(), element);
    for tb in plan.ranks.iter().flat_map(|r| &r.threadblocks) {
        // A group's parts, in a pipeline's body too.
        for (op, _) in tb.ops_with_bodies() {
            if op.tbg.is_some_and(|g| g.size > 1) && op.reduces() && align % element != 0 {
                return Some(format!(
                    "a reduction split over a thread-block group starts its parts at multiples of the buffer_alignment, {align} B, which cuts {name} elements ({bytes} B): give the plan a buffer_alignment that is a multiple of {bytes}"
                ));
            }
        }
        for op in &tb.ops {
            let unit = op.iter_context().map_or(element, |i| i.unit_size);
            if unit % element != 0 && op.body().iter().any(Op::reduces) {
                return Some(format!(
                    "a pipeline with a reduction runs in units of {unit} B, which cut {name} elements ({bytes} B): give it a unit_size that is a multiple of {bytes}"
                ));
            }
        }
    }
    None
}

/// Where one rank's buffers sit: one user allocation holding input and
/// output (overlapping for in-place collectives), and its scratch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankBuffers {
    pub user_bytes: u64,
    pub input_offset: u64,
    pub output_offset: u64,
}

#[derive(Debug, Clone)]
pub struct Workload<'p> {
    plan: &'p Plan,
    /// A SendRecv's pairing: the rank each rank receives from.
    senders: Option<&'p [u32]>,
    pub dtype: Dtype,
    /// Bytes per chunk (`B`).
    pub chunk: u64,
    pub input_bytes: u64,
    pub output_bytes: u64,
    pub ranks: Vec<RankBuffers>,
    /// Each rank's scratch allocation, both halves when double-buffered.
    pub scratch_bytes: u64,
    /// Offset of the second scratch half (0 when not double-buffered).
    pub scratch_half: u64,
}

impl<'p> Workload<'p> {
    /// The workload whose larger buffer is at most `size` bytes (the size
    /// column of nccl-tests), rounded down to whole chunks of the plan's
    /// alignment, checked with `senders` for a SendRecv (`sendrecv_senders`).
    /// Errors say why a size cannot run.
    pub fn new(
        plan: &'p Plan,
        dtype: Dtype,
        size: u64,
        senders: Option<&'p [u32]>,
    ) -> Result<Workload<'p>, String> {
        let first = plan.ranks.first().ok_or("the plan has no ranks")?;
        let (ins, outs) = (first.input_chunks as u64, first.output_chunks as u64);
        let align = (plan.options.buffer_alignment as u64).max(16);
        let most = ins.max(outs);
        if !plan.moves_data() {
            // Synchronization only: nothing to size, a time per launch.
            return Ok(Workload::synchronization_only(plan, dtype, senders));
        }
        if let Some(why) = reductions_cut_elements(plan, dtype) {
            return Err(why);
        }
        let chunk = size / most / align * align;
        if chunk == 0 {
            return Err(format!(
                "{size} B is below the smallest size this plan runs at, {} B ({most} chunks of {align} B)",
                most * align
            ));
        }
        let (input_bytes, output_bytes) = (chunk * ins, chunk * outs);
        let o = &plan.options;
        // The executor checks the message it is given, before any rounding
        // to chunks: the size asked, in the buffer it checks.
        // (In 128 bits: at most `size`, but the product may pass 64.)
        let part = if plan.collective.name == "allgather" {
            outs
        } else {
            ins
        };
        let checked = (u128::from(size) * u128::from(part) / u128::from(most)) as u64;
        let (min, max) = o.message_sizes();
        if !(min..=max).contains(&checked) {
            return Err(format!(
                "{checked} B is outside the plan's message sizes [{min}, {max}]"
            ));
        }
        if let Some(most) = most_pipeline_iterations(plan, chunk) {
            if most > MAX_PIPELINE_ITERATIONS {
                return Err(format!(
                    "a pipeline runs {most} iterations at this size, more than the executor counts ({MAX_PIPELINE_ITERATIONS}, in 16 bits): give it a larger unit_size or fewer num_chunks"
                ));
            }
        }
        let n = plan.ranks.len() as u64;
        let ranks: Vec<RankBuffers> = (0..n)
            .map(|r| rank_buffers(plan, r, input_bytes, output_bytes))
            .collect();
        let widest = widest_reference(plan, chunk, &ranks);
        if widest > u64::from(u32::MAX) {
            return Err(format!(
                "an op's byte offset or size reaches {widest}, past the 32 bits the executor keeps them in (4 GiB): it would move the wrong bytes; choose a smaller size"
            ));
        }
        // Packets take twice the bytes of their data (SEMANTICS.md §3.6).
        let scratch_chunks = plan
            .ranks
            .iter()
            .map(|r| r.scratch_chunks as u64)
            .max()
            .unwrap_or(0);
        let half = (2 * chunk * scratch_chunks).max(16);
        let double = o.use_double_scratch_buffer;
        Ok(Workload {
            plan,
            senders,
            dtype,
            chunk,
            input_bytes,
            output_bytes,
            ranks,
            scratch_bytes: if double { 2 * half } else { half },
            scratch_half: if double { half } else { 0 },
        })
    }

    /// A plan whose input and output have no chunks: its size is 0 bytes
    /// at every size asked, and its time is the time of a launch (how a
    /// user measures signal, barrier and semaphore latency).
    fn synchronization_only(
        plan: &'p Plan,
        dtype: Dtype,
        senders: Option<&'p [u32]>,
    ) -> Workload<'p> {
        let none = RankBuffers {
            user_bytes: 0,
            input_offset: 0,
            output_offset: 0,
        };
        Workload {
            plan,
            senders,
            dtype,
            chunk: 0,
            input_bytes: 0,
            output_bytes: 0,
            ranks: vec![none; plan.ranks.len()],
            scratch_bytes: 16,
            scratch_half: 0,
        }
    }

    /// The size column: the larger of the two buffers.
    pub fn size(&self) -> u64 {
        self.input_bytes.max(self.output_bytes)
    }

    /// The count column: nccl-tests' per-call element count.
    pub fn count(&self) -> u64 {
        let n = self.plan.ranks.len() as u64;
        let elements = self.input_bytes.min(self.output_bytes) / self.dtype.bytes();
        match self.plan.collective.name {
            "alltoall" => elements / n.max(1),
            _ => elements,
        }
    }

    /// busbw / algbw (nccl-tests' PERFORMANCE.md).
    pub fn bus_factor(&self) -> f64 {
        let ranks = self.plan.ranks.len() as u32;
        let n = f64::from(ranks);
        match self.plan.collective.name {
            "allreduce" => 2.0 * (n - 1.0) / n,
            "allgather" | "reducescatter" | "alltoall" => (n - 1.0) / n,
            _ => 1.0,
        }
    }

    /// Whether the collective defines a result to check.
    pub fn checkable(&self) -> bool {
        self.plan.expected_result(0).is_some()
    }

    /// The scratch offset of launch number `launch` (1, 2, ...), the packet
    /// flag: even launches use the second half.
    pub fn scratch_offset(&self, launch: u32) -> u64 {
        if launch.is_multiple_of(2) {
            self.scratch_half
        } else {
            0
        }
    }

    /// The input bytes of `rank` for `seed`.
    pub fn input(&self, rank: u32, seed: u32) -> Vec<u8> {
        let elements = self.input_bytes / self.dtype.bytes();
        let mut bytes = Vec::with_capacity(self.input_bytes as usize);
        for e in 0..elements {
            let v = fill_value(rank, e, seed);
            match self.dtype {
                Dtype::Float32 => bytes.extend_from_slice(&v.to_le_bytes()),
                Dtype::Float16 => bytes.extend_from_slice(&half::f16::from_f32(v).to_le_bytes()),
                Dtype::Bfloat16 => bytes.extend_from_slice(&half::bf16::from_f32(v).to_le_bytes()),
            }
        }
        bytes
    }

    /// How many elements of `rank`'s output are wrong, given its user
    /// allocation after the kernel ran on inputs of `seed`; `None` when the
    /// collective defines no result.
    pub fn wrong_elements(&self, rank: u32, user: &[u8], seed: u32) -> Option<u64> {
        let result = match self.senders {
            Some(senders) => self.plan.sendrecv_result(rank, senders[rank as usize]),
            None => self.plan.expected_result(rank)?,
        };
        let size = self.dtype.bytes();
        let per_chunk = self.chunk / size;
        let out = &user[self.ranks[rank as usize].output_offset as usize..];
        let ranks = self.plan.ranks.len() as u32;
        let n = f64::from(ranks);
        let eps = match self.dtype {
            Dtype::Float32 => f64::from(f32::EPSILON),
            Dtype::Float16 => 1.0 / 1024.0,
            Dtype::Bfloat16 => 1.0 / 128.0,
        };
        let reduce_op = self.plan.reduce_op();
        let mut wrong = 0;
        for (k, sources) in result {
            for e in 0..per_chunk {
                let at = ((k as u64 * per_chunk + e) * size) as usize;
                let got = self.decode(&out[at..at + size as usize]);
                let mut values = sources.pairs(ranks).map(|(s, c)| {
                    let v = fill_value(s, c as u64 * per_chunk + e, seed);
                    f64::from(self.round(v))
                });
                let ok = match (sources.is_reduction(), reduce_op) {
                    (true, ReduceOp::Sum) => {
                        let want: f64 = values.sum();
                        (f64::from(got) - want).abs() <= eps * n * (1.0 + want.abs())
                    }
                    // One of the values, exactly: min and max round nothing.
                    (true, ReduceOp::Min) => values.reduce(f64::min) == Some(f64::from(got)),
                    (true, ReduceOp::Max) => values.reduce(f64::max) == Some(f64::from(got)),
                    (false, _) => values.next() == Some(f64::from(got)),
                };
                if !ok {
                    wrong += 1;
                }
            }
        }
        Some(wrong)
    }

    /// Input elements of each rank.
    pub fn input_elements(&self) -> u64 {
        self.input_bytes / self.dtype.bytes()
    }

    /// Elements of a chunk.
    pub fn chunk_elements(&self) -> u64 {
        self.chunk / self.dtype.bytes()
    }

    /// The collective's definition as the GPU checks it (the prelude's
    /// `mscl_check`): per output chunk of every rank, four u32s: the rank,
    /// the chunk, the rank its data comes from ([`every_rank`]: the chunk
    /// of all reduced) and that rank's input chunk. `None` when the collective
    /// defines no result.
    pub fn check_entries(&self) -> Option<Vec<u32>> {
        let reduce_op = self.plan.reduce_op();
        let mut entries = Vec::new();
        for rank in 0..self.plan.ranks.len() as u32 {
            let result = match self.senders {
                Some(senders) => self.plan.sendrecv_result(rank, senders[rank as usize]),
                None => self.plan.expected_result(rank)?,
            };
            for (k, sources) in result {
                let (from, chunk) = match sources {
                    crate::ir::ChunkSources::One { rank, chunk } => (rank, chunk),
                    crate::ir::ChunkSources::EveryRank { chunk } => (every_rank(reduce_op), chunk),
                };
                entries.extend([rank, k, from, chunk]);
            }
        }
        Some(entries)
    }

    fn decode(&self, b: &[u8]) -> f32 {
        match self.dtype {
            Dtype::Float32 => f32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            Dtype::Float16 => half::f16::from_le_bytes([b[0], b[1]]).to_f32(),
            Dtype::Bfloat16 => half::bf16::from_le_bytes([b[0], b[1]]).to_f32(),
        }
    }

    /// `v` as the element type holds it.
    fn round(&self, v: f32) -> f32 {
        match self.dtype {
            Dtype::Float32 => v,
            Dtype::Float16 => half::f16::from_f32(v).to_f32(),
            Dtype::Bfloat16 => half::bf16::from_f32(v).to_f32(),
        }
    }
}

/// In a check entry, for the rank its data comes from: the output is this
/// chunk of every rank reduced by `op` (the prelude's `mscl_check` reads
/// the same three words).
pub fn every_rank(op: ReduceOp) -> u32 {
    match op {
        ReduceOp::Sum => u32::MAX,
        ReduceOp::Min => u32::MAX - 1,
        ReduceOp::Max => u32::MAX - 2,
    }
}

/// Wrong elements whose positions the GPU's check keeps
/// (`MSCL_FIRST_WRONG`).
pub const FIRST_WRONG: usize = 8;

/// What the GPU's check found, from its words (`MsclCheck::found`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Wrong elements per rank.
    pub per_rank: Vec<u64>,
    /// The first few wrong elements: the rank and the element of its
    /// output, in the order the check met them.
    pub first: Vec<(u32, u64)>,
}

impl Found {
    /// The words the check writes for `ranks` ranks.
    pub fn words(ranks: usize) -> usize {
        ranks + 1 + FIRST_WRONG
    }

    pub fn read(words: &[u64], ranks: usize) -> Found {
        let total = words[ranks] as usize;
        let first = words[ranks + 1..ranks + 1 + total.min(FIRST_WRONG)]
            .iter()
            .map(|&w| ((w >> 40) as u32, w & ((1 << 40) - 1)))
            .collect();
        Found {
            per_rank: words[..ranks].to_vec(),
            first,
        }
    }

    pub fn total(&self) -> u64 {
        self.per_rank.iter().sum()
    }
}

/// Whom each rank of a SendRecv receives from, as `msclc sim` finds it in
/// the plan: a SendRecv is any pairing of the ranks, and the plan's data
/// decides which. `None` for other collectives, and where the simulator
/// finds no pairing (a wrong plan): then each rank is checked against rank
/// - 1, and the wrong result is the simulator's to explain.
pub fn sendrecv_senders(plan: &Plan) -> Option<Vec<u32>> {
    if plan.collective.name != "sendrecv" {
        return None;
    }
    // One execution shows where each rank's data lands; a race that needs a
    // second one (an input overwritten while a proxy still reads it) is no
    // matter of the pairing.
    crate::sim::simulate(plan, 1).sendrecv_sources
}

/// In-place collectives share one allocation between input and output, as
/// the MSCCL++ test harness lays them out (SEMANTICS.md §7).
fn rank_buffers(plan: &Plan, rank: u64, input: u64, output: u64) -> RankBuffers {
    let c = &plan.collective;
    let separate = RankBuffers {
        user_bytes: input + output,
        input_offset: 0,
        output_offset: input,
    };
    if !c.inplace {
        return separate;
    }
    match c.name {
        "allgather" => RankBuffers {
            user_bytes: output,
            input_offset: rank * input,
            output_offset: 0,
        },
        "allreduce" | "alltoall" => RankBuffers {
            user_bytes: input,
            input_offset: 0,
            output_offset: 0,
        },
        "reducescatter" => RankBuffers {
            user_bytes: input,
            input_offset: 0,
            output_offset: rank * output,
        },
        _ => separate,
    }
}

/// Element `e` of `rank`'s input for `seed`: a multiple of 1/64 in [0, 1),
/// exact in every element type, from a hash so that no two nearby chunks
/// or ranks look alike.
pub fn fill_value(rank: u32, e: u64, seed: u32) -> f32 {
    let mut x = (u64::from(rank) << 40) ^ e ^ (u64::from(seed) << 56);
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^= x >> 31;
    (x % 64) as f32 / 64.0
}
