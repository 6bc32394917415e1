//! Two-state (Gilbert-Elliott style) bit-error channel, seed 002 §III.
//!
//! The channel alternates between a good and a bad state whose sojourn times are
//! exponentially distributed with configurable means; each state has its own bit
//! error rate. A frame that spends `b_g` bits in the good state and `b_b` bits in
//! the bad state is lost with probability `1 − (1−BER_g)^b_g · (1−BER_b)^b_b`, so a
//! frame overlapping a bad period is almost surely lost. The state process runs in
//! continuous time whether or not frames are sent; it starts in the good state.
use crate::rng::Rng;
use crate::time::{Duration, Instant};

pub struct TwoState {
    pub ber: [f64; 2],
    /// ln(1 − BER) per state, precomputed.
    ln_ok: [f64; 2],
    pub mean: [f64; 2],
    rng: Rng,
    bad: bool,
    /// When the current state ends.
    until: Instant,
    /// When `Some`, every transition is logged as (time, now bad?).
    pub log: Option<Vec<(Instant, bool)>>,
    /// Per state, the last frame size (bits) that fell wholly in it and its loss
    /// probability: a link sends frames of a few sizes, and `exp` per frame was
    /// 2 % of a run (bench/RESULTS.md, 2026-11-29 sixth session). The same
    /// arithmetic, so the same bits: no effect on results.
    whole: [(u64, f64); 2],
}

impl TwoState {
    pub fn new(good_ber: f64, good_mean: Duration, bad_ber: f64, bad_mean: Duration, mut rng: Rng) -> TwoState {
        let mean = [good_mean.as_secs_f64(), bad_mean.as_secs_f64()];
        let until = Instant::ZERO + Duration::from_secs_f64(rng.exponential(mean[0]));
        TwoState {
            ber: [good_ber, bad_ber],
            ln_ok: [(1.0 - good_ber).ln(), (1.0 - bad_ber).ln()],
            mean,
            rng,
            bad: false,
            until,
            log: None,
            whole: [(u64::MAX, 0.0); 2],
        }
    }
    /// When the current state ends: the time of the next transition to be logged.
    pub fn next_transition(&self) -> Instant {
        self.until
    }

    fn flip(&mut self) {
        self.bad = !self.bad;
        if let Some(l) = &mut self.log {
            l.push((self.until, self.bad));
        }
        let d = Duration::from_secs_f64(self.rng.exponential(self.mean[self.bad as usize])).max(Duration(1));
        self.until += d;
    }

    pub fn lose(&mut self, start: Instant, airtime: Duration, bits: u64) -> bool {
        while self.until <= start {
            self.flip();
        }
        let end = start + airtime;
        if self.until >= end && airtime.nanos() > 0 {
            // The frame lies in one state: share 1 of its bits there, as below.
            let (b, p) = &mut self.whole[self.bad as usize];
            if *b != bits {
                *b = bits;
                *p = 1.0 - (0.0 + 1.0 * bits as f64 * self.ln_ok[self.bad as usize]).exp();
            }
            let p_loss = *p;
            return self.rng.bernoulli(p_loss);
        }
        let mut t = start;
        let mut log_ok = 0.0f64;
        let total = airtime.nanos().max(1) as f64;
        loop {
            let seg_end = if self.until < end { self.until } else { end };
            let share = (seg_end - t).nanos() as f64 / total;
            log_ok += share * bits as f64 * self.ln_ok[self.bad as usize];
            if seg_end >= end {
                break;
            }
            t = seg_end;
            self.flip();
        }
        let p_loss = 1.0 - log_ok.exp();
        self.rng.bernoulli(p_loss)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    /// Frame loss rate for seed 002's parameters, frames back to back.
    pub fn measured_flr(bad_ms: i64, seed: u64, frames: u64) -> f64 {
        let airtime = Duration::transmission(254, 64_000);
        let mut c = TwoState::new(
            1e-6,
            Duration::from_secs(10),
            1e-2,
            Duration::from_millis(bad_ms),
            Rng::stream(seed, 0, "ts"),
        );
        let mut t = Instant::ZERO;
        let mut lost = 0;
        for _ in 0..frames {
            if c.lose(t, airtime, 254 * 8) {
                lost += 1;
            }
            t += airtime;
        }
        lost as f64 / frames as f64
    }
    #[test]
    fn bad_state_frames_are_lost_and_good_state_rarely() {
        let mut c =
            TwoState::new(0.0, Duration::from_secs(1_000_000), 1e-2, Duration::from_secs(1), Rng::stream(1, 0, "x"));
        assert!(!c.lose(Instant(0), Duration::from_millis(30), 2000));
        c.bad = true;
        c.until = Instant(0) + Duration::from_secs(100_000);
        assert!(c.lose(Instant(0), Duration::from_millis(30), 2000));
    }
    /// `lose` as it was before whole-frame probabilities were kept: the formula
    /// for every frame.
    fn lose_reference(c: &mut TwoState, start: Instant, airtime: Duration, bits: u64) -> bool {
        while c.until <= start {
            c.flip();
        }
        let end = start + airtime;
        let mut t = start;
        let mut log_ok = 0.0f64;
        let total = airtime.nanos().max(1) as f64;
        loop {
            let seg_end = if c.until < end { c.until } else { end };
            let share = (seg_end - t).nanos() as f64 / total;
            log_ok += share * bits as f64 * c.ln_ok[c.bad as usize];
            if seg_end >= end {
                break;
            }
            t = seg_end;
            c.flip();
        }
        c.rng.bernoulli(1.0 - log_ok.exp())
    }
    #[test]
    fn kept_probabilities_decide_as_the_formula() {
        // Frames of a few sizes and airtimes (zero included), some straddling
        // transitions, against the formula on a channel with the same seed.
        let new =
            || TwoState::new(1e-4, Duration::from_millis(300), 3e-3, Duration::from_millis(80), Rng::stream(5, 0, "k"));
        let (mut a, mut b) = (new(), new());
        let mut pick = Rng::stream(9, 0, "pick");
        let mut t = Instant::ZERO;
        let (mut lost, mut whole) = (0, 0);
        for _ in 0..200_000 {
            let bits = [0u64, 8, 2032, 2032, 2032, 12_000][(pick.next_u64() % 6) as usize];
            let airtime = Duration((pick.next_u64() % 4) as i64 * 10_000_000);
            t += Duration((pick.next_u64() % 3) as i64 * 5_000_000);
            whole += (a.until >= t + airtime) as u32;
            let x = a.lose(t, airtime, bits);
            assert_eq!(x, lose_reference(&mut b, t, airtime, bits), "at {t:?}");
            lost += x as u32;
        }
        assert!(lost > 1000 && whole > 100_000, "{lost} lost, {whole} whole");
    }
    #[test]
    fn flr_grows_with_bad_state_mean() {
        let f: Vec<f64> = [100, 500, 1000].iter().map(|&b| measured_flr(b, 11, 400_000)).collect();
        assert!(f[0] < f[1] && f[1] < f[2], "{f:?}");
        // Analytic expectation for 100 ms: about 0.2% good-state losses plus the
        // bad share (0.1+airtime)/10.1 ≈ 1.3%.
        assert!(f[0] > 0.010 && f[0] < 0.022, "{f:?}");
    }
}
