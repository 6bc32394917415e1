//! Lateness of the emulator's outputs in fixed memory, however long it runs (a
//! value per packet grew 8 bytes a packet: 7 GB a day at 10,000 packets/s).
//!
//! A log-linear histogram in the manner of HdrHistogram: values below 1,024 ns
//! each have a bucket; above, every power of two is cut into 512 buckets, so a
//! quantile is reported to within 0.2 % of its value (the middle of its bucket).
//! The count, the maximum and the number of values above a threshold are exact.
//! 28,160 buckets of 8 bytes: 225 KB.

const EXACT: u64 = 1024;
const SUB: u64 = 512;
const BUCKETS: usize = (EXACT + (63 - 10 + 1) * SUB) as usize;

pub struct Histogram {
    counts: Vec<u64>,
    n: u64,
    max: i64,
    above: u64,
    threshold: i64,
}

fn index(v: u64) -> usize {
    if v < EXACT {
        return v as usize;
    }
    let e = 63 - v.leading_zeros() as u64; // 10..=63
    let shift = e - 9;
    let mantissa = v >> shift; // 512..=1023
    (EXACT + (e - 10) * SUB + (mantissa - SUB)) as usize
}

/// The middle of bucket `i`.
fn value(i: usize) -> i64 {
    let i = i as u64;
    if i < EXACT {
        return i as i64;
    }
    let e = (i - EXACT) / SUB + 10;
    let mantissa = (i - EXACT) % SUB + SUB;
    let shift = e - 9;
    ((mantissa << shift) + (1 << shift) / 2).min(i64::MAX as u64) as i64
}

impl Histogram {
    /// `threshold`: values above it are counted exactly (`above`).
    pub fn new(threshold: i64) -> Histogram {
        Histogram { counts: vec![0; BUCKETS], n: 0, max: 0, above: 0, threshold }
    }

    /// Records one value (ns; a negative one, an output written before it was
    /// due, counts as 0).
    #[inline]
    pub fn record(&mut self, v: i64) {
        let v = v.max(0);
        self.counts[index(v as u64)] += 1;
        self.n += 1;
        self.max = self.max.max(v);
        self.above += (v > self.threshold) as u64;
    }

    pub fn count(&self) -> u64 {
        self.n
    }

    pub fn max(&self) -> i64 {
        self.max
    }

    /// Values above the threshold given to `new`.
    pub fn above(&self) -> u64 {
        self.above
    }

    /// The value at quantile `p` (0..=1) by the nearest rank, as a sorted list's
    /// element `round((n − 1)·p)` (0 when empty), never above the maximum.
    pub fn quantile(&self, p: f64) -> i64 {
        if self.n == 0 {
            return 0;
        }
        let rank = ((self.n - 1) as f64 * p.clamp(0.0, 1.0)).round() as u64;
        let mut seen = 0u64;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen > rank {
                return value(i).min(self.max);
            }
        }
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_within_a_fifth_of_a_percent_of_the_sorted_values() {
        let mut rng = 0x9e3779b97f4a7c15u64;
        let mut vals = Vec::new();
        let mut h = Histogram::new(1_000_000);
        for _ in 0..200_000 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            // log-uniform from 1 ns to about 10 s
            let v = (2f64.powf((rng % 10_000) as f64 / 10_000.0 * 33.0)) as i64;
            vals.push(v);
            h.record(v);
        }
        vals.sort_unstable();
        for p in [0.0, 0.5, 0.9, 0.99, 0.999, 1.0] {
            let exact = vals[((vals.len() - 1) as f64 * p).round() as usize];
            let got = h.quantile(p);
            assert!((got - exact).abs() as f64 <= exact as f64 * 0.002 + 0.5, "p{p}: {got} vs {exact}");
        }
        assert_eq!(h.count(), 200_000);
        assert_eq!(h.max(), *vals.last().unwrap());
        assert_eq!(h.above(), vals.iter().filter(|&&v| v > 1_000_000).count() as u64);
        assert_eq!(Histogram::new(0).quantile(0.5), 0);
    }

    #[test]
    fn every_value_maps_to_a_bucket_holding_it() {
        for v in (0..20_000u64).chain([u64::MAX >> 1, 1 << 40, (1 << 40) + 12345]) {
            let i = index(v);
            assert!(i < BUCKETS);
            let mid = value(i) as f64;
            assert!((mid - v as f64).abs() <= v as f64 / 1000.0 + 0.5, "{v} -> {mid}");
        }
    }
}
