//! The stack of the threads that compile, and how much of it is left.
//!
//! The checker and the evaluator recurse over the program (its nesting,
//! and the evaluator its calls too), so a thread that compiles is given
//! [`crate::STACK_BYTES`]. Under an address-space limit (`ulimit -v`)
//! that reservation may not fit: the command then takes the largest
//! stack that does (of 16 MB at least; less, and it does not run), and
//! the evaluator, which asks [`too_deep`] at every call, stops recursion
//! that would overflow it with a diagnostic (E0401).

use std::cell::Cell;

/// Stacks a command's thread is tried with, largest first.
const SIZES: [usize; 4] = [crate::STACK_BYTES, 256 << 20, 64 << 20, 16 << 20];

/// The stack a call of a user function must leave: enough for the
/// deepest nesting the parser admits (`syntax::nesting::MAX_NESTING`
/// levels of blocks and expressions) below the call, in a debug build (a
/// release build needs a tenth as much).
const MARGIN: usize = 4 << 20;

thread_local! {
    /// The lowest address this thread's stack may reach, and its size,
    /// where they are known (0: not known).
    static NOTED: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
}

/// Runs `f` on a thread of the largest stack in [`SIZES`] the system
/// gives, within half of what an address-space limit leaves (the heap
/// needs the rest); `Err` if `f` panicked; `None` where no such thread
/// can start (msclc cannot run on less: the main thread's stack, which
/// grows into the same address space as the heap, could overflow at any
/// depth).
pub fn run_on_a_deep_stack<T: Send + 'static>(f: fn() -> T) -> Option<std::thread::Result<T>> {
    let room = crate::memory::address_space_left().map_or(usize::MAX, |left| {
        usize::try_from(left / 2).unwrap_or(usize::MAX)
    });
    SIZES.into_iter().filter(|b| *b <= room).find_map(|bytes| {
        let thread = std::thread::Builder::new()
            .stack_size(bytes)
            .spawn(move || {
                note(bytes);
                f()
            });
        thread.ok().map(|t| t.join())
    })
}

/// The smallest stack msclc runs on, in bytes.
pub const SMALLEST: usize = SIZES[SIZES.len() - 1];

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
        (lowest, _) => here().saturating_sub(lowest) < MARGIN,
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
