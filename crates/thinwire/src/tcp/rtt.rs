//! Retransmission timer, two ways (`tcp.rto`):
//! - `rfc6298` (default; the seeds' stacks): SRTT/RTTVAR with gains 1/8 and 1/4,
//!   `RTO = SRTT + max(G, 4·RTTVAR)` rounded up to G and clamped to
//!   `[min_rto, max_rto]`, the initial RTO before the first sample, exponential
//!   backoff on expiry (Karn's algorithm keeps the backed-off value until a new
//!   valid sample arrives);
//! - `linux` (Linux 6.x `tcp_rtt_estimator` and `tcp_set_rto` in
//!   `net/ipv4/tcp_input.c`): SRTT with gain 1/8; `mdev` (four times the mean
//!   deviation) with gain 1/4, but only 1/32 when the sample is below SRTT by more
//!   than mdev/4 (the kernel's Eifel-like damping); `rttvar` = the largest mdev of
//!   the current window of data, never below `min_rto`, decaying towards it by 1/4
//!   once per window (when `snd_una` passes the `snd_nxt` of the window's start);
//!   the first sample gives mdev = 2·RTT; `RTO = SRTT + rttvar` rounded up to G
//!   (`usecs_to_jiffies`), at most `max_rto` — so `min_rto` bounds the variance
//!   term, not the RTO (with SRTT 128 ms and a steady RTT, RTO = 128 + 200 ms).
//!   `RttEstimator::fallback` is the kernel's `TCP_TIMEOUT_FALLBACK`: 3 s when the
//!   handshake gave no sample.
use crate::time::Duration;
use serde::Deserialize;

/// How the retransmission timeout is computed (`tcp.rto`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
pub enum RtoKind {
    /// RFC 6298 (the seeds' stacks).
    #[default]
    #[serde(rename = "rfc6298")]
    Rfc6298,
    /// Linux 6.x: the estimator above, and the timeout handling the endpoint
    /// takes with it (`tcp/endpoint.rs`).
    #[serde(rename = "linux")]
    Linux,
}

#[derive(Clone, Debug)]
pub struct RttEstimator {
    pub(crate) kind: RtoKind,
    pub srtt: Option<Duration>,
    /// RFC 6298 RTTVAR, or Linux's `rttvar_us` (the variance term of the RTO).
    pub(crate) rttvar: Duration,
    /// Linux `srtt_us` (8·SRTT in µs), `mdev_us`, `mdev_max_us` and `rtt_seq`.
    srtt8: i64,
    mdev: Duration,
    mdev_max: Duration,
    rtt_seq: u64,
    base_rto: Duration,
    pub(crate) backoff: u32,
    pub(crate) granularity: Duration,
    pub(crate) min_rto: Duration,
    pub(crate) max_rto: Duration,
}

impl RttEstimator {
    pub fn new(initial: Duration, granularity: Duration, min_rto: Duration, max_rto: Duration) -> Self {
        RttEstimator {
            kind: RtoKind::Rfc6298,
            srtt: None,
            rttvar: Duration::ZERO,
            srtt8: 0,
            mdev: Duration::ZERO,
            mdev_max: Duration::ZERO,
            rtt_seq: 0,
            base_rto: initial,
            backoff: 0,
            granularity,
            min_rto,
            max_rto,
        }
    }
    /// The same with the timeout computed as `kind` says.
    pub(crate) fn with_kind(self, kind: RtoKind) -> Self {
        RttEstimator { kind, ..self }
    }
    /// An RTT sample (RFC 6298).
    pub fn sample(&mut self, r: Duration) {
        self.sample_at(r, 0, 0);
    }
    /// An RTT sample taken when the cumulative ACK reached `snd_una`, with
    /// `snd_nxt` the next offset to send (Linux's once-per-window rttvar update).
    pub(crate) fn sample_at(&mut self, r: Duration, snd_una: u64, snd_nxt: u64) {
        let r = r.max(Duration(1));
        match self.kind {
            RtoKind::Rfc6298 => self.rfc6298(r),
            RtoKind::Linux => self.linux(r, snd_una, snd_nxt),
        }
        self.backoff = 0;
    }
    fn rfc6298(&mut self, r: Duration) {
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
    }
    /// The kernel's arithmetic, in its units: microseconds, SRTT scaled by 8.
    fn linux(&mut self, r: Duration, snd_una: u64, snd_nxt: u64) {
        let us = |d: Duration| d.nanos() / 1000;
        let rto_min = us(self.min_rto);
        let (mut srtt8, mut mdev, mut mdev_max, mut rttvar) =
            (self.srtt8, us(self.mdev), us(self.mdev_max), us(self.rttvar));
        let mut m = us(r).max(1);
        if srtt8 != 0 {
            m -= srtt8 >> 3;
            srtt8 += m;
            if m < 0 {
                m = -m - (mdev >> 2);
                if m > 0 {
                    m >>= 3;
                }
            } else {
                m -= mdev >> 2;
            }
            mdev += m;
            if mdev > mdev_max {
                mdev_max = mdev;
                rttvar = rttvar.max(mdev_max);
            }
            if snd_una > self.rtt_seq {
                if mdev_max < rttvar {
                    rttvar -= (rttvar - mdev_max) >> 2;
                }
                self.rtt_seq = snd_nxt;
                mdev_max = rto_min;
            }
        } else {
            srtt8 = m << 3;
            mdev = m << 1;
            rttvar = mdev.max(rto_min);
            mdev_max = rttvar;
            self.rtt_seq = snd_nxt;
        }
        let d = |x: i64| Duration(x * 1000);
        self.srtt8 = srtt8.max(1);
        self.srtt = Some(d(self.srtt8 >> 3));
        (self.mdev, self.mdev_max, self.rttvar) = (d(mdev), d(mdev_max), d(rttvar));
        self.base_rto = d((srtt8 >> 3) + rttvar).ceil_to(self.granularity);
    }
    /// Linux `tcp_init_metrics` when the handshake gave no RTT sample (RFC 6298
    /// §5.7): the RTO falls back to `rto` (3 s) until the first sample.
    pub(crate) fn fallback(&mut self, rto: Duration) {
        if self.srtt.is_none() {
            self.rttvar = rto;
            self.mdev = rto;
            self.mdev_max = rto;
            self.base_rto = rto;
            self.backoff = 0;
        }
    }
    /// The current RTO including backoff and clamping.
    pub fn rto(&self) -> Duration {
        let r = match self.kind {
            RtoKind::Rfc6298 => self.base_rto.max(self.min_rto),
            RtoKind::Linux => self.base_rto,
        };
        let b = r.nanos().saturating_mul(1i64 << self.backoff.min(30));
        Duration(b).min(self.max_rto)
    }
    pub(crate) fn on_timeout(&mut self) {
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

    /// Linux: RTO = SRTT + max(4·mdev of the window, min_rto); with a steady RTT
    /// the variance term decays to min_rto (not towards 4·RTTVAR → 0), so a 128 ms
    /// path gets about 328 ms, where RFC 6298 with a 200 ms minimum gives 200 ms.
    #[test]
    fn linux_rto_is_srtt_plus_max_mdev_and_rto_min() {
        let mut e = RttEstimator::new(ms(1000), ms(4), ms(200), ms(120_000)).with_kind(RtoKind::Linux);
        assert_eq!(e.rto(), ms(1000));
        e.sample_at(ms(128), 1, 10);
        // First sample: mdev = 256, rttvar = max(256, 200) → 128 + 256 = 384.
        assert_eq!(e.rto(), ms(384));
        // One sample per window of data: the variance term decays by a quarter
        // of its excess over min_rto each window; the kernel's integer step stops
        // within 4 µs above it, and the jiffy rounding then gives 332 ms.
        for una in 2..60 {
            e.sample_at(ms(128), una * 10, una * 10 + 5);
        }
        assert_eq!(e.srtt, Some(ms(128)));
        assert!(e.rttvar > ms(200) && e.rttvar < ms(200) + Duration(4_000), "{:?}", e.rttvar);
        assert_eq!(e.rto(), ms(332));
        // Within one window the largest mdev holds.
        let mut w = RttEstimator::new(ms(1000), ms(4), ms(200), ms(120_000)).with_kind(RtoKind::Linux);
        w.sample_at(ms(128), 1, 100);
        for _ in 0..40 {
            w.sample_at(ms(128), 50, 100);
        }
        assert_eq!(w.rto(), ms(384));
        let mut r = RttEstimator::new(ms(1000), ms(4), ms(200), ms(120_000));
        for _ in 0..40 {
            r.sample(ms(128));
        }
        assert_eq!(r.rto(), ms(200));
    }

    /// Linux: a sample far below SRTT moves mdev by only 1/32 of the excess (the
    /// kernel's damping), where RFC 6298 raises RTTVAR by a quarter of the error.
    #[test]
    fn linux_damps_mdev_when_the_rtt_drops() {
        let mut e = RttEstimator::new(ms(1000), ms(1), ms(10), ms(120_000)).with_kind(RtoKind::Linux);
        e.sample_at(ms(400), 1, 2);
        let before = e.mdev;
        e.sample_at(ms(100), 1, 2); // error −300 ms, mdev/4 = 200 ms: +100/8
        assert_eq!(e.mdev, before + ms(100) / 8);
        assert_eq!(e.rttvar, e.mdev, "the window's largest mdev");
        // A window later with steady samples the variance term decays by 1/4 of
        // its excess over the window's largest mdev.
        let mut r = RttEstimator::new(ms(1000), ms(1), ms(10), ms(120_000));
        r.sample(ms(400));
        r.sample(ms(100));
        assert_eq!(r.rttvar, ms(225), "RFC 6298: 3/4·200 + 1/4·300");
    }

    /// Backoff doubles; a fallback without a sample sets 3 s; a sample clears both.
    #[test]
    fn linux_backoff_and_fallback() {
        let mut e = RttEstimator::new(ms(1000), ms(4), ms(200), ms(120_000)).with_kind(RtoKind::Linux);
        e.on_timeout();
        e.on_timeout();
        assert_eq!(e.rto(), ms(4000));
        e.fallback(ms(3000));
        assert_eq!(e.rto(), ms(3000));
        e.sample_at(ms(48), 1, 2);
        assert_eq!(e.rto(), ms(48 + 200));
    }
}
