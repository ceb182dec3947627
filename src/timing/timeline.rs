//! A simulated timeline: what the timing model predicts each thread block
//! does, and when. The trace and SVG writers draw it; the table and the
//! critical path summarise it.

/// One predicted execution of a plan at one message size.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    /// What ran: the program or plan's name, for titles.
    pub title: String,
    /// The topology the times are for (`h100-nvlink`, a file's name, ...).
    pub topology: String,
    /// The collective's message size in bytes (nccl-tests' `size` column).
    pub size_bytes: u64,
    /// One track per thread block, by rank then block.
    pub tracks: Vec<Track>,
    /// Every op timed, grouped by track, in each track in the order run.
    pub slices: Vec<Slice>,
    /// Which op let which other op go on.
    pub flows: Vec<Flow>,
    /// Predicted time of the whole collective, microseconds from launch to
    /// the last rank's kernel end.
    pub end_us: f64,
    /// A deadlock: every block that could not go on, and at which op.
    pub stuck: Vec<StuckAt>,
}

/// A thread block's row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Track {
    pub rank: u32,
    pub tb: u32,
}

/// One op of one thread block.
#[derive(Debug, Clone, PartialEq)]
pub struct Slice {
    /// Index into `Timeline::tracks`.
    pub track: usize,
    /// The op's index in its block's list as the plan writes it.
    pub op: usize,
    /// The op's plan name: `put`, `wait`, `rre`, ...
    pub name: String,
    /// What it does, for a tooltip: buffers, chunks, peer, bytes.
    pub detail: String,
    pub kind: SliceKind,
    pub start_us: f64,
    pub end_us: f64,
    /// Of `end_us - start_us`, the time spent waiting for another block (a
    /// signal, a semaphore, a barrier, a packet, a proxy, a shared link's
    /// turn is not waiting: it is in the op's own time).
    pub waited_us: f64,
    /// Bytes the op moved (0 for synchronisation).
    pub bytes: u64,
    /// On the critical path of this timeline.
    pub critical: bool,
}

/// What an op spends its time on, for colours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SliceKind {
    /// Copies, puts, gets, reductions: moving data.
    Data,
    /// Signals, waits, flushes, semaphores, barriers, nops.
    Sync,
}

/// An arrow from the op that released another to the op it released.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flow {
    /// Index into `Timeline::slices`.
    pub from: usize,
    pub to: usize,
    pub kind: FlowKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowKind {
    /// A signal to the wait that consumed it.
    Signal,
    /// A semaphore release to the acquire that took it.
    Semaphore,
    /// The last arrival at a barrier to each block it let go.
    Barrier,
    /// A write of data (a put, a packet) to its next use by another block.
    Data,
}

/// A block that never finished: the op it stopped at.
#[derive(Debug, Clone, PartialEq)]
pub struct StuckAt {
    pub track: usize,
    pub op: usize,
    pub name: String,
    /// When it got there, microseconds from launch.
    pub since_us: f64,
}
