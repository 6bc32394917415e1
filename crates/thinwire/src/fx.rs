//! A small, fast, deterministic hasher (the Fx multiply-rotate scheme of rustc's
//! `FxHasher`) for maps keyed by addresses and ports, where SipHash's DoS
//! resistance buys nothing and costs time.
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

#[derive(Default, Clone, Copy)]
pub struct Fx(u64);

impl Hasher for Fx {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, b: &[u8]) {
        for c in b.chunks(8) {
            let mut x = [0u8; 8];
            x[..c.len()].copy_from_slice(c);
            self.write_u64(u64::from_le_bytes(x));
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_u16(&mut self, x: u16) {
        self.write_u64(x as u64)
    }
}

/// A `HashMap` with the Fx hasher.
pub type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<Fx>>;
