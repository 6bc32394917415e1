//! Latency probe (seed 003 §III, the measurements of its Fig. 2 with `ttcp+`): UDP
//! datagrams sent alone or in back-to-back bursts, the bursts spaced uniformly at
//! random, so each burst usually finds the link idle.
//!
//! Parameters (defaults): `packet` 92 B (IP size: 64 bytes of UDP data), `burst` 1
//! packet, `spacing` uniform in [5 s, 10 s] between bursts, `messages` (number of
//! bursts) unlimited. The first burst goes at the flow's start.
use crate::rng::Rng;
use crate::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProbeConfig {
    pub packet: u32,
    pub burst: u32,
    pub spacing: (Duration, Duration),
    pub bursts: Option<u64>,
}

impl Default for ProbeConfig {
    fn default() -> Self {
        ProbeConfig { packet: 92, burst: 1, spacing: (Duration::from_secs(5), Duration::from_secs(10)), bursts: None }
    }
}

pub struct ProbeSource {
    cfg: ProbeConfig,
    rng: Rng,
    next: Instant,
    left_in_burst: u32,
    bursts: u64,
}

impl ProbeSource {
    pub fn new(cfg: ProbeConfig, start: Instant, rng: Rng) -> ProbeSource {
        ProbeSource { cfg, rng, next: start, left_in_burst: cfg.burst, bursts: 0 }
    }
    pub fn poll_timeout(&self) -> Instant {
        self.next
    }
    /// If a packet is due at `now`, returns its IP size.
    pub fn poll_packet(&mut self, now: Instant) -> Option<u32> {
        if self.next > now || self.cfg.bursts.is_some_and(|b| self.bursts >= b) {
            return None;
        }
        self.left_in_burst -= 1;
        if self.left_in_burst == 0 {
            self.bursts += 1;
            self.left_in_burst = self.cfg.burst;
            let (a, b) = self.cfg.spacing;
            self.next = now + a + Duration::from_nanos(((b - a).nanos() as f64 * self.rng.uniform()) as i64);
            if self.cfg.bursts.is_some_and(|n| self.bursts >= n) {
                self.next = Instant::ZERO + Duration::MAX;
            }
        }
        Some(self.cfg.packet)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn bursts_of_packets_at_uniform_spacing() {
        let cfg = ProbeConfig { burst: 3, bursts: Some(50), ..Default::default() };
        let mut p = ProbeSource::new(cfg, Instant::ZERO, Rng::stream(1, 0, "p"));
        let mut times = vec![];
        while p.poll_timeout() < Instant::ZERO + Duration::from_secs(10_000) {
            let t = p.poll_timeout();
            while p.poll_packet(t).is_some() {
                times.push(t);
            }
        }
        assert_eq!(times.len(), 150);
        for b in times.chunks(3) {
            assert!(b[0] == b[1] && b[1] == b[2]);
        }
        let gaps: Vec<f64> =
            times.chunks(3).collect::<Vec<_>>().windows(2).map(|w| (w[1][0] - w[0][0]).as_secs_f64()).collect();
        assert!(gaps.iter().all(|&g| (5.0..=10.0).contains(&g)));
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        assert!((mean - 7.5).abs() < 0.6, "{mean}");
    }
}
