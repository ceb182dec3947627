//! The order in which the reference compiler lists the channels of a fused
//! signal, wait or flush. It keeps them in a Python `set`, unions the sets
//! of the ops it fuses, and writes the set as it iterates: in the order of
//! the slots of CPython's hash table, which for small integers (their own
//! hash) is ascending until a table of eight slots holds a channel of 8 or
//! more, and then is not (`{9} | {2}` lists 9, 2). This module replays
//! CPython's set table (Objects/setobject.c: linear probing, then
//! perturbation; resizing at three fifths full) for small non-negative
//! integers, so that a fused op lists its channels as the reference does.

use crate::ir::Ids;

/// Slots probed one after another before jumping (CPython's LINEAR_PROBES).
const LINEAR_PROBES: usize = 9;
/// How much of the hash each jump mixes in (CPython's PERTURB_SHIFT).
const PERTURB_SHIFT: u32 = 5;
/// The table size of a new set (CPython's PySet_MINSIZE).
const MIN_SIZE: usize = 8;

/// How many slots a set's table has and how many keys it holds: all that
/// decides when CPython resizes the table, whatever the keys are.
#[derive(Clone, Copy, Debug)]
struct Shape {
    len: usize,
    /// Slots holding a key: CPython's `fill` and `used` are equal here,
    /// as nothing is ever removed.
    used: usize,
}

impl Shape {
    const EMPTY: Shape = Shape {
        len: MIN_SIZE,
        used: 0,
    };

    /// Whether a table holding `used` keys is too full for its size.
    fn crowded(self, used: usize) -> bool {
        used * 5 >= (self.len - 1) * 3
    }

    /// `set(self)`: merged into an empty table, which `set_merge` resizes
    /// once, for twice the keys, where it would be too full.
    fn copied(self) -> Shape {
        let len = if Shape::EMPTY.crowded(self.used) {
            table_size(self.used * 2)
        } else {
            MIN_SIZE
        };
        Shape { len, ..self }
    }

    /// `set_merge`'s one big resize before it adds `count` keys.
    fn grown_for(self, count: usize) -> Shape {
        if self.crowded(self.used + count) {
            Shape {
                len: table_size((self.used + count) * 2),
                ..self
            }
        } else {
            self
        }
    }

    /// `set_add_entry` of a new key: the table resizes, for four times
    /// the keys, once too full.
    fn added(self) -> Shape {
        let used = self.used + 1;
        if self.crowded(used) {
            Shape {
                len: table_size(used * 4),
                used,
            }
        } else {
            Shape { used, ..self }
        }
    }

    /// Merges a set of `other_used` keys, `new` of them not in this set
    /// yet, as `set_merge` does.
    fn merged(self, other_used: usize, new: usize) -> Shape {
        if other_used == 0 {
            return self;
        }
        let grown = self.grown_for(other_used);
        if grown.used == 0 {
            // Into an empty table: copied slot for slot where it is
            // `other`'s size, else each key put in the first free slot;
            // no resize either way.
            return Shape {
                used: other_used,
                ..grown
            };
        }
        (0..new).fold(grown, |shape, _| shape.added())
    }
}

/// A CPython set of small non-negative integers.
#[derive(Clone, Debug)]
pub struct PySet {
    table: Vec<Option<u32>>,
    shape: Shape,
}

impl PySet {
    fn empty() -> PySet {
        PySet {
            table: vec![None; MIN_SIZE],
            shape: Shape::EMPTY,
        }
    }

    /// `set(keys)` of a list.
    pub fn from_list(keys: &[u32]) -> PySet {
        let mut set = PySet::empty();
        for &k in keys {
            set.add(k);
        }
        set
    }

    /// Becomes `set(self | other)`: what the reference makes of two fused
    /// ops' channels. In place: a copy that keeps every slot (the table
    /// size it picks is this one's) is no copy at all, so a run of k
    /// fusions costs about k, not k times the table.
    pub fn union_with(&mut self, other: &PySet) {
        self.reshape(self.shape.copied());
        self.merge(other);
        self.reshape(self.shape.copied());
    }

    /// How many keys the set holds.
    pub fn size(&self) -> usize {
        self.shape.used
    }

    /// The keys in iteration order.
    pub fn keys(&self) -> impl Iterator<Item = u32> + '_ {
        self.table.iter().flatten().copied()
    }

    /// Takes `shape`'s table size: the keys keep their slots where it is
    /// this one's, and are reinserted in slot order where not, as
    /// CPython's `set_table_resize` does.
    fn reshape(&mut self, shape: Shape) {
        if shape.len != self.table.len() {
            let old = std::mem::replace(&mut self.table, vec![None; shape.len]);
            for key in old.into_iter().flatten() {
                let slot = PySet::probe(&self.table, key);
                self.table[slot] = Some(key);
            }
        }
        self.shape = shape;
    }

    /// The first free slot on `key`'s probe sequence in `table`, or the
    /// slot holding `key`.
    fn probe(table: &[Option<u32>], key: u32) -> usize {
        let mask = table.len() - 1;
        let mut perturb = key as usize;
        let mut i = key as usize & mask;
        loop {
            let probes = if i + LINEAR_PROBES <= mask {
                LINEAR_PROBES
            } else {
                0
            };
            for (j, slot) in table.iter().enumerate().skip(i).take(probes + 1) {
                match slot {
                    None => return j,
                    Some(k) if *k == key => return j,
                    Some(_) => {}
                }
            }
            perturb >>= PERTURB_SHIFT;
            i = (i * 5 + 1 + perturb) & mask;
        }
    }

    pub fn contains(&self, key: u32) -> bool {
        self.table[PySet::probe(&self.table, key)] == Some(key)
    }

    /// `set_add_entry`.
    fn add(&mut self, key: u32) {
        let slot = PySet::probe(&self.table, key);
        if self.table[slot].is_some() {
            return;
        }
        self.table[slot] = Some(key);
        self.reshape(self.shape.added());
    }

    /// Becomes `set(self | set(keys))`, as `union_with` (a one-key list,
    /// the usual op's, needs no set of its own).
    pub fn union_with_list(&mut self, keys: &[u32]) {
        match keys {
            [key] => {
                self.reshape(self.shape.copied());
                self.reshape(self.shape.grown_for(1));
                self.insert_keys(std::iter::once(*key));
                self.reshape(self.shape.copied());
            }
            _ => self.union_with(&PySet::from_list(keys)),
        }
    }

    /// `set_merge`: `other`'s keys into this set.
    fn merge(&mut self, other: &PySet) {
        if other.shape.used == 0 {
            return;
        }
        self.reshape(self.shape.grown_for(other.shape.used));
        if self.shape.used == 0 && self.table.len() == other.table.len() {
            // An empty table of the same size: a copy, slot for slot.
            self.table.clone_from(&other.table);
            self.shape.used = other.shape.used;
            return;
        }
        self.insert_keys(other.keys());
    }

    /// `set_merge`'s insertions: into an empty table, each key in the first
    /// free slot; else each added as `set_add_entry` adds it.
    fn insert_keys(&mut self, keys: impl Iterator<Item = u32>) {
        if self.shape.used == 0 {
            for key in keys {
                let slot = PySet::probe(&self.table, key);
                self.table[slot] = Some(key);
                self.shape.used += 1;
            }
            return;
        }
        for key in keys {
            self.add(key);
        }
    }
}

/// The set a run of fusions makes (`set(a)`, then `set(s | set(b))` for
/// each op `b` fused), kept cheaply while the run goes on: which keys it
/// holds, and its table's shape, which follows from counts alone. Where
/// every key is below the final table's size, each sits in its own slot
/// (its hash), and the set lists them ascending; only where one is not
/// are the unions replayed on a [`PySet`]. A barrier's signals fused over
/// a thousand channels cost a bit each, not a hash table's work.
///
/// The fused op's list of channels, in the order met, is the history of
/// the unions while each after the first adds one new key (a barrier's
/// signals and waits, which fuse only over new channels); the set logs
/// the unions of its own only once one does not.
#[derive(Clone, Debug)]
pub struct FusedSet {
    shape: Shape,
    /// The keys held, one bit each.
    members: smallvec::SmallVec<[u64; 2]>,
    largest: u32,
    /// How many keys the first op gave.
    first: usize,
    /// The keys of each union in turn (the first op's, then each fused
    /// op's) and where each ends, once a union is not one new key.
    log: Option<(Vec<u32>, Vec<usize>)>,
}

impl FusedSet {
    /// `set(keys)` of the first op's channels.
    pub fn from_list(keys: &[u32]) -> FusedSet {
        let mut set = FusedSet {
            shape: Shape::EMPTY,
            members: smallvec::SmallVec::new(),
            largest: 0,
            first: keys.len(),
            log: None,
        };
        for &key in keys {
            if set.insert(key) {
                set.shape = set.shape.added();
            }
        }
        set
    }

    pub fn contains(&self, key: u32) -> bool {
        let (word, bit) = (key as usize / 64, key % 64);
        self.members.get(word).is_some_and(|w| w & (1 << bit) != 0)
    }

    /// Adds `key`; whether it is new.
    fn insert(&mut self, key: u32) -> bool {
        let (word, bit) = (key as usize / 64, key % 64);
        if word >= self.members.len() {
            self.members.resize(word + 1, 0);
        }
        let new = self.members[word] & (1 << bit) == 0;
        self.members[word] |= 1 << bit;
        self.largest = self.largest.max(key);
        new
    }

    /// Becomes `set(self | set(keys))`; `listed`, the op's channels in the
    /// order met (the first op's, then each key new to the set), gains the
    /// keys it did not hold.
    pub fn union_with_list(&mut self, keys: &[u32], listed: &mut Ids) {
        let was_empty = self.shape.used == 0;
        let before = listed.len();
        for &key in keys {
            if self.insert(key) {
                crate::ir::push_id(listed, key);
            }
        }
        let added = listed.len() - before;
        if self.log.is_none() && (keys.len() != 1 || added != 1) {
            // The history so far: the first op's keys, then one key each.
            let given = listed[..before].to_vec();
            let ends = (self.first..=before).collect();
            self.log = Some((given, ends));
        }
        if let Some((given, ends)) = &mut self.log {
            given.extend_from_slice(keys);
            ends.push(given.len());
        }
        let copied = self.shape.copied();
        self.shape = match keys {
            [_] => {
                let grown = copied.grown_for(1);
                match (added, was_empty) {
                    (0, _) => grown,
                    (_, true) => Shape { used: 1, ..grown },
                    (_, false) => grown.added(),
                }
            }
            _ => {
                let distinct = PySet::from_list(keys).size();
                copied.merged(distinct, added)
            }
        }
        .copied();
    }

    /// Puts `listed` (as [`union_with_list`](Self::union_with_list) made
    /// it) in the order the reference lists the set.
    pub fn list(&self, listed: &mut Ids) {
        if (self.largest as usize) < self.shape.len {
            listed.sort_unstable();
            listed.dedup();
            return;
        }
        let singles;
        let (given, ends): (&[u32], &[usize]) = match &self.log {
            Some((given, ends)) => (given, ends),
            None => {
                singles = (self.first..=listed.len()).collect::<Vec<_>>();
                (listed, &singles)
            }
        };
        let mut set = PySet::from_list(&given[..ends[0]]);
        for pair in ends.windows(2) {
            set.union_with_list(&given[pair[0]..pair[1]]);
        }
        *listed = set.keys().collect();
    }
}

/// The smallest power of two from [`MIN_SIZE`] above `min_used`: the
/// table size CPython picks.
fn table_size(min_used: usize) -> usize {
    (min_used + 1).next_power_of_two().max(MIN_SIZE)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The channels of ops fused one after another, as the reference lists
    /// them.
    fn fused(ops: &[&[u32]]) -> Vec<u32> {
        let mut set = PySet::from_list(ops[0]);
        for op in &ops[1..] {
            set.union_with_list(op);
        }
        set.keys().collect()
    }

    #[test]
    fn fused_channels_list_as_cpython_iterates_them() {
        // Each expectation is what CPython 3.11 prints for the same unions
        // (`set(set(a) | set(b))`, op after op). (Checked also against 4,910
        // random runs of unions, sets of up to 40 keys below 200.)
        let cases: &[(&[&[u32]], &[u32])] = &[
            (&[&[1], &[0]], &[0, 1]),
            (&[&[9], &[2]], &[9, 2]),
            (&[&[2], &[9]], &[9, 2]),
            (&[&[0], &[8]], &[0, 8]),
            (&[&[8], &[0]], &[8, 0]),
            (&[&[3], &[1], &[2], &[0]], &[0, 1, 2, 3]),
            (&[&[9, 2], &[17, 1, 33]], &[17, 2, 1, 33, 9]),
            (&[&[5], &[13, 21], &[29, 37, 45]], &[29, 45, 21, 5, 37, 13]),
            (&[&[7], &[15], &[23], &[31], &[39]], &[7, 39, 23, 15, 31]),
            (
                &[&[12], &[4], &[20], &[3], &[11], &[19], &[27], &[35]],
                &[3, 4, 35, 11, 12, 19, 20, 27],
            ),
            (
                &[&[16], &[0], &[32], &[48], &[5], &[6]],
                &[16, 0, 32, 48, 5, 6],
            ),
            (
                &[
                    &[13],
                    &[12],
                    &[11],
                    &[10],
                    &[9],
                    &[8],
                    &[7],
                    &[6],
                    &[5],
                    &[4],
                    &[3],
                    &[2],
                    &[1],
                    &[0],
                ],
                &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13],
            ),
        ];
        for (ops, want) in cases {
            assert_eq!(fused(ops), *want, "{ops:?}");
        }
    }

    /// A run of fusions kept as a [`FusedSet`] lists its channels as the
    /// same unions on a [`PySet`] do, and gathers each new channel once,
    /// in the order met: over runs of one- to three-key ops (the first op's
    /// keys possibly repeated) whose keys are now all below the table's
    /// size (listed ascending) and now not (replayed).
    #[test]
    fn a_fused_set_lists_its_keys_as_the_unions_made_one_by_one() {
        let mut seed = 0x2545_f491_u64;
        let mut next = |below: u64| {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (seed >> 33) % below
        };
        let (mut ascending, mut replayed) = (0, 0);
        for _ in 0..4_000 {
            let range = [6, 12, 24, 70][next(4) as usize];
            let ops: Vec<Vec<u32>> = (0..1 + next(30))
                .map(|_| (0..1 + next(3)).map(|_| next(range) as u32).collect())
                .collect();
            let mut lazy = FusedSet::from_list(&ops[0]);
            let mut listed = Ids::from_slice(&ops[0]);
            let mut met = ops[0].clone();
            for op in &ops[1..] {
                lazy.union_with_list(op, &mut listed);
                for key in op {
                    if !met.contains(key) {
                        met.push(*key);
                    }
                }
            }
            assert_eq!(listed.as_slice(), met, "{ops:?}");
            assert!(met.iter().all(|&k| lazy.contains(k)) && !lazy.contains(range as u32));
            lazy.list(&mut listed);
            let eager = fused(&ops.iter().map(Vec::as_slice).collect::<Vec<_>>());
            assert_eq!(listed.as_slice(), eager, "{ops:?}");
            if eager.windows(2).all(|w| w[0] < w[1]) {
                ascending += 1;
            } else {
                replayed += 1;
            }
        }
        assert!(ascending > 500 && replayed > 500, "{ascending} {replayed}");
    }
}
