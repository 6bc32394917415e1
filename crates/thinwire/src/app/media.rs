//! Media distribution source (seed 002 §III): a speaker alternating between talking
//! and silent periods, exponentially distributed with means 1 s and 1.35 s (Brady's
//! on/off speech model, the paper's reference 18); while talking, packets are sent
//! isochronously at 56 kbit/s; no packets while silent.
//!
//! Parameters (defaults): `rate` 56 kbit/s, `packet` 250 B (IP packet size, so the
//! payload is 222 B of UDP data), `talk` 1 s, `silence` 1.35 s. The packet interval is
//! `packet·8/rate` (35.7 ms by default). The source starts talking at its start time.
//! Sans-IO: `poll_timeout` gives the next send time, `poll_packet(now)` returns the
//! size of a packet due now.
use crate::rng::Rng;
use crate::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MediaConfig {
    pub rate: u64,
    pub packet: u32,
    pub talk: Duration,
    pub silence: Duration,
}

impl Default for MediaConfig {
    fn default() -> Self {
        MediaConfig { rate: 56_000, packet: 250, talk: Duration::from_secs(1), silence: Duration::from_millis(1350) }
    }
}

pub struct MediaSource {
    cfg: MediaConfig,
    interval: Duration,
    rng: Rng,
    next: Instant,
    talk_end: Instant,
    pub packets: u64,
    pub talk_spurts: u64,
}

impl MediaSource {
    pub fn new(cfg: MediaConfig, start: Instant, mut rng: Rng) -> MediaSource {
        let interval = Duration::transmission(cfg.packet as u64, cfg.rate);
        let talk_end = start + Duration::from_secs_f64(rng.exponential(cfg.talk.as_secs_f64()));
        MediaSource { cfg, interval, rng, next: start, talk_end, packets: 0, talk_spurts: 1 }
    }
    pub fn poll_timeout(&self) -> Instant {
        self.next
    }
    /// If a packet is due at `now`, returns its IP size and schedules the next one.
    pub fn poll_packet(&mut self, now: Instant) -> Option<u32> {
        if self.next > now {
            return None;
        }
        // Skip silent periods: a packet is only sent inside a talk spurt.
        while self.next >= self.talk_end {
            let silence = Duration::from_secs_f64(self.rng.exponential(self.cfg.silence.as_secs_f64()));
            let start = self.talk_end + silence;
            self.talk_end = start + Duration::from_secs_f64(self.rng.exponential(self.cfg.talk.as_secs_f64()));
            self.talk_spurts += 1;
            self.next = start;
            if self.next > now {
                return None;
            }
        }
        self.next += self.interval;
        self.packets += 1;
        Some(self.cfg.packet)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn average_rate_is_the_talk_share_of_56kbps() {
        let mut m = MediaSource::new(MediaConfig::default(), Instant::ZERO, Rng::stream(3, 0, "m"));
        let end = Instant::ZERO + Duration::from_secs(20_000);
        let mut bytes = 0u64;
        let mut last = Instant::ZERO;
        while m.poll_timeout() < end {
            let t = m.poll_timeout();
            assert!(t >= last, "time must not go backwards");
            last = t;
            if let Some(s) = m.poll_packet(t) {
                bytes += s as u64;
            }
        }
        let avg = bytes as f64 * 8.0 / 20_000.0;
        // 56 kbit/s × 1/(1+1.35) = 23.8 kbit/s (seed 002: 37.5 % of 64 kbit/s, i.e. 24 kbit/s).
        assert!((avg - 23_830.0).abs() < 600.0, "{avg}");
        // Inside a spurt, packets are 35.7 ms apart.
        assert_eq!(Duration::transmission(250, 56_000), Duration(35_714_286));
        assert!(m.talk_spurts > 8000 && m.talk_spurts < 9000, "{}", m.talk_spurts);
    }
}
