//! The order in which the reference compiler lists the channels of a fused
//! signal, wait or flush. It keeps them in a Python `set`, unions the sets
//! of the ops it fuses, and writes the set as it iterates: in the order of
//! the slots of CPython's hash table, which for small integers (their own
//! hash) is ascending until a table of eight slots holds a channel of 8 or
//! more, and then is not (`{9} | {2}` lists 9, 2). This module replays
//! CPython's set table (Objects/setobject.c: linear probing, then
//! perturbation; resizing at three fifths full) for small non-negative
//! integers, so that a fused op lists its channels as the reference does.

/// Slots probed one after another before jumping (CPython's LINEAR_PROBES).
const LINEAR_PROBES: usize = 9;
/// How much of the hash each jump mixes in (CPython's PERTURB_SHIFT).
const PERTURB_SHIFT: u32 = 5;
/// The table size of a new set (CPython's PySet_MINSIZE).
const MIN_SIZE: usize = 8;

/// A CPython set of small non-negative integers.
#[derive(Clone, Debug)]
pub struct PySet {
    table: Vec<Option<u32>>,
    /// Slots holding a key: CPython's `fill` and `used` are equal here,
    /// as nothing is ever removed.
    used: usize,
}

impl PySet {
    fn empty() -> PySet {
        PySet {
            table: vec![None; MIN_SIZE],
            used: 0,
        }
    }

    fn mask(&self) -> usize {
        self.table.len() - 1
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
        self.copy_in_place();
        self.merge(other);
        self.copy_in_place();
    }

    /// How many keys the set holds.
    pub fn size(&self) -> usize {
        self.used
    }

    /// The keys in iteration order.
    pub fn keys(&self) -> impl Iterator<Item = u32> + '_ {
        self.table.iter().flatten().copied()
    }

    /// Becomes `set(self)`: a new set merged from this one. Merged into an
    /// empty table, the keys keep their slots when that table grows to
    /// this one's size, and are reinserted in slot order when not: what
    /// `resize` does, to the size `set_merge` picks.
    fn copy_in_place(&mut self) {
        let size = if self.used * 5 >= (MIN_SIZE - 1) * 3 {
            // `set_merge`'s one big resize, for `used * 2` keys.
            table_size(self.used * 2)
        } else {
            MIN_SIZE
        };
        if size != self.table.len() {
            self.resize_to(size);
        }
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
        self.used += 1;
        if self.used * 5 >= self.mask() * 3 {
            self.resize(self.used * 4);
        }
    }

    /// `set_table_resize`: a table of [`table_size`]`(min_used)` slots.
    fn resize(&mut self, min_used: usize) {
        self.resize_to(table_size(min_used));
    }

    /// A table of `size` slots with the keys reinserted in slot order.
    fn resize_to(&mut self, size: usize) {
        let old = std::mem::replace(&mut self.table, vec![None; size]);
        for key in old.into_iter().flatten() {
            let slot = PySet::probe(&self.table, key);
            self.table[slot] = Some(key);
        }
    }

    /// Becomes `set(self | set(keys))`, as `union_with` (a one-key list,
    /// the usual op's, needs no set of its own).
    pub fn union_with_list(&mut self, keys: &[u32]) {
        match keys {
            [key] => {
                self.copy_in_place();
                self.grow_for(1);
                self.insert_keys(std::iter::once(*key));
                self.copy_in_place();
            }
            _ => self.union_with(&PySet::from_list(keys)),
        }
    }

    /// `set_merge`: `other`'s keys into this set.
    fn merge(&mut self, other: &PySet) {
        if other.used == 0 {
            return;
        }
        self.grow_for(other.used);
        if self.used == 0 && self.table.len() == other.table.len() {
            // An empty table of the same size: a copy, slot for slot.
            self.table.clone_from(&other.table);
            self.used = other.used;
            return;
        }
        self.insert_keys(other.keys());
    }

    /// `set_merge`'s one big resize before it adds `count` keys.
    fn grow_for(&mut self, count: usize) {
        if (self.used + count) * 5 >= self.mask() * 3 {
            self.resize((self.used + count) * 2);
        }
    }

    /// `set_merge`'s insertions: into an empty table, each key in the first
    /// free slot; else each added as `set_add_entry` adds it.
    fn insert_keys(&mut self, keys: impl Iterator<Item = u32>) {
        if self.used == 0 {
            for key in keys {
                let slot = PySet::probe(&self.table, key);
                self.table[slot] = Some(key);
                self.used += 1;
            }
            return;
        }
        for key in keys {
            self.add(key);
        }
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
}
