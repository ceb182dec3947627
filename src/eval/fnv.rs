//! A fast hasher for the evaluator's own tables (variable scopes, map
//! indexes): FNV-1a. Keys are short names and small values that no adversary
//! chooses, so SipHash's flood resistance buys nothing and costs a quarter
//! of the evaluation time of the larger examples.

use std::hash::{BuildHasherDefault, Hasher};

#[derive(Default)]
pub struct Fnv(u64);

impl Hasher for Fnv {
    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A `HashMap` keyed through FNV-1a.
pub type FnvMap<K, V> = std::collections::HashMap<K, V, BuildHasherDefault<Fnv>>;
