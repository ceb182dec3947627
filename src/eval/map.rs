//! The language's maps: insertion-ordered (iteration follows insertion, as
//! Python's dict does) and found by key in constant time. Programs index
//! maps of N² channels by `(peer, gpu)` once per op, the evaluator's most
//! frequent lookup: a map whose keys are all pairs of small non-negative
//! ints finds them in a grid of positions, one read where hashing costs a
//! hash and two or three misses in memory at a thousand ranks. Any other
//! map hashes. Built, such a map finds the keys it has so far in rows of
//! positions rather than a hash table, for the same reason.

use super::value::Value;

#[derive(Debug, Default)]
pub struct MapVal {
    pub entries: Vec<(Value, Value)>,
    index: Index,
}

#[derive(Debug)]
enum Index {
    /// Each entry's key hash ([`Key::hash`]) and position in `entries`:
    /// growing the table rehashes from the stored hashes, without reading
    /// the keys again.
    Hashed(hashbrown::HashTable<(u64, u32)>),
    /// Every key a pair `(a, b)` of ints from 0: the position of the entry
    /// of `(a, b)` at `a * width + b`, [`ABSENT`] where there is none.
    Grid { width: u64, positions: Vec<u32> },
}

impl Default for Index {
    fn default() -> Index {
        Index::Hashed(hashbrown::HashTable::new())
    }
}

/// What a key's hash starts with when it is a tuple (the other values
/// hash as they derive it).
const PAIR: u8 = 0xa1;
const TUPLE: u8 = 0xa2;

/// A grid cell with no entry.
const ABSENT: u32 = u32::MAX;

/// The fewest entries a map has for a grid (a small map hashes fast
/// enough), and the most cells the grid has per entry (a sparse one would
/// take more memory than the hashes).
const GRID_MIN_ENTRIES: usize = 64;
const GRID_CELLS_PER_ENTRY: u64 = 4;

/// A key as a lookup gives it: a value, or the items of a tuple not yet
/// built (`channels[(peer, gpu)]` looks up its pair without allocating it).
#[derive(Clone, Copy)]
pub enum Key<'a> {
    Value(&'a Value),
    Tuple(&'a [Value]),
}

impl Key<'_> {
    /// The key as a value's form would have it: the items of a tuple yet
    /// to be built are a `Pair` when they are two ints.
    fn pair(self) -> Option<(i64, i64)> {
        match self {
            Key::Value(Value::Pair(a, b)) | Key::Tuple([Value::Int(a), Value::Int(b)]) => {
                Some((*a, *b))
            }
            _ => None,
        }
    }

    fn hash(self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = rustc_hash::FxHasher::default();
        // A tuple hashes the same whichever way it comes: built, or as the
        // items of one yet to be built.
        match (self, self.pair()) {
            (_, Some(pair)) => (PAIR, pair).hash(&mut h),
            (Key::Tuple(items), None) => (TUPLE, items).hash(&mut h),
            (Key::Value(Value::Tuple(items)), None) => (TUPLE, &items[..]).hash(&mut h),
            (Key::Value(v), None) => v.hash(&mut h),
        }
        h.finish()
    }

    fn matches(self, key: &Value) -> bool {
        match (self, key) {
            (Key::Value(v), key) => v == key,
            (Key::Tuple(_), Value::Pair(a, b)) => self.pair() == Some((*a, *b)),
            (Key::Tuple(items), Value::Tuple(k)) => items == &k[..],
            (Key::Tuple(_), _) => false,
        }
    }
}

/// The grid coordinates of a key that is a pair of non-negative ints.
fn grid_cell(key: Key<'_>) -> Option<(u64, u64)> {
    match key.pair()? {
        (a, b) if a >= 0 && b >= 0 => Some((a as u64, b as u64)),
        _ => None,
    }
}

impl MapVal {
    pub fn get(&self, key: &Value) -> Option<&Value> {
        self.lookup(Key::Value(key))
    }

    pub fn lookup(&self, key: Key<'_>) -> Option<&Value> {
        let at = match &self.index {
            Index::Grid { width, positions } => {
                // Every key is a pair in the grid: any other is absent.
                let (a, b) = grid_cell(key)?;
                if b >= *width {
                    return None;
                }
                let cell = a.checked_mul(*width)?.checked_add(b)?;
                match positions.get(usize::try_from(cell).ok()?) {
                    Some(&at) if at != ABSENT => at,
                    _ => return None,
                }
            }
            Index::Hashed(table) => {
                let hash = key.hash();
                let entries = &self.entries;
                let &(_, at) = table.find(hash, |&(h, i)| {
                    h == hash && key.matches(&entries[i as usize].0)
                })?;
                at
            }
        };
        Some(&self.entries[at as usize].1)
    }
}

impl PartialEq for MapVal {
    fn eq(&self, other: &MapVal) -> bool {
        self.entries == other.entries
    }
}

impl Eq for MapVal {}

impl std::hash::Hash for MapVal {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.entries.hash(state)
    }
}

/// Builds maps in time linear in their size (a later value for a key
/// replaces the earlier one in place, as in Python).
#[derive(Default)]
pub struct MapBuilder {
    entries: Vec<(Value, Value)>,
    finder: Finder,
}

/// How the builder finds a key it already has.
enum Finder {
    /// Every key so far a pair `(a, b)` of non-negative ints, as an
    /// all-pairs channel map's: the position of `(a, b)`'s entry at
    /// `rows[a][b]` ([`ABSENT`] where none), found without hashing and
    /// near the cell found before (a comprehension walks its pairs in
    /// order; a hash table of a million keys misses the cache on each).
    Rows {
        rows: Vec<Vec<u32>>,
        cells: u64,
    },
    Hashed(hashbrown::HashTable<(u64, u32)>),
}

impl Default for Finder {
    fn default() -> Finder {
        Finder::Rows {
            rows: Vec::new(),
            cells: 0,
        }
    }
}

/// The cells the rows may have beyond [`GRID_CELLS_PER_ENTRY`] per entry:
/// room for a small map's first keys wherever they fall.
const ROWS_SLACK: u64 = 1024;

impl MapBuilder {
    pub fn new() -> MapBuilder {
        MapBuilder::default()
    }

    pub fn insert(&mut self, key: Value, value: Value) {
        // Positions fit in u32: maps stop at MAX_ELEMENTS entries.
        let next = self.entries.len() as u32;
        match &mut self.finder {
            Finder::Rows { rows, cells } => {
                let budget = GRID_CELLS_PER_ENTRY * (u64::from(next) + 1) + ROWS_SLACK;
                if let Some(at) =
                    grid_cell(Key::Value(&key)).and_then(|c| row_cell(rows, cells, c, budget))
                {
                    match *at {
                        ABSENT => {
                            *at = next;
                            self.entries.push((key, value));
                        }
                        i => self.entries[i as usize].1 = value,
                    }
                    return;
                }
                // A key off the rows, or rows too sparse: hash from here on.
                self.finder = Finder::Hashed(hash_table(&self.entries));
                self.insert(key, value);
            }
            Finder::Hashed(table) => {
                let hash = Key::Value(&key).hash();
                let entries = &self.entries;
                match table.find(hash, |&(h, i)| h == hash && entries[i as usize].0 == key) {
                    Some(&(_, i)) => self.entries[i as usize].1 = value,
                    None => {
                        self.entries.push((key, value));
                        table.insert_unique(hash, (hash, next), |&(h, _)| h);
                    }
                }
            }
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The map, on a grid when its keys make a dense one.
    pub fn finish(self) -> MapVal {
        let index = match self.finder {
            // The rows hold the grid's positions already.
            Finder::Rows { rows, .. } => rows_grid(&rows, self.entries.len())
                .unwrap_or_else(|| Index::Hashed(hash_table(&self.entries))),
            Finder::Hashed(table) => grid(&self.entries).unwrap_or(Index::Hashed(table)),
        };
        MapVal {
            entries: self.entries,
            index,
        }
    }
}

/// The hash table of `entries`, whose keys differ.
fn hash_table(entries: &[(Value, Value)]) -> hashbrown::HashTable<(u64, u32)> {
    let mut table = hashbrown::HashTable::with_capacity(entries.len() + 1);
    for (i, (k, _)) in entries.iter().enumerate() {
        let hash = Key::Value(k).hash();
        table.insert_unique(hash, (hash, i as u32), |&(h, _)| h);
    }
    table
}

/// The cell of `(a, b)` in `rows`, which grow to hold it unless that takes
/// their number or their `cells` past `budget`.
fn row_cell<'r>(
    rows: &'r mut Vec<Vec<u32>>,
    cells: &mut u64,
    (a, b): (u64, u64),
    budget: u64,
) -> Option<&'r mut u32> {
    if a >= budget || b >= budget {
        return None;
    }
    let (a, b) = (a as usize, b as usize);
    let row_len = rows.get(a).map_or(0, Vec::len);
    let grown = *cells + (b + 1).saturating_sub(row_len) as u64;
    if grown > budget {
        return None;
    }
    *cells = grown;
    if rows.len() <= a {
        rows.resize_with(a + 1, Vec::new);
    }
    let row = &mut rows[a];
    if row.len() <= b {
        row.resize(b + 1, ABSENT);
    }
    Some(&mut row[b])
}

/// The grid of `entries`' positions, if every key is a pair of
/// non-negative ints and the grid is dense enough.
fn grid(entries: &[(Value, Value)]) -> Option<Index> {
    if entries.len() < GRID_MIN_ENTRIES {
        return None;
    }
    let (mut rows, mut width) = (0u64, 0u64);
    for (key, _) in entries {
        let (a, b) = grid_cell(Key::Value(key))?;
        rows = rows.max(a + 1);
        width = width.max(b + 1);
    }
    let cells = grid_cells(rows, width, entries.len())?;
    let mut positions = vec![ABSENT; cells];
    for (at, (key, _)) in entries.iter().enumerate() {
        let (a, b) = grid_cell(Key::Value(key))?;
        positions[(a * width + b) as usize] = at as u32;
    }
    Some(Index::Grid { width, positions })
}

/// The grid of a builder's `rows` of positions, for a map of `entries`
/// entries, if it is dense enough: the rows laid end to end, each padded
/// to the longest.
fn rows_grid(rows: &[Vec<u32>], entries: usize) -> Option<Index> {
    let width = rows.iter().map(Vec::len).max()?;
    let cells = grid_cells(rows.len() as u64, width as u64, entries)?;
    let mut positions = Vec::with_capacity(cells);
    for row in rows {
        positions.extend_from_slice(row);
        positions.resize(positions.len() + width - row.len(), ABSENT);
    }
    Some(Index::Grid {
        width: width as u64,
        positions,
    })
}

/// The cells of a grid of `rows` by `width` for a map of `entries`
/// entries, if it has enough of them and is dense enough for one.
fn grid_cells(rows: u64, width: u64, entries: usize) -> Option<usize> {
    let cells = rows.checked_mul(width)?;
    let dense = entries >= GRID_MIN_ENTRIES && cells <= GRID_CELLS_PER_ENTRY * entries as u64;
    dense.then(|| usize::try_from(cells).ok()).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(a: i64, b: i64) -> Value {
        Value::tuple(&[Value::Int(a), Value::Int(b)])
    }

    fn build(keys: impl IntoIterator<Item = Value>) -> MapVal {
        let mut m = MapBuilder::new();
        for (i, k) in keys.into_iter().enumerate() {
            m.insert(k, Value::Int(i as i64));
        }
        m.finish()
    }

    /// The all-pairs map of channels takes the grid, and finds every key
    /// it holds and none it does not, given built or as items.
    #[test]
    fn an_all_pairs_map_is_a_grid_that_finds_exactly_its_keys() {
        let n = 20;
        let keys = (0..n).flat_map(|g| (0..n).filter(move |&p| p != g).map(move |p| (p, g)));
        let m = build(keys.clone().map(|(p, g)| pair(p, g)));
        assert!(matches!(m.index, Index::Grid { .. }));
        for (i, (p, g)) in keys.enumerate() {
            assert_eq!(m.get(&pair(p, g)), Some(&Value::Int(i as i64)));
            let items = [Value::Int(p), Value::Int(g)];
            assert_eq!(m.lookup(Key::Tuple(&items)), Some(&Value::Int(i as i64)));
        }
        for absent in [
            pair(3, 3),
            pair(n, 0),
            pair(0, n),
            pair(-1, 2),
            Value::Int(1),
        ] {
            assert_eq!(m.get(&absent), None, "{absent}");
        }
        let three = [Value::Int(1), Value::Int(2), Value::Int(3)];
        assert_eq!(m.lookup(Key::Tuple(&three)), None);
        assert_eq!(m.lookup(Key::Tuple(&[Value::Int(1)])), None);
    }

    /// Sparse pairs, negative ones and other keys hash, and find the same.
    #[test]
    fn other_maps_hash_and_find_their_keys() {
        let sparse = build((0..100).map(|i| pair(i * 1000, i)));
        let negative = build((0..100).map(|i| pair(i - 50, i)));
        let ints = build((0..100).map(Value::Int));
        for m in [&sparse, &negative, &ints] {
            assert!(matches!(m.index, Index::Hashed(_)));
        }
        assert_eq!(sparse.get(&pair(7000, 7)), Some(&Value::Int(7)));
        assert_eq!(sparse.get(&pair(7, 7)), None);
        assert_eq!(negative.get(&pair(-3, 47)), Some(&Value::Int(47)));
        assert_eq!(ints.get(&Value::Int(42)), Some(&Value::Int(42)));
        assert_eq!(ints.get(&pair(4, 2)), None);
    }

    /// A key given twice keeps its first place and takes the later value.
    #[test]
    fn a_repeated_key_keeps_its_place_and_takes_the_later_value() {
        let keys = (0..70).map(|i| pair(i % 8, i / 8)).chain([pair(0, 0)]);
        let m = build(keys);
        assert_eq!(m.entries.len(), 70);
        assert_eq!(m.entries[0].0, pair(0, 0));
        assert_eq!(m.get(&pair(0, 0)), Some(&Value::Int(70)));
    }

    /// The builder finds pairs in rows until a key that is no such pair,
    /// or one far off the rows, makes it hash: the keys before keep their
    /// places and are found again, whichever way it went.
    #[test]
    fn a_builder_that_starts_on_rows_and_ends_hashing_finds_every_key() {
        let far = (1u64 << 40) as i64;
        for odd in [Value::Int(7), pair(-1, 0), pair(far, 0), pair(0, far)] {
            let mut m = MapBuilder::new();
            for i in 0..10 {
                m.insert(pair(i, 2 * i), Value::Int(i));
            }
            m.insert(odd.clone(), Value::Int(100));
            assert!(matches!(m.finder, Finder::Hashed(_)), "{odd}");
            m.insert(pair(3, 6), Value::Int(300));
            m.insert(odd.clone(), Value::Int(200));
            assert_eq!(m.len(), 11, "{odd}");
            let m = m.finish();
            assert_eq!(m.entries[3], (pair(3, 6), Value::Int(300)), "{odd}");
            assert_eq!(m.entries[10], (odd.clone(), Value::Int(200)));
            assert_eq!(m.get(&pair(9, 18)), Some(&Value::Int(9)), "{odd}");
            assert_eq!(m.get(&pair(9, 9)), None, "{odd}");
        }
    }
}
