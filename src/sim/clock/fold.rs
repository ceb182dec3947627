//! Folding a clock's parts into one, and the cache that lets the blocks
//! that learn the same parts share one fold (see the module above).

use super::*;

/// Whether `parts` should be folded into one: more than [`PARTS_MAX`], or
/// a few that mostly repeat each other (more entries in all than four
/// times the largest holds: the knowledge a ring of blocks passes on
/// grows by a little at each step, and each step would add a part).
pub(super) fn too_many(parts: &[Rc<Part>]) -> bool {
    if parts.len() > PARTS_MAX {
        return true;
    }
    if parts.len() < 4 {
        return false;
    }
    let (mut total, mut largest) = (0, 0);
    for p in parts {
        total += p.entries.len();
        largest = largest.max(p.entries.len());
    }
    total > 4 * largest
}

/// Bytes of recent folds kept alive for reuse.
const RECENT_FOLD_BYTES: usize = 64 << 20;

/// Folds made, by the ids of the parts folded: blocks that learn the same
/// parts (every block of a rank reading one peer's packets) share one fold.
/// The most recent folds are kept alive a while even when no clock holds
/// them (a rank's blocks may drop theirs at the kernel's end before the
/// next rank's blocks fold the same parts); the map's other entries are
/// swept now and then.
#[derive(Default)]
struct FoldCache {
    map: std::collections::HashMap<Box<[u64]>, std::rc::Weak<Part>>,
    swept: usize,
    recent: std::collections::VecDeque<Rc<Part>>,
    recent_bytes: usize,
}

thread_local! {
    static FOLDS: std::cell::RefCell<FoldCache> = Default::default();
}

/// Lets go of the recent folds (at the end of a simulation).
pub fn forget_folds() {
    FOLDS.with(|f| *f.borrow_mut() = FoldCache::default());
}

/// One part as large as all of `parts`, shared with an earlier fold of the
/// same parts if one is still alive.
pub(super) fn fold(parts: &[Rc<Part>]) -> Rc<Part> {
    let mut key: Vec<u64> = parts.iter().map(|p| p.id).collect();
    key.sort_unstable();
    key.dedup();
    let key = key.into_boxed_slice();
    if let Some(hit) = FOLDS.with(|f| f.borrow().map.get(&key).and_then(|w| w.upgrade())) {
        return hit;
    }
    let part = Rc::new(Part {
        id: new_id(),
        covers: fold_covers(parts),
        entries: fold_entries(parts),
    });
    FOLDS.with(|f| {
        let cache = &mut *f.borrow_mut();
        cache.map.insert(key, Rc::downgrade(&part));
        if cache.map.len() > 2 * cache.swept.max(1024) {
            cache.map.retain(|_, w| w.strong_count() > 0);
            cache.swept = cache.map.len();
        }
        cache.recent_bytes += part.bytes();
        cache.recent.push_back(part.clone());
        while cache.recent_bytes > RECENT_FOLD_BYTES {
            let Some(old) = cache.recent.pop_front() else {
                break;
            };
            cache.recent_bytes -= old.bytes();
        }
    });
    part
}

/// The ids a fold of `parts` covers: theirs and what they cover, the
/// newest [`COVERS_MAX`].
pub(super) fn fold_covers(parts: &[Rc<Part>]) -> Box<[u64]> {
    let mut covers: Vec<u64> = parts
        .iter()
        .flat_map(|p| std::iter::once(p.id).chain(p.covers.iter().copied()))
        .collect();
    // (Sorted runs, one per part: a stable sort merges them.)
    covers.sort();
    covers.dedup();
    if covers.len() > COVERS_MAX {
        covers.drain(..covers.len() - COVERS_MAX);
    }
    covers.into_boxed_slice()
}

/// Each thread's largest epoch in `parts`.
pub(super) fn fold_entries(parts: &[Rc<Part>]) -> Entries {
    let span = parts.iter().map(|p| p.entries.span()).max().unwrap_or(0);
    let stored: usize = parts.iter().map(|p| p.entries.len()).sum();
    if stored * 8 >= span {
        // Dense enough: take the maximum slot by slot.
        let mut list = vec![0u32; span];
        for p in parts {
            match &p.entries {
                Entries::Sparse(l) => {
                    for &(i, v) in l.iter() {
                        let slot = &mut list[i as usize];
                        *slot = (*slot).max(v);
                    }
                }
                Entries::Dense(l) => {
                    for (a, b) in list.iter_mut().zip(l.iter()) {
                        *a = (*a).max(*b);
                    }
                }
            }
        }
        return Entries::from_dense(list);
    }
    // Sparse: sort all entries, keep each thread's largest.
    let mut all: Vec<(u32, u32)> = Vec::with_capacity(stored);
    for p in parts {
        match &p.entries {
            Entries::Sparse(l) => all.extend_from_slice(l),
            Entries::Dense(l) => all.extend(
                l.iter()
                    .enumerate()
                    .filter(|(_, v)| **v != 0)
                    .map(|(i, v)| (i as u32, *v)),
            ),
        }
    }
    // (Sorted runs, one per part: a stable sort merges them.)
    all.sort();
    Entries::Sparse(max_per_thread(all).into_boxed_slice())
}

/// A list sorted by (thread, epoch) cut to each thread's last (largest).
pub(super) fn max_per_thread(sorted: Vec<(u32, u32)>) -> Vec<(u32, u32)> {
    let mut out: Vec<(u32, u32)> = Vec::with_capacity(sorted.len());
    for e in sorted {
        match out.last_mut() {
            Some(last) if last.0 == e.0 => last.1 = e.1,
            _ => out.push(e),
        }
    }
    out
}
