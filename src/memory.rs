//! The memory msclc holds, and the most it may hold: so that a program or
//! plan too large for the machine ends in a diagnostic (E0810), never in
//! an abort on a failed allocation or the kernel's out-of-memory killer.
//!
//! The binary counts its live heap bytes with [`Counting`], its global
//! allocator (on top of the system's allocator, each thread adds up what
//! it allocates and frees, and adds that to the count every 64 KB). The evaluator compares the count with its budget at every
//! loop iteration, call and op, and stops at the line that went past it;
//! a stage that allocates past the ceiling ([`set_ceiling`]) in one go (a pass over a
//! huge plan) is stopped by the allocator itself, with a message and exit
//! status 2 but no line. A library user who keeps the system allocator
//! counts nothing: [`live_bytes`] stays 0, and no budget is ever reached.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering::Relaxed};

/// The system allocator, counting the bytes it has handed out and not
/// had back.
pub struct Counting;

/// The live bytes, as the threads have added them up. Signed: a thread may
/// add what it freed before another adds what it allocated.
static LIVE: AtomicI64 = AtomicI64::new(0);
/// The most `LIVE` has been since [`start_peak`]: kept with a load and a
/// rare store, not a read-modify-write (threads allocating at once may
/// lose a rise between them; the simulator, measured, runs on one).
static PEAK: AtomicI64 = AtomicI64::new(0);
static CEILING: AtomicU64 = AtomicU64::new(u64::MAX);

/// How far a thread's own count may run ahead of `LIVE` or behind it. An
/// atomic add for every allocation made the threads that evaluate a
/// program's shards wait on each other for the count's cache line (two
/// threads evaluated allreduce at 128 ranks in 140 ms instead of 100).
const BATCH: i64 = 64 << 10;

thread_local! {
    /// What this thread allocated (less what it freed) and has not yet
    /// added to `LIVE`.
    static PENDING: Cell<i64> = const { Cell::new(0) };
}

/// Heap bytes live now, to within 64 KB per thread: 0 where [`Counting`]
/// is not the global allocator.
pub fn live_bytes() -> u64 {
    LIVE.load(Relaxed).max(0) as u64
}

/// Whether every allocation is counted as it is made, not 64 KB at a time:
/// from the first [`start_peak`] on, so that a peak is measured to the
/// byte (a simulation of a small plan allocates less than 64 KB).
static EXACT: AtomicBool = AtomicBool::new(false);

/// Starts measuring a peak from now, counting each allocation of this
/// thread as it is made; returns the live bytes now.
pub fn start_peak() -> u64 {
    EXACT.store(true, Relaxed);
    let pending = PENDING.replace(0);
    let live = LIVE.fetch_add(pending, Relaxed) + pending;
    PEAK.store(live, Relaxed);
    live.max(0) as u64
}

/// The most bytes live at once since [`start_peak`].
pub fn peak_bytes() -> u64 {
    PEAK.load(Relaxed).max(0) as u64
}

/// Sets glibc's allocator for a short command, before any thread starts
/// (so that every arena is made with it). The language server keeps
/// glibc's defaults, which adapt to a long-lived process.
///
/// Memory a command frees is kept for its own later allocations instead
/// of going back to the system at once: a compile frees the evaluator's
/// values and allocates the passes' ops right after, and fresh pages cost
/// a fault each (a tenth of compiling a plan of 16 instances). Blocks up
/// to 32 MB (glibc's most) come from the heap rather than mappings of
/// their own.
///
/// Every heap starts with room for 16 MB more than it was made for: glibc
/// grows the heap of a thread's own arena (a compile runs on a thread of
/// its own, and so does each shard) by what each allocation lacks, a
/// `mprotect` a page or two at a time: 171 of them for allreduce at 16
/// ranks, 1,212 at 128 on two threads; with the room, 9 and 33, and the
/// compile 0.2 ms faster. Memory not yet touched costs nothing. (Past the
/// room a heap grows page by page again: 1,222 at 128 ranks on one
/// thread, 15,170 at 512; a room of 64 MB took those to 30 and 82 and
/// changed no time, here or on 16 cores.)
pub fn tune_for_a_short_command() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets glibc's allocation thresholds.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, i32::MAX);
        libc::mallopt(libc::M_TOP_PAD, 16 << 20);
        // Under an address-space limit, one arena: a thread's own arena
        // reserves 64 MB of address space up front, which a limit counts
        // (and the command evaluates on one thread there, `shards.rs`).
        if address_space_limited() {
            libc::mallopt(libc::M_ARENA_MAX, 1);
        }
    }
}

/// Makes [`Counting`] stop the process (E0810, exit status 2) at an
/// allocation that would take the live bytes past `bytes`.
pub fn set_ceiling(bytes: u64) {
    CEILING.store(bytes, Relaxed);
}

/// What this process may still allocate, in bytes: what its address-space
/// limit (`ulimit -v`) leaves above what it has mapped, and the memory the
/// machine has available now, whichever is less; `None` where neither is
/// known.
pub fn available() -> Option<u64> {
    let mut most = address_space_left();
    if let Some(free) = machine_available() {
        most = Some(most.map_or(free, |m| m.min(free)));
    }
    most
}

/// What the process's address-space limit (`ulimit -v`) leaves above
/// what it has mapped, where it has one.
pub fn address_space_left() -> Option<u64> {
    address_space_limit().map(|limit| limit.saturating_sub(mapped_bytes().unwrap_or(0)))
}

/// Whether the process has an address-space limit (`ulimit -v`): then
/// the stack of every thread it starts is taken from the room its memory
/// budgets were measured in.
pub fn address_space_limited() -> bool {
    address_space_limit().is_some()
}

/// The process's address-space limit (`ulimit -v`) in bytes, where it has
/// one.
fn address_space_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        let mut rlimit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes the struct it is given.
        let known = unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut rlimit) } == 0;
        // (`rlim_t` is u64 here, not on every system.)
        #[allow(clippy::unnecessary_cast)]
        let limit = rlimit.rlim_cur as u64;
        (known && rlimit.rlim_cur != libc::RLIM_INFINITY).then_some(limit)
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// The budget of a stage that may take a `share` of what is [`available`]
/// now, on top of what is live: `u64::MAX` where nothing is counted or
/// nothing is known.
pub fn budget(share: f64) -> u64 {
    match available() {
        Some(free) if live_bytes() > 0 => live_bytes() + (free as f64 * share) as u64,
        _ => u64::MAX,
    }
}

/// The process's mapped address space (`VmSize`), from /proc/self/statm.
fn mapped_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().next()?.parse().ok()?;
    // SAFETY: sysconf reads a constant of the system.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * u64::try_from(page).ok()?)
}

/// `MemAvailable` of /proc/meminfo, in bytes, where there is one.
fn machine_available() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

impl Counting {
    fn take(&self, bytes: usize) {
        let pending = PENDING.get() + bytes as i64;
        if pending < BATCH && !EXACT.load(Relaxed) {
            PENDING.set(pending);
            return;
        }
        PENDING.set(0);
        let live = LIVE.fetch_add(pending, Relaxed) + pending;
        if live > PEAK.load(Relaxed) {
            PEAK.store(live, Relaxed);
        }
        if live > 0 && live as u64 > CEILING.load(Relaxed) {
            out_of_memory(live as u64, None);
        }
    }

    fn give(&self, bytes: usize) {
        let pending = PENDING.get() - bytes as i64;
        if pending > -BATCH && !EXACT.load(Relaxed) {
            PENDING.set(pending);
            return;
        }
        PENDING.set(0);
        LIVE.fetch_add(pending, Relaxed);
    }
}

// SAFETY: every call is passed on to `System` unchanged; the counts are
// bookkeeping on the side.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.take(layout.size());
        // SAFETY: the caller's contract, passed on.
        granted(unsafe { System.alloc(layout) }, layout.size())
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        self.take(layout.size());
        // SAFETY: the caller's contract, passed on.
        granted(unsafe { System.alloc_zeroed(layout) }, layout.size())
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) };
        self.give(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let grown = new_size.saturating_sub(layout.size());
        if grown > 0 {
            self.take(grown);
        }
        // SAFETY: the caller's contract, passed on.
        let moved = granted(unsafe { System.realloc(ptr, layout, new_size) }, grown);
        if new_size < layout.size() {
            self.give(layout.size() - new_size);
        }
        moved
    }
}

/// A byte count as the E0810 message gives it, written without
/// allocating (the allocator is what prints it).
struct Bytes(u64);

impl std::fmt::Display for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let b = self.0;
        match b {
            _ if b >= 1 << 30 => write!(f, "{:.1} GB", (b >> 20) as f64 / 1024.0),
            _ if b >= 1 << 20 => write!(f, "{:.1} MB", (b >> 10) as f64 / 1024.0),
            _ if b >= 1 << 10 => write!(f, "{} KB", b >> 10),
            _ => write!(f, "{b} bytes"),
        }
    }
}

/// What the system allocator gave for a request of `bytes`: a refusal
/// (the address-space limit reached before the ceiling, which counts the
/// bytes asked for, not the space the allocator maps for them) ends in
/// E0810 as the ceiling does, never in an abort. No code here asks for
/// memory it could do without (`try_reserve`), so a refusal is always
/// the end.
#[inline(always)]
fn granted(ptr: *mut u8, bytes: usize) -> *mut u8 {
    if ptr.is_null() {
        // What was held before the request (`take` counted it already,
        // or holds it in this thread's pending count).
        let held = LIVE.load(Relaxed) + PENDING.get() - bytes as i64;
        out_of_memory(held.max(0) as u64, Some(bytes as u64));
    }
    ptr
}

/// Says E0810 on standard error and exits with status 2, allocating
/// nothing (the allocator is what calls it): the message is put together
/// in a buffer on the stack. `refused`: the request the system turned
/// down, where it did (else the ceiling was reached).
#[cold]
fn out_of_memory(live: u64, refused: Option<u64>) -> ! {
    struct Line {
        buf: [u8; 512],
        len: usize,
    }
    impl std::fmt::Write for Line {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            let end = (self.len + s.len()).min(self.buf.len());
            self.buf[self.len..end].copy_from_slice(&s.as_bytes()[..end - self.len]);
            self.len = end;
            Ok(())
        }
    }
    let mut line = Line {
        buf: [0; 512],
        len: 0,
    };
    let head = "error[E0810]: msclc needs more memory than this machine lets it have";
    let why = "(the address-space limit, `ulimit -v`, or the memory available)";
    let help = "  = help: compile or simulate less: fewer ranks (a param, `-D`), fewer ops or a shorter program; or run where more memory is free\n";
    let _ = match refused {
        None => std::fmt::write(
            &mut line,
            format_args!(
                "{head}: it would hold {}, and may hold {} {why}\n{help}",
                Bytes(live),
                Bytes(CEILING.load(Relaxed))
            ),
        ),
        Some(bytes) => std::fmt::write(
            &mut line,
            format_args!(
                "{head}: holding {}, it was refused {} more {why}\n{help}",
                Bytes(live),
                Bytes(bytes)
            ),
        ),
    };
    #[cfg(unix)]
    // SAFETY: writes bytes of a live buffer to standard error, then ends
    // the process without running anything that could allocate.
    unsafe {
        libc::write(2, line.buf.as_ptr().cast(), line.len);
        libc::_exit(2);
    }
    #[cfg(not(unix))]
    std::process::abort();
}
