//! The stack of the threads that compile, and how much of it is left.
//!
//! The checker and the evaluator recurse over the program (its nesting,
//! and the evaluator its calls too), so a thread that compiles is given
//! [`crate::STACK_BYTES`]. Under an address-space limit (`ulimit -v`)
//! that reservation may not fit: the command then takes the largest
//! stack that does, and the evaluator, which asks [`too_deep`] at every call,
//! stops recursion that would overflow it with a diagnostic (E0401).

use std::cell::Cell;

/// Stacks a command's thread is tried with, largest first.
const SIZES: [usize; 4] = [crate::STACK_BYTES, 256 << 20, 64 << 20, 16 << 20];

/// The stack a call of a user function must leave: enough for the
/// deepest nesting the parser admits (`syntax::nesting::MAX_NESTING`
/// levels of blocks and expressions) below the call, in a debug build;
/// half of a stack smaller than twice that (a release build needs a
/// tenth as much, and a program of a few levels little at all).
const MARGIN: usize = 4 << 20;

thread_local! {
    /// The lowest address this thread's stack may reach, and its size,
    /// where they are known (0: not known).
    static NOTED: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
}

/// Runs `f` on a thread of the largest stack in [`SIZES`] the system
/// gives, within half of what an address-space limit leaves (the heap
/// needs the rest), or on this thread (its stack, `ulimit -s`) where it
/// gives none; `Err` if `f` panicked.
pub fn run_on_a_deep_stack<T: Send + 'static>(f: fn() -> T) -> std::thread::Result<T> {
    let room = crate::memory::address_space_left().map_or(usize::MAX, |left| {
        usize::try_from(left / 2).unwrap_or(usize::MAX)
    });
    for bytes in SIZES.into_iter().filter(|b| *b <= room) {
        let thread = std::thread::Builder::new()
            .stack_size(bytes)
            .spawn(move || {
                note(bytes);
                f()
            });
        if let Ok(thread) = thread {
            return thread.join();
        }
    }
    // The main thread's stack grows into the address space too: it is
    // grown now, before the heap can take the room it will need.
    let bytes = main_stack_bytes().min(room);
    reach(bytes.saturating_sub(256 << 10));
    note(bytes);
    Ok(f())
}

/// Makes this thread's stack reach `bytes` below here.
#[inline(never)]
fn reach(bytes: usize) {
    let mut page = [0u8; 16 << 10];
    if bytes > page.len() {
        reach(bytes - page.len());
    }
    // (After the call: no frame is reused for it.)
    std::hint::black_box(&mut page);
}

/// Notes that this thread's stack holds about `bytes` from here down.
pub fn note(bytes: usize) {
    // (Less a little: the thread's start took some of it.)
    NOTED.set((here().saturating_sub(bytes.saturating_sub(64 << 10)), bytes));
}

/// Whether a call from here leaves less stack than its margin, where
/// [`note`] was called on this thread.
#[inline(always)]
pub fn too_deep() -> bool {
    match NOTED.get() {
        (0, _) => false,
        (lowest, size) => here().saturating_sub(lowest) < MARGIN.min(size / 2),
    }
}

/// The size of this thread's stack, where [`note`] was called on it.
pub fn size() -> Option<usize> {
    Some(NOTED.get().1).filter(|b| *b > 0)
}

/// About where the stack is now (it grows down on every machine msclc
/// runs on).
#[inline(always)]
fn here() -> usize {
    let probe = 0u8;
    std::hint::black_box(&probe) as *const u8 as usize
}

/// The main thread's stack (`ulimit -s`), 8 MB where it is unlimited or
/// unknown.
fn main_stack_bytes() -> usize {
    const DEFAULT: usize = 8 << 20;
    #[cfg(unix)]
    {
        let mut rlimit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes the struct it is given.
        if unsafe { libc::getrlimit(libc::RLIMIT_STACK, &mut rlimit) } == 0
            && rlimit.rlim_cur != libc::RLIM_INFINITY
        {
            return usize::try_from(rlimit.rlim_cur).unwrap_or(DEFAULT);
        }
    }
    DEFAULT
}
