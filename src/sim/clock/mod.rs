//! Vector clocks for the simulator's happens-before order.
//!
//! A plan with a thousand ranks has a million thread blocks. Most of them
//! only ever learn of a few hundred others, and what they learn they learn
//! in shared snapshots: every block of a rank starts its second execution
//! knowing what the rank's first kernel did; every reader of a packet
//! learns its writer's clock. A dense clock per block (one entry per
//! thread of the plan) is threads x threads; instead a clock is built from
//! shared pieces:
//!
//! - a few immutable *parts*, each a sorted list of (thread, epoch) pairs
//!   or a dense array where that is smaller, held by `Rc` and shared by
//!   every clock that learnt them;
//! - a short sorted list of the clock's *own* entries on top (its thread's
//!   epoch, its user's, the packet writers it read from).
//!
//! A lookup takes the largest of the parts' and own entries (a binary
//! search each). A join adds the other clock's parts by reference and
//! merges its own entries where they are news; a clock with many own
//! entries is learnt as one part, made once and shared by all its
//! learners. Past [`OWN_MAX`] own entries a clock turns them into a part,
//! past [`PARTS_MAX`] parts it folds its parts into one. A fold is looked
//! up by the parts folded before it is made, so the blocks that learn the
//! same parts (each rank's block that reads one peer's packets) share one
//! fold; a folded part remembers the parts it covers, so that learning one
//! of those again adds nothing. The rank's clock at a kernel's end is
//! compacted into one part before its blocks start from it.

use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};

mod fold;

pub use fold::forget_folds;
use fold::{fold, max_per_thread, too_many};

/// Own entries kept as a list before they become a part.
const OWN_MAX: usize = 256;
/// Own entries of a learnt clock copied; past that, they are shared as a part.
const SHARE_OWN: usize = 32;
/// Parts kept before they are folded into one.
const PARTS_MAX: usize = 32;
/// Part ids a folded part remembers covering.
const COVERS_MAX: usize = 256;

/// One vector clock: epoch per thread, zero where absent. Cheap to clone
/// (a reference count); copy-on-write.
#[derive(Clone, Default)]
pub struct VClock(Option<Rc<Inner>>);

#[derive(Default)]
struct Inner {
    parts: Vec<Rc<Part>>,
    /// Sorted by thread.
    own: Vec<(u32, u32)>,
    /// `own` as a part, made the first time a clock learns this one, so
    /// that every clock that learns it shares one copy. Reset on change.
    own_part: std::cell::OnceCell<Rc<Part>>,
}

impl Clone for Inner {
    fn clone(&self) -> Inner {
        Inner {
            parts: self.parts.clone(),
            own: self.own.clone(),
            own_part: Default::default(),
        }
    }
}

struct Part {
    id: u64,
    /// Sorted ids of parts this one is at least as large as.
    covers: Box<[u64]>,
    entries: Entries,
}

impl Part {
    /// Whether this part covers part `id` (a part covers only older ones).
    fn covers_id(&self, id: u64) -> bool {
        match (self.covers.first(), self.covers.last()) {
            (Some(&lo), Some(&hi)) if lo <= id && id <= hi => {
                self.covers.binary_search(&id).is_ok()
            }
            _ => false,
        }
    }

    fn bytes(&self) -> usize {
        std::mem::size_of::<Part>() + self.covers.len() * 8 + self.entries.bytes()
    }
}

enum Entries {
    /// Sorted by thread.
    Sparse(Box<[(u32, u32)]>),
    /// Indexed by thread.
    Dense(Box<[u32]>),
}

impl Entries {
    fn at(&self, i: u32) -> u32 {
        match self {
            Entries::Sparse(list) => match list.binary_search_by_key(&i, |e| e.0) {
                Ok(k) => list[k].1,
                Err(_) => 0,
            },
            Entries::Dense(list) => list.get(i as usize).copied().unwrap_or(0),
        }
    }

    /// Entries stored (slots, for a dense array).
    fn len(&self) -> usize {
        match self {
            Entries::Sparse(list) => list.len(),
            Entries::Dense(list) => list.len(),
        }
    }

    /// One past the largest thread index.
    fn span(&self) -> usize {
        match self {
            Entries::Sparse(list) => list.last().map_or(0, |e| e.0 as usize + 1),
            Entries::Dense(list) => list.len(),
        }
    }

    fn bytes(&self) -> usize {
        match self {
            Entries::Sparse(list) => list.len() * 8,
            Entries::Dense(list) => list.len() * 4,
        }
    }

    /// The smaller representation of a dense array.
    fn from_dense(list: Vec<u32>) -> Entries {
        let nonzero = list.iter().filter(|v| **v != 0).count();
        if nonzero * 2 >= list.len() {
            Entries::Dense(list.into_boxed_slice())
        } else {
            Entries::Sparse(
                list.iter()
                    .enumerate()
                    .filter(|(_, v)| **v != 0)
                    .map(|(i, v)| (i as u32, *v))
                    .collect(),
            )
        }
    }
}

fn new_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

fn own_at(own: &[(u32, u32)], i: u32) -> u32 {
    match own.binary_search_by_key(&i, |e| e.0) {
        Ok(k) => own[k].1,
        Err(_) => 0,
    }
}

/// Whether at most [`SHARE_OWN`] of `own` are news to `me`.
fn few_news(me: &Inner, own: &[(u32, u32)]) -> bool {
    let mut news = 0;
    for &(i, v) in own {
        if me.at(i) < v {
            news += 1;
            if news > SHARE_OWN {
                return false;
            }
        }
    }
    true
}

/// Whether `p` adds nothing to `parts`.
fn covered(parts: &[Rc<Part>], p: &Part) -> bool {
    parts.iter().any(|q| q.id == p.id || q.covers_id(p.id))
}

impl Inner {
    fn at(&self, i: u32) -> u32 {
        let mut best = own_at(&self.own, i);
        for p in &self.parts {
            best = best.max(p.entries.at(i));
        }
        best
    }

    /// Keeps the own list and the parts short.
    fn normalize(&mut self) {
        self.own_part = Default::default();
        if self.own.len() > OWN_MAX {
            let own = std::mem::take(&mut self.own);
            self.parts.push(Rc::new(Part {
                id: new_id(),
                covers: Box::new([]),
                entries: Entries::Sparse(own.into_boxed_slice()),
            }));
        }
        if too_many(&self.parts) {
            self.parts = vec![fold(&self.parts)];
        }
    }
}

impl VClock {
    /// Thread `i`'s epoch in this clock.
    pub fn at(&self, i: usize) -> u32 {
        match &self.0 {
            Some(inner) => inner.at(i as u32),
            None => 0,
        }
    }

    fn make_mut(&mut self) -> &mut Inner {
        Rc::make_mut(self.0.get_or_insert_with(Default::default))
    }

    /// Raises thread `i`'s entry to at least `epoch`.
    pub fn raise(&mut self, i: usize, epoch: u32) {
        if self.at(i) >= epoch {
            return;
        }
        let i = u32::try_from(i).expect("thread index fits in u32");
        let inner = self.make_mut();
        inner.own_part = Default::default();
        match inner.own.binary_search_by_key(&i, |e| e.0) {
            Ok(k) => inner.own[k].1 = epoch,
            Err(k) => inner.own.insert(k, (i, epoch)),
        }
        inner.normalize();
    }

    /// Raises `self` to at least `other`.
    pub fn join(&mut self, other: &VClock) {
        self.join_all(std::iter::once(other));
    }

    /// Raises `self` to at least each of `others`: their parts are added
    /// by reference (folded once if there are too many), their own entries
    /// merged where they are news.
    pub fn join_all<'a>(&mut self, others: impl IntoIterator<Item = &'a VClock>) {
        let mut others = others.into_iter().filter_map(|o| o.0.as_ref());
        if self.0.is_none() {
            // Nothing known yet: share the first clock as it is.
            let Some(first) = others.next() else {
                return;
            };
            self.0 = Some(first.clone());
        }
        let mut others = others.peekable();
        let Some(first) = others.next() else {
            return;
        };
        if others.peek().is_none() && self.join_one(first) {
            return;
        }
        let me = self.0.as_ref().expect("set above");
        let mut candidates: Vec<&Rc<Part>> = Vec::new();
        let mut own: Vec<(u32, u32)> = Vec::new();
        for o in std::iter::once(first).chain(others) {
            if Rc::ptr_eq(me, o) {
                continue;
            }
            // Many own entries are learnt as one shared part, unless only a
            // few of them are news (a clock much like this one).
            let shared_own = (o.own.len() > SHARE_OWN && !few_news(me, &o.own)).then(|| {
                o.own_part.get_or_init(|| {
                    Rc::new(Part {
                        id: new_id(),
                        covers: Box::new([]),
                        entries: Entries::Sparse(o.own.clone().into_boxed_slice()),
                    })
                })
            });
            candidates.extend(o.parts.iter().chain(shared_own));
            if shared_own.is_none() {
                own.extend_from_slice(&o.own);
            }
        }
        // The parts that are news: not known, not covered by a known part
        // or by another new one.
        candidates.sort_unstable_by_key(|p| p.id);
        candidates.dedup_by_key(|p| p.id);
        candidates.retain(|p| !covered(&me.parts, p));
        let folds: Vec<&Rc<Part>> = candidates
            .iter()
            .filter(|p| !p.covers.is_empty())
            .copied()
            .collect();
        // (Skipped for large joins: they fold anyway, and the fold is the
        // same with a redundant part.)
        if !folds.is_empty() && candidates.len() > 1 && folds.len() * candidates.len() <= 4096 {
            candidates.retain(|p| !folds.iter().any(|q| q.covers_id(p.id)));
        }
        let parts = (!candidates.is_empty()).then(|| {
            let mut list: Vec<Rc<Part>> = me
                .parts
                .iter()
                .filter(|q| !candidates.iter().any(|p| p.covers_id(q.id)))
                .cloned()
                .collect();
            list.extend(candidates.into_iter().cloned());
            list
        });
        if parts.is_none() && own.is_empty() {
            return;
        }
        let mut next = Inner {
            parts: parts.unwrap_or_else(|| me.parts.clone()),
            own: me.own.clone(),
            own_part: Default::default(),
        };
        if too_many(&next.parts) {
            next.parts = vec![fold(&next.parts)];
        }
        // The own entries that are news.
        own.sort(); // runs, one per clock
        let news: Vec<(u32, u32)> = max_per_thread(own)
            .into_iter()
            .filter(|&(i, v)| next.at(i) < v)
            .collect();
        if news.is_empty()
            && next.parts.len() == me.parts.len()
            && next
                .parts
                .iter()
                .zip(&me.parts)
                .all(|(a, b)| Rc::ptr_eq(a, b))
        {
            return;
        }
        next.own = merge_max(&next.own, &news);
        next.normalize();
        self.0 = Some(Rc::new(next));
    }

    /// Joins one clock that brings no part `self` lacks (the common case:
    /// a signal from a block that learnt nothing new since) without the
    /// general join's lists; false if it does bring one.
    fn join_one(&mut self, o: &Rc<Inner>) -> bool {
        let me = self.0.as_ref().expect("a clock");
        if Rc::ptr_eq(me, o) {
            return true;
        }
        if o.own.len() > SHARE_OWN && !few_news(me, &o.own)
            || o.parts.iter().any(|p| !covered(&me.parts, p))
        {
            return false;
        }
        let news = o.own.iter().filter(|&&(i, v)| me.at(i) < v).count();
        if news == 0 {
            return true;
        }
        let inner = self.make_mut();
        inner.own_part = Default::default();
        let learnt: Vec<(u32, u32)> = o
            .own
            .iter()
            .filter(|&&(i, v)| inner.at(i) < v)
            .copied()
            .collect();
        inner.own = merge_max(&inner.own, &learnt);
        inner.normalize();
        true
    }

    /// Folds everything into one part: for a clock that many clocks start
    /// from (a rank's kernel end), so that what they learn later meets one
    /// shared part rather than a copy of its own entries in each.
    pub fn compact(&mut self) {
        let Some(inner) = &self.0 else {
            return;
        };
        if inner.own.is_empty() && inner.parts.len() <= 1 {
            return;
        }
        let mut parts = inner.parts.clone();
        if !inner.own.is_empty() {
            parts.push(Rc::new(Part {
                id: new_id(),
                covers: Box::new([]),
                entries: Entries::Sparse(inner.own.clone().into_boxed_slice()),
            }));
        }
        self.0 = Some(Rc::new(Inner {
            parts: vec![fold(&parts)],
            own: Vec::new(),
            own_part: Default::default(),
        }));
    }

    /// Bytes this clock holds on its own (parts counted in full; shared
    /// ones are counted once per clock that holds them).
    #[cfg(test)]
    pub fn bytes(&self) -> usize {
        self.0.as_ref().map_or(0, |inner| {
            inner.own.len() * 8 + inner.parts.iter().map(|p| p.entries.bytes()).sum::<usize>()
        })
    }
}

/// Two sorted lists merged, each thread's larger epoch kept.
fn merge_max(a: &[(u32, u32)], b: &[(u32, u32)]) -> Vec<(u32, u32)> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].0.cmp(&b[j].0) {
            std::cmp::Ordering::Less => {
                out.push(a[i]);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                out.push(b[j]);
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                out.push((a[i].0, a[i].1.max(b[j].1)));
                i += 1;
                j += 1;
            }
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

impl std::fmt::Debug for VClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Some(inner) = &self.0 else {
            return f.write_str("{}");
        };
        let span = inner
            .parts
            .iter()
            .map(|p| p.entries.span())
            .chain(inner.own.last().map(|e| e.0 as usize + 1))
            .max()
            .unwrap_or(0);
        f.debug_map()
            .entries(
                (0..span as u32)
                    .map(|i| (i, inner.at(i)))
                    .filter(|(_, v)| *v != 0),
            )
            .finish()
    }
}

/// What a thread knows of every thread's finished epochs: `data` through
/// release/acquire synchronisation (writes are visible), `exec` through any
/// synchronisation, relaxed included (earlier reads are over). Shared
/// copy-on-write: signals, packets and barriers hold snapshots.
#[derive(Debug, Clone, Default)]
pub struct Clocks {
    pub data: VClock,
    pub exec: VClock,
}

impl Clocks {
    /// All zeros.
    pub fn zero() -> Clocks {
        Clocks::default()
    }

    #[allow(dead_code)]
    pub fn join(&mut self, other: &Clocks) {
        self.data.join(&other.data);
        self.exec.join(&other.exec);
    }

    /// Joins every one of `others`, folding once.
    pub fn join_all<'a>(&mut self, others: impl IntoIterator<Item = &'a Clocks> + Clone) {
        self.data
            .join_all(others.clone().into_iter().map(|c| &c.data));
        self.exec.join_all(others.into_iter().map(|c| &c.exec));
    }

    /// Only the execution ordering of `self` (what a relaxed signal carries).
    pub fn relaxed(&self) -> Clocks {
        Clocks {
            data: VClock::default(),
            exec: self.exec.clone(),
        }
    }

    /// See [`VClock::compact`].
    pub fn compact(&mut self) {
        self.data.compact();
        self.exec.compact();
    }

    pub fn set(&mut self, thread: usize, epoch: u32) {
        self.data.raise(thread, epoch);
        self.exec.raise(thread, epoch);
    }
}

#[cfg(test)]
mod tests;
