//! Retransmission timer per RFC 6298: SRTT/RTTVAR with gains 1/8 and 1/4,
//! `RTO = SRTT + max(G, 4·RTTVAR)` clamped to `[min_rto, max_rto]`, initial RTO
//! before the first sample, exponential backoff on expiry (Karn's algorithm keeps
//! the backed-off value until a new valid sample arrives).
use crate::time::Duration;

#[derive(Clone, Debug)]
pub struct RttEstimator {
    pub srtt: Option<Duration>,
    pub rttvar: Duration,
    base_rto: Duration,
    pub backoff: u32,
    pub granularity: Duration,
    pub min_rto: Duration,
    pub max_rto: Duration,
}

impl RttEstimator {
    pub fn new(initial: Duration, granularity: Duration, min_rto: Duration, max_rto: Duration) -> Self {
        RttEstimator {
            srtt: None,
            rttvar: Duration::ZERO,
            base_rto: initial,
            backoff: 0,
            granularity,
            min_rto,
            max_rto,
        }
    }
    pub fn sample(&mut self, r: Duration) {
        let r = r.max(Duration(1));
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(s) => {
                let err = Duration((s.nanos() - r.nanos()).abs());
                self.rttvar = Duration((3 * self.rttvar.nanos() + err.nanos()) / 4);
                self.srtt = Some(Duration((7 * s.nanos() + r.nanos()) / 8));
            }
        }
        let s = self.srtt.unwrap();
        self.base_rto = (s + self.granularity.max(self.rttvar * 4)).ceil_to(self.granularity);
        self.backoff = 0;
    }
    /// The current RTO including backoff and clamping.
    pub fn rto(&self) -> Duration {
        let r = self.base_rto.max(self.min_rto);
        let b = r.nanos().saturating_mul(1i64 << self.backoff.min(30));
        Duration(b).min(self.max_rto)
    }
    pub fn on_timeout(&mut self) {
        if self.rto() < self.max_rto {
            self.backoff += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    fn ms(x: i64) -> Duration {
        Duration::from_millis(x)
    }
    #[test]
    fn rfc6298_first_and_second_sample() {
        let mut e = RttEstimator::new(ms(1000), ms(10), ms(200), ms(64000));
        assert_eq!(e.rto(), ms(1000));
        e.sample(ms(400));
        // SRTT 400, RTTVAR 200 → RTO 400 + 800 = 1200
        assert_eq!(e.rto(), ms(1200));
        e.sample(ms(800));
        // RTTVAR = 3/4·200 + 1/4·400 = 250; SRTT = 7/8·400 + 1/8·800 = 450 → 1450
        assert_eq!(e.srtt, Some(ms(450)));
        assert_eq!(e.rto(), ms(1450));
    }
    #[test]
    fn backoff_doubles_and_clamps() {
        let mut e = RttEstimator::new(ms(3000), ms(500), ms(1000), ms(64000));
        for _ in 0..3 {
            e.on_timeout();
        }
        assert_eq!(e.rto(), ms(24000));
        for _ in 0..10 {
            e.on_timeout();
        }
        assert_eq!(e.rto(), ms(64000));
        e.sample(ms(100));
        assert_eq!(e.rto(), ms(1000)); // min_rto, backoff cleared
    }
}
