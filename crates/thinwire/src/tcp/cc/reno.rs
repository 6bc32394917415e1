//! Reno as Linux 6.x runs it (`tcp_reno_cong_avoid`, `tcp_reno_ssthresh` in
//! `net/ipv4/tcp_cong.c`), the window counted in packets:
//! - the window grows only while the sender is window-limited
//!   (`tcp_is_cwnd_limited`, `Tcb::is_cwnd_limited`);
//! - slow start (`tcp_slow_start`): cwnd += packets acknowledged, up to ssthresh;
//!   the rest counts in congestion avoidance — so a delayed ACK of two segments adds
//!   two (RFC 3465 byte counting without its limit L);
//! - congestion avoidance (`tcp_cong_avoid_ai`): one packet per cwnd packets
//!   acknowledged;
//! - after a loss: ssthresh = max(cwnd / 2, 2) packets — half the window, not half
//!   the data in flight as RFC 5681 eq. (4) says (`rfc5681.rs`).
//!
//! Packets acknowledged = ⌈bytes acknowledged / SMSS⌉ (the kernel counts
//! acknowledged skbs; here every segment is one). No parameters.
use super::{cong_avoid_ai, linux_slow_start, CongestionControl};
use crate::tcp::tcb::Tcb;
use crate::tcp::TcpConfig;
use crate::time::{Duration, Instant};

#[derive(Clone, Debug, Default)]
pub struct Reno {
    /// Packets acknowledged towards the next increment (`snd_cwnd_cnt`).
    cwnd_cnt: u64,
}

impl Reno {
    pub fn new(_: &TcpConfig) -> Reno {
        Reno::default()
    }
}

impl CongestionControl for Reno {
    fn ssthresh(&mut self, tcb: &Tcb) -> u64 {
        // A reduction starts the count again (`tcp_init_cwnd_reduction`,
        // `tcp_enter_loss`: `snd_cwnd_cnt = 0`).
        self.cwnd_cnt = 0;
        (tcb.cwnd / tcb.smss / 2).max(2) * tcb.smss
    }

    fn on_ack(&mut self, tcb: &mut Tcb, now: Instant, acked: u64) {
        let Some((mut cwnd, acked)) = linux_slow_start(tcb, acked) else {
            return;
        };
        if acked > 0 {
            let w = cwnd;
            cong_avoid_ai(&mut cwnd, &mut self.cwnd_cnt, w, acked);
        }
        tcb.set_cwnd(now, cwnd * tcb.smss);
    }

    fn on_rtt(&mut self, _tcb: &mut Tcb, _now: Instant, _rtt: Duration) {}

    super::window_by_acks!();

    fn on_rto(&mut self, _tcb: &mut Tcb) {
        self.cwnd_cnt = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMSS: u64 = 1000;

    fn tcb(cwnd: u64, ssthresh: u64) -> Tcb {
        let mut t = Tcb::new(SMSS, cwnd * SMSS, None);
        t.ssthresh = ssthresh * SMSS;
        t.snd_max = cwnd * SMSS;
        t.snd_nxt = t.snd_max;
        t.cwnd_validate(true);
        t
    }

    /// Slow start adds the packets acknowledged (two for a delayed ACK), capped
    /// at ssthresh; congestion avoidance adds one packet per window acknowledged,
    /// whatever the ACKs' sizes.
    #[test]
    fn counts_packets_in_slow_start_and_congestion_avoidance() {
        let mut cc = Reno::default();
        let mut t = tcb(10, 13);
        cc.on_ack(&mut t, Instant::ZERO, 2 * SMSS);
        assert_eq!(t.cwnd, 12 * SMSS);
        cc.on_ack(&mut t, Instant::ZERO, 2 * SMSS);
        assert_eq!(t.cwnd, 13 * SMSS, "capped at ssthresh; the leftover packet counts towards avoidance");
        // 13 packets per increment: 12 more acknowledged (one was left over) → 14.
        for _ in 0..5 {
            cc.on_ack(&mut t, Instant::ZERO, 2 * SMSS);
        }
        assert_eq!(t.cwnd, 13 * SMSS);
        cc.on_ack(&mut t, Instant::ZERO, 2 * SMSS);
        assert_eq!(t.cwnd, 14 * SMSS);
    }

    /// A sender that is not using its window (application- or receiver-limited)
    /// does not grow it; ssthresh is half the window, not half the flight.
    #[test]
    fn grows_only_when_window_limited_and_halves_the_window() {
        let mut cc = Reno::default();
        let mut t = Tcb::new(SMSS, 40 * SMSS, None);
        t.ssthresh = 20 * SMSS;
        t.snd_max = 10 * SMSS; // 10 packets in flight, window 40
        t.snd_nxt = t.snd_max;
        t.cwnd_validate(false);
        cc.on_ack(&mut t, Instant::ZERO, 40 * SMSS);
        assert_eq!(t.cwnd, 40 * SMSS);
        assert_eq!(cc.ssthresh(&t), 20 * SMSS);
        // In slow start, growth continues while cwnd < 2 × the most in flight.
        let mut t = Tcb::new(SMSS, 10 * SMSS, None);
        t.snd_max = 6 * SMSS;
        t.snd_nxt = t.snd_max;
        t.cwnd_validate(false);
        cc.on_ack(&mut t, Instant::ZERO, SMSS);
        assert_eq!(t.cwnd, 11 * SMSS);
        t.snd_una = 6 * SMSS;
        t.snd_max = 11 * SMSS;
        t.snd_nxt = t.snd_max;
        t.cwnd_validate(false); // a new window of data, 5 in flight: 11 ≥ 2 × 5
        cc.on_ack(&mut t, Instant::ZERO, SMSS);
        assert_eq!(t.cwnd, 11 * SMSS);
    }
}
