//! First-order Markov model of a Rayleigh-fading channel (seed 001 §III; M. Zorzi,
//! R. R. Rao, L. B. Milstein, "On the accuracy of a first-order Markov model for
//! data block transmission on fading channels", 1995, and "Error statistics in data
//! transmission over fading channels", IEEE Trans. Commun. 1998).
//!
//! Parameters: average frame error rate `Pe` and normalised Doppler `fdT` (T is the
//! frame time). Fading margin `F` from `Pe = 1 − exp(−1/F)`; `ρ = J0(2π fdT)`;
//! `θ = sqrt((2/F)/(1−ρ²))`; the probability that a frame is correct after an
//! erroneous one is `q = [Q1(θ, ρθ) − Q1(ρθ, θ)] / (exp(1/F) − 1)` (Q1 is Marcum's
//! Q-function), and the error-after-correct probability `p = Pe·q/(1−Pe)` follows
//! from the stationary `Pe = p/(p+q)`. The chain steps once per frame time; when the
//! link has been idle for k frame times the k-step transition is applied in closed
//! form (`λ = 1−p−q`). The chain starts in its stationary distribution.
use crate::rng::Rng;
use crate::time::{Duration, Instant};

pub struct Fading {
    pub p: f64,
    pub q: f64,
    pub pe: f64,
    frame_time: Option<Duration>,
    last: Option<Instant>,
    err: bool,
    rng: Rng,
}

/// Bessel function J0 by the trapezoid rule on J0(x) = (1/π)∫₀^π cos(x sin t) dt,
/// which converges exponentially for this periodic integrand.
pub fn bessel_j0(x: f64) -> f64 {
    let n = 64 + 2 * x.abs().ceil() as usize;
    let h = std::f64::consts::PI / n as f64;
    let mut s = 0.5 * (1.0 + 1.0); // cos(0) at t = 0 and t = π
    for k in 1..n {
        s += (x * (k as f64 * h).sin()).cos();
    }
    s / n as f64
}

/// Exponentially scaled modified Bessel function I0(z)·e^(−z), z ≥ 0.
fn bessel_i0e(z: f64) -> f64 {
    if z < 600.0 {
        // Power series Σ (z²/4)^k/(k!)², summed in scaled form.
        let y = z * z / 4.0;
        let mut term = (-z).exp();
        let mut sum = term;
        let mut k = 1.0;
        while term > sum * 1e-17 || k < y.sqrt() {
            term *= y / (k * k);
            sum += term;
            k += 1.0;
            if k > 5000.0 {
                break;
            }
        }
        sum
    } else {
        let r = 1.0 / (8.0 * z);
        (1.0 + r + 9.0 * r * r / 2.0 + 225.0 * r * r * r / 6.0) / (2.0 * std::f64::consts::PI * z).sqrt()
    }
}

/// Marcum Q-function of order 1, Q1(a, b) = ∫_b^∞ x·exp(−(x²+a²)/2)·I0(ax) dx,
/// by composite Simpson integration of the scaled integrand.
pub fn marcum_q1(a: f64, b: f64) -> f64 {
    let f = |x: f64| x * (-(x - a) * (x - a) / 2.0).exp() * bessel_i0e(a * x);
    let hi = a.max(b) + 40.0;
    if b >= hi {
        return 0.0;
    }
    let n = 20_000usize;
    let h = (hi - b) / n as f64;
    let mut s = f(b) + f(hi);
    for k in 1..n {
        s += f(b + k as f64 * h) * if k % 2 == 1 { 4.0 } else { 2.0 };
    }
    (s * h / 3.0).clamp(0.0, 1.0)
}

/// Transition probabilities (p, q) for average error rate `pe` and Doppler `fdt`.
pub fn zorzi_pq(pe: f64, fdt: f64) -> (f64, f64) {
    let f_margin = -1.0 / (1.0 - pe).ln();
    let rho = bessel_j0(2.0 * std::f64::consts::PI * fdt);
    let theta = ((2.0 / f_margin) / (1.0 - rho * rho)).sqrt();
    let q = (marcum_q1(theta, rho * theta) - marcum_q1(rho * theta, theta)) / ((1.0 / f_margin).exp() - 1.0);
    let q = q.clamp(1e-12, 1.0);
    let p = (pe * q / (1.0 - pe)).clamp(0.0, 1.0);
    (p, q)
}

/// [`zorzi_pq`], remembered per (pe, fdT) for the life of the process: its
/// numerical integration took 3–13 ms, more than a short run (a study's sweep
/// builds the same few channels hundreds of times). Same values, bit for bit.
pub fn zorzi_pq_cached(pe: f64, fdt: f64) -> (f64, f64) {
    use std::sync::Mutex;
    /// (pe, fdT) as bits, and (p, q).
    type Seen = Vec<((u64, u64), (f64, f64))>;
    static SEEN: Mutex<Seen> = Mutex::new(Vec::new());
    let key = (pe.to_bits(), fdt.to_bits());
    if let Some(&(_, pq)) = SEEN.lock().unwrap_or_else(|e| e.into_inner()).iter().find(|(k, _)| *k == key) {
        return pq;
    }
    let pq = zorzi_pq(pe, fdt);
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    // A sweep has a few dozen channels; a process running far more keeps the
    // first 4,096.
    if seen.len() < 4096 && !seen.iter().any(|(k, _)| *k == key) {
        seen.push((key, pq));
    }
    pq
}

impl Fading {
    pub fn new(pe: f64, fdt: f64, frame_time: Option<Duration>, mut rng: Rng) -> Fading {
        let (p, q) = zorzi_pq_cached(pe, fdt);
        let err = rng.bernoulli(pe);
        Fading { p, q, pe, frame_time, last: None, err, rng }
    }
    pub fn lose(&mut self, start: Instant, airtime: Duration) -> bool {
        let slot = self.frame_time.unwrap_or(airtime).nanos().max(1);
        let k = match self.last {
            None => 0,
            Some(l) => (((start - l).nanos() + slot / 2) / slot).max(1),
        };
        self.last = Some(start);
        if k > 0 {
            let lam = 1.0 - self.p - self.q;
            let lk = if k == 1 { lam } else { lam.powi(k.min(i32::MAX as i64) as i32) };
            let p_err = if self.err { self.pe + (1.0 - self.pe) * lk } else { self.pe * (1.0 - lk) };
            self.err = self.rng.bernoulli(p_err);
        }
        self.err
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn remembered_transition_probabilities_are_the_computed_ones() {
        for (pe, fdt) in [(0.3, 0.01), (0.1, 1.0), (0.3, 0.01), (0.05, 0.1)] {
            let (a, b) = (zorzi_pq(pe, fdt), zorzi_pq_cached(pe, fdt));
            assert_eq!((a.0.to_bits(), a.1.to_bits()), (b.0.to_bits(), b.1.to_bits()), "{pe} {fdt}");
        }
    }
    #[test]
    fn j0_known_values() {
        assert!((bessel_j0(0.0) - 1.0).abs() < 1e-12);
        assert!((bessel_j0(1.0) - 0.765_197_686_557_966_6).abs() < 1e-12);
        assert!(bessel_j0(2.404_825_557_695_773).abs() < 1e-12);
        assert!((bessel_j0(10.0) - (-0.245_935_764_451_348_3)).abs() < 1e-12);
    }
    #[test]
    fn marcum_limits() {
        // Q1(0, b) = exp(-b²/2); Q1(a, 0) = 1.
        for b in [0.5, 1.0, 2.0, 4.0] {
            assert!((marcum_q1(0.0, b) - (-b * b / 2.0f64).exp()).abs() < 1e-9, "{b}");
        }
        assert!((marcum_q1(3.0, 0.0) - 1.0).abs() < 1e-9);
        // A tabulated value: Q1(1, 2) ≈ 0.269012 (e.g. MATLAB marcumq(1,2)).
        assert!((marcum_q1(1.0, 2.0) - 0.269_012).abs() < 1e-5);
    }
    #[test]
    fn fast_fading_is_independent() {
        // At the first zero of J0, ρ = 0 and the chain has no memory: q = 1 − Pe.
        let fdt = 2.404_825_557_695_773 / (2.0 * std::f64::consts::PI);
        for pe in [0.01, 0.1] {
            let (p, q) = zorzi_pq(pe, fdt);
            assert!((q - (1.0 - pe)).abs() < 1e-6, "pe={pe} q={q}");
            assert!((p - pe).abs() < 1e-6);
        }
        // For large fdT, ρ is small and q approaches 1 − Pe.
        let (_, q) = zorzi_pq(0.01, 5.3);
        assert!((q - 0.99).abs() < 0.02, "{q}");
    }
    #[test]
    fn slow_fading_is_bursty_with_right_average() {
        let (p, q) = zorzi_pq(0.05, 0.01);
        assert!(q < 0.5, "slow fading should give long error bursts, q={q}");
        let mut c = Fading::new(0.05, 0.01, None, Rng::stream(5, 0, "f"));
        let t = Duration::from_millis(20);
        let n = 400_000;
        let lost = (0..n).filter(|&i| c.lose(Instant(0) + t * i, t)).count();
        let f = lost as f64 / n as f64;
        assert!((f - 0.05).abs() < 0.01, "flr {f} p={p} q={q}");
    }
}
