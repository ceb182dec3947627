//! Work spread over the machine's cores, the one way msclc does it: each
//! thread takes the next item left, this thread among them, so that every
//! item is done even where no other thread can be started.

use std::sync::Mutex;

/// The cores this machine offers (1 where it cannot tell): asked once, for
/// the asking reads the process's CPU set and cgroup quota (23 µs here),
/// and the language server and `msclc tune` compile again and again.
pub fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Runs `f` on every item, on up to `threads` threads.
pub fn for_each_mut<T: Send>(items: &mut [T], threads: usize, f: impl Fn(&mut T) + Sync) {
    let threads = threads.min(items.len());
    if threads <= 1 {
        items.iter_mut().for_each(f);
        return;
    }
    let left = Mutex::new(items.iter_mut());
    let work = || loop {
        // A poisoned lock only means another thread's `f` panicked, which
        // the scope below passes on: the iterator itself is whole.
        let next = left.lock().unwrap_or_else(|e| e.into_inner()).next();
        match next {
            Some(item) => f(item),
            None => break,
        }
    };
    std::thread::scope(|scope| {
        for _ in 1..threads {
            // A thread that cannot start leaves its items to the others.
            let _ = std::thread::Builder::new().spawn_scoped(scope, work);
        }
        work();
    });
}

/// `f` of every item, in the items' order, on up to `threads` threads.
pub fn map<T: Sync, R: Send>(items: &[T], threads: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let mut slots: Vec<(&T, Option<R>)> = items.iter().map(|item| (item, None)).collect();
    for_each_mut(&mut slots, threads, |(item, out)| *out = Some(f(item)));
    slots.into_iter().filter_map(|(_, out)| out).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every item is done once, and the results keep the items' order,
    /// whatever the number of threads.
    #[test]
    fn every_item_once_in_order() {
        let items: Vec<u64> = (0..1000).collect();
        for threads in [1, 2, 7, 64] {
            let squares = map(&items, threads, |x| x * x);
            assert_eq!(squares, items.iter().map(|x| x * x).collect::<Vec<_>>());
            let mut counts = vec![0u32; 1000];
            for_each_mut(&mut counts, threads, |c| *c += 1);
            assert!(counts.iter().all(|&c| c == 1), "{threads} threads");
        }
    }
}
