//! A fast hasher for the simulator's tables, keyed by a few small integers
//! (channel endpoints, semaphores, barriers, proxies) that no adversary
//! picks: SipHash's flood resistance buys nothing here, and a plan whose
//! ops wait on hundreds of channels hashes an endpoint per channel per try.

use std::hash::{BuildHasherDefault, Hasher};

#[derive(Default, Clone, Copy)]
pub struct FastHasher(u64);

impl FastHasher {
    fn add(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl Hasher for FastHasher {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.add(u64::from(*b));
        }
    }

    fn write_u8(&mut self, v: u8) {
        self.add(v.into());
    }

    fn write_u32(&mut self, v: u32) {
        self.add(v.into());
    }

    fn write_u64(&mut self, v: u64) {
        self.add(v);
    }

    fn write_usize(&mut self, v: usize) {
        self.add(v as u64);
    }

    fn write_isize(&mut self, v: isize) {
        self.add(v as u64);
    }

    fn finish(&self) -> u64 {
        // The multiply leaves the low bits weakest; the table indexes by them.
        self.0 ^ (self.0 >> 32)
    }
}

/// A `HashMap` keyed through [`FastHasher`].
pub type HashMap<K, V> = std::collections::HashMap<K, V, BuildHasherDefault<FastHasher>>;
